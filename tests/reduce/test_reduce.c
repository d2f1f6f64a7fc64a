/* Slice B's ops through shape inference, lowering (stage contract checked by
 * tg_lower) and the IR interpreter, against naive references written here:
 * Reduce* with axes as attribute and as constant input, keepdims,
 * noop_with_empty_axes, LogSumExp on large inputs; ArgMax/ArgMin with
 * select_last_index; TopK with ties; CumSum exclusive/reverse;
 * LayerNormalization with Mean/InvStdDev outputs and broadcast scale;
 * Einsum with '...'; ConvTranspose with groups, strides, dilations, pads,
 * output_padding; LSTM (bidirectional, layout 1, initial states, peepholes,
 * clip) and GRU (linear_before_reset 0 and 1); LSTM's Y_c is left out so
 * that shape inference must add it. The newer ops (Attention, RotaryEmbedding,
 * CausalConvWithState, LinearAttention, DeformConv, DFT, the losses and
 * norms) are checked here for the stage contract and a verified IR only;
 * tests/reduce/node_tests.py and the conformance suite check their numbers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower_test_util.h"

/* An int64 weight. */
static uint32_t i64_weight(ingot_graph_t* g, const char* name, int32_t rank, const int64_t* dims, const int64_t* data) {
  uint32_t v = tg_value(g, name, INGOT_VALUE_WEIGHT, rank, dims);
  int64_t n = tg_numel(g, v);
  int64_t* p = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  if (n) memcpy(p, data, sizeof(int64_t) * (size_t)n);
  g->values[v].dtype = INGOT_DTYPE_I64;
  g->values[v].data = p;
  return v;
}

static bool infer(ingot_graph_t* g) {
  if (ingot_graph_infer_shapes(g) != INGOT_OK) {
    fprintf(stderr, "infer failed: %s\n", ingot_compiler_error());
    ++g_failures;
    return false;
  }
  return true;
}

/* ---- Reduce* ---- */

typedef enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L1, R_L2, R_LOGSUM, R_LSE, R_SUMSQ } rk_t;
static const ingot_op_t kOps[] = {INGOT_OP_REDUCESUM, INGOT_OP_REDUCEMEAN, INGOT_OP_REDUCEMAX, INGOT_OP_REDUCEMIN,
                                  INGOT_OP_REDUCEPROD, INGOT_OP_REDUCEL1,  INGOT_OP_REDUCEL2,  INGOT_OP_REDUCELOGSUM,
                                  INGOT_OP_REDUCELOGSUMEXP, INGOT_OP_REDUCESUMSQUARE};

static void ref_reduce(rk_t k, const float* x, const int64_t* d, const bool* red, double* out) {
  /* x is [d0, d1, d2]; out is indexed by the kept coordinates (reduced -> 0). */
  int64_t od[3];
  for (int i = 0; i < 3; ++i) od[i] = red[i] ? 1 : d[i];
  int64_t on = od[0] * od[1] * od[2];
  for (int64_t o = 0; o < on; ++o) {
    int64_t oi[3] = {o / (od[1] * od[2]), (o / od[2]) % od[1], o % od[2]};
    double acc = k == R_PROD ? 1 : k == R_MAX ? -INFINITY : k == R_MIN ? INFINITY : 0, mx = -INFINITY;
    int64_t cnt = 0;
    for (int pass = 0; pass < 2; ++pass) {
      for (int64_t a = 0; a < d[0]; ++a)
        for (int64_t b = 0; b < d[1]; ++b)
          for (int64_t c = 0; c < d[2]; ++c) {
            int64_t ii[3] = {a, b, c};
            bool in = true;
            for (int i = 0; i < 3; ++i) in = in && (red[i] || ii[i] == oi[i]);
            if (!in) continue;
            double v = x[(a * d[1] + b) * d[2] + c];
            if (pass == 0) {
              mx = fmax(mx, v);
              continue;
            }
            ++cnt;
            switch (k) {
              case R_MAX: acc = fmax(acc, v); break;
              case R_MIN: acc = fmin(acc, v); break;
              case R_PROD: acc *= v; break;
              case R_L1: acc += fabs(v); break;
              case R_L2: case R_SUMSQ: acc += v * v; break;
              case R_LSE: acc += exp(v - mx); break;
              default: acc += v; break;
            }
          }
    }
    switch (k) {
      case R_MEAN: acc /= (double)cnt; break;
      case R_L2: acc = sqrt(acc); break;
      case R_LOGSUM: acc = log(acc); break;
      case R_LSE: acc = log(acc) + mx; break;
      default: break;
    }
    out[o] = acc;
  }
}

