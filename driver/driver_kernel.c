/* One kernel, one schedule, one target -> a bundle that can be timed
 * (driver.h): what the tuner builds for every candidate it measures. Only
 * the one node is lowered, so a call costs the node's own scheduling and
 * code generation, never the model's import or optimization. */
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "driver_internal.h"

typedef struct kernel_state_t {
  ingot_arena_t arena;
  ingot_lowered_t* lowered;
  ingot_schedule_t schedule;
  uint8_t* object;
} kernel_state_t;

/* A fault planted in a scheduled kernel (driver_internal.h), for the tests
 * of the tuner's measuring: each is what a broken schedule could do. */
static ingot_status_t inject_fault(ingot_ir_func_t* f, driver_fault_t fault) {
  uint32_t out = UINT32_MAX;
  for (uint32_t b = 0; b < f->buffer_count && out == UINT32_MAX; ++b)
    if (f->buffers[b].role == INGOT_IR_BUFFER_OUTPUT) out = b;
  if (out == UINT32_MAX || (f->buffers[out].dtype != INGOT_DTYPE_F32 && f->buffers[out].dtype != INGOT_DTYPE_F64))
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "fault injection needs a float output");
  ingot_dtype_t dt = f->buffers[out].dtype;
  ingot_ir_stmt_t* extra = NULL;
  if (fault == DRIVER_FAULT_CRASH) {
    /* a store far outside the buffer, at an index that depends on the data
     * (a constant one is refused when the code is generated) */
    ingot_ir_expr_t* data = ingot_ir_cast(f, INGOT_DTYPE_I64, ingot_ir_load(f, out, ingot_ir_int(f, 0)));
    extra = ingot_ir_store(f, out, ingot_ir_add(f, data, ingot_ir_int(f, (int64_t)1 << 40)), ingot_ir_float(f, dt, 1.0));
  } else if (fault == DRIVER_FAULT_WRONG) {
    /* the first output element off by one */
    ingot_ir_expr_t* zero = ingot_ir_int(f, 0);
    extra = ingot_ir_store(f, out, zero, ingot_ir_add(f, ingot_ir_load(f, out, zero), ingot_ir_float(f, dt, 1.0)));
  } else if (fault == DRIVER_FAULT_HANG) {
    /* a loop that runs for days */
    uint32_t v = ingot_ir_add_var(f, "fault_spin", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    ingot_ir_expr_t* zero = ingot_ir_int(f, 0);
    ingot_ir_stmt_t* body =
        ingot_ir_store(f, out, zero, ingot_ir_add(f, ingot_ir_load(f, out, zero), ingot_ir_float(f, dt, 1e-30)));
    extra = ingot_ir_for(f, v, (int64_t)1 << 50, body);
  } else {
    return INGOT_OK;
  }
  ingot_ir_stmt_t* stmts[2] = {f->body, extra};
  f->body = ingot_ir_block(f, stmts, 2);
  return INGOT_OK;
}

