/* The search of `ingot tune` (tune.h): task scheduler, evolutionary search
 * guided by the cost model, deduplication by schedule key. */
#include "schedule/tune.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum {
  PARENTS = 8,          /* fastest measured points a generation starts from */
  GENERATIONS = 3,
  CHILDREN = 64,        /* per generation */
  WINDOW = 3,           /* rounds the scheduler's improvement rate looks back */
  CACHE_LIMIT = 1 << 15 /* featurized points kept per task */
};

/* ---- small containers ---- */

/* A set of 64-bit keys (open addressing; 0 is stored as a flag). */
typedef struct key_set_t {
  uint64_t* slots;
  uint32_t cap, count;
  bool has_zero;
} key_set_t;

static bool key_set_has(const key_set_t* s, uint64_t k) {
  if (k == 0) return s->has_zero;
  if (!s->cap) return false;
  for (uint32_t i = (uint32_t)(k * 0x9E3779B97F4A7C15ull >> 32) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
    if (s->slots[i] == k) return true;
    if (s->slots[i] == 0) return false;
  }
}

static void key_set_add(key_set_t* s, uint64_t k) {
  if (k == 0) {
    s->has_zero = true;
    return;
  }
  if ((s->count + 1) * 2 > s->cap) {
    key_set_t bigger = {.cap = s->cap ? s->cap * 2 : 64, .has_zero = s->has_zero};
    bigger.slots = ingot_xcalloc(bigger.cap, sizeof(uint64_t));
    for (uint32_t i = 0; i < s->cap; ++i)
      if (s->slots[i]) key_set_add(&bigger, s->slots[i]);
    free(s->slots);
    *s = bigger;
  }
  for (uint32_t i = (uint32_t)(k * 0x9E3779B97F4A7C15ull >> 32) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
    if (s->slots[i] == k) return;
    if (s->slots[i] == 0) {
      s->slots[i] = k;
      ++s->count;
      return;
    }
  }
}

static void key_set_free(key_set_t* s) {
  free(s->slots);
  memset(s, 0, sizeof(*s));
}

/* A featurized point: its schedule key and features (or unusable). */
typedef struct cached_t {
  uint64_t point_hash;
  uint64_t key;
  bool usable;
  float* features;
} cached_t;

typedef struct measured_t {
  ingot_tune_point_t point;
  double time_ms;       /* the raw estimate (ratio x incumbent) */
} measured_t;

typedef struct task_state_t {
  key_set_t measured;    /* schedule keys measured (or proposed) */
  key_set_t unusable;    /* point hashes that do not featurize */
  INGOT_VEC(cached_t*) cache; /* each entry its own allocation: pointers stay valid */
  key_set_t cached;      /* point hashes in cache */
  INGOT_VEC(measured_t) ok;   /* measured, ok */
  INGOT_VEC(double) history;  /* best time after each round */
  ingot_tune_point_t incumbent;
  double incumbent_ms, default_ms;
  bool has_default;
  bool exhausted;
  uint32_t rounds;
} task_state_t;

struct ingot_tuner_t {
  const ingot_tune_task_t* tasks;
  uint32_t task_count;
  ingot_tune_options_t options;
  ingot_tune_hooks_t hooks;
  task_state_t* state;
  uint64_t rng;
  uint32_t trials, resumed, errors;
  uint64_t agree_x2, pairs;    /* held-out accuracy: agreements (ties count 1 of 2) */
  uint32_t model_records;      /* records the model was last trained on */
};

