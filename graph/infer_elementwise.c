/* Dtype and shape inference of the elementwise family added for the node
 * suite: unary math and activations, comparisons and logic, Where, Cast /
 * CastLike, Pow, the variadic Min/Max/Sum/Mean, Mod, PRelu, IsNaN/IsInf,
 * BitShift. Shapes broadcast multidirectionally (numpy rules) except PRelu,
 * whose slope broadcasts to X. Which dtypes each op supports is decided by
 * its lowering (lower/lower_math.c); here only what the spec makes invalid is
 * refused. */
#include <stdio.h>
#include <string.h>

#include "graph/graph.h"
#include "graph_internal.h"
#include "infer_internal.h"

/* Broadcasts every present input from `first` on into dims/rank. */
static ingot_status_t broadcast_all(const infer_ctx_t* c, uint32_t first, int32_t* out_rank, int64_t* dims) {
  int32_t rank = 0;
  for (uint32_t i = first; i < c->n->input_count; ++i) {
    const ingot_value_t* v = infer_input(c, i);
    if (v && v->rank > rank) rank = v->rank;
  }
  for (int32_t d = 0; d < rank; ++d) dims[d] = 1;
  for (uint32_t i = first; i < c->n->input_count; ++i) {
    const ingot_value_t* v = infer_input(c, i);
    if (!v) continue;
    for (int32_t d = 0; d < v->rank; ++d) {
      int32_t o = rank - v->rank + d;
      int64_t x = v->dims[d];
      if (x == dims[o] || x == 1) continue;
      if (dims[o] != 1) {
        char s[128];
        infer_shape_str(v, s, sizeof(s));
        return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT,
                          "input %u of shape %s does not broadcast with the others (dimension %d: %lld vs %lld)", i, s,
                          o, (long long)x, (long long)dims[o]);
      }
      dims[o] = x;
    }
  }
  *out_rank = rank;
  return INGOT_OK;
}

static ingot_status_t same_dtype(const infer_ctx_t* c, uint32_t first) {
  const ingot_value_t* a = infer_input(c, first);
  for (uint32_t i = first + 1; i < c->n->input_count; ++i) {
    const ingot_value_t* v = infer_input(c, i);
    if (v && v->dtype != a->dtype) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "inputs have different types (%s, %s)",
                        ingot_graph_dtype_name(a->dtype), ingot_graph_dtype_name(v->dtype));
    }
  }
  return INGOT_OK;
}

/* Same type and shape as input 0. */
static ingot_status_t unary(infer_ctx_t* c) {
  infer_copy_output(c, 0, infer_input(c, 0));
  return INGOT_OK;
}

/* Every input the same type, broadcast; the output has type `out` (INVALID:
 * the inputs' type). */
static ingot_status_t nary(infer_ctx_t* c, ingot_dtype_t out) {
  ingot_status_t s = same_dtype(c, 0);
  if (s) return s;
  int64_t dims[INGOT_MAX_RANK];
  int32_t rank;
  if ((s = broadcast_all(c, 0, &rank, dims))) return s;
  infer_set_output(c, 0, out == INGOT_DTYPE_INVALID ? infer_input(c, 0)->dtype : out, rank, dims);
  return INGOT_OK;
}

static ingot_status_t bool_inputs(infer_ctx_t* c) {
  for (uint32_t i = 0; i < c->n->input_count; ++i) {
    const ingot_value_t* v = infer_input(c, i);
    if (v && v->dtype != INGOT_DTYPE_BOOL) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input %u must be bool, not %s", i,
                        ingot_graph_dtype_name(v->dtype));
    }
  }
  return INGOT_OK;
}

#define UNARY(ID) \
  ingot_status_t infer_##ID(infer_ctx_t* c) { return unary(c); }
