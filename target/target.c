/* Target strings -> target descriptions, from the one table of this folder
 * (target_arches.def, target_levels.def, target_cpus.def,
 * target_features.def, target_gpus.def; runtime/cpu.c includes the same
 * CPU rows).
 *
 * The canonical string is what a bundle stores in its CODE section (at most
 * INGOT_TARGET_NAME_BYTES - 1 bytes) and what the runtime reads to decide
 * whether this CPU can run the code: its first word is the kind ("c",
 * "llvm"), then the instruction-set level ("x86-64-v3", "aarch64") or a named
 * CPU whose level both sides read from the same table ("-mcpu=znver3"), then
 * extra features ("-mattr=+avx512vnni"). Everything else in ingot_target_t
 * (vector width and registers, FMA, masked loads, caches, feature bits) is
 * filled here from the rows, once. */
#define _POSIX_C_SOURCE 200809L /* strtok_r */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

#include "target/target.h"

/* ---- The rows. */
typedef struct arch_row_t {
  const char* display;
  const char* triple_arch;  /* first word of a triple */
  const char* triple;       /* stored in ingot_target_t::triple */
} arch_row_t;

static const arch_row_t k_arches[INGOT_TARGET_ARCH_COUNT_] = {
    [INGOT_TARGET_ARCH_NONE] = {"an unknown architecture", "unknown", "unknown-linux-gnu"},
#define INGOT_TARGET_ARCH(id, display, triple_arch, triple) [INGOT_TARGET_ARCH_##id] = {display, triple_arch, triple},
#include "target/target_arches.def"
#undef INGOT_TARGET_ARCH
};

#define INGOT_TF(id) ((uint64_t)1 << INGOT_TARGET_FEATURE_##id)

typedef struct level_row_t {
  const char* name;
  ingot_target_arch_t arch;
  uint32_t rank;
  const char* llvm_cpu;
  bool c_mcpu;
  uint32_t vector_bytes, vector_registers;
  bool fma;
  uint32_t masked_load; /* narrowest element (bytes) with cheap masked loads; 0: none */
  uint32_t l1_kib, l2_kib, l3_kib;
  uint64_t adds;
} level_row_t;

/* Row NONE: the facts of "c" on a host that has no level row (plain SIMD of
 * 16 bytes, 16 registers, no FMA assumed). */
static const level_row_t k_levels[INGOT_TARGET_LEVEL_COUNT_] = {
    [INGOT_TARGET_LEVEL_NONE] = {"", INGOT_TARGET_ARCH_NONE, 0, "", false, 16, 16, false, 0, 32, 256, 0, 0},
#define INGOT_TARGET_LEVEL(id, name, arch, rank, llvm_cpu, c_mcpu, vbytes, vregs, fma, masked, l1, l2, l3, adds) \
  [INGOT_TARGET_LEVEL_##id] = {name, INGOT_TARGET_ARCH_##arch, rank, llvm_cpu, c_mcpu, vbytes, vregs, fma, masked,  \
                               l1, l2, l3, adds},
#include "target/target_levels.def"
#undef INGOT_TARGET_LEVEL
};

typedef struct feature_row_t {
  const char* name;
  ingot_target_arch_t arch;
} feature_row_t;

static const feature_row_t k_features[INGOT_TARGET_FEATURE_COUNT_] = {
#define INGOT_TARGET_FEATURE(id, name, arch, detect) [INGOT_TARGET_FEATURE_##id] = {name, INGOT_TARGET_ARCH_##arch},
#include "target/target_features.def"
#undef INGOT_TARGET_FEATURE
};

typedef struct cpu_row_t {
  const char* name;
  ingot_target_level_t level;
  uint32_t l1_kib, l2_kib, l3_kib;
  uint64_t adds; /* features beyond its level */
} cpu_row_t;

static const cpu_row_t k_cpus[] = {
#define INGOT_TARGET_CPU(name, level, l1, l2, l3, adds) {name, INGOT_TARGET_LEVEL_##level, l1, l2, l3, adds},
#include "target/target_cpus.def"
#undef INGOT_TARGET_CPU
};
#define CPU_COUNT (sizeof(k_cpus) / sizeof(k_cpus[0]))

