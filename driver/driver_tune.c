/* Tuning a model (driver.h, "Tuning a model"): the tasks of a model, the
 * featurize and measure hooks of the search (schedule/tune.h), and the log
 * it appends to and resumes from.
 *
 * Tests plant faults in candidates through the environment:
 *   INGOT_TUNE_INJECT="crash=N,hang=N,wrong=N,compile=N"
 * makes the N-th candidate built in this run (from 1; defaults and
 * references are not counted) crash, hang, compute a wrong value or fail to
 * build (driver_internal.h driver_fault_t). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "driver_internal.h"
#include "runtime/ingot.h"
#include "schedule/cost_model.h"
#include "schedule/tune.h"

enum { MAX_VARIANTS = 16 };

/* A graph optimized with some layout knobs for every node they apply to. */
typedef struct variant_t {
  char* layout;              /* "pack=1 panel=32" (the knobs' names and values) */
  ingot_graph_t* graph;
  uint64_t used;
} variant_t;

typedef struct task_extra_t {
  uint32_t node;             /* the first step's node running the workload */
  const char* node_name;
  char default_layout[128];  /* the layout knobs of the default point */
  uint8_t* reference;        /* the bundle of `reference_point` */
  size_t reference_size;
  ingot_tune_point_t reference_point;
  bool has_reference;
  uint32_t trials;
} task_extra_t;

/* The layout knobs a chooser applies to every node they fit. */
typedef struct layout_chooser_t {
  ingot_layout_chooser_t base;
  const char* const* names;
  const int64_t* values;
  uint32_t count;
  const ingot_target_t* target; /* its dot4 default */
} layout_chooser_t;

typedef struct tune_state_t {
  const ingot_driver_tune_options_t* o;
  ingot_driver_options_t compile;       /* the model, one target, nothing else */
  const char* target_text;
  ingot_target_t target;
  ingot_graph_t* base;
  ingot_tune_task_t* tasks;
  task_extra_t* extra;
  uint32_t task_count;
  variant_t variants[MAX_VARIANTS];
  uint32_t variant_cap;
  uint64_t clock;
  int log_fd;
  char cpu_model[256], cpu_features[1024], version[32];
  ingot_tuning_fingerprint_t fingerprint;
  ingot_driver_measure_options_t measure;
  uint32_t fault_at[5];                 /* per driver_fault_t: the candidate it hits (0: none) */
  uint32_t candidates_built;
  double start_s;
  ingot_tuner_t* tuner;
  ingot_driver_tune_report_t* report;
  ingot_status_t hook_status;
} tune_state_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- layouts ---- */

static ingot_status_t choose_layout(ingot_layout_chooser_t* base, const ingot_graph_t* graph, uint32_t node,
                                    const ingot_node_layout_options_t* options, ingot_node_layout_t* out) {
  (void)graph;
  (void)node;
  const layout_chooser_t* c = (const layout_chooser_t*)base;
  *out = options->defaults;
  for (uint32_t i = 0; i < c->count; ++i) {
    int64_t v = c->values[i];
    if (!strcmp(c->names[i], "pack") && options->panel_count > 0) {
      out->pack = v == 1;
    } else if (!strcmp(c->names[i], "panel")) {
      for (uint32_t k = 0; k < options->panel_count; ++k)
        if (options->panels[k] == v) out->panel = (uint32_t)v;
    } else if (!strcmp(c->names[i], "pointwise_matmul") && options->pointwise) {
      out->pointwise_matmul = v == 1;
    } else if (!strcmp(c->names[i], "chains")) {
      for (uint32_t k = 0; k < options->chain_count; ++k)
        if (options->chains[k] == v) out->chains = (uint32_t)v;
    }
  }
  out->dot4 = out->pack && ingot_schedule_target_has_dot4(c->target);
  out->dot_pairs = ingot_schedule_target_dot_pairs(c->target); /* as compile lays it out (template.c) */
  return INGOT_OK;
}

/* The layout knobs of a point as text, and the point's knobs. */
typedef struct point_knobs_t {
  const char* template_name;
  const char* names[INGOT_MAX_KNOBS];
  int64_t values[INGOT_MAX_KNOBS];
  uint32_t count;
  const char* layout_names[INGOT_MAX_KNOBS];
  int64_t layout_values[INGOT_MAX_KNOBS];
  uint32_t layout_count;
  char layout[128];
} point_knobs_t;

