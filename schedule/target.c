/* Target strings: a table of target kinds, instruction-set levels and named
 * CPUs, and the parser that turns what a user types into a canonical string.
 *
 * The canonical string is what a bundle stores in its CODE section (at most
 * INGOT_TARGET_NAME_BYTES - 1 bytes) and what the runtime reads to decide
 * whether this CPU can run the code: its first word is the kind ("c",
 * "llvm"), then the instruction-set level ("x86-64-v3", "aarch64") or a named
 * CPU whose level both sides know from the same list ("-mcpu=znver3"), then
 * extra features ("-mattr=+avx512vnni"). runtime/cpu.c holds the runtime's
 * copy of the level, CPU and feature names; keep the two in step. */
#define _POSIX_C_SOURCE 200809L /* strtok_r */
#include <stdio.h>
#include <string.h>

#include "schedule/schedule.h"

typedef struct target_cpu_t {
  const char* name;
  uint32_t vector_bytes;
} target_cpu_t;

/* CPU levels accepted by -mcpu= for the C target (x86-64 micro-architecture
 * levels). "native" is refused: a bundle must not depend on the build host. */
static const target_cpu_t k_c_cpus[] = {
    {"x86-64", 16},
    {"x86-64-v2", 16},
    {"x86-64-v3", 32},
    {"x86-64-v4", 64},
};

/* ---- LLVM: levels, named CPUs and features. */
typedef enum target_arch_t { ARCH_X86_64 = 1, ARCH_AARCH64 = 2 } target_arch_t;

typedef struct llvm_level_t {
  const char* name;        /* the level as a short target name */
  target_arch_t arch;
  const char* llvm_cpu;    /* what LLVM is asked to generate for */
  uint32_t vector_bytes;
} llvm_level_t;

static const llvm_level_t k_llvm_levels[] = {
    {"x86-64", ARCH_X86_64, "x86-64", 16},
    {"x86-64-v2", ARCH_X86_64, "x86-64-v2", 16},
    {"x86-64-v3", ARCH_X86_64, "x86-64-v3", 32},
    {"x86-64-v4", ARCH_X86_64, "x86-64-v4", 64},
    {"aarch64", ARCH_AARCH64, "generic", 16},
};
#define LEVEL_COUNT (sizeof(k_llvm_levels) / sizeof(k_llvm_levels[0]))

/* Named CPUs: they tune the code (LLVM's "tune-cpu") for that machine while
 * the instructions stay those of the level (so that the runtime's check of
 * the level is exact). runtime/cpu.c has the same list. */
typedef struct named_cpu_t {
  const char* name;
  const char* level;
} named_cpu_t;

static const named_cpu_t k_named_cpus[] = {
    {"generic", "x86-64"},          {"haswell", "x86-64-v3"},      {"broadwell", "x86-64-v3"},
    {"skylake", "x86-64-v3"},       {"alderlake", "x86-64-v3"},    {"znver1", "x86-64-v3"},
    {"znver2", "x86-64-v3"},        {"znver3", "x86-64-v3"},       {"skylake-avx512", "x86-64-v4"},
    {"cascadelake", "x86-64-v4"},   {"cooperlake", "x86-64-v4"},   {"icelake-server", "x86-64-v4"},
    {"icelake-client", "x86-64-v4"}, {"tigerlake", "x86-64-v4"},   {"sapphirerapids", "x86-64-v4"},
    {"znver4", "x86-64-v4"},        {"cortex-a53", "aarch64"},     {"cortex-a55", "aarch64"},
    {"cortex-a72", "aarch64"},      {"cortex-a76", "aarch64"},     {"neoverse-n1", "aarch64"},
    {"neoverse-v1", "aarch64"},     {"neoverse-n2", "aarch64"},
};

/* Features -mattr may add (the runtime checks each one it is asked to run);
 * any of them may be removed with '-'. */
typedef struct llvm_feature_t {
  const char* name;
  target_arch_t arch;
} llvm_feature_t;

