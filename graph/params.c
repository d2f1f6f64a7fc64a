/* Typed op parameters: each op's attributes read and checked once (the
 * table is graph/params.def). Shape inference calls ingot_graph_node_params
 * for every node and stores the result in node.params; lowering reads
 * node.params. Every failure names the node and op (infer_fail). The parse
 * functions live here, or next to their op family's inference
 * (ConvTranspose: infer_nn.c). */
#include <math.h>
#include <string.h>

#include "graph_internal.h" /* private headers by their bare name, beside this file */
#include "infer_internal.h"

static const ingot_params_kind_t kOpParams[INGOT_OP_COUNT_] = {
#define INGOT_OP_PARAMS(op, kind) [INGOT_OP_##op] = INGOT_PARAMS_##kind,
#include "graph/params.def"
};

ingot_params_kind_t ingot_op_params_kind(ingot_op_t op) {
  return (unsigned)op < INGOT_OP_COUNT_ ? kOpParams[op] : INGOT_PARAMS_NONE;
}

ingot_status_t ingot_graph_node_params(const ingot_graph_t* graph, uint32_t node, ingot_op_params_t* out) {
  memset(out, 0, sizeof(*out));
  const ingot_node_t* n = &graph->nodes[node];
  ingot_status_t s = INGOT_OK;
  switch (ingot_op_params_kind(n->op)) {
    case INGOT_PARAMS_NONE:
      return INGOT_OK;
#define INGOT_PARAMS(k, member, type, parse) \
  case INGOT_PARAMS_##k:                     \
    s = parse(graph, node, &out->u.member);  \
    if (!s) out->kind = INGOT_PARAMS_##k;    \
    break;
#include "graph/params.def"
    case INGOT_PARAMS_COUNT_:
      break;
  }
  if (s) memset(out, 0, sizeof(*out));
  return s;
}

/* ---- attribute readers ---- */

/* Input i of node n, or NULL when absent. */
static const ingot_value_t* node_input(const ingot_graph_t* graph, const ingot_node_t* n, uint32_t i) {
  if (i >= n->input_count || n->inputs[i] == INGOT_NO_VALUE || n->inputs[i] >= graph->value_count) return NULL;
  return &graph->values[n->inputs[i]];
}

/* An INTS attribute of `want` entries, each in [lo, INT32_MAX], into out
 * (all `fallback` when absent or empty); *out_present says which. */
static ingot_status_t read_ints(const ingot_node_t* n, const char* name, uint32_t want, int64_t lo, int64_t fallback,
                                int64_t* out, bool* out_present) {
  const ingot_attr_t* a = ingot_node_attr(n, name);
  if (out_present) *out_present = false;
  if (a && a->type != INGOT_ATTR_INTS) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute '%s' must be a list of ints", name);
  }
  if (!a || a->count == 0) {
    for (uint32_t i = 0; i < want; ++i) out[i] = fallback;
    return INGOT_OK;
  }
  if (a->count != want) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute '%s' has %u entries, expected %u", name, a->count,
                      want);
  }
  for (uint32_t i = 0; i < want; ++i) {
    if (a->ints[i] < lo) {
      return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute '%s'[%u] = %lld must be >= %lld", name, i,
                        (long long)a->ints[i], (long long)lo);
    }
    if (a->ints[i] > INT32_MAX) {
      return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "attribute '%s'[%u] = %lld is out of range", name, i,
                        (long long)a->ints[i]);
    }
    out[i] = a->ints[i];
  }
  if (out_present) *out_present = true;
  return INGOT_OK;
}

/* An INT attribute (fallback when absent); fails when it has another type. */
static ingot_status_t read_int(const ingot_node_t* n, const char* name, int64_t fallback, int64_t* out) {
  const ingot_attr_t* a = ingot_node_attr(n, name);
  if (a && a->type != INGOT_ATTR_INT) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute '%s' must be an int", name);
  }
  *out = a ? a->i : fallback;
  return INGOT_OK;
}

/* A FLOAT attribute (an INT one converted; fallback when absent), as the
 * float it is, widened to double. */
static ingot_status_t read_float(const ingot_node_t* n, const char* name, float fallback, double* out) {
  const ingot_attr_t* a = ingot_node_attr(n, name);
  if (a && a->type != INGOT_ATTR_FLOAT && a->type != INGOT_ATTR_INT) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute '%s' must be a float", name);
  }
  *out = (double)(!a ? fallback : a->type == INGOT_ATTR_FLOAT ? a->f : (float)a->i);
  return INGOT_OK;
}

static ingot_status_t read_lp_order(const ingot_node_t* n, int32_t* out);

/* ---- sliding windows (Conv, ConvInteger, pools) ---- */

/* Fills w from strides, dilations, pads, auto_pad and (allow_ceil) ceil_mode
 * for input x, w->kernel already set; computes the output extents. */