static ingot_status_t build(const ingot_graph_t* g, uint32_t node_id, const ingot_driver_schedule_t* request,
                            const char* target_text, const char* cc, driver_fault_t fault, kernel_state_t* st,
                            uint8_t** out_bundle, size_t* out_size) {
  ingot_status_t s;
  if (node_id >= g->node_count)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "node %u: the graph has %u nodes", node_id, g->node_count);
  const ingot_node_t* node = &g->nodes[node_id];
  if (node->dead)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "node %u '%s' (%s) was removed by optimization", node_id,
                      node->name, ingot_op_name(node->op));
  ingot_target_t target;
  if ((s = ingot_target_parse(target_text ? target_text : "", &target))) return s;
  if ((s = ingot_lower_node(g, node_id, &st->lowered))) return s;
  if (st->lowered->kernel_count != 1)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                      "node %u '%s' (%s) has no kernel of its own: its output is a view of its input", node_id,
                      node->name, ingot_op_name(node->op));
  ingot_kernel_t* kernel = &st->lowered->kernels[0];
  if ((s = driver_schedule_kernel(kernel, &target, NULL, request, NULL, &st->schedule)))
    return ingot_fail_prefix(s, "node '%s' (%s)", node->name, ingot_op_name(node->op));
  if (fault == DRIVER_FAULT_COMPILE)
    return ingot_fail(INGOT_ERROR_INTERNAL, "node '%s' (%s): a compile failure planted for a test", node->name,
                      ingot_op_name(node->op));
  if (fault && (s = inject_fault(kernel->func, fault))) return s;

  char* text = driver_canonical_text(kernel->func);
  const char* symbol = driver_kernel_symbol(&st->arena, g, kernel, &target, text);
  free(text);
  kernel->func->name = symbol;
  size_t size = 0;
  ingot_ir_func_t* funcs[1] = {kernel->func};
  if ((s = ingot_codegen_build(funcs, 1, &target, cc, NULL, &st->object, &size))) return s;

  /* Inputs: the arguments the kernel reads that are not weights; outputs:
   * the node's outputs among its arguments that the model reads. An output
   * nothing reads (the int32 sums of a ConvInteger with its requantization
   * fused, which a schedule that folds it into the accumulators never
   * writes) stays an intermediate: its contents are no result, so the
   * measurement does not compare them. */
  uint32_t* uses = ingot_graph_use_counts(g);
  for (uint32_t v = 0; v < g->value_count; ++v) uses[v] += g->values[v].is_output; /* a graph output is read */
  uint32_t* inputs = INGOT_ARENA_ARRAY(&st->arena, uint32_t, kernel->arg_count ? kernel->arg_count : 1);
  uint32_t* outputs = INGOT_ARENA_ARRAY(&st->arena, uint32_t, kernel->arg_count ? kernel->arg_count : 1);
  uint32_t input_count = 0, output_count = 0, read_outputs = 0;
  for (uint32_t a = 0; a < kernel->arg_count; ++a)
    for (uint32_t o = 0; o < node->output_count; ++o)
      if (node->outputs[o] == kernel->args[a]) read_outputs += uses[kernel->args[a]] > 0;
  for (uint32_t a = 0; a < kernel->arg_count; ++a) {
    uint32_t v = kernel->args[a];
    bool is_output = false;
    for (uint32_t o = 0; o < node->output_count; ++o) is_output |= node->outputs[o] == v;
    if (is_output) {
      if (read_outputs == 0 || uses[v] > 0) outputs[output_count++] = v;
    } else if (g->values[v].kind != INGOT_VALUE_WEIGHT) {
      inputs[input_count++] = v;
    }
  }
  free(uses);
  const uint32_t step_kernel = 0;
  const char* names[1] = {symbol};
  ingot_bundle_code_t code;
  if ((s = driver_code_record(&st->arena, funcs, 1, &target, &step_kernel, 1, st->object, size, &code))) return s;
  driver_package_t package = {
      .graph = g,
      .steps = kernel, .step_count = 1, .step_kernel = &step_kernel,
      .kernel_names = names, .kernel_count = 1,
      .alias_of = NULL,
      .inputs = inputs, .input_count = input_count,
      .outputs = outputs, .output_count = output_count,
      .codes = &code, .code_count = 1,
  };
  return driver_package(&st->arena, &package, out_bundle, out_size, NULL);
}

ingot_status_t ingot_driver_build_kernel_bundle(const ingot_graph_t* graph, uint32_t node,
                                                const ingot_driver_schedule_t* schedule, const char* target,
                                                const char* cc, uint8_t** out_bundle, size_t* out_size) {
  return driver_build_kernel_bundle(graph, node, schedule, target, cc, DRIVER_FAULT_NONE, out_bundle, out_size);
}

ingot_status_t driver_build_kernel_bundle(const ingot_graph_t* graph, uint32_t node,
                                          const ingot_driver_schedule_t* schedule, const char* target,
                                          const char* cc, driver_fault_t fault, uint8_t** out_bundle,
                                          size_t* out_size) {
  if (out_bundle) *out_bundle = NULL;
  if (out_size) *out_size = 0;
  if (!graph || !target || !out_bundle || !out_size)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                      "ingot_driver_build_kernel_bundle: no graph, target or output");
  if (schedule && schedule->knob_count && (!schedule->knob_names || !schedule->knob_values))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_driver_build_kernel_bundle: knob count without knobs");
  kernel_state_t st;
  memset(&st, 0, sizeof(st));
  ingot_arena_init(&st.arena, ingot_allocator_system());
  ingot_schedule_init(&st.schedule);
  ingot_status_t s = build(graph, node, schedule, target, cc, fault, &st, out_bundle, out_size);
  free(st.object);
  ingot_schedule_deinit(&st.schedule);
  if (st.lowered) ingot_lowered_destroy(st.lowered);
  ingot_arena_deinit(&st.arena);
  return s;
}
