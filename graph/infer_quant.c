/* Shape inference and typed parameters of the quantization ops:
 * QuantizeLinear, DequantizeLinear (opsets 10 to 25: per-tensor, per-axis
 * and blocked scales), DynamicQuantizeLinear, QLinearConv and QLinearMatMul
 * (x / a and y per tensor; w / b per tensor or per output channel), and
 * ONNX Runtime's com.microsoft QLinearAdd, QLinearMul, QLinearSigmoid,
 * QLinearGlobalAveragePool, QLinearConcat and QGemm (scales per tensor;
 * QGemm's b per tensor or per column). The quantized dtypes are
 * uint8 and int8; QuantizeLinear and DequantizeLinear also take int16,
 * uint16, int4, uint4 and the four float8s (DequantizeLinear also reads
 * int32); the float side is float32. Other dtypes the ONNX schemas allow
 * (float16 and bfloat16 scales, int2, uint2, float4, ...) are refused here,
 * naming the dtype. */
#include <string.h>

#include "graph_internal.h"
#include "infer_internal.h"

/* The name of an ONNX TensorProto.DataType code, for messages. */
static const char* onnx_type_name(int64_t t) {
  static const char* const kNames[] = {
      "undefined", "float", "uint8", "int8", "uint16", "int16", "int32", "int64", "string", "bool",
      "float16", "double", "uint32", "uint64", "complex64", "complex128", "bfloat16", "float8e4m3fn",
      "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "uint4", "int4", "float4e2m1", "float8e8m0", "uint2",
      "int2"};
  return t >= 0 && t < (int64_t)(sizeof(kNames) / sizeof(kNames[0])) ? kNames[t] : "unknown";
}

/* The quantized dtypes of QuantizeLinear's y and DequantizeLinear's x. */
static bool quant_dtype_ok(ingot_dtype_t t) {
  switch (t) {
    case INGOT_DTYPE_U8: case INGOT_DTYPE_I8: case INGOT_DTYPE_U16: case INGOT_DTYPE_I16:
    case INGOT_DTYPE_U4: case INGOT_DTYPE_I4:
    case INGOT_DTYPE_F8E4M3FN: case INGOT_DTYPE_F8E4M3FNUZ: case INGOT_DTYPE_F8E5M2: case INGOT_DTYPE_F8E5M2FNUZ:
      return true;
    default: return false;
  }
}
#define QUANT_DTYPE_LIST "uint8, int8, uint16, int16, uint4, int4, float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz"

static const ingot_value_t* quant_input(const ingot_graph_t* graph, const ingot_node_t* n, uint32_t i) {
  if (i >= n->input_count || n->inputs[i] == INGOT_NO_VALUE || n->inputs[i] >= graph->value_count) return NULL;
  return &graph->values[n->inputs[i]];
}

static ingot_status_t quant_int_attr(const ingot_node_t* n, const char* name, int64_t fallback, int64_t* out) {
  const ingot_attr_t* a = ingot_node_attr(n, name);
  if (a && a->type != INGOT_ATTR_INT) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute '%s' must be an int", name);
  }
  *out = a ? a->i : fallback;
  return INGOT_OK;
}

static ingot_status_t shape_mismatch(const ingot_node_t* n, const char* what, const ingot_value_t* s,
                                     const ingot_value_t* x, const char* why) {
  char a[128], b[128];
  infer_shape_str(s, a, sizeof(a));
  infer_shape_str(x, b, sizeof(b));
  return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "%s '%s' of shape %s does not fit x of shape %s: %s", what,
                    s->name, a, b, why);
}