static ingot_status_t parse_window(const ingot_node_t* n, const ingot_value_t* x, bool allow_ceil,
                                   ingot_window_params_t* w) {
  ingot_status_t s;
  uint32_t sp = (uint32_t)w->spatial;
  if ((s = read_ints(n, "strides", sp, 1, 1, w->strides, NULL)) ||
      (s = read_ints(n, "dilations", sp, 1, 1, w->dilations, NULL)) ||
      (s = read_ints(n, "pads", 2 * sp, 0, 0, w->pads, NULL))) {
    return s;
  }
  int64_t ceil_mode = 0;
  if (allow_ceil && (s = read_int(n, "ceil_mode", 0, &ceil_mode))) return s;
  if (ceil_mode != 0 && ceil_mode != 1) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "ceil_mode must be 0 or 1, not %lld", (long long)ceil_mode);
  }
  w->ceil_mode = ceil_mode != 0;
  const ingot_attr_t* ap = ingot_node_attr(n, "auto_pad");
  if (ap && ap->type != INGOT_ATTR_STRING) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'auto_pad' must be a string");
  }
  const char* auto_pad = ap && ap->s ? ap->s : "NOTSET";
  enum { kNotSet, kSameUpper, kSameLower, kValid } mode;
  if (strcmp(auto_pad, "NOTSET") == 0 || auto_pad[0] == '\0') {
    mode = kNotSet;
  } else if (strcmp(auto_pad, "SAME_UPPER") == 0) {
    mode = kSameUpper;
  } else if (strcmp(auto_pad, "SAME_LOWER") == 0) {
    mode = kSameLower;
  } else if (strcmp(auto_pad, "VALID") == 0) {
    mode = kValid;
  } else {
    return infer_fail(n, INGOT_ERROR_UNSUPPORTED,
                      "auto_pad '%s' is not supported (NOTSET, SAME_UPPER, SAME_LOWER, VALID)", auto_pad);
  }
  for (uint32_t i = 0; i < sp; ++i) {
    int64_t in_size = x->dims[2 + i];
    int64_t eff = w->dilations[i] * (w->kernel[i] - 1) + 1;
    int64_t st = w->strides[i];
    int64_t out;
    if (mode == kSameUpper || mode == kSameLower) {
      out = (in_size + st - 1) / st;
      int64_t total = (out - 1) * st + eff - in_size;
      if (total < 0) total = 0;
      int64_t small = total / 2, big = total - total / 2;
      w->pads[i] = mode == kSameUpper ? small : big;
      w->pads[i + sp] = mode == kSameUpper ? big : small;
    } else {
      if (mode == kValid) w->pads[i] = w->pads[i + sp] = 0;
      int64_t span = in_size + w->pads[i] + w->pads[i + sp] - eff;
      /* With ceil_mode a window may overhang the padded end by < stride. */
      if (span < 0 && !(w->ceil_mode && span + st - 1 >= 0)) {
        return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT,
                          "spatial dim %u: the window (%lld with dilation) is larger than the padded input (%lld)", i,
                          (long long)eff, (long long)(in_size + w->pads[i] + w->pads[i + sp]));
      }
      if (w->ceil_mode) {
        out = (span + st - 1) / st + 1;
        /* The last window must start inside the input or its left padding
         * (as ONNX Runtime and PyTorch do). */
        if ((out - 1) * st >= in_size + w->pads[i]) --out;
      } else {
        out = span / st + 1;
      }
    }
    if (out < 1) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "spatial dim %u: empty output", i);
    w->out[i] = out;
  }
  return INGOT_OK;
}

/* The data input of a windowed op: present, rank 3 .. INGOT_MAX_RANK. */
static ingot_status_t window_input(const ingot_graph_t* graph, const ingot_node_t* n, const ingot_value_t** out_x,
                                   ingot_value_t* scratch) {
  const ingot_value_t* x = node_input(graph, n, 0);
  /* a ConvInteger's dot4 words (node.x_dot4_words): x's own shape */
  if (x && n->x_dot4_words && !(x = ingot_node_logical_input(n, 0, x, scratch))) {
    return infer_fail(n, INGOT_ERROR_INTERNAL, "input is not the dot4 words of %lld channels",
                      (long long)n->weight_dot4_channels);
  }
  if (!x || x->rank < 3 || x->rank > (int32_t)INGOT_MAX_RANK) {
    return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "input must have rank >= 3 (N, C, spatial...), has %d",
                      x ? x->rank : -1);
  }
  *out_x = x;
  return INGOT_OK;
}

ingot_status_t params_parse_conv(const ingot_graph_t* graph, uint32_t node, ingot_conv_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  const ingot_value_t* x = NULL;
  ingot_status_t s;
  ingot_value_t x_logical;
  if ((s = window_input(graph, n, &x, &x_logical))) return s;
  ingot_value_t unpacked;
  uint32_t wi = n->op == INGOT_OP_QLINEARCONV ? 3 : 1; /* QLinearConv: x, x_scale, x_zero_point, w, ... */
  const ingot_value_t* w = node_input(graph, n, wi);
  if (w && !(w = ingot_node_logical_input(n, wi, w, &unpacked))) {
    return infer_fail(n, INGOT_ERROR_INTERNAL, "packed weight (panels of %u) has the wrong shape", n->weight_block);
  }
  if (!w || w->rank != x->rank) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "weight rank %d differs from input rank %d", w ? w->rank : -1,
                      x->rank);
  }
  if ((s = read_int(n, "group", 1, &out->group))) return s;
  int64_t group = out->group, channels = x->dims[1], out_channels = w->dims[0];
  if (group < 1 || channels % group != 0 || out_channels % group != 0) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "group %lld does not divide %lld input and %lld output channels",
                      (long long)group, (long long)channels, (long long)out_channels);
  }
  if (w->dims[1] * group != channels) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT,
                      "weight has %lld input channels per group, input has %lld channels in %lld groups",
                      (long long)w->dims[1], (long long)channels, (long long)group);
  }
  ingot_window_params_t* win = &out->window;
  win->spatial = x->rank - 2;
  uint32_t sp = (uint32_t)win->spatial;
  for (uint32_t i = 0; i < sp; ++i) {
    if (w->dims[2 + i] < 1) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "empty kernel");
  }
  bool has_k;
  if ((s = read_ints(n, "kernel_shape", sp, 1, 1, win->kernel, &has_k))) return s;
  for (uint32_t i = 0; i < sp; ++i) {
    if (has_k && win->kernel[i] != w->dims[2 + i]) {
      return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "kernel_shape[%u] = %lld disagrees with the weight's %lld", i,
                        (long long)win->kernel[i], (long long)w->dims[2 + i]);
    }
    win->kernel[i] = w->dims[2 + i];
  }
  return parse_window(n, x, false, win);
}

