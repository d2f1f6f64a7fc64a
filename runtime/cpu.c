/* Which CODE variants this CPU runs, and how much each is preferred.
 *
 * A CODE section's target string (target/target.c writes it) names the
 * instruction set its code needs:
 *   c | c -mcpu=LEVEL                 the C target (host architecture)
 *   llvm LEVEL [-mattr=+f1,+f2,-f3]   LEVEL: a row of target_levels.def
 *   llvm -mcpu=CPU [-mattr=...]       a named CPU (target_cpus.def): its level
 * A variant runs here when its architecture is this one and the CPU has every
 * feature of its level and of its '+' attributes (x86-64: CPUID, with the
 * OS's support for the AVX and AVX-512 register state from XGETBV; AArch64:
 * the kernel's HWCAP bits). Among those that run, the highest level wins,
 * then llvm over c (same level), then the first in the bundle.
 *
 * Levels, named CPUs and features, and how each feature is detected, are the
 * rows of target/target_*.def, the same files the compiler reads: plain data,
 * expanded here with this file's own macros (no compiler code comes in).
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

typedef enum cpu_arch_t {
  ARCH_NONE = 0,
#define INGOT_TARGET_ARCH(id, display, triple_arch, triple) ARCH_##id,
#include "target/target_arches.def"
#undef INGOT_TARGET_ARCH
  ARCH_COUNT_
} cpu_arch_t;

static const char* const k_arch_names[ARCH_COUNT_] = {
    [ARCH_NONE] = "an unsupported architecture",
#define INGOT_TARGET_ARCH(id, display, triple_arch, triple) [ARCH_##id] = display,
#include "target/target_arches.def"
#undef INGOT_TARGET_ARCH
};

/* Feature bits (one namespace for all architectures). */
enum {
#define INGOT_TARGET_FEATURE(id, name, arch, detect) F_##id,
#include "target/target_features.def"
#undef INGOT_TARGET_FEATURE
  F_COUNT_
};
_Static_assert(F_COUNT_ <= 64, "features are bits of a uint64_t");

/* How a feature is found: CPUID (x86-64) or HWCAP (AArch64 Linux). */
enum { SRC_CPUID = 1, SRC_HWCAP = 2 };
enum { REG_EAX, REG_EBX, REG_ECX, REG_EDX };
enum { STATE_NONE, STATE_AVX, STATE_AVX512 };

typedef struct feature_t {
  const char* name; /* as in -mattr (LLVM's names) */
  cpu_arch_t arch;
  uint8_t source;   /* SRC_* */
  uint32_t leaf;    /* CPUID leaf; HWCAP: word 1 or 2 */
  uint8_t subleaf, reg, bit, state;
} feature_t;

#define INGOT_CPUID(leaf, subleaf, reg, bit, state) SRC_CPUID, leaf, subleaf, REG_##reg, bit, STATE_##state
#define INGOT_HWCAP(word, bit) SRC_HWCAP, word, 0, 0, bit, STATE_NONE
static const feature_t k_features[F_COUNT_] = {
#define INGOT_TARGET_FEATURE(id, name, arch, detect) [F_##id] = {name, ARCH_##arch, detect},
#include "target/target_features.def"
#undef INGOT_TARGET_FEATURE
};
#undef INGOT_HWCAP
#undef INGOT_CPUID

#define BIT(f) ((uint64_t)1 << (f))
#define INGOT_TF(id) BIT(F_##id)

typedef struct level_t {
  const char* name;
  cpu_arch_t arch;
  int index;        /* preference: higher runs faster */
  uint64_t adds;    /* features beyond the previous level */
} level_t;

