/* Target descriptions: the facts each level, named CPU and -mattr list give,
 * and a consistency check that the runtime (runtime/cpu.c, which includes the
 * same .def rows) knows every level, CPU and feature name the compiler knows,
 * and the compiler every feature the runtime detects. */
#define _POSIX_C_SOURCE 200809L /* strtok_r */
#include <stdio.h>
#include <string.h>

#include "runtime/loader.h" /* the GPU loader rows read the same target strings */
#include "runtime/runtime_internal.h"
#include "target/target.h"

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

static bool parse(const char* text, ingot_target_t* t) {
  ingot_status_t st = ingot_target_parse(text, t);
  CHECK(st == INGOT_OK, "'%s': %s", text, ingot_compiler_error());
  return st == INGOT_OK;
}

static bool gpu_zero(const ingot_target_t* t) {
  return t->gpu.arch[0] == 0 && t->gpu.warp_size == 0 && t->gpu.shared_bytes_per_block == 0 &&
         t->gpu.max_threads_per_block == 0;
}

typedef struct level_case_t {
  const char* name;
  ingot_target_level_t level;
  ingot_target_arch_t arch;
  uint32_t vector_bytes, vector_registers;
  bool fma, masked_load;
  ingot_target_feature_t has, lacks; /* one feature the level has, one it has not */
} level_case_t;

static void test_levels(void) {
  static const level_case_t cases[] = {
      {"x86-64", INGOT_TARGET_LEVEL_X86_64, INGOT_TARGET_ARCH_X86_64, 16, 16, false, false,
       INGOT_TARGET_FEATURE_COUNT_, INGOT_TARGET_FEATURE_SSE4_1},
      {"x86-64-v2", INGOT_TARGET_LEVEL_X86_64_V2, INGOT_TARGET_ARCH_X86_64, 16, 16, false, false,
       INGOT_TARGET_FEATURE_SSE4_1, INGOT_TARGET_FEATURE_AVX},
      {"x86-64-v3", INGOT_TARGET_LEVEL_X86_64_V3, INGOT_TARGET_ARCH_X86_64, 32, 16, true, true,
       INGOT_TARGET_FEATURE_AVX2, INGOT_TARGET_FEATURE_AVX512F},
      {"x86-64-v4", INGOT_TARGET_LEVEL_X86_64_V4, INGOT_TARGET_ARCH_X86_64, 64, 32, true, true,
       INGOT_TARGET_FEATURE_AVX512VL, INGOT_TARGET_FEATURE_AVX512VNNI},
      {"aarch64", INGOT_TARGET_LEVEL_AARCH64, INGOT_TARGET_ARCH_AARCH64, 16, 32, true, false,
       INGOT_TARGET_FEATURE_NEON, INGOT_TARGET_FEATURE_DOTPROD},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    const level_case_t* c = &cases[i];
    ingot_target_t t;
    if (!parse(c->name, &t)) continue;
    CHECK(t.kind == INGOT_TARGET_LLVM && t.level == c->level && t.arch == c->arch, "%s: kind/level/arch", c->name);
    CHECK(strcmp(ingot_target_level_name(t.level), c->name) == 0, "%s: level name", c->name);
    CHECK(t.vector_bytes == c->vector_bytes && t.vector_registers == c->vector_registers,
          "%s: %u bytes, %u registers", c->name, t.vector_bytes, t.vector_registers);
    CHECK(t.has_fma == c->fma && t.has_masked_load == c->masked_load, "%s: fma %d masked %d", c->name, t.has_fma,
          t.has_masked_load);
    /* the narrowest masked element: AVX2's vpmaskmov takes 32 bits, AVX-512BW bytes */
    uint32_t mbytes = !c->masked_load ? 0 : c->level == INGOT_TARGET_LEVEL_X86_64_V3 ? 4 : 1;
    CHECK(t.masked_load_min_bytes == mbytes, "%s: masked loads from %u bytes", c->name, t.masked_load_min_bytes);
    if (c->has != INGOT_TARGET_FEATURE_COUNT_)
      CHECK(ingot_target_has_feature(&t, c->has), "%s has %s", c->name, ingot_target_feature_name(c->has));
    CHECK(!ingot_target_has_feature(&t, c->lacks), "%s lacks %s", c->name, ingot_target_feature_name(c->lacks));
    CHECK(strncmp(t.triple, ingot_target_arch_name(t.arch), strlen(ingot_target_arch_name(t.arch))) == 0,
          "%s: triple %s", c->name, t.triple);
    /* Caches: the level's conservative defaults, ordered. */
    CHECK(t.l1_bytes >= 16 * 1024 && t.l2_bytes > t.l1_bytes && (t.l3_bytes == 0 || t.l3_bytes > t.l2_bytes),
          "%s: caches %u %u %u", c->name, t.l1_bytes, t.l2_bytes, t.l3_bytes);
    CHECK(t.max_threads == 0 && gpu_zero(&t), "%s: threads at run time, no GPU facts", c->name);
    char text[64];
    snprintf(text, sizeof text, "llvm -mcpu=%s", c->name);
    ingot_target_t same;
    if (parse(text, &same))
      CHECK(same.level == t.level && same.tune[0] == 0 && strcmp(same.name, t.name) == 0, "%s: %s", text, same.name);
    /* The C target gets the same facts for the levels its compiler names. */
    if (t.arch == INGOT_TARGET_ARCH_X86_64) {
      snprintf(text, sizeof text, "c -mcpu=%s", c->name);
      ingot_target_t ct;
      if (parse(text, &ct))
        CHECK(ct.kind == INGOT_TARGET_C && ct.level == t.level && ct.vector_registers == t.vector_registers &&
                  ct.has_masked_load == t.has_masked_load && ct.feature_bits == t.feature_bits &&
                  strcmp(ct.cpu, c->name) == 0,
              "%s", text);
    }
  }
  /* Levels are cumulative: v4 has everything v3 has. */
  ingot_target_t v3, v4;
  if (parse("x86-64-v3", &v3) && parse("x86-64-v4", &v4))
    CHECK((v3.feature_bits & v4.feature_bits) == v3.feature_bits, "v4 includes v3");
}

