/* The CUDA loader row (runtime/loader.h): code is a CUBIN (or PTX text) that
 * the NVIDIA driver loads with cuModuleLoadData; a kernel is a CUfunction; the
 * device is a stream on the first GPU's primary context; device buffers are
 * cuMemAlloc memory (not host-visible: session.c stages weights, inputs and
 * outputs through buffer_copy).
 *
 * The driver library (libcuda.so.1) is opened at run time with dlopen, never
 * linked: a runtime built here runs on machines without a driver, and this
 * row then ranks every CUDA variant 0 with the reason ("libcuda.so.1 not
 * found", "no CUDA device", "device sm_80, code for sm_90"). The driver is
 * probed once per process (pthread_once); the primary context of device 0 is
 * retained for the life of the process and made current on every call, so a
 * session may run from any thread.
 *
 * The driver API's types are declared here by their documented ABI (handles
 * are pointers, CUdeviceptr is a 64-bit integer, CUresult an int) so that no
 * CUDA header is needed to build the runtime. */
#define _DEFAULT_SOURCE 1
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"
#include "runtime_internal.h"

typedef int cu_result_t;                /* CUresult; 0 is CUDA_SUCCESS */
typedef int cu_device_t;                /* CUdevice */
typedef struct cu_ctx_s* cu_context_t;  /* CUcontext */
typedef struct cu_mod_s* cu_module_t;   /* CUmodule */
typedef struct cu_func_s* cu_function_t; /* CUfunction */
typedef struct cu_stream_s* cu_stream_t; /* CUstream */
typedef unsigned long long cu_deviceptr_t; /* CUdeviceptr (64-bit builds) */

#define CU_ATTR_COMPUTE_CAPABILITY_MAJOR 75
#define CU_ATTR_COMPUTE_CAPABILITY_MINOR 76
#define CU_STREAM_NON_BLOCKING 1u
#define INGOT_RT_CUDA_MAX_ARGS 256u

/* X(field, symbol, return, parameters): the driver entry points we use. The
 * _v2 names are what cuda.h's macros map the plain names to. */
#define CUDA_DRIVER_FUNCTIONS(X)                                                               \
  X(init, "cuInit", cu_result_t, (unsigned))                                                   \
  X(device_get_count, "cuDeviceGetCount", cu_result_t, (int*))                                 \
  X(device_get, "cuDeviceGet", cu_result_t, (cu_device_t*, int))                               \
  X(device_get_attribute, "cuDeviceGetAttribute", cu_result_t, (int*, int, cu_device_t))       \
  X(device_get_name, "cuDeviceGetName", cu_result_t, (char*, int, cu_device_t))                \
  X(primary_ctx_retain, "cuDevicePrimaryCtxRetain", cu_result_t, (cu_context_t*, cu_device_t)) \
  X(ctx_set_current, "cuCtxSetCurrent", cu_result_t, (cu_context_t))                           \
  X(module_load_data, "cuModuleLoadData", cu_result_t, (cu_module_t*, const void*))            \
  X(module_unload, "cuModuleUnload", cu_result_t, (cu_module_t))                               \
  X(module_get_function, "cuModuleGetFunction", cu_result_t,                                   \
    (cu_function_t*, cu_module_t, const char*))                                                \
  X(launch_kernel, "cuLaunchKernel", cu_result_t,                                              \
    (cu_function_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,      \
     cu_stream_t, void**, void**))                                                             \
  X(mem_alloc, "cuMemAlloc_v2", cu_result_t, (cu_deviceptr_t*, size_t))                        \
  X(mem_free, "cuMemFree_v2", cu_result_t, (cu_deviceptr_t))                                   \
  X(memcpy_htod_async, "cuMemcpyHtoDAsync_v2", cu_result_t,                                    \
    (cu_deviceptr_t, const void*, size_t, cu_stream_t))                                        \
  X(memcpy_dtoh_async, "cuMemcpyDtoHAsync_v2", cu_result_t,                                    \
    (void*, cu_deviceptr_t, size_t, cu_stream_t))                                              \
  X(stream_create, "cuStreamCreate", cu_result_t, (cu_stream_t*, unsigned))                    \
  X(stream_destroy, "cuStreamDestroy_v2", cu_result_t, (cu_stream_t))                          \
  X(stream_synchronize, "cuStreamSynchronize", cu_result_t, (cu_stream_t))                     \
  X(get_error_string, "cuGetErrorString", cu_result_t, (cu_result_t, const char**))

typedef struct cuda_driver_t {
#define DRIVER_FIELD_(field, symbol, ret, params) ret(*field) params;
  CUDA_DRIVER_FUNCTIONS(DRIVER_FIELD_)
#undef DRIVER_FIELD_
  void* library;
  int usable;            /* 1: library, symbols, cuInit and a device all fine */
  char why[160];         /* the probe's finding, either way */
  cu_device_t device;
  cu_context_t context;  /* primary context of device 0, retained for good */
  int sm;                /* compute capability, major * 10 + minor */
} cuda_driver_t;

