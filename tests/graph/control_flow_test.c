/* Tests of graph/control_flow.c: If, Loop and Scan expanded by
 * ingot_graph_infer_and_fold, and ingot_graph_settle_guards, on graphs built
 * here (subgraphs with captured values, as the importer makes them). Each
 * check prints what failed; the program exits non-zero if any did. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "lower/lower.h" /* the constant-folding evaluator */

static int g_failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                            \
    }                                                                          \
  } while (0)

#define CHECK_OK(expr)                                                                                           \
  do {                                                                                                           \
    ingot_status_t s_ = (expr);                                                                                  \
    if (s_ != INGOT_OK) {                                                                                        \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, ingot_compiler_error());              \
      ++g_failures;                                                                                              \
    }                                                                                                            \
  } while (0)

#define CHECK_FAIL(expr, needle)                                                                                 \
  do {                                                                                                           \
    ingot_compiler_error_clear();                                                                                \
    ingot_status_t s_ = (expr);                                                                                  \
    if (s_ == INGOT_OK) {                                                                                        \
      fprintf(stderr, "%s:%d: %s succeeded, expected failure\n", __FILE__, __LINE__, #expr);                     \
      ++g_failures;                                                                                              \
    } else if (!strstr(ingot_compiler_error(), (needle))) {                                                      \
      fprintf(stderr, "%s:%d: %s: message '%s' lacks '%s'\n", __FILE__, __LINE__, #expr, ingot_compiler_error(), \
              (needle));                                                                                         \
      ++g_failures;                                                                                              \
    }                                                                                                            \
  } while (0)

/* ---- building graphs (inputs/outputs arrays in the arena) ---- */

static ingot_graph_t* new_graph(void) {
  ingot_graph_t* g = NULL;
  ingot_graph_create(&g);
  g->opset = 13;
  g->inputs = INGOT_ARENA_ARRAY(&g->arena, uint32_t, 16);
  g->outputs = INGOT_ARENA_ARRAY(&g->arena, uint32_t, 16);
  return g;
}

/* A subgraph owned by `owner`. */
static ingot_graph_t* new_body(ingot_graph_t* owner) {
  ingot_graph_t* b = new_graph();
  ingot_graph_adopt(owner, b);
  b->captures = INGOT_ARENA_ARRAY(&b->arena, uint32_t, 8);
  b->capture_slots = INGOT_ARENA_ARRAY(&b->arena, uint32_t, 8);
  return b;
}

static uint32_t typed(ingot_graph_t* g, const char* name, ingot_value_kind_t kind, ingot_dtype_t dtype, int32_t rank,
                      const int64_t* dims) {
  uint32_t id = ingot_graph_add_value(g, name, kind);
  ingot_value_t* v = &g->values[id];
  v->dtype = dtype;
  v->rank = rank;
  for (int32_t i = 0; i < rank; ++i) v->dims[i] = dims[i];
  return id;
}

static uint32_t input(ingot_graph_t* g, const char* name, ingot_dtype_t dtype, int32_t rank, const int64_t* dims) {
  uint32_t id = typed(g, name, INGOT_VALUE_INPUT, dtype, rank, dims);
  g->inputs[g->input_count++] = id;
  return id;
}

static uint32_t weight(ingot_graph_t* g, const char* name, ingot_dtype_t dtype, int32_t rank, const int64_t* dims,
                       const void* data) {
  uint32_t id = typed(g, name, INGOT_VALUE_WEIGHT, dtype, rank, dims);
  size_t bytes = ingot_value_bytes(&g->values[id]);
  g->values[id].data = malloc(bytes ? bytes : 1);
  memcpy(g->values[id].data, data, bytes);
  return id;
}

/* Value `name` of the enclosing graph read by body `b` through the node's
 * input `slot`. */
static uint32_t capture(ingot_graph_t* b, const char* name, uint32_t slot) {
  uint32_t id = ingot_graph_add_value(b, name, INGOT_VALUE_INPUT);
  b->captures[b->capture_count] = id;
  b->capture_slots[b->capture_count++] = slot;
  return id;
}

static void output(ingot_graph_t* g, uint32_t id) {
  g->values[id].is_output = true;
  g->outputs[g->output_count++] = id;
}

static uint32_t op1(ingot_graph_t* g, ingot_op_t op, const char* out_name, const uint32_t* ins, uint32_t n) {
  uint32_t out = ingot_graph_add_value(g, out_name, INGOT_VALUE_INTERMEDIATE);
  ingot_graph_add_node(g, op, out_name, ins, n, &out, 1);
  return out;
}

static void attach(ingot_graph_t* g, uint32_t node, const char* name, ingot_graph_t* body) {
  ingot_node_t* n = &g->nodes[node];
  ingot_attr_t* attrs = ingot_arena_alloc(&g->arena, sizeof(ingot_attr_t) * (n->attr_count + 1));
  if (n->attr_count) memcpy(attrs, n->attrs, sizeof(ingot_attr_t) * n->attr_count);
  memset(&attrs[n->attr_count], 0, sizeof(ingot_attr_t));
  attrs[n->attr_count].name = name;
  attrs[n->attr_count].type = INGOT_ATTR_GRAPH;
  attrs[n->attr_count].graph = body;
  n->attrs = attrs;
  n->attr_count++;
}

static uint32_t count_op(const ingot_graph_t* g, ingot_op_t op) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < g->node_count; ++i) n += !g->nodes[i].dead && g->nodes[i].op == op;
  return n;
}

