/* Object detection: NonMaxSuppression.
 *
 * NonMaxSuppression (opsets 10, 11), float32, as ONNX Runtime selects: per
 * batch b and class c, the candidates (boxes whose score is greater than
 * score_threshold, when given) in descending score, ties by lower box
 * index; a candidate is selected unless its IoU with a box already selected
 * in that class is greater than iou_threshold (default 0), until
 * max_output_boxes_per_class boxes are (absent: none). The rows (b, c, box)
 * follow batch, class, then selection order. One OTHER stage of one
 * iteration (the rows are counted in order, so nothing runs in parallel):
 *
 *   rows = 0
 *   for b, for c:
 *     base = rows, cnt = 0, (last_s, last_i) = (+inf, -1), more = true
 *     for step in N, while more and cnt < max:
 *       best = the candidate after (last_s, last_i) in that order: the
 *              largest score below last_s, or equal to it at an index
 *              above last_i; the lowest index among equal ones
 *       more = there is one
 *       if more:
 *         (last_s, last_i) = (its score, its index)
 *         keep = no row base .. base + cnt - 1 holds a box j with
 *                IoU(j, best) > iou_threshold
 *         if keep: y[rows] = (b, c, best), rows += 1, cnt += 1
 *   shape = {rows, 3}
 *
 * The selected boxes of the class are read back from y's third column, so
 * no scratch buffer is needed. Each step costs O(N): O(N^2) per batch and
 * class at worst, less when max is reached or the candidates run out early.
 * IoU is ONNX Runtime's, operation for operation in float32 (corners sorted
 * with >=, std::max / std::min by <, no overlap or a non-positive area: not
 * suppressed). Each area is a local of its own, so the LLVM target does not
 * fuse its product into the sum of the areas; a C compiler given
 * -ffp-contract=fast may, on a CPU with FMA (not x86-64's baseline), and an
 * IoU within an ulp of the threshold can then decide otherwise than ONNX
 * Runtime. NaN scores are never candidates (ONNX Runtime queues them in an
 * order its heap decides). */
#include <math.h>
#include <stdio.h>

#include "lower_internal.h"

static uint32_t node_output(const lower_ctx_t* ctx, uint32_t k) {
  return k < ctx->node->output_count ? ctx->node->outputs[k] : INGOT_NO_VALUE;
}

/* A box's extent as ONNX Runtime computes it: the locals xmin, xmax, ymin,
 * ymax and its area. */
typedef struct nms_box_t {
  uint32_t x0, x1, y0, y1, area;
} nms_box_t;

typedef struct nms_build_t {
  lower_ctx_t* ctx;
  ingot_ir_func_t* f;
  uint32_t boxes;      /* func buffer */
  uint32_t b;          /* the batch loop var */
  int64_t n;           /* spatial_dimension */
  bool center;         /* center_point_box */
} nms_build_t;

static ingot_ir_expr_t* bin(nms_build_t* nb, ingot_ir_binary_op_t op, ingot_ir_expr_t* a, ingot_ir_expr_t* b) {
  return ingot_ir_binary(nb->f, op, a, b);
}

static ingot_ir_expr_t* var(nms_build_t* nb, uint32_t v) { return ingot_ir_var(nb->f, v); }

/* boxes[b, box, q] */
static ingot_ir_expr_t* coord(nms_build_t* nb, ingot_ir_expr_t* box, int64_t q) {
  ingot_ir_func_t* f = nb->f;
  ingot_ir_expr_t* row = ingot_ir_add(f, ingot_ir_mul(f, var(nb, nb->b), ingot_ir_int(f, nb->n)), box);
  return ingot_ir_load(f, nb->boxes, ingot_ir_add(f, ingot_ir_mul(f, row, ingot_ir_int(f, 4)), ingot_ir_int(f, q)));
}

/* Appends to out[*count] the statements that declare box `box`'s extent and
 * area in the locals of `o` (named with `tag`): corners sorted (min = a >= b
 * ? b : a), or center -/+ half the size (the size / 2). The area is a local
 * of its own: in one expression, a*b + c becomes a multiply-add on the LLVM
 * target (codegen/codegen_llvm.c). Appends 7 statements. */
