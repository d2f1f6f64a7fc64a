/* Sessions: a device and an arena from the loaded variant's loader
 * (runtime/loader.h), argument pointers prepared once, and a run that
 * launches the steps through that loader. A run allocates nothing.
 *
 * Host-visible devices (CPU_ELF) read weights in place and hand out arena
 * pointers for inputs and outputs. Other devices (CUDA) get the weights
 * uploaded once per session into a device buffer, and host staging buffers
 * for inputs and outputs: a run copies the inputs in, launches every step,
 * waits, and copies the outputs out. */
#define _DEFAULT_SOURCE 1
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "runtime_internal.h"

struct ingot_session_t {
  ingot_bundle_t* bundle;      /* borrowed */
  ingot_allocator_t allocator;
  const ingot_rt_loader_t* loader; /* the bundle's, borrowed */
  ingot_rt_device_t* device;
  uint8_t* arena;              /* plan.arena_bytes, a device buffer */
  uint8_t* weights;            /* device copy of the weights (not host-visible), else NULL */
  void** args;                 /* bundle->arg_count pointers, in step order */
  /* Not host-visible only: a host buffer per input, then per output. */
  uint8_t** staging;
};

/* Where tensor t lives on the device for this session. */
static void* tensor_data(const ingot_session_t* s, uint32_t t) {
  const ingot_rt_tensor_t* tensor = &s->bundle->tensors[t];
  if (tensor->storage == INGOT_STORAGE_WEIGHT)
    return (s->weights ? s->weights : s->bundle->weights) + tensor->offset;
  return s->arena + tensor->offset;
}

/* Weights on the device and host staging buffers for inputs and outputs. */
static ingot_status_t stage_create(ingot_session_t* s) {
  const ingot_bundle_t* b = s->bundle;
  ingot_status_t status = s->loader->buffer_alloc(s->device, b->weights_bytes, (void**)&s->weights);
  if (status == INGOT_OK)
    status = s->loader->buffer_copy(s->device, s->weights, b->weights, b->weights_bytes, INGOT_RT_COPY_TO_DEVICE);
  if (status != INGOT_OK) return status;
  uint32_t n = b->input_count + b->output_count;
  s->staging = (uint8_t**)ingot_rt_alloc(s->allocator, sizeof(uint8_t*) * (n ? n : 1));
  if (!s->staging) return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "session: out of memory");
  memset(s->staging, 0, sizeof(uint8_t*) * (n ? n : 1));
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t t = i < b->input_count ? b->inputs[i] : b->outputs[i - b->input_count];
    size_t bytes = b->tensors[t].info.bytes;
    s->staging[i] = (uint8_t*)ingot_rt_alloc(s->allocator, bytes < 64 ? 64 : bytes);
    if (!s->staging[i]) return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "session: out of memory");
  }
  return INGOT_OK;
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
  if (threads > INGOT_SESSION_THREADS_MAX)
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "session: %u threads (at most %u)", threads,
                         INGOT_SESSION_THREADS_MAX);
  const ingot_rt_loader_t* loader = bundle->loader;
  if (!loader)
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT,
                         "session: the bundle was opened with device 'none' (no code loaded); open it with "
                         "another device to run it");

  ingot_session_t* s = (ingot_session_t*)ingot_rt_alloc(allocator, sizeof *s);
  if (!s) return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "session: out of memory");
  memset(s, 0, sizeof *s);
  s->bundle = bundle;
  s->allocator = allocator;
  s->loader = loader;
  ingot_status_t status = loader->device_create(threads, allocator, &s->device);
  if (status == INGOT_OK) status = loader->buffer_alloc(s->device, bundle->arena_bytes, (void**)&s->arena);
  if (status == INGOT_OK && !loader->host_visible) status = stage_create(s);
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
  if (s->staging) {
    for (uint32_t i = 0; i < s->bundle->input_count + s->bundle->output_count; ++i)
      ingot_rt_free(s->allocator, s->staging[i]);
    ingot_rt_free(s->allocator, s->staging);
  }
  if (s->weights) s->loader->buffer_free(s->device, s->weights);
  if (s->arena) s->loader->buffer_free(s->device, s->arena);
  if (s->device) s->loader->device_release(s->device);
  ingot_rt_free(s->allocator, s);
}

void* ingot_session_input_data(ingot_session_t* s, uint32_t index) {
  if (!s || index >= s->bundle->input_count) return NULL;
  if (s->staging) return s->staging[index];
  return tensor_data(s, s->bundle->inputs[index]);
}

const void* ingot_session_output_data(const ingot_session_t* s, uint32_t index) {
  if (!s || index >= s->bundle->output_count) return NULL;
  if (s->staging) return s->staging[s->bundle->input_count + index];
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
  ingot_status_t status = INGOT_OK;
  for (uint32_t i = 0; s->staging && i < b->input_count && status == INGOT_OK; ++i) {
    uint32_t t = b->inputs[i];
    status = loader->buffer_copy(s->device, tensor_data(s, t), s->staging[i], b->tensors[t].info.bytes,
                                 INGOT_RT_COPY_TO_DEVICE);
  }
  if (status != INGOT_OK) return status;
  for (uint32_t i = 0; i < b->step_count; ++i) {
    const ingot_rt_step_t* step = &b->steps[i];
    uint64_t t0 = step_ns ? monotonic_ns() : 0;
    status = loader->launch(s->device, step->kernel, &step->launch, s->args + step->arg_begin, step->arg_count);
    /* A queued launch is timed to its end when profiling, so a device
     * fault is then pinned to its step. */
    if (status == INGOT_OK && step_ns && loader->finish) status = loader->finish(s->device);
    if (step_ns) step_ns[i] += monotonic_ns() - t0;
    if (status != INGOT_OK) {
      char why[384];
      snprintf(why, sizeof why, "%s", ingot_last_error());
      return ingot_rt_fail(status, "session: step %u (node '%s', kernel '%s'): %s", i, step->node_name,
                           step->kernel_name, why);
    }
  }
  if (loader->finish && (status = loader->finish(s->device)) != INGOT_OK) {
    char why[384];
    snprintf(why, sizeof why, "%s", ingot_last_error());
    return ingot_rt_fail(status,
                         "session: %s (a device fault shows at the end of the run; a profiled run names its step)",
                         why);
  }
  for (uint32_t i = 0; s->staging && i < b->output_count && status == INGOT_OK; ++i) {
    uint32_t t = b->outputs[i];
    status = loader->buffer_copy(s->device, s->staging[b->input_count + i], tensor_data(s, t),
                                 b->tensors[t].info.bytes, INGOT_RT_COPY_TO_HOST);
  }
  return status;
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
