/* Tests for the C target: hand-built loop IR -> C source -> shared object,
 * loaded here with dlopen (test only; the product uses the runtime's own
 * loader) and run through ingot_library_query with a test env whose
 * parallel_for splits the range in chunks run out of order. Results are
 * compared with values computed here, libm, and (when it exists) the IR
 * interpreter. The objects are checked to import nothing and to carry only
 * RELATIVE relocations. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "codegen/codegen_internal.h"

#ifndef INGOT_TEST_HAVE_LOADER
#define INGOT_TEST_HAVE_LOADER 0
#endif
#if INGOT_TEST_HAVE_LOADER
#include "runtime/runtime_internal.h"
#endif
#ifndef INGOT_TEST_HAVE_INTERP
#define INGOT_TEST_HAVE_INTERP 0
#endif

static int g_failures = 0;
#define CHECK(cond, ...)                                          \
  do {                                                            \
    if (!(cond)) {                                                \
      ++g_failures;                                               \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                               \
      fprintf(stderr, "\n");                                      \
    }                                                             \
  } while (0)
#define REQUIRE_OK(expr)                                                      \
  do {                                                                        \
    ingot_status_t st_ = (expr);                                              \
    if (st_ != INGOT_OK) {                                                    \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr,    \
              ingot_compiler_error());                                        \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

/* ---- Test env: parallel_for in 3 chunks, last chunk first. */
static int g_parallel_calls = 0;
static void test_parallel_for(void* pool, int64_t count, ingot_parallel_body_fn_t body, void* ctx) {
  (void)pool;
  ++g_parallel_calls;
  int64_t chunks = count < 3 ? count : 3;
  for (int64_t c = chunks - 1; c >= 0; --c) body(ctx, count * c / chunks, count * (c + 1) / chunks);
}

static ingot_kernel_env_t test_env(void) {
  ingot_kernel_env_t env = {0};
  env.abi_version = INGOT_KERNEL_ABI_VERSION;
  env.thread_count = 3;
  env.parallel_for = test_parallel_for;
  env.expf = expf;
  env.logf = logf;
  env.tanhf = tanhf;
  env.erff = erff;
  env.powf = powf;
  return env;
}

/* ---- Building and loading. */
typedef struct module_t {
  void* handle;
  const ingot_kernel_library_t* lib;
  char path[256];
  uint8_t* object;
  size_t size;
} module_t;

static const ingot_target_t* target_of(const char* text) {
  static ingot_target_t t[4];
  static int next = 0;
  ingot_target_t* out = &t[next++ % 4];
  REQUIRE_OK(ingot_target_parse(text, out));
  return out;
}
static const ingot_target_t* host_target(void) { return target_of("c"); }

static void module_build_for(ingot_ir_func_t** funcs, uint32_t count, const ingot_target_t* target,
                             module_t* m) {
  memset(m, 0, sizeof(*m));
  REQUIRE_OK(ingot_codegen_build(funcs, count, target, NULL, NULL, &m->object, &m->size));
  snprintf(m->path, sizeof(m->path), "/tmp/ingot-test-cg-XXXXXX");
  int fd = mkstemp(m->path);
  if (fd < 0 || write(fd, m->object, m->size) != (ssize_t)m->size) {
    fprintf(stderr, "cannot write %s\n", m->path);
    exit(1);
  }
  close(fd);
  m->handle = dlopen(m->path, RTLD_NOW | RTLD_LOCAL);
  if (!m->handle) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    exit(1);
  }
  ingot_library_query_fn_t q = (ingot_library_query_fn_t)dlsym(m->handle, INGOT_LIBRARY_QUERY_SYMBOL);
  CHECK(q != NULL, "no %s", INGOT_LIBRARY_QUERY_SYMBOL);
  if (!q) exit(1);
  CHECK(q(INGOT_KERNEL_ABI_VERSION + 1) == NULL, "a library must refuse other ABI versions");
  m->lib = q(INGOT_KERNEL_ABI_VERSION);
  CHECK(m->lib && m->lib->abi_version == INGOT_KERNEL_ABI_VERSION && m->lib->kernel_count == count,
        "library table");
  if (!m->lib) exit(1);
}

static void module_build(ingot_ir_func_t** funcs, uint32_t count, module_t* m) {
  module_build_for(funcs, count, host_target(), m);
}

/* Removes the source a failed build kept (its path is in the message). */
static void remove_kept_source(const char* msg) {
  const char* kept = strstr(msg, "source kept at ");
  if (!kept) return;
  char path[512];
  if (sscanf(kept + strlen("source kept at "), "%511[^;]", path) != 1) return;
  CHECK(access(path, R_OK) == 0, "kept source %s", path);
  unlink(path);
  char* slash = strrchr(path, '/');
  if (slash) {
    *slash = '\0';
    rmdir(path);
  }
}

static ingot_kernel_fn_t module_kernel(const module_t* m, const char* name) {
  for (uint32_t i = 0; i < m->lib->kernel_count; ++i)
    if (strcmp(m->lib->kernels[i].name, name) == 0) return m->lib->kernels[i].fn;
  CHECK(0, "kernel '%s' not in the library", name);
  exit(1);
}

static void module_close(module_t* m) {
  dlclose(m->handle);
  unlink(m->path);
  free(m->object);
}

static int32_t run_kernel(const module_t* m, const char* name, void** args) {
  ingot_kernel_env_t env = test_env();
  return module_kernel(m, name)(&env, (void* const*)args);
}

static void compare_with_interpreter(const ingot_ir_func_t* f, void** args, void** ref_args,
                                     const size_t* bytes, uint32_t nargs) {
#if INGOT_TEST_HAVE_INTERP
  REQUIRE_OK(ingot_ir_interpret(f, ref_args));
  for (uint32_t i = 0; i < nargs; ++i) {
    if (f->buffers[i].role != INGOT_IR_BUFFER_OUTPUT) continue;
    if (f->buffers[i].dtype == INGOT_DTYPE_F32) {
      const float* a = args[i];
      const float* b = ref_args[i];
      size_t n = bytes[i] / 4;
      for (size_t k = 0; k < n; ++k) {
        bool same = (isnan(a[k]) && isnan(b[k])) || fabsf(a[k] - b[k]) <= 1e-5f + 1e-5f * fabsf(b[k]) ||
                    a[k] == b[k];
        if (!same) {
          CHECK(0, "%s: buffer %s[%zu] = %g, interpreter %g", f->name, f->buffers[i].name, k, a[k], b[k]);
          break;
        }
      }
    } else {
      CHECK(memcmp(args[i], ref_args[i], bytes[i]) == 0, "%s: buffer %s differs from the interpreter",
            f->name, f->buffers[i].name);
    }
  }
#else
  (void)f; (void)args; (void)ref_args; (void)bytes; (void)nargs;
#endif
}

