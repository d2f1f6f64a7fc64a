/* Dtype and shape inference of the data-movement and shape ops (Shape, Size,
 * Gather*, Scatter*, Slice, Split, Pad, Expand, Tile, Range, ConstantOfShape,
 * Squeeze, Unsqueeze, Resize, Upsample, DepthToSpace, SpaceToDepth, Trilu,
 * ReverseSequence, TensorScatter, the window functions, MelWeightMatrix, STFT,
 * NonZero, Unique), and the parameter resolvers of graph.h
 * (ingot_graph_*_params) that shape inference and lowering share.
 *
 * Inputs that decide an output shape (Reshape/Expand shapes, Slice bounds,
 * pads, repeats, split sizes, axes, Resize scales/sizes, Range bounds, a
 * window's size, ...) must be known at compile time: weights, possibly
 * folded from Shape arithmetic by ingot_graph_infer_and_fold. Index and
 * value inputs (Gather indices, ScatterND updates, Pad's constant_value,
 * Trilu's k, ReverseSequence's lengths, TensorScatter's write indices) may be
 * computed at run time. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "graph/graph.h"
#include "graph_internal.h"
#include "infer_internal.h"

/* ---- helpers ---- */

static const ingot_value_t* node_input(const ingot_graph_t* g, const ingot_node_t* n, uint32_t i) {
  if (i >= n->input_count || n->inputs[i] == INGOT_NO_VALUE || n->inputs[i] >= g->value_count) return NULL;
  return &g->values[n->inputs[i]];
}

static bool is_int_index_type(ingot_dtype_t t) { return t == INGOT_DTYPE_I64 || t == INGOT_DTYPE_I32; }

/* Fails unless `v` (input `what`) is a weight whose data is at hand. */
static ingot_status_t need_const(const ingot_graph_t* g, const ingot_node_t* n, const ingot_value_t* v,
                                 const char* what) {
  if (v->kind == INGOT_VALUE_WEIGHT && (v->data || ingot_value_numel(v) == 0)) return INGOT_OK;
  /* a float16 graph input reaches its readers through a Cast to float32
   * (graph/passes_dtype.c): name the input, which --const can bind */
  if (v->producer != INGOT_NO_VALUE && g->nodes[v->producer].op == INGOT_OP_CAST &&
      g->nodes[v->producer].input_count == 1 && g->values[g->nodes[v->producer].inputs[0]].kind == INGOT_VALUE_INPUT)
    v = &g->values[g->nodes[v->producer].inputs[0]];
  char deps[512];
  ingot_graph_input_deps(g, (uint32_t)(v - g->values), deps, sizeof deps);
  return infer_fail(n, INGOT_ERROR_UNSUPPORTED,
                    "input '%s' ('%s') decides the output shape and must be known at compile time, but it is %s%s",
                    what, v->name, v->kind == INGOT_VALUE_INPUT ? "a graph input" : "computed at run time", deps);
}

static int64_t weight_int_at(const ingot_value_t* v, int64_t i) {
  switch (v->dtype) {
    case INGOT_DTYPE_I64: return ((const int64_t*)v->data)[i];
    case INGOT_DTYPE_I32: return ((const int32_t*)v->data)[i];
    default: return 0;
  }
}

/* A constant int64/int32 vector (or scalar) of at most `max` entries. */
static ingot_status_t const_ints(const ingot_graph_t* g, const ingot_node_t* n, const ingot_value_t* v,
                                 const char* what, int64_t max, int64_t* out, int64_t* out_count) {
  ingot_status_t s = need_const(g, n, v, what);
  if (s) return s;
  if (!is_int_index_type(v->dtype)) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input '%s' must be int64 or int32, not %s", what,
                      ingot_graph_dtype_name(v->dtype));
  }
  if (v->rank > 1) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input '%s' must be 1-D", what);
  int64_t count = ingot_value_numel(v);
  if (count > max) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input '%s' has %lld entries, at most %lld expected", what,
                      (long long)count, (long long)max);
  }
  for (int64_t i = 0; i < count; ++i) out[i] = weight_int_at(v, i);
  *out_count = count;
  return INGOT_OK;
}

/* A constant float vector (float32 or float64) of at most `max` entries. */
static ingot_status_t const_floats(const ingot_graph_t* g, const ingot_node_t* n, const ingot_value_t* v,
                                   const char* what, int64_t max, double* out, int64_t* out_count) {
  ingot_status_t s = need_const(g, n, v, what);
  if (s) return s;
  if (v->dtype != INGOT_DTYPE_F32 && v->dtype != INGOT_DTYPE_F64) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input '%s' must be float32 or float64, not %s", what,
                      ingot_graph_dtype_name(v->dtype));
  }
  if (v->rank > 1) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input '%s' must be 1-D", what);
  int64_t count = ingot_value_numel(v);
  if (count > max) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input '%s' has %lld entries, at most %lld expected", what,
                      (long long)count, (long long)max);
  }
  for (int64_t i = 0; i < count; ++i) {
    out[i] = v->dtype == INGOT_DTYPE_F32 ? (double)((const float*)v->data)[i] : ((const double*)v->data)[i];
  }
  *out_count = count;
  return INGOT_OK;
}

/* An INTS attribute of at most `max` entries; *out_count = -1 when absent. */
static ingot_status_t attr_ints(const ingot_node_t* n, const char* name, int64_t max, int64_t* out, int64_t* out_count) {
  const ingot_attr_t* a = ingot_node_attr(n, name);
  *out_count = -1;
  if (!a) return INGOT_OK;
  if (a->type != INGOT_ATTR_INTS) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute '%s' must be a list of ints", name);
  }
  if ((int64_t)a->count > max) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute '%s' has %u entries, at most %lld expected", name,
                      a->count, (long long)max);
  }
  for (uint32_t i = 0; i < a->count; ++i) out[i] = a->ints[i];
  *out_count = a->count;
  return INGOT_OK;
}

/* Normalizes `count` axes into [0, rank), refusing repeats. */
static ingot_status_t norm_axes(const ingot_node_t* n, const char* what, int64_t* axes, int64_t count, int32_t rank) {
  bool seen[INGOT_MAX_RANK] = {false};
  for (int64_t i = 0; i < count; ++i) {
    int64_t a = axes[i];
    if (a < -(int64_t)rank || a >= rank) {
      return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "%s[%lld] = %lld is out of range for rank %d", what,
                        (long long)i, (long long)a, rank);
    }
    if (a < 0) a += rank;
    if (seen[a]) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "%s repeats axis %lld", what, (long long)a);
    seen[a] = true;
    axes[i] = a;
  }
  return INGOT_OK;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* Checks that constant indices lie in [-dim, dim) (an index out of range is
 * invalid input); run-time indices are clamped by the lowering. */
static ingot_status_t check_const_indices(const ingot_node_t* n, const ingot_value_t* idx, int64_t dim) {
  if (idx->kind != INGOT_VALUE_WEIGHT || !idx->data) return INGOT_OK;
  int64_t count = ingot_value_numel(idx);
  for (int64_t i = 0; i < count; ++i) {
    int64_t v = weight_int_at(idx, i);
    if (v < -dim || v >= dim) {
      return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "index %lld (entry %lld of '%s') is out of range [%lld, %lld)",
                        (long long)v, (long long)i, idx->name, (long long)-dim, (long long)dim);
    }
  }
  return INGOT_OK;
}

static ingot_status_t need_index_type(const ingot_node_t* n, const ingot_value_t* idx) {
  if (is_int_index_type(idx->dtype)) return INGOT_OK;
  return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "indices '%s' must be int64 or int32, not %s", idx->name,
                    ingot_graph_dtype_name(idx->dtype));
}

static bool op_before(const ingot_graph_t* g, int64_t opset) { return g->opset > 0 && g->opset < opset; }

/* ---- Shape, Size ---- */

void ingot_graph_shape_range(const ingot_node_t* node, int32_t rank, int64_t* out_start, int64_t* out_end) {
  int64_t start = ingot_node_attr_int(node, "start", 0);
  int64_t end = ingot_node_attr_int(node, "end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = clamp64(start, 0, rank);
  end = clamp64(end, 0, rank);
  if (end < start) end = start;
  *out_start = start;
  *out_end = end;
}

ingot_status_t infer_SHAPE(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  int64_t start, end;
  ingot_graph_shape_range(c->n, x->rank, &start, &end);
  int64_t d = end - start;
  infer_set_output(c, 0, INGOT_DTYPE_I64, 1, &d);
  return INGOT_OK;
}

ingot_status_t infer_SIZE(infer_ctx_t* c) {
  infer_set_output(c, 0, INGOT_DTYPE_I64, 0, NULL);
  return INGOT_OK;
}

/* ---- Gather family ---- */

ingot_status_t infer_GATHER(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  const ingot_value_t* idx = infer_input(c, 1);
  ingot_status_t s;
  if (x->rank < 1) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "data must have rank >= 1");
  if ((s = need_index_type(c->n, idx))) return s;
  int64_t axis = c->n->params.u.axis.axis; /* graph/params.c */
  int32_t rank = x->rank - 1 + idx->rank;
  if (rank > (int32_t)INGOT_MAX_RANK) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "output rank %d is above %u", rank, INGOT_MAX_RANK);
  }
  if ((s = check_const_indices(c->n, idx, x->dims[axis]))) return s;
  int64_t dims[INGOT_MAX_RANK];
  int32_t r = 0;
  for (int32_t i = 0; i < axis; ++i) dims[r++] = x->dims[i];
  for (int32_t i = 0; i < idx->rank; ++i) dims[r++] = idx->dims[i];
  for (int32_t i = (int32_t)axis + 1; i < x->rank; ++i) dims[r++] = x->dims[i];
  infer_set_output(c, 0, x->dtype, rank, dims);
  return INGOT_OK;
}

