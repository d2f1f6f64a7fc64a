/* Code loaders: the runtime's seam between "which code runs" and "how it is
 * loaded and run". Private to the runtime (hidden, like runtime_internal.h).
 *
 * A loader is one row of a table, one row per code kind (the loader kind a
 * bundle's variant names, ingot_loader_kind_t in runtime/ingot_format.h).
 * bundle.c ranks, loads and looks up kernels through the row of the variant
 * it picks; session.c makes a device, allocates its arena and launches every
 * step through the same row. Nothing outside a row's own file knows what a
 * module, a kernel handle or a device is, so a GPU kind is a new row (its own
 * file plus one line in loader.c's table), not an edit of the CPU path.
 *
 * Lifetimes: a module belongs to one open bundle (load at open, unload at
 * release); a device belongs to one session (create with the session,
 * release with it); kernels are plain values valid while their module is.
 * Everything a run needs is set up at open and session creation: launch and
 * the buffer calls made while running allocate nothing.
 *
 * Today's rows: CPU_ELF (loader_cpu.c): our ELF loader (elf_loader.c), the
 * function pointers of the kernel library, the thread pool as the device,
 * host memory from the session's allocator as device buffers. CUDA
 * (loader_cuda.c): the NVIDIA driver opened with dlopen at run time, CUBIN or
 * PTX code, a stream per session, device memory (not host-visible). */
#ifndef INGOT_RUNTIME_LOADER_H_
#define INGOT_RUNTIME_LOADER_H_

#include <stddef.h>
#include <stdint.h>

#include "runtime/ingot.h"
#include "runtime/ingot_format.h"

#if defined(__GNUC__)
#define INGOT_LOADER_HIDDEN __attribute__((visibility("hidden")))
#else
#define INGOT_LOADER_HIDDEN
#endif

/* The loaded code of one CODE section; defined by each row. */
typedef struct ingot_rt_module_t ingot_rt_module_t;
/* Where one session's buffers live and its steps run; defined by each row
 * (CPU_ELF: a thread pool and the kernel environment). */
typedef struct ingot_rt_device_t ingot_rt_device_t;

/* A kernel found in a module: whatever its loader needs to launch it. */
typedef union ingot_rt_kernel_t {
  ingot_kernel_fn_t cpu_fn; /* CPU_ELF; NULL in fuzzing builds (never called) */
  const void* handle;       /* a device loader's function handle */
} ingot_rt_kernel_t;

typedef enum ingot_rt_copy_t {
  INGOT_RT_COPY_TO_DEVICE = 1,   /* dst is a device buffer, src host memory */
  INGOT_RT_COPY_TO_HOST = 2,     /* dst is host memory, src a device buffer */
} ingot_rt_copy_t;

typedef struct ingot_rt_loader_t {
  uint32_t kind;       /* ingot_loader_kind_t: the row's key */
  const char* name;    /* "cpu-elf": for messages */
  /* 1 when device buffers are host memory that the caller may read and write
   * and that kernels read weights from in place (no copies); session.c
   * hands out arena pointers only for such devices. */
  uint32_t host_visible;

  /* ---- Variant choice (bundle.c) */
  /* 0 when this machine cannot run code built for `target`, else a rank
   * (higher is preferred). `why` (may be NULL) gets the reason either way. */
  int (*rank)(const char* target, char* why, size_t why_cap);
  /* Whether a decoded CODE section is for this machine at all (a look at its
   * header, nothing loaded): a variant that ranks but does not fit is skipped
   * and the next one tried. */
  int (*code_fits)(const void* code, size_t size);

  /* ---- Modules (bundle.c, at open and release) */
  /* Loads `code` (read during the call only). Refuses malformed code with a
   * status and a message (ingot_rt_fail); *out_module is NULL then. */
  ingot_status_t (*load)(const void* code, size_t size, ingot_allocator_t allocator,
                         ingot_rt_module_t** out_module);
  /* The kernel called `name`: INGOT_OK, or INGOT_ERROR_NOT_FOUND (no message
   * set; the caller says which bundle and variant). */
  ingot_status_t (*lookup)(const ingot_rt_module_t* module, const char* name,
                           ingot_rt_kernel_t* out_kernel);
  void (*unload)(ingot_rt_module_t* module); /* NULL is fine */

  /* ---- Devices and buffers (session.c) */
  /* threads: the session option (0: the loader's default). */
  ingot_status_t (*device_create)(uint32_t threads, ingot_allocator_t allocator,
                                  ingot_rt_device_t** out_device);
  void (*device_release)(ingot_rt_device_t* device); /* NULL is fine */
  /* Runs the device's parallel loops on `parallel_for` (kernel-env contract,
   * called with `self`) for thread_count threads instead of its own pool
   * (the session's shared threads or the application's parallel-for).
   * NULL for rows that run no host loops (GPU rows): nothing to set. */
  void (*device_set_parallel)(ingot_rt_device_t* device, ingot_parallel_for_t parallel_for, void* self,
                              uint32_t thread_count);
  /* A buffer of `bytes` (at least 1), 64-byte aligned, owned by the caller
   * until buffer_free. */
  ingot_status_t (*buffer_alloc)(ingot_rt_device_t* device, uint64_t bytes, void** out_buffer);
  void (*buffer_free)(ingot_rt_device_t* device, void* buffer); /* NULL is fine */
  /* Copies `bytes` between host memory and a device buffer. Never allocates. */
  ingot_status_t (*buffer_copy)(ingot_rt_device_t* device, void* dst, const void* src,
                                uint64_t bytes, ingot_rt_copy_t direction);

  /* ---- Running (session.c): one step; INGOT_OK, else a status with the
   * message set (a kernel's non-zero code, or the device's refusal). A
   * device loader may only queue the step. Allocates nothing. */
  ingot_status_t (*launch)(ingot_rt_device_t* device, ingot_rt_kernel_t kernel,
                    const ingot_launch_record_t* launch, void* const* args, uint32_t arg_count);
  /* Waits until every launch queued so far is done (a device loader's launch
   * may only queue the step); NULL when launch is synchronous. */
  ingot_status_t (*finish)(ingot_rt_device_t* device);
} ingot_rt_loader_t;