/* ---- IR shorthands. */
static ingot_ir_expr_t* V(ingot_ir_func_t* f, uint32_t var) { return ingot_ir_var(f, var); }
static ingot_ir_expr_t* I(ingot_ir_func_t* f, int64_t v) { return ingot_ir_int(f, v); }
static ingot_ir_expr_t* F(ingot_ir_func_t* f, double v) { return ingot_ir_float(f, INGOT_DTYPE_F32, v); }
static ingot_ir_expr_t* BIN(ingot_ir_func_t* f, ingot_ir_binary_op_t op, ingot_ir_expr_t* a, ingot_ir_expr_t* b) {
  return ingot_ir_binary(f, op, a, b);
}
static ingot_ir_stmt_t* BLOCK2(ingot_ir_func_t* f, ingot_ir_stmt_t* a, ingot_ir_stmt_t* b) {
  ingot_ir_stmt_t* s[2] = {a, b};
  return ingot_ir_block(f, s, 2);
}
static ingot_ir_stmt_t* FOR_KIND(ingot_ir_func_t* f, uint32_t var, int64_t n, ingot_ir_loop_kind_t kind,
                                 ingot_ir_stmt_t* body) {
  ingot_ir_stmt_t* s = ingot_ir_for(f, var, n, body);
  s->u.loop.loop_kind = kind;
  return s;
}

/* ---- ulp distance for the math checks. */
static double ulp_error(float got, float want) {
  if (isnan(want)) return isnan(got) ? 0 : 1e30;
  if (isinf(want) || isinf(got)) return got == want ? 0 : 1e30;
  double ulp = fabs((double)nextafterf(want, INFINITY) - (double)want);
  if (ulp == 0 || ulp < 0x1p-149) ulp = 0x1p-149;
  return fabs((double)got - (double)want) / ulp;
}

/* ---- 1. Elementwise math over many inputs. */
enum { kMathOps = 12 };
static const char* const k_math_names[kMathOps] = {"exp", "tanh", "erf", "log", "sqrt", "abs",
                                                   "floor", "ceil", "neg", "pow", "fmod", "min"};

static void test_math(const char* target_text) {
  ingot_ir_func_t* f = ingot_ir_func_create("math_f32");
  const int64_t n = 200003;
  int64_t dims[1] = {n};
  uint32_t x = ingot_ir_add_buffer(f, "x", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 1, dims);
  uint32_t y = ingot_ir_add_buffer(f, "y", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 1, dims);
  uint32_t outs[kMathOps];
  for (int k = 0; k < kMathOps; ++k)
    outs[k] = ingot_ir_add_buffer(f, k_math_names[k], INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 1, dims);
  uint32_t i = ingot_ir_add_var(f, "i", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  ingot_ir_expr_t* xi = ingot_ir_load(f, x, V(f, i));
  ingot_ir_expr_t* yi = ingot_ir_load(f, y, V(f, i));
  ingot_ir_expr_t* vals[kMathOps] = {
      ingot_ir_unary(f, INGOT_IR_EXP, xi),  ingot_ir_unary(f, INGOT_IR_TANH, xi),
      ingot_ir_unary(f, INGOT_IR_ERF, xi),  ingot_ir_unary(f, INGOT_IR_LOG, xi),
      ingot_ir_unary(f, INGOT_IR_SQRT, xi), ingot_ir_unary(f, INGOT_IR_ABS, xi),
      ingot_ir_unary(f, INGOT_IR_FLOOR, xi), ingot_ir_unary(f, INGOT_IR_CEIL, xi),
      ingot_ir_unary(f, INGOT_IR_NEG, xi),  BIN(f, INGOT_IR_POW, xi, yi),
      BIN(f, INGOT_IR_MOD, xi, yi),         BIN(f, INGOT_IR_MIN, xi, yi),
  };
  ingot_ir_stmt_t* stores[kMathOps];
  for (int k = 0; k < kMathOps; ++k) stores[k] = ingot_ir_store(f, outs[k], V(f, i), vals[k]);
  f->body = FOR_KIND(f, i, n, INGOT_IR_LOOP_VECTORIZED, ingot_ir_block(f, stores, kMathOps));

  float* in_x = malloc(sizeof(float) * n);
  float* in_y = malloc(sizeof(float) * n);
  float* out[kMathOps];
  for (int k = 0; k < kMathOps; ++k) out[k] = calloc(n, sizeof(float));
  /* Inputs: a dense sweep of [-12, 12], a log-spaced sweep of both signs from
   * 1e-40 to 1e30, and specials. */
  int64_t p = 0;
  for (; p < 100000; ++p) in_x[p] = -12.0f + 24.0f * (float)p / 100000.0f;
  for (int64_t q = 0; p < n - 8; ++p, ++q) {
    double e = -40.0 + 70.0 * (double)(q / 2) / 50000.0;
    in_x[p] = (float)((q & 1 ? -1.0 : 1.0) * pow(10.0, e));
  }
  const float specials[8] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 88.72f, -103.9f, 1e-45f};
  for (int k = 0; k < 8; ++k) in_x[p++] = specials[k];
  for (int64_t q = 0; q < n; ++q) in_y[q] = (float)((q % 7) - 3) * 0.75f + (q % 2 ? 0.3f : 0.0f);

  module_t m;
  ingot_ir_func_t* funcs[1] = {f};
  module_build_for(funcs, 1, target_of(target_text), &m);
  void* args[2 + kMathOps] = {in_x, in_y};
  for (int k = 0; k < kMathOps; ++k) args[2 + k] = out[k];
  CHECK(run_kernel(&m, "math_f32", args) == 0, "kernel return");

  double worst[kMathOps] = {0};
  int64_t worst_at[kMathOps] = {0};
  for (int64_t q = 0; q < n; ++q) {
    float a = in_x[q], b = in_y[q];
    float want[kMathOps] = {expf(a), tanhf(a), erff(a), logf(a), sqrtf(a), fabsf(a), floorf(a),
                            ceilf(a), -a, powf(a, b), fmodf(a, b), fminf(a, b)};
    for (int k = 0; k < kMathOps; ++k) {
      float got = out[k][q];
      double err = ulp_error(got, want[k]);
      if (!isnan(want[k]) && fabs((double)got - (double)want[k]) <= 1e-6 && k <= 3) err = 0;
      if (k >= 4 && k != 9 && memcmp(&got, &want[k], 4) != 0 && !(isnan(got) && isnan(want[k]))) err = 1e30;
      if (err > worst[k]) { worst[k] = err; worst_at[k] = q; }
    }
  }
  for (int k = 0; k < kMathOps; ++k) {
    double limit = k <= 3 ? 4.0 : 0.0;
    CHECK(worst[k] <= limit, "%s: %g ulp at x=%a y=%a (got %a)", k_math_names[k], worst[k],
          in_x[worst_at[k]], in_y[worst_at[k]], out[k][worst_at[k]]);
    printf("  %-5s max error %.3g ulp\n", k_math_names[k], worst[k]);
  }
  float* ref[kMathOps];
  void* ref_args[2 + kMathOps] = {in_x, in_y};
  size_t bytes[2 + kMathOps];
  for (int k = 0; k < 2 + kMathOps; ++k) bytes[k] = sizeof(float) * (size_t)n;
  for (int k = 0; k < kMathOps; ++k) ref_args[2 + k] = ref[k] = calloc(n, sizeof(float));
  compare_with_interpreter(f, args, ref_args, bytes, 2 + kMathOps);
  for (int k = 0; k < kMathOps; ++k) free(ref[k]);
  module_close(&m);

  for (int k = 0; k < kMathOps; ++k) free(out[k]);
  free(in_x);
  free(in_y);
  ingot_ir_func_destroy(f);
}

