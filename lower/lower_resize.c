/* Resize (every opset) and Upsample: nearest (all nearest_mode values),
 * linear and cubic (cubic_coeff_a, exclude_outside) interpolation, with the
 * coordinate transformation modes half_pixel, half_pixel_symmetric,
 * pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn and
 * tf_crop_and_resize (extrapolation_value), and antialias (linear, cubic).
 *
 * One PURE stage over the output. Per axis, the output index maps to an
 * input coordinate in float64 with the operations in the order the ONNX
 * reference uses; nearest picks one input index, linear two and cubic four
 * neighbours (indices clamped into the axis: edge padding), and the output
 * is the sum over all neighbour combinations of the product of the per-axis
 * weights times the input, accumulated in float64 and converted to the
 * output dtype (integers: round half to even, saturated). Axes that keep
 * their size with scale 1 are identity axes (one tap, no arithmetic).
 *
 * antialias (Resize-18) takes its own path, one OTHER stage (see
 * emit_filtered): the filter of an axis with s = min(scale, 1) spans
 * n = 2 * ceil(1 / s) taps (linear) or 2 * ceil(2 / s) (cubic), too many to
 * unroll, so the taps are loops and the per-axis quantities locals. */
#include <math.h>
#include <string.h>

#include "lower_internal.h"

#define MAX_TAPS 4
#define MAX_COMBOS 256

typedef struct axis_taps_t {
  uint32_t count;                  /* 1, 2 or 4 */
  ingot_ir_expr_t* index[MAX_TAPS];  /* int64, inside [0, in) */
  ingot_ir_expr_t* weight[MAX_TAPS]; /* float64, NULL for a single tap */
  ingot_ir_expr_t* outside;          /* tf_crop_and_resize: BOOL, or NULL */
} axis_taps_t;

static ingot_ir_expr_t* f64(lower_ctx_t* ctx, double v) { return ingot_ir_float(ctx->f, INGOT_DTYPE_F64, v); }

static ingot_ir_expr_t* bin(lower_ctx_t* ctx, ingot_ir_binary_op_t op, ingot_ir_expr_t* a, ingot_ir_expr_t* b) {
  return ingot_ir_binary(ctx->f, op, a, b);
}

/* The input coordinate (float64) of output index `o` along axis d. */
static ingot_ir_expr_t* coordinate(lower_ctx_t* ctx, const ingot_resize_params_t* p, int32_t d, ingot_ir_expr_t* o) {
  ingot_ir_expr_t* x = ingot_ir_cast(ctx->f, INGOT_DTYPE_F64, o);
  double in = (double)p->in[d], scale = p->scale[d];
  double out_width = scale * in; /* as the reference: a float */
  switch (p->coord) {
    case INGOT_RESIZE_HALF_PIXEL:
      return bin(ctx, INGOT_IR_SUB, bin(ctx, INGOT_IR_DIV, bin(ctx, INGOT_IR_ADD, x, f64(ctx, 0.5)), f64(ctx, scale)),
                 f64(ctx, 0.5));
    case INGOT_RESIZE_HALF_PIXEL_SYMMETRIC: {
      double adjustment = (double)p->out[d] / out_width;
      double center = in / 2;
      double offset = center * (1 - adjustment);
      ingot_ir_expr_t* hp = bin(ctx, INGOT_IR_DIV, bin(ctx, INGOT_IR_ADD, x, f64(ctx, 0.5)), f64(ctx, scale));
      return bin(ctx, INGOT_IR_SUB, bin(ctx, INGOT_IR_ADD, f64(ctx, offset), hp), f64(ctx, 0.5));
    }
    case INGOT_RESIZE_PYTORCH_HALF_PIXEL:
      if (out_width == 1.0) return f64(ctx, -0.5);
      return bin(ctx, INGOT_IR_SUB, bin(ctx, INGOT_IR_DIV, bin(ctx, INGOT_IR_ADD, x, f64(ctx, 0.5)), f64(ctx, scale)),
                 f64(ctx, 0.5));
    case INGOT_RESIZE_ALIGN_CORNERS:
      if (out_width == 1.0) return f64(ctx, 0.0);
      return bin(ctx, INGOT_IR_DIV, bin(ctx, INGOT_IR_MUL, x, f64(ctx, in - 1)), f64(ctx, out_width - 1));
    case INGOT_RESIZE_ASYMMETRIC:
      return bin(ctx, INGOT_IR_DIV, x, f64(ctx, scale));
    case INGOT_RESIZE_TF_HALF_PIXEL_FOR_NN:
      return bin(ctx, INGOT_IR_DIV, bin(ctx, INGOT_IR_ADD, x, f64(ctx, 0.5)), f64(ctx, scale));
    case INGOT_RESIZE_TF_CROP_AND_RESIZE: {
      double span = p->roi_end[d] - p->roi_start[d];
      ingot_ir_expr_t* r;
      if (out_width == 1.0) {
        r = f64(ctx, span * (in - 1) / 2);
      } else {
        r = bin(ctx, INGOT_IR_DIV, bin(ctx, INGOT_IR_MUL, bin(ctx, INGOT_IR_MUL, x, f64(ctx, span)), f64(ctx, in - 1)),
                f64(ctx, out_width - 1));
      }
      return bin(ctx, INGOT_IR_ADD, r, f64(ctx, p->roi_start[d] * (in - 1)));
    }
  }
  return x;
}

