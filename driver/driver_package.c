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
                                      ingot_schedule_choice_t* choice, ingot_schedule_t* out_schedule) {
  ingot_status_t s;
  if ((s = ingot_ir_verify(kernel->func))) return s;
  if (request) {
    const char* name = request->template_name ? request->template_name : ingot_schedule_template_default(kernel, target);
    if (!name)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "kernel '%s': no schedule template for op class %d",
                        kernel->func->name, (int)kernel->op_class);
    s = ingot_schedule_from_template(kernel, target, name, request->knob_names, request->knob_values,
                                     request->knob_count, out_schedule);
  } else {
    s = ingot_schedule_choose(kernel, target, log, choice, out_schedule);
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
  /* named by its (last) output; inputs a schedule appended (range sizes)
   * come after it */
  uint32_t last = kernel->func->buffer_count - 1;
  for (uint32_t b = 0; b < kernel->func->buffer_count; ++b)
    if (kernel->func->buffers[b].role == INGOT_IR_BUFFER_OUTPUT) last = b;
  const ingot_ir_buffer_t* out = &kernel->func->buffers[last];
  const char* dtype = out->dtype == INGOT_DTYPE_F32 ? "f32" : ingot_dtype_name(out->dtype);
  const char* tname = target->kind == INGOT_TARGET_C ? "c" : "x";
  return ingot_arena_printf(arena, "%s_%s_%s_%08x", op, dtype, tname, fnv1a(text));
}

/* ---- the bundle spec ------------------------------------------------------ */

static uint32_t resolve_alias(const uint32_t* alias_of, uint32_t value_count, uint32_t v) {
  while (alias_of && v < value_count && alias_of[v] != INGOT_NO_VALUE) v = alias_of[v];
  return v;
}

/* ---- variants with weight layouts of their own --------------------------- */

static bool same_shape(const ingot_value_t* a, const ingot_value_t* b) {
  if (a->dtype != b->dtype || a->rank != b->rank) return false;
  for (int32_t d = 0; d < a->rank; ++d)
    if (a->dims[d] != b->dims[d]) return false;
  return true;
}

/* Variant c's graph, and whether it is the lead's. */
static const ingot_graph_t* variant_graph(const driver_package_t* p, uint32_t c) {
  return p->variant_graphs && p->variant_graphs[c] ? p->variant_graphs[c] : p->graph;
}

/* Whether tensor t (its values per variant so far in value[c * cap + t])
 * can stand for the values cv[c]. */
static bool pairing_fits(const uint32_t* value, uint32_t cap, uint32_t nc, uint32_t t, const uint32_t* cv) {
  for (uint32_t c = 0; c < nc; ++c)
    if (value[(size_t)c * cap + t] != UINT32_MAX && value[(size_t)c * cap + t] != cv[c]) return false;
  return true;
}

/* Pairs every step argument of the first variant with the values of the
 * others (the same step, the same argument position). A value that is not a
 * weight must pair one-to-one with a value of the same name and shape in
 * each variant (the variants share the arena and the data flow); a weight
 * pairs with any weight, and each distinct pairing is one tensor (the
 * first, of lead value v, is tensor_of[v]; others are appended after
 * *io_count). Sets arg_tensor[k][a], and each variant's weights in codes[c]
 * (variants lowered from the lead graph keep NULL: the tensors' data). */
