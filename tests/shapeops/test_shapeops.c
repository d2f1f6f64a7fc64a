/* Shape and data-movement ops and the passes real exports need:
 * - shape arithmetic folded in the one infer-and-fold walk (Shape -> Gather
 *   -> Unsqueeze -> Concat -> Reshape, Shape -> Slice -> ConstantOfShape /
 *   Expand, Size -> Range, Tile repeats from constants, an empty Slice into a
 *   Concat), through the lowering evaluator (ingot_lower_eval_node);
 * - Identity / Dropout removal, -1 / 0 in Reshape targets;
 * - op semantics on the IR interpreter with hand-computed expectations: run-time
 *   Gather indices (negative, out of range: clamped), Pad reflect/edge/wrap
 *   beyond the input size, ScatterND with duplicate indices, ScatterElements,
 *   Resize nearest and linear, DepthToSpace, Trilu with a run-time k, int64 and
 *   bool data. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "lower/ir.h"
#include "lower/lower.h"

static int g_failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                            \
    }                                                                          \
  } while (0)

#define CHECK_OK(expr)                                                                              \
  do {                                                                                              \
    ingot_status_t s_ = (expr);                                                                     \
    if (s_ != INGOT_OK) {                                                                           \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, ingot_compiler_error()); \
      ++g_failures;                                                                                 \
    }                                                                                               \
  } while (0)

/* ---- graph building ---- */

static ingot_graph_t* new_graph(int64_t opset) {
  ingot_graph_t* g = NULL;
  ingot_graph_create(&g);
  g->opset = opset;
  return g;
}

static void set_shape(ingot_value_t* v, ingot_dtype_t t, int32_t rank, const int64_t* dims) {
  v->dtype = t;
  v->rank = rank;
  for (int32_t i = 0; i < rank; ++i) v->dims[i] = dims[i];
}

static uint32_t input(ingot_graph_t* g, const char* name, ingot_dtype_t t, int32_t rank, const int64_t* dims) {
  uint32_t v = ingot_graph_add_value(g, name, INGOT_VALUE_INPUT);
  set_shape(&g->values[v], t, rank, dims);
  uint32_t* ins = INGOT_ARENA_ARRAY(&g->arena, uint32_t, g->input_count + 1);
  if (g->input_count) memcpy(ins, g->inputs, sizeof(uint32_t) * g->input_count);
  ins[g->input_count++] = v;
  g->inputs = ins;
  return v;
}

static uint32_t weight(ingot_graph_t* g, const char* name, ingot_dtype_t t, int32_t rank, const int64_t* dims,
                       const void* data) {
  uint32_t v = ingot_graph_add_value(g, name, INGOT_VALUE_WEIGHT);
  set_shape(&g->values[v], t, rank, dims);
  size_t bytes = (size_t)ingot_value_bytes(&g->values[v]);
  g->values[v].data = malloc(bytes ? bytes : 1);
  if (bytes) memcpy(g->values[v].data, data, bytes);
  return v;
}

static uint32_t ints(ingot_graph_t* g, const char* name, int64_t n, const int64_t* v) {
  return weight(g, name, INGOT_DTYPE_I64, 1, &n, v);
}

static uint32_t scalar_i64(ingot_graph_t* g, const char* name, int64_t v) {
  return weight(g, name, INGOT_DTYPE_I64, 0, NULL, &v);
}

static uint32_t value(ingot_graph_t* g, const char* name) { return ingot_graph_add_value(g, name, INGOT_VALUE_INTERMEDIATE); }

static uint32_t node(ingot_graph_t* g, ingot_op_t op, const char* name, const uint32_t* in, uint32_t n_in, uint32_t out) {
  return ingot_graph_add_node(g, op, name, in, n_in, &out, 1);
}

static void mark_output(ingot_graph_t* g, uint32_t v) {
  uint32_t* outs = INGOT_ARENA_ARRAY(&g->arena, uint32_t, g->output_count + 1);
  if (g->output_count) memcpy(outs, g->outputs, sizeof(uint32_t) * g->output_count);
  outs[g->output_count++] = v;
  g->outputs = outs;
  g->values[v].is_output = true;
}

