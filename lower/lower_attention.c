/* Attention (opset 23/24): scaled dot-product attention over 3-D ([B, S,
 * heads*D]) or 4-D ([B, heads, S, D]) Q, K, V, with grouped-query heads
 * (query head h reads kv head h / (Hq / Hkv)), past key/value (present =
 * past ++ new along the sequence), attn_mask (float, added; bool: false ->
 * -inf; fewer columns than the total length: the rest -inf), is_causal
 * (column j > row i + past -> -inf), nonpad_kv_seqlen (column j >= len[b]
 * -> -inf), scale (default 1/sqrt(D)), softcap (c * tanh(s / c), before the
 * mask) and the qk_matmul_output modes (0/1: scores after the softcap, 2:
 * after the mask, 3: after the softmax).
 *
 *   PURE   present_key / present_value = past ++ new (when asked for; the
 *          scores then read K from present_key)
 *   OTHER  for row (b, h, i):                           (spatial)
 *            mx = max_j s(j)                            s(j): scale * Q_i . K_j,
 *            y[:] = 0; l = 0                            softcap, + bias
 *            for j: p = exp(s(j) - mx); l += p; y[:] += p * V_j
 *            y[:] /= l
 * An all -inf row gives NaN, as the reference does. */
#include <math.h>
#include <string.h>

#include "lower_internal.h"

typedef struct attn_t {
  ingot_ir_func_t* f;
  ingot_dtype_t dt;
  bool four_d;
  int64_t batch, hq, hkv, sq, skv, dqk, dv, past, total;
  uint32_t bq, bk, bv, bmask, bpk, bpv, bnonpad, by, bprk, bprv, bqk; /* UINT32_MAX when absent */
} attn_t;

static ingot_ir_expr_t* I(attn_t* a, int64_t v) { return ingot_ir_int(a->f, v); }
static ingot_ir_expr_t* add(attn_t* a, ingot_ir_expr_t* x, ingot_ir_expr_t* y) { return ingot_ir_add(a->f, x, y); }
static ingot_ir_expr_t* mul(attn_t* a, ingot_ir_expr_t* x, ingot_ir_expr_t* y) { return ingot_ir_mul(a->f, x, y); }
static ingot_ir_expr_t* F(attn_t* a, double v) { return ingot_ir_float(a->f, a->dt, v); }

/* Element (b, h, s, d) of a [B, H, S, D] tensor stored 4-D, or 3-D as [B, S, H*D]. */
static ingot_ir_expr_t* bhsd(attn_t* a, bool four_d, int64_t heads, int64_t seq, int64_t dim, ingot_ir_expr_t* b,
                             ingot_ir_expr_t* h, ingot_ir_expr_t* s, ingot_ir_expr_t* d) {
  if (four_d) return add(a, mul(a, add(a, mul(a, add(a, mul(a, b, I(a, heads)), h), I(a, seq)), s), I(a, dim)), d);
  return add(a, mul(a, add(a, mul(a, b, I(a, seq)), s), I(a, heads * dim)), add(a, mul(a, h, I(a, dim)), d));
}

/* K (or V) at (b, kv head, t in [0, total), d). */
static ingot_ir_expr_t* kv_at(attn_t* a, bool value, ingot_ir_expr_t* b, ingot_ir_expr_t* hk, ingot_ir_expr_t* t,
                              ingot_ir_expr_t* d) {
  ingot_ir_func_t* f = a->f;
  int64_t dim = value ? a->dv : a->dqk;
  uint32_t present = value ? a->bprv : a->bprk;
  if (present != UINT32_MAX) return ingot_ir_load(f, present, bhsd(a, true, a->hkv, a->total, dim, b, hk, t, d));
  uint32_t in = value ? a->bv : a->bk, past = value ? a->bpv : a->bpk;
  if (past == UINT32_MAX) return ingot_ir_load(f, in, bhsd(a, a->four_d, a->hkv, a->skv, dim, b, hk, t, d));
  ingot_ir_expr_t* tp = ingot_ir_binary(f, INGOT_IR_MIN, t, I(a, a->past - 1));
  ingot_ir_expr_t* tn = ingot_ir_binary(f, INGOT_IR_MAX, ingot_ir_binary(f, INGOT_IR_SUB, t, I(a, a->past)), I(a, 0));
  return ingot_ir_select(f, ingot_ir_binary(f, INGOT_IR_LT, t, I(a, a->past)),
                         ingot_ir_load(f, past, bhsd(a, true, a->hkv, a->past, dim, b, hk, tp, d)),
                         ingot_ir_load(f, in, bhsd(a, a->four_d, a->hkv, a->skv, dim, b, hk, tn, d)));
}

