/* Targets `cuda` and `rocm`: CUDA C (compiled by NVRTC) and HIP (compiled by
 * hiprtc) from the loop IR, by one printer; the dialects differ only in the
 * module's first lines (HIP includes hip/hip_runtime.h).
 *
 * Why source through the vendors' runtime compilers and not LLVM: LLVM 14
 * (the llvm target's) writes PTX for sm_90 that ptxas rejects and has no
 * gfx942; NVRTC and hiprtc compile for every architecture their toolkit
 * knows, need no GPU, and are loaded with dlopen (codegen_gpu_rtc.c).
 *
 * Each IR function becomes one kernel, in module order:
 *   extern "C" __global__ void __launch_bounds__(THREADS)
 *   NAME(const T0* __restrict__ b_0, T1* __restrict__ b_1, ...)
 * NAME is the function's name (a C identifier: the loaders look kernels up by
 * it); the parameters are its parameter buffers in order, INPUT ones const.
 * __restrict__ on all of them: the buffers of one step never overlap (the
 * memory plan gives tensors live at the same step disjoint ranges; the C
 * target's `restrict` makes the same promise).
 *
 * The rules (what ingot_codegen_gpu_launches reports is computed by
 * gpu_plan() below, which the printer uses too):
 *  1. Launch sizes. block[a] is the largest extent of the GPU_THREAD loops on
 *     axis a (1 if none), grid[a] the same for GPU_BLOCK loops. Caps: grid x
 *     2^31-1, y and z 65535; block x and y 1024, z 64, and block x*y*z at
 *     most target->gpu.max_threads_per_block: while the product is above it
 *     the largest block axis (x first on ties) shrinks to what fits beside
 *     the others (rounded down to a multiple of the warp size when at least
 *     one warp), or to its half (rounded up) when nothing fits. A
 *     function without GPU loops runs on one thread (grid 1, block 1).
 *  2. A bound loop of extent E on an axis of launch size L (idx: blockIdx.a
 *     for GPU_BLOCK, threadIdx.a for GPU_THREAD):
 *       E == L:  v = idx
 *       E <  L:  v = idx, and the body runs under `if (v < E)` (a guard)
 *       E >  L:  for (v = idx; v < E; v += L)   (grid- / block-stride loop)
 *  3. Code outside every GPU_THREAD loop runs on every thread of the block,
 *     and code outside every GPU_BLOCK loop in every block: locals,
 *     conditions and serial loops there compute the same values on each
 *     thread. A STORE is made by exactly one thread for each iteration of
 *     the bound loops around it: it runs under `threadIdx.a == 0` for each
 *     axis a with block[a] > 1 that no enclosing GPU_THREAD loop binds, and
 *     `blockIdx.a == 0` for each axis with grid[a] > 1 that no enclosing
 *     GPU_BLOCK loop binds. Other threads of the block see such a store
 *     only after a BARRIER, other blocks only in a later kernel: blocks
 *     never wait for each other, so a block loop nested in a serial one must
 *     not read what another block wrote in an earlier iteration (the IR's
 *     promise that bound loops have independent iterations).
 *  4. A bound loop whose body assigns a local declared outside it is
 *     refused: every thread would update its own copy (a reduction bound to
 *     threads; stage it through a SHARED buffer instead).
 *  5. BARRIER -> __syncthreads(). The verifier keeps barriers outside
 *     GPU_THREAD loops, so only block-uniform code (rule 3; guards and
 *     strides of block loops are uniform over a block) surrounds them and
 *     every thread of a block reaches each one.
 *  6. SHARED buffers -> `__shared__ T s_name[numel]` at the kernel's top:
 *     static, so the launch's shared_bytes is 0; their bytes together must
 *     fit target->gpu.shared_bytes_per_block. They start undefined (the
 *     interpreter zeroes them): a kernel writes before it reads.
 *  7. ingot_codegen_prepare turned PARALLEL and VECTORIZED loops SERIAL
 *     (INGOT_CODEGEN_VECTOR_NONE); UNROLLED loops get `#pragma unroll`,
 *     SERIAL ones are plain `for` loops. Loop variables are 64-bit.
 *  8. Expressions keep the C target's semantics (codegen_c.c): integer
 *     division and modulo floor (helpers; by 0 they give 0), except a
 *     non-negative dividend over a positive constant, which uses / and %;
 *     int8/uint8 arithmetic converts back to its type; float min/max return
 *     the other operand when one is NaN; pow(x, 1) = x, pow(x, 2) = x*x,
 *     otherwise powf / pow; round is rintf / rint (ties to even); floor,
 *     ceil and round of an integer are the identity; and/or of bools.
 *     Float to integer casts go through int64 as the IR interpreter does
 *     (NaN -> 0, out of range -> INT64_MIN / INT64_MAX, then wrapped to the
 *     type; the C target leaves that case to C). Math calls are the device
 *     library's (expf, tanhf, erff, ...; NVRTC's defaults: IEEE division and
 *     sqrt, no fast math), a few ulp from the C target's own.
 *  9. Dtypes: float32, float64, int8, uint8, int32, int64, bool. float16 is
 *     refused with a message (half-precision GPU code is a later step). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen_gpu_rtc.h"
#include "codegen_internal.h"

typedef enum gpu_dialect_t { GPU_CUDA = 1, GPU_HIP = 2 } gpu_dialect_t;

enum {
  kGridMaxX = 2147483647,
  kGridMaxYZ = 65535,
  kBlockMaxXY = 1024,
  kBlockMaxZ = 64,
};

/* ---- The launch of one function (rules 1, 4 and 6). */
typedef struct gpu_plan_t {
  uint32_t grid[3], block[3];
  uint64_t shared_bytes;    /* static __shared__ arrays, together */
  bool any_gpu_loop;
} gpu_plan_t;