static void point_knobs(const ingot_tune_task_t* task, const ingot_tune_point_t* p, point_knobs_t* k) {
  memset(k, 0, sizeof(*k));
  ingot_tune_point_knobs(task, p, &k->template_name, k->names, k->values, &k->count);
  size_t used = 0;
  for (uint32_t i = 0; i < k->count; ++i) {
    if (!ingot_schedule_knob_is_layout(k->names[i])) continue;
    k->layout_names[k->layout_count] = k->names[i];
    k->layout_values[k->layout_count++] = k->values[i];
    int n = snprintf(k->layout + used, sizeof(k->layout) - used, "%s%s=%lld", used ? " " : "", k->names[i],
                     (long long)k->values[i]);
    if (n > 0 && used + (size_t)n < sizeof(k->layout)) used += (size_t)n;
  }
}

/* The graph a point's kernel is lowered from: the base graph for the
 * task's default layout, else a graph optimized with the point's layout
 * knobs (kept, least recently used dropped beyond the cap). */
static ingot_status_t graph_for(tune_state_t* st, uint32_t task, const point_knobs_t* k,
                                const ingot_graph_t** out_graph) {
  if (!strcmp(k->layout, st->extra[task].default_layout)) {
    *out_graph = st->base;
    return INGOT_OK;
  }
  uint32_t free_slot = UINT32_MAX, oldest = 0;
  for (uint32_t v = 0; v < st->variant_cap; ++v) {
    variant_t* var = &st->variants[v];
    if (!var->graph) {
      if (free_slot == UINT32_MAX) free_slot = v;
      continue;
    }
    if (!strcmp(var->layout, k->layout)) {
      var->used = ++st->clock;
      *out_graph = var->graph;
      return INGOT_OK;
    }
    if (var->used < st->variants[oldest].used || !st->variants[oldest].graph) oldest = v;
  }
  uint32_t slot = free_slot != UINT32_MAX ? free_slot : oldest;
  variant_t* var = &st->variants[slot];
  ingot_graph_destroy(var->graph);
  free(var->layout);
  memset(var, 0, sizeof(*var));
  layout_chooser_t chooser = {.base = {.choose = choose_layout},
                              .names = k->layout_names, .values = k->layout_values, .count = k->layout_count,
                              .target = &st->target};
  ingot_status_t s = driver_load_graph_layout(&st->compile, &chooser.base, &var->graph);
  if (s != INGOT_OK) return ingot_fail_prefix(s, "layout %s", k->layout);
  var->layout = ingot_xstrdup(k->layout);
  var->used = ++st->clock;
  *out_graph = var->graph;
  return INGOT_OK;
}

/* The node of task `task` in graph g (the same index when the graphs agree). */
static ingot_status_t node_in(const tune_state_t* st, uint32_t task, const ingot_graph_t* g, uint32_t* out_node) {
  uint32_t n = st->extra[task].node;
  const char* name = st->extra[task].node_name;
  if (n < g->node_count && !g->nodes[n].dead && !strcmp(g->nodes[n].name, name)) {
    *out_node = n;
    return INGOT_OK;
  }
  for (uint32_t i = 0; i < g->node_count; ++i)
    if (!g->nodes[i].dead && !strcmp(g->nodes[i].name, name)) {
      *out_node = i;
      return INGOT_OK;
    }
  return ingot_fail(INGOT_ERROR_INTERNAL, "node '%s' is not in the graph of another layout", name);
}

/* ---- the search's hooks ---- */

/* A point's knobs, the graph of its layout and the task's node in it. */
static ingot_status_t resolve_point(tune_state_t* st, uint32_t task, const ingot_tune_point_t* point,
                                    point_knobs_t* k, const ingot_graph_t** out_graph, uint32_t* out_node) {
  point_knobs(&st->tasks[task], point, k);
  ingot_status_t s = graph_for(st, task, k, out_graph);
  return s ? s : node_in(st, task, *out_graph, out_node);
}

static ingot_status_t featurize(void* self, uint32_t task, const ingot_tune_point_t* point, float* out_features,
                                uint64_t* out_key) {
  tune_state_t* st = self;
  point_knobs_t k;
  const ingot_graph_t* g = NULL;
  uint32_t node = 0;
  ingot_status_t s = resolve_point(st, task, point, &k, &g, &node);
  if (s) return s;
  ingot_lowered_t* lowered = NULL;
  ingot_schedule_t schedule;
  ingot_schedule_init(&schedule);
  if (!(s = ingot_lower_node(g, node, &lowered)) && lowered->kernel_count != 1)
    s = ingot_fail(INGOT_ERROR_INTERNAL, "node '%s' lowers to %u kernels", st->extra[task].node_name,
                   lowered->kernel_count);
  if (!s) {
    ingot_driver_schedule_t request = {.template_name = k.template_name, .knob_names = k.names,
                                       .knob_values = k.values, .knob_count = k.count};
    s = driver_schedule_kernel(&lowered->kernels[0], &st->target, NULL, &request, NULL, &schedule);
  }
  if (!s) s = ingot_cost_features(lowered->kernels[0].func, &st->target, out_features);
  if (!s) *out_key = ingot_schedule_key(&schedule);
  ingot_schedule_deinit(&schedule);
  if (lowered) ingot_lowered_destroy(lowered);
  return s;
}

