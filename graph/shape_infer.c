/* Dtype and shape inference for every op in ops.def, following the ONNX
 * operator specification. One function per op (or op family), in a table
 * generated from ops.def, so a new op without inference fails the build.
 *
 * Before an op's inference function runs, its attributes are read and
 * checked once into node.params (graph/params.c); the functions read that.
 * Inference also canonicalizes window attributes of Conv and the pools:
 * auto_pad is resolved into explicit `pads` (auto_pad becomes "NOTSET", and
 * SAME_* leaves the int attribute "ingot.auto_pad_same") and
 * kernel_shape / strides / dilations / pads are always present afterwards,
 * so later stages read one form. */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "graph/graph.h"
#include "graph_internal.h"
#include "infer_internal.h"

/* Dimensions above this are refused, so that window arithmetic on int64 can
 * never overflow (attributes are capped at INT32_MAX below). */
#define MAX_DIM ((int64_t)1 << 48)

/* ---- windows (Conv, MaxPool, AveragePool) ---- */

/* Writes the canonical window attributes for later readers of the
 * attributes (the node's params hold the same): auto_pad resolved. */
static void write_window_attrs(const infer_ctx_t* c, const ingot_window_params_t* w) {
  uint32_t sp = (uint32_t)w->spatial;
  ingot_graph_node_set_ints(c->g, c->id, "kernel_shape", w->kernel, sp);
  ingot_graph_node_set_ints(c->g, c->id, "strides", w->strides, sp);
  ingot_graph_node_set_ints(c->g, c->id, "dilations", w->dilations, sp);
  ingot_graph_node_set_ints(c->g, c->id, "pads", w->pads, 2 * sp);
  const char* auto_pad = ingot_node_attr_string(&c->g->nodes[c->id], "auto_pad", "NOTSET");
  if (strcmp(auto_pad, "NOTSET") != 0) {
    /* pads from the input's size: a ranged dim's window cannot keep them
     * (graph/ranges.c) */
    if (strncmp(auto_pad, "SAME", 4) == 0)
      ingot_graph_node_add_attr(c->g, c->id, "ingot.auto_pad_same", INGOT_ATTR_INT)->i = 1;
    ingot_attr_t* a = ingot_graph_node_add_attr(c->g, c->id, "auto_pad", INGOT_ATTR_STRING);
    a->s = "NOTSET";
  }
}

/* A packed weight (ingot_graph_pack_weights) whose shape does not fit. */
static ingot_status_t infer_packed_fail(infer_ctx_t* c) {
  return infer_fail(c->n, INGOT_ERROR_INTERNAL, "packed weight (panels of %u) has the wrong shape",
                    c->n->weight_block);
}

ingot_status_t infer_CONV(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  const ingot_value_t* w = infer_input(c, 1);
  const ingot_value_t* b = infer_input(c, 2);
  ingot_value_t unpacked;
  if (!(w = ingot_node_logical_input(c->n, 1, w, &unpacked))) return infer_packed_fail(c);
  if (x->rank < 3 || x->rank > (int32_t)INGOT_MAX_RANK) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input must have rank >= 3 (N, C, spatial...), has %d", x->rank);
  }
  if (w->rank != x->rank) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "weight rank %d differs from input rank %d", w->rank,
                     x->rank);
  }
  if (!infer_is_float(x->dtype) || w->dtype != x->dtype) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input and weight must be the same float type (%s, %s)",
                     ingot_graph_dtype_name(x->dtype), ingot_graph_dtype_name(w->dtype));
  }
  int64_t out_channels = w->dims[0]; /* group and window: node.params (graph/params.c) */
  if (b && (b->rank != 1 || b->dims[0] != out_channels || b->dtype != x->dtype)) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "bias must be a vector of %lld %s", (long long)out_channels,
                     ingot_graph_dtype_name(x->dtype));
  }
  const ingot_window_params_t win = c->n->params.u.conv.window;
  write_window_attrs(c, &win);
  c->n = &c->g->nodes[c->id];
  const ingot_epilogue_t* ep = &c->n->epilogue;
  int64_t dims[INGOT_MAX_RANK];
  dims[0] = x->dims[0];
  dims[1] = out_channels;
  for (int32_t i = 0; i < win.spatial; ++i) {
    dims[2 + i] = win.out[i];
    if (ep->output_padded) dims[2 + i] += ep->output_pads[i] + ep->output_pads[win.spatial + i];
  }
  infer_set_output(c, 0, x->dtype, x->rank, dims);
  return INGOT_OK;
}

static ingot_status_t infer_pool(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  if (x->rank < 3) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input must have rank >= 3 (N, C, spatial...), has %d", x->rank);
  }
  if (!infer_is_float(x->dtype) && !(c->n->op == INGOT_OP_MAXPOOL && (x->dtype == INGOT_DTYPE_I8 || x->dtype == INGOT_DTYPE_U8))) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported", ingot_graph_dtype_name(x->dtype));
  }
  const ingot_window_params_t win = c->n->params.u.pool.window;
  write_window_attrs(c, &win);
  c->n = &c->g->nodes[c->id];
  int64_t dims[INGOT_MAX_RANK];
  dims[0] = x->dims[0];
  dims[1] = x->dims[1];
  for (int32_t i = 0; i < win.spatial; ++i) dims[2 + i] = win.out[i];
  infer_set_output(c, 0, x->dtype, x->rank, dims);
  infer_set_output(c, 1, INGOT_DTYPE_I64, x->rank, dims); /* MaxPool Indices */
  return INGOT_OK;
}

ingot_status_t infer_MAXPOOL(infer_ctx_t* c) { return infer_pool(c); }
ingot_status_t infer_AVERAGEPOOL(infer_ctx_t* c) { return infer_pool(c); }