static uint64_t next_random(ingot_tuner_t* t) {
  uint64_t z = (t->rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static uint32_t random_below(ingot_tuner_t* t, uint32_t n) { return n ? (uint32_t)(next_random(t) % n) : 0; }
static double random_unit(ingot_tuner_t* t) { return (double)(next_random(t) >> 11) / 9007199254740992.0; }

/* ---- points ---- */

static uint64_t point_hash(const ingot_tune_task_t* task, const ingot_tune_point_t* p) {
  uint64_t h = 1469598103934665603ull;
  h = (h ^ p->space) * 1099511628211ull;
  for (uint32_t k = 0; k < task->spaces[p->space].knob_count; ++k) h = (h ^ p->value[k]) * 1099511628211ull;
  return h ? h : 1;
}

void ingot_tune_point_default(const ingot_tune_task_t* task, ingot_tune_point_t* out) {
  memset(out, 0, sizeof(*out));
  const ingot_schedule_space_t* sp = &task->spaces[0];
  for (uint32_t k = 0; k < sp->knob_count; ++k)
    for (uint32_t v = 0; v < sp->knobs[k].value_count; ++v)
      if (sp->knobs[k].values[v] == sp->knobs[k].default_value) out->value[k] = (uint8_t)v;
}

void ingot_tune_point_knobs(const ingot_tune_task_t* task, const ingot_tune_point_t* p, const char** out_template,
                            const char** out_names, int64_t* out_values, uint32_t* out_count) {
  const ingot_schedule_space_t* sp = &task->spaces[p->space];
  *out_template = sp->template_name;
  for (uint32_t k = 0; k < sp->knob_count; ++k) {
    out_names[k] = sp->knobs[k].name;
    out_values[k] = sp->knobs[k].values[p->value[k]];
  }
  *out_count = sp->knob_count;
}

ingot_status_t ingot_tune_point_from_knobs(const ingot_tune_task_t* task, const char* template_name,
                                           const char* const* names, const int64_t* values, uint32_t count,
                                           ingot_tune_point_t* out) {
  memset(out, 0, sizeof(*out));
  uint32_t s = 0;
  while (s < task->space_count && strcmp(task->spaces[s].template_name, template_name) != 0) ++s;
  if (s == task->space_count)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "template '%s' does not serve workload '%s'", template_name,
                      task->workload);
  const ingot_schedule_space_t* sp = &task->spaces[s];
  out->space = (uint8_t)s;
  for (uint32_t k = 0; k < sp->knob_count; ++k) {
    int64_t want = sp->knobs[k].default_value;
    for (uint32_t i = 0; i < count; ++i)
      if (!strcmp(names[i], sp->knobs[k].name)) want = values[i];
    uint32_t v = 0;
    while (v < sp->knobs[k].value_count && sp->knobs[k].values[v] != want) ++v;
    if (v == sp->knobs[k].value_count)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "knob '%s' = %lld is not in the space of '%s' for '%s'",
                        sp->knobs[k].name, (long long)want, template_name, task->workload);
    out->value[k] = (uint8_t)v;
  }
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t k = 0;
    while (k < sp->knob_count && strcmp(names[i], sp->knobs[k].name) != 0) ++k;
    if (k == sp->knob_count)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "knob '%s' is not in the space of '%s' for '%s'", names[i],
                        template_name, task->workload);
  }
  return INGOT_OK;
}

static void random_point(ingot_tuner_t* t, const ingot_tune_task_t* task, ingot_tune_point_t* p) {
  memset(p, 0, sizeof(*p));
  p->space = (uint8_t)random_below(t, task->space_count);
  const ingot_schedule_space_t* sp = &task->spaces[p->space];
  for (uint32_t k = 0; k < sp->knob_count; ++k) p->value[k] = (uint8_t)random_below(t, sp->knobs[k].value_count);
}

static void mutate(ingot_tuner_t* t, const ingot_tune_task_t* task, ingot_tune_point_t* p) {
  const ingot_schedule_space_t* sp = &task->spaces[p->space];
  uint32_t movable[INGOT_MAX_KNOBS], n = 0;
  for (uint32_t k = 0; k < sp->knob_count; ++k)
    if (sp->knobs[k].value_count > 1) movable[n++] = k;
  if (!n) return;
  uint32_t k = movable[random_below(t, n)];
  uint32_t count = sp->knobs[k].value_count, v = p->value[k];
  if (random_unit(t) < 0.5) {
    /* a neighbour: powers of two and register counts change gradually */
    v = (v == 0) ? 1 : (v + 1 == count) ? v - 1 : (random_unit(t) < 0.5 ? v - 1 : v + 1);
  } else {
    v = (v + 1 + random_below(t, count - 1)) % count;
  }
  p->value[k] = (uint8_t)v;
}

