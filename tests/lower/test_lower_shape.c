/* Lowering of shape ops: Transpose, Concat, and the views Reshape / Flatten /
 * Identity / Dropout (alias between intermediates, copy otherwise). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower_test_util.h"

static void test_transpose(const int64_t* perm) {
  ingot_graph_t* g = tg_graph(13);
  int64_t xd[3] = {2, 3, 4}, yd[3];
  int64_t p[3] = {2, 1, 0};
  if (perm) memcpy(p, perm, sizeof(p));
  for (int i = 0; i < 3; ++i) yd[i] = xd[p[i]];
  uint32_t x = tg_input(g, "x", 3, xd);
  uint32_t y = tg_output(g, "y", 3, yd);
  uint32_t node = tg_node(g, INGOT_OP_TRANSPOSE, &x, 1, &y, 1);
  if (perm) tg_attr_ints(g, node, "perm", perm, 3);
  float** vals = tg_vals(g);
  vals[x] = tg_random(24, 3);
  double want[24];
  int64_t idx[3];
  for (idx[0] = 0; idx[0] < 2; ++idx[0])
    for (idx[1] = 0; idx[1] < 3; ++idx[1])
      for (idx[2] = 0; idx[2] < 4; ++idx[2]) {
        int64_t o[3] = {idx[p[0]], idx[p[1]], idx[p[2]]};
        want[(o[0] * yd[1] + o[1]) * yd[2] + o[2]] = vals[x][(idx[0] * 3 + idx[1]) * 4 + idx[2]];
      }
  tg_run_and_compare("transpose", g, vals, y, want);
}

static void test_concat(int64_t axis) {
  ingot_graph_t* g = tg_graph(13);
  int64_t d0[3] = {2, 3, 4}, d1[3] = {2, 3, 4}, d2[3] = {2, 3, 4}, yd[3] = {2, 3, 4};
  int64_t ax = axis < 0 ? axis + 3 : axis;
  d0[ax] = 1;
  d1[ax] = 2;
  d2[ax] = 3;
  yd[ax] = 6;
  uint32_t in[3] = {tg_input(g, "p", 3, d0), tg_weight(g, "q", 3, d1, NULL), tg_input(g, "r", 3, d2)};
  uint32_t y = tg_output(g, "y", 3, yd);
  uint32_t node = tg_node(g, INGOT_OP_CONCAT, in, 3, &y, 1);
  tg_attr_int(g, node, "axis", axis);
  float** vals = tg_vals(g);
  vals[in[0]] = tg_random(tg_numel(g, in[0]), 1);
  vals[in[2]] = tg_random(tg_numel(g, in[2]), 2);
  const float* src[3] = {vals[in[0]], g->values[in[1]].data, vals[in[2]]};
  const int64_t* dims[3] = {d0, d1, d2};
  double want[72];
  int64_t off = 0;
  for (int k = 0; k < 3; ++k) {
    const int64_t* d = dims[k];
    for (int64_t a = 0; a < d[0]; ++a)
      for (int64_t b = 0; b < d[1]; ++b)
        for (int64_t c = 0; c < d[2]; ++c) {
          int64_t o[3] = {a, b, c};
          o[ax] += off;
          want[(o[0] * yd[1] + o[1]) * yd[2] + o[2]] = src[k][(a * d[1] + b) * d[2] + c];
        }
    off += d[ax];
  }
  tg_run_and_compare("concat", g, vals, y, want);
}

/* x -> Relu -> t1 -> Reshape -> t2 -> Flatten -> t3 -> Identity -> t4 -> Sigmoid -> y:
 * the views between intermediates alias (no kernels) and chain to the root. */
static void test_alias_chain(void) {
  ingot_graph_t* g = tg_graph(13);
  int64_t xd[4] = {1, 2, 3, 4}, t2d[2] = {6, 4}, t3d[2] = {6, 4}, shape[2] = {6, 4}, sd[1] = {2};
  uint32_t x = tg_input(g, "x", 4, xd);
  uint32_t t1 = tg_inter(g, "t1", 4, xd);
  uint32_t t2 = tg_inter(g, "t2", 2, t2d);
  uint32_t t3 = tg_inter(g, "t3", 2, t3d);
  uint32_t t4 = tg_inter(g, "t4", 2, t3d);
  uint32_t y = tg_output(g, "y", 2, t3d);
  uint32_t shp = ingot_graph_add_value(g, "shape", INGOT_VALUE_WEIGHT);
  g->values[shp].dtype = INGOT_DTYPE_I64;
  g->values[shp].rank = 1;
  g->values[shp].dims[0] = sd[0];
  g->values[shp].data = malloc(sizeof(shape));
  memcpy(g->values[shp].data, shape, sizeof(shape));
  tg_node(g, INGOT_OP_RELU, &x, 1, &t1, 1);
  uint32_t rin[2] = {t1, shp};
  tg_node(g, INGOT_OP_RESHAPE, rin, 2, &t2, 1);
  uint32_t fl = tg_node(g, INGOT_OP_FLATTEN, &t2, 1, &t3, 1);
  tg_attr_int(g, fl, "axis", 1);
  tg_node(g, INGOT_OP_IDENTITY, &t3, 1, &t4, 1);
  tg_node(g, INGOT_OP_SIGMOID, &t4, 1, &y, 1);
  ingot_lowered_t* l = tg_lower(g);
  if (l) {
    CHECK(l->kernel_count == 2);
    CHECK(l->alias_of[t2] == t1 && l->alias_of[t3] == t1 && l->alias_of[t4] == t1);
    CHECK(l->alias_of[t1] == INGOT_NO_VALUE && l->alias_of[y] == INGOT_NO_VALUE);
    CHECK(l->kernel_count == 2 && l->kernels[1].args[0] == t4); /* Sigmoid reads the view */
    float** vals = tg_vals(g);
    vals[x] = tg_random(24, 4);
    double want[24];
    for (int i = 0; i < 24; ++i) {
      double v = vals[x][i] > 0 ? vals[x][i] : 0;
      want[i] = 1.0 / (1.0 + exp(-v));
    }
    if (tg_execute(g, l, vals)) tg_close("alias chain", vals[y], want, 24);
    tg_free_vals(g, l, vals);
  }
  ingot_lowered_destroy(l);
  ingot_graph_destroy(g);
}

