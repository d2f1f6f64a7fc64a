/* Tests for codegen_gpu_rtc (GPU source -> code objects through NVRTC and
 * hiprtc). The kernels below are test input written here, not output of
 * ingot's printers.
 *
 *   test_gpu_rtc cuda     NVRTC: a CUBIN for sm_90 and sm_80 (an ELF for
 *                         EM_CUDA whose symbol table lists the kernel) and
 *                         PTX that ptxas accepts; a syntax error gives NVRTC's
 *                         log in the message; malformed architectures fail.
 *   test_gpu_rtc rocm     hiprtc: a gfx90a code object (ELF for EM_AMDGPU
 *                         listing the kernel); a syntax error gives the log.
 *   test_gpu_rtc missing  with INGOT_NVRTC_LIBRARY / INGOT_HIPRTC_LIBRARY
 *                         naming files that do not exist: both report
 *                         UNSUPPORTED, naming the library.
 * cuda and rocm exit 77 (skipped) when their compiler is missing. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "codegen/codegen_gpu_rtc.h"

#ifndef INGOT_TEST_READELF
#define INGOT_TEST_READELF "readelf"
#endif
#ifndef INGOT_TEST_PTXAS
#define INGOT_TEST_PTXAS ""
#endif

static int g_failures = 0;
#define CHECK(cond, ...)                                                         \
  do {                                                                           \
    if (!(cond)) {                                                               \
      ++g_failures;                                                              \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);   \
      fprintf(stderr, __VA_ARGS__);                                              \
      fprintf(stderr, "\n");                                                     \
    }                                                                            \
  } while (0)

static const char k_cuda_add[] =
    "// test input: elementwise add\n"
    "extern \"C\" __global__ void ingot_test_add(const float* a, const float* b, float* c, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) c[i] = a[i] + b[i];\n"
    "}\n";

static const char k_hip_add[] =
    "// test input: elementwise add\n"
    "#include <hip/hip_runtime.h>\n"
    "extern \"C\" __global__ void ingot_test_add(const float* a, const float* b, float* c, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) c[i] = a[i] + b[i];\n"
    "}\n";

/* Line 3 uses a name never declared. */
static const char k_broken[] =
    "extern \"C\" __global__ void ingot_test_broken(float* c) {\n"
    "  int i = threadIdx.x;\n"
    "  c[i] = ingot_undeclared_name;\n"
    "}\n";

static char g_dir[] = "/tmp/ingot_gpu_rtc_XXXXXX";

static void write_file(const char* path, const void* data, size_t size) {
  FILE* f = fopen(path, "wb");
  if (!f || fwrite(data, 1, size, f) != size) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(1);
  }
  fclose(f);
}

/* Runs a shell command; its exit code. */
static int run(const char* cmd) {
  int rc = system(cmd);
  return rc == -1 ? -1 : (WIFEXITED(rc) ? WEXITSTATUS(rc) : -1);
}

/* An ELF64 little-endian object for e_machine, whose symbol table (readelf -Ws)
 * lists `kernel` as a defined function. */
static void check_elf(const char* what, const uint8_t* data, size_t size, uint16_t machine, const char* kernel) {
  CHECK(size > 64 && memcmp(data, "\x7f" "ELF", 4) == 0, "%s: not an ELF file (%zu bytes)", what, size);
  if (size <= 64) return;
  CHECK(data[4] == 2 && data[5] == 1, "%s: not ELF64 little-endian", what);
  uint16_t m = (uint16_t)(data[18] | data[19] << 8);
  CHECK(m == machine, "%s: e_machine %u, expected %u", what, m, machine);
  char path[256], cmd[768];
  snprintf(path, sizeof(path), "%s/%s.o", g_dir, what);
  write_file(path, data, size);
  snprintf(cmd, sizeof(cmd), "%s -Ws '%s' | grep -E ' FUNC +GLOBAL .* %s$' >/dev/null",
           INGOT_TEST_READELF, path, kernel);
  CHECK(run(cmd) == 0, "%s: readelf -Ws does not list the function %s", what, kernel);
}