ingot_status_t params_parse_pool(const ingot_graph_t* graph, uint32_t node, ingot_pool_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  const ingot_value_t* x = NULL;
  ingot_status_t s;
  ingot_value_t x_logical;
  if ((s = window_input(graph, n, &x, &x_logical))) return s;
  ingot_window_params_t* win = &out->window;
  win->spatial = x->rank - 2;
  uint32_t sp = (uint32_t)win->spatial;
  bool has_k;
  if ((s = read_ints(n, "kernel_shape", sp, 1, 1, win->kernel, &has_k))) return s;
  if (!has_k) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'kernel_shape' is required");
  if ((s = parse_window(n, x, true, win))) return s;
  int64_t v = 0;
  if ((s = read_int(n, "count_include_pad", 0, &v))) return s;
  out->count_include_pad = n->op != INGOT_OP_MAXPOOL && v != 0;
  if ((s = read_int(n, "storage_order", 0, &v))) return s;
  if (v != 0 && v != 1) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "storage_order must be 0 or 1");
  out->storage_order = (int32_t)v;
  out->p = 2;
  return n->op == INGOT_OP_LPPOOL ? read_lp_order(n, &out->p) : INGOT_OK;
}

/* The order p of an Lp norm: 1..64 (LpPool, GlobalLpPool). */
static ingot_status_t read_lp_order(const ingot_node_t* n, int32_t* out) {
  int64_t v = 0;
  ingot_status_t s = read_int(n, "p", 2, &v);
  if (s) return s;
  if (v < 1 || v > 64) return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "p = %lld is not supported (1..64)", (long long)v);
  *out = (int32_t)v;
  return INGOT_OK;
}

ingot_status_t params_parse_lp(const ingot_graph_t* graph, uint32_t node, ingot_lp_params_t* out) {
  return read_lp_order(&graph->nodes[node], &out->p);
}

/* ---- Gemm ---- */

ingot_status_t params_parse_gemm(const ingot_graph_t* graph, uint32_t node, ingot_gemm_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  int64_t ta = 0, tb = 0;
  ingot_status_t s;
  if ((s = read_int(n, "transA", 0, &ta)) || (s = read_int(n, "transB", 0, &tb)) ||
      (s = read_float(n, "alpha", 1.0f, &out->alpha)) || (s = read_float(n, "beta", 1.0f, &out->beta))) {
    return s;
  }
  out->trans_a = ta != 0;
  out->trans_b = tb != 0;
  return INGOT_OK;
}

/* ---- one axis ---- */

/* A 0/1 INT attribute as a bool. */
static ingot_status_t read_flag(const ingot_node_t* n, const char* name, bool fallback, bool* out) {
  int64_t v = 0;
  ingot_status_t s = read_int(n, name, fallback ? 1 : 0, &v);
  if (s) return s;
  if (v != 0 && v != 1) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "%s must be 0 or 1, not %lld", name, (long long)v);
  *out = v != 0;
  return INGOT_OK;
}

/* Normalizes `axis` into [0, rank). */
static ingot_status_t norm_axis(const ingot_node_t* n, int64_t axis, int32_t rank, int32_t* out) {
  if (axis < -(int64_t)rank || axis >= rank) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "axis %lld is out of range for rank %d", (long long)axis, rank);
  }
  *out = (int32_t)(axis < 0 ? axis + rank : axis);
  return INGOT_OK;
}

/* Input 0, which must be present and not a scalar. */
static ingot_status_t nonscalar_input(const ingot_graph_t* graph, const ingot_node_t* n, const char* what,
                                      const ingot_value_t** out_x) {
  const ingot_value_t* x = node_input(graph, n, 0);
  if (!x || x->rank < 1) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "%s", what);
  *out_x = x;
  return INGOT_OK;
}

/* Reads a constant integer tensor (int64 or int32 weight) into out[0..count). */
static ingot_status_t const_ints(const ingot_node_t* n, const ingot_value_t* v, const char* what, int64_t* out,
                                 uint32_t max_count, uint32_t* out_count) {
  if (v->kind != INGOT_VALUE_WEIGHT || (!v->data && ingot_value_numel(v) > 0)) {
    return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "input '%s' (%s) must be a constant (computed %s are not supported)",
                      v->name, what, what);
  }
  if (v->dtype != INGOT_DTYPE_I64 && v->dtype != INGOT_DTYPE_I32) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input '%s' (%s) must be int64 or int32, not %s", v->name, what,
                      ingot_dtype_name(v->dtype));
  }
  if (v->rank > 1) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input '%s' (%s) must be a scalar or 1-D", v->name, what);
  }
  int64_t count = ingot_value_numel(v);
  if (count > (int64_t)max_count) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input '%s' (%s) has %lld entries, at most %u allowed", v->name,
                      what, (long long)count, max_count);
  }
  for (int64_t i = 0; i < count; ++i) {
    out[i] = v->dtype == INGOT_DTYPE_I64 ? ((const int64_t*)v->data)[i] : ((const int32_t*)v->data)[i];
  }
  *out_count = (uint32_t)count;
  return INGOT_OK;
}

