/* The C-family printer: one walk over loop-IR expressions for the c target
 * (codegen_c.c) and the cuda/rocm targets (codegen_gpu.c), with the C names
 * and scopes of one function's variables and buffers. The statements stay
 * with each backend (their loops differ: outlined parallel bodies on the CPU,
 * blocks and threads on a GPU); what an expression means does not, so that
 * both print the same semantics and a fix lands once. A dialect table says
 * how each type, math function and helper is spelled. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen_internal.h"

ingot_status_t ingot_cprint_fail(ingot_cprint_t* p, ingot_status_t code, const char* fmt, ...) {
  char msg[1024];
  va_list args;
  va_start(args, fmt);
  vsnprintf(msg, sizeof(msg), fmt, args);
  va_end(args);
  return ingot_fail(code, "codegen %s: function '%s': %s", p->dialect->target,
                    p->f && p->f->name ? p->f->name : "?", msg);
}

#define CP_CHECK(expr)               \
  do {                               \
    ingot_status_t st_ = (expr);     \
    if (st_ != INGOT_OK) return st_; \
  } while (0)

const char* ingot_cprint_ctype(const ingot_cprint_dialect_t* d, ingot_dtype_t t) {
  return (t > INGOT_DTYPE_INVALID && t < INGOT_DTYPE_COUNT_) ? d->types[t] : NULL;
}

ingot_status_t ingot_cprint_type(ingot_cprint_t* p, ingot_dtype_t t, const char** out) {
  *out = ingot_cprint_ctype(p->dialect, t);
  if (*out) return INGOT_OK;
  if (t == INGOT_DTYPE_F16 && p->dialect->f16_note)
    return ingot_cprint_fail(p, INGOT_ERROR_UNSUPPORTED, "dtype float16 is not supported by the %s target %s",
                             p->dialect->target, p->dialect->f16_note);
  return ingot_cprint_fail(p, INGOT_ERROR_UNSUPPORTED, "dtype %s is not supported by the %s target",
                           ingot_dtype_name(t), p->dialect->target);
}

static bool cp_is_float(ingot_dtype_t t) { return t == INGOT_DTYPE_F32 || t == INGOT_DTYPE_F64; }
static bool cp_is_int(ingot_dtype_t t) { return ingot_ir_dtype_is_int(t); }
/* float16 and bfloat16: storage (their bits), converted by the dialect's
 * <int_helper>h2f / f2h / bf2f / f2bf on casts */
static bool cp_is_half(ingot_dtype_t t) { return t == INGOT_DTYPE_F16 || t == INGOT_DTYPE_BF16; }

/* ---- Names and scopes. */

static char* cp_sanitize(const char* prefix, const char* name) {
  ingot_strbuf_t sb = {0};
  ingot_strbuf_append(&sb, prefix);
  if (!name || !*name) name = "_";
  for (const char* c = name; *c; ++c) {
    bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_';
    ingot_strbuf_append_bytes(&sb, ok ? c : "_", 1);
  }
  return sb.data;
}

static bool cp_name_taken(char* const* names, uint32_t count, const char* name) {
  for (uint32_t i = 0; i < count; ++i)
    if (names[i] && strcmp(names[i], name) == 0) return true;
  return false;
}

void ingot_cprint_unique_name(char** names, uint32_t i, const char* prefix, const char* raw) {
  char* base = cp_sanitize(prefix, raw);
  char* name = ingot_xstrdup(base);
  for (uint32_t n = i; cp_name_taken(names, i, name); ++n) {
    free(name);
    ingot_strbuf_t sb = {0};
    ingot_strbuf_appendf(&sb, "%s_%u", base, n);
    name = sb.data;
  }
  free(base);
  names[i] = name;
}

void ingot_cprint_begin(ingot_cprint_t* p, const ingot_cprint_dialect_t* dialect, const ingot_ir_func_t* f,
                        uint32_t params) {
  memset(p, 0, sizeof *p);
  p->dialect = dialect;
  p->f = f;
  p->max_bytes = (size_t)1 << 30;
  p->var_names = ingot_xcalloc(f->var_count ? f->var_count : 1, sizeof(char*));
  p->buf_names = ingot_xcalloc(f->buffer_count ? f->buffer_count : 1, sizeof(char*));
  p->in_scope = ingot_xcalloc(f->var_count ? f->var_count : 1, 1);
  for (uint32_t i = 0; i < f->var_count; ++i) ingot_cprint_unique_name(p->var_names, i, "v_", f->vars[i].name);
  for (uint32_t i = 0; i < f->buffer_count; ++i)
    ingot_cprint_unique_name(p->buf_names, i, i < params ? "b_" : "s_", f->buffers[i].name);
}