static void check_broken(ingot_codegen_rtc_kind_t kind, const char* name, const char* arch) {
  ingot_codegen_rtc_code_t code;
  ingot_status_t st = ingot_codegen_rtc_compile(kind, k_broken, name, arch, NULL, 0, &code);
  const char* msg = ingot_compiler_error();
  CHECK(st == INGOT_ERROR_INVALID_ARGUMENT, "broken source: status %d", (int)st);
  CHECK(code.object == NULL && code.ptx == NULL, "broken source: output not empty");
  /* The compiler's own log line: "NAME(3): error: identifier ... undefined"
   * (NVRTC) or "<comgr's path>:3:10: error: use of undeclared identifier"
   * (hiprtc 5.2 does not use the name in its log). */
  char line3[128];
  if (kind == INGOT_CODEGEN_RTC_NVRTC)
    snprintf(line3, sizeof(line3), "%s(3): error", name);
  else
    snprintf(line3, sizeof(line3), ":3:10: error");
  CHECK(strstr(msg, line3) && strstr(msg, "ingot_undeclared_name"),
        "broken source: no log line '%s ... ingot_undeclared_name' in: %s", line3, msg);
  CHECK(strstr(msg, "compiling '") && strstr(msg, arch), "broken source: message names neither source nor arch: %s", msg);
  printf("syntax error reported as: %s\n", msg);
}

