/* The GPU templates (CUDA and ROCm target kinds; templates.def's "gpu.*"
 * rows).
 *
 * gpu.simt (every op class): in each stage the spatial loops are fused into
 * one loop, split by the gpu_threads knob, the outer part bound to
 * blockIdx.x and the inner part to threadIdx.x: one thread a spatial
 * iteration. Reduce loops (and the inner loops of OTHER stages, whose only
 * known spatial loop is the outermost) run serially in that thread.
 *
 * A kernel's stages run one after the other in one launch, and the threads
 * of a launch do not wait for each other between stages (there is no
 * grid-wide barrier). That is right when every buffer the kernel writes and
 * two stages touch is touched by each at the same element from the same
 * thread: the stages then have the same spatial extents (hence the same
 * block/thread split) and access it at the same index of their spatial
 * loops (INIT, UPDATE and FINISH of one reduction). Otherwise (a stage reads
 * at another index what an earlier one wrote, or stages of different
 * shapes share a buffer) the kernel falls back to ONE block: its threads
 * stride over each stage (the outer part of the split stays a serial loop)
 * with a barrier between stages. That is correct but slow: one
 * multiprocessor does all the work. plan_gpu_fallback tells which kernels
 * took it (the schedule has BARRIER directives and no block binding).
 *
 * gpu.row (POOL class: ReduceSum/Mean/Max/..., GlobalAveragePool): for a
 * kernel with one long reduction (UPDATE, at least GPU_ROW_MIN_REDUCE reduce
 * iterations per output), one block an output element: its threads share
 * the reduction (each combines a strided part in a register), then combine
 * their partial results in a shared-memory tree with barriers between the
 * levels (ingot_schedule_reduce_threads; the combine op is the UPDATE
 * statement's add/max/min). The kernel's other stages (INIT, FINISH) put
 * each output element on thread 0 of the same block. Softmax, LayerNorm and
 * the other ROW kernels are OTHER stages (several passes over a row inside
 * one nest, with locals carried between them): they stay with gpu.simt, one
 * thread a row. */
#include <stdlib.h>
#include <string.h>

#include "template_internal.h"

/* Reduce iterations per output from which gpu.row applies. */
#define GPU_ROW_MIN_REDUCE 128 /* the message in row_stage says so */

/* ---- the space ---- */

static void space_add_gpu_threads(plan_t* p, uint32_t mask, ingot_schedule_space_t* space) {
  int64_t most = p->target->gpu.max_threads_per_block ? p->target->gpu.max_threads_per_block : 1024;
  if (most > 1024) most = 1024;
  int64_t values[8];
  uint32_t n = 0;
  for (int64_t v = 32; v <= most && n < 8; v *= 2) values[n++] = v;
  space_add(space, mask, SCHEDULE_KNOB_GPU_THREADS, values, n, most < 256 ? values[n - 1] : 256);
}

/* ---- what the stages touch ---- */

typedef struct access_t {
  uint32_t stage;
  uint32_t buffer;
  bool store;
  const ingot_ir_expr_t* index;
} access_t;

typedef INGOT_VEC(access_t) access_vec_t;

static void collect_expr(const ingot_ir_expr_t* e, uint32_t stage, access_vec_t* out) {
  if (!e) return;
  switch (e->kind) {
    case INGOT_IR_EXPR_LOAD: {
      access_t a = {stage, e->u.load.buffer, false, e->u.load.index};
      INGOT_VEC_PUSH(*out, a);
      collect_expr(e->u.load.index, stage, out);
      return;
    }
    case INGOT_IR_EXPR_UNARY:
    case INGOT_IR_EXPR_CAST: collect_expr(e->u.unary.a, stage, out); return;
    case INGOT_IR_EXPR_BINARY:
      collect_expr(e->u.binary.a, stage, out);
      collect_expr(e->u.binary.b, stage, out);
      return;
    case INGOT_IR_EXPR_SELECT:
      collect_expr(e->u.select.cond, stage, out);
      collect_expr(e->u.select.a, stage, out);
      collect_expr(e->u.select.b, stage, out);
      return;
    default: return;
  }
}

