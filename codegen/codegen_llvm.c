/* Target `llvm`: loop IR -> LLVM IR through the LLVM-C API (LLVM 14).
 *
 * Generic over the IR like the C target: every expression and statement kind
 * maps to LLVM IR; nothing here knows about graph ops. The module holds:
 *   - per IR function an internal body `void(env*, T0* noalias, T1* noalias,
 *     ...)` and its entry `i32(env*, i8** args)` (the kernel ABI of
 *     runtime/ingot_format.h) which unpacks the arguments and calls it;
 *   - per PARALLEL loop an outlined body run through env->parallel_for: a
 *     `void(i8* ctx, i64 begin, i64 end)` that unpacks a context struct (env,
 *     buffers, the enclosing variables it reads) and calls an internal
 *     `void(env*, noalias buffers..., variables..., begin, end)`;
 *   - the math library (codegen_llvm_math.c), hidden memcpy/memset/memmove,
 *     the kernel table and the exported ingot_library_query.
 *
 * Variables live in allocas at the top of their function (SROA makes them
 * registers); every loop is a plain counted loop.
 *
 * VECTORIZED loops get explicit vector types: lanes (loop.lanes, set by
 * ingot_codegen_prepare) = target vector bytes / size of the dtype the loop
 * stores (16 floats on AVX-512, 8 on AVX2, 4 on NEON). The body is emitted once for `lanes` iterations at a time:
 *   - an expression that does not depend on the loop variable (nor on a
 *     local that does) stays scalar ("uniform") and is broadcast where it
 *     meets a vector;
 *   - a load or store whose index is affine in the loop variable with
 *     coefficient 1 becomes one vector load/store at the index of lane 0;
 *     other varying indices become gathers/scatters;
 *   - an IF on a varying condition narrows a lane mask (masked loads, stores
 *     and assignments below it, skipped when no lane is active; at the top
 *     of the body, run unmasked when every lane is); a SELECT on
 *     a varying condition evaluates each arm under its own mask, because
 *     selects are lazy in the IR (padding reads out of bounds otherwise);
 *   - the tail (extent not a multiple of the lanes) runs in narrower
 *     vectors (half the lanes, a quarter, ...) and a last scalar iteration.
 * Which loops vectorize, and their lanes, is settled before this file runs
 * (ingot_codegen_prepare, codegen_prepare.c, INGOT_CODEGEN_VECTOR_LANES): a
 * VECTORIZED loop whose iterations are not visibly independent (it assigns
 * an outer local, a store index does not move with the loop, or it reads a
 * buffer it writes at another index) arrives as a SERIAL loop; so does a
 * PARALLEL loop that is not outlined. The lane analysis this file needs for
 * printing (varying, affine) is shared with that pass (codegen_vector.c). a*b+c becomes llvm.fmuladd (FMA where the
 * target has it, as the C target's -ffp-contract=fast). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm/Config/llvm-config.h>

#include "codegen/codegen.h"
#include "codegen_internal.h"
#include "codegen_llvm_internal.h"

enum {
  kMaxUnroll = 64,            /* UNROLLED loops up to this extent are unrolled here */
  kMaxUnrollNodes = 6000,     /* ... when extent * body size stays below this */
  kMaxNodes = 8 * 1000 * 1000 /* expression nodes emitted per module */
};

/* ---- Shared helpers (declared in codegen_llvm_internal.h). */
LLVMValueRef ingot_llvm_intrinsic(ingot_llvm_module_t* m, const char* name, LLVMTypeRef* types,
                                  unsigned type_count, LLVMTypeRef* out_fn_type) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  *out_fn_type = LLVMIntrinsicGetType(m->ctx, id, types, type_count);
  return LLVMGetIntrinsicDeclaration(m->mod, id, types, type_count);
}

LLVMValueRef ingot_llvm_call_intrinsic(ingot_llvm_module_t* m, LLVMBuilderRef b, const char* name,
                                       LLVMTypeRef type, LLVMValueRef* args, unsigned count) {
  LLVMTypeRef ft;
  LLVMValueRef fn = ingot_llvm_intrinsic(m, name, &type, 1, &ft);
  return LLVMBuildCall2(b, ft, fn, args, count, "");
}

static void add_string_attr(LLVMContextRef ctx, LLVMValueRef fn, const char* k, const char* v) {
  LLVMAttributeRef a = LLVMCreateStringAttribute(ctx, k, (unsigned)strlen(k), v, (unsigned)strlen(v));
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, a);
}

static void add_enum_attr(LLVMContextRef ctx, LLVMValueRef fn, unsigned index, const char* name) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(fn, index, LLVMCreateEnumAttribute(ctx, kind, 0));
}

/* The scheduling model for a named CPU: LLVM learned some names after the
 * version we build with, and warns on stderr for each function given one it
 * does not know; those get the nearest older CPU's model. */
static const char* llvm_tune_cpu(const char* cpu) {
#if LLVM_VERSION_MAJOR < 16
  if (strcmp(cpu, "znver4") == 0) return "znver3";
#endif
  return cpu;
}

void ingot_llvm_function_attrs(ingot_llvm_module_t* m, LLVMValueRef fn) {
  char width[16];
  snprintf(width, sizeof(width), "%u", m->vector_bits);
  add_enum_attr(m->ctx, fn, LLVMAttributeFunctionIndex, "nounwind");
  add_string_attr(m->ctx, fn, "no-builtins", "");
  add_string_attr(m->ctx, fn, "frame-pointer", "none");
  add_string_attr(m->ctx, fn, "target-cpu", m->target->cpu[0] ? m->target->cpu : "generic");
  if (m->target->features[0]) add_string_attr(m->ctx, fn, "target-features", m->target->features);
  if (m->target->tune[0]) add_string_attr(m->ctx, fn, "tune-cpu", llvm_tune_cpu(m->target->tune));
  if (m->x86) {
    add_string_attr(m->ctx, fn, "prefer-vector-width", width);
    add_string_attr(m->ctx, fn, "min-legal-vector-width", width);
  }
}

/* ---- The pointer-keyed memo and the lane analysis of a vectorized loop are
 * shared with ingot_codegen_prepare (codegen_vector.c). */
typedef ingot_codegen_memo_t memo_t;
#define memo_clear ingot_codegen_memo_clear
#define memo_get ingot_codegen_memo_get
#define memo_put ingot_codegen_memo_put

/* ---- ingot_kernel_env_t: its fields' indices and types, from the rows of
 * runtime/ingot_kernel_env.def. */
enum {
#define INGOT_KERNEL_ENV_FIELD(type, name) ENV_##name,
#include "runtime/ingot_kernel_env.def"
  ENV_FIELD_COUNT
};
typedef enum env_type_t {
  ENV_TYPE_U32, ENV_TYPE_PTR, ENV_TYPE_PARALLEL_FOR, ENV_TYPE_F32_F32, ENV_TYPE_F32_F32_F32
} env_type_t;
static const env_type_t k_env_types[] = {
#define INGOT_KERNEL_ENV_FIELD(type, name) ENV_TYPE_##type,
#include "runtime/ingot_kernel_env.def"
};
_Static_assert(sizeof(k_env_types) / sizeof(k_env_types[0]) == ENV_FIELD_COUNT, "env field table");

/* ---- Emitter state. */
typedef struct gen_t {
  ingot_llvm_module_t m;
  ingot_status_t status;        /* the first failure */
  LLVMTypeRef t_env, t_env_ptr; /* ingot_kernel_env_t */
  LLVMTypeRef t_body_fn;        /* void(i8*, i64, i64): a parallel body */
  uint64_t nodes;               /* expression nodes emitted */
  uint32_t par_count;
  memo_t has_load;              /* expr -> reads memory that may be out of bounds */
  const ingot_ir_func_t* cur;   /* the IR function being emitted */
  int64_t* extent;              /* per var of `cur`: its loop's extent, 0 if none */
} gen_t;

/* The vectorized loop being emitted. */
typedef struct vec_t {
  ingot_codegen_lanes_t a;      /* its loop variable and what varies with it */
  unsigned lanes;
  LLVMValueRef base;            /* i64: the variable in lane 0 */
  LLVMValueRef mask;            /* <lanes x i1> lanes that run, NULL: all */
} vec_t;

/* One LLVM function being emitted. */
typedef struct fn_t {
  gen_t* g;
  const ingot_ir_func_t* f;
  LLVMValueRef fn;
  LLVMBuilderRef b;
  LLVMValueRef env;             /* ingot_kernel_env_t* */
  LLVMValueRef* bufs;           /* per buffer: pointer to its element type */
  LLVMValueRef* slots;          /* per var: its alloca, NULL out of scope */
  LLVMTypeRef* slot_types;
  bool in_parallel;             /* an outlined body: nested PARALLEL runs serially */
  vec_t* vec;                   /* NULL outside vectorized loops */
} fn_t;

static void* fail(fn_t* F, ingot_status_t code, const char* fmt, ...) INGOT_PRINTF(3, 4);
static void* fail(fn_t* F, ingot_status_t code, const char* fmt, ...) {
  if (F->g->status == INGOT_OK) {
    char msg[1024];
    va_list args;
    va_start(args, fmt);
    vsnprintf(msg, sizeof(msg), fmt, args);
    va_end(args);
    F->g->status = ingot_fail(code, "codegen llvm: function '%s': %s", F->f->name ? F->f->name : "?", msg);
  }
  return NULL;
}

#define TRY(x)               \
  do {                       \
    if (!(x)) return NULL;   \
  } while (0)
#define TRY_OK(x)            \
  do {                       \
    if (!(x)) return false;  \
  } while (0)

/* ---- Types. */
static bool is_float(ingot_dtype_t t) { return t == INGOT_DTYPE_F32 || t == INGOT_DTYPE_F64; }
static bool is_int(ingot_dtype_t t) { return ingot_ir_dtype_is_int(t); }
/* U8 U16 U32 U64 and BOOL: zero-extended, compared and divided unsigned */
static bool is_unsigned(ingot_dtype_t t) { return ingot_ir_dtype_is_unsigned(t); }

/* The type of a value of `t` (BOOL: i1); NULL when unsupported. */
static LLVMTypeRef value_type(gen_t* g, ingot_dtype_t t) {
  switch (t) {
    case INGOT_DTYPE_F32: return g->m.t_f32;
    case INGOT_DTYPE_F64: return g->m.t_f64;
    case INGOT_DTYPE_I8:
    case INGOT_DTYPE_U8: return g->m.t_i8;
    case INGOT_DTYPE_I16:
    case INGOT_DTYPE_U16:
    case INGOT_DTYPE_F16:  /* float16, bfloat16: storage, their bits (cast() converts) */
    case INGOT_DTYPE_BF16: return LLVMInt16TypeInContext(g->m.ctx);
    case INGOT_DTYPE_I32:
    case INGOT_DTYPE_U32: return g->m.t_i32;
    case INGOT_DTYPE_I64:
    case INGOT_DTYPE_U64: return g->m.t_i64;
    case INGOT_DTYPE_BOOL: return g->m.t_i1;
    default: return NULL;
  }
}

/* The type of an element in memory (BOOL: one byte). */
static LLVMTypeRef mem_type(gen_t* g, ingot_dtype_t t) {
  return t == INGOT_DTYPE_BOOL ? g->m.t_i8 : value_type(g, t);
}

static LLVMTypeRef need_type(fn_t* F, ingot_dtype_t t) {
  LLVMTypeRef ty = value_type(F->g, t);
  if (!ty) return fail(F, INGOT_ERROR_UNSUPPORTED, "dtype %s is not supported by the llvm target", ingot_dtype_name(t));
  return ty;
}

static bool is_vector(LLVMValueRef v) { return LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMVectorTypeKind; }
static unsigned lanes_of(LLVMValueRef v) { return is_vector(v) ? LLVMGetVectorSize(LLVMTypeOf(v)) : 0; }

/* A scalar broadcast to `lanes` (lanes 0 or a vector already: unchanged). */
static LLVMValueRef splat(fn_t* F, LLVMValueRef v, unsigned lanes) {
  if (!lanes || is_vector(v)) return v;
  LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(v), lanes);
  LLVMValueRef one = LLVMBuildInsertElement(F->b, LLVMGetUndef(vt), v, LLVMConstInt(F->g->m.t_i32, 0, 0), "");
  return LLVMBuildShuffleVector(F->b, one, LLVMGetUndef(vt), LLVMConstNull(LLVMVectorType(F->g->m.t_i32, lanes)), "");
}

/* Makes a and b the same shape (both scalar, or both vectors). */
static void same_shape(fn_t* F, LLVMValueRef* a, LLVMValueRef* b) {
  unsigned n = lanes_of(*a) > lanes_of(*b) ? lanes_of(*a) : lanes_of(*b);
  *a = splat(F, *a, n);
  *b = splat(F, *b, n);
}

static LLVMValueRef const_of(LLVMTypeRef t, int64_t v) { return ingot_llvm_const_int(t, v); }

/* An alloca at the top of the current function's entry block. */
static LLVMValueRef entry_alloca(fn_t* F, LLVMTypeRef t) {
  LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(F->fn);
  LLVMBuilderRef tb = LLVMCreateBuilderInContext(F->g->m.ctx);
  LLVMValueRef first = LLVMGetFirstInstruction(entry);
  if (first) LLVMPositionBuilderBefore(tb, first);
  else LLVMPositionBuilderAtEnd(tb, entry);
  LLVMValueRef a = LLVMBuildAlloca(tb, t, "");
  LLVMDisposeBuilder(tb);
  return a;
}

static LLVMBasicBlockRef new_block(fn_t* F, const char* name) {
  return LLVMAppendBasicBlockInContext(F->g->m.ctx, F->fn, name);
}

/* ---- Analyses. */
/* Interval arithmetic on integer expressions: true with [*lo, *hi] when the
 * value is known to lie there (loop variables from their extents). */
#define RANGE_LIMIT ((int64_t)1 << 60)
static bool range_of(const gen_t* g, const ingot_ir_expr_t* e, int64_t* lo, int64_t* hi) {
  int64_t al, ah, bl, bh;
  switch (e->kind) {
    case INGOT_IR_EXPR_INT:
      *lo = *hi = e->u.i;
      return e->u.i > -RANGE_LIMIT && e->u.i < RANGE_LIMIT;
    case INGOT_IR_EXPR_VAR:
      if (e->u.var >= g->cur->var_count || g->extent[e->u.var] <= 0) return false;
      *lo = 0;
      *hi = g->extent[e->u.var] - 1;
      return true;
    case INGOT_IR_EXPR_LOAD:
      if (e->dtype == INGOT_DTYPE_U8) { *lo = 0; *hi = 255; return true; }
      if (e->dtype == INGOT_DTYPE_I8) { *lo = -128; *hi = 127; return true; }
      if (e->dtype == INGOT_DTYPE_BOOL) { *lo = 0; *hi = 1; return true; }
      return false;
    case INGOT_IR_EXPR_CAST:
      if (!is_int(e->dtype) || (!is_int(e->u.unary.a->dtype) && e->u.unary.a->dtype != INGOT_DTYPE_BOOL)) return false;
      if (!range_of(g, e->u.unary.a, lo, hi)) return false;
      /* a narrowing cast keeps the value only if it fits */
      if (e->dtype == INGOT_DTYPE_I8) return *lo >= -128 && *hi <= 127;
      if (e->dtype == INGOT_DTYPE_U8) return *lo >= 0 && *hi <= 255;
      if (e->dtype == INGOT_DTYPE_I32) return *lo >= INT32_MIN && *hi <= INT32_MAX;
      return true;
    case INGOT_IR_EXPR_SELECT:
      if (!range_of(g, e->u.select.a, &al, &ah) || !range_of(g, e->u.select.b, &bl, &bh)) return false;
      *lo = al < bl ? al : bl;
      *hi = ah > bh ? ah : bh;
      return true;
    case INGOT_IR_EXPR_BINARY:
      if (!is_int(e->dtype)) return false;
      if (!range_of(g, e->u.binary.a, &al, &ah) || !range_of(g, e->u.binary.b, &bl, &bh)) return false;
      switch (e->u.binary.op) {
        case INGOT_IR_ADD: *lo = al + bl; *hi = ah + bh; break;
        case INGOT_IR_SUB: *lo = al - bh; *hi = ah - bl; break;
        case INGOT_IR_MUL: {
          if (al <= -(1 << 30) || ah >= (1 << 30) || bl <= -(1 << 30) || bh >= (1 << 30)) return false;
          int64_t c[4] = {al * bl, al * bh, ah * bl, ah * bh};
          *lo = *hi = c[0];
          for (int i = 1; i < 4; ++i) {
            if (c[i] < *lo) *lo = c[i];
            if (c[i] > *hi) *hi = c[i];
          }
          break;
        }
        case INGOT_IR_MIN: *lo = al < bl ? al : bl; *hi = ah < bh ? ah : bh; break;
        case INGOT_IR_MAX: *lo = al > bl ? al : bl; *hi = ah > bh ? ah : bh; break;
        case INGOT_IR_DIV:
          if (bl != bh || bl <= 0) return false;
          *lo = al >= 0 ? al / bl : -((-al + bl - 1) / bl);
          *hi = ah >= 0 ? ah / bl : -((-ah + bl - 1) / bl);
          break;
        case INGOT_IR_MOD:
          if (bl != bh || bl <= 0) return false;
          *lo = 0;
          *hi = bl - 1;
          if (al >= 0 && ah < bl) { *lo = al; *hi = ah; }
          break;
        default: return false;
      }
      return *lo > -RANGE_LIMIT && *hi < RANGE_LIMIT;
    default: return false;
  }
}

/* A load whose index is provably inside its buffer may run speculatively. */
static bool load_in_bounds(const gen_t* g, const ingot_ir_expr_t* e) {
  int64_t lo, hi;
  if (e->u.load.buffer >= g->cur->buffer_count || !range_of(g, e->u.load.index, &lo, &hi)) return false;
  return lo >= 0 && hi < ingot_ir_buffer_numel(&g->cur->buffers[e->u.load.buffer]);
}

/* Whether evaluating `e` may read memory out of bounds (a load whose index
 * is not provably in range): such arms of a select are evaluated lazily. */
static bool has_load(gen_t* g, const ingot_ir_expr_t* e) {
  if (!e) return false;
  int got = memo_get(&g->has_load, e);
  if (got) return got - 1;
  bool r = false;
  switch (e->kind) {
    case INGOT_IR_EXPR_LOAD: r = !load_in_bounds(g, e) || has_load(g, e->u.load.index); break;
    case INGOT_IR_EXPR_UNARY:
    case INGOT_IR_EXPR_CAST: r = has_load(g, e->u.unary.a); break;
    case INGOT_IR_EXPR_BINARY: r = has_load(g, e->u.binary.a) || has_load(g, e->u.binary.b); break;
    case INGOT_IR_EXPR_SELECT:
      r = has_load(g, e->u.select.cond) || has_load(g, e->u.select.a) || has_load(g, e->u.select.b);
      break;
    default: break;
  }
  memo_put(&g->has_load, e, r);
  return r;
}


/* Whether `e` differs between the lanes of the vectorized loop. */
static bool varying(vec_t* V, const ingot_ir_expr_t* e) { return V && e && ingot_codegen_lanes_varying(&V->a, e); }

/* e == uniform + coef * var: true with *coef set, false when not affine. */
static bool affine(vec_t* V, const ingot_ir_expr_t* e, int64_t* coef) { return ingot_codegen_lanes_affine(&V->a, e, coef); }

/* Sets up V for the VECTORIZED loop `s` and returns its lane count, or 0
 * when the loop runs scalar: ingot_codegen_prepare settled that (and the
 * lanes) by the rules in the file comment. */
static unsigned vector_plan(fn_t* F, const ingot_ir_stmt_t* s, vec_t* V) {
  unsigned lanes = s->u.loop.lanes;
  if (lanes < 2) return 0;
  memset(V, 0, sizeof(*V));
  V->lanes = lanes;
  ingot_codegen_lanes_init(&V->a, F->f, s);
  return lanes;
}

/* Same as the C target's: a non-negative integer expression. */

/* ---- Expressions. */
static LLVMValueRef expr(fn_t* F, const ingot_ir_expr_t* e, bool vec);

/* Calls a scalar function once per lane of `a` (and `b`). */
static LLVMValueRef call_lanes(fn_t* F, LLVMTypeRef ft, LLVMValueRef fn, LLVMValueRef a, LLVMValueRef b) {
  if (b) same_shape(F, &a, &b);
  unsigned n = lanes_of(a);
  LLVMValueRef args[2] = {a, b};
  if (!n) return LLVMBuildCall2(F->b, ft, fn, args, b ? 2 : 1, "");
  LLVMValueRef out = LLVMGetUndef(LLVMTypeOf(a));
  for (unsigned i = 0; i < n; ++i) {
    LLVMValueRef idx = LLVMConstInt(F->g->m.t_i32, i, 0);
    LLVMValueRef la[2] = {LLVMBuildExtractElement(F->b, a, idx, ""), b ? LLVMBuildExtractElement(F->b, b, idx, "") : NULL};
    LLVMValueRef r = LLVMBuildCall2(F->b, ft, fn, la, b ? 2 : 1, "");
    out = LLVMBuildInsertElement(F->b, out, r, idx, "");
  }
  return out;
}

