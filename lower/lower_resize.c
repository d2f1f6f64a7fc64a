/* Resize (every opset) and Upsample: nearest (all nearest_mode values),
 * linear and cubic (cubic_coeff_a, exclude_outside) interpolation, with the
 * coordinate transformation modes half_pixel, half_pixel_symmetric,
 * pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn and
 * tf_crop_and_resize (extrapolation_value). antialias is refused by the
 * parameter resolver (ingot_graph_resize_params).
 *
 * One PURE stage over the output. Per axis, the output index maps to an
 * input coordinate in float64 with the operations in the order the ONNX
 * reference uses; nearest picks one input index, linear two and cubic four
 * neighbours (indices clamped into the axis: edge padding), and the output
 * is the sum over all neighbour combinations of the product of the per-axis
 * weights times the input, accumulated in float64 and converted to the
 * output dtype (integers: round half to even, saturated). Axes that keep
 * their size with scale 1 are identity axes (one tap, no arithmetic). */
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
  ingot_ir_func_t* f = ctx->f;
  lower_loops_t loops;
  lower_loops_over(ctx, &loops, yv->rank, yv->dims);
  axis_taps_t taps[INGOT_MAX_RANK];
  int64_t combos = 1;
  ingot_ir_expr_t* outside = NULL;
  for (int32_t d = 0; d < p.rank; ++d) {
    axis_taps(ctx, &p, d, loops.idx[d], &taps[d]);
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
    for (int32_t d = p.rank; d-- > 0;) {
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
  if (outside) value = ingot_ir_select(f, outside, lower_const(ctx, yv->dtype, p.extrapolation), value);
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL, ingot_ir_store(f, by, ingot_ir_flat_index(f, by, loops.idx), value));
  static const char* const kModes[] = {"nearest", "linear", "cubic"};
  ingot_strbuf_t sb = {0};
  ingot_strbuf_appendf(&sb, "resize %s c%d n%d %s x=%s y=%s", kModes[p.mode], (int)p.coord, (int)p.nearest,
                       ingot_dtype_name(xv->dtype), lower_shape_str(ctx, x), lower_shape_str(ctx, y));
  if (p.mode == INGOT_RESIZE_CUBIC) ingot_strbuf_appendf(&sb, " a%g ex%d", p.cubic_a, (int)p.exclude_outside);
  for (int32_t d = 0; d < p.rank; ++d) {
    if (!p.identity[d]) ingot_strbuf_appendf(&sb, " s%d=%.17g", d, p.scale[d]);
  }
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE;
  ctx->workload = ingot_arena_strdup(ctx->arena, sb.data);
  ingot_strbuf_free(&sb);
  return INGOT_OK;
}