typedef struct gpu_row_t {
  ingot_target_kind_t kind;
  const char* arch;
  uint32_t number, warp, shared, threads, units, lanes, fp32_gflops, mem_gbps;
  bool mma;
  const char* reference;
} gpu_row_t;

static const gpu_row_t k_gpus[INGOT_TARGET_GPU_COUNT_] = {
    [INGOT_TARGET_GPU_NONE] = {0, "", 0, 0, 0, 0, 0, 0, 0, 0, false, ""},
#define INGOT_TARGET_GPU(id, kind, arch, number, warp, shared, threads, units, lanes, gflops, gbps, mma, ref) \
  [INGOT_TARGET_GPU_##id] = {INGOT_TARGET_##kind, arch, number, warp, shared, threads, units, lanes, gflops, gbps, \
                             mma != 0, ref},
#include "target/target_gpus.def"
#undef INGOT_TARGET_GPU
};

typedef struct target_kind_info_t {
  const char* name;                 /* first word of the target string */
  ingot_target_kind_t kind;
  bool supported;
} target_kind_info_t;

static const target_kind_info_t k_target_kinds[] = {
    {"c", INGOT_TARGET_C, true},
    {"llvm", INGOT_TARGET_LLVM, true},
    {"cuda", INGOT_TARGET_CUDA, true},
    {"rocm", INGOT_TARGET_ROCM, true},
};

/* ---- Lookups. */
const char* ingot_target_feature_name(ingot_target_feature_t feature) {
  return (unsigned)feature < INGOT_TARGET_FEATURE_COUNT_ ? k_features[feature].name : NULL;
}

const char* ingot_target_level_name(ingot_target_level_t level) {
  return level > INGOT_TARGET_LEVEL_NONE && level < INGOT_TARGET_LEVEL_COUNT_ ? k_levels[level].name : NULL;
}

const char* ingot_target_arch_name(ingot_target_arch_t arch) {
  return arch > INGOT_TARGET_ARCH_NONE && arch < INGOT_TARGET_ARCH_COUNT_ ? k_arches[arch].triple_arch : NULL;
}

const char* ingot_target_gpu_name(ingot_target_gpu_id_t gpu) {
  return gpu > INGOT_TARGET_GPU_NONE && gpu < INGOT_TARGET_GPU_COUNT_ ? k_gpus[gpu].arch : NULL;
}

bool ingot_target_has_feature(const ingot_target_t* target, ingot_target_feature_t feature) {
  return target && (unsigned)feature < INGOT_TARGET_FEATURE_COUNT_ && (target->feature_bits >> feature) & 1u;
}

bool ingot_target_has_half_arith(const ingot_target_t* target) {
  if (!target || target->kind != INGOT_TARGET_LLVM) return false;
  if (target->arch == INGOT_TARGET_ARCH_AARCH64) return ingot_target_has_feature(target, INGOT_TARGET_FEATURE_FULLFP16);
  return target->arch == INGOT_TARGET_ARCH_X86_64 && ingot_target_has_feature(target, INGOT_TARGET_FEATURE_AVX512FP16) &&
         ingot_target_has_feature(target, INGOT_TARGET_FEATURE_AVX512VL);
}

static ingot_target_level_t find_level(const char* name) {
  for (int i = INGOT_TARGET_LEVEL_NONE + 1; i < INGOT_TARGET_LEVEL_COUNT_; ++i)
    if (strcmp(k_levels[i].name, name) == 0) return (ingot_target_level_t)i;
  return INGOT_TARGET_LEVEL_NONE;
}

static const cpu_row_t* find_cpu(const char* name) {
  for (size_t i = 0; i < CPU_COUNT; ++i)
    if (strcmp(k_cpus[i].name, name) == 0) return &k_cpus[i];
  return NULL;
}

static ingot_target_level_t arch_baseline(ingot_target_arch_t arch) {
  for (int i = INGOT_TARGET_LEVEL_NONE + 1; i < INGOT_TARGET_LEVEL_COUNT_; ++i)
    if (k_levels[i].arch == arch && k_levels[i].rank == 0) return (ingot_target_level_t)i;
  return INGOT_TARGET_LEVEL_NONE;
}