/* ---- 2. Reductions: a local accumulator, and an UPDATE into the output
 * with a VECTORIZED reduction loop (must not get SIMD pragmas). */
static void test_reduction(void) {
  ingot_ir_func_t* f = ingot_ir_func_create("reduce_rows");
  enum { R = 37, K = 129 };
  int64_t dx[2] = {R, K}, dy[1] = {R};
  uint32_t x = ingot_ir_add_buffer(f, "x", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 2, dx);
  uint32_t s1 = ingot_ir_add_buffer(f, "sum", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 1, dy);
  uint32_t s2 = ingot_ir_add_buffer(f, "sum2", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 1, dy);
  uint32_t i = ingot_ir_add_var(f, "i", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t r = ingot_ir_add_var(f, "r", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t i2 = ingot_ir_add_var(f, "i2", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t r2 = ingot_ir_add_var(f, "r2", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t i3 = ingot_ir_add_var(f, "i3", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t acc = ingot_ir_add_var(f, "acc", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
  ingot_ir_expr_t* xi[2] = {V(f, i), V(f, r)};
  ingot_ir_stmt_t* inner = FOR_KIND(
      f, r, K, INGOT_IR_LOOP_VECTORIZED,
      ingot_ir_assign(f, acc, ingot_ir_add(f, V(f, acc), ingot_ir_load(f, x, ingot_ir_flat_index(f, x, xi)))));
  ingot_ir_stmt_t* s[3] = {ingot_ir_local(f, acc, F(f, 0.0)), inner, ingot_ir_store(f, s1, V(f, i), V(f, acc))};
  ingot_ir_stmt_t* stage1 = ingot_ir_for(f, i, R, ingot_ir_block(f, s, 3));
  /* UPDATE style */
  ingot_ir_stmt_t* init = ingot_ir_for(f, i3, R, ingot_ir_store(f, s2, V(f, i3), F(f, 0.0)));
  ingot_ir_expr_t* xi2[2] = {V(f, i2), V(f, r2)};
  ingot_ir_stmt_t* upd = ingot_ir_for(
      f, i2, R,
      FOR_KIND(f, r2, K, INGOT_IR_LOOP_VECTORIZED,
               ingot_ir_store(f, s2, V(f, i2),
                              ingot_ir_add(f, ingot_ir_load(f, s2, V(f, i2)),
                                           ingot_ir_load(f, x, ingot_ir_flat_index(f, x, xi2))))));
  ingot_ir_stmt_t* all[3] = {stage1, init, upd};
  f->body = ingot_ir_block(f, all, 3);

  ingot_strbuf_t src = {0};
  REQUIRE_OK(ingot_codegen_c_source(&f, 1, host_target(), &src));
  const char* upd_loop = strstr(src.data, "for (int64_t v_r2");
  CHECK(upd_loop != NULL, "reduction loop emitted");
  if (upd_loop) {
    const char* before = upd_loop - 80 > src.data ? upd_loop - 80 : src.data;
    char window[128] = {0};
    memcpy(window, before, (size_t)(upd_loop - before));
    CHECK(strstr(window, "omp simd") == NULL, "an UPDATE reduction loop must not get omp simd");
  }
  ingot_strbuf_free(&src);

  static float in[R * K], out1[R], out2[R], ref1[R], ref2[R];
  for (int k = 0; k < R * K; ++k) in[k] = (float)((k * 37) % 101) / 16.0f - 3.0f;
  module_t m;
  module_build(&f, 1, &m);
  void* args[3] = {in, out1, out2};
  CHECK(run_kernel(&m, "reduce_rows", args) == 0, "kernel return");
  for (int a = 0; a < R; ++a) {
    float acc_ref = 0;
    for (int b = 0; b < K; ++b) acc_ref += in[a * K + b];
    CHECK(fabsf(out1[a] - acc_ref) <= 1e-3f, "row %d: %g vs %g", a, out1[a], acc_ref);
    CHECK(fabsf(out2[a] - acc_ref) <= 1e-3f, "row %d (update): %g vs %g", a, out2[a], acc_ref);
  }
  void* ref_args[3] = {in, ref1, ref2};
  size_t bytes[3] = {sizeof(in), sizeof(ref1), sizeof(ref2)};
  compare_with_interpreter(f, args, ref_args, bytes, 3);
  module_close(&m);
  ingot_ir_func_destroy(f);
}

/* ---- 3. A PARALLEL loop nested under a serial loop with a local; 4. an IF
 * guard in a VECTORIZED loop; names that clash with C. */
static void test_parallel_and_guard(void) {
  enum { N = 3, C = 7, H = 11, G = 50 };
  ingot_ir_func_t* f = ingot_ir_func_create("par_nested");
  int64_t d[3] = {N, C, H};
  uint32_t x = ingot_ir_add_buffer(f, "in", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 3, d);
  uint32_t o = ingot_ir_add_buffer(f, "out", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 3, d);
  uint32_t n = ingot_ir_add_var(f, "int", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);  /* a C keyword */
  uint32_t c = ingot_ir_add_var(f, "c.x", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t h = ingot_ir_add_var(f, "c_x", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64); /* clashes once sanitized */
  uint32_t sc = ingot_ir_add_var(f, "scale", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
  uint32_t t = ingot_ir_add_var(f, "t", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
  ingot_ir_expr_t* idx[3] = {V(f, n), V(f, c), V(f, h)};
  ingot_ir_expr_t* val = ingot_ir_add(f, ingot_ir_mul(f, ingot_ir_load(f, x, ingot_ir_flat_index(f, x, idx)), V(f, sc)),
                                      ingot_ir_cast(f, INGOT_DTYPE_F32, V(f, c)));
  ingot_ir_stmt_t* hbody = BLOCK2(f, ingot_ir_local(f, t, val),
                                  ingot_ir_store(f, o, ingot_ir_flat_index(f, o, idx), V(f, t)));
  ingot_ir_stmt_t* cl = FOR_KIND(f, c, C, INGOT_IR_LOOP_PARALLEL,
                                 FOR_KIND(f, h, H, INGOT_IR_LOOP_VECTORIZED, hbody));
  ingot_ir_expr_t* scv = ingot_ir_add(f, ingot_ir_cast(f, INGOT_DTYPE_F32, V(f, n)), F(f, 0.5));
  f->body = ingot_ir_for(f, n, N, BLOCK2(f, ingot_ir_local(f, sc, scv), cl));

  ingot_ir_func_t* g = ingot_ir_func_create("guard kernel?");  /* not an identifier */
  int64_t dg[1] = {64};
  uint32_t gx = ingot_ir_add_buffer(g, "x", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 1, dg);
  uint32_t go = ingot_ir_add_buffer(g, "return", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 1, dg);
  uint32_t gi = ingot_ir_add_var(g, "i", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  ingot_ir_stmt_t* st = ingot_ir_store(g, go, V(g, gi),
                                       ingot_ir_add(g, ingot_ir_load(g, gx, V(g, gi)), F(g, 1.0)));
  g->body = FOR_KIND(g, gi, 64, INGOT_IR_LOOP_VECTORIZED,
                     ingot_ir_if(g, BIN(g, INGOT_IR_LT, V(g, gi), I(g, G)), st));

  ingot_ir_func_t* funcs[2] = {f, g};
  ingot_strbuf_t src = {0};
  REQUIRE_OK(ingot_codegen_c_source(funcs, 2, host_target(), &src));
  {
    const char* first = "/* Generated by Ingot (target c): do not edit. */\n";
    CHECK(strncmp(src.data, first, strlen(first)) == 0, "first line");
  }
  CHECK(strstr(src.data, "#include") == NULL, "the module includes no header");
  CHECK(strstr(src.data, "env->parallel_for(env->pool, 7LL, par0_k_par_nested") != NULL, "parallel call");
  CHECK(strstr(src.data, "#pragma omp simd") != NULL, "simd pragma");
  ingot_strbuf_free(&src);

  module_t m;
  module_build(funcs, 2, &m);
  static float in[N * C * H], out[N * C * H], ref[N * C * H];
  for (int k = 0; k < N * C * H; ++k) in[k] = (float)k * 0.25f - 10.0f;
  g_parallel_calls = 0;
  void* args[2] = {in, out};
  CHECK(run_kernel(&m, "par_nested", args) == 0, "kernel return");
  CHECK(g_parallel_calls == N, "parallel_for called %d times, want %d", g_parallel_calls, N);
  for (int a = 0; a < N; ++a)
    for (int b = 0; b < C; ++b)
      for (int e = 0; e < H; ++e) {
        int k = (a * C + b) * H + e;
        float want = in[k] * ((float)a + 0.5f) + (float)b;
        CHECK(out[k] == want, "out[%d] = %g, want %g", k, out[k], want);
      }
  void* ref_args[2] = {in, ref};
  size_t bytes[2] = {sizeof(in), sizeof(out)};
  compare_with_interpreter(f, args, ref_args, bytes, 2);

  static float gin[64], gout[64];
  for (int k = 0; k < 64; ++k) { gin[k] = (float)k; gout[k] = -7.0f; }
  void* gargs[2] = {gin, gout};
  CHECK(run_kernel(&m, "guard kernel?", gargs) == 0, "kernel return");
  for (int k = 0; k < 64; ++k) CHECK(gout[k] == (k < G ? (float)k + 1.0f : -7.0f), "guard %d: %g", k, gout[k]);
  module_close(&m);
  ingot_ir_func_destroy(f);
  ingot_ir_func_destroy(g);
}

/* ---- 5. int64 floor div / mod with negatives; other dtypes and casts. */
static int64_t ref_floordiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return (int64_t)(0u - (uint64_t)a);
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
static int64_t ref_floormod(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  return a - ref_floordiv(a, b) * b;
}

static void test_integers(void) {
  enum { M = 16 };
  ingot_ir_func_t* f = ingot_ir_func_create("int_ops");
  int64_t d[1] = {M};
  uint32_t a = ingot_ir_add_buffer(f, "a", INGOT_DTYPE_I64, INGOT_IR_BUFFER_INPUT, 1, d);
  uint32_t b = ingot_ir_add_buffer(f, "b", INGOT_DTYPE_I64, INGOT_IR_BUFFER_INPUT, 1, d);
  uint32_t qd = ingot_ir_add_buffer(f, "div", INGOT_DTYPE_I64, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t qm = ingot_ir_add_buffer(f, "mod", INGOT_DTYPE_I64, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t ci = ingot_ir_add_buffer(f, "const_div", INGOT_DTYPE_I64, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t cn = ingot_ir_add_buffer(f, "neg_const_mod", INGOT_DTYPE_I64, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t i8o = ingot_ir_add_buffer(f, "i8", INGOT_DTYPE_I8, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t u8o = ingot_ir_add_buffer(f, "u8", INGOT_DTYPE_U8, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t bo = ingot_ir_add_buffer(f, "bool", INGOT_DTYPE_BOOL, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t i32o = ingot_ir_add_buffer(f, "i32", INGOT_DTYPE_I32, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t f64o = ingot_ir_add_buffer(f, "f64", INGOT_DTYPE_F64, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t i = ingot_ir_add_var(f, "i", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  ingot_ir_expr_t* ai = ingot_ir_load(f, a, V(f, i));
  ingot_ir_expr_t* bi = ingot_ir_load(f, b, V(f, i));
  ingot_ir_expr_t* ai8 = ingot_ir_cast(f, INGOT_DTYPE_I8, ai);
  ingot_ir_expr_t* au8 = ingot_ir_cast(f, INGOT_DTYPE_U8, ai);
  ingot_ir_expr_t* cond = BIN(f, INGOT_IR_AND, BIN(f, INGOT_IR_LT, ai, bi),
                              ingot_ir_unary(f, INGOT_IR_NOT, BIN(f, INGOT_IR_EQ, bi, I(f, 0))));
  ingot_ir_stmt_t* s[9] = {
      ingot_ir_store(f, qd, V(f, i), BIN(f, INGOT_IR_DIV, ai, bi)),
      ingot_ir_store(f, qm, V(f, i), BIN(f, INGOT_IR_MOD, ai, bi)),
      ingot_ir_store(f, ci, V(f, i), ingot_ir_add(f, BIN(f, INGOT_IR_DIV, V(f, i), I(f, 3)),
                                                  BIN(f, INGOT_IR_MOD, V(f, i), I(f, 3)))),
      ingot_ir_store(f, cn, V(f, i), BIN(f, INGOT_IR_MOD, ai, I(f, -5))),
      /* i8 arithmetic wraps: (i8)a * 3 + 100 */
      ingot_ir_store(f, i8o, V(f, i), ingot_ir_add(f, ingot_ir_mul(f, ai8, ingot_ir_cast(f, INGOT_DTYPE_I8, I(f, 3))),
                                                  ingot_ir_cast(f, INGOT_DTYPE_I8, I(f, 100)))),
      ingot_ir_store(f, u8o, V(f, i), BIN(f, INGOT_IR_MAX, au8, ingot_ir_cast(f, INGOT_DTYPE_U8, I(f, 9)))),
      ingot_ir_store(f, bo, V(f, i), cond),
      ingot_ir_store(f, i32o, V(f, i),
                     ingot_ir_select(f, cond, ingot_ir_cast(f, INGOT_DTYPE_I32, ai),
                                     ingot_ir_unary(f, INGOT_IR_ABS, ingot_ir_cast(f, INGOT_DTYPE_I32, bi)))),
      ingot_ir_store(f, f64o, V(f, i),
                     ingot_ir_binary(f, INGOT_IR_DIV, ingot_ir_cast(f, INGOT_DTYPE_F64, ai),
                                     ingot_ir_float(f, INGOT_DTYPE_F64, 3.0))),
  };
  f->body = ingot_ir_for(f, i, M, ingot_ir_block(f, s, 9));

  module_t m;
  module_build(&f, 1, &m);
  int64_t av[M] = {7, -7, 7, -7, 0, 5, -1, INT64_MIN, 100, -100, 3, -3, 1, 12, -13, 40};
  int64_t bv[M] = {2, 2, -2, -2, 3, 0, 5, -1, 7, 7, -7, 3, -1, 4, 4, -9};
  int64_t dv[M], mv[M], cv[M], nv[M], i32tmp[M];
  int8_t i8v[M];
  uint8_t u8v[M];
  _Bool bv2[M];
  int32_t i32v[M];
  double f64v[M];
  (void)i32tmp;
  void* args[11] = {av, bv, dv, mv, cv, nv, i8v, u8v, bv2, i32v, f64v};
  CHECK(run_kernel(&m, "int_ops", args) == 0, "kernel return");
  for (int k = 0; k < M; ++k) {
    CHECK(dv[k] == ref_floordiv(av[k], bv[k]), "%lld div %lld = %lld", (long long)av[k], (long long)bv[k], (long long)dv[k]);
    CHECK(mv[k] == ref_floormod(av[k], bv[k]), "%lld mod %lld = %lld", (long long)av[k], (long long)bv[k], (long long)mv[k]);
    CHECK(cv[k] == k / 3 + k % 3, "const div/mod at %d", k);
    CHECK(nv[k] == ref_floormod(av[k], -5), "%lld mod -5 = %lld", (long long)av[k], (long long)nv[k]);
    CHECK(i8v[k] == (int8_t)((int8_t)av[k] * 3 + 100), "i8 at %d: %d", k, i8v[k]);
    uint8_t u = (uint8_t)av[k];
    CHECK(u8v[k] == (u > 9 ? u : 9), "u8 at %d: %d", k, u8v[k]);
    _Bool c = av[k] < bv[k] && bv[k] != 0;
    CHECK(bv2[k] == c, "bool at %d", k);
    int32_t bi32 = (int32_t)bv[k];
    CHECK(i32v[k] == (c ? (int32_t)av[k] : (bi32 < 0 ? -bi32 : bi32)), "i32 at %d: %d", k, i32v[k]);
    CHECK(f64v[k] == (double)av[k] / 3.0, "f64 at %d", k);
  }
  module_close(&m);
  ingot_ir_func_destroy(f);
}

/* ---- 5b. dot4 (the c target's ingot_dot4 helper): y[n] = acc[n] + dot4(a,
 * w[n]) and z[n] = dot4(a, w[n]) over extreme and random words, against a
 * scalar reference written here and the interpreter. */
static int32_t dot4_ref(uint32_t a, uint32_t b) {
  int32_t s = 0;
  for (int j = 0; j < 32; j += 8) s += (int32_t)(uint8_t)(a >> j) * (int32_t)(int8_t)(uint8_t)(b >> j);
  return s;
}

static void test_dot4(void) {
  enum { N = 21 };
  ingot_ir_func_t* f = ingot_ir_func_create("dot4_c");
  int64_t d[1] = {N};
  uint32_t a = ingot_ir_add_buffer(f, "a", INGOT_DTYPE_I32, INGOT_IR_BUFFER_INPUT, 1, d);
  uint32_t w = ingot_ir_add_buffer(f, "w", INGOT_DTYPE_I32, INGOT_IR_BUFFER_INPUT, 1, d);
  uint32_t acc = ingot_ir_add_buffer(f, "acc", INGOT_DTYPE_I32, INGOT_IR_BUFFER_INPUT, 1, d);
  uint32_t y = ingot_ir_add_buffer(f, "y", INGOT_DTYPE_I32, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t z = ingot_ir_add_buffer(f, "z", INGOT_DTYPE_I32, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t i = ingot_ir_add_var(f, "i", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  ingot_ir_expr_t* dot = BIN(f, INGOT_IR_DOT4, ingot_ir_load(f, a, V(f, i)), ingot_ir_load(f, w, V(f, i)));
  f->body = ingot_ir_for(f, i, N, BLOCK2(f, ingot_ir_store(f, y, V(f, i), ingot_ir_add(f, ingot_ir_load(f, acc, V(f, i)), dot)),
                                         ingot_ir_store(f, z, V(f, i), dot)));
  uint32_t av[N] = {0xffffffffu, 0xffffffffu, 0, 0x01020304u, 0x80808080u, 0x7f7f7f7fu};
  uint32_t wv[N] = {0x80808080u, 0x7f7f7f7fu, 0xffffffffu, 0xfffefdfcu, 0x80808080u, 0x01010101u};
  int32_t accv[N], yv[N], zv[N], yr[N], zr[N];
  uint32_t seed = 12345u;
  for (int k = 0; k < N; ++k) {
    if (k >= 6) {
      seed = seed * 1664525u + 1013904223u;
      av[k] = seed;
      seed = seed * 1664525u + 1013904223u;
      wv[k] = seed;
    }
    accv[k] = (k * 7919) % 20001 - 10000;
  }
  module_t m;
  module_build(&f, 1, &m);
  void* args[5] = {av, wv, accv, yv, zv};
  CHECK(run_kernel(&m, "dot4_c", args) == 0, "kernel return");
  for (int k = 0; k < N; ++k) {
    CHECK(zv[k] == dot4_ref(av[k], wv[k]) && yv[k] == accv[k] + dot4_ref(av[k], wv[k]),
          "dot4(%08x, %08x) = %d (+acc %d), reference %d", av[k], wv[k], zv[k], yv[k], dot4_ref(av[k], wv[k]));
  }
  CHECK(zv[0] == -4 * 255 * 128 && zv[1] == 4 * 255 * 127, "dot4 extremes: %d %d", zv[0], zv[1]);
  void* ref_args[5] = {av, wv, accv, yr, zr};
  size_t bytes[5] = {sizeof av, sizeof wv, sizeof accv, sizeof yv, sizeof zv};
  compare_with_interpreter(f, args, ref_args, bytes, 5);
  module_close(&m);
  ingot_ir_func_destroy(f);
}

/* ---- 6. Errors: unsupported dtypes, bad IR, compiler failures. */
static void test_errors(void) {
  ingot_ir_func_t* f = ingot_ir_func_create("bad");
  int64_t d[1] = {4};
  uint32_t x = ingot_ir_add_buffer(f, "x", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 1, d);
  uint32_t i = ingot_ir_add_var(f, "i", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  f->body = ingot_ir_for(f, i, 4, ingot_ir_store(f, x, V(f, i), F(f, 1.0)));
  ingot_strbuf_t src = {0};
  CHECK(ingot_codegen_c_source(&f, 1, host_target(), &src) != INGOT_OK, "a store to an input must fail");
  CHECK(strstr(ingot_compiler_error(), "bad") != NULL, "message names the function: %s",
        ingot_compiler_error());
  ingot_ir_func_destroy(f);

  /* bfloat16 is storage: arithmetic on it is refused (float16's: tests/ir) */
  f = ingot_ir_func_create("half");
  uint32_t h = ingot_ir_add_buffer(f, "h", INGOT_DTYPE_BF16, INGOT_IR_BUFFER_OUTPUT, 1, d);
  f->body = ingot_ir_store(f, h, I(f, 0), ingot_ir_add(f, ingot_ir_load(f, h, I(f, 0)), ingot_ir_load(f, h, I(f, 1))));
  CHECK(ingot_codegen_c_source(&f, 1, host_target(), &src) != INGOT_OK, "bf16 arithmetic refused");
  ingot_ir_func_destroy(f);

  f = ingot_ir_func_create("scope");
  uint32_t o = ingot_ir_add_buffer(f, "o", INGOT_DTYPE_I64, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t j = ingot_ir_add_var(f, "j", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  f->body = ingot_ir_store(f, o, I(f, 0), V(f, j));
  CHECK(ingot_codegen_c_source(&f, 1, host_target(), &src) != INGOT_OK, "a loop var out of scope must fail");
  ingot_ir_func_destroy(f);
  CHECK(src.length == 0, "nothing appended on failure");
  ingot_strbuf_free(&src);

  uint8_t* obj = NULL;
  size_t size = 0;
  const char* bad = "int f(void) { return syntax error; }\n";
  CHECK(ingot_codegen_c_compile(bad, strlen(bad), host_target(), NULL, &obj, &size) == INGOT_ERROR_INTERNAL,
        "a compiler error must fail");
  const char* msg = ingot_compiler_error();
  CHECK(strstr(msg, "source kept at ") != NULL && strstr(msg, "error") != NULL, "message: %s", msg);
  remove_kept_source(msg);
  CHECK(obj == NULL, "no object on failure");
  CHECK(ingot_codegen_c_compile("int x;", 6, host_target(), "/nonexistent/cc", &obj, &size) ==
            INGOT_ERROR_NOT_FOUND, "a missing compiler must fail");
  /* A module that imports from libc is refused by the checker. */
  const char* imports = "extern int puts(const char*);\n"
                        "__attribute__((visibility(\"default\"))) int ingot_library_query(void) { return puts(\"x\"); }\n";
  CHECK(ingot_codegen_c_compile(imports, strlen(imports), host_target(), NULL, &obj, &size) != INGOT_OK,
        "an importing module must be refused");
  remove_kept_source(ingot_compiler_error());
  /* The checker itself refuses an ordinary shared object linked with libc. */
  char dir[] = "/tmp/ingot-test-elf-XXXXXX";
  if (mkdtemp(dir)) {
    char cmd[1024], so[256];
    snprintf(so, sizeof(so), "%s/libc_user.so", dir);
    snprintf(cmd, sizeof(cmd),
             "printf '#include <stdio.h>\\nint ingot_library_query(void) { return puts(\"x\"); }\\n' > %s/u.c && "
             "cc -shared -fPIC -o %s %s/u.c 2>/dev/null", dir, so, dir);
    if (system(cmd) == 0) {
      uint8_t* data = NULL;
      size_t bytes = 0;
      REQUIRE_OK(ingot_file_read(so, &data, &bytes));
      CHECK(ingot_codegen_elf_check(data, bytes) == INGOT_ERROR_CORRUPT, "libc user accepted");
      CHECK(strstr(ingot_compiler_error(), "needs a shared library") != NULL ||
                strstr(ingot_compiler_error(), "imports") != NULL ||
                strstr(ingot_compiler_error(), "relocation") != NULL,
            "message: %s", ingot_compiler_error());
      free(data);
    }
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
  }
}

/* ---- 6b. The backend table: one row per kind, dispatch by the target's kind. */
static void test_backends(void) {
  const ingot_codegen_backend_t* c = ingot_codegen_backend_find(INGOT_TARGET_C);
  CHECK(c && strcmp(c->name, "c") == 0 && c->emit && c->build, "row for c");
  const ingot_codegen_backend_t* l = ingot_codegen_backend_find(INGOT_TARGET_LLVM);
  CHECK(l && strcmp(l->name, "llvm") == 0 && l->emit && l->build, "row for llvm");
  const ingot_codegen_backend_t* cu = ingot_codegen_backend_find(INGOT_TARGET_CUDA);
  CHECK(cu && strcmp(cu->name, "cuda") == 0 && cu->vectors == INGOT_CODEGEN_VECTOR_NONE, "row for cuda");
  const ingot_codegen_backend_t* ro = ingot_codegen_backend_find(INGOT_TARGET_ROCM);
  CHECK(ro && strcmp(ro->name, "rocm") == 0 && ro->vectors == INGOT_CODEGEN_VECTOR_NONE, "row for rocm");

  ingot_ir_func_t* f = ingot_ir_func_create("twice");
  int64_t d[1] = {8};
  uint32_t x = ingot_ir_add_buffer(f, "x", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 1, d);
  uint32_t o = ingot_ir_add_buffer(f, "o", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t i = ingot_ir_add_var(f, "i", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  f->body = ingot_ir_for(f, i, 8, ingot_ir_store(f, o, V(f, i), ingot_ir_add(f, ingot_ir_load(f, x, V(f, i)),
                                                                               ingot_ir_load(f, x, V(f, i)))));
  /* emit through the table is the C source itself. */
  ingot_strbuf_t a = {0}, b = {0};
  REQUIRE_OK(ingot_codegen_emit(&f, 1, host_target(), &a));
  REQUIRE_OK(ingot_codegen_c_source(&f, 1, host_target(), &b));
  CHECK(a.length == b.length && memcmp(a.data, b.data, a.length) == 0, "emit == c source");
  CHECK(strstr(a.data, "twice") != NULL, "the function is in the text");
  ingot_strbuf_free(&a);
  ingot_strbuf_free(&b);
  /* A cuda target without its GPU facts fails cleanly, naming the target
   * (tests/gpu_codegen covers the GPU backends themselves). */
  ingot_target_t cuda = *host_target();
  cuda.kind = INGOT_TARGET_CUDA;
  snprintf(cuda.name, sizeof(cuda.name), "cuda");
  uint8_t* obj = (uint8_t*)1;
  size_t size = 1;
  CHECK(ingot_codegen_build(&f, 1, &cuda, NULL, NULL, &obj, &size) == INGOT_ERROR_INVALID_ARGUMENT,
        "cuda without GPU facts");
  CHECK(obj == NULL && size == 0, "outputs cleared on failure");
  CHECK(strstr(ingot_compiler_error(), "cuda") != NULL, "message names the target: %s", ingot_compiler_error());
  CHECK(ingot_codegen_emit(&f, 1, &cuda, &a) == INGOT_ERROR_INVALID_ARGUMENT && a.length == 0, "no cuda emit");
  ingot_strbuf_free(&a);
  ingot_ir_func_destroy(f);
}

/* ---- 6c. The shared pass before the backends (ingot_codegen_prepare). */
static void count_kinds(const ingot_ir_stmt_t* s, int* counts, uint32_t* max_lanes) {
  if (!s) return;
  switch (s->kind) {
    case INGOT_IR_STMT_FOR:
      counts[s->u.loop.loop_kind]++;
      if (s->u.loop.lanes > *max_lanes) *max_lanes = s->u.loop.lanes;
      count_kinds(s->u.loop.body, counts, max_lanes);
      return;
    case INGOT_IR_STMT_BLOCK:
      for (uint32_t i = 0; i < s->u.block.count; ++i) count_kinds(s->u.block.stmts[i], counts, max_lanes);
      return;
    case INGOT_IR_STMT_IF: count_kinds(s->u.cond.then_body, counts, max_lanes); return;
    default: return;
  }
}

static void test_prepare(void) {
  ingot_ir_func_t* f = ingot_ir_func_create("prep");
  int64_t d2[2] = {4, 8}, d1[1] = {4};
  uint32_t x = ingot_ir_add_buffer(f, "x", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 2, d2);
  uint32_t o = ingot_ir_add_buffer(f, "o", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 2, d2);
  uint32_t sb = ingot_ir_add_buffer(f, "s", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 1, d1);
  uint32_t i = ingot_ir_add_var(f, "i", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t j = ingot_ir_add_var(f, "j", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t k = ingot_ir_add_var(f, "k", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t m = ingot_ir_add_var(f, "m", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t n = ingot_ir_add_var(f, "n", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  ingot_ir_expr_t* ij = ingot_ir_add(f, ingot_ir_mul(f, V(f, i), I(f, 8)), V(f, j));
  ingot_ir_stmt_t* stmts[4] = {
      /* outlined; the nested PARALLEL runs serially */
      FOR_KIND(f, i, 4, INGOT_IR_LOOP_PARALLEL,
               FOR_KIND(f, j, 8, INGOT_IR_LOOP_PARALLEL, ingot_ir_store(f, o, ij, ingot_ir_load(f, x, ij)))),
      /* extent 1: not worth a parallel_for */
      FOR_KIND(f, k, 1, INGOT_IR_LOOP_PARALLEL, ingot_ir_store(f, sb, V(f, k), F(f, 0.0))),
      /* every iteration stores the same element: no SIMD */
      FOR_KIND(f, m, 8, INGOT_IR_LOOP_VECTORIZED, ingot_ir_store(f, sb, I(f, 0), ingot_ir_load(f, x, V(f, m)))),
      /* independent: stays vectorized */
      FOR_KIND(f, n, 32, INGOT_IR_LOOP_VECTORIZED,
               ingot_ir_store(f, o, V(f, n), BIN(f, INGOT_IR_MUL, ingot_ir_load(f, x, V(f, n)), F(f, 2.0)))),
  };
  f->body = ingot_ir_block(f, stmts, 4);
  REQUIRE_OK(ingot_ir_verify(f));
  ingot_codegen_prepared_t p;
  REQUIRE_OK(ingot_codegen_prepare(&f, 1, host_target(), &p));
  CHECK(p.count == 1 && p.funcs[0] != f && strcmp(p.funcs[0]->name, "prep") == 0, "one copy");
  CHECK(ingot_ir_verify(p.funcs[0]) == INGOT_OK, "the prepared IR verifies: %s", ingot_compiler_error());
  int before[4] = {0}, after[4] = {0};
  uint32_t lanes = 0;
  count_kinds(f->body, before, &lanes);
  count_kinds(p.funcs[0]->body, after, &lanes);
  CHECK(before[INGOT_IR_LOOP_PARALLEL] == 3 && before[INGOT_IR_LOOP_VECTORIZED] == 2, "the input is untouched");
  CHECK(after[INGOT_IR_LOOP_PARALLEL] == 1 && after[INGOT_IR_LOOP_VECTORIZED] == 1 &&
            after[INGOT_IR_LOOP_SERIAL] == 3, "parallel %d vectorized %d serial %d", after[INGOT_IR_LOOP_PARALLEL],
        after[INGOT_IR_LOOP_VECTORIZED], after[INGOT_IR_LOOP_SERIAL]);
  CHECK(lanes == 0, "the C target leaves the lanes to its compiler");
  ingot_strbuf_t text = {0};
  ingot_ir_print(p.funcs[0], &text);
  CHECK(text.data && strstr(text.data, "parallel") && strstr(text.data, "vectorized"), "prints");
  ingot_strbuf_free(&text);
  /* The same module built from the prepared and the unprepared functions. */
  ingot_strbuf_t a = {0}, b = {0};
  REQUIRE_OK(ingot_codegen_c_source(&f, 1, host_target(), &a));
  REQUIRE_OK(ingot_codegen_c_emit(p.funcs, 1, host_target(), &b));
  CHECK(a.length == b.length && memcmp(a.data, b.data, a.length) == 0, "c_source == prepare + c_emit");
  CHECK(strstr(a.data, "parallel_for") && strstr(a.data, "omp simd"), "outlined and SIMD");
  ingot_strbuf_free(&a);
  ingot_strbuf_free(&b);
  ingot_codegen_prepared_free(&p);
  CHECK(p.funcs == NULL && p.count == 0, "freed");
  /* Runs correctly. */
  module_t mod;
  module_build(&f, 1, &mod);
  float xs[32], os[32], ss[4] = {-1, -1, -1, -1};
  for (int q = 0; q < 32; ++q) xs[q] = (float)q + 0.5f;
  void* args[3] = {xs, os, ss};
  CHECK(run_kernel(&mod, "prep", args) == 0, "runs");
  CHECK(os[5] == 2.0f * xs[5] && os[31] == 2.0f * xs[31] && ss[0] == xs[7], "values: %g %g %g", os[5], os[31], ss[0]);
  module_close(&mod);
  ingot_ir_func_destroy(f);
}

/* ---- 7. The object: deterministic, imports nothing, RELATIVE relocations
 * only (checked with readelf where available, and by our own checker). */
static void test_object(void) {
  ingot_ir_func_t* f = ingot_ir_func_create("copy");
  int64_t d[1] = {1000};
  uint32_t x = ingot_ir_add_buffer(f, "x", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 1, d);
  uint32_t o = ingot_ir_add_buffer(f, "o", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t i = ingot_ir_add_var(f, "i", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  f->body = FOR_KIND(f, i, 1000, INGOT_IR_LOOP_PARALLEL,
                     ingot_ir_store(f, o, V(f, i), ingot_ir_unary(f, INGOT_IR_TANH, ingot_ir_load(f, x, V(f, i)))));
  module_t m1, m2;
  module_build(&f, 1, &m1);
  module_build(&f, 1, &m2);
  CHECK(m1.size == m2.size && memcmp(m1.object, m2.object, m1.size) == 0, "builds are byte-identical");
  CHECK(ingot_codegen_elf_check(m1.object, m1.size) == INGOT_OK, "elf check: %s", ingot_compiler_error());
  /* Corrupt copies are refused, not crashed on. */
  uint8_t* copy = malloc(m1.size);
  for (size_t cut = 0; cut < m1.size; cut += m1.size / 7 + 1) {
    memcpy(copy, m1.object, m1.size);
    (void)ingot_codegen_elf_check(copy, cut);
  }
  free(copy);
  char cmd[512];
  snprintf(cmd, sizeof(cmd), "readelf -rdW %s 2>/dev/null", m1.path);
  FILE* p = popen(cmd, "r");
  if (p) {
    char line[1024];
    int relocs = 0, lines = 0;
    while (fgets(line, sizeof(line), p)) {
      ++lines;
      CHECK(strstr(line, "(NEEDED)") == NULL, "DT_NEEDED: %s", line);
      if (strstr(line, "R_X86_64_")) {
        ++relocs;
        CHECK(strstr(line, "R_X86_64_RELATIVE") != NULL, "relocation: %s", line);
      }
    }
    int rc = pclose(p);
    if (rc == 0 && lines > 0) printf("  readelf: %d relocations, all RELATIVE\n", relocs);
  }
  snprintf(cmd, sizeof(cmd), "nm -D --undefined-only %s 2>/dev/null", m1.path);
  p = popen(cmd, "r");
  if (p) {
    char line[1024];
    while (fgets(line, sizeof(line), p)) CHECK(0, "undefined dynamic symbol: %s", line);
    pclose(p);
  }
  static float in[1000], out[1000];
  for (int k = 0; k < 1000; ++k) in[k] = (float)(k - 500) / 50.0f;
  void* args[2] = {in, out};
  g_parallel_calls = 0;
  CHECK(run_kernel(&m1, "copy", args) == 0, "kernel return");
  CHECK(g_parallel_calls == 1, "outermost parallel loop");
  for (int k = 0; k < 1000; ++k) CHECK(ulp_error(out[k], tanhf(in[k])) <= 2, "tanh %d", k);
  module_close(&m1);
  module_close(&m2);
  ingot_ir_func_destroy(f);
}

/* ---- 8. The runtime's own loader takes the object (no dlopen). */
static void test_runtime_loader(void) {
#if INGOT_TEST_HAVE_LOADER
  enum { N = 5, C = 9 };
  ingot_ir_func_t* f = ingot_ir_func_create("loader_check");
  int64_t d[2] = {N, C};
  uint32_t x = ingot_ir_add_buffer(f, "x", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 2, d);
  uint32_t o = ingot_ir_add_buffer(f, "o", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 2, d);
  uint32_t n = ingot_ir_add_var(f, "n", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t c = ingot_ir_add_var(f, "c", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  ingot_ir_expr_t* idx[2] = {V(f, n), V(f, c)};
  ingot_ir_expr_t* xv = ingot_ir_load(f, x, ingot_ir_flat_index(f, x, idx));
  ingot_ir_stmt_t* st = ingot_ir_store(f, o, ingot_ir_flat_index(f, o, idx),
                                       ingot_ir_unary(f, INGOT_IR_EXP, xv));
  f->body = ingot_ir_for(f, n, N, FOR_KIND(f, c, C, INGOT_IR_LOOP_PARALLEL, st));
  uint8_t* obj = NULL;
  size_t size = 0;
  REQUIRE_OK(ingot_codegen_build(&f, 1, host_target(), NULL, NULL, &obj, &size));
  ingot_elf_image_t* image = NULL;
  ingot_status_t status = ingot_elf_image_load(obj, size, ingot_allocator_system(), &image);
  CHECK(status == INGOT_OK, "runtime loader: %s", ingot_last_error());
  if (status == INGOT_OK) {
    ingot_library_query_fn_t q = (ingot_library_query_fn_t)ingot_elf_image_symbol(image, INGOT_LIBRARY_QUERY_SYMBOL);
    CHECK(q != NULL, "query symbol");
    const ingot_kernel_library_t* lib = q ? q(INGOT_KERNEL_ABI_VERSION) : NULL;
    CHECK(lib && lib->kernel_count == 1 && strcmp(lib->kernels[0].name, "loader_check") == 0, "library");
    if (lib) {
      static float in[N * C], out[N * C];
      for (int k = 0; k < N * C; ++k) in[k] = (float)k / 8.0f - 2.0f;
      ingot_kernel_env_t env = test_env();
      void* args[2] = {in, out};
      CHECK(lib->kernels[0].fn(&env, args) == 0, "kernel return");
      for (int k = 0; k < N * C; ++k) CHECK(ulp_error(out[k], expf(in[k])) <= 2, "exp %d", k);
    }
    ingot_elf_image_unload(image);
  }
  free(obj);
  ingot_ir_func_destroy(f);
#endif
}

int main(void) {
  printf("math (c)\n");
  test_math("c");
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    printf("math (c -mcpu=x86-64-v3)\n");
    test_math("c -mcpu=x86-64-v3");
  }
  printf("reduction\n");
  test_reduction();
  printf("parallel and guard\n");
  test_parallel_and_guard();
  printf("integers\n");
  test_integers();
  printf("dot4\n");
  test_dot4();
  printf("errors\n");
  test_errors();
  printf("backends\n");
  test_backends();
  printf("prepare\n");
  test_prepare();
  printf("object\n");
  test_object();
  printf("runtime loader\n");
  test_runtime_loader();
  if (g_failures) {
    fprintf(stderr, "%d check(s) failed\n", g_failures);
    return 1;
  }
  printf("all codegen tests passed\n");
  return 0;
}
