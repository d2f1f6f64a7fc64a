/* The HIP loader row (runtime/loader.h): code is an AMD GPU code object that
 * the ROCm runtime loads with hipModuleLoadData; a kernel is a hipFunction_t;
 * the device is a stream on the first GPU; device buffers are hipMalloc
 * memory (not host-visible: session.c stages weights, inputs and outputs).
 *
 * libamdhip64.so is opened at run time with dlopen, never linked (the same
 * scheme as loader_cuda.c): without it, or without a GPU, this row ranks every
 * HIP variant 0 with the reason. The types are declared here by their ABI
 * (handles are pointers, hipError_t an int) so no HIP header is needed.
 * The device's architecture is read as the integer hipDeviceAttributeGcnArch
 * (908 for gfx908, 910 for gfx90a, 942 for gfx942), compared with the
 * target's -mcpu=gfxNNN; the runtime has the last word at load. */
#define _DEFAULT_SOURCE 1
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"
#include "runtime_internal.h"

typedef int hip_result_t;                   /* hipError_t; 0 is hipSuccess */
typedef struct hip_mod_s* hip_module_t;     /* hipModule_t */
typedef struct hip_func_s* hip_function_t;  /* hipFunction_t */
typedef struct hip_stream_s* hip_stream_t;  /* hipStream_t */

#define HIP_ATTR_GCN_ARCH 10003 /* hipDeviceAttributeGcnArch (ROCm 5.2 headers) */
#define HIP_STREAM_NON_BLOCKING 1u
#define INGOT_RT_HIP_MAX_ARGS 256u

#define HIP_RUNTIME_FUNCTIONS(X)                                                                  \
  X(init, "hipInit", hip_result_t, (unsigned))                                                    \
  X(get_device_count, "hipGetDeviceCount", hip_result_t, (int*))                                  \
  X(set_device, "hipSetDevice", hip_result_t, (int))                                              \
  X(device_get_attribute, "hipDeviceGetAttribute", hip_result_t, (int*, int, int))                \
  X(device_get_name, "hipDeviceGetName", hip_result_t, (char*, int, int))                         \
  X(module_load_data, "hipModuleLoadData", hip_result_t, (hip_module_t*, const void*))            \
  X(module_unload, "hipModuleUnload", hip_result_t, (hip_module_t))                               \
  X(module_get_function, "hipModuleGetFunction", hip_result_t,                                    \
    (hip_function_t*, hip_module_t, const char*))                                                 \
  X(module_launch_kernel, "hipModuleLaunchKernel", hip_result_t,                                  \
    (hip_function_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,        \
     hip_stream_t, void**, void**))                                                               \
  X(malloc, "hipMalloc", hip_result_t, (void**, size_t))                                          \
  X(free, "hipFree", hip_result_t, (void*))                                                       \
  X(memcpy_htod_async, "hipMemcpyHtoDAsync", hip_result_t, (void*, void*, size_t, hip_stream_t))  \
  X(memcpy_dtoh_async, "hipMemcpyDtoHAsync", hip_result_t, (void*, void*, size_t, hip_stream_t))  \
  X(stream_create_with_flags, "hipStreamCreateWithFlags", hip_result_t, (hip_stream_t*, unsigned)) \
  X(stream_destroy, "hipStreamDestroy", hip_result_t, (hip_stream_t))                             \
  X(stream_synchronize, "hipStreamSynchronize", hip_result_t, (hip_stream_t))                     \
  X(get_error_string, "hipGetErrorString", const char*, (hip_result_t))

typedef struct hip_runtime_t {
#define RUNTIME_FIELD_(field, symbol, ret, params) ret(*field) params;
  HIP_RUNTIME_FUNCTIONS(RUNTIME_FIELD_)
#undef RUNTIME_FIELD_
  void* library;
  int usable;
  char why[160];
  int gfx; /* hipDeviceAttributeGcnArch of device 0 */
} hip_runtime_t;

static hip_runtime_t g_hip;
static pthread_once_t g_hip_once = PTHREAD_ONCE_INIT;

static const char* hip_library_name(void) {
  const char* env = getenv("INGOT_HIP_RUNTIME");
  return env && env[0] ? env : "libamdhip64.so";
}