static const char* gpu_target_name(const ingot_target_t* t) {
  return t && t->name[0] ? t->name : (t && t->kind == INGOT_TARGET_ROCM ? "rocm" : "cuda");
}

/* The parameters: every buffer before the first SHARED one. */
static uint32_t gpu_param_count(const ingot_ir_func_t* f) { return ingot_ir_param_count(f); }

typedef struct plan_walk_t {
  const ingot_ir_func_t* f;
  int64_t block_max[3], grid_max[3];
  ingot_status_t status;
} plan_walk_t;

static void plan_stmt(plan_walk_t* w, const ingot_ir_stmt_t* s) {
  if (!s || w->status != INGOT_OK) return;
  switch (s->kind) {
    case INGOT_IR_STMT_FOR: {
      ingot_ir_loop_kind_t k = s->u.loop.loop_kind;
      if (k == INGOT_IR_LOOP_GPU_BLOCK || k == INGOT_IR_LOOP_GPU_THREAD) {
        uint32_t a = s->u.loop.gpu_axis % 3;
        int64_t* m = k == INGOT_IR_LOOP_GPU_BLOCK ? w->grid_max : w->block_max;
        if (s->u.loop.extent > m[a]) m[a] = s->u.loop.extent;
        /* Rule 4. */
        const ingot_ir_func_t* f = w->f;
        ingot_ir_uses_t u;
        ingot_ir_uses_collect(f, s->u.loop.body, &u);
        for (uint32_t v = 0; v < f->var_count; ++v) {
          if (u.assigned[v] && !u.declared[v]) {
            w->status = ingot_fail(
                INGOT_ERROR_UNSUPPORTED,
                "function '%s': loop '%s' is bound to a GPU's %s (axis %c) but assigns local '%s', declared "
                "outside it: each %s would keep its own copy (stage a reduction through a SHARED buffer)",
                f->name, f->vars[s->u.loop.var].name, k == INGOT_IR_LOOP_GPU_BLOCK ? "blocks" : "threads",
                "xyz"[a], f->vars[v].name, k == INGOT_IR_LOOP_GPU_BLOCK ? "block" : "thread");
            break;
          }
        }
        ingot_ir_uses_free(&u);
      }
      plan_stmt(w, s->u.loop.body);
      return;
    }
    case INGOT_IR_STMT_BLOCK:
      for (uint32_t i = 0; i < s->u.block.count; ++i) plan_stmt(w, s->u.block.stmts[i]);
      return;
    case INGOT_IR_STMT_IF: plan_stmt(w, s->u.cond.then_body); return;
    default: return;
  }
}

static bool gpu_target_ok(const ingot_target_t* target) {
  return target && (target->kind == INGOT_TARGET_CUDA || target->kind == INGOT_TARGET_ROCM) &&
         target->gpu.max_threads_per_block > 0 && target->gpu.shared_bytes_per_block > 0;
}

static ingot_status_t gpu_target_check(const ingot_target_t* target, const char* what) {
  if (!target || (target->kind != INGOT_TARGET_CUDA && target->kind != INGOT_TARGET_ROCM))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "%s: target '%s' is not a GPU target (cuda, rocm)", what,
                      target ? target->name : "(none)");
  if (!gpu_target_ok(target))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                      "%s: target '%s' has no GPU facts (max threads per block %u, shared bytes %u)", what,
                      target->name, target->gpu.max_threads_per_block, target->gpu.shared_bytes_per_block);
  return INGOT_OK;
}

static ingot_status_t gpu_plan(const ingot_ir_func_t* f, const ingot_target_t* target, gpu_plan_t* out) {
  memset(out, 0, sizeof(*out));
  plan_walk_t w = {.f = f, .status = INGOT_OK};
  for (int a = 0; a < 3; ++a) w.block_max[a] = w.grid_max[a] = 0;
  plan_stmt(&w, f->body);
  if (w.status != INGOT_OK) return w.status;
  for (int a = 0; a < 3; ++a) {
    if (w.block_max[a] || w.grid_max[a]) out->any_gpu_loop = true;
    int64_t gmax = a == 0 ? kGridMaxX : kGridMaxYZ;
    int64_t bmax = a == 2 ? kBlockMaxZ : kBlockMaxXY;
    int64_t g = w.grid_max[a] ? w.grid_max[a] : 1, b = w.block_max[a] ? w.block_max[a] : 1;
    out->grid[a] = (uint32_t)(g < gmax ? g : gmax);
    out->block[a] = (uint32_t)(b < bmax ? b : bmax);
  }
  uint64_t limit = target->gpu.max_threads_per_block;
  uint64_t warp = target->gpu.warp_size ? target->gpu.warp_size : 1;
  while ((uint64_t)out->block[0] * out->block[1] * out->block[2] > limit) {
    int big = 0;
    for (int a = 1; a < 3; ++a)
      if (out->block[a] > out->block[big]) big = a;
    uint64_t others = (uint64_t)out->block[0] * out->block[1] * out->block[2] / out->block[big];
    uint64_t fit = limit / others;
    if (fit >= warp) fit -= fit % warp;
    out->block[big] = fit >= 1 && fit < out->block[big] ? (uint32_t)fit : (out->block[big] + 1) / 2;
  }
  for (uint32_t i = gpu_param_count(f); i < f->buffer_count; ++i) {
    int64_t n = ingot_ir_buffer_numel(&f->buffers[i]);
    out->shared_bytes += (uint64_t)(n > 0 ? n : 0) * ingot_dtype_size(f->buffers[i].dtype);
  }
  if (out->shared_bytes > target->gpu.shared_bytes_per_block)
    return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                      "function '%s': its SHARED buffers take %llu bytes, more than the %u bytes a block of "
                      "target '%s' may use",
                      f->name, (unsigned long long)out->shared_bytes, target->gpu.shared_bytes_per_block,
                      gpu_target_name(target));
  return INGOT_OK;
}

