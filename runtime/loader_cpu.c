/* The CPU_ELF loader row (runtime/loader.h): code is an ELF shared object
 * loaded by our own loader (elf_loader.c) that exports the kernel library
 * (runtime/ingot_format.h, "Kernel ABI"); a kernel is a function pointer; the
 * device is a thread pool plus the kernel environment handed to every call;
 * device buffers are host memory from the session's allocator. */
#define _DEFAULT_SOURCE 1
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "loader.h"
#include "runtime_internal.h"

struct ingot_rt_module_t {
  ingot_allocator_t allocator;
  ingot_elf_image_t* image;
  const ingot_kernel_library_t* library; /* NULL in fuzzing builds */
};

struct ingot_rt_device_t {
  ingot_allocator_t allocator;
  ingot_thread_pool_t* pool;
  ingot_kernel_env_t env;
  /* device_set_parallel's loop runner, called through parallel_trampoline. */
  ingot_parallel_for_t parallel_for;
  void* parallel_self;
};

static int cpu_code_fits(const void* code, size_t size) {
  return ingot_elf_peek_machine(code, size) == ingot_elf_host_machine();
}

/* A NUL-terminated string that lies wholly inside the loaded image. */
static int image_string_ok(const ingot_elf_image_t* im, const char* s) {
  for (size_t n = 0;; ++n) {
    if (!ingot_elf_image_contains(im, s + n, 1)) return 0;
    if (s[n] == '\0') return 1;
  }
}

/* Asks the library for its kernel table and checks every entry lies in the
 * image (name readable, function in code). */
static ingot_status_t query_library(ingot_rt_module_t* m) {
  void* sym = ingot_elf_image_symbol(m->image, INGOT_LIBRARY_QUERY_SYMBOL);
  if (!sym || !ingot_elf_image_is_code(m->image, sym))
    return ingot_rt_fail(INGOT_ERROR_CORRUPT, "code does not export %s", INGOT_LIBRARY_QUERY_SYMBOL);
#if INGOT_RT_FUZZING
  /* Never call into fuzzed code (see runtime_internal.h): no library. */
  return INGOT_OK;
#endif
  ingot_library_query_fn_t query;
  memcpy(&query, &sym, sizeof query); /* object pointer -> function pointer */
  const ingot_kernel_library_t* lib = query(INGOT_KERNEL_ABI_VERSION);
  if (!lib)
    return ingot_rt_fail(INGOT_ERROR_VERSION, "code does not speak kernel ABI %u",
                         INGOT_KERNEL_ABI_VERSION);
  if (!ingot_elf_image_contains(m->image, lib, sizeof *lib) ||
      lib->abi_version != INGOT_KERNEL_ABI_VERSION ||
      (uint64_t)lib->kernel_count * sizeof(ingot_kernel_entry_t) > SIZE_MAX ||
      (lib->kernel_count &&
       !ingot_elf_image_contains(m->image, lib->kernels,
                                 (size_t)lib->kernel_count * sizeof(ingot_kernel_entry_t))))
    return ingot_rt_fail(INGOT_ERROR_CORRUPT, "bad kernel table");
  for (uint32_t k = 0; k < lib->kernel_count; ++k)
    if (!image_string_ok(m->image, lib->kernels[k].name) ||
        !ingot_elf_image_is_code(m->image, (const void*)(uintptr_t)lib->kernels[k].fn))
      return ingot_rt_fail(INGOT_ERROR_CORRUPT, "bad kernel entry %u", k);
  m->library = lib;
  return INGOT_OK;
}

static void cpu_unload(ingot_rt_module_t* m) {
  if (!m) return;
  ingot_elf_image_unload(m->image);
  ingot_rt_free(m->allocator, m);
}

static ingot_status_t cpu_load(const void* code, size_t size, ingot_allocator_t allocator,
                               ingot_rt_module_t** out_module) {
  *out_module = NULL;
  ingot_rt_module_t* m = (ingot_rt_module_t*)ingot_rt_alloc(allocator, sizeof *m);
  if (!m) return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "out of memory");
  memset(m, 0, sizeof *m);
  m->allocator = allocator;
  ingot_status_t status = ingot_elf_image_load(code, size, allocator, &m->image);
  if (status == INGOT_OK) status = query_library(m);
  if (status != INGOT_OK) {
    cpu_unload(m);
    return status;
  }
  *out_module = m;
  return INGOT_OK;
}

static ingot_status_t cpu_lookup(const ingot_rt_module_t* m, const char* name,
                                 ingot_rt_kernel_t* out_kernel) {
  out_kernel->cpu_fn = NULL;
  if (!m->library) return INGOT_OK; /* fuzzing build: nothing is ever called */
  for (uint32_t k = 0; k < m->library->kernel_count; ++k)
    if (strcmp(m->library->kernels[k].name, name) == 0) {
      out_kernel->cpu_fn = m->library->kernels[k].fn;
      return INGOT_OK;
    }
  return INGOT_ERROR_NOT_FOUND;
}

static uint32_t default_threads(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) return 1;
  return n > (long)INGOT_SESSION_THREADS_MAX ? INGOT_SESSION_THREADS_MAX : (uint32_t)n;
}