static void attr_int(ingot_graph_t* g, uint32_t n, const char* name, int64_t v) {
  ingot_attr_t* a = NULL;
  ingot_node_t* nd = &g->nodes[n];
  ingot_attr_t* attrs = INGOT_ARENA_ARRAY(&g->arena, ingot_attr_t, nd->attr_count + 1);
  if (nd->attr_count) memcpy(attrs, nd->attrs, sizeof(ingot_attr_t) * nd->attr_count);
  nd->attrs = attrs;
  a = &attrs[nd->attr_count++];
  a->name = name;
  a->type = INGOT_ATTR_INT;
  a->i = v;
}

static void attr_str(ingot_graph_t* g, uint32_t n, const char* name, const char* v) {
  ingot_node_t* nd = &g->nodes[n];
  ingot_attr_t* attrs = INGOT_ARENA_ARRAY(&g->arena, ingot_attr_t, nd->attr_count + 1);
  if (nd->attr_count) memcpy(attrs, nd->attrs, sizeof(ingot_attr_t) * nd->attr_count);
  nd->attrs = attrs;
  ingot_attr_t* a = &attrs[nd->attr_count++];
  a->name = name;
  a->type = INGOT_ATTR_STRING;
  a->s = v;
}

static ingot_status_t optimize(ingot_graph_t* g) { return ingot_graph_optimize_with(g, ingot_lower_eval_node, NULL); }

static const ingot_value_t* find(const ingot_graph_t* g, const char* name) {
  uint32_t v = ingot_graph_find_value(g, name);
  return v == INGOT_NO_VALUE ? NULL : &g->values[v];
}

static bool dims_are(const ingot_value_t* v, int32_t rank, const int64_t* dims) {
  if (!v || v->rank != rank) return false;
  for (int32_t i = 0; i < rank; ++i) {
    if (v->dims[i] != dims[i]) return false;
  }
  return true;
}

/* ---- a tiny executor: lowers, runs every kernel on the interpreter ---- */

typedef struct run_t {
  ingot_lowered_t* lowered;
  void** data; /* per value */
} run_t;

static uint32_t root_of(const ingot_lowered_t* l, uint32_t v) {
  while (v < l->value_count && l->alias_of[v] != INGOT_NO_VALUE) v = l->alias_of[v];
  return v;
}

/* inputs[i] feeds graph input i. False (and a failure counted) on error. */
static bool execute(ingot_graph_t* g, void* const* inputs, run_t* r) {
  memset(r, 0, sizeof(*r));
  if (ingot_lower_graph(g, &r->lowered) != INGOT_OK) {
    fprintf(stderr, "lowering failed: %s\n", ingot_compiler_error());
    ++g_failures;
    return false;
  }
  r->data = calloc(g->value_count + 1, sizeof(void*));
  for (uint32_t i = 0; i < g->input_count; ++i) r->data[g->inputs[i]] = inputs[i];
  for (uint32_t v = 0; v < g->value_count; ++v) {
    const ingot_value_t* val = &g->values[v];
    if (val->kind == INGOT_VALUE_WEIGHT) r->data[v] = val->data;
    else if (val->kind == INGOT_VALUE_INTERMEDIATE && r->lowered->alias_of[v] == INGOT_NO_VALUE && val->rank >= 0)
      r->data[v] = calloc(1, (size_t)ingot_value_bytes(val) + 8);
  }
  for (uint32_t v = 0; v < g->value_count; ++v) {
    if (r->lowered->alias_of[v] != INGOT_NO_VALUE) r->data[v] = r->data[root_of(r->lowered, v)];
  }
  for (uint32_t k = 0; k < r->lowered->kernel_count; ++k) {
    const ingot_kernel_t* kn = &r->lowered->kernels[k];
    void* args[64];
    for (uint32_t b = 0; b < kn->arg_count; ++b) args[b] = r->data[kn->args[b]];
    if (ingot_ir_interpret(kn->func, args) != INGOT_OK) {
      fprintf(stderr, "kernel %s failed: %s\n", kn->func->name, ingot_compiler_error());
      ++g_failures;
      return false;
    }
  }
  return true;
}