ingot_status_t ingot_codegen_gpu_launches(ingot_ir_func_t* const* funcs, uint32_t count,
                                          const ingot_target_t* target, ingot_launch_record_t* out_launches) {
  if ((count && (!funcs || !out_launches)))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "codegen gpu launches: missing functions or output");
  ingot_status_t st = gpu_target_check(target, "codegen gpu launches");
  if (st != INGOT_OK) return st;
  for (uint32_t i = 0; i < count; ++i) {
    memset(&out_launches[i], 0, sizeof(out_launches[i]));
    if (!funcs[i] || !funcs[i]->body)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "codegen %s: function %u is incomplete",
                        target->kind == INGOT_TARGET_ROCM ? "rocm" : "cuda", i);
    st = ingot_ir_verify(funcs[i]);
    if (st != INGOT_OK) return ingot_fail_prefix(st, "codegen %s", target->kind == INGOT_TARGET_ROCM ? "rocm" : "cuda");
    gpu_plan_t plan;
    st = gpu_plan(funcs[i], target, &plan);
    if (st != INGOT_OK) return ingot_fail_prefix(st, "codegen %s", target->kind == INGOT_TARGET_ROCM ? "rocm" : "cuda");
    out_launches[i].kernel = i;
    out_launches[i].shared_bytes = 0;
    memcpy(out_launches[i].grid, plan.grid, sizeof(plan.grid));
    memcpy(out_launches[i].block, plan.block, sizeof(plan.block));
  }
  return INGOT_OK;
}

/* ---- The module's first lines. Helpers are static device functions named
 * ingot_gpu_*; kernels may not take such names. */
static const char k_prelude[] =
    "typedef signed char ingot_gpu_i8;\n"
    "typedef unsigned char ingot_gpu_u8;\n"
    "typedef int ingot_gpu_i32;\n"
    "typedef long long ingot_gpu_i64;\n"
    "typedef short ingot_gpu_i16;\n"
    "typedef unsigned short ingot_gpu_u16;\n"
    "typedef unsigned int ingot_gpu_u32;\n"
    "typedef unsigned long long ingot_gpu_u64;\n"
    "#define INGOT_GPU_FN static __device__ __forceinline__\n"
    "INGOT_GPU_FN float ingot_gpu_u2f(unsigned int u) { return __int_as_float((int)u); }\n"
    "INGOT_GPU_FN unsigned int ingot_gpu_f2u(float f) { return (unsigned int)__float_as_int(f); }\n"
    "INGOT_GPU_FN float ingot_gpu_h2f(unsigned short h) {\n"
    "  unsigned int sign = (unsigned int)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;\n"
    "  if (e == 0) return ingot_gpu_u2f(ingot_gpu_f2u((float)m * 5.9604644775390625e-8f) | sign);\n"
    "  if (e == 31) return ingot_gpu_u2f(sign | 0x7f800000u | (m << 13));\n"
    "  return ingot_gpu_u2f(sign | ((e + 112u) << 23) | (m << 13));\n"
    "}\n"
    "INGOT_GPU_FN unsigned short ingot_gpu_f2h(float f) {\n"
    "  unsigned int u = ingot_gpu_f2u(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;\n"
    "  if (a >= 0x7f800000u) return (unsigned short)(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0u));\n"
    "  if (a >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);\n"
    "  if (a < 0x38800000u) {\n"
    "    float v = ingot_gpu_u2f(a) * 16777216.0f;\n"
    "    v = (v + 8388608.0f) - 8388608.0f; /* to an integer, ties to even (no fast math) */\n"
    "    return (unsigned short)(sign | (unsigned int)v);\n"
    "  }\n"
    "  a += 0xfffu + ((a >> 13) & 1u);\n"
    "  return (unsigned short)(sign | ((a - 0x38000000u) >> 13));\n"
    "}\n"
    "INGOT_GPU_FN float ingot_gpu_bf2f(unsigned short b) { return ingot_gpu_u2f((unsigned int)b << 16); }\n"
    "INGOT_GPU_FN unsigned short ingot_gpu_f2bf(float f) {\n"
    "  unsigned int u = ingot_gpu_f2u(f);\n"
    "  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);\n"
    "  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
    "}\n"
    "/* Integer division and modulo rounding toward negative infinity; by 0: 0. */\n"
    "INGOT_GPU_FN long long ingot_gpu_floordiv(long long a, long long b) {\n"
    "  if (b == 0) return 0;\n"
    "  if (b == -1) return (long long)(0ull - (unsigned long long)a);\n"
    "  long long q = a / b, r = a % b;\n"
    "  return q - (long long)((r != 0) & ((r ^ b) < 0));\n"
    "}\n"
    "INGOT_GPU_FN long long ingot_gpu_floormod(long long a, long long b) {\n"
    "  if (b == 0 || b == -1) return 0;\n"
    "  long long r = a % b;\n"
    "  return r + (((r != 0) & ((r ^ b) < 0)) ? b : 0);\n"
    "}\n"
    "INGOT_GPU_FN long long ingot_gpu_ipow(long long a, long long b) {\n"
    "  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;\n"
    "  unsigned long long r = 1, x = (unsigned long long)a;\n"
    "  while (b) { if (b & 1) r *= x; x *= x; b >>= 1; }\n"
    "  return (long long)r;\n"
    "}\n"
    "INGOT_GPU_FN long long ingot_gpu_min_i64(long long a, long long b) { return a < b ? a : b; }\n"
    "INGOT_GPU_FN long long ingot_gpu_max_i64(long long a, long long b) { return a > b ? a : b; }\n"
    "INGOT_GPU_FN long long ingot_gpu_abs_i64(long long a) { return a < 0 ? (long long)(0ull - (unsigned long long)a) : a; }\n"
    "INGOT_GPU_FN long long ingot_gpu_dot4(long long a, long long b) {\n"
    "  long long s = 0;\n"
    "  for (int j = 0; j < 32; j += 8)\n"
    "    s += (long long)(unsigned char)((unsigned long long)a >> j) * (signed char)(unsigned char)((unsigned long long)b >> j);\n"
    "  return s;\n"
    "}\n"
    "INGOT_GPU_FN long long ingot_gpu_dot2(long long a, long long b) {\n"
    "  return (long long)(short)(unsigned short)((unsigned long long)a) * (short)(unsigned short)((unsigned long long)b) +\n"
    "         (long long)(short)(unsigned short)((unsigned long long)a >> 16) * (short)(unsigned short)((unsigned long long)b >> 16);\n"
    "}\n"
    "/* fmin / fmax semantics: a NaN operand yields the other one. */\n"
    "INGOT_GPU_FN float ingot_gpu_fminf(float a, float b) { return (a < b || b != b) ? a : b; }\n"
    "INGOT_GPU_FN float ingot_gpu_fmaxf(float a, float b) { return (a > b || b != b) ? a : b; }\n"
    "INGOT_GPU_FN double ingot_gpu_fmin(double a, double b) { return (a < b || b != b) ? a : b; }\n"
    "INGOT_GPU_FN double ingot_gpu_fmax(double a, double b) { return (a > b || b != b) ? a : b; }\n"
    "/* Float to integer as the IR interpreter converts: NaN 0, saturated to int64. */\n"
    "INGOT_GPU_FN long long ingot_gpu_f2i(double v) {\n"
    "  return v != v ? 0 : v >= 9.2233720368547758e18 ? 9223372036854775807LL\n"
    "       : v <= -9.2233720368547758e18 ? (-9223372036854775807LL - 1) : (long long)v;\n"
    "}\n"
    "INGOT_GPU_FN float ingot_gpu_sqf(float a) { return a * a; }\n"
    "INGOT_GPU_FN double ingot_gpu_sq(double a) { return a * a; }\n"
    "INGOT_GPU_FN float ingot_gpu_inff(void) { return __int_as_float(0x7f800000); }\n"
    "INGOT_GPU_FN float ingot_gpu_nanf(void) { return __int_as_float(0x7fc00000); }\n"
    "INGOT_GPU_FN double ingot_gpu_inf(void) { return __longlong_as_double(0x7ff0000000000000LL); }\n"
    "INGOT_GPU_FN double ingot_gpu_nan(void) { return __longlong_as_double(0x7ff8000000000000LL); }\n"
    "\n";

