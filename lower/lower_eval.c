/* Compile-time evaluation of one node for constant folding: the node is
 * lowered by the same code that lowers it for the bundle and its kernel runs
 * on the IR interpreter, so a folded constant and the compiled code agree by
 * construction (one definition of each op: its lowering). */
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"

static ingot_status_t eval_fail(const ingot_node_t* n, ingot_status_t code, const char* what) {
  const char* op = ingot_op_name(n->op);
  return ingot_fail(code, "node '%s' (%s): %s", n->name, op ? op : "?", what);
}

/* The node output slot that holds value `v`, or UINT32_MAX. */
static uint32_t output_slot(const ingot_node_t* n, uint32_t v) {
  for (uint32_t k = 0; k < n->output_count; ++k) {
    if (n->outputs[k] == v) return k;
  }
  return UINT32_MAX;
}

static void* alloc_value(const ingot_value_t* v) {
  uint64_t bytes = ingot_value_bytes(v);
  return ingot_xcalloc(1, bytes ? (size_t)bytes : 1);
}

static ingot_status_t run_kernel(const ingot_graph_t* graph, const ingot_node_t* n, const ingot_kernel_t* k,
                                 void** out_data) {
  const ingot_ir_func_t* f = k->func;
  void** args = ingot_xcalloc(f->buffer_count ? f->buffer_count : 1, sizeof(void*));
  bool* scratch = ingot_xcalloc(f->buffer_count ? f->buffer_count : 1, sizeof(bool));
  ingot_status_t s = INGOT_OK;
  for (uint32_t b = 0; b < f->buffer_count && !s; ++b) {
    const ingot_value_t* v = &graph->values[k->args[b]];
    if (f->buffers[b].role == INGOT_IR_BUFFER_INPUT) {
      if (v->kind != INGOT_VALUE_WEIGHT || (!v->data && ingot_value_numel(v) > 0)) {
        s = eval_fail(n, INGOT_ERROR_UNSUPPORTED, "an input is not a constant");
      }
      args[b] = v->data;
      continue;
    }
    uint32_t slot = output_slot(n, k->args[b]);
    if (slot != UINT32_MAX && !out_data[slot]) {
      out_data[slot] = alloc_value(v);
      args[b] = out_data[slot];
    } else {
      args[b] = alloc_value(v); /* not a node output: kernel scratch */
      scratch[b] = true;
    }
  }
  if (!s) {
    s = ingot_ir_interpret(f, args);
    if (s) s = ingot_fail_prefix(INGOT_ERROR_INVALID_ARGUMENT, "running its kernel");
  }
  for (uint32_t b = 0; b < f->buffer_count; ++b) {
    if (scratch[b]) free(args[b]);
  }
  free(scratch);
  free(args);
  return s;
}

ingot_status_t ingot_lower_eval_node(void* self, ingot_graph_t* graph, uint32_t node, void** out_data) {
  (void)self;
  if (!graph || node >= graph->node_count || !out_data) {
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_lower_eval_node: bad arguments");
  }
  const ingot_node_t* n = &graph->nodes[node];
  ingot_lowered_t* lowered = NULL;
  ingot_status_t s = ingot_lower_node(graph, node, &lowered);
  if (s == INGOT_OK && lowered->kernel_count == 1) {
    s = run_kernel(graph, n, &lowered->kernels[0], out_data);
  } else if (s == INGOT_OK) {
    /* A view with no kernel: its output shares the storage of a constant. */
    for (uint32_t k = 0; k < n->output_count && !s; ++k) {
      uint32_t o = n->outputs[k];
      if (o == INGOT_NO_VALUE) continue;
      uint32_t root = lowered->alias_of[o];
      const ingot_value_t* rv = root == INGOT_NO_VALUE ? NULL : &graph->values[root];
      if (!rv || rv->kind != INGOT_VALUE_WEIGHT || ingot_value_bytes(rv) != ingot_value_bytes(&graph->values[o])) {
        s = eval_fail(n, INGOT_ERROR_UNSUPPORTED, "its lowering produced no kernel to evaluate");
        break;
      }
      out_data[k] = alloc_value(&graph->values[o]);
      if (rv->data && ingot_value_bytes(rv)) memcpy(out_data[k], rv->data, (size_t)ingot_value_bytes(rv));
    }
  }
  if (s == INGOT_OK) {
    for (uint32_t k = 0; k < n->output_count; ++k) {
      if (n->outputs[k] != INGOT_NO_VALUE && !out_data[k]) {
        s = eval_fail(n, INGOT_ERROR_UNSUPPORTED, "its kernel does not write every output");
        break;
      }
    }
  }
  if (s != INGOT_OK) {
    for (uint32_t k = 0; k < n->output_count; ++k) {
      free(out_data[k]);
      out_data[k] = NULL;
    }
  }
  ingot_lowered_destroy(lowered);
  return s;
}