static void test_cpus(void) {
  ingot_target_t t;
  /* A CPU whose row knows its caches: all three from the row. */
  if (parse("llvm -mcpu=znver3", &t))
    CHECK(t.level == INGOT_TARGET_LEVEL_X86_64_V3 && strcmp(t.tune, "znver3") == 0 && t.vector_registers == 16 &&
              t.l1_bytes == 32 * 1024 && t.l2_bytes == 512 * 1024 && t.l3_bytes == 32u * 1024 * 1024,
          "znver3: level %d, caches %u %u %u", (int)t.level, t.l1_bytes, t.l2_bytes, t.l3_bytes);
  /* One that knows L1 and L2 only: L3 is the level's default. */
  ingot_target_t level;
  if (parse("llvm -mcpu=icelake-server", &t) && parse("x86-64-v4", &level))
    CHECK(t.level == INGOT_TARGET_LEVEL_X86_64_V4 && t.vector_registers == 32 && t.l1_bytes == 48 * 1024 &&
              t.l2_bytes == 1280 * 1024 && t.l3_bytes == level.l3_bytes,
          "icelake-server: caches %u %u %u", t.l1_bytes, t.l2_bytes, t.l3_bytes);
  if (parse("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1", &t))
    CHECK(t.level == INGOT_TARGET_LEVEL_AARCH64 && t.arch == INGOT_TARGET_ARCH_AARCH64 && t.vector_registers == 32 &&
              t.l1_bytes == 64 * 1024 && t.l2_bytes == 1024 * 1024,
          "neoverse-n1");
  /* A CPU row's features beyond its level (avx512vnni from Cascade Lake
   * and Zen 4 on): in the feature bits and, as '+' attributes, for LLVM;
   * -mattr's own follow. Its level and Skylake-X have none. */
  if (parse("llvm -mcpu=znver4", &t))
    CHECK(t.level == INGOT_TARGET_LEVEL_X86_64_V4 && ingot_target_has_feature(&t, INGOT_TARGET_FEATURE_AVX512VNNI) &&
              strcmp(t.features, "+avx512vnni") == 0 && strcmp(t.name, "llvm -mcpu=znver4") == 0,
          "znver4: vnni %d, features '%s'", ingot_target_has_feature(&t, INGOT_TARGET_FEATURE_AVX512VNNI), t.features);
  if (parse("llvm -mcpu=znver4 -mattr=-fma", &t))
    CHECK(ingot_target_has_feature(&t, INGOT_TARGET_FEATURE_AVX512VNNI) && strcmp(t.features, "+avx512vnni,-fma") == 0,
          "znver4 -mattr=-fma: features '%s'", t.features);
  if (parse("llvm -mcpu=skylake-avx512", &t))
    CHECK(!ingot_target_has_feature(&t, INGOT_TARGET_FEATURE_AVX512VNNI) && t.features[0] == 0, "skylake-avx512: no vnni");
  if (parse("x86-64-v4", &t)) CHECK(!ingot_target_has_feature(&t, INGOT_TARGET_FEATURE_AVX512VNNI), "x86-64-v4: no vnni");
  CHECK(strcmp(ingot_target_cpu_level("skylake-avx512"), "x86-64-v4") == 0, "skylake-avx512 is v4");
  CHECK(strcmp(ingot_target_cpu_level("cortex-a76"), "aarch64") == 0, "cortex-a76 is aarch64");
  CHECK(ingot_target_cpu_level("pentium") == NULL, "pentium is unknown");
}