static const ingot_node_t* find_op(const ingot_graph_t* g, ingot_op_t op) {
  for (uint32_t i = 0; i < g->node_count; ++i) {
    if (!g->nodes[i].dead && g->nodes[i].op == op) return &g->nodes[i];
  }
  return NULL;
}

/* y = If(cond) { Relu(x) } else { Neg(x) }, x read by name from the main
 * graph; cond a bool input (known: bound to `value` when bind >= 0). */
static ingot_graph_t* if_graph(int bind) {
  ingot_graph_t* g = new_graph();
  const int64_t d[1] = {4};
  uint32_t x = input(g, "x", INGOT_DTYPE_F32, 1, d);
  uint32_t cond = input(g, "cond", INGOT_DTYPE_BOOL, 0, NULL);
  uint32_t y = ingot_graph_add_value(g, "y", INGOT_VALUE_INTERMEDIATE);
  uint32_t ins[2] = {cond, x};
  uint32_t node = ingot_graph_add_node(g, INGOT_OP_IF, "if", ins, 2, &y, 1);
  ingot_graph_t* then_b = new_body(g);
  uint32_t xt = capture(then_b, "x", 1);
  output(then_b, op1(then_b, INGOT_OP_RELU, "r", &xt, 1));
  ingot_graph_t* else_b = new_body(g);
  uint32_t xe = capture(else_b, "x", 1);
  output(else_b, op1(else_b, INGOT_OP_NEG, "n", &xe, 1));
  attach(g, node, "then_branch", then_b);
  attach(g, node, "else_branch", else_b);
  output(g, y);
  if (bind >= 0) {
    uint8_t v = (uint8_t)bind;
    CHECK_OK(ingot_graph_bind_input(g, "cond", INGOT_DTYPE_BOOL, 0, NULL, &v));
  }
  return g;
}

static void test_if_known(void) {
  for (int value = 0; value <= 1; ++value) {
    ingot_graph_t* g = if_graph(value);
    CHECK_OK(ingot_graph_optimize_with(g, ingot_lower_eval_node, NULL));
    CHECK(count_op(g, INGOT_OP_IF) == 0);
    CHECK(count_op(g, INGOT_OP_RELU) == (uint32_t)value);
    CHECK(count_op(g, INGOT_OP_NEG) == (uint32_t)!value);
    CHECK(count_op(g, INGOT_OP_WHERE) == 0);
    CHECK(g->output_count == 1 && g->values[g->outputs[0]].rank == 1 && g->values[g->outputs[0]].dims[0] == 4);
    ingot_graph_destroy(g);
  }
}

