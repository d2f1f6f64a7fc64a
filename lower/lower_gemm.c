/* Gemm and MatMul.
 *
 * Gemm  Y[i,j] = alpha * sum_k A'[i,k] B'[k,j] + beta * C[i,j] (C broadcast):
 *   UPDATE  y = (k == 0 ? beta*C (alpha == 1) or 0 : y) + A'[i,k] * B'[k,j]
 *           spatial (i, j), reduce (k)
 *   FINISH  y = act(alpha*y + beta*C)       when alpha != 1 or an activation
 *
 * With B packed in panels (node.weight_block = P > 1, B [ceil(N/P), K, P],
 * as ingot_graph_pack_weights writes it) the UPDATE runs over spatial
 * (batch.., jb, i, ji), j = jb*P + ji, so that the P outputs of one k step
 * are one contiguous vector of B and each panel one stream:
 *   UPDATE  y[.., i, jb*P+ji] += A[.., i, k] * B[jb, k, ji]
 * The panel loop is outside the row loop, so a panel stays in cache while
 * every row block uses it. A partial last panel gets an UPDATE of its own
 * (lower_emit_remainder).
 *
 * MatMul (numpy): batch axes broadcast; a 1-D A is [1,K] with the 1 dropped
 * from the result, a 1-D B is [K,1] likewise.
 *   UPDATE y = (k == 0 ? bias[j] or 0 : y) + A[..,i,k] * B[..,k,j]; FINISH only for an activation
 * (bias: a fused Add, node.epilogue.bias_input).
 * MatMulInteger: the same nest over uint8/int8 operands into int32, each
 * operand widened and its zero point (a scalar, or per row of A / per column
 * of B) subtracted.
 * QLinearMatMul (a 0, a_zero_point 2, b 3, b_zero_point 5): the same int32
 * terms summed in a local accumulator and requantized to uint8/int8 in one
 * OTHER stage (lower_emit_accumulate, lower_requant_value; b's scale per
 * tensor or per column; the arithmetic is in lower_quant.c's header; a
 * large one is split into MatMulInteger + Requantize before lowering,
 * ingot_graph_split_qlinear).
 * QGemm (com.microsoft; A 0, a_zero_point 2, B 3, b_zero_point 5, int32 C
 * 6 per column, y's scale 7 and zero point 8; transA, transB, alpha): the
 * same, C starting the accumulator:
 *   for i, j: acc = C[j]; for k: acc += (A'[i,k] - az) * (B'[k,j] - bz[j]);
 *             y[i,j] = requant(acc, j) */
#include <string.h>

#include "lower_internal.h"

/* beta * C at output position idx (C broadcast to [M, N]); NULL without C. */
static ingot_ir_expr_t* c_term(lower_ctx_t* ctx, uint32_t bc, double beta, ingot_ir_expr_t* const* idx) {
  if (bc == UINT32_MAX) return NULL;
  ingot_ir_expr_t* c = ingot_ir_load(ctx->f, bc, lower_broadcast_index(ctx, bc, 2, idx));
  return beta == 1.0 ? c : ingot_ir_mul(ctx->f, lower_f32(ctx, beta), c);
}

/* The integer operand `v` (uint8/int8) widened to int32, less its zero
 * point (buffer bz, UINT32_MAX: none; element zi). */
static ingot_ir_expr_t* int_operand(lower_ctx_t* ctx, ingot_ir_expr_t* v, uint32_t bz, ingot_ir_expr_t* zi) {
  ingot_ir_func_t* f = ctx->f;
  v = ingot_ir_cast(f, INGOT_DTYPE_I32, v);
  if (bz == UINT32_MAX) return v;
  return ingot_ir_binary(f, INGOT_IR_SUB, v, ingot_ir_cast(f, INGOT_DTYPE_I32, ingot_ir_load(f, bz, zi)));
}

