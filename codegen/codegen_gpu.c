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
    "#define INGOT_GPU_FN static __device__ __forceinline__\n"
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
typedef INGOT_VEC(uint32_t) gp_u32_vec_t;

typedef struct gp_t {
  const ingot_ir_func_t* f;
  const ingot_target_t* target;
  gpu_dialect_t dialect;
  gpu_plan_t plan;
  char** var_names;
  char** buf_names;
  uint8_t* in_scope;
  gp_u32_vec_t scope;
  uint32_t bound_blocks, bound_threads;  /* axes bound by enclosing loops (bit per axis) */
  size_t max_bytes;
} gp_t;

static ingot_status_t gp_fail(gp_t* g, ingot_status_t code, const char* fmt, ...) INGOT_PRINTF(3, 4);
static ingot_status_t gp_fail(gp_t* g, ingot_status_t code, const char* fmt, ...) {
  char msg[1024];
  va_list args;
  va_start(args, fmt);
  vsnprintf(msg, sizeof(msg), fmt, args);
  va_end(args);
  return ingot_fail(code, "codegen %s: function '%s': %s", g->dialect == GPU_HIP ? "rocm" : "cuda",
                    g->f->name ? g->f->name : "?", msg);
}

#define GP_CHECK(expr)               \
  do {                               \
    ingot_status_t st_ = (expr);     \
    if (st_ != INGOT_OK) return st_; \
  } while (0)

static const char* gp_ctype(ingot_dtype_t t) {
  switch (t) {
    case INGOT_DTYPE_F32: return "float";
    case INGOT_DTYPE_F64: return "double";
    case INGOT_DTYPE_I8: return "ingot_gpu_i8";
    case INGOT_DTYPE_U8: return "ingot_gpu_u8";
    case INGOT_DTYPE_I32: return "ingot_gpu_i32";
    case INGOT_DTYPE_I64: return "ingot_gpu_i64";
    case INGOT_DTYPE_BOOL: return "bool";
    default: return NULL;
  }
}

static bool gp_is_float(ingot_dtype_t t) { return t == INGOT_DTYPE_F32 || t == INGOT_DTYPE_F64; }
static bool gp_is_int(ingot_dtype_t t) {
  return t == INGOT_DTYPE_I8 || t == INGOT_DTYPE_U8 || t == INGOT_DTYPE_I32 || t == INGOT_DTYPE_I64;
}

static ingot_status_t gp_type(gp_t* g, ingot_dtype_t t, const char** out) {
  *out = gp_ctype(t);
  if (*out) return INGOT_OK;
  if (t == INGOT_DTYPE_F16)
    return gp_fail(g, INGOT_ERROR_UNSUPPORTED,
                   "dtype float16 is not supported by the GPU targets yet (half-precision kernels are a "
                   "later step); compute in float32");
  return gp_fail(g, INGOT_ERROR_UNSUPPORTED, "dtype %s is not supported by the GPU targets", ingot_dtype_name(t));
}

/* ---- Identifiers (prefix + the IR name made a C identifier, unique). */
static char* gp_sanitize(const char* prefix, const char* name) {
  ingot_strbuf_t sb = {0};
  ingot_strbuf_append(&sb, prefix);
  if (!name || !*name) name = "_";
  for (const char* p = name; *p; ++p) {
    char c = *p;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    ingot_strbuf_append_bytes(&sb, ok ? &c : "_", 1);
  }
  return sb.data;
}

static void gp_unique_name(char** names, uint32_t i, const char* prefix, const char* raw) {
  char* base = gp_sanitize(prefix, raw);
  char* name = ingot_xstrdup(base);
  for (uint32_t n = i;; ++n) {
    bool taken = false;
    for (uint32_t k = 0; k < i && !taken; ++k) taken = names[k] && strcmp(names[k], name) == 0;
    if (!taken) break;
    free(name);
    ingot_strbuf_t sb = {0};
    ingot_strbuf_appendf(&sb, "%s_%u", base, n);
    name = sb.data;
  }
  free(base);
  names[i] = name;
}

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

static void gp_indent(ingot_strbuf_t* sb, int depth) {
  for (int i = 0; i < depth; ++i) ingot_strbuf_append(sb, "  ");
}

