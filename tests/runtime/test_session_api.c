/* Runtime API 0.4 (issue 13, item 5): caller-owned buffers, shared threads
 * and the application's parallel-for, bundle metadata.
 *
 * A hand-written kernel library is built with the system C compiler and
 * packaged with the packager API:
 *   a (input), w (weight), t = a + w, y = 2 t + 1 (output 0),
 *   z = 3 y (output 1; reads output y after it was written),
 *   p = z + 1 (output 2, through env->parallel_for),
 *   q = v where v is a view of y (output 3: y's storage is shared, so a
 *   binding of y must copy), r = {address of a, address of z, thread_count}
 *   as the kernels saw them (output 4, int64).
 * Checked:
 *   - bind: every input and output bound to caller buffers, outputs right,
 *     the kernels' pointers are the caller's (r), ingot_session_*_data give
 *     them back, y copied (its view), the others not; a later step reads the
 *     bound output z; too small, misaligned, overlapping and out-of-range
 *     bindings refused and leaving the binding as it was; unbind returns to
 *     the arena; element alignment (not 64) is enough; a bound input whose
 *     storage a view shares (second bundle) is copied and the result right;
 *   - threads: two sessions sharing one 2-thread pool, run at once from two
 *     threads many times, give the outputs of private pools; the
 *     application's parallel-for is called and its thread count reaches the
 *     kernels; bad option combinations refused;
 *   - metadata: round trip through the packager (sorted, lookup, unknown
 *     key), a bundle without any (as before 0.4), duplicate keys refused by
 *     the writer, a corrupt METADATA section refused by the reader.
 *
 *   - GPU: with the fake CUDA driver (fake_cuda_driver.c) given, a CUDA
 *     variant's bound input reaches the device and its bound outputs come
 *     back into the caller's buffers (through the run's copies).
 *
 * usage: test_session_api <c compiler> <source root> <work dir> [fake libcuda] */
#define _DEFAULT_SOURCE 1
#include <pthread.h>
#include <stdatomic.h>
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

#define N 1000

static const char k_kernel_source[] =
    "#include <stdint.h>\n"
    "#include \"runtime/ingot_format.h\"\n"
    "static int32_t add_f32(const ingot_kernel_env_t* env, void* const* args) {\n"
    "  (void)env; const float* a = args[0]; const float* w = args[1]; float* t = args[2];\n"
    "  for (int i = 0; i < N; ++i) t[i] = a[i] + w[i];\n"
    "  return 0;\n"
    "}\n"
    "static int32_t scale_f32(const ingot_kernel_env_t* env, void* const* args) {\n"
    "  (void)env; const float* t = args[0]; float* y = args[1];\n"
    "  for (int i = 0; i < N; ++i) y[i] = 2.0f * t[i] + 1.0f;\n"
    "  return 0;\n"
    "}\n"
    "static int32_t mul3_f32(const ingot_kernel_env_t* env, void* const* args) {\n"
    "  (void)env; const float* y = args[0]; float* z = args[1];\n"
    "  for (int i = 0; i < N; ++i) z[i] = 3.0f * y[i];\n"
    "  return 0;\n"
    "}\n"
    "typedef struct { const float* z; float* p; } par_t;\n"
    "static void par_body(void* c, int64_t b, int64_t e) {\n"
    "  const par_t* x = c;\n"
    "  for (int64_t i = b; i < e; ++i) x->p[i] = x->z[i] + 1.0f;\n"
    "}\n"
    "static int32_t par_f32(const ingot_kernel_env_t* env, void* const* args) {\n"
    "  par_t x = {args[0], args[1]};\n"
    "  env->parallel_for(env->pool, N, par_body, &x);\n"
    "  return 0;\n"
    "}\n"
    "static int32_t copy_f32(const ingot_kernel_env_t* env, void* const* args) {\n"
    "  (void)env; const float* v = args[0]; float* q = args[1];\n"
    "  for (int i = 0; i < N; ++i) q[i] = v[i];\n"
    "  return 0;\n"
    "}\n"
    "static int32_t addr_i64(const ingot_kernel_env_t* env, void* const* args) {\n"
    "  int64_t* r = args[2];\n"
    "  r[0] = (int64_t)(uintptr_t)args[0]; r[1] = (int64_t)(uintptr_t)args[1]; r[2] = env->thread_count;\n"
    "  return 0;\n"
    "}\n"
    "static const ingot_kernel_entry_t kernels[] = {{\"add_f32\", add_f32}, {\"scale_f32\", scale_f32},\n"
    "  {\"mul3_f32\", mul3_f32}, {\"par_f32\", par_f32}, {\"copy_f32\", copy_f32}, {\"addr_i64\", addr_i64}};\n"
    "static const ingot_kernel_library_t library = {INGOT_KERNEL_ABI_VERSION, 6, kernels};\n"
    "__attribute__((visibility(\"default\")))\n"
    "const ingot_kernel_library_t* ingot_library_query(uint32_t abi_version) {\n"
    "  return abi_version == INGOT_KERNEL_ABI_VERSION ? &library : 0;\n"
    "}\n";

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
  snprintf(c_path, sizeof c_path, "%s/api_kernels.c", work);
  snprintf(so_path, sizeof so_path, "%s/api_kernels.so", work);
  FILE* f = fopen(c_path, "wb");
  if (!f) return 0;
  fputs(k_kernel_source, f);
  fclose(f);
  snprintf(cmd, sizeof cmd,
           "\"%s\" -std=c11 -O2 -fPIC -shared -nostdlib -fvisibility=hidden -fno-stack-protector "
           "-Wl,-z,defs -DN=%d -I\"%s\" -o \"%s\" \"%s\"", cc, N, src, so_path, c_path);
  if (system(cmd) != 0) return 0;
  return read_file(so_path, out, out_size);
}

