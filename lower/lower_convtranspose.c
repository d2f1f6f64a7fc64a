/* The conv family beyond Conv: ConvTranspose, CausalConvWithState,
 * DeformConv, Col2Im and MaxUnpool (each described at its function).
 *
 * ConvTranspose (1-D, 2-D, 3-D; groups, strides, dilations, pads, output
 * padding, output_shape and auto_pad as resolved by shape inference into
 * explicit "pads", see graph/infer_nn.c), written as a gather so that every
 * output element is computed by one iteration:
 *
 *   INIT    y[n,m,o..] = bias[m] or 0
 *   UPDATE  y[n,m,o..] += x[n, g*Cg + rc, i..] * w[g*Cg + rc, m % Mg, r..]
 *           where o = i*stride - pad_begin + r*dilation, i.e.
 *           i = (o + pad_begin - r*dilation) / stride when that divides and
 *           lands in [0, in); other taps contribute 0 (SELECT, clamped load)
 *           spatial (n, m, o..), reduce (rc, r..), g = m / Mg
 *
 * Along a strided axis with dilation 1 and pad_begin >= 0 only the taps
 * r = p % stride + j*stride (p = o + pad_begin) divide, so the reduction
 * walks j < ceil(k / stride) instead of every r, with i = p / stride - j:
 * stride^2 fewer products for a 2-D upsampling, and no test that the tap
 * divides (a 2x2 stride 2 ConvTranspose is then one product a channel).
 * Other axes keep the division test. Where such an axis has no pads and
 * its output is a whole number of strides, its output loop is also split
 * into (phase, position): o = position*stride + phase, the tap
 * r = phase + j*stride and the input i = position - j need no division,
 * and the innermost loop reads the input row contiguously. */
#include <string.h>

#include "lower_internal.h"

/* The output loops: n, m, then the phase loop of each split axis (extent
 * stride), then a position loop per axis (out / stride for a split axis,
 * out otherwise), so that the innermost (vector) loop walks input
 * positions one by one; o[i] is the output index along axis i (position *
 * stride + phase where split), ph/pos the split axes' loops. */
static void spatial_loops(lower_ctx_t* ctx, lower_loops_t* sp, int64_t batch, int64_t m, uint32_t nsp,
                          const int64_t* out_sp, const int64_t* strides, const bool* split, ingot_ir_expr_t** o,
                          ingot_ir_expr_t** ph, ingot_ir_expr_t** pos) {
  static const char* const kOut[3][3] = {{"ow"}, {"oh", "ow"}, {"od", "oh", "ow"}};
  static const char* const kPhase[3][3] = {{"pw"}, {"ph", "pw"}, {"pd", "ph", "pw"}};
  static const char* const kPos[3][3] = {{"qw"}, {"qh", "qw"}, {"qd", "qh", "qw"}};
  const char* names[2 + 6] = {"n", "m"};
  int64_t ext[2 + 6] = {batch, m};
  uint32_t count = 2, phase_at[3] = {0}, pos_at[3];
  for (uint32_t i = 0; i < nsp; ++i) {
    if (!split[i]) continue;
    phase_at[i] = count;
    names[count] = kPhase[nsp - 1][i];
    ext[count++] = strides[i];
  }
  for (uint32_t i = 0; i < nsp; ++i) {
    pos_at[i] = count;
    names[count] = split[i] ? kPos[nsp - 1][i] : kOut[nsp - 1][i];
    ext[count++] = split[i] ? out_sp[i] / strides[i] : out_sp[i];
  }
  lower_loops_make(ctx, sp, count, ext, names);
  for (uint32_t i = 0; i < 3; ++i) o[i] = ph[i] = pos[i] = NULL;
  for (uint32_t i = 0; i < nsp; ++i) {
    pos[i] = sp->idx[pos_at[i]];
    o[i] = pos[i];
    if (!split[i]) continue;
    ph[i] = sp->idx[phase_at[i]];
    o[i] = ingot_ir_add(ctx->f, ingot_ir_mul(ctx->f, pos[i], ingot_ir_int(ctx->f, strides[i])), ph[i]);
  }
}