static void gp_float_literal(ingot_strbuf_t* sb, ingot_dtype_t t, double v) {
  bool f32 = t == INGOT_DTYPE_F32;
  if (f32) v = (double)(float)v;
  if (v != v)
    ingot_strbuf_append(sb, f32 ? "ingot_gpu_nanf()" : "ingot_gpu_nan()");
  else if (v == 1.0 / 0.0 || v == -1.0 / 0.0)
    ingot_strbuf_appendf(sb, "(%s%s)", v < 0 ? "-" : "", f32 ? "ingot_gpu_inff()" : "ingot_gpu_inf()");
  else
    ingot_strbuf_appendf(sb, "(%a%s)", v, f32 ? "f" : "");
}

static void gp_int_literal(ingot_strbuf_t* sb, int64_t v) {
  if (v == INT64_MIN) ingot_strbuf_append(sb, "(-9223372036854775807LL - 1)");
  else if (v < 0) ingot_strbuf_appendf(sb, "(%lldLL)", (long long)v);
  else ingot_strbuf_appendf(sb, "%lldLL", (long long)v);
}

/* ---- Expressions. */
static ingot_status_t gp_expr(gp_t* g, ingot_strbuf_t* sb, const ingot_ir_expr_t* e);

static ingot_status_t gp_call1(gp_t* g, ingot_strbuf_t* sb, const char* fn, const ingot_ir_expr_t* a) {
  ingot_strbuf_appendf(sb, "%s(", fn);
  GP_CHECK(gp_expr(g, sb, a));
  ingot_strbuf_append(sb, ")");
  return INGOT_OK;
}

static ingot_status_t gp_call2(gp_t* g, ingot_strbuf_t* sb, const char* fn, const ingot_ir_expr_t* a,
                               const ingot_ir_expr_t* b) {
  ingot_strbuf_appendf(sb, "%s(", fn);
  GP_CHECK(gp_expr(g, sb, a));
  ingot_strbuf_append(sb, ", ");
  GP_CHECK(gp_expr(g, sb, b));
  ingot_strbuf_append(sb, ")");
  return INGOT_OK;
}

static ingot_status_t gp_infix(gp_t* g, ingot_strbuf_t* sb, const char* op, const ingot_ir_expr_t* a,
                               const ingot_ir_expr_t* b) {
  ingot_strbuf_append(sb, "(");
  GP_CHECK(gp_expr(g, sb, a));
  ingot_strbuf_appendf(sb, " %s ", op);
  GP_CHECK(gp_expr(g, sb, b));
  ingot_strbuf_append(sb, ")");
  return INGOT_OK;
}

/* gp_unary() and gp_binary() switch over every op of lower/ir_ops.def. */
_Static_assert(INGOT_IR_UNARY_COUNT_ == 23, "gp_unary(): handle the new op of lower/ir_ops.def");
_Static_assert(INGOT_IR_BINARY_COUNT_ == 15, "gp_binary(): handle the new op of lower/ir_ops.def");

static ingot_status_t gp_unsupported_op(gp_t* g, const char* what, ingot_dtype_t t) {
  return gp_fail(g, INGOT_ERROR_UNSUPPORTED, "%s on %s is not supported by the GPU targets", what,
                 ingot_dtype_name(t));
}