/* present = past ++ new: one PURE stage per part. */
static void emit_present(lower_ctx_t* ctx, attn_t* a, bool value) {
  ingot_ir_func_t* f = a->f;
  uint32_t out = value ? a->bprv : a->bprk, in = value ? a->bv : a->bk, past = value ? a->bpv : a->bpk;
  int64_t dim = value ? a->dv : a->dqk;
  static const char* const kNames[4] = {"b", "h", "t", "d"};
  for (int part = past == UINT32_MAX ? 1 : 0; part < 2; ++part) {
    int64_t len = part == 0 ? a->past : a->skv;
    int64_t ext[4] = {a->batch, a->hkv, len, dim};
    lower_loops_t sp;
    lower_loops_make(ctx, &sp, 4, ext, kNames);
    ingot_ir_expr_t* src = part == 0 ? ingot_ir_load(f, past, bhsd(a, true, a->hkv, a->past, dim, sp.idx[0], sp.idx[1], sp.idx[2], sp.idx[3]))
                                     : ingot_ir_load(f, in, bhsd(a, a->four_d, a->hkv, a->skv, dim, sp.idx[0], sp.idx[1], sp.idx[2], sp.idx[3]));
    ingot_ir_expr_t* t = part == 0 ? sp.idx[2] : add(a, sp.idx[2], I(a, a->past));
    lower_emit_stage(ctx, INGOT_STAGE_PURE, &sp, NULL,
                     ingot_ir_store(f, out, bhsd(a, true, a->hkv, a->total, dim, sp.idx[0], sp.idx[1], t, sp.idx[3]), src));
  }
}

