/* Accuracy of the C target's inline math for the unary ops added with the
 * elementwise family (round, trigonometric and hyperbolic functions) and the
 * float64 versions of exp/log/tanh/erf/fmod/pow: hand-built loop IR over a
 * sweep of inputs and specials, compiled by codegen (target `c`, or the one
 * named by argv[1]) into a shared object
 * (loaded with dlopen, test only), compared with libm in ulps, and with the
 * IR interpreter. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "lower/ir.h"
#include "runtime/ingot_format.h"

static int g_failures = 0;
#define CHECK(cond, ...)                                                        \
  do {                                                                          \
    if (!(cond)) {                                                              \
      ++g_failures;                                                             \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                             \
      fprintf(stderr, "\n");                                                    \
    }                                                                           \
  } while (0)
#define REQUIRE_OK(expr)                                                                               \
  do {                                                                                                 \
    if ((expr) != INGOT_OK) {                                                                          \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, ingot_compiler_error());    \
      exit(1);                                                                                         \
    }                                                                                                  \
  } while (0)

static void serial_for(void* pool, int64_t count, ingot_parallel_body_fn_t body, void* ctx) {
  (void)pool;
  body(ctx, 0, count);
}

static const char* g_target = "c";

/* Builds `f` for g_target, loads it, runs its single kernel on args. */
static void build_and_run(ingot_ir_func_t* f, void** args) {
  ingot_target_t target;
  REQUIRE_OK(ingot_target_parse(g_target, &target));
  uint8_t* object = NULL;
  size_t size = 0;
  REQUIRE_OK(ingot_codegen_build(&f, 1, &target, NULL, NULL, &object, &size));
  char path[] = "/tmp/ingot-test-math-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0 || write(fd, object, size) != (ssize_t)size) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(1);
  }
  close(fd);
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    exit(1);
  }
  ingot_library_query_fn_t q = (ingot_library_query_fn_t)dlsym(h, INGOT_LIBRARY_QUERY_SYMBOL);
  const ingot_kernel_library_t* lib = q ? q(INGOT_KERNEL_ABI_VERSION) : NULL;
  CHECK(lib && lib->kernel_count == 1, "library table");
  if (lib) {
    ingot_kernel_env_t env;
    memset(&env, 0, sizeof(env));
    env.abi_version = INGOT_KERNEL_ABI_VERSION;
    env.thread_count = 1;
    env.parallel_for = serial_for;
    env.expf = expf;
    env.logf = logf;
    env.tanhf = tanhf;
    env.erff = erff;
    env.powf = powf;
    CHECK(lib->kernels[0].fn(&env, (void* const*)args) == 0, "kernel return");
  }
  dlclose(h);
  unlink(path);
  free(object);
}

/* ---- inputs: a dense sweep, a log sweep of both signs, specials ---- */

enum { kN = 60000 };
static double g_x[kN];

static void make_inputs(void) {
  int n = 0;
  for (; n < 20000; ++n) g_x[n] = -12.0 + 24.0 * n / 20000.0;
  for (; n < 24000; ++n) g_x[n] = -1.2 + 2.4 * (n - 20000) / 4000.0;
  for (int q = 0; n < kN - 16; ++n, ++q) g_x[n] = (q & 1 ? -1.0 : 1.0) * pow(10.0, -30.0 + 60.0 * (q / 2) / 18000.0);
  const double specials[16] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 3.5,
                               88.0, -100.0, 1e-40, 710.0};
  for (int k = 0; k < 16; ++k) g_x[n++] = specials[k];
}

static double ulps(double got, double want, bool f32) {
  if (isnan(want)) return isnan(got) ? 0 : 1e30;
  if (isinf(want) || isinf(got)) return got == want ? 0 : 1e30;
  double ulp = f32 ? fabs((double)nextafterf((float)want, INFINITY) - want) : fabs(nextafter(want, INFINITY) - want);
  double floor_ulp = f32 ? 0x1p-149 : 0x1p-1074;
  if (ulp < floor_ulp) ulp = floor_ulp;
  return fabs(got - want) / ulp;
}

typedef struct unary_case_t {
  const char* name;
  ingot_ir_unary_op_t op;
  double (*ref)(double);
  double limit_f32, limit_f64; /* ulps */
  double lo, hi;               /* inputs outside are skipped (domain / reduction range) */
} unary_case_t;

static double ref_round(double x) { return nearbyint(x); }

