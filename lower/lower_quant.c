/* The quantization ops, computed as ONNX defines them:
 *
 *   QuantizeLinear     y = saturate(round(x / scale) + zero_point)
 *   DequantizeLinear   y = (x - zero_point) * scale
 *   DynamicQuantizeLinear
 *       lo = min(0, min(x)), hi = max(0, max(x))
 *       scale = (hi - lo) / 255           (1 when hi == lo, as ONNX Runtime)
 *       zero_point = round(clamp(0 - lo / scale, 0, 255))
 *       y = saturate(round(x / scale) + zero_point)     (uint8)
 *
 * Quantize and Dequantize are one PURE stage over x, the scale and zero
 * point read per tensor, per axis or per block (node.params, graph/
 * infer_quant.c). int4 and uint4 are integers of the range [-8, 7] and
 * [0, 15], one a byte. The float8s: y = float8(x / scale) rounded to nearest
 * even (lower_f8_encode; attribute saturate, default 1, clamps to the largest
 * finite value) and y = float(x) * scale; their zero point must be 0 and is
 * not read, as in ONNX's reference. For the integer types the division,
 * rounding and addition are float32: round is to nearest, ties to even;
 * the sum is exact wherever it can land inside the output range
 * (|round(x / scale)| < 2^24), and clamping in float before the conversion
 * saturates every value, NaN going to the low end (the IR's min/max return
 * the other operand of a NaN), as the ONNX reference does.
 * Dequantize subtracts in integers (int32, or int64 for int32 data) and
 * converts the difference, as ONNX Runtime does; for 8-bit data this is
 * exactly the reference's float32 arithmetic.
 *
 * DynamicQuantizeLinear is one OTHER stage (class ROW, one row: the whole
 * tensor): min and max over x in chained partial results (min as -max(-x),
 * exact), the scale and zero point stored, then the quantizing loop.
 *
 * QLinearConv and QLinearMatMul (lower_conv.c, lower_gemm.c) accumulate
 *   acc = bias + sum (x - x_zero) * (w - w_zero)         in int32
 * and requantize in the same kernel (lower_requant_value):
 *   y = saturate(round_half_even(float(acc) * m) + y_zero),
 *   m = x_scale * w_scale[k] / y_scale
 * all in float32: ONNX Runtime's arithmetic (the multiplier as its QLinear
 * kernels compute it, the product and the rounding as MLAS's requantize,
 * which clamps to [lo - zp, hi - zp] before rounding: the same result, the
 * bounds being integers). A float64 multiplier can differ from it by one
 * step where acc * m lands next to a half. float(acc) is exact while
 * |acc| < 2^24, as ONNX Runtime's.
 *
 * ONNX Runtime's com.microsoft ops, one PURE (or OTHER) stage each, scales
 * and zero points per tensor:
 *   QLinearGlobalAveragePool  integer: acc = sum(x) - x_zero * HW (int32),
 *       y = saturate(round(float(acc) * (x_scale / (y_scale * HW))) + y_zero),
 *       as MLAS computes it (an OTHER stage per (n, c), like QLinearConv's)
 *   QLinearAdd   y = saturate(round((sa (a - za) + sb (b - zb)) / sc + zc))
 *   QLinearMul   y = saturate(round((sa (a - za)) * (sb (b - zb)) / sc + zc))
 *       (numpy broadcasting): dequantize, compute and requantize in float32
 *       in one kernel, the form of MLAS's portable kernels (its vector
 *       kernels regroup the arithmetic: a result next to a half can differ
 *       by one step). Dividing by sc: folding 1 / sc into the scales
 *       (tried) turned QDQ ResNet-50's logits from equal to ONNX Runtime's
 *       to one step off in 201 of 1,000. Multiplying the sum by 1 / sc
 *       instead is used where it is provably the same: the scales and zero
 *       points are weights and a check at compile time over every pair of
 *       input bytes finds no output that differs (choose_rescale); it
 *       passes for most real nodes (QDQ ResNet-50: 15 of 16 residual sums,
 *       MobileNetV2: 8 of 10), most of them with the zero point added before
 *       rounding too (one FMA)
 *   QLinearSigmoid  y = quantize(sigmoid(dequantize(x))): ONNX Runtime
 *       tabulates the same expression (its sigmoid can differ in the last
 *       bits, so one step next to a half)
 *   QLinearConcat   y = quantize(dequantize(x_i)) into each slice (exact,
 *       as ONNX Runtime's table of the same: an input already at y's scale
 *       and zero point comes through unchanged)
 *   QGemm           an integer contraction as QLinearMatMul (lower_gemm.c)
 *
 * Requantize (domain ai.ingot; ingot_graph_split_qlinear makes it from a
 * large QLinearConv / QLinearMatMul, whose int32 sums a ConvInteger /
 * MatMulInteger computes): y = requant(acc + bias[c]) elementwise, c the
 * index along `axis`, with lower_requant_value's arithmetic. */
#include <math.h>
#include <string.h>

#include "lower_internal.h"

/* The element of the scale (or zero point, same shape) buffer `b` that
 * output position idx reads. */
static ingot_ir_expr_t* param_index(lower_ctx_t* ctx, const ingot_quant_params_t* q, uint32_t b, int32_t rank,
                                    ingot_ir_expr_t* const* idx) {
  ingot_ir_func_t* f = ctx->f;
  switch (q->granularity) {
    case INGOT_QUANT_PER_TENSOR:
      return ingot_ir_int(f, 0);
    case INGOT_QUANT_PER_AXIS:
      return idx[q->axis];
    case INGOT_QUANT_BLOCKED: {
      ingot_ir_expr_t* at[INGOT_MAX_RANK];
      for (int32_t d = 0; d < rank; ++d) {
        at[d] = d == q->axis ? ingot_ir_binary(f, INGOT_IR_DIV, idx[d], ingot_ir_int(f, q->block_size)) : idx[d];
      }
      return ingot_ir_flat_index(f, b, at);
    }
  }
  return ingot_ir_int(f, 0);
}

static ingot_ir_expr_t* f32(ingot_ir_func_t* f, double v) { return ingot_ir_float(f, INGOT_DTYPE_F32, v); }

static void quant_range(ingot_dtype_t t, double* lo, double* hi) {
  switch (t) {
    case INGOT_DTYPE_I8: *lo = -128.0, *hi = 127.0; break;
    case INGOT_DTYPE_U16: *lo = 0.0, *hi = 65535.0; break;
    case INGOT_DTYPE_I16: *lo = -32768.0, *hi = 32767.0; break;
    case INGOT_DTYPE_I4: *lo = -8.0, *hi = 7.0; break;
    case INGOT_DTYPE_U4: *lo = 0.0, *hi = 15.0; break;
    default: *lo = 0.0, *hi = 255.0; break;
  }
}

