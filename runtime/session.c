/* Sessions: a device and an arena from the loaded variant's loader
 * (runtime/loader.h), argument pointers prepared once, and a run that
 * launches the steps through that loader. A run allocates nothing.
 *
 * Host-visible devices (CPU_ELF) read weights in place and hand out arena
 * pointers for inputs and outputs. Their arena is the device's own buffer,
 * the caller's memory, an arena of the session's own from a pool, or a pool
 * arena shared with other sessions (ingot_session_options_t); a shared
 * arena is marked busy for the length of each run. Other devices (CUDA) get the weights
 * uploaded once per session into a device buffer, and host staging buffers
 * for inputs and outputs: a run copies the inputs in, launches every step,
 * waits, and copies the outputs out. */
#define _DEFAULT_SOURCE 1
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "runtime_internal.h"

/* ingot_session_cancel may be called from a signal handler: only a lock-free
 * atomic is safe there. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "ingot_session_cancel needs a lock-free atomic int");

struct ingot_session_t {
  ingot_bundle_t* bundle;      /* borrowed */
  ingot_allocator_t allocator;
  const ingot_rt_loader_t* loader; /* the bundle's, borrowed */
  ingot_rt_device_t* device;
  uint8_t* arena;              /* plan.arena_bytes: a device buffer when owned */
  int arena_owned;             /* arena from loader->buffer_alloc */
  ingot_arena_t* pool_arena;   /* a pool's arena (one reference held), or NULL */
  int arena_shared;            /* pool_arena is shared: guard each run */
  uint8_t* weights;            /* device copy of the weights (not host-visible), else NULL */
  void** args;                 /* bundle->arg_count pointers, in step order */
  /* Not host-visible only: a host buffer per input, then per output. */
  uint8_t** staging;
  /* Caller-owned buffers (ingot_session_bind_input/_output): per input, then
   * per output, the bound pointer (NULL: unbound) and whether a run copies
   * it (1) or the step arguments point into it (0). */
  uint8_t** bound;
  uint8_t* bound_copy;
  atomic_int cancel;           /* ingot_session_cancel's request, consumed by a run */
  /* Per output, INGOT_MAX_RANK dims: its shape as the last run left it
   * (ingot_session_output_shape). */
  int64_t* output_dims;
  /* Per input, INGOT_MAX_RANK dims: the shape runs take it in
   * (ingot_session_set_input_shape; the bound until set). */
  int64_t* input_dims;
  /* Per slot, the bytes of the bound buffer (a ranged input is checked
   * against its shape at each run). */
  uint64_t* bound_bytes;
};

static ingot_status_t read_output_shape(ingot_session_t* s, uint32_t i);

