/* Schedule primitives on the loop IR (split, reorder, fuse, marks) and the
 * schedule-as-data applier. Every primitive checks everything before it
 * touches the function, so a failure leaves the function as it was. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule/schedule.h"
#include "schedule_internal.h"

/* Largest extent a loop may have to be fully unrolled by codegen. */
#define UNROLL_MAX_EXTENT 64

/* ---- finding loops ---- */

typedef INGOT_VEC(ingot_ir_stmt_t*) stmt_vec_t;

/* Depth-first search for the FOR binding `var`; on success `path` holds the
 * statements from the root down to the loop (inclusive). */
static bool find_loop_path(ingot_ir_stmt_t* s, uint32_t var, stmt_vec_t* path) {
  if (!s) return false;
  INGOT_VEC_PUSH(*path, s);
  switch (s->kind) {
    case INGOT_IR_STMT_FOR:
      if (s->u.loop.var == var) return true;
      if (find_loop_path(s->u.loop.body, var, path)) return true;
      break;
    case INGOT_IR_STMT_BLOCK:
      for (uint32_t i = 0; i < s->u.block.count; ++i)
        if (find_loop_path(s->u.block.stmts[i], var, path)) return true;
      break;
    case INGOT_IR_STMT_IF:
      if (find_loop_path(s->u.cond.then_body, var, path)) return true;
      break;
    default:
      break;
  }
  --path->count;
  return false;
}

ingot_ir_stmt_t* ingot_schedule_find_loop(const ingot_ir_func_t* f, const char* name) {
  if (!name) return NULL;
  uint32_t var = ingot_ir_find_var(f, name);
  if (var == UINT32_MAX || f->vars[var].kind != INGOT_IR_VAR_LOOP) return NULL;
  stmt_vec_t path = {0};
  ingot_ir_stmt_t* loop = find_loop_path(f->body, var, &path) ? path.data[path.count - 1] : NULL;
  INGOT_VEC_FREE(path);
  return loop;
}

/* Finds a loop with its ancestors; fails "no loop named ..." when absent. */
static ingot_status_t locate(const ingot_ir_func_t* f, const char* name, stmt_vec_t* path) {
  path->count = 0;
  if (!name) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "no loop name given");
  uint32_t var = ingot_ir_find_var(f, name);
  if (var == UINT32_MAX || f->vars[var].kind != INGOT_IR_VAR_LOOP || !find_loop_path(f->body, var, path))
    return ingot_fail(INGOT_ERROR_NOT_FOUND, "no loop named '%s'", name);
  return INGOT_OK;
}

/* The loop directly inside `s`: its body, looking through one-statement blocks. */
static ingot_ir_stmt_t* direct_child(ingot_ir_stmt_t* body) {
  while (body && body->kind == INGOT_IR_STMT_BLOCK && body->u.block.count == 1) body = body->u.block.stmts[0];
  return body;
}

static bool contains_loop(const ingot_ir_stmt_t* s) {
  if (!s) return false;
  switch (s->kind) {
    case INGOT_IR_STMT_FOR: return true;
    case INGOT_IR_STMT_BLOCK:
      for (uint32_t i = 0; i < s->u.block.count; ++i)
        if (contains_loop(s->u.block.stmts[i])) return true;
      return false;
    case INGOT_IR_STMT_IF: return contains_loop(s->u.cond.then_body);
    default: return false;
  }
}

static bool contains_parallel(const ingot_ir_stmt_t* s) {
  if (!s) return false;
  switch (s->kind) {
    case INGOT_IR_STMT_FOR:
      return s->u.loop.loop_kind == INGOT_IR_LOOP_PARALLEL || contains_parallel(s->u.loop.body);
    case INGOT_IR_STMT_BLOCK:
      for (uint32_t i = 0; i < s->u.block.count; ++i)
        if (contains_parallel(s->u.block.stmts[i])) return true;
      return false;
    case INGOT_IR_STMT_IF: return contains_parallel(s->u.cond.then_body);
    default: return false;
  }
}

/* The body of a vectorized loop made by ingot_schedule_accumulate: it
 * declares its accumulators first and may hold the (serial) reduce loops. */
static bool accumulates(const ingot_ir_stmt_t* body) {
  return body && body->kind == INGOT_IR_STMT_BLOCK && body->u.block.count > 0 &&
         body->u.block.stmts[0]->kind == INGOT_IR_STMT_LOCAL && !contains_parallel(body);
}

/* Checks the loop-kind rules over a whole body: no parallel loop inside a
 * parallel loop, vectorized loops innermost. */
static ingot_status_t check_marks(const ingot_ir_func_t* f, const ingot_ir_stmt_t* s, bool in_parallel) {
  if (!s) return INGOT_OK;
  switch (s->kind) {
    case INGOT_IR_STMT_FOR: {
      const char* name = f->vars[s->u.loop.var].name;
      bool par = s->u.loop.loop_kind == INGOT_IR_LOOP_PARALLEL;
      if (par && in_parallel)
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "parallel loop '%s' would sit inside another parallel loop",
                          name);
      if (s->u.loop.loop_kind == INGOT_IR_LOOP_VECTORIZED && contains_loop(s->u.loop.body) &&
          !accumulates(s->u.loop.body))
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "vectorized loop '%s' would not be innermost", name);
      return check_marks(f, s->u.loop.body, in_parallel || par);
    }
    case INGOT_IR_STMT_BLOCK:
      for (uint32_t i = 0; i < s->u.block.count; ++i) {
        ingot_status_t st = check_marks(f, s->u.block.stmts[i], in_parallel);
        if (st != INGOT_OK) return st;
      }
      return INGOT_OK;
    case INGOT_IR_STMT_IF: return check_marks(f, s->u.cond.then_body, in_parallel);
    default: return INGOT_OK;
  }
}

/* Rebuilds `root` with the node `target` replaced by `replacement`. */
static ingot_ir_stmt_t* replace_stmt(ingot_ir_func_t* f, ingot_ir_stmt_t* s, const ingot_ir_stmt_t* target,
                                     ingot_ir_stmt_t* replacement) {
  if (s == target) return replacement;
  switch (s->kind) {
    case INGOT_IR_STMT_FOR: {
      ingot_ir_stmt_t* b = replace_stmt(f, s->u.loop.body, target, replacement);
      return b == s->u.loop.body ? s : ingot_ir_for_like(f, s, b);
    }
    case INGOT_IR_STMT_BLOCK: {
      uint32_t n = s->u.block.count;
      ingot_ir_stmt_t** out = NULL;
      for (uint32_t i = 0; i < n; ++i) {
        ingot_ir_stmt_t* c = replace_stmt(f, s->u.block.stmts[i], target, replacement);
        if (c != s->u.block.stmts[i] && !out) {
          out = ingot_xmalloc(sizeof(*out) * n);
          memcpy(out, s->u.block.stmts, sizeof(*out) * n);
        }
        if (out) out[i] = c;
      }
      if (!out) return s;
      ingot_ir_stmt_t* r = ingot_ir_block(f, out, n);
      free(out);
      return r;
    }
    case INGOT_IR_STMT_IF: {
      ingot_ir_stmt_t* t = replace_stmt(f, s->u.cond.then_body, target, replacement);
      return t == s->u.cond.then_body ? s : ingot_ir_if(f, s->u.cond.cond, t);
    }
    default:
      return s;
  }
}

ingot_ir_stmt_t* schedule_replace_stmt(ingot_ir_func_t* f, ingot_ir_stmt_t* root, const ingot_ir_stmt_t* target,
                                       ingot_ir_stmt_t* replacement) {
  return replace_stmt(f, root, target, replacement);
}

/* Installs a new body if the loop-kind rules still hold; else keeps the old
 * one (and any variables added are left unused). */
static ingot_status_t commit(ingot_ir_func_t* f, ingot_ir_stmt_t* body, uint32_t old_var_count) {
  ingot_status_t st = check_marks(f, body, false);
  if (st != INGOT_OK) {
    f->var_count = old_var_count;
    return st;
  }
  f->body = body;
  return INGOT_OK;
}

static ingot_status_t check_new_name(const ingot_ir_func_t* f, const char* name) {
  if (!name || !name[0]) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "empty loop name");
  if (ingot_ir_find_var(f, name) != UINT32_MAX)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "the name '%s' is already taken", name);
  return INGOT_OK;
}

/* ---- split ---- */

ingot_status_t ingot_schedule_split(ingot_ir_func_t* f, const char* loop, int64_t factor, const char* outer_name,
                                    const char* inner_name) {
  stmt_vec_t path = {0};
  ingot_status_t st = locate(f, loop, &path);
  ingot_ir_stmt_t* l = st == INGOT_OK ? path.data[path.count - 1] : NULL;
  INGOT_VEC_FREE(path);
  if (st != INGOT_OK) return st;
  if (factor < 1) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "split factor %lld is not positive", (long long)factor);

  char outer_default[128], inner_default[128];
  snprintf(outer_default, sizeof(outer_default), "%s_o", loop);
  snprintf(inner_default, sizeof(inner_default), "%s_i", loop);
  if (!outer_name) outer_name = outer_default;
  if (!inner_name) inner_name = inner_default;
  if ((st = check_new_name(f, outer_name)) != INGOT_OK) return st;
  if ((st = check_new_name(f, inner_name)) != INGOT_OK) return st;
  if (strcmp(outer_name, inner_name) == 0)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "outer and inner loops both named '%s'", outer_name);

  uint32_t old_count = f->var_count;
  int64_t extent = l->u.loop.extent;
  int64_t fi = factor < extent ? factor : extent;
  int64_t fo = (extent + fi - 1) / fi;
  uint32_t vo = ingot_ir_add_var(f, outer_name, INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t vi = ingot_ir_add_var(f, inner_name, INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  ingot_ir_expr_t* value = ingot_ir_add(f, ingot_ir_mul(f, ingot_ir_var(f, vo), ingot_ir_int(f, fi)), ingot_ir_var(f, vi));
  ingot_ir_stmt_t* body = ingot_ir_stmt_substitute(f, l->u.loop.body, l->u.loop.var, value);
  if (extent % fi != 0)
    body = ingot_ir_if(f, ingot_ir_binary(f, INGOT_IR_LT, value, ingot_ir_int(f, extent)), body);
  ingot_ir_stmt_t* inner = ingot_ir_for(f, vi, fi, body);
  ingot_ir_loop_kind_t kind = l->u.loop.loop_kind;
  if (kind == INGOT_IR_LOOP_VECTORIZED || kind == INGOT_IR_LOOP_UNROLLED) inner->u.loop.loop_kind = kind;
  ingot_ir_stmt_t* outer = ingot_ir_for(f, vo, fo, inner);
  if (kind == INGOT_IR_LOOP_PARALLEL) outer->u.loop.loop_kind = kind;
  uint32_t var = l->u.loop.var;
  st = commit(f, replace_stmt(f, f->body, l, outer), old_count);
  if (st == INGOT_OK) ingot_ir_set_var_value(f, var, value);
  return st;
}

/* ---- reorder ---- */

static bool expr_has_load(const ingot_ir_expr_t* e) {
  switch (e->kind) {
    case INGOT_IR_EXPR_LOAD: return true;
    case INGOT_IR_EXPR_UNARY:
    case INGOT_IR_EXPR_CAST: return expr_has_load(e->u.unary.a);
    case INGOT_IR_EXPR_BINARY: return expr_has_load(e->u.binary.a) || expr_has_load(e->u.binary.b);
    case INGOT_IR_EXPR_SELECT:
      return expr_has_load(e->u.select.cond) || expr_has_load(e->u.select.a) || expr_has_load(e->u.select.b);
    default: return false;
  }
}

ingot_status_t ingot_schedule_reorder(ingot_ir_func_t* f, const char* const* order, uint32_t count) {
  if (!order || count == 0) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "reorder of no loops");
  for (uint32_t i = 0; i < count; ++i)
    for (uint32_t j = i + 1; j < count; ++j)
      if (order[i] && order[j] && strcmp(order[i], order[j]) == 0)
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "reorder names loop '%s' twice", order[i]);

  /* The outermost named loop starts the chain. */
  ingot_ir_stmt_t** loops = ingot_xcalloc(count, sizeof(*loops));
  ingot_ir_stmt_t** chain = ingot_xcalloc(count, sizeof(*chain));
  ingot_ir_stmt_t* top = NULL;
  size_t top_depth = SIZE_MAX;
  ingot_status_t st = INGOT_OK;
  stmt_vec_t path = {0};
  for (uint32_t i = 0; i < count && st == INGOT_OK; ++i) {
    st = locate(f, order[i], &path);
    if (st != INGOT_OK) break;
    loops[i] = path.data[path.count - 1];
    if (path.count < top_depth) {
      top_depth = path.count;
      top = loops[i];
    }
  }
  INGOT_VEC_FREE(path);

  /* Walk down from it: every loop on the way must be one of the named ones. */
  INGOT_VEC(ingot_ir_expr_t*) guards = {0};
  uint32_t n = 0;
  ingot_ir_stmt_t* cur = top;
  while (st == INGOT_OK) {
    bool named = false;
    for (uint32_t i = 0; i < count; ++i) named |= loops[i] == cur;
    if (!named) {
      st = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                      "loops are not perfectly nested: loop '%s' lies between the named loops",
                      f->vars[cur->u.loop.var].name);
      break;
    }
    chain[n++] = cur;
    if (n == count) break;
    ingot_ir_stmt_t* next = direct_child(cur->u.loop.body);
    /* Guards (split tails) between the loops sink below them: a condition
     * that reads no buffer means the same wherever it is tested. */
    while (next && next->kind == INGOT_IR_STMT_IF && !expr_has_load(next->u.cond.cond)) {
      INGOT_VEC_PUSH(guards, next->u.cond.cond);
      next = direct_child(next->u.cond.then_body);
    }
    if (!next || next->kind != INGOT_IR_STMT_FOR) {
      st = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                      "loops are not perfectly nested: the body of loop '%s' is not a single loop",
                      f->vars[cur->u.loop.var].name);
      break;
    }
    cur = next;
  }
  if (st == INGOT_OK) {
    ingot_ir_stmt_t* body = chain[count - 1]->u.loop.body;
    for (size_t g = guards.count; g-- > 0;) body = ingot_ir_if(f, guards.data[g], body);
    for (uint32_t i = count; i-- > 0;) body = ingot_ir_for_like(f, loops[i], body);
    st = commit(f, replace_stmt(f, f->body, top, body), f->var_count);
  }
  free(loops);
  free(chain);
  INGOT_VEC_FREE(guards);
  return st;
}

