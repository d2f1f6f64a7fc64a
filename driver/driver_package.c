/* The pieces of the pipeline that compile and the one-kernel bundle share:
 * scheduling one kernel, the canonical text and symbol of a kernel, and the
 * graph-to-bundle-spec conversion (driver_internal.h). Live intervals are not
 * computed here: the packager derives them from the steps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "driver_internal.h"

ingot_status_t driver_schedule_kernel(ingot_kernel_t* kernel, const ingot_target_t* target,
                                      const ingot_tuning_log_t* log, const ingot_driver_schedule_t* request,
                                      ingot_schedule_t* out_schedule) {
  ingot_status_t s;
  if ((s = ingot_ir_verify(kernel->func))) return s;
  if (request) {
    const char* name = request->template_name ? request->template_name : ingot_schedule_template_for(kernel->op_class);
    if (!name)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "kernel '%s': no schedule template for op class %d",
                        kernel->func->name, (int)kernel->op_class);
    s = ingot_schedule_from_template(kernel, target, name, request->knob_names, request->knob_values,
                                     request->knob_count, out_schedule);
  } else {
    s = ingot_schedule_choose(kernel, target, log, out_schedule);
  }
  if (s || (s = ingot_schedule_apply(kernel->func, out_schedule))) return s;
  return ingot_ir_verify(kernel->func);
}

/* ---- kernel deduplication and naming ------------------------------------ */

char* driver_canonical_text(ingot_ir_func_t* func) {
  const char* saved_name = func->name;
  const char* saved[256];
  uint32_t n = func->buffer_count < 256 ? func->buffer_count : 256;
  char names[256][16];
  func->name = "k";
  for (uint32_t i = 0; i < n; ++i) {
    saved[i] = func->buffers[i].name;
    snprintf(names[i], sizeof(names[i]), "b%u", i);
    func->buffers[i].name = names[i];
  }
  ingot_strbuf_t sb = {0};
  ingot_ir_print(func, &sb);
  func->name = saved_name;
  for (uint32_t i = 0; i < n; ++i) func->buffers[i].name = saved[i];
  if (!sb.data) ingot_strbuf_append(&sb, "");
  return sb.data;
}

static uint32_t fnv1a(const char* s) {
  uint32_t h = 2166136261u;
  for (; *s; ++s) h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}

const char* driver_kernel_symbol(ingot_arena_t* arena, const ingot_graph_t* graph, const ingot_kernel_t* kernel,
                                 const ingot_target_t* target, const char* text) {
  const ingot_node_t* node = &graph->nodes[kernel->node];
  char op[48];
  size_t j = 0;
  for (const char* p = ingot_op_name(node->op); *p && j + 1 < sizeof(op); ++p)
    op[j++] = (char)((*p >= 'A' && *p <= 'Z') ? *p - 'A' + 'a' : *p);
  op[j] = '\0';
  const ingot_ir_buffer_t* out = &kernel->func->buffers[kernel->func->buffer_count - 1];
  const char* dtype = out->dtype == INGOT_DTYPE_F32 ? "f32" : ingot_dtype_name(out->dtype);
  const char* tname = target->kind == INGOT_TARGET_C ? "c" : "x";
  return ingot_arena_printf(arena, "%s_%s_%s_%08x", op, dtype, tname, fnv1a(text));
}

/* ---- the bundle spec ------------------------------------------------------ */

static uint32_t resolve_alias(const uint32_t* alias_of, uint32_t value_count, uint32_t v) {
  while (alias_of && v < value_count && alias_of[v] != INGOT_NO_VALUE) v = alias_of[v];
  return v;
}

