/* NVRTC and hiprtc behind one small interface (codegen_gpu_rtc.h).
 *
 * How the compilers are reached: dlopen on first use, not linking. ingot is
 * a compiler that must build and run on machines without the CUDA toolkit or
 * ROCm (CI installs neither; a CPU-only user needs neither), and a GPU
 * target is one of several in one `ingot compile`; with dlopen one binary
 * serves both, and only `--target cuda|rocm` says what is missing. Linking
 * -lnvrtc would make the toolkit a build-time requirement for everyone, or
 * need two builds. We need no vendor header either: the dozen C entry points
 * used are declared below (their C ABI is stable across releases: enum
 * results, opaque program handles).
 *
 * Where a library is looked for, first hit wins:
 *   1. $INGOT_NVRTC_LIBRARY / $INGOT_HIPRTC_LIBRARY (a path or a file name);
 *   2. the library CMake found when ingot was built (INGOT_NVRTC_BUILD_PATH:
 *      libnvrtc in /usr/local/cuda/lib64 or CUDAToolkit_ROOT's lib64;
 *      INGOT_HIPRTC_BUILD_PATH: libamdhip64), by full path, so the toolkit's
 *      lib64 need not be on LD_LIBRARY_PATH;
 *   3. the sonames on the loader's usual path (libnvrtc.so.13, .12;
 *      libhiprtc.so.6 of ROCm 6, libamdhip64.so.5 of ROCm 5 which holds
 *      hiprtc, and the unversioned names).
 * A candidate that opens but lacks an entry point is skipped.
 *
 * NVRTC gets -I<toolkit>/include (found beside the library it was loaded
 * from) so that sources may include cuda_fp16.h, cuda_bf16.h and mma.h;
 * hiprtc has its headers built in. */
#define _GNU_SOURCE
#include "codegen_gpu_rtc.h"

#include "codegen/codegen.h"

#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef INGOT_NVRTC_BUILD_PATH
#define INGOT_NVRTC_BUILD_PATH ""
#endif
#ifndef INGOT_HIPRTC_BUILD_PATH
#define INGOT_HIPRTC_BUILD_PATH ""
#endif

/* The entry points, as both vendors declare them (nvrtc.h, hip/hiprtc.h):
 * results are C enums (0 is success), programs opaque pointers. NVRTC and
 * hiprtc have the same shapes, so one table serves both. */
typedef int rtc_result_t;
typedef void* rtc_program_t;
typedef struct rtc_api_t {
  const char* (*get_error_string)(rtc_result_t);
  rtc_result_t (*version)(int*, int*);
  rtc_result_t (*create_program)(rtc_program_t*, const char*, const char*, int, const char* const*,
                                 const char* const*);
  rtc_result_t (*destroy_program)(rtc_program_t*);
  rtc_result_t (*compile_program)(rtc_program_t, int, const char* const*);
  rtc_result_t (*get_log_size)(rtc_program_t, size_t*);
  rtc_result_t (*get_log)(rtc_program_t, char*);
  rtc_result_t (*get_code_size)(rtc_program_t, size_t*); /* nvrtcGetCUBINSize / hiprtcGetCodeSize */
  rtc_result_t (*get_code)(rtc_program_t, char*);
  rtc_result_t (*get_ptx_size)(rtc_program_t, size_t*); /* NVRTC only */
  rtc_result_t (*get_ptx)(rtc_program_t, char*);
} rtc_api_t;

typedef struct rtc_library_t {
  const char* title;          /* "NVRTC", "hiprtc" */
  const char* env;            /* the variable that names the library */
  const char* build_path;     /* found by CMake, "" if none */
  const char* sonames[6];     /* NULL-terminated */
  const char* prefix;         /* "nvrtc", "hiprtc": entry-point names */
  const char* code_size_name; /* "GetCUBINSize", "GetCodeSize" */
  const char* code_name;      /* "GetCUBIN", "GetCode" */
  const char* hint;           /* how to get it */
  pthread_once_t once;
  void* handle;
  rtc_api_t api;
  char path[512];             /* the library that was loaded */
  char include_opt[560];      /* NVRTC: "-I<toolkit>/include" when that folder
                                 holds cuda_fp16.h, else "" */
  char why[1536];             /* when not loaded: what was tried */
} rtc_library_t;

