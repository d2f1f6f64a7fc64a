/* Loop IR: the text printer, the verifier and a tree-walking interpreter. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/ir.h"

/* ------------------------------------------------------------------------ */
/* Printer                                                                   */
/* ------------------------------------------------------------------------ */

/* The operator tables, from lower/ir_ops.def (index: the enum value). */
typedef struct unary_info_t {
  const char* name;
  const char* prefix;
  bool float_only;
  bool half;
} unary_info_t;
static const unary_info_t k_unary[] = {
    {"?unary", NULL, false, false},
#define INGOT_IR_UNARY_OP(ID, name, prefix, float_only, half) {name, prefix, float_only, half},
#define INGOT_IR_BINARY_OP(ID, name, infix, half)
#include "lower/ir_ops.def"
};
_Static_assert(sizeof(k_unary) / sizeof(k_unary[0]) == INGOT_IR_UNARY_COUNT_, "unary table out of sync");

typedef struct binary_info_t {
  const char* name;
  const char* infix;
  bool half;
} binary_info_t;
static const binary_info_t k_binary[] = {
    {"?binary", NULL, false},
#define INGOT_IR_UNARY_OP(ID, name, prefix, float_only, half)
#define INGOT_IR_BINARY_OP(ID, name, infix, half) {name, infix, half},
#include "lower/ir_ops.def"
};
_Static_assert(sizeof(k_binary) / sizeof(k_binary[0]) == INGOT_IR_BINARY_COUNT_, "binary table out of sync");

static const unary_info_t* unary_info(ingot_ir_unary_op_t op) {
  return (int)op > 0 && op < INGOT_IR_UNARY_COUNT_ ? &k_unary[op] : &k_unary[0];
}
static const binary_info_t* binary_info(ingot_ir_binary_op_t op) {
  return (int)op > 0 && op < INGOT_IR_BINARY_COUNT_ ? &k_binary[op] : &k_binary[0];
}
const char* ingot_ir_unary_op_name(ingot_ir_unary_op_t op) { return unary_info(op)->name; }
const char* ingot_ir_unary_op_prefix(ingot_ir_unary_op_t op) { return unary_info(op)->prefix; }
bool ingot_ir_unary_op_float_only(ingot_ir_unary_op_t op) { return unary_info(op)->float_only; }
bool ingot_ir_unary_op_half(ingot_ir_unary_op_t op) { return unary_info(op)->half; }
bool ingot_ir_binary_op_half(ingot_ir_binary_op_t op) { return binary_info(op)->half; }
const char* ingot_ir_binary_op_name(ingot_ir_binary_op_t op) { return binary_info(op)->name; }
const char* ingot_ir_binary_op_infix(ingot_ir_binary_op_t op) { return binary_info(op)->infix; }

/* In messages: the infix symbol where there is one, else the name. */
static const char* binary_text(ingot_ir_binary_op_t op) {
  const binary_info_t* b = binary_info(op);
  return b->infix ? b->infix : b->name;
}

static const char* loop_kind_name(ingot_ir_loop_kind_t kind) {
  switch (kind) {
    case INGOT_IR_LOOP_SERIAL: return "serial";
    case INGOT_IR_LOOP_PARALLEL: return "parallel";
    case INGOT_IR_LOOP_VECTORIZED: return "vectorized";
    case INGOT_IR_LOOP_UNROLLED: return "unrolled";
    case INGOT_IR_LOOP_GPU_BLOCK: return "gpu_block";
    case INGOT_IR_LOOP_GPU_THREAD: return "gpu_thread";
  }
  return "?kind";
}

static bool loop_kind_is_gpu(ingot_ir_loop_kind_t kind) {
  return kind == INGOT_IR_LOOP_GPU_BLOCK || kind == INGOT_IR_LOOP_GPU_THREAD;
}

static const char* var_name(const ingot_ir_func_t* f, uint32_t var) {
  return var < f->var_count ? f->vars[var].name : "?var";
}

static const char* buffer_name(const ingot_ir_func_t* f, uint32_t buffer) {
  return buffer < f->buffer_count ? f->buffers[buffer].name : "?buffer";
}

static void print_float(ingot_strbuf_t* sb, ingot_dtype_t dtype, double v) {
  char text[64];
  if (isnan(v)) {
    snprintf(text, sizeof(text), "nan");
  } else if (isinf(v)) {
    snprintf(text, sizeof(text), v < 0 ? "-inf" : "inf");
  } else {
    snprintf(text, sizeof(text), "%.9g", v);
    if (!strpbrk(text, ".e")) strcat(text, ".0");
  }
  ingot_strbuf_append(sb, text);
  if (dtype == INGOT_DTYPE_F32) ingot_strbuf_append(sb, "f");
  else if (dtype == INGOT_DTYPE_F16) ingot_strbuf_append(sb, "h");
}

static void print_expr(const ingot_ir_func_t* f, const ingot_ir_expr_t* e, ingot_strbuf_t* sb,
                       bool top);

static void print_expr(const ingot_ir_func_t* f, const ingot_ir_expr_t* e, ingot_strbuf_t* sb,
                       bool top) {
  if (!e) {
    ingot_strbuf_append(sb, "<null>");
    return;
  }
  switch (e->kind) {
    case INGOT_IR_EXPR_INT:
      ingot_strbuf_appendf(sb, "%lld", (long long)e->u.i);
      if (e->dtype != INGOT_DTYPE_I64) ingot_strbuf_appendf(sb, ":%s", ingot_dtype_name(e->dtype));
      return;
    case INGOT_IR_EXPR_FLOAT:
      print_float(sb, e->dtype, e->u.f);
      return;
    case INGOT_IR_EXPR_VAR:
      ingot_strbuf_append(sb, var_name(f, e->u.var));
      return;
    case INGOT_IR_EXPR_LOAD:
      ingot_strbuf_appendf(sb, "%s[", buffer_name(f, e->u.load.buffer));
      print_expr(f, e->u.load.index, sb, true);
      ingot_strbuf_append(sb, "]");
      return;
    case INGOT_IR_EXPR_UNARY:
      if (ingot_ir_unary_op_prefix(e->u.unary.op)) {
        ingot_strbuf_append(sb, ingot_ir_unary_op_prefix(e->u.unary.op));
        print_expr(f, e->u.unary.a, sb, false);
      } else {
        ingot_strbuf_appendf(sb, "%s(", ingot_ir_unary_op_name(e->u.unary.op));
        print_expr(f, e->u.unary.a, sb, true);
        ingot_strbuf_append(sb, ")");
      }
      return;
    case INGOT_IR_EXPR_BINARY: {
      const char* sym = ingot_ir_binary_op_infix(e->u.binary.op);
      if (sym) {
        if (!top) ingot_strbuf_append(sb, "(");
        print_expr(f, e->u.binary.a, sb, false);
        ingot_strbuf_appendf(sb, " %s ", sym);
        print_expr(f, e->u.binary.b, sb, false);
        if (!top) ingot_strbuf_append(sb, ")");
      } else {
        ingot_strbuf_appendf(sb, "%s(", ingot_ir_binary_op_name(e->u.binary.op));
        print_expr(f, e->u.binary.a, sb, true);
        ingot_strbuf_append(sb, ", ");
        print_expr(f, e->u.binary.b, sb, true);
        ingot_strbuf_append(sb, ")");
      }
      return;
    }
    case INGOT_IR_EXPR_SELECT:
      ingot_strbuf_append(sb, "select(");
      print_expr(f, e->u.select.cond, sb, true);
      ingot_strbuf_append(sb, ", ");
      print_expr(f, e->u.select.a, sb, true);
      ingot_strbuf_append(sb, ", ");
      print_expr(f, e->u.select.b, sb, true);
      ingot_strbuf_append(sb, ")");
      return;
    case INGOT_IR_EXPR_CAST:
      ingot_strbuf_appendf(sb, "%s(", ingot_dtype_name(e->dtype));
      print_expr(f, e->u.unary.a, sb, true);
      ingot_strbuf_append(sb, ")");
      return;
  }
  ingot_strbuf_appendf(sb, "<expr kind %d>", (int)e->kind);
}