static LLVMValueRef call_math(fn_t* F, ingot_llvm_math_t kind, LLVMValueRef a, LLVMValueRef b) {
  LLVMTypeRef ft;
  if (kind == INGOT_LLVM_MATH_FMODF || kind == INGOT_LLVM_MATH_IPOW || kind == INGOT_LLVM_MATH_FMOD) {
    LLVMValueRef fn = ingot_llvm_math_function(&F->g->m, kind, 0, &ft);
    return call_lanes(F, ft, fn, a, b);
  }
  if (b) same_shape(F, &a, &b);
  LLVMValueRef fn = ingot_llvm_math_function(&F->g->m, kind, lanes_of(a), &ft);
  LLVMValueRef args[2] = {a, b};
  return LLVMBuildCall2(F->b, ft, fn, args, b ? 2 : 1, "");
}

static LLVMValueRef intrinsic1(fn_t* F, const char* name, LLVMValueRef a) {
  return ingot_llvm_call_intrinsic(&F->g->m, F->b, name, LLVMTypeOf(a), &a, 1);
}

/* env->powf per lane. */
static LLVMValueRef call_powf(fn_t* F, LLVMValueRef a, LLVMValueRef b) {
  gen_t* g = F->g;
  LLVMValueRef slot = LLVMBuildStructGEP2(F->b, g->t_env, F->env, ENV_powf, "");
  LLVMTypeRef params[2] = {g->m.t_f32, g->m.t_f32};
  LLVMTypeRef ft = LLVMFunctionType(g->m.t_f32, params, 2, 0);
  LLVMValueRef fp = LLVMBuildLoad2(F->b, LLVMPointerType(ft, 0), slot, "");
  return call_lanes(F, ft, fp, a, b);
}

/* unary() and binary() below switch over every op of lower/ir_ops.def: a new
 * row there changes these counts and stops the build until it is handled. */
_Static_assert(INGOT_IR_UNARY_COUNT_ == 24, "unary(): handle the new op of lower/ir_ops.def");
_Static_assert(INGOT_IR_BINARY_COUNT_ == 21, "binary(): handle the new op of lower/ir_ops.def");
_Static_assert(INGOT_IR_ATANH - INGOT_IR_SIN == INGOT_LLVM_MATH_ATANH - INGOT_LLVM_MATH_SIN,
               "unary(): the trigonometric ops map to the math functions in order");

static LLVMValueRef unsupported(fn_t* F, const char* what, ingot_dtype_t t) {
  return fail(F, INGOT_ERROR_UNSUPPORTED, "%s on %s is not supported by the llvm target", what, ingot_dtype_name(t));
}

static LLVMValueRef half_unary(fn_t* F, ingot_ir_unary_op_t op, LLVMValueRef a);
static LLVMValueRef half_binary(fn_t* F, ingot_ir_binary_op_t op, LLVMValueRef a, LLVMValueRef c);

static LLVMValueRef unary(fn_t* F, const ingot_ir_expr_t* e, bool vec) {
  const ingot_ir_expr_t* ae = e->u.unary.a;
  ingot_dtype_t t = ae->dtype;
  bool f32 = t == INGOT_DTYPE_F32, fl = is_float(t);
  ingot_ir_unary_op_t op = e->u.unary.op;
  if (op <= 0 || op >= INGOT_IR_UNARY_COUNT_) return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "unknown unary op %d", (int)op);
  const char* name = ingot_ir_unary_op_name(op);
  TRY(need_type(F, e->dtype));
  LLVMValueRef a;
  TRY(a = expr(F, ae, vec));
  LLVMBuilderRef b = F->b;
  if (t == INGOT_DTYPE_F16 && ingot_ir_unary_op_half(op)) return half_unary(F, op, a);
  switch (op) {
    case INGOT_IR_NEG:
      if (fl) return LLVMBuildFNeg(b, a, "");
      if (is_int(t)) return LLVMBuildSub(b, LLVMConstNull(LLVMTypeOf(a)), a, "");
      return unsupported(F, name, t);
    case INGOT_IR_ABS:
      if (fl) return intrinsic1(F, "llvm.fabs", a);
      if (is_unsigned(t)) return a;
      if (is_int(t)) {
        LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, a, LLVMConstNull(LLVMTypeOf(a)), "");
        return LLVMBuildSelect(b, neg, LLVMBuildSub(b, LLVMConstNull(LLVMTypeOf(a)), a, ""), a, "");
      }
      return unsupported(F, name, t);
    case INGOT_IR_SQRT:
      if (fl) return intrinsic1(F, "llvm.sqrt", a);
      return unsupported(F, name, t);
    case INGOT_IR_FLOOR:
    case INGOT_IR_CEIL:
      if (is_int(t)) return a;
      if (!fl) return unsupported(F, name, t);
      if (F->g->m.has_round) return intrinsic1(F, op == INGOT_IR_FLOOR ? "llvm.floor" : "llvm.ceil", a);
      if (f32) return call_math(F, op == INGOT_IR_FLOOR ? INGOT_LLVM_MATH_FLOORF : INGOT_LLVM_MATH_CEILF, a, NULL);
      return call_math(F, op == INGOT_IR_FLOOR ? INGOT_LLVM_MATH_FLOOR : INGOT_LLVM_MATH_CEIL, a, NULL);
    case INGOT_IR_EXP:
    case INGOT_IR_LOG:
    case INGOT_IR_TANH:
    case INGOT_IR_ERF: {
      if (!fl) return unsupported(F, name, t);
      static const ingot_llvm_math_t k32[] = {INGOT_LLVM_MATH_EXPF, INGOT_LLVM_MATH_LOGF, INGOT_LLVM_MATH_TANHF,
                                              INGOT_LLVM_MATH_ERFF};
      static const ingot_llvm_math_t k64[] = {INGOT_LLVM_MATH_EXP, INGOT_LLVM_MATH_LOG, INGOT_LLVM_MATH_TANH,
                                              INGOT_LLVM_MATH_ERF};
      int i = op == INGOT_IR_EXP ? 0 : op == INGOT_IR_LOG ? 1 : op == INGOT_IR_TANH ? 2 : 3;
      return call_math(F, f32 ? k32[i] : k64[i], a, NULL);
    }
    case INGOT_IR_ROUND:
      if (is_int(t)) return a;
      if (!fl) return unsupported(F, name, t);
      /* one instruction where the target rounds (roundps/vrndscaleps with
       * imm 8, frintn): ties to even whatever the rounding mode */
      if (F->g->m.has_round) return intrinsic1(F, "llvm.roundeven", a);
      return call_math(F, f32 ? INGOT_LLVM_MATH_ROUNDF : INGOT_LLVM_MATH_ROUND, a, NULL);
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
    case INGOT_IR_ATANH: {
      /* The double cores; floats widen and round the result once. */
      if (!fl) return unsupported(F, name, t);
      ingot_llvm_math_t kind = (ingot_llvm_math_t)(INGOT_LLVM_MATH_SIN + (op - INGOT_IR_SIN));
      if (!f32) return call_math(F, kind, a, NULL);
      LLVMTypeRef dt = ingot_llvm_vec_type(F->g->m.t_f64, lanes_of(a));
      LLVMValueRef r = call_math(F, kind, LLVMBuildFPExt(b, a, dt, ""), NULL);
      return LLVMBuildFPTrunc(b, r, LLVMTypeOf(a), "");
    }
    case INGOT_IR_NOT:
      if (t != INGOT_DTYPE_BOOL) return unsupported(F, name, t);
      return LLVMBuildNot(b, a, "");
    case INGOT_IR_BITNOT:
      if (!is_int(t)) return unsupported(F, name, t);
      return LLVMBuildNot(b, a, "");
    default: return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "unknown unary op %d", (int)op);
  }
}

static bool is_fmul(const ingot_ir_expr_t* e) {
  return e->kind == INGOT_IR_EXPR_BINARY && e->u.binary.op == INGOT_IR_MUL && is_float(e->dtype);
}

/* a*b + c as one fmuladd (sign < 0: a*b - c). */
static LLVMValueRef fmuladd(fn_t* F, const ingot_ir_expr_t* mul, const ingot_ir_expr_t* add, bool negate_add,
                            bool vec) {
  LLVMValueRef x, y, z;
  TRY(x = expr(F, mul->u.binary.a, vec));
  TRY(y = expr(F, mul->u.binary.b, vec));
  TRY(z = expr(F, add, vec));
  if (negate_add) z = LLVMBuildFNeg(F->b, z, "");
  unsigned n = lanes_of(x);
  if (lanes_of(y) > n) n = lanes_of(y);
  if (lanes_of(z) > n) n = lanes_of(z);
  x = splat(F, x, n);
  y = splat(F, y, n);
  z = splat(F, z, n);
  LLVMValueRef args[3] = {x, y, z};
  return ingot_llvm_call_intrinsic(&F->g->m, F->b, "llvm.fmuladd", LLVMTypeOf(x), args, 3);
}

/* Floor division and modulo in int64 (Python / ONNX semantics): division by
 * 0 gives 0, by -1 negates (wrapping), modulo by 0 or -1 gives 0. */
static LLVMValueRef floor_divmod(fn_t* F, LLVMValueRef a, LLVMValueRef bv, bool mod) {
  LLVMBuilderRef b = F->b;
  LLVMTypeRef t = LLVMTypeOf(a);
  LLVMValueRef zero = LLVMConstNull(t), one = const_of(t, 1), minus1 = const_of(t, -1);
  LLVMValueRef is0 = LLVMBuildICmp(b, LLVMIntEQ, bv, zero, "");
  LLVMValueRef ism1 = LLVMBuildICmp(b, LLVMIntEQ, bv, minus1, "");
  LLVMValueRef safe = LLVMBuildSelect(b, LLVMBuildOr(b, is0, ism1, ""), one, bv, "");
  LLVMValueRef r = LLVMBuildSRem(b, a, safe, "");
  LLVMValueRef adjust = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntNE, r, zero, ""),
                                     LLVMBuildICmp(b, LLVMIntSLT, LLVMBuildXor(b, r, bv, ""), zero, ""), "");
  if (mod) {
    LLVMValueRef m = LLVMBuildAdd(b, r, LLVMBuildSelect(b, adjust, bv, zero, ""), "");
    return LLVMBuildSelect(b, LLVMBuildOr(b, is0, ism1, ""), zero, m, "");
  }
  LLVMValueRef q = LLVMBuildSDiv(b, a, safe, "");
  q = LLVMBuildSub(b, q, LLVMBuildZExt(b, adjust, t, ""), "");
  q = LLVMBuildSelect(b, ism1, LLVMBuildSub(b, zero, a, ""), q, "");
  return LLVMBuildSelect(b, is0, zero, q, "");
}

static LLVMValueRef dot4_lanes(fn_t* F, LLVMValueRef acc, LLVMValueRef a, LLVMValueRef c, unsigned n, bool sat16);

static bool is_dot4(const ingot_ir_expr_t* e) {
  return e->kind == INGOT_IR_EXPR_BINARY && (e->u.binary.op == INGOT_IR_DOT4 || e->u.binary.op == INGOT_IR_DOT4S);
}

/* acc + dot4(a, b) on int32 scalars or vectors (acc NULL: 0). With
 * AVX512-VNNI and 16 lanes (8 or 4 with AVX512VL) one vpdpbusd; on other
 * x86 vectors of 4, 8, 16 lanes two pmaddwd; on AArch64 with i8mm one
 * usdot a 4 lanes, with dotprod two sdot; else each operand's bytes
 * widened (a's unsigned, b's signed), multiplied, and the four products of
 * a lane added. */
static LLVMValueRef dot4_add(fn_t* F, LLVMValueRef acc, const ingot_ir_expr_t* dot, bool vec) {
  ingot_llvm_module_t* m = &F->g->m;
  LLVMValueRef a, c;
  TRY(a = expr(F, dot->u.binary.a, vec));
  TRY(c = expr(F, dot->u.binary.b, vec));
  unsigned n = lanes_of(a);
  if (lanes_of(c) > n) n = lanes_of(c);
  if (acc && lanes_of(acc) > n) n = lanes_of(acc);
  if (n) {
    a = splat(F, a, n);
    c = splat(F, c, n);
    if (acc) acc = splat(F, acc, n);
  }
  LLVMTypeRef ty = n ? LLVMVectorType(m->t_i32, n) : m->t_i32;
  if (!acc) acc = LLVMConstNull(ty);
  return dot4_lanes(F, acc, a, c, n, dot->u.binary.op == INGOT_IR_DOT4S);
}

/* dot4_add's arithmetic on values of n lanes (0: scalars); a vector wider
 * than one instruction takes is halved until it fits. sat16: a dot4s (each
 * pair of products fits int16). */
static LLVMValueRef dot4_lanes(fn_t* F, LLVMValueRef acc, LLVMValueRef a, LLVMValueRef c, unsigned n, bool sat16) {
  ingot_llvm_module_t* m = &F->g->m;
  LLVMBuilderRef b = F->b;
  unsigned widest = m->vnni_lanes_max ? m->vnni_lanes_max : m->pmaddwd_lanes_max;
  bool a64 = m->a64_usdot || m->a64_sdot;
  if (a64) widest = 4;
  if ((m->x86 || a64) && widest && n > widest && n <= 64 && (n & (n - 1)) == 0) {
    /* Halves, each done alone, then joined again. */
    LLVMValueRef mask[64], half[2];
    for (unsigned h = 0; h < 2; ++h) {
      for (unsigned l = 0; l < n / 2; ++l) mask[l] = LLVMConstInt(m->t_i32, h * (n / 2) + l, 0);
      LLVMValueRef sel = LLVMConstVector(mask, n / 2);
      half[h] = dot4_lanes(F, LLVMBuildShuffleVector(b, acc, LLVMGetUndef(LLVMTypeOf(acc)), sel, ""),
                           LLVMBuildShuffleVector(b, a, LLVMGetUndef(LLVMTypeOf(a)), sel, ""),
                           LLVMBuildShuffleVector(b, c, LLVMGetUndef(LLVMTypeOf(c)), sel, ""), n / 2, sat16);
    }
    for (unsigned l = 0; l < n; ++l) mask[l] = LLVMConstInt(m->t_i32, l, 0);
    return LLVMBuildShuffleVector(b, half[0], half[1], LLVMConstVector(mask, n), "");
  }
  if (m->vnni_lanes_max && (n == 16 || ((n == 8 || n == 4) && m->vnni_vl))) {
    const char* name = n == 16 ? "llvm.x86.avx512.vpdpbusd.512"
                       : n == 8 ? "llvm.x86.avx512.vpdpbusd.256" : "llvm.x86.avx512.vpdpbusd.128";
    LLVMTypeRef ft;
    LLVMValueRef fn = ingot_llvm_intrinsic(m, name, NULL, 0, &ft);
    LLVMValueRef args[3] = {acc, a, c};
    return LLVMBuildCall2(b, ft, fn, args, 3, "");
  }
  if (a64 && n == 4) {
    /* usdot: a's bytes unsigned, c's signed. Without i8mm, sdot of signed
     * bytes: a = a' + 128 with a' = a ^ 0x80 as int8, so sum a c = sdot(a',
     * c) + 128 sum c = sdot(a', c) - sdot(-128.., c). */
    LLVMTypeRef v16 = LLVMVectorType(m->t_i8, 16), v4 = LLVMVectorType(m->t_i32, 4);
    LLVMTypeRef types[2] = {v4, v16};
    LLVMValueRef cb = LLVMBuildBitCast(b, c, v16, "");
    LLVMTypeRef ft;
    if (m->a64_usdot) {
      LLVMValueRef fn = ingot_llvm_intrinsic(m, "llvm.aarch64.neon.usdot", types, 2, &ft);
      LLVMValueRef args[3] = {acc, LLVMBuildBitCast(b, a, v16, ""), cb};
      return LLVMBuildCall2(b, ft, fn, args, 3, "");
    }
    LLVMValueRef k80 = splat(F, LLVMConstInt(m->t_i8, 0x80, 0), 16);
    LLVMValueRef fn = ingot_llvm_intrinsic(m, "llvm.aarch64.neon.sdot", types, 2, &ft);
    LLVMValueRef args[3] = {acc, LLVMBuildXor(b, LLVMBuildBitCast(b, a, v16, ""), k80, ""), cb};
    LLVMValueRef main = LLVMBuildCall2(b, ft, fn, args, 3, "");
    LLVMValueRef corr_args[3] = {LLVMConstNull(v4), k80, cb};
    return LLVMBuildSub(b, main, LLVMBuildCall2(b, ft, fn, corr_args, 3, ""), "");
  }
  if (sat16 && m->x86 && (n == 4 || n == 8 || n == 16) && n <= m->pmaddwd_lanes_max &&
      (n > 4 || ingot_target_has_feature(m->target, INGOT_TARGET_FEATURE_SSSE3))) {
    /* dot4s without VNNI: pmaddubsw sums each pair of byte products into
     * int16 (exact: the producer bounded them), pmaddwd by ones the two
     * pairs of a lane into int32. */
    LLVMTypeRef i16 = LLVMInt16TypeInContext(m->ctx);
    LLVMTypeRef bytes = LLVMVectorType(m->t_i8, 4 * n), ft;
    const char* ub = n == 16 ? "llvm.x86.avx512.pmaddubs.w.512" : n == 8 ? "llvm.x86.avx2.pmadd.ub.sw"
                                                                        : "llvm.x86.ssse3.pmadd.ub.sw.128";
    const char* wd = n == 16 ? "llvm.x86.avx512.pmaddw.d.512" : n == 8 ? "llvm.x86.avx2.pmadd.wd" : "llvm.x86.sse2.pmadd.wd";
    LLVMValueRef fn = ingot_llvm_intrinsic(m, ub, NULL, 0, &ft);
    LLVMValueRef args[2] = {LLVMBuildBitCast(b, a, bytes, ""), LLVMBuildBitCast(b, c, bytes, "")};
    LLVMValueRef pairs = LLVMBuildCall2(b, ft, fn, args, 2, "");
    fn = ingot_llvm_intrinsic(m, wd, NULL, 0, &ft);
    LLVMValueRef args2[2] = {pairs, splat(F, LLVMConstInt(i16, 1, 0), 2 * n)};
    return LLVMBuildAdd(b, acc, LLVMBuildCall2(b, ft, fn, args2, 2, ""), "");
  }
  if (m->x86 && (n == 4 || n == 8 || n == 16) && n <= m->pmaddwd_lanes_max) {
    /* Exact without VNNI: the bytes as 16-bit halves, a's even and odd
     * bytes zero-extended, b's sign-extended; pmaddwd sums each pair of
     * 16-bit products into int32 (|sum| < 2^16: no saturation, unlike
     * pmaddubsw). */
    LLVMTypeRef h = LLVMVectorType(LLVMInt16TypeInContext(m->ctx), 2 * n);
    LLVMValueRef ah = LLVMBuildBitCast(b, a, h, ""), ch = LLVMBuildBitCast(b, c, h, "");
    LLVMValueRef k8 = splat(F, LLVMConstInt(LLVMInt16TypeInContext(m->ctx), 8, 0), 2 * n);
    LLVMValueRef kff = splat(F, LLVMConstInt(LLVMInt16TypeInContext(m->ctx), 0xff, 0), 2 * n);
    LLVMValueRef a_even = LLVMBuildAnd(b, ah, kff, ""), a_odd = LLVMBuildLShr(b, ah, k8, "");
    LLVMValueRef c_even = LLVMBuildAShr(b, LLVMBuildShl(b, ch, k8, ""), k8, ""), c_odd = LLVMBuildAShr(b, ch, k8, "");
    const char* name = n == 16 ? "llvm.x86.avx512.pmaddw.d.512" : n == 8 ? "llvm.x86.avx2.pmadd.wd" : "llvm.x86.sse2.pmadd.wd";
    LLVMTypeRef ft;
    LLVMValueRef fn = ingot_llvm_intrinsic(m, name, NULL, 0, &ft);
    LLVMValueRef even[2] = {a_even, c_even}, odd[2] = {a_odd, c_odd};
    LLVMValueRef sum = LLVMBuildAdd(b, LLVMBuildCall2(b, ft, fn, even, 2, ""), LLVMBuildCall2(b, ft, fn, odd, 2, ""), "");
    return LLVMBuildAdd(b, acc, sum, "");
  }
  unsigned w = n ? n : 1;
  LLVMTypeRef bytes = LLVMVectorType(m->t_i8, 4 * w), wide = LLVMVectorType(m->t_i32, 4 * w);
  LLVMValueRef prod = LLVMBuildMul(b, LLVMBuildZExt(b, LLVMBuildBitCast(b, a, bytes, ""), wide, ""),
                                   LLVMBuildSExt(b, LLVMBuildBitCast(b, c, bytes, ""), wide, ""), "");
  LLVMValueRef sum = NULL;
  for (unsigned j = 0; j < 4; ++j) {
    LLVMValueRef mask[64];
    for (unsigned l = 0; l < w; ++l) mask[l] = LLVMConstInt(m->t_i32, 4 * l + j, 0);
    LLVMValueRef part = LLVMBuildShuffleVector(b, prod, LLVMGetUndef(wide), LLVMConstVector(mask, w), "");
    sum = sum ? LLVMBuildAdd(b, sum, part, "") : part;
  }
  if (!n) sum = LLVMBuildExtractElement(b, sum, LLVMConstInt(m->t_i32, 0, 0), "");
  return LLVMBuildAdd(b, acc, sum, "");
}

