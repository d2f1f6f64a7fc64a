/* Pooling: MaxPool (float32, and uint8/int8; the Indices output too, as one
 * OTHER stage described at its code), AveragePool (pads, strides,
 * dilations, ceil_mode, count_include_pad), LpPool (p), GlobalAveragePool,
 * GlobalMaxPool and GlobalLpPool.
 *
 *   UPDATE  max:     y = max(start, valid ? x[clamped] : lowest)
 *           average: y = start + (valid ? x[clamped] : 0)
 *           Lp:      y = start + (valid ? |x[clamped]|^p : 0)
 *           spatial (n, c, o..), reduce (r..); start is the lowest value
 *           (max) or 0 on the first tap, y after (lower_update_start)
 *   FINISH  average: y = y / count(o..); Lp: y^(1/p); then a fused activation
 *
 * The average's divisor counts the taps inside the input (count_include_pad=0)
 * or inside the padded input [-pad_begin, in + pad_end) (count_include_pad=1);
 * taps past the padded end (ceil_mode) never count. When the count is the
 * same for every output position it is a constant; otherwise it is computed
 * per axis in closed form from the output index.
 *
 * LRN is a sum pool across channels:
 *   UPDATE  y = start + (0 <= c' < C ? x[n, c', d..]^2 : 0),
 *           c' = c - floor((size - 1) / 2) + r, r in [0, size)
 *   FINISH  y = x / (bias + alpha / size * y)^beta */
#include <math.h>
#include <string.h>

#include "lower_internal.h"