ingot_status_t params_parse_axis(const ingot_graph_t* graph, uint32_t node, ingot_axis_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  int64_t fallback = 0;
  const char* scalar = "data must have rank >= 1";
  switch (n->op) {
    case INGOT_OP_SOFTMAX:
    case INGOT_OP_LOGSOFTMAX:
    case INGOT_OP_HARDMAX:
      fallback = graph->opset > 0 && graph->opset < 13 ? 1 : -1;
      scalar = "input must not be a scalar";
      break;
    case INGOT_OP_CONCAT:
      if (!ingot_node_attr(n, "axis") && graph->opset >= 4) {
        return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'axis' is required");
      }
      fallback = 1;
      scalar = "inputs must not be scalars";
      break;
    case INGOT_OP_COMPRESS: {
      const ingot_value_t* in = node_input(graph, n, 0);
      int64_t axis = 0;
      ingot_status_t s;
      if (!in) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input 0 is missing");
      if (!ingot_node_attr(n, "axis")) {
        out->axis = -1;
        return INGOT_OK;
      }
      if ((s = read_int(n, "axis", 0, &axis))) return s;
      return norm_axis(n, axis, in->rank, &out->axis);
    }
    case INGOT_OP_QLINEARCONCAT: {
      /* inputs: y_scale, y_zero_point, then (x, scale, zero point) per tensor */
      const ingot_value_t* in = node_input(graph, n, 2);
      int64_t axis = 0;
      ingot_status_t s;
      if (!in || in->rank < 1) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input 2 must be a tensor of rank >= 1");
      if (!ingot_node_attr(n, "axis")) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'axis' is required");
      if ((s = read_int(n, "axis", 0, &axis))) return s;
      return norm_axis(n, axis, in->rank, &out->axis);
    }
    case INGOT_OP_ONEHOT: {
      /* an axis of the output, whose rank is the indices' + 1 */
      const ingot_value_t* ind = node_input(graph, n, 0);
      int64_t axis = 0;
      ingot_status_t s;
      if (!ind) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input 0 is missing");
      if ((s = read_int(n, "axis", -1, &axis))) return s;
      return norm_axis(n, axis, ind->rank + 1, &out->axis);
    }
    default:
      break;
  }
  const ingot_value_t* x = NULL;
  int64_t axis = 0;
  ingot_status_t s;
  if ((s = nonscalar_input(graph, n, scalar, &x)) || (s = read_int(n, "axis", fallback, &axis))) return s;
  return norm_axis(n, axis, x->rank, &out->axis);
}

/* ---- reductions ---- */

ingot_status_t params_parse_reduce(const ingot_graph_t* graph, uint32_t node, ingot_reduce_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  const ingot_value_t* x = node_input(graph, n, 0);
  const ingot_value_t* axes_in = node_input(graph, n, 1);
  bool noop = false;
  ingot_status_t s;
  if (!x) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input 0 is missing");
  if ((s = read_flag(n, "keepdims", true, &out->keepdims)) || (s = read_flag(n, "noop_with_empty_axes", false, &noop))) {
    return s;
  }
  int64_t raw[INGOT_MAX_RANK];
  uint32_t count = 0;
  if (axes_in) {
    if ((s = const_ints(n, axes_in, "axes", raw, INGOT_MAX_RANK, &count))) return s;
  } else {
    const ingot_attr_t* a = ingot_node_attr(n, "axes");
    if (a && a->type != INGOT_ATTR_INTS) {
      return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'axes' must be a list of ints");
    }
    if (a) {
      if (a->count > INGOT_MAX_RANK) {
        return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'axes' has %u entries", a->count);
      }
      count = a->count;
      memcpy(raw, a->ints, sizeof(int64_t) * count);
    }
  }
  for (uint32_t i = 0; i < count; ++i) {
    int32_t ax = 0;
    if ((s = norm_axis(n, raw[i], x->rank, &ax))) return s;
    if (out->reduced[ax]) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "axis %lld appears twice", (long long)raw[i]);
    out->reduced[ax] = true;
  }
  if (count == 0 && !noop) {
    for (int32_t i = 0; i < x->rank; ++i) out->reduced[i] = true;
  }
  return INGOT_OK;
}

ingot_status_t params_parse_arg(const ingot_graph_t* graph, uint32_t node, ingot_arg_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  const ingot_value_t* x = NULL;
  int64_t axis = 0;
  ingot_status_t s;
  if ((s = nonscalar_input(graph, n, "input must not be a scalar", &x)) || (s = read_int(n, "axis", 0, &axis)) ||
      (s = norm_axis(n, axis, x->rank, &out->axis)) || (s = read_flag(n, "keepdims", true, &out->keepdims)) ||
      (s = read_flag(n, "select_last_index", false, &out->select_last_index))) {
    return s;
  }
  return INGOT_OK;
}

ingot_status_t params_parse_topk(const ingot_graph_t* graph, uint32_t node, ingot_topk_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  const ingot_value_t* x = NULL;
  const ingot_value_t* kin = node_input(graph, n, 1);
  int64_t axis = 0;
  ingot_status_t s;
  if ((s = nonscalar_input(graph, n, "input must not be a scalar", &x)) || (s = read_int(n, "axis", -1, &axis)) ||
      (s = norm_axis(n, axis, x->rank, &out->axis))) {
    return s;
  }
  if (kin) {
    int64_t v[1];
    uint32_t count = 0;
    if ((s = const_ints(n, kin, "K", v, 1, &count))) return s;
    if (count != 1) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "K must hold one value");
    out->k = v[0];
  } else {
    const ingot_attr_t* a = ingot_node_attr(n, "k");
    if (!a || a->type != INGOT_ATTR_INT) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "needs K (input or attribute 'k')");
    out->k = a->i;
  }
  if (out->k < 1 || out->k > x->dims[out->axis]) {
    return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "K = %lld is outside [1, %lld] (the axis length)", (long long)out->k,
                      (long long)x->dims[out->axis]);
  }
  if ((s = read_flag(n, "largest", true, &out->largest)) || (s = read_flag(n, "sorted", true, &out->sorted))) return s;
  return INGOT_OK;
}

ingot_status_t params_parse_cum(const ingot_graph_t* graph, uint32_t node, ingot_cum_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  const ingot_value_t* x = NULL;
  const ingot_value_t* ax = node_input(graph, n, 1);
  ingot_status_t s;
  if ((s = nonscalar_input(graph, n, "input must not be a scalar", &x))) return s;
  if (!ax) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input 'axis' is missing");
  int64_t v[1];
  uint32_t count = 0;
  if ((s = const_ints(n, ax, "axis", v, 1, &count))) return s;
  if (count != 1) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "axis must hold one value");
  if ((s = norm_axis(n, v[0], x->rank, &out->axis)) || (s = read_flag(n, "exclusive", false, &out->exclusive)) ||
      (s = read_flag(n, "reverse", false, &out->reverse))) {
    return s;
  }
  return INGOT_OK;
}

