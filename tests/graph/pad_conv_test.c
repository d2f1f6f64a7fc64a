/* ingot_graph_pad_conv_inputs (graph/passes_layout.c): a Conv with pads gets a
 * Pad node in front and pads 0, and computes the same output (both versions
 * run on the IR interpreter through ingot_lower_eval_node). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "lower/lower.h"

static int g_failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                            \
    }                                                                          \
  } while (0)

#define CHECK_OK(expr)                                                                                     \
  do {                                                                                                     \
    ingot_status_t s_ = (expr);                                                                            \
    if (s_ != INGOT_OK) {                                                                                  \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, ingot_compiler_error());        \
      ++g_failures;                                                                                        \
    }                                                                                                      \
  } while (0)

static uint32_t add_weight(ingot_graph_t* g, const char* name, int32_t rank, const int64_t* dims, unsigned* seed) {
  uint32_t id = ingot_graph_add_value(g, name, INGOT_VALUE_WEIGHT);
  ingot_value_t* v = &g->values[id];
  v->dtype = INGOT_DTYPE_F32;
  v->rank = rank;
  for (int32_t i = 0; i < rank; ++i) v->dims[i] = dims[i];
  int64_t n = ingot_value_numel(v);
  float* d = malloc(sizeof(float) * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; ++i) {
    *seed = *seed * 1103515245u + 12345u;
    d[i] = (float)((*seed >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
  v->data = d;
  return id;
}

static void add_ints(ingot_graph_t* g, uint32_t node, const char* name, const int64_t* v, uint32_t count) {
  ingot_node_t* n = &g->nodes[node];
  ingot_attr_t* attrs = ingot_arena_alloc(&g->arena, sizeof(ingot_attr_t) * (n->attr_count + 1));
  if (n->attr_count) memcpy(attrs, n->attrs, sizeof(ingot_attr_t) * n->attr_count);
  ingot_attr_t* a = &attrs[n->attr_count++];
  memset(a, 0, sizeof(*a));
  a->name = name;
  a->type = INGOT_ATTR_INTS;
  a->ints = ingot_arena_alloc(&g->arena, sizeof(int64_t) * count);
  memcpy(a->ints, v, sizeof(int64_t) * count);
  a->count = count;
  n->attrs = attrs;
}

static uint32_t find_op(const ingot_graph_t* g, ingot_op_t op) {
  for (uint32_t i = 0; i < g->node_count; ++i) {
    if (!g->nodes[i].dead && g->nodes[i].op == op) return i;
  }
  return INGOT_NO_VALUE;
}

/* One conv: input [1, c, sp...] (a weight, so the interpreter can run it),
 * `group` groups, m output channels, kernel k, explicit pads. */
