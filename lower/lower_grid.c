/* Sampling on a grid: GridSample (2-D and 3-D; linear, nearest, cubic;
 * zeros, border and reflection padding; align_corners), AffineGrid, and
 * RoiAlign (bilinear points at run-time ROIs; its comment is at its code).
 *
 * GridSample, float32, as the ONNX reference computes it, one OTHER stage:
 *   for p over N x O1..Ok (the grid's positions):
 *     per axis i: x_i = the grid coordinate unnormalized to [0, L_i - 1]
 *       (align_corners) or [-0.5, L_i - 0.5]; nearest rounds it (half to
 *       even); outside that range border clamps it to [0, L_i - 1] and
 *       reflection folds it back; then base_i = floor(x_i) (- 1 for cubic)
 *       and s_i = x_i - floor(x_i)
 *     for c over C:
 *       acc = sum over the taps t (1, 2 or 4 per axis) of
 *             prod_i w_i(s_i, t_i) * X[n, c, pixel(base_i + t_i)..]
 *       Y[n, c, o..] = acc
 *   weights: linear 1 - s, s; cubic Keys' kernel (a = -0.75) at |s + 1 - t|;
 *   pixel(j): zeros: X there, 0 outside; border: j clamped into [0, L - 1];
 *   reflection: j folded back into the range.
 * AffineGrid, one PURE stage: grid[n, (d,) h, w, k] = theta[n, k, last] +
 *   sum_j theta[n, k, j] * a_j, a = (x of w, y of h, z of d) on [-1, 1]:
 *   -1 + 2i / (L - 1) with align_corners (0 when L = 1), else
 *   -1 + (2i + 1) / L. */
#include <math.h>
#include <string.h>

#include "lower_internal.h"

#define F32(v) lower_f32(ctx, (v))

static ingot_ir_expr_t* bin(lower_ctx_t* ctx, ingot_ir_binary_op_t op, ingot_ir_expr_t* a, ingot_ir_expr_t* b) {
  return ingot_ir_binary(ctx->f, op, a, b);
}
static ingot_ir_expr_t* var(lower_ctx_t* ctx, uint32_t v) { return ingot_ir_var(ctx->f, v); }

/* Appends to body[*nb]: v folded back into [lo, hi] (the reference's
 * _gs_reflect; range 0: v = lo). */