static void box_extent(nms_build_t* nb, ingot_ir_expr_t* box, const char* tag, nms_box_t* o, ingot_ir_stmt_t** out,
                       uint32_t* count) {
  lower_ctx_t* ctx = nb->ctx;
  ingot_ir_func_t* f = nb->f;
  char name[32];
#define LOCAL_F32(suffix) \
  (snprintf(name, sizeof(name), "%s_%s", tag, suffix), lower_add_var(ctx, name, INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32))
  o->x0 = LOCAL_F32("x0"), o->x1 = LOCAL_F32("x1"), o->y0 = LOCAL_F32("y0"), o->y1 = LOCAL_F32("y1");
  o->area = LOCAL_F32("area");
  uint32_t u = LOCAL_F32("u"), v = LOCAL_F32("v");
#undef LOCAL_F32
  /* x from coordinates (1, 3) of [y1, x1, y2, x2] or (0, 2) of [xc, yc, w, h];
   * y from (0, 2) or (1, 3). */
  for (int axis = 0; axis < 2; ++axis) {
    int64_t qa = nb->center ? axis : 1 - axis, qb = qa + 2;
    uint32_t lo = axis == 0 ? o->x0 : o->y0, hi = axis == 0 ? o->x1 : o->y1, t = axis == 0 ? u : v;
    if (nb->center) {
      out[(*count)++] = ingot_ir_local(f, t, bin(nb, INGOT_IR_DIV, coord(nb, box, qb), lower_f32(ctx, 2.0)));
      out[(*count)++] = ingot_ir_local(f, lo, bin(nb, INGOT_IR_SUB, coord(nb, box, qa), var(nb, t)));
      out[(*count)++] = ingot_ir_local(f, hi, ingot_ir_add(f, coord(nb, box, qa), var(nb, t)));
    } else {
      ingot_ir_expr_t* swap = bin(nb, INGOT_IR_LE, coord(nb, box, qb), coord(nb, box, qa)); /* a >= b */
      out[(*count)++] = ingot_ir_local(f, t, coord(nb, box, qa));
      out[(*count)++] = ingot_ir_local(f, lo, ingot_ir_select(f, swap, coord(nb, box, qb), var(nb, t)));
      out[(*count)++] = ingot_ir_local(f, hi, ingot_ir_select(f, swap, var(nb, t), coord(nb, box, qb)));
    }
  }
  out[(*count)++] = ingot_ir_local(f, o->area, ingot_ir_mul(f, bin(nb, INGOT_IR_SUB, var(nb, o->x1), var(nb, o->x0)),
                                                           bin(nb, INGOT_IR_SUB, var(nb, o->y1), var(nb, o->y0))));
}

/* Appends to out[*count] the statement that sets `keep` to false when box p
 * (selected before) suppresses box q: ONNX Runtime's SuppressByIOU, its early
 * returns as conditions; the intersection in local `inter` (declared first,
 * 2 statements). */
static void suppress(nms_build_t* nb, const nms_box_t* p, const nms_box_t* q, uint32_t thr, uint32_t inter,
                     uint32_t keep, ingot_ir_stmt_t** out, uint32_t* count) {
  ingot_ir_func_t* f = nb->f;
  lower_ctx_t* ctx = nb->ctx;
#define V(x) var(nb, (x))
#define MAX(a, b) ingot_ir_select(f, bin(nb, INGOT_IR_LT, (a), (b)), (b), (a)) /* std::max */
#define MIN(a, b) ingot_ir_select(f, bin(nb, INGOT_IR_LT, (b), (a)), (b), (a)) /* std::min */
#define NOT_LE(a, b) ingot_ir_unary(f, INGOT_IR_NOT, bin(nb, INGOT_IR_LE, (a), (b)))
  ingot_ir_expr_t* ix0 = MAX(V(p->x0), V(q->x0));
  ingot_ir_expr_t* ix1 = MIN(V(p->x1), V(q->x1));
  ingot_ir_expr_t* iy0 = MAX(V(p->y0), V(q->y0));
  ingot_ir_expr_t* iy1 = MIN(V(p->y1), V(q->y1));
  out[(*count)++] =
      ingot_ir_local(f, inter, ingot_ir_mul(f, bin(nb, INGOT_IR_SUB, ix1, ix0), bin(nb, INGOT_IR_SUB, iy1, iy0)));
  ingot_ir_expr_t* uni = bin(nb, INGOT_IR_SUB, ingot_ir_add(f, V(p->area), V(q->area)), V(inter));
  ingot_ir_expr_t* zero = lower_f32(ctx, 0.0);
  ingot_ir_expr_t* cond = NOT_LE(ix1, ix0);
  cond = bin(nb, INGOT_IR_AND, cond, NOT_LE(iy1, iy0));
  cond = bin(nb, INGOT_IR_AND, cond, NOT_LE(V(inter), zero));
  cond = bin(nb, INGOT_IR_AND, cond, NOT_LE(V(p->area), zero));
  cond = bin(nb, INGOT_IR_AND, cond, NOT_LE(V(q->area), zero));
  cond = bin(nb, INGOT_IR_AND, cond, NOT_LE(uni, zero));
  cond = bin(nb, INGOT_IR_AND, cond, bin(nb, INGOT_IR_LT, V(thr), bin(nb, INGOT_IR_DIV, V(inter), uni)));
  out[(*count)++] = ingot_ir_assign(f, keep, ingot_ir_unary(f, INGOT_IR_NOT, cond));
#undef V
#undef MAX
#undef MIN
#undef NOT_LE
}