/* ---- fuse ---- */

ingot_status_t ingot_schedule_fuse(ingot_ir_func_t* f, const char* outer, const char* inner, const char* fused_name) {
  stmt_vec_t path = {0};
  ingot_status_t st = locate(f, outer, &path);
  ingot_ir_stmt_t* lo = st == INGOT_OK ? path.data[path.count - 1] : NULL;
  if (st == INGOT_OK) st = locate(f, inner, &path);
  ingot_ir_stmt_t* li = st == INGOT_OK ? path.data[path.count - 1] : NULL;
  INGOT_VEC_FREE(path);
  if (st != INGOT_OK) return st;
  if (direct_child(lo->u.loop.body) != li)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "loop '%s' is not directly inside loop '%s'", inner, outer);

  char fused_default[128];
  snprintf(fused_default, sizeof(fused_default), "%s_%s", outer, inner);
  if (!fused_name) fused_name = fused_default;
  if ((st = check_new_name(f, fused_name)) != INGOT_OK) return st;
  int64_t e1 = lo->u.loop.extent, e2 = li->u.loop.extent;
  if (e1 > INT64_MAX / e2)
    return ingot_fail(INGOT_ERROR_LIMIT, "fusing '%s' and '%s' overflows the extent", outer, inner);

  uint32_t old_count = f->var_count;
  uint32_t v = ingot_ir_add_var(f, fused_name, INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  ingot_ir_expr_t* fv = ingot_ir_var(f, v);
  /* An outer loop of one iteration (n = 1) needs no division. */
  ingot_ir_expr_t* ov = e1 == 1 ? ingot_ir_int(f, 0) : ingot_ir_binary(f, INGOT_IR_DIV, fv, ingot_ir_int(f, e2));
  ingot_ir_expr_t* iv = e1 == 1 ? fv : ingot_ir_binary(f, INGOT_IR_MOD, fv, ingot_ir_int(f, e2));
  ingot_ir_stmt_t* body = ingot_ir_stmt_substitute(f, li->u.loop.body, lo->u.loop.var, ov);
  body = ingot_ir_stmt_substitute(f, body, li->u.loop.var, iv);
  ingot_ir_stmt_t* fused = ingot_ir_for(f, v, e1 * e2, body);
  ingot_ir_loop_kind_t ko = lo->u.loop.loop_kind, ki = li->u.loop.loop_kind;
  if (ko == INGOT_IR_LOOP_PARALLEL || ki == INGOT_IR_LOOP_PARALLEL) fused->u.loop.loop_kind = INGOT_IR_LOOP_PARALLEL;
  else if (ko == ki) fused->u.loop.loop_kind = ko;
  uint32_t vo = lo->u.loop.var, vi = li->u.loop.var;
  st = commit(f, replace_stmt(f, f->body, lo, fused), old_count);
  if (st == INGOT_OK) {
    ingot_ir_set_var_value(f, vo, ov);
    ingot_ir_set_var_value(f, vi, iv);
  }
  return st;
}

/* ---- marks ---- */

ingot_status_t ingot_schedule_mark(ingot_ir_func_t* f, const char* loop, ingot_ir_loop_kind_t kind) {
  if ((int)kind < INGOT_IR_LOOP_SERIAL || kind > INGOT_IR_LOOP_UNROLLED)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "unknown loop kind %d", (int)kind);
  stmt_vec_t path = {0};
  ingot_status_t st = locate(f, loop, &path);
  if (st != INGOT_OK) {
    INGOT_VEC_FREE(path);
    return st;
  }
  ingot_ir_stmt_t* l = path.data[path.count - 1];
  if (kind == INGOT_IR_LOOP_PARALLEL) {
    for (size_t i = 0; i + 1 < path.count; ++i) {
      const ingot_ir_stmt_t* a = path.data[i];
      if (a->kind == INGOT_IR_STMT_FOR && a->u.loop.loop_kind == INGOT_IR_LOOP_PARALLEL) {
        st = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "loop '%s' is inside parallel loop '%s'", loop,
                        f->vars[a->u.loop.var].name);
        break;
      }
    }
    if (st == INGOT_OK && contains_parallel(l->u.loop.body))
      st = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "loop '%s' contains a parallel loop", loop);
  } else if (kind == INGOT_IR_LOOP_VECTORIZED) {
    if (contains_loop(l->u.loop.body))
      st = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "loop '%s' is not innermost (only innermost loops vectorize)",
                      loop);
  } else if (kind == INGOT_IR_LOOP_UNROLLED) {
    if (l->u.loop.extent > UNROLL_MAX_EXTENT)
      st = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "loop '%s' has extent %lld, above %d for full unrolling", loop,
                      (long long)l->u.loop.extent, UNROLL_MAX_EXTENT);
  }
  INGOT_VEC_FREE(path);
  if (st != INGOT_OK) return st;
  ingot_ir_stmt_t* marked = ingot_ir_for_like(f, l, l->u.loop.body);
  marked->u.loop.loop_kind = kind;
  return commit(f, replace_stmt(f, f->body, l, marked), f->var_count);
}

ingot_status_t ingot_schedule_bind(ingot_ir_func_t* f, const char* loop, ingot_ir_loop_kind_t kind, uint32_t axis) {
  if (kind != INGOT_IR_LOOP_GPU_BLOCK && kind != INGOT_IR_LOOP_GPU_THREAD)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bind: kind %d is not a GPU block or thread binding", (int)kind);
  if (axis > 2) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bind %s: axis %u (0 x, 1 y, 2 z)", loop, axis);
  stmt_vec_t path = {0};
  ingot_status_t st = locate(f, loop, &path);
  if (st != INGOT_OK) {
    INGOT_VEC_FREE(path);
    return st;
  }
  ingot_ir_stmt_t* l = path.data[path.count - 1];
  INGOT_VEC_FREE(path);
  ingot_ir_stmt_t* bound = ingot_ir_for_like(f, l, l->u.loop.body);
  bound->u.loop.loop_kind = kind;
  bound->u.loop.gpu_axis = (uint8_t)axis;
  bound->u.loop.lanes = 0;
  ingot_ir_stmt_t* old_body = f->body;
  f->body = replace_stmt(f, f->body, l, bound);
  /* the nesting rules of bound loops are the verifier's (lower/ir.h) */
  if ((st = ingot_ir_verify(f)) != INGOT_OK) {
    f->body = old_body;
    return ingot_fail_prefix(st, "bind %s", loop);
  }
  return INGOT_OK;
}

/* ---- schedules as data ---- */

void ingot_schedule_init(ingot_schedule_t* s) {
  memset(s, 0, sizeof(*s));
  ingot_arena_init(&s->arena, ingot_allocator_system());
}

void ingot_schedule_deinit(ingot_schedule_t* s) {
  if (!s) return;
  ingot_arena_deinit(&s->arena);
  memset(s, 0, sizeof(*s));
}

static const char* copy_str(ingot_schedule_t* s, const char* text) {
  return text ? ingot_arena_strdup(&s->arena, text) : NULL;
}

void ingot_schedule_add(ingot_schedule_t* s, const ingot_directive_t* d) {
  uint32_t n = s->directive_count;
  /* Capacity is implicit: 8, then doubling at each power of two. */
  if (n == 0 || (n >= 8 && (n & (n - 1)) == 0)) {
    ingot_directive_t* grown = INGOT_ARENA_ARRAY(&s->arena, ingot_directive_t, n ? n * 2 : 8);
    if (n) memcpy(grown, s->directives, sizeof(*grown) * n);
    s->directives = grown;
  }
  ingot_directive_t* c = &s->directives[n];
  *c = *d;
  c->loop = copy_str(s, d->loop);
  c->inner = copy_str(s, d->inner);
  c->outer_name = copy_str(s, d->outer_name);
  c->inner_name = copy_str(s, d->inner_name);
  c->order = NULL;
  if (d->order && d->order_count) {
    const char** order = INGOT_ARENA_ARRAY(&s->arena, const char*, d->order_count);
    for (uint32_t i = 0; i < d->order_count; ++i) order[i] = copy_str(s, d->order[i]);
    c->order = order;
  }
  s->directive_count = n + 1;
}

void ingot_schedule_set_knob(ingot_schedule_t* s, const char* name, int64_t value) {
  for (uint32_t i = 0; i < s->knob_count; ++i)
    if (strcmp(s->knob_names[i], name) == 0) {
      s->knob_values[i] = value;
      return;
    }
  if (s->knob_count == INGOT_MAX_KNOBS) return;
  s->knob_names[s->knob_count] = ingot_arena_strdup(&s->arena, name);
  s->knob_values[s->knob_count++] = value;
}

/* ---- accumulate (registers for a reduction's tile) ---- */

#define ACCUMULATE_MAX 64

static bool expr_same(const ingot_ir_expr_t* a, const ingot_ir_expr_t* b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind || a->dtype != b->dtype) return false;
  switch (a->kind) {
    case INGOT_IR_EXPR_INT: return a->u.i == b->u.i;
    case INGOT_IR_EXPR_FLOAT: return a->u.f == b->u.f;
    case INGOT_IR_EXPR_VAR: return a->u.var == b->u.var;
    case INGOT_IR_EXPR_LOAD: return a->u.load.buffer == b->u.load.buffer && expr_same(a->u.load.index, b->u.load.index);
    case INGOT_IR_EXPR_BINARY:
      return a->u.binary.op == b->u.binary.op && expr_same(a->u.binary.a, b->u.binary.a) &&
             expr_same(a->u.binary.b, b->u.binary.b);
    default: return false;
  }
}