static void reflect_into(lower_ctx_t* ctx, uint32_t v, double lo, double hi, const char* tag, ingot_ir_stmt_t** body,
                         uint32_t* nb) {
  ingot_ir_func_t* f = ctx->f;
  double range = hi - lo;
  if (!(range > 0)) {
    body[(*nb)++] = ingot_ir_assign(f, v, F32(lo));
    return;
  }
  uint32_t dx = lower_add_var(ctx, ingot_arena_printf(ctx->arena, "dx%s", tag), INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
  uint32_t nn = lower_add_var(ctx, ingot_arena_printf(ctx->arena, "nn%s", tag), INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
  uint32_t r = lower_add_var(ctx, ingot_arena_printf(ctx->arena, "rr%s", tag), INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
  body[(*nb)++] = ingot_ir_local(f, dx, ingot_ir_select(f, bin(ctx, INGOT_IR_LT, var(ctx, v), F32(lo)),
                                                          bin(ctx, INGOT_IR_SUB, F32(lo), var(ctx, v)),
                                                          bin(ctx, INGOT_IR_SUB, var(ctx, v), F32(hi))));
  body[(*nb)++] = ingot_ir_local(f, nn, ingot_ir_unary(f, INGOT_IR_FLOOR, bin(ctx, INGOT_IR_DIV, var(ctx, dx), F32(range))));
  body[(*nb)++] = ingot_ir_local(f, r, bin(ctx, INGOT_IR_SUB, var(ctx, dx), ingot_ir_mul(f, var(ctx, nn), F32(range))));
  /* n even: floor(n / 2) * 2 == n */
  ingot_ir_expr_t* even =
      bin(ctx, INGOT_IR_EQ, ingot_ir_mul(f, ingot_ir_unary(f, INGOT_IR_FLOOR, ingot_ir_mul(f, var(ctx, nn), F32(0.5))), F32(2.0)),
          var(ctx, nn));
  ingot_ir_expr_t* from_lo = ingot_ir_select(f, even, ingot_ir_add(f, F32(lo), var(ctx, r)), bin(ctx, INGOT_IR_SUB, F32(hi), var(ctx, r)));
  ingot_ir_expr_t* even2 =
      bin(ctx, INGOT_IR_EQ, ingot_ir_mul(f, ingot_ir_unary(f, INGOT_IR_FLOOR, ingot_ir_mul(f, var(ctx, nn), F32(0.5))), F32(2.0)),
          var(ctx, nn));
  ingot_ir_expr_t* from_hi = ingot_ir_select(f, even2, bin(ctx, INGOT_IR_SUB, F32(hi), var(ctx, r)), ingot_ir_add(f, F32(lo), var(ctx, r)));
  ingot_ir_expr_t* v_new =
      ingot_ir_select(f, bin(ctx, INGOT_IR_LT, var(ctx, v), F32(lo)), from_lo,
                      ingot_ir_select(f, bin(ctx, INGOT_IR_LT, F32(hi), var(ctx, v)), from_hi, var(ctx, v)));
  body[(*nb)++] = ingot_ir_assign(f, v, v_new);
}

static ingot_ir_expr_t* clamp_i64(lower_ctx_t* ctx, ingot_ir_expr_t* v, int64_t hi) {
  ingot_ir_func_t* f = ctx->f;
  return bin(ctx, INGOT_IR_MIN, bin(ctx, INGOT_IR_MAX, v, ingot_ir_int(f, 0)), ingot_ir_int(f, hi));
}

/* Keys' cubic weight of tap t (0..3) at fraction s: the far formula for
 * the outer taps, the near one for the inner two (as the reference). */
static ingot_ir_expr_t* cubic_weight(lower_ctx_t* ctx, uint32_t s, uint32_t t) {
  ingot_ir_func_t* f = ctx->f;
  const double a = -0.75;
  ingot_ir_expr_t* tf = ingot_ir_cast(f, INGOT_DTYPE_F32, var(ctx, t));
  /* u = |s + 1 - t| */
  ingot_ir_expr_t* u1 = ingot_ir_unary(f, INGOT_IR_ABS, bin(ctx, INGOT_IR_SUB, ingot_ir_add(f, var(ctx, s), F32(1.0)), tf));
  ingot_ir_expr_t* near = ingot_ir_add(
      f, ingot_ir_mul(f, ingot_ir_mul(f, bin(ctx, INGOT_IR_SUB, ingot_ir_mul(f, F32(a + 2), u1), F32(a + 3)), u1), u1),
      F32(1.0));
  /* the same u again for the far formula (expressions are trees) */
  tf = ingot_ir_cast(f, INGOT_DTYPE_F32, var(ctx, t));
  ingot_ir_expr_t* u2 = ingot_ir_unary(f, INGOT_IR_ABS, bin(ctx, INGOT_IR_SUB, ingot_ir_add(f, var(ctx, s), F32(1.0)), tf));
  ingot_ir_expr_t* u3 = ingot_ir_unary(f, INGOT_IR_ABS,
                                       bin(ctx, INGOT_IR_SUB, ingot_ir_add(f, var(ctx, s), F32(1.0)),
                                           ingot_ir_cast(f, INGOT_DTYPE_F32, var(ctx, t))));
  ingot_ir_expr_t* u4 = ingot_ir_unary(f, INGOT_IR_ABS,
                                       bin(ctx, INGOT_IR_SUB, ingot_ir_add(f, var(ctx, s), F32(1.0)),
                                           ingot_ir_cast(f, INGOT_DTYPE_F32, var(ctx, t))));
  ingot_ir_expr_t* far = bin(
      ctx, INGOT_IR_SUB,
      ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_mul(f, bin(ctx, INGOT_IR_SUB, ingot_ir_mul(f, F32(a), u2), F32(5 * a)), u3), F32(8 * a)),
                   u4),
      F32(4 * a));
  ingot_ir_expr_t* outer = bin(ctx, INGOT_IR_OR, bin(ctx, INGOT_IR_EQ, var(ctx, t), ingot_ir_int(f, 0)),
                               bin(ctx, INGOT_IR_EQ, var(ctx, t), ingot_ir_int(f, 3)));
  return ingot_ir_select(f, outer, far, near);
}

ingot_status_t lower_gridsample(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0), g = lower_input(ctx, 1), y = ctx->node->outputs[0];
  if ((s = lower_check_value(ctx, x, true)) || (s = lower_check_value(ctx, g, true)) ||
      (s = lower_check_value(ctx, y, true)) || (s = lower_refuse_activation(ctx))) {
    return s;
  }
  const ingot_grid_params_t* gp = &ctx->params->u.grid; /* graph/params.c */
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  int32_t k = xv->rank - 2;
  int64_t batch = xv->dims[0], channels = xv->dims[1], in_sp = 1, out_sp = 1;
  for (int32_t i = 0; i < k; ++i) in_sp *= xv->dims[2 + i], out_sp *= yv->dims[2 + i];
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t bg = lower_add_input(ctx, g, "grid");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  int64_t taps = gp->mode == INGOT_GRID_NEAREST ? 1 : gp->mode == INGOT_GRID_LINEAR ? 2 : 4;

  uint32_t p = lower_add_var(ctx, "p", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t c = lower_add_var(ctx, "c", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t acc = lower_add_var(ctx, "acc", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
  uint32_t xc[3], fr[3], base[3], tap[3], idx[3], wt[3], ok[3];
  ingot_ir_stmt_t* outer[3 * 20 + 2];
  uint32_t no = 0;
  for (int32_t i = 0; i < k; ++i) {
    double len = (double)xv->dims[2 + i];
    double lo = gp->align_corners ? 0.0 : -0.5, hi = gp->align_corners ? len - 1 : len - 0.5;
    xc[i] = lower_add_var(ctx, ingot_arena_printf(ctx->arena, "x%d", i), INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
    fr[i] = lower_add_var(ctx, ingot_arena_printf(ctx->arena, "s%d", i), INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
    base[i] = lower_add_var(ctx, ingot_arena_printf(ctx->arena, "b%d", i), INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64);
    /* the grid's last axis holds x (the innermost spatial axis) first */
    ingot_ir_expr_t* gi = ingot_ir_add(f, ingot_ir_mul(f, var(ctx, p), ingot_ir_int(f, k)), ingot_ir_int(f, k - 1 - i));
    ingot_ir_expr_t* gv = ingot_ir_add(f, ingot_ir_load(f, bg, gi), F32(1.0));
    ingot_ir_expr_t* xe = gp->align_corners ? ingot_ir_mul(f, gv, F32((len - 1) / 2.0))
                                            : bin(ctx, INGOT_IR_DIV, bin(ctx, INGOT_IR_SUB, ingot_ir_mul(f, gv, F32(len)), F32(1.0)), F32(2.0));
    if (gp->mode == INGOT_GRID_NEAREST) xe = ingot_ir_unary(f, INGOT_IR_ROUND, xe);
    outer[no++] = ingot_ir_local(f, xc[i], xe);
    if (gp->padding == INGOT_GRID_BORDER) {
      ingot_ir_expr_t* out = bin(ctx, INGOT_IR_OR, bin(ctx, INGOT_IR_LT, var(ctx, xc[i]), F32(lo)),
                                 bin(ctx, INGOT_IR_LT, F32(hi), var(ctx, xc[i])));
      ingot_ir_expr_t* clamped = bin(ctx, INGOT_IR_MIN, bin(ctx, INGOT_IR_MAX, var(ctx, xc[i]), F32(0.0)), F32(len - 1));
      outer[no++] = ingot_ir_assign(f, xc[i], ingot_ir_select(f, out, clamped, var(ctx, xc[i])));
    } else if (gp->padding == INGOT_GRID_REFLECTION) {
      reflect_into(ctx, xc[i], lo, hi, ingot_arena_printf(ctx->arena, "%d", i), outer, &no);
    }
    ingot_ir_expr_t* fl = ingot_ir_unary(f, INGOT_IR_FLOOR, var(ctx, xc[i]));
    outer[no++] = ingot_ir_local(f, fr[i], bin(ctx, INGOT_IR_SUB, var(ctx, xc[i]), fl));
    ingot_ir_expr_t* b = ingot_ir_cast(f, INGOT_DTYPE_I64, ingot_ir_unary(f, INGOT_IR_FLOOR, var(ctx, xc[i])));
    if (gp->mode == INGOT_GRID_CUBIC) b = ingot_ir_add(f, b, ingot_ir_int(f, -1));
    outer[no++] = ingot_ir_local(f, base[i], b);
  }

  /* The taps: per axis a loop, its index (padded) and weight as locals. */
  ingot_ir_expr_t* xflat = ingot_ir_mul(
      f, ingot_ir_add(f, ingot_ir_mul(f, bin(ctx, INGOT_IR_DIV, var(ctx, p), ingot_ir_int(f, out_sp)), ingot_ir_int(f, channels)),
                      var(ctx, c)),
      ingot_ir_int(f, in_sp));
  ingot_ir_expr_t* weight = NULL;
  ingot_ir_expr_t* valid = NULL;
  for (int32_t i = 0; i < k; ++i) {
    int64_t len = xv->dims[2 + i], stride = 1;
    for (int32_t j = i + 1; j < k; ++j) stride *= xv->dims[2 + j];
    tap[i] = lower_add_var(ctx, ingot_arena_printf(ctx->arena, "t%d", i), INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    idx[i] = lower_add_var(ctx, ingot_arena_printf(ctx->arena, "j%d", i), INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64);
    wt[i] = lower_add_var(ctx, ingot_arena_printf(ctx->arena, "w%d", i), INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
    ok[i] = lower_add_var(ctx, ingot_arena_printf(ctx->arena, "in%d", i), INGOT_IR_VAR_LOCAL, INGOT_DTYPE_BOOL);
    xflat = ingot_ir_add(f, xflat, ingot_ir_mul(f, var(ctx, idx[i]), ingot_ir_int(f, stride)));
    (void)len;
    weight = weight ? ingot_ir_mul(f, weight, var(ctx, wt[i])) : var(ctx, wt[i]);
    if (gp->padding == INGOT_GRID_ZEROS) valid = valid ? bin(ctx, INGOT_IR_AND, valid, var(ctx, ok[i])) : var(ctx, ok[i]);
  }
  ingot_ir_expr_t* pix = ingot_ir_load(f, bx, xflat);
  if (valid) pix = ingot_ir_select(f, valid, pix, F32(0.0));
  ingot_ir_stmt_t* inner = ingot_ir_assign(f, acc, ingot_ir_add(f, var(ctx, acc), gp->mode == INGOT_GRID_NEAREST ? pix : ingot_ir_mul(f, weight, pix)));
  for (int32_t i = k; i-- > 0;) {
    int64_t len = xv->dims[2 + i];
    double lo = gp->align_corners ? 0.0 : -0.5, hi = gp->align_corners ? (double)len - 1 : (double)len - 0.5;
    ingot_ir_stmt_t* st[12];
    uint32_t ns = 0;
    uint32_t raw = lower_add_var(ctx, ingot_arena_printf(ctx->arena, "q%d", i), INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64);
    st[ns++] = ingot_ir_local(f, raw, ingot_ir_add(f, var(ctx, base[i]), var(ctx, tap[i])));
    st[ns++] = ingot_ir_local(f, ok[i], bin(ctx, INGOT_IR_AND, bin(ctx, INGOT_IR_LE, ingot_ir_int(f, 0), var(ctx, raw)),
                                            bin(ctx, INGOT_IR_LT, var(ctx, raw), ingot_ir_int(f, len))));
    if (gp->padding == INGOT_GRID_REFLECTION) {
      uint32_t rf = lower_add_var(ctx, ingot_arena_printf(ctx->arena, "rf%d", i), INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
      st[ns++] = ingot_ir_local(f, rf, ingot_ir_cast(f, INGOT_DTYPE_F32, var(ctx, raw)));
      reflect_into(ctx, rf, lo, hi, ingot_arena_printf(ctx->arena, "t%d", i), st, &ns);
      st[ns++] = ingot_ir_local(f, idx[i], clamp_i64(ctx, ingot_ir_cast(f, INGOT_DTYPE_I64, var(ctx, rf)), len - 1));
    } else {
      st[ns++] = ingot_ir_local(f, idx[i], clamp_i64(ctx, var(ctx, raw), len - 1));
    }
    ingot_ir_expr_t* w;
    if (gp->mode == INGOT_GRID_LINEAR) {
      w = ingot_ir_select(f, bin(ctx, INGOT_IR_EQ, var(ctx, tap[i]), ingot_ir_int(f, 0)),
                          bin(ctx, INGOT_IR_SUB, F32(1.0), var(ctx, fr[i])), var(ctx, fr[i]));
    } else if (gp->mode == INGOT_GRID_CUBIC) {
      w = cubic_weight(ctx, fr[i], tap[i]);
    } else {
      w = F32(1.0);
    }
    st[ns++] = ingot_ir_local(f, wt[i], w);
    st[ns++] = inner;
    inner = ingot_ir_for(f, tap[i], taps, ingot_ir_block(f, st, ns));
  }
  ingot_ir_expr_t* yflat =
      ingot_ir_add(f,
                   ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_mul(f, bin(ctx, INGOT_IR_DIV, var(ctx, p), ingot_ir_int(f, out_sp)), ingot_ir_int(f, channels)),
                                                var(ctx, c)),
                                ingot_ir_int(f, out_sp)),
                   bin(ctx, INGOT_IR_MOD, var(ctx, p), ingot_ir_int(f, out_sp)));
  ingot_ir_stmt_t* per_c[3] = {ingot_ir_local(f, acc, F32(0.0)), inner, ingot_ir_store(f, by, yflat, var(ctx, acc))};
  outer[no++] = ingot_ir_for(f, c, channels, ingot_ir_block(f, per_c, 3));
  lower_emit_other(ctx, ingot_ir_for(f, p, batch * out_sp, ingot_ir_block(f, outer, no)));
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE; /* one OTHER stage: the template parallelizes its outer loop */
  static const char* const kMode[] = {"linear", "nearest", "cubic"};
  static const char* const kPad[] = {"zeros", "border", "reflection"};
  ctx->workload = ingot_arena_printf(ctx->arena, "gridsample%dd f32 x=%s grid=%s %s %s align%d", k, lower_shape_str(ctx, x),
                                     lower_shape_str(ctx, g), kMode[gp->mode], kPad[gp->padding], gp->align_corners ? 1 : 0);
  return INGOT_OK;
}

ingot_status_t lower_affinegrid(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t th = lower_input(ctx, 0), y = ctx->node->outputs[0];
  if ((s = lower_check_value_dt(ctx, th, LOWER_DT_FLOAT)) || (s = lower_check_value(ctx, y, false)) ||
      (s = lower_refuse_activation(ctx))) {
    return s;
  }
  bool align = ctx->params->u.grid.align_corners; /* graph/params.c */
  const ingot_value_t* yv = lower_value(ctx, y);
  ingot_dtype_t dt = yv->dtype;
  int32_t k = yv->rank - 2;
  uint32_t bt = lower_add_input(ctx, th, "theta");
  uint32_t by = lower_add_output(ctx, y, "grid");
  ingot_ir_func_t* f = ctx->f;
  lower_loops_t l;
  lower_loops_over(ctx, &l, yv->rank, yv->dims);
  ingot_ir_expr_t* n = l.idx[0];
  ingot_ir_expr_t* comp = l.idx[k + 1];
  /* theta[n, comp, j] at flat (n * k + comp) * (k + 1) + j */
  ingot_ir_expr_t* v = NULL;
  for (int32_t j = 0; j <= k; ++j) {
    ingot_ir_expr_t* row = ingot_ir_add(f, ingot_ir_mul(f, n, ingot_ir_int(f, k)), comp);
    ingot_ir_expr_t* t = ingot_ir_load(f, bt, ingot_ir_add(f, ingot_ir_mul(f, row, ingot_ir_int(f, k + 1)), ingot_ir_int(f, j)));
    if (j < k) {
      /* a_j: coordinate j is x (the innermost spatial axis) first */
      int32_t axis = k - j; /* loop index 1..k: d, h, w */
      double len = (double)yv->dims[axis];
      ingot_ir_expr_t* i = ingot_ir_cast(f, dt, l.idx[axis]);
      ingot_ir_expr_t* a;
      if (align) {
        a = len > 1 ? ingot_ir_add(f, lower_const(ctx, dt, -1.0), ingot_ir_mul(f, i, lower_const(ctx, dt, 2.0 / (len - 1))))
                    : lower_const(ctx, dt, -1.0);
      } else {
        a = ingot_ir_add(f, lower_const(ctx, dt, -1.0),
                         ingot_ir_binary(f, INGOT_IR_DIV,
                                         ingot_ir_add(f, ingot_ir_mul(f, i, lower_const(ctx, dt, 2.0)), lower_const(ctx, dt, 1.0)),
                                         lower_const(ctx, dt, len)));
      }
      t = ingot_ir_mul(f, t, a);
    }
    v = v ? ingot_ir_add(f, v, t) : t;
  }
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &l, NULL, ingot_ir_store(f, by, ingot_ir_flat_index(f, by, l.idx), v));
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE;
  ctx->workload = ingot_arena_printf(ctx->arena, "affinegrid%dd %s out=%s align%d", k, ingot_dtype_name(dt),
                                     lower_shape_str(ctx, y), align ? 1 : 0);
  return INGOT_OK;
}

/* ---- RoiAlign ----
 *
 * As ONNX's reference (onnx/reference/ops/op_roi_align.py), in X's dtype,
 * one OTHER stage:
 *   for r over the ROIs:                              (spatial: independent)
 *     n = batch_indices[r], clamped into [0, N)
 *     x0, y0 = rois[r, 0..1] * spatial_scale (- 0.5 with half_pixel)
 *     rw, rh = rois[r, 2..3] * spatial_scale (- 0.5) - x0, y0
 *              (output_half_pixel: at least 1)
 *     bw, bh = rw / OW, rh / OH                        (the bin size)
 *     gw, gh = sampling_ratio, or ceil(bw), ceil(bh) clamped into [0, GW], [0, GH]
 *     for ph, pw over the bins:
 *       for c: Y[r, c, ph, pw] = 0 (avg) or -inf (max)
 *       for iy < GH: if iy < gh:
 *         yy = y0 + ph * bh + (iy + 0.5) * bh / gh
 *         the rows below and above yy and the weights ly, hy (see below)
 *         for ix < GW: if ix < gw:
 *           xx, the columns and lx, hx likewise
 *           w1..w4 = hy*hx, hy*lx, ly*hx, ly*lx; all 0 when the point lies
 *             outside [-1, H] x [-1, W]
 *           for c: t_k = w_k * X[n, c, corner k]
 *             avg: Y += t1 + t2 + t3 + t4; max: Y = max(Y, t1, t2, t3, t4)
 *       for c: avg: Y /= max(gh * gw, 1); max, adaptive: Y = 0 when no point
 *         (a ROI of negative size, which half_pixel allows, has none: 0, as
 *         the reference)
 * A coordinate v (yy or xx over an axis of length L) samples rows (columns)
 * lo = min(int(max(v, 0)), L - 1) and min(lo + 1, L - 1) with weight
 * l = max(v, 0) - lo on the second (0 when int(max(v, 0)) >= L - 1), h = 1 - l.
 * In max mode each point gives the largest of its four weighted corners,
 * as ONNX Runtime's kernel and the reference do (not the largest
 * interpolated value).
 *
 * The points of a bin are computed once and shared by the channels, as the
 * reference's pre_calc. Loops have constant extents in the IR, so with
 * sampling_ratio 0 (adaptive, known per ROI only at run time) the point
 * loops run to GH = ceil(H / OH) + 1 and GW = ceil(W / OW) + 1 and skip
 * the points past gh, gw: every ROI inside the feature map (of size up to
 * H x W once scaled) gets exactly the reference's points (the + 1 covers a
 * size that rounding pushed just past H). A larger ROI is sampled with GH x
 * GW points a bin (evenly spread over the bin, its average taken over them):
 * coarser than the reference there.
 *
 * Run-time data is guarded as Gather's indices are (lower/lower_data.c): a
 * batch index outside [0, N) reads batch 0 or N - 1, and every corner is
 * clamped into the image, so no load leaves X whatever the ROIs hold. */
/* The locals of one sampling coordinate over an axis of length `len`. */
typedef struct ra_axis_t {
  uint32_t pos, out, raw, lo, hi, l, h;
} ra_axis_t;

/* Appends to body[*nb] the statements that declare a's locals from the
 * coordinate in local a->pos (declared by the caller). */
static void ra_axis(lower_ctx_t* ctx, ra_axis_t* a, const char* tag, int64_t len, ingot_dtype_t dt,
                    ingot_ir_stmt_t** body, uint32_t* nb) {
  ingot_ir_func_t* f = ctx->f;
  ingot_arena_t* ar = ctx->arena;
  a->out = lower_add_var(ctx, ingot_arena_printf(ar, "%sout", tag), INGOT_IR_VAR_LOCAL, INGOT_DTYPE_BOOL);
  a->raw = lower_add_var(ctx, ingot_arena_printf(ar, "%sraw", tag), INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64);
  a->lo = lower_add_var(ctx, ingot_arena_printf(ar, "%slo", tag), INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64);
  a->hi = lower_add_var(ctx, ingot_arena_printf(ar, "%shi", tag), INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64);
  a->l = lower_add_var(ctx, ingot_arena_printf(ar, "%sl", tag), INGOT_IR_VAR_LOCAL, dt);
  a->h = lower_add_var(ctx, ingot_arena_printf(ar, "%sh", tag), INGOT_IR_VAR_LOCAL, dt);
  /* outside: v < -1 || v > len (the reference's test, NaN inside) */
  body[(*nb)++] = ingot_ir_local(f, a->out, bin(ctx, INGOT_IR_OR, bin(ctx, INGOT_IR_LT, var(ctx, a->pos), lower_const(ctx, dt, -1.0)),
                                                bin(ctx, INGOT_IR_LT, lower_const(ctx, dt, (double)len), var(ctx, a->pos))));
  body[(*nb)++] = ingot_ir_assign(f, a->pos, bin(ctx, INGOT_IR_MAX, var(ctx, a->pos), lower_const(ctx, dt, 0.0)));
  /* truncation = floor for v >= 0; an out-of-range cast is frozen and the
   * clamp keeps the corner inside the axis */
  body[(*nb)++] = ingot_ir_local(f, a->raw, ingot_ir_cast(f, INGOT_DTYPE_I64, var(ctx, a->pos)));
  body[(*nb)++] = ingot_ir_local(f, a->lo, clamp_i64(ctx, var(ctx, a->raw), len - 1));
  body[(*nb)++] = ingot_ir_local(f, a->hi, bin(ctx, INGOT_IR_MIN, ingot_ir_add(f, var(ctx, a->lo), ingot_ir_int(f, 1)),
                                               ingot_ir_int(f, len - 1)));
  body[(*nb)++] = ingot_ir_local(f, a->l, ingot_ir_select(f, bin(ctx, INGOT_IR_LE, ingot_ir_int(f, len - 1), var(ctx, a->raw)),
                                                          lower_const(ctx, dt, 0.0),
                                                          bin(ctx, INGOT_IR_SUB, var(ctx, a->pos),
                                                              ingot_ir_cast(f, dt, var(ctx, a->lo)))));
  body[(*nb)++] = ingot_ir_local(f, a->h, bin(ctx, INGOT_IR_SUB, lower_const(ctx, dt, 1.0), var(ctx, a->l)));
}

ingot_status_t lower_roialign(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0), rois = lower_input(ctx, 1), bidx = lower_input(ctx, 2), y = ctx->node->outputs[0];
  if ((s = lower_check_value_dt(ctx, x, LOWER_DT_FLOAT)) || (s = lower_check_value_dt(ctx, rois, LOWER_DT_FLOAT)) ||
      (s = lower_check_value_dt(ctx, bidx, LOWER_DT(INGOT_DTYPE_I64))) ||
      (s = lower_check_value_dt(ctx, y, LOWER_DT_FLOAT)) || (s = lower_refuse_activation(ctx))) {
    return s;
  }
  const ingot_roialign_params_t* rp = &ctx->params->u.roialign; /* graph/params.c */
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  ingot_dtype_t dt = xv->dtype;
  if (xv->rank != 4 || yv->rank != 4 || lower_value(ctx, rois)->dtype != dt || yv->dtype != dt ||
      yv->dims[1] != xv->dims[1] || yv->dims[2] != rp->output_height || yv->dims[3] != rp->output_width) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "shapes or dtypes do not fit RoiAlign");
  }
  int64_t batch = xv->dims[0], chans = xv->dims[1], height = xv->dims[2], width = xv->dims[3];
  int64_t nroi = yv->dims[0], oh = yv->dims[2], ow = yv->dims[3];
  bool adaptive = rp->sampling_ratio == 0;
  int64_t grid_h = adaptive ? (height + oh - 1) / oh + 1 : rp->sampling_ratio;
  int64_t grid_w = adaptive ? (width + ow - 1) / ow + 1 : rp->sampling_ratio;
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t brois = lower_add_input(ctx, rois, "rois");
  uint32_t bbi = lower_add_input(ctx, bidx, "batch_indices");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
#define K(v) lower_const(ctx, dt, (v))
#define I(v) ingot_ir_int(f, (v))
#define V(v) var(ctx, (v))
#define LOCAL(name, type) lower_add_var(ctx, (name), INGOT_IR_VAR_LOCAL, (type))
#define LOOP(name) lower_add_var(ctx, (name), INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64)

  uint32_t r = LOOP("r"), ph = LOOP("ph"), pw = LOOP("pw"), iy = LOOP("iy"), ix = LOOP("ix");
  uint32_t c_init = LOOP("c0"), c_acc = LOOP("c"), c_fin = LOOP("c1");
  uint32_t n = LOCAL("n", INGOT_DTYPE_I64), x0 = LOCAL("x0", dt), y0 = LOCAL("y0", dt), rw = LOCAL("rw", dt),
           rh = LOCAL("rh", dt), bw = LOCAL("bw", dt), bh = LOCAL("bh", dt);
  uint32_t gh = LOCAL("gh", INGOT_DTYPE_I64), gw = LOCAL("gw", INGOT_DTYPE_I64), cnt = LOCAL("count", dt);
  ra_axis_t ay = {.pos = LOCAL("yy", dt)}, ax = {.pos = LOCAL("xx", dt)};
  uint32_t wk[4];
  for (int i = 0; i < 4; ++i) wk[i] = LOCAL(ingot_arena_printf(ctx->arena, "w%d", i + 1), dt);

  /* per ROI */
  ingot_ir_stmt_t* roi[16];
  uint32_t nr = 0;
  roi[nr++] = ingot_ir_local(f, n, clamp_i64(ctx, ingot_ir_load(f, bbi, V(r)), batch - 1));
  double off = rp->half_pixel ? 0.5 : 0.0;
  uint32_t corner_var[4] = {x0, y0, rw, rh};
  for (int k = 0; k < 4; ++k) {
    ingot_ir_expr_t* e = ingot_ir_mul(f, ingot_ir_load(f, brois, ingot_ir_add(f, ingot_ir_mul(f, V(r), I(4)), I(k))),
                                      K(rp->spatial_scale));
    if (off != 0.0) e = bin(ctx, INGOT_IR_SUB, e, K(off));
    if (k >= 2) e = bin(ctx, INGOT_IR_SUB, e, V(corner_var[k - 2])); /* end - start */
    if (k >= 2 && !rp->half_pixel) e = bin(ctx, INGOT_IR_MAX, e, K(1.0)); /* malformed ROIs become 1x1 */
    roi[nr++] = ingot_ir_local(f, corner_var[k], e);
  }
  roi[nr++] = ingot_ir_local(f, bh, bin(ctx, INGOT_IR_DIV, V(rh), K((double)oh)));
  roi[nr++] = ingot_ir_local(f, bw, bin(ctx, INGOT_IR_DIV, V(rw), K((double)ow)));
  if (adaptive) {
    roi[nr++] = ingot_ir_local(f, gh, clamp_i64(ctx, ingot_ir_cast(f, INGOT_DTYPE_I64, ingot_ir_unary(f, INGOT_IR_CEIL, V(bh))), grid_h));
    roi[nr++] = ingot_ir_local(f, gw, clamp_i64(ctx, ingot_ir_cast(f, INGOT_DTYPE_I64, ingot_ir_unary(f, INGOT_IR_CEIL, V(bw))), grid_w));
  } else {
    roi[nr++] = ingot_ir_local(f, gh, I(grid_h));
    roi[nr++] = ingot_ir_local(f, gw, I(grid_w));
  }
  roi[nr++] = ingot_ir_local(f, cnt, ingot_ir_cast(f, dt, bin(ctx, INGOT_IR_MAX, ingot_ir_mul(f, V(gh), V(gw)), I(1))));

  /* Y[r, c, ph, pw] for channel loop c */
#define YI(c) ingot_ir_add(f, ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_mul(f, V(r), I(chans)), V(c)), I(oh)), V(ph)), I(ow)), V(pw))
  ingot_ir_stmt_t* init =
      ingot_ir_for(f, c_init, chans, ingot_ir_store(f, by, YI(c_init), K(rp->max_mode ? -(double)INFINITY : 0.0)));

  /* per row of points (iy): yy and its rows and weights */
  ingot_ir_stmt_t* py[12];
  uint32_t npy = 0;
  py[npy++] = ingot_ir_local(
      f, ay.pos,
      ingot_ir_add(f, ingot_ir_add(f, V(y0), ingot_ir_mul(f, ingot_ir_cast(f, dt, V(ph)), V(bh))),
                   bin(ctx, INGOT_IR_DIV, ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_cast(f, dt, V(iy)), K(0.5)), V(bh)),
                       ingot_ir_cast(f, dt, V(gh)))));
  ra_axis(ctx, &ay, "y", height, dt, py, &npy);
  /* per point (ix) */
  ingot_ir_stmt_t* px[16];
  uint32_t npx = 0;
  /* xx = x0 + pw * bw + (ix + 0.5) * bw / gw */
  px[npx++] = ingot_ir_local(
      f, ax.pos,
      ingot_ir_add(f, ingot_ir_add(f, V(x0), ingot_ir_mul(f, ingot_ir_cast(f, dt, V(pw)), V(bw))),
                   bin(ctx, INGOT_IR_DIV, ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_cast(f, dt, V(ix)), K(0.5)), V(bw)),
                       ingot_ir_cast(f, dt, V(gw)))));
  ra_axis(ctx, &ax, "x", width, dt, px, &npx);
  /* per channel at one point */
  ingot_ir_expr_t* t[4];
  uint32_t rows[4] = {ay.lo, ay.lo, ay.hi, ay.hi}, cols[4] = {ax.lo, ax.hi, ax.lo, ax.hi};
  for (int k = 0; k < 4; ++k) {
    ingot_ir_expr_t* plane = ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_mul(f, V(n), I(chans)), V(c_acc)), I(height));
    ingot_ir_expr_t* xi = ingot_ir_add(f, ingot_ir_mul(f, ingot_ir_add(f, plane, V(rows[k])), I(width)), V(cols[k]));
    t[k] = ingot_ir_mul(f, V(wk[k]), ingot_ir_load(f, bx, xi));
  }
  ingot_ir_expr_t* v;
  if (rp->max_mode) {
    v = bin(ctx, INGOT_IR_MAX, bin(ctx, INGOT_IR_MAX, bin(ctx, INGOT_IR_MAX, t[0], t[1]), t[2]), t[3]);
    v = bin(ctx, INGOT_IR_MAX, ingot_ir_load(f, by, YI(c_acc)), v);
  } else {
    v = ingot_ir_add(f, ingot_ir_load(f, by, YI(c_acc)), ingot_ir_add(f, ingot_ir_add(f, ingot_ir_add(f, t[0], t[1]), t[2]), t[3]));
  }
  ingot_ir_stmt_t* per_c = ingot_ir_for(f, c_acc, chans, ingot_ir_store(f, by, YI(c_acc), v));
  /* the weights (0 outside) */
  uint32_t hl[4][2] = {{ay.h, ax.h}, {ay.h, ax.l}, {ay.l, ax.h}, {ay.l, ax.l}};
  for (int k = 0; k < 4; ++k) {
    px[npx++] = ingot_ir_local(f, wk[k], ingot_ir_select(f, bin(ctx, INGOT_IR_OR, V(ay.out), V(ax.out)), K(0.0),
                                                         ingot_ir_mul(f, V(hl[k][0]), V(hl[k][1]))));
  }
  px[npx++] = per_c;
  ingot_ir_stmt_t* point = ingot_ir_block(f, px, npx);
  if (adaptive) point = ingot_ir_if(f, bin(ctx, INGOT_IR_LT, V(ix), V(gw)), point);
  py[npy++] = ingot_ir_for(f, ix, grid_w, point);
  ingot_ir_stmt_t* row = ingot_ir_block(f, py, npy);
  if (adaptive) row = ingot_ir_if(f, bin(ctx, INGOT_IR_LT, V(iy), V(gh)), row);

  /* per bin */
  ingot_ir_stmt_t* bin_body[3];
  uint32_t nbin = 0;
  bin_body[nbin++] = init;
  bin_body[nbin++] = ingot_ir_for(f, iy, grid_h, row);
  if (!rp->max_mode) {
    bin_body[nbin++] = ingot_ir_for(f, c_fin, chans, ingot_ir_store(f, by, YI(c_fin), bin(ctx, INGOT_IR_DIV, ingot_ir_load(f, by, YI(c_fin)), V(cnt))));
  } else if (adaptive) { /* no point (an empty ROI): 0, as the reference */
    ingot_ir_expr_t* any = bin(ctx, INGOT_IR_AND, bin(ctx, INGOT_IR_LT, I(0), V(gh)), bin(ctx, INGOT_IR_LT, I(0), V(gw)));
    bin_body[nbin++] = ingot_ir_for(f, c_fin, chans, ingot_ir_store(f, by, YI(c_fin), ingot_ir_select(f, any, ingot_ir_load(f, by, YI(c_fin)), K(0.0))));
  }
  roi[nr++] = ingot_ir_for(f, ph, oh, ingot_ir_for(f, pw, ow, ingot_ir_block(f, bin_body, nbin)));
  lower_emit_other(ctx, ingot_ir_for(f, r, nroi, ingot_ir_block(f, roi, nr)));
#undef YI
#undef K
#undef I
#undef V
#undef LOCAL
#undef LOOP
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE; /* one OTHER stage: the template parallelizes its outer loop */
  ctx->workload = ingot_arena_printf(ctx->arena, "roialign %s x=%s rois=%s out=%lldx%lld %s %s sampling%lld scale%.9g",
                                     ingot_dtype_name(dt), lower_shape_str(ctx, x), lower_shape_str(ctx, rois),
                                     (long long)oh, (long long)ow, rp->max_mode ? "max" : "avg",
                                     rp->half_pixel ? "half_pixel" : "output_half_pixel", (long long)rp->sampling_ratio,
                                     rp->spatial_scale);
  return INGOT_OK;
}