ingot_target_level_t ingot_target_level_baseline(ingot_target_level_t level) {
  if (level <= INGOT_TARGET_LEVEL_NONE || level >= INGOT_TARGET_LEVEL_COUNT_) return INGOT_TARGET_LEVEL_NONE;
  return arch_baseline(k_levels[level].arch);
}

/* Every feature a level requires: its own and those of the lower ranks. */
static uint64_t level_features(ingot_target_level_t level) {
  uint64_t bits = 0;
  for (int i = INGOT_TARGET_LEVEL_NONE + 1; i < INGOT_TARGET_LEVEL_COUNT_; ++i)
    if (k_levels[i].arch == k_levels[level].arch && k_levels[i].rank <= k_levels[level].rank) bits |= k_levels[i].adds;
  return bits;
}

const char* ingot_target_cpu_level(const char* cpu) {
  if (!cpu) return NULL;
  ingot_target_level_t level = find_level(cpu);
  if (level != INGOT_TARGET_LEVEL_NONE) return k_levels[level].name;
  const cpu_row_t* row = find_cpu(cpu);
  return row ? k_levels[row->level].name : NULL;
}

/* ", \"cuda [-arch=sm_80|sm_90]\"" for the GPU rows of `kind`. */
static void append_gpu_forms(ingot_strbuf_t* sb, ingot_target_kind_t kind, const char* word, const char* option,
                             bool last) {
  ingot_strbuf_appendf(sb, ",%s \"%s [%s=", last ? " and" : "", word, option);
  bool first = true;
  for (int g = INGOT_TARGET_GPU_NONE + 1; g < INGOT_TARGET_GPU_COUNT_; ++g)
    if (k_gpus[g].kind == kind) {
      ingot_strbuf_appendf(sb, "%s%s", first ? "" : "|", k_gpus[g].arch);
      first = false;
    }
  ingot_strbuf_append(sb, "]\"");
}

/* "accepted: ..." for error messages, from the rows. */
static void append_accepted(ingot_strbuf_t* sb) {
  ingot_strbuf_append(sb, "accepted: \"c\", \"c -mcpu=LEVEL\" (LEVEL:");
  for (int i = INGOT_TARGET_LEVEL_NONE + 1; i < INGOT_TARGET_LEVEL_COUNT_; ++i)
    if (k_levels[i].c_mcpu) ingot_strbuf_appendf(sb, " %s", k_levels[i].name);
  ingot_strbuf_append(sb, "), \"llvm\" (this machine), the short names");
  for (int i = INGOT_TARGET_LEVEL_NONE + 1; i < INGOT_TARGET_LEVEL_COUNT_; ++i)
    ingot_strbuf_appendf(sb, "%s \"%s\"", i == INGOT_TARGET_LEVEL_NONE + 1 ? "" : ",", k_levels[i].name);
  ingot_strbuf_append(sb, ", \"llvm [-mtriple=");
  bool first = true;
  for (int a = INGOT_TARGET_ARCH_NONE + 1; a < INGOT_TARGET_ARCH_COUNT_; ++a)
    if (arch_baseline((ingot_target_arch_t)a) != INGOT_TARGET_LEVEL_NONE) {
      ingot_strbuf_appendf(sb, "%s%s", first ? "" : "|", k_arches[a].triple);
      first = false;
    }
  ingot_strbuf_append(sb, "] [-mcpu=LEVEL|CPU] [-mattr=+f1,-f2]\"");
  append_gpu_forms(sb, INGOT_TARGET_CUDA, "cuda", "-arch", false);
  append_gpu_forms(sb, INGOT_TARGET_ROCM, "rocm", "-mcpu", true);
}

/* Fails with `code` and the message, followed by what is accepted. */
INGOT_PRINTF(2, 3) static ingot_status_t refuse(ingot_status_t code, const char* fmt, ...) {
  ingot_strbuf_t sb = {0};
  va_list args;
  va_start(args, fmt);
  ingot_strbuf_vappendf(&sb, fmt, args);
  va_end(args);
  ingot_strbuf_append(&sb, "; ");
  append_accepted(&sb);
  ingot_status_t st = ingot_fail(code, "%s", sb.data);
  ingot_strbuf_free(&sb);
  return st;
}