/* axes_mode: 0 attribute, 1 constant input, 2 none (all axes), 3 noop. */
static void run_reduce(rk_t k, int axes_mode, const int64_t* axes, uint32_t naxes, bool keepdims, float scale) {
  ingot_graph_t* g = tg_graph(18);
  int64_t d[3] = {2, 3, 4};
  bool red[3] = {false, false, false};
  if (axes_mode == 2) red[0] = red[1] = red[2] = true;
  for (uint32_t i = 0; i < naxes && axes_mode < 2; ++i) red[axes[i] < 0 ? axes[i] + 3 : axes[i]] = true;
  int64_t yd[3];
  int32_t yr = 0;
  for (int i = 0; i < 3; ++i) {
    if (!red[i]) yd[yr++] = d[i];
    else if (keepdims) yd[yr++] = 1;
  }
  uint32_t x = tg_input(g, "x", 3, d);
  uint32_t y = tg_output(g, "y", yr, yd);
  uint32_t in[2] = {x, INGOT_NO_VALUE};
  uint32_t nin = 1;
  if (axes_mode == 1) {
    int64_t ad[1] = {naxes};
    in[1] = i64_weight(g, "axes", 1, ad, axes);
    nin = 2;
  }
  uint32_t node = tg_node(g, kOps[k], in, nin, &y, 1);
  if (axes_mode == 0) tg_attr_ints(g, node, "axes", axes, naxes);
  if (axes_mode == 3) tg_attr_int(g, node, "noop_with_empty_axes", 1);
  tg_attr_int(g, node, "keepdims", keepdims);
  float** vals = tg_vals(g);
  vals[x] = tg_random(24, 5 + k);
  for (int i = 0; i < 24; ++i) {
    vals[x][i] *= scale;
    if (k == R_LOGSUM || k == R_PROD) vals[x][i] = fabsf(vals[x][i]) + 0.5f;
  }
  double want[24];
  ref_reduce(k, vals[x], d, red, want);
  char what[96];
  snprintf(what, sizeof(what), "reduce kind %d axes_mode %d keep %d", k, axes_mode, keepdims);
  if (infer(g)) {
    CHECK(g->values[y].rank == yr);
    tg_run_and_compare(what, g, vals, y, want);
  } else {
    tg_free_vals(g, NULL, vals);
    ingot_graph_destroy(g);
  }
}

/* ---- ArgMax / ArgMin ---- */

static void run_argmax(bool is_max, int64_t axis, bool keepdims, bool last) {
  ingot_graph_t* g = tg_graph(13);
  int64_t d[3] = {2, 5, 3};
  int64_t a = axis < 0 ? axis + 3 : axis;
  int64_t yd[3];
  int32_t yr = 0;
  for (int i = 0; i < 3; ++i) {
    if (i != a) yd[yr++] = d[i];
    else if (keepdims) yd[yr++] = 1;
  }
  uint32_t x = tg_input(g, "x", 3, d);
  uint32_t y = tg_output(g, "y", yr, yd);
  uint32_t node = tg_node(g, is_max ? INGOT_OP_ARGMAX : INGOT_OP_ARGMIN, &x, 1, &y, 1);
  tg_attr_int(g, node, "axis", axis);
  tg_attr_int(g, node, "keepdims", keepdims);
  tg_attr_int(g, node, "select_last_index", last);
  float** vals = tg_vals(g);
  vals[x] = tg_random(30, 9);
  for (int i = 0; i < 30; ++i) vals[x][i] = roundf(vals[x][i] * 2.0f); /* many ties */
  int64_t* got = calloc(30, sizeof(int64_t));
  vals[y] = (float*)got;
  if (!infer(g)) return;
  CHECK(g->values[y].dtype == INGOT_DTYPE_I64);
  ingot_lowered_t* l = tg_lower(g);
  if (l && tg_execute(g, l, vals)) {
    int64_t outer = 1, len = d[a], inner = 1;
    for (int i = 0; i < 3; ++i) {
      if (i < a) outer *= d[i];
      if (i > a) inner *= d[i];
    }
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        int64_t best = 0;
        for (int64_t j = 1; j < len; ++j) {
          float v = vals[x][(o * len + j) * inner + in], b = vals[x][(o * len + best) * inner + in];
          bool take = is_max ? (last ? v >= b : v > b) : (last ? v <= b : v < b);
          if (take) best = j;
        }
        if (got[o * inner + in] != best) {
          fprintf(stderr, "arg%s axis %lld last %d: row %lld: got %lld want %lld\n", is_max ? "max" : "min",
                  (long long)axis, last, (long long)(o * inner + in), (long long)got[o * inner + in], (long long)best);
          ++g_failures;
        }
      }
  }
  tg_free_vals(g, l, vals);
  ingot_lowered_destroy(l);
  ingot_graph_destroy(g);
}

/* ---- TopK ---- */