static const char* hip_error_text(hip_result_t r) {
  const char* s = g_hip.get_error_string ? g_hip.get_error_string(r) : NULL;
  return s ? s : "unknown HIP error";
}

static void hip_probe_once(void) {
  hip_runtime_t* h = &g_hip;
  const char* name = hip_library_name();
  h->library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!h->library && strcmp(name, "libamdhip64.so") == 0) h->library = dlopen("libamdhip64.so.5", RTLD_NOW | RTLD_LOCAL);
  if (!h->library) {
    snprintf(h->why, sizeof h->why, "%s not found (no ROCm runtime)", name);
    return;
  }
#define RUNTIME_RESOLVE_(field, symbol, ret, params)                                   \
  {                                                                                    \
    void* sym_ = dlsym(h->library, symbol);                                            \
    if (!sym_) {                                                                       \
      snprintf(h->why, sizeof h->why, "%s lacks %s (runtime too old?)", name, symbol); \
      return;                                                                          \
    }                                                                                  \
    memcpy(&h->field, &sym_, sizeof sym_);                                             \
  }
  HIP_RUNTIME_FUNCTIONS(RUNTIME_RESOLVE_)
#undef RUNTIME_RESOLVE_
  hip_result_t r = h->init(0);
  int count = 0;
  if (r != 0 || h->get_device_count(&count) != 0 || count < 1) {
    snprintf(h->why, sizeof h->why, "no ROCm device%s%s", r ? ": " : "", r ? hip_error_text(r) : "");
    return;
  }
  char model[96] = "";
  if ((r = h->set_device(0)) != 0 || (r = h->device_get_attribute(&h->gfx, HIP_ATTR_GCN_ARCH, 0)) != 0 ||
      (r = h->device_get_name(model, (int)sizeof model - 1, 0)) != 0) {
    snprintf(h->why, sizeof h->why, "ROCm device 0 unusable: %s", hip_error_text(r));
    return;
  }
  snprintf(h->why, sizeof h->why, "ROCm device 0: %.95s, gfx%d", model, h->gfx);
  h->usable = 1;
}

static const hip_runtime_t* hip_runtime(void) {
  pthread_once(&g_hip_once, hip_probe_once);
  return g_hip.usable ? &g_hip : NULL;
}

int ingot_rt_hip_probe(char* why, size_t why_cap) {
  const hip_runtime_t* h = hip_runtime();
  if (why && why_cap) snprintf(why, why_cap, "%s", g_hip.why);
  return h ? h->gfx : 0;
}

/* The gfx number a target names ("rocm -mcpu=gfx90a" -> 910, gfx942 -> 942;
 * plain "rocm" is gfx90a, as the compiler reads it), -1 when malformed.
 * gfx9 minor letters count on from 0 (a=10). */
static int target_gfx(const char* target) {
  if (strncmp(target, "rocm", 4) != 0 && strncmp(target, "hip", 3) != 0) return -1;
  const char* a = strstr(target, "-mcpu=gfx");
  if (!a) return strstr(target, "-mcpu=") ? -1 : 910;
  a += 9;
  size_t n = strspn(a, "0123456789abcdef");
  if (n < 3 || n > 4) return -1;
  int v = 0;
  for (size_t i = 0; i < n; ++i) {
    int digit = a[i] <= '9' ? a[i] - '0' : a[i] - 'a' + 10;
    v = v * 10 + digit; /* a letter counts on from 9: 9,0,a -> 910 */
  }
  return v;
}

static int hip_rank(const char* target, char* why, size_t why_cap) {
  char dummy[8];
  if (!why || why_cap == 0) {
    why = dummy;
    why_cap = sizeof dummy;
  }
  int want = target_gfx(target);
  if (want < 0) {
    snprintf(why, why_cap, "not a ROCm target '%.32s'", target);
    return 0;
  }
  const hip_runtime_t* h = hip_runtime();
  if (!h) {
    snprintf(why, why_cap, "%s", g_hip.why);
    return 0;
  }
  /* AMD code objects run on the architecture they were built for only. */
  if (want && h->gfx != want) {
    snprintf(why, why_cap, "device gfx %d, code for gfx %d", h->gfx, want);
    return 0;
  }
  snprintf(why, why_cap, "%s", h->why);
  return 1000000 + 1;
}