static ingot_status_t lower_qgemm(lower_ctx_t* ctx) {
  uint32_t a = lower_input(ctx, 0), azp = lower_input(ctx, 2), b = lower_input(ctx, 3), bzp = lower_input(ctx, 5);
  uint32_t c = lower_input(ctx, 6);
  uint32_t y = ctx->node->output_count ? ctx->node->outputs[0] : INGOT_NO_VALUE;
  const uint32_t q8 = LOWER_DT(INGOT_DTYPE_U8) | LOWER_DT(INGOT_DTYPE_I8);
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx)) || (s = lower_check_value_dt(ctx, a, q8)) ||
      (s = lower_check_value_dt(ctx, b, q8)) || (s = lower_check_value_dt(ctx, y, q8)) ||
      (azp != INGOT_NO_VALUE && (s = lower_check_value_dt(ctx, azp, q8))) ||
      (bzp != INGOT_NO_VALUE && (s = lower_check_value_dt(ctx, bzp, q8))) ||
      (c != INGOT_NO_VALUE && (s = lower_check_value_dt(ctx, c, LOWER_DT(INGOT_DTYPE_I32))))) {
    return s;
  }
  const ingot_value_t* av = lower_value(ctx, a);
  const ingot_value_t* bv = lower_value(ctx, b);
  const ingot_value_t* yv = lower_value(ctx, y);
  const ingot_gemm_params_t* gp = &ctx->params->u.gemm; /* graph/params.c */
  bool ta = gp->trans_a, tb = gp->trans_b;
  int64_t m = ta ? av->dims[1] : av->dims[0], kk = ta ? av->dims[0] : av->dims[1];
  int64_t n = tb ? bv->dims[0] : bv->dims[1];
  if (av->rank != 2 || bv->rank != 2 || yv->rank != 2 || yv->dims[0] != m || yv->dims[1] != n ||
      (tb ? bv->dims[1] : bv->dims[0]) != kk) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "shapes do not fit: A %s, B %s, Y %s", lower_shape_str(ctx, a),
                      lower_shape_str(ctx, b), lower_shape_str(ctx, y));
  }
  int64_t azp_n = azp != INGOT_NO_VALUE ? ingot_value_numel(lower_value(ctx, azp)) : 0;
  int64_t bzp_n = bzp != INGOT_NO_VALUE ? ingot_value_numel(lower_value(ctx, bzp)) : 0;
  int64_t c_n = c != INGOT_NO_VALUE ? ingot_value_numel(lower_value(ctx, c)) : 0;
  if (azp_n > 1 || (bzp_n > 1 && bzp_n != n) || (c_n > 1 && c_n != n)) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED,
                      "a_zero_point must be a scalar, b_zero_point and C scalars or one per column (%lld)", (long long)n);
  }
  uint32_t ba = lower_add_input(ctx, a, "a");
  uint32_t bb = lower_add_input(ctx, b, "b");
  uint32_t baz = azp != INGOT_NO_VALUE ? lower_add_input(ctx, azp, "a_zero") : UINT32_MAX;
  uint32_t bbz = bzp != INGOT_NO_VALUE ? lower_add_input(ctx, bzp, "b_zero") : UINT32_MAX;
  uint32_t bc = c != INGOT_NO_VALUE ? lower_add_input(ctx, c, "c") : UINT32_MAX;
  lower_requant_t rq = {0};
  if ((s = lower_requant_args(ctx, 1, 4, 7, 8, n, yv->dtype, &rq))) return s;
  rq.alpha = gp->alpha;
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  static const char* const kSp[2] = {"i", "j"};
  static const char* const kRed[1] = {"k"};
  int64_t sext[2] = {m, n}, rext[1] = {kk};
  lower_loops_t sp, red;
  lower_loops_make(ctx, &sp, 2, sext, kSp);
  lower_loops_make(ctx, &red, 1, rext, kRed);
  ingot_ir_expr_t *i = sp.idx[0], *j = sp.idx[1], *k = red.idx[0], *zero = ingot_ir_int(f, 0);
  ingot_ir_expr_t* ai[2] = {ta ? k : i, ta ? i : k};
  ingot_ir_expr_t* bi[2] = {tb ? j : k, tb ? k : j};
  ingot_ir_expr_t* term =
      ingot_ir_mul(f, int_operand(ctx, ingot_ir_load(f, ba, ingot_ir_flat_index(f, ba, ai)), baz, zero),
                   int_operand(ctx, ingot_ir_load(f, bb, ingot_ir_flat_index(f, bb, bi)), bbz, bzp_n > 1 ? j : zero));
  ingot_ir_expr_t* init = bc != UINT32_MAX ? ingot_ir_load(f, bc, c_n > 1 ? j : zero) : lower_const(ctx, INGOT_DTYPE_I32, 0.0);
  uint32_t acc = lower_add_var(ctx, "acc", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I32);
  ingot_ir_stmt_t* store =
      ingot_ir_store(f, by, ingot_ir_flat_index(f, by, sp.idx), lower_requant_value(ctx, &rq, ingot_ir_var(f, acc), j));
  lower_emit_accumulate(ctx, &sp, 0, &red, acc, init, term, store);
  ctx->op_class = INGOT_OP_CLASS_ROW; /* one OTHER stage: a row pass's schedule (parallel outer loop) */
  ctx->workload = ingot_arena_printf(ctx->arena, "qgemm %s.%s.%s m%lld n%lld k%lld ta%d tb%d zp%lld.%lld bs%lld c%lld alpha%g",
                                     ingot_dtype_name(av->dtype), ingot_dtype_name(bv->dtype), ingot_dtype_name(yv->dtype),
                                     (long long)m, (long long)n, (long long)kk, ta, tb, (long long)azp_n,
                                     (long long)bzp_n, (long long)rq.w_scales, (long long)c_n, (double)gp->alpha);
  return INGOT_OK;
}

