/* The loop IR: what one kernel computes, as a loop nest over flat buffers.
 *
 * A function (ingot_ir_func_t) has parameter buffers (the kernel's arguments,
 * in order), variables (loop counters and scalar locals) and a body statement.
 * Expressions and statements are tagged unions allocated from the function's
 * arena; nothing is freed until ingot_ir_func_destroy. Rewrites (schedule/)
 * build new nodes and leave the old ones to the arena. Nodes may be shared by
 * several parents (a DAG); rewrites never mutate a node in place.
 *
 * Buffers are flat: a LOAD or STORE takes one int64 element index. Lowering
 * computes flat indices from multi-dimensional ones (ingot_ir_flat_index).
 *
 * Loop variables run from 0 to extent-1 (extent a positive constant). Every
 * loop variable and local has a name unique in its function; schedules refer
 * to loops by these names. */
#ifndef INGOT_IR_H_
#define INGOT_IR_H_

#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"
#include "runtime/ingot.h"
#include "runtime/ingot_format.h"

typedef struct ingot_ir_expr_t ingot_ir_expr_t;
typedef struct ingot_ir_stmt_t ingot_ir_stmt_t;

typedef enum ingot_ir_buffer_role_t {
  INGOT_IR_BUFFER_INPUT = 1,   /* read only */
  INGOT_IR_BUFFER_OUTPUT = 2,  /* written (and maybe read back) */
  /* Not a parameter: scratch in a GPU block's shared memory, one copy per
   * block, read and written by the block's threads (a schedule's staged
   * tile). SHARED buffers come after every parameter: the parameters are
   * exactly the buffers before the first SHARED one (ingot_ir_param_count).
   * The interpreter allocates them itself (zeroed); CPU backends refuse
   * them. */
  INGOT_IR_BUFFER_SHARED = 3,
} ingot_ir_buffer_role_t;

typedef struct ingot_ir_buffer_t {
  const char* name;
  ingot_dtype_t dtype;
  ingot_ir_buffer_role_t role;
  int32_t rank;
  int64_t dims[INGOT_MAX_RANK];
} ingot_ir_buffer_t;

typedef enum ingot_ir_var_kind_t {
  INGOT_IR_VAR_LOOP = 1,       /* a loop counter, int64 */
  INGOT_IR_VAR_LOCAL = 2,      /* a scalar local, declared by STMT_LOCAL */
} ingot_ir_var_kind_t;

typedef struct ingot_ir_var_t {
  const char* name;
  ingot_ir_var_kind_t kind;
  ingot_dtype_t dtype;         /* LOOP: INGOT_DTYPE_I64 */
  /* LOOP: what the variable stands for in other loop variables, or NULL.
   * A schedule rewrite that replaces a loop (split, fuse) records the
   * expression that took its place; lowering may record that a stage's
   * loop runs like another stage's (an alias). ingot_ir_expr_resolve
   * follows these, so an expression written in one stage's original loop
   * variables can be moved into that stage after it was scheduled. */
  ingot_ir_expr_t* value;
} ingot_ir_var_t;

typedef enum ingot_ir_expr_kind_t {
  INGOT_IR_EXPR_INT = 1,       /* .i */
  INGOT_IR_EXPR_FLOAT = 2,     /* .f */
  INGOT_IR_EXPR_VAR = 3,       /* .var */
  INGOT_IR_EXPR_LOAD = 4,      /* .load */
  INGOT_IR_EXPR_UNARY = 5,     /* .unary */
  INGOT_IR_EXPR_BINARY = 6,    /* .binary */
  INGOT_IR_EXPR_SELECT = 7,    /* .select: cond ? a : b */
  INGOT_IR_EXPR_CAST = 8,      /* .unary.a converted to expr.dtype */
} ingot_ir_expr_kind_t;

