/* Lowering dry run of one node, for `ingot check` (lower.h). */
#include <string.h>

#include "lower_internal.h"

ingot_status_t ingot_lower_check_node(const ingot_graph_t* graph, uint32_t node) {
  if (!graph || node >= graph->node_count) {
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_lower_check_node: bad arguments");
  }
  ingot_lowered_t* lowered = NULL;
  ingot_status_t s = ingot_lower_node(graph, node, &lowered);
  if (s == INGOT_OK && lowered->kernel_count == 1) {
    s = ingot_ir_verify(lowered->kernels[0].func);
    if (s) {
      const ingot_node_t* n = &graph->nodes[node];
      s = ingot_fail_prefix(s, "node '%s' (%s): lowering produced invalid IR", n->name, ingot_op_name(n->op));
    }
  }
  ingot_lowered_destroy(lowered);
  return s;
}

ingot_status_t ingot_lower_node_workload(const ingot_graph_t* graph, uint32_t node, char** out_workload) {
  if (!out_workload) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_lower_node_workload: no output");
  *out_workload = NULL;
  if (!graph || node >= graph->node_count) {
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_lower_node_workload: bad arguments");
  }
  ingot_lowered_t* lowered = NULL;
  ingot_status_t s = ingot_lower_node(graph, node, &lowered);
  if (s == INGOT_OK && lowered->kernel_count == 1) *out_workload = ingot_xstrdup(lowered->kernels[0].workload);
  ingot_lowered_destroy(lowered);
  return s;
}
