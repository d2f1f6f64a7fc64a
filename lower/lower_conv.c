/* Conv (1-D, 2-D, 3-D; groups incl. depthwise; pads, auto_pad, strides,
 * dilations; bias; fused activation):
 *
 *   UPDATE  y[n,k,o..] = (first step ? bias[k] or 0 : y[n,k,o..])
 *                        + x[n, g(k)*Cg + rc, o*s - p + r*d ..] * w[k, rc, r..]
 *           spatial (n, k, o..), reduce (rc, r..); padded taps read a clamped
 *           index and contribute 0 through a SELECT
 *   FINISH  y = act(y [+ residual]), only with a fused activation or a fused
 *           residual Add (epilogue.residual_input: input 3, the output's shape)
 *
 * A 1x1 conv (stride 1, no padding, group 1) whose layout says so
 * (node.layout.pointwise_matmul; by default when its output positions are a
 * multiple of 16) lowers as a matrix product along the flattened positions
 * (vectors along p, where input and output are contiguous):
 *   UPDATE  y[n, k, p] += x[n, rc, p] * w[k, rc]   (w[kb, rc, ki] packed)
 *
 * With a packed weight (node.weight_block = B > 1, w [ceil(K/B), C, r.., B]) the
 * UPDATE runs over spatial (n, kb, o.., ki) with k = kb*B + ki, so that the
 * B output channels of a tap are one contiguous vector of weights and the
 * input tap is one scalar for all of them:
 *   UPDATE  y[n, kb*B+ki, o..] += x[n, rc, o*s - p + r*d ..] * w[kb, rc, r.., ki]
 *
 * ConvInteger: the same nest over uint8/int8 x and w into int32, each
 * operand widened and its zero point subtracted (x: a scalar; w: a scalar
 * or one per output channel); padded taps contribute 0. Its weight may be
 * packed in panels as Conv's (uint8/int8 panels), or as dot4 words
 * (node.weight_dot4_channels: 4 input channels an int32, w's zero point
 * folded in; emit_dot4):
 *   UPDATE  y[n, kb*B+ki, o..] += dot4(X[n, rg, tap], w[kb, rg, r.., ki])
 *
 * QLinearConv: the same int32 terms (inputs x 0, x_zero_point 2, w 3,
 * w_zero_point 5, int32 bias 8), summed in a local accumulator and
 * requantized to uint8/int8 in one OTHER stage (lower_emit_accumulate,
 * lower_requant_value: scales per tensor, w's also per output channel;
 * the arithmetic is in lower_quant.c's header):
 *   for k, n, o..: acc = bias[k]; for rc, r..: acc += (x - xz) * (w - wz[k]);
 *                  y[n,k,o..] = requant(acc, k)
 * (a large one is split into ConvInteger + Requantize before lowering,
 * ingot_graph_split_qlinear, to get the contraction schedules). */
#include <string.h>
#include <stdlib.h>

#include "lower_internal.h"

ingot_status_t lower_ints_attr(lower_ctx_t* ctx, const char* name, uint32_t count, int64_t fallback, int64_t min_value,
                               int64_t* out) {
  uint32_t n = 0;
  const int64_t* v = ingot_node_attr_ints(ctx->node, name, &n);
  if (!v) {
    if (ingot_node_attr(ctx->node, name)) {
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "attribute '%s' must be a list of ints", name);
    }
    for (uint32_t i = 0; i < count; ++i) out[i] = fallback;
    return INGOT_OK;
  }
  if (n != count) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "attribute '%s' has %u entries, expected %u", name, n, count);
  }
  for (uint32_t i = 0; i < count; ++i) {
    if (v[i] < min_value) {
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "attribute '%s' entry %u is %lld (must be >= %lld)", name, i,
                        (long long)v[i], (long long)min_value);
    }
    out[i] = v[i];
  }
  return INGOT_OK;
}

void lower_append_ints(ingot_strbuf_t* sb, const char* tag, const int64_t* v, uint32_t n) {
  ingot_strbuf_appendf(sb, " %s", tag);
  for (uint32_t i = 0; i < n; ++i) ingot_strbuf_appendf(sb, "%s%lld", i ? "x" : "", (long long)v[i]);
}

/* The window geometry of a conv. */
typedef struct conv_window_t {
  uint32_t nsp;
  const int64_t *strides, *pads, *dil, *in_sp, *out_sp, *k;
  bool c_last; /* x is [N, spatial.., C] (dot4 words of the last axis, node.words_last) */
} conv_window_t;

/* x[n, c, o*s - p + r*d ..] for output position o (nsp indices) and taps
 * red[1..]; *out_cond is the in-range test of padded taps, NULL when no tap
 * can fall outside (then the index is not clamped either). */
/* The most reduction steps (input channels of a group times taps) whose
 * weights a ConvInteger sums into each output's start to take x's zero
 * point out of its multiply-adds (lower_conv). */
#define FOLD_ZX_MAX_TAPS 32

static ingot_ir_expr_t* window_load(lower_ctx_t* ctx, uint32_t bx, const conv_window_t* win, ingot_ir_expr_t* n,
                                    ingot_ir_expr_t* c, ingot_ir_expr_t* const* o, const lower_loops_t* red,
                                    ingot_ir_expr_t** out_cond) {
  ingot_ir_expr_t* xi[5] = {n, c};
  ingot_ir_expr_t* cond = NULL;
  /* x's channels (words) last: [N, spatial.., C] (node.words_last) */
  uint32_t first = win->c_last ? 1 : 2;
  if (win->c_last) xi[1 + win->nsp] = c;
  for (uint32_t i = 0; i < win->nsp; ++i) {
    ingot_ir_expr_t* in_range;
    lower_window_axis(ctx, o[i], red->idx[1 + i], win->strides[i], win->pads[i], win->dil[i], win->in_sp[i],
                      win->out_sp[i], win->k[i], &in_range, &xi[first + i]);
    cond = lower_and(ctx, cond, in_range);
  }
  *out_cond = cond;
  return ingot_ir_load(ctx->f, bx, ingot_ir_flat_index(ctx->f, bx, xi));
}

/* Flat index of y at (n, k, o..), shifted by the output padding's begin. */
static ingot_ir_expr_t* y_index(ingot_ir_func_t* f, uint32_t by, ingot_ir_expr_t* const* idx, uint32_t nsp,
                                const int64_t* opad) {
  if (!opad) return ingot_ir_flat_index(f, by, idx);
  ingot_ir_expr_t* shifted[5] = {idx[0], idx[1]};
  for (uint32_t i = 0; i < nsp; ++i) shifted[2 + i] = ingot_ir_add(f, idx[2 + i], ingot_ir_int(f, opad[i]));
  return ingot_ir_flat_index(f, by, shifted);
}

/* Zeroes the border of a padded 2-D output (epilogue.output_padded): the rows
 * above and below the interior, then the columns left and right of it. The
 * output is [N, C, H', W'], or with lanes > 0 blocked [N, C (blocks), H', W',
 * lanes], whole vectors of lanes a position. */
static void emit_zero_border(lower_ctx_t* ctx, uint32_t by, int64_t batch, int64_t cout, const int64_t* out_sp,
                             const int64_t* opad, int64_t lanes, ingot_ir_expr_t* value) {
  ingot_ir_func_t* f = ctx->f;
  int64_t wp = out_sp[1] + opad[1] + opad[3];
  struct { int64_t count, first; bool rows; } part[4] = {
      {opad[0], 0, true}, {opad[2], opad[0] + out_sp[0], true},      /* top, bottom rows */
      {opad[1], 0, false}, {opad[3], opad[1] + out_sp[1], false},    /* left, right columns */
  };
  uint32_t rank = lanes > 0 ? 5 : 4;
  for (int i = 0; i < 4; ++i) {
    if (part[i].count == 0) continue;
    static const char* const kRows[5] = {"n", "k", "pr", "pw", "ki"};
    static const char* const kCols[5] = {"n", "k", "ph", "pc", "ki"};
    int64_t ext[5] = {batch, cout, part[i].rows ? part[i].count : out_sp[0], part[i].rows ? wp : part[i].count, lanes};
    lower_loops_t sp;
    lower_loops_make(ctx, &sp, rank, ext, part[i].rows ? kRows : kCols);
    ingot_ir_expr_t* at[5] = {sp.idx[0], sp.idx[1], sp.idx[2], sp.idx[3], rank == 5 ? sp.idx[4] : NULL};
    if (part[i].rows) {
      at[2] = ingot_ir_add(f, sp.idx[2], ingot_ir_int(f, part[i].first));
    } else {
      at[2] = ingot_ir_add(f, sp.idx[2], ingot_ir_int(f, opad[0]));
      at[3] = ingot_ir_add(f, sp.idx[3], ingot_ir_int(f, part[i].first));
    }
    lower_emit_stage(ctx, INGOT_STAGE_PURE, &sp, NULL,
                     ingot_ir_store(f, by, ingot_ir_flat_index(f, by, at), value ? value : lower_f32(ctx, 0.0)));
  }
}

/* An integer operand (uint8/int8) widened to int32, less its zero point
 * (buffer bz, UINT32_MAX: none; element zi). */
static ingot_ir_expr_t* int_operand(lower_ctx_t* ctx, ingot_ir_expr_t* v, uint32_t bz, ingot_ir_expr_t* zi) {
  ingot_ir_func_t* f = ctx->f;
  v = ingot_ir_cast(f, INGOT_DTYPE_I32, v);
  if (bz == UINT32_MAX) return v;
  return ingot_ir_binary(f, INGOT_IR_SUB, v, ingot_ir_cast(f, INGOT_DTYPE_I32, ingot_ir_load(f, bz, zi)));
}

/* Channel per*g + j of word g (of `per` channels) of `channels` channels;
 * past the last, the last again (it meets a zero weight). */