/* Where tensor t lives on the device for this session. */
static void* tensor_data(const ingot_session_t* s, uint32_t t) {
  const ingot_rt_tensor_t* tensor = &s->bundle->tensors[t];
  if (tensor->storage == INGOT_STORAGE_WEIGHT)
    return (s->weights ? s->weights : (uint8_t*)(uintptr_t)s->bundle->weights) + tensor->offset; /* read-only */
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
  ingot_session_options_t o;
  memset(&o, 0, sizeof o);
  if (options) {
    o = *options;
    if (options->allocator.fn) allocator = options->allocator;
    threads = options->threads;
  }
  if (threads > INGOT_SESSION_THREADS_MAX)
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "session: %u threads (at most %u)", threads,
                         INGOT_SESSION_THREADS_MAX);
  if (o.shared_threads || o.parallel_for) {
    if (o.shared_threads && o.parallel_for)
      return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "session: give shared_threads or parallel_for, not both");
    if (threads != 0)
      return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT,
                           "session: threads is %u with %s (the loops run there: leave threads 0)", threads,
                           o.shared_threads ? "shared_threads" : "parallel_for");
    if (o.parallel_for_threads > INGOT_SESSION_THREADS_MAX)
      return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "session: parallel_for_threads %u (at most %u)",
                           o.parallel_for_threads, INGOT_SESSION_THREADS_MAX);
    threads = 1; /* the device's own pool: no workers */
  } else if (o.parallel_for_threads) {
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "session: parallel_for_threads without parallel_for");
  }
  const ingot_rt_loader_t* loader = bundle->loader;
  if (!loader)
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT,
                         "session: the bundle was opened with device 'none' (no code loaded); open it with "
                         "another device to run it");
  int sources = (o.arena != NULL || o.arena_bytes != 0) + (o.pool != NULL) + (o.shared_arena != NULL);
  if (sources > 1)
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT,
                         "session: give at most one of arena, pool and shared_arena");
  if (sources && !loader->host_visible)
    return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED,
                         "session: a %s variant's arena is device memory; a caller's arena or a pool "
                         "serves CPU variants only", loader->name);
  if (o.arena || o.arena_bytes) {
    if (!o.arena || ((uintptr_t)o.arena & 63u) != 0)
      return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "session: the caller's arena at %p is not 64-byte aligned",
                           o.arena);
    if (o.arena_bytes < bundle->arena_bytes)
      return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT,
                           "session: the caller's arena has %llu bytes, the bundle needs %llu "
                           "(ingot_bundle_arena_bytes)",
                           (unsigned long long)o.arena_bytes, (unsigned long long)bundle->arena_bytes);
  }
  if (o.shared_arena && ingot_arena_bytes(o.shared_arena) < bundle->arena_bytes)
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT,
                         "session: the shared arena has %llu bytes, the bundle needs %llu (make the arena "
                         "with this bundle among its bundles)",
                         (unsigned long long)ingot_arena_bytes(o.shared_arena),
                         (unsigned long long)bundle->arena_bytes);

  ingot_session_t* s = (ingot_session_t*)ingot_rt_alloc(allocator, sizeof *s);
  if (!s) return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "session: out of memory");
  memset(s, 0, sizeof *s);
  atomic_init(&s->cancel, 0);
  s->bundle = bundle;
  s->allocator = allocator;
  s->loader = loader;
  ingot_status_t status = INGOT_OK;
  if (o.arena) {
    s->arena = (uint8_t*)o.arena;
  } else if (o.shared_arena) {
    ingot_rt_arena_retain(o.shared_arena);
    s->pool_arena = o.shared_arena;
    s->arena_shared = 1;
    s->arena = ingot_rt_arena_base(s->pool_arena);
  } else if (o.pool) {
    status = ingot_rt_pool_take(o.pool, bundle->arena_bytes, &s->pool_arena);
    if (status == INGOT_OK) s->arena = ingot_rt_arena_base(s->pool_arena);
  }
  if (status == INGOT_OK) status = loader->device_create(threads, allocator, &s->device);
  if (status == INGOT_OK && loader->device_set_parallel) {
    /* Loops elsewhere: the device's own pool was made with one thread (no
     * workers), above. */
    if (o.shared_threads)
      loader->device_set_parallel(s->device, ingot_rt_threads_parallel_for, o.shared_threads,
                                  ingot_threads_count(o.shared_threads));
    else if (o.parallel_for)
      loader->device_set_parallel(s->device, o.parallel_for, o.parallel_for_self,
                                  o.parallel_for_threads ? o.parallel_for_threads : ingot_rt_online_cpus());
  }
  if (status == INGOT_OK && !s->arena) {
    status = loader->buffer_alloc(s->device, bundle->arena_bytes, (void**)&s->arena);
    s->arena_owned = status == INGOT_OK;
  }
  if (status == INGOT_OK && !loader->host_visible && bundle->ranged)
    status = ingot_rt_fail(INGOT_ERROR_UNSUPPORTED,
                           "session: the bundle has ranged input dims or padded outputs, which a %s variant cannot "
                           "run (only CPU variants take ranges)", loader->name);
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
  uint32_t slots = bundle->input_count + bundle->output_count;
  s->bound = (uint8_t**)ingot_rt_alloc(allocator, sizeof(uint8_t*) * (slots ? slots : 1));
  s->bound_copy = (uint8_t*)ingot_rt_alloc(allocator, slots ? slots : 1);
  if (!s->bound || !s->bound_copy) {
    ingot_session_release(s);
    return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "session: out of memory");
  }
  memset(s->bound, 0, sizeof(uint8_t*) * (slots ? slots : 1));
  memset(s->bound_copy, 0, slots ? slots : 1);
  uint32_t nout = bundle->output_count ? bundle->output_count : 1;
  s->output_dims = (int64_t*)ingot_rt_alloc(allocator, sizeof(int64_t) * INGOT_MAX_RANK * nout);
  if (!s->output_dims) {
    ingot_session_release(s);
    return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "session: out of memory");
  }
  memset(s->output_dims, 0, sizeof(int64_t) * INGOT_MAX_RANK * nout);
  uint32_t nin = bundle->input_count ? bundle->input_count : 1;
  s->input_dims = (int64_t*)ingot_rt_alloc(allocator, sizeof(int64_t) * INGOT_MAX_RANK * nin);
  s->bound_bytes = (uint64_t*)ingot_rt_alloc(allocator, sizeof(uint64_t) * (slots ? slots : 1));
  if (!s->input_dims || !s->bound_bytes) {
    ingot_session_release(s);
    return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "session: out of memory");
  }
  memset(s->input_dims, 0, sizeof(int64_t) * INGOT_MAX_RANK * nin);
  memset(s->bound_bytes, 0, sizeof(uint64_t) * (slots ? slots : 1));
  for (uint32_t i = 0; i < bundle->input_count; ++i) {
    const ingot_tensor_info_t* info = &bundle->tensors[bundle->inputs[i]].info;
    for (uint32_t d = 0; d < info->rank; ++d) s->input_dims[i * INGOT_MAX_RANK + d] = info->dims[d];
  }
  for (uint32_t i = 0; i < bundle->output_count; ++i) {
    const ingot_tensor_info_t* info = &bundle->tensors[bundle->outputs[i]].info;
    int varies = bundle->output_shapes && bundle->output_shapes[2 * i];
    for (uint32_t d = 0; !varies && d < info->rank; ++d) s->output_dims[i * INGOT_MAX_RANK + d] = info->dims[d];
  }
  *out_session = s;
  return INGOT_OK;
}