static void indent(ingot_strbuf_t* sb, int depth) {
  for (int i = 0; i < depth; ++i) ingot_strbuf_append(sb, "  ");
}

static void print_loop_head(const ingot_ir_func_t* f, const ingot_ir_stmt_t* s, ingot_strbuf_t* sb) {
  ingot_strbuf_appendf(sb, "for (%s, 0, %lld)", var_name(f, s->u.loop.var),
                       (long long)s->u.loop.extent);
  if (s->u.loop.loop_kind != INGOT_IR_LOOP_SERIAL)
    ingot_strbuf_appendf(sb, " %s", loop_kind_name(s->u.loop.loop_kind));
  if (loop_kind_is_gpu(s->u.loop.loop_kind)) ingot_strbuf_appendf(sb, ".%c", "xyz"[s->u.loop.gpu_axis % 3]);
  if (s->u.loop.lanes) ingot_strbuf_appendf(sb, " x%u", s->u.loop.lanes);
}

/* One statement on one line (bodies elided): for messages. */
static void print_stmt_brief(const ingot_ir_func_t* f, const ingot_ir_stmt_t* s, ingot_strbuf_t* sb) {
  if (!s) {
    ingot_strbuf_append(sb, "<null statement>");
    return;
  }
  switch (s->kind) {
    case INGOT_IR_STMT_FOR:
      print_loop_head(f, s, sb);
      ingot_strbuf_append(sb, " { ... }");
      return;
    case INGOT_IR_STMT_BLOCK:
      ingot_strbuf_appendf(sb, "{ %u statements }", s->u.block.count);
      return;
    case INGOT_IR_STMT_STORE:
      ingot_strbuf_appendf(sb, "%s[", buffer_name(f, s->u.store.buffer));
      print_expr(f, s->u.store.index, sb, true);
      ingot_strbuf_append(sb, "] = ");
      print_expr(f, s->u.store.value, sb, true);
      return;
    case INGOT_IR_STMT_IF:
      ingot_strbuf_append(sb, "if (");
      print_expr(f, s->u.cond.cond, sb, true);
      ingot_strbuf_append(sb, ") { ... }");
      return;
    case INGOT_IR_STMT_LOCAL:
    case INGOT_IR_STMT_ASSIGN:
      if (s->kind == INGOT_IR_STMT_LOCAL) {
        ingot_strbuf_appendf(sb, "local %s: %s = ", var_name(f, s->u.local.var),
                             s->u.local.var < f->var_count
                                 ? ingot_dtype_name(f->vars[s->u.local.var].dtype) : "?");
      } else {
        ingot_strbuf_appendf(sb, "%s = ", var_name(f, s->u.local.var));
      }
      print_expr(f, s->u.local.value, sb, true);
      return;
    case INGOT_IR_STMT_BARRIER:
      ingot_strbuf_append(sb, "barrier");
      return;
  }
  ingot_strbuf_appendf(sb, "<statement kind %d>", (int)s->kind);
}

static void print_stmt(const ingot_ir_func_t* f, const ingot_ir_stmt_t* s, ingot_strbuf_t* sb,
                       int depth) {
  if (!s) {
    indent(sb, depth);
    ingot_strbuf_append(sb, "<null statement>\n");
    return;
  }
  switch (s->kind) {
    case INGOT_IR_STMT_FOR:
      indent(sb, depth);
      print_loop_head(f, s, sb);
      ingot_strbuf_append(sb, " {\n");
      print_stmt(f, s->u.loop.body, sb, depth + 1);
      indent(sb, depth);
      ingot_strbuf_append(sb, "}\n");
      return;
    case INGOT_IR_STMT_BLOCK:
      for (uint32_t i = 0; i < s->u.block.count; ++i) print_stmt(f, s->u.block.stmts[i], sb, depth);
      return;
    case INGOT_IR_STMT_IF:
      indent(sb, depth);
      ingot_strbuf_append(sb, "if (");
      print_expr(f, s->u.cond.cond, sb, true);
      ingot_strbuf_append(sb, ") {\n");
      print_stmt(f, s->u.cond.then_body, sb, depth + 1);
      indent(sb, depth);
      ingot_strbuf_append(sb, "}\n");
      return;
    default:
      indent(sb, depth);
      print_stmt_brief(f, s, sb);
      ingot_strbuf_append(sb, ";\n");
      return;
  }
}

static const char* role_name(ingot_ir_buffer_role_t role) {
  switch (role) {
    case INGOT_IR_BUFFER_INPUT: return "input";
    case INGOT_IR_BUFFER_OUTPUT: return "output";
    case INGOT_IR_BUFFER_SHARED: return "shared";
  }
  return "?role";
}

void ingot_ir_print(const ingot_ir_func_t* f, ingot_strbuf_t* sb) {
  ingot_strbuf_appendf(sb, "func %s(", f->name);
  for (uint32_t i = 0; i < f->buffer_count; ++i) {
    const ingot_ir_buffer_t* b = &f->buffers[i];
    if (i) ingot_strbuf_append(sb, ", ");
    ingot_strbuf_appendf(sb, "%s: %s[", b->name, ingot_dtype_name(b->dtype));
    for (int32_t d = 0; d < b->rank && d < (int32_t)INGOT_MAX_RANK; ++d)
      ingot_strbuf_appendf(sb, "%s%lld", d ? ", " : "", (long long)b->dims[d]);
    ingot_strbuf_appendf(sb, "] %s", role_name(b->role));
  }
  ingot_strbuf_append(sb, ") {\n");
  print_stmt(f, f->body, sb, 1);
  ingot_strbuf_append(sb, "}\n");
}

/* ------------------------------------------------------------------------ */
/* Verifier                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct verify_ctx_t {
  const ingot_ir_func_t* f;
  uint8_t* bound;     /* per var: bound somewhere already */
  uint8_t* in_scope;  /* per var: visible here */
  uint32_t gpu_blocks, gpu_threads; /* axes bound by enclosing GPU loops (bit per axis) */
  bool in_cpu_kind;   /* inside a parallel, vectorized or unrolled loop */
  ingot_status_t status;
} verify_ctx_t;

static bool is_float(ingot_dtype_t t) {
  return t == INGOT_DTYPE_F32 || t == INGOT_DTYPE_F64 || t == INGOT_DTYPE_F16 || t == INGOT_DTYPE_BF16;
}

static bool is_int(ingot_dtype_t t) { return ingot_ir_dtype_is_int(t); }
static bool is_half(ingot_dtype_t t) { return t == INGOT_DTYPE_F16 || t == INGOT_DTYPE_BF16; }
/* Why the verifier refuses an op on float16 or bfloat16 (lower/ir_ops.def, HALF). */
static const char k_half_ops[] =
    "float16 computes add, sub, mul, div, min, max, neg, abs, sqrt and comparisons; bfloat16 nothing: cast to "
    "float32";

