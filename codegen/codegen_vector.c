/* Lane analysis of a VECTORIZED loop, shared by ingot_codegen_prepare (which
 * decides whether and how wide a loop vectorizes) and the llvm backend
 * (which prints the vector code): which locals and expressions differ
 * between lanes, which indices are affine in the loop variable. Moved here
 * from codegen_llvm.c unchanged. */
#include <stdlib.h>
#include <string.h>

#include "codegen_internal.h"

/* ---- A pointer-keyed memo (open addressing) for analyses on the IR DAG. */
void ingot_codegen_memo_clear(ingot_codegen_memo_t* mm) {
  free(mm->keys);
  free(mm->values);
  memset(mm, 0, sizeof(*mm));
}

static size_t memo_slot(const ingot_codegen_memo_t* mm, const void* key) {
  size_t h = ((uintptr_t)key >> 4) * 0x9E3779B97F4A7C15ull;
  size_t i = h & (mm->cap - 1);
  while (mm->keys[i] && mm->keys[i] != key) i = (i + 1) & (mm->cap - 1);
  return i;
}

/* 0: absent; else the stored value + 1. */
int ingot_codegen_memo_get(const ingot_codegen_memo_t* mm, const void* key) {
  if (!mm->cap) return 0;
  size_t i = memo_slot(mm, key);
  return mm->keys[i] ? mm->values[i] + 1 : 0;
}

void ingot_codegen_memo_put(ingot_codegen_memo_t* mm, const void* key, uint8_t value) {
  if (2 * (mm->count + 1) > mm->cap) {
    ingot_codegen_memo_t bigger = {0};
    bigger.cap = mm->cap ? 2 * mm->cap : 256;
    bigger.keys = ingot_xcalloc(bigger.cap, sizeof(void*));
    bigger.values = ingot_xcalloc(bigger.cap, 1);
    for (size_t i = 0; i < mm->cap; ++i)
      if (mm->keys[i]) {
        size_t j = memo_slot(&bigger, mm->keys[i]);
        bigger.keys[j] = mm->keys[i];
        bigger.values[j] = mm->values[i];
        bigger.count++;
      }
    ingot_codegen_memo_clear(mm);
    *mm = bigger;
  }
  size_t i = memo_slot(mm, key);
  if (!mm->keys[i]) mm->count++;
  mm->keys[i] = key;
  mm->values[i] = value;
}

/* Whether `e` differs between the lanes of the vectorized loop. */
bool ingot_codegen_lanes_varying(ingot_codegen_lanes_t* V, const ingot_ir_expr_t* e) {
  if (!V || !e) return false;
  int got = ingot_codegen_memo_get(&V->memo, e);
  if (got) return got - 1;
  bool r = false;
  switch (e->kind) {
    case INGOT_IR_EXPR_VAR: r = e->u.var == V->var || V->varying[e->u.var]; break;
    case INGOT_IR_EXPR_LOAD: r = ingot_codegen_lanes_varying(V, e->u.load.index); break;
    case INGOT_IR_EXPR_UNARY:
    case INGOT_IR_EXPR_CAST: r = ingot_codegen_lanes_varying(V, e->u.unary.a); break;
    case INGOT_IR_EXPR_BINARY: r = ingot_codegen_lanes_varying(V, e->u.binary.a) || ingot_codegen_lanes_varying(V, e->u.binary.b); break;
    case INGOT_IR_EXPR_SELECT:
      r = ingot_codegen_lanes_varying(V, e->u.select.cond) || ingot_codegen_lanes_varying(V, e->u.select.a) || ingot_codegen_lanes_varying(V, e->u.select.b);
      break;
    default: break;
  }
  ingot_codegen_memo_put(&V->memo, e, r);
  return r;
}

/* e == uniform + coef * var: true with *coef set, false when not affine. */
bool ingot_codegen_lanes_affine(ingot_codegen_lanes_t* V, const ingot_ir_expr_t* e, int64_t* coef) {
  if (!ingot_codegen_lanes_varying(V, e)) {
    *coef = 0;
    return true;
  }
  int64_t a, b;
  switch (e->kind) {
    case INGOT_IR_EXPR_VAR:
      if (e->u.var != V->var) return false;
      *coef = 1;
      return true;
    case INGOT_IR_EXPR_BINARY:
      if (e->dtype != INGOT_DTYPE_I64) return false;
      switch (e->u.binary.op) {
        case INGOT_IR_ADD:
        case INGOT_IR_SUB:
          if (!ingot_codegen_lanes_affine(V, e->u.binary.a, &a) || !ingot_codegen_lanes_affine(V, e->u.binary.b, &b)) return false;
          *coef = e->u.binary.op == INGOT_IR_ADD ? a + b : a - b;
          return true;
        case INGOT_IR_MUL:
          if (e->u.binary.a->kind == INGOT_IR_EXPR_INT && ingot_codegen_lanes_affine(V, e->u.binary.b, &b)) {
            *coef = e->u.binary.a->u.i * b;
            return true;
          }
          if (e->u.binary.b->kind == INGOT_IR_EXPR_INT && ingot_codegen_lanes_affine(V, e->u.binary.a, &a)) {
            *coef = e->u.binary.b->u.i * a;
            return true;
          }
          return false;
        default: return false;
      }
    default: return false;
  }
}