/* Which of per-tensor, per-axis and blocked the scale's shape makes. */
static ingot_status_t parse_granularity(const ingot_node_t* n, const ingot_value_t* x, const ingot_value_t* scale,
                                        ingot_quant_params_t* out) {
  int64_t axis = 1, block = 0;
  ingot_status_t s;
  if ((s = quant_int_attr(n, "axis", 1, &axis)) || (s = quant_int_attr(n, "block_size", 0, &block))) return s;
  if (block < 0) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'block_size' = %lld must be >= 0", (long long)block);
  }
  if (block == 0 && scale->rank <= 1 && ingot_value_numel(scale) == 1) {
    out->granularity = INGOT_QUANT_PER_TENSOR;
    return INGOT_OK;
  }
  if (x->rank < 1) return shape_mismatch(n, "scale", scale, x, "a scalar x takes one scale");
  if (axis < -(int64_t)x->rank || axis >= x->rank) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'axis' = %lld is out of range for rank %d",
                      (long long)axis, x->rank);
  }
  out->axis = (int32_t)(axis < 0 ? axis + x->rank : axis);
  int64_t len = x->dims[out->axis];
  if (block == 0) {
    if (scale->rank != 1 || scale->dims[0] != len) {
      return shape_mismatch(n, "scale", scale, x,
                            "per-axis scales are 1-D with x's length along axis (and per-tensor ones one element)");
    }
    out->granularity = INGOT_QUANT_PER_AXIS;
    return INGOT_OK;
  }
  if (scale->rank != x->rank) return shape_mismatch(n, "scale", scale, x, "blocked scales have x's rank");
  for (int32_t d = 0; d < x->rank; ++d) {
    int64_t want = d == out->axis ? (x->dims[d] + block - 1) / block : x->dims[d];
    if (scale->dims[d] != want) {
      return shape_mismatch(n, "scale", scale, x,
                            "blocked scales have x's dims but ceil(length / block_size) along axis");
    }
  }
  out->granularity = INGOT_QUANT_BLOCKED;
  out->block_size = block;
  return INGOT_OK;
}

