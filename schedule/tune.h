/* The search of `ingot tune`: which schedules of which workloads get
 * measured (DESIGN.md: the search and the cost model live in schedule/,
 * measuring is a callback that driver/ provides, so the flow stays one way).
 *
 * A task is one unique workload of a model on one target, with the spaces
 * of its templates (ingot_schedule_space). A point is one template and one
 * value of each of its knobs. The tuner (ingot_tuner_t):
 *
 *   - measures each task's default schedule first (the reference time);
 *   - shares the trial budget among tasks by expected gain (Ansor's gradient
 *     scheduler, simplified): a task's weight (steps running it) times its
 *     best time so far times its rate of improvement over its last rounds,
 *     with a floor that decays with the rounds it already had, so a task
 *     that stopped improving is chosen less but never starved;
 *   - for the chosen task proposes a batch by evolutionary search: parents
 *     are the task's fastest measured points, children come from mutation
 *     (one knob to another legal value) and crossover (each knob from one
 *     of two parents), over a few generations in which the cost model's
 *     score picks the survivors; the batch is the best-scored children not
 *     yet measured, plus an epsilon share of random points for exploration
 *     (random search: all random). The schedule key (ingot_schedule_key,
 *     from the featurize hook) is the identity: no key is measured twice;
 *   - measures the batch against the task's incumbent (the fastest point so
 *     far) through the measure hook, which times each candidate interleaved
 *     with the incumbent and confirms a speed-up with more looks before it
 *     calls it faster (ingot_tune_result_t.faster). Only a confirmed
 *     candidate becomes the incumbent; the time of any other is never
 *     reported below the incumbent's (so that noise is never a speed-up);
 *   - retrains the cost model (cost_model.h) on every measured record after
 *     each batch, after scoring the new batch with the model trained before
 *     it: that held-out pairwise accuracy is what ingot_tuner_stats reports.
 *
 * Deterministic for one seed and the same measurements. Not thread-safe. */
#ifndef INGOT_SCHEDULE_TUNE_H_
#define INGOT_SCHEDULE_TUNE_H_

#include <stdbool.h>
#include <stdint.h>

#include "schedule/cost_model.h"
#include "schedule/schedule.h"

#define INGOT_TUNE_MAX_SPACES 4

/* One template of a task and an index into each of its knobs' values. */
typedef struct ingot_tune_point_t {
  uint8_t space;
  uint8_t value[INGOT_MAX_KNOBS];
} ingot_tune_point_t;

typedef struct ingot_tune_task_t {
  const char* workload;      /* caller's storage */
  double weight;             /* steps of the model that run it (>= 1) */
  ingot_schedule_space_t spaces[INGOT_TUNE_MAX_SPACES]; /* spaces[0]: the default template */
  uint32_t space_count;
} ingot_tune_task_t;

/* The default point of a task: the default template, every knob at its default. */
void ingot_tune_point_default(const ingot_tune_task_t* task, ingot_tune_point_t* out_point);
/* The template and the knob names and values of a point (names and template
 * in static storage; arrays of INGOT_MAX_KNOBS). */
void ingot_tune_point_knobs(const ingot_tune_task_t* task, const ingot_tune_point_t* point,
                            const char** out_template, const char** out_names, int64_t* out_values,
                            uint32_t* out_count);
/* The point of a task for a template and knob values (knobs not named take
 * their defaults). Fails when the template is not one of the task's or a
 * value is not in its knob's list. */
ingot_status_t ingot_tune_point_from_knobs(const ingot_tune_task_t* task, const char* template_name,
                                           const char* const* names, const int64_t* values, uint32_t count,
                                           ingot_tune_point_t* out_point);

/* What measuring one candidate against a reference gave. */
typedef struct ingot_tune_result_t {
  bool ok;                   /* ran, outputs matched, timed */
  bool faster;               /* confirmed faster than the reference (ok only) */
  double ratio;              /* candidate / reference time (ok only) */
  double ratio_lo, ratio_hi; /* spread (25th / 75th percentile of per-round ratios) */
  double reference_ms;       /* the reference's median time in this measurement */
  char error[320];           /* !ok: "crash: ...", "timeout: ...", "wrong: ...", "compile: ..." */
} ingot_tune_result_t;

/* A measured point as the tuner reports and resumes it. */
typedef struct ingot_tune_record_t {
  uint32_t task;
  ingot_tune_point_t point;
  bool ok;
  bool is_default;           /* the task's default schedule, measured against itself */
  bool best;                 /* became the task's incumbent */
  double time_ms;            /* ok: the estimate the log keeps (never below the incumbent's
                                unless `best`) */
  double ratio, ratio_lo, ratio_hi; /* as measured (against the incumbent of the time) */
  const char* error;         /* !ok */
} ingot_tune_record_t;

