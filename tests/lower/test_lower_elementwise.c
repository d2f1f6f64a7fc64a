/* Lowering of elementwise ops: broadcasting Add/Sub/Mul/Div, Relu, Clip,
 * Sigmoid, Tanh, BatchNormalization, a fused activation, and refusals. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower_test_util.h"

/* Flat index into a broadcast operand (dims aligned right, 1 -> 0). */
static int64_t bcast_index(int32_t out_rank, const int64_t* out_dims, int64_t flat, int32_t rank, const int64_t* dims) {
  int64_t idx[8];
  for (int32_t i = out_rank - 1; i >= 0; --i) {
    idx[i] = flat % out_dims[i];
    flat /= out_dims[i];
  }
  int64_t r = 0;
  for (int32_t i = 0; i < rank; ++i) {
    int64_t o = idx[out_rank - rank + i];
    r = r * dims[i] + (dims[i] == 1 ? 0 : o);
  }
  return r;
}

static void test_binary(ingot_op_t op, int32_t ra, const int64_t* da, bool a_weight, int32_t rb, const int64_t* db,
                        bool b_weight, int32_t ry, const int64_t* dy) {
  ingot_graph_t* g = tg_graph(17);
  float** vals = NULL;
  uint32_t a = a_weight ? tg_weight(g, "a", ra, da, NULL) : tg_input(g, "a", ra, da);
  uint32_t b = b_weight ? tg_weight(g, "b", rb, db, NULL) : tg_input(g, "b", rb, db);
  uint32_t y = tg_output(g, "y", ry, dy);
  uint32_t in[2] = {a, b};
  tg_node(g, op, in, 2, &y, 1);
  vals = tg_vals(g);
  if (!a_weight) vals[a] = tg_random(tg_numel(g, a), 11);
  if (!b_weight) vals[b] = tg_random(tg_numel(g, b), 12);
  const float* pa = a_weight ? g->values[a].data : vals[a];
  const float* pb = b_weight ? g->values[b].data : vals[b];
  if (op == INGOT_OP_DIV) {
    /* keep divisors away from 0 */
    float* q = b_weight ? (float*)g->values[b].data : vals[b];
    for (int64_t i = 0; i < tg_numel(g, b); ++i) q[i] = q[i] >= 0 ? q[i] + 0.5f : q[i] - 0.5f;
  }
  int64_t n = tg_numel(g, y);
  double* want = malloc(sizeof(double) * (size_t)n);
  for (int64_t i = 0; i < n; ++i) {
    float x = pa[bcast_index(ry, dy, i, ra, da)], z = pb[bcast_index(ry, dy, i, rb, db)];
    switch (op) {
      case INGOT_OP_ADD:
        want[i] = (float)(x + z);
        break;
      case INGOT_OP_SUB:
        want[i] = (float)(x - z);
        break;
      case INGOT_OP_MUL:
        want[i] = (float)(x * z);
        break;
      default:
        want[i] = (float)(x / z);
        break;
    }
  }
  tg_run_and_compare(ingot_op_name(op), g, vals, y, want);
  free(want);
}

static void test_binaries(void) {
  int64_t d234[3] = {2, 3, 4}, d31[2] = {3, 1}, d4[1] = {4}, d1[1] = {1}, d5x1x7[3] = {5, 1, 7}, d6x1[2] = {6, 1},
          d5x6x7[3] = {5, 6, 7};
  test_binary(INGOT_OP_ADD, 3, d234, false, 2, d31, true, 3, d234);
  test_binary(INGOT_OP_SUB, 1, d4, true, 3, d234, false, 3, d234);
  test_binary(INGOT_OP_MUL, 3, d234, false, 0, d1, true, 3, d234);
  test_binary(INGOT_OP_DIV, 3, d234, false, 1, d1, false, 3, d234);
  test_binary(INGOT_OP_ADD, 3, d5x1x7, false, 2, d6x1, false, 3, d5x6x7); /* both broadcast */
  test_binary(INGOT_OP_DIV, 3, d234, false, 3, d234, false, 3, d234);
}

