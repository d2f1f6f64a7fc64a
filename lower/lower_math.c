/* The elementwise family beyond the first CNN ops: unary math (Abs, Neg, Exp,
 * Log, Sqrt, Reciprocal, Floor, Ceil, Round, Sign, Erf, trigonometric and
 * hyperbolic functions), activations (HardSigmoid, HardSwish, LeakyRelu, Elu,
 * Selu, Celu, Gelu, Softplus, Softsign, Mish, ThresholdedRelu, Shrink, Swish,
 * PRelu), comparisons, logic, Where, Cast/CastLike, Pow, Min/Max/Sum/Mean,
 * Mod, IsNaN/IsInf and BitShift. Each is one PURE stage over the output
 * shape with numpy broadcasting of its inputs, computed in the input dtype
 * (the IR has F32/F64/I64/I32/I8/U8/BOOL); dtypes an op does not define are
 * refused. */
#include <math.h>
#include <string.h>

#include "lower_internal.h"

/* ---- the shared frame: inputs broadcast-loaded, one store of output 0 ---- */

typedef struct ew_t {
  lower_loops_t loops;
  uint32_t y_buf;
  uint32_t y;
  int32_t rank;
  uint32_t n;
  uint32_t values[64];         /* graph values of the loaded inputs */
  ingot_ir_expr_t* in[64];     /* their loads at the output index */
} ew_t;

/* Checks output 0 and inputs [0, count) (all present; count 0: every input),
 * that input 0's dtype is in `allowed`, and (same_type) that every input has
 * input 0's dtype; adds the arguments, the loops and the loads. */
static ingot_status_t ew_begin_ex(lower_ctx_t* ctx, uint32_t count, uint32_t allowed, bool same_type,
                                  uint32_t channel_input, ew_t* e) {
  const ingot_node_t* node = ctx->node;
  memset(e, 0, sizeof(*e));
  if (count == 0) count = node->input_count;
  if (count > 64) return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "more than 64 inputs");
  e->y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_check_value_dt(ctx, e->y, LOWER_DT_ANY | (allowed & (LOWER_DT_HALF | LOWER_DT_NARROW))))) return s;
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t v = lower_input(ctx, i);
    if (v == INGOT_NO_VALUE) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "input %u is missing", i);
    if ((s = lower_check_value(ctx, v, false))) return s;
    if (i != channel_input && (s = lower_check_broadcast(ctx, v, e->y))) return s;
    if (i == 0 && (s = lower_check_dtype(ctx, v, allowed))) return s;
    if (same_type && lower_value(ctx, v)->dtype != lower_value(ctx, lower_input(ctx, 0))->dtype) {
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "inputs differ in dtype (%s, %s)",
                        ingot_dtype_name(lower_value(ctx, lower_input(ctx, 0))->dtype),
                        ingot_dtype_name(lower_value(ctx, v)->dtype));
    }
    e->values[i] = v;
  }
  e->n = count;
  uint32_t bufs[64];
  static const char* const kNames[] = {"a", "b", "c", "d", "e", "f", "g", "h"};
  for (uint32_t i = 0; i < count; ++i) {
    const char* name = i < 8 ? kNames[i] : ingot_arena_printf(ctx->arena, "in%u", i);
    bufs[i] = lower_add_input(ctx, e->values[i], name);
  }
  e->y_buf = lower_add_output(ctx, e->y, "y");
  const ingot_value_t* yv = lower_value(ctx, e->y);
  e->rank = yv->rank;
  lower_loops_over(ctx, &e->loops, yv->rank, yv->dims);
  for (uint32_t i = 0; i < count; ++i) {
    ingot_ir_expr_t* idx = i == channel_input ? e->loops.idx[1]
                                              : lower_broadcast_index(ctx, bufs[i], yv->rank, e->loops.idx);
    e->in[i] = ingot_ir_load(ctx->f, bufs[i], idx);
  }
  return INGOT_OK;
}

static ingot_status_t ew_begin(lower_ctx_t* ctx, uint32_t count, uint32_t allowed, bool same_type, ew_t* e) {
  return ew_begin_ex(ctx, count, allowed, same_type, UINT32_MAX, e);
}

/* Stores v (converted by nothing: it must have the output's dtype, or for
 * a float8 / int4 / uint4 output its storage dtype). */