/* Builds a point's bundle; a failure is the candidate's, kept in `error`. */
static bool build_point(tune_state_t* st, uint32_t task, const ingot_tune_point_t* point, driver_fault_t fault,
                        uint8_t** out_bundle, size_t* out_size, char* error, size_t error_size) {
  point_knobs_t k;
  const ingot_graph_t* g = NULL;
  uint32_t node = 0;
  ingot_status_t s = resolve_point(st, task, point, &k, &g, &node);
  if (!s) {
    ingot_driver_schedule_t request = {.template_name = k.template_name, .knob_names = k.names,
                                       .knob_values = k.values, .knob_count = k.count};
    s = driver_build_kernel_bundle(g, node, &request, st->target_text, st->compile.cc, fault, out_bundle, out_size);
  }
  if (s) snprintf(error, error_size, "compile: %s", ingot_compiler_error());
  return s == INGOT_OK;
}

static driver_fault_t next_fault(tune_state_t* st) {
  uint32_t n = ++st->candidates_built;
  for (int f = DRIVER_FAULT_CRASH; f <= DRIVER_FAULT_COMPILE; ++f)
    if (st->fault_at[f] == n) return (driver_fault_t)f;
  return DRIVER_FAULT_NONE;
}

/* Builds `count` candidates, `jobs` at a time in child processes (each
 * writes its bundles to a folder; a child that dies leaves its candidates
 * failed). Graphs of every layout are made first, in this process. */
static ingot_status_t build_batch(tune_state_t* st, uint32_t task, const ingot_tune_point_t* points, uint32_t count,
                                  uint8_t** bundles, size_t* sizes, ingot_tune_result_t* results) {
  driver_fault_t faults[64];
  for (uint32_t i = 0; i < count; ++i) faults[i] = next_fault(st);
  uint32_t jobs = st->o->jobs ? st->o->jobs : 1;
  if (jobs > count) jobs = count;
  if (jobs <= 1) {
    for (uint32_t i = 0; i < count; ++i)
      build_point(st, task, &points[i], faults[i], &bundles[i], &sizes[i], results[i].error,
                  sizeof(results[i].error));
    return INGOT_OK;
  }
  for (uint32_t i = 0; i < count; ++i) {
    point_knobs_t k;
    point_knobs(&st->tasks[task], &points[i], &k);
    const ingot_graph_t* g;
    ingot_status_t s = graph_for(st, task, &k, &g);
    if (s) return s;
  }
  char dir[] = "/tmp/ingot-tune-XXXXXX";
  int dir_slot; /* a signal removes it and what is in it */
  if (!ingot_cleanup_mkdtemp(dir, &dir_slot))
    return ingot_fail(INGOT_ERROR_IO, "cannot make a temporary folder: %s", strerror(errno));
  pid_t pids[64];
  uint32_t started = 0;
  for (uint32_t j = 0; j < jobs; ++j) {
    pid_t pid = fork();
    if (pid < 0) break;
    if (pid == 0) {
      for (uint32_t i = j; i < count; i += jobs) {
        uint8_t* data = NULL;
        size_t size = 0;
        char error[200] = "";
        char path[64];
        bool ok = build_point(st, task, &points[i], faults[i], &data, &size, error, sizeof error);
        snprintf(path, sizeof path, "%s/%u.%s", dir, i, ok ? "ingot" : "err");
        ingot_file_write_atomic(path, ok ? data : (const void*)error, ok ? size : strlen(error));
        free(data);
      }
      _exit(0);
    }
    pids[started++] = pid;
  }
  for (uint32_t j = 0; j < started; ++j) {
    int status = 0;
    while (waitpid(pids[j], &status, 0) < 0 && errno == EINTR) {
    }
  }
  for (uint32_t i = 0; i < count; ++i) {
    char path[64];
    snprintf(path, sizeof path, "%s/%u.ingot", dir, i);
    if (ingot_file_read(path, &bundles[i], &sizes[i]) == INGOT_OK) {
      unlink(path);
      continue;
    }
    bundles[i] = NULL;
    snprintf(path, sizeof path, "%s/%u.err", dir, i);
    uint8_t* text = NULL;
    size_t size = 0;
    if (ingot_file_read(path, &text, &size) == INGOT_OK) {
      snprintf(results[i].error, sizeof(results[i].error), "%.*s", (int)size, (const char*)text);
      free(text);
      unlink(path);
    } else {
      snprintf(results[i].error, sizeof(results[i].error), "compile: the build process died");
    }
  }
  rmdir(dir);
  ingot_cleanup_drop(dir_slot);
  return INGOT_OK;
}

