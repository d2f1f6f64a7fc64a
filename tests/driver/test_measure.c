/* ingot_driver_measure (driver/driver.h) against real bundles that misbehave.
 *
 * Each bundle holds one step, y = f(a, w), whose kernel is a shared object
 * built here with the system C compiler (as tests/runtime/test_runtime_e2e.c
 * does) and packaged with the packager: the reference adds, the others crash
 * (a store through a null pointer), hang (spin forever), fail (return an
 * error), compute something else (the same kernel with perturbed weights),
 * or do the same work many times over (slow). A corrupted copy of the
 * reference stands for a candidate that does not load. Every failure must come
 * back as its result kind, with the caller running on. Timing is only checked
 * relatively: a bundle against itself is never accepted as faster (five
 * trials through the confirm step), the slow one is never faster than the
 * reference, and the reference is accepted as faster than the slow one.
 *
 *   test_measure CC SOURCE_ROOT WORK_DIR [--runner ssh://USER@HOST:PORT]
 *
 * With --runner, the same bundles are measured on that machine through the
 * ssh runner instead (driver.ssh_runner starts an sshd for it): every kind
 * must come back as it does here, the outputs' checksum must equal a local
 * measurement's, an unreachable port is ERROR, malformed runners are
 * INVALID_ARGUMENT naming them. The reference, a copy and a wrong bundle are
 * also written to WORK_DIR (ref.ingot, copy.ingot, wrong.ingot) for the
 * command-line check that follows. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver/driver.h"
#include "packager/packager.h"
#include "runtime/ingot.h"

#define N 65536

static int g_failures;
#define CHECK(cond, ...)                                                \
  do {                                                                  \
    if (!(cond)) {                                                      \
      fprintf(stderr, "%s:%d: FAILED %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                     \
      fprintf(stderr, "\n");                                            \
      ++g_failures;                                                     \
    }                                                                   \
  } while (0)

static const char* g_cc;
static const char* g_src;
static const char* g_work;

/* The kernel library around one body; a, w, y and N are in scope. */
static const char k_source_format[] =
    "#include <stdint.h>\n"
    "#include \"runtime/ingot_format.h\"\n"
    "#define N %d\n"
    "static int32_t k(const ingot_kernel_env_t* env, void* const* args) {\n"
    "  (void)env;\n"
    "  const float* a = (const float*)args[0];\n"
    "  const float* w = (const float*)args[1];\n"
    "  float* y = (float*)args[2];\n"
    "  %s\n"
    "  return 0;\n"
    "}\n"
    "static const ingot_kernel_entry_t kernels[] = {{\"k\", k}};\n"
    "static const ingot_kernel_library_t library = {INGOT_KERNEL_ABI_VERSION, 1, kernels};\n"
    "__attribute__((visibility(\"default\")))\n"
    "const ingot_kernel_library_t* ingot_library_query(uint32_t abi_version) {\n"
    "  return abi_version == INGOT_KERNEL_ABI_VERSION ? &library : 0;\n"
    "}\n";

static const char k_add[] = "for (int i = 0; i < N; ++i) y[i] = a[i] + w[i];";
/* y * 0 + ... cannot be folded away without fast-math: each pass is real work. */
static const char k_slow[] =
    "for (int i = 0; i < N; ++i) y[i] = a[i] + w[i];\n"
    "  for (int r = 0; r < 30; ++r) for (int i = 0; i < N; ++i) y[i] = y[i] * 0.0f + a[i] + w[i];";
static const char k_crash[] = "*(float* volatile)(uintptr_t)(a[0] > 1e30f ? 64 : 0) = 1.0f; y[0] = 0;";
static const char k_hang[] = "volatile int spin = 1; while (spin) {} y[0] = a[0] + w[0];";
static const char k_fail[] = "(void)a; (void)w; (void)y; return 7;";

static int read_file(const char* path, uint8_t** out, size_t* out_size) {
  FILE* f = fopen(path, "rb");
  if (!f) return 0;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  *out = malloc(n > 0 ? (size_t)n : 1);
  *out_size = fread(*out, 1, (size_t)n, f);
  fclose(f);
  return *out_size == (size_t)n;
}