static cuda_driver_t g_cuda;
static pthread_once_t g_cuda_once = PTHREAD_ONCE_INIT;

/* The driver library's file name: INGOT_CUDA_DRIVER overrides it (tests point
 * it at a library that is not the driver). */
static const char* driver_library_name(void) {
  const char* env = getenv("INGOT_CUDA_DRIVER");
  return env && env[0] ? env : "libcuda.so.1";
}

static const char* cu_error_text(cu_result_t r) {
  const char* s = NULL;
  if (g_cuda.get_error_string && g_cuda.get_error_string(r, &s) == 0 && s) return s;
  return "unknown CUDA error";
}

static void cuda_probe_once(void) {
  cuda_driver_t* d = &g_cuda;
  const char* name = driver_library_name();
  d->library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!d->library) {
    snprintf(d->why, sizeof d->why, "%s not found (no NVIDIA driver)", name);
    return;
  }
#define DRIVER_RESOLVE_(field, symbol, ret, params)                                   \
  {                                                                                   \
    void* sym_ = dlsym(d->library, symbol);                                           \
    if (!sym_) {                                                                      \
      snprintf(d->why, sizeof d->why, "%s lacks %s (driver too old?)", name, symbol); \
      return;                                                                         \
    }                                                                                 \
    memcpy(&d->field, &sym_, sizeof sym_);                                            \
  }
  CUDA_DRIVER_FUNCTIONS(DRIVER_RESOLVE_)
#undef DRIVER_RESOLVE_
  cu_result_t r = d->init(0);
  if (r != 0) {
    snprintf(d->why, sizeof d->why, "no CUDA device (cuInit: %s)", cu_error_text(r));
    return;
  }
  int count = 0;
  r = d->device_get_count(&count);
  if (r != 0 || count < 1) {
    snprintf(d->why, sizeof d->why, "no CUDA device");
    return;
  }
  int major = 0, minor = 0;
  char model[96] = "";
  if ((r = d->device_get(&d->device, 0)) != 0 ||
      (r = d->device_get_attribute(&major, CU_ATTR_COMPUTE_CAPABILITY_MAJOR, d->device)) != 0 ||
      (r = d->device_get_attribute(&minor, CU_ATTR_COMPUTE_CAPABILITY_MINOR, d->device)) != 0 ||
      (r = d->device_get_name(model, (int)sizeof model - 1, d->device)) != 0 ||
      (r = d->primary_ctx_retain(&d->context, d->device)) != 0) {
    snprintf(d->why, sizeof d->why, "CUDA device 0 unusable: %s", cu_error_text(r));
    return;
  }
  d->sm = major * 10 + minor;
  snprintf(d->why, sizeof d->why, "CUDA device 0: %.95s, sm_%d", model, d->sm);
  d->usable = 1;
}

/* The driver, probed once; NULL (with the reason in g_cuda.why) when unusable. */
static const cuda_driver_t* cuda_driver(void) {
  pthread_once(&g_cuda_once, cuda_probe_once);
  return g_cuda.usable ? &g_cuda : NULL;
}

int ingot_rt_cuda_probe(char* why, size_t why_cap) {
  const cuda_driver_t* d = cuda_driver();
  if (why && why_cap) snprintf(why, why_cap, "%s", g_cuda.why);
  return d ? d->sm : 0;
}

/* The sm number a target names ("cuda -arch=sm_90" -> 90), 0 when none, -1
 * when malformed. */
static int target_sm(const char* target) {
  const char* a = strstr(target, "-arch=sm_");
  if (!a) return strncmp(target, "cuda", 4) == 0 && (target[4] == '\0' || target[4] == ' ') ? 0 : -1;
  char* end = NULL;
  long sm = strtol(a + 9, &end, 10);
  if (end == a + 9 || sm < 10 || sm > 999) return -1;
  return (int)sm;
}

static int cuda_rank(const char* target, char* why, size_t why_cap) {
  char dummy[8];
  if (!why || why_cap == 0) {
    why = dummy;
    why_cap = sizeof dummy;
  }
  int want = target_sm(target);
  if (want < 0) {
    snprintf(why, why_cap, "not a CUDA target '%.32s'", target);
    return 0;
  }
  const cuda_driver_t* d = cuda_driver();
  if (!d) {
    snprintf(why, why_cap, "%s", g_cuda.why);
    return 0;
  }
  /* A CUBIN runs on its own major architecture at an equal or later minor;
   * later majors need the PTX that the codegen ships beside it. The driver
   * has the last word at load (code_fits cannot tell without loading). */
  if (want && d->sm < want) {
    snprintf(why, why_cap, "device sm_%d, code for sm_%d", d->sm, want);
    return 0;
  }
  snprintf(why, why_cap, "%s", d->why);
  /* Above every CPU rank: a GPU variant that runs is preferred. */
  return 1000000 + (want ? want : 1);
}