static void crossover(ingot_tuner_t* t, const ingot_tune_task_t* task, const ingot_tune_point_t* a,
                      const ingot_tune_point_t* b, ingot_tune_point_t* out) {
  *out = *a;
  if (a->space != b->space) return;
  for (uint32_t k = 0; k < task->spaces[a->space].knob_count; ++k)
    if (random_unit(t) < 0.5) out->value[k] = b->value[k];
}

/* Featurizes a point (cached). Returns the cache entry, or NULL when unusable. */
static const cached_t* featurize(ingot_tuner_t* t, uint32_t task_index, const ingot_tune_point_t* p) {
  task_state_t* st = &t->state[task_index];
  uint64_t h = point_hash(&t->tasks[task_index], p);
  if (key_set_has(&st->unusable, h)) return NULL;
  if (key_set_has(&st->cached, h)) {
    for (size_t i = st->cache.count; i-- > 0;)
      if (st->cache.data[i]->point_hash == h) return st->cache.data[i];
  }
  cached_t* c = ingot_xcalloc(1, sizeof(cached_t) + sizeof(float) * INGOT_COST_FEATURE_COUNT);
  c->point_hash = h;
  c->usable = true;
  c->features = (float*)(c + 1);
  if (t->hooks.featurize(t->hooks.self, task_index, p, c->features, &c->key) != INGOT_OK) {
    free(c);
    key_set_add(&st->unusable, h);
    return NULL;
  }
  INGOT_VEC_PUSH(st->cache, c);
  key_set_add(&st->cached, h);
  return c;
}

/* Forgets a task's featurized points when there are many (between batches:
 * no pointer into the cache is held then). */
static void trim_cache(task_state_t* st) {
  if (st->cache.count < CACHE_LIMIT) return;
  for (size_t i = 0; i < st->cache.count; ++i) free(st->cache.data[i]);
  st->cache.count = 0;
  key_set_free(&st->cached);
}

/* ---- create, resume ---- */

ingot_status_t ingot_tuner_create(const ingot_tune_task_t* tasks, uint32_t task_count,
                                  const ingot_tune_options_t* options, const ingot_tune_hooks_t* hooks,
                                  ingot_tuner_t** out_tuner) {
  if (!out_tuner) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_tuner_create: no output");
  *out_tuner = NULL;
  if ((task_count && !tasks) || !options || !hooks || !hooks->featurize || !hooks->measure)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_tuner_create: no tasks, options or hooks");
  for (uint32_t i = 0; i < task_count; ++i)
    if (tasks[i].space_count == 0 || tasks[i].space_count > INGOT_TUNE_MAX_SPACES)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "task '%s': %u spaces", tasks[i].workload,
                        tasks[i].space_count);
  ingot_tuner_t* t = ingot_xcalloc(1, sizeof(*t));
  t->tasks = tasks;
  t->task_count = task_count;
  t->options = *options;
  if (!t->options.batch) t->options.batch = 8;
  if (!(t->options.epsilon > 0)) t->options.epsilon = 0.125;
  if (!t->options.model) t->options.random_search = true;
  t->hooks = *hooks;
  t->rng = options->seed ^ 0x2545F4914F6CDD1Dull;
  t->state = ingot_xcalloc(task_count ? task_count : 1, sizeof(task_state_t));
  for (uint32_t i = 0; i < task_count; ++i) {
    t->state[i].incumbent_ms = t->state[i].default_ms = -1;
    ingot_tune_point_default(&tasks[i], &t->state[i].incumbent);
  }
  *out_tuner = t;
  return INGOT_OK;
}

void ingot_tuner_destroy(ingot_tuner_t* t) {
  if (!t) return;
  for (uint32_t i = 0; i < t->task_count; ++i) {
    task_state_t* st = &t->state[i];
    for (size_t c = 0; c < st->cache.count; ++c) free(st->cache.data[c]);
    INGOT_VEC_FREE(st->cache);
    INGOT_VEC_FREE(st->ok);
    INGOT_VEC_FREE(st->history);
    key_set_free(&st->measured);
    key_set_free(&st->unusable);
    key_set_free(&st->cached);
  }
  free(t->state);
  free(t);
}

