/* Elementwise ops: Add/Sub/Mul/Div with numpy broadcasting (every numeric
 * dtype; integer Div truncates toward zero as ONNX Runtime does), Relu
 * (signed), Clip (numeric), Sigmoid and Tanh (float32/float64), and
 * BatchNormalization in inference form (float32). Each is one PURE stage over
 * the output shape. The rest of the family is in lower_math.c. */
#include <math.h>
#include <string.h>

#include "lower_internal.h"

ingot_status_t lower_binary_elementwise(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  ingot_ir_binary_op_t op;
  switch (node->op) {
    case INGOT_OP_ADD:
      op = INGOT_IR_ADD;
      break;
    case INGOT_OP_SUB:
      op = INGOT_IR_SUB;
      break;
    case INGOT_OP_MUL:
      op = INGOT_IR_MUL;
      break;
    case INGOT_OP_DIV:
      op = INGOT_IR_DIV;
      break;
    default:
      return lower_fail(ctx, INGOT_ERROR_INTERNAL, "not a binary elementwise op");
  }
  uint32_t a = lower_input(ctx, 0), b = lower_input(ctx, 1);
  uint32_t y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  /* Legacy broadcast (opset < 7): B aligned at `axis` of A (inference checked it). */
  bool legacy = ctx->params->u.binary.legacy_broadcast; /* graph/params.c */
  const uint32_t dts = LOWER_DT_NUMERIC | LOWER_DT_F16_ARITH;
  if ((s = lower_check_value_dt(ctx, a, dts)) || (s = lower_check_value_dt(ctx, b, dts)) ||
      (s = lower_check_value_dt(ctx, y, dts)) || (s = lower_check_broadcast(ctx, a, y)) ||
      (!legacy && (s = lower_check_broadcast(ctx, b, y)))) {
    return s;
  }
  int64_t axis = 0;
  if (legacy) {
    const ingot_value_t *av = lower_value(ctx, a), *bv = lower_value(ctx, b);
    axis = ctx->params->u.binary.axis;
    bool fits = axis >= 0 && axis + bv->rank <= av->rank && av->rank == lower_value(ctx, y)->rank;
    for (int32_t i = 0; fits && i < bv->rank; ++i) fits = bv->dims[i] == 1 || bv->dims[i] == av->dims[axis + i];
    if (!fits) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "legacy broadcast: B does not fit A at axis %lld", (long long)axis);
  }
  ingot_dtype_t t = lower_value(ctx, a)->dtype;
  if (lower_value(ctx, b)->dtype != t || lower_value(ctx, y)->dtype != t) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "inputs and output differ in dtype");
  }
  uint32_t ba = lower_add_input(ctx, a, "a");
  uint32_t bb = lower_add_input(ctx, b, "b");
  uint32_t by = lower_add_output(ctx, y, "y");
  const ingot_value_t* yv = lower_value(ctx, y);
  lower_loops_t loops;
  lower_loops_over(ctx, &loops, yv->rank, yv->dims);
  ingot_ir_func_t* f = ctx->f;
  ingot_ir_expr_t* va = ingot_ir_load(f, ba, lower_broadcast_index(ctx, ba, yv->rank, loops.idx));
  ingot_ir_expr_t* vb;
  if (legacy) {
    ingot_ir_expr_t* bidx[INGOT_MAX_RANK];
    const ingot_ir_buffer_t* bbuf = &f->buffers[bb];
    for (int32_t i = 0; i < bbuf->rank; ++i) bidx[i] = bbuf->dims[i] == 1 ? ingot_ir_int(f, 0) : loops.idx[axis + i];
    vb = ingot_ir_load(f, bb, ingot_ir_flat_index(f, bb, bidx));
  } else {
    vb = ingot_ir_load(f, bb, lower_broadcast_index(ctx, bb, yv->rank, loops.idx));
  }
  ingot_ir_expr_t* v = ingot_ir_binary(f, op, va, vb);
  if (op == INGOT_IR_DIV && lower_dtype_is_int(t) && t != INGOT_DTYPE_U8) {
    /* ONNX Runtime's integer Div truncates toward zero; the IR's rounds down:
     * q + 1 where the division is inexact and the signs differ. */
    ingot_ir_expr_t* zero = lower_const(ctx, t, 0);
    ingot_ir_expr_t* inexact = ingot_ir_binary(f, INGOT_IR_NE, ingot_ir_binary(f, INGOT_IR_MOD, va, vb), zero);
    ingot_ir_expr_t* signs = ingot_ir_binary(f, INGOT_IR_NE, ingot_ir_binary(f, INGOT_IR_LT, va, zero),
                                             ingot_ir_binary(f, INGOT_IR_LT, vb, zero));
    v = ingot_ir_select(f, lower_and(ctx, inexact, signs), ingot_ir_add(f, v, lower_const(ctx, t, 1)), v);
  }
  v = lower_activation(ctx, v);
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL,
                   ingot_ir_store(f, by, ingot_ir_flat_index(f, by, loops.idx), v));
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE;
  ctx->workload =
      ingot_arena_printf(ctx->arena, "%s %s a=%s b=%s y=%s act=%s", lower_op_lower(ctx),
                         t == INGOT_DTYPE_F32 ? "f32" : ingot_dtype_name(t), lower_shape_str(ctx, a),
                         lower_shape_str(ctx, b), lower_shape_str(ctx, y), lower_activation_name(ctx));
  return INGOT_OK;
}

