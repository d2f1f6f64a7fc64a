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
 * Per-tensor QuantizeLinear and DequantizeLinear with constant scales and
 * zero points (uint8, int8) are steps too, their scale and zero point the
 * parameters, and attribute "qtypes" (one int a step, present only then)
 * their quantized dtype: the float ops a QDQ graph keeps between its
 * DequantizeLinear and QuantizeLinear (a HardSwish as Add, Clip, Mul, Div,
 * each quantized) become one loop from bytes to bytes, computing what the
 * nodes one by one compute. Such a tree's leaves may be bytes (read by its
 * DequantizeLinear steps) and its output bytes (a QuantizeLinear root); in a
 * tree that quantizes, no product is fused into an Add or Sub (see
 * collect()).
 *
 * Runs after the producers' epilogue fusions (an activation or residual
 * that a conv or MatMul can take is taken there first) and after the
 * blocked layouts (it sees their 5-D shapes). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph_internal.h"

#define FUSE_MAX_STEPS 32
#define FUSE_MAX_INPUTS 16

/* The one float32 element of a constant scalar (or one-element) value. */
static bool const_scalar(const ingot_graph_t* graph, uint32_t v, ingot_dtype_t dtype, float* out) {
  if (v == INGOT_NO_VALUE) return false;
  const ingot_value_t* c = &graph->values[v];
  if (c->kind != INGOT_VALUE_WEIGHT || !c->data || c->dtype != dtype || ingot_value_numel(c) != 1) return false;
  switch (dtype) {
    case INGOT_DTYPE_F32: memcpy(out, c->data, sizeof(float)); return true;
    case INGOT_DTYPE_U8: *out = (float)*(const uint8_t*)c->data; return true;
    case INGOT_DTYPE_I8: *out = (float)*(const int8_t*)c->data; return true;
    default: return false;
  }
}

/* A per-tensor QuantizeLinear (float32 -> uint8/int8) or DequantizeLinear
 * (uint8/int8 -> float32) with a constant scale and zero point: a step whose
 * parameters are the scale and the zero point, its one operand x. */
static bool quant_step(const ingot_graph_t* graph, const ingot_node_t* n, float* out_params) {
  if ((n->op != INGOT_OP_QUANTIZELINEAR && n->op != INGOT_OP_DEQUANTIZELINEAR) || n->input_count < 2 ||
      n->params.kind != INGOT_PARAMS_QUANT || n->params.u.quant.granularity != INGOT_QUANT_PER_TENSOR)
    return false;
  ingot_dtype_t q = n->params.u.quant.qtype;
  if (q != INGOT_DTYPE_U8 && q != INGOT_DTYPE_I8) return false;
  bool quantize = n->op == INGOT_OP_QUANTIZELINEAR;
  uint32_t x = n->inputs[0], y = n->outputs[0];
  if (x == INGOT_NO_VALUE || graph->values[x].dtype != (quantize ? INGOT_DTYPE_F32 : q) ||
      graph->values[y].dtype != (quantize ? q : INGOT_DTYPE_F32) || graph->values[y].rank < 1)
    return false;
  out_params[1] = 0.0f;
  return const_scalar(graph, n->inputs[1], INGOT_DTYPE_F32, &out_params[0]) &&
         (n->input_count < 3 || n->inputs[2] == INGOT_NO_VALUE || const_scalar(graph, n->inputs[2], q, &out_params[1]));
}