bool ingot_codegen_expr_equal(const ingot_ir_expr_t* a, const ingot_ir_expr_t* b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind || a->dtype != b->dtype) return false;
  switch (a->kind) {
    case INGOT_IR_EXPR_INT: return a->u.i == b->u.i;
    case INGOT_IR_EXPR_FLOAT: return memcmp(&a->u.f, &b->u.f, sizeof(double)) == 0;
    case INGOT_IR_EXPR_VAR: return a->u.var == b->u.var;
    case INGOT_IR_EXPR_LOAD: return a->u.load.buffer == b->u.load.buffer && ingot_codegen_expr_equal(a->u.load.index, b->u.load.index);
    case INGOT_IR_EXPR_UNARY:
    case INGOT_IR_EXPR_CAST: return a->u.unary.op == b->u.unary.op && ingot_codegen_expr_equal(a->u.unary.a, b->u.unary.a);
    case INGOT_IR_EXPR_BINARY:
      return a->u.binary.op == b->u.binary.op && ingot_codegen_expr_equal(a->u.binary.a, b->u.binary.a) &&
             ingot_codegen_expr_equal(a->u.binary.b, b->u.binary.b);
    case INGOT_IR_EXPR_SELECT:
      return ingot_codegen_expr_equal(a->u.select.cond, b->u.select.cond) && ingot_codegen_expr_equal(a->u.select.a, b->u.select.a) &&
             ingot_codegen_expr_equal(a->u.select.b, b->u.select.b);
  }
  return false;
}

/* Marks locals whose value differs between lanes: assigned a varying value,
 * or assigned under a varying condition. Returns true if anything changed. */
static bool mark_varying(ingot_codegen_lanes_t* V, const ingot_ir_stmt_t* s, bool under_varying) {
  if (!s) return false;
  bool changed = false;
  switch (s->kind) {
    case INGOT_IR_STMT_FOR: return mark_varying(V, s->u.loop.body, under_varying);
    case INGOT_IR_STMT_BLOCK:
      for (uint32_t i = 0; i < s->u.block.count; ++i) changed |= mark_varying(V, s->u.block.stmts[i], under_varying);
      return changed;
    case INGOT_IR_STMT_IF:
      return mark_varying(V, s->u.cond.then_body, under_varying || ingot_codegen_lanes_varying(V, s->u.cond.cond));
    case INGOT_IR_STMT_LOCAL:
    case INGOT_IR_STMT_ASSIGN: {
      uint32_t v = s->u.local.var;
      bool vary = ingot_codegen_lanes_varying(V, s->u.local.value) || (s->kind == INGOT_IR_STMT_ASSIGN && under_varying);
      if (vary && !V->varying[v]) {
        V->varying[v] = 1;
        ingot_codegen_memo_clear(&V->memo);
        return true;
      }
      return false;
    }
    default: return false;
  }
}

/* The dtype of the first store in a statement (INVALID if none). */
ingot_dtype_t ingot_codegen_first_store_dtype(const ingot_ir_func_t* f, const ingot_ir_stmt_t* s) {
  if (!s) return INGOT_DTYPE_INVALID;
  switch (s->kind) {
    case INGOT_IR_STMT_STORE: return f->buffers[s->u.store.buffer].dtype;
    case INGOT_IR_STMT_FOR: return ingot_codegen_first_store_dtype(f, s->u.loop.body);
    case INGOT_IR_STMT_IF: return ingot_codegen_first_store_dtype(f, s->u.cond.then_body);
    case INGOT_IR_STMT_BLOCK:
      for (uint32_t i = 0; i < s->u.block.count; ++i) {
        ingot_dtype_t t = ingot_codegen_first_store_dtype(f, s->u.block.stmts[i]);
        if (t != INGOT_DTYPE_INVALID) return t;
      }
      return INGOT_DTYPE_INVALID;
    default: return INGOT_DTYPE_INVALID;
  }
}

void ingot_codegen_lanes_init(ingot_codegen_lanes_t* V, const ingot_ir_func_t* f, const ingot_ir_stmt_t* loop) {
  memset(V, 0, sizeof(*V));
  V->var = loop->u.loop.var;
  V->varying = ingot_xcalloc(f->var_count ? f->var_count : 1, 1);
  for (int iter = 0; iter <= (int)f->var_count + 1; ++iter)
    if (!mark_varying(V, loop->u.loop.body, false)) break;
}

void ingot_codegen_lanes_free(ingot_codegen_lanes_t* V) {
  free(V->varying);
  ingot_codegen_memo_clear(&V->memo);
  memset(V, 0, sizeof(*V));
}