/* A Clip bound: from an input (a scalar weight folds to a constant; any other
 * value is read at run time) or, before opset 11, from an attribute. */
typedef struct clip_bound_t {
  bool present;
  bool is_const;
  double value;
  uint32_t input; /* !is_const: the graph value */
  uint32_t buffer;
} clip_bound_t;

static ingot_status_t clip_bound(lower_ctx_t* ctx, uint32_t input_index, const char* attr, clip_bound_t* out) {
  memset(out, 0, sizeof(*out));
  /* Attribute bounds (opset < 11): node.params (graph/params.c). */
  const ingot_clip_params_t* cp = &ctx->params->u.clip;
  bool is_min = strcmp(attr, "min") == 0;
  if (is_min ? cp->has_min : cp->has_max) {
    out->present = out->is_const = true;
    out->value = is_min ? cp->min : cp->max;
  }
  uint32_t v = lower_input(ctx, input_index);
  if (v == INGOT_NO_VALUE) return INGOT_OK;
  ingot_status_t s = lower_check_value_dt(ctx, v, LOWER_DT(lower_value(ctx, lower_input(ctx, 0))->dtype));
  if (s) return s;
  const ingot_value_t* val = lower_value(ctx, v);
  if (ingot_value_numel(val) != 1) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "bound '%s' must hold one element", val->name);
  }
  out->present = true;
  double c;
  if (lower_weight_scalar(ctx, v, &c)) {
    out->is_const = true;
    out->value = c;
  } else {
    out->is_const = false;
    out->input = v;
  }
  return INGOT_OK;
}

static ingot_ir_expr_t* clip_bound_expr(lower_ctx_t* ctx, const clip_bound_t* b, ingot_dtype_t t) {
  if (b->is_const) return lower_const(ctx, t, b->value);
  return ingot_ir_load(ctx->f, b->buffer, ingot_ir_int(ctx->f, 0));
}