/* ---- The model ------------------------------------------------------------- */

enum { T_A, T_W, T_T, T_Y, T_Z, T_P, T_V, T_Q, T_R, T_COUNT };
static const uint32_t g_add[] = {T_A, T_W, T_T}, g_scale[] = {T_T, T_Y}, g_mul3[] = {T_Y, T_Z},
                      g_par[] = {T_Z, T_P}, g_copy[] = {T_V, T_Q}, g_addr[] = {T_A, T_Z, T_R};
static const uint32_t g_inputs[] = {T_A};
static const uint32_t g_outputs[] = {T_Y, T_Z, T_P, T_Q, T_R};
static const char* const g_kernel_names[] = {"add_f32", "scale_f32", "mul3_f32", "par_f32", "copy_f32", "addr_i64"};
static float g_w[N];

typedef struct model_t {
  ingot_bundle_tensor_t tensors[T_COUNT];
  ingot_bundle_step_t steps[6];
  ingot_bundle_code_t code;
  ingot_bundle_spec_t spec;
} model_t;

static void model_init(model_t* m, const uint8_t* so, size_t so_size) {
  memset(m, 0, sizeof *m);
  const char* names[T_COUNT] = {"a", "w", "t", "y", "z", "p", "v", "q", "r"};
  for (int i = 0; i < T_COUNT; ++i) {
    m->tensors[i] = (ingot_bundle_tensor_t){.name = names[i], .dtype = INGOT_DTYPE_F32, .rank = 1,
                                            .storage = INGOT_STORAGE_ARENA, .alias_of = UINT32_MAX};
    m->tensors[i].dims[0] = N;
  }
  m->tensors[T_W].storage = INGOT_STORAGE_WEIGHT;
  m->tensors[T_W].data = g_w;
  m->tensors[T_V].alias_of = T_Y; /* a view of output y */
  m->tensors[T_R].dtype = INGOT_DTYPE_I64;
  m->tensors[T_R].dims[0] = 3;
  m->steps[0] = (ingot_bundle_step_t){0, g_add, 3, "add"};
  m->steps[1] = (ingot_bundle_step_t){1, g_scale, 2, "scale"};
  m->steps[2] = (ingot_bundle_step_t){2, g_mul3, 2, "mul3"};
  m->steps[3] = (ingot_bundle_step_t){3, g_par, 2, "par"};
  m->steps[4] = (ingot_bundle_step_t){4, g_copy, 2, "copy"};
  m->steps[5] = (ingot_bundle_step_t){5, g_addr, 3, "addr"};
  m->code = (ingot_bundle_code_t){"c", so, so_size, INGOT_LOADER_CPU_ELF, NULL, NULL};
  m->spec = (ingot_bundle_spec_t){.tensors = m->tensors, .tensor_count = T_COUNT, .inputs = g_inputs,
                                  .input_count = 1, .outputs = g_outputs, .output_count = 5,
                                  .steps = m->steps, .step_count = 6, .kernel_names = g_kernel_names,
                                  .kernel_count = 6, .codes = &m->code, .code_count = 1};
}

static ingot_bundle_t* open_spec(const ingot_bundle_spec_t* spec) {
  uint8_t* data = NULL;
  size_t size = 0;
  if (ingot_bundle_build(spec, &data, &size, NULL) != INGOT_OK) {
    fprintf(stderr, "build: %s\n", ingot_compiler_error());
    return NULL;
  }
  ingot_bundle_t* b = NULL;
  ingot_status_t s = ingot_bundle_open_memory(data, size, NULL, &b);
  CHECK(s == INGOT_OK, "open: %s", ingot_last_error());
  free(data);
  return b;
}

static void fill_input(float* a, float k) {
  for (int i = 0; i < N; ++i) a[i] = k + (float)(i % 17);
}

