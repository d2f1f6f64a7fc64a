/* Measuring a candidate bundle against a reference in a child process
 * (driver.h, "Measuring a candidate bundle against a reference").
 *
 * The parent forks one child per measurement and reads from a pipe:
 *   phase bytes   one byte as the child enters each phase (PHASE_*), so that a
 *                 child that dies or hangs is reported with what it was doing;
 *   PHASE_DONE    then the ingot_measure_report_t, and the child exits.
 * What the child runs is measure_core.c, the same code as the run-only
 * program ingot-measure; with an ssh runner (options->runner) that program
 * runs on another machine instead (measure_ssh.c).
 * The child touches nothing of the parent's but memory it inherited: it opens
 * both bundles from the bytes, runs, writes, and leaves with _exit (no atexit
 * handlers, no flushing of the parent's stdio buffers). */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "driver/driver.h"
#include "measure_core.h"
#include "measure_ssh.h"
#include "runtime/ingot.h"

/* The child's pipe: a phase byte (INGOT_MEASURE_PHASE_*) as it enters each
 * phase, then PHASE_DONE and the report. */
enum { PHASE_DONE = 0xff };

_Static_assert(INGOT_DRIVER_MEASURE_MAX_ROUNDS == INGOT_MEASURE_MAX_ROUNDS, "one limit on rounds");
_Static_assert(INGOT_DRIVER_MEASURE_OK == (int)INGOT_MEASURE_OK && INGOT_DRIVER_MEASURE_LOAD_FAILED ==
                   (int)INGOT_MEASURE_LOAD_FAILED && INGOT_DRIVER_MEASURE_RUN_FAILED == (int)INGOT_MEASURE_RUN_FAILED &&
                   INGOT_DRIVER_MEASURE_CRASH == (int)INGOT_MEASURE_CRASH &&
                   INGOT_DRIVER_MEASURE_TIMEOUT == (int)INGOT_MEASURE_TIMEOUT &&
                   INGOT_DRIVER_MEASURE_WRONG == (int)INGOT_MEASURE_WRONG &&
                   INGOT_DRIVER_MEASURE_ERROR == (int)INGOT_MEASURE_ERROR && INGOT_MEASURE_KIND_COUNT == 7,
               "the driver's measuring kinds are the core's");

static ingot_driver_measure_config_t config_from(const ingot_driver_measure_options_t* o) {
  ingot_driver_measure_options_t z = {0};
  if (!o) o = &z;
  ingot_measure_config_t d;
  ingot_measure_core_config_default(&d);
  ingot_driver_measure_config_t c;
  c.run.rounds = o->rounds ? o->rounds : d.rounds;
  c.run.repeats = o->repeats ? o->repeats : d.repeats;
  c.run.warmup = o->warmup ? o->warmup : d.warmup;
  c.run.threads = o->threads ? o->threads : d.threads;
  c.run.min_repeat_ms = o->min_repeat_ms > 0 ? o->min_repeat_ms : d.min_repeat_ms;
  c.run.rtol = o->rtol > 0 ? o->rtol : d.rtol;
  c.run.atol = o->atol > 0 ? o->atol : d.atol;
  c.run.seed = o->seed;
  c.run.candidate_first = o->candidate_first;
  c.run.wall_clock = o->wall_clock;
  c.timeout_s = o->timeout_s > 0 ? o->timeout_s : 30.0;
  c.margin = o->margin > 0 ? o->margin : 0.05;
  c.confirmations = o->confirmations ? o->confirmations : 2;
  return c;
}