static bool expr_loads(const ingot_ir_expr_t* e, uint32_t buf) {
  if (!e) return false;
  switch (e->kind) {
    case INGOT_IR_EXPR_LOAD: return e->u.load.buffer == buf || expr_loads(e->u.load.index, buf);
    case INGOT_IR_EXPR_UNARY:
    case INGOT_IR_EXPR_CAST: return expr_loads(e->u.unary.a, buf);
    case INGOT_IR_EXPR_BINARY: return expr_loads(e->u.binary.a, buf) || expr_loads(e->u.binary.b, buf);
    case INGOT_IR_EXPR_SELECT:
      return expr_loads(e->u.select.cond, buf) || expr_loads(e->u.select.a, buf) || expr_loads(e->u.select.b, buf);
    default: return false;
  }
}

static bool same_layout(const ingot_ir_func_t* f, uint32_t a, uint32_t b) {
  const ingot_ir_buffer_t* x = &f->buffers[a];
  const ingot_ir_buffer_t* y = &f->buffers[b];
  if (x->rank != y->rank || x->dtype != y->dtype) return false;
  for (int32_t i = 0; i < x->rank; ++i)
    if (x->dims[i] != y->dims[i]) return false;
  return true;
}

/* Whether `e` reads nothing but the output `buf` at `idx`, other buffers of
 * its layout at `idx` (a residual), and constants: an epilogue applied to
 * one output element. */
static bool epilogue_only(const ingot_ir_func_t* f, const ingot_ir_expr_t* e, uint32_t buf,
                          const ingot_ir_expr_t* idx) {
  switch (e->kind) {
    case INGOT_IR_EXPR_INT:
    case INGOT_IR_EXPR_FLOAT: return true;
    case INGOT_IR_EXPR_LOAD:
      return expr_same(e->u.load.index, idx) &&
             (e->u.load.buffer == buf ||
              (f->buffers[e->u.load.buffer].role == INGOT_IR_BUFFER_INPUT && same_layout(f, e->u.load.buffer, buf)));
    case INGOT_IR_EXPR_UNARY:
    case INGOT_IR_EXPR_CAST: return epilogue_only(f, e->u.unary.a, buf, idx);
    case INGOT_IR_EXPR_BINARY:
      return epilogue_only(f, e->u.binary.a, buf, idx) && epilogue_only(f, e->u.binary.b, buf, idx);
    case INGOT_IR_EXPR_SELECT:
      return epilogue_only(f, e->u.select.cond, buf, idx) && epilogue_only(f, e->u.select.a, buf, idx) &&
             epilogue_only(f, e->u.select.b, buf, idx);
    default: return false;
  }
}

/* `e` (epilogue_only) at the element `index` of the output: its loads of
 * the output become `value`, its other loads read at `index`. */
static ingot_ir_expr_t* epilogue_apply(ingot_ir_func_t* f, ingot_ir_expr_t* e, uint32_t buf, ingot_ir_expr_t* value,
                                       ingot_ir_expr_t* index) {
  switch (e->kind) {
    case INGOT_IR_EXPR_LOAD: return e->u.load.buffer == buf ? value : ingot_ir_load(f, e->u.load.buffer, index);
    case INGOT_IR_EXPR_UNARY:
      return ingot_ir_unary(f, e->u.unary.op, epilogue_apply(f, e->u.unary.a, buf, value, index));
    case INGOT_IR_EXPR_CAST: return ingot_ir_cast(f, e->dtype, epilogue_apply(f, e->u.unary.a, buf, value, index));
    case INGOT_IR_EXPR_BINARY:
      return ingot_ir_binary(f, e->u.binary.op, epilogue_apply(f, e->u.binary.a, buf, value, index),
                             epilogue_apply(f, e->u.binary.b, buf, value, index));
    case INGOT_IR_EXPR_SELECT:
      return ingot_ir_select(f, epilogue_apply(f, e->u.select.cond, buf, value, index),
                             epilogue_apply(f, e->u.select.a, buf, value, index),
                             epilogue_apply(f, e->u.select.b, buf, value, index));
    default: return e;
  }
}

/* Whether `e` reads `buf` (at any index), input buffers and constants only:
 * the value of an epilogue that stores into another buffer (epilogue_store). */
static bool cross_epilogue_only(const ingot_ir_func_t* f, const ingot_ir_expr_t* e, uint32_t buf) {
  switch (e->kind) {
    case INGOT_IR_EXPR_INT:
    case INGOT_IR_EXPR_FLOAT: return true;
    case INGOT_IR_EXPR_VAR: return f->vars[e->u.var].kind == INGOT_IR_VAR_LOOP;
    case INGOT_IR_EXPR_LOAD:
      return (e->u.load.buffer == buf || f->buffers[e->u.load.buffer].role == INGOT_IR_BUFFER_INPUT) &&
             !expr_loads(e->u.load.index, buf) && cross_epilogue_only(f, e->u.load.index, buf);
    case INGOT_IR_EXPR_UNARY:
    case INGOT_IR_EXPR_CAST: return cross_epilogue_only(f, e->u.unary.a, buf);
    case INGOT_IR_EXPR_BINARY:
      return cross_epilogue_only(f, e->u.binary.a, buf) && cross_epilogue_only(f, e->u.binary.b, buf);
    case INGOT_IR_EXPR_SELECT:
      return cross_epilogue_only(f, e->u.select.cond, buf) && cross_epilogue_only(f, e->u.select.a, buf) &&
             cross_epilogue_only(f, e->u.select.b, buf);
    default: return false;
  }
}

/* The epilogue store at the heart of a FINISH nest `s` over the output
 * `buf`: y[i] = E(y[i]) (the same buffer: an activation, a residual), or
 * z[j] = E(y[..], inputs[..]) into another output z (*cross set; a
 * requantization: int32 sums in y, bytes in z). NULL otherwise. */
static const ingot_ir_stmt_t* epilogue_store(const ingot_ir_func_t* f, const ingot_ir_stmt_t* s, uint32_t buf,
                                             bool* cross) {
  while (s && s->kind == INGOT_IR_STMT_FOR) s = direct_child(s->u.loop.body);
  if (!s || s->kind != INGOT_IR_STMT_STORE) return NULL;
  *cross = s->u.store.buffer != buf;
  if (!*cross) return epilogue_only(f, s->u.store.value, buf, s->u.store.index) ? s : NULL;
  bool ok = f->buffers[s->u.store.buffer].role == INGOT_IR_BUFFER_OUTPUT && expr_loads(s->u.store.value, buf) &&
            cross_epilogue_only(f, s->u.store.value, buf) && !expr_loads(s->u.store.index, buf) &&
            cross_epilogue_only(f, s->u.store.index, buf);
  return ok ? s : NULL;
}

/* The FINISH stage after the nest `stage` in the function body: a perfect
 * nest around an epilogue of the output `buf` (epilogue_store). Its
 * position in the body block goes to *out_pos. */
static const ingot_ir_stmt_t* epilogue_stage(const ingot_ir_func_t* f, const ingot_ir_stmt_t* stage, uint32_t buf,
                                             uint32_t* out_pos, bool* cross) {
  const ingot_ir_stmt_t* body = f->body;
  if (!body || body->kind != INGOT_IR_STMT_BLOCK) return NULL;
  for (uint32_t i = 0; i + 1 < body->u.block.count; ++i) {
    if (body->u.block.stmts[i] != stage) continue;
    const ingot_ir_stmt_t* s = epilogue_store(f, body->u.block.stmts[i + 1], buf, cross);
    if (!s) return NULL;
    *out_pos = i + 1;
    return s;
  }
  return NULL;
}

/* The loop variables the accumulators' final stores may read: those of
 * the loops around the accumulated nest but its reduce loops. */
typedef struct loop_set_t {
  uint32_t vars[4 * INGOT_MAX_STAGE_AXES];
  uint32_t count;
} loop_set_t;

static bool expr_vars_in(const ingot_ir_expr_t* e, const loop_set_t* set) {
  switch (e->kind) {
    case INGOT_IR_EXPR_VAR:
      for (uint32_t i = 0; i < set->count; ++i)
        if (set->vars[i] == e->u.var) return true;
      return false;
    case INGOT_IR_EXPR_LOAD: return expr_vars_in(e->u.load.index, set);
    case INGOT_IR_EXPR_UNARY:
    case INGOT_IR_EXPR_CAST: return expr_vars_in(e->u.unary.a, set);
    case INGOT_IR_EXPR_BINARY: return expr_vars_in(e->u.binary.a, set) && expr_vars_in(e->u.binary.b, set);
    case INGOT_IR_EXPR_SELECT:
      return expr_vars_in(e->u.select.cond, set) && expr_vars_in(e->u.select.a, set) &&
             expr_vars_in(e->u.select.b, set);
    default: return true;
  }
}

/* `e` of a cross epilogue, written in the FINISH stage's loop variables,
 * moved to one accumulator: every variable resolved to the scheduled
 * UPDATE's (ingot_ir_expr_resolve: the FINISH loops alias the UPDATE's,
 * whose rewrites were recorded), the unrolled loops `unr` at `vals`, and
 * the loads of `buf` replaced by `value`. NULL unless every load of `buf`
 * reads the accumulator's own index `ic` and every variable left is one of
 * `loops`. */
static ingot_ir_expr_t* cross_move(ingot_ir_func_t* f, ingot_ir_expr_t* e, uint32_t buf, ingot_ir_expr_t* value,
                                   ingot_ir_expr_t* ic, const loop_set_t* loops) {
  switch (e->kind) {
    case INGOT_IR_EXPR_LOAD:
      if (e->u.load.buffer == buf) return expr_same(e->u.load.index, ic) ? value : NULL;
      return expr_vars_in(e->u.load.index, loops) ? e : NULL;
    case INGOT_IR_EXPR_VAR: return expr_vars_in(e, loops) ? e : NULL;
    case INGOT_IR_EXPR_UNARY: {
      ingot_ir_expr_t* a = cross_move(f, e->u.unary.a, buf, value, ic, loops);
      return a ? ingot_ir_unary(f, e->u.unary.op, a) : NULL;
    }
    case INGOT_IR_EXPR_CAST: {
      ingot_ir_expr_t* a = cross_move(f, e->u.unary.a, buf, value, ic, loops);
      return a ? ingot_ir_cast(f, e->dtype, a) : NULL;
    }
    case INGOT_IR_EXPR_BINARY: {
      ingot_ir_expr_t* a = cross_move(f, e->u.binary.a, buf, value, ic, loops);
      ingot_ir_expr_t* b = a ? cross_move(f, e->u.binary.b, buf, value, ic, loops) : NULL;
      return b ? ingot_ir_binary(f, e->u.binary.op, a, b) : NULL;
    }
    case INGOT_IR_EXPR_SELECT: {
      ingot_ir_expr_t* c = cross_move(f, e->u.select.cond, buf, value, ic, loops);
      ingot_ir_expr_t* a = c ? cross_move(f, e->u.select.a, buf, value, ic, loops) : NULL;
      ingot_ir_expr_t* b = a ? cross_move(f, e->u.select.b, buf, value, ic, loops) : NULL;
      return b ? ingot_ir_select(f, c, a, b) : NULL;
    }
    default: return e;
  }
}

static ingot_ir_expr_t* cross_apply(ingot_ir_func_t* f, ingot_ir_expr_t* e, uint32_t buf, ingot_ir_expr_t* value,
                                    ingot_ir_expr_t* ic, const ingot_ir_stmt_t* const* unr, const int64_t* vals,
                                    uint32_t nunr, const loop_set_t* loops) {
  e = ingot_ir_expr_resolve(f, e);
  for (uint32_t u = 0; u < nunr; ++u) e = ingot_ir_expr_substitute(f, e, unr[u]->u.loop.var, ingot_ir_int(f, vals[u]));
  return cross_move(f, e, buf, value, ic, loops);
}

/* The final store of accumulator `acc` (of y[ic]) with a cross epilogue
 * `finish` (z[j] = E(y[..])): z[j'] = E(acc), j' and E moved by
 * cross_apply. With `last` (the final step of loops around that repeat the
 * reduction), y[ic] = acc always (the next steps start from it) and the
 * epilogue's store only under `last`. NULL when the epilogue cannot move. */