static ingot_status_t ew_end(lower_ctx_t* ctx, ew_t* e, ingot_ir_expr_t* v, const char* extra) {
  ingot_ir_func_t* f = ctx->f;
  const ingot_value_t* yv = lower_value(ctx, e->y);
  if (v->dtype != lower_storage_dtype(yv->dtype)) {
    return lower_fail(ctx, INGOT_ERROR_INTERNAL, "computes %s for a %s output", ingot_dtype_name(v->dtype),
                      ingot_dtype_name(yv->dtype));
  }
  v = lower_activation(ctx, v);
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &e->loops, NULL,
                   ingot_ir_store(f, e->y_buf, ingot_ir_flat_index(f, e->y_buf, e->loops.idx), v));
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE;
  ingot_strbuf_t sb = {0};
  ingot_strbuf_appendf(&sb, "%s %s", lower_op_lower(ctx),
                       ingot_dtype_name(e->n ? lower_value(ctx, e->values[0])->dtype : yv->dtype));
  for (uint32_t i = 0; i < e->n; ++i) ingot_strbuf_appendf(&sb, " %s", lower_shape_str(ctx, e->values[i]));
  ingot_strbuf_appendf(&sb, " y=%s%s%s", lower_shape_str(ctx, e->y), extra && *extra ? " " : "", extra ? extra : "");
  ctx->workload = ingot_arena_strdup(ctx->arena, sb.data);
  ingot_strbuf_free(&sb);
  return INGOT_OK;
}

/* ---- small builders ---- */

#define K(v) lower_const(ctx, t, (v))
static ingot_ir_expr_t* un(lower_ctx_t* ctx, ingot_ir_unary_op_t op, ingot_ir_expr_t* a) {
  return ingot_ir_unary(ctx->f, op, a);
}
static ingot_ir_expr_t* bin(lower_ctx_t* ctx, ingot_ir_binary_op_t op, ingot_ir_expr_t* a, ingot_ir_expr_t* b) {
  return ingot_ir_binary(ctx->f, op, a, b);
}
static ingot_ir_expr_t* sel(lower_ctx_t* ctx, ingot_ir_expr_t* c, ingot_ir_expr_t* a, ingot_ir_expr_t* b) {
  return ingot_ir_select(ctx->f, c, a, b);
}

/* log(1 + e^x) without overflow: max(x, 0) + log(1 + e^-|x|). */
static ingot_ir_expr_t* softplus(lower_ctx_t* ctx, ingot_dtype_t t, ingot_ir_expr_t* x) {
  ingot_ir_expr_t* e = un(ctx, INGOT_IR_EXP, un(ctx, INGOT_IR_NEG, un(ctx, INGOT_IR_ABS, x)));
  return bin(ctx, INGOT_IR_ADD, bin(ctx, INGOT_IR_MAX, x, K(0.0)), un(ctx, INGOT_IR_LOG, bin(ctx, INGOT_IR_ADD, K(1.0), e)));
}

/* ---- unary math and activations ---- */