ingot_status_t lower_attention(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx))) return s;
  attn_t A;
  memset(&A, 0, sizeof(A));
  attn_t* a = &A;
  uint32_t in[7], out[4];
  for (uint32_t i = 0; i < 7; ++i) in[i] = lower_input(ctx, i);
  for (uint32_t i = 0; i < 4; ++i) out[i] = i < node->output_count ? node->outputs[i] : INGOT_NO_VALUE;
  for (uint32_t i = 0; i < 7; ++i) {
    if ((i < 3 || in[i] != INGOT_NO_VALUE) && (s = lower_check_value(ctx, in[i], false))) return s;
  }
  for (uint32_t i = 0; i < 4; ++i) {
    if ((i == 0 || out[i] != INGOT_NO_VALUE) && (s = lower_check_value(ctx, out[i], false))) return s;
  }
  const ingot_value_t* qv = lower_value(ctx, in[0]);
  const ingot_value_t* kv = lower_value(ctx, in[1]);
  const ingot_value_t* vv = lower_value(ctx, in[2]);
  a->dt = qv->dtype;
  if (a->dt != INGOT_DTYPE_F32 && a->dt != INGOT_DTYPE_F64) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "dtype %s is not supported (float32, float64)", ingot_dtype_name(a->dt));
  }
  const ingot_attention_params_t* ap = &ctx->params->u.attention; /* graph/params.c */
  a->four_d = qv->rank == 4;
  a->batch = qv->dims[0];
  if (a->four_d) {
    a->hq = qv->dims[1], a->sq = qv->dims[2], a->dqk = qv->dims[3];
    a->hkv = kv->dims[1], a->skv = kv->dims[2], a->dv = vv->dims[3];
  } else {
    a->hq = ap->q_num_heads;
    a->hkv = ap->kv_num_heads;
    if (a->hq < 1 || a->hkv < 1) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "q_num_heads/kv_num_heads missing");
    a->sq = qv->dims[1], a->dqk = qv->dims[2] / a->hq, a->skv = kv->dims[1], a->dv = vv->dims[2] / a->hkv;
  }
  if (a->hkv < 1 || a->hq % a->hkv != 0) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "%lld query heads do not group over %lld kv heads",
                      (long long)a->hq, (long long)a->hkv);
  }
  a->past = in[4] != INGOT_NO_VALUE ? lower_value(ctx, in[4])->dims[2] : 0;
  a->total = a->past + a->skv;
  if ((in[4] == INGOT_NO_VALUE) != (in[5] == INGOT_NO_VALUE)) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "past_key and past_value come together");
  }
  for (uint32_t i = 0; i < 7; ++i) {
    if (in[i] == INGOT_NO_VALUE || i == 3 || i == 6) continue;
    if (lower_value(ctx, in[i])->dtype != a->dt) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "inputs differ in type");
  }
  const ingot_value_t* mv = in[3] != INGOT_NO_VALUE ? lower_value(ctx, in[3]) : NULL;
  if (mv && ((mv->dtype != a->dt && mv->dtype != INGOT_DTYPE_BOOL) || mv->rank < 2 || mv->rank > 4 ||
             mv->dims[mv->rank - 1] > a->total)) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "attn_mask %s does not fit", lower_shape_str(ctx, in[3]));
  }
  if (in[6] != INGOT_NO_VALUE && lower_value(ctx, in[6])->dtype != INGOT_DTYPE_I64) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "nonpad_kv_seqlen must be int64");
  }
  double scale = ap->has_scale ? ap->scale : 1.0 / sqrt((double)a->dqk);
  double softcap = ap->softcap;
  bool causal = ap->is_causal;
  int64_t mode = ap->qk_matmul_output_mode;

  a->bq = lower_add_input(ctx, in[0], "q");
  a->bk = lower_add_input(ctx, in[1], "k");
  a->bv = lower_add_input(ctx, in[2], "v");
  a->bmask = in[3] != INGOT_NO_VALUE ? lower_add_input(ctx, in[3], "mask") : UINT32_MAX;
  a->bpk = in[4] != INGOT_NO_VALUE ? lower_add_input(ctx, in[4], "past_k") : UINT32_MAX;
  a->bpv = in[5] != INGOT_NO_VALUE ? lower_add_input(ctx, in[5], "past_v") : UINT32_MAX;
  a->bnonpad = in[6] != INGOT_NO_VALUE ? lower_add_input(ctx, in[6], "nonpad") : UINT32_MAX;
  a->by = lower_add_output(ctx, out[0], "y");
  a->bprk = out[1] != INGOT_NO_VALUE ? lower_add_output(ctx, out[1], "present_k") : UINT32_MAX;
  a->bprv = out[2] != INGOT_NO_VALUE ? lower_add_output(ctx, out[2], "present_v") : UINT32_MAX;
  a->bqk = out[3] != INGOT_NO_VALUE ? lower_add_output(ctx, out[3], "qk") : UINT32_MAX;
  ingot_ir_func_t* f = ctx->f;
  a->f = f;
  if (a->bprk != UINT32_MAX) emit_present(ctx, a, false);
  if (a->bprv != UINT32_MAX) emit_present(ctx, a, true);

  uint32_t row = lower_add_var(ctx, "row", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t j1 = lower_add_var(ctx, "j", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t j2 = lower_add_var(ctx, "j", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t d0 = lower_add_var(ctx, "dz", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t d3 = lower_add_var(ctx, "dn", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t mx = lower_add_var(ctx, "mx", INGOT_IR_VAR_LOCAL, a->dt);
  uint32_t l = lower_add_var(ctx, "l", INGOT_IR_VAR_LOCAL, a->dt);
  uint32_t pl = lower_add_var(ctx, "p", INGOT_IR_VAR_LOCAL, a->dt);
  ingot_ir_expr_t* r = ingot_ir_var(f, row);
  ingot_ir_expr_t* ii = ingot_ir_binary(f, INGOT_IR_MOD, r, I(a, a->sq));
  ingot_ir_expr_t* hh = ingot_ir_binary(f, INGOT_IR_MOD, ingot_ir_binary(f, INGOT_IR_DIV, r, I(a, a->sq)), I(a, a->hq));
  ingot_ir_expr_t* bb = ingot_ir_binary(f, INGOT_IR_DIV, r, I(a, a->sq * a->hq));
  ingot_ir_expr_t* hk = a->hq == a->hkv ? hh : ingot_ir_binary(f, INGOT_IR_DIV, hh, I(a, a->hq / a->hkv));

  /* The score of column j, as statements that leave it in local `sv`;
   * `qk_store` (mode 0..2) writes it to the qk output on the way. */
  struct {
    uint32_t sv;
    ingot_ir_stmt_t* stmts[8];
    uint32_t n;
  } sc[2];
  uint32_t jv[2] = {j1, j2};
  for (int pass = 0; pass < 2; ++pass) {
    ingot_ir_expr_t* je = ingot_ir_var(f, jv[pass]);
    uint32_t sv = lower_add_var(ctx, "s", INGOT_IR_VAR_LOCAL, a->dt);
    uint32_t kd = lower_add_var(ctx, "kd", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    ingot_ir_expr_t* kde = ingot_ir_var(f, kd);
    uint32_t n = 0;
    sc[pass].sv = sv;
    sc[pass].stmts[n++] = ingot_ir_local(f, sv, F(a, 0.0));
    ingot_ir_expr_t* qd = ingot_ir_load(f, a->bq, bhsd(a, a->four_d, a->hq, a->sq, a->dqk, bb, hh, ii, kde));
    sc[pass].stmts[n++] = ingot_ir_for(f, kd, a->dqk,
                                       ingot_ir_assign(f, sv, add(a, ingot_ir_var(f, sv), mul(a, qd, kv_at(a, false, bb, hk, je, kde)))));
    ingot_ir_expr_t* v = mul(a, ingot_ir_var(f, sv), F(a, scale));
    if (softcap > 0) {
      v = mul(a, F(a, softcap), ingot_ir_unary(f, INGOT_IR_TANH, ingot_ir_binary(f, INGOT_IR_DIV, v, F(a, softcap))));
    }
    sc[pass].stmts[n++] = ingot_ir_assign(f, sv, v);
    ingot_ir_expr_t* qk_at = bhsd(a, true, a->hq, a->sq, a->total, bb, hh, ii, je);
    if (pass == 0 && a->bqk != UINT32_MAX && mode <= 1) sc[pass].stmts[n++] = ingot_ir_store(f, a->bqk, qk_at, ingot_ir_var(f, sv));
    /* the bias: mask, causal, padding */
    ingot_ir_expr_t* bias = NULL;
    ingot_ir_expr_t* ninf = F(a, -INFINITY);
    if (a->bmask != UINT32_MAX) {
      const ingot_ir_buffer_t* mb = &f->buffers[a->bmask];
      int64_t cols = mb->dims[mb->rank - 1];
      ingot_ir_expr_t* full[4] = {bb, hh, ii, cols < a->total ? ingot_ir_binary(f, INGOT_IR_MIN, je, I(a, cols - 1)) : je};
      ingot_ir_expr_t* idx[4];
      for (int32_t k = 0; k < mb->rank; ++k) {
        int32_t o = 4 - mb->rank + k;
        idx[k] = mb->dims[k] == 1 && o < 3 ? I(a, 0) : full[o];
      }
      ingot_ir_expr_t* m = ingot_ir_load(f, a->bmask, ingot_ir_flat_index(f, a->bmask, idx));
      if (mb->dtype == INGOT_DTYPE_BOOL) m = ingot_ir_select(f, m, F(a, 0.0), ninf);
      if (cols < a->total) m = ingot_ir_select(f, ingot_ir_binary(f, INGOT_IR_LT, je, I(a, cols)), m, ninf);
      bias = m;
    }
    if (causal) {
      ingot_ir_expr_t* c = ingot_ir_select(f, ingot_ir_binary(f, INGOT_IR_LT, add(a, ii, I(a, a->past)), je), ninf, F(a, 0.0));
      bias = bias ? add(a, bias, c) : c;
    }
    if (a->bnonpad != UINT32_MAX) {
      ingot_ir_expr_t* c = ingot_ir_select(f, ingot_ir_binary(f, INGOT_IR_LT, je, ingot_ir_load(f, a->bnonpad, bb)), F(a, 0.0), ninf);
      bias = bias ? add(a, bias, c) : c;
    }
    if (bias) sc[pass].stmts[n++] = ingot_ir_assign(f, sv, add(a, ingot_ir_var(f, sv), bias));
    if (pass == 0 && a->bqk != UINT32_MAX && mode == 2) sc[pass].stmts[n++] = ingot_ir_store(f, a->bqk, qk_at, ingot_ir_var(f, sv));
    sc[pass].n = n;
  }
  ingot_ir_expr_t* ydv0 = bhsd(a, a->four_d, a->hq, a->sq, a->dv, bb, hh, ii, ingot_ir_var(f, d0));
  ingot_ir_expr_t* ydv3 = bhsd(a, a->four_d, a->hq, a->sq, a->dv, bb, hh, ii, ingot_ir_var(f, d3));
  /* pass 1: the row maximum */
  ingot_ir_stmt_t* p1[10];
  uint32_t n1 = 0;
  for (uint32_t k = 0; k < sc[0].n; ++k) p1[n1++] = sc[0].stmts[k];
  p1[n1++] = ingot_ir_assign(f, mx, ingot_ir_binary(f, INGOT_IR_MAX, ingot_ir_var(f, mx), ingot_ir_var(f, sc[0].sv)));
  /* pass 2: weights, their sum, the weighted values */
  uint32_t dd = lower_add_var(ctx, "dv", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  ingot_ir_expr_t* ydv = bhsd(a, a->four_d, a->hq, a->sq, a->dv, bb, hh, ii, ingot_ir_var(f, dd));
  ingot_ir_stmt_t* p2[12];
  uint32_t n2 = 0;
  for (uint32_t k = 0; k < sc[1].n; ++k) p2[n2++] = sc[1].stmts[k];
  p2[n2++] = ingot_ir_local(f, pl, ingot_ir_unary(f, INGOT_IR_EXP, ingot_ir_binary(f, INGOT_IR_SUB, ingot_ir_var(f, sc[1].sv), ingot_ir_var(f, mx))));
  p2[n2++] = ingot_ir_assign(f, l, add(a, ingot_ir_var(f, l), ingot_ir_var(f, pl)));
  p2[n2++] = ingot_ir_for(f, dd, a->dv,
                          ingot_ir_store(f, a->by, ydv, add(a, ingot_ir_load(f, a->by, ydv),
                                                            mul(a, ingot_ir_var(f, pl), kv_at(a, true, bb, hk, ingot_ir_var(f, j2), ingot_ir_var(f, dd))))));
  if (a->bqk != UINT32_MAX && mode == 3) {
    p2[n2++] = ingot_ir_store(f, a->bqk, bhsd(a, true, a->hq, a->sq, a->total, bb, hh, ii, ingot_ir_var(f, j2)), ingot_ir_var(f, pl));
  }
  ingot_ir_stmt_t* body[10];
  uint32_t nb = 0;
  body[nb++] = ingot_ir_local(f, mx, F(a, -INFINITY));
  body[nb++] = ingot_ir_for(f, j1, a->total, ingot_ir_block(f, p1, n1));
  body[nb++] = ingot_ir_local(f, l, F(a, 0.0));
  body[nb++] = ingot_ir_for(f, d0, a->dv, ingot_ir_store(f, a->by, ydv0, F(a, 0.0)));
  body[nb++] = ingot_ir_for(f, j2, a->total, ingot_ir_block(f, p2, n2));
  body[nb++] = ingot_ir_for(f, d3, a->dv,
                            ingot_ir_store(f, a->by, ydv3, ingot_ir_binary(f, INGOT_IR_DIV, ingot_ir_load(f, a->by, ydv3), ingot_ir_var(f, l))));
  if (a->bqk != UINT32_MAX && mode == 3) {
    uint32_t j3 = lower_add_var(ctx, "j", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    ingot_ir_expr_t* at = bhsd(a, true, a->hq, a->sq, a->total, bb, hh, ii, ingot_ir_var(f, j3));
    body[nb++] = ingot_ir_for(f, j3, a->total,
                              ingot_ir_store(f, a->bqk, at, ingot_ir_binary(f, INGOT_IR_DIV, ingot_ir_load(f, a->bqk, at), ingot_ir_var(f, l))));
  }
  lower_emit_other(ctx, ingot_ir_for(f, row, a->batch * a->hq * a->sq, ingot_ir_block(f, body, nb)));
  ctx->op_class = INGOT_OP_CLASS_ROW;
  ctx->workload = ingot_arena_printf(
      ctx->arena, "attention %s %dd b%lld hq%lld hkv%lld sq%lld skv%lld past%lld d%lld dv%lld mask=%s causal%d softcap%g mode%lld",
      ingot_dtype_name(a->dt), a->four_d ? 4 : 3, (long long)a->batch, (long long)a->hq, (long long)a->hkv,
      (long long)a->sq, (long long)a->skv, (long long)a->past, (long long)a->dqk, (long long)a->dv,
      mv ? lower_shape_str(ctx, in[3]) : "none", causal, softcap, (long long)mode);
  return INGOT_OK;
}

/* ---- RotaryEmbedding ----
 * One PURE stage over the output (the input's shape): element d of a head
 * (d < rotary_embedding_dim, r = rd/2 pairs; d beyond rd is copied):
 *   halves:      d < r:  x[d] cos[d] - x[d+r] sin[d]      d >= r: x[d-r] sin + x[d] cos  (index d-r)
 *   interleaved: d even: x[d] cos[d/2] - x[d+1] sin        d odd:  x[d-1] sin + x[d] cos
 * with cos/sin taken at position_ids[b, s] of a [max_pos, r] cache, or at
 * [b, s] of a [batch, seq, r] cache. */
ingot_status_t lower_rotary(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  uint32_t x = lower_input(ctx, 0), cs = lower_input(ctx, 1), sn = lower_input(ctx, 2), pos = lower_input(ctx, 3);
  uint32_t y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx))) return s;
  uint32_t all[5] = {x, cs, sn, pos, y};
  for (uint32_t i = 0; i < 5; ++i) {
    if ((i != 3 || pos != INGOT_NO_VALUE) && (s = lower_check_value(ctx, all[i], false))) return s;
  }
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* cv = lower_value(ctx, cs);
  ingot_dtype_t dt = xv->dtype;
  if ((dt != INGOT_DTYPE_F32 && dt != INGOT_DTYPE_F64) || cv->dtype != dt || lower_value(ctx, sn)->dtype != dt ||
      (pos != INGOT_NO_VALUE && lower_value(ctx, pos)->dtype != INGOT_DTYPE_I64) || (xv->rank != 3 && xv->rank != 4)) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "types or ranks are not supported");
  }
  bool four = xv->rank == 4;
  const ingot_attention_params_t* ap = &ctx->params->u.attention; /* graph/params.c */
  int64_t heads = four ? xv->dims[1] : ap->num_heads;
  if (heads < 1) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "num_heads is required for 3-D input");
  int64_t batch = xv->dims[0], seq = four ? xv->dims[2] : xv->dims[1];
  int64_t head = four ? xv->dims[3] : xv->dims[2] / heads;
  int64_t rd = ap->rotary_embedding_dim;
  if (rd == 0) rd = head;
  int64_t half = rd / 2;
  if (rd < 2 || rd > head || rd % 2 || cv->dims[cv->rank - 1] != half) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "rotary_embedding_dim %lld does not fit", (long long)rd);
  }
  bool interleaved = ap->interleaved;
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t bc = lower_add_input(ctx, cs, "cos_cache");
  uint32_t bs = lower_add_input(ctx, sn, "sin_cache");
  uint32_t bp = pos != INGOT_NO_VALUE ? lower_add_input(ctx, pos, "position_ids") : UINT32_MAX;
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  static const char* const kNames[4] = {"b", "h", "s", "d"};
  int64_t ext[4] = {batch, heads, seq, head};
  lower_loops_t sp;
  lower_loops_make(ctx, &sp, 4, ext, kNames);
  ingot_ir_expr_t* b = sp.idx[0];
  ingot_ir_expr_t* h = sp.idx[1];
  ingot_ir_expr_t* sq = sp.idx[2];
  ingot_ir_expr_t* d = sp.idx[3];
  attn_t A;
  memset(&A, 0, sizeof(A));
  A.f = f;
