/* Target `llvm` in a build without LLVM (no llvm-config 14 found): the
 * target parses, but building for it says why it cannot. */
#include "codegen/codegen.h"

bool ingot_codegen_llvm_available(void) { return false; }

ingot_status_t ingot_codegen_llvm_build(ingot_ir_func_t* const* funcs, uint32_t count,
                                        const ingot_target_t* target, const char* keep_ir_path,
                                        uint8_t** out_object, size_t* out_size) {
  (void)funcs;
  (void)count;
  (void)keep_ir_path;
  if (out_object) *out_object = NULL;
  if (out_size) *out_size = 0;
  return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                    "target '%s': this build of ingot has no LLVM (configure with llvm-config-14 "
                    "installed, Debian package llvm-14-dev), use --target c",
                    target ? target->name : "llvm");
}
