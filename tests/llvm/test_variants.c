/* The runtime's choice among code variants (runtime/cpu.c): which target
 * strings this CPU runs, in which order, and the reasons it gives. The
 * expectations come from the compiler's view of this CPU (gcc's
 * __builtin_cpu_supports), an independent reading of CPUID. */
#include <stdio.h>
#include <string.h>

#include "runtime/runtime_internal.h"

static int g_failures = 0;
#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      ++g_failures;                                                            \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
    }                                                                          \
  } while (0)

static int rank(const char* target, char* why) { return ingot_rt_variant_rank(target, why, 160); }

int main(void) {
  char why[160], cpu[512];
  ingot_rt_cpu_describe(cpu, sizeof cpu);
  printf("%s\n", cpu);
  /* Never runnable here. */
  CHECK(rank("cuda -arch=sm_90", why) == 0 && strstr(why, "GPU"), "%s", why);
  CHECK(rank("wasm", why) == 0 && strstr(why, "unknown"), "%s", why);
  CHECK(rank("llvm x86-64-v9", why) == 0, "%s", why);
  CHECK(rank("llvm -mcpu=pentium", why) == 0 && strstr(why, "pentium"), "%s", why);
  CHECK(rank("llvm x86-64 -mattr=+sse9", why) == 0 && strstr(why, "sse9"), "%s", why);
  CHECK(rank("llvm", why) == 0, "%s", why);
  CHECK(rank("", why) == 0, "%s", why);
  CHECK(rank("c", why) == 1, "%s", why);
#if defined(__x86_64__)
  __builtin_cpu_init();
  int v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2");
  int v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512cd");
  CHECK(rank("llvm aarch64", why) == 0 && strstr(why, "built for AArch64"), "%s", why);
  int r1 = rank("llvm x86-64", why);
  CHECK(r1 > rank("c -mcpu=x86-64", why) && rank("c -mcpu=x86-64", why) > rank("c", why), "c below llvm");
  int r2 = rank("llvm x86-64-v2", why);
  CHECK(r2 > r1, "v2 %d > x86-64 %d: %s", r2, r1, why);
  int r3 = rank("llvm x86-64-v3", why);
  CHECK(v3 ? (r3 > r2 && strstr(why, "CPU has") && strstr(why, "avx2")) : (r3 == 0 && strstr(why, "lacks")),
        "v3: %d %s", r3, why);
  CHECK(rank("llvm -mcpu=znver3", why) == r3, "a named CPU ranks as its level");
  CHECK(rank("c -mcpu=x86-64-v3", why) == (v3 ? r3 - 1 : 0), "c v3 just below llvm v3");
  int r4 = rank("llvm x86-64-v4", why);
  CHECK(v4 ? (r4 > r3 && strstr(why, "avx512f") && strstr(why, "avx512vl")) : (r4 == 0 && strstr(why, "lacks avx512f")),
        "v4: %d %s", r4, why);
  printf("x86-64 %d, v2 %d, v3 %d, v4 %d: %s\n", r1, r2, r3, r4, why);
  CHECK(rank("llvm -mcpu=skylake-avx512", why) == r4, "skylake-avx512 is v4");
  int ra = rank("llvm x86-64 -mattr=+avx2,+fma", why);
  CHECK(v3 ? ra == r1 && strstr(why, "avx2 fma") : ra == 0, "-mattr features are checked: %s", why);
  CHECK(rank("llvm x86-64-v2 -mattr=-sse4.2", why) == r2, "removing a feature never blocks");
#elif defined(__aarch64__)
  CHECK(rank("llvm x86-64", why) == 0 && strstr(why, "built for x86-64"), "%s", why);
  CHECK(rank("llvm aarch64", why) > rank("c", why), "%s", why);
  CHECK(rank("llvm -mcpu=cortex-a76", why) == rank("llvm aarch64", why), "named CPU");
#endif
  if (g_failures) {
    fprintf(stderr, "%d check(s) failed\n", g_failures);
    return 1;
  }
  printf("variant selection tests passed\n");
  return 0;
}