ingot_status_t params_parse_quant(const ingot_graph_t* graph, uint32_t node, ingot_quant_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  bool quantize = n->op == INGOT_OP_QUANTIZELINEAR;
  const ingot_value_t* x = quant_input(graph, n, 0);
  const ingot_value_t* scale = quant_input(graph, n, 1);
  const ingot_value_t* zp = quant_input(graph, n, 2);
  if (!x || !scale) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "inputs x and scale are required");
  if (x->rank < 0 || scale->rank < 0 || (zp && zp->rank < 0)) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "the shapes of x, scale and zero point must be known");
  }
  memset(out, 0, sizeof(*out));
  out->has_zero_point = zp != NULL;
  if (scale->dtype != INGOT_DTYPE_F32) {
    return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "scale '%s' has dtype %s: only float32 scales are supported",
                      scale->name, ingot_graph_dtype_name(scale->dtype));
  }
  int64_t attr = 0;
  ingot_status_t s;
  if (quantize) {
    if (x->dtype != INGOT_DTYPE_F32 && x->dtype != INGOT_DTYPE_I32) {
      return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "x '%s' has dtype %s: float32 and int32 are supported", x->name,
                        ingot_graph_dtype_name(x->dtype));
    }
    /* precision (opset 23): the dtype of the division; the scale's when 0. */
    if ((s = quant_int_attr(n, "precision", 0, &attr))) return s;
    if (attr != 0 && attr != 1) {
      return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "attribute 'precision' = %s: only float32 division is supported",
                        onnx_type_name(attr));
    }
    if ((s = quant_int_attr(n, "output_dtype", 0, &attr))) return s;
    ingot_dtype_t t = INGOT_DTYPE_INVALID;
    if (attr == 0 || attr == 2) t = INGOT_DTYPE_U8; /* absent: uint8, unless a zero point says otherwise */
    if (attr == 3) t = INGOT_DTYPE_I8;
    if (attr == 4) t = INGOT_DTYPE_U16;
    if (attr == 5) t = INGOT_DTYPE_I16;
    if (attr == 17) t = INGOT_DTYPE_F8E4M3FN;
    if (attr == 18) t = INGOT_DTYPE_F8E4M3FNUZ;
    if (attr == 19) t = INGOT_DTYPE_F8E5M2;
    if (attr == 20) t = INGOT_DTYPE_F8E5M2FNUZ;
    if (attr == 21) t = INGOT_DTYPE_U4;
    if (attr == 22) t = INGOT_DTYPE_I4;
    if (t == INGOT_DTYPE_INVALID) {
      return infer_fail(n, INGOT_ERROR_UNSUPPORTED,
                        "attribute 'output_dtype' = %lld (%s): that quantized dtype is not supported (" QUANT_DTYPE_LIST
                        " are)",
                        (long long)attr, onnx_type_name(attr));
    }
    if (zp) {
      if (!quant_dtype_ok(zp->dtype)) {
        return infer_fail(n, INGOT_ERROR_UNSUPPORTED,
                          "zero point '%s' has dtype %s: that quantized dtype is not supported (" QUANT_DTYPE_LIST
                          " are)",
                          zp->name, ingot_graph_dtype_name(zp->dtype));
      }
      if (attr != 0 && zp->dtype != t) {
        return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT,
                          "attribute 'output_dtype' (%s) differs from the zero point's dtype (%s)", onnx_type_name(attr),
                          ingot_graph_dtype_name(zp->dtype));
      }
      t = zp->dtype;
    }
    out->qtype = t;
    if ((s = quant_int_attr(n, "saturate", 1, &attr))) return s;
    out->saturate = attr != 0;
  } else {
    if (!quant_dtype_ok(x->dtype) && x->dtype != INGOT_DTYPE_I32) {
      return infer_fail(n, INGOT_ERROR_UNSUPPORTED,
                        "x '%s' has dtype %s: that quantized dtype is not supported (" QUANT_DTYPE_LIST
                        ", int32 are)",
                        x->name, ingot_graph_dtype_name(x->dtype));
    }
    if (zp && zp->dtype != x->dtype) {
      return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "zero point '%s' has dtype %s, x has %s", zp->name,
                        ingot_graph_dtype_name(zp->dtype), ingot_graph_dtype_name(x->dtype));
    }
    /* output_dtype (opset 23): the scale's (float32) when 0. */
    if ((s = quant_int_attr(n, "output_dtype", 0, &attr))) return s;
    if (attr != 0 && attr != 1) {
      return infer_fail(n, INGOT_ERROR_UNSUPPORTED,
                        "attribute 'output_dtype' = %lld (%s): only float32 output is supported", (long long)attr,
                        onnx_type_name(attr));
    }
    out->qtype = x->dtype;
  }
  if ((s = parse_granularity(n, x, scale, out))) return s;
  if (zp && ingot_f8_format(out->qtype) && zp->kind == INGOT_VALUE_WEIGHT && zp->data) {
    /* A float8 zero point must be 0 (its bits; the reference refuses -0 too). */
    const uint8_t* z = zp->data;
    for (int64_t i = 0, count = ingot_value_numel(zp); i < count; ++i) {
      if (z[i] != 0) {
        return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "zero point '%s' of dtype %s must be 0 (element %lld is not)",
                          zp->name, ingot_graph_dtype_name(zp->dtype), (long long)i);
      }
    }
  }
  if (zp) {
    bool same = zp->rank == scale->rank;
    for (int32_t d = 0; same && d < zp->rank; ++d) same = zp->dims[d] == scale->dims[d];
    /* A one-element zero point beside a one-element scale: shapes [] and [1] agree. */
    if (!same && !(ingot_value_numel(zp) == 1 && ingot_value_numel(scale) == 1 && zp->rank <= 1 && scale->rank <= 1)) {
      char a[128], b[128];
      infer_shape_str(zp, a, sizeof(a));
      infer_shape_str(scale, b, sizeof(b));
      return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT,
                        "zero point '%s' of shape %s differs from the scale's shape %s", zp->name, a, b);
    }
  }
  return INGOT_OK;
}

/* QuantizeLinear: x's shape, the quantized dtype (node.params). */
ingot_status_t infer_quantizelinear(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  infer_set_output(c, 0, c->n->params.u.quant.qtype, x->rank, x->dims);
  return INGOT_OK;
}

/* DequantizeLinear: x's shape, float32. */
ingot_status_t infer_dequantizelinear(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  infer_set_output(c, 0, INGOT_DTYPE_F32, x->rank, x->dims);
  return INGOT_OK;
}

/* DynamicQuantizeLinear: y (uint8, x's shape), y_scale (float32 scalar),
 * y_zero_point (uint8 scalar). */