static ingot_status_t gp_unary(gp_t* g, ingot_strbuf_t* sb, const ingot_ir_expr_t* e) {
  const ingot_ir_expr_t* a = e->u.unary.a;
  ingot_dtype_t t = a->dtype;
  bool f32 = t == INGOT_DTYPE_F32, f64 = t == INGOT_DTYPE_F64;
  const char* ty;
  GP_CHECK(gp_type(g, t, &ty));
  GP_CHECK(gp_type(g, e->dtype, &ty));
  ingot_ir_unary_op_t op = e->u.unary.op;
  const char* name = (op > 0 && op < INGOT_IR_UNARY_COUNT_) ? ingot_ir_unary_op_name(op) : "unknown unary op";
  switch (op) {
    case INGOT_IR_NEG:
      if (t == INGOT_DTYPE_BOOL) return gp_unsupported_op(g, name, t);
      ingot_strbuf_appendf(sb, "((%s)(-", ty);
      GP_CHECK(gp_expr(g, sb, a));
      ingot_strbuf_append(sb, "))");
      return INGOT_OK;
    case INGOT_IR_ABS:
      if (f32) return gp_call1(g, sb, "fabsf", a);
      if (f64) return gp_call1(g, sb, "fabs", a);
      if (!gp_is_int(t)) return gp_unsupported_op(g, name, t);
      ingot_strbuf_appendf(sb, "((%s)", ty);
      GP_CHECK(gp_call1(g, sb, "ingot_gpu_abs_i64", a));
      ingot_strbuf_append(sb, ")");
      return INGOT_OK;
    case INGOT_IR_FLOOR:
    case INGOT_IR_CEIL:
    case INGOT_IR_ROUND: {
      if (gp_is_int(t)) return gp_call1(g, sb, "", a);
      if (!f32 && !f64) return gp_unsupported_op(g, name, t);
      const char* fn = op == INGOT_IR_FLOOR ? "floor" : op == INGOT_IR_CEIL ? "ceil" : "rint";
      ingot_strbuf_appendf(sb, "%s%s(", fn, f32 ? "f" : "");
      GP_CHECK(gp_expr(g, sb, a));
      ingot_strbuf_append(sb, ")");
      return INGOT_OK;
    }
    case INGOT_IR_SQRT:
    case INGOT_IR_EXP:
    case INGOT_IR_LOG:
    case INGOT_IR_TANH:
    case INGOT_IR_ERF:
    case INGOT_IR_SIN:
    case INGOT_IR_COS:
    case INGOT_IR_TAN:
    case INGOT_IR_ASIN:
    case INGOT_IR_ACOS:
    case INGOT_IR_ATAN:
    case INGOT_IR_SINH:
    case INGOT_IR_COSH:
    case INGOT_IR_ASINH:
    case INGOT_IR_ACOSH:
    case INGOT_IR_ATANH:
      /* The device library's function of the op's name: expf / exp, ... */
      if (!f32 && !f64) return gp_unsupported_op(g, name, t);
      ingot_strbuf_appendf(sb, "%s%s(", name, f32 ? "f" : "");
      GP_CHECK(gp_expr(g, sb, a));
      ingot_strbuf_append(sb, ")");
      return INGOT_OK;
    case INGOT_IR_NOT:
      if (t != INGOT_DTYPE_BOOL) return gp_unsupported_op(g, name, t);
      return gp_call1(g, sb, "!", a);
    default:
      return gp_fail(g, INGOT_ERROR_INVALID_ARGUMENT, "unknown unary op %d", (int)op);
  }
}