static ingot_status_t learn(ingot_tuner_t* t, uint32_t task, const cached_t* c, double time_ms) {
  if (!t->options.model || !c || !(time_ms > 0) || !isfinite(time_ms)) return INGOT_OK;
  return ingot_cost_model_add(t->options.model, task, c->features, time_ms);
}

ingot_status_t ingot_tuner_resume(ingot_tuner_t* t, const ingot_tune_record_t* r) {
  if (!t || !r || r->task >= t->task_count)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_tuner_resume: bad record");
  task_state_t* st = &t->state[r->task];
  ++t->trials;
  ++t->resumed;
  const cached_t* c = featurize(t, r->task, &r->point);
  if (c) key_set_add(&st->measured, c->key);
  if (!r->ok) {
    ++t->errors;
    return INGOT_OK;
  }
  measured_t m = {.point = r->point, .time_ms = r->time_ms};
  INGOT_VEC_PUSH(st->ok, m);
  if (r->is_default && (!st->has_default || r->time_ms < st->default_ms)) {
    st->has_default = true;
    st->default_ms = r->time_ms;
  }
  if (st->incumbent_ms < 0 || r->time_ms < st->incumbent_ms) {
    st->incumbent = r->point;
    st->incumbent_ms = r->time_ms;
  }
  return learn(t, r->task, c, r->time_ms);
}

/* ---- the task scheduler ---- */

static double task_best(const task_state_t* st) { return st->incumbent_ms; }

/* The task with the largest expected gain, or UINT32_MAX when none is left. */
static uint32_t pick_task(const ingot_tuner_t* t) {
  uint32_t best = UINT32_MAX;
  double best_gain = -1;
  for (uint32_t i = 0; i < t->task_count; ++i) {
    const task_state_t* st = &t->state[i];
    if (st->exhausted || !st->has_default) continue;
    double room = t->tasks[i].weight * task_best(st);
    double gain;
    if (st->rounds == 0) {
      gain = 1e30 * (1 + room);  /* every task gets a first round, largest first */
    } else {
      uint32_t w = st->history.count < WINDOW ? (uint32_t)st->history.count : WINDOW;
      double before = st->history.count > w ? st->history.data[st->history.count - 1 - w] : st->default_ms;
      double rate = before > 0 ? (before - task_best(st)) / before / (w ? w : 1) : 0;
      double floor = 0.5 / (st->rounds + 1);
      gain = room * (rate > floor ? rate : floor);
    }
    if (gain > best_gain) {
      best_gain = gain;
      best = i;
    }
  }
  return best;
}

/* ---- proposing a batch ---- */

typedef struct scored_t {
  ingot_tune_point_t point;
  const cached_t* cached;
  float score;
} scored_t;

static int by_score_desc(const void* a, const void* b) {
  float x = ((const scored_t*)a)->score, y = ((const scored_t*)b)->score;
  return x < y ? 1 : x > y ? -1 : 0;
}

static int by_time(const void* a, const void* b) {
  double x = ((const measured_t*)a)->time_ms, y = ((const measured_t*)b)->time_ms;
  return x < y ? -1 : x > y ? 1 : 0;
}

/* Whether a point can join the batch: usable, its key neither measured nor
 * already in the batch. Marks the key taken when it joins. */
static const cached_t* admissible(ingot_tuner_t* t, uint32_t task, const ingot_tune_point_t* p) {
  const cached_t* c = featurize(t, task, p);
  if (!c || key_set_has(&t->state[task].measured, c->key)) return NULL;
  return c;
}

static ingot_status_t score(ingot_tuner_t* t, scored_t* items, uint32_t count) {
  if (!count) return INGOT_OK;
  float* rows = ingot_xmalloc(sizeof(float) * INGOT_COST_FEATURE_COUNT * count);
  float* scores = ingot_xmalloc(sizeof(float) * count);
  for (uint32_t i = 0; i < count; ++i)
    memcpy(rows + (size_t)i * INGOT_COST_FEATURE_COUNT, items[i].cached->features,
           sizeof(float) * INGOT_COST_FEATURE_COUNT);
  ingot_status_t s = ingot_cost_model_predict(t->options.model, rows, count, scores);
  for (uint32_t i = 0; s == INGOT_OK && i < count; ++i) items[i].score = scores[i];
  free(rows);
  free(scores);
  return s;
}