/* An ELF of machine EM_AMDGPU (224), or a clang offload bundle. */
static int hip_code_fits(const void* code, size_t size) {
  const uint8_t* p = (const uint8_t*)code;
  if (size >= 20 && memcmp(p, "\177ELF", 4) == 0) return p[18] == 224 && p[19] == 0;
  return size >= 24 && memcmp(p, "__CLANG_OFFLOAD_BUNDLE__", 24) == 0;
}

struct ingot_rt_module_t {
  ingot_allocator_t allocator;
  hip_module_t module;
};

struct ingot_rt_device_t {
  ingot_allocator_t allocator;
  hip_stream_t stream;
  void* params[INGOT_RT_HIP_MAX_ARGS];
};

static ingot_status_t hip_fail(const char* what, hip_result_t r) {
  return ingot_rt_fail(r == 2 ? INGOT_ERROR_OUT_OF_MEMORY : INGOT_ERROR_UNSUPPORTED, "hip: %s: %s (%d)", what,
                       hip_error_text(r), r);
}

static ingot_status_t hip_current(const hip_runtime_t** out) {
  const hip_runtime_t* h = hip_runtime();
  *out = h;
  if (!h) return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED, "hip: %s", g_hip.why);
  hip_result_t r = h->set_device(0);
  return r ? hip_fail("hipSetDevice", r) : INGOT_OK;
}

static void hip_unload(ingot_rt_module_t* m) {
  if (!m) return;
  const hip_runtime_t* h = NULL;
  if (m->module && hip_current(&h) == INGOT_OK) h->module_unload(m->module);
  ingot_rt_free(m->allocator, m);
}

static ingot_status_t hip_load(const void* code, size_t size, ingot_allocator_t allocator,
                               ingot_rt_module_t** out_module) {
  *out_module = NULL;
  const hip_runtime_t* h = NULL;
  ingot_status_t status = hip_current(&h);
  if (status != INGOT_OK) return status;
  if (!hip_code_fits(code, size)) return ingot_rt_fail(INGOT_ERROR_CORRUPT, "hip: not an AMD GPU code object");
  ingot_rt_module_t* m = (ingot_rt_module_t*)ingot_rt_alloc(allocator, sizeof *m);
  if (!m) return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "out of memory");
  memset(m, 0, sizeof *m);
  m->allocator = allocator;
  hip_result_t r = h->module_load_data(&m->module, code);
  if (r != 0) {
    m->module = NULL;
    hip_unload(m);
    return hip_fail("hipModuleLoadData", r);
  }
  *out_module = m;
  return INGOT_OK;
}

static ingot_status_t hip_lookup(const ingot_rt_module_t* m, const char* name, ingot_rt_kernel_t* out_kernel) {
  out_kernel->handle = NULL;
  const hip_runtime_t* h = NULL;
  if (hip_current(&h) != INGOT_OK) return INGOT_ERROR_NOT_FOUND;
  hip_function_t f = NULL;
  if (h->module_get_function(&f, m->module, name) != 0 || !f) return INGOT_ERROR_NOT_FOUND;
  out_kernel->handle = f;
  return INGOT_OK;
}

static void hip_device_release(ingot_rt_device_t* dev) {
  if (!dev) return;
  const hip_runtime_t* h = NULL;
  if (dev->stream && hip_current(&h) == INGOT_OK) h->stream_destroy(dev->stream);
  ingot_rt_free(dev->allocator, dev);
}

static ingot_status_t hip_device_create(uint32_t threads, ingot_allocator_t allocator,
                                        ingot_rt_device_t** out_device) {
  (void)threads;
  *out_device = NULL;
  const hip_runtime_t* h = NULL;
  ingot_status_t status = hip_current(&h);
  if (status != INGOT_OK) return status;
  ingot_rt_device_t* dev = (ingot_rt_device_t*)ingot_rt_alloc(allocator, sizeof *dev);
  if (!dev) return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "session: out of memory");
  memset(dev, 0, sizeof *dev);
  dev->allocator = allocator;
  hip_result_t r = h->stream_create_with_flags(&dev->stream, HIP_STREAM_NON_BLOCKING);
  if (r != 0) {
    dev->stream = NULL;
    hip_device_release(dev);
    return hip_fail("hipStreamCreateWithFlags", r);
  }
  *out_device = dev;
  return INGOT_OK;
}