void ingot_session_release(ingot_session_t* s) {
  if (!s) return;
  ingot_rt_free(s->allocator, s->args);
  ingot_rt_free(s->allocator, s->bound);
  ingot_rt_free(s->allocator, s->bound_copy);
  ingot_rt_free(s->allocator, s->output_dims);
  ingot_rt_free(s->allocator, s->input_dims);
  ingot_rt_free(s->allocator, s->bound_bytes);
  if (s->staging) {
    for (uint32_t i = 0; i < s->bundle->input_count + s->bundle->output_count; ++i)
      ingot_rt_free(s->allocator, s->staging[i]);
    ingot_rt_free(s->allocator, s->staging);
  }
  if (s->weights) s->loader->buffer_free(s->device, s->weights);
  if (s->arena && s->arena_owned) s->loader->buffer_free(s->device, s->arena);
  ingot_arena_release(s->pool_arena);
  if (s->device) s->loader->device_release(s->device);
  ingot_rt_free(s->allocator, s);
}

void* ingot_session_input_data(ingot_session_t* s, uint32_t index) {
  if (!s || index >= s->bundle->input_count) return NULL;
  if (s->bound[index]) return s->bound[index];
  if (s->staging) return s->staging[index];
  return tensor_data(s, s->bundle->inputs[index]);
}

const void* ingot_session_output_data(const ingot_session_t* s, uint32_t index) {
  if (!s || index >= s->bundle->output_count) return NULL;
  uint32_t slot = s->bundle->input_count + index;
  if (s->bound[slot]) return s->bound[slot];
  if (s->staging) return s->staging[slot];
  return tensor_data(s, s->bundle->outputs[index]);
}

/* ---- Caller-owned buffers ---------------------------------------------------
 * A slot is an input (0 .. input_count-1) or an output (input_count + i).
 * Zero-copy means the step arguments that name the slot's tensor point into
 * the caller's buffer. That is right only when no other tensor shares the
 * tensor's storage while it is live: the planner never overlaps two live
 * tensors in memory except an alias group (views), and since 0.4 the PLAN
 * gives every member of a group the group's interval, so "bytes overlap and
 * intervals overlap" finds exactly the sharers. The same tensor in two
 * slots, or an output kept with the weights, is copied too. */

static uint32_t slot_tensor(const ingot_bundle_t* b, uint32_t slot) {
  return slot < b->input_count ? b->inputs[slot] : b->outputs[slot - b->input_count];
}

static int storage_shared(const ingot_bundle_t* b, uint32_t slot) {
  const uint32_t t = slot_tensor(b, slot);
  const ingot_rt_tensor_t* x = &b->tensors[t];
  if (x->storage != INGOT_STORAGE_ARENA) return 1;
  for (uint32_t other = 0; other < b->input_count + b->output_count; ++other)
    if (other != slot && slot_tensor(b, other) == t) return 1;
  if (x->info.bytes == 0) return 0;
  for (uint32_t u = 0; u < b->tensor_count; ++u) {
    const ingot_rt_tensor_t* y = &b->tensors[u];
    if (u == t || y->storage != INGOT_STORAGE_ARENA || y->info.bytes == 0) continue;
    int bytes_overlap = y->offset < x->offset + x->info.bytes && x->offset < y->offset + y->info.bytes;
    int live_overlap = y->first_step <= x->last_step && x->first_step <= y->last_step;
    if (bytes_overlap && live_overlap) return 1;
  }
  return 0;
}