/* Whether outputs y, z, p, q hold what input a gives. */
static int outputs_right(const float* a, const float* y, const float* z, const float* p, const float* q) {
  for (int i = 0; i < N; ++i) {
    float yy = 2.0f * (a[i] + g_w[i]) + 1.0f;
    if (y[i] != yy || z[i] != 3.0f * yy || p[i] != 3.0f * yy + 1.0f || q[i] != yy) return 0;
  }
  return 1;
}

static int session_outputs_right(ingot_session_t* s, const float* a) {
  return outputs_right(a, ingot_session_output_data(s, 0), ingot_session_output_data(s, 1),
                       ingot_session_output_data(s, 2), ingot_session_output_data(s, 3));
}

/* ---- Binding ------------------------------------------------------------------ */

static void test_bind(ingot_bundle_t* b) {
  ingot_session_options_t o = {.threads = 2};
  ingot_session_t* s = NULL;
  CHECK(ingot_session_create(b, &o, &s) == INGOT_OK, "create: %s", ingot_last_error());
  if (!s) return;
  const size_t fb = sizeof(float) * N;
  /* One block for every buffer, 64-aligned, each buffer at an offset of its own. */
  uint8_t* block = aligned_alloc(64, 8 * fb);
  memset(block, 0, 8 * fb);
  float* a = (float*)block;
  float* y = (float*)(block + fb);
  float* z = (float*)(block + 2 * fb);
  float* p = (float*)(block + 3 * fb);
  float* q = (float*)(block + 4 * fb);
  int64_t* r = (int64_t*)(block + 5 * fb);
  fill_input(a, 1.0f);

  /* Unbound: the kernels see the session's own memory. */
  memcpy(ingot_session_input_data(s, 0), a, fb);
  CHECK(ingot_session_run(s) == INGOT_OK, "run: %s", ingot_last_error());
  CHECK(session_outputs_right(s, a), "unbound outputs");
  const int64_t* r_arena = ingot_session_output_data(s, 4);
  CHECK(r_arena[0] == (int64_t)(uintptr_t)ingot_session_input_data(s, 0), "unbound input address");
  CHECK(r_arena[1] == (int64_t)(uintptr_t)ingot_session_output_data(s, 1), "unbound output address");
  CHECK(r_arena[2] == 2, "thread_count %lld", (long long)r_arena[2]);
  float* arena_a = ingot_session_input_data(s, 0);

  /* Refusals, each leaving the session unbound. */
  CHECK(ingot_session_bind_input(s, 0, a, fb - 1) == INGOT_ERROR_INVALID_ARGUMENT, "too small accepted");
  CHECK(strstr(ingot_last_error(), "needs 4000 bytes"), "message: %s", ingot_last_error());
  CHECK(ingot_session_bind_input(s, 0, block + 2, fb) == INGOT_ERROR_INVALID_ARGUMENT, "misaligned accepted");
  CHECK(strstr(ingot_last_error(), "aligned"), "message: %s", ingot_last_error());
  CHECK(ingot_session_bind_input(s, 1, a, fb) == INGOT_ERROR_NOT_FOUND, "input 1 accepted");
  CHECK(ingot_session_bind_output(s, 5, y, fb) == INGOT_ERROR_NOT_FOUND, "output 5 accepted");
  CHECK(ingot_session_input_data(s, 0) == arena_a, "a refused binding changed the input");

  /* Everything bound. Element alignment is enough: a at +4 bytes would do,
   * but a stays at its aligned place for the checks below. */
  CHECK(ingot_session_bind_input(s, 0, a, fb) == INGOT_OK, "bind a: %s", ingot_last_error());
  CHECK(ingot_session_bind_output(s, 0, y, fb) == INGOT_OK, "bind y: %s", ingot_last_error());
  CHECK(ingot_session_bind_output(s, 1, z, fb + 100) == INGOT_OK, "bind z (larger): %s", ingot_last_error());
  CHECK(ingot_session_bind_output(s, 2, p, fb) == INGOT_OK, "bind p: %s", ingot_last_error());
  CHECK(ingot_session_bind_output(s, 3, q, fb) == INGOT_OK, "bind q: %s", ingot_last_error());
  CHECK(ingot_session_bind_output(s, 4, (float*)y + 4, 24) == INGOT_ERROR_INVALID_ARGUMENT,
        "r overlapping y accepted");
  CHECK(strstr(ingot_last_error(), "overlaps"), "message: %s", ingot_last_error());
  CHECK(ingot_session_bind_output(s, 4, r, 24) == INGOT_OK, "bind r: %s", ingot_last_error());
  CHECK(ingot_session_input_data(s, 0) == a && ingot_session_output_data(s, 1) == z, "data pointers");
  CHECK(!ingot_session_binding_copies(s, 0, 0), "a copied");
  CHECK(ingot_session_binding_copies(s, 1, 0), "y (shared with its view v) not copied");
  CHECK(!ingot_session_binding_copies(s, 1, 1) && !ingot_session_binding_copies(s, 1, 2) &&
            !ingot_session_binding_copies(s, 1, 3) && !ingot_session_binding_copies(s, 1, 4),
        "z, p, q or r copied");
  for (int round = 0; round < 3; ++round) {
    fill_input(a, 10.0f * (float)round);
    memset(y, 0, fb); memset(z, 0, fb); memset(p, 0, fb); memset(q, 0, fb);
    CHECK(ingot_session_run(s) == INGOT_OK, "bound run: %s", ingot_last_error());
    CHECK(outputs_right(a, y, z, p, q), "bound outputs, round %d", round);
    CHECK(r[0] == (int64_t)(uintptr_t)a, "the kernel read input a at %llx, not the caller's %p",
          (unsigned long long)r[0], (void*)a);
    CHECK(r[1] == (int64_t)(uintptr_t)z, "the kernels wrote output z at %llx, not the caller's %p",
          (unsigned long long)r[1], (void*)z);
  }
  /* The run never wrote the arena's copy of the input. */
  CHECK(arena_a[0] == 1.0f, "arena input overwritten: %f", arena_a[0]);

  /* Unbind z: the arena again, results still right. */
  CHECK(ingot_session_bind_output(s, 1, NULL, 0) == INGOT_OK, "unbind z");
  CHECK(ingot_session_output_data(s, 1) != z, "unbound z still the caller's");
  fill_input(a, 5.0f);
  memset(z, 0, fb);
  CHECK(ingot_session_run(s) == INGOT_OK, "run after unbind: %s", ingot_last_error());
  CHECK(outputs_right(a, y, ingot_session_output_data(s, 1), p, q), "outputs after unbinding z");
  CHECK(z[0] == 0.0f, "unbound z's old buffer written");
  CHECK(r[1] == (int64_t)(uintptr_t)ingot_session_output_data(s, 1), "z not back in the arena");

  /* Element alignment only: a float buffer at +4 bytes. */
  float* a4 = (float*)(block + 6 * fb + 4);
  fill_input(a4, 7.0f);
  CHECK(ingot_session_bind_input(s, 0, a4, fb) == INGOT_OK, "bind a at +4: %s", ingot_last_error());
  CHECK(ingot_session_run(s) == INGOT_OK, "run a at +4: %s", ingot_last_error());
  CHECK(outputs_right(a4, y, ingot_session_output_data(s, 1), p, q), "outputs from a at +4");
  CHECK(r[0] == (int64_t)(uintptr_t)a4, "a at +4 not read in place");
  ingot_session_release(s);
  free(block);
}

