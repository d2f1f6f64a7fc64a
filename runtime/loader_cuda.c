/* The CUDA loader row (runtime/loader.h): code is a code set of
 * runtime/ingot_format.h (a CUBIN for one sm plus PTX; a bare CUBIN or PTX
 * text is also taken), of which the code the device runs (the format's
 * rule, ingot_rt_cuda_code_pick) goes to cuModuleLoadData; a kernel is a CUfunction; the
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

/* The sm number a target names ("cuda -arch=sm_90" -> 90; plain "cuda" is
 * sm_80, as the compiler reads it), -1 when it is not a CUDA target. */
static int target_sm(const char* target) {
  if (strncmp(target, "cuda", 4) != 0 || (target[4] != '\0' && target[4] != ' ')) return -1;
  const char* a = strstr(target, "-arch=sm_");
  if (!a) return strstr(target, "-arch=") ? -1 : 80;
  char* end = NULL;
  long sm = strtol(a + 9, &end, 10);
  if (end == a + 9 || (*end != '\0' && *end != ' ') || sm < 10 || sm > 999) return -1;
  return (int)sm;
}

/* ---- Code sets (runtime/ingot_format.h) and the choice of a code. */

/* The sm of a bare CUBIN from its ELF header, 0 when its layout is not one
 * we know: ELF ABI version 8 (what CUDA 13's ptxas and NVRTC write) keeps
 * the sm in bits 8..15 of e_flags. */
static uint32_t cubin_sm(const uint8_t* p, size_t size) {
  if (size < 52 || p[4] != 2 || p[5] != 1 || p[8] != 8) return 0;
  uint32_t flags;
  memcpy(&flags, p + 48, sizeof flags);
  return (flags >> 8) & 0xffu;
}

static int is_cubin(const uint8_t* p, size_t size) {
  return size >= 20 && memcmp(p, "\177ELF", 4) == 0 && p[18] == 190 && p[19] == 0;
}

/* The sm a bare PTX text targets (".target sm_90"), 0 when it does not say. */
static uint32_t ptx_sm(const uint8_t* p, size_t size) {
  size_t look = size < 4096 ? size : 4096;
  for (size_t i = 0; i + 11 <= look; ++i)
    if (memcmp(p + i, ".target sm_", 11) == 0) {
      uint32_t sm = 0;
      size_t j = i + 11;
      while (j < look && j < i + 14 && p[j] >= '0' && p[j] <= '9') sm = sm * 10 + (uint32_t)(p[j++] - '0');
      return sm;
    }
  return 0;
}

/* PTX text: ".version" near the start, and no NUL but a last one. */
static int is_ptx(const uint8_t* p, size_t size) {
  if (size == 0 || memchr(p, '\0', size - 1)) return 0;
  size_t look = size < 4096 ? size : 4096;
  for (size_t i = 0; i + 8 <= look; ++i)
    if (memcmp(p + i, ".version", 8) == 0) return 1;
  return 0;
}

/* The rule of ingot_format.h: a CUBIN runs on its major architecture at an
 * equal or later minor; PTX on its architecture and every later one. */
static int cubin_runs(uint32_t cubin, uint32_t device) { return device / 10 == cubin / 10 && device >= cubin; }
static int ptx_runs(uint32_t ptx, uint32_t device) { return device >= ptx; }