#define XAT(dd) bhsd(&A, four, heads, seq, head, b, h, sq, (dd))
  ingot_ir_expr_t* in_rot = ingot_ir_binary(f, INGOT_IR_LT, d, ingot_ir_int(f, rd));
  ingot_ir_expr_t* dr = ingot_ir_binary(f, INGOT_IR_MIN, d, ingot_ir_int(f, rd - 1)); /* inside the rotated part */
  ingot_ir_expr_t* first;   /* d is the "real" member of its pair */
  ingot_ir_expr_t* i;       /* pair index into the cache */
  ingot_ir_expr_t* partner; /* the other member of the pair */
  if (interleaved) {
    first = ingot_ir_binary(f, INGOT_IR_EQ, ingot_ir_binary(f, INGOT_IR_MOD, dr, ingot_ir_int(f, 2)), ingot_ir_int(f, 0));
    i = ingot_ir_binary(f, INGOT_IR_DIV, dr, ingot_ir_int(f, 2));
    partner = ingot_ir_select(f, first, ingot_ir_add(f, dr, ingot_ir_int(f, 1)), ingot_ir_binary(f, INGOT_IR_SUB, dr, ingot_ir_int(f, 1)));
  } else {
    first = ingot_ir_binary(f, INGOT_IR_LT, dr, ingot_ir_int(f, half));
    i = ingot_ir_binary(f, INGOT_IR_MOD, dr, ingot_ir_int(f, half));
    partner = ingot_ir_select(f, first, ingot_ir_add(f, dr, ingot_ir_int(f, half)), ingot_ir_binary(f, INGOT_IR_SUB, dr, ingot_ir_int(f, half)));
  }
  ingot_ir_expr_t* ci;
  if (bp != UINT32_MAX) {
    ingot_ir_expr_t* p = ingot_ir_load(f, bp, ingot_ir_add(f, ingot_ir_mul(f, b, ingot_ir_int(f, seq)), sq));
    p = ingot_ir_binary(f, INGOT_IR_MIN, ingot_ir_binary(f, INGOT_IR_MAX, p, ingot_ir_int(f, 0)), ingot_ir_int(f, cv->dims[0] - 1));
    ci = ingot_ir_add(f, ingot_ir_mul(f, p, ingot_ir_int(f, half)), i);
  } else {
    ci = ingot_ir_add(f, ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_mul(f, b, ingot_ir_int(f, seq)), sq), ingot_ir_int(f, half)), i);
  }
  ingot_ir_expr_t* cosv = ingot_ir_load(f, bc, ci);
  ingot_ir_expr_t* sinv = ingot_ir_load(f, bs, ci);
  ingot_ir_expr_t* self = ingot_ir_load(f, bx, XAT(dr));
  ingot_ir_expr_t* other = ingot_ir_load(f, bx, XAT(partner));
  /* first: self*cos - other*sin; second: other*sin + self*cos */
  ingot_ir_expr_t* rot = ingot_ir_select(f, first, ingot_ir_binary(f, INGOT_IR_SUB, ingot_ir_mul(f, self, cosv), ingot_ir_mul(f, other, sinv)),
                                         ingot_ir_add(f, ingot_ir_mul(f, other, sinv), ingot_ir_mul(f, self, cosv)));
  ingot_ir_expr_t* v = rd == head ? rot : ingot_ir_select(f, in_rot, rot, ingot_ir_load(f, bx, XAT(d)));
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &sp, NULL, ingot_ir_store(f, by, XAT(d), v));
#undef XAT
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE;
  ctx->workload = ingot_arena_printf(ctx->arena, "rotary %s x=%s heads%lld rd%lld interleaved%d pos%d",
                                     ingot_dtype_name(dt), lower_shape_str(ctx, x), (long long)heads, (long long)rd,
                                     interleaved, bp != UINT32_MAX);
  return INGOT_OK;
}