/* dot2(a, b) on int32 scalars or vectors: on x86 one pmaddwd for 4, 8 or
 * 16 lanes (wider vectors halved until they fit), else each operand's
 * 16-bit halves sign-extended, multiplied and the two products added. */
static LLVMValueRef dot2_lanes(fn_t* F, LLVMValueRef a, LLVMValueRef c, unsigned n) {
  ingot_llvm_module_t* m = &F->g->m;
  LLVMBuilderRef b = F->b;
  LLVMTypeRef i16 = LLVMInt16TypeInContext(m->ctx);
  if (m->x86 && m->pmaddwd_lanes_max && n > m->pmaddwd_lanes_max && n <= 64 && (n & (n - 1)) == 0) {
    LLVMValueRef mask[64], half[2];
    for (unsigned h = 0; h < 2; ++h) {
      for (unsigned l = 0; l < n / 2; ++l) mask[l] = LLVMConstInt(m->t_i32, h * (n / 2) + l, 0);
      LLVMValueRef sel = LLVMConstVector(mask, n / 2);
      half[h] = dot2_lanes(F, LLVMBuildShuffleVector(b, a, LLVMGetUndef(LLVMTypeOf(a)), sel, ""),
                           LLVMBuildShuffleVector(b, c, LLVMGetUndef(LLVMTypeOf(c)), sel, ""), n / 2);
    }
    for (unsigned l = 0; l < n; ++l) mask[l] = LLVMConstInt(m->t_i32, l, 0);
    return LLVMBuildShuffleVector(b, half[0], half[1], LLVMConstVector(mask, n), "");
  }
  if (m->x86 && (n == 4 || n == 8 || n == 16) && n <= m->pmaddwd_lanes_max) {
    const char* name = n == 16 ? "llvm.x86.avx512.pmaddw.d.512" : n == 8 ? "llvm.x86.avx2.pmadd.wd" : "llvm.x86.sse2.pmadd.wd";
    LLVMTypeRef h = LLVMVectorType(i16, 2 * n), ft;
    LLVMValueRef fn = ingot_llvm_intrinsic(m, name, NULL, 0, &ft);
    LLVMValueRef args[2] = {LLVMBuildBitCast(b, a, h, ""), LLVMBuildBitCast(b, c, h, "")};
    return LLVMBuildCall2(b, ft, fn, args, 2, "");
  }
  LLVMValueRef k16 = n ? splat(F, LLVMConstInt(m->t_i32, 16, 0), n) : LLVMConstInt(m->t_i32, 16, 0);
  LLVMValueRef a_lo = LLVMBuildAShr(b, LLVMBuildShl(b, a, k16, ""), k16, ""), a_hi = LLVMBuildAShr(b, a, k16, "");
  LLVMValueRef c_lo = LLVMBuildAShr(b, LLVMBuildShl(b, c, k16, ""), k16, ""), c_hi = LLVMBuildAShr(b, c, k16, "");
  return LLVMBuildAdd(b, LLVMBuildMul(b, a_lo, c_lo, ""), LLVMBuildMul(b, a_hi, c_hi, ""), "");
}

static LLVMValueRef dot2(fn_t* F, const ingot_ir_expr_t* e, bool vec) {
  LLVMValueRef a, c;
  TRY(a = expr(F, e->u.binary.a, vec));
  TRY(c = expr(F, e->u.binary.b, vec));
  unsigned n = lanes_of(a);
  if (lanes_of(c) > n) n = lanes_of(c);
  if (n) {
    a = splat(F, a, n);
    c = splat(F, c, n);
  }
  return dot2_lanes(F, a, c, n);
}

/* Converts an integer value of dtype `from` to int64 (C promotion). */
static LLVMValueRef to_i64(fn_t* F, LLVMValueRef v, ingot_dtype_t from) {
  LLVMTypeRef t = ingot_llvm_vec_type(F->g->m.t_i64, lanes_of(v));
  if (from == INGOT_DTYPE_I64) return v;
  if (from == INGOT_DTYPE_U64) return v;
  if (is_unsigned(from)) return LLVMBuildZExt(F->b, v, t, "");
  return LLVMBuildSExt(F->b, v, t, "");
}

static LLVMValueRef binary(fn_t* F, const ingot_ir_expr_t* e, bool vec) {
  const ingot_ir_expr_t* ae = e->u.binary.a;
  const ingot_ir_expr_t* be = e->u.binary.b;
  ingot_dtype_t t = ae->dtype;
  ingot_ir_binary_op_t op = e->u.binary.op;
  if (op <= 0 || op >= INGOT_IR_BINARY_COUNT_) return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "unknown binary op %d", (int)op);
  const char* name = ingot_ir_binary_op_name(op);
  if (be->dtype != t)
    return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "%s of %s and %s: operand dtypes differ", name, ingot_dtype_name(t),
                ingot_dtype_name(be->dtype));
  TRY(need_type(F, e->dtype));
  TRY(need_type(F, t));
  bool fl = is_float(t), in = is_int(t), f32 = t == INGOT_DTYPE_F32;
  bool u8 = is_unsigned(t); /* unsigned compares, min, max */
  LLVMBuilderRef b = F->b;
  /* a*b + c, c + a*b, a*b - c: fused multiply-add (contractable). */
  if (fl && op == INGOT_IR_ADD && is_fmul(ae)) return fmuladd(F, ae, be, false, vec);
  if (fl && op == INGOT_IR_ADD && is_fmul(be)) return fmuladd(F, be, ae, false, vec);
  if (fl && op == INGOT_IR_SUB && is_fmul(ae)) return fmuladd(F, ae, be, true, vec);
  if (fl && op == INGOT_IR_POW && be->kind == INGOT_IR_EXPR_FLOAT && be->u.f == 1.0) return expr(F, ae, vec);
  /* acc + dot4(a, b), dot4(a, b) + acc: one multiply-add of bytes. */
  if (op == INGOT_IR_DOT4 || op == INGOT_IR_DOT4S) {
    if (t != INGOT_DTYPE_I32) return unsupported(F, name, t);
    return dot4_add(F, NULL, e, vec);
  }
  if (op == INGOT_IR_DOT2) {
    if (t != INGOT_DTYPE_I32) return unsupported(F, name, t);
    return dot2(F, e, vec);
  }
  if (op == INGOT_IR_ADD && t == INGOT_DTYPE_I32 && (is_dot4(be) || is_dot4(ae))) {
    LLVMValueRef acc;
    TRY(acc = expr(F, is_dot4(be) ? ae : be, vec));
    return dot4_add(F, acc, is_dot4(be) ? be : ae, vec);
  }
  LLVMValueRef a, c;
  TRY(a = expr(F, ae, vec));
  if (fl && op == INGOT_IR_POW && be->kind == INGOT_IR_EXPR_FLOAT && be->u.f == 2.0) return LLVMBuildFMul(b, a, a, "");
  TRY(c = expr(F, be, vec));
  same_shape(F, &a, &c);
  if (t == INGOT_DTYPE_F16 && ingot_ir_binary_op_half(op)) return half_binary(F, op, a, c);
  switch (op) {
    case INGOT_IR_LT:
    case INGOT_IR_LE:
    case INGOT_IR_EQ:
    case INGOT_IR_NE:
      if (fl) {
        LLVMRealPredicate p = op == INGOT_IR_LT ? LLVMRealOLT : op == INGOT_IR_LE ? LLVMRealOLE
                              : op == INGOT_IR_EQ ? LLVMRealOEQ : LLVMRealUNE;
        return LLVMBuildFCmp(b, p, a, c, "");
      } else {
        LLVMIntPredicate p = op == INGOT_IR_LT ? (u8 ? LLVMIntULT : LLVMIntSLT)
                             : op == INGOT_IR_LE ? (u8 ? LLVMIntULE : LLVMIntSLE)
                             : op == INGOT_IR_EQ ? LLVMIntEQ : LLVMIntNE;
        if (!in && t != INGOT_DTYPE_BOOL) return unsupported(F, name, t);
        return LLVMBuildICmp(b, p, a, c, "");
      }
    case INGOT_IR_AND:
    case INGOT_IR_OR:
      if (t != INGOT_DTYPE_BOOL) return unsupported(F, name, t);
      return op == INGOT_IR_AND ? LLVMBuildAnd(b, a, c, "") : LLVMBuildOr(b, a, c, "");
    default: break;
  }
  if (!fl && !in) return unsupported(F, name, t);
  if (fl) {
    switch (op) {
      case INGOT_IR_ADD: return LLVMBuildFAdd(b, a, c, "");
      case INGOT_IR_SUB: return LLVMBuildFSub(b, a, c, "");
      case INGOT_IR_MUL: return LLVMBuildFMul(b, a, c, "");
      case INGOT_IR_DIV: return LLVMBuildFDiv(b, a, c, "");
      case INGOT_IR_MOD: return call_math(F, f32 ? INGOT_LLVM_MATH_FMODF : INGOT_LLVM_MATH_FMOD, a, c);
      case INGOT_IR_MIN:
      case INGOT_IR_MAX: {
        /* fmin / fmax: a NaN operand yields the other one. */
        LLVMValueRef better = LLVMBuildFCmp(b, op == INGOT_IR_MIN ? LLVMRealOLT : LLVMRealOGT, a, c, "");
        LLVMValueRef cnan = LLVMBuildFCmp(b, LLVMRealUNO, c, c, "");
        return LLVMBuildSelect(b, LLVMBuildOr(b, better, cnan, ""), a, c, "");
      }
      case INGOT_IR_POW:
        if (!f32) return call_math(F, INGOT_LLVM_MATH_POW, a, c);
        return call_powf(F, a, c);
      default: return unsupported(F, name, t);
    }
  }
  LLVMTypeRef ty = LLVMTypeOf(a);
  switch (op) {
    case INGOT_IR_ADD: return LLVMBuildAdd(b, a, c, "");
    case INGOT_IR_SUB: return LLVMBuildSub(b, a, c, "");
    case INGOT_IR_MUL: return LLVMBuildMul(b, a, c, "");
    case INGOT_IR_BITAND: return LLVMBuildAnd(b, a, c, "");
    case INGOT_IR_BITOR: return LLVMBuildOr(b, a, c, "");
    case INGOT_IR_BITXOR: return LLVMBuildXor(b, a, c, "");
    case INGOT_IR_MIN:
      return LLVMBuildSelect(b, LLVMBuildICmp(b, u8 ? LLVMIntULT : LLVMIntSLT, a, c, ""), a, c, "");
    case INGOT_IR_MAX:
      return LLVMBuildSelect(b, LLVMBuildICmp(b, u8 ? LLVMIntUGT : LLVMIntSGT, a, c, ""), a, c, "");
    case INGOT_IR_DIV:
    case INGOT_IR_MOD: {
      bool fast = ingot_ir_expr_nonneg(F->f, ae) && be->kind == INGOT_IR_EXPR_INT && be->u.i > 0;
      if (fast) return op == INGOT_IR_DIV ? LLVMBuildUDiv(b, a, c, "") : LLVMBuildURem(b, a, c, "");
      if (t == INGOT_DTYPE_U64) {
        /* unsigned: floor is truncation; a zero divisor gives 0 (as the int paths) */
        LLVMValueRef zero = LLVMConstNull(LLVMTypeOf(c));
        LLVMValueRef is0 = LLVMBuildICmp(b, LLVMIntEQ, c, zero, "");
        LLVMValueRef safe = LLVMBuildSelect(b, is0, const_of(LLVMTypeOf(c), 1), c, "");
        LLVMValueRef q = op == INGOT_IR_DIV ? LLVMBuildUDiv(b, a, safe, "") : LLVMBuildURem(b, a, safe, "");
        return LLVMBuildSelect(b, is0, zero, q, "");
      }
      LLVMValueRef r = floor_divmod(F, to_i64(F, a, t), to_i64(F, c, t), op == INGOT_IR_MOD);
      return t == INGOT_DTYPE_I64 ? r : LLVMBuildTrunc(b, r, ty, "");
    }
    case INGOT_IR_POW: {
      LLVMValueRef r = call_math(F, INGOT_LLVM_MATH_IPOW, to_i64(F, a, t), to_i64(F, c, t));
      return t == INGOT_DTYPE_I64 ? r : LLVMBuildTrunc(b, r, ty, "");
    }
    default: return unsupported(F, name, t);
  }
}

/* float16 / bfloat16 bits (i16, scalar or vector) to float32, and back with
 * rounding to nearest, ties to even; in integer ops, so that no conversion
 * routine is imported (the same steps as the c target's ingot_h2f / f2h). */
static LLVMValueRef half_to_f32(fn_t* F, LLVMValueRef h, bool bf16) {
  LLVMBuilderRef b = F->b;
  unsigned n = lanes_of(h);
  LLVMTypeRef i32 = ingot_llvm_vec_type(F->g->m.t_i32, n), f32 = ingot_llvm_vec_type(F->g->m.t_f32, n);
  LLVMValueRef u = LLVMBuildZExt(b, h, i32, "");
#define K(v) const_of(i32, (int64_t)(v))
  if (bf16) return LLVMBuildBitCast(b, LLVMBuildShl(b, u, K(16), ""), f32, "");
  if (F->g->m.has_half_ext) { /* exact either way; one instruction (vcvtph2ps, fcvt) instead of the bit recipe */
    LLVMTypeRef half = ingot_llvm_vec_type(LLVMHalfTypeInContext(F->g->m.ctx), n);
    return LLVMBuildFPExt(b, LLVMBuildBitCast(b, h, half, ""), f32, "");
  }
  LLVMValueRef sign = LLVMBuildShl(b, LLVMBuildAnd(b, u, K(0x8000), ""), K(16), "");
  LLVMValueRef e = LLVMBuildAnd(b, LLVMBuildLShr(b, u, K(10), ""), K(0x1f), "");
  LLVMValueRef m = LLVMBuildAnd(b, u, K(0x3ff), "");
  LLVMValueRef mant = LLVMBuildShl(b, m, K(13), "");
  LLVMValueRef normal = LLVMBuildOr(b, LLVMBuildShl(b, LLVMBuildAdd(b, e, K(112), ""), K(23), ""), mant, "");
  LLVMValueRef special = LLVMBuildOr(b, K(0x7f800000), mant, "");
  LLVMValueRef sub = LLVMBuildFMul(b, LLVMBuildUIToFP(b, m, f32, ""),
                                   LLVMConstBitCast(K(0x33800000), f32), ""); /* m * 2^-24, exact */
  sub = LLVMBuildBitCast(b, sub, i32, "");
  LLVMValueRef bits = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, e, K(31), ""), special, normal, "");
  bits = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, e, K(0), ""), sub, bits, "");
  return LLVMBuildBitCast(b, LLVMBuildOr(b, bits, sign, ""), f32, "");
}

/* bfloat16 stays this integer rounding on AVX512-BF16 too: vcvtneps2bf16
 * treats float32 subnormal inputs as zero (0x007fffff gives 0x0000 where
 * this rounds to 0x0080), NaNs and all else alike (checked on a Zen 4). */
static LLVMValueRef f32_to_half(fn_t* F, LLVMValueRef f, bool bf16) {
  LLVMBuilderRef b = F->b;
  unsigned n = lanes_of(f);
  LLVMTypeRef i32 = ingot_llvm_vec_type(F->g->m.t_i32, n), f32 = ingot_llvm_vec_type(F->g->m.t_f32, n);
  LLVMTypeRef i16 = ingot_llvm_vec_type(LLVMInt16TypeInContext(F->g->m.ctx), n);
  LLVMValueRef u = LLVMBuildBitCast(b, f, i32, "");
  LLVMValueRef a = LLVMBuildAnd(b, u, K(0x7fffffff), "");
  LLVMValueRef nan = LLVMBuildICmp(b, LLVMIntUGT, a, K(0x7f800000), "");
  if (bf16) {
    LLVMValueRef lsb = LLVMBuildAnd(b, LLVMBuildLShr(b, u, K(16), ""), K(1), "");
    LLVMValueRef r = LLVMBuildLShr(b, LLVMBuildAdd(b, LLVMBuildAdd(b, u, K(0x7fff), ""), lsb, ""), K(16), "");
    LLVMValueRef q = LLVMBuildOr(b, LLVMBuildLShr(b, u, K(16), ""), K(0x40), "");
    return LLVMBuildTrunc(b, LLVMBuildSelect(b, nan, q, r, ""), i16, "");
  }
  LLVMValueRef sign = LLVMBuildAnd(b, LLVMBuildLShr(b, u, K(16), ""), K(0x8000), "");
  /* normal: round the 13 dropped bits, rebias the exponent */
  LLVMValueRef lsb = LLVMBuildAnd(b, LLVMBuildLShr(b, a, K(13), ""), K(1), "");
  LLVMValueRef rounded = LLVMBuildAdd(b, LLVMBuildAdd(b, a, K(0xfff), ""), lsb, "");
  LLVMValueRef normal = LLVMBuildLShr(b, LLVMBuildSub(b, rounded, K(0x38000000), ""), K(13), "");
  /* subnormal or zero: |f| * 2^24 rounded to an integer, ties to even (2^23 trick) */
  LLVMValueRef v = LLVMBuildFMul(b, LLVMBuildBitCast(b, a, f32, ""), LLVMConstBitCast(K(0x4b800000), f32), "");
  LLVMValueRef magic = LLVMConstBitCast(K(0x4b000000), f32);
  v = LLVMBuildFSub(b, LLVMBuildFAdd(b, v, magic, ""), magic, "");
  LLVMValueRef sub = LLVMBuildFPToUI(b, v, i32, "");
  LLVMValueRef r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, a, K(0x38800000), ""), sub, normal, "");
  r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntUGE, a, K(0x477ff000), ""), K(0x7c00), r, "");
  r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntUGE, a, K(0x7f800000), ""),
                      LLVMBuildSelect(b, nan, K(0x7e00), K(0x7c00), ""), r, "");
  return LLVMBuildTrunc(b, LLVMBuildOr(b, r, sign, ""), i16, "");
#undef K
}

/* float16 arithmetic (the HALF ops of lower/ir_ops.def) on the i16 bits:
 * LLVM half where the target computes it (m.has_half_arith: AArch64 fullfp16
 * fadd/fmul/... .8h, x86 AVX512-FP16 vaddph/...), else through float32 and
 * back, which gives the same bits (lower/ir_ops.def). neg and abs act on the
 * sign bit, min and max select one operand's bits, either way. */
static LLVMValueRef half_operand(fn_t* F, LLVMValueRef h) {
  if (!F->g->m.has_half_arith) return half_to_f32(F, h, false);
  return LLVMBuildBitCast(F->b, h, ingot_llvm_vec_type(LLVMHalfTypeInContext(F->g->m.ctx), lanes_of(h)), "");
}

static LLVMValueRef half_result(fn_t* F, LLVMValueRef r) {
  if (!F->g->m.has_half_arith) return f32_to_half(F, r, false);
  return LLVMBuildBitCast(F->b, r, ingot_llvm_vec_type(LLVMInt16TypeInContext(F->g->m.ctx), lanes_of(r)), "");
}

static LLVMValueRef half_unary(fn_t* F, ingot_ir_unary_op_t op, LLVMValueRef a) {
  LLVMBuilderRef b = F->b;
  LLVMTypeRef t = LLVMTypeOf(a);
  switch (op) {
    case INGOT_IR_NEG: return LLVMBuildXor(b, a, const_of(t, 0x8000), "");
    case INGOT_IR_ABS: return LLVMBuildAnd(b, a, const_of(t, 0x7fff), "");
    case INGOT_IR_SQRT: return half_result(F, intrinsic1(F, "llvm.sqrt", half_operand(F, a)));
    default: return unsupported(F, ingot_ir_unary_op_name(op), INGOT_DTYPE_F16);
  }
}

static LLVMValueRef half_binary(fn_t* F, ingot_ir_binary_op_t op, LLVMValueRef a, LLVMValueRef c) {
  LLVMBuilderRef b = F->b;
  LLVMValueRef x = half_operand(F, a), y = half_operand(F, c);
  switch (op) {
    case INGOT_IR_ADD: return half_result(F, LLVMBuildFAdd(b, x, y, ""));
    case INGOT_IR_SUB: return half_result(F, LLVMBuildFSub(b, x, y, ""));
    case INGOT_IR_MUL: return half_result(F, LLVMBuildFMul(b, x, y, ""));
    case INGOT_IR_DIV: return half_result(F, LLVMBuildFDiv(b, x, y, ""));
    case INGOT_IR_MIN:
    case INGOT_IR_MAX: { /* as float32's: a NaN operand yields the other one */
      LLVMValueRef better = LLVMBuildFCmp(b, op == INGOT_IR_MIN ? LLVMRealOLT : LLVMRealOGT, x, y, "");
      LLVMValueRef ynan = LLVMBuildFCmp(b, LLVMRealUNO, y, y, "");
      return LLVMBuildSelect(b, LLVMBuildOr(b, better, ynan, ""), a, c, "");
    }
    case INGOT_IR_LT: return LLVMBuildFCmp(b, LLVMRealOLT, x, y, "");
    case INGOT_IR_LE: return LLVMBuildFCmp(b, LLVMRealOLE, x, y, "");
    case INGOT_IR_EQ: return LLVMBuildFCmp(b, LLVMRealOEQ, x, y, "");
    case INGOT_IR_NE: return LLVMBuildFCmp(b, LLVMRealUNE, x, y, "");
    default: return unsupported(F, ingot_ir_binary_op_name(op), INGOT_DTYPE_F16);
  }
}