static void collect_stmt(const ingot_ir_stmt_t* s, uint32_t stage, access_vec_t* out, uint8_t* stored) {
  if (!s) return;
  switch (s->kind) {
    case INGOT_IR_STMT_FOR: collect_stmt(s->u.loop.body, stage, out, stored); return;
    case INGOT_IR_STMT_BLOCK:
      for (uint32_t i = 0; i < s->u.block.count; ++i) collect_stmt(s->u.block.stmts[i], stage, out, stored);
      return;
    case INGOT_IR_STMT_STORE: {
      access_t a = {stage, s->u.store.buffer, true, s->u.store.index};
      INGOT_VEC_PUSH(*out, a);
      stored[s->u.store.buffer] = 1;
      collect_expr(s->u.store.index, stage, out);
      collect_expr(s->u.store.value, stage, out);
      return;
    }
    case INGOT_IR_STMT_IF:
      collect_expr(s->u.cond.cond, stage, out);
      collect_stmt(s->u.cond.then_body, stage, out, stored);
      return;
    case INGOT_IR_STMT_LOCAL:
    case INGOT_IR_STMT_ASSIGN: collect_expr(s->u.local.value, stage, out); return;
    default: return;
  }
}

/* a (in a stage with spatial vars from[]) equals b (in one with to[]) once
 * each from[k] is read as to[k]. */
static bool expr_equal_mapped(const ingot_ir_expr_t* a, const ingot_ir_expr_t* b, const uint32_t* from,
                              const uint32_t* to, uint32_t n) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind || a->dtype != b->dtype) return false;
  switch (a->kind) {
    case INGOT_IR_EXPR_INT: return a->u.i == b->u.i;
    case INGOT_IR_EXPR_FLOAT: return a->u.f == b->u.f;
    case INGOT_IR_EXPR_VAR:
      for (uint32_t k = 0; k < n; ++k)
        if (a->u.var == from[k]) return b->u.var == to[k];
      return a->u.var == b->u.var;
    case INGOT_IR_EXPR_LOAD:
      return a->u.load.buffer == b->u.load.buffer && expr_equal_mapped(a->u.load.index, b->u.load.index, from, to, n);
    case INGOT_IR_EXPR_UNARY:
    case INGOT_IR_EXPR_CAST:
      return a->u.unary.op == b->u.unary.op && expr_equal_mapped(a->u.unary.a, b->u.unary.a, from, to, n);
    case INGOT_IR_EXPR_BINARY:
      return a->u.binary.op == b->u.binary.op && expr_equal_mapped(a->u.binary.a, b->u.binary.a, from, to, n) &&
             expr_equal_mapped(a->u.binary.b, b->u.binary.b, from, to, n);
    case INGOT_IR_EXPR_SELECT:
      return expr_equal_mapped(a->u.select.cond, b->u.select.cond, from, to, n) &&
             expr_equal_mapped(a->u.select.a, b->u.select.a, from, to, n) &&
             expr_equal_mapped(a->u.select.b, b->u.select.b, from, to, n);
  }
  return false;
}

/* ---- index maps: which thread touches which element ----
 *
 * A stage's fused spatial loop F runs its spatial loops row-major in the
 * stage's loop order; thread F % threads of block F / threads runs
 * iteration F. An index that is affine in the spatial loops, c + sum a_v v,
 * is then a map F -> element. Two stages with the same map (the same
 * constant and the same (coefficient, extent) list in loop order, once
 * neighbours that form one row-major digit are merged) and an injective one
 * put every element on the same thread. Each stage's loops are ordered by
 * its first store's coefficients, largest first (so neighbouring threads
 * also touch neighbouring elements). */

typedef struct affine_t {
  bool ok;
  int64_t c;
  int64_t coef[INGOT_MAX_STAGE_AXES]; /* by position in the stage's spatial[] */
} affine_t;