typedef double (*unary_ref_t)(double);
static double ref_relu(double x) { return x > 0 ? x : 0; }
static double ref_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

static void test_unary(ingot_op_t op, unary_ref_t ref) {
  ingot_graph_t* g = tg_graph(17);
  int64_t d[3] = {2, 5, 3};
  uint32_t x = tg_input(g, "x", 3, d);
  uint32_t y = tg_output(g, "y", 3, d);
  tg_node(g, op, &x, 1, &y, 1);
  float** vals = tg_vals(g);
  vals[x] = tg_random(30, 5);
  for (int i = 0; i < 30; ++i) vals[x][i] *= 4.0f;
  double want[30];
  for (int i = 0; i < 30; ++i) want[i] = (float)ref(vals[x][i]);
  tg_run_and_compare(ingot_op_name(op), g, vals, y, want);
}

/* Clip: bounds from weights (opset 13), from attributes (opset 6), from a
 * run-time input, and absent. */
static void test_clip(int variant) {
  ingot_graph_t* g = tg_graph(variant == 1 ? 6 : 13);
  int64_t d[2] = {4, 6};
  uint32_t x = tg_input(g, "x", 2, d);
  uint32_t y = tg_output(g, "y", 2, d);
  float lo = -0.25f, hi = 0.5f;
  bool has_lo = true, has_hi = true;
  uint32_t lo_v = INGOT_NO_VALUE;
  uint32_t node;
  if (variant == 0) {
    uint32_t in[3] = {x, tg_weight(g, "lo", 0, NULL, &lo), tg_weight(g, "hi", 0, NULL, &hi)};
    node = tg_node(g, INGOT_OP_CLIP, in, 3, &y, 1);
  } else if (variant == 1) {
    node = tg_node(g, INGOT_OP_CLIP, &x, 1, &y, 1);
    tg_attr_float(g, node, "min", lo);
    tg_attr_float(g, node, "max", hi);
  } else if (variant == 2) {
    lo_v = tg_input(g, "lo", 0, NULL);
    uint32_t in[3] = {x, lo_v, INGOT_NO_VALUE};
    node = tg_node(g, INGOT_OP_CLIP, in, 3, &y, 1);
    has_hi = false;
  } else {
    uint32_t in[3] = {x, INGOT_NO_VALUE, tg_weight(g, "hi", 1, (int64_t[]){1}, &hi)};
    node = tg_node(g, INGOT_OP_CLIP, in, 3, &y, 1);
    has_lo = false;
  }
  (void)node;
  float** vals = tg_vals(g);
  vals[x] = tg_random(24, 9);
  if (lo_v != INGOT_NO_VALUE) {
    vals[lo_v] = malloc(sizeof(float));
    vals[lo_v][0] = lo;
  }
  double want[24];
  for (int i = 0; i < 24; ++i) {
    double v = vals[x][i];
    if (has_lo && v < lo) v = lo;
    if (has_hi && v > hi) v = hi;
    want[i] = v;
  }
  char what[32];
  snprintf(what, sizeof(what), "clip variant %d", variant);
  tg_run_and_compare(what, g, vals, y, want);
}