UNARY(ABS)
UNARY(NEG)
UNARY(EXP)
UNARY(LOG)
UNARY(SQRT)
UNARY(RECIPROCAL)
UNARY(FLOOR)
UNARY(CEIL)
UNARY(ROUND)
UNARY(SIGN)
UNARY(ERF)
UNARY(SIN)
UNARY(COS)
UNARY(TAN)
UNARY(ASIN)
UNARY(ACOS)
UNARY(ATAN)
UNARY(SINH)
UNARY(COSH)
UNARY(ASINH)
UNARY(ACOSH)
UNARY(ATANH)
UNARY(HARDSIGMOID)
UNARY(HARDSWISH)
UNARY(LEAKYRELU)
UNARY(ELU)
UNARY(SELU)
UNARY(CELU)
UNARY(GELU)
UNARY(SOFTPLUS)
UNARY(SOFTSIGN)
UNARY(MISH)
UNARY(THRESHOLDEDRELU)
UNARY(SHRINK)
UNARY(SWISH)
#undef UNARY

ingot_status_t infer_NOT(infer_ctx_t* c) {
  ingot_status_t s = bool_inputs(c);
  if (s) return s;
  return unary(c);
}

static ingot_status_t bool_of_shape(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  infer_set_output(c, 0, INGOT_DTYPE_BOOL, x->rank, x->dims);
  return INGOT_OK;
}
ingot_status_t infer_ISNAN(infer_ctx_t* c) { return bool_of_shape(c); }
ingot_status_t infer_ISINF(infer_ctx_t* c) { return bool_of_shape(c); }

ingot_status_t infer_EQUAL(infer_ctx_t* c) { return nary(c, INGOT_DTYPE_BOOL); }
ingot_status_t infer_LESS(infer_ctx_t* c) { return nary(c, INGOT_DTYPE_BOOL); }
ingot_status_t infer_GREATER(infer_ctx_t* c) { return nary(c, INGOT_DTYPE_BOOL); }
ingot_status_t infer_LESSOREQUAL(infer_ctx_t* c) { return nary(c, INGOT_DTYPE_BOOL); }
ingot_status_t infer_GREATEROREQUAL(infer_ctx_t* c) { return nary(c, INGOT_DTYPE_BOOL); }

static ingot_status_t logic(infer_ctx_t* c) {
  ingot_status_t s = bool_inputs(c);
  if (s) return s;
  return nary(c, INGOT_DTYPE_BOOL);
}
ingot_status_t infer_AND(infer_ctx_t* c) { return logic(c); }
ingot_status_t infer_OR(infer_ctx_t* c) { return logic(c); }
ingot_status_t infer_XOR(infer_ctx_t* c) { return logic(c); }

ingot_status_t infer_MIN(infer_ctx_t* c) { return nary(c, INGOT_DTYPE_INVALID); }

/* FusedElementwise (domain ai.ingot, ingot_graph_fuse_elementwise): float32
 * inputs broadcast together, as the chain of broadcasting ops it stands for
 * does; "program" holds three ints a step, "params" two floats a step, and
 * "qtypes" (with QuantizeLinear / DequantizeLinear steps) one int a step. */