/* The expression operators: one list, lower/ir_ops.def. */
typedef enum ingot_ir_unary_op_t {
  INGOT_IR_UNARY_NONE_ = 0,
#define INGOT_IR_UNARY_OP(ID, name, prefix, float_only, half) INGOT_IR_##ID,
#define INGOT_IR_BINARY_OP(ID, name, infix, half)
#include "lower/ir_ops.def"
  INGOT_IR_UNARY_COUNT_
} ingot_ir_unary_op_t;

typedef enum ingot_ir_binary_op_t {
  INGOT_IR_BINARY_NONE_ = 0,
#define INGOT_IR_UNARY_OP(ID, name, prefix, float_only, half)
#define INGOT_IR_BINARY_OP(ID, name, infix, half) INGOT_IR_##ID,
#include "lower/ir_ops.def"
  INGOT_IR_BINARY_COUNT_
} ingot_ir_binary_op_t;

struct ingot_ir_expr_t {
  ingot_ir_expr_kind_t kind;
  ingot_dtype_t dtype;         /* the result type */
  union {
    int64_t i;
    double f;
    uint32_t var;              /* index into func->vars */
    struct { uint32_t buffer; ingot_ir_expr_t* index; } load;
    struct { ingot_ir_unary_op_t op; ingot_ir_expr_t* a; } unary;
    struct { ingot_ir_binary_op_t op; ingot_ir_expr_t* a; ingot_ir_expr_t* b; } binary;
    struct { ingot_ir_expr_t* cond; ingot_ir_expr_t* a; ingot_ir_expr_t* b; } select;
  } u;
};

typedef enum ingot_ir_stmt_kind_t {
  INGOT_IR_STMT_FOR = 1,       /* .loop */
  INGOT_IR_STMT_BLOCK = 2,     /* .block: statements in order */
  INGOT_IR_STMT_STORE = 3,     /* .store: buffer[index] = value */
  INGOT_IR_STMT_IF = 4,        /* .cond: if (cond) then_body */
  INGOT_IR_STMT_LOCAL = 5,     /* .local: declare var = value; scope: the rest
                                  of the enclosing BLOCK */
  INGOT_IR_STMT_ASSIGN = 6,    /* .local: var = value (var declared before) */
  /* No payload: every thread of a GPU block waits here until all have
   * arrived, and their stores before it are seen by loads after it. Legal
   * outside every GPU_THREAD loop (ingot_ir_verify): every thread of the
   * block must reach it. The interpreter treats it as a no-op (it runs
   * GPU loops serially); CPU backends refuse it. */
  INGOT_IR_STMT_BARRIER = 7,
} ingot_ir_stmt_kind_t;

typedef enum ingot_ir_loop_kind_t {
  INGOT_IR_LOOP_SERIAL = 0,
  INGOT_IR_LOOP_PARALLEL = 1,  /* iterations independent; run on the pool */
  INGOT_IR_LOOP_VECTORIZED = 2,/* iterations independent; SIMD lanes */
  INGOT_IR_LOOP_UNROLLED = 3,  /* fully unrolled by codegen */
  /* Bound to a GPU's grid (gpu_axis: 0 x, 1 y, 2 z): the iterations are
   * spread over the blocks of the grid (GPU_BLOCK) or the threads of a block
   * (GPU_THREAD) along that axis; a GPU backend chooses the launch sizes and
   * strides when the extent is larger. Iterations are independent. Where
   * no GPU runs them (the IR interpreter) they run as a serial loop; CPU
   * backends refuse them. Rules (ingot_ir_verify): no block loop inside a
   * thread loop, each axis bound at most once per kind on a path, and no
   * bound loop inside a parallel, vectorized or unrolled one. */
  INGOT_IR_LOOP_GPU_BLOCK = 4,
  INGOT_IR_LOOP_GPU_THREAD = 5,
} ingot_ir_loop_kind_t;