static bool is_valid_dtype(ingot_dtype_t t) {
  return is_float(t) || is_int(t) || t == INGOT_DTYPE_BOOL;
}

#define BRIEF_MAX 240

/* Records a failure naming the function and the statement. */
static void verify_fail(verify_ctx_t* c, const ingot_ir_stmt_t* s, const char* what) {
  if (c->status != INGOT_OK) return;
  ingot_strbuf_t sb = {0};
  print_stmt_brief(c->f, s, &sb);
  const char* text = sb.data ? sb.data : "";
  if (sb.length > BRIEF_MAX)
    c->status = ingot_fail(INGOT_ERROR_INTERNAL, "IR function '%s': %s, in: %.*s ...", c->f->name,
                           what, BRIEF_MAX, text);
  else
    c->status = ingot_fail(INGOT_ERROR_INTERNAL, "IR function '%s': %s, in: %s", c->f->name, what, text);
  ingot_strbuf_free(&sb);
}

static void verify_expr(verify_ctx_t* c, const ingot_ir_expr_t* e, const ingot_ir_stmt_t* s) {
  char msg[256];
  if (c->status != INGOT_OK) return;
  if (!e) {
    verify_fail(c, s, "null expression");
    return;
  }
  if (!is_valid_dtype(e->dtype)) {
    snprintf(msg, sizeof(msg), "expression of kind %d has invalid dtype %d", (int)e->kind, (int)e->dtype);
    verify_fail(c, s, msg);
    return;
  }
  switch (e->kind) {
    case INGOT_IR_EXPR_INT:
      if (is_float(e->dtype)) verify_fail(c, s, "integer constant with a float dtype");
      return;
    case INGOT_IR_EXPR_FLOAT:
      if (!is_float(e->dtype)) verify_fail(c, s, "float constant with a non-float dtype");
      return;
    case INGOT_IR_EXPR_VAR: {
      uint32_t v = e->u.var;
      if (v >= c->f->var_count) {
        snprintf(msg, sizeof(msg), "variable index %u out of range (%u variables)", v, c->f->var_count);
        verify_fail(c, s, msg);
        return;
      }
      if (!c->in_scope[v]) {
        snprintf(msg, sizeof(msg), "variable '%s' used where it is not bound", c->f->vars[v].name);
        verify_fail(c, s, msg);
        return;
      }
      if (e->dtype != c->f->vars[v].dtype) {
        snprintf(msg, sizeof(msg), "use of variable '%s' has dtype %s, the variable %s",
                 c->f->vars[v].name, ingot_dtype_name(e->dtype), ingot_dtype_name(c->f->vars[v].dtype));
        verify_fail(c, s, msg);
      }
      return;
    }
    case INGOT_IR_EXPR_LOAD: {
      uint32_t b = e->u.load.buffer;
      if (b >= c->f->buffer_count) {
        snprintf(msg, sizeof(msg), "load from buffer index %u out of range (%u buffers)", b,
                 c->f->buffer_count);
        verify_fail(c, s, msg);
        return;
      }
      verify_expr(c, e->u.load.index, s);
      if (c->status != INGOT_OK) return;
      if (e->u.load.index->dtype != INGOT_DTYPE_I64) {
        snprintf(msg, sizeof(msg), "index of load from '%s' has dtype %s, not int64", c->f->buffers[b].name,
                 ingot_dtype_name(e->u.load.index->dtype));
        verify_fail(c, s, msg);
        return;
      }
      if (e->dtype != c->f->buffers[b].dtype) {
        snprintf(msg, sizeof(msg), "load from '%s' has dtype %s, the buffer %s", c->f->buffers[b].name,
                 ingot_dtype_name(e->dtype), ingot_dtype_name(c->f->buffers[b].dtype));
        verify_fail(c, s, msg);
        return;
      }
      if (e->u.load.index->kind == INGOT_IR_EXPR_INT) {
        int64_t i = e->u.load.index->u.i, n = ingot_ir_buffer_numel(&c->f->buffers[b]);
        if (i < 0 || i >= n) {
          snprintf(msg, sizeof(msg), "constant index %lld out of range for '%s' (%lld elements)",
                   (long long)i, c->f->buffers[b].name, (long long)n);
          verify_fail(c, s, msg);
        }
      }
      return;
    }
    case INGOT_IR_EXPR_UNARY: {
      verify_expr(c, e->u.unary.a, s);
      if (c->status != INGOT_OK) return;
      ingot_dtype_t a = e->u.unary.a->dtype;
      ingot_ir_unary_op_t op = e->u.unary.op;
      if (op < INGOT_IR_NEG || op >= INGOT_IR_UNARY_COUNT_) {
        snprintf(msg, sizeof(msg), "unknown unary op %d", (int)op);
        verify_fail(c, s, msg);
      } else if (op == INGOT_IR_NOT) {
        if (a != INGOT_DTYPE_BOOL || e->dtype != INGOT_DTYPE_BOOL) verify_fail(c, s, "'!' needs a bool operand");
      } else if (op == INGOT_IR_BITNOT && (is_float(a) || a == INGOT_DTYPE_BOOL || e->dtype != a)) {
        verify_fail(c, s, "'~' needs an integer operand and yields its type");
      } else if (e->dtype != a) {
        snprintf(msg, sizeof(msg), "%s of a %s yields %s", ingot_ir_unary_op_name(op), ingot_dtype_name(a),
                 ingot_dtype_name(e->dtype));
        verify_fail(c, s, msg);
      } else if (a == INGOT_DTYPE_BOOL) {
        snprintf(msg, sizeof(msg), "%s of a bool", ingot_ir_unary_op_name(op));
        verify_fail(c, s, msg);
      } else if (is_half(a) && !(a == INGOT_DTYPE_F16 && ingot_ir_unary_op_half(op))) {
        snprintf(msg, sizeof(msg), "%s of a %s (%s)", ingot_ir_unary_op_name(op), ingot_dtype_name(a), k_half_ops);
        verify_fail(c, s, msg);
      } else if (!is_float(a) && ingot_ir_unary_op_float_only(op)) {
        snprintf(msg, sizeof(msg), "%s of an integer (%s)", ingot_ir_unary_op_name(op), ingot_dtype_name(a));
        verify_fail(c, s, msg);
      }
      return;
    }
    case INGOT_IR_EXPR_BINARY: {
      verify_expr(c, e->u.binary.a, s);
      verify_expr(c, e->u.binary.b, s);
      if (c->status != INGOT_OK) return;
      ingot_dtype_t a = e->u.binary.a->dtype, b = e->u.binary.b->dtype;
      ingot_ir_binary_op_t op = e->u.binary.op;
      const char* name = binary_text(op);
      if (op < INGOT_IR_ADD || op >= INGOT_IR_BINARY_COUNT_) {
        snprintf(msg, sizeof(msg), "unknown binary op %d", (int)op);
        verify_fail(c, s, msg);
      } else if (a != b) {
        snprintf(msg, sizeof(msg), "operands of '%s' differ in dtype (%s, %s)", name, ingot_dtype_name(a),
                 ingot_dtype_name(b));
        verify_fail(c, s, msg);
      } else if (is_half(a) && !(a == INGOT_DTYPE_F16 && ingot_ir_binary_op_half(op))) {
        snprintf(msg, sizeof(msg), "'%s' of %s operands (%s)", name, ingot_dtype_name(a), k_half_ops);
        verify_fail(c, s, msg);
      } else if (op >= INGOT_IR_LT && op <= INGOT_IR_NE) {
        if (e->dtype != INGOT_DTYPE_BOOL) {
          snprintf(msg, sizeof(msg), "comparison '%s' must yield bool", name);
          verify_fail(c, s, msg);
        }
      } else if (op == INGOT_IR_AND || op == INGOT_IR_OR) {
        if (a != INGOT_DTYPE_BOOL || e->dtype != INGOT_DTYPE_BOOL) {
          snprintf(msg, sizeof(msg), "'%s' needs bool operands", name);
          verify_fail(c, s, msg);
        }
      } else if ((op == INGOT_IR_DOT4 || op == INGOT_IR_DOT4S || op == INGOT_IR_DOT2) && (a != INGOT_DTYPE_I32 || e->dtype != INGOT_DTYPE_I32)) {
        snprintf(msg, sizeof(msg), "'%s' needs int32 operands and result, not %s", name, ingot_dtype_name(a));
        verify_fail(c, s, msg);
      } else if (op >= INGOT_IR_BITAND && op <= INGOT_IR_BITXOR && (is_float(a) || a == INGOT_DTYPE_BOOL)) {
        snprintf(msg, sizeof(msg), "'%s' needs integer operands, not %s", name, ingot_dtype_name(a));
        verify_fail(c, s, msg);
      } else if (e->dtype != a) {
        snprintf(msg, sizeof(msg), "'%s' of %s operands yields %s", name, ingot_dtype_name(a),
                 ingot_dtype_name(e->dtype));
        verify_fail(c, s, msg);
      } else if (a == INGOT_DTYPE_BOOL && op != INGOT_IR_MIN && op != INGOT_IR_MAX) {
        snprintf(msg, sizeof(msg), "arithmetic '%s' on bool operands", name);
        verify_fail(c, s, msg);
      }
      return;
    }
    case INGOT_IR_EXPR_SELECT:
      verify_expr(c, e->u.select.cond, s);
      verify_expr(c, e->u.select.a, s);
      verify_expr(c, e->u.select.b, s);
      if (c->status != INGOT_OK) return;
      if (e->u.select.cond->dtype != INGOT_DTYPE_BOOL) {
        verify_fail(c, s, "select condition is not bool");
      } else if (e->u.select.a->dtype != e->u.select.b->dtype || e->dtype != e->u.select.a->dtype) {
        snprintf(msg, sizeof(msg), "select arms differ in dtype (%s, %s -> %s)",
                 ingot_dtype_name(e->u.select.a->dtype), ingot_dtype_name(e->u.select.b->dtype),
                 ingot_dtype_name(e->dtype));
        verify_fail(c, s, msg);
      }
      return;
    case INGOT_IR_EXPR_CAST:
      verify_expr(c, e->u.unary.a, s);
      return;
  }
  snprintf(msg, sizeof(msg), "unknown expression kind %d", (int)e->kind);
  verify_fail(c, s, msg);
}