/* The float constant of `e` (or of one operand of a MIN / MAX: *other the
 * other operand) into *v. */
static bool clamp_bound(const ingot_ir_expr_t* e, ingot_ir_binary_op_t op, const ingot_ir_expr_t** other, double* v) {
  if (e->kind != INGOT_IR_EXPR_BINARY || e->u.binary.op != op) return false;
  const ingot_ir_expr_t *x = e->u.binary.a, *y = e->u.binary.b;
  if (y->kind == INGOT_IR_EXPR_FLOAT) return (*other = x, *v = y->u.f), true;
  if (x->kind == INGOT_IR_EXPR_FLOAT) return (*other = y, *v = x->u.f), true;
  return false;
}

/* Whether float `e` is clamped into [lo, hi] by constants: min(max(x, lo),
 * hi) or max(min(x, hi), lo), either operand order. */
static bool clamped_within(const ingot_ir_expr_t* e, double lo, double hi) {
  const ingot_ir_expr_t* inner;
  double a, b;
  if (clamp_bound(e, INGOT_IR_MIN, &inner, &b) && clamp_bound(inner, INGOT_IR_MAX, &inner, &a))
    return a >= lo && b <= hi && a <= b;
  if (clamp_bound(e, INGOT_IR_MAX, &inner, &a) && clamp_bound(inner, INGOT_IR_MIN, &inner, &b))
    return a >= lo && b <= hi && a <= b;
  return false;
}

/* The range of an 8- or 16-bit integer dtype; false for others. */
static bool small_int_bounds(ingot_dtype_t t, double* lo, double* hi) {
  *lo = 0.0;
  switch (t) {
    case INGOT_DTYPE_U8: *hi = 255.0; return true;
    case INGOT_DTYPE_I8: *lo = -128.0, *hi = 127.0; return true;
    case INGOT_DTYPE_U16: *hi = 65535.0; return true;
    case INGOT_DTYPE_I16: *lo = -32768.0, *hi = 32767.0; return true;
    default: *hi = 0.0; return false;
  }
}

/* A requantization's rounding and saturation of float32 x (to an 8- or
 * 16-bit integer):
 *   min(max(round(x) [+ float(z)], a), b)      a, b integer constants,
 *                                              z an 8- or 16-bit integer
 * Returns true with its parts where `e` has that form (that clamp order:
 * a NaN x then yields a, as the IR's max gives). */
static bool requant_form(const ingot_ir_expr_t* e, const ingot_ir_expr_t** x, const ingot_ir_expr_t** z, double* a,
                         double* b) {
  const ingot_ir_expr_t* inner;
  if (!clamp_bound(e, INGOT_IR_MIN, &inner, b) || !clamp_bound(inner, INGOT_IR_MAX, &inner, a)) return false;
  if (*a != floor(*a) || *b != floor(*b) || *a > *b) return false;
  *z = NULL;
  if (inner->kind == INGOT_IR_EXPR_BINARY && inner->u.binary.op == INGOT_IR_ADD) {
    const ingot_ir_expr_t *r = inner->u.binary.a, *c = inner->u.binary.b;
    if (c->kind == INGOT_IR_EXPR_UNARY && c->u.unary.op == INGOT_IR_ROUND) {
      const ingot_ir_expr_t* t = r;
      r = c;
      c = t;
    }
    if (c->kind != INGOT_IR_EXPR_CAST || c->dtype != INGOT_DTYPE_F32) return false;
    ingot_dtype_t zt = c->u.unary.a->dtype;
    if (zt != INGOT_DTYPE_U8 && zt != INGOT_DTYPE_I8 && zt != INGOT_DTYPE_U16 && zt != INGOT_DTYPE_I16) return false;
    *z = c->u.unary.a;
    inner = r;
  }
  if (inner->kind != INGOT_IR_EXPR_UNARY || inner->u.unary.op != INGOT_IR_ROUND) return false;
  *x = inner->u.unary.a;
  return (*x)->dtype == INGOT_DTYPE_F32;
}

/* cvtps2dq of the n float32 lanes of x (n a power of two, at least 4),
 * in pieces of the widest the target converts at once. It rounds as the
 * floating-point environment says, to nearest with ties to even in the
 * default one that LLVM's IR itself assumes; NaN and values out of range
 * give INT32_MIN. */
static LLVMValueRef cvtps2dq(fn_t* F, LLVMValueRef x, unsigned n) {
  ingot_llvm_module_t* m = &F->g->m;
  LLVMBuilderRef b = F->b;
  if (n > m->cvt_lanes_max) {
    LLVMValueRef mask[64], half[2];
    for (unsigned h = 0; h < 2; ++h) {
      for (unsigned l = 0; l < n / 2; ++l) mask[l] = LLVMConstInt(m->t_i32, h * (n / 2) + l, 0);
      LLVMValueRef sel = LLVMConstVector(mask, n / 2);
      half[h] = cvtps2dq(F, LLVMBuildShuffleVector(b, x, LLVMGetUndef(LLVMTypeOf(x)), sel, ""), n / 2);
    }
    for (unsigned l = 0; l < n; ++l) mask[l] = LLVMConstInt(m->t_i32, l, 0);
    return LLVMBuildShuffleVector(b, half[0], half[1], LLVMConstVector(mask, n), "");
  }
  LLVMTypeRef ft;
  if (n == 16) {
    /* (x, passthrough, mask all ones, rounding 4: the current direction) */
    LLVMValueRef fn = ingot_llvm_intrinsic(m, "llvm.x86.avx512.mask.cvtps2dq.512", NULL, 0, &ft);
    LLVMValueRef args[4] = {x, LLVMGetUndef(LLVMVectorType(m->t_i32, 16)),
                            LLVMConstInt(LLVMIntTypeInContext(m->ctx, 16), 0xFFFF, 0), LLVMConstInt(m->t_i32, 4, 0)};
    return LLVMBuildCall2(b, ft, fn, args, 4, "");
  }
  LLVMValueRef fn = ingot_llvm_intrinsic(m, n == 8 ? "llvm.x86.avx.cvt.ps2dq.256" : "llvm.x86.sse2.cvtps2dq", NULL, 0, &ft);
  return LLVMBuildCall2(b, ft, fn, &x, 1, "");
}

/* requant_form's value as n int32 lanes clamped into [a, b], on x86:
 *   i = cvtps2dq(2^30 < x ? 2^30 : x)      one vminps; NaN stays NaN
 *   [i = max(i, -2^30)]                     z signed: i + z cannot wrap
 *   min(max(i + z, a), b)
 * round(x) + z in float32 is exact below 2^24 and saturates to a or b
 * above, as i + z does; NaN (INT32_MIN) ends at a. One conversion instead
 * of round, add, max, min, truncate. Without `clamp` the lanes are left
 * unclamped for saturating packs at the type's bounds. */
static LLVMValueRef requantized(fn_t* F, const ingot_ir_expr_t* x, const ingot_ir_expr_t* z, double a, double b,
                                unsigned n, bool vec, bool clamp) {
  ingot_llvm_module_t* m = &F->g->m;
  LLVMBuilderRef bd = F->b;
  LLVMValueRef xv;
  TRY(xv = expr(F, x, vec));
  xv = splat(F, xv, n);
  LLVMValueRef lim = ingot_llvm_splat(LLVMTypeOf(xv), LLVMConstReal(m->t_f32, 1073741824.0));
  xv = LLVMBuildSelect(bd, LLVMBuildFCmp(bd, LLVMRealOLT, lim, xv, ""), lim, xv, "");
  LLVMValueRef i = cvtps2dq(F, xv, n);
  LLVMTypeRef vt = LLVMTypeOf(i);
  LLVMValueRef args[2];
  if (z) {
    LLVMValueRef zv;
    TRY(zv = expr(F, z, vec));
    LLVMTypeRef zt = lanes_of(zv) ? LLVMVectorType(m->t_i32, lanes_of(zv)) : m->t_i32;
    bool zsigned = z->dtype == INGOT_DTYPE_I8 || z->dtype == INGOT_DTYPE_I16;
    zv = splat(F, zsigned ? LLVMBuildSExt(bd, zv, zt, "") : LLVMBuildZExt(bd, zv, zt, ""), n);
    if (zsigned) {
      args[0] = i;
      args[1] = ingot_llvm_splat(vt, LLVMConstInt(m->t_i32, (unsigned long long)-(1LL << 30), 1));
      i = ingot_llvm_call_intrinsic(m, bd, "llvm.smax", vt, args, 2);
    }
    i = LLVMBuildAdd(bd, i, zv, "");
  }
  if (!clamp) return i;
  args[0] = i;
  args[1] = ingot_llvm_splat(vt, LLVMConstInt(m->t_i32, (unsigned long long)(int64_t)a, 1));
  i = ingot_llvm_call_intrinsic(m, bd, "llvm.smax", vt, args, 2);
  args[0] = i;
  args[1] = ingot_llvm_splat(vt, LLVMConstInt(m->t_i32, (unsigned long long)(int64_t)b, 1));
  return ingot_llvm_call_intrinsic(m, bd, "llvm.smin", vt, args, 2);
}

/* 32 int32 lanes already within the bytes' range (or saturating there) as
 * 32 bytes on AVX2: two vpackssdw and a vpackuswb (vpacksswb) work within
 * 128-bit halves, leaving the bytes in dwords d0..d7 = lanes 0-3, 8-11,
 * 16-19, 24-27, 4-7, 12-15, 20-23, 28-31; one vpermd by (0 4 1 5 2 6 3 7)
 * puts them in order. Where LLVM narrows on its own it fixes each pack's
 * halves with a vpermq: three instead of one. */
static LLVMValueRef pack_bytes_avx2(fn_t* F, LLVMValueRef v, bool is_signed) {
  ingot_llvm_module_t* m = &F->g->m;
  LLVMBuilderRef b = F->b;
  LLVMValueRef part[4], mask[8];
  for (unsigned q = 0; q < 4; ++q) {
    for (unsigned l = 0; l < 8; ++l) mask[l] = LLVMConstInt(m->t_i32, q * 8 + l, 0);
    part[q] = LLVMBuildShuffleVector(b, v, LLVMGetUndef(LLVMTypeOf(v)), LLVMConstVector(mask, 8), "");
  }
  LLVMTypeRef ft;
  LLVMValueRef fn = ingot_llvm_intrinsic(m, "llvm.x86.avx2.packssdw", NULL, 0, &ft);
  LLVMValueRef w[2];
  for (unsigned h = 0; h < 2; ++h) {
    LLVMValueRef args[2] = {part[2 * h], part[2 * h + 1]};
    w[h] = LLVMBuildCall2(b, ft, fn, args, 2, "");
  }
  fn = ingot_llvm_intrinsic(m, is_signed ? "llvm.x86.avx2.packsswb" : "llvm.x86.avx2.packuswb", NULL, 0, &ft);
  LLVMValueRef bytes = LLVMBuildCall2(b, ft, fn, w, 2, "");
  static const unsigned order[8] = {0, 4, 1, 5, 2, 6, 3, 7};
  for (unsigned l = 0; l < 8; ++l) mask[l] = LLVMConstInt(m->t_i32, order[l], 0);
  LLVMTypeRef d8 = LLVMVectorType(m->t_i32, 8);
  fn = ingot_llvm_intrinsic(m, "llvm.x86.avx2.permd", NULL, 0, &ft);
  LLVMValueRef args[2] = {LLVMBuildBitCast(b, bytes, d8, ""), LLVMConstVector(mask, 8)};
  return LLVMBuildBitCast(b, LLVMBuildCall2(b, ft, fn, args, 2, ""), LLVMVectorType(m->t_i8, 32), "");
}

/* ---- Words of four bytes. */

/* The integer value of a constant (an INT, or a CAST of one). */
static bool const_int(const ingot_ir_expr_t* e, int64_t* v) {
  if (e->kind == INGOT_IR_EXPR_CAST) e = e->u.unary.a;
  if (e->kind != INGOT_IR_EXPR_INT) return false;
  *v = e->u.i;
  return true;
}

/* One term of a byte word: uint32(b) << 8j as b's uint32 times 2^(8j), b an
 * 8-bit load; an int8 load goes in as int32(b) + 128 (its bits with the
 * sign bit flipped). Sets bytes[j] and *flip (which kind). */
static bool byte_word_term(const ingot_ir_expr_t* t, const ingot_ir_expr_t* bytes[4], int* flip) {
  int64_t scale = 1, k;
  if (t->kind == INGOT_IR_EXPR_BINARY && t->u.binary.op == INGOT_IR_MUL) {
    if (const_int(t->u.binary.b, &k)) scale = k, t = t->u.binary.a;
    else if (const_int(t->u.binary.a, &k)) scale = k, t = t->u.binary.b;
    else return false;
  }
  if (t->kind != INGOT_IR_EXPR_CAST || t->dtype != INGOT_DTYPE_U32) return false;
  const ingot_ir_expr_t* b = t->u.unary.a;
  int kind = 0;
  if (b->kind == INGOT_IR_EXPR_BINARY && b->u.binary.op == INGOT_IR_ADD && b->dtype == INGOT_DTYPE_I32 &&
      const_int(b->u.binary.b, &k) && k == 128 && b->u.binary.a->kind == INGOT_IR_EXPR_CAST &&
      b->u.binary.a->u.unary.a->kind == INGOT_IR_EXPR_LOAD && b->u.binary.a->u.unary.a->dtype == INGOT_DTYPE_I8) {
    b = b->u.binary.a->u.unary.a, kind = 2;
  } else if (b->kind == INGOT_IR_EXPR_LOAD && b->dtype == INGOT_DTYPE_U8) {
    kind = 1;
  } else {
    return false;
  }
  int j = scale == 1 ? 0 : scale == 256 ? 1 : scale == 65536 ? 2 : scale == 16777216 ? 3 : -1;
  if (j < 0 || bytes[j] || (*flip && *flip != kind)) return false;
  bytes[j] = b;
  *flip = kind;
  return true;
}

static bool byte_word_terms(const ingot_ir_expr_t* e, const ingot_ir_expr_t* bytes[4], int* flip, int* terms) {
  if (e->kind == INGOT_IR_EXPR_BINARY && e->u.binary.op == INGOT_IR_ADD && e->dtype == INGOT_DTYPE_U32)
    return byte_word_terms(e->u.binary.a, bytes, flip, terms) && byte_word_terms(e->u.binary.b, bytes, flip, terms);
  ++*terms;
  return *terms <= 4 && byte_word_term(e, bytes, flip);
}

/* Whether e (uint32) is a word of four bytes, sum over j of uint32(b_j) *
 * 2^(8j), as Dot4Words and Im2Col build their dot4 operands: bytes[j] the
 * 8-bit loads, *flipped for int8 ones taken plus 128. */
static bool byte_word_form(const ingot_ir_expr_t* e, const ingot_ir_expr_t* bytes[4], bool* flipped) {
  int flip = 0, terms = 0;
  bytes[0] = bytes[1] = bytes[2] = bytes[3] = NULL;
  if (!byte_word_terms(e, bytes, &flip, &terms) || terms != 4) return false;
  *flipped = flip == 2;
  return true;
}

/* The words of a byte_word_form over `lanes` lanes: the four byte vectors
 * interleaved (bytes of 0 and 1, of 2 and 3, then those pairs as 16-bit
 * lanes; little-endian), which x86 does with punpcklbw / punpcklwd and
 * AArch64 with zip1 / zip2, instead of widening every byte to 32 bits and
 * shifting it into place. */
static LLVMValueRef byte_words(fn_t* F, const ingot_ir_expr_t* const bytes[4], bool flipped, unsigned lanes, bool vec) {
  LLVMBuilderRef b = F->b;
  LLVMTypeRef i8v = LLVMVectorType(F->g->m.t_i8, lanes);
  LLVMValueRef v[4];
  for (int j = 0; j < 4; ++j) {
    TRY(v[j] = expr(F, bytes[j], vec));
    if (!is_vector(v[j])) v[j] = splat(F, v[j], lanes);
    if (LLVMTypeOf(v[j]) != i8v) return fail(F, INGOT_ERROR_INTERNAL, "byte word: a byte vector of %u lanes", lanes_of(v[j]));
    if (flipped) v[j] = LLVMBuildXor(b, v[j], ingot_llvm_splat(i8v, LLVMConstInt(F->g->m.t_i8, 0x80, 0)), "");
  }
  LLVMValueRef mask[128];
  for (unsigned i = 0; i < 2 * lanes; ++i) mask[i] = LLVMConstInt(F->g->m.t_i32, (i & 1) * lanes + i / 2, 0);
  LLVMValueRef zip = LLVMConstVector(mask, 2 * lanes);
  LLVMTypeRef i16v = LLVMVectorType(LLVMInt16TypeInContext(F->g->m.ctx), lanes);
  LLVMValueRef lo = LLVMBuildBitCast(b, LLVMBuildShuffleVector(b, v[0], v[1], zip, ""), i16v, "");
  LLVMValueRef hi = LLVMBuildBitCast(b, LLVMBuildShuffleVector(b, v[2], v[3], zip, ""), i16v, "");
  return LLVMBuildBitCast(b, LLVMBuildShuffleVector(b, lo, hi, zip, ""), LLVMVectorType(F->g->m.t_i32, lanes), "");
}

static LLVMValueRef cast(fn_t* F, const ingot_ir_expr_t* e, bool vec) {
  ingot_dtype_t to = e->dtype, from = e->u.unary.a->dtype;
  LLVMTypeRef tt, ft;
  TRY(tt = need_type(F, to));
  TRY(ft = need_type(F, from));
  const ingot_ir_expr_t* bytes[4];
  bool flipped;
  if ((to == INGOT_DTYPE_I32 || to == INGOT_DTYPE_U32) && from == INGOT_DTYPE_U32 && F->vec && vec &&
      F->vec->lanes >= 4 && F->vec->lanes <= 64 && varying(F->vec, e->u.unary.a) &&
      byte_word_form(e->u.unary.a, bytes, &flipped)) {
    return byte_words(F, bytes, flipped, F->vec->lanes, vec);
  }
  LLVMValueRef a;
  TRY(a = expr(F, e->u.unary.a, vec));
  LLVMBuilderRef b = F->b;
  unsigned n = lanes_of(a);
  LLVMTypeRef t = ingot_llvm_vec_type(tt, n);
  if (to == from) return a;
  bool half_from = from == INGOT_DTYPE_F16 || from == INGOT_DTYPE_BF16;
  bool half_to = to == INGOT_DTYPE_F16 || to == INGOT_DTYPE_BF16;
  if (half_from) {
    a = half_to_f32(F, a, from == INGOT_DTYPE_BF16);
    if (to == INGOT_DTYPE_F32) return a;
    from = INGOT_DTYPE_F32;
    ft = F->g->m.t_f32;
  }
  if (half_to) {
    /* to float32 first (float64 rounds twice; integers exactly up to 2^24) */
    LLVMTypeRef f32 = ingot_llvm_vec_type(F->g->m.t_f32, n);
    if (from == INGOT_DTYPE_F64) a = LLVMBuildFPTrunc(b, a, f32, "");
    else if (from == INGOT_DTYPE_BOOL || is_unsigned(from)) { if (from != INGOT_DTYPE_F32) a = LLVMBuildUIToFP(b, a, f32, ""); }
    else if (from != INGOT_DTYPE_F32) a = LLVMBuildSIToFP(b, a, f32, "");
    return f32_to_half(F, a, to == INGOT_DTYPE_BF16);
  }
  bool from_unsigned = is_unsigned(from);
  if (to == INGOT_DTYPE_BOOL) {
    if (is_float(from)) return LLVMBuildFCmp(b, LLVMRealUNE, a, LLVMConstNull(LLVMTypeOf(a)), "");
    return LLVMBuildICmp(b, LLVMIntNE, a, LLVMConstNull(LLVMTypeOf(a)), "");
  }
  if (is_float(to)) {
    if (is_float(from)) return to == INGOT_DTYPE_F64 ? LLVMBuildFPExt(b, a, t, "") : LLVMBuildFPTrunc(b, a, t, "");
    return from_unsigned ? LLVMBuildUIToFP(b, a, t, "") : LLVMBuildSIToFP(b, a, t, "");
  }
  /* to an integer */
  if (is_float(from)) {
    /* A requantization on x86 (requant_form): one cvtps2dq, then integers. */
    const ingot_ir_expr_t *rx, *rz;
    double ra, rb, tlo, thi;
    if (small_int_bounds(to, &tlo, &thi) && F->g->m.cvt_lanes_max && n >= 4 && n <= 64 && (n & (n - 1)) == 0 &&
        requant_form(e->u.unary.a, &rx, &rz, &ra, &rb) && ra >= tlo && rb <= thi) {
      bool packs = n == 32 && F->g->m.avx2_byte_packs && (to == INGOT_DTYPE_U8 || to == INGOT_DTYPE_I8);
      LLVMValueRef r;
      TRY(r = requantized(F, rx, rz, ra, rb, n, vec, !packs || ra != tlo || rb != thi));
      return packs ? pack_bytes_avx2(F, r, to == INGOT_DTYPE_I8) : LLVMBuildTrunc(b, r, t, "");
    }
    /* Truncation toward zero; narrow types through int32 as C compilers do
     * on x86; out of range (undefined in C) is frozen, never poison. */
    if (to == INGOT_DTYPE_U64 || to == INGOT_DTYPE_U32)
      return LLVMBuildFreeze(b, LLVMBuildFPToUI(b, a, t, ""), "");
    LLVMTypeRef via = to == INGOT_DTYPE_I64 ? t : ingot_llvm_vec_type(F->g->m.t_i32, n);
    LLVMValueRef r = LLVMBuildFreeze(b, LLVMBuildFPToSI(b, a, via, ""), "");
    if (via == t) return r;
    /* A float already clamped into the 8- or 16-bit type's range (a
     * requantization's saturation): the same clamp in int32, a no-op on
     * these values, lets LLVM narrow with saturating packs (PACKUSDW /
     * PACKUSWB, SQXTUN) instead of masking or shuffling bytes out. */
    double lo, hi;
    bool narrow = n > 1 && n <= 64 && small_int_bounds(to, &lo, &hi);
    if (narrow && clamped_within(e->u.unary.a, lo, hi)) {
      LLVMTypeRef vt = LLVMTypeOf(r);
      LLVMValueRef args[2] = {r, ingot_llvm_splat(vt, LLVMConstInt(F->g->m.t_i32, (unsigned long long)(int64_t)lo, 1))};
      r = ingot_llvm_call_intrinsic(&F->g->m, b, "llvm.smax", vt, args, 2);
      args[0] = r;
      args[1] = ingot_llvm_splat(vt, LLVMConstInt(F->g->m.t_i32, (unsigned long long)(int64_t)hi, 1));
      r = ingot_llvm_call_intrinsic(&F->g->m, b, "llvm.smin", vt, args, 2);
    }
    return LLVMBuildTrunc(b, r, t, "");
  }
  unsigned fb = LLVMGetIntTypeWidth(ft), tb = LLVMGetIntTypeWidth(tt);
  if (tb < fb) return LLVMBuildTrunc(b, a, t, "");
  if (tb == fb) return a;
  return from_unsigned ? LLVMBuildZExt(b, a, t, "") : LLVMBuildSExt(b, a, t, "");
}