/* ---- normalizations ---- */

ingot_status_t params_parse_norm(const ingot_graph_t* graph, uint32_t node, ingot_norm_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  const ingot_value_t* x = node_input(graph, n, 0);
  int64_t v = 0;
  ingot_status_t s;
  if (!x) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input 0 is missing");
  if ((s = read_float(n, "epsilon", 1e-5f, &out->epsilon))) return s;
  out->p = 2;
  switch (n->op) {
    case INGOT_OP_BATCHNORMALIZATION:
      if ((s = read_int(n, "training_mode", 0, &v))) return s;
      if (v != 0 && v != 1) {
        return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "training_mode must be 0 or 1, not %lld", (long long)v);
      }
      out->training = v == 1;
      if ((s = read_float(n, "momentum", 0.9f, &out->momentum))) return s;
      if ((s = read_int(n, "spatial", 1, &v))) return s;
      if (v != 1) return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "spatial=0 is not supported");
      break;
    case INGOT_OP_LAYERNORMALIZATION:
    case INGOT_OP_RMSNORMALIZATION:
    case INGOT_OP_LPNORMALIZATION:
      if ((s = nonscalar_input(graph, n, "input must not be a scalar", &x)) || (s = read_int(n, "axis", -1, &v)) ||
          (s = norm_axis(n, v, x->rank, &out->axis))) {
        return s;
      }
      if (n->op == INGOT_OP_LPNORMALIZATION) {
        if ((s = read_int(n, "p", 2, &v))) return s;
        if (v != 1 && v != 2) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "p must be 1 or 2, not %lld", (long long)v);
        out->p = (int32_t)v;
      } else {
        if ((s = read_int(n, "stash_type", 1, &v))) return s;
        if (v != 1) {
          return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "stash_type %lld is not supported (1: float32)", (long long)v);
        }
      }
      break;
    case INGOT_OP_LRN:
      if (x->rank < 3) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input must have rank >= 3 (N, C, D1, ...)");
      if ((s = read_float(n, "alpha", 1e-4f, &out->alpha)) || (s = read_float(n, "beta", 0.75f, &out->beta)) ||
          (s = read_float(n, "bias", 1.0f, &out->bias)) || (s = read_int(n, "size", 0, &out->size))) {
        return s;
      }
      if (out->size < 1) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'size' must be given and >= 1");
      break;
    case INGOT_OP_GROUPNORMALIZATION:
      if (x->rank < 2) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input must have rank >= 2 (N, C, ...)");
      if ((s = read_int(n, "num_groups", 0, &out->num_groups))) return s;
      if (out->num_groups < 1 || x->dims[1] % out->num_groups != 0) {
        return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "num_groups %lld does not divide %lld channels",
                          (long long)out->num_groups, (long long)x->dims[1]);
      }
      if ((s = read_int(n, "stash_type", 1, &v))) return s;
      if (v != 1) return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "stash_type other than 1 (float32) is not supported");
      break;
    default:
      break;
  }
  return INGOT_OK;
}

/* ---- data movement ---- */

ingot_status_t params_parse_scatter(const ingot_graph_t* graph, uint32_t node, ingot_scatter_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  const ingot_value_t* x = NULL;
  ingot_status_t s;
  if ((s = nonscalar_input(graph, n, "data must have rank >= 1", &x))) return s;
  if (n->op != INGOT_OP_SCATTERND) {
    int64_t axis = 0;
    if ((s = read_int(n, "axis", 0, &axis)) || (s = norm_axis(n, axis, x->rank, &out->axis))) return s;
  }
  const ingot_attr_t* a = ingot_node_attr(n, "reduction");
  if (a && a->type != INGOT_ATTR_STRING) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'reduction' must be a string");
  }
  const char* r = a && a->s ? a->s : "none";
  static const char* const kNames[] = {"none", "add", "mul", "max", "min"};
  for (int i = 0; i < 5; ++i) {
    if (strcmp(r, kNames[i]) == 0) {
      out->reduction = (ingot_scatter_reduction_t)i;
      if (out->reduction != INGOT_SCATTER_NONE && x->dtype == INGOT_DTYPE_BOOL) {
        return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "reduction '%s' on bool is not supported", r);
      }
      return INGOT_OK;
    }
  }
  return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "reduction '%s' is not supported (none, add, mul, max, min)", r);
}

ingot_status_t params_parse_gathernd(const ingot_graph_t* graph, uint32_t node, ingot_gathernd_params_t* out) {
  return read_int(&graph->nodes[node], "batch_dims", 0, &out->batch_dims);
}

ingot_status_t params_parse_block(const ingot_graph_t* graph, uint32_t node, ingot_block_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  ingot_status_t s = read_int(n, "blocksize", 0, &out->blocksize);
  if (s) return s;
  if (out->blocksize < 1 || out->blocksize > 4096) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "blocksize %lld is invalid", (long long)out->blocksize);
  }
  if (n->op == INGOT_OP_DEPTHTOSPACE) {
    const ingot_attr_t* a = ingot_node_attr(n, "mode");
    if (a && a->type != INGOT_ATTR_STRING) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'mode' must be a string");
    const char* mode = a && a->s ? a->s : "DCR";
    if (strcmp(mode, "DCR") != 0 && strcmp(mode, "CRD") != 0) {
      return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "mode '%s' is not supported (DCR, CRD)", mode);
    }
    out->crd = strcmp(mode, "CRD") == 0;
  }
  return INGOT_OK;
}

ingot_status_t params_parse_trilu(const ingot_graph_t* graph, uint32_t node, ingot_trilu_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  int64_t v = 1;
  ingot_status_t s = read_int(n, "upper", 1, &v);
  out->upper = v != 0;
  return s;
}