static ingot_ir_stmt_t* cross_store(ingot_ir_func_t* f, const ingot_ir_stmt_t* finish, uint32_t buf,
                                    ingot_ir_expr_t* acc, ingot_ir_expr_t* ic, const ingot_ir_stmt_t* const* unr,
                                    const int64_t* vals, uint32_t nunr, const loop_set_t* loops,
                                    ingot_ir_expr_t* last) {
  ingot_ir_expr_t* v = cross_apply(f, finish->u.store.value, buf, acc, ic, unr, vals, nunr, loops);
  ingot_ir_expr_t* j = v ? cross_apply(f, finish->u.store.index, buf, acc, ic, unr, vals, nunr, loops) : NULL;
  if (!j) return NULL;
  ingot_ir_stmt_t* z = ingot_ir_store(f, finish->u.store.buffer, j, v);
  if (!last) return z;
  ingot_ir_stmt_t* both[2] = {ingot_ir_store(f, buf, ic, acc), ingot_ir_if(f, last, z)};
  return ingot_ir_block(f, both, 2);
}

static const ingot_ir_stmt_t* nest_store(const ingot_ir_stmt_t* s) {
  while (s && s->kind == INGOT_IR_STMT_FOR) s = direct_child(s->u.loop.body);
  return s && s->kind == INGOT_IR_STMT_STORE ? s : NULL;
}

bool ingot_schedule_nest_accumulates(const ingot_ir_stmt_t* nest) {
  const ingot_ir_stmt_t* s = nest_store(nest);
  if (!s) return false;
  const ingot_ir_expr_t* v = s->u.store.value;
  uint32_t buf = s->u.store.buffer;
  if (v->kind != INGOT_IR_EXPR_BINARY ||
      (v->u.binary.op != INGOT_IR_ADD && v->u.binary.op != INGOT_IR_MAX && v->u.binary.op != INGOT_IR_MIN))
    return false;
  const ingot_ir_expr_t* start = v->u.binary.a;
  if (start->kind == INGOT_IR_EXPR_SELECT) {
    if (expr_loads(start->u.select.a, buf) || expr_loads(start->u.select.cond, buf)) return false;
    start = start->u.select.b;
  }
  return start->kind == INGOT_IR_EXPR_LOAD && start->u.load.buffer == buf &&
         expr_same(start->u.load.index, s->u.store.index) && !expr_loads(v->u.binary.b, buf);
}

uint32_t ingot_schedule_nest_store_buffer(const ingot_ir_stmt_t* nest) {
  const ingot_ir_stmt_t* s = nest_store(nest);
  return s ? s->u.store.buffer : UINT32_MAX;
}

/* The one OUTPUT buffer `e` loads (UINT32_MAX: none or several). */
static uint32_t loaded_output(const ingot_ir_func_t* f, const ingot_ir_expr_t* e, uint32_t found) {
  switch (e->kind) {
    case INGOT_IR_EXPR_LOAD: {
      uint32_t b = e->u.load.buffer;
      if (f->buffers[b].role == INGOT_IR_BUFFER_OUTPUT) {
        if (found != UINT32_MAX - 1 && found != b) return UINT32_MAX;
        found = b;
      }
      return loaded_output(f, e->u.load.index, found);
    }
    case INGOT_IR_EXPR_UNARY:
    case INGOT_IR_EXPR_CAST: return loaded_output(f, e->u.unary.a, found);
    case INGOT_IR_EXPR_BINARY: {
      uint32_t a = loaded_output(f, e->u.binary.a, found);
      return a == UINT32_MAX ? a : loaded_output(f, e->u.binary.b, a);
    }
    case INGOT_IR_EXPR_SELECT: {
      uint32_t c = loaded_output(f, e->u.select.cond, found);
      uint32_t a = c == UINT32_MAX ? c : loaded_output(f, e->u.select.a, c);
      return a == UINT32_MAX ? a : loaded_output(f, e->u.select.b, a);
    }
    default: return found;
  }
}

bool ingot_schedule_is_epilogue(const ingot_ir_func_t* f, const ingot_ir_stmt_t* nest, uint32_t* out_buffer) {
  const ingot_ir_stmt_t* s = nest_store(nest);
  if (!s) return false;
  /* y[i] = E(y[i]), or z[j] = E(y[..]) reading one output y */
  uint32_t y = loaded_output(f, s->u.store.value, UINT32_MAX - 1);
  if (y == UINT32_MAX || y == UINT32_MAX - 1) y = s->u.store.buffer;
  bool cross;
  if (!epilogue_store(f, s, y, &cross)) return false;
  *out_buffer = y;
  return true;
}

/* Removes statement `pos` of the body block. */
static void drop_body_stmt(ingot_ir_func_t* f, uint32_t pos) {
  ingot_ir_stmt_t* body = f->body;
  uint32_t n = body->u.block.count;
  ingot_ir_stmt_t** kept = ingot_xmalloc(sizeof(*kept) * n);
  uint32_t k = 0;
  for (uint32_t i = 0; i < n; ++i)
    if (i != pos) kept[k++] = body->u.block.stmts[i];
  f->body = ingot_ir_block(f, kept, k);
  free(kept);
}

#define CONJUNCTS_MAX (2 * INGOT_MAX_STAGE_AXES + 4)

/* The terms of `cond`'s tree of ANDs, at most CONJUNCTS_MAX (else 0). */
static uint32_t conjuncts(const ingot_ir_expr_t* cond, const ingot_ir_expr_t** out) {
  const ingot_ir_expr_t* stack[CONJUNCTS_MAX];
  uint32_t depth = 0, n = 0;
  stack[depth++] = cond;
  while (depth) {
    const ingot_ir_expr_t* e = stack[--depth];
    if (e->kind == INGOT_IR_EXPR_BINARY && e->u.binary.op == INGOT_IR_AND) {
      if (depth + 2 > CONJUNCTS_MAX) return 0;
      stack[depth++] = e->u.binary.a;
      stack[depth++] = e->u.binary.b;
    } else {
      if (n == CONJUNCTS_MAX) return 0;
      out[n++] = e;
    }
  }
  return n;
}

/* Whether `e` is (a == 0). */
static bool is_eq_zero(const ingot_ir_expr_t* e) {
  return e->kind == INGOT_IR_EXPR_BINARY && e->u.binary.op == INGOT_IR_EQ && e->u.binary.b->kind == INGOT_IR_EXPR_INT &&
         e->u.binary.b->u.i == 0;
}

/* Whether `cond` is (v == 0) && .. for exactly the loop vars of `loops`
 * (each once, any order): true only on the first step of those loops. */
static bool is_first_step(const ingot_ir_expr_t* cond, const ingot_ir_stmt_t* const* loops, uint32_t count) {
  const ingot_ir_expr_t* terms[CONJUNCTS_MAX];
  uint32_t n = conjuncts(cond, terms), seen = 0;
  bool hit[2 * INGOT_MAX_STAGE_AXES] = {false};
  for (uint32_t t = 0; t < n; ++t) {
    const ingot_ir_expr_t* e = terms[t];
    if (!is_eq_zero(e) || e->u.binary.a->kind != INGOT_IR_EXPR_VAR) return false;
    uint32_t k = 0;
    while (k < count && loops[k]->u.loop.var != e->u.binary.a->u.var) ++k;
    if (k == count || hit[k]) return false;
    hit[k] = true;
    ++seen;
  }
  return n > 0 && seen == count;
}

/* The store under a chain of guards (NULL if something else is there). */
static const ingot_ir_stmt_t* guard_store(const ingot_ir_stmt_t* s) {
  while (s && s->kind == INGOT_IR_STMT_IF) s = direct_child(s->u.cond.then_body);
  return s && s->kind == INGOT_IR_STMT_STORE ? s : NULL;
}

/* Whether some variable that `e` reads is read by the index of `store`. */
static bool expr_reads_index_var(const ingot_ir_expr_t* e, const ingot_ir_stmt_t* store) {
  if (!e) return false;
  switch (e->kind) {
    case INGOT_IR_EXPR_VAR: return ingot_ir_expr_uses_var(store->u.store.index, e->u.var);
    case INGOT_IR_EXPR_LOAD: return expr_reads_index_var(e->u.load.index, store);
    case INGOT_IR_EXPR_UNARY:
    case INGOT_IR_EXPR_CAST: return expr_reads_index_var(e->u.unary.a, store);
    case INGOT_IR_EXPR_BINARY: return expr_reads_index_var(e->u.binary.a, store) || expr_reads_index_var(e->u.binary.b, store);
    case INGOT_IR_EXPR_SELECT:
      return expr_reads_index_var(e->u.select.cond, store) || expr_reads_index_var(e->u.select.a, store) ||
             expr_reads_index_var(e->u.select.b, store);
    default: return false;
  }
}

static bool expr_uses_loops(const ingot_ir_expr_t* e, const ingot_ir_stmt_t* const* loops, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i)
    if (ingot_ir_expr_uses_var(e, loops[i]->u.loop.var)) return true;
  return false;
}

static ingot_ir_expr_t* and_expr(ingot_ir_func_t* f, ingot_ir_expr_t* a, ingot_ir_expr_t* b) {
  return a ? ingot_ir_binary(f, INGOT_IR_AND, a, b) : b;
}

/* The store of an accumulation nest, y[i] = y[i] op e or y[i] =
 * select(first, init, y[i]) op e (lower_update_start), op one of add, max,
 * min: what ingot_schedule_accumulate_ex's rewrites need. */
typedef struct accum_t {
  ingot_ir_binary_op_t op;
  ingot_ir_expr_t* idx; /* i */
  uint32_t buf;         /* y */
  ingot_ir_expr_t* e;
  ingot_ir_expr_t *first, *init; /* NULL without the select */
  bool starts_at_init;
  int64_t combos; /* accumulators: the product of the unrolled extents */
} accum_t;

static ingot_status_t accum_match(const ingot_ir_func_t* f, const char* name, const ingot_ir_stmt_t* store,
                                  const ingot_ir_stmt_t* const* red, uint32_t nred, const ingot_ir_stmt_t* const* unr,
                                  uint32_t nunr, accum_t* out) {
  const ingot_ir_expr_t* v = store->u.store.value;
  ingot_ir_expr_t* idx = store->u.store.index;
  uint32_t buf = store->u.store.buffer;
  bool combines = v && v->kind == INGOT_IR_EXPR_BINARY &&
                  (v->u.binary.op == INGOT_IR_ADD || v->u.binary.op == INGOT_IR_MAX || v->u.binary.op == INGOT_IR_MIN);
  const ingot_ir_expr_t* start = combines ? v->u.binary.a : NULL;
  ingot_ir_expr_t* first = NULL;
  ingot_ir_expr_t* init = NULL;
  if (start && start->kind == INGOT_IR_EXPR_SELECT) {
    first = start->u.select.cond;
    init = start->u.select.a;
    start = start->u.select.b;
    if (expr_loads(init, buf) || expr_loads(first, buf))
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "accumulate '%s': the start value reads the output", name);
  }
  if (!start || start->kind != INGOT_IR_EXPR_LOAD || start->u.load.buffer != buf ||
      !expr_same(start->u.load.index, idx))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "accumulate '%s': the store is not y[i] = y[i] op e", name);
  /* The accumulators start at init when `first` holds exactly on the first
   * step of the nest's reduce loops (each reduce loop var == 0); otherwise
   * they start at y[i] and keep the select. */
  bool starts_at_init = first && is_first_step(first, red, nred);
  ingot_ir_expr_t* e = v->u.binary.b;
  for (uint32_t i = 0; i < nred; ++i)
    if (ingot_ir_expr_uses_var(idx, red[i]->u.loop.var))
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "accumulate '%s': the store index moves with '%s'", name,
                        f->vars[red[i]->u.loop.var].name);
  /* e must not read the output: the accumulators would hide its updates. */
  if (expr_loads(e, buf))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "accumulate '%s': the update reads the output", name);
  int64_t combos = 1;
  for (uint32_t i = 0; i < nunr; ++i) {
    combos *= unr[i]->u.loop.extent;
    if (combos > ACCUMULATE_MAX)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "accumulate '%s': more than %d accumulators", name,
                        ACCUMULATE_MAX);
  }
  *out = (accum_t){.op = v->u.binary.op,
                   .idx = idx,
                   .buf = buf,
                   .e = e,
                   .first = first,
                   .init = init,
                   .starts_at_init = starts_at_init,
                   .combos = combos};
  return INGOT_OK;
}

