/* Ranged input dims (runtime API 0.6, bundle format 5), without the
 * compiler: a hand-written kernel library (built with the system C
 * compiler) reads the run's dims from the input's shape tensor and writes a
 * padded output y = 2 x + 1 over them, leaving -7 in the padding, and the
 * output's dims in its shape tensor. Checked:
 *   - the writer: version 5 only with a range (3 without), its refusals of
 *     bad ranges (lo 0, lo above the bound, a fixed dim whose lo differs, a
 *     mask past the rank, a shape tensor of the wrong size, a padded output
 *     without a run-time shape); the plan pins the shape tensor from step 0;
 *   - the queries: input_shape_varies, input_range (lo == hi for fixed
 *     dims, zero past rank), the default shape (the bound);
 *   - runs at several shapes, both dims ranged (the rows move) or only the
 *     outer one (dense == padded: nothing moves): the output dense in the
 *     run's shape, the input reading as written after the run, a rerun
 *     giving the same;
 *   - ingot_session_set_input_shape's refusals (rank, a dim out of its
 *     range, naming input, dim, value and range; the shape unchanged);
 *   - a bound input: always copied (the caller's memory is never spread),
 *     checked against the shape's bytes at run time, left as written.
 *
 * usage: test_ranged <c compiler> <source root> <work dir> */
#define _DEFAULT_SOURCE 1
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packager/packager.h"
#include "runtime/ingot.h"
#include "runtime/ingot_format.h"

