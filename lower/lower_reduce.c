/* Reductions and their relatives: Reduce* (Sum, Mean, Max, Min, Prod, L1, L2,
 * LogSum, LogSumExp, SumSquare), ArgMax/ArgMin, TopK, CumSum/CumProd, the
 * DFT (a sum over the signal axis) and MeanVarianceNormalization.
 *
 * Reduce* (axes canonicalized by shape inference into the "axes" attribute):
 *   INIT    y[kept..] = identity (0, 1, lowest, highest)
 *   UPDATE  y[kept..] = combine(y, g(x[..]))   spatial: kept axes, reduce: the others
 *   FINISH  Mean: y / count; L2: sqrt(y); LogSum: log(y)
 * ReduceLogSumExp is one OTHER stage (max first, then log(sum(exp(x - max))) + max)
 * so that large inputs do not overflow. Reducing no axis (noop_with_empty_axes
 * with empty axes) is one PURE stage y = finish(g(x)).
 *
 * ArgMax/ArgMin, TopK, CumSum/CumProd: one OTHER stage, a spatial loop over the rows
 * of the axis (every position of the other axes), serial work along the row.
 * TopK ranks by counting: element j's rank is the number of elements that come
 * before it (larger, or equal with a lower index, for largest=1); an element
 * of rank < K is written at its rank. That gives the sorted order with ties by
 * lower index, as the spec asks; sorted=0 gets the same order. */
#include <math.h>
#include <string.h>

#include "lower_internal.h"

/* ---- shared small helpers ---- */

static bool is_float_t(ingot_dtype_t t) { return t == INGOT_DTYPE_F32 || t == INGOT_DTYPE_F64; }

/* A constant of dtype t. */
static ingot_ir_expr_t* konst(ingot_ir_func_t* f, ingot_dtype_t t, double v) {
  if (is_float_t(t)) return ingot_ir_float(f, t, v);
  if (t == INGOT_DTYPE_BOOL) return ingot_ir_binary(f, INGOT_IR_NE, ingot_ir_int(f, (int64_t)v), ingot_ir_int(f, 0));
  ingot_ir_expr_t* e = ingot_ir_int(f, (int64_t)v);
  return t == INGOT_DTYPE_I64 ? e : ingot_ir_cast(f, t, e);
}

/* The smallest (lowest=true) or largest value of dtype t. */
static ingot_ir_expr_t* extreme(ingot_ir_func_t* f, ingot_dtype_t t, bool lowest) {
  switch (t) {
    case INGOT_DTYPE_F32:
    case INGOT_DTYPE_F64: return ingot_ir_float(f, t, lowest ? -INFINITY : INFINITY);
    case INGOT_DTYPE_I64: return ingot_ir_int(f, lowest ? INT64_MIN : INT64_MAX);
    case INGOT_DTYPE_I32: return konst(f, t, lowest ? (double)INT32_MIN : (double)INT32_MAX);
    case INGOT_DTYPE_I8: return konst(f, t, lowest ? -128 : 127);
    case INGOT_DTYPE_U8: return konst(f, t, lowest ? 0 : 255);
    case INGOT_DTYPE_BOOL: return konst(f, t, lowest ? 0 : 1);
    default: return konst(f, t, 0);
  }
}

/* Checks that `value` has a dtype in the list (terminated by INVALID). */
static ingot_status_t check_dtype(const lower_ctx_t* ctx, uint32_t value, const ingot_dtype_t* allowed) {
  const ingot_value_t* v = lower_value(ctx, value);
  for (const ingot_dtype_t* a = allowed; *a != INGOT_DTYPE_INVALID; ++a) {
    if (v->dtype == *a) return INGOT_OK;
  }
  return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "dtype %s of '%s' is not supported", ingot_dtype_name(v->dtype),
                    v->name);
}

/* Rows along one axis of a shape: outer (axes before), len, inner (after). */
typedef struct rows_t {
  int64_t outer, len, inner;
} rows_t;

static rows_t rows_of(const ingot_value_t* v, int64_t axis) {
  rows_t r = {1, 1, 1};
  for (int32_t i = 0; i < v->rank; ++i) {
    if (i < axis) {
      r.outer *= v->dims[i];
    } else if (i == axis) {
      r.len = v->dims[i];
    } else {
      r.inner *= v->dims[i];
    }
  }
  return r;
}

/* Flat index of element j of row (o, in) with row length len: (o*len + j)*inner + in. */
static ingot_ir_expr_t* row_at(ingot_ir_func_t* f, ingot_ir_expr_t* o, ingot_ir_expr_t* in, int64_t len, int64_t inner,
                               ingot_ir_expr_t* j) {
  ingot_ir_expr_t* t = ingot_ir_add(f, ingot_ir_mul(f, o, ingot_ir_int(f, len)), j);
  return ingot_ir_add(f, ingot_ir_mul(f, t, ingot_ir_int(f, inner)), in);
}

static ingot_ir_stmt_t* block2(ingot_ir_func_t* f, ingot_ir_stmt_t* a, ingot_ir_stmt_t* b) {
  ingot_ir_stmt_t* s[2] = {a, b};
  return ingot_ir_block(f, s, 2);
}

/* ---- Reduce* ---- */

typedef enum reduce_kind_t {
  RK_SUM, RK_MEAN, RK_MAX, RK_MIN, RK_PROD, RK_L1, RK_L2, RK_LOGSUM, RK_LOGSUMEXP, RK_SUMSQUARE
} reduce_kind_t;

static reduce_kind_t reduce_kind(ingot_op_t op) {
  switch (op) {
    case INGOT_OP_REDUCEMEAN: return RK_MEAN;
    case INGOT_OP_REDUCEMAX: return RK_MAX;
    case INGOT_OP_REDUCEMIN: return RK_MIN;
    case INGOT_OP_REDUCEPROD: return RK_PROD;
    case INGOT_OP_REDUCEL1: return RK_L1;
    case INGOT_OP_REDUCEL2: return RK_L2;
    case INGOT_OP_REDUCELOGSUM: return RK_LOGSUM;
    case INGOT_OP_REDUCELOGSUMEXP: return RK_LOGSUMEXP;
    case INGOT_OP_REDUCESUMSQUARE: return RK_SUMSQUARE;
    default: return RK_SUM;
  }
}