ingot_status_t params_parse_signal_window(const ingot_graph_t* graph, uint32_t node,
                                          ingot_signal_window_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  int64_t periodic = 1, code = 1;
  ingot_status_t s;
  if (n->op == INGOT_OP_MELWEIGHTMATRIX) periodic = 0; /* no such attribute */
  else if ((s = read_int(n, "periodic", 1, &periodic))) return s;
  if ((s = read_int(n, "output_datatype", 1, &code))) return s;
  if (periodic != 0 && periodic != 1) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'periodic' must be 0 or 1, not %lld",
                      (long long)periodic);
  }
  out->periodic = periodic == 1;
  out->dtype = infer_onnx_dtype(code);
  switch (out->dtype) {
    case INGOT_DTYPE_F32: case INGOT_DTYPE_F64: case INGOT_DTYPE_F16: case INGOT_DTYPE_BF16:
    case INGOT_DTYPE_I8: case INGOT_DTYPE_I16: case INGOT_DTYPE_I32: case INGOT_DTYPE_I64:
    case INGOT_DTYPE_U8: case INGOT_DTYPE_U16: case INGOT_DTYPE_U32: case INGOT_DTYPE_U64:
      return INGOT_OK;
    default:
      return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT,
                        "attribute 'output_datatype' = %lld is not a type this op produces (float, double, float16, "
                        "bfloat16, or an integer of 8 to 64 bits)",
                        (long long)code);
  }
}

ingot_status_t params_parse_stft(const ingot_graph_t* graph, uint32_t node, ingot_stft_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  int64_t onesided = 1;
  ingot_status_t s = read_int(n, "onesided", 1, &onesided);
  if (s) return s;
  if (onesided != 0 && onesided != 1) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'onesided' must be 0 or 1, not %lld",
                      (long long)onesided);
  }
  out->onesided = onesided == 1;
  return INGOT_OK;
}

ingot_status_t params_parse_unique(const ingot_graph_t* graph, uint32_t node, ingot_unique_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  const ingot_value_t* x = node_input(graph, n, 0);
  int64_t sorted = 1, axis = 0;
  ingot_status_t s;
  if (!x) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input 0 is missing");
  if ((s = read_int(n, "sorted", 1, &sorted))) return s;
  if (sorted != 0 && sorted != 1) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'sorted' must be 0 or 1, not %lld", (long long)sorted);
  }
  out->sorted = sorted == 1;
  out->axis = -1;
  if (!ingot_node_attr(n, "axis")) return INGOT_OK;
  if ((s = read_int(n, "axis", 0, &axis))) return s;
  return norm_axis(n, axis, x->rank, &out->axis);
}

/* ---- NonMaxSuppression ---- */

ingot_status_t params_parse_nms(const ingot_graph_t* graph, uint32_t node, ingot_nms_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  int64_t center = 0;
  ingot_status_t s = read_int(n, "center_point_box", 0, &center);
  if (s) return s;
  if (center != 0 && center != 1) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'center_point_box' must be 0 or 1, not %lld",
                      (long long)center);
  }
  out->center_point_box = center == 1;
  return INGOT_OK;
}

/* ---- elementwise ops with attributes ---- */

/* A number attribute (FLOAT or INT) as double, exactly as written. */
static ingot_status_t read_number(const ingot_node_t* n, const char* name, double fallback, double* out) {
  const ingot_attr_t* a = ingot_node_attr(n, name);
  if (!a) {
    *out = fallback;
  } else if (a->type == INGOT_ATTR_FLOAT) {
    *out = a->f;
  } else if (a->type == INGOT_ATTR_INT) {
    *out = (double)a->i;
  } else {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute '%s' must be a number", name);
  }
  return INGOT_OK;
}

/* A STRING attribute (fallback when absent). */
static ingot_status_t read_string(const ingot_node_t* n, const char* name, const char* fallback, const char** out) {
  const ingot_attr_t* a = ingot_node_attr(n, name);
  if (a && a->type != INGOT_ATTR_STRING) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute '%s' must be a string", name);
  }
  *out = a && a->s ? a->s : fallback;
  return INGOT_OK;
}

ingot_status_t params_parse_unary(const ingot_graph_t* graph, uint32_t node, ingot_unary_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  ingot_status_t s = INGOT_OK;
  int64_t v = 0;
  const char* str = NULL;
  switch (n->op) {
    case INGOT_OP_HARDSIGMOID:
      if ((s = read_number(n, "alpha", 0.2, &out->alpha)) || (s = read_number(n, "beta", 0.5, &out->beta))) return s;
      break;
    case INGOT_OP_LEAKYRELU:
      return read_number(n, "alpha", 0.01, &out->alpha);
    case INGOT_OP_ELU:
    case INGOT_OP_THRESHOLDEDRELU:
    case INGOT_OP_SWISH:
      return read_number(n, "alpha", 1.0, &out->alpha);
    case INGOT_OP_SHRINK: /* alpha: lambd, beta: bias */
      if ((s = read_number(n, "lambd", 0.5, &out->alpha)) || (s = read_number(n, "bias", 0.0, &out->beta))) return s;
      break;
    case INGOT_OP_CELU:
      if ((s = read_number(n, "alpha", 1.0, &out->alpha))) return s;
      if (out->alpha == 0.0) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "alpha must not be 0");
      break;
    case INGOT_OP_SELU:
      if ((s = read_number(n, "alpha", 1.67326319217681884765625, &out->alpha)) ||
          (s = read_number(n, "gamma", 1.05070102214813232421875, &out->gamma))) {
        return s;
      }
      break;
    case INGOT_OP_GELU:
      if ((s = read_string(n, "approximate", "none", &str))) return s;
      if (strcmp(str, "none") != 0 && strcmp(str, "tanh") != 0) {
        return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "attribute 'approximate' = '%s' is not supported (none, tanh)", str);
      }
      out->gelu_tanh = strcmp(str, "tanh") == 0;
      break;
    case INGOT_OP_ISINF:
      if ((s = read_int(n, "detect_positive", 1, &v))) return s;
      out->detect_positive = v != 0;
      if ((s = read_int(n, "detect_negative", 1, &v))) return s;
      out->detect_negative = v != 0;
      break;
    case INGOT_OP_MOD: {
      if ((s = read_int(n, "fmod", 0, &v))) return s;
      out->fmod = v != 0;
      const ingot_value_t* a = node_input(graph, n, 0);
      if (a && (a->dtype == INGOT_DTYPE_F32 || a->dtype == INGOT_DTYPE_F64 || a->dtype == INGOT_DTYPE_F16) && v != 1) {
        return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "floating-point Mod needs attribute 'fmod' = 1");
      }
      break;
    }
    case INGOT_OP_BITSHIFT:
      if ((s = read_string(n, "direction", "", &str))) return s;
      if (strcmp(str, "LEFT") != 0 && strcmp(str, "RIGHT") != 0) {
        return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'direction' must be LEFT or RIGHT, not '%s'", str);
      }
      out->shift_left = strcmp(str, "LEFT") == 0;
      break;
    default:
      break;
  }
  return INGOT_OK;
}