static rtc_library_t g_nvrtc = {
    .title = "NVRTC",
    .env = "INGOT_NVRTC_LIBRARY",
    .build_path = INGOT_NVRTC_BUILD_PATH,
    .sonames = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", NULL},
    .prefix = "nvrtc",
    .code_size_name = "GetCUBINSize",
    .code_name = "GetCUBIN",
    .hint = "install the CUDA Toolkit (12 or later) or point INGOT_NVRTC_LIBRARY at its lib64/libnvrtc.so",
    .once = PTHREAD_ONCE_INIT,
};
static rtc_library_t g_hiprtc = {
    .title = "hiprtc",
    .env = "INGOT_HIPRTC_LIBRARY",
    .build_path = INGOT_HIPRTC_BUILD_PATH,
    .sonames = {"libhiprtc.so.6", "libhiprtc.so", "libamdhip64.so.5", "libamdhip64.so", NULL},
    .prefix = "hiprtc",
    .code_size_name = "GetCodeSize",
    .code_name = "GetCode",
    .hint = "install ROCm's HIP runtime (Debian: libamdhip64-dev) or point INGOT_HIPRTC_LIBRARY at "
            "libhiprtc.so / libamdhip64.so",
    .once = PTHREAD_ONCE_INIT,
};

/* prefix+name from handle; on a miss, the first missing name into `missing`. */
static void* sym(void* handle, const char* prefix, const char* name, char* missing) {
  char full[64];
  snprintf(full, sizeof(full), "%s%s", prefix, name);
  void* p = dlsym(handle, full);
  if (!p && !missing[0]) snprintf(missing, 64, "%s", full);
  return p;
}

/* Opens `file` and resolves every entry point; false (and a note in why)
 * when it cannot. */
static bool try_open(rtc_library_t* lib, const char* file) {
  size_t used = strlen(lib->why);
  void* handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = dlerror();
    snprintf(lib->why + used, sizeof(lib->why) - used, "%s%s (%s)", used ? "; " : "", file,
             err ? err : "cannot open");
    return false;
  }
  char missing[64] = "";
  rtc_api_t api = {0};
  const char* p = lib->prefix;
  *(void**)&api.get_error_string = sym(handle, p, "GetErrorString", missing);
  *(void**)&api.version = sym(handle, p, "Version", missing);
  *(void**)&api.create_program = sym(handle, p, "CreateProgram", missing);
  *(void**)&api.destroy_program = sym(handle, p, "DestroyProgram", missing);
  *(void**)&api.compile_program = sym(handle, p, "CompileProgram", missing);
  *(void**)&api.get_log_size = sym(handle, p, "GetProgramLogSize", missing);
  *(void**)&api.get_log = sym(handle, p, "GetProgramLog", missing);
  *(void**)&api.get_code_size = sym(handle, p, lib->code_size_name, missing);
  *(void**)&api.get_code = sym(handle, p, lib->code_name, missing);
  if (lib == &g_nvrtc) {
    *(void**)&api.get_ptx_size = sym(handle, p, "GetPTXSize", missing);
    *(void**)&api.get_ptx = sym(handle, p, "GetPTX", missing);
  }
  if (missing[0]) {
    snprintf(lib->why + used, sizeof(lib->why) - used, "%s%s (no %s)", used ? "; " : "", file, missing);
    dlclose(handle);
    return false;
  }
  lib->handle = handle;
  lib->api = api;
  snprintf(lib->path, sizeof(lib->path), "%s", file);
  return true;
}