/* Splits flat position p over `n` dims into per-dim indices. */
static void unflatten(ingot_ir_func_t* f, ingot_ir_expr_t* p, uint32_t n, const int64_t* dims, ingot_ir_expr_t** out) {
  int64_t stride = 1;
  for (uint32_t i = n; i-- > 0;) {
    ingot_ir_expr_t* q = stride == 1 ? p : ingot_ir_binary(f, INGOT_IR_DIV, p, ingot_ir_int(f, stride));
    out[i] = i == 0 ? q : ingot_ir_binary(f, INGOT_IR_MOD, q, ingot_ir_int(f, dims[i]));
    stride *= dims[i];
  }
}

/* A reduction of an empty input (a reduced axis of size 0): every output
 * element is the reduction's value over no elements, written by one PURE
 * stage; the input is not an argument. */
static ingot_status_t lower_reduce_empty(lower_ctx_t* ctx, reduce_kind_t kind, uint32_t x, uint32_t y) {
  ingot_status_t s;
  if ((s = lower_check_value(ctx, y, false))) return s;
  const ingot_value_t* yv = lower_value(ctx, y);
  ingot_dtype_t dt = yv->dtype;
  if (yv->dtype != lower_value(ctx, x)->dtype) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "output type differs from the input's");
  }
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  ingot_ir_expr_t* v;
  switch (kind) {
    case RK_MAX: v = extreme(f, dt, true); break;
    case RK_MIN: v = extreme(f, dt, false); break;
    case RK_PROD: v = konst(f, dt, 1); break;
    case RK_MEAN: v = konst(f, dt, NAN); break;
    case RK_LOGSUM:
    case RK_LOGSUMEXP: v = konst(f, dt, -INFINITY); break;
    default: v = konst(f, dt, 0); break;
  }
  if ((kind == RK_MEAN || kind == RK_LOGSUM || kind == RK_LOGSUMEXP) && dt != INGOT_DTYPE_F32 && dt != INGOT_DTYPE_F64) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "an empty integer input has no %s", lower_op_lower(ctx));
  }
  lower_loops_t sp;
  lower_loops_over(ctx, &sp, yv->rank, yv->dims);
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &sp, NULL, ingot_ir_store(f, by, ingot_ir_flat_index(f, by, sp.idx), v));
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE;
  ctx->workload = ingot_arena_printf(ctx->arena, "%s-empty %s y=%s", lower_op_lower(ctx), ingot_dtype_name(dt),
                                     lower_shape_str(ctx, y));
  return INGOT_OK;
}

ingot_status_t lower_reduce(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  uint32_t x = lower_input(ctx, 0);
  uint32_t y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx))) return s;
  reduce_kind_t kind = reduce_kind(node->op);
  if (x != INGOT_NO_VALUE && lower_value(ctx, x)->rank >= 0 && ingot_value_numel(lower_value(ctx, x)) == 0) {
    return lower_reduce_empty(ctx, kind, x, y);
  }
  if ((s = lower_check_value(ctx, x, false)) || (s = lower_check_value(ctx, y, false))) return s;
  static const ingot_dtype_t kFloat[] = {INGOT_DTYPE_F32, INGOT_DTYPE_F64, INGOT_DTYPE_INVALID};
  static const ingot_dtype_t kInt[] = {INGOT_DTYPE_F32, INGOT_DTYPE_F64, INGOT_DTYPE_I64, INGOT_DTYPE_I32,
                                       INGOT_DTYPE_I8,  INGOT_DTYPE_U8,  INGOT_DTYPE_INVALID};
  static const ingot_dtype_t kIntBool[] = {INGOT_DTYPE_F32, INGOT_DTYPE_F64, INGOT_DTYPE_I64,  INGOT_DTYPE_I32,
                                           INGOT_DTYPE_I8,  INGOT_DTYPE_U8,  INGOT_DTYPE_BOOL, INGOT_DTYPE_INVALID};
  bool int_ok = kind == RK_SUM || kind == RK_PROD || kind == RK_L1 || kind == RK_SUMSQUARE;
  bool bool_ok = kind == RK_MAX || kind == RK_MIN;
  if ((s = check_dtype(ctx, x, bool_ok ? kIntBool : int_ok ? kInt : kFloat))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  ingot_dtype_t dt = xv->dtype;
  if (yv->dtype != dt) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "output type differs from the input's");

  /* Axes: canonical after shape inference (see graph/infer_reduce.c). */
  /* Axes and keepdims: node.params (graph/params.c). */
  const bool* reduced = ctx->params->u.reduce.reduced;
  bool keepdims = ctx->params->u.reduce.keepdims;
  int64_t kept_dims[INGOT_MAX_RANK], red_dims[INGOT_MAX_RANK], count = 1;
  uint32_t nk = 0, nr = 0;
  for (int32_t i = 0; i < xv->rank; ++i) {
    if (reduced[i]) {
      red_dims[nr++] = xv->dims[i];
      count *= xv->dims[i];
    } else {
      kept_dims[nk++] = xv->dims[i];
    }
  }
  int32_t want_rank = keepdims ? xv->rank : (int32_t)nk;
  bool shape_ok = yv->rank == want_rank;
  for (int32_t i = 0, k = 0; shape_ok && i < xv->rank; ++i) {
    if (!reduced[i]) {
      shape_ok = yv->dims[keepdims ? i : k++] == xv->dims[i];
    } else if (keepdims) {
      shape_ok = yv->dims[i] == 1;
    }
  }
  if (!shape_ok) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "output shape %s does not fit input %s",
                      lower_shape_str(ctx, y), lower_shape_str(ctx, x));
  }

  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  static const char* const kKept[INGOT_MAX_RANK] = {"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7"};
  static const char* const kRed[INGOT_MAX_RANK] = {"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"};
  lower_loops_t sp, red;

  /* x and y indices from kept indices `ki` and reduced indices `ri`. */