/* saturate(round(xf / scale) + zpf) as dtype t; xf, scale, zpf float32. */
ingot_ir_expr_t* lower_quantize_expr(lower_ctx_t* ctx, ingot_dtype_t t, ingot_ir_expr_t* xf, ingot_ir_expr_t* scale,
                                     ingot_ir_expr_t* zpf) {
  return lower_quantize_scaled(ctx, t, ingot_ir_binary(ctx->f, INGOT_IR_DIV, xf, scale), zpf);
}

ingot_ir_expr_t* lower_quantize_scaled(lower_ctx_t* ctx, ingot_dtype_t t, ingot_ir_expr_t* scaled,
                                       ingot_ir_expr_t* zpf) {
  ingot_ir_func_t* f = ctx->f;
  double lo, hi;
  quant_range(t, &lo, &hi);
  ingot_ir_expr_t* v = ingot_ir_unary(f, INGOT_IR_ROUND, scaled);
  if (zpf) v = ingot_ir_add(f, v, zpf);
  v = ingot_ir_binary(f, INGOT_IR_MAX, v, f32(f, lo));
  v = ingot_ir_binary(f, INGOT_IR_MIN, v, f32(f, hi));
  return ingot_ir_cast(f, lower_storage_dtype(t), v);
}

static const char* granularity_name(lower_ctx_t* ctx, const ingot_quant_params_t* q) {
  switch (q->granularity) {
    case INGOT_QUANT_PER_TENSOR: return "per_tensor";
    case INGOT_QUANT_PER_AXIS: return ingot_arena_printf(ctx->arena, "axis%d", q->axis);
    case INGOT_QUANT_BLOCKED:
      return ingot_arena_printf(ctx->arena, "axis%d block%lld", q->axis, (long long)q->block_size);
  }
  return "?";
}

/* QuantizeLinear and DequantizeLinear. */
static ingot_status_t lower_linear(lower_ctx_t* ctx, bool quantize) {
  const ingot_node_t* node = ctx->node;
  if (ctx->params->kind != INGOT_PARAMS_QUANT) {
    return lower_fail(ctx, INGOT_ERROR_INTERNAL, "parameters were not parsed");
  }
  const ingot_quant_params_t* q = &ctx->params->u.quant;
  uint32_t x = lower_input(ctx, 0), sc = lower_input(ctx, 1), zp = lower_input(ctx, 2);
  uint32_t y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx))) return s;
  uint32_t xdt = quantize ? LOWER_DT(INGOT_DTYPE_F32) | LOWER_DT(INGOT_DTYPE_I32)
                          : LOWER_DT(INGOT_DTYPE_U8) | LOWER_DT(INGOT_DTYPE_I8) | LOWER_DT(INGOT_DTYPE_U16) |
                                LOWER_DT(INGOT_DTYPE_I16) | LOWER_DT(INGOT_DTYPE_I32) | LOWER_DT_NARROW;
  uint32_t qdt = LOWER_DT(q->qtype);
  if ((s = lower_check_value_dt(ctx, x, xdt)) || (s = lower_check_value_dt(ctx, sc, LOWER_DT(INGOT_DTYPE_F32))) ||
      (zp != INGOT_NO_VALUE && (s = lower_check_value_dt(ctx, zp, qdt))) ||
      (s = lower_check_value_dt(ctx, y, quantize ? qdt : LOWER_DT(INGOT_DTYPE_F32)))) {
    return s;
  }
  const ingot_value_t* yv = lower_value(ctx, y);
  ingot_ir_func_t* f = ctx->f;
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t bs = lower_add_input(ctx, sc, "scale");
  /* A float8 zero point must be 0 (ONNX; a constant one is checked in
   * graph/infer_quant.c); it is not read, as the reference does not (and
   * -0 + 0 would lose the sign of a zero). */
  bool f8 = (LOWER_DT(q->qtype) & LOWER_DT_F8) != 0;
  uint32_t bz = zp != INGOT_NO_VALUE && !f8 ? lower_add_input(ctx, zp, "zero_point") : UINT32_MAX;
  uint32_t by = lower_add_output(ctx, y, "y");
  lower_loops_t loops;
  lower_loops_over(ctx, &loops, yv->rank, yv->dims);
  ingot_ir_expr_t* at = ingot_ir_flat_index(f, by, loops.idx);
  ingot_ir_expr_t* xl = ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, loops.idx));
  ingot_ir_expr_t* scale = ingot_ir_load(f, bs, param_index(ctx, q, bs, yv->rank, loops.idx));
  ingot_ir_expr_t* zl = bz != UINT32_MAX ? ingot_ir_load(f, bz, param_index(ctx, q, bz, yv->rank, loops.idx)) : NULL;
  ingot_ir_expr_t* v;
  if (quantize && f8) {
    ingot_ir_expr_t* xf = xl->dtype == INGOT_DTYPE_F32 ? xl : ingot_ir_cast(f, INGOT_DTYPE_F32, xl);
    v = lower_f8_encode(ctx, q->qtype, ingot_ir_binary(f, INGOT_IR_DIV, xf, scale), q->saturate);
  } else if (quantize) {
    ingot_ir_expr_t* xf = xl->dtype == INGOT_DTYPE_F32 ? xl : ingot_ir_cast(f, INGOT_DTYPE_F32, xl);
    v = lower_quantize_expr(ctx, q->qtype, xf, scale, zl ? ingot_ir_cast(f, INGOT_DTYPE_F32, zl) : NULL);
  } else if (f8) {
    v = ingot_ir_mul(f, lower_f8_decode(ctx, q->qtype, xl), scale);
  } else {
    ingot_dtype_t wide = q->qtype == INGOT_DTYPE_I32 ? INGOT_DTYPE_I64 : INGOT_DTYPE_I32;
    ingot_ir_expr_t* d = ingot_ir_cast(f, wide, xl);
    if (zl) d = ingot_ir_binary(f, INGOT_IR_SUB, d, ingot_ir_cast(f, wide, zl));
    v = ingot_ir_mul(f, ingot_ir_cast(f, INGOT_DTYPE_F32, d), scale);
  }
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL, ingot_ir_store(f, by, at, v));
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE;
  ctx->workload = ingot_arena_printf(ctx->arena, "%s %s %s %s%s%s", lower_op_lower(ctx), ingot_dtype_name(q->qtype),
                                     lower_shape_str(ctx, x), granularity_name(ctx, q), zl ? " zp" : "",
                                     quantize && f8 && !q->saturate ? " no_saturate" : "");
  return INGOT_OK;
}