void ingot_cprint_end(ingot_cprint_t* p) {
  if (!p->f) return;
  for (uint32_t i = 0; p->var_names && i < p->f->var_count; ++i) free(p->var_names[i]);
  for (uint32_t i = 0; p->buf_names && i < p->f->buffer_count; ++i) free(p->buf_names[i]);
  free(p->var_names);
  free(p->buf_names);
  free(p->in_scope);
  INGOT_VEC_FREE(p->scope);
  p->var_names = p->buf_names = NULL;
  p->in_scope = NULL;
}

void ingot_cprint_declare(ingot_cprint_t* p, uint32_t var) {
  p->in_scope[var] = 1;
  INGOT_VEC_PUSH(p->scope, var);
}

void ingot_cprint_scope_pop(ingot_cprint_t* p, size_t mark) {
  while (p->scope.count > mark) p->in_scope[p->scope.data[--p->scope.count]] = 0;
}

void ingot_cprint_indent(ingot_strbuf_t* sb, int depth) {
  for (int i = 0; i < depth; ++i) ingot_strbuf_append(sb, "  ");
}

/* ---- Constants. */

static void cp_float_literal(const ingot_cprint_dialect_t* d, ingot_strbuf_t* sb, ingot_dtype_t t, double v) {
  int w = t == INGOT_DTYPE_F32 ? 0 : 1;
  if (w == 0) v = (double)(float)v;
  if (v != v)
    ingot_strbuf_append(sb, d->nan[w]);
  else if (v == 1.0 / 0.0 || v == -1.0 / 0.0)
    ingot_strbuf_appendf(sb, "(%s%s)", v < 0 ? "-" : "", d->inf[w]);
  else
    ingot_strbuf_appendf(sb, "(%a%s)", v, w == 0 ? "f" : "");
}

static void cp_int_literal(ingot_strbuf_t* sb, int64_t v) {
  if (v == INT64_MIN) ingot_strbuf_append(sb, "(-9223372036854775807LL - 1)");
  else if (v < 0) ingot_strbuf_appendf(sb, "(%lldLL)", (long long)v);
  else ingot_strbuf_appendf(sb, "%lldLL", (long long)v);
}

/* ---- Expressions. */

static ingot_status_t cp_call1(ingot_cprint_t* p, ingot_strbuf_t* sb, const char* prefix, const char* fn,
                               const ingot_ir_expr_t* a) {
  ingot_strbuf_appendf(sb, "%s%s(", prefix, fn);
  CP_CHECK(ingot_cprint_expr(p, sb, a));
  ingot_strbuf_append(sb, ")");
  return INGOT_OK;
}

static ingot_status_t cp_call2(ingot_cprint_t* p, ingot_strbuf_t* sb, const char* prefix, const char* fn,
                               const ingot_ir_expr_t* a, const ingot_ir_expr_t* b) {
  ingot_strbuf_appendf(sb, "%s%s(", prefix, fn);
  CP_CHECK(ingot_cprint_expr(p, sb, a));
  ingot_strbuf_append(sb, ", ");
  CP_CHECK(ingot_cprint_expr(p, sb, b));
  ingot_strbuf_append(sb, ")");
  return INGOT_OK;
}

static ingot_status_t cp_infix(ingot_cprint_t* p, ingot_strbuf_t* sb, const char* op, const ingot_ir_expr_t* a,
                               const ingot_ir_expr_t* b) {
  ingot_strbuf_append(sb, "(");
  CP_CHECK(ingot_cprint_expr(p, sb, a));
  ingot_strbuf_appendf(sb, " %s ", op);
  CP_CHECK(ingot_cprint_expr(p, sb, b));
  ingot_strbuf_append(sb, ")");
  return INGOT_OK;
}

static ingot_status_t cp_unsupported_op(ingot_cprint_t* p, const char* what, ingot_dtype_t t) {
  return ingot_cprint_fail(p, INGOT_ERROR_UNSUPPORTED, "%s on %s is not supported by the %s target", what,
                           ingot_dtype_name(t), p->dialect->target);
}