static void cpu_device_release(ingot_rt_device_t* d) {
  if (!d) return;
  ingot_thread_pool_release(d->pool);
  ingot_rt_free(d->allocator, d);
}

static ingot_status_t cpu_device_create(uint32_t threads, ingot_allocator_t allocator,
                                        ingot_rt_device_t** out_device) {
  *out_device = NULL;
  if (threads == 0) threads = default_threads();
  if (threads > INGOT_SESSION_THREADS_MAX)
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "session: %u threads, at most %u", threads,
                         INGOT_SESSION_THREADS_MAX);
  ingot_rt_device_t* d = (ingot_rt_device_t*)ingot_rt_alloc(allocator, sizeof *d);
  if (!d) return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "session: out of memory");
  memset(d, 0, sizeof *d);
  d->allocator = allocator;
  ingot_status_t status = ingot_thread_pool_create(threads, allocator, &d->pool);
  if (status != INGOT_OK) {
    cpu_device_release(d);
    return status;
  }
  d->env.abi_version = INGOT_KERNEL_ABI_VERSION;
  d->env.thread_count = threads;
  d->env.pool = d->pool;
  d->env.parallel_for = ingot_thread_pool_parallel_for;
  d->env.expf = expf;
  d->env.logf = logf;
  d->env.tanhf = tanhf;
  d->env.erff = erff;
  d->env.powf = powf;
  *out_device = d;
  return INGOT_OK;
}

/* The kernel env's parallel_for when loops run elsewhere: empty and
 * one-iteration loops stay on this thread, the rest go to the runner. */
static void parallel_trampoline(void* raw, int64_t count, ingot_parallel_body_fn_t body, void* context) {
  const ingot_rt_device_t* d = (const ingot_rt_device_t*)raw;
  if (count <= 0) return;
  if (count == 1) {
    body(context, 0, 1);
    return;
  }
  d->parallel_for(d->parallel_self, count, body, context);
}

static void cpu_device_set_parallel(ingot_rt_device_t* d, ingot_parallel_for_t parallel_for, void* self,
                                    uint32_t thread_count) {
  d->parallel_for = parallel_for;
  d->parallel_self = self;
  d->env.pool = d;
  d->env.parallel_for = parallel_trampoline;
  d->env.thread_count = thread_count ? thread_count : 1;
}

static ingot_status_t cpu_buffer_alloc(ingot_rt_device_t* d, uint64_t bytes, void** out_buffer) {
  *out_buffer = NULL;
  /* At least 64 bytes so the allocator's 64-byte alignment promise holds. */
  if (bytes > SIZE_MAX - 64)
    return ingot_rt_fail(INGOT_ERROR_LIMIT, "session: a buffer of %llu bytes does not fit in memory",
                         (unsigned long long)bytes);
  size_t n = bytes < 64 ? 64 : (size_t)bytes;
  void* p = ingot_rt_alloc(d->allocator, n);
  if (!p)
    return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "session: cannot allocate an arena of %zu bytes", n);
  if (((uintptr_t)p & 63) != 0) {
    ingot_rt_free(d->allocator, p);
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "session: the allocator broke 64-byte alignment");
  }
  *out_buffer = p;
  return INGOT_OK;
}

static void cpu_buffer_free(ingot_rt_device_t* d, void* buffer) { ingot_rt_free(d->allocator, buffer); }

static ingot_status_t cpu_buffer_copy(ingot_rt_device_t* d, void* dst, const void* src,
                                      uint64_t bytes, ingot_rt_copy_t direction) {
  (void)d;
  if (direction != INGOT_RT_COPY_TO_DEVICE && direction != INGOT_RT_COPY_TO_HOST)
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "copy: direction %d", (int)direction);
  if (bytes) memmove(dst, src, (size_t)bytes);
  return INGOT_OK;
}

static ingot_status_t cpu_launch(ingot_rt_device_t* d, ingot_rt_kernel_t kernel,
                                 const ingot_launch_record_t* launch, void* const* args, uint32_t arg_count) {
  (void)launch; /* CPU launch records carry the kernel index only */
  (void)arg_count;
  int32_t rc = kernel.cpu_fn(&d->env, args);
  return rc ? ingot_rt_fail(INGOT_ERROR_INTERNAL, "the kernel returned %d", (int)rc) : INGOT_OK;
}

const ingot_rt_loader_t ingot_rt_loader_cpu_elf = {
    .kind = INGOT_LOADER_CPU_ELF,
    .name = "cpu-elf",
    .host_visible = 1,
    .rank = ingot_rt_variant_rank,
    .code_fits = cpu_code_fits,
    .load = cpu_load,
    .lookup = cpu_lookup,
    .unload = cpu_unload,
    .device_create = cpu_device_create,
    .device_release = cpu_device_release,
    .device_set_parallel = cpu_device_set_parallel,
    .buffer_alloc = cpu_buffer_alloc,
    .buffer_free = cpu_buffer_free,
    .buffer_copy = cpu_buffer_copy,
    .launch = cpu_launch,
    .finish = NULL,
};