#define BUILD_INDICES(ki, ri)                                      \
  ingot_ir_expr_t* xi[INGOT_MAX_RANK];                             \
  ingot_ir_expr_t* yi_parts[INGOT_MAX_RANK];                       \
  do {                                                             \
    uint32_t a_ = 0, b_ = 0;                                       \
    int32_t c_ = 0;                                                \
    for (int32_t i = 0; i < xv->rank; ++i) {                       \
      if (reduced[i]) {                                            \
        xi[i] = (ri)[b_++];                                        \
        if (keepdims) yi_parts[c_++] = ingot_ir_int(f, 0);         \
      } else {                                                     \
        xi[i] = (ki)[a_];                                          \
        yi_parts[c_++] = (ki)[a_++];                               \
      }                                                            \
    }                                                              \
  } while (0)

  if (kind == RK_LOGSUMEXP) {
    int64_t kept_total = 1;
    for (uint32_t i = 0; i < nk; ++i) kept_total *= kept_dims[i];
    uint32_t p = lower_add_var(ctx, "p", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    ingot_ir_expr_t* ki[INGOT_MAX_RANK];
    unflatten(f, ingot_ir_var(f, p), nk, kept_dims, ki);
    uint32_t mx = lower_add_var(ctx, "mx", INGOT_IR_VAR_LOCAL, dt);
    uint32_t sum = lower_add_var(ctx, "sum", INGOT_IR_VAR_LOCAL, dt);
    lower_loops_t r1, r2;
    lower_loops_make(ctx, &r1, nr, red_dims, kRed);
    lower_loops_make(ctx, &r2, nr, red_dims, kRed);
    ingot_ir_stmt_t* body1;
    ingot_ir_stmt_t* body2;
    {
      BUILD_INDICES(ki, r1.idx);
      ingot_ir_expr_t* v = ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi));
      body1 = ingot_ir_assign(f, mx, ingot_ir_binary(f, INGOT_IR_MAX, ingot_ir_var(f, mx), v));
      (void)yi_parts;
    }
    ingot_ir_expr_t* yidx;
    {
      BUILD_INDICES(ki, r2.idx);
      ingot_ir_expr_t* v = ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi));
      ingot_ir_expr_t* e = ingot_ir_unary(f, INGOT_IR_EXP, ingot_ir_binary(f, INGOT_IR_SUB, v, ingot_ir_var(f, mx)));
      body2 = ingot_ir_assign(f, sum, ingot_ir_add(f, ingot_ir_var(f, sum), e));
      yidx = ingot_ir_flat_index(f, by, yi_parts);
    }
    for (uint32_t i = nr; i-- > 0;) body1 = ingot_ir_for(f, r1.vars[i], r1.extents[i], body1);
    for (uint32_t i = nr; i-- > 0;) body2 = ingot_ir_for(f, r2.vars[i], r2.extents[i], body2);
    /* An all -inf row: keep -inf rather than nan. */
    ingot_ir_expr_t* finite = ingot_ir_binary(f, INGOT_IR_LT, extreme(f, dt, true), ingot_ir_var(f, mx));
    ingot_ir_expr_t* res = ingot_ir_add(f, ingot_ir_unary(f, INGOT_IR_LOG, ingot_ir_var(f, sum)), ingot_ir_var(f, mx));
    res = ingot_ir_select(f, finite, res, ingot_ir_var(f, mx));
    ingot_ir_stmt_t* st[5] = {
        ingot_ir_local(f, mx, extreme(f, dt, true)), body1, ingot_ir_local(f, sum, konst(f, dt, 0)), body2,
        ingot_ir_store(f, by, yidx, res),
    };
    lower_emit_other(ctx, ingot_ir_for(f, p, kept_total, ingot_ir_block(f, st, 5)));
    ctx->op_class = INGOT_OP_CLASS_ROW;
  } else if (nr == 0) {
    /* Nothing reduced (noop_with_empty_axes): y = finish(g(x)), one PURE stage. */
    lower_loops_make(ctx, &sp, nk, kept_dims, kKept);
    ingot_ir_expr_t* none[INGOT_MAX_RANK] = {NULL};
    BUILD_INDICES(sp.idx, none);
    ingot_ir_expr_t* v = ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi));
    switch (kind) {
      case RK_L1:
      case RK_L2: v = ingot_ir_unary(f, INGOT_IR_ABS, v); break;
      case RK_SUMSQUARE: v = ingot_ir_mul(f, v, v); break;
      case RK_LOGSUM: v = ingot_ir_unary(f, INGOT_IR_LOG, v); break;
      default: break;
    }
    lower_emit_stage(ctx, INGOT_STAGE_PURE, &sp, NULL, ingot_ir_store(f, by, ingot_ir_flat_index(f, by, yi_parts), v));
    ctx->op_class = INGOT_OP_CLASS_INJECTIVE;
  } else {
    /* INIT */
    lower_loops_make(ctx, &sp, nk, kept_dims, kKept);
    ingot_ir_expr_t* init;
    switch (kind) {
      case RK_MAX: init = extreme(f, dt, true); break;
      case RK_MIN: init = extreme(f, dt, false); break;
      case RK_PROD: init = konst(f, dt, 1); break;
      default: init = konst(f, dt, 0); break;
    }
    {
      ingot_ir_expr_t* dummy[INGOT_MAX_RANK] = {NULL};
      BUILD_INDICES(sp.idx, dummy);
      (void)xi;
      lower_emit_stage(ctx, INGOT_STAGE_INIT, &sp, NULL, ingot_ir_store(f, by, ingot_ir_flat_index(f, by, yi_parts), init));
    }
    /* UPDATE */
    lower_loops_make(ctx, &sp, nk, kept_dims, kKept);
    lower_loops_make(ctx, &red, nr, red_dims, kRed);
    {
      BUILD_INDICES(sp.idx, red.idx);
      ingot_ir_expr_t* v = ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi));
      ingot_ir_expr_t* yidx = ingot_ir_flat_index(f, by, yi_parts);
      ingot_ir_expr_t* acc = ingot_ir_load(f, by, yidx);
      ingot_ir_expr_t* next;
      bool is_bool = dt == INGOT_DTYPE_BOOL;
      switch (kind) {
        case RK_MAX: next = ingot_ir_binary(f, is_bool ? INGOT_IR_OR : INGOT_IR_MAX, acc, v); break;
        case RK_MIN: next = ingot_ir_binary(f, is_bool ? INGOT_IR_AND : INGOT_IR_MIN, acc, v); break;
        case RK_PROD: next = ingot_ir_mul(f, acc, v); break;
        case RK_L1: next = ingot_ir_add(f, acc, ingot_ir_unary(f, INGOT_IR_ABS, v)); break;
        case RK_L2:
        case RK_SUMSQUARE: next = ingot_ir_add(f, acc, ingot_ir_mul(f, v, v)); break;
        default: next = ingot_ir_add(f, acc, v); break;
      }
      lower_emit_stage(ctx, INGOT_STAGE_UPDATE, &sp, &red, ingot_ir_store(f, by, yidx, next));
    }
    /* FINISH */
    if (kind == RK_MEAN || kind == RK_L2 || kind == RK_LOGSUM) {
      lower_loops_make(ctx, &sp, nk, kept_dims, kKept);
      ingot_ir_expr_t* dummy[INGOT_MAX_RANK] = {NULL};
      BUILD_INDICES(sp.idx, dummy);
      (void)xi;
      ingot_ir_expr_t* yidx = ingot_ir_flat_index(f, by, yi_parts);
      ingot_ir_expr_t* acc = ingot_ir_load(f, by, yidx);
      ingot_ir_expr_t* v = kind == RK_MEAN  ? ingot_ir_binary(f, INGOT_IR_DIV, acc, konst(f, dt, (double)count))
                           : kind == RK_L2 ? ingot_ir_unary(f, INGOT_IR_SQRT, acc)
                                           : ingot_ir_unary(f, INGOT_IR_LOG, acc);
      lower_emit_stage(ctx, INGOT_STAGE_FINISH, &sp, NULL, ingot_ir_store(f, by, yidx, v));
    }
    ctx->op_class = INGOT_OP_CLASS_POOL;
  }