/* float16 (the HALF ops of lower/ir_ops.def): through float32, which gives
 * the binary16 result exactly; neg and abs on the bits (as IEEE's negate and
 * abs, NaNs included), min and max by the dialect's helpers that return one
 * operand's bits. A dialect without float16 has no type for it and refused
 * it already. */
/* A dialect with an f16_note (the GPUs) keeps float16 as storage only: the
 * driver gives float16 arithmetic to llvm targets alone
 * (ingot_target_has_half_arith). */
static ingot_status_t cp_half_refused(ingot_cprint_t* p, const char* what) {
  return ingot_cprint_fail(p, INGOT_ERROR_UNSUPPORTED, "%s on float16 is not supported by the %s target %s", what,
                           p->dialect->target, p->dialect->f16_note);
}

static ingot_status_t cp_half_operand(ingot_cprint_t* p, ingot_strbuf_t* sb, const ingot_ir_expr_t* a) {
  return cp_call1(p, sb, p->dialect->int_helper, "h2f", a);
}

static ingot_status_t cp_half_unary(ingot_cprint_t* p, ingot_strbuf_t* sb, ingot_ir_unary_op_t op,
                                    const ingot_ir_expr_t* a) {
  const char* h = p->dialect->int_helper;
  if (p->dialect->f16_note) return cp_half_refused(p, ingot_ir_unary_op_name(op));
  switch (op) {
    case INGOT_IR_NEG:
    case INGOT_IR_ABS:
      ingot_strbuf_append(sb, op == INGOT_IR_NEG ? "((uint16_t)(" : "((uint16_t)(0x7fffu & ");
      CP_CHECK(ingot_cprint_expr(p, sb, a));
      ingot_strbuf_append(sb, op == INGOT_IR_NEG ? " ^ 0x8000u))" : "))");
      return INGOT_OK;
    case INGOT_IR_SQRT:
      if (!p->dialect->unary[op][0]) break;
      ingot_strbuf_appendf(sb, "%sf2h(%s(", h, p->dialect->unary[op][0]);
      CP_CHECK(cp_half_operand(p, sb, a));
      ingot_strbuf_append(sb, "))");
      return INGOT_OK;
    default: break;
  }
  return cp_unsupported_op(p, ingot_ir_unary_op_name(op), INGOT_DTYPE_F16);
}

static ingot_status_t cp_half_binary(ingot_cprint_t* p, ingot_strbuf_t* sb, ingot_ir_binary_op_t op,
                                     const ingot_ir_expr_t* a, const ingot_ir_expr_t* b) {
  const char* h = p->dialect->int_helper;
  const char* infix = ingot_ir_binary_op_infix(op);
  if (p->dialect->f16_note) return cp_half_refused(p, ingot_ir_binary_op_name(op));
  switch (op) {
    case INGOT_IR_MIN:
    case INGOT_IR_MAX:
      return cp_call2(p, sb, h, op == INGOT_IR_MIN ? "minh" : "maxh", a, b);
    case INGOT_IR_ADD:
    case INGOT_IR_SUB:
    case INGOT_IR_MUL:
    case INGOT_IR_DIV:
    case INGOT_IR_LT:
    case INGOT_IR_LE:
    case INGOT_IR_EQ:
    case INGOT_IR_NE: {
      bool cmp = op >= INGOT_IR_LT;
      ingot_strbuf_appendf(sb, cmp ? "(" : "%sf2h(", h);
      CP_CHECK(cp_half_operand(p, sb, a));
      ingot_strbuf_appendf(sb, " %s ", infix);
      CP_CHECK(cp_half_operand(p, sb, b));
      ingot_strbuf_append(sb, ")");
      return INGOT_OK;
    }
    default: break;
  }
  return cp_unsupported_op(p, ingot_ir_binary_op_name(op), INGOT_DTYPE_F16);
}

/* cp_unary() and cp_binary() handle every op of lower/ir_ops.def: a new row
 * there changes these counts and stops the build until it is handled here
 * and in each dialect's table. */
_Static_assert(INGOT_IR_UNARY_COUNT_ == 24, "cp_unary(): handle the new op of lower/ir_ops.def");
_Static_assert(INGOT_IR_BINARY_COUNT_ == 21, "cp_binary(): handle the new op of lower/ir_ops.def");

