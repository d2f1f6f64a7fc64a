/* Layout passes: rewrites that change how data reaches a kernel.
 *
 * ingot_graph_pad_conv_inputs moves a Conv's zero padding into an explicit
 * Pad node (constant mode, value 0, pads as an int64 weight input), so the
 * conv reads a padded intermediate with pads 0 and lowers without a select
 * and index clamps in its innermost loop. It runs after shape inference
 * (the conv's pads are explicit, auto_pad resolved to "NOTSET"); the new Pad
 * node and its output are inferred by the pipeline's final inference. */
#include <string.h>

#include "graph/graph.h"
#include "graph/graph_internal.h"

/* Padded tensors above this size are left to the conv's own bounds checks. */
#define PAD_CONV_MAX_BYTES ((uint64_t)64 << 20)

ingot_status_t ingot_graph_pad_conv_inputs(ingot_graph_t* graph) {
  uint32_t node_count = graph->node_count; /* new Pad nodes are not visited */
  for (uint32_t i = 0; i < node_count; ++i) {
    ingot_node_t* conv = &graph->nodes[i];
    if (conv->dead || conv->op != INGOT_OP_CONV || conv->input_count < 2 || conv->output_count != 1) continue;
    uint32_t x = conv->inputs[0];
    if (x == INGOT_NO_VALUE || x >= graph->value_count) continue;
    const ingot_value_t* xv = &graph->values[x];
    if (xv->rank < 3 || xv->rank > 5 || xv->dtype == INGOT_DTYPE_INVALID) continue;
    const char* auto_pad = ingot_node_attr_string(conv, "auto_pad", "NOTSET");
    if (strcmp(auto_pad, "NOTSET") != 0 && auto_pad[0] != '\0') continue; /* not canonical: leave it */
    int32_t rank = xv->rank, sp = rank - 2;
    uint32_t pad_count = 0;
    const int64_t* pads = ingot_node_attr_ints(conv, "pads", &pad_count);
    if (!pads || pad_count != (uint32_t)(2 * sp)) continue;
    bool any = false, valid = true;
    for (int32_t k = 0; k < 2 * sp; ++k) {
      if (pads[k] < 0 || pads[k] > ((int64_t)1 << 20)) valid = false;
      if (pads[k] != 0) any = true;
    }
    if (!any || !valid) continue;
    /* Size of the padded tensor; skip unknown shapes and large ones. */
    size_t esize = ingot_graph_dtype_size(xv->dtype);
    if (esize == 0) continue;
    uint64_t numel = 1;
    bool known = true;
    for (int32_t d = 0; d < rank && known; ++d) {
      int64_t dim = xv->dims[d];
      if (d >= 2) dim += pads[d - 2] + pads[sp + d - 2];
      if (dim < 0) {
        known = false;
      } else if (dim > 0 && numel > (PAD_CONV_MAX_BYTES / esize) / (uint64_t)dim + 1) {
        numel = UINT64_MAX;
        break;
      } else {
        numel *= (uint64_t)dim;
      }
    }
    if (!known || numel == 0 || numel > PAD_CONV_MAX_BYTES / esize) continue;

    /* The Pad's pads input: begin for every axis, then end (N, C get 0). */
    int64_t* pad_data = ingot_xmalloc(sizeof(int64_t) * 2 * (size_t)rank);
    memset(pad_data, 0, sizeof(int64_t) * 2 * (size_t)rank);
    for (int32_t k = 0; k < sp; ++k) {
      pad_data[2 + k] = pads[k];
      pad_data[rank + 2 + k] = pads[sp + k];
    }
    const char* conv_name = conv->name;
    char* base = ingot_arena_printf(&graph->arena, "%s_pads", conv_name);
    uint32_t pv = ingot_graph_add_value(graph, ingot_graph_unique_name(graph, base), INGOT_VALUE_WEIGHT);
    int64_t pdim = 2 * (int64_t)rank;
    ingot_graph_set_weight(graph, pv, INGOT_DTYPE_I64, 1, &pdim, pad_data);
    base = ingot_arena_printf(&graph->arena, "%s_padded", graph->values[x].name);
    uint32_t yv = ingot_graph_add_value(graph, ingot_graph_unique_name(graph, base), INGOT_VALUE_INTERMEDIATE);
    uint32_t pad_inputs[2] = {x, pv};
    base = ingot_arena_printf(&graph->arena, "%s_pad", conv_name);
    uint32_t pad_node = ingot_graph_add_node(graph, INGOT_OP_PAD, base, pad_inputs, 2, &yv, 1);
    ingot_attr_t* mode = ingot_graph_node_add_attr(graph, pad_node, "mode", INGOT_ATTR_STRING);
    mode->s = "constant";
    /* The node array may have moved. */
    conv = &graph->nodes[i];
    conv->inputs[0] = yv;
    int64_t zeros[6] = {0, 0, 0, 0, 0, 0};
    ingot_graph_node_set_ints(graph, i, "pads", zeros, (uint32_t)(2 * sp));
    ingot_attr_t* ap = ingot_graph_node_add_attr(graph, i, "auto_pad", INGOT_ATTR_STRING);
    ap->s = "NOTSET";
  }
  return INGOT_OK;
}