static ingot_status_t gp_binary(gp_t* g, ingot_strbuf_t* sb, const ingot_ir_expr_t* e) {
  const ingot_ir_expr_t* a = e->u.binary.a;
  const ingot_ir_expr_t* b = e->u.binary.b;
  ingot_dtype_t t = a->dtype;
  ingot_ir_binary_op_t op = e->u.binary.op;
  if (op <= 0 || op >= INGOT_IR_BINARY_COUNT_)
    return gp_fail(g, INGOT_ERROR_INVALID_ARGUMENT, "unknown binary op %d", (int)op);
  const char* name = ingot_ir_binary_op_name(op);
  if (b->dtype != t)
    return gp_fail(g, INGOT_ERROR_INVALID_ARGUMENT, "%s of %s and %s: operand dtypes differ", name,
                   ingot_dtype_name(t), ingot_dtype_name(b->dtype));
  const char* ty;
  GP_CHECK(gp_type(g, t, &ty));
  GP_CHECK(gp_type(g, e->dtype, &ty));
  bool f32 = t == INGOT_DTYPE_F32, fl = gp_is_float(t), in = gp_is_int(t);
  switch (op) {
    case INGOT_IR_LT: return gp_infix(g, sb, "<", a, b);
    case INGOT_IR_LE: return gp_infix(g, sb, "<=", a, b);
    case INGOT_IR_EQ: return gp_infix(g, sb, "==", a, b);
    case INGOT_IR_NE: return gp_infix(g, sb, "!=", a, b);
    case INGOT_IR_AND:
    case INGOT_IR_OR:
      if (t != INGOT_DTYPE_BOOL) return gp_unsupported_op(g, name, t);
      return gp_infix(g, sb, op == INGOT_IR_AND ? "&&" : "||", a, b);
    default: break;
  }
  if (!fl && !in) return gp_unsupported_op(g, name, t);
  if (fl) {
    switch (op) {
      case INGOT_IR_ADD: return gp_infix(g, sb, "+", a, b);
      case INGOT_IR_SUB: return gp_infix(g, sb, "-", a, b);
      case INGOT_IR_MUL: return gp_infix(g, sb, "*", a, b);
      case INGOT_IR_DIV: return gp_infix(g, sb, "/", a, b);
      case INGOT_IR_MOD: return gp_call2(g, sb, f32 ? "fmodf" : "fmod", a, b);
      case INGOT_IR_MIN: return gp_call2(g, sb, f32 ? "ingot_gpu_fminf" : "ingot_gpu_fmin", a, b);
      case INGOT_IR_MAX: return gp_call2(g, sb, f32 ? "ingot_gpu_fmaxf" : "ingot_gpu_fmax", a, b);
      case INGOT_IR_POW:
        if (b->kind == INGOT_IR_EXPR_FLOAT && b->u.f == 1.0) return gp_call1(g, sb, "", a);
        if (b->kind == INGOT_IR_EXPR_FLOAT && b->u.f == 2.0)
          return gp_call1(g, sb, f32 ? "ingot_gpu_sqf" : "ingot_gpu_sq", a);
        return gp_call2(g, sb, f32 ? "powf" : "pow", a, b);
      default: return gp_unsupported_op(g, name, t);
    }
  }
  /* Integers: arithmetic in C++'s promoted type (int for int8/uint8),
   * helpers in 64 bits; converted back where those differ from the type. */
  bool helper = op == INGOT_IR_MIN || op == INGOT_IR_MAX || op == INGOT_IR_POW ||
                ((op == INGOT_IR_DIV || op == INGOT_IR_MOD) &&
                 !(ingot_ir_expr_nonneg(g->f, a) && b->kind == INGOT_IR_EXPR_INT && b->u.i > 0));
  bool convert = t == INGOT_DTYPE_I8 || t == INGOT_DTYPE_U8 || (helper && t != INGOT_DTYPE_I64);
  if (convert) ingot_strbuf_appendf(sb, "((%s)", ty);
  switch (op) {
    case INGOT_IR_ADD: GP_CHECK(gp_infix(g, sb, "+", a, b)); break;
    case INGOT_IR_SUB: GP_CHECK(gp_infix(g, sb, "-", a, b)); break;
    case INGOT_IR_MUL: GP_CHECK(gp_infix(g, sb, "*", a, b)); break;
    case INGOT_IR_DIV:
    case INGOT_IR_MOD:
      if (!helper)
        GP_CHECK(gp_infix(g, sb, op == INGOT_IR_DIV ? "/" : "%", a, b));
      else
        GP_CHECK(gp_call2(g, sb, op == INGOT_IR_DIV ? "ingot_gpu_floordiv" : "ingot_gpu_floormod", a, b));
      break;
    case INGOT_IR_MIN: GP_CHECK(gp_call2(g, sb, "ingot_gpu_min_i64", a, b)); break;
    case INGOT_IR_MAX: GP_CHECK(gp_call2(g, sb, "ingot_gpu_max_i64", a, b)); break;
    case INGOT_IR_POW: GP_CHECK(gp_call2(g, sb, "ingot_gpu_ipow", a, b)); break;
    default: return gp_unsupported_op(g, name, t);
  }
  if (convert) ingot_strbuf_append(sb, ")");
  return INGOT_OK;
}