/* ---- LinearAttention ----
 * The recurrent state S [B, Hkv, dk, dv] lives in present_state (shape
 * inference makes sure the node has it). One OTHER stage over (b, kv head):
 *   S = past_state or 0
 *   for t:                                   (serial: the recurrence)
 *     for m < dv:                            (each column of S on its own)
 *       gated:  S[:, m] *= exp(decay[b, t, kv head (, d)])
 *       delta:  u = beta[b, t, kv head or 0] * (v[m] - sum_d S[d, m] k[d])   else u = v[m]
 *       S[:, m] += k[:] * u
 *       for each query head h of the group: y[b, t, h, m] = scale * sum_d q[h, d] S[d, m]
 * (query head h reads kv head h / (Hq / Hkv); scale defaults to 1/sqrt(dk)). */
ingot_status_t lower_linattn(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx))) return s;
  uint32_t in[6], y = node->output_count > 0 ? node->outputs[0] : INGOT_NO_VALUE;
  uint32_t st = node->output_count > 1 ? node->outputs[1] : INGOT_NO_VALUE;
  for (uint32_t i = 0; i < 6; ++i) {
    in[i] = lower_input(ctx, i);
    if ((i < 3 || in[i] != INGOT_NO_VALUE) && (s = lower_check_value(ctx, in[i], false))) return s;
    if (in[i] != INGOT_NO_VALUE && lower_value(ctx, in[i])->dtype != INGOT_DTYPE_F32) {
      return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "'%s' is not float32", lower_value(ctx, in[i])->name);
    }
  }
  if (st == INGOT_NO_VALUE) return lower_fail(ctx, INGOT_ERROR_INTERNAL, "present_state is missing (shape inference has not run)");
  if ((s = lower_check_value(ctx, y, false)) || (s = lower_check_value(ctx, st, false))) return s;
  const ingot_attention_params_t* ap = &ctx->params->u.attention; /* graph/params.c */
  int64_t hq = ap->q_num_heads, hkv = ap->kv_num_heads;
  const ingot_value_t* qv = lower_value(ctx, in[0]);
  const ingot_value_t* vv = lower_value(ctx, in[2]);
  if (hq < 1 || hkv < 1 || hq % hkv != 0 || qv->rank != 3) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "heads or shapes do not fit");
  }
  int64_t batch = qv->dims[0], steps = qv->dims[1], dk = qv->dims[2] / hq, dv = vv->dims[2] / hkv, group = hq / hkv;
  double scale = ap->scale != 0.0 ? ap->scale : 1.0 / sqrt((double)dk);
  int64_t decay_last = in[4] != INGOT_NO_VALUE ? lower_value(ctx, in[4])->dims[2] : 0;
  int64_t beta_last = in[5] != INGOT_NO_VALUE ? lower_value(ctx, in[5])->dims[2] : 0;
  uint32_t bq = lower_add_input(ctx, in[0], "q");
  uint32_t bk = lower_add_input(ctx, in[1], "k");
  uint32_t bv = lower_add_input(ctx, in[2], "v");
  uint32_t bpast = in[3] != INGOT_NO_VALUE ? lower_add_input(ctx, in[3], "past") : UINT32_MAX;
  uint32_t bdecay = in[4] != INGOT_NO_VALUE ? lower_add_input(ctx, in[4], "decay") : UINT32_MAX;
  uint32_t bbeta = in[5] != INGOT_NO_VALUE ? lower_add_input(ctx, in[5], "beta") : UINT32_MAX;
  uint32_t by = lower_add_output(ctx, y, "y");
  uint32_t bs = lower_add_output(ctx, st, "state");
  ingot_ir_func_t* f = ctx->f;
  attn_t A;
  memset(&A, 0, sizeof(A));
  A.f = f;
  A.dt = INGOT_DTYPE_F32;
  attn_t* a = &A;
  uint32_t row = lower_add_var(ctx, "row", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t d0 = lower_add_var(ctx, "d0", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t m0 = lower_add_var(ctx, "m0", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t tv = lower_add_var(ctx, "t", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t mv = lower_add_var(ctx, "m", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t dg = lower_add_var(ctx, "dg", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t dr = lower_add_var(ctx, "dr", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t du = lower_add_var(ctx, "du", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t gq = lower_add_var(ctx, "g", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t dq = lower_add_var(ctx, "dq", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t ret = lower_add_var(ctx, "ret", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
  uint32_t upd = lower_add_var(ctx, "u", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
  uint32_t acc = lower_add_var(ctx, "o", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
  ingot_ir_expr_t* r = ingot_ir_var(f, row);
  ingot_ir_expr_t* b = ingot_ir_binary(f, INGOT_IR_DIV, r, I(a, hkv));
  ingot_ir_expr_t* hk = ingot_ir_binary(f, INGOT_IR_MOD, r, I(a, hkv));
  ingot_ir_expr_t* t = ingot_ir_var(f, tv);
  ingot_ir_expr_t* m = ingot_ir_var(f, mv);
  ingot_ir_expr_t* bt = add(a, mul(a, b, I(a, steps)), t); /* (b, t) row of the [B, T, ...] inputs */
#define S_AT(d, mm) add(a, mul(a, add(a, mul(a, r, I(a, dk)), (d)), I(a, dv)), (mm))
#define K_AT(d) add(a, mul(a, bt, I(a, hkv * dk)), add(a, mul(a, hk, I(a, dk)), (d)))
  ingot_ir_stmt_t* init_body = ingot_ir_store(f, bs, S_AT(ingot_ir_var(f, d0), ingot_ir_var(f, m0)),
                                              bpast != UINT32_MAX ? ingot_ir_load(f, bpast, S_AT(ingot_ir_var(f, d0), ingot_ir_var(f, m0)))
                                                                  : F(a, 0.0));
  ingot_ir_stmt_t* col[6];
  uint32_t nc = 0;
  if (bdecay != UINT32_MAX) {
    ingot_ir_expr_t* de = ingot_ir_var(f, dg);
    ingot_ir_expr_t* gi = decay_last == hkv ? add(a, mul(a, bt, I(a, hkv)), hk) : K_AT(de);
    ingot_ir_expr_t* sat = S_AT(de, m);
    col[nc++] = ingot_ir_for(f, dg, dk,
                             ingot_ir_store(f, bs, sat, mul(a, ingot_ir_load(f, bs, sat), ingot_ir_unary(f, INGOT_IR_EXP, ingot_ir_load(f, bdecay, gi)))));
  }
  ingot_ir_expr_t* vm = ingot_ir_load(f, bv, add(a, mul(a, bt, I(a, hkv * dv)), add(a, mul(a, hk, I(a, dv)), m)));
  if (bbeta != UINT32_MAX) {
    ingot_ir_expr_t* de = ingot_ir_var(f, dr);
    col[nc++] = ingot_ir_local(f, ret, F(a, 0.0));
    col[nc++] = ingot_ir_for(f, dr, dk,
                             ingot_ir_assign(f, ret, add(a, ingot_ir_var(f, ret), mul(a, ingot_ir_load(f, bs, S_AT(de, m)), ingot_ir_load(f, bk, K_AT(de))))));
    ingot_ir_expr_t* bi = beta_last == hkv ? add(a, mul(a, bt, I(a, hkv)), hk) : bt;
    col[nc++] = ingot_ir_local(f, upd, mul(a, ingot_ir_load(f, bbeta, bi), ingot_ir_binary(f, INGOT_IR_SUB, vm, ingot_ir_var(f, ret))));
  } else {
    col[nc++] = ingot_ir_local(f, upd, vm);
  }
  {
    ingot_ir_expr_t* de = ingot_ir_var(f, du);
    ingot_ir_expr_t* sat = S_AT(de, m);
    col[nc++] = ingot_ir_for(f, du, dk,
                             ingot_ir_store(f, bs, sat, add(a, ingot_ir_load(f, bs, sat), mul(a, ingot_ir_load(f, bk, K_AT(de)), ingot_ir_var(f, upd)))));
  }
  {
    ingot_ir_expr_t* h = add(a, mul(a, hk, I(a, group)), ingot_ir_var(f, gq));
    ingot_ir_expr_t* de = ingot_ir_var(f, dq);
    ingot_ir_expr_t* qd = ingot_ir_load(f, bq, add(a, mul(a, bt, I(a, hq * dk)), add(a, mul(a, h, I(a, dk)), de)));
    ingot_ir_stmt_t* rd[3] = {
        ingot_ir_local(f, acc, F(a, 0.0)),
        ingot_ir_for(f, dq, dk, ingot_ir_assign(f, acc, add(a, ingot_ir_var(f, acc), mul(a, qd, ingot_ir_load(f, bs, S_AT(de, m)))))),
        ingot_ir_store(f, by, add(a, mul(a, bt, I(a, hq * dv)), add(a, mul(a, h, I(a, dv)), m)),
                       mul(a, F(a, scale), ingot_ir_var(f, acc))),
    };
    col[nc++] = ingot_ir_for(f, gq, group, ingot_ir_block(f, rd, 3));
  }
#undef S_AT
#undef K_AT
  ingot_ir_stmt_t* body[2] = {
      ingot_ir_for(f, d0, dk, ingot_ir_for(f, m0, dv, init_body)),
      ingot_ir_for(f, tv, steps, ingot_ir_for(f, mv, dv, ingot_ir_block(f, col, nc))),
  };
  lower_emit_other(ctx, ingot_ir_for(f, row, batch * hkv, ingot_ir_block(f, body, 2)));
  ctx->op_class = INGOT_OP_CLASS_ROW;
  ctx->workload = ingot_arena_printf(ctx->arena, "linearattention f32 b%lld t%lld hq%lld hkv%lld dk%lld dv%lld decay%lld beta%lld past%d",
                                     (long long)batch, (long long)steps, (long long)hq, (long long)hkv, (long long)dk,
                                     (long long)dv, (long long)decay_last, (long long)beta_last, bpast != UINT32_MAX);
  return INGOT_OK;
}
