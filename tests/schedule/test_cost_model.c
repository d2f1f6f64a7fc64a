/* The cost model: features of hand-built and really lowered kernels under
 * different schedules (deterministic, finite, different), and the XGBoost
 * ranking model on synthetic records whose time is a known function of a
 * few features plus noise (held-out ranking accuracy, save/load, errors). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xgboost/c_api.h>

#include "lower_test_util.h"
#include "schedule/cost_model.h"
#include "schedule/schedule.h"

/* ---- A hand-built matmul: y[i,j] += a[i,k] * b[k,j], loops i, k, j. */
enum { MI = 16, MK = 8, MJ = 32 };

static ingot_ir_func_t* make_matmul(void) {
  ingot_ir_func_t* f = ingot_ir_func_create("mm");
  int64_t ad[2] = {MI, MK}, bd[2] = {MK, MJ}, yd[2] = {MI, MJ};
  uint32_t a = ingot_ir_add_buffer(f, "a", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 2, ad);
  uint32_t b = ingot_ir_add_buffer(f, "b", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 2, bd);
  uint32_t y = ingot_ir_add_buffer(f, "y", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 2, yd);
  uint32_t i = ingot_ir_add_var(f, "i", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t k = ingot_ir_add_var(f, "k", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t j = ingot_ir_add_var(f, "j", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  ingot_ir_expr_t* ai[2] = {ingot_ir_var(f, i), ingot_ir_var(f, k)};
  ingot_ir_expr_t* bi[2] = {ingot_ir_var(f, k), ingot_ir_var(f, j)};
  ingot_ir_expr_t* yi[2] = {ingot_ir_var(f, i), ingot_ir_var(f, j)};
  ingot_ir_expr_t* yidx = ingot_ir_flat_index(f, y, yi);
  ingot_ir_expr_t* prod =
      ingot_ir_mul(f, ingot_ir_load(f, a, ingot_ir_flat_index(f, a, ai)), ingot_ir_load(f, b, ingot_ir_flat_index(f, b, bi)));
  ingot_ir_stmt_t* st = ingot_ir_store(f, y, yidx, ingot_ir_add(f, ingot_ir_load(f, y, yidx), prod));
  f->body = ingot_ir_for(f, i, MI, ingot_ir_for(f, k, MK, ingot_ir_for(f, j, MJ, st)));
  return f;
}

static bool all_finite(const float* v) {
  for (uint32_t i = 0; i < INGOT_COST_FEATURE_COUNT; ++i)
    if (!isfinite(v[i])) return false;
  return true;
}

static void test_feature_names(void) {
  char name[64];
  ingot_cost_feature_name(INGOT_COST_GLOBAL_FLOPS, name, sizeof(name));
  CHECK(strcmp(name, "flops") == 0);
  ingot_cost_feature_name(INGOT_COST_LOOP_INDEX(2, INGOT_COST_LOOP_EXTENT), name, sizeof(name));
  CHECK(strcmp(name, "loop2.extent") == 0);
  ingot_cost_feature_name(INGOT_COST_BUFFER_INDEX(1, INGOT_COST_BUFFER_REUSE_L1), name, sizeof(name));
  CHECK(strcmp(name, "buffer1.reuse_l1") == 0);
  ingot_cost_feature_name(INGOT_COST_FEATURE_COUNT - 1, name, sizeof(name));
  CHECK(strcmp(name, "buffer3.reuse_all") == 0);
  ingot_cost_feature_name(INGOT_COST_FEATURE_COUNT, name, sizeof(name));
  CHECK(name[0] == '\0');
}

static void test_hand_built(const ingot_target_t* target) {
  float plain[INGOT_COST_FEATURE_COUNT], again[INGOT_COST_FEATURE_COUNT], tiled[INGOT_COST_FEATURE_COUNT];
  ingot_ir_func_t* f = make_matmul();
  CHECK(ingot_cost_features(f, target, plain) == INGOT_OK);
  ingot_ir_func_t* g = make_matmul();
  CHECK(ingot_cost_features(g, target, again) == INGOT_OK);
  CHECK(memcmp(plain, again, sizeof(plain)) == 0); /* deterministic */
  CHECK(all_finite(plain));
  /* Known values. */
  CHECK(plain[INGOT_COST_GLOBAL_DEPTH] == 3);
  CHECK(plain[INGOT_COST_GLOBAL_LOOPS] == 3);
  CHECK(plain[INGOT_COST_GLOBAL_NESTS] == 1);
  CHECK(fabsf(plain[INGOT_COST_GLOBAL_FLOPS] - (float)log2(1.0 + 2.0 * MI * MK * MJ)) < 1e-5f);
  double bytes = 4.0 * (MI * MK + MK * MJ + MI * MJ);
  CHECK(fabsf(plain[INGOT_COST_GLOBAL_BYTES] - (float)log2(1.0 + bytes)) < 1e-5f);
  CHECK(fabsf(plain[INGOT_COST_GLOBAL_INTENSITY] - (float)(2.0 * MI * MK * MJ / bytes)) < 1e-5f);
  CHECK(plain[INGOT_COST_LOOP_INDEX(2, INGOT_COST_LOOP_EXTENT)] == (float)log2(1.0 + MJ));
  CHECK(plain[INGOT_COST_LOOP_INDEX(2, INGOT_COST_LOOP_SERIAL)] == 1);
  CHECK(plain[INGOT_COST_LOOP_INDEX(3, INGOT_COST_LOOP_EXTENT)] == 0); /* absent level */
  /* Buffers by footprint: y (2 KiB), then b (1 KiB), then a (512 B). */
  CHECK(plain[INGOT_COST_BUFFER_INDEX(0, INGOT_COST_BUFFER_IS_OUTPUT)] == 1);
  CHECK(plain[INGOT_COST_BUFFER_INDEX(1, INGOT_COST_BUFFER_IS_OUTPUT)] == 0);
  CHECK(plain[INGOT_COST_BUFFER_INDEX(1, INGOT_COST_BUFFER_STRIDE)] == 1.0f); /* b: contiguous in j */
  CHECK(plain[INGOT_COST_BUFFER_INDEX(2, INGOT_COST_BUFFER_STRIDE)] == 0.0f); /* a: broadcast in j */
  CHECK(plain[INGOT_COST_BUFFER_INDEX(3, INGOT_COST_BUFFER_FOOTPRINT)] == 0); /* absent buffer */
  /* a is read MJ times per element over the kernel. */
  CHECK(fabsf(plain[INGOT_COST_BUFFER_INDEX(2, INGOT_COST_BUFFER_REUSE_ALL)] - (float)log2(1.0 + MJ)) < 1e-5f);
  if (target->l1_bytes >= bytes) /* everything fits in L1: reuse over the whole nest */
    CHECK(fabsf(plain[INGOT_COST_BUFFER_INDEX(2, INGOT_COST_BUFFER_REUSE_L1)] - (float)log2(1.0 + MJ)) < 1e-5f);

  /* Another schedule: j split by 8, the inner vectorized, i parallel. */
  CHECK(ingot_schedule_split(g, "j", 8, "jo", "ji") == INGOT_OK);
  CHECK(ingot_schedule_mark(g, "ji", INGOT_IR_LOOP_VECTORIZED) == INGOT_OK);
  CHECK(ingot_schedule_mark(g, "i", INGOT_IR_LOOP_PARALLEL) == INGOT_OK);
  CHECK(ingot_cost_features(g, target, tiled) == INGOT_OK);
  CHECK(all_finite(tiled));
  CHECK(memcmp(plain, tiled, sizeof(plain)) != 0);
  CHECK(tiled[INGOT_COST_GLOBAL_DEPTH] == 4);
  CHECK(tiled[INGOT_COST_LOOP_INDEX(0, INGOT_COST_LOOP_PARALLEL)] == 1);
  CHECK(tiled[INGOT_COST_LOOP_INDEX(3, INGOT_COST_LOOP_VECTORIZED)] == 1);
  CHECK(tiled[INGOT_COST_LOOP_INDEX(3, INGOT_COST_LOOP_VECTOR_WIDTH)] ==
        (float)(target->vector_bytes / 4 < 8 ? target->vector_bytes / 4 : 8));
  CHECK(tiled[INGOT_COST_GLOBAL_PARALLEL_EXTENT] == (float)log2(1.0 + MI));
  CHECK(tiled[INGOT_COST_GLOBAL_VECTOR_FRACTION] == 1.0f);
  CHECK(plain[INGOT_COST_GLOBAL_VECTOR_FRACTION] == 0.0f);
  /* The same flops either way. */
  CHECK(tiled[INGOT_COST_GLOBAL_FLOPS] == plain[INGOT_COST_GLOBAL_FLOPS]);
  ingot_ir_func_destroy(f);
  ingot_ir_func_destroy(g);

  /* No function: a clear error. */
  CHECK(ingot_cost_features(NULL, target, plain) == INGOT_ERROR_INVALID_ARGUMENT);
}

/* ---- Really lowered kernels: points of their schedule spaces. */
typedef ingot_graph_t* (*graph_fn)(void);

static ingot_graph_t* g_conv(void) {
  ingot_graph_t* g = tg_graph(13);
  int64_t xd[4] = {1, 8, 14, 14}, wd[4] = {16, 8, 3, 3}, bd[1] = {16}, yd[4] = {1, 16, 14, 14};
  uint32_t x = tg_input(g, "x", 4, xd);
  uint32_t w = tg_weight(g, "w", 4, wd, NULL);
  uint32_t b = tg_weight(g, "b", 1, bd, NULL);
  uint32_t y = tg_output(g, "y", 4, yd);
  uint32_t ins[3] = {x, w, b};
  uint32_t node = tg_node(g, INGOT_OP_CONV, ins, 3, &y, 1);
  int64_t k[2] = {3, 3}, pads[4] = {1, 1, 1, 1};
  tg_attr_ints(g, node, "kernel_shape", k, 2);
  tg_attr_ints(g, node, "pads", pads, 4);
  return g;
}

static ingot_graph_t* g_matmul(void) {
  ingot_graph_t* g = tg_graph(13);
  int64_t ad[2] = {24, 19}, bd[2] = {19, 64}, yd[2] = {24, 64};
  uint32_t a = tg_input(g, "a", 2, ad);
  uint32_t b = tg_weight(g, "b", 2, bd, NULL);
  uint32_t y = tg_output(g, "y", 2, yd);
  uint32_t ins[2] = {a, b};
  tg_node(g, INGOT_OP_MATMUL, ins, 2, &y, 1);
  return g;
}

static ingot_graph_t* g_softmax(void) {
  ingot_graph_t* g = tg_graph(13);
  int64_t d[2] = {6, 40};
  uint32_t x = tg_input(g, "x", 2, d);
  uint32_t y = tg_output(g, "y", 2, d);
  uint32_t node = tg_node(g, INGOT_OP_SOFTMAX, &x, 1, &y, 1);
  tg_attr_int(g, node, "axis", -1);
  return g;
}

/* Features of kernel `k` of a fresh lowering of `g` under one knob value
 * (none: defaults); false when the point is refused (a layout knob). */
static bool point_features(const ingot_graph_t* g, uint32_t k, const ingot_target_t* target, const char* tmpl,
                           const char* knob, int64_t value, float* out, uint64_t* out_key) {
  ingot_lowered_t* l = tg_lower(g);
  if (!l) return false;
  ingot_schedule_t s;
  ingot_schedule_init(&s);
  bool ok = ingot_schedule_from_template(&l->kernels[k], target, tmpl, knob ? &knob : NULL, &value, knob ? 1 : 0, &s) ==
            INGOT_OK;
  if (ok) {
    *out_key = ingot_schedule_key(&s);
    CHECK(ingot_schedule_apply(l->kernels[k].func, &s) == INGOT_OK);
    CHECK(ingot_cost_features(l->kernels[k].func, target, out) == INGOT_OK);
  }
  ingot_schedule_deinit(&s);
  ingot_lowered_destroy(l);
  return ok;
}

static void test_lowered(const char* name, graph_fn make, const ingot_target_t* target) {
  ingot_graph_t* g = make();
  ingot_lowered_t* l = tg_lower(g);
  CHECK(l != NULL);
  if (!l) {
    ingot_graph_destroy(g);
    return;
  }
  uint32_t kernel_count = l->kernel_count;
  uint32_t points = 0, distinct = 0, same_features = 0;
  for (uint32_t k = 0; k < kernel_count; ++k) {
    for (uint32_t t = 0; t < ingot_schedule_template_count(); ++t) {
      if (!ingot_schedule_template_applies(&l->kernels[k], target, t)) continue;
      const char* tmpl = ingot_schedule_template_name(t);
      ingot_schedule_space_t space;
      if (ingot_schedule_space(&l->kernels[k], target, tmpl, &space) != INGOT_OK) continue;
      float base[INGOT_COST_FEATURE_COUNT], again[INGOT_COST_FEATURE_COUNT], f[INGOT_COST_FEATURE_COUNT];
      uint64_t base_key = 0, key = 0;
      if (!point_features(g, k, target, tmpl, NULL, 0, base, &base_key)) continue;
      CHECK(all_finite(base));
      CHECK(point_features(g, k, target, tmpl, NULL, 0, again, &key));
      CHECK(memcmp(base, again, sizeof(base)) == 0);
      for (uint32_t n = 0; n < space.knob_count; ++n) {
        for (uint32_t v = 0; v < space.knobs[n].value_count; ++v) {
          if (!point_features(g, k, target, tmpl, space.knobs[n].name, space.knobs[n].values[v], f, &key)) continue;
          points++;
          CHECK(all_finite(f));
          if (key == base_key) continue;
          distinct++;
          if (memcmp(base, f, sizeof(base)) == 0) same_features++;
        }
      }
    }
  }
  printf("%s on %s: %u kernels, %u points, %u other programs, %u of them with the default's features\n", name,
         target->name, kernel_count, points, distinct, same_features);
  /* Most different programs have different features. */
  CHECK(distinct > 0);
  CHECK(same_features * 2 < distinct);
  ingot_lowered_destroy(l);
  ingot_graph_destroy(g);
}

/* ---- The model on synthetic records. */
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static double rnd(void) { /* uniform [0, 1) */
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (double)(g_rng >> 11) / 9007199254740992.0;
}

enum { GROUPS = 40, PER_GROUP = 24, TRAIN_GROUPS = 30 };

/* Time as a function of three features, a per-group scale and 5 % noise. */
static double synthetic_time(const float* f, uint32_t group) {
  double x = 1.5 * f[3] - 1.0 * f[10] + 2.0 * f[INGOT_COST_LOOP_INDEX(1, 0)] * f[INGOT_COST_BUFFER_INDEX(0, 1)];
  return (1.0 + group) * exp(x) * (1.0 + 0.05 * (rnd() - 0.5));
}

static void test_model(void) {
  uint32_t n = GROUPS * PER_GROUP;
  float* feats = malloc(sizeof(float) * INGOT_COST_FEATURE_COUNT * n);
  double* times = malloc(sizeof(double) * n);
  uint32_t* groups = malloc(sizeof(uint32_t) * n);
  for (uint32_t i = 0; i < n; ++i) {
    groups[i] = i / PER_GROUP;
    for (uint32_t j = 0; j < INGOT_COST_FEATURE_COUNT; ++j)
      feats[(size_t)i * INGOT_COST_FEATURE_COUNT + j] = (float)rnd();
    times[i] = synthetic_time(&feats[(size_t)i * INGOT_COST_FEATURE_COUNT], groups[i]);
  }
  uint32_t train = TRAIN_GROUPS * PER_GROUP;

  ingot_cost_model_t* m = NULL;
  CHECK(ingot_cost_model_create(&m) == INGOT_OK);
  float score;
  CHECK(ingot_cost_model_predict(m, feats, 1, &score) == INGOT_ERROR_INVALID_ARGUMENT); /* untrained */
  CHECK(ingot_cost_model_save(m, "/tmp/never.json") == INGOT_ERROR_INVALID_ARGUMENT);
  CHECK(ingot_cost_model_add(m, 0, feats, 0.0) == INGOT_ERROR_INVALID_ARGUMENT);
  CHECK(ingot_cost_model_add(m, 0, feats, NAN) == INGOT_ERROR_INVALID_ARGUMENT);
  /* One record per group: nothing to rank. */
  CHECK(ingot_cost_model_add(m, 0, feats, 1.0) == INGOT_OK);
  CHECK(ingot_cost_model_add(m, 1, feats, 2.0) == INGOT_OK);
  CHECK(ingot_cost_model_train(m, 10) == INGOT_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(ingot_compiler_error(), "nothing to rank") != NULL);
  ingot_cost_model_destroy(m);

  /* Records added out of group order: training sorts them. */
  CHECK(ingot_cost_model_create(&m) == INGOT_OK);
  for (uint32_t i = train; i-- > 0;)
    CHECK(ingot_cost_model_add(m, groups[i], &feats[(size_t)i * INGOT_COST_FEATURE_COUNT], times[i]) == INGOT_OK);
  CHECK(ingot_cost_model_record_count(m) == train);
  CHECK(ingot_cost_model_train(m, 60) == INGOT_OK);
  CHECK(ingot_cost_model_trained(m));
  double acc = 0, train_acc = 0;
  uint64_t pairs = 0;
  CHECK(ingot_cost_model_accuracy(m, groups + train, feats + (size_t)train * INGOT_COST_FEATURE_COUNT, times + train,
                                  n - train, &acc, &pairs) == INGOT_OK);
  CHECK(ingot_cost_model_accuracy(m, groups, feats, times, train, &train_acc, NULL) == INGOT_OK);
  printf("synthetic: held-out pairwise accuracy %.3f on %llu pairs (training records: %.3f)\n", acc,
         (unsigned long long)pairs, train_acc);
  CHECK(pairs == (uint64_t)(GROUPS - TRAIN_GROUPS) * PER_GROUP * (PER_GROUP - 1) / 2);
  CHECK(acc > 0.8);

  /* Deterministic: the same records train the same model. */
  ingot_cost_model_t* m2 = NULL;
  CHECK(ingot_cost_model_create(&m2) == INGOT_OK);
  for (uint32_t i = 0; i < train; ++i)
    CHECK(ingot_cost_model_add(m2, groups[i], &feats[(size_t)i * INGOT_COST_FEATURE_COUNT], times[i]) == INGOT_OK);
  CHECK(ingot_cost_model_train(m2, 60) == INGOT_OK);
  uint32_t held = n - train;
  float* s1 = malloc(sizeof(float) * held);
  float* s2 = malloc(sizeof(float) * held);
  float* s3 = malloc(sizeof(float) * held);
  const float* held_feats = feats + (size_t)train * INGOT_COST_FEATURE_COUNT;
  CHECK(ingot_cost_model_predict(m, held_feats, held, s1) == INGOT_OK);
  CHECK(ingot_cost_model_predict(m2, held_feats, held, s2) == INGOT_OK);
  CHECK(memcmp(s1, s2, sizeof(float) * held) == 0);
  ingot_cost_model_destroy(m2);

  /* Save and load, both formats: identical predictions. */
  char dir[] = "/tmp/ingot_cost_model_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  const char* exts[2] = {"json", "ubj"};
  for (int e = 0; e < 2; ++e) {
    char path[256];
    snprintf(path, sizeof(path), "%s/model.%s", dir, exts[e]);
    CHECK(ingot_cost_model_save(m, path) == INGOT_OK);
    ingot_cost_model_t* loaded = NULL;
    CHECK(ingot_cost_model_load(path, &loaded) == INGOT_OK);
    if (loaded) {
      CHECK(ingot_cost_model_trained(loaded));
      CHECK(ingot_cost_model_record_count(loaded) == 0);
      memset(s3, 0, sizeof(float) * held);
      CHECK(ingot_cost_model_predict(loaded, held_feats, held, s3) == INGOT_OK);
      CHECK(memcmp(s1, s3, sizeof(float) * held) == 0);
      ingot_cost_model_destroy(loaded);
    }
    unlink(path);
  }

  /* Bad files: one clear error naming the path. */
  ingot_cost_model_t* bad = (ingot_cost_model_t*)1;
  char path[256];
  snprintf(path, sizeof(path), "%s/missing.json", dir);
  CHECK(ingot_cost_model_load(path, &bad) == INGOT_ERROR_IO);
  CHECK(bad == NULL);
  CHECK(strstr(ingot_compiler_error(), path) != NULL);
  snprintf(path, sizeof(path), "%s/garbage.json", dir);
  FILE* file = fopen(path, "w");
  CHECK(file != NULL);
  if (file) {
    fputs("{\"this is\": not a model", file);
    fclose(file);
  }
  CHECK(ingot_cost_model_load(path, &bad) == INGOT_ERROR_CORRUPT);
  CHECK(bad == NULL);
  CHECK(strstr(ingot_compiler_error(), path) != NULL);
  printf("garbage model: %s\n", ingot_compiler_error());
  file = fopen(path, "w");
  if (file) {
    fputs("{\"learner\": {}, \"version\": [1, 7, 4]}", file);
    fclose(file);
  }
  CHECK(ingot_cost_model_load(path, &bad) != INGOT_OK);
  CHECK(bad == NULL);
  unlink(path);
  /* A model with another number of features (an older feature list). */
  snprintf(path, sizeof(path), "%s/other.json", dir);
  {
    float data[4 * 3] = {0, 1, 2, 1, 0, 2, 2, 1, 0, 1, 1, 1};
    float labels[4] = {1, 0.5f, 0.25f, 0.75f};
    unsigned sizes[1] = {4};
    DMatrixHandle dm = NULL;
    BoosterHandle b = NULL;
    CHECK(XGDMatrixCreateFromMat_omp(data, 4, 3, NAN, &dm, 1) == 0);
    CHECK(XGDMatrixSetFloatInfo(dm, "label", labels, 4) == 0);
    CHECK(XGDMatrixSetUIntInfo(dm, "group", sizes, 1) == 0);
    CHECK(XGBoosterCreate(&dm, 1, &b) == 0);
    CHECK(XGBoosterSetParam(b, "objective", "rank:pairwise") == 0);
    CHECK(XGBoosterSetParam(b, "nthread", "1") == 0);
    CHECK(XGBoosterUpdateOneIter(b, 0, dm) == 0);
    CHECK(XGBoosterSaveModel(b, path) == 0);
    XGBoosterFree(b);
    XGDMatrixFree(dm);
  }
  CHECK(ingot_cost_model_load(path, &bad) == INGOT_ERROR_VERSION);
  CHECK(bad == NULL);
  CHECK(strstr(ingot_compiler_error(), "has 3 features") != NULL);
  printf("older model: %s\n", ingot_compiler_error());
  unlink(path);
  snprintf(path, sizeof(path), "%s/model.bin", dir);
  CHECK(ingot_cost_model_load(path, &bad) == INGOT_ERROR_INVALID_ARGUMENT);
  CHECK(ingot_cost_model_save(m, path) == INGOT_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(ingot_compiler_error(), ".json or .ubj") != NULL);
  snprintf(path, sizeof(path), "%s/no/such/folder/model.json", dir);
  CHECK(ingot_cost_model_save(m, path) == INGOT_ERROR_IO);
  rmdir(dir);

  free(s1);
  free(s2);
  free(s3);
  ingot_cost_model_destroy(m);
  free(feats);
  free(times);
  free(groups);
}

int main(void) {
  test_feature_names();
  const char* targets[] = {"c -mcpu=x86-64-v3", "llvm x86-64-v4"};
  for (int t = 0; t < 2; ++t) {
    ingot_target_t target;
    if (ingot_target_parse(targets[t], &target) != INGOT_OK) {
      fprintf(stderr, "target '%s': %s\n", targets[t], ingot_compiler_error());
      ++g_failures;
      continue;
    }
    test_hand_built(&target);
    test_lowered("conv", g_conv, &target);
    test_lowered("matmul", g_matmul, &target);
    test_lowered("softmax", g_softmax, &target);
  }
  test_model();
  if (g_failures) {
    fprintf(stderr, "%d check(s) failed\n", g_failures);
    return 1;
  }
  printf("cost model: features and ranking ok\n");
  return 0;
}