/* Collects the variables of `e` when it is a sum of loop variables with
 * positive coefficients (v, v * c, c * v, a + b), which is 0 exactly when
 * every one of them is (loop variables count up from 0). */
static bool sum_of_vars(const ingot_ir_func_t* f, const ingot_ir_expr_t* e, uint32_t* vars, uint32_t* n) {
  if (e->kind == INGOT_IR_EXPR_VAR) {
    if (e->u.var >= f->var_count || f->vars[e->u.var].kind != INGOT_IR_VAR_LOOP || *n == 2 * INGOT_MAX_STAGE_AXES)
      return false;
    vars[(*n)++] = e->u.var;
    return true;
  }
  if (e->kind != INGOT_IR_EXPR_BINARY) return false;
  const ingot_ir_expr_t *a = e->u.binary.a, *b = e->u.binary.b;
  if (e->u.binary.op == INGOT_IR_ADD) return sum_of_vars(f, a, vars, n) && sum_of_vars(f, b, vars, n);
  if (e->u.binary.op != INGOT_IR_MUL) return false;
  if (b->kind == INGOT_IR_EXPR_INT && b->u.i > 0) return sum_of_vars(f, a, vars, n);
  if (a->kind == INGOT_IR_EXPR_INT && a->u.i > 0) return sum_of_vars(f, b, vars, n);
  return false;
}

/* A reduction split into cache blocks (k_block) with the block loop outside
 * the accumulated nest: `first` is (s == 0) && .. with each s a sum of loop
 * variables, true exactly on the first step of the nest's reduce loops `red`
 * and of the block loops outside it. Gives the first block's test (every
 * outside variable 0) and the last block's (every one at its last value);
 * false when `first` has another form or reads no variable from outside. */
static bool split_first(ingot_ir_func_t* f, const ingot_ir_expr_t* first, const ingot_ir_stmt_t* const* red,
                        uint32_t nred, ingot_ir_expr_t** out_first, ingot_ir_expr_t** out_last) {
  const ingot_ir_expr_t* terms[CONJUNCTS_MAX];
  uint32_t count = conjuncts(first, terms), vars[2 * INGOT_MAX_STAGE_AXES], n = 0;
  if (!count) return false;
  for (uint32_t t = 0; t < count; ++t)
    if (!is_eq_zero(terms[t]) || !sum_of_vars(f, terms[t]->u.binary.a, vars, &n)) return false;
  ingot_ir_expr_t *at_first = NULL, *at_last = NULL;
  for (uint32_t i = 0; i < nred; ++i) {
    bool found = false;
    for (uint32_t j = 0; j < n && !found; ++j) found = vars[j] == red[i]->u.loop.var;
    if (!found) return false;
  }
  for (uint32_t j = 0; j < n; ++j) {
    bool inside = false, repeated = false;
    for (uint32_t i = 0; i < nred && !inside; ++i) inside = vars[j] == red[i]->u.loop.var;
    for (uint32_t i = 0; i < j && !repeated; ++i) repeated = vars[i] == vars[j];
    if (inside || repeated) continue;
    const ingot_ir_stmt_t* loop = ingot_schedule_find_loop(f, f->vars[vars[j]].name);
    if (!loop) return false;
    ingot_ir_expr_t* v = ingot_ir_var(f, vars[j]);
    at_first = and_expr(f, at_first, ingot_ir_binary(f, INGOT_IR_EQ, v, ingot_ir_int(f, 0)));
    at_last = and_expr(f, at_last, ingot_ir_binary(f, INGOT_IR_EQ, v, ingot_ir_int(f, loop->u.loop.extent - 1)));
  }
  if (!at_first) return false;
  *out_first = at_first;
  *out_last = at_last;
  return true;
}

/* The loops around loop `name`'s statement (not it, nor those inside),
 * plus `extra` when given: where the accumulators' final stores go. */
static bool enclosing_loops(ingot_ir_func_t* f, const char* name, const ingot_ir_stmt_t* extra, loop_set_t* out) {
  stmt_vec_t path = {0};
  out->count = 0;
  bool ok = locate(f, name, &path) == INGOT_OK;
  for (size_t i = 0; ok && i + 1 < path.count; ++i) {
    if (path.data[i]->kind != INGOT_IR_STMT_FOR) continue;
    if (out->count == 4 * INGOT_MAX_STAGE_AXES) ok = false;
    else out->vars[out->count++] = path.data[i]->u.loop.var;
  }
  INGOT_VEC_FREE(path);
  if (ok && extra) {
    if (out->count == 4 * INGOT_MAX_STAGE_AXES) return false;
    out->vars[out->count++] = extra->u.loop.var;
  }
  return ok;
}

#define GUARDS_MAX 16

/* ingot_schedule_accumulate_ex on a nest without a vectorized loop: the
 * unrolled loops hold guards (IFs) and the store (see schedule.h). */
static ingot_status_t accumulate_guarded(ingot_ir_func_t* f, const char* name, ingot_ir_stmt_t* top,
                                         const ingot_ir_stmt_t* const* red, uint32_t nred,
                                         const ingot_ir_stmt_t* const* unr, uint32_t nunr, const ingot_ir_stmt_t* s,
                                         const ingot_ir_stmt_t* stage_root, bool epilogue) {
  ingot_ir_expr_t* guards[GUARDS_MAX];
  bool spatial[GUARDS_MAX];
  uint32_t ng = 0;
  while (s && s->kind == INGOT_IR_STMT_IF) {
    if (ng == GUARDS_MAX || expr_has_load(s->u.cond.cond))
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "accumulate '%s': a guard reads memory (or more than %d guards)",
                        name, GUARDS_MAX);
    bool uses_red = expr_uses_loops(s->u.cond.cond, red, nred);
    const ingot_ir_stmt_t* store = guard_store(s);
    if (!store)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                        "accumulate '%s': the unrolled loops hold more than guards and one store", name);
    if (uses_red && expr_reads_index_var(s->u.cond.cond, store))
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                        "accumulate '%s': a guard reads both a reduce loop and a variable of the store index", name);
    spatial[ng] = !uses_red;
    guards[ng++] = s->u.cond.cond;
    s = direct_child(s->u.cond.then_body);
  }
  if (!s || s->kind != INGOT_IR_STMT_STORE)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "accumulate '%s': the unrolled loops hold more than guards and one store",
                      name);
  accum_t match;
  ingot_status_t mst = accum_match(f, name, s, red, nred, unr, nunr, &match);
  if (mst != INGOT_OK) return mst;
  ingot_ir_expr_t *idx = match.idx, *e = match.e, *first = match.first, *init = match.init;
  uint32_t buf = match.buf;
  bool starts_at_init = match.starts_at_init;
  int64_t combos = match.combos;
  const ingot_ir_stmt_t* finish = NULL;
  uint32_t finish_pos = 0;
  bool cross = false;
  if (epilogue && !(finish = epilogue_stage(f, stage_root, buf, &finish_pos, &cross)))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                      "accumulate '%s': no FINISH stage y[i] = E(y[i]) follows the nest to fold", name);
  loop_set_t loops;
  if (cross && !enclosing_loops(f, name, NULL, &loops)) finish = NULL;
  /* The last iteration of the loops around that repeat the reduction. */
  ingot_ir_expr_t* last = NULL;
  if (finish) {
    stmt_vec_t path = {0};
    ingot_status_t st = locate(f, name, &path);
    bool inside = false;
    for (size_t i = 0; st == INGOT_OK && i + 1 < path.count; ++i) {
      const ingot_ir_stmt_t* a = path.data[i];
      inside |= a == stage_root;
      if (!inside || a->kind != INGOT_IR_STMT_FOR || a->u.loop.extent == 1 || ingot_ir_expr_uses_var(idx, a->u.loop.var))
        continue;
      last = and_expr(f, last, ingot_ir_binary(f, INGOT_IR_EQ, ingot_ir_var(f, a->u.loop.var),
                                               ingot_ir_int(f, a->u.loop.extent - 1)));
    }
    INGOT_VEC_FREE(path);
    if (st != INGOT_OK) return st;
  }
  ingot_dtype_t dt = f->buffers[buf].dtype;
  bool is_float = dt == INGOT_DTYPE_F32 || dt == INGOT_DTYPE_F64 || dt == INGOT_DTYPE_F16;
  ingot_ir_expr_t* zero = is_float ? ingot_ir_float(f, dt, 0.0) : ingot_ir_cast(f, dt, ingot_ir_int(f, 0));
  INGOT_VEC(ingot_ir_stmt_t*) pre = {0};
  INGOT_VEC(ingot_ir_stmt_t*) mid = {0};
  INGOT_VEC(ingot_ir_stmt_t*) post = {0};
  INGOT_VEC(ingot_ir_stmt_t*) plain = {0}; /* the stores without a cross epilogue */
  for (int64_t c = 0; c < combos; ++c) {
    ingot_ir_expr_t* ic = idx;
    ingot_ir_expr_t* ec = e;
    ingot_ir_expr_t* initc = init;
    ingot_ir_expr_t* firstc = first;
    ingot_ir_expr_t* gc[GUARDS_MAX];
    for (uint32_t g = 0; g < ng; ++g) gc[g] = guards[g];
    int64_t rest = c, vals[8];
    for (int32_t u = (int32_t)nunr - 1; u >= 0; --u) {
      int64_t val = rest % unr[u]->u.loop.extent;
      vals[u] = val;
      rest /= unr[u]->u.loop.extent;
      ingot_ir_expr_t* value = ingot_ir_int(f, val);
      uint32_t uv = unr[u]->u.loop.var;
      ic = ingot_ir_expr_substitute(f, ic, uv, value);
      ec = ingot_ir_expr_substitute(f, ec, uv, value);
      if (init) {
        initc = ingot_ir_expr_substitute(f, initc, uv, value);
        firstc = ingot_ir_expr_substitute(f, firstc, uv, value);
      }
      for (uint32_t g = 0; g < ng; ++g) gc[g] = ingot_ir_expr_substitute(f, gc[g], uv, value);
    }
    ingot_ir_expr_t* gs = NULL;
    for (uint32_t g = 0; g < ng; ++g)
      if (spatial[g]) gs = and_expr(f, gs, gc[g]);
    char nm[32];
    snprintf(nm, sizeof(nm), "acc%lld", (long long)c);
    uint32_t var = ingot_ir_add_var(f, nm, INGOT_IR_VAR_LOCAL, dt);
    ingot_ir_expr_t* startc = starts_at_init ? initc : ingot_ir_load(f, buf, ic);
    if (gs) {
      INGOT_VEC_PUSH(pre, ingot_ir_local(f, var, zero));
      INGOT_VEC_PUSH(pre, ingot_ir_if(f, gs, ingot_ir_assign(f, var, startc)));
    } else {
      INGOT_VEC_PUSH(pre, ingot_ir_local(f, var, startc));
    }
    ingot_ir_expr_t* acc = ingot_ir_var(f, var);
    if (init && !starts_at_init) acc = ingot_ir_select(f, firstc, initc, acc);
    ingot_ir_stmt_t* step = ingot_ir_assign(f, var, ingot_ir_binary(f, match.op, acc, ec));
    for (uint32_t g = ng; g-- > 0;) step = ingot_ir_if(f, gc[g], step);
    INGOT_VEC_PUSH(mid, step);
    ingot_ir_expr_t* result = ingot_ir_var(f, var);
    ingot_ir_stmt_t* out = NULL;
    if (cross) {
      ingot_ir_stmt_t* p0 = ingot_ir_store(f, buf, ic, result);
      INGOT_VEC_PUSH(plain, gs ? ingot_ir_if(f, gs, p0) : p0);
    }
    if (finish && cross) {
      if (!(out = cross_store(f, finish, buf, result, ic, unr, vals, nunr, &loops, last))) finish = NULL;
    } else if (finish) {
      ingot_ir_expr_t* fin = epilogue_apply(f, finish->u.store.value, buf, result, ic);
      result = last ? ingot_ir_select(f, last, fin, result) : fin;
    }
    if (!out) out = ingot_ir_store(f, buf, ic, result);
    INGOT_VEC_PUSH(post, gs ? ingot_ir_if(f, gs, out) : out);
  }
  /* A cross epilogue that cannot move: plain stores, the FINISH stays. */
  if (cross && !finish && plain.count == post.count)
    for (size_t i = 0; i < post.count; ++i) post.data[i] = plain.data[i];
  INGOT_VEC_FREE(plain);
  ingot_ir_stmt_t* nest = ingot_ir_block(f, mid.data, (uint32_t)mid.count);
  for (int32_t i = (int32_t)nred - 1; i >= 0; --i) nest = ingot_ir_for_like(f, red[i], nest);
  INGOT_VEC_PUSH(pre, nest);
  for (size_t i = 0; i < post.count; ++i) INGOT_VEC_PUSH(pre, post.data[i]);
  ingot_ir_stmt_t* body = ingot_ir_block(f, pre.data, (uint32_t)pre.count);
  INGOT_VEC_FREE(pre);
  INGOT_VEC_FREE(mid);
  INGOT_VEC_FREE(post);
  f->body = replace_stmt(f, f->body, top, body);
  if (finish) drop_body_stmt(f, finish_pos);
  return INGOT_OK;
}