static ingot_status_t pair_variants(ingot_arena_t* A, const driver_package_t* p, const uint32_t* tensor_of,
                                    ingot_bundle_tensor_t* tensors, uint32_t cap, uint32_t* io_count,
                                    uint32_t** arg_tensor, ingot_bundle_code_t* codes) {
  const ingot_graph_t* g = p->graph;
  const uint32_t nc = p->code_count, nv = g->value_count, first_extra = *io_count;
  uint32_t count = *io_count;
  if (p->variant_graphs[0] != g || nc > INGOT_DRIVER_MAX_TARGETS)
    return ingot_fail(INGOT_ERROR_INTERNAL, "bundle: variant 0 must describe the tensors, at most %u variants",
                      INGOT_DRIVER_MAX_TARGETS);
  /* value[c * cap + t]: variant c's value for tensor t; lead[t]: the lead's. */
  uint32_t* value = INGOT_ARENA_ARRAY(A, uint32_t, (size_t)nc * cap);
  uint32_t* lead = INGOT_ARENA_ARRAY(A, uint32_t, cap);
  for (size_t i = 0; i < (size_t)nc * cap; ++i) value[i] = UINT32_MAX;
  for (uint32_t v = 0; v < nv; ++v)
    if (tensor_of[v] != UINT32_MAX) lead[tensor_of[v]] = v;
  uint32_t** paired = INGOT_ARENA_ARRAY(A, uint32_t*, nc); /* per variant value: its tensor (non-weights) */
  for (uint32_t c = 0; c < nc; ++c) {
    const ingot_graph_t* gc = variant_graph(p, c);
    paired[c] = INGOT_ARENA_ARRAY(A, uint32_t, gc->value_count ? gc->value_count : 1);
    for (uint32_t v = 0; v < gc->value_count; ++v) paired[c][v] = UINT32_MAX;
    /* Inputs and outputs correspond by position. */
    bool ok = gc->input_count == p->input_count && gc->output_count == p->output_count;
    for (uint32_t i = 0; ok && i < p->input_count; ++i)
      ok = !strcmp(gc->values[gc->inputs[i]].name, g->values[p->inputs[i]].name) &&
           same_shape(&gc->values[gc->inputs[i]], &g->values[p->inputs[i]]);
    for (uint32_t i = 0; ok && i < p->output_count; ++i)
      ok = !strcmp(gc->values[gc->outputs[i]].name, g->values[p->outputs[i]].name) &&
           same_shape(&gc->values[gc->outputs[i]], &g->values[p->outputs[i]]);
    if (!ok)
      return ingot_fail(INGOT_ERROR_INTERNAL, "bundle: variant '%s' has other inputs or outputs than variant '%s'",
                        codes[c].target, codes[0].target);
  }
  uint32_t cv[INGOT_DRIVER_MAX_TARGETS];
  for (uint32_t k = 0; k < p->step_count; ++k) {
    const ingot_kernel_t* kn = &p->steps[k];
    const ingot_node_t* node = &g->nodes[kn->node];
    for (uint32_t a = 0; a < kn->arg_count; ++a) {
      uint32_t lv = kn->args[a];
      const ingot_value_t* lval = &g->values[lv];
      bool weight = lval->kind == INGOT_VALUE_WEIGHT;
      for (uint32_t c = 0; c < nc; ++c) {
        const ingot_graph_t* gc = variant_graph(p, c);
        const ingot_kernel_t* kc = &p->variant_steps[c][k];
        cv[c] = a < kc->arg_count ? kc->args[a] : UINT32_MAX;
        const ingot_value_t* cval = cv[c] < gc->value_count ? &gc->values[cv[c]] : NULL;
        bool ok = cval && (cval->kind == INGOT_VALUE_WEIGHT) == weight &&
                  strcmp(gc->nodes[kc->node].name, node->name) == 0;
        if (ok && !weight) {
          /* Same name, shape and alias root; paired with nothing else. */
          const ingot_value_t* root = &g->values[resolve_alias(p->alias_of, nv, lv)];
          const ingot_value_t* root_c = &gc->values[resolve_alias(p->variant_alias_of[c], gc->value_count, cv[c])];
          uint32_t* mine = &value[(size_t)c * cap + tensor_of[lv]];
          uint32_t* back = &paired[c][cv[c]];
          ok = !strcmp(cval->name, lval->name) && same_shape(cval, lval) && !strcmp(root->name, root_c->name) &&
               (*mine == UINT32_MAX || *mine == cv[c]) && (*back == UINT32_MAX || *back == tensor_of[lv]);
          if (ok) {
            *mine = cv[c];
            *back = tensor_of[lv];
          }
        }
        if (!ok)
          return ingot_fail(INGOT_ERROR_INTERNAL,
                            "node '%s' (%s): argument %u is '%s' for target '%s' but '%s' for target '%s'; a layout "
                            "choice changed the graph's structure, which the variants of one bundle must share",
                            node->name, ingot_op_name(node->op), a, lval->name, codes[0].target,
                            cval ? cval->name : "(none)", codes[c].target);
      }
      if (!weight) {
        arg_tensor[k][a] = tensor_of[lv];
        continue;
      }
      /* The tensor of this pairing: lead's own when unpaired or the same,
       * else an earlier extra, else a new one. */
      uint32_t t = tensor_of[lv];
      uint32_t found = pairing_fits(value, cap, nc, t, cv) ? t : UINT32_MAX;
      for (uint32_t u = first_extra; found == UINT32_MAX && u < count; ++u)
        if (lead[u] == lv && pairing_fits(value, cap, nc, u, cv)) found = u;
      if (found == UINT32_MAX) {
        if (count >= cap) return ingot_fail(INGOT_ERROR_INTERNAL, "bundle: too many weight pairings");
        found = count++;
        tensors[found] = tensors[t];
        tensors[found].name = ingot_arena_printf(A, "%s_variant%u", tensors[t].name, found - first_extra + 1);
        lead[found] = lv;
      }
      for (uint32_t c = 0; c < nc; ++c) value[(size_t)c * cap + found] = cv[c];
      arg_tensor[k][a] = found;
    }
  }
  for (uint32_t c = 0; c < nc; ++c) {
    const ingot_graph_t* gc = variant_graph(p, c);
    if (gc == g) continue;
    ingot_bundle_weight_t* w = INGOT_ARENA_ARRAY(A, ingot_bundle_weight_t, count ? count : 1);
    memset(w, 0, sizeof(*w) * (count ? count : 1));
    for (uint32_t t = 0; t < count; ++t) {
      if (tensors[t].storage != INGOT_STORAGE_WEIGHT) continue;
      uint32_t v = value[(size_t)c * cap + t];
      if (v == UINT32_MAX)
        return ingot_fail(INGOT_ERROR_INTERNAL, "bundle: weight '%s' is read by no step of variant '%s'",
                          tensors[t].name, codes[c].target);
      w[t] = (ingot_bundle_weight_t){.data = gc->values[v].data, .bytes = ingot_value_bytes(&gc->values[v])};
    }
    codes[c].weights = w;
  }
  *io_count = count;
  return INGOT_OK;
}

