/* Internals of codegen/ shared by its files and its tests. */
#ifndef INGOT_CODEGEN_INTERNAL_H_
#define INGOT_CODEGEN_INTERNAL_H_

#include <stddef.h>
#include <stdint.h>

#include "codegen/codegen.h"

/* Compiles C source (the module text) with the system C compiler into a
 * shared object in memory (heap, free() it), then checks it with
 * ingot_codegen_elf_check. `cc` NULL: $CC or "cc". On a compiler failure the
 * message holds the first lines of its output and the path of the kept
 * source. */
ingot_status_t ingot_codegen_c_compile(const char* source, size_t source_size,
                                       const ingot_target_t* target, const char* cc,
                                       uint8_t** out_object, size_t* out_size);

/* Checks that `data` is an ELF64 little-endian shared object for the host
 * machine that can be loaded by the runtime's loader: no DT_NEEDED, no
 * TEXTREL, no PLT relocations, only RELATIVE relocations, no undefined
 * dynamic symbols, and a defined INGOT_LIBRARY_QUERY_SYMBOL. */
ingot_status_t ingot_codegen_elf_check(const uint8_t* data, size_t size);

#endif /* INGOT_CODEGEN_INTERNAL_H_ */