ingot_status_t lower_convtranspose(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  uint32_t x = lower_input(ctx, 0), w = lower_input(ctx, 1), b = lower_input(ctx, 2);
  uint32_t y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx))) return s;
  if ((s = lower_check_value(ctx, x, true)) || (s = lower_check_value(ctx, w, true)) ||
      (s = lower_check_value(ctx, y, true))) {
    return s;
  }
  if (b != INGOT_NO_VALUE && (s = lower_check_value(ctx, b, true))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* wv = lower_value(ctx, w);
  const ingot_value_t* yv = lower_value(ctx, y);
  if (xv->rank < 3 || xv->rank > 5 || wv->rank != xv->rank || yv->rank != xv->rank) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "ranks %d/%d/%d are not supported (1-D, 2-D or 3-D)", xv->rank,
                      wv->rank, yv->rank);
  }
  uint32_t nsp = (uint32_t)xv->rank - 2;
  /* group, strides, dilations, pads (resolved): node.params (graph/infer_nn.c) */
  const ingot_convtranspose_params_t* tp = &ctx->params->u.convtranspose;
  int64_t group = tp->group;
  int64_t cin = xv->dims[1], mg = wv->dims[1], m = mg * group;
  if (group < 1 || cin % group != 0 || wv->dims[0] != cin || yv->dims[1] != m || yv->dims[0] != xv->dims[0]) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "shapes do not fit: x %s, w %s, y %s, group %lld",
                      lower_shape_str(ctx, x), lower_shape_str(ctx, w), lower_shape_str(ctx, y), (long long)group);
  }
  int64_t cg = cin / group;
  if (b != INGOT_NO_VALUE) {
    const ingot_value_t* bv = lower_value(ctx, b);
    if (bv->rank != 1 || bv->dims[0] != m) {
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "bias must have shape [%lld]", (long long)m);
    }
  }
  const int64_t *strides = tp->strides, *dil = tp->dilations, *pads = tp->pads;
  int64_t k[3], in_sp[3], out_sp[3], taps[3];
  bool phase[3]; /* the axis's reduction walks only the taps that divide */
  bool split[3];  /* ... and its output loop is split into (phase, position) */
  for (uint32_t i = 0; i < nsp; ++i) {
    k[i] = wv->dims[2 + i];
    in_sp[i] = xv->dims[2 + i];
    out_sp[i] = yv->dims[2 + i];
    phase[i] = strides[i] > 1 && dil[i] == 1 && pads[i] >= 0;
    taps[i] = phase[i] ? (k[i] + strides[i] - 1) / strides[i] : k[i];
    split[i] = phase[i] && pads[i] == 0 && out_sp[i] % strides[i] == 0;
  }

  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t bw = lower_add_input(ctx, w, "w");
  uint32_t bb = b != INGOT_NO_VALUE ? lower_add_input(ctx, b, "bias") : UINT32_MAX;
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  static const char* const kRed[3][3] = {{"rw"}, {"rh", "rw"}, {"rd", "rh", "rw"}};
  const char* rnames[4] = {"rc"};
  int64_t rext[4] = {cg};
  for (uint32_t i = 0; i < nsp; ++i) {
    rnames[1 + i] = kRed[nsp - 1][i];
    rext[1 + i] = taps[i];
  }
  lower_loops_t sp, red;
  ingot_ir_expr_t *o[3], *ph[3], *pos[3];
  spatial_loops(ctx, &sp, xv->dims[0], m, nsp, out_sp, strides, split, o, ph, pos);
  ingot_ir_expr_t* init = bb != UINT32_MAX ? ingot_ir_load(f, bb, sp.idx[1]) : lower_f32(ctx, 0.0);
  ingot_ir_expr_t* yidx[5] = {sp.idx[0], sp.idx[1], o[0], o[1], o[2]};
  lower_emit_stage(ctx, INGOT_STAGE_INIT, &sp, NULL, ingot_ir_store(f, by, ingot_ir_flat_index(f, by, yidx), init));

  spatial_loops(ctx, &sp, xv->dims[0], m, nsp, out_sp, strides, split, o, ph, pos);
  lower_loops_make(ctx, &red, 1 + nsp, rext, rnames);
  ingot_ir_expr_t* g = group > 1 ? ingot_ir_binary(f, INGOT_IR_DIV, sp.idx[1], ingot_ir_int(f, mg)) : ingot_ir_int(f, 0);
  ingot_ir_expr_t* c = ingot_ir_add(f, ingot_ir_mul(f, g, ingot_ir_int(f, cg)), red.idx[0]);
  ingot_ir_expr_t* mm = group > 1 ? ingot_ir_binary(f, INGOT_IR_MOD, sp.idx[1], ingot_ir_int(f, mg)) : sp.idx[1];
  ingot_ir_expr_t* xi[5] = {sp.idx[0], c};
  ingot_ir_expr_t* wi[5] = {c, mm};
  ingot_ir_expr_t* cond = NULL;
  for (uint32_t i = 0; i < nsp; ++i) {
    if (phase[i]) {
      /* p = o + pad_begin >= 0; r = p % s + j*s, i = p / s - j */
      ingot_ir_expr_t* p = ingot_ir_add(f, o[i], ingot_ir_int(f, pads[i]));
      ingot_ir_expr_t* sv = ingot_ir_int(f, strides[i]);
      ingot_ir_expr_t* js = ingot_ir_mul(f, red.idx[1 + i], ingot_ir_int(f, strides[i]));
      ingot_ir_expr_t* r = ingot_ir_add(f, split[i] ? ph[i] : ingot_ir_binary(f, INGOT_IR_MOD, p, sv), js);
      ingot_ir_expr_t* q = ingot_ir_binary(f, INGOT_IR_SUB, split[i] ? pos[i] : ingot_ir_binary(f, INGOT_IR_DIV, p, sv),
                                           red.idx[1 + i]);
      if (k[i] % strides[i] != 0) { /* the last j's tap lies past the kernel for some phases */
        cond = lower_and(ctx, cond, ingot_ir_binary(f, INGOT_IR_LT, r, ingot_ir_int(f, k[i])));
        r = ingot_ir_binary(f, INGOT_IR_MIN, r, ingot_ir_int(f, k[i] - 1));
      }
      ingot_ir_expr_t* clamped = q;
      if (taps[i] > 1) { /* q < 0 near the start */
        cond = lower_and(ctx, cond, ingot_ir_binary(f, INGOT_IR_LE, ingot_ir_int(f, 0), q));
        clamped = ingot_ir_binary(f, INGOT_IR_MAX, clamped, ingot_ir_int(f, 0));
      }
      if ((out_sp[i] - 1 + pads[i]) / strides[i] >= in_sp[i]) {
        cond = lower_and(ctx, cond, ingot_ir_binary(f, INGOT_IR_LT, q, ingot_ir_int(f, in_sp[i])));
        clamped = ingot_ir_binary(f, INGOT_IR_MIN, clamped, ingot_ir_int(f, in_sp[i] - 1));
      }
      xi[2 + i] = clamped;
      wi[2 + i] = r;
      continue;
    }
    /* num = o + pad_begin - r*d; i = num / stride */
    ingot_ir_expr_t* num = ingot_ir_add(f, o[i], ingot_ir_int(f, pads[i]));
    num = ingot_ir_binary(f, INGOT_IR_SUB, num, ingot_ir_mul(f, red.idx[1 + i], ingot_ir_int(f, dil[i])));
    int64_t lo = 0 + pads[i] - (k[i] - 1) * dil[i];          /* smallest num */
    int64_t hi = (out_sp[i] - 1) + pads[i];                   /* largest num */
    ingot_ir_expr_t* q = strides[i] == 1 ? num : ingot_ir_binary(f, INGOT_IR_DIV, num, ingot_ir_int(f, strides[i]));
    if (strides[i] != 1) {
      cond = lower_and(ctx, cond,
                       ingot_ir_binary(f, INGOT_IR_EQ, ingot_ir_binary(f, INGOT_IR_MOD, num, ingot_ir_int(f, strides[i])),
                                       ingot_ir_int(f, 0)));
    }
    ingot_ir_expr_t* clamped = q;
    if (lo < 0) {
      cond = lower_and(ctx, cond, ingot_ir_binary(f, INGOT_IR_LE, ingot_ir_int(f, 0), q));
      clamped = ingot_ir_binary(f, INGOT_IR_MAX, clamped, ingot_ir_int(f, 0));
    }
    if (hi / strides[i] >= in_sp[i]) {
      cond = lower_and(ctx, cond, ingot_ir_binary(f, INGOT_IR_LT, q, ingot_ir_int(f, in_sp[i])));
      clamped = ingot_ir_binary(f, INGOT_IR_MIN, clamped, ingot_ir_int(f, in_sp[i] - 1));
    }
    xi[2 + i] = clamped;
    wi[2 + i] = red.idx[1 + i];
  }
  ingot_ir_expr_t* prod = ingot_ir_mul(f, ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi)),
                                       ingot_ir_load(f, bw, ingot_ir_flat_index(f, bw, wi)));
  if (cond) prod = ingot_ir_select(f, cond, prod, lower_f32(ctx, 0.0));
  ingot_ir_expr_t* yi = ingot_ir_flat_index(f, by, (ingot_ir_expr_t*[5]){sp.idx[0], sp.idx[1], o[0], o[1], o[2]});
  lower_emit_stage(ctx, INGOT_STAGE_UPDATE, &sp, &red, ingot_ir_store(f, by, yi, ingot_ir_add(f, ingot_ir_load(f, by, yi), prod)));
  ctx->stages.data[ctx->stages.count - 1].tile_axis = 1; /* output channels */

  ctx->op_class = INGOT_OP_CLASS_CONTRACTION;
  ingot_strbuf_t sb = {0};
  ingot_strbuf_appendf(&sb, "convtranspose%ud f32 x=%s w=%s", nsp, lower_shape_str(ctx, x), lower_shape_str(ctx, w));
  lower_append_ints(&sb, "stride", strides, nsp);
  lower_append_ints(&sb, "pad", pads, 2 * nsp);
  lower_append_ints(&sb, "dil", dil, nsp);
  lower_append_ints(&sb, "out", out_sp, nsp);
  ingot_strbuf_appendf(&sb, " g%lld bias=%d", (long long)group, b != INGOT_NO_VALUE);
  ctx->workload = ingot_arena_strdup(ctx->arena, sb.data);
  ingot_strbuf_free(&sb);
  return INGOT_OK;
}