static void run_topk(bool largest, int64_t k) {
  ingot_graph_t* g = tg_graph(11);
  int64_t d[2] = {3, 6}, yd[2] = {3, k}, kd[1] = {1};
  uint32_t x = tg_input(g, "x", 2, d);
  uint32_t kw = i64_weight(g, "k", 1, kd, &k);
  uint32_t yv = tg_output(g, "values", 2, yd);
  uint32_t yi = tg_output(g, "indices", 2, yd);
  uint32_t in[2] = {x, kw}, out[2] = {yv, yi};
  uint32_t node = tg_node(g, INGOT_OP_TOPK, in, 2, out, 2);
  tg_attr_int(g, node, "largest", largest);
  float** vals = tg_vals(g);
  static const float kData[18] = {1, 3, 3, 2, 0, 3, -1, -1, -1, -1, -1, -1, 5, 4, 3, 2, 1, 6};
  vals[x] = malloc(sizeof(kData));
  memcpy(vals[x], kData, sizeof(kData));
  int64_t* idx = calloc(18, sizeof(int64_t));
  vals[yi] = (float*)idx;
  if (!infer(g)) return;
  ingot_lowered_t* l = tg_lower(g);
  if (l && tg_execute(g, l, vals)) {
    for (int64_t r = 0; r < 3; ++r) {
      bool used[6] = {false};
      for (int64_t q = 0; q < k; ++q) {
        int64_t best = -1;
        for (int64_t j = 0; j < 6; ++j) {
          if (used[j]) continue;
          float v = kData[r * 6 + j];
          if (best < 0 || (largest ? v > kData[r * 6 + best] : v < kData[r * 6 + best])) best = j;
        }
        used[best] = true;
        if (idx[r * k + q] != best || vals[yv][r * k + q] != kData[r * 6 + best]) {
          fprintf(stderr, "topk largest %d k %lld: row %lld pos %lld: got %lld (%g), want %lld\n", largest,
                  (long long)k, (long long)r, (long long)q, (long long)idx[r * k + q], vals[yv][r * k + q],
                  (long long)best);
          ++g_failures;
        }
      }
    }
  }
  tg_free_vals(g, l, vals);
  ingot_lowered_destroy(l);
  ingot_graph_destroy(g);
}

/* ---- CumSum ---- */

static void run_cumsum(int64_t axis, bool exclusive, bool reverse) {
  ingot_graph_t* g = tg_graph(14);
  int64_t d[2] = {3, 4}, one[1] = {1};
  uint32_t x = tg_input(g, "x", 2, d);
  uint32_t ax = i64_weight(g, "axis", 1, one, &axis);
  uint32_t y = tg_output(g, "y", 2, d);
  uint32_t in[2] = {x, ax};
  uint32_t node = tg_node(g, INGOT_OP_CUMSUM, in, 2, &y, 1);
  tg_attr_int(g, node, "exclusive", exclusive);
  tg_attr_int(g, node, "reverse", reverse);
  float** vals = tg_vals(g);
  vals[x] = tg_random(12, 3);
  int64_t a = axis < 0 ? axis + 2 : axis;
  double want[12];
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      double s = 0;
      for (int64_t t = 0; t < (a == 0 ? 3 : 4); ++t) {
        int64_t pos = a == 0 ? i : j;
        bool take = reverse ? (exclusive ? t > pos : t >= pos) : (exclusive ? t < pos : t <= pos);
        if (take) s += vals[x][a == 0 ? t * 4 + j : i * 4 + t];
      }
      want[i * 4 + j] = s;
    }
  char what[64];
  snprintf(what, sizeof(what), "cumsum axis %lld excl %d rev %d", (long long)axis, exclusive, reverse);
  if (infer(g)) tg_run_and_compare(what, g, vals, y, want);
}

/* ---- LayerNormalization ---- */

static void run_layernorm(void) {
  ingot_graph_t* g = tg_graph(17);
  int64_t d[3] = {2, 3, 4}, sd[2] = {1, 4}, bd[2] = {3, 4}, md[3] = {2, 1, 1};
  uint32_t x = tg_input(g, "x", 3, d);
  uint32_t sc = tg_weight(g, "scale", 2, sd, NULL); /* broadcast over axis 1 */
  uint32_t b = tg_weight(g, "bias", 2, bd, NULL);
  uint32_t y = tg_output(g, "y", 3, d);
  uint32_t mean = tg_output(g, "mean", 3, md);
  uint32_t inv = tg_output(g, "inv", 3, md);
  uint32_t in[3] = {x, sc, b}, out[3] = {y, mean, inv};
  uint32_t node = tg_node(g, INGOT_OP_LAYERNORMALIZATION, in, 3, out, 3);
  tg_attr_int(g, node, "axis", 1);
  tg_attr_float(g, node, "epsilon", 1e-3f);
  float** vals = tg_vals(g);
  vals[x] = tg_random(24, 11);
  const float* s = g->values[sc].data;
  const float* bb = g->values[b].data;
  double want[24], wm[2], wi[2];
  for (int r = 0; r < 2; ++r) {
    double m = 0, v = 0;
    for (int j = 0; j < 12; ++j) m += vals[x][r * 12 + j];
    m /= 12;
    for (int j = 0; j < 12; ++j) v += (vals[x][r * 12 + j] - m) * (vals[x][r * 12 + j] - m);
    double iv = 1.0 / sqrt(v / 12 + 1e-3);
    for (int j = 0; j < 12; ++j) want[r * 12 + j] = (vals[x][r * 12 + j] - m) * iv * s[j % 4] + bb[j];
    wm[r] = m;
    wi[r] = iv;
  }
  if (!infer(g)) return;
  ingot_lowered_t* l = tg_lower(g);
  if (l && tg_execute(g, l, vals)) {
    tg_close("layernorm y", vals[y], want, 24);
    tg_close("layernorm mean", vals[mean], wm, 2);
    tg_close("layernorm inv", vals[inv], wi, 2);
  }
  tg_free_vals(g, l, vals);
  ingot_lowered_destroy(l);
  ingot_graph_destroy(g);
}