/* GatherElements and ScatterElements: same-rank data and indices; indices may
 * be shorter than data in every dimension but `axis`. */
static ingot_status_t elements_shapes(infer_ctx_t* c, const ingot_value_t* x, const ingot_value_t* idx, int64_t* axis) {
  ingot_status_t s;
  if (x->rank < 1) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "data must have rank >= 1");
  if ((s = need_index_type(c->n, idx))) return s;
  if (idx->rank != x->rank) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "indices have rank %d, data rank %d", idx->rank, x->rank);
  }
  /* graph/params.c: GatherElements has an AXIS, ScatterElements a SCATTER kind */
  *axis = c->n->params.kind == INGOT_PARAMS_SCATTER ? c->n->params.u.scatter.axis : c->n->params.u.axis.axis;
  for (int32_t d = 0; d < x->rank; ++d) {
    if (d != *axis && idx->dims[d] > x->dims[d]) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT,
                        "indices dimension %d (%lld) is larger than the data's (%lld)", d, (long long)idx->dims[d],
                        (long long)x->dims[d]);
    }
  }
  return check_const_indices(c->n, idx, x->dims[*axis]);
}

ingot_status_t infer_GATHERELEMENTS(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  const ingot_value_t* idx = infer_input(c, 1);
  int64_t axis;
  ingot_status_t s = elements_shapes(c, x, idx, &axis);
  if (s) return s;
  infer_set_output(c, 0, x->dtype, idx->rank, idx->dims);
  return INGOT_OK;
}

/* The shape GatherND reads and ScatterND writes: indices [..., k] address
 * slices data[b0.., i0..ik-1, ...]. */
static ingot_status_t nd_shapes(infer_ctx_t* c, const ingot_value_t* x, const ingot_value_t* idx, int64_t batch,
                                int64_t* out_k) {
  if (idx->dtype != INGOT_DTYPE_I64) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "indices must be int64, not %s",
                      ingot_graph_dtype_name(idx->dtype));
  }
  if (x->rank < 1 || idx->rank < 1) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "data and indices must have rank >= 1");
  }
  if (batch < 0 || batch >= x->rank || batch >= idx->rank) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "batch_dims %lld is out of range", (long long)batch);
  }
  int64_t k = idx->dims[idx->rank - 1];
  if (k < 1 || k > x->rank - batch) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "the last indices dimension (%lld) must be in 1..%lld",
                      (long long)k, (long long)(x->rank - batch));
  }
  for (int64_t b = 0; b < batch; ++b) {
    if (idx->dims[b] != x->dims[b]) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "batch dimension %lld differs between data and indices",
                        (long long)b);
    }
  }
  if (idx->kind == INGOT_VALUE_WEIGHT && idx->data) {
    int64_t count = ingot_value_numel(idx);
    for (int64_t i = 0; i < count; ++i) {
      int64_t dim = x->dims[batch + i % k], v = ((const int64_t*)idx->data)[i];
      if (v < -dim || v >= dim) {
        return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "index %lld (entry %lld of '%s') is out of range",
                          (long long)v, (long long)i, idx->name);
      }
    }
  }
  *out_k = k;
  return INGOT_OK;
}

ingot_status_t infer_GATHERND(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  const ingot_value_t* idx = infer_input(c, 1);
  int64_t batch = c->n->params.u.gathernd.batch_dims, k = 0; /* graph/params.c */
  ingot_status_t s = nd_shapes(c, x, idx, batch, &k);
  if (s) return s;
  int64_t dims[2 * INGOT_MAX_RANK];
  int32_t r = 0;
  for (int32_t i = 0; i < idx->rank - 1; ++i) dims[r++] = idx->dims[i];
  for (int32_t i = (int32_t)(batch + k); i < x->rank; ++i) dims[r++] = x->dims[i];
  if (r > (int32_t)INGOT_MAX_RANK) return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "output rank %d is too large", r);
  infer_set_output(c, 0, x->dtype, r, dims);
  return INGOT_OK;
}


ingot_status_t infer_SCATTERND(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  const ingot_value_t* idx = infer_input(c, 1);
  const ingot_value_t* upd = infer_input(c, 2);
  int64_t k = 0;
  ingot_status_t s;
  /* reduction: node.params (graph/params.c) */
  if ((s = nd_shapes(c, x, idx, 0, &k))) return s;
  if (upd->dtype != x->dtype) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "updates are %s, data %s", ingot_graph_dtype_name(upd->dtype),
                      ingot_graph_dtype_name(x->dtype));
  }
  int32_t want = idx->rank - 1 + x->rank - (int32_t)k;
  bool ok = upd->rank == want;
  for (int32_t i = 0; ok && i < idx->rank - 1; ++i) ok = upd->dims[i] == idx->dims[i];
  for (int32_t i = 0; ok && i < x->rank - (int32_t)k; ++i) ok = upd->dims[idx->rank - 1 + i] == x->dims[k + i];
  if (!ok) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT,
                      "updates must have shape indices.shape[:-1] + data.shape[%lld:]", (long long)k);
  }
  infer_copy_output(c, 0, x);
  return INGOT_OK;
}

ingot_status_t infer_SCATTERELEMENTS(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  const ingot_value_t* idx = infer_input(c, 1);
  const ingot_value_t* upd = infer_input(c, 2);
  int64_t axis;
  ingot_status_t s;
  /* reduction: node.params (graph/params.c) */
  if ((s = elements_shapes(c, x, idx, &axis))) return s;
  bool ok = upd->dtype == x->dtype && upd->rank == idx->rank;
  for (int32_t i = 0; ok && i < idx->rank; ++i) ok = upd->dims[i] == idx->dims[i];
  if (!ok) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "updates must match the indices' shape and the data's type");
  infer_copy_output(c, 0, x);
  return INGOT_OK;
}

/* ---- Slice ---- */

ingot_status_t ingot_graph_slice_params(const ingot_graph_t* g, uint32_t node, ingot_slice_params_t* p) {
  const ingot_node_t* n = &g->nodes[node];
  const ingot_value_t* x = node_input(g, n, 0);
  ingot_status_t s;
  int64_t starts[INGOT_MAX_RANK], ends[INGOT_MAX_RANK], axes[INGOT_MAX_RANK], steps[INGOT_MAX_RANK];
  int64_t ns = -1, ne = -1, na = -1, nst = -1;
  int32_t rank = x->rank;
  memset(p, 0, sizeof(*p));
  p->rank = rank;
  if (n->input_count <= 1) {
    /* Slice-1: starts, ends, axes attributes. */
    if ((s = attr_ints(n, "starts", rank, starts, &ns)) || (s = attr_ints(n, "ends", rank, ends, &ne)) ||
        (s = attr_ints(n, "axes", rank, axes, &na))) {
      return s;
    }
    if (ns < 0 || ne < 0) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attributes 'starts' and 'ends' are required");
  } else {
    const ingot_value_t* v;
    if (!(v = node_input(g, n, 1)) || (s = const_ints(g, n, v, "starts", rank, starts, &ns))) {
      return v ? s : infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input 'starts' is required");
    }
    if (!(v = node_input(g, n, 2)) || (s = const_ints(g, n, v, "ends", rank, ends, &ne))) {
      return v ? s : infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input 'ends' is required");
    }
    if ((v = node_input(g, n, 3)) && (s = const_ints(g, n, v, "axes", rank, axes, &na))) return s;
    if ((v = node_input(g, n, 4)) && (s = const_ints(g, n, v, "steps", rank, steps, &nst))) return s;
  }
  if (ne != ns) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "starts and ends differ in length");
  if (na < 0) {
    na = ns;
    for (int64_t i = 0; i < na; ++i) axes[i] = i;
  }
  if (nst < 0) {
    nst = ns;
    for (int64_t i = 0; i < nst; ++i) steps[i] = 1;
  }
  if (na != ns || nst != ns) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "starts, ends, axes and steps differ in length");
  }
  if ((s = norm_axes(n, "axes", axes, na, rank))) return s;
  for (int32_t d = 0; d < rank; ++d) {
    p->start[d] = 0;
    p->step[d] = 1;
    p->count[d] = x->dims[d];
  }
  for (int64_t i = 0; i < ns; ++i) {
    int64_t d = axes[i], dim = x->dims[d], st = steps[i];
    int64_t b = starts[i], e = ends[i], cnt;
    if (st == 0) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "steps[%lld] is 0", (long long)i);
    if (b < 0) b += dim;
    if (e < 0) e += dim;
    if (st > 0) {
      b = clamp64(b, 0, dim);
      e = clamp64(e, 0, dim);
      cnt = e > b ? (e - b - 1) / st + 1 : 0;
    } else {
      int64_t ast = st == INT64_MIN ? INT64_MAX : -st;
      b = clamp64(b, 0, dim - 1);
      e = clamp64(e, -1, dim - 1);
      cnt = b > e ? (b - e - 1) / ast + 1 : 0;
    }
    p->start[d] = b;
    p->step[d] = st;
    p->count[d] = cnt;
  }
  return INGOT_OK;
}

ingot_status_t infer_SLICE(infer_ctx_t* c) {
  ingot_slice_params_t p;
  ingot_status_t s = ingot_graph_slice_params(c->g, c->id, &p);
  if (s) return s;
  infer_set_output(c, 0, infer_input(c, 0)->dtype, p.rank, p.count);
  return INGOT_OK;
}

/* ---- Split ---- */