/* A bound input whose storage a view shares: copied, right results. */
static void test_bind_input_view(const uint8_t* so, size_t so_size) {
  static const uint32_t add[] = {1, 2, 3}, scale[] = {3, 4}, ins[] = {0}, outs[] = {4};
  static const char* const names[] = {"add_f32", "scale_f32"};
  ingot_bundle_tensor_t t[5];
  const char* tn[5] = {"a", "av", "w", "t", "y"};
  for (int i = 0; i < 5; ++i) {
    t[i] = (ingot_bundle_tensor_t){.name = tn[i], .dtype = INGOT_DTYPE_F32, .rank = 1,
                                   .storage = INGOT_STORAGE_ARENA, .alias_of = UINT32_MAX};
    t[i].dims[0] = N;
  }
  t[1].alias_of = 0;
  t[2].storage = INGOT_STORAGE_WEIGHT;
  t[2].data = g_w;
  ingot_bundle_step_t steps[2] = {{0, add, 3, "add"}, {1, scale, 2, "scale"}};
  ingot_bundle_code_t code = {"c", so, so_size, INGOT_LOADER_CPU_ELF, NULL, NULL};
  ingot_bundle_spec_t spec = {.tensors = t, .tensor_count = 5, .inputs = ins, .input_count = 1,
                              .outputs = outs, .output_count = 1, .steps = steps, .step_count = 2,
                              .kernel_names = names, .kernel_count = 2, .codes = &code, .code_count = 1};
  ingot_bundle_t* b = open_spec(&spec);
  if (!b) return;
  ingot_session_t* s = NULL;
  CHECK(ingot_session_create(b, NULL, &s) == INGOT_OK, "create: %s", ingot_last_error());
  float* a = aligned_alloc(64, sizeof(float) * N);
  float* y = aligned_alloc(64, sizeof(float) * N);
  fill_input(a, 3.0f);
  CHECK(ingot_session_bind_input(s, 0, a, sizeof(float) * N) == INGOT_OK, "bind: %s", ingot_last_error());
  CHECK(ingot_session_bind_output(s, 0, y, sizeof(float) * N) == INGOT_OK, "bind: %s", ingot_last_error());
  CHECK(ingot_session_binding_copies(s, 0, 0), "input a (read through its view) not copied");
  CHECK(!ingot_session_binding_copies(s, 1, 0), "output y copied");
  CHECK(ingot_session_run(s) == INGOT_OK, "run: %s", ingot_last_error());
  int right = 1;
  for (int i = 0; i < N; ++i) right &= y[i] == 2.0f * (a[i] + g_w[i]) + 1.0f;
  CHECK(right, "outputs from an input read through a view");
  free(a);
  free(y);
  ingot_session_release(s);
  ingot_bundle_release(b);
}

