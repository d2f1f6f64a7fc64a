/* Tests for the llvm target: hand-built loop IR -> LLVM -> ld.lld -> shared
 * object, loaded with the runtime's own ELF loader and run through
 * ingot_library_query with a test env whose parallel_for runs chunks out of
 * order. Every kernel is compared with the loop-IR interpreter; every buffer
 * ends at an inaccessible page, so that a vector load or store past the end
 * (a tail, a padding read the IR's lazy select skips) faults.
 *
 * Each kernel is built for every x86-64 level this CPU runs (x86-64: SSE2,
 * no floor instruction, scalar tails; v3: AVX2, masked tails; v4: AVX-512,
 * 16 lanes), and for aarch64 (checked, not run: tests/aarch64 runs that
 * under qemu). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "codegen/codegen_internal.h"
#include "runtime/runtime_internal.h"

static int g_failures = 0;
#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      ++g_failures;                                                            \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
    }                                                                          \
  } while (0)
#define REQUIRE_OK(expr)                                                                               \
  do {                                                                                                 \
    ingot_status_t st_ = (expr);                                                                       \
    if (st_ != INGOT_OK) {                                                                             \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, ingot_compiler_error());    \
      exit(1);                                                                                         \
    }                                                                                                  \
  } while (0)

/* ---- Targets this machine runs. */
static const char* g_targets[4];
static int g_target_count = 0;

static void pick_targets(void) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  g_targets[g_target_count++] = "llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2"))
    g_targets[g_target_count++] = "x86-64-v3";
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    g_targets[g_target_count++] = "llvm -mcpu=x86-64-v4";
#elif defined(__aarch64__)
  g_targets[g_target_count++] = "aarch64";
#endif
}

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

/* ---- Buffers that end at a PROT_NONE page. */
typedef struct guarded_t {
  uint8_t* map;
  size_t map_bytes;
  void* data;
} guarded_t;

static void guarded_alloc(guarded_t* g, size_t bytes) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t body = (bytes + page - 1) / page * page;
  g->map_bytes = body + 2 * page;
  g->map = mmap(NULL, g->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (g->map == MAP_FAILED) {
    perror("mmap");
    exit(1);
  }
  mprotect(g->map, page, PROT_NONE);
  mprotect(g->map + page + body, page, PROT_NONE);
  g->data = g->map + page + body - bytes;
}

static void guarded_free(guarded_t* g) { munmap(g->map, g->map_bytes); }

/* ---- Building and loading with the runtime's loader. */
typedef struct module_t {
  ingot_elf_image_t* image;
  const ingot_kernel_library_t* lib;
  uint8_t* object;
  size_t size;
} module_t;

/* INGOT_TEST_IR_DIR=DIR keeps each module's optimized LLVM IR there. */
static void module_build(ingot_ir_func_t** funcs, uint32_t count, const char* target_text, module_t* m) {
  memset(m, 0, sizeof(*m));
  ingot_target_t target;
  REQUIRE_OK(ingot_target_parse(target_text, &target));
  char ir_path[512];
  const char* ir_dir = getenv("INGOT_TEST_IR_DIR");
  if (ir_dir) {
    snprintf(ir_path, sizeof(ir_path), "%s/%s-%s.ll", ir_dir, funcs[0]->name, target.name);
    for (char* p = ir_path + strlen(ir_dir) + 1; *p; ++p)
      if (*p == ' ' || *p == '/' || *p == '?') *p = '_';
  }
  REQUIRE_OK(ingot_codegen_build(funcs, count, &target, NULL, ir_dir ? ir_path : NULL, &m->object, &m->size));
  CHECK(ingot_codegen_elf_check(m->object, m->size) == INGOT_OK, "elf check: %s", ingot_compiler_error());
  ingot_status_t st = ingot_elf_image_load(m->object, m->size, ingot_allocator_system(), &m->image);
  if (st != INGOT_OK) {
    fprintf(stderr, "runtime loader: %s\n", ingot_last_error());
    exit(1);
  }
  ingot_library_query_fn_t q;
  void* sym = ingot_elf_image_symbol(m->image, INGOT_LIBRARY_QUERY_SYMBOL);
  CHECK(sym != NULL, "no %s", INGOT_LIBRARY_QUERY_SYMBOL);
  if (!sym) exit(1);
  memcpy(&q, &sym, sizeof(q));
  CHECK(q(INGOT_KERNEL_ABI_VERSION + 1) == NULL, "a library must refuse other ABI versions");
  m->lib = q(INGOT_KERNEL_ABI_VERSION);
  CHECK(m->lib && m->lib->abi_version == INGOT_KERNEL_ABI_VERSION && m->lib->kernel_count == count, "library table");
  if (!m->lib) exit(1);
}

static void module_close(module_t* m) {
  ingot_elf_image_unload(m->image);
  free(m->object);
}

static ingot_kernel_fn_t module_kernel(const module_t* m, const char* name) {
  for (uint32_t i = 0; i < m->lib->kernel_count; ++i)
    if (strcmp(m->lib->kernels[i].name, name) == 0) return m->lib->kernels[i].fn;
  CHECK(0, "kernel '%s' not in the library", name);
  exit(1);
}

/* ---- Running a function against the interpreter on generated inputs. */
static uint64_t g_rng = 0x243F6A8885A308D3ull;
static uint64_t rnd(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return g_rng;
}

/* Integer inputs avoid 0 (the interpreter refuses division by zero). */
static void fill(void* data, ingot_dtype_t t, int64_t n, double lo, double hi) {
  for (int64_t i = 0; i < n; ++i) {
    double u = (double)(rnd() >> 11) / 9007199254740992.0;
    double v = lo + (hi - lo) * u;
    if (t != INGOT_DTYPE_F32 && t != INGOT_DTYPE_F64 && floor(v) == 0) v = 1;
    switch (t) {
      case INGOT_DTYPE_F32: ((float*)data)[i] = (float)v; break;
      case INGOT_DTYPE_F64: ((double*)data)[i] = v; break;
      case INGOT_DTYPE_I64: ((int64_t*)data)[i] = (int64_t)floor(v); break;
      case INGOT_DTYPE_I32: ((int32_t*)data)[i] = (int32_t)floor(v); break;
      case INGOT_DTYPE_I8: ((int8_t*)data)[i] = (int8_t)(int64_t)floor(v); break;
      case INGOT_DTYPE_U8: ((uint8_t*)data)[i] = (uint8_t)(int64_t)floor(v); break;
      case INGOT_DTYPE_BOOL: ((uint8_t*)data)[i] = (uint8_t)(rnd() & 1); break;
      default: break;
    }
  }
}

/* Builds `f` for every target, runs it on inputs drawn in [lo, hi] and
 * compares each output with the interpreter (floats within rtol). Returns
 * the number of parallel_for calls of the last run. */
