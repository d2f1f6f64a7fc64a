/* Which CODE variants this CPU runs, and how much each is preferred.
 *
 * A CODE section's target string (schedule/target.c writes it) names the
 * instruction set its code needs:
 *   c | c -mcpu=LEVEL                 the C target (host architecture)
 *   llvm LEVEL [-mattr=+f1,+f2,-f3]   LEVEL: x86-64, x86-64-v2/v3/v4, aarch64
 *   llvm -mcpu=CPU [-mattr=...]       a named CPU: its level (table below,
 *                                     the same as the compiler's)
 * A variant runs here when its architecture is this one and the CPU has every
 * feature of its level and of its '+' attributes (x86-64: CPUID, with the
 * OS's support for the AVX and AVX-512 register state from XGETBV; AArch64:
 * the kernel's HWCAP bits). Among those that run, the highest level wins,
 * then llvm over c (same level), then the first in the bundle.
 *
 * Features are read once (the first call, under pthread_once) and cached. */
#define _DEFAULT_SOURCE 1
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

#include "runtime_internal.h"

typedef enum cpu_arch_t { ARCH_NONE = 0, ARCH_X86_64 = 1, ARCH_AARCH64 = 2 } cpu_arch_t;

/* Feature bits (one namespace for both architectures). */
enum {
  F_SSE3, F_SSSE3, F_SSE41, F_SSE42, F_POPCNT, F_CX16, F_LAHF, F_AVX, F_AVX2, F_FMA, F_F16C, F_BMI,
  F_BMI2, F_LZCNT, F_MOVBE, F_AVX512F, F_AVX512BW, F_AVX512CD, F_AVX512DQ, F_AVX512VL, F_AVX512VNNI,
  F_AVX512BF16, F_AVX512VBMI, F_AVX512IFMA, F_NEON, F_DOTPROD, F_FULLFP16, F_I8MM, F_BF16, F_COUNT_
};

typedef struct feature_t {
  const char* name; /* as in -mattr (LLVM's names) */
  cpu_arch_t arch;
} feature_t;

static const feature_t k_features[F_COUNT_] = {
    [F_SSE3] = {"sse3", ARCH_X86_64},          [F_SSSE3] = {"ssse3", ARCH_X86_64},
    [F_SSE41] = {"sse4.1", ARCH_X86_64},       [F_SSE42] = {"sse4.2", ARCH_X86_64},
    [F_POPCNT] = {"popcnt", ARCH_X86_64},      [F_CX16] = {"cx16", ARCH_X86_64},
    [F_LAHF] = {"sahf", ARCH_X86_64},          [F_AVX] = {"avx", ARCH_X86_64},
    [F_AVX2] = {"avx2", ARCH_X86_64},          [F_FMA] = {"fma", ARCH_X86_64},
    [F_F16C] = {"f16c", ARCH_X86_64},          [F_BMI] = {"bmi", ARCH_X86_64},
    [F_BMI2] = {"bmi2", ARCH_X86_64},          [F_LZCNT] = {"lzcnt", ARCH_X86_64},
    [F_MOVBE] = {"movbe", ARCH_X86_64},        [F_AVX512F] = {"avx512f", ARCH_X86_64},
    [F_AVX512BW] = {"avx512bw", ARCH_X86_64},  [F_AVX512CD] = {"avx512cd", ARCH_X86_64},
    [F_AVX512DQ] = {"avx512dq", ARCH_X86_64},  [F_AVX512VL] = {"avx512vl", ARCH_X86_64},
    [F_AVX512VNNI] = {"avx512vnni", ARCH_X86_64}, [F_AVX512BF16] = {"avx512bf16", ARCH_X86_64},
    [F_AVX512VBMI] = {"avx512vbmi", ARCH_X86_64}, [F_AVX512IFMA] = {"avx512ifma", ARCH_X86_64},
    [F_NEON] = {"neon", ARCH_AARCH64},         [F_DOTPROD] = {"dotprod", ARCH_AARCH64},
    [F_FULLFP16] = {"fullfp16", ARCH_AARCH64}, [F_I8MM] = {"i8mm", ARCH_AARCH64},
    [F_BF16] = {"bf16", ARCH_AARCH64},
};