ingot_status_t ingot_schedule_accumulate(ingot_ir_func_t* f, const char* name) {
  return ingot_schedule_accumulate_ex(f, name, false);
}

ingot_status_t ingot_schedule_accumulate_ex(ingot_ir_func_t* f, const char* name, bool epilogue) {
  if (!f) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "accumulate: no function");
  stmt_vec_t path = {0};
  ingot_status_t st = locate(f, name, &path);
  if (st != INGOT_OK) {
    INGOT_VEC_FREE(path);
    return st;
  }
  ingot_ir_stmt_t* top = path.data[path.count - 1];
  /* The stage nest holding the loop: its ancestor directly in the body block. */
  const ingot_ir_stmt_t* stage_root = NULL;
  if (f->body && f->body->kind == INGOT_IR_STMT_BLOCK)
    for (size_t i = 0; i < path.count && !stage_root; ++i)
      for (uint32_t j = 0; j < f->body->u.block.count; ++j)
        if (f->body->u.block.stmts[j] == path.data[i]) stage_root = path.data[i];
  INGOT_VEC_FREE(path);
  const ingot_ir_stmt_t* red[INGOT_MAX_STAGE_AXES * 2];
  const ingot_ir_stmt_t* unr[8];
  uint32_t nred = 0, nunr = 0;
  ingot_ir_stmt_t* s = top;
  while (s && s->kind == INGOT_IR_STMT_FOR && s->u.loop.loop_kind == INGOT_IR_LOOP_SERIAL) {
    if (nred == INGOT_MAX_STAGE_AXES * 2) break;
    red[nred++] = s;
    s = direct_child(s->u.loop.body);
  }
  while (s && s->kind == INGOT_IR_STMT_FOR && s->u.loop.loop_kind == INGOT_IR_LOOP_UNROLLED && nunr < 8) {
    unr[nunr++] = s;
    s = direct_child(s->u.loop.body);
  }
  if (nred > 0 && s && (s->kind == INGOT_IR_STMT_IF || s->kind == INGOT_IR_STMT_STORE))
    return accumulate_guarded(f, name, top, red, nred, unr, nunr, s, stage_root, epilogue);
  if (nred == 0 || !s || s->kind != INGOT_IR_STMT_FOR || s->u.loop.loop_kind != INGOT_IR_LOOP_VECTORIZED)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                      "accumulate '%s': not serial loops, unrolled loops, then a vectorized loop", name);
  const ingot_ir_stmt_t* vloop = s;
  const ingot_ir_stmt_t* store = direct_child(vloop->u.loop.body);
  if (!store || store->kind != INGOT_IR_STMT_STORE)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "accumulate '%s': the vectorized loop is not one store", name);
  accum_t match;
  ingot_status_t mst = accum_match(f, name, store, red, nred, unr, nunr, &match);
  if (mst != INGOT_OK) return mst;
  ingot_ir_expr_t *idx = match.idx, *e = match.e, *first = match.first, *init = match.init;
  uint32_t buf = match.buf;
  bool starts_at_init = match.starts_at_init;
  int64_t combos = match.combos;
  ingot_dtype_t dt = f->buffers[buf].dtype;
  /* A reduction in cache blocks: the accumulators start at init in the first
   * block and at y[i] in the others; a folded epilogue applies after the last. */
  ingot_ir_expr_t *block_first = NULL, *block_last = NULL;
  if (first && !starts_at_init) split_first(f, first, red, nred, &block_first, &block_last);
  uint32_t old_vars = f->var_count;
  /* With the epilogue: the FINISH stage right after this nest is folded into
   * the final stores, y[i] = E(acc), and dropped. The nest must be all of
   * the UPDATE (every output stored once, after its whole reduction). */
  const ingot_ir_stmt_t* finish = NULL;
  uint32_t finish_pos = 0;
  bool cross = false;
  if (epilogue && !(finish = epilogue_stage(f, stage_root, buf, &finish_pos, &cross)))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                      "accumulate '%s': no FINISH stage y[i] = E(y[i]) follows the nest to fold", name);
  loop_set_t loops;
  if (cross && !enclosing_loops(f, name, vloop, &loops)) finish = NULL;
  ingot_ir_stmt_t** plain = ingot_xmalloc(sizeof(*plain) * (size_t)combos);
  ingot_ir_stmt_t** pre = ingot_xmalloc(sizeof(*pre) * (size_t)combos);
  ingot_ir_stmt_t** mid = ingot_xmalloc(sizeof(*mid) * (size_t)combos);
  ingot_ir_stmt_t** post = ingot_xmalloc(sizeof(*post) * (size_t)combos);
  for (int64_t c = 0; c < combos; ++c) {
    ingot_ir_expr_t* ic = idx;
    ingot_ir_expr_t* ec = e;
    ingot_ir_expr_t* initc = init;
    ingot_ir_expr_t* firstc = first;
    int64_t rest = c, vals[8];
    for (int32_t u = (int32_t)nunr - 1; u >= 0; --u) {
      int64_t val = rest % unr[u]->u.loop.extent;
      vals[u] = val;
      rest /= unr[u]->u.loop.extent;
      ingot_ir_expr_t* value = ingot_ir_int(f, val);
      ic = ingot_ir_expr_substitute(f, ic, unr[u]->u.loop.var, value);
      ec = ingot_ir_expr_substitute(f, ec, unr[u]->u.loop.var, value);
      if (init) {
        initc = ingot_ir_expr_substitute(f, initc, unr[u]->u.loop.var, value);
        firstc = ingot_ir_expr_substitute(f, firstc, unr[u]->u.loop.var, value);
      }
    }
    char nm[32];
    snprintf(nm, sizeof(nm), "acc%lld", (long long)c);
    uint32_t var = ingot_ir_add_var(f, nm, INGOT_IR_VAR_LOCAL, dt);
    ingot_ir_expr_t* acc = ingot_ir_var(f, var);
    ingot_ir_expr_t* start = starts_at_init ? initc : ingot_ir_load(f, buf, ic);
    if (block_first) start = ingot_ir_select(f, block_first, initc, start);
    pre[c] = ingot_ir_local(f, var, start);
    if (init && !starts_at_init && !block_first) acc = ingot_ir_select(f, firstc, initc, acc);
    mid[c] = ingot_ir_assign(f, var, ingot_ir_binary(f, match.op, acc, ec));
    ingot_ir_expr_t* result = ingot_ir_var(f, var);
    plain[c] = ingot_ir_store(f, buf, ic, result);
    post[c] = NULL;
    if (finish && cross) {
      if (!(post[c] = cross_store(f, finish, buf, result, ic, unr, vals, nunr, &loops, block_last))) finish = NULL;
    } else if (finish) {
      result = epilogue_apply(f, finish->u.store.value, buf, result, ic);
      if (block_last) result = ingot_ir_select(f, block_last, result, ingot_ir_var(f, var));
    }
    if (!post[c]) post[c] = ingot_ir_store(f, buf, ic, result);
  }
  /* A cross epilogue that cannot move: plain stores, the FINISH stays. */
  if (cross && !finish) memcpy(post, plain, sizeof(*post) * (size_t)combos);
  free(plain);
  ingot_ir_stmt_t* nest = ingot_ir_block(f, mid, (uint32_t)combos);
  for (int32_t i = (int32_t)nred - 1; i >= 0; --i) nest = ingot_ir_for_like(f, red[i], nest);
  ingot_ir_stmt_t** all = ingot_xmalloc(sizeof(*all) * (size_t)(2 * combos + 1));
  memcpy(all, pre, sizeof(*all) * (size_t)combos);
  all[combos] = nest;
  memcpy(all + combos + 1, post, sizeof(*all) * (size_t)combos);
  ingot_ir_stmt_t* body = ingot_ir_block(f, all, (uint32_t)(2 * combos + 1));
  ingot_ir_stmt_t* outer = ingot_ir_for_like(f, vloop, body);
  free(pre);
  free(mid);
  free(post);
  free(all);
  ingot_ir_stmt_t* nb = replace_stmt(f, f->body, top, outer);
  (void)old_vars;
  f->body = nb;
  if (finish) drop_body_stmt(f, finish_pos);
  return INGOT_OK;
}

/* ---- GPU: barriers and reductions shared by a block's threads ---- */

/* The position in the body block of the statement holding `path`'s loop. */
static bool stage_position(const ingot_ir_func_t* f, const stmt_vec_t* path, uint32_t* out_pos) {
  if (!f->body || f->body->kind != INGOT_IR_STMT_BLOCK) return false;
  for (size_t i = 0; i < path->count; ++i)
    for (uint32_t j = 0; j < f->body->u.block.count; ++j)
      if (f->body->u.block.stmts[j] == path->data[i]) {
        *out_pos = j;
        return true;
      }
  return false;
}

ingot_status_t ingot_schedule_barrier_after(ingot_ir_func_t* f, const char* loop) {
  if (!f) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "barrier: no function");
  stmt_vec_t path = {0};
  ingot_status_t st = locate(f, loop, &path);
  uint32_t pos = 0;
  bool found = st == INGOT_OK && stage_position(f, &path, &pos);
  INGOT_VEC_FREE(path);
  if (st != INGOT_OK) return st;
  if (!found)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "barrier after '%s': the loop is not in a stage of the body block",
                      loop);
  uint32_t n = f->body->u.block.count;
  if (pos + 1 >= n)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "barrier after '%s': its stage is the last, nothing waits", loop);
  ingot_ir_stmt_t** stmts = ingot_xmalloc(sizeof(*stmts) * (n + 1));
  for (uint32_t i = 0, k = 0; i < n; ++i) {
    stmts[k++] = f->body->u.block.stmts[i];
    if (i == pos) stmts[k++] = ingot_ir_barrier(f);
  }
  ingot_ir_stmt_t* old_body = f->body;
  f->body = ingot_ir_block(f, stmts, n + 1);
  free(stmts);
  if ((st = ingot_ir_verify(f)) != INGOT_OK) {
    f->body = old_body;
    return ingot_fail_prefix(st, "barrier after %s", loop);
  }
  return INGOT_OK;
}

/* Whether `e` loads a buffer that some store of `s` writes. */
static bool reads_stored(const ingot_ir_func_t* f, const ingot_ir_expr_t* e, const ingot_ir_stmt_t* s) {
  ingot_ir_uses_t uses;
  ingot_ir_uses_collect(f, s, &uses);
  bool hit = false;
  for (uint32_t b = 0; b < f->buffer_count && !hit; ++b) hit = uses.stored[b] && expr_loads(e, b);
  ingot_ir_uses_free(&uses);
  return hit;
}