struct ingot_ir_stmt_t {
  ingot_ir_stmt_kind_t kind;
  union {
    struct {
      uint32_t var;            /* a LOOP var, bound by this loop alone */
      int64_t extent;          /* > 0 */
      ingot_ir_loop_kind_t loop_kind;
      ingot_ir_stmt_t* body;
      uint32_t lanes;          /* VECTORIZED, set by codegen's prepare pass
                                  (ingot_codegen_prepare) for a backend with
                                  explicit vectors: the SIMD lanes (2..64);
                                  0: not settled / the backend's compiler
                                  picks. 0 on every other kind. */
      uint8_t gpu_axis;        /* GPU_BLOCK / GPU_THREAD: 0 x, 1 y, 2 z; 0 on
                                  every other kind */
    } loop;
    struct { ingot_ir_stmt_t** stmts; uint32_t count; } block;
    struct { uint32_t buffer; ingot_ir_expr_t* index; ingot_ir_expr_t* value; } store;
    struct { ingot_ir_expr_t* cond; ingot_ir_stmt_t* then_body; } cond;
    struct { uint32_t var; ingot_ir_expr_t* value; } local;
  } u;
};

typedef struct ingot_ir_func_t {
  ingot_arena_t arena;
  const char* name;            /* a C identifier, unique in the module */
  ingot_ir_buffer_t* buffers;  /* parameters, in call order */
  uint32_t buffer_count, buffer_cap;
  ingot_ir_var_t* vars;
  uint32_t var_count, var_cap;
  ingot_ir_stmt_t* body;
} ingot_ir_func_t;

/* The element types the IR computes in: float32, float64, the integers of
 * 8, 16, 32 and 64 bits, signed and unsigned, and bool; float16 in the ops
 * whose row in lower/ir_ops.def says HALF (add, sub, mul, div, min, max,
 * neg, abs, sqrt, comparisons). bfloat16 is storage only (loaded, stored,
 * selected and cast). */
bool ingot_ir_dtype_is_float(ingot_dtype_t t); /* F32, F64, F16, BF16 */
/* The bits of float16 nearest to v (through float32, ties to even; NaN: a
 * quiet NaN of v's sign; overflow: infinity): what a cast to float16, a
 * float16 constant and a float16 result round to in every backend. */
uint16_t ingot_ir_f16_bits(double v);
bool ingot_ir_dtype_is_int(ingot_dtype_t t);   /* I8 U8 I16 U16 I32 U32 I64 U64 */
bool ingot_ir_dtype_is_unsigned(ingot_dtype_t t); /* U8 U16 U32 U64 and BOOL */

ingot_ir_func_t* ingot_ir_func_create(const char* name);
void ingot_ir_func_destroy(ingot_ir_func_t* func);

/* Appends a parameter buffer; returns its index. */
uint32_t ingot_ir_add_buffer(ingot_ir_func_t* func, const char* name, ingot_dtype_t dtype,
                             ingot_ir_buffer_role_t role, int32_t rank, const int64_t* dims);
/* The kernel's parameters: the buffers before the first SHARED one. */
uint32_t ingot_ir_param_count(const ingot_ir_func_t* func);
/* Appends a variable; a name already taken gets a numeric suffix. */
uint32_t ingot_ir_add_var(ingot_ir_func_t* func, const char* name, ingot_ir_var_kind_t kind,
                          ingot_dtype_t dtype);
/* Looks a variable up by name; UINT32_MAX if absent. */
uint32_t ingot_ir_find_var(const ingot_ir_func_t* func, const char* name);
int64_t ingot_ir_buffer_numel(const ingot_ir_buffer_t* buffer);

/* ---- Expression constructors. They fold constants (2 + 3 -> 5, x * 1 -> x,
 * x + 0 -> x, 0 * x -> 0 for ints) so that index arithmetic stays small. */