#define BIT(f) ((uint64_t)1 << (f))
#define V2_FEATURES (BIT(F_SSE3) | BIT(F_SSSE3) | BIT(F_SSE41) | BIT(F_SSE42) | BIT(F_POPCNT) | BIT(F_CX16) | BIT(F_LAHF))
#define V3_FEATURES (BIT(F_AVX) | BIT(F_AVX2) | BIT(F_FMA) | BIT(F_F16C) | BIT(F_BMI) | BIT(F_BMI2) | BIT(F_LZCNT) | BIT(F_MOVBE))
#define V4_FEATURES (BIT(F_AVX512F) | BIT(F_AVX512BW) | BIT(F_AVX512CD) | BIT(F_AVX512DQ) | BIT(F_AVX512VL))

typedef struct level_t {
  const char* name;
  cpu_arch_t arch;
  int index;        /* preference: higher runs faster */
  uint64_t adds;    /* features beyond the previous level */
  uint64_t needs;   /* every feature of the level */
} level_t;

static const level_t k_levels[] = {
    {"x86-64", ARCH_X86_64, 0, 0, 0},
    {"x86-64-v2", ARCH_X86_64, 1, V2_FEATURES, V2_FEATURES},
    {"x86-64-v3", ARCH_X86_64, 2, V3_FEATURES, V2_FEATURES | V3_FEATURES},
    {"x86-64-v4", ARCH_X86_64, 3, V4_FEATURES, V2_FEATURES | V3_FEATURES | V4_FEATURES},
    {"aarch64", ARCH_AARCH64, 0, 0, BIT(F_NEON)},
};

/* Named CPUs and their levels: the same list as schedule/target.c. */
static const char* const k_named_cpus[][2] = {
    {"generic", "x86-64"},          {"haswell", "x86-64-v3"},      {"broadwell", "x86-64-v3"},
    {"skylake", "x86-64-v3"},       {"alderlake", "x86-64-v3"},    {"znver1", "x86-64-v3"},
    {"znver2", "x86-64-v3"},        {"znver3", "x86-64-v3"},       {"skylake-avx512", "x86-64-v4"},
    {"cascadelake", "x86-64-v4"},   {"cooperlake", "x86-64-v4"},   {"icelake-server", "x86-64-v4"},
    {"icelake-client", "x86-64-v4"}, {"tigerlake", "x86-64-v4"},   {"sapphirerapids", "x86-64-v4"},
    {"znver4", "x86-64-v4"},        {"cortex-a53", "aarch64"},     {"cortex-a55", "aarch64"},
    {"cortex-a72", "aarch64"},      {"cortex-a76", "aarch64"},     {"neoverse-n1", "aarch64"},
    {"neoverse-v1", "aarch64"},     {"neoverse-n2", "aarch64"},
};

static cpu_arch_t host_arch(void) {
#if defined(__x86_64__)
  return ARCH_X86_64;
#elif defined(__aarch64__)
  return ARCH_AARCH64;
#else
  return ARCH_NONE;
#endif
}

static const char* arch_name(cpu_arch_t a) {
  return a == ARCH_X86_64 ? "x86-64" : a == ARCH_AARCH64 ? "AArch64" : "an unsupported architecture";
}