static ingot_ir_expr_t* clamp_index(lower_ctx_t* ctx, ingot_ir_expr_t* i, int64_t in) {
  i = bin(ctx, INGOT_IR_MAX, i, ingot_ir_int(ctx->f, 0));
  return bin(ctx, INGOT_IR_MIN, i, ingot_ir_int(ctx->f, in - 1));
}

static ingot_ir_expr_t* to_index(lower_ctx_t* ctx, ingot_ir_expr_t* v) { return ingot_ir_cast(ctx->f, INGOT_DTYPE_I64, v); }

/* Cubic convolution weight of the neighbour at distance class k (0..3) for
 * fraction t, as the reference writes it. */
static ingot_ir_expr_t* cubic_weight(lower_ctx_t* ctx, double a, int k, ingot_ir_expr_t* t) {
  ingot_ir_expr_t* A = f64(ctx, a);
  ingot_ir_expr_t* one = f64(ctx, 1.0);
  ingot_ir_expr_t* u;
  switch (k) {
    case 0:
    case 3: {
      /* ((A*(u) - 5A)*(u) + 8A)*(u) - 4A with u = t+1 (k=0) or (1-t)+1 (k=3) */
      u = k == 0 ? bin(ctx, INGOT_IR_ADD, t, one) : bin(ctx, INGOT_IR_ADD, bin(ctx, INGOT_IR_SUB, one, t), one);
      ingot_ir_expr_t* e = bin(ctx, INGOT_IR_SUB, bin(ctx, INGOT_IR_MUL, A, u), f64(ctx, 5 * a));
      e = bin(ctx, INGOT_IR_ADD, bin(ctx, INGOT_IR_MUL, e, u), f64(ctx, 8 * a));
      return bin(ctx, INGOT_IR_SUB, bin(ctx, INGOT_IR_MUL, e, u), f64(ctx, 4 * a));
    }
    default: {
      /* ((A+2)*u - (A+3))*u*u + 1 with u = t (k=1) or 1-t (k=2) */
      u = k == 1 ? t : bin(ctx, INGOT_IR_SUB, one, t);
      ingot_ir_expr_t* e = bin(ctx, INGOT_IR_SUB, bin(ctx, INGOT_IR_MUL, f64(ctx, a + 2), u), f64(ctx, a + 3));
      e = bin(ctx, INGOT_IR_MUL, bin(ctx, INGOT_IR_MUL, e, u), u);
      return bin(ctx, INGOT_IR_ADD, e, one);
    }
  }
}

