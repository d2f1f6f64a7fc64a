/* Sessions: an arena sized by the plan, argument pointers prepared once, a
 * thread pool, and a run that walks the steps. A run allocates nothing. */
#define _DEFAULT_SOURCE 1
#include <math.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime_internal.h"

#define INGOT_RT_MAX_THREADS 256u

struct ingot_session_t {
  ingot_bundle_t* bundle;      /* borrowed */
  ingot_allocator_t allocator;
  uint8_t* arena;              /* plan.arena_bytes, 64-aligned */
  void** args;                 /* bundle->arg_count pointers, in step order */
  ingot_thread_pool_t* pool;
  ingot_kernel_env_t env;
};

/* Where tensor t lives for this session. */
static void* tensor_data(const ingot_session_t* s, uint32_t t) {
  const ingot_rt_tensor_t* tensor = &s->bundle->tensors[t];
  if (tensor->storage == INGOT_STORAGE_WEIGHT) return s->bundle->weights + tensor->offset;
  return s->arena + tensor->offset;
}

static uint32_t default_threads(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) return 1;
  return n > (long)INGOT_RT_MAX_THREADS ? INGOT_RT_MAX_THREADS : (uint32_t)n;
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
  if (threads == 0) threads = default_threads();
  if (threads > INGOT_RT_MAX_THREADS)
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "session: %u threads, at most %u", threads,
                         INGOT_RT_MAX_THREADS);

  ingot_session_t* s = (ingot_session_t*)ingot_rt_alloc(allocator, sizeof *s);
  if (!s) return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "session: out of memory");
  memset(s, 0, sizeof *s);
  s->bundle = bundle;
  s->allocator = allocator;
  /* At least 64 bytes so the allocator's 64-byte alignment promise holds. */
  size_t arena_bytes = bundle->arena_bytes < 64 ? 64 : (size_t)bundle->arena_bytes;
  s->arena = (uint8_t*)ingot_rt_alloc(allocator, arena_bytes);
  s->args = (void**)ingot_rt_alloc(allocator, sizeof(void*) * bundle->arg_count);
  if (!s->arena || !s->args) {
    ingot_session_release(s);
    return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "session: cannot allocate an arena of %zu bytes",
                         arena_bytes);
  }
  if (((uintptr_t)s->arena & 63) != 0) {
    ingot_session_release(s);
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "session: the allocator broke 64-byte alignment");
  }
  for (uint32_t i = 0; i < bundle->arg_count; ++i) s->args[i] = tensor_data(s, bundle->args[i]);
  ingot_status_t status = ingot_thread_pool_create(threads, allocator, &s->pool);
  if (status != INGOT_OK) {
    ingot_session_release(s);
    return status;
  }
  s->env.abi_version = INGOT_KERNEL_ABI_VERSION;
  s->env.thread_count = threads;
  s->env.pool = s->pool;
  s->env.parallel_for = ingot_thread_pool_parallel_for;
  s->env.expf = expf;
  s->env.logf = logf;
  s->env.tanhf = tanhf;
  s->env.erff = erff;
  s->env.powf = powf;
  *out_session = s;
  return INGOT_OK;
}

void ingot_session_release(ingot_session_t* s) {
  if (!s) return;
  ingot_thread_pool_release(s->pool);
  ingot_rt_free(s->allocator, s->args);
  ingot_rt_free(s->allocator, s->arena);
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
#if INGOT_RT_FUZZING
  (void)step_ns;
  return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED, "session: a fuzzing build never runs bundle code");
#endif
  for (uint32_t i = 0; i < b->step_count; ++i) {
    const ingot_rt_step_t* step = &b->steps[i];
    uint64_t t0 = step_ns ? monotonic_ns() : 0;
    int32_t rc = step->fn(&s->env, s->args + step->arg_begin);
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