static void result_from(const ingot_driver_measure_result_t* m, ingot_tune_result_t* r) {
  r->ok = m->kind == INGOT_DRIVER_MEASURE_OK;
  if (!r->ok) {
    snprintf(r->error, sizeof r->error, "%s: %s", ingot_driver_measure_kind_name(m->kind), m->message);
    return;
  }
  r->ratio = m->ratio;
  r->ratio_lo = m->ratio_lo;
  r->ratio_hi = m->ratio_hi;
  r->reference_ms = m->reference_ms;
}

void driver_tune_measure_defaults(ingot_driver_measure_options_t* o) {
  /* short looks: most candidates are not better, and a promising one is
   * looked at four more times, each in a fresh child, before it counts. On
   * a loaded machine one child can favour one of two identical programs by
   * up to 8 % for its whole life (tune.noise saw three looks in a row at
   * 0.92-0.93 with a 3 % margin and two confirmations) */
  if (!o->rounds) o->rounds = 6;
  if (!o->repeats) o->repeats = 3;
  if (!(o->margin > 0)) o->margin = 0.04;
  if (!o->confirmations) o->confirmations = 4;
}

ingot_status_t driver_tune_measure_one(const ingot_driver_measure_options_t* options, const void* candidate,
                                       size_t candidate_size, const void* reference, size_t reference_size,
                                       bool confirm, ingot_tune_result_t* out) {
  ingot_driver_measure_result_t m;
  ingot_status_t s = ingot_driver_measure(candidate, candidate_size, reference, reference_size, options, &m);
  if (s) return s;
  result_from(&m, out);
  if (!confirm || !out->ok || !ingot_driver_measure_is_faster(&m, options->margin)) return INGOT_OK;
  ingot_driver_measure_result_t confirmed;
  bool accepted = false;
  s = ingot_driver_measure_confirm(candidate, candidate_size, reference, reference_size, options, &m, &confirmed,
                                   &accepted);
  if (s) return s;
  if (confirmed.kind != INGOT_DRIVER_MEASURE_OK) {
    result_from(&confirmed, out);
  } else if (accepted) {
    out->faster = true;
    out->ratio = confirmed.ratio;
    out->ratio_lo = confirmed.ratio_lo;
    out->ratio_hi = confirmed.ratio_hi;
  }
  return INGOT_OK;
}

static ingot_status_t measure(void* self, uint32_t task, const ingot_tune_point_t* reference,
                              const ingot_tune_point_t* points, uint32_t count, ingot_tune_result_t* out) {
  tune_state_t* st = self;
  task_extra_t* x = &st->extra[task];
  if (!x->has_reference || memcmp(&x->reference_point, reference, sizeof(*reference)) != 0) {
    free(x->reference);
    x->reference = NULL;
    x->has_reference = false;
    char error[200];
    if (!build_point(st, task, reference, DRIVER_FAULT_NONE, &x->reference, &x->reference_size, error, sizeof error))
      return ingot_fail(INGOT_ERROR_INTERNAL, "workload '%s': the reference schedule does not build: %s",
                        st->tasks[task].workload, error);
    x->reference_point = *reference;
    x->has_reference = true;
  }
  bool self_check = count == 1 && !memcmp(reference, points, sizeof(*reference));
  uint8_t* bundles[64] = {0};
  size_t sizes[64] = {0};
  ingot_status_t s = INGOT_OK;
  if (self_check) {
    bundles[0] = x->reference;
    sizes[0] = x->reference_size;
  } else {
    s = build_batch(st, task, points, count, bundles, sizes, out);
  }
  for (uint32_t i = 0; i < count && s == INGOT_OK; ++i) {
    x->trials++;
    if (!bundles[i]) continue;
    s = driver_tune_measure_one(&st->measure, bundles[i], sizes[i], x->reference, x->reference_size, !self_check,
                                &out[i]);
  }
  if (!self_check)
    for (uint32_t i = 0; i < count; ++i) free(bundles[i]);
  return s;
}

/* Writes one record as a line with one write() (O_APPEND), so a kill leaves
 * at most the last line incomplete. */