ingot_ir_expr_t* ingot_ir_int(ingot_ir_func_t* f, int64_t value);
ingot_ir_expr_t* ingot_ir_float(ingot_ir_func_t* f, ingot_dtype_t dtype, double value);
ingot_ir_expr_t* ingot_ir_var(ingot_ir_func_t* f, uint32_t var);
ingot_ir_expr_t* ingot_ir_load(ingot_ir_func_t* f, uint32_t buffer, ingot_ir_expr_t* index);
ingot_ir_expr_t* ingot_ir_unary(ingot_ir_func_t* f, ingot_ir_unary_op_t op, ingot_ir_expr_t* a);
ingot_ir_expr_t* ingot_ir_binary(ingot_ir_func_t* f, ingot_ir_binary_op_t op,
                                 ingot_ir_expr_t* a, ingot_ir_expr_t* b);
ingot_ir_expr_t* ingot_ir_select(ingot_ir_func_t* f, ingot_ir_expr_t* cond,
                                 ingot_ir_expr_t* a, ingot_ir_expr_t* b);
ingot_ir_expr_t* ingot_ir_cast(ingot_ir_func_t* f, ingot_dtype_t dtype, ingot_ir_expr_t* a);
/* Shorthands for ingot_ir_binary. */
ingot_ir_expr_t* ingot_ir_add(ingot_ir_func_t* f, ingot_ir_expr_t* a, ingot_ir_expr_t* b);
ingot_ir_expr_t* ingot_ir_mul(ingot_ir_func_t* f, ingot_ir_expr_t* a, ingot_ir_expr_t* b);
/* sum(idx[i] * stride[i]) for the buffer's row-major dims. */
ingot_ir_expr_t* ingot_ir_flat_index(ingot_ir_func_t* f, uint32_t buffer,
                                     ingot_ir_expr_t* const* indices);

/* ---- Statement constructors. */
ingot_ir_stmt_t* ingot_ir_for(ingot_ir_func_t* f, uint32_t var, int64_t extent,
                              ingot_ir_stmt_t* body);
ingot_ir_stmt_t* ingot_ir_block(ingot_ir_func_t* f, ingot_ir_stmt_t* const* stmts, uint32_t count);
ingot_ir_stmt_t* ingot_ir_store(ingot_ir_func_t* f, uint32_t buffer, ingot_ir_expr_t* index,
                                ingot_ir_expr_t* value);
ingot_ir_stmt_t* ingot_ir_if(ingot_ir_func_t* f, ingot_ir_expr_t* cond, ingot_ir_stmt_t* then_body);
ingot_ir_stmt_t* ingot_ir_local(ingot_ir_func_t* f, uint32_t var, ingot_ir_expr_t* value);
ingot_ir_stmt_t* ingot_ir_assign(ingot_ir_func_t* f, uint32_t var, ingot_ir_expr_t* value);
ingot_ir_stmt_t* ingot_ir_barrier(ingot_ir_func_t* f);
/* A copy of `loop` with another body / kind (the loop var stays). */
ingot_ir_stmt_t* ingot_ir_for_like(ingot_ir_func_t* f, const ingot_ir_stmt_t* loop,
                                   ingot_ir_stmt_t* body);

/* ---- Rewriting helpers. */
/* Replaces every use of variable `var` by `replacement` (new nodes only where
 * something changed). */
ingot_ir_expr_t* ingot_ir_expr_substitute(ingot_ir_func_t* f, ingot_ir_expr_t* expr,
                                          uint32_t var, ingot_ir_expr_t* replacement);
ingot_ir_stmt_t* ingot_ir_stmt_substitute(ingot_ir_func_t* f, ingot_ir_stmt_t* stmt,
                                          uint32_t var, ingot_ir_expr_t* replacement);
/* Records that loop variable `var` now stands for `value` (see
 * ingot_ir_var_t.value); `value` must not lead back to `var`. */
void ingot_ir_set_var_value(ingot_ir_func_t* f, uint32_t var, ingot_ir_expr_t* value);
/* `expr` with every variable that has a value replaced by that value,
 * repeatedly, until none is left (the loop variables in use now). */