static int build_so(const char* name, const char* body, uint8_t** out, size_t* out_size) {
  char c_path[1024], so_path[1024], cmd[4096];
  snprintf(c_path, sizeof c_path, "%s/measure_%s.c", g_work, name);
  snprintf(so_path, sizeof so_path, "%s/measure_%s.so", g_work, name);
  FILE* f = fopen(c_path, "wb");
  if (!f) return 0;
  fprintf(f, k_source_format, N, body);
  fclose(f);
  snprintf(cmd, sizeof cmd,
           "\"%s\" -std=c11 -O2 -fPIC -shared -nostdlib -fvisibility=hidden -fno-stack-protector "
           "-Wl,-z,defs -I\"%s\" -o \"%s\" \"%s\"",
           g_cc, g_src, so_path, c_path);
  if (system(cmd) != 0) {
    fprintf(stderr, "command failed: %s\n", cmd);
    return 0;
  }
  return read_file(so_path, out, out_size);
}

static float g_weights[N];
static float g_perturbed[N];
static float g_nudged[N];

/* One step y = k(a, w): a the input, w a weight, y the output. */
static int make_bundle(const char* name, const char* body, const float* weights, uint8_t** out, size_t* out_size) {
  uint8_t* so = NULL;
  size_t so_size = 0;
  if (!build_so(name, body, &so, &so_size)) return 0;
  ingot_bundle_tensor_t t[3];
  memset(t, 0, sizeof t);
  const char* names[3] = {"a", "w", "y"};
  for (int i = 0; i < 3; ++i) {
    t[i].name = names[i];
    t[i].dtype = INGOT_DTYPE_F32;
    t[i].rank = 1;
    t[i].dims[0] = N;
    t[i].storage = INGOT_STORAGE_ARENA;
    t[i].alias_of = UINT32_MAX;
  }
  t[1].storage = INGOT_STORAGE_WEIGHT;
  t[1].data = weights;
  static const uint32_t args[] = {0, 1, 2}, inputs[] = {0}, outputs[] = {2};
  ingot_bundle_step_t step = {0, args, 3, "node_k"};
  const char* kernel_names[] = {"k"};
  ingot_bundle_code_t code = {"c", so, so_size, INGOT_LOADER_CPU_ELF, NULL, NULL};
  ingot_bundle_spec_t spec = {.tensors = t, .tensor_count = 3, .inputs = inputs, .input_count = 1,
                              .outputs = outputs, .output_count = 1, .steps = &step, .step_count = 1,
                              .kernel_names = kernel_names, .kernel_count = 1, .codes = &code, .code_count = 1,
                              .zstd_level = 1};
  ingot_bundle_report_t report;
  ingot_status_t s = ingot_bundle_build(&spec, out, out_size, &report);
  free(so);
  if (s) fprintf(stderr, "%s: bundle: %s\n", name, ingot_compiler_error());
  return s == INGOT_OK;
}

typedef struct bundle_t {
  uint8_t* data;
  size_t size;
} bundle_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void print_result(const char* what, const ingot_driver_measure_result_t* r) {
  printf("%-10s %-11s ratio %.3f [%.3f, %.3f] (min %.3f, max %.3f) cand %.4f ms ref %.4f ms x%u looks %u %s\n", what,
         ingot_driver_measure_kind_name(r->kind), r->ratio, r->ratio_lo, r->ratio_hi, r->ratio_min, r->ratio_max,
         r->candidate_ms, r->reference_ms, r->runs_per_repeat, r->measurements, r->message);
}

static ingot_driver_measure_result_t measure(const bundle_t* cand, const bundle_t* ref,
                                             const ingot_driver_measure_options_t* o, const char* what) {
  ingot_driver_measure_result_t r;
  ingot_status_t s = ingot_driver_measure(cand->data, cand->size, ref->data, ref->size, o, &r);
  CHECK(s == INGOT_OK, "%s: measure failed: %s", what, ingot_compiler_error());
  print_result(what, &r);
  return r;
}