ingot_status_t infer_GLOBALAVERAGEPOOL(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  if (x->rank < 3) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input must have rank >= 3 (N, C, spatial...), has %d", x->rank);
  }
  if (!infer_is_float(x->dtype)) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported", ingot_graph_dtype_name(x->dtype));
  }
  int64_t dims[INGOT_MAX_RANK];
  for (int32_t i = 0; i < x->rank; ++i) dims[i] = i < 2 ? x->dims[i] : 1;
  infer_set_output(c, 0, x->dtype, x->rank, dims);
  return INGOT_OK;
}

ingot_status_t infer_BATCHNORMALIZATION(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  if (x->rank < 2) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input must have rank >= 2, has %d", x->rank);
  if (!infer_is_float(x->dtype)) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported", ingot_graph_dtype_name(x->dtype));
  }
  /* training_mode, spatial, epsilon: node.params (graph/params.c) */
  static const char* const kNames[] = {"", "scale", "B", "mean", "var"};
  for (uint32_t i = 1; i < 5; ++i) {
    const ingot_value_t* p = infer_input(c, i);
    if (!p) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input '%s' is required", kNames[i]);
    if (p->rank != 1 || p->dims[0] != x->dims[1] || !infer_is_float(p->dtype)) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "'%s' must be a float vector of %lld channels", kNames[i],
                       (long long)x->dims[1]);
    }
  }
  /* Outputs 1 and 2, running_mean and running_var, exist in training mode
   * only (opset 14 on; the older forms' statistics outputs are refused). */
  bool training = c->n->params.u.norm.training;
  for (uint32_t k = 1; k < c->n->output_count; ++k) {
    if (c->n->outputs[k] == INGOT_NO_VALUE) continue;
    if (!training) {
      return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED,
                        "output %u (running mean / variance) needs training_mode=1", k);
    }
    infer_copy_output(c, k, infer_input(c, k + 2));
  }
  infer_copy_output(c, 0, x);
  return INGOT_OK;
}

ingot_status_t infer_GEMM(infer_ctx_t* c) {
  const ingot_value_t* a = infer_input(c, 0);
  const ingot_value_t* b = infer_input(c, 1);
  ingot_value_t unpacked;
  if (!(b = ingot_node_logical_input(c->n, 1, b, &unpacked))) return infer_packed_fail(c);
  const ingot_value_t* bias = infer_input(c, 2);
  if (a->rank != 2 || b->rank != 2) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "A and B must be matrices (ranks %d, %d)", a->rank, b->rank);
  }
  if (a->dtype != b->dtype || !infer_is_float(a->dtype)) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "A and B must be the same float type (%s, %s)",
                     ingot_graph_dtype_name(a->dtype), ingot_graph_dtype_name(b->dtype));
  }
  bool trans_a = c->n->params.u.gemm.trans_a, trans_b = c->n->params.u.gemm.trans_b;
  int64_t m = trans_a ? a->dims[1] : a->dims[0], k = trans_a ? a->dims[0] : a->dims[1];
  int64_t k2 = trans_b ? b->dims[1] : b->dims[0], n = trans_b ? b->dims[0] : b->dims[1];
  if (k != k2) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "inner dimensions differ: A gives K=%lld, B gives K=%lld",
                     (long long)k, (long long)k2);
  }
  if (bias) {
    if (bias->rank > 2 || bias->dtype != a->dtype) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "C must be a %s tensor of rank <= 2",
                       ingot_graph_dtype_name(a->dtype));
    }
    int64_t want[2] = {m, n};
    for (int32_t i = 0; i < bias->rank; ++i) {
      int64_t d = bias->dims[i], full = want[2 - bias->rank + i];
      if (d != 1 && d != full) {
        char buf[128];
        infer_shape_str(bias, buf, sizeof(buf));
        return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "C of shape %s does not broadcast to %lldx%lld", buf,
                         (long long)m, (long long)n);
      }
    }
  }
  int64_t dims[2] = {m, n};
  infer_set_output(c, 0, a->dtype, 2, dims);
  return INGOT_OK;
}

ingot_status_t infer_MATMUL(infer_ctx_t* c) {
  const ingot_value_t* a = infer_input(c, 0);
  const ingot_value_t* b = infer_input(c, 1);
  ingot_value_t unpacked;
  if (!(b = ingot_node_logical_input(c->n, 1, b, &unpacked))) return infer_packed_fail(c);
  if (a->rank < 1 || b->rank < 1) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "inputs must not be scalars");
  if (a->dtype != b->dtype) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "inputs have different types (%s, %s)",
                     ingot_graph_dtype_name(a->dtype), ingot_graph_dtype_name(b->dtype));
  }
  if (!infer_is_float(a->dtype) && a->dtype != INGOT_DTYPE_I32 && a->dtype != INGOT_DTYPE_I64) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "type %s is not supported", ingot_graph_dtype_name(a->dtype));
  }
  /* Promote 1-D operands: [K] -> [1, K] for A, [K] -> [K, 1] for B. */
  int64_t ad[INGOT_MAX_RANK + 1], bd[INGOT_MAX_RANK + 1];
  int32_t ar = a->rank, br = b->rank;
  if (ar == 1) {
    ad[0] = 1;
    ad[1] = a->dims[0];
    ar = 2;
  } else {
    memcpy(ad, a->dims, sizeof(int64_t) * (size_t)ar);
  }
  if (br == 1) {
    bd[0] = b->dims[0];
    bd[1] = 1;
    br = 2;
  } else {
    memcpy(bd, b->dims, sizeof(int64_t) * (size_t)br);
  }
  if (ad[ar - 1] != bd[br - 2]) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "inner dimensions differ: %lld vs %lld",
                     (long long)ad[ar - 1], (long long)bd[br - 2]);
  }
  int32_t batch_a = ar - 2, batch_b = br - 2;
  int32_t batch = batch_a > batch_b ? batch_a : batch_b;
  int64_t dims[INGOT_MAX_RANK + 2];
  for (int32_t i = 0; i < batch; ++i) {
    int32_t ia = i - (batch - batch_a), ib = i - (batch - batch_b);
    int64_t da = ia >= 0 ? ad[ia] : 1, db = ib >= 0 ? bd[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "batch dimensions %lld and %lld do not broadcast",
                       (long long)da, (long long)db);
    }
    dims[i] = da == 1 ? db : da;
  }
  int32_t rank = batch;
  if (a->rank > 1) dims[rank++] = ad[ar - 2];
  if (b->rank > 1) dims[rank++] = bd[br - 1];
  if (rank > (int32_t)INGOT_MAX_RANK) return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "output rank %d is too large", rank);
  infer_set_output(c, 0, a->dtype, rank, dims);
  return INGOT_OK;
}

