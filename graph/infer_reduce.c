/* Shape inference of the reductions and their relatives: Reduce* (axes as an
 * attribute or as a constant input), ArgMax/ArgMin, TopK, CumSum/CumProd,
 * LayerNormalization, RMSNormalization, InstanceNormalization,
 * GroupNormalization, LpNormalization, the two losses
 * (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss), DFT,
 * MeanVarianceNormalization, and Col2Im/MaxUnpool (whose shapes come from
 * constant inputs).
 *
 * Axes, keepdims and the like are node.params (graph/params.c). Canonical
 * form written back for readers of the attributes: a Reduce* node always carries
 * an "axes" attribute with the normalized (non-negative, ascending) axes it
 * reduces; an empty list means "every axis" unless noop_with_empty_axes is 1
 * (exactly the attribute form of the spec), whatever form the model used. */
#include <stdio.h>
#include <string.h>

#include "graph_internal.h"
#include "infer_internal.h"

static bool is_int_dtype(ingot_dtype_t t) {
  return t == INGOT_DTYPE_I64 || t == INGOT_DTYPE_I32 || t == INGOT_DTYPE_I8 || t == INGOT_DTYPE_U8;
}

/* Reads a constant integer tensor (int64 or int32 weight) into out[0..count). */
static ingot_status_t const_ints(const infer_ctx_t* c, const ingot_value_t* v, const char* what, int64_t* out,
                                 uint32_t max_count, uint32_t* out_count) {
  if (v->kind != INGOT_VALUE_WEIGHT || (!v->data && ingot_value_numel(v) > 0)) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED,
                      "input '%s' (%s) must be a constant (computed %s are not supported)", v->name, what, what);
  }
  if (v->dtype != INGOT_DTYPE_I64 && v->dtype != INGOT_DTYPE_I32) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input '%s' (%s) must be int64 or int32, not %s", v->name,
                      what, ingot_graph_dtype_name(v->dtype));
  }
  if (v->rank > 1) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input '%s' (%s) must be a scalar or 1-D", v->name, what);
  }
  int64_t n = ingot_value_numel(v);
  if (n > (int64_t)max_count) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input '%s' (%s) has %lld entries, at most %u allowed",
                      v->name, what, (long long)n, max_count);
  }
  for (int64_t i = 0; i < n; ++i) {
    out[i] = v->dtype == INGOT_DTYPE_I64 ? ((const int64_t*)v->data)[i] : ((const int32_t*)v->data)[i];
  }
  *out_count = (uint32_t)n;
  return INGOT_OK;
}

static bool reduce_allows(ingot_op_t op, ingot_dtype_t t) {
  if (t == INGOT_DTYPE_F32 || t == INGOT_DTYPE_F64) return true;
  if (t == INGOT_DTYPE_BOOL) return op == INGOT_OP_REDUCEMAX || op == INGOT_OP_REDUCEMIN;
  if (!is_int_dtype(t)) return false;
  return op == INGOT_OP_REDUCESUM || op == INGOT_OP_REDUCEMAX || op == INGOT_OP_REDUCEMIN ||
         op == INGOT_OP_REDUCEPROD || op == INGOT_OP_REDUCEL1 || op == INGOT_OP_REDUCESUMSQUARE;
}

ingot_status_t infer_reduce(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  if (!reduce_allows(c->n->op, x->dtype)) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported by this reduction",
                      ingot_graph_dtype_name(x->dtype));
  }
  /* axes, keepdims, noop_with_empty_axes: node.params (graph/params.c) */
  const ingot_reduce_params_t* rp = &c->n->params.u.reduce;
  bool keepdims = rp->keepdims;
  const bool* reduced = rp->reduced;
  bool noop = ingot_node_attr_int(c->n, "noop_with_empty_axes", 0) != 0;
  int64_t norm[INGOT_MAX_RANK];
  uint32_t norm_count = 0;
  for (int32_t i = 0; i < x->rank; ++i) {
    if (reduced[i]) norm[norm_count++] = i;
  }
  /* Canonical: the normalized list; empty only for "nothing reduced" (noop)
   * or a scalar input. */
  ingot_graph_node_set_ints(c->g, c->id, "axes", norm, norm_count);
  if (norm_count == 0 && !noop) {
    ingot_attr_t* a = ingot_graph_node_add_attr(c->g, c->id, "noop_with_empty_axes", INGOT_ATTR_INT);
    a->i = 1; /* a scalar: nothing to reduce, say so explicitly */
  }
  c->n = &c->g->nodes[c->id];
  int64_t dims[INGOT_MAX_RANK];
  int32_t rank = 0;
  for (int32_t i = 0; i < x->rank; ++i) {
    if (!reduced[i]) {
      dims[rank++] = x->dims[i];
    } else if (keepdims) {
      dims[rank++] = 1;
    }
  }
  infer_set_output(c, 0, x->dtype, rank, dims);
  return INGOT_OK;
}