const char* ingot_driver_measure_kind_name(ingot_driver_measure_kind_t kind) {
  return ingot_measure_core_kind_name((ingot_measure_kind_t)kind);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- The child ---- */

static void write_all(int fd, const void* data, size_t size) {
  const uint8_t* p = data;
  while (size) {
    ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    size -= (size_t)n;
  }
}

static void phase(void* self, int ph) {
  uint8_t b = (uint8_t)ph;
  write_all(*(const int*)self, &b, 1);
}

/* ---- The parent ---- */

static void result_fail(ingot_driver_measure_result_t* out, ingot_driver_measure_kind_t kind, const char* fmt,
                        const char* a, double b) {
  out->kind = kind;
  snprintf(out->message, sizeof out->message, fmt, a, b);
}

void ingot_driver_measure_result_from_summary(const ingot_measure_summary_t* s,
                                               ingot_driver_measure_result_t* out) {
  out->kind = (ingot_driver_measure_kind_t)s->kind;
  memcpy(out->message, s->message, sizeof out->message);
  out->message[sizeof out->message - 1] = '\0';
  out->max_abs_diff = s->max_abs_diff;
  out->output_crc = s->output_crc;
  out->measurements = 1;
  if (s->kind != INGOT_MEASURE_OK) return;
  out->rounds = s->rounds;
  out->runs_per_repeat = s->runs_per_repeat;
  out->candidate_ms = s->candidate_ms;
  out->reference_ms = s->reference_ms;
  out->ratio = s->ratio;
  out->ratio_lo = s->ratio_lo;
  out->ratio_hi = s->ratio_hi;
  out->ratio_min = s->ratio_min;
  out->ratio_max = s->ratio_max;
}

ingot_status_t ingot_driver_measure(const void* candidate, size_t candidate_size, const void* reference,
                                    size_t reference_size, const ingot_driver_measure_options_t* options,
                                    ingot_driver_measure_result_t* out_result) {
  if (!out_result) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "measure: no result given");
  memset(out_result, 0, sizeof *out_result);
  if (!candidate || !reference || !candidate_size || !reference_size)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "measure: a candidate and a reference bundle are needed");
  if (options && options->rounds > INGOT_DRIVER_MEASURE_MAX_ROUNDS)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "measure: %u rounds, at most %u", options->rounds,
                      INGOT_DRIVER_MEASURE_MAX_ROUNDS);
  ingot_driver_runner_t runner;
  ingot_status_t st = ingot_driver_runner_parse(options ? options->runner : NULL, &runner);
  if (st) return st;
  ingot_driver_measure_config_t c = config_from(options);
  if (runner.kind == INGOT_DRIVER_RUNNER_SSH)
    return ingot_driver_measure_ssh(&runner, candidate, candidate_size, reference, reference_size, &c, out_result);

  int fds[2];
  if (pipe(fds) != 0) {
    result_fail(out_result, INGOT_DRIVER_MEASURE_ERROR, "pipe: %s%.0f", strerror(errno), 0);
    return INGOT_OK;
  }
  fflush(NULL); /* nothing buffered is written twice */
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    result_fail(out_result, INGOT_DRIVER_MEASURE_ERROR, "fork: %s%.0f", strerror(errno), 0);
    return INGOT_OK;
  }
  if (pid == 0) {
    close(fds[0]);
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the measuring process */
#endif
    signal(SIGPIPE, SIG_DFL);
    ingot_measure_report_t rep;
    memset(&rep, 0, sizeof rep);
    phase(&fds[1], INGOT_MEASURE_PHASE_START);
    ingot_measure_core_run(candidate, candidate_size, reference, reference_size, &c.run, phase, &fds[1], &rep);
    phase(&fds[1], PHASE_DONE);
    write_all(fds[1], &rep, sizeof rep);
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);

  /* Read phase bytes, then the report, until EOF or the time-out. */
  ingot_measure_report_t rep;
  memset(&rep, 0, sizeof rep);
  size_t got = 0;
  bool done = false, timed_out = false;
  int last_phase = 0;
  double deadline = now_ms() + c.timeout_s * 1e3;
  for (;;) {
    double left = deadline - now_ms();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    struct pollfd p = {fds[0], POLLIN, 0};
    int pr = poll(&p, 1, left > 1e9 ? 1000000000 : (int)ceil(left));
    if (pr < 0 && errno == EINTR) continue;
    if (pr == 0) continue; /* the deadline check above decides */
    uint8_t buf[512];
    ssize_t n;
    if (done) n = read(fds[0], (uint8_t*)&rep + got, sizeof rep - got);
    else n = read(fds[0], buf, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break; /* EOF: the child is gone */
    if (done) {
      got += (size_t)n;
      if (got == sizeof rep) break;
    } else if (buf[0] == PHASE_DONE) {
      done = true;
    } else {
      last_phase = buf[0];
    }
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}

  if (timed_out) {
    result_fail(out_result, INGOT_DRIVER_MEASURE_TIMEOUT, "timed out while %s (after %.1f s); the child was killed",
                ingot_measure_core_phase_name(last_phase), c.timeout_s);
    return INGOT_OK;
  }
  if (WIFSIGNALED(status) && !(done && got == sizeof rep)) {
    out_result->kind = INGOT_DRIVER_MEASURE_CRASH;
    out_result->signal = WTERMSIG(status);
    snprintf(out_result->message, sizeof out_result->message, "killed by signal %d (%s) while %s",
             WTERMSIG(status), strsignal(WTERMSIG(status)), ingot_measure_core_phase_name(last_phase));
    return INGOT_OK;
  }
  if (!done || got != sizeof rep) {
    snprintf(out_result->message, sizeof out_result->message, "the child exited (status %d) while %s without a report",
             WIFEXITED(status) ? WEXITSTATUS(status) : -1, ingot_measure_core_phase_name(last_phase));
    out_result->kind = INGOT_DRIVER_MEASURE_ERROR;
    return INGOT_OK;
  }
  ingot_measure_summary_t summary;
  ingot_measure_core_summarize(&rep, &summary);
  ingot_driver_measure_result_from_summary(&summary, out_result);
  return INGOT_OK;
}