ingot_status_t lower_math_unary(lower_ctx_t* ctx) {
  ingot_op_t op = ctx->node->op;
  uint32_t allowed = LOWER_DT_FLOAT;
  switch (op) {
    case INGOT_OP_ABS: allowed = LOWER_DT_NUMERIC | LOWER_DT_F16_ARITH; break;
    case INGOT_OP_SIGN: allowed = LOWER_DT_NUMERIC; break;
    case INGOT_OP_NEG: allowed = LOWER_DT_SIGNED | LOWER_DT_F16_ARITH; break;
    case INGOT_OP_SQRT: allowed = LOWER_DT_FLOAT | LOWER_DT_F16_ARITH; break;
    default: break;
  }
  ew_t e;
  ingot_status_t s = ew_begin(ctx, 1, allowed, true, &e);
  if (s) return s;
  ingot_dtype_t t = lower_value(ctx, e.values[0])->dtype;
  bool is_float = lower_dtype_is_float(t);
  ingot_ir_expr_t* x = e.in[0];
  ingot_ir_expr_t* v = NULL;
  const char* extra = "";
  double alpha = 0, beta = 0, gamma = 0;
  const ingot_unary_params_t* up = &ctx->params->u.unary; /* attributes: graph/params.c */
  switch (op) {
    case INGOT_OP_ABS:
      v = t == INGOT_DTYPE_U8 ? x : un(ctx, INGOT_IR_ABS, x);
      break;
    case INGOT_OP_NEG: v = un(ctx, INGOT_IR_NEG, x); break;
    case INGOT_OP_EXP: v = un(ctx, INGOT_IR_EXP, x); break;
    case INGOT_OP_LOG: v = un(ctx, INGOT_IR_LOG, x); break;
    case INGOT_OP_SQRT: v = un(ctx, INGOT_IR_SQRT, x); break;
    case INGOT_OP_RECIPROCAL: v = bin(ctx, INGOT_IR_DIV, K(1.0), x); break;
    case INGOT_OP_FLOOR: v = un(ctx, INGOT_IR_FLOOR, x); break;
    case INGOT_OP_CEIL: v = un(ctx, INGOT_IR_CEIL, x); break;
    case INGOT_OP_ROUND: v = un(ctx, INGOT_IR_ROUND, x); break;
    case INGOT_OP_ERF: v = un(ctx, INGOT_IR_ERF, x); break;
    case INGOT_OP_SIN: v = un(ctx, INGOT_IR_SIN, x); break;
    case INGOT_OP_COS: v = un(ctx, INGOT_IR_COS, x); break;
    case INGOT_OP_TAN: v = un(ctx, INGOT_IR_TAN, x); break;
    case INGOT_OP_ASIN: v = un(ctx, INGOT_IR_ASIN, x); break;
    case INGOT_OP_ACOS: v = un(ctx, INGOT_IR_ACOS, x); break;
    case INGOT_OP_ATAN: v = un(ctx, INGOT_IR_ATAN, x); break;
    case INGOT_OP_SINH: v = un(ctx, INGOT_IR_SINH, x); break;
    case INGOT_OP_COSH: v = un(ctx, INGOT_IR_COSH, x); break;
    case INGOT_OP_ASINH: v = un(ctx, INGOT_IR_ASINH, x); break;
    case INGOT_OP_ACOSH: v = un(ctx, INGOT_IR_ACOSH, x); break;
    case INGOT_OP_ATANH: v = un(ctx, INGOT_IR_ATANH, x); break;
    case INGOT_OP_SIGN:
      /* 1, -1 or 0; NaN stays NaN (numpy). */
      if (t == INGOT_DTYPE_U8) {
        v = sel(ctx, bin(ctx, INGOT_IR_LT, K(0), x), K(1), K(0));
      } else {
        v = sel(ctx, bin(ctx, INGOT_IR_LT, K(0), x), K(1),
                sel(ctx, bin(ctx, INGOT_IR_LT, x, K(0)), K(-1), is_float ? x : K(0)));
      }
      break;
    case INGOT_OP_HARDSIGMOID:
    case INGOT_OP_HARDSWISH: {
      bool swish = op == INGOT_OP_HARDSWISH;
      if (swish) {
        alpha = 1.0 / 6.0;
        beta = 0.5;
      } else {
        alpha = up->alpha;
        beta = up->beta;
      }
      ingot_ir_expr_t* h = bin(ctx, INGOT_IR_ADD, bin(ctx, INGOT_IR_MUL, K(alpha), x), K(beta));
      h = bin(ctx, INGOT_IR_MAX, bin(ctx, INGOT_IR_MIN, h, K(1.0)), K(0.0));
      v = swish ? bin(ctx, INGOT_IR_MUL, x, h) : h;
      if (!swish) extra = ingot_arena_printf(ctx->arena, "alpha=%g beta=%g", alpha, beta);
      break;
    }
    case INGOT_OP_LEAKYRELU:
      alpha = up->alpha;
      v = sel(ctx, bin(ctx, INGOT_IR_LT, x, K(0.0)), bin(ctx, INGOT_IR_MUL, K(alpha), x), x);
      extra = ingot_arena_printf(ctx->arena, "alpha=%g", alpha);
      break;
    case INGOT_OP_ELU: {
      alpha = up->alpha;
      ingot_ir_expr_t* neg = bin(ctx, INGOT_IR_MUL, K(alpha), bin(ctx, INGOT_IR_SUB, un(ctx, INGOT_IR_EXP, x), K(1.0)));
      v = sel(ctx, bin(ctx, INGOT_IR_LT, x, K(0.0)), neg, x);
      extra = ingot_arena_printf(ctx->arena, "alpha=%g", alpha);
      break;
    }
    case INGOT_OP_SELU: {
      alpha = up->alpha;
      gamma = up->gamma;
      ingot_ir_expr_t* neg = bin(ctx, INGOT_IR_SUB, bin(ctx, INGOT_IR_MUL, K(alpha), un(ctx, INGOT_IR_EXP, x)), K(alpha));
      v = bin(ctx, INGOT_IR_MUL, K(gamma), sel(ctx, bin(ctx, INGOT_IR_LE, x, K(0.0)), neg, x));
      extra = ingot_arena_printf(ctx->arena, "alpha=%g gamma=%g", alpha, gamma);
      break;
    }
    case INGOT_OP_CELU: {
      alpha = up->alpha; /* not 0 (graph/params.c) */
      ingot_ir_expr_t* em = bin(ctx, INGOT_IR_SUB, un(ctx, INGOT_IR_EXP, bin(ctx, INGOT_IR_DIV, x, K(alpha))), K(1.0));
      v = bin(ctx, INGOT_IR_ADD, bin(ctx, INGOT_IR_MAX, x, K(0.0)),
              bin(ctx, INGOT_IR_MIN, K(0.0), bin(ctx, INGOT_IR_MUL, K(alpha), em)));
      extra = ingot_arena_printf(ctx->arena, "alpha=%g", alpha);
      break;
    }
    case INGOT_OP_GELU:
      v = lower_gelu(ctx, x, up->gelu_tanh);
      extra = ingot_arena_printf(ctx->arena, "approximate=%s", up->gelu_tanh ? "tanh" : "none");
      break;
    case INGOT_OP_SOFTPLUS: v = softplus(ctx, t, x); break;
    case INGOT_OP_SOFTSIGN:
      v = bin(ctx, INGOT_IR_DIV, x, bin(ctx, INGOT_IR_ADD, K(1.0), un(ctx, INGOT_IR_ABS, x)));
      break;
    case INGOT_OP_MISH: v = bin(ctx, INGOT_IR_MUL, x, un(ctx, INGOT_IR_TANH, softplus(ctx, t, x))); break;
    case INGOT_OP_THRESHOLDEDRELU:
      alpha = up->alpha;
      v = sel(ctx, bin(ctx, INGOT_IR_LT, K(alpha), x), x, K(0.0));
      extra = ingot_arena_printf(ctx->arena, "alpha=%g", alpha);
      break;
    case INGOT_OP_SHRINK: {
      /* x < -lambd: x + bias; x > lambd: x - bias; else 0 */
      double lambd = up->alpha, bias = up->beta;
      v = sel(ctx, bin(ctx, INGOT_IR_LT, x, K(-lambd)), bin(ctx, INGOT_IR_ADD, x, K(bias)),
              sel(ctx, bin(ctx, INGOT_IR_LT, K(lambd), x), bin(ctx, INGOT_IR_SUB, x, K(bias)), K(0.0)));
      extra = ingot_arena_printf(ctx->arena, "lambd=%g bias=%g", lambd, bias);
      break;
    }
    case INGOT_OP_SWISH: {
      /* x * sigmoid(alpha x), the sigmoid as 1 / (1 + e^-(alpha x)) */
      alpha = up->alpha;
      ingot_ir_expr_t* e = un(ctx, INGOT_IR_EXP, un(ctx, INGOT_IR_NEG, bin(ctx, INGOT_IR_MUL, K(alpha), x)));
      v = bin(ctx, INGOT_IR_MUL, x, bin(ctx, INGOT_IR_DIV, K(1.0), bin(ctx, INGOT_IR_ADD, K(1.0), e)));
      extra = ingot_arena_printf(ctx->arena, "alpha=%g", alpha);
      break;
    }
    default:
      return lower_fail(ctx, INGOT_ERROR_INTERNAL, "not a unary math op");
  }
  return ew_end(ctx, &e, v, extra);
}