ingot_status_t ingot_graph_split_params(const ingot_graph_t* g, uint32_t node, ingot_split_params_t* p) {
  const ingot_node_t* n = &g->nodes[node];
  const ingot_value_t* x = node_input(g, n, 0);
  ingot_status_t s;
  memset(p, 0, sizeof(*p));
  int64_t axis = ingot_node_attr_int(n, "axis", 0);
  if (x->rank < 1) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input must have rank >= 1");
  if (axis < -(int64_t)x->rank || axis >= x->rank) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
  }
  if (axis < 0) axis += x->rank;
  p->axis = (int32_t)axis;
  p->count = n->output_count;
  if (p->count < 1 || p->count > INGOT_MAX_SPLIT) {
    return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "%u outputs (1..%d supported)", p->count, INGOT_MAX_SPLIT);
  }
  int64_t dim = x->dims[axis], got = -1;
  const ingot_value_t* sv = node_input(g, n, 1);
  if (sv && ingot_value_numel(sv) != 0) {
    if ((s = const_ints(g, n, sv, "split", INGOT_MAX_SPLIT, p->sizes, &got))) return s;
  } else if (!sv && (s = attr_ints(n, "split", INGOT_MAX_SPLIT, p->sizes, &got))) {
    return s;
  }
  const ingot_attr_t* num = ingot_node_attr(n, "num_outputs");
  if (num && (num->type != INGOT_ATTR_INT || num->i != (int64_t)p->count)) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "num_outputs %lld differs from the %u outputs", (long long)num->i,
                      p->count);
  }
  if (got >= 0) {
    if (got != (int64_t)p->count) {
      return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "split has %lld entries for %u outputs", (long long)got, p->count);
    }
    int64_t sum = 0;
    for (uint32_t i = 0; i < p->count; ++i) {
      if (p->sizes[i] < 0) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "split[%u] is negative", i);
      sum += p->sizes[i];
      if (sum > dim) break;
    }
    if (sum != dim) {
      return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "split sizes do not add up to dimension %lld (%lld)",
                        (long long)axis, (long long)dim);
    }
    return INGOT_OK;
  }
  int64_t parts = p->count;
  if (dim % parts == 0) {
    for (uint32_t i = 0; i < p->count; ++i) p->sizes[i] = dim / parts;
    return INGOT_OK;
  }
  if (!num && !(g->opset == 0 || g->opset >= 18)) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "dimension %lld (%lld) does not split into %u equal parts",
                      (long long)axis, (long long)dim, p->count);
  }
  /* num_outputs: chunks of ceil(dim / n), the last one smaller. */
  int64_t chunk = (dim + parts - 1) / parts;
  if (chunk * (parts - 1) > dim) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "dimension %lld (%lld) cannot be split into %u chunks",
                      (long long)axis, (long long)dim, p->count);
  }
  for (uint32_t i = 0; i < p->count; ++i) p->sizes[i] = i + 1 < p->count ? chunk : dim - chunk * (parts - 1);
  return INGOT_OK;
}

ingot_status_t infer_SPLIT(infer_ctx_t* c) {
  ingot_split_params_t p;
  ingot_status_t s = ingot_graph_split_params(c->g, c->id, &p);
  if (s) return s;
  const ingot_value_t* x = infer_input(c, 0);
  int64_t dims[INGOT_MAX_RANK];
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  for (uint32_t k = 0; k < p.count; ++k) {
    dims[p.axis] = p.sizes[k];
    infer_set_output(c, k, x->dtype, x->rank, dims);
  }
  return INGOT_OK;
}

/* ---- Pad ---- */

ingot_status_t ingot_graph_pad_params(const ingot_graph_t* g, uint32_t node, ingot_pad_params_t* p) {
  const ingot_node_t* n = &g->nodes[node];
  const ingot_value_t* x = node_input(g, n, 0);
  ingot_status_t s;
  int32_t rank = x->rank;
  memset(p, 0, sizeof(*p));
  p->rank = rank;
  p->value_in = INGOT_NO_VALUE;
  const char* mode = ingot_node_attr_string(n, "mode", "constant");
  if (strcmp(mode, "constant") == 0) {
    p->mode = INGOT_PAD_CONSTANT;
  } else if (strcmp(mode, "reflect") == 0) {
    p->mode = INGOT_PAD_REFLECT;
  } else if (strcmp(mode, "edge") == 0) {
    p->mode = INGOT_PAD_EDGE;
  } else if (strcmp(mode, "wrap") == 0) {
    p->mode = INGOT_PAD_WRAP;
  } else {
    return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "mode '%s' is not supported (constant, reflect, edge, wrap)", mode);
  }
  int64_t pads[2 * INGOT_MAX_RANK], axes[INGOT_MAX_RANK], np_ = -1, na = -1;
  if (n->input_count <= 1) {
    /* Pad-2 (pads, value attributes); Pad-1 called them paddings. */
    if ((s = attr_ints(n, "pads", 2 * rank, pads, &np_))) return s;
    if (np_ < 0 && (s = attr_ints(n, "paddings", 2 * rank, pads, &np_))) return s;
    if (np_ < 0) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'pads' is required");
    p->value = ingot_node_attr_float(n, "value", 0.0f);
  } else {
    const ingot_value_t* v = node_input(g, n, 1);
    if (!v) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input 'pads' is required");
    if ((s = const_ints(g, n, v, "pads", 2 * rank, pads, &np_))) return s;
    const ingot_value_t* cv = node_input(g, n, 2);
    if (cv && ingot_value_numel(cv) > 0) {
      if (cv->dtype != x->dtype || ingot_value_numel(cv) != 1) {
        return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "constant_value must be one %s",
                          ingot_graph_dtype_name(x->dtype));
      }
      p->value_in = n->inputs[2];
    }
    const ingot_value_t* av = node_input(g, n, 3);
    if (av && (s = const_ints(g, n, av, "axes", rank, axes, &na))) return s;
  }
  if (na < 0) {
    na = rank;
    for (int32_t i = 0; i < rank; ++i) axes[i] = i;
  }
  if ((s = norm_axes(n, "axes", axes, na, rank))) return s;
  if (np_ != 2 * na) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "pads has %lld entries, expected %lld", (long long)np_,
                      (long long)(2 * na));
  }
  for (int64_t i = 0; i < na; ++i) {
    int64_t d = axes[i], b = pads[i], e = pads[na + i], dim = x->dims[d];
    if (b < -dim || e < -dim || b > ((int64_t)1 << 40) || e > ((int64_t)1 << 40) || dim + b + e < 0) {
      return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "pads %lld, %lld do not fit dimension %lld (%lld)",
                        (long long)b, (long long)e, (long long)d, (long long)dim);
    }
    if (p->mode != INGOT_PAD_CONSTANT && (b < 0 || e < 0)) {
      return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "negative pads are only supported in constant mode");
    }
    if (p->mode != INGOT_PAD_CONSTANT && dim == 0 && (b > 0 || e > 0)) {
      return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "cannot pad an empty dimension in mode '%s'", mode);
    }
    p->begin[d] = b;
    p->end[d] = e;
  }
  return INGOT_OK;
}

ingot_status_t infer_PAD(infer_ctx_t* c) {
  ingot_pad_params_t p;
  ingot_status_t s = ingot_graph_pad_params(c->g, c->id, &p);
  if (s) return s;
  const ingot_value_t* x = infer_input(c, 0);
  int64_t dims[INGOT_MAX_RANK];
  for (int32_t d = 0; d < x->rank; ++d) dims[d] = x->dims[d] + p.begin[d] + p.end[d];
  infer_set_output(c, 0, x->dtype, x->rank, dims);
  return INGOT_OK;
}

/* ---- Expand, Tile, Range, ConstantOfShape ---- */

ingot_status_t infer_EXPAND(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  int64_t shape[INGOT_MAX_RANK], count;
  ingot_status_t s = const_ints(c->g, c->n, infer_input(c, 1), "shape", INGOT_MAX_RANK, shape, &count);
  if (s) return s;
  int32_t rank = x->rank > count ? x->rank : (int32_t)count;
  int64_t dims[INGOT_MAX_RANK];
  for (int32_t i = 0; i < rank; ++i) {
    int32_t ix = i - (rank - x->rank), is = i - (rank - (int32_t)count);
    int64_t a = ix >= 0 ? x->dims[ix] : 1, b = is >= 0 ? shape[is] : 1;
    if (b < 0) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "shape[%d] = %lld is negative", is, (long long)b);
    if (a != b && a != 1 && b != 1) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input dimension %d (%lld) does not broadcast to %lld", ix,
                        (long long)a, (long long)b);
    }
    dims[i] = a == 1 ? b : a;
  }
  infer_set_output(c, 0, x->dtype, rank, dims);
  return INGOT_OK;
}

ingot_status_t infer_TILE(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  int64_t reps[INGOT_MAX_RANK], count;
  ingot_status_t s = const_ints(c->g, c->n, infer_input(c, 1), "repeats", INGOT_MAX_RANK, reps, &count);
  if (s) return s;
  if (count != x->rank) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "repeats has %lld entries for rank %d", (long long)count,
                      x->rank);
  }
  int64_t dims[INGOT_MAX_RANK];
  for (int32_t i = 0; i < x->rank; ++i) {
    if (reps[i] < 0 || reps[i] > ((int64_t)1 << 32)) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "repeats[%d] = %lld is invalid", i, (long long)reps[i]);
    }
    if (x->dims[i] != 0 && reps[i] > ((int64_t)1 << 48) / x->dims[i]) {
      return infer_fail(c->n, INGOT_ERROR_LIMIT, "the output is too large");
    }
    dims[i] = x->dims[i] * reps[i];
  }
  infer_set_output(c, 0, x->dtype, x->rank, dims);
  return INGOT_OK;
}