#if defined(__x86_64__) && defined(__GNUC__)
static uint64_t xgetbv0(void) {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

static uint64_t detect(void) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  uint64_t f = 0;
  unsigned max_leaf = __get_cpuid_max(0, NULL);
  if (max_leaf < 1 || !__get_cpuid(1, &a, &b, &c, &d)) return 0;
  if (c & (1u << 0)) f |= BIT(F_SSE3);
  if (c & (1u << 9)) f |= BIT(F_SSSE3);
  if (c & (1u << 12)) f |= BIT(F_FMA);
  if (c & (1u << 13)) f |= BIT(F_CX16);
  if (c & (1u << 19)) f |= BIT(F_SSE41);
  if (c & (1u << 20)) f |= BIT(F_SSE42);
  if (c & (1u << 22)) f |= BIT(F_MOVBE);
  if (c & (1u << 23)) f |= BIT(F_POPCNT);
  if (c & (1u << 29)) f |= BIT(F_F16C);
  bool avx_cpu = (c & (1u << 28)) != 0;
  bool osxsave = (c & (1u << 27)) != 0;
  uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  bool os_avx = (xcr0 & 0x6) == 0x6;            /* XMM and YMM state */
  bool os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0; /* opmask, ZMM_Hi256, Hi16_ZMM */
  if (avx_cpu && os_avx) f |= BIT(F_AVX);
  else f &= ~(BIT(F_FMA) | BIT(F_F16C));         /* VEX encoded: need the YMM state */
  if (max_leaf >= 7 && __get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    if (b & (1u << 3)) f |= BIT(F_BMI);
    if (b & (1u << 8)) f |= BIT(F_BMI2);
    if (os_avx && (b & (1u << 5))) f |= BIT(F_AVX2);
    if (os_avx512) {
      if (b & (1u << 16)) f |= BIT(F_AVX512F);
      if (b & (1u << 17)) f |= BIT(F_AVX512DQ);
      if (b & (1u << 21)) f |= BIT(F_AVX512IFMA);
      if (b & (1u << 28)) f |= BIT(F_AVX512CD);
      if (b & (1u << 30)) f |= BIT(F_AVX512BW);
      if (b & (1u << 31)) f |= BIT(F_AVX512VL);
      if (c & (1u << 1)) f |= BIT(F_AVX512VBMI);
      if (c & (1u << 11)) f |= BIT(F_AVX512VNNI);
      if (__get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5))) f |= BIT(F_AVX512BF16);
    }
  }
  if (__get_cpuid_max(0x80000000u, NULL) >= 0x80000001u && __get_cpuid(0x80000001u, &a, &b, &c, &d)) {
    if (c & (1u << 0)) f |= BIT(F_LAHF);
    if (c & (1u << 5)) f |= BIT(F_LZCNT);
  }
  return f;
}
#elif defined(__aarch64__) && defined(__linux__)
static uint64_t detect(void) {
  unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  uint64_t f = 0;
  if (hw & (1ul << 1)) f |= BIT(F_NEON);      /* HWCAP_ASIMD */
  if (hw & (1ul << 10)) f |= BIT(F_FULLFP16); /* HWCAP_ASIMDHP */
  if (hw & (1ul << 20)) f |= BIT(F_DOTPROD);  /* HWCAP_ASIMDDP */
  if (hw2 & (1ul << 13)) f |= BIT(F_I8MM);    /* HWCAP2_I8MM */
  if (hw2 & (1ul << 14)) f |= BIT(F_BF16);    /* HWCAP2_BF16 */
  return f;
}
#else
static uint64_t detect(void) { return 0; }
#endif

/* Detected once per process; pthread_once makes the first calls from many
 * threads (bundles opened in parallel) race-free (stress.sessions, TSan). */
static uint64_t g_cpu_features;
static pthread_once_t g_cpu_features_once = PTHREAD_ONCE_INIT;
static void cpu_features_init(void) { g_cpu_features = detect(); }

static uint64_t cpu_features(void) {
  pthread_once(&g_cpu_features_once, cpu_features_init);
  return g_cpu_features;
}

static const level_t* find_level(const char* name) {
  for (size_t i = 0; i < sizeof k_levels / sizeof k_levels[0]; ++i)
    if (strcmp(k_levels[i].name, name) == 0) return &k_levels[i];
  for (size_t i = 0; i < sizeof k_named_cpus / sizeof k_named_cpus[0]; ++i)
    if (strcmp(k_named_cpus[i][0], name) == 0) return find_level(k_named_cpus[i][1]);
  return NULL;
}

/* Appends the names of the features in `mask` to out ("avx512f avx512bw"). */
static void append_features(char* out, size_t cap, uint64_t mask) {
  size_t n = strlen(out);
  for (int f = 0; f < F_COUNT_ && n + 1 < cap; ++f)
    if (mask & BIT(f)) n += (size_t)snprintf(out + n, cap - n, "%s%s", n && out[n - 1] != ' ' ? " " : "", k_features[f].name);
}

