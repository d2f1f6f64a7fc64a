/* End to end without the compiler: a hand-written C kernel library is built
 * into a shared object with the system C compiler, packaged with
 * ingot_bundle_build, opened with our loader and run. Then the reader is
 * attacked: every single flipped byte, every truncation, failing allocations,
 * bad code objects, missing kernels, limits.
 *
 * usage: test_runtime_e2e <c compiler> <source root> <work dir> */
#define _DEFAULT_SOURCE 1
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packager/packager.h"
#include "runtime/ingot.h"
#include "runtime/runtime_internal.h" /* the ELF loader, for direct fuzzing */

#define N 1000

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

static const char* g_cc;
static const char* g_src;
static const char* g_work;

static const char k_kernel_source[] =
    "#include <stdint.h>\n"
    "#include \"runtime/ingot_format.h\"\n"
    "#define N 1000\n"
    "typedef struct { const float* a; const float* w; float* y; } add_ctx;\n"
    "static void add_body(void* p, int64_t b, int64_t e) {\n"
    "  add_ctx* c = (add_ctx*)p;\n"
    "  for (int64_t i = b; i < e; ++i) c->y[i] = c->a[i] + c->w[i];\n"
    "}\n"
    "static int32_t add_f32(const ingot_kernel_env_t* env, void* const* args) {\n"
    "  add_ctx c = {(const float*)args[0], (const float*)args[1], (float*)args[2]};\n"
    "  env->parallel_for(env->pool, N, add_body, &c);\n"
    "  return 0;\n"
    "}\n"
    "static int32_t scale_f32(const ingot_kernel_env_t* env, void* const* args) {\n"
    "  const float* t = (const float*)args[0];\n"
    "  float* y = (float*)args[1];\n"
    "  float one = env->expf(0.0f);\n"
    "  for (int i = 0; i < N; ++i) y[i] = 2.0f * t[i] + one;\n"
    "  return 0;\n"
    "}\n"
    "static int32_t fail_kernel(const ingot_kernel_env_t* env, void* const* args) {\n"
    "  (void)env; (void)args; return 7;\n"
    "}\n"
    /* add_f32 that first raises a flag in its input's word 1 and waits for
     * the test to set word 0: a run held inside step 0 (test_cancel). */
    "static int32_t wait_add_f32(const ingot_kernel_env_t* env, void* const* args) {\n"
    "  uint32_t* u = (uint32_t*)args[0];\n"
    "  __atomic_store_n(&u[1], 1u, __ATOMIC_RELEASE);\n"
    "  while (__atomic_load_n(&u[0], __ATOMIC_ACQUIRE) == 0) {}\n"
    "  return add_f32(env, args);\n"
    "}\n"
    "static const ingot_kernel_entry_t kernels[] = {\n"
    "  {\"add_f32\", add_f32}, {\"scale_f32\", scale_f32}, {\"fail\", fail_kernel},\n"
    "  {\"wait_add_f32\", wait_add_f32},\n"
    "};\n"
    "static const ingot_kernel_library_t library = {INGOT_KERNEL_ABI_VERSION, 4, kernels};\n"
    "__attribute__((visibility(\"default\")))\n"
    "const ingot_kernel_library_t* ingot_library_query(uint32_t abi_version) {\n"
    "  return abi_version == INGOT_KERNEL_ABI_VERSION ? &library : 0;\n"
    "}\n";

/* A library that imports a function: the loader must refuse it. */
static const char k_importing_source[] =
    "#include <stdint.h>\n"
    "#include \"runtime/ingot_format.h\"\n"
    "extern float some_import(float);\n"
    "static int32_t k(const ingot_kernel_env_t* env, void* const* args) {\n"
    "  (void)env; *(float*)args[0] = some_import(1.0f); return 0;\n"
    "}\n"
    "static const ingot_kernel_entry_t kernels[] = {{\"add_f32\", k}, {\"scale_f32\", k}};\n"
    "static const ingot_kernel_library_t library = {INGOT_KERNEL_ABI_VERSION, 2, kernels};\n"
    "__attribute__((visibility(\"default\")))\n"
    "const ingot_kernel_library_t* ingot_library_query(uint32_t v) { (void)v; return &library; }\n";

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