ingot_status_t driver_code_record(ingot_arena_t* A, ingot_ir_func_t* const* funcs, uint32_t count,
                                  const ingot_target_t* target, const uint32_t* step_kernel, uint32_t step_count,
                                  const uint8_t* object, size_t size, ingot_bundle_code_t* out_code) {
  *out_code = (ingot_bundle_code_t){.target = target->name, .data = object, .size = size,
                                    .loader = INGOT_LOADER_CPU_ELF};
  if (target->kind != INGOT_TARGET_CUDA && target->kind != INGOT_TARGET_ROCM) return INGOT_OK;
  out_code->loader = target->kind == INGOT_TARGET_CUDA ? INGOT_LOADER_CUDA : INGOT_LOADER_HIP;
  ingot_launch_record_t* per_kernel = INGOT_ARENA_ARRAY(A, ingot_launch_record_t, count ? count : 1);
  ingot_status_t s = ingot_codegen_gpu_launches(funcs, count, target, per_kernel);
  if (s) return s;
  ingot_launch_record_t* launches = INGOT_ARENA_ARRAY(A, ingot_launch_record_t, step_count ? step_count : 1);
  for (uint32_t k = 0; k < step_count; ++k) {
    launches[k] = per_kernel[step_kernel[k]];
    launches[k].kernel = step_kernel[k];
  }
  out_code->launches = launches;
  return INGOT_OK;
}