#undef BUILD_INDICES
  ingot_strbuf_t sb = {0};
  ingot_strbuf_appendf(&sb, "%s %s x=%s axes", lower_op_lower(ctx), ingot_dtype_name(dt), lower_shape_str(ctx, x));
  for (int32_t i = 0; i < xv->rank; ++i) {
    if (reduced[i]) ingot_strbuf_appendf(&sb, "_%d", i);
  }
  ingot_strbuf_appendf(&sb, " keep%d", keepdims);
  ctx->workload = ingot_arena_strdup(ctx->arena, sb.data);
  ingot_strbuf_free(&sb);
  return INGOT_OK;
}

/* ---- ArgMax / ArgMin ---- */

static const ingot_dtype_t kOrdered[] = {INGOT_DTYPE_F32, INGOT_DTYPE_F64, INGOT_DTYPE_I64, INGOT_DTYPE_I32,
                                         INGOT_DTYPE_I8,  INGOT_DTYPE_U8,  INGOT_DTYPE_INVALID};
/* TopK's: uint64 too (the IR's LT and EQ compare it unsigned on every target) */
static const ingot_dtype_t kTopkOrdered[] = {INGOT_DTYPE_F32, INGOT_DTYPE_F64, INGOT_DTYPE_I64, INGOT_DTYPE_I32,
                                             INGOT_DTYPE_I8,  INGOT_DTYPE_U8,  INGOT_DTYPE_U64, INGOT_DTYPE_INVALID};

