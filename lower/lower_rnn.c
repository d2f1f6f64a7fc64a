/* LSTM, GRU and RNN (forward, reverse, bidirectional; layout 0 and 1; bias,
 * initial_h, initial_c, peepholes, clip, GRU linear_before_reset; the
 * activations attribute (Relu, Tanh, Sigmoid, Affine, LeakyRelu,
 * ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus, per
 * direction, with activation_alpha / activation_beta consumed in order by
 * the functions that take them, defaults as the ops of those names);
 * sequence_lens, constant or given at run time).
 *
 * com.microsoft's DynamicQuantizeLSTM (what onnxruntime.quantization.
 * quantize_dynamic makes of an LSTM) is the LSTM above with 8-bit W and R,
 * laid out [D, I, 4H] and [D, H, 4H] (ONNX's transposed), and float32
 * scales with zero points of W's dtype per direction ([D]) or per gate
 * column ([D, 4H]). It lowers to the same nest, each weight element
 * less its zero point where the dot products load it, each row's dot
 * product times its scale:
 *   sum_k W[d, g*H + j, k] x[k] = Ws[s] * sum_k (float(Wq[d, k, g*H + j]) - Wz[s]) x[k],
 *   s = d (per direction) or d*4H + g*H + j (per column)
 * (the subtraction left out when the zero points are constant zeros, as
 * quantize_dynamic writes them). So the bundle keeps the int8 weights, and
 * the float32 arithmetic on them is the float LSTM of the dequantized
 * weights but for rounding (the scale applied once per row). ONNX Runtime's kernel also quantizes X and the hidden state
 * to uint8 at every step (dynamically) and sums in integers; Ingot keeps
 * them in float32, one rounding fewer, so the two differ by that
 * activation rounding (tests/e2e/dqlstm_test.py measures it). Against the
 * original float model both are dominated by the weights' rounding, which
 * they share: on the tests' LSTMs Ingot's mean error against it is
 * 0.0019 to 0.0036, ONNX Runtime's 0.0030 to 0.0040 (Ingot nearer on 3 of
 * 4), and on Silero VAD the two are as far.
 *
 * One OTHER stage. Its outermost loop runs over (direction, batch) rows, which
 * are independent; inside, a serial loop over the time steps, and per step a
 * loop over the hidden units computing the gates with dot products over the
 * input and the previous hidden state:
 *
 *   for row in D*B:                                (spatial)
 *     d = row / B, b = row % B, L = sequence_lens[b] (T without it)
 *     [LSTM: Y_c[d,b,:] = initial_c or 0]
 *     for s in T:                                  (serial: the recurrence)
 *      if s < L:
 *       t = reverse(d) ? L-1-s : s
 *       [GRU, linear_before_reset=0: for k: Y_h[d,b,k] = r_k * hprev_k]
 *       for j in H:
 *         gates_j = W x_t + R hprev (+ biases)      (local accumulators)
 *         LSTM: c = f*cprev + i*g; h = o*tanh(c); Y_c[d,b,j] = c
 *         Y[t,d,b,j] = h
 *     for s in [L, T): Y[s,d,b,:] = 0
 *     for j in H: Y_h[d,b,j] = L > 0 ? Y[t_last,d,b,j] : initial_h or 0
 *
 * hprev is Y at the previous step (or initial_h / 0 at the first), so Y must
 * exist; LSTM keeps its cell state in Y_c (updated in place: unit j only reads
 * its own), and GRU (linear_before_reset=0) needs r*hprev for every unit
 * before any new h, which it keeps in Y_h. Shape inference adds those
 * outputs when the model leaves them out (graph/infer_nn.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lower_internal.h"

typedef enum rnn_act_kind_t {
  RNN_ACT_SIGMOID, RNN_ACT_TANH, RNN_ACT_RELU, RNN_ACT_AFFINE, RNN_ACT_LEAKYRELU, RNN_ACT_THRESHOLDEDRELU,
  RNN_ACT_SCALEDTANH, RNN_ACT_HARDSIGMOID, RNN_ACT_ELU, RNN_ACT_SOFTSIGN, RNN_ACT_SOFTPLUS,
} rnn_act_kind_t;
typedef struct rnn_act_t {
  rnn_act_kind_t kind;
  double alpha, beta;
} rnn_act_t;

typedef struct rnn_t {
  lower_ctx_t* ctx;
  ingot_ir_func_t* f;
  ingot_dtype_t dt;
  int64_t seq, batch, in, hidden, ndir, gates;
  bool layout1;
  bool has_clip;
  double clip;
  uint32_t bx, bw, br, bb, bh0, bc0, bp, by, byh, byc; /* UINT32_MAX when absent */
  /* DynamicQuantizeLSTM: W and R are 8-bit [D, cols, 4H]; scale and zero
   * point buffers of W ([0]) and R ([1]); zero[k] UINT32_MAX when the zero
   * points are constant zeros; per_col[k]: [D, 4H] rather than [D]. */
  bool dq;
  bool rows;            /* W and R re-laid [D, 4H, cols] (node.rnn_rows) */
  uint32_t scale[2], zero[2];
  bool per_col[2];
  ingot_ir_expr_t* d;   /* direction index */
  ingot_ir_expr_t* b;   /* batch index */
  /* The activation functions: per direction (f, g, h of LSTM; f, g of
   * GRU; f of RNN), with their alpha and beta. */
  rnn_act_t act[2][3];
  uint32_t act_count;   /* per direction */
  uint32_t row;         /* the (direction, batch) row's loop variable */
  uint32_t tmp_count;   /* locals made for activation arguments */
  /* Within a step (rnn_dot): the time index t and the previous step's tp,
   * whether this is the first step, the hidden unit j; the gates that take
   * R·hprev in the shared loop, and GRU's linear_before_reset. */
  ingot_ir_expr_t *t, *tp, *first, *j;
  int64_t r_gates;
  bool lbr;
  /* Where hprev_at reads: a select per element (RNN_H_EITHER), or, in the
   * step's two versions of the R·hprev loop, Y at the step before
   * (RNN_H_PREV) or initial_h (RNN_H_INITIAL). */
  enum { RNN_H_EITHER, RNN_H_PREV, RNN_H_INITIAL } hsrc;
} rnn_t;

/* Partial sums each gate's dot products keep (rnn_dot): enough independent
 * adds to cover an add's latency on any of today's targets, and neighbouring
 * weights the vectorizer can load as one vector. */
#define RNN_CHAINS 8