static void release(ingot_graph_t* g, run_t* r) {
  if (r->data && r->lowered) {
    for (uint32_t v = 0; v < g->value_count; ++v) {
      if (g->values[v].kind == INGOT_VALUE_INTERMEDIATE && r->lowered->alias_of[v] == INGOT_NO_VALUE) free(r->data[v]);
    }
  }
  free(r->data);
  ingot_lowered_destroy(r->lowered);
}

static void check_f32(const char* what, const float* got, const float* want, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (fabsf(got[i] - want[i]) > 1e-5f * (1.0f + fabsf(want[i]))) {
      fprintf(stderr, "%s: [%lld] got %g want %g\n", what, (long long)i, (double)got[i], (double)want[i]);
      ++g_failures;
      return;
    }
  }
}

static void check_i64(const char* what, const int64_t* got, const int64_t* want, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (got[i] != want[i]) {
      fprintf(stderr, "%s: [%lld] got %lld want %lld\n", what, (long long)i, (long long)got[i], (long long)want[i]);
      ++g_failures;
      return;
    }
  }
}

/* ---- folding ---- */

/* x[2,3,4] -> Shape -> Gather(0) -> Unsqueeze -> Concat(., [-1]) -> Reshape:
 * everything but the Reshape folds, and the target is [2, 12]. The same
 * again with Identity and Dropout in the way, which are removed. */
static void test_fold_reshape_chain(void) {
  ingot_graph_t* g = new_graph(17);
  int64_t xd[] = {2, 3, 4};
  uint32_t x = input(g, "x", INGOT_DTYPE_F32, 3, xd);
  uint32_t xi = value(g, "xi"), xd2 = value(g, "xd2");
  node(g, INGOT_OP_IDENTITY, "id", &x, 1, xi);
  node(g, INGOT_OP_DROPOUT, "drop", &xi, 1, xd2);
  uint32_t s = value(g, "s"), b = value(g, "b"), bu = value(g, "bu"), shape = value(g, "shape"), y = value(g, "y");
  node(g, INGOT_OP_SHAPE, "shape_of", &xd2, 1, s);
  uint32_t gin[] = {s, scalar_i64(g, "zero", 0)};
  node(g, INGOT_OP_GATHER, "gather", gin, 2, b);
  int64_t ax0[] = {0}, m1[] = {-1};
  uint32_t uin[] = {b, ints(g, "axes", 1, ax0)};
  node(g, INGOT_OP_UNSQUEEZE, "unsq", uin, 2, bu);
  uint32_t cin[] = {bu, ints(g, "minus1", 1, m1)};
  attr_int(g, node(g, INGOT_OP_CONCAT, "cat", cin, 2, shape), "axis", 0);
  uint32_t rin[] = {xd2, shape};
  node(g, INGOT_OP_RESHAPE, "reshape", rin, 2, y);
  mark_output(g, y);
  CHECK_OK(optimize(g));
  CHECK(g->node_count == 1 && g->nodes[0].op == INGOT_OP_RESHAPE);
  int64_t want[] = {2, 12};
  CHECK(dims_are(find(g, "y"), 2, want));
  const ingot_value_t* sv = find(g, "shape");
  CHECK(sv && sv->kind == INGOT_VALUE_WEIGHT && sv->data);
  if (sv && sv->data) check_i64("reshape target", sv->data, (int64_t[]){2, -1}, 2);
  ingot_graph_destroy(g);
}

/* The PyTorch export form: x[2,6,4]; h = Shape(x)[1] / 2 * 1; Reshape(x,
 * Concat(Unsqueeze(Shape(x)[0]), Unsqueeze(h), [-1])) -> [2, 3, 8]. The int64
 * arithmetic folds through the lowering of Div and Mul. */