ingot_status_t lower_isnan_isinf(lower_ctx_t* ctx) {
  ew_t e;
  ingot_status_t s = ew_begin(ctx, 1, LOWER_DT_FLOAT, true, &e);
  if (s) return s;
  ingot_dtype_t t = lower_value(ctx, e.values[0])->dtype;
  ingot_ir_expr_t* x = e.in[0];
  ingot_ir_expr_t* v;
  const char* extra = "";
  if (ctx->node->op == INGOT_OP_ISNAN) {
    v = bin(ctx, INGOT_IR_NE, x, x);
  } else {
    int64_t pos = ctx->params->u.unary.detect_positive, neg = ctx->params->u.unary.detect_negative;
    ingot_ir_expr_t* p = bin(ctx, INGOT_IR_EQ, x, K(INFINITY));
    ingot_ir_expr_t* n = bin(ctx, INGOT_IR_EQ, x, K(-INFINITY));
    if (pos && neg) v = bin(ctx, INGOT_IR_OR, p, n);
    else if (pos) v = p;
    else if (neg) v = n;
    else v = lower_const(ctx, INGOT_DTYPE_BOOL, 0);
    extra = ingot_arena_printf(ctx->arena, "pos=%d neg=%d", pos != 0, neg != 0);
  }
  return ew_end(ctx, &e, v, extra);
}

