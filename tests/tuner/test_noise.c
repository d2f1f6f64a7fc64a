/* One bundle measured against itself under noise is never recorded as a
 * speed-up (issue: "measurement on a noisy machine").
 *
 *   test_noise MODEL.onnx
 *
 * Builds the one-kernel bundle of the model's first Conv with its default
 * schedule, then runs the tuner (schedule/tune.h) over a made-up space of
 * 25 points whose every candidate is that same bundle, measured the way
 * `ingot tune` measures (driver_tune_measure_one: interleaved rounds, a
 * confirmation before anything counts as faster), while two noise processes
 * switch between streaming through 16 MiB and sleeping at random moments.
 * Passes when no candidate became the best, no candidate was confirmed
 * faster, and no record's time is below the default's. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "driver/driver_internal.h"
#include "schedule/tune.h"

static int failures;
#define CHECK(cond, ...)                    \
  do {                                      \
    if (!(cond)) {                          \
      printf("FAIL: " __VA_ARGS__);         \
      printf("\n");                         \
      ++failures;                           \
    }                                       \
  } while (0)

typedef struct ctx_t {
  const uint8_t* bundle;
  size_t size;
  ingot_driver_measure_options_t options;
  double default_ms;
  uint32_t records, best_candidates, faster, below_default, measured;
} ctx_t;

static ingot_status_t featurize(void* self, uint32_t task, const ingot_tune_point_t* p, float* features,
                                uint64_t* key) {
  (void)self;
  (void)task;
  memset(features, 0, sizeof(float) * INGOT_COST_FEATURE_COUNT);
  features[0] = p->value[0];
  features[1] = p->value[1];
  *key = 1469598103934665603ull ^ ((uint64_t)p->value[0] << 8 | p->value[1]);
  return INGOT_OK;
}

static ingot_status_t measure(void* self, uint32_t task, const ingot_tune_point_t* reference,
                              const ingot_tune_point_t* points, uint32_t count, ingot_tune_result_t* out) {
  (void)task;
  ctx_t* c = self;
  bool self_check = count == 1 && !memcmp(reference, points, sizeof(*reference));
  for (uint32_t i = 0; i < count; ++i) {
    ingot_status_t s = driver_tune_measure_one(&c->options, c->bundle, c->size, c->bundle, c->size, !self_check,
                                               &out[i]);
    if (s) return s;
    c->measured++;
    if (!self_check)
      printf("  candidate: ratio %.3f [%.3f, %.3f]%s\n", out[i].ratio, out[i].ratio_lo, out[i].ratio_hi,
             out[i].faster ? " CONFIRMED FASTER" : "");
  }
  return INGOT_OK;
}

static ingot_status_t on_record(void* self, const ingot_tune_record_t* r) {
  ctx_t* c = self;
  c->records++;
  if (r->is_default) {
    c->default_ms = r->time_ms;
    return INGOT_OK;
  }
  if (r->best) c->best_candidates++;
  if (r->ok && r->time_ms < c->default_ms) c->below_default++;
  return INGOT_OK;
}

/* Streams through a buffer for a random while, sleeps for a random while. */
static void noise(unsigned seed) {
  size_t n = (size_t)16 << 20;
  volatile char* buf = malloc(n);
  if (!buf) _exit(0);
  srand(seed);
  for (;;) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    double busy = 0.005 + (rand() % 40) * 1e-3;
    do {
      for (size_t i = 0; i < n; i += 64) buf[i] = (char)(buf[i] + 1);
      clock_gettime(CLOCK_MONOTONIC, &t1);
    } while ((double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9 < busy);
    struct timespec nap = {0, (long)(5 + rand() % 40) * 1000000L};
    nanosleep(&nap, NULL);
  }
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_noise MODEL.onnx\n");
    return 2;
  }
  ingot_driver_options_t o = {.model_path = argv[1]};
  ingot_graph_t* g = NULL;
  if (ingot_driver_load_graph(&o, &g)) {
    printf("FAIL: load %s: %s\n", argv[1], ingot_compiler_error());
    return 1;
  }
  uint32_t node = UINT32_MAX;
  for (uint32_t i = 0; i < g->node_count && node == UINT32_MAX; ++i)
    if (!g->nodes[i].dead && (g->nodes[i].op == INGOT_OP_CONV || g->nodes[i].op == INGOT_OP_CONV_BLOCKED)) node = i;
  uint8_t* bundle = NULL;
  size_t size = 0;
  if (node == UINT32_MAX || ingot_driver_build_kernel_bundle(g, node, NULL, "llvm", NULL, &bundle, &size)) {
    printf("FAIL: no conv bundle: %s\n", ingot_compiler_error());
    return 1;
  }
  ctx_t c = {.bundle = bundle, .size = size};
  driver_tune_measure_defaults(&c.options);

  ingot_tune_task_t task;
  memset(&task, 0, sizeof(task));
  task.workload = "the same bundle";
  task.weight = 1;
  task.space_count = 1;
  ingot_schedule_space_t* sp = &task.spaces[0];
  sp->template_name = "injective";
  sp->knob_count = 2;
  for (int k = 0; k < 2; ++k) {
    sp->knobs[k].name = k ? "unroll" : "threads";
    sp->knobs[k].value_count = 5;
    for (int v = 0; v < 5; ++v) sp->knobs[k].values[v] = 1 << v;
    sp->knobs[k].default_value = 1;
  }
  ingot_cost_model_t* model = NULL;
  ingot_cost_model_create(&model);
  ingot_tune_options_t topt = {.trials = 17, .batch = 8, .seed = 7, .model = model};
  ingot_tune_hooks_t hooks = {.self = &c, .featurize = featurize, .measure = measure, .on_record = on_record};
  ingot_tuner_t* tuner = NULL;

  pid_t noisy[2];
  for (int i = 0; i < 2; ++i) {
    noisy[i] = fork();
    if (noisy[i] == 0) noise(11u + (unsigned)i);
  }
  ingot_status_t s = ingot_tuner_create(&task, 1, &topt, &hooks, &tuner);
  if (!s) s = ingot_tuner_run(tuner);
  for (int i = 0; i < 2; ++i) {
    kill(noisy[i], SIGKILL);
    waitpid(noisy[i], NULL, 0);
  }
  CHECK(s == INGOT_OK, "tuner: %s", ingot_compiler_error());
  CHECK(c.records == 17 && c.measured == 17, "17 records (the default and 16 candidates): %u records, %u measured",
        c.records, c.measured);
  CHECK(c.best_candidates == 0, "%u copies of the default became the best", c.best_candidates);
  CHECK(c.below_default == 0, "%u records of the same program got a time below the default's", c.below_default);
  printf("default %.4f ms; %u records, %u best, %u below the default\n", c.default_ms, c.records,
         c.best_candidates, c.below_default);
  ingot_tuner_destroy(tuner);
  ingot_cost_model_destroy(model);
  free(bundle);
  ingot_graph_destroy(g);
  if (failures) {
    printf("%d failure(s)\n", failures);
    return 1;
  }
  printf("ok\n");
  return 0;
}