static void run_case(int32_t sp, int64_t c, int64_t m, int64_t group, const int64_t* size, const int64_t* k,
                     const int64_t* pads, const int64_t* strides, int64_t big_side) {
  ingot_graph_t* g = NULL;
  CHECK_OK(ingot_graph_create(&g));
  g->opset = 13;
  unsigned seed = 7u + (unsigned)sp;
  int32_t rank = sp + 2;
  int64_t xd[5] = {1, c}, wd[5] = {m, c / group};
  for (int32_t i = 0; i < sp; ++i) {
    xd[2 + i] = big_side ? big_side : size[i];
    wd[2 + i] = k[i];
  }
  uint32_t x;
  if (big_side) {
    /* Shape only: too large to pad, the pass must leave it alone. */
    x = ingot_graph_add_value(g, "x", INGOT_VALUE_INPUT);
    g->values[x].dtype = INGOT_DTYPE_F32;
    g->values[x].rank = rank;
    memcpy(g->values[x].dims, xd, sizeof(int64_t) * (size_t)rank);
    g->inputs = malloc(sizeof(uint32_t));
    g->inputs[g->input_count++] = x;
  } else {
    x = add_weight(g, "x", rank, xd, &seed);
  }
  uint32_t w = add_weight(g, "w", rank, wd, &seed);
  uint32_t b = add_weight(g, "b", 1, &m, &seed);
  uint32_t y = ingot_graph_add_value(g, "y", INGOT_VALUE_INTERMEDIATE);
  g->values[y].is_output = true;
  g->outputs = malloc(sizeof(uint32_t));
  g->outputs[g->output_count++] = y;
  uint32_t ins[3] = {x, w, b};
  uint32_t conv = ingot_graph_add_node(g, INGOT_OP_CONV, "conv", ins, 3, &y, 1);
  add_ints(g, conv, "pads", pads, (uint32_t)(2 * sp));
  add_ints(g, conv, "strides", strides, (uint32_t)sp);
  ingot_node_t* cn = &g->nodes[conv];
  ingot_attr_t* attrs = ingot_arena_alloc(&g->arena, sizeof(ingot_attr_t) * (cn->attr_count + 1));
  memcpy(attrs, cn->attrs, sizeof(ingot_attr_t) * cn->attr_count);
  memset(&attrs[cn->attr_count], 0, sizeof(ingot_attr_t));
  attrs[cn->attr_count].name = "group";
  attrs[cn->attr_count].type = INGOT_ATTR_INT;
  attrs[cn->attr_count].i = group;
  cn->attrs = attrs;
  cn->attr_count++;

  CHECK_OK(ingot_graph_sort(g));
  CHECK_OK(ingot_graph_infer_shapes(g));
  float* ref = NULL;
  int64_t numel = ingot_value_numel(&g->values[y]);
  if (!big_side) {
    void* out[1] = {NULL};
    CHECK_OK(ingot_lower_eval_node(NULL, g, find_op(g, INGOT_OP_CONV), out));
    ref = out[0];
  }
  int64_t ydims[5];
  memcpy(ydims, g->values[y].dims, sizeof(ydims));

  CHECK_OK(ingot_graph_optimize_with(g, ingot_lower_eval_node, NULL));
  uint32_t pad = find_op(g, INGOT_OP_PAD);
  conv = find_op(g, INGOT_OP_CONV);
  CHECK(conv != INGOT_NO_VALUE);
  if (conv == INGOT_NO_VALUE) goto done;
  uint32_t count = 0;
  const int64_t* np = ingot_node_attr_ints(&g->nodes[conv], "pads", &count);
  CHECK(np && count == (uint32_t)(2 * sp));
  bool zero = true;
  for (uint32_t i = 0; np && i < count; ++i) zero = zero && np[i] == 0;
  if (big_side) {
    CHECK(pad == INGOT_NO_VALUE);
    CHECK(!zero);
    goto done;
  }
  CHECK(zero);
  CHECK(pad != INGOT_NO_VALUE);
  if (pad == INGOT_NO_VALUE) goto done;
  /* The conv reads the Pad's output, whose shape is inferred. */
  uint32_t padded = g->nodes[pad].outputs[0];
  CHECK(g->nodes[conv].inputs[0] == padded);
  CHECK(g->values[padded].rank == rank);
  for (int32_t i = 0; i < sp; ++i) CHECK(g->values[padded].dims[2 + i] == xd[2 + i] + pads[i] + pads[sp + i]);
  uint32_t yy = g->nodes[conv].outputs[0];
  CHECK(memcmp(g->values[yy].dims, ydims, sizeof(int64_t) * (size_t)rank) == 0);
  /* Run Pad, make its output a weight, run the padless conv. */
  void* pout[1] = {NULL};
  CHECK_OK(ingot_lower_eval_node(NULL, g, pad, pout));
  g->values[padded].data = pout[0];
  g->values[padded].kind = INGOT_VALUE_WEIGHT;
  void* cout[1] = {NULL};
  CHECK_OK(ingot_lower_eval_node(NULL, g, conv, cout));
  if (cout[0] && ref) {
    const float* got = cout[0];
    double worst = 0;
    for (int64_t i = 0; i < numel; ++i) {
      double d = fabs((double)got[i] - (double)ref[i]);
      if (d > worst) worst = d;
    }
    CHECK(worst < 1e-4);
    if (worst >= 1e-4) fprintf(stderr, "  %dd conv: max abs difference %g\n", sp, worst);
  }
  free(cout[0]);
done:
  free(ref);
  free(g->inputs);
  free(g->outputs);
  g->inputs = g->outputs = NULL;
  ingot_graph_destroy(g);
}

int main(void) {
  /* 2-D, asymmetric pads, stride 2, groups. */
  run_case(2, 4, 6, 2, (const int64_t[]){7, 9}, (const int64_t[]){3, 3}, (const int64_t[]){1, 2, 0, 1},
           (const int64_t[]){2, 1}, 0);
  /* 2-D depthwise. */
  run_case(2, 3, 3, 3, (const int64_t[]){5, 6}, (const int64_t[]){3, 3}, (const int64_t[]){1, 1, 1, 1},
           (const int64_t[]){1, 1}, 0);
  /* 1-D and 3-D. */
  run_case(1, 2, 3, 1, (const int64_t[]){11}, (const int64_t[]){5}, (const int64_t[]){2, 3}, (const int64_t[]){1}, 0);
  run_case(3, 2, 2, 1, (const int64_t[]){4, 5, 3}, (const int64_t[]){3, 2, 3},
           (const int64_t[]){1, 0, 1, 1, 1, 2}, (const int64_t[]){1, 2, 1}, 0);
  /* Padded input over 64 MiB: left as is. */
  run_case(2, 1, 1, 1, NULL, (const int64_t[]){3, 3}, (const int64_t[]){1, 1, 1, 1}, (const int64_t[]){1, 1}, 4100);
  if (g_failures) {
    fprintf(stderr, "pad_conv_test: %d failure(s)\n", g_failures);
    return 1;
  }
  printf("pad_conv_test: all passed\n");
  return 0;
}
