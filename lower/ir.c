/* Loop IR: functions, constructors with light constant folding, rewriting. */
#include "lower/ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ingot_ir_func_t* ingot_ir_func_create(const char* name) {
  ingot_ir_func_t* f = ingot_xcalloc(1, sizeof(*f));
  ingot_arena_init(&f->arena, ingot_allocator_system());
  f->name = ingot_arena_strdup(&f->arena, name);
  f->body = ingot_ir_block(f, NULL, 0);
  return f;
}

void ingot_ir_func_destroy(ingot_ir_func_t* func) {
  if (!func) return;
  free(func->buffers);
  free(func->vars);
  ingot_arena_deinit(&func->arena);
  free(func);
}

uint32_t ingot_ir_add_buffer(ingot_ir_func_t* f, const char* name, ingot_dtype_t dtype,
                             ingot_ir_buffer_role_t role, int32_t rank, const int64_t* dims) {
  if (f->buffer_count == f->buffer_cap) {
    f->buffer_cap = f->buffer_cap ? f->buffer_cap * 2 : 8;
    f->buffers = ingot_xrealloc(f->buffers, f->buffer_cap * sizeof(*f->buffers));
  }
  ingot_ir_buffer_t* b = &f->buffers[f->buffer_count];
  memset(b, 0, sizeof(*b));
  b->name = ingot_arena_strdup(&f->arena, name);
  b->dtype = dtype;
  b->role = role;
  b->rank = rank;
  for (int32_t i = 0; i < rank && i < (int32_t)INGOT_MAX_RANK; ++i) b->dims[i] = dims[i];
  return f->buffer_count++;
}

uint32_t ingot_ir_param_count(const ingot_ir_func_t* f) {
  uint32_t n = 0;
  while (n < f->buffer_count && f->buffers[n].role != INGOT_IR_BUFFER_SHARED) ++n;
  return n;
}

uint32_t ingot_ir_find_var(const ingot_ir_func_t* f, const char* name) {
  for (uint32_t i = 0; i < f->var_count; ++i)
    if (strcmp(f->vars[i].name, name) == 0) return i;
  return UINT32_MAX;
}

uint32_t ingot_ir_add_var(ingot_ir_func_t* f, const char* name, ingot_ir_var_kind_t kind,
                          ingot_dtype_t dtype) {
  const char* unique = name;
  for (int n = 1; ingot_ir_find_var(f, unique) != UINT32_MAX; ++n)
    unique = ingot_arena_printf(&f->arena, "%s_%d", name, n);
  if (f->var_count == f->var_cap) {
    f->var_cap = f->var_cap ? f->var_cap * 2 : 16;
    f->vars = ingot_xrealloc(f->vars, f->var_cap * sizeof(*f->vars));
  }
  ingot_ir_var_t* v = &f->vars[f->var_count];
  v->name = unique == name ? ingot_arena_strdup(&f->arena, name) : unique;
  v->kind = kind;
  v->dtype = kind == INGOT_IR_VAR_LOOP ? INGOT_DTYPE_I64 : dtype;
  v->value = NULL;
  return f->var_count++;
}

int64_t ingot_ir_buffer_numel(const ingot_ir_buffer_t* b) {
  int64_t n = 1;
  for (int32_t i = 0; i < b->rank; ++i) n *= b->dims[i];
  return n;
}

/* ---- expressions ---- */
static ingot_ir_expr_t* new_expr(ingot_ir_func_t* f, ingot_ir_expr_kind_t kind, ingot_dtype_t dtype) {
  ingot_ir_expr_t* e = INGOT_ARENA_NEW(&f->arena, ingot_ir_expr_t);
  e->kind = kind;
  e->dtype = dtype;
  return e;
}

static bool is_int_const(const ingot_ir_expr_t* e, int64_t v) {
  return e->kind == INGOT_IR_EXPR_INT && e->u.i == v;
}