ingot_ir_expr_t* ingot_ir_expr_resolve(ingot_ir_func_t* f, ingot_ir_expr_t* expr);
/* True if `expr` reads variable `var`. */
bool ingot_ir_expr_uses_var(const ingot_ir_expr_t* expr, uint32_t var);
bool ingot_ir_stmt_uses_var(const ingot_ir_stmt_t* stmt, uint32_t var);

/* True when `expr` is provably >= 0 for every value of its variables (loop
 * counters, non-negative constants, uint8/bool casts, and sums, products,
 * floor divisions and modulos by positive constants of such terms). */
bool ingot_ir_expr_nonneg(const ingot_ir_func_t* func, const ingot_ir_expr_t* expr);

/* What a statement touches, for outlining and vectorization in codegen.
 * Flag arrays have one entry per variable / buffer of the function. */
typedef struct ingot_ir_uses_t {
  uint8_t* vars;       /* read or assigned */
  uint8_t* assigned;   /* ASSIGNed */
  uint8_t* declared;   /* bound inside the statement (LOCAL or FOR) */
  uint8_t* loaded;     /* per buffer: read */
  uint8_t* stored;     /* per buffer: written */
  INGOT_VEC(const ingot_ir_stmt_t*) stores;  /* every STORE, in order */
  INGOT_VEC(const ingot_ir_expr_t*) loads;   /* every LOAD, in order */
} ingot_ir_uses_t;

/* Fills `out` (heap; free with ingot_ir_uses_free) for statement `stmt`. */
void ingot_ir_uses_collect(const ingot_ir_func_t* func, const ingot_ir_stmt_t* stmt, ingot_ir_uses_t* out);
void ingot_ir_uses_free(ingot_ir_uses_t* uses);

/* ---- Operator facts (lower/ir_ops.def). Names are static strings; an op out
 * of range gives "?unary" / "?binary". */
const char* ingot_ir_unary_op_name(ingot_ir_unary_op_t op);
/* The printer's prefix symbol ("-", "!"), NULL for ops printed as calls. */
const char* ingot_ir_unary_op_prefix(ingot_ir_unary_op_t op);
/* True for ops whose operand must be a float (sqrt, exp, sin, ...). */
bool ingot_ir_unary_op_float_only(ingot_ir_unary_op_t op);
/* True for ops defined on float16 operands (IEEE binary16, rounded to
 * nearest even; lower/ir_ops.def says why float32 computes them exactly). */
bool ingot_ir_unary_op_half(ingot_ir_unary_op_t op);
bool ingot_ir_binary_op_half(ingot_ir_binary_op_t op);
const char* ingot_ir_binary_op_name(ingot_ir_binary_op_t op);
/* The printer's infix symbol ("+", "<=", ...), NULL for ops printed as calls. */
const char* ingot_ir_binary_op_infix(ingot_ir_binary_op_t op);

/* ---- Printing and checking. */
/* Appends the readable text form of the function to sb. */
void ingot_ir_print(const ingot_ir_func_t* func, ingot_strbuf_t* sb);
/* Checks the function: variables bound before use and bound once, loop vars
 * only in scope, extents positive, buffer indices valid, dtypes consistent
 * (index expressions int64, stored values of the buffer's dtype, conditions
 * BOOL), INPUT buffers never stored, constant indices in range. Fails with a
 * message naming the function and the offending statement. */
ingot_status_t ingot_ir_verify(const ingot_ir_func_t* func);

/* Evaluates the function on the host, for tests: args[i] points at buffer i's
 * data. Slow, exact to the IR's semantics (float math in the buffer dtype). */
ingot_status_t ingot_ir_interpret(const ingot_ir_func_t* func, void* const* args);
/* Evaluates integer expression `expr`, which reads no variable and no
 * buffer, as the interpreter would (the lowering's compile-time checks):
 * false when it reads one, is not an integer, or fails. */
bool ingot_ir_eval_closed_int(const ingot_ir_func_t* func, const ingot_ir_expr_t* expr, int64_t* out);

#endif /* INGOT_IR_H_ */