/* ---- comparisons, logic, Where ---- */

ingot_status_t lower_compare(lower_ctx_t* ctx) {
  ingot_op_t op = ctx->node->op;
  uint32_t allowed = op == INGOT_OP_EQUAL ? LOWER_DT_ANY : LOWER_DT_NUMERIC;
  ew_t e;
  ingot_status_t s = ew_begin(ctx, 2, allowed, true, &e);
  if (s) return s;
  ingot_ir_expr_t *a = e.in[0], *b = e.in[1], *v;
  switch (op) {
    case INGOT_OP_EQUAL: v = bin(ctx, INGOT_IR_EQ, a, b); break;
    case INGOT_OP_LESS: v = bin(ctx, INGOT_IR_LT, a, b); break;
    case INGOT_OP_GREATER: v = bin(ctx, INGOT_IR_LT, b, a); break;
    case INGOT_OP_LESSOREQUAL: v = bin(ctx, INGOT_IR_LE, a, b); break;
    case INGOT_OP_GREATEROREQUAL: v = bin(ctx, INGOT_IR_LE, b, a); break;
    default: return lower_fail(ctx, INGOT_ERROR_INTERNAL, "not a comparison");
  }
  return ew_end(ctx, &e, v, "");
}

ingot_status_t lower_logic(lower_ctx_t* ctx) {
  ingot_op_t op = ctx->node->op;
  ew_t e;
  ingot_status_t s = ew_begin(ctx, op == INGOT_OP_NOT ? 1 : 2, LOWER_DT(INGOT_DTYPE_BOOL), true, &e);
  if (s) return s;
  ingot_ir_expr_t* v;
  switch (op) {
    case INGOT_OP_NOT: v = un(ctx, INGOT_IR_NOT, e.in[0]); break;
    case INGOT_OP_AND: v = bin(ctx, INGOT_IR_AND, e.in[0], e.in[1]); break;
    case INGOT_OP_OR: v = bin(ctx, INGOT_IR_OR, e.in[0], e.in[1]); break;
    case INGOT_OP_XOR: v = bin(ctx, INGOT_IR_NE, e.in[0], e.in[1]); break;
    default: return lower_fail(ctx, INGOT_ERROR_INTERNAL, "not a logic op");
  }
  return ew_end(ctx, &e, v, "");
}

/* BitwiseAnd/Or/Xor/Not: the IR's bit operations on the integer type. */
ingot_status_t lower_bitwise(lower_ctx_t* ctx) {
  ingot_op_t op = ctx->node->op;
  ew_t e;
  ingot_status_t s = ew_begin(ctx, op == INGOT_OP_BITWISENOT ? 1 : 2, LOWER_DT_INT, true, &e);
  if (s) return s;
  ingot_ir_expr_t* v;
  switch (op) {
    case INGOT_OP_BITWISENOT: v = un(ctx, INGOT_IR_BITNOT, e.in[0]); break;
    case INGOT_OP_BITWISEAND: v = bin(ctx, INGOT_IR_BITAND, e.in[0], e.in[1]); break;
    case INGOT_OP_BITWISEOR: v = bin(ctx, INGOT_IR_BITOR, e.in[0], e.in[1]); break;
    case INGOT_OP_BITWISEXOR: v = bin(ctx, INGOT_IR_BITXOR, e.in[0], e.in[1]); break;
    default: return lower_fail(ctx, INGOT_ERROR_INTERNAL, "not a bitwise op");
  }
  return ew_end(ctx, &e, v, "");
}

/* BitCast: a copy of the bytes, both tensors read and written as the
 * integer type of their width (uint8, uint16, int32, int64). */
ingot_status_t lower_bitcast(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0), y = ctx->node->outputs[0];
  if ((s = lower_refuse_activation(ctx)) || (s = lower_check_value_dt(ctx, x, LOWER_DT_ANY)) ||
      (s = lower_check_value_dt(ctx, y, LOWER_DT_ANY))) {
    return s;
  }
  const ingot_value_t* xv = lower_value(ctx, x);
  size_t width = ingot_dtype_size(xv->dtype);
  if (width != ingot_dtype_size(lower_value(ctx, y)->dtype)) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "input and output differ in width");
  }
  ingot_dtype_t carrier = width == 1   ? INGOT_DTYPE_U8
                          : width == 2 ? INGOT_DTYPE_U16
                          : width == 4 ? INGOT_DTYPE_I32
                                       : INGOT_DTYPE_I64;
  if (width != 1 && width != 2 && width != 4 && width != 8) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "%zu-byte elements are not supported", width);
  }
  uint32_t bx = lower_add_arg_as(ctx, x, "x", false, carrier);
  uint32_t by = lower_add_arg_as(ctx, y, "y", true, carrier);
  ingot_ir_func_t* f = ctx->f;
  lower_loops_t l;
  lower_loops_over(ctx, &l, xv->rank, xv->dims);
  ingot_ir_expr_t* flat = ingot_ir_flat_index(f, by, l.idx);
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &l, NULL,
                   ingot_ir_store(f, by, flat, ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, l.idx))));
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE;
  ctx->workload = ingot_arena_printf(ctx->arena, "bitcast %s x=%s", ingot_dtype_name(carrier), lower_shape_str(ctx, x));
  return INGOT_OK;
}