static void test_mattr(void) {
  ingot_target_t t;
  if (parse("x86-64 -mattr=+sse4.1", &t))
    CHECK(ingot_target_has_feature(&t, INGOT_TARGET_FEATURE_SSE4_1) && !t.has_fma && t.vector_bytes == 16,
          "+sse4.1 adds the bit");
  if (parse("x86-64 -mattr=+avx2,+fma", &t))
    CHECK(t.has_fma && ingot_target_has_feature(&t, INGOT_TARGET_FEATURE_AVX2) && t.vector_bytes == 16 &&
              !t.has_masked_load && strcmp(t.features, "+avx2,+fma") == 0,
          "+fma: fma, the level's vectors");
  if (parse("x86-64-v3 -mattr=-fma", &t))
    CHECK(!t.has_fma && !ingot_target_has_feature(&t, INGOT_TARGET_FEATURE_FMA) &&
              ingot_target_has_feature(&t, INGOT_TARGET_FEATURE_AVX2),
          "-fma removes fma only");
  if (parse("x86-64-v2 -mattr=-sse4.1", &t))
    CHECK(!ingot_target_has_feature(&t, INGOT_TARGET_FEATURE_SSE4_1), "-sse4.1");
  CHECK(ingot_target_parse("aarch64 -mattr=+avx2", &t) == INGOT_ERROR_INVALID_ARGUMENT, "a feature of another arch");
  CHECK(strstr(ingot_compiler_error(), "dotprod") != NULL, "the message lists the arch's features: %s",
        ingot_compiler_error());
  CHECK(t.kind == 0 && t.name[0] == 0, "no half-filled target on failure");
}

static void test_hosts(void) {
  ingot_target_t t;
  if (parse("llvm", &t)) {
    CHECK(t.level != INGOT_TARGET_LEVEL_NONE && t.l1_bytes > 0 && t.l2_bytes > 0, "host llvm %s: caches %u %u %u",
          t.name, t.l1_bytes, t.l2_bytes, t.l3_bytes);
    printf("host: %s, %u vector registers, caches L1 %u L2 %u L3 %u bytes\n", t.name, t.vector_registers, t.l1_bytes,
           t.l2_bytes, t.l3_bytes);
  }
  if (parse("c", &t))
    CHECK(t.kind == INGOT_TARGET_C && t.cpu[0] == 0 && t.vector_bytes == 16 && strcmp(t.name, "c") == 0 &&
              t.vector_registers >= 16,
          "c");
  CHECK(ingot_target_parse("c -mcpu=aarch64", &t) == INGOT_ERROR_INVALID_ARGUMENT, "the C target names x86 levels");
  CHECK(strstr(ingot_compiler_error(), "x86-64-v4") != NULL, "the message lists them: %s", ingot_compiler_error());
}

/* The runtime's reading of a target string says "unknown" only for names
 * outside the table. */
static bool runtime_knows(const char* target, char* why, size_t cap) {
  ingot_rt_variant_rank(target, why, cap);
  return strstr(why, "unknown") == NULL;
}

