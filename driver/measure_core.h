/* The measuring itself, with nothing but the runtime (runtime/ingot.h): what
 * the driver's measuring child runs (driver_measure.c) and what the run-only
 * program `ingot-measure` runs on another machine (measure_main.c). Private to
 * driver/; it includes no compiler header, so that ingot-measure links only
 * libingot and can be built for a board (-DINGOT_RUNTIME_ONLY=ON builds it).
 *
 * ingot_measure_core_run opens a candidate and a reference bundle from
 * memory, fills the inputs of both with the same seeded data, runs each once,
 * compares the outputs, and times the two in alternating rounds; everything
 * that goes wrong comes back in the report's kind. It does not protect its
 * caller from a kernel that crashes or hangs: the driver runs it in a child
 * process, ingot-measure is itself that process.
 *
 * The result line (ingot_measure_core_format_line / _parse_line) is how
 * ingot-measure answers, one line of text:
 *   ingot-measure 1 kind=ok rounds=8 runs_per_repeat=3 candidate_ms=0.0123
 *     reference_ms=0.0125 ratio=0.98 ratio_lo=0.97 ratio_hi=0.99
 *     ratio_min=0.95 ratio_max=1.01 max_abs_diff=0 output_crc=0x1a2b3c4d
 *     message=TEXT TO THE END OF THE LINE
 * (one line; wrapped here). Numbers are written with 17 significant digits, so
 * they read back exactly; keys unknown to the reader are skipped. */
#ifndef INGOT_DRIVER_MEASURE_CORE_H_
#define INGOT_DRIVER_MEASURE_CORE_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The values of ingot_driver_measure_kind_t (driver.h checks they agree). */
typedef enum ingot_measure_kind_t {
  INGOT_MEASURE_OK = 0,
  INGOT_MEASURE_LOAD_FAILED = 1,
  INGOT_MEASURE_RUN_FAILED = 2,
  INGOT_MEASURE_CRASH = 3,
  INGOT_MEASURE_TIMEOUT = 4,
  INGOT_MEASURE_WRONG = 5,
  INGOT_MEASURE_ERROR = 6,
} ingot_measure_kind_t;
#define INGOT_MEASURE_KIND_COUNT 7

#define INGOT_MEASURE_MAX_ROUNDS 64u
#define INGOT_MEASURE_LINE_VERSION 1

/* What the measuring is doing, reported as it enters each phase. */
enum {
  INGOT_MEASURE_PHASE_START = 1,
  INGOT_MEASURE_PHASE_REFERENCE_LOAD,
  INGOT_MEASURE_PHASE_REFERENCE_RUN,
  INGOT_MEASURE_PHASE_CANDIDATE_LOAD,
  INGOT_MEASURE_PHASE_CANDIDATE_RUN,
  INGOT_MEASURE_PHASE_COMPARE,
  INGOT_MEASURE_PHASE_TIMING,
};

/* Every field set (ingot_measure_core_config_default gives the defaults). */
typedef struct ingot_measure_config_t {
  uint32_t rounds;      /* 1..INGOT_MEASURE_MAX_ROUNDS */
  uint32_t repeats;
  uint32_t warmup;
  uint32_t threads;
  double min_repeat_ms;
  double rtol, atol;
  uint64_t seed;
  bool candidate_first; /* open the candidate first */
  bool wall_clock;      /* else, with one thread, the CPU time of the running thread */
} ingot_measure_config_t;

/* What one measurement found: plain data (the driver's child sends it through
 * a pipe as bytes). Times are per round and program, in ms for one run. */
typedef struct ingot_measure_report_t {
  ingot_measure_kind_t kind;
  char message[256];
  uint32_t rounds;
  uint32_t runs_per_repeat;
  double candidate_ms[INGOT_MEASURE_MAX_ROUNDS];
  double reference_ms[INGOT_MEASURE_MAX_ROUNDS];
  double max_abs_diff;
  uint32_t output_crc;
} ingot_measure_report_t;

/* A report reduced to what a result holds (the fields of
 * ingot_driver_measure_result_t of the same names); timing fields are zero
 * unless kind is OK. */
typedef struct ingot_measure_summary_t {
  ingot_measure_kind_t kind;
  char message[256];
  uint32_t rounds;
  uint32_t runs_per_repeat;
  double candidate_ms, reference_ms;
  double ratio, ratio_lo, ratio_hi, ratio_min, ratio_max;
  double max_abs_diff;
  uint32_t output_crc;
} ingot_measure_summary_t;

/* Called as the measuring enters each phase (INGOT_MEASURE_PHASE_*). */
typedef void (*ingot_measure_phase_fn_t)(void* self, int phase);

/* rounds 10, repeats 5, warmup 2, threads 1, min_repeat_ms 1, rtol 1e-3,
 * atol 1e-4, seed 0, flags false. */
void ingot_measure_core_config_default(ingot_measure_config_t* out_config);

/* "ok", "load_failed", ... (as ingot_driver_measure_kind_name); and back:
 * false for a name that is none of them. */
const char* ingot_measure_core_kind_name(ingot_measure_kind_t kind);
bool ingot_measure_core_kind_from_name(const char* name, ingot_measure_kind_t* out_kind);

/* "loading the candidate", ...; "starting" for anything else. */
const char* ingot_measure_core_phase_name(int phase);

/* Measures as described above; *out_report is zeroed first. The bundles are
 * only read. on_phase may be NULL. */
void ingot_measure_core_run(const void* candidate, size_t candidate_size, const void* reference,
                            size_t reference_size, const ingot_measure_config_t* config,
                            ingot_measure_phase_fn_t on_phase, void* phase_self, ingot_measure_report_t* out_report);

/* The medians, the ratio and its spread over the rounds (when OK). */
void ingot_measure_core_summarize(const ingot_measure_report_t* report, ingot_measure_summary_t* out_summary);

/* The result line, without its newline, into buf (cut to size; 1024 bytes
 * always hold it). */
void ingot_measure_core_format_line(const ingot_measure_summary_t* summary, char* buf, size_t size);

/* Reads a result line (its newline may be there). False, with *out_summary
 * zeroed, when it is not one (another prefix or version, no kind). */
bool ingot_measure_core_parse_line(const char* line, ingot_measure_summary_t* out_summary);

#endif /* INGOT_DRIVER_MEASURE_CORE_H_ */