/* Builds `source` into a shared object with extra link flags; returns its bytes. */
static int build_so(const char* name, const char* source, const char* flags, uint8_t** out,
                    size_t* out_size) {
  char c_path[1024], so_path[1024], cmd[4096];
  snprintf(c_path, sizeof c_path, "%s/%s.c", g_work, name);
  snprintf(so_path, sizeof so_path, "%s/%s.so", g_work, name);
  FILE* f = fopen(c_path, "wb");
  if (!f) return 0;
  fputs(source, f);
  fclose(f);
  snprintf(cmd, sizeof cmd,
           "\"%s\" -std=c11 -O2 -fPIC -shared -nostdlib -fvisibility=hidden -fno-stack-protector "
           "%s -I\"%s\" -o \"%s\" \"%s\"",
           g_cc, flags, g_src, so_path, c_path);
  if (system(cmd) != 0) {
    fprintf(stderr, "command failed: %s\n", cmd);
    return 0;
  }
  return read_file(so_path, out, out_size);
}

/* ---- The model: y = 2 * (a + w) + 1, with y2 a view of y. ---------------- */

static float g_weights[N];
static const uint32_t g_add_args[] = {0, 1, 2};
static const uint32_t g_scale_args[] = {2, 3};
static const uint32_t g_inputs[] = {0};
static const uint32_t g_outputs[] = {3, 4};

typedef struct model_t {
  ingot_bundle_tensor_t tensors[5];
  ingot_bundle_step_t steps[2];
  const char* kernel_names[3];
  ingot_bundle_code_t codes[2];
  ingot_bundle_spec_t spec;
} model_t;

static void model_init(model_t* m, const uint8_t* so, size_t so_size) {
  memset(m, 0, sizeof *m);
  const char* names[5] = {"a", "w", "t", "y", "y2"};
  for (int i = 0; i < 5; ++i) {
    m->tensors[i].name = names[i];
    m->tensors[i].dtype = INGOT_DTYPE_F32;
    m->tensors[i].rank = 1;
    m->tensors[i].dims[0] = N;
    m->tensors[i].storage = INGOT_STORAGE_ARENA;
    m->tensors[i].alias_of = UINT32_MAX;
  }
  m->tensors[1].storage = INGOT_STORAGE_WEIGHT;
  m->tensors[1].data = g_weights;
  m->tensors[4].alias_of = 3;
  m->tensors[4].rank = 2; /* a reshaped view: 10 x 100 */
  m->tensors[4].dims[0] = 10;
  m->tensors[4].dims[1] = 100;
  m->steps[0] = (ingot_bundle_step_t){0, g_add_args, 3, "node_add"};
  m->steps[1] = (ingot_bundle_step_t){1, g_scale_args, 2, "node_scale"};
  m->kernel_names[0] = "add_f32";
  m->kernel_names[1] = "scale_f32";
  m->kernel_names[2] = "fail";
  m->codes[0] = (ingot_bundle_code_t){"c", so, so_size, INGOT_LOADER_CPU_ELF, NULL, NULL};
  m->spec.tensors = m->tensors;
  m->spec.tensor_count = 5;
  m->spec.inputs = g_inputs;
  m->spec.input_count = 1;
  m->spec.outputs = g_outputs;
  m->spec.output_count = 2;
  m->spec.steps = m->steps;
  m->spec.step_count = 2;
  m->spec.kernel_names = m->kernel_names;
  m->spec.kernel_count = 3;
  m->spec.codes = m->codes;
  m->spec.code_count = 1;
  m->spec.zstd_level = 3;
}

static int build(const ingot_bundle_spec_t* spec, uint8_t** data, size_t* size,
                 ingot_bundle_report_t* report) {
  ingot_status_t st = ingot_bundle_build(spec, data, size, report);
  if (st != INGOT_OK) fprintf(stderr, "build: %s\n", ingot_compiler_error());
  return st == INGOT_OK;
}