static ingot_status_t propose(ingot_tuner_t* t, uint32_t task_index, uint32_t want, ingot_tune_point_t* out,
                              uint32_t* out_count) {
  const ingot_tune_task_t* task = &t->tasks[task_index];
  task_state_t* st = &t->state[task_index];
  uint32_t n = 0;
  ingot_status_t s = INGOT_OK;
  trim_cache(st);
  bool guided = !t->options.random_search && ingot_cost_model_trained(t->options.model) && st->ok.count > 0;
  if (guided) {
    uint32_t explore = (uint32_t)ceil(t->options.epsilon * want);
    uint32_t exploit = want > explore ? want - explore : 0;
    /* parents: the fastest measured points */
    qsort(st->ok.data, st->ok.count, sizeof(measured_t), by_time);
    ingot_tune_point_t parents[PARENTS];
    uint32_t parent_count = 0;
    for (size_t i = 0; i < st->ok.count && parent_count < PARENTS; ++i) parents[parent_count++] = st->ok.data[i].point;
    INGOT_VEC(scored_t) pool = {0};
    key_set_t in_pool = {0};
    for (uint32_t g = 0; g < GENERATIONS && s == INGOT_OK; ++g) {
      size_t first = pool.count;
      for (uint32_t c = 0; c < CHILDREN; ++c) {
        ingot_tune_point_t child;
        const ingot_tune_point_t* a = &parents[random_below(t, parent_count)];
        double r = random_unit(t);
        if (r < 0.1 && task->space_count > 1) {
          random_point(t, task, &child);
        } else if (r < 0.55 || parent_count < 2) {
          child = *a;
          mutate(t, task, &child);
          if (random_unit(t) < 0.3) mutate(t, task, &child);
        } else {
          crossover(t, task, a, &parents[random_below(t, parent_count)], &child);
          mutate(t, task, &child);
        }
        const cached_t* cached = admissible(t, task_index, &child);
        if (!cached || key_set_has(&in_pool, cached->key)) continue;
        key_set_add(&in_pool, cached->key);
        scored_t item = {.point = child, .cached = cached};
        INGOT_VEC_PUSH(pool, item);
      }
      s = score(t, pool.data + first, (uint32_t)(pool.count - first));
      if (s != INGOT_OK || pool.count == 0) break;
      /* the next generation's parents: the best-scored so far */
      qsort(pool.data, pool.count, sizeof(scored_t), by_score_desc);
      parent_count = 0;
      for (size_t i = 0; i < pool.count && parent_count < PARENTS; ++i) parents[parent_count++] = pool.data[i].point;
    }
    for (size_t i = 0; i < pool.count && n < exploit && s == INGOT_OK; ++i) {
      if (key_set_has(&st->measured, pool.data[i].cached->key)) continue;
      key_set_add(&st->measured, pool.data[i].cached->key);
      out[n++] = pool.data[i].point;
    }
    INGOT_VEC_FREE(pool);
    key_set_free(&in_pool);
  }
  /* random points: exploration, or all of a batch without a model */
  for (uint32_t attempt = 0; n < want && attempt < 64 * want && s == INGOT_OK; ++attempt) {
    ingot_tune_point_t p;
    random_point(t, task, &p);
    const cached_t* c = admissible(t, task_index, &p);
    if (!c) continue;
    key_set_add(&st->measured, c->key);
    out[n++] = p;
  }
  *out_count = n;
  return s;
}

/* ---- measuring a batch ---- */

static ingot_status_t emit(ingot_tuner_t* t, const ingot_tune_record_t* r) {
  ++t->trials;
  if (!r->ok) ++t->errors;
  return t->hooks.on_record ? t->hooks.on_record(t->hooks.self, r) : INGOT_OK;
}