static const llvm_feature_t k_llvm_features[] = {
    {"sse4.1", ARCH_X86_64},     {"sse4.2", ARCH_X86_64},     {"popcnt", ARCH_X86_64},
    {"avx", ARCH_X86_64},        {"avx2", ARCH_X86_64},       {"fma", ARCH_X86_64},
    {"f16c", ARCH_X86_64},       {"bmi", ARCH_X86_64},        {"bmi2", ARCH_X86_64},
    {"lzcnt", ARCH_X86_64},      {"movbe", ARCH_X86_64},      {"avx512f", ARCH_X86_64},
    {"avx512bw", ARCH_X86_64},   {"avx512cd", ARCH_X86_64},   {"avx512dq", ARCH_X86_64},
    {"avx512vl", ARCH_X86_64},   {"avx512vnni", ARCH_X86_64}, {"avx512bf16", ARCH_X86_64},
    {"avx512vbmi", ARCH_X86_64}, {"avx512ifma", ARCH_X86_64}, {"neon", ARCH_AARCH64},
    {"dotprod", ARCH_AARCH64},   {"fullfp16", ARCH_AARCH64},  {"i8mm", ARCH_AARCH64},
    {"bf16", ARCH_AARCH64},
};

typedef struct target_kind_info_t {
  const char* name;                 /* first word of the target string */
  ingot_target_kind_t kind;
  bool supported;
} target_kind_info_t;

static const target_kind_info_t k_target_kinds[] = {
    {"c", INGOT_TARGET_C, true},
    {"llvm", INGOT_TARGET_LLVM, true},
    {"cuda", INGOT_TARGET_CUDA, false},
    {"rocm", INGOT_TARGET_ROCM, false},
};

#define TARGET_ACCEPTED                                                                        \
  "accepted: \"c\", \"c -mcpu=x86-64[-v2|-v3|-v4]\", \"llvm\" (this machine), the short names " \
  "\"x86-64\", \"x86-64-v2\", \"x86-64-v3\", \"x86-64-v4\", \"aarch64\", and \"llvm "             \
  "[-mtriple=x86_64-linux-gnu|aarch64-linux-gnu] [-mcpu=LEVEL|CPU] [-mattr=+f1,-f2]\""

static const char* host_triple(void) {
#if defined(__x86_64__)
  return "x86_64-linux-gnu";
#elif defined(__aarch64__)
  return "aarch64-linux-gnu";
#else
  return "unknown-linux-gnu";
#endif
}

static const llvm_level_t* find_level(const char* name) {
  for (size_t i = 0; i < LEVEL_COUNT; ++i)
    if (strcmp(k_llvm_levels[i].name, name) == 0) return &k_llvm_levels[i];
  return NULL;
}

const char* ingot_target_cpu_level(const char* cpu) {
  if (!cpu) return NULL;
  const llvm_level_t* level = find_level(cpu);
  if (level) return level->name;
  for (size_t i = 0; i < sizeof(k_named_cpus) / sizeof(k_named_cpus[0]); ++i)
    if (strcmp(k_named_cpus[i].name, cpu) == 0) return k_named_cpus[i].level;
  return NULL;
}

/* The instruction-set level of the machine running the compiler (plain
 * "llvm"): x86-64 levels from the CPU's features as the C library sees them
 * (which includes the OS's support for the wider registers). */
static const llvm_level_t* host_level(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  bool v2 = __builtin_cpu_supports("sse3") && __builtin_cpu_supports("ssse3") &&
            __builtin_cpu_supports("sse4.1") && __builtin_cpu_supports("sse4.2") &&
            __builtin_cpu_supports("popcnt");
  bool v3 = v2 && __builtin_cpu_supports("avx") && __builtin_cpu_supports("avx2") &&
            __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi") &&
            __builtin_cpu_supports("bmi2");
  bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
            __builtin_cpu_supports("avx512vl");
  return find_level(v4 ? "x86-64-v4" : v3 ? "x86-64-v3" : v2 ? "x86-64-v2" : "x86-64");
#elif defined(__aarch64__)
  return find_level("aarch64");
#else
  return NULL;
#endif
}

static bool triple_arch(const char* triple, target_arch_t* out) {
  const char* dash = strchr(triple, '-');
  size_t n = dash ? (size_t)(dash - triple) : strlen(triple);
  if (n == 6 && strncmp(triple, "x86_64", 6) == 0) *out = ARCH_X86_64;
  else if ((n == 7 && strncmp(triple, "aarch64", 7) == 0) || (n == 5 && strncmp(triple, "arm64", 5) == 0))
    *out = ARCH_AARCH64;
  else return false;
  /* An ELF system: Linux, or bare metal. */
  return !dash || strstr(dash, "linux") || strstr(dash, "none") || strstr(dash, "elf");
}

static const char* arch_name(target_arch_t arch) { return arch == ARCH_X86_64 ? "x86_64" : "aarch64"; }