/* ---- Loads. */
static LLVMValueRef buffer_ptr(fn_t* F, uint32_t buffer) {
  if (buffer >= F->f->buffer_count || !F->bufs[buffer])
    return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "buffer index %u out of range", buffer);
  return F->bufs[buffer];
}

static LLVMValueRef all_true(fn_t* F, unsigned lanes) {
  return ingot_llvm_const_int(LLVMVectorType(F->g->m.t_i1, lanes), -1);
}

/* <lanes x T*> pointers for a vector of int64 indices. */
static LLVMValueRef gather_ptrs(fn_t* F, LLVMValueRef base_ptr, LLVMTypeRef et, LLVMValueRef idx) {
  return LLVMBuildGEP2(F->b, et, base_ptr, &idx, 1, "");
}

/* How an index moves from lane to lane. */
typedef enum steps_t {
  STEPS_UNKNOWN = 0,
  STEPS_EXACT,    /* every step is `stride` (an affine index) */
  STEPS_CLAMPED,  /* every step is 0 or `stride` > 0: an affine index clamped by
                     min/max against uniform bounds (padding reads); the steps
                     are all `stride` when last - first = stride * (lanes - 1) */
} steps_t;

static steps_t index_steps(vec_t* V, const ingot_ir_expr_t* e, int64_t* stride) {
  int64_t c;
  if (affine(V, e, &c)) {
    *stride = c;
    return STEPS_EXACT;
  }
  if (e->kind != INGOT_IR_EXPR_BINARY || e->dtype != INGOT_DTYPE_I64) return STEPS_UNKNOWN;
  const ingot_ir_expr_t* a = e->u.binary.a;
  const ingot_ir_expr_t* b = e->u.binary.b;
  bool va = varying(V, a), vb = varying(V, b);
  int64_t sa = 0, sb = 0;
  steps_t ka = va ? index_steps(V, a, &sa) : STEPS_EXACT;
  steps_t kb = vb ? index_steps(V, b, &sb) : STEPS_EXACT;
  if (ka == STEPS_UNKNOWN || kb == STEPS_UNKNOWN) return STEPS_UNKNOWN;
  switch (e->u.binary.op) {
    case INGOT_IR_ADD:
    case INGOT_IR_SUB:
      /* clamped +- uniform stays clamped */
      if (va && vb) return STEPS_UNKNOWN;
      if (e->u.binary.op == INGOT_IR_SUB && vb) return STEPS_UNKNOWN;
      *stride = va ? sa : sb;
      return STEPS_CLAMPED;
    case INGOT_IR_MUL: {
      const ingot_ir_expr_t* k = va ? b : a;
      if ((va && vb) || k->kind != INGOT_IR_EXPR_INT || k->u.i <= 0) return STEPS_UNKNOWN;
      *stride = (va ? sa : sb) * k->u.i;
      return STEPS_CLAMPED;
    }
    case INGOT_IR_MIN:
    case INGOT_IR_MAX:
      if (va && vb) return STEPS_UNKNOWN;
      *stride = va ? sa : sb;
      return *stride > 0 ? STEPS_CLAMPED : STEPS_UNKNOWN;
    default: return STEPS_UNKNOWN;
  }
}

/* Bytes of one element of scalar type `et`. */
static unsigned element_bytes(LLVMTypeRef et) {
  switch (LLVMGetTypeKind(et)) {
    case LLVMIntegerTypeKind: return (LLVMGetIntTypeWidth(et) + 7) / 8;
    case LLVMHalfTypeKind:
    case LLVMBFloatTypeKind: return 2;
    case LLVMFloatTypeKind: return 4;
    case LLVMDoubleTypeKind: return 8;
    default: return 8; /* pointers */
  }
}

/* lanes elements at base, base + stride, ... (stride >= 1) as one contiguous
 * load and a shuffle; NULL when that needs a masked load the target does not
 * have cheaply (the caller gathers). */
static LLVMValueRef strided_load(fn_t* F, LLVMValueRef p, LLVMTypeRef et, unsigned align, LLVMValueRef idx0,
                                 int64_t stride) {
  gen_t* g = F->g;
  vec_t* V = F->vec;
  unsigned L = V->lanes;
  LLVMValueRef ptr0 = LLVMBuildGEP2(F->b, et, p, &idx0, 1, "");
  if (stride == 1) {
    LLVMTypeRef vt = LLVMVectorType(et, L);
    LLVMValueRef ptr = LLVMBuildBitCast(F->b, ptr0, LLVMPointerType(vt, 0), "");
    if (!V->mask) {
      LLVMValueRef r = LLVMBuildLoad2(F->b, vt, ptr, "");
      LLVMSetAlignment(r, align);
      return r;
    }
    LLVMTypeRef types[2] = {vt, LLVMPointerType(vt, 0)}, ft;
    LLVMValueRef fn = ingot_llvm_intrinsic(&g->m, "llvm.masked.load", types, 2, &ft);
    LLVMValueRef args[4] = {ptr, LLVMConstInt(g->m.t_i32, align, 0), V->mask, LLVMConstNull(vt)};
    return LLVMBuildCall2(F->b, ft, fn, args, 4, "");
  }
  unsigned span = (unsigned)(stride * (L - 1) + 1);
  LLVMValueRef pick[64];
  for (unsigned i = 0; i < L; ++i) pick[i] = LLVMConstInt(g->m.t_i32, (unsigned long long)(stride * i), 0);
  LLVMValueRef wide;
  bool cheap_mask = g->m.masked_tail && element_bytes(et) >= g->m.masked_min_bytes;
  if (!V->mask && cheap_mask && stride * L <= 256) {
    /* Everything between the first and the last lane is inside the buffer:
     * a load of stride * L elements (whole vector registers) with the lanes
     * past the last one masked off. A load of `span` elements itself (an odd
     * width) becomes a chain of narrow loads in the backend. */
    unsigned n = (unsigned)(stride * L);
    LLVMTypeRef wt = LLVMVectorType(et, n);
    LLVMValueRef bits[256];
    for (unsigned j = 0; j < n; ++j) bits[j] = LLVMConstInt(g->m.t_i1, j < span, 0);
    LLVMTypeRef types[2] = {wt, LLVMPointerType(wt, 0)}, ft;
    LLVMValueRef fn = ingot_llvm_intrinsic(&g->m, "llvm.masked.load", types, 2, &ft);
    LLVMValueRef args[4] = {LLVMBuildBitCast(F->b, ptr0, LLVMPointerType(wt, 0), ""),
                            LLVMConstInt(g->m.t_i32, align, 0), LLVMConstVector(bits, n), LLVMConstNull(wt)};
    wide = LLVMBuildCall2(F->b, ft, fn, args, 4, "");
  } else if (!V->mask) {
    /* Everything between the first and the last lane is inside the buffer:
     * two loads of half of stride * L elements, one from the first lane, one
     * ending at the last (they overlap by stride - 1), and one shuffle of
     * both. A load of `span` elements itself (an odd width) becomes a chain
     * of narrow loads in the backend, a masked one of bytes on AVX2 a load
     * per lane. */
    unsigned half = (unsigned)(stride * L) / 2;
    LLVMTypeRef ht = LLVMVectorType(et, half);
    LLVMValueRef lo = LLVMBuildLoad2(F->b, ht, LLVMBuildBitCast(F->b, ptr0, LLVMPointerType(ht, 0), ""), "");
    LLVMSetAlignment(lo, align);
    LLVMValueRef off = LLVMConstInt(g->m.t_i64, span - half, 0);
    LLVMValueRef ptr1 = LLVMBuildGEP2(F->b, et, ptr0, &off, 1, "");
    LLVMValueRef hi = LLVMBuildLoad2(F->b, ht, LLVMBuildBitCast(F->b, ptr1, LLVMPointerType(ht, 0), ""), "");
    LLVMSetAlignment(hi, align);
    for (unsigned i = 0; i < L; ++i) {
      unsigned m = (unsigned)(stride * i);
      pick[i] = LLVMConstInt(g->m.t_i32, m < half ? m : half + m - (span - half), 0);
    }
    return LLVMBuildShuffleVector(F->b, lo, hi, LLVMConstVector(pick, L), "");
  } else {
    if (!g->m.masked_tail) return NULL;
    /* Masked-off lanes may point anywhere: load only the active lanes. */
    unsigned n = (unsigned)(stride * L);
    LLVMTypeRef wt = LLVMVectorType(et, n);
    LLVMValueRef spread[256];
    for (unsigned j = 0; j < n; ++j)
      spread[j] = LLVMConstInt(g->m.t_i32, j % stride == 0 ? j / (unsigned)stride : L, 0);
    LLVMValueRef wmask = LLVMBuildShuffleVector(F->b, V->mask, LLVMConstNull(LLVMTypeOf(V->mask)),
                                                LLVMConstVector(spread, n), "");
    LLVMTypeRef types[2] = {wt, LLVMPointerType(wt, 0)}, ft;
    LLVMValueRef fn = ingot_llvm_intrinsic(&g->m, "llvm.masked.load", types, 2, &ft);
    LLVMValueRef args[4] = {LLVMBuildBitCast(F->b, ptr0, LLVMPointerType(wt, 0), ""),
                            LLVMConstInt(g->m.t_i32, align, 0), wmask, LLVMConstNull(wt)};
    wide = LLVMBuildCall2(F->b, ft, fn, args, 4, "");
  }
  return LLVMBuildShuffleVector(F->b, wide, LLVMGetUndef(LLVMTypeOf(wide)), LLVMConstVector(pick, L), "");
}

static LLVMValueRef gather(fn_t* F, LLVMValueRef p, LLVMTypeRef et, unsigned align, const ingot_ir_expr_t* index) {
  gen_t* g = F->g;
  vec_t* V = F->vec;
  LLVMTypeRef vt = LLVMVectorType(et, V->lanes);
  LLVMValueRef idx;
  TRY(idx = expr(F, index, true));
  idx = splat(F, idx, V->lanes);
  LLVMValueRef ptrs = gather_ptrs(F, p, et, idx);
  LLVMTypeRef types[2] = {vt, LLVMTypeOf(ptrs)}, ft;
  LLVMValueRef fn = ingot_llvm_intrinsic(&g->m, "llvm.masked.gather", types, 2, &ft);
  LLVMValueRef args[4] = {ptrs, LLVMConstInt(g->m.t_i32, align, 0), V->mask ? V->mask : all_true(F, V->lanes),
                          LLVMConstNull(vt)};
  return LLVMBuildCall2(F->b, ft, fn, args, 4, "");
}

/* A load in a vectorized loop: one vector load when the index is affine with
 * stride 1 (a wider load and a shuffle for strides 2..4); an index clamped
 * with min/max (padding) checks at run time that its lanes are evenly spaced
 * (all but the edges of an image) and takes the same path, else a gather. */
static LLVMValueRef vector_load(fn_t* F, LLVMValueRef p, LLVMTypeRef et, unsigned align,
                                const ingot_ir_expr_t* index) {
  vec_t* V = F->vec;
  int64_t stride = 0;
  steps_t k = index_steps(V, index, &stride);
  if (k == STEPS_UNKNOWN || stride < 1 || stride > 4) return gather(F, p, et, align, index);
  LLVMValueRef idx0;
  TRY(idx0 = expr(F, index, false));
  if (k == STEPS_EXACT) {
    LLVMValueRef r = strided_load(F, p, et, align, idx0, stride);
    return r ? r : gather(F, p, et, align, index);
  }
  LLVMValueRef base = V->base;
  V->base = LLVMBuildNSWAdd(F->b, base, LLVMConstInt(F->g->m.t_i64, V->lanes - 1, 0), "");
  LLVMValueRef idx_last = expr(F, index, false);
  V->base = base;
  TRY(idx_last);
  LLVMValueRef even = LLVMBuildICmp(F->b, LLVMIntEQ, LLVMBuildSub(F->b, idx_last, idx0, ""),
                                    LLVMConstInt(F->g->m.t_i64, (unsigned long long)(stride * (V->lanes - 1)), 0), "");
  LLVMBasicBlockRef fast = new_block(F, "ld.even"), slow = new_block(F, "ld.gather"), join = new_block(F, "ld.join");
  LLVMBuildCondBr(F->b, even, fast, slow);
  LLVMValueRef vals[2];
  LLVMBasicBlockRef ends[2];
  LLVMPositionBuilderAtEnd(F->b, fast);
  vals[0] = strided_load(F, p, et, align, idx0, stride);
  if (!vals[0]) TRY(vals[0] = gather(F, p, et, align, index));
  ends[0] = LLVMGetInsertBlock(F->b);
  LLVMBuildBr(F->b, join);
  LLVMPositionBuilderAtEnd(F->b, slow);
  TRY(vals[1] = gather(F, p, et, align, index));
  ends[1] = LLVMGetInsertBlock(F->b);
  LLVMBuildBr(F->b, join);
  LLVMPositionBuilderAtEnd(F->b, join);
  LLVMValueRef phi = LLVMBuildPhi(F->b, LLVMTypeOf(vals[0]), "");
  LLVMAddIncoming(phi, vals, ends, 2);
  return phi;
}

static LLVMValueRef load(fn_t* F, const ingot_ir_expr_t* e, bool vec) {
  uint32_t bi = e->u.load.buffer;
  LLVMValueRef p;
  TRY(p = buffer_ptr(F, bi));
  if (!e->u.load.index || e->u.load.index->dtype != INGOT_DTYPE_I64)
    return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "load from '%s': index is not int64", F->f->buffers[bi].name);
  ingot_dtype_t dt = F->f->buffers[bi].dtype;
  LLVMTypeRef et = mem_type(F->g, dt);
  if (!et) return (need_type(F, dt), NULL);
  unsigned align = (unsigned)ingot_dtype_size(dt);
  vec_t* V = F->vec;
  LLVMValueRef r;
  if (!V || !vec || !varying(V, e->u.load.index)) {
    LLVMValueRef idx;
    TRY(idx = expr(F, e->u.load.index, false));
    LLVMValueRef ptr = LLVMBuildGEP2(F->b, et, p, &idx, 1, "");
    r = LLVMBuildLoad2(F->b, et, ptr, "");
    LLVMSetAlignment(r, align);
  } else {
    TRY(r = vector_load(F, p, et, align, e->u.load.index));
  }
  if (dt == INGOT_DTYPE_BOOL) r = LLVMBuildICmp(F->b, LLVMIntNE, r, LLVMConstNull(LLVMTypeOf(r)), "");
  return r;
}

/* ---- Lane masks. */
static LLVMValueRef any_lane(fn_t* F, LLVMValueRef mask) {
  return ingot_llvm_call_intrinsic(&F->g->m, F->b, "llvm.vector.reduce.or", LLVMTypeOf(mask), &mask, 1);
}

static LLVMValueRef and_mask(fn_t* F, LLVMValueRef mask, LLVMValueRef cond) {
  cond = splat(F, cond, F->vec->lanes);
  return mask ? LLVMBuildAnd(F->b, mask, cond, "") : cond;
}

/* A SELECT whose arms read memory evaluates only the arm its condition
 * picks (selects are lazy in the IR: padding reads out of bounds). Uniform
 * condition: a branch and a phi. Varying: each arm under its own lane mask. */
static LLVMValueRef select_lazy(fn_t* F, const ingot_ir_expr_t* e, LLVMValueRef cond, bool vec) {
  vec_t* V = F->vec;
  if (is_vector(cond)) {
    LLVMValueRef saved = V->mask;
    LLVMValueRef arms[2];
    for (int k = 0; k < 2; ++k) {
      LLVMValueRef c = k == 0 ? cond : LLVMBuildNot(F->b, cond, "");
      V->mask = and_mask(F, saved, c);
      const ingot_ir_expr_t* arm = k == 0 ? e->u.select.a : e->u.select.b;
      arms[k] = expr(F, arm, vec);
      if (!arms[k]) {
        V->mask = saved;
        return NULL;
      }
    }
    V->mask = saved;
    same_shape(F, &arms[0], &arms[1]);
    return LLVMBuildSelect(F->b, cond, arms[0], arms[1], "");
  }
  LLVMBasicBlockRef then_bb = new_block(F, "sel.a"), else_bb = new_block(F, "sel.b"), join = new_block(F, "sel.join");
  LLVMBuildCondBr(F->b, cond, then_bb, else_bb);
  LLVMValueRef vals[2];
  LLVMBasicBlockRef ends[2];
  LLVMBasicBlockRef starts[2] = {then_bb, else_bb};
  for (int k = 0; k < 2; ++k) {
    LLVMPositionBuilderAtEnd(F->b, starts[k]);
    TRY(vals[k] = expr(F, k == 0 ? e->u.select.a : e->u.select.b, vec));
    ends[k] = LLVMGetInsertBlock(F->b);
  }
  /* Both arms must have one shape; widen inside each arm. */
  unsigned n = lanes_of(vals[0]) > lanes_of(vals[1]) ? lanes_of(vals[0]) : lanes_of(vals[1]);
  for (int k = 0; k < 2; ++k) {
    LLVMPositionBuilderAtEnd(F->b, ends[k]);
    vals[k] = splat(F, vals[k], n);
    LLVMBuildBr(F->b, join);
  }
  LLVMPositionBuilderAtEnd(F->b, join);
  LLVMValueRef phi = LLVMBuildPhi(F->b, LLVMTypeOf(vals[0]), "");
  LLVMAddIncoming(phi, vals, ends, 2);
  return phi;
}

static LLVMValueRef expr(fn_t* F, const ingot_ir_expr_t* e, bool vec) {
  if (!e) return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "missing expression");
  if (++F->g->nodes > kMaxNodes)
    return fail(F, INGOT_ERROR_LIMIT, "more than %d expression nodes (shared expressions?)", kMaxNodes);
  vec_t* V = F->vec;
  /* In a vectorized loop, what does not vary stays scalar. */
  bool v = V && vec && varying(V, e);
  switch (e->kind) {
    case INGOT_IR_EXPR_INT: {
      LLVMTypeRef t;
      TRY(t = need_type(F, e->dtype));
      if (e->dtype == INGOT_DTYPE_BOOL) return LLVMConstInt(t, e->u.i != 0, 0);
      return LLVMConstInt(t, (unsigned long long)e->u.i, 1);
    }
    case INGOT_IR_EXPR_FLOAT: {
      if (e->dtype == INGOT_DTYPE_F16) /* its bits, as every float16 value here */
        return LLVMConstInt(LLVMInt16TypeInContext(F->g->m.ctx), ingot_ir_f16_bits(e->u.f), 0);
      if (!is_float(e->dtype)) return unsupported(F, "float constant", e->dtype);
      double val = e->dtype == INGOT_DTYPE_F32 ? (double)(float)e->u.f : e->u.f;
      return LLVMConstReal(value_type(F->g, e->dtype), val);
    }
    case INGOT_IR_EXPR_VAR: {
      uint32_t var = e->u.var;
      if (var >= F->f->var_count) return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "variable index %u out of range", var);
      if (V && var == V->a.var) {
        if (!v) return V->base;
        /* base + <0, 1, ..., lanes-1> */
        LLVMValueRef iota[64];
        for (unsigned i = 0; i < V->lanes; ++i) iota[i] = LLVMConstInt(F->g->m.t_i64, i, 0);
        return LLVMBuildAdd(F->b, splat(F, V->base, V->lanes), LLVMConstVector(iota, V->lanes), "");
      }
      if (!F->slots[var])
        return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "variable '%s' used out of its scope", F->f->vars[var].name);
      return LLVMBuildLoad2(F->b, F->slot_types[var], F->slots[var], "");
    }
    case INGOT_IR_EXPR_LOAD: return load(F, e, v);
    case INGOT_IR_EXPR_UNARY:
      if (!e->u.unary.a) return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "missing operand");
      return unary(F, e, v);
    case INGOT_IR_EXPR_BINARY:
      if (!e->u.binary.a || !e->u.binary.b) return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "missing operand");
      return binary(F, e, v);
    case INGOT_IR_EXPR_SELECT: {
      if (!e->u.select.cond || !e->u.select.a || !e->u.select.b)
        return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "missing operand");
      if (e->u.select.cond->dtype != INGOT_DTYPE_BOOL)
        return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "select: condition is not bool");
      TRY(need_type(F, e->dtype));
      LLVMValueRef c;
      TRY(c = expr(F, e->u.select.cond, v));
      if (has_load(F->g, e->u.select.a) || has_load(F->g, e->u.select.b)) return select_lazy(F, e, c, v);
      LLVMValueRef a, b;
      TRY(a = expr(F, e->u.select.a, v));
      TRY(b = expr(F, e->u.select.b, v));
      same_shape(F, &a, &b);
      if (is_vector(c)) {
        a = splat(F, a, lanes_of(c));
        b = splat(F, b, lanes_of(c));
      }
      return LLVMBuildSelect(F->b, c, a, b, "");
    }
    case INGOT_IR_EXPR_CAST:
      if (!e->u.unary.a) return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "missing operand");
      return cast(F, e, v);
  }
  return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "unknown expression kind %d", (int)e->kind);
}