int ingot_rt_cuda_code_pick(const void* code, size_t size, uint32_t device_sm, ingot_rt_cuda_code_t* out_code,
                            char* why, size_t why_cap) {
  char dummy[8];
  if (!why || why_cap == 0) {
    why = dummy;
    why_cap = sizeof dummy;
  }
  why[0] = '\0';
  memset(out_code, 0, sizeof *out_code);
  const uint8_t* p = (const uint8_t*)code;
  if (!p || size == 0) {
    snprintf(why, why_cap, "empty code");
    return INGOT_RT_CUDA_CODE_CORRUPT;
  }
  ingot_rt_cuda_code_t found[8];
  uint32_t count = 0;
  if (size >= sizeof(ingot_gpu_code_header_t) && memcmp(p, INGOT_GPU_CODE_MAGIC, 8) == 0) {
    ingot_gpu_code_header_t h;
    memcpy(&h, p, sizeof h);
    if (h.version != INGOT_GPU_CODE_VERSION) {
      snprintf(why, why_cap, "code set version %u, this runtime reads %u", h.version, INGOT_GPU_CODE_VERSION);
      return INGOT_RT_CUDA_CODE_CORRUPT;
    }
    if (h.count < 1 || h.count > 8) {
      snprintf(why, why_cap, "code set of %u entries (1 to 8)", h.count);
      return INGOT_RT_CUDA_CODE_CORRUPT;
    }
    const uint64_t table_end = sizeof h + (uint64_t)h.count * sizeof(ingot_gpu_code_entry_t);
    if (table_end > size) {
      snprintf(why, why_cap, "code set truncated: %u entries need %llu bytes, the section has %zu", h.count,
               (unsigned long long)table_end, size);
      return INGOT_RT_CUDA_CODE_CORRUPT;
    }
    for (uint32_t i = 0; i < h.count; ++i) {
      ingot_gpu_code_entry_t e;
      memcpy(&e, p + sizeof h + (size_t)i * sizeof e, sizeof e);
      const char* kind = e.kind == INGOT_GPU_CODE_CUBIN ? "CUBIN" : "PTX";
      if (e.kind != INGOT_GPU_CODE_CUBIN && e.kind != INGOT_GPU_CODE_PTX) {
        snprintf(why, why_cap, "code set entry %u: kind %u (1 CUBIN, 2 PTX)", i, e.kind);
        return INGOT_RT_CUDA_CODE_CORRUPT;
      }
      if (e.arch < 10 || e.arch > 999) {
        snprintf(why, why_cap, "code set entry %u: architecture %u", i, e.arch);
        return INGOT_RT_CUDA_CODE_CORRUPT;
      }
      if (e.offset % 16 != 0 || e.offset < table_end || e.offset > size || e.size == 0 || e.size > size - e.offset) {
        snprintf(why, why_cap, "code set entry %u (%s): bytes %llu..+%llu outside the section's %llu..%zu or not "
                 "16-aligned", i, kind, (unsigned long long)e.offset, (unsigned long long)e.size,
                 (unsigned long long)table_end, size);
        return INGOT_RT_CUDA_CODE_CORRUPT;
      }
      const uint8_t* data = p + e.offset;
      if (e.kind == INGOT_GPU_CODE_CUBIN) {
        if (!is_cubin(data, (size_t)e.size)) {
          snprintf(why, why_cap, "code set entry %u: not a CUBIN (an ELF of machine EM_CUDA)", i);
          return INGOT_RT_CUDA_CODE_CORRUPT;
        }
        uint32_t elf_sm = cubin_sm(data, (size_t)e.size);
        if (elf_sm && elf_sm != e.arch) {
          snprintf(why, why_cap, "code set entry %u: a CUBIN for sm_%u, the entry says sm_%u", i, elf_sm, e.arch);
          return INGOT_RT_CUDA_CODE_CORRUPT;
        }
      } else if (data[e.size - 1] != '\0' || !is_ptx(data, (size_t)e.size)) {
        snprintf(why, why_cap, "code set entry %u: not PTX text ending in a NUL", i);
        return INGOT_RT_CUDA_CODE_CORRUPT;
      }
      for (uint32_t j = 0; j < count; ++j)
        if (found[j].kind == e.kind && found[j].arch == e.arch) {
          snprintf(why, why_cap, "code set entries %u and %u: both %s for %u", j, i, kind, e.arch);
          return INGOT_RT_CUDA_CODE_CORRUPT;
        }
      found[count++] = (ingot_rt_cuda_code_t){data, (size_t)e.size, e.kind, e.arch};
    }
  } else if (is_cubin(p, size)) {
    found[count++] = (ingot_rt_cuda_code_t){p, size, INGOT_GPU_CODE_CUBIN, cubin_sm(p, size)};
  } else if (is_ptx(p, size)) {
    found[count++] = (ingot_rt_cuda_code_t){p, size, INGOT_GPU_CODE_PTX, ptx_sm(p, size)};
  } else {
    snprintf(why, why_cap, "neither a code set, a CUBIN nor PTX");
    return INGOT_RT_CUDA_CODE_CORRUPT;
  }
  if (device_sm == 0) return INGOT_RT_CUDA_CODE_OK; /* validated; no device to choose for */

  /* The CUBIN of the device's major with the highest minor it runs, else the
   * PTX of the highest architecture it runs. A bare code whose architecture
   * cannot be read (arch 0) is left to the driver. */
  int best = -1;
  for (uint32_t k = 0; k < count; ++k)
    if (found[k].kind == INGOT_GPU_CODE_CUBIN && (found[k].arch == 0 || cubin_runs(found[k].arch, device_sm)) &&
        (best < 0 || found[k].arch > found[best].arch))
      best = (int)k;
  for (uint32_t k = 0; best < 0 && k < count; ++k)
    if (found[k].kind == INGOT_GPU_CODE_PTX && (found[k].arch == 0 || ptx_runs(found[k].arch, device_sm)))
      best = (int)k;
  for (uint32_t k = 0; k < count; ++k)
    if (best >= 0 && found[best].kind == INGOT_GPU_CODE_PTX && found[k].kind == INGOT_GPU_CODE_PTX &&
        ptx_runs(found[k].arch, device_sm) && found[k].arch > found[best].arch)
      best = (int)k;
  if (best < 0) {
    size_t n = (size_t)snprintf(why, why_cap, "device sm_%u runs none of its code (", device_sm);
    for (uint32_t k = 0; k < count && n < why_cap; ++k)
      n += (size_t)snprintf(why + n, why_cap - n, "%s%s %s_%u", k ? ", " : "",
                            found[k].kind == INGOT_GPU_CODE_CUBIN ? "CUBIN" : "PTX",
                            found[k].kind == INGOT_GPU_CODE_CUBIN ? "sm" : "compute", found[k].arch);
    if (n < why_cap) snprintf(why + n, why_cap - n, ")");
    return INGOT_RT_CUDA_CODE_NO_MATCH;
  }
  *out_code = found[best];
  if (found[best].kind == INGOT_GPU_CODE_CUBIN)
    snprintf(why, why_cap, "CUBIN sm_%u for device sm_%u", found[best].arch, device_sm);
  else
    snprintf(why, why_cap, "PTX compute_%u, compiled by the driver for device sm_%u", found[best].arch, device_sm);
  return INGOT_RT_CUDA_CODE_OK;
}

