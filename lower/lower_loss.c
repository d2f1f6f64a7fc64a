/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, as one OTHER stage
 * over the rows (n, d..) of the class axis C (axis 1):
 *
 *   per row r = (n, d):   t = target[r], valid = t != ignore_index,
 *                         w = valid ? weight[t] (or 1) : 0
 *     NLL:  v(c) = input[n, c, d]
 *     SCE:  v(c) = x[n, c, d] - logsumexp_c(x[n, :, d])   (log_prob, written
 *           to the second output when the model asks for it)
 *     loss_r = -v(t) * w
 *   reduction none: loss[r] = loss_r (the row loop is the spatial loop);
 *   sum / mean: an outer loop of one iteration runs the rows in order and
 *   writes sum(loss_r), or sum(loss_r) / sum(w) (PyTorch's weighted mean).
 *
 * A target outside [0, C) that is not ignore_index reads a clamped class
 * (the spec leaves it undefined; nothing is read out of bounds). */
#include <math.h>
#include <string.h>

#include "lower_internal.h"

ingot_status_t lower_loss(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  bool sce = node->op == INGOT_OP_SOFTMAXCROSSENTROPYLOSS;
  uint32_t x = lower_input(ctx, 0), t = lower_input(ctx, 1), w = lower_input(ctx, 2);
  uint32_t y = node->output_count > 0 ? node->outputs[0] : INGOT_NO_VALUE;
  uint32_t lp = sce && node->output_count > 1 ? node->outputs[1] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx))) return s;
  if ((s = lower_check_value(ctx, x, false)) || (s = lower_check_value(ctx, t, false)) ||
      (s = lower_check_value(ctx, y, false))) {
    return s;
  }
  if (w != INGOT_NO_VALUE && (s = lower_check_value(ctx, w, false))) return s;
  if (lp != INGOT_NO_VALUE && (s = lower_check_value(ctx, lp, false))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* tv = lower_value(ctx, t);
  ingot_dtype_t dt = xv->dtype;
  if ((dt != INGOT_DTYPE_F32 && dt != INGOT_DTYPE_F64) || (tv->dtype != INGOT_DTYPE_I64 && tv->dtype != INGOT_DTYPE_I32) ||
      xv->rank < 2 || lower_value(ctx, y)->dtype != dt || (w != INGOT_NO_VALUE && lower_value(ctx, w)->dtype != dt)) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "types or ranks are not supported (input %s %s, target %s)",
                      ingot_dtype_name(dt), lower_shape_str(ctx, x), ingot_dtype_name(tv->dtype));
  }
  int64_t n = xv->dims[0], classes = xv->dims[1], inner = 1;
  for (int32_t i = 2; i < xv->rank; ++i) inner *= xv->dims[i];
  if (ingot_value_numel(tv) != n * inner || (w != INGOT_NO_VALUE && ingot_value_numel(lower_value(ctx, w)) != classes)) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "target %s or weight does not fit input %s",
                      lower_shape_str(ctx, t), lower_shape_str(ctx, x));
  }
  const ingot_loss_params_t* lsp = &ctx->params->u.loss; /* graph/params.c */
  bool none = lsp->reduction == INGOT_LOSS_NONE, mean = lsp->reduction == INGOT_LOSS_MEAN;
  const char* red = none ? "none" : mean ? "mean" : "sum";
  bool has_ignore = lsp->has_ignore_index;

  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t bt = lower_add_input(ctx, t, "target");
  uint32_t bw = w != INGOT_NO_VALUE ? lower_add_input(ctx, w, "weight") : UINT32_MAX;
  uint32_t by = lower_add_output(ctx, y, "loss");
  uint32_t blp = lp != INGOT_NO_VALUE ? lower_add_output(ctx, lp, "log_prob") : UINT32_MAX;
  ingot_ir_func_t* f = ctx->f;
  uint32_t row = lower_add_var(ctx, "row", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t tl = lower_add_var(ctx, "t", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64);
  uint32_t wl = lower_add_var(ctx, "w", INGOT_IR_VAR_LOCAL, dt);
  uint32_t lse = lower_add_var(ctx, "lse", INGOT_IR_VAR_LOCAL, dt);
  uint32_t num = lower_add_var(ctx, "num", INGOT_IR_VAR_LOCAL, dt);
  uint32_t den = lower_add_var(ctx, "den", INGOT_IR_VAR_LOCAL, dt);
  ingot_ir_expr_t* r = ingot_ir_var(f, row);
  ingot_ir_expr_t* nn = ingot_ir_binary(f, INGOT_IR_DIV, r, ingot_ir_int(f, inner));
  ingot_ir_expr_t* dd = ingot_ir_binary(f, INGOT_IR_MOD, r, ingot_ir_int(f, inner));
  /* flat index of (n, c, d) */
#define AT(c) ingot_ir_add(f, ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_mul(f, nn, ingot_ir_int(f, classes)), (c)), ingot_ir_int(f, inner)), dd)

  ingot_ir_stmt_t* body[12];
  uint32_t nb = 0;
  ingot_ir_expr_t* traw = ingot_ir_load(f, bt, r);
  if (tv->dtype != INGOT_DTYPE_I64) traw = ingot_ir_cast(f, INGOT_DTYPE_I64, traw);
  body[nb++] = ingot_ir_local(f, tl, traw);
  ingot_ir_expr_t* te = ingot_ir_var(f, tl);
  ingot_ir_expr_t* tc = ingot_ir_binary(f, INGOT_IR_MIN, ingot_ir_binary(f, INGOT_IR_MAX, te, ingot_ir_int(f, 0)),
                                        ingot_ir_int(f, classes - 1));
  ingot_ir_expr_t* wv = bw != UINT32_MAX ? ingot_ir_load(f, bw, tc) : ingot_ir_float(f, dt, 1.0);
  if (has_ignore) {
    wv = ingot_ir_select(f, ingot_ir_binary(f, INGOT_IR_EQ, te, ingot_ir_int(f, lsp->ignore_index)), ingot_ir_float(f, dt, 0.0), wv);
  }
  body[nb++] = ingot_ir_local(f, wl, wv);
  ingot_ir_expr_t* vt = ingot_ir_load(f, bx, AT(tc));
  if (sce) {
    uint32_t j1 = lower_add_var(ctx, "c", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    uint32_t j2 = lower_add_var(ctx, "c", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    uint32_t mx = lower_add_var(ctx, "mx", INGOT_IR_VAR_LOCAL, dt);
    uint32_t sum = lower_add_var(ctx, "sum", INGOT_IR_VAR_LOCAL, dt);
    body[nb++] = ingot_ir_local(f, mx, ingot_ir_load(f, bx, AT(ingot_ir_int(f, 0))));
    body[nb++] = ingot_ir_for(f, j1, classes,
                              ingot_ir_assign(f, mx, ingot_ir_binary(f, INGOT_IR_MAX, ingot_ir_var(f, mx),
                                                                     ingot_ir_load(f, bx, AT(ingot_ir_var(f, j1))))));
    body[nb++] = ingot_ir_local(f, sum, ingot_ir_float(f, dt, 0.0));
    body[nb++] = ingot_ir_for(
        f, j2, classes,
        ingot_ir_assign(f, sum, ingot_ir_add(f, ingot_ir_var(f, sum),
                                             ingot_ir_unary(f, INGOT_IR_EXP, ingot_ir_binary(f, INGOT_IR_SUB,
                                                                                             ingot_ir_load(f, bx, AT(ingot_ir_var(f, j2))),
                                                                                             ingot_ir_var(f, mx))))));
    body[nb++] = ingot_ir_local(f, lse, ingot_ir_add(f, ingot_ir_var(f, mx), ingot_ir_unary(f, INGOT_IR_LOG, ingot_ir_var(f, sum))));
    if (blp != UINT32_MAX) {
      uint32_t j3 = lower_add_var(ctx, "c", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
      ingot_ir_expr_t* at3 = AT(ingot_ir_var(f, j3));
      body[nb++] = ingot_ir_for(f, j3, classes,
                                ingot_ir_store(f, blp, at3, ingot_ir_binary(f, INGOT_IR_SUB, ingot_ir_load(f, bx, at3),
                                                                            ingot_ir_var(f, lse))));
    }
    vt = ingot_ir_binary(f, INGOT_IR_SUB, vt, ingot_ir_var(f, lse));
  }
#undef AT
  /* -v(t) * w, and exactly 0 for an ignored row (v(t) may be anything there) */
  ingot_ir_expr_t* loss = ingot_ir_mul(f, ingot_ir_unary(f, INGOT_IR_NEG, vt), ingot_ir_var(f, wl));
  if (has_ignore) {
    loss = ingot_ir_select(f, ingot_ir_binary(f, INGOT_IR_EQ, te, ingot_ir_int(f, lsp->ignore_index)), ingot_ir_float(f, dt, 0.0), loss);
  }
  if (none) {
    body[nb++] = ingot_ir_store(f, by, r, loss);
    lower_emit_other(ctx, ingot_ir_for(f, row, n * inner, ingot_ir_block(f, body, nb)));
  } else {
    body[nb++] = ingot_ir_assign(f, num, ingot_ir_add(f, ingot_ir_var(f, num), loss));
    body[nb++] = ingot_ir_assign(f, den, ingot_ir_add(f, ingot_ir_var(f, den), ingot_ir_var(f, wl)));
    uint32_t one = lower_add_var(ctx, "i", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    ingot_ir_expr_t* res = mean ? ingot_ir_binary(f, INGOT_IR_DIV, ingot_ir_var(f, num), ingot_ir_var(f, den))
                                : ingot_ir_var(f, num);
    ingot_ir_stmt_t* outer[4] = {
        ingot_ir_local(f, num, ingot_ir_float(f, dt, 0.0)),
        ingot_ir_local(f, den, ingot_ir_float(f, dt, 0.0)),
        ingot_ir_for(f, row, n * inner, ingot_ir_block(f, body, nb)),
        ingot_ir_store(f, by, ingot_ir_int(f, 0), res),
    };
    lower_emit_other(ctx, ingot_ir_for(f, one, 1, ingot_ir_block(f, outer, 4)));
  }
  ctx->op_class = INGOT_OP_CLASS_ROW;
  ctx->workload = ingot_arena_printf(ctx->arena, "%s %s n%lld c%lld d%lld %s weight%d ignore%d log_prob%d",
                                     sce ? "sce" : "nll", ingot_dtype_name(dt), (long long)n, (long long)classes,
                                     (long long)inner, red, bw != UINT32_MAX, has_ignore, blp != UINT32_MAX);
  return INGOT_OK;
}
