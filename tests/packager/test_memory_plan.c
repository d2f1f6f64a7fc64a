/* Memory planner: random cases keep overlapping tensors apart, offsets
 * aligned, arena >= lower bound, and hit the lower bound where the optimum is
 * known (disjoint intervals; intervals sharing one step); live intervals
 * derived from a bundle spec's steps (ingot_bundle_live_intervals); the
 * plan of a spec without code variants (ingot_bundle_plan) equal to the
 * bundle's, and the firmware files written from it (ingot_firmware_build). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packager/packager.h"

static int g_failures;
#define CHECK(cond, ...)                                              \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "%s:%d: FAILED %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                   \
      fprintf(stderr, "\n");                                          \
      ++g_failures;                                                   \
    }                                                                 \
  } while (0)

static uint64_t rng_state;
static uint32_t rng(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(rng_state >> 33);
}

static uint64_t align64(uint64_t x) { return (x + 63) & ~(uint64_t)63; }

/* The lower bound computed the slow way, step by step. */
static uint64_t brute_lower_bound(const ingot_plan_item_t* items, uint32_t n) {
  uint32_t max_step = 0;
  for (uint32_t i = 0; i < n; ++i)
    if (items[i].last_step > max_step) max_step = items[i].last_step;
  uint64_t best = 0;
  for (uint32_t s = 0; s <= max_step; ++s) {
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; ++i)
      if (items[i].first_step <= s && s <= items[i].last_step) sum += align64(items[i].bytes);
    if (sum > best) best = sum;
  }
  return best;
}

static void check_plan(ingot_plan_item_t* items, uint32_t n, int seed, int expect_optimal) {
  uint64_t arena = 0, lb = 0;
  ingot_status_t st = ingot_memory_plan(items, n, &arena, &lb);
  CHECK(st == INGOT_OK, "seed %d: status %d", seed, st);
  CHECK(lb == brute_lower_bound(items, n), "seed %d: lower bound %" PRIu64 " vs %" PRIu64, seed,
        lb, brute_lower_bound(items, n));
  CHECK(arena >= lb, "seed %d: arena %" PRIu64 " < lower bound %" PRIu64, seed, arena, lb);
  if (expect_optimal) CHECK(arena == lb, "seed %d: arena %" PRIu64 " != optimum %" PRIu64, seed, arena, lb);
  for (uint32_t i = 0; i < n; ++i) {
    CHECK(items[i].offset % 64 == 0, "seed %d: item %u offset %" PRIu64, seed, i, items[i].offset);
    CHECK(items[i].offset + items[i].bytes <= arena, "seed %d: item %u past the arena", seed, i);
    for (uint32_t j = i + 1; j < n; ++j) {
      int live_together = items[i].first_step <= items[j].last_step &&
                          items[j].first_step <= items[i].last_step;
      int mem_overlap = items[i].bytes && items[j].bytes &&
                        items[i].offset < items[j].offset + items[j].bytes &&
                        items[j].offset < items[i].offset + items[i].bytes;
      CHECK(!(live_together && mem_overlap), "seed %d: items %u and %u collide", seed, i, j);
    }
  }
}