static void record_error(ingot_tune_record_t* r, const ingot_tune_result_t* res) {
  r->ok = false;
  r->error = res->error[0] ? res->error : "failed";
}

static ingot_status_t measure_default(ingot_tuner_t* t, uint32_t task_index) {
  task_state_t* st = &t->state[task_index];
  ingot_tune_point_t p;
  ingot_tune_point_default(&t->tasks[task_index], &p);
  ingot_tune_result_t res;
  memset(&res, 0, sizeof(res));
  ingot_status_t s = t->hooks.measure(t->hooks.self, task_index, &p, &p, 1, &res);
  if (s != INGOT_OK) return s;
  ingot_tune_record_t r = {.task = task_index, .point = p, .is_default = true};
  const cached_t* c = featurize(t, task_index, &p);
  if (c) key_set_add(&st->measured, c->key);
  if (res.ok) {
    r.ok = true;
    r.best = true;
    r.time_ms = res.reference_ms;
    r.ratio = res.ratio;
    r.ratio_lo = res.ratio_lo;
    r.ratio_hi = res.ratio_hi;
    st->has_default = true;
    st->default_ms = st->incumbent_ms = res.reference_ms;
    st->incumbent = p;
    measured_t m = {.point = p, .time_ms = res.reference_ms};
    INGOT_VEC_PUSH(st->ok, m);
    if ((s = learn(t, task_index, c, res.reference_ms))) return s;
  } else {
    /* the default itself fails: nothing to compare against; leave the task */
    record_error(&r, &res);
    st->exhausted = true;
  }
  return emit(t, &r);
}

static void update_accuracy(ingot_tuner_t* t, uint32_t task_index, const ingot_tune_point_t* points,
                            const ingot_tune_result_t* results, uint32_t count, const double* times) {
  if (t->options.random_search || !ingot_cost_model_trained(t->options.model)) return;
  scored_t items[64];
  double item_times[64];
  uint32_t n = 0;
  for (uint32_t i = 0; i < count && n < 64; ++i) {
    if (!results[i].ok) continue;
    const cached_t* c = featurize(t, task_index, &points[i]);
    if (!c) continue;
    items[n].point = points[i];
    items[n].cached = c;
    item_times[n++] = times[i];
  }
  if (n < 2 || score(t, items, n) != INGOT_OK) return;
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t j = i + 1; j < n; ++j) {
      if (item_times[i] == item_times[j]) continue;
      ++t->pairs;
      bool i_faster = item_times[i] < item_times[j];
      if (items[i].score == items[j].score)
        t->agree_x2 += 1;
      else if ((items[i].score > items[j].score) == i_faster)
        t->agree_x2 += 2;
    }
}

static ingot_status_t run_round(ingot_tuner_t* t, uint32_t task_index, uint32_t want) {
  task_state_t* st = &t->state[task_index];
  ingot_tune_point_t points[64];
  ingot_tune_result_t results[64];
  double raw[64];
  if (want > 64) want = 64;
  uint32_t n = 0;
  ingot_status_t s = propose(t, task_index, want, points, &n);
  if (s != INGOT_OK) return s;
  ++st->rounds;
  if (n == 0) {
    st->exhausted = true;
    return INGOT_OK;
  }
  memset(results, 0, sizeof(results[0]) * n);
  ingot_tune_point_t reference = st->incumbent;
  double reference_ms = st->incumbent_ms;
  if ((s = t->hooks.measure(t->hooks.self, task_index, &reference, points, n, results))) return s;
  /* the fastest confirmed candidate becomes the incumbent */
  uint32_t winner = UINT32_MAX;
  for (uint32_t i = 0; i < n; ++i) {
    raw[i] = results[i].ok ? results[i].ratio * reference_ms : 0;
    if (results[i].ok && results[i].faster && (winner == UINT32_MAX || raw[i] < raw[winner])) winner = i;
  }
  update_accuracy(t, task_index, points, results, n, raw);
  for (uint32_t i = 0; i < n && s == INGOT_OK; ++i) {
    ingot_tune_record_t r = {.task = task_index, .point = points[i]};
    if (!results[i].ok) {
      record_error(&r, &results[i]);
    } else {
      r.ok = true;
      r.ratio = results[i].ratio;
      r.ratio_lo = results[i].ratio_lo;
      r.ratio_hi = results[i].ratio_hi;
      r.best = i == winner;
      /* not confirmed faster: never below the incumbent it was measured
       * against (at its time, a tie that the incumbent's "best" mark wins) */
      r.time_ms = results[i].faster || raw[i] > reference_ms ? raw[i] : reference_ms;
      measured_t m = {.point = points[i], .time_ms = raw[i]};
      INGOT_VEC_PUSH(st->ok, m);
      s = learn(t, task_index, featurize(t, task_index, &points[i]), raw[i]);
    }
    if (s == INGOT_OK) s = emit(t, &r);
  }
  if (s == INGOT_OK && winner != UINT32_MAX) {
    st->incumbent = points[winner];
    st->incumbent_ms = raw[winner];
  }
  INGOT_VEC_PUSH(st->history, st->incumbent_ms);
  return s;
}