ingot_status_t infer_RANGE(infer_ctx_t* c) {
  const ingot_value_t* v[3] = {infer_input(c, 0), infer_input(c, 1), infer_input(c, 2)};
  static const char* const kNames[3] = {"start", "limit", "delta"};
  ingot_dtype_t t = v[0]->dtype;
  if (t != INGOT_DTYPE_F32 && t != INGOT_DTYPE_F64 && t != INGOT_DTYPE_I32 && t != INGOT_DTYPE_I64) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "type %s is not supported", ingot_graph_dtype_name(t));
  }
  double f[3];
  int64_t iv[3];
  for (int k = 0; k < 3; ++k) {
    ingot_status_t s = need_const(c->g, c->n, v[k], kNames[k]);
    if (s) return s;
    if (v[k]->dtype != t || ingot_value_numel(v[k]) != 1 || v[k]->rank > 1) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "'%s' must be a scalar %s", kNames[k],
                        ingot_graph_dtype_name(t));
    }
    switch (t) {
      case INGOT_DTYPE_F32: f[k] = ((const float*)v[k]->data)[0]; break;
      case INGOT_DTYPE_F64: f[k] = ((const double*)v[k]->data)[0]; break;
      case INGOT_DTYPE_I32: iv[k] = ((const int32_t*)v[k]->data)[0]; f[k] = (double)iv[k]; break;
      default: iv[k] = ((const int64_t*)v[k]->data)[0]; f[k] = (double)iv[k]; break;
    }
  }
  if (f[2] == 0.0) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "delta is 0");
  double span = t == INGOT_DTYPE_F32 ? (double)((float)f[1] - (float)f[0]) : f[1] - f[0];
  double count = ceil(span / f[2]);
  if (!(count == count) || count > (double)((int64_t)1 << 40)) {
    return infer_fail(c->n, INGOT_ERROR_LIMIT, "the range has too many elements");
  }
  int64_t n = count > 0 ? (int64_t)count : 0;
  infer_set_output(c, 0, t, 1, &n);
  return INGOT_OK;
}

ingot_status_t infer_CONSTANTOFSHAPE(infer_ctx_t* c) {
  int64_t shape[INGOT_MAX_RANK], count;
  const ingot_value_t* sv = infer_input(c, 0);
  if (sv->dtype != INGOT_DTYPE_I64) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "the shape input must be int64");
  ingot_status_t s = const_ints(c->g, c->n, sv, "input", INGOT_MAX_RANK, shape, &count);
  if (s) return s;
  for (int64_t i = 0; i < count; ++i) {
    if (shape[i] < 0) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "shape[%lld] is negative", (long long)i);
  }
  ingot_dtype_t t = INGOT_DTYPE_F32;
  const ingot_attr_t* a = ingot_node_attr(c->n, "value");
  if (a) {
    if (a->type != INGOT_ATTR_TENSOR || a->tensor >= c->g->value_count) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'value' must be a tensor");
    }
    const ingot_value_t* tv = &c->g->values[a->tensor];
    if (ingot_value_numel(tv) != 1 || !tv->data) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'value' must hold one element");
    }
    t = tv->dtype;
  }
  infer_set_output(c, 0, t, (int32_t)count, shape);
  return INGOT_OK;
}

/* ---- Squeeze, Unsqueeze ---- */

/* The axes of Squeeze/Unsqueeze: input 1 (opset >= 13) or attribute. */
static ingot_status_t squeeze_axes(infer_ctx_t* c, int64_t* axes, int64_t* count) {
  const ingot_value_t* av = infer_input(c, 1);
  if (av) return const_ints(c->g, c->n, av, "axes", 2 * INGOT_MAX_RANK, axes, count);
  return attr_ints(c->n, "axes", 2 * INGOT_MAX_RANK, axes, count);
}

ingot_status_t infer_SQUEEZE(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  int64_t axes[2 * INGOT_MAX_RANK], count;
  ingot_status_t s = squeeze_axes(c, axes, &count);
  if (s) return s;
  bool drop[INGOT_MAX_RANK] = {false};
  if (count < 0 || (count == 0 && infer_input(c, 1))) {
    for (int32_t d = 0; d < x->rank; ++d) drop[d] = x->dims[d] == 1;
  } else {
    if (count > x->rank) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "more axes than dimensions");
    if ((s = norm_axes(c->n, "axes", axes, count, x->rank))) return s;
    for (int64_t i = 0; i < count; ++i) {
      if (x->dims[axes[i]] != 1) {
        return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "dimension %lld is %lld, not 1", (long long)axes[i],
                          (long long)x->dims[axes[i]]);
      }
      drop[axes[i]] = true;
    }
  }
  int64_t dims[INGOT_MAX_RANK];
  int32_t r = 0;
  for (int32_t d = 0; d < x->rank; ++d) {
    if (!drop[d]) dims[r++] = x->dims[d];
  }
  infer_set_output(c, 0, x->dtype, r, dims);
  return INGOT_OK;
}

ingot_status_t infer_UNSQUEEZE(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  int64_t axes[2 * INGOT_MAX_RANK], count;
  ingot_status_t s = squeeze_axes(c, axes, &count);
  if (s) return s;
  if (count < 0) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "axes are required");
  int64_t rank = x->rank + count;
  if (rank > (int64_t)INGOT_MAX_RANK) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "output rank %lld is above %u", (long long)rank, INGOT_MAX_RANK);
  }
  if ((s = norm_axes(c->n, "axes", axes, count, (int32_t)rank))) return s;
  bool ins[INGOT_MAX_RANK] = {false};
  for (int64_t i = 0; i < count; ++i) ins[axes[i]] = true;
  int64_t dims[INGOT_MAX_RANK];
  int32_t k = 0;
  for (int32_t d = 0; d < rank; ++d) dims[d] = ins[d] ? 1 : x->dims[k++];
  infer_set_output(c, 0, x->dtype, (int32_t)rank, dims);
  return INGOT_OK;
}

/* ---- Resize, Upsample ---- */

static bool close_to_one(double v) { return fabs(v - 1.0) <= 1e-9; }

ingot_status_t ingot_graph_resize_params(const ingot_graph_t* g, uint32_t node, ingot_resize_params_t* p) {
  const ingot_node_t* n = &g->nodes[node];
  const ingot_value_t* x = node_input(g, n, 0);
  ingot_status_t s;
  int32_t rank = x->rank;
  memset(p, 0, sizeof(*p));
  p->rank = rank;
  p->cubic_a = ingot_node_attr_float(n, "cubic_coeff_a", -0.75f);
  p->exclude_outside = ingot_node_attr_int(n, "exclude_outside", 0) != 0;
  p->extrapolation = ingot_node_attr_float(n, "extrapolation_value", 0.0f);
  bool upsample = n->op == INGOT_OP_UPSAMPLE;
  bool legacy = upsample || op_before(g, 11); /* Resize-10, Upsample: asymmetric, "simple" nearest */
  if (rank < 1) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input must have rank >= 1");
  const char* mode = ingot_node_attr_string(n, "mode", "nearest");
  if (strcmp(mode, "nearest") == 0) {
    p->mode = INGOT_RESIZE_NEAREST;
  } else if (strcmp(mode, "linear") == 0 || (upsample && strcmp(mode, "bilinear") == 0)) {
    p->mode = INGOT_RESIZE_LINEAR;
  } else if (strcmp(mode, "cubic") == 0 && !legacy) {
    p->mode = INGOT_RESIZE_CUBIC;
  } else {
    return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "mode '%s' is not supported (nearest, linear%s)", mode,
                      legacy ? "" : ", cubic");
  }
  p->antialias = ingot_node_attr_int(n, "antialias", 0) != 0;
  if (p->antialias && p->mode == INGOT_RESIZE_NEAREST) { /* as ONNX's reference, which raises */
    return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "antialias=1 needs mode linear or cubic, not nearest");
  }
  if (legacy) {
    p->coord = INGOT_RESIZE_ASYMMETRIC;
    p->nearest = INGOT_RESIZE_SIMPLE;
  } else {
    static const char* const kCoord[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                         "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
    static const char* const kNearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    const char* cm = ingot_node_attr_string(n, "coordinate_transformation_mode", "half_pixel");
    const char* nm = ingot_node_attr_string(n, "nearest_mode", "round_prefer_floor");
    int ci = -1, ni = -1;
    for (int i = 0; i < 7; ++i) ci = ci < 0 && strcmp(cm, kCoord[i]) == 0 ? i : ci;
    for (int i = 0; i < 4; ++i) ni = ni < 0 && strcmp(nm, kNearest[i]) == 0 ? i : ni;
    if (ci < 0) return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "coordinate_transformation_mode '%s' is not supported", cm);
    if (ni < 0) return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "nearest_mode '%s' is not supported", nm);
    p->coord = (ingot_resize_coord_t)ci;
    p->nearest = (ingot_resize_nearest_t)ni;
  }
  /* axes (opset 18) */
  int64_t axes[INGOT_MAX_RANK], na = -1;
  if ((s = attr_ints(n, "axes", rank, axes, &na))) return s;
  if (na < 0) {
    na = rank;
    for (int32_t i = 0; i < rank; ++i) axes[i] = i;
  }
  if ((s = norm_axes(n, "axes", axes, na, rank))) return s;
  /* scales / sizes */
  double scales[INGOT_MAX_RANK];
  int64_t sizes[INGOT_MAX_RANK], ns = -1, nz = -1;
  const ingot_value_t* sv = NULL;
  const ingot_value_t* zv = NULL;
  const ingot_value_t* rv = NULL;
  if (upsample) {
    if (n->input_count >= 2) {
      sv = node_input(g, n, 1);
    } else {
      const ingot_attr_t* a = ingot_node_attr(n, "scales");
      if (!a || a->type != INGOT_ATTR_FLOATS || (int64_t)a->count != rank) {
        return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'scales' must hold %d floats", rank);
      }
      for (int32_t i = 0; i < rank; ++i) scales[i] = a->floats[i];
      ns = rank;
    }
  } else if (legacy) {
    sv = node_input(g, n, 1);
  } else {
    rv = node_input(g, n, 1);
    sv = node_input(g, n, 2);
    zv = node_input(g, n, 3);
  }
  if (sv && ingot_value_numel(sv) > 0 && (s = const_floats(g, n, sv, "scales", INGOT_MAX_RANK, scales, &ns))) return s;
  if (zv && ingot_value_numel(zv) > 0) {
    if (zv->dtype != INGOT_DTYPE_I64) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "sizes must be int64");
    if ((s = const_ints(g, n, zv, "sizes", INGOT_MAX_RANK, sizes, &nz))) return s;
  }
  if ((ns >= 0) == (nz >= 0)) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "exactly one of 'scales' and 'sizes' must be given");
  }
  if ((ns >= 0 && ns != na) || (nz >= 0 && nz != na)) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "%s has %lld entries for %lld axes", ns >= 0 ? "scales" : "sizes",
                      (long long)(ns >= 0 ? ns : nz), (long long)na);
  }
  for (int32_t d = 0; d < rank; ++d) {
    p->in[d] = p->out[d] = x->dims[d];
    p->scale[d] = 1.0;
    p->roi_start[d] = 0.0;
    p->roi_end[d] = 1.0;
  }
  bool axis_on[INGOT_MAX_RANK] = {false};
  for (int64_t i = 0; i < na; ++i) axis_on[axes[i]] = true;
  if (ns >= 0) {
    for (int64_t i = 0; i < na; ++i) {
      int64_t d = axes[i];
      if (!(scales[i] > 0) || scales[i] > 1e6) {
        return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "scale %g is not a positive number", scales[i]);
      }
      p->scale[d] = scales[i];
      double o = floor(scales[i] * (double)x->dims[d]);
      if (o > (double)((int64_t)1 << 40)) return infer_fail(n, INGOT_ERROR_LIMIT, "the output is too large");
      p->out[d] = (int64_t)o;
    }
  } else {
    const char* policy = ingot_node_attr_string(n, "keep_aspect_ratio_policy", "stretch");
    bool stretch = strcmp(policy, "stretch") == 0, not_larger = strcmp(policy, "not_larger") == 0;
    if (!stretch && !not_larger && strcmp(policy, "not_smaller") != 0) {
      return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "keep_aspect_ratio_policy '%s' is not supported", policy);
    }
    for (int64_t i = 0; i < na; ++i) {
      if (sizes[i] < 0 || sizes[i] > ((int64_t)1 << 40)) {
        return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "sizes[%lld] = %lld is invalid", (long long)i,
                          (long long)sizes[i]);
      }
      int64_t d = axes[i];
      if (x->dims[d] == 0) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "cannot resize an empty dimension");
      p->out[d] = sizes[i];
      p->scale[d] = (double)sizes[i] / (double)x->dims[d];
    }
    if (!stretch) {
      double pick = p->scale[axes[0]];
      for (int64_t i = 1; i < na; ++i) {
        double v = p->scale[axes[i]];
        pick = not_larger ? (v < pick ? v : pick) : (v > pick ? v : pick);
      }
      for (int64_t i = 0; i < na; ++i) {
        int64_t d = axes[i];
        p->scale[d] = pick;
        p->out[d] = (int64_t)(pick * (double)x->dims[d] + 0.5);
      }
    }
  }
  if (p->coord == INGOT_RESIZE_TF_CROP_AND_RESIZE) {
    double roi[2 * INGOT_MAX_RANK];
    int64_t nr = 0;
    if (rv && ingot_value_numel(rv) > 0) {
      if ((s = const_floats(g, n, rv, "roi", 2 * INGOT_MAX_RANK, roi, &nr))) return s;
      if (nr != 2 * na) {
        return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "roi has %lld entries, expected %lld", (long long)nr,
                          (long long)(2 * na));
      }
      for (int64_t i = 0; i < na; ++i) {
        p->roi_start[axes[i]] = roi[i];
        p->roi_end[axes[i]] = roi[na + i];
      }
    }
  }
  for (int32_t d = 0; d < rank; ++d) {
    bool roi_default = p->coord != INGOT_RESIZE_TF_CROP_AND_RESIZE ||
                       (fabs(p->roi_start[d]) <= 1e-9 && close_to_one(p->roi_end[d]));
    p->identity[d] = !axis_on[d] || (close_to_one(p->scale[d]) && p->out[d] == p->in[d] && roi_default);
  }
  return INGOT_OK;
}