static ingot_ir_expr_t* I(rnn_t* r, int64_t v) { return ingot_ir_int(r->f, v); }
static ingot_ir_expr_t* add(rnn_t* r, ingot_ir_expr_t* a, ingot_ir_expr_t* b) { return ingot_ir_add(r->f, a, b); }
static ingot_ir_expr_t* mul(rnn_t* r, ingot_ir_expr_t* a, ingot_ir_expr_t* b) { return ingot_ir_mul(r->f, a, b); }
static ingot_ir_expr_t* sub(rnn_t* r, ingot_ir_expr_t* a, ingot_ir_expr_t* b) {
  return ingot_ir_binary(r->f, INGOT_IR_SUB, a, b);
}
static ingot_ir_expr_t* F(rnn_t* r, double v) { return ingot_ir_float(r->f, r->dt, v); }

/* Flat indices. */
static ingot_ir_expr_t* x_at(rnn_t* r, ingot_ir_expr_t* t, ingot_ir_expr_t* k) {
  ingot_ir_expr_t* row = r->layout1 ? add(r, mul(r, r->b, I(r, r->seq)), t) : add(r, mul(r, t, I(r, r->batch)), r->b);
  return add(r, mul(r, row, I(r, r->in)), k);
}
static ingot_ir_expr_t* y_at(rnn_t* r, ingot_ir_expr_t* t, ingot_ir_expr_t* j) {
  ingot_ir_expr_t* row = r->layout1
                             ? add(r, mul(r, add(r, mul(r, r->b, I(r, r->seq)), t), I(r, r->ndir)), r->d)
                             : add(r, mul(r, add(r, mul(r, t, I(r, r->ndir)), r->d), I(r, r->batch)), r->b);
  return add(r, mul(r, row, I(r, r->hidden)), j);
}
static ingot_ir_expr_t* state_at(rnn_t* r, ingot_ir_expr_t* j) {
  ingot_ir_expr_t* row = r->layout1 ? add(r, mul(r, r->b, I(r, r->ndir)), r->d) : add(r, mul(r, r->d, I(r, r->batch)), r->b);
  return add(r, mul(r, row, I(r, r->hidden)), j);
}
/* W[d, gate*H + j, k] (cols = I) or R[d, gate*H + j, k] (cols = H). */
static ingot_ir_expr_t* wr_at(rnn_t* r, int64_t gate, ingot_ir_expr_t* j, ingot_ir_expr_t* k, int64_t cols) {
  ingot_ir_expr_t* rowi = add(r, add(r, mul(r, r->d, I(r, r->gates * r->hidden)), I(r, gate * r->hidden)), j);
  return add(r, mul(r, rowi, I(r, cols)), k);
}
/* The float value of W[d, gate*H + j, k] (recurrent false, k < I) or
 * R[d, gate*H + j, k] (recurrent true, k < H): a load, or for
 * DynamicQuantizeLSTM the element of its [D, cols, 4H] weight (or of its
 * [D, 4H, cols] one where the constants were re-laid, node.rnn_rows) less
 * its zero point, `float(q) - Wz[s]`, whose scale weight_scale gives (the
 * file comment). */
static ingot_ir_expr_t* weight(rnn_t* r, bool recurrent, int64_t gate, ingot_ir_expr_t* j, ingot_ir_expr_t* k) {
  int64_t cols = recurrent ? r->hidden : r->in;
  uint32_t buf = recurrent ? r->br : r->bw;
  if (!r->dq) return ingot_ir_load(r->f, buf, wr_at(r, gate, j, k, cols));
  int64_t g4 = r->gates * r->hidden;
  ingot_ir_expr_t* col = add(r, I(r, gate * r->hidden), j);
  ingot_ir_expr_t* idx = r->rows ? wr_at(r, gate, j, k, cols)
                                 : add(r, mul(r, add(r, mul(r, r->d, I(r, cols)), k), I(r, g4)), col);
  ingot_ir_expr_t* q = ingot_ir_cast(r->f, r->dt, ingot_ir_load(r->f, buf, idx));
  int w = recurrent ? 1 : 0;
  ingot_ir_expr_t* si = r->per_col[w] ? add(r, mul(r, r->d, I(r, g4)), col) : r->d;
  if (r->zero[w] != UINT32_MAX) q = sub(r, q, ingot_ir_cast(r->f, r->dt, ingot_ir_load(r->f, r->zero[w], si)));
  return q;
}

/* DynamicQuantizeLSTM: the scale of W's (recurrent false) or R's row
 * gate*H + j, Ws[s] with s as in the file comment, which multiplies the
 * row's whole dot product; NULL for the float ops. */
static ingot_ir_expr_t* weight_scale(rnn_t* r, bool recurrent, int64_t gate, ingot_ir_expr_t* j) {
  if (!r->dq) return NULL;
  int w = recurrent ? 1 : 0;
  ingot_ir_expr_t* si = r->per_col[w] ? add(r, mul(r, r->d, I(r, r->gates * r->hidden)), add(r, I(r, gate * r->hidden), j)) : r->d;
  return ingot_ir_load(r->f, r->scale[w], si);
}

/* True when `v` is a constant whose every byte is zero. */
static bool zero_weight(const lower_ctx_t* ctx, uint32_t v) {
  const ingot_value_t* z = lower_value(ctx, v);
  if (z->kind != INGOT_VALUE_WEIGHT || !z->data) return false;
  uint64_t n = ingot_value_bytes(z);
  for (uint64_t i = 0; i < n; ++i)
    if (((const uint8_t*)z->data)[i] != 0) return false;
  return true;
}

/* B[d, half*G*H + gate*H + j] */
static ingot_ir_expr_t* bias(rnn_t* r, int64_t half, int64_t gate, ingot_ir_expr_t* j) {
  if (r->bb == UINT32_MAX) return F(r, 0.0);
  ingot_ir_expr_t* i = add(r, mul(r, r->d, I(r, 2 * r->gates * r->hidden)),
                           add(r, I(r, (half * r->gates + gate) * r->hidden), j));
  return ingot_ir_load(r->f, r->bb, i);
}

/* The activation functions by name (case as ONNX writes them, any case
 * accepted), with how many of alpha, beta each takes and their defaults. */