ingot_status_t infer_argmax(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  if (!infer_is_float(x->dtype) && !is_int_dtype(x->dtype)) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported", ingot_graph_dtype_name(x->dtype));
  }
  /* axis, keepdims, select_last_index: node.params (graph/params.c) */
  int64_t axis = c->n->params.u.arg.axis;
  bool keepdims = c->n->params.u.arg.keepdims;
  int64_t dims[INGOT_MAX_RANK];
  int32_t rank = 0;
  for (int32_t i = 0; i < x->rank; ++i) {
    if (i != axis) {
      dims[rank++] = x->dims[i];
    } else if (keepdims) {
      dims[rank++] = 1;
    }
  }
  infer_set_output(c, 0, INGOT_DTYPE_I64, rank, dims);
  return INGOT_OK;
}

/* TopK compares values only (no arithmetic), so uint64 is fine too: both
 * code generators compare it unsigned. */
ingot_status_t infer_topk(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  if (!infer_is_float(x->dtype) && !is_int_dtype(x->dtype) && x->dtype != INGOT_DTYPE_U64) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported", ingot_graph_dtype_name(x->dtype));
  }
  /* axis, K, largest, sorted: node.params (graph/params.c) */
  int64_t axis = c->n->params.u.topk.axis, k = c->n->params.u.topk.k;
  int64_t dims[INGOT_MAX_RANK];
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  dims[axis] = k;
  infer_set_output(c, 0, x->dtype, x->rank, dims);
  infer_set_output(c, 1, INGOT_DTYPE_I64, x->rank, dims);
  return INGOT_OK;
}

/* CumSum and CumProd. */
ingot_status_t infer_cumsum(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  if (x->dtype != INGOT_DTYPE_F32 && x->dtype != INGOT_DTYPE_F64 && x->dtype != INGOT_DTYPE_I32 &&
      x->dtype != INGOT_DTYPE_I64) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported", ingot_graph_dtype_name(x->dtype));
  }
  /* axis, exclusive, reverse: node.params (graph/params.c) */
  infer_copy_output(c, 0, x);
  return INGOT_OK;
}

/* Checks that `p` broadcasts (right-aligned) to dims[from..rank) of x. */
static ingot_status_t check_param(const infer_ctx_t* c, const ingot_value_t* p, const ingot_value_t* x, int64_t from,
                                  const char* what) {
  if (!p) return INGOT_OK;
  if (p->dtype != x->dtype) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "%s has type %s, X has %s", what,
                      ingot_graph_dtype_name(p->dtype), ingot_graph_dtype_name(x->dtype));
  }
  int32_t span = x->rank - (int32_t)from;
  bool ok = true;
  /* Either aligned with the normalized axes, or a full-rank tensor with 1s in front. */
  for (int32_t i = 0; i < p->rank && ok; ++i) {
    int32_t xi = x->rank - p->rank + i;
    if (xi < 0) {
      ok = false;
    } else if (xi < (int32_t)from) {
      ok = p->dims[i] == 1;
    } else {
      ok = p->dims[i] == 1 || p->dims[i] == x->dims[xi];
    }
  }
  (void)span;
  if (!ok) {
    char ps[128], xs[128];
    infer_shape_str(p, ps, sizeof(ps));
    infer_shape_str(x, xs, sizeof(xs));
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "%s of shape %s does not broadcast to the normalized axes of %s",
                      what, ps, xs);
  }
  return INGOT_OK;
}

ingot_status_t infer_layernorm(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  if (!infer_is_float(x->dtype)) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported", ingot_graph_dtype_name(x->dtype));
  }
  int64_t axis = c->n->params.u.norm.axis; /* axis, epsilon, stash_type: node.params (graph/params.c) */
  ingot_status_t s;
  if ((s = check_param(c, infer_input(c, 1), x, axis, "Scale")) || (s = check_param(c, infer_input(c, 2), x, axis, "B"))) {
    return s;
  }
  infer_copy_output(c, 0, x);
  int64_t dims[INGOT_MAX_RANK];
  for (int32_t i = 0; i < x->rank; ++i) dims[i] = i < axis ? x->dims[i] : 1;
  infer_set_output(c, 1, INGOT_DTYPE_F32, x->rank, dims);
  infer_set_output(c, 2, INGOT_DTYPE_F32, x->rank, dims);
  return INGOT_OK;
}