static ingot_status_t cp_unary(ingot_cprint_t* p, ingot_strbuf_t* sb, const ingot_ir_expr_t* e) {
  const ingot_cprint_dialect_t* d = p->dialect;
  const ingot_ir_expr_t* a = e->u.unary.a;
  ingot_dtype_t t = a->dtype;
  const char* ty;
  CP_CHECK(ingot_cprint_type(p, t, &ty));
  CP_CHECK(ingot_cprint_type(p, e->dtype, &ty));
  ingot_ir_unary_op_t op = e->u.unary.op;
  if (op <= 0 || op >= INGOT_IR_UNARY_COUNT_)
    return ingot_cprint_fail(p, INGOT_ERROR_INVALID_ARGUMENT, "unknown unary op %d", (int)op);
  const char* name = ingot_ir_unary_op_name(op);
  if (t == INGOT_DTYPE_F16 && ingot_ir_unary_op_half(op)) return cp_half_unary(p, sb, op, a);
  if (cp_is_half(t)) return cp_unsupported_op(p, name, t); /* storage only: compute in float32 */
  switch (op) {
    case INGOT_IR_NEG:
      if (t == INGOT_DTYPE_BOOL) return cp_unsupported_op(p, name, t);
      ingot_strbuf_appendf(sb, "((%s)(-", ty);
      CP_CHECK(ingot_cprint_expr(p, sb, a));
      ingot_strbuf_append(sb, "))");
      return INGOT_OK;
    case INGOT_IR_NOT:
      if (t != INGOT_DTYPE_BOOL) return cp_unsupported_op(p, name, t);
      return cp_call1(p, sb, "", "!", a);
    case INGOT_IR_BITNOT:
      if (!cp_is_int(t)) return cp_unsupported_op(p, name, t);
      ingot_strbuf_appendf(sb, "((%s)(~", ty);
      CP_CHECK(ingot_cprint_expr(p, sb, a));
      ingot_strbuf_append(sb, "))");
      return INGOT_OK;
    case INGOT_IR_ABS:
      if (!cp_is_int(t)) break;
      if (ingot_ir_dtype_is_unsigned(t)) return cp_call1(p, sb, "", "", a); /* |x| = x */
      ingot_strbuf_appendf(sb, "((%s)", ty);
      CP_CHECK(cp_call1(p, sb, d->int_helper, "abs_i64", a));
      ingot_strbuf_append(sb, ")");
      return INGOT_OK;
    case INGOT_IR_FLOOR:
    case INGOT_IR_CEIL:
    case INGOT_IR_ROUND:
      if (cp_is_int(t)) return cp_call1(p, sb, "", "", a); /* integers are whole already */
      break;
    default: break;
  }
  /* The rest: the dialect's float and double function of the op. */
  const char* fn = cp_is_float(t) ? d->unary[op][t == INGOT_DTYPE_F32 ? 0 : 1] : NULL;
  if (!fn) return cp_unsupported_op(p, name, t);
  return cp_call1(p, sb, "", fn, a);
}