/* A LOCAL that is a whole loop or if body is scoped to that body. */
static void unscope_single_local(verify_ctx_t* c, const ingot_ir_stmt_t* body) {
  if (body && body->kind == INGOT_IR_STMT_LOCAL && body->u.local.var < c->f->var_count)
    c->in_scope[body->u.local.var] = 0;
}

static void verify_stmt(verify_ctx_t* c, const ingot_ir_stmt_t* s, int depth) {
  char msg[256];
  if (c->status != INGOT_OK) return;
  if (!s) {
    verify_fail(c, s, "null statement");
    return;
  }
  if (depth > 10000) {
    verify_fail(c, s, "statements nested too deeply");
    return;
  }
  switch (s->kind) {
    case INGOT_IR_STMT_FOR: {
      uint32_t v = s->u.loop.var;
      if (v >= c->f->var_count) {
        snprintf(msg, sizeof(msg), "loop variable index %u out of range (%u variables)", v, c->f->var_count);
        verify_fail(c, s, msg);
        return;
      }
      const ingot_ir_var_t* var = &c->f->vars[v];
      if (var->kind != INGOT_IR_VAR_LOOP || var->dtype != INGOT_DTYPE_I64) {
        snprintf(msg, sizeof(msg), "loop over '%s', which is not an int64 loop variable", var->name);
        verify_fail(c, s, msg);
        return;
      }
      if (c->bound[v]) {
        snprintf(msg, sizeof(msg), "loop variable '%s' bound twice", var->name);
        verify_fail(c, s, msg);
        return;
      }
      if (s->u.loop.extent <= 0) {
        snprintf(msg, sizeof(msg), "loop '%s' has extent %lld (must be positive)", var->name,
                 (long long)s->u.loop.extent);
        verify_fail(c, s, msg);
        return;
      }
      if ((int)s->u.loop.loop_kind < INGOT_IR_LOOP_SERIAL || s->u.loop.loop_kind > INGOT_IR_LOOP_GPU_THREAD) {
        snprintf(msg, sizeof(msg), "loop '%s' has unknown kind %d", var->name, (int)s->u.loop.loop_kind);
        verify_fail(c, s, msg);
        return;
      }
      ingot_ir_loop_kind_t kind = s->u.loop.loop_kind;
      bool gpu = loop_kind_is_gpu(kind);
      if (gpu ? s->u.loop.gpu_axis > 2 : s->u.loop.gpu_axis != 0) {
        snprintf(msg, sizeof(msg), "loop '%s' has GPU axis %u (only a GPU-bound loop, 0 to 2)", var->name,
                 s->u.loop.gpu_axis);
        verify_fail(c, s, msg);
        return;
      }
      const char* gpu_why = NULL;
      uint32_t axis_bit = 1u << s->u.loop.gpu_axis;
      if (gpu && c->in_cpu_kind)
        gpu_why = "is inside a parallel, vectorized or unrolled loop";
      else if (kind == INGOT_IR_LOOP_GPU_BLOCK && c->gpu_threads)
        gpu_why = "binds blocks inside a loop bound to threads";
      else if (kind == INGOT_IR_LOOP_GPU_BLOCK && (c->gpu_blocks & axis_bit))
        gpu_why = "binds a block axis that an enclosing loop binds already";
      else if (kind == INGOT_IR_LOOP_GPU_THREAD && (c->gpu_threads & axis_bit))
        gpu_why = "binds a thread axis that an enclosing loop binds already";
      if (gpu_why) {
        snprintf(msg, sizeof(msg), "loop '%s' (%s.%c) %s", var->name, loop_kind_name(kind),
                 "xyz"[s->u.loop.gpu_axis], gpu_why);
        verify_fail(c, s, msg);
        return;
      }
      if (s->u.loop.lanes &&
          (s->u.loop.loop_kind != INGOT_IR_LOOP_VECTORIZED || s->u.loop.lanes < 2 || s->u.loop.lanes > 64)) {
        snprintf(msg, sizeof(msg), "loop '%s' has %u lanes (only a vectorized loop, 2 to 64)", var->name,
                 s->u.loop.lanes);
        verify_fail(c, s, msg);
        return;
      }
      c->bound[v] = 1;
      c->in_scope[v] = 1;
      uint32_t saved_blocks = c->gpu_blocks, saved_threads = c->gpu_threads;
      bool saved_cpu = c->in_cpu_kind;
      if (kind == INGOT_IR_LOOP_GPU_BLOCK) c->gpu_blocks |= axis_bit;
      if (kind == INGOT_IR_LOOP_GPU_THREAD) c->gpu_threads |= axis_bit;
      if (kind == INGOT_IR_LOOP_PARALLEL || kind == INGOT_IR_LOOP_VECTORIZED || kind == INGOT_IR_LOOP_UNROLLED)
        c->in_cpu_kind = true;
      verify_stmt(c, s->u.loop.body, depth + 1);
      c->gpu_blocks = saved_blocks;
      c->gpu_threads = saved_threads;
      c->in_cpu_kind = saved_cpu;
      unscope_single_local(c, s->u.loop.body);
      c->in_scope[v] = 0;
      return;
    }
    case INGOT_IR_STMT_BLOCK: {
      if (s->u.block.count && !s->u.block.stmts) {
        verify_fail(c, s, "block without statements array");
        return;
      }
      for (uint32_t i = 0; i < s->u.block.count && c->status == INGOT_OK; ++i)
        verify_stmt(c, s->u.block.stmts[i], depth + 1);
      /* Locals declared directly in this block go out of scope here. */
      for (uint32_t i = 0; i < s->u.block.count; ++i) {
        const ingot_ir_stmt_t* x = s->u.block.stmts[i];
        if (x && x->kind == INGOT_IR_STMT_LOCAL && x->u.local.var < c->f->var_count)
          c->in_scope[x->u.local.var] = 0;
      }
      return;
    }
    case INGOT_IR_STMT_STORE: {
      uint32_t b = s->u.store.buffer;
      if (b >= c->f->buffer_count) {
        snprintf(msg, sizeof(msg), "store to buffer index %u out of range (%u buffers)", b, c->f->buffer_count);
        verify_fail(c, s, msg);
        return;
      }
      const ingot_ir_buffer_t* buf = &c->f->buffers[b];
      if (buf->role == INGOT_IR_BUFFER_INPUT) {
        snprintf(msg, sizeof(msg), "store to '%s', which is an input buffer", buf->name);
        verify_fail(c, s, msg);
        return;
      }
      verify_expr(c, s->u.store.index, s);
      verify_expr(c, s->u.store.value, s);
      if (c->status != INGOT_OK) return;
      if (s->u.store.index->dtype != INGOT_DTYPE_I64) {
        snprintf(msg, sizeof(msg), "index of store to '%s' has dtype %s, not int64", buf->name,
                 ingot_dtype_name(s->u.store.index->dtype));
        verify_fail(c, s, msg);
        return;
      }
      if (s->u.store.value->dtype != buf->dtype) {
        snprintf(msg, sizeof(msg), "store of a %s value to '%s' (%s)", ingot_dtype_name(s->u.store.value->dtype),
                 buf->name, ingot_dtype_name(buf->dtype));
        verify_fail(c, s, msg);
        return;
      }
      if (s->u.store.index->kind == INGOT_IR_EXPR_INT) {
        int64_t i = s->u.store.index->u.i, n = ingot_ir_buffer_numel(buf);
        if (i < 0 || i >= n) {
          snprintf(msg, sizeof(msg), "constant index %lld out of range for '%s' (%lld elements)", (long long)i,
                   buf->name, (long long)n);
          verify_fail(c, s, msg);
        }
      }
      return;
    }
    case INGOT_IR_STMT_IF:
      verify_expr(c, s->u.cond.cond, s);
      if (c->status != INGOT_OK) return;
      if (s->u.cond.cond->dtype != INGOT_DTYPE_BOOL) {
        verify_fail(c, s, "if condition is not bool");
        return;
      }
      verify_stmt(c, s->u.cond.then_body, depth + 1);
      unscope_single_local(c, s->u.cond.then_body);
      return;
    case INGOT_IR_STMT_LOCAL:
    case INGOT_IR_STMT_ASSIGN: {
      uint32_t v = s->u.local.var;
      if (v >= c->f->var_count) {
        snprintf(msg, sizeof(msg), "local variable index %u out of range (%u variables)", v, c->f->var_count);
        verify_fail(c, s, msg);
        return;
      }
      const ingot_ir_var_t* var = &c->f->vars[v];
      if (var->kind != INGOT_IR_VAR_LOCAL) {
        snprintf(msg, sizeof(msg), "'%s' is a loop variable, not a local", var->name);
        verify_fail(c, s, msg);
        return;
      }
      verify_expr(c, s->u.local.value, s);
      if (c->status != INGOT_OK) return;
      if (s->u.local.value->dtype != var->dtype) {
        snprintf(msg, sizeof(msg), "a %s value given to local '%s' (%s)", ingot_dtype_name(s->u.local.value->dtype),
                 var->name, ingot_dtype_name(var->dtype));
        verify_fail(c, s, msg);
        return;
      }
      if (s->kind == INGOT_IR_STMT_LOCAL) {
        if (c->bound[v]) {
          snprintf(msg, sizeof(msg), "local '%s' declared twice", var->name);
          verify_fail(c, s, msg);
          return;
        }
        c->bound[v] = 1;
        c->in_scope[v] = 1;
      } else if (!c->in_scope[v]) {
        snprintf(msg, sizeof(msg), "assignment to local '%s' outside its scope", var->name);
        verify_fail(c, s, msg);
      }
      return;
    }
    case INGOT_IR_STMT_BARRIER:
      if (c->gpu_threads) verify_fail(c, s, "barrier inside a GPU thread loop (every thread of the block must reach it)");
      return;
  }
  snprintf(msg, sizeof(msg), "unknown statement kind %d", (int)s->kind);
  verify_fail(c, s, msg);
}