/* Opens, runs (twice) and checks the numbers. */
static void run_and_check(const uint8_t* data, size_t size, uint32_t threads, const char* what) {
  ingot_bundle_t* bundle = NULL;
  ingot_status_t st = ingot_bundle_open_memory(data, size, NULL, &bundle);
  CHECK(st == INGOT_OK, "%s: open: %s", what, ingot_last_error());
  if (st != INGOT_OK) return;
  CHECK(strcmp(ingot_bundle_target(bundle), "c") == 0, "%s: target %s", what, ingot_bundle_target(bundle));
  CHECK(ingot_bundle_input_count(bundle) == 1 && ingot_bundle_output_count(bundle) == 2, "%s: counts", what);
  ingot_tensor_info_t info;
  CHECK(ingot_bundle_input_info(bundle, 0, &info) == INGOT_OK && strcmp(info.name, "a") == 0 &&
            info.dtype == INGOT_DTYPE_F32 && info.rank == 1 && info.dims[0] == N &&
            info.bytes == N * 4,
        "%s: input info", what);
  CHECK(ingot_bundle_output_info(bundle, 1, &info) == INGOT_OK && strcmp(info.name, "y2") == 0 &&
            info.rank == 2 && info.dims[1] == 100,
        "%s: output info", what);
  CHECK(ingot_bundle_input_info(bundle, 1, &info) == INGOT_ERROR_NOT_FOUND, "%s: bad index", what);
  /* By name. */
  uint32_t index = 7;
  CHECK(ingot_bundle_input_index(bundle, "a", &index) == INGOT_OK && index == 0, "%s: input a", what);
  CHECK(ingot_bundle_output_index(bundle, "y", &index) == INGOT_OK && index == 0, "%s: output y", what);
  CHECK(ingot_bundle_output_index(bundle, "y2", &index) == INGOT_OK && index == 1, "%s: output y2", what);
  st = ingot_bundle_input_index(bundle, "y", &index); /* an output, not an input */
  CHECK(st == INGOT_ERROR_NOT_FOUND && index == UINT32_MAX, "%s: input y: %d", what, st);
  CHECK(strcmp(ingot_last_error(), "bundle: no input named 'y' (the bundle has 1 inputs)") == 0,
        "%s: message: %s", what, ingot_last_error());
  CHECK(ingot_bundle_output_index(bundle, "w", &index) == INGOT_ERROR_NOT_FOUND, "%s: a weight", what);
  CHECK(strstr(ingot_last_error(), "no output named 'w'") != NULL, "%s: message: %s", what, ingot_last_error());
  CHECK(ingot_bundle_output_index(bundle, "y2 ", &index) == INGOT_ERROR_NOT_FOUND, "%s: exact names", what);
  CHECK(ingot_bundle_input_index(bundle, NULL, &index) == INGOT_ERROR_INVALID_ARGUMENT, "%s: NULL", what);
  CHECK(ingot_bundle_input_index(bundle, "a", NULL) == INGOT_ERROR_INVALID_ARGUMENT, "%s: NULL out", what);
  CHECK(ingot_bundle_arena_bytes(bundle) >= ingot_bundle_arena_lower_bound(bundle), "%s: arena", what);
  ingot_session_options_t options = {{0}, threads};
  ingot_session_t* session = NULL;
  st = ingot_session_create(bundle, &options, &session);
  CHECK(st == INGOT_OK, "%s: session: %s", what, ingot_last_error());
  if (st == INGOT_OK) {
    float* a = (float*)ingot_session_input_data(session, 0);
    CHECK(((uintptr_t)a & 63) == 0, "%s: input alignment", what);
    for (int i = 0; i < N; ++i) a[i] = (float)i * 0.5f;
    for (int rep = 0; rep < 2; ++rep) {
      st = ingot_session_run(session);
      CHECK(st == INGOT_OK, "%s: run: %s", what, ingot_last_error());
      const float* y = (const float*)ingot_session_output_data(session, 0);
      const float* y2 = (const float*)ingot_session_output_data(session, 1);
      CHECK(y == y2, "%s: an alias must share storage", what);
      int bad = 0;
      for (int i = 0; i < N && !bad; ++i) {
        float want = 2.0f * ((float)i * 0.5f + g_weights[i]) + 1.0f;
        if (fabsf(y[i] - want) > 1e-4f) {
          fprintf(stderr, "%s: y[%d] = %g, want %g\n", what, i, y[i], want);
          bad = 1;
        }
      }
      CHECK(!bad, "%s: wrong output", what);
    }
    CHECK(ingot_session_input_data(session, 1) == NULL, "%s: bad input index", what);
    ingot_session_release(session);
  }
  ingot_bundle_release(bundle);
}

/* ---- Cancel ------------------------------------------------------------------ */

typedef struct canceller_t {
  ingot_session_t* session;
  uint32_t* input; /* wait_add_f32 sets word 1 when inside step 0, waits for word 0 */
} canceller_t;

static void* cancel_thread(void* p) {
  ingot_session_cancel((ingot_session_t*)p);
  return NULL;
}

/* Waits until the run is inside step 0, cancels, then lets step 0 finish. */
static void* cancel_mid_run(void* p) {
  canceller_t* c = (canceller_t*)p;
  while (__atomic_load_n(&c->input[1], __ATOMIC_ACQUIRE) == 0) {
  }
  ingot_session_cancel(c->session);
  __atomic_store_n(&c->input[0], 1u, __ATOMIC_RELEASE);
  return NULL;
}