/* ---- Einsum ---- */

static void run_einsum_batch_diag(void) {
  /* "...ii->...i" over [2, 3, 3] */
  ingot_graph_t* g = tg_graph(12);
  int64_t d[3] = {2, 3, 3}, yd[2] = {2, 3};
  uint32_t x = tg_input(g, "x", 3, d);
  uint32_t y = tg_output(g, "y", 2, yd);
  uint32_t node = tg_node(g, INGOT_OP_EINSUM, &x, 1, &y, 1);
  tg_attr_string(g, node, "equation", "...ii ->...i");
  float** vals = tg_vals(g);
  vals[x] = tg_random(18, 2);
  double want[6];
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 3; ++i) want[b * 3 + i] = vals[x][b * 9 + i * 3 + i];
  if (infer(g)) tg_run_and_compare("einsum ...ii->...i", g, vals, y, want);
}

static void run_einsum_matmul(void) {
  /* implicit output: "bij,bjk" -> "bik"; broadcast batch via '...' on one side */
  ingot_graph_t* g = tg_graph(12);
  int64_t ad[3] = {2, 3, 4}, bd[2] = {4, 5}, yd[3] = {2, 3, 5};
  uint32_t a = tg_input(g, "a", 3, ad);
  uint32_t b = tg_input(g, "b", 2, bd);
  uint32_t y = tg_output(g, "y", 3, yd);
  uint32_t in[2] = {a, b};
  uint32_t node = tg_node(g, INGOT_OP_EINSUM, in, 2, &y, 1);
  tg_attr_string(g, node, "equation", "...ij,jk");
  float** vals = tg_vals(g);
  vals[a] = tg_random(24, 3);
  vals[b] = tg_random(20, 4);
  double want[30];
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 5; ++k) {
        double s = 0;
        for (int j = 0; j < 4; ++j) s += vals[a][(n * 3 + i) * 4 + j] * vals[b][j * 5 + k];
        want[(n * 3 + i) * 5 + k] = s;
      }
  if (infer(g)) {
    CHECK(g->values[y].rank == 3 && g->values[y].dims[2] == 5);
    tg_run_and_compare("einsum ...ij,jk", g, vals, y, want);
  }
}

/* ---- ConvTranspose ---- */

static void run_convtranspose(int64_t group, int64_t stride, int64_t dil, int64_t pad_b, int64_t pad_e, int64_t outpad) {
  ingot_graph_t* g = tg_graph(11);
  int64_t n = 1, c = 4, h = 3, w = 4, mg = 2, k = 3;
  int64_t xd[4] = {n, c, h, w}, wd[4] = {c, mg, k, k}, bd[1] = {mg * group};
  int64_t oh = stride * (h - 1) + outpad + (k - 1) * dil + 1 - pad_b - pad_e;
  int64_t ow = stride * (w - 1) + outpad + (k - 1) * dil + 1 - pad_b - pad_e;
  int64_t yd[4] = {n, mg * group, oh, ow};
  uint32_t x = tg_input(g, "x", 4, xd);
  uint32_t wt = tg_weight(g, "w", 4, wd, NULL);
  uint32_t b = tg_weight(g, "b", 1, bd, NULL);
  uint32_t y = tg_output(g, "y", 4, yd);
  uint32_t in[3] = {x, wt, b};
  uint32_t node = tg_node(g, INGOT_OP_CONVTRANSPOSE, in, 3, &y, 1);
  int64_t s2[2] = {stride, stride}, d2[2] = {dil, dil}, p4[4] = {pad_b, pad_b, pad_e, pad_e}, op2[2] = {outpad, outpad};
  tg_attr_int(g, node, "group", group);
  tg_attr_ints(g, node, "strides", s2, 2);
  tg_attr_ints(g, node, "dilations", d2, 2);
  tg_attr_ints(g, node, "pads", p4, 4);
  tg_attr_ints(g, node, "output_padding", op2, 2);
  float** vals = tg_vals(g);
  vals[x] = tg_random(n * c * h * w, 13);
  const float* W = g->values[wt].data;
  const float* B = g->values[b].data;
  int64_t M = mg * group, cg = c / group;
  double* want = calloc((size_t)(M * oh * ow), sizeof(double));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t i = 0; i < oh * ow; ++i) want[m * oh * ow + i] = B[m];
  for (int64_t ci = 0; ci < c; ++ci)
    for (int64_t ih = 0; ih < h; ++ih)
      for (int64_t iw = 0; iw < w; ++iw)
        for (int64_t mm = 0; mm < mg; ++mm)
          for (int64_t kh = 0; kh < k; ++kh)
            for (int64_t kw = 0; kw < k; ++kw) {
              int64_t o1 = ih * stride - pad_b + kh * dil, o2 = iw * stride - pad_b + kw * dil;
              if (o1 < 0 || o1 >= oh || o2 < 0 || o2 >= ow) continue;
              int64_t m = (ci / cg) * mg + mm;
              want[(m * oh + o1) * ow + o2] +=
                  (double)vals[x][(ci * h + ih) * w + iw] * W[((ci * mg + mm) * k + kh) * k + kw];
            }
  char what[96];
  snprintf(what, sizeof(what), "convtranspose g%lld s%lld d%lld p%lld,%lld op%lld", (long long)group,
           (long long)stride, (long long)dil, (long long)pad_b, (long long)pad_e, (long long)outpad);
  if (infer(g)) {
    CHECK(g->values[y].dims[2] == oh && g->values[y].dims[3] == ow);
    tg_run_and_compare(what, g, vals, y, want);
  }
  free(want);
}

