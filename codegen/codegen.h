/* Code generation: scheduled loop-IR functions -> a loadable code object.
 *
 * One backend per target kind, each a row {kind, name, emit, build} of
 * codegen/codegen_backends.def; ingot_codegen_emit / ingot_codegen_build
 * dispatch through that table. A new kind of code (CUDA, ROCm) is a new row
 * and its two functions.
 *
 * Target `c`: C99 source generated from the loop IR alone (no per-op
 * knowledge), compiled by the system C compiler into a position-independent
 * ELF shared object that imports nothing: built with -nostdlib, math comes
 * inline or through the ingot_kernel_env_t table, parallel loops become
 * outlined bodies run through env->parallel_for. The object exports only
 * INGOT_LIBRARY_QUERY_SYMBOL, listing each function under its name. */
#ifndef INGOT_CODEGEN_H_
#define INGOT_CODEGEN_H_

#include "lower/ir.h"
#include "schedule/schedule.h"

/* How a backend builds (every field may be NULL / zero). */
typedef struct ingot_codegen_options_t {
  const char* cc;               /* target c: the C compiler command; NULL: $CC or "cc" */
  const char* keep_source_path; /* not NULL: the module's text (the C source, the
                                   optimized LLVM IR) is also written there */
} ingot_codegen_options_t;

/* How a backend vectorizes; ingot_codegen_prepare settles VECTORIZED loops by
 * it. */
typedef enum ingot_codegen_vector_style_t {
  /* The backend's compiler picks the lanes (c: `#pragma omp simd`): a
   * VECTORIZED loop stays so when its iterations are independent (it assigns
   * no local bound outside it and every store's index moves with the loop,
   * directly or through a local bound inside it). */
  INGOT_CODEGEN_VECTOR_PRAGMA = 1,
  /* Explicit vector types (llvm): lanes = the target's vector bytes / size
   * of the dtype the loop stores first (2..64, a dtype with a vector lane
   * type, extent >= 2), and stricter independence: no outer local assigned,
   * every store affine in the loop variable with a non-zero coefficient, a
   * buffer written in the loop read only at the very index it is written.
   * Loops nested in a vectorized one (VECTORIZED or PARALLEL) run serially. */
  INGOT_CODEGEN_VECTOR_LANES = 2,
  /* No vectors and no thread pool (cuda, rocm): PARALLEL and VECTORIZED
   * loops become SERIAL; loops bound to GPU blocks and threads are kept
   * (the only backends that take them). */
  INGOT_CODEGEN_VECTOR_NONE = 3,
} ingot_codegen_vector_style_t;

/* A code backend: one row of codegen/codegen_backends.def. Both functions
 * take the loop-IR functions of one module as ingot_codegen_prepare left
 * them (every PARALLEL loop is one to outline, every VECTORIZED loop one to
 * vectorize, with its lanes where the style says so), read them only, and
 * fail naming the function on IR they cannot express; outputs are set to
 * empty on entry and stay so on failure. */
typedef struct ingot_codegen_backend_t {
  ingot_target_kind_t kind;
  const char* name;             /* "c", "llvm": the target string's first word */
  ingot_codegen_vector_style_t vectors;
  /* Appends the module's text (C source, optimized LLVM IR, ...) to out_text. */
  ingot_status_t (*emit)(ingot_ir_func_t* const* funcs, uint32_t count, const ingot_target_t* target,
                         ingot_strbuf_t* out_text);
  /* The loadable object (an ELF shared object that imports nothing for the
   * CPU targets), in memory (heap, free() it). */
  ingot_status_t (*build)(ingot_ir_func_t* const* funcs, uint32_t count, const ingot_target_t* target,
                          const ingot_codegen_options_t* options, uint8_t** out_object, size_t* out_size);
} ingot_codegen_backend_t;

/* ---- The shared pass before every backend (codegen/codegen_prepare.c). */

typedef struct ingot_codegen_prepared_t {
  ingot_ir_func_t** funcs;      /* one per input function, same order */
  uint32_t count;
} ingot_codegen_prepared_t;