static ingot_status_t gp_expr(gp_t* g, ingot_strbuf_t* sb, const ingot_ir_expr_t* e) {
  const ingot_ir_func_t* f = g->f;
  if (!e) return gp_fail(g, INGOT_ERROR_INVALID_ARGUMENT, "missing expression");
  if (sb->length > g->max_bytes)
    return gp_fail(g, INGOT_ERROR_LIMIT, "generated source exceeds %zu bytes (shared expressions?)", g->max_bytes);
  const char* ty;
  switch (e->kind) {
    case INGOT_IR_EXPR_INT:
      if (e->dtype == INGOT_DTYPE_I64) {
        gp_int_literal(sb, e->u.i);
      } else {
        GP_CHECK(gp_type(g, e->dtype, &ty));
        ingot_strbuf_appendf(sb, "((%s)", ty);
        gp_int_literal(sb, e->u.i);
        ingot_strbuf_append(sb, ")");
      }
      return INGOT_OK;
    case INGOT_IR_EXPR_FLOAT:
      if (!gp_is_float(e->dtype)) {
        GP_CHECK(gp_type(g, e->dtype, &ty));
        return gp_unsupported_op(g, "float constant", e->dtype);
      }
      gp_float_literal(sb, e->dtype, e->u.f);
      return INGOT_OK;
    case INGOT_IR_EXPR_VAR:
      if (e->u.var >= f->var_count)
        return gp_fail(g, INGOT_ERROR_INVALID_ARGUMENT, "variable index %u out of range", e->u.var);
      if (!g->in_scope[e->u.var])
        return gp_fail(g, INGOT_ERROR_INVALID_ARGUMENT, "variable '%s' used out of its scope",
                       f->vars[e->u.var].name);
      ingot_strbuf_append(sb, g->var_names[e->u.var]);
      return INGOT_OK;
    case INGOT_IR_EXPR_LOAD:
      if (e->u.load.buffer >= f->buffer_count)
        return gp_fail(g, INGOT_ERROR_INVALID_ARGUMENT, "buffer index %u out of range", e->u.load.buffer);
      ingot_strbuf_appendf(sb, "%s[", g->buf_names[e->u.load.buffer]);
      GP_CHECK(gp_expr(g, sb, e->u.load.index));
      ingot_strbuf_append(sb, "]");
      return INGOT_OK;
    case INGOT_IR_EXPR_UNARY:
      if (!e->u.unary.a) return gp_fail(g, INGOT_ERROR_INVALID_ARGUMENT, "missing operand");
      return gp_unary(g, sb, e);
    case INGOT_IR_EXPR_BINARY:
      if (!e->u.binary.a || !e->u.binary.b) return gp_fail(g, INGOT_ERROR_INVALID_ARGUMENT, "missing operand");
      return gp_binary(g, sb, e);
    case INGOT_IR_EXPR_SELECT:
      if (!e->u.select.cond || !e->u.select.a || !e->u.select.b)
        return gp_fail(g, INGOT_ERROR_INVALID_ARGUMENT, "missing operand");
      GP_CHECK(gp_type(g, e->dtype, &ty));
      ingot_strbuf_appendf(sb, "((%s)(", ty);
      GP_CHECK(gp_expr(g, sb, e->u.select.cond));
      ingot_strbuf_append(sb, " ? ");
      GP_CHECK(gp_expr(g, sb, e->u.select.a));
      ingot_strbuf_append(sb, " : ");
      GP_CHECK(gp_expr(g, sb, e->u.select.b));
      ingot_strbuf_append(sb, "))");
      return INGOT_OK;
    case INGOT_IR_EXPR_CAST: {
      const ingot_ir_expr_t* a = e->u.unary.a;
      if (!a) return gp_fail(g, INGOT_ERROR_INVALID_ARGUMENT, "missing operand");
      const char* from;
      GP_CHECK(gp_type(g, e->dtype, &ty));
      GP_CHECK(gp_type(g, a->dtype, &from));
      if (gp_is_float(a->dtype) && gp_is_int(e->dtype)) {
        /* Through int64 with the interpreter's NaN and range rules. */
        ingot_strbuf_appendf(sb, "((%s)ingot_gpu_f2i((double)", ty);
        GP_CHECK(gp_expr(g, sb, a));
        ingot_strbuf_append(sb, "))");
        return INGOT_OK;
      }
      ingot_strbuf_appendf(sb, "((%s)", ty);
      GP_CHECK(gp_expr(g, sb, a));
      ingot_strbuf_append(sb, ")");
      return INGOT_OK;
    }
  }
  return gp_fail(g, INGOT_ERROR_INVALID_ARGUMENT, "unknown expression kind %d", (int)e->kind);
}