static affine_t affine_of(const ingot_ir_expr_t* e, const ingot_stage_t* st) {
  affine_t r, a, b;
  memset(&r, 0, sizeof(r));
  if (!e) return r;
  switch (e->kind) {
    case INGOT_IR_EXPR_INT:
      r.ok = true;
      r.c = e->u.i;
      return r;
    case INGOT_IR_EXPR_VAR:
      for (uint32_t k = 0; k < st->spatial_count; ++k)
        if (st->spatial[k] == e->u.var) {
          r.ok = true;
          r.coef[k] = 1;
        }
      return r;
    case INGOT_IR_EXPR_BINARY: {
      ingot_ir_binary_op_t op = e->u.binary.op;
      if (op != INGOT_IR_ADD && op != INGOT_IR_SUB && op != INGOT_IR_MUL) return r;
      a = affine_of(e->u.binary.a, st);
      b = affine_of(e->u.binary.b, st);
      if (!a.ok || !b.ok) return r;
      if (op == INGOT_IR_MUL) {
        bool a_const = true, b_const = true;
        for (uint32_t k = 0; k < st->spatial_count; ++k) {
          a_const &= a.coef[k] == 0;
          b_const &= b.coef[k] == 0;
        }
        if (!a_const && !b_const) return r;
        const affine_t* v = a_const ? &b : &a;
        int64_t m = a_const ? a.c : b.c;
        if (__builtin_mul_overflow(v->c, m, &r.c)) return r;
        for (uint32_t k = 0; k < st->spatial_count; ++k)
          if (__builtin_mul_overflow(v->coef[k], m, &r.coef[k])) return r;
        r.ok = true;
        return r;
      }
      int64_t sign = op == INGOT_IR_SUB ? -1 : 1;
      if (__builtin_add_overflow(a.c, sign * b.c, &r.c)) return r;
      for (uint32_t k = 0; k < st->spatial_count; ++k)
        if (__builtin_add_overflow(a.coef[k], sign * b.coef[k], &r.coef[k])) return r;
      r.ok = true;
      return r;
    }
    default: return r;
  }
}

/* One access's map from the fused index F to the element: (coefficient,
 * extent) digits in loop order, merged where they form one digit. */
typedef struct index_map_t {
  bool ok;       /* affine with positive coefficients and injective */
  int64_t c;
  int64_t coef[INGOT_MAX_STAGE_AXES], ext[INGOT_MAX_STAGE_AXES];
  uint32_t count;
} index_map_t;

static index_map_t index_map(const ingot_ir_expr_t* index, const stage_view_t* v, const uint32_t* order) {
  index_map_t m;
  memset(&m, 0, sizeof(m));
  affine_t a = affine_of(index, v->st);
  if (!a.ok) return m;
  m.c = a.c;
  for (uint32_t i = 0; i < v->st->spatial_count; ++i) {
    uint32_t k = order[i];
    if (v->sext[k] == 1) continue;
    if (a.coef[k] <= 0) return m;
    if (m.count && m.coef[m.count - 1] == a.coef[k] * v->sext[k]) {
      m.coef[m.count - 1] = a.coef[k];
      m.ext[m.count - 1] *= v->sext[k];
      continue;
    }
    m.coef[m.count] = a.coef[k];
    m.ext[m.count++] = v->sext[k];
  }
  /* injective: each digit outweighs everything inside it */
  int64_t inside = 0;
  for (uint32_t i = m.count; i-- > 0;) {
    if (m.coef[i] <= inside) return m;
    inside += m.coef[i] * (m.ext[i] - 1);
  }
  m.ok = true;
  return m;
}

/* Whether two maps agree wherever both are defined: the same constant and
 * digits; the outermost digit's extent may differ (a stage that covers a
 * prefix of what the other covers: F -> element is the same function on
 * the common F, hence the same block and thread). */
static bool same_map(const index_map_t* a, const index_map_t* b) {
  if (!a->ok || !b->ok || a->c != b->c || a->count != b->count) return false;
  for (uint32_t i = 0; i < a->count; ++i)
    if (a->coef[i] != b->coef[i] || (i > 0 && a->ext[i] != b->ext[i])) return false;
  return true;
}

/* The range of each of the buffer's dimensions an affine index covers;
 * false when the index is not affine or its digits carry. */
static bool dim_ranges(const ingot_ir_buffer_t* buf, const ingot_ir_expr_t* index, const stage_view_t* v,
                       int64_t* lo, int64_t* hi) {
  affine_t a = affine_of(index, v->st);
  int32_t rank = buf->rank;
  if (!a.ok || rank < 1 || a.c < 0) return false;
  int64_t stride[INGOT_MAX_RANK];
  int64_t s = 1;
  for (int32_t d = rank; d-- > 0;) {
    stride[d] = s;
    s *= buf->dims[d] ? buf->dims[d] : 1;
  }
  int64_t c = a.c;
  for (int32_t d = 0; d < rank; ++d) {
    lo[d] = c / stride[d];
    c %= stride[d];
    hi[d] = lo[d];
  }
  for (uint32_t k = 0; k < v->st->spatial_count; ++k) {
    if (a.coef[k] == 0 || v->sext[k] == 1) continue;
    if (a.coef[k] < 0) return false;
    int32_t d = 0;
    while (d < rank && a.coef[k] % stride[d]) ++d;
    if (d == rank) return false;
    hi[d] += a.coef[k] / stride[d] * (v->sext[k] - 1);
  }
  for (int32_t d = 1; d < rank; ++d)
    if (hi[d] >= buf->dims[d]) return false;
  return true;
}