/* Views touching a graph input, a weight or a graph output are copies. */
static void test_view_copies(void) {
  ingot_graph_t* g = tg_graph(13);
  int64_t xd[3] = {2, 3, 4}, fd[2] = {2, 12}, wd[2] = {3, 4};
  uint32_t x = tg_input(g, "x", 3, xd);
  uint32_t t = tg_inter(g, "t", 2, fd);
  uint32_t y = tg_output(g, "y", 2, fd);
  uint32_t w = tg_weight(g, "w", 2, wd, NULL);
  uint32_t wy = tg_output(g, "wy", 2, wd);
  uint32_t m = ingot_graph_add_value(g, "mask", INGOT_VALUE_INTERMEDIATE);
  g->values[m].dtype = INGOT_DTYPE_BOOL;
  g->values[m].rank = 2;
  g->values[m].dims[0] = 2;
  g->values[m].dims[1] = 12;
  g->values[m].is_output = true;
  uint32_t fl = tg_node(g, INGOT_OP_FLATTEN, &x, 1, &t, 1); /* input -> intermediate: copy */
  tg_attr_int(g, fl, "axis", 1);
  uint32_t dout[2] = {y, m};
  tg_node(g, INGOT_OP_DROPOUT, &t, 1, dout, 2); /* with a mask: copy */
  tg_node(g, INGOT_OP_IDENTITY, &w, 1, &wy, 1); /* weight -> output: copy */
  ingot_lowered_t* l = tg_lower(g);
  if (l) {
    CHECK(l->kernel_count == 3);
    for (uint32_t v = 0; v < g->value_count; ++v) CHECK(l->alias_of[v] == INGOT_NO_VALUE);
    float** vals = tg_vals(g);
    vals[x] = tg_random(24, 6);
    uint8_t mask[24];
    vals[m] = (float*)(void*)mask;
    memset(mask, 0, sizeof(mask));
    double want[24];
    for (int i = 0; i < 24; ++i) want[i] = vals[x][i];
    if (tg_execute(g, l, vals)) {
      tg_close("flatten+dropout copy", vals[y], want, 24);
      for (int i = 0; i < 24; ++i) CHECK(mask[i] == 1);
      const float* wd_data = g->values[w].data;
      for (int i = 0; i < 12; ++i) want[i] = wd_data[i];
      tg_close("identity of weight", vals[wy], want, 12);
    }
    vals[m] = NULL;
    tg_free_vals(g, l, vals);
  }
  ingot_lowered_destroy(l);
  ingot_graph_destroy(g);
}

static void test_refusals(void) {
  ingot_graph_t* g = tg_graph(13);
  int64_t xd[2] = {2, 3}, yd[2] = {3, 3};
  uint32_t x = tg_input(g, "x", 2, xd);
  uint32_t y = tg_output(g, "y", 2, yd);
  uint32_t node = ingot_graph_add_node(g, INGOT_OP_TRANSPOSE, "tr", &x, 1, &y, 1);
  ingot_lowered_t* l = NULL;
  CHECK(ingot_lower_graph(g, &l) == INGOT_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(ingot_compiler_error(), "node 'tr' (Transpose)") != NULL);
  g->values[y].dims[0] = 3;
  g->values[y].dims[1] = 2;
  int64_t bad[2] = {0, 0};
  tg_attr_ints(g, node, "perm", bad, 2);
  CHECK(ingot_lower_graph(g, &l) == INGOT_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(ingot_compiler_error(), "permutation") != NULL);
  g->nodes[node].op = INGOT_OP_CONSTANT;
  CHECK(ingot_lower_graph(g, &l) == INGOT_ERROR_UNSUPPORTED);
  ingot_graph_destroy(g);
}

int main(void) {
  test_transpose(NULL);
  int64_t p1[3] = {1, 2, 0}, p2[3] = {0, 2, 1};
  test_transpose(p1);
  test_transpose(p2);
  test_concat(0);
  test_concat(1);
  test_concat(-1);
  test_alias_chain();
  test_view_copies();
  test_refusals();
  if (g_failures) {
    fprintf(stderr, "%d failure(s)\n", g_failures);
    return 1;
  }
  printf("lower shape: ok\n");
  return 0;
}