static void test_fold_arithmetic_chain(void) {
  ingot_graph_t* g = new_graph(17);
  int64_t xd[] = {2, 6, 4};
  uint32_t x = input(g, "x", INGOT_DTYPE_F32, 3, xd);
  uint32_t s = value(g, "s"), b = value(g, "b"), h = value(g, "h"), h2 = value(g, "h2"), h3 = value(g, "h3");
  uint32_t bu = value(g, "bu"), hu = value(g, "hu"), shape = value(g, "shape"), y = value(g, "y");
  node(g, INGOT_OP_SHAPE, "shape_of", &x, 1, s);
  uint32_t g0[] = {s, scalar_i64(g, "i0", 0)}, g1[] = {s, scalar_i64(g, "i1", 1)};
  node(g, INGOT_OP_GATHER, "g0", g0, 2, b);
  node(g, INGOT_OP_GATHER, "g1", g1, 2, h);
  uint32_t din[] = {h, scalar_i64(g, "two", 2)}, min[] = {h2, scalar_i64(g, "one", 1)};
  node(g, INGOT_OP_DIV, "div", din, 2, h2);
  node(g, INGOT_OP_MUL, "mul", min, 2, h3);
  int64_t ax0[] = {0}, m1[] = {-1};
  uint32_t axes = ints(g, "axes", 1, ax0);
  uint32_t u0[] = {b, axes}, u1[] = {h3, axes};
  node(g, INGOT_OP_UNSQUEEZE, "u0", u0, 2, bu);
  node(g, INGOT_OP_UNSQUEEZE, "u1", u1, 2, hu);
  uint32_t cin[] = {bu, hu, ints(g, "m1", 1, m1)};
  attr_int(g, node(g, INGOT_OP_CONCAT, "cat", cin, 3, shape), "axis", 0);
  uint32_t rin[] = {x, shape};
  node(g, INGOT_OP_RESHAPE, "reshape", rin, 2, y);
  mark_output(g, y);
  ingot_status_t st = optimize(g);
  if (st != INGOT_OK && strstr(ingot_compiler_error(), "int64 is not supported")) {
    /* int64 Div/Mul not lowered in this build: the reason is named. */
    CHECK(strstr(ingot_compiler_error(), "could not be computed at compile time") != NULL);
  } else {
    CHECK_OK(st);
    CHECK(g->node_count == 1);
    int64_t want[] = {2, 3, 8};
    CHECK(dims_are(find(g, "y"), 3, want));
  }
  ingot_graph_destroy(g);
}

/* z[3,4]: Shape(z) -> Slice [1:] -> ConstantOfShape(7) -> c[4];
 * Expand(x[1,1], Shape(z)) -> e[3,4]; Range(0, Size(z), 2) -> r[6];
 * Tile(c, Concat([2], [])) -> [8] where the second piece is an empty Slice. */