/* ---- Printer state for one function. */
typedef struct gp_t {
  ingot_cprint_t p; /* names, scopes, expressions */
  const ingot_target_t* target;
  gpu_dialect_t dialect;
  gpu_plan_t plan;
  uint32_t bound_blocks, bound_threads;  /* axes bound by enclosing loops (bit per axis) */
} gp_t;

#define GP_PAIR(fn) \
  { fn "f", fn }

/* How CUDA C and HIP spell what expressions need (codegen_cprint.c prints
 * them): the device math library, the prelude's ingot_gpu_* helpers. */
#define GP_DIALECT(TARGET)                                                                                             \
  {                                                                                                                    \
    .target = TARGET,                                                                                                  \
    .types =                                                                                                           \
        {[INGOT_DTYPE_F32] = "float",       [INGOT_DTYPE_F64] = "double",        [INGOT_DTYPE_I8] = "ingot_gpu_i8",    \
         [INGOT_DTYPE_U8] = "ingot_gpu_u8", [INGOT_DTYPE_I32] = "ingot_gpu_i32", [INGOT_DTYPE_I64] = "ingot_gpu_i64",  \
         [INGOT_DTYPE_BOOL] = "bool",       [INGOT_DTYPE_I16] = "ingot_gpu_i16", [INGOT_DTYPE_U16] = "ingot_gpu_u16", \
         [INGOT_DTYPE_U32] = "ingot_gpu_u32", [INGOT_DTYPE_U64] = "ingot_gpu_u64",                                   \
         [INGOT_DTYPE_F16] = "ingot_gpu_u16", [INGOT_DTYPE_BF16] = "ingot_gpu_u16"},                                  \
    .f16_note = "yet (half-precision kernels are a later step); compute in float32",                                   \
    .unary =                                                                                                           \
        {[INGOT_IR_ABS] = GP_PAIR("fabs"),    [INGOT_IR_SQRT] = GP_PAIR("sqrt"),  [INGOT_IR_FLOOR] = GP_PAIR("floor"), \
         [INGOT_IR_CEIL] = GP_PAIR("ceil"),   [INGOT_IR_ROUND] = GP_PAIR("rint"), [INGOT_IR_EXP] = GP_PAIR("exp"),     \
         [INGOT_IR_LOG] = GP_PAIR("log"),     [INGOT_IR_TANH] = GP_PAIR("tanh"),  [INGOT_IR_ERF] = GP_PAIR("erf"),     \
         [INGOT_IR_SIN] = GP_PAIR("sin"),     [INGOT_IR_COS] = GP_PAIR("cos"),    [INGOT_IR_TAN] = GP_PAIR("tan"),     \
         [INGOT_IR_ASIN] = GP_PAIR("asin"),   [INGOT_IR_ACOS] = GP_PAIR("acos"),  [INGOT_IR_ATAN] = GP_PAIR("atan"),   \
         [INGOT_IR_SINH] = GP_PAIR("sinh"),   [INGOT_IR_COSH] = GP_PAIR("cosh"),  [INGOT_IR_ASINH] = GP_PAIR("asinh"), \
         [INGOT_IR_ACOSH] = GP_PAIR("acosh"), [INGOT_IR_ATANH] = GP_PAIR("atanh")},                                    \
    .binary = {[INGOT_IR_MOD] = GP_PAIR("fmod"),                                                                       \
               [INGOT_IR_MIN] = GP_PAIR("ingot_gpu_fmin"),                                                             \
               [INGOT_IR_MAX] = GP_PAIR("ingot_gpu_fmax"),                                                             \
               [INGOT_IR_POW] = GP_PAIR("pow")},                                                                       \
    .square = GP_PAIR("ingot_gpu_sq"), .nan = {"ingot_gpu_nanf()", "ingot_gpu_nan()"},                                 \
    .inf = {"ingot_gpu_inff()", "ingot_gpu_inf()"}, .int_helper = "ingot_gpu_", .float_to_int = "ingot_gpu_f2i",       \
    .lazy_logic = true,                                                                                                \
  }