static bool is_float_dtype(ingot_dtype_t t) {
  return t == INGOT_DTYPE_F32 || t == INGOT_DTYPE_F64 || t == INGOT_DTYPE_F16 || t == INGOT_DTYPE_BF16;
}

bool ingot_ir_dtype_is_float(ingot_dtype_t t) { return is_float_dtype(t); }

/* IEEE half from float, round to nearest even (decoding: base/). */
uint16_t ingot_ir_f16_bits(double d) {
  float x = (float)d;
  uint32_t bits;
  memcpy(&bits, &x, 4);
  uint16_t sign = (uint16_t)((bits >> 16) & 0x8000);
  int32_t exp = (int32_t)((bits >> 23) & 0xff);
  uint32_t mant = bits & 0x7fffff;
  if (exp == 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  int32_t e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    uint32_t shift = (uint32_t)(14 - e);
    uint32_t h = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return sign | (uint16_t)h;
  }
  uint32_t h = ((uint32_t)e << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
  return sign | (uint16_t)h;
}

bool ingot_ir_dtype_is_int(ingot_dtype_t t) {
  switch (t) {
    case INGOT_DTYPE_I8: case INGOT_DTYPE_U8: case INGOT_DTYPE_I16: case INGOT_DTYPE_U16:
    case INGOT_DTYPE_I32: case INGOT_DTYPE_U32: case INGOT_DTYPE_I64: case INGOT_DTYPE_U64: return true;
    default: return false;
  }
}
bool ingot_ir_dtype_is_unsigned(ingot_dtype_t t) {
  return t == INGOT_DTYPE_U8 || t == INGOT_DTYPE_U16 || t == INGOT_DTYPE_U32 || t == INGOT_DTYPE_U64 ||
         t == INGOT_DTYPE_BOOL;
}

ingot_ir_expr_t* ingot_ir_int(ingot_ir_func_t* f, int64_t value) {
  ingot_ir_expr_t* e = new_expr(f, INGOT_IR_EXPR_INT, INGOT_DTYPE_I64);
  e->u.i = value;
  return e;
}

ingot_ir_expr_t* ingot_ir_float(ingot_ir_func_t* f, ingot_dtype_t dtype, double value) {
  ingot_ir_expr_t* e = new_expr(f, INGOT_IR_EXPR_FLOAT, dtype);
  e->u.f = value;
  return e;
}

ingot_ir_expr_t* ingot_ir_var(ingot_ir_func_t* f, uint32_t var) {
  ingot_ir_expr_t* e = new_expr(f, INGOT_IR_EXPR_VAR, f->vars[var].dtype);
  e->u.var = var;
  return e;
}

ingot_ir_expr_t* ingot_ir_load(ingot_ir_func_t* f, uint32_t buffer, ingot_ir_expr_t* index) {
  ingot_ir_expr_t* e = new_expr(f, INGOT_IR_EXPR_LOAD, f->buffers[buffer].dtype);
  e->u.load.buffer = buffer;
  e->u.load.index = index;
  return e;
}

ingot_ir_expr_t* ingot_ir_unary(ingot_ir_func_t* f, ingot_ir_unary_op_t op, ingot_ir_expr_t* a) {
  if (a->kind == INGOT_IR_EXPR_INT && op == INGOT_IR_NEG) return ingot_ir_int(f, -a->u.i);
  ingot_ir_expr_t* e = new_expr(f, INGOT_IR_EXPR_UNARY, op == INGOT_IR_NOT ? INGOT_DTYPE_BOOL : a->dtype);
  e->u.unary.op = op;
  e->u.unary.a = a;
  return e;
}

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

ingot_ir_expr_t* ingot_ir_binary(ingot_ir_func_t* f, ingot_ir_binary_op_t op,
                                 ingot_ir_expr_t* a, ingot_ir_expr_t* b) {
  bool ints = a->kind == INGOT_IR_EXPR_INT && b->kind == INGOT_IR_EXPR_INT;
  if (ints) {
    int64_t x = a->u.i, y = b->u.i;
    switch (op) {
      case INGOT_IR_ADD: return ingot_ir_int(f, x + y);
      case INGOT_IR_SUB: return ingot_ir_int(f, x - y);
      case INGOT_IR_MUL: return ingot_ir_int(f, x * y);
      case INGOT_IR_DIV: if (y != 0) return ingot_ir_int(f, floor_div(x, y)); break;
      case INGOT_IR_MOD: if (y != 0) return ingot_ir_int(f, x - floor_div(x, y) * y); break;
      case INGOT_IR_MIN: return ingot_ir_int(f, x < y ? x : y);
      case INGOT_IR_MAX: return ingot_ir_int(f, x > y ? x : y);
      default: break;
    }
  }
  if (a->dtype == INGOT_DTYPE_I64 && b->dtype == INGOT_DTYPE_I64) {
    switch (op) {
      case INGOT_IR_ADD:
        if (is_int_const(a, 0)) return b;
        if (is_int_const(b, 0)) return a;
        break;
      case INGOT_IR_SUB:
        if (is_int_const(b, 0)) return a;
        break;
      case INGOT_IR_MUL:
        if (is_int_const(a, 1)) return b;
        if (is_int_const(b, 1)) return a;
        if (is_int_const(a, 0) || is_int_const(b, 0)) return ingot_ir_int(f, 0);
        break;
      case INGOT_IR_DIV:
        if (is_int_const(b, 1)) return a;
        break;
      case INGOT_IR_MOD:
        if (is_int_const(b, 1)) return ingot_ir_int(f, 0);
        break;
      default: break;
    }
  }
  ingot_dtype_t dtype = a->dtype;
  if (op >= INGOT_IR_LT && op <= INGOT_IR_OR) dtype = INGOT_DTYPE_BOOL;
  ingot_ir_expr_t* e = new_expr(f, INGOT_IR_EXPR_BINARY, dtype);
  e->u.binary.op = op;
  e->u.binary.a = a;
  e->u.binary.b = b;
  return e;
}

ingot_ir_expr_t* ingot_ir_select(ingot_ir_func_t* f, ingot_ir_expr_t* cond, ingot_ir_expr_t* a,
                                 ingot_ir_expr_t* b) {
  ingot_ir_expr_t* e = new_expr(f, INGOT_IR_EXPR_SELECT, a->dtype);
  e->u.select.cond = cond;
  e->u.select.a = a;
  e->u.select.b = b;
  return e;
}

ingot_ir_expr_t* ingot_ir_cast(ingot_ir_func_t* f, ingot_dtype_t dtype, ingot_ir_expr_t* a) {
  if (a->dtype == dtype) return a;
  if (a->kind == INGOT_IR_EXPR_INT && is_float_dtype(dtype)) return ingot_ir_float(f, dtype, (double)a->u.i);
  if (a->kind == INGOT_IR_EXPR_FLOAT && is_float_dtype(dtype)) {
    /* the constant's value is its dtype's: round it before it changes type */
    double v = a->dtype == INGOT_DTYPE_F32   ? (double)(float)a->u.f
               : a->dtype == INGOT_DTYPE_F16 ? ingot_half_to_double(ingot_ir_f16_bits(a->u.f))
                                             : a->u.f;
    return ingot_ir_float(f, dtype, v);
  }
  ingot_ir_expr_t* e = new_expr(f, INGOT_IR_EXPR_CAST, dtype);
  e->u.unary.op = 0;
  e->u.unary.a = a;
  return e;
}

ingot_ir_expr_t* ingot_ir_add(ingot_ir_func_t* f, ingot_ir_expr_t* a, ingot_ir_expr_t* b) {
  return ingot_ir_binary(f, INGOT_IR_ADD, a, b);
}
ingot_ir_expr_t* ingot_ir_mul(ingot_ir_func_t* f, ingot_ir_expr_t* a, ingot_ir_expr_t* b) {
  return ingot_ir_binary(f, INGOT_IR_MUL, a, b);
}

ingot_ir_expr_t* ingot_ir_flat_index(ingot_ir_func_t* f, uint32_t buffer,
                                     ingot_ir_expr_t* const* indices) {
  const ingot_ir_buffer_t* b = &f->buffers[buffer];
  ingot_ir_expr_t* flat = ingot_ir_int(f, 0);
  for (int32_t i = 0; i < b->rank; ++i) {
    flat = ingot_ir_add(f, ingot_ir_mul(f, flat, ingot_ir_int(f, b->dims[i])), indices[i]);
  }
  return flat;
}

/* ---- statements ---- */
static ingot_ir_stmt_t* new_stmt(ingot_ir_func_t* f, ingot_ir_stmt_kind_t kind) {
  ingot_ir_stmt_t* s = INGOT_ARENA_NEW(&f->arena, ingot_ir_stmt_t);
  s->kind = kind;
  return s;
}

ingot_ir_stmt_t* ingot_ir_for(ingot_ir_func_t* f, uint32_t var, int64_t extent, ingot_ir_stmt_t* body) {
  ingot_ir_stmt_t* s = new_stmt(f, INGOT_IR_STMT_FOR);
  s->u.loop.var = var;
  s->u.loop.extent = extent;
  s->u.loop.loop_kind = INGOT_IR_LOOP_SERIAL;
  s->u.loop.body = body;
  return s;
}

ingot_ir_stmt_t* ingot_ir_for_like(ingot_ir_func_t* f, const ingot_ir_stmt_t* loop, ingot_ir_stmt_t* body) {
  ingot_ir_stmt_t* s = new_stmt(f, INGOT_IR_STMT_FOR);
  s->u.loop = loop->u.loop;
  s->u.loop.body = body;
  return s;
}

ingot_ir_stmt_t* ingot_ir_block(ingot_ir_func_t* f, ingot_ir_stmt_t* const* stmts, uint32_t count) {
  ingot_ir_stmt_t* s = new_stmt(f, INGOT_IR_STMT_BLOCK);
  s->u.block.stmts = INGOT_ARENA_ARRAY(&f->arena, ingot_ir_stmt_t*, count ? count : 1);
  for (uint32_t i = 0; i < count; ++i) s->u.block.stmts[i] = stmts[i];
  s->u.block.count = count;
  return s;
}

ingot_ir_stmt_t* ingot_ir_store(ingot_ir_func_t* f, uint32_t buffer, ingot_ir_expr_t* index,
                                ingot_ir_expr_t* value) {
  ingot_ir_stmt_t* s = new_stmt(f, INGOT_IR_STMT_STORE);
  s->u.store.buffer = buffer;
  s->u.store.index = index;
  s->u.store.value = value;
  return s;
}

ingot_ir_stmt_t* ingot_ir_if(ingot_ir_func_t* f, ingot_ir_expr_t* cond, ingot_ir_stmt_t* then_body) {
  ingot_ir_stmt_t* s = new_stmt(f, INGOT_IR_STMT_IF);
  s->u.cond.cond = cond;
  s->u.cond.then_body = then_body;
  return s;
}

ingot_ir_stmt_t* ingot_ir_local(ingot_ir_func_t* f, uint32_t var, ingot_ir_expr_t* value) {
  ingot_ir_stmt_t* s = new_stmt(f, INGOT_IR_STMT_LOCAL);
  s->u.local.var = var;
  s->u.local.value = value;
  return s;
}

ingot_ir_stmt_t* ingot_ir_assign(ingot_ir_func_t* f, uint32_t var, ingot_ir_expr_t* value) {
  ingot_ir_stmt_t* s = new_stmt(f, INGOT_IR_STMT_ASSIGN);
  s->u.local.var = var;
  s->u.local.value = value;
  return s;
}

ingot_ir_stmt_t* ingot_ir_barrier(ingot_ir_func_t* f) { return new_stmt(f, INGOT_IR_STMT_BARRIER); }

/* ---- rewriting ---- */
ingot_ir_expr_t* ingot_ir_expr_substitute(ingot_ir_func_t* f, ingot_ir_expr_t* e, uint32_t var,
                                          ingot_ir_expr_t* r) {
  switch (e->kind) {
    case INGOT_IR_EXPR_INT:
    case INGOT_IR_EXPR_FLOAT:
      return e;
    case INGOT_IR_EXPR_VAR:
      return e->u.var == var ? r : e;
    case INGOT_IR_EXPR_LOAD: {
      ingot_ir_expr_t* i = ingot_ir_expr_substitute(f, e->u.load.index, var, r);
      return i == e->u.load.index ? e : ingot_ir_load(f, e->u.load.buffer, i);
    }
    case INGOT_IR_EXPR_UNARY: {
      ingot_ir_expr_t* a = ingot_ir_expr_substitute(f, e->u.unary.a, var, r);
      return a == e->u.unary.a ? e : ingot_ir_unary(f, e->u.unary.op, a);
    }
    case INGOT_IR_EXPR_CAST: {
      ingot_ir_expr_t* a = ingot_ir_expr_substitute(f, e->u.unary.a, var, r);
      return a == e->u.unary.a ? e : ingot_ir_cast(f, e->dtype, a);
    }
    case INGOT_IR_EXPR_BINARY: {
      ingot_ir_expr_t* a = ingot_ir_expr_substitute(f, e->u.binary.a, var, r);
      ingot_ir_expr_t* b = ingot_ir_expr_substitute(f, e->u.binary.b, var, r);
      if (a == e->u.binary.a && b == e->u.binary.b) return e;
      return ingot_ir_binary(f, e->u.binary.op, a, b);
    }
    case INGOT_IR_EXPR_SELECT: {
      ingot_ir_expr_t* c = ingot_ir_expr_substitute(f, e->u.select.cond, var, r);
      ingot_ir_expr_t* a = ingot_ir_expr_substitute(f, e->u.select.a, var, r);
      ingot_ir_expr_t* b = ingot_ir_expr_substitute(f, e->u.select.b, var, r);
      if (c == e->u.select.cond && a == e->u.select.a && b == e->u.select.b) return e;
      return ingot_ir_select(f, c, a, b);
    }
  }
  return e;
}

void ingot_ir_set_var_value(ingot_ir_func_t* f, uint32_t var, ingot_ir_expr_t* value) {
  if (var < f->var_count) f->vars[var].value = value;
}

/* Values lead to other variables, never back (ingot_ir_set_var_value); the
 * depth bound only stops a caller's mistake from recursing forever. */
static ingot_ir_expr_t* resolve(ingot_ir_func_t* f, ingot_ir_expr_t* e, int depth) {
  if (depth > 64) return e;
  switch (e->kind) {
    case INGOT_IR_EXPR_INT:
    case INGOT_IR_EXPR_FLOAT: return e;
    case INGOT_IR_EXPR_VAR: {
      ingot_ir_expr_t* v = e->u.var < f->var_count ? f->vars[e->u.var].value : NULL;
      return v ? resolve(f, v, depth + 1) : e;
    }
    case INGOT_IR_EXPR_LOAD: {
      ingot_ir_expr_t* i = resolve(f, e->u.load.index, depth);
      return i == e->u.load.index ? e : ingot_ir_load(f, e->u.load.buffer, i);
    }
    case INGOT_IR_EXPR_UNARY: {
      ingot_ir_expr_t* a = resolve(f, e->u.unary.a, depth);
      return a == e->u.unary.a ? e : ingot_ir_unary(f, e->u.unary.op, a);
    }
    case INGOT_IR_EXPR_CAST: {
      ingot_ir_expr_t* a = resolve(f, e->u.unary.a, depth);
      return a == e->u.unary.a ? e : ingot_ir_cast(f, e->dtype, a);
    }
    case INGOT_IR_EXPR_BINARY: {
      ingot_ir_expr_t* a = resolve(f, e->u.binary.a, depth);
      ingot_ir_expr_t* b = resolve(f, e->u.binary.b, depth);
      return a == e->u.binary.a && b == e->u.binary.b ? e : ingot_ir_binary(f, e->u.binary.op, a, b);
    }
    case INGOT_IR_EXPR_SELECT: {
      ingot_ir_expr_t* c = resolve(f, e->u.select.cond, depth);
      ingot_ir_expr_t* a = resolve(f, e->u.select.a, depth);
      ingot_ir_expr_t* b = resolve(f, e->u.select.b, depth);
      if (c == e->u.select.cond && a == e->u.select.a && b == e->u.select.b) return e;
      return ingot_ir_select(f, c, a, b);
    }
  }
  return e;
}

ingot_ir_expr_t* ingot_ir_expr_resolve(ingot_ir_func_t* f, ingot_ir_expr_t* e) { return resolve(f, e, 0); }

ingot_ir_stmt_t* ingot_ir_stmt_substitute(ingot_ir_func_t* f, ingot_ir_stmt_t* s, uint32_t var,
                                          ingot_ir_expr_t* r) {
  switch (s->kind) {
    case INGOT_IR_STMT_FOR: {
      ingot_ir_stmt_t* b = ingot_ir_stmt_substitute(f, s->u.loop.body, var, r);
      return b == s->u.loop.body ? s : ingot_ir_for_like(f, s, b);
    }
    case INGOT_IR_STMT_BLOCK: {
      bool changed = false;
      ingot_ir_stmt_t** out = INGOT_ARENA_ARRAY(&f->arena, ingot_ir_stmt_t*, s->u.block.count ? s->u.block.count : 1);
      for (uint32_t i = 0; i < s->u.block.count; ++i) {
        out[i] = ingot_ir_stmt_substitute(f, s->u.block.stmts[i], var, r);
        changed |= out[i] != s->u.block.stmts[i];
      }
      if (!changed) return s;
      ingot_ir_stmt_t* n = new_stmt(f, INGOT_IR_STMT_BLOCK);
      n->u.block.stmts = out;
      n->u.block.count = s->u.block.count;
      return n;
    }
    case INGOT_IR_STMT_STORE: {
      ingot_ir_expr_t* i = ingot_ir_expr_substitute(f, s->u.store.index, var, r);
      ingot_ir_expr_t* v = ingot_ir_expr_substitute(f, s->u.store.value, var, r);
      if (i == s->u.store.index && v == s->u.store.value) return s;
      return ingot_ir_store(f, s->u.store.buffer, i, v);
    }
    case INGOT_IR_STMT_IF: {
      ingot_ir_expr_t* c = ingot_ir_expr_substitute(f, s->u.cond.cond, var, r);
      ingot_ir_stmt_t* t = ingot_ir_stmt_substitute(f, s->u.cond.then_body, var, r);
      if (c == s->u.cond.cond && t == s->u.cond.then_body) return s;
      return ingot_ir_if(f, c, t);
    }
    case INGOT_IR_STMT_LOCAL:
    case INGOT_IR_STMT_ASSIGN: {
      ingot_ir_expr_t* v = ingot_ir_expr_substitute(f, s->u.local.value, var, r);
      if (v == s->u.local.value) return s;
      return s->kind == INGOT_IR_STMT_LOCAL ? ingot_ir_local(f, s->u.local.var, v)
                                            : ingot_ir_assign(f, s->u.local.var, v);
    }
    case INGOT_IR_STMT_BARRIER:
      return s;
  }
  return s;
}

bool ingot_ir_expr_uses_var(const ingot_ir_expr_t* e, uint32_t var) {
  switch (e->kind) {
    case INGOT_IR_EXPR_INT:
    case INGOT_IR_EXPR_FLOAT: return false;
    case INGOT_IR_EXPR_VAR: return e->u.var == var;
    case INGOT_IR_EXPR_LOAD: return ingot_ir_expr_uses_var(e->u.load.index, var);
    case INGOT_IR_EXPR_UNARY:
    case INGOT_IR_EXPR_CAST: return ingot_ir_expr_uses_var(e->u.unary.a, var);
    case INGOT_IR_EXPR_BINARY:
      return ingot_ir_expr_uses_var(e->u.binary.a, var) || ingot_ir_expr_uses_var(e->u.binary.b, var);
    case INGOT_IR_EXPR_SELECT:
      return ingot_ir_expr_uses_var(e->u.select.cond, var) || ingot_ir_expr_uses_var(e->u.select.a, var) ||
             ingot_ir_expr_uses_var(e->u.select.b, var);
  }
  return false;
}

bool ingot_ir_stmt_uses_var(const ingot_ir_stmt_t* s, uint32_t var) {
  switch (s->kind) {
    case INGOT_IR_STMT_FOR: return s->u.loop.var == var || ingot_ir_stmt_uses_var(s->u.loop.body, var);
    case INGOT_IR_STMT_BLOCK:
      for (uint32_t i = 0; i < s->u.block.count; ++i)
        if (ingot_ir_stmt_uses_var(s->u.block.stmts[i], var)) return true;
      return false;
    case INGOT_IR_STMT_STORE:
      return ingot_ir_expr_uses_var(s->u.store.index, var) || ingot_ir_expr_uses_var(s->u.store.value, var);
    case INGOT_IR_STMT_IF:
      return ingot_ir_expr_uses_var(s->u.cond.cond, var) || ingot_ir_stmt_uses_var(s->u.cond.then_body, var);
    case INGOT_IR_STMT_LOCAL:
    case INGOT_IR_STMT_ASSIGN:
      return s->u.local.var == var || ingot_ir_expr_uses_var(s->u.local.value, var);
    case INGOT_IR_STMT_BARRIER:
      return false;
  }
  return false;
}

/* ---- uses ---- */
static void uses_expr(const ingot_ir_func_t* f, const ingot_ir_expr_t* e, ingot_ir_uses_t* u) {
  if (!e) return;
  switch (e->kind) {
    case INGOT_IR_EXPR_VAR:
      if (e->u.var < f->var_count) u->vars[e->u.var] = 1;
      return;
    case INGOT_IR_EXPR_LOAD:
      if (e->u.load.buffer < f->buffer_count) u->loaded[e->u.load.buffer] = 1;
      INGOT_VEC_PUSH(u->loads, e);
      uses_expr(f, e->u.load.index, u);
      return;
    case INGOT_IR_EXPR_UNARY:
    case INGOT_IR_EXPR_CAST: uses_expr(f, e->u.unary.a, u); return;
    case INGOT_IR_EXPR_BINARY:
      uses_expr(f, e->u.binary.a, u);
      uses_expr(f, e->u.binary.b, u);
      return;
    case INGOT_IR_EXPR_SELECT:
      uses_expr(f, e->u.select.cond, u);
      uses_expr(f, e->u.select.a, u);
      uses_expr(f, e->u.select.b, u);
      return;
    default: return;
  }
}

static void uses_stmt(const ingot_ir_func_t* f, const ingot_ir_stmt_t* s, ingot_ir_uses_t* u) {
  if (!s) return;
  switch (s->kind) {
    case INGOT_IR_STMT_FOR:
      if (s->u.loop.var < f->var_count) u->declared[s->u.loop.var] = 1;
      uses_stmt(f, s->u.loop.body, u);
      return;
    case INGOT_IR_STMT_BLOCK:
      for (uint32_t i = 0; i < s->u.block.count; ++i) uses_stmt(f, s->u.block.stmts[i], u);
      return;
    case INGOT_IR_STMT_STORE:
      if (s->u.store.buffer < f->buffer_count) u->stored[s->u.store.buffer] = 1;
      INGOT_VEC_PUSH(u->stores, s);
      uses_expr(f, s->u.store.index, u);
      uses_expr(f, s->u.store.value, u);
      return;
    case INGOT_IR_STMT_IF:
      uses_expr(f, s->u.cond.cond, u);
      uses_stmt(f, s->u.cond.then_body, u);
      return;
    case INGOT_IR_STMT_LOCAL:
    case INGOT_IR_STMT_ASSIGN:
      if (s->u.local.var < f->var_count) {
        u->vars[s->u.local.var] = 1;
        if (s->kind == INGOT_IR_STMT_LOCAL) u->declared[s->u.local.var] = 1;
        else u->assigned[s->u.local.var] = 1;
      }
      uses_expr(f, s->u.local.value, u);
      return;
    case INGOT_IR_STMT_BARRIER:
      return;
  }
}

void ingot_ir_uses_collect(const ingot_ir_func_t* f, const ingot_ir_stmt_t* stmt, ingot_ir_uses_t* u) {
  memset(u, 0, sizeof(*u));
  size_t nv = f->var_count ? f->var_count : 1, nb = f->buffer_count ? f->buffer_count : 1;
  u->vars = ingot_xcalloc(nv, 1);
  u->assigned = ingot_xcalloc(nv, 1);
  u->declared = ingot_xcalloc(nv, 1);
  u->loaded = ingot_xcalloc(nb, 1);
  u->stored = ingot_xcalloc(nb, 1);
  uses_stmt(f, stmt, u);
}

void ingot_ir_uses_free(ingot_ir_uses_t* u) {
  free(u->vars);
  free(u->assigned);
  free(u->declared);
  free(u->loaded);
  free(u->stored);
  INGOT_VEC_FREE(u->stores);
  INGOT_VEC_FREE(u->loads);
}

/* ---- facts about expressions ---- */
static bool ir_is_int(ingot_dtype_t t) { return ingot_ir_dtype_is_int(t); }

bool ingot_ir_expr_nonneg(const ingot_ir_func_t* f, const ingot_ir_expr_t* e) {
  switch (e->kind) {
    case INGOT_IR_EXPR_INT: return e->u.i >= 0;
    case INGOT_IR_EXPR_VAR: return e->u.var < f->var_count && f->vars[e->u.var].kind == INGOT_IR_VAR_LOOP;
    case INGOT_IR_EXPR_CAST: {
      ingot_dtype_t from = e->u.unary.a->dtype;
      /* an unsigned value fits a wider int, or one as wide of any kind but signed of that width */
      if (ingot_ir_dtype_is_unsigned(from) && from != INGOT_DTYPE_U64)
        return ir_is_int(e->dtype) && ingot_dtype_size(e->dtype) > ingot_dtype_size(from);
      return e->dtype == INGOT_DTYPE_I64 && ir_is_int(from) && ingot_ir_expr_nonneg(f, e->u.unary.a);
    }
    case INGOT_IR_EXPR_LOAD: return ingot_ir_dtype_is_unsigned(e->dtype) && e->dtype != INGOT_DTYPE_BOOL;
    case INGOT_IR_EXPR_BINARY: {
      const ingot_ir_expr_t* a = e->u.binary.a;
      const ingot_ir_expr_t* b = e->u.binary.b;
      switch (e->u.binary.op) {
        case INGOT_IR_ADD:
        case INGOT_IR_MUL:
        case INGOT_IR_MIN: return ingot_ir_expr_nonneg(f, a) && ingot_ir_expr_nonneg(f, b);
        case INGOT_IR_MAX: return ingot_ir_expr_nonneg(f, a) || ingot_ir_expr_nonneg(f, b);
        case INGOT_IR_DIV:
        case INGOT_IR_MOD: return ingot_ir_expr_nonneg(f, a) && b->kind == INGOT_IR_EXPR_INT && b->u.i > 0;
        default: return false;
      }
    }
    case INGOT_IR_EXPR_SELECT: return ingot_ir_expr_nonneg(f, e->u.select.a) && ingot_ir_expr_nonneg(f, e->u.select.b);
    default: return false;
  }
}
