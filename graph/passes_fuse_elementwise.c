/* Elementwise chains fused into one loop (ingot_graph_fuse_elementwise).
 *
 * A float32 elementwise node (or a float16 Add, Sub, Mul, Div, Max, Min or
 * Relu: graph->half_arith; a tree is one dtype, as its edges are) whose output has exactly one reader, itself a
 * fusable node of the same output shape, is folded into that reader; what
 * is left is a tree of such nodes below one root (the node whose output is
 * read elsewhere, twice, or is a graph output). A tree of two or more nodes
 * becomes one FusedElementwise node (domain ai.ingot): its inputs are the
 * tree's leaves (each value once), its attribute "program" a list of steps,
 * three ints each (opcode, operand a, operand b; an operand k < inputs is
 * input k, else the result of step k - inputs; b is -1 for one operand),
 * and "params" two floats a step (Clip's bounds, HardSigmoid's alpha and
 * beta, LeakyRelu's alpha). The last step is the output. lower/ then
 * computes each element of the output in one pass, the leaves read with
 * numpy broadcasting: a spelled-out HardSwish (Add 3, Clip, Mul, Div 6)
 * becomes one loop instead of four passes over memory.
 *
 * Runs after the producers' epilogue fusions (an activation or residual
 * that a conv or MatMul can take is taken there first) and after the
 * blocked layouts (it sees their 5-D shapes). */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph_internal.h"

#define FUSE_MAX_STEPS 32
#define FUSE_MAX_INPUTS 16

/* Whether node n can be a step, and its opcode and parameters. */
static bool fusable(const ingot_graph_t* graph, const ingot_node_t* n, int64_t* out_code, float* out_params) {
  if (n->dead || n->output_count != 1 || n->outputs[0] == INGOT_NO_VALUE) return false;
  const ingot_epilogue_t none = {0};
  if (memcmp(&n->epilogue, &none, sizeof(none)) != 0 || n->guard) return false;
  const ingot_value_t* y = &graph->values[n->outputs[0]];
  /* float16 nodes (graph->half_arith kept them: graph/passes_dtype.c) fuse
   * where their step is float16 arithmetic in the loop IR */
  bool f16 = y->dtype == INGOT_DTYPE_F16;
  if ((y->dtype != INGOT_DTYPE_F32 && !f16) || y->rank < 1) return false;
  if (f16 && n->op != INGOT_OP_ADD && n->op != INGOT_OP_SUB && n->op != INGOT_OP_MUL && n->op != INGOT_OP_DIV &&
      n->op != INGOT_OP_MAX && n->op != INGOT_OP_MIN && n->op != INGOT_OP_RELU)
    return false;
  for (uint32_t k = 0; k < n->input_count; ++k) {
    uint32_t v = n->inputs[k];
    if (v == INGOT_NO_VALUE || graph->values[v].dtype != y->dtype) return false;
  }
  out_params[0] = out_params[1] = 0.0f;
  switch (n->op) {
    case INGOT_OP_ADD: case INGOT_OP_SUB: case INGOT_OP_MUL: case INGOT_OP_DIV:
    case INGOT_OP_MAX: case INGOT_OP_MIN:
      if (n->input_count != 2) return false;
      if ((n->op == INGOT_OP_ADD || n->op == INGOT_OP_SUB || n->op == INGOT_OP_MUL || n->op == INGOT_OP_DIV) &&
          n->params.kind == INGOT_PARAMS_BINARY && n->params.u.binary.legacy_broadcast) {
        return false;
      }
      break;
    case INGOT_OP_RELU: case INGOT_OP_SIGMOID: case INGOT_OP_TANH: case INGOT_OP_HARDSWISH:
      if (n->input_count != 1) return false;
      break;
    case INGOT_OP_CLIP: {
      float lo, hi;
      if (!ingot_graph_clip_bounds_f32(graph, n, &lo, &hi)) return false;
      out_params[0] = lo;
      out_params[1] = hi;
      break;
    }
    case INGOT_OP_HARDSIGMOID:
      if (n->input_count != 1) return false;
      out_params[0] = ingot_node_attr_float(n, "alpha", 0.2f);
      out_params[1] = ingot_node_attr_float(n, "beta", 0.5f);
      break;
    case INGOT_OP_LEAKYRELU:
      if (n->input_count != 1) return false;
      out_params[0] = ingot_node_attr_float(n, "alpha", 0.01f);
      break;
    default:
      return false;
  }
  *out_code = (int64_t)n->op;
  return true;
}

/* The operands a step reads (Clip's bounds are parameters). */
static uint32_t step_operands(const ingot_node_t* n) { return n->op == INGOT_OP_CLIP ? 1 : n->input_count; }

typedef struct fuse_tree_t {
  uint32_t nodes[FUSE_MAX_STEPS]; /* in execution order once sorted */
  uint32_t count;
  bool too_big;
} fuse_tree_t;

/* Adds node `id` and, depth first, the producers it absorbs: fusable,
 * read once (by this tree), of the root's shape. */