ingot_status_t infer_RESIZE(infer_ctx_t* c) {
  ingot_resize_params_t p;
  ingot_status_t s = ingot_graph_resize_params(c->g, c->id, &p);
  if (s) return s;
  infer_set_output(c, 0, infer_input(c, 0)->dtype, p.rank, p.out);
  return INGOT_OK;
}

ingot_status_t infer_UPSAMPLE(infer_ctx_t* c) { return infer_RESIZE(c); }

/* ---- DepthToSpace, SpaceToDepth, Trilu ---- */

ingot_status_t infer_DEPTHTOSPACE(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  int64_t b = c->n->params.u.block.blocksize; /* blocksize and mode: graph/params.c */
  if (x->rank != 4) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input must have rank 4, has %d", x->rank);
  if (x->dims[1] % (b * b) != 0) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "channels (%lld) are not a multiple of blocksize^2",
                      (long long)x->dims[1]);
  }
  int64_t dims[4] = {x->dims[0], x->dims[1] / (b * b), x->dims[2] * b, x->dims[3] * b};
  infer_set_output(c, 0, x->dtype, 4, dims);
  return INGOT_OK;
}

ingot_status_t infer_SPACETODEPTH(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  int64_t b = c->n->params.u.block.blocksize; /* graph/params.c */
  if (x->rank != 4) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input must have rank 4, has %d", x->rank);
  if (x->dims[2] % b != 0 || x->dims[3] % b != 0) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "height and width must be multiples of the blocksize");
  }
  int64_t dims[4] = {x->dims[0], x->dims[1] * b * b, x->dims[2] / b, x->dims[3] / b};
  infer_set_output(c, 0, x->dtype, 4, dims);
  return INGOT_OK;
}

ingot_status_t infer_TRILU(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  const ingot_value_t* k = infer_input(c, 1);
  if (x->rank < 2) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input must have rank >= 2");
  if (k && (k->dtype != INGOT_DTYPE_I64 || ingot_value_numel(k) != 1)) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "k must be one int64");
  }
  infer_copy_output(c, 0, x);
  return INGOT_OK;
}

/* OneHot: the indices' shape with `depth` (a constant scalar or one-element
 * tensor of any numeric type, taken as an integer) inserted at axis; the
 * output has the dtype of `values` (two elements: off, on). */
ingot_status_t infer_onehot(infer_ctx_t* c) {
  const ingot_value_t* ind = infer_input(c, 0);
  const ingot_value_t* depth = infer_input(c, 1);
  const ingot_value_t* values = infer_input(c, 2);
  ingot_status_t s = need_const(c->g, c->n, depth, "depth");
  if (s) return s;
  if (ingot_value_numel(depth) != 1 || depth->rank > 1) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input 'depth' must be a scalar or one-element tensor");
  }
  double d;
  switch (depth->dtype) {
    case INGOT_DTYPE_F32: d = ((const float*)depth->data)[0]; break;
    case INGOT_DTYPE_F64: d = ((const double*)depth->data)[0]; break;
    case INGOT_DTYPE_I64: d = (double)((const int64_t*)depth->data)[0]; break;
    case INGOT_DTYPE_I32: d = ((const int32_t*)depth->data)[0]; break;
    case INGOT_DTYPE_I8: d = ((const int8_t*)depth->data)[0]; break;
    case INGOT_DTYPE_U8: d = ((const uint8_t*)depth->data)[0]; break;
    default:
      return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input 'depth' of type %s is not supported",
                        ingot_graph_dtype_name(depth->dtype));
  }
  if (!(d >= 1.0) || d > (double)((int64_t)1 << 31)) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "depth %g must be in [1, 2^31]", d);
  }
  if (ingot_value_numel(values) != 2 || values->rank != 1) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input 'values' must hold two elements (off, on)");
  }
  if (ind->rank + 1 > (int32_t)INGOT_MAX_RANK) return infer_fail(c->n, INGOT_ERROR_LIMIT, "the output rank is too large");
  int32_t axis = c->n->params.u.axis.axis; /* graph/params.c */
  int64_t dims[INGOT_MAX_RANK];
  for (int32_t i = 0, j = 0; i <= ind->rank; ++i) dims[i] = i == axis ? (int64_t)d : ind->dims[j++];
  infer_set_output(c, 0, values->dtype, ind->rank + 1, dims);
  return INGOT_OK;
}

/* GridSample: X [N, C, D1..Dk] (k = 2 or 3, float32), grid [N, O1..Ok, k]
 * (float32) -> Y [N, C, O1..Ok]. */
ingot_status_t infer_gridsample(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  const ingot_value_t* grid = infer_input(c, 1);
  if (x->rank != 4 && x->rank != 5) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input X must have rank 4 or 5 (2-D or 3-D sampling), not %d",
                      x->rank);
  }
  int32_t k = x->rank - 2;
  if (grid->rank != x->rank || grid->dims[k + 1] != k || grid->dims[0] != x->dims[0]) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "grid must be [N, ..., %d] with the %d spatial axes and N of X", k,
                      k);
  }
  if (x->dtype != INGOT_DTYPE_F32 || grid->dtype != INGOT_DTYPE_F32) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "X and grid must be float32 (X %s, grid %s)",
                      ingot_graph_dtype_name(x->dtype), ingot_graph_dtype_name(grid->dtype));
  }
  int64_t dims[INGOT_MAX_RANK] = {x->dims[0], x->dims[1]};
  for (int32_t i = 0; i < k; ++i) dims[2 + i] = grid->dims[1 + i];
  infer_set_output(c, 0, x->dtype, x->rank, dims);
  return INGOT_OK;
}