/* CausalConvWithState: a depthwise causal 1-D conv over [past_state ++ input]
 * (past_state [B, C, k-1], zeros when absent), bias, SiLU/Swish; the second
 * output is the last k-1 steps of that padded sequence.
 *   INIT    y[b,c,l] = bias[c] or 0
 *   UPDATE  y[b,c,l] += p(l + r) * w[c,0,r]     reduce r < k
 *   FINISH  y = y * sigmoid(y)                  (silu / swish)
 *   PURE    present[b,c,i] = p(L + i)
 * where p(t) = t < k-1 ? past[b,c,t] : x[b,c,t-(k-1)]. An empty present
 * (k = 1) is not written. */
static ingot_ir_expr_t* padded_at(lower_ctx_t* ctx, uint32_t bx, uint32_t bpast, int64_t len, int64_t km1, ingot_ir_expr_t* b,
                                  ingot_ir_expr_t* c, int64_t chans, ingot_ir_expr_t* t, ingot_dtype_t dt) {
  ingot_ir_func_t* f = ctx->f;
  ingot_ir_expr_t* xi = ingot_ir_binary(f, INGOT_IR_SUB, t, ingot_ir_int(f, km1));
  ingot_ir_expr_t* bc = ingot_ir_add(f, ingot_ir_mul(f, b, ingot_ir_int(f, chans)), c);
  if (km1 == 0) return ingot_ir_load(f, bx, ingot_ir_add(f, ingot_ir_mul(f, bc, ingot_ir_int(f, len)), t));
  ingot_ir_expr_t* xc = ingot_ir_binary(f, INGOT_IR_MAX, xi, ingot_ir_int(f, 0));
  ingot_ir_expr_t* xv = ingot_ir_load(f, bx, ingot_ir_add(f, ingot_ir_mul(f, bc, ingot_ir_int(f, len)), xc));
  ingot_ir_expr_t* pv = ingot_ir_float(f, dt, 0.0);
  if (bpast != UINT32_MAX) {
    ingot_ir_expr_t* pc = ingot_ir_binary(f, INGOT_IR_MIN, t, ingot_ir_int(f, km1 - 1));
    pv = ingot_ir_load(f, bpast, ingot_ir_add(f, ingot_ir_mul(f, bc, ingot_ir_int(f, km1)), pc));
  }
  return ingot_ir_select(f, ingot_ir_binary(f, INGOT_IR_LT, t, ingot_ir_int(f, km1)), pv, xv);
}

