/* ingot-measure: the run-only measuring program. It links only libingot
 * (runtime/ingot.h) and the measuring of measure_core.c, so it is what can be
 * copied to a small board: the ssh runner (measure_ssh.c) copies it to the
 * remote machine and runs it there; it also runs by hand.
 *
 *   ingot-measure [OPTIONS] CANDIDATE.ingot REFERENCE.ingot
 *     --rounds N --repeats N --warmup N --min-repeat-ms MS --threads N
 *     --seed S --rtol X --atol X --wall-clock --candidate-first
 *                  as ingot_driver_measure_options_t (driver.h), same defaults
 *     --timeout S  end by SIGALRM after S seconds (default: none)
 *     --phases     write "phase N" on standard output as each phase begins
 *
 * Writes one result line on standard output (measure_core.h) and exits 0,
 * whatever the candidate did, unless the candidate crashes or hangs the
 * program itself: then the signal ends it (the caller reads it from the exit
 * status, the last phase line says where). A bad option or a file that cannot
 * be read: a message on standard error, exit 2. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "measure_core.h"
#include "runtime/ingot.h"

static const char k_usage[] =
    "usage: ingot-measure [--rounds N] [--repeats N] [--warmup N] [--min-repeat-ms MS] [--threads N]\n"
    "                     [--seed S] [--rtol X] [--atol X] [--wall-clock] [--candidate-first]\n"
    "                     [--timeout S] [--phases] CANDIDATE.ingot REFERENCE.ingot\n";

static int usage_error(const char* fmt, const char* what) {
  fprintf(stderr, "ingot-measure: ");
  fprintf(stderr, fmt, what);
  fprintf(stderr, "\n%s", k_usage);
  return 2;
}

static bool parse_u64(const char* text, uint64_t max, uint64_t* out) {
  if (!text || text[0] < '0' || text[0] > '9') return false;
  char* end = NULL;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno || *end || v > max) return false;
  *out = v;
  return true;
}

static bool parse_positive(const char* text, double* out) {
  if (!text) return false;
  char* end = NULL;
  double v = strtod(text, &end);
  if (end == text || *end || !(v > 0) || !isfinite(v)) return false;
  *out = v;
  return true;
}

static bool read_whole(const char* path, uint8_t** out, size_t* out_size) {
  *out = NULL;
  FILE* f = fopen(path, "rb");
  if (!f) return false;
  bool ok = fseek(f, 0, SEEK_END) == 0;
  long n = ok ? ftell(f) : -1;
  ok = n > 0 && fseek(f, 0, SEEK_SET) == 0;
  if (ok) *out = malloc((size_t)n);
  ok = ok && *out && fread(*out, 1, (size_t)n, f) == (size_t)n;
  fclose(f);
  if (!ok) {
    free(*out);
    *out = NULL;
    return false;
  }
  *out_size = (size_t)n;
  return true;
}

static void print_phase(void* self, int phase) {
  (void)self;
  printf("phase %d\n", phase);
  fflush(stdout); /* seen before whatever comes next, a crash included */
}

int main(int argc, char** argv) {
  ingot_measure_config_t c;
  ingot_measure_core_config_default(&c);
  double timeout_s = 0;
  bool phases = false;
  const char* paths[2] = {NULL, NULL};
  int npaths = 0;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    uint64_t u = 0;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(k_usage, stdout);
      return 0;
    } else if (strcmp(a, "--phases") == 0) {
      phases = true;
    } else if (strcmp(a, "--wall-clock") == 0) {
      c.wall_clock = true;
    } else if (strcmp(a, "--candidate-first") == 0) {
      c.candidate_first = true;
    } else if (strcmp(a, "--rounds") == 0) {
      if (!parse_u64(v, INGOT_MEASURE_MAX_ROUNDS, &u) || u == 0)
        return usage_error("--rounds takes 1 to 64, not '%s'", v ? v : "");
      c.rounds = (uint32_t)u, ++i;
    } else if (strcmp(a, "--repeats") == 0 || strcmp(a, "--warmup") == 0 || strcmp(a, "--threads") == 0) {
      if (!parse_u64(v, 1u << 20, &u) || (u == 0 && strcmp(a, "--warmup") != 0))
        return usage_error("a bad count after %s", a);
      *(strcmp(a, "--repeats") == 0 ? &c.repeats : strcmp(a, "--warmup") == 0 ? &c.warmup : &c.threads) =
          (uint32_t)u;
      ++i;
    } else if (strcmp(a, "--seed") == 0) {
      if (!parse_u64(v, UINT64_MAX, &u)) return usage_error("--seed takes an unsigned integer, not '%s'", v ? v : "");
      c.seed = u, ++i;
    } else if (strcmp(a, "--min-repeat-ms") == 0 || strcmp(a, "--rtol") == 0 || strcmp(a, "--atol") == 0 ||
               strcmp(a, "--timeout") == 0) {
      double x = 0;
      if (!parse_positive(v, &x)) return usage_error("%s takes a positive number", a);
      *(strcmp(a, "--min-repeat-ms") == 0 ? &c.min_repeat_ms
        : strcmp(a, "--rtol") == 0        ? &c.rtol
        : strcmp(a, "--atol") == 0        ? &c.atol
                                          : &timeout_s) = x;
      ++i;
    } else if (a[0] == '-' && a[1]) {
      return usage_error("unknown option '%s'", a);
    } else if (npaths < 2) {
      paths[npaths++] = a;
    } else {
      return usage_error("one candidate and one reference, then nothing more ('%s')", a);
    }
  }
  if (npaths != 2) return usage_error("%s", "a candidate and a reference bundle are needed");
  if (timeout_s > 0) {
    /* The default action of SIGALRM ends the program, wherever it hangs. */
    struct itimerval t = {{0, 0}, {(time_t)timeout_s, (suseconds_t)((timeout_s - floor(timeout_s)) * 1e6)}};
    if (t.it_value.tv_sec == 0 && t.it_value.tv_usec == 0) t.it_value.tv_usec = 1;
    setitimer(ITIMER_REAL, &t, NULL);
  }
  uint8_t* bytes[2] = {NULL, NULL};
  size_t sizes[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    if (!read_whole(paths[k], &bytes[k], &sizes[k])) {
      fprintf(stderr, "ingot-measure: cannot read the %s %s: %s\n", k ? "reference" : "candidate", paths[k],
              errno ? strerror(errno) : "empty");
      free(bytes[0]);
      return 2;
    }
  }
  if (phases) print_phase(NULL, INGOT_MEASURE_PHASE_START);
  ingot_measure_report_t report;
  ingot_measure_core_run(bytes[0], sizes[0], bytes[1], sizes[1], &c, phases ? print_phase : NULL, NULL, &report);
  ingot_measure_summary_t summary;
  ingot_measure_core_summarize(&report, &summary);
  char line[1024];
  ingot_measure_core_format_line(&summary, line, sizeof line);
  printf("%s\n", line);
  fflush(stdout);
  free(bytes[0]);
  free(bytes[1]);
  return 0;
}