static void test_runtime_sees_the_same_table(void) {
  char why[256], text[160];
  int count = 0;
  for (int f = 0; f < INGOT_TARGET_FEATURE_COUNT_; ++f) {
    const char* name = ingot_target_feature_name((ingot_target_feature_t)f);
    ingot_target_t t;
    /* The baseline level of the feature's architecture, plus the feature. */
    for (int l = INGOT_TARGET_LEVEL_NONE + 1; l < INGOT_TARGET_LEVEL_COUNT_; ++l) {
      snprintf(text, sizeof text, "%s -mattr=+%s", ingot_target_level_name((ingot_target_level_t)l), name);
      if (ingot_target_parse(text, &t) == INGOT_OK) break;
    }
    CHECK(t.name[0] && ingot_target_has_feature(&t, (ingot_target_feature_t)f), "compiler accepts %s: %s", name,
          ingot_compiler_error());
    CHECK(runtime_knows(t.name, why, sizeof why), "runtime on '%s': %s", t.name, why);
    ++count;
  }
  /* Every level and named CPU the compiler knows (its message lists them). */
  ingot_target_t t;
  CHECK(ingot_target_parse("llvm -mcpu=pentium", &t) == INGOT_ERROR_INVALID_ARGUMENT, "pentium");
  const char* known = strstr(ingot_compiler_error(), "(known:");
  CHECK(known != NULL, "%s", ingot_compiler_error());
  char list[1024];
  snprintf(list, sizeof list, "%s", known ? known + 7 : "");
  int cpus = 0;
  char* save = NULL;
  for (char* name = strtok_r(list, " )", &save); name; name = strtok_r(NULL, " )", &save), ++cpus) {
    snprintf(text, sizeof text, "llvm -mcpu=%s", name);
    CHECK(runtime_knows(text, why, sizeof why), "runtime on '%s': %s", text, why);
    const char* level = ingot_target_cpu_level(name);
    CHECK(level != NULL, "compiler: %s has a level", name);
    char level_text[96];
    snprintf(level_text, sizeof level_text, "llvm %s", level ? level : "?");
    char why2[256];
    /* as its level, unless this CPU lacks one of the named CPU's adds (say,
     * avx512fp16 of sapphirerapids on a Zen 4): then it refuses, naming it */
    int rank = ingot_rt_variant_rank(text, why, sizeof why);
    int level_rank = ingot_rt_variant_rank(level_text, why2, sizeof why2);
    CHECK(rank == level_rank || (rank <= 0 && strstr(why, "lacks") != NULL),
          "runtime ranks %s as its level %s (%d, %d: %s)", name, level, rank, level_rank, why);
  }
  CHECK(cpus > INGOT_TARGET_LEVEL_COUNT_, "the message listed %d names", cpus);
  /* The other way: every feature the runtime detects here is one the
   * compiler accepts for this architecture. */
  char cpu[1024], names[1024];
  ingot_rt_cpu_describe(cpu, sizeof cpu);
  snprintf(names, sizeof names, "%s", cpu);
  ingot_target_t host;
  int seen = 0;
  if (parse("llvm", &host)) {
    char* colon = strchr(names, ':');
    save = NULL;
    for (char* name = strtok_r(colon ? colon + 1 : names, " ", &save); name; name = strtok_r(NULL, " ", &save), ++seen) {
      snprintf(text, sizeof text, "llvm -mtriple=%s -mattr=+%s", host.triple, name);
      CHECK(ingot_target_parse(text, &t) == INGOT_OK, "runtime detects '%s', compiler: %s", name,
            ingot_compiler_error());
    }
  }
  /* A name outside the table: both refuse it. */
  CHECK(!runtime_knows("llvm x86-64 -mattr=+sse9", why, sizeof why), "runtime: %s", why);
  CHECK(ingot_target_parse("x86-64 -mattr=+sse9", &t) == INGOT_ERROR_INVALID_ARGUMENT, "compiler refuses sse9");
  printf("table: %d features, %d levels and CPUs seen by both; %d features detected here: %s\n", count, cpus, seen,
         cpu);
}

/* GPU targets: every row of target_gpus.def parses to its canonical string
 * with its facts, the defaults, the refusals with what is accepted, and the
 * runtime's GPU loader rows read every canonical string as their own. */
typedef struct gpu_case_t {
  const char* text;
  const char* canonical;
  ingot_target_kind_t kind;
  ingot_target_arch_t arch;
  uint32_t warp, number;
} gpu_case_t;