ingot_status_t lower_causalconv(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  uint32_t x = lower_input(ctx, 0), w = lower_input(ctx, 1), b = lower_input(ctx, 2), past = lower_input(ctx, 3);
  uint32_t y = node->output_count > 0 ? node->outputs[0] : INGOT_NO_VALUE;
  uint32_t pres = node->output_count > 1 ? node->outputs[1] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx))) return s;
  if ((s = lower_check_value(ctx, x, false)) || (s = lower_check_value(ctx, w, false)) || (s = lower_check_value(ctx, y, false))) {
    return s;
  }
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* wv = lower_value(ctx, w);
  ingot_dtype_t dt = xv->dtype;
  if ((dt != INGOT_DTYPE_F32 && dt != INGOT_DTYPE_F64) || xv->rank != 3 || wv->rank != 3 || wv->dtype != dt ||
      wv->dims[0] != xv->dims[1] || wv->dims[1] != 1) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "input %s / weight %s are not supported", lower_shape_str(ctx, x),
                      lower_shape_str(ctx, w));
  }
  int64_t batch = xv->dims[0], chans = xv->dims[1], len = xv->dims[2], k = wv->dims[2];
  if (b != INGOT_NO_VALUE && (s = lower_check_value(ctx, b, false))) return s;
  if (k > 1 && past != INGOT_NO_VALUE && (s = lower_check_value(ctx, past, false))) return s;
  if (k == 1) past = INGOT_NO_VALUE; /* empty */
  bool write_present = pres != INGOT_NO_VALUE && k > 1;
  if (write_present && (s = lower_check_value(ctx, pres, false))) return s;
  const char* act = ingot_node_attr_string(node, "activation", "none");
  bool silu = strcmp(act, "silu") == 0 || strcmp(act, "swish") == 0;
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t bw = lower_add_input(ctx, w, "w");
  uint32_t bb = b != INGOT_NO_VALUE ? lower_add_input(ctx, b, "bias") : UINT32_MAX;
  uint32_t bp = past != INGOT_NO_VALUE ? lower_add_input(ctx, past, "past") : UINT32_MAX;
  uint32_t by = lower_add_output(ctx, y, "y");
  uint32_t bpr = write_present ? lower_add_output(ctx, pres, "present") : UINT32_MAX;
  ingot_ir_func_t* f = ctx->f;
  static const char* const kSp[3] = {"n", "c", "l"};
  static const char* const kRed[1] = {"r"};
  int64_t sext[3] = {batch, chans, len}, rext[1] = {k};
  lower_loops_t sp, red;
  lower_loops_make(ctx, &sp, 3, sext, kSp);
  lower_emit_stage(ctx, INGOT_STAGE_INIT, &sp, NULL,
                   ingot_ir_store(f, by, ingot_ir_flat_index(f, by, sp.idx),
                                  bb != UINT32_MAX ? ingot_ir_load(f, bb, sp.idx[1]) : ingot_ir_float(f, dt, 0.0)));
  lower_loops_make(ctx, &sp, 3, sext, kSp);
  lower_loops_make(ctx, &red, 1, rext, kRed);
  ingot_ir_expr_t* pv = padded_at(ctx, bx, bp, len, k - 1, sp.idx[0], sp.idx[1], chans, ingot_ir_add(f, sp.idx[2], red.idx[0]), dt);
  ingot_ir_expr_t* wval = ingot_ir_load(f, bw, ingot_ir_add(f, ingot_ir_mul(f, sp.idx[1], ingot_ir_int(f, k)), red.idx[0]));
  ingot_ir_expr_t* yi = ingot_ir_flat_index(f, by, sp.idx);
  lower_emit_stage(ctx, INGOT_STAGE_UPDATE, &sp, &red, ingot_ir_store(f, by, yi, ingot_ir_add(f, ingot_ir_load(f, by, yi), ingot_ir_mul(f, pv, wval))));
  if (silu) {
    lower_loops_make(ctx, &sp, 3, sext, kSp);
    yi = ingot_ir_flat_index(f, by, sp.idx);
    ingot_ir_expr_t* v = ingot_ir_load(f, by, yi);
    ingot_ir_expr_t* sig = ingot_ir_binary(f, INGOT_IR_DIV, ingot_ir_float(f, dt, 1.0),
                                           ingot_ir_add(f, ingot_ir_float(f, dt, 1.0), ingot_ir_unary(f, INGOT_IR_EXP, ingot_ir_unary(f, INGOT_IR_NEG, v))));
    lower_emit_stage(ctx, INGOT_STAGE_FINISH, &sp, NULL, ingot_ir_store(f, by, yi, ingot_ir_mul(f, v, sig)));
  }
  if (bpr != UINT32_MAX) {
    int64_t pext[3] = {batch, chans, k - 1};
    lower_loops_make(ctx, &sp, 3, pext, kSp);
    ingot_ir_expr_t* t = ingot_ir_add(f, sp.idx[2], ingot_ir_int(f, len));
    lower_emit_stage(ctx, INGOT_STAGE_PURE, &sp, NULL,
                     ingot_ir_store(f, bpr, ingot_ir_flat_index(f, bpr, sp.idx), padded_at(ctx, bx, bp, len, k - 1, sp.idx[0], sp.idx[1], chans, t, dt)));
  }
  ctx->op_class = INGOT_OP_CLASS_CONTRACTION;
  ctx->workload = ingot_arena_printf(ctx->arena, "causalconv %s x=%s k%lld bias%d past%d act=%s", ingot_dtype_name(dt),
                                     lower_shape_str(ctx, x), (long long)k, bb != UINT32_MAX, bp != UINT32_MAX, act);
  return INGOT_OK;
}