ingot_status_t lower_where(lower_ctx_t* ctx) {
  ew_t e;
  ingot_status_t s = ew_begin(ctx, 3, LOWER_DT(INGOT_DTYPE_BOOL), false, &e);
  if (s) return s;
  if (lower_value(ctx, e.values[1])->dtype != lower_value(ctx, e.values[2])->dtype) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "X and Y differ in dtype");
  }
  return ew_end(ctx, &e, sel(ctx, e.in[0], e.in[1], e.in[2]), "");
}

/* ---- Cast, CastLike ----
 * float8 in: decoded to float32 (exact), then as from float32. float8 out:
 * from float32 or float64 (other dtypes through float32), rounded to nearest
 * even by lower_f8_encode, with attribute saturate (default 1). int4 / uint4
 * out: as an integer (floats truncated toward zero), wrapped to 4 bits:
 * 9 -> int4 -7, uint4 9 (ONNX's rule for integers; for an out-of-range float,
 * which ONNX leaves undefined, what the node tests' data expect). */

ingot_status_t lower_cast(lower_ctx_t* ctx) {
  ew_t e;
  ingot_status_t s = ew_begin(ctx, 1, LOWER_DT_ANY | LOWER_DT_HALF | LOWER_DT_NARROW, true, &e);
  if (s) return s;
  ingot_ir_func_t* f = ctx->f;
  ingot_dtype_t to = lower_value(ctx, e.y)->dtype;
  ingot_dtype_t from_graph = lower_value(ctx, e.values[0])->dtype;
  ingot_ir_expr_t* x = e.in[0];
  ingot_dtype_t from = x->dtype; /* the storage dtype: uint8 for a float8 */
  const char* extra = ingot_arena_printf(ctx->arena, "to=%s", ingot_dtype_name(to));
  if (to == from_graph) return ew_end(ctx, &e, x, extra);
  if (LOWER_DT(from_graph) & LOWER_DT_F8) {
    x = lower_f8_decode(ctx, from_graph, x);
    from = INGOT_DTYPE_F32;
  }
  if ((LOWER_DT(from) & LOWER_DT_HALF) && to != INGOT_DTYPE_F32) {
    x = ingot_ir_cast(f, INGOT_DTYPE_F32, x); /* float16 / bfloat16 convert through float32 */
    from = INGOT_DTYPE_F32;
  }
  ingot_ir_expr_t* v;
  if (LOWER_DT(to) & LOWER_DT_F8) {
    if (from != INGOT_DTYPE_F32 && from != INGOT_DTYPE_F64) x = ingot_ir_cast(f, INGOT_DTYPE_F32, x);
    bool saturate = ingot_node_attr_int(ctx->node, "saturate", 1) != 0;
    v = lower_f8_encode(ctx, to, x, saturate);
    extra = ingot_arena_printf(ctx->arena, "to=%s%s", ingot_dtype_name(to), saturate ? "" : " no_saturate");
  } else if (LOWER_DT(to) & LOWER_DT_INT4) {
    ingot_ir_expr_t* i = ingot_ir_cast(f, INGOT_DTYPE_I64, x); /* float -> int truncates toward zero */
    if (to == INGOT_DTYPE_I4) {
      i = bin(ctx, INGOT_IR_SUB, bin(ctx, INGOT_IR_MOD, bin(ctx, INGOT_IR_ADD, i, ingot_ir_int(f, 8)), ingot_ir_int(f, 16)),
              ingot_ir_int(f, 8));
    } else {
      i = bin(ctx, INGOT_IR_MOD, i, ingot_ir_int(f, 16));
    }
    v = ingot_ir_cast(f, lower_storage_dtype(to), i);
  } else if (to == INGOT_DTYPE_BOOL && from != INGOT_DTYPE_BOOL) {
    v = bin(ctx, INGOT_IR_NE, x, lower_const(ctx, from, 0));  /* NaN -> true, as C and ONNX Runtime */
  } else {
    v = ingot_ir_cast(f, to, x);  /* float -> int truncates toward zero */
  }
  return ew_end(ctx, &e, v, extra);
}