static const struct {
  const char* name;
  rnn_act_kind_t kind;
  int params; /* 0, 1 (alpha) or 2 (alpha, beta) */
  double alpha, beta;
} kActs[] = {
    {"Sigmoid", RNN_ACT_SIGMOID, 0, 0, 0},         {"Tanh", RNN_ACT_TANH, 0, 0, 0},
    {"Relu", RNN_ACT_RELU, 0, 0, 0},               {"Affine", RNN_ACT_AFFINE, 2, 1.0, 0.0},
    {"LeakyRelu", RNN_ACT_LEAKYRELU, 1, 0.01, 0},  {"ThresholdedRelu", RNN_ACT_THRESHOLDEDRELU, 1, 1.0, 0},
    {"ScaledTanh", RNN_ACT_SCALEDTANH, 2, 1.0, 1.0}, {"HardSigmoid", RNN_ACT_HARDSIGMOID, 2, 0.2, 0.5},
    {"Elu", RNN_ACT_ELU, 1, 1.0, 0},               {"Softsign", RNN_ACT_SOFTSIGN, 0, 0, 0},
    {"Softplus", RNN_ACT_SOFTPLUS, 0, 0, 0},
};

/* Reads activations / activation_alpha / activation_beta into r->act. */
static ingot_status_t read_activations(rnn_t* r, ingot_op_t op) {
  lower_ctx_t* ctx = r->ctx;
  const ingot_node_t* node = ctx->node;
  static const rnn_act_kind_t kDefault[3][3] = {
      {RNN_ACT_SIGMOID, RNN_ACT_TANH, RNN_ACT_TANH}, {RNN_ACT_SIGMOID, RNN_ACT_TANH}, {RNN_ACT_TANH}};
  int which = op == INGOT_OP_LSTM ? 0 : op == INGOT_OP_GRU ? 1 : 2;
  r->act_count = which == 0 ? 3 : which == 1 ? 2 : 1;
  for (uint32_t d = 0; d < 2; ++d)
    for (uint32_t k = 0; k < r->act_count; ++k) r->act[d][k] = (rnn_act_t){kDefault[which][k], 0, 0};
  const ingot_attr_t* names = ingot_node_attr(node, "activations");
  const ingot_attr_t* alphas = ingot_node_attr(node, "activation_alpha");
  const ingot_attr_t* betas = ingot_node_attr(node, "activation_beta");
  if (!names) {
    if (alphas || betas) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "activation_alpha/beta without activations");
    return INGOT_OK;
  }
  if (names->type != INGOT_ATTR_STRINGS || names->count != r->act_count * (uint32_t)r->ndir) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "activations must list %u names (%u per direction)",
                      r->act_count * (uint32_t)r->ndir, r->act_count);
  }
  if ((alphas && alphas->type != INGOT_ATTR_FLOATS) || (betas && betas->type != INGOT_ATTR_FLOATS)) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "activation_alpha and activation_beta must be float lists");
  }
  uint32_t ai = 0, bi = 0;
  for (uint32_t i = 0; i < names->count; ++i) {
    size_t a = 0;
    while (a < sizeof(kActs) / sizeof(kActs[0]) && strcasecmp(kActs[a].name, names->strings[i]) != 0) ++a;
    if (a == sizeof(kActs) / sizeof(kActs[0])) {
      return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "activation '%s' is not supported (Relu, Tanh, Sigmoid, Affine, "
                        "LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)",
                        names->strings[i]);
    }
    rnn_act_t* e = &r->act[i / r->act_count][i % r->act_count];
    e->kind = kActs[a].kind;
    e->alpha = kActs[a].alpha;
    e->beta = kActs[a].beta;
    if (kActs[a].params >= 1 && alphas && ai < alphas->count) e->alpha = alphas->floats[ai++];
    if (kActs[a].params >= 2 && betas && bi < betas->count) e->beta = betas->floats[bi++];
  }
  return INGOT_OK;
}

static ingot_ir_expr_t* act_of(rnn_t* r, const rnn_act_t* a, uint32_t x) {
  ingot_ir_func_t* f = r->f;
#define X() ingot_ir_var(f, x)
  switch (a->kind) {
    case RNN_ACT_SIGMOID: {
      ingot_ir_expr_t* e = ingot_ir_unary(f, INGOT_IR_EXP, ingot_ir_unary(f, INGOT_IR_NEG, X()));
      return ingot_ir_binary(f, INGOT_IR_DIV, F(r, 1.0), add(r, F(r, 1.0), e));
    }
    case RNN_ACT_TANH: return ingot_ir_unary(f, INGOT_IR_TANH, X());
    case RNN_ACT_RELU: return ingot_ir_binary(f, INGOT_IR_MAX, X(), F(r, 0.0));
    case RNN_ACT_AFFINE: return add(r, mul(r, F(r, a->alpha), X()), F(r, a->beta));
    case RNN_ACT_LEAKYRELU:
      return ingot_ir_select(f, ingot_ir_binary(f, INGOT_IR_LT, X(), F(r, 0.0)), mul(r, F(r, a->alpha), X()), X());
    case RNN_ACT_THRESHOLDEDRELU:
      return ingot_ir_select(f, ingot_ir_binary(f, INGOT_IR_LT, F(r, a->alpha), X()), X(), F(r, 0.0));
    case RNN_ACT_SCALEDTANH:
      return mul(r, F(r, a->alpha), ingot_ir_unary(f, INGOT_IR_TANH, mul(r, F(r, a->beta), X())));
    case RNN_ACT_HARDSIGMOID: {
      ingot_ir_expr_t* v = add(r, mul(r, F(r, a->alpha), X()), F(r, a->beta));
      return ingot_ir_binary(f, INGOT_IR_MIN, ingot_ir_binary(f, INGOT_IR_MAX, v, F(r, 0.0)), F(r, 1.0));
    }
    case RNN_ACT_ELU:
      return ingot_ir_select(f, ingot_ir_binary(f, INGOT_IR_LT, X(), F(r, 0.0)),
                             mul(r, F(r, a->alpha), sub(r, ingot_ir_unary(f, INGOT_IR_EXP, X()), F(r, 1.0))), X());
    case RNN_ACT_SOFTSIGN:
      return ingot_ir_binary(f, INGOT_IR_DIV, X(), add(r, F(r, 1.0), ingot_ir_unary(f, INGOT_IR_ABS, X())));
    case RNN_ACT_SOFTPLUS:
      return ingot_ir_unary(f, INGOT_IR_LOG, add(r, F(r, 1.0), ingot_ir_unary(f, INGOT_IR_EXP, X())));
  }
#undef X
  return ingot_ir_var(f, x);
}

/* Activation k (0: f, 1: g, 2: h) of the row's direction applied to v: v
 * goes into a new local (appended to stmts[*n]) that the function reads. */