static const ingot_cprint_dialect_t k_cuda_dialect = GP_DIALECT("cuda");
static const ingot_cprint_dialect_t k_hip_dialect = GP_DIALECT("rocm");
#undef GP_DIALECT

#define GP_CHECK(expr)               \
  do {                               \
    ingot_status_t st_ = (expr);     \
    if (st_ != INGOT_OK) return st_; \
  } while (0)

/* Kernel names are the functions' own (the loaders look them up). */
static bool gp_identifier_ok(const char* s) {
  if (!s || !*s || (*s >= '0' && *s <= '9')) return false;
  for (const char* p = s; *p; ++p) {
    char c = *p;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  /* (Parameters and variables are b_*, s_*, v_*: inside a kernel they
   * shadow nothing but its own name.) */
  return strncmp(s, "ingot_gpu_", 10) != 0 && strncmp(s, "__", 2) != 0;
}

/* ---- Statements. */
static ingot_status_t gp_stmt(gp_t* g, ingot_strbuf_t* sb, const ingot_ir_stmt_t* s, int depth);

/* `s` as the contents of a C block (a BLOCK's statements inline). */
static ingot_status_t gp_body(gp_t* g, ingot_strbuf_t* sb, const ingot_ir_stmt_t* s, int depth) {
  size_t mark = g->p.scope.count;
  ingot_status_t st = INGOT_OK;
  if (s && s->kind == INGOT_IR_STMT_BLOCK) {
    for (uint32_t i = 0; i < s->u.block.count && st == INGOT_OK; ++i) st = gp_stmt(g, sb, s->u.block.stmts[i], depth);
  } else {
    st = gp_stmt(g, sb, s, depth);
  }
  ingot_cprint_scope_pop(&g->p, mark);
  return st;
}

/* A loop bound to blocks or threads (rule 2). */
static ingot_status_t gp_bound_loop(gp_t* g, ingot_strbuf_t* sb, const ingot_ir_stmt_t* s, int depth) {
  bool block = s->u.loop.loop_kind == INGOT_IR_LOOP_GPU_BLOCK;
  uint32_t a = s->u.loop.gpu_axis % 3;
  char axis = "xyz"[a];
  int64_t extent = s->u.loop.extent;
  int64_t launch = block ? g->plan.grid[a] : g->plan.block[a];
  const char* idx = block ? "blockIdx" : "threadIdx";
  const char* v = g->p.var_names[s->u.loop.var];
  uint32_t* mask = block ? &g->bound_blocks : &g->bound_threads;
  uint32_t saved = *mask;
  *mask |= 1u << a;
  ingot_cprint_indent(sb, depth);
  int inner = depth + 1;
  if (extent > launch) {
    ingot_strbuf_appendf(sb, "for (long long %s = (long long)%s.%c; %s < %lldLL; %s += %lldLL) {  /* %s stride */\n",
                         v, idx, axis, v, (long long)extent, v, (long long)launch, block ? "grid" : "block");
  } else {
    ingot_strbuf_appendf(sb, "{\n");
    ingot_cprint_indent(sb, depth + 1);
    ingot_strbuf_appendf(sb, "const long long %s = (long long)%s.%c;\n", v, idx, axis);
    if (extent < launch) {
      ingot_cprint_indent(sb, depth + 1);
      ingot_strbuf_appendf(sb, "if (%s < %lldLL) {\n", v, (long long)extent);
      inner = depth + 2;
    }
  }
  size_t mark = g->p.scope.count;
  ingot_cprint_declare(&g->p, s->u.loop.var);
  ingot_status_t st = gp_body(g, sb, s->u.loop.body, inner);
  ingot_cprint_scope_pop(&g->p, mark);
  *mask = saved;
  GP_CHECK(st);
  if (extent < launch) {
    ingot_cprint_indent(sb, depth + 1);
    ingot_strbuf_append(sb, "}\n");
  }
  ingot_cprint_indent(sb, depth);
  ingot_strbuf_append(sb, "}\n");
  return INGOT_OK;
}

static ingot_status_t gp_stmt(gp_t* g, ingot_strbuf_t* sb, const ingot_ir_stmt_t* s, int depth) {
  const ingot_ir_func_t* f = g->p.f;
  if (!s) return ingot_cprint_fail(&g->p, INGOT_ERROR_INVALID_ARGUMENT, "missing statement");
  if (sb->length > g->p.max_bytes)
    return ingot_cprint_fail(&g->p, INGOT_ERROR_LIMIT, "generated source exceeds %zu bytes", g->p.max_bytes);
  switch (s->kind) {
    case INGOT_IR_STMT_FOR: {
      uint32_t v = s->u.loop.var;
      if (v >= f->var_count || f->vars[v].kind != INGOT_IR_VAR_LOOP || g->p.in_scope[v] || s->u.loop.extent <= 0)
        return ingot_cprint_fail(&g->p, INGOT_ERROR_INVALID_ARGUMENT, "malformed loop (variable %u)", v);
      ingot_ir_loop_kind_t kind = s->u.loop.loop_kind;
      if (kind == INGOT_IR_LOOP_GPU_BLOCK || kind == INGOT_IR_LOOP_GPU_THREAD) return gp_bound_loop(g, sb, s, depth);
      if (kind == INGOT_IR_LOOP_UNROLLED) {
        ingot_cprint_indent(sb, depth);
        ingot_strbuf_append(sb, "#pragma unroll\n");
      } else if (kind != INGOT_IR_LOOP_SERIAL && kind != INGOT_IR_LOOP_PARALLEL &&
                 kind != INGOT_IR_LOOP_VECTORIZED) {
        /* (PARALLEL and VECTORIZED only reach here unprepared; serial is
         * what they mean on one thread.) */
        return ingot_cprint_fail(&g->p, INGOT_ERROR_INVALID_ARGUMENT, "loop '%s' has unknown kind %d", f->vars[v].name,
                                 (int)kind);
      }
      const char* name = g->p.var_names[v];
      ingot_cprint_indent(sb, depth);
      ingot_strbuf_appendf(sb, "for (long long %s = 0; %s < %lldLL; ++%s) {\n", name, name,
                           (long long)s->u.loop.extent, name);
      size_t mark = g->p.scope.count;
      ingot_cprint_declare(&g->p, v);
      ingot_status_t st = gp_body(g, sb, s->u.loop.body, depth + 1);
      ingot_cprint_scope_pop(&g->p, mark);
      GP_CHECK(st);
      ingot_cprint_indent(sb, depth);
      ingot_strbuf_append(sb, "}\n");
      return INGOT_OK;
    }
    case INGOT_IR_STMT_BLOCK:
      ingot_cprint_indent(sb, depth);
      ingot_strbuf_append(sb, "{\n");
      GP_CHECK(gp_body(g, sb, s, depth + 1));
      ingot_cprint_indent(sb, depth);
      ingot_strbuf_append(sb, "}\n");
      return INGOT_OK;
    case INGOT_IR_STMT_STORE: {
      uint32_t b = s->u.store.buffer;
      if (b >= f->buffer_count || f->buffers[b].role == INGOT_IR_BUFFER_INPUT)
        return ingot_cprint_fail(&g->p, INGOT_ERROR_INVALID_ARGUMENT, "store to buffer %u, not an output", b);
      /* Rule 3: one thread stores. */
      ingot_strbuf_t guard = {0};
      for (int a = 0; a < 3; ++a) {
        if (g->plan.block[a] > 1 && !(g->bound_threads & (1u << a)))
          ingot_strbuf_appendf(&guard, "%sthreadIdx.%c == 0u", guard.length ? " && " : "", "xyz"[a]);
      }
      for (int a = 0; a < 3; ++a) {
        if (g->plan.grid[a] > 1 && !(g->bound_blocks & (1u << a)))
          ingot_strbuf_appendf(&guard, "%sblockIdx.%c == 0u", guard.length ? " && " : "", "xyz"[a]);
      }
      ingot_cprint_indent(sb, depth);
      if (guard.length) ingot_strbuf_appendf(sb, "if (%s) ", guard.data);
      ingot_strbuf_free(&guard);
      ingot_strbuf_appendf(sb, "%s[", g->p.buf_names[b]);
      GP_CHECK(ingot_cprint_expr(&g->p, sb, s->u.store.index));
      ingot_strbuf_append(sb, "] = ");
      GP_CHECK(ingot_cprint_expr(&g->p, sb, s->u.store.value));
      ingot_strbuf_append(sb, ";\n");
      return INGOT_OK;
    }
    case INGOT_IR_STMT_IF:
      ingot_cprint_indent(sb, depth);
      ingot_strbuf_append(sb, "if (");
      GP_CHECK(ingot_cprint_expr(&g->p, sb, s->u.cond.cond));
      ingot_strbuf_append(sb, ") {\n");
      GP_CHECK(gp_body(g, sb, s->u.cond.then_body, depth + 1));
      ingot_cprint_indent(sb, depth);
      ingot_strbuf_append(sb, "}\n");
      return INGOT_OK;
    case INGOT_IR_STMT_LOCAL:
    case INGOT_IR_STMT_ASSIGN: {
      uint32_t v = s->u.local.var;
      if (v >= f->var_count || f->vars[v].kind != INGOT_IR_VAR_LOCAL)
        return ingot_cprint_fail(&g->p, INGOT_ERROR_INVALID_ARGUMENT, "assignment to variable %u, not a local", v);
      const char* ty;
      GP_CHECK(ingot_cprint_type(&g->p, f->vars[v].dtype, &ty));
      ingot_cprint_indent(sb, depth);
      if (s->kind == INGOT_IR_STMT_LOCAL) {
        ingot_strbuf_appendf(sb, "%s %s = ", ty, g->p.var_names[v]);
        GP_CHECK(ingot_cprint_expr(&g->p, sb, s->u.local.value));
        ingot_cprint_declare(&g->p, v);
      } else {
        if (!g->p.in_scope[v])
          return ingot_cprint_fail(&g->p, INGOT_ERROR_INVALID_ARGUMENT, "assignment to '%s' out of its scope",
                                   f->vars[v].name);
        ingot_strbuf_appendf(sb, "%s = ", g->p.var_names[v]);
        GP_CHECK(ingot_cprint_expr(&g->p, sb, s->u.local.value));
      }
      ingot_strbuf_append(sb, ";\n");
      return INGOT_OK;
    }
    case INGOT_IR_STMT_BARRIER:
      /* Rule 5 (the verifier keeps it outside thread loops). */
      if (g->bound_threads)
        return ingot_cprint_fail(&g->p, INGOT_ERROR_INVALID_ARGUMENT, "a barrier inside a loop bound to threads");
      ingot_cprint_indent(sb, depth);
      ingot_strbuf_append(sb, "__syncthreads();\n");
      return INGOT_OK;
  }
  return ingot_cprint_fail(&g->p, INGOT_ERROR_INVALID_ARGUMENT, "unknown statement kind %d", (int)s->kind);
}

static ingot_status_t gp_func(gp_t* g, const ingot_ir_func_t* f, ingot_strbuf_t* module) {
  uint32_t params = gpu_param_count(f);
  ingot_cprint_begin(&g->p, g->dialect == GPU_HIP ? &k_hip_dialect : &k_cuda_dialect, f, params);
  ingot_status_t st = INGOT_OK;
  if (!gp_identifier_ok(f->name))
    st = ingot_cprint_fail(&g->p, INGOT_ERROR_INVALID_ARGUMENT,
                           "the name is not a C identifier free for a kernel (the loaders look kernels up by it; "
                           "names starting with ingot_gpu_ or __ are taken)");
  if (st == INGOT_OK && (st = gpu_plan(f, g->target, &g->plan)) != INGOT_OK)
    st = ingot_fail_prefix(st, "codegen %s", g->p.dialect->target);
  if (st != INGOT_OK) {
    ingot_cprint_end(&g->p);
    return st;
  }

  ingot_strbuf_t head = {0}, body = {0};
  uint32_t threads = g->plan.block[0] * g->plan.block[1] * g->plan.block[2];
  ingot_strbuf_appendf(&head, "/* ---- %s: grid %u x %u x %u, block %u x %u x %u */\n", f->name, g->plan.grid[0],
                       g->plan.grid[1], g->plan.grid[2], g->plan.block[0], g->plan.block[1], g->plan.block[2]);
  ingot_strbuf_appendf(&head, "extern \"C\" __global__ void __launch_bounds__(%u) %s(", threads, f->name);
  for (uint32_t i = 0; i < params && st == INGOT_OK; ++i) {
    const char* ty;
    st = ingot_cprint_type(&g->p, f->buffers[i].dtype, &ty);
    if (st != INGOT_OK) break;
    ingot_strbuf_appendf(&head, "%s%s%s* __restrict__ %s", i ? ", " : "",
                         f->buffers[i].role == INGOT_IR_BUFFER_INPUT ? "const " : "", ty, g->p.buf_names[i]);
  }
  ingot_strbuf_append(&head, ") {\n");
  for (uint32_t i = params; i < f->buffer_count && st == INGOT_OK; ++i) {
    const char* ty;
    st = ingot_cprint_type(&g->p, f->buffers[i].dtype, &ty);
    if (st != INGOT_OK) break;
    ingot_strbuf_appendf(&head, "  __shared__ %s %s[%lld];\n", ty, g->p.buf_names[i],
                         (long long)ingot_ir_buffer_numel(&f->buffers[i]));
  }
  if (st == INGOT_OK) st = gp_body(g, &body, f->body, 1);
  if (st == INGOT_OK) {
    ingot_strbuf_append_bytes(module, head.data, head.length);
    ingot_strbuf_append_bytes(module, body.data, body.length);
    ingot_strbuf_append(module, "}\n\n");
  }
  ingot_strbuf_free(&head);
  ingot_strbuf_free(&body);
  ingot_cprint_end(&g->p);
  return st;
}

static ingot_status_t gpu_emit(ingot_ir_func_t* const* funcs, uint32_t count, const ingot_target_t* target,
                               gpu_dialect_t dialect, ingot_strbuf_t* out_text) {
  const char* tag = dialect == GPU_HIP ? "rocm" : "cuda";
  if (!out_text || (count && !funcs))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "codegen %s: missing functions or output", tag);
  ingot_target_kind_t want = dialect == GPU_HIP ? INGOT_TARGET_ROCM : INGOT_TARGET_CUDA;
  if (!target || target->kind != want)
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "codegen %s: target '%s' is not a %s target", tag,
                      target ? target->name : "(none)", tag);
  ingot_status_t st = gpu_target_check(target, dialect == GPU_HIP ? "codegen rocm" : "codegen cuda");
  if (st != INGOT_OK) return st;
  for (uint32_t i = 0; i < count; ++i) {
    if (!funcs[i] || !funcs[i]->name || !funcs[i]->body)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "codegen %s: function %u is incomplete", tag, i);
    st = ingot_ir_verify(funcs[i]);
    if (st != INGOT_OK) return ingot_fail_prefix(st, "codegen %s", tag);
    for (uint32_t k = 0; k < i; ++k)
      if (strcmp(funcs[k]->name, funcs[i]->name) == 0)
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "codegen %s: two functions named '%s'", tag, funcs[i]->name);
  }
  ingot_strbuf_t m = {0};
  ingot_strbuf_appendf(&m, "/* Generated by Ingot (target %s, %s for %s): do not edit. */\n",
                       gpu_target_name(target), dialect == GPU_HIP ? "HIP for hiprtc" : "CUDA C for NVRTC",
                       target->gpu.arch[0] ? target->gpu.arch : "?");
  ingot_strbuf_appendf(&m, "/* %u kernel%s; launches: ingot_codegen_gpu_launches. */\n", count, count == 1 ? "" : "s");
  if (dialect == GPU_HIP) ingot_strbuf_append(&m, "#include <hip/hip_runtime.h>\n");
  ingot_strbuf_append(&m, k_prelude);
  for (uint32_t i = 0; i < count && st == INGOT_OK; ++i) {
    gp_t g = {0};
    g.target = target;
    g.dialect = dialect;
    st = gp_func(&g, funcs[i], &m);
  }
  if (st == INGOT_OK) ingot_strbuf_append_bytes(out_text, m.data, m.length);
  ingot_strbuf_free(&m);
  return st;
}