/* Points the step arguments that name tensor t at `data`. */
static void args_point(ingot_session_t* s, uint32_t t, void* data) {
  const ingot_bundle_t* b = s->bundle;
  for (uint32_t i = 0; i < b->arg_count; ++i)
    if (b->args[i] == t) s->args[i] = data;
}

/* Whether input i has a ranged dim. */
static int input_ranged(const ingot_bundle_t* b, uint32_t i) {
  return b->input_ranges && b->input_ranges[2 * i + 1] != 0;
}

/* Bytes of input i dense in its least shape. */
static uint64_t ranged_least_bytes(const ingot_bundle_t* b, uint32_t i) {
  const ingot_tensor_info_t* info = &b->tensors[b->inputs[i]].info;
  uint64_t bytes = ingot_dtype_size(info->dtype);
  for (uint32_t d = 0; d < info->rank; ++d) bytes *= (uint64_t)b->input_lo[(size_t)i * INGOT_MAX_RANK + d];
  return bytes;
}

static ingot_status_t bind_slot(ingot_session_t* s, uint32_t slot, uint8_t* data, uint64_t bytes) {
  const ingot_bundle_t* b = s->bundle;
  const uint32_t t = slot_tensor(b, slot);
  const ingot_rt_tensor_t* x = &b->tensors[t];
  const int is_output = slot >= b->input_count;
  const char* what = is_output ? "output" : "input";
  const int ranged = !is_output && input_ranged(b, slot);
  if (data) {
    uint64_t need = ranged ? ranged_least_bytes(b, slot) : (uint64_t)x->info.bytes;
    if (bytes < need)
      return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "session: %s '%s' needs %llu bytes%s, the buffer has %llu",
                           what, x->info.name, (unsigned long long)need, ranged ? " (its least shape)" : "",
                           (unsigned long long)bytes);
    size_t align = ingot_dtype_size(x->info.dtype);
    if (align > 1 && ((uintptr_t)data % align) != 0)
      return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT,
                           "session: %s '%s': the buffer at %p is not aligned to its %zu-byte %s elements", what,
                           x->info.name, (void*)data, align, ingot_dtype_name(x->info.dtype));
    for (uint32_t other = 0; other < b->input_count + b->output_count; ++other) {
      const uint8_t* o = s->bound[other];
      if (other == slot || !o || (!is_output && other < b->input_count)) continue;
      size_t ob = b->tensors[slot_tensor(b, other)].info.bytes;
      if (o < data + x->info.bytes && data < o + ob)
        return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT,
                             "session: %s '%s': the buffer overlaps the one bound to %s '%s'", what, x->info.name,
                             other < b->input_count ? "input" : "output", b->tensors[slot_tensor(b, other)].info.name);
    }
  }
  /* Undo the old binding, then make the new one. */
  if (s->bound[slot] && !s->bound_copy[slot] && !s->staging) args_point(s, t, tensor_data(s, t));
  s->bound[slot] = data;
  s->bound_copy[slot] = 0;
  s->bound_bytes[slot] = data ? bytes : 0;
  if (!data) return INGOT_OK;
  /* A ranged input is spread to the bound's strides in place: never in the
   * caller's (const) memory. */
  if (s->staging || ranged || storage_shared(b, slot)) {
    s->bound_copy[slot] = 1; /* GPU: the run's copy to or from the device uses it */
  } else {
    args_point(s, t, data);
  }
  return INGOT_OK;
}

ingot_status_t ingot_session_bind_input(ingot_session_t* s, uint32_t index, const void* data, uint64_t bytes) {
  if (!s) return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "session: NULL session");
  if (index >= s->bundle->input_count)
    return ingot_rt_fail(INGOT_ERROR_NOT_FOUND, "session: no input %u (the bundle has %u)", index,
                         s->bundle->input_count);
  /* The run never writes a bound input (see storage_shared): const is kept
   * in spirit, dropped only to share the argument array's type. */
  return bind_slot(s, index, (uint8_t*)(uintptr_t)data, bytes);
}

ingot_status_t ingot_session_bind_output(ingot_session_t* s, uint32_t index, void* data, uint64_t bytes) {
  if (!s) return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "session: NULL session");
  if (index >= s->bundle->output_count)
    return ingot_rt_fail(INGOT_ERROR_NOT_FOUND, "session: no output %u (the bundle has %u)", index,
                         s->bundle->output_count);
  return bind_slot(s, s->bundle->input_count + index, (uint8_t*)data, bytes);
}