static void test_if_at_run_time(void) {
  ingot_graph_t* g = if_graph(-1);
  CHECK_OK(ingot_graph_optimize_with(g, ingot_lower_eval_node, NULL));
  const ingot_node_t* relu = find_op(g, INGOT_OP_RELU);
  const ingot_node_t* neg = find_op(g, INGOT_OP_NEG);
  const ingot_node_t* where = find_op(g, INGOT_OP_WHERE);
  CHECK(relu && neg && where && count_op(g, INGOT_OP_IF) == 0);
  if (relu && neg && where) {
    uint32_t cond = ingot_graph_find_value(g, "cond");
    CHECK(relu->guard == cond + 1 && relu->guard_when);
    CHECK(neg->guard == cond + 1 && !neg->guard_when);
    CHECK(where->guard == 0 && where->inputs[0] == cond);
    CHECK(where->inputs[1] == relu->outputs[0] && where->inputs[2] == neg->outputs[0]);
  }
  /* A reader outside the branch: skipping Relu would leave it garbage. */
  if (relu) {
    uint32_t r = relu->outputs[0];
    uint32_t s = op1(g, INGOT_OP_SIGMOID, "s", &r, 1);
    output(g, s);
    CHECK_OK(ingot_graph_settle_guards(g));
    relu = find_op(g, INGOT_OP_RELU);
    neg = find_op(g, INGOT_OP_NEG);
    CHECK(relu && relu->guard == 0);
    CHECK(neg && neg->guard != 0);
  }
  ingot_graph_destroy(g);

  /* Branches of different shapes cannot share one plan. */
  g = if_graph(-1);
  ingot_graph_t* then_b = g->nodes[0].attrs[0].graph;
  uint32_t r = then_b->outputs[0];
  const int64_t two[1] = {2};
  uint32_t two_w = weight(then_b, "two", INGOT_DTYPE_I64, 1, (const int64_t[]){1}, two);
  uint32_t sl_ins[3] = {r, weight(then_b, "zero", INGOT_DTYPE_I64, 1, (const int64_t[]){1}, (const int64_t[]){0}),
                        two_w};
  then_b->values[r].is_output = false;
  then_b->outputs[0] = op1(then_b, INGOT_OP_SLICE, "head", sl_ins, 3);
  CHECK_FAIL(ingot_graph_optimize_with(g, ingot_lower_eval_node, NULL),
             "must give output 0 one dtype and shape (then: float32 [2], else: float32 [4])");
  ingot_graph_destroy(g);
}

/* acc, accs = Loop(M, true, acc0) { acc + x; cond passed on; acc as scan
 * output }, x a weight read by name: everything folds. */
static ingot_graph_t* loop_graph(int64_t trips, bool trips_known) {
  ingot_graph_t* g = new_graph();
  const int64_t d[1] = {2};
  const float xs[2] = {1.0f, 2.0f}, zeros[2] = {0, 0};
  const uint8_t yes = 1;
  uint32_t x = weight(g, "x", INGOT_DTYPE_F32, 1, d, xs);
  uint32_t m = trips_known ? weight(g, "M", INGOT_DTYPE_I64, 0, NULL, &trips) : input(g, "M", INGOT_DTYPE_I64, 0, NULL);
  uint32_t go = weight(g, "go", INGOT_DTYPE_BOOL, 0, NULL, &yes);
  uint32_t acc0 = weight(g, "acc0", INGOT_DTYPE_F32, 1, d, zeros);
  uint32_t outs[2] = {ingot_graph_add_value(g, "acc", INGOT_VALUE_INTERMEDIATE),
                      ingot_graph_add_value(g, "accs", INGOT_VALUE_INTERMEDIATE)};
  uint32_t ins[4] = {m, go, acc0, x};
  uint32_t node = ingot_graph_add_node(g, INGOT_OP_LOOP, "loop", ins, 4, outs, 2);
  ingot_graph_t* b = new_body(g);
  b->inputs[b->input_count++] = ingot_graph_add_value(b, "i", INGOT_VALUE_INPUT);
  b->inputs[b->input_count++] = ingot_graph_add_value(b, "c", INGOT_VALUE_INPUT);
  b->inputs[b->input_count++] = ingot_graph_add_value(b, "a", INGOT_VALUE_INPUT);
  uint32_t bx = capture(b, "x", 3);
  uint32_t add_ins[2] = {b->inputs[2], bx};
  uint32_t next = op1(b, INGOT_OP_ADD, "next", add_ins, 2);
  uint32_t c_out = op1(b, INGOT_OP_IDENTITY, "c_out", &b->inputs[1], 1);
  uint32_t scan = op1(b, INGOT_OP_IDENTITY, "scan", &next, 1);
  output(b, c_out);
  output(b, next);
  output(b, scan);
  attach(g, node, "body", b);
  output(g, outs[0]);
  output(g, outs[1]);
  return g;
}

