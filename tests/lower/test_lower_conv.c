/* Lowering of Conv: 1-D, 2-D, 3-D; groups and depthwise; pads (asymmetric),
 * strides, dilations, auto_pad; bias; fused activations; at sizes that are not
 * multiples of anything. Reference: a naive direct convolution in double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower_test_util.h"

typedef struct conv_case_t {
  const char* name;
  int nsp; /* 1..3 spatial axes */
  int64_t n, c, m, group;
  int64_t in[3], k[3], stride[3], dil[3], pad[6]; /* pad: begin.., end.. */
  const char* auto_pad;                           /* NULL: explicit pads */
  bool bias;
  ingot_activation_t act;
} conv_case_t;

static int64_t out_extent(const conv_case_t* t, int i, int64_t* pb, int64_t* pe) {
  int64_t span = (t->k[i] - 1) * t->dil[i] + 1;
  if (t->auto_pad && strncmp(t->auto_pad, "SAME", 4) == 0) {
    int64_t out = (t->in[i] + t->stride[i] - 1) / t->stride[i];
    int64_t total = (out - 1) * t->stride[i] + span - t->in[i];
    if (total < 0) total = 0;
    *pb = strcmp(t->auto_pad, "SAME_UPPER") == 0 ? total / 2 : total - total / 2;
    *pe = total - *pb;
    return out;
  }
  *pb = t->pad[i];
  *pe = t->pad[t->nsp + i];
  return (t->in[i] + *pb + *pe - span) / t->stride[i] + 1;
}

static void run_conv(const conv_case_t* t) {
  ingot_graph_t* g = tg_graph(17);
  int nsp = t->nsp;
  int64_t xd[5] = {t->n, t->c}, wd[5] = {t->m, t->c / t->group}, yd[5] = {t->n, t->m};
  int64_t pb[3], pe[3], out[3];
  /* padded to 3-D for the reference */
  int64_t I[3] = {1, 1, 1}, K[3] = {1, 1, 1}, O[3] = {1, 1, 1}, S[3] = {1, 1, 1}, D[3] = {1, 1, 1}, P[3] = {0, 0, 0};
  for (int i = 0; i < nsp; ++i) {
    out[i] = out_extent(t, i, &pb[i], &pe[i]);
    xd[2 + i] = t->in[i];
    wd[2 + i] = t->k[i];
    yd[2 + i] = out[i];
    int j = 3 - nsp + i;
    I[j] = t->in[i];
    K[j] = t->k[i];
    O[j] = out[i];
    S[j] = t->stride[i];
    D[j] = t->dil[i];
    P[j] = pb[i];
  }
  uint32_t x = tg_input(g, "x", 2 + nsp, xd);
  uint32_t w = tg_weight(g, "w", 2 + nsp, wd, NULL);
  int64_t bd[1] = {t->m};
  uint32_t b = t->bias ? tg_weight(g, "b", 1, bd, NULL) : INGOT_NO_VALUE;
  uint32_t y = tg_output(g, "y", 2 + nsp, yd);
  uint32_t in[3] = {x, w, b};
  uint32_t node = tg_node(g, INGOT_OP_CONV, in, t->bias ? 3 : 2, &y, 1);
  tg_attr_int(g, node, "group", t->group);
  tg_attr_ints(g, node, "kernel_shape", t->k, (uint32_t)nsp);
  tg_attr_ints(g, node, "strides", t->stride, (uint32_t)nsp);
  tg_attr_ints(g, node, "dilations", t->dil, (uint32_t)nsp);
  if (t->auto_pad) {
    tg_attr_string(g, node, "auto_pad", t->auto_pad);
  } else {
    tg_attr_ints(g, node, "pads", t->pad, (uint32_t)(2 * nsp));
  }
  g->nodes[node].epilogue.activation = t->act;
  g->nodes[node].epilogue.act_min = -0.5f;
  g->nodes[node].epilogue.act_max = 0.75f;

  float** vals = tg_vals(g);
  vals[x] = tg_random(tg_numel(g, x), 77);
  const float* X = vals[x];
  const float* W = g->values[w].data;
  const float* B = t->bias ? g->values[b].data : NULL;
  int64_t ny = tg_numel(g, y);
  double* want = malloc(sizeof(double) * (size_t)ny);
  int64_t cg = t->c / t->group, mg = t->m / t->group;
  int64_t yi = 0;
  for (int64_t n = 0; n < t->n; ++n)
    for (int64_t m = 0; m < t->m; ++m)
      for (int64_t o0 = 0; o0 < O[0]; ++o0)
        for (int64_t o1 = 0; o1 < O[1]; ++o1)
          for (int64_t o2 = 0; o2 < O[2]; ++o2) {
            double acc = B ? B[m] : 0.0;
            for (int64_t rc = 0; rc < cg; ++rc) {
              int64_t ci = (m / mg) * cg + rc;
              for (int64_t r0 = 0; r0 < K[0]; ++r0)
                for (int64_t r1 = 0; r1 < K[1]; ++r1)
                  for (int64_t r2 = 0; r2 < K[2]; ++r2) {
                    int64_t p0 = o0 * S[0] - P[0] + r0 * D[0];
                    int64_t p1 = o1 * S[1] - P[1] + r1 * D[1];
                    int64_t p2 = o2 * S[2] - P[2] + r2 * D[2];
                    if (p0 < 0 || p0 >= I[0] || p1 < 0 || p1 >= I[1] || p2 < 0 || p2 >= I[2]) continue;
                    double xv = X[(((n * t->c + ci) * I[0] + p0) * I[1] + p1) * I[2] + p2];
                    double wv = W[(((m * cg + rc) * K[0] + r0) * K[1] + r1) * K[2] + r2];
                    acc += xv * wv;
                  }
            }
            if (t->act == INGOT_ACTIVATION_RELU && acc < 0) acc = 0;
            if (t->act == INGOT_ACTIVATION_CLIP) acc = acc < -0.5 ? -0.5 : acc > 0.75 ? 0.75 : acc;
            want[yi++] = acc;
          }
  tg_run_and_compare(t->name, g, vals, y, want);
  free(want);
}