ingot_status_t lower_gemm(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  if (node->op == INGOT_OP_QGEMM) return lower_qgemm(ctx);
  uint32_t a = lower_input(ctx, 0), b = lower_input(ctx, 1), c = lower_input(ctx, 2);
  uint32_t y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_check_value(ctx, a, true)) || (s = lower_check_weight(ctx, b)) ||
      (s = lower_check_value(ctx, y, true))) {
    return s;
  }
  if (c != INGOT_NO_VALUE && (s = lower_check_value(ctx, c, true))) return s;
  const ingot_value_t* av = lower_value(ctx, a);
  ingot_value_t b_logical;
  const ingot_value_t* bv = ingot_node_logical_input(node, 1, lower_value(ctx, b), &b_logical);
  const ingot_value_t* yv = lower_value(ctx, y);
  int64_t block = node->weight_block;
  if (!bv) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "B %s is not a packed weight", lower_shape_str(ctx, b));
  if (av->rank != 2 || bv->rank != 2 || yv->rank != 2) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "A, B and Y must be 2-D (A %s, B %s)", lower_shape_str(ctx, a),
                      lower_shape_str(ctx, b));
  }
  const ingot_gemm_params_t* gp = &ctx->params->u.gemm; /* graph/params.c */
  bool ta = gp->trans_a, tb = gp->trans_b;
  double alpha = gp->alpha, beta = gp->beta;
  int64_t m = ta ? av->dims[1] : av->dims[0];
  int64_t kk = ta ? av->dims[0] : av->dims[1];
  int64_t kb = tb ? bv->dims[1] : bv->dims[0];
  int64_t n = tb ? bv->dims[0] : bv->dims[1];
  if (kk != kb || yv->dims[0] != m || yv->dims[1] != n) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "shapes do not fit: A %s%s, B %s%s, Y %s",
                      lower_shape_str(ctx, a), ta ? " (transposed)" : "", lower_shape_str(ctx, b),
                      tb ? " (transposed)" : "", lower_shape_str(ctx, y));
  }
  if (c != INGOT_NO_VALUE && (s = lower_check_broadcast(ctx, c, y))) return s;
  bool use_c = c != INGOT_NO_VALUE && beta != 0.0;

  uint32_t ba = lower_add_input(ctx, a, "a");
  lower_weight_t wb = lower_add_weight(ctx, b, "b");
  uint32_t bb = wb.buffer;
  uint32_t bc = use_c ? lower_add_input(ctx, c, "c") : UINT32_MAX;
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  static const char* const kSp[2] = {"i", "j"};
  static const char* const kRed[1] = {"k"};
  int64_t sext[2] = {m, n}, rext[1] = {kk};
  bool finish = alpha != 1.0 || lower_has_activation(ctx);
  lower_loops_t sp, red;

  /* No INIT stage: the UPDATE starts at beta*C (alpha 1) or 0 on its first
   * step (lower_update_start). */
  lower_loops_make(ctx, &red, 1, rext, kRed);
  ingot_ir_expr_t* yi;
  if (block) {
    static const char* const kPanel[3] = {"jb", "i", "ji"};
    int64_t pext[3] = {n / block, m, block};
    lower_loops_make(ctx, &sp, 3, pext, kPanel);
    ingot_ir_expr_t* ai[2] = {ta ? red.idx[0] : sp.idx[1], ta ? sp.idx[1] : red.idx[0]};
    ingot_ir_expr_t* bi[3] = {sp.idx[0], red.idx[0], sp.idx[2]};
    ingot_ir_expr_t* yidx[2] = {sp.idx[1], ingot_ir_add(f, ingot_ir_mul(f, sp.idx[0], ingot_ir_int(f, block)), sp.idx[2])};
    ingot_ir_expr_t* prod = ingot_ir_mul(f, ingot_ir_load(f, ba, ingot_ir_flat_index(f, ba, ai)),
                                         lower_weight_load(ctx, &wb, ingot_ir_flat_index(f, bb, bi), yidx[1]));
    yi = ingot_ir_flat_index(f, by, yidx);
    ingot_ir_expr_t* init = alpha == 1.0 ? c_term(ctx, bc, beta, yidx) : NULL;
    ingot_ir_expr_t* start = lower_update_start(ctx, &red, by, yi, init ? init : lower_f32(ctx, 0.0));
    ingot_ir_stmt_t* update = ingot_ir_store(f, by, yi, ingot_ir_add(f, start, prod));
    lower_emit_stage(ctx, INGOT_STAGE_UPDATE, &sp, &red, update);
    ctx->stages.data[ctx->stages.count - 1].tile_axis = 1; /* rows */
    if (n % block) lower_emit_remainder(ctx, &sp, &red, update, 0, 2, n / block, n % block);
  } else {
    lower_loops_make(ctx, &sp, 2, sext, kSp);
    ingot_ir_expr_t* ai[2] = {ta ? red.idx[0] : sp.idx[0], ta ? sp.idx[0] : red.idx[0]};
    ingot_ir_expr_t* bi[2] = {tb ? sp.idx[1] : red.idx[0], tb ? red.idx[0] : sp.idx[1]};
    ingot_ir_expr_t* prod = ingot_ir_mul(f, ingot_ir_load(f, ba, ingot_ir_flat_index(f, ba, ai)),
                                         lower_weight_load(ctx, &wb, ingot_ir_flat_index(f, bb, bi), sp.idx[1]));
    yi = ingot_ir_flat_index(f, by, sp.idx);
    ingot_ir_expr_t* init = alpha == 1.0 ? c_term(ctx, bc, beta, sp.idx) : NULL;
    ingot_ir_expr_t* start = lower_update_start(ctx, &red, by, yi, init ? init : lower_f32(ctx, 0.0));
    lower_emit_stage(ctx, INGOT_STAGE_UPDATE, &sp, &red, ingot_ir_store(f, by, yi, ingot_ir_add(f, start, prod)));
  }

  if (finish) {
    lower_loops_make(ctx, &sp, 2, sext, kSp);
    yi = ingot_ir_flat_index(f, by, sp.idx);
    ingot_ir_expr_t* v = ingot_ir_load(f, by, yi);
    if (alpha != 1.0) {
      v = ingot_ir_mul(f, lower_f32(ctx, alpha), v);
      ingot_ir_expr_t* ct = c_term(ctx, bc, beta, sp.idx);
      if (ct) v = ingot_ir_add(f, v, ct);
    }
    lower_emit_stage(ctx, INGOT_STAGE_FINISH, &sp, NULL, ingot_ir_store(f, by, yi, lower_activation(ctx, v)));
  }

  ctx->op_class = INGOT_OP_CLASS_CONTRACTION;
  /* The workload names the computation, not the layout chosen for it: a
   * constant B (packed or not, transposed or not) is "bconst". */
  bool b_const = lower_value(ctx, b)->kind == INGOT_VALUE_WEIGHT;
  ctx->workload = ingot_arena_printf(ctx->arena, "gemm f32%s m%lld n%lld k%lld ta%d %s alpha%g beta%g c=%s act=%s",
                                     lower_weight_tag(ctx, &wb), (long long)m, (long long)n, (long long)kk, ta, b_const ? "bconst" : tb ? "tb1" : "tb0",
                                     alpha, use_c ? beta : 0.0, use_c ? lower_shape_str(ctx, c) : "none",
                                     lower_activation_name(ctx));
  return INGOT_OK;
}