int ingot_rt_variant_rank(const char* target, char* why, size_t why_cap) {
  static const char* const gpu_prefixes[] = {"cuda", "rocm", "hip", "vulkan", "metal", "opencl"};
  char dummy[8];
  if (!why || why_cap == 0) {
    why = dummy;
    why_cap = sizeof dummy;
  }
  why[0] = '\0';
  char copy[INGOT_TARGET_NAME_BYTES + 1];
  snprintf(copy, sizeof copy, "%s", target ? target : "");
  char* words[8];
  int count = 0;
  for (char* w = strtok(copy, " "); w && count < 8; w = strtok(NULL, " ")) words[count++] = w;
  if (count == 0) {
    snprintf(why, why_cap, "empty target");
    return 0;
  }
  for (size_t i = 0; i < sizeof gpu_prefixes / sizeof gpu_prefixes[0]; ++i)
    if (strcmp(words[0], gpu_prefixes[i]) == 0) {
      snprintf(why, why_cap, "GPU code: this runtime has no %s loader", words[0]);
      return 0;
    }
  bool llvm = strcmp(words[0], "llvm") == 0;
  if (!llvm && strcmp(words[0], "c") != 0) {
    snprintf(why, why_cap, "unknown target kind '%s'", words[0]);
    return 0;
  }
  const level_t* level = NULL;
  uint64_t extra = 0;
  for (int w = 1; w < count; ++w) {
    const char* word = words[w];
    if (strncmp(word, "-mcpu=", 6) == 0 && !level) {
      level = find_level(word + 6);
      if (!level) {
        snprintf(why, why_cap, "unknown cpu '%s'", word + 6);
        return 0;
      }
    } else if (llvm && w == 1 && find_level(word)) {
      level = find_level(word);
    } else if (llvm && strncmp(word, "-mattr=", 7) == 0) {
      char list[INGOT_TARGET_NAME_BYTES + 1];
      snprintf(list, sizeof list, "%s", word + 7);
      char* save = NULL;
      for (char* f = strtok_r(list, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
        if (f[0] == '-') continue; /* removing a feature never stops code from running */
        int found = -1;
        for (int k = 0; k < F_COUNT_; ++k)
          if (f[0] == '+' && strcmp(k_features[k].name, f + 1) == 0) found = k;
        if (found < 0) {
          snprintf(why, why_cap, "unknown feature '%s'", f);
          return 0;
        }
        extra |= BIT(found);
      }
    } else {
      snprintf(why, why_cap, "unknown option '%s'", word);
      return 0;
    }
  }
  cpu_arch_t arch = host_arch();
  if (!level) {
    /* "c": generic code for the architecture it was built on (the loader
     * checks the object's machine); "llvm" always names its level. */
    if (llvm) {
      snprintf(why, why_cap, "no cpu level");
      return 0;
    }
    snprintf(why, why_cap, "portable C, baseline %s", arch_name(arch));
    return 1;
  }
  if (level->arch != arch) {
    snprintf(why, why_cap, "built for %s, this CPU is %s", arch_name(level->arch), arch_name(arch));
    return 0;
  }
  uint64_t have = cpu_features();
  uint64_t need = level->needs | extra;
  if ((have & need) != need) {
    snprintf(why, why_cap, "CPU lacks ");
    append_features(why, why_cap, need & ~have);
    return 0;
  }
  uint64_t shown = level->adds | extra;
  if (shown) {
    snprintf(why, why_cap, "CPU has ");
    append_features(why, why_cap, shown);
  } else {
    snprintf(why, why_cap, "baseline %s", arch_name(arch));
  }
  return 1 + 4 * level->index + (llvm ? 2 : 1);
}

void ingot_rt_cpu_describe(char* out, size_t cap) {
  if (!out || cap == 0) return;
  snprintf(out, cap, "%s:", arch_name(host_arch()));
  uint64_t have = cpu_features();
  size_t n = strlen(out);
  for (int f = 0; f < F_COUNT_ && n + 1 < cap; ++f)
    if (have & BIT(f)) n += (size_t)snprintf(out + n, cap - n, " %s", k_features[f].name);
}