static const level_t k_levels[] = {
#define INGOT_TARGET_LEVEL(id, name, arch, rank, llvm_cpu, c_mcpu, vbytes, vregs, fma, masked, l1, l2, l3, adds) \
  {name, ARCH_##arch, rank, adds},
#include "target/target_levels.def"
#undef INGOT_TARGET_LEVEL
};
#define LEVEL_COUNT (sizeof k_levels / sizeof k_levels[0])

/* Every feature of a level: its own and those of the lower ones. */
static uint64_t level_needs(const level_t* level) {
  uint64_t needs = 0;
  for (size_t i = 0; i < LEVEL_COUNT; ++i)
    if (k_levels[i].arch == level->arch && k_levels[i].index <= level->index) needs |= k_levels[i].adds;
  return needs;
}

/* Named CPUs and the index of their level in k_levels. */
enum {
#define INGOT_TARGET_LEVEL(id, ...) L_##id,
#include "target/target_levels.def"
#undef INGOT_TARGET_LEVEL
};

typedef struct named_cpu_t {
  const char* name;
  int level;
  uint64_t adds; /* features beyond its level */
} named_cpu_t;

static const named_cpu_t k_named_cpus[] = {
#define INGOT_TARGET_CPU(name, level, l1, l2, l3, adds) {name, L_##level, adds},
#include "target/target_cpus.def"
#undef INGOT_TARGET_CPU
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
  return (unsigned)a < ARCH_COUNT_ ? k_arch_names[a] : k_arch_names[ARCH_NONE];
}

#if defined(__x86_64__) && defined(__GNUC__)
static uint64_t xgetbv0(void) {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

/* Each CPUID row of the table; VEX/EVEX encoded features also need AVX and
 * the OS's support for the wider register state. */
static uint64_t detect(void) {
  unsigned r[4] = {0};
  unsigned max_basic = __get_cpuid_max(0, NULL), max_ext = __get_cpuid_max(0x80000000u, NULL);
  if (max_basic < 1 || !__get_cpuid(1, &r[0], &r[1], &r[2], &r[3])) return 0;
  bool avx_cpu = (r[2] & (1u << 28)) != 0;
  bool osxsave = (r[2] & (1u << 27)) != 0;
  uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  bool os_avx = avx_cpu && (xcr0 & 0x6) == 0x6;     /* XMM and YMM state */
  bool os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0; /* opmask, ZMM_Hi256, Hi16_ZMM */
  uint64_t f = 0;
  for (int k = 0; k < F_COUNT_; ++k) {
    const feature_t* row = &k_features[k];
    if (row->source != SRC_CPUID) continue;
    unsigned max = row->leaf >= 0x80000000u ? max_ext : max_basic;
    if (row->leaf > max || !__get_cpuid_count(row->leaf, row->subleaf, &r[0], &r[1], &r[2], &r[3])) continue;
    if (!(r[row->reg] & (1u << row->bit))) continue;
    if ((row->state == STATE_AVX && !os_avx) || (row->state == STATE_AVX512 && !os_avx512)) continue;
    f |= BIT(k);
  }
  return f;
}
#elif defined(__aarch64__) && defined(__linux__)
static uint64_t detect(void) {
  unsigned long hw[3] = {0, getauxval(AT_HWCAP), getauxval(AT_HWCAP2)};
  uint64_t f = 0;
  for (int k = 0; k < F_COUNT_; ++k)
    if (k_features[k].source == SRC_HWCAP && k_features[k].leaf <= 2 && (hw[k_features[k].leaf] & (1ul << k_features[k].bit)))
      f |= BIT(k);
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

/* The level of a level's or named CPU's name; a named CPU's features
 * beyond it are or-ed into *extra. */
static const level_t* find_level(const char* name, uint64_t* extra) {
  for (size_t i = 0; i < LEVEL_COUNT; ++i)
    if (strcmp(k_levels[i].name, name) == 0) return &k_levels[i];
  for (size_t i = 0; i < sizeof k_named_cpus / sizeof k_named_cpus[0]; ++i)
    if (strcmp(k_named_cpus[i].name, name) == 0) {
      *extra |= k_named_cpus[i].adds;
      return &k_levels[k_named_cpus[i].level];
    }
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
      level = find_level(word + 6, &extra);
      if (!level) {
        snprintf(why, why_cap, "unknown cpu '%s'", word + 6);
        return 0;
      }
    } else if (llvm && w == 1 && find_level(word, &extra)) {
      level = find_level(word, &extra);
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
  uint64_t need = level_needs(level) | extra;
  if ((have & need) != need) {
    snprintf(why, why_cap, "CPU lacks ");
    append_features(why, why_cap, need & ~have);
    return 0;
  }
  /* What the level adds to its baseline (a baseline shows none). */
  uint64_t shown = (level->index > 0 ? level->adds : 0) | extra;
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

/* ---- the CPU's model name and features (ingot.h) ---- */

static char g_cpu_model[128];
static char g_cpu_feature_list[1024];
static pthread_once_t g_cpu_model_once = PTHREAD_ONCE_INIT;

static void cpu_model_init(void) {
  char raw[128] = {0};
#if defined(__x86_64__) && defined(__GNUC__)
  unsigned r[4] = {0};
  if (__get_cpuid_max(0x80000000u, NULL) >= 0x80000004u) {
    for (unsigned leaf = 0; leaf < 3; ++leaf) {
      __get_cpuid(0x80000002u + leaf, &r[0], &r[1], &r[2], &r[3]);
      memcpy(raw + 16 * leaf, r, 16);
    }
    raw[48] = '\0';
  }
#elif defined(__aarch64__) && defined(__linux__)
  FILE* f = fopen("/sys/devices/system/cpu/cpu0/regs/identification/midr_el1", "r");
  if (f) {
    char midr[64] = {0};
    if (fgets(midr, sizeof midr, f)) {
      midr[strcspn(midr, "\r\n")] = '\0';
      snprintf(raw, sizeof raw, "aarch64 midr %s", midr);
    }
    fclose(f);
  }
#endif
  /* Collapse runs of spaces and trim both ends. */
  size_t n = 0;
  for (const char* p = raw; *p; ++p) {
    if (*p == ' ' && (n == 0 || g_cpu_model[n - 1] == ' ')) continue;
    if (n + 1 < sizeof g_cpu_model) g_cpu_model[n++] = *p;
  }
  while (n > 0 && g_cpu_model[n - 1] == ' ') --n;
  g_cpu_model[n] = '\0';
#if defined(__x86_64__) && defined(__GNUC__)
  /* A virtual machine's brand string may name only the line ("AMD EPYC" for
   * Zen 1 to Zen 5 guests alike), so the family and model numbers of CPUID
   * leaf 1 follow it: a log tuned on one core is not applied on another. */
  unsigned sig[4] = {0};
  if (__get_cpuid_max(0, NULL) >= 1 && __get_cpuid(1, &sig[0], &sig[1], &sig[2], &sig[3])) {
    unsigned family = (sig[0] >> 8) & 0xfu, model = (sig[0] >> 4) & 0xfu;
    if (family == 0xfu) family += (sig[0] >> 20) & 0xffu;
    if (family == 0x6u || family >= 0xfu) model |= ((sig[0] >> 16) & 0xfu) << 4;
    snprintf(g_cpu_model + n, sizeof g_cpu_model - n, "%s(family %u model %u)", n ? " " : "", family, model);
  }
#endif
  append_features(g_cpu_feature_list, sizeof g_cpu_feature_list, cpu_features());
}

const char* ingot_cpu_model(void) {
  pthread_once(&g_cpu_model_once, cpu_model_init);
  return g_cpu_model;
}

const char* ingot_cpu_features(void) {
  pthread_once(&g_cpu_model_once, cpu_model_init);
  return g_cpu_feature_list;
}
