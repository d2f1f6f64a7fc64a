/* The measuring itself (measure_core.h): only the runtime's API is used here. */
#define _POSIX_C_SOURCE 200809L
#include "measure_core.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/ingot.h"

void ingot_measure_core_config_default(ingot_measure_config_t* out_config) {
  memset(out_config, 0, sizeof *out_config);
  out_config->rounds = 10;
  out_config->repeats = 5;
  out_config->warmup = 2;
  out_config->threads = 1;
  out_config->min_repeat_ms = 1.0;
  out_config->rtol = 1e-3;
  out_config->atol = 1e-4;
}

static const char* const k_kind_names[INGOT_MEASURE_KIND_COUNT] = {
    "ok", "load_failed", "run_failed", "crash", "timeout", "wrong", "error",
};

const char* ingot_measure_core_kind_name(ingot_measure_kind_t kind) {
  return (unsigned)kind < INGOT_MEASURE_KIND_COUNT ? k_kind_names[kind] : "unknown";
}

bool ingot_measure_core_kind_from_name(const char* name, ingot_measure_kind_t* out_kind) {
  for (int k = 0; k < INGOT_MEASURE_KIND_COUNT; ++k) {
    if (strcmp(name, k_kind_names[k]) == 0) {
      *out_kind = (ingot_measure_kind_t)k;
      return true;
    }
  }
  return false;
}

const char* ingot_measure_core_phase_name(int phase) {
  switch (phase) {
    case INGOT_MEASURE_PHASE_REFERENCE_LOAD: return "loading the reference";
    case INGOT_MEASURE_PHASE_REFERENCE_RUN: return "running the reference";
    case INGOT_MEASURE_PHASE_CANDIDATE_LOAD: return "loading the candidate";
    case INGOT_MEASURE_PHASE_CANDIDATE_RUN: return "running the candidate (first run)";
    case INGOT_MEASURE_PHASE_COMPARE: return "comparing outputs";
    case INGOT_MEASURE_PHASE_TIMING: return "timing";
    default: return "starting";
  }
}