/* Whether node n can be a step, and its opcode and parameters. */
static bool fusable(const ingot_graph_t* graph, const ingot_node_t* n, int64_t* out_code, float* out_params) {
  if (n->dead || n->output_count != 1 || n->outputs[0] == INGOT_NO_VALUE) return false;
  const ingot_epilogue_t none = {0};
  if (memcmp(&n->epilogue, &none, sizeof(none)) != 0 || n->guard) return false;
  if (n->op == INGOT_OP_QUANTIZELINEAR || n->op == INGOT_OP_DEQUANTIZELINEAR) {
    if (!quant_step(graph, n, out_params)) return false;
    *out_code = (int64_t)n->op;
    return true;
  }
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

/* The operands a step reads (Clip's bounds, a quantization's scale and
 * zero point are parameters). */
static uint32_t step_operands(const ingot_node_t* n) {
  return n->op == INGOT_OP_CLIP || n->op == INGOT_OP_QUANTIZELINEAR || n->op == INGOT_OP_DEQUANTIZELINEAR
             ? 1
             : n->input_count;
}

/* Whether a step of op `op` yields a float product: the multiply an Add or
 * Sub that reads it may fuse with (one rounding fewer). */
static bool yields_product(ingot_op_t op) { return op == INGOT_OP_MUL || op == INGOT_OP_DEQUANTIZELINEAR; }

typedef struct fuse_tree_t {
  uint32_t nodes[FUSE_MAX_STEPS]; /* in execution order once sorted */
  uint32_t count;
  bool too_big;
} fuse_tree_t;

/* Adds node `id` and, depth first, the producers it absorbs: fusable,
 * read once (by this tree), of the root's shape. `exact`: not a product
 * into an Add or Sub (which the code generators would contract into one
 * fused multiply-add, where the ops one by one round twice); for trees that
 * quantize, where one rounding can move a result by a step. */
static void collect(const ingot_graph_t* graph, const uint32_t* uses, uint32_t id, const ingot_value_t* root_y,
                    bool exact, bool* taken, fuse_tree_t* t) {
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
    if (exact && (n->op == INGOT_OP_ADD || n->op == INGOT_OP_SUB) && yields_product(p->op)) continue;
    bool same = true;
    for (int32_t d = 0; d < val->rank; ++d) same = same && val->dims[d] == root_y->dims[d];
    if (same) collect(graph, uses, val->producer, root_y, exact, taken, t);
  }
}

/* ---- QuantizeLinear steps by the reciprocal ----
 *
 * A QuantizeLinear step divides by its scale. Where its operand is computed
 * from at most two bytes (DequantizeLinear steps of inputs or of earlier
 * QuantizeLinear steps) and one-element constants by the ops whose IEEE
 * results the code generators reproduce exactly (Add, Sub, Mul, Div, Max,
 * Min, Relu, Clip; no product into an Add or Sub in such a tree), every
 * value it can get is evaluated here, and where round(x * (1/scale)) equals
 * round(x / scale) for each the step multiplies (a division costs 4-10
 * multiplies on AVX2). */

typedef struct fuse_prog_t {
  const ingot_graph_t* graph;
  const int64_t* program;
  const float* params;
  const uint32_t* inputs; /* the leaves' values */
  uint32_t input_count;
} fuse_prog_t;

/* Collects the byte operands (DequantizeLinear steps' operands) that operand
 * `o` is computed from into vars (at most 2); false where it reads anything
 * else than those, one-element constants and the exact ops. */
static bool cone_vars(const fuse_prog_t* p, int64_t o, int64_t* vars, uint32_t* count) {
  if (o < (int64_t)p->input_count) {
    float unused;
    return const_scalar(p->graph, p->inputs[o], INGOT_DTYPE_F32, &unused);
  }
  const int64_t* st = &p->program[3 * (o - p->input_count)];
  switch ((ingot_op_t)st[0]) {
    case INGOT_OP_DEQUANTIZELINEAR:
      for (uint32_t i = 0; i < *count; ++i)
        if (vars[i] == st[1]) return true;
      if (*count == 2) return false;
      vars[(*count)++] = st[1];
      return true;
    case INGOT_OP_ADD: case INGOT_OP_SUB: case INGOT_OP_MUL: case INGOT_OP_DIV: case INGOT_OP_MAX: case INGOT_OP_MIN:
      return cone_vars(p, st[1], vars, count) && cone_vars(p, st[2], vars, count);
    case INGOT_OP_RELU: case INGOT_OP_CLIP:
      return cone_vars(p, st[1], vars, count);
    default:
      return false;
  }
}

/* Operand o's value for the byte values `bytes` of vars (as the kernel
 * computes it: lower/lower_elementwise.c). */
static float cone_eval(const fuse_prog_t* p, int64_t o, const int64_t* vars, uint32_t count, const int32_t* bytes) {
  if (o < (int64_t)p->input_count) {
    float v = 0.0f;
    const_scalar(p->graph, p->inputs[o], INGOT_DTYPE_F32, &v);
    return v;
  }
  int64_t k = o - p->input_count;
  const int64_t* st = &p->program[3 * k];
  const float* pr = &p->params[2 * k];
  if ((ingot_op_t)st[0] == INGOT_OP_DEQUANTIZELINEAR) {
    int32_t b = 0;
    for (uint32_t i = 0; i < count; ++i)
      if (vars[i] == st[1]) b = bytes[i];
    return (float)(b - (int32_t)pr[1]) * pr[0];
  }
  float a = cone_eval(p, st[1], vars, count, bytes);
  float z = st[2] >= 0 ? cone_eval(p, st[2], vars, count, bytes) : 0.0f;
  switch ((ingot_op_t)st[0]) {
    case INGOT_OP_ADD: return a + z;
    case INGOT_OP_SUB: return a - z;
    case INGOT_OP_MUL: return a * z;
    case INGOT_OP_DIV: return a / z;
    case INGOT_OP_MAX: return a > z ? a : z;
    case INGOT_OP_MIN: return a < z ? a : z;
    case INGOT_OP_RELU: return a > 0.0f ? a : 0.0f;
    default: { /* Clip */
      float lo = a > pr[0] ? a : pr[0];
      return lo < pr[1] ? lo : pr[1];
    }
  }
}