static ingot_ir_expr_t* word_channel(ingot_ir_func_t* f, ingot_ir_expr_t* g, int64_t j, int64_t channels, int64_t per) {
  ingot_ir_expr_t* ch = ingot_ir_add(f, ingot_ir_mul(f, g, ingot_ir_int(f, per)), ingot_ir_int(f, j));
  if (channels % per && j >= channels % per) ch = ingot_ir_binary(f, INGOT_IR_MIN, ch, ingot_ir_int(f, channels - 1));
  return ch;
}

/* word + field j of a dot4 word of `per` fields (4 bytes, or 2 16-bit
 * halves): x' = x (uint8) or x + 128 (int8) as uint32, shifted to bits
 * (32/per)j.. (disjoint bits: the sum is the word); word NULL for the
 * first. x' is 0..255, so a half holds it as a signed 16-bit value too. */
static ingot_ir_expr_t* word_add_byte(ingot_ir_func_t* f, ingot_ir_expr_t* word, ingot_ir_expr_t* x, bool x_signed,
                                      int64_t j, int64_t per) {
  ingot_ir_expr_t* byte = x_signed ? ingot_ir_add(f, ingot_ir_cast(f, INGOT_DTYPE_I32, x),
                                                  ingot_ir_cast(f, INGOT_DTYPE_I32, ingot_ir_int(f, 128)))
                                   : x;
  byte = ingot_ir_cast(f, INGOT_DTYPE_U32, byte);
  if (j) byte = ingot_ir_mul(f, byte, ingot_ir_cast(f, INGOT_DTYPE_U32, ingot_ir_int(f, (int64_t)1 << (32 / per * j))));
  return word ? ingot_ir_add(f, word, byte) : byte;
}

/* A dot4 conv over words vectorizes along its output row when its
 * reduction has at most DOT4_ROW_MAX_STEPS steps (groups of 4 channels x
 * taps) and its stride along the row is 1, or when its input has one group
 * (an image stem, any stride), and the row has at least DOT4_ROW_MIN_WIDTH
 * outputs. On a Zen 4 core (QDQ ResNet-50 and MobileNetV2, `ingot run
 * --bench 30 --trace`, per-step minima, 2026-12-02): 1x1 convs from 128 to
 * 384 channels 0.42 -> 0.27 ms, the 7x7/2 stem 1.40 -> 0.94 ms and
 * MobileNetV2's 3x3/2 stem 0.32 -> 0.10 ms; strided 1x1 convs from 256
 * channels and convs from 512 ran as fast or 5-15 % slower, so they keep
 * the channel form. */
#define DOT4_ROW_MAX_STEPS 64
#define DOT4_ROW_MIN_WIDTH INGOT_DOT4_ROW_MIN_WIDTH
/* With words of 2 channels (node.dot_pairs) or dot4s (node.dot_sat16),
 * i.e. x86 without VNNI, 8 int32 lanes on AVX2, the row must be wider: on a
 * Zen 3 core (AVX2; single
 * QLinearConv models, `ingot run --bench 50`, minima, 2026-12-04) 1x1 convs
 * with 28-wide rows ran 1.6-1.7x faster in the channel form (128 -> 512:
 * 2.18 -> 1.35 ms, 32 -> 192: 0.41 -> 0.24 ms), with 56-wide rows as fast
 * or up to 2x faster along the row (24 -> 144: 0.29 vs 0.57 ms). */
#define DOT2_ROW_MIN_WIDTH INGOT_DOT2_ROW_MIN_WIDTH

/* ConvInteger's UPDATE with dot4 words (node.weight_dot4_channels = C, w
 * [P, G + 1, k.., B] int32, G = ceil(C / 4)): spatial (n, kb, o.., ki),
 * reduce (rg, r..) over groups of 4 input channels and taps:
 *   y[n, kb*B+ki, o..] = (first step ? -zx' * S[k] : y) + dot4(X, w[kb, rg, r.., ki])
 * X packs x'[n, 4rg + j, tap] (j = 0..3; past C the last channel again,
 * which meets a zero weight) as the bytes of an int32, x' = x for uint8 x,
 * x + 128 for int8 (then zx' = zx + 128). S[k] = w[kb, G, 0.., ki] is the
 * sum of k's int8 weights w', so sum (x - zx) w' = sum x' w' - zx' S[k].
 * The conv has no padding (its weight is packed so only after
 * ingot_graph_pad_conv_inputs moved it out); fails otherwise. */
static ingot_status_t emit_dot4(lower_ctx_t* ctx, const conv_window_t* win, int64_t channels, int64_t cout, int64_t block,
                      uint32_t bx, uint32_t bw, uint32_t bxz, uint32_t by, const int64_t* sext,
                      const char* const* snames, const int64_t* rext, const char* const* rnames,
                      lower_loops_t* out_loops, ingot_ir_expr_t** out_yidx) {
  ingot_ir_func_t* f = ctx->f;
  uint32_t nsp = win->nsp;
  int64_t per = ingot_node_dot_channels(ctx->node), groups = (channels + per - 1) / per;
  /* x's words (node.x_dot4_words) already hold x' */
  bool x_words = ctx->node->x_dot4_words != 0;
  bool x_signed = x_words ? ctx->node->x_dot4_words == 2 : f->buffers[bx].dtype == INGOT_DTYPE_I8;
  /* The loop order: (n, kb, o.., ki), vectors along a panel's outputs and
   * a tile of output positions; or (see DOT4_ROW_MAX_STEPS: a 1x1 conv from
   * up to 256 channels, an image stem) (n, kb, ki, o..): vectors along the
   * output row, a tile of outputs k, each w word broadcast, and y's rows
   * stored whole instead of scattered across channel planes at the end of
   * the reduction. */
  int64_t taps = 1;
  for (uint32_t i = 0; i < nsp; ++i) taps *= rext[1 + i];
  /* (steps counted as 4-channel groups whatever the word holds) */
  int64_t groups4 = (channels + 3) / 4;
  bool no_vnni = per == 2 || ctx->node->dot_sat16; /* dot2 or dot4s: x86 without VNNI */
  bool row = x_words && !win->c_last && sext[1 + nsp] >= (no_vnni ? DOT2_ROW_MIN_WIDTH : DOT4_ROW_MIN_WIDTH) &&
             ((groups4 * taps <= DOT4_ROW_MAX_STEPS && win->strides[nsp - 1] == 1) || groups4 == 1);
  uint32_t ki_pos = row ? 2 : 2 + nsp, o_pos = row ? 3 : 2; /* where ki and o.. sit among the loops */
  const char* bnames[6] = {"n", "kb"};
  int64_t bext[6] = {sext[0], cout / block};
  for (uint32_t i = 0; i < nsp; ++i) {
    bnames[o_pos + i] = snames[2 + i];
    bext[o_pos + i] = sext[2 + i];
  }
  bnames[ki_pos] = "ki";
  bext[ki_pos] = block;
  const char* gnames[4] = {"rg"};
  int64_t gext[4] = {groups};
  for (uint32_t i = 0; i < nsp; ++i) {
    gnames[1 + i] = rnames[1 + i];
    gext[1 + i] = rext[1 + i];
  }
  lower_loops_t bsp, red;
  lower_loops_make(ctx, &bsp, 3 + nsp, bext, bnames);
  lower_loops_make(ctx, &red, 1 + nsp, gext, gnames);
  /* zx' (int32), x's zero point as an unsigned byte */
  ingot_ir_expr_t* zx = bxz != UINT32_MAX ? ingot_ir_cast(f, INGOT_DTYPE_I32, ingot_ir_load(f, bxz, ingot_ir_int(f, 0)))
                                          : ingot_ir_cast(f, INGOT_DTYPE_I32, ingot_ir_int(f, 0));
  if (x_signed) zx = ingot_ir_add(f, zx, ingot_ir_cast(f, INGOT_DTYPE_I32, ingot_ir_int(f, 128)));
  /* X: four bytes, summed as uint32 (disjoint bits), then int32 */
  ingot_ir_expr_t* word = NULL;
  ingot_ir_expr_t* cond = NULL;
  if (x_words) word = window_load(ctx, bx, win, bsp.idx[0], red.idx[0], bsp.idx + o_pos, &red, &cond);
  for (int64_t j = 0; j < per && !x_words; ++j) {
    ingot_ir_expr_t* ch = word_channel(f, red.idx[0], j, channels, per);
    word = word_add_byte(f, word, window_load(ctx, bx, win, bsp.idx[0], ch, bsp.idx + o_pos, &red, &cond), x_signed, j,
                         per);
  }
  if (cond) return lower_fail(ctx, INGOT_ERROR_INTERNAL, "dot4 words for a conv with padding");
  ingot_ir_expr_t* xw = ingot_ir_cast(f, INGOT_DTYPE_I32, word);
  ingot_ir_expr_t* wi[6] = {bsp.idx[1], red.idx[0]};
  for (uint32_t i = 0; i < nsp; ++i) wi[2 + i] = red.idx[1 + i];
  wi[2 + nsp] = bsp.idx[ki_pos];
  ingot_ir_expr_t* wval = ingot_ir_load(f, bw, ingot_ir_flat_index(f, bw, wi));
  ingot_ir_expr_t* yidx[5] = {bsp.idx[0], ingot_ir_add(f, ingot_ir_mul(f, bsp.idx[1], ingot_ir_int(f, block)),
                                                       bsp.idx[ki_pos])};
  for (uint32_t i = 0; i < nsp; ++i) yidx[2 + i] = bsp.idx[o_pos + i];
  ingot_ir_expr_t* byi = ingot_ir_flat_index(f, by, yidx);
  /* the start: -zx' * S[k] (0 for uint8 x without a zero point) */
  ingot_ir_expr_t* si[6] = {bsp.idx[1], ingot_ir_int(f, groups)};
  for (uint32_t i = 0; i < nsp; ++i) si[2 + i] = ingot_ir_int(f, 0);
  si[2 + nsp] = bsp.idx[ki_pos];
  ingot_ir_expr_t* init =
      bxz == UINT32_MAX && !x_signed
          ? ingot_ir_cast(f, INGOT_DTYPE_I32, ingot_ir_int(f, 0))
          : ingot_ir_mul(f, ingot_ir_unary(f, INGOT_IR_NEG, zx), ingot_ir_load(f, bw, ingot_ir_flat_index(f, bw, si)));
  ingot_ir_expr_t* start = lower_update_start(ctx, &red, by, byi, init);
  ingot_ir_stmt_t* update = ingot_ir_store(f, by, byi, ingot_ir_add(f, start, ingot_ir_binary(f, per == 2 ? INGOT_IR_DOT2 : ctx->node->dot_sat16 ? INGOT_IR_DOT4S : INGOT_IR_DOT4, xw, wval)));
  lower_emit_stage(ctx, INGOT_STAGE_UPDATE, &bsp, &red, update);
  /* the register tile: output positions (the last o), or outputs k */
  ctx->stages.data[ctx->stages.count - 1].tile_axis = row ? (int32_t)ki_pos : (int32_t)(1 + nsp);
  if (cout % block) lower_emit_remainder(ctx, &bsp, &red, update, 1, ki_pos, cout / block, cout % block);
  *out_loops = bsp;
  for (uint32_t i = 0; i < 2 + nsp; ++i) out_yidx[i] = yidx[i];
  return INGOT_OK;
}

