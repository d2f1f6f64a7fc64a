/* Linear algebra beyond the contractions: Det.
 *
 * Det, X [..., M, M] -> Y [...], in X's dtype (float32, float64), one OTHER
 * stage: each matrix is copied into the node's second output LU (the
 * scratch that shape inference adds, graph/infer_nn.c) and factored there by
 * Gaussian elimination with partial pivoting (the row of the largest
 * magnitude in the column, the first of equals, as LAPACK's getrf):
 *
 *   for b over the matrices:                      (spatial: independent)
 *     for e in M*M: LU[b, e] = X[b, e]
 *     det = 1
 *     for k in M:
 *       p = k, best = |LU[b, k, k]|
 *       for i in M: if k < i and best < |LU[b, i, k]|: p = i, best = |..|
 *       if p != k: swap rows k and p (for j in M); det = -det
 *       piv = LU[b, k, k]; det = det * piv
 *       if piv != 0: for i in M: if k < i:
 *         m = LU[b, i, k] / piv
 *         for j in M: if k < j: LU[b, i, j] -= m * LU[b, k, j]
 *     Y[b] = det
 *
 * The loops have constant extents (the IR's rule), so the shrinking ranges
 * i, j > k are full loops with a test. A singular matrix gives a zero pivot,
 * hence det 0, and the elimination below it is skipped. The determinant is
 * the product of the pivots, as ONNX Runtime (Eigen) computes it; numpy
 * (the reference) takes exp(log|det|) with the sign, which rounds
 * differently in the last bits. */
#include "lower_internal.h"

ingot_status_t lower_det(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0);
  uint32_t y = ctx->node->output_count > 0 ? ctx->node->outputs[0] : INGOT_NO_VALUE;
  uint32_t lu = ctx->node->output_count > 1 ? ctx->node->outputs[1] : INGOT_NO_VALUE;
  if (lu == INGOT_NO_VALUE) return lower_fail(ctx, INGOT_ERROR_INTERNAL, "has no scratch output (shape inference adds it)");
  if ((s = lower_check_value_dt(ctx, x, LOWER_DT_FLOAT)) || (s = lower_check_value_dt(ctx, y, LOWER_DT_FLOAT)) ||
      (s = lower_check_value_dt(ctx, lu, LOWER_DT_FLOAT)) || (s = lower_refuse_activation(ctx))) {
    return s;
  }
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* lv = lower_value(ctx, lu);
  ingot_dtype_t dt = xv->dtype;
  if (xv->rank < 2 || lower_value(ctx, y)->dtype != dt || lv->dtype != dt || ingot_value_numel(lv) != ingot_value_numel(xv) ||
      xv->dims[xv->rank - 1] != xv->dims[xv->rank - 2]) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "shapes or dtypes do not fit Det");
  }
  int64_t m = xv->dims[xv->rank - 1], mm = m * m, count = ingot_value_numel(xv) / mm;
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  uint32_t blu = lower_add_output(ctx, lu, "lu");
  ingot_ir_func_t* f = ctx->f;