/* Checks a -mattr list ("+a,-b") against the table, for `arch`. */
static ingot_status_t check_features(const char* text, const char* list, target_arch_t arch) {
  if (!*list) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': empty -mattr", text);
  char copy[160];
  if (strlen(list) >= sizeof(copy))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': -mattr too long", text);
  strcpy(copy, list);
  char* save = NULL;
  for (char* f = strtok_r(copy, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
    if (f[0] != '+' && f[0] != '-')
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                        "target '%s': -mattr feature '%s' must start with '+' or '-'", text, f);
    bool known = false;
    for (size_t i = 0; i < sizeof(k_llvm_features) / sizeof(k_llvm_features[0]); ++i)
      if (strcmp(k_llvm_features[i].name, f + 1) == 0 && k_llvm_features[i].arch == arch) known = true;
    if (!known) {
      ingot_strbuf_t sb = {0};
      for (size_t i = 0; i < sizeof(k_llvm_features) / sizeof(k_llvm_features[0]); ++i)
        if (k_llvm_features[i].arch == arch) ingot_strbuf_appendf(&sb, " %s", k_llvm_features[i].name);
      ingot_status_t st = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                                     "target '%s': unknown %s feature '%s' (known:%s)", text, arch_name(arch),
                                     f + 1, sb.data ? sb.data : "");
      ingot_strbuf_free(&sb);
      return st;
    }
  }
  return INGOT_OK;
}

static void fill_common(ingot_target_t* t, ingot_target_kind_t kind) {
  t->kind = kind;
  t->l1_bytes = 32u * 1024u;
  t->l2_bytes = 1024u * 1024u;
  t->max_threads = 0;
}

static ingot_status_t parse_c(const char* text, char** words, int count, ingot_target_t* out) {
  const target_cpu_t* cpu = NULL;
  for (int w = 1; w < count; ++w) {
    if (strncmp(words[w], "-mcpu=", 6) != 0)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': unknown option '%s'; " TARGET_ACCEPTED, text,
                        words[w]);
    if (cpu) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': -mcpu given twice", text);
    const char* name = words[w] + 6;
    if (strcmp(name, "native") == 0)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                        "target '%s': -mcpu=native is refused (a bundle must not depend on the build "
                        "machine); name a level instead; " TARGET_ACCEPTED, text);
    for (size_t i = 0; i < sizeof(k_c_cpus) / sizeof(k_c_cpus[0]); ++i)
      if (strcmp(name, k_c_cpus[i].name) == 0) cpu = &k_c_cpus[i];
    if (!cpu)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': unknown cpu '%s'; " TARGET_ACCEPTED, text, name);
  }
  fill_common(out, INGOT_TARGET_C);
  snprintf(out->triple, sizeof(out->triple), "%s", host_triple());
  out->vector_bytes = cpu ? cpu->vector_bytes : 16;
  if (cpu) {
    snprintf(out->cpu, sizeof(out->cpu), "%s", cpu->name);
    snprintf(out->name, sizeof(out->name), "c -mcpu=%s", cpu->name);
  } else {
    snprintf(out->name, sizeof(out->name), "c");
  }
  return INGOT_OK;
}