static int g_failures;
#define CHECK(cond, ...)                                                 \
  do {                                                                   \
    if (!(cond)) {                                                       \
      fprintf(stderr, "%s:%d: FAILED %s: ", __FILE__, __LINE__, #cond);  \
      fprintf(stderr, __VA_ARGS__);                                      \
      fprintf(stderr, "\n");                                             \
      ++g_failures;                                                      \
    }                                                                    \
  } while (0)

/* args: x [B0, B1] padded, xs int64[2] (the run's dims), y [B0, B1] padded,
 * ys int64[2]. */
static const char k_kernel_source[] =
    "#include <stdint.h>\n"
    "#include \"runtime/ingot_format.h\"\n"
    "static int32_t ranged_f32(const ingot_kernel_env_t* env, void* const* args) {\n"
    "  (void)env;\n"
    "  const float* x = (const float*)args[0]; const int64_t* xs = (const int64_t*)args[1];\n"
    "  float* y = (float*)args[2]; int64_t* ys = (int64_t*)args[3];\n"
    "  for (int i = 0; i < B0; ++i)\n"
    "    for (int j = 0; j < B1; ++j)\n"
    "      y[i * B1 + j] = i < xs[0] && j < xs[1] ? 2.0f * x[i * B1 + j] + 1.0f : -7.0f;\n"
    "  ys[0] = xs[0]; ys[1] = xs[1];\n"
    "  return 0;\n"
    "}\n"
    "static const ingot_kernel_entry_t kernels[] = {{\"ranged_f32\", ranged_f32}};\n"
    "static const ingot_kernel_library_t library = {INGOT_KERNEL_ABI_VERSION, 1, kernels};\n"
    "__attribute__((visibility(\"default\")))\n"
    "const ingot_kernel_library_t* ingot_library_query(uint32_t abi_version) {\n"
    "  return abi_version == INGOT_KERNEL_ABI_VERSION ? &library : 0;\n"
    "}\n";

enum { B0 = 3, B1 = 5 };

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

static int build_so(const char* cc, const char* src, const char* work, uint8_t** out, size_t* out_size) {
  char c_path[1024], so_path[1024], cmd[4096];
  snprintf(c_path, sizeof c_path, "%s/ranged_kernels.c", work);
  snprintf(so_path, sizeof so_path, "%s/ranged_kernels.so", work);
  FILE* f = fopen(c_path, "wb");
  if (!f) return 0;
  fputs(k_kernel_source, f);
  fclose(f);
  snprintf(cmd, sizeof cmd,
           "\"%s\" -std=c11 -O2 -fPIC -shared -nostdlib -fvisibility=hidden -fno-stack-protector "
           "-Wl,-z,defs -DB0=%d -DB1=%d -I\"%s\" -o \"%s\" \"%s\"", cc, B0, B1, src, so_path, c_path);
  if (system(cmd) != 0) return 0;
  return read_file(so_path, out, out_size);
}

/* ---- The model: tensors x, xs, y, ys; one step. --------------------------- */

static const uint32_t g_args[] = {0, 1, 2, 3};
static const uint32_t g_inputs[] = {0};
static const uint32_t g_outputs[] = {2};

typedef struct model_t {
  ingot_bundle_tensor_t tensors[4];
  ingot_bundle_step_t step;
  const char* kernel_name;
  ingot_bundle_code_t code;
  uint32_t input_shapes[1], input_range_dims[1], output_shapes[1], output_shape_dims[1];
  int64_t input_range_lo[1][INGOT_MAX_RANK];
  uint8_t output_padded[1];
  ingot_bundle_spec_t spec;
} model_t;

/* x's dims: lo0..B0 x lo1..B1 (lo == bound: fixed). */
static void model_init(model_t* m, int64_t lo0, int64_t lo1, const uint8_t* so, size_t so_size) {
  memset(m, 0, sizeof *m);
  const char* names[4] = {"x", "x_shape", "y", "y_shape"};
  for (int i = 0; i < 4; ++i) {
    m->tensors[i].name = names[i];
    m->tensors[i].dtype = (i & 1) ? INGOT_DTYPE_I64 : INGOT_DTYPE_F32;
    m->tensors[i].rank = (i & 1) ? 1 : 2;
    m->tensors[i].dims[0] = (i & 1) ? 2 : B0;
    m->tensors[i].dims[1] = (i & 1) ? 0 : B1;
    m->tensors[i].storage = INGOT_STORAGE_ARENA;
    m->tensors[i].alias_of = UINT32_MAX;
  }
  m->step = (ingot_bundle_step_t){0, g_args, 4, "node_ranged", 0};
  m->kernel_name = "ranged_f32";
  m->code = (ingot_bundle_code_t){"c", so, so_size, INGOT_LOADER_CPU_ELF, NULL, NULL};
  m->input_shapes[0] = 1;
  m->input_range_dims[0] = (lo0 != B0 ? 1u : 0u) | (lo1 != B1 ? 2u : 0u);
  m->input_range_lo[0][0] = lo0;
  m->input_range_lo[0][1] = lo1;
  m->output_shapes[0] = 3;
  m->output_shape_dims[0] = 3;
  m->output_padded[0] = 1;
  m->spec = (ingot_bundle_spec_t){
      .tensors = m->tensors, .tensor_count = 4, .inputs = g_inputs, .input_count = 1,
      .outputs = g_outputs, .output_count = 1, .output_shapes = m->output_shapes,
      .output_shape_dims = m->output_shape_dims, .input_shapes = m->input_shapes,
      .input_range_dims = m->input_range_dims, .input_range_lo = (const int64_t(*)[INGOT_MAX_RANK])m->input_range_lo,
      .output_padded = m->output_padded, .steps = &m->step, .step_count = 1, .kernel_names = &m->kernel_name,
      .kernel_count = 1, .codes = &m->code, .code_count = 1};
}

static uint32_t format_version_of(const uint8_t* data) {
  ingot_bundle_header_t h;
  memcpy(&h, data, sizeof h);
  return h.format_version;
}

/* One run at n0 x n1 through the session's own input buffer. */
static void run_at(ingot_session_t* s, int64_t n0, int64_t n1, float base) {
  int64_t dims[2] = {n0, n1};
  CHECK(ingot_session_set_input_shape(s, 0, 2, dims) == INGOT_OK, "set %lldx%lld: %s", (long long)n0, (long long)n1,
        ingot_last_error());
  float* x = (float*)ingot_session_input_data(s, 0);
  for (int64_t k = 0; k < n0 * n1; ++k) x[k] = base + (float)k;
  for (int rep = 0; rep < 2; ++rep) {
    CHECK(ingot_session_run(s) == INGOT_OK, "run %lldx%lld: %s", (long long)n0, (long long)n1, ingot_last_error());
    uint32_t rank = 0;
    int64_t out[INGOT_MAX_RANK];
    CHECK(ingot_session_output_shape(s, 0, &rank, out) == INGOT_OK && rank == 2 && out[0] == n0 && out[1] == n1,
          "output shape %lldx%lld at %lldx%lld", (long long)out[0], (long long)out[1], (long long)n0, (long long)n1);
    const float* y = (const float*)ingot_session_output_data(s, 0);
    int bad = 0;
    for (int64_t k = 0; k < n0 * n1; ++k) {
      bad += y[k] != 2.0f * (base + (float)k) + 1.0f;
      bad += x[k] != base + (float)k;
    }
    CHECK(!bad, "%d wrong values at %lldx%lld (run %d)", bad, (long long)n0, (long long)n1, rep);
  }
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: test_ranged <c compiler> <source root> <work dir>\n");
    return 2;
  }
  uint8_t* so = NULL;
  size_t so_size = 0;
  if (!build_so(argv[1], argv[2], argv[3], &so, &so_size)) {
    fprintf(stderr, "cannot build the kernel library\n");
    return 1;
  }
  model_t m;

  /* ---- The writer's refusals and version choice. */
  struct { int64_t lo0, lo1; uint32_t mask, shape; int padded_without_shape; const char* what; } bad[] = {
      {0, 2, 3, 1, 0, "lo 0"},
      {1, 6, 3, 1, 0, "lo above the bound"},
      {1, 3, 1, 1, 0, "a fixed dim whose lo differs"},
      {1, 2, 7, 1, 0, "a mask past the rank"},
      {1, 2, 3, 0, 0, "a shape tensor of the wrong size (x itself)"},
      {1, 2, 3, 1, 1, "a padded output without a run-time shape"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
    model_init(&m, 1, 2, so, so_size);
    m.input_range_lo[0][0] = bad[k].lo0;
    m.input_range_lo[0][1] = bad[k].lo1;
    m.input_range_dims[0] = bad[k].mask;
    m.input_shapes[0] = bad[k].shape;
    if (bad[k].padded_without_shape) m.output_shapes[0] = UINT32_MAX;
    uint8_t* data = NULL;
    size_t size = 0;
    CHECK(ingot_bundle_build(&m.spec, &data, &size, NULL) == INGOT_ERROR_INVALID_ARGUMENT, "%s accepted", bad[k].what);
    free(data);
  }
  model_init(&m, 1, 2, so, so_size);
  uint64_t offsets[4], arena = 0, lower = 0;
  CHECK(ingot_bundle_plan(&m.spec, offsets, &arena, &lower) == INGOT_OK, "plan: %s", ingot_compiler_error());
  uint32_t first[4], last[4];
  ingot_bundle_live_intervals(&m.spec, first, last);
  CHECK(first[1] == 0 && last[1] == 0, "the shape tensor lives %u..%u", first[1], last[1]);
  {
    model_t fixed;
    model_init(&fixed, B0, B1, so, so_size);
    fixed.spec.input_shapes = NULL;
    fixed.spec.input_range_dims = NULL;
    fixed.spec.input_range_lo = NULL;
    fixed.spec.output_padded = NULL;
    fixed.spec.output_shapes = NULL;
    fixed.spec.output_shape_dims = NULL;
    uint8_t* data = NULL;
    size_t size = 0;
    CHECK(ingot_bundle_build(&fixed.spec, &data, &size, NULL) == INGOT_OK && format_version_of(data) == 3,
          "a bundle without ranges is not version 3");
    free(data);
  }

  /* ---- Both dims ranged: x is 1..3 x 2..5. */
  uint8_t* data = NULL;
  size_t size = 0;
  CHECK(ingot_bundle_build(&m.spec, &data, &size, NULL) == INGOT_OK, "build: %s", ingot_compiler_error());
  if (!data) return 1;
  CHECK(format_version_of(data) == INGOT_FORMAT_VERSION, "version %u", format_version_of(data));
  { /* for the CLI and Python checks by hand: <work dir>/ranged.ingot */
    char path[1024];
    snprintf(path, sizeof path, "%s/ranged.ingot", argv[3]);
    FILE* f = fopen(path, "wb");
    if (f) {
      fwrite(data, 1, size, f);
      fclose(f);
    }
  }
  ingot_bundle_t* b = NULL;
  CHECK(ingot_bundle_open_memory(data, size, NULL, &b) == INGOT_OK, "open: %s", ingot_last_error());
  if (!b) return 1;
  CHECK(ingot_bundle_input_shape_varies(b, 0) == 1 && ingot_bundle_input_shape_varies(b, 1) == 0, "input varies");
  CHECK(ingot_bundle_output_shape_varies(b, 0) == 1, "output varies");
  uint32_t rank = 0;
  int64_t lo[INGOT_MAX_RANK], hi[INGOT_MAX_RANK];
  CHECK(ingot_bundle_input_range(b, 0, &rank, lo, hi) == INGOT_OK && rank == 2 && lo[0] == 1 && lo[1] == 2 &&
            hi[0] == B0 && hi[1] == B1 && lo[2] == 0 && hi[2] == 0,
        "input range");
  CHECK(ingot_bundle_input_range(b, 1, &rank, lo, hi) == INGOT_ERROR_NOT_FOUND, "input 1");
  ingot_session_t* s = NULL;
  CHECK(ingot_session_create(b, NULL, &s) == INGOT_OK, "session: %s", ingot_last_error());
  if (!s) return 1;
  int64_t dims[INGOT_MAX_RANK];
  CHECK(ingot_session_input_shape(s, 0, &rank, dims) == INGOT_OK && rank == 2 && dims[0] == B0 && dims[1] == B1,
        "default shape");
  run_at(s, 2, 3, 10.0f);
  run_at(s, 3, 5, 20.0f);
  run_at(s, 1, 2, 30.0f);
  run_at(s, 3, 2, 40.0f);
  run_at(s, 1, 5, 50.0f);
  run_at(s, 3, 4, 60.0f);

  /* Refusals, the shape unchanged. */
  int64_t over[2] = {4, 3}, under[2] = {2, 1};
  CHECK(ingot_session_set_input_shape(s, 0, 2, over) == INGOT_ERROR_INVALID_ARGUMENT &&
            strstr(ingot_last_error(), "'x'") && strstr(ingot_last_error(), "dim 0 is 4") &&
            strstr(ingot_last_error(), "1..3"),
        "over: %s", ingot_last_error());
  CHECK(ingot_session_set_input_shape(s, 0, 2, under) == INGOT_ERROR_INVALID_ARGUMENT &&
            strstr(ingot_last_error(), "dim 1 is 1") && strstr(ingot_last_error(), "2..5"),
        "under: %s", ingot_last_error());
  CHECK(ingot_session_set_input_shape(s, 0, 1, over) == INGOT_ERROR_INVALID_ARGUMENT, "rank 1 accepted");
  CHECK(ingot_session_set_input_shape(s, 1, 2, over) == INGOT_ERROR_NOT_FOUND, "input 1 accepted");
  CHECK(ingot_session_input_shape(s, 0, &rank, dims) == INGOT_OK && dims[0] == 3 && dims[1] == 4, "shape changed");

  /* A bound input: copied, checked against the shape's bytes, untouched. */
  float buf[B0 * B1];
  CHECK(ingot_session_bind_input(s, 0, buf, sizeof(float)) == INGOT_ERROR_INVALID_ARGUMENT,
        "a buffer below the least shape bound");
  CHECK(ingot_session_bind_input(s, 0, buf, sizeof(float) * 6) == INGOT_OK, "bind: %s", ingot_last_error());
  CHECK(ingot_session_binding_copies(s, 0, 0) == 1, "a ranged input bound zero-copy");
  int64_t d24[2] = {2, 4};
  CHECK(ingot_session_set_input_shape(s, 0, 2, d24) == INGOT_OK, "set 2x4");
  CHECK(ingot_session_run(s) == INGOT_ERROR_INVALID_ARGUMENT, "a 6-float buffer ran at 2x4");
  CHECK(ingot_session_bind_input(s, 0, buf, sizeof buf) == INGOT_OK, "bind: %s", ingot_last_error());
  for (int k = 0; k < B0 * B1; ++k) buf[k] = (float)k;
  CHECK(ingot_session_run(s) == INGOT_OK, "bound run: %s", ingot_last_error());
  const float* y = (const float*)ingot_session_output_data(s, 0);
  int wrong = 0;
  for (int k = 0; k < 8; ++k) wrong += y[k] != 2.0f * (float)k + 1.0f;
  for (int k = 0; k < B0 * B1; ++k) wrong += buf[k] != (float)k;
  CHECK(!wrong, "bound run: %d wrong values", wrong);
  ingot_session_release(s);
  ingot_bundle_release(b);
  free(data);

  /* ---- Only the outer dim ranged (dense == padded) and a fixed output. */
  model_init(&m, 1, B1, so, so_size);
  CHECK(ingot_bundle_build(&m.spec, &data, &size, NULL) == INGOT_OK, "build: %s", ingot_compiler_error());
  b = NULL;
  CHECK(ingot_bundle_open_memory(data, size, NULL, &b) == INGOT_OK, "open: %s", ingot_last_error());
  s = NULL;
  if (b) CHECK(ingot_session_create(b, NULL, &s) == INGOT_OK, "session: %s", ingot_last_error());
  if (s) {
    run_at(s, 2, B1, 1.0f);
    run_at(s, 1, B1, 2.0f);
    int64_t narrow[2] = {2, 4};
    CHECK(ingot_session_set_input_shape(s, 0, 2, narrow) == INGOT_ERROR_INVALID_ARGUMENT &&
              strstr(ingot_last_error(), "fixed at 5"),
          "a fixed dim: %s", ingot_last_error());
  }
  ingot_session_release(s);
  ingot_bundle_release(b);
  free(data);
  free(so);
  if (g_failures) fprintf(stderr, "%d failures\n", g_failures);
  else printf("ranged: all checks passed\n");
  return g_failures ? 1 : 0;
}