static int64_t floor_div64(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

/* Number of taps r in [0, k) with lo <= o*s - pad + r*d < hi. */
static int64_t taps_in_range(int64_t o, int64_t s, int64_t pad, int64_t d, int64_t k, int64_t lo, int64_t hi) {
  int64_t base = o * s - pad;
  int64_t r_lo = -floor_div64(base - lo, d); /* ceil((lo - base) / d) */
  int64_t r_hi = floor_div64(hi - 1 - base, d);
  if (r_lo < 0) r_lo = 0;
  if (r_hi > k - 1) r_hi = k - 1;
  return r_hi >= r_lo ? r_hi - r_lo + 1 : 0;
}

/* The same count as an IR expression of the output index `o`. */
static ingot_ir_expr_t* taps_expr(lower_ctx_t* ctx, ingot_ir_expr_t* o, int64_t s, int64_t pad, int64_t d, int64_t k,
                                  int64_t lo, int64_t hi) {
  ingot_ir_func_t* f = ctx->f;
  ingot_ir_expr_t* base = ingot_ir_add(f, ingot_ir_mul(f, o, ingot_ir_int(f, s)), ingot_ir_int(f, -pad));
  ingot_ir_expr_t* neg_base = ingot_ir_mul(f, base, ingot_ir_int(f, -1));
  /* r_lo = ceil((lo - base) / d) = floor((lo - base + d - 1) / d) */
  ingot_ir_expr_t* r_lo =
      ingot_ir_binary(f, INGOT_IR_DIV, ingot_ir_add(f, neg_base, ingot_ir_int(f, lo + d - 1)), ingot_ir_int(f, d));
  r_lo = ingot_ir_binary(f, INGOT_IR_MAX, r_lo, ingot_ir_int(f, 0));
  ingot_ir_expr_t* r_hi =
      ingot_ir_binary(f, INGOT_IR_DIV, ingot_ir_add(f, neg_base, ingot_ir_int(f, hi - 1)), ingot_ir_int(f, d));
  r_hi = ingot_ir_binary(f, INGOT_IR_MIN, r_hi, ingot_ir_int(f, k - 1));
  ingot_ir_expr_t* n = ingot_ir_add(f, ingot_ir_binary(f, INGOT_IR_SUB, r_hi, r_lo), ingot_ir_int(f, 1));
  return ingot_ir_binary(f, INGOT_IR_MAX, n, ingot_ir_int(f, 0));
}

/* |v|^p for the Lp pools (p = 1, 2 without pow). */
static ingot_ir_expr_t* lp_term(lower_ctx_t* ctx, ingot_ir_expr_t* v, int64_t p) {
  ingot_ir_func_t* f = ctx->f;
  if (p == 2) return ingot_ir_mul(f, v, v);
  ingot_ir_expr_t* a = ingot_ir_unary(f, INGOT_IR_ABS, v);
  return p == 1 ? a : ingot_ir_binary(f, INGOT_IR_POW, a, lower_f32(ctx, (double)p));
}

static ingot_ir_expr_t* lp_root(lower_ctx_t* ctx, ingot_ir_expr_t* v, int64_t p) {
  ingot_ir_func_t* f = ctx->f;
  if (p == 1) return v;
  if (p == 2) return ingot_ir_unary(f, INGOT_IR_SQRT, v);
  return ingot_ir_binary(f, INGOT_IR_POW, v, lower_f32(ctx, 1.0 / (double)p));
}

/* The lowest value of a MaxPool dtype (float32, uint8, int8). */
static ingot_ir_expr_t* pool_lowest(lower_ctx_t* ctx, ingot_dtype_t dt) {
  ingot_ir_func_t* f = ctx->f;
  if (dt == INGOT_DTYPE_U8) return ingot_ir_cast(f, dt, ingot_ir_int(f, 0));
  if (dt == INGOT_DTYPE_I8) return ingot_ir_cast(f, dt, ingot_ir_int(f, -128));
  return lower_f32(ctx, -INFINITY);
}

ingot_status_t lower_pool(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  bool is_max = node->op == INGOT_OP_MAXPOOL;
  bool is_lp = node->op == INGOT_OP_LPPOOL;
  uint32_t x = lower_input(ctx, 0);
  uint32_t y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  /* The window, ceil_mode, storage_order, count_include_pad and p were read
   * and checked at shape inference (node.params, graph/params.c). */
  const ingot_pool_params_t* pp = &ctx->params->u.pool;
  int64_t lp = pp->p;
  bool int_ok = is_max && lower_value(ctx, x)->dtype != INGOT_DTYPE_F32 &&
                (lower_value(ctx, x)->dtype == INGOT_DTYPE_U8 || lower_value(ctx, x)->dtype == INGOT_DTYPE_I8);
  if ((s = lower_check_value(ctx, x, !int_ok)) || (s = lower_check_value(ctx, y, !int_ok))) return s;
  if (int_ok && (lower_value(ctx, y)->dtype != lower_value(ctx, x)->dtype || lower_has_activation(ctx))) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "integer MaxPool needs an output of the input's type and no fused activation");
  }
  ingot_dtype_t dt = lower_value(ctx, x)->dtype;
  uint32_t ind = is_max && node->output_count > 1 ? node->outputs[1] : INGOT_NO_VALUE;
  if (ind != INGOT_NO_VALUE) {
    if ((s = lower_check_value(ctx, ind, false))) return s;
    if (lower_value(ctx, ind)->dtype != INGOT_DTYPE_I64 || lower_has_activation(ctx)) {
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "Indices must be int64 (and no fused activation)");
    }
  }
  int64_t storage_order = pp->storage_order;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  if (xv->rank < 3 || xv->rank > 5) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "input rank %d is not supported (1-D, 2-D or 3-D pooling)",
                      xv->rank);
  }
  uint32_t nsp = (uint32_t)xv->rank - 2;
  if (yv->rank != xv->rank || yv->dims[0] != xv->dims[0] || yv->dims[1] != xv->dims[1]) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "output shape %s does not fit input %s",
                      lower_shape_str(ctx, y), lower_shape_str(ctx, x));
  }
  if (pp->window.spatial != (int32_t)nsp) {
    return lower_fail(ctx, INGOT_ERROR_INTERNAL, "parameters of %d spatial axes for %ud pooling", pp->window.spatial, nsp);
  }
  const int64_t *k = pp->window.kernel, *strides = pp->window.strides, *dil = pp->window.dilations;
  const int64_t* pads = pp->window.pads;
  int64_t in_sp[3], out_sp[3];
  for (uint32_t i = 0; i < nsp; ++i) in_sp[i] = xv->dims[2 + i];
  bool ceil_mode = pp->window.ceil_mode;
  bool include_pad = pp->count_include_pad;
  for (uint32_t i = 0; i < nsp; ++i) {
    int64_t span = (k[i] - 1) * dil[i] + 1;
    int64_t total = in_sp[i] + pads[i] + pads[nsp + i] - span;
    int64_t lo = total / strides[i] + 1;
    int64_t hi = (total + strides[i] - 1) / strides[i] + 1;
    out_sp[i] = yv->dims[2 + i];
    /* ceil_mode may drop a last window that would start in the end padding
     * (onnxruntime, PyTorch); accept either count, guard every load. */
    bool fits = out_sp[i] == lo || (ceil_mode && out_sp[i] == hi);
    if (!fits) {
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT,
                        "output shape %s does not match the window (spatial axis %u: expected %lld)",
                        lower_shape_str(ctx, y), i, (long long)(ceil_mode ? hi : lo));
    }
  }

  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  if (ind != INGOT_NO_VALUE) {
    /* MaxPool with Indices: one OTHER stage, a loop over every output
     * position, the window scanned in row-major order keeping the first
     * maximum and its flat input index (N and C included; spatial part
     * row-major, or column-major for storage_order 1). */
    uint32_t bi = lower_add_output(ctx, ind, "indices");
    uint32_t p = lower_add_var(ctx, "p", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    uint32_t best = lower_add_var(ctx, "best", INGOT_IR_VAR_LOCAL, dt);
    uint32_t arg = lower_add_var(ctx, "arg", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64);
    uint32_t take = lower_add_var(ctx, "take", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_BOOL);
    ingot_ir_expr_t* pe = ingot_ir_var(f, p);
    int64_t out_total = 1, in_total = 1;
    for (uint32_t i = 0; i < nsp; ++i) out_total *= out_sp[i], in_total *= in_sp[i];
    static const char* const kTap[3] = {"r0", "r1", "r2"};
    uint32_t taps[3];
    ingot_ir_expr_t* o[3];
    int64_t rest = out_total;
    for (uint32_t i = 0; i < nsp; ++i) {
      rest /= out_sp[i];
      ingot_ir_expr_t* q = rest == 1 ? pe : ingot_ir_binary(f, INGOT_IR_DIV, pe, ingot_ir_int(f, rest));
      o[i] = ingot_ir_binary(f, INGOT_IR_MOD, q, ingot_ir_int(f, out_sp[i]));
      taps[i] = lower_add_var(ctx, kTap[i], INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    }
    ingot_ir_expr_t* nc = ingot_ir_binary(f, INGOT_IR_DIV, pe, ingot_ir_int(f, out_total));
    ingot_ir_expr_t* cond = NULL;
    ingot_ir_expr_t* xflat = ingot_ir_mul(f, nc, ingot_ir_int(f, in_total));
    ingot_ir_expr_t* iflat = xflat;
    int64_t col_stride = 1;
    for (uint32_t i = 0; i < nsp; ++i) {
      ingot_ir_expr_t* c;
      ingot_ir_expr_t* pos;
      lower_window_axis(ctx, o[i], ingot_ir_var(f, taps[i]), strides[i], pads[i], dil[i], in_sp[i], out_sp[i], k[i], &c,
                        &pos);
      cond = lower_and(ctx, cond, c);
      int64_t row_stride = 1;
      for (uint32_t j = i + 1; j < nsp; ++j) row_stride *= in_sp[j];
      xflat = ingot_ir_add(f, xflat, ingot_ir_mul(f, pos, ingot_ir_int(f, row_stride)));
      iflat = ingot_ir_add(f, iflat, ingot_ir_mul(f, pos, ingot_ir_int(f, storage_order ? col_stride : row_stride)));
      col_stride *= in_sp[i];
    }
    ingot_ir_expr_t* v = ingot_ir_load(f, bx, xflat);
    ingot_ir_expr_t* better = ingot_ir_binary(f, INGOT_IR_OR, ingot_ir_binary(f, INGOT_IR_LT, ingot_ir_var(f, best), v),
                                              ingot_ir_binary(f, INGOT_IR_LT, ingot_ir_var(f, arg), ingot_ir_int(f, 0)));
    ingot_ir_stmt_t* tap[3] = {
        ingot_ir_local(f, take, cond ? ingot_ir_binary(f, INGOT_IR_AND, cond, better) : better),
        ingot_ir_assign(f, best, ingot_ir_select(f, ingot_ir_var(f, take), v, ingot_ir_var(f, best))),
        ingot_ir_assign(f, arg, ingot_ir_select(f, ingot_ir_var(f, take), iflat, ingot_ir_var(f, arg))),
    };
    ingot_ir_stmt_t* scan = ingot_ir_block(f, tap, 3);
    for (uint32_t i = nsp; i-- > 0;) scan = ingot_ir_for(f, taps[i], k[i], scan);
    ingot_ir_stmt_t* body[5] = {
        ingot_ir_local(f, best, pool_lowest(ctx, dt)),
        ingot_ir_local(f, arg, ingot_ir_int(f, -1)),
        scan,
        ingot_ir_store(f, by, pe, ingot_ir_var(f, best)),
        ingot_ir_store(f, bi, pe, ingot_ir_var(f, arg)),
    };
    lower_emit_other(ctx, ingot_ir_for(f, p, xv->dims[0] * xv->dims[1] * out_total, ingot_ir_block(f, body, 5)));
    ctx->op_class = INGOT_OP_CLASS_POOL;
    ingot_strbuf_t sb = {0};
    ingot_strbuf_appendf(&sb, "maxpool%ud-indices %s x=%s", nsp, dt == INGOT_DTYPE_F32 ? "f32" : ingot_dtype_name(dt),
                         lower_shape_str(ctx, x));
    lower_append_ints(&sb, "k", k, nsp);
    lower_append_ints(&sb, "stride", strides, nsp);
    lower_append_ints(&sb, "pad", pads, 2 * nsp);
    lower_append_ints(&sb, "dil", dil, nsp);
    lower_append_ints(&sb, "out", out_sp, nsp);
    ingot_strbuf_appendf(&sb, " order%lld", (long long)storage_order);
    ctx->workload = ingot_arena_strdup(ctx->arena, sb.data);
    ingot_strbuf_free(&sb);
    return INGOT_OK;
  }
  static const char* const kOut[3][3] = {{"ow"}, {"oh", "ow"}, {"od", "oh", "ow"}};
  static const char* const kRed[3][3] = {{"rw"}, {"rh", "rw"}, {"rd", "rh", "rw"}};
  const char* snames[5] = {"n", "c"};
  const char* rnames[3];
  int64_t sext[5] = {xv->dims[0], xv->dims[1]}, rext[3];
  for (uint32_t i = 0; i < nsp; ++i) {
    snames[2 + i] = kOut[nsp - 1][i];
    sext[2 + i] = out_sp[i];
    rnames[i] = kRed[nsp - 1][i];
    rext[i] = k[i];
  }
  lower_loops_t sp, red;

  /* No INIT stage: the UPDATE starts at the lowest value (max) or 0 on the
   * window's first tap (lower_update_start). */
  lower_loops_make(ctx, &sp, 2 + nsp, sext, snames);
  lower_loops_make(ctx, &red, nsp, rext, rnames);
  ingot_ir_expr_t* xi[5] = {sp.idx[0], sp.idx[1]};
  ingot_ir_expr_t* cond = NULL;
  for (uint32_t i = 0; i < nsp; ++i) {
    ingot_ir_expr_t* c;
    lower_window_axis(ctx, sp.idx[2 + i], red.idx[i], strides[i], pads[i], dil[i], in_sp[i], out_sp[i], k[i], &c,
                      &xi[2 + i]);
    cond = lower_and(ctx, cond, c);
  }
  ingot_ir_expr_t* xval = ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi));
  ingot_ir_expr_t* yi = ingot_ir_flat_index(f, by, sp.idx);
  ingot_ir_expr_t* cur =
      lower_update_start(ctx, &red, by, yi, is_max ? pool_lowest(ctx, dt) : lower_f32(ctx, 0.0));
  ingot_ir_expr_t* next;
  if (is_max) {
    /* a padded tap contributes the lowest value: max leaves cur as it is */
    if (cond) xval = ingot_ir_select(f, cond, xval, pool_lowest(ctx, dt));
    next = ingot_ir_binary(f, INGOT_IR_MAX, cur, xval);
  } else {
    if (is_lp) xval = lp_term(ctx, xval, lp);
    if (cond) xval = ingot_ir_select(f, cond, xval, lower_f32(ctx, 0.0));
    next = ingot_ir_add(f, cur, xval);
  }
  lower_emit_stage(ctx, INGOT_STAGE_UPDATE, &sp, &red, ingot_ir_store(f, by, yi, next));

  if (!is_max || lower_has_activation(ctx)) {
    lower_loops_make(ctx, &sp, 2 + nsp, sext, snames);
    yi = ingot_ir_flat_index(f, by, sp.idx);
    ingot_ir_expr_t* v = ingot_ir_load(f, by, yi);
    if (is_lp) {
      v = lp_root(ctx, v, lp);
    } else if (!is_max) {
      /* Divisor: a constant when every window counts the same taps. */
      int64_t constant = 1;
      ingot_ir_expr_t* count = NULL;
      for (uint32_t i = 0; i < nsp; ++i) {
        int64_t lo = include_pad ? -pads[i] : 0;
        int64_t hi = include_pad ? in_sp[i] + pads[nsp + i] : in_sp[i];
        int64_t first = taps_in_range(0, strides[i], pads[i], dil[i], k[i], lo, hi);
        bool same = true;
        for (int64_t o = 1; o < out_sp[i] && same; ++o) {
          same = taps_in_range(o, strides[i], pads[i], dil[i], k[i], lo, hi) == first;
        }
        if (same) {
          constant *= first;
        } else {
          ingot_ir_expr_t* t = taps_expr(ctx, sp.idx[2 + i], strides[i], pads[i], dil[i], k[i], lo, hi);
          count = count ? ingot_ir_mul(f, count, t) : t;
        }
      }
      if (count) {
        count = ingot_ir_mul(f, count, ingot_ir_int(f, constant));
        count = ingot_ir_binary(f, INGOT_IR_MAX, count, ingot_ir_int(f, 1)); /* an all-padding window: 0, not NaN */
        v = ingot_ir_binary(f, INGOT_IR_DIV, v, ingot_ir_cast(f, INGOT_DTYPE_F32, count));
      } else {
        v = ingot_ir_binary(f, INGOT_IR_DIV, v, lower_f32(ctx, (double)(constant > 0 ? constant : 1)));
      }
    }
    lower_emit_stage(ctx, INGOT_STAGE_FINISH, &sp, NULL, ingot_ir_store(f, by, yi, lower_activation(ctx, v)));
  }

  ctx->op_class = INGOT_OP_CLASS_POOL;
  ingot_strbuf_t sb = {0};
  ingot_strbuf_appendf(&sb, "%s%ud %s x=%s", is_max ? "maxpool" : is_lp ? "lppool" : "avgpool", nsp,
                       dt == INGOT_DTYPE_F32 ? "f32" : ingot_dtype_name(dt), lower_shape_str(ctx, x));
  lower_append_ints(&sb, "k", k, nsp);
  lower_append_ints(&sb, "stride", strides, nsp);
  lower_append_ints(&sb, "pad", pads, 2 * nsp);
  lower_append_ints(&sb, "dil", dil, nsp);
  lower_append_ints(&sb, "out", out_sp, nsp);
  if (!is_max && !is_lp) ingot_strbuf_appendf(&sb, " include_pad=%d", include_pad);
  if (is_lp) ingot_strbuf_appendf(&sb, " p%lld", (long long)lp);
  ingot_strbuf_appendf(&sb, " act=%s", lower_activation_name(ctx));
  ctx->workload = ingot_arena_strdup(ctx->arena, sb.data);
  ingot_strbuf_free(&sb);
  return INGOT_OK;
}