static int test_cuda(void) {
  char about[1600];
  if (!ingot_codegen_rtc_describe(INGOT_CODEGEN_RTC_NVRTC, about, sizeof(about))) {
    printf("skipped: %s\n", about);
    return 77;
  }
  printf("%s\n", about);
  CHECK(ingot_codegen_gpu_compiler_check(INGOT_TARGET_CUDA) == INGOT_OK, "%s", ingot_compiler_error());
  const char* archs[] = {"sm_90", "sm_80"};
  for (int a = 0; a < 2; ++a) {
    ingot_codegen_rtc_code_t code;
    ingot_status_t st = ingot_codegen_rtc_compile(INGOT_CODEGEN_RTC_NVRTC, k_cuda_add, "ingot_test_add.cu",
                                                  archs[a], NULL, 0, &code);
    CHECK(st == INGOT_OK, "%s: %s", archs[a], ingot_compiler_error());
    if (st != INGOT_OK) continue;
    char what[64];
    snprintf(what, sizeof(what), "cubin_%s", archs[a]);
    check_elf(what, code.object, code.object_size, 190 /* EM_CUDA */, "ingot_test_add");
    CHECK(code.ptx && strlen(code.ptx) == code.ptx_size, "%s: PTX size %zu", archs[a], code.ptx_size);
    char target[32];
    snprintf(target, sizeof(target), ".target sm_%s", archs[a] + 3);
    CHECK(strstr(code.ptx, target) != NULL, "%s: PTX lacks '%s'", archs[a], target);
    CHECK(strstr(code.ptx, ".entry ingot_test_add") != NULL, "%s: PTX lacks the kernel's .entry", archs[a]);
    if (INGOT_TEST_PTXAS[0]) {
      char ptx_path[256], out_path[256], cmd[1024];
      snprintf(ptx_path, sizeof(ptx_path), "%s/%s.ptx", g_dir, archs[a]);
      snprintf(out_path, sizeof(out_path), "%s/%s_ptxas.cubin", g_dir, archs[a]);
      write_file(ptx_path, code.ptx, code.ptx_size);
      snprintf(cmd, sizeof(cmd), "'%s' -arch=%s -o '%s' '%s'", INGOT_TEST_PTXAS, archs[a], out_path, ptx_path);
      CHECK(run(cmd) == 0, "%s: ptxas rejects the PTX (%s)", archs[a], cmd);
      snprintf(cmd, sizeof(cmd), "%s -Ws '%s' | grep -q ' ingot_test_add$'", INGOT_TEST_READELF, out_path);
      CHECK(run(cmd) == 0, "%s: ptxas's CUBIN lacks the kernel", archs[a]);
    } else {
      printf("note: no ptxas found at build time: the PTX was not assembled\n");
    }
    printf("%s: CUBIN %zu bytes, PTX %zu bytes\n", archs[a], code.object_size, code.ptx_size);
    ingot_codegen_rtc_code_free(&code);
  }
  check_broken(INGOT_CODEGEN_RTC_NVRTC, "ingot_test_broken.cu", "sm_90");
  const char* bad[] = {"sm_9", "compute_90", "sm_90x", "gfx90a", ""};
  for (int i = 0; i < 5; ++i) {
    ingot_codegen_rtc_code_t code;
    ingot_status_t st =
        ingot_codegen_rtc_compile(INGOT_CODEGEN_RTC_NVRTC, k_cuda_add, "ingot_test_add.cu", bad[i], NULL, 0, &code);
    CHECK(st == INGOT_ERROR_INVALID_ARGUMENT && strstr(ingot_compiler_error(), "sm_XX"),
          "arch '%s': status %d, %s", bad[i], (int)st, ingot_compiler_error());
  }
  /* Extra options reach the compiler: a macro the source needs. */
  static const char k_macro[] = "extern \"C\" __global__ void ingot_test_scale(float* c) { c[threadIdx.x] *= SCALE; }\n";
  const char* opts[] = {"-DSCALE=2.0f"};
  ingot_codegen_rtc_code_t code;
  ingot_status_t st =
      ingot_codegen_rtc_compile(INGOT_CODEGEN_RTC_NVRTC, k_macro, "ingot_test_scale.cu", "sm_90", opts, 1, &code);
  CHECK(st == INGOT_OK, "with -DSCALE: %s", ingot_compiler_error());
  ingot_codegen_rtc_code_free(&code);
  st = ingot_codegen_rtc_compile(INGOT_CODEGEN_RTC_NVRTC, k_macro, "ingot_test_scale.cu", "sm_90", NULL, 0, &code);
  CHECK(st == INGOT_ERROR_INVALID_ARGUMENT && strstr(ingot_compiler_error(), "SCALE"),
        "without -DSCALE: status %d, %s", (int)st, ingot_compiler_error());
  /* The toolkit's headers (fp16, bf16, WMMA), where the toolkit has them. */
  if (strstr(about, ", headers ")) {
    static const char k_half[] =
        "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <mma.h>\n"
        "extern \"C\" __global__ void ingot_test_hadd(const __half* a, const __half* b, __half* c) {\n"
        "  c[threadIdx.x] = __hadd(a[threadIdx.x], b[threadIdx.x]);\n"
        "}\n";
    st = ingot_codegen_rtc_compile(INGOT_CODEGEN_RTC_NVRTC, k_half, "ingot_test_hadd.cu", "sm_80", NULL, 0, &code);
    CHECK(st == INGOT_OK, "fp16 kernel: %s", ingot_compiler_error());
    if (st == INGOT_OK) check_elf("cubin_hadd_sm_80", code.object, code.object_size, 190, "ingot_test_hadd");
    ingot_codegen_rtc_code_free(&code);
  } else {
    printf("note: no toolkit headers beside NVRTC: cuda_fp16.h not tried\n");
  }
  return 0;
}

static int test_rocm(void) {
  char about[1600];
  if (!ingot_codegen_rtc_describe(INGOT_CODEGEN_RTC_HIPRTC, about, sizeof(about))) {
    printf("skipped: %s\n", about);
    return 77;
  }
  printf("%s\n", about);
  CHECK(ingot_codegen_gpu_compiler_check(INGOT_TARGET_ROCM) == INGOT_OK, "%s", ingot_compiler_error());
  ingot_codegen_rtc_code_t code;
  ingot_status_t st = ingot_codegen_rtc_compile(INGOT_CODEGEN_RTC_HIPRTC, k_hip_add, "ingot_test_add.hip", "gfx90a",
                                                NULL, 0, &code);
  CHECK(st == INGOT_OK, "gfx90a: %s", ingot_compiler_error());
  if (st == INGOT_OK) {
    check_elf("code_gfx90a", code.object, code.object_size, 224 /* EM_AMDGPU */, "ingot_test_add");
    CHECK(code.ptx == NULL, "hiprtc gave PTX");
    /* The code object names its processor in its notes (amdhsa.target). */
    CHECK(memmem(code.object, code.object_size, "gfx90a", 6) != NULL, "code object does not name gfx90a");
    printf("gfx90a: code object %zu bytes\n", code.object_size);
    ingot_codegen_rtc_code_free(&code);
  }
  check_broken(INGOT_CODEGEN_RTC_HIPRTC, "ingot_test_broken.hip", "gfx90a");
  const char* bad[] = {"gfx9", "sm_90", "gfx90a:xnack", "gfx90a;rm", ""};
  for (int i = 0; i < 5; ++i) {
    st = ingot_codegen_rtc_compile(INGOT_CODEGEN_RTC_HIPRTC, k_hip_add, "ingot_test_add.hip", bad[i], NULL, 0, &code);
    CHECK(st == INGOT_ERROR_INVALID_ARGUMENT && strstr(ingot_compiler_error(), "gfxNNN"),
          "arch '%s': status %d, %s", bad[i], (int)st, ingot_compiler_error());
  }
  return 0;
}

