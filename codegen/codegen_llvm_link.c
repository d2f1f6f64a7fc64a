/* Target `llvm`: from the module to a loadable shared object.
 *
 *   target machine (triple, CPU level, -mattr; PIC) -> the O3 pipeline of the
 *   new pass manager (LLVMRunPasses "default<O3>", loop and SLP vectorizers
 *   on) -> an ELF object in memory -> ld.lld, run with posix_spawnp and an
 *   argv array (no shell) in a private temporary directory:
 *     -shared -Bsymbolic --no-undefined -z noexecstack -z relro
 *     --hash-style=both --build-id=none -s
 *   (no libc, no crt files: the object defines everything it calls) -> the
 *   shared object read back and checked with ingot_codegen_elf_check.
 * The same module gives the same bytes: LLVM's output is deterministic and
 * the linker writes no build id or paths. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <llvm-c/Error.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "codegen_internal.h"
#include "codegen_llvm_internal.h"


enum { kLinkTimeoutSeconds = 300, kLogBytes = 2400 };

static void init_llvm(void) {
  static bool done = false;
  if (done) return;
  LLVMInitializeX86TargetInfo();
  LLVMInitializeX86Target();
  LLVMInitializeX86TargetMC();
  LLVMInitializeX86AsmPrinter();
  LLVMInitializeAArch64TargetInfo();
  LLVMInitializeAArch64Target();
  LLVMInitializeAArch64TargetMC();
  LLVMInitializeAArch64AsmPrinter();
  done = true;
}

ingot_status_t ingot_llvm_target_machine(const ingot_target_t* target, LLVMTargetMachineRef* out_tm) {
  *out_tm = NULL;
  init_llvm();
  const char* triple = target->arch == INGOT_TARGET_ARCH_X86_64    ? "x86_64-unknown-linux-gnu"
                       : target->arch == INGOT_TARGET_ARCH_AARCH64 ? "aarch64-unknown-linux-gnu"
                                                                   : NULL;
  if (!triple) return ingot_fail(INGOT_ERROR_UNSUPPORTED, "codegen llvm: triple '%s' is not supported", target->triple);
  LLVMTargetRef t = NULL;
  char* err = NULL;
  if (LLVMGetTargetFromTriple(triple, &t, &err)) {
    ingot_status_t st = ingot_fail(INGOT_ERROR_UNSUPPORTED, "codegen llvm: %s: %s", triple, err ? err : "unknown");
    LLVMDisposeMessage(err);
    return st;
  }
  const char* cpu = target->cpu[0] ? target->cpu : "generic";
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(t, triple, cpu, target->features, LLVMCodeGenLevelAggressive,
                                                    LLVMRelocPIC, LLVMCodeModelDefault);
  if (!tm) return ingot_fail(INGOT_ERROR_UNSUPPORTED, "codegen llvm: no target machine for %s -mcpu=%s", triple, cpu);
  *out_tm = tm;
  return INGOT_OK;
}

/* Links object bytes into a shared object with ld.lld ($INGOT_LLD, ld.lld,
 * ld.lld-14). */