static void axis_taps(lower_ctx_t* ctx, const ingot_resize_params_t* p, int32_t d, ingot_ir_expr_t* o, axis_taps_t* t) {
  ingot_ir_func_t* f = ctx->f;
  memset(t, 0, sizeof(*t));
  if (p->identity[d]) {
    t->count = 1;
    t->index[0] = o;
    return;
  }
  int64_t in = p->in[d];
  ingot_ir_expr_t* r = coordinate(ctx, p, d, o);
  if (p->coord == INGOT_RESIZE_TF_CROP_AND_RESIZE) {
    t->outside = bin(ctx, INGOT_IR_OR, bin(ctx, INGOT_IR_LT, r, f64(ctx, 0.0)), bin(ctx, INGOT_IR_LT, f64(ctx, (double)(in - 1)), r));
  }
  ingot_ir_expr_t* fl = ingot_ir_unary(f, INGOT_IR_FLOOR, r);
  ingot_ir_expr_t* frac = bin(ctx, INGOT_IR_SUB, r, fl);
  if (p->mode == INGOT_RESIZE_NEAREST) {
    ingot_ir_expr_t* pick;
    ingot_ir_expr_t* up = bin(ctx, INGOT_IR_ADD, fl, f64(ctx, 1.0));
    ingot_resize_nearest_t nm = p->nearest;
    if (nm == INGOT_RESIZE_SIMPLE) nm = p->scale[d] < 1.0 ? INGOT_RESIZE_CEIL : INGOT_RESIZE_FLOOR;
    switch (nm) {
      case INGOT_RESIZE_ROUND_PREFER_CEIL:
        pick = ingot_ir_select(f, bin(ctx, INGOT_IR_LT, frac, f64(ctx, 0.5)), fl, up);
        break;
      case INGOT_RESIZE_FLOOR:
        pick = fl;
        break;
      case INGOT_RESIZE_CEIL:
        pick = ingot_ir_unary(f, INGOT_IR_CEIL, r);
        break;
      default: /* round_prefer_floor */
        pick = ingot_ir_select(f, bin(ctx, INGOT_IR_LE, frac, f64(ctx, 0.5)), fl, up);
        break;
    }
    t->count = 1;
    t->index[0] = clamp_index(ctx, to_index(ctx, pick), in);
    return;
  }
  ingot_ir_expr_t* base = to_index(ctx, fl);
  if (p->mode == INGOT_RESIZE_LINEAR) {
    t->count = 2;
    t->weight[0] = bin(ctx, INGOT_IR_SUB, f64(ctx, 1.0), frac);
    t->weight[1] = frac;
  } else {
    t->count = 4;
    for (int k = 0; k < 4; ++k) t->weight[k] = cubic_weight(ctx, p->cubic_a, k, frac);
  }
  int64_t first = p->mode == INGOT_RESIZE_LINEAR ? 0 : -1;
  ingot_ir_expr_t* raw[MAX_TAPS];
  for (uint32_t k = 0; k < t->count; ++k) {
    raw[k] = ingot_ir_add(f, base, ingot_ir_int(f, first + (int64_t)k));
    t->index[k] = clamp_index(ctx, raw[k], in);
  }
  if (p->exclude_outside) {
    ingot_ir_expr_t* sum = NULL;
    for (uint32_t k = 0; k < t->count; ++k) {
      ingot_ir_expr_t* inside = bin(ctx, INGOT_IR_AND, bin(ctx, INGOT_IR_LE, ingot_ir_int(f, 0), raw[k]),
                                    bin(ctx, INGOT_IR_LT, raw[k], ingot_ir_int(f, in)));
      t->weight[k] = ingot_ir_select(f, inside, t->weight[k], f64(ctx, 0.0));
      sum = sum ? bin(ctx, INGOT_IR_ADD, sum, t->weight[k]) : t->weight[k];
    }
    sum = ingot_ir_select(f, bin(ctx, INGOT_IR_EQ, sum, f64(ctx, 0.0)), f64(ctx, 1.0), sum);
    for (uint32_t k = 0; k < t->count; ++k) t->weight[k] = bin(ctx, INGOT_IR_DIV, t->weight[k], sum);
  }
}

/* Converts a float64 result to dtype t: a float cast, or for integers round
 * half to even and saturate (as the reference's saturate_cast). */
static ingot_ir_expr_t* from_f64(lower_ctx_t* ctx, ingot_dtype_t t, ingot_ir_expr_t* v) {
  ingot_ir_func_t* f = ctx->f;
  if (t == INGOT_DTYPE_F32 || t == INGOT_DTYPE_F64) return ingot_ir_cast(f, t, v);
  ingot_ir_expr_t* fl = ingot_ir_unary(f, INGOT_IR_FLOOR, v);
  ingot_ir_expr_t* d = bin(ctx, INGOT_IR_SUB, v, fl);
  ingot_ir_expr_t* up = bin(ctx, INGOT_IR_ADD, fl, f64(ctx, 1.0));
  ingot_ir_expr_t* half = ingot_ir_unary(f, INGOT_IR_FLOOR, bin(ctx, INGOT_IR_MUL, fl, f64(ctx, 0.5)));
  ingot_ir_expr_t* even = bin(ctx, INGOT_IR_EQ, bin(ctx, INGOT_IR_MUL, half, f64(ctx, 2.0)), fl);
  ingot_ir_expr_t* r = ingot_ir_select(f, bin(ctx, INGOT_IR_LT, f64(ctx, 0.5), d), up,
                                       ingot_ir_select(f, bin(ctx, INGOT_IR_LT, d, f64(ctx, 0.5)), fl,
                                                       ingot_ir_select(f, even, fl, up)));
  double lo = -9.2233720368547758e18, hi = 9.2233720368547748e18;
  switch (t) {
    case INGOT_DTYPE_I32: lo = -2147483648.0; hi = 2147483647.0; break;
    case INGOT_DTYPE_I8: lo = -128.0; hi = 127.0; break;
    case INGOT_DTYPE_U8: lo = 0.0; hi = 255.0; break;
    default: break;
  }
  r = bin(ctx, INGOT_IR_MIN, bin(ctx, INGOT_IR_MAX, r, f64(ctx, lo)), f64(ctx, hi));
  return ingot_ir_cast(f, t, r);
}