static int test_missing(void) {
  const struct {
    ingot_codegen_rtc_kind_t kind;
    const char* env;
    const char* title;
    const char* arch;
  } cases[] = {{INGOT_CODEGEN_RTC_NVRTC, "INGOT_NVRTC_LIBRARY", "NVRTC", "sm_90"},
               {INGOT_CODEGEN_RTC_HIPRTC, "INGOT_HIPRTC_LIBRARY", "hiprtc", "gfx90a"}};
  for (int i = 0; i < 2; ++i) {
    const char* path = getenv(cases[i].env);
    CHECK(path && strstr(path, "/nonexistent/"), "run with %s naming a missing file", cases[i].env);
    ingot_status_t st = ingot_codegen_rtc_check(cases[i].kind);
    const char* msg = ingot_compiler_error();
    CHECK(st == INGOT_ERROR_UNSUPPORTED, "%s: check gave %d", cases[i].title, (int)st);
    CHECK(strstr(msg, cases[i].title) && strstr(msg, "not available") && path && strstr(msg, path),
          "%s: message does not name the library: %s", cases[i].title, msg);
    printf("%s\n", msg);
    ingot_codegen_rtc_code_t code;
    st = ingot_codegen_rtc_compile(cases[i].kind, k_cuda_add, "x.cu", cases[i].arch, NULL, 0, &code);
    CHECK(st == INGOT_ERROR_UNSUPPORTED && code.object == NULL, "%s: compile gave %d", cases[i].title, (int)st);
    char about[1600];
    CHECK(!ingot_codegen_rtc_describe(cases[i].kind, about, sizeof(about)) && strstr(about, "not available"),
          "%s: describe: %s", cases[i].title, about);
    /* The same through codegen.h, by target kind. */
    ingot_target_kind_t target = i == 0 ? INGOT_TARGET_CUDA : INGOT_TARGET_ROCM;
    CHECK(ingot_codegen_gpu_compiler_check(target) == INGOT_ERROR_UNSUPPORTED &&
              strstr(ingot_compiler_error(), cases[i].title),
          "%s: gpu_compiler_check: %s", cases[i].title, ingot_compiler_error());
    CHECK(!ingot_codegen_gpu_compiler_describe(target, about, sizeof(about)) && strstr(about, path ? path : "?"),
          "%s: gpu_compiler_describe: %s", cases[i].title, about);
  }
  char about[64];
  CHECK(ingot_codegen_gpu_compiler_check(INGOT_TARGET_C) == INGOT_OK, "target c needs no GPU compiler");
  CHECK(!ingot_codegen_gpu_compiler_describe(INGOT_TARGET_LLVM, about, sizeof(about)), "llvm: %s", about);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_gpu_rtc cuda|rocm|missing\n");
    return 2;
  }
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return 1;
  }
  int rc;
  if (strcmp(argv[1], "cuda") == 0)
    rc = test_cuda();
  else if (strcmp(argv[1], "rocm") == 0)
    rc = test_rocm();
  else if (strcmp(argv[1], "missing") == 0)
    rc = test_missing();
  else
    rc = 2;
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
  run(cmd);
  if (rc != 0) return rc;
  if (g_failures) fprintf(stderr, "%d check(s) failed\n", g_failures);
  else printf("all checks passed\n");
  return g_failures ? 1 : 0;
}