/* Numpy-style (multidirectional) broadcasting of a and b into dims. */
static ingot_status_t broadcast(const infer_ctx_t* c, const ingot_value_t* a, const ingot_value_t* b, int32_t* out_rank,
                                int64_t* dims) {
  int32_t rank = a->rank > b->rank ? a->rank : b->rank;
  for (int32_t i = 0; i < rank; ++i) {
    int32_t ia = i - (rank - a->rank), ib = i - (rank - b->rank);
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      char sa[128], sb[128];
      infer_shape_str(a, sa, sizeof(sa));
      infer_shape_str(b, sb, sizeof(sb));
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "shapes %s and %s do not broadcast", sa, sb);
    }
    dims[i] = da == 1 ? db : da;
  }
  *out_rank = rank;
  return INGOT_OK;
}

ingot_status_t infer_broadcast(const infer_ctx_t* c, const ingot_value_t* a, const ingot_value_t* b, int32_t* out_rank,
                               int64_t* dims) {
  return broadcast(c, a, b, out_rank, dims);
}

static ingot_status_t infer_binary(infer_ctx_t* c) {
  const ingot_value_t* a = infer_input(c, 0);
  const ingot_value_t* b = infer_input(c, 1);
  if (a->dtype != b->dtype) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "inputs have different types (%s, %s)",
                     ingot_graph_dtype_name(a->dtype), ingot_graph_dtype_name(b->dtype));
  }
  if (c->n->params.u.binary.legacy_broadcast) {
    /* Legacy broadcast (opset < 7): B's dims match A's from `axis` on (or are
     * 1); the output has A's shape. broadcast, axis: graph/params.c */
    int64_t axis = c->n->params.u.binary.axis;
    for (int32_t i = 0; i < b->rank; ++i) {
      if (b->dims[i] != 1 && b->dims[i] != a->dims[axis + i]) {
        return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "legacy broadcast: B dimension %d (%lld) differs from A's %lld",
                          i, (long long)b->dims[i], (long long)a->dims[axis + i]);
      }
    }
    infer_copy_output(c, 0, a);
    return INGOT_OK;
  }
  int64_t dims[INGOT_MAX_RANK];
  int32_t rank = 0;
  ingot_status_t s = broadcast(c, a, b, &rank, dims);
  if (s) return s;
  infer_set_output(c, 0, a->dtype, rank, dims);
  return INGOT_OK;
}

ingot_status_t infer_ADD(infer_ctx_t* c) { return infer_binary(c); }
ingot_status_t infer_SUB(infer_ctx_t* c) { return infer_binary(c); }
ingot_status_t infer_MUL(infer_ctx_t* c) { return infer_binary(c); }
ingot_status_t infer_DIV(infer_ctx_t* c) { return infer_binary(c); }

static ingot_status_t infer_same(infer_ctx_t* c) {
  infer_copy_output(c, 0, infer_input(c, 0));
  return INGOT_OK;
}

static ingot_status_t infer_float_unary(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  if (!infer_is_float(x->dtype)) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported", ingot_graph_dtype_name(x->dtype));
  }
  return infer_same(c);
}

ingot_status_t infer_RELU(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  if (!infer_is_float(x->dtype) && x->dtype != INGOT_DTYPE_I32 && x->dtype != INGOT_DTYPE_I64 && x->dtype != INGOT_DTYPE_I8) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported", ingot_graph_dtype_name(x->dtype));
  }
  return infer_same(c);
}
ingot_status_t infer_SIGMOID(infer_ctx_t* c) { return infer_float_unary(c); }
ingot_status_t infer_TANH(infer_ctx_t* c) { return infer_float_unary(c); }
ingot_status_t infer_IDENTITY(infer_ctx_t* c) { return infer_same(c); }

ingot_status_t infer_CLIP(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  for (uint32_t i = 1; i < 3; ++i) {
    const ingot_value_t* bound = infer_input(c, i);
    if (!bound) continue;
    if (c->g->opset > 0 && c->g->opset < 11) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "min/max inputs need opset >= 11 (model imports %lld)",
                       (long long)c->g->opset);
    }
    if (bound->dtype != x->dtype || ingot_value_numel(bound) != 1 || bound->rank > 1) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "%s must be a scalar of type %s", i == 1 ? "min" : "max",
                       ingot_graph_dtype_name(x->dtype));
    }
  }
  return infer_same(c);
}

ingot_status_t infer_DROPOUT(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  infer_copy_output(c, 0, x);
  infer_set_output(c, 1, INGOT_DTYPE_BOOL, x->rank, x->dims);
  return INGOT_OK;
}

ingot_status_t infer_SOFTMAX(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  if (!infer_is_float(x->dtype)) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported", ingot_graph_dtype_name(x->dtype));
  }
  return infer_same(c); /* the axis: node.params (graph/params.c) */
}