ingot_status_t infer_instancenorm(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  if (!infer_is_float(x->dtype)) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported", ingot_graph_dtype_name(x->dtype));
  }
  if (x->rank < 2) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input must have rank >= 2 (N, C, ...)");
  static const char* const kNames[] = {"", "scale", "B"};
  for (uint32_t i = 1; i < 3; ++i) {
    const ingot_value_t* p = infer_input(c, i);
    if (!p || p->rank != 1 || p->dims[0] != x->dims[1] || p->dtype != x->dtype) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "'%s' must be a %s vector of %lld channels", kNames[i],
                        ingot_graph_dtype_name(x->dtype), (long long)x->dims[1]);
    }
  }
  infer_copy_output(c, 0, x);
  return INGOT_OK;
}

ingot_status_t infer_lpnorm(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  if (!infer_is_float(x->dtype)) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported", ingot_graph_dtype_name(x->dtype));
  }
  /* axis and p: node.params (graph/params.c) */
  infer_copy_output(c, 0, x);
  return INGOT_OK;
}

ingot_status_t infer_lrn(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  if (!infer_is_float(x->dtype)) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported", ingot_graph_dtype_name(x->dtype));
  }
  /* size, alpha, beta, bias and the rank: node.params (graph/params.c) */
  infer_copy_output(c, 0, x);
  return INGOT_OK;
}

ingot_status_t infer_groupnorm(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  if (!infer_is_float(x->dtype)) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported", ingot_graph_dtype_name(x->dtype));
  }
  int64_t groups = c->n->params.u.norm.num_groups; /* num_groups, stash_type: node.params (graph/params.c) */
  static const char* const kNames[] = {"", "scale", "bias"};
  for (uint32_t i = 1; i < 3; ++i) {
    const ingot_value_t* p = infer_input(c, i);
    /* opset 21: one value per channel; opset 18: one per group */
    if (!p || p->rank != 1 || (p->dims[0] != x->dims[1] && p->dims[0] != groups) || p->dtype != x->dtype) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "'%s' must be a %s vector of %lld channels (or %lld groups)",
                        kNames[i], ingot_graph_dtype_name(x->dtype), (long long)x->dims[1], (long long)groups);
    }
  }
  infer_copy_output(c, 0, x);
  return INGOT_OK;
}

/* NegativeLogLikelihoodLoss (input: log-probabilities [N, C, d..]) and
 * SoftmaxCrossEntropyLoss (scores [N, C, d..]; second output log_prob). */
ingot_status_t infer_loss(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  const ingot_value_t* t = infer_input(c, 1);
  const ingot_value_t* w = infer_input(c, 2);
  if (x->dtype != INGOT_DTYPE_F32 && x->dtype != INGOT_DTYPE_F64) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported", ingot_graph_dtype_name(x->dtype));
  }
  if (x->rank < 2) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input must have rank >= 2 (N, C, ...)");
  bool ok = t->rank == x->rank - 1 && (t->dtype == INGOT_DTYPE_I64 || t->dtype == INGOT_DTYPE_I32) &&
            t->dims[0] == x->dims[0];
  for (int32_t i = 1; ok && i < t->rank; ++i) ok = t->dims[i] == x->dims[i + 1];
  if (!ok) {
    char xs[128], ts[128];
    infer_shape_str(x, xs, sizeof(xs));
    infer_shape_str(t, ts, sizeof(ts));
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "target %s must be int32/int64 of the input's shape %s without C",
                      ts, xs);
  }
  if (w && (w->rank != 1 || w->dims[0] != x->dims[1] || w->dtype != x->dtype)) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "weight must be a vector of %lld", (long long)x->dims[1]);
  }
  if (c->n->params.u.loss.reduction == INGOT_LOSS_NONE) { /* graph/params.c */
    infer_set_output(c, 0, x->dtype, t->rank, t->dims);
  } else {
    infer_set_output(c, 0, x->dtype, 0, NULL);
  }
  infer_copy_output(c, 1, x); /* SoftmaxCrossEntropyLoss log_prob */
  return INGOT_OK;
}

/* DFT (opset 17..20): the signal axis `axis` (attribute before opset 20, a
 * constant input from 20 on), dft_length a constant input when present. The
 * last axis holds 1 (real) or 2 (real, imaginary) components. Canonical for
 * the lowering: attributes "axis" (normalized) and "dft_length". */
