/* Lowering dry run of one node, for `ingot check` (lower.h). */
#include <string.h>

#include "lower_internal.h"

ingot_status_t ingot_lower_check_node(const ingot_graph_t* graph, uint32_t node) {
  if (!graph || node >= graph->node_count) {
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_lower_check_node: bad arguments");
  }
  ingot_lowered_t lowered;
  memset(&lowered, 0, sizeof(lowered));
  ingot_arena_init(&lowered.arena, ingot_allocator_system());
  lowered.value_count = graph->value_count;
  lowered.alias_of = INGOT_ARENA_ARRAY(&lowered.arena, uint32_t, graph->value_count ? graph->value_count : 1);
  for (uint32_t i = 0; i < graph->value_count; ++i) lowered.alias_of[i] = INGOT_NO_VALUE;
  lowered.kernels = INGOT_ARENA_ARRAY(&lowered.arena, ingot_kernel_t, 1);
  ingot_status_t s = lower_node_into(graph, node, &lowered);
  if (s == INGOT_OK && lowered.kernel_count == 1) {
    s = ingot_ir_verify(lowered.kernels[0].func);
    if (s) {
      const ingot_node_t* n = &graph->nodes[node];
      s = ingot_fail_prefix(s, "node '%s' (%s): lowering produced invalid IR", n->name, ingot_op_name(n->op));
    }
  }
  for (uint32_t i = 0; i < lowered.kernel_count; ++i) ingot_ir_func_destroy(lowered.kernels[i].func);
  ingot_arena_deinit(&lowered.arena);
  return s;
}
