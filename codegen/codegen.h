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

/* A code backend: one row of codegen/codegen_backends.def. Both functions
 * take the scheduled loop-IR functions of one module (ingot_ir_verify
 * clean), read them only, and fail naming the function on IR they cannot
 * express; outputs are set to empty on entry and stay so on failure. */
typedef struct ingot_codegen_backend_t {
  ingot_target_kind_t kind;
  const char* name;             /* "c", "llvm": the target string's first word */
  /* Appends the module's text (C source, optimized LLVM IR, ...) to out_text. */
  ingot_status_t (*emit)(ingot_ir_func_t* const* funcs, uint32_t count, const ingot_target_t* target,
                         ingot_strbuf_t* out_text);
  /* The loadable object (an ELF shared object that imports nothing for the
   * CPU targets), in memory (heap, free() it). */
  ingot_status_t (*build)(ingot_ir_func_t* const* funcs, uint32_t count, const ingot_target_t* target,
                          const ingot_codegen_options_t* options, uint8_t** out_object, size_t* out_size);
} ingot_codegen_backend_t;

/* The backend of a target kind; NULL when this build has none for it. */
const ingot_codegen_backend_t* ingot_codegen_backend_find(ingot_target_kind_t kind);

/* Emits the module's text through the target's backend (target NULL: c). */
ingot_status_t ingot_codegen_emit(ingot_ir_func_t* const* funcs, uint32_t count,
                                  const ingot_target_t* target, ingot_strbuf_t* out_text);

/* Generates and builds the module into a shared object in memory (heap,
 * free() it) through the target's backend (target NULL: c): `c` with the C
 * compiler `cc` (NULL: $CC or "cc"), `llvm` with LLVM (cc unused). When
 * `keep_source_path` is not NULL the source (C, or the optimized LLVM IR) is
 * also written there. Fails with INGOT_ERROR_UNSUPPORTED for a target kind
 * this build has no backend for. */
ingot_status_t ingot_codegen_build(ingot_ir_func_t* const* funcs, uint32_t count,
                                   const ingot_target_t* target, const char* cc,
                                   const char* keep_source_path, uint8_t** out_object,
                                   size_t* out_size);

/* ---- The backends' entry points (the rows of codegen_backends.def). */

/* Target `c`: appends the C source of a module holding `funcs` (and the
 * library table) to `out_source`. */
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

#endif /* INGOT_CODEGEN_H_ */
