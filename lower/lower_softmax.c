/* Softmax, LogSoftmax and Hardmax as one OTHER stage: a spatial loop over
 * rows, each row three passes (max, exp and sum, divide), the max subtracted
 * for stability. LogSoftmax: the last pass writes x - max - log(sum) (the
 * second pass only sums). Hardmax: the first pass also finds the index of the
 * first maximum, the last writes 1 there and 0 elsewhere (no exp pass).
 *
 * Opset >= 13: along `axis` (default -1); rows are every position of the other
 * axes. Opset < 13: the input is coerced to 2-D at `axis` (default 1): a row is
 * everything from `axis` on. An opset of 0 (unknown) means the current rules.
 *
 *   for row in O*I:                        (spatial)
 *     local mx = x[row, 0]
 *     for j < L: mx = max(mx, x[row, j])
 *     local sum = 0
 *     for j < L: y[row, j] = exp(x[row, j] - mx)          (vectorizable)
 *     local sum = 0
 *     for j < L: sum = sum + y[row, j]
 *     for j < L: y[row, j] = y[row, j] / sum               (vectorizable)
 * where element (row, j) sits at flat ((row / I) * L + j) * I + row % I.
 * A row of at least 2 * C elements reduces (max, sum) in C
 * (node.layout.chains, a power of two up to 16; 8 by default)
 * independent partial results combined at the end, so that the latency of
 * one max or add does not serialize the row (and the SLP vectorizer can pack
 * the chains); the passes without a carried local are named to the template
 * for vectorizing. */
#include <string.h>

#include "lower_internal.h"

#define CHAINS_MAX LOWER_ROW_CHAINS_MAX

/* What a row reduction combines at element j. */
typedef struct row_term_t {
  lower_row_term_t base;
  uint32_t buffer;
  ingot_ir_expr_t *o, *in;        /* the row */
  int64_t len, inner;
  uint32_t shift;                 /* a local subtracted before exp, or UINT32_MAX: load only */
  ingot_ir_func_t* f;
} row_term_t;

static ingot_ir_expr_t* row_at(ingot_ir_func_t* f, ingot_ir_expr_t* o, ingot_ir_expr_t* in, int64_t len, int64_t inner,
                               ingot_ir_expr_t* j);

static ingot_ir_expr_t* term_at(const lower_row_term_t* base, ingot_ir_expr_t* j) {
  const row_term_t* t = (const row_term_t*)base;
  ingot_ir_expr_t* v = ingot_ir_load(t->f, t->buffer, row_at(t->f, t->o, t->in, t->len, t->inner, j));
  if (t->shift == UINT32_MAX) return v;
  return ingot_ir_unary(t->f, INGOT_IR_EXP, ingot_ir_binary(t->f, INGOT_IR_SUB, v, ingot_ir_var(t->f, t->shift)));
}

/* Flat index of element j of the row (o, in): (o * len + j) * inner + in. */
static ingot_ir_expr_t* row_at(ingot_ir_func_t* f, ingot_ir_expr_t* o, ingot_ir_expr_t* in, int64_t len, int64_t inner,
                               ingot_ir_expr_t* j) {
  ingot_ir_expr_t* t = ingot_ir_add(f, ingot_ir_mul(f, o, ingot_ir_int(f, len)), j);
  return ingot_ir_add(f, ingot_ir_mul(f, t, ingot_ir_int(f, inner)), in);
}