ingot_status_t lower_quantizelinear(lower_ctx_t* ctx) { return lower_linear(ctx, true); }
ingot_status_t lower_dequantizelinear(lower_ctx_t* ctx) { return lower_linear(ctx, false); }

/* ---- DynamicQuantizeLinear ---- */

/* x[j], or -x[j] (a max of these is -min(x), exactly). */
typedef struct dq_term_t {
  lower_row_term_t base;
  ingot_ir_func_t* f;
  uint32_t buffer;
  bool negate;
} dq_term_t;

static ingot_ir_expr_t* dq_term_at(const lower_row_term_t* base, ingot_ir_expr_t* j) {
  const dq_term_t* t = (const dq_term_t*)base;
  ingot_ir_expr_t* v = ingot_ir_load(t->f, t->buffer, j);
  return t->negate ? ingot_ir_unary(t->f, INGOT_IR_NEG, v) : v;
}

ingot_status_t lower_dynamicquantizelinear(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx))) return s;
  if (node->output_count != 3) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "three outputs are required");
  uint32_t x = lower_input(ctx, 0);
  uint32_t y = node->outputs[0], ys = node->outputs[1], yz = node->outputs[2];
  if ((s = lower_check_value_dt(ctx, x, LOWER_DT(INGOT_DTYPE_F32))) ||
      (s = lower_check_value_dt(ctx, y, LOWER_DT(INGOT_DTYPE_U8))) ||
      (s = lower_check_value_dt(ctx, ys, LOWER_DT(INGOT_DTYPE_F32))) ||
      (s = lower_check_value_dt(ctx, yz, LOWER_DT(INGOT_DTYPE_U8)))) {
    return s;
  }
  if (ingot_value_numel(lower_value(ctx, ys)) != 1 || ingot_value_numel(lower_value(ctx, yz)) != 1) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "y_scale and y_zero_point must be scalars");
  }
  int64_t n = ingot_value_numel(lower_value(ctx, x));
  ingot_ir_func_t* f = ctx->f;
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  uint32_t bs = lower_add_output(ctx, ys, "y_scale");
  uint32_t bz = lower_add_output(ctx, yz, "y_zero_point");
  uint32_t row = lower_add_var(ctx, "row", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t j = lower_add_var(ctx, "j", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t hi = lower_add_var(ctx, "hi", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
  uint32_t neglo = lower_add_var(ctx, "neglo", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
  uint32_t scale = lower_add_var(ctx, "scale", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
  uint32_t zpf = lower_add_var(ctx, "zpf", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
  ingot_ir_stmt_t* body[2 * (LOWER_ROW_CHAINS_MAX + 3) + 8];
  uint32_t nb = 0;
  const int chains = 8;
  dq_term_t tmax = {{dq_term_at, n}, f, bx, false};
  dq_term_t tmin = {{dq_term_at, n}, f, bx, true};
  lower_row_reduce(ctx, &tmax.base, LOWER_REDUCE_MAX, hi, INGOT_DTYPE_F32, body, &nb, chains);
  lower_row_reduce(ctx, &tmin.base, LOWER_REDUCE_MAX, neglo, INGOT_DTYPE_F32, body, &nb, chains);
  ingot_ir_expr_t* zero = f32(f, 0.0);
  /* The range always includes 0. */
  ingot_ir_expr_t* vhi = ingot_ir_binary(f, INGOT_IR_MAX, ingot_ir_var(f, hi), zero);
  ingot_ir_expr_t* vlo = ingot_ir_binary(f, INGOT_IR_MIN, ingot_ir_unary(f, INGOT_IR_NEG, ingot_ir_var(f, neglo)), zero);
  ingot_ir_expr_t* span = ingot_ir_binary(f, INGOT_IR_SUB, vhi, vlo);
  /* hi == lo (all zeros): scale 1, as ONNX Runtime (the ONNX reference
   * takes 1/255; either quantizes every element to 0 with zero point 0). */
  ingot_ir_expr_t* flat = ingot_ir_binary(f, INGOT_IR_EQ, vhi, vlo);
  body[nb++] = ingot_ir_local(
      f, scale, ingot_ir_select(f, flat, f32(f, 1.0), ingot_ir_binary(f, INGOT_IR_DIV, span, f32(f, 255.0))));
  ingot_ir_expr_t* vscale = ingot_ir_var(f, scale);
  ingot_ir_expr_t* izp = ingot_ir_binary(f, INGOT_IR_SUB, zero, ingot_ir_binary(f, INGOT_IR_DIV, vlo, vscale));
  izp = ingot_ir_binary(f, INGOT_IR_MIN, ingot_ir_binary(f, INGOT_IR_MAX, izp, zero), f32(f, 255.0));
  body[nb++] = ingot_ir_local(f, zpf, ingot_ir_unary(f, INGOT_IR_ROUND, izp));
  ingot_ir_expr_t* vzp = ingot_ir_var(f, zpf);
  body[nb++] = ingot_ir_store(f, bs, ingot_ir_int(f, 0), vscale);
  body[nb++] = ingot_ir_store(f, bz, ingot_ir_int(f, 0), ingot_ir_cast(f, INGOT_DTYPE_U8, vzp));
  ingot_ir_expr_t* vj = ingot_ir_var(f, j);
  ingot_ir_expr_t* qv = lower_quantize_expr(ctx, INGOT_DTYPE_U8, ingot_ir_load(f, bx, vj), vscale, vzp);
  body[nb++] = ingot_ir_for(f, j, n, ingot_ir_store(f, by, vj, qv));
  lower_emit_other(ctx, ingot_ir_for(f, row, 1, ingot_ir_block(f, body, nb)));
  lower_mark_vector_loop(ctx, j);
  ctx->op_class = INGOT_OP_CLASS_ROW;
  ctx->workload = ingot_arena_printf(ctx->arena, "%s f32 %s", lower_op_lower(ctx), lower_shape_str(ctx, x));
  return INGOT_OK;
}

/* ---- the requantizing epilogue of QLinearConv and QLinearMatMul ---- */

ingot_status_t lower_requant_args(lower_ctx_t* ctx, uint32_t xs_in, uint32_t ws_in, uint32_t ys_in, uint32_t yz_in,
                                  int64_t channels, ingot_dtype_t ytype, lower_requant_t* out) {
  uint32_t xs = lower_input(ctx, xs_in), ws = lower_input(ctx, ws_in), ys = lower_input(ctx, ys_in);
  uint32_t yz = lower_input(ctx, yz_in);
  ingot_status_t s;
  uint32_t sc[3] = {xs, ws, ys};
  for (int i = 0; i < 3; ++i) {
    if (sc[i] == INGOT_NO_VALUE) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "the scales are required");
    if ((s = lower_check_value_dt(ctx, sc[i], LOWER_DT(INGOT_DTYPE_F32)))) return s;
    int64_t n = ingot_value_numel(lower_value(ctx, sc[i]));
    if (n != 1 && (i != 1 || n != channels)) {
      return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "scale '%s' has %lld elements (1%s)", lower_value(ctx, sc[i])->name,
                        (long long)n, i == 1 ? ", or one per output channel" : "");
    }
  }
  if (yz != INGOT_NO_VALUE && ((s = lower_check_value_dt(ctx, yz, LOWER_DT(ytype))))) return s;
  if (yz != INGOT_NO_VALUE && ingot_value_numel(lower_value(ctx, yz)) != 1) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "y_zero_point must be a scalar");
  }
  double v;
  out->x_scale_one = lower_weight_scalar(ctx, xs, &v) && v == 1.0;
  out->y_scale_one = lower_weight_scalar(ctx, ys, &v) && v == 1.0;
  out->x_scale = lower_add_input(ctx, xs, "x_scale");
  out->w_scale = lower_add_input(ctx, ws, "w_scale");
  out->y_scale = lower_add_input(ctx, ys, "y_scale");
  out->y_zero = yz != INGOT_NO_VALUE ? lower_add_input(ctx, yz, "y_zero") : UINT32_MAX;
  out->w_scales = ingot_value_numel(lower_value(ctx, ws));
  out->ytype = ytype;
  out->alpha = 1.0f;
  return INGOT_OK;
}

ingot_ir_expr_t* lower_requant_value(lower_ctx_t* ctx, const lower_requant_t* rq, ingot_ir_expr_t* acc,
                                     ingot_ir_expr_t* channel) {
  ingot_ir_func_t* f = ctx->f;
  ingot_ir_expr_t* zero = ingot_ir_int(f, 0);
  ingot_ir_expr_t* ws = ingot_ir_load(f, rq->w_scale, rq->w_scales > 1 ? channel : zero);
  ingot_ir_expr_t* xs = ingot_ir_load(f, rq->x_scale, zero);
  if (rq->alpha != 1.0f) xs = ingot_ir_mul(f, f32(f, rq->alpha), xs);
  /* x * 1 and x / 1 are exact: a folded multiplier is w_scale itself */
  ingot_ir_expr_t* m = rq->x_scale_one && rq->alpha == 1.0f ? ws : ingot_ir_mul(f, xs, ws);
  if (!rq->y_scale_one) m = ingot_ir_binary(f, INGOT_IR_DIV, m, ingot_ir_load(f, rq->y_scale, zero));
  ingot_ir_expr_t* v = ingot_ir_unary(f, INGOT_IR_ROUND, ingot_ir_mul(f, ingot_ir_cast(f, INGOT_DTYPE_F32, acc), m));
  if (rq->y_zero != UINT32_MAX) v = ingot_ir_add(f, v, ingot_ir_cast(f, INGOT_DTYPE_F32, ingot_ir_load(f, rq->y_zero, zero)));
  double lo, hi;
  quant_range(rq->ytype, &lo, &hi);
  v = ingot_ir_binary(f, INGOT_IR_MAX, v, f32(f, lo));
  v = ingot_ir_binary(f, INGOT_IR_MIN, v, f32(f, hi));
  return ingot_ir_cast(f, rq->ytype, v);
}

void lower_emit_accumulate(lower_ctx_t* ctx, const lower_loops_t* sp, uint32_t outer, const lower_loops_t* red,
                           uint32_t acc, ingot_ir_expr_t* init, ingot_ir_expr_t* term, ingot_ir_stmt_t* store) {
  ingot_ir_func_t* f = ctx->f;
  ingot_ir_stmt_t* sum = ingot_ir_assign(f, acc, ingot_ir_add(f, ingot_ir_var(f, acc), term));
  for (uint32_t i = red->count; i-- > 0;) sum = ingot_ir_for(f, red->vars[i], red->extents[i], sum);
  ingot_ir_stmt_t* body3[3] = {ingot_ir_local(f, acc, init), sum, store};
  ingot_ir_stmt_t* nest = ingot_ir_block(f, body3, 3);
  for (uint32_t i = sp->count; i-- > 0;) {
    if (i != outer) nest = ingot_ir_for(f, sp->vars[i], sp->extents[i], nest);
  }
  lower_emit_other(ctx, ingot_ir_for(f, sp->vars[outer], sp->extents[outer], nest));
}

/* ---- ONNX Runtime's com.microsoft QLinear ops ---- */

/* Checks a per-tensor scale (input si, float32) and zero point (input zi,
 * dtype t, may be absent) and adds them as buffers (*out_z UINT32_MAX when
 * absent). */
static ingot_status_t scalar_pair(lower_ctx_t* ctx, uint32_t si, uint32_t zi, ingot_dtype_t t, const char* sname,
                                  const char* zname, uint32_t* out_s, uint32_t* out_z) {
  uint32_t sc = lower_input(ctx, si), zp = lower_input(ctx, zi);
  ingot_status_t s;
  if (sc == INGOT_NO_VALUE) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "input %u (a scale) is required", si);
  if ((s = lower_check_value_dt(ctx, sc, LOWER_DT(INGOT_DTYPE_F32))) ||
      (zp != INGOT_NO_VALUE && (s = lower_check_value_dt(ctx, zp, LOWER_DT(t))))) {
    return s;
  }
  if (ingot_value_numel(lower_value(ctx, sc)) != 1 || (zp != INGOT_NO_VALUE && ingot_value_numel(lower_value(ctx, zp)) != 1)) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "scale '%s' and its zero point must be scalars (per tensor)",
                      lower_value(ctx, sc)->name);
  }
  *out_s = lower_add_input(ctx, sc, sname);
  *out_z = zp != INGOT_NO_VALUE ? lower_add_input(ctx, zp, zname) : UINT32_MAX;
  return INGOT_OK;
}

