/* Target strings: a table of target kinds and CPU levels. */
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

typedef struct target_kind_info_t {
  const char* name;                 /* first word of the target string */
  ingot_target_kind_t kind;
  bool supported;
  const target_cpu_t* cpus;
  size_t cpu_count;
  uint32_t generic_vector_bytes;
} target_kind_info_t;

static const target_kind_info_t k_target_kinds[] = {
    {"c", INGOT_TARGET_C, true, k_c_cpus, sizeof(k_c_cpus) / sizeof(k_c_cpus[0]), 16},
    {"llvm", INGOT_TARGET_LLVM, false, NULL, 0, 16},
    {"cuda", INGOT_TARGET_CUDA, false, NULL, 0, 16},
    {"rocm", INGOT_TARGET_ROCM, false, NULL, 0, 16},
};

#define TARGET_ACCEPTED "accepted: \"c\", \"c -mcpu=x86-64\", \"c -mcpu=x86-64-v2\", \"c -mcpu=x86-64-v3\", \"c -mcpu=x86-64-v4\""

static const char* host_triple(void) {
#if defined(__x86_64__)
  return "x86_64-linux-gnu";
#elif defined(__aarch64__)
  return "aarch64-linux-gnu";
#else
  return "unknown-linux-gnu";
#endif
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
  for (char* w = strtok(copy, " \t"); w; w = strtok(NULL, " \t")) {
    if (count == 8) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': too many options; " TARGET_ACCEPTED, text);
    words[count++] = w;
  }
  if (count == 0) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "empty target string; " TARGET_ACCEPTED);

  const target_kind_info_t* info = NULL;
  for (size_t i = 0; i < sizeof(k_target_kinds) / sizeof(k_target_kinds[0]); ++i)
    if (strcmp(words[0], k_target_kinds[i].name) == 0) info = &k_target_kinds[i];
  if (!info) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "unknown target '%s'; " TARGET_ACCEPTED, text);
  if (!info->supported)
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "target '%s': the %s target is not implemented yet; " TARGET_ACCEPTED,
                      text, info->name);

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
    for (size_t i = 0; i < info->cpu_count; ++i)
      if (strcmp(name, info->cpus[i].name) == 0) cpu = &info->cpus[i];
    if (!cpu)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target '%s': unknown cpu '%s'; " TARGET_ACCEPTED, text, name);
  }

  out_target->kind = info->kind;
  snprintf(out_target->triple, sizeof(out_target->triple), "%s", host_triple());
  out_target->vector_bytes = cpu ? cpu->vector_bytes : info->generic_vector_bytes;
  out_target->l1_bytes = 32u * 1024u;
  out_target->l2_bytes = 1024u * 1024u;
  out_target->max_threads = 0;
  if (cpu) {
    snprintf(out_target->cpu, sizeof(out_target->cpu), "%s", cpu->name);
    snprintf(out_target->name, sizeof(out_target->name), "%s -mcpu=%s", info->name, cpu->name);
  } else {
    snprintf(out_target->name, sizeof(out_target->name), "%s", info->name);
  }
  return INGOT_OK;
}