ingot_status_t lower_unary_elementwise(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  uint32_t x = lower_input(ctx, 0);
  uint32_t y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  uint32_t allowed = node->op == INGOT_OP_RELU ? LOWER_DT_SIGNED | LOWER_DT_F16_ARITH
                     : node->op == INGOT_OP_CLIP ? LOWER_DT_NUMERIC
                                                 : LOWER_DT_FLOAT;
  if ((s = lower_check_value_dt(ctx, x, allowed)) || (s = lower_check_value_dt(ctx, y, allowed))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  if (xv->rank != yv->rank || ingot_value_numel(xv) != ingot_value_numel(yv) || xv->dtype != yv->dtype) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "output %s %s differs from input %s %s",
                      ingot_dtype_name(yv->dtype), lower_shape_str(ctx, y), ingot_dtype_name(xv->dtype),
                      lower_shape_str(ctx, x));
  }
  ingot_dtype_t t = xv->dtype;
  clip_bound_t lo = {0}, hi = {0};
  if (node->op == INGOT_OP_CLIP) {
    if ((s = clip_bound(ctx, 1, "min", &lo)) || (s = clip_bound(ctx, 2, "max", &hi))) return s;
  }
  uint32_t bx = lower_add_input(ctx, x, "x");
  if (lo.present && !lo.is_const) lo.buffer = lower_add_input(ctx, lo.input, "lo");
  if (hi.present && !hi.is_const) hi.buffer = lower_add_input(ctx, hi.input, "hi");
  uint32_t by = lower_add_output(ctx, y, "y");
  lower_loops_t loops;
  lower_loops_over(ctx, &loops, yv->rank, yv->dims);
  ingot_ir_func_t* f = ctx->f;
  ingot_ir_expr_t* v = ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, loops.idx));
  const char* extra = "";
  switch (node->op) {
    case INGOT_OP_RELU:
      v = ingot_ir_binary(f, INGOT_IR_MAX, v, lower_const(ctx, t, 0.0));
      break;
    case INGOT_OP_SIGMOID: {
      ingot_ir_expr_t* e = ingot_ir_unary(f, INGOT_IR_EXP, ingot_ir_unary(f, INGOT_IR_NEG, v));
      v = ingot_ir_binary(f, INGOT_IR_DIV, lower_const(ctx, t, 1.0), ingot_ir_add(f, lower_const(ctx, t, 1.0), e));
      break;
    }
    case INGOT_OP_TANH:
      v = ingot_ir_unary(f, INGOT_IR_TANH, v);
      break;
    case INGOT_OP_CLIP:
      /* ONNX: min(max(x, lo), hi); an absent bound does not clip. */
      if (lo.present) v = ingot_ir_binary(f, INGOT_IR_MAX, v, clip_bound_expr(ctx, &lo, t));
      if (hi.present) v = ingot_ir_binary(f, INGOT_IR_MIN, v, clip_bound_expr(ctx, &hi, t));
      extra = ingot_arena_printf(ctx->arena, " min=%s max=%s",
                                 !lo.present   ? "none"
                                 : lo.is_const ? ingot_arena_printf(ctx->arena, "%g", lo.value)
                                               : "var",
                                 !hi.present   ? "none"
                                 : hi.is_const ? ingot_arena_printf(ctx->arena, "%g", hi.value)
                                               : "var");
      break;
    default:
      return lower_fail(ctx, INGOT_ERROR_INTERNAL, "not a unary elementwise op");
  }
  v = lower_activation(ctx, v);
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL,
                   ingot_ir_store(f, by, ingot_ir_flat_index(f, by, loops.idx), v));
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE;
  ctx->workload = ingot_arena_printf(ctx->arena, "%s %s x=%s%s act=%s", lower_op_lower(ctx),
                                     t == INGOT_DTYPE_F32 ? "f32" : ingot_dtype_name(t), lower_shape_str(ctx, x),
                                     extra, lower_activation_name(ctx));
  return INGOT_OK;
}