ingot_status_t infer_dynamicquantizelinear(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  if (x->dtype != INGOT_DTYPE_F32) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "x '%s' has dtype %s: only float32 is defined", x->name,
                      ingot_graph_dtype_name(x->dtype));
  }
  infer_set_output(c, 0, INGOT_DTYPE_U8, x->rank, x->dims);
  int64_t none[1] = {1};
  infer_set_output(c, 1, INGOT_DTYPE_F32, 0, none);
  infer_set_output(c, 2, INGOT_DTYPE_U8, 0, none);
  return INGOT_OK;
}

/* ---- QLinearConv and QLinearMatMul ----
 * Inputs: x (or a) 0, its scale 1 and zero point 2; w (or b) 3, its scale 4
 * and zero point 5; y's scale 6 and zero point 7; QLinearConv's int32 bias 8. */

/* Checks scale `si` (float32; one element, or `channels` elements as a 1-D
 * tensor when channels > 0) and zero point `zi` (data's dtype; one element
 * or the scale's count). */
static ingot_status_t qlinear_check_pair(const infer_ctx_t* c, uint32_t si, uint32_t zi, ingot_dtype_t data,
                                         int64_t channels) {
  const ingot_value_t* sc = infer_input(c, si);
  const ingot_value_t* zp = infer_input(c, zi);
  if (!sc) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input %u (a scale) is required", si);
  if (sc->dtype != INGOT_DTYPE_F32) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "scale '%s' has dtype %s: only float32 scales are supported",
                      sc->name, ingot_graph_dtype_name(sc->dtype));
  }
  int64_t n = ingot_value_numel(sc);
  bool ok = sc->rank >= 0 && (n == 1 ? sc->rank <= 1 : channels > 0 && sc->rank == 1 && n == channels);
  if (!ok) {
    char a[128];
    infer_shape_str(sc, a, sizeof(a));
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "scale '%s' of shape %s must be a scalar%s", sc->name, a,
                      channels > 0 ? " or one per output channel" : "");
  }
  if (zp) {
    if (zp->dtype != data) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "zero point '%s' has dtype %s, its data has %s", zp->name,
                        ingot_graph_dtype_name(zp->dtype), ingot_graph_dtype_name(data));
    }
    /* one zero point, or one per element of the scale */
    if (zp->rank < 0 || (ingot_value_numel(zp) != n && ingot_value_numel(zp) != 1) || zp->rank > 1) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT,
                        "zero point '%s' must be one element or have the shape of scale '%s'", zp->name, sc->name);
    }
  }
  return INGOT_OK;
}

/* A scale at input si and its zero point at zi (absent: 0) for data of
 * dtype `data`, both per tensor. */
static ingot_status_t qlinear_check_scalar(const infer_ctx_t* c, uint32_t si, uint32_t zi, ingot_dtype_t data) {
  return qlinear_check_pair(c, si, zi, data, 0);
}

/* The quantized dtype of input i (uint8 or int8). */
static ingot_status_t qlinear_data(const infer_ctx_t* c, uint32_t i, ingot_dtype_t* out) {
  const ingot_value_t* v = infer_input(c, i);
  if (!v) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input %u is required", i);
  if (v->dtype != INGOT_DTYPE_U8 && v->dtype != INGOT_DTYPE_I8) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input '%s' has dtype %s (uint8 or int8 expected)", v->name,
                      ingot_graph_dtype_name(v->dtype));
  }
  *out = v->dtype;
  return INGOT_OK;
}

/* Checks the scales and zero points; *out_y: y's dtype (its zero point's,
 * uint8 without one). */
static ingot_status_t qlinear_check(const infer_ctx_t* c, int64_t channels, ingot_dtype_t* out_y) {
  ingot_dtype_t xt = INGOT_DTYPE_U8, wt = INGOT_DTYPE_U8;
  ingot_status_t s;
  if ((s = qlinear_data(c, 0, &xt)) || (s = qlinear_data(c, 3, &wt))) return s;
  const ingot_value_t* yz = infer_input(c, 7);
  ingot_dtype_t yt = yz ? yz->dtype : INGOT_DTYPE_U8;
  if (yt != INGOT_DTYPE_U8 && yt != INGOT_DTYPE_I8) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "y_zero_point '%s' has dtype %s (uint8 or int8 expected)",
                      yz->name, ingot_graph_dtype_name(yt));
  }
  if ((s = qlinear_check_pair(c, 1, 2, xt, 0)) || (s = qlinear_check_pair(c, 4, 5, wt, channels)) ||
      (s = qlinear_check_pair(c, 6, 7, yt, 0))) {
    return s;
  }
  *out_y = yt;
  return INGOT_OK;
}