/* RoiAlign: X [N, C, H, W] (float32 or float64), rois [R, 4] of X's dtype,
 * batch_indices [R] int64 -> Y [R, C, output_height, output_width]. The
 * ROIs and batch indices are run-time data (the lowering guards them). */
ingot_status_t infer_roialign(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  const ingot_value_t* rois = infer_input(c, 1);
  const ingot_value_t* bi = infer_input(c, 2);
  const ingot_roialign_params_t* p = &c->n->params.u.roialign; /* graph/params.c */
  if (x->rank != 4) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "X must be [N, C, H, W], not rank %d", x->rank);
  if (x->dtype != INGOT_DTYPE_F32 && x->dtype != INGOT_DTYPE_F64) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "X must be float32 or float64, not %s",
                      ingot_graph_dtype_name(x->dtype));
  }
  if (rois->rank != 2 || rois->dims[1] != 4 || rois->dtype != x->dtype) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "rois must be [num_rois, 4] of X's dtype %s",
                      ingot_graph_dtype_name(x->dtype));
  }
  if (bi->rank != 1 || bi->dims[0] != rois->dims[0] || bi->dtype != INGOT_DTYPE_I64) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "batch_indices must be int64 [%lld], one per ROI",
                      (long long)rois->dims[0]);
  }
  int64_t dims[4] = {rois->dims[0], x->dims[1], p->output_height, p->output_width};
  infer_set_output(c, 0, x->dtype, 4, dims);
  return INGOT_OK;
}

/* AffineGrid: theta [N, 2, 3] (2-D) or [N, 3, 4] (3-D), size a constant
 * [N, C, H, W] or [N, C, D, H, W] -> grid [N, H, W, 2] or [N, D, H, W, 3]. */
ingot_status_t infer_affinegrid(infer_ctx_t* c) {
  const ingot_value_t* theta = infer_input(c, 0);
  int64_t size[5], count = 0;
  ingot_status_t s = const_ints(c->g, c->n, infer_input(c, 1), "size", 5, size, &count);
  if (s) return s;
  if (count != 4 && count != 5) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "size must have 4 or 5 entries");
  int64_t k = count - 2;
  if (theta->rank != 3 || theta->dims[0] != size[0] || theta->dims[1] != k || theta->dims[2] != k + 1) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "theta must be [%lld, %lld, %lld]", (long long)size[0],
                      (long long)k, (long long)(k + 1));
  }
  if (!infer_is_float(theta->dtype)) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "theta of type %s is not supported",
                      ingot_graph_dtype_name(theta->dtype));
  }
  int64_t dims[INGOT_MAX_RANK] = {size[0]};
  for (int64_t i = 0; i < k; ++i) {
    if (size[2 + i] < 1) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "size[%lld] must be >= 1", (long long)(2 + i));
    dims[1 + i] = size[2 + i];
  }
  dims[1 + k] = k;
  infer_set_output(c, 0, theta->dtype, (int32_t)k + 2, dims);
  return INGOT_OK;
}

/* Compress: the slices of the input along axis (or the elements of the
 * flattened input, axis absent) where the condition, a bool vector, is
 * true; past the condition's length nothing is taken, and entries past the
 * axis are ignored (as ONNX Runtime does). A constant condition decides the
 * output shape here. A condition known only at run time gives the output
 * its largest size, the axis' extent (numel when flattened), as bounds, and
 * a second output, the shape the run computes (ingot_value_t.runtime_shape). */
ingot_status_t infer_compress(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  const ingot_value_t* cond = infer_input(c, 1);
  if (cond->dtype != INGOT_DTYPE_BOOL || cond->rank != 1) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "condition must be a 1-D bool tensor");
  }
  int32_t axis = c->n->params.u.axis.axis; /* -1: flattened (graph/params.c) */
  int64_t extent = axis < 0 ? ingot_value_numel(x) : x->dims[axis];
  bool known = cond->kind == INGOT_VALUE_WEIGHT && (cond->data || ingot_value_numel(cond) == 0);
  int64_t len = cond->dims[0] < extent ? cond->dims[0] : extent, kept = extent;
  if (known) {
    kept = 0;
    for (int64_t i = 0; i < len; ++i) kept += ((const uint8_t*)cond->data)[i] != 0;
  }
  if (axis < 0) {
    infer_set_output(c, 0, x->dtype, 1, &kept);
  } else {
    int64_t dims[INGOT_MAX_RANK];
    for (int32_t i = 0; i < x->rank; ++i) dims[i] = i == axis ? kept : x->dims[i];
    infer_set_output(c, 0, x->dtype, x->rank, dims);
  }
  if (!known) infer_runtime_shape(c, 0, 1, "shape", 1u << (axis < 0 ? 0 : axis));
  return INGOT_OK;
}

/* ---- TfIdfVectorizer ---- */

ingot_status_t ingot_graph_tfidf_params(ingot_arena_t* arena, const ingot_node_t* n, ingot_tfidf_t* out) {
  memset(out, 0, sizeof(*out));
  if (ingot_node_attr(n, "pool_strings"))
    return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "pool_strings: string tensors are not supported (pool_int64s is)");
  const char* mode = ingot_node_attr_string(n, "mode", "");
  out->mode = !strcmp(mode, "TF") ? 0 : !strcmp(mode, "IDF") ? 1 : !strcmp(mode, "TFIDF") ? 2 : -1;
  if (out->mode < 0) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "mode '%s' is not TF, IDF or TFIDF", mode);
  out->min_gram = ingot_node_attr_int(n, "min_gram_length", 0);
  out->max_gram = ingot_node_attr_int(n, "max_gram_length", 0);
  out->max_skip = ingot_node_attr_int(n, "max_skip_count", 0);
  if (out->min_gram < 1 || out->max_gram < out->min_gram || out->max_skip < 0 || out->max_gram > 64 ||
      out->max_skip > 1024) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT,
                      "min_gram_length %lld, max_gram_length %lld, max_skip_count %lld do not fit",
                      (long long)out->min_gram, (long long)out->max_gram, (long long)out->max_skip);
  }
  uint32_t pool_n = 0, counts_n = 0, index_n = 0;
  out->pool = ingot_node_attr_ints(n, "pool_int64s", &pool_n);
  const int64_t* counts = ingot_node_attr_ints(n, "ngram_counts", &counts_n);
  const int64_t* indexes = ingot_node_attr_ints(n, "ngram_indexes", &index_n);
  if (!counts || !indexes || index_n == 0) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "ngram_counts and ngram_indexes are required");
  }
  /* ngram_counts[s]: where the (s + 1)-grams start in the pool */
  out->size = INGOT_ARENA_ARRAY(arena, int64_t, index_n);
  out->offset = INGOT_ARENA_ARRAY(arena, int64_t, index_n);
  out->column = INGOT_ARENA_ARRAY(arena, int64_t, index_n);
  out->weight = INGOT_ARENA_ARRAY(arena, float, index_n);
  uint32_t k = 0;
  for (uint32_t sz = 0; sz < counts_n; ++sz) {
    int64_t begin = counts[sz], end = sz + 1 < counts_n ? counts[sz + 1] : (int64_t)pool_n;
    if (begin < 0 || end < begin || end > (int64_t)pool_n || (end - begin) % (int64_t)(sz + 1)) {
      return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "ngram_counts[%u] = %lld does not fit a pool of %u ids", sz,
                        (long long)begin, pool_n);
    }
    for (int64_t at = begin; at < end; at += (int64_t)(sz + 1)) {
      if (k == index_n) break;
      out->size[k] = (int64_t)(sz + 1);
      out->offset[k++] = at;
    }
  }
  if (k != index_n) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "ngram_indexes has %u entries, the pool %u n-grams", index_n, k);
  }
  const ingot_attr_t* w = ingot_node_attr(n, "weights");
  if (w && w->count != index_n)
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "weights has %u entries, the pool %u n-grams", w->count, index_n);
  for (uint32_t e = 0; e < index_n; ++e) {
    if (indexes[e] < 0 || indexes[e] >= ((int64_t)1 << 24))
      return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "ngram_indexes[%u] = %lld is out of range", e,
                        (long long)indexes[e]);
    out->column[e] = indexes[e];
    out->weight[e] = w ? w->floats[e] : 1.0f;
    if (indexes[e] + 1 > out->columns) out->columns = indexes[e] + 1;
  }
  out->entries = index_n;
  return INGOT_OK;
}

ingot_status_t infer_tfidf(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  if ((x->dtype != INGOT_DTYPE_I32 && x->dtype != INGOT_DTYPE_I64) || x->rank < 1 || x->rank > 2) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input X must be int32 or int64 [N] or [B, N] (is %s, rank %d)",
                      ingot_graph_dtype_name(x->dtype), x->rank);
  }
  ingot_tfidf_t t;
  ingot_status_t s = ingot_graph_tfidf_params(&c->g->arena, c->n, &t);
  if (s) return s;
  int64_t dims[2] = {x->rank == 2 ? x->dims[0] : t.columns, t.columns};
  infer_set_output(c, 0, INGOT_DTYPE_F32, x->rank, x->rank == 2 ? dims : dims + 1);
  return INGOT_OK;
}

/* NonZero: x of rank r >= 1 -> int64 [r, n], n (the number of nonzero
 * elements) known at run time: dims [r, numel(x)] are its bounds. */
ingot_status_t infer_nonzero(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  if (x->rank < 1) return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "a scalar input is not supported");
  int64_t dims[2] = {x->rank, ingot_value_numel(x)};
  infer_set_output(c, 0, INGOT_DTYPE_I64, 2, dims);
  infer_runtime_shape(c, 0, 1, "shape", 1u << 1); /* [rank, n] */
  return INGOT_OK;
}