/* ---- The build host (plain "c" and "llvm"). */
static ingot_target_arch_t host_arch(void) {
#if defined(__x86_64__)
  return INGOT_TARGET_ARCH_X86_64;
#elif defined(__aarch64__)
  return INGOT_TARGET_ARCH_AARCH64;
#else
  return INGOT_TARGET_ARCH_NONE;
#endif
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The host's x86 features by the table's CPUID rows, with the OS's support
 * for the wider register state (XGETBV), as the runtime reads them. */
enum { REG_EAX, REG_EBX, REG_ECX, REG_EDX };
enum { STATE_NONE, STATE_AVX, STATE_AVX512 };
typedef struct cpuid_row_t {
  bool cpuid;
  uint32_t leaf, subleaf;
  uint8_t reg, bit, state;
} cpuid_row_t;

static uint64_t host_x86_features(void) {
  static const cpuid_row_t rows[INGOT_TARGET_FEATURE_COUNT_] = {
#define INGOT_CPUID(leaf, subleaf, reg, bit, state) {true, leaf, subleaf, REG_##reg, bit, STATE_##state}
#define INGOT_HWCAP(word, bit) {false, 0, 0, 0, 0, 0}
#define INGOT_TARGET_FEATURE(id, name, arch, detect) [INGOT_TARGET_FEATURE_##id] = detect,
#include "target/target_features.def"
#undef INGOT_TARGET_FEATURE
#undef INGOT_HWCAP
#undef INGOT_CPUID
  };
  unsigned r[4] = {0};
  unsigned max_basic = __get_cpuid_max(0, NULL), max_ext = __get_cpuid_max(0x80000000u, NULL);
  if (max_basic < 1 || !__get_cpuid(1, &r[0], &r[1], &r[2], &r[3])) return 0;
  bool avx_cpu = (r[2] & (1u << 28)) != 0, osxsave = (r[2] & (1u << 27)) != 0;
  uint64_t xcr0 = 0;
  if (osxsave) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = ((uint64_t)hi << 32) | lo;
  }
  bool avx = avx_cpu && (xcr0 & 0x6) == 0x6;
  bool avx512 = avx && (xcr0 & 0xe0) == 0xe0;
  uint64_t bits = 0;
  for (int f = 0; f < INGOT_TARGET_FEATURE_COUNT_; ++f) {
    const cpuid_row_t* row = &rows[f];
    if (!row->cpuid) continue;
    unsigned max = row->leaf >= 0x80000000u ? max_ext : max_basic;
    if (row->leaf > max || !__get_cpuid_count(row->leaf, row->subleaf, &r[0], &r[1], &r[2], &r[3])) continue;
    if (!(r[row->reg] & (1u << row->bit))) continue;
    if ((row->state == STATE_AVX && !avx) || (row->state == STATE_AVX512 && !avx512)) continue;
    bits |= (uint64_t)1 << f;
  }
  return bits;
}
#endif

/* The instruction-set level of the machine running the compiler (plain
 * "llvm"): the highest level of its architecture whose features it has. */
bool ingot_target_host_has_feature(ingot_target_feature_t feature) {
  if (feature < 0 || feature >= INGOT_TARGET_FEATURE_COUNT_ || host_arch() != INGOT_TARGET_ARCH_X86_64) return false;
  return (host_x86_features() >> feature) & 1;
}

static ingot_target_level_t host_level(void) {
  ingot_target_arch_t arch = host_arch();
  ingot_target_level_t best = arch_baseline(arch);
#if defined(__x86_64__) && defined(__GNUC__)
  uint64_t have = host_x86_features();
  for (int i = INGOT_TARGET_LEVEL_NONE + 1; i < INGOT_TARGET_LEVEL_COUNT_; ++i) {
    uint64_t need = level_features((ingot_target_level_t)i);
    if (k_levels[i].arch == arch && (have & need) == need && k_levels[i].rank > k_levels[best].rank)
      best = (ingot_target_level_t)i;
  }
#endif
  return best;
}

/* The host's data cache of `level` (1, 2, 3) in bytes from Linux's sysfs,
 * 0 when unknown. */
