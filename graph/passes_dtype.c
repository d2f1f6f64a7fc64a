/* Float16 and bfloat16 models computed in float32.
 *
 * The code targets keep float16 and bfloat16 as storage (their bits, loaded
 * and stored, converted by Cast: lower/lower_math.c); no kernel computes in
 * them. So before inference, this pass moves every half-precision value of
 * the graph to float32 (graph outputs by the type the model declares):
 *   - weights are converted now (exactly: every half value is a float32);
 *   - a graph input of half type keeps its type and feeds a new Cast to
 *     float32, which its consumers read instead;
 *   - a graph output of half type keeps its type and is written by a new
 *     Cast from a float32 value that its producer (and any other reader)
 *     takes instead;
 *   - a Cast to half inside the graph casts to float32 instead, and the
 *     other half values become float32 as inference runs again.
 * The results are rounded once, at the outputs, instead of after every op
 * as a half-precision kernel would: closer to the exact values, and within
 * half-precision tolerance of ONNX Runtime, which computes many of these
 * ops in float32 on a CPU too.
 *
 * With graph->half_arith (every target computes float16 natively), the
 * float16 nodes the loop IR computes in float16 (Add, Sub, Mul, Div, Min,
 * Max, Neg, Abs, Sqrt, Relu: lower/ir_ops.def, HALF) stay float16 when all
 * their inputs are known float16 here (declared, a float16 weight or graph
 * input, a Cast to float16, the output of such a node or of an op that keeps
 * its input's dtype): each rounds its result (IEEE binary16), as ONNX
 * Runtime's float16 kernels do where it has them (on an x86-64 CPU it has
 * float32 kernels only for most of these ops and computes a chain of them in
 * float32, rounding at its ends, as the default here does; see
 * tests/e2e/half_native_test.py). Where such a value meets a
 * float32 reader, a Cast to float32 (exact) is added; where a value computed
 * in float32 meets a float16 node, a Cast to float16; a float16 weight read
 * by both stays and gets a Cast that folds. Everything else (transcendentals,
 * reductions, MatMul and Conv) computes in float32 as above. bfloat16 always
 * does. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph_internal.h"

static bool is_half(ingot_dtype_t t) { return t == INGOT_DTYPE_F16 || t == INGOT_DTYPE_BF16; }

static uint32_t add_cast(ingot_graph_t* graph, uint32_t x, uint32_t y, int64_t to) {
  const char* base = ingot_arena_printf(&graph->arena, "%s_cast", graph->values[y].name);
  const char* name = ingot_graph_unique_name(graph, base);
  uint32_t node = ingot_graph_add_node(graph, INGOT_OP_CAST, name, &x, 1, &y, 1);
  ingot_attr_t* a = ingot_graph_node_add_attr(graph, node, "to", INGOT_ATTR_INT);
  a->i = to;
  return node;
}

/* The ops kept in float16 under graph->half_arith: their loop IR is float16
 * arithmetic (lower/ir_ops.def, HALF; Relu is a max with 0). */
static bool half_native_op(const ingot_node_t* n) {
  if (n->dead || n->output_count != 1 || n->outputs[0] == INGOT_NO_VALUE || n->input_count == 0) return false;
  switch (n->op) {
    case INGOT_OP_ADD: case INGOT_OP_SUB: case INGOT_OP_MUL: case INGOT_OP_DIV: return n->input_count == 2;
    case INGOT_OP_MIN: case INGOT_OP_MAX: return true;
    case INGOT_OP_NEG: case INGOT_OP_ABS: case INGOT_OP_SQRT: case INGOT_OP_RELU: return n->input_count == 1;
    default: return false;
  }
}

/* A Cast to float16 (ONNX: FLOAT16 10): its "to" attribute, else NULL. */
static ingot_attr_t* cast_to_half(ingot_node_t* n) {
  if (n->dead || n->op != INGOT_OP_CAST) return NULL;
  for (uint32_t k = 0; k < n->attr_count; ++k) {
    ingot_attr_t* a = &n->attrs[k];
    if (strcmp(a->name, "to") == 0 && a->type == INGOT_ATTR_INT && a->i == 10) return a;
  }
  return NULL;
}

/* Ops whose output 0 has the dtype of their input 0 (of every input: all
 * true), for knowing which values are float16 before inference. */