int ingot_session_binding_copies(const ingot_session_t* s, int is_output, uint32_t index) {
  if (!s) return 0;
  const ingot_bundle_t* b = s->bundle;
  if (index >= (is_output ? b->output_count : b->input_count)) return 0;
  uint32_t slot = is_output ? b->input_count + index : index;
  return s->bound[slot] && s->bound_copy[slot];
}

static uint64_t monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void ingot_session_cancel(ingot_session_t* s) {
  if (s) atomic_store_explicit(&s->cancel, 1, memory_order_relaxed);
}

/* Consumes a pending cancel request: 1 when there was one. A relaxed load
 * first, so an uncancelled step boundary costs no read-modify-write. */
static int cancel_taken(ingot_session_t* s) {
  return atomic_load_explicit(&s->cancel, memory_order_relaxed) &&
         atomic_exchange_explicit(&s->cancel, 0, memory_order_relaxed);
}

/* ---- Ranged inputs and padded outputs --------------------------------------
 * A tensor of element size esize, `dims` within `bound`, moves in place
 * between dense (in dims, from the start of data) and padded (at the
 * strides of bound). Let q be the last dim where they differ: the dims
 * after it are equal, so a row of dims[q] * (the inner dims) elements is
 * contiguous in both layouts, and only the rows (indexed by dims 0..q-1)
 * move. Row k lies at k * row dense and at P(k) >= k * row padded, P
 * increasing by at least a row: spreading backwards (to_padded) and packing
 * forwards each overwrite only bytes already read. One row (every dim
 * before q is 1) is the same in both: nothing moves. */
static void relayout(uint8_t* data, size_t esize, uint32_t rank, const int64_t* dims, const int64_t* bound,
                     int to_padded) {
  int32_t q = (int32_t)rank - 1;
  while (q >= 0 && dims[q] == bound[q]) --q;
  if (q < 0) return;
  size_t pstride[INGOT_MAX_RANK]; /* padded bytes between rows along dims 0..q-1 */
  size_t inner = esize;
  for (uint32_t d = (uint32_t)q + 1; d < rank; ++d) inner *= (size_t)bound[d];
  const size_t row = inner * (size_t)dims[q];
  size_t rows = 1, stride = inner * (size_t)bound[q];
  for (int32_t d = q - 1; d >= 0; --d) {
    pstride[d] = stride;
    stride *= (size_t)bound[d];
    rows *= (size_t)dims[d];
  }
  if (rows <= 1 || row == 0) return;
  int64_t idx[INGOT_MAX_RANK];
  size_t off = 0;
  for (int32_t d = 0; d < q; ++d) {
    idx[d] = to_padded ? dims[d] - 1 : 0;
    off += (size_t)idx[d] * pstride[d];
  }
  for (size_t n = 0; n < rows; ++n) {
    size_t k = to_padded ? rows - 1 - n : n;
    if (off != k * row) {
      if (to_padded) memmove(data + off, data + k * row, row);
      else memmove(data + k * row, data + off, row);
    }
    for (int32_t d = q - 1; d >= 0; --d) { /* the next row index, with carries */
      if (to_padded ? idx[d] > 0 : idx[d] + 1 < dims[d]) {
        idx[d] += to_padded ? -1 : 1;
        off = to_padded ? off - pstride[d] : off + pstride[d];
        break;
      }
      off = to_padded ? off + (size_t)(dims[d] - 1) * pstride[d] : off - (size_t)(dims[d] - 1) * pstride[d];
      idx[d] = to_padded ? dims[d] - 1 : 0;
    }
  }
}

/* Bytes of input i dense in the session's shape for it. */
static uint64_t input_dense_bytes(const ingot_session_t* s, uint32_t i) {
  const ingot_tensor_info_t* info = &s->bundle->tensors[s->bundle->inputs[i]].info;
  uint64_t bytes = ingot_dtype_size(info->dtype);
  for (uint32_t d = 0; d < info->rank; ++d) bytes *= (uint64_t)s->input_dims[i * INGOT_MAX_RANK + d];
  return bytes;
}

/* Before the steps: each ranged input's dims into its shape tensor, its
 * data (dense, or copied from a bound buffer) spread to the bound's
 * strides. Host-visible sessions only (session create refuses others). */