ingot_status_t lower_nms(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t boxes = lower_input(ctx, 0), scores = lower_input(ctx, 1);
  uint32_t max_in = lower_input(ctx, 2), iou_in = lower_input(ctx, 3), score_in = lower_input(ctx, 4);
  uint32_t y = node_output(ctx, 0), shape = node_output(ctx, 1);
  if (shape == INGOT_NO_VALUE) return lower_fail(ctx, INGOT_ERROR_INTERNAL, "has no shape output (inference adds it)");
  if (max_in == INGOT_NO_VALUE) {
    return lower_fail(ctx, INGOT_ERROR_INTERNAL, "has rows without max_output_boxes_per_class");
  }
  if ((s = lower_refuse_activation(ctx)) || (s = lower_check_value_dt(ctx, boxes, LOWER_DT(INGOT_DTYPE_F32))) ||
      (s = lower_check_value_dt(ctx, scores, LOWER_DT(INGOT_DTYPE_F32))) ||
      (s = lower_check_value_dt(ctx, max_in, LOWER_DT(INGOT_DTYPE_I64))) ||
      (iou_in != INGOT_NO_VALUE && (s = lower_check_value_dt(ctx, iou_in, LOWER_DT(INGOT_DTYPE_F32)))) ||
      (score_in != INGOT_NO_VALUE && (s = lower_check_value_dt(ctx, score_in, LOWER_DT(INGOT_DTYPE_F32)))) ||
      (s = lower_check_value_dt(ctx, y, LOWER_DT(INGOT_DTYPE_I64))) ||
      (s = lower_check_value_dt(ctx, shape, LOWER_DT(INGOT_DTYPE_I64)))) {
    return s;
  }
  const ingot_value_t* sv = lower_value(ctx, scores);
  const ingot_value_t* yv = lower_value(ctx, y);
  int64_t batches = sv->dims[0], classes = sv->dims[1], n = sv->dims[2];
  /* The rows one class can hold: y's bound is B * C * that (graph/infer_data.c). */
  int64_t per_class = yv->dims[0] / (batches * classes);
  if (per_class < 1 || per_class > n || yv->dims[0] != batches * classes * per_class) {
    return lower_fail(ctx, INGOT_ERROR_INTERNAL, "selected_indices %s is no bound for scores %s",
                      lower_shape_str(ctx, y), lower_shape_str(ctx, scores));
  }
  nms_build_t nb = {.ctx = ctx, .f = ctx->f, .n = n, .center = ctx->params->u.nms.center_point_box};
  nb.boxes = lower_add_input(ctx, boxes, "boxes");
  uint32_t bsc = lower_add_input(ctx, scores, "scores");
  uint32_t bmax = lower_add_input(ctx, max_in, "max_per_class");
  uint32_t biou = iou_in != INGOT_NO_VALUE ? lower_add_input(ctx, iou_in, "iou_threshold") : UINT32_MAX;
  uint32_t bst = score_in != INGOT_NO_VALUE ? lower_add_input(ctx, score_in, "score_threshold") : UINT32_MAX;
  uint32_t by = lower_add_output(ctx, y, "y");
  uint32_t bs = lower_add_output(ctx, shape, "shape");
  ingot_ir_func_t* f = ctx->f;
#define I(v) ingot_ir_int(f, (v))
#define V(v) var(&nb, (v))
#define BIN(op, a, b) bin(&nb, INGOT_IR_##op, (a), (b))
#define LOOP(name) lower_add_var(ctx, (name), INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64)
#define LOCAL(name, type) lower_add_var(ctx, (name), INGOT_IR_VAR_LOCAL, (type))
  uint32_t one = LOOP("one"), c = LOOP("c"), step = LOOP("step"), i = LOOP("i"), k = LOOP("k");
  nb.b = LOOP("b");
  uint32_t rows = LOCAL("rows", INGOT_DTYPE_I64), maxc = LOCAL("maxc", INGOT_DTYPE_I64);
  uint32_t thr = LOCAL("thr", INGOT_DTYPE_F32), inter = LOCAL("inter", INGOT_DTYPE_F32);
  uint32_t st = bst != UINT32_MAX ? LOCAL("st", INGOT_DTYPE_F32) : UINT32_MAX;
  uint32_t base = LOCAL("base", INGOT_DTYPE_I64), cnt = LOCAL("cnt", INGOT_DTYPE_I64);
  uint32_t last_s = LOCAL("last_s", INGOT_DTYPE_F32), last_i = LOCAL("last_i", INGOT_DTYPE_I64);
  uint32_t best_s = LOCAL("best_s", INGOT_DTYPE_F32), best_i = LOCAL("best_i", INGOT_DTYPE_I64);
  uint32_t score = LOCAL("s", INGOT_DTYPE_F32), take = LOCAL("take", INGOT_DTYPE_BOOL);
  uint32_t keep = LOCAL("keep", INGOT_DTYPE_BOOL), j = LOCAL("j", INGOT_DTYPE_I64);
  uint32_t more = LOCAL("more", INGOT_DTYPE_BOOL);

  /* The candidate search: i is after (last_s, last_i) and beats best. */
  /* scores[b, c, i] */
  ingot_ir_expr_t* bc = ingot_ir_add(f, ingot_ir_mul(f, V(nb.b), I(classes)), V(c));
  ingot_ir_expr_t* sat = ingot_ir_add(f, ingot_ir_mul(f, bc, I(n)), V(i));
  ingot_ir_expr_t* after =
      BIN(OR, BIN(LT, V(score), V(last_s)), BIN(AND, BIN(EQ, V(score), V(last_s)), BIN(LT, V(last_i), V(i))));
  ingot_ir_expr_t* better = BIN(OR, BIN(LT, V(best_i), I(0)), BIN(LT, V(best_s), V(score)));
  ingot_ir_expr_t* cand = BIN(AND, after, better);
  if (bst != UINT32_MAX) cand = BIN(AND, BIN(LT, V(st), V(score)), cand);
  ingot_ir_stmt_t* search[4] = {
      ingot_ir_local(f, score, ingot_ir_load(f, bsc, sat)),
      ingot_ir_local(f, take, cand),
      ingot_ir_assign(f, best_i, ingot_ir_select(f, V(take), V(i), V(best_i))),
      ingot_ir_assign(f, best_s, ingot_ir_select(f, V(take), V(score), V(best_s))),
  };

  /* Against the boxes already selected in this class: row base + k. */
  nms_box_t cand_box, sel_box;
  ingot_ir_stmt_t* check[10];
  uint32_t nc = 0;
  ingot_ir_expr_t* row_k = ingot_ir_add(f, V(base), V(k));
  check[nc++] = ingot_ir_local(f, j, ingot_ir_load(f, by, ingot_ir_add(f, ingot_ir_mul(f, row_k, I(3)), I(2))));
  box_extent(&nb, V(j), "sel", &sel_box, check, &nc);
  ingot_ir_stmt_t* select[13];
  uint32_t ns = 0;
  select[ns++] = ingot_ir_assign(f, last_s, V(best_s));
  select[ns++] = ingot_ir_assign(f, last_i, V(best_i));
  box_extent(&nb, V(best_i), "cand", &cand_box, select, &ns);
  suppress(&nb, &sel_box, &cand_box, thr, inter, keep, check, &nc);
  ingot_ir_stmt_t* write[5] = {
      ingot_ir_store(f, by, ingot_ir_mul(f, V(rows), I(3)), V(nb.b)),
      ingot_ir_store(f, by, ingot_ir_add(f, ingot_ir_mul(f, V(rows), I(3)), I(1)), V(c)),
      ingot_ir_store(f, by, ingot_ir_add(f, ingot_ir_mul(f, V(rows), I(3)), I(2)), V(best_i)),
      ingot_ir_assign(f, rows, ingot_ir_add(f, V(rows), I(1))),
      ingot_ir_assign(f, cnt, ingot_ir_add(f, V(cnt), I(1))),
  };
  select[ns++] = ingot_ir_local(f, keep, lower_const(ctx, INGOT_DTYPE_BOOL, 1.0));
  select[ns++] = ingot_ir_for(f, k, per_class,
                              ingot_ir_if(f, BIN(AND, V(keep), BIN(LT, V(k), V(cnt))), ingot_ir_block(f, check, nc)));
  select[ns++] = ingot_ir_if(f, V(keep), ingot_ir_block(f, write, 5));

  /* A step searches only while the class may take more boxes and the last
   * search found one. */
  ingot_ir_stmt_t* step_body[5] = {
      ingot_ir_local(f, best_i, I(-1)),
      ingot_ir_local(f, best_s, lower_f32(ctx, 0.0)),
      ingot_ir_for(f, i, n, ingot_ir_block(f, search, 4)),
      ingot_ir_assign(f, more, BIN(LE, I(0), V(best_i))),
      ingot_ir_if(f, V(more), ingot_ir_block(f, select, ns)),
  };
  ingot_ir_stmt_t* class_body[6] = {
      ingot_ir_local(f, base, V(rows)),
      ingot_ir_local(f, cnt, I(0)),
      ingot_ir_local(f, last_s, lower_f32(ctx, INFINITY)),
      ingot_ir_local(f, last_i, I(-1)),
      ingot_ir_local(f, more, lower_const(ctx, INGOT_DTYPE_BOOL, 1.0)),
      ingot_ir_for(f, step, n,
                   ingot_ir_if(f, BIN(AND, V(more), BIN(LT, V(cnt), V(maxc))), ingot_ir_block(f, step_body, 5))),
  };
  ingot_ir_expr_t* max_at = ingot_ir_load(f, bmax, I(0));
  ingot_ir_stmt_t* body[6];
  uint32_t nbody = 0;
  body[nbody++] = ingot_ir_local(f, rows, I(0));
  body[nbody++] = ingot_ir_local(f, maxc, ingot_ir_select(f, BIN(LT, max_at, I(0)), I(0), max_at));
  body[nbody++] = ingot_ir_local(f, thr, biou != UINT32_MAX ? ingot_ir_load(f, biou, I(0)) : lower_f32(ctx, 0.0));
  if (bst != UINT32_MAX) body[nbody++] = ingot_ir_local(f, st, ingot_ir_load(f, bst, I(0)));
  body[nbody++] = ingot_ir_for(f, nb.b, batches, ingot_ir_for(f, c, classes, ingot_ir_block(f, class_body, 6)));
  ingot_ir_stmt_t* shape_store[2] = {ingot_ir_store(f, bs, I(0), V(rows)), ingot_ir_store(f, bs, I(1), I(3))};
  body[nbody++] = ingot_ir_block(f, shape_store, 2);
  lower_emit_other(ctx, ingot_ir_for(f, one, 1, ingot_ir_block(f, body, nbody)));
#undef I
#undef V
#undef BIN
#undef LOOP
#undef LOCAL
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE; /* one OTHER stage of one iteration: nothing to parallelize */
  ctx->workload = ingot_arena_printf(ctx->arena, "nms boxes=%s scores=%s per_class%lld %s%s%s",
                                     lower_shape_str(ctx, boxes), lower_shape_str(ctx, scores), (long long)per_class,
                                     nb.center ? "center" : "corners", iou_in != INGOT_NO_VALUE ? " iou" : "",
                                     score_in != INGOT_NO_VALUE ? " score" : "");
  return INGOT_OK;
}
