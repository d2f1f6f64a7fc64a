/* LayerNormalization, RMSNormalization, InstanceNormalization and
 * GroupNormalization: one OTHER stage, a spatial loop over the rows to
 * normalize (contiguous runs of L elements), each row in three passes (mean,
 * variance of the centered values, then the scaled output):
 *
 *   for row:                                       (spatial)
 *     local mean = sum(x[row, j]) / L
 *     local var  = sum((x[row, j] - mean)^2) / L
 *     local inv  = 1 / sqrt(var + epsilon)
 *     for j: y[row, j] = (x[row, j] - mean) * inv * scale[..] + bias[..]   (vectorizable)
 *
 * The sums keep NORM_CHAINS partial results (lower_row_reduce).
 *
 * LayerNormalization: a row is everything from `axis` on (L = product of
 * those dims); Scale and B broadcast to those dims; the optional outputs Mean
 * and InvStdDev get mean and inv per row. RMSNormalization: the same rows,
 * no centering (mean = 0, var = mean of squares). InstanceNormalization: a
 * row is one (n, c) over the spatial dims; scale[c], B[c].
 * GroupNormalization: a row is one (n, group) over its C/G channels and the
 * spatial dims; scale and B per channel (opset 21) or per group (opset 18).
 *
 * LpNormalization (p = 1, 2) along one axis: y = x / ||row||_p (0 for a zero
 * row), one OTHER stage over the rows of that axis.
 *
 * BatchNormalization in training mode (lower_batchnorm_training): a row is
 * one channel, over the batch and the spatial dims (N runs of S elements),
 * its statistics summed in float64. */
#include <math.h>
#include <string.h>

#include "lower_internal.h"

/* Index into a parameter buffer (aligned right with x's dims) for element j of
 * a row that covers x's dims [axis, rank). */
static ingot_ir_expr_t* param_index(lower_ctx_t* ctx, uint32_t buffer, const ingot_value_t* xv, int64_t axis,
                                    ingot_ir_expr_t* j) {
  ingot_ir_func_t* f = ctx->f;
  const ingot_ir_buffer_t* b = &f->buffers[buffer];
  ingot_ir_expr_t* idx = ingot_ir_int(f, 0);
  int64_t xstride = 1, pstride = 1;
  for (int32_t i = xv->rank - 1; i >= (int32_t)axis; --i) {
    int32_t pi = b->rank - (xv->rank - i);
    int64_t pd = pi >= 0 ? b->dims[pi] : 1;
    if (pd != 1) {
      ingot_ir_expr_t* q = xstride == 1 ? j : ingot_ir_binary(f, INGOT_IR_DIV, j, ingot_ir_int(f, xstride));
      if (i > axis) q = ingot_ir_binary(f, INGOT_IR_MOD, q, ingot_ir_int(f, xv->dims[i]));
      idx = ingot_ir_add(f, idx, ingot_ir_mul(f, q, ingot_ir_int(f, pstride)));
    }
    xstride *= xv->dims[i];
    pstride *= pd;
  }
  return idx;
}

typedef struct norm_args_t {
  uint32_t bx, by, bscale, bbias, bmean, binv; /* UINT32_MAX when absent */
  int64_t rows, len;
  double eps;
  const ingot_value_t* xv;
  int64_t axis;       /* layer norm: first normalized axis */
  int64_t channels;   /* instance norm: C (params by row % C); 0 for layer norm */
  int64_t groups;     /* group norm: G (params by channel of (row, j)); 0 otherwise */
  int64_t group_len;  /* group norm: spatial size S (channel = (row % G) * C/G + j / S) */
  bool params_per_group; /* group norm, opset 18: params by row % G */
  bool rms;           /* RMSNormalization: no centering */
} norm_args_t;

/* Partial sums a row's mean and variance keep (lower_row_reduce): enough
 * independent adds to cover an add's latency on any of today's targets. */
#define NORM_CHAINS 8

/* A term of a row's sums: x[row * len + j], or its square after subtracting
 * `center` (NULL: none). */