ingot_status_t infer_FLATTEN(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  int64_t axis = 0;
  ingot_status_t s = infer_norm_axis(c, ingot_node_attr_int(c->n, "axis", 1), x->rank, true, &axis);
  if (s) return s;
  int64_t dims[2] = {1, 1};
  for (int32_t i = 0; i < x->rank; ++i) dims[i < axis ? 0 : 1] *= x->dims[i];
  infer_set_output(c, 0, x->dtype, 2, dims);
  return INGOT_OK;
}

ingot_status_t infer_RESHAPE(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  const ingot_value_t* shape = infer_input(c, 1);
  if (shape->kind != INGOT_VALUE_WEIGHT || (!shape->data && ingot_value_numel(shape) > 0)) {
    char deps[512];
    ingot_graph_input_deps(c->g, c->n->inputs[1], deps, sizeof deps);
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED,
                      "input 'shape' ('%s') decides the output shape and must be known at compile time, but it is %s%s",
                      shape->name, shape->kind == INGOT_VALUE_INPUT ? "a graph input" : "computed at run time", deps);
  }
  if (shape->dtype != INGOT_DTYPE_I64) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "the shape input must be int64, not %s",
                      ingot_graph_dtype_name(shape->dtype));
  }
  if (shape->rank != 1) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "the shape input must be 1-D");
  int64_t count = shape->dims[0];
  if (count > (int64_t)INGOT_MAX_RANK) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "target rank %lld is above %u", (long long)count, INGOT_MAX_RANK);
  }
  const int64_t* want = (const int64_t*)shape->data;
  bool allow_zero = ingot_node_attr_int(c->n, "allowzero", 0) != 0;
  int64_t dims[INGOT_MAX_RANK];
  int64_t numel = ingot_value_numel(x), known = 1;
  int32_t infer_at = -1;
  for (int64_t i = 0; i < count; ++i) {
    int64_t d = want[i];
    if (d == 0 && !allow_zero) {
      if (i >= x->rank) {
        return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "shape[%lld] = 0 copies a dimension the input lacks",
                         (long long)i);
      }
      d = x->dims[i];
    } else if (d == -1) {
      if (infer_at >= 0) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "more than one -1 in the shape");
      infer_at = (int32_t)i;
      dims[i] = 1;
      continue;
    } else if (d < 0) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "shape[%lld] = %lld is invalid", (long long)i, (long long)d);
    }
    if (d > MAX_DIM) return infer_fail(c->n, INGOT_ERROR_LIMIT, "shape[%lld] = %lld is too large", (long long)i, (long long)d);
    dims[i] = d;
    if (d != 0 && known > INT64_MAX / d) return infer_fail(c->n, INGOT_ERROR_LIMIT, "the target shape overflows");
    known *= d;
  }
  if (infer_at >= 0) {
    if (known == 0 || numel % known != 0) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "cannot infer the -1 dimension: %lld elements into %lld",
                       (long long)numel, (long long)known);
    }
    dims[infer_at] = numel / known;
    known = numel;
  }
  if (known != numel) {
    char buf[128];
    infer_shape_str(x, buf, sizeof(buf));
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "cannot reshape %s (%lld elements) into %lld elements", buf,
                     (long long)numel, (long long)known);
  }
  infer_set_output(c, 0, x->dtype, (int32_t)count, dims);
  return INGOT_OK;
}

ingot_status_t infer_TRANSPOSE(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  /* perm: node.params (graph/params.c); written back when it was implied */
  int64_t p[INGOT_MAX_RANK];
  for (int32_t i = 0; i < x->rank; ++i) p[i] = c->n->params.u.transpose.perm[i];
  uint32_t count = 0;
  if (!ingot_node_attr_ints(c->n, "perm", &count) || count == 0) {
    ingot_graph_node_set_ints(c->g, c->id, "perm", p, (uint32_t)x->rank);
  }
  int64_t dims[INGOT_MAX_RANK];
  for (int32_t i = 0; i < x->rank; ++i) dims[i] = x->dims[p[i]];
  infer_set_output(c, 0, x->dtype, x->rank, dims);
  return INGOT_OK;
}

ingot_status_t infer_CONCAT(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  int64_t axis = c->n->params.u.axis.axis; /* graph/params.c */
  int64_t dims[INGOT_MAX_RANK];
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  for (uint32_t i = 1; i < c->n->input_count; ++i) {
    const ingot_value_t* y = infer_input(c, i);
    if (!y) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input %u is missing", i);
    if (y->rank != x->rank || y->dtype != x->dtype) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input '%s' differs in rank or type from '%s'", y->name,
                       x->name);
    }
    for (int32_t k = 0; k < x->rank; ++k) {
      if (k == axis) continue;
      if (y->dims[k] != x->dims[k]) {
        return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input '%s' differs from '%s' in dimension %d", y->name,
                         x->name, k);
      }
    }
    dims[axis] += y->dims[axis];
    if (dims[axis] > MAX_DIM) return infer_fail(c->n, INGOT_ERROR_LIMIT, "the output is too large");
  }
  infer_set_output(c, 0, x->dtype, x->rank, dims);
  return INGOT_OK;
}

ingot_status_t infer_CONSTANT(infer_ctx_t* c) {
  const ingot_attr_t* a;
  if ((a = ingot_node_attr(c->n, "value")) && a->type == INGOT_ATTR_TENSOR && a->tensor < c->g->value_count) {
    infer_copy_output(c, 0, &c->g->values[a->tensor]);
  } else if ((a = ingot_node_attr(c->n, "value_float")) && a->type == INGOT_ATTR_FLOAT) {
    infer_set_output(c, 0, INGOT_DTYPE_F32, 0, NULL);
  } else if ((a = ingot_node_attr(c->n, "value_int")) && a->type == INGOT_ATTR_INT) {
    infer_set_output(c, 0, INGOT_DTYPE_I64, 0, NULL);
  } else if ((a = ingot_node_attr(c->n, "value_floats")) && a->type == INGOT_ATTR_FLOATS) {
    int64_t d = a->count;
    infer_set_output(c, 0, INGOT_DTYPE_F32, 1, &d);
  } else if ((a = ingot_node_attr(c->n, "value_ints")) && a->type == INGOT_ATTR_INTS) {
    int64_t d = a->count;
    infer_set_output(c, 0, INGOT_DTYPE_I64, 1, &d);
  } else {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED,
                     "needs one of the attributes value, value_float(s), value_int(s) (others are not supported)");
  }
  return INGOT_OK;
}