/* Whether two accesses of one buffer can never touch the same element. */
static bool disjoint(const ingot_ir_buffer_t* buf, const access_t* x, const stage_view_t* vx, const access_t* y,
                     const stage_view_t* vy) {
  int64_t xl[INGOT_MAX_RANK], xh[INGOT_MAX_RANK], yl[INGOT_MAX_RANK], yh[INGOT_MAX_RANK];
  if (!dim_ranges(buf, x->index, vx, xl, xh) || !dim_ranges(buf, y->index, vy, yl, yh)) return false;
  for (int32_t d = 0; d < buf->rank; ++d)
    if (xh[d] < yl[d] || yh[d] < xl[d]) return true;
  return false;
}

/* The loop order of each stage: by its first store's coefficients, largest
 * first (loops of extent 1 outermost); the lowering's order when that
 * store's index is not affine and injective. */
static void stage_orders(const plan_t* p, const stage_view_t* views, uint32_t (*orders)[INGOT_MAX_STAGE_AXES]) {
  for (uint32_t i = 0; i < p->kernel->stage_count; ++i) {
    const stage_view_t* v = &views[i];
    uint32_t n = v->st->spatial_count;
    for (uint32_t k = 0; k < n; ++k) orders[i][k] = k;
    access_vec_t acc = {0};
    uint8_t* stored = calloc(p->f->buffer_count ? p->f->buffer_count : 1, 1);
    collect_stmt(v->outer, i, &acc, stored);
    free(stored);
    const access_t* first = NULL;
    for (size_t a = 0; a < acc.count && !first; ++a)
      if (acc.data[a].store) first = &acc.data[a];
    affine_t af = first ? affine_of(first->index, v->st) : (affine_t){0};
    INGOT_VEC_FREE(acc);
    if (!af.ok) continue;
    int64_t key[INGOT_MAX_STAGE_AXES];
    for (uint32_t k = 0; k < n; ++k) key[k] = v->sext[k] == 1 ? INT64_MAX : af.coef[k];
    uint32_t sorted[INGOT_MAX_STAGE_AXES];
    for (uint32_t k = 0; k < n; ++k) {
      uint32_t at = k;
      while (at > 0 && key[sorted[at - 1]] < key[k]) {
        sorted[at] = sorted[at - 1];
        --at;
      }
      sorted[at] = k;
    }
    /* Only when that makes the store's map injective. */
    index_map_t m = index_map(first ? first->index : NULL, v, sorted);
    if (m.ok) memcpy(orders[i], sorted, sizeof(sorted[0]) * n);
  }
}

/* Whether the stages may run in one launch with each spatial iteration on
 * one thread (see the file comment): for every buffer the kernel stores,
 * every two accesses from different stages, one of them a store, are
 * disjoint, or map each element to the same thread (the same index map,
 * or the same index expression over the same extents in the lowering's
 * loop order). When not, *out_why names the buffer. */
static bool stages_share_threads(const plan_t* p, const stage_view_t* views, uint32_t (*orders)[INGOT_MAX_STAGE_AXES],
                                 const char** out_why) {
  const ingot_kernel_t* k = p->kernel;
  const ingot_ir_func_t* f = p->f;
  access_vec_t acc = {0};
  uint8_t* stored = calloc(f->buffer_count ? f->buffer_count : 1, 1);
  for (uint32_t i = 0; i < k->stage_count; ++i) collect_stmt(views[i].outer, i, &acc, stored);
  bool ok = true;
  *out_why = NULL;
  for (size_t a = 0; a < acc.count && ok; ++a) {
    const access_t* x = &acc.data[a];
    if (!stored[x->buffer]) continue;
    for (size_t b = a + 1; b < acc.count && ok; ++b) {
      const access_t* y = &acc.data[b];
      if (y->buffer != x->buffer || y->stage == x->stage || (!x->store && !y->store)) continue;
      const stage_view_t* vx = &views[x->stage];
      const stage_view_t* vy = &views[y->stage];
      index_map_t mx = index_map(x->index, vx, orders[x->stage]);
      index_map_t my = index_map(y->index, vy, orders[y->stage]);
      if (same_map(&mx, &my)) continue;
      bool natural = true, same_shape = vx->st->spatial_count == vy->st->spatial_count;
      for (uint32_t d = 0; d < vx->st->spatial_count; ++d) natural &= orders[x->stage][d] == d;
      for (uint32_t d = 0; d < vy->st->spatial_count; ++d) natural &= orders[y->stage][d] == d;
      for (uint32_t d = 0; same_shape && d < vx->st->spatial_count; ++d) same_shape = vx->sext[d] == vy->sext[d];
      if (natural && same_shape &&
          expr_equal_mapped(x->index, y->index, vx->st->spatial, vy->st->spatial, vx->st->spatial_count))
        continue;
      if (disjoint(&f->buffers[x->buffer], x, vx, y, vy)) continue;
      ok = false;
      *out_why = f->buffers[x->buffer].name;
    }
  }
  INGOT_VEC_FREE(acc);
  free(stored);
  return ok;
}