static void test_workload(void) {
  ingot_graph_t* g = tg_graph(17);
  int64_t xd[4] = {1, 64, 56, 56}, wd[4] = {64, 64, 3, 3}, pads[4] = {1, 1, 1, 1};
  uint32_t x = tg_input(g, "x", 4, xd);
  uint32_t w = tg_weight(g, "w", 4, wd, NULL);
  uint32_t y = tg_output(g, "y", 4, xd);
  uint32_t in[2] = {x, w};
  uint32_t node = tg_node(g, INGOT_OP_CONV, in, 2, &y, 1);
  tg_attr_ints(g, node, "pads", pads, 4);
  g->nodes[node].epilogue.activation = INGOT_ACTIVATION_RELU;
  ingot_lowered_t* l = tg_lower(g);
  if (l) {
    CHECK(l->kernel_count == 1);
    const ingot_kernel_t* k = &l->kernels[0];
    CHECK(strcmp(k->workload, "conv2d f32 n1 c64 h56 w56 k64 r3 s3 stride1x1 pad1x1x1x1 dil1x1 g1 bias=0 act=relu") ==
          0);
    if (strcmp(k->workload, "conv2d f32 n1 c64 h56 w56 k64 r3 s3 stride1x1 pad1x1x1x1 dil1x1 g1 bias=0 act=relu") != 0)
      fprintf(stderr, "workload: %s\n", k->workload);
    CHECK(k->op_class == INGOT_OP_CLASS_CONTRACTION);
    /* no INIT stage: the UPDATE starts each output at 0 on its first step */
    CHECK(k->stage_count == 2);
    CHECK(k->stages[0].role == INGOT_STAGE_UPDATE);
    CHECK(k->stages[0].spatial_count == 4 && k->stages[0].reduce_count == 3);
    CHECK(k->stages[1].role == INGOT_STAGE_FINISH);
    CHECK(strcmp(k->func->name, "conv_0") == 0);
    CHECK(k->arg_count == 3 && k->args[0] == x && k->args[1] == w && k->args[2] == y);
  }
  ingot_lowered_destroy(l);
  ingot_graph_destroy(g);
}

