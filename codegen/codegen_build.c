/* Target `c`: building the module with the system C compiler.
 *
 * The source goes to a private directory (mkdtemp); the compiler runs with
 * posix_spawnp and an argv array (no shell), its output captured in a file
 * there; the shared object is read back into memory, checked
 * (ingot_codegen_elf_check) and the directory removed. On a compiler failure
 * the source is kept and its path is in the message. */
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

#include "codegen/codegen.h"
#include "codegen_internal.h"


enum { kCompileTimeoutSeconds = 600, kMaxArgs = 64, kLogLines = 20, kLogBytes = 2400 };

/* Flags and why (the compiler command may carry flags of its own, e.g.
 * "clang --target=aarch64-linux-gnu -mcpu=cortex-a72": a cross compiler):
 *  -march=x86-64 -mtune=generic         only when `cc -dumpmachine` says the
 *                                       compiler builds for x86-64 (a target
 *                                       `c -mcpu=LEVEL` gives -march=LEVEL)
 *  -std=c99 -O3 -fPIC -shared           position-independent shared object
 *  -nostdlib -nostartfiles -ffreestanding  no libc, no crt files, no libgcc
 *  -fvisibility=hidden                  only ingot_library_query is exported
 *  -fno-math-errno -fno-trapping-math   sqrt/floor/ceil become instructions
 *  -ffp-contract=fast                   a*b+c may fuse to FMA (ISO modes turn it off)
 *  -fopenmp-simd                        honour `#pragma omp simd` (no runtime)
 *  -fno-stack-protector                 no __stack_chk_fail import
 *  -fno-asynchronous-unwind-tables      no .eh_frame to load
 *  -fno-tree-loop-distribute-patterns   (gcc) loops stay loops, not memset calls
 *  -fno-plt                             no PLT stubs
 *  -Wl,-z,defs                          an undefined symbol fails the link
 *  -Wl,--hash-style=both                DT_HASH and DT_GNU_HASH for loaders
 *  -Wl,-z,noexecstack                   no executable stack
 *  -Wl,--build-id=none -s               deterministic and small output */
static const char* const k_common_flags[] = {
    "-std=c99", "-O3", "-fPIC", "-shared", "-nostdlib", "-nostartfiles", "-ffreestanding",
    "-fvisibility=hidden", "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=fast", "-fopenmp-simd",
    "-fno-stack-protector", "-fno-asynchronous-unwind-tables", "-fno-plt", "-w",
    "-Wl,-z,defs", "-Wl,--hash-style=both", "-Wl,-z,noexecstack", "-Wl,--build-id=none", "-s",
};

/* Splits the compiler command ("gcc", "ccache gcc") into words. */
static size_t split_words(char* text, char** words, size_t cap) {
  size_t n = 0;
  char* save = NULL;
  for (char* w = strtok_r(text, " \t", &save); w && n < cap; w = strtok_r(NULL, " \t", &save))
    words[n++] = w;
  return n;
}

/* The first line of what `cc ... option` prints, in out (empty when it
 * fails or prints nothing). */
static void compiler_says(char* const* words, size_t n, const char* option, const char* dir, char* out,
                          size_t cap) {
  char* argv[kMaxArgs];
  size_t a = 0;
  out[0] = '\0';
  for (size_t i = 0; i < n && a < kMaxArgs - 2; ++i) argv[a++] = words[i];
  argv[a++] = (char*)option;
  argv[a] = NULL;
  char log[4200];
  snprintf(log, sizeof(log), "%s/says.txt", dir);
  ingot_codegen_tool_run_t run;
  if (ingot_codegen_run_tool(argv, log, kCompileTimeoutSeconds, &run) == INGOT_OK && run.exit_code == 0 &&
      !run.timed_out) {
    uint8_t* text = NULL;
    size_t size = 0;
    if (ingot_file_read(log, &text, &size) == INGOT_OK) {
      size_t k = 0;
      while (k < size && k + 1 < cap && text[k] != '\n') {
        out[k] = (char)text[k];
        ++k;
      }
      out[k] = '\0';
      free(text);
    }
  }
  ingot_compiler_error_clear();
  unlink(log);
}

/* 1 if `cc --version` names clang (its flags differ a little), else 0. */
static int compiler_is_clang(char* const* words, size_t n, const char* dir) {
  char line[512];
  compiler_says(words, n, "--version", dir, line, sizeof(line));
  return strstr(line, "clang") != NULL;
}

/* Whether the compiler (its flags included: "clang --target=...") builds
 * for x86-64, by `cc -dumpmachine` (gcc and clang print the triple); when it
 * says nothing, whether this machine is x86-64. */
static bool compiler_targets_x86_64(char* const* words, size_t n, const char* dir, char* machine, size_t cap) {
  compiler_says(words, n, "-dumpmachine", dir, machine, cap);
  if (!machine[0]) {
#if defined(__x86_64__)
    return true;
#else
    return false;
#endif
  }
  return strncmp(machine, "x86_64", 6) == 0 || strncmp(machine, "amd64", 5) == 0;
}

static bool cpu_name_ok(const char* cpu) {
  if (!cpu[0] || cpu[0] == '-') return false;
  for (const char* p = cpu; *p; ++p) {
    char c = *p;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
          c == '_' || c == '.'))
      return false;
  }
  return true;
}

