// Host build of Ingot's printed CUDA C, for the emulated driver
// (emu_cuda_driver.c). Included first (g++ -include) into a file that
// includes the printed source and then lists its kernels:
//   INGOT_EMU_TABLE_BEGIN
//   INGOT_EMU_KERNEL(name, bounds, gx, gy, gz, bx, by, bz, barriers)
//   ...
//   INGOT_EMU_TABLE_END
// (run_gpu_emu.py writes that list from the printer's kernel headers). The
// driver runs each GPU thread itself and writes its indices into
// ingot_emu_env first; __syncthreads() calls back into the driver.
// __shared__ arrays are function-static: one copy, which is enough because
// the driver runs the blocks of a launch one after another; the build
// follows each declaration with INGOT_EMU_SHARED_FRESH(name), which fills the
// array with 0xff bytes (NaN as floats) when a new block starts, so that a
// read before any write of the block shows instead of seeing the last
// block's data. Test only.
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <utility>

#include "emu_abi.h"

extern "C" __attribute__((visibility("default"))) ingot_emu_env_t ingot_emu_env;

#define threadIdx (ingot_emu_env.thread_idx)
#define blockIdx (ingot_emu_env.block_idx)
#define blockDim (ingot_emu_env.block_dim)
#define gridDim (ingot_emu_env.grid_dim)
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)

static inline void __syncthreads(void) { ingot_emu_env.sync(); }
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
static inline double __longlong_as_double(long long i) { double d; memcpy(&d, &i, 8); return d; }
static inline long long __double_as_longlong(double d) { long long i; memcpy(&i, &d, 8); return i; }

static inline void ingot_emu_shared_fresh(void* p, size_t bytes, unsigned* seen) {
  if (*seen != ingot_emu_env.block_serial) {
    memset(p, 0xff, bytes);
    *seen = ingot_emu_env.block_serial;
  }
}
#define INGOT_EMU_SHARED_FRESH(name)                                \
  do {                                                              \
    static unsigned ingot_emu_seen_ = 0;                            \
    ingot_emu_shared_fresh((name), sizeof(name), &ingot_emu_seen_); \
  } while (0)

// A kernel's parameters from cuLaunchKernel's kernelParams: params[i]
// points at the value of parameter i (here always a pointer), whatever its type.
template <typename... T, size_t... I>
static inline void ingot_emu_invoke(void (*fn)(T...), void* const* params, std::index_sequence<I...>) {
  fn(*static_cast<T*>(params[I])...);
}
template <typename... T>
static inline void ingot_emu_call(void (*fn)(T...), void* const* params) {
  ingot_emu_invoke(fn, params, std::index_sequence_for<T...>{});
}
template <typename... T>
static constexpr unsigned ingot_emu_arity(void (*)(T...)) { return (unsigned)sizeof...(T); }

#define INGOT_EMU_TABLE_BEGIN static const ingot_emu_kernel_t ingot_emu_kernels[] = {
#define INGOT_EMU_KERNEL(name, bounds, gx, gy, gz, bx, by, bz, barriers)                           \
  {#name, ingot_emu_arity(&name), [](void* const* p) { ingot_emu_call(&name, p); }, (bounds), \
   {(gx), (gy), (gz)}, {(bx), (by), (bz)}, (barriers)},
#define INGOT_EMU_TABLE_END                                                                          \
  };                                                                                                 \
  ingot_emu_env_t ingot_emu_env;                                                                     \
  extern "C" __attribute__((visibility("default"))) const ingot_emu_kernel_t* ingot_emu_kernel_table( \
      unsigned* out_count, unsigned* out_abi) {                                                      \
    *out_count = (unsigned)(sizeof ingot_emu_kernels / sizeof ingot_emu_kernels[0]);                \
    *out_abi = INGOT_EMU_ABI_VERSION;                                                                \
    return ingot_emu_kernels;                                                                        \
  }