/* QLinearConv: Conv's shape (window: node.params), y's quantized dtype. */
ingot_status_t infer_qlinearconv(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  const ingot_value_t* w = infer_input(c, 3);
  const ingot_value_t* b = infer_input(c, 8);
  if (x->rank < 3 || x->rank > 5 || w->rank != x->rank) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "1-D to 3-D QLinearConv only (ranks %d, %d)", x->rank, w->rank);
  }
  ingot_dtype_t yt = INGOT_DTYPE_U8;
  ingot_status_t s;
  if ((s = qlinear_check(c, w->dims[0], &yt))) return s;
  if (b && (b->dtype != INGOT_DTYPE_I32 || b->rank != 1 || b->dims[0] != w->dims[0])) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "bias '%s' must be int32 of shape [%lld]", b->name,
                      (long long)w->dims[0]);
  }
  const ingot_window_params_t* win = &c->n->params.u.conv.window;
  int64_t dims[INGOT_MAX_RANK] = {x->dims[0], w->dims[0]};
  for (int32_t i = 0; i < win->spatial; ++i) dims[2 + i] = win->out[i];
  infer_set_output(c, 0, yt, x->rank, dims);
  return INGOT_OK;
}

/* QLinearMatMul: MatMul's shape, y's quantized dtype. */
ingot_status_t infer_qlinearmatmul(infer_ctx_t* c) {
  const ingot_value_t* b = infer_input(c, 3);
  if (!b || b->rank < 1) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "b must not be a scalar");
  ingot_dtype_t yt = INGOT_DTYPE_U8;
  ingot_status_t s;
  if ((s = qlinear_check(c, b->rank >= 2 ? b->dims[b->rank - 1] : 0, &yt))) return s;
  return infer_matmul_integer_shape(c, 0, 3, 2, 5, yt);
}

/* ---- ONNX Runtime's com.microsoft QLinear ops ---- */

/* y's dtype: its zero point's (input zi), uint8 without one. */
static ingot_status_t qlinear_out_type(const infer_ctx_t* c, uint32_t zi, ingot_dtype_t* out) {
  const ingot_value_t* z = infer_input(c, zi);
  *out = z ? z->dtype : INGOT_DTYPE_U8;
  if (*out != INGOT_DTYPE_U8 && *out != INGOT_DTYPE_I8) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "zero point '%s' has dtype %s (uint8 or int8 expected)", z->name,
                      ingot_graph_dtype_name(*out));
  }
  return INGOT_OK;
}

/* QLinearAdd, QLinearMul: A 0 (scale 1, zero point 2), B 3 (4, 5), C's
 * scale 6 and zero point 7; A, B and C of one dtype; numpy broadcasting. */
ingot_status_t infer_qlinear_binary(infer_ctx_t* c) {
  ingot_dtype_t at = INGOT_DTYPE_U8, bt = INGOT_DTYPE_U8, yt = INGOT_DTYPE_U8;
  ingot_status_t s;
  if ((s = qlinear_data(c, 0, &at)) || (s = qlinear_data(c, 3, &bt)) || (s = qlinear_out_type(c, 7, &yt))) return s;
  if (at != bt || at != yt) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "A, B and C must share one dtype (%s, %s, %s)",
                      ingot_graph_dtype_name(at), ingot_graph_dtype_name(bt), ingot_graph_dtype_name(yt));
  }
  if ((s = qlinear_check_scalar(c, 1, 2, at)) || (s = qlinear_check_scalar(c, 4, 5, bt)) ||
      (s = qlinear_check_scalar(c, 6, 7, yt))) {
    return s;
  }
  int32_t rank;
  int64_t dims[INGOT_MAX_RANK];
  if ((s = infer_broadcast(c, infer_input(c, 0), infer_input(c, 3), &rank, dims))) return s;
  infer_set_output(c, 0, yt, rank, dims);
  return INGOT_OK;
}