static ingot_ir_expr_t* load0(ingot_ir_func_t* f, uint32_t b) { return ingot_ir_load(f, b, ingot_ir_int(f, 0)); }

/* (x - zero) as int32 (zero: buffer bz, UINT32_MAX for none). */
static ingot_ir_expr_t* centered(lower_ctx_t* ctx, ingot_ir_expr_t* x, uint32_t bz) {
  ingot_ir_func_t* f = ctx->f;
  ingot_ir_expr_t* v = ingot_ir_cast(f, INGOT_DTYPE_I32, x);
  if (bz != UINT32_MAX) v = ingot_ir_binary(f, INGOT_IR_SUB, v, ingot_ir_cast(f, INGOT_DTYPE_I32, load0(f, bz)));
  return v;
}

/* scale * (x - zero) in float32. */
static ingot_ir_expr_t* dequantized(lower_ctx_t* ctx, ingot_ir_expr_t* x, uint32_t bs, uint32_t bz) {
  ingot_ir_func_t* f = ctx->f;
  return ingot_ir_mul(f, load0(f, bs), ingot_ir_cast(f, INGOT_DTYPE_F32, centered(ctx, x, bz)));
}

/* saturate(round(v) + zero) as t, v float32 (zero: buffer bz or none).
 * Rounding before the zero point is added, as QuantizeLinear defines it:
 * round(v + zero) can differ by one step where v + zero is inexact next to
 * a half (v = k + 0.5 + d, d under half the sum's ulp); zero_first asks for
 * round(v + zero) where the caller has shown it the same (choose_rescale). */
