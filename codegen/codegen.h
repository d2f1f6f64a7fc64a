/* Code generation: scheduled loop-IR functions -> a loadable code object.
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

/* Appends the C source of a module holding `funcs` (and the library table)
 * to `out_source`. Fails naming the function on IR it cannot express. */
ingot_status_t ingot_codegen_c_source(ingot_ir_func_t* const* funcs, uint32_t count,
                                      const ingot_target_t* target, ingot_strbuf_t* out_source);

/* Generates and builds the module into a shared object in memory (heap,
 * free() it), for the target's kind: `c` with the C compiler `cc` (NULL: $CC
 * or "cc"), `llvm` with ingot_codegen_llvm_build (cc unused). When
 * `keep_source_path` is not NULL the source (C, or the optimized LLVM IR) is
 * also written there. */
ingot_status_t ingot_codegen_build(ingot_ir_func_t* const* funcs, uint32_t count,
                                   const ingot_target_t* target, const char* cc,
                                   const char* keep_source_path, uint8_t** out_object,
                                   size_t* out_size);

/* Target `llvm`: the loop IR to LLVM IR through the LLVM-C API, explicit
 * vector types for VECTORIZED loops, the O3 pipeline, an object for the
 * target's triple linked by ld.lld into a position-independent shared object
 * that imports nothing (same contract as above; see codegen_llvm.c). The
 * shared object is in memory (heap, free() it); when `keep_ir_path` is not
 * NULL the optimized LLVM IR is written there. Fails with
 * INGOT_ERROR_UNSUPPORTED in a build without LLVM. */
ingot_status_t ingot_codegen_llvm_build(ingot_ir_func_t* const* funcs, uint32_t count,
                                        const ingot_target_t* target, const char* keep_ir_path,
                                        uint8_t** out_object, size_t* out_size);
/* True when this build has the llvm target. */
bool ingot_codegen_llvm_available(void);

#endif /* INGOT_CODEGEN_H_ */