static ingot_status_t stage_views(const plan_t* p, stage_view_t** out_views) {
  *out_views = NULL;
  if (p->kernel->stage_count == 0)
    return ingot_fail(INGOT_ERROR_INTERNAL, "kernel '%s': no stages to schedule", p->f->name);
  stage_view_t* v = calloc(p->kernel->stage_count, sizeof(*v));
  for (uint32_t i = 0; i < p->kernel->stage_count; ++i) {
    ingot_status_t s = plan_stage_view(p, i, &v[i]);
    if (s != INGOT_OK) {
      free(v);
      return s;
    }
  }
  *out_views = v;
  return INGOT_OK;
}

/* The stage's spatial loops put in `order` (positions in spatial[]) and
 * fused into one; returns its name. */
static const char* fuse_spatial(plan_t* p, const stage_view_t* v, const uint32_t* order) {
  uint32_t n = v->st->spatial_count;
  bool moved = false;
  const char* names[INGOT_MAX_STAGE_AXES] = {0};
  for (uint32_t i = 0; i < n; ++i) {
    names[i] = v->sname[order[i]];
    moved |= order[i] != i;
  }
  if (moved) {
    ingot_directive_t d = {0};
    d.kind = INGOT_DIRECTIVE_REORDER;
    d.order = names;
    d.order_count = n;
    ingot_schedule_add(p->s, &d);
  }
  const char* cur = names[0];
  for (uint32_t i = 1; i < n; ++i) cur = plan_emit_fuse(p, cur, names[i]);
  return cur;
}

static void emit_bind(plan_t* p, ingot_directive_kind_t kind, const char* loop) {
  ingot_directive_t d = {0};
  d.kind = kind;
  d.loop = loop;
  d.factor = 0; /* axis x */
  ingot_schedule_add(p->s, &d);
}

/* ---- gpu.simt ---- */

ingot_status_t template_gpu_simt_space(plan_t* p, uint32_t mask, ingot_schedule_space_t* space) {
  space_add_gpu_threads(p, mask, space);
  return INGOT_OK;
}

ingot_status_t template_gpu_simt_plan(plan_t* p) {
  stage_view_t* views;
  ingot_status_t s = stage_views(p, &views);
  if (s != INGOT_OK) return s;
  const char* why;
  uint32_t(*orders)[INGOT_MAX_STAGE_AXES] = calloc(p->kernel->stage_count, sizeof(*orders));
  stage_orders(p, views, orders);
  bool one_launch = stages_share_threads(p, views, orders, &why);
  int64_t threads = p->knob[SCHEDULE_KNOB_GPU_THREADS];
  for (uint32_t i = 0; i < p->kernel->stage_count; ++i) {
    const char* fused = fuse_spatial(p, &views[i], orders[i]);
    const char* inner;
    const char* outer = plan_emit_split(p, fused, threads, &inner);
    /* One launch: blocks x threads cover the stage. The fallback: one
     * block, the outer loop serial (its threads stride over the stage),
     * a barrier before the next stage reads what this one wrote. */
    if (one_launch) emit_bind(p, INGOT_DIRECTIVE_BIND_BLOCK, outer);
    emit_bind(p, INGOT_DIRECTIVE_BIND_THREAD, inner);
    /* A reduction keeps its partial result in a register of its thread. */
    const stage_view_t* v = &views[i];
    if (v->st->role == INGOT_STAGE_UPDATE && v->st->reduce_count > 0 &&
        ingot_schedule_accumulate_local_check(p->f, ingot_schedule_find_loop(p->f, v->rname[0])))
      plan_emit_mark(p, INGOT_DIRECTIVE_ACCUMULATE_LOCAL, v->rname[0]);
    if (!one_launch && i + 1 < p->kernel->stage_count) plan_emit_mark(p, INGOT_DIRECTIVE_BARRIER, outer);
  }
  free(orders);
  free(views);
  return INGOT_OK;
}