/* ---- Statements. */
static bool stmt(fn_t* F, const ingot_ir_stmt_t* s);
static bool scoped(fn_t* F, const ingot_ir_stmt_t* s);

/* A fresh slot for `var` holding `t` (scalar or vector). */
static LLVMValueRef declare(fn_t* F, uint32_t var, LLVMTypeRef t) {
  F->slots[var] = entry_alloca(F, t);
  F->slot_types[var] = t;
  return F->slots[var];
}

/* A scalar store per lane of `val` at base + lane * stride (elements `et`). */
static void store_lanes(fn_t* F, LLVMTypeRef et, LLVMValueRef base, LLVMValueRef val, int64_t stride) {
  unsigned lanes = lanes_of(val), align = element_bytes(et);
  for (unsigned i = 0; i < lanes; ++i) {
    LLVMValueRef off = LLVMConstInt(F->g->m.t_i64, (unsigned long long)(stride * (int64_t)i), 1);
    LLVMValueRef lane = LLVMBuildExtractElement(F->b, val, LLVMConstInt(F->g->m.t_i32, i, 0), "");
    LLVMSetAlignment(LLVMBuildStore(F->b, lane, LLVMBuildGEP2(F->b, et, base, &off, 1, "")), align);
  }
}

static bool store_stmt(fn_t* F, const ingot_ir_stmt_t* s) {
  gen_t* g = F->g;
  const ingot_ir_func_t* f = F->f;
  uint32_t bi = s->u.store.buffer;
  if (bi >= f->buffer_count) return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "store to buffer index %u out of range", bi);
  if (f->buffers[bi].role != INGOT_IR_BUFFER_OUTPUT)
    return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "store to input buffer '%s'", f->buffers[bi].name);
  if (!s->u.store.index || s->u.store.index->dtype != INGOT_DTYPE_I64)
    return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "store to '%s': index is not int64", f->buffers[bi].name);
  ingot_dtype_t dt = f->buffers[bi].dtype;
  if (!s->u.store.value || s->u.store.value->dtype != dt)
    return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "store to '%s' (%s): value of another dtype", f->buffers[bi].name,
                ingot_dtype_name(dt));
  LLVMTypeRef et = mem_type(g, dt);
  if (!et) return (need_type(F, dt), false);
  LLVMValueRef p, val;
  TRY_OK(p = buffer_ptr(F, bi));
  unsigned align = (unsigned)ingot_dtype_size(dt);
  vec_t* V = F->vec;
  TRY_OK(val = expr(F, s->u.store.value, true));
  if (!V) {
    LLVMValueRef idx;
    TRY_OK(idx = expr(F, s->u.store.index, false));
    if (dt == INGOT_DTYPE_BOOL) val = LLVMBuildZExt(F->b, val, et, "");
    LLVMValueRef st = LLVMBuildStore(F->b, val, LLVMBuildGEP2(F->b, et, p, &idx, 1, ""));
    LLVMSetAlignment(st, align);
    return true;
  }
  val = splat(F, val, V->lanes);
  if (dt == INGOT_DTYPE_BOOL) val = LLVMBuildZExt(F->b, val, LLVMVectorType(et, V->lanes), "");
  LLVMTypeRef vt = LLVMVectorType(et, V->lanes);
  int64_t coef = 0;
  if (affine(V, s->u.store.index, &coef) && coef == 1) {
    LLVMValueRef idx;
    TRY_OK(idx = expr(F, s->u.store.index, false));
    LLVMValueRef ptr = LLVMBuildBitCast(F->b, LLVMBuildGEP2(F->b, et, p, &idx, 1, ""), LLVMPointerType(vt, 0), "");
    if (V->mask) {
      LLVMTypeRef types[2] = {vt, LLVMPointerType(vt, 0)}, ft;
      LLVMValueRef fn = ingot_llvm_intrinsic(&g->m, "llvm.masked.store", types, 2, &ft);
      LLVMValueRef args[4] = {val, ptr, LLVMConstInt(g->m.t_i32, align, 0), V->mask};
      LLVMBuildCall2(F->b, ft, fn, args, 4, "");
    } else {
      LLVMSetAlignment(LLVMBuildStore(F->b, val, ptr), align);
    }
    return true;
  }
  if (!V->mask && affine(V, s->u.store.index, &coef) && (!g->m.native_scatter || element_bytes(et) < 4)) {
    /* Lanes a constant stride apart (a register tile's vector of output
     * channels stored into NCHW planes) where no scatter instruction takes
     * them: a scalar store per lane at the first lane's address plus
     * lane * stride, which the backend folds into each store's displacement
     * (a scatter there is scalarized over a vector of 64-bit addresses,
     * their products emulated: 5x the instructions). */
    LLVMValueRef idx0;
    TRY_OK(idx0 = expr(F, s->u.store.index, false));
    store_lanes(F, et, LLVMBuildGEP2(F->b, et, p, &idx0, 1, ""), val, coef);
    return true;
  }
  LLVMValueRef idx;
  TRY_OK(idx = expr(F, s->u.store.index, true));
  LLVMValueRef ptrs = gather_ptrs(F, p, et, splat(F, idx, V->lanes));
  LLVMTypeRef types[2] = {vt, LLVMTypeOf(ptrs)}, ft;
  LLVMValueRef fn = ingot_llvm_intrinsic(&g->m, "llvm.masked.scatter", types, 2, &ft);
  LLVMValueRef args[4] = {val, ptrs, LLVMConstInt(g->m.t_i32, align, 0), V->mask ? V->mask : all_true(F, V->lanes)};
  LLVMBuildCall2(F->b, ft, fn, args, 4, "");
  return true;
}

/* for (var = begin; var < end; ++var) body, with `var` in a fresh slot. */
typedef bool (*body_fn_t)(fn_t* F, const ingot_ir_stmt_t* body, void* arg);

static bool counted_loop(fn_t* F, uint32_t var, LLVMValueRef begin, LLVMValueRef end, const ingot_ir_stmt_t* body,
                         body_fn_t emit, void* arg) {
  LLVMTypeRef i64 = F->g->m.t_i64;
  LLVMValueRef slot = entry_alloca(F, i64);
  if (var != UINT32_MAX) {
    F->slots[var] = slot;
    F->slot_types[var] = i64;
  }
  LLVMBuildStore(F->b, begin, slot);
  LLVMBasicBlockRef head = new_block(F, "for.head"), bb = new_block(F, "for.body"), done = new_block(F, "for.end");
  LLVMBuildBr(F->b, head);
  LLVMPositionBuilderAtEnd(F->b, head);
  LLVMValueRef iv = LLVMBuildLoad2(F->b, i64, slot, "");
  LLVMBuildCondBr(F->b, LLVMBuildICmp(F->b, LLVMIntSLT, iv, end, ""), bb, done);
  LLVMPositionBuilderAtEnd(F->b, bb);
  bool ok = emit(F, body, arg);
  if (ok) {
    /* Reload: the body may not change it, but stays SSA-simple. */
    LLVMValueRef cur = LLVMBuildLoad2(F->b, i64, slot, "");
    LLVMBuildStore(F->b, LLVMBuildNSWAdd(F->b, cur, LLVMConstInt(i64, 1, 0), ""), slot);
    LLVMBuildBr(F->b, head);
  }
  LLVMPositionBuilderAtEnd(F->b, done);
  if (var != UINT32_MAX) F->slots[var] = NULL;
  return ok;
}

static bool emit_plain(fn_t* F, const ingot_ir_stmt_t* body, void* arg) {
  (void)arg;
  return scoped(F, body);
}

/* The vector body: the iteration counter's slot holds the vector index u;
 * the variable's lane-0 value is u * lanes. */
typedef struct vec_iter_t {
  vec_t* V;
  LLVMValueRef counter;
} vec_iter_t;

static bool emit_vector_body(fn_t* F, const ingot_ir_stmt_t* body, void* arg) {
  vec_iter_t* it = arg;
  LLVMValueRef u = LLVMBuildLoad2(F->b, F->g->m.t_i64, it->counter, "");
  it->V->base = LLVMBuildNSWMul(F->b, u, LLVMConstInt(F->g->m.t_i64, it->V->lanes, 0), "");
  return scoped(F, body);
}

static size_t stmt_size(const ingot_ir_stmt_t* s, size_t limit);

static size_t expr_size(const ingot_ir_expr_t* e, size_t limit) {
  if (!e || limit == 0) return 0;
  switch (e->kind) {
    case INGOT_IR_EXPR_LOAD: return 1 + expr_size(e->u.load.index, limit - 1);
    case INGOT_IR_EXPR_UNARY:
    case INGOT_IR_EXPR_CAST: return 1 + expr_size(e->u.unary.a, limit - 1);
    case INGOT_IR_EXPR_BINARY: {
      size_t a = expr_size(e->u.binary.a, limit - 1);
      return 1 + a + (a < limit ? expr_size(e->u.binary.b, limit - 1 - a) : 0);
    }
    case INGOT_IR_EXPR_SELECT: {
      size_t a = expr_size(e->u.select.cond, limit - 1);
      size_t b = a < limit ? expr_size(e->u.select.a, limit - 1 - a) : 0;
      return 1 + a + b + (a + b < limit ? expr_size(e->u.select.b, limit - 1 - a - b) : 0);
    }
    default: return 1;
  }
}

/* Nodes in a statement, counting unrolled-to-be loops, up to `limit`. */
static size_t stmt_size(const ingot_ir_stmt_t* s, size_t limit) {
  if (!s || limit == 0) return 0;
  switch (s->kind) {
    case INGOT_IR_STMT_FOR: {
      size_t b = stmt_size(s->u.loop.body, limit);
      if (s->u.loop.loop_kind == INGOT_IR_LOOP_UNROLLED && s->u.loop.extent <= kMaxUnroll) {
        uint64_t total = (uint64_t)b * (uint64_t)s->u.loop.extent;
        return total > limit ? limit : (size_t)total;
      }
      return 1 + b;
    }
    case INGOT_IR_STMT_BLOCK: {
      size_t n = 1;
      for (uint32_t i = 0; i < s->u.block.count && n < limit; ++i) n += stmt_size(s->u.block.stmts[i], limit - n);
      return n;
    }
    case INGOT_IR_STMT_STORE: {
      size_t a = expr_size(s->u.store.index, limit);
      return 1 + a + (a < limit ? expr_size(s->u.store.value, limit - a) : 0);
    }
    case INGOT_IR_STMT_IF: {
      size_t a = expr_size(s->u.cond.cond, limit);
      return 1 + a + (a < limit ? stmt_size(s->u.cond.then_body, limit - a) : 0);
    }
    default: return 1 + expr_size(s->u.local.value, limit);
  }
}

static bool parallel_loop(fn_t* F, const ingot_ir_stmt_t* s);

static bool vector_loop(fn_t* F, const ingot_ir_stmt_t* s, vec_t* V) {
  LLVMTypeRef i64 = F->g->m.t_i64;
  int64_t extent = s->u.loop.extent, lanes = V->lanes;
  int64_t full = extent / lanes, rem = extent % lanes;
  bool ok = true;
  F->vec = V;
  if (full > 0) {
    vec_iter_t it = {V, NULL};
    it.counter = entry_alloca(F, i64);
    /* counted_loop with no IR variable: the counter is ours. */
    LLVMBuildStore(F->b, LLVMConstInt(i64, 0, 0), it.counter);
    LLVMBasicBlockRef head = new_block(F, "vec.head"), bb = new_block(F, "vec.body"), done = new_block(F, "vec.end");
    LLVMBuildBr(F->b, head);
    LLVMPositionBuilderAtEnd(F->b, head);
    LLVMValueRef iv = LLVMBuildLoad2(F->b, i64, it.counter, "");
    LLVMBuildCondBr(F->b, LLVMBuildICmp(F->b, LLVMIntSLT, iv, LLVMConstInt(i64, (unsigned long long)full, 0), ""), bb,
                    done);
    LLVMPositionBuilderAtEnd(F->b, bb);
    V->mask = NULL;
    ok = emit_vector_body(F, s->u.loop.body, &it);
    if (ok) {
      LLVMValueRef cur = LLVMBuildLoad2(F->b, i64, it.counter, "");
      LLVMBuildStore(F->b, LLVMBuildNSWAdd(F->b, cur, LLVMConstInt(i64, 1, 0), ""), it.counter);
      LLVMBuildBr(F->b, head);
    }
    LLVMPositionBuilderAtEnd(F->b, done);
  }
  /* The tail: narrower vectors (half, a quarter, ... of the lanes), each
   * unmasked, then one scalar iteration. Plain loads and stores, unlike
   * masked ones, stay promotable to registers across the enclosing loops
   * (an accumulator row of a convolution): measured 1.5-2.5x faster than one
   * masked iteration on AVX2 and AVX-512 (MobileNetV2's 7- and 14-wide rows). */
  int64_t pos = full * lanes;
  for (int64_t w = lanes / 2; ok && rem > 0 && w >= 2; w /= 2) {
    if (rem < w) continue;
    V->lanes = (unsigned)w;
    V->mask = NULL;
    V->base = LLVMConstInt(i64, (unsigned long long)pos, 0);
    ok = scoped(F, s->u.loop.body);
    pos += w;
    rem -= w;
  }
  V->lanes = (unsigned)lanes;
  F->vec = NULL;
  if (ok && rem > 0) {
    LLVMBuildStore(F->b, LLVMConstInt(i64, (unsigned long long)pos, 0), declare(F, s->u.loop.var, i64));
    ok = scoped(F, s->u.loop.body);
    F->slots[s->u.loop.var] = NULL;
  }
  return ok;
}

static bool for_stmt(fn_t* F, const ingot_ir_stmt_t* s) {
  const ingot_ir_func_t* f = F->f;
  uint32_t v = s->u.loop.var;
  if (v >= f->var_count) return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "loop variable index %u out of range", v);
  if (f->vars[v].kind != INGOT_IR_VAR_LOOP)
    return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "loop over '%s', which is not a loop variable", f->vars[v].name);
  if (F->slots[v] || (F->vec && F->vec->a.var == v))
    return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "loop variable '%s' bound twice", f->vars[v].name);
  if (s->u.loop.extent <= 0)
    return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "loop '%s' has extent %lld", f->vars[v].name,
                (long long)s->u.loop.extent);
  LLVMTypeRef i64 = F->g->m.t_i64;
  ingot_ir_loop_kind_t kind = s->u.loop.loop_kind;
  switch (kind) {
    /* ingot_codegen_prepare left PARALLEL only on loops to outline and
     * VECTORIZED only on loops to vectorize, with their lanes. */
    case INGOT_IR_LOOP_PARALLEL:
      if (F->in_parallel || F->vec)
        return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "loop '%s': PARALLEL inside an outlined or vector loop (not prepared)",
                    f->vars[v].name);
      return parallel_loop(F, s);
    case INGOT_IR_LOOP_VECTORIZED:
      if (!F->vec) {
        vec_t V;
        if (vector_plan(F, s, &V)) {
          bool ok = vector_loop(F, s, &V);
          ingot_codegen_lanes_free(&V.a);
          return ok;
        }
      }
      break;
    case INGOT_IR_LOOP_UNROLLED:
      if (s->u.loop.extent <= kMaxUnroll &&
          (size_t)s->u.loop.extent * stmt_size(s->u.loop.body, kMaxUnrollNodes) < kMaxUnrollNodes) {
        LLVMValueRef slot = declare(F, v, i64);
        for (int64_t k = 0; k < s->u.loop.extent; ++k) {
          LLVMBuildStore(F->b, LLVMConstInt(i64, (unsigned long long)k, 1), slot);
          TRY_OK(scoped(F, s->u.loop.body));
        }
        F->slots[v] = NULL;
        return true;
      }
      break;
    case INGOT_IR_LOOP_SERIAL: break;
    default: return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "loop '%s' has unknown kind %d", f->vars[v].name, (int)kind);
  }
  return counted_loop(F, v, LLVMConstInt(i64, 0, 0), LLVMConstInt(i64, (unsigned long long)s->u.loop.extent, 0),
                      s->u.loop.body, emit_plain, NULL);
}

static bool local_stmt(fn_t* F, const ingot_ir_stmt_t* s) {
  const ingot_ir_func_t* f = F->f;
  uint32_t v = s->u.local.var;
  if (v >= f->var_count) return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "variable index %u out of range", v);
  const ingot_ir_var_t* var = &f->vars[v];
  if (var->kind != INGOT_IR_VAR_LOCAL) return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "'%s' is not a local", var->name);
  if (!s->u.local.value || s->u.local.value->dtype != var->dtype)
    return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "local '%s' (%s): value of another dtype", var->name,
                ingot_dtype_name(var->dtype));
  LLVMTypeRef t;
  TRY_OK(t = need_type(F, var->dtype));
  vec_t* V = F->vec;
  bool vary = V && V->a.varying[v];
  LLVMValueRef val;
  TRY_OK(val = expr(F, s->u.local.value, vary));
  if (vary) val = splat(F, val, V->lanes);
  if (s->kind == INGOT_IR_STMT_LOCAL) {
    if (F->slots[v]) return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "local '%s' declared twice", var->name);
    LLVMBuildStore(F->b, val, declare(F, v, LLVMTypeOf(val)));
    return true;
  }
  if (!F->slots[v]) return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "assignment to '%s' out of its scope", var->name);
  if (vary && V->mask) {
    LLVMValueRef old = LLVMBuildLoad2(F->b, F->slot_types[v], F->slots[v], "");
    val = LLVMBuildSelect(F->b, V->mask, val, old, "");
  }
  if (LLVMTypeOf(val) != F->slot_types[v])
    return fail(F, INGOT_ERROR_INTERNAL, "assignment to '%s': shape differs from its declaration", var->name);
  LLVMBuildStore(F->b, val, F->slots[v]);
  return true;
}

static bool if_stmt(fn_t* F, const ingot_ir_stmt_t* s) {
  if (!s->u.cond.cond || s->u.cond.cond->dtype != INGOT_DTYPE_BOOL)
    return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "if: condition is not bool");
  vec_t* V = F->vec;
  LLVMValueRef c;
  TRY_OK(c = expr(F, s->u.cond.cond, true));
  LLVMValueRef saved = V ? V->mask : NULL;
  if (is_vector(c) && !saved) {
    /* Where every lane holds (a split's guard before the last iteration, a
     * window inside the image) the body runs unmasked: plain loads and
     * stores, where a masked load of bytes or halves is one branch a lane
     * on AVX2. Else under the mask, skipped when no lane holds. */
    c = splat(F, c, V->lanes);
    LLVMValueRef all = ingot_llvm_call_intrinsic(&F->g->m, F->b, "llvm.vector.reduce.and", LLVMTypeOf(c), &c, 1);
    LLVMBasicBlockRef full_bb = new_block(F, "if.all"), some_bb = new_block(F, "if.some"),
                      then_bb = new_block(F, "if.then"), done = new_block(F, "if.end");
    LLVMBuildCondBr(F->b, all, full_bb, some_bb);
    LLVMPositionBuilderAtEnd(F->b, full_bb);
    if (!scoped(F, s->u.cond.then_body)) return false;
    LLVMBuildBr(F->b, done);
    LLVMPositionBuilderAtEnd(F->b, some_bb);
    V->mask = c;
    LLVMBuildCondBr(F->b, any_lane(F, c), then_bb, done);
    LLVMPositionBuilderAtEnd(F->b, then_bb);
    bool ok = scoped(F, s->u.cond.then_body);
    V->mask = NULL;
    if (ok) LLVMBuildBr(F->b, done);
    LLVMPositionBuilderAtEnd(F->b, done);
    return ok;
  }
  if (is_vector(c)) {
    V->mask = and_mask(F, saved, c);
    c = any_lane(F, V->mask);
  }
  LLVMBasicBlockRef then_bb = new_block(F, "if.then"), done = new_block(F, "if.end");
  LLVMBuildCondBr(F->b, c, then_bb, done);
  LLVMPositionBuilderAtEnd(F->b, then_bb);
  bool ok = scoped(F, s->u.cond.then_body);
  if (V) V->mask = saved;
  if (ok) LLVMBuildBr(F->b, done);
  LLVMPositionBuilderAtEnd(F->b, done);
  return ok;
}