static ingot_status_t append_line(tune_state_t* st, const ingot_tuning_entry_t* e) {
  ingot_strbuf_t sb = {0};
  ingot_status_t s = ingot_tuning_log_format_entry(e, &st->fingerprint, &sb);
  if (s == INGOT_OK) {
    ingot_strbuf_append(&sb, "\n");
    ssize_t n = write(st->log_fd, sb.data, sb.length);
    if (n != (ssize_t)sb.length)
      s = ingot_fail(INGOT_ERROR_IO, "tuning log '%s': cannot append: %s", st->o->log_path,
                     n < 0 ? strerror(errno) : "short write");
  }
  ingot_strbuf_free(&sb);
  return s;
}

static ingot_status_t on_record(void* self, const ingot_tune_record_t* r) {
  tune_state_t* st = self;
  point_knobs_t k;
  point_knobs(&st->tasks[r->task], &r->point, &k);
  ingot_tuning_entry_t e;
  memset(&e, 0, sizeof(e));
  e.workload = st->tasks[r->task].workload;
  e.target = st->target.name;
  e.template_name = k.template_name;
  for (uint32_t i = 0; i < k.count; ++i) {
    e.knob_names[i] = k.names[i];
    e.knob_values[i] = k.values[i];
  }
  e.knob_count = k.count;
  e.time_ms = r->time_ms;
  e.is_default = r->is_default;
  e.best = r->best;
  e.error = r->ok ? NULL : r->error;
  e.has_ratio = r->ok;
  e.ratio = r->ratio;
  e.ratio_lo = r->ratio_lo;
  e.ratio_hi = r->ratio_hi;
  return append_line(st, &e);
}

static void report_progress(tune_state_t* st, uint32_t task, bool done) {
  if (!st->o->on_progress) return;
  ingot_tuner_stats_t stats;
  ingot_tuner_stats(st->tuner, &stats);
  ingot_driver_tune_progress_t p = {.trials = stats.trials, .budget = st->report->budget,
                                    .task = task, .task_count = st->task_count,
                                    .workload = task < st->task_count ? st->tasks[task].workload : "",
                                    .default_ms = stats.default_ms, .best_ms = stats.best_ms,
                                    .elapsed_s = now_s() - st->start_s, .done = done};
  st->o->on_progress(st->o->hook_self, &p);
}

static bool on_batch(void* self, uint32_t task) {
  tune_state_t* st = self;
  report_progress(st, task, false);
  return !(st->o->time_limit_s > 0 && now_s() - st->start_s >= st->o->time_limit_s);
}

/* ---- tasks ---- */

static int by_workload(const void* a, const void* b) {
  return strcmp(((const ingot_tune_task_t*)a)->workload, ((const ingot_tune_task_t*)b)->workload);
}

/* Reduces the knobs that act only with more than one thread to their default. */
static void pin_parallel_knobs(ingot_schedule_space_t* space) {
  for (uint32_t k = 0; k < space->knob_count; ++k) {
    ingot_schedule_knob_space_t* knob = &space->knobs[k];
    if (strcmp(knob->name, "threads") != 0 && strcmp(knob->name, "parallel_min_work") != 0) continue;
    knob->values[0] = knob->default_value;
    knob->value_count = 1;
  }
}

/* The unique workloads of the base graph with more than one point, sorted
 * by workload (so that shards are the same on every machine). */