/* QLinearSigmoid: X 0 (scale 1, zero point 2), Y's scale 3, zero point 4. */
ingot_status_t infer_qlinear_unary(infer_ctx_t* c) {
  ingot_dtype_t xt = INGOT_DTYPE_U8, yt = INGOT_DTYPE_U8;
  ingot_status_t s;
  if ((s = qlinear_data(c, 0, &xt)) || (s = qlinear_out_type(c, 4, &yt)) || (s = qlinear_check_scalar(c, 1, 2, xt)) ||
      (s = qlinear_check_scalar(c, 3, 4, yt))) {
    return s;
  }
  if (xt != yt) return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "X and Y must share one dtype");
  const ingot_value_t* x = infer_input(c, 0);
  infer_set_output(c, 0, yt, x->rank, x->dims);
  return INGOT_OK;
}

/* QLinearGlobalAveragePool: as QLinearSigmoid's inputs; N, C, 1.. (NCHW)
 * or N, 1.., C (channels_last = 1). */
ingot_status_t infer_qlinear_gap(infer_ctx_t* c) {
  ingot_dtype_t xt = INGOT_DTYPE_U8, yt = INGOT_DTYPE_U8;
  ingot_status_t s;
  if ((s = qlinear_data(c, 0, &xt)) || (s = qlinear_out_type(c, 4, &yt)) || (s = qlinear_check_scalar(c, 1, 2, xt)) ||
      (s = qlinear_check_scalar(c, 3, 4, yt))) {
    return s;
  }
  if (xt != yt) return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "X and Y must share one dtype");
  int64_t last = 0;
  if ((s = quant_int_attr(c->n, "channels_last", 0, &last))) return s;
  if (last != 0) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "channels_last = %lld: only NCHW (0) is supported", (long long)last);
  }
  const ingot_value_t* x = infer_input(c, 0);
  if (x->rank < 3) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "X must have rank >= 3 (N, C, spatial..)");
  int64_t dims[INGOT_MAX_RANK];
  for (int32_t i = 0; i < x->rank; ++i) dims[i] = i < 2 ? x->dims[i] : 1;
  infer_set_output(c, 0, yt, x->rank, dims);
  return INGOT_OK;
}

/* QLinearConcat: Y's scale 0 and zero point 1, then (X, scale, zero point)
 * per input, every X of Y's dtype; axis: node.params. */
ingot_status_t infer_qlinear_concat(infer_ctx_t* c) {
  uint32_t count = c->n->input_count;
  ingot_dtype_t yt = INGOT_DTYPE_U8;
  ingot_status_t s;
  if ((count - 2) % 3 != 0) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "inputs must be Y's scale and zero point, then triples");
  }
  if ((s = qlinear_out_type(c, 1, &yt)) || (s = qlinear_check_scalar(c, 0, 1, yt))) return s;
  const ingot_value_t* x0 = infer_input(c, 2);
  int64_t axis = c->n->params.u.axis.axis;
  int64_t dims[INGOT_MAX_RANK];
  for (uint32_t i = 2; i < count; i += 3) {
    ingot_dtype_t xt = INGOT_DTYPE_U8;
    if ((s = qlinear_data(c, i, &xt)) || (s = qlinear_check_scalar(c, i + 1, i + 2, xt))) return s;
    const ingot_value_t* x = infer_input(c, i);
    if (xt != yt || x->rank != x0->rank) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input '%s' differs in rank or dtype from Y", x->name);
    }
    for (int32_t k = 0; k < x->rank; ++k) {
      if (k != axis && x->dims[k] != x0->dims[k]) {
        return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input '%s' differs from '%s' in dimension %d", x->name,
                          x0->name, k);
      }
      if (i == 2) dims[k] = x->dims[k];
    }
    if (i != 2) dims[axis] += x->dims[axis];
  }
  infer_set_output(c, 0, yt, x0->rank, dims);
  return INGOT_OK;
}

/* QGemm: A 0 (scale 1, zero point 2), B 3 (scale 4 per tensor or per
 * column, zero point 5), int32 C 6, Y's scale 7 and zero point 8; transA,
 * transB, alpha: node.params. Without Y's zero point ONNX Runtime writes
 * float32, which is refused (lowering knows only the requantized form). */