/* ---- gpu.row ---- */

/* The one UPDATE stage gpu.row shares among threads, or -1 with *out_why. */
static int32_t row_stage(const plan_t* p, const stage_view_t* views, const char** out_why) {
  int32_t found = -1;
  for (uint32_t i = 0; i < p->kernel->stage_count; ++i) {
    const ingot_stage_t* st = views[i].st;
    if (st->role == INGOT_STAGE_OTHER) {
      *out_why = "an OTHER stage";
      return -1;
    }
    if (st->role != INGOT_STAGE_UPDATE || st->reduce_count == 0) continue;
    if (found >= 0) {
      *out_why = "more than one reduction";
      return -1;
    }
    found = (int32_t)i;
  }
  if (found < 0) {
    *out_why = "no reduction";
    return -1;
  }
  int64_t r = 1;
  for (uint32_t i = 0; i < views[found].st->reduce_count; ++i) r *= views[found].rext[i];
  if (r < GPU_ROW_MIN_REDUCE) {
    *out_why = "a short reduction (fewer than 128 iterations an output)";
    return -1;
  }
  const ingot_ir_stmt_t* red = ingot_schedule_find_loop(p->f, views[found].rname[0]);
  if (!red || ingot_schedule_reduce_threads_check(p->f, red) != INGOT_OK) {
    ingot_compiler_error_clear();
    *out_why = "a reduction not of the form y[i] = start op e (op add, max, min) reading nothing the kernel writes";
    return -1;
  }
  return found;
}

ingot_status_t template_gpu_row_space(plan_t* p, uint32_t mask, ingot_schedule_space_t* space) {
  stage_view_t* views;
  ingot_status_t s = stage_views(p, &views);
  if (s != INGOT_OK) return s;
  const char* why = NULL;
  int32_t update = row_stage(p, views, &why);
  const char* buffer = NULL;
  if (update >= 0) {
    uint32_t(*orders)[INGOT_MAX_STAGE_AXES] = calloc(p->kernel->stage_count, sizeof(*orders));
    stage_orders(p, views, orders);
    if (!stages_share_threads(p, views, orders, &buffer)) why = "stages that share a buffer at other indices";
    free(orders);
  }
  free(views);
  if (update < 0 || buffer)
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "kernel '%s': template 'gpu.row' does not apply: %s", p->f->name, why);
  space_add_gpu_threads(p, mask, space);
  return INGOT_OK;
}

ingot_status_t template_gpu_row_plan(plan_t* p) {
  stage_view_t* views;
  ingot_status_t s = stage_views(p, &views);
  if (s != INGOT_OK) return s;
  const char* why = NULL;
  int32_t update = row_stage(p, views, &why);
  if (update < 0) {
    free(views);
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "kernel '%s': template 'gpu.row' does not apply: %s", p->f->name, why);
  }
  /* One block an output element (the fused spatial loops on blockIdx.x);
   * the reduction shared by the block's threads, every other stage on its
   * thread 0 (a split by 1), so each element stays with one thread. */
  uint32_t(*orders)[INGOT_MAX_STAGE_AXES] = calloc(p->kernel->stage_count, sizeof(*orders));
  stage_orders(p, views, orders);
  for (uint32_t i = 0; i < p->kernel->stage_count; ++i) {
    const char* fused = fuse_spatial(p, &views[i], orders[i]);
    if ((int32_t)i == update) {
      emit_bind(p, INGOT_DIRECTIVE_BIND_BLOCK, fused);
      ingot_directive_t d = {0};
      d.kind = INGOT_DIRECTIVE_REDUCE_THREADS;
      d.loop = views[i].rname[0];
      d.factor = p->knob[SCHEDULE_KNOB_GPU_THREADS];
      ingot_schedule_add(p->s, &d);
    } else {
      const char* inner;
      const char* outer = plan_emit_split(p, fused, 1, &inner);
      emit_bind(p, INGOT_DIRECTIVE_BIND_BLOCK, outer);
      emit_bind(p, INGOT_DIRECTIVE_BIND_THREAD, inner);
    }
  }
  free(orders);
  free(views);
  return INGOT_OK;
}