static void test_fold_shape_consumers(void) {
  ingot_graph_t* g = new_graph(17);
  int64_t zd[] = {3, 4}, xd[] = {1, 1};
  uint32_t z = input(g, "z", INGOT_DTYPE_F32, 2, zd);
  uint32_t x = input(g, "x", INGOT_DTYPE_F32, 2, xd);
  uint32_t sz = value(g, "sz"), tail = value(g, "tail"), c = value(g, "c"), e = value(g, "e");
  node(g, INGOT_OP_SHAPE, "shape_z", &z, 1, sz);
  int64_t one[] = {1}, big[] = {100}, zero[] = {0};
  uint32_t slin[] = {sz, ints(g, "st", 1, one), ints(g, "en", 1, big)};
  node(g, INGOT_OP_SLICE, "slice", slin, 3, tail);
  uint32_t cos = node(g, INGOT_OP_CONSTANTOFSHAPE, "cos", &tail, 1, c);
  int64_t seven = 7;
  uint32_t tv = weight(g, "seven", INGOT_DTYPE_I64, 1, one, &seven);
  ingot_attr_t* va = NULL;
  {
    ingot_node_t* nd = &g->nodes[cos];
    nd->attrs = INGOT_ARENA_ARRAY(&g->arena, ingot_attr_t, 1);
    nd->attr_count = 1;
    va = &nd->attrs[0];
    va->name = "value";
    va->type = INGOT_ATTR_TENSOR;
    va->tensor = tv;
  }
  uint32_t ein[] = {x, sz};
  node(g, INGOT_OP_EXPAND, "expand", ein, 2, e);
  uint32_t n = value(g, "n"), r = value(g, "r");
  node(g, INGOT_OP_SIZE, "size", &z, 1, n);
  uint32_t rin[] = {scalar_i64(g, "r0", 0), n, scalar_i64(g, "r2", 2)};
  node(g, INGOT_OP_RANGE, "range", rin, 3, r);
  uint32_t empty = value(g, "empty"), reps = value(g, "reps"), t = value(g, "t");
  uint32_t ein2[] = {sz, ints(g, "st0", 1, zero), ints(g, "en0", 1, zero)};
  node(g, INGOT_OP_SLICE, "slice_empty", ein2, 3, empty);
  int64_t two[] = {2};
  uint32_t cin[] = {ints(g, "two", 1, two), empty};
  attr_int(g, node(g, INGOT_OP_CONCAT, "cat", cin, 2, reps), "axis", 0);
  uint32_t tin[] = {c, reps};
  node(g, INGOT_OP_TILE, "tile", tin, 2, t);
  mark_output(g, e);
  mark_output(g, r);
  mark_output(g, t);
  CHECK_OK(optimize(g));
  int64_t ed[] = {3, 4}, rd[] = {6}, td[] = {8};
  CHECK(dims_are(find(g, "e"), 2, ed));
  CHECK(dims_are(find(g, "r"), 1, rd));
  CHECK(dims_are(find(g, "t"), 1, td));
  const ingot_value_t* cv = find(g, "c");
  CHECK(cv && cv->kind == INGOT_VALUE_WEIGHT && cv->dtype == INGOT_DTYPE_I64 && cv->rank == 1 && cv->dims[0] == 4);
  /* Graph outputs stay computed: Expand, Range, Tile. */
  CHECK(g->node_count == 3);
  float xv = 2.5f;
  void* ins[] = {NULL, &xv};
  float zv[12] = {0};
  ins[0] = zv;
  run_t run;
  if (execute(g, ins, &run)) {
    float ew[12];
    for (int i = 0; i < 12; ++i) ew[i] = 2.5f;
    check_f32("expand", run.data[ingot_graph_find_value(g, "e")], ew, 12);
    check_i64("range", run.data[ingot_graph_find_value(g, "r")], (int64_t[]){0, 2, 4, 6, 8, 10}, 6);
    check_i64("tile", run.data[ingot_graph_find_value(g, "t")], (int64_t[]){7, 7, 7, 7, 7, 7, 7, 7}, 8);
  }
  release(g, &run);
  ingot_graph_destroy(g);
}

/* Reshape targets with 0 (copy) and -1 (infer), and allowzero. */
static void test_reshape_targets(void) {
  struct {
    int64_t target[3];
    int32_t n;
    bool allowzero;
    int64_t want[3];
    int32_t rank;
    bool ok;
  } cases[] = {
      {{0, -1}, 2, false, {2, 12}, 2, true},
      {{-1, 0, 4}, 3, false, {2, 3, 4}, 3, true},
      {{0, 0, -1}, 3, false, {2, 3, 4}, 3, true},
      {{4, 0, -1}, 3, true, {0}, 0, false}, /* allowzero: 0 is a real 0, -1 cannot be inferred */
      {{-1, -1}, 2, false, {0}, 0, false},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    ingot_graph_t* g = new_graph(17);
    int64_t xd[] = {2, 3, 4};
    uint32_t x = input(g, "x", INGOT_DTYPE_F32, 3, xd);
    uint32_t y = value(g, "y");
    uint32_t in[] = {x, ints(g, "shape", cases[i].n, cases[i].target)};
    uint32_t nd = node(g, INGOT_OP_RESHAPE, "reshape", in, 2, y);
    if (cases[i].allowzero) attr_int(g, nd, "allowzero", 1);
    mark_output(g, y);
    ingot_status_t s = optimize(g);
    if (cases[i].ok) {
      CHECK(s == INGOT_OK && dims_are(find(g, "y"), cases[i].rank, cases[i].want));
    } else {
      CHECK(s != INGOT_OK);
    }
    ingot_graph_destroy(g);
  }
}