static ingot_status_t ranged_inputs_spread(ingot_session_t* s) {
  const ingot_bundle_t* b = s->bundle;
  for (uint32_t i = 0; i < b->input_count; ++i) {
    if (!input_ranged(b, i)) continue;
    const ingot_tensor_info_t* info = &b->tensors[b->inputs[i]].info;
    const int64_t* dims = &s->input_dims[i * INGOT_MAX_RANK];
    uint8_t* data = (uint8_t*)tensor_data(s, b->inputs[i]);
    if (s->bound[i]) {
      uint64_t need = input_dense_bytes(s, i);
      if (s->bound_bytes[i] < need)
        return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT,
                             "session: input '%s': the bound buffer has %llu bytes, its shape needs %llu", info->name,
                             (unsigned long long)s->bound_bytes[i], (unsigned long long)need);
      if (need) memcpy(data, s->bound[i], (size_t)need);
    }
    if (b->input_ranges[2 * i]) memcpy(tensor_data(s, b->input_ranges[2 * i] - 1), dims, sizeof(int64_t) * info->rank);
    relayout(data, ingot_dtype_size(info->dtype), info->rank, dims, info->dims, 1);
  }
  return INGOT_OK;
}

/* After the steps (whatever they returned): each ranged input dense again,
 * so that the caller's view and the next run read it right. */
static void ranged_inputs_pack(ingot_session_t* s) {
  const ingot_bundle_t* b = s->bundle;
  for (uint32_t i = 0; i < b->input_count; ++i) {
    if (!input_ranged(b, i) || s->bound[i]) continue; /* a bound input's own bytes never moved */
    const ingot_tensor_info_t* info = &b->tensors[b->inputs[i]].info;
    relayout((uint8_t*)tensor_data(s, b->inputs[i]), ingot_dtype_size(info->dtype), info->rank,
             &s->input_dims[i * INGOT_MAX_RANK], info->dims, 0);
  }
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
    status = loader->buffer_copy(s->device, tensor_data(s, t), s->bound[i] ? s->bound[i] : s->staging[i],
                                 b->tensors[t].info.bytes, INGOT_RT_COPY_TO_DEVICE);
  }
  if (status != INGOT_OK) return status;
  /* Bound inputs that a host-visible run copies (storage shared). */
  for (uint32_t i = 0; !s->staging && i < b->input_count; ++i)
    if (s->bound[i] && s->bound_copy[i] && !input_ranged(b, i) && b->tensors[b->inputs[i]].info.bytes)
      memcpy(tensor_data(s, b->inputs[i]), s->bound[i], b->tensors[b->inputs[i]].info.bytes);
  for (uint32_t i = 0; i < b->step_count; ++i) {
    if (cancel_taken(s)) {
      /* Launched work may still be queued on a device: let it end first,
       * so the next run starts on an idle device. */
      if (i > 0 && loader->finish) (void)loader->finish(s->device);
      return ingot_rt_fail(INGOT_ERROR_CANCELLED, "session: cancelled before step %u of %u (node '%s')", i,
                           b->step_count, b->steps[i].node_name);
    }
    const ingot_rt_step_t* step = &b->steps[i];
    /* A step of a branch not taken (its guard is in host memory only on a
     * host-visible loader; elsewhere every step runs, which is correct too). */
    if (step->guard_tensor != UINT32_MAX && loader->host_visible &&
        (*(const uint8_t*)tensor_data(s, step->guard_tensor) != 0) != step->guard_when)
      continue;
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
    uint32_t t = b->outputs[i], slot = b->input_count + i;
    status = loader->buffer_copy(s->device, s->bound[slot] ? s->bound[slot] : s->staging[slot], tensor_data(s, t),
                                 b->tensors[t].info.bytes, INGOT_RT_COPY_TO_HOST);
  }
  /* Host-visible: the run's shapes first, then padded outputs packed dense
   * where the steps wrote them, then the copies to bound buffers. */
  for (uint32_t i = 0; !s->staging && b->output_shapes && i < b->output_count && status == INGOT_OK; ++i)
    if (b->output_shapes[2 * i]) status = read_output_shape(s, i);
  for (uint32_t i = 0; !s->staging && b->output_shapes && i < b->output_count && status == INGOT_OK; ++i) {
    uint32_t t = b->outputs[i], slot = b->input_count + i;
    if (!(b->output_shapes[2 * i + 1] & INGOT_OUTPUT_SHAPE_PADDED)) continue;
    uint8_t* data = s->bound[slot] && !s->bound_copy[slot] ? s->bound[slot] : (uint8_t*)tensor_data(s, t);
    const ingot_tensor_info_t* info = &b->tensors[t].info;
    relayout(data, ingot_dtype_size(info->dtype), info->rank, &s->output_dims[i * INGOT_MAX_RANK], info->dims, 0);
  }
  for (uint32_t i = 0; !s->staging && i < b->output_count; ++i) {
    uint32_t t = b->outputs[i], slot = b->input_count + i;
    if (s->bound[slot] && s->bound_copy[slot] && b->tensors[t].info.bytes)
      memcpy(s->bound[slot], tensor_data(s, t), b->tensors[t].info.bytes);
  }
  for (uint32_t i = 0; s->staging && b->output_shapes && i < b->output_count && status == INGOT_OK; ++i)
    if (b->output_shapes[2 * i]) status = read_output_shape(s, i);
  for (uint32_t i = 0; i < b->check_count && status == INGOT_OK; ++i) {
    uint8_t failed = 0;
    const void* flag = tensor_data(s, b->checks[2 * i]);
    if (s->staging)
      status = s->loader->buffer_copy(s->device, &failed, (void*)(uintptr_t)flag, 1, INGOT_RT_COPY_TO_HOST);
    else
      failed = *(const uint8_t*)flag;
    if (status == INGOT_OK && failed)
      status = ingot_rt_fail(INGOT_ERROR_LIMIT, "session: %s", b->strings + b->checks[2 * i + 1]);
  }
  return status;
}