static ingot_ir_expr_t* saturated(lower_ctx_t* ctx, ingot_dtype_t t, ingot_ir_expr_t* v, uint32_t bz, bool zero_first) {
  ingot_ir_func_t* f = ctx->f;
  ingot_ir_expr_t* zero = bz != UINT32_MAX ? ingot_ir_cast(f, INGOT_DTYPE_F32, load0(f, bz)) : NULL;
  if (zero && zero_first) v = ingot_ir_add(f, v, zero);
  v = ingot_ir_unary(f, INGOT_IR_ROUND, v);
  if (zero && !zero_first) v = ingot_ir_add(f, v, zero);
  double lo, hi;
  quant_range(t, &lo, &hi);
  v = ingot_ir_binary(f, INGOT_IR_MAX, v, f32(f, lo));
  v = ingot_ir_binary(f, INGOT_IR_MIN, v, f32(f, hi));
  return ingot_ir_cast(f, lower_storage_dtype(t), v);
}

static ingot_status_t check_q8(lower_ctx_t* ctx, uint32_t v, ingot_dtype_t* out) {
  ingot_status_t s = lower_check_value_dt(ctx, v, LOWER_DT(INGOT_DTYPE_U8) | LOWER_DT(INGOT_DTYPE_I8));
  if (!s) *out = lower_value(ctx, v)->dtype;
  return s;
}

/* How QLinearAdd / QLinearMul turn the dequantized sum (product) x into
 * round(x / c_scale) + c_zero (the definition, RESCALE_DIVIDE), or the same
 * integers by a multiply: RESCALE_MULTIPLY rounds x * (1 / c_scale),
 * RESCALE_MULTIPLY_ADD rounds x * (1 / c_scale) + c_zero (one FMA where the
 * target fuses it). RESCALE_FOLDED (QLinearAdd) computes no x at all: it
 * rounds a * A + (b * B + C) on the bytes, A = a_scale / c_scale, B =
 * b_scale / c_scale, C = c_zero - (a_scale a_zero + b_scale b_zero) /
 * c_scale, two FMAs where the target fuses them. */
typedef enum { RESCALE_DIVIDE, RESCALE_MULTIPLY, RESCALE_MULTIPLY_ADD, RESCALE_FOLDED } rescale_t;

/* Whether saturate(round(x / s) + z) (float32, z an integer, the range
 * [lo, hi]) is what the multiply of `mode` gives for x, in every form a
 * code generator may compute it. */
static bool same_integer(float x, float s, float r, float z, float lo, float hi, rescale_t mode) {
  float want = rintf(x / s) + z;
  if (want != want) return false; /* a NaN: keep the division */
  want = fminf(fmaxf(want, lo), hi);
  if (mode == RESCALE_MULTIPLY) return fminf(fmaxf(rintf(x * r) + z, lo), hi) == want;
  volatile float xr = x * r; /* a separate multiply, not fused into the add */
  return fminf(fmaxf(rintf(xr + z), lo), hi) == want && fminf(fmaxf(rintf(fmaf(x, r, z)), lo), hi) == want;
}

/* Whether the folded sum (rescale_t) gives `want` for the bytes a, b in
 * every form a code generator may compute a * A + (b * B + C): both
 * products rounded, either or both fused into its addition. */
static bool same_folded(float a, float b, const float fold[3], float lo, float hi, float want) {
  volatile float pa = a * fold[0], pb = b * fold[1]; /* separate multiplies, not fused */
  float forms[4] = {pa + (pb + fold[2]), fmaf(a, fold[0], pb + fold[2]), pa + fmaf(b, fold[1], fold[2]),
                    fmaf(a, fold[0], fmaf(b, fold[1], fold[2]))};
  for (int k = 0; k < 4; ++k) {
    if (fminf(fmaxf(rintf(forms[k]), lo), hi) != want) return false;
  }
  return true;
}

/* The rescale of QLinearAdd / QLinearMul (rescale_t), in *r the reciprocal
 * 1 / c_scale it multiplies by and in fold[] the folded sum's A, B and C. A
 * multiply is chosen only where every scale and zero point is a weight and a
 * check at compile time runs the kernel's float32 arithmetic over all 65,536
 * input byte pairs and finds every output equal to the division's: for the
 * sum in each form a code generator may give it (two rounded products added,
 * or either product fused into the addition; targets with FMA contract a*b +
 * c), and for RESCALE_MULTIPLY_ADD the zero point added before rounding with
 * and without a fused multiply. RESCALE_FOLDED asks more: that the
 * division's output is the same for the three forms of the sum, and the
 * folded sum's the same in each of its forms (same_folded). */