typedef ingot_status_t (*infer_fn_t)(infer_ctx_t* c);
static const infer_fn_t kInfer[] = {
#define INGOT_OP(id, name, min_in, max_in, min_out, max_out, infer, lower) infer,
#include "graph/ops.def"
};
static_assert(sizeof(kInfer) / sizeof(kInfer[0]) == INGOT_OP_COUNT_, "shape inference table out of sync with ops.def");

/* Ops that compute each element of their output from the elements at the
 * same position of their inputs (numpy broadcasting): run over a tensor's
 * bounds, they give its rows in the same places. */
bool ingot_op_works_by_element(ingot_op_t op) {
  switch (op) {
    case INGOT_OP_IDENTITY: case INGOT_OP_CAST: case INGOT_OP_CASTLIKE:
    case INGOT_OP_ADD: case INGOT_OP_SUB: case INGOT_OP_MUL: case INGOT_OP_DIV: case INGOT_OP_POW: case INGOT_OP_MOD:
    case INGOT_OP_MIN: case INGOT_OP_MAX: case INGOT_OP_SUM: case INGOT_OP_MEAN: case INGOT_OP_PRELU:
    case INGOT_OP_RELU: case INGOT_OP_CLIP: case INGOT_OP_SIGMOID: case INGOT_OP_TANH: case INGOT_OP_ABS:
    case INGOT_OP_NEG: case INGOT_OP_EXP: case INGOT_OP_LOG: case INGOT_OP_SQRT: case INGOT_OP_RECIPROCAL:
    case INGOT_OP_FLOOR: case INGOT_OP_CEIL: case INGOT_OP_ROUND: case INGOT_OP_SIGN: case INGOT_OP_ERF:
    case INGOT_OP_HARDSIGMOID: case INGOT_OP_HARDSWISH: case INGOT_OP_LEAKYRELU: case INGOT_OP_ELU:
    case INGOT_OP_SELU: case INGOT_OP_CELU: case INGOT_OP_GELU: case INGOT_OP_SOFTPLUS: case INGOT_OP_SOFTSIGN:
    case INGOT_OP_THRESHOLDEDRELU: case INGOT_OP_SWISH: case INGOT_OP_ISNAN: case INGOT_OP_ISINF:
    case INGOT_OP_EQUAL: case INGOT_OP_LESS: case INGOT_OP_GREATER: case INGOT_OP_LESSOREQUAL:
    case INGOT_OP_GREATEROREQUAL: case INGOT_OP_AND: case INGOT_OP_OR: case INGOT_OP_XOR: case INGOT_OP_NOT:
    case INGOT_OP_WHERE: case INGOT_OP_BITWISEAND: case INGOT_OP_BITWISEOR: case INGOT_OP_BITWISEXOR:
    case INGOT_OP_BITWISENOT: case INGOT_OP_FUSED_ELEMENTWISE:
      return true;
    default:
      return false;
  }
}

/* Whether node n, reading `rt` (input k) whose size a run decides along
 * dims[0] only, computes each row of its output y (along y's dims[0], of
 * the same bound) from the same row of rt, so that run over the bounds it
 * leaves the run's rows where the bounds put them:
 *   - elementwise ops over rt's shape, every other input broadcast along
 *     dims[0] (a lower rank or a 1 there), or sharing rt's run-time shape;
 *   - Softmax, LogSoftmax, Hardmax, ArgMax, ArgMin along another axis, and
 *     reductions that keep dims[0];
 *   - Gather of rt's rows along another axis, or of a constant-size data
 *     along axis 0 at rt's indices;
 *   - MatMul of rt as A (its rows, or its batch along dims[0]) by a B that
 *     does not span that batch;
 *   - Concat along another axis of inputs that all share rt's run-time size;
 *   - Transpose that keeps axis 0 first;
 *   - Reshape, Flatten, Squeeze, Unsqueeze that keep the rows (the same
 *     bound first, rows of the same size), when that bound is above 1 (with
 *     a bound of 1 an axis put before it could not be told apart). */