static void test_batchnorm(void) {
  ingot_graph_t* g = tg_graph(15);
  int64_t d[4] = {2, 3, 4, 5}, c[1] = {3};
  uint32_t x = tg_input(g, "x", 4, d);
  float var[3] = {0.5f, 1.5f, 2.0f};
  uint32_t in[5] = {x, tg_weight(g, "scale", 1, c, NULL), tg_weight(g, "bias", 1, c, NULL),
                    tg_weight(g, "mean", 1, c, NULL), tg_weight(g, "var", 1, c, var)};
  uint32_t y = tg_output(g, "y", 4, d);
  uint32_t node = tg_node(g, INGOT_OP_BATCHNORMALIZATION, in, 5, &y, 1);
  tg_attr_float(g, node, "epsilon", 1e-3f);
  float** vals = tg_vals(g);
  vals[x] = tg_random(120, 3);
  const float* sc = g->values[in[1]].data;
  const float* bi = g->values[in[2]].data;
  const float* me = g->values[in[3]].data;
  double want[120];
  for (int i = 0; i < 120; ++i) {
    int ch = (i / 20) % 3;
    want[i] = (vals[x][i] - me[ch]) / sqrt(var[ch] + 1e-3f) * sc[ch] + bi[ch];
  }
  tg_run_and_compare("batchnorm", g, vals, y, want);
}

/* BatchNormalization, training_mode=1: y from the batch's mean and biased
 * variance per channel, and the running statistics updated with momentum. */
static void test_batchnorm_training(void) {
  ingot_graph_t* g = tg_graph(15);
  int64_t d[4] = {2, 3, 4, 5}, c[1] = {3};
  uint32_t x = tg_input(g, "x", 4, d);
  float var[3] = {0.5f, 1.5f, 2.0f};
  uint32_t in[5] = {x, tg_weight(g, "scale", 1, c, NULL), tg_weight(g, "bias", 1, c, NULL),
                    tg_weight(g, "mean", 1, c, NULL), tg_weight(g, "var", 1, c, var)};
  uint32_t out[3] = {tg_output(g, "y", 4, d), tg_output(g, "running_mean", 1, c), tg_output(g, "running_var", 1, c)};
  uint32_t node = tg_node(g, INGOT_OP_BATCHNORMALIZATION, in, 5, out, 3);
  tg_attr_int(g, node, "training_mode", 1);
  tg_attr_float(g, node, "epsilon", 1e-2f);
  tg_attr_float(g, node, "momentum", 0.8f);
  float** vals = tg_vals(g);
  vals[x] = tg_random(120, 5);
  const float* sc = g->values[in[1]].data;
  const float* bi = g->values[in[2]].data;
  const float* me = g->values[in[3]].data;
  double want_y[120], want_m[3], want_v[3];
  for (int ch = 0; ch < 3; ++ch) {
    double sum = 0, sq = 0;
    for (int n = 0; n < 2; ++n)
      for (int k = 0; k < 20; ++k) sum += vals[x][(n * 3 + ch) * 20 + k];
    double m = sum / 40;
    for (int n = 0; n < 2; ++n)
      for (int k = 0; k < 20; ++k) sq += (vals[x][(n * 3 + ch) * 20 + k] - m) * (vals[x][(n * 3 + ch) * 20 + k] - m);
    double v = sq / 40;
    for (int n = 0; n < 2; ++n)
      for (int k = 0; k < 20; ++k) {
        int i = (n * 3 + ch) * 20 + k;
        want_y[i] = (vals[x][i] - m) / sqrt(v + 1e-2f) * sc[ch] + bi[ch];
      }
    want_m[ch] = me[ch] * 0.8f + m * (1 - 0.8f);
    want_v[ch] = var[ch] * 0.8f + v * (1 - 0.8f);
  }
  ingot_lowered_t* l = tg_lower(g);
  if (l && tg_execute(g, l, vals)) {
    tg_close("batchnorm training y", vals[out[0]], want_y, 120);
    tg_close("batchnorm training running_mean", vals[out[1]], want_m, 3);
    tg_close("batchnorm training running_var", vals[out[2]], want_v, 3);
  }
  tg_free_vals(g, l, vals);
  ingot_lowered_destroy(l);
  /* inference mode has no running statistics */
  for (uint32_t i = 0; i < g->nodes[node].attr_count; ++i) {
    if (strcmp(g->nodes[node].attrs[i].name, "training_mode") == 0) g->nodes[node].attrs[i].i = 0;
  }
  l = (ingot_lowered_t*)0x1;
  CHECK(ingot_lower_graph(g, &l) == INGOT_ERROR_UNSUPPORTED);
  CHECK(l == NULL);
  CHECK(strstr(ingot_compiler_error(), "running mean/var outputs need training_mode=1") != NULL);
  ingot_graph_destroy(g);
}