/* Output i's shape as the run computed it (the bundle's output_shapes),
 * checked against its bounds, into s->output_dims. */
static ingot_status_t read_output_shape(ingot_session_t* s, uint32_t i) {
  const ingot_bundle_t* b = s->bundle;
  const ingot_tensor_info_t* info = &b->tensors[b->outputs[i]].info;
  int64_t dims[INGOT_MAX_RANK];
  uint32_t mask = b->output_shapes[2 * i + 1] & INGOT_OUTPUT_SHAPE_DIMS_MASK, top = 0;
  while (top < INGOT_MAX_RANK && (mask >> top)) ++top;
  const void* src = tensor_data(s, b->output_shapes[2 * i] - 1);
  size_t bytes = sizeof(int64_t) * top; /* the tensor holds at least dims 0 .. top - 1 */
  if (s->staging) {
    ingot_status_t status = s->loader->buffer_copy(s->device, dims, (void*)(uintptr_t)src, bytes, INGOT_RT_COPY_TO_HOST);
    if (status != INGOT_OK) return status;
  } else if (bytes) {
    memcpy(dims, src, bytes);
  }
  int64_t* out = &s->output_dims[i * INGOT_MAX_RANK];
  for (uint32_t d = 0; d < info->rank; ++d) {
    if (!((mask >> d) & 1u)) dims[d] = info->dims[d];
    if (dims[d] < 0 || dims[d] > info->dims[d]) {
      memset(out, 0, sizeof(int64_t) * INGOT_MAX_RANK);
      return ingot_rt_fail(INGOT_ERROR_INTERNAL, "session: output '%s': the run computed dimension %u = %lld, "
                           "outside its bound 0..%lld", info->name, d, (long long)dims[d], (long long)info->dims[d]);
    }
    out[d] = dims[d];
  }
  return INGOT_OK;
}

ingot_status_t ingot_session_output_shape(const ingot_session_t* s, uint32_t index, uint32_t* out_rank,
                                          int64_t* out_dims) {
  if (!s || !out_rank || !out_dims) return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "session: NULL argument");
  if (index >= s->bundle->output_count)
    return ingot_rt_fail(INGOT_ERROR_NOT_FOUND, "session: no output %u (the bundle has %u)", index,
                         s->bundle->output_count);
  const ingot_tensor_info_t* info = &s->bundle->tensors[s->bundle->outputs[index]].info;
  *out_rank = info->rank;
  for (uint32_t d = 0; d < INGOT_MAX_RANK; ++d) out_dims[d] = d < info->rank ? s->output_dims[index * INGOT_MAX_RANK + d] : 0;
  return INGOT_OK;
}

int ingot_bundle_output_shape_varies(const ingot_bundle_t* b, uint32_t index) {
  return b && index < b->output_count && b->output_shapes && b->output_shapes[2 * index] ? 1 : 0;
}

int ingot_bundle_input_shape_varies(const ingot_bundle_t* b, uint32_t index) {
  return b && index < b->input_count && input_ranged(b, index) ? 1 : 0;
}