static rescale_t choose_rescale(lower_ctx_t* ctx, bool mul, ingot_dtype_t t, float* r, float fold[3]) {
  double sa, sb, sc, za = 0.0, zb = 0.0, zc = 0.0;
  uint32_t zav = lower_input(ctx, 2), zbv = lower_input(ctx, 5), zcv = lower_input(ctx, 7);
  if (!lower_weight_scalar(ctx, lower_input(ctx, 1), &sa) || !lower_weight_scalar(ctx, lower_input(ctx, 4), &sb) ||
      !lower_weight_scalar(ctx, lower_input(ctx, 6), &sc) ||
      (zav != INGOT_NO_VALUE && !lower_weight_scalar(ctx, zav, &za)) ||
      (zbv != INGOT_NO_VALUE && !lower_weight_scalar(ctx, zbv, &zb)) ||
      (zcv != INGOT_NO_VALUE && !lower_weight_scalar(ctx, zcv, &zc))) {
    return RESCALE_DIVIDE;
  }
  float fa = (float)sa, fb = (float)sb, fc = (float)sc, fz = (float)zc;
  if (!(fc != 0.0f && fc - fc == 0.0f)) return RESCALE_DIVIDE; /* zero, infinite or NaN */
  *r = 1.0f / fc;
  int lo = t == INGOT_DTYPE_I8 ? -128 : 0;
  float ylo = (float)lo, yhi = (float)(lo + 255);
  fold[0] = (float)(sa / sc);
  fold[1] = (float)(sb / sc);
  /* products rounded apart, not fused: the same constant on every host */
  volatile double zero_a = sa * za, zero_b = sb * zb;
  double zero_sum = zero_a + zero_b;
  fold[2] = (float)(zc - zero_sum / sc);
  bool fused = true, plain = true, folded = !mul && fold[2] - fold[2] == 0.0f;
  for (int a = lo; a < lo + 256 && plain; ++a) {
    float da = (float)(a - (int)za);
    /* volatile: the compiler must not fuse these products into the sum */
    volatile float pa = fa * da;
    for (int b = lo; b < lo + 256 && plain; ++b) {
      float db = (float)(b - (int)zb);
      volatile float pb = fb * db;
      float xs[3] = {mul ? pa * pb : pa + pb, fmaf(fa, da, pb), fmaf(fb, db, pa)};
      for (int k = 0; k < (mul ? 1 : 3); ++k) {
        plain = plain && same_integer(xs[k], fc, *r, fz, ylo, yhi, RESCALE_MULTIPLY);
        fused = fused && plain && same_integer(xs[k], fc, *r, fz, ylo, yhi, RESCALE_MULTIPLY_ADD);
      }
      if (folded) {
        float want = fminf(fmaxf(rintf(xs[0] / fc) + fz, ylo), yhi);
        folded = fminf(fmaxf(rintf(xs[1] / fc) + fz, ylo), yhi) == want &&
                 fminf(fmaxf(rintf(xs[2] / fc) + fz, ylo), yhi) == want &&
                 same_folded((float)a, (float)b, fold, ylo, yhi, want);
      }
    }
  }
  return !plain ? RESCALE_DIVIDE : folded ? RESCALE_FOLDED : fused ? RESCALE_MULTIPLY_ADD : RESCALE_MULTIPLY;
}

ingot_status_t lower_qlinear_binary(lower_ctx_t* ctx) {
  bool mul = ctx->node->op == INGOT_OP_QLINEARMUL;
  uint32_t a = lower_input(ctx, 0), b = lower_input(ctx, 3);
  uint32_t y = ctx->node->output_count ? ctx->node->outputs[0] : INGOT_NO_VALUE;
  ingot_dtype_t t = INGOT_DTYPE_U8, tb = INGOT_DTYPE_U8, ty = INGOT_DTYPE_U8;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx)) || (s = check_q8(ctx, a, &t)) || (s = check_q8(ctx, b, &tb)) ||
      (s = check_q8(ctx, y, &ty)) || (s = lower_check_broadcast(ctx, a, y)) || (s = lower_check_broadcast(ctx, b, y))) {
    return s;
  }
  if (t != tb || t != ty) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "A, B and C must share one dtype");
  ingot_ir_func_t* f = ctx->f;
  uint32_t ba = lower_add_input(ctx, a, "a");
  uint32_t bb = lower_add_input(ctx, b, "b");
  uint32_t bas, baz, bbs, bbz, bcs, bcz;
  if ((s = scalar_pair(ctx, 1, 2, t, "a_scale", "a_zero", &bas, &baz)) ||
      (s = scalar_pair(ctx, 4, 5, t, "b_scale", "b_zero", &bbs, &bbz)) ||
      (s = scalar_pair(ctx, 6, 7, t, "c_scale", "c_zero", &bcs, &bcz))) {
    return s;
  }
  uint32_t by = lower_add_output(ctx, y, "c");
  const ingot_value_t* yv = lower_value(ctx, y);
  lower_loops_t loops;
  ingot_ir_expr_t *av, *bv, *yi;
  if (ingot_value_numel(lower_value(ctx, a)) == ingot_value_numel(yv) &&
      ingot_value_numel(lower_value(ctx, b)) == ingot_value_numel(yv) && yv->rank >= 2) {
    /* No broadcast (a residual sum): two loops over the elements in order,
     * the inner one the trailing axes until it spans 64, so that a row of 14
     * or 7 (a late CNN stage) still fills vectors. */
    int64_t inner = 1;
    int32_t d = yv->rank;
    while (d > 1 && inner < 64) inner *= yv->dims[--d];
    int64_t ext[2] = {ingot_value_numel(yv) / inner, inner};
    static const char* const names[2] = {"r", "i"};
    lower_loops_make(ctx, &loops, 2, ext, names);
    yi = ingot_ir_add(f, ingot_ir_mul(f, loops.idx[0], ingot_ir_int(f, inner)), loops.idx[1]);
    av = ingot_ir_load(f, ba, yi);
    bv = ingot_ir_load(f, bb, yi);
  } else {
    lower_loops_over(ctx, &loops, yv->rank, yv->dims);
    yi = ingot_ir_flat_index(f, by, loops.idx);
    av = ingot_ir_load(f, ba, lower_broadcast_index(ctx, ba, yv->rank, loops.idx));
    bv = ingot_ir_load(f, bb, lower_broadcast_index(ctx, bb, yv->rank, loops.idx));
  }
  float r = 1.0f, fold[3];
  rescale_t rescale = choose_rescale(ctx, mul, t, &r, fold);
  ingot_ir_expr_t* q;
  if (rescale == RESCALE_FOLDED) {
    ingot_ir_expr_t* bpart =
        ingot_ir_add(f, ingot_ir_mul(f, ingot_ir_cast(f, INGOT_DTYPE_F32, bv), f32(f, fold[1])), f32(f, fold[2]));
    ingot_ir_expr_t* v = ingot_ir_add(f, ingot_ir_mul(f, ingot_ir_cast(f, INGOT_DTYPE_F32, av), f32(f, fold[0])), bpart);
    q = saturated(ctx, t, v, UINT32_MAX, false);
  } else {
    ingot_ir_expr_t* da = dequantized(ctx, av, bas, baz);
    ingot_ir_expr_t* db = dequantized(ctx, bv, bbs, bbz);
    ingot_ir_expr_t* v = mul ? ingot_ir_mul(f, da, db) : ingot_ir_add(f, da, db);
    v = rescale != RESCALE_DIVIDE ? ingot_ir_mul(f, v, f32(f, r)) : ingot_ir_binary(f, INGOT_IR_DIV, v, load0(f, bcs));
    q = saturated(ctx, t, v, bcz, rescale == RESCALE_MULTIPLY_ADD);
  }
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL, ingot_ir_store(f, by, yi, q));
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE;
  ctx->workload = ingot_arena_printf(ctx->arena, "%s %s a=%s b=%s", lower_op_lower(ctx), ingot_dtype_name(t),
                                     lower_shape_str(ctx, a), lower_shape_str(ctx, b));
  return INGOT_OK;
}

