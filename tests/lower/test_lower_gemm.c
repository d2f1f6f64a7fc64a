/* Lowering of Gemm (transA/transB, alpha/beta, C broadcasting, activation) and
 * MatMul (batch broadcasting, 1-D operands). Reference: naive loops. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower_test_util.h"

typedef struct gemm_case_t {
  int64_t m, n, k;
  bool ta, tb;
  float alpha, beta;
  int c_rank; /* -1: no C */
  int64_t c_dims[2];
  ingot_activation_t act;
} gemm_case_t;

static void run_gemm(const gemm_case_t* t) {
  ingot_graph_t* g = tg_graph(13);
  int64_t ad[2] = {t->ta ? t->k : t->m, t->ta ? t->m : t->k};
  int64_t bd[2] = {t->tb ? t->n : t->k, t->tb ? t->k : t->n};
  int64_t yd[2] = {t->m, t->n};
  uint32_t a = tg_input(g, "a", 2, ad);
  uint32_t b = tg_weight(g, "b", 2, bd, NULL);
  uint32_t c = t->c_rank >= 0 ? tg_weight(g, "c", t->c_rank, t->c_dims, NULL) : INGOT_NO_VALUE;
  uint32_t y = tg_output(g, "y", 2, yd);
  uint32_t in[3] = {a, b, c};
  uint32_t node = tg_node(g, INGOT_OP_GEMM, in, t->c_rank >= 0 ? 3 : 2, &y, 1);
  if (t->ta) tg_attr_int(g, node, "transA", 1);
  if (t->tb) tg_attr_int(g, node, "transB", 1);
  if (t->alpha != 1.0f) tg_attr_float(g, node, "alpha", t->alpha);
  if (t->beta != 1.0f) tg_attr_float(g, node, "beta", t->beta);
  g->nodes[node].epilogue.activation = t->act;
  float** vals = tg_vals(g);
  vals[a] = tg_random(tg_numel(g, a), 31);
  const float* A = vals[a];
  const float* B = g->values[b].data;
  const float* C = c != INGOT_NO_VALUE ? g->values[c].data : NULL;
  double* want = malloc(sizeof(double) * (size_t)(t->m * t->n));
  for (int64_t i = 0; i < t->m; ++i)
    for (int64_t j = 0; j < t->n; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < t->k; ++k) {
        double av = t->ta ? A[k * t->m + i] : A[i * t->k + k];
        double bv = t->tb ? B[j * t->k + k] : B[k * t->n + j];
        acc += av * bv;
      }
      acc *= t->alpha;
      if (C) {
        int64_t ci = 0;
        if (t->c_rank == 1) ci = t->c_dims[0] == 1 ? 0 : j;
        if (t->c_rank == 2) ci = (t->c_dims[0] == 1 ? 0 : i) * t->c_dims[1] + (t->c_dims[1] == 1 ? 0 : j);
        acc += t->beta * C[ci];
      }
      if (t->act == INGOT_ACTIVATION_RELU && acc < 0) acc = 0;
      want[i * t->n + j] = acc;
    }
  char what[64];
  snprintf(what, sizeof(what), "gemm m%lld n%lld k%lld ta%d tb%d c%d", (long long)t->m, (long long)t->n,
           (long long)t->k, t->ta, t->tb, t->c_rank);
  tg_run_and_compare(what, g, vals, y, want);
  free(want);
}