/* ---- Pow ---- */

ingot_status_t lower_pow(lower_ctx_t* ctx) {
  ew_t e;
  ingot_status_t s = ew_begin(ctx, 2, LOWER_DT_FLOAT | LOWER_DT(INGOT_DTYPE_I64) | LOWER_DT(INGOT_DTYPE_I32), false, &e);
  if (s) return s;
  if ((s = lower_check_dtype(ctx, e.values[1], LOWER_DT_NUMERIC))) return s;
  ingot_ir_func_t* f = ctx->f;
  ingot_ir_expr_t *x = e.in[0], *y = e.in[1], *v;
  ingot_dtype_t t = x->dtype, ty = y->dtype;
  double exponent = 0;
  if (lower_dtype_is_float(t) && lower_weight_scalar(ctx, e.values[1], &exponent) && exponent == 2.0) {
    /* x^2 as x*x: exactly the correctly rounded square pow gives (the
     * variance in a decomposed LayerNorm). */
    return ew_end(ctx, &e, bin(ctx, INGOT_IR_MUL, x, x), "square");
  }
  if (lower_dtype_is_float(t)) {
    v = bin(ctx, INGOT_IR_POW, x, ingot_ir_cast(f, t, y));
  } else if (lower_dtype_is_float(ty)) {
    /* An integer base with a float exponent: in the exponent's type, then
     * truncated toward zero. */
    v = ingot_ir_cast(f, t, bin(ctx, INGOT_IR_POW, ingot_ir_cast(f, ty, x), y));
  } else {
    ingot_ir_expr_t* p = bin(ctx, INGOT_IR_POW, ingot_ir_cast(f, INGOT_DTYPE_I64, x), ingot_ir_cast(f, INGOT_DTYPE_I64, y));
    v = ingot_ir_cast(f, t, p);
  }
  return ew_end(ctx, &e, v, ingot_arena_printf(ctx->arena, "exp=%s", ingot_dtype_name(ty)));
}

/* ---- Min, Max, Sum, Mean (variadic) ---- */

ingot_status_t lower_variadic(lower_ctx_t* ctx) {
  ingot_op_t op = ctx->node->op;
  uint32_t allowed = op == INGOT_OP_MEAN ? LOWER_DT_FLOAT
                     : op == INGOT_OP_SUM ? LOWER_DT_NUMERIC
                                          : LOWER_DT_NUMERIC | LOWER_DT_F16_ARITH;
  ew_t e;
  ingot_status_t s = ew_begin(ctx, 0, allowed, true, &e);
  if (s) return s;
  if (e.n == 0) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "needs at least one input");
  ingot_ir_binary_op_t bop = op == INGOT_OP_MIN ? INGOT_IR_MIN : op == INGOT_OP_MAX ? INGOT_IR_MAX : INGOT_IR_ADD;
  ingot_ir_expr_t* v = e.in[0];
  for (uint32_t i = 1; i < e.n; ++i) v = bin(ctx, bop, v, e.in[i]);
  if (op == INGOT_OP_MEAN) {
    ingot_dtype_t t = v->dtype;
    v = bin(ctx, INGOT_IR_DIV, v, K((double)e.n));
  }
  return ew_end(ctx, &e, v, "");
}

/* ---- Mod ---- */

/* Integer a mod b with the sign of the dividend (C's %), from the floor mod. */
static ingot_ir_expr_t* trunc_mod(lower_ctx_t* ctx, ingot_ir_expr_t* a, ingot_ir_expr_t* b) {
  ingot_dtype_t t = a->dtype;
  ingot_ir_expr_t* r = bin(ctx, INGOT_IR_MOD, a, b);
  if (t == INGOT_DTYPE_U8) return r;
  ingot_ir_expr_t* fix = lower_and(ctx, bin(ctx, INGOT_IR_NE, r, K(0)),
                                   bin(ctx, INGOT_IR_NE, bin(ctx, INGOT_IR_LT, r, K(0)), bin(ctx, INGOT_IR_LT, a, K(0))));
  return sel(ctx, fix, bin(ctx, INGOT_IR_SUB, r, b), r);
}

