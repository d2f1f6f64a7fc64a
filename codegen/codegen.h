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
 * free() it). `cc` is the C compiler to run (NULL: $CC or "cc"). When
 * `keep_source_path` is not NULL the source is also written there. */
ingot_status_t ingot_codegen_build(ingot_ir_func_t* const* funcs, uint32_t count,
                                   const ingot_target_t* target, const char* cc,
                                   const char* keep_source_path, uint8_t** out_object,
                                   size_t* out_size);

#endif /* INGOT_CODEGEN_H_ */