typedef struct norm_term_t {
  lower_row_term_t base;
  ingot_ir_func_t* f;
  uint32_t bx;
  ingot_ir_expr_t* row_base;
  bool square;
  ingot_ir_expr_t* center;
} norm_term_t;

static ingot_ir_expr_t* norm_term_at(const lower_row_term_t* base, ingot_ir_expr_t* j) {
  const norm_term_t* t = (const norm_term_t*)base;
  ingot_ir_expr_t* v = ingot_ir_load(t->f, t->bx, ingot_ir_add(t->f, t->row_base, j));
  if (!t->square) return v;
  if (t->center) v = ingot_ir_binary(t->f, INGOT_IR_SUB, v, t->center);
  return ingot_ir_mul(t->f, v, v);
}

static void emit_norm(lower_ctx_t* ctx, const norm_args_t* a) {
  ingot_ir_func_t* f = ctx->f;
  ingot_dtype_t dt = a->xv->dtype;
  uint32_t row = lower_add_var(ctx, "row", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t j3 = lower_add_var(ctx, "j", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t mean = lower_add_var(ctx, "mean", INGOT_IR_VAR_LOCAL, dt);
  uint32_t var = lower_add_var(ctx, "var", INGOT_IR_VAR_LOCAL, dt);
  uint32_t inv = lower_add_var(ctx, "inv", INGOT_IR_VAR_LOCAL, dt);
  ingot_ir_expr_t* r = ingot_ir_var(f, row);
  ingot_ir_expr_t* base = ingot_ir_mul(f, r, ingot_ir_int(f, a->len));
  ingot_ir_expr_t* at3 = ingot_ir_add(f, base, ingot_ir_var(f, j3));
  ingot_ir_expr_t* x3 = ingot_ir_load(f, a->bx, at3);
  ingot_ir_expr_t* vmean = ingot_ir_var(f, mean);
  ingot_ir_expr_t* vvar = ingot_ir_var(f, var);
  ingot_ir_expr_t* len = ingot_ir_float(f, dt, (double)a->len);
  ingot_ir_expr_t* yv =
      ingot_ir_mul(f, a->rms ? x3 : ingot_ir_binary(f, INGOT_IR_SUB, x3, vmean), ingot_ir_var(f, inv));
  ingot_ir_expr_t* pidx = NULL;
  if (a->channels) pidx = ingot_ir_binary(f, INGOT_IR_MOD, r, ingot_ir_int(f, a->channels));
  if (a->groups) {
    ingot_ir_expr_t* g = ingot_ir_binary(f, INGOT_IR_MOD, r, ingot_ir_int(f, a->groups));
    pidx = a->params_per_group
               ? g
               : ingot_ir_add(f, ingot_ir_mul(f, g, ingot_ir_int(f, a->len / a->group_len)),
                              ingot_ir_binary(f, INGOT_IR_DIV, ingot_ir_var(f, j3), ingot_ir_int(f, a->group_len)));
  }
  if (a->bscale != UINT32_MAX) {
    ingot_ir_expr_t* si = pidx ? pidx : param_index(ctx, a->bscale, a->xv, a->axis, ingot_ir_var(f, j3));
    yv = ingot_ir_mul(f, yv, ingot_ir_load(f, a->bscale, si));
  }
  if (a->bbias != UINT32_MAX) {
    ingot_ir_expr_t* bi = pidx ? pidx : param_index(ctx, a->bbias, a->xv, a->axis, ingot_ir_var(f, j3));
    yv = ingot_ir_add(f, yv, ingot_ir_load(f, a->bbias, bi));
  }
  ingot_ir_stmt_t* body[2 * (LOWER_ROW_CHAINS_MAX + 3) + 8];
  uint32_t n = 0;
  if (a->rms) {
    body[n++] = ingot_ir_local(f, mean, ingot_ir_float(f, dt, 0.0));
  } else {
    norm_term_t sum = {{norm_term_at, a->len}, f, a->bx, base, false, NULL};
    lower_row_reduce(ctx, &sum.base, LOWER_REDUCE_SUM, mean, dt, body, &n, NORM_CHAINS);
    body[n++] = ingot_ir_assign(f, mean, ingot_ir_binary(f, INGOT_IR_DIV, vmean, len));
  }
  norm_term_t squares = {{norm_term_at, a->len}, f, a->bx, base, true, a->rms ? NULL : vmean};
  lower_row_reduce(ctx, &squares.base, LOWER_REDUCE_SUM, var, dt, body, &n, NORM_CHAINS);
  body[n++] = ingot_ir_local(
      f, inv,
      ingot_ir_binary(f, INGOT_IR_DIV, ingot_ir_float(f, dt, 1.0),
                      ingot_ir_unary(f, INGOT_IR_SQRT,
                                     ingot_ir_add(f, ingot_ir_binary(f, INGOT_IR_DIV, vvar, len),
                                                  ingot_ir_float(f, dt, a->eps)))));
  body[n++] = ingot_ir_for(f, j3, a->len, ingot_ir_store(f, a->by, at3, yv));
  if (a->bmean != UINT32_MAX) {
    ingot_ir_expr_t* v = vmean;
    if (f->buffers[a->bmean].dtype != dt) v = ingot_ir_cast(f, f->buffers[a->bmean].dtype, v);
    body[n++] = ingot_ir_store(f, a->bmean, r, v);
  }
  if (a->binv != UINT32_MAX) {
    ingot_ir_expr_t* v = ingot_ir_var(f, inv);
    if (f->buffers[a->binv].dtype != dt) v = ingot_ir_cast(f, f->buffers[a->binv].dtype, v);
    body[n++] = ingot_ir_store(f, a->binv, r, v);
  }
  lower_emit_other(ctx, ingot_ir_for(f, row, a->rows, ingot_ir_block(f, body, n)));
  /* The output pass's elements are independent: the template vectorizes it. */
  lower_mark_vector_loop(ctx, j3);
  ctx->op_class = INGOT_OP_CLASS_ROW;
}

static ingot_status_t check_float(const lower_ctx_t* ctx, uint32_t value) {
  const ingot_value_t* v = lower_value(ctx, value);
  if (v->dtype != INGOT_DTYPE_F32 && v->dtype != INGOT_DTYPE_F64) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "dtype %s of '%s' is not supported (float32, float64)",
                      ingot_dtype_name(v->dtype), v->name);
  }
  return INGOT_OK;
}