/* Copies `funcs` (each ingot_ir_verify clean) into `out_prepared` with the
 * decisions every backend used to make on its own settled in the IR, for
 * `target`'s backend:
 *   - a PARALLEL loop stays PARALLEL only where it is outlined into a body
 *     run by env->parallel_for: extent > 1, it assigns no local bound
 *     outside it, and it is not nested in another outlined PARALLEL loop (nor,
 *     for INGOT_CODEGEN_VECTOR_LANES, in a vectorized loop); others become
 *     SERIAL;
 *   - a VECTORIZED loop stays VECTORIZED only where the backend's vector
 *     style (ingot_codegen_vector_style_t) can vectorize it on this target,
 *     with loop.lanes set for the LANES style; others become SERIAL;
 *   - for INGOT_CODEGEN_VECTOR_NONE (cuda, rocm) every PARALLEL and
 *     VECTORIZED loop becomes SERIAL and loops bound to GPU blocks and
 *     threads stay; the other styles refuse bound loops
 *     (INGOT_ERROR_UNSUPPORTED naming the function and loop).
 * Semantics are unchanged (only loop kinds and lanes change), the copies
 * verify (ingot_ir_verify) and print (ingot_ir_print). The copies share
 * expression nodes with `funcs`, which must outlive them; free them with
 * ingot_codegen_prepared_free. Fails with INGOT_ERROR_UNSUPPORTED for a
 * target kind without a backend. */
ingot_status_t ingot_codegen_prepare(ingot_ir_func_t* const* funcs, uint32_t count,
                                     const ingot_target_t* target, ingot_codegen_prepared_t* out_prepared);
void ingot_codegen_prepared_free(ingot_codegen_prepared_t* prepared);

/* The backend of a target kind; NULL when this build has none for it. */
const ingot_codegen_backend_t* ingot_codegen_backend_find(ingot_target_kind_t kind);

/* Prepares the functions (ingot_codegen_prepare) and emits the module's text
 * through the target's backend (target NULL: c). */
ingot_status_t ingot_codegen_emit(ingot_ir_func_t* const* funcs, uint32_t count,
                                  const ingot_target_t* target, ingot_strbuf_t* out_text);

/* Prepares the functions (ingot_codegen_prepare), then generates and builds
 * the module into a shared object in memory (heap, free() it) through the
 * target's backend (target NULL: c): `c` with the C
 * compiler `cc` (NULL: $CC or "cc"), `llvm` with LLVM (cc unused). When
 * `keep_source_path` is not NULL the source (C, or the optimized LLVM IR) is
 * also written there. Fails with INGOT_ERROR_UNSUPPORTED for a target kind
 * this build has no backend for. */
ingot_status_t ingot_codegen_build(ingot_ir_func_t* const* funcs, uint32_t count,
                                   const ingot_target_t* target, const char* cc,
                                   const char* keep_source_path, uint8_t** out_object,
                                   size_t* out_size);

/* ---- The backends' entry points (the rows of codegen_backends.def). */

/* Target `c`: appends the C source of a module holding `funcs` (prepared)
 * and the library table to `out_source`. */
ingot_status_t ingot_codegen_c_emit(ingot_ir_func_t* const* funcs, uint32_t count,
                                    const ingot_target_t* target, ingot_strbuf_t* out_source);
/* The same from functions not yet prepared (ingot_codegen_prepare, then
 * ingot_codegen_c_emit). */
ingot_status_t ingot_codegen_c_source(ingot_ir_func_t* const* funcs, uint32_t count,
                                      const ingot_target_t* target, ingot_strbuf_t* out_source);
/* Target `c`: the source above built by the system C compiler. */
ingot_status_t ingot_codegen_c_build(ingot_ir_func_t* const* funcs, uint32_t count,
                                     const ingot_target_t* target, const ingot_codegen_options_t* options,
                                     uint8_t** out_object, size_t* out_size);

/* Target `llvm`: the loop IR to LLVM IR through the LLVM-C API, explicit
 * vector types for VECTORIZED loops, the O3 pipeline, an object for the
 * target's triple linked by ld.lld into a position-independent shared object
 * that imports nothing (same contract as above; see codegen_llvm.c).
 * ingot_codegen_llvm_emit appends the optimized LLVM IR as text. Both fail
 * with INGOT_ERROR_UNSUPPORTED in a build without LLVM. */