/* A Reshape whose target is a graph input is refused with a message that
 * says it must be known at compile time. */
static void test_refuse_runtime_shape(void) {
  ingot_graph_t* g = new_graph(17);
  int64_t xd[] = {2, 3}, sd[] = {2};
  uint32_t x = input(g, "x", INGOT_DTYPE_F32, 2, xd);
  uint32_t s = input(g, "s", INGOT_DTYPE_I64, 1, sd);
  uint32_t y = value(g, "y");
  uint32_t in[] = {x, s};
  node(g, INGOT_OP_RESHAPE, "reshape", in, 2, y);
  mark_output(g, y);
  CHECK(optimize(g) != INGOT_OK);
  CHECK(strstr(ingot_compiler_error(), "must be known at compile time") != NULL);
  CHECK(strstr(ingot_compiler_error(), "graph input") != NULL);
  ingot_graph_destroy(g);
  /* Bound to a constant at compile time, the same model compiles. */
  g = new_graph(17);
  x = input(g, "x", INGOT_DTYPE_F32, 2, xd);
  s = input(g, "s", INGOT_DTYPE_I64, 1, sd);
  y = value(g, "y");
  uint32_t in2[] = {x, s};
  node(g, INGOT_OP_RESHAPE, "reshape", in2, 2, y);
  mark_output(g, y);
  int64_t target[] = {3, -1};
  CHECK(ingot_graph_bind_input(g, "s", INGOT_DTYPE_I32, 1, sd, target) != INGOT_OK); /* wrong dtype */
  CHECK(ingot_graph_bind_input(g, "nope", INGOT_DTYPE_I64, 1, sd, target) != INGOT_OK);
  CHECK_OK(ingot_graph_bind_input(g, "s", INGOT_DTYPE_I64, 1, sd, target));
  CHECK(g->input_count == 1);
  CHECK_OK(optimize(g));
  int64_t want[] = {3, 2};
  CHECK(dims_are(find(g, "y"), 2, want));
  ingot_graph_destroy(g);
}

/* ---- op semantics on the interpreter ---- */

/* Gather with run-time indices: negative ones count from the end, out of
 * range ones are clamped (documented: bad input, never an out-of-bounds load). */
static void test_gather_runtime_indices(void) {
  ingot_graph_t* g = new_graph(17);
  int64_t xd[] = {3, 2}, id[] = {5};
  uint32_t x = input(g, "x", INGOT_DTYPE_I64, 2, xd);
  uint32_t idx = input(g, "idx", INGOT_DTYPE_I32, 1, id);
  uint32_t y = value(g, "y");
  uint32_t in[] = {x, idx};
  node(g, INGOT_OP_GATHER, "gather", in, 2, y);
  mark_output(g, y);
  CHECK_OK(optimize(g));
  int64_t xv[] = {10, 11, 20, 21, 30, 31};
  int32_t iv[] = {-1, 5, -7, 1, 0};
  void* ins[] = {xv, iv};
  run_t run;
  if (execute(g, ins, &run)) {
    int64_t want[] = {30, 31, 30, 31, 10, 11, 20, 21, 10, 11};
    check_i64("gather", run.data[ingot_graph_find_value(g, "y")], want, 10);
  }
  release(g, &run);
  ingot_graph_destroy(g);
}