/* y from a fresh run's input a[i] = i * 0.5 (a[0] and a[1] as wait_add_f32 leaves them). */
static int output_right(ingot_session_t* session) {
  const float* a = (const float*)ingot_session_input_data(session, 0);
  const float* y = (const float*)ingot_session_output_data(session, 0);
  for (int i = 0; i < N; ++i)
    if (fabsf(y[i] - (2.0f * (a[i] + g_weights[i]) + 1.0f)) > 1e-4f) return 0;
  return 1;
}

static void test_cancel(const uint8_t* so, size_t so_size) {
  model_t m;
  model_init(&m, so, so_size);
  m.kernel_names[0] = "wait_add_f32";
  uint8_t* d = NULL;
  size_t n = 0;
  ingot_bundle_t* bundle = NULL;
  ingot_session_t* session = NULL;
  ingot_session_options_t options = {{0}, 1};
  if (!build(&m.spec, &d, &n, NULL) || ingot_bundle_open_memory(d, n, NULL, &bundle) != INGOT_OK ||
      ingot_session_create(bundle, &options, &session) != INGOT_OK) {
    CHECK(0, "cancel bundle: %s", ingot_last_error());
    ingot_bundle_release(bundle);
    free(d);
    return;
  }
  CHECK(strcmp(ingot_status_name(INGOT_ERROR_CANCELLED), "cancelled") == 0, "status name");
  uint32_t* u = (uint32_t*)ingot_session_input_data(session, 0);
  float* a = (float*)u;
  float* y = (float*)(uintptr_t)ingot_session_output_data(session, 0);
  for (int i = 0; i < N; ++i) a[i] = (float)i * 0.5f + 1.0f; /* word 0 non-zero: step 0 does not wait */

  /* Cancelled before the run (from another thread, joined): no step runs. */
  pthread_t thread;
  CHECK(pthread_create(&thread, NULL, cancel_thread, session) == 0, "thread");
  pthread_join(thread, NULL);
  for (int i = 0; i < N; ++i) y[i] = -7.0f;
  u[1] = 0;
  CHECK(ingot_session_run(session) == INGOT_ERROR_CANCELLED, "cancel before the run");
  CHECK(strcmp(ingot_last_error(), "session: cancelled before step 0 of 2 (node 'node_add')") == 0,
        "message: %s", ingot_last_error());
  CHECK(u[1] == 0 && y[0] == -7.0f && y[N - 1] == -7.0f, "a step ran after the cancel");
  /* The request was consumed: the next run is not cancelled. */
  CHECK(ingot_session_run(session) == INGOT_OK, "run after a cancelled run: %s", ingot_last_error());
  CHECK(output_right(session), "output after a cancelled run");
  /* Cancelling twice is one request. */
  ingot_session_cancel(session);
  ingot_session_cancel(session);
  CHECK(ingot_session_run(session) == INGOT_ERROR_CANCELLED, "double cancel");
  CHECK(ingot_session_run(session) == INGOT_OK, "after a double cancel: %s", ingot_last_error());
  /* Profiled runs too. */
  uint64_t step_ns[2] = {0, 0};
  ingot_session_cancel(session);
  CHECK(ingot_session_run_profiled(session, step_ns) == INGOT_ERROR_CANCELLED, "profiled cancel");
  ingot_session_cancel(NULL); /* harmless */

  /* Cancelled from another thread while step 0 runs: step 0 ends, step 1
   * never starts. */
  for (int i = 0; i < N; ++i) y[i] = -7.0f;
  u[0] = 0;
  u[1] = 0;
  canceller_t c = {session, u};
  CHECK(pthread_create(&thread, NULL, cancel_mid_run, &c) == 0, "thread");
  ingot_status_t st = ingot_session_run(session);
  pthread_join(thread, NULL);
  CHECK(st == INGOT_ERROR_CANCELLED, "cancel during step 0: %d (%s)", st, ingot_last_error());
  CHECK(strcmp(ingot_last_error(), "session: cancelled before step 1 of 2 (node 'node_scale')") == 0,
        "message: %s", ingot_last_error());
  CHECK(y[0] == -7.0f && y[N - 1] == -7.0f, "step 1 ran after the cancel");
  CHECK(ingot_session_run(session) == INGOT_OK && output_right(session), "run after a mid-run cancel: %s",
        ingot_last_error());
  ingot_session_release(session);
  ingot_bundle_release(bundle);
  free(d);
}

/* ---- An allocator that counts and fails the Nth call. -------------------- */

typedef struct counting_t {
  long calls, live, fail_at;
} counting_t;