ingot_status_t lower_layernorm(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  uint32_t x = lower_input(ctx, 0), sc = lower_input(ctx, 1), b = lower_input(ctx, 2);
  uint32_t y = node->output_count > 0 ? node->outputs[0] : INGOT_NO_VALUE;
  uint32_t mo = node->output_count > 1 ? node->outputs[1] : INGOT_NO_VALUE;
  uint32_t io = node->output_count > 2 ? node->outputs[2] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx))) return s;
  if ((s = lower_check_value(ctx, x, false)) || (s = lower_check_value(ctx, y, false)) || (s = check_float(ctx, x))) {
    return s;
  }
  uint32_t extra[4] = {sc, b, mo, io};
  for (uint32_t i = 0; i < 4; ++i) {
    if (extra[i] != INGOT_NO_VALUE && ((s = lower_check_value(ctx, extra[i], false)) || (s = check_float(ctx, extra[i])))) {
      return s;
    }
  }
  const ingot_value_t* xv = lower_value(ctx, x);
  int64_t axis = ctx->params->u.norm.axis; /* axis, epsilon: node.params (graph/params.c) */
  norm_args_t a;
  memset(&a, 0, sizeof(a));
  a.rows = 1;
  a.len = 1;
  for (int32_t i = 0; i < xv->rank; ++i) {
    if (i < axis) {
      a.rows *= xv->dims[i];
    } else {
      a.len *= xv->dims[i];
    }
  }
  uint32_t params[2] = {sc, b};
  for (uint32_t k = 0; k < 2; ++k) {
    if (params[k] == INGOT_NO_VALUE) continue;
    const ingot_value_t* p = lower_value(ctx, params[k]);
    bool ok = p->rank <= xv->rank && p->dtype == xv->dtype;
    for (int32_t i = 0; ok && i < p->rank; ++i) {
      int32_t xi = xv->rank - p->rank + i;
      ok = p->dims[i] == 1 || (xi >= axis && p->dims[i] == xv->dims[xi]);
    }
    if (!ok) {
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "'%s' (%s) does not broadcast to the normalized axes of %s",
                        p->name, lower_shape_str(ctx, params[k]), lower_shape_str(ctx, x));
    }
  }
  a.xv = xv;
  a.axis = axis;
  a.rms = node->op == INGOT_OP_RMSNORMALIZATION;
  a.eps = ctx->params->u.norm.epsilon;
  a.bx = lower_add_input(ctx, x, "x");
  a.bscale = sc != INGOT_NO_VALUE ? lower_add_input(ctx, sc, "scale") : UINT32_MAX;
  a.bbias = b != INGOT_NO_VALUE ? lower_add_input(ctx, b, "bias") : UINT32_MAX;
  a.by = lower_add_output(ctx, y, "y");
  a.bmean = mo != INGOT_NO_VALUE ? lower_add_output(ctx, mo, "mean_out") : UINT32_MAX;
  a.binv = io != INGOT_NO_VALUE ? lower_add_output(ctx, io, "inv_std_out") : UINT32_MAX;
  emit_norm(ctx, &a);
  ctx->workload = ingot_arena_printf(ctx->arena, "%s %s rows%lld len%lld scale=%s bias=%s",
                                     a.rms ? "rmsnorm" : "layernorm", ingot_dtype_name(xv->dtype), (long long)a.rows, (long long)a.len,
                                     sc != INGOT_NO_VALUE ? lower_shape_str(ctx, sc) : "none",
                                     b != INGOT_NO_VALUE ? lower_shape_str(ctx, b) : "none");
  return INGOT_OK;
}