/* An output that is a view of an intermediate that no step touches while
 * the output is live: t = a + w (step 0), y = 2 t + 1 (step 1), o a view of
 * t (an output), z = 3 o (step 2). o's own interval starts at step 2, t's
 * ends at step 1: only the plan's storage interval (the group's, since 0.4)
 * shows that o shares t's bytes, so a binding of o must copy. */
static void test_bind_output_view(const uint8_t* so, size_t so_size) {
  static const uint32_t add[] = {0, 1, 2}, scale[] = {2, 3}, mul3[] = {4, 5}, ins[] = {0}, outs[] = {4, 5, 3};
  static const char* const names[] = {"add_f32", "scale_f32", "mul3_f32"};
  ingot_bundle_tensor_t t[6];
  const char* tn[6] = {"a", "w", "t", "y", "o", "z"};
  for (int i = 0; i < 6; ++i) {
    t[i] = (ingot_bundle_tensor_t){.name = tn[i], .dtype = INGOT_DTYPE_F32, .rank = 1,
                                   .storage = INGOT_STORAGE_ARENA, .alias_of = UINT32_MAX};
    t[i].dims[0] = N;
  }
  t[1].storage = INGOT_STORAGE_WEIGHT;
  t[1].data = g_w;
  t[4].alias_of = 2;
  ingot_bundle_step_t steps[3] = {{0, add, 3, "add"}, {1, scale, 2, "scale"}, {2, mul3, 2, "mul3"}};
  ingot_bundle_code_t code = {"c", so, so_size, INGOT_LOADER_CPU_ELF, NULL, NULL};
  ingot_bundle_spec_t spec = {.tensors = t, .tensor_count = 6, .inputs = ins, .input_count = 1,
                              .outputs = outs, .output_count = 3, .steps = steps, .step_count = 3,
                              .kernel_names = names, .kernel_count = 3, .codes = &code, .code_count = 1};
  ingot_bundle_t* b = open_spec(&spec);
  if (!b) return;
  ingot_session_t* s = NULL;
  CHECK(ingot_session_create(b, NULL, &s) == INGOT_OK, "create: %s", ingot_last_error());
  float* a = ingot_session_input_data(s, 0);
  fill_input(a, 9.0f);
  float* o = aligned_alloc(64, sizeof(float) * N);
  CHECK(ingot_session_bind_output(s, 0, o, sizeof(float) * N) == INGOT_OK, "bind: %s", ingot_last_error());
  CHECK(ingot_session_binding_copies(s, 1, 0), "output o (a view of t) not copied");
  CHECK(ingot_session_run(s) == INGOT_OK, "run: %s", ingot_last_error());
  const float* z = ingot_session_output_data(s, 1);
  int right = 1;
  for (int i = 0; i < N; ++i) right &= o[i] == a[i] + g_w[i] && z[i] == 3.0f * (a[i] + g_w[i]);
  CHECK(right, "outputs of an output view bound");
  free(o);
  ingot_session_release(s);
  ingot_bundle_release(b);
}

/* The same tensor as input 0 and output 0 (plus u = t + w, output 1):
 * the binding of either must copy, on the CPU (storage in two slots) as on
 * a GPU (every binding goes through the run's copies). With
 * `cuda_variant`, the bundle's only variant is a CUDA one (bare PTX; the
 * fake driver's launches do nothing, its device memory is host memory), so
 * only the copies show: input 0's bound bytes reach output 0's bound
 * buffer through the device, and output 1 comes back as the device's
 * zeros. */