static void* counting_fn(void* self, void* ptr, size_t size) {
  counting_t* c = (counting_t*)self;
  ingot_allocator_t sys = ingot_allocator_system();
  if (size == 0) {
    if (ptr) c->live--;
    return sys.fn(sys.self, ptr, 0);
  }
  if (c->calls++ == c->fail_at) return NULL;
  void* p = sys.fn(sys.self, NULL, size);
  if (p) c->live++;
  return p;
}

static void test_failing_allocator(const uint8_t* data, size_t size) {
  int opened = 0;
  for (long n = 0; n < 200 && !opened; ++n) {
    counting_t c = {0, 0, n};
    ingot_bundle_options_t options = {{&c, counting_fn}, {0}};
    ingot_bundle_t* bundle = NULL;
    ingot_status_t st = ingot_bundle_open_memory(data, size, &options, &bundle);
    if (st == INGOT_OK) {
      opened = 1;
      CHECK(c.fail_at >= c.calls, "opened although allocation %ld failed", n);
      /* Now fail each allocation of session creation. */
      int created = 0;
      for (long m = 0; m < 50 && !created; ++m) {
        counting_t cs = {0, 0, m};
        ingot_session_options_t so = {{&cs, counting_fn}, 3};
        ingot_session_t* session = NULL;
        st = ingot_session_create(bundle, &so, &session);
        if (st == INGOT_OK) {
          created = 1;
          ingot_session_release(session);
        } else {
          CHECK(st == INGOT_ERROR_OUT_OF_MEMORY && session == NULL, "session fail %ld: %d", m, st);
        }
        CHECK(cs.live == 0, "session allocations leaked after failure %ld: %ld", m, cs.live);
      }
      CHECK(created, "session never created");
      ingot_bundle_release(bundle);
    } else {
      CHECK(st == INGOT_ERROR_OUT_OF_MEMORY && bundle == NULL, "failure %ld gave status %d (%s)", n,
            st, ingot_last_error());
    }
    CHECK(c.live == 0, "bundle allocations leaked (fail at %ld): %ld live", n, c.live);
  }
  CHECK(opened, "never opened with a failing allocator");
}

/* ---- Corruption: flipped bytes and truncations are refused. --------------- */

static void test_corruption(const uint8_t* data, size_t size) {
  uint8_t* copy = malloc(size);
  size_t table_end = sizeof(ingot_bundle_header_t) +
                     ((const ingot_bundle_header_t*)data)->section_count * sizeof(ingot_section_entry_t);
  size_t tried = 0;
  /* Every byte of the file (the bundle is small), with two masks each. */
  static const uint8_t masks[] = {0x01, 0x80, 0xFF};
  for (size_t i = 0; i < size; ++i) {
    for (size_t k = 0; k < sizeof masks; ++k) {
      if (i >= table_end && k == 2) continue;
      memcpy(copy, data, size);
      copy[i] ^= masks[k];
      ingot_bundle_t* bundle = NULL;
      ingot_status_t st = ingot_bundle_open_memory(copy, size, NULL, &bundle);
      CHECK(st != INGOT_OK && bundle == NULL, "byte %zu ^ 0x%02x accepted", i, masks[k]);
      CHECK(ingot_last_error()[0] != '\0', "byte %zu: no message", i);
      if (bundle) ingot_bundle_release(bundle);
      ++tried;
    }
  }
  /* The message names the section. */
  {
    const ingot_section_entry_t* table = (const ingot_section_entry_t*)(data + sizeof(ingot_bundle_header_t));
    memcpy(copy, data, size);
    copy[table[2].offset + table[2].stored_size / 2] ^= 0x20;
    ingot_bundle_t* bundle = NULL;
    CHECK(ingot_bundle_open_memory(copy, size, NULL, &bundle) == INGOT_ERROR_CORRUPT, "weights flip");
    CHECK(strcmp(ingot_last_error(), "bundle: section 2 (weights): checksum mismatch") == 0,
          "message: %s", ingot_last_error());
  }
  /* Every truncation, and one extra byte. */
  for (size_t n = 0; n < size; ++n) {
    ingot_bundle_t* bundle = NULL;
    ingot_status_t st = ingot_bundle_open_memory(data, n, NULL, &bundle);
    CHECK(st != INGOT_OK && bundle == NULL, "truncation to %zu accepted", n);
    if (bundle) ingot_bundle_release(bundle);
  }
  uint8_t* longer = calloc(size + 1, 1);
  memcpy(longer, data, size);
  ingot_bundle_t* bundle = NULL;
  CHECK(ingot_bundle_open_memory(longer, size + 1, NULL, &bundle) == INGOT_ERROR_CORRUPT, "extra byte");
  free(longer);
  free(copy);
  printf("corruption: %zu flipped bytes and %zu truncations refused\n", tried, size);
}