ingot_status_t infer_qgemm(infer_ctx_t* c) {
  const ingot_value_t* a = infer_input(c, 0);
  const ingot_value_t* b = infer_input(c, 3);
  const ingot_value_t* bias = infer_input(c, 6);
  ingot_dtype_t at = INGOT_DTYPE_U8, bt = INGOT_DTYPE_U8, yt = INGOT_DTYPE_U8;
  ingot_status_t s;
  if ((s = qlinear_data(c, 0, &at)) || (s = qlinear_data(c, 3, &bt))) return s;
  if (a->rank != 2 || b->rank != 2) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "A and B must be matrices (ranks %d, %d)", a->rank, b->rank);
  }
  if (!infer_input(c, 7) || !infer_input(c, 8)) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED,
                      "QGemm without y_scale and y_zero_point (a float32 output) is not supported");
  }
  bool ta = c->n->params.u.gemm.trans_a, tb = c->n->params.u.gemm.trans_b;
  int64_t m = ta ? a->dims[1] : a->dims[0], k = ta ? a->dims[0] : a->dims[1];
  int64_t k2 = tb ? b->dims[1] : b->dims[0], n = tb ? b->dims[0] : b->dims[1];
  if (k != k2) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "inner dimensions differ: A gives K=%lld, B gives K=%lld",
                      (long long)k, (long long)k2);
  }
  if ((s = qlinear_out_type(c, 8, &yt)) || (s = qlinear_check_pair(c, 1, 2, at, 0)) ||
      (s = qlinear_check_pair(c, 4, 5, bt, n)) || (s = qlinear_check_pair(c, 7, 8, yt, 0))) {
    return s;
  }
  if (bias && (bias->dtype != INGOT_DTYPE_I32 || bias->rank > 2 || ingot_value_numel(bias) != n ||
               (bias->rank == 2 && bias->dims[0] != 1))) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "C '%s' must be int32, one value per column (%lld)", bias->name,
                      (long long)n);
  }
  if (c->n->params.u.gemm.beta != 1.0f && bias) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "beta = %g: QGemm adds C as it is (beta 1)", c->n->params.u.gemm.beta);
  }
  int64_t dims[2] = {m, n};
  infer_set_output(c, 0, yt, 2, dims);
  return INGOT_OK;
}

/* Requantize (domain ai.ingot, made by ingot_graph_split_qlinear): acc 0
 * (int32), x's scale 1, w's scale 2 (one, or one per index of `axis`), y's
 * scale 3 and zero point 4, an int32 bias 5 (one per index of `axis`);
 * attributes axis (the channel axis of acc) and alpha (QGemm's; 1). Output:
 * acc's shape, y's zero point's dtype (uint8 without one). */
ingot_status_t infer_requantize(infer_ctx_t* c) {
  const ingot_value_t* acc = infer_input(c, 0);
  const ingot_value_t* bias = infer_input(c, 5);
  int64_t axis = 0;
  ingot_dtype_t yt = INGOT_DTYPE_U8;
  ingot_status_t s;
  if (acc->dtype != INGOT_DTYPE_I32 || acc->rank < 1) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "acc '%s' must be int32 of rank >= 1", acc->name);
  }
  if ((s = quant_int_attr(c->n, "axis", 1, &axis))) return s;
  if (axis < 0 || axis >= acc->rank) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "axis %lld is out of range", (long long)axis);
  }
  int64_t channels = acc->dims[axis];
  if ((s = qlinear_out_type(c, 4, &yt)) || (s = qlinear_check_pair(c, 1, INGOT_NO_VALUE, INGOT_DTYPE_U8, 0)) ||
      (s = qlinear_check_pair(c, 2, INGOT_NO_VALUE, INGOT_DTYPE_U8, channels)) ||
      (s = qlinear_check_pair(c, 3, 4, yt, 0))) {
    return s;
  }
  if (bias && (bias->dtype != INGOT_DTYPE_I32 || ingot_value_numel(bias) != channels)) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "bias '%s' must be int32, one per channel", bias->name);
  }
  infer_set_output(c, 0, yt, acc->rank, acc->dims);
  return INGOT_OK;
}