ingot_status_t lower_instancenorm(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  uint32_t x = lower_input(ctx, 0), sc = lower_input(ctx, 1), b = lower_input(ctx, 2);
  uint32_t y = node->output_count > 0 ? node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx))) return s;
  if ((s = lower_check_value(ctx, x, false)) || (s = lower_check_value(ctx, y, false)) ||
      (s = lower_check_value(ctx, sc, false)) || (s = lower_check_value(ctx, b, false)) || (s = check_float(ctx, x))) {
    return s;
  }
  const ingot_value_t* xv = lower_value(ctx, x);
  if (xv->rank < 2) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "input must have rank >= 2");
  int64_t c = xv->dims[1];
  const ingot_value_t* sv = lower_value(ctx, sc);
  const ingot_value_t* bv = lower_value(ctx, b);
  if (sv->rank != 1 || sv->dims[0] != c || bv->rank != 1 || bv->dims[0] != c || sv->dtype != xv->dtype ||
      bv->dtype != xv->dtype) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "scale and B must be vectors of %lld channels", (long long)c);
  }
  norm_args_t a;
  memset(&a, 0, sizeof(a));
  a.rows = xv->dims[0] * c;
  a.len = 1;
  for (int32_t i = 2; i < xv->rank; ++i) a.len *= xv->dims[i];
  a.xv = xv;
  a.axis = 2;
  a.channels = c;
  a.eps = ctx->params->u.norm.epsilon;
  a.bx = lower_add_input(ctx, x, "x");
  a.bscale = lower_add_input(ctx, sc, "scale");
  a.bbias = lower_add_input(ctx, b, "bias");
  a.by = lower_add_output(ctx, y, "y");
  a.bmean = a.binv = UINT32_MAX;
  emit_norm(ctx, &a);
  ctx->workload = ingot_arena_printf(ctx->arena, "instancenorm %s rows%lld len%lld", ingot_dtype_name(xv->dtype),
                                     (long long)a.rows, (long long)a.len);
  return INGOT_OK;
}