static void test_bind_same_tensor(const uint8_t* so, size_t so_size, int cuda_variant) {
  static const uint32_t add[] = {0, 1, 2}, ins[] = {0}, outs[] = {0, 2};
  static const char* const names[] = {"add_f32"};
  static const char ptx[] = "//\n.version 7.8\n.target sm_90\n.address_size 64\n";
  static const ingot_launch_record_t launch[1] = {{0, 0, {1, 1, 1}, {64, 1, 1}}};
  ingot_bundle_tensor_t t[3];
  const char* tn[3] = {"t", "w", "u"};
  for (int i = 0; i < 3; ++i) {
    t[i] = (ingot_bundle_tensor_t){.name = tn[i], .dtype = INGOT_DTYPE_F32, .rank = 1,
                                   .storage = INGOT_STORAGE_ARENA, .alias_of = UINT32_MAX};
    t[i].dims[0] = N;
  }
  t[1].storage = INGOT_STORAGE_WEIGHT;
  t[1].data = g_w;
  ingot_bundle_step_t steps[1] = {{0, add, 3, "add"}};
  ingot_bundle_code_t code = {"c", so, so_size, INGOT_LOADER_CPU_ELF, NULL, NULL};
  if (cuda_variant) code = (ingot_bundle_code_t){"cuda -arch=sm_90", ptx, sizeof ptx, INGOT_LOADER_CUDA, launch, NULL};
  ingot_bundle_spec_t spec = {.tensors = t, .tensor_count = 3, .inputs = ins, .input_count = 1,
                              .outputs = outs, .output_count = 2, .steps = steps, .step_count = 1,
                              .kernel_names = names, .kernel_count = 1, .codes = &code, .code_count = 1};
  ingot_bundle_t* b = open_spec(&spec);
  if (!b) return;
  CHECK(!strcmp(ingot_bundle_device(b), cuda_variant ? "cuda" : "cpu"), "device %s", ingot_bundle_device(b));
  ingot_session_t* s = NULL;
  CHECK(ingot_session_create(b, NULL, &s) == INGOT_OK, "create: %s", ingot_last_error());
  if (!s) {
    ingot_bundle_release(b);
    return;
  }
  float* in = aligned_alloc(64, sizeof(float) * N);
  float* out = aligned_alloc(64, sizeof(float) * N);
  float* u = aligned_alloc(64, sizeof(float) * N);
  fill_input(in, 2.0f);
  memset(out, 0xAB, sizeof(float) * N);
  memset(u, 0xAB, sizeof(float) * N);
  CHECK(ingot_session_bind_input(s, 0, in, sizeof(float) * N) == INGOT_OK, "bind: %s", ingot_last_error());
  CHECK(ingot_session_bind_output(s, 0, out, sizeof(float) * N) == INGOT_OK, "bind: %s", ingot_last_error());
  CHECK(ingot_session_bind_output(s, 1, u, sizeof(float) * N) == INGOT_OK, "bind: %s", ingot_last_error());
  CHECK(ingot_session_binding_copies(s, 0, 0) && ingot_session_binding_copies(s, 1, 0), "t in two slots not copied");
  CHECK(ingot_session_binding_copies(s, 1, 1) == cuda_variant, "u copied: %d", ingot_session_binding_copies(s, 1, 1));
  CHECK(ingot_session_input_data(s, 0) == in && ingot_session_output_data(s, 1) == u, "data pointers");
  CHECK(ingot_session_run(s) == INGOT_OK, "run: %s", ingot_last_error());
  CHECK(!memcmp(in, out, sizeof(float) * N), "output 0 (= input 0) not copied into its bound buffer");
  int right = 1;
  for (int i = 0; i < N; ++i) right &= cuda_variant ? u[i] == 0.0f : u[i] == in[i] + g_w[i];
  CHECK(right, "output 1 in its bound buffer");
  free(in);
  free(out);
  free(u);
  ingot_session_release(s);
  ingot_bundle_release(b);
}

/* ---- Threads ------------------------------------------------------------------ */

typedef struct worker_t {
  ingot_session_t* session;
  float k;
  int runs, wrong;
  ingot_status_t status;
} worker_t;

static void* worker_main(void* raw) {
  worker_t* w = raw;
  float a[N];
  for (int i = 0; i < w->runs; ++i) {
    fill_input(a, w->k + (float)i);
    memcpy(ingot_session_input_data(w->session, 0), a, sizeof a);
    ingot_status_t s = ingot_session_run(w->session);
    if (s != INGOT_OK) w->status = s;
    else if (!session_outputs_right(w->session, a)) w->wrong++;
  }
  return NULL;
}

static atomic_int g_app_calls;
static void app_parallel_for(void* self, int64_t count, ingot_parallel_body_t body, void* context) {
  atomic_fetch_add(&g_app_calls, 1);
  CHECK(self == &g_app_calls, "parallel_for_self not passed");
  /* Two chunks, back to front: any order must do. */
  int64_t mid = count / 2;
  body(context, mid, count);
  body(context, 0, mid);
}