/* The FINISH stage of a fused requantization (epilogue.requant_input):
 * z[i] = requant(acc[i] + bias[k]) over loops that run like the UPDATE's
 * spatial loops `upd` (each aliases its UPDATE loop, ingot_ir_set_var_value),
 * `yidx` the output's index per axis (n, k, o..) in the UPDATE's variables
 * (without `alias`: loops of its own, `upd` just their shape). Aliased, the register-tiled UPDATE can take the requantization into its
 * final stores (ingot_schedule_accumulate_ex); otherwise the stage runs on
 * its own over the int32 sums. */
static void emit_requant_finish(lower_ctx_t* ctx, const lower_loops_t* upd, ingot_ir_expr_t* const* yidx, uint32_t rank,
                                uint32_t bacc, uint32_t bz, uint32_t bbias, const lower_requant_t* rq, bool alias,
                                const int64_t* zpad) {
  ingot_ir_func_t* f = ctx->f;
  const char* names[INGOT_MAX_STAGE_AXES];
  for (uint32_t i = 0; i < upd->count; ++i) names[i] = f->vars[upd->vars[i]].name;
  lower_loops_t fin;
  lower_loops_make(ctx, &fin, upd->count, upd->extents, names);
  ingot_ir_expr_t* idx[5];
  for (uint32_t d = 0; d < rank; ++d) {
    idx[d] = yidx[d];
    for (uint32_t i = 0; i < upd->count; ++i) idx[d] = ingot_ir_expr_substitute(f, idx[d], upd->vars[i], fin.idx[i]);
  }
  for (uint32_t i = 0; i < upd->count && alias; ++i) ingot_ir_set_var_value(f, fin.vars[i], upd->idx[i]);
  ingot_ir_expr_t* v = ingot_ir_load(f, bacc, ingot_ir_flat_index(f, bacc, idx));
  if (bbias != UINT32_MAX) v = ingot_ir_add(f, v, ingot_ir_load(f, bbias, idx[1]));
  v = lower_requant_value(ctx, rq, v, idx[1]);
  lower_emit_stage(ctx, INGOT_STAGE_FINISH, &fin, NULL, ingot_ir_store(f, bz, y_index(f, bz, idx, rank - 2, zpad), v));
}