#define I(v) ingot_ir_int(f, (v))
#define V(v) ingot_ir_var(f, (v))
#define K(v) lower_const(ctx, dt, (v))
#define BIN(op, a, b) ingot_ir_binary(f, INGOT_IR_##op, (a), (b))
/* LU[b, i, j] at flat (b * M + i) * M + j */
#define AT(i, j) ingot_ir_add(f, ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_mul(f, V(b), I(m)), (i)), I(m)), (j))
#define LOCAL(name, type) lower_add_var(ctx, (name), INGOT_IR_VAR_LOCAL, (type))
#define LOOP(name) lower_add_var(ctx, (name), INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64)
  uint32_t b = LOOP("b"), e = LOOP("e"), k = LOOP("k"), i = LOOP("i"), j = LOOP("j"), i2 = LOOP("i2"), j2 = LOOP("j2");
  uint32_t det = LOCAL("det", dt), p = LOCAL("p", INGOT_DTYPE_I64), best = LOCAL("best", dt), a = LOCAL("a", dt);
  uint32_t up = LOCAL("up", INGOT_DTYPE_BOOL), tmp = LOCAL("t", dt), piv = LOCAL("piv", dt), mul = LOCAL("m", dt);

  /* the pivot search */
  ingot_ir_stmt_t* search[4] = {
      ingot_ir_local(f, a, ingot_ir_unary(f, INGOT_IR_ABS, ingot_ir_load(f, blu, AT(V(i), V(k))))),
      ingot_ir_local(f, up, BIN(AND, BIN(LT, V(k), V(i)), BIN(LT, V(best), V(a)))),
      ingot_ir_assign(f, p, ingot_ir_select(f, V(up), V(i), V(p))),
      ingot_ir_assign(f, best, ingot_ir_select(f, V(up), V(a), V(best))),
  };
  /* the row swap */
  ingot_ir_stmt_t* swap_j[3] = {
      ingot_ir_local(f, tmp, ingot_ir_load(f, blu, AT(V(k), V(j)))),
      ingot_ir_store(f, blu, AT(V(k), V(j)), ingot_ir_load(f, blu, AT(V(p), V(j)))),
      ingot_ir_store(f, blu, AT(V(p), V(j)), V(tmp)),
  };
  ingot_ir_stmt_t* swap[2] = {ingot_ir_for(f, j, m, ingot_ir_block(f, swap_j, 3)),
                              ingot_ir_assign(f, det, ingot_ir_unary(f, INGOT_IR_NEG, V(det)))};
  /* the elimination below the pivot */
  ingot_ir_stmt_t* update = ingot_ir_if(
      f, BIN(LT, V(k), V(j2)),
      ingot_ir_store(f, blu, AT(V(i2), V(j2)),
                     BIN(SUB, ingot_ir_load(f, blu, AT(V(i2), V(j2))), ingot_ir_mul(f, V(mul), ingot_ir_load(f, blu, AT(V(k), V(j2)))))));
  ingot_ir_stmt_t* row[2] = {ingot_ir_local(f, mul, BIN(DIV, ingot_ir_load(f, blu, AT(V(i2), V(k))), V(piv))),
                             ingot_ir_for(f, j2, m, update)};
  ingot_ir_stmt_t* eliminate = ingot_ir_for(f, i2, m, ingot_ir_if(f, BIN(LT, V(k), V(i2)), ingot_ir_block(f, row, 2)));

  ingot_ir_stmt_t* step[7] = {
      ingot_ir_local(f, p, V(k)),
      ingot_ir_local(f, best, ingot_ir_unary(f, INGOT_IR_ABS, ingot_ir_load(f, blu, AT(V(k), V(k))))),
      ingot_ir_for(f, i, m, ingot_ir_block(f, search, 4)),
      ingot_ir_if(f, BIN(NE, V(p), V(k)), ingot_ir_block(f, swap, 2)),
      ingot_ir_local(f, piv, ingot_ir_load(f, blu, AT(V(k), V(k)))),
      ingot_ir_assign(f, det, ingot_ir_mul(f, V(det), V(piv))),
      ingot_ir_if(f, BIN(NE, V(piv), K(0.0)), eliminate),
  };
  ingot_ir_expr_t* src = ingot_ir_add(f, ingot_ir_mul(f, V(b), I(mm)), V(e));
  ingot_ir_stmt_t* body[4] = {
      ingot_ir_for(f, e, mm, ingot_ir_store(f, blu, ingot_ir_add(f, ingot_ir_mul(f, V(b), I(mm)), V(e)), ingot_ir_load(f, bx, src))),
      ingot_ir_local(f, det, K(1.0)),
      ingot_ir_for(f, k, m, ingot_ir_block(f, step, 7)),
      ingot_ir_store(f, by, V(b), V(det)),
  };
  lower_emit_other(ctx, ingot_ir_for(f, b, count, ingot_ir_block(f, body, 4)));
  lower_mark_vector_loop(ctx, e); /* the copy */
#undef I
#undef V
#undef K
#undef BIN
#undef AT
#undef LOCAL
#undef LOOP
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE; /* one OTHER stage: the template parallelizes its outer loop */
  ctx->workload = ingot_arena_printf(ctx->arena, "det %s x=%s", ingot_dtype_name(dt), lower_shape_str(ctx, x));
  return INGOT_OK;
}