/* ---- Statements. */
static ingot_status_t gp_stmt(gp_t* g, ingot_strbuf_t* sb, const ingot_ir_stmt_t* s, int depth);

static void gp_declare(gp_t* g, uint32_t var) {
  g->in_scope[var] = 1;
  INGOT_VEC_PUSH(g->scope, var);
}

static void gp_scope_pop(gp_t* g, size_t mark) {
  while (g->scope.count > mark) g->in_scope[g->scope.data[--g->scope.count]] = 0;
}

/* `s` as the contents of a C block (a BLOCK's statements inline). */
static ingot_status_t gp_body(gp_t* g, ingot_strbuf_t* sb, const ingot_ir_stmt_t* s, int depth) {
  size_t mark = g->scope.count;
  ingot_status_t st = INGOT_OK;
  if (s && s->kind == INGOT_IR_STMT_BLOCK) {
    for (uint32_t i = 0; i < s->u.block.count && st == INGOT_OK; ++i) st = gp_stmt(g, sb, s->u.block.stmts[i], depth);
  } else {
    st = gp_stmt(g, sb, s, depth);
  }
  gp_scope_pop(g, mark);
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
  const char* v = g->var_names[s->u.loop.var];
  uint32_t* mask = block ? &g->bound_blocks : &g->bound_threads;
  uint32_t saved = *mask;
  *mask |= 1u << a;
  gp_indent(sb, depth);
  int inner = depth + 1;
  if (extent > launch) {
    ingot_strbuf_appendf(sb, "for (long long %s = (long long)%s.%c; %s < %lldLL; %s += %lldLL) {  /* %s stride */\n",
                         v, idx, axis, v, (long long)extent, v, (long long)launch, block ? "grid" : "block");
  } else {
    ingot_strbuf_appendf(sb, "{\n");
    gp_indent(sb, depth + 1);
    ingot_strbuf_appendf(sb, "const long long %s = (long long)%s.%c;\n", v, idx, axis);
    if (extent < launch) {
      gp_indent(sb, depth + 1);
      ingot_strbuf_appendf(sb, "if (%s < %lldLL) {\n", v, (long long)extent);
      inner = depth + 2;
    }
  }
  size_t mark = g->scope.count;
  gp_declare(g, s->u.loop.var);
  ingot_status_t st = gp_body(g, sb, s->u.loop.body, inner);
  gp_scope_pop(g, mark);
  *mask = saved;
  GP_CHECK(st);
  if (extent < launch) {
    gp_indent(sb, depth + 1);
    ingot_strbuf_append(sb, "}\n");
  }
  gp_indent(sb, depth);
  ingot_strbuf_append(sb, "}\n");
  return INGOT_OK;
}