ingot_status_t lower_groupnorm(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  uint32_t x = lower_input(ctx, 0), sc = lower_input(ctx, 1), b = lower_input(ctx, 2);
  uint32_t y = node->output_count > 0 ? node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx))) return s;
  if ((s = lower_check_value(ctx, x, false)) || (s = lower_check_value(ctx, y, false)) ||
      (s = lower_check_value(ctx, sc, false)) || (s = lower_check_value(ctx, b, false)) || (s = check_float(ctx, x))) {
    return s;
  }
  const ingot_value_t* xv = lower_value(ctx, x);
  int64_t c = xv->rank >= 2 ? xv->dims[1] : 0;
  int64_t groups = ctx->params->u.norm.num_groups; /* num_groups, epsilon: node.params (graph/params.c) */
  if (xv->rank < 2 || groups < 1 || c % groups != 0) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "num_groups %lld does not fit input %s", (long long)groups,
                      lower_shape_str(ctx, x));
  }
  const ingot_value_t* sv = lower_value(ctx, sc);
  const ingot_value_t* bv = lower_value(ctx, b);
  bool per_channel = sv->rank == 1 && sv->dims[0] == c && bv->rank == 1 && bv->dims[0] == c;
  bool per_group = sv->rank == 1 && sv->dims[0] == groups && bv->rank == 1 && bv->dims[0] == groups;
  if ((!per_channel && !per_group) || sv->dtype != xv->dtype || bv->dtype != xv->dtype) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "scale and bias must be vectors of %lld channels or %lld groups",
                      (long long)c, (long long)groups);
  }
  norm_args_t a;
  memset(&a, 0, sizeof(a));
  a.group_len = 1;
  for (int32_t i = 2; i < xv->rank; ++i) a.group_len *= xv->dims[i];
  a.rows = xv->dims[0] * groups;
  a.len = (c / groups) * a.group_len;
  a.xv = xv;
  a.axis = 1;
  a.groups = groups;
  a.params_per_group = !per_channel;
  a.eps = ctx->params->u.norm.epsilon;
  a.bx = lower_add_input(ctx, x, "x");
  a.bscale = lower_add_input(ctx, sc, "scale");
  a.bbias = lower_add_input(ctx, b, "bias");
  a.by = lower_add_output(ctx, y, "y");
  a.bmean = a.binv = UINT32_MAX;
  emit_norm(ctx, &a);
  ctx->workload = ingot_arena_printf(ctx->arena, "groupnorm %s rows%lld len%lld groups%lld per_%s",
                                     ingot_dtype_name(xv->dtype), (long long)a.rows, (long long)a.len, (long long)groups,
                                     per_channel ? "channel" : "group");
  return INGOT_OK;
}

/* A term of a channel's sums: x[n, c, s] as float64 for j = n * S + s,
 * squared after subtracting `center` (float64) when that is not NULL. */
typedef struct bn_term_t {
  lower_row_term_t base;
  ingot_ir_func_t* f;
  uint32_t bx;
  ingot_ir_expr_t* channel_base; /* c * S */
  int64_t spatial, channel_stride; /* S, C * S */
  ingot_ir_expr_t* center;
} bn_term_t;

static ingot_ir_expr_t* bn_term_at(const lower_row_term_t* base, ingot_ir_expr_t* j) {
  const bn_term_t* t = (const bn_term_t*)base;
  ingot_ir_func_t* f = t->f;
  ingot_ir_expr_t* at;
  if (t->spatial == 1) {
    at = ingot_ir_add(f, ingot_ir_mul(f, j, ingot_ir_int(f, t->channel_stride)), t->channel_base);
  } else {
    ingot_ir_expr_t* n = ingot_ir_binary(f, INGOT_IR_DIV, j, ingot_ir_int(f, t->spatial));
    ingot_ir_expr_t* s = ingot_ir_binary(f, INGOT_IR_MOD, j, ingot_ir_int(f, t->spatial));
    at = ingot_ir_add(f, ingot_ir_add(f, ingot_ir_mul(f, n, ingot_ir_int(f, t->channel_stride)), t->channel_base), s);
  }
  ingot_ir_expr_t* v = ingot_ir_cast(f, INGOT_DTYPE_F64, ingot_ir_load(f, t->bx, at));
  if (!t->center) return v;
  v = ingot_ir_binary(f, INGOT_IR_SUB, v, t->center);
  return ingot_ir_mul(f, v, v);
}