/* Checks of an index map beyond this many outputs are not worth it. */
#define NEAREST_CHECK_MAX 65536

/* k when nearest axis d upsamples by the whole factor k = out / in and its
 * index map (axis_taps, as the reference computes it in float64) is o / k at
 * every output index o, evaluated here once per o; else 0. Then the kernel
 * divides integers (a shift for k a power of two) instead of computing the
 * float64 coordinate per element. */
static int64_t upsampled_by(lower_ctx_t* ctx, const ingot_resize_params_t* p, int32_t d) {
  int64_t in = p->in[d], out = p->out[d];
  if (p->mode != INGOT_RESIZE_NEAREST || p->identity[d] || p->coord == INGOT_RESIZE_TF_CROP_AND_RESIZE || in < 1 ||
      out % in || out / in < 2 || out > NEAREST_CHECK_MAX)
    return 0;
  int64_t k = out / in;
  for (int64_t o = 0; o < out; ++o) {
    axis_taps_t t;
    axis_taps(ctx, p, d, ingot_ir_int(ctx->f, o), &t);
    int64_t i;
    if (t.count != 1 || t.outside || !ingot_ir_eval_closed_int(ctx->f, t.index[0], &i) || i != o / k) return 0;
  }
  return k;
}

/* Every other Resize: one PURE stage over the output, the neighbour
 * combinations unrolled (at most MAX_COMBOS). */
static ingot_status_t emit_unrolled(lower_ctx_t* ctx, const ingot_resize_params_t* p, uint32_t bx, uint32_t by,
                                    const ingot_value_t* yv) {
  ingot_ir_func_t* f = ctx->f;
  lower_loops_t loops;
  lower_loops_over(ctx, &loops, yv->rank, yv->dims);
  axis_taps_t taps[INGOT_MAX_RANK];
  int64_t combos = 1;
  ingot_ir_expr_t* outside = NULL;
  for (int32_t d = 0; d < p->rank; ++d) {
    axis_taps(ctx, p, d, loops.idx[d], &taps[d]);
    int64_t k = upsampled_by(ctx, p, d);
    if (k > 1) taps[d].index[0] = ingot_ir_binary(f, INGOT_IR_DIV, loops.idx[d], ingot_ir_int(f, k));
    combos *= taps[d].count;
    if (taps[d].outside) outside = outside ? bin(ctx, INGOT_IR_OR, outside, taps[d].outside) : taps[d].outside;
  }
  if (combos > MAX_COMBOS) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "interpolating %lld neighbours per output is not supported (at most %d)",
                      (long long)combos, MAX_COMBOS);
  }
  ingot_ir_expr_t* value = NULL;
  for (int64_t c = 0; c < combos; ++c) {
    ingot_ir_expr_t* xi[INGOT_MAX_RANK];
    ingot_ir_expr_t* w = NULL;
    int64_t rest = c;
    for (int32_t d = p->rank; d-- > 0;) {
      uint32_t k = (uint32_t)(rest % taps[d].count);
      rest /= taps[d].count;
      xi[d] = taps[d].index[k];
      if (taps[d].weight[k]) w = w ? bin(ctx, INGOT_IR_MUL, taps[d].weight[k], w) : taps[d].weight[k];
    }
    ingot_ir_expr_t* v = ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi));
    if (combos == 1 && !w) {
      value = v;
      break;
    }
    v = ingot_ir_cast(f, INGOT_DTYPE_F64, v);
    if (w) v = bin(ctx, INGOT_IR_MUL, w, v);
    value = value ? bin(ctx, INGOT_IR_ADD, value, v) : v;
  }
  if (value->dtype != yv->dtype) value = from_f64(ctx, yv->dtype, value);
  if (outside) value = ingot_ir_select(f, outside, lower_const(ctx, yv->dtype, p->extrapolation), value);
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL, ingot_ir_store(f, by, ingot_ir_flat_index(f, by, loops.idx), value));
  return INGOT_OK;
}

/* ---- antialias ---- */

/* The antialiased filter of one (non-identity) axis. With s = min(scale, 1),
 * tap k (0 <= k < taps) of output o sits at input index first(o) + k and has
 * the raw weight kernel(s * (offset + k - ratio(o))), where x_ori(o) is the
 * coordinate, ratio its distance from the tap left of it in (0, 1] (1 at an
 * integer) and offset = 1 - taps / 2; the weights are divided by their sum
 * (then, with exclude_outside, the ones outside the axis zeroed and the rest
 * divided by their new sum), all as ONNX's reference
 * (_linear_coeffs_antialias, _cubic_coeffs_antialias, the neighbour window
 * of _interpolate_1d_along_axis). */