/* The first lines of the compiler's output, for the error message. */
ingot_status_t ingot_codegen_c_compile(const char* source, size_t source_size,
                                       const ingot_target_t* target, const char* cc,
                                       uint8_t** out_object, size_t* out_size) {
  *out_object = NULL;
  *out_size = 0;
  if (!source) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "codegen c: no source");
  if (target && target->kind != INGOT_TARGET_C)
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "codegen c: target '%s' is not a C target", target->name);
  if (target && target->cpu[0] && !cpu_name_ok(target->cpu))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "codegen c: bad cpu name '%s'", target->cpu);
  if (!cc || !*cc) cc = getenv("CC");
  if (!cc || !*cc) cc = "cc";

  const char* tmp = getenv("TMPDIR");
  if (!tmp || !*tmp) tmp = "/tmp";
  char dir[4096], src_path[4200], so_path[4200], log_path[4200];
  snprintf(dir, sizeof(dir), "%s/ingot-cc-XXXXXX", tmp);
  int dir_slot; /* a signal removes it and what is in it */
  if (!ingot_cleanup_mkdtemp(dir, &dir_slot))
    return ingot_fail(INGOT_ERROR_IO, "codegen c: cannot create a temporary directory in '%s': %s", tmp,
                      strerror(errno));
  snprintf(src_path, sizeof(src_path), "%s/module.c", dir);
  snprintf(so_path, sizeof(so_path), "%s/module.so", dir);
  snprintf(log_path, sizeof(log_path), "%s/cc.log", dir);

  ingot_status_t st = ingot_codegen_write_file(src_path, source, source_size);
  char* cc_copy = ingot_xstrdup(cc);
  char* words[16];
  size_t nwords = split_words(cc_copy, words, 16);
  if (st == INGOT_OK && nwords == 0)
    st = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "codegen c: empty compiler command");
  bool keep_source = false;
  int clang = 0;
  bool x86 = false;
  char march[64] = "-march=x86-64", mtune[64] = "-mtune=generic";
  if (st == INGOT_OK) {
    clang = compiler_is_clang(words, nwords, dir);
    char machine[256];
    x86 = compiler_targets_x86_64(words, nwords, dir, machine, sizeof(machine));
    if (target && target->cpu[0]) {
      snprintf(march, sizeof(march), "-march=%s", target->cpu);
      mtune[0] = '\0';
    }
    /* The -mcpu levels of target c are x86-64 levels (target_levels.def);
     * another machine's compiler takes its flags in --cc. */
    if (!x86 && target && target->cpu[0])
      st = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                      "codegen c: target '%s' names an x86-64 level, but '%s' builds for '%s'; for another "
                      "machine give plain 'c' and the compiler's own flags in --cc (e.g. --cc \"clang "
                      "--target=aarch64-linux-gnu -mcpu=cortex-a72\")", target->name, cc,
                      machine[0] ? machine : "another machine");
  }
  if (st == INGOT_OK) {
    char* argv[kMaxArgs];
    size_t a = 0;
    for (size_t i = 0; i < nwords; ++i) argv[a++] = words[i];
    for (size_t i = 0; i < sizeof(k_common_flags) / sizeof(k_common_flags[0]); ++i)
      argv[a++] = (char*)k_common_flags[i];
    if (!clang) argv[a++] = "-fno-tree-loop-distribute-patterns";
    /* x86-64 flags only for a compiler that builds for x86-64: the
     * architecture's baseline unless the target names a level. */
    if (x86) {
      argv[a++] = march;
      if (mtune[0]) argv[a++] = mtune;
    }
    argv[a++] = "-o";
    argv[a++] = so_path;
    argv[a++] = src_path;
    argv[a] = NULL;
    ingot_codegen_tool_run_t run;
    st = ingot_codegen_run_tool(argv, log_path, kCompileTimeoutSeconds, &run);
    if (st == INGOT_OK && (run.exit_code != 0 || run.timed_out)) {
      char head[kLogBytes];
      ingot_codegen_log_head(log_path, head, sizeof(head), kLogLines);
      keep_source = true;
      if (run.timed_out)
        st = ingot_fail(INGOT_ERROR_INTERNAL, "codegen c: '%s' took over %d s; source kept at %s", cc,
                        kCompileTimeoutSeconds, src_path);
      else
        st = ingot_fail(INGOT_ERROR_INTERNAL,
                        "codegen c: '%s' failed (exit %d); source kept at %s; its output:\n%s", cc,
                        run.exit_code, src_path, head);
    }
  }
  free(cc_copy);
  uint8_t* object = NULL;
  size_t size = 0;
  if (st == INGOT_OK) st = ingot_file_read(so_path, &object, &size);
  if (st == INGOT_OK) {
    st = ingot_codegen_elf_check(object, size);
    if (st != INGOT_OK) {
      free(object);
      object = NULL;
    }
  }
  unlink(so_path);
  unlink(log_path);
  if (!keep_source) {
    unlink(src_path);
    rmdir(dir);
  }
  ingot_cleanup_drop(dir_slot);
  if (st != INGOT_OK) return st;
  *out_object = object;
  *out_size = size;
  return INGOT_OK;
}

ingot_status_t ingot_codegen_c_build(ingot_ir_func_t* const* funcs, uint32_t count,
                                     const ingot_target_t* target, const ingot_codegen_options_t* options,
                                     uint8_t** out_object, size_t* out_size) {
  if (!out_object || !out_size)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "codegen c: missing output");
  *out_object = NULL;
  *out_size = 0;
  const char* cc = options ? options->cc : NULL;
  const char* keep_source_path = options ? options->keep_source_path : NULL;
  ingot_strbuf_t source = {0};
  ingot_status_t st = ingot_codegen_c_emit(funcs, count, target, &source);
  if (st == INGOT_OK && keep_source_path)
    st = ingot_file_write_atomic(keep_source_path, source.data, source.length);
  if (st == INGOT_OK)
    st = ingot_codegen_c_compile(source.data, source.length, target, cc, out_object, out_size);
  ingot_strbuf_free(&source);
  return st;
}