/* BatchNormalization, training_mode=1 (opset 14, 15), as ONNX's reference
 * (_batchnorm_training_mode): per channel c, over N and the spatial dims,
 *
 *   for c:                                                     (spatial)
 *     local mean = sum(x[., c, .]) / (N S)                     (float64)
 *     local var  = sum((x[., c, .] - mean)^2) / (N S)          (biased)
 *     local mul  = scale[c] / sqrt(var + epsilon)              (x's dtype)
 *     for n: for s: y[n, c, s] = (x[n, c, s] - mean) * mul + B[c]
 *     running_mean[c] = input_mean[c] * momentum + mean * (1 - momentum)
 *     running_var[c]  = input_var[c] * momentum + var * (1 - momentum)
 *
 * The running statistics are optional outputs, in their inputs' dtypes; the
 * variance that updates running_var is the biased one, as in the reference
 * and the operator's documentation. */
ingot_status_t lower_batchnorm_training(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  uint32_t x = lower_input(ctx, 0);
  uint32_t y = node->output_count > 0 ? node->outputs[0] : INGOT_NO_VALUE;
  uint32_t rm = node->output_count > 1 ? node->outputs[1] : INGOT_NO_VALUE;
  uint32_t rv = node->output_count > 2 ? node->outputs[2] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx))) return s;
  if ((s = lower_check_value(ctx, x, false)) || (s = lower_check_value(ctx, y, false)) || (s = check_float(ctx, x)) ||
      (s = check_float(ctx, y))) {
    return s;
  }
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  if (xv->rank < 2) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "input must have rank >= 2");
  if (yv->dtype != xv->dtype || yv->rank != xv->rank || ingot_value_numel(xv) != ingot_value_numel(yv)) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "output differs from the input in shape or dtype");
  }
  int64_t channels = xv->dims[1], batch = xv->dims[0], spatial = 1;
  for (int32_t i = 2; i < xv->rank; ++i) spatial *= xv->dims[i];
  static const char* const kNames[6] = {"scale", "bias", "mean", "var", "running_mean", "running_var"};
  uint32_t vec[6] = {lower_input(ctx, 1), lower_input(ctx, 2), lower_input(ctx, 3), lower_input(ctx, 4), rm, rv};
  for (uint32_t i = 0; i < 6; ++i) {
    if (vec[i] == INGOT_NO_VALUE) continue;
    if ((s = lower_check_value(ctx, vec[i], false)) || (s = check_float(ctx, vec[i]))) return s;
    const ingot_value_t* pv = lower_value(ctx, vec[i]);
    if (pv->rank != 1 || pv->dims[0] != channels) {
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "%s '%s' must have shape [%lld]", kNames[i], pv->name,
                        (long long)channels);
    }
  }
  if ((rm != INGOT_NO_VALUE && lower_value(ctx, rm)->dtype != lower_value(ctx, vec[2])->dtype) ||
      (rv != INGOT_NO_VALUE && lower_value(ctx, rv)->dtype != lower_value(ctx, vec[3])->dtype)) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT,
                      "running_mean and running_var take the dtypes of mean and var");
  }
  double eps = ctx->params->u.norm.epsilon, momentum = ctx->params->u.norm.momentum;
  ingot_dtype_t dt = xv->dtype;
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t bp[4];
  for (uint32_t i = 0; i < 4; ++i) bp[i] = lower_add_input(ctx, vec[i], kNames[i]);
  uint32_t by = lower_add_output(ctx, y, "y");
  uint32_t brm = rm != INGOT_NO_VALUE ? lower_add_output(ctx, rm, kNames[4]) : UINT32_MAX;
  uint32_t brv = rv != INGOT_NO_VALUE ? lower_add_output(ctx, rv, kNames[5]) : UINT32_MAX;

  ingot_ir_func_t* f = ctx->f;
  uint32_t c = lower_add_var(ctx, "c", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t n = lower_add_var(ctx, "n", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t sp = lower_add_var(ctx, "s", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t mean = lower_add_var(ctx, "mean", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F64);
  uint32_t var = lower_add_var(ctx, "var", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F64);
  uint32_t mean_t = lower_add_var(ctx, "mean_t", INGOT_IR_VAR_LOCAL, dt);
  uint32_t mul = lower_add_var(ctx, "mul", INGOT_IR_VAR_LOCAL, dt);
  ingot_ir_expr_t* cv = ingot_ir_var(f, c);
  ingot_ir_expr_t* count = ingot_ir_float(f, INGOT_DTYPE_F64, (double)(batch * spatial));
#define LOAD64(b) ingot_ir_cast(f, INGOT_DTYPE_F64, ingot_ir_load(f, (b), cv))
  ingot_ir_stmt_t* body[2 * (LOWER_ROW_CHAINS_MAX + 3) + 8];
  uint32_t nb = 0;
  bn_term_t term = {{bn_term_at, batch * spatial}, f, bx, ingot_ir_mul(f, cv, ingot_ir_int(f, spatial)), spatial,
                    channels * spatial, NULL};
  lower_row_reduce(ctx, &term.base, LOWER_REDUCE_SUM, mean, INGOT_DTYPE_F64, body, &nb, NORM_CHAINS);
  body[nb++] = ingot_ir_assign(f, mean, ingot_ir_binary(f, INGOT_IR_DIV, ingot_ir_var(f, mean), count));
  term.center = ingot_ir_var(f, mean);
  lower_row_reduce(ctx, &term.base, LOWER_REDUCE_SUM, var, INGOT_DTYPE_F64, body, &nb, NORM_CHAINS);
  body[nb++] = ingot_ir_assign(f, var, ingot_ir_binary(f, INGOT_IR_DIV, ingot_ir_var(f, var), count));
  body[nb++] = ingot_ir_local(f, mean_t, ingot_ir_cast(f, dt, ingot_ir_var(f, mean)));
  ingot_ir_expr_t* root = ingot_ir_unary(
      f, INGOT_IR_SQRT, ingot_ir_add(f, ingot_ir_var(f, var), ingot_ir_float(f, INGOT_DTYPE_F64, eps)));
  body[nb++] = ingot_ir_local(f, mul, ingot_ir_cast(f, dt, ingot_ir_binary(f, INGOT_IR_DIV, LOAD64(bp[0]), root)));
  ingot_ir_expr_t* at = ingot_ir_add(
      f, ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_mul(f, ingot_ir_var(f, n), ingot_ir_int(f, channels)), cv),
                      ingot_ir_int(f, spatial)),
      ingot_ir_var(f, sp));
  ingot_ir_expr_t* bias = ingot_ir_cast(f, dt, ingot_ir_load(f, bp[1], cv));
  ingot_ir_expr_t* yval = ingot_ir_add(
      f, ingot_ir_mul(f, ingot_ir_binary(f, INGOT_IR_SUB, ingot_ir_load(f, bx, at), ingot_ir_var(f, mean_t)),
                      ingot_ir_var(f, mul)),
      bias);
  body[nb++] = ingot_ir_for(f, n, batch, ingot_ir_for(f, sp, spatial, ingot_ir_store(f, by, at, yval)));
  ingot_ir_expr_t* keep = ingot_ir_float(f, INGOT_DTYPE_F64, momentum);
  ingot_ir_expr_t* take = ingot_ir_float(f, INGOT_DTYPE_F64, 1.0 - momentum);
  uint32_t run_out[2] = {brm, brv}, run_in[2] = {bp[2], bp[3]}, batch_stat[2] = {mean, var};
  for (uint32_t i = 0; i < 2; ++i) {
    if (run_out[i] == UINT32_MAX) continue;
    ingot_ir_expr_t* v = ingot_ir_add(f, ingot_ir_mul(f, LOAD64(run_in[i]), keep),
                                      ingot_ir_mul(f, ingot_ir_var(f, batch_stat[i]), take));
    body[nb++] = ingot_ir_store(f, run_out[i], cv, ingot_ir_cast(f, f->buffers[run_out[i]].dtype, v));
  }
#undef LOAD64
  lower_emit_other(ctx, ingot_ir_for(f, c, channels, ingot_ir_block(f, body, nb)));
  if (spatial > 1) lower_mark_vector_loop(ctx, sp); /* the output pass's elements are independent */
  ctx->op_class = INGOT_OP_CLASS_ROW;
  ctx->workload = ingot_arena_printf(ctx->arena, "batchnorm_training %s x=%s eps=%g momentum=%g running=%d%d",
                                     ingot_dtype_name(dt), lower_shape_str(ctx, x), eps, momentum,
                                     rm != INGOT_NO_VALUE, rv != INGOT_NO_VALUE);
  return INGOT_OK;
}