/* Clears the slots of variables declared inside `s` (end of scope). */
static void scope_end(fn_t* F, const uint8_t* before) {
  for (uint32_t i = 0; i < F->f->var_count; ++i)
    if (!before[i]) F->slots[i] = NULL;
}

/* ---- Strided stores combined ----
 *
 * A register tile in the channel form ends in one vector store per output
 * position, its lanes (output channels) a plane apart: a scalar store per
 * lane (store_stmt) where no scatter takes them. When a run of such stores
 * holds positions next to each other (4 or 2 of bytes, 2 of 16-bit
 * elements), their vectors are transposed so that each lane's elements go
 * in one 32-bit (or 16-bit) store: a quarter (a half) of the stores and
 * extractions. Zen 3 (AVX2), int8 1x1 convs alone (`ingot run --bench 15`,
 * minima of 7 interleaved rounds): 128 -> 512 at 28x28 0.716 -> 0.626 ms,
 * 32 -> 192 at 28x28 0.121 -> 0.088 ms.
 * Runs of 4-byte elements (a Dot4Words writing the words of each position
 * together, node.words_last) combine in groups of 8 stores (4 on vectors
 * of fewer lanes; then 4 and 2 for what is left), taken that many lanes at
 * a time: each square of vectors is transposed (log2 of the group rounds of
 * two-input shuffles) and each lane's elements go in one vector store. */

/* a - b, for int64 index expressions that differ by a constant. */
static bool index_difference(const ingot_ir_expr_t* a, const ingot_ir_expr_t* b, int64_t* d, int depth) {
  if (ingot_codegen_expr_equal(a, b)) return (*d = 0), true;
  if (depth > 24) return false;
  if (a->kind == INGOT_IR_EXPR_INT && b->kind == INGOT_IR_EXPR_INT) return (*d = a->u.i - b->u.i), true;
  int64_t x;
  if (a->kind == INGOT_IR_EXPR_BINARY && b->kind == INGOT_IR_EXPR_BINARY && a->u.binary.op == b->u.binary.op) {
    const ingot_ir_expr_t *a0 = a->u.binary.a, *a1 = a->u.binary.b, *b0 = b->u.binary.a, *b1 = b->u.binary.b;
    switch (a->u.binary.op) {
      case INGOT_IR_ADD:
      case INGOT_IR_SUB: {
        int64_t y;
        if (index_difference(a0, b0, &x, depth + 1) && index_difference(a1, b1, &y, depth + 1))
          return (*d = a->u.binary.op == INGOT_IR_ADD ? x + y : x - y), true;
        break;
      }
      case INGOT_IR_MUL:
        if (a1->kind == INGOT_IR_EXPR_INT && b1->kind == INGOT_IR_EXPR_INT && a1->u.i == b1->u.i &&
            index_difference(a0, b0, &x, depth + 1)) {
          return (*d = x * a1->u.i), true;
        }
        if (a0->kind == INGOT_IR_EXPR_INT && b0->kind == INGOT_IR_EXPR_INT && a0->u.i == b0->u.i &&
            index_difference(a1, b1, &x, depth + 1)) {
          return (*d = x * a0->u.i), true;
        }
        break;
      default: break;
    }
  }
  /* a = e + k (or k + e): (e - b) + k; b = e + k: (a - e) - k */
  if (a->kind == INGOT_IR_EXPR_BINARY && a->u.binary.op == INGOT_IR_ADD) {
    const ingot_ir_expr_t *e0 = a->u.binary.a, *e1 = a->u.binary.b;
    if (e1->kind == INGOT_IR_EXPR_INT && index_difference(e0, b, &x, depth + 1)) return (*d = x + e1->u.i), true;
    if (e0->kind == INGOT_IR_EXPR_INT && index_difference(e1, b, &x, depth + 1)) return (*d = x + e0->u.i), true;
  }
  if (b->kind == INGOT_IR_EXPR_BINARY && b->u.binary.op == INGOT_IR_ADD) {
    const ingot_ir_expr_t *e0 = b->u.binary.a, *e1 = b->u.binary.b;
    if (e1->kind == INGOT_IR_EXPR_INT && index_difference(a, e0, &x, depth + 1)) return (*d = x - e1->u.i), true;
    if (e0->kind == INGOT_IR_EXPR_INT && index_difference(a, e1, &x, depth + 1)) return (*d = x - e0->u.i), true;
  }
  return false;
}

/* Whether `e` loads from buffer `b` (true, conservatively, past `budget` nodes). */
static bool expr_loads(const ingot_ir_expr_t* e, uint32_t b, int* budget) {
  if (!e || --*budget < 0) return *budget < 0;
  switch (e->kind) {
    case INGOT_IR_EXPR_LOAD: return e->u.load.buffer == b || expr_loads(e->u.load.index, b, budget);
    case INGOT_IR_EXPR_UNARY:
    case INGOT_IR_EXPR_CAST: return expr_loads(e->u.unary.a, b, budget);
    case INGOT_IR_EXPR_BINARY: return expr_loads(e->u.binary.a, b, budget) || expr_loads(e->u.binary.b, b, budget);
    case INGOT_IR_EXPR_SELECT:
      return expr_loads(e->u.select.cond, b, budget) || expr_loads(e->u.select.a, b, budget) ||
             expr_loads(e->u.select.b, b, budget);
    default: return false;
  }
}

static int cmp_i64(const void* a, const void* b) {
  int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
  return x < y ? -1 : x > y;
}

#define COMBINE_MAX_STORES 64

/* The run of stores starting at stmts[0] (count statements follow), in an
 * unmasked vector loop: emits it with combined stores and sets *done to the
 * statements emitted, or leaves *done 0 where it does not apply (one
 * buffer of 1- or 2-byte elements, one lane stride, indices a constant
 * apart, every address distinct, values and indices that do not read the
 * buffer, and at least one group of neighbours). */
static bool combined_stores(fn_t* F, const ingot_ir_stmt_t* const* stmts, uint32_t count, uint32_t* done) {
  *done = 0;
  vec_t* V = F->vec;
  gen_t* g = F->g;
  const ingot_ir_func_t* f = F->f;
  if (!V || V->mask || count < 2 || stmts[0]->kind != INGOT_IR_STMT_STORE) return true;
  uint32_t bi = stmts[0]->u.store.buffer;
  if (bi >= f->buffer_count || f->buffers[bi].role != INGOT_IR_BUFFER_OUTPUT) return true;
  ingot_dtype_t dt = f->buffers[bi].dtype;
  size_t esize = ingot_dtype_size(dt);
  if ((esize != 1 && esize != 2 && esize != 4) || dt == INGOT_DTYPE_BOOL) return true;
  /* 4-byte elements: groups of 8 stores (4 where the vector has fewer lanes) */
  if (esize == 4 && V->lanes < 2) return true;
  int64_t group = esize == 4 ? (V->lanes >= 8 ? 8 : 4) : 4 / (int64_t)esize;
  uint32_t n = 0;
  int64_t coef = 0, d[COMBINE_MAX_STORES];
  while (n < count && n < COMBINE_MAX_STORES && stmts[n]->kind == INGOT_IR_STMT_STORE) {
    const ingot_ir_stmt_t* s = stmts[n];
    int64_t c;
    if (s->u.store.buffer != bi || !s->u.store.index || s->u.store.index->dtype != INGOT_DTYPE_I64 ||
        !s->u.store.value || s->u.store.value->dtype != dt || !affine(V, s->u.store.index, &c) ||
        (n && c != coef) || !index_difference(s->u.store.index, stmts[0]->u.store.index, &d[n], 0)) {
      break;
    }
    coef = c;
    ++n;
  }
  if (n < 2 || coef < 2 || (esize != 4 && (size_t)group * V->lanes > 256)) return true;
  /* every address once; no value or index reads the buffer */
  size_t total = (size_t)n * V->lanes;
  int64_t* addr = ingot_xmalloc(total * sizeof(int64_t));
  for (uint32_t k = 0; k < n; ++k)
    for (unsigned i = 0; i < V->lanes; ++i) addr[(size_t)k * V->lanes + i] = d[k] + coef * (int64_t)i;
  qsort(addr, total, sizeof(int64_t), cmp_i64);
  bool distinct = true;
  for (size_t i = 1; i < total && distinct; ++i) distinct = addr[i] != addr[i - 1];
  free(addr);
  for (uint32_t k = 0; k < n && distinct; ++k) {
    int budget = 4096;
    distinct = !expr_loads(stmts[k]->u.store.value, bi, &budget) && !expr_loads(stmts[k]->u.store.index, bi, &budget);
  }
  if (!distinct) return true;
  /* groups: stores at d, d + 1, .. d + size - 1, of 4 bytes, then of 2
   * (4-byte elements: of 8 stores, then 4, then 2) */
  int32_t member[COMBINE_MAX_STORES][16];
  int64_t size_of[COMBINE_MAX_STORES];
  bool used[COMBINE_MAX_STORES] = {false};
  uint32_t groups = 0;
  for (int64_t size = group; size >= 2; size /= 2)
    for (uint32_t k = 0; k < n; ++k) {
      if (used[k]) continue;
      int32_t m[16] = {(int32_t)k, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
      bool whole = true;
      for (int64_t j = 1; j < size && whole; ++j) {
        for (uint32_t q = 0; q < n && m[j] < 0; ++q)
          if (!used[q] && q != k && d[q] == d[k] + j) m[j] = (int32_t)q;
        whole = m[j] >= 0;
      }
      if (!whole) continue;
      for (int64_t j = 0; j < size; ++j) {
        used[m[j]] = true;
        member[groups][j] = m[j];
      }
      size_of[groups++] = size;
    }
  if (!groups) return true;
  LLVMTypeRef et = mem_type(g, dt);
  if (!et) return (need_type(F, dt), false);
  LLVMValueRef p, idx0, vals[COMBINE_MAX_STORES];
  TRY_OK(p = buffer_ptr(F, bi));
  for (uint32_t k = 0; k < n; ++k) {
    TRY_OK(vals[k] = expr(F, stmts[k]->u.store.value, true));
    vals[k] = splat(F, vals[k], V->lanes);
  }
  TRY_OK(idx0 = expr(F, stmts[0]->u.store.index, false));
  LLVMValueRef base = LLVMBuildGEP2(F->b, et, p, &idx0, 1, "");
  unsigned L = V->lanes;
  LLVMValueRef mask[256];
  for (uint32_t gi = 0; gi < groups && esize == 4; ++gi) {
    /* R stores (a power of two), taken R lanes at a time: a square of R
     * vectors of R elements (past the last lane undefined), transposed by
     * log2(R) rounds, round b (R/2, .., 1) swapping the off-diagonal b x b
     * blocks of each 2b x 2b block; then row i holds lane c + i's elements
     * of the group's stores 0..R-1, one vector store at d + coef * (c + i) */
    const int32_t* m = member[gi];
    unsigned R = (unsigned)size_of[gi];
    for (unsigned c = 0; c < L; c += R) {
      LLVMValueRef rows[16], sel[16];
      for (unsigned j = 0; j < R; ++j)
        sel[j] = c + j < L ? LLVMConstInt(g->m.t_i32, c + j, 0) : LLVMGetUndef(g->m.t_i32);
      for (unsigned k = 0; k < R; ++k)
        rows[k] = LLVMBuildShuffleVector(F->b, vals[m[k]], LLVMGetUndef(LLVMTypeOf(vals[m[k]])), LLVMConstVector(sel, R), "");
      for (unsigned b = R / 2; b >= 1; b /= 2) {
        LLVMValueRef lo_mask[16], hi_mask[16];
        for (unsigned j = 0; j < R; ++j) {
          lo_mask[j] = LLVMConstInt(g->m.t_i32, (j & b) ? R + j - b : j, 0);
          hi_mask[j] = LLVMConstInt(g->m.t_i32, (j & b) ? R + j : j + b, 0);
        }
        for (unsigned i = 0; i < R; ++i) {
          if (i & b) continue;
          LLVMValueRef a = rows[i], e = rows[i + b];
          rows[i] = LLVMBuildShuffleVector(F->b, a, e, LLVMConstVector(lo_mask, R), "");
          rows[i + b] = LLVMBuildShuffleVector(F->b, a, e, LLVMConstVector(hi_mask, R), "");
        }
      }
      for (unsigned i = 0; i < R && c + i < L; ++i) {
        LLVMValueRef off = LLVMConstInt(g->m.t_i64, (unsigned long long)(d[m[0]] + coef * (int64_t)(c + i)), 1);
        LLVMValueRef ptr = LLVMBuildBitCast(F->b, LLVMBuildGEP2(F->b, et, base, &off, 1, ""),
                                            LLVMPointerType(LLVMTypeOf(rows[i]), 0), "");
        LLVMSetAlignment(LLVMBuildStore(F->b, rows[i], ptr), (unsigned)esize);
      }
    }
  }
  for (uint32_t gi = 0; gi < groups && esize != 4; ++gi) {
    /* the group's vectors side by side, then lane-major: lane i's elements
     * of positions 0..size-1 next to each other, one word a lane */
    unsigned size = (unsigned)size_of[gi];
    const int32_t* m = member[gi];
    for (unsigned i = 0; i < 2 * L; ++i) mask[i] = LLVMConstInt(g->m.t_i32, i, 0);
    LLVMValueRef cat = LLVMBuildShuffleVector(F->b, vals[m[0]], vals[m[1]], LLVMConstVector(mask, 2 * L), "");
    if (size == 4) {
      LLVMValueRef hi = LLVMBuildShuffleVector(F->b, vals[m[2]], vals[m[3]], LLVMConstVector(mask, 2 * L), "");
      for (unsigned i = 0; i < 4 * L; ++i) mask[i] = LLVMConstInt(g->m.t_i32, i, 0);
      cat = LLVMBuildShuffleVector(F->b, cat, hi, LLVMConstVector(mask, 4 * L), "");
    }
    for (unsigned i = 0; i < L; ++i)
      for (unsigned j = 0; j < size; ++j) mask[i * size + j] = LLVMConstInt(g->m.t_i32, j * L + i, 0);
    LLVMValueRef lanes = LLVMBuildShuffleVector(F->b, cat, LLVMGetUndef(LLVMTypeOf(cat)), LLVMConstVector(mask, size * L), "");
    LLVMTypeRef word = LLVMIntTypeInContext(g->m.ctx, (unsigned)(8 * esize * size));
    LLVMValueRef words = LLVMBuildBitCast(F->b, lanes, LLVMVectorType(word, L), "");
    for (unsigned i = 0; i < L; ++i) {
      LLVMValueRef off = LLVMConstInt(g->m.t_i64, (unsigned long long)(d[m[0]] + coef * (int64_t)i), 1);
      LLVMValueRef ptr =
          LLVMBuildBitCast(F->b, LLVMBuildGEP2(F->b, et, base, &off, 1, ""), LLVMPointerType(word, 0), "");
      LLVMValueRef w = LLVMBuildExtractElement(F->b, words, LLVMConstInt(g->m.t_i32, i, 0), "");
      LLVMSetAlignment(LLVMBuildStore(F->b, w, ptr), (unsigned)esize);
    }
  }
  for (uint32_t k = 0; k < n; ++k) {
    if (used[k]) continue;
    LLVMValueRef off = LLVMConstInt(g->m.t_i64, (unsigned long long)d[k], 1);
    store_lanes(F, et, LLVMBuildGEP2(F->b, et, base, &off, 1, ""), vals[k], coef);
  }
  *done = n;
  return true;
}

/* Emits `s` as a scope: variables it declares are out of scope after it
 * (loop bodies are emitted more than once: vector body and tail, unrolling). */
static bool scoped(fn_t* F, const ingot_ir_stmt_t* s) {
  uint8_t small[256];
  uint8_t* before = F->f->var_count <= sizeof(small) ? small : ingot_xmalloc(F->f->var_count);
  for (uint32_t i = 0; i < F->f->var_count; ++i) before[i] = F->slots[i] != NULL;
  bool ok;
  if (s && s->kind == INGOT_IR_STMT_BLOCK) {
    ok = true;
    for (uint32_t i = 0; i < s->u.block.count && ok;) {
      uint32_t done = 0;
      ok = combined_stores(F, (const ingot_ir_stmt_t* const*)s->u.block.stmts + i, s->u.block.count - i, &done);
      if (ok && !done) ok = stmt(F, s->u.block.stmts[i]), done = 1;
      i += done;
    }
  } else {
    ok = stmt(F, s);
  }
  scope_end(F, before);
  if (before != small) free(before);
  return ok;
}

static bool stmt(fn_t* F, const ingot_ir_stmt_t* s) {
  if (!s) return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "missing statement");
  if (F->g->status != INGOT_OK) return false;
  switch (s->kind) {
    case INGOT_IR_STMT_FOR: return for_stmt(F, s);
    case INGOT_IR_STMT_BLOCK: return scoped(F, s);
    case INGOT_IR_STMT_STORE: return store_stmt(F, s);
    case INGOT_IR_STMT_IF: return if_stmt(F, s);
    case INGOT_IR_STMT_LOCAL:
    case INGOT_IR_STMT_ASSIGN: return local_stmt(F, s);
    case INGOT_IR_STMT_BARRIER: return fail(F, INGOT_ERROR_UNSUPPORTED, "a GPU barrier in CPU code");
  }
  return fail(F, INGOT_ERROR_INVALID_ARGUMENT, "unknown statement kind %d", (int)s->kind);
}

/* ---- Functions. */

/* Creates `void name(env*, T0* noalias, ..., extra...)`: the body of a
 * kernel or of an outlined loop, and sets up F to emit into it. */
static void body_function(fn_t* F, gen_t* g, const ingot_ir_func_t* f, const char* name, LLVMTypeRef* extra,
                          unsigned extra_count) {
  memset(F, 0, sizeof(*F));
  F->g = g;
  F->f = f;
  uint32_t nb = f->buffer_count;
  LLVMTypeRef* params = ingot_xcalloc(1 + nb + extra_count, sizeof(LLVMTypeRef));
  params[0] = g->t_env_ptr;
  for (uint32_t i = 0; i < nb; ++i) {
    LLVMTypeRef et = mem_type(g, f->buffers[i].dtype);
    params[1 + i] = LLVMPointerType(et ? et : g->m.t_i8, 0);
  }
  for (unsigned i = 0; i < extra_count; ++i) params[1 + nb + i] = extra[i];
  LLVMTypeRef ft = LLVMFunctionType(g->m.t_void, params, 1 + nb + extra_count, 0);
  free(params);
  F->fn = LLVMAddFunction(g->m.mod, name, ft);
  LLVMSetLinkage(F->fn, LLVMInternalLinkage);
  ingot_llvm_function_attrs(&g->m, F->fn);
  for (uint32_t i = 0; i < nb; ++i) {
    add_enum_attr(g->m.ctx, F->fn, 2 + i, "noalias");
    if (f->buffers[i].role == INGOT_IR_BUFFER_INPUT) add_enum_attr(g->m.ctx, F->fn, 2 + i, "readonly");
  }
  F->b = LLVMCreateBuilderInContext(g->m.ctx);
  LLVMPositionBuilderAtEnd(F->b, LLVMAppendBasicBlockInContext(g->m.ctx, F->fn, "entry"));
  F->env = LLVMGetParam(F->fn, 0);
  F->bufs = ingot_xcalloc(nb ? nb : 1, sizeof(LLVMValueRef));
  for (uint32_t i = 0; i < nb; ++i) F->bufs[i] = LLVMGetParam(F->fn, 1 + i);
  F->slots = ingot_xcalloc(f->var_count ? f->var_count : 1, sizeof(LLVMValueRef));
  F->slot_types = ingot_xcalloc(f->var_count ? f->var_count : 1, sizeof(LLVMTypeRef));
}

static void fn_free(fn_t* F) {
  if (F->b) LLVMDisposeBuilder(F->b);
  free(F->bufs);
  free(F->slots);
  free(F->slot_types);
  F->b = NULL;
  F->bufs = F->slots = NULL;
  F->slot_types = NULL;
}

/* A PARALLEL loop: the body goes to an outlined function run over chunks
 * [begin, end) by env->parallel_for. */