ingot_status_t lower_conv(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  bool qlinear = node->op == INGOT_OP_QLINEARCONV;
  bool integer = node->op == INGOT_OP_CONVINTEGER || qlinear;
  uint32_t x = lower_input(ctx, 0), w = lower_input(ctx, qlinear ? 3 : 1);
  uint32_t b = qlinear ? lower_input(ctx, 8) : integer ? INGOT_NO_VALUE : lower_input(ctx, 2);
  uint32_t xzp = integer ? lower_input(ctx, 2) : INGOT_NO_VALUE;
  uint32_t wzp = qlinear ? lower_input(ctx, 5) : integer ? lower_input(ctx, 3) : INGOT_NO_VALUE;
  const ingot_epilogue_t* ep = &node->epilogue;
  /* A ConvInteger with a fused requantization (epilogue.requant_input): the
   * int32 sums in output 1, the bytes z in output 0. */
  uint32_t rqi = node->op == INGOT_OP_CONVINTEGER ? ep->requant_input : 0;
  uint32_t z = rqi ? node->outputs[0] : INGOT_NO_VALUE;
  uint32_t y = rqi ? (node->output_count > 1 ? node->outputs[1] : INGOT_NO_VALUE)
                   : node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  uint32_t res = !integer && ep->residual_input ? lower_input(ctx, ep->residual_input) : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_check_value(ctx, x, !integer)) ||
      (s = integer ? lower_check_value(ctx, w, false) : lower_check_weight(ctx, w)) ||
      (s = lower_check_value(ctx, y, !integer))) {
    return s;
  }
  if (b != INGOT_NO_VALUE && (s = qlinear ? lower_check_value_dt(ctx, b, LOWER_DT(INGOT_DTYPE_I32))
                                          : lower_check_value(ctx, b, true))) {
    return s;
  }
  if (ep->residual_input && (res == INGOT_NO_VALUE || (s = lower_check_value(ctx, res, true)) ||
                         (s = lower_check_broadcast(ctx, res, y)) ||
                         ingot_value_numel(lower_value(ctx, res)) != ingot_value_numel(lower_value(ctx, y)))) {
    return s ? s : lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "the fused residual must have the output's shape");
  }
  /* ConvInteger with dot4 words (node.weight_dot4_channels): w is int32,
   * its zero point folded in (input 3 not read). */
  int64_t dot4_channels = node->op == INGOT_OP_CONVINTEGER && node->weight_block ? node->weight_dot4_channels : 0;
  /* Its w_zero_point stays an argument (unread), as in the unpacked form
   * another target of the bundle may lower. */
  uint32_t wzp_unread = INGOT_NO_VALUE;
  if (dot4_channels) {
    wzp_unread = wzp;
    wzp = INGOT_NO_VALUE;
  }
  /* x as the int32 words of x' (node.x_dot4_words, ai.ingot Dot4Words) */
  bool x_words = dot4_channels && node->x_dot4_words;
  if (x_words && (s = lower_check_value_dt(ctx, x, LOWER_DT(INGOT_DTYPE_I32)))) return s;
  if (integer) {
    uint32_t q[4] = {x_words ? INGOT_NO_VALUE : x, dot4_channels ? INGOT_NO_VALUE : w, xzp, wzp};
    for (uint32_t i = 0; i < 4; ++i) {
      if (q[i] == INGOT_NO_VALUE) continue;
      if ((s = lower_check_value(ctx, q[i], false))) return s;
      ingot_dtype_t t = lower_value(ctx, q[i])->dtype;
      if (t != INGOT_DTYPE_U8 && t != INGOT_DTYPE_I8) {
        return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "'%s' has dtype %s (uint8 or int8)", lower_value(ctx, q[i])->name,
                          ingot_dtype_name(t));
      }
    }
    ingot_dtype_t yt = lower_value(ctx, y)->dtype;
    ingot_dtype_t zt = rqi && !(s = lower_check_value(ctx, z, false)) ? lower_value(ctx, z)->dtype : INGOT_DTYPE_U8;
    if (s) return s;
    if ((qlinear ? yt != INGOT_DTYPE_U8 && yt != INGOT_DTYPE_I8 : yt != INGOT_DTYPE_I32) ||
        (zt != INGOT_DTYPE_U8 && zt != INGOT_DTYPE_I8) || lower_has_activation(ctx) ||
        (xzp != INGOT_NO_VALUE && ingot_value_numel(lower_value(ctx, xzp)) != 1)) {
      return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "%s needs an %s output and a scalar x_zero_point",
                        qlinear ? "QLinearConv" : "ConvInteger", qlinear ? "uint8 or int8" : "int32");
    }
  }
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* wv = lower_value(ctx, w);
  const ingot_value_t* yv = lower_value(ctx, y);
  if (xv->rank < 3 || xv->rank > 5) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "input rank %d is not supported (1-D, 2-D or 3-D conv)", xv->rank);
  }
  uint32_t nsp = (uint32_t)xv->rank - 2;
  if (yv->rank != xv->rank) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "weight and output must have rank %d", xv->rank);
  }
  int64_t block = qlinear ? 0 : node->weight_block; /* ConvInteger's weights may be packed too */
  /* A padded output (epilogue.output_padded, 2-D only): interior at an offset;
   * with a fused requantization the padded one is z, the bytes. */
  const int64_t* opad = !integer && ep->output_padded && xv->rank == 4 ? ep->output_pads : NULL;
  const int64_t* zpad = rqi && ep->output_padded && xv->rank == 4 ? ep->output_pads : NULL;
  if (ep->output_padded && !opad && !zpad)
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "a padded output needs a 2-D conv");
  int32_t wrank = xv->rank + (block ? 1 : 0);
  if (wv->rank != wrank || (block && (wv->dims[wrank - 1] != block || block < 2))) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "weight %s does not have the packed form of block %lld",
                      lower_shape_str(ctx, w), (long long)block);
  }
  int64_t per = ingot_node_dot_channels(node);
  if (dot4_channels && (wv->dtype != INGOT_DTYPE_I32 || wv->dims[1] != (dot4_channels + per - 1) / per + 1)) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "weight %s does not hold the dot4 words of %lld channels",
                      lower_shape_str(ctx, w), (long long)dot4_channels);
  }
  /* words of the last axis (node.words_last): [N, spatial.., G] */
  bool c_last = x_words && node->words_last;
  if (x_words && xv->dims[c_last ? xv->rank - 1 : 1] != (dot4_channels + per - 1) / per) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "%s is not the dot4 words of %lld channels",
                      lower_shape_str(ctx, x), (long long)dot4_channels);
  }
  int64_t batch = xv->dims[0], cin = x_words ? dot4_channels : xv->dims[1], cout = block ? yv->dims[1] : wv->dims[0];
  int64_t cg = dot4_channels ? dot4_channels : wv->dims[1];
  if (block && (cout < 1 || wv->dims[0] != (cout + block - 1) / block)) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "packed weight %s does not hold %lld outputs",
                      lower_shape_str(ctx, w), (long long)cout);
  }
  /* group, kernel, strides, dilations and pads (auto_pad resolved) were
   * read and checked at shape inference (node.params, graph/params.c). */
  const ingot_conv_params_t* cp = &ctx->params->u.conv;
  int64_t group = cp->group;
  if (block && group != 1) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "a packed weight needs group 1");
  if (cp->window.spatial != (int32_t)nsp) {
    return lower_fail(ctx, INGOT_ERROR_INTERNAL, "parameters of %d spatial axes for a %ud conv", cp->window.spatial, nsp);
  }
  const int64_t *k = cp->window.kernel, *strides = cp->window.strides, *dil = cp->window.dilations;
  const int64_t* pads = cp->window.pads;
  int64_t in_sp[3];
  for (uint32_t i = 0; i < nsp; ++i) in_sp[i] = xv->dims[(c_last ? 1 : 2) + i];
  if (yv->dims[0] != batch || yv->dims[1] != cout) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "output shape %s does not match the input and weight",
                      lower_shape_str(ctx, y));
  }
  int64_t out_sp[3];
  for (uint32_t i = 0; i < nsp; ++i) {
    int64_t expect = cp->window.out[i];
    int64_t padded = expect + (opad ? opad[i] + opad[nsp + i] : 0);
    if (yv->dims[2 + i] != padded) {
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT,
                        "output shape %s does not match the window (spatial axis %u: expected %lld)",
                        lower_shape_str(ctx, y), i, (long long)expect);
    }
    out_sp[i] = expect;
  }
  if (b != INGOT_NO_VALUE) {
    const ingot_value_t* bv = lower_value(ctx, b);
    if (bv->rank != 1 || bv->dims[0] != cout) {
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "bias must have shape [%lld]", (long long)cout);
    }
  }

  uint32_t bx = lower_add_input(ctx, x, "x");
  /* A float conv's weight may be stored compressed (lower_weight_load). */
  lower_weight_t wt = {lower_add_input(ctx, w, "w"), UINT32_MAX, INGOT_DTYPE_F32};
  if (!integer) wt = lower_add_weight(ctx, w, "w");
  uint32_t bw = wt.buffer;
  uint32_t bb = b != INGOT_NO_VALUE ? lower_add_input(ctx, b, "bias") : UINT32_MAX;
  int64_t wzp_n = wzp != INGOT_NO_VALUE ? ingot_value_numel(lower_value(ctx, wzp)) : 0;
  if (wzp_n > 1 && wzp_n != cout) return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "w_zero_point must be a scalar or per output channel");
  uint32_t bxz = xzp != INGOT_NO_VALUE ? lower_add_input(ctx, xzp, "x_zero") : UINT32_MAX;
  uint32_t bwz = wzp != INGOT_NO_VALUE ? lower_add_input(ctx, wzp, "w_zero") : UINT32_MAX;
  if (wzp_unread != INGOT_NO_VALUE) lower_add_input(ctx, wzp_unread, "w_zero");
  uint32_t bres = res != INGOT_NO_VALUE ? lower_add_input(ctx, res, "residual") : UINT32_MAX;
  lower_requant_t rq = {0};
  if (qlinear && (s = lower_requant_args(ctx, 1, 4, 6, 7, cout, yv->dtype, &rq))) return s;
  uint32_t rq_bias = rqi ? lower_input(ctx, rqi + 4) : INGOT_NO_VALUE;
  uint32_t brq_bias = UINT32_MAX;
  if (rq_bias != INGOT_NO_VALUE) {
    if ((s = lower_check_value_dt(ctx, rq_bias, LOWER_DT(INGOT_DTYPE_I32)))) return s;
    if (ingot_value_numel(lower_value(ctx, rq_bias)) != cout)
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "the requantization's bias is not one per output channel");
    brq_bias = lower_add_input(ctx, rq_bias, "rq_bias");
  }
  if (rqi && (s = lower_requant_args(ctx, rqi, rqi + 1, rqi + 2, rqi + 3, cout, lower_value(ctx, z)->dtype, &rq)))
    return s;
  uint32_t bz = rqi ? lower_add_output(ctx, z, "z") : UINT32_MAX;
  uint32_t by = lower_add_output(ctx, y, rqi ? "acc" : "y");
  /* the UPDATE's spatial loops and y's index per axis, for a fused requantization */
  lower_loops_t upd = {0};
  ingot_ir_expr_t* upd_yidx[5] = {NULL};
  ingot_ir_func_t* f = ctx->f;
  ingot_ir_expr_t* zero = integer ? ingot_ir_cast(f, INGOT_DTYPE_I32, ingot_ir_int(f, 0)) : lower_f32(ctx, 0.0);

  static const char* const kOut[3][3] = {{"ow"}, {"oh", "ow"}, {"od", "oh", "ow"}};
  static const char* const kRed[3][3] = {{"rw"}, {"rh", "rw"}, {"rd", "rh", "rw"}};
  const char* snames[5] = {"n", "k"};
  const char* rnames[4] = {"rc"};
  int64_t sext[5] = {batch, cout}, rext[4] = {cg};
  for (uint32_t i = 0; i < nsp; ++i) {
    snames[2 + i] = kOut[nsp - 1][i];
    sext[2 + i] = out_sp[i];
    rnames[1 + i] = kRed[nsp - 1][i];
    rext[1 + i] = k[i];
  }

  const conv_window_t win = {nsp, strides, pads, dil, in_sp, out_sp, k, c_last};
  /* No INIT stage: the UPDATE starts each output at the bias (or 0) on its
   * first reduction step (lower_update_start). */
  lower_loops_t sp, red;

  /* UPDATE */
  int64_t positions = 1; /* output positions of a pointwise conv */
  bool pointwise = !integer && group == 1;
  for (uint32_t i = 0; i < nsp; ++i) {
    positions *= out_sp[i];
    pointwise = pointwise && k[i] == 1 && strides[i] == 1 && pads[i] == 0 && pads[nsp + i] == 0;
  }
  if (opad) emit_zero_border(ctx, by, batch, cout, out_sp, opad, 0, NULL);
  if (rqi) {
    const ingot_value_t* zv = lower_value(ctx, z);
    bool fits = zv->rank == yv->rank && zv->dims[0] == batch && zv->dims[1] == cout;
    for (uint32_t i = 0; i < nsp && fits; ++i)
      fits = zv->dims[2 + i] == out_sp[i] + (zpad ? zpad[i] + zpad[nsp + i] : 0);
    if (!fits)
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "output %s does not fit the conv and its padding",
                        lower_shape_str(ctx, z));
    if (zpad) emit_zero_border(ctx, bz, batch, cout, out_sp, zpad, 0, lower_const(ctx, zv->dtype, ep->output_pad_value));
  }
  ingot_node_layout_t layout;
  ingot_node_layout_resolve(ctx->graph, node, &layout);
  if (pointwise && !opad && layout.pointwise_matmul) {
    /* A 1x1 conv is a matrix product over the flattened positions p:
     * spatial (n, kb, ki, p) with a packed weight, else (n, k, p); reduce
     * (rc); the register tile's rows over ki (k) and its vectors along p,
     * where input and output are contiguous. */
    static const char* const pnames[4] = {"n", "kb", "ki", "p"};
    static const char* const unames[3] = {"n", "k", "p"};
    int64_t pext[4] = {batch, block ? cout / block : cout, block, positions};
    if (!block) pext[2] = positions;
    lower_loops_t psp;
    lower_loops_make(ctx, &psp, block ? 4 : 3, pext, block ? pnames : unames);
    lower_loops_make(ctx, &red, 1, rext, rnames);
    ingot_ir_expr_t* n_ = psp.idx[0];
    ingot_ir_expr_t* pos = psp.idx[psp.count - 1];
    ingot_ir_expr_t* kk = block ? ingot_ir_add(f, ingot_ir_mul(f, psp.idx[1], ingot_ir_int(f, block)), psp.idx[2]) : psp.idx[1];
    ingot_ir_expr_t* xi = ingot_ir_add(
        f, ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_mul(f, n_, ingot_ir_int(f, cin)), red.idx[0]), ingot_ir_int(f, positions)),
        pos);
    ingot_ir_expr_t* wi =
        block ? ingot_ir_add(f,
                             ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_mul(f, psp.idx[1], ingot_ir_int(f, cg)), red.idx[0]),
                                          ingot_ir_int(f, block)),
                             psp.idx[2])
              : ingot_ir_add(f, ingot_ir_mul(f, kk, ingot_ir_int(f, cg)), red.idx[0]);
    ingot_ir_expr_t* yi = ingot_ir_add(
        f, ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_mul(f, n_, ingot_ir_int(f, cout)), kk), ingot_ir_int(f, positions)),
        pos);
    ingot_ir_expr_t* start = lower_update_start(ctx, &red, by, yi, bb != UINT32_MAX ? ingot_ir_load(f, bb, kk) : zero);
    ingot_ir_expr_t* acc = ingot_ir_add(f, start, ingot_ir_mul(f, ingot_ir_load(f, bx, xi), lower_weight_load(ctx, &wt, wi, kk)));
    ingot_ir_stmt_t* update = ingot_ir_store(f, by, yi, acc);
    lower_emit_stage(ctx, INGOT_STAGE_UPDATE, &psp, &red, update);
    ctx->stages.data[ctx->stages.count - 1].tile_axis = block ? 2 : 1; /* ki, k */
    if (block && cout % block) lower_emit_remainder(ctx, &psp, &red, update, 1, 2, cout / block, cout % block);
  } else if (dot4_channels) {
    if ((s = emit_dot4(ctx, &win, cg, cout, block, bx, bw, bxz, by, sext, snames, rext, rnames, &upd, upd_yidx)))
      return s;
  } else if (block) {
    /* spatial (n, kb, o.., ki) */
    const char* bnames[6] = {"n", "kb"};
    int64_t bext[6] = {batch, cout / block};
    for (uint32_t i = 0; i < nsp; ++i) {
      bnames[2 + i] = snames[2 + i];
      bext[2 + i] = sext[2 + i];
    }
    bnames[2 + nsp] = "ki";
    bext[2 + nsp] = block;
    lower_loops_t bsp;
    lower_loops_make(ctx, &bsp, 3 + nsp, bext, bnames);
    lower_loops_make(ctx, &red, 1 + nsp, rext, rnames);
    ingot_ir_expr_t* cond;
    ingot_ir_expr_t* xval = window_load(ctx, bx, &win, bsp.idx[0], red.idx[0], bsp.idx + 2, &red, &cond);
    if (integer) xval = int_operand(ctx, xval, bxz, ingot_ir_int(f, 0));
    if (cond) xval = ingot_ir_select(f, cond, xval, zero);
    ingot_ir_expr_t* wi[6] = {bsp.idx[1], red.idx[0]};
    for (uint32_t i = 0; i < nsp; ++i) wi[2 + i] = red.idx[1 + i];
    wi[2 + nsp] = bsp.idx[2 + nsp];
    ingot_ir_expr_t* yidx[5] = {bsp.idx[0], ingot_ir_add(f, ingot_ir_mul(f, bsp.idx[1], ingot_ir_int(f, block)),
                                                         bsp.idx[2 + nsp])};
    ingot_ir_expr_t* wval = integer ? ingot_ir_load(f, bw, ingot_ir_flat_index(f, bw, wi))
                                    : lower_weight_load(ctx, &wt, ingot_ir_flat_index(f, bw, wi), yidx[1]);
    if (integer) wval = int_operand(ctx, wval, bwz, wzp_n > 1 ? yidx[1] : ingot_ir_int(f, 0));
    for (uint32_t i = 0; i < nsp; ++i) yidx[2 + i] = bsp.idx[2 + i];
    ingot_ir_expr_t* byi = y_index(f, by, yidx, nsp, opad);
    ingot_ir_expr_t* start =
        lower_update_start(ctx, &red, by, byi, bb != UINT32_MAX ? ingot_ir_load(f, bb, yidx[1]) : zero);
    ingot_ir_expr_t* acc = ingot_ir_add(f, start, ingot_ir_mul(f, xval, wval));
    ingot_ir_stmt_t* update = ingot_ir_store(f, by, byi, acc);
    lower_emit_stage(ctx, INGOT_STAGE_UPDATE, &bsp, &red, update);
    /* The register tile blocks the innermost output position (o.., ki). */
    ctx->stages.data[ctx->stages.count - 1].tile_axis = 1 + nsp;
    if (cout % block) lower_emit_remainder(ctx, &bsp, &red, update, 1, 2 + nsp, cout / block, cout % block);
    upd = bsp;
    for (uint32_t i = 0; i < 2 + nsp; ++i) upd_yidx[i] = yidx[i];
  } else {
  lower_loops_make(ctx, &sp, 2 + nsp, sext, snames);
  lower_loops_make(ctx, &red, 1 + nsp, rext, rnames);
  ingot_ir_expr_t* ci = red.idx[0];
  if (group > 1) {
    ingot_ir_expr_t* g = ingot_ir_binary(f, INGOT_IR_DIV, sp.idx[1], ingot_ir_int(f, cout / group));
    ci = ingot_ir_add(f, ingot_ir_mul(f, g, ingot_ir_int(f, cg)), ci);
  }
  ingot_ir_expr_t* cond;
  ingot_ir_expr_t* xval = window_load(ctx, bx, &win, sp.idx[0], ci, sp.idx + 2, &red, &cond);
  int64_t taps = cg;
  for (uint32_t i = 0; i < nsp; ++i) taps *= k[i];
  /* A ConvInteger without padding and with a short reduction (a depthwise
   * conv's 9 taps) takes x's zero point out of the sum: sum (x - zx) w' =
   * sum x w' - zx sum w', the second term the start of each output (its
   * taps' weights summed there, once per register tile row), one
   * subtraction fewer per multiply-add. */
  bool fold_zx = integer && !qlinear && bxz != UINT32_MAX && !cond && taps <= FOLD_ZX_MAX_TAPS;
  if (integer) {
    xval = ingot_ir_cast(f, INGOT_DTYPE_I32, xval);
    if (bxz != UINT32_MAX && !fold_zx) {
      xval = ingot_ir_binary(f, INGOT_IR_SUB, xval, ingot_ir_cast(f, INGOT_DTYPE_I32, ingot_ir_load(f, bxz, ingot_ir_int(f, 0))));
    }
  }
  if (cond) xval = ingot_ir_select(f, cond, xval, zero);
  ingot_ir_expr_t* wi[5] = {sp.idx[1], red.idx[0]};
  for (uint32_t i = 0; i < nsp; ++i) wi[2 + i] = red.idx[1 + i];
  ingot_ir_expr_t* wval = integer ? ingot_ir_load(f, bw, ingot_ir_flat_index(f, bw, wi))
                                  : lower_weight_load(ctx, &wt, ingot_ir_flat_index(f, bw, wi), sp.idx[1]);
  if (integer) {
    wval = ingot_ir_cast(f, INGOT_DTYPE_I32, wval);
    if (bwz != UINT32_MAX) {
      ingot_ir_expr_t* zi = wzp_n > 1 ? sp.idx[1] : ingot_ir_int(f, 0);
      wval = ingot_ir_binary(f, INGOT_IR_SUB, wval, ingot_ir_cast(f, INGOT_DTYPE_I32, ingot_ir_load(f, bwz, zi)));
    }
  }
  ingot_ir_expr_t* yi = y_index(f, by, sp.idx, nsp, opad);
  ingot_ir_expr_t* init = bb != UINT32_MAX ? ingot_ir_load(f, bb, sp.idx[1]) : zero;
  if (fold_zx) {
    ingot_ir_expr_t* sum = NULL;
    for (int64_t t = 0; t < taps; ++t) {
      ingot_ir_expr_t* wt = wval;
      for (int64_t i = (int64_t)red.count - 1, rest = t; i >= 0; --i) {
        wt = ingot_ir_expr_substitute(f, wt, red.vars[i], ingot_ir_int(f, rest % red.extents[i]));
        rest /= red.extents[i];
      }
      sum = sum ? ingot_ir_add(f, sum, wt) : wt;
    }
    ingot_ir_expr_t* zx = ingot_ir_cast(f, INGOT_DTYPE_I32, ingot_ir_load(f, bxz, ingot_ir_int(f, 0)));
    init = ingot_ir_binary(f, INGOT_IR_SUB, init, ingot_ir_mul(f, zx, sum));
  }
  if (qlinear) {
    uint32_t acc = lower_add_var(ctx, "acc", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I32);
    ingot_ir_expr_t* out = lower_requant_value(ctx, &rq, ingot_ir_var(f, acc), sp.idx[1]);
    /* Output channels outermost: the parallel loop even at batch 1. */
    lower_emit_accumulate(ctx, &sp, 1, &red, acc, init, ingot_ir_mul(f, xval, wval), ingot_ir_store(f, by, yi, out));
  } else {
  ingot_ir_expr_t* start = lower_update_start(ctx, &red, by, yi, init);
  ingot_ir_expr_t* acc = ingot_ir_add(f, start, ingot_ir_mul(f, xval, wval));
  lower_emit_stage(ctx, INGOT_STAGE_UPDATE, &sp, &red, ingot_ir_store(f, by, yi, acc));
  /* The register tile's rows: output channels, which share every input
   * tap; for a depthwise conv (one input channel per output) output rows,
   * which share input rows between their vertical taps. */
  bool depthwise = group > 1 && cg == 1 && cout == group && nsp >= 2;
  ctx->stages.data[ctx->stages.count - 1].tile_axis = depthwise ? 2 : 1;
  upd = sp;
  for (uint32_t i = 0; i < 2 + nsp; ++i) upd_yidx[i] = sp.idx[i];
  }
  }
  if (rqi) {
    /* A partial last panel (a second UPDATE for its outputs): the FINISH
     * covers every output on loops of its own. */
    if (!upd.count || (block && cout % block)) {
      lower_loops_make(ctx, &upd, 2 + nsp, sext, snames);
      for (uint32_t i = 0; i < 2 + nsp; ++i) upd_yidx[i] = upd.idx[i];
      emit_requant_finish(ctx, &upd, upd_yidx, 2 + nsp, by, bz, brq_bias, &rq, false, zpad);
    } else {
      emit_requant_finish(ctx, &upd, upd_yidx, 2 + nsp, by, bz, brq_bias, &rq, true, zpad);
    }
  }

  /* FINISH */
  if (lower_has_activation(ctx) || bres != UINT32_MAX) {
    lower_loops_make(ctx, &sp, 2 + nsp, sext, snames);
    ingot_ir_expr_t* yi = y_index(f, by, sp.idx, nsp, opad);
    ingot_ir_expr_t* v = ingot_ir_load(f, by, yi);
    if (bres != UINT32_MAX) v = ingot_ir_add(f, v, ingot_ir_load(f, bres, ingot_ir_flat_index(f, bres, sp.idx)));
    lower_emit_stage(ctx, INGOT_STAGE_FINISH, &sp, NULL, ingot_ir_store(f, by, yi, lower_activation(ctx, v)));
  }

  /* QLinearConv's one OTHER stage schedules as a row pass (parallel outer loop). */
  ctx->op_class = qlinear ? INGOT_OP_CLASS_ROW : INGOT_OP_CLASS_CONTRACTION;
  ingot_strbuf_t sb = {0};
  static const char* const kSp[3][3] = {{"w"}, {"h", "w"}, {"d", "h", "w"}};
  static const char* const kK[3][3] = {{"s"}, {"r", "s"}, {"t", "r", "s"}};
  ingot_strbuf_appendf(&sb, "conv%ud %s n%lld c%lld", nsp,
                       integer ? ingot_arena_printf(ctx->arena, "%s.%s.%s.zp%d.%lld%s", qlinear ? "qlinear" : "integer",
                                                    ingot_dtype_name(xv->dtype), ingot_dtype_name(wv->dtype),
                                                    bxz != UINT32_MAX, (long long)wzp_n,
                                                    qlinear ? ingot_arena_printf(ctx->arena, ".%s.ws%lld",
                                                                                 ingot_dtype_name(yv->dtype),
                                                                                 (long long)rq.w_scales)
                                                            : "")
                               : ingot_arena_printf(ctx->arena, "f32%s", lower_weight_tag(ctx, &wt)),
                       (long long)batch, (long long)cin);
  for (uint32_t i = 0; i < nsp; ++i) ingot_strbuf_appendf(&sb, " %s%lld", kSp[nsp - 1][i], (long long)in_sp[i]);
  ingot_strbuf_appendf(&sb, " k%lld", (long long)cout);
  for (uint32_t i = 0; i < nsp; ++i) ingot_strbuf_appendf(&sb, " %s%lld", kK[nsp - 1][i], (long long)k[i]);
  lower_append_ints(&sb, "stride", strides, nsp);
  lower_append_ints(&sb, "pad", pads, 2 * nsp);
  lower_append_ints(&sb, "dil", dil, nsp);
  ingot_strbuf_appendf(&sb, " g%lld bias=%d act=%s", (long long)group, b != INGOT_NO_VALUE, lower_activation_name(ctx));
  if (dot4_channels)
    ingot_strbuf_appendf(&sb, "%s%s", node->dot_pairs ? " dot2" : node->dot_sat16 ? " dot4s" : " dot4",
                         x_words ? c_last ? " xwords_last" : " xwords" : "");
  if (rqi)
    ingot_strbuf_appendf(&sb, " requant.%s.ws%lld%s", ingot_dtype_name(lower_value(ctx, z)->dtype),
                         (long long)rq.w_scales, brq_bias != UINT32_MAX ? ".bias" : "");
  if (bres != UINT32_MAX) ingot_strbuf_appendf(&sb, " residual");
  if (opad) lower_append_ints(&sb, "outpad", opad, 2 * nsp);
  ctx->workload = ingot_arena_strdup(ctx->arena, sb.data);
  ingot_strbuf_free(&sb);
  return INGOT_OK;
}