static uint32_t host_cache_bytes(unsigned level) {
  for (unsigned index = 0; index < 16; ++index) {
    char path[96], text[32];
    unsigned got_level = 0;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%u/level", index);
    FILE* f = fopen(path, "r");
    if (!f) break;
    bool ok = fscanf(f, "%u", &got_level) == 1;
    fclose(f);
    if (!ok || got_level != level) continue;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%u/type", index);
    if (!(f = fopen(path, "r"))) continue;
    ok = fscanf(f, "%31s", text) == 1;
    fclose(f);
    if (!ok || strcmp(text, "Instruction") == 0) continue;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%u/size", index);
    if (!(f = fopen(path, "r"))) continue;
    unsigned long size = 0;
    char unit = 0;
    int n = fscanf(f, "%lu%c", &size, &unit);
    fclose(f);
    if (n < 1) continue;
    if (n == 2 && unit == 'K') size *= 1024ul;
    else if (n == 2 && unit == 'M') size *= 1024ul * 1024ul;
    if (size > 0 && size <= UINT32_MAX) return (uint32_t)size;
  }
  return 0;
}

/* ---- Filling a description. */
static void fill_level(ingot_target_t* t, ingot_target_kind_t kind, ingot_target_level_t level) {
  const level_row_t* row = &k_levels[level];
  t->kind = kind;
  t->arch = row->arch;
  t->level = level;
  snprintf(t->triple, sizeof(t->triple), "%s", k_arches[row->arch].triple);
  t->vector_bytes = row->vector_bytes;
  t->vector_registers = row->vector_registers;
  t->has_fma = row->fma;
  t->has_masked_load = row->masked_load != 0;
  t->masked_load_min_bytes = row->masked_load;
  t->feature_bits = level_features(level);
  t->l1_bytes = row->l1_kib * 1024u;
  t->l2_bytes = row->l2_kib * 1024u;
  t->l3_bytes = row->l3_kib * 1024u;
  t->max_threads = 0;
}

/* Checks a -mattr list ("+a,-b") against the table for `arch`; adds and
 * removes the feature bits. */
static ingot_status_t apply_features(const char* text, const char* list, ingot_target_t* t) {
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
    int known = -1;
    for (int i = 0; i < INGOT_TARGET_FEATURE_COUNT_; ++i)
      if (strcmp(k_features[i].name, f + 1) == 0 && k_features[i].arch == t->arch) known = i;
    if (known < 0) {
      ingot_strbuf_t sb = {0};
      for (int i = 0; i < INGOT_TARGET_FEATURE_COUNT_; ++i)
        if (k_features[i].arch == t->arch) ingot_strbuf_appendf(&sb, " %s", k_features[i].name);
      ingot_status_t st = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                                     "target '%s': unknown %s feature '%s' (known:%s)", text,
                                     k_arches[t->arch].triple_arch, f + 1, sb.data ? sb.data : "");
      ingot_strbuf_free(&sb);
      return st;
    }
    uint64_t bit = (uint64_t)1 << known;
    if (f[0] == '+') t->feature_bits |= bit;
    else t->feature_bits &= ~bit;
    /* FMA is a level fact on AArch64 (no feature row); on x86-64 it follows
     * the fma feature. */
    if (known == INGOT_TARGET_FEATURE_FMA) t->has_fma = f[0] == '+';
  }
  return INGOT_OK;
}