static void test_refusals(void) {
  ingot_graph_t* g = tg_graph(17);
  int64_t xd[4] = {1, 4, 5, 5}, wd[4] = {6, 2, 3, 3}, yd[4] = {1, 6, 3, 3};
  uint32_t x = tg_input(g, "x", 4, xd);
  uint32_t w = tg_weight(g, "w", 4, wd, NULL);
  uint32_t y = tg_output(g, "y", 4, yd);
  uint32_t in[2] = {x, w};
  uint32_t node = ingot_graph_add_node(g, INGOT_OP_CONV, "c1", in, 2, &y, 1);
  tg_attr_int(g, node, "group", 3); /* 4 channels do not split in 3 groups */
  ingot_lowered_t* l = NULL;
  CHECK(ingot_lower_graph(g, &l) == INGOT_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(ingot_compiler_error(), "node 'c1' (Conv)") != NULL);
  g->nodes[node].attrs[0].i = 2;
  CHECK(ingot_lower_graph(g, &l) == INGOT_OK);
  ingot_lowered_destroy(l);
  g->values[y].dims[3] = 4; /* an output shape that does not match */
  CHECK(ingot_lower_graph(g, &l) == INGOT_ERROR_INVALID_ARGUMENT);
  g->values[y].dims[3] = 3;
  tg_attr_string(g, node, "auto_pad", "SAME_MIDDLE");
  CHECK(ingot_lower_graph(g, &l) == INGOT_ERROR_UNSUPPORTED);
  CHECK(strstr(ingot_compiler_error(), "auto_pad") != NULL);
  ingot_graph_destroy(g);
}

int main(void) {
  static const conv_case_t cases[] = {
      {"2d basic pad1", 2, 1, 3, 4, 1, {5, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, NULL, true, INGOT_ACTIVATION_NONE},
      {"2d groups stride dil asym pads",
       2,
       2,
       4,
       6,
       2,
       {7, 9},
       {3, 2},
       {2, 3},
       {2, 1},
       {1, 0, 2, 1},
       NULL,
       false,
       INGOT_ACTIVATION_RELU},
      {"2d depthwise", 2, 1, 3, 6, 3, {6, 5}, {3, 3}, {1, 2}, {1, 1}, {1, 1, 1, 1}, NULL, true, INGOT_ACTIVATION_CLIP},
      {"2d pointwise", 2, 2, 5, 3, 1, {3, 4}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, NULL, true, INGOT_ACTIVATION_NONE},
      {"2d big pads", 2, 1, 2, 3, 1, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {3, 2, 2, 3}, NULL, true, INGOT_ACTIVATION_NONE},
      {"2d same_upper", 2, 1, 2, 3, 1, {7, 6}, {3, 4}, {2, 2}, {1, 1}, {0}, "SAME_UPPER", true, INGOT_ACTIVATION_NONE},
      {"2d same_lower", 2, 1, 2, 3, 1, {7, 6}, {4, 3}, {2, 1}, {1, 1}, {0}, "SAME_LOWER", false, INGOT_ACTIVATION_NONE},
      {"2d valid", 2, 1, 2, 2, 1, {7, 6}, {3, 3}, {2, 2}, {1, 1}, {0}, "VALID", false, INGOT_ACTIVATION_NONE},
      {"1d", 1, 2, 3, 5, 1, {11}, {3}, {2}, {2}, {2, 1}, NULL, true, INGOT_ACTIVATION_NONE},
      {"1d groups", 1, 1, 6, 4, 2, {9}, {4}, {1}, {1}, {0, 3}, NULL, true, INGOT_ACTIVATION_RELU},
      {"3d",
       3,
       1,
       2,
       3,
       1,
       {4, 5, 3},
       {2, 3, 2},
       {1, 2, 1},
       {1, 1, 2},
       {1, 0, 1, 0, 1, 1},
       NULL,
       true,
       INGOT_ACTIVATION_NONE},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) run_conv(&cases[i]);
  test_workload();
  test_refusals();
  if (g_failures) {
    fprintf(stderr, "%d failure(s)\n", g_failures);
    return 1;
  }
  printf("lower conv: ok\n");
  return 0;
}