ingot_status_t driver_package(ingot_arena_t* A, const driver_package_t* p, uint8_t** out_data, size_t* out_size,
                              ingot_bundle_report_t* out_report) {
  const ingot_graph_t* g = p->graph;
  const uint32_t nv = g->value_count;
  uint32_t steps = p->step_count;

  /* Tensor index per graph value, UINT32_MAX where the value needs no storage. */
  uint32_t* tensor_of = INGOT_ARENA_ARRAY(A, uint32_t, nv ? nv : 1);
  for (uint32_t v = 0; v < nv; ++v) tensor_of[v] = UINT32_MAX;
  ingot_bundle_tensor_t* tensors = INGOT_ARENA_ARRAY(A, ingot_bundle_tensor_t, nv ? nv : 1);
  uint32_t tensor_count = 0;

  /* Which values are used at all: kernel arguments, inputs, outputs, and
   * the roots of aliases. */
  bool* used = INGOT_ARENA_ARRAY(A, bool, nv ? nv : 1);
  bool* is_output = INGOT_ARENA_ARRAY(A, bool, nv ? nv : 1);
  memset(used, 0, sizeof(bool) * nv);
  memset(is_output, 0, sizeof(bool) * nv);
  for (uint32_t k = 0; k < steps; ++k)
    for (uint32_t a = 0; a < p->steps[k].arg_count; ++a) used[p->steps[k].args[a]] = true;
  for (uint32_t i = 0; i < p->input_count; ++i) used[p->inputs[i]] = true;
  for (uint32_t i = 0; i < p->output_count; ++i) used[p->outputs[i]] = is_output[p->outputs[i]] = true;
  for (uint32_t v = 0; v < nv; ++v)
    if (used[v]) used[resolve_alias(p->alias_of, nv, v)] = true;

  for (uint32_t v = 0; v < nv; ++v) {
    if (!used[v]) continue;
    const ingot_value_t* val = &g->values[v];
    if (val->rank < 0 || val->dtype == INGOT_DTYPE_INVALID)
      return ingot_fail(INGOT_ERROR_INTERNAL, "value '%s' has no inferred shape", val->name);
    if (val->kind == INGOT_VALUE_WEIGHT && is_output[v])
      return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                        "graph output '%s' is a constant; a model whose output is fixed at compile "
                        "time is not supported", val->name);
    ingot_bundle_tensor_t* t = &tensors[tensor_count];
    memset(t, 0, sizeof(*t));
    t->name = val->name;
    t->dtype = val->dtype;
    t->rank = (uint32_t)val->rank;
    for (int32_t d = 0; d < val->rank; ++d) t->dims[d] = val->dims[d];
    t->storage = val->kind == INGOT_VALUE_WEIGHT ? INGOT_STORAGE_WEIGHT : INGOT_STORAGE_ARENA;
    t->data = val->data;
    t->alias_of = UINT32_MAX;
    tensor_of[v] = tensor_count++;
  }
  /* Aliases point at their root's tensor (roots come first or later). */
  for (uint32_t v = 0; v < nv; ++v) {
    if (tensor_of[v] == UINT32_MAX) continue;
    uint32_t root = resolve_alias(p->alias_of, nv, v);
    if (root != v) tensors[tensor_of[v]].alias_of = tensor_of[root];
  }
  ingot_bundle_step_t* bsteps = INGOT_ARENA_ARRAY(A, ingot_bundle_step_t, steps ? steps : 1);
  for (uint32_t k = 0; k < steps; ++k) {
    const ingot_kernel_t* kn = &p->steps[k];
    uint32_t* args = INGOT_ARENA_ARRAY(A, uint32_t, kn->arg_count ? kn->arg_count : 1);
    for (uint32_t a = 0; a < kn->arg_count; ++a) args[a] = tensor_of[kn->args[a]];
    bsteps[k].kernel = p->step_kernel[k];
    bsteps[k].args = args;
    bsteps[k].arg_count = kn->arg_count;
    bsteps[k].name = g->nodes[kn->node].name;
  }
  uint32_t* inputs = INGOT_ARENA_ARRAY(A, uint32_t, p->input_count ? p->input_count : 1);
  uint32_t* outputs = INGOT_ARENA_ARRAY(A, uint32_t, p->output_count ? p->output_count : 1);
  for (uint32_t i = 0; i < p->input_count; ++i) inputs[i] = tensor_of[p->inputs[i]];
  for (uint32_t i = 0; i < p->output_count; ++i) outputs[i] = tensor_of[p->outputs[i]];

  ingot_bundle_spec_t spec = {
      .tensors = tensors, .tensor_count = tensor_count,
      .inputs = inputs, .input_count = p->input_count,
      .outputs = outputs, .output_count = p->output_count,
      .steps = bsteps, .step_count = steps,
      .kernel_names = p->kernel_names, .kernel_count = p->kernel_count,
      .codes = p->codes, .code_count = p->code_count,
  };
  return ingot_bundle_build(&spec, out_data, out_size, out_report);
}