/* GlobalAveragePool / GlobalMaxPool / GlobalLpPool: y[n,c,1..] = mean, max
 * or Lp norm over the spatial axes. */
ingot_status_t lower_global_pool(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  bool is_max = node->op == INGOT_OP_GLOBALMAXPOOL;
  bool is_lp = node->op == INGOT_OP_GLOBALLPPOOL;
  int64_t lp = is_lp ? ctx->params->u.lp.p : 2;
  uint32_t x = lower_input(ctx, 0);
  uint32_t y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_check_value(ctx, x, true)) || (s = lower_check_value(ctx, y, true))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  if (xv->rank < 3) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "input must have rank >= 3");
  bool ok = yv->rank == xv->rank && yv->dims[0] == xv->dims[0] && yv->dims[1] == xv->dims[1];
  for (int32_t i = 2; ok && i < yv->rank; ++i) ok = yv->dims[i] == 1;
  if (!ok) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "output shape %s does not fit input %s",
                      lower_shape_str(ctx, y), lower_shape_str(ctx, x));
  }
  uint32_t nsp = (uint32_t)xv->rank - 2;
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  static const char* const kSp[3] = {"d", "h", "w"};
  static const char* const kRed[3] = {"rd", "rh", "rw"};
  static const char* const kMany[6] = {"s0", "s1", "s2", "s3", "s4", "s5"};
  static const char* const kManyRed[6] = {"r0", "r1", "r2", "r3", "r4", "r5"};
  const char* snames[INGOT_MAX_RANK] = {"n", "c"};
  const char* rnames[INGOT_MAX_RANK];
  int64_t sext[INGOT_MAX_RANK] = {xv->dims[0], xv->dims[1]}, rext[INGOT_MAX_RANK];
  int64_t count = 1;
  for (uint32_t i = 0; i < nsp; ++i) {
    snames[2 + i] = nsp <= 3 ? kSp[3 - nsp + i] : kMany[i];
    sext[2 + i] = 1;
    rnames[i] = nsp <= 3 ? kRed[3 - nsp + i] : kManyRed[i];
    rext[i] = xv->dims[2 + i];
    count *= rext[i];
  }
  lower_loops_t sp, red;
  lower_loops_make(ctx, &sp, 2 + nsp, sext, snames);
  lower_loops_make(ctx, &red, nsp, rext, rnames);
  ingot_ir_expr_t* xi[INGOT_MAX_RANK] = {sp.idx[0], sp.idx[1]};
  for (uint32_t i = 0; i < nsp; ++i) xi[2 + i] = red.idx[i];
  ingot_ir_expr_t* yi = ingot_ir_flat_index(f, by, sp.idx);
  ingot_ir_expr_t* xval = ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi));
  ingot_ir_expr_t* cur = lower_update_start(ctx, &red, by, yi, lower_f32(ctx, is_max ? -INFINITY : 0.0));
  ingot_ir_expr_t* next = is_max ? ingot_ir_binary(f, INGOT_IR_MAX, cur, xval)
                                 : ingot_ir_add(f, cur, is_lp ? lp_term(ctx, xval, lp) : xval);
  lower_emit_stage(ctx, INGOT_STAGE_UPDATE, &sp, &red, ingot_ir_store(f, by, yi, next));

  if (!is_max || lower_has_activation(ctx)) {
    lower_loops_make(ctx, &sp, 2 + nsp, sext, snames);
    yi = ingot_ir_flat_index(f, by, sp.idx);
    ingot_ir_expr_t* v = ingot_ir_load(f, by, yi);
    if (is_lp) {
      v = lp_root(ctx, v, lp);
    } else if (!is_max) {
      v = ingot_ir_binary(f, INGOT_IR_DIV, v, lower_f32(ctx, (double)count));
    }
    lower_emit_stage(ctx, INGOT_STAGE_FINISH, &sp, NULL, ingot_ir_store(f, by, yi, lower_activation(ctx, v)));
  }

  ctx->op_class = INGOT_OP_CLASS_POOL;
  ctx->workload = ingot_arena_printf(ctx->arena, "%s f32 x=%s act=%s%s", is_max ? "globalmaxpool" : is_lp ? "globallppool" : "globalavgpool",
                                     lower_shape_str(ctx, x), lower_activation_name(ctx),
                                     is_lp ? ingot_arena_printf(ctx->arena, " p%lld", (long long)lp) : "");
  return INGOT_OK;
}