/* NVRTC compiles only its built-in headers unless told where the toolkit's
 * are (cuda_fp16.h, cuda_bf16.h, mma.h): the include folder beside the lib
 * folder the library was really loaded from (through its symbolic links). */
static void find_cuda_include(rtc_library_t* lib) {
  Dl_info info;
  char real[PATH_MAX], probe[PATH_MAX + 32];
  if (!dladdr(*(void**)&lib->api.version, &info) || !info.dli_fname || !realpath(info.dli_fname, real)) return;
  char* dir = dirname(dirname(real)); /* <toolkit>/lib64/libnvrtc.so.13 -> <toolkit> */
  snprintf(probe, sizeof(probe), "%s/include/cuda_fp16.h", dir);
  if (access(probe, R_OK) == 0) snprintf(lib->include_opt, sizeof(lib->include_opt), "-I%s/include", dir);
}

static void load(rtc_library_t* lib) {
  lib->why[0] = '\0';
  lib->include_opt[0] = '\0';
  const char* env = getenv(lib->env);
  if (env && env[0]) {
    /* An explicit choice is the only one tried. */
    if (!try_open(lib, env)) {
      size_t used = strlen(lib->why);
      snprintf(lib->why + used, sizeof(lib->why) - used, " [from $%s]", lib->env);
    }
    return;
  }
  if (lib->build_path[0] && try_open(lib, lib->build_path)) return;
  for (int i = 0; lib->sonames[i]; ++i)
    if (try_open(lib, lib->sonames[i])) return;
}
static void load_nvrtc(void) {
  load(&g_nvrtc);
  if (g_nvrtc.handle) find_cuda_include(&g_nvrtc);
}
static void load_hiprtc(void) { load(&g_hiprtc); }

/* The loaded library of `kind`, or NULL with an UNSUPPORTED failure
 * recorded. */
static rtc_library_t* library(ingot_codegen_rtc_kind_t kind, ingot_status_t* out_status) {
  rtc_library_t* lib = NULL;
  if (kind == INGOT_CODEGEN_RTC_NVRTC) {
    pthread_once(&g_nvrtc.once, load_nvrtc);
    lib = &g_nvrtc;
  } else if (kind == INGOT_CODEGEN_RTC_HIPRTC) {
    pthread_once(&g_hiprtc.once, load_hiprtc);
    lib = &g_hiprtc;
  } else {
    *out_status = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "gpu compile: unknown compiler kind %d", (int)kind);
    return NULL;
  }
  if (!lib->handle) {
    *out_status = ingot_fail(INGOT_ERROR_UNSUPPORTED, "%s is not available (%s); tried: %s", lib->title,
                             lib->hint, lib->why[0] ? lib->why : "nothing");
    return NULL;
  }
  *out_status = INGOT_OK;
  return lib;
}

ingot_status_t ingot_codegen_rtc_check(ingot_codegen_rtc_kind_t kind) {
  ingot_status_t st;
  library(kind, &st);
  return st;
}

bool ingot_codegen_rtc_describe(ingot_codegen_rtc_kind_t kind, char* out, size_t cap) {
  ingot_status_t st;
  rtc_library_t* lib = library(kind, &st);
  if (!lib) {
    snprintf(out, cap, "%s", ingot_compiler_error());
    return false;
  }
  int major = 0, minor = 0;
  lib->api.version(&major, &minor);
  snprintf(out, cap, "%s from %s (reports version %d.%d)%s%s", lib->title, lib->path, major, minor,
           lib->include_opt[0] ? ", headers " : "", lib->include_opt[0] ? lib->include_opt + 2 : "");
  return true;
}

void ingot_codegen_rtc_code_free(ingot_codegen_rtc_code_t* code) {
  if (!code) return;
  free(code->object);
  free(code->ptx);
  memset(code, 0, sizeof(*code));
}