/* Retrains when new records came in and some group can be ranked. */
static void retrain(ingot_tuner_t* t) {
  if (t->options.random_search || !t->options.model) return;
  uint32_t records = ingot_cost_model_record_count(t->options.model);
  if (records == t->model_records || records < 4) return;
  /* a failure (no group with two different times yet) keeps the old model,
   * and its message is no error of the run */
  if (ingot_cost_model_train(t->options.model, 50) == INGOT_OK) t->model_records = records;
  else ingot_compiler_error_clear();
}

ingot_status_t ingot_tuner_run(ingot_tuner_t* t) {
  if (!t) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_tuner_run: no tuner");
  ingot_status_t s = INGOT_OK;
  bool stop = false;
  /* every task's default first: the reference of its search */
  for (uint32_t i = 0; i < t->task_count && !stop && s == INGOT_OK; ++i) {
    if (t->state[i].has_default || t->state[i].exhausted) continue;
    if (t->trials >= t->options.trials) break;
    s = measure_default(t, i);
    if (s == INGOT_OK && t->hooks.on_batch) stop = !t->hooks.on_batch(t->hooks.self, i);
  }
  if (s != INGOT_OK) return s; /* with its own message */
  retrain(t);
  while (!stop && s == INGOT_OK && t->trials < t->options.trials) {
    uint32_t task = pick_task(t);
    if (task == UINT32_MAX) break;
    uint32_t left = t->options.trials - t->trials;
    s = run_round(t, task, left < t->options.batch ? left : t->options.batch);
    if (s != INGOT_OK) break;
    retrain(t);
    if (t->hooks.on_batch) stop = !t->hooks.on_batch(t->hooks.self, task);
  }
  return s;
}

void ingot_tuner_stats(const ingot_tuner_t* t, ingot_tuner_stats_t* out) {
  memset(out, 0, sizeof(*out));
  out->trials = t->trials;
  out->resumed = t->resumed;
  out->errors = t->errors;
  for (uint32_t i = 0; i < t->task_count; ++i) {
    const task_state_t* st = &t->state[i];
    if (st->exhausted) ++out->exhausted;
    if (!st->has_default) continue;
    out->default_ms += t->tasks[i].weight * st->default_ms;
    out->best_ms += t->tasks[i].weight * st->incumbent_ms;
  }
  out->accuracy_pairs = t->pairs;
  out->accuracy = t->pairs ? (double)t->agree_x2 / (2.0 * (double)t->pairs) : 0;
}

void ingot_tuner_task_times(const ingot_tuner_t* t, uint32_t task, double* out_default_ms, double* out_best_ms) {
  *out_default_ms = *out_best_ms = -1;
  if (!t || task >= t->task_count || !t->state[task].has_default) return;
  *out_default_ms = t->state[task].default_ms;
  *out_best_ms = t->state[task].incumbent_ms;
}