static ingot_status_t hip_buffer_alloc(ingot_rt_device_t* dev, uint64_t bytes, void** out_buffer) {
  (void)dev;
  *out_buffer = NULL;
  const hip_runtime_t* h = NULL;
  ingot_status_t status = hip_current(&h);
  if (status != INGOT_OK) return status;
  void* p = NULL;
  hip_result_t r = h->malloc(&p, bytes ? (size_t)bytes : 1); /* aligned to at least 256 bytes */
  if (r != 0) return hip_fail("hipMalloc", r);
  *out_buffer = p;
  return INGOT_OK;
}

static void hip_buffer_free(ingot_rt_device_t* dev, void* buffer) {
  (void)dev;
  const hip_runtime_t* h = NULL;
  if (buffer && hip_current(&h) == INGOT_OK) h->free(buffer);
}

static ingot_status_t hip_buffer_copy(ingot_rt_device_t* dev, void* dst, const void* src, uint64_t bytes,
                                      ingot_rt_copy_t direction) {
  const hip_runtime_t* h = NULL;
  ingot_status_t status = hip_current(&h);
  if (status != INGOT_OK) return status;
  if (bytes == 0) return INGOT_OK;
  hip_result_t r;
  if (direction == INGOT_RT_COPY_TO_DEVICE)
    r = h->memcpy_htod_async(dst, (void*)(uintptr_t)src, (size_t)bytes, dev->stream);
  else if (direction == INGOT_RT_COPY_TO_HOST)
    r = h->memcpy_dtoh_async(dst, (void*)(uintptr_t)src, (size_t)bytes, dev->stream);
  else
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "copy: direction %d", (int)direction);
  if (r == 0) r = h->stream_synchronize(dev->stream);
  return r ? hip_fail("copy", r) : INGOT_OK;
}

static ingot_status_t hip_launch(ingot_rt_device_t* dev, ingot_rt_kernel_t kernel,
                                 const ingot_launch_record_t* launch, void* const* args, uint32_t arg_count) {
  const hip_runtime_t* h = NULL;
  if (arg_count > INGOT_RT_HIP_MAX_ARGS)
    return ingot_rt_fail(INGOT_ERROR_LIMIT, "hip: %u kernel arguments, at most %d", arg_count,
                         INGOT_RT_HIP_MAX_ARGS);
  ingot_status_t status = hip_current(&h);
  if (status != INGOT_OK) return status;
  for (uint32_t i = 0; i < arg_count; ++i) dev->params[i] = (void*)(uintptr_t)&args[i];
  hip_function_t f = (hip_function_t)(uintptr_t)kernel.handle;
  hip_result_t r = h->module_launch_kernel(f, launch->grid[0], launch->grid[1], launch->grid[2], launch->block[0],
                                          launch->block[1], launch->block[2], launch->shared_bytes, dev->stream,
                                          dev->params, NULL);
  return r ? hip_fail("hipModuleLaunchKernel", r) : INGOT_OK;
}

static ingot_status_t hip_finish(ingot_rt_device_t* dev) {
  const hip_runtime_t* h = NULL;
  ingot_status_t status = hip_current(&h);
  if (status != INGOT_OK) return status;
  hip_result_t r = h->stream_synchronize(dev->stream);
  return r ? hip_fail("hipStreamSynchronize", r) : INGOT_OK;
}

const ingot_rt_loader_t ingot_rt_loader_hip = {
    .kind = INGOT_LOADER_HIP,
    .name = "hip",
    .host_visible = 0,
    .rank = hip_rank,
    .code_fits = hip_code_fits,
    .load = hip_load,
    .lookup = hip_lookup,
    .unload = hip_unload,
    .device_create = hip_device_create,
    .device_release = hip_device_release,
    .buffer_alloc = hip_buffer_alloc,
    .buffer_free = hip_buffer_free,
    .buffer_copy = hip_buffer_copy,
    .launch = hip_launch,
    .finish = hip_finish,
};