/* "sm_90" / "sm_90a" -> digits+suffix after "sm_"; NULL when malformed. */
static const char* cuda_arch_number(const char* arch) {
  if (strncmp(arch, "sm_", 3) != 0) return NULL;
  const char* s = arch + 3;
  size_t digits = strspn(s, "0123456789");
  if (digits < 2 || digits > 3) return NULL;
  if (s[digits] && (strchr("af", s[digits]) == NULL || s[digits + 1])) return NULL;
  return s;
}

/* "gfx90a", "gfx942", "gfx90a:xnack-:sramecc+". */
static bool rocm_arch_valid(const char* arch) {
  if (strncmp(arch, "gfx", 3) != 0) return false;
  size_t n = strspn(arch + 3, "0123456789abcdef");
  if (n < 3 || n > 4) return false;
  const char* s = arch + 3 + n;
  while (*s == ':') {
    ++s;
    size_t f = strspn(s, "abcdefghijklmnopqrstuvwxyz");
    if (f == 0 || (s[f] != '+' && s[f] != '-')) return false;
    s += f + 1;
  }
  return *s == '\0';
}

/* Whether the code-object library behind hiprtc (libamd_comgr, already
 * loaded by hiprtc, else opened by its soname) lists `arch`'s processor
 * among its ISAs. hiprtc does not check: ROCm 5.2's comgr crashes (SIGSEGV)
 * when asked for a processor it predates (gfx942). Sets *out_known false
 * only on a definite no; when comgr cannot be asked, the compile goes ahead.
 * `out_list` gets the gfx names it knows (for the message). */
static void hip_isa_check(const char* arch, bool* out_known, char* out_list, size_t cap) {
  *out_known = true;
  out_list[0] = '\0';
  typedef int (*count_fn)(size_t*);
  typedef int (*name_fn)(size_t, const char**);
  const char* const sonames[] = {"libamd_comgr.so.2", "libamd_comgr.so.3", "libamd_comgr.so"};
  void* h = NULL;
  for (size_t i = 0; i < sizeof(sonames) / sizeof(sonames[0]) && !h; ++i) {
    h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!h) h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
  }
  if (!h) return;
  count_fn count = (count_fn)dlsym(h, "amd_comgr_get_isa_count");
  name_fn name = (name_fn)dlsym(h, "amd_comgr_get_isa_name");
  size_t n = 0;
  /* comgr stays loaded (hiprtc uses it next; its LLVM does not survive
   * being unloaded and loaded again in one process). */
  if (!count || !name || count(&n) != 0 || n == 0) return;
  size_t plen = strcspn(arch, ":");
  bool found = false;
  size_t used = 0;
  for (size_t i = 0; i < n; ++i) {
    const char* isa = NULL;
    if (name(i, &isa) != 0 || !isa) continue;
    const char* proc = strstr(isa, "--");
    proc = proc ? proc + 2 : isa;
    size_t len = strcspn(proc, ":");
    if (len == plen && strncmp(proc, arch, plen) == 0) found = true;
    /* The list: each processor once ("gfx90a" has several feature sets). */
    char word[40];
    snprintf(word, sizeof(word), " %.*s ", (int)(len < 30 ? len : 30), proc);
    char padded[600];
    snprintf(padded, sizeof(padded), " %s ", out_list);
    if (!strstr(padded, word) && used + len + 2 < cap)
      used += (size_t)snprintf(out_list + used, cap - used, "%s%.*s", used ? " " : "", (int)len, proc);
  }
  *out_known = found;
}