static ingot_ir_expr_t* act(rnn_t* r, uint32_t k, ingot_ir_expr_t* v, ingot_ir_stmt_t** stmts, uint32_t* n) {
  ingot_ir_func_t* f = r->f;
  uint32_t x = lower_add_var(r->ctx, ingot_arena_printf(r->ctx->arena, "av%u", r->tmp_count++), INGOT_IR_VAR_LOCAL, r->dt);
  stmts[(*n)++] = ingot_ir_local(f, x, v);
  ingot_ir_expr_t* fwd = act_of(r, &r->act[0][k], x);
  const rnn_act_t *a0 = &r->act[0][k], *a1 = &r->act[1][k];
  if (r->ndir < 2 || (a0->kind == a1->kind && a0->alpha == a1->alpha && a0->beta == a1->beta)) return fwd;
  /* bidirectional with another function backwards: the row's direction picks */
  ingot_ir_expr_t* is_fwd = ingot_ir_binary(f, INGOT_IR_EQ, ingot_ir_binary(f, INGOT_IR_DIV, ingot_ir_var(f, r->row), ingot_ir_int(f, r->batch)), ingot_ir_int(f, 0));
  return ingot_ir_select(f, is_fwd, fwd, act_of(r, &r->act[1][k], x));
}

/* hprev[k]: initial_h (or 0) at the first step, else Y at the step before
 * (tp, clamped into range for the first step, where it is not read). */
static ingot_ir_expr_t* hprev_at(rnn_t* r, ingot_ir_expr_t* k) {
  if (r->hsrc == RNN_H_PREV) return ingot_ir_load(r->f, r->by, y_at(r, r->tp, k));
  if (r->hsrc == RNN_H_INITIAL) return ingot_ir_load(r->f, r->bh0, state_at(r, k));
  return ingot_ir_select(r->f, r->first, r->bh0 != UINT32_MAX ? ingot_ir_load(r->f, r->bh0, state_at(r, k)) : F(r, 0.0),
                         ingot_ir_load(r->f, r->by, y_at(r, r->tp, k)));
}

/* Term k of accumulator a's dot product: x_t[k] * W[a, j, k] (W·x), or
 * hprev[k] * R[a, j, k] (R·hprev) for a < r_gates; a == r_gates is GRU's
 * separate R_h · hprev (lbr=1) or R_h · (r ⊙ hprev), staged in Y_h (lbr=0). */
static ingot_ir_expr_t* dot_term(rnn_t* r, bool recurrent, int64_t a, ingot_ir_expr_t* k) {
  if (!recurrent) return mul(r, ingot_ir_load(r->f, r->bx, x_at(r, r->t, k)), weight(r, false, a, r->j, k));
  if (a < r->r_gates) return mul(r, hprev_at(r, k), weight(r, true, a, r->j, k));
  ingot_ir_expr_t* src = r->lbr ? hprev_at(r, k) : ingot_ir_load(r->f, r->byh, state_at(r, k));
  return mul(r, src, ingot_ir_load(r->f, r->br, wr_at(r, 2, r->j, k, r->hidden)));
}

/* acc[a] += the dot product of accumulator a over k < len (dot_term), for
 * a < n <= 4, times its row's scale for DynamicQuantizeLSTM (weight_scale:
 * one multiply per row, not per weight). Where len allows, each keeps
 * RNN_CHAINS partial sums, added pairwise at the end (as
 * lower_row_reduce), so one step's adds do not wait on each other and the
 * terms of neighbouring k can share vector loads. Appends at most
 * n * (RNN_CHAINS + 1) + 2 statements. */