/* words[first..count) are the options after "llvm" (or a lone short name). */
static ingot_status_t parse_llvm(const char* text, char** words, int first, int count, ingot_target_t* out) {
  const llvm_level_t* level = NULL;   /* from a short name or -mcpu */
  const char* tune = NULL;
  const char* triple = NULL;
  const char* mattr = NULL;
  for (int w = first; w < count; ++w) {
    const char* word = words[w];
    if (strncmp(word, "-mtriple=", 9) == 0) {
      if (triple) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': -mtriple given twice", text);
      triple = word + 9;
    } else if (strncmp(word, "-mcpu=", 6) == 0) {
      const char* name = word + 6;
      if (tune || (level && w != first))
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': the cpu is given twice", text);
      if (strcmp(name, "native") == 0)
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                          "target '%s': -mcpu=native is refused (a bundle must not depend on the build "
                          "machine); name a level or a CPU instead; " TARGET_ACCEPTED, text);
      const char* level_name = ingot_target_cpu_level(name);
      if (!level_name) {
        ingot_strbuf_t sb = {0};
        for (size_t i = 0; i < LEVEL_COUNT; ++i) ingot_strbuf_appendf(&sb, " %s", k_llvm_levels[i].name);
        for (size_t i = 0; i < sizeof(k_named_cpus) / sizeof(k_named_cpus[0]); ++i)
          ingot_strbuf_appendf(&sb, " %s", k_named_cpus[i].name);
        ingot_status_t st = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': unknown cpu '%s' (known:%s)",
                                       text, name, sb.data);
        ingot_strbuf_free(&sb);
        return st;
      }
      if (level && strcmp(level->name, level_name) != 0)
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': cpu '%s' is not of level '%s'", text, name,
                          level->name);
      level = find_level(level_name);
      if (!find_level(name)) tune = name;
    } else if (strncmp(word, "-mattr=", 7) == 0) {
      if (mattr) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': -mattr given twice", text);
      mattr = word + 7;
    } else if (w == first && find_level(word)) {
      level = find_level(word);
    } else {
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': unknown option '%s'; " TARGET_ACCEPTED, text,
                        word);
    }
  }
  target_arch_t arch;
  if (triple) {
    if (!triple_arch(triple, &arch))
      return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                        "target '%s': triple '%s' is not supported (x86_64 or aarch64, Linux or bare-metal "
                        "ELF)", text, triple);
    if (level && level->arch != arch)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': cpu level '%s' is not for %s", text, level->name,
                        triple);
    if (!level) level = find_level(arch == ARCH_X86_64 ? "x86-64" : "aarch64");
  } else if (!level) {
    level = host_level();
    if (!level)
      return ingot_fail(INGOT_ERROR_UNSUPPORTED, "target '%s': this machine is neither x86-64 nor AArch64; name "
                        "a target", text);
  }
  arch = level->arch;
  if (mattr) {
    ingot_status_t st = check_features(text, mattr, arch);
    if (st != INGOT_OK) return st;
  }

  fill_common(out, INGOT_TARGET_LLVM);
  snprintf(out->triple, sizeof(out->triple), "%s", arch == ARCH_X86_64 ? "x86_64-linux-gnu" : "aarch64-linux-gnu");
  snprintf(out->cpu, sizeof(out->cpu), "%s", level->llvm_cpu);
  out->vector_bytes = level->vector_bytes;
  if (tune) snprintf(out->tune, sizeof(out->tune), "%s", tune);
  if (mattr) snprintf(out->features, sizeof(out->features), "%s", mattr);

  char name[256];
  int n = tune ? snprintf(name, sizeof(name), "llvm -mcpu=%s", tune)
               : snprintf(name, sizeof(name), "llvm %s", level->name);
  if (mattr) n += snprintf(name + n, sizeof(name) - (size_t)n, " -mattr=%s", mattr);
  if ((size_t)n >= sizeof(out->name))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                      "target '%s': its canonical form '%s' is %d bytes; a bundle stores at most %u (drop "
                      "some -mattr features or the named -mcpu)", text, name, n, INGOT_TARGET_NAME_BYTES - 1);
  memcpy(out->name, name, (size_t)n + 1);
  return INGOT_OK;
}

ingot_status_t ingot_target_parse(const char* text, ingot_target_t* out_target) {
  if (!out_target) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_target_parse: no output");
  memset(out_target, 0, sizeof(*out_target));
  if (!text) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "no target given; " TARGET_ACCEPTED);

  /* Split into at most 8 words. */
  char copy[256];
  if (strlen(text) >= sizeof(copy))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target string too long; " TARGET_ACCEPTED);
  strcpy(copy, text);
  char* words[8];
  int count = 0;
  char* save = NULL;
  for (char* w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
    if (count == 8) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': too many options; " TARGET_ACCEPTED, text);
    words[count++] = w;
  }
  if (count == 0) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "empty target string; " TARGET_ACCEPTED);

  /* A lone short name ("x86-64-v3", "aarch64") means llvm. */
  if (find_level(words[0])) return parse_llvm(text, words, 0, count, out_target);

  const target_kind_info_t* info = NULL;
  for (size_t i = 0; i < sizeof(k_target_kinds) / sizeof(k_target_kinds[0]); ++i)
    if (strcmp(words[0], k_target_kinds[i].name) == 0) info = &k_target_kinds[i];
  if (!info) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "unknown target '%s'; " TARGET_ACCEPTED, text);
  if (!info->supported)
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "target '%s': the %s target is not implemented yet; " TARGET_ACCEPTED,
                      text, info->name);
  if (info->kind == INGOT_TARGET_C) return parse_c(text, words, count, out_target);
  return parse_llvm(text, words, 1, count, out_target);
}