/* Appends the program's log (at most ~max_lines lines) to msg. */
static void append_log(const rtc_library_t* lib, rtc_program_t prog, char* msg, size_t cap, int max_lines) {
  size_t size = 0;
  if (lib->api.get_log_size(prog, &size) != 0 || size <= 1) {
    snprintf(msg + strlen(msg), cap - strlen(msg), " (the compiler left no log)");
    return;
  }
  char* log = malloc(size + 1);
  if (!log) return;
  if (lib->api.get_log(prog, log) != 0) log[0] = '\0';
  log[size] = '\0';
  size_t used = strlen(msg), keep = 0;
  int lines = 0;
  while (log[keep] && lines < max_lines) {
    if (log[keep] == '\n') ++lines;
    ++keep;
  }
  bool cut = log[keep + strspn(log + keep, " \n")] != '\0';
  while (keep > 0 && (log[keep - 1] == '\n' || log[keep - 1] == ' ')) --keep;
  snprintf(msg + used, cap - used, ":\n%.*s%s", (int)keep, log, cut ? "\n..." : "");
  free(log);
}

/* One compile of `source` with `opts`; the code (CUBIN/code object, or PTX
 * when want_ptx) into out_data/out_size (heap, NUL-terminated). */
static ingot_status_t compile_once(const rtc_library_t* lib, const char* source, const char* name,
                                   const char* shown_arch, const char* const* opts, int nopts,
                                   bool want_ptx, char** out_data, size_t* out_size) {
  *out_data = NULL;
  *out_size = 0;
  rtc_program_t prog = NULL;
  rtc_result_t r = lib->api.create_program(&prog, source, name, 0, NULL, NULL);
  if (r != 0)
    return ingot_fail(INGOT_ERROR_INTERNAL, "%s: cannot create a program for '%s': %s", lib->title, name,
                      lib->api.get_error_string(r));
  r = lib->api.compile_program(prog, nopts, opts);
  if (r != 0) {
    char msg[3600];
    snprintf(msg, sizeof(msg), "%s: compiling '%s' for %s failed (%s)", lib->title, name, shown_arch,
             lib->api.get_error_string(r));
    append_log(lib, prog, msg, sizeof(msg), 24);
    lib->api.destroy_program(&prog);
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "%s", msg);
  }
  size_t size = 0;
  r = want_ptx ? lib->api.get_ptx_size(prog, &size) : lib->api.get_code_size(prog, &size);
  char* data = NULL;
  if (r == 0 && size > 0) {
    data = malloc(size + 1);
    if (!data) {
      lib->api.destroy_program(&prog);
      return ingot_fail(INGOT_ERROR_OUT_OF_MEMORY, "%s: no memory for the code of '%s' (%zu bytes)",
                        lib->title, name, size);
    }
    r = want_ptx ? lib->api.get_ptx(prog, data) : lib->api.get_code(prog, data);
    data[size] = '\0';
  }
  lib->api.destroy_program(&prog);
  if (r != 0 || size == 0) {
    free(data);
    return ingot_fail(INGOT_ERROR_INTERNAL, "%s: compiling '%s' for %s gave no %s (%s)", lib->title, name,
                      shown_arch, want_ptx ? "PTX" : "code", r ? lib->api.get_error_string(r) : "empty");
  }
  if (want_ptx)
    while (size > 0 && data[size - 1] == '\0') --size; /* NVRTC counts the NUL */
  *out_data = data;
  *out_size = size;
  return INGOT_OK;
}

enum { kMaxOptions = 64, kOwnOptions = 2 };