ingot_status_t lower_argmax(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  bool is_max = node->op == INGOT_OP_ARGMAX;
  uint32_t x = lower_input(ctx, 0);
  uint32_t y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx))) return s;
  if ((s = lower_check_value(ctx, x, false)) || (s = lower_check_value(ctx, y, false))) return s;
  if ((s = check_dtype(ctx, x, kOrdered))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  int64_t axis = ctx->params->u.arg.axis; /* graph/params.c */
  bool last = ctx->params->u.arg.select_last_index;
  rows_t r = rows_of(xv, axis);
  if (yv->dtype != INGOT_DTYPE_I64 || ingot_value_numel(yv) != r.outer * r.inner) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "output must be int64 with %lld elements",
                      (long long)(r.outer * r.inner));
  }
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  ingot_dtype_t dt = xv->dtype;
  uint32_t row = lower_add_var(ctx, "row", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t j = lower_add_var(ctx, "j", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t best = lower_add_var(ctx, "best", INGOT_IR_VAR_LOCAL, dt);
  uint32_t bi = lower_add_var(ctx, "bi", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64);
  uint32_t v = lower_add_var(ctx, "v", INGOT_IR_VAR_LOCAL, dt);
  uint32_t take = lower_add_var(ctx, "take", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_BOOL);
  ingot_ir_expr_t* rv = ingot_ir_var(f, row);
  ingot_ir_expr_t* o = ingot_ir_binary(f, INGOT_IR_DIV, rv, ingot_ir_int(f, r.inner));
  ingot_ir_expr_t* in = ingot_ir_binary(f, INGOT_IR_MOD, rv, ingot_ir_int(f, r.inner));
  ingot_ir_expr_t* vv = ingot_ir_var(f, v);
  ingot_ir_expr_t* vb = ingot_ir_var(f, best);
  /* argmax: v > best (first) or v >= best (last); argmin mirrored. */
  ingot_ir_expr_t* cond = is_max ? ingot_ir_binary(f, last ? INGOT_IR_LE : INGOT_IR_LT, vb, vv)
                                 : ingot_ir_binary(f, last ? INGOT_IR_LE : INGOT_IR_LT, vv, vb);
  ingot_ir_stmt_t* inner[4] = {
      ingot_ir_local(f, v, ingot_ir_load(f, bx, row_at(f, o, in, r.len, r.inner, ingot_ir_var(f, j)))),
      ingot_ir_local(f, take, cond),
      ingot_ir_assign(f, best, ingot_ir_select(f, ingot_ir_var(f, take), vv, vb)),
      ingot_ir_assign(f, bi, ingot_ir_select(f, ingot_ir_var(f, take), ingot_ir_var(f, j), ingot_ir_var(f, bi))),
  };
  ingot_ir_stmt_t* body[4] = {
      ingot_ir_local(f, best, ingot_ir_load(f, bx, row_at(f, o, in, r.len, r.inner, ingot_ir_int(f, 0)))),
      ingot_ir_local(f, bi, ingot_ir_int(f, 0)),
      ingot_ir_for(f, j, r.len, ingot_ir_block(f, inner, 4)),
      ingot_ir_store(f, by, rv, ingot_ir_var(f, bi)),
  };
  lower_emit_other(ctx, ingot_ir_for(f, row, r.outer * r.inner, ingot_ir_block(f, body, 4)));
  ctx->op_class = INGOT_OP_CLASS_ROW;
  ctx->workload = ingot_arena_printf(ctx->arena, "%s %s outer%lld len%lld inner%lld last%d", lower_op_lower(ctx),
                                     ingot_dtype_name(dt), (long long)r.outer, (long long)r.len, (long long)r.inner,
                                     last);
  return INGOT_OK;
}

/* ---- TopK ---- */

ingot_status_t lower_topk(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  uint32_t x = lower_input(ctx, 0);
  uint32_t yv_id = node->output_count > 0 ? node->outputs[0] : INGOT_NO_VALUE;
  uint32_t yi_id = node->output_count > 1 ? node->outputs[1] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx))) return s;
  if ((s = lower_check_value(ctx, x, false))) return s;
  if ((s = check_dtype(ctx, x, kTopkOrdered))) return s;
  if (yv_id == INGOT_NO_VALUE && yi_id == INGOT_NO_VALUE) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "neither output is used");
  }
  if (yv_id != INGOT_NO_VALUE && (s = lower_check_value(ctx, yv_id, false))) return s;
  if (yi_id != INGOT_NO_VALUE && (s = lower_check_value(ctx, yi_id, false))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  int64_t axis = ctx->params->u.topk.axis; /* graph/params.c */
  int64_t k = ctx->params->u.topk.k;
  rows_t r = rows_of(xv, axis);
  if (k < 1 || k > r.len) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "K = %lld does not fit", (long long)k);
  bool largest = ctx->params->u.topk.largest;
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t bvals = yv_id != INGOT_NO_VALUE ? lower_add_output(ctx, yv_id, "values") : UINT32_MAX;
  uint32_t bidx = yi_id != INGOT_NO_VALUE ? lower_add_output(ctx, yi_id, "indices") : UINT32_MAX;
  ingot_ir_func_t* f = ctx->f;
  ingot_dtype_t dt = xv->dtype;
  uint32_t row = lower_add_var(ctx, "row", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t j = lower_add_var(ctx, "j", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t i = lower_add_var(ctx, "i", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t v = lower_add_var(ctx, "v", INGOT_IR_VAR_LOCAL, dt);
  uint32_t u = lower_add_var(ctx, "u", INGOT_IR_VAR_LOCAL, dt);
  uint32_t rank = lower_add_var(ctx, "rank", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64);
  ingot_ir_expr_t* rv = ingot_ir_var(f, row);
  ingot_ir_expr_t* o = ingot_ir_binary(f, INGOT_IR_DIV, rv, ingot_ir_int(f, r.inner));
  ingot_ir_expr_t* in = ingot_ir_binary(f, INGOT_IR_MOD, rv, ingot_ir_int(f, r.inner));
  ingot_ir_expr_t* ve = ingot_ir_var(f, v);
  ingot_ir_expr_t* ue = ingot_ir_var(f, u);
  ingot_ir_expr_t* ie = ingot_ir_var(f, i);
  ingot_ir_expr_t* je = ingot_ir_var(f, j);
  ingot_ir_expr_t* better = largest ? ingot_ir_binary(f, INGOT_IR_LT, ve, ue) : ingot_ir_binary(f, INGOT_IR_LT, ue, ve);
  ingot_ir_expr_t* tie = ingot_ir_binary(f, INGOT_IR_AND, ingot_ir_binary(f, INGOT_IR_EQ, ue, ve),
                                         ingot_ir_binary(f, INGOT_IR_LT, ie, je));
  ingot_ir_expr_t* before = ingot_ir_binary(f, INGOT_IR_OR, better, tie);
  ingot_ir_stmt_t* count_body = block2(
      f, ingot_ir_local(f, u, ingot_ir_load(f, bx, row_at(f, o, in, r.len, r.inner, ie))),
      ingot_ir_assign(f, rank, ingot_ir_add(f, ingot_ir_var(f, rank),
                                            ingot_ir_select(f, before, ingot_ir_int(f, 1), ingot_ir_int(f, 0)))));
  ingot_ir_expr_t* at = row_at(f, o, in, k, r.inner, ingot_ir_var(f, rank));
  ingot_ir_stmt_t* stores[2];
  uint32_t ns = 0;
  if (bvals != UINT32_MAX) stores[ns++] = ingot_ir_store(f, bvals, at, ve);
  if (bidx != UINT32_MAX) stores[ns++] = ingot_ir_store(f, bidx, at, je);
  ingot_ir_stmt_t* per_j[4] = {
      ingot_ir_local(f, v, ingot_ir_load(f, bx, row_at(f, o, in, r.len, r.inner, je))),
      ingot_ir_local(f, rank, ingot_ir_int(f, 0)),
      ingot_ir_for(f, i, r.len, count_body),
      ingot_ir_if(f, ingot_ir_binary(f, INGOT_IR_LT, ingot_ir_var(f, rank), ingot_ir_int(f, k)),
                  ingot_ir_block(f, stores, ns)),
  };
  lower_emit_other(ctx, ingot_ir_for(f, row, r.outer * r.inner, ingot_ir_for(f, j, r.len, ingot_ir_block(f, per_j, 4))));
  ctx->op_class = INGOT_OP_CLASS_ROW;
  ctx->workload = ingot_arena_printf(ctx->arena, "topk %s outer%lld len%lld inner%lld k%lld largest%d",
                                     ingot_dtype_name(dt), (long long)r.outer, (long long)r.len, (long long)r.inner,
                                     (long long)k, largest);
  return INGOT_OK;
}

/* ---- CumSum / CumProd ---- */

ingot_status_t lower_cumsum(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  uint32_t x = lower_input(ctx, 0), ax = lower_input(ctx, 1);
  uint32_t y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx))) return s;
  if ((s = lower_check_value(ctx, x, false)) || (s = lower_check_value(ctx, y, false))) return s;
  static const ingot_dtype_t kTypes[] = {INGOT_DTYPE_F32, INGOT_DTYPE_F64, INGOT_DTYPE_I64, INGOT_DTYPE_I32,
                                         INGOT_DTYPE_INVALID};
  if ((s = check_dtype(ctx, x, kTypes))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  (void)ax; /* the constant axis input, exclusive, reverse: node.params (graph/params.c) */
  int64_t axis = ctx->params->u.cum.axis;
  bool exclusive = ctx->params->u.cum.exclusive, reverse = ctx->params->u.cum.reverse;
  bool prod = node->op == INGOT_OP_CUMPROD;
  rows_t r = rows_of(xv, axis);
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  ingot_dtype_t dt = xv->dtype;
  uint32_t row = lower_add_var(ctx, "row", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t j = lower_add_var(ctx, "j", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t acc = lower_add_var(ctx, "acc", INGOT_IR_VAR_LOCAL, dt);
  ingot_ir_expr_t* rv = ingot_ir_var(f, row);
  ingot_ir_expr_t* o = ingot_ir_binary(f, INGOT_IR_DIV, rv, ingot_ir_int(f, r.inner));
  ingot_ir_expr_t* in = ingot_ir_binary(f, INGOT_IR_MOD, rv, ingot_ir_int(f, r.inner));
  ingot_ir_expr_t* jj = reverse ? ingot_ir_binary(f, INGOT_IR_SUB, ingot_ir_int(f, r.len - 1), ingot_ir_var(f, j))
                                : ingot_ir_var(f, j);
  ingot_ir_expr_t* at = row_at(f, o, in, r.len, r.inner, jj);
  ingot_ir_expr_t* sum = prod ? ingot_ir_mul(f, ingot_ir_var(f, acc), ingot_ir_load(f, bx, at))
                              : ingot_ir_add(f, ingot_ir_var(f, acc), ingot_ir_load(f, bx, at));
  ingot_ir_stmt_t* step = exclusive ? block2(f, ingot_ir_store(f, by, at, ingot_ir_var(f, acc)), ingot_ir_assign(f, acc, sum))
                                    : block2(f, ingot_ir_assign(f, acc, sum), ingot_ir_store(f, by, at, ingot_ir_var(f, acc)));
  ingot_ir_stmt_t* body = block2(f, ingot_ir_local(f, acc, konst(f, dt, prod ? 1 : 0)), ingot_ir_for(f, j, r.len, step));
  lower_emit_other(ctx, ingot_ir_for(f, row, r.outer * r.inner, body));
  ctx->op_class = INGOT_OP_CLASS_ROW;
  ctx->workload = ingot_arena_printf(ctx->arena, "%s %s outer%lld len%lld inner%lld excl%d rev%d",
                                     prod ? "cumprod" : "cumsum", ingot_dtype_name(dt), (long long)r.outer, (long long)r.len, (long long)r.inner,
                                     exclusive, reverse);
  return INGOT_OK;
}

/* ---- DFT ----
 * Naive transform, one OTHER stage over every output position (batch
 * positions x frequency/sample k), summing over the input samples n with
 * theta = 2 pi ((k n) mod N) / N:
 *   forward:   re += xr cos + xi sin;  im += xi cos - xr sin
 *   inverse:   re += xr cos - xi sin;  im += xi cos + xr sin;  then / N
 *   inverse onesided (irfft): re += w_n (xr cos - xi sin), w = 1 for bin 0
 *              and bin N/2, 2 otherwise; then / N; one output component
 * Axis and length are canonical attributes (graph/infer_reduce.c). */
ingot_status_t lower_dft(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  uint32_t x = lower_input(ctx, 0);
  uint32_t y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx))) return s;
  if ((s = lower_check_value(ctx, x, false)) || (s = lower_check_value(ctx, y, false))) return s;
  static const ingot_dtype_t kTypes[] = {INGOT_DTYPE_F32, INGOT_DTYPE_F64, INGOT_DTYPE_INVALID};
  if ((s = check_dtype(ctx, x, kTypes))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  ingot_dtype_t dt = xv->dtype;
  int64_t axis = ingot_node_attr_int(node, "axis", -1), nfft = ingot_node_attr_int(node, "dft_length", 0);
  if (axis < 0 || axis >= xv->rank - 1 || nfft < 1 || yv->rank != xv->rank) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "axis/length not canonical (shape inference has not run)");
  }
  bool inverse = ingot_node_attr_int(node, "inverse", 0) != 0, onesided = ingot_node_attr_int(node, "onesided", 0) != 0;
  bool irfft = inverse && onesided;
  int64_t outer = 1, inner = 1, len = xv->dims[axis], cin = xv->dims[xv->rank - 1];
  for (int32_t i = 0; i < xv->rank - 1; ++i) {
    if (i < axis) outer *= xv->dims[i];
    if (i > axis) inner *= xv->dims[i];
  }
  int64_t nout = yv->dims[axis], cout = yv->dims[yv->rank - 1];
  int64_t nsum = irfft ? (len < nfft / 2 + 1 ? len : nfft / 2 + 1) : (len < nfft ? len : nfft);
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  uint32_t p = lower_add_var(ctx, "p", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t nv = lower_add_var(ctx, "n", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t re = lower_add_var(ctx, "re", INGOT_IR_VAR_LOCAL, dt);
  uint32_t im = lower_add_var(ctx, "im", INGOT_IR_VAR_LOCAL, dt);
  /* angles and their sine/cosine in float64: sin(pi) in float32 is -8.7e-8,
   * which times a large input would leave visible noise where 0 belongs */
  uint32_t th = lower_add_var(ctx, "theta", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F64);
  uint32_t cv = lower_add_var(ctx, "cs", INGOT_IR_VAR_LOCAL, dt);
  uint32_t sv = lower_add_var(ctx, "sn", INGOT_IR_VAR_LOCAL, dt);
  ingot_ir_expr_t* pe = ingot_ir_var(f, p);
  ingot_ir_expr_t* in = ingot_ir_binary(f, INGOT_IR_MOD, pe, ingot_ir_int(f, inner));
  ingot_ir_expr_t* k = ingot_ir_binary(f, INGOT_IR_MOD, ingot_ir_binary(f, INGOT_IR_DIV, pe, ingot_ir_int(f, inner)), ingot_ir_int(f, nout));
  ingot_ir_expr_t* o = ingot_ir_binary(f, INGOT_IR_DIV, pe, ingot_ir_int(f, inner * nout));
  ingot_ir_expr_t* n = ingot_ir_var(f, nv);
  ingot_ir_expr_t* xbase = ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_mul(f, o, ingot_ir_int(f, len)), n), ingot_ir_int(f, inner)), in),
                                        ingot_ir_int(f, cin));
  ingot_ir_expr_t* xr = ingot_ir_load(f, bx, xbase);
  ingot_ir_expr_t* xi = cin == 2 ? ingot_ir_load(f, bx, ingot_ir_add(f, xbase, ingot_ir_int(f, 1))) : NULL;
  ingot_ir_expr_t* kn = ingot_ir_binary(f, INGOT_IR_MOD, ingot_ir_mul(f, k, n), ingot_ir_int(f, nfft));
  ingot_ir_expr_t* theta =
      ingot_ir_mul(f, ingot_ir_cast(f, INGOT_DTYPE_F64, kn), ingot_ir_float(f, INGOT_DTYPE_F64, 6.283185307179586476925 / (double)nfft));
  ingot_ir_expr_t* c = ingot_ir_var(f, cv);
  ingot_ir_expr_t* sn = ingot_ir_var(f, sv);
  ingot_ir_expr_t* dre;
  ingot_ir_expr_t* dim = NULL;
  if (!inverse) {
    dre = ingot_ir_mul(f, xr, c);
    if (xi) dre = ingot_ir_add(f, dre, ingot_ir_mul(f, xi, sn));
    dim = ingot_ir_unary(f, INGOT_IR_NEG, ingot_ir_mul(f, xr, sn));
    if (xi) dim = ingot_ir_add(f, ingot_ir_mul(f, xi, c), dim);
  } else {
    dre = ingot_ir_mul(f, xr, c);
    if (xi) dre = ingot_ir_binary(f, INGOT_IR_SUB, dre, ingot_ir_mul(f, xi, sn));
    if (!irfft) {
      dim = ingot_ir_mul(f, xr, sn);
      if (xi) dim = ingot_ir_add(f, ingot_ir_mul(f, xi, c), dim);
    } else {
      /* bins 0 and N/2 (even N) count once, the others twice (their mirror) */
      ingot_ir_expr_t* once = ingot_ir_binary(f, INGOT_IR_EQ, n, ingot_ir_int(f, 0));
      if (nfft % 2 == 0) once = ingot_ir_binary(f, INGOT_IR_OR, once, ingot_ir_binary(f, INGOT_IR_EQ, n, ingot_ir_int(f, nfft / 2)));
      dre = ingot_ir_mul(f, dre, ingot_ir_select(f, once, ingot_ir_float(f, dt, 1.0), ingot_ir_float(f, dt, 2.0)));
    }
  }
  ingot_ir_stmt_t* step[6];
  uint32_t ns = 0;
  step[ns++] = ingot_ir_local(f, th, theta);
  ingot_ir_expr_t* cos64 = ingot_ir_unary(f, INGOT_IR_COS, ingot_ir_var(f, th));
  ingot_ir_expr_t* sin64 = ingot_ir_unary(f, INGOT_IR_SIN, ingot_ir_var(f, th));
  step[ns++] = ingot_ir_local(f, cv, dt == INGOT_DTYPE_F64 ? cos64 : ingot_ir_cast(f, dt, cos64));
  step[ns++] = ingot_ir_local(f, sv, dt == INGOT_DTYPE_F64 ? sin64 : ingot_ir_cast(f, dt, sin64));
  step[ns++] = ingot_ir_assign(f, re, ingot_ir_add(f, ingot_ir_var(f, re), dre));
  if (dim) step[ns++] = ingot_ir_assign(f, im, ingot_ir_add(f, ingot_ir_var(f, im), dim));
  ingot_ir_expr_t* ybase = ingot_ir_mul(f, pe, ingot_ir_int(f, cout));
  ingot_ir_expr_t* scale = inverse ? ingot_ir_float(f, dt, 1.0 / (double)nfft) : NULL;
  ingot_ir_expr_t* rv = scale ? ingot_ir_mul(f, ingot_ir_var(f, re), scale) : ingot_ir_var(f, re);
  ingot_ir_expr_t* iv = scale ? ingot_ir_mul(f, ingot_ir_var(f, im), scale) : ingot_ir_var(f, im);
  ingot_ir_stmt_t* body[5];
  uint32_t nb = 0;
  body[nb++] = ingot_ir_local(f, re, ingot_ir_float(f, dt, 0.0));
  body[nb++] = ingot_ir_local(f, im, ingot_ir_float(f, dt, 0.0));
  body[nb++] = ingot_ir_for(f, nv, nsum, ingot_ir_block(f, step, ns));
  body[nb++] = ingot_ir_store(f, by, ybase, rv);
  if (cout == 2) body[nb++] = ingot_ir_store(f, by, ingot_ir_add(f, ybase, ingot_ir_int(f, 1)), iv);
  lower_emit_other(ctx, ingot_ir_for(f, p, outer * nout * inner, ingot_ir_block(f, body, nb)));
  ctx->op_class = INGOT_OP_CLASS_ROW;
  ctx->workload = ingot_arena_printf(ctx->arena, "dft %s x=%s axis%lld n%lld inverse%d onesided%d", ingot_dtype_name(dt),
                                     lower_shape_str(ctx, x), (long long)axis, (long long)nfft, inverse, onesided);
  return INGOT_OK;
}