static void rnn_dot(rnn_t* r, bool recurrent, const uint32_t* acc, uint32_t n, int64_t len, ingot_ir_stmt_t** out,
                    uint32_t* nout) {
  ingot_ir_func_t* f = r->f;
  if (len < 1) return;
  int chains = len >= 2 * RNN_CHAINS ? RNN_CHAINS : 1;
  ingot_ir_stmt_t* step[4 * RNN_CHAINS];
  uint32_t ns = 0;
  uint32_t part[4][RNN_CHAINS];
  uint32_t ko = lower_add_var(r->ctx, "ko", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  int64_t blocks = len / chains;
  for (uint32_t a = 0; a < n; ++a) {
    for (int c = 0; c < chains; ++c) {
      part[a][c] = lower_add_var(r->ctx, "part", INGOT_IR_VAR_LOCAL, r->dt);
      out[(*nout)++] = ingot_ir_local(f, part[a][c], dot_term(r, recurrent, a, I(r, c)));
      /* k = (ko + 1) * chains + c */
      ingot_ir_expr_t* k = add(r, mul(r, add(r, ingot_ir_var(f, ko), I(r, 1)), I(r, chains)), I(r, c));
      step[ns++] = ingot_ir_assign(f, part[a][c], add(r, ingot_ir_var(f, part[a][c]), dot_term(r, recurrent, a, k)));
    }
  }
  if (blocks > 1) out[(*nout)++] = ingot_ir_for(f, ko, blocks - 1, ingot_ir_block(f, step, ns));
  if (len % chains) {
    uint32_t kt = lower_add_var(r->ctx, "kt", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    ingot_ir_expr_t* k = add(r, ingot_ir_var(f, kt), I(r, blocks * chains));
    ns = 0;
    for (uint32_t a = 0; a < n; ++a)
      step[ns++] = ingot_ir_assign(f, part[a][0], add(r, ingot_ir_var(f, part[a][0]), dot_term(r, recurrent, a, k)));
    out[(*nout)++] = ingot_ir_for(f, kt, len % chains, ingot_ir_block(f, step, ns));
  }
  for (uint32_t a = 0; a < n; ++a) {
    ingot_ir_expr_t* v[RNN_CHAINS];
    for (int c = 0; c < chains; ++c) v[c] = ingot_ir_var(f, part[a][c]);
    for (int w = chains; w > 1; w /= 2)
      for (int c = 0; c < w / 2; ++c) v[c] = add(r, v[c], v[c + w / 2]);
    ingot_ir_expr_t* scale = (int64_t)a < r->gates && (!recurrent || (int64_t)a < r->r_gates)
                                 ? weight_scale(r, recurrent, a, r->j) : NULL;
    if (scale) v[0] = mul(r, v[0], scale);
    out[(*nout)++] = ingot_ir_assign(f, acc[a], add(r, ingot_ir_var(f, acc[a]), v[0]));
  }
}

static ingot_ir_expr_t* clip(rnn_t* r, ingot_ir_expr_t* v) {
  if (!r->has_clip) return v;
  v = ingot_ir_binary(r->f, INGOT_IR_MAX, v, F(r, -r->clip));
  return ingot_ir_binary(r->f, INGOT_IR_MIN, v, F(r, r->clip));
}

ingot_status_t lower_rnn(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  bool dq = node->op == INGOT_OP_DYNAMICQUANTIZELSTM;
  /* DynamicQuantizeLSTM is an LSTM here but for its weights' loads. */
  ingot_op_t op = dq ? INGOT_OP_LSTM : node->op;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx))) return s;
  rnn_t R;
  memset(&R, 0, sizeof(R));
  rnn_t* r = &R;
  r->ctx = ctx;
  r->dq = dq;
  r->gates = op == INGOT_OP_LSTM ? 4 : op == INGOT_OP_GRU ? 3 : 1;
  uint32_t x = lower_input(ctx, 0), w = lower_input(ctx, 1), rr = lower_input(ctx, 2), b = lower_input(ctx, 3);
  uint32_t h0 = lower_input(ctx, 5), c0 = op == INGOT_OP_LSTM ? lower_input(ctx, 6) : INGOT_NO_VALUE;
  uint32_t p = op == INGOT_OP_LSTM ? lower_input(ctx, 7) : INGOT_NO_VALUE;
  uint32_t y = node->output_count > 0 ? node->outputs[0] : INGOT_NO_VALUE;
  uint32_t yh = node->output_count > 1 ? node->outputs[1] : INGOT_NO_VALUE;
  uint32_t yc = node->output_count > 2 && op == INGOT_OP_LSTM ? node->outputs[2] : INGOT_NO_VALUE;
  if (y == INGOT_NO_VALUE || (op == INGOT_OP_LSTM && yc == INGOT_NO_VALUE) || (op == INGOT_OP_GRU && yh == INGOT_NO_VALUE)) {
    return lower_fail(ctx, INGOT_ERROR_INTERNAL, "the state outputs are missing (shape inference has not run)");
  }
  uint32_t all[10] = {x, w, rr, b, h0, c0, p, y, yh, yc};
  for (uint32_t i = 0; i < 10; ++i) {
    if (all[i] == INGOT_NO_VALUE) continue;
    if ((s = lower_check_value(ctx, all[i], false))) return s;
    if (dq && (i == 1 || i == 2)) continue; /* the 8-bit weights: checked below */
    ingot_dtype_t t = lower_value(ctx, all[i])->dtype;
    if (t != lower_value(ctx, x)->dtype || (t != INGOT_DTYPE_F32 && t != INGOT_DTYPE_F64)) {
      return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "'%s' has dtype %s (float32 or float64, all the same)",
                        lower_value(ctx, all[i])->name, ingot_dtype_name(t));
    }
  }
  if (op == INGOT_OP_LSTM && ingot_node_attr_int(node, "input_forget", 0) != 0) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "input_forget=1 is not supported");
  }
  const ingot_value_t* xv = lower_value(ctx, x);
  ingot_value_t w_logical, r_logical;
  const ingot_value_t* wv = ingot_node_logical_input(node, 1, lower_value(ctx, w), &w_logical);
  const ingot_value_t* rv = ingot_node_logical_input(node, 2, lower_value(ctx, rr), &r_logical);
  if (!wv || !rv) return lower_fail(ctx, INGOT_ERROR_INTERNAL, "W and R are not re-laid [D, 4H, cols] weights");
  r->rows = node->rnn_rows;
  r->dt = xv->dtype;
  r->layout1 = !dq && ingot_node_attr_int(node, "layout", 0) != 0;
  r->seq = r->layout1 ? xv->dims[1] : xv->dims[0];
  r->batch = r->layout1 ? xv->dims[0] : xv->dims[1];
  r->in = xv->dims[2];
  r->hidden = dq ? rv->dims[1] : rv->dims[2];
  r->ndir = rv->dims[0];
  const char* dir = ingot_node_attr_string(node, "direction", "forward");
  bool reverse_only = strcmp(dir, "reverse") == 0;
  bool bidir = strcmp(dir, "bidirectional") == 0;
  bool fits = dq ? wv->dims[1] == r->in && wv->dims[2] == r->gates * r->hidden && rv->dims[2] == r->gates * r->hidden
                 : wv->dims[2] == r->in && rv->dims[1] == r->gates * r->hidden;
  if (dq && ((wv->dtype != INGOT_DTYPE_I8 && wv->dtype != INGOT_DTYPE_U8) || rv->dtype != wv->dtype)) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "W and R must both be int8 or both uint8 (W %s, R %s)",
                      ingot_dtype_name(wv->dtype), ingot_dtype_name(rv->dtype));
  }
  if ((bidir ? 2 : 1) != r->ndir || xv->rank != 3 || wv->rank != 3 || rv->rank != 3 || !fits) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "shapes do not fit (X %s, W %s, R %s, direction %s)",
                      lower_shape_str(ctx, x), lower_shape_str(ctx, w), lower_shape_str(ctx, rr), dir);
  }
  if ((s = read_activations(r, op))) return s;
  const ingot_attr_t* clip_attr = ingot_node_attr(node, "clip");
  r->has_clip = clip_attr && clip_attr->type == INGOT_ATTR_FLOAT;
  r->clip = r->has_clip ? clip_attr->f : 0.0;
  bool lbr = op == INGOT_OP_GRU && ingot_node_attr_int(node, "linear_before_reset", 0) != 0;
  uint32_t lens = lower_input(ctx, 4);
  if (lens != INGOT_NO_VALUE) {
    if ((s = lower_check_value(ctx, lens, false))) return s;
    const ingot_value_t* lv = lower_value(ctx, lens);
    if ((lv->dtype != INGOT_DTYPE_I32 && lv->dtype != INGOT_DTYPE_I64) || lv->rank != 1 || lv->dims[0] != r->batch) {
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "sequence_lens must be an int32 vector of %lld",
                        (long long)r->batch);
    }
    /* All lengths the full sequence, known now: the plain nest. */
    bool full = lv->kind == INGOT_VALUE_WEIGHT && lv->data;
    for (int64_t i = 0; full && i < r->batch; ++i) {
      int64_t l = lv->dtype == INGOT_DTYPE_I32 ? ((const int32_t*)lv->data)[i] : ((const int64_t*)lv->data)[i];
      full = l == r->seq;
    }
    if (full) lens = INGOT_NO_VALUE;
  }

  ingot_ir_func_t* f = ctx->f;
  r->bx = lower_add_input(ctx, x, "x");
  r->bw = lower_add_input(ctx, w, "w");
  r->br = lower_add_input(ctx, rr, "r");
  r->bb = b != INGOT_NO_VALUE ? lower_add_input(ctx, b, "bias") : UINT32_MAX;
  uint32_t blens = lens != INGOT_NO_VALUE ? lower_add_input(ctx, lens, "lens") : UINT32_MAX;
  r->bh0 = h0 != INGOT_NO_VALUE ? lower_add_input(ctx, h0, "h0") : UINT32_MAX;
  r->bc0 = c0 != INGOT_NO_VALUE ? lower_add_input(ctx, c0, "c0") : UINT32_MAX;
  r->bp = p != INGOT_NO_VALUE ? lower_add_input(ctx, p, "peep") : UINT32_MAX;
  for (uint32_t k = 0; dq && k < 2; ++k) {
    uint32_t sc = lower_input(ctx, 8 + 2 * k), zp = lower_input(ctx, 9 + 2 * k);
    if (sc == INGOT_NO_VALUE || zp == INGOT_NO_VALUE) {
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "%s_scale and %s_zero_point are required", k ? "R" : "W",
                        k ? "R" : "W");
    }
    if ((s = lower_check_value(ctx, sc, true)) || (s = lower_check_value(ctx, zp, false))) return s;
    const ingot_value_t* sv = lower_value(ctx, sc);
    const ingot_value_t* zv = lower_value(ctx, zp);
    int64_t count = ingot_value_numel(sv);
    if (zv->dtype != wv->dtype || ingot_value_numel(zv) != count ||
        (count != r->ndir && count != r->ndir * r->gates * r->hidden)) {
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "%s_scale %s and %s_zero_point %s do not fit", k ? "R" : "W",
                        lower_shape_str(ctx, sc), k ? "R" : "W", lower_shape_str(ctx, zp));
    }
    r->per_col[k] = count != r->ndir;
    r->scale[k] = lower_add_input(ctx, sc, k ? "r_scale" : "w_scale");
    r->zero[k] = zero_weight(ctx, zp) ? UINT32_MAX : lower_add_input(ctx, zp, k ? "r_zero" : "w_zero");
  }
  r->by = lower_add_output(ctx, y, "y");
  r->byh = yh != INGOT_NO_VALUE ? lower_add_output(ctx, yh, "y_h") : UINT32_MAX;
  r->byc = yc != INGOT_NO_VALUE ? lower_add_output(ctx, yc, "y_c") : UINT32_MAX;
  r->f = f;

  uint32_t row = lower_add_var(ctx, "row", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  r->row = row;
  uint32_t sv = lower_add_var(ctx, "s", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t jv = lower_add_var(ctx, "j", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t tv = lower_add_var(ctx, "t", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64);
  uint32_t tp = lower_add_var(ctx, "tp", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64);
  uint32_t lv = lower_add_var(ctx, "len", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64);
  r->d = r->ndir > 1 ? ingot_ir_binary(f, INGOT_IR_DIV, ingot_ir_var(f, row), I(r, r->batch)) : I(r, 0);
  r->b = r->ndir > 1 ? ingot_ir_binary(f, INGOT_IR_MOD, ingot_ir_var(f, row), I(r, r->batch)) : ingot_ir_var(f, row);
  /* rev = 1 for a direction that runs backwards. */
  ingot_ir_expr_t* rev = reverse_only ? I(r, 1) : bidir ? r->d : I(r, 0);
  ingot_ir_expr_t* s_e = ingot_ir_var(f, sv);
  /* L: this batch row's length, clamped into [0, T]. */
  ingot_ir_expr_t* len_e = ingot_ir_var(f, lv);
  ingot_ir_expr_t* len_init = I(r, r->seq);
  if (blens != UINT32_MAX) {
    ingot_ir_expr_t* raw = ingot_ir_load(f, blens, r->b);
    if (f->buffers[blens].dtype != INGOT_DTYPE_I64) raw = ingot_ir_cast(f, INGOT_DTYPE_I64, raw);
    len_init = ingot_ir_binary(f, INGOT_IR_MIN, ingot_ir_binary(f, INGOT_IR_MAX, raw, I(r, 0)), I(r, r->seq));
  }
  ingot_ir_expr_t* t_e = ingot_ir_var(f, tv);
  ingot_ir_expr_t* first = ingot_ir_binary(f, INGOT_IR_EQ, s_e, I(r, 0));
  ingot_ir_expr_t* j_e = ingot_ir_var(f, jv);

  INGOT_VEC(ingot_ir_stmt_t*) step = {0};
  /* t and tp for this step */
  INGOT_VEC_PUSH(step, ingot_ir_local(f, tv, add(r, s_e, mul(r, rev, sub(r, sub(r, len_e, I(r, 1)), mul(r, s_e, I(r, 2)))))));
  ingot_ir_expr_t* tprev = add(r, t_e, sub(r, mul(r, rev, I(r, 2)), I(r, 1))); /* t-1 forward, t+1 reverse */
  tprev = ingot_ir_binary(f, INGOT_IR_MIN, ingot_ir_binary(f, INGOT_IR_MAX, tprev, I(r, 0)), I(r, r->seq - 1));
  INGOT_VEC_PUSH(step, ingot_ir_local(f, tp, tprev));

  /* Per gate: acc_g = sum_k x[k] W[g,j,k] + sum_k hsrc(k) R[g,j,k] + Wb + Rb. */
  uint32_t acc[4] = {0, 0, 0, 0};
  static const char* const kAcc[4] = {"a0", "a1", "a2", "a3"};
  for (int64_t g = 0; g < r->gates; ++g) acc[g] = lower_add_var(ctx, kAcc[g], INGOT_IR_VAR_LOCAL, r->dt);

  ingot_ir_stmt_t* unit_stmts[4 * (RNN_CHAINS + 1) + 2 + 24];
  uint32_t nu = 0;
  /* Which gates take R·hprev in the shared loop (GRU lbr=0: not the new gate). */
  int64_t r_gates = r->gates;
  uint32_t rh_acc = UINT32_MAX; /* GRU: R_h · (r*h) or R_h · h, separately */
  if (op == INGOT_OP_GRU) {
    r_gates = 2;
    rh_acc = lower_add_var(ctx, "arh", INGOT_IR_VAR_LOCAL, r->dt);
  }
  for (int64_t g = 0; g < r->gates; ++g) {
    ingot_ir_expr_t* init = add(r, bias(r, 0, g, j_e), g < r_gates ? bias(r, 1, g, j_e) : F(r, 0.0));
    unit_stmts[nu++] = ingot_ir_local(f, acc[g], init);
  }
  if (rh_acc != UINT32_MAX) unit_stmts[nu++] = ingot_ir_local(f, rh_acc, bias(r, 1, 2, j_e));
  r->t = t_e;
  r->tp = ingot_ir_var(f, tp);
  r->first = first;
  r->j = j_e;
  r->r_gates = r_gates;
  r->lbr = lbr;
  rnn_dot(r, false, acc, (uint32_t)r->gates, r->in, unit_stmts, &nu);
  uint32_t hacc[4] = {acc[0], acc[1], acc[2], acc[3]};
  if (rh_acc != UINT32_MAX) hacc[r_gates] = rh_acc;
  /* R·hprev in two versions rather than a select per term: Y at the step
   * before, after the first step; initial_h at the first, where without it
   * hprev is 0 and the loop is left out. */
  uint32_t n_hacc = (uint32_t)r_gates + (rh_acc != UINT32_MAX);
  for (int v = 0; v < (r->bh0 != UINT32_MAX ? 2 : 1); ++v) {
    ingot_ir_stmt_t* hd[4 * (RNN_CHAINS + 1) + 2];
    uint32_t nh = 0;
    r->hsrc = v ? RNN_H_INITIAL : RNN_H_PREV;
    rnn_dot(r, true, hacc, n_hacc, r->hidden, hd, &nh);
    ingot_ir_expr_t* when = v ? first : ingot_ir_binary(f, INGOT_IR_NE, s_e, I(r, 0));
    unit_stmts[nu++] = ingot_ir_if(f, when, ingot_ir_block(f, hd, nh));
  }
  r->hsrc = RNN_H_EITHER;
  ingot_ir_expr_t* h_new;
  ingot_ir_expr_t* hprev_j = hprev_at(r, j_e);
  if (op == INGOT_OP_LSTM) {
    /* gates in ONNX order i, o, f, c; P = [Pi, Po, Pf] */
    uint32_t cprev = lower_add_var(ctx, "cprev", INGOT_IR_VAR_LOCAL, r->dt);
    uint32_t cnew = lower_add_var(ctx, "cnew", INGOT_IR_VAR_LOCAL, r->dt);
    unit_stmts[nu++] = ingot_ir_local(f, cprev, ingot_ir_load(f, r->byc, state_at(r, j_e)));
    ingot_ir_expr_t* cp = ingot_ir_var(f, cprev);
    ingot_ir_expr_t* pi = F(r, 0.0);
    ingot_ir_expr_t* po = F(r, 0.0);
    ingot_ir_expr_t* pf = F(r, 0.0);
    if (r->bp != UINT32_MAX) {
      ingot_ir_expr_t* base = mul(r, r->d, I(r, 3 * r->hidden));
      pi = ingot_ir_load(f, r->bp, add(r, base, j_e));
      po = ingot_ir_load(f, r->bp, add(r, base, add(r, I(r, r->hidden), j_e)));
      pf = ingot_ir_load(f, r->bp, add(r, base, add(r, I(r, 2 * r->hidden), j_e)));
    }
    ingot_ir_expr_t* ig = act(r, 0, clip(r, add(r, ingot_ir_var(f, acc[0]), mul(r, pi, cp))), unit_stmts, &nu);
    ingot_ir_expr_t* fg = act(r, 0, clip(r, add(r, ingot_ir_var(f, acc[2]), mul(r, pf, cp))), unit_stmts, &nu);
    ingot_ir_expr_t* cg = act(r, 1, clip(r, ingot_ir_var(f, acc[3])), unit_stmts, &nu);
    unit_stmts[nu++] = ingot_ir_local(f, cnew, add(r, mul(r, fg, cp), mul(r, ig, cg)));
    ingot_ir_expr_t* cn = ingot_ir_var(f, cnew);
    ingot_ir_expr_t* og = act(r, 0, clip(r, add(r, ingot_ir_var(f, acc[1]), mul(r, po, cn))), unit_stmts, &nu);
    unit_stmts[nu++] = ingot_ir_store(f, r->byc, state_at(r, j_e), ingot_ir_var(f, cnew));
    h_new = mul(r, og, act(r, 2, ingot_ir_var(f, cnew), unit_stmts, &nu));
  } else if (op == INGOT_OP_GRU) {
    /* gates z, r, h; B = [Wbz, Wbr, Wbh, Rbz, Rbr, Rbh] */
    ingot_ir_expr_t* z = act(r, 0, clip(r, ingot_ir_var(f, acc[0])), unit_stmts, &nu);
    uint32_t zv = lower_add_var(ctx, "z", INGOT_IR_VAR_LOCAL, r->dt);
    unit_stmts[nu++] = ingot_ir_local(f, zv, z);
    ingot_ir_expr_t* pre;
    if (lbr) {
      ingot_ir_expr_t* rg = act(r, 0, clip(r, ingot_ir_var(f, acc[1])), unit_stmts, &nu);
      pre = add(r, ingot_ir_var(f, acc[2]), mul(r, rg, ingot_ir_var(f, rh_acc)));
    } else {
      pre = add(r, ingot_ir_var(f, acc[2]), ingot_ir_var(f, rh_acc));
    }
    ingot_ir_expr_t* hh = act(r, 1, clip(r, pre), unit_stmts, &nu);
    ingot_ir_expr_t* ze = ingot_ir_var(f, zv);
    h_new = add(r, mul(r, sub(r, F(r, 1.0), ze), hh), mul(r, ze, hprev_j));
  } else {
    h_new = act(r, 0, clip(r, ingot_ir_var(f, acc[0])), unit_stmts, &nu);
  }
  unit_stmts[nu++] = ingot_ir_store(f, r->by, y_at(r, t_e, j_e), h_new);

  if (op == INGOT_OP_GRU && !lbr) {
    /* First pass of the step: Y_h[k] = r_k * hprev_k for every unit k. */
    uint32_t j2 = lower_add_var(ctx, "jr", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    uint32_t k2x = lower_add_var(ctx, "kx", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    uint32_t k2h = lower_add_var(ctx, "kh", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    uint32_t ar = lower_add_var(ctx, "ar", INGOT_IR_VAR_LOCAL, r->dt);
    ingot_ir_expr_t* j2e = ingot_ir_var(f, j2);
    ingot_ir_expr_t* hprev_k2 = ingot_ir_select(
        f, first, r->bh0 != UINT32_MAX ? ingot_ir_load(f, r->bh0, state_at(r, ingot_ir_var(f, k2h))) : F(r, 0.0),
        ingot_ir_load(f, r->by, y_at(r, ingot_ir_var(f, tp), ingot_ir_var(f, k2h))));
    ingot_ir_expr_t* hprev_j2 = ingot_ir_select(
        f, first, r->bh0 != UINT32_MAX ? ingot_ir_load(f, r->bh0, state_at(r, j2e)) : F(r, 0.0),
        ingot_ir_load(f, r->by, y_at(r, ingot_ir_var(f, tp), j2e)));
    ingot_ir_stmt_t* rs[5] = {
        ingot_ir_local(f, ar, add(r, bias(r, 0, 1, j2e), bias(r, 1, 1, j2e))),
        ingot_ir_for(f, k2x, r->in,
                     ingot_ir_assign(f, ar, add(r, ingot_ir_var(f, ar),
                                                mul(r, ingot_ir_load(f, r->bx, x_at(r, t_e, ingot_ir_var(f, k2x))),
                                                    ingot_ir_load(f, r->bw, wr_at(r, 1, j2e, ingot_ir_var(f, k2x), r->in)))))),
        ingot_ir_for(f, k2h, r->hidden,
                     ingot_ir_assign(f, ar, add(r, ingot_ir_var(f, ar),
                                                mul(r, hprev_k2,
                                                    ingot_ir_load(f, r->br, wr_at(r, 1, j2e, ingot_ir_var(f, k2h), r->hidden)))))),
    };
    uint32_t nr = 3;
    ingot_ir_expr_t* rgate = act(r, 0, clip(r, ingot_ir_var(f, ar)), rs, &nr);
    rs[nr++] = ingot_ir_store(f, r->byh, state_at(r, j2e), mul(r, rgate, hprev_j2));
    INGOT_VEC_PUSH(step, ingot_ir_for(f, j2, r->hidden, ingot_ir_block(f, rs, nr)));
  }
  INGOT_VEC_PUSH(step, ingot_ir_for(f, jv, r->hidden, ingot_ir_block(f, unit_stmts, nu)));

  ingot_ir_stmt_t* row_body[6];
  uint32_t nrb = 0;
  row_body[nrb++] = ingot_ir_local(f, lv, len_init);
  if (r->byc != UINT32_MAX) {
    /* LSTM: the cell state lives in Y_c from the start. */
    uint32_t j0 = lower_add_var(ctx, "jc", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    ingot_ir_expr_t* j0e = ingot_ir_var(f, j0);
    row_body[nrb++] = ingot_ir_for(
        f, j0, r->hidden,
        ingot_ir_store(f, r->byc, state_at(r, j0e), r->bc0 != UINT32_MAX ? ingot_ir_load(f, r->bc0, state_at(r, j0e)) : F(r, 0.0)));
  }
  ingot_ir_stmt_t* step_body = ingot_ir_block(f, step.data, (uint32_t)step.count);
  if (blens != UINT32_MAX) step_body = ingot_ir_if(f, ingot_ir_binary(f, INGOT_IR_LT, s_e, len_e), step_body);
  row_body[nrb++] = ingot_ir_for(f, sv, r->seq, step_body);
  INGOT_VEC_FREE(step);
  if (blens != UINT32_MAX) {
    /* Steps past this row's length are zero in Y. */
    uint32_t s2 = lower_add_var(ctx, "sz", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    uint32_t j2 = lower_add_var(ctx, "jz", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    ingot_ir_stmt_t* zero = ingot_ir_for(f, j2, r->hidden,
                                         ingot_ir_store(f, r->by, y_at(r, ingot_ir_var(f, s2), ingot_ir_var(f, j2)), F(r, 0.0)));
    row_body[nrb++] =
        ingot_ir_for(f, s2, r->seq, ingot_ir_if(f, ingot_ir_binary(f, INGOT_IR_LE, len_e, ingot_ir_var(f, s2)), zero));
  }
  if (r->byh != UINT32_MAX) {
    uint32_t j3 = lower_add_var(ctx, "jh", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    ingot_ir_expr_t* j3e = ingot_ir_var(f, j3);
    /* the last step: L-1 forward, 0 reverse (clamped for L = 0, not read then) */
    ingot_ir_expr_t* tlast = mul(r, sub(r, I(r, 1), rev), sub(r, len_e, I(r, 1)));
    tlast = ingot_ir_binary(f, INGOT_IR_MAX, tlast, I(r, 0));
    ingot_ir_expr_t* hv = ingot_ir_load(f, r->by, y_at(r, tlast, j3e));
    if (blens != UINT32_MAX) {
      ingot_ir_expr_t* h0v = r->bh0 != UINT32_MAX ? ingot_ir_load(f, r->bh0, state_at(r, j3e)) : F(r, 0.0);
      hv = ingot_ir_select(f, ingot_ir_binary(f, INGOT_IR_LT, I(r, 0), len_e), hv, h0v);
    }
    row_body[nrb++] = ingot_ir_for(f, j3, r->hidden, ingot_ir_store(f, r->byh, state_at(r, j3e), hv));
  }
  lower_emit_other(ctx, ingot_ir_for(f, row, r->ndir * r->batch, ingot_ir_block(f, row_body, nrb)));
  ctx->op_class = INGOT_OP_CLASS_ROW;
  const char* wq = !dq ? ""
                   : ingot_arena_printf(ctx->arena, " w%s%s%s", ingot_dtype_name(wv->dtype),
                                        r->per_col[0] || r->per_col[1] ? " per-column" : "",
                                        r->zero[0] != UINT32_MAX || r->zero[1] != UINT32_MAX ? " zp" : "");
  ctx->workload = ingot_arena_printf(ctx->arena, "%s %s seq%lld batch%lld in%lld hidden%lld dir=%s layout%d lbr%d clip%g%s%s",
                                     lower_op_lower(ctx), ingot_dtype_name(r->dt), (long long)r->seq,
                                     (long long)r->batch, (long long)r->in, (long long)r->hidden, dir, r->layout1, lbr,
                                     r->clip, blens != UINT32_MAX ? " lens" : "", wq);
  return INGOT_OK;
}