/* DeformConv (2-D): a grouped conv whose taps sample the input at a learned
 * offset, bilinearly (zero outside), weighted by an optional mask:
 *   INIT    y[n,k,oh,ow] = bias[k] or 0
 *   UPDATE  y += w[k,rc,rh,rw] * mask[n, og, rh, rw, oh, ow] * sample(x[n, c], ph, pw)
 *           ph = oh*s - pad + rh*d + offset[n, og, rh, rw, 0, oh, ow] (pw likewise, 1)
 *           spatial (n, k, oh, ow), reduce (rc, rh, rw); c = g*Cg + rc, og = c / (C/offset_group)
 *   sample: the four neighbours of (ph, pw), each 0 when outside the input. */
ingot_status_t lower_deformconv(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  uint32_t x = lower_input(ctx, 0), w = lower_input(ctx, 1), off = lower_input(ctx, 2), b = lower_input(ctx, 3),
           mask = lower_input(ctx, 4);
  uint32_t y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx))) return s;
  uint32_t all[6] = {x, w, off, b, mask, y};
  for (uint32_t i = 0; i < 6; ++i) {
    if ((all[i] != INGOT_NO_VALUE || i < 3 || i == 5) && (s = lower_check_value(ctx, all[i], false))) return s;
  }
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* wv = lower_value(ctx, w);
  const ingot_value_t* yv = lower_value(ctx, y);
  ingot_dtype_t dt = xv->dtype;
  if ((dt != INGOT_DTYPE_F32 && dt != INGOT_DTYPE_F64) || xv->rank != 4 || wv->rank != 4 || yv->rank != 4) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "only 2-D float DeformConv is supported");
  }
  int64_t group = ingot_node_attr_int(node, "group", 1), og = ingot_node_attr_int(node, "offset_group", 1);
  int64_t n = xv->dims[0], cin = xv->dims[1], ih = xv->dims[2], iw = xv->dims[3];
  int64_t cout = wv->dims[0], cg = wv->dims[1], kh = wv->dims[2], kw = wv->dims[3];
  int64_t oh = yv->dims[2], ow = yv->dims[3];
  if (group < 1 || og < 1 || cin != cg * group || cout % group != 0 || cin % og != 0) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "group/offset_group do not fit");
  }
  int64_t st[2], dil[2], pads[4];
  if ((s = lower_ints_attr(ctx, "strides", 2, 1, 1, st)) || (s = lower_ints_attr(ctx, "dilations", 2, 1, 1, dil)) ||
      (s = lower_ints_attr(ctx, "pads", 4, 0, 0, pads))) {
    return s;
  }
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t bw = lower_add_input(ctx, w, "w");
  uint32_t bo = lower_add_input(ctx, off, "offset");
  uint32_t bb = b != INGOT_NO_VALUE ? lower_add_input(ctx, b, "bias") : UINT32_MAX;
  uint32_t bm = mask != INGOT_NO_VALUE ? lower_add_input(ctx, mask, "mask") : UINT32_MAX;
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  static const char* const kSp[4] = {"n", "k", "oh", "ow"};
  static const char* const kRed[3] = {"rc", "rh", "rw"};
  int64_t sext[4] = {n, cout, oh, ow}, rext[3] = {cg, kh, kw};
  lower_loops_t sp, red;
  lower_loops_make(ctx, &sp, 4, sext, kSp);
  lower_emit_stage(ctx, INGOT_STAGE_INIT, &sp, NULL,
                   ingot_ir_store(f, by, ingot_ir_flat_index(f, by, sp.idx),
                                  bb != UINT32_MAX ? ingot_ir_load(f, bb, sp.idx[1]) : ingot_ir_float(f, dt, 0.0)));
  lower_loops_make(ctx, &sp, 4, sext, kSp);
  lower_loops_make(ctx, &red, 3, rext, kRed);