static void test_threads(ingot_bundle_t* b) {
  ingot_threads_t* pool = NULL;
  CHECK(ingot_threads_create(2, (ingot_allocator_t){0}, &pool) == INGOT_OK, "threads: %s", ingot_last_error());
  if (!pool) return;
  CHECK(ingot_threads_count(pool) == 2, "count %u", ingot_threads_count(pool));
  ingot_session_t* s[2] = {NULL, NULL};
  ingot_session_options_t o = {.shared_threads = pool};
  for (int i = 0; i < 2; ++i) CHECK(ingot_session_create(b, &o, &s[i]) == INGOT_OK, "create: %s", ingot_last_error());
  if (!s[0] || !s[1]) return;
  float a[N];
  fill_input(a, 2.0f);
  memcpy(ingot_session_input_data(s[0], 0), a, sizeof a);
  CHECK(ingot_session_run(s[0]) == INGOT_OK && session_outputs_right(s[0], a), "shared pool run");
  CHECK(((const int64_t*)ingot_session_output_data(s[0], 4))[2] == 2, "kernels see the pool's 2 threads");

  worker_t w[2] = {{s[0], 1.0f, 300, 0, INGOT_OK}, {s[1], 1000.0f, 300, 0, INGOT_OK}};
  pthread_t th[2];
  for (int i = 0; i < 2; ++i) pthread_create(&th[i], NULL, worker_main, &w[i]);
  for (int i = 0; i < 2; ++i) pthread_join(th[i], NULL);
  for (int i = 0; i < 2; ++i)
    CHECK(w[i].status == INGOT_OK && w[i].wrong == 0, "session %d on the shared pool: status %d, %d wrong runs",
          i, (int)w[i].status, w[i].wrong);
  for (int i = 0; i < 2; ++i) ingot_session_release(s[i]);

  /* Bad combinations. */
  ingot_session_t* bad = NULL;
  o.threads = 2;
  CHECK(ingot_session_create(b, &o, &bad) == INGOT_ERROR_INVALID_ARGUMENT && !bad, "threads with a shared pool");
  o.threads = 0;
  o.parallel_for = app_parallel_for;
  CHECK(ingot_session_create(b, &o, &bad) == INGOT_ERROR_INVALID_ARGUMENT && !bad, "both pool and parallel_for");
  ingot_threads_release(pool);

  /* The application's parallel-for. */
  ingot_session_options_t app = {.parallel_for = app_parallel_for, .parallel_for_self = &g_app_calls,
                                 .parallel_for_threads = 3};
  ingot_session_t* sa = NULL;
  CHECK(ingot_session_create(b, &app, &sa) == INGOT_OK, "create with parallel_for: %s", ingot_last_error());
  if (!sa) return;
  fill_input(a, 4.0f);
  memcpy(ingot_session_input_data(sa, 0), a, sizeof a);
  CHECK(ingot_session_run(sa) == INGOT_OK, "run: %s", ingot_last_error());
  CHECK(session_outputs_right(sa, a), "outputs through the application's parallel-for");
  CHECK(atomic_load(&g_app_calls) == 1, "parallel_for called %d times, want 1", atomic_load(&g_app_calls));
  CHECK(((const int64_t*)ingot_session_output_data(sa, 4))[2] == 3, "kernels see %lld threads, want 3",
        (long long)((const int64_t*)ingot_session_output_data(sa, 4))[2]);
  ingot_session_release(sa);
}

/* ---- Metadata ----------------------------------------------------------------- */