/* Add feeding a fused-relu Add through an intermediate (two kernels). */
static void test_chain_and_activation(void) {
  ingot_graph_t* g = tg_graph(17);
  int64_t d[2] = {3, 7};
  uint32_t a = tg_input(g, "a", 2, d), b = tg_input(g, "b", 2, d);
  uint32_t t = tg_inter(g, "t", 2, d);
  uint32_t y = tg_output(g, "y", 2, d);
  uint32_t in1[2] = {a, b}, in2[2] = {t, a};
  tg_node(g, INGOT_OP_ADD, in1, 2, &t, 1);
  uint32_t n2 = tg_node(g, INGOT_OP_MUL, in2, 2, &y, 1);
  g->nodes[n2].epilogue.activation = INGOT_ACTIVATION_CLIP;
  g->nodes[n2].epilogue.act_min = 0.0f;
  g->nodes[n2].epilogue.act_max = 0.3f;
  float** vals = tg_vals(g);
  vals[a] = tg_random(21, 1);
  vals[b] = tg_random(21, 2);
  double want[21];
  for (int i = 0; i < 21; ++i) {
    double v = (float)((float)(vals[a][i] + vals[b][i]) * vals[a][i]);
    want[i] = v < 0 ? 0 : v > 0.3f ? 0.3f : v;
  }
  int kernels = tg_run_and_compare("add->mul+clip", g, vals, y, want);
  CHECK(kernels == 2);
}

static void test_refusals(void) {
  ingot_graph_t* g = tg_graph(17);
  int64_t d[2] = {2, 2};
  uint32_t a = tg_input(g, "a", 2, d), b = tg_input(g, "b", 2, d);
  uint32_t y = tg_output(g, "y", 2, d);
  g->values[a].dtype = INGOT_DTYPE_BF16; /* no bfloat16 arithmetic (float16's: tests/e2e/half_native_test.py) */
  uint32_t in[2] = {a, b};
  uint32_t node = ingot_graph_add_node(g, INGOT_OP_ADD, "adder", in, 2, &y, 1);
  (void)node;
  ingot_lowered_t* l = (ingot_lowered_t*)0x1;
  CHECK(ingot_lower_graph(g, &l) == INGOT_ERROR_UNSUPPORTED);
  CHECK(l == NULL);
  CHECK(strstr(ingot_compiler_error(), "node 'adder' (Add): dtype bfloat16 is not supported") != NULL);
  /* a symbolic dim */
  g->values[a].dtype = INGOT_DTYPE_F32;
  g->values[b].dims[0] = -1;
  CHECK(ingot_lower_graph(g, &l) != INGOT_OK);
  CHECK(strstr(ingot_compiler_error(), "symbolic") != NULL);
  /* shapes that do not broadcast */
  g->values[b].dims[0] = 3;
  CHECK(ingot_lower_graph(g, &l) == INGOT_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(ingot_compiler_error(), "(Add)") != NULL);
  ingot_graph_destroy(g);
}

int main(void) {
  test_binaries();
  test_unary(INGOT_OP_RELU, ref_relu);
  test_unary(INGOT_OP_SIGMOID, ref_sigmoid);
  test_unary(INGOT_OP_TANH, tanh);
  for (int v = 0; v < 4; ++v) test_clip(v);
  test_batchnorm();
  test_batchnorm_training();
  test_chain_and_activation();
  test_refusals();
  if (g_failures) {
    fprintf(stderr, "%d failure(s)\n", g_failures);
    return 1;
  }
  printf("lower elementwise: ok\n");
  return 0;
}