static const unary_case_t kCases[] = {
    {"round", INGOT_IR_ROUND, ref_round, 0, 0, -1e300, 1e300},
    {"sin", INGOT_IR_SIN, sin, 1, 4, -1e5, 1e5},
    {"cos", INGOT_IR_COS, cos, 1, 4, -1e5, 1e5},
    {"tan", INGOT_IR_TAN, tan, 1, 6, -1e5, 1e5},
    {"asin", INGOT_IR_ASIN, asin, 1, 6, -1e300, 1e300},
    {"acos", INGOT_IR_ACOS, acos, 1, 6, -1e300, 1e300},
    {"atan", INGOT_IR_ATAN, atan, 1, 4, -1e300, 1e300},
    {"sinh", INGOT_IR_SINH, sinh, 1, 6, -1e300, 1e300},
    {"cosh", INGOT_IR_COSH, cosh, 1, 6, -1e300, 1e300},
    {"asinh", INGOT_IR_ASINH, asinh, 1, 6, -1e300, 1e300},
    {"acosh", INGOT_IR_ACOSH, acosh, 1, 6, -1e300, 1e300},
    {"atanh", INGOT_IR_ATANH, atanh, 1, 8, -1e300, 1e300},
    {"exp", INGOT_IR_EXP, exp, 2, 4, -1e300, 1e300},
    {"log", INGOT_IR_LOG, log, 2, 4, -1e300, 1e300},
    {"tanh", INGOT_IR_TANH, tanh, 2, 10, -1e300, 1e300},
    {"erf", INGOT_IR_ERF, erf, 2, 40, -1e300, 1e300},
};
enum { kCases_ = sizeof(kCases) / sizeof(kCases[0]) };