static bool works_by_row(const ingot_graph_t* graph, const ingot_node_t* n, const ingot_value_t* rt, uint32_t k,
                         const ingot_value_t* y) {
  if (rt->runtime_dims != 1u || !y || y->rank < 1 || y->dims[0] != rt->dims[0]) return false;
  for (uint32_t i = 0; i < n->input_count; ++i) { /* every other run-sized input shares rt's size */
    if (n->inputs[i] == INGOT_NO_VALUE || i == k) continue;
    const ingot_value_t* v = &graph->values[n->inputs[i]];
    if (v->runtime_shape && (v->runtime_shape != rt->runtime_shape || v->runtime_dims != rt->runtime_dims ||
                             !(ingot_op_works_by_element(n->op) || n->op == INGOT_OP_CONCAT)))
      return false;
  }
  const ingot_value_t* other = n->input_count > 1 && n->inputs[1 - (k & 1)] != INGOT_NO_VALUE
                                   ? &graph->values[n->inputs[1 - (k & 1)]] : NULL;
  int32_t axis = n->params.kind == INGOT_PARAMS_AXIS ? n->params.u.axis.axis : -1;
  switch (n->op) {
    case INGOT_OP_SOFTMAX: case INGOT_OP_LOGSOFTMAX: case INGOT_OP_HARDMAX:
      return axis >= 1 && y->rank == rt->rank;
    case INGOT_OP_ARGMAX: case INGOT_OP_ARGMIN:
      return n->params.kind == INGOT_PARAMS_ARG && n->params.u.arg.axis >= 1;
    case INGOT_OP_REDUCESUM: case INGOT_OP_REDUCEMEAN: case INGOT_OP_REDUCEMAX: case INGOT_OP_REDUCEMIN:
    case INGOT_OP_REDUCEPROD: case INGOT_OP_REDUCEL1: case INGOT_OP_REDUCEL2: case INGOT_OP_REDUCELOGSUM:
    case INGOT_OP_REDUCELOGSUMEXP: case INGOT_OP_REDUCESUMSQUARE:
      return n->params.kind == INGOT_PARAMS_REDUCE && !n->params.u.reduce.reduced[0];
    case INGOT_OP_CONCAT:
      for (uint32_t i = 0; i < n->input_count; ++i)
        if (n->inputs[i] == INGOT_NO_VALUE || !graph->values[n->inputs[i]].runtime_shape) return false;
      return axis >= 1;
    case INGOT_OP_TRANSPOSE:
      return n->params.kind == INGOT_PARAMS_TRANSPOSE && n->params.u.transpose.perm[0] == 0;
    case INGOT_OP_RESHAPE: case INGOT_OP_FLATTEN: case INGOT_OP_SQUEEZE: case INGOT_OP_UNSQUEEZE:
      return k == 0 && rt->dims[0] > 1 && ingot_value_numel(y) / y->dims[0] == ingot_value_numel(rt) / rt->dims[0];
    case INGOT_OP_GATHER:
      return k == 0 ? axis >= 1 : k == 1 && axis == 0;
    case INGOT_OP_MATMUL:
      return k == 0 && rt->rank >= 2 && other &&
             (rt->rank == 2 || other->rank < rt->rank || other->dims[0] == 1);
    default:
      break;
  }
  if (!ingot_op_works_by_element(n->op) || y->rank != rt->rank) return false;
  for (int32_t d = 0; d < y->rank; ++d)
    if (y->dims[d] != rt->dims[d]) return false;
  for (uint32_t i = 0; i < n->input_count; ++i) {
    if (n->inputs[i] == INGOT_NO_VALUE) continue;
    const ingot_value_t* v = &graph->values[n->inputs[i]];
    if (!v->runtime_shape && !(v->rank < y->rank || v->dims[0] == 1)) return false;
  }
  return true;
}

/* After node n was inferred with an input whose size a run computes
 * (`rt`, input k): its output takes that run-time shape when n works row by
 * row along the one dim the run decides (works_by_row); else n is refused:
 * it would need the run's sizes to place its elements. */
static ingot_status_t share_runtime_shape(ingot_graph_t* graph, ingot_node_t* n, const ingot_value_t* rt, uint32_t k) {
  const ingot_value_t* y = n->output_count == 1 && n->outputs[0] != INGOT_NO_VALUE ? &graph->values[n->outputs[0]]
                                                                                  : NULL;
  if (works_by_row(graph, n, rt, k, y)) {
    graph->values[n->outputs[0]].runtime_shape = rt->runtime_shape;
    graph->values[n->outputs[0]].runtime_dims = rt->runtime_dims;
    return INGOT_OK;
  }
  const ingot_node_t* from = rt->producer < graph->node_count ? &graph->nodes[rt->producer] : NULL;
  char what[160];
  if (from && from->op != INGOT_OP_IDENTITY) {
    snprintf(what, sizeof what, "a size that %s computes at run time", ingot_op_name(from->op));
  } else {
    snprintf(what, sizeof what, "a size known only at run time");
  }
  return infer_fail(n, INGOT_ERROR_UNSUPPORTED,
                    "input '%s' has %s; such a tensor can only be a graph output for now, or read row by row "
                    "(elementwise ops, Softmax, Gather, MatMul, ...) when the run decides only its first dimension",
                    rt->name, what);
}