/* Flat index of a blocked y at (n, kb, oh, ow, ki), shifted by the output
 * padding's begin. */
static ingot_ir_expr_t* blocked_y_index(ingot_ir_func_t* f, uint32_t by, ingot_ir_expr_t* const* idx,
                                        const int64_t* opad) {
  if (!opad) return ingot_ir_flat_index(f, by, idx);
  ingot_ir_expr_t* shifted[5] = {idx[0], idx[1], ingot_ir_add(f, idx[2], ingot_ir_int(f, opad[0])),
                                 ingot_ir_add(f, idx[3], ingot_ir_int(f, opad[1])), idx[4]};
  return ingot_ir_flat_index(f, by, shifted);
}

/* ConvBlocked (graph/passes_layout.c, ingot_graph_block_activations): a 2-D
 * conv over the blocked layout [N, C/B, H, W, B], no padding (shapes in
 * graph/shape_infer.c, infer_conv_blocked):
 *
 *   UPDATE  y[n, kb, oh, ow, ki] += x[n, rb, oh*s + rh*d, ow*s + rw*d, ri]
 *                                   * w[kb, rb, rh, rw, ri, ki]   (blocked input)
 *           y[n, kb, oh, ow, ki] += x[n, rc, oh*s + rh*d, ow*s + rw*d]
 *                                   * w[kb, rc, rh, rw, ki]       (NCHW input)
 *           y[n, kb, oh, ow, ki] += x[n, kb, oh*s + rh*d, ow*s + rw*d, ki]
 *                                   * w[kb, rh, rw, ki]           (depthwise)
 *           starting at bias[kb*B + ki] (or 0); spatial (n, kb, oh, ow, ki)
 *   FINISH  y = act(y [+ residual]) with a fused activation or residual
 *
 * B output channels are one contiguous vector of y and of w, so the register
 * tile (rows along ow) loads and stores whole vectors; an input tap is one
 * scalar for all of them (a vector, depthwise). */