static bool keeps_dtype(const ingot_node_t* n, bool* out_all) {
  *out_all = false;
  switch (n->op) {
    case INGOT_OP_CONCAT: case INGOT_OP_SUM: case INGOT_OP_MEAN: *out_all = true; return true;
    case INGOT_OP_TRANSPOSE: case INGOT_OP_RESHAPE: case INGOT_OP_FLATTEN: case INGOT_OP_SQUEEZE:
    case INGOT_OP_UNSQUEEZE: case INGOT_OP_IDENTITY: case INGOT_OP_SLICE: case INGOT_OP_EXPAND: case INGOT_OP_TILE:
    case INGOT_OP_PAD: case INGOT_OP_GATHER: case INGOT_OP_EXP: case INGOT_OP_LOG: case INGOT_OP_TANH:
    case INGOT_OP_SIGMOID: case INGOT_OP_ERF: case INGOT_OP_RECIPROCAL: case INGOT_OP_SOFTMAX: case INGOT_OP_CONV:
    case INGOT_OP_MATMUL: case INGOT_OP_GEMM: case INGOT_OP_CLIP: case INGOT_OP_LEAKYRELU: case INGOT_OP_POW:
    case INGOT_OP_HARDSIGMOID: case INGOT_OP_HARDSWISH: case INGOT_OP_AVERAGEPOOL: case INGOT_OP_MAXPOOL:
    case INGOT_OP_GLOBALAVERAGEPOOL: case INGOT_OP_BATCHNORMALIZATION: case INGOT_OP_REDUCEMEAN:
    case INGOT_OP_REDUCESUM: case INGOT_OP_REDUCEMAX: case INGOT_OP_REDUCEMIN:
      return true;
    default: return false;
  }
}

/* Which nodes stay float16 (graph->half_arith; graph sorted): out_native
 * per node, out_f16 per value (float16 in the model, as far as known now:
 * declared, a Cast to float16, or made from float16 by an op that keeps its
 * input's dtype; a native node reads such a value through a Cast to float16
 * where it is computed in float32, so that it rounds where the model says). */
static void find_half_native(ingot_graph_t* graph, uint8_t* out_native, uint8_t* out_f16) {
  for (uint32_t v = 0; v < graph->value_count; ++v) out_f16[v] = graph->values[v].dtype == INGOT_DTYPE_F16;
  for (uint32_t n = 0; n < graph->node_count; ++n) {
    ingot_node_t* node = &graph->nodes[n];
    if (node->dead || !node->output_count || node->outputs[0] == INGOT_NO_VALUE || !node->input_count) continue;
    if (cast_to_half(node)) out_f16[node->outputs[0]] = 1;
    bool all;
    if (keeps_dtype(node, &all)) {
      bool f16 = node->inputs[0] != INGOT_NO_VALUE && out_f16[node->inputs[0]];
      for (uint32_t i = 1; all && i < node->input_count; ++i)
        f16 = f16 && node->inputs[i] != INGOT_NO_VALUE && out_f16[node->inputs[i]];
      if (f16) out_f16[node->outputs[0]] = 1;
    }
    if (!half_native_op(node)) continue;
    all = true;
    for (uint32_t i = 0; i < node->input_count && all; ++i)
      all = node->inputs[i] != INGOT_NO_VALUE && out_f16[node->inputs[i]];
    if (!all) continue;
    out_native[n] = 1;
    out_f16[node->outputs[0]] = 1;
  }
}

/* Whether value v has a reader among nodes [0, count) that is native
 * (want_native) or not. */
static bool has_reader(const ingot_graph_t* graph, uint32_t count, const uint8_t* native, uint32_t v, bool want_native) {
  for (uint32_t n = 0; n < count; ++n) {
    const ingot_node_t* node = &graph->nodes[n];
    if (node->dead || (native[n] != 0) != want_native) continue;
    for (uint32_t i = 0; i < node->input_count; ++i)
      if (node->inputs[i] == v) return true;
  }
  return false;
}

/* Rewires the inputs `from` of nodes [0, count) that are native
 * (want_native) or not to `to`. */
static void rewire_readers(ingot_graph_t* graph, uint32_t count, const uint8_t* native, uint32_t from, uint32_t to,
                           bool want_native) {
  for (uint32_t n = 0; n < count; ++n) {
    ingot_node_t* node = &graph->nodes[n];
    if ((native[n] != 0) != want_native) continue;
    for (uint32_t i = 0; i < node->input_count; ++i)
      if (node->inputs[i] == from) node->inputs[i] = to;
  }
}

/* A new value `name`_`suffix` of dtype `t`, written by a Cast of x; returns it. */
static uint32_t cast_value(ingot_graph_t* graph, uint32_t x, const char* suffix, ingot_dtype_t t) {
  const char* name =
      ingot_graph_unique_name(graph, ingot_arena_printf(&graph->arena, "%s_%s", graph->values[x].name, suffix));
  uint32_t y = ingot_graph_add_value(graph, name, INGOT_VALUE_INTERMEDIATE);
  graph->values[y].dtype = t;
  add_cast(graph, x, y, t == INGOT_DTYPE_F16 ? 10 : 1);
  return y;
}