typedef struct ingot_tune_hooks_t {
  void* self;
  /* Features (INGOT_COST_FEATURE_COUNT floats) and schedule key of a point.
   * A failure makes the point unusable (never proposed again). */
  ingot_status_t (*featurize)(void* self, uint32_t task, const ingot_tune_point_t* point, float* out_features,
                              uint64_t* out_key);
  /* Measures `count` points of a task, each against `reference` (the
   * task's incumbent; for the default's own measurement, itself). A failure
   * stops the tuning; a candidate that fails is a result with ok = false. */
  ingot_status_t (*measure)(void* self, uint32_t task, const ingot_tune_point_t* reference,
                            const ingot_tune_point_t* points, uint32_t count, ingot_tune_result_t* out_results);
  /* Each new record (not for ones given to ingot_tuner_resume); optional.
   * A failure (say, the log cannot be written) stops the tuning. */
  ingot_status_t (*on_record)(void* self, const ingot_tune_record_t* record);
  /* After each batch; return false to stop (a time limit); optional. */
  bool (*on_batch)(void* self, uint32_t task);
} ingot_tune_hooks_t;

typedef struct ingot_tune_options_t {
  uint32_t trials;           /* measurements in all, the defaults' and earlier runs' included */
  uint32_t batch;            /* candidates per round (8) */
  bool random_search;        /* no cost model: random points only */
  double epsilon;            /* share of random points in a model-guided batch (0.125) */
  uint64_t seed;
  ingot_cost_model_t* model; /* the cost model (the caller's; may hold a loaded booster
                                to warm-start with); NULL: random search */
} ingot_tune_options_t;

typedef struct ingot_tuner_t ingot_tuner_t;

typedef struct ingot_tuner_stats_t {
  uint32_t trials;           /* records, resumed ones included */
  uint32_t resumed;          /* records given by ingot_tuner_resume */
  uint32_t errors;
  uint32_t exhausted;        /* tasks whose space has nothing left to measure */
  double default_ms;         /* sum over tasks of weight x default time */
  double best_ms;            /* ... x best time (tasks without a default: not counted) */
  double accuracy;           /* held-out pairwise ranking accuracy, 0 without pairs */
  uint64_t accuracy_pairs;
} ingot_tuner_stats_t;

/* `tasks` must outlive the tuner. */
ingot_status_t ingot_tuner_create(const ingot_tune_task_t* tasks, uint32_t task_count,
                                  const ingot_tune_options_t* options, const ingot_tune_hooks_t* hooks,
                                  ingot_tuner_t** out_tuner);
void ingot_tuner_destroy(ingot_tuner_t* tuner);
/* Gives back a record of an earlier run (from the log): its key is marked
 * measured, its time trains the model, and the fastest ok record becomes the
 * incumbent. A point whose featurize fails is counted but not used. */
ingot_status_t ingot_tuner_resume(ingot_tuner_t* tuner, const ingot_tune_record_t* record);
/* Runs until the budget is spent, every space is exhausted or on_batch
 * says stop. */
ingot_status_t ingot_tuner_run(ingot_tuner_t* tuner);
void ingot_tuner_stats(const ingot_tuner_t* tuner, ingot_tuner_stats_t* out_stats);
/* The cost model's pairwise ranking accuracy on records it was not trained
 * on, by `folds`-fold cross-validation over every record measured (or
 * resumed): each record's fold follows from its point; a fresh model is
 * trained on the other folds and ranks the pairs of the same workload within
 * the fold whose times differ by at least `min_difference` (0.05: 5 %; 0:
 * every pair with different times; ties in score count half). Measurements
 * here agree to a few percent, so closer pairs are mostly ordered by noise.
 * What ingot_tuner_stats reports is
 * narrower: only the candidates of each round, which the model itself chose
 * as its best guesses, ranked before it was trained on them. */
ingot_status_t ingot_tuner_cross_validate(ingot_tuner_t* tuner, uint32_t folds, double min_difference,
                                          double* out_accuracy, uint64_t* out_pairs);
/* A task's default and best time (ms; negative when not measured). */
void ingot_tuner_task_times(const ingot_tuner_t* tuner, uint32_t task, double* out_default_ms,
                            double* out_best_ms);

#endif /* INGOT_SCHEDULE_TUNE_H_ */