/* One kernel computing every case over x, in `dtype`. */
static void test_unary(ingot_dtype_t dtype) {
  bool f32 = dtype == INGOT_DTYPE_F32;
  size_t es = f32 ? 4 : 8;
  ingot_ir_func_t* f = ingot_ir_func_create(f32 ? "math_f32" : "math_f64");
  int64_t dims[1] = {kN};
  uint32_t x = ingot_ir_add_buffer(f, "x", dtype, INGOT_IR_BUFFER_INPUT, 1, dims);
  uint32_t outs[kCases_];
  for (int k = 0; k < kCases_; ++k) outs[k] = ingot_ir_add_buffer(f, kCases[k].name, dtype, INGOT_IR_BUFFER_OUTPUT, 1, dims);
  uint32_t i = ingot_ir_add_var(f, "i", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  ingot_ir_expr_t* xi = ingot_ir_load(f, x, ingot_ir_var(f, i));
  ingot_ir_stmt_t* stores[kCases_];
  for (int k = 0; k < kCases_; ++k)
    stores[k] = ingot_ir_store(f, outs[k], ingot_ir_var(f, i), ingot_ir_unary(f, kCases[k].op, xi));
  f->body = ingot_ir_for(f, i, kN, ingot_ir_block(f, stores, kCases_));
  REQUIRE_OK(ingot_ir_verify(f));

  void* args[1 + kCases_];
  void* ref_args[1 + kCases_];
  args[0] = ref_args[0] = malloc(es * kN);
  for (int n = 0; n < kN; ++n) {
    if (f32) ((float*)args[0])[n] = (float)g_x[n];
    else ((double*)args[0])[n] = g_x[n];
  }
  for (int k = 0; k < kCases_; ++k) {
    args[1 + k] = calloc(kN, es);
    ref_args[1 + k] = calloc(kN, es);
  }
  build_and_run(f, args);
  REQUIRE_OK(ingot_ir_interpret(f, ref_args));

  for (int k = 0; k < kCases_; ++k) {
    const unary_case_t* c = &kCases[k];
    double worst = 0, worst_x = 0, worst_got = 0;
    int interp_bad = 0;
    for (int n = 0; n < kN; ++n) {
      double xv = f32 ? (double)((float*)args[0])[n] : ((double*)args[0])[n];
      if (!(xv >= c->lo && xv <= c->hi) && !isnan(xv) && !isinf(xv)) continue;
      if (isinf(xv) && (c->op == INGOT_IR_SIN || c->op == INGOT_IR_COS || c->op == INGOT_IR_TAN)) {
        /* sin(inf) is NaN; checked below with the rest. */
      }
      double got = f32 ? (double)((float*)args[1 + k])[n] : ((double*)args[1 + k])[n];
      double ref = f32 ? (double)((float*)ref_args[1 + k])[n] : ((double*)ref_args[1 + k])[n];
      double want = f32 ? (double)(float)c->ref(xv) : c->ref(xv); /* f32: libm in double, rounded */
      double e = ulps(got, want, f32);
      if (e > worst) {
        worst = e;
        worst_x = xv;
        worst_got = got;
      }
      if (ulps(got, ref, f32) > (f32 ? 2 : 64)) ++interp_bad;
    }
    double limit = f32 ? c->limit_f32 : c->limit_f64;
    CHECK(worst <= limit, "%s %s: %g ulp at x=%.17g (got %.17g, libm %.17g)", c->name, f32 ? "f32" : "f64", worst,
          worst_x, worst_got, c->ref(worst_x));
    CHECK(interp_bad == 0, "%s %s: %d results differ from the interpreter", c->name, f32 ? "f32" : "f64", interp_bad);
    printf("  %-6s %s max error %.3g ulp\n", c->name, f32 ? "f32" : "f64", worst);
  }
  for (int k = 0; k < 1 + kCases_; ++k) {
    free(args[k]);
    if (k) free(ref_args[k]);
  }
  ingot_ir_func_destroy(f);
}

/* float64 fmod and pow, and round's ties. */
static void test_binary_f64(void) {
  enum { kM = 4000 };
  ingot_ir_func_t* f = ingot_ir_func_create("bin_f64");
  int64_t dims[1] = {kM};
  uint32_t a = ingot_ir_add_buffer(f, "a", INGOT_DTYPE_F64, INGOT_IR_BUFFER_INPUT, 1, dims);
  uint32_t b = ingot_ir_add_buffer(f, "b", INGOT_DTYPE_F64, INGOT_IR_BUFFER_INPUT, 1, dims);
  uint32_t m = ingot_ir_add_buffer(f, "m", INGOT_DTYPE_F64, INGOT_IR_BUFFER_OUTPUT, 1, dims);
  uint32_t p = ingot_ir_add_buffer(f, "p", INGOT_DTYPE_F64, INGOT_IR_BUFFER_OUTPUT, 1, dims);
  uint32_t i = ingot_ir_add_var(f, "i", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  ingot_ir_expr_t* ai = ingot_ir_load(f, a, ingot_ir_var(f, i));
  ingot_ir_expr_t* bi = ingot_ir_load(f, b, ingot_ir_var(f, i));
  ingot_ir_stmt_t* st[2] = {ingot_ir_store(f, m, ingot_ir_var(f, i), ingot_ir_binary(f, INGOT_IR_MOD, ai, bi)),
                            ingot_ir_store(f, p, ingot_ir_var(f, i), ingot_ir_binary(f, INGOT_IR_POW, ai, bi))};
  f->body = ingot_ir_for(f, i, kM, ingot_ir_block(f, st, 2));
  static double in_a[kM], in_b[kM], out_m[kM], out_p[kM];
  const double specials[][2] = {{2, 10},     {-2, 3},      {-2, 0.5}, {0, -1},   {-0.0, -3},       {0, 0},
                                {NAN, 0},    {1, NAN},     {-8, 1.0 / 3}, {3, -2}, {-1, INFINITY}, {0.5, -INFINITY},
                                {-INFINITY, 3}, {-INFINITY, 2}, {5.5, 2}, {-5.5, 2}, {1e300, 3},    {7, -3}};
  int ns = sizeof(specials) / sizeof(specials[0]);
  for (int k = 0; k < kM; ++k) {
    if (k < ns) {
      in_a[k] = specials[k][0];
      in_b[k] = specials[k][1];
    } else {
      in_a[k] = (k % 2 ? -1 : 1) * (0.001 + 37.0 * (k % 97) / 97.0);
      in_b[k] = (k % 3 ? 1 : -1) * (0.25 * (k % 13) + (k % 5) * 0.1);
    }
  }
  void* args[4] = {in_a, in_b, out_m, out_p};
  build_and_run(f, args);
  double worst_p = 0;
  for (int k = 0; k < kM; ++k) {
    double wm = fmod(in_a[k], in_b[k]), wp = pow(in_a[k], in_b[k]);
    CHECK((isnan(wm) && isnan(out_m[k])) || (wm == out_m[k] && signbit(wm) == signbit(out_m[k])),
          "fmod(%.17g, %.17g) = %.17g, libm %.17g", in_a[k], in_b[k], out_m[k], wm);
    double e = ulps(out_p[k], wp, false);
    if (e > worst_p) worst_p = e;
    CHECK(e <= 64, "pow(%.17g, %.17g) = %.17g, libm %.17g", in_a[k], in_b[k], out_p[k], wp);
  }
  printf("  fmod   f64 exact; pow f64 max error %.3g ulp\n", worst_p);
  ingot_ir_func_destroy(f);
}

/* argv[1]: the target (default "c"; "llvm" checks that target's math). */
int main(int argc, char** argv) {
  if (argc > 1) g_target = argv[1];
  make_inputs();
  test_unary(INGOT_DTYPE_F32);
  test_unary(INGOT_DTYPE_F64);
  test_binary_f64();
  if (g_failures) {
    fprintf(stderr, "%d failure(s)\n", g_failures);
    return 1;
  }
  printf("ok\n");
  return 0;
}