ingot_status_t lower_lrn(lower_ctx_t* ctx) {
  uint32_t x = lower_input(ctx, 0);
  uint32_t y = ctx->node->outputs[0];
  ingot_status_t s;
  if ((s = lower_check_value(ctx, x, true)) || (s = lower_check_value(ctx, y, true))) return s;
  if ((s = lower_refuse_activation(ctx))) return s;
  const ingot_norm_params_t* np = &ctx->params->u.norm; /* graph/params.c */
  const ingot_value_t* xv = lower_value(ctx, x);
  int64_t channels = xv->dims[1], size = np->size;
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  lower_loops_t sp, red;
  lower_loops_over(ctx, &sp, xv->rank, xv->dims);
  static const char* const kTap[1] = {"r"};
  lower_loops_make(ctx, &red, 1, &size, kTap);
  /* c' = c - lead + r; in range unless the window is one channel wide */
  int64_t lead = (size - 1) / 2;
  ingot_ir_expr_t* xi[INGOT_MAX_RANK];
  for (int32_t i = 0; i < xv->rank; ++i) xi[i] = sp.idx[i];
  ingot_ir_expr_t* cond = NULL;
  lower_window_axis(ctx, sp.idx[1], red.idx[0], 1, lead, 1, channels, channels, size, &cond, &xi[1]);
  ingot_ir_expr_t* v = ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi));
  v = ingot_ir_mul(f, v, v);
  if (cond) v = ingot_ir_select(f, cond, v, lower_f32(ctx, 0.0));
  ingot_ir_expr_t* yi = ingot_ir_flat_index(f, by, sp.idx);
  ingot_ir_expr_t* cur = lower_update_start(ctx, &red, by, yi, lower_f32(ctx, 0.0));
  lower_emit_stage(ctx, INGOT_STAGE_UPDATE, &sp, &red, ingot_ir_store(f, by, yi, ingot_ir_add(f, cur, v)));

  lower_loops_over(ctx, &sp, xv->rank, xv->dims);
  yi = ingot_ir_flat_index(f, by, sp.idx);
  ingot_ir_expr_t* scale =
      ingot_ir_add(f, lower_f32(ctx, np->bias), ingot_ir_mul(f, lower_f32(ctx, np->alpha / (double)size), ingot_ir_load(f, by, yi)));
  ingot_ir_expr_t* out =
      ingot_ir_binary(f, INGOT_IR_DIV, ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, sp.idx)),
                      ingot_ir_binary(f, INGOT_IR_POW, scale, lower_f32(ctx, np->beta)));
  lower_emit_stage(ctx, INGOT_STAGE_FINISH, &sp, NULL, ingot_ir_store(f, by, yi, out));

  ctx->op_class = INGOT_OP_CLASS_POOL;
  ctx->workload = ingot_arena_printf(ctx->arena, "lrn f32 x=%s size%lld alpha%g beta%g bias%g", lower_shape_str(ctx, x),
                                     (long long)size, np->alpha, np->beta, np->bias);
  return INGOT_OK;
}