static int write_bundle(const char* name, const bundle_t* b) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", g_work, name);
  FILE* f = fopen(path, "wb");
  int ok = f && fwrite(b->data, 1, b->size, f) == b->size;
  if (f && fclose(f) != 0) ok = 0;
  return ok;
}

typedef struct remote_bundles_t {
  bundle_t *ref, *same, *slow, *crash, *hang, *fail, *wrong, *corrupt;
} remote_bundles_t;

/* The checks through an ssh runner. */
static void check_remote(const char* runner, const remote_bundles_t* b) {
  ingot_driver_measure_options_t local = {.rounds = 8, .repeats = 3, .min_repeat_ms = 0.5, .timeout_s = 20, .seed = 7};
  ingot_driver_measure_options_t o = local;
  o.runner = runner;
  CHECK(ingot_driver_measure_runner_check(runner) == INGOT_OK, "runner check: %s", ingot_compiler_error());

  double t0 = now_s();
  ingot_driver_measure_result_t here = measure(b->same, b->ref, &local, "local");
  ingot_driver_measure_result_t r = measure(b->same, b->ref, &o, "remote");
  printf("first remote measurement (with setting up) in %.2f s\n", now_s() - t0);
  CHECK(r.kind == INGOT_DRIVER_MEASURE_OK && r.measurements == 1, "remote copy: %s %s",
        ingot_driver_measure_kind_name(r.kind), r.message);
  CHECK(r.rounds == 8 && r.runs_per_repeat >= 1 && r.candidate_ms > 0 && r.reference_ms > 0 &&
            r.candidate_ms < 1000 && r.ratio > 0.5 && r.ratio < 2.0 && r.ratio_min <= r.ratio_lo &&
            r.ratio_lo <= r.ratio_hi && r.ratio_hi <= r.ratio_max,
        "remote numbers: rounds %u x%u cand %g ref %g ratio %g [%g, %g] in [%g, %g]", r.rounds, r.runs_per_repeat,
        r.candidate_ms, r.reference_ms, r.ratio, r.ratio_lo, r.ratio_hi, r.ratio_min, r.ratio_max);
  CHECK(r.output_crc == here.output_crc && r.max_abs_diff == here.max_abs_diff,
        "remote and local outputs differ: crc %08x %08x", r.output_crc, here.output_crc);
  t0 = now_s();
  r = measure(b->ref, b->ref, &o, "remote2");
  printf("a remote measurement, set up already: %.2f s\n", now_s() - t0);
  CHECK(r.kind == INGOT_DRIVER_MEASURE_OK && r.output_crc == here.output_crc, "remote self: %s %s",
        ingot_driver_measure_kind_name(r.kind), r.message);

  r = measure(b->wrong, b->ref, &o, "r wrong");
  CHECK(r.kind == INGOT_DRIVER_MEASURE_WRONG && strstr(r.message, "element 32768") != NULL, "remote wrong: %s %s",
        ingot_driver_measure_kind_name(r.kind), r.message);
  r = measure(b->crash, b->ref, &o, "r crash");
  CHECK(r.kind == INGOT_DRIVER_MEASURE_CRASH && r.signal == SIGSEGV && strstr(r.message, "running the candidate"),
        "remote crash: %s signal %d %s", ingot_driver_measure_kind_name(r.kind), r.signal, r.message);
  ingot_driver_measure_options_t quick = o;
  quick.timeout_s = 2;
  t0 = now_s();
  r = measure(b->hang, b->ref, &quick, "r hang");
  double hang_s = now_s() - t0;
  CHECK(r.kind == INGOT_DRIVER_MEASURE_TIMEOUT && strstr(r.message, "running the candidate"), "remote hang: %s %s",
        ingot_driver_measure_kind_name(r.kind), r.message);
  CHECK(hang_s < 10, "the remote hang took %.1f s", hang_s);
  r = measure(b->fail, b->ref, &o, "r fail");
  CHECK(r.kind == INGOT_DRIVER_MEASURE_RUN_FAILED, "remote fail: %s", ingot_driver_measure_kind_name(r.kind));
  r = measure(b->corrupt, b->ref, &o, "r corrupt");
  CHECK(r.kind == INGOT_DRIVER_MEASURE_LOAD_FAILED, "remote corrupt: %s", ingot_driver_measure_kind_name(r.kind));
  r = measure(b->ref, b->corrupt, &o, "r bad ref");
  CHECK(r.kind == INGOT_DRIVER_MEASURE_ERROR, "remote bad reference: %s", ingot_driver_measure_kind_name(r.kind));
  r = measure(b->slow, b->ref, &o, "r slow");
  CHECK(r.kind == INGOT_DRIVER_MEASURE_OK && r.ratio > 1.5, "remote slow: %s ratio %.3f",
        ingot_driver_measure_kind_name(r.kind), r.ratio);
  bool accepted = true;
  ingot_status_t s = ingot_driver_measure_confirm(b->ref->data, b->ref->size, b->ref->data, b->ref->size, &o, NULL,
                                                  &r, &accepted);
  print_result("r self conf", &r);
  CHECK(s == INGOT_OK && !accepted, "remote: a bundle against itself was accepted as faster");

  /* Nobody listens on port 1: ssh's own message, as ERROR. */
  char unreachable[256];
  snprintf(unreachable, sizeof unreachable, "%s", runner);
  char* colon = strrchr(unreachable, ':');
  if (colon && colon > unreachable + 5) snprintf(colon, sizeof unreachable - (size_t)(colon - unreachable), ":1");
  ingot_driver_measure_options_t nowhere = o;
  nowhere.runner = unreachable;
  r = measure(b->same, b->ref, &nowhere, "nowhere");
  CHECK(r.kind == INGOT_DRIVER_MEASURE_ERROR && strstr(r.message, "port 1"), "unreachable: %s %s",
        ingot_driver_measure_kind_name(r.kind), r.message);

  /* Malformed runners are a status naming the string; nothing is run. */
  const char* bad[] = {"ssh://", "ftp://root@host", "ssh://root@host:99999", "ssh://-oProxyCommand=x",
                       "ssh://root@ho;st", "ssh://ro'ot@host", "remote", ""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    ingot_driver_measure_options_t m = o;
    m.runner = bad[i];
    s = ingot_driver_measure(b->same->data, b->same->size, b->ref->data, b->ref->size, &m, &r);
    char quoted[300];
    snprintf(quoted, sizeof quoted, "'%s'", bad[i]);
    CHECK(s == INGOT_ERROR_INVALID_ARGUMENT && strstr(ingot_compiler_error(), quoted) != NULL,
          "runner %s: status %d, %s", quoted, (int)s, ingot_compiler_error());
    CHECK(ingot_driver_measure_runner_check(bad[i]) == INGOT_ERROR_INVALID_ARGUMENT, "runner check %s", quoted);
  }
  CHECK(ingot_driver_measure_runner_check(NULL) == INGOT_OK && ingot_driver_measure_runner_check("local") == INGOT_OK,
        "local runners refused");
  ingot_driver_measure_runners_release();
}