ingot_status_t infer_dft(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  const ingot_value_t* len_in = infer_input(c, 1);
  const ingot_value_t* axis_in = infer_input(c, 2);
  if (x->dtype != INGOT_DTYPE_F32 && x->dtype != INGOT_DTYPE_F64) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported", ingot_graph_dtype_name(x->dtype));
  }
  if (x->rank < 2 || (x->dims[x->rank - 1] != 1 && x->dims[x->rank - 1] != 2)) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "the last axis must hold 1 or 2 components");
  }
  int64_t raw_axis;
  ingot_status_t s;
  if (axis_in) {
    int64_t v[1];
    uint32_t n = 0;
    if ((s = const_ints(c, axis_in, "axis", v, 1, &n))) return s;
    if (n != 1) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "axis must hold one value");
    raw_axis = v[0];
  } else {
    raw_axis = ingot_node_attr_int(c->n, "axis", c->g->opset >= 20 ? -2 : 1);
  }
  int64_t axis = 0;
  if ((s = infer_norm_axis(c, raw_axis, x->rank, false, &axis))) return s;
  if (axis == x->rank - 1) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "axis must not be the component axis");
  bool inverse = ingot_node_attr_int(c->n, "inverse", 0) != 0, onesided = ingot_node_attr_int(c->n, "onesided", 0) != 0;
  int64_t n_fft;
  if (len_in) {
    int64_t v[1];
    uint32_t n = 0;
    if ((s = const_ints(c, len_in, "dft_length", v, 1, &n))) return s;
    if (n != 1 || v[0] < 1) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "dft_length must be one positive value");
    n_fft = v[0];
  } else {
    n_fft = inverse && onesided ? 2 * (x->dims[axis] - 1) : x->dims[axis];
  }
  if (n_fft < 1) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "empty transform");
  if (onesided && !inverse && x->dims[x->rank - 1] != 1) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "onesided needs a real input (last axis 1)");
  }
  int64_t dims[INGOT_MAX_RANK];
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  dims[axis] = inverse ? n_fft : onesided ? n_fft / 2 + 1 : n_fft;
  dims[x->rank - 1] = inverse && onesided ? 1 : 2;
  ingot_attr_t* a = ingot_graph_node_add_attr(c->g, c->id, "axis", INGOT_ATTR_INT);
  a->i = axis;
  a = ingot_graph_node_add_attr(c->g, c->id, "dft_length", INGOT_ATTR_INT);
  a->i = n_fft;
  c->n = &c->g->nodes[c->id];
  infer_set_output(c, 0, x->dtype, x->rank, dims);
  return INGOT_OK;
}

ingot_status_t infer_mvn(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  if (x->dtype != INGOT_DTYPE_F32 && x->dtype != INGOT_DTYPE_F64) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported", ingot_graph_dtype_name(x->dtype));
  }
  uint32_t n = 0;
  const int64_t* axes = ingot_node_attr_ints(c->n, "axes", &n);
  static const int64_t kDefault[3] = {0, 2, 3};
  if (!axes) axes = kDefault, n = 3;
  bool seen[INGOT_MAX_RANK] = {false};
  for (uint32_t i = 0; i < n; ++i) {
    int64_t a = 0;
    ingot_status_t s = infer_norm_axis(c, axes[i], x->rank, false, &a);
    if (s) return s;
    if (seen[a]) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "axis %lld appears twice", (long long)axes[i]);
    seen[a] = true;
  }
  infer_copy_output(c, 0, x);
  return INGOT_OK;
}

/* Col2Im (opset 18): image_shape and block_shape are constant inputs, copied
 * into attributes of the same names for the lowering. */