/* MatMul with shapes a, b -> y; reference by numpy rules. */
static void run_matmul(int32_t ra, const int64_t* da, int32_t rb, const int64_t* db, int32_t ry, const int64_t* dy) {
  ingot_graph_t* g = tg_graph(13);
  uint32_t a = tg_input(g, "a", ra, da);
  uint32_t b = tg_input(g, "b", rb, db);
  uint32_t y = tg_output(g, "y", ry, dy);
  uint32_t in[2] = {a, b};
  tg_node(g, INGOT_OP_MATMUL, in, 2, &y, 1);
  float** vals = tg_vals(g);
  vals[a] = tg_random(tg_numel(g, a), 41);
  vals[b] = tg_random(tg_numel(g, b), 42);
  /* promote to >= 2-D with batch dims padded to 4 */
  int64_t A4[6] = {1, 1, 1, 1, 1, 1}, B4[6] = {1, 1, 1, 1, 1, 1};
  if (ra == 1) {
    A4[5] = da[0];
  } else {
    for (int i = 0; i < ra; ++i) A4[6 - ra + i] = da[i];
  }
  if (rb == 1) {
    B4[4] = db[0];
  } else {
    for (int i = 0; i < rb; ++i) B4[6 - rb + i] = db[i];
  }
  int64_t M = A4[4], K = A4[5], N = B4[5];
  int64_t bat[4];
  for (int i = 0; i < 4; ++i) bat[i] = A4[i] > B4[i] ? A4[i] : B4[i];
  int64_t ny = tg_numel(g, y);
  double* want = malloc(sizeof(double) * (size_t)ny);
  int64_t o = 0;
  for (int64_t b0 = 0; b0 < bat[0]; ++b0)
    for (int64_t b1 = 0; b1 < bat[1]; ++b1)
      for (int64_t b2 = 0; b2 < bat[2]; ++b2)
        for (int64_t b3 = 0; b3 < bat[3]; ++b3) {
          int64_t ab = ((((A4[0] > 1 ? b0 : 0) * A4[1] + (A4[1] > 1 ? b1 : 0)) * A4[2] + (A4[2] > 1 ? b2 : 0)) * A4[3] +
                        (A4[3] > 1 ? b3 : 0));
          int64_t bb = ((((B4[0] > 1 ? b0 : 0) * B4[1] + (B4[1] > 1 ? b1 : 0)) * B4[2] + (B4[2] > 1 ? b2 : 0)) * B4[3] +
                        (B4[3] > 1 ? b3 : 0));
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
              double acc = 0;
              for (int64_t k = 0; k < K; ++k)
                acc += (double)vals[a][ab * M * K + i * K + k] * vals[b][bb * K * N + k * N + j];
              want[o++] = acc;
            }
        }
  CHECK(o == ny);
  tg_run_and_compare("matmul", g, vals, y, want);
  free(want);
}

int main(void) {
  static const gemm_case_t gemms[] = {
      {5, 7, 3, false, false, 1.0f, 1.0f, 1, {7}, INGOT_ACTIVATION_NONE},
      {5, 7, 3, true, false, 1.0f, 1.0f, 2, {5, 7}, INGOT_ACTIVATION_NONE},
      {5, 7, 3, false, true, 0.5f, 2.0f, 2, {5, 1}, INGOT_ACTIVATION_RELU},
      {4, 6, 9, true, true, 1.5f, 1.0f, 0, {0}, INGOT_ACTIVATION_NONE},
      {3, 1, 8, true, true, 1.0f, 0.25f, 1, {1}, INGOT_ACTIVATION_RELU},
      {1, 10, 16, false, true, 1.0f, 1.0f, -1, {0}, INGOT_ACTIVATION_NONE},
      {2, 3, 5, false, false, 2.0f, 0.0f, 2, {2, 3}, INGOT_ACTIVATION_NONE},
  };
  for (size_t i = 0; i < sizeof(gemms) / sizeof(gemms[0]); ++i) run_gemm(&gemms[i]);

  {
    int64_t a[2] = {3, 4}, b[2] = {4, 5}, y[2] = {3, 5};
    run_matmul(2, a, 2, b, 2, y);
  }
  {
    int64_t a[3] = {2, 3, 4}, b[2] = {4, 5}, y[3] = {2, 3, 5};
    run_matmul(3, a, 2, b, 3, y);
  }
  {
    int64_t a[4] = {5, 1, 3, 4}, b[3] = {2, 4, 3}, y[4] = {5, 2, 3, 3};
    run_matmul(4, a, 3, b, 4, y);
  }
  {
    int64_t a[1] = {4}, b[3] = {2, 4, 3}, y[2] = {2, 3};
    run_matmul(1, a, 3, b, 2, y);
  }
  {
    int64_t a[3] = {2, 3, 4}, b[1] = {4}, y[2] = {2, 3};
    run_matmul(3, a, 1, b, 2, y);
  }
  {
    int64_t a[1] = {7}, b[1] = {7};
    run_matmul(1, a, 1, b, 0, NULL);
  }
  {
    /* shapes that do not fit are refused */
    ingot_graph_t* g = tg_graph(13);
    int64_t a[2] = {3, 4}, b[2] = {5, 2}, y[2] = {3, 2};
    uint32_t in[2] = {tg_input(g, "a", 2, a), tg_input(g, "b", 2, b)};
    uint32_t out = tg_output(g, "y", 2, y);
    tg_node(g, INGOT_OP_MATMUL, in, 2, &out, 1);
    ingot_lowered_t* l = NULL;
    CHECK(ingot_lower_graph(g, &l) == INGOT_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(ingot_compiler_error(), "(MatMul)") != NULL);
    ingot_graph_destroy(g);
  }
  if (g_failures) {
    fprintf(stderr, "%d failure(s)\n", g_failures);
    return 1;
  }
  printf("lower gemm: ok\n");
  return 0;
}