ingot_status_t lower_softmax(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0);
  uint32_t y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  if ((s = lower_refuse_activation(ctx))) return s;
  if ((s = lower_check_value(ctx, x, false)) || (s = lower_check_value(ctx, y, false))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  ingot_dtype_t dt = xv->dtype;
  if (dt != INGOT_DTYPE_F32 && dt != INGOT_DTYPE_F64) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "dtype %s is not supported (value '%s'; float32, float64)",
                      ingot_dtype_name(dt), xv->name);
  }
  bool same = xv->rank == yv->rank && yv->dtype == dt;
  for (int32_t i = 0; same && i < xv->rank; ++i) same = xv->dims[i] == yv->dims[i];
  if (!same) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "output shape differs from input shape");
  enum { kSoftmax, kLogSoftmax, kHardmax } kind =
      node->op == INGOT_OP_LOGSOFTMAX ? kLogSoftmax : node->op == INGOT_OP_HARDMAX ? kHardmax : kSoftmax;
  int32_t rank = xv->rank;
  bool legacy = ctx->graph->opset > 0 && ctx->graph->opset < 13; /* rows: every axis from `axis` on */
  int64_t axis = ctx->params->u.axis.axis;                        /* normalized (graph/params.c) */
  int64_t outer = 1, len = 1, inner = 1;
  for (int32_t i = 0; i < rank; ++i) {
    if (i < axis) {
      outer *= xv->dims[i];
    } else if (i == axis || legacy) {
      len *= xv->dims[i];
    } else {
      inner *= xv->dims[i];
    }
  }
  ingot_node_layout_t layout;
  ingot_node_layout_resolve(ctx->graph, node, &layout);
  int chains = (int)layout.chains;
  if (chains < 1 || chains > CHAINS_MAX || (chains & (chains - 1)) != 0) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "layout chains=%d is not a power of two up to %d", chains,
                      CHAINS_MAX);
  }
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  uint32_t row = lower_add_var(ctx, "row", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t j1 = lower_add_var(ctx, "j", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t j2 = lower_add_var(ctx, "j", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t j3 = lower_add_var(ctx, "j", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t mx = lower_add_var(ctx, "mx", INGOT_IR_VAR_LOCAL, dt);
  uint32_t sum = lower_add_var(ctx, "sum", INGOT_IR_VAR_LOCAL, dt);
  uint32_t arg = lower_add_var(ctx, "arg", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64);
  ingot_ir_expr_t* r = ingot_ir_var(f, row);
  ingot_ir_expr_t* o = ingot_ir_binary(f, INGOT_IR_DIV, r, ingot_ir_int(f, inner));
  ingot_ir_expr_t* in = ingot_ir_binary(f, INGOT_IR_MOD, r, ingot_ir_int(f, inner));
  ingot_ir_expr_t* at0 = row_at(f, o, in, len, inner, ingot_ir_int(f, 0));
  ingot_ir_expr_t* at1 = row_at(f, o, in, len, inner, ingot_ir_var(f, j1));
  ingot_ir_expr_t* at2 = row_at(f, o, in, len, inner, ingot_ir_var(f, j2));
  ingot_ir_expr_t* at3 = row_at(f, o, in, len, inner, ingot_ir_var(f, j3));
  ingot_ir_expr_t* vmx = ingot_ir_var(f, mx);
  ingot_ir_expr_t* vsum = ingot_ir_var(f, sum);
  ingot_ir_stmt_t* rowbody[2 * CHAINS_MAX + 16];
  uint32_t nb = 0;
  if (kind != kHardmax) {
    row_term_t t = {{term_at, len}, bx, o, in, len, inner, UINT32_MAX, f};
    lower_row_reduce(ctx, &t.base, LOWER_REDUCE_MAX, mx, dt, rowbody, &nb, chains);
    uint32_t vector_loops[2];
    if (kind == kSoftmax) {
      /* y = exp(x - mx); sum over y; y = y / sum */
      ingot_ir_expr_t* ex =
          ingot_ir_unary(f, INGOT_IR_EXP, ingot_ir_binary(f, INGOT_IR_SUB, ingot_ir_load(f, bx, at2), vmx));
      rowbody[nb++] = ingot_ir_for(f, j2, len, ingot_ir_store(f, by, at2, ex));
      row_term_t ty = {{term_at, len}, by, o, in, len, inner, UINT32_MAX, f};
      lower_row_reduce(ctx, &ty.base, LOWER_REDUCE_SUM, sum, dt, rowbody, &nb, chains);
      rowbody[nb++] = ingot_ir_for(
          f, j3, len, ingot_ir_store(f, by, at3, ingot_ir_binary(f, INGOT_IR_DIV, ingot_ir_load(f, by, at3), vsum)));
      vector_loops[0] = j2;
      vector_loops[1] = j3;
    } else {
      /* sum of exp(x - mx); y = x - (mx + log(sum)) */
      row_term_t te = {{term_at, len}, bx, o, in, len, inner, mx, f};
      lower_row_reduce(ctx, &te.base, LOWER_REDUCE_SUM, sum, dt, rowbody, &nb, chains);
      ingot_ir_expr_t* shift = ingot_ir_add(f, vmx, ingot_ir_unary(f, INGOT_IR_LOG, vsum));
      rowbody[nb++] = ingot_ir_for(
          f, j3, len, ingot_ir_store(f, by, at3, ingot_ir_binary(f, INGOT_IR_SUB, ingot_ir_load(f, bx, at3), shift)));
      vector_loops[0] = j3;
    }
    lower_emit_other(ctx, ingot_ir_for(f, row, outer * inner, ingot_ir_block(f, rowbody, nb)));
    for (uint32_t i = 0; i < (kind == kSoftmax ? 2u : 1u); ++i) lower_mark_vector_loop(ctx, vector_loops[i]);
  }
  if (kind == kHardmax) {
    rowbody[nb++] = ingot_ir_local(f, mx, ingot_ir_load(f, bx, at0));
    /* The first index holding the maximum. */
    ingot_ir_expr_t* xv1 = ingot_ir_load(f, bx, at1);
    ingot_ir_expr_t* take = ingot_ir_binary(f, INGOT_IR_LT, vmx, xv1);
    ingot_ir_stmt_t* pass1[2] = {
        ingot_ir_assign(f, arg, ingot_ir_select(f, take, ingot_ir_var(f, j1), ingot_ir_var(f, arg))),
        ingot_ir_assign(f, mx, ingot_ir_select(f, take, xv1, vmx)),
    };
    rowbody[nb++] = ingot_ir_local(f, arg, ingot_ir_int(f, 0));
    rowbody[nb++] = ingot_ir_for(f, j1, len, ingot_ir_block(f, pass1, 2));
    ingot_ir_expr_t* hit = ingot_ir_binary(f, INGOT_IR_EQ, ingot_ir_var(f, j3), ingot_ir_var(f, arg));
    rowbody[nb++] = ingot_ir_for(
        f, j3, len, ingot_ir_store(f, by, at3, ingot_ir_select(f, hit, ingot_ir_float(f, dt, 1.0), ingot_ir_float(f, dt, 0.0))));
    lower_emit_other(ctx, ingot_ir_for(f, row, outer * inner, ingot_ir_block(f, rowbody, nb)));
  }
  ctx->op_class = INGOT_OP_CLASS_ROW;
  ctx->workload = ingot_arena_printf(ctx->arena, "%s %s outer%lld len%lld inner%lld", lower_op_lower(ctx),
                                     dt == INGOT_DTYPE_F32 ? "f32" : "f64", (long long)outer, (long long)len, (long long)inner);
  return INGOT_OK;
}