static ingot_status_t make_tasks(tune_state_t* st, ingot_arena_t* arena) {
  ingot_lowered_t* lowered = NULL;
  ingot_status_t s = ingot_lower_graph(st->base, &lowered);
  if (s) return s;
  INGOT_VEC(ingot_tune_task_t) tasks = {0};
  INGOT_VEC(task_extra_t) extra = {0};
  for (uint32_t k = 0; k < lowered->kernel_count && !s; ++k) {
    const ingot_kernel_t* kn = &lowered->kernels[k];
    if (!kn->workload) continue;
    bool seen = false;
    for (size_t t = 0; t < tasks.count && !seen; ++t)
      if (!strcmp(tasks.data[t].workload, kn->workload)) {
        tasks.data[t].weight += 1;
        seen = true;
      }
    if (seen) continue;
    ingot_tune_task_t task;
    memset(&task, 0, sizeof(task));
    task.workload = ingot_arena_strdup(arena, kn->workload);
    task.weight = 1;
    const char* first = ingot_schedule_template_default(kn, &st->target);
    if (!first) continue;
    double points = 0;
    if ((s = ingot_schedule_space(kn, &st->target, first, &task.spaces[0]))) break;
    points += ingot_schedule_space_size(&task.spaces[0]);
    task.space_count = 1;
    for (uint32_t i = 0; i < ingot_schedule_template_count() && task.space_count < INGOT_TUNE_MAX_SPACES; ++i) {
      const char* name = ingot_schedule_template_name(i);
      if (!ingot_schedule_template_applies(kn, &st->target, i) || !strcmp(name, first)) continue;
      if (ingot_schedule_space(kn, &st->target, name, &task.spaces[task.space_count]) != INGOT_OK) continue;
      points += ingot_schedule_space_size(&task.spaces[task.space_count++]);
    }
    if (st->measure.threads <= 1) {
      /* One measuring thread cannot see what the parallel knobs do (and
       * would pick serial code that is slower on more threads): they keep
       * their defaults. */
      points = 0;
      for (uint32_t i = 0; i < task.space_count; ++i) {
        pin_parallel_knobs(&task.spaces[i]);
        points += ingot_schedule_space_size(&task.spaces[i]);
      }
    }
    if (points < 2) continue;
    task_extra_t x;
    memset(&x, 0, sizeof(x));
    x.node = kn->node;
    x.node_name = ingot_arena_strdup(arena, st->base->nodes[kn->node].name);
    INGOT_VEC_PUSH(tasks, task);
    INGOT_VEC_PUSH(extra, x);
  }
  ingot_lowered_destroy(lowered);
  if (s) {
    INGOT_VEC_FREE(tasks);
    INGOT_VEC_FREE(extra);
    return s;
  }
  /* sort by workload, keeping each task's extra beside it */
  uint32_t n = (uint32_t)tasks.count;
  uint32_t* order = ingot_xcalloc(n ? n : 1, sizeof(uint32_t));
  for (uint32_t i = 0; i < n; ++i) order[i] = i;
  for (uint32_t i = 1; i < n; ++i)
    for (uint32_t j = i; j > 0 && by_workload(&tasks.data[order[j - 1]], &tasks.data[order[j]]) > 0; --j) {
      uint32_t tmp = order[j];
      order[j] = order[j - 1];
      order[j - 1] = tmp;
    }
  st->report->model_task_count = n;
  uint32_t shards = st->o->shard_count ? st->o->shard_count : 1;
  st->tasks = INGOT_ARENA_ARRAY(arena, ingot_tune_task_t, n ? n : 1);
  st->extra = INGOT_ARENA_ARRAY(arena, task_extra_t, n ? n : 1);
  st->task_count = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (i % shards != (st->o->shard_count ? st->o->shard_index : 0)) continue;
    st->tasks[st->task_count] = tasks.data[order[i]];
    st->extra[st->task_count++] = extra.data[order[i]];
  }
  free(order);
  INGOT_VEC_FREE(tasks);
  INGOT_VEC_FREE(extra);
  for (uint32_t t = 0; t < st->task_count; ++t) {
    ingot_tune_point_t p;
    ingot_tune_point_default(&st->tasks[t], &p);
    point_knobs_t k;
    point_knobs(&st->tasks[t], &p, &k);
    snprintf(st->extra[t].default_layout, sizeof st->extra[t].default_layout, "%s", k.layout);
  }
  return INGOT_OK;
}

/* ---- the log ---- */

/* Drops an incomplete last line (a run killed while writing). */
static ingot_status_t repair_log(tune_state_t* st) {
  const char* path = st->o->log_path;
  uint8_t* data = NULL;
  size_t size = 0;
  struct stat sb;
  if (stat(path, &sb) != 0) return INGOT_OK; /* made by the first append */
  ingot_status_t s = ingot_file_read(path, &data, &size);
  if (s) return s;
  if (size && data[size - 1] != '\n') {
    size_t keep = size;
    while (keep > 0 && data[keep - 1] != '\n') --keep;
    uint32_t line = 1;
    for (size_t i = 0; i < keep; ++i) line += data[i] == '\n';
    if (truncate(path, (off_t)keep) != 0)
      s = ingot_fail(INGOT_ERROR_IO, "tuning log '%s': cannot drop its incomplete last line: %s", path,
                     strerror(errno));
    st->report->dropped_line = line;
  }
  free(data);
  return s;
}

static ingot_status_t resume(tune_state_t* st) {
  struct stat sb;
  if (stat(st->o->log_path, &sb) != 0) return INGOT_OK;
  ingot_tuning_log_t* log = NULL;
  ingot_status_t s = ingot_tuning_log_load(st->o->log_path, &log);
  if (s) return s;
  for (uint32_t i = 0; i < ingot_tuning_log_count(log) && !s; ++i) {
    ingot_tuning_entry_t e;
    ingot_tuning_log_entry(log, i, &e);
    if (strcmp(e.target, st->target.name) != 0) continue;
    if (e.cpu_model && e.cpu_model[0] && st->cpu_model[0] && strcmp(e.cpu_model, st->cpu_model) != 0) continue;
    uint32_t t = 0;
    while (t < st->task_count && strcmp(st->tasks[t].workload, e.workload) != 0) ++t;
    if (t == st->task_count) continue;
    ingot_tune_record_t r = {.task = t, .ok = !e.error, .is_default = e.is_default, .time_ms = e.time_ms,
                             .error = e.error};
    if (ingot_tune_point_from_knobs(&st->tasks[t], e.template_name, e.knob_names, e.knob_values, e.knob_count,
                                    &r.point) != INGOT_OK)
      continue; /* a record of another space (another Ingot): not ours to resume */
    st->extra[t].trials++;
    s = ingot_tuner_resume(st->tuner, &r);
  }
  ingot_tuning_log_destroy(log);
  return s;
}