/* ---- grids ---- */

ingot_status_t params_parse_grid(const ingot_graph_t* graph, uint32_t node, ingot_grid_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  int64_t v = 0;
  const char* str = NULL;
  ingot_status_t s = read_int(n, "align_corners", 0, &v);
  if (s) return s;
  out->align_corners = v != 0;
  if (n->op != INGOT_OP_GRIDSAMPLE) return INGOT_OK;
  if ((s = read_string(n, "mode", graph->opset > 0 && graph->opset < 20 ? "bilinear" : "linear", &str))) return s;
  if (strcmp(str, "linear") == 0 || strcmp(str, "bilinear") == 0) {
    out->mode = INGOT_GRID_LINEAR;
  } else if (strcmp(str, "nearest") == 0) {
    out->mode = INGOT_GRID_NEAREST;
  } else if (strcmp(str, "cubic") == 0 || strcmp(str, "bicubic") == 0) {
    out->mode = INGOT_GRID_CUBIC;
  } else {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'mode' = '%s' is not one of linear, nearest, cubic", str);
  }
  if ((s = read_string(n, "padding_mode", "zeros", &str))) return s;
  if (strcmp(str, "zeros") == 0) {
    out->padding = INGOT_GRID_ZEROS;
  } else if (strcmp(str, "border") == 0) {
    out->padding = INGOT_GRID_BORDER;
  } else if (strcmp(str, "reflection") == 0) {
    out->padding = INGOT_GRID_REFLECTION;
  } else {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT,
                      "attribute 'padding_mode' = '%s' is not one of zeros, border, reflection", str);
  }
  return INGOT_OK;
}

/* ---- RoiAlign ---- */

ingot_status_t params_parse_roialign(const ingot_graph_t* graph, uint32_t node, ingot_roialign_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  ingot_status_t s;
  const char* str = NULL;
  if ((s = read_string(n, "mode", "avg", &str))) return s;
  if (strcmp(str, "avg") != 0 && strcmp(str, "max") != 0) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'mode' = '%s' is not avg or max", str);
  }
  out->max_mode = strcmp(str, "max") == 0;
  const char* ctm_default = graph->opset > 0 && graph->opset < 16 ? "output_half_pixel" : "half_pixel";
  if ((s = read_string(n, "coordinate_transformation_mode", ctm_default, &str))) return s;
  if (strcmp(str, "half_pixel") != 0 && strcmp(str, "output_half_pixel") != 0) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT,
                      "attribute 'coordinate_transformation_mode' = '%s' is not half_pixel or output_half_pixel", str);
  }
  out->half_pixel = strcmp(str, "half_pixel") == 0;
  if ((s = read_int(n, "output_height", 1, &out->output_height)) ||
      (s = read_int(n, "output_width", 1, &out->output_width)) ||
      (s = read_int(n, "sampling_ratio", 0, &out->sampling_ratio)) ||
      (s = read_float(n, "spatial_scale", 1.0f, &out->spatial_scale))) {
    return s;
  }
  if (out->output_height < 1 || out->output_height > INT32_MAX || out->output_width < 1 ||
      out->output_width > INT32_MAX) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "output_height and output_width must be in [1, 2^31) (%lld, %lld)",
                      (long long)out->output_height, (long long)out->output_width);
  }
  if (out->sampling_ratio < 0 || out->sampling_ratio > 4096) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "sampling_ratio = %lld must be in [0, 4096]",
                      (long long)out->sampling_ratio);
  }
  if (!isfinite(out->spatial_scale)) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "spatial_scale must be finite");
  }
  return INGOT_OK;
}

/* ---- attention ---- */

ingot_status_t params_parse_attention(const ingot_graph_t* graph, uint32_t node, ingot_attention_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  ingot_status_t s;
  int64_t v = 0;
  if (n->op == INGOT_OP_ROTARYEMBEDDING) {
    if ((s = read_int(n, "num_heads", 0, &out->num_heads)) ||
        (s = read_int(n, "rotary_embedding_dim", 0, &out->rotary_embedding_dim)) ||
        (s = read_int(n, "interleaved", 0, &v))) {
      return s;
    }
    out->interleaved = v != 0;
    return INGOT_OK;
  }
  if ((s = read_int(n, "q_num_heads", 0, &out->q_num_heads)) || (s = read_int(n, "kv_num_heads", 0, &out->kv_num_heads))) {
    return s;
  }
  const ingot_attr_t* sa = ingot_node_attr(n, "scale");
  out->has_scale = sa != NULL;
  if ((s = read_float(n, "scale", 0.0f, &out->scale))) return s;
  if (n->op == INGOT_OP_LINEARATTENTION) return INGOT_OK;
  if ((s = read_float(n, "softcap", 0.0f, &out->softcap)) || (s = read_int(n, "is_causal", 0, &v))) return s;
  out->is_causal = v != 0;
  if ((s = read_int(n, "qk_matmul_output_mode", 0, &v))) return s;
  if (v < 0 || v > 3) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "qk_matmul_output_mode must be 0..3");
  out->qk_matmul_output_mode = (int32_t)v;
  return INGOT_OK;
}