ingot_status_t ingot_graph_compute_half_in_f32(ingot_graph_t* graph) {
  bool any = false;
  for (uint32_t v = 0; v < graph->value_count && !any; ++v) any = is_half(graph->values[v].dtype);
  if (!any) return INGOT_OK;
  /* Unique's Y would come back through a Cast, which cannot read a tensor
   * whose size a run computes: refused while its dtype is known here. */
  for (uint32_t n = 0; n < graph->node_count; ++n) {
    const ingot_node_t* node = &graph->nodes[n];
    if (node->dead || node->op != INGOT_OP_UNIQUE) continue;
    bool half = node->input_count && node->inputs[0] != INGOT_NO_VALUE && is_half(graph->values[node->inputs[0]].dtype);
    half = half || (node->output_count && node->outputs[0] != INGOT_NO_VALUE &&
                    is_half(graph->values[node->outputs[0]].dtype));
    if (half) {
      return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                        "node '%s' (Unique): float16 and bfloat16 are not supported (the graph computes them in "
                        "float32, and Y, whose size a run computes, cannot be cast back)",
                        node->name);
    }
  }
  uint32_t node_count = graph->node_count; /* the nodes added below are Casts, never native */
  uint8_t* native = ingot_xcalloc(node_count + 1, 1);
  uint8_t* f16 = ingot_xcalloc(graph->value_count + 1, 1);
  if (graph->half_arith) find_half_native(graph, native, f16);
  /* Cast to half inside the graph: to float32 (ONNX: FLOAT16 10, BFLOAT16
   * 16), unless a native node reads its float16 output. */
  for (uint32_t n = 0; n < node_count; ++n) {
    ingot_node_t* node = &graph->nodes[n];
    if (node->dead || node->op != INGOT_OP_CAST) continue;
    if (graph->half_arith && cast_to_half(node) && node->output_count && node->outputs[0] != INGOT_NO_VALUE &&
        has_reader(graph, node_count, native, node->outputs[0], true))
      continue;
    for (uint32_t k = 0; k < node->attr_count; ++k) {
      ingot_attr_t* a = &node->attrs[k];
      if (strcmp(a->name, "to") == 0 && a->type == INGOT_ATTR_INT && (a->i == 10 || a->i == 16)) a->i = 1;
    }
  }
  uint32_t value_count = graph->value_count; /* the values added below need nothing */
  for (uint32_t v = 0; v < value_count; ++v) {
    ingot_value_t* val = &graph->values[v];
    uint32_t producer = val->producer;
    bool made_half = producer != INGOT_NO_VALUE && producer < node_count &&
                     (native[producer] || cast_to_half(&graph->nodes[producer]));
    bool to_native = f16[v] && has_reader(graph, node_count, native, v, true);
    if (made_half) {
      /* float16 made by a native node or a kept Cast: float32 readers read it
       * through a Cast */
      if (has_reader(graph, node_count, native, v, false))
        rewire_readers(graph, node_count, native, v, cast_value(graph, v, "f32", INGOT_DTYPE_F32), false);
      continue;
    }
    if (!is_half(val->dtype) && !to_native) continue;
    bool bf16 = val->dtype == INGOT_DTYPE_BF16;
    if (val->kind == INGOT_VALUE_WEIGHT && to_native) {
      /* stays: a Cast (folded) for the float32 readers */
      if (has_reader(graph, node_count, native, v, false))
        rewire_readers(graph, node_count, native, v, cast_value(graph, v, "f32", INGOT_DTYPE_F32), false);
      continue;
    }
    if (val->kind == INGOT_VALUE_WEIGHT) {
      int64_t n = val->rank >= 0 ? ingot_value_numel(val) : 0;
      float* data = ingot_xmalloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h = ((const uint16_t*)val->data)[i];
        data[i] = (float)(bf16 ? ingot_bf16_to_double(h) : ingot_half_to_double(h)); /* exact */
      }
      int64_t dims[INGOT_MAX_RANK];
      memcpy(dims, val->dims, sizeof(dims));
      ingot_graph_set_weight(graph, v, INGOT_DTYPE_F32, val->rank, dims, data);
      continue;
    }
    bool is_input = false, is_output = false;
    for (uint32_t i = 0; i < graph->input_count; ++i) is_input |= graph->inputs[i] == v;
    for (uint32_t i = 0; i < graph->output_count; ++i) is_output |= graph->outputs[i] == v;
    if (is_input && is_output) continue; /* passed through as it is */
    if (is_input) {
      /* float32 readers through a Cast; native ones read it as it is */
      if (has_reader(graph, node_count, native, v, false))
        rewire_readers(graph, node_count, native, v, cast_value(graph, v, "f32", INGOT_DTYPE_F32), false);
    } else if (is_output && producer != INGOT_NO_VALUE) {
      /* the producer writes a float32 value that a Cast rounds to the
       * declared type; float32 readers read the float32 value, native ones
       * the rounded output */
      const char* name = ingot_graph_unique_name(graph, ingot_arena_printf(&graph->arena, "%s_f32", val->name));
      uint32_t y32 = ingot_graph_add_value(graph, name, INGOT_VALUE_INTERMEDIATE);
      graph->values[y32].dtype = INGOT_DTYPE_F32;
      ingot_node_t* p = &graph->nodes[producer];
      for (uint32_t k = 0; k < p->output_count; ++k)
        if (p->outputs[k] == v) p->outputs[k] = y32;
      graph->values[y32].producer = producer;
      add_cast(graph, y32, v, bf16 ? 16 : 10);
      rewire_readers(graph, node_count, native, v, y32, false);
    } else {
      graph->values[v].dtype = INGOT_DTYPE_F32; /* inference sets it again */
      if (to_native) rewire_readers(graph, node_count, native, v, cast_value(graph, v, "f16", INGOT_DTYPE_F16), true);
    }
  }
  free(native);
  free(f16);
  return ingot_graph_sort(graph);
}