typedef struct filter_axis_t {
  double s;
  int64_t taps, offset;
  uint32_t x_ori, ratio, first, norm, keep; /* locals; keep: exclude_outside only */
} filter_axis_t;

/* Linear: clip(1 - u, 0, 1); cubic (a): the Keys kernel of u = |arg| in the
 * reference's form, 0 from u = 2 on. `u` is float64 and >= 0. */
static ingot_ir_expr_t* filter_kernel(lower_ctx_t* ctx, const ingot_resize_params_t* p, ingot_ir_expr_t* u) {
  ingot_ir_func_t* f = ctx->f;
  if (p->mode == INGOT_RESIZE_LINEAR) {
    ingot_ir_expr_t* v = bin(ctx, INGOT_IR_SUB, f64(ctx, 1.0), u);
    return bin(ctx, INGOT_IR_MIN, bin(ctx, INGOT_IR_MAX, v, f64(ctx, 0.0)), f64(ctx, 1.0));
  }
  double a = p->cubic_a;
  ingot_ir_expr_t* u2 = bin(ctx, INGOT_IR_MUL, u, u);
  ingot_ir_expr_t* u3 = bin(ctx, INGOT_IR_MUL, u, u2);
  /* (a + 2) u^3 - (a + 3) u^2 + 1 */
  ingot_ir_expr_t* near = bin(ctx, INGOT_IR_SUB, bin(ctx, INGOT_IR_MUL, f64(ctx, a + 2), u3),
                              bin(ctx, INGOT_IR_MUL, f64(ctx, a + 3), u2));
  near = bin(ctx, INGOT_IR_ADD, near, f64(ctx, 1.0));
  /* a u^3 - 5a u^2 + 8a u - 4a */
  ingot_ir_expr_t* far = bin(ctx, INGOT_IR_SUB, bin(ctx, INGOT_IR_MUL, f64(ctx, a), u3),
                             bin(ctx, INGOT_IR_MUL, f64(ctx, 5 * a), u2));
  far = bin(ctx, INGOT_IR_ADD, far, bin(ctx, INGOT_IR_MUL, f64(ctx, 8 * a), u));
  far = bin(ctx, INGOT_IR_SUB, far, f64(ctx, 4 * a));
  return ingot_ir_select(f, bin(ctx, INGOT_IR_LE, u, f64(ctx, 1.0)), near,
                         ingot_ir_select(f, bin(ctx, INGOT_IR_LT, u, f64(ctx, 2.0)), far, f64(ctx, 0.0)));
}

/* Appends to body[*n] a local holding |s * (offset + k - ratio)| (float64;
 * k is the tap, an int64 expression) and returns tap k's raw weight, an
 * expression of that local. */
static ingot_ir_expr_t* filter_raw(lower_ctx_t* ctx, const ingot_resize_params_t* p, const filter_axis_t* a,
                                   ingot_ir_expr_t* k, const char* name, ingot_ir_stmt_t** body, uint32_t* n) {
  ingot_ir_func_t* f = ctx->f;
  uint32_t u = lower_add_var(ctx, name, INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F64);
  ingot_ir_expr_t* pos = ingot_ir_cast(f, INGOT_DTYPE_F64, ingot_ir_add(f, k, ingot_ir_int(f, a->offset)));
  ingot_ir_expr_t* arg = bin(ctx, INGOT_IR_MUL, f64(ctx, a->s), bin(ctx, INGOT_IR_SUB, pos, ingot_ir_var(f, a->ratio)));
  body[(*n)++] = ingot_ir_local(f, u, ingot_ir_unary(f, INGOT_IR_ABS, arg));
  return filter_kernel(ctx, p, ingot_ir_var(f, u));
}

/* first + k inside [0, in) */
static ingot_ir_expr_t* filter_inside(lower_ctx_t* ctx, const filter_axis_t* a, ingot_ir_expr_t* k, int64_t in) {
  ingot_ir_func_t* f = ctx->f;
  ingot_ir_expr_t* i = ingot_ir_add(f, ingot_ir_var(f, a->first), k);
  return bin(ctx, INGOT_IR_AND, bin(ctx, INGOT_IR_LE, ingot_ir_int(f, 0), i),
             bin(ctx, INGOT_IR_LT, i, ingot_ir_int(f, in)));
}

/* The statements at the top of output loop o along axis d: x_ori, ratio,
 * first, and the weight sums (loops over the taps). */