/* ---- Add/Sub/Mul/Div, Clip, Transpose, the losses ---- */

ingot_status_t params_parse_binary(const ingot_graph_t* graph, uint32_t node, ingot_binary_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  int64_t broadcast = 0, axis = 0;
  ingot_status_t s;
  if ((s = read_int(n, "broadcast", 0, &broadcast))) return s;
  if (broadcast == 0 || !ingot_node_attr(n, "axis")) return INGOT_OK;
  const ingot_value_t* a = node_input(graph, n, 0);
  const ingot_value_t* b = node_input(graph, n, 1);
  if (!a || !b) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "needs two inputs");
  if ((s = read_int(n, "axis", 0, &axis))) return s;
  int64_t given = axis;
  if (axis < 0) axis += a->rank;
  if (axis < 0 || axis + b->rank > a->rank) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "legacy broadcast: axis %lld does not fit rank %d into %d",
                      (long long)given, b->rank, a->rank);
  }
  out->legacy_broadcast = true;
  out->axis = (int32_t)axis;
  return INGOT_OK;
}

ingot_status_t params_parse_clip(const ingot_graph_t* graph, uint32_t node, ingot_clip_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  ingot_status_t s;
  out->has_min = ingot_node_attr(n, "min") != NULL;
  out->has_max = ingot_node_attr(n, "max") != NULL;
  if ((out->has_min && (s = read_float(n, "min", 0.0f, &out->min))) ||
      (out->has_max && (s = read_float(n, "max", 0.0f, &out->max)))) {
    return s;
  }
  return INGOT_OK;
}

ingot_status_t params_parse_transpose(const ingot_graph_t* graph, uint32_t node, ingot_transpose_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  const ingot_value_t* x = node_input(graph, n, 0);
  if (!x) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input 0 is missing");
  const ingot_attr_t* a = ingot_node_attr(n, "perm");
  if (a && a->type != INGOT_ATTR_INTS) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'perm' must be a list of ints");
  if (!a || a->count == 0) {
    for (int32_t i = 0; i < x->rank; ++i) out->perm[i] = x->rank - 1 - i;
    return INGOT_OK;
  }
  if ((int32_t)a->count != x->rank) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "perm has %u entries, input rank is %d", a->count, x->rank);
  }
  bool seen[INGOT_MAX_RANK] = {false};
  for (uint32_t i = 0; i < a->count; ++i) {
    if (a->ints[i] < 0 || a->ints[i] >= x->rank || seen[a->ints[i]]) {
      return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "perm is not a permutation of 0..%d", x->rank - 1);
    }
    seen[a->ints[i]] = true;
    out->perm[i] = (int32_t)a->ints[i];
  }
  return INGOT_OK;
}

ingot_status_t params_parse_loss(const ingot_graph_t* graph, uint32_t node, ingot_loss_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  const char* red = NULL;
  ingot_status_t s;
  (void)graph;
  if ((s = read_string(n, "reduction", "mean", &red))) return s;
  if (strcmp(red, "none") == 0) {
    out->reduction = INGOT_LOSS_NONE;
  } else if (strcmp(red, "sum") == 0) {
    out->reduction = INGOT_LOSS_SUM;
  } else if (strcmp(red, "mean") == 0) {
    out->reduction = INGOT_LOSS_MEAN;
  } else {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "reduction '%s' is not none, sum or mean", red);
  }
  const ingot_attr_t* ii = ingot_node_attr(n, "ignore_index");
  if (ii && ii->type != INGOT_ATTR_INT) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'ignore_index' must be an int");
  }
  out->has_ignore_index = ii != NULL;
  out->ignore_index = ii ? ii->i : 0;
  return INGOT_OK;
}

/* ---- sequence ops ---- */

/* ReverseSequence: batch_axis (default 1) and time_axis (default 0), the
 * two distinct and each 0 or 1 (the spec's only choices). */
ingot_status_t params_parse_reverse_sequence(const ingot_graph_t* graph, uint32_t node,
                                             ingot_reverse_sequence_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  int64_t b = 1, t = 0;
  ingot_status_t s;
  if ((s = read_int(n, "batch_axis", 1, &b)) || (s = read_int(n, "time_axis", 0, &t))) return s;
  if ((b != 0 && b != 1) || (t != 0 && t != 1) || b == t) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT,
                      "batch_axis %lld and time_axis %lld must be 0 and 1 in some order", (long long)b, (long long)t);
  }
  out->batch_axis = (int32_t)b;
  out->time_axis = (int32_t)t;
  return INGOT_OK;
}

/* TensorScatter: axis (default -2) of past_cache, not the batch axis 0;
 * mode "linear" (default) or "circular". */
ingot_status_t params_parse_tensor_scatter(const ingot_graph_t* graph, uint32_t node,
                                           ingot_tensor_scatter_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  const ingot_value_t* x = NULL;
  int64_t axis = -2;
  const char* mode = NULL;
  ingot_status_t s;
  if ((s = nonscalar_input(graph, n, "past_cache must have rank >= 1", &x)) || (s = read_int(n, "axis", -2, &axis)) ||
      (s = norm_axis(n, axis, x->rank, &out->axis)) || (s = read_string(n, "mode", "linear", &mode)))
    return s;
  if (out->axis == 0) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "axis must not be 0 (the batch axis)");
  if (strcmp(mode, "linear") != 0 && strcmp(mode, "circular") != 0) {
    return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "mode '%s' is not supported (linear, circular)", mode);
  }
  out->circular = strcmp(mode, "circular") == 0;
  return INGOT_OK;
}