ingot_status_t infer_fused_elementwise(infer_ctx_t* c) {
  uint32_t count = 0, pcount = 0;
  const int64_t* prog = ingot_node_attr_ints(c->n, "program", &count);
  const ingot_attr_t* params = ingot_node_attr(c->n, "params");
  if (params && params->type == INGOT_ATTR_FLOATS) pcount = params->count;
  if (!prog || count == 0 || count % 3 != 0 || pcount != 2 * (count / 3)) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "malformed program (%u ints, %u params)", count, pcount);
  }
  uint32_t qcount = 0;
  const int64_t* qtypes = ingot_node_attr_ints(c->n, "qtypes", &qcount);
  if (qtypes) {
    /* with quantization steps: float32 inputs, or the bytes a
     * DequantizeLinear step reads (lower/lower_elementwise.c checks which);
     * the output float32, or the last step's bytes where it quantizes */
    if (qcount != count / 3) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "malformed qtypes (%u)", qcount);
    for (uint32_t i = 0; i < c->n->input_count; ++i) {
      const ingot_value_t* v = infer_input(c, i);
      if (!v || (v->dtype != INGOT_DTYPE_F32 && v->dtype != INGOT_DTYPE_U8 && v->dtype != INGOT_DTYPE_I8))
        return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input %u must be float32, uint8 or int8", i);
    }
    int64_t last = prog[count - 3], qt = qtypes[qcount - 1] & 0xff; /* less INGOT_FUSED_Q_RECIPROCAL */
    ingot_dtype_t out = INGOT_DTYPE_F32;
    if (last == (int64_t)INGOT_OP_QUANTIZELINEAR) {
      if (qt != (int64_t)INGOT_DTYPE_U8 && qt != (int64_t)INGOT_DTYPE_I8)
        return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "the last step quantizes to dtype %lld", (long long)qt);
      out = (ingot_dtype_t)qt;
    }
    int64_t dims[INGOT_MAX_RANK];
    int32_t rank;
    ingot_status_t s = broadcast_all(c, 0, &rank, dims);
    if (s) return s;
    infer_set_output(c, 0, out, rank, dims);
    return INGOT_OK;
  }
  /* float32, or float16 (graph->half_arith), every input the same */
  const ingot_value_t* first = infer_input(c, 0);
  for (uint32_t i = 0; i < c->n->input_count; ++i) {
    const ingot_value_t* v = infer_input(c, i);
    if (!v || !first || (v->dtype != INGOT_DTYPE_F32 && v->dtype != INGOT_DTYPE_F16) || v->dtype != first->dtype) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input %u must be float32 (or float16, as every input)", i);
    }
  }
  return nary(c, INGOT_DTYPE_INVALID);
}
ingot_status_t infer_MAX(infer_ctx_t* c) { return nary(c, INGOT_DTYPE_INVALID); }
ingot_status_t infer_SUM(infer_ctx_t* c) { return nary(c, INGOT_DTYPE_INVALID); }
ingot_status_t infer_MEAN(infer_ctx_t* c) { return nary(c, INGOT_DTYPE_INVALID); }
ingot_status_t infer_MOD(infer_ctx_t* c) { return nary(c, INGOT_DTYPE_INVALID); }
ingot_status_t infer_BITSHIFT(infer_ctx_t* c) { return nary(c, INGOT_DTYPE_INVALID); }

/* BitwiseAnd, BitwiseOr, BitwiseXor (broadcast) and BitwiseNot: integer
 * inputs of one type, the output of that type. */
ingot_status_t infer_bitwise(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  if (infer_is_float(x->dtype) || x->dtype == INGOT_DTYPE_BOOL) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "inputs must be integers, not %s",
                      ingot_graph_dtype_name(x->dtype));
  }
  return c->n->op == INGOT_OP_BITWISENOT ? unary(c) : nary(c, INGOT_DTYPE_INVALID);
}

/* Pow: base and exponent may differ in type; the output has the base's. */
ingot_status_t infer_POW(infer_ctx_t* c) {
  int64_t dims[INGOT_MAX_RANK];
  int32_t rank;
  ingot_status_t s = broadcast_all(c, 0, &rank, dims);
  if (s) return s;
  infer_set_output(c, 0, infer_input(c, 0)->dtype, rank, dims);
  return INGOT_OK;
}

ingot_status_t infer_WHERE(infer_ctx_t* c) {
  const ingot_value_t* cond = infer_input(c, 0);
  if (cond->dtype != INGOT_DTYPE_BOOL) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "condition must be bool, not %s",
                      ingot_graph_dtype_name(cond->dtype));
  }
  ingot_status_t s = same_dtype(c, 1);
  if (s) return s;
  int64_t dims[INGOT_MAX_RANK];
  int32_t rank;
  if ((s = broadcast_all(c, 0, &rank, dims))) return s;
  infer_set_output(c, 0, infer_input(c, 1)->dtype, rank, dims);
  return INGOT_OK;
}