static ingot_status_t gp_stmt(gp_t* g, ingot_strbuf_t* sb, const ingot_ir_stmt_t* s, int depth) {
  const ingot_ir_func_t* f = g->f;
  if (!s) return gp_fail(g, INGOT_ERROR_INVALID_ARGUMENT, "missing statement");
  if (sb->length > g->max_bytes)
    return gp_fail(g, INGOT_ERROR_LIMIT, "generated source exceeds %zu bytes", g->max_bytes);
  switch (s->kind) {
    case INGOT_IR_STMT_FOR: {
      uint32_t v = s->u.loop.var;
      if (v >= f->var_count || f->vars[v].kind != INGOT_IR_VAR_LOOP || g->in_scope[v] || s->u.loop.extent <= 0)
        return gp_fail(g, INGOT_ERROR_INVALID_ARGUMENT, "malformed loop (variable %u)", v);
      ingot_ir_loop_kind_t kind = s->u.loop.loop_kind;
      if (kind == INGOT_IR_LOOP_GPU_BLOCK || kind == INGOT_IR_LOOP_GPU_THREAD) return gp_bound_loop(g, sb, s, depth);
      if (kind == INGOT_IR_LOOP_UNROLLED) {
        gp_indent(sb, depth);
        ingot_strbuf_append(sb, "#pragma unroll\n");
      } else if (kind != INGOT_IR_LOOP_SERIAL && kind != INGOT_IR_LOOP_PARALLEL &&
                 kind != INGOT_IR_LOOP_VECTORIZED) {
        /* (PARALLEL and VECTORIZED only reach here unprepared; serial is
         * what they mean on one thread.) */
        return gp_fail(g, INGOT_ERROR_INVALID_ARGUMENT, "loop '%s' has unknown kind %d", f->vars[v].name, (int)kind);
      }
      const char* name = g->var_names[v];
      gp_indent(sb, depth);
      ingot_strbuf_appendf(sb, "for (long long %s = 0; %s < %lldLL; ++%s) {\n", name, name,
                           (long long)s->u.loop.extent, name);
      size_t mark = g->scope.count;
      gp_declare(g, v);
      ingot_status_t st = gp_body(g, sb, s->u.loop.body, depth + 1);
      gp_scope_pop(g, mark);
      GP_CHECK(st);
      gp_indent(sb, depth);
      ingot_strbuf_append(sb, "}\n");
      return INGOT_OK;
    }
    case INGOT_IR_STMT_BLOCK:
      gp_indent(sb, depth);
      ingot_strbuf_append(sb, "{\n");
      GP_CHECK(gp_body(g, sb, s, depth + 1));
      gp_indent(sb, depth);
      ingot_strbuf_append(sb, "}\n");
      return INGOT_OK;
    case INGOT_IR_STMT_STORE: {
      uint32_t b = s->u.store.buffer;
      if (b >= f->buffer_count || f->buffers[b].role == INGOT_IR_BUFFER_INPUT)
        return gp_fail(g, INGOT_ERROR_INVALID_ARGUMENT, "store to buffer %u, not an output", b);
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
      gp_indent(sb, depth);
      if (guard.length) ingot_strbuf_appendf(sb, "if (%s) ", guard.data);
      ingot_strbuf_free(&guard);
      ingot_strbuf_appendf(sb, "%s[", g->buf_names[b]);
      GP_CHECK(gp_expr(g, sb, s->u.store.index));
      ingot_strbuf_append(sb, "] = ");
      GP_CHECK(gp_expr(g, sb, s->u.store.value));
      ingot_strbuf_append(sb, ";\n");
      return INGOT_OK;
    }
    case INGOT_IR_STMT_IF:
      gp_indent(sb, depth);
      ingot_strbuf_append(sb, "if (");
      GP_CHECK(gp_expr(g, sb, s->u.cond.cond));
      ingot_strbuf_append(sb, ") {\n");
      GP_CHECK(gp_body(g, sb, s->u.cond.then_body, depth + 1));
      gp_indent(sb, depth);
      ingot_strbuf_append(sb, "}\n");
      return INGOT_OK;
    case INGOT_IR_STMT_LOCAL:
    case INGOT_IR_STMT_ASSIGN: {
      uint32_t v = s->u.local.var;
      if (v >= f->var_count || f->vars[v].kind != INGOT_IR_VAR_LOCAL)
        return gp_fail(g, INGOT_ERROR_INVALID_ARGUMENT, "assignment to variable %u, not a local", v);
      const char* ty;
      GP_CHECK(gp_type(g, f->vars[v].dtype, &ty));
      gp_indent(sb, depth);
      if (s->kind == INGOT_IR_STMT_LOCAL) {
        ingot_strbuf_appendf(sb, "%s %s = ", ty, g->var_names[v]);
        GP_CHECK(gp_expr(g, sb, s->u.local.value));
        gp_declare(g, v);
      } else {
        if (!g->in_scope[v])
          return gp_fail(g, INGOT_ERROR_INVALID_ARGUMENT, "assignment to '%s' out of its scope", f->vars[v].name);
        ingot_strbuf_appendf(sb, "%s = ", g->var_names[v]);
        GP_CHECK(gp_expr(g, sb, s->u.local.value));
      }
      ingot_strbuf_append(sb, ";\n");
      return INGOT_OK;
    }
    case INGOT_IR_STMT_BARRIER:
      /* Rule 5 (the verifier keeps it outside thread loops). */
      if (g->bound_threads)
        return gp_fail(g, INGOT_ERROR_INVALID_ARGUMENT, "a barrier inside a loop bound to threads");
      gp_indent(sb, depth);
      ingot_strbuf_append(sb, "__syncthreads();\n");
      return INGOT_OK;
  }
  return gp_fail(g, INGOT_ERROR_INVALID_ARGUMENT, "unknown statement kind %d", (int)s->kind);
}