/* y = (x - mean[c]) * (scale[c] / sqrt(var[c] + epsilon)) + bias[c], c = axis 1. */
ingot_status_t lower_batchnorm(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  uint32_t x = lower_input(ctx, 0);
  uint32_t y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  /* training_mode and spatial were checked at shape inference (graph/params.c). */
  if (ctx->params->u.norm.training) return lower_batchnorm_training(ctx);
  if ((s = lower_check_value(ctx, x, true)) || (s = lower_check_value(ctx, y, true))) return s;
  for (uint32_t i = 1; i < node->output_count; ++i) {
    if (node->outputs[i] != INGOT_NO_VALUE) {
      return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "running mean/var outputs need training_mode=1");
    }
  }
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  if (xv->rank < 2) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "input must have rank >= 2");
  if (yv->rank != xv->rank || ingot_value_numel(xv) != ingot_value_numel(yv)) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "output shape differs from input shape");
  }
  int64_t channels = xv->dims[1];
  static const char* const kNames[4] = {"scale", "bias", "mean", "var"};
  uint32_t params[4];
  for (uint32_t i = 0; i < 4; ++i) {
    params[i] = lower_input(ctx, i + 1);
    if ((s = lower_check_value(ctx, params[i], true))) return s;
    const ingot_value_t* pv = lower_value(ctx, params[i]);
    if (pv->rank != 1 || pv->dims[0] != channels) {
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "%s '%s' must have shape [%lld]", kNames[i], pv->name,
                        (long long)channels);
    }
  }
  double eps = ctx->params->u.norm.epsilon;
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t bp[4];
  for (uint32_t i = 0; i < 4; ++i) bp[i] = lower_add_input(ctx, params[i], kNames[i]);
  uint32_t by = lower_add_output(ctx, y, "y");
  lower_loops_t loops;
  lower_loops_over(ctx, &loops, yv->rank, yv->dims);
  ingot_ir_func_t* f = ctx->f;
  ingot_ir_expr_t* c = loops.idx[1];
  ingot_ir_expr_t* p[4];
  for (uint32_t i = 0; i < 4; ++i) p[i] = ingot_ir_load(f, bp[i], c);
  ingot_ir_expr_t* inv = ingot_ir_unary(f, INGOT_IR_SQRT, ingot_ir_add(f, p[3], lower_f32(ctx, eps)));
  ingot_ir_expr_t* mul = ingot_ir_binary(f, INGOT_IR_DIV, p[0], inv);
  ingot_ir_expr_t* v = ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, loops.idx));
  v = ingot_ir_add(f, ingot_ir_mul(f, ingot_ir_binary(f, INGOT_IR_SUB, v, p[2]), mul), p[1]);
  v = lower_activation(ctx, v);
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL,
                   ingot_ir_store(f, by, ingot_ir_flat_index(f, by, loops.idx), v));
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE;
  ctx->workload = ingot_arena_printf(ctx->arena, "batchnormalization f32 x=%s eps=%g act=%s", lower_shape_str(ctx, x),
                                     eps, lower_activation_name(ctx));
  return INGOT_OK;
}

/* FusedElementwise (graph/passes_fuse_elementwise.c): one PURE stage over
 * the output; each input read with numpy broadcasting, then the program's
 * steps in order, each as the op it stands for is lowered here and in
 * lower_math.c (Sigmoid 1 / (1 + exp(-x)), HardSigmoid max(min(a x + b, 1),
 * 0), ...), the last step stored. DequantizeLinear and QuantizeLinear steps
 * ("qtypes") compute as lower_quant.c's kernels do, a QuantizeLinear step
 * multiplying by 1 / scale where the pass marked it INGOT_FUSED_Q_RECIPROCAL. */