static void test_loop(void) {
  ingot_graph_t* g = loop_graph(3, true);
  CHECK_OK(ingot_graph_optimize_with(g, ingot_lower_eval_node, NULL));
  CHECK(count_op(g, INGOT_OP_LOOP) == 0);
  const ingot_value_t* acc = &g->values[g->outputs[0]];
  const ingot_value_t* accs = &g->values[g->outputs[1]];
  CHECK(acc->rank == 1 && acc->dims[0] == 2);
  CHECK(accs->rank == 2 && accs->dims[0] == 3 && accs->dims[1] == 2);
  ingot_graph_destroy(g);

  g = loop_graph(0, false);
  CHECK_FAIL(ingot_graph_optimize_with(g, ingot_lower_eval_node, NULL),
             "node 'loop' (Loop): the trip count 'M' must be known at compile time");
  ingot_graph_destroy(g);

  g = loop_graph(1000000, true);
  CHECK_FAIL(ingot_graph_optimize_with(g, ingot_lower_eval_node, NULL), "node 'loop' (Loop): ");
  CHECK(strstr(ingot_compiler_error(), "more than") != NULL);
  ingot_graph_destroy(g);
}

/* Scan: running sum of the rows of xs [3, 2] from the back. */
static void test_scan(void) {
  ingot_graph_t* g = new_graph();
  const int64_t d2[2] = {3, 2}, d1[1] = {2};
  uint32_t xs = input(g, "xs", INGOT_DTYPE_F32, 2, d2);
  uint32_t s0 = weight(g, "s0", INGOT_DTYPE_F32, 1, d1, (const float[]){0, 0});
  uint32_t outs[2] = {ingot_graph_add_value(g, "sum", INGOT_VALUE_INTERMEDIATE),
                      ingot_graph_add_value(g, "sums", INGOT_VALUE_INTERMEDIATE)};
  uint32_t ins[2] = {s0, xs};
  uint32_t node = ingot_graph_add_node(g, INGOT_OP_SCAN, "scan", ins, 2, outs, 2);
  ingot_graph_t* b = new_body(g);
  b->inputs[b->input_count++] = ingot_graph_add_value(b, "s", INGOT_VALUE_INPUT);
  b->inputs[b->input_count++] = ingot_graph_add_value(b, "row", INGOT_VALUE_INPUT);
  uint32_t next = op1(b, INGOT_OP_ADD, "next", b->inputs, 2);
  output(b, next);
  output(b, op1(b, INGOT_OP_IDENTITY, "out", &next, 1));
  attach(g, node, "body", b);
  ingot_attr_t* attrs = ingot_arena_alloc(&g->arena, sizeof(ingot_attr_t) * 3);
  memcpy(attrs, g->nodes[node].attrs, sizeof(ingot_attr_t));
  memset(attrs + 1, 0, sizeof(ingot_attr_t) * 2);
  attrs[1].name = "num_scan_inputs";
  attrs[1].type = INGOT_ATTR_INT;
  attrs[1].i = 1;
  static int64_t backwards[1] = {1};
  attrs[2].name = "scan_input_directions";
  attrs[2].type = INGOT_ATTR_INTS;
  attrs[2].ints = backwards;
  attrs[2].count = 1;
  g->nodes[node].attrs = attrs;
  g->nodes[node].attr_count = 3;
  output(g, outs[0]);
  output(g, outs[1]);
  CHECK_OK(ingot_graph_optimize_with(g, ingot_lower_eval_node, NULL));
  CHECK(count_op(g, INGOT_OP_SCAN) == 0 && count_op(g, INGOT_OP_GATHER) == 3);
  const ingot_value_t* sums = &g->values[g->outputs[1]];
  CHECK(sums->rank == 2 && sums->dims[0] == 3 && sums->dims[1] == 2);
  ingot_graph_destroy(g);
}

int main(int argc, char** argv) {
  /* An argument runs one test (1..4), for a debugger or valgrind. */
  int only = argc > 1 ? atoi(argv[1]) : 0;
  if (!only || only == 1) test_if_known();
  if (!only || only == 2) test_if_at_run_time();
  if (!only || only == 3) test_loop();
  if (!only || only == 4) test_scan();
  if (g_failures) {
    fprintf(stderr, "%d check(s) failed\n", g_failures);
    return 1;
  }
  printf("control flow tests passed\n");
  return 0;
}