/* ---- LSTM / GRU ---- */

static double sigm(double v) { return 1.0 / (1.0 + exp(-v)); }
static double clipv(double v, double c) { return c > 0 ? fmin(fmax(v, -c), c) : v; }

typedef struct rnn_case_t {
  ingot_op_t op;
  int64_t T, B, I, H;
  int dirs;          /* 1 or 2 */
  bool reverse;      /* with dirs == 1 */
  bool layout1;
  bool init_states;
  bool peep;
  double clip;
  bool lbr;
  const int32_t* lens; /* sequence_lens given at run time (NULL: none) */
} rnn_case_t;

static void run_rnn(const rnn_case_t* rc) {
  ingot_graph_t* g = tg_graph(14);
  int64_t G = rc->op == INGOT_OP_LSTM ? 4 : 3, T = rc->T, B = rc->B, I = rc->I, H = rc->H, D = rc->dirs;
  int64_t xd[3] = {rc->layout1 ? B : T, rc->layout1 ? T : B, I};
  int64_t wd[3] = {D, G * H, I}, rd[3] = {D, G * H, H}, bd[2] = {D, 2 * G * H}, pd[2] = {D, 3 * H};
  int64_t sd[3] = {rc->layout1 ? B : D, rc->layout1 ? D : B, H};
  uint32_t x = tg_input(g, "x", 3, xd);
  uint32_t w = tg_weight(g, "w", 3, wd, NULL);
  uint32_t r = tg_weight(g, "r", 3, rd, NULL);
  uint32_t b = tg_weight(g, "b", 2, bd, NULL);
  uint32_t h0 = rc->init_states ? tg_input(g, "h0", 3, sd) : INGOT_NO_VALUE;
  uint32_t c0 = rc->init_states && rc->op == INGOT_OP_LSTM ? tg_input(g, "c0", 3, sd) : INGOT_NO_VALUE;
  uint32_t p = rc->peep ? tg_weight(g, "p", 2, pd, NULL) : INGOT_NO_VALUE;
  uint32_t yh = tg_output(g, "y_h", 3, sd);
  uint32_t lens = INGOT_NO_VALUE;
  if (rc->lens) {
    int64_t ld[1] = {B};
    lens = tg_input(g, "lens", 1, ld);
    g->values[lens].dtype = INGOT_DTYPE_I32;
  }
  uint32_t in[8] = {x, w, r, b, lens, h0, c0, p};
  int64_t yd[4] = {rc->layout1 ? B : T, rc->layout1 ? T : D, rc->layout1 ? D : B, H};
  uint32_t yall = tg_inter(g, "y_all", 4, yd); /* an output nobody reads; LSTM's Y_c left out */
  uint32_t out[2] = {yall, yh};
  uint32_t node = tg_node(g, rc->op, in, rc->op == INGOT_OP_LSTM ? 8 : 6, out, 2);
  tg_attr_int(g, node, "hidden_size", H);
  if (D == 2) tg_attr_string(g, node, "direction", "bidirectional");
  if (rc->reverse) tg_attr_string(g, node, "direction", "reverse");
  if (rc->layout1) tg_attr_int(g, node, "layout", 1);
  if (rc->clip > 0) tg_attr_float(g, node, "clip", (float)rc->clip);
  if (rc->lbr) tg_attr_int(g, node, "linear_before_reset", 1);
  float** vals = tg_vals(g);
  vals[x] = tg_random(T * B * I, 21);
  if (h0 != INGOT_NO_VALUE) vals[h0] = tg_random(D * B * H, 22);
  if (c0 != INGOT_NO_VALUE) vals[c0] = tg_random(D * B * H, 23);
  if (lens != INGOT_NO_VALUE) {
    vals[lens] = malloc(sizeof(int32_t) * (size_t)B);
    memcpy(vals[lens], rc->lens, sizeof(int32_t) * (size_t)B);
  }
  const float* W = g->values[w].data;
  const float* R = g->values[r].data;
  const float* Bi = g->values[b].data;
  const float* P = rc->peep ? g->values[p].data : NULL;
  double want[64];
  for (int64_t d = 0; d < D; ++d)
    for (int64_t bb = 0; bb < B; ++bb) {
      double h[16], c[16], hn[16], cn[16];
      for (int64_t j = 0; j < H; ++j) {
        int64_t si = rc->layout1 ? (bb * D + d) * H + j : (d * B + bb) * H + j;
        h[j] = h0 != INGOT_NO_VALUE ? vals[h0][si] : 0;
        c[j] = c0 != INGOT_NO_VALUE ? vals[c0][si] : 0;
      }
      bool rev = rc->reverse || d == 1;
      int64_t L = rc->lens ? rc->lens[bb] : T;
      for (int64_t s = 0; s < L; ++s) {
        int64_t t = rev ? L - 1 - s : s;
        const float* xt = vals[x] + (rc->layout1 ? (bb * T + t) * I : (t * B + bb) * I);
        double rh[16];
        for (int64_t j = 0; j < H; ++j) {
          double gate[4][2];
          for (int64_t q = 0; q < G; ++q) {
            double gx = Bi[d * 2 * G * H + q * H + j], gh = Bi[d * 2 * G * H + (G + q) * H + j];
            for (int64_t k = 0; k < I; ++k) gx += xt[k] * W[(d * G * H + q * H + j) * I + k];
            for (int64_t k = 0; k < H; ++k) gh += h[k] * R[(d * G * H + q * H + j) * H + k];
            gate[q][0] = gx;
            gate[q][1] = gh;
          }
          if (rc->op == INGOT_OP_LSTM) {
            const float* pp = P ? P + d * 3 * H : NULL;
            double ig = sigm(clipv(gate[0][0] + gate[0][1] + (pp ? pp[j] * c[j] : 0), rc->clip));
            double fg = sigm(clipv(gate[2][0] + gate[2][1] + (pp ? pp[2 * H + j] * c[j] : 0), rc->clip));
            double cg = tanh(clipv(gate[3][0] + gate[3][1], rc->clip));
            cn[j] = fg * c[j] + ig * cg;
            double og = sigm(clipv(gate[1][0] + gate[1][1] + (pp ? pp[H + j] * cn[j] : 0), rc->clip));
            hn[j] = og * tanh(cn[j]);
          } else {
            double z = sigm(gate[0][0] + gate[0][1]);
            double rg = sigm(gate[1][0] + gate[1][1]);
            rh[j] = rg;
            double pre;
            if (rc->lbr) {
              pre = gate[2][0] + rg * gate[2][1];
            } else {
              /* R_h · (r ⊙ h): needs every r first; computed below */
              pre = NAN;
            }
            hn[j] = pre; /* finished below for lbr = 0 */
            cn[j] = z;
          }
        }
        if (rc->op == INGOT_OP_GRU) {
          for (int64_t j = 0; j < H; ++j) {
            double pre = hn[j];
            if (!rc->lbr) {
              pre = Bi[d * 2 * G * H + 2 * H + j] + Bi[d * 2 * G * H + (G + 2) * H + j];
              for (int64_t k = 0; k < I; ++k) pre += xt[k] * W[(d * G * H + 2 * H + j) * I + k];
              for (int64_t k = 0; k < H; ++k) pre += rh[k] * h[k] * R[(d * G * H + 2 * H + j) * H + k];
            }
            double z = cn[j];
            hn[j] = (1 - z) * tanh(pre) + z * h[j];
          }
          for (int64_t j = 0; j < H; ++j) cn[j] = c[j];
        }
        memcpy(h, hn, sizeof(double) * (size_t)H);
        memcpy(c, cn, sizeof(double) * (size_t)H);
      }
      for (int64_t j = 0; j < H; ++j) want[rc->layout1 ? (bb * D + d) * H + j : (d * B + bb) * H + j] = h[j];
    }
  char what[128];
  snprintf(what, sizeof(what), "%s dirs%d rev%d layout%d init%d peep%d clip%g lbr%d lens%d",
           rc->op == INGOT_OP_LSTM ? "lstm" : "gru", rc->dirs, rc->reverse, rc->layout1, rc->init_states, rc->peep,
           rc->clip, rc->lbr, rc->lens != NULL);
  if (infer(g)) {
    const ingot_node_t* n = &g->nodes[node];
    CHECK(n->outputs[0] != INGOT_NO_VALUE); /* Y was added */
    if (rc->op == INGOT_OP_LSTM) CHECK(n->output_count == 3 && n->outputs[2] != INGOT_NO_VALUE);
    tg_run_and_compare(what, g, vals, yh, want);
  }
}