ingot_status_t lower_fused_elementwise(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  uint32_t count = 0;
  const int64_t* prog = ingot_node_attr_ints(node, "program", &count);
  const ingot_attr_t* pa = ingot_node_attr(node, "params");
  uint32_t steps = count / 3, inputs = node->input_count;
  if (!prog || count == 0 || count % 3 || !pa || pa->type != INGOT_ATTR_FLOATS || pa->count != 2 * steps ||
      steps > 64) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "malformed fused program");
  }
  uint32_t y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  /* float32, or float16 (graph->half_arith: steps of float16 arithmetic
   * only, graph/passes_fuse_elementwise.c), the same everywhere; with
   * quantization steps ("qtypes") also uint8/int8 inputs for the
   * DequantizeLinear steps and output of a QuantizeLinear one */
  uint32_t qcount = 0;
  const int64_t* qtypes = ingot_node_attr_ints(node, "qtypes", &qcount);
  if (qtypes && qcount != steps) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "malformed fused qtypes");
  uint32_t bytes = qtypes ? LOWER_DT(INGOT_DTYPE_U8) | LOWER_DT(INGOT_DTYPE_I8) : 0;
  if ((s = lower_check_value_dt(ctx, y, LOWER_DT(INGOT_DTYPE_F32) | (qtypes ? bytes : LOWER_DT_F16_ARITH)))) return s;
  ingot_dtype_t t = qtypes ? INGOT_DTYPE_F32 : lower_value(ctx, y)->dtype; /* the steps' arithmetic */
  for (uint32_t i = 0; i < inputs; ++i) {
    if ((s = lower_check_value_dt(ctx, lower_input(ctx, i), LOWER_DT(t) | bytes)) ||
        (s = lower_check_broadcast(ctx, lower_input(ctx, i), y)))
      return s;
  }
  uint32_t buf[16];
  for (uint32_t i = 0; i < inputs && i < 16; ++i) buf[i] = lower_add_input(ctx, lower_input(ctx, i), "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  const ingot_value_t* yv = lower_value(ctx, y);
  lower_loops_t loops;
  lower_loops_over(ctx, &loops, yv->rank, yv->dims);
  ingot_ir_func_t* f = ctx->f;
  ingot_ir_expr_t* val[16 + 64];
  for (uint32_t i = 0; i < inputs; ++i)
    val[i] = ingot_ir_load(f, buf[i], lower_broadcast_index(ctx, buf[i], yv->rank, loops.idx));
  ingot_strbuf_t sb = {0};
  ingot_dtype_t yt = yv->dtype;
  ingot_strbuf_appendf(&sb, "fused %s y=%s", yt == INGOT_DTYPE_F32 ? "f32" : ingot_dtype_name(yt), lower_shape_str(ctx, y));
  for (uint32_t i = 0; i < inputs; ++i) {
    ingot_dtype_t xt = lower_value(ctx, lower_input(ctx, i))->dtype;
    ingot_strbuf_appendf(&sb, " x%u=%s%s%s", i, xt == yt ? "" : ingot_dtype_name(xt), xt == yt ? "" : ":",
                         lower_shape_str(ctx, lower_input(ctx, i)));
  }
  for (uint32_t i = 0; i < steps; ++i) {
    int64_t op = prog[3 * i], a = prog[3 * i + 1], b = prog[3 * i + 2];
    float p0 = pa->floats[2 * i], p1 = pa->floats[2 * i + 1];
    if (a < 0 || a >= inputs + i || b >= (int64_t)(inputs + i) || op < 0 || op >= INGOT_OP_COUNT_) {
      ingot_strbuf_free(&sb);
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "fused step %u reads an operand it cannot", i);
    }
    ingot_ir_expr_t* x = val[a];
    ingot_ir_expr_t* z = b >= 0 ? val[b] : NULL;
    ingot_ir_expr_t* v = NULL;
    ingot_dtype_t qt = qtypes ? (ingot_dtype_t)(qtypes[i] & 0xff) : INGOT_DTYPE_INVALID;
    bool reciprocal = qtypes && (qtypes[i] & INGOT_FUSED_Q_RECIPROCAL);
    bool dq = op == (int64_t)INGOT_OP_DEQUANTIZELINEAR, q = op == (int64_t)INGOT_OP_QUANTIZELINEAR;
    /* bytes only where a DequantizeLinear step reads them (an input, or a
     * QuantizeLinear step's result), every other operand of the steps'
     * arithmetic dtype; the last step's result has the output's dtype */
    bool fits = !(dq || q) || qt == INGOT_DTYPE_U8 || qt == INGOT_DTYPE_I8;
    fits = fits && (dq ? x->dtype == qt : x->dtype == t && (!z || z->dtype == t));
    if (i + 1 == steps) fits = fits && (q ? qt : t) == yt;
    if (!fits) {
      ingot_strbuf_free(&sb);
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "fused step %u reads an operand of the wrong dtype", i);
    }
    switch ((ingot_op_t)op) {
      case INGOT_OP_DEQUANTIZELINEAR: {
        /* (x - zero) * scale, as lower_quant.c's DequantizeLinear; of a
         * QuantizeLinear step's bytes, from its clamped float32 (integers
         * in the byte's range, so the same values) with no round trip
         * through the bytes */
        if (a >= (int64_t)inputs && prog[3 * (a - inputs)] == (int64_t)INGOT_OP_QUANTIZELINEAR &&
            x->kind == INGOT_IR_EXPR_CAST && x->u.unary.a->dtype == INGOT_DTYPE_F32) {
          ingot_ir_expr_t* d = ingot_ir_binary(f, INGOT_IR_SUB, x->u.unary.a, lower_const(ctx, INGOT_DTYPE_F32, p1));
          v = ingot_ir_mul(f, d, lower_const(ctx, INGOT_DTYPE_F32, p0));
          break;
        }
        ingot_ir_expr_t* d = ingot_ir_cast(f, INGOT_DTYPE_I32, x);
        d = ingot_ir_binary(f, INGOT_IR_SUB, d, lower_const(ctx, INGOT_DTYPE_I32, p1));
        v = ingot_ir_mul(f, ingot_ir_cast(f, INGOT_DTYPE_F32, d), lower_const(ctx, INGOT_DTYPE_F32, p0));
        break;
      }
      case INGOT_OP_QUANTIZELINEAR:
        /* by 1/scale where graph/passes_fuse_elementwise.c found it equal for every x this step can get */
        v = reciprocal ? lower_quantize_scaled(ctx, qt, ingot_ir_mul(f, x, lower_const(ctx, INGOT_DTYPE_F32, 1.0f / p0)),
                                               lower_const(ctx, INGOT_DTYPE_F32, p1))
                       : lower_quantize_expr(ctx, qt, x, lower_const(ctx, INGOT_DTYPE_F32, p0),
                                             lower_const(ctx, INGOT_DTYPE_F32, p1));
        break;
      case INGOT_OP_ADD: if (z) v = ingot_ir_add(f, x, z); break;
      case INGOT_OP_SUB: if (z) v = ingot_ir_binary(f, INGOT_IR_SUB, x, z); break;
      case INGOT_OP_MUL: if (z) v = ingot_ir_mul(f, x, z); break;
      case INGOT_OP_DIV: if (z) v = ingot_ir_binary(f, INGOT_IR_DIV, x, z); break;
      case INGOT_OP_MAX: if (z) v = ingot_ir_binary(f, INGOT_IR_MAX, x, z); break;
      case INGOT_OP_MIN: if (z) v = ingot_ir_binary(f, INGOT_IR_MIN, x, z); break;
      case INGOT_OP_RELU: v = ingot_ir_binary(f, INGOT_IR_MAX, x, lower_const(ctx, t, 0.0)); break;
      case INGOT_OP_CLIP:
        v = ingot_ir_binary(f, INGOT_IR_MIN, ingot_ir_binary(f, INGOT_IR_MAX, x, lower_const(ctx, t, p0)), lower_const(ctx, t, p1));
        break;
      case INGOT_OP_SIGMOID: {
        ingot_ir_expr_t* e = ingot_ir_unary(f, INGOT_IR_EXP, ingot_ir_unary(f, INGOT_IR_NEG, x));
        v = ingot_ir_binary(f, INGOT_IR_DIV, lower_const(ctx, t, 1.0), ingot_ir_add(f, lower_const(ctx, t, 1.0), e));
        break;
      }
      case INGOT_OP_TANH: v = ingot_ir_unary(f, INGOT_IR_TANH, x); break;
      case INGOT_OP_HARDSIGMOID:
      case INGOT_OP_HARDSWISH: {
        bool swish = op == INGOT_OP_HARDSWISH;
        double alpha = swish ? 1.0 / 6.0 : p0, beta = swish ? 0.5 : p1;
        ingot_ir_expr_t* h = ingot_ir_add(f, ingot_ir_mul(f, lower_const(ctx, t, alpha), x), lower_const(ctx, t, beta));
        h = ingot_ir_binary(f, INGOT_IR_MAX, ingot_ir_binary(f, INGOT_IR_MIN, h, lower_const(ctx, t, 1.0)), lower_const(ctx, t, 0.0));
        v = swish ? ingot_ir_mul(f, x, h) : h;
        break;
      }
      case INGOT_OP_LEAKYRELU:
        v = ingot_ir_select(f, ingot_ir_binary(f, INGOT_IR_LT, x, lower_const(ctx, t, 0.0)),
                            ingot_ir_mul(f, lower_const(ctx, t, p0), x), x);
        break;
      default:
        break;
    }
    if (!v) {
      ingot_strbuf_free(&sb);
      return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "fused step %u: op %lld is not fusable", i, (long long)op);
    }
    val[inputs + i] = v;
    ingot_strbuf_appendf(&sb, dq || q ? " %s(%lld,%lld;%.9g,%g%s)" : " %s(%lld,%lld;%g,%g%s)",
                         ingot_op_name((ingot_op_t)op), (long long)a, (long long)b, p0, p1, reciprocal ? ";1/s" : "");
  }
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL,
                   ingot_ir_store(f, by, ingot_ir_flat_index(f, by, loops.idx), val[inputs + steps - 1]));
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE;
  ctx->workload = ingot_arena_strdup(ctx->arena, sb.data);
  ingot_strbuf_free(&sb);
  return INGOT_OK;
}