ingot_status_t infer_col2im(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  if (x->dtype != INGOT_DTYPE_F32 && x->dtype != INGOT_DTYPE_F64) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported", ingot_graph_dtype_name(x->dtype));
  }
  if (x->rank != 3) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input must be [N, C*prod(block), L]");
  int64_t img[INGOT_MAX_RANK], blk[INGOT_MAX_RANK];
  uint32_t ni = 0, nb = 0;
  ingot_status_t s;
  if ((s = const_ints(c, infer_input(c, 1), "image_shape", img, INGOT_MAX_RANK - 2, &ni)) ||
      (s = const_ints(c, infer_input(c, 2), "block_shape", blk, INGOT_MAX_RANK - 2, &nb))) {
    return s;
  }
  if (ni == 0 || ni != nb) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "image_shape and block_shape differ in length");
  int64_t st[INGOT_MAX_RANK], dil[INGOT_MAX_RANK], pads[2 * INGOT_MAX_RANK];
  uint32_t cnt;
  const int64_t* v;
  for (uint32_t i = 0; i < ni; ++i) st[i] = dil[i] = 1, pads[i] = pads[ni + i] = 0;
  if ((v = ingot_node_attr_ints(c->n, "strides", &cnt)) && cnt) {
    if (cnt != ni) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "strides has %u entries", cnt);
    memcpy(st, v, sizeof(int64_t) * ni);
  }
  if ((v = ingot_node_attr_ints(c->n, "dilations", &cnt)) && cnt) {
    if (cnt != ni) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "dilations has %u entries", cnt);
    memcpy(dil, v, sizeof(int64_t) * ni);
  }
  if ((v = ingot_node_attr_ints(c->n, "pads", &cnt)) && cnt) {
    if (cnt != 2 * ni) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "pads has %u entries", cnt);
    memcpy(pads, v, sizeof(int64_t) * 2 * ni);
  }
  int64_t kprod = 1, lprod = 1;
  for (uint32_t i = 0; i < ni; ++i) {
    if (img[i] < 1 || blk[i] < 1 || st[i] < 1 || dil[i] < 1 || pads[i] < 0 || pads[ni + i] < 0) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "image/block/strides/dilations/pads out of range");
    }
    int64_t nb_i = (img[i] + pads[i] + pads[ni + i] - dil[i] * (blk[i] - 1) - 1) / st[i] + 1;
    if (nb_i < 1) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "no sliding block fits axis %u", i);
    kprod *= blk[i];
    lprod *= nb_i;
  }
  if (x->dims[1] % kprod != 0 || x->dims[2] != lprod) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input [%lld, %lld, %lld] does not fit %lld-element blocks over %lld positions",
                      (long long)x->dims[0], (long long)x->dims[1], (long long)x->dims[2], (long long)kprod, (long long)lprod);
  }
  ingot_graph_node_set_ints(c->g, c->id, "image_shape", img, ni);
  ingot_graph_node_set_ints(c->g, c->id, "block_shape", blk, ni);
  c->n = &c->g->nodes[c->id];
  int64_t dims[INGOT_MAX_RANK];
  dims[0] = x->dims[0];
  dims[1] = x->dims[1] / kprod;
  for (uint32_t i = 0; i < ni; ++i) dims[2 + i] = img[i];
  infer_set_output(c, 0, x->dtype, (int32_t)ni + 2, dims);
  return INGOT_OK;
}

/* MaxUnpool: output_shape (a constant input) or the pooling window's inverse. */
ingot_status_t infer_maxunpool(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  const ingot_value_t* ind = infer_input(c, 1);
  const ingot_value_t* os = infer_input(c, 2);
  if (x->dtype != INGOT_DTYPE_F32 && x->dtype != INGOT_DTYPE_F64) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported", ingot_graph_dtype_name(x->dtype));
  }
  if (x->rank < 3 || ind->rank != x->rank || ind->dtype != INGOT_DTYPE_I64) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "X must have rank >= 3 and I be int64 of the same shape");
  }
  for (int32_t i = 0; i < x->rank; ++i) {
    if (ind->dims[i] != x->dims[i]) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "I differs in shape from X");
  }
  uint32_t sp = (uint32_t)x->rank - 2, cnt = 0;
  int64_t dims[INGOT_MAX_RANK];
  dims[0] = x->dims[0];
  dims[1] = x->dims[1];
  if (os) {
    int64_t v[INGOT_MAX_RANK];
    ingot_status_t s = const_ints(c, os, "output_shape", v, INGOT_MAX_RANK, &cnt);
    if (s) return s;
    if (cnt != (uint32_t)x->rank || v[0] != x->dims[0] || v[1] != x->dims[1]) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "output_shape must have rank %d and keep N and C", x->rank);
    }
    for (uint32_t i = 0; i < sp; ++i) dims[2 + i] = v[2 + i];
  } else {
    const int64_t* k = ingot_node_attr_ints(c->n, "kernel_shape", &cnt);
    if (!k || cnt != sp) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "kernel_shape must have %u entries", sp);
    const int64_t* st = ingot_node_attr_ints(c->n, "strides", &cnt);
    if (st && cnt != sp) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "strides must have %u entries", sp);
    const int64_t* pads = ingot_node_attr_ints(c->n, "pads", &cnt);
    if (pads && cnt != 2 * sp) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "pads must have %u entries", 2 * sp);
    for (uint32_t i = 0; i < sp; ++i) {
      dims[2 + i] = (x->dims[2 + i] - 1) * (st ? st[i] : 1) + k[i] - (pads ? pads[i] + pads[sp + i] : 0);
      if (dims[2 + i] < 1) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "empty output");
    }
  }
  infer_set_output(c, 0, x->dtype, x->rank, dims);
  return INGOT_OK;
}