ingot_status_t lower_conv_blocked(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  uint32_t x = lower_input(ctx, 0), w = lower_input(ctx, 1), b = lower_input(ctx, 2);
  const ingot_epilogue_t* ep = &node->epilogue;
  uint32_t res = ep->residual_input ? lower_input(ctx, ep->residual_input) : INGOT_NO_VALUE;
  uint32_t y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_check_value(ctx, x, true)) || (s = lower_check_weight(ctx, w)) ||
      (s = lower_check_value(ctx, y, true)) || (b != INGOT_NO_VALUE && (s = lower_check_value(ctx, b, true)))) {
    return s;
  }
  if (ep->residual_input &&
      (res == INGOT_NO_VALUE || (s = lower_check_value(ctx, res, true)) ||
       ingot_value_numel(lower_value(ctx, res)) != ingot_value_numel(lower_value(ctx, y)))) {
    return s ? s : lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "the fused residual must have the output's shape");
  }
  if (ep->bias_input || ep->scale != 0.0f || (ep->output_padded && ep->residual_input)) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "a blocked conv takes no bias input, scale, or residual with a padded output");
  }
  /* A padded output: [N, OCb, OH + top + bottom, OW + left + right, B]. */
  const int64_t* opad = ep->output_padded ? ep->output_pads : NULL;
  int64_t block = ingot_node_attr_int(node, "block", 0);
  bool in_block = ingot_node_attr_int(node, "in_block", 0) != 0;
  bool depthwise = ingot_node_attr_int(node, "depthwise", 0) != 0;
  uint32_t count = 0, dcount = 0;
  const int64_t* strides = ingot_node_attr_ints(node, "strides", &count);
  const int64_t* dil = ingot_node_attr_ints(node, "dilations", &dcount);
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* wv = lower_value(ctx, w);
  const ingot_value_t* yv = lower_value(ctx, y);
  /* Shapes were checked by inference; these guard the indexing below. */
  if (!strides || count != 2 || !dil || dcount != 2 || block < 2 || yv->rank != 5 || yv->dims[4] != block ||
      xv->rank != (in_block ? 5 : 4) || wv->rank != (depthwise ? 4 : in_block ? 6 : 5)) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "malformed blocked conv (x %s, w %s, y %s)",
                      lower_shape_str(ctx, x), lower_shape_str(ctx, w), lower_shape_str(ctx, y));
  }
  int64_t batch = yv->dims[0], ocb = yv->dims[1];
  int64_t oh = yv->dims[2] - (opad ? opad[0] + opad[2] : 0), ow = yv->dims[3] - (opad ? opad[1] + opad[3] : 0);
  int64_t kh = wv->dims[depthwise ? 1 : 2], kw = wv->dims[depthwise ? 2 : 3];
  if (oh < 1 || ow < 1) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "output padding larger than the output");
  int64_t cin = xv->dims[1]; /* input blocks, or channels of an NCHW input */

  uint32_t bx = lower_add_input(ctx, x, "x");
  lower_weight_t wt = lower_add_weight(ctx, w, "w");
  uint32_t bw = wt.buffer;
  uint32_t bb = b != INGOT_NO_VALUE ? lower_add_input(ctx, b, "bias") : UINT32_MAX;
  uint32_t bres = res != INGOT_NO_VALUE ? lower_add_input(ctx, res, "residual") : UINT32_MAX;
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  int64_t out_sp[2] = {oh, ow};
  if (opad) emit_zero_border(ctx, by, batch, ocb, out_sp, opad, block, NULL);

  static const char* const snames[5] = {"n", "kb", "oh", "ow", "ki"};
  int64_t sext[5] = {batch, ocb, oh, ow, block};
  lower_loops_t sp, red;
  lower_loops_make(ctx, &sp, 5, sext, snames);
  if (depthwise) {
    static const char* const rnames[2] = {"rh", "rw"};
    int64_t rext[2] = {kh, kw};
    lower_loops_make(ctx, &red, 2, rext, rnames);
  } else if (in_block) {
    static const char* const rnames[4] = {"rb", "rh", "rw", "ri"};
    int64_t rext[4] = {cin, kh, kw, block};
    lower_loops_make(ctx, &red, 4, rext, rnames);
  } else {
    static const char* const rnames[3] = {"rc", "rh", "rw"};
    int64_t rext[3] = {cin, kh, kw};
    lower_loops_make(ctx, &red, 3, rext, rnames);
  }
  ingot_ir_expr_t *n_ = sp.idx[0], *kb = sp.idx[1], *ki = sp.idx[4];
  ingot_ir_expr_t* rh = red.idx[depthwise ? 0 : 1];
  ingot_ir_expr_t* rw = red.idx[depthwise ? 1 : 2];
  ingot_ir_expr_t* ih = ingot_ir_add(f, ingot_ir_mul(f, sp.idx[2], ingot_ir_int(f, strides[0])),
                                     ingot_ir_mul(f, rh, ingot_ir_int(f, dil[0])));
  ingot_ir_expr_t* iw = ingot_ir_add(f, ingot_ir_mul(f, sp.idx[3], ingot_ir_int(f, strides[1])),
                                     ingot_ir_mul(f, rw, ingot_ir_int(f, dil[1])));
  ingot_ir_expr_t* xi[5];
  ingot_ir_expr_t* wi[6];
  if (depthwise) {
    xi[0] = n_, xi[1] = kb, xi[2] = ih, xi[3] = iw, xi[4] = ki;
    wi[0] = kb, wi[1] = rh, wi[2] = rw, wi[3] = ki;
  } else if (in_block) {
    xi[0] = n_, xi[1] = red.idx[0], xi[2] = ih, xi[3] = iw, xi[4] = red.idx[3];
    wi[0] = kb, wi[1] = red.idx[0], wi[2] = rh, wi[3] = rw, wi[4] = red.idx[3], wi[5] = ki;
  } else {
    xi[0] = n_, xi[1] = red.idx[0], xi[2] = ih, xi[3] = iw;
    wi[0] = kb, wi[1] = red.idx[0], wi[2] = rh, wi[3] = rw, wi[4] = ki;
  }
  ingot_ir_expr_t* xval = ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi));
  ingot_ir_expr_t* yi = blocked_y_index(f, by, sp.idx, opad);
  ingot_ir_expr_t* channel = ingot_ir_add(f, ingot_ir_mul(f, kb, ingot_ir_int(f, block)), ki);
  ingot_ir_expr_t* wval = lower_weight_load(ctx, &wt, ingot_ir_flat_index(f, bw, wi), channel);
  ingot_ir_expr_t* init = bb != UINT32_MAX ? ingot_ir_load(f, bb, channel) : lower_f32(ctx, 0.0);
  ingot_ir_expr_t* start = lower_update_start(ctx, &red, by, yi, init);
  lower_emit_stage(ctx, INGOT_STAGE_UPDATE, &sp, &red,
                   ingot_ir_store(f, by, yi, ingot_ir_add(f, start, ingot_ir_mul(f, xval, wval))));
  /* The register tile's rows: output positions along ow, each one vector
   * of a block's channels per block the tile spans (kb, tile_blocks). */
  ctx->stages.data[ctx->stages.count - 1].tile_axis = 3;
  /* A tile may span several output blocks (kb) where they share the input
   * taps it loads; a depthwise conv's blocks read blocks of their own. */
  ctx->stages.data[ctx->stages.count - 1].block_axis = depthwise ? -1 : 1;

  if (lower_has_activation(ctx) || bres != UINT32_MAX) {
    lower_loops_make(ctx, &sp, 5, sext, snames);
    ingot_ir_expr_t* fi = blocked_y_index(f, by, sp.idx, opad);
    ingot_ir_expr_t* v = ingot_ir_load(f, by, fi);
    if (bres != UINT32_MAX) v = ingot_ir_add(f, v, ingot_ir_load(f, bres, ingot_ir_flat_index(f, bres, sp.idx)));
    lower_emit_stage(ctx, INGOT_STAGE_FINISH, &sp, NULL, ingot_ir_store(f, by, fi, lower_activation(ctx, v)));
  }
  ctx->op_class = INGOT_OP_CLASS_CONTRACTION;
  ctx->workload = ingot_arena_printf(
      ctx->arena, "conv2d_nchw%lldc f32%s n%lld %s%lld h%lld w%lld k%lld r%lld s%lld stride%lldx%lld dil%lldx%lld%s "
                  "bias=%d act=%s%s",
      (long long)block, lower_weight_tag(ctx, &wt), (long long)batch, in_block ? "cb" : "c", (long long)cin, (long long)xv->dims[2],
      (long long)xv->dims[3], (long long)(ocb * block), (long long)kh, (long long)kw, (long long)strides[0],
      (long long)strides[1], (long long)dil[0], (long long)dil[1], depthwise ? " depthwise" : "", bb != UINT32_MAX,
      lower_activation_name(ctx), bres != UINT32_MAX ? " residual" : "");
  if (opad) {
    ctx->workload = ingot_arena_printf(ctx->arena, "%s outpad%lldx%lldx%lldx%lld", ctx->workload, (long long)opad[0],
                                       (long long)opad[1], (long long)opad[2], (long long)opad[3]);
  }
  return INGOT_OK;
}