/* The row for a loader kind, NULL when this runtime has none (a kind the
 * format defines but this build cannot run: its variants are skipped). */
INGOT_LOADER_HIDDEN const ingot_rt_loader_t* ingot_rt_loader_find(uint32_t kind);
/* "cpu-elf", "cuda", "hip" for the kinds the format defines, else "unknown". */
INGOT_LOADER_HIDDEN const char* ingot_rt_loader_kind_name(uint32_t kind);

/* The rows (one file each). */
INGOT_LOADER_HIDDEN extern const ingot_rt_loader_t ingot_rt_loader_cpu_elf;
INGOT_LOADER_HIDDEN extern const ingot_rt_loader_t ingot_rt_loader_cuda;
INGOT_LOADER_HIDDEN extern const ingot_rt_loader_t ingot_rt_loader_hip;

/* Whether this machine has a usable CUDA device (the driver is opened and
 * probed once per process): its compute capability as major * 10 + minor
 * (90 for sm_90), or 0 when none. `why` (may be NULL) gets the finding either
 * way: "libcuda.so.1 not found (no NVIDIA driver)", "no CUDA device",
 * "CUDA device 0: NVIDIA H200, sm_90". Never fails otherwise. */
INGOT_LOADER_HIDDEN int ingot_rt_cuda_probe(char* why, size_t why_cap);
/* A CUDA code chosen for a device (loader_cuda.c): points into the code
 * given to ingot_rt_cuda_code_pick. */
typedef struct ingot_rt_cuda_code_t {
  const uint8_t* data;
  size_t size;
  uint32_t kind;   /* ingot_gpu_code_kind_t */
  uint32_t arch;   /* 90 for sm_90 / compute_90; 0: a bare code that does not say */
} ingot_rt_cuda_code_t;

enum {
  INGOT_RT_CUDA_CODE_OK = 0,       /* valid (and, with a device, one chosen) */
  INGOT_RT_CUDA_CODE_CORRUPT = 1,  /* not a well-formed code set, CUBIN or PTX */
  INGOT_RT_CUDA_CODE_NO_MATCH = 2, /* valid, but the device runs none of it */
};

/* The rule of ingot_format.h, apart from any driver (the loader row and its
 * tests use it): checks a CUDA variant's CODE (a code set: magic, version,
 * count, every entry's kind, architecture, 16-aligned bounds inside `size`,
 * a CUBIN's ELF machine and sm, PTX's closing NUL, no two entries alike; or a
 * bare CUBIN or PTX text) and, when device_sm is not 0, picks the code that
 * device runs: the CUBIN of its major at the highest minor not above its
 * own, else the PTX of the highest architecture not above it. `why` (may be
 * NULL) says what was chosen, what is wrong, or what the device cannot run.
 * Reads nothing outside code[0..size). */
INGOT_LOADER_HIDDEN int ingot_rt_cuda_code_pick(const void* code, size_t size, uint32_t device_sm,
                                                ingot_rt_cuda_code_t* out_code, char* why, size_t why_cap);
/* The CUDA row's rank of `target` ("cuda -arch=sm_90") on a device of
 * device_sm, by the same rule applied to the code set the compiler ships
 * for that target (a CUBIN for its sm plus its PTX): 2000000 + sm where the
 * CUBIN runs, 1000000 + sm where only the PTX does (both above every CPU
 * rank), 0 where neither does or the target is not CUDA's. */
INGOT_LOADER_HIDDEN int ingot_rt_cuda_rank_for(const char* target, uint32_t device_sm, char* why, size_t why_cap);

/* The same for ROCm (libamdhip64.so, loader_hip.c): device 0's
 * hipDeviceAttributeGcnArch (910 for gfx90a), or 0 when none. */
INGOT_LOADER_HIDDEN int ingot_rt_hip_probe(char* why, size_t why_cap);

#endif /* INGOT_RUNTIME_LOADER_H_ */