ingot_status_t ingot_tuner_cross_validate(ingot_tuner_t* t, uint32_t folds, double min_difference,
                                          double* out_accuracy, uint64_t* out_pairs) {
  *out_accuracy = 0;
  *out_pairs = 0;
  if (!t || folds < 2) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_tuner_cross_validate: bad arguments");
  /* every measured record with its features, and its fold (from its point, so
   * that the split does not depend on the order of measuring) */
  INGOT_VEC(uint32_t) groups = {0};
  INGOT_VEC(uint32_t) fold_of = {0};
  INGOT_VEC(double) times = {0};
  INGOT_VEC(float) rows = {0};
  for (uint32_t task = 0; task < t->task_count; ++task) {
    task_state_t* st = &t->state[task];
    trim_cache(st);
    for (size_t i = 0; i < st->ok.count; ++i) {
      const cached_t* c = featurize(t, task, &st->ok.data[i].point);
      if (!c || !(st->ok.data[i].time_ms > 0)) continue;
      INGOT_VEC_PUSH(groups, task);
      INGOT_VEC_PUSH(fold_of, (uint32_t)((point_hash(&t->tasks[task], &st->ok.data[i].point) >> 17) % folds));
      INGOT_VEC_PUSH(times, st->ok.data[i].time_ms);
      for (uint32_t f = 0; f < INGOT_COST_FEATURE_COUNT; ++f) INGOT_VEC_PUSH(rows, c->features[f]);
    }
  }
  ingot_status_t s = INGOT_OK;
  double agree = 0;
  uint64_t pairs = 0;
  uint32_t n = (uint32_t)groups.count;
  uint32_t* test_groups = ingot_xcalloc(n ? n : 1, sizeof(uint32_t));
  double* test_times = ingot_xcalloc(n ? n : 1, sizeof(double));
  float* test_rows = ingot_xcalloc((size_t)(n ? n : 1) * INGOT_COST_FEATURE_COUNT, sizeof(float));
  float* test_scores = ingot_xcalloc(n ? n : 1, sizeof(float));
  for (uint32_t f = 0; f < folds && s == INGOT_OK; ++f) {
    ingot_cost_model_t* model = NULL;
    if ((s = ingot_cost_model_create(&model))) break;
    uint32_t m = 0;
    for (uint32_t i = 0; i < n && s == INGOT_OK; ++i) {
      const float* row = rows.data + (size_t)i * INGOT_COST_FEATURE_COUNT;
      if (fold_of.data[i] != f) {
        s = ingot_cost_model_add(model, groups.data[i], row, times.data[i]);
        continue;
      }
      test_groups[m] = groups.data[i];
      test_times[m] = times.data[i];
      memcpy(test_rows + (size_t)m * INGOT_COST_FEATURE_COUNT, row, sizeof(float) * INGOT_COST_FEATURE_COUNT);
      ++m;
    }
    /* a fold whose training part ranks nothing is left out */
    if (s == INGOT_OK && m > 1 && ingot_cost_model_train(model, 50) == INGOT_OK &&
        ingot_cost_model_predict(model, test_rows, m, test_scores) == INGOT_OK) {
      for (uint32_t i = 0; i < m; ++i)
        for (uint32_t j = i + 1; j < m; ++j) {
          if (test_groups[i] != test_groups[j] || test_times[i] == test_times[j]) continue;
          double lo = test_times[i] < test_times[j] ? test_times[i] : test_times[j];
          double hi = test_times[i] < test_times[j] ? test_times[j] : test_times[i];
          if (hi < lo * (1 + min_difference)) continue;
          bool i_faster = test_times[i] < test_times[j];
          agree += test_scores[i] == test_scores[j] ? 0.5 : (test_scores[i] > test_scores[j]) == i_faster;
          ++pairs;
        }
    }
    ingot_cost_model_destroy(model);
  }
  free(test_groups);
  free(test_times);
  free(test_rows);
  free(test_scores);
  INGOT_VEC_FREE(groups);
  INGOT_VEC_FREE(fold_of);
  INGOT_VEC_FREE(times);
  INGOT_VEC_FREE(rows);
  if (s == INGOT_OK && pairs) {
    *out_accuracy = agree / (double)pairs;
    *out_pairs = pairs;
  }
  return s;
}
