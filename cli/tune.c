/* `ingot tune`: searches each unique kernel's schedule space of a model,
 * measuring candidates through the runtime, and appends what it measured to
 * a tuning log that `ingot compile --tuning-log` reads (driver.h, "Tuning a
 * model"; the search is schedule/tune.h's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "cli.h"
#include "driver/driver.h"

#define TUNE_MAX_SHAPES 32

static void tune_usage(FILE* out) {
  fprintf(out,
          "usage: ingot tune MODEL.onnx -o LOG.jsonl [options]\n"
          "\n"
          "Searches the schedules of each unique kernel of the model for the target,\n"
          "times candidates against the best so far in child processes (a crash, a\n"
          "hang, a wrong result or a build failure is recorded, never fatal), and\n"
          "appends every measurement to LOG as it goes. Run it again to continue: what\n"
          "LOG holds counts towards the budget. The cost model is saved beside LOG\n"
          "(LOG.costmodel.ubj) and warm-starts the next run.\n"
          "\n"
          "options:\n"
          "  -o, --output LOG         the tuning log to append to (required)\n"
          "  --target TARGET          the one target to tune for (as for compile; default:\n"
          "                           llvm, this machine's level)\n"
          "  --input-shape NAME=DIMS  fix a graph input's shape (repeat)\n"
          "  --trials N               measurements for the whole model, earlier runs'\n"
          "                           included (default 1000)\n"
          "  --time-limit SECONDS     stop after the batch that passes it, keeping what was found\n"
          "  --jobs N                 candidates built at once, in child processes (default 1)\n"
          "  --batch N                candidates measured per round (default 8)\n"
          "  --shard I/N              tune only share I of N of the tasks (0 <= I < N); the\n"
          "                           shards' logs join with 'ingot log merge'\n"
          "  --search model|random    candidates chosen by the cost model (default) or at random\n"
          "  --seed N                 the search's random seed (default 1)\n"
          "  --threads N              session threads while timing, 1 to %u (default 1: the CPU time of\n"
          "                           the running thread, steady on a busy machine; the knobs that\n"
          "                           act only with more threads, threads and parallel_min_work,\n"
          "                           keep their defaults; N > 1 tunes them, by the wall clock)\n"
          "  --timeout SECONDS        limit of one measurement, loading included (default 30)\n"
          "  --runner ssh://USER@HOST[:PORT]\n"
          "                           measure on another machine: copies ingot-measure (beside\n"
          "                           this ingot) and the candidates there (INGOT_SSH_OPTIONS:\n"
          "                           extra ssh options); default: here, in child processes\n"
          "  --curve FILE.csv         write trials, elapsed seconds, default and best estimated\n"
          "                           kernel time (ms) after each round\n"
          "  --cc COMPILER            the C compiler for target c\n"
          "  -q, --quiet              print nothing but errors\n"
          "\n"
          "Progress: one updating line on a terminal, a line per round otherwise.\n",
          INGOT_CLI_THREADS_MAX);
}

typedef struct progress_t {
  bool quiet;
  bool tty;
  bool started;
  uint32_t first_trials;
  FILE* curve;
} progress_t;

static void print_duration(char* out, size_t size, double s) {
  long t = s > 0 ? (long)(s + 0.5) : 0;
  if (t >= 3600)
    snprintf(out, size, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else
    snprintf(out, size, "%ld:%02ld", t / 60, t % 60);
}

static void on_progress(void* self, const ingot_driver_tune_progress_t* p) {
  progress_t* pr = self;
  if (!pr->started) {
    pr->started = true;
    pr->first_trials = p->trials;
  }
  if (pr->curve && !p->done)
    fprintf(pr->curve, "%u,%.2f,%.6f,%.6f\n", p->trials, p->elapsed_s, p->default_ms, p->best_ms);
  if (pr->quiet) return;
  char elapsed[32], left[32] = "?";
  print_duration(elapsed, sizeof elapsed, p->elapsed_s);
  uint32_t done_here = p->trials - pr->first_trials;
  if (done_here > 0 && p->budget > p->trials)
    print_duration(left, sizeof left, p->elapsed_s / done_here * (p->budget - p->trials));
  else if (p->budget <= p->trials)
    snprintf(left, sizeof left, "0:00");
  double speedup = p->best_ms > 0 ? p->default_ms / p->best_ms : 1.0;
  if (p->done) {
    if (pr->tty) fputc('\n', stderr);
    return;
  }
  char task[48];
  snprintf(task, sizeof task, "%.40s%s", p->workload, strlen(p->workload) > 40 ? "..." : "");
  fprintf(stderr, "%s[%4u/%u trials] best %.3fx | task %u/%u %-43s | %s elapsed, ~%s left%s", pr->tty ? "\r" : "",
          p->trials, p->budget, speedup, p->task + 1, p->task_count, task, elapsed, left, pr->tty ? "\033[K" : "\n");
  fflush(stderr);
}

static bool parse_shard(const char* text, uint32_t* out_index, uint32_t* out_count) {
  const char* slash = strchr(text, '/');
  if (!slash) return false;
  char first[32];
  size_t n = (size_t)(slash - text);
  if (n == 0 || n >= sizeof first) return false;
  memcpy(first, text, n);
  first[n] = '\0';
  int64_t i = 0, c = 0;
  if (!ingot_cli_parse_int(first, 0, 1 << 20, &i) || !ingot_cli_parse_int(slash + 1, 1, 1 << 20, &c) || i >= c)
    return false;
  *out_index = (uint32_t)i;
  *out_count = (uint32_t)c;
  return true;
}

int ingot_cli_tune(int argc, char** argv) {
  const char* model = NULL;
  const char* log = NULL;
  const char* target = NULL;
  char target_text[INGOT_CLI_TARGET_BYTES]; /* the target joined with its unquoted options */
  const char* curve_path = NULL;
  const char* shapes[TUNE_MAX_SHAPES];
  uint32_t shape_count = 0;
  ingot_driver_options_t compile;
  memset(&compile, 0, sizeof(compile));
  ingot_driver_tune_options_t o;
  memset(&o, 0, sizeof(o));
  o.seed = 1;
  progress_t progress = {.tty = isatty(2) != 0};
  enum {
    OPT_TARGET = 256, OPT_INPUT_SHAPE, OPT_TRIALS, OPT_TIME_LIMIT, OPT_TIMEOUT, OPT_JOBS, OPT_BATCH, OPT_THREADS,
    OPT_SEED, OPT_SHARD, OPT_SEARCH, OPT_RUNNER, OPT_CURVE, OPT_CC,
  };
  static const struct option longs[] = {
      {"help", no_argument, NULL, 'h'},
      {"quiet", no_argument, NULL, 'q'},
      {"output", required_argument, NULL, 'o'},
      {"target", required_argument, NULL, OPT_TARGET},
      {"input-shape", required_argument, NULL, OPT_INPUT_SHAPE},
      {"trials", required_argument, NULL, OPT_TRIALS},
      {"time-limit", required_argument, NULL, OPT_TIME_LIMIT},
      {"timeout", required_argument, NULL, OPT_TIMEOUT},
      {"jobs", required_argument, NULL, OPT_JOBS},
      {"batch", required_argument, NULL, OPT_BATCH},
      {"threads", required_argument, NULL, OPT_THREADS},
      {"seed", required_argument, NULL, OPT_SEED},
      {"shard", required_argument, NULL, OPT_SHARD},
      {"search", required_argument, NULL, OPT_SEARCH},
      {"runner", required_argument, NULL, OPT_RUNNER},
      {"curve", required_argument, NULL, OPT_CURVE},
      {"cc", required_argument, NULL, OPT_CC},
      {NULL, 0, NULL, 0},
  };
  ingot_cli_args_t args;
  ingot_cli_args_init(&args, "tune", argc, argv, "hqo:", longs);
  for (int c; (c = ingot_cli_args_next(&args)) != INGOT_CLI_ARG_END;) {
    const char* v = args.value;
    int64_t n = 0;
    int rc = 0;
    char* end = NULL;
    double seconds = 0;
    switch (c) {
      case INGOT_CLI_ARG_BAD: return INGOT_CLI_EXIT_USAGE;
      case 'h': tune_usage(stdout); return INGOT_CLI_EXIT_OK;
      case 'q': progress.quiet = true; break;
      case 'o':
        if (!*v) return ingot_cli_usage_error("tune", "option '--output' needs a value%s", "");
        log = v;
        break;
      case OPT_TARGET:
        if (target) return ingot_cli_usage_error("tune", "one --target at a time ('%s' and '%s')", target, v);
        target = ingot_cli_args_target(&args, target_text, sizeof target_text);
        if (!target) return ingot_cli_usage_error("tune", "target '%s ...': too long", v);
        if ((rc = ingot_cli_check_target("tune", target))) return rc;
        break;
      case OPT_INPUT_SHAPE:
        if (shape_count == TUNE_MAX_SHAPES) return ingot_cli_usage_error("tune", "at most %d --input-shape", TUNE_MAX_SHAPES);
        if ((rc = ingot_cli_check_input_shape("tune", v))) return rc;
        shapes[shape_count++] = v;
        break;
      case OPT_TRIALS:
        if (!ingot_cli_parse_int(v, 1, 100000000, &n))
          return ingot_cli_usage_error("tune", "--trials needs a whole number from 1 to 100000000, not '%s'", v);
        o.trials = (uint32_t)n;
        break;
      case OPT_TIME_LIMIT:
      case OPT_TIMEOUT:
        seconds = strtod(v, &end);
        if (end == v || *end || !(seconds > 0) || seconds > 1e9)
          return ingot_cli_usage_error("tune", "--%s needs seconds above 0, not '%s'",
                                       c == OPT_TIMEOUT ? "timeout" : "time-limit", v);
        if (c == OPT_TIMEOUT) o.measure.timeout_s = seconds;
        else o.time_limit_s = seconds;
        break;
      case OPT_JOBS:
        if (!ingot_cli_parse_int(v, 1, 64, &n))
          return ingot_cli_usage_error("tune", "--jobs needs a whole number from 1 to 64, not '%s'", v);
        o.jobs = (uint32_t)n;
        break;
      case OPT_BATCH:
        if (!ingot_cli_parse_int(v, 1, 64, &n))
          return ingot_cli_usage_error("tune", "--batch needs a whole number from 1 to 64, not '%s'", v);
        o.batch = (uint32_t)n;
        break;
      case OPT_THREADS:
        if (!ingot_cli_parse_int(v, 1, INGOT_CLI_THREADS_MAX, &n))
          return ingot_cli_usage_error("tune", "--threads needs a whole number from 1 to %u, not '%s'",
                                       INGOT_CLI_THREADS_MAX, v);
        o.measure.threads = (uint32_t)n;
        break;
      case OPT_SEED:
        if (!ingot_cli_parse_int(v, 0, INT64_MAX, &n))
          return ingot_cli_usage_error("tune", "--seed needs a whole number, not '%s'", v);
        o.seed = (uint64_t)n;
        break;
      case OPT_SHARD:
        if (!parse_shard(v, &o.shard_index, &o.shard_count))
          return ingot_cli_usage_error("tune", "--shard needs I/N with 0 <= I < N, not '%s'", v);
        break;
      case OPT_SEARCH:
        if (strcmp(v, "model") != 0 && strcmp(v, "random") != 0)
          return ingot_cli_usage_error("tune", "--search is 'model' or 'random', not '%s'", v);
        o.random_search = !strcmp(v, "random");
        break;
      case OPT_RUNNER: {
        ingot_status_t st = ingot_driver_measure_runner_check(v);
        if (st == INGOT_ERROR_INVALID_ARGUMENT) return ingot_cli_usage_error("tune", "%s", ingot_compiler_error());
        if (st) return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "%s", ingot_compiler_error());
        o.measure.runner = v;
        break;
      }
      case OPT_CURVE:
        if (!*v) return ingot_cli_usage_error("tune", "option '--curve' needs a value%s", "");
        curve_path = v;
        break;
      case OPT_CC:
        if (!*v) return ingot_cli_usage_error("tune", "option '--cc' needs a value%s", "");
        compile.cc = v;
        break;
      case INGOT_CLI_ARG_POSITIONAL:
        if (model) return ingot_cli_usage_error("tune", "one model at a time ('%s' is a second)", v);
        model = v;
        break;
      default: return ingot_cli_usage_error("tune", "unhandled option (a bug)%s", "");
    }
  }
  if (!model) return ingot_cli_usage_error("tune", "no model given%s", "");
  if (!log) return ingot_cli_usage_error("tune", "no tuning log given: add -o LOG.jsonl%s", "");

  compile.model_path = model;
  compile.input_shapes = shapes;
  compile.input_shape_count = shape_count;
  compile.targets = target ? &target : NULL;
  compile.target_count = target ? 1 : 0;
  o.compile = &compile;
  o.log_path = log;
  o.hook_self = &progress;
  o.on_progress = on_progress;
  if (curve_path) {
    progress.curve = fopen(curve_path, "w");
    if (!progress.curve)
      return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "cannot write '%s'", curve_path);
    fprintf(progress.curve, "trials,elapsed_s,default_ms,best_ms\n");
  }
  ingot_compiler_error_clear();
  ingot_driver_tune_report_t r;
  ingot_status_t s = ingot_driver_tune(&o, &r);
  if (progress.curve) fclose(progress.curve);
  if (s != INGOT_OK) {
    ingot_driver_tune_report_free(&r);
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "%s", ingot_compiler_error());
  }
  if (!progress.quiet) {
    if (r.dropped_line) ingot_cli_note("dropped the incomplete line %u of '%s' (an interrupted run)", r.dropped_line, log);
    printf("tuned %u workload%s of %u for %s%s: %u trials (%u from the log), %u failed, %.1f s\n", r.task_count,
           r.task_count == 1 ? "" : "s", r.model_task_count, r.target,
           o.shard_count > 1 ? " (a shard)" : "", r.trials, r.resumed, r.errors, r.elapsed_s);
    for (uint32_t t = 0; t < r.task_count; ++t) {
      const ingot_driver_tune_task_report_t* k = &r.tasks[t];
      if (k->default_ms < 0) {
        printf("  %-64.64s x%-2u %4u trials  not measured\n", k->workload, k->weight, k->trials);
        continue;
      }
      printf("  %-64.64s x%-2u %4u trials  %9.4f -> %9.4f ms  %.3fx\n", k->workload, k->weight, k->trials,
             k->default_ms, k->best_ms, k->default_ms / k->best_ms);
    }
    if (r.best_ms > 0)
      printf("kernel time (estimated, sum over steps): %.3f ms with the defaults -> %.3f ms tuned (%.3fx)\n",
             r.default_ms, r.best_ms, r.default_ms / r.best_ms);
    if (r.cv_pairs)
      printf("cost model: pairwise ranking accuracy %.3f on %llu held-out pairs (5-fold over the records), "
             "%.3f on the %llu whose times differ by 5 %% or more\n",
             r.cv_accuracy, (unsigned long long)r.cv_pairs, r.cv_accuracy_5, (unsigned long long)r.cv_pairs_5);
    if (r.accuracy_pairs)
      printf("cost model: %.3f on %llu pairs of each round's candidates, ranked before training on them%s\n",
             r.accuracy, (unsigned long long)r.accuracy_pairs, r.model_loaded ? " (warm-started)" : "");
    if (r.model_path[0]) printf("cost model saved: %s\n", r.model_path);
    printf("log: %s\n", log);
  }
  ingot_driver_tune_report_free(&r);
  return INGOT_CLI_EXIT_OK;
}