#define II(v) ingot_ir_int(f, (v))
  ingot_ir_expr_t* g = ingot_ir_binary(f, INGOT_IR_DIV, sp.idx[1], II(cout / group));
  ingot_ir_expr_t* c = ingot_ir_add(f, ingot_ir_mul(f, g, II(cg)), red.idx[0]);
  ingot_ir_expr_t* ogi = ingot_ir_binary(f, INGOT_IR_DIV, c, II(cin / og));
  ingot_ir_expr_t* tap = ingot_ir_add(f, ingot_ir_mul(f, red.idx[1], II(kw)), red.idx[2]); /* rh*kW + rw */
  /* offset channel (og*kH*kW + tap)*2 + {0, 1} */
  ingot_ir_expr_t* och = ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_mul(f, ogi, II(kh * kw)), tap), II(2));
  ingot_ir_expr_t* oi0[4] = {sp.idx[0], och, sp.idx[2], sp.idx[3]};
  ingot_ir_expr_t* oi1[4] = {sp.idx[0], ingot_ir_add(f, och, II(1)), sp.idx[2], sp.idx[3]};
  ingot_ir_expr_t* dh = ingot_ir_load(f, bo, ingot_ir_flat_index(f, bo, oi0));
  ingot_ir_expr_t* dw = ingot_ir_load(f, bo, ingot_ir_flat_index(f, bo, oi1));
  ingot_ir_expr_t* base_h = ingot_ir_add(f, ingot_ir_add(f, ingot_ir_mul(f, sp.idx[2], II(st[0])), II(-pads[0])), ingot_ir_mul(f, red.idx[1], II(dil[0])));
  ingot_ir_expr_t* base_w = ingot_ir_add(f, ingot_ir_add(f, ingot_ir_mul(f, sp.idx[3], II(st[1])), II(-pads[1])), ingot_ir_mul(f, red.idx[2], II(dil[1])));
  /* sampling point, its top-left neighbour and the fractions (shared subexpressions) */
  ingot_ir_expr_t* ph = ingot_ir_add(f, ingot_ir_cast(f, dt, base_h), dh);
  ingot_ir_expr_t* pw = ingot_ir_add(f, ingot_ir_cast(f, dt, base_w), dw);
  ingot_ir_expr_t* h0 = ingot_ir_cast(f, INGOT_DTYPE_I64, ingot_ir_unary(f, INGOT_IR_FLOOR, ph));
  ingot_ir_expr_t* w0 = ingot_ir_cast(f, INGOT_DTYPE_I64, ingot_ir_unary(f, INGOT_IR_FLOOR, pw));
  ingot_ir_expr_t* vlh = ingot_ir_binary(f, INGOT_IR_SUB, ph, ingot_ir_cast(f, dt, h0));
  ingot_ir_expr_t* vlw = ingot_ir_binary(f, INGOT_IR_SUB, pw, ingot_ir_cast(f, dt, w0));
  ingot_ir_expr_t* one = ingot_ir_float(f, dt, 1.0);
  ingot_ir_expr_t* zero = ingot_ir_float(f, dt, 0.0);
  /* one corner: valid ? x[n, c, hh, ww] : 0 */
  ingot_ir_expr_t* corner[4];
  for (int q = 0; q < 4; ++q) {
    ingot_ir_expr_t* hh = ingot_ir_add(f, h0, II(q / 2));
    ingot_ir_expr_t* ww = ingot_ir_add(f, w0, II(q % 2));
    ingot_ir_expr_t* ok = ingot_ir_binary(
        f, INGOT_IR_AND,
        ingot_ir_binary(f, INGOT_IR_AND, ingot_ir_binary(f, INGOT_IR_LE, II(0), hh), ingot_ir_binary(f, INGOT_IR_LT, hh, II(ih))),
        ingot_ir_binary(f, INGOT_IR_AND, ingot_ir_binary(f, INGOT_IR_LE, II(0), ww), ingot_ir_binary(f, INGOT_IR_LT, ww, II(iw))));
    ingot_ir_expr_t* hc = ingot_ir_binary(f, INGOT_IR_MIN, ingot_ir_binary(f, INGOT_IR_MAX, hh, II(0)), II(ih - 1));
    ingot_ir_expr_t* wc = ingot_ir_binary(f, INGOT_IR_MIN, ingot_ir_binary(f, INGOT_IR_MAX, ww, II(0)), II(iw - 1));
    ingot_ir_expr_t* xi[4] = {sp.idx[0], c, hc, wc};
    corner[q] = ingot_ir_select(f, ok, ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi)), zero);
  }
  ingot_ir_expr_t* hl = ingot_ir_binary(f, INGOT_IR_SUB, one, vlh);
  ingot_ir_expr_t* wl = ingot_ir_binary(f, INGOT_IR_SUB, one, vlw);
  ingot_ir_expr_t* sample = ingot_ir_add(
      f, ingot_ir_add(f, ingot_ir_mul(f, ingot_ir_mul(f, hl, wl), corner[0]), ingot_ir_mul(f, ingot_ir_mul(f, hl, vlw), corner[1])),
      ingot_ir_add(f, ingot_ir_mul(f, ingot_ir_mul(f, vlh, wl), corner[2]), ingot_ir_mul(f, ingot_ir_mul(f, vlh, vlw), corner[3])));
  ingot_ir_expr_t* wi[4] = {sp.idx[1], red.idx[0], red.idx[1], red.idx[2]};
  ingot_ir_expr_t* term = ingot_ir_mul(f, ingot_ir_load(f, bw, ingot_ir_flat_index(f, bw, wi)), sample);
  if (bm != UINT32_MAX) {
    ingot_ir_expr_t* mi[4] = {sp.idx[0], ingot_ir_add(f, ingot_ir_mul(f, ogi, II(kh * kw)), tap), sp.idx[2], sp.idx[3]};
    term = ingot_ir_mul(f, term, ingot_ir_load(f, bm, ingot_ir_flat_index(f, bm, mi)));
  }
  ingot_ir_expr_t* yi = ingot_ir_flat_index(f, by, sp.idx);
#undef II
  lower_emit_stage(ctx, INGOT_STAGE_UPDATE, &sp, &red, ingot_ir_store(f, by, yi, ingot_ir_add(f, ingot_ir_load(f, by, yi), term)));
  ctx->op_class = INGOT_OP_CLASS_CONTRACTION;
  ctx->workload = ingot_arena_printf(ctx->arena, "deformconv %s x=%s w=%s out%lldx%lld g%lld og%lld mask%d bias%d",
                                     ingot_dtype_name(dt), lower_shape_str(ctx, x), lower_shape_str(ctx, w), (long long)oh,
                                     (long long)ow, (long long)group, (long long)og, bm != UINT32_MAX, bb != UINT32_MAX);
  return INGOT_OK;
}