/* Dot4Words (ai.ingot): y[n, g, p..] = sum_j x'[n, min(4g + j, C - 1), p..]
 * << 8j over j = 0..3, x' = x for uint8 and x + 128 for int8 (see
 * node.x_dot4_words): the operand words of a dot4 ConvInteger, an injective
 * pass over x; y[n, p.., g] with node.words_last. */
ingot_status_t lower_dot4_words(lower_ctx_t* ctx) {
  uint32_t x = lower_input(ctx, 0);
  uint32_t y = ctx->node->output_count ? ctx->node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_check_value_dt(ctx, x, LOWER_DT(INGOT_DTYPE_U8) | LOWER_DT(INGOT_DTYPE_I8))) ||
      (s = lower_check_value_dt(ctx, y, LOWER_DT(INGOT_DTYPE_I32)))) {
    return s;
  }
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  int64_t channels = xv->rank >= 3 ? xv->dims[1] : 0, per = ingot_node_dot_channels(ctx->node);
  /* node.words_last: y is [N, spatial.., G] */
  bool last = ctx->node->words_last;
  int32_t ga = last ? xv->rank - 1 : 1; /* y's words axis */
  bool fits = xv->rank >= 3 && yv->rank == xv->rank && yv->dims[0] == xv->dims[0] &&
              yv->dims[ga] == (channels + per - 1) / per;
  for (int32_t d = 2; fits && d < xv->rank; ++d) fits = yv->dims[last ? d - 1 : d] == xv->dims[d];
  if (!fits) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "%s is not the dot4 words of %s", lower_shape_str(ctx, y),
                      lower_shape_str(ctx, x));
  }
  bool x_signed = xv->dtype == INGOT_DTYPE_I8;
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  if (last) {
    /* Words last: loops (n, g, p) over the flattened positions p (each
     * channel plane contiguous), p innermost, its bytes read as vectors
     * from each plane and the words stored G apart. g steps by 8 (4, 2
     * where G is not a multiple) and the body stores that many neighbouring
     * words of each position: code generation transposes such runs into
     * vector stores (combined_stores) instead of a scalar store a word. */
    int64_t groups = yv->dims[ga], positions = 1;
    for (int32_t d = 2; d < xv->rank; ++d) positions *= xv->dims[d];
    int64_t run = groups % 8 == 0 ? 8 : groups % 4 == 0 ? 4 : groups % 2 == 0 ? 2 : 1;
    static const char* const lnames[3] = {"n", "g", "p"};
    int64_t lext[3] = {xv->dims[0], groups / run, positions};
    lower_loops_t sp;
    lower_loops_make(ctx, &sp, 3, lext, lnames);
    ingot_ir_stmt_t* stores[8];
    for (int64_t r = 0; r < run; ++r) {
      ingot_ir_expr_t* g = run > 1 ? ingot_ir_add(f, ingot_ir_mul(f, sp.idx[1], ingot_ir_int(f, run)), ingot_ir_int(f, r))
                                   : sp.idx[1];
      ingot_ir_expr_t* word = NULL;
      for (int64_t j = 0; j < per; ++j) {
        ingot_ir_expr_t* plane = ingot_ir_add(f, ingot_ir_mul(f, sp.idx[0], ingot_ir_int(f, channels)),
                                              word_channel(f, g, j, channels, per));
        ingot_ir_expr_t* xi = ingot_ir_add(f, ingot_ir_mul(f, plane, ingot_ir_int(f, positions)), sp.idx[2]);
        word = word_add_byte(f, word, ingot_ir_load(f, bx, xi), x_signed, j, per);
      }
      ingot_ir_expr_t* yi = ingot_ir_add(
          f, ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_mul(f, sp.idx[0], ingot_ir_int(f, positions)), sp.idx[2]),
                          ingot_ir_int(f, groups)),
          g);
      stores[r] = ingot_ir_store(f, by, yi, ingot_ir_cast(f, INGOT_DTYPE_I32, word));
    }
    lower_emit_stage(ctx, INGOT_STAGE_PURE, &sp, NULL, run > 1 ? ingot_ir_block(f, stores, (uint32_t)run) : stores[0]);
  } else {
    static const char* const names[INGOT_MAX_RANK] = {"n", "g", "p0", "p1", "p2", "p3", "p4", "p5"};
    lower_loops_t sp;
    lower_loops_make(ctx, &sp, (uint32_t)yv->rank, yv->dims, names);
    ingot_ir_expr_t* word = NULL;
    for (int64_t j = 0; j < per; ++j) {
      ingot_ir_expr_t* xi[INGOT_MAX_RANK];
      for (int32_t d = 0; d < xv->rank; ++d) xi[d] = d == 1 ? word_channel(f, sp.idx[1], j, channels, per) : sp.idx[d];
      word = word_add_byte(f, word, ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi)), x_signed, j, per);
    }
    lower_emit_stage(ctx, INGOT_STAGE_PURE, &sp, NULL,
                     ingot_ir_store(f, by, ingot_ir_flat_index(f, by, sp.idx), ingot_ir_cast(f, INGOT_DTYPE_I32, word)));
  }
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE;
  ingot_strbuf_t sb = {0};
  ingot_strbuf_appendf(&sb, "%s %s", per == 2 ? "dot2_words" : "dot4_words", ingot_dtype_name(xv->dtype));
  for (int32_t d = 0; d < xv->rank; ++d) ingot_strbuf_appendf(&sb, "%s%lld", d ? "x" : " ", (long long)xv->dims[d]);
  if (last) ingot_strbuf_appendf(&sb, " last");
  ctx->workload = ingot_arena_strdup(ctx->arena, sb.data);
  ingot_strbuf_free(&sb);
  return INGOT_OK;
}

