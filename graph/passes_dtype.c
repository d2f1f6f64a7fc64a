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
 * ops in float32 on a CPU too. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph_internal.h"

static bool is_half(ingot_dtype_t t) { return t == INGOT_DTYPE_F16 || t == INGOT_DTYPE_BF16; }

/* Rewires every node input `from` to `to`, except node `skip`. */
static void rewire_inputs(ingot_graph_t* graph, uint32_t from, uint32_t to, uint32_t skip) {
  for (uint32_t n = 0; n < graph->node_count; ++n) {
    if (n == skip) continue;
    ingot_node_t* node = &graph->nodes[n];
    for (uint32_t i = 0; i < node->input_count; ++i)
      if (node->inputs[i] == from) node->inputs[i] = to;
  }
}

static uint32_t add_cast(ingot_graph_t* graph, uint32_t x, uint32_t y, int64_t to) {
  const char* base = ingot_arena_printf(&graph->arena, "%s_cast", graph->values[y].name);
  const char* name = ingot_graph_unique_name(graph, base);
  uint32_t node = ingot_graph_add_node(graph, INGOT_OP_CAST, name, &x, 1, &y, 1);
  ingot_attr_t* a = ingot_graph_node_add_attr(graph, node, "to", INGOT_ATTR_INT);
  a->i = to;
  return node;
}

ingot_status_t ingot_graph_compute_half_in_f32(ingot_graph_t* graph) {
  bool any = false;
  for (uint32_t v = 0; v < graph->value_count && !any; ++v) any = is_half(graph->values[v].dtype);
  if (!any) return INGOT_OK;
  /* Cast to half inside the graph: to float32 (ONNX: FLOAT16 10, BFLOAT16 16). */
  for (uint32_t n = 0; n < graph->node_count; ++n) {
    ingot_node_t* node = &graph->nodes[n];
    if (node->dead || node->op != INGOT_OP_CAST) continue;
    for (uint32_t k = 0; k < node->attr_count; ++k) {
      ingot_attr_t* a = &node->attrs[k];
      if (strcmp(a->name, "to") == 0 && a->type == INGOT_ATTR_INT && (a->i == 10 || a->i == 16)) a->i = 1;
    }
  }
  uint32_t value_count = graph->value_count; /* the values added below need nothing */
  for (uint32_t v = 0; v < value_count; ++v) {
    ingot_value_t* val = &graph->values[v];
    if (!is_half(val->dtype)) continue;
    bool bf16 = val->dtype == INGOT_DTYPE_BF16;
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
      const char* name = ingot_graph_unique_name(graph, ingot_arena_printf(&graph->arena, "%s_f32", val->name));
      uint32_t x32 = ingot_graph_add_value(graph, name, INGOT_VALUE_INTERMEDIATE);
      graph->values[x32].dtype = INGOT_DTYPE_F32;
      uint32_t cast = add_cast(graph, v, x32, 1);
      rewire_inputs(graph, v, x32, cast);
    } else if (is_output && graph->values[v].producer != INGOT_NO_VALUE) {
      uint32_t producer = graph->values[v].producer;
      const char* name = ingot_graph_unique_name(graph, ingot_arena_printf(&graph->arena, "%s_f32", val->name));
      uint32_t y32 = ingot_graph_add_value(graph, name, INGOT_VALUE_INTERMEDIATE);
      graph->values[y32].dtype = INGOT_DTYPE_F32;
      ingot_node_t* p = &graph->nodes[producer];
      for (uint32_t k = 0; k < p->output_count; ++k)
        if (p->outputs[k] == v) p->outputs[k] = y32;
      graph->values[y32].producer = producer;
      uint32_t cast = add_cast(graph, y32, v, bf16 ? 16 : 10);
      rewire_inputs(graph, v, y32, cast);
    } else {
      graph->values[v].dtype = INGOT_DTYPE_F32; /* inference sets it again */
    }
  }
  return ingot_graph_sort(graph);
}