/* The loader alone (the bundle's checksums normally keep damaged objects
 * away from it): every flipped byte and many truncations of a real object
 * must load or be refused, never crash or touch memory outside the image. */
static void test_elf_loader(const uint8_t* so, size_t size) {
  uint8_t* copy = malloc(size);
  size_t loaded = 0, refused = 0;
  static const uint8_t masks[] = {0x01, 0x10, 0xFF};
  for (size_t i = 0; i < size; ++i) {
    for (size_t k = 0; k < sizeof masks; ++k) {
      memcpy(copy, so, size);
      copy[i] ^= masks[k];
      ingot_elf_image_t* image = NULL;
      if (ingot_elf_image_load(copy, size, ingot_allocator_system(), &image) == INGOT_OK) {
        (void)ingot_elf_image_symbol(image, INGOT_LIBRARY_QUERY_SYMBOL);
        ingot_elf_image_unload(image);
        ++loaded;
      } else {
        CHECK(image == NULL, "refused but returned an image");
        ++refused;
      }
    }
  }
  for (size_t n = 0; n < size; n += 7) {
    ingot_elf_image_t* image = NULL;
    if (ingot_elf_image_load(so, n, ingot_allocator_system(), &image) == INGOT_OK) {
      (void)ingot_elf_image_symbol(image, INGOT_LIBRARY_QUERY_SYMBOL);
      ingot_elf_image_unload(image);
    }
  }
  ingot_elf_image_t* image = NULL;
  CHECK(ingot_elf_image_load(so, size, ingot_allocator_system(), &image) == INGOT_OK, "clean load");
  CHECK(image && ingot_elf_image_symbol(image, INGOT_LIBRARY_QUERY_SYMBOL) != NULL, "query symbol");
  CHECK(image && ingot_elf_image_symbol(image, "add_f32") == NULL, "hidden symbol visible");
  ingot_elf_image_unload(image);
  free(copy);
  printf("elf loader: %zu mutants loaded, %zu refused\n", loaded, refused);
}