static void test_gpus(void) {
  static const gpu_case_t cases[] = {
      {"cuda", "cuda -arch=sm_80", INGOT_TARGET_CUDA, INGOT_TARGET_ARCH_NVPTX, 32, 80},
      {"cuda -arch=sm_80", "cuda -arch=sm_80", INGOT_TARGET_CUDA, INGOT_TARGET_ARCH_NVPTX, 32, 80},
      {"cuda -arch=sm_86", "cuda -arch=sm_86", INGOT_TARGET_CUDA, INGOT_TARGET_ARCH_NVPTX, 32, 86},
      {" cuda   -arch=sm_89 ", "cuda -arch=sm_89", INGOT_TARGET_CUDA, INGOT_TARGET_ARCH_NVPTX, 32, 89},
      {"cuda -arch=sm_90", "cuda -arch=sm_90", INGOT_TARGET_CUDA, INGOT_TARGET_ARCH_NVPTX, 32, 90},
      {"rocm", "rocm -mcpu=gfx90a", INGOT_TARGET_ROCM, INGOT_TARGET_ARCH_AMDGPU, 64, 910},
      {"rocm -mcpu=gfx90a", "rocm -mcpu=gfx90a", INGOT_TARGET_ROCM, INGOT_TARGET_ARCH_AMDGPU, 64, 910},
      {"rocm -mcpu=gfx942", "rocm -mcpu=gfx942", INGOT_TARGET_ROCM, INGOT_TARGET_ARCH_AMDGPU, 64, 942},
  };
  const ingot_rt_loader_t* cuda = ingot_rt_loader_find(INGOT_LOADER_CUDA);
  const ingot_rt_loader_t* hip = ingot_rt_loader_find(INGOT_LOADER_HIP);
  CHECK(cuda && hip, "the runtime has both GPU loader rows");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    const gpu_case_t* c = &cases[i];
    ingot_target_t t;
    if (!parse(c->text, &t)) continue;
    CHECK(t.kind == c->kind && t.arch == c->arch && strcmp(t.name, c->canonical) == 0, "'%s': kind %d arch %d '%s'",
          c->text, (int)t.kind, (int)t.arch, t.name);
    CHECK(strcmp(t.triple, c->kind == INGOT_TARGET_CUDA ? "nvptx64-nvidia-cuda" : "amdgcn-amd-amdhsa") == 0,
          "'%s': triple %s", c->text, t.triple);
    const char* arch = strchr(c->canonical, '=') + 1;
    CHECK(strcmp(t.gpu.arch, arch) == 0 && strcmp(t.cpu, arch) == 0 && strcmp(ingot_target_gpu_name(t.gpu.id), arch) == 0,
          "'%s': gpu arch '%s', cpu '%s'", c->text, t.gpu.arch, t.cpu);
    CHECK(t.gpu.warp_size == c->warp && t.gpu.number == c->number && t.gpu.shared_bytes_per_block == 49152 &&
              t.gpu.max_threads_per_block == 1024,
          "'%s': warp %u number %u shared %u threads %u", c->text, t.gpu.warp_size, t.gpu.number,
          t.gpu.shared_bytes_per_block, t.gpu.max_threads_per_block);
    /* The reference part's figures hang together: peak fp32 is units x lanes
     * x 2 flops x a clock between 1 and 3 GHz. */
    double ghz = (double)t.gpu.peak_fp32_gflops / (2.0 * t.gpu.units * t.gpu.fp32_lanes_per_unit);
    CHECK(ghz > 1.0 && ghz < 3.0 && t.gpu.peak_mem_gbps >= 300 && t.gpu.has_mma, "'%s': %.2f GHz, %u GB/s", c->text,
          ghz, t.gpu.peak_mem_gbps);
    CHECK(t.level == INGOT_TARGET_LEVEL_NONE && t.feature_bits == 0 && t.l1_bytes == 0 && t.tune[0] == 0 &&
              t.features[0] == 0 && t.vector_bytes == 16,
          "'%s': no CPU facts", c->text);
    /* The canonical string parses to itself. */
    ingot_target_t again;
    if (parse(t.name, &again)) CHECK(memcmp(&again, &t, sizeof t) == 0, "'%s' is a fixed point", t.name);
    /* The runtime reads it as a target of its row (no driver here: the
     * reason is the driver's absence, never "not a ... target"). */
    const ingot_rt_loader_t* row = c->kind == INGOT_TARGET_CUDA ? cuda : hip;
    const ingot_rt_loader_t* other = c->kind == INGOT_TARGET_CUDA ? hip : cuda;
    char why[160] = "";
    if (row) {
      row->rank(t.name, why, sizeof why);
      CHECK(strstr(why, "not a ") == NULL, "runtime %s row on '%s': %s", row->name, t.name, why);
    }
    if (other)
      CHECK(other->rank(t.name, why, sizeof why) == 0 && strstr(why, "not a ") != NULL, "runtime %s row on '%s': %s",
            other->name, t.name, why);
    /* The CPU rank refuses GPU code. */
    CHECK(ingot_rt_variant_rank(t.name, why, sizeof why) == 0, "cpu rank of '%s': %s", t.name, why);
  }
  /* Strings the compiler refuses are not the runtime rows' either. */
  static const char* const not_gpu[] = {"rocm -mcpu=foo", "rocm -mcpu=", "cuda -arch=compute_90", "cuda -arch=sm_"};
  for (size_t i = 0; i < sizeof not_gpu / sizeof not_gpu[0]; ++i) {
    const ingot_rt_loader_t* row = not_gpu[i][0] == 'c' ? cuda : hip;
    char why[160] = "";
    ingot_target_t t;
    CHECK(ingot_target_parse(not_gpu[i], &t) != INGOT_OK, "compiler refuses '%s'", not_gpu[i]);
    if (row)
      CHECK(row->rank(not_gpu[i], why, sizeof why) == 0 && strstr(why, "not a "), "runtime %s row on '%s': %s",
            row->name, not_gpu[i], why);
  }
  /* Every row is reachable through its kind. */
  int rows = 0;
  for (int g = INGOT_TARGET_GPU_NONE + 1; g < INGOT_TARGET_GPU_COUNT_; ++g, ++rows) {
    const char* name = ingot_target_gpu_name((ingot_target_gpu_id_t)g);
    char text[64];
    snprintf(text, sizeof text, "%s %s", name[0] == 's' ? "cuda -arch=" : "rocm -mcpu=", name);
    for (char* sp = strchr(text, '='); sp && sp[1] == ' ';) memmove(sp + 1, sp + 2, strlen(sp + 2) + 1);
    ingot_target_t t;
    if (parse(text, &t)) CHECK(t.gpu.id == (ingot_target_gpu_id_t)g, "%s: row %d", text, (int)t.gpu.id);
  }
  CHECK(ingot_target_gpu_name(INGOT_TARGET_GPU_NONE) == NULL && ingot_target_gpu_name(INGOT_TARGET_GPU_COUNT_) == NULL,
        "gpu names out of range");

  /* Refusals: one message naming what is wrong and what is accepted. */
  static const struct {
    const char* text;
    const char* says[3];
  } bad[] = {
      {"cuda -arch=sm_75", {"unknown CUDA architecture 'sm_75'", "sm_80 sm_86 sm_89 sm_90", NULL}},
      {"cuda -arch=gfx90a", {"unknown CUDA architecture 'gfx90a'", NULL, NULL}},
      {"rocm -mcpu=gfx1100", {"unknown AMD GPU 'gfx1100'", "gfx90a gfx942", NULL}},
      {"rocm -arch=sm_90", {"unknown option '-arch=sm_90' for rocm", "\"rocm [-mcpu=gfx90a|gfx942]\"", NULL}},
      {"cuda -mcpu=sm_90", {"unknown option '-mcpu=sm_90' for cuda", "\"cuda [-arch=sm_80|sm_86|sm_89|sm_90]\"",
                            NULL}},
      {"cuda -arch=sm_80 -arch=sm_90", {"-arch= given twice", NULL, NULL}},
      {"cuda -arch=", {"unknown CUDA architecture ''", NULL, NULL}},
      {"vulkan", {"unknown target 'vulkan'", "\"cuda [-arch=", "\"rocm [-mcpu="}},
      {"llvm -mtriple=nvptx64-nvidia-cuda", {"not supported", NULL, NULL}},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    ingot_target_t t;
    ingot_status_t st = ingot_target_parse(bad[i].text, &t);
    const char* msg = ingot_compiler_error();
    CHECK(st != INGOT_OK && t.kind == 0 && t.name[0] == 0 && t.gpu.warp_size == 0, "'%s' refused, nothing filled",
          bad[i].text);
    CHECK(strchr(msg, '\n') == NULL, "'%s': one line: %s", bad[i].text, msg);
    for (int k = 0; k < 3 && bad[i].says[k]; ++k)
      CHECK(strstr(msg, bad[i].says[k]) != NULL, "'%s': message '%s' lacks '%s'", bad[i].text, msg, bad[i].says[k]);
  }
  printf("gpus: %d rows, %zu strings, %zu refusals\n", rows, sizeof cases / sizeof cases[0],
         sizeof bad / sizeof bad[0]);
}

int main(void) {
  test_levels();
  test_cpus();
  test_mattr();
  test_hosts();
  test_runtime_sees_the_same_table();
  test_gpus();
  if (g_failures) {
    fprintf(stderr, "%d check(s) failed\n", g_failures);
    return 1;
  }
  printf("target tests passed\n");
  return 0;
}