ingot_status_t ingot_codegen_cuda_emit(ingot_ir_func_t* const* funcs, uint32_t count, const ingot_target_t* target,
                                       ingot_strbuf_t* out_text) {
  return gpu_emit(funcs, count, target, GPU_CUDA, out_text);
}

ingot_status_t ingot_codegen_rocm_emit(ingot_ir_func_t* const* funcs, uint32_t count, const ingot_target_t* target,
                                       ingot_strbuf_t* out_text) {
  return gpu_emit(funcs, count, target, GPU_HIP, out_text);
}

/* ---- Building. */

/* "sm_90" -> 90; 0 when malformed. */
static uint32_t sm_number(const char* arch) {
  if (strncmp(arch, "sm_", 3) != 0) return 0;
  uint32_t n = 0;
  const char* p = arch + 3;
  if (!*p) return 0;
  for (; *p >= '0' && *p <= '9'; ++p) n = n * 10 + (uint32_t)(*p - '0');
  return (*p == '\0' || *p == 'a') && n >= 10 && n < 1000 ? n : 0;
}

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

ingot_status_t ingot_codegen_cuda_build(ingot_ir_func_t* const* funcs, uint32_t count, const ingot_target_t* target,
                                        const ingot_codegen_options_t* options, uint8_t** out_object,
                                        size_t* out_size) {
  if (!out_object || !out_size) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "codegen cuda: missing output");
  *out_object = NULL;
  *out_size = 0;
  ingot_strbuf_t source = {0};
  ingot_status_t st = ingot_codegen_cuda_emit(funcs, count, target, &source);
  uint32_t arch = st == INGOT_OK ? sm_number(target->gpu.arch) : 0;
  if (st == INGOT_OK && !arch)
    st = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "codegen cuda: target '%s': architecture '%s' is not sm_XX",
                    target->name, target->gpu.arch);
  if (st == INGOT_OK && options && options->keep_source_path)
    st = ingot_file_write_atomic(options->keep_source_path, source.data, source.length);
  if (st == INGOT_OK && (st = ingot_codegen_gpu_compiler_check(INGOT_TARGET_CUDA)) != INGOT_OK)
    st = ingot_fail_prefix(st, "codegen cuda (target '%s')", target->name);
  ingot_codegen_rtc_code_t code = {0};
  if (st == INGOT_OK) {
    const char* opts[] = {"--std=c++17"};
    st = ingot_codegen_rtc_compile(INGOT_CODEGEN_RTC_NVRTC, source.data, "ingot_module.cu", target->gpu.arch, opts, 1,
                                   &code);
    if (st != INGOT_OK) st = ingot_fail_prefix(st, "codegen cuda (target '%s')", target->name);
  }
  ingot_strbuf_free(&source);
  if (st != INGOT_OK) return st;
  /* The code set (runtime/ingot_format.h): header, two entries, the CUBIN,
   * the PTX with its NUL, each at a 16-aligned offset. */
  size_t head = sizeof(ingot_gpu_code_header_t) + 2 * sizeof(ingot_gpu_code_entry_t);
  size_t cubin_at = align16(head), ptx_at = align16(cubin_at + code.object_size);
  size_t ptx_bytes = code.ptx_size + 1, total = ptx_at + ptx_bytes;
  uint8_t* out = ingot_xcalloc(total, 1);
  ingot_gpu_code_header_t h;
  memset(&h, 0, sizeof(h));
  memcpy(h.magic, INGOT_GPU_CODE_MAGIC, 8);
  h.version = INGOT_GPU_CODE_VERSION;
  h.count = 2;
  ingot_gpu_code_entry_t e[2];
  memset(e, 0, sizeof(e));
  e[0].kind = INGOT_GPU_CODE_CUBIN;
  e[0].arch = arch;
  e[0].offset = cubin_at;
  e[0].size = code.object_size;
  e[1].kind = INGOT_GPU_CODE_PTX;
  e[1].arch = arch;
  e[1].offset = ptx_at;
  e[1].size = ptx_bytes;
  memcpy(out, &h, sizeof(h));
  memcpy(out + sizeof(h), e, sizeof(e));
  memcpy(out + cubin_at, code.object, code.object_size);
  memcpy(out + ptx_at, code.ptx, code.ptx_size);
  ingot_codegen_rtc_code_free(&code);
  *out_object = out;
  *out_size = total;
  return INGOT_OK;
}