static ingot_status_t cp_binary(ingot_cprint_t* p, ingot_strbuf_t* sb, const ingot_ir_expr_t* e) {
  const ingot_cprint_dialect_t* d = p->dialect;
  const ingot_ir_expr_t* a = e->u.binary.a;
  const ingot_ir_expr_t* b = e->u.binary.b;
  ingot_dtype_t t = a->dtype;
  ingot_ir_binary_op_t op = e->u.binary.op;
  if (op <= 0 || op >= INGOT_IR_BINARY_COUNT_)
    return ingot_cprint_fail(p, INGOT_ERROR_INVALID_ARGUMENT, "unknown binary op %d", (int)op);
  const char* name = ingot_ir_binary_op_name(op);
  if (b->dtype != t)
    return ingot_cprint_fail(p, INGOT_ERROR_INVALID_ARGUMENT, "%s of %s and %s: operand dtypes differ", name,
                             ingot_dtype_name(t), ingot_dtype_name(b->dtype));
  const char* ty;
  CP_CHECK(ingot_cprint_type(p, t, &ty));
  CP_CHECK(ingot_cprint_type(p, e->dtype, &ty));
  if (t == INGOT_DTYPE_F16 && ingot_ir_binary_op_half(op)) return cp_half_binary(p, sb, op, a, b);
  if (cp_is_half(t)) return cp_unsupported_op(p, name, t); /* storage only: compute in float32 */
  switch (op) {
    case INGOT_IR_LT: return cp_infix(p, sb, "<", a, b);
    case INGOT_IR_LE: return cp_infix(p, sb, "<=", a, b);
    case INGOT_IR_EQ: return cp_infix(p, sb, "==", a, b);
    case INGOT_IR_NE: return cp_infix(p, sb, "!=", a, b);
    case INGOT_IR_AND:
    case INGOT_IR_OR:
      if (t != INGOT_DTYPE_BOOL) return cp_unsupported_op(p, name, t);
      if (d->lazy_logic) return cp_infix(p, sb, op == INGOT_IR_AND ? "&&" : "||", a, b);
      ingot_strbuf_appendf(sb, "((%s)", ty);
      CP_CHECK(cp_infix(p, sb, op == INGOT_IR_AND ? "&" : "|", a, b));
      ingot_strbuf_append(sb, ")");
      return INGOT_OK;
    default: break;
  }
  if (cp_is_float(t)) {
    int w = t == INGOT_DTYPE_F32 ? 0 : 1;
    switch (op) {
      case INGOT_IR_ADD: return cp_infix(p, sb, "+", a, b);
      case INGOT_IR_SUB: return cp_infix(p, sb, "-", a, b);
      case INGOT_IR_MUL: return cp_infix(p, sb, "*", a, b);
      case INGOT_IR_DIV: return cp_infix(p, sb, "/", a, b);
      case INGOT_IR_POW:
        if (b->kind == INGOT_IR_EXPR_FLOAT && b->u.f == 1.0) return cp_call1(p, sb, "", "", a);
        if (b->kind == INGOT_IR_EXPR_FLOAT && b->u.f == 2.0) return cp_call1(p, sb, "", d->square[w], a);
        break;
      default: break;
    }
    if (!d->binary[op][w]) return cp_unsupported_op(p, name, t);
    return cp_call2(p, sb, "", d->binary[op][w], a, b);
  }
  if (!cp_is_int(t)) return cp_unsupported_op(p, name, t);
  /* Integers: arithmetic in C's promoted type (int for int8/uint8), helpers
   * in 64 bits; converted back where those differ from the expression's
   * type. Division by a positive constant of a non-negative value is C's. */
  if (t == INGOT_DTYPE_U64) {
    /* beyond the int64 helpers: unsigned C operators (a zero divisor gives 0) */
    switch (op) {
      case INGOT_IR_MIN:
      case INGOT_IR_MAX:
        ingot_strbuf_append(sb, "(");
        CP_CHECK(cp_infix(p, sb, op == INGOT_IR_MIN ? "<" : ">", a, b));
        ingot_strbuf_append(sb, " ? ");
        CP_CHECK(ingot_cprint_expr(p, sb, a));
        ingot_strbuf_append(sb, " : ");
        CP_CHECK(ingot_cprint_expr(p, sb, b));
        ingot_strbuf_append(sb, ")");
        return INGOT_OK;
      case INGOT_IR_DIV:
      case INGOT_IR_MOD:
        ingot_strbuf_append(sb, "(");
        CP_CHECK(ingot_cprint_expr(p, sb, b));
        ingot_strbuf_append(sb, " ? ");
        CP_CHECK(cp_infix(p, sb, op == INGOT_IR_DIV ? "/" : "%", a, b));
        ingot_strbuf_append(sb, " : (uint64_t)0)");
        return INGOT_OK;
      default: break;
    }
  }
  bool helper = op == INGOT_IR_MIN || op == INGOT_IR_MAX || op == INGOT_IR_POW || op == INGOT_IR_DOT4 ||
                op == INGOT_IR_DOT4S || op == INGOT_IR_DOT2 ||
                ((op == INGOT_IR_DIV || op == INGOT_IR_MOD) &&
                 !(ingot_ir_expr_nonneg(p->f, a) && b->kind == INGOT_IR_EXPR_INT && b->u.i > 0));
  /* int8/16 arithmetic happens in C's int: converted back; helpers work in int64 */
  bool narrow = ingot_dtype_size(t) < 4;
  bool convert = narrow || (helper && t != INGOT_DTYPE_I64 && t != INGOT_DTYPE_U64);
  if (convert) ingot_strbuf_appendf(sb, "((%s)", ty);
  const char* h = d->int_helper;
  switch (op) {
    case INGOT_IR_ADD: CP_CHECK(cp_infix(p, sb, "+", a, b)); break;
    case INGOT_IR_SUB: CP_CHECK(cp_infix(p, sb, "-", a, b)); break;
    case INGOT_IR_MUL: CP_CHECK(cp_infix(p, sb, "*", a, b)); break;
    case INGOT_IR_DIV:
    case INGOT_IR_MOD:
      if (!helper)
        CP_CHECK(cp_infix(p, sb, op == INGOT_IR_DIV ? "/" : "%", a, b));
      else
        CP_CHECK(cp_call2(p, sb, h, op == INGOT_IR_DIV ? "floordiv" : "floormod", a, b));
      break;
    case INGOT_IR_MIN: CP_CHECK(cp_call2(p, sb, h, "min_i64", a, b)); break;
    case INGOT_IR_MAX: CP_CHECK(cp_call2(p, sb, h, "max_i64", a, b)); break;
    case INGOT_IR_POW: CP_CHECK(cp_call2(p, sb, h, "ipow", a, b)); break;
    case INGOT_IR_BITAND: CP_CHECK(cp_infix(p, sb, "&", a, b)); break;
    case INGOT_IR_BITOR: CP_CHECK(cp_infix(p, sb, "|", a, b)); break;
    case INGOT_IR_BITXOR: CP_CHECK(cp_infix(p, sb, "^", a, b)); break;
    case INGOT_IR_DOT4:
    case INGOT_IR_DOT4S: /* the same sum; the promise only serves x86's pmaddubsw */
      if (t != INGOT_DTYPE_I32) return cp_unsupported_op(p, name, t);
      CP_CHECK(cp_call2(p, sb, h, "dot4", a, b));
      break;
    case INGOT_IR_DOT2:
      if (t != INGOT_DTYPE_I32) return cp_unsupported_op(p, name, t);
      CP_CHECK(cp_call2(p, sb, h, "dot2", a, b));
      break;
    default: return cp_unsupported_op(p, name, t);
  }
  if (convert) ingot_strbuf_append(sb, ")");
  return INGOT_OK;
}