ingot_status_t ingot_graph_infer_node(ingot_graph_t* graph, uint32_t node_id) {
  ingot_node_t* n = &graph->nodes[node_id];
  if ((unsigned)n->op >= INGOT_OP_COUNT_) {
    return ingot_fail(INGOT_ERROR_INTERNAL, "node '%s': invalid op %d", n->name, (int)n->op);
  }
  int min_in, max_in, min_out, max_out;
  ingot_op_arity(n->op, &min_in, &max_in, &min_out, &max_out);
  /* Fused inputs sit at the slots their epilogue names (a MatMul's residual
   * at 3, after an empty bias slot): a fused residual
   * (ingot_graph_fuse_residual_add), a fused bias (ingot_graph_fuse_matmul_bias). */
  if (n->epilogue.residual_input) ++max_in;
  if (n->epilogue.bias_input) ++max_in;
  if (n->epilogue.residual_input && (int)n->epilogue.residual_input >= max_in) max_in = (int)n->epilogue.residual_input + 1;
  if (n->epilogue.bias_input && (int)n->epilogue.bias_input >= max_in) max_in = (int)n->epilogue.bias_input + 1;
  if (n->epilogue.requant_input) { /* a fused requantization: 5 more inputs, the int32 sums as output 1 */
    max_in = (int)n->epilogue.requant_input + 5;
    max_out = 2;
  }
  if ((int)n->input_count < min_in || (int)n->input_count > max_in) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "has %u inputs, expected %d..%d", n->input_count, min_in, max_in);
  }
  if ((int)n->output_count < min_out || (int)n->output_count > max_out) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "has %u outputs, expected %d..%d", n->output_count, min_out,
                     max_out);
  }
  const ingot_value_t* rt_first = NULL; /* the first input whose size a run computes */
  uint32_t rt_input = 0;
  for (uint32_t i = 0; i < n->input_count; ++i) {
    uint32_t id = n->inputs[i];
    if (id == INGOT_NO_VALUE) {
      if ((int)i < min_in) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "required input %u is missing", i);
      continue;
    }
    if (id >= graph->value_count) return infer_fail(n, INGOT_ERROR_INTERNAL, "input %u has an invalid value id", i);
    const ingot_value_t* v = &graph->values[id];
    if (v->dtype == INGOT_DTYPE_INVALID || v->rank < 0) {
      return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input '%s' has no known type or shape yet", v->name);
    }
    if (v->runtime_shape && !v->runtime_padded && !rt_first) {
      rt_first = v;
      rt_input = i;
    }
    for (int32_t k = 0; k < v->rank; ++k) {
      if (v->dims[k] < 0) {
        return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT,
                         "input '%s' has an unresolved dimension %d; fix the model inputs with --input-shape",
                         v->name, k);
      }
      if (v->dims[k] > MAX_DIM) {
        return infer_fail(n, INGOT_ERROR_LIMIT, "input '%s' has dimension %d = %lld, above the limit", v->name, k,
                         (long long)v->dims[k]);
      }
    }
    if (ingot_value_numel(v) < 0) {
      return infer_fail(n, INGOT_ERROR_LIMIT, "input '%s' has more elements than fit in 64 bits", v->name);
    }
  }
  for (uint32_t k = 0; k < n->output_count; ++k) {
    if (n->outputs[k] != INGOT_NO_VALUE && n->outputs[k] >= graph->value_count) {
      return infer_fail(n, INGOT_ERROR_INTERNAL, "output %u has an invalid value id", k);
    }
  }
  /* The op's attributes, read and checked once (graph/params.c). */
  ingot_op_params_t params;
  ingot_status_t s = ingot_graph_node_params(graph, node_id, &params);
  if (s) return s;
  n->params = params;
  infer_ctx_t c = {graph, node_id, n};
  s = kInfer[n->op](&c);
  if (s) return s;
  n = &graph->nodes[node_id];
  if (rt_first && (s = share_runtime_shape(graph, n, rt_first, rt_input))) return s;
  for (uint32_t k = 0; k < n->output_count; ++k) {
    if (n->outputs[k] == INGOT_NO_VALUE) continue; /* a slot before one that inference added */
    const ingot_value_t* v = &graph->values[n->outputs[k]];
    if (v->rank < 0) continue;
    for (int32_t d = 0; d < v->rank; ++d) {
      if (v->dims[d] > MAX_DIM) {
        return infer_fail(n, INGOT_ERROR_LIMIT, "output '%s' dimension %d = %lld is above the limit", v->name, d,
                         (long long)v->dims[d]);
      }
    }
    uint64_t bytes;
    int64_t numel = ingot_value_numel(v);
    if (numel < 0 || !ingot_mul_u64((uint64_t)numel, ingot_graph_dtype_size(v->dtype), &bytes)) {
      return infer_fail(n, INGOT_ERROR_LIMIT, "output '%s' is too large", v->name);
    }
  }
  return INGOT_OK;
}

static ingot_status_t check_input_resolved(const ingot_graph_t* graph, const ingot_value_t* v) {
  if (v->dtype == INGOT_DTYPE_INVALID) {
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "input '%s' has no known element type", v->name);
  }
  bool unresolved = v->rank < 0;
  for (int32_t i = 0; i < v->rank; ++i) unresolved = unresolved || v->dims[i] < 0;
  if (!unresolved) return INGOT_OK;
  char example[256];
  size_t used = 0;
  if (v->rank < 0) {
    snprintf(example, sizeof(example), "1x3x224x224");
  } else {
    example[0] = '\0';
    for (int32_t i = 0; i < v->rank && used < sizeof(example); ++i) {
      used += (size_t)snprintf(example + used, sizeof(example) - used, "%s%lld", i ? "x" : "",
                               (long long)(v->dims[i] >= 0 ? v->dims[i] : 1));
    }
  }
  if (v->rank < 0) {
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                      "input '%s' has an unknown shape; give it with --input-shape %s=<dims>, e.g. %s=%s", v->name,
                      v->name, v->name, example);
  }
  int32_t first = 0;
  while (v->dims[first] >= 0) ++first;
  return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                    "input '%s' has a symbolic dimension %d ('%s'); fix it with --input-shape %s=%s", v->name, first,
                    v->dim_names[first] ? v->dim_names[first] : "?", v->name, example);
  (void)graph;
}

ingot_status_t ingot_graph_infer_begin(ingot_graph_t* graph) {
  for (uint32_t i = 0; i < graph->input_count; ++i) {
    ingot_status_t s = check_input_resolved(graph, &graph->values[graph->inputs[i]]);
    if (s) return s;
  }
  /* Forget what an earlier inference said about computed values. */
  for (uint32_t i = 0; i < graph->node_count; ++i) {
    const ingot_node_t* n = &graph->nodes[i];
    if (n->dead) continue;
    for (uint32_t k = 0; k < n->output_count; ++k) {
      if (n->outputs[k] == INGOT_NO_VALUE) continue;
      ingot_value_t* v = &graph->values[n->outputs[k]];
      if (v->kind != INGOT_VALUE_INTERMEDIATE) {
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "node '%s' (%s): output '%s' is also a graph input or weight",
                          n->name, ingot_op_name(n->op), v->name);
      }
      v->dtype = INGOT_DTYPE_INVALID;
      v->rank = -1;
    }
  }
  return INGOT_OK;
}

ingot_status_t ingot_graph_infer_end(ingot_graph_t* graph) {
  for (uint32_t i = 0; i < graph->output_count; ++i) {
    const ingot_value_t* v = &graph->values[graph->outputs[i]];
    if (v->dtype == INGOT_DTYPE_INVALID || v->rank < 0) {
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "graph output '%s' is never computed", v->name);
    }
  }
  return INGOT_OK;
}