/* An ELF of machine EM_CUDA (190), or PTX text (".version" near the start). */
static int cuda_code_fits(const void* code, size_t size) {
  const uint8_t* p = (const uint8_t*)code;
  if (size >= 20 && memcmp(p, "\177ELF", 4) == 0) return p[18] == 190 && p[19] == 0;
  size_t look = size < 4096 ? size : 4096;
  for (size_t i = 0; i + 8 <= look; ++i)
    if (memcmp(p + i, ".version", 8) == 0) return 1;
  return 0;
}

struct ingot_rt_module_t {
  ingot_allocator_t allocator;
  cu_module_t module;
};

struct ingot_rt_device_t {
  ingot_allocator_t allocator;
  cu_stream_t stream;
  void* params[INGOT_RT_CUDA_MAX_ARGS]; /* cuLaunchKernel's kernelParams */
};

static ingot_status_t cuda_fail(const char* what, cu_result_t r) {
  return ingot_rt_fail(r == 2 ? INGOT_ERROR_OUT_OF_MEMORY : INGOT_ERROR_UNSUPPORTED, "cuda: %s: %s (%d)",
                       what, cu_error_text(r), r);
}

static ingot_status_t cuda_current(const cuda_driver_t** out_driver) {
  const cuda_driver_t* d = cuda_driver();
  *out_driver = d;
  if (!d) return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED, "cuda: %s", g_cuda.why);
  cu_result_t r = d->ctx_set_current(d->context);
  return r ? cuda_fail("cuCtxSetCurrent", r) : INGOT_OK;
}

static void cuda_unload(ingot_rt_module_t* m) {
  if (!m) return;
  const cuda_driver_t* d = NULL;
  if (m->module && cuda_current(&d) == INGOT_OK) d->module_unload(m->module);
  ingot_rt_free(m->allocator, m);
}

static ingot_status_t cuda_load(const void* code, size_t size, ingot_allocator_t allocator,
                                ingot_rt_module_t** out_module) {
  *out_module = NULL;
  const cuda_driver_t* d = NULL;
  ingot_status_t status = cuda_current(&d);
  if (status != INGOT_OK) return status;
  if (size == 0) return ingot_rt_fail(INGOT_ERROR_CORRUPT, "cuda: empty code");
  /* cuModuleLoadData reads PTX as a C string: a copy with a NUL when the
   * section has none (a CUBIN is an ELF and carries its own sizes). */
  const uint8_t* p = (const uint8_t*)code;
  uint8_t* text = NULL;
  if ((size < 4 || memcmp(p, "\177ELF", 4) != 0) && p[size - 1] != '\0') {
    if (size == SIZE_MAX) return ingot_rt_fail(INGOT_ERROR_LIMIT, "cuda: code too large");
    text = (uint8_t*)ingot_rt_alloc(allocator, size + 1);
    if (!text) return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "out of memory");
    memcpy(text, p, size);
    text[size] = '\0';
  }
  ingot_rt_module_t* m = (ingot_rt_module_t*)ingot_rt_alloc(allocator, sizeof *m);
  if (!m) {
    ingot_rt_free(allocator, text);
    return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  memset(m, 0, sizeof *m);
  m->allocator = allocator;
  cu_result_t r = d->module_load_data(&m->module, text ? (const void*)text : code);
  ingot_rt_free(allocator, text);
  if (r != 0) {
    m->module = NULL;
    cuda_unload(m);
    return cuda_fail("cuModuleLoadData", r);
  }
  *out_module = m;
  return INGOT_OK;
}

static ingot_status_t cuda_lookup(const ingot_rt_module_t* m, const char* name, ingot_rt_kernel_t* out_kernel) {
  out_kernel->handle = NULL;
  const cuda_driver_t* d = NULL;
  if (cuda_current(&d) != INGOT_OK) return INGOT_ERROR_NOT_FOUND;
  cu_function_t f = NULL;
  if (d->module_get_function(&f, m->module, name) != 0 || !f) return INGOT_ERROR_NOT_FOUND;
  out_kernel->handle = f;
  return INGOT_OK;
}

static void cuda_device_release(ingot_rt_device_t* dev) {
  if (!dev) return;
  const cuda_driver_t* d = NULL;
  if (dev->stream && cuda_current(&d) == INGOT_OK) d->stream_destroy(dev->stream);
  ingot_rt_free(dev->allocator, dev);
}

