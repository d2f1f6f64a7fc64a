/* A stand-in for libcuda.so.1 that the CUDA loader row can open with dlopen
 * (INGOT_CUDA_DRIVER=path) on a machine without a GPU: one device whose
 * compute capability is $INGOT_FAKE_CUDA_SM (e.g. 90), device memory that is
 * host memory, launches that do nothing. cuModuleLoadData records what it
 * was given ("CUBIN sm_90", "PTX sm_90") in ingot_fake_cuda_loaded, which
 * the test reads with dlsym, so the choice of code is seen from outside.
 * Only for tests: it runs no kernel. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT char ingot_fake_cuda_loaded[64];
EXPORT int ingot_fake_cuda_modules; /* loaded and not yet unloaded */

static int fake_sm(void) {
  const char* s = getenv("INGOT_FAKE_CUDA_SM");
  return s ? atoi(s) : 90;
}

static int g_ctx, g_mod, g_fn, g_stream;

EXPORT int cuInit(unsigned flags) { return flags == 0 ? 0 : 1; }
EXPORT int cuDeviceGetCount(int* n) { *n = 1; return 0; }
EXPORT int cuDeviceGet(int* d, int ordinal) { *d = ordinal; return ordinal == 0 ? 0 : 101; }
EXPORT int cuDeviceGetAttribute(int* v, int attr, int dev) {
  (void)dev;
  if (attr == 75) *v = fake_sm() / 10;
  else if (attr == 76) *v = fake_sm() % 10;
  else return 1;
  return 0;
}
EXPORT int cuDeviceGetName(char* name, int len, int dev) {
  (void)dev;
  snprintf(name, (size_t)len, "Fake GPU");
  return 0;
}
EXPORT int cuDevicePrimaryCtxRetain(void** ctx, int dev) { (void)dev; *ctx = &g_ctx; return 0; }
EXPORT int cuCtxSetCurrent(void* ctx) { return ctx == &g_ctx ? 0 : 201; }

EXPORT int cuModuleLoadData(void** mod, const void* image) {
  const uint8_t* p = image;
  if (memcmp(p, "\177ELF", 4) == 0) {
    uint32_t flags;
    memcpy(&flags, p + 48, sizeof flags);
    snprintf(ingot_fake_cuda_loaded, sizeof ingot_fake_cuda_loaded, "CUBIN sm_%u", (flags >> 8) & 0xffu);
  } else {
    const char* t = strstr((const char*)p, ".target sm_");
    snprintf(ingot_fake_cuda_loaded, sizeof ingot_fake_cuda_loaded, "PTX sm_%d", t ? atoi(t + 11) : 0);
  }
  ++ingot_fake_cuda_modules;
  *mod = &g_mod;
  return 0;
}
EXPORT int cuModuleUnload(void* mod) { --ingot_fake_cuda_modules; return mod == &g_mod ? 0 : 400; }
EXPORT int cuModuleGetFunction(void** fn, void* mod, const char* name) {
  (void)name;
  *fn = &g_fn;
  return mod == &g_mod ? 0 : 400;
}
EXPORT int cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                          unsigned shared, void* stream, void** params, void** extra) {
  (void)shared, (void)stream, (void)params, (void)extra;
  return f == &g_fn && gx && gy && gz && bx && by && bz ? 0 : 1;
}
EXPORT int cuMemAlloc_v2(unsigned long long* p, size_t bytes) {
  void* m = calloc(1, bytes);
  *p = (unsigned long long)(uintptr_t)m;
  return m ? 0 : 2;
}
EXPORT int cuMemFree_v2(unsigned long long p) { free((void*)(uintptr_t)p); return 0; }
EXPORT int cuMemcpyHtoDAsync_v2(unsigned long long dst, const void* src, size_t n, void* s) {
  (void)s;
  memcpy((void*)(uintptr_t)dst, src, n);
  return 0;
}
EXPORT int cuMemcpyDtoHAsync_v2(void* dst, unsigned long long src, size_t n, void* s) {
  (void)s;
  memcpy(dst, (const void*)(uintptr_t)src, n);
  return 0;
}
EXPORT int cuStreamCreate(void** s, unsigned flags) { (void)flags; *s = &g_stream; return 0; }
EXPORT int cuStreamDestroy_v2(void* s) { return s == &g_stream ? 0 : 400; }
EXPORT int cuStreamSynchronize(void* s) { return s == &g_stream ? 0 : 400; }
EXPORT int cuGetErrorString(int r, const char** s) {
  *s = r ? "fake error" : "no error";
  return 0;
}