static void collect(const ingot_graph_t* graph, const uint32_t* uses, uint32_t id, const ingot_value_t* root_y,
                    bool* taken, fuse_tree_t* t) {
  if (t->count == FUSE_MAX_STEPS) {
    t->too_big = true;
    return;
  }
  t->nodes[t->count++] = id;
  taken[id] = true;
  const ingot_node_t* n = &graph->nodes[id];
  for (uint32_t k = 0; k < step_operands(n); ++k) {
    uint32_t v = n->inputs[k];
    const ingot_value_t* val = &graph->values[v];
    if (val->producer == INGOT_NO_VALUE || val->is_output || uses[v] != 1 || taken[val->producer]) continue;
    int64_t code;
    float params[2];
    const ingot_node_t* p = &graph->nodes[val->producer];
    if (!fusable(graph, p, &code, params) || val->rank != root_y->rank) continue;
    bool same = true;
    for (int32_t d = 0; d < val->rank; ++d) same = same && val->dims[d] == root_y->dims[d];
    if (same) collect(graph, uses, val->producer, root_y, taken, t);
  }
}

static int cmp_u32(const void* a, const void* b) {
  uint32_t x = *(const uint32_t*)a, y = *(const uint32_t*)b;
  return x < y ? -1 : x > y;
}

ingot_status_t ingot_graph_fuse_elementwise(ingot_graph_t* graph) {
  ingot_status_t s = ingot_graph_sort(graph);
  if (s) return s;
  uint32_t* uses = ingot_graph_use_counts(graph);
  uint32_t node_count = graph->node_count;
  bool* taken = ingot_xcalloc(node_count ? node_count : 1, sizeof(bool));
  /* Roots from the end: a node is a root unless its one reader absorbs it. */
  for (uint32_t r = node_count; r-- > 0;) {
    int64_t code;
    float params[2];
    if (taken[r] || !fusable(graph, &graph->nodes[r], &code, params)) continue;
    const ingot_value_t* root_y = &graph->values[graph->nodes[r].outputs[0]];
    fuse_tree_t t = {{0}, 0, false};
    bool* scratch = ingot_xcalloc(node_count, sizeof(bool));
    memcpy(scratch, taken, node_count * sizeof(bool));
    collect(graph, uses, r, root_y, scratch, &t);
    if (t.too_big || t.count < 2) {
      free(scratch);
      continue;
    }
    qsort(t.nodes, t.count, sizeof(uint32_t), cmp_u32); /* sorted graph: execution order */
    /* The leaves: every operand not made inside the tree, each value once. */
    uint32_t inputs[FUSE_MAX_INPUTS];
    uint32_t input_count = 0;
    bool fits = true;
    int64_t program[3 * FUSE_MAX_STEPS];
    float fparams[2 * FUSE_MAX_STEPS];
    for (uint32_t i = 0; i < t.count && fits; ++i) {
      const ingot_node_t* n = &graph->nodes[t.nodes[i]];
      fusable(graph, n, &program[3 * i], &fparams[2 * i]);
      for (uint32_t k = 0; k < 2; ++k) {
        int64_t operand = -1;
        if (k < step_operands(n)) {
          uint32_t v = n->inputs[k];
          for (uint32_t j = 0; j < i && operand < 0; ++j)
            if (graph->nodes[t.nodes[j]].outputs[0] == v) operand = FUSE_MAX_INPUTS + j;
          for (uint32_t j = 0; j < input_count && operand < 0; ++j)
            if (inputs[j] == v) operand = j;
          if (operand < 0) {
            if (input_count == FUSE_MAX_INPUTS) {
              fits = false;
              break;
            }
            inputs[input_count] = v;
            operand = input_count++;
          }
        }
        program[3 * i + 1 + k] = operand;
      }
    }
    if (!fits) {
      free(scratch);
      continue;
    }
    /* Step results are numbered after the inputs. */
    for (uint32_t i = 0; i < 3 * t.count; ++i)
      if (i % 3 != 0 && program[i] >= FUSE_MAX_INPUTS) program[i] = program[i] - FUSE_MAX_INPUTS + input_count;
    memcpy(taken, scratch, node_count * sizeof(bool));
    free(scratch);
    uint32_t y = graph->nodes[r].outputs[0];
    const char* name = ingot_arena_printf(&graph->arena, "%s_fused%u", graph->nodes[r].name, t.count);
    uint32_t fn = ingot_graph_add_node(graph, INGOT_OP_FUSED_ELEMENTWISE, ingot_graph_unique_name(graph, name), inputs,
                                       input_count, &y, 1);
    ingot_graph_node_set_ints(graph, fn, "program", program, 3 * t.count);
    ingot_attr_t* a = ingot_graph_node_add_attr(graph, fn, "params", INGOT_ATTR_FLOATS);
    a->floats = INGOT_ARENA_ARRAY(&graph->arena, float, 2 * t.count);
    memcpy(a->floats, fparams, sizeof(float) * 2 * t.count);
    a->count = 2 * t.count;
    for (uint32_t i = 0; i < t.count; ++i) graph->nodes[t.nodes[i]].dead = true;
    graph->values[y].producer = fn;
  }
  free(taken);
  free(uses);
  return ingot_graph_sort(graph);
}