ingot_status_t ingot_bundle_input_range(const ingot_bundle_t* b, uint32_t index, uint32_t* out_rank, int64_t* out_lo,
                                        int64_t* out_hi) {
  if (!b || !out_rank || !out_lo || !out_hi)
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle: NULL argument");
  if (index >= b->input_count)
    return ingot_rt_fail(INGOT_ERROR_NOT_FOUND, "bundle: no input %u (the bundle has %u)", index, b->input_count);
  const ingot_tensor_info_t* info = &b->tensors[b->inputs[index]].info;
  *out_rank = info->rank;
  for (uint32_t d = 0; d < INGOT_MAX_RANK; ++d) {
    out_hi[d] = d < info->rank ? info->dims[d] : 0;
    out_lo[d] = b->input_lo ? b->input_lo[(size_t)index * INGOT_MAX_RANK + d] : out_hi[d];
  }
  return INGOT_OK;
}

ingot_status_t ingot_session_set_input_shape(ingot_session_t* s, uint32_t index, uint32_t rank, const int64_t* dims) {
  if (!s || (rank && !dims)) return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "session: NULL argument");
  const ingot_bundle_t* b = s->bundle;
  if (index >= b->input_count)
    return ingot_rt_fail(INGOT_ERROR_NOT_FOUND, "session: no input %u (the bundle has %u)", index, b->input_count);
  const ingot_tensor_info_t* info = &b->tensors[b->inputs[index]].info;
  if (rank != info->rank)
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "session: input '%s' has rank %u, not %u", info->name,
                         info->rank, rank);
  uint32_t r = 0;
  int64_t lo[INGOT_MAX_RANK], hi[INGOT_MAX_RANK];
  (void)ingot_bundle_input_range(b, index, &r, lo, hi);
  for (uint32_t d = 0; d < rank; ++d) {
    if (dims[d] >= lo[d] && dims[d] <= hi[d]) continue;
    if (lo[d] == hi[d])
      return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "session: input '%s': dim %u is %lld, it is fixed at %lld",
                           info->name, d, (long long)dims[d], (long long)hi[d]);
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "session: input '%s': dim %u is %lld, outside its range %lld..%lld",
                         info->name, d, (long long)dims[d], (long long)lo[d], (long long)hi[d]);
  }
  for (uint32_t d = 0; d < rank; ++d) s->input_dims[index * INGOT_MAX_RANK + d] = dims[d];
  return INGOT_OK;
}

ingot_status_t ingot_session_input_shape(const ingot_session_t* s, uint32_t index, uint32_t* out_rank,
                                         int64_t* out_dims) {
  if (!s || !out_rank || !out_dims) return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "session: NULL argument");
  if (index >= s->bundle->input_count)
    return ingot_rt_fail(INGOT_ERROR_NOT_FOUND, "session: no input %u (the bundle has %u)", index,
                         s->bundle->input_count);
  const ingot_tensor_info_t* info = &s->bundle->tensors[s->bundle->inputs[index]].info;
  *out_rank = info->rank;
  for (uint32_t d = 0; d < INGOT_MAX_RANK; ++d) out_dims[d] = d < info->rank ? s->input_dims[index * INGOT_MAX_RANK + d] : 0;
  return INGOT_OK;
}

/* run_steps between the ranged inputs' spread and pack. */
static ingot_status_t run_ranged(ingot_session_t* s, uint64_t* step_ns) {
  if (!s->bundle->ranged) return run_steps(s, step_ns);
  ingot_status_t status = ranged_inputs_spread(s);
  if (status == INGOT_OK) status = run_steps(s, step_ns);
  ranged_inputs_pack(s);
  return status;
}

/* run_ranged, with a shared arena held busy for the run. */
static ingot_status_t run_guarded(ingot_session_t* s, uint64_t* step_ns) {
  if (!s) return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "session: NULL session");
  if (!s->arena_shared) return run_ranged(s, step_ns);
  if (!ingot_rt_arena_enter(s->pool_arena))
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT,
                         "session: another session of its shared arena is running (sessions of one "
                         "ingot_arena_t must not run at the same time)");
  ingot_status_t status = run_ranged(s, step_ns);
  ingot_rt_arena_leave(s->pool_arena);
  return status;
}

ingot_status_t ingot_session_run(ingot_session_t* s) { return run_guarded(s, NULL); }

ingot_status_t ingot_session_run_profiled(ingot_session_t* s, uint64_t* step_ns) {
  if (!step_ns) return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "session: NULL step_ns");
  return run_guarded(s, step_ns);
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