static int check_func(ingot_ir_func_t* f, double lo, double hi, double rtol) {
  uint32_t nb = f->buffer_count;
  guarded_t* bufs = calloc(nb, sizeof(guarded_t));
  void** ref = calloc(nb, sizeof(void*));
  void** args = calloc(nb, sizeof(void*));
  size_t* bytes = calloc(nb, sizeof(size_t));
  for (uint32_t i = 0; i < nb; ++i) {
    bytes[i] = (size_t)ingot_ir_buffer_numel(&f->buffers[i]) * ingot_dtype_size(f->buffers[i].dtype);
    guarded_alloc(&bufs[i], bytes[i]);
    args[i] = bufs[i].data;
    ref[i] = calloc(1, bytes[i] ? bytes[i] : 1);
    if (f->buffers[i].role == INGOT_IR_BUFFER_INPUT) {
      fill(args[i], f->buffers[i].dtype, ingot_ir_buffer_numel(&f->buffers[i]), lo, hi);
      memcpy(ref[i], args[i], bytes[i]);
    }
  }
  REQUIRE_OK(ingot_ir_interpret(f, ref));
  int calls = 0;
  for (int t = 0; t < g_target_count; ++t) {
    module_t m;
    module_build(&f, 1, g_targets[t], &m);
    for (uint32_t i = 0; i < nb; ++i)
      if (f->buffers[i].role == INGOT_IR_BUFFER_OUTPUT) memset(args[i], 0xA5, bytes[i]);
    ingot_kernel_env_t env = test_env();
    g_parallel_calls = 0;
    CHECK(module_kernel(&m, f->name)(&env, args) == 0, "%s: kernel return", f->name);
    calls = g_parallel_calls;
    for (uint32_t i = 0; i < nb; ++i) {
      if (f->buffers[i].role != INGOT_IR_BUFFER_OUTPUT) continue;
      if (f->buffers[i].dtype == INGOT_DTYPE_F32 || f->buffers[i].dtype == INGOT_DTYPE_F64) {
        bool f64 = f->buffers[i].dtype == INGOT_DTYPE_F64;
        size_t n = bytes[i] / (f64 ? 8 : 4);
        for (size_t k = 0; k < n; ++k) {
          double a = f64 ? ((double*)args[i])[k] : ((float*)args[i])[k];
          double b = f64 ? ((double*)ref[i])[k] : ((float*)ref[i])[k];
          bool same = (isnan(a) && isnan(b)) || a == b || fabs(a - b) <= rtol * (1.0 + fabs(b));
          if (!same) {
            CHECK(0, "%s [%s]: %s[%zu] = %.9g, interpreter %.9g", f->name, g_targets[t], f->buffers[i].name, k, a, b);
            break;
          }
        }
      } else {
        CHECK(memcmp(args[i], ref[i], bytes[i]) == 0, "%s [%s]: buffer %s differs from the interpreter", f->name,
              g_targets[t], f->buffers[i].name);
      }
    }
    module_close(&m);
  }
  for (uint32_t i = 0; i < nb; ++i) {
    guarded_free(&bufs[i]);
    free(ref[i]);
  }
  free(bufs);
  free(ref);
  free(args);
  free(bytes);
  return calls;
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
static uint32_t LOOPVAR(ingot_ir_func_t* f, const char* name) {
  return ingot_ir_add_var(f, name, INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
}

static double ulp_error(float got, float want) {
  if (isnan(want)) return isnan(got) ? 0 : 1e30;
  if (isinf(want) || isinf(got)) return got == want ? 0 : 1e30;
  double ulp = fabs((double)nextafterf(want, INFINITY) - (double)want);
  if (ulp == 0 || ulp < 0x1p-149) ulp = 0x1p-149;
  return fabs((double)got - (double)want) / ulp;
}

/* ---- 1. Math over many inputs (vectorized, with a tail), against libm. */
enum { kMathOps = 13 };
static const char* const k_math_names[kMathOps] = {"exp", "tanh", "erf", "log", "sqrt", "abs", "floor",
                                                   "ceil", "neg", "pow", "fmod", "min", "max"};

static void test_math(const char* target_text) {
  ingot_ir_func_t* f = ingot_ir_func_create("math_f32");
  const int64_t n = 200003;
  int64_t dims[1] = {n};
  uint32_t x = ingot_ir_add_buffer(f, "x", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 1, dims);
  uint32_t y = ingot_ir_add_buffer(f, "y", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 1, dims);
  uint32_t outs[kMathOps];
  for (int k = 0; k < kMathOps; ++k)
    outs[k] = ingot_ir_add_buffer(f, k_math_names[k], INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 1, dims);
  uint32_t i = LOOPVAR(f, "i");
  ingot_ir_expr_t* xi = ingot_ir_load(f, x, V(f, i));
  ingot_ir_expr_t* yi = ingot_ir_load(f, y, V(f, i));
  ingot_ir_expr_t* vals[kMathOps] = {
      ingot_ir_unary(f, INGOT_IR_EXP, xi),   ingot_ir_unary(f, INGOT_IR_TANH, xi),
      ingot_ir_unary(f, INGOT_IR_ERF, xi),   ingot_ir_unary(f, INGOT_IR_LOG, xi),
      ingot_ir_unary(f, INGOT_IR_SQRT, xi),  ingot_ir_unary(f, INGOT_IR_ABS, xi),
      ingot_ir_unary(f, INGOT_IR_FLOOR, xi), ingot_ir_unary(f, INGOT_IR_CEIL, xi),
      ingot_ir_unary(f, INGOT_IR_NEG, xi),   BIN(f, INGOT_IR_POW, xi, yi),
      BIN(f, INGOT_IR_MOD, xi, yi),          BIN(f, INGOT_IR_MIN, xi, yi),
      BIN(f, INGOT_IR_MAX, yi, xi),
  };
  ingot_ir_stmt_t* stores[kMathOps];
  for (int k = 0; k < kMathOps; ++k) stores[k] = ingot_ir_store(f, outs[k], V(f, i), vals[k]);
  f->body = FOR_KIND(f, i, n, INGOT_IR_LOOP_VECTORIZED, ingot_ir_block(f, stores, kMathOps));

  float* in_x = malloc(sizeof(float) * n);
  float* in_y = malloc(sizeof(float) * n);
  float* out[kMathOps];
  for (int k = 0; k < kMathOps; ++k) out[k] = calloc(n, sizeof(float));
  int64_t p = 0;
  for (; p < 100000; ++p) in_x[p] = -12.0f + 24.0f * (float)p / 100000.0f;
  for (int64_t q = 0; p < n - 8; ++p, ++q) {
    double e = -40.0 + 70.0 * (double)(q / 2) / 50000.0;
    in_x[p] = (float)((q & 1 ? -1.0 : 1.0) * pow(10.0, e));
  }
  const float specials[8] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 88.72f, -103.9f, 1e-45f};
  for (int k = 0; k < 8; ++k) in_x[p++] = specials[k];
  for (int64_t q = 0; q < n; ++q) in_y[q] = (float)((q % 7) - 3) * 0.75f + (q % 2 ? 0.3f : 0.0f);
  in_y[n - 3] = NAN;  /* min/max with a NaN operand yield the other one */

  module_t m;
  module_build(&f, 1, target_text, &m);
  void* args[2 + kMathOps] = {in_x, in_y};
  for (int k = 0; k < kMathOps; ++k) args[2 + k] = out[k];
  ingot_kernel_env_t env = test_env();
  CHECK(module_kernel(&m, "math_f32")(&env, args) == 0, "kernel return");
  double worst[kMathOps] = {0};
  int64_t worst_at[kMathOps] = {0};
  for (int64_t q = 0; q < n; ++q) {
    float a = in_x[q], b = in_y[q];
    float want[kMathOps] = {expf(a),   tanhf(a), erff(a),     logf(a),     sqrtf(a),   fabsf(a),  floorf(a),
                            ceilf(a), -a,       powf(a, b), fmodf(a, b), fminf(a, b), fmaxf(b, a)};
    for (int k = 0; k < kMathOps; ++k) {
      float got = out[k][q];
      double err = ulp_error(got, want[k]);
      if (!isnan(want[k]) && fabs((double)got - (double)want[k]) <= 1e-6 && k <= 3) err = 0;
      if (k >= 4 && k != 9 && memcmp(&got, &want[k], 4) != 0 && !(isnan(got) && isnan(want[k]))) {
        /* fmin/fmax of +0 and -0 may return either zero */
        if (!((k == 11 || k == 12) && got == want[k])) err = 1e30;
      }
      if (err > worst[k]) {
        worst[k] = err;
        worst_at[k] = q;
      }
    }
  }
  for (int k = 0; k < kMathOps; ++k) {
    double limit = k <= 3 ? 4.0 : 0.0;
    CHECK(worst[k] <= limit, "[%s] %s: %g ulp at x=%a y=%a (got %a)", target_text, k_math_names[k], worst[k],
          in_x[worst_at[k]], in_y[worst_at[k]], out[k][worst_at[k]]);
  }
  printf("  %-45s exp %.2g tanh %.2g erf %.2g log %.2g ulp\n", target_text, worst[0], worst[1], worst[2], worst[3]);
  module_close(&m);
  for (int k = 0; k < kMathOps; ++k) free(out[k]);
  free(in_x);
  free(in_y);
  ingot_ir_func_destroy(f);
}

/* ---- 1b. The double-precision library (and the float versions of the
 * trigonometric and hyperbolic family, computed in double, rounded once),
 * vectorized, against libm: double within 16 ulp, float within 1 ulp. */
enum { kDOps = 20 };
static const char* const k_d_names[kDOps] = {"round", "sin",  "cos",   "tan",   "asin", "acos", "atan",
                                             "sinh",  "cosh", "asinh", "acosh", "atanh", "exp", "log",
                                             "tanh",  "erf",  "fmod",  "pow",   "exp32", "log32"};

static double ulp_d(double got, double want) {
  if (isnan(want)) return isnan(got) ? 0 : 1e30;
  if (isinf(want) || isinf(got)) return got == want ? 0 : 1e30;
  double ulp = fabs(nextafter(want, INFINITY) - want);
  if (ulp == 0 || ulp < 0x1p-1074) ulp = 0x1p-1074;
  return fabs(got - want) / ulp;
}

static double ref_d(int k, double x, double u, double v, double y) {
  switch (k) {
    case 0: return nearbyint(x);
    case 1: return sin(x);
    case 2: return cos(x);
    case 3: return tan(x);
    case 4: return asin(u);
    case 5: return acos(u);
    case 6: return atan(x);
    case 7: return sinh(x);
    case 8: return cosh(x);
    case 9: return asinh(x);
    case 10: return acosh(v);
    case 11: return atanh(u);
    case 12: return exp(x);
    case 13: return log(v);
    case 14: return tanh(x);
    case 15: return erf(x);
    case 16: return fmod(x, y);
    case 17: return pow(v, y);
    default: return 0;
  }
}

static ingot_ir_expr_t* d_op(ingot_ir_func_t* f, int k, ingot_ir_expr_t* x, ingot_ir_expr_t* u, ingot_ir_expr_t* v,
                             ingot_ir_expr_t* y) {
  static const ingot_ir_unary_op_t un[16] = {INGOT_IR_ROUND, INGOT_IR_SIN,  INGOT_IR_COS,   INGOT_IR_TAN,
                                             INGOT_IR_ASIN,  INGOT_IR_ACOS, INGOT_IR_ATAN,  INGOT_IR_SINH,
                                             INGOT_IR_COSH,  INGOT_IR_ASINH, INGOT_IR_ACOSH, INGOT_IR_ATANH,
                                             INGOT_IR_EXP,   INGOT_IR_LOG,  INGOT_IR_TANH,  INGOT_IR_ERF};
  if (k == 16) return BIN(f, INGOT_IR_MOD, x, y);
  if (k == 17) return BIN(f, INGOT_IR_POW, v, y);
  ingot_ir_expr_t* arg = (k == 4 || k == 5 || k == 11) ? u : (k == 10 || k == 13) ? v : x;
  return ingot_ir_unary(f, un[k], arg);
}

static void test_math_double(const char* target_text) {
  const int64_t n = 20011;
  for (int f32 = 0; f32 <= 1; ++f32) {
    ingot_dtype_t dt = f32 ? INGOT_DTYPE_F32 : INGOT_DTYPE_F64;
    int ops = f32 ? 12 : 18; /* float: round and the trig/hyperbolic family */
    ingot_ir_func_t* f = ingot_ir_func_create("math_f64");
    int64_t dims[1] = {n};
    uint32_t bx = ingot_ir_add_buffer(f, "x", dt, INGOT_IR_BUFFER_INPUT, 1, dims);
    uint32_t bu = ingot_ir_add_buffer(f, "u", dt, INGOT_IR_BUFFER_INPUT, 1, dims);
    uint32_t bv = ingot_ir_add_buffer(f, "v", dt, INGOT_IR_BUFFER_INPUT, 1, dims);
    uint32_t by = ingot_ir_add_buffer(f, "y", dt, INGOT_IR_BUFFER_INPUT, 1, dims);
    uint32_t outs[kDOps];
    for (int k = 0; k < ops; ++k) outs[k] = ingot_ir_add_buffer(f, k_d_names[k], dt, INGOT_IR_BUFFER_OUTPUT, 1, dims);
    uint32_t i = LOOPVAR(f, "i");
    ingot_ir_stmt_t* stores[kDOps];
    for (int k = 0; k < ops; ++k)
      stores[k] = ingot_ir_store(f, outs[k], V(f, i),
                                 d_op(f, k, ingot_ir_load(f, bx, V(f, i)), ingot_ir_load(f, bu, V(f, i)),
                                      ingot_ir_load(f, bv, V(f, i)), ingot_ir_load(f, by, V(f, i))));
    f->body = FOR_KIND(f, i, n, INGOT_IR_LOOP_VECTORIZED, ingot_ir_block(f, stores, (uint32_t)ops));
    size_t es = f32 ? 4 : 8;
    void* in[4];
    for (int k = 0; k < 4; ++k) in[k] = calloc((size_t)n, es);
    double* xs = calloc((size_t)n, sizeof(double));
    double* us = calloc((size_t)n, sizeof(double));
    double* vs = calloc((size_t)n, sizeof(double));
    double* ys = calloc((size_t)n, sizeof(double));
    for (int64_t q = 0; q < n; ++q) {
      double t = (double)q / (double)(n - 1);
      xs[q] = q % 3 == 0 ? -30.0 + 60.0 * t : (q % 3 == 1 ? -2.5 + 5.0 * t : (t - 0.5) * 1e-3);
      if (q % 97 == 0) xs[q] = (double)(q % 11) - 5.5; /* ties for round */
      us[q] = -1.0 + 2.0 * t;
      vs[q] = q % 2 ? 1.0 + 60.0 * t : 1e-3 + t;
      ys[q] = q % 4 == 0 ? (double)((q / 4) % 9 - 4) : -3.3 + 6.6 * t;
      double* src[4] = {xs, us, vs, ys};
      for (int k = 0; k < 4; ++k) {
        if (f32) ((float*)in[k])[q] = (float)src[k][q], src[k][q] = (double)(float)src[k][q];
        else ((double*)in[k])[q] = src[k][q];
      }
    }
    void* out[kDOps];
    for (int k = 0; k < ops; ++k) out[k] = calloc((size_t)n, es);
    module_t m;
    module_build(&f, 1, target_text, &m);
    void* args[4 + kDOps] = {in[0], in[1], in[2], in[3]};
    for (int k = 0; k < ops; ++k) args[4 + k] = out[k];
    ingot_kernel_env_t env = test_env();
    CHECK(module_kernel(&m, "math_f64")(&env, args) == 0, "kernel return");
    for (int k = 0; k < ops; ++k) {
      double worst = 0;
      int64_t at = 0;
      for (int64_t q = 0; q < n; ++q) {
        double want = ref_d(k, xs[q], us[q], vs[q], ys[q]);
        double err;
        if (f32) {
          float g = ((float*)out[k])[q];
          err = ulp_error(g, (float)want);
          if (fabs((double)g - want) <= 1e-7 * (1.0 + fabs(want))) err = 0; /* tiny absolute */
        } else {
          double g = ((double*)out[k])[q];
          err = ulp_d(g, want);
          if (fabs(g - want) <= 1e-15 * (1.0 + fabs(want)) && k != 0 && k != 16) err = 0;
        }
        if (err > worst) {
          worst = err;
          at = q;
        }
      }
      /* pow = exp(y log x): the error of y log x (|y log x| up to ~20 here)
       * is amplified, as in the C target's version. */
      double limit = k == 0 || k == 16 ? 0 : (f32 ? 1.0 : (k == 17 ? 64.0 : 16.0));
      CHECK(worst <= limit, "[%s] %s %s: %g ulp at x=%a u=%a v=%a y=%a", target_text, f32 ? "f32" : "f64",
            k_d_names[k], worst, xs[at], us[at], vs[at], ys[at]);
    }
    module_close(&m);
    for (int k = 0; k < 4; ++k) free(in[k]);
    for (int k = 0; k < ops; ++k) free(out[k]);
    free(xs);
    free(us);
    free(vs);
    free(ys);
    ingot_ir_func_destroy(f);
  }
}

/* ---- 2. Vector tails: extents below, at, above and not a multiple of the
 * lanes, an elementwise chain with an FMA, broadcasts and a u8/bool store. */
static void test_tails(void) {
  static const int64_t extents[] = {1, 3, 4, 7, 8, 15, 16, 17, 31, 33, 64, 100};
  for (size_t e = 0; e < sizeof(extents) / sizeof(extents[0]); ++e) {
    int64_t n = extents[e];
    ingot_ir_func_t* f = ingot_ir_func_create("tail");
    int64_t d[2] = {3, n}, db[1] = {3};
    uint32_t a = ingot_ir_add_buffer(f, "a", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 2, d);
    uint32_t bias = ingot_ir_add_buffer(f, "bias", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 1, db);
    uint32_t o = ingot_ir_add_buffer(f, "o", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 2, d);
    uint32_t pos = ingot_ir_add_buffer(f, "pos", INGOT_DTYPE_BOOL, INGOT_IR_BUFFER_OUTPUT, 2, d);
    uint32_t r = LOOPVAR(f, "r"), i = LOOPVAR(f, "i");
    ingot_ir_expr_t* idx[2] = {V(f, r), V(f, i)};
    ingot_ir_expr_t* ai = ingot_ir_load(f, a, ingot_ir_flat_index(f, a, idx));
    ingot_ir_expr_t* br = ingot_ir_load(f, bias, V(f, r));
    /* relu(a * 1.5 + bias[r]) */
    ingot_ir_expr_t* v = BIN(f, INGOT_IR_MAX, ingot_ir_add(f, ingot_ir_mul(f, ai, F(f, 1.5)), br), F(f, 0.0));
    ingot_ir_stmt_t* body = BLOCK2(f, ingot_ir_store(f, o, ingot_ir_flat_index(f, o, idx), v),
                                   ingot_ir_store(f, pos, ingot_ir_flat_index(f, pos, idx),
                                                  BIN(f, INGOT_IR_LT, F(f, 0.0), ai)));
    f->body = ingot_ir_for(f, r, 3, FOR_KIND(f, i, n, INGOT_IR_LOOP_VECTORIZED, body));
    check_func(f, -2.0, 2.0, 1e-6);
    ingot_ir_func_destroy(f);
  }
}

/* ---- 3. Reductions: a local accumulator in a VECTORIZED loop (runs
 * scalar), an UPDATE with the vector loop innermost (a matmul), and a
 * varying local assigned under a varying IF (a masked assignment). */
static void test_reductions(void) {
  enum { R = 37, K = 129, M = 5, N = 45 };
  {
    ingot_ir_func_t* f = ingot_ir_func_create("row_sum");
    int64_t dx[2] = {R, K}, dy[1] = {R};
    uint32_t x = ingot_ir_add_buffer(f, "x", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 2, dx);
    uint32_t s = ingot_ir_add_buffer(f, "sum", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 1, dy);
    uint32_t i = LOOPVAR(f, "i"), r = LOOPVAR(f, "r");
    uint32_t acc = ingot_ir_add_var(f, "acc", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
    ingot_ir_expr_t* xi[2] = {V(f, i), V(f, r)};
    ingot_ir_stmt_t* inner = FOR_KIND(
        f, r, K, INGOT_IR_LOOP_VECTORIZED,
        ingot_ir_assign(f, acc, ingot_ir_add(f, V(f, acc), ingot_ir_load(f, x, ingot_ir_flat_index(f, x, xi)))));
    ingot_ir_stmt_t* st[3] = {ingot_ir_local(f, acc, F(f, 0.0)), inner, ingot_ir_store(f, s, V(f, i), V(f, acc))};
    f->body = FOR_KIND(f, i, R, INGOT_IR_LOOP_PARALLEL, ingot_ir_block(f, st, 3));
    check_func(f, -1.0, 1.0, 1e-6);
    ingot_ir_func_destroy(f);
  }
  {
    /* C[m, n] = sum_k A[m, k] * B[k, n]: init, then for m, k: for n (vector). */
    ingot_ir_func_t* f = ingot_ir_func_create("matmul");
    int64_t da[2] = {M, K}, db[2] = {K, N}, dc[2] = {M, N};
    uint32_t a = ingot_ir_add_buffer(f, "a", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 2, da);
    uint32_t b = ingot_ir_add_buffer(f, "b", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 2, db);
    uint32_t c = ingot_ir_add_buffer(f, "c", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 2, dc);
    uint32_t m0 = LOOPVAR(f, "m0"), n0 = LOOPVAR(f, "n0"), m = LOOPVAR(f, "m"), k = LOOPVAR(f, "k"), n = LOOPVAR(f, "n");
    ingot_ir_expr_t* ci0[2] = {V(f, m0), V(f, n0)};
    ingot_ir_stmt_t* init = ingot_ir_for(
        f, m0, M, FOR_KIND(f, n0, N, INGOT_IR_LOOP_VECTORIZED, ingot_ir_store(f, c, ingot_ir_flat_index(f, c, ci0), F(f, 0.0))));
    ingot_ir_expr_t* ci[2] = {V(f, m), V(f, n)};
    ingot_ir_expr_t* ai[2] = {V(f, m), V(f, k)};
    ingot_ir_expr_t* bi[2] = {V(f, k), V(f, n)};
    ingot_ir_expr_t* cidx = ingot_ir_flat_index(f, c, ci);
    ingot_ir_expr_t* upd = ingot_ir_add(f, ingot_ir_load(f, c, cidx),
                                        ingot_ir_mul(f, ingot_ir_load(f, a, ingot_ir_flat_index(f, a, ai)),
                                                     ingot_ir_load(f, b, ingot_ir_flat_index(f, b, bi))));
    ingot_ir_stmt_t* update = FOR_KIND(
        f, m, M, INGOT_IR_LOOP_PARALLEL,
        ingot_ir_for(f, k, K, FOR_KIND(f, n, N, INGOT_IR_LOOP_VECTORIZED, ingot_ir_store(f, c, cidx, upd))));
    f->body = BLOCK2(f, init, update);
    CHECK(check_func(f, -1.0, 1.0, 1e-5) == 1, "one parallel_for call");
    ingot_ir_func_destroy(f);
  }
  {
    /* o[i] = x[i] > 0 ? x[i] * 2 : -1, through a local assigned in an IF. */
    ingot_ir_func_t* f = ingot_ir_func_create("masked_assign");
    int64_t d[1] = {N};
    uint32_t x = ingot_ir_add_buffer(f, "x", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 1, d);
    uint32_t o = ingot_ir_add_buffer(f, "o", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 1, d);
    uint32_t i = LOOPVAR(f, "i");
    uint32_t t = ingot_ir_add_var(f, "t", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
    ingot_ir_expr_t* xi = ingot_ir_load(f, x, V(f, i));
    ingot_ir_stmt_t* st[3] = {
        ingot_ir_local(f, t, F(f, -1.0)),
        ingot_ir_if(f, BIN(f, INGOT_IR_LT, F(f, 0.0), xi), ingot_ir_assign(f, t, ingot_ir_mul(f, xi, F(f, 2.0)))),
        ingot_ir_store(f, o, V(f, i), V(f, t))};
    f->body = FOR_KIND(f, i, N, INGOT_IR_LOOP_VECTORIZED, ingot_ir_block(f, st, 3));
    check_func(f, -1.0, 1.0, 0);
    ingot_ir_func_destroy(f);
  }
}

/* ---- 4. Padding: a lazy select whose arm reads out of bounds (a 1-D conv
 * with pad 2 over an input that ends at an inaccessible page), a guard IF
 * from a split tail, strided loads (gathers) and a transposing store
 * (scatter), and an UNROLLED kernel loop. */
static void test_padding_gather_scatter(void) {
  enum { W = 37, KW = 5, PAD = 2, C = 6 };
  {
    ingot_ir_func_t* f = ingot_ir_func_create("conv1d_pad");
    int64_t dx[1] = {W}, dw[1] = {KW}, dy[1] = {W};
    uint32_t x = ingot_ir_add_buffer(f, "x", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 1, dx);
    uint32_t w = ingot_ir_add_buffer(f, "w", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 1, dw);
    uint32_t y = ingot_ir_add_buffer(f, "y", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 1, dy);
    uint32_t o = LOOPVAR(f, "o"), i0 = LOOPVAR(f, "i0"), k = LOOPVAR(f, "k");
    ingot_ir_stmt_t* init = FOR_KIND(f, i0, W, INGOT_IR_LOOP_VECTORIZED, ingot_ir_store(f, y, V(f, i0), F(f, 0.0)));
    ingot_ir_expr_t* pos = ingot_ir_add(f, V(f, o), ingot_ir_add(f, V(f, k), I(f, -PAD)));
    ingot_ir_expr_t* inb = BIN(f, INGOT_IR_AND, BIN(f, INGOT_IR_LE, I(f, 0), pos), BIN(f, INGOT_IR_LT, pos, I(f, W)));
    ingot_ir_expr_t* xv = ingot_ir_select(f, inb, ingot_ir_load(f, x, pos), F(f, 0.0));
    ingot_ir_expr_t* upd = ingot_ir_add(f, ingot_ir_load(f, y, V(f, o)), ingot_ir_mul(f, xv, ingot_ir_load(f, w, V(f, k))));
    ingot_ir_stmt_t* loop = FOR_KIND(f, k, KW, INGOT_IR_LOOP_UNROLLED,
                                     FOR_KIND(f, o, W, INGOT_IR_LOOP_VECTORIZED, ingot_ir_store(f, y, V(f, o), upd)));
    f->body = BLOCK2(f, init, loop);
    check_func(f, -1.0, 1.0, 1e-6);
    ingot_ir_func_destroy(f);
  }
  for (int stride = 1; stride <= 3; ++stride) {
    /* The lowering's padding form: x[clamp(o * stride + k - PAD)] under a
     * select on the bounds; 2-D so that whole vectors are in bounds (the
     * fast path) and edges are not (the gather), with a 2-wide kernel. */
    enum { H = 3 };
    int64_t wo = (W + 2 * PAD - KW) / stride + 1;
    ingot_ir_func_t* f = ingot_ir_func_create("conv_clamp");
    int64_t dx[2] = {H, W}, dw[1] = {KW}, dy[2] = {H, wo};
    uint32_t x = ingot_ir_add_buffer(f, "x", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 2, dx);
    uint32_t w = ingot_ir_add_buffer(f, "w", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 1, dw);
    uint32_t y = ingot_ir_add_buffer(f, "y", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 2, dy);
    uint32_t h = LOOPVAR(f, "h"), o = LOOPVAR(f, "o"), k = LOOPVAR(f, "k"), h0 = LOOPVAR(f, "h0"), o0 = LOOPVAR(f, "o0");
    ingot_ir_expr_t* y0[2] = {V(f, h0), V(f, o0)};
    ingot_ir_stmt_t* init = ingot_ir_for(
        f, h0, H, FOR_KIND(f, o0, wo, INGOT_IR_LOOP_VECTORIZED, ingot_ir_store(f, y, ingot_ir_flat_index(f, y, y0), F(f, 0.5))));
    ingot_ir_expr_t* pos = ingot_ir_add(f, ingot_ir_mul(f, V(f, o), I(f, stride)), ingot_ir_add(f, V(f, k), I(f, -PAD)));
    ingot_ir_expr_t* inb = BIN(f, INGOT_IR_AND, BIN(f, INGOT_IR_LE, I(f, 0), pos), BIN(f, INGOT_IR_LT, pos, I(f, W)));
    ingot_ir_expr_t* clamped = BIN(f, INGOT_IR_MIN, BIN(f, INGOT_IR_MAX, pos, I(f, 0)), I(f, W - 1));
    ingot_ir_expr_t* xi[2] = {V(f, h), clamped};
    ingot_ir_expr_t* xv = ingot_ir_select(f, inb, ingot_ir_load(f, x, ingot_ir_flat_index(f, x, xi)), F(f, 0.0));
    ingot_ir_expr_t* yi[2] = {V(f, h), V(f, o)};
    ingot_ir_expr_t* yidx = ingot_ir_flat_index(f, y, yi);
    ingot_ir_expr_t* upd = ingot_ir_add(f, ingot_ir_load(f, y, yidx), ingot_ir_mul(f, xv, ingot_ir_load(f, w, V(f, k))));
    ingot_ir_stmt_t* loop = ingot_ir_for(
        f, h, H,
        ingot_ir_for(f, k, KW, FOR_KIND(f, o, wo, INGOT_IR_LOOP_VECTORIZED, ingot_ir_store(f, y, yidx, upd))));
    f->body = BLOCK2(f, init, loop);
    check_func(f, -1.0, 1.0, 1e-6);
    ingot_ir_func_destroy(f);
  }
  {
    /* Exact strides without a select: y[i] = x[2 i] + x[3 i + 1]. */
    ingot_ir_func_t* f = ingot_ir_func_create("strided");
    int64_t dx[1] = {3 * W + 2}, dy[1] = {W};
    uint32_t x = ingot_ir_add_buffer(f, "x", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 1, dx);
    uint32_t y = ingot_ir_add_buffer(f, "y", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 1, dy);
    uint32_t i = LOOPVAR(f, "i");
    ingot_ir_expr_t* a = ingot_ir_load(f, x, ingot_ir_mul(f, V(f, i), I(f, 2)));
    ingot_ir_expr_t* b = ingot_ir_load(f, x, ingot_ir_add(f, ingot_ir_mul(f, V(f, i), I(f, 3)), I(f, 1)));
    f->body = FOR_KIND(f, i, W, INGOT_IR_LOOP_VECTORIZED, ingot_ir_store(f, y, V(f, i), ingot_ir_add(f, a, b)));
    check_func(f, -1.0, 1.0, 1e-6);
    ingot_ir_func_destroy(f);
  }
  {
    /* out[c, j] = in[j, c] (a transpose: strided loads), and out2[j, c] =
     * in[j, c] + 1 with the loop over c outside: scatter-free but strided
     * store when vectorizing j. A split tail: j = jo * 8 + ji, guarded. */
    ingot_ir_func_t* f = ingot_ir_func_create("transpose");
    int64_t din[2] = {W, C}, dout[2] = {C, W};
    uint32_t in = ingot_ir_add_buffer(f, "in", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 2, din);
    uint32_t out = ingot_ir_add_buffer(f, "out", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 2, dout);
    uint32_t out2 = ingot_ir_add_buffer(f, "out2", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 2, din);
    uint32_t c = LOOPVAR(f, "c"), jo = LOOPVAR(f, "jo"), ji = LOOPVAR(f, "ji");
    uint32_t c2 = LOOPVAR(f, "c2"), j2 = LOOPVAR(f, "j2");
    ingot_ir_expr_t* j = ingot_ir_add(f, ingot_ir_mul(f, V(f, jo), I(f, 8)), V(f, ji));
    ingot_ir_expr_t* iidx[2] = {j, V(f, c)};
    ingot_ir_expr_t* oidx[2] = {V(f, c), j};
    ingot_ir_stmt_t* st = ingot_ir_store(f, out, ingot_ir_flat_index(f, out, oidx),
                                         ingot_ir_load(f, in, ingot_ir_flat_index(f, in, iidx)));
    ingot_ir_stmt_t* guarded = ingot_ir_if(f, BIN(f, INGOT_IR_LT, j, I(f, W)), st);
    ingot_ir_stmt_t* first = ingot_ir_for(
        f, c, C, ingot_ir_for(f, jo, (W + 7) / 8, FOR_KIND(f, ji, 8, INGOT_IR_LOOP_VECTORIZED, guarded)));
    ingot_ir_expr_t* i2[2] = {V(f, j2), V(f, c2)};
    ingot_ir_stmt_t* second = ingot_ir_for(
        f, c2, C,
        FOR_KIND(f, j2, W, INGOT_IR_LOOP_VECTORIZED,
                 ingot_ir_store(f, out2, ingot_ir_flat_index(f, out2, i2),
                                ingot_ir_add(f, ingot_ir_load(f, in, ingot_ir_flat_index(f, in, i2)), F(f, 1.0)))));
    f->body = BLOCK2(f, first, second);
    check_func(f, -4.0, 4.0, 0);
    ingot_ir_func_destroy(f);
  }
  {
    /* Non-affine indices: out[i] = in[(i * 7) % W] (a gather through mod). */
    ingot_ir_func_t* f = ingot_ir_func_create("gather_mod");
    int64_t d[1] = {W};
    uint32_t in = ingot_ir_add_buffer(f, "in", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 1, d);
    uint32_t out = ingot_ir_add_buffer(f, "out", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 1, d);
    uint32_t i = LOOPVAR(f, "i");
    ingot_ir_expr_t* src = BIN(f, INGOT_IR_MOD, ingot_ir_mul(f, V(f, i), I(f, 7)), I(f, W));
    f->body = FOR_KIND(f, i, W, INGOT_IR_LOOP_VECTORIZED, ingot_ir_store(f, out, V(f, i), ingot_ir_load(f, in, src)));
    check_func(f, -4.0, 4.0, 0);
    ingot_ir_func_destroy(f);
  }
}

/* Runs of strided vector stores (a channel-form register tile's epilogue:
 * lanes a plane apart, stores at neighbouring positions), which the llvm
 * target combines into 32- and 16-bit stores per lane: 7 positions in a
 * shuffled order (a group of 4, one of 2, one alone) of bytes and of int16,
 * with full vectors and with a masked tail (not combined); a run that
 * stores one address twice and one whose value reads the buffer it stores
 * (neither combined). Against the interpreter, every byte. */
static void test_combined_stores(void) {
  static const int64_t perm[7] = {0, 2, 1, 3, 5, 4, 6};
  for (int64_t C = 64; C >= 37; C -= 27) {
    enum { W = 14 };
    ingot_ir_func_t* f = ingot_ir_func_create("strided_runs");
    int64_t dx[2] = {C, W}, d2[2] = {C, 2}, d4[2] = {C, 4};
    uint32_t in = ingot_ir_add_buffer(f, "in", INGOT_DTYPE_U8, INGOT_IR_BUFFER_INPUT, 2, dx);
    uint32_t out = ingot_ir_add_buffer(f, "out", INGOT_DTYPE_U8, INGOT_IR_BUFFER_OUTPUT, 2, dx);
    uint32_t out16 = ingot_ir_add_buffer(f, "out16", INGOT_DTYPE_I16, INGOT_IR_BUFFER_OUTPUT, 2, dx);
    uint32_t out2 = ingot_ir_add_buffer(f, "twice", INGOT_DTYPE_U8, INGOT_IR_BUFFER_OUTPUT, 2, d2);
    uint32_t out3 = ingot_ir_add_buffer(f, "reads", INGOT_DTYPE_U8, INGOT_IR_BUFFER_OUTPUT, 2, d4);
    uint32_t wo = LOOPVAR(f, "wo"), c = LOOPVAR(f, "c"), c2 = LOOPVAR(f, "c2"), c3 = LOOPVAR(f, "c3");
    ingot_ir_stmt_t* s8[7];
    ingot_ir_stmt_t* s16[7];
    for (int j = 0; j < 7; ++j) {
      ingot_ir_expr_t* idx = ingot_ir_add(f, ingot_ir_mul(f, V(f, c), I(f, W)),
                                          ingot_ir_add(f, ingot_ir_mul(f, V(f, wo), I(f, 7)), I(f, perm[j])));
      ingot_ir_expr_t* x = ingot_ir_cast(f, INGOT_DTYPE_I32, ingot_ir_load(f, in, idx));
      s8[j] = ingot_ir_store(f, out, idx,
                             ingot_ir_cast(f, INGOT_DTYPE_U8, ingot_ir_add(f, x, ingot_ir_cast(f, INGOT_DTYPE_I32, I(f, j + 1)))));
      s16[j] = ingot_ir_store(f, out16, idx,
                              ingot_ir_cast(f, INGOT_DTYPE_I16, ingot_ir_mul(f, x, ingot_ir_cast(f, INGOT_DTYPE_I32, I(f, j - 3)))));
    }
    ingot_ir_stmt_t* runs[2] = {ingot_ir_block(f, s8, 7), ingot_ir_block(f, s16, 7)};
    ingot_ir_stmt_t* first =
        ingot_ir_for(f, wo, 2, FOR_KIND(f, c, C, INGOT_IR_LOOP_VECTORIZED, ingot_ir_block(f, runs, 2)));
    /* twice[c, 0] = in[c, 0], twice[c, 1] = in[c, 1], twice[c, 0] = in[c, 2] */
    ingot_ir_stmt_t* tw[3];
    for (int j = 0; j < 3; ++j) {
      ingot_ir_expr_t* at = ingot_ir_add(f, ingot_ir_mul(f, V(f, c2), I(f, 2)), I(f, j == 1));
      tw[j] = ingot_ir_store(f, out2, at, ingot_ir_load(f, in, ingot_ir_add(f, ingot_ir_mul(f, V(f, c2), I(f, W)), I(f, j))));
    }
    ingot_ir_stmt_t* second = FOR_KIND(f, c2, C, INGOT_IR_LOOP_VECTORIZED, ingot_ir_block(f, tw, 3));
    /* reads[c, 0] = in[c, 0], reads[c, 1] = reads[c, 0] + 1, reads[c, 2..3] = in[c, 2..3] */
    ingot_ir_stmt_t* rd[4];
    for (int j = 0; j < 4; ++j) {
      ingot_ir_expr_t* at = ingot_ir_add(f, ingot_ir_mul(f, V(f, c3), I(f, 4)), I(f, j));
      ingot_ir_expr_t* v = ingot_ir_load(f, in, ingot_ir_add(f, ingot_ir_mul(f, V(f, c3), I(f, W)), I(f, j)));
      if (j == 1) {
        v = ingot_ir_add(f, ingot_ir_load(f, out3, ingot_ir_mul(f, V(f, c3), I(f, 4))), ingot_ir_cast(f, INGOT_DTYPE_U8, I(f, 1)));
      }
      rd[j] = ingot_ir_store(f, out3, at, v);
    }
    ingot_ir_stmt_t* third = FOR_KIND(f, c3, C, INGOT_IR_LOOP_VECTORIZED, ingot_ir_block(f, rd, 4));
    ingot_ir_stmt_t* all[3] = {first, second, third};
    f->body = ingot_ir_block(f, all, 3);
    check_func(f, 0.0, 255.0, 0);
    ingot_ir_func_destroy(f);
  }
}

/* Runs of strided int32 vector stores (a Dot4Words writing each position's
 * words together, node.words_last): the vector along positions p, lanes G
 * words apart, the stores at words g = 0..G-1 in a shuffled order, G = 13
 * (a run of 8, one of 4, one alone), which the llvm target transposes into
 * vector stores per lane, 8 lanes at a time: positions 16 (whole vectors),
 * 14 and 7 (vectors past the lanes the target has, a tail), against the
 * interpreter. A wrong round of the transpose shows in the words. */
static void test_combined_word_stores(void) {
  static const int64_t perm[13] = {3, 0, 1, 2, 7, 6, 5, 4, 12, 8, 10, 9, 11};
  static const int64_t extents[3] = {16, 14, 7};
  enum { G = 13 };
  for (int e = 0; e < 3; ++e) {
    int64_t P = extents[e];
    ingot_ir_func_t* f = ingot_ir_func_create("word_runs");
    int64_t dx[2] = {G, P}, dy[2] = {P, G};
    uint32_t in = ingot_ir_add_buffer(f, "in", INGOT_DTYPE_I32, INGOT_IR_BUFFER_INPUT, 2, dx);
    uint32_t out = ingot_ir_add_buffer(f, "out", INGOT_DTYPE_I32, INGOT_IR_BUFFER_OUTPUT, 2, dy);
    uint32_t p = LOOPVAR(f, "p");
    ingot_ir_stmt_t* s[G];
    for (int j = 0; j < G; ++j) {
      ingot_ir_expr_t* x = ingot_ir_load(f, in, ingot_ir_add(f, ingot_ir_mul(f, I(f, perm[j]), I(f, P)), V(f, p)));
      ingot_ir_expr_t* v = ingot_ir_add(f, ingot_ir_mul(f, x, ingot_ir_cast(f, INGOT_DTYPE_I32, I(f, j + 2))),
                                        ingot_ir_cast(f, INGOT_DTYPE_I32, I(f, 1000 * j)));
      s[j] = ingot_ir_store(f, out, ingot_ir_add(f, ingot_ir_mul(f, V(f, p), I(f, G)), I(f, perm[j])), v);
    }
    f->body = FOR_KIND(f, p, P, INGOT_IR_LOOP_VECTORIZED, ingot_ir_block(f, s, G));
    check_func(f, -1000.0, 1000.0, 0);
    ingot_ir_func_destroy(f);
  }
}

/* Float-to-integer casts of values clamped into the type's range (a
 * requantization's saturation), which codegen narrows with saturating packs:
 * uint8 and int8 (both clamp orders, constants on either side), a narrower
 * clamp, uint16 and int16, over inputs far outside every range, with a
 * vector tail (67), against the interpreter. A wrong bound or a lane order
 * the packs disturb shows in the bytes. */
static void test_clamped_casts(void) {
  enum { M = 67 };
  ingot_ir_func_t* f = ingot_ir_func_create("clamped_casts");
  int64_t d[1] = {M};
  uint32_t x = ingot_ir_add_buffer(f, "x", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 1, d);
  static const ingot_dtype_t types[6] = {INGOT_DTYPE_U8, INGOT_DTYPE_I8, INGOT_DTYPE_U8,
                                         INGOT_DTYPE_U16, INGOT_DTYPE_I16, INGOT_DTYPE_I8};
  static const double lo[6] = {0, -128, 10, 0, -32768, -100}, hi[6] = {255, 127, 200, 65535, 32767, 127};
  uint32_t i = LOOPVAR(f, "i");
  ingot_ir_stmt_t* s[6];
  for (int k = 0; k < 6; ++k) {
    char name[16];
    snprintf(name, sizeof name, "y%d", k);
    uint32_t y = ingot_ir_add_buffer(f, name, types[k], INGOT_IR_BUFFER_OUTPUT, 1, d);
    /* x * 7 + k spreads the inputs over several ranges; round as a requantization does */
    ingot_ir_expr_t* v = ingot_ir_unary(f, INGOT_IR_ROUND, ingot_ir_add(f, ingot_ir_mul(f, ingot_ir_load(f, x, V(f, i)), F(f, 7.0)), F(f, k)));
    v = k % 2 ? BIN(f, INGOT_IR_MAX, F(f, lo[k]), BIN(f, INGOT_IR_MIN, v, F(f, hi[k])))
              : BIN(f, INGOT_IR_MIN, BIN(f, INGOT_IR_MAX, v, F(f, lo[k])), F(f, hi[k]));
    s[k] = ingot_ir_store(f, y, V(f, i), ingot_ir_cast(f, types[k], v));
  }
  f->body = FOR_KIND(f, i, M, INGOT_IR_LOOP_VECTORIZED, ingot_ir_block(f, s, 6));
  check_func(f, -20000.0, 20000.0, 0);
  ingot_ir_func_destroy(f);
}

/* Requantizations, min(max(round(x) [+ float(z)], a), b) cast to an 8- or
 * 16-bit integer, which the llvm target computes on x86 with one cvtps2dq
 * and integer steps (codegen_llvm.c requantized): zero points of every
 * 8-bit kind (uint8, and int8 with negative values) and none, a narrower
 * clamp, values far past int32 (x * 1.2e5 crosses 2^31, x * 5e4 2^30),
 * ties (i / 2 + 100: 100.5 -> 100, 101.5 -> 102), infinities and NaN
 * (inf * 0), with a vector tail (67), against the interpreter. */
static void test_requant_casts(void) {
  enum { M = 67, K = 9 };
  ingot_ir_func_t* f = ingot_ir_func_create("requant_casts");
  int64_t d[1] = {M}, one[1] = {1};
  uint32_t x = ingot_ir_add_buffer(f, "x", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 1, d);
  uint32_t zu = ingot_ir_add_buffer(f, "zu", INGOT_DTYPE_U8, INGOT_IR_BUFFER_INPUT, 1, one);
  uint32_t zs = ingot_ir_add_buffer(f, "zs", INGOT_DTYPE_I8, INGOT_IR_BUFFER_INPUT, 1, d);
  static const ingot_dtype_t types[K] = {INGOT_DTYPE_U8,  INGOT_DTYPE_I8, INGOT_DTYPE_U8,
                                         INGOT_DTYPE_I16, INGOT_DTYPE_U16, INGOT_DTYPE_U8,
                                         INGOT_DTYPE_U8,  INGOT_DTYPE_I8, INGOT_DTYPE_I8};
  static const double lo[K] = {0, -128, 10, -32768, 0, 0, 0, -128, -100};
  static const double hi[K] = {255, 127, 200, 32767, 65535, 255, 255, 127, 120};
  static const double scale[K] = {0.01, 0.01, 0.02, 1.2e5, 5e4, 0, 1e30, 1e30, 3.0};
  static const int zkind[K] = {1, 2, 0, 2, 1, 0, 1, 2, 2}; /* 0 none, 1 uint8 (one), 2 int8 (per element) */
  uint32_t i = LOOPVAR(f, "i");
  ingot_ir_stmt_t* s[K];
  for (int k = 0; k < K; ++k) {
    char name[16];
    snprintf(name, sizeof name, "y%d", k);
    uint32_t y = ingot_ir_add_buffer(f, name, types[k], INGOT_IR_BUFFER_OUTPUT, 1, d);
    ingot_ir_expr_t* xv = ingot_ir_mul(f, ingot_ir_load(f, x, V(f, i)), F(f, scale[k]));
    if (k == 5) xv = ingot_ir_add(f, ingot_ir_mul(f, ingot_ir_cast(f, INGOT_DTYPE_F32, V(f, i)), F(f, 0.5)), F(f, 100.0));
    if (k == 6) xv = ingot_ir_mul(f, xv, F(f, 1e30)); /* +-inf */
    if (k == 7) xv = ingot_ir_mul(f, ingot_ir_mul(f, xv, F(f, 1e30)), F(f, 0.0)); /* inf * 0: NaN */
    ingot_ir_expr_t* v = ingot_ir_unary(f, INGOT_IR_ROUND, xv);
    if (zkind[k] == 1) v = ingot_ir_add(f, v, ingot_ir_cast(f, INGOT_DTYPE_F32, ingot_ir_load(f, zu, I(f, 0))));
    if (zkind[k] == 2) v = ingot_ir_add(f, ingot_ir_cast(f, INGOT_DTYPE_F32, ingot_ir_load(f, zs, V(f, i))), v);
    v = BIN(f, INGOT_IR_MIN, BIN(f, INGOT_IR_MAX, v, F(f, lo[k])), F(f, hi[k]));
    s[k] = ingot_ir_store(f, y, V(f, i), ingot_ir_cast(f, types[k], v));
  }
  f->body = FOR_KIND(f, i, M, INGOT_IR_LOOP_VECTORIZED, ingot_ir_block(f, s, K));
  check_func(f, -20000.0, 20000.0, 0);
  ingot_ir_func_destroy(f);
}

/* Words of four bytes, sum over j of uint32(b_j) * 2^(8j), as Dot4Words
 * and Im2Col build them, which the llvm target computes by interleaving the
 * byte vectors (codegen_llvm.c byte_words): uint8 planes, int8 planes taken
 * plus 128, the terms in another order, and a byte that does not vary along
 * the vector loop (one element, splat), with a vector tail (67), against the
 * interpreter. */
static ingot_ir_expr_t* word_term(ingot_ir_func_t* f, ingot_ir_expr_t* byte, bool is_signed, int j) {
  if (is_signed)
    byte = ingot_ir_add(f, ingot_ir_cast(f, INGOT_DTYPE_I32, byte), ingot_ir_cast(f, INGOT_DTYPE_I32, I(f, 128)));
  byte = ingot_ir_cast(f, INGOT_DTYPE_U32, byte);
  return j ? ingot_ir_mul(f, byte, ingot_ir_cast(f, INGOT_DTYPE_U32, I(f, (int64_t)1 << (8 * j)))) : byte;
}

static void test_byte_words(void) {
  enum { M = 67 };
  ingot_ir_func_t* f = ingot_ir_func_create("byte_words");
  int64_t d[1] = {M}, planes[1] = {4 * M};
  uint32_t xu = ingot_ir_add_buffer(f, "xu", INGOT_DTYPE_U8, INGOT_IR_BUFFER_INPUT, 1, planes);
  uint32_t xs = ingot_ir_add_buffer(f, "xs", INGOT_DTYPE_I8, INGOT_IR_BUFFER_INPUT, 1, planes);
  uint32_t i = LOOPVAR(f, "i");
  static const int order[3][4] = {{0, 1, 2, 3}, {0, 1, 2, 3}, {3, 0, 2, 1}};
  ingot_ir_stmt_t* st[4];
  for (int k = 0; k < 4; ++k) {
    char name[16];
    snprintf(name, sizeof name, "y%d", k);
    uint32_t y = ingot_ir_add_buffer(f, name, INGOT_DTYPE_I32, INGOT_IR_BUFFER_OUTPUT, 1, d);
    bool is_signed = k == 1;
    ingot_ir_expr_t* word = NULL;
    for (int t = 0; t < 4; ++t) {
      int j = order[k < 3 ? k : 0][t];
      /* y3: plane 2's byte is one element (the same in every lane) */
      ingot_ir_expr_t* at = k == 3 && j == 2 ? I(f, 2 * M + 5)
                                             : ingot_ir_add(f, I(f, (int64_t)j * M), V(f, i));
      ingot_ir_expr_t* term = word_term(f, ingot_ir_load(f, is_signed ? xs : xu, at), is_signed, j);
      word = word ? ingot_ir_add(f, word, term) : term;
    }
    st[k] = ingot_ir_store(f, y, V(f, i), ingot_ir_cast(f, INGOT_DTYPE_I32, word));
  }
  f->body = FOR_KIND(f, i, M, INGOT_IR_LOOP_VECTORIZED, ingot_ir_block(f, st, 4));
  check_func(f, -300.0, 300.0, 0);
  ingot_ir_func_destroy(f);
}

/* ---- 5. Integers and other dtypes, scalar and vectorized: floor div/mod
 * with negative operands and zero, wrapping i8, u8 max, bool logic, i32
 * select/abs, f64, casts both ways, integer pow. */
static void test_integers(ingot_ir_loop_kind_t kind) {
  enum { M = 67 };
  ingot_ir_func_t* f = ingot_ir_func_create("int_ops");
  int64_t d[1] = {M};
  uint32_t a = ingot_ir_add_buffer(f, "a", INGOT_DTYPE_I64, INGOT_IR_BUFFER_INPUT, 1, d);
  uint32_t b = ingot_ir_add_buffer(f, "b", INGOT_DTYPE_I64, INGOT_IR_BUFFER_INPUT, 1, d);
  uint32_t fx = ingot_ir_add_buffer(f, "fx", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 1, d);
  uint32_t qd = ingot_ir_add_buffer(f, "div", INGOT_DTYPE_I64, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t qm = ingot_ir_add_buffer(f, "mod", INGOT_DTYPE_I64, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t ci = ingot_ir_add_buffer(f, "const_div", INGOT_DTYPE_I64, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t cn = ingot_ir_add_buffer(f, "neg_const_mod", INGOT_DTYPE_I64, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t i8o = ingot_ir_add_buffer(f, "i8", INGOT_DTYPE_I8, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t u8o = ingot_ir_add_buffer(f, "u8", INGOT_DTYPE_U8, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t bo = ingot_ir_add_buffer(f, "bool", INGOT_DTYPE_BOOL, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t i32o = ingot_ir_add_buffer(f, "i32", INGOT_DTYPE_I32, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t f64o = ingot_ir_add_buffer(f, "f64", INGOT_DTYPE_F64, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t cvo = ingot_ir_add_buffer(f, "f2i", INGOT_DTYPE_I32, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t pwo = ingot_ir_add_buffer(f, "ipow", INGOT_DTYPE_I64, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t i = LOOPVAR(f, "i");
  ingot_ir_expr_t* ai = ingot_ir_load(f, a, V(f, i));
  ingot_ir_expr_t* bi = ingot_ir_load(f, b, V(f, i));
  ingot_ir_expr_t* ai8 = ingot_ir_cast(f, INGOT_DTYPE_I8, ai);
  ingot_ir_expr_t* au8 = ingot_ir_cast(f, INGOT_DTYPE_U8, ai);
  ingot_ir_expr_t* cond = BIN(f, INGOT_IR_AND, BIN(f, INGOT_IR_LT, ai, bi),
                              ingot_ir_unary(f, INGOT_IR_NOT, BIN(f, INGOT_IR_EQ, bi, I(f, 0))));
  ingot_ir_stmt_t* s[11] = {
      ingot_ir_store(f, qd, V(f, i), BIN(f, INGOT_IR_DIV, ai, bi)),
      ingot_ir_store(f, qm, V(f, i), BIN(f, INGOT_IR_MOD, ai, bi)),
      ingot_ir_store(f, ci, V(f, i), ingot_ir_add(f, BIN(f, INGOT_IR_DIV, V(f, i), I(f, 3)),
                                                  BIN(f, INGOT_IR_MOD, V(f, i), I(f, 3)))),
      ingot_ir_store(f, cn, V(f, i), BIN(f, INGOT_IR_MOD, ai, I(f, -5))),
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
      ingot_ir_store(f, cvo, V(f, i), ingot_ir_cast(f, INGOT_DTYPE_I32, ingot_ir_load(f, fx, V(f, i)))),
      ingot_ir_store(f, pwo, V(f, i), BIN(f, INGOT_IR_POW, ai, BIN(f, INGOT_IR_MOD, bi, I(f, 4)))),
  };
  f->body = FOR_KIND(f, i, M, kind, ingot_ir_block(f, s, 11));
  check_func(f, -40.0, 40.0, 0);
  ingot_ir_func_destroy(f);
}

/* ---- 5b. dot4: y[n] = (k == 0 ? acc[n] : y[n]) + dot4(a[k], w[k, n]) over
 * K steps (the accumulate form ConvInteger lowers to; n vectorized or
 * serial, N = 37: whole vectors and a tail), and z[n] = dot4(a[0], w[0, n])
 * alone; words over the full int32 range. Checked against a scalar
 * reference written here (the interpreter is checked too), on every target
 * of this machine and, where it runs AVX512-VNNI, on `llvm -mcpu=znver4`
 * (vpdpbusd); the optimized IR for znver4 calls vpdpbusd and x86-64-v4's
 * does not. */
enum { kDotK = 5, kDotN = 37, kDotQ = 150 };

static ingot_ir_func_t* dot4_func(ingot_ir_loop_kind_t kind, ingot_ir_binary_op_t op) {
  ingot_ir_func_t* f = ingot_ir_func_create("dot4_acc");
  int64_t da[1] = {kDotK}, dw[2] = {kDotK, kDotN}, dn[1] = {kDotN};
  uint32_t a = ingot_ir_add_buffer(f, "a", INGOT_DTYPE_I32, INGOT_IR_BUFFER_INPUT, 1, da);
  uint32_t w = ingot_ir_add_buffer(f, "w", INGOT_DTYPE_I32, INGOT_IR_BUFFER_INPUT, 2, dw);
  uint32_t acc = ingot_ir_add_buffer(f, "acc", INGOT_DTYPE_I32, INGOT_IR_BUFFER_INPUT, 1, dn);
  uint32_t y = ingot_ir_add_buffer(f, "y", INGOT_DTYPE_I32, INGOT_IR_BUFFER_OUTPUT, 1, dn);
  uint32_t z = ingot_ir_add_buffer(f, "z", INGOT_DTYPE_I32, INGOT_IR_BUFFER_OUTPUT, 1, dn);
  int64_t dq[1] = {kDotQ};
  uint32_t q = ingot_ir_add_buffer(f, "q", INGOT_DTYPE_U8, INGOT_IR_BUFFER_OUTPUT, 1, dq);
  uint32_t k = LOOPVAR(f, "k"), n = LOOPVAR(f, "n"), n2 = LOOPVAR(f, "n2"), n3 = LOOPVAR(f, "n3");
  ingot_ir_expr_t* wi[2] = {V(f, k), V(f, n)};
  ingot_ir_expr_t* start = ingot_ir_select(f, BIN(f, INGOT_IR_EQ, V(f, k), I(f, 0)), ingot_ir_load(f, acc, V(f, n)),
                                           ingot_ir_load(f, y, V(f, n)));
  ingot_ir_expr_t* dot = BIN(f, op, ingot_ir_load(f, a, V(f, k)), ingot_ir_load(f, w, ingot_ir_flat_index(f, w, wi)));
  ingot_ir_stmt_t* upd = FOR_KIND(f, n, kDotN, kind, ingot_ir_store(f, y, V(f, n), ingot_ir_add(f, start, dot)));
  ingot_ir_expr_t* w0 = ingot_ir_load(f, w, V(f, n2));
  ingot_ir_stmt_t* alone = FOR_KIND(f, n2, kDotN, kind,
                                    ingot_ir_store(f, z, V(f, n2), BIN(f, op, ingot_ir_load(f, a, I(f, 0)), w0)));
  /* uint8 stores: as many lanes as bytes in a vector (64 on AVX-512), the
   * dot4 in halves */
  ingot_ir_stmt_t* narrow = FOR_KIND(
      f, n3, kDotQ, kind,
      ingot_ir_store(f, q, V(f, n3),
                     ingot_ir_cast(f, INGOT_DTYPE_U8, BIN(f, op, ingot_ir_load(f, a, I(f, 1)),
                                                          ingot_ir_load(f, w, ingot_ir_add(f, V(f, n3), I(f, 7)))))));
  ingot_ir_stmt_t* all[3] = {ingot_ir_for(f, k, kDotK, upd), alone, narrow};
  f->body = ingot_ir_block(f, all, 3);
  return f;
}

static int32_t dot4_ref(int32_t a, int32_t b) {
  int32_t s = 0;
  for (int j = 0; j < 4; ++j) s += (int32_t)(uint8_t)((uint32_t)a >> (8 * j)) * (int32_t)(int8_t)(uint8_t)((uint32_t)b >> (8 * j));
  return s;
}

/* dot2: the signed 16-bit halves, products summed and wrapped to int32 */
static int32_t dot2_ref(int32_t a, int32_t b) {
  int64_t s = 0;
  for (int j = 0; j < 2; ++j)
    s += (int64_t)(int16_t)(uint16_t)((uint32_t)a >> (16 * j)) * (int16_t)(uint16_t)((uint32_t)b >> (16 * j));
  return (int32_t)(uint32_t)(uint64_t)s;
}

/* Also for dot2 (op), the same loops: pmaddwd on x86 (its one wrapping
 * case, -2^15 x -2^15 twice, included). */
static void test_dot4(ingot_ir_loop_kind_t kind, ingot_ir_binary_op_t op) {
  int32_t (*ref)(int32_t, int32_t) = op == INGOT_IR_DOT2 ? dot2_ref : dot4_ref;
  bool sat16 = op == INGOT_IR_DOT4S; /* its promise: b's bytes within [-64, 64] */
  int32_t a[kDotK], w[kDotK * kDotN], acc[kDotN], y_ref[kDotN], z_ref[kDotN];
  for (int i = 0; i < kDotK; ++i) a[i] = (int32_t)(uint32_t)rnd();
  for (int i = 0; i < kDotK * kDotN; ++i) w[i] = (int32_t)(uint32_t)rnd();
  a[0] = (int32_t)(op == INGOT_IR_DOT2 ? 0x80008000u : 0xffffffffu); /* 255 x each byte; -2^15 each half */
  w[0] = (int32_t)0x80808080u; /* -128 x each byte */
  if (op == INGOT_IR_DOT2) w[0] = (int32_t)0x80008000u;
  for (int i = 0; sat16 && i < kDotK * kDotN; ++i) {
    uint32_t word = 0;
    for (int j = 0; j < 4; ++j) word |= (uint32_t)(uint8_t)(int8_t)((int)(rnd() % 129) - 64) << (8 * j);
    w[i] = (int32_t)word;
  }
  if (sat16) w[0] = (int32_t)0xC0C0C0C0u; /* -64 x each byte: 255 x -64 x 2 = -32640 a pair */
  for (int i = 0; i < kDotN; ++i) acc[i] = (int32_t)(rnd() % 2000001) - 1000000;
  for (int n = 0; n < kDotN; ++n) {
    y_ref[n] = acc[n];
    for (int k = 0; k < kDotK; ++k) y_ref[n] = (int32_t)((uint32_t)y_ref[n] + (uint32_t)ref(a[k], w[k * kDotN + n]));
    z_ref[n] = ref(a[0], w[n]);
  }
  CHECK(dot4_ref((int32_t)0xffffffffu, (int32_t)0x80808080u) == -4 * 255 * 128, "reference: 255 x -128");
  const char* targets[8];
  int count = 0;
  for (int t = 0; t < g_target_count; ++t) targets[count++] = g_targets[t];
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl")) targets[count++] = "llvm -mcpu=znver4";
#endif
  int32_t y[kDotN], z[kDotN];
  uint8_t q[kDotQ], q_ref[kDotQ];
  CHECK(dot2_ref((int32_t)0x80008000u, (int32_t)0x80008000u) == INT32_MIN, "reference: dot2 wraps");
  for (int i = 0; i < kDotQ; ++i) q_ref[i] = (uint8_t)ref(a[1], w[i + 7]);
  void* args[6] = {a, w, acc, y, z, q};
  ingot_ir_func_t* f = dot4_func(kind, op);
  memset(y, 0, sizeof(y));
  memset(z, 0, sizeof(z));
  REQUIRE_OK(ingot_ir_interpret(f, args));
  CHECK(memcmp(y, y_ref, sizeof(y)) == 0 && memcmp(z, z_ref, sizeof(z)) == 0 && memcmp(q, q_ref, sizeof(q)) == 0,
        "dot4: interpreter differs from the reference");
  ingot_ir_func_destroy(f);
  for (int t = 0; t < count; ++t) {
    f = dot4_func(kind, op);
    module_t m;
    module_build(&f, 1, targets[t], &m);
    memset(y, 0xA5, sizeof(y));
    memset(z, 0xA5, sizeof(z));
    memset(q, 0xA5, sizeof(q));
    ingot_kernel_env_t env = test_env();
    CHECK(module_kernel(&m, f->name)(&env, args) == 0, "dot4: kernel return");
    for (int n = 0; n < kDotN; ++n) {
      if (y[n] != y_ref[n] || z[n] != z_ref[n]) {
        CHECK(0, "dot4 [%s, %s]: y[%d] = %d, z = %d; reference %d, %d", targets[t],
              kind == INGOT_IR_LOOP_VECTORIZED ? "vectorized" : "serial", n, y[n], z[n], y_ref[n], z_ref[n]);
        break;
      }
    }
    CHECK(memcmp(q, q_ref, sizeof(q)) == 0, "dot4 [%s]: the uint8 loop differs from the reference", targets[t]);
    module_close(&m);
    ingot_ir_func_destroy(f);
  }
  if (kind != INGOT_IR_LOOP_VECTORIZED) return;
  if (sat16) {
    /* pmaddubsw where there is no VNNI, vpdpbusd where there is */
    static const struct { const char* target; const char* has; } k_s[] = {
        {"llvm -mcpu=x86-64-v3", "llvm.x86.avx2.pmadd.ub.sw"}, {"llvm -mcpu=x86-64-v4", "llvm.x86.avx512.pmaddubs.w.512"},
        {"llvm -mcpu=znver4", "llvm.x86.avx512.vpdpbusd"}};
    for (size_t c = 0; c < sizeof(k_s) / sizeof(k_s[0]); ++c) {
      ingot_target_t target;
      REQUIRE_OK(ingot_target_parse(k_s[c].target, &target));
      f = dot4_func(kind, op);
      ingot_strbuf_t text = {0};
      REQUIRE_OK(ingot_codegen_emit(&f, 1, &target, &text));
      CHECK(text.data && strstr(text.data, k_s[c].has), "dot4s [%s]: no %s", k_s[c].target, k_s[c].has);
      ingot_strbuf_free(&text);
      ingot_ir_func_destroy(f);
    }
    return;
  }
  if (op == INGOT_IR_DOT2) {
    /* pmaddwd on every x86 level */
    static const char* const k_x86[] = {"llvm -mcpu=znver4", "llvm -mcpu=x86-64-v4", "llvm -mcpu=x86-64-v3"};
    for (size_t c = 0; c < sizeof(k_x86) / sizeof(k_x86[0]); ++c) {
      ingot_target_t target;
      REQUIRE_OK(ingot_target_parse(k_x86[c], &target));
      f = dot4_func(kind, op);
      ingot_strbuf_t text = {0};
      REQUIRE_OK(ingot_codegen_emit(&f, 1, &target, &text));
      bool has = text.data && (strstr(text.data, "llvm.x86.avx2.pmadd.wd") || strstr(text.data, "llvm.x86.avx512.pmaddw.d"));
      CHECK(has, "dot2 [%s]: no pmaddwd", k_x86[c]);
      ingot_strbuf_free(&text);
      ingot_ir_func_destroy(f);
    }
    return;
  }
  /* The instruction: in the optimized IR of a target with VNNI only. */
  static const struct { const char* target; bool vnni; } k_ir[] = {
      {"llvm -mcpu=znver4", true}, {"llvm -mcpu=x86-64-v4", false}, {"llvm -mcpu=x86-64-v3", false}};
  for (size_t c = 0; c < sizeof(k_ir) / sizeof(k_ir[0]); ++c) {
    ingot_target_t target;
    REQUIRE_OK(ingot_target_parse(k_ir[c].target, &target));
    f = dot4_func(kind, op);
    ingot_strbuf_t text = {0};
    REQUIRE_OK(ingot_codegen_emit(&f, 1, &target, &text));
    bool has = text.data && strstr(text.data, "llvm.x86.avx512.vpdpbusd") != NULL;
    CHECK(has == k_ir[c].vnni, "dot4 [%s]: vpdpbusd %s", k_ir[c].target, has ? "emitted" : "missing");
    ingot_strbuf_free(&text);
    ingot_ir_func_destroy(f);
  }
}

/* ---- 5c. float16 arithmetic (the HALF ops of lower/ir_ops.def): + - * /
 * min max on pairs, neg abs sqrt, the four comparisons, and a chain that
 * rounds after each op, on the bits of special and random float16 values
 * (zeros, subnormals, the largest finite values next to overflow, infinities,
 * NaNs). The reference written here computes in double (exact for + - *,
 * rounded once to 53 bits for / and sqrt: no double rounding to 11) and
 * rounds to float16 directly, ties to even; NaNs compare as NaNs (their
 * payloads differ by ISA). Run on every target here (the c target too: its
 * helpers ingot_h2f / f2h / minh / maxh), serial and vectorized, N odd; and
 * the optimized IR of the targets with float16 arithmetic (neoverse-n1:
 * fullfp16, sapphirerapids: AVX512-FP16) computes in LLVM half, the others'
 * do not. tests/aarch64 runs the native code under qemu. */
enum { kHalfN = 1031, kHalfOuts = 11 };
static const ingot_ir_binary_op_t k_half_bin[6] = {INGOT_IR_ADD, INGOT_IR_SUB, INGOT_IR_MUL,
                                                   INGOT_IR_DIV, INGOT_IR_MIN, INGOT_IR_MAX};
static const ingot_ir_binary_op_t k_half_cmp[4] = {INGOT_IR_LT, INGOT_IR_LE, INGOT_IR_EQ, INGOT_IR_NE};

static double half_value(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

/* double -> float16 bits, to nearest, ties to even (one rounding). */
static uint16_t half_round(double v) {
  uint16_t sign = signbit(v) ? 0x8000 : 0;
  double a = fabs(v);
  if (isnan(v)) return 0x7e00;
  if (a == 0.0) return sign;
  if (a >= 65520.0) return sign | 0x7c00; /* 65504 + half an ulp and above */
  int e;
  frexp(a, &e);                      /* a = f * 2^e, f in [0.5, 1) */
  int q = e - 11 < -24 ? -24 : e - 11; /* the ulp's exponent */
  double m = ldexp(a, -q);           /* exact: a scaled to an integer and a fraction */
  double r = nearbyint(m);           /* ties to even */
  uint32_t bits = (uint32_t)r;       /* the significand in ulps, <= 2048 */
  if (q == -24) return sign | (uint16_t)bits; /* subnormal (a carry into 1024 is the smallest normal) */
  if (bits == 2048) { bits = 1024; ++q; }
  return sign | (uint16_t)(((q + 25) << 10) + (bits - 1024));
}

static bool half_same(uint16_t a, uint16_t b) {
  bool an = (a & 0x7c00) == 0x7c00 && (a & 0x3ff), bn = (b & 0x7c00) == 0x7c00 && (b & 0x3ff);
  return an || bn ? an && bn : a == b;
}

static ingot_ir_func_t* half_func(ingot_ir_loop_kind_t kind) {
  ingot_ir_func_t* f = ingot_ir_func_create("half_ops");
  int64_t d[1] = {kHalfN};
  uint32_t a = ingot_ir_add_buffer(f, "a", INGOT_DTYPE_F16, INGOT_IR_BUFFER_INPUT, 1, d);
  uint32_t b = ingot_ir_add_buffer(f, "b", INGOT_DTYPE_F16, INGOT_IR_BUFFER_INPUT, 1, d);
  uint32_t out[kHalfOuts];
  for (int k = 0; k < kHalfOuts; ++k) {
    char name[8];
    snprintf(name, sizeof name, "y%d", k);
    out[k] = ingot_ir_add_buffer(f, name, INGOT_DTYPE_F16, INGOT_IR_BUFFER_OUTPUT, 1, d);
  }
  uint32_t c = ingot_ir_add_buffer(f, "c", INGOT_DTYPE_U8, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t i = LOOPVAR(f, "i");
  ingot_ir_expr_t* x = ingot_ir_load(f, a, V(f, i));
  ingot_ir_expr_t* y = ingot_ir_load(f, b, V(f, i));
  ingot_ir_stmt_t* st[kHalfOuts + 1];
  for (int k = 0; k < 6; ++k) st[k] = ingot_ir_store(f, out[k], V(f, i), BIN(f, k_half_bin[k], x, y));
  st[6] = ingot_ir_store(f, out[6], V(f, i), ingot_ir_unary(f, INGOT_IR_NEG, x));
  st[7] = ingot_ir_store(f, out[7], V(f, i), ingot_ir_unary(f, INGOT_IR_ABS, x));
  st[8] = ingot_ir_store(f, out[8], V(f, i), ingot_ir_unary(f, INGOT_IR_SQRT, x));
  /* relu(x * y + x) / 3: four roundings (no fused multiply-add) */
  ingot_ir_expr_t* chain = BIN(f, INGOT_IR_ADD, BIN(f, INGOT_IR_MUL, x, y), x);
  chain = BIN(f, INGOT_IR_MAX, chain, ingot_ir_float(f, INGOT_DTYPE_F16, 0.0));
  st[9] = ingot_ir_store(f, out[9], V(f, i), BIN(f, INGOT_IR_DIV, chain, ingot_ir_float(f, INGOT_DTYPE_F16, 3.0)));
  /* sqrt(|x|) - y * 0.1 (0.1 rounds to float16's 0x2e66) */
  ingot_ir_expr_t* s2 = ingot_ir_unary(f, INGOT_IR_SQRT, ingot_ir_unary(f, INGOT_IR_ABS, x));
  st[10] = ingot_ir_store(f, out[10], V(f, i),
                          BIN(f, INGOT_IR_SUB, s2, BIN(f, INGOT_IR_MUL, y, ingot_ir_float(f, INGOT_DTYPE_F16, 0.1))));
  /* the comparisons, one bit each */
  ingot_ir_expr_t* bits = ingot_ir_int(f, 0);
  bits->dtype = INGOT_DTYPE_U8;
  for (int k = 0; k < 4; ++k) {
    ingot_ir_expr_t* one = ingot_ir_int(f, 1 << k);
    one->dtype = INGOT_DTYPE_U8;
    ingot_ir_expr_t* zero = ingot_ir_int(f, 0);
    zero->dtype = INGOT_DTYPE_U8;
    bits = BIN(f, INGOT_IR_BITOR, bits, ingot_ir_select(f, BIN(f, k_half_cmp[k], x, y), one, zero));
  }
  st[kHalfOuts] = ingot_ir_store(f, c, V(f, i), bits);
  f->body = FOR_KIND(f, i, kHalfN, kind, ingot_ir_block(f, st, kHalfOuts + 1));
  return f;
}

static void half_reference(const uint16_t* a, const uint16_t* b, uint16_t (*y)[kHalfN], uint8_t* c) {
  for (int i = 0; i < kHalfN; ++i) {
    double x = half_value(a[i]), v = half_value(b[i]);
    y[0][i] = half_round(x + v);
    y[1][i] = half_round(x - v);
    y[2][i] = half_round(x * v);
    y[3][i] = half_round(x / v);
    y[4][i] = (x < v || isnan(v)) ? a[i] : b[i];
    y[5][i] = (x > v || isnan(v)) ? a[i] : b[i];
    y[6][i] = a[i] ^ 0x8000;
    y[7][i] = a[i] & 0x7fff;
    y[8][i] = half_round(sqrt(x));
    double t = half_value(half_round(half_value(half_round(x * v)) + x));
    t = t > 0.0 ? t : 0.0; /* max(t, 0): a NaN t yields 0 (the IR's max) */
    y[9][i] = half_round(half_value(half_round(t)) / 3.0);
    double r = half_value(half_round(sqrt(fabs(x))));
    y[10][i] = half_round(r - half_value(half_round(v * half_value(0x2e66))));
    c[i] = (uint8_t)((x < v) | (x <= v) << 1 | (x == v) << 2 | (x != v) << 3);
  }
}

static void test_half(ingot_ir_loop_kind_t kind) {
  static const uint16_t special[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff, 0xfbff, 0x7bfe,
                                     0x7c00, 0xfc00, 0x7e00, 0x7c01, 0x3c00, 0xbc00, 0x3c01, 0x3bff, 0x7800,
                                     0x5bff, 0x0200, 0x0003, 0x4000, 0x4200, 0x3555, 0x1400, 0x7a00, 0x77ff};
  enum { kSpecial = sizeof(special) / sizeof(special[0]) };
  static uint16_t a[kHalfN], b[kHalfN], y[kHalfOuts][kHalfN], y_ref[kHalfOuts][kHalfN];
  static uint8_t c[kHalfN], c_ref[kHalfN];
  for (int i = 0; i < kHalfN; ++i) {
    bool pair = i < kSpecial * kSpecial;
    a[i] = pair ? special[i / kSpecial] : (uint16_t)rnd();
    b[i] = pair ? special[i % kSpecial] : (uint16_t)rnd();
  }
  /* ties of + and * (exact halfway in float16): 2049 * 1 (2048 + 1), 1 + 2^-11 */
  a[kHalfN - 1] = 0x6800; b[kHalfN - 1] = 0x3c00; /* 2048 + 1: a tie, to even 2048 */
  a[kHalfN - 2] = 0x3c00; b[kHalfN - 2] = 0x1000; /* 1 + 2^-11: a tie, to 1 */
  a[kHalfN - 3] = 0x3c01; b[kHalfN - 3] = 0x1000; /* (1 + 2^-10) + 2^-11: a tie, to even up */
  half_reference(a, b, y_ref, c_ref);
  CHECK(half_round(65519.0) == 0x7bff && half_round(65520.0) == 0x7c00 && half_round(ldexp(1, -25)) == 0 &&
            half_round(ldexp(3, -26)) == 1 && half_round(2049.0) == 0x6800 && half_round(2051.0) == 0x6802,
        "float16 reference rounding");
  const char* targets[8];
  int count = 0;
  targets[count++] = "c";
  for (int t = 0; t < g_target_count; ++t) targets[count++] = g_targets[t];
  void* args[2 + kHalfOuts + 1];
  args[0] = a;
  args[1] = b;
  for (int k = 0; k < kHalfOuts; ++k) args[2 + k] = y[k];
  args[2 + kHalfOuts] = c;
  for (int t = -1; t < count; ++t) { /* -1: the interpreter */
    ingot_ir_func_t* f = half_func(kind);
    memset(y, 0xA5, sizeof(y));
    memset(c, 0xA5, sizeof(c));
    module_t m;
    if (t < 0) {
      REQUIRE_OK(ingot_ir_interpret(f, args));
    } else {
      module_build(&f, 1, targets[t], &m);
      ingot_kernel_env_t env = test_env();
      CHECK(module_kernel(&m, f->name)(&env, args) == 0, "half: kernel return");
    }
    const char* who = t < 0 ? "interpreter" : targets[t];
    for (int k = 0; k < kHalfOuts; ++k)
      for (int i = 0; i < kHalfN; ++i)
        if (!half_same(y[k][i], y_ref[k][i])) {
          CHECK(0, "half [%s, %s]: y%d[%d] = 0x%04x, reference 0x%04x (a 0x%04x, b 0x%04x)", who,
                kind == INGOT_IR_LOOP_VECTORIZED ? "vectorized" : "serial", k, i, y[k][i], y_ref[k][i], a[i], b[i]);
          break;
        }
    CHECK(memcmp(c, c_ref, sizeof(c)) == 0, "half [%s]: the comparisons differ from the reference", who);
    if (t >= 0) module_close(&m);
    ingot_ir_func_destroy(f);
  }
  if (kind != INGOT_IR_LOOP_VECTORIZED) return;
  static const struct { const char* target; bool native; } k_ir[] = {
      {"llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1", true}, {"llvm -mcpu=sapphirerapids", true},
      {"aarch64", false}, {"llvm -mcpu=x86-64-v4", false}, {"llvm -mcpu=x86-64-v3", false}};
  for (size_t k = 0; k < sizeof(k_ir) / sizeof(k_ir[0]); ++k) {
    ingot_target_t target;
    REQUIRE_OK(ingot_target_parse(k_ir[k].target, &target));
    CHECK(ingot_target_has_half_arith(&target) == k_ir[k].native, "half [%s]: native arithmetic", k_ir[k].target);
    ingot_ir_func_t* f = half_func(kind);
    ingot_strbuf_t text = {0};
    REQUIRE_OK(ingot_codegen_emit(&f, 1, &target, &text));
    bool has = text.data && (strstr(text.data, "fadd <8 x half>") || strstr(text.data, "fadd <16 x half>") ||
                             strstr(text.data, "fadd <32 x half>"));
    CHECK(has == k_ir[k].native, "half [%s]: half vector arithmetic %s", k_ir[k].target, has ? "emitted" : "missing");
    ingot_strbuf_free(&text);
    ingot_ir_func_destroy(f);
  }
}

/* ---- 6. Parallel: nested under a serial loop with a local it reads, a
 * nested PARALLEL inside it (runs serially), names that are not C. */
static void test_parallel(void) {
  enum { N = 3, C = 7, H = 11 };
  ingot_ir_func_t* f = ingot_ir_func_create("par nested?");
  int64_t d[3] = {N, C, H};
  uint32_t x = ingot_ir_add_buffer(f, "in", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 3, d);
  uint32_t o = ingot_ir_add_buffer(f, "out", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 3, d);
  uint32_t n = LOOPVAR(f, "int"), c = LOOPVAR(f, "c.x"), h = LOOPVAR(f, "h");
  uint32_t sc = ingot_ir_add_var(f, "scale", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
  uint32_t t = ingot_ir_add_var(f, "t", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
  ingot_ir_expr_t* idx[3] = {V(f, n), V(f, c), V(f, h)};
  ingot_ir_expr_t* val = ingot_ir_add(f, ingot_ir_mul(f, ingot_ir_load(f, x, ingot_ir_flat_index(f, x, idx)), V(f, sc)),
                                      ingot_ir_cast(f, INGOT_DTYPE_F32, V(f, c)));
  ingot_ir_stmt_t* hbody = BLOCK2(f, ingot_ir_local(f, t, ingot_ir_unary(f, INGOT_IR_TANH, val)),
                                  ingot_ir_store(f, o, ingot_ir_flat_index(f, o, idx), V(f, t)));
  ingot_ir_stmt_t* cl = FOR_KIND(f, c, C, INGOT_IR_LOOP_PARALLEL, FOR_KIND(f, h, H, INGOT_IR_LOOP_PARALLEL, hbody));
  ingot_ir_expr_t* scv = ingot_ir_add(f, ingot_ir_cast(f, INGOT_DTYPE_F32, V(f, n)), F(f, 0.5));
  f->body = ingot_ir_for(f, n, N, BLOCK2(f, ingot_ir_local(f, sc, scv), cl));
  CHECK(check_func(f, -2.0, 2.0, 1e-6) == N, "parallel_for once per outer iteration");
  ingot_ir_func_destroy(f);
}

/* ---- 7. The object: deterministic, imports nothing, aarch64 too; errors. */
static void test_object_and_errors(void) {
  ingot_ir_func_t* f = ingot_ir_func_create("copy");
  int64_t d[1] = {1000};
  uint32_t x = ingot_ir_add_buffer(f, "x", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 1, d);
  uint32_t o = ingot_ir_add_buffer(f, "o", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t i = LOOPVAR(f, "i");
  uint32_t j = LOOPVAR(f, "j");
  f->body = FOR_KIND(
      f, i, 10, INGOT_IR_LOOP_PARALLEL,
      FOR_KIND(f, j, 100, INGOT_IR_LOOP_VECTORIZED,
               ingot_ir_store(f, o, ingot_ir_add(f, ingot_ir_mul(f, V(f, i), I(f, 100)), V(f, j)),
                              ingot_ir_unary(f, INGOT_IR_ERF, ingot_ir_load(f, x, ingot_ir_add(f, ingot_ir_mul(f, V(f, i), I(f, 100)), V(f, j)))))));
  const char* targets[] = {"x86-64-v4", "x86-64-v3", "x86-64", "aarch64", "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a76"};
  for (size_t t = 0; t < sizeof(targets) / sizeof(targets[0]); ++t) {
    ingot_target_t target;
    REQUIRE_OK(ingot_target_parse(targets[t], &target));
    uint8_t *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    REQUIRE_OK(ingot_codegen_build(&f, 1, &target, NULL, NULL, &a, &na));
    REQUIRE_OK(ingot_codegen_build(&f, 1, &target, NULL, NULL, &b, &nb));
    CHECK(na == nb && memcmp(a, b, na) == 0, "[%s] builds are byte-identical", targets[t]);
    CHECK(ingot_codegen_elf_check(a, na) == INGOT_OK, "[%s] elf check: %s", targets[t], ingot_compiler_error());
    uint16_t machine = (uint16_t)(a[18] | (a[19] << 8));
    CHECK(machine == (strstr(targets[t], "aarch64") ? 183 : 62), "[%s] e_machine %u", targets[t], machine);
    printf("  %-50s %zu bytes\n", target.name, na);
    free(a);
    free(b);
  }
  /* The optimized IR can be kept; it has vector types on v4. */
  {
    ingot_target_t target;
    REQUIRE_OK(ingot_target_parse("x86-64-v4", &target));
    char path[] = "/tmp/ingot-test-llvm-XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0) close(fd);
    uint8_t* obj = NULL;
    size_t n = 0;
    REQUIRE_OK(ingot_codegen_build(&f, 1, &target, NULL, path, &obj, &n));
    uint8_t* text = NULL;
    size_t tn = 0;
    REQUIRE_OK(ingot_file_read(path, &text, &tn));
    char* s = calloc(tn + 1, 1);
    memcpy(s, text, tn);
    CHECK(strstr(s, "<16 x float>") != NULL, "16 float lanes on AVX-512");
    CHECK(strstr(s, "@ingot_library_query") != NULL, "the query function");
    /* The backend table's emit gives the same optimized IR as text. */
    ingot_strbuf_t ir = {0};
    REQUIRE_OK(ingot_codegen_emit(&f, 1, &target, &ir));
    CHECK(ir.length == tn && memcmp(ir.data, s, tn) == 0, "emit == the kept IR (%zu vs %zu bytes)", ir.length, tn);
    ingot_strbuf_free(&ir);
    free(s);
    free(text);
    free(obj);
    unlink(path);
  }
  ingot_ir_func_destroy(f);

  ingot_target_t t;
  REQUIRE_OK(ingot_target_parse("x86-64-v3", &t));
  /* float16 is storage: a copy builds, arithmetic on it is refused */
  f = ingot_ir_func_create("half");
  uint32_t h = ingot_ir_add_buffer(f, "h", INGOT_DTYPE_F16, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t k = LOOPVAR(f, "k");
  f->body = ingot_ir_for(f, k, 4, ingot_ir_store(f, h, V(f, k), ingot_ir_load(f, h, V(f, k))));
  uint8_t* obj = NULL;
  size_t n = 0;
  CHECK(ingot_codegen_build(&f, 1, &t, NULL, NULL, &obj, &n) == INGOT_OK, "f16 copy builds: %s", ingot_compiler_error());
  free(obj);
  obj = NULL;
  ingot_ir_func_destroy(f);
  /* bfloat16 is storage: arithmetic on it is refused (float16's: tests/ir) */
  f = ingot_ir_func_create("half_add");
  h = ingot_ir_add_buffer(f, "h", INGOT_DTYPE_BF16, INGOT_IR_BUFFER_OUTPUT, 1, d);
  k = LOOPVAR(f, "k");
  f->body = ingot_ir_for(f, k, 4, ingot_ir_store(f, h, V(f, k), ingot_ir_add(f, ingot_ir_load(f, h, V(f, k)),
                                                                             ingot_ir_load(f, h, V(f, k)))));
  CHECK(ingot_codegen_build(&f, 1, &t, NULL, NULL, &obj, &n) != INGOT_OK, "bf16 arithmetic refused");
  CHECK(obj == NULL && strstr(ingot_compiler_error(), "half_add") != NULL, "message names the function: %s",
        ingot_compiler_error());
  ingot_ir_func_destroy(f);

  /* Target strings. */
  CHECK(ingot_target_parse("llvm -mcpu=native", &t) == INGOT_ERROR_INVALID_ARGUMENT, "native refused");
  CHECK(ingot_target_parse("llvm -mcpu=pentium", &t) == INGOT_ERROR_INVALID_ARGUMENT, "unknown cpu");
  CHECK(ingot_target_parse("llvm -mtriple=riscv64-linux-gnu", &t) == INGOT_ERROR_UNSUPPORTED, "riscv");
  CHECK(ingot_target_parse("llvm -mtriple=aarch64-linux-gnu -mcpu=x86-64-v3", &t) == INGOT_ERROR_INVALID_ARGUMENT,
        "level of another arch");
  CHECK(ingot_target_parse("x86-64-v3 -mattr=+sse9", &t) == INGOT_ERROR_INVALID_ARGUMENT, "unknown feature");
  CHECK(ingot_target_parse("llvm -mcpu=skylake-avx512 -mattr=+avx512vnni,+avx512bf16", &t) == INGOT_ERROR_INVALID_ARGUMENT,
        "canonical form too long: %s", ingot_compiler_error());
  REQUIRE_OK(ingot_target_parse("llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64-v3", &t));
  CHECK(strcmp(t.name, "llvm x86-64-v3") == 0 && t.vector_bytes == 32 && t.kind == INGOT_TARGET_LLVM, "%s", t.name);
  REQUIRE_OK(ingot_target_parse("llvm -mcpu=znver3", &t));
  CHECK(strcmp(t.name, "llvm -mcpu=znver3") == 0 && strcmp(t.cpu, "x86-64-v3") == 0 && strcmp(t.tune, "znver3") == 0,
        "%s", t.name);
  REQUIRE_OK(ingot_target_parse("aarch64", &t));
  CHECK(strcmp(t.name, "llvm aarch64") == 0 && t.vector_bytes == 16 && strncmp(t.triple, "aarch64", 7) == 0, "%s",
        t.name);
  REQUIRE_OK(ingot_target_parse("x86-64 -mattr=+avx2,+fma", &t));
  CHECK(strcmp(t.name, "llvm x86-64 -mattr=+avx2,+fma") == 0 && t.vector_bytes == 16, "%s", t.name);
  CHECK(ingot_target_parse("x86-64-v4 -mattr=+avx512vnni", &t) == INGOT_ERROR_INVALID_ARGUMENT, "33 bytes");
  REQUIRE_OK(ingot_target_parse("llvm", &t));
  CHECK(strncmp(t.name, "llvm ", 5) == 0, "host canonical: %s", t.name);
  ingot_target_t again;
  REQUIRE_OK(ingot_target_parse(t.name, &again));
  CHECK(strcmp(again.name, t.name) == 0, "canonical strings parse to themselves");
  printf("  host target: %s\n", t.name);
}

/* ingot_codegen_prepare for the llvm target: lanes from the target's vector
 * width and the stored dtype; loops that cannot vectorize become serial. */
static uint32_t first_loop_lanes(const ingot_ir_stmt_t* s, ingot_ir_loop_kind_t* kind) {
  while (s && s->kind == INGOT_IR_STMT_BLOCK && s->u.block.count) s = s->u.block.stmts[0];
  *kind = s && s->kind == INGOT_IR_STMT_FOR ? s->u.loop.loop_kind : (ingot_ir_loop_kind_t)-1;
  return s && s->kind == INGOT_IR_STMT_FOR ? s->u.loop.lanes : 0;
}

static void test_prepare_lanes(void) {
  int64_t d[1] = {64};
  ingot_ir_func_t* f = ingot_ir_func_create("lanes");
  uint32_t x = ingot_ir_add_buffer(f, "x", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 1, d);
  uint32_t o = ingot_ir_add_buffer(f, "o", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t n = LOOPVAR(f, "n");
  f->body = FOR_KIND(f, n, 64, INGOT_IR_LOOP_VECTORIZED, ingot_ir_store(f, o, V(f, n), ingot_ir_load(f, x, V(f, n))));
  struct { const char* target; uint32_t lanes; } cases[] = {{"x86-64-v4", 16}, {"x86-64-v3", 8}, {"aarch64", 4}};
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); ++c) {
    ingot_target_t t;
    REQUIRE_OK(ingot_target_parse(cases[c].target, &t));
    ingot_codegen_prepared_t p;
    REQUIRE_OK(ingot_codegen_prepare(&f, 1, &t, &p));
    ingot_ir_loop_kind_t kind;
    uint32_t lanes = first_loop_lanes(p.funcs[0]->body, &kind);
    CHECK(kind == INGOT_IR_LOOP_VECTORIZED && lanes == cases[c].lanes, "[%s] %u lanes, want %u", cases[c].target,
          lanes, cases[c].lanes);
    CHECK(ingot_ir_verify(p.funcs[0]) == INGOT_OK, "prepared IR verifies: %s", ingot_compiler_error());
    ingot_strbuf_t text = {0};
    ingot_ir_print(p.funcs[0], &text);
    char want[32];
    snprintf(want, sizeof(want), "vectorized x%u", cases[c].lanes);
    CHECK(strstr(text.data, want) != NULL, "printed: %s", text.data);
    ingot_strbuf_free(&text);
    ingot_codegen_prepared_free(&p);
  }
  CHECK(first_loop_lanes(f->body, &(ingot_ir_loop_kind_t){0}) == 0, "the input keeps lanes 0");
  ingot_ir_func_destroy(f);

  /* Reads o[n + 1] while writing o[n]: lanes would see each other: serial. */
  f = ingot_ir_func_create("shift");
  o = ingot_ir_add_buffer(f, "o", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 1, d);
  n = LOOPVAR(f, "n");
  f->body = FOR_KIND(f, n, 63, INGOT_IR_LOOP_VECTORIZED,
                     ingot_ir_store(f, o, V(f, n), ingot_ir_load(f, o, ingot_ir_add(f, V(f, n), I(f, 1)))));
  ingot_target_t t;
  REQUIRE_OK(ingot_target_parse("x86-64-v3", &t));
  ingot_codegen_prepared_t p;
  REQUIRE_OK(ingot_codegen_prepare(&f, 1, &t, &p));
  ingot_ir_loop_kind_t kind;
  CHECK(first_loop_lanes(p.funcs[0]->body, &kind) == 0 && kind == INGOT_IR_LOOP_SERIAL, "shift runs serially");
  ingot_codegen_prepared_free(&p);
  ingot_ir_func_destroy(f);
}

int main(void) {
  if (!ingot_codegen_llvm_available()) {
    printf("this build has no LLVM: skipped\n");
    return 77;
  }
  pick_targets();
  printf("prepare: lanes\n");
  test_prepare_lanes();
  printf("math\n");
  for (int t = 0; t < g_target_count; ++t) test_math(g_targets[t]);
  printf("double precision, trigonometric and hyperbolic\n");
  for (int t = 0; t < g_target_count; ++t) test_math_double(g_targets[t]);
  printf("tails\n");
  test_tails();
  printf("reductions\n");
  test_reductions();
  printf("padding, gathers, scatters\n");
  test_padding_gather_scatter();
  printf("strided stores combined\n");
  test_combined_stores();
  test_combined_word_stores();
  test_clamped_casts();
  test_requant_casts();
  test_byte_words();
  printf("integers (scalar, vectorized)\n");
  test_integers(INGOT_IR_LOOP_SERIAL);
  test_integers(INGOT_IR_LOOP_VECTORIZED);
  printf("dot4 (scalar, vectorized; vpdpbusd where the target has VNNI)\n");
  test_dot4(INGOT_IR_LOOP_SERIAL, INGOT_IR_DOT4);
  test_dot4(INGOT_IR_LOOP_VECTORIZED, INGOT_IR_DOT4);
  test_dot4(INGOT_IR_LOOP_SERIAL, INGOT_IR_DOT2);
  test_dot4(INGOT_IR_LOOP_VECTORIZED, INGOT_IR_DOT2);
  test_dot4(INGOT_IR_LOOP_SERIAL, INGOT_IR_DOT4S);
  test_dot4(INGOT_IR_LOOP_VECTORIZED, INGOT_IR_DOT4S);
  printf("float16 arithmetic (scalar, vectorized; LLVM half where the target has it)\n");
  test_half(INGOT_IR_LOOP_SERIAL);
  test_half(INGOT_IR_LOOP_VECTORIZED);
  printf("parallel\n");
  test_parallel();
  printf("object and errors\n");
  test_object_and_errors();
  if (g_failures) {
    fprintf(stderr, "%d check(s) failed\n", g_failures);
    return 1;
  }
  printf("all llvm codegen tests passed\n");
  return 0;
}
