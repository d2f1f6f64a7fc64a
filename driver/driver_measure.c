/* Measuring a candidate bundle against a reference in a child process
 * (driver.h, "Measuring a candidate bundle against a reference").
 *
 * The parent forks one child per measurement and reads from a pipe:
 *   phase bytes   one byte as the child enters each phase (PHASE_*), so that a
 *                 child that dies or hangs is reported with what it was doing;
 *   PHASE_DONE    then the child_report_t, and the child exits.
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
#include "runtime/ingot.h"

enum {
  PHASE_START = 1,
  PHASE_REFERENCE_LOAD,
  PHASE_REFERENCE_RUN,
  PHASE_CANDIDATE_LOAD,
  PHASE_CANDIDATE_RUN,
  PHASE_COMPARE,
  PHASE_TIMING,
  PHASE_DONE = 0xff,
};

static const char* phase_name(int phase) {
  switch (phase) {
    case PHASE_REFERENCE_LOAD: return "loading the reference";
    case PHASE_REFERENCE_RUN: return "running the reference";
    case PHASE_CANDIDATE_LOAD: return "loading the candidate";
    case PHASE_CANDIDATE_RUN: return "running the candidate (first run)";
    case PHASE_COMPARE: return "comparing outputs";
    case PHASE_TIMING: return "timing";
    default: return "starting";
  }
}

/* What the child sends after PHASE_DONE. Plain data, same process image. */
typedef struct child_report_t {
  ingot_driver_measure_kind_t kind;
  char message[256];
  uint32_t rounds;
  uint32_t runs_per_repeat;
  double candidate_ms[INGOT_DRIVER_MEASURE_MAX_ROUNDS];
  double reference_ms[INGOT_DRIVER_MEASURE_MAX_ROUNDS];
  double max_abs_diff;
  uint32_t output_crc;
} child_report_t;

typedef struct measure_config_t {
  uint32_t rounds, repeats, warmup, threads;
  double min_repeat_ms, timeout_s, rtol, atol, margin;
  uint64_t seed;
  bool candidate_first;
  uint32_t confirmations;
  clockid_t clock;
} measure_config_t;

static measure_config_t config_from(const ingot_driver_measure_options_t* o) {
  ingot_driver_measure_options_t z = {0};
  if (!o) o = &z;
  measure_config_t c;
  c.rounds = o->rounds ? o->rounds : 10;
  c.repeats = o->repeats ? o->repeats : 5;
  c.warmup = o->warmup ? o->warmup : 2;
  c.threads = o->threads ? o->threads : 1;
  c.min_repeat_ms = o->min_repeat_ms > 0 ? o->min_repeat_ms : 1.0;
  c.timeout_s = o->timeout_s > 0 ? o->timeout_s : 30.0;
  c.rtol = o->rtol > 0 ? o->rtol : 1e-3;
  c.atol = o->atol > 0 ? o->atol : 1e-4;
  c.margin = o->margin > 0 ? o->margin : 0.05;
  c.seed = o->seed;
  c.candidate_first = o->candidate_first;
  c.confirmations = o->confirmations ? o->confirmations : 2;
  /* One thread runs the kernels on the calling thread: its CPU time leaves
   * out the time other processes took the core. */
  c.clock = o->wall_clock || c.threads != 1 ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID;
  return c;
}

const char* ingot_driver_measure_kind_name(ingot_driver_measure_kind_t kind) {
  switch (kind) {
    case INGOT_DRIVER_MEASURE_OK: return "ok";
    case INGOT_DRIVER_MEASURE_LOAD_FAILED: return "load_failed";
    case INGOT_DRIVER_MEASURE_RUN_FAILED: return "run_failed";
    case INGOT_DRIVER_MEASURE_CRASH: return "crash";
    case INGOT_DRIVER_MEASURE_TIMEOUT: return "timeout";
    case INGOT_DRIVER_MEASURE_WRONG: return "wrong";
    case INGOT_DRIVER_MEASURE_ERROR: return "error";
  }
  return "unknown";
}

