/* The contract between the emulated CUDA driver (emu_cuda_driver.c) and a
 * kernel library built from Ingot's printed CUDA C (emu_kernel.h plus a
 * generated table, see run_gpu_emu.py). Plain C, included by both.
 *
 * The kernel library exports
 *   ingot_emu_env: where the driver writes the calling GPU thread's indices
 *     and the launch's dimensions before it runs that thread, and the
 *     function a kernel's __syncthreads() calls (the driver's);
 *   ingot_emu_kernel_table(): every kernel of the printed source, with the
 *     launch it was printed for (from the printer's comment line and
 *     __launch_bounds__) and whether its body has a __syncthreads.
 * Test only: nothing of this is part of the runtime. */
#ifndef INGOT_TESTS_GPU_EMU_ABI_H_
#define INGOT_TESTS_GPU_EMU_ABI_H_

#define INGOT_EMU_ABI_VERSION 2u

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ingot_emu_dim3_t {
  unsigned x, y, z;
} ingot_emu_dim3_t;

typedef struct ingot_emu_env_t {
  ingot_emu_dim3_t thread_idx, block_idx, block_dim, grid_dim;
  void (*sync)(void); /* __syncthreads(): every thread of the block waits */
  unsigned block_serial; /* changes with every block run (never 0) */
} ingot_emu_env_t;

typedef struct ingot_emu_kernel_t {
  const char* name;
  unsigned params;                      /* pointer parameters the kernel takes */
  void (*entry)(void* const* params);   /* cuLaunchKernel's kernelParams */
  unsigned bounds;                      /* __launch_bounds__; 0 when not printed */
  unsigned grid[3], block[3];           /* the printer's launch; 0s when not known */
  int barriers;                         /* its body calls __syncthreads */
} ingot_emu_kernel_t;

typedef const ingot_emu_kernel_t* (*ingot_emu_kernel_table_fn)(unsigned* out_count, unsigned* out_abi);

#ifdef __cplusplus
}
#endif
#endif /* INGOT_TESTS_GPU_EMU_ABI_H_ */
