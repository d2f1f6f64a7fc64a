/* Lowering of Softmax: opset >= 13 (along one axis) and opset < 13 (coerced to
 * 2-D at the axis), default axes, negative axes, large inputs (the max is
 * subtracted, so nothing overflows). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower_test_util.h"

/* has_axis false: the attribute is absent (default for the opset). */
static void run_softmax(int64_t opset, bool has_axis, int64_t axis, float scale) {
  ingot_graph_t* g = tg_graph(opset);
  int64_t d[3] = {2, 3, 4};
  uint32_t x = tg_input(g, "x", 3, d);
  uint32_t y = tg_output(g, "y", 3, d);
  uint32_t node = tg_node(g, INGOT_OP_SOFTMAX, &x, 1, &y, 1);
  if (has_axis) tg_attr_int(g, node, "axis", axis);
  float** vals = tg_vals(g);
  vals[x] = tg_random(24, 21);
  for (int i = 0; i < 24; ++i) vals[x][i] *= scale;
  bool legacy = opset < 13;
  int64_t a = has_axis ? axis : legacy ? 1 : -1;
  if (a < 0) a += 3;
  int64_t outer = 1, len = 1, inner = 1;
  for (int i = 0; i < 3; ++i) {
    if (i < a)
      outer *= d[i];
    else if (i == a || legacy)
      len *= d[i];
    else
      inner *= d[i];
  }
  double want[24];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < len; ++j) mx = fmax(mx, vals[x][(o * len + j) * inner + in]);
      for (int64_t j = 0; j < len; ++j) sum += exp(vals[x][(o * len + j) * inner + in] - mx);
      for (int64_t j = 0; j < len; ++j)
        want[(o * len + j) * inner + in] = exp(vals[x][(o * len + j) * inner + in] - mx) / sum;
    }
  char what[64];
  snprintf(what, sizeof(what), "softmax opset%lld axis%lld scale%g", (long long)opset, (long long)a, scale);
  ingot_lowered_t* l = tg_lower(g);
  if (l) {
    CHECK(l->kernel_count == 1 && l->kernels[0].stage_count == 1 && l->kernels[0].stages[0].role == INGOT_STAGE_OTHER &&
          l->kernels[0].op_class == INGOT_OP_CLASS_ROW);
    if (tg_execute(g, l, vals)) tg_close(what, vals[y], want, 24);
  }
  tg_free_vals(g, l, vals);
  ingot_lowered_destroy(l);
  ingot_graph_destroy(g);
}

int main(void) {
  run_softmax(13, false, 0, 1.0f);
  run_softmax(13, true, 1, 1.0f);
  run_softmax(13, true, 0, 1.0f);
  run_softmax(13, true, -2, 3.0f);
  run_softmax(11, false, 0, 1.0f);
  run_softmax(11, true, 2, 1.0f);
  run_softmax(11, true, 0, 2.0f);
  run_softmax(1, true, -1, 1.0f);
  run_softmax(13, true, 2, 1000.0f); /* exp(1000) would overflow without the max */
  {
    ingot_graph_t* g = tg_graph(13);
    int64_t d[2] = {2, 3};
    uint32_t x = tg_input(g, "x", 2, d);
    uint32_t y = tg_output(g, "y", 2, d);
    uint32_t node = tg_node(g, INGOT_OP_SOFTMAX, &x, 1, &y, 1);
    tg_attr_int(g, node, "axis", 2);
    ingot_lowered_t* l = NULL;
    CHECK(ingot_lower_graph(g, &l) == INGOT_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(ingot_compiler_error(), "(Softmax)") != NULL);
    ingot_graph_destroy(g);
  }
  if (g_failures) {
    fprintf(stderr, "%d failure(s)\n", g_failures);
    return 1;
  }
  printf("lower softmax: ok\n");
  return 0;
}