ingot_status_t lower_mod(lower_ctx_t* ctx) {
  ew_t e;
  ingot_status_t s = ew_begin(ctx, 2, LOWER_DT_NUMERIC, true, &e);
  if (s) return s;
  int64_t fmod_attr = ctx->params->u.unary.fmod; /* 1 for float inputs (graph/params.c) */
  ingot_dtype_t t = e.in[0]->dtype;
  ingot_ir_expr_t* v;
  if (lower_dtype_is_float(t)) {
    v = bin(ctx, INGOT_IR_MOD, e.in[0], e.in[1]);  /* C fmod: the sign of the dividend */
  } else {
    v = fmod_attr ? trunc_mod(ctx, e.in[0], e.in[1]) : bin(ctx, INGOT_IR_MOD, e.in[0], e.in[1]);
  }
  return ew_end(ctx, &e, v, ingot_arena_printf(ctx->arena, "fmod=%d", fmod_attr != 0));
}

/* ---- PRelu ---- */

/* Before opset 7 a 1-D slope of C entries is per channel (axis 1), where
 * numpy broadcasting would not apply. */
static bool prelu_per_channel(lower_ctx_t* ctx) {
  uint32_t x = lower_input(ctx, 0), slope = lower_input(ctx, 1);
  if (x == INGOT_NO_VALUE || slope == INGOT_NO_VALUE) return false;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* sv = lower_value(ctx, slope);
  if (ctx->graph->opset <= 0 || ctx->graph->opset >= 7 || sv->rank != 1 || xv->rank < 2) return false;
  bool numpy = sv->dims[0] == 1 || sv->dims[0] == xv->dims[xv->rank - 1];
  return !numpy && sv->dims[0] == xv->dims[1];
}

ingot_status_t lower_prelu(lower_ctx_t* ctx) {
  ew_t e;
  ingot_status_t s = ew_begin_ex(ctx, 2, LOWER_DT_SIGNED, true, prelu_per_channel(ctx) ? 1 : UINT32_MAX, &e);
  if (s) return s;
  ingot_ir_expr_t *x = e.in[0], *slope = e.in[1];
  ingot_dtype_t t = x->dtype;
  ingot_ir_expr_t* v = sel(ctx, bin(ctx, INGOT_IR_LT, x, K(0)), bin(ctx, INGOT_IR_MUL, slope, x), x);
  return ew_end(ctx, &e, v, "");
}

/* ---- BitShift (uint8/16/32/64): x * 2^y, x / 2^y computed in int64 (the
 * narrower types fit) or, for uint64, in uint64 (the IR's multiply wraps
 * and its uint64 division is unsigned); a shift by the width or more: 0 ---- */

ingot_status_t lower_bitshift(lower_ctx_t* ctx) {
  ew_t e;
  uint32_t allowed = LOWER_DT(INGOT_DTYPE_U8) | LOWER_DT(INGOT_DTYPE_U16) | LOWER_DT(INGOT_DTYPE_U32) |
                     LOWER_DT(INGOT_DTYPE_U64);
  ingot_status_t s = ew_begin(ctx, 2, allowed, true, &e);
  if (s) return s;
  bool left = ctx->params->u.unary.shift_left; /* direction (graph/params.c) */
  ingot_ir_func_t* f = ctx->f;
  ingot_dtype_t t = e.in[0]->dtype;
  int64_t width = (int64_t)ingot_dtype_size(t) * 8;
  ingot_dtype_t wt = t == INGOT_DTYPE_U64 ? INGOT_DTYPE_U64 : INGOT_DTYPE_I64;
  ingot_ir_expr_t* x = ingot_ir_cast(f, wt, e.in[0]);
  ingot_ir_expr_t* y = ingot_ir_cast(f, wt, e.in[1]);
  ingot_ir_expr_t* big = bin(ctx, INGOT_IR_LE, lower_const(ctx, wt, (double)width), y);
  ingot_ir_expr_t* y2 = ingot_ir_cast(f, wt, e.in[1]);
  ingot_ir_expr_t* p = bin(ctx, INGOT_IR_POW, lower_const(ctx, wt, 2.0), bin(ctx, INGOT_IR_MIN, y2, lower_const(ctx, wt, (double)(width - 1))));
  ingot_ir_expr_t* r = left ? bin(ctx, INGOT_IR_MUL, x, p) : bin(ctx, INGOT_IR_DIV, x, p);
  r = sel(ctx, big, lower_const(ctx, wt, 0.0), r);
  return ew_end(ctx, &e, ingot_ir_cast(f, t, r), ingot_arena_printf(ctx->arena, "%s", left ? "left" : "right"));
}
#undef K