ingot_status_t ingot_codegen_rtc_compile(ingot_codegen_rtc_kind_t kind, const char* source,
                                         const char* name, const char* arch,
                                         const char* const* options, uint32_t option_count,
                                         ingot_codegen_rtc_code_t* out_code) {
  if (!out_code) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "gpu compile: missing output");
  memset(out_code, 0, sizeof(*out_code));
  if (!source || !arch || (option_count && !options))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "gpu compile: missing source or architecture");
  if (!name || !name[0]) name = "ingot_module";
  if (option_count > kMaxOptions - kOwnOptions)
    return ingot_fail(INGOT_ERROR_LIMIT, "gpu compile '%s': %u options (at most %d)", name, option_count,
                      kMaxOptions - kOwnOptions);
  ingot_status_t st;
  const rtc_library_t* lib = library(kind, &st);
  if (!lib) return st;

  const char* opts[kMaxOptions];
  char arch_opt[96];
  if (kind == INGOT_CODEGEN_RTC_NVRTC) {
    const char* number = cuda_arch_number(arch);
    if (!number)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                        "gpu compile '%s': CUDA architecture '%s' is not of the form sm_XX (sm_80, sm_90)",
                        name, arch);
    /* The CUBIN for the real architecture. */
    snprintf(arch_opt, sizeof(arch_opt), "-arch=sm_%s", number);
    int nopts = 0;
    opts[nopts++] = arch_opt;
    if (lib->include_opt[0]) opts[nopts++] = lib->include_opt;
    for (uint32_t i = 0; i < option_count; ++i) opts[nopts++] = options[i];
    char* cubin;
    size_t cubin_size;
    st = compile_once(lib, source, name, arch, opts, nopts, false, &cubin, &cubin_size);
    if (st != INGOT_OK) return st;
    /* PTX for the virtual architecture of the same number, which the driver
     * compiles for newer GPUs. */
    char virt[32];
    snprintf(virt, sizeof(virt), "compute_%s", number);
    snprintf(arch_opt, sizeof(arch_opt), "-arch=%s", virt);
    char* ptx;
    size_t ptx_size;
    st = compile_once(lib, source, name, virt, opts, nopts, true, &ptx, &ptx_size);
    if (st != INGOT_OK) {
      free(cubin);
      return st;
    }
    out_code->object = (uint8_t*)cubin;
    out_code->object_size = cubin_size;
    out_code->ptx = ptx;
    out_code->ptx_size = ptx_size;
    return INGOT_OK;
  }
  if (!rocm_arch_valid(arch))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                      "gpu compile '%s': AMD GPU architecture '%s' is not of the form gfxNNN[:feature+|-] "
                      "(gfx90a, gfx942)",
                      name, arch);
  bool known;
  char isas[512];
  hip_isa_check(arch, &known, isas, sizeof(isas));
  if (!known)
    return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                      "gpu compile '%s': %s from %s cannot compile for %s: its code-object library (libamd_comgr) "
                      "knows only %s (gfx942 needs ROCm 5.7 or later)",
                      name, lib->title, lib->path, arch, isas);
  snprintf(arch_opt, sizeof(arch_opt), "--gpu-architecture=%s", arch);
  opts[0] = arch_opt;
  for (uint32_t i = 0; i < option_count; ++i) opts[1 + i] = options[i];
  char* object;
  size_t object_size;
  st = compile_once(lib, source, name, arch, opts, (int)option_count + 1, false, &object, &object_size);
  if (st != INGOT_OK) return st;
  out_code->object = (uint8_t*)object;
  out_code->object_size = object_size;
  return INGOT_OK;
}

/* ---- The public face (codegen.h): by target kind. */

ingot_status_t ingot_codegen_gpu_compiler_check(ingot_target_kind_t kind) {
  if (kind == INGOT_TARGET_CUDA) return ingot_codegen_rtc_check(INGOT_CODEGEN_RTC_NVRTC);
  if (kind == INGOT_TARGET_ROCM) return ingot_codegen_rtc_check(INGOT_CODEGEN_RTC_HIPRTC);
  return INGOT_OK;
}

bool ingot_codegen_gpu_compiler_describe(ingot_target_kind_t kind, char* out, size_t cap) {
  if (kind == INGOT_TARGET_CUDA) return ingot_codegen_rtc_describe(INGOT_CODEGEN_RTC_NVRTC, out, cap);
  if (kind == INGOT_TARGET_ROCM) return ingot_codegen_rtc_describe(INGOT_CODEGEN_RTC_HIPRTC, out, cap);
  snprintf(out, cap, "no GPU compiler");
  return false;
}