static void test_metadata(model_t* m) {
  ingot_bundle_t* old = open_spec(&m->spec);
  if (old) {
    const char* v = "x";
    CHECK(ingot_bundle_metadata_count(old) == 0, "metadata in a bundle without any");
    CHECK(ingot_bundle_metadata(old, "name", &v) == INGOT_ERROR_NOT_FOUND && v == NULL, "lookup in none");
    ingot_bundle_release(old);
  }
  ingot_bundle_metadata_t md[] = {{"producer", "pytorch"}, {"name", "tiny"}, {"source_sha256", "ab12"},
                                  {"compile_flags", "--target 'c' --weights auto"}};
  m->spec.metadata = md;
  m->spec.metadata_count = 4;
  ingot_bundle_t* b = open_spec(&m->spec);
  if (b) {
    CHECK(ingot_bundle_metadata_count(b) == 4, "count %u", ingot_bundle_metadata_count(b));
    const char *k = NULL, *v = NULL;
    CHECK(ingot_bundle_metadata_entry(b, 0, &k, &v) == INGOT_OK && !strcmp(k, "compile_flags") &&
              !strcmp(v, "--target 'c' --weights auto"),
          "first entry %s", k ? k : "(null)");
    CHECK(ingot_bundle_metadata_entry(b, 3, &k, &v) == INGOT_OK && !strcmp(k, "source_sha256"), "last entry");
    CHECK(ingot_bundle_metadata_entry(b, 4, &k, &v) == INGOT_ERROR_NOT_FOUND && !k && !v, "entry 4");
    CHECK(ingot_bundle_metadata(b, INGOT_METADATA_PRODUCER, &v) == INGOT_OK && !strcmp(v, "pytorch"), "producer");
    CHECK(ingot_bundle_metadata(b, "name", &v) == INGOT_OK && !strcmp(v, "tiny"), "name");
    CHECK(ingot_bundle_metadata(b, "nope", &v) == INGOT_ERROR_NOT_FOUND && !v, "unknown key");
    ingot_bundle_release(b);
  }
  /* The same spec, byte-identical bundles; a duplicate key refused. */
  uint8_t *d1 = NULL, *d2 = NULL;
  size_t n1 = 0, n2 = 0;
  CHECK(ingot_bundle_build(&m->spec, &d1, &n1, NULL) == INGOT_OK &&
            ingot_bundle_build(&m->spec, &d2, &n2, NULL) == INGOT_OK && n1 == n2 && !memcmp(d1, d2, n1),
        "metadata bundles differ");
  /* A corrupt METADATA section: keys out of order, checksums made right
   * again so the section parser is what refuses it. */
  if (d1) {
    ingot_bundle_header_t h;
    memcpy(&h, d1, sizeof h);
    ingot_section_entry_t* e = (ingot_section_entry_t*)(d1 + sizeof h);
    int found = 0;
    for (uint32_t i = 0; i < h.section_count; ++i) {
      if (e[i].kind != INGOT_SECTION_METADATA) continue;
      found = 1;
      CHECK(e[i].codec == INGOT_CODEC_NONE || e[i].codec == INGOT_CODEC_ZSTD, "codec");
      if (e[i].codec != INGOT_CODEC_NONE) break; /* small strings: stored raw in practice */
      ingot_metadata_entry_t* me = (ingot_metadata_entry_t*)(d1 + e[i].offset + sizeof(ingot_metadata_header_t));
      ingot_metadata_entry_t tmp = me[0];
      me[0] = me[1];
      me[1] = tmp;
      e[i].stored_crc32 = e[i].raw_crc32 = ingot_crc32(0, d1 + e[i].offset, (size_t)e[i].stored_size);
      ingot_bundle_header_t* hp = (ingot_bundle_header_t*)d1;
      hp->table_crc32 = ingot_crc32(0, e, sizeof *e * h.section_count);
      hp->header_crc32 = 0;
      hp->header_crc32 = ingot_crc32(0, hp, sizeof *hp);
      ingot_bundle_t* bad = NULL;
      CHECK(ingot_bundle_open_memory(d1, n1, NULL, &bad) == INGOT_ERROR_CORRUPT && !bad,
            "unsorted metadata accepted");
      CHECK(strstr(ingot_last_error(), "metadata"), "message: %s", ingot_last_error());
    }
    CHECK(found, "no METADATA section written");
  }
  free(d1);
  free(d2);
  ingot_bundle_metadata_t dup[] = {{"name", "a"}, {"name", "b"}};
  m->spec.metadata = dup;
  m->spec.metadata_count = 2;
  uint8_t* d3 = NULL;
  size_t n3 = 0;
  CHECK(ingot_bundle_build(&m->spec, &d3, &n3, NULL) == INGOT_ERROR_INVALID_ARGUMENT && !d3, "duplicate keys");
  m->spec.metadata = NULL;
  m->spec.metadata_count = 0;
}

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    fprintf(stderr, "usage: %s <c compiler> <source root> <work dir> [fake libcuda]\n", argv[0]);
    return 2;
  }
  for (int i = 0; i < N; ++i) g_w[i] = 0.25f * (float)(i % 13) - 1.0f;
  uint8_t* so = NULL;
  size_t so_size = 0;
  if (!build_so(argv[1], argv[2], argv[3], &so, &so_size)) {
    fprintf(stderr, "cannot build the kernel library\n");
    return 1;
  }
  CHECK(ingot_version() == ((uint32_t)INGOT_VERSION_MAJOR << 16 | INGOT_VERSION_MINOR << 8 | INGOT_VERSION_PATCH) &&
            INGOT_VERSION_MINOR == 6,
        "version");
  model_t m;
  model_init(&m, so, so_size);
  ingot_bundle_t* b = open_spec(&m.spec);
  if (b) {
    test_bind(b);
    test_threads(b);
    ingot_bundle_release(b);
  }
  test_bind_input_view(so, so_size);
  test_bind_output_view(so, so_size);
  test_bind_same_tensor(so, so_size, 0);
  if (argc == 5) { /* the fake CUDA driver (fake_cuda_driver.c): a GPU variant's bindings */
    setenv("INGOT_CUDA_DRIVER", argv[4], 1);
    setenv("INGOT_FAKE_CUDA_SM", "90", 1);
    char why[192];
    CHECK(ingot_device_probe("cuda", why, sizeof why), "fake driver: %s", why);
    test_bind_same_tensor(so, so_size, 1);
  }
  test_metadata(&m);
  free(so);
  if (g_failures) {
    fprintf(stderr, "%d failures\n", g_failures);
    return 1;
  }
  printf("session api: ok\n");
  return 0;
}