/* Pad on x = [1, 2, 3] with pads (5, 4) in each mode (numpy's np.pad). */
static void test_pad_modes(void) {
  static const char* const kModes[] = {"reflect", "edge", "wrap", "constant"};
  static const float kWant[4][12] = {
      {2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3},
      {1, 1, 1, 1, 1, 1, 2, 3, 3, 3, 3, 3},
      {2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1},
      {9, 9, 9, 9, 9, 1, 2, 3, 9, 9, 9, 9},
  };
  for (int m = 0; m < 4; ++m) {
    ingot_graph_t* g = new_graph(18);
    int64_t xd[] = {3};
    uint32_t x = input(g, "x", INGOT_DTYPE_F32, 1, xd);
    int64_t pads[] = {5, 4};
    float nine = 9.0f;
    uint32_t cv = weight(g, "cv", INGOT_DTYPE_F32, 0, NULL, &nine);
    uint32_t y = value(g, "y");
    uint32_t in[] = {x, ints(g, "pads", 2, pads), cv};
    attr_str(g, node(g, INGOT_OP_PAD, "pad", in, 3, y), "mode", kModes[m]);
    mark_output(g, y);
    CHECK_OK(optimize(g));
    float xv[] = {1, 2, 3};
    void* ins[] = {xv};
    run_t run;
    if (execute(g, ins, &run)) check_f32(kModes[m], run.data[ingot_graph_find_value(g, "y")], kWant[m], 12);
    release(g, &run);
    ingot_graph_destroy(g);
  }
}

/* ScatterND with duplicate indices: "add" accumulates, "none" keeps the last. */
static void test_scatter(void) {
  for (int add = 0; add < 2; ++add) {
    ingot_graph_t* g = new_graph(18);
    int64_t xd[] = {4}, id[] = {3, 1}, ud[] = {3};
    uint32_t x = input(g, "x", INGOT_DTYPE_F32, 1, xd);
    uint32_t idx = input(g, "idx", INGOT_DTYPE_I64, 2, id);
    uint32_t upd = input(g, "upd", INGOT_DTYPE_F32, 1, ud);
    uint32_t y = value(g, "y");
    uint32_t in[] = {x, idx, upd};
    uint32_t nd = node(g, INGOT_OP_SCATTERND, "scatter", in, 3, y);
    if (add) attr_str(g, nd, "reduction", "add");
    mark_output(g, y);
    CHECK_OK(optimize(g));
    float xv[] = {1, 2, 3, 4}, uv[] = {10, 20, 30};
    int64_t iv[] = {1, -3, 3};
    void* ins[] = {xv, iv, uv};
    run_t run;
    if (execute(g, ins, &run)) {
      float want_none[] = {1, 20, 3, 30}, want_add[] = {1, 32, 3, 34};
      check_f32(add ? "scatternd add" : "scatternd none", run.data[ingot_graph_find_value(g, "y")],
                add ? want_add : want_none, 4);
    }
    release(g, &run);
    ingot_graph_destroy(g);
  }
  /* ScatterElements on bool data along axis 1. */
  ingot_graph_t* g = new_graph(18);
  int64_t xd[] = {2, 3}, id[] = {2, 1};
  uint32_t x = input(g, "x", INGOT_DTYPE_BOOL, 2, xd);
  uint32_t idx = input(g, "idx", INGOT_DTYPE_I64, 2, id);
  uint32_t upd = input(g, "upd", INGOT_DTYPE_BOOL, 2, id);
  uint32_t y = value(g, "y");
  uint32_t in[] = {x, idx, upd};
  attr_int(g, node(g, INGOT_OP_SCATTERELEMENTS, "scatter", in, 3, y), "axis", 1);
  mark_output(g, y);
  CHECK_OK(optimize(g));
  uint8_t xv[] = {0, 0, 0, 1, 1, 1}, uv[] = {1, 0};
  int64_t iv[] = {2, -1};
  void* ins[] = {xv, iv, uv};
  run_t run;
  if (execute(g, ins, &run)) {
    const uint8_t* got = run.data[ingot_graph_find_value(g, "y")];
    uint8_t want[] = {0, 0, 1, 1, 1, 0};
    CHECK(memcmp(got, want, 6) == 0);
  }
  release(g, &run);
  ingot_graph_destroy(g);
}