ingot_status_t ingot_ir_verify(const ingot_ir_func_t* f) {
  if (!f) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_ir_verify: no function");
  for (uint32_t i = 0; i < f->buffer_count; ++i) {
    const ingot_ir_buffer_t* b = &f->buffers[i];
    if (!is_valid_dtype(b->dtype))
      return ingot_fail(INGOT_ERROR_INTERNAL, "IR function '%s': buffer '%s' has invalid dtype %d", f->name,
                        b->name, (int)b->dtype);
    if (b->role != INGOT_IR_BUFFER_INPUT && b->role != INGOT_IR_BUFFER_OUTPUT && b->role != INGOT_IR_BUFFER_SHARED)
      return ingot_fail(INGOT_ERROR_INTERNAL, "IR function '%s': buffer '%s' has invalid role %d", f->name,
                        b->name, (int)b->role);
    if (i > 0 && b->role != INGOT_IR_BUFFER_SHARED && f->buffers[i - 1].role == INGOT_IR_BUFFER_SHARED)
      return ingot_fail(INGOT_ERROR_INTERNAL, "IR function '%s': parameter buffer '%s' after a shared one",
                        f->name, b->name);
    if (b->rank < 0 || b->rank > (int32_t)INGOT_MAX_RANK)
      return ingot_fail(INGOT_ERROR_INTERNAL, "IR function '%s': buffer '%s' has rank %d", f->name, b->name,
                        (int)b->rank);
    for (int32_t d = 0; d < b->rank; ++d)
      if (b->dims[d] < 0)
        return ingot_fail(INGOT_ERROR_INTERNAL, "IR function '%s': buffer '%s' has negative dim %lld", f->name,
                          b->name, (long long)b->dims[d]);
  }
  for (uint32_t i = 0; i < f->var_count; ++i) {
    const ingot_ir_var_t* v = &f->vars[i];
    if (v->kind == INGOT_IR_VAR_LOOP ? v->dtype != INGOT_DTYPE_I64
                                     : (v->kind != INGOT_IR_VAR_LOCAL || !is_valid_dtype(v->dtype)))
      return ingot_fail(INGOT_ERROR_INTERNAL, "IR function '%s': variable '%s' has kind %d and dtype %s",
                        f->name, v->name, (int)v->kind, ingot_dtype_name(v->dtype));
  }
  verify_ctx_t c = {f, ingot_xcalloc(f->var_count + 1, 1), ingot_xcalloc(f->var_count + 1, 1), INGOT_OK};
  verify_stmt(&c, f->body, 0);
  free(c.bound);
  free(c.in_scope);
  return c.status;
}