/* Infers and lowers a graph; tg_lower checks the stage contract and the IR. */
static void contract_only(const char* what, ingot_graph_t* g) {
  if (infer(g)) {
    ingot_lowered_t* l = tg_lower(g);
    if (!l) fprintf(stderr, "%s: lowering failed\n", what);
    ingot_lowered_destroy(l);
  }
  ingot_graph_destroy(g);
}

static void run_contracts(void) {
  { /* Attention 4-D, past, mask, causal, all four outputs */
    ingot_graph_t* g = tg_graph(23);
    int64_t qd[4] = {2, 4, 3, 8}, kd[4] = {2, 2, 5, 8}, pd[4] = {2, 2, 4, 8}, md[2] = {3, 9};
    int64_t yd[4] = {2, 4, 3, 8}, prd[4] = {2, 2, 9, 8}, qkd[4] = {2, 4, 3, 9};
    uint32_t in[6] = {tg_input(g, "q", 4, qd), tg_input(g, "k", 4, kd), tg_input(g, "v", 4, kd), tg_input(g, "mask", 2, md),
                      tg_input(g, "pk", 4, pd), tg_input(g, "pv", 4, pd)};
    uint32_t out[4] = {tg_output(g, "y", 4, yd), tg_output(g, "pres_k", 4, prd), tg_output(g, "pres_v", 4, prd),
                       tg_output(g, "qk", 4, qkd)};
    uint32_t n = tg_node(g, INGOT_OP_ATTENTION, in, 6, out, 4);
    tg_attr_int(g, n, "is_causal", 1);
    tg_attr_int(g, n, "qk_matmul_output_mode", 3);
    tg_attr_float(g, n, "softcap", 2.0f);
    contract_only("attention", g);
  }
  { /* RotaryEmbedding 3-D with position ids, partial rotary dim */
    ingot_graph_t* g = tg_graph(23);
    int64_t xd[3] = {2, 3, 16}, cd[2] = {10, 2}, pd[2] = {2, 3};
    uint32_t pos = i64_weight(g, "pos", 2, pd, (const int64_t[]){0, 1, 2, 3, 4, 5});
    uint32_t in[4] = {tg_input(g, "x", 3, xd), tg_weight(g, "cos", 2, cd, NULL), tg_weight(g, "sin", 2, cd, NULL), pos};
    uint32_t y = tg_output(g, "y", 3, xd);
    uint32_t n = tg_node(g, INGOT_OP_ROTARYEMBEDDING, in, 4, &y, 1);
    tg_attr_int(g, n, "num_heads", 4);
    tg_attr_int(g, n, "rotary_embedding_dim", 4);
    tg_attr_int(g, n, "interleaved", 1);
    contract_only("rotary", g);
  }
  { /* CausalConvWithState with past state and SiLU */
    ingot_graph_t* g = tg_graph(27);
    int64_t xd[3] = {2, 4, 6}, wd[3] = {4, 1, 3}, sd[3] = {2, 4, 2}, bd[1] = {4};
    uint32_t in[4] = {tg_input(g, "x", 3, xd), tg_weight(g, "w", 3, wd, NULL), tg_weight(g, "b", 1, bd, NULL),
                      tg_input(g, "past", 3, sd)};
    uint32_t out[2] = {tg_output(g, "y", 3, xd), tg_output(g, "present", 3, sd)};
    uint32_t n = tg_node(g, INGOT_OP_CAUSALCONVWITHSTATE, in, 4, out, 2);
    tg_attr_string(g, n, "activation", "silu");
    contract_only("causalconv", g);
  }
  { /* LinearAttention gated delta, GQA, present_state left out */
    ingot_graph_t* g = tg_graph(27);
    int64_t qd[3] = {2, 3, 16}, kd[3] = {2, 3, 8}, dd[3] = {2, 3, 8}, bd[3] = {2, 3, 1}, yd[3] = {2, 3, 16};
    uint32_t in[6] = {tg_input(g, "q", 3, qd), tg_input(g, "k", 3, kd), tg_input(g, "v", 3, kd), INGOT_NO_VALUE,
                      tg_input(g, "decay", 3, dd), tg_input(g, "beta", 3, bd)};
    uint32_t y = tg_output(g, "y", 3, yd);
    uint32_t n = tg_node(g, INGOT_OP_LINEARATTENTION, in, 6, &y, 1);
    tg_attr_int(g, n, "q_num_heads", 4);
    tg_attr_int(g, n, "kv_num_heads", 2);
    contract_only("linearattention", g);
  }
  { /* DeformConv with mask, bias, two offset groups */
    ingot_graph_t* g = tg_graph(22);
    int64_t xd[4] = {1, 4, 5, 5}, wd[4] = {2, 4, 2, 2}, od[4] = {1, 16, 4, 4}, md[4] = {1, 8, 4, 4}, bd[1] = {2}, yd[4] = {1, 2, 4, 4};
    uint32_t in[5] = {tg_input(g, "x", 4, xd), tg_weight(g, "w", 4, wd, NULL), tg_input(g, "offset", 4, od),
                      tg_weight(g, "b", 1, bd, NULL), tg_input(g, "mask", 4, md)};
    uint32_t y = tg_output(g, "y", 4, yd);
    uint32_t n = tg_node(g, INGOT_OP_DEFORMCONV, in, 5, &y, 1);
    tg_attr_int(g, n, "offset_group", 2);
    contract_only("deformconv", g);
  }
  { /* DFT inverse onesided (irfft) along axis 1 */
    ingot_graph_t* g = tg_graph(19);
    int64_t xd[3] = {2, 5, 2}, yd[3] = {2, 8, 1};
    uint32_t x = tg_input(g, "x", 3, xd);
    uint32_t y = tg_output(g, "y", 3, yd);
    uint32_t n = tg_node(g, INGOT_OP_DFT, &x, 1, &y, 1);
    tg_attr_int(g, n, "axis", 1);
    tg_attr_int(g, n, "inverse", 1);
    tg_attr_int(g, n, "onesided", 1);
    contract_only("dft", g);
  }
  { /* SoftmaxCrossEntropyLoss with weights, ignore_index and log_prob; GroupNormalization; LpNormalization */
    ingot_graph_t* g = tg_graph(13);
    int64_t xd[3] = {3, 5, 2}, td[2] = {3, 2}, wd[1] = {5}, none[1] = {0};
    uint32_t t = i64_weight(g, "t", 2, td, (const int64_t[]){0, 1, 2, 3, 4, 2});
    uint32_t in[3] = {tg_input(g, "x", 3, xd), t, tg_weight(g, "w", 1, wd, NULL)};
    uint32_t out[2] = {tg_output(g, "loss", 0, none), tg_output(g, "log_prob", 3, xd)};
    uint32_t n = tg_node(g, INGOT_OP_SOFTMAXCROSSENTROPYLOSS, in, 3, out, 2);
    tg_attr_int(g, n, "ignore_index", 2);
    contract_only("sce", g);
  }
  {
    ingot_graph_t* g = tg_graph(21);
    int64_t xd[4] = {2, 6, 3, 3}, cd[1] = {6};
    uint32_t in[3] = {tg_input(g, "x", 4, xd), tg_weight(g, "s", 1, cd, NULL), tg_weight(g, "b", 1, cd, NULL)};
    uint32_t y = tg_output(g, "y", 4, xd);
    uint32_t n = tg_node(g, INGOT_OP_GROUPNORMALIZATION, in, 3, &y, 1);
    tg_attr_int(g, n, "num_groups", 3);
    contract_only("groupnorm", g);
  }
  {
    ingot_graph_t* g = tg_graph(22);
    int64_t xd[3] = {2, 3, 4};
    uint32_t x = tg_input(g, "x", 3, xd);
    uint32_t y = tg_output(g, "y", 3, xd);
    uint32_t n = tg_node(g, INGOT_OP_LPNORMALIZATION, &x, 1, &y, 1);
    tg_attr_int(g, n, "axis", 1);
    tg_attr_int(g, n, "p", 1);
    contract_only("lpnorm", g);
  }
}