/* Unique: x -> Y (x's dtype), indices, inverse_indices, counts (int64).
 * Without an axis the items are x's elements (x flattened): Y [n],
 * inverse_indices [numel(x)]; with one they are the slices along it: Y is
 * x's shape with n at the axis, inverse_indices [x.dims[axis]]. n, the
 * number of unique items, is known at run time: Y, indices [n] and counts
 * [n] have run-time shapes (outputs 4, 5, 6), n bounded by the item count.
 * The node always gets all seven outputs (those it lacks are added, unread):
 * its lowering works in indices and inverse_indices, and an output list
 * without holes is what the rest of the compiler expects (an output the
 * model left empty is already a value of its own, importer/). */
ingot_status_t infer_unique(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  int32_t axis = c->n->params.u.unique.axis;
  ingot_dtype_t dtype = x->dtype;
  int32_t rank = axis < 0 ? 1 : x->rank;
  int64_t ydims[INGOT_MAX_RANK];
  int64_t items = axis < 0 ? ingot_value_numel(x) : x->dims[axis];
  for (int32_t d = 0; d < rank; ++d) ydims[d] = axis < 0 ? items : x->dims[d];
  static const char* const kNames[4] = {"Y", "indices", "inverse_indices", "counts"};
  for (uint32_t k = 0; k < 4; ++k) infer_ensure_output(c, k, kNames[k]);
  infer_set_output(c, 0, dtype, rank, ydims);
  for (uint32_t k = 1; k < 4; ++k) infer_set_output(c, k, INGOT_DTYPE_I64, 1, &items);
  infer_runtime_shape(c, 0, 4, "Y_shape", 1u << (axis < 0 ? 0 : axis));
  infer_runtime_shape(c, 1, 5, "indices_shape", 1u);
  infer_runtime_shape(c, 3, 6, "counts_shape", 1u);
  return INGOT_OK;
}

/* NonMaxSuppression input i (2: max_output_boxes_per_class, int64; 3:
 * iou_threshold, 4: score_threshold, float32), when given: one element (a
 * scalar or [1]), read at run time. */
static ingot_status_t nms_check_scalar(const infer_ctx_t* c, uint32_t i, const char* what, ingot_dtype_t dtype) {
  const ingot_value_t* v = infer_input(c, i);
  if (!v) return INGOT_OK;
  if (v->dtype != dtype || v->rank > 1 || ingot_value_numel(v) != 1) {
    char shape[96];
    infer_shape_str(v, shape, sizeof(shape));
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "%s must be one %s (a scalar or [1]), not %s %s", what,
                      ingot_graph_dtype_name(dtype), ingot_graph_dtype_name(v->dtype), shape);
  }
  return INGOT_OK;
}

/* NonMaxSuppression: boxes float32 [B, N, 4], scores float32 [B, C, N] ->
 * selected_indices int64 [S, 3], S known at run time. Its bound: B * C *
 * min(N, max_output_boxes_per_class) when that is a constant (a negative
 * one counts as 0), else B * C * N; absent, it is 0 (no output). A bound of
 * 0 leaves a fixed, empty [0, 3] output (no kernel runs). */
ingot_status_t infer_nms(infer_ctx_t* c) {
  const ingot_value_t* boxes = infer_input(c, 0);
  const ingot_value_t* scores = infer_input(c, 1);
  char bs[96], ss[96];
  infer_shape_str(boxes, bs, sizeof(bs));
  infer_shape_str(scores, ss, sizeof(ss));
  if (boxes->dtype != INGOT_DTYPE_F32 || scores->dtype != INGOT_DTYPE_F32) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "boxes and scores must be float32, not %s and %s",
                      ingot_graph_dtype_name(boxes->dtype), ingot_graph_dtype_name(scores->dtype));
  }
  if (boxes->rank != 3 || boxes->dims[2] != 4) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "boxes must be [num_batches, spatial_dimension, 4], not %s",
                      bs);
  }
  if (scores->rank != 3) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT,
                      "scores must be [num_batches, num_classes, spatial_dimension], not %s", ss);
  }
  if (scores->dims[0] != boxes->dims[0] || scores->dims[2] != boxes->dims[1]) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT,
                      "boxes %s and scores %s differ in num_batches or spatial_dimension (boxes [B, N, 4], scores "
                      "[B, C, N])", bs, ss);
  }
  ingot_status_t s;
  if ((s = nms_check_scalar(c, 2, "max_output_boxes_per_class", INGOT_DTYPE_I64)) ||
      (s = nms_check_scalar(c, 3, "iou_threshold", INGOT_DTYPE_F32)) ||
      (s = nms_check_scalar(c, 4, "score_threshold", INGOT_DTYPE_F32))) {
    return s;
  }
  int64_t b = boxes->dims[0], n = boxes->dims[1], classes = scores->dims[1];
  const ingot_value_t* max = infer_input(c, 2);
  int64_t per_class = max ? n : 0;
  if (max && max->kind == INGOT_VALUE_WEIGHT && max->data) {
    int64_t m = ((const int64_t*)max->data)[0];
    per_class = m < 0 ? 0 : m < n ? m : n;
  }
  int64_t dims[2] = {b * classes * per_class, 3};
  infer_set_output(c, 0, INGOT_DTYPE_I64, 2, dims);
  if (dims[0] > 0) infer_runtime_shape(c, 0, 1, "shape", 1u); /* [S, 3] */
  return INGOT_OK;
}

/* EyeLike: x's 2-D shape; the dtype of attribute 'dtype', else x's. */
ingot_status_t infer_eyelike(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  if (x->rank != 2) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input must have rank 2, not %d", x->rank);
  ingot_dtype_t t = x->dtype;
  const ingot_attr_t* a = ingot_node_attr(c->n, "dtype");
  if (a && a->type != INGOT_ATTR_INT)
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'dtype' must be an int (an ONNX data type)");
  const ingot_attr_t* k = ingot_node_attr(c->n, "k");
  if (k && k->type != INGOT_ATTR_INT) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'k' must be an int");
  if (a) {
    t = infer_onnx_dtype(a->i);
    if (t == INGOT_DTYPE_INVALID)
      return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "attribute 'dtype' = %lld is not supported", (long long)a->i);
  }
  infer_set_output(c, 0, t, 2, x->dims);
  return INGOT_OK;
}

/* Optional values are tensors here: an optional graph input is refused by
 * the importer, so Optional(x) and OptionalGetElement(x) are x, and an
 * OptionalHasElement knows at compile time whether its input is there
 * (lower_optional_has_element stores it). An empty Optional (no input) would
 * need a value that is no tensor: refused. */
ingot_status_t infer_optional(infer_ctx_t* c) {
  if (c->n->input_count == 0 || c->n->inputs[0] == INGOT_NO_VALUE)
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "an empty optional (no input) is not supported");
  const ingot_value_t* x = infer_input(c, 0);
  infer_set_output(c, 0, x->dtype, x->rank, x->dims);
  return INGOT_OK;
}

ingot_status_t infer_optional_has_element(infer_ctx_t* c) {
  infer_set_output(c, 0, INGOT_DTYPE_BOOL, 0, NULL);
  return INGOT_OK;
}

/* CenterCropPad: input_data 0, shape 1 (a constant, one size per axis of
 * attribute 'axes', every axis without it); each such axis of the output
 * has its size from shape, the others x's. */
ingot_status_t infer_centercroppad(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  int64_t sizes[INGOT_MAX_RANK], count;
  ingot_status_t s = const_ints(c->g, c->n, infer_input(c, 1), "shape", INGOT_MAX_RANK, sizes, &count);
  if (s) return s;
  const ingot_attr_t* a = ingot_node_attr(c->n, "axes");
  if (a && a->type != INGOT_ATTR_INTS)
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'axes' must be a list of ints");
  int64_t axes[INGOT_MAX_RANK];
  int64_t n = a ? (int64_t)a->count : x->rank;
  if (n > x->rank)
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "%lld axes for rank %d", (long long)n, x->rank);
  bool seen[INGOT_MAX_RANK] = {false};
  for (int64_t i = 0; i < n; ++i) {
    int64_t ax = a ? a->ints[i] : i;
    if (ax < -x->rank || ax >= x->rank)
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "axis %lld is out of range for rank %d", (long long)ax,
                        x->rank);
    if (ax < 0) ax += x->rank;
    if (seen[ax]) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "axis %lld is given twice", (long long)ax);
    seen[ax] = true;
    axes[i] = ax;
  }
  if (count != n)
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "shape has %lld sizes for %lld axes", (long long)count,
                      (long long)n);
  int64_t dims[INGOT_MAX_RANK];
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  for (int64_t i = 0; i < n; ++i) {
    if (sizes[i] < 0 || sizes[i] > ((int64_t)1 << 32))
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "shape[%lld] = %lld is invalid", (long long)i,
                        (long long)sizes[i]);
    dims[axes[i]] = sizes[i];
  }
  infer_set_output(c, 0, x->dtype, x->rank, dims);
  return INGOT_OK;
}

/* The run-time integer vector `v` of a sequence op: int64 or int32, one
 * entry per batch row (`batch` of them). */
static ingot_status_t batch_vector(const infer_ctx_t* c, const ingot_value_t* v, const char* what, int64_t batch) {
  if (!is_int_index_type(v->dtype)) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "%s '%s' must be int64 or int32, not %s", what, v->name,
                      ingot_graph_dtype_name(v->dtype));
  }
  if (v->rank != 1 || v->dims[0] != batch) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "%s '%s' must have shape [%lld]", what, v->name,
                      (long long)batch);
  }
  return INGOT_OK;
}

/* ReverseSequence: input 0, sequence_lens 1 ([batch], read at run time);
 * the output has input 0's shape. Constant lengths must lie in [0, time]
 * (run-time ones are clamped into it by the lowering). */