/* Col2Im: the sum of the sliding blocks back into the image, written as a
 * gather like ConvTranspose:
 *   INIT    y[n,c,p..] = 0
 *   UPDATE  y[n,c,p..] += x[n, c*K + flat(k..), flat(l..)]   reduce (k..)
 *           where p = l*stride - pad + k*dilation on each axis, i.e.
 *           l = (p + pad - k*d) / s when that divides and lands in [0, blocks)
 * image_shape/block_shape are canonical attributes (graph/infer_reduce.c). */
ingot_status_t lower_col2im(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  uint32_t x = lower_input(ctx, 0);
  uint32_t y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx))) return s;
  if ((s = lower_check_value(ctx, x, false)) || (s = lower_check_value(ctx, y, false))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  ingot_dtype_t dt = xv->dtype;
  uint32_t ni = 0, nb = 0;
  const int64_t* img = ingot_node_attr_ints(node, "image_shape", &ni);
  const int64_t* blk = ingot_node_attr_ints(node, "block_shape", &nb);
  if (!img || !blk || ni != nb || ni + 2 != (uint32_t)yv->rank || ni > 6 || (dt != INGOT_DTYPE_F32 && dt != INGOT_DTYPE_F64)) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "image/block shapes not canonical (shape inference has not run)");
  }
  int64_t st[6], dil[6], pads[12];
  if ((s = lower_ints_attr(ctx, "strides", ni, 1, 1, st)) || (s = lower_ints_attr(ctx, "dilations", ni, 1, 1, dil)) ||
      (s = lower_ints_attr(ctx, "pads", 2 * ni, 0, 0, pads))) {
    return s;
  }
  int64_t nblk[6], kprod = 1;
  for (uint32_t i = 0; i < ni; ++i) {
    nblk[i] = (img[i] + pads[i] + pads[ni + i] - dil[i] * (blk[i] - 1) - 1) / st[i] + 1;
    kprod *= blk[i];
  }
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  static const char* const kSp[8] = {"n", "c", "p0", "p1", "p2", "p3", "p4", "p5"};
  static const char* const kRed[6] = {"k0", "k1", "k2", "k3", "k4", "k5"};
  int64_t sext[8], rext[6];
  sext[0] = yv->dims[0];
  sext[1] = yv->dims[1];
  for (uint32_t i = 0; i < ni; ++i) sext[2 + i] = img[i], rext[i] = blk[i];
  lower_loops_t sp, red;
  lower_loops_make(ctx, &sp, 2 + ni, sext, kSp);
  lower_emit_stage(ctx, INGOT_STAGE_INIT, &sp, NULL, ingot_ir_store(f, by, ingot_ir_flat_index(f, by, sp.idx), ingot_ir_float(f, dt, 0.0)));
  lower_loops_make(ctx, &sp, 2 + ni, sext, kSp);
  lower_loops_make(ctx, &red, ni, rext, kRed);
  ingot_ir_expr_t* cond = NULL;
  ingot_ir_expr_t* kflat = ingot_ir_int(f, 0);
  ingot_ir_expr_t* lflat = ingot_ir_int(f, 0);
  for (uint32_t i = 0; i < ni; ++i) {
    ingot_ir_expr_t* num = ingot_ir_binary(f, INGOT_IR_SUB, ingot_ir_add(f, sp.idx[2 + i], ingot_ir_int(f, pads[i])),
                                           ingot_ir_mul(f, red.idx[i], ingot_ir_int(f, dil[i])));
    ingot_ir_expr_t* q = st[i] == 1 ? num : ingot_ir_binary(f, INGOT_IR_DIV, num, ingot_ir_int(f, st[i]));
    if (st[i] != 1) {
      cond = lower_and(ctx, cond, ingot_ir_binary(f, INGOT_IR_EQ, ingot_ir_binary(f, INGOT_IR_MOD, num, ingot_ir_int(f, st[i])), ingot_ir_int(f, 0)));
    }
    cond = lower_and(ctx, cond, ingot_ir_binary(f, INGOT_IR_LE, ingot_ir_int(f, 0), q));
    cond = lower_and(ctx, cond, ingot_ir_binary(f, INGOT_IR_LT, q, ingot_ir_int(f, nblk[i])));
    ingot_ir_expr_t* qc = ingot_ir_binary(f, INGOT_IR_MIN, ingot_ir_binary(f, INGOT_IR_MAX, q, ingot_ir_int(f, 0)), ingot_ir_int(f, nblk[i] - 1));
    kflat = ingot_ir_add(f, ingot_ir_mul(f, kflat, ingot_ir_int(f, blk[i])), red.idx[i]);
    lflat = ingot_ir_add(f, ingot_ir_mul(f, lflat, ingot_ir_int(f, nblk[i])), qc);
  }
  ingot_ir_expr_t* chan = ingot_ir_add(f, ingot_ir_mul(f, sp.idx[1], ingot_ir_int(f, kprod)), kflat);
  ingot_ir_expr_t* xi[3] = {sp.idx[0], chan, lflat};
  ingot_ir_expr_t* v = ingot_ir_select(f, cond, ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi)), ingot_ir_float(f, dt, 0.0));
  ingot_ir_expr_t* yi = ingot_ir_flat_index(f, by, sp.idx);
  lower_emit_stage(ctx, INGOT_STAGE_UPDATE, &sp, &red, ingot_ir_store(f, by, yi, ingot_ir_add(f, ingot_ir_load(f, by, yi), v)));
  ctx->op_class = INGOT_OP_CLASS_CONTRACTION;
  ingot_strbuf_t sb = {0};
  ingot_strbuf_appendf(&sb, "col2im %s x=%s", ingot_dtype_name(dt), lower_shape_str(ctx, x));
  lower_append_ints(&sb, "img", img, ni);
  lower_append_ints(&sb, "blk", blk, ni);
  lower_append_ints(&sb, "stride", st, ni);
  lower_append_ints(&sb, "pad", pads, 2 * ni);
  lower_append_ints(&sb, "dil", dil, ni);
  ctx->workload = ingot_arena_strdup(ctx->arena, sb.data);
  ingot_strbuf_free(&sb);
  return INGOT_OK;
}