static ingot_status_t parse_c(const char* text, char** words, int count, ingot_target_t* out) {
  ingot_target_level_t level = INGOT_TARGET_LEVEL_NONE;
  for (int w = 1; w < count; ++w) {
    if (strncmp(words[w], "-mcpu=", 6) != 0)
      return refuse(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': unknown option '%s'", text, words[w]);
    if (level != INGOT_TARGET_LEVEL_NONE)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': -mcpu given twice", text);
    const char* name = words[w] + 6;
    if (strcmp(name, "native") == 0)
      return refuse(INGOT_ERROR_INVALID_ARGUMENT,
                    "target '%s': -mcpu=native is refused (a bundle must not depend on the build machine); name "
                    "a level instead", text);
    level = find_level(name);
    if (level == INGOT_TARGET_LEVEL_NONE || !k_levels[level].c_mcpu)
      return refuse(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': unknown cpu '%s'", text, name);
  }
  if (level != INGOT_TARGET_LEVEL_NONE) {
    fill_level(out, INGOT_TARGET_C, level);
    snprintf(out->cpu, sizeof(out->cpu), "%s", k_levels[level].name);
    snprintf(out->name, sizeof(out->name), "c -mcpu=%s", k_levels[level].name);
  } else {
    /* Generic C for the host: its architecture's baseline facts. */
    fill_level(out, INGOT_TARGET_C, arch_baseline(host_arch()));
    snprintf(out->name, sizeof(out->name), "c");
  }
  return INGOT_OK;
}

static bool triple_arch(const char* triple, ingot_target_arch_t* out) {
  const char* dash = strchr(triple, '-');
  size_t n = dash ? (size_t)(dash - triple) : strlen(triple);
  *out = INGOT_TARGET_ARCH_NONE;
  for (int a = INGOT_TARGET_ARCH_NONE + 1; a < INGOT_TARGET_ARCH_COUNT_; ++a)
    if (strlen(k_arches[a].triple_arch) == n && strncmp(triple, k_arches[a].triple_arch, n) == 0)
      *out = (ingot_target_arch_t)a;
  if (n == 5 && strncmp(triple, "arm64", 5) == 0) *out = INGOT_TARGET_ARCH_AARCH64; /* Apple's spelling */
  /* A CPU architecture with levels, on an ELF system: Linux, or bare metal. */
  if (arch_baseline(*out) == INGOT_TARGET_LEVEL_NONE) return false;
  return !dash || strstr(dash, "linux") || strstr(dash, "none") || strstr(dash, "elf");
}

/* words[first..count) are the options after "llvm" (or a lone short name). */
static ingot_status_t parse_llvm(const char* text, char** words, int first, int count, ingot_target_t* out) {
  ingot_target_level_t level = INGOT_TARGET_LEVEL_NONE; /* from a short name or -mcpu */
  const cpu_row_t* tune = NULL;
  const char* triple = NULL;
  const char* mattr = NULL;
  for (int w = first; w < count; ++w) {
    const char* word = words[w];
    if (strncmp(word, "-mtriple=", 9) == 0) {
      if (triple) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': -mtriple given twice", text);
      triple = word + 9;
    } else if (strncmp(word, "-mcpu=", 6) == 0) {
      const char* name = word + 6;
      if (tune || (level != INGOT_TARGET_LEVEL_NONE && w != first))
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': the cpu is given twice", text);
      if (strcmp(name, "native") == 0)
        return refuse(INGOT_ERROR_INVALID_ARGUMENT,
                      "target '%s': -mcpu=native is refused (a bundle must not depend on the build machine); "
                      "name a level or a CPU instead", text);
      ingot_target_level_t named = find_level(name);
      const cpu_row_t* cpu = named == INGOT_TARGET_LEVEL_NONE ? find_cpu(name) : NULL;
      if (cpu) named = cpu->level;
      if (named == INGOT_TARGET_LEVEL_NONE) {
        ingot_strbuf_t sb = {0};
        for (int i = INGOT_TARGET_LEVEL_NONE + 1; i < INGOT_TARGET_LEVEL_COUNT_; ++i)
          ingot_strbuf_appendf(&sb, " %s", k_levels[i].name);
        for (size_t i = 0; i < CPU_COUNT; ++i) ingot_strbuf_appendf(&sb, " %s", k_cpus[i].name);
        ingot_status_t st = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': unknown cpu '%s' (known:%s)",
                                       text, name, sb.data);
        ingot_strbuf_free(&sb);
        return st;
      }
      if (level != INGOT_TARGET_LEVEL_NONE && level != named)
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': cpu '%s' is not of level '%s'", text, name,
                          k_levels[level].name);
      level = named;
      tune = cpu;
    } else if (strncmp(word, "-mattr=", 7) == 0) {
      if (mattr) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': -mattr given twice", text);
      mattr = word + 7;
    } else if (w == first && find_level(word) != INGOT_TARGET_LEVEL_NONE) {
      level = find_level(word);
    } else {
      return refuse(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': unknown option '%s'", text, word);
    }
  }
  bool host = false;
  if (triple) {
    ingot_target_arch_t arch;
    if (!triple_arch(triple, &arch))
      return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                        "target '%s': triple '%s' is not supported (x86_64 or aarch64, Linux or bare-metal "
                        "ELF)", text, triple);
    if (level != INGOT_TARGET_LEVEL_NONE && k_levels[level].arch != arch)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': cpu level '%s' is not for %s", text,
                        k_levels[level].name, triple);
    if (level == INGOT_TARGET_LEVEL_NONE) level = arch_baseline(arch);
  } else if (level == INGOT_TARGET_LEVEL_NONE) {
    level = host_level();
    host = true;
    if (level == INGOT_TARGET_LEVEL_NONE)
      return ingot_fail(INGOT_ERROR_UNSUPPORTED, "target '%s': this machine is neither x86-64 nor AArch64; name "
                        "a target", text);
  }

  fill_level(out, INGOT_TARGET_LLVM, level);
  snprintf(out->cpu, sizeof(out->cpu), "%s", k_levels[level].llvm_cpu);
  if (tune) {
    snprintf(out->tune, sizeof(out->tune), "%s", tune->name);
    if (tune->l1_kib) out->l1_bytes = tune->l1_kib * 1024u;
    if (tune->l2_kib) out->l2_bytes = tune->l2_kib * 1024u;
    if (tune->l3_kib) out->l3_bytes = tune->l3_kib * 1024u;
    /* The CPU's features beyond its level, for LLVM as '+' attributes
     * before -mattr's own. */
    out->feature_bits |= tune->adds;
    size_t n = 0;
    for (int f = 0; f < INGOT_TARGET_FEATURE_COUNT_; ++f)
      if (tune->adds & ((uint64_t)1 << f))
        n += (size_t)snprintf(out->features + n, sizeof(out->features) - n, "%s+%s", n ? "," : "", k_features[f].name);
  }
  if (host) {
    /* The build host's own caches, where Linux says. */
    uint32_t* sizes[3] = {&out->l1_bytes, &out->l2_bytes, &out->l3_bytes};
    for (unsigned i = 0; i < 3; ++i) {
      uint32_t bytes = host_cache_bytes(i + 1);
      if (bytes) *sizes[i] = bytes;
    }
  }
  if (mattr) {
    ingot_status_t st = apply_features(text, mattr, out);
    if (st != INGOT_OK) return st;
    size_t n = strlen(out->features);
    snprintf(out->features + n, sizeof(out->features) - n, "%s%s", n ? "," : "", mattr);
  }

  char name[256];
  int n = tune ? snprintf(name, sizeof(name), "llvm -mcpu=%s", tune->name)
               : snprintf(name, sizeof(name), "llvm %s", k_levels[level].name);
  if (mattr) n += snprintf(name + n, sizeof(name) - (size_t)n, " -mattr=%s", mattr);
  if ((size_t)n >= sizeof(out->name))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                      "target '%s': its canonical form '%s' is %d bytes; a bundle stores at most %u (drop "
                      "some -mattr features or the named -mcpu)", text, name, n, INGOT_TARGET_NAME_BYTES - 1);
  memcpy(out->name, name, (size_t)n + 1);
  return INGOT_OK;
}