static ingot_status_t cuda_device_create(uint32_t threads, ingot_allocator_t allocator,
                                         ingot_rt_device_t** out_device) {
  (void)threads; /* host threads do not apply to a GPU */
  *out_device = NULL;
  const cuda_driver_t* d = NULL;
  ingot_status_t status = cuda_current(&d);
  if (status != INGOT_OK) return status;
  ingot_rt_device_t* dev = (ingot_rt_device_t*)ingot_rt_alloc(allocator, sizeof *dev);
  if (!dev) return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "session: out of memory");
  memset(dev, 0, sizeof *dev);
  dev->allocator = allocator;
  cu_result_t r = d->stream_create(&dev->stream, CU_STREAM_NON_BLOCKING);
  if (r != 0) {
    dev->stream = NULL;
    cuda_device_release(dev);
    return cuda_fail("cuStreamCreate", r);
  }
  *out_device = dev;
  return INGOT_OK;
}

static ingot_status_t cuda_buffer_alloc(ingot_rt_device_t* dev, uint64_t bytes, void** out_buffer) {
  (void)dev;
  *out_buffer = NULL;
  const cuda_driver_t* d = NULL;
  ingot_status_t status = cuda_current(&d);
  if (status != INGOT_OK) return status;
  cu_deviceptr_t p = 0;
  /* cuMemAlloc aligns to at least 256 bytes. */
  cu_result_t r = d->mem_alloc(&p, bytes ? (size_t)bytes : 1);
  if (r != 0) return cuda_fail("cuMemAlloc", r);
  *out_buffer = (void*)(uintptr_t)p;
  return INGOT_OK;
}

static void cuda_buffer_free(ingot_rt_device_t* dev, void* buffer) {
  (void)dev;
  const cuda_driver_t* d = NULL;
  if (buffer && cuda_current(&d) == INGOT_OK) d->mem_free((cu_deviceptr_t)(uintptr_t)buffer);
}

static ingot_status_t cuda_buffer_copy(ingot_rt_device_t* dev, void* dst, const void* src, uint64_t bytes,
                                       ingot_rt_copy_t direction) {
  const cuda_driver_t* d = NULL;
  ingot_status_t status = cuda_current(&d);
  if (status != INGOT_OK) return status;
  if (bytes == 0) return INGOT_OK;
  cu_result_t r;
  if (direction == INGOT_RT_COPY_TO_DEVICE)
    r = d->memcpy_htod_async((cu_deviceptr_t)(uintptr_t)dst, src, (size_t)bytes, dev->stream);
  else if (direction == INGOT_RT_COPY_TO_HOST)
    r = d->memcpy_dtoh_async(dst, (cu_deviceptr_t)(uintptr_t)src, (size_t)bytes, dev->stream);
  else
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "copy: direction %d", (int)direction);
  if (r == 0) r = d->stream_synchronize(dev->stream);
  return r ? cuda_fail("copy", r) : INGOT_OK;
}

/* Queues one step on the session's stream; kernel errors surface at the
 * next synchronizing copy (or here, when the launch itself is refused). */
static int32_t cuda_launch(ingot_rt_device_t* dev, ingot_rt_kernel_t kernel, const ingot_launch_record_t* launch,
                           void* const* args, uint32_t arg_count) {
  const cuda_driver_t* d = NULL;
  if (arg_count > INGOT_RT_CUDA_MAX_ARGS || cuda_current(&d) != INGOT_OK) return -1;
  for (uint32_t i = 0; i < arg_count; ++i) dev->params[i] = (void*)(uintptr_t)&args[i];
  cu_function_t f = (cu_function_t)(uintptr_t)kernel.handle;
  cu_result_t r = d->launch_kernel(f, launch->grid[0], launch->grid[1], launch->grid[2], launch->block[0],
                                   launch->block[1], launch->block[2], launch->shared_bytes, dev->stream,
                                   dev->params, NULL);
  return (int32_t)r;
}

static ingot_status_t cuda_finish(ingot_rt_device_t* dev) {
  const cuda_driver_t* d = NULL;
  ingot_status_t status = cuda_current(&d);
  if (status != INGOT_OK) return status;
  cu_result_t r = d->stream_synchronize(dev->stream);
  return r ? cuda_fail("cuStreamSynchronize", r) : INGOT_OK;
}

const ingot_rt_loader_t ingot_rt_loader_cuda = {
    .kind = INGOT_LOADER_CUDA,
    .name = "cuda",
    .host_visible = 0,
    .rank = cuda_rank,
    .code_fits = cuda_code_fits,
    .load = cuda_load,
    .lookup = cuda_lookup,
    .unload = cuda_unload,
    .device_create = cuda_device_create,
    .device_release = cuda_device_release,
    .buffer_alloc = cuda_buffer_alloc,
    .buffer_free = cuda_buffer_free,
    .buffer_copy = cuda_buffer_copy,
    .launch = cuda_launch,
    .finish = cuda_finish,
};