bool ingot_driver_measure_is_faster(const ingot_driver_measure_result_t* result, double margin) {
  if (margin <= 0) margin = 0.05;
  return result && result->kind == INGOT_DRIVER_MEASURE_OK && result->rounds > 0 && result->ratio_hi < 1.0 - margin;
}

ingot_status_t ingot_driver_measure_confirm(const void* candidate, size_t candidate_size, const void* reference,
                                            size_t reference_size, const ingot_driver_measure_options_t* options,
                                            const ingot_driver_measure_result_t* first,
                                            ingot_driver_measure_result_t* out_result, bool* out_accepted) {
  if (!out_result || !out_accepted) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "measure confirm: no outputs given");
  *out_accepted = false;
  ingot_driver_measure_options_t o = {0};
  if (options) o = *options;
  ingot_driver_measure_config_t c = config_from(options);
  ingot_driver_measure_result_t worst, r;
  ingot_status_t s;
  if (first) {
    worst = *first;
  } else if ((s = ingot_driver_measure(candidate, candidate_size, reference, reference_size, &o, &worst))) {
    return s;
  }
  if (!worst.measurements) worst.measurements = 1;
  /* Each look in a fresh child, the loading order flipped every time: one
   * child's placement in memory can favour either program by a few percent
   * for its whole life, which no number of rounds inside it averages out. */
  for (uint32_t k = 0; k < c.confirmations && ingot_driver_measure_is_faster(&worst, c.margin); ++k) {
    o.candidate_first = (options && options->candidate_first) ^ ((k & 1u) == 0);
    if ((s = ingot_driver_measure(candidate, candidate_size, reference, reference_size, &o, &r))) return s;
    uint32_t looks = worst.measurements + 1;
    if (!ingot_driver_measure_is_faster(&r, c.margin) || r.ratio_hi > worst.ratio_hi) worst = r;
    worst.measurements = looks;
  }
  *out_result = worst;
  *out_accepted = ingot_driver_measure_is_faster(&worst, c.margin) && worst.measurements == c.confirmations + 1;
  return INGOT_OK;
}

ingot_status_t ingot_driver_measure_candidates(const ingot_driver_bundle_bytes_t* candidates, uint32_t count,
                                               const void* reference, size_t reference_size,
                                               const ingot_driver_measure_options_t* options,
                                               ingot_driver_measure_result_t* out_results) {
  if (count && (!candidates || !out_results))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "measure: %u candidates without an array", count);
  for (uint32_t i = 0; i < count; ++i) {
    ingot_status_t s = ingot_driver_measure(candidates[i].data, candidates[i].size, reference, reference_size,
                                            options, &out_results[i]);
    if (s) return s;
  }
  return INGOT_OK;
}