/* "cuda [-arch=sm_XX]", "rocm [-mcpu=gfxNNN]": words[1..count) are the
 * options after the kind. */
static ingot_status_t parse_gpu(const char* text, ingot_target_kind_t kind, char** words, int count,
                                ingot_target_t* out) {
  const char* option = kind == INGOT_TARGET_CUDA ? "-arch=" : "-mcpu=";
  const char* kind_name = kind == INGOT_TARGET_CUDA ? "cuda" : "rocm";
  const char* what = kind == INGOT_TARGET_CUDA ? "CUDA architecture" : "AMD GPU";
  const size_t option_len = strlen(option);
  ingot_target_gpu_id_t gpu = INGOT_TARGET_GPU_NONE;
  for (int w = 1; w < count; ++w) {
    if (strncmp(words[w], option, option_len) != 0)
      return refuse(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': unknown option '%s' for %s", text, words[w],
                    kind_name);
    if (gpu != INGOT_TARGET_GPU_NONE)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': %s given twice", text, option);
    const char* name = words[w] + option_len;
    for (int g = INGOT_TARGET_GPU_NONE + 1; g < INGOT_TARGET_GPU_COUNT_; ++g)
      if (k_gpus[g].kind == kind && strcmp(k_gpus[g].arch, name) == 0) gpu = (ingot_target_gpu_id_t)g;
    if (gpu == INGOT_TARGET_GPU_NONE) {
      ingot_strbuf_t sb = {0};
      for (int g = INGOT_TARGET_GPU_NONE + 1; g < INGOT_TARGET_GPU_COUNT_; ++g)
        if (k_gpus[g].kind == kind) ingot_strbuf_appendf(&sb, " %s", k_gpus[g].arch);
      ingot_status_t st = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': unknown %s '%s' (accepted:%s)",
                                     text, what, name, sb.data ? sb.data : "");
      ingot_strbuf_free(&sb);
      return st;
    }
  }
  if (gpu == INGOT_TARGET_GPU_NONE) /* the kind's first row is its default */
    for (int g = INGOT_TARGET_GPU_COUNT_ - 1; g > INGOT_TARGET_GPU_NONE; --g)
      if (k_gpus[g].kind == kind) gpu = (ingot_target_gpu_id_t)g;
  const gpu_row_t* row = &k_gpus[gpu];
  ingot_target_arch_t arch = kind == INGOT_TARGET_CUDA ? INGOT_TARGET_ARCH_NVPTX : INGOT_TARGET_ARCH_AMDGPU;
  out->kind = kind;
  out->arch = arch;
  out->level = INGOT_TARGET_LEVEL_NONE;
  snprintf(out->triple, sizeof(out->triple), "%s", k_arches[arch].triple);
  snprintf(out->cpu, sizeof(out->cpu), "%s", row->arch);
  snprintf(out->name, sizeof(out->name), "%s %s%s", kind_name, option, row->arch);
  /* The widest load one thread issues (float4), and the FFMA / V_FMA every
   * row has; no CPU features, caches or host threads. */
  out->vector_bytes = 16;
  out->has_fma = true;
  ingot_target_gpu_t* g = &out->gpu;
  snprintf(g->arch, sizeof(g->arch), "%s", row->arch);
  g->warp_size = row->warp;
  g->shared_bytes_per_block = row->shared;
  g->max_threads_per_block = row->threads;
  g->id = gpu;
  g->number = row->number;
  g->units = row->units;
  g->fp32_lanes_per_unit = row->lanes;
  g->peak_fp32_gflops = row->fp32_gflops;
  g->peak_mem_gbps = row->mem_gbps;
  g->has_mma = row->mma;
  return INGOT_OK;
}