/* e with each reduce loop var r_i replaced by lin / stride_i % extent_i
 * (the reduce loops' linear position lin, r_0 outermost). */
static ingot_ir_expr_t* reduce_term(ingot_ir_func_t* f, ingot_ir_expr_t* e, const ingot_ir_stmt_t* const* red,
                                    uint32_t nred, ingot_ir_expr_t* lin) {
  int64_t stride = 1;
  for (int32_t i = (int32_t)nred - 1; i >= 0; --i) {
    ingot_ir_expr_t* r = stride == 1 ? lin : ingot_ir_binary(f, INGOT_IR_DIV, lin, ingot_ir_int(f, stride));
    if (i > 0) r = ingot_ir_binary(f, INGOT_IR_MOD, r, ingot_ir_int(f, red[i]->u.loop.extent));
    e = ingot_ir_expr_substitute(f, e, red[i]->u.loop.var, r);
    stride *= red[i]->u.loop.extent;
  }
  return e;
}

/* The form ingot_schedule_reduce_threads takes, read from the nest at `top`. */
typedef struct reduce_form_t {
  const ingot_ir_stmt_t* red[INGOT_MAX_STAGE_AXES * 2];
  uint32_t nred;
  int64_t total;
  ingot_ir_binary_op_t op;
  ingot_ir_expr_t* init; /* the select form's init, else NULL */
  ingot_ir_expr_t* e;
  ingot_ir_expr_t* idx;
  uint32_t buf;
} reduce_form_t;

static ingot_status_t reduce_form(const ingot_ir_func_t* f, const ingot_ir_stmt_t* top, reduce_form_t* out) {
  const char* name = f->vars[top->u.loop.var].name;
  memset(out, 0, sizeof(*out));
  const ingot_ir_stmt_t* s = top;
  out->total = 1;
  while (s && s->kind == INGOT_IR_STMT_FOR && s->u.loop.loop_kind == INGOT_IR_LOOP_SERIAL &&
         out->nred < INGOT_MAX_STAGE_AXES * 2) {
    out->red[out->nred++] = s;
    if (out->total > INT64_MAX / s->u.loop.extent)
      return ingot_fail(INGOT_ERROR_LIMIT, "reduce %s over threads: the extent overflows", name);
    out->total *= s->u.loop.extent;
    s = direct_child(s->u.loop.body);
  }
  if (!s || s->kind != INGOT_IR_STMT_STORE)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "reduce %s over threads: not serial loops around one store", name);
  const ingot_ir_expr_t* v = s->u.store.value;
  out->idx = s->u.store.index;
  out->buf = s->u.store.buffer;
  bool combines = v && v->kind == INGOT_IR_EXPR_BINARY &&
                  (v->u.binary.op == INGOT_IR_ADD || v->u.binary.op == INGOT_IR_MAX || v->u.binary.op == INGOT_IR_MIN);
  const ingot_ir_expr_t* start = combines ? v->u.binary.a : NULL;
  if (start && start->kind == INGOT_IR_EXPR_SELECT) {
    if (!is_first_step(start->u.select.cond, out->red, out->nred) || expr_loads(start->u.select.a, out->buf))
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                        "reduce %s over threads: the start is not select(first step, init, y[i])", name);
    out->init = start->u.select.a;
    start = start->u.select.b;
  }
  if (!start || start->kind != INGOT_IR_EXPR_LOAD || start->u.load.buffer != out->buf ||
      !expr_same(start->u.load.index, out->idx))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "reduce %s over threads: the store is not y[i] = y[i] op e", name);
  out->op = v->u.binary.op;
  out->e = v->u.binary.b;
  for (uint32_t i = 0; i < out->nred; ++i)
    if (ingot_ir_expr_uses_var(out->idx, out->red[i]->u.loop.var) ||
        (out->init && ingot_ir_expr_uses_var(out->init, out->red[i]->u.loop.var)))
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "reduce %s over threads: the store index or start moves with '%s'",
                        name, f->vars[out->red[i]->u.loop.var].name);
  /* Threads read e at other threads' positions: nothing the function
   * writes may be read there. */
  if (reads_stored(f, out->e, f->body))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "reduce %s over threads: the update reads a buffer the kernel writes",
                      name);
  return INGOT_OK;
}

ingot_status_t ingot_schedule_reduce_threads_check(const ingot_ir_func_t* f, const ingot_ir_stmt_t* loop) {
  reduce_form_t form;
  if (!f || !loop || loop->kind != INGOT_IR_STMT_FOR)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "reduce over threads: no loop");
  return reduce_form(f, loop, &form);
}

ingot_status_t ingot_schedule_reduce_threads(ingot_ir_func_t* f, const char* name, int64_t threads) {
  if (!f) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "reduce_threads: no function");
  if (threads < 1 || threads > 1024 || (threads & (threads - 1)))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "reduce %s over threads: %lld threads is not a power of two in 1..1024",
                      name ? name : "?", (long long)threads);
  stmt_vec_t path = {0};
  ingot_status_t st = locate(f, name, &path);
  if (st != INGOT_OK) {
    INGOT_VEC_FREE(path);
    return st;
  }
  ingot_ir_stmt_t* top = path.data[path.count - 1];
  bool in_block = false, in_thread = false;
  for (size_t i = 0; i + 1 < path.count; ++i) {
    const ingot_ir_stmt_t* a = path.data[i];
    if (a->kind != INGOT_IR_STMT_FOR) continue;
    in_block |= a->u.loop.loop_kind == INGOT_IR_LOOP_GPU_BLOCK;
    in_thread |= a->u.loop.loop_kind == INGOT_IR_LOOP_GPU_THREAD;
  }
  INGOT_VEC_FREE(path);
  if (!in_block || in_thread)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                      "reduce %s over threads: the loop must be inside a GPU block loop and outside thread loops", name);
  reduce_form_t form;
  if ((st = reduce_form(f, top, &form)) != INGOT_OK) return st;
  const ingot_ir_stmt_t* const* red = form.red;
  uint32_t nred = form.nred;
  int64_t total = form.total;
  ingot_ir_expr_t* init = form.init;
  ingot_ir_expr_t* e = form.e;
  ingot_ir_expr_t* idx = form.idx;
  uint32_t buf = form.buf;
  ingot_ir_binary_op_t op = form.op;
  ingot_dtype_t dt = f->buffers[buf].dtype;
  int64_t p = threads < total ? threads : total;
  int64_t chunks = (total + p - 1) / p;
  uint32_t old_vars = f->var_count, old_buffers = f->buffer_count;
  ingot_ir_stmt_t* old_body = f->body;
  char nm[160];
  snprintf(nm, sizeof(nm), "%s_red", f->buffers[buf].name ? f->buffers[buf].name : "y");
  int64_t dims[1] = {p};
  uint32_t sh = ingot_ir_add_buffer(f, nm, dt, INGOT_IR_BUFFER_SHARED, 1, dims);
  snprintf(nm, sizeof(nm), "%s_t", name);
  uint32_t tv = ingot_ir_add_var(f, nm, INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  snprintf(nm, sizeof(nm), "%s_k", name);
  uint32_t kv = ingot_ir_add_var(f, nm, INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  snprintf(nm, sizeof(nm), "%s_acc", name);
  uint32_t acc = ingot_ir_add_var(f, nm, INGOT_IR_VAR_LOCAL, dt);

  ingot_ir_expr_t* t = ingot_ir_var(f, tv);
  ingot_ir_stmt_t* part[3];
  uint32_t np = 0;
  part[np++] = ingot_ir_local(f, acc, reduce_term(f, e, red, nred, t));
  if (chunks > 1) {
    /* lin = t + (k + 1) * P */
    ingot_ir_expr_t* lin =
        ingot_ir_add(f, t, ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_var(f, kv), ingot_ir_int(f, 1)), ingot_ir_int(f, p)));
    ingot_ir_stmt_t* step =
        ingot_ir_assign(f, acc, ingot_ir_binary(f, op, ingot_ir_var(f, acc), reduce_term(f, e, red, nred, lin)));
    if (total % p) step = ingot_ir_if(f, ingot_ir_binary(f, INGOT_IR_LT, lin, ingot_ir_int(f, total)), step);
    part[np++] = ingot_ir_for(f, kv, chunks - 1, step);
  }
  part[np++] = ingot_ir_store(f, sh, t, ingot_ir_var(f, acc));
  INGOT_VEC(ingot_ir_stmt_t*) out = {0};
  ingot_ir_stmt_t* partial = ingot_ir_for(f, tv, p, ingot_ir_block(f, part, np));
  partial->u.loop.loop_kind = INGOT_IR_LOOP_GPU_THREAD;
  INGOT_VEC_PUSH(out, partial);
  INGOT_VEC_PUSH(out, ingot_ir_barrier(f));
  int64_t half = 1;
  while (half < p) half *= 2;
  for (half /= 2; half >= 1; half /= 2) {
    snprintf(nm, sizeof(nm), "%s_t", name);
    uint32_t sv = ingot_ir_add_var(f, nm, INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    ingot_ir_expr_t* st_t = ingot_ir_var(f, sv);
    ingot_ir_expr_t* other = ingot_ir_add(f, st_t, ingot_ir_int(f, half));
    ingot_ir_stmt_t* comb = ingot_ir_store(
        f, sh, st_t, ingot_ir_binary(f, op, ingot_ir_load(f, sh, st_t), ingot_ir_load(f, sh, other)));
    if (half * 2 > p) comb = ingot_ir_if(f, ingot_ir_binary(f, INGOT_IR_LT, other, ingot_ir_int(f, p)), comb);
    ingot_ir_stmt_t* level = ingot_ir_for(f, sv, half, comb);
    level->u.loop.loop_kind = INGOT_IR_LOOP_GPU_THREAD;
    INGOT_VEC_PUSH(out, level);
    INGOT_VEC_PUSH(out, ingot_ir_barrier(f));
  }
  snprintf(nm, sizeof(nm), "%s_t", name);
  uint32_t fv = ingot_ir_add_var(f, nm, INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  ingot_ir_expr_t* first_value = init ? init : ingot_ir_load(f, buf, idx);
  ingot_ir_stmt_t* fin =
      ingot_ir_store(f, buf, idx, ingot_ir_binary(f, op, first_value, ingot_ir_load(f, sh, ingot_ir_int(f, 0))));
  ingot_ir_stmt_t* last = ingot_ir_for(f, fv, 1, fin);
  last->u.loop.loop_kind = INGOT_IR_LOOP_GPU_THREAD;
  INGOT_VEC_PUSH(out, last);
  /* The block loop may run this again (a grid smaller than its extent):
   * nobody writes red before thread 0 has read it. */
  INGOT_VEC_PUSH(out, ingot_ir_barrier(f));
  ingot_ir_stmt_t* block = ingot_ir_block(f, out.data, (uint32_t)out.count);
  INGOT_VEC_FREE(out);
  f->body = replace_stmt(f, f->body, top, block);
  if ((st = ingot_ir_verify(f)) != INGOT_OK) {
    f->body = old_body;
    f->var_count = old_vars;
    f->buffer_count = old_buffers;
    return ingot_fail_prefix(st, "reduce %s over threads", name);
  }
  return INGOT_OK;
}

/* The nest ingot_schedule_accumulate_local takes, read from `top`. */
typedef struct local_form_t {
  const ingot_ir_stmt_t* red[INGOT_MAX_STAGE_AXES * 2];
  uint32_t nred;
  const ingot_ir_expr_t* v;
  ingot_ir_expr_t* idx;
  uint32_t buf;
  ingot_ir_expr_t* first;
  ingot_ir_expr_t* init;
  ingot_ir_expr_t* e;
} local_form_t;

static ingot_status_t local_form(const ingot_ir_func_t* f, const ingot_ir_stmt_t* top, local_form_t* o) {
  const char* name = f->vars[top->u.loop.var].name;
  memset(o, 0, sizeof(*o));
  const ingot_ir_stmt_t* s = top;
  while (s && s->kind == INGOT_IR_STMT_FOR && s->u.loop.loop_kind == INGOT_IR_LOOP_SERIAL &&
         o->nred < INGOT_MAX_STAGE_AXES * 2) {
    o->red[o->nred++] = s;
    s = direct_child(s->u.loop.body);
  }
  if (o->nred == 0 || !s || s->kind != INGOT_IR_STMT_STORE)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "accumulate '%s' in a local: not serial loops around one store",
                      name);
  const ingot_ir_expr_t* v = o->v = s->u.store.value;
  o->idx = s->u.store.index;
  o->buf = s->u.store.buffer;
  bool combines = v && v->kind == INGOT_IR_EXPR_BINARY &&
                  (v->u.binary.op == INGOT_IR_ADD || v->u.binary.op == INGOT_IR_MUL || v->u.binary.op == INGOT_IR_MAX ||
                   v->u.binary.op == INGOT_IR_MIN);
  const ingot_ir_expr_t* start = combines ? v->u.binary.a : NULL;
  if (start && start->kind == INGOT_IR_EXPR_SELECT) {
    o->first = start->u.select.cond;
    o->init = start->u.select.a;
    start = start->u.select.b;
    if (expr_loads(o->init, o->buf) || expr_loads(o->first, o->buf))
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "accumulate '%s' in a local: the start value reads the output",
                        name);
  }
  if (!start || start->kind != INGOT_IR_EXPR_LOAD || start->u.load.buffer != o->buf ||
      !expr_same(start->u.load.index, o->idx))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "accumulate '%s' in a local: the store is not y[i] = y[i] op e", name);
  o->e = v->u.binary.b;
  for (uint32_t i = 0; i < o->nred; ++i)
    if (ingot_ir_expr_uses_var(o->idx, o->red[i]->u.loop.var))
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "accumulate '%s' in a local: the store index moves with '%s'", name,
                        f->vars[o->red[i]->u.loop.var].name);
  if (expr_loads(o->e, o->buf))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "accumulate '%s' in a local: the update reads the output", name);
  return INGOT_OK;
}