int main(void) {
  run_contracts();
  static const int64_t a1[1] = {1}, a2[2] = {-1, 0};
  for (int k = R_SUM; k <= R_SUMSQ; ++k) {
    run_reduce((rk_t)k, 0, a1, 1, true, 1.0f);
    run_reduce((rk_t)k, 1, a2, 2, false, 1.0f);
    run_reduce((rk_t)k, 2, NULL, 0, false, 1.0f);
    run_reduce((rk_t)k, 3, NULL, 0, true, 1.0f);
  }
  run_reduce(R_LSE, 1, a1, 1, true, 500.0f); /* exp(500) overflows without the max */
  for (int m = 0; m < 2; ++m) {
    run_argmax(m, 1, true, false);
    run_argmax(m, 1, true, true);
    run_argmax(m, -1, false, false);
    run_argmax(m, 0, false, true);
  }
  run_topk(true, 3);
  run_topk(false, 4);
  run_topk(true, 6);
  for (int e = 0; e < 2; ++e)
    for (int r = 0; r < 2; ++r) {
      run_cumsum(1, e, r);
      run_cumsum(-2, e, r);
    }
  run_layernorm();
  run_einsum_batch_diag();
  run_einsum_matmul();
  run_convtranspose(1, 1, 1, 0, 0, 0);
  run_convtranspose(2, 2, 1, 1, 0, 1);
  run_convtranspose(1, 3, 2, 2, 1, 0);
  run_convtranspose(4, 2, 1, 0, 1, 1);
  static const int32_t kLens[3] = {2, 4, 0};
  static const rnn_case_t kCases[] = {
      {INGOT_OP_LSTM, 4, 2, 3, 5, 1, false, false, false, false, 0, false, NULL},
      {INGOT_OP_LSTM, 3, 2, 3, 4, 2, false, true, true, true, 0, false, NULL},
      {INGOT_OP_LSTM, 3, 1, 2, 3, 1, true, false, true, false, 0.5, false, NULL},
      {INGOT_OP_LSTM, 4, 3, 2, 3, 2, false, false, true, true, 0, false, kLens},
      {INGOT_OP_GRU, 4, 2, 3, 5, 1, false, false, false, false, 0, false, NULL},
      {INGOT_OP_GRU, 3, 2, 3, 4, 2, false, true, true, false, 0, true, NULL},
      {INGOT_OP_GRU, 3, 2, 2, 3, 2, false, false, true, false, 0, false, NULL},
      {INGOT_OP_GRU, 4, 3, 2, 3, 2, false, true, false, false, 0, false, kLens},
  };
  for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); ++i) run_rnn(&kCases[i]);
  if (g_failures) {
    fprintf(stderr, "%d failure(s)\n", g_failures);
    return 1;
  }
  printf("test_reduce: ok\n");
  return 0;
}