ingot_status_t lower_lpnorm(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  uint32_t x = lower_input(ctx, 0);
  uint32_t y = node->output_count > 0 ? node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx))) return s;
  if ((s = lower_check_value(ctx, x, false)) || (s = lower_check_value(ctx, y, false)) || (s = check_float(ctx, x))) {
    return s;
  }
  const ingot_value_t* xv = lower_value(ctx, x);
  int64_t axis = ctx->params->u.norm.axis, p = ctx->params->u.norm.p; /* graph/params.c */
  int64_t outer = 1, len = xv->dims[axis], inner = 1;
  for (int32_t i = 0; i < xv->rank; ++i) {
    if (i < axis) outer *= xv->dims[i];
    if (i > axis) inner *= xv->dims[i];
  }
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  ingot_dtype_t dt = xv->dtype;
  uint32_t row = lower_add_var(ctx, "row", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t j1 = lower_add_var(ctx, "j", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t j2 = lower_add_var(ctx, "j", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t acc = lower_add_var(ctx, "acc", INGOT_IR_VAR_LOCAL, dt);
  uint32_t norm = lower_add_var(ctx, "norm", INGOT_IR_VAR_LOCAL, dt);
  ingot_ir_expr_t* r = ingot_ir_var(f, row);
  ingot_ir_expr_t* o = ingot_ir_binary(f, INGOT_IR_DIV, r, ingot_ir_int(f, inner));
  ingot_ir_expr_t* in = ingot_ir_binary(f, INGOT_IR_MOD, r, ingot_ir_int(f, inner));
  ingot_ir_expr_t* at1 = ingot_ir_add(
      f, ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_mul(f, o, ingot_ir_int(f, len)), ingot_ir_var(f, j1)), ingot_ir_int(f, inner)), in);
  ingot_ir_expr_t* at2 = ingot_ir_add(
      f, ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_mul(f, o, ingot_ir_int(f, len)), ingot_ir_var(f, j2)), ingot_ir_int(f, inner)), in);
  ingot_ir_expr_t* v1 = ingot_ir_load(f, bx, at1);
  ingot_ir_expr_t* term = p == 1 ? ingot_ir_unary(f, INGOT_IR_ABS, v1) : ingot_ir_mul(f, v1, v1);
  ingot_ir_expr_t* nv = ingot_ir_var(f, norm);
  ingot_ir_expr_t* zero = ingot_ir_float(f, dt, 0.0);
  ingot_ir_expr_t* q = ingot_ir_select(f, ingot_ir_binary(f, INGOT_IR_EQ, nv, zero), zero,
                                       ingot_ir_binary(f, INGOT_IR_DIV, ingot_ir_load(f, bx, at2), nv));
  ingot_ir_stmt_t* body[4] = {
      ingot_ir_local(f, acc, zero),
      ingot_ir_for(f, j1, len, ingot_ir_assign(f, acc, ingot_ir_add(f, ingot_ir_var(f, acc), term))),
      ingot_ir_local(f, norm, p == 1 ? ingot_ir_var(f, acc) : ingot_ir_unary(f, INGOT_IR_SQRT, ingot_ir_var(f, acc))),
      ingot_ir_for(f, j2, len, ingot_ir_store(f, by, at2, q)),
  };
  lower_emit_other(ctx, ingot_ir_for(f, row, outer * inner, ingot_ir_block(f, body, 4)));
  ctx->op_class = INGOT_OP_CLASS_ROW;
  ctx->workload = ingot_arena_printf(ctx->arena, "lpnorm %s outer%lld len%lld inner%lld p%lld", ingot_dtype_name(dt),
                                     (long long)outer, (long long)len, (long long)inner, (long long)p);
  return INGOT_OK;
}