bool ingot_schedule_accumulate_local_check(const ingot_ir_func_t* f, const ingot_ir_stmt_t* loop) {
  local_form_t form;
  if (!f || !loop || loop->kind != INGOT_IR_STMT_FOR) return false;
  bool ok = local_form(f, loop, &form) == INGOT_OK;
  ingot_compiler_error_clear();
  return ok;
}

ingot_status_t ingot_schedule_accumulate_local(ingot_ir_func_t* f, const char* name) {
  if (!f) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "accumulate: no function");
  stmt_vec_t path = {0};
  ingot_status_t st = locate(f, name, &path);
  ingot_ir_stmt_t* top = st == INGOT_OK ? path.data[path.count - 1] : NULL;
  INGOT_VEC_FREE(path);
  if (st != INGOT_OK) return st;
  local_form_t form;
  if ((st = local_form(f, top, &form)) != INGOT_OK) return st;
  const ingot_ir_stmt_t* const* red = form.red;
  uint32_t nred = form.nred;
  const ingot_ir_expr_t* v = form.v;
  ingot_ir_expr_t* idx = form.idx;
  uint32_t buf = form.buf;
  ingot_ir_expr_t* first = form.first;
  ingot_ir_expr_t* init = form.init;
  ingot_ir_expr_t* e = form.e;
  bool starts_at_init = first && is_first_step(first, red, nred);
  char nm[160];
  snprintf(nm, sizeof(nm), "%s_acc", name);
  uint32_t acc = ingot_ir_add_var(f, nm, INGOT_IR_VAR_LOCAL, f->buffers[buf].dtype);
  ingot_ir_expr_t* a = ingot_ir_var(f, acc);
  if (first && !starts_at_init) a = ingot_ir_select(f, first, init, a);
  ingot_ir_stmt_t* nest = ingot_ir_assign(f, acc, ingot_ir_binary(f, v->u.binary.op, a, e));
  for (int32_t i = (int32_t)nred - 1; i >= 0; --i) nest = ingot_ir_for_like(f, red[i], nest);
  ingot_ir_stmt_t* parts[3] = {ingot_ir_local(f, acc, starts_at_init ? init : ingot_ir_load(f, buf, idx)), nest,
                               ingot_ir_store(f, buf, idx, ingot_ir_var(f, acc))};
  ingot_ir_stmt_t* old_body = f->body;
  uint32_t old_vars = f->var_count - 1;
  f->body = replace_stmt(f, f->body, top, ingot_ir_block(f, parts, 3));
  if ((st = ingot_ir_verify(f)) != INGOT_OK) {
    f->body = old_body;
    f->var_count = old_vars;
    return ingot_fail_prefix(st, "accumulate %s in a local", name);
  }
  return INGOT_OK;
}

void ingot_schedule_describe_directive(const ingot_directive_t* d, ingot_strbuf_t* sb) {
  const char* loop = d->loop ? d->loop : "?";
  switch (d->kind) {
    case INGOT_DIRECTIVE_SPLIT:
      ingot_strbuf_appendf(sb, "split %s by %lld", loop, (long long)d->factor);
      if (d->outer_name || d->inner_name)
        ingot_strbuf_appendf(sb, " -> %s, %s", d->outer_name ? d->outer_name : "-", d->inner_name ? d->inner_name : "-");
      return;
    case INGOT_DIRECTIVE_REORDER:
      ingot_strbuf_append(sb, "reorder");
      for (uint32_t i = 0; i < d->order_count; ++i)
        ingot_strbuf_appendf(sb, "%s%s", i ? ", " : " ", d->order && d->order[i] ? d->order[i] : "?");
      return;
    case INGOT_DIRECTIVE_FUSE:
      ingot_strbuf_appendf(sb, "fuse %s, %s", loop, d->inner ? d->inner : "?");
      if (d->outer_name) ingot_strbuf_appendf(sb, " -> %s", d->outer_name);
      return;
    case INGOT_DIRECTIVE_UNROLL: ingot_strbuf_appendf(sb, "unroll %s", loop); return;
    case INGOT_DIRECTIVE_VECTORIZE: ingot_strbuf_appendf(sb, "vectorize %s", loop); return;
    case INGOT_DIRECTIVE_PARALLEL: ingot_strbuf_appendf(sb, "parallel %s", loop); return;
    case INGOT_DIRECTIVE_BIND_BLOCK:
      ingot_strbuf_appendf(sb, "bind %s to blockIdx.%c", loop, "xyz"[d->factor >= 0 && d->factor < 3 ? d->factor : 0]);
      return;
    case INGOT_DIRECTIVE_BIND_THREAD:
      ingot_strbuf_appendf(sb, "bind %s to threadIdx.%c", loop, "xyz"[d->factor >= 0 && d->factor < 3 ? d->factor : 0]);
      return;
    case INGOT_DIRECTIVE_ACCUMULATE:
      ingot_strbuf_appendf(sb, "accumulate %s%s", loop, d->factor == 1 ? " with the epilogue" : "");
      return;
    case INGOT_DIRECTIVE_BARRIER: ingot_strbuf_appendf(sb, "barrier after the stage of %s", loop); return;
    case INGOT_DIRECTIVE_REDUCE_THREADS:
      ingot_strbuf_appendf(sb, "reduce %s over %lld threads", loop, (long long)d->factor);
      return;
    case INGOT_DIRECTIVE_ACCUMULATE_LOCAL: ingot_strbuf_appendf(sb, "accumulate %s in a local", loop); return;
    case INGOT_DIRECTIVE_CACHE_READ:
      ingot_strbuf_appendf(sb, "cache_read %s at %s -> %s", d->inner ? d->inner : "?", loop,
                           d->outer_name ? d->outer_name : "(default name)");
      if (d->factor > 0) ingot_strbuf_appendf(sb, " (shared <= %lld bytes)", (long long)d->factor);
      return;
  }
  ingot_strbuf_appendf(sb, "unknown directive kind %d", (int)d->kind);
}

void ingot_schedule_describe(const ingot_schedule_t* s, ingot_strbuf_t* sb) {
  ingot_strbuf_appendf(sb, "schedule '%s'", s->template_name ? s->template_name : "(none)");
  for (uint32_t i = 0; i < s->knob_count; ++i)
    ingot_strbuf_appendf(sb, "%s%s=%lld", i ? " " : " (", s->knob_names[i], (long long)s->knob_values[i]);
  ingot_strbuf_append(sb, s->knob_count ? "):\n" : ":\n");
  for (uint32_t i = 0; i < s->directive_count; ++i) {
    ingot_strbuf_appendf(sb, "  %u: ", i);
    ingot_schedule_describe_directive(&s->directives[i], sb);
    ingot_strbuf_append(sb, "\n");
  }
}

static ingot_status_t apply_one(ingot_ir_func_t* f, const ingot_directive_t* d) {
  switch (d->kind) {
    case INGOT_DIRECTIVE_SPLIT: return ingot_schedule_split(f, d->loop, d->factor, d->outer_name, d->inner_name);
    case INGOT_DIRECTIVE_REORDER: return ingot_schedule_reorder(f, d->order, d->order_count);
    case INGOT_DIRECTIVE_FUSE: return ingot_schedule_fuse(f, d->loop, d->inner, d->outer_name);
    case INGOT_DIRECTIVE_UNROLL: return ingot_schedule_mark(f, d->loop, INGOT_IR_LOOP_UNROLLED);
    case INGOT_DIRECTIVE_VECTORIZE: return ingot_schedule_mark(f, d->loop, INGOT_IR_LOOP_VECTORIZED);
    case INGOT_DIRECTIVE_PARALLEL: return ingot_schedule_mark(f, d->loop, INGOT_IR_LOOP_PARALLEL);
    case INGOT_DIRECTIVE_BIND_BLOCK:
      return ingot_schedule_bind(f, d->loop, INGOT_IR_LOOP_GPU_BLOCK, d->factor < 0 ? 3u : (uint32_t)d->factor);
    case INGOT_DIRECTIVE_BIND_THREAD:
      return ingot_schedule_bind(f, d->loop, INGOT_IR_LOOP_GPU_THREAD, d->factor < 0 ? 3u : (uint32_t)d->factor);
    case INGOT_DIRECTIVE_ACCUMULATE: return ingot_schedule_accumulate_ex(f, d->loop, d->factor == 1);
    case INGOT_DIRECTIVE_BARRIER: return ingot_schedule_barrier_after(f, d->loop);
    case INGOT_DIRECTIVE_REDUCE_THREADS: return ingot_schedule_reduce_threads(f, d->loop, d->factor);
    case INGOT_DIRECTIVE_ACCUMULATE_LOCAL: return ingot_schedule_accumulate_local(f, d->loop);
    case INGOT_DIRECTIVE_CACHE_READ: return ingot_schedule_cache_read(f, d->loop, d->inner, d->outer_name, d->factor);
  }
  return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "unknown directive kind %d", (int)d->kind);
}

ingot_status_t ingot_schedule_apply(ingot_ir_func_t* f, const ingot_schedule_t* s) {
  if (!f || !s) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_schedule_apply: no function or schedule");
  ingot_ir_stmt_t* old_body = f->body;
  uint32_t old_vars = f->var_count;
  for (uint32_t i = 0; i < s->directive_count; ++i) {
    ingot_status_t st = apply_one(f, &s->directives[i]);
    if (st != INGOT_OK) {
      f->body = old_body;
      f->var_count = old_vars;
      ingot_strbuf_t sb = {0};
      ingot_schedule_describe_directive(&s->directives[i], &sb);
      if (s->knob_count) ingot_strbuf_appendf(&sb, "; knobs");
      for (uint32_t k = 0; k < s->knob_count; ++k)
        ingot_strbuf_appendf(&sb, " %s=%lld", s->knob_names[k], (long long)s->knob_values[k]);
      st = ingot_fail_prefix(st, "function '%s': schedule '%s' directive %u (%s)", f->name,
                             s->template_name ? s->template_name : "(none)", i, sb.data ? sb.data : "");
      ingot_strbuf_free(&sb);
      return st;
    }
  }
  return INGOT_OK;
}