static uint32_t filter_axis_head(lower_ctx_t* ctx, const ingot_resize_params_t* p, int32_t d, ingot_ir_expr_t* o,
                                 filter_axis_t* a, ingot_ir_stmt_t** body) {
  ingot_ir_func_t* f = ctx->f;
  uint32_t n = 0;
  uint32_t xo = a->x_ori =
      lower_add_var(ctx, ingot_arena_printf(ctx->arena, "x_ori%d", d), INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F64);
  a->ratio = lower_add_var(ctx, ingot_arena_printf(ctx->arena, "ratio%d", d), INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F64);
  a->first = lower_add_var(ctx, ingot_arena_printf(ctx->arena, "first%d", d), INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64);
  a->norm = lower_add_var(ctx, ingot_arena_printf(ctx->arena, "norm%d", d), INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F64);
  body[n++] = ingot_ir_local(f, xo, coordinate(ctx, p, d, o));
  ingot_ir_expr_t* x = ingot_ir_var(f, xo);
  ingot_ir_expr_t* fl = ingot_ir_unary(f, INGOT_IR_FLOOR, x);
  body[n++] = ingot_ir_local(f, a->ratio, ingot_ir_select(f, bin(ctx, INGOT_IR_EQ, x, fl), f64(ctx, 1.0),
                                                          bin(ctx, INGOT_IR_SUB, x, fl)));
  /* The taps nearest x_ori, ties to the lower ones, found as the reference
   * does on the edge-padded axis (pad = taps / 2): with xp = x_ori + pad,
   * first = floor(xp) - taps / 2 + (xp an integer ? 0 : 1) - pad. */
  int64_t half = a->taps / 2;
  ingot_ir_expr_t* xp = bin(ctx, INGOT_IR_ADD, x, f64(ctx, (double)half));
  ingot_ir_expr_t* pf = ingot_ir_unary(f, INGOT_IR_FLOOR, xp);
  ingot_ir_expr_t* shift =
      ingot_ir_select(f, bin(ctx, INGOT_IR_EQ, xp, pf), ingot_ir_int(f, -half), ingot_ir_int(f, 1 - half));
  ingot_ir_expr_t* first = ingot_ir_add(f, ingot_ir_add(f, to_index(ctx, pf), shift), ingot_ir_int(f, -half));
  body[n++] = ingot_ir_local(f, a->first, first);
  /* norm = the raw weights' sum, in tap order (the reference's sum()) */
  body[n++] = ingot_ir_local(f, a->norm, f64(ctx, 0.0));
  uint32_t k = lower_add_var(ctx, ingot_arena_printf(ctx->arena, "k%d", d), INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  ingot_ir_stmt_t* in[2];
  uint32_t m = 0;
  ingot_ir_expr_t* raw = filter_raw(ctx, p, a, ingot_ir_var(f, k), ingot_arena_printf(ctx->arena, "uk%d", d), in, &m);
  in[m++] = ingot_ir_assign(f, a->norm, bin(ctx, INGOT_IR_ADD, ingot_ir_var(f, a->norm), raw));
  body[n++] = ingot_ir_for(f, k, a->taps, ingot_ir_block(f, in, m));
  if (p->exclude_outside) {
    /* keep = the normalized weights' sum over the taps inside the axis (1 if none) */
    a->keep = lower_add_var(ctx, ingot_arena_printf(ctx->arena, "keep%d", d), INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F64);
    body[n++] = ingot_ir_local(f, a->keep, f64(ctx, 0.0));
    uint32_t j = lower_add_var(ctx, ingot_arena_printf(ctx->arena, "j%d", d), INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    m = 0;
    raw = filter_raw(ctx, p, a, ingot_ir_var(f, j), ingot_arena_printf(ctx->arena, "uj%d", d), in, &m);
    ingot_ir_expr_t* w = ingot_ir_select(f, filter_inside(ctx, a, ingot_ir_var(f, j), p->in[d]),
                                         bin(ctx, INGOT_IR_DIV, raw, ingot_ir_var(f, a->norm)), f64(ctx, 0.0));
    in[m++] = ingot_ir_assign(f, a->keep, bin(ctx, INGOT_IR_ADD, ingot_ir_var(f, a->keep), w));
    body[n++] = ingot_ir_for(f, j, a->taps, ingot_ir_block(f, in, m));
    ingot_ir_expr_t* kv = ingot_ir_var(f, a->keep);
    kv = ingot_ir_select(f, bin(ctx, INGOT_IR_EQ, kv, f64(ctx, 0.0)), f64(ctx, 1.0), kv);
    body[n++] = ingot_ir_assign(f, a->keep, kv);
  }
  return n;
}

/* Resize with antialias: one OTHER stage,
 *
 *   for o0: [head of axis 0]  for o1: [head of axis 1] ...
 *     acc = 0
 *     for t0 < taps0: w0 = weight0(t0)  for t1 < taps1: w1 = w0 * weight1(t1) ...
 *       acc += w_last * x[clamp(first0 + t0), clamp(first1 + t1), ...]
 *     y[o] = acc (converted; the extrapolation value outside a crop)
 *
 * over the output, the identity axes without a head or taps (x read at o).
 * The reference resizes one axis after the other in float64; this sums the
 * same products in float64 in one pass (rounding apart, the same value). */
static ingot_status_t emit_filtered(lower_ctx_t* ctx, const ingot_resize_params_t* p, uint32_t bx, uint32_t by,
                                    ingot_dtype_t dt) {
  ingot_ir_func_t* f = ctx->f;
  const int32_t rank = p->rank;
  filter_axis_t ax[INGOT_MAX_RANK];
  memset(ax, 0, sizeof(ax));
  for (int32_t d = 0; d < rank; ++d) {
    if (p->identity[d]) continue;
    double s = p->scale[d] < 1.0 ? p->scale[d] : 1.0;
    double support = p->mode == INGOT_RESIZE_LINEAR ? 1.0 : 2.0;
    double start = floor(-support / s) + 1; /* the reference's first tap offset */
    if (!(start > -(double)(1 << 20))) {
      return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "antialias: scale %g along axis %d needs too many taps",
                        p->scale[d], d);
    }
    ax[d].s = s;
    ax[d].offset = (int64_t)start;
    ax[d].taps = 2 - 2 * ax[d].offset;
  }
  /* output loops, each axis's head at the top of its loop's body */
  uint32_t ovar[INGOT_MAX_RANK];
  ingot_ir_expr_t* o[INGOT_MAX_RANK];
  for (int32_t d = 0; d < rank; ++d) {
    ovar[d] = lower_add_var(ctx, ingot_arena_printf(ctx->arena, "o%d", d), INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    o[d] = ingot_ir_var(f, ovar[d]);
  }
  ingot_ir_stmt_t* heads[INGOT_MAX_RANK][8];
  uint32_t head_count[INGOT_MAX_RANK] = {0};
  for (int32_t d = 0; d < rank; ++d) {
    if (!p->identity[d]) head_count[d] = filter_axis_head(ctx, p, d, o[d], &ax[d], heads[d]);
  }
  /* the taps, inside out */
  uint32_t acc = lower_add_var(ctx, "acc", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F64);
  uint32_t tvar[INGOT_MAX_RANK], wvar[INGOT_MAX_RANK];
  ingot_ir_expr_t* xi[INGOT_MAX_RANK];
  int32_t last = -1;
  for (int32_t d = 0; d < rank; ++d) {
    if (p->identity[d]) {
      xi[d] = o[d];
      continue;
    }
    tvar[d] = lower_add_var(ctx, ingot_arena_printf(ctx->arena, "t%d", d), INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    wvar[d] = lower_add_var(ctx, ingot_arena_printf(ctx->arena, "w%d", d), INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F64);
    xi[d] = clamp_index(ctx, ingot_ir_add(f, ingot_ir_var(f, ax[d].first), ingot_ir_var(f, tvar[d])), p->in[d]);
    last = d;
  }
  ingot_ir_expr_t* xv = ingot_ir_cast(f, INGOT_DTYPE_F64, ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi)));
  ingot_ir_expr_t* term = bin(ctx, INGOT_IR_MUL, ingot_ir_var(f, wvar[last]), xv);
  ingot_ir_stmt_t* s = ingot_ir_assign(f, acc, bin(ctx, INGOT_IR_ADD, ingot_ir_var(f, acc), term));
  for (int32_t d = last; d >= 0; --d) {
    if (p->identity[d]) continue;
    ingot_ir_expr_t* t = ingot_ir_var(f, tvar[d]);
    ingot_ir_stmt_t* st[3];
    uint32_t m = 0;
    ingot_ir_expr_t* raw = filter_raw(ctx, p, &ax[d], t, ingot_arena_printf(ctx->arena, "u%d", d), st, &m);
    ingot_ir_expr_t* w = bin(ctx, INGOT_IR_DIV, raw, ingot_ir_var(f, ax[d].norm));
    if (p->exclude_outside) {
      ingot_ir_expr_t* kept = bin(ctx, INGOT_IR_DIV, w, ingot_ir_var(f, ax[d].keep));
      w = ingot_ir_select(f, filter_inside(ctx, &ax[d], t, p->in[d]), kept, f64(ctx, 0.0));
    }
    int32_t outer = d - 1;
    while (outer >= 0 && p->identity[outer]) --outer;
    if (outer >= 0) w = bin(ctx, INGOT_IR_MUL, ingot_ir_var(f, wvar[outer]), w);
    st[m++] = ingot_ir_local(f, wvar[d], w);
    st[m++] = s;
    s = ingot_ir_for(f, tvar[d], ax[d].taps, ingot_ir_block(f, st, m));
  }
  /* the store, then the output loops, inside out */
  ingot_ir_expr_t* value = ingot_ir_var(f, acc);
  if (dt != INGOT_DTYPE_F64) value = from_f64(ctx, dt, value);
  if (p->coord == INGOT_RESIZE_TF_CROP_AND_RESIZE) {
    ingot_ir_expr_t* outside = NULL;
    for (int32_t d = 0; d < rank; ++d) {
      if (p->identity[d]) continue;
      ingot_ir_expr_t* x = ingot_ir_var(f, ax[d].x_ori);
      ingot_ir_expr_t* out = bin(ctx, INGOT_IR_OR, bin(ctx, INGOT_IR_LT, x, f64(ctx, 0.0)),
                                 bin(ctx, INGOT_IR_LT, f64(ctx, (double)(p->in[d] - 1)), x));
      outside = outside ? bin(ctx, INGOT_IR_OR, outside, out) : out;
    }
    value = ingot_ir_select(f, outside, lower_const(ctx, dt, p->extrapolation), value);
  }
  ingot_ir_stmt_t* inner[3] = {ingot_ir_local(f, acc, f64(ctx, 0.0)), s,
                               ingot_ir_store(f, by, ingot_ir_flat_index(f, by, o), value)};
  s = ingot_ir_block(f, inner, 3);
  for (int32_t d = rank; d-- > 0;) {
    ingot_ir_stmt_t* st[9];
    uint32_t m = 0;
    for (uint32_t i = 0; i < head_count[d]; ++i) st[m++] = heads[d][i];
    st[m++] = s;
    s = ingot_ir_for(f, ovar[d], p->out[d], m == 1 ? s : ingot_ir_block(f, st, m));
  }
  lower_emit_other(ctx, s);
  return INGOT_OK;
}

ingot_status_t lower_resize(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0);
  uint32_t y = ctx->node->output_count ? ctx->node->outputs[0] : INGOT_NO_VALUE;
  if ((s = lower_refuse_activation(ctx))) return s;
  if ((s = lower_check_value_dt(ctx, x, LOWER_DT_ANY)) || (s = lower_check_value_dt(ctx, y, LOWER_DT_ANY))) return s;
  ingot_resize_params_t p;
  if ((s = ingot_graph_resize_params(ctx->graph, ctx->node_id, &p))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  bool ok = yv->dtype == xv->dtype && yv->rank == p.rank;
  for (int32_t d = 0; ok && d < p.rank; ++d) ok = yv->dims[d] == p.out[d];
  if (!ok) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "output does not match the resize parameters");
  if (p.mode != INGOT_RESIZE_NEAREST && xv->dtype == INGOT_DTYPE_BOOL) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "linear and cubic modes need a numeric type, not bool");
  }
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  bool filtered = false;
  for (int32_t d = 0; d < p.rank; ++d) filtered |= p.antialias && !p.identity[d];
  if ((s = filtered ? emit_filtered(ctx, &p, bx, by, yv->dtype) : emit_unrolled(ctx, &p, bx, by, yv))) return s;
  static const char* const kModes[] = {"nearest", "linear", "cubic"};
  ingot_strbuf_t sb = {0};
  ingot_strbuf_appendf(&sb, "resize %s c%d n%d %s x=%s y=%s", kModes[p.mode], (int)p.coord, (int)p.nearest,
                       ingot_dtype_name(xv->dtype), lower_shape_str(ctx, x), lower_shape_str(ctx, y));
  if (p.mode == INGOT_RESIZE_CUBIC) ingot_strbuf_appendf(&sb, " a%g ex%d", p.cubic_a, (int)p.exclude_outside);
  if (filtered) ingot_strbuf_appendf(&sb, " antialias ex%d", (int)p.exclude_outside);
  for (int32_t d = 0; d < p.rank; ++d) {
    if (!p.identity[d]) ingot_strbuf_appendf(&sb, " s%d=%.17g", d, p.scale[d]);
  }
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE;
  ctx->workload = ingot_arena_strdup(ctx->arena, sb.data);
  ingot_strbuf_free(&sb);
  return INGOT_OK;
}