/* MaxUnpool: y = 0, then y[I[j]] = X[j] for every element j. I holds flat
 * indices into the shape the pooling inverts ((in-1)*stride - pads + kernel),
 * as MaxPool's Indices output does; a larger output_shape keeps that block in
 * its leading corner (as the reference). Two stages: a PURE fill and an
 * OTHER scatter over the elements of X; an index outside is skipped. */
ingot_status_t lower_maxunpool(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  uint32_t x = lower_input(ctx, 0), ind = lower_input(ctx, 1);
  uint32_t y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx))) return s;
  if ((s = lower_check_value(ctx, x, false)) || (s = lower_check_value(ctx, ind, false)) || (s = lower_check_value(ctx, y, false))) {
    return s;
  }
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  ingot_dtype_t dt = xv->dtype;
  if ((dt != INGOT_DTYPE_F32 && dt != INGOT_DTYPE_F64) || lower_value(ctx, ind)->dtype != INGOT_DTYPE_I64 || yv->dtype != dt) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "types are not supported");
  }
  uint32_t sp_n = (uint32_t)xv->rank - 2;
  if (xv->rank < 3 || xv->rank > 5 || yv->rank != xv->rank) return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "1-D to 3-D only");
  int64_t k[3], st[3], pads[6], inf[5] = {xv->dims[0], xv->dims[1]};
  if ((s = lower_ints_attr(ctx, "kernel_shape", sp_n, 1, 1, k)) || (s = lower_ints_attr(ctx, "strides", sp_n, 1, 1, st)) ||
      (s = lower_ints_attr(ctx, "pads", 2 * sp_n, 0, 0, pads))) {
    return s;
  }
  for (uint32_t i = 0; i < sp_n; ++i) inf[2 + i] = (xv->dims[2 + i] - 1) * st[i] - pads[i] - pads[sp_n + i] + k[i];
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t bi = lower_add_input(ctx, ind, "indices");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  int64_t ny = 1, nx = ingot_value_numel(xv);
  for (int32_t i = 0; i < xv->rank; ++i) ny *= inf[i];
  lower_loops_t sp;
  lower_loops_over(ctx, &sp, yv->rank, yv->dims);
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &sp, NULL, ingot_ir_store(f, by, ingot_ir_flat_index(f, by, sp.idx), ingot_ir_float(f, dt, 0.0)));
  uint32_t j = lower_add_var(ctx, "j", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t t = lower_add_var(ctx, "t", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64);
  ingot_ir_expr_t* te = ingot_ir_var(f, t);
  ingot_ir_expr_t* in = ingot_ir_binary(f, INGOT_IR_AND, ingot_ir_binary(f, INGOT_IR_LE, ingot_ir_int(f, 0), te),
                                        ingot_ir_binary(f, INGOT_IR_LT, te, ingot_ir_int(f, ny)));
  /* the index's coordinates in the inferred shape, placed in y */
  ingot_ir_expr_t* tc = ingot_ir_binary(f, INGOT_IR_MIN, ingot_ir_binary(f, INGOT_IR_MAX, te, ingot_ir_int(f, 0)), ingot_ir_int(f, ny - 1));
  ingot_ir_expr_t* yidx = ingot_ir_int(f, 0);
  int64_t rest = ny;
  for (int32_t i = 0; i < xv->rank; ++i) {
    rest /= inf[i];
    ingot_ir_expr_t* q = rest == 1 ? tc : ingot_ir_binary(f, INGOT_IR_DIV, tc, ingot_ir_int(f, rest));
    ingot_ir_expr_t* ci = i == 0 ? q : ingot_ir_binary(f, INGOT_IR_MOD, q, ingot_ir_int(f, inf[i]));
    if (inf[i] > yv->dims[i]) {
      in = ingot_ir_binary(f, INGOT_IR_AND, in, ingot_ir_binary(f, INGOT_IR_LT, ci, ingot_ir_int(f, yv->dims[i])));
      ci = ingot_ir_binary(f, INGOT_IR_MIN, ci, ingot_ir_int(f, yv->dims[i] - 1));
    }
    yidx = ingot_ir_add(f, ingot_ir_mul(f, yidx, ingot_ir_int(f, yv->dims[i])), ci);
  }
  ingot_ir_stmt_t* body[2] = {
      ingot_ir_local(f, t, ingot_ir_load(f, bi, ingot_ir_var(f, j))),
      ingot_ir_if(f, in, ingot_ir_store(f, by, yidx, ingot_ir_load(f, bx, ingot_ir_var(f, j)))),
  };
  /* serial: two elements may name the same index; the last one wins */
  uint32_t one = lower_add_var(ctx, "i", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  lower_emit_other(ctx, ingot_ir_for(f, one, 1, ingot_ir_for(f, j, nx, ingot_ir_block(f, body, 2))));
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE;
  ctx->workload = ingot_arena_printf(ctx->arena, "maxunpool %s x=%s y=%s", ingot_dtype_name(dt), lower_shape_str(ctx, x),
                                     lower_shape_str(ctx, y));
  return INGOT_OK;
}