int ingot_rt_cuda_rank_for(const char* target, uint32_t device_sm, char* why, size_t why_cap) {
  char dummy[8];
  if (!why || why_cap == 0) {
    why = dummy;
    why_cap = sizeof dummy;
  }
  int want = target ? target_sm(target) : -1;
  if (want < 0) {
    snprintf(why, why_cap, "not a CUDA target '%.32s'", target ? target : "");
    return 0;
  }
  /* The compiler ships a CUBIN for the target's sm and PTX for it: the same
   * rule as ingot_rt_cuda_code_pick on that code set. A CUBIN that runs ranks
   * above PTX that the driver must compile; both above every CPU rank. */
  if (cubin_runs((uint32_t)want, device_sm)) {
    snprintf(why, why_cap, "CUBIN sm_%d runs on device sm_%u", want, device_sm);
    return 2000000 + want;
  }
  if (ptx_runs((uint32_t)want, device_sm)) {
    snprintf(why, why_cap, "PTX compute_%d runs on device sm_%u (compiled at load)", want, device_sm);
    return 1000000 + want;
  }
  snprintf(why, why_cap, "device sm_%u, code for sm_%d", device_sm, want);
  return 0;
}

static int cuda_rank(const char* target, char* why, size_t why_cap) {
  char dummy[8];
  if (!why || why_cap == 0) {
    why = dummy;
    why_cap = sizeof dummy;
  }
  if (!target || target_sm(target) < 0) {
    snprintf(why, why_cap, "not a CUDA target '%.32s'", target ? target : "");
    return 0;
  }
  const cuda_driver_t* d = cuda_driver();
  if (!d) {
    snprintf(why, why_cap, "%s", g_cuda.why);
    return 0;
  }
  int rank = ingot_rt_cuda_rank_for(target, (uint32_t)d->sm, why, why_cap);
  if (rank > 0) snprintf(why, why_cap, "%s%s", d->why, rank < 2000000 ? "; PTX, compiled at load" : "");
  return rank;
}

/* A code set, a CUBIN or PTX that the device runs by the rule above; with
 * no usable driver, whether it is well formed at all. */
static int cuda_code_fits(const void* code, size_t size) {
  const cuda_driver_t* d = cuda_driver();
  ingot_rt_cuda_code_t pick;
  return ingot_rt_cuda_code_pick(code, size, d ? (uint32_t)d->sm : 0, &pick, NULL, 0) == INGOT_RT_CUDA_CODE_OK;
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
  ingot_rt_cuda_code_t pick;
  char why[192];
  int found = ingot_rt_cuda_code_pick(code, size, (uint32_t)d->sm, &pick, why, sizeof why);
  if (found == INGOT_RT_CUDA_CODE_CORRUPT) return ingot_rt_fail(INGOT_ERROR_CORRUPT, "cuda: %s", why);
  if (found != INGOT_RT_CUDA_CODE_OK) return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED, "cuda: %s", why);
  code = pick.data;
  size = pick.size;
  /* cuModuleLoadData reads PTX as a C string: a copy with a NUL when the
   * code has none (a CUBIN is an ELF and carries its own sizes). */
  const uint8_t* p = (const uint8_t*)code;
  uint8_t* text = NULL;
  if (pick.kind == INGOT_GPU_CODE_PTX && p[size - 1] != '\0') {
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
static ingot_status_t cuda_launch(ingot_rt_device_t* dev, ingot_rt_kernel_t kernel,
                                  const ingot_launch_record_t* launch, void* const* args, uint32_t arg_count) {
  const cuda_driver_t* d = NULL;
  if (arg_count > INGOT_RT_CUDA_MAX_ARGS)
    return ingot_rt_fail(INGOT_ERROR_LIMIT, "cuda: %u kernel arguments, at most %d", arg_count,
                         INGOT_RT_CUDA_MAX_ARGS);
  ingot_status_t status = cuda_current(&d);
  if (status != INGOT_OK) return status;
  for (uint32_t i = 0; i < arg_count; ++i) dev->params[i] = (void*)(uintptr_t)&args[i];
  cu_function_t f = (cu_function_t)(uintptr_t)kernel.handle;
  cu_result_t r = d->launch_kernel(f, launch->grid[0], launch->grid[1], launch->grid[2], launch->block[0],
                                   launch->block[1], launch->block[2], launch->shared_bytes, dev->stream,
                                   dev->params, NULL);
  return r ? cuda_fail("cuLaunchKernel", r) : INGOT_OK;
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