ingot_status_t lower_qlinear_unary(lower_ctx_t* ctx) {
  uint32_t x = lower_input(ctx, 0);
  uint32_t y = ctx->node->output_count ? ctx->node->outputs[0] : INGOT_NO_VALUE;
  ingot_dtype_t t = INGOT_DTYPE_U8, ty = INGOT_DTYPE_U8;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx)) || (s = check_q8(ctx, x, &t)) || (s = check_q8(ctx, y, &ty))) return s;
  if (t != ty) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "X and Y must share one dtype");
  ingot_ir_func_t* f = ctx->f;
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t bxs, bxz, bys, byz;
  if ((s = scalar_pair(ctx, 1, 2, t, "x_scale", "x_zero", &bxs, &bxz)) ||
      (s = scalar_pair(ctx, 3, 4, t, "y_scale", "y_zero", &bys, &byz))) {
    return s;
  }
  uint32_t by = lower_add_output(ctx, y, "y");
  const ingot_value_t* yv = lower_value(ctx, y);
  lower_loops_t loops;
  lower_loops_over(ctx, &loops, yv->rank, yv->dims);
  ingot_ir_expr_t* at = ingot_ir_flat_index(f, bx, loops.idx);
  ingot_ir_expr_t* v = dequantized(ctx, ingot_ir_load(f, bx, at), bxs, bxz);
  /* sigmoid(v) = 1 / (1 + exp(-v)) */
  v = ingot_ir_binary(f, INGOT_IR_DIV, f32(f, 1.0),
                      ingot_ir_add(f, f32(f, 1.0), ingot_ir_unary(f, INGOT_IR_EXP, ingot_ir_unary(f, INGOT_IR_NEG, v))));
  ingot_ir_expr_t* q = lower_quantize_expr(ctx, t, v, load0(f, bys),
                                           byz != UINT32_MAX ? ingot_ir_cast(f, INGOT_DTYPE_F32, load0(f, byz)) : NULL);
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL, ingot_ir_store(f, by, ingot_ir_flat_index(f, by, loops.idx), q));
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE;
  ctx->workload = ingot_arena_printf(ctx->arena, "%s %s %s", lower_op_lower(ctx), ingot_dtype_name(t),
                                     lower_shape_str(ctx, x));
  return INGOT_OK;
}

ingot_status_t lower_qlinear_gap(lower_ctx_t* ctx) {
  uint32_t x = lower_input(ctx, 0);
  uint32_t y = ctx->node->output_count ? ctx->node->outputs[0] : INGOT_NO_VALUE;
  ingot_dtype_t t = INGOT_DTYPE_U8, ty = INGOT_DTYPE_U8;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx)) || (s = check_q8(ctx, x, &t)) || (s = check_q8(ctx, y, &ty))) return s;
  if (t != ty) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "X and Y must share one dtype");
  const ingot_value_t* xv = lower_value(ctx, x);
  if (xv->rank < 3) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "X must have rank >= 3 (N, C, spatial..)");
  int64_t hw = 1;
  for (int32_t i = 2; i < xv->rank; ++i) hw *= xv->dims[i];
  if (hw >= ((int64_t)1 << 23)) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "%lld positions: the int32 sum could overflow", (long long)hw);
  }
  ingot_ir_func_t* f = ctx->f;
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t bxs, bxz, bys, byz;
  if ((s = scalar_pair(ctx, 1, 2, t, "x_scale", "x_zero", &bxs, &bxz)) ||
      (s = scalar_pair(ctx, 3, 4, t, "y_scale", "y_zero", &bys, &byz))) {
    return s;
  }
  uint32_t by = lower_add_output(ctx, y, "y");
  static const char* const kSp[2] = {"n", "c"};
  static const char* const kRed[1] = {"p"};
  int64_t sext[2] = {xv->dims[0], xv->dims[1]}, rext[1] = {hw};
  lower_loops_t sp, red;
  lower_loops_make(ctx, &sp, 2, sext, kSp);
  lower_loops_make(ctx, &red, 1, rext, kRed);
  /* x viewed as [N*C, HW] */
  ingot_ir_expr_t* row = ingot_ir_add(f, ingot_ir_mul(f, sp.idx[0], ingot_ir_int(f, xv->dims[1])), sp.idx[1]);
  ingot_ir_expr_t* xi = ingot_ir_add(f, ingot_ir_mul(f, row, ingot_ir_int(f, hw)), red.idx[0]);
  ingot_ir_expr_t* term = ingot_ir_cast(f, INGOT_DTYPE_I32, ingot_ir_load(f, bx, xi));
  ingot_ir_expr_t* init = lower_const(ctx, INGOT_DTYPE_I32, 0.0);
  if (bxz != UINT32_MAX) {
    init = ingot_ir_mul(f, ingot_ir_cast(f, INGOT_DTYPE_I32, load0(f, bxz)), lower_const(ctx, INGOT_DTYPE_I32, (double)-hw));
  }
  uint32_t acc = lower_add_var(ctx, "acc", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I32);
  /* MLAS: scale = x_scale / (y_scale * float(HW)) */
  ingot_ir_expr_t* m = ingot_ir_binary(f, INGOT_IR_DIV, load0(f, bxs), ingot_ir_mul(f, load0(f, bys), f32(f, (double)hw)));
  ingot_ir_expr_t* v = ingot_ir_mul(f, ingot_ir_cast(f, INGOT_DTYPE_F32, ingot_ir_var(f, acc)), m);
  ingot_ir_stmt_t* store = ingot_ir_store(f, by, row, saturated(ctx, t, ingot_ir_unary(f, INGOT_IR_ROUND, v), byz, false));
  lower_emit_accumulate(ctx, &sp, 1, &red, acc, init, term, store);
  ctx->op_class = INGOT_OP_CLASS_ROW;
  ctx->workload = ingot_arena_printf(ctx->arena, "%s %s %s", lower_op_lower(ctx), ingot_dtype_name(t),
                                     lower_shape_str(ctx, x));
  return INGOT_OK;
}