ingot_status_t ingot_codegen_llvm_emit(ingot_ir_func_t* const* funcs, uint32_t count,
                                       const ingot_target_t* target, ingot_strbuf_t* out_text);
ingot_status_t ingot_codegen_llvm_build(ingot_ir_func_t* const* funcs, uint32_t count,
                                        const ingot_target_t* target, const ingot_codegen_options_t* options,
                                        uint8_t** out_object, size_t* out_size);
/* True when this build has the llvm target. */
bool ingot_codegen_llvm_available(void);

/* Targets `cuda` and `rocm` (codegen_gpu.c; its first comment states the
 * rules by which loops bound to blocks and threads, barriers and shared
 * buffers become CUDA C / HIP): one kernel per function,
 *   extern "C" __global__ void NAME(T0* b0, T1* b1, ...)   (buffer order),
 * launched as ingot_codegen_gpu_launches says. emit appends the source
 * (CUDA C for NVRTC, HIP for hiprtc). build: cuda -> a code set
 * (runtime/ingot_format.h: a CUBIN for target->gpu.arch plus PTX for the
 * same compute_XX, built by NVRTC); rocm -> the bare AMDGPU code object
 * (hiprtc). A missing compiler: INGOT_ERROR_UNSUPPORTED naming the library
 * (ingot_codegen_gpu_compiler_check). float16 buffers are refused. */
ingot_status_t ingot_codegen_cuda_emit(ingot_ir_func_t* const* funcs, uint32_t count,
                                       const ingot_target_t* target, ingot_strbuf_t* out_text);
ingot_status_t ingot_codegen_cuda_build(ingot_ir_func_t* const* funcs, uint32_t count,
                                        const ingot_target_t* target, const ingot_codegen_options_t* options,
                                        uint8_t** out_object, size_t* out_size);
ingot_status_t ingot_codegen_rocm_emit(ingot_ir_func_t* const* funcs, uint32_t count,
                                       const ingot_target_t* target, ingot_strbuf_t* out_text);
ingot_status_t ingot_codegen_rocm_build(ingot_ir_func_t* const* funcs, uint32_t count,
                                        const ingot_target_t* target, const ingot_codegen_options_t* options,
                                        uint8_t** out_object, size_t* out_size);

/* The launch each kernel of a GPU module expects, one per function in
 * order: kernel = the function's index, grid and block as the printer
 * computes them (rules 1 and 2 of codegen_gpu.c), shared_bytes 0 (shared
 * buffers are static arrays). The functions may be prepared or not
 * (preparing changes no bound loop). Fails (out_launches then undefined)
 * for a target that is not cuda/rocm or lacks its GPU facts, for a function
 * that does not verify, for a bound loop that assigns a local declared
 * outside it, and for SHARED buffers larger than
 * target->gpu.shared_bytes_per_block. */
ingot_status_t ingot_codegen_gpu_launches(ingot_ir_func_t* const* funcs, uint32_t count,
                                          const ingot_target_t* target, ingot_launch_record_t* out_launches);

/* ---- GPU compilers (codegen_gpu_rtc.c): NVRTC for INGOT_TARGET_CUDA,
 * hiprtc for INGOT_TARGET_ROCM, loaded with dlopen when first needed (no
 * build-time dependency). */

/* INGOT_OK when the compiler that `kind` needs at compile time can be loaded
 * (CPU kinds need none: always INGOT_OK); otherwise INGOT_ERROR_UNSUPPORTED
 * with a message naming the library, how to get it and every place tried. */
ingot_status_t ingot_codegen_gpu_compiler_check(ingot_target_kind_t kind);
/* One line on that compiler (its library, version and, for NVRTC, the
 * toolkit headers used) or why it is missing, into out (cap bytes); returns
 * whether it is there. CPU kinds: false, "no GPU compiler". */
bool ingot_codegen_gpu_compiler_describe(ingot_target_kind_t kind, char* out, size_t cap);

#endif /* INGOT_CODEGEN_H_ */