static double clock_ms(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

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
                          const ingot_measure_config_t* c, ingot_measure_report_t* rep) {
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
static bool same_signature(ingot_bundle_t* rb, ingot_bundle_t* cb, ingot_measure_report_t* rep) {
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

static void fail(ingot_measure_report_t* rep, ingot_measure_kind_t kind, const char* what, const char* detail) {
  rep->kind = kind;
  snprintf(rep->message, sizeof rep->message, "%s: %s", what, detail);
}

void ingot_measure_core_run(const void* cand, size_t cand_size, const void* ref, size_t ref_size,
                            const ingot_measure_config_t* c, ingot_measure_phase_fn_t on_phase, void* phase_self,
                            ingot_measure_report_t* rep) {
  memset(rep, 0, sizeof *rep);
#define PHASE(p) \
  if (on_phase) on_phase(phase_self, (p))
  /* One thread runs the kernels on the calling thread: its CPU time leaves
   * out the time other processes took the core. */
  clockid_t clock = c->wall_clock || c->threads != 1 ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID;
  uint32_t rounds = c->rounds > INGOT_MEASURE_MAX_ROUNDS ? INGOT_MEASURE_MAX_ROUNDS : c->rounds;
  ingot_bundle_t *rb = NULL, *cb = NULL;
  ingot_session_t *rs = NULL, *cs = NULL;
  ingot_session_options_t so = {.threads = c->threads};
  /* Which program gets its memory first changes where both land, and with
   * it their speed by a few percent: confirm alternates the order. */
  for (int k = 0; k < 2; ++k) {
    if ((k == 0) == c->candidate_first) {
      PHASE(INGOT_MEASURE_PHASE_CANDIDATE_LOAD);
      if (ingot_bundle_open_memory(cand, cand_size, NULL, &cb) || ingot_session_create(cb, &so, &cs)) {
        fail(rep, INGOT_MEASURE_LOAD_FAILED, "the candidate does not load", ingot_last_error());
        goto done;
      }
    } else {
      PHASE(INGOT_MEASURE_PHASE_REFERENCE_LOAD);
      if (ingot_bundle_open_memory(ref, ref_size, NULL, &rb) || ingot_session_create(rb, &so, &rs)) {
        fail(rep, INGOT_MEASURE_ERROR, "the reference does not load", ingot_last_error());
        goto done;
      }
    }
  }
  /* GPU code runs on the device while this thread waits: the wall clock. */
  if (strcmp(ingot_bundle_device(cb), "cpu") != 0 || strcmp(ingot_bundle_device(rb), "cpu") != 0)
    clock = CLOCK_MONOTONIC;
  if (!same_signature(rb, cb, rep)) {
    rep->kind = INGOT_MEASURE_WRONG;
    goto done;
  }
  for (uint32_t i = 0; i < ingot_bundle_input_count(rb); ++i) {
    ingot_tensor_info_t info;
    ingot_bundle_input_info(rb, i, &info);
    fill_input(ingot_session_input_data(rs, i), &info, c->seed, i);
  }
  PHASE(INGOT_MEASURE_PHASE_REFERENCE_RUN);
  if (ingot_session_run(rs)) {
    fail(rep, INGOT_MEASURE_ERROR, "the reference fails to run", ingot_last_error());
    goto done;
  }
  for (uint32_t i = 0; i < ingot_bundle_input_count(cb); ++i) {
    ingot_tensor_info_t info;
    ingot_bundle_input_info(cb, i, &info);
    memcpy(ingot_session_input_data(cs, i), ingot_session_input_data(rs, i), info.bytes);
  }
  PHASE(INGOT_MEASURE_PHASE_CANDIDATE_RUN);
  if (ingot_session_run(cs)) {
    fail(rep, INGOT_MEASURE_RUN_FAILED, "the candidate fails to run", ingot_last_error());
    goto done;
  }
  PHASE(INGOT_MEASURE_PHASE_COMPARE);
  if (!outputs_match(rb, rs, cb, cs, c, rep)) {
    rep->kind = INGOT_MEASURE_WRONG;
    goto done;
  }
  PHASE(INGOT_MEASURE_PHASE_TIMING);
  /* Warm-up, and how many runs make a repeat last min_repeat_ms (the
   * reference's time decides, the same count serves both). */
  double ref_once = 0;
  for (uint32_t w = 0; w < c->warmup; ++w) {
    double t0 = clock_ms(clock);
    if (ingot_session_run(rs)) goto run_failed;
    ref_once = clock_ms(clock) - t0;
    if (ingot_session_run(cs)) goto run_failed;
  }
  uint32_t runs = ref_once > 0 ? (uint32_t)ceil(c->min_repeat_ms / ref_once) : 1;
  if (runs < 1) runs = 1;
  if (runs > 100000) runs = 100000;
  rep->runs_per_repeat = runs;
  for (uint32_t r = 0; r < rounds; ++r) {
    bool cand_first = r & 1u;
    ingot_session_t* first = cand_first ? cs : rs;
    ingot_session_t* second = cand_first ? rs : cs;
    double a, b;
    if (!time_program(first, clock, c->repeats, runs, &a) || !time_program(second, clock, c->repeats, runs, &b))
      goto run_failed;
    rep->candidate_ms[r] = cand_first ? a : b;
    rep->reference_ms[r] = cand_first ? b : a;
    rep->rounds = r + 1;
  }
  rep->kind = INGOT_MEASURE_OK;
  goto done;
run_failed:
  fail(rep, INGOT_MEASURE_RUN_FAILED, "a timed run failed", ingot_last_error());
done:
  ingot_session_release(cs);
  ingot_session_release(rs);
  ingot_bundle_release(cb);
  ingot_bundle_release(rb);
#undef PHASE
}

void ingot_measure_core_summarize(const ingot_measure_report_t* rep, ingot_measure_summary_t* out) {
  memset(out, 0, sizeof *out);
  out->kind = rep->kind;
  memcpy(out->message, rep->message, sizeof out->message);
  out->message[sizeof out->message - 1] = '\0';
  out->max_abs_diff = rep->max_abs_diff;
  out->output_crc = rep->output_crc;
  if (rep->kind != INGOT_MEASURE_OK) return;
  uint32_t n = rep->rounds > INGOT_MEASURE_MAX_ROUNDS ? INGOT_MEASURE_MAX_ROUNDS : rep->rounds;
  double c[INGOT_MEASURE_MAX_ROUNDS], r[INGOT_MEASURE_MAX_ROUNDS], q[INGOT_MEASURE_MAX_ROUNDS];
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

/* ---- The result line ---- */

static const char k_line_prefix[] = "ingot-measure";

void ingot_measure_core_format_line(const ingot_measure_summary_t* s, char* buf, size_t size) {
  char message[sizeof s->message];
  size_t i = 0;
  for (; i + 1 < sizeof message && s->message[i]; ++i) {
    unsigned char ch = (unsigned char)s->message[i];
    message[i] = ch < 0x20 || ch == 0x7f ? ' ' : (char)ch; /* one line, whatever the message holds */
  }
  message[i] = '\0';
  snprintf(buf, size,
           "%s %d kind=%s rounds=%u runs_per_repeat=%u candidate_ms=%.17g reference_ms=%.17g ratio=%.17g "
           "ratio_lo=%.17g ratio_hi=%.17g ratio_min=%.17g ratio_max=%.17g max_abs_diff=%.17g output_crc=0x%08x "
           "message=%s",
           k_line_prefix, INGOT_MEASURE_LINE_VERSION, ingot_measure_core_kind_name(s->kind), s->rounds,
           s->runs_per_repeat, s->candidate_ms, s->reference_ms, s->ratio, s->ratio_lo, s->ratio_hi, s->ratio_min,
           s->ratio_max, s->max_abs_diff, s->output_crc, message);
}

static bool parse_u32(const char* v, size_t n, uint32_t* out) {
  char text[32];
  if (n == 0 || n >= sizeof text) return false;
  memcpy(text, v, n);
  text[n] = '\0';
  char* end = NULL;
  unsigned long long x = strtoull(text, &end, 0);
  if (*end || x > UINT32_MAX || text[0] == '-') return false;
  *out = (uint32_t)x;
  return true;
}

static bool parse_double(const char* v, size_t n, double* out) {
  char text[64];
  if (n == 0 || n >= sizeof text) return false;
  memcpy(text, v, n);
  text[n] = '\0';
  char* end = NULL;
  *out = strtod(text, &end);
  return *end == '\0';
}

bool ingot_measure_core_parse_line(const char* line, ingot_measure_summary_t* out) {
  memset(out, 0, sizeof *out);
  size_t plen = sizeof k_line_prefix - 1;
  if (strncmp(line, k_line_prefix, plen) != 0 || line[plen] != ' ') return false;
  const char* p = line + plen + 1;
  char* end = NULL;
  long version = strtol(p, &end, 10);
  if (end == p || version != INGOT_MEASURE_LINE_VERSION || *end != ' ') return false;
  p = end;
  bool have_kind = false;
  while (*p) {
    while (*p == ' ') ++p;
    if (!*p || *p == '\n' || *p == '\r') break;
    const char* eq = strchr(p, '=');
    if (!eq) return false;
    size_t klen = (size_t)(eq - p);
    const char* v = eq + 1;
    if (klen == 7 && strncmp(p, "message", 7) == 0) { /* the rest of the line */
      size_t n = strcspn(v, "\r\n");
      if (n >= sizeof out->message) n = sizeof out->message - 1;
      memcpy(out->message, v, n);
      out->message[n] = '\0';
      break;
    }
    size_t vlen = strcspn(v, " \r\n");
#define KEY(name) (klen == sizeof(name) - 1 && strncmp(p, name, klen) == 0)
    bool ok = true;
    if (KEY("kind")) {
      char name[32];
      ok = vlen < sizeof name;
      if (ok) {
        memcpy(name, v, vlen);
        name[vlen] = '\0';
        ok = have_kind = ingot_measure_core_kind_from_name(name, &out->kind);
      }
    } else if (KEY("rounds")) ok = parse_u32(v, vlen, &out->rounds);
    else if (KEY("runs_per_repeat")) ok = parse_u32(v, vlen, &out->runs_per_repeat);
    else if (KEY("candidate_ms")) ok = parse_double(v, vlen, &out->candidate_ms);
    else if (KEY("reference_ms")) ok = parse_double(v, vlen, &out->reference_ms);
    else if (KEY("ratio")) ok = parse_double(v, vlen, &out->ratio);
    else if (KEY("ratio_lo")) ok = parse_double(v, vlen, &out->ratio_lo);
    else if (KEY("ratio_hi")) ok = parse_double(v, vlen, &out->ratio_hi);
    else if (KEY("ratio_min")) ok = parse_double(v, vlen, &out->ratio_min);
    else if (KEY("ratio_max")) ok = parse_double(v, vlen, &out->ratio_max);
    else if (KEY("max_abs_diff")) ok = parse_double(v, vlen, &out->max_abs_diff);
    else if (KEY("output_crc")) ok = parse_u32(v, vlen, &out->output_crc);
#undef KEY
    if (!ok) {
      memset(out, 0, sizeof *out);
      return false;
    }
    p = v + vlen;
  }
  if (!have_kind || out->rounds > INGOT_MEASURE_MAX_ROUNDS) {
    memset(out, 0, sizeof *out);
    return false;
  }
  return true;
}