/* A shape as "2x3x4" (the ONNX-layout shape of a packed weight, so that
 * the workload does not depend on the layout chosen). */
static const char* logical_shape_str(lower_ctx_t* ctx, const ingot_value_t* v) {
  if (v->rank == 0) return "scalar";
  ingot_strbuf_t sb = {0};
  for (int32_t i = 0; i < v->rank; ++i) ingot_strbuf_appendf(&sb, "%s%lld", i ? "x" : "", (long long)v->dims[i]);
  const char* s = ingot_arena_strdup(ctx->arena, sb.data);
  ingot_strbuf_free(&sb);
  return s;
}

/* MatMulInteger with B packed as dot4 words (ingot_graph_pack_weights:
 * [P, G + 1, B] int32, G = K / 4, w' = w - b_zero folded in, group G the
 * column sums S[j] of w') and a uint8 A read as words of 4 consecutive k:
 *   y[.., i, jb*B + ji] = (first step ? -za * S[j] : y) + dot4(A[.., i, rg], w[jb, rg, ji])
 * over rg < G; sum (a - za) w' = sum a w' - za S[j]. Spatial (batch.., jb,
 * i, ji): vectors along a panel's columns, a register tile of rows i, each
 * A word broadcast; y's rows are stored as they lie. */
static ingot_status_t emit_matmul_dot4(lower_ctx_t* ctx, uint32_t a, uint32_t b, uint32_t azp, uint32_t bzp,
                                       uint32_t y, int32_t batch, const int64_t* bdims, int64_t m, int64_t n,
                                       int64_t kk) {
  const ingot_node_t* node = ctx->node;
  const ingot_value_t* av = lower_value(ctx, a);
  const ingot_value_t* wv = lower_value(ctx, b);
  int64_t block = node->weight_block, groups = kk / 4;
  if (wv->dtype != INGOT_DTYPE_I32 || wv->rank != 3 || wv->dims[1] != groups + 1 || wv->dims[2] != block ||
      wv->dims[0] != (n + block - 1) / block) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "B %s does not hold the dot4 words of %lld x %lld",
                      lower_shape_str(ctx, b), (long long)kk, (long long)n);
  }
  int32_t a_batch = av->rank - 2;
  uint32_t ba = lower_add_words_input(ctx, a, "a");
  uint32_t bb = lower_add_input(ctx, b, "b");
  uint32_t bazp = azp != INGOT_NO_VALUE ? lower_add_input(ctx, azp, "a_zero") : UINT32_MAX;
  /* b_zero stays an argument (unread), as in the unpacked form another
   * target of the bundle may lower */
  if (bzp != INGOT_NO_VALUE) lower_add_input(ctx, bzp, "b_zero");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  static const char* const kBatch[INGOT_MAX_RANK] = {"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"};
  const char* pnames[INGOT_MAX_RANK + 1];
  int64_t pext[INGOT_MAX_RANK + 1];
  uint32_t np = 0;
  for (int32_t i = 0; i < batch; ++i) {
    pnames[np] = batch == 1 ? "n" : kBatch[i];
    pext[np++] = bdims[i];
  }
  pnames[np] = "jb";
  pext[np++] = n / block;
  uint32_t i_pos = np;
  pnames[np] = "i";
  pext[np++] = m;
  pnames[np] = "ji";
  pext[np++] = block;
  static const char* const kRed[1] = {"rg"};
  int64_t rext[1] = {groups};
  lower_loops_t sp, red;
  lower_loops_make(ctx, &sp, np, pext, pnames);
  lower_loops_make(ctx, &red, 1, rext, kRed);
  ingot_ir_expr_t* ai[INGOT_MAX_RANK];
  for (int32_t i = 0; i < a_batch; ++i) {
    int32_t o = i + (batch - a_batch);
    ai[i] = av->dims[i] == 1 ? ingot_ir_int(f, 0) : sp.idx[o];
  }
  ai[a_batch] = sp.idx[i_pos];
  ai[a_batch + 1] = red.idx[0];
  ingot_ir_expr_t* aw = ingot_ir_load(f, ba, ingot_ir_flat_index(f, ba, ai));
  ingot_ir_expr_t* wi[3] = {sp.idx[batch], red.idx[0], sp.idx[np - 1]};
  ingot_ir_expr_t* ww = ingot_ir_load(f, bb, ingot_ir_flat_index(f, bb, wi));
  ingot_ir_expr_t* yidx[INGOT_MAX_RANK];
  uint32_t ny = 0;
  for (int32_t i = 0; i < batch; ++i) yidx[ny++] = sp.idx[i];
  yidx[ny++] = sp.idx[i_pos];
  yidx[ny++] = ingot_ir_add(f, ingot_ir_mul(f, sp.idx[batch], ingot_ir_int(f, block)), sp.idx[np - 1]);
  ingot_ir_expr_t* yi = ingot_ir_flat_index(f, by, yidx);
  ingot_ir_expr_t* si[3] = {sp.idx[batch], ingot_ir_int(f, groups), sp.idx[np - 1]};
  ingot_ir_expr_t* init =
      bazp == UINT32_MAX
          ? ingot_ir_cast(f, INGOT_DTYPE_I32, ingot_ir_int(f, 0))
          : ingot_ir_mul(f, ingot_ir_unary(f, INGOT_IR_NEG, ingot_ir_cast(f, INGOT_DTYPE_I32, ingot_ir_load(f, bazp, ingot_ir_int(f, 0)))),
                         ingot_ir_load(f, bb, ingot_ir_flat_index(f, bb, si)));
  ingot_ir_stmt_t* update = ingot_ir_store(
      f, by, yi,
      ingot_ir_add(f, lower_update_start(ctx, &red, by, yi, init),
                   ingot_ir_binary(f, ctx->node->dot_sat16 ? INGOT_IR_DOT4S : INGOT_IR_DOT4, aw, ww)));
  lower_emit_stage(ctx, INGOT_STAGE_UPDATE, &sp, &red, update);
  ctx->stages.data[ctx->stages.count - 1].tile_axis = (int32_t)i_pos; /* rows */
  if (n % block) lower_emit_remainder(ctx, &sp, &red, update, (uint32_t)batch, np - 1, n / block, n % block);
  ctx->op_class = INGOT_OP_CLASS_CONTRACTION;
  ctx->workload = ingot_arena_printf(ctx->arena, "matmulinteger uint8 %s zp%d a=%s m%lld n%lld k%lld",
                                     ctx->node->dot_sat16 ? "dot4s" : "dot4", bazp != UINT32_MAX,
                                     lower_shape_str(ctx, a), (long long)m, (long long)n, (long long)kk);
  return INGOT_OK;
}

