/* Sampling on a grid: GridSample (2-D and 3-D; linear, nearest, cubic;
 * zeros, border and reflection padding; align_corners) and AffineGrid.
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