static void model_path_for(const char* log_path, char* out, size_t size) {
  size_t n = strlen(log_path);
  const char* exts[] = {".jsonl", ".json", ".log"};
  for (size_t i = 0; i < sizeof exts / sizeof exts[0]; ++i) {
    size_t e = strlen(exts[i]);
    if (n > e && !strcmp(log_path + n - e, exts[i])) {
      n -= e;
      break;
    }
  }
  snprintf(out, size, "%.*s.costmodel.ubj", (int)n, log_path);
}

static void parse_faults(tune_state_t* st) {
  const char* spec = getenv("INGOT_TUNE_INJECT");
  if (!spec) return;
  static const char* const names[] = {"", "crash", "hang", "wrong", "compile"};
  for (int f = DRIVER_FAULT_CRASH; f <= DRIVER_FAULT_COMPILE; ++f) {
    const char* at = strstr(spec, names[f]);
    if (at && at[strlen(names[f])] == '=') st->fault_at[f] = (uint32_t)strtoul(at + strlen(names[f]) + 1, NULL, 10);
  }
}

/* ---- the run ---- */

static ingot_status_t tune(tune_state_t* st, ingot_arena_t* arena, ingot_cost_model_t** model) {
  const ingot_driver_tune_options_t* o = st->o;
  ingot_driver_tune_report_t* rep = st->report;
  ingot_status_t s;
  if ((s = ingot_target_parse(st->target_text, &st->target))) return s;
  snprintf(rep->target, sizeof rep->target, "%s", st->target.name);
  if ((s = ingot_driver_load_graph(&st->compile, &st->base))) return s;
  if ((s = make_tasks(st, arena))) return s;
  rep->task_count = st->task_count;
  rep->tasks = ingot_xcalloc(st->task_count ? st->task_count : 1, sizeof(*rep->tasks));
  uint32_t budget = o->trials ? o->trials : 1000;
  if (o->shard_count > 1 && rep->model_task_count)
    budget = (uint32_t)(((uint64_t)budget * st->task_count + rep->model_task_count - 1) / rep->model_task_count);
  rep->budget = budget;

  char model_path[1024];
  model_path_for(o->log_path, model_path, sizeof model_path);
  if (!o->random_search) {
    struct stat sb;
    if (stat(model_path, &sb) == 0 && ingot_cost_model_load(model_path, model) == INGOT_OK)
      rep->model_loaded = true;
    else if ((s = ingot_cost_model_create(model)))
      return s;
  }
  ingot_tune_options_t topt = {.trials = budget, .batch = o->batch, .random_search = o->random_search,
                               .seed = o->seed, .model = *model};
  ingot_tune_hooks_t hooks = {.self = st, .featurize = featurize, .measure = measure, .on_record = on_record,
                              .on_batch = on_batch};
  if ((s = ingot_tuner_create(st->tasks, st->task_count, &topt, &hooks, &st->tuner))) return s;
  if ((s = repair_log(st))) return s;
  if ((s = resume(st))) return s;
  st->log_fd = open(o->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (st->log_fd < 0)
    return ingot_fail(INGOT_ERROR_IO, "tuning log '%s': cannot open for appending: %s", o->log_path, strerror(errno));
  s = ingot_tuner_run(st->tuner);
  report_progress(st, UINT32_MAX, true);
  if (s) return s;
  if (!o->random_search &&
      ((s = ingot_tuner_cross_validate(st->tuner, 5, 0, &rep->cv_accuracy, &rep->cv_pairs)) ||
       (s = ingot_tuner_cross_validate(st->tuner, 5, 0.05, &rep->cv_accuracy_5, &rep->cv_pairs_5))))
    return s;
  if (*model && ingot_cost_model_trained(*model) && ingot_cost_model_save(*model, model_path) == INGOT_OK)
    snprintf(rep->model_path, sizeof rep->model_path, "%s", model_path);
  return INGOT_OK;
}

ingot_status_t ingot_driver_tune(const ingot_driver_tune_options_t* o, ingot_driver_tune_report_t* out) {
  if (out) memset(out, 0, sizeof(*out));
  if (!o || !out || !o->compile || !o->compile->model_path || !o->log_path)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_driver_tune: no options, model, log or report");
  if (o->shard_count && o->shard_index >= o->shard_count)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "shard %u/%u: the index must be below the count", o->shard_index,
                      o->shard_count);
  if (o->compile->target_count > 1)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "tuning takes one target at a time (%u given)",
                      o->compile->target_count);
  if (o->batch > 64) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "batch %u: at most 64", o->batch);
  if (o->jobs > 64) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "jobs %u: at most 64", o->jobs);
  tune_state_t st;
  memset(&st, 0, sizeof(st));
  st.o = o;
  st.report = out;
  st.log_fd = -1;
  st.start_s = now_s();
  st.compile.model_path = o->compile->model_path;
  st.compile.input_shapes = o->compile->input_shapes;
  st.compile.input_shape_count = o->compile->input_shape_count;
  st.compile.consts = o->compile->consts;
  st.compile.const_count = o->compile->const_count;
  st.compile.cc = o->compile->cc;
  st.target_text = o->compile->target_count ? o->compile->targets[0] : (ingot_codegen_llvm_available() ? "llvm" : "c");
  st.compile.targets = &st.target_text;
  st.compile.target_count = 1;
  snprintf(st.cpu_model, sizeof st.cpu_model, "%s", o->cpu_model ? o->cpu_model : ingot_cpu_model());
  snprintf(st.cpu_features, sizeof st.cpu_features, "%s", ingot_cpu_features());
  snprintf(st.version, sizeof st.version, "%d.%d.%d", INGOT_VERSION_MAJOR, INGOT_VERSION_MINOR, INGOT_VERSION_PATCH);
  st.fingerprint = (ingot_tuning_fingerprint_t){.cpu_model = st.cpu_model, .cpu_features = st.cpu_features,
                                                .ingot_version = st.version};
  st.measure = o->measure;
  driver_tune_measure_defaults(&st.measure);
  /* graphs of other layouts: as many as about 4 GB of weights allow */
  struct stat model_stat;
  double model_bytes = stat(o->compile->model_path, &model_stat) == 0 ? (double)model_stat.st_size : 1e8;
  double cap = 4e9 / (model_bytes > 1 ? model_bytes : 1);
  st.variant_cap = cap >= MAX_VARIANTS ? MAX_VARIANTS : cap < 2 ? 2 : (uint32_t)cap;
  parse_faults(&st);
  ingot_arena_t arena;
  ingot_arena_init(&arena, ingot_allocator_system());
  ingot_cost_model_t* model = NULL;
  ingot_status_t s = tune(&st, &arena, &model);
  if (st.tuner) {
    ingot_tuner_stats_t stats;
    ingot_tuner_stats(st.tuner, &stats);
    out->resumed = stats.resumed;
    out->errors = stats.errors;
    out->default_ms = stats.default_ms;
    out->best_ms = stats.best_ms;
    out->accuracy = stats.accuracy;
    out->accuracy_pairs = stats.accuracy_pairs;
    for (uint32_t t = 0; t < st.task_count; ++t) {
      out->tasks[t].workload = ingot_xstrdup(st.tasks[t].workload);
      out->tasks[t].weight = (uint32_t)st.tasks[t].weight;
      out->tasks[t].trials = st.extra[t].trials;
      ingot_tuner_task_times(st.tuner, t, &out->tasks[t].default_ms, &out->tasks[t].best_ms);
    }
    out->task_count = st.task_count;
    out->elapsed_s = now_s() - st.start_s;
    out->trials = stats.trials;
  } else {
    out->task_count = 0;
  }
  if (st.log_fd >= 0) close(st.log_fd);
  if (st.measure.runner) ingot_driver_measure_runners_release();
  ingot_tuner_destroy(st.tuner);
  ingot_cost_model_destroy(model);
  for (uint32_t t = 0; t < st.task_count; ++t) free(st.extra[t].reference);
  for (uint32_t v = 0; v < MAX_VARIANTS; ++v) {
    ingot_graph_destroy(st.variants[v].graph);
    free(st.variants[v].layout);
  }
  ingot_graph_destroy(st.base);
  ingot_arena_deinit(&arena);
  return s;
}

void ingot_driver_tune_report_free(ingot_driver_tune_report_t* report) {
  if (!report) return;
  for (uint32_t t = 0; t < report->task_count; ++t) free(report->tasks[t].workload);
  free(report->tasks);
  report->tasks = NULL;
  report->task_count = 0;
}