static double clock_ms(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double now_ms(void) { return clock_ms(CLOCK_MONOTONIC); }

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* The q-quantile (0..1) of n values, linear between ranks; sorts `v`. */
static double quantile(double* v, uint32_t n, double q) {
  qsort(v, n, sizeof *v, cmp_double);
  double pos = q * (double)(n - 1);
  uint32_t i = (uint32_t)pos;
  if (i + 1 >= n) return v[n - 1];
  return v[i] + (pos - (double)i) * (v[i + 1] - v[i]);
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

static void phase(int fd, int ph) {
  uint8_t b = (uint8_t)ph;
  write_all(fd, &b, 1);
}

static uint64_t splitmix(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Seeded data for one input: floats uniform in [-1, 1), integers in [0, 4)
 * (small enough to be valid indices and shapes for most ops), booleans 0/1,
 * bytes uniform. The stream depends only on the seed and the input index. */
static void fill_input(void* data, const ingot_tensor_info_t* info, uint64_t seed, uint32_t index) {
  uint64_t st = seed * 0x2545f4914f6cdd1dull + index + 1;
  size_t es = ingot_dtype_size(info->dtype);
  size_t n = es ? info->bytes / es : 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t r = splitmix(&st);
    double u = (double)(r >> 11) / 9007199254740992.0; /* [0, 1) */
    switch (info->dtype) {
      case INGOT_DTYPE_F32: ((float*)data)[i] = (float)(2.0 * u - 1.0); break;
      case INGOT_DTYPE_F64: ((double*)data)[i] = 2.0 * u - 1.0; break;
      case INGOT_DTYPE_F16: ((uint16_t*)data)[i] = (uint16_t)(0x3800u | (r & 0x3ffu)); break; /* [0.5, 1) */
      case INGOT_DTYPE_I32: ((int32_t*)data)[i] = (int32_t)(r & 3u); break;
      case INGOT_DTYPE_I64: ((int64_t*)data)[i] = (int64_t)(r & 3u); break;
      case INGOT_DTYPE_BOOL: ((uint8_t*)data)[i] = (uint8_t)(r & 1u); break;
      default: ((uint8_t*)data)[i] = (uint8_t)r; break;
    }
  }
}

static double half_to_double(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
  return (h & 0x8000) ? -v : v;
}

static double element(const void* data, ingot_dtype_t dtype, size_t i) {
  switch (dtype) {
    case INGOT_DTYPE_F32: return ((const float*)data)[i];
    case INGOT_DTYPE_F64: return ((const double*)data)[i];
    default: return half_to_double(((const uint16_t*)data)[i]);
  }
}

/* Compares every output of the candidate with the reference's; fills
 * max_abs_diff and, on a difference, the message. Returns whether they match. */
static bool outputs_match(ingot_bundle_t* rb, ingot_session_t* rs, ingot_bundle_t* cb, ingot_session_t* cs,
                          const measure_config_t* c, child_report_t* rep) {
  for (uint32_t o = 0; o < ingot_bundle_output_count(cb); ++o) {
    ingot_tensor_info_t ri, ci;
    ingot_bundle_output_info(rb, o, &ri);
    ingot_bundle_output_info(cb, o, &ci);
    const void* r = ingot_session_output_data(rs, o);
    const void* d = ingot_session_output_data(cs, o);
    rep->output_crc = ingot_crc32(rep->output_crc, d, ci.bytes);
    bool is_float = ci.dtype == INGOT_DTYPE_F32 || ci.dtype == INGOT_DTYPE_F64 || ci.dtype == INGOT_DTYPE_F16;
    if (!is_float) {
      if (memcmp(r, d, ci.bytes) != 0) {
        size_t i = 0;
        while (((const uint8_t*)r)[i] == ((const uint8_t*)d)[i]) ++i;
        snprintf(rep->message, sizeof rep->message, "output %u '%s' (%s) differs from the reference at byte %zu", o,
                 ci.name, ingot_dtype_name(ci.dtype), i);
        return false;
      }
      continue;
    }
    size_t n = ci.bytes / ingot_dtype_size(ci.dtype);
    for (size_t i = 0; i < n; ++i) {
      double a = element(r, ci.dtype, i), b = element(d, ci.dtype, i);
      if (isnan(a) && isnan(b)) continue;
      double diff = fabs(a - b);
      if (!(diff <= c->atol + c->rtol * fabs(a)) && !(a == b)) {
        snprintf(rep->message, sizeof rep->message,
                 "output %u '%s' differs from the reference at element %zu: %.9g, reference %.9g "
                 "(rtol %g, atol %g)",
                 o, ci.name, i, b, a, c->rtol, c->atol);
        rep->max_abs_diff = isnan(diff) ? INFINITY : diff;
        return false;
      }
      if (diff > rep->max_abs_diff) rep->max_abs_diff = diff;
    }
  }
  return true;
}

/* The same inputs and outputs (count, dtype, bytes) in both bundles. */
static bool same_signature(ingot_bundle_t* rb, ingot_bundle_t* cb, child_report_t* rep) {
  for (int io = 0; io < 2; ++io) {
    uint32_t n = io ? ingot_bundle_output_count(rb) : ingot_bundle_input_count(rb);
    uint32_t m = io ? ingot_bundle_output_count(cb) : ingot_bundle_input_count(cb);
    const char* what = io ? "outputs" : "inputs";
    if (n != m) {
      snprintf(rep->message, sizeof rep->message, "the candidate has %u %s, the reference %u", m, what, n);
      return false;
    }
    for (uint32_t i = 0; i < n; ++i) {
      ingot_tensor_info_t a, b;
      if (io) {
        ingot_bundle_output_info(rb, i, &a);
        ingot_bundle_output_info(cb, i, &b);
      } else {
        ingot_bundle_input_info(rb, i, &a);
        ingot_bundle_input_info(cb, i, &b);
      }
      if (a.dtype != b.dtype || a.bytes != b.bytes) {
        snprintf(rep->message, sizeof rep->message,
                 "%s %u: the candidate's '%s' is %s of %zu bytes, the reference's '%s' %s of %zu bytes", what, i,
                 b.name, ingot_dtype_name(b.dtype), b.bytes, a.name, ingot_dtype_name(a.dtype), a.bytes);
        return false;
      }
    }
  }
  return true;
}

/* Median of `repeats` timed repeats of `runs` runs each, per run in ms;
 * false when a run fails. */
static bool time_program(ingot_session_t* s, clockid_t clock, uint32_t repeats, uint32_t runs, double* out_ms) {
  double t[64];
  if (repeats > 64) repeats = 64;
  for (uint32_t r = 0; r < repeats; ++r) {
    double t0 = clock_ms(clock);
    for (uint32_t k = 0; k < runs; ++k)
      if (ingot_session_run(s) != INGOT_OK) return false;
    t[r] = (clock_ms(clock) - t0) / runs;
  }
  *out_ms = quantile(t, repeats, 0.5);
  return true;
}

static void child_fail(child_report_t* rep, ingot_driver_measure_kind_t kind, const char* what, const char* detail) {
  rep->kind = kind;
  snprintf(rep->message, sizeof rep->message, "%s: %s", what, detail);
}

static void child_measure(const void* cand, size_t cand_size, const void* ref, size_t ref_size,
                          const measure_config_t* c, int fd, child_report_t* rep) {
  ingot_bundle_t *rb = NULL, *cb = NULL;
  ingot_session_t *rs = NULL, *cs = NULL;
  ingot_session_options_t so = {.threads = c->threads};
  /* Which program gets its memory first changes where both land, and with
   * it their speed by a few percent: confirm alternates the order. */
  for (int k = 0; k < 2; ++k) {
    if ((k == 0) == c->candidate_first) {
      phase(fd, PHASE_CANDIDATE_LOAD);
      if (ingot_bundle_open_memory(cand, cand_size, NULL, &cb) || ingot_session_create(cb, &so, &cs)) {
        child_fail(rep, INGOT_DRIVER_MEASURE_LOAD_FAILED, "the candidate does not load", ingot_last_error());
        goto done;
      }
    } else {
      phase(fd, PHASE_REFERENCE_LOAD);
      if (ingot_bundle_open_memory(ref, ref_size, NULL, &rb) || ingot_session_create(rb, &so, &rs)) {
        child_fail(rep, INGOT_DRIVER_MEASURE_ERROR, "the reference does not load", ingot_last_error());
        goto done;
      }
    }
  }
  if (!same_signature(rb, cb, rep)) {
    rep->kind = INGOT_DRIVER_MEASURE_WRONG;
    goto done;
  }
  for (uint32_t i = 0; i < ingot_bundle_input_count(rb); ++i) {
    ingot_tensor_info_t info;
    ingot_bundle_input_info(rb, i, &info);
    fill_input(ingot_session_input_data(rs, i), &info, c->seed, i);
  }
  phase(fd, PHASE_REFERENCE_RUN);
  if (ingot_session_run(rs)) {
    child_fail(rep, INGOT_DRIVER_MEASURE_ERROR, "the reference fails to run", ingot_last_error());
    goto done;
  }
  for (uint32_t i = 0; i < ingot_bundle_input_count(cb); ++i) {
    ingot_tensor_info_t info;
    ingot_bundle_input_info(cb, i, &info);
    memcpy(ingot_session_input_data(cs, i), ingot_session_input_data(rs, i), info.bytes);
  }
  phase(fd, PHASE_CANDIDATE_RUN);
  if (ingot_session_run(cs)) {
    child_fail(rep, INGOT_DRIVER_MEASURE_RUN_FAILED, "the candidate fails to run", ingot_last_error());
    goto done;
  }
  phase(fd, PHASE_COMPARE);
  if (!outputs_match(rb, rs, cb, cs, c, rep)) {
    rep->kind = INGOT_DRIVER_MEASURE_WRONG;
    goto done;
  }
  phase(fd, PHASE_TIMING);
  /* Warm-up, and how many runs make a repeat last min_repeat_ms (the
   * reference's time decides, the same count serves both). */
  double ref_once = 0;
  for (uint32_t w = 0; w < c->warmup; ++w) {
    double t0 = clock_ms(c->clock);
    if (ingot_session_run(rs)) goto run_failed;
    ref_once = clock_ms(c->clock) - t0;
    if (ingot_session_run(cs)) goto run_failed;
  }
  uint32_t runs = ref_once > 0 ? (uint32_t)ceil(c->min_repeat_ms / ref_once) : 1;
  if (runs < 1) runs = 1;
  if (runs > 100000) runs = 100000;
  rep->runs_per_repeat = runs;
  for (uint32_t r = 0; r < c->rounds; ++r) {
    bool cand_first = r & 1u;
    ingot_session_t* first = cand_first ? cs : rs;
    ingot_session_t* second = cand_first ? rs : cs;
    double a, b;
    if (!time_program(first, c->clock, c->repeats, runs, &a) || !time_program(second, c->clock, c->repeats, runs, &b)) goto run_failed;
    rep->candidate_ms[r] = cand_first ? a : b;
    rep->reference_ms[r] = cand_first ? b : a;
    rep->rounds = r + 1;
  }
  rep->kind = INGOT_DRIVER_MEASURE_OK;
  goto done;
run_failed:
  child_fail(rep, INGOT_DRIVER_MEASURE_RUN_FAILED, "a timed run failed", ingot_last_error());
done:
  ingot_session_release(cs);
  ingot_session_release(rs);
  ingot_bundle_release(cb);
  ingot_bundle_release(rb);
}

/* ---- The parent ---- */

static void result_fail(ingot_driver_measure_result_t* out, ingot_driver_measure_kind_t kind, const char* fmt,
                        const char* a, double b) {
  out->kind = kind;
  snprintf(out->message, sizeof out->message, fmt, a, b);
}

static void summarize(const child_report_t* rep, ingot_driver_measure_result_t* out) {
  uint32_t n = rep->rounds;
  double c[INGOT_DRIVER_MEASURE_MAX_ROUNDS], r[INGOT_DRIVER_MEASURE_MAX_ROUNDS], q[INGOT_DRIVER_MEASURE_MAX_ROUNDS];
  for (uint32_t i = 0; i < n; ++i) {
    c[i] = rep->candidate_ms[i];
    r[i] = rep->reference_ms[i];
    q[i] = r[i] > 0 ? c[i] / r[i] : INFINITY;
  }
  out->rounds = n;
  out->runs_per_repeat = rep->runs_per_repeat;
  if (!n) return;
  out->candidate_ms = quantile(c, n, 0.5);
  out->reference_ms = quantile(r, n, 0.5);
  out->ratio = out->reference_ms > 0 ? out->candidate_ms / out->reference_ms : INFINITY;
  out->ratio_lo = quantile(q, n, 0.25);
  out->ratio_hi = quantile(q, n, 0.75);
  out->ratio_min = q[0];
  out->ratio_max = q[n - 1];
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
  measure_config_t c = config_from(options);

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
    child_report_t rep;
    memset(&rep, 0, sizeof rep);
    phase(fds[1], PHASE_START);
    child_measure(candidate, candidate_size, reference, reference_size, &c, fds[1], &rep);
    phase(fds[1], PHASE_DONE);
    write_all(fds[1], &rep, sizeof rep);
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);

  /* Read phase bytes, then the report, until EOF or the time-out. */
  child_report_t rep;
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
                phase_name(last_phase), c.timeout_s);
    return INGOT_OK;
  }
  if (WIFSIGNALED(status) && !(done && got == sizeof rep)) {
    out_result->kind = INGOT_DRIVER_MEASURE_CRASH;
    out_result->signal = WTERMSIG(status);
    snprintf(out_result->message, sizeof out_result->message, "killed by signal %d (%s) while %s",
             WTERMSIG(status), strsignal(WTERMSIG(status)), phase_name(last_phase));
    return INGOT_OK;
  }
  if (!done || got != sizeof rep) {
    snprintf(out_result->message, sizeof out_result->message, "the child exited (status %d) while %s without a report",
             WIFEXITED(status) ? WEXITSTATUS(status) : -1, phase_name(last_phase));
    out_result->kind = INGOT_DRIVER_MEASURE_ERROR;
    return INGOT_OK;
  }
  out_result->kind = rep.kind;
  memcpy(out_result->message, rep.message, sizeof out_result->message);
  out_result->max_abs_diff = rep.max_abs_diff;
  out_result->output_crc = rep.output_crc;
  out_result->measurements = 1;
  if (rep.kind == INGOT_DRIVER_MEASURE_OK) summarize(&rep, out_result);
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
  measure_config_t c = config_from(options);
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