static ingot_status_t link_object(const void* obj, size_t obj_size, uint8_t** out, size_t* out_size) {
  const char* tmp = getenv("TMPDIR");
  if (!tmp || !*tmp) tmp = "/tmp";
  char dir[4096], obj_path[4200], so_path[4200], log_path[4200];
  snprintf(dir, sizeof(dir), "%s/ingot-llvm-XXXXXX", tmp);
  int dir_slot; /* a signal removes it and what is in it */
  if (!ingot_cleanup_mkdtemp(dir, &dir_slot))
    return ingot_fail(INGOT_ERROR_IO, "codegen llvm: cannot create a temporary directory in '%s': %s", tmp,
                      strerror(errno));
  snprintf(obj_path, sizeof(obj_path), "%s/module.o", dir);
  snprintf(so_path, sizeof(so_path), "%s/module.so", dir);
  snprintf(log_path, sizeof(log_path), "%s/ld.log", dir);
  ingot_status_t st = ingot_codegen_write_file(obj_path, obj, obj_size);
  if (st == INGOT_OK) {
    const char* env_lld = getenv("INGOT_LLD");
    const char* candidates[3] = {env_lld && *env_lld ? env_lld : NULL, "ld.lld", "ld.lld-14"};
    ingot_codegen_tool_run_t tool = {-1, false};
    const char* used = NULL;
    ingot_status_t run = INGOT_ERROR_NOT_FOUND;
    for (int c = 0; c < 3 && run == INGOT_ERROR_NOT_FOUND; ++c) {
      if (!candidates[c]) continue;
      char* argv[] = {(char*)candidates[c], "-shared", "-Bsymbolic", "--no-undefined", "-z", "noexecstack", "-z",
                      "relro", "--hash-style=both", "--build-id=none", "-s", "-o", so_path, obj_path, NULL};
      used = candidates[c];
      run = ingot_codegen_run_tool(argv, log_path, kLinkTimeoutSeconds, &tool);
    }
    if (run == INGOT_ERROR_NOT_FOUND) {
      st = ingot_fail(INGOT_ERROR_NOT_FOUND, "codegen llvm: cannot run the linker: no ld.lld or ld.lld-14 on PATH "
                      "(install lld, or set INGOT_LLD)");
    } else if (run != INGOT_OK) {
      st = ingot_fail(INGOT_ERROR_INTERNAL, "codegen llvm: cannot run '%s'", used);
    } else if (tool.exit_code != 0) {
      char head[kLogBytes];
      ingot_codegen_log_head(log_path, head, sizeof(head), SIZE_MAX);
      st = ingot_fail(INGOT_ERROR_INTERNAL, "codegen llvm: '%s' failed (exit %d%s): %s", used, tool.exit_code,
                      tool.timed_out ? ", killed after the time limit" : "", head);
    }
  }
  if (st == INGOT_OK) st = ingot_file_read(so_path, out, out_size);
  unlink(obj_path);
  unlink(so_path);
  unlink(log_path);
  rmdir(dir);
  ingot_cleanup_drop(dir_slot);
  return st;
}

ingot_status_t ingot_llvm_finish(ingot_llvm_module_t* m, LLVMTargetMachineRef tm, const char* ir_path,
                                 ingot_strbuf_t* out_text, uint8_t** out_object, size_t* out_size) {
  LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopVectorization(opts, 1);
  LLVMPassBuilderOptionsSetSLPVectorization(opts, 1);
  LLVMPassBuilderOptionsSetLoopUnrolling(opts, 1);
  LLVMPassBuilderOptionsSetLoopInterleaving(opts, 1);
  LLVMErrorRef perr = LLVMRunPasses(m->mod, "default<O3>", tm, opts);
  LLVMDisposePassBuilderOptions(opts);
  if (perr) {
    char* msg = LLVMGetErrorMessage(perr);
    ingot_status_t st = ingot_fail(INGOT_ERROR_INTERNAL, "codegen llvm: the O3 pipeline failed: %s", msg);
    LLVMDisposeErrorMessage(msg);
    return st;
  }
  if (ir_path) {
    char* text = LLVMPrintModuleToString(m->mod);
    ingot_status_t st = ingot_file_write_atomic(ir_path, text, strlen(text));
    LLVMDisposeMessage(text);
    if (st != INGOT_OK) return st;
  }
  if (out_text) {
    char* text = LLVMPrintModuleToString(m->mod);
    ingot_strbuf_append(out_text, text);
    LLVMDisposeMessage(text);
  }
  if (!out_object) return INGOT_OK;
  char* err = NULL;
  LLVMMemoryBufferRef buf = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, m->mod, LLVMObjectFile, &err, &buf)) {
    ingot_status_t st = ingot_fail(INGOT_ERROR_INTERNAL, "codegen llvm: cannot emit an object: %s", err ? err : "?");
    LLVMDisposeMessage(err);
    return st;
  }
  uint8_t* object = NULL;
  size_t size = 0;
  ingot_status_t st = link_object(LLVMGetBufferStart(buf), LLVMGetBufferSize(buf), &object, &size);
  LLVMDisposeMemoryBuffer(buf);
  if (st == INGOT_OK) st = ingot_codegen_elf_check(object, size);
  if (st != INGOT_OK) {
    free(object);
    return st;
  }
  *out_object = object;
  *out_size = size;
  return INGOT_OK;
}