/* PRelu: the slope broadcasts to X (unidirectionally). */
ingot_status_t infer_PRELU(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  const ingot_value_t* slope = infer_input(c, 1);
  ingot_status_t s = same_dtype(c, 0);
  if (s) return s;
  bool ok = slope->rank <= x->rank;
  for (int32_t d = 0; ok && d < slope->rank; ++d) {
    int64_t sd = slope->dims[d], xd = x->dims[x->rank - slope->rank + d];
    ok = sd == 1 || sd == xd;
  }
  /* Before opset 7 a 1-D slope of C entries is per channel (axis 1). */
  if (!ok && c->g->opset > 0 && c->g->opset < 7 && slope->rank == 1 && x->rank >= 2 && slope->dims[0] == x->dims[1]) {
    ok = true;
  }
  if (!ok) {
    char a[128], b[128];
    infer_shape_str(slope, a, sizeof(a));
    infer_shape_str(x, b, sizeof(b));
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "slope of shape %s does not broadcast to X of shape %s", a, b);
  }
  infer_copy_output(c, 0, x);
  return INGOT_OK;
}

/* ONNX TensorProto.DataType -> ours; INVALID for types we do not have. */
ingot_dtype_t infer_onnx_dtype(int64_t t) {
  switch (t) {
    case 1: return INGOT_DTYPE_F32;
    case 2: return INGOT_DTYPE_U8;
    case 3: return INGOT_DTYPE_I8;
    case 6: return INGOT_DTYPE_I32;
    case 7: return INGOT_DTYPE_I64;
    case 9: return INGOT_DTYPE_BOOL;
    case 4: return INGOT_DTYPE_U16;
    case 5: return INGOT_DTYPE_I16;
    case 10: return INGOT_DTYPE_F16;
    case 11: return INGOT_DTYPE_F64;
    case 12: return INGOT_DTYPE_U32;
    case 13: return INGOT_DTYPE_U64;
    case 16: return INGOT_DTYPE_BF16;
    case 17: return INGOT_DTYPE_F8E4M3FN;
    case 18: return INGOT_DTYPE_F8E4M3FNUZ;
    case 19: return INGOT_DTYPE_F8E5M2;
    case 20: return INGOT_DTYPE_F8E5M2FNUZ;
    case 21: return INGOT_DTYPE_U4;
    case 22: return INGOT_DTYPE_I4;
    default: return INGOT_DTYPE_INVALID;
  }
}

/* The dtype of attribute 'to' (Cast, BitCast). */
static ingot_status_t cast_target(infer_ctx_t* c, ingot_dtype_t* out) {
  const ingot_attr_t* to = ingot_node_attr(c->n, "to");
  if (!to || to->type != INGOT_ATTR_INT) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'to' (an int) is required");
  }
  *out = infer_onnx_dtype(to->i);
  if (*out == INGOT_DTYPE_INVALID) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED,
                      "attribute 'to' = %lld: that target dtype is not supported (float, double, float16, bfloat16, "
                      "float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz, int64, int32, int16, int8, int4, "
                      "uint64, uint32, uint16, uint8, uint4, bool are)",
                      (long long)to->i);
  }
  return INGOT_OK;
}

ingot_status_t infer_CAST(infer_ctx_t* c) {
  ingot_dtype_t t;
  ingot_status_t s = cast_target(c, &t);
  if (s) return s;
  const ingot_value_t* x = infer_input(c, 0);
  infer_set_output(c, 0, t, x->rank, x->dims);
  return INGOT_OK;
}

/* BitCast: the same bytes as dtype 'to', which must be as wide. */
ingot_status_t infer_bitcast(infer_ctx_t* c) {
  ingot_dtype_t t;
  ingot_status_t s = cast_target(c, &t);
  if (s) return s;
  const ingot_value_t* x = infer_input(c, 0);
  if (ingot_graph_dtype_size(t) != ingot_graph_dtype_size(x->dtype)) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "%s and %s differ in width", ingot_graph_dtype_name(x->dtype),
                      ingot_graph_dtype_name(t));
  }
  infer_set_output(c, 0, t, x->rank, x->dims);
  return INGOT_OK;
}

ingot_status_t infer_CASTLIKE(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  infer_set_output(c, 0, infer_input(c, 1)->dtype, x->rank, x->dims);
  return INGOT_OK;
}