/* Resize [1,1,2,2] -> [1,1,4,4]: nearest (asymmetric, floor) and linear
 * (half_pixel), against hand-computed values. */
static void test_resize(void) {
  for (int linear = 0; linear < 2; ++linear) {
    ingot_graph_t* g = new_graph(19);
    int64_t xd[] = {1, 1, 2, 2}, sd[] = {4};
    uint32_t x = input(g, "x", INGOT_DTYPE_F32, 4, xd);
    float sc[] = {1, 1, 2, 2};
    uint32_t scales = weight(g, "scales", INGOT_DTYPE_F32, 1, sd, sc);
    uint32_t y = value(g, "y");
    uint32_t in[] = {x, INGOT_NO_VALUE, scales};
    uint32_t nd = node(g, INGOT_OP_RESIZE, "resize", in, 3, y);
    if (linear) {
      attr_str(g, nd, "mode", "linear");
    } else {
      attr_str(g, nd, "coordinate_transformation_mode", "asymmetric");
      attr_str(g, nd, "nearest_mode", "floor");
    }
    mark_output(g, y);
    CHECK_OK(optimize(g));
    float xv[] = {1, 2, 3, 4};
    void* ins[] = {xv};
    run_t run;
    if (execute(g, ins, &run)) {
      float nearest[] = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
      /* half_pixel 2x: coordinates -0.25, 0.25, 0.75, 1.25 -> weights clamp at the edges */
      float row0[] = {1, 1.25f, 1.75f, 2}, rows[4] = {0, 0.25f, 0.75f, 1};
      float lin[16];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) lin[i * 4 + j] = row0[j] + 2.0f * rows[i];
      check_f32(linear ? "resize linear" : "resize nearest", run.data[ingot_graph_find_value(g, "y")],
                linear ? lin : nearest, 16);
    }
    release(g, &run);
    ingot_graph_destroy(g);
  }
}

/* DepthToSpace (DCR) and Trilu (lower, run-time k = -1) on int64 data. */
static void test_depth_to_space_trilu(void) {
  ingot_graph_t* g = new_graph(14);
  int64_t xd[] = {1, 4, 1, 1}, td[] = {3, 3}, kd[] = {1};
  uint32_t x = input(g, "x", INGOT_DTYPE_I64, 4, xd);
  uint32_t t = input(g, "t", INGOT_DTYPE_I64, 2, td);
  uint32_t k = input(g, "k", INGOT_DTYPE_I64, 1, kd);
  uint32_t y = value(g, "y"), z = value(g, "z");
  attr_int(g, node(g, INGOT_OP_DEPTHTOSPACE, "d2s", &x, 1, y), "blocksize", 2);
  uint32_t tin[] = {t, k};
  attr_int(g, node(g, INGOT_OP_TRILU, "trilu", tin, 2, z), "upper", 0);
  mark_output(g, y);
  mark_output(g, z);
  CHECK_OK(optimize(g));
  int64_t xv[] = {1, 2, 3, 4}, tv[] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, kv[] = {-1};
  void* ins[] = {xv, tv, kv};
  run_t run;
  if (execute(g, ins, &run)) {
    check_i64("depth_to_space", run.data[ingot_graph_find_value(g, "y")], (int64_t[]){1, 2, 3, 4}, 4);
    check_i64("trilu", run.data[ingot_graph_find_value(g, "z")], (int64_t[]){0, 0, 0, 4, 0, 0, 7, 8, 0}, 9);
  }
  release(g, &run);
  ingot_graph_destroy(g);
}

int main(void) {
  test_fold_reshape_chain();
  test_fold_arithmetic_chain();
  test_fold_shape_consumers();
  test_reshape_targets();
  test_refuse_runtime_shape();
  test_gather_runtime_indices();
  test_pad_modes();
  test_scatter();
  test_resize();
  test_depth_to_space_trilu();
  if (g_failures) {
    fprintf(stderr, "shapeops: %d failure(s)\n", g_failures);
    return 1;
  }
  printf("shapeops: all passed\n");
  return 0;
}