static void expect_open_fails(const ingot_bundle_spec_t* spec, ingot_status_t want, const char* needle,
                              const char* what) {
  uint8_t* data = NULL;
  size_t size = 0;
  if (!build(spec, &data, &size, NULL)) {
    CHECK(0, "%s: build failed", what);
    return;
  }
  ingot_bundle_t* bundle = NULL;
  ingot_status_t st = ingot_bundle_open_memory(data, size, NULL, &bundle);
  CHECK(st == want && bundle == NULL, "%s: status %d (%s), want %d", what, st, ingot_last_error(), want);
  CHECK(!needle || strstr(ingot_last_error(), needle), "%s: message '%s' lacks '%s'", what,
        ingot_last_error(), needle);
  ingot_bundle_release(bundle);
  free(data);
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s <cc> <source root> <work dir>\n", argv[0]);
    return 2;
  }
  g_cc = argv[1];
  g_src = argv[2];
  g_work = argv[3];
  for (int i = 0; i < N; ++i) g_weights[i] = (float)(i % 7) - 3.0f;

  /* Three hash styles: the loader counts symbols with DT_HASH or DT_GNU_HASH. */
  static const char* styles[] = {"both", "gnu", "sysv"};
  uint8_t* so[3] = {0};
  size_t so_size[3] = {0};
  for (int s = 0; s < 3; ++s) {
    char flags[128], name[64];
    snprintf(flags, sizeof flags, "-Wl,-z,defs -Wl,--hash-style=%s", styles[s]);
    snprintf(name, sizeof name, "kernels_%s", styles[s]);
    if (!build_so(name, k_kernel_source, flags, &so[s], &so_size[s])) {
      fprintf(stderr, "cannot build the kernel library\n");
      return 1;
    }
  }

  model_t m;
  model_init(&m, so[0], so_size[0]);
  uint8_t *data = NULL, *again = NULL;
  size_t size = 0, again_size = 0;
  ingot_bundle_report_t report;
  if (!build(&m.spec, &data, &size, &report)) return 1;
  printf("bundle: %zu bytes, arena %llu (lower bound %llu), weights %llu\n", size,
         (unsigned long long)report.arena_bytes, (unsigned long long)report.arena_lower_bound,
         (unsigned long long)report.weight_bytes);
  CHECK(report.bundle_bytes == size, "report size");
  CHECK(report.weight_bytes == N * 4, "report weights");
  CHECK(report.arena_bytes >= report.arena_lower_bound, "arena below its bound");
  /* a (whole run) + t (steps 0-1) + y (step 1) are live at step 1. */
  CHECK(report.arena_lower_bound == 3 * 4032, "lower bound %llu", (unsigned long long)report.arena_lower_bound);

  /* Identical specs give identical bytes. */
  if (build(&m.spec, &again, &again_size, NULL))
    CHECK(again_size == size && memcmp(again, data, size) == 0, "bundles differ");
  free(again);

  for (uint32_t threads = 1; threads <= 4; ++threads) run_and_check(data, size, threads, "memory");
  for (int s = 1; s < 3; ++s) {
    model_t other;
    model_init(&other, so[s], so_size[s]);
    uint8_t* d = NULL;
    size_t n = 0;
    if (build(&other.spec, &d, &n, NULL)) run_and_check(d, n, 2, styles[s]);
    free(d);
  }

  /* From a file. */
  {
    char path[1024];
    snprintf(path, sizeof path, "%s/model.ingot", g_work);
    FILE* f = fopen(path, "wb");
    fwrite(data, 1, size, f);
    fclose(f);
    ingot_bundle_t* bundle = NULL;
    CHECK(ingot_bundle_open_file(path, NULL, &bundle) == INGOT_OK, "open file: %s", ingot_last_error());
    ingot_bundle_release(bundle);
    snprintf(path, sizeof path, "%s/missing.ingot", g_work);
    CHECK(ingot_bundle_open_file(path, NULL, &bundle) == INGOT_ERROR_IO && !bundle, "missing file");
    char want[1200];
    snprintf(want, sizeof want, "bundle: cannot open '%s': %s", path, strerror(ENOENT));
    CHECK(strcmp(ingot_last_error(), want) == 0, "missing file: %s", ingot_last_error());
  }

  test_cancel(so[0], so_size[0]);
  test_corruption(data, size);
  test_elf_loader(so[0], so_size[0]);
  test_elf_loader(so[1], so_size[1]);
  test_failing_allocator(data, size);

  /* Limits. */
  {
    ingot_bundle_options_t options = {{0}, {0}};
    options.limits.max_tensors = 4;
    ingot_bundle_t* bundle = NULL;
    CHECK(ingot_bundle_open_memory(data, size, &options, &bundle) == INGOT_ERROR_LIMIT, "tensor limit");
    options.limits.max_tensors = 0;
    options.limits.max_section_bytes = 1000;
    CHECK(ingot_bundle_open_memory(data, size, &options, &bundle) == INGOT_ERROR_LIMIT, "section limit");
    options.limits.max_section_bytes = 0;
    options.limits.max_arena_bytes = 64;
    CHECK(ingot_bundle_open_memory(data, size, &options, &bundle) == INGOT_ERROR_LIMIT, "arena limit");
  }

  /* A kernel that returns non-zero: the run fails naming the node. */
  {
    model_t bad;
    model_init(&bad, so[0], so_size[0]);
    bad.steps[1].kernel = 2;
    uint8_t* d = NULL;
    size_t n = 0;
    ingot_bundle_t* bundle = NULL;
    ingot_session_t* session = NULL;
    if (build(&bad.spec, &d, &n, NULL) && ingot_bundle_open_memory(d, n, NULL, &bundle) == INGOT_OK &&
        ingot_session_create(bundle, NULL, &session) == INGOT_OK) {
      CHECK(ingot_session_run(session) == INGOT_ERROR_INTERNAL, "failing kernel");
      CHECK(strstr(ingot_last_error(), "node_scale") != NULL, "message: %s", ingot_last_error());
    } else {
      CHECK(0, "failing-kernel bundle: %s", ingot_last_error());
    }
    ingot_session_release(session);
    ingot_bundle_release(bundle);
    free(d);
  }

  /* A kernel name the code does not have. */
  {
    model_t bad;
    model_init(&bad, so[0], so_size[0]);
    bad.kernel_names[1] = "no_such_kernel";
    expect_open_fails(&bad.spec, INGOT_ERROR_CORRUPT, "no_such_kernel", "missing kernel");
  }

  /* Variant choice: a GPU target is skipped, the "c" one is used; a bundle
   * with only targets this machine cannot run is refused. */
  {
    static const uint8_t junk[] = "not an ELF object at all";
    model_t two;
    model_init(&two, so[0], so_size[0]);
    two.codes[0] = (ingot_bundle_code_t){"cuda -arch=sm_90", junk, sizeof junk, INGOT_LOADER_CPU_ELF, NULL, NULL};
    two.codes[1] = (ingot_bundle_code_t){"c", so[0], so_size[0], INGOT_LOADER_CPU_ELF, NULL, NULL};
    two.spec.code_count = 2;
    uint8_t* d = NULL;
    size_t n = 0;
    ingot_bundle_t* bundle = NULL;
    if (build(&two.spec, &d, &n, NULL)) {
      CHECK(ingot_bundle_open_memory(d, n, NULL, &bundle) == INGOT_OK, "two variants: %s", ingot_last_error());
      CHECK(bundle && strcmp(ingot_bundle_target(bundle), "c") == 0, "picked the wrong variant");
      ingot_bundle_release(bundle);
      free(d);
    }
    two.spec.code_count = 1;
    expect_open_fails(&two.spec, INGOT_ERROR_UNSUPPORTED, "no code variant", "gpu only");
    /* A "c" section that is not ELF at all. */
    two.codes[0] = (ingot_bundle_code_t){"c", junk, sizeof junk, INGOT_LOADER_CPU_ELF, NULL, NULL};
    expect_open_fails(&two.spec, INGOT_ERROR_UNSUPPORTED, NULL, "junk code");
  }

  /* A code object that imports a symbol is refused by the loader. */
  {
    uint8_t* imp = NULL;
    size_t imp_size = 0;
    if (build_so("importing", k_importing_source, "-Wl,--hash-style=both", &imp, &imp_size)) {
      model_t bad;
      model_init(&bad, imp, imp_size);
      bad.spec.kernel_count = 2;
      expect_open_fails(&bad.spec, INGOT_ERROR_UNSUPPORTED, "elf", "importing code");
      free(imp);
    } else {
      CHECK(0, "cannot build the importing library");
    }
  }

  /* The writer refuses bad specs with a status. */
  {
    model_t bad;
    model_init(&bad, so[0], so_size[0]);
    uint8_t* d = NULL;
    size_t n = 0;
    static const uint32_t k_bad_args[] = {2, 7}; /* tensor 7 of 5 */
    bad.steps[1].args = k_bad_args;
    CHECK(ingot_bundle_build(&bad.spec, &d, &n, NULL) == INGOT_ERROR_INVALID_ARGUMENT && !d, "argument index");
    model_init(&bad, so[0], so_size[0]);
    bad.steps[0].kernel = 9;
    CHECK(ingot_bundle_build(&bad.spec, &d, &n, NULL) == INGOT_ERROR_INVALID_ARGUMENT && !d, "kernel index");
    model_init(&bad, so[0], so_size[0]);
    bad.tensors[3].alias_of = 4; /* 3 -> 4 -> 3 */
    CHECK(ingot_bundle_build(&bad.spec, &d, &n, NULL) == INGOT_ERROR_INVALID_ARGUMENT && !d, "alias cycle");
    model_init(&bad, so[0], so_size[0]);
    bad.codes[0].target = "a target name that is far too long for the table";
    CHECK(ingot_bundle_build(&bad.spec, &d, &n, NULL) == INGOT_ERROR_INVALID_ARGUMENT && !d, "target name");
    model_init(&bad, so[0], so_size[0]);
    bad.tensors[1].dims[0] = -1;
    CHECK(ingot_bundle_build(&bad.spec, &d, &n, NULL) == INGOT_ERROR_INVALID_ARGUMENT && !d, "negative dim");
  }

  CHECK(strcmp(ingot_status_name(INGOT_ERROR_CORRUPT), "corrupt") == 0, "status name");
  CHECK(ingot_dtype_size(INGOT_DTYPE_I64) == 8 && ingot_dtype_size((ingot_dtype_t)99) == 0, "dtype size");
  CHECK(ingot_crc32(0, "123456789", 9) == 0xCBF43926u, "crc32 check value");
  CHECK(ingot_version() == ((INGOT_VERSION_MAJOR << 16) | (INGOT_VERSION_MINOR << 8) | INGOT_VERSION_PATCH), "version");
  /* the CPU as tuning logs record it: stable, trimmed, and (x86-64) a non-empty feature list */
  CHECK(ingot_cpu_model() == ingot_cpu_model() && ingot_cpu_model()[0] != ' ', "cpu model");
#if defined(__x86_64__)
  CHECK(ingot_cpu_features()[0] != '\0' && ingot_cpu_features()[0] != ' ', "cpu features");
#endif

  for (int s = 0; s < 3; ++s) free(so[s]);
  free(data);
  if (g_failures) {
    fprintf(stderr, "%d failures\n", g_failures);
    return 1;
  }
  printf("runtime end to end: ok\n");
  return 0;
}