ingot_status_t ingot_cprint_expr(ingot_cprint_t* p, ingot_strbuf_t* sb, const ingot_ir_expr_t* e) {
  const ingot_ir_func_t* f = p->f;
  if (!e) return ingot_cprint_fail(p, INGOT_ERROR_INVALID_ARGUMENT, "missing expression");
  if (sb->length > p->max_bytes)
    return ingot_cprint_fail(p, INGOT_ERROR_LIMIT, "generated source exceeds %zu bytes (shared expressions?)",
                             p->max_bytes);
  const char* ty;
  switch (e->kind) {
    case INGOT_IR_EXPR_INT:
      if (e->dtype == INGOT_DTYPE_I64) {
        cp_int_literal(sb, e->u.i);
        return INGOT_OK;
      }
      CP_CHECK(ingot_cprint_type(p, e->dtype, &ty));
      ingot_strbuf_appendf(sb, "((%s)", ty);
      cp_int_literal(sb, e->u.i);
      ingot_strbuf_append(sb, ")");
      return INGOT_OK;
    case INGOT_IR_EXPR_FLOAT:
      if (e->dtype == INGOT_DTYPE_F16) { /* its bits */
        CP_CHECK(ingot_cprint_type(p, e->dtype, &ty));
        ingot_strbuf_appendf(sb, "((%s)0x%04xu)", ty, (unsigned)ingot_ir_f16_bits(e->u.f));
        return INGOT_OK;
      }
      if (!cp_is_float(e->dtype)) return cp_unsupported_op(p, "float constant", e->dtype);
      cp_float_literal(p->dialect, sb, e->dtype, e->u.f);
      return INGOT_OK;
    case INGOT_IR_EXPR_VAR:
      if (e->u.var >= f->var_count)
        return ingot_cprint_fail(p, INGOT_ERROR_INVALID_ARGUMENT, "variable index %u out of range", e->u.var);
      if (!p->in_scope[e->u.var])
        return ingot_cprint_fail(p, INGOT_ERROR_INVALID_ARGUMENT, "variable '%s' used out of its scope",
                                 f->vars[e->u.var].name);
      ingot_strbuf_append(sb, p->var_names[e->u.var]);
      return INGOT_OK;
    case INGOT_IR_EXPR_LOAD:
      if (e->u.load.buffer >= f->buffer_count)
        return ingot_cprint_fail(p, INGOT_ERROR_INVALID_ARGUMENT, "buffer index %u out of range", e->u.load.buffer);
      if (!e->u.load.index || e->u.load.index->dtype != INGOT_DTYPE_I64)
        return ingot_cprint_fail(p, INGOT_ERROR_INVALID_ARGUMENT, "load from '%s': index is not int64",
                                 f->buffers[e->u.load.buffer].name);
      ingot_strbuf_appendf(sb, "%s[", p->buf_names[e->u.load.buffer]);
      CP_CHECK(ingot_cprint_expr(p, sb, e->u.load.index));
      ingot_strbuf_append(sb, "]");
      return INGOT_OK;
    case INGOT_IR_EXPR_UNARY:
      if (!e->u.unary.a) return ingot_cprint_fail(p, INGOT_ERROR_INVALID_ARGUMENT, "missing operand");
      return cp_unary(p, sb, e);
    case INGOT_IR_EXPR_BINARY:
      if (!e->u.binary.a || !e->u.binary.b)
        return ingot_cprint_fail(p, INGOT_ERROR_INVALID_ARGUMENT, "missing operand");
      return cp_binary(p, sb, e);
    case INGOT_IR_EXPR_SELECT:
      if (!e->u.select.cond || !e->u.select.a || !e->u.select.b)
        return ingot_cprint_fail(p, INGOT_ERROR_INVALID_ARGUMENT, "missing operand");
      CP_CHECK(ingot_cprint_type(p, e->dtype, &ty));
      ingot_strbuf_appendf(sb, "((%s)(", ty);
      CP_CHECK(ingot_cprint_expr(p, sb, e->u.select.cond));
      ingot_strbuf_append(sb, " ? ");
      CP_CHECK(ingot_cprint_expr(p, sb, e->u.select.a));
      ingot_strbuf_append(sb, " : ");
      CP_CHECK(ingot_cprint_expr(p, sb, e->u.select.b));
      ingot_strbuf_append(sb, "))");
      return INGOT_OK;
    case INGOT_IR_EXPR_CAST: {
      const ingot_ir_expr_t* a = e->u.unary.a;
      if (!a) return ingot_cprint_fail(p, INGOT_ERROR_INVALID_ARGUMENT, "missing operand");
      const char* from;
      CP_CHECK(ingot_cprint_type(p, e->dtype, &ty));
      CP_CHECK(ingot_cprint_type(p, a->dtype, &from));
      if (cp_is_half(a->dtype) || cp_is_half(e->dtype)) {
        const char* h = p->dialect->int_helper;
        if (a->dtype == e->dtype) return ingot_cprint_expr(p, sb, a);
        /* through float32 */
        if (cp_is_half(e->dtype)) ingot_strbuf_appendf(sb, "%s%s((float)", h, e->dtype == INGOT_DTYPE_F16 ? "f2h" : "f2bf");
        else ingot_strbuf_appendf(sb, "((%s)", ty);
        if (cp_is_half(a->dtype)) ingot_strbuf_appendf(sb, "%s%s(", h, a->dtype == INGOT_DTYPE_F16 ? "h2f" : "bf2f");
        else ingot_strbuf_append(sb, "(");
        CP_CHECK(ingot_cprint_expr(p, sb, a));
        ingot_strbuf_append(sb, "))");
        return INGOT_OK;
      }
      if (p->dialect->float_to_int && cp_is_float(a->dtype) && cp_is_int(e->dtype)) {
        ingot_strbuf_appendf(sb, "((%s)%s((double)", ty, p->dialect->float_to_int);
        CP_CHECK(ingot_cprint_expr(p, sb, a));
        ingot_strbuf_append(sb, "))");
        return INGOT_OK;
      }
      ingot_strbuf_appendf(sb, "((%s)", ty);
      CP_CHECK(ingot_cprint_expr(p, sb, a));
      ingot_strbuf_append(sb, ")");
      return INGOT_OK;
    }
  }
  return ingot_cprint_fail(p, INGOT_ERROR_INVALID_ARGUMENT, "unknown expression kind %d", (int)e->kind);
}
