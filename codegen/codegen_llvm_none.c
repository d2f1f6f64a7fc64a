/* Target `llvm` in a build without LLVM (no llvm-config 14 found): the
 * target parses, and its row of codegen_backends.def says why it cannot
 * build. */
#include "codegen/codegen.h"

bool ingot_codegen_llvm_available(void) { return false; }

static ingot_status_t no_llvm(const ingot_target_t* target) {
  return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                    "target '%s': this build of ingot has no LLVM (configure with llvm-config-14 "
                    "installed, Debian package llvm-14-dev), use --target c",
                    target ? target->name : "llvm");
}

ingot_status_t ingot_codegen_llvm_emit(ingot_ir_func_t* const* funcs, uint32_t count,
                                       const ingot_target_t* target, ingot_strbuf_t* out_text) {
  (void)funcs;
  (void)count;
  (void)out_text;
  return no_llvm(target);
}

ingot_status_t ingot_codegen_llvm_build(ingot_ir_func_t* const* funcs, uint32_t count,
                                        const ingot_target_t* target, const ingot_codegen_options_t* options,
                                        uint8_t** out_object, size_t* out_size) {
  (void)funcs;
  (void)count;
  (void)options;
  if (out_object) *out_object = NULL;
  if (out_size) *out_size = 0;
  return no_llvm(target);
}