/* Im2Col (graph/infer_nn.c infer_im2col): a conv's patches as channels,
 *   y[n, (c*KH + rh)*KW + rw, oh, ow] = x[n, c, oh*sh + rh*dh, ow*sw + rw*dw]
 * over (n, c, rh, rw, oh, ow), each output row one contiguous store; with
 * node.x_dot4_words the words of those channels over (n, g, oh, ow), 4
 * (2) strided rows of x packed into each row of words. */
ingot_status_t lower_im2col(lower_ctx_t* ctx) {
  uint32_t x = lower_input(ctx, 0);
  uint32_t y = ctx->node->output_count ? ctx->node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  uint32_t bytes = LOWER_DT(INGOT_DTYPE_U8) | LOWER_DT(INGOT_DTYPE_I8);
  /* node.x_dot4_words: y holds the patches' dot4 words */
  bool words = ctx->node->x_dot4_words != 0;
  if ((s = lower_check_value_dt(ctx, x, bytes)) ||
      (s = lower_check_value_dt(ctx, y, words ? LOWER_DT(INGOT_DTYPE_I32) : bytes)))
    return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  uint32_t nk = 0, ns = 0, nd = 0;
  const int64_t* k = ingot_node_attr_ints(ctx->node, "kernel_shape", &nk);
  const int64_t* st = ingot_node_attr_ints(ctx->node, "strides", &ns);
  const int64_t* dl = ingot_node_attr_ints(ctx->node, "dilations", &nd);
  int64_t per = words ? ingot_node_dot_channels(ctx->node) : 1;
  int64_t channels = xv->rank == 4 && k && nk == 2 ? xv->dims[1] * k[0] * k[1] : 0;
  if (!k || !st || !dl || nk != 2 || ns != 2 || nd != 2 || xv->rank != 4 || yv->rank != 4 ||
      (!words && yv->dtype != xv->dtype) || yv->dims[0] != xv->dims[0] || yv->dims[1] != (channels + per - 1) / per ||
      (yv->dims[2] - 1) * st[0] + (k[0] - 1) * dl[0] >= xv->dims[2] ||
      (yv->dims[3] - 1) * st[1] + (k[1] - 1) * dl[1] >= xv->dims[3]) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "%s is not the patches of %s", lower_shape_str(ctx, y),
                      lower_shape_str(ctx, x));
  }
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  ingot_ir_expr_t* taps = ingot_ir_int(f, k[0] * k[1]);
  ingot_ir_expr_t* kw = ingot_ir_int(f, k[1]);
  lower_loops_t sp;
  ingot_ir_expr_t* value = NULL;
  if (words) {
    /* (n, g, oh, ow): word g packs patch channels t = per*g + j (the last
     * clamped, as Dot4Words does), t = (c*KH + rh)*KW + rw */
    static const char* const names[4] = {"n", "g", "oh", "ow"};
    lower_loops_make(ctx, &sp, 4, yv->dims, names);
    for (int64_t j = 0; j < per; ++j) {
      ingot_ir_expr_t* t = word_channel(f, sp.idx[1], j, channels, per);
      ingot_ir_expr_t* c = ingot_ir_binary(f, INGOT_IR_DIV, t, taps);
      ingot_ir_expr_t* rh = ingot_ir_binary(f, INGOT_IR_DIV, ingot_ir_binary(f, INGOT_IR_MOD, t, taps), kw);
      ingot_ir_expr_t* rw = ingot_ir_binary(f, INGOT_IR_MOD, t, kw);
      ingot_ir_expr_t* xi[4] = {sp.idx[0], c, ingot_ir_add(f, ingot_ir_mul(f, sp.idx[2], ingot_ir_int(f, st[0])),
                                                          ingot_ir_mul(f, rh, ingot_ir_int(f, dl[0]))),
                                ingot_ir_add(f, ingot_ir_mul(f, sp.idx[3], ingot_ir_int(f, st[1])),
                                             ingot_ir_mul(f, rw, ingot_ir_int(f, dl[1])))};
      value = word_add_byte(f, value, ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi)), xv->dtype == INGOT_DTYPE_I8,
                            j, per);
    }
    value = ingot_ir_cast(f, INGOT_DTYPE_I32, value);
    lower_emit_stage(ctx, INGOT_STAGE_PURE, &sp, NULL, ingot_ir_store(f, by, ingot_ir_flat_index(f, by, sp.idx), value));
  } else {
    static const char* const names[6] = {"n", "c", "rh", "rw", "oh", "ow"};
    int64_t ext[6] = {xv->dims[0], xv->dims[1], k[0], k[1], yv->dims[2], yv->dims[3]};
    lower_loops_make(ctx, &sp, 6, ext, names);
    ingot_ir_expr_t* ch = ingot_ir_add(
        f, ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_mul(f, sp.idx[1], ingot_ir_int(f, k[0])), sp.idx[2]), kw), sp.idx[3]);
    ingot_ir_expr_t* yi[4] = {sp.idx[0], ch, sp.idx[4], sp.idx[5]};
    ingot_ir_expr_t* xi[4] = {sp.idx[0], sp.idx[1], NULL, NULL};
    for (int i = 0; i < 2; ++i)
      xi[2 + i] = ingot_ir_add(f, ingot_ir_mul(f, sp.idx[4 + i], ingot_ir_int(f, st[i])),
                               ingot_ir_mul(f, sp.idx[2 + i], ingot_ir_int(f, dl[i])));
    lower_emit_stage(ctx, INGOT_STAGE_PURE, &sp, NULL,
                     ingot_ir_store(f, by, ingot_ir_flat_index(f, by, yi), ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi))));
  }
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE;
  ctx->workload = ingot_arena_printf(ctx->arena, "im2col %s n%lld c%lld h%lld w%lld k%lldx%lld stride%lldx%lld dil%lldx%lld%s",
                                     ingot_dtype_name(xv->dtype), (long long)xv->dims[0], (long long)xv->dims[1],
                                     (long long)xv->dims[2], (long long)xv->dims[3], (long long)k[0], (long long)k[1],
                                     (long long)st[0], (long long)st[1], (long long)dl[0], (long long)dl[1],
                                     !words ? "" : per == 2 ? " dot2_words" : " dot4_words");
  return INGOT_OK;
}

/* FromBlocked: y[n, c, h, w] = x[n, c / B, h, w, c % B], an injective copy
 * at the edge of a blocked region, over (n, cb, h, ci, w): a row of y is one
 * contiguous store, its loads stride B floats through the few cache lines
 * of x's row, which the next ci reads again while they are in L1. The
 * channels of a partial last block get a stage of their own. */
ingot_status_t lower_from_blocked(lower_ctx_t* ctx) {
  uint32_t x = lower_input(ctx, 0);
  uint32_t y = ctx->node->output_count ? ctx->node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_check_value(ctx, x, true)) || (s = lower_check_value(ctx, y, true))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  if (xv->rank != 5 || yv->rank != 4 || yv->dims[1] > xv->dims[1] * xv->dims[4]) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "%s is not the blocked form of %s", lower_shape_str(ctx, x),
                      lower_shape_str(ctx, y));
  }
  int64_t block = xv->dims[4], channels = yv->dims[1];
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  static const char* const names[5] = {"n", "cb", "h", "ci", "w"};
  for (int part = 0; part < 2; ++part) {
    /* part 0: the whole blocks; part 1: the last, partial one */
    int64_t whole = channels / block, rest = channels % block;
    if ((part == 0 && whole == 0) || (part == 1 && rest == 0)) continue;
    int64_t ext[5] = {yv->dims[0], part == 0 ? whole : 1, yv->dims[2], part == 0 ? block : rest, yv->dims[3]};
    lower_loops_t sp;
    lower_loops_make(ctx, &sp, 5, ext, names);
    ingot_ir_expr_t* cb = part == 0 ? sp.idx[1] : ingot_ir_int(f, whole);
    ingot_ir_expr_t* xi[5] = {sp.idx[0], cb, sp.idx[2], sp.idx[4], sp.idx[3]};
    ingot_ir_expr_t* yi[4] = {sp.idx[0], ingot_ir_add(f, ingot_ir_mul(f, cb, ingot_ir_int(f, block)), sp.idx[3]),
                              sp.idx[2], sp.idx[4]};
    lower_emit_stage(ctx, INGOT_STAGE_PURE, &sp, NULL,
                     ingot_ir_store(f, by, ingot_ir_flat_index(f, by, yi), ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi))));
  }
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE;
  ctx->workload = ingot_arena_printf(ctx->arena, "from_nchw%lldc f32 n%lld c%lld h%lld w%lld", (long long)block,
                                     (long long)yv->dims[0], (long long)yv->dims[1], (long long)yv->dims[2],
                                     (long long)yv->dims[3]);
  return INGOT_OK;
}
