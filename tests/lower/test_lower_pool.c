/* Lowering of MaxPool / AveragePool (pads, strides, dilations, ceil_mode,
 * count_include_pad) and GlobalAveragePool. The reference follows onnxruntime
 * (checked against it with the same cases): the divisor counts taps inside
 * the input, or inside the padded input with count_include_pad; with
 * ceil_mode a last window that would start in the end padding is dropped. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower_test_util.h"

typedef struct pool_case_t {
  bool is_max;
  int nsp; /* 1 or 2 (3 below, separately) */
  int64_t n, c, in[2], k[2], s[2], d[2], p[4];
  bool ceil_mode, include_pad;
  bool onnx_out; /* use ONNX's (uncorrected) ceil output size */
} pool_case_t;

static int64_t pool_out(const pool_case_t* t, int i) {
  int64_t span = (t->k[i] - 1) * t->d[i] + 1;
  int64_t total = t->in[i] + t->p[i] + t->p[t->nsp + i] - span;
  int64_t o = (total + (t->ceil_mode ? t->s[i] - 1 : 0)) / t->s[i] + 1;
  if (t->ceil_mode && !t->onnx_out && (o - 1) * t->s[i] >= t->in[i] + t->p[i]) --o;
  return o;
}

static void run_pool(const pool_case_t* t) {
  ingot_graph_t* g = tg_graph(19);
  int nsp = t->nsp;
  int64_t xd[4] = {t->n, t->c}, yd[4] = {t->n, t->c};
  int64_t I[2] = {1, 1}, K[2] = {1, 1}, S[2] = {1, 1}, D[2] = {1, 1}, PB[2] = {0, 0}, PE[2] = {0, 0}, O[2] = {1, 1};
  for (int i = 0; i < nsp; ++i) {
    xd[2 + i] = t->in[i];
    yd[2 + i] = pool_out(t, i);
    int j = 2 - nsp + i;
    I[j] = t->in[i];
    K[j] = t->k[i];
    S[j] = t->s[i];
    D[j] = t->d[i];
    PB[j] = t->p[i];
    PE[j] = t->p[nsp + i];
    O[j] = yd[2 + i];
  }
  uint32_t x = tg_input(g, "x", 2 + nsp, xd);
  uint32_t y = tg_output(g, "y", 2 + nsp, yd);
  uint32_t node = tg_node(g, t->is_max ? INGOT_OP_MAXPOOL : INGOT_OP_AVERAGEPOOL, &x, 1, &y, 1);
  tg_attr_ints(g, node, "kernel_shape", t->k, (uint32_t)nsp);
  tg_attr_ints(g, node, "strides", t->s, (uint32_t)nsp);
  tg_attr_ints(g, node, "dilations", t->d, (uint32_t)nsp);
  tg_attr_ints(g, node, "pads", t->p, (uint32_t)(2 * nsp));
  if (t->ceil_mode) tg_attr_int(g, node, "ceil_mode", 1);
  if (t->include_pad) tg_attr_int(g, node, "count_include_pad", 1);
  float** vals = tg_vals(g);
  vals[x] = tg_random(tg_numel(g, x), 5);
  int64_t ny = tg_numel(g, y);
  double* want = malloc(sizeof(double) * (size_t)ny);
  int64_t o = 0;
  for (int64_t nc = 0; nc < t->n * t->c; ++nc)
    for (int64_t o0 = 0; o0 < O[0]; ++o0)
      for (int64_t o1 = 0; o1 < O[1]; ++o1) {
        double acc = t->is_max ? -INFINITY : 0.0;
        int64_t count = 0;
        for (int64_t r0 = 0; r0 < K[0]; ++r0)
          for (int64_t r1 = 0; r1 < K[1]; ++r1) {
            int64_t p0 = o0 * S[0] - PB[0] + r0 * D[0], p1 = o1 * S[1] - PB[1] + r1 * D[1];
            bool valid = p0 >= 0 && p0 < I[0] && p1 >= 0 && p1 < I[1];
            bool in_pad = p0 >= -PB[0] && p0 < I[0] + PE[0] && p1 >= -PB[1] && p1 < I[1] + PE[1];
            if (valid || (t->include_pad && in_pad)) ++count;
            if (!valid) continue;
            double v = vals[x][(nc * I[0] + p0) * I[1] + p1];
            acc = t->is_max ? (v > acc ? v : acc) : acc + v;
          }
        want[o++] = t->is_max ? acc : acc / (double)(count ? count : 1);
      }
  char what[80];
  snprintf(what, sizeof(what), "%s %dd ceil%d pad%d", t->is_max ? "maxpool" : "avgpool", nsp, t->ceil_mode,
           t->include_pad);
  tg_run_and_compare(what, g, vals, y, want);
  free(want);
}