ingot_status_t infer_reverse_sequence(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  const ingot_value_t* lens = infer_input(c, 1);
  ingot_status_t s;
  if (x->rank < 2) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input must have rank >= 2");
  /* batch_axis, time_axis: node.params (graph/params.c) */
  const ingot_reverse_sequence_params_t* p = &c->n->params.u.reverse_sequence;
  int64_t time = x->dims[p->time_axis];
  if ((s = batch_vector(c, lens, "sequence_lens", x->dims[p->batch_axis]))) return s;
  if (lens->kind == INGOT_VALUE_WEIGHT && lens->data) {
    for (int64_t i = 0; i < lens->dims[0]; ++i) {
      int64_t v = weight_int_at(lens, i);
      if (v < 0 || v > time) {
        return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "sequence length %lld (entry %lld) is outside [0, %lld]",
                          (long long)v, (long long)i, (long long)time);
      }
    }
  }
  infer_copy_output(c, 0, x);
  return INGOT_OK;
}

/* TensorScatter: past_cache 0, update 1 (past_cache's shape but for a
 * sequence axis no longer than past_cache's), write_indices 2 (optional,
 * [batch], read at run time); the output has past_cache's shape. In linear
 * mode constant write indices must leave room for the update (w >= 0,
 * w + sequence_length <= max_sequence_length); run-time ones are clamped
 * into that range by the lowering. */
ingot_status_t infer_tensor_scatter(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  const ingot_value_t* upd = infer_input(c, 1);
  const ingot_value_t* w = infer_input(c, 2);
  ingot_status_t s;
  /* axis, mode: node.params (graph/params.c) */
  const ingot_tensor_scatter_params_t* p = &c->n->params.u.tensor_scatter;
  if (upd->dtype != x->dtype) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "update is %s, past_cache %s",
                      ingot_graph_dtype_name(upd->dtype), ingot_graph_dtype_name(x->dtype));
  }
  bool ok = upd->rank == x->rank;
  for (int32_t d = 0; ok && d < x->rank; ++d) ok = d == p->axis ? upd->dims[d] <= x->dims[d] : upd->dims[d] == x->dims[d];
  if (!ok) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT,
                      "update must have past_cache's shape but for axis %d, where it may be shorter", p->axis);
  }
  if (w) {
    if ((s = batch_vector(c, w, "write_indices", x->dims[0]))) return s;
    int64_t room = x->dims[p->axis] - upd->dims[p->axis];
    if (!p->circular && w->kind == INGOT_VALUE_WEIGHT && w->data) {
      for (int64_t i = 0; i < w->dims[0]; ++i) {
        int64_t v = weight_int_at(w, i);
        if (v < 0 || v > room) {
          return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT,
                            "write index %lld (entry %lld) is outside [0, %lld] (linear mode)", (long long)v,
                            (long long)i, (long long)room);
        }
      }
    }
  }
  infer_copy_output(c, 0, x);
  return INGOT_OK;
}

/* HannWindow, HammingWindow, BlackmanWindow: input 'size' (a constant int32
 * or int64 scalar) is the length of the 1-D output, whose dtype is
 * output_datatype (node.params, graph/params.c). */
ingot_status_t infer_signal_window(infer_ctx_t* c) {
  int64_t size = 0, count = 0;
  ingot_status_t s = const_ints(c->g, c->n, infer_input(c, 0), "size", 1, &size, &count);
  if (s) return s;
  if (count != 1) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input 'size' must be a scalar");
  if (size < 0 || size > ((int64_t)1 << 32)) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "size %lld is invalid", (long long)size);
  }
  infer_set_output(c, 0, c->n->params.u.signal_window.dtype, 1, &size);
  return INGOT_OK;
}

/* numpy's floor division of two float64 (npy_divmod): from the remainder of
 * fmod, so that it agrees with Python's // (floor(a / b) can differ by one
 * where a / b rounds up to an integer). */
static double py_floor_div(double a, double b) {
  double mod = fmod(a, b);
  if (b == 0.0) return a / b;
  double div = (a - mod) / b;
  if (mod != 0.0 && ((b < 0) != (mod < 0))) div -= 1.0;
  if (div == 0.0) return copysign(0.0, a / b);
  double fl = floor(div);
  if (div - fl > 0.5) fl += 1.0;
  return fl;
}

int64_t ingot_graph_mel_bin(int64_t dft_length, int64_t sample_rate, double lower_edge, double upper_edge,
                            bool edges_f32, int64_t count, int64_t i) {
  double low_mel, step;
  if (edges_f32) { /* numpy: a float32 scalar with a Python int stays float32 */
    float lo = 2595.0f * log10f(1.0f + (float)lower_edge / 700.0f);
    float hi = 2595.0f * log10f(1.0f + (float)upper_edge / 700.0f);
    low_mel = lo;
    step = (float)(hi - lo) / (float)count;
  } else {
    low_mel = 2595.0 * log10(1.0 + lower_edge / 700.0);
    double high_mel = 2595.0 * log10(1.0 + upper_edge / 700.0);
    step = (high_mel - low_mel) / (double)count;
  }
  double mel = (double)i * step + low_mel;
  double hz = 700.0 * (pow(10.0, mel / 2595.0) - 1.0);
  double bin = py_floor_div((double)(dft_length + 1) * hz, (double)sample_rate);
  return bin != bin || bin >= 9.2e18 || bin <= -9.2e18 ? INT64_MIN : (int64_t)bin;
}

/* MelWeightMatrix: every input a constant scalar (num_mel_bins, dft_length
 * and sample_rate int32 or int64, the edges float32 or float64); the output
 * [dft_length / 2 + 1, num_mel_bins] in output_datatype. Every triangle must
 * lie within the spectrogram bins: ONNX's reference fails (or wraps a
 * negative bin) otherwise. */
ingot_status_t infer_mel_weight_matrix(infer_ctx_t* c) {
  static const char* const kNames[3] = {"num_mel_bins", "dft_length", "sample_rate"};
  int64_t v[3], count = 0;
  ingot_status_t s;
  for (uint32_t i = 0; i < 3; ++i) {
    if ((s = const_ints(c->g, c->n, infer_input(c, i), kNames[i], 1, &v[i], &count))) return s;
    if (count != 1) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input '%s' must be a scalar", kNames[i]);
    if (v[i] <= 0 || v[i] > ((int64_t)1 << 24)) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input '%s' = %lld is invalid", kNames[i],
                        (long long)v[i]);
    }
  }
  double edge[2];
  static const char* const kEdges[2] = {"lower_edge_hertz", "upper_edge_hertz"};
  for (uint32_t i = 0; i < 2; ++i) {
    if ((s = const_floats(c->g, c->n, infer_input(c, 3 + i), kEdges[i], 1, &edge[i], &count))) return s;
    if (count != 1) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input '%s' must be a scalar", kEdges[i]);
  }
  int64_t mels = v[0], spectrum = v[1] / 2 + 1;
  bool f32 = infer_input(c, 3)->dtype == INGOT_DTYPE_F32;
  for (int64_t i = 0; i < mels; ++i) {
    int64_t lo = ingot_graph_mel_bin(v[1], v[2], edge[0], edge[1], f32, mels + 2, i);
    int64_t mid = ingot_graph_mel_bin(v[1], v[2], edge[0], edge[1], f32, mels + 2, i + 1);
    int64_t hi = ingot_graph_mel_bin(v[1], v[2], edge[0], edge[1], f32, mels + 2, i + 2);
    bool ok = (mid != lo || (mid >= 0 && mid < spectrum)) && (mid <= lo || (lo >= 0 && mid < spectrum)) &&
              (hi <= mid || (mid >= 0 && hi <= spectrum));
    if (!ok) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT,
                        "mel bin %lld spans spectrogram bins %lld..%lld..%lld, outside [0, %lld) (ONNX's reference "
                        "fails or wraps)",
                        (long long)i, (long long)lo, (long long)mid, (long long)hi, (long long)spectrum);
    }
  }
  int64_t dims[2] = {spectrum, mels};
  infer_set_output(c, 0, c->n->params.u.signal_window.dtype, 2, dims);
  return INGOT_OK;
}

/* STFT: signal [batch, length, 1 (real) or 2 (complex)], frame_step (a
 * constant scalar), window (optional, [frame_length], read at run time),
 * frame_length (optional constant scalar; else the window's length, else
 * the signal's). frames = 1 + (length - frame_length) / frame_step; the
 * output [batch, frames, bins, 2] with bins frame_length / 2 + 1 (onesided)
 * or frame_length, in the signal's dtype. */
ingot_status_t infer_stft(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  const ingot_value_t* w = infer_input(c, 2);
  const ingot_value_t* fl = infer_input(c, 3);
  if (x->rank != 3 || (x->dims[2] != 1 && x->dims[2] != 2)) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "signal must be [batch, length, 1 or 2], not rank %d",
                      x->rank);
  }
  int64_t step = 0, length = 0, count = 0;
  ingot_status_t s = const_ints(c->g, c->n, infer_input(c, 1), "frame_step", 1, &step, &count);
  if (s) return s;
  if (count != 1 || step <= 0) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input 'frame_step' must be a positive scalar");
  }
  if (w && w->rank != 1) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "window must be 1-D");
  if (fl) {
    if ((s = const_ints(c->g, c->n, fl, "frame_length", 1, &length, &count))) return s;
    if (count != 1 || length <= 0) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input 'frame_length' must be a positive scalar");
    }
    if (w && w->dims[0] != length) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "window has %lld entries for frame_length %lld",
                        (long long)w->dims[0], (long long)length);
    }
  } else {
    length = w ? w->dims[0] : x->dims[1];
  }
  if (length < 1 || length > x->dims[1]) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "frame length %lld does not fit the signal's %lld samples",
                      (long long)length, (long long)x->dims[1]);
  }
  int64_t dims[4] = {x->dims[0], 1 + (x->dims[1] - length) / step,
                     c->n->params.u.stft.onesided ? length / 2 + 1 : length, 2};
  infer_set_output(c, 0, x->dtype, 4, dims);
  return INGOT_OK;
}