ingot_status_t ingot_target_parse(const char* text, ingot_target_t* out_target) {
  if (!out_target) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_target_parse: no output");
  memset(out_target, 0, sizeof(*out_target));
  if (!text) return refuse(INGOT_ERROR_INVALID_ARGUMENT, "no target given");

  /* Split into at most 8 words. */
  char copy[256];
  if (strlen(text) >= sizeof(copy)) return refuse(INGOT_ERROR_INVALID_ARGUMENT, "target string too long");
  strcpy(copy, text);
  char* words[8];
  int count = 0;
  char* save = NULL;
  for (char* w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
    if (count == 8) return refuse(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': too many options", text);
    words[count++] = w;
  }
  if (count == 0) return refuse(INGOT_ERROR_INVALID_ARGUMENT, "empty target string");

  ingot_status_t st;
  if (find_level(words[0]) != INGOT_TARGET_LEVEL_NONE) {
    /* A lone short name ("x86-64-v3", "aarch64") means llvm. */
    st = parse_llvm(text, words, 0, count, out_target);
  } else {
    const target_kind_info_t* info = NULL;
    for (size_t i = 0; i < sizeof(k_target_kinds) / sizeof(k_target_kinds[0]); ++i)
      if (strcmp(words[0], k_target_kinds[i].name) == 0) info = &k_target_kinds[i];
    if (!info) return refuse(INGOT_ERROR_INVALID_ARGUMENT, "unknown target '%s'", text);
    if (!info->supported)
      return refuse(INGOT_ERROR_UNSUPPORTED, "target '%s': the %s target is not implemented yet", text, info->name);
    if (info->kind == INGOT_TARGET_CUDA || info->kind == INGOT_TARGET_ROCM)
      st = parse_gpu(text, info->kind, words, count, out_target);
    else
      st = info->kind == INGOT_TARGET_C ? parse_c(text, words, count, out_target)
                                        : parse_llvm(text, words, 1, count, out_target);
  }
  if (st != INGOT_OK) memset(out_target, 0, sizeof(*out_target));
  return st;
}