/* ------------------------------------------------------------------------ */
/* Interpreter                                                               */
/* ------------------------------------------------------------------------ */

/* A value: ints (and bools) in .i, floats in .f, by the expression's dtype. */
typedef struct value_t {
  int64_t i;
  double f;
} value_t;

typedef struct interp_ctx_t {
  const ingot_ir_func_t* f;
  void* const* args;
  int64_t* numel;
  value_t* vars;
  const ingot_ir_stmt_t* stmt;  /* being executed, for messages */
  ingot_status_t status;
} interp_ctx_t;

static void interp_fail(interp_ctx_t* c, const char* what) {
  if (c->status != INGOT_OK) return;
  ingot_strbuf_t sb = {0};
  print_stmt_brief(c->f, c->stmt, &sb);
  const char* text = sb.data ? sb.data : "";
  c->status = ingot_fail(INGOT_ERROR_INTERNAL, "IR function '%s' (interpreter): %s, in: %.*s%s", c->f->name,
                         what, BRIEF_MAX, text, sb.length > BRIEF_MAX ? " ..." : "");
  ingot_strbuf_free(&sb);
}

static uint16_t double_to_bf16(double v) {
  float f = (float)v;
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* Rounds a float result to its dtype's precision. */
static double round_float(ingot_dtype_t t, double v) {
  if (t == INGOT_DTYPE_F32) return (double)(float)v;
  if (t == INGOT_DTYPE_F16) return ingot_half_to_double(ingot_ir_f16_bits(v));
  if (t == INGOT_DTYPE_BF16) return ingot_bf16_to_double(double_to_bf16(v));
  return v;
}

/* Wraps an integer result to its dtype. */
static int64_t wrap_int(ingot_dtype_t t, int64_t v) {
  switch (t) {
    case INGOT_DTYPE_I32: return (int64_t)(int32_t)(uint32_t)(uint64_t)v;
    case INGOT_DTYPE_I8: return (int64_t)(int8_t)(uint8_t)(uint64_t)v;
    case INGOT_DTYPE_U8: return (int64_t)(uint8_t)(uint64_t)v;
    case INGOT_DTYPE_I16: return (int64_t)(int16_t)(uint16_t)(uint64_t)v;
    case INGOT_DTYPE_U16: return (int64_t)(uint16_t)(uint64_t)v;
    case INGOT_DTYPE_U32: return (int64_t)(uint32_t)(uint64_t)v;
    case INGOT_DTYPE_BOOL: return v != 0;
    default: return v;
  }
}

static int64_t float_to_int(double v) {
  if (isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return INT64_MAX;
  if (v <= -9.2233720368547758e18) return INT64_MIN;
  return (int64_t)v;
}

static value_t convert(ingot_dtype_t from, ingot_dtype_t to, value_t v) {
  value_t r = {0, 0.0};
  if (is_float(to)) {
    double x = is_float(from) ? v.f : from == INGOT_DTYPE_U64 ? (double)(uint64_t)v.i : (double)v.i;
    r.f = round_float(to, x);
  } else if (to == INGOT_DTYPE_BOOL) {
    r.i = is_float(from) ? (v.f != 0.0) : (v.i != 0);
  } else if (to == INGOT_DTYPE_U64 && is_float(from) && v.f >= 9.2233720368547758e18) {
    r.i = v.f >= 1.8446744073709552e19 ? -1 : (int64_t)(uint64_t)v.f; /* the bits of the uint64 */
  } else {
    r.i = wrap_int(to, is_float(from) ? float_to_int(v.f) : v.i);
  }
  return r;
}

static value_t load_elem(ingot_dtype_t t, const void* base, int64_t i) {
  value_t r = {0, 0.0};
  switch (t) {
    case INGOT_DTYPE_F32: r.f = ((const float*)base)[i]; break;
    case INGOT_DTYPE_F64: r.f = ((const double*)base)[i]; break;
    case INGOT_DTYPE_F16: r.f = ingot_half_to_double(((const uint16_t*)base)[i]); break;
    case INGOT_DTYPE_BF16: r.f = ingot_bf16_to_double(((const uint16_t*)base)[i]); break;
    case INGOT_DTYPE_I64: r.i = ((const int64_t*)base)[i]; break;
    case INGOT_DTYPE_I32: r.i = ((const int32_t*)base)[i]; break;
    case INGOT_DTYPE_I8: r.i = ((const int8_t*)base)[i]; break;
    case INGOT_DTYPE_U8: r.i = ((const uint8_t*)base)[i]; break;
    case INGOT_DTYPE_I16: r.i = ((const int16_t*)base)[i]; break;
    case INGOT_DTYPE_U16: r.i = ((const uint16_t*)base)[i]; break;
    case INGOT_DTYPE_U32: r.i = ((const uint32_t*)base)[i]; break;
    case INGOT_DTYPE_U64: r.i = (int64_t)((const uint64_t*)base)[i]; break; /* the bits; see U64 in eval */
    case INGOT_DTYPE_BOOL: r.i = ((const uint8_t*)base)[i] != 0; break;
    default: break;
  }
  return r;
}

static void store_elem(ingot_dtype_t t, void* base, int64_t i, value_t v) {
  switch (t) {
    case INGOT_DTYPE_F32: ((float*)base)[i] = (float)v.f; break;
    case INGOT_DTYPE_F64: ((double*)base)[i] = v.f; break;
    case INGOT_DTYPE_F16: ((uint16_t*)base)[i] = ingot_ir_f16_bits(v.f); break;
    case INGOT_DTYPE_BF16: ((uint16_t*)base)[i] = double_to_bf16(v.f); break;
    case INGOT_DTYPE_I64: ((int64_t*)base)[i] = v.i; break;
    case INGOT_DTYPE_I32: ((int32_t*)base)[i] = (int32_t)v.i; break;
    case INGOT_DTYPE_I8: ((int8_t*)base)[i] = (int8_t)v.i; break;
    case INGOT_DTYPE_U8: ((uint8_t*)base)[i] = (uint8_t)v.i; break;
    case INGOT_DTYPE_I16: ((int16_t*)base)[i] = (int16_t)v.i; break;
    case INGOT_DTYPE_U16: ((uint16_t*)base)[i] = (uint16_t)v.i; break;
    case INGOT_DTYPE_U32: ((uint32_t*)base)[i] = (uint32_t)v.i; break;
    case INGOT_DTYPE_U64: ((uint64_t*)base)[i] = (uint64_t)v.i; break;
    case INGOT_DTYPE_BOOL: ((uint8_t*)base)[i] = v.i != 0; break;
    default: break;
  }
}

static int64_t ipow(int64_t base, int64_t exp) {
  if (exp < 0) return base == 1 ? 1 : (base == -1 ? ((exp & 1) ? -1 : 1) : 0);
  uint64_t r = 1, b = (uint64_t)base;
  while (exp) {
    if (exp & 1) r *= b;
    b *= b;
    exp >>= 1;
  }
  return (int64_t)r;
}

static int64_t floor_div_i(int64_t a, int64_t b) {
  if (b == -1) return (int64_t)(0 - (uint64_t)a);
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

static double unary_float(ingot_ir_unary_op_t op, ingot_dtype_t t, double a) {
  bool f32 = t != INGOT_DTYPE_F64;
  switch (op) {
    case INGOT_IR_NEG: return -a;
    case INGOT_IR_ABS: return fabs(a);
    case INGOT_IR_SQRT: return f32 ? sqrtf((float)a) : sqrt(a);
    case INGOT_IR_EXP: return f32 ? expf((float)a) : exp(a);
    case INGOT_IR_LOG: return f32 ? logf((float)a) : log(a);
    case INGOT_IR_TANH: return f32 ? tanhf((float)a) : tanh(a);
    case INGOT_IR_ERF: return f32 ? erff((float)a) : erf(a);
    case INGOT_IR_FLOOR: return floor(a);
    case INGOT_IR_CEIL: return ceil(a);
    case INGOT_IR_ROUND: return nearbyint(a); /* the default mode: ties to even */
    case INGOT_IR_SIN: return f32 ? sinf((float)a) : sin(a);
    case INGOT_IR_COS: return f32 ? cosf((float)a) : cos(a);
    case INGOT_IR_TAN: return f32 ? tanf((float)a) : tan(a);
    case INGOT_IR_ASIN: return f32 ? asinf((float)a) : asin(a);
    case INGOT_IR_ACOS: return f32 ? acosf((float)a) : acos(a);
    case INGOT_IR_ATAN: return f32 ? atanf((float)a) : atan(a);
    case INGOT_IR_SINH: return f32 ? sinhf((float)a) : sinh(a);
    case INGOT_IR_COSH: return f32 ? coshf((float)a) : cosh(a);
    case INGOT_IR_ASINH: return f32 ? asinhf((float)a) : asinh(a);
    case INGOT_IR_ACOSH: return f32 ? acoshf((float)a) : acosh(a);
    case INGOT_IR_ATANH: return f32 ? atanhf((float)a) : atanh(a);
    default: return a;
  }
}

static value_t eval(interp_ctx_t* c, const ingot_ir_expr_t* e) {
  value_t r = {0, 0.0};
  if (c->status != INGOT_OK) return r;
  switch (e->kind) {
    case INGOT_IR_EXPR_INT:
      r.i = wrap_int(e->dtype, e->u.i);
      return r;
    case INGOT_IR_EXPR_FLOAT:
      r.f = round_float(e->dtype, e->u.f);
      return r;
    case INGOT_IR_EXPR_VAR:
      return c->vars[e->u.var];
    case INGOT_IR_EXPR_LOAD: {
      uint32_t b = e->u.load.buffer;
      value_t idx = eval(c, e->u.load.index);
      if (c->status != INGOT_OK) return r;
      if (idx.i < 0 || idx.i >= c->numel[b]) {
        char msg[200];
        snprintf(msg, sizeof(msg), "load from '%s' at index %lld, outside its %lld elements", c->f->buffers[b].name,
                 (long long)idx.i, (long long)c->numel[b]);
        interp_fail(c, msg);
        return r;
      }
      return load_elem(c->f->buffers[b].dtype, c->args[b], idx.i);
    }
    case INGOT_IR_EXPR_CAST: {
      value_t a = eval(c, e->u.unary.a);
      return convert(e->u.unary.a->dtype, e->dtype, a);
    }
    case INGOT_IR_EXPR_UNARY: {
      value_t a = eval(c, e->u.unary.a);
      ingot_dtype_t t = e->u.unary.a->dtype;
      if (e->u.unary.op == INGOT_IR_NOT) {
        r.i = !a.i;
      } else if (is_float(t)) {
        r.f = round_float(e->dtype, unary_float(e->u.unary.op, t, a.f));
      } else {
        switch (e->u.unary.op) {
          case INGOT_IR_NEG: r.i = (int64_t)(0 - (uint64_t)a.i); break;
          case INGOT_IR_ABS:
            r.i = a.i < 0 && !ingot_ir_dtype_is_unsigned(t) ? (int64_t)(0 - (uint64_t)a.i) : a.i;
            break;
          case INGOT_IR_BITNOT: r.i = ~a.i; break;
          default: r.i = a.i; break; /* floor/ceil of an int */
        }
        r.i = wrap_int(e->dtype, r.i);
      }
      return r;
    }
    case INGOT_IR_EXPR_BINARY: {
      ingot_ir_binary_op_t op = e->u.binary.op;
      ingot_dtype_t t = e->u.binary.a->dtype;
      value_t a = eval(c, e->u.binary.a);
      value_t b = eval(c, e->u.binary.b);
      if (c->status != INGOT_OK) return r;
      if (is_float(t)) {
        double x = a.f, y = b.f, z = 0;
        switch (op) {
          case INGOT_IR_ADD: z = x + y; break;
          case INGOT_IR_SUB: z = x - y; break;
          case INGOT_IR_MUL: z = x * y; break;
          case INGOT_IR_DIV: z = x / y; break;
          case INGOT_IR_MOD: z = fmod(x, y); break;
          case INGOT_IR_MIN: z = fmin(x, y); break;
          case INGOT_IR_MAX: z = fmax(x, y); break;
          case INGOT_IR_POW: z = t == INGOT_DTYPE_F64 ? pow(x, y) : powf((float)x, (float)y); break;
          case INGOT_IR_LT: r.i = x < y; return r;
          case INGOT_IR_LE: r.i = x <= y; return r;
          case INGOT_IR_EQ: r.i = x == y; return r;
          case INGOT_IR_NE: r.i = x != y; return r;
          default: break;
        }
        r.f = round_float(e->dtype, z);
        return r;
      }
      int64_t x = a.i, y = b.i, z = 0;
      if (t == INGOT_DTYPE_U64) {
        /* uint64 values are held as their bits: compare and divide unsigned */
        uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
        switch (op) {
          case INGOT_IR_DIV:
          case INGOT_IR_MOD:
            if (uy == 0) {
              interp_fail(c, "integer division by zero");
              return r;
            }
            r.i = (int64_t)(op == INGOT_IR_DIV ? ux / uy : ux % uy);
            return r;
          case INGOT_IR_MIN: r.i = (int64_t)(ux < uy ? ux : uy); return r;
          case INGOT_IR_MAX: r.i = (int64_t)(ux > uy ? ux : uy); return r;
          case INGOT_IR_LT: r.i = ux < uy; return r;
          case INGOT_IR_LE: r.i = ux <= uy; return r;
          default: break;
        }
      }
      switch (op) {
        case INGOT_IR_ADD: z = (int64_t)((uint64_t)x + (uint64_t)y); break;
        case INGOT_IR_SUB: z = (int64_t)((uint64_t)x - (uint64_t)y); break;
        case INGOT_IR_MUL: z = (int64_t)((uint64_t)x * (uint64_t)y); break;
        case INGOT_IR_DIV:
        case INGOT_IR_MOD:
          if (y == 0) {
            interp_fail(c, "integer division by zero");
            return r;
          }
          z = floor_div_i(x, y);
          if (op == INGOT_IR_MOD) z = (int64_t)((uint64_t)x - (uint64_t)z * (uint64_t)y);
          break;
        case INGOT_IR_MIN: z = x < y ? x : y; break;
        case INGOT_IR_MAX: z = x > y ? x : y; break;
        case INGOT_IR_POW: z = ipow(x, y); break;
        case INGOT_IR_LT: z = x < y; break;
        case INGOT_IR_LE: z = x <= y; break;
        case INGOT_IR_EQ: z = x == y; break;
        case INGOT_IR_NE: z = x != y; break;
        case INGOT_IR_AND: z = (x != 0) && (y != 0); break;
        case INGOT_IR_OR: z = (x != 0) || (y != 0); break;
        case INGOT_IR_BITAND: z = x & y; break;
        case INGOT_IR_BITOR: z = x | y; break;
        case INGOT_IR_BITXOR: z = x ^ y; break;
        case INGOT_IR_DOT4:
        case INGOT_IR_DOT4S:
          for (int j = 0; j < 4; ++j) z += (int64_t)(uint8_t)((uint64_t)x >> (8 * j)) * (int8_t)(uint8_t)((uint64_t)y >> (8 * j));
          break;
        case INGOT_IR_DOT2:
          for (int j = 0; j < 2; ++j)
            z += (int64_t)(int16_t)(uint16_t)((uint64_t)x >> (16 * j)) * (int16_t)(uint16_t)((uint64_t)y >> (16 * j));
          break;
        default: break;
      }
      r.i = wrap_int(e->dtype, z);
      return r;
    }
    case INGOT_IR_EXPR_SELECT: {
      value_t cond = eval(c, e->u.select.cond);
      if (c->status != INGOT_OK) return r;
      return cond.i ? eval(c, e->u.select.a) : eval(c, e->u.select.b);
    }
  }
  return r;
}

static void exec(interp_ctx_t* c, const ingot_ir_stmt_t* s) {
  if (c->status != INGOT_OK) return;
  switch (s->kind) {
    case INGOT_IR_STMT_FOR: {
      value_t* v = &c->vars[s->u.loop.var];
      for (int64_t i = 0; i < s->u.loop.extent && c->status == INGOT_OK; ++i) {
        v->i = i;
        exec(c, s->u.loop.body);
      }
      return;
    }
    case INGOT_IR_STMT_BLOCK:
      for (uint32_t i = 0; i < s->u.block.count && c->status == INGOT_OK; ++i) exec(c, s->u.block.stmts[i]);
      return;
    case INGOT_IR_STMT_STORE: {
      c->stmt = s;
      uint32_t b = s->u.store.buffer;
      value_t idx = eval(c, s->u.store.index);
      value_t val = eval(c, s->u.store.value);
      if (c->status != INGOT_OK) return;
      if (idx.i < 0 || idx.i >= c->numel[b]) {
        char msg[200];
        snprintf(msg, sizeof(msg), "store to '%s' at index %lld, outside its %lld elements", c->f->buffers[b].name,
                 (long long)idx.i, (long long)c->numel[b]);
        interp_fail(c, msg);
        return;
      }
      store_elem(c->f->buffers[b].dtype, c->args[b], idx.i, val);
      return;
    }
    case INGOT_IR_STMT_IF: {
      c->stmt = s;
      value_t cond = eval(c, s->u.cond.cond);
      if (c->status == INGOT_OK && cond.i) exec(c, s->u.cond.then_body);
      return;
    }
    case INGOT_IR_STMT_LOCAL:
    case INGOT_IR_STMT_ASSIGN: {
      c->stmt = s;
      value_t v = eval(c, s->u.local.value);
      if (c->status == INGOT_OK) c->vars[s->u.local.var] = v;
      return;
    }
    case INGOT_IR_STMT_BARRIER:
      return; /* GPU loops run serially here: nothing to wait for */
  }
}

static bool expr_closed(const ingot_ir_expr_t* e) {
  switch (e->kind) {
    case INGOT_IR_EXPR_INT: case INGOT_IR_EXPR_FLOAT: return true;
    case INGOT_IR_EXPR_VAR: case INGOT_IR_EXPR_LOAD: return false;
    case INGOT_IR_EXPR_CAST: case INGOT_IR_EXPR_UNARY: return expr_closed(e->u.unary.a);
    case INGOT_IR_EXPR_BINARY: return expr_closed(e->u.binary.a) && expr_closed(e->u.binary.b);
    case INGOT_IR_EXPR_SELECT:
      return expr_closed(e->u.select.cond) && expr_closed(e->u.select.a) && expr_closed(e->u.select.b);
  }
  return false;
}

bool ingot_ir_eval_closed_int(const ingot_ir_func_t* f, const ingot_ir_expr_t* expr, int64_t* out) {
  if (!is_int(expr->dtype) || !expr_closed(expr)) return false;
  ingot_ir_stmt_t none;
  memset(&none, 0, sizeof(none));
  interp_ctx_t c = {f, NULL, NULL, NULL, &none, INGOT_OK};
  value_t v = eval(&c, expr);
  if (c.status != INGOT_OK) {
    ingot_compiler_error_clear();
    return false;
  }
  *out = v.i;
  return true;
}

ingot_status_t ingot_ir_interpret(const ingot_ir_func_t* f, void* const* args) {
  if (!f || (!args && f->buffer_count))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_ir_interpret: no function or arguments");
  ingot_status_t st = ingot_ir_verify(f);
  if (st != INGOT_OK) return st;
  uint32_t params = ingot_ir_param_count(f);
  for (uint32_t i = 0; i < params; ++i)
    if (!args[i] && ingot_ir_buffer_numel(&f->buffers[i]) > 0)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "IR function '%s' (interpreter): buffer '%s' has no data",
                        f->name, f->buffers[i].name);
  /* SHARED buffers are the interpreter's own: one copy serves every block,
   * as blocks run one after another. */
  void** all = ingot_xcalloc(f->buffer_count + 1, sizeof(void*));
  for (uint32_t i = 0; i < f->buffer_count; ++i)
    all[i] = i < params ? args[i]
                        : ingot_xcalloc((size_t)ingot_ir_buffer_numel(&f->buffers[i]) + 1,
                                        ingot_dtype_size(f->buffers[i].dtype));
  interp_ctx_t c = {0};
  c.f = f;
  c.args = all;
  c.numel = ingot_xcalloc(f->buffer_count + 1, sizeof(int64_t));
  c.vars = ingot_xcalloc(f->var_count + 1, sizeof(value_t));
  for (uint32_t i = 0; i < f->buffer_count; ++i) c.numel[i] = ingot_ir_buffer_numel(&f->buffers[i]);
  c.stmt = f->body;
  c.status = INGOT_OK;
  exec(&c, f->body);
  for (uint32_t i = params; i < f->buffer_count; ++i) free(all[i]);
  free(all);
  free(c.numel);
  free(c.vars);
  return c.status;
}