static bool parallel_loop(fn_t* F, const ingot_ir_stmt_t* s) {
  gen_t* g = F->g;
  const ingot_ir_func_t* f = F->f;
  uint32_t nb = f->buffer_count;
  /* The enclosing variables the body reads. */
  ingot_ir_uses_t u;
  ingot_ir_uses_collect(f, s->u.loop.body, &u);
  uint32_t* captured = ingot_xcalloc(f->var_count ? f->var_count : 1, sizeof(uint32_t));
  uint32_t ncap = 0;
  for (uint32_t v = 0; v < f->var_count; ++v)
    if (u.vars[v] && !u.declared[v] && F->slots[v]) captured[ncap++] = v;
  ingot_ir_uses_free(&u);

  uint32_t k = g->par_count++;
  char name[96];
  /* The context: env, every buffer, then the captured values. */
  LLVMTypeRef* fields = ingot_xcalloc(1 + nb + ncap, sizeof(LLVMTypeRef));
  fields[0] = g->t_env_ptr;
  for (uint32_t i = 0; i < nb; ++i) fields[1 + i] = LLVMTypeOf(F->bufs[i]);
  for (uint32_t i = 0; i < ncap; ++i) fields[1 + nb + i] = F->slot_types[captured[i]];
  LLVMTypeRef ctx_t = LLVMStructTypeInContext(g->m.ctx, fields, 1 + nb + ncap, 0);

  /* Inner body: void(env, bufs..., captured..., i64 begin, i64 end). */
  LLVMTypeRef* extra = ingot_xcalloc(ncap + 2, sizeof(LLVMTypeRef));
  for (uint32_t i = 0; i < ncap; ++i) extra[i] = F->slot_types[captured[i]];
  extra[ncap] = extra[ncap + 1] = g->m.t_i64;
  snprintf(name, sizeof(name), "par%u_body", k);
  fn_t P;
  body_function(&P, g, f, name, extra, ncap + 2);
  free(extra);
  P.in_parallel = true;
  for (uint32_t i = 0; i < ncap; ++i) {
    uint32_t v = captured[i];
    LLVMBuildStore(P.b, LLVMGetParam(P.fn, 1 + nb + i), declare(&P, v, F->slot_types[v]));
  }
  LLVMValueRef begin = LLVMGetParam(P.fn, 1 + nb + ncap), end = LLVMGetParam(P.fn, 2 + nb + ncap);
  bool ok = counted_loop(&P, s->u.loop.var, begin, end, s->u.loop.body, emit_plain, NULL);
  if (ok) LLVMBuildRetVoid(P.b);
  LLVMValueRef inner = P.fn;
  LLVMTypeRef inner_t = LLVMGlobalGetValueType(inner);
  fn_free(&P);

  if (ok) {
    /* Outer: void(i8* ctx, i64 begin, i64 end) unpacks and calls inner. */
    snprintf(name, sizeof(name), "par%u", k);
    LLVMValueRef outer = LLVMAddFunction(g->m.mod, name, g->t_body_fn);
    LLVMSetLinkage(outer, LLVMInternalLinkage);
    ingot_llvm_function_attrs(&g->m, outer);
    LLVMBuilderRef ob = LLVMCreateBuilderInContext(g->m.ctx);
    LLVMPositionBuilderAtEnd(ob, LLVMAppendBasicBlockInContext(g->m.ctx, outer, "entry"));
    LLVMValueRef cp = LLVMBuildBitCast(ob, LLVMGetParam(outer, 0), LLVMPointerType(ctx_t, 0), "");
    LLVMValueRef* args = ingot_xcalloc(1 + nb + ncap + 2, sizeof(LLVMValueRef));
    for (uint32_t i = 0; i < 1 + nb + ncap; ++i)
      args[i] = LLVMBuildLoad2(ob, fields[i], LLVMBuildStructGEP2(ob, ctx_t, cp, i, ""), "");
    args[1 + nb + ncap] = LLVMGetParam(outer, 1);
    args[2 + nb + ncap] = LLVMGetParam(outer, 2);
    LLVMBuildCall2(ob, inner_t, inner, args, 1 + nb + ncap + 2, "");
    LLVMBuildRetVoid(ob);
    LLVMDisposeBuilder(ob);
    free(args);

    /* Here: fill the context and call env->parallel_for(pool, n, outer, ctx). */
    LLVMValueRef ctx = entry_alloca(F, ctx_t);
    LLVMBuildStore(F->b, F->env, LLVMBuildStructGEP2(F->b, ctx_t, ctx, 0, ""));
    for (uint32_t i = 0; i < nb; ++i) LLVMBuildStore(F->b, F->bufs[i], LLVMBuildStructGEP2(F->b, ctx_t, ctx, 1 + i, ""));
    for (uint32_t i = 0; i < ncap; ++i) {
      uint32_t v = captured[i];
      LLVMValueRef val = LLVMBuildLoad2(F->b, F->slot_types[v], F->slots[v], "");
      LLVMBuildStore(F->b, val, LLVMBuildStructGEP2(F->b, ctx_t, ctx, 1 + nb + i, ""));
    }
    LLVMTypeRef pf_params[4] = {g->m.t_ptr, g->m.t_i64, LLVMPointerType(g->t_body_fn, 0), g->m.t_ptr};
    LLVMTypeRef pf_t = LLVMFunctionType(g->m.t_void, pf_params, 4, 0);
    LLVMValueRef pool = LLVMBuildLoad2(F->b, g->m.t_ptr, LLVMBuildStructGEP2(F->b, g->t_env, F->env, ENV_pool, ""), "");
    LLVMValueRef pf = LLVMBuildLoad2(F->b, LLVMPointerType(pf_t, 0), LLVMBuildStructGEP2(F->b, g->t_env, F->env, ENV_parallel_for, ""), "");
    LLVMValueRef call_args[4] = {pool, LLVMConstInt(g->m.t_i64, (unsigned long long)s->u.loop.extent, 0), outer,
                                 LLVMBuildBitCast(F->b, ctx, g->m.t_ptr, "")};
    LLVMBuildCall2(F->b, pf_t, pf, call_args, 4, "");
  }
  free(fields);
  free(captured);
  return ok;
}

/* One IR function: its body and its kernel entry; returns the entry. */
/* The extent of every loop variable (each is bound by one loop). */
static void collect_extents(const ingot_ir_stmt_t* s, int64_t* extent, uint32_t nvars) {
  if (!s) return;
  switch (s->kind) {
    case INGOT_IR_STMT_FOR:
      if (s->u.loop.var < nvars) extent[s->u.loop.var] = s->u.loop.extent;
      collect_extents(s->u.loop.body, extent, nvars);
      return;
    case INGOT_IR_STMT_BLOCK:
      for (uint32_t i = 0; i < s->u.block.count; ++i) collect_extents(s->u.block.stmts[i], extent, nvars);
      return;
    case INGOT_IR_STMT_IF: collect_extents(s->u.cond.then_body, extent, nvars); return;
    default: return;
  }
}

static LLVMValueRef kernel(gen_t* g, const ingot_ir_func_t* f, uint32_t index) {
  char name[64];
  g->cur = f;
  free(g->extent);
  g->extent = ingot_xcalloc(f->var_count ? f->var_count : 1, sizeof(int64_t));
  collect_extents(f->body, g->extent, f->var_count);
  memo_clear(&g->has_load);
  snprintf(name, sizeof(name), "k%u_body", index);
  fn_t F;
  body_function(&F, g, f, name, NULL, 0);
  bool ok = stmt(&F, f->body);
  if (ok) LLVMBuildRetVoid(F.b);
  LLVMValueRef body = F.fn;
  LLVMTypeRef body_t = LLVMGlobalGetValueType(body);
  fn_free(&F);
  if (!ok) return NULL;

  LLVMTypeRef params[2] = {g->t_env_ptr, LLVMPointerType(g->m.t_ptr, 0)};
  LLVMTypeRef kt = LLVMFunctionType(g->m.t_i32, params, 2, 0);
  snprintf(name, sizeof(name), "k%u", index);
  LLVMValueRef fn = LLVMAddFunction(g->m.mod, name, kt);
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  ingot_llvm_function_attrs(&g->m, fn);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(g->m.ctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->m.ctx, fn, "entry"));
  LLVMValueRef* args = ingot_xcalloc(1 + f->buffer_count, sizeof(LLVMValueRef));
  args[0] = LLVMGetParam(fn, 0);
  for (uint32_t i = 0; i < f->buffer_count; ++i) {
    LLVMValueRef idx = LLVMConstInt(g->m.t_i64, i, 0);
    LLVMValueRef p = LLVMBuildLoad2(b, g->m.t_ptr, LLVMBuildGEP2(b, g->m.t_ptr, LLVMGetParam(fn, 1), &idx, 1, ""), "");
    LLVMTypeRef et = mem_type(g, f->buffers[i].dtype);
    args[1 + i] = LLVMBuildBitCast(b, p, LLVMPointerType(et ? et : g->m.t_i8, 0), "");
  }
  LLVMBuildCall2(b, body_t, body, args, 1 + f->buffer_count, "");
  LLVMBuildRet(b, LLVMConstInt(g->m.t_i32, 0, 0));
  LLVMDisposeBuilder(b);
  free(args);
  return fn;
}

/* A private constant C string; returns an i8* to it. */
static LLVMValueRef const_string(gen_t* g, const char* s) {
  LLVMValueRef init = LLVMConstStringInContext(g->m.ctx, s, (unsigned)strlen(s), 0);
  LLVMValueRef gv = LLVMAddGlobal(g->m.mod, LLVMTypeOf(init), "str");
  LLVMSetInitializer(gv, init);
  LLVMSetGlobalConstant(gv, 1);
  LLVMSetLinkage(gv, LLVMPrivateLinkage);
  LLVMSetUnnamedAddress(gv, LLVMGlobalUnnamedAddr);
  return LLVMConstBitCast(gv, g->m.t_ptr);
}

/* The kernel table and ingot_library_query (the one exported symbol). */
static void library(gen_t* g, LLVMValueRef* entries, ingot_ir_func_t* const* funcs, uint32_t count) {
  LLVMTypeRef fields[2] = {g->m.t_ptr, g->m.t_ptr};
  LLVMTypeRef entry_t = LLVMStructTypeInContext(g->m.ctx, fields, 2, 0);
  LLVMValueRef* rows = ingot_xcalloc(count ? count : 1, sizeof(LLVMValueRef));
  for (uint32_t i = 0; i < count; ++i) {
    LLVMValueRef vals[2] = {const_string(g, funcs[i]->name), LLVMConstBitCast(entries[i], g->m.t_ptr)};
    rows[i] = LLVMConstNamedStruct(entry_t, vals, 2);
  }
  if (count == 0) {
    LLVMValueRef vals[2] = {LLVMConstNull(g->m.t_ptr), LLVMConstNull(g->m.t_ptr)};
    rows[0] = LLVMConstNamedStruct(entry_t, vals, 2);
  }
  unsigned nrows = count ? count : 1;
  LLVMValueRef table_init = LLVMConstArray(entry_t, rows, nrows);
  free(rows);
  LLVMValueRef table = LLVMAddGlobal(g->m.mod, LLVMTypeOf(table_init), "ingot_kernels");
  LLVMSetInitializer(table, table_init);
  LLVMSetGlobalConstant(table, 1);
  LLVMSetLinkage(table, LLVMInternalLinkage);

  LLVMTypeRef lib_fields[3] = {g->m.t_i32, g->m.t_i32, LLVMPointerType(entry_t, 0)};
  LLVMTypeRef lib_t = LLVMStructTypeInContext(g->m.ctx, lib_fields, 3, 0);
  LLVMValueRef zero = LLVMConstInt(g->m.t_i32, 0, 0);
  LLVMValueRef idx[2] = {zero, zero};
  LLVMValueRef lib_vals[3] = {LLVMConstInt(g->m.t_i32, INGOT_KERNEL_ABI_VERSION, 0),
                              LLVMConstInt(g->m.t_i32, count, 0),
                              LLVMConstInBoundsGEP2(LLVMTypeOf(table_init), table, idx, 2)};
  LLVMValueRef lib_init = LLVMConstNamedStruct(lib_t, lib_vals, 3);
  LLVMValueRef lib = LLVMAddGlobal(g->m.mod, lib_t, "ingot_library");
  LLVMSetInitializer(lib, lib_init);
  LLVMSetGlobalConstant(lib, 1);
  LLVMSetLinkage(lib, LLVMInternalLinkage);

  LLVMTypeRef qp = g->m.t_i32;
  LLVMTypeRef qt = LLVMFunctionType(g->m.t_ptr, &qp, 1, 0);
  LLVMValueRef q = LLVMAddFunction(g->m.mod, INGOT_LIBRARY_QUERY_SYMBOL, qt);
  LLVMSetVisibility(q, LLVMDefaultVisibility);
  ingot_llvm_function_attrs(&g->m, q);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(g->m.ctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->m.ctx, q, "entry"));
  LLVMValueRef ok = LLVMBuildICmp(b, LLVMIntEQ, LLVMGetParam(q, 0), LLVMConstInt(g->m.t_i32, INGOT_KERNEL_ABI_VERSION, 0), "");
  LLVMBuildRet(b, LLVMBuildSelect(b, ok, LLVMConstBitCast(lib, g->m.t_ptr), LLVMConstNull(g->m.t_ptr), ""));
  LLVMDisposeBuilder(b);
}

/* The LLVM type of an env field of type `t` (a pointer for the functions). */
static LLVMTypeRef env_field_type(gen_t* g, env_type_t t) {
  ingot_llvm_module_t* m = &g->m;
  switch (t) {
    case ENV_TYPE_U32: return m->t_i32;
    case ENV_TYPE_PTR: return m->t_ptr;
    case ENV_TYPE_PARALLEL_FOR: {
      LLVMTypeRef params[4] = {m->t_ptr, m->t_i64, LLVMPointerType(g->t_body_fn, 0), m->t_ptr};
      return LLVMPointerType(LLVMFunctionType(m->t_void, params, 4, 0), 0);
    }
    case ENV_TYPE_F32_F32: return LLVMPointerType(LLVMFunctionType(m->t_f32, &m->t_f32, 1, 0), 0);
    case ENV_TYPE_F32_F32_F32: {
      LLVMTypeRef params[2] = {m->t_f32, m->t_f32};
      return LLVMPointerType(LLVMFunctionType(m->t_f32, params, 2, 0), 0);
    }
  }
  return m->t_ptr;
}

static void gen_init(gen_t* g, const ingot_target_t* target) {
  memset(g, 0, sizeof(*g));
  ingot_llvm_module_t* m = &g->m;
  m->ctx = LLVMContextCreate();
  m->mod = LLVMModuleCreateWithNameInContext("ingot", m->ctx);
  LLVMSetSourceFileName(m->mod, "ingot", 5);
  m->target = target;
  m->x86 = target->arch == INGOT_TARGET_ARCH_X86_64;
  m->native_scatter = m->x86 && ingot_target_has_feature(target, INGOT_TARGET_FEATURE_AVX512F);
  m->has_round = !m->x86 || ingot_target_has_feature(target, INGOT_TARGET_FEATURE_SSE4_1);
  m->has_half_ext = (m->x86 && ingot_target_has_feature(target, INGOT_TARGET_FEATURE_F16C)) ||
                    target->arch == INGOT_TARGET_ARCH_AARCH64;
  m->has_half_arith = ingot_target_has_half_arith(target);
  m->vector_bits = target->vector_bytes * 8;
  if (m->x86) {
    m->cvt_lanes_max = ingot_target_has_feature(target, INGOT_TARGET_FEATURE_AVX512F) ? 16
                       : ingot_target_has_feature(target, INGOT_TARGET_FEATURE_AVX)   ? 8
                                                                                      : 4;
    m->avx2_byte_packs = ingot_target_has_feature(target, INGOT_TARGET_FEATURE_AVX2) &&
                         !ingot_target_has_feature(target, INGOT_TARGET_FEATURE_AVX512BW);
    m->pmaddwd_lanes_max = ingot_target_has_feature(target, INGOT_TARGET_FEATURE_AVX512BW) ? 16
                           : ingot_target_has_feature(target, INGOT_TARGET_FEATURE_AVX2)   ? 8
                                                                                           : 4;
  }
  if (target->arch == INGOT_TARGET_ARCH_AARCH64) {
    m->a64_usdot = ingot_target_has_feature(target, INGOT_TARGET_FEATURE_I8MM);
    m->a64_sdot = ingot_target_has_feature(target, INGOT_TARGET_FEATURE_DOTPROD);
  }
  if (m->x86 && ingot_target_has_feature(target, INGOT_TARGET_FEATURE_AVX512VNNI)) {
    m->vnni_lanes_max = 16;
    m->vnni_vl = ingot_target_has_feature(target, INGOT_TARGET_FEATURE_AVX512VL);
  }
  m->masked_tail = target->has_masked_load;
  m->masked_min_bytes = target->masked_load_min_bytes;
  m->t_void = LLVMVoidTypeInContext(m->ctx);
  m->t_i1 = LLVMInt1TypeInContext(m->ctx);
  m->t_i8 = LLVMInt8TypeInContext(m->ctx);
  m->t_i32 = LLVMInt32TypeInContext(m->ctx);
  m->t_i64 = LLVMInt64TypeInContext(m->ctx);
  m->t_f32 = LLVMFloatTypeInContext(m->ctx);
  m->t_f64 = LLVMDoubleTypeInContext(m->ctx);
  m->t_ptr = LLVMPointerType(m->t_i8, 0);
  /* ingot_kernel_env_t (runtime/ingot_format.h). */
  LLVMTypeRef body_params[3] = {m->t_ptr, m->t_i64, m->t_i64};
  g->t_body_fn = LLVMFunctionType(m->t_void, body_params, 3, 0);
  LLVMTypeRef env_fields[ENV_FIELD_COUNT];
  for (unsigned i = 0; i < ENV_FIELD_COUNT; ++i) env_fields[i] = env_field_type(g, k_env_types[i]);
  g->t_env = LLVMStructCreateNamed(m->ctx, "ingot_kernel_env_t");
  LLVMStructSetBody(g->t_env, env_fields, ENV_FIELD_COUNT, 0);
  g->t_env_ptr = LLVMPointerType(g->t_env, 0);
}

static void gen_free(gen_t* g) {
  memo_clear(&g->has_load);
  free(g->extent);
  g->extent = NULL;
  if (g->m.mod) LLVMDisposeModule(g->m.mod);
  if (g->m.ctx) LLVMContextDispose(g->m.ctx);
  g->m.mod = NULL;
  g->m.ctx = NULL;
}

bool ingot_codegen_llvm_available(void) { return true; }

/* The module for `funcs`, optimized; its IR to keep_ir_path and/or out_text,
 * its shared object to out_object unless that is NULL. */
static ingot_status_t llvm_generate(ingot_ir_func_t* const* funcs, uint32_t count, const ingot_target_t* target,
                                    const char* keep_ir_path, ingot_strbuf_t* out_text, uint8_t** out_object,
                                    size_t* out_size) {
  if (count && !funcs) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "codegen llvm: missing functions");
  if (!target || target->kind != INGOT_TARGET_LLVM)
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "codegen llvm: target '%s' is not an llvm target",
                      target ? target->name : "(none)");
  if (target->vector_bytes == 0 || target->vector_bytes > 256 || (target->vector_bytes & (target->vector_bytes - 1)))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "codegen llvm: vector width %u bytes", target->vector_bytes);
  for (uint32_t i = 0; i < count; ++i) {
    if (!funcs[i] || !funcs[i]->name || !funcs[i]->body)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "codegen llvm: function %u is incomplete", i);
    ingot_status_t st = ingot_ir_verify(funcs[i]);
    if (st != INGOT_OK) return ingot_fail_prefix(st, "codegen llvm");
  }
  LLVMTargetMachineRef tm = NULL;
  ingot_status_t st = ingot_llvm_target_machine(target, &tm);
  if (st != INGOT_OK) return st;

  gen_t g;
  gen_init(&g, target);
  LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(g.m.mod, layout);
  LLVMDisposeTargetData(layout);
  char* triple = LLVMGetTargetMachineTriple(tm);
  LLVMSetTarget(g.m.mod, triple);
  LLVMDisposeMessage(triple);

  LLVMValueRef* entries = ingot_xcalloc(count ? count : 1, sizeof(LLVMValueRef));
  for (uint32_t i = 0; i < count && g.status == INGOT_OK; ++i) {
    entries[i] = kernel(&g, funcs[i], i);
    if (!entries[i] && g.status == INGOT_OK)
      g.status = ingot_fail(INGOT_ERROR_INTERNAL, "codegen llvm: function '%s' failed", funcs[i]->name);
  }
  if (g.status == INGOT_OK) {
    library(&g, entries, funcs, count);
    ingot_llvm_define_memory_functions(&g.m);
    char* msg = NULL;
    if (LLVMVerifyModule(g.m.mod, LLVMReturnStatusAction, &msg)) {
      char head[1200];
      snprintf(head, sizeof(head), "%s", msg ? msg : "");
      g.status = ingot_fail(INGOT_ERROR_INTERNAL, "codegen llvm: the generated module does not verify: %s", head);
    }
    LLVMDisposeMessage(msg);
  }
  free(entries);
  if (g.status == INGOT_OK) g.status = ingot_llvm_finish(&g.m, tm, keep_ir_path, out_text, out_object, out_size);
  st = g.status;
  gen_free(&g);
  LLVMDisposeTargetMachine(tm);
  return st;
}

ingot_status_t ingot_codegen_llvm_emit(ingot_ir_func_t* const* funcs, uint32_t count, const ingot_target_t* target,
                                       ingot_strbuf_t* out_text) {
  if (!out_text) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "codegen llvm: missing output");
  return llvm_generate(funcs, count, target, NULL, out_text, NULL, NULL);
}

ingot_status_t ingot_codegen_llvm_build(ingot_ir_func_t* const* funcs, uint32_t count, const ingot_target_t* target,
                                        const ingot_codegen_options_t* options, uint8_t** out_object,
                                        size_t* out_size) {
  if (!out_object || !out_size) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "codegen llvm: missing output");
  *out_object = NULL;
  *out_size = 0;
  return llvm_generate(funcs, count, target, options ? options->keep_source_path : NULL, NULL, out_object, out_size);
}