static void gp_func_free(gp_t* g) {
  const ingot_ir_func_t* f = g->f;
  if (g->var_names)
    for (uint32_t i = 0; i < f->var_count; ++i) free(g->var_names[i]);
  if (g->buf_names)
    for (uint32_t i = 0; i < f->buffer_count; ++i) free(g->buf_names[i]);
  free(g->var_names);
  free(g->buf_names);
  free(g->in_scope);
  INGOT_VEC_FREE(g->scope);
}

static ingot_status_t gp_func(gp_t* g, ingot_strbuf_t* module) {
  const ingot_ir_func_t* f = g->f;
  if (!gp_identifier_ok(f->name))
    return gp_fail(g, INGOT_ERROR_INVALID_ARGUMENT,
                   "the name is not a C identifier free for a kernel (the loaders look kernels up by it; "
                   "names starting with ingot_gpu_ or __ are taken)");
  ingot_status_t plan_st = gpu_plan(f, g->target, &g->plan);
  if (plan_st != INGOT_OK) return ingot_fail_prefix(plan_st, "codegen %s", g->dialect == GPU_HIP ? "rocm" : "cuda");
  uint32_t params = gpu_param_count(f);
  g->var_names = ingot_xcalloc(f->var_count ? f->var_count : 1, sizeof(char*));
  g->buf_names = ingot_xcalloc(f->buffer_count ? f->buffer_count : 1, sizeof(char*));
  g->in_scope = ingot_xcalloc(f->var_count ? f->var_count : 1, 1);
  for (uint32_t i = 0; i < f->var_count; ++i) gp_unique_name(g->var_names, i, "v_", f->vars[i].name);
  for (uint32_t i = 0; i < f->buffer_count; ++i)
    gp_unique_name(g->buf_names, i, i < params ? "b_" : "s_", f->buffers[i].name);

  ingot_strbuf_t head = {0}, body = {0};
  uint32_t threads = g->plan.block[0] * g->plan.block[1] * g->plan.block[2];
  ingot_strbuf_appendf(&head, "/* ---- %s: grid %u x %u x %u, block %u x %u x %u */\n", f->name, g->plan.grid[0],
                       g->plan.grid[1], g->plan.grid[2], g->plan.block[0], g->plan.block[1], g->plan.block[2]);
  ingot_strbuf_appendf(&head, "extern \"C\" __global__ void __launch_bounds__(%u) %s(", threads, f->name);
  ingot_status_t st = INGOT_OK;
  for (uint32_t i = 0; i < params && st == INGOT_OK; ++i) {
    const char* ty;
    st = gp_type(g, f->buffers[i].dtype, &ty);
    if (st != INGOT_OK) break;
    ingot_strbuf_appendf(&head, "%s%s%s* __restrict__ %s", i ? ", " : "",
                         f->buffers[i].role == INGOT_IR_BUFFER_INPUT ? "const " : "", ty, g->buf_names[i]);
  }
  ingot_strbuf_append(&head, ") {\n");
  for (uint32_t i = params; i < f->buffer_count && st == INGOT_OK; ++i) {
    const char* ty;
    st = gp_type(g, f->buffers[i].dtype, &ty);
    if (st != INGOT_OK) break;
    ingot_strbuf_appendf(&head, "  __shared__ %s %s[%lld];\n", ty, g->buf_names[i],
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
  gp_func_free(g);
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
    g.f = funcs[i];
    g.target = target;
    g.dialect = dialect;
    g.max_bytes = (size_t)1 << 30;
    st = gp_func(&g, &m);
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
