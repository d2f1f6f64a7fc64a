/* Sessions: a device and an arena from the loaded variant's loader
 * (runtime/loader.h), argument pointers prepared once, and a run that
 * launches the steps through that loader. A run allocates nothing. */
#define _DEFAULT_SOURCE 1
#include <string.h>
#include <time.h>

#include "runtime_internal.h"

struct ingot_session_t {
  ingot_bundle_t* bundle;      /* borrowed */
  ingot_allocator_t allocator;
  const ingot_rt_loader_t* loader; /* the bundle's, borrowed */
  ingot_rt_device_t* device;
  uint8_t* arena;              /* plan.arena_bytes, a device buffer */
  void** args;                 /* bundle->arg_count pointers, in step order */
};

/* Where tensor t lives for this session. */
static void* tensor_data(const ingot_session_t* s, uint32_t t) {
  const ingot_rt_tensor_t* tensor = &s->bundle->tensors[t];
  if (tensor->storage == INGOT_STORAGE_WEIGHT) return s->bundle->weights + tensor->offset;
  return s->arena + tensor->offset;
}

ingot_status_t ingot_session_create(ingot_bundle_t* bundle, const ingot_session_options_t* options,
                                    ingot_session_t** out_session) {
  if (!out_session) return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "session: out_session is NULL");
  *out_session = NULL;
  if (!bundle) return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "session: bundle is NULL");
  ingot_allocator_t allocator = bundle->allocator;
  uint32_t threads = 0;
  if (options) {
    if (options->allocator.fn) allocator = options->allocator;
    threads = options->threads;
  }
  const ingot_rt_loader_t* loader = bundle->loader;
  /* Weights are read in place and inputs and outputs handed out as arena
   * pointers: that needs host-visible device memory. A device loader adds
   * staging copies (buffer_copy) here. */
  if (!loader->host_visible)
    return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED, "session: loader %s keeps buffers off the host",
                         loader->name);

  ingot_session_t* s = (ingot_session_t*)ingot_rt_alloc(allocator, sizeof *s);
  if (!s) return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "session: out of memory");
  memset(s, 0, sizeof *s);
  s->bundle = bundle;
  s->allocator = allocator;
  s->loader = loader;
  ingot_status_t status = loader->device_create(threads, allocator, &s->device);
  if (status == INGOT_OK) status = loader->buffer_alloc(s->device, bundle->arena_bytes, (void**)&s->arena);
  if (status != INGOT_OK) {
    ingot_session_release(s);
    return status;
  }
  s->args = (void**)ingot_rt_alloc(allocator, sizeof(void*) * bundle->arg_count);
  if (!s->args) {
    ingot_session_release(s);
    return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "session: out of memory");
  }
  for (uint32_t i = 0; i < bundle->arg_count; ++i) s->args[i] = tensor_data(s, bundle->args[i]);
  *out_session = s;
  return INGOT_OK;
}

void ingot_session_release(ingot_session_t* s) {
  if (!s) return;
  ingot_rt_free(s->allocator, s->args);
  if (s->arena) s->loader->buffer_free(s->device, s->arena);
  if (s->device) s->loader->device_release(s->device);
  ingot_rt_free(s->allocator, s);
}

void* ingot_session_input_data(ingot_session_t* s, uint32_t index) {
  if (!s || index >= s->bundle->input_count) return NULL;
  return tensor_data(s, s->bundle->inputs[index]);
}

const void* ingot_session_output_data(const ingot_session_t* s, uint32_t index) {
  if (!s || index >= s->bundle->output_count) return NULL;
  return tensor_data(s, s->bundle->outputs[index]);
}

static uint64_t monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Walks the steps; with step_ns, times each one. */
static ingot_status_t run_steps(ingot_session_t* s, uint64_t* step_ns) {
  if (!s) return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "session: NULL session");
  const ingot_bundle_t* b = s->bundle;
  const ingot_rt_loader_t* loader = s->loader;
#if INGOT_RT_FUZZING
  (void)step_ns;
  return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED, "session: a fuzzing build never runs bundle code");
#endif
  for (uint32_t i = 0; i < b->step_count; ++i) {
    const ingot_rt_step_t* step = &b->steps[i];
    uint64_t t0 = step_ns ? monotonic_ns() : 0;
    int32_t rc = loader->launch(s->device, step->kernel, &step->launch, s->args + step->arg_begin);
    if (step_ns) step_ns[i] += monotonic_ns() - t0;
    if (rc != 0)
      return ingot_rt_fail(INGOT_ERROR_INTERNAL, "session: step %u (node '%s', kernel '%s') returned %d",
                           i, step->node_name, step->kernel_name, (int)rc);
  }
  return INGOT_OK;
}

ingot_status_t ingot_session_run(ingot_session_t* s) { return run_steps(s, NULL); }

ingot_status_t ingot_session_run_profiled(ingot_session_t* s, uint64_t* step_ns) {
  if (!step_ns) return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "session: NULL step_ns");
  return run_steps(s, step_ns);
}

uint32_t ingot_bundle_step_count(const ingot_bundle_t* b) { return b ? b->step_count : 0; }

ingot_status_t ingot_bundle_step_info(const ingot_bundle_t* b, uint32_t index, const char** out_node_name,
                                      const char** out_kernel_name) {
  if (!b || index >= b->step_count)
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle: no step %u", index);
  if (out_node_name) *out_node_name = b->steps[index].node_name;
  if (out_kernel_name) *out_kernel_name = b->steps[index].kernel_name;
  return INGOT_OK;
}