int main(int argc, char** argv) {
  const char* runner = NULL;
  if (argc == 6 && strcmp(argv[4], "--runner") == 0) {
    runner = argv[5];
    argc = 4;
  }
  if (argc != 4) {
    fprintf(stderr, "usage: %s <cc> <source root> <work dir> [--runner R]\n", argv[0]);
    return 2;
  }
  g_cc = argv[1];
  g_src = argv[2];
  g_work = argv[3];
  for (int i = 0; i < N; ++i) {
    g_weights[i] = (float)(i % 7) - 3.0f;
    g_perturbed[i] = g_weights[i] + (i == N / 2 ? 0.25f : 0.0f); /* one element off */
    g_nudged[i] = g_weights[i] * (1.0f + 1e-6f);                 /* within tolerance */
  }
  bundle_t ref = {0}, same = {0}, slow = {0}, crash = {0}, hang = {0}, fail = {0}, wrong = {0}, nudged = {0};
  if (!make_bundle("add", k_add, g_weights, &ref.data, &ref.size) ||
      !make_bundle("add_copy", k_add, g_weights, &same.data, &same.size) ||
      !make_bundle("slow", k_slow, g_weights, &slow.data, &slow.size) ||
      !make_bundle("crash", k_crash, g_weights, &crash.data, &crash.size) ||
      !make_bundle("hang", k_hang, g_weights, &hang.data, &hang.size) ||
      !make_bundle("fail", k_fail, g_weights, &fail.data, &fail.size) ||
      !make_bundle("wrong", k_add, g_perturbed, &wrong.data, &wrong.size) ||
      !make_bundle("nudged", k_add, g_nudged, &nudged.data, &nudged.size)) {
    fprintf(stderr, "cannot build the test bundles\n");
    return 1;
  }
  bundle_t corrupt = {malloc(ref.size), ref.size};
  memcpy(corrupt.data, ref.data, ref.size);
  corrupt.data[ref.size / 2] ^= 0x5a; /* a section checksum no longer matches */

  if (runner) {
    CHECK(write_bundle("ref.ingot", &ref) && write_bundle("copy.ingot", &same) && write_bundle("wrong.ingot", &wrong),
          "cannot write the bundles to %s", g_work);
    remote_bundles_t rb = {&ref, &same, &slow, &crash, &hang, &fail, &wrong, &corrupt};
    check_remote(runner, &rb);
    bundle_t* all[] = {&ref, &same, &slow, &crash, &hang, &fail, &wrong, &nudged, &corrupt};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) free(all[i]->data);
    if (g_failures) {
      fprintf(stderr, "%d failure(s)\n", g_failures);
      return 1;
    }
    printf("measure through %s: all checks passed\n", runner);
    return 0;
  }

  ingot_driver_measure_options_t o = {.rounds = 8, .repeats = 3, .min_repeat_ms = 0.5, .timeout_s = 20, .seed = 7};

  /* Failures come back as kinds; this process runs on. */
  ingot_driver_measure_result_t r = measure(&crash, &ref, &o, "crash");
  CHECK(r.kind == INGOT_DRIVER_MEASURE_CRASH && r.signal != 0, "crash: %s", ingot_driver_measure_kind_name(r.kind));
  CHECK(strstr(r.message, "running the candidate") != NULL, "crash message: %s", r.message);

  ingot_driver_measure_options_t quick = o;
  quick.timeout_s = 2;
  double t0 = now_s();
  r = measure(&hang, &ref, &quick, "hang");
  double hang_s = now_s() - t0;
  CHECK(r.kind == INGOT_DRIVER_MEASURE_TIMEOUT, "hang: %s", ingot_driver_measure_kind_name(r.kind));
  CHECK(hang_s < 10, "the hanging child was not killed at its time-out: %.1f s", hang_s);

  r = measure(&fail, &ref, &o, "fail");
  CHECK(r.kind == INGOT_DRIVER_MEASURE_RUN_FAILED, "fail: %s", ingot_driver_measure_kind_name(r.kind));

  r = measure(&wrong, &ref, &o, "wrong");
  CHECK(r.kind == INGOT_DRIVER_MEASURE_WRONG, "wrong: %s", ingot_driver_measure_kind_name(r.kind));
  CHECK(strstr(r.message, "element 32768") != NULL, "wrong message: %s", r.message);

  r = measure(&corrupt, &ref, &o, "corrupt");
  CHECK(r.kind == INGOT_DRIVER_MEASURE_LOAD_FAILED, "corrupt: %s", ingot_driver_measure_kind_name(r.kind));

  r = measure(&ref, &corrupt, &o, "bad ref");
  CHECK(r.kind == INGOT_DRIVER_MEASURE_ERROR, "bad reference: %s", ingot_driver_measure_kind_name(r.kind));

  /* Within tolerance is right; the checksum is of the candidate's outputs, so
   * the same computation gives the same one. */
  ingot_driver_measure_result_t a = measure(&nudged, &ref, &o, "nudged");
  CHECK(a.kind == INGOT_DRIVER_MEASURE_OK && a.max_abs_diff > 0, "nudged: %s, diff %g",
        ingot_driver_measure_kind_name(a.kind), a.max_abs_diff);
  ingot_driver_measure_result_t b = measure(&same, &ref, &o, "copy");
  ingot_driver_measure_result_t c = measure(&ref, &ref, &o, "self");
  CHECK(b.kind == INGOT_DRIVER_MEASURE_OK && c.kind == INGOT_DRIVER_MEASURE_OK && b.output_crc == c.output_crc &&
            b.max_abs_diff == 0,
        "copy vs self: %s %s crc %08x %08x", ingot_driver_measure_kind_name(b.kind),
        ingot_driver_measure_kind_name(c.kind), b.output_crc, c.output_crc);
  CHECK(c.rounds == 8 && c.ratio_lo <= c.ratio_hi && c.ratio_min <= c.ratio_lo && c.ratio_hi <= c.ratio_max,
        "self: rounds %u, spread [%g, %g] in [%g, %g]", c.rounds, c.ratio_lo, c.ratio_hi, c.ratio_min,
        c.ratio_max);

  /* Measured against itself (and against an identical copy), nothing is ever
   * accepted as a speed-up, whatever the machine does meanwhile. */
  for (int trial = 0; trial < 5; ++trial) {
    const bundle_t* cand = (trial & 1) ? &same : &ref;
    ingot_driver_measure_result_t last;
    bool accepted = true;
    ingot_status_t s = ingot_driver_measure_confirm(cand->data, cand->size, ref.data, ref.size, &o, NULL, &last,
                                                    &accepted);
    print_result(trial & 1 ? "copy conf" : "self conf", &last);
    CHECK(s == INGOT_OK && !accepted, "trial %d: a bundle against itself was accepted as faster (ratio %.3f, hi %.3f)",
          trial, last.ratio, last.ratio_hi);
  }

  /* Relative timing only: 31 passes over the data are slower than one. */
  r = measure(&slow, &ref, &o, "slow");
  CHECK(r.kind == INGOT_DRIVER_MEASURE_OK && r.ratio > 1.5 && !ingot_driver_measure_is_faster(&r, 0),
        "slow: %s ratio %.3f", ingot_driver_measure_kind_name(r.kind), r.ratio);
  bool accepted = false;
  ingot_status_t s = ingot_driver_measure_confirm(ref.data, ref.size, slow.data, slow.size, &o, NULL, &r, &accepted);
  print_result("fast conf", &r);
  CHECK(s == INGOT_OK && accepted, "one pass against 31 was not accepted as faster (ratio %.3f, hi %.3f)", r.ratio,
        r.ratio_hi);

  /* Many candidates at once, one child each, in order. */
  ingot_driver_bundle_bytes_t many[3] = {{crash.data, crash.size}, {same.data, same.size}, {wrong.data, wrong.size}};
  ingot_driver_measure_result_t results[3];
  s = ingot_driver_measure_candidates(many, 3, ref.data, ref.size, &o, results);
  CHECK(s == INGOT_OK && results[0].kind == INGOT_DRIVER_MEASURE_CRASH && results[1].kind == INGOT_DRIVER_MEASURE_OK &&
            results[2].kind == INGOT_DRIVER_MEASURE_WRONG,
        "candidates: %s %s %s", ingot_driver_measure_kind_name(results[0].kind),
        ingot_driver_measure_kind_name(results[1].kind), ingot_driver_measure_kind_name(results[2].kind));

  /* Bad arguments are a status, not a kind. */
  ingot_driver_measure_options_t too_many = o;
  too_many.rounds = INGOT_DRIVER_MEASURE_MAX_ROUNDS + 1;
  CHECK(ingot_driver_measure(ref.data, ref.size, ref.data, ref.size, &too_many, &r) == INGOT_ERROR_INVALID_ARGUMENT,
        "too many rounds accepted");
  CHECK(ingot_driver_measure(NULL, 0, ref.data, ref.size, &o, &r) == INGOT_ERROR_INVALID_ARGUMENT,
        "no candidate accepted");

  bundle_t* all[] = {&ref, &same, &slow, &crash, &hang, &fail, &wrong, &nudged, &corrupt};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) free(all[i]->data);
  if (g_failures) {
    fprintf(stderr, "%d failure(s)\n", g_failures);
    return 1;
  }
  printf("measure: all checks passed\n");
  return 0;
}