static void test_maxpool3d(void) {
  ingot_graph_t* g = tg_graph(19);
  int64_t xd[5] = {1, 2, 3, 4, 5}, yd[5] = {1, 2, 2, 2, 3};
  int64_t k[3] = {2, 2, 2}, s[3] = {2, 2, 2}, p[6] = {1, 0, 1, 0, 0, 0};
  uint32_t x = tg_input(g, "x", 5, xd);
  uint32_t y = tg_output(g, "y", 5, yd);
  uint32_t node = tg_node(g, INGOT_OP_MAXPOOL, &x, 1, &y, 1);
  tg_attr_ints(g, node, "kernel_shape", k, 3);
  tg_attr_ints(g, node, "strides", s, 3);
  tg_attr_ints(g, node, "pads", p, 6);
  float** vals = tg_vals(g);
  vals[x] = tg_random(120, 8);
  double want[24];
  int64_t o = 0;
  for (int c = 0; c < 2; ++c)
    for (int od = 0; od < 2; ++od)
      for (int oh = 0; oh < 2; ++oh)
        for (int ow = 0; ow < 3; ++ow) {
          double m = -INFINITY;
          for (int a = 0; a < 2; ++a)
            for (int b = 0; b < 2; ++b)
              for (int e = 0; e < 2; ++e) {
                int pd = od * 2 - 1 + a, ph = oh * 2 + b, pw = ow * 2 - 1 + e;
                if (pd < 0 || pd >= 3 || ph < 0 || ph >= 4 || pw < 0 || pw >= 5) continue;
                double v = vals[x][((c * 3 + pd) * 4 + ph) * 5 + pw];
                if (v > m) m = v;
              }
          want[o++] = m;
        }
  tg_run_and_compare("maxpool 3d", g, vals, y, want);
}

static void test_global(int32_t rank, const int64_t* xd) {
  ingot_graph_t* g = tg_graph(19);
  int64_t yd[5] = {xd[0], xd[1], 1, 1, 1};
  uint32_t x = tg_input(g, "x", rank, xd);
  uint32_t y = tg_output(g, "y", rank, yd);
  uint32_t node = tg_node(g, INGOT_OP_GLOBALAVERAGEPOOL, &x, 1, &y, 1);
  g->nodes[node].epilogue.activation = INGOT_ACTIVATION_RELU;
  float** vals = tg_vals(g);
  int64_t nx = tg_numel(g, x), inner = nx / (xd[0] * xd[1]);
  vals[x] = tg_random(nx, 13);
  double want[64];
  for (int64_t i = 0; i < xd[0] * xd[1]; ++i) {
    double s = 0;
    for (int64_t j = 0; j < inner; ++j) s += vals[x][i * inner + j];
    s /= (double)inner;
    want[i] = s > 0 ? s : 0;
  }
  tg_run_and_compare("globalaveragepool", g, vals, y, want);
}

int main(void) {
  static const pool_case_t cases[] = {
      /* max, nsp, n, c, in, k, s, d, pads, ceil, include_pad, onnx_out */
      {true, 2, 1, 2, {5, 7}, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}, true, false, false},
      {true, 2, 2, 3, {7, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, false, false, false},
      {true, 2, 1, 2, {8, 9}, {2, 3}, {2, 1}, {2, 2}, {1, 0, 0, 2}, true, false, false},
      {false, 2, 1, 2, {7, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, false, false, false},
      {false, 2, 1, 2, {7, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, false, true, false},
      {false, 2, 1, 2, {6, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 0, 1, 1}, true, true, false},
      {false, 2, 1, 2, {6, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 0, 1, 1}, true, false, false},
      {false, 2, 1, 2, {5, 6}, {2, 2}, {2, 3}, {1, 1}, {0, 0, 0, 0}, true, true, false},
      {false, 2, 1, 2, {5, 6}, {2, 2}, {2, 3}, {1, 1}, {0, 0, 0, 0}, true, true, true},
      {false, 2, 1, 3, {6, 7}, {2, 3}, {1, 2}, {2, 1}, {1, 2, 0, 1}, false, true, false},
      {false, 1, 2, 2, {11}, {3}, {2}, {1}, {1, 1}, true, false, false},
      {true, 1, 1, 3, {10}, {4}, {3}, {1}, {2, 0}, false, false, false},
      {false, 2, 1, 1, {4, 4}, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}, false, false, false},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) run_pool(&cases[i]);
  test_maxpool3d();
  int64_t g4[4] = {2, 3, 5, 7}, g5[5] = {1, 2, 3, 4, 5}, g3[3] = {2, 2, 9};
  test_global(4, g4);
  test_global(5, g5);
  test_global(3, g3);
  if (g_failures) {
    fprintf(stderr, "%d failure(s)\n", g_failures);
    return 1;
  }
  printf("lower pool: ok\n");
  return 0;
}