/* ---- MeanVarianceNormalization ----
 * y = (x - mean) / (sqrt(mean(x^2) - mean^2) + 1e-9) over `axes` (default
 * 0, 2, 3), as the spec's function body: one OTHER stage over the positions
 * of the other axes, each with a pass for both means and a pass writing y. */
ingot_status_t lower_mvn(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  uint32_t x = lower_input(ctx, 0);
  uint32_t y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx))) return s;
  if ((s = lower_check_value(ctx, x, false)) || (s = lower_check_value(ctx, y, false))) return s;
  static const ingot_dtype_t kTypes[] = {INGOT_DTYPE_F32, INGOT_DTYPE_F64, INGOT_DTYPE_INVALID};
  if ((s = check_dtype(ctx, x, kTypes))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  ingot_dtype_t dt = xv->dtype;
  bool reduced[INGOT_MAX_RANK] = {false};
  uint32_t naxes = 0;
  const int64_t* axes = ingot_node_attr_ints(node, "axes", &naxes);
  static const int64_t kDefault[3] = {0, 2, 3};
  if (!axes) {
    axes = kDefault;
    naxes = 3;
  }
  for (uint32_t i = 0; i < naxes; ++i) {
    int64_t a = axes[i] < 0 ? axes[i] + xv->rank : axes[i];
    if (a < 0 || a >= xv->rank) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "axis %lld is out of range", (long long)axes[i]);
    reduced[a] = true;
  }
  int64_t kept_dims[INGOT_MAX_RANK], red_dims[INGOT_MAX_RANK], kept_total = 1, count = 1;
  uint32_t nk = 0, nr = 0;
  for (int32_t i = 0; i < xv->rank; ++i) {
    if (reduced[i]) {
      red_dims[nr++] = xv->dims[i];
      count *= xv->dims[i];
    } else {
      kept_dims[nk++] = xv->dims[i];
      kept_total *= xv->dims[i];
    }
  }
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  static const char* const kRed[INGOT_MAX_RANK] = {"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"};
  uint32_t p = lower_add_var(ctx, "p", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t sum = lower_add_var(ctx, "sum", INGOT_IR_VAR_LOCAL, dt);
  uint32_t sq = lower_add_var(ctx, "sq", INGOT_IR_VAR_LOCAL, dt);
  uint32_t mean = lower_add_var(ctx, "mean", INGOT_IR_VAR_LOCAL, dt);
  uint32_t den = lower_add_var(ctx, "den", INGOT_IR_VAR_LOCAL, dt);
  ingot_ir_expr_t* ki[INGOT_MAX_RANK];
  unflatten(f, ingot_ir_var(f, p), nk, kept_dims, ki);
  lower_loops_t r1, r2;
  lower_loops_make(ctx, &r1, nr, red_dims, kRed);
  lower_loops_make(ctx, &r2, nr, red_dims, kRed);
  ingot_ir_expr_t* i1[INGOT_MAX_RANK];
  ingot_ir_expr_t* i2[INGOT_MAX_RANK];
  for (int32_t i = 0, a = 0, b = 0; i < xv->rank; ++i) {
    i1[i] = reduced[i] ? r1.idx[b] : ki[a];
    i2[i] = reduced[i] ? r2.idx[b++] : ki[a++];
  }
  ingot_ir_expr_t* v1 = ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, i1));
  ingot_ir_expr_t* at2 = ingot_ir_flat_index(f, bx, i2);
  ingot_ir_stmt_t* acc[2] = {
      ingot_ir_assign(f, sum, ingot_ir_add(f, ingot_ir_var(f, sum), v1)),
      ingot_ir_assign(f, sq, ingot_ir_add(f, ingot_ir_var(f, sq), ingot_ir_mul(f, v1, v1))),
  };
  ingot_ir_stmt_t* pass1 = ingot_ir_block(f, acc, 2);
  for (uint32_t i = nr; i-- > 0;) pass1 = ingot_ir_for(f, r1.vars[i], r1.extents[i], pass1);
  ingot_ir_stmt_t* pass2 = ingot_ir_store(f, by, at2, ingot_ir_binary(f, INGOT_IR_DIV, ingot_ir_binary(f, INGOT_IR_SUB, ingot_ir_load(f, bx, at2), ingot_ir_var(f, mean)),
                                                                    ingot_ir_var(f, den)));
  for (uint32_t i = nr; i-- > 0;) pass2 = ingot_ir_for(f, r2.vars[i], r2.extents[i], pass2);
  ingot_ir_expr_t* n = ingot_ir_float(f, dt, (double)count);
  ingot_ir_expr_t* m = ingot_ir_var(f, mean);
  ingot_ir_expr_t* var = ingot_ir_binary(f, INGOT_IR_SUB, ingot_ir_binary(f, INGOT_IR_DIV, ingot_ir_var(f, sq), n), ingot_ir_mul(f, m, m));
  var = ingot_ir_binary(f, INGOT_IR_MAX, var, ingot_ir_float(f, dt, 0.0));
  ingot_ir_stmt_t* body[6] = {
      ingot_ir_local(f, sum, ingot_ir_float(f, dt, 0.0)),
      ingot_ir_local(f, sq, ingot_ir_float(f, dt, 0.0)),
      pass1,
      ingot_ir_local(f, mean, ingot_ir_binary(f, INGOT_IR_DIV, ingot_ir_var(f, sum), n)),
      ingot_ir_local(f, den, ingot_ir_add(f, ingot_ir_unary(f, INGOT_IR_SQRT, var), ingot_ir_float(f, dt, 1e-9))),
      pass2,
  };
  lower_emit_other(ctx, ingot_ir_for(f, p, kept_total, ingot_ir_block(f, body, 6)));
  ctx->op_class = INGOT_OP_CLASS_ROW;
  ingot_strbuf_t sb = {0};
  ingot_strbuf_appendf(&sb, "mvn %s x=%s axes", ingot_dtype_name(dt), lower_shape_str(ctx, x));
  for (int32_t i = 0; i < xv->rank; ++i) {
    if (reduced[i]) ingot_strbuf_appendf(&sb, "_%d", i);
  }
  ctx->workload = ingot_arena_strdup(ctx->arena, sb.data);
  ingot_strbuf_free(&sb);
  return INGOT_OK;
}