ingot_status_t ingot_graph_infer_shapes(ingot_graph_t* graph) {
  ingot_status_t s = ingot_graph_infer_begin(graph);
  if (s) return s;
  for (uint32_t i = 0; i < graph->node_count; ++i) {
    if (graph->nodes[i].dead) continue;
    if ((s = ingot_graph_infer_node(graph, i))) return s;
  }
  return ingot_graph_infer_end(graph);
}

/* If, Loop, Scan and the Sequence ops never reach inference as such:
 * ingot_graph_infer_and_fold expands them (graph/control_flow.c). A pass
 * that infers without folding (ingot_graph_infer_shapes on an unexpanded
 * graph) stops here. */
ingot_status_t infer_control_flow(infer_ctx_t* c) {
  return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED,
                    "control flow and sequences are expanded only while constant folding (ingot_graph_infer_and_fold)");
}

/* ---- blocked activations (ingot_graph_block_activations) ---- */

/* Two attribute ints (strides, dilations of a ConvBlocked), each >= 1. */
static ingot_status_t blocked_pair(const ingot_node_t* n, const char* name, int64_t* out) {
  uint32_t count = 0;
  const int64_t* v = ingot_node_attr_ints(n, name, &count);
  if (!v || count != 2 || v[0] < 1 || v[1] < 1 || v[0] > INT32_MAX || v[1] > INT32_MAX) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute '%s' must hold two ints >= 1", name);
  }
  out[0] = v[0];
  out[1] = v[1];
  return INGOT_OK;
}

/* ConvBlocked (domain ai.ingot): a 2-D float32 conv without padding over
 * activations in the blocked layout (graph.h, ingot_graph_block_activations):
 *   x  [N, ICb, H, W, B] (in_block 1) or [N, C, H, W] (in_block 0)
 *   w  [OCb, ICb, KH, KW, B, B] (in_block 1), [OCb, C, KH, KW, B]
 *      (in_block 0), [OCb, KH, KW, B] (depthwise 1: OCb = ICb)
 *   b  [OCb * B], optional; input 3: a fused residual of y's shape
 *   y  [N, OCb, OH, OW, B], or larger by epilogue.output_pads (its border
 *      zeroed by the conv)
 * attributes block (B), in_block, depthwise, strides, dilations. */
ingot_status_t infer_conv_blocked(infer_ctx_t* c) {
  const ingot_node_t* n = c->n;
  const ingot_value_t* x = infer_input(c, 0);
  const ingot_value_t* w = infer_input(c, 1);
  int64_t block = ingot_node_attr_int(n, "block", 0), in_block = ingot_node_attr_int(n, "in_block", 0);
  int64_t depthwise = ingot_node_attr_int(n, "depthwise", 0);
  int64_t strides[2], dil[2];
  ingot_status_t s;
  if ((s = blocked_pair(n, "strides", strides)) || (s = blocked_pair(n, "dilations", dil))) return s;
  if (block < 2 || block > 64 || (depthwise && !in_block)) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "block %lld (2..64), depthwise %lld with in_block %lld",
                      (long long)block, (long long)depthwise, (long long)in_block);
  }
  int32_t wrank = depthwise ? 4 : in_block ? 6 : 5;
  if (x->dtype != INGOT_DTYPE_F32 || w->dtype != INGOT_DTYPE_F32 || x->rank != (in_block ? 5 : 4) ||
      w->rank != wrank || w->dims[wrank - 1] != block || (in_block && x->dims[4] != block) ||
      (in_block && !depthwise && w->dims[4] != block) || (!depthwise && w->dims[1] != x->dims[1]) ||
      (depthwise && w->dims[0] != x->dims[1])) {
    char xs[96], ws[96];
    infer_shape_str(x, xs, sizeof(xs));
    infer_shape_str(w, ws, sizeof(ws));
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input %s and weight %s do not have the blocked forms of block %lld",
                      xs, ws, (long long)block);
  }
  int64_t kh = w->dims[depthwise ? 1 : 2], kw = w->dims[depthwise ? 2 : 3];
  int64_t dims[5] = {x->dims[0], w->dims[0], 0, 0, block};
  int64_t k[2] = {kh, kw};
  for (int i = 0; i < 2; ++i) {
    int64_t span = dil[i] * (k[i] - 1) + 1, in = x->dims[2 + i];
    if (k[i] < 1 || in < span) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "window larger than the input");
    dims[2 + i] = (in - span) / strides[i] + 1;
    /* written into a zero-bordered tensor (ingot_graph_pad_into_producers) */
    if (n->epilogue.output_padded) dims[2 + i] += n->epilogue.output_pads[i] + n->epilogue.output_pads[2 + i];
  }
  const ingot_value_t* b = infer_input(c, 2);
  if (b && (b->dtype != INGOT_DTYPE_F32 || ingot_value_numel(b) != w->dims[0] * block)) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "bias '%s' must hold %lld float32 values", b->name,
                      (long long)(w->dims[0] * block));
  }
  infer_set_output(c, 0, INGOT_DTYPE_F32, 5, dims);
  return INGOT_OK;
}

/* FromBlocked (domain ai.ingot): [N, Cb, H, W, B] -> [N, channels, H, W],
 * the lanes past `channels` dropped. */
ingot_status_t infer_from_blocked(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  int64_t channels = ingot_node_attr_int(c->n, "channels", 0);
  if (x->rank != 5 || channels < 1 || channels > x->dims[1] * x->dims[4] || channels <= (x->dims[1] - 1) * x->dims[4]) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "'%s' is not a blocked tensor of %lld channels", x->name,
                      (long long)channels);
  }
  int64_t dims[4] = {x->dims[0], channels, x->dims[2], x->dims[3]};
  infer_set_output(c, 0, x->dtype, 4, dims);
  return INGOT_OK;
}