ingot_status_t lower_qlinear_concat(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  uint32_t y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  ingot_dtype_t t = INGOT_DTYPE_U8;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx)) || (s = check_q8(ctx, y, &t))) return s;
  uint32_t count = (node->input_count - 2) / 3;
  if (node->input_count < 5 || (node->input_count - 2) % 3) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "inputs must be Y's scale and zero point, then triples");
  }
  ingot_ir_func_t* f = ctx->f;
  uint32_t bx[21], bxs[21], bxz[21];
  if (count > 20) return lower_fail(ctx, INGOT_ERROR_LIMIT, "%u inputs (at most 20)", count);
  for (uint32_t k = 0; k < count; ++k) {
    ingot_dtype_t tx = INGOT_DTYPE_U8;
    uint32_t x = lower_input(ctx, 2 + 3 * k);
    if ((s = check_q8(ctx, x, &tx))) return s;
    if (tx != t) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "input '%s' differs in dtype from Y", lower_value(ctx, x)->name);
    bx[k] = lower_add_input(ctx, x, ingot_arena_printf(ctx->arena, "x%u", k));
    if ((s = scalar_pair(ctx, 3 + 3 * k, 4 + 3 * k, t, ingot_arena_printf(ctx->arena, "x%u_scale", k),
                         ingot_arena_printf(ctx->arena, "x%u_zero", k), &bxs[k], &bxz[k]))) {
      return s;
    }
  }
  uint32_t bys, byz;
  if ((s = scalar_pair(ctx, 0, 1, t, "y_scale", "y_zero", &bys, &byz))) return s;
  uint32_t by = lower_add_output(ctx, y, "y");
  const ingot_value_t* yv = lower_value(ctx, y);
  int32_t axis = (int32_t)ctx->params->u.axis.axis;
  int64_t offset = 0;
  for (uint32_t k = 0; k < count; ++k) {
    const ingot_value_t* xv = lower_value(ctx, lower_input(ctx, 2 + 3 * k));
    if (xv->rank != yv->rank) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "inputs differ in rank from Y");
    lower_loops_t loops;
    lower_loops_over(ctx, &loops, xv->rank, xv->dims);
    ingot_ir_expr_t* yi[INGOT_MAX_RANK];
    for (int32_t i = 0; i < xv->rank; ++i) yi[i] = loops.idx[i];
    yi[axis] = ingot_ir_add(f, loops.idx[axis], ingot_ir_int(f, offset));
    ingot_ir_expr_t* v = dequantized(ctx, ingot_ir_load(f, bx[k], ingot_ir_flat_index(f, bx[k], loops.idx)), bxs[k], bxz[k]);
    ingot_ir_expr_t* q = lower_quantize_expr(ctx, t, v, load0(f, bys),
                                             byz != UINT32_MAX ? ingot_ir_cast(f, INGOT_DTYPE_F32, load0(f, byz)) : NULL);
    lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL, ingot_ir_store(f, by, ingot_ir_flat_index(f, by, yi), q));
    offset += xv->dims[axis];
  }
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE;
  ctx->workload = ingot_arena_printf(ctx->arena, "%s %s %s axis%d n%u", lower_op_lower(ctx), ingot_dtype_name(t),
                                     lower_shape_str(ctx, y), axis, count);
  return INGOT_OK;
}

/* ---- Requantize (ai.ingot) ---- */

ingot_status_t lower_requantize(lower_ctx_t* ctx) {
  uint32_t acc = lower_input(ctx, 0), bias = lower_input(ctx, 5);
  uint32_t y = ctx->node->output_count ? ctx->node->outputs[0] : INGOT_NO_VALUE;
  ingot_dtype_t ty = INGOT_DTYPE_U8;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx)) || (s = lower_check_value_dt(ctx, acc, LOWER_DT(INGOT_DTYPE_I32))) ||
      (s = check_q8(ctx, y, &ty)) ||
      (bias != INGOT_NO_VALUE && (s = lower_check_value_dt(ctx, bias, LOWER_DT(INGOT_DTYPE_I32))))) {
    return s;
  }
  const ingot_value_t* av = lower_value(ctx, acc);
  const ingot_value_t* yv = lower_value(ctx, y);
  const ingot_attr_t* ax = ingot_node_attr(ctx->node, "axis");
  int64_t axis = ax && ax->type == INGOT_ATTR_INT ? ax->i : -1;
  if (axis < 0 || axis >= av->rank || yv->rank != av->rank || ingot_value_numel(yv) != ingot_value_numel(av)) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "acc %s, y %s and axis %lld do not fit", lower_shape_str(ctx, acc),
                      lower_shape_str(ctx, y), (long long)axis);
  }
  int64_t channels = av->dims[axis];
  if (bias != INGOT_NO_VALUE && ingot_value_numel(lower_value(ctx, bias)) != channels) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "bias %s is not one per channel (%lld)",
                      lower_shape_str(ctx, bias), (long long)channels);
  }
  ingot_ir_func_t* f = ctx->f;
  uint32_t ba = lower_add_input(ctx, acc, "acc");
  uint32_t bb = bias != INGOT_NO_VALUE ? lower_add_input(ctx, bias, "bias") : UINT32_MAX;
  lower_requant_t rq = {0};
  if ((s = lower_requant_args(ctx, 1, 2, 3, 4, channels, ty, &rq))) return s;
  const ingot_attr_t* al = ingot_node_attr(ctx->node, "alpha");
  if (al && al->type == INGOT_ATTR_FLOAT) rq.alpha = al->f;
  uint32_t by = lower_add_output(ctx, y, "y");
  lower_loops_t loops;
  lower_loops_over(ctx, &loops, yv->rank, yv->dims);
  ingot_ir_expr_t* v = ingot_ir_load(f, ba, ingot_ir_flat_index(f, ba, loops.idx));
  if (bb != UINT32_MAX) v = ingot_ir_add(f, v, ingot_ir_load(f, bb, loops.idx[axis]));
  v = lower_requant_value(ctx, &rq, v, loops.idx[axis]);
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL, ingot_ir_store(f, by, ingot_ir_flat_index(f, by, loops.idx), v));
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE;
  ctx->workload = ingot_arena_printf(ctx->arena, "requantize %s %s axis%lld ws%lld%s", ingot_dtype_name(ty),
                                     lower_shape_str(ctx, acc), (long long)axis, (long long)rq.w_scales,
                                     bb != UINT32_MAX ? " bias" : "");
  return INGOT_OK;
}