ingot_status_t ingot_codegen_rocm_build(ingot_ir_func_t* const* funcs, uint32_t count, const ingot_target_t* target,
                                        const ingot_codegen_options_t* options, uint8_t** out_object,
                                        size_t* out_size) {
  if (!out_object || !out_size) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "codegen rocm: missing output");
  *out_object = NULL;
  *out_size = 0;
  ingot_strbuf_t source = {0};
  ingot_status_t st = ingot_codegen_rocm_emit(funcs, count, target, &source);
  if (st == INGOT_OK && options && options->keep_source_path)
    st = ingot_file_write_atomic(options->keep_source_path, source.data, source.length);
  if (st == INGOT_OK && (st = ingot_codegen_gpu_compiler_check(INGOT_TARGET_ROCM)) != INGOT_OK)
    st = ingot_fail_prefix(st, "codegen rocm (target '%s')", target->name);
  ingot_codegen_rtc_code_t code = {0};
  if (st == INGOT_OK) {
    st = ingot_codegen_rtc_compile(INGOT_CODEGEN_RTC_HIPRTC, source.data, "ingot_module.hip", target->gpu.arch, NULL,
                                   0, &code);
    if (st != INGOT_OK) st = ingot_fail_prefix(st, "codegen rocm (target '%s')", target->name);
  }
  ingot_strbuf_free(&source);
  if (st != INGOT_OK) return st;
  *out_object = code.object;
  *out_size = code.object_size;
  code.object = NULL;
  ingot_codegen_rtc_code_free(&code);
  return INGOT_OK;
}