int main(void) {
  ingot_plan_item_t items[64];
  /* Random intervals and sizes. */
  for (int seed = 1; seed <= 500; ++seed) {
    rng_state = (uint64_t)seed;
    uint32_t n = 1 + rng() % 40, steps = 1 + rng() % 30;
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t a = rng() % steps, b = rng() % steps;
      items[i].first_step = a < b ? a : b;
      items[i].last_step = a < b ? b : a;
      items[i].bytes = (rng() % 8 == 0) ? 0 : 1 + rng() % 5000;
      items[i].offset = 12345;
    }
    check_plan(items, n, seed, 0);
  }
  /* Disjoint intervals: the optimum is the largest item. */
  for (int seed = 1; seed <= 100; ++seed) {
    rng_state = (uint64_t)seed * 77;
    uint32_t n = 1 + rng() % 60;
    for (uint32_t i = 0; i < n; ++i) {
      items[i].first_step = items[i].last_step = i;
      items[i].bytes = 1 + rng() % 10000;
    }
    check_plan(items, n, seed, 1);
  }
  /* Nested intervals (all share the middle step): the optimum is the sum. */
  for (int seed = 1; seed <= 100; ++seed) {
    rng_state = (uint64_t)seed * 1234567;
    uint32_t n = 1 + rng() % 30;
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t r = rng() % 20;
      items[i].first_step = 20 - r;
      items[i].last_step = 20 + rng() % 20;
      items[i].bytes = 1 + rng() % 10000;
    }
    check_plan(items, n, seed, 1);
  }
  /* A chain a->b->c->d (each live for two steps): two buffers suffice. */
  for (uint32_t i = 0; i < 8; ++i) {
    items[i].first_step = i;
    items[i].last_step = i + 1;
    items[i].bytes = 1000;
  }
  check_plan(items, 8, -1, 1);
  /* Bad input is a status, not a crash. */
  {
    ingot_plan_item_t bad = {64, 5, 2, 0};
    uint64_t arena, lb;
    CHECK(ingot_memory_plan(&bad, 1, &arena, &lb) == INGOT_ERROR_INVALID_ARGUMENT, "reversed interval");
    CHECK(ingot_memory_plan(NULL, 0, &arena, &lb) == INGOT_OK && arena == 0 && lb == 0, "empty");
  }
  /* Live intervals come from the steps: a tensor lives from the first step
   * that reads or writes it to the last one; inputs for the whole run,
   * outputs to the last step, a tensor no step touches (an output that is a
   * view, a weight) from step 0 for one step unless extended.
   *   tensors: 0 x (input), 1 w (weight), 2 t, 3 y (output), 4 v (output,
   *   untouched view of t), 5 u (untouched)
   *   steps:   0 (x, w -> t), 1 (t -> y), 2 (y -> y), 3 (t, y -> y) */
  {
    ingot_bundle_tensor_t tensors[6] = {{0}};
    for (int i = 0; i < 6; ++i) tensors[i].alias_of = UINT32_MAX;
    tensors[4].alias_of = 2;
    tensors[1].storage = INGOT_STORAGE_WEIGHT;
    static const uint32_t a0[] = {0, 1, 2}, a1[] = {2, 3}, a2[] = {3}, a3[] = {2, 3, 3};
    ingot_bundle_step_t steps[4] = {{0, a0, 3, "s0"}, {0, a1, 2, "s1"}, {0, a2, 1, "s2"}, {0, a3, 3, "s3"}};
    static const uint32_t inputs[] = {0}, outputs[] = {3, 4};
    ingot_bundle_spec_t spec = {.tensors = tensors, .tensor_count = 6, .inputs = inputs, .input_count = 1,
                                .outputs = outputs, .output_count = 2, .steps = steps, .step_count = 4};
    uint32_t first[6], last[6];
    ingot_bundle_live_intervals(&spec, first, last);
    static const uint32_t want_first[6] = {0, 0, 0, 1, 0, 0}, want_last[6] = {3, 0, 3, 3, 3, 0};
    for (int i = 0; i < 6; ++i)
      CHECK(first[i] == want_first[i] && last[i] == want_last[i], "tensor %d lives [%u, %u], want [%u, %u]", i,
            first[i], last[i], want_first[i], want_last[i]);
    /* No steps: everything lives at step 0. */
    spec.step_count = 0;
    ingot_bundle_live_intervals(&spec, first, last);
    for (int i = 0; i < 6; ++i) CHECK(first[i] == 0 && last[i] == 0, "no steps: tensor %d [%u, %u]", i, first[i], last[i]);
  }
  /* ingot_bundle_plan gives the bundle's plan, without code variants; the
   * firmware writer reads it. tensors: 0 x (input, 4 floats), 1 w (weight),
   * 2 t (16 floats), 3 y (output, 4 floats), 4 v (view of t);
   * steps: (x, w -> t), (v -> y). */
  {
    ingot_bundle_tensor_t tensors[5] = {{0}};
    static const float wdata[4] = {1, 2, 3, 4};
    static const int64_t n4[] = {4}, n16[] = {16};
    for (int i = 0; i < 5; ++i) {
      tensors[i].alias_of = UINT32_MAX;
      tensors[i].storage = INGOT_STORAGE_ARENA;
      tensors[i].dtype = INGOT_DTYPE_F32;
      tensors[i].rank = 1;
      tensors[i].dims[0] = (i == 2 || i == 4) ? n16[0] : n4[0];
      tensors[i].name = (const char*[]){"x", "w", "t", "y", "v"}[i];
    }
    tensors[1].storage = INGOT_STORAGE_WEIGHT;
    tensors[1].data = wdata;
    tensors[4].alias_of = 2;
    static const uint32_t a0[] = {0, 1, 2}, a1[] = {4, 3};
    ingot_bundle_step_t steps[2] = {{0, a0, 3, "s0"}, {1, a1, 2, "s1"}};
    static const uint32_t inputs[] = {0}, outputs[] = {3};
    static const char* const kernels[] = {"k0", "k1"};
    ingot_bundle_spec_t spec = {.tensors = tensors, .tensor_count = 5, .inputs = inputs, .input_count = 1,
                                .outputs = outputs, .output_count = 1, .steps = steps, .step_count = 2,
                                .kernel_names = kernels, .kernel_count = 2};
    uint64_t offsets[5], arena = 0, lb = 0;
    CHECK(ingot_bundle_plan(&spec, offsets, &arena, &lb) == INGOT_OK, "plan without code variants");
    CHECK(offsets[4] == offsets[2] && offsets[1] == 0, "view at %" PRIu64 ", root at %" PRIu64, offsets[4],
          offsets[2]);
    CHECK(arena >= lb && lb > 0, "arena %" PRIu64 ", lower bound %" PRIu64, arena, lb);
    ingot_bundle_code_t code = {.target = "c", .data = "x", .size = 1, .loader = INGOT_LOADER_CPU_ELF};
    spec.codes = &code;
    spec.code_count = 1;
    uint8_t* bundle = NULL;
    size_t size = 0;
    ingot_bundle_report_t report;
    CHECK(ingot_bundle_build(&spec, &bundle, &size, &report) == INGOT_OK && report.arena_bytes == arena &&
              report.arena_lower_bound == lb,
          "the bundle's arena %" PRIu64 " vs the plan's %" PRIu64, report.arena_bytes, arena);
    free(bundle);
    /* The firmware files from the same spec. */
    ingot_firmware_t fw;
    static const char source[] = "/* kernels */\n";
    CHECK(ingot_firmware_build(&spec, source, sizeof(source) - 1, &fw) == INGOT_OK &&
              fw.file_count == INGOT_FIRMWARE_FILE_COUNT && fw.arena_bytes == arena && fw.weight_bytes == 16,
          "firmware: %u files, arena %" PRIu64, fw.file_count, fw.arena_bytes);
    char want[64];
    snprintf(want, sizeof(want), "#define INGOT_MODEL_ARENA_BYTES %" PRIu64 "u\n", arena);
    CHECK(fw.file_count && strstr(fw.files[0].text.data, want), "ingot_model.h lacks '%s'", want);
    CHECK(fw.file_count && strstr(fw.files[0].text.data, "#define INGOT_MODEL_OUTPUT0_DIMS {4}"), "output dims");
    CHECK(fw.file_count && !strcmp(fw.files[2].text.data, source), "the kernels' source, unchanged");
    CHECK(fw.file_count && strstr(fw.files[3].text.data, "0x00,0x00,0x80,0x3f,"), "weight bytes (1.0f)");
    ingot_firmware_free(&fw);
    CHECK(ingot_firmware_build(&spec, NULL, 0, &fw) == INGOT_ERROR_INVALID_ARGUMENT && fw.file_count == 0,
          "no source");
    tensors[4].alias_of = 4 + 1; /* past the tensors: refused as the bundle writer refuses it */
    CHECK(ingot_firmware_build(&spec, source, sizeof(source) - 1, &fw) == INGOT_ERROR_INVALID_ARGUMENT &&
              fw.file_count == 0, "bad alias refused");
  }
  if (g_failures) {
    fprintf(stderr, "%d failures\n", g_failures);
    return 1;
  }
  printf("memory plan: ok\n");
  return 0;
}