ingot_status_t driver_bundle_spec(ingot_arena_t* A, const driver_package_t* p, ingot_bundle_spec_t* out_spec) {
  memset(out_spec, 0, sizeof(*out_spec));
  const ingot_graph_t* g = p->graph;
  const uint32_t nv = g->value_count;
  uint32_t steps = p->step_count;

  /* Tensor index per graph value, UINT32_MAX where the value needs no storage. */
  uint32_t* tensor_of = INGOT_ARENA_ARRAY(A, uint32_t, nv ? nv : 1);
  for (uint32_t v = 0; v < nv; ++v) tensor_of[v] = UINT32_MAX;
  /* Room for one extra weight tensor per step argument (pair_variants). */
  uint32_t cap = nv;
  for (uint32_t k = 0; p->variant_graphs && k < steps; ++k) cap += p->steps[k].arg_count;
  ingot_bundle_tensor_t* tensors = INGOT_ARENA_ARRAY(A, ingot_bundle_tensor_t, cap ? cap : 1);
  uint32_t tensor_count = 0;

  /* Which values are used at all: kernel arguments, inputs, outputs, and
   * the roots of aliases. */
  bool* used = INGOT_ARENA_ARRAY(A, bool, nv ? nv : 1);
  bool* is_output = INGOT_ARENA_ARRAY(A, bool, nv ? nv : 1);
  memset(used, 0, sizeof(bool) * nv);
  memset(is_output, 0, sizeof(bool) * nv);
  for (uint32_t k = 0; k < steps; ++k)
    for (uint32_t a = 0; a < p->steps[k].arg_count; ++a) used[p->steps[k].args[a]] = true;
  for (uint32_t i = 0; i < p->input_count; ++i) {
    used[p->inputs[i]] = true;
    /* A ranged input's shape tensor (the runtime fills it; shape_of). */
    uint32_t shape = g->values[p->inputs[i]].range_shape;
    if (shape && shape - 1 < nv) used[shape - 1] = true;
  }
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
  uint32_t** arg_tensor = INGOT_ARENA_ARRAY(A, uint32_t*, steps ? steps : 1);
  for (uint32_t k = 0; k < steps; ++k) {
    const ingot_kernel_t* kn = &p->steps[k];
    arg_tensor[k] = INGOT_ARENA_ARRAY(A, uint32_t, kn->arg_count ? kn->arg_count : 1);
    for (uint32_t a = 0; a < kn->arg_count; ++a) arg_tensor[k][a] = tensor_of[kn->args[a]];
  }
  const ingot_bundle_code_t* codes = p->codes;
  if (p->variant_graphs) {
    ingot_bundle_code_t* own = INGOT_ARENA_ARRAY(A, ingot_bundle_code_t, p->code_count ? p->code_count : 1);
    memcpy(own, p->codes, sizeof(*own) * p->code_count);
    ingot_status_t s = pair_variants(A, p, tensor_of, tensors, cap, &tensor_count, arg_tensor, own);
    if (s) return s;
    codes = own;
  }
  /* Guards (graph/: node.guard): a step may be skipped by its condition
   * only once the condition is there, a graph input or an argument of an
   * earlier step; before that it runs (and so do the earlier steps it
   * reads: they come before it). */
  uint32_t* first_use = INGOT_ARENA_ARRAY(A, uint32_t, nv ? nv : 1);
  for (uint32_t v = 0; v < nv; ++v) first_use[v] = UINT32_MAX;
  for (uint32_t i = 0; i < p->input_count; ++i) first_use[p->inputs[i]] = 0;
  for (uint32_t k = 0; k < steps; ++k)
    for (uint32_t a = 0; a < p->steps[k].arg_count; ++a)
      if (first_use[p->steps[k].args[a]] == UINT32_MAX) first_use[p->steps[k].args[a]] = k + 1;
  ingot_bundle_step_t* bsteps = INGOT_ARENA_ARRAY(A, ingot_bundle_step_t, steps ? steps : 1);
  for (uint32_t k = 0; k < steps; ++k) {
    const ingot_kernel_t* kn = &p->steps[k];
    const ingot_node_t* node = &g->nodes[kn->node];
    const uint32_t* args = arg_tensor[k];
    bsteps[k].kernel = p->step_kernel[k];
    bsteps[k].args = args;
    bsteps[k].arg_count = kn->arg_count;
    bsteps[k].name = node->name;
    bsteps[k].guard = 0;
    uint32_t c = node->guard ? node->guard - 1 : UINT32_MAX;
    if (c < nv && tensor_of[c] != UINT32_MAX && tensor_of[c] < INGOT_STEP_GUARD_TENSOR_MASK &&
        tensors[tensor_of[c]].storage == INGOT_STORAGE_ARENA &&
        (first_use[c] <= k || first_use[resolve_alias(p->alias_of, nv, c)] <= k))
      bsteps[k].guard = (tensor_of[c] + 1) | (node->guard_when ? INGOT_STEP_GUARD_WHEN_TRUE : 0);
  }
  uint32_t* inputs = INGOT_ARENA_ARRAY(A, uint32_t, p->input_count ? p->input_count : 1);
  uint32_t* outputs = INGOT_ARENA_ARRAY(A, uint32_t, p->output_count ? p->output_count : 1);
  for (uint32_t i = 0; i < p->input_count; ++i) inputs[i] = tensor_of[p->inputs[i]];
  for (uint32_t i = 0; i < p->output_count; ++i) outputs[i] = tensor_of[p->outputs[i]];
  /* Checks after the run: their tensors. */
  uint32_t* checks = INGOT_ARENA_ARRAY(A, uint32_t, g->check_count ? g->check_count : 1);
  for (uint32_t i = 0; i < g->check_count; ++i) {
    checks[i] = g->checks[i] < nv ? tensor_of[g->checks[i]] : UINT32_MAX;
    if (checks[i] == UINT32_MAX || tensors[checks[i]].storage != INGOT_STORAGE_ARENA)
      return ingot_fail(INGOT_ERROR_UNSUPPORTED, "the check '%s' has no storage the run computes",
                        g->check_messages[i]);
  }
  /* Outputs whose size a step computes: the tensor holding it. */
  uint32_t* output_shapes = INGOT_ARENA_ARRAY(A, uint32_t, p->output_count ? p->output_count : 1);
  uint32_t* output_shape_dims = INGOT_ARENA_ARRAY(A, uint32_t, p->output_count ? p->output_count : 1);
  for (uint32_t i = 0; i < p->output_count; ++i) {
    uint32_t shape = g->values[p->outputs[i]].runtime_shape;
    output_shapes[i] = shape && shape - 1 < nv ? tensor_of[shape - 1] : UINT32_MAX;
    output_shape_dims[i] = shape ? g->values[p->outputs[i]].runtime_dims : 0;
    if (shape && output_shapes[i] == UINT32_MAX)
      return ingot_fail(INGOT_ERROR_INTERNAL, "output '%s': its run-time shape has no storage",
                        g->values[p->outputs[i]].name);
  }

  /* Ranged inputs: the dims mask, the least sizes and the shape tensor;
   * padded outputs. NULL when nothing is ranged (a bundle as before). */
  bool ranged = false;
  for (uint32_t i = 0; i < p->input_count; ++i) ranged |= g->values[p->inputs[i]].range_dims != 0;
  for (uint32_t i = 0; i < p->output_count; ++i) ranged |= g->values[p->outputs[i]].runtime_padded;
  uint32_t* input_shapes = NULL;
  uint32_t* input_range_dims = NULL;
  int64_t(*input_range_lo)[INGOT_MAX_RANK] = NULL;
  uint8_t* output_padded = NULL;
  if (ranged) {
    input_shapes = INGOT_ARENA_ARRAY(A, uint32_t, p->input_count ? p->input_count : 1);
    input_range_dims = INGOT_ARENA_ARRAY(A, uint32_t, p->input_count ? p->input_count : 1);
    input_range_lo = (int64_t(*)[INGOT_MAX_RANK])ingot_arena_alloc(
        A, sizeof(int64_t) * INGOT_MAX_RANK * (p->input_count ? p->input_count : 1));
    output_padded = INGOT_ARENA_ARRAY(A, uint8_t, p->output_count ? p->output_count : 1);
    for (uint32_t i = 0; i < p->input_count; ++i) {
      const ingot_value_t* in = &g->values[p->inputs[i]];
      uint32_t shape = in->range_shape;
      input_shapes[i] = shape && shape - 1 < nv ? tensor_of[shape - 1] : UINT32_MAX;
      if (shape && (input_shapes[i] == UINT32_MAX || g->values[shape - 1].shape_of != p->inputs[i] + 1))
        return ingot_fail(INGOT_ERROR_INTERNAL, "input '%s': its run-time shape has no storage", in->name);
      input_range_dims[i] = in->range_dims;
      for (uint32_t d = 0; d < INGOT_MAX_RANK; ++d)
        input_range_lo[i][d] = (int32_t)d >= in->rank ? 0 : ((in->range_dims >> d) & 1u) ? in->range_lo[d] : in->dims[d];
    }
    for (uint32_t i = 0; i < p->output_count; ++i) output_padded[i] = g->values[p->outputs[i]].runtime_padded;
  }

  *out_spec = (ingot_bundle_spec_t){
      .tensors = tensors, .tensor_count = tensor_count,
      .inputs = inputs, .input_count = p->input_count,
      .outputs = outputs, .output_count = p->output_count, .output_shapes = output_shapes,
      .output_shape_dims = output_shape_dims,
      .input_shapes = input_shapes, .input_range_dims = input_range_dims,
      .input_range_lo = (const int64_t(*)[INGOT_MAX_RANK])input_range_lo, .output_padded = output_padded,
      .checks = checks, .check_messages = (const char* const*)g->check_messages, .check_count = g->check_count,
      .steps = bsteps, .step_count = steps,
      .kernel_names = p->kernel_names, .kernel_count = p->kernel_count,
      .codes = codes, .code_count = p->code_count,
      .weights_codec = (ingot_bundle_weights_codec_t)p->weights_codec,
      .metadata = p->metadata, .metadata_count = p->metadata_count,
  };
  return INGOT_OK;
}

ingot_status_t driver_package(ingot_arena_t* A, const driver_package_t* p, uint8_t** out_data, size_t* out_size,
                              ingot_bundle_report_t* out_report) {
  ingot_bundle_spec_t spec;
  ingot_status_t s = driver_bundle_spec(A, p, &spec);
  if (s) {
    *out_data = NULL;
    *out_size = 0;
    if (out_report) memset(out_report, 0, sizeof(*out_report));
    return s;
  }
  return ingot_bundle_build(&spec, out_data, out_size, out_report);
}