ingot_status_t lower_matmul(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  bool qlinear = node->op == INGOT_OP_QLINEARMATMUL;
  bool integer = node->op == INGOT_OP_MATMULINTEGER || qlinear;
  uint32_t a = lower_input(ctx, 0), b = lower_input(ctx, qlinear ? 3 : 1);
  uint32_t azp = integer ? lower_input(ctx, 2) : INGOT_NO_VALUE;
  uint32_t bzp = qlinear ? lower_input(ctx, 5) : integer ? lower_input(ctx, 3) : INGOT_NO_VALUE;
  uint32_t y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_check_value(ctx, a, !integer)) ||
      (s = integer ? lower_check_value(ctx, b, false) : lower_check_weight(ctx, b)) ||
      (s = lower_check_value(ctx, y, !integer))) {
    return s;
  }
  /* MatMulInteger with B packed as dot4 words (node.weight_dot4_channels = K):
   * emit_matmul_dot4 */
  bool dot4 = node->op == INGOT_OP_MATMULINTEGER && node->weight_block && node->weight_dot4_channels;
  if (integer) {
    uint32_t all[4] = {a, dot4 ? INGOT_NO_VALUE : b, azp, dot4 ? INGOT_NO_VALUE : bzp};
    for (uint32_t i = 0; i < 4; ++i) {
      if (all[i] == INGOT_NO_VALUE) continue;
      if ((s = lower_check_value(ctx, all[i], false))) return s;
      ingot_dtype_t t = lower_value(ctx, all[i])->dtype;
      if (t != INGOT_DTYPE_U8 && t != INGOT_DTYPE_I8) {
        return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "'%s' has dtype %s (uint8 or int8)", lower_value(ctx, all[i])->name,
                          ingot_dtype_name(t));
      }
    }
    ingot_dtype_t yt = lower_value(ctx, y)->dtype;
    if ((qlinear ? yt != INGOT_DTYPE_U8 && yt != INGOT_DTYPE_I8 : yt != INGOT_DTYPE_I32) || lower_has_activation(ctx)) {
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "the output must be %s (and no fused activation)",
                        qlinear ? "uint8 or int8" : "int32");
    }
  }
  /* A fused bias (ingot_graph_fuse_matmul_bias): one value per output column. */
  uint32_t bias = node->epilogue.bias_input ? lower_input(ctx, node->epilogue.bias_input) : INGOT_NO_VALUE;
  if (node->epilogue.bias_input && (integer || bias == INGOT_NO_VALUE))
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "a fused bias needs a float MatMul and its input");
  if (bias != INGOT_NO_VALUE && (s = lower_check_value(ctx, bias, true))) return s;
  /* A fused residual (ingot_graph_fuse_residual_add): a tensor of y's shape
   * added after the scale and bias, before the activation. */
  uint32_t res = node->epilogue.residual_input ? lower_input(ctx, node->epilogue.residual_input) : INGOT_NO_VALUE;
  if (node->epilogue.residual_input && (integer || res == INGOT_NO_VALUE))
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "a fused residual needs a float MatMul and its input");
  if (res != INGOT_NO_VALUE && (s = lower_check_value(ctx, res, true))) return s;
  const ingot_value_t* av = lower_value(ctx, a);
  ingot_value_t b_logical;
  const ingot_value_t* bv = ingot_node_logical_input(node, 1, lower_value(ctx, b), &b_logical);
  const ingot_value_t* yv = lower_value(ctx, y);
  int64_t block = integer ? 0 : node->weight_block;
  if (!bv) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "B %s is not a packed weight", lower_shape_str(ctx, b));
  if (av->rank < 1 || bv->rank < 1) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "MatMul operands must have rank >= 1");
  }
  bool a_vec = av->rank == 1, b_vec = bv->rank == 1;
  int64_t m = a_vec ? 1 : av->dims[av->rank - 2];
  int64_t kk = av->dims[av->rank - 1];
  int64_t kb = b_vec ? bv->dims[0] : bv->dims[bv->rank - 2];
  int64_t n = b_vec ? 1 : bv->dims[bv->rank - 1];
  int32_t a_batch = a_vec ? 0 : av->rank - 2, b_batch = b_vec ? 0 : bv->rank - 2;
  int32_t batch = a_batch > b_batch ? a_batch : b_batch;
  int32_t expect_rank = batch + (a_vec ? 0 : 1) + (b_vec ? 0 : 1);
  bool ok = kk == kb && yv->rank == expect_rank;
  int64_t bdims[INGOT_MAX_RANK];
  for (int32_t i = 0; ok && i < batch; ++i) {
    int32_t ia = i - (batch - a_batch), ib = i - (batch - b_batch);
    int64_t da = ia >= 0 ? av->dims[ia] : 1, db = ib >= 0 ? bv->dims[ib] : 1;
    if (da != db && da != 1 && db != 1) ok = false;
    bdims[i] = da == 1 ? db : da;
    if (ok && yv->dims[i] != bdims[i]) ok = false;
  }
  if (ok && !a_vec && yv->dims[batch] != m) ok = false;
  if (ok && !b_vec && yv->dims[yv->rank - 1] != n) ok = false;
  if (!ok) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "shapes do not fit: A %s, B %s, Y %s", lower_shape_str(ctx, a),
                      lower_shape_str(ctx, b), lower_shape_str(ctx, y));
  }

  int64_t azp_n = azp != INGOT_NO_VALUE ? ingot_value_numel(lower_value(ctx, azp)) : 0;
  int64_t bzp_n = bzp != INGOT_NO_VALUE ? ingot_value_numel(lower_value(ctx, bzp)) : 0;
  if (dot4) {
    if (a_vec || b_vec || b_batch || azp_n > 1 || av->dtype != INGOT_DTYPE_U8 || kk % 4 ||
        node->weight_dot4_channels != kk) {
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "dot4 words need a uint8 A %s with whole words and a 2-D B",
                        lower_shape_str(ctx, a));
    }
    return emit_matmul_dot4(ctx, a, b, azp, bzp, y, batch, bdims, m, n, kk);
  }
  if ((azp_n > 1 && azp_n != m) || (bzp_n > 1 && bzp_n != n)) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "zero points must be scalars or per row of A / per column of B");
  }
  uint32_t ba = lower_add_input(ctx, a, "a");
  /* A float MatMul's constant B may be stored compressed (lower_weight_load). */
  lower_weight_t wb = {lower_add_input(ctx, b, "b"), UINT32_MAX, INGOT_DTYPE_F32};
  if (!integer) wb = lower_add_weight(ctx, b, "b");
  if (wb.dtype != INGOT_DTYPE_F32 && (b_vec || b_batch))
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "a compressed B must be 2-D");
  uint32_t bb = wb.buffer;
  uint32_t bazp = azp != INGOT_NO_VALUE ? lower_add_input(ctx, azp, "a_zero") : UINT32_MAX;
  uint32_t bbzp = bzp != INGOT_NO_VALUE ? lower_add_input(ctx, bzp, "b_zero") : UINT32_MAX;
  if (bias != INGOT_NO_VALUE && (b_vec || ingot_value_numel(lower_value(ctx, bias)) != n))
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "fused bias %s is not one value per output column (%lld)",
                      lower_shape_str(ctx, bias), (long long)n);
  uint32_t bbias = bias != INGOT_NO_VALUE ? lower_add_input(ctx, bias, "bias") : UINT32_MAX;
  if (res != INGOT_NO_VALUE && ingot_value_numel(lower_value(ctx, res)) != ingot_value_numel(yv))
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "the fused residual must have the output's shape");
  uint32_t bres = res != INGOT_NO_VALUE ? lower_add_input(ctx, res, "residual") : UINT32_MAX;
  lower_requant_t rq = {0};
  if (qlinear && (s = lower_requant_args(ctx, 1, 4, 6, 7, b_vec ? 1 : n, yv->dtype, &rq))) return s;
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  static const char* const kBatch[INGOT_MAX_RANK] = {"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"};
  const char* snames[INGOT_MAX_RANK];
  int64_t sext[INGOT_MAX_RANK];
  uint32_t ns = 0;
  for (int32_t i = 0; i < batch; ++i) {
    snames[ns] = batch == 1 ? "n" : kBatch[i];
    sext[ns++] = bdims[i];
  }
  if (!a_vec) {
    snames[ns] = "i";
    sext[ns++] = m;
  }
  if (!b_vec) {
    snames[ns] = "j";
    sext[ns++] = n;
  }
  static const char* const kRed[1] = {"k"};
  int64_t rext[1] = {kk};
  lower_loops_t sp, red;

  /* No INIT stage: the UPDATE starts at 0 on its first step. */
  ingot_ir_expr_t* zero = lower_const(ctx, lower_value(ctx, y)->dtype, 0.0);

  /* With a packed B: spatial (batch.., jb, i, ji); i_pos is i's place. */
  uint32_t i_pos = (uint32_t)batch;
  if (block) {
    const char* pnames[INGOT_MAX_RANK + 1];
    int64_t pext[INGOT_MAX_RANK + 1];
    uint32_t np = 0;
    for (int32_t i = 0; i < batch; ++i) {
      pnames[np] = snames[i];
      pext[np++] = sext[i];
    }
    pnames[np] = "jb";
    pext[np++] = n / block;
    i_pos = np;
    if (!a_vec) {
      pnames[np] = "i";
      pext[np++] = m;
    }
    pnames[np] = "ji";
    pext[np++] = block;
    lower_loops_make(ctx, &sp, np, pext, pnames);
  } else {
    lower_loops_make(ctx, &sp, ns, sext, snames);
  }
  lower_loops_make(ctx, &red, 1, rext, kRed);
  ingot_ir_expr_t* ai[INGOT_MAX_RANK];
  ingot_ir_expr_t* bi[INGOT_MAX_RANK];
  for (int32_t i = 0; i < a_batch; ++i) {
    int32_t o = i + (batch - a_batch);
    ai[i] = av->dims[i] == 1 ? ingot_ir_int(f, 0) : sp.idx[o];
  }
  for (int32_t i = 0; i < b_batch; ++i) {
    int32_t o = i + (batch - b_batch);
    bi[i] = bv->dims[i] == 1 ? ingot_ir_int(f, 0) : sp.idx[o];
  }
  if (a_vec) {
    ai[0] = red.idx[0];
  } else {
    ai[a_batch] = sp.idx[i_pos];
    ai[a_batch + 1] = red.idx[0];
  }
  if (block) {
    bi[0] = sp.idx[batch];
    bi[1] = red.idx[0];
    bi[2] = sp.idx[sp.count - 1];
  } else if (b_vec) {
    bi[0] = red.idx[0];
  } else {
    bi[b_batch] = red.idx[0];
    bi[b_batch + 1] = sp.idx[ns - 1];
  }
  ingot_ir_expr_t* av_e = ingot_ir_load(f, ba, ingot_ir_flat_index(f, ba, ai));
  /* The output column j (for a compressed B's scale). */
  ingot_ir_expr_t* bcol = b_vec ? ingot_ir_int(f, 0)
                          : block ? ingot_ir_add(f, ingot_ir_mul(f, sp.idx[batch], ingot_ir_int(f, block)), sp.idx[sp.count - 1])
                                  : sp.idx[ns - 1];
  ingot_ir_expr_t* bv_e = integer ? ingot_ir_load(f, bb, ingot_ir_flat_index(f, bb, bi))
                                  : lower_weight_load(ctx, &wb, ingot_ir_flat_index(f, bb, bi), bcol);
  if (integer) {
    av_e = ingot_ir_cast(f, INGOT_DTYPE_I32, av_e);
    bv_e = ingot_ir_cast(f, INGOT_DTYPE_I32, bv_e);
    if (bazp != UINT32_MAX) {
      ingot_ir_expr_t* zi = azp_n > 1 ? sp.idx[batch] : ingot_ir_int(f, 0);
      av_e = ingot_ir_binary(f, INGOT_IR_SUB, av_e, ingot_ir_cast(f, INGOT_DTYPE_I32, ingot_ir_load(f, bazp, zi)));
    }
    if (bbzp != UINT32_MAX) {
      ingot_ir_expr_t* zi = bzp_n > 1 ? sp.idx[ns - 1] : ingot_ir_int(f, 0);
      bv_e = ingot_ir_binary(f, INGOT_IR_SUB, bv_e, ingot_ir_cast(f, INGOT_DTYPE_I32, ingot_ir_load(f, bbzp, zi)));
    }
  }
  ingot_ir_expr_t* prod = ingot_ir_mul(f, av_e, bv_e);
  ingot_ir_expr_t* yi;
  ingot_ir_expr_t* col; /* the output column j */
  if (block) {
    ingot_ir_expr_t* yidx[INGOT_MAX_RANK];
    uint32_t ny = 0;
    for (int32_t i = 0; i < batch; ++i) yidx[ny++] = sp.idx[i];
    if (!a_vec) yidx[ny++] = sp.idx[i_pos];
    col = ingot_ir_add(f, ingot_ir_mul(f, sp.idx[batch], ingot_ir_int(f, block)), sp.idx[sp.count - 1]);
    yidx[ny++] = col;
    yi = ingot_ir_flat_index(f, by, yidx);
  } else {
    col = b_vec ? NULL : sp.idx[ns - 1];
    yi = ingot_ir_flat_index(f, by, sp.idx);
  }
  /* A fused scale applies to the product alone: the accumulators then start
   * at 0 and the bias joins in the FINISH pass (folded into the register
   * tile's stores by the schedule). */
  float scale = node->epilogue.scale;
  bool scaled = scale != 0.0f && scale != 1.0f;
  if (scaled && integer) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "a fused scale needs a float MatMul");
  ingot_ir_expr_t* init = bbias != UINT32_MAX && !scaled ? ingot_ir_load(f, bbias, col) : zero;
  if (qlinear) {
    uint32_t acc = lower_add_var(ctx, "acc", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I32);
    ingot_ir_expr_t* out = lower_requant_value(ctx, &rq, ingot_ir_var(f, acc), col ? col : ingot_ir_int(f, 0));
    zero = lower_const(ctx, INGOT_DTYPE_I32, 0.0);
    lower_emit_accumulate(ctx, &sp, 0, &red, acc, zero, prod, ingot_ir_store(f, by, yi, out));
    ctx->op_class = INGOT_OP_CLASS_ROW; /* one OTHER stage: a row pass's schedule (parallel outer loop) */
    ctx->workload = ingot_arena_printf(ctx->arena, "qlinearmatmul %s.%s.%s zp%lld.%lld bs%lld a=%s b=%s m%lld n%lld k%lld",
                                       ingot_dtype_name(av->dtype), ingot_dtype_name(lower_value(ctx, b)->dtype),
                                       ingot_dtype_name(yv->dtype), (long long)azp_n, (long long)bzp_n,
                                       (long long)rq.w_scales, lower_shape_str(ctx, a), logical_shape_str(ctx, bv),
                                       (long long)m, (long long)n, (long long)kk);
    return INGOT_OK;
  }
  ingot_ir_stmt_t* update = ingot_ir_store(f, by, yi, ingot_ir_add(f, lower_update_start(ctx, &red, by, yi, init), prod));
  lower_emit_stage(ctx, INGOT_STAGE_UPDATE, &sp, &red, update);
  if (block && !a_vec) ctx->stages.data[ctx->stages.count - 1].tile_axis = (int32_t)i_pos; /* rows */
  if (block && n % block) lower_emit_remainder(ctx, &sp, &red, update, (uint32_t)batch, sp.count - 1, n / block, n % block);

  if (lower_has_activation(ctx) || scaled || bres != UINT32_MAX) {
    lower_loops_make(ctx, &sp, ns, sext, snames);
    yi = ingot_ir_flat_index(f, by, sp.idx);
    ingot_ir_expr_t* v = ingot_ir_load(f, by, yi);
    if (scaled) {
      v = ingot_ir_mul(f, v, lower_const(ctx, yv->dtype, scale));
      if (bbias != UINT32_MAX) v = ingot_ir_add(f, v, ingot_ir_load(f, bbias, b_vec ? ingot_ir_int(f, 0) : sp.idx[ns - 1]));
    }
    if (bres != UINT32_MAX) v = ingot_ir_add(f, v, ingot_ir_load(f, bres, ingot_ir_flat_index(f, bres, sp.idx)));
    lower_emit_stage(ctx, INGOT_STAGE_FINISH, &sp, NULL, ingot_ir_store(f, by, yi, lower_activation(ctx, v)));
  }

  ctx->op_class = INGOT_OP_CLASS_CONTRACTION;
  ctx->workload = ingot_arena_printf(ctx->arena, "%s a=%s b=%s m%lld n%lld k%lld act=%s%s%s%s",
                                     integer ? ingot_arena_printf(ctx->arena, "matmulinteger %s.%s zp%lld.%lld",
                                                                  ingot_dtype_name(lower_value(ctx, a)->dtype),
                                                                  ingot_dtype_name(lower_value(ctx, b)->dtype),
                                                                  (long long)azp_n, (long long)bzp_n)
                                             : ingot_arena_printf(ctx->arena, "matmul f32%s", lower_weight_tag(ctx, &wb)),
                                     lower_shape_str(ctx, a), logical_shape_str(ctx, bv), (long long)m, (long long)n,
                                     (long long)kk, lower_activation_name(ctx), bbias != UINT32_MAX ? " bias" : "",
                                     scaled ? ingot_arena_printf(ctx->arena, " scale=%.9g", scale) : "",
                                     bres != UINT32_MAX ? " residual" : "");
  return INGOT_OK;
}