/* The byte range of step k's dtype, where operand k is a byte source: a
 * leaf input's dtype or a QuantizeLinear step's qtype. */
static void byte_range(const fuse_prog_t* p, const int64_t* qtypes, int64_t o, int32_t* lo, int32_t* hi) {
  ingot_dtype_t t = o < (int64_t)p->input_count ? p->graph->values[p->inputs[o]].dtype
                                                 : (ingot_dtype_t)(qtypes[o - p->input_count] & 0xff);
  *lo = t == INGOT_DTYPE_I8 ? -128 : 0;
  *hi = t == INGOT_DTYPE_I8 ? 127 : 255;
}

/* Whether QuantizeLinear step k may multiply by 1/scale. */
static bool reciprocal_exact(const fuse_prog_t* p, const int64_t* qtypes, uint32_t k) {
  int64_t vars[2];
  uint32_t count = 0;
  int64_t x = p->program[3 * k + 1];
  if (!cone_vars(p, x, vars, &count)) return false;
  float scale = p->params[2 * k], r = 1.0f / scale;
  if (!(scale > 0.0f) || !isfinite(r)) return false;
  int32_t lo[2] = {0, 0}, hi[2] = {0, 0};
  for (uint32_t i = 0; i < count; ++i) byte_range(p, qtypes, vars[i], &lo[i], &hi[i]);
  int32_t b[2];
  for (b[0] = lo[0]; b[0] <= hi[0]; ++b[0]) {
    for (b[1] = lo[1]; b[1] <= hi[1]; ++b[1]) {
      float v = cone_eval(p, x, vars, count, b);
      if (!isfinite(v)) return false;
      if (nearbyintf(v / scale) != nearbyintf(v * r)) return false;
    }
  }
  return true;
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
    collect(graph, uses, r, root_y, false, scratch, &t);
    bool quantizes = false;
    for (uint32_t i = 0; i < t.count; ++i) quantizes |= graph->nodes[t.nodes[i]].op == INGOT_OP_QUANTIZELINEAR;
    if (quantizes) { /* again, exact */
      t.count = 0;
      t.too_big = false;
      memcpy(scratch, taken, node_count * sizeof(bool));
      collect(graph, uses, r, root_y, true, scratch, &t);
    }
    if (t.too_big || t.count < 2) {
      free(scratch);
      continue;
    }
    qsort(t.nodes, t.count, sizeof(uint32_t), cmp_u32); /* sorted graph: execution order */
    /* The leaves: every operand not made inside the tree, each value once. */
    uint32_t inputs[FUSE_MAX_INPUTS];
    uint32_t input_count = 0;
    bool fits = true;
    int64_t program[3 * FUSE_MAX_STEPS], qtypes[FUSE_MAX_STEPS];
    float fparams[2 * FUSE_MAX_STEPS];
    bool any_q = false;
    for (uint32_t i = 0; i < t.count && fits; ++i) {
      const ingot_node_t* n = &graph->nodes[t.nodes[i]];
      fusable(graph, n, &program[3 * i], &fparams[2 * i]);
      bool q = n->op == INGOT_OP_QUANTIZELINEAR || n->op == INGOT_OP_DEQUANTIZELINEAR;
      qtypes[i] = q ? (int64_t)n->params.u.quant.qtype : 0;
      any_q |= q;
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
    if (any_q) {
      fuse_prog_t fp = {graph, program, fparams, inputs, input_count};
      for (uint32_t i = 0; i < t.count; ++i)
        if (program[3 * i] == (int64_t)INGOT_OP_QUANTIZELINEAR && reciprocal_exact(&fp, qtypes, i))
          qtypes[i] |= INGOT_FUSED_Q_RECIPROCAL;
      ingot_graph_node_set_ints(graph, fn, "qtypes", qtypes, t.count);
    }
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
