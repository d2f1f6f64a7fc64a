/* cache_read: stage the region of a buffer that the loads inside one loop
 * read into a SHARED buffer (a GPU block's shared memory), filled by the
 * block's threads between two barriers; the loads then read the copy. The
 * rules are in schedule.h (ingot_schedule_cache_read). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule/schedule.h"
#include "schedule_internal.h"

/* ---- affine index analysis ---- */

static int var_slot(const uint32_t* vars, uint32_t n, uint32_t var) {
  for (uint32_t i = 0; i < n; ++i)
    if (vars[i] == var) return (int)i;
  return -1;
}

static bool uses_any(const ingot_ir_expr_t* e, const uint32_t* vars, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i)
    if (ingot_ir_expr_uses_var(e, vars[i])) return true;
  return false;
}

bool schedule_affine(const ingot_ir_expr_t* e, const uint32_t* vars, uint32_t n, int64_t* out_coefs) {
  for (uint32_t i = 0; i < n; ++i) out_coefs[i] = 0;
  if (!e) return false;
  if (!uses_any(e, vars, n)) return true; /* a constant of the analysis */
  switch (e->kind) {
    case INGOT_IR_EXPR_VAR: {
      int s = var_slot(vars, n, e->u.var);
      if (s >= 0) out_coefs[s] = 1;
      return true;
    }
    case INGOT_IR_EXPR_UNARY:
      if (e->u.unary.op != INGOT_IR_NEG || !schedule_affine(e->u.unary.a, vars, n, out_coefs)) return false;
      for (uint32_t i = 0; i < n; ++i) out_coefs[i] = -out_coefs[i];
      return true;
    case INGOT_IR_EXPR_BINARY: {
      ingot_ir_binary_op_t op = e->u.binary.op;
      const ingot_ir_expr_t* a = e->u.binary.a;
      const ingot_ir_expr_t* b = e->u.binary.b;
      if (op == INGOT_IR_ADD || op == INGOT_IR_SUB) {
        int64_t* cb = ingot_xcalloc(n ? n : 1, sizeof(int64_t));
        bool ok = schedule_affine(a, vars, n, out_coefs) && schedule_affine(b, vars, n, cb);
        for (uint32_t i = 0; ok && i < n; ++i) out_coefs[i] += op == INGOT_IR_ADD ? cb[i] : -cb[i];
        free(cb);
        return ok;
      }
      if (op == INGOT_IR_MUL) {
        /* one side a constant integer, the other affine */
        const ingot_ir_expr_t* k = b->kind == INGOT_IR_EXPR_INT ? b : a->kind == INGOT_IR_EXPR_INT ? a : NULL;
        if (!k) return false;
        if (!schedule_affine(k == b ? a : b, vars, n, out_coefs)) return false;
        for (uint32_t i = 0; i < n; ++i) out_coefs[i] *= k->u.i;
        return true;
      }
      return false;
    }
    default:
      return false;
  }
}

/* ---- intervals of index expressions (to drop a provably needless guard) ---- */

typedef struct range_env_t {
  const uint32_t* vars;
  const int64_t* extents;
  uint32_t count;
} range_env_t;

static bool expr_range(const ingot_ir_expr_t* e, const range_env_t* env, int64_t* lo, int64_t* hi) {
  switch (e->kind) {
    case INGOT_IR_EXPR_INT: *lo = *hi = e->u.i; return true;
    case INGOT_IR_EXPR_VAR: {
      int s = var_slot(env->vars, env->count, e->u.var);
      if (s < 0) return false;
      *lo = 0;
      *hi = env->extents[s] - 1;
      return true;
    }
    case INGOT_IR_EXPR_BINARY: {
      int64_t al, ah, bl, bh;
      if (!expr_range(e->u.binary.a, env, &al, &ah) || !expr_range(e->u.binary.b, env, &bl, &bh)) return false;
      /* index arithmetic stays far below 2^62; bail out above it */
      const int64_t big = (int64_t)1 << 31;
      if (al < -big || ah > big || bl < -big || bh > big) return false;
      switch (e->u.binary.op) {
        case INGOT_IR_ADD: *lo = al + bl; *hi = ah + bh; return true;
        case INGOT_IR_SUB: *lo = al - bh; *hi = ah - bl; return true;
        case INGOT_IR_MUL: {
          int64_t p[4] = {al * bl, al * bh, ah * bl, ah * bh};
          *lo = *hi = p[0];
          for (int i = 1; i < 4; ++i) {
            if (p[i] < *lo) *lo = p[i];
            if (p[i] > *hi) *hi = p[i];
          }
          return true;
        }
        case INGOT_IR_DIV:
          if (bl != bh || bl <= 0 || al < 0) return false;
          *lo = al / bl;
          *hi = ah / bl;
          return true;
        case INGOT_IR_MOD:
          if (bl != bh || bl <= 0 || al < 0) return false;
          *lo = 0;
          *hi = ah < bl - 1 ? ah : bl - 1;
          return true;
        default: return false;
      }
    }
    default: return false;
  }
}

/* ---- walking and rebuilding ---- */

typedef INGOT_VEC(ingot_ir_stmt_t*) path_t;

static bool find_path(ingot_ir_stmt_t* s, uint32_t var, path_t* path) {
  if (!s) return false;
  INGOT_VEC_PUSH(*path, s);
  switch (s->kind) {
    case INGOT_IR_STMT_FOR:
      if (s->u.loop.var == var || find_path(s->u.loop.body, var, path)) return true;
      break;
    case INGOT_IR_STMT_BLOCK:
      for (uint32_t i = 0; i < s->u.block.count; ++i)
        if (find_path(s->u.block.stmts[i], var, path)) return true;
      break;
    case INGOT_IR_STMT_IF:
      if (find_path(s->u.cond.then_body, var, path)) return true;
      break;
    default: break;
  }
  --path->count;
  return false;
}

/* What a loop's subtree binds: loop vars with extents, locals, and the
 * largest extent bound to each thread axis. */
typedef struct inner_t {
  INGOT_VEC(uint32_t) vars;      /* loop vars, then locals */
  INGOT_VEC(int64_t) extents;    /* per var; 0 for a local */
  int64_t thread_extent[3];      /* 0: axis not bound inside */
} inner_t;

static void collect_inner(const ingot_ir_stmt_t* s, inner_t* in) {
  if (!s) return;
  switch (s->kind) {
    case INGOT_IR_STMT_FOR:
      INGOT_VEC_PUSH(in->vars, s->u.loop.var);
      INGOT_VEC_PUSH(in->extents, s->u.loop.extent);
      if (s->u.loop.loop_kind == INGOT_IR_LOOP_GPU_THREAD && s->u.loop.gpu_axis < 3 &&
          s->u.loop.extent > in->thread_extent[s->u.loop.gpu_axis])
        in->thread_extent[s->u.loop.gpu_axis] = s->u.loop.extent;
      collect_inner(s->u.loop.body, in);
      return;
    case INGOT_IR_STMT_BLOCK:
      for (uint32_t i = 0; i < s->u.block.count; ++i) collect_inner(s->u.block.stmts[i], in);
      return;
    case INGOT_IR_STMT_IF: collect_inner(s->u.cond.then_body, in); return;
    case INGOT_IR_STMT_LOCAL:
      INGOT_VEC_PUSH(in->vars, s->u.local.var);
      INGOT_VEC_PUSH(in->extents, 0);
      return;
    default: return;
  }
}

static bool has_load(const ingot_ir_expr_t* e) {
  if (!e) return false;
  switch (e->kind) {
    case INGOT_IR_EXPR_LOAD: return true;
    case INGOT_IR_EXPR_UNARY:
    case INGOT_IR_EXPR_CAST: return has_load(e->u.unary.a);
    case INGOT_IR_EXPR_BINARY: return has_load(e->u.binary.a) || has_load(e->u.binary.b);
    case INGOT_IR_EXPR_SELECT: return has_load(e->u.select.cond) || has_load(e->u.select.a) || has_load(e->u.select.b);
    default: return false;
  }
}

static bool same_expr(const ingot_ir_expr_t* a, const ingot_ir_expr_t* b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind || a->dtype != b->dtype) return false;
  switch (a->kind) {
    case INGOT_IR_EXPR_INT: return a->u.i == b->u.i;
    case INGOT_IR_EXPR_FLOAT: return a->u.f == b->u.f;
    case INGOT_IR_EXPR_VAR: return a->u.var == b->u.var;
    case INGOT_IR_EXPR_LOAD: return a->u.load.buffer == b->u.load.buffer && same_expr(a->u.load.index, b->u.load.index);
    case INGOT_IR_EXPR_UNARY:
    case INGOT_IR_EXPR_CAST: return a->u.unary.op == b->u.unary.op && same_expr(a->u.unary.a, b->u.unary.a);
    case INGOT_IR_EXPR_BINARY:
      return a->u.binary.op == b->u.binary.op && same_expr(a->u.binary.a, b->u.binary.a) &&
             same_expr(a->u.binary.b, b->u.binary.b);
    case INGOT_IR_EXPR_SELECT:
      return same_expr(a->u.select.cond, b->u.select.cond) && same_expr(a->u.select.a, b->u.select.a) &&
             same_expr(a->u.select.b, b->u.select.b);
  }
  return false;
}

/* Loads of `buf` become loads of `to` at `index`. */
static ingot_ir_expr_t* redirect_expr(ingot_ir_func_t* f, ingot_ir_expr_t* e, uint32_t buf, uint32_t to,
                                      ingot_ir_expr_t* index) {
  if (!e) return e;
  switch (e->kind) {
    case INGOT_IR_EXPR_LOAD: {
      if (e->u.load.buffer == buf) return ingot_ir_load(f, to, index);
      ingot_ir_expr_t* i = redirect_expr(f, e->u.load.index, buf, to, index);
      return i == e->u.load.index ? e : ingot_ir_load(f, e->u.load.buffer, i);
    }
    case INGOT_IR_EXPR_UNARY: {
      ingot_ir_expr_t* a = redirect_expr(f, e->u.unary.a, buf, to, index);
      return a == e->u.unary.a ? e : ingot_ir_unary(f, e->u.unary.op, a);
    }
    case INGOT_IR_EXPR_CAST: {
      ingot_ir_expr_t* a = redirect_expr(f, e->u.unary.a, buf, to, index);
      return a == e->u.unary.a ? e : ingot_ir_cast(f, e->dtype, a);
    }
    case INGOT_IR_EXPR_BINARY: {
      ingot_ir_expr_t* a = redirect_expr(f, e->u.binary.a, buf, to, index);
      ingot_ir_expr_t* b = redirect_expr(f, e->u.binary.b, buf, to, index);
      return a == e->u.binary.a && b == e->u.binary.b ? e : ingot_ir_binary(f, e->u.binary.op, a, b);
    }
    case INGOT_IR_EXPR_SELECT: {
      ingot_ir_expr_t* c = redirect_expr(f, e->u.select.cond, buf, to, index);
      ingot_ir_expr_t* a = redirect_expr(f, e->u.select.a, buf, to, index);
      ingot_ir_expr_t* b = redirect_expr(f, e->u.select.b, buf, to, index);
      return c == e->u.select.cond && a == e->u.select.a && b == e->u.select.b ? e : ingot_ir_select(f, c, a, b);
    }
    default: return e;
  }
}

static ingot_ir_stmt_t* redirect_stmt(ingot_ir_func_t* f, ingot_ir_stmt_t* s, uint32_t buf, uint32_t to,
                                      ingot_ir_expr_t* index) {
  if (!s) return s;
  switch (s->kind) {
    case INGOT_IR_STMT_FOR: {
      ingot_ir_stmt_t* b = redirect_stmt(f, s->u.loop.body, buf, to, index);
      return b == s->u.loop.body ? s : ingot_ir_for_like(f, s, b);
    }
    case INGOT_IR_STMT_BLOCK: {
      uint32_t n = s->u.block.count;
      ingot_ir_stmt_t** out = ingot_xmalloc(sizeof(*out) * (n ? n : 1));
      bool changed = false;
      for (uint32_t i = 0; i < n; ++i) {
        out[i] = redirect_stmt(f, s->u.block.stmts[i], buf, to, index);
        changed |= out[i] != s->u.block.stmts[i];
      }
      ingot_ir_stmt_t* r = changed ? ingot_ir_block(f, out, n) : s;
      free(out);
      return r;
    }
    case INGOT_IR_STMT_STORE: {
      ingot_ir_expr_t* i = redirect_expr(f, s->u.store.index, buf, to, index);
      ingot_ir_expr_t* v = redirect_expr(f, s->u.store.value, buf, to, index);
      return i == s->u.store.index && v == s->u.store.value ? s : ingot_ir_store(f, s->u.store.buffer, i, v);
    }
    case INGOT_IR_STMT_IF: {
      ingot_ir_expr_t* c = redirect_expr(f, s->u.cond.cond, buf, to, index);
      ingot_ir_stmt_t* t = redirect_stmt(f, s->u.cond.then_body, buf, to, index);
      return c == s->u.cond.cond && t == s->u.cond.then_body ? s : ingot_ir_if(f, c, t);
    }
    case INGOT_IR_STMT_LOCAL:
    case INGOT_IR_STMT_ASSIGN: {
      ingot_ir_expr_t* v = redirect_expr(f, s->u.local.value, buf, to, index);
      if (v == s->u.local.value) return s;
      return s->kind == INGOT_IR_STMT_LOCAL ? ingot_ir_local(f, s->u.local.var, v) : ingot_ir_assign(f, s->u.local.var, v);
    }
    default: return s;
  }
}

/* ---- the primitive ---- */

#define CACHE_MAX_TERMS 32

typedef struct term_t {
  uint32_t var;
  int64_t coef;    /* in the source buffer's flat index */
  int64_t extent;
  int64_t radix;   /* in the SHARED buffer's flat index */
} term_t;

static int term_cmp(const void* a, const void* b) {
  const term_t* x = a;
  const term_t* y = b;
  if (x->coef != y->coef) return x->coef < y->coef ? -1 : 1;
  return x->var < y->var ? -1 : x->var > y->var;
}

static int64_t shared_bytes(const ingot_ir_func_t* f) {
  int64_t total = 0;
  for (uint32_t i = ingot_ir_param_count(f); i < f->buffer_count; ++i)
    total += ingot_ir_buffer_numel(&f->buffers[i]) * (int64_t)ingot_dtype_size(f->buffers[i].dtype);
  return total;
}

ingot_status_t ingot_schedule_cache_read(ingot_ir_func_t* f, const char* loop, const char* buffer,
                                         const char* shared_name, int64_t max_bytes) {
  if (!f || !loop || !buffer) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "cache_read: missing argument");
  uint32_t lvar = ingot_ir_find_var(f, loop);
  path_t path = {0};
  if (lvar == UINT32_MAX || f->vars[lvar].kind != INGOT_IR_VAR_LOOP || !find_path(f->body, lvar, &path)) {
    INGOT_VEC_FREE(path);
    return ingot_fail(INGOT_ERROR_NOT_FOUND, "cache_read %s: no loop named '%s'", buffer, loop);
  }
  ingot_ir_stmt_t* l = path.data[path.count - 1];
  ingot_ir_stmt_t* parent = path.count >= 2 ? path.data[path.count - 2] : NULL;
  ingot_status_t st = INGOT_OK;
  /* The barriers go right outside the loop: no thread loop may enclose it. */
  for (size_t i = 0; i + 1 < path.count && st == INGOT_OK; ++i) {
    const ingot_ir_stmt_t* a = path.data[i];
    if (a->kind == INGOT_IR_STMT_FOR && a->u.loop.loop_kind == INGOT_IR_LOOP_GPU_THREAD)
      st = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                      "cache_read %s at '%s': the loop is inside GPU thread loop '%s' (the barriers around the "
                      "fill must be reached by every thread of the block)",
                      buffer, loop, f->vars[a->u.loop.var].name);
    else if (a->kind == INGOT_IR_STMT_FOR && a->u.loop.loop_kind != INGOT_IR_LOOP_SERIAL &&
             a->u.loop.loop_kind != INGOT_IR_LOOP_GPU_BLOCK)
      st = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "cache_read %s at '%s': the loop is inside %s loop '%s'", buffer,
                      loop, a->u.loop.loop_kind == INGOT_IR_LOOP_PARALLEL ? "parallel" : "vectorized or unrolled",
                      f->vars[a->u.loop.var].name);
  }
  /* Outer loops: the ranges of the region's base. */
  INGOT_VEC(uint32_t) outer_vars = {0};
  INGOT_VEC(int64_t) outer_ext = {0};
  for (size_t i = 0; i + 1 < path.count; ++i)
    if (path.data[i]->kind == INGOT_IR_STMT_FOR) {
      INGOT_VEC_PUSH(outer_vars, path.data[i]->u.loop.var);
      INGOT_VEC_PUSH(outer_ext, path.data[i]->u.loop.extent);
    }
  INGOT_VEC_FREE(path);

  uint32_t buf = UINT32_MAX;
  uint32_t params = ingot_ir_param_count(f);
  for (uint32_t i = 0; i < f->buffer_count && buf == UINT32_MAX; ++i)
    if (!strcmp(f->buffers[i].name, buffer)) buf = i;
  if (st == INGOT_OK && buf == UINT32_MAX)
    st = ingot_fail(INGOT_ERROR_NOT_FOUND, "cache_read at '%s': no buffer named '%s'", loop, buffer);
  if (st == INGOT_OK && buf >= params)
    st = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "cache_read at '%s': buffer '%s' is not a parameter", loop, buffer);

  ingot_ir_uses_t uses;
  memset(&uses, 0, sizeof(uses));
  inner_t in;
  memset(&in, 0, sizeof(in));
  term_t terms[CACHE_MAX_TERMS];
  uint32_t nterms = 0;
  ingot_ir_expr_t* base = NULL;
  int64_t size = 1;
  if (st == INGOT_OK) {
    ingot_ir_uses_collect(f, l, &uses);
    collect_inner(l, &in);
    if (uses.stored[buf])
      st = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "cache_read %s at '%s': the loop writes '%s'", buffer, loop, buffer);
    else if (!uses.loaded[buf])
      st = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "cache_read %s at '%s': nothing inside the loop reads '%s'",
                      buffer, loop, buffer);
  }
  /* Every load of the buffer inside the loop: base + sum(coef * inner var),
   * the same base and coefficients for all. */
  int64_t* coefs = ingot_xcalloc(in.vars.count + 1, sizeof(int64_t));
  int64_t* first = ingot_xcalloc(in.vars.count + 1, sizeof(int64_t));
  bool have_first = false;
  for (size_t k = 0; st == INGOT_OK && k < uses.loads.count; ++k) {
    const ingot_ir_expr_t* ld = uses.loads.data[k];
    if (ld->u.load.buffer != buf) continue;
    ingot_ir_expr_t* idx = ld->u.load.index;
    if (has_load(idx)) {
      st = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "cache_read %s at '%s': an index of '%s' reads memory (a gather)",
                      buffer, loop, buffer);
      break;
    }
    if (!schedule_affine(idx, in.vars.data, (uint32_t)in.vars.count, coefs)) {
      st = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                      "cache_read %s at '%s': an index of '%s' is not affine in the loops inside '%s' (a division, "
                      "modulo or product of loop variables)",
                      buffer, loop, buffer, loop);
      break;
    }
    ingot_ir_expr_t* b = idx;
    for (size_t v = 0; v < in.vars.count; ++v) {
      if (in.extents.data[v] == 0 && ingot_ir_expr_uses_var(idx, in.vars.data[v])) {
        st = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                        "cache_read %s at '%s': an index of '%s' uses local '%s', set inside the loop", buffer, loop,
                        buffer, f->vars[in.vars.data[v]].name);
        break;
      }
      if (coefs[v] < 0) {
        st = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                        "cache_read %s at '%s': the index of '%s' falls as loop '%s' rises (coefficient %lld)", buffer,
                        loop, buffer, f->vars[in.vars.data[v]].name, (long long)coefs[v]);
        break;
      }
      b = ingot_ir_expr_substitute(f, b, in.vars.data[v], ingot_ir_int(f, 0));
    }
    if (st != INGOT_OK) break;
    if (!have_first) {
      have_first = true;
      base = b;
      memcpy(first, coefs, sizeof(int64_t) * in.vars.count);
    } else if (memcmp(first, coefs, sizeof(int64_t) * in.vars.count) != 0 || !same_expr(base, b)) {
      st = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                      "cache_read %s at '%s': the loads of '%s' inside the loop read at different offsets", buffer,
                      loop, buffer);
    }
  }
  /* The region: one term per inner loop that moves the index, ordered by
   * coefficient (the copy walks the source in its order). */
  for (size_t v = 0; st == INGOT_OK && v < in.vars.count; ++v) {
    if (first[v] == 0) continue;
    if (nterms == CACHE_MAX_TERMS) {
      st = ingot_fail(INGOT_ERROR_LIMIT, "cache_read %s at '%s': more than %d loops move the index", buffer, loop,
                      CACHE_MAX_TERMS);
      break;
    }
    terms[nterms++] = (term_t){in.vars.data[v], first[v], in.extents.data[v], 0};
  }
  free(coefs);
  free(first);
  qsort(terms, nterms, sizeof(terms[0]), term_cmp);
  ingot_dtype_t dt = buf < f->buffer_count ? f->buffers[buf].dtype : INGOT_DTYPE_INVALID;
  int64_t elem = (int64_t)ingot_dtype_size(dt);
  for (uint32_t t = 0; st == INGOT_OK && t < nterms; ++t) {
    terms[t].radix = size;
    if (size > INT64_MAX / 8 / terms[t].extent) {
      st = ingot_fail(INGOT_ERROR_LIMIT, "cache_read %s at '%s': the region overflows", buffer, loop);
      break;
    }
    size *= terms[t].extent;
  }
  int64_t before = shared_bytes(f);
  if (st == INGOT_OK && max_bytes > 0 && before + size * elem > max_bytes)
    st = ingot_fail(INGOT_ERROR_LIMIT,
                    "cache_read %s at '%s': the region of %lld elements (%lld bytes) with the %lld shared bytes "
                    "already used exceeds the limit of %lld bytes",
                    buffer, loop, (long long)size, (long long)(size * elem), (long long)before, (long long)max_bytes);
  if (st != INGOT_OK) {
    ingot_ir_uses_free(&uses);
    INGOT_VEC_FREE(in.vars);
    INGOT_VEC_FREE(in.extents);
    INGOT_VEC_FREE(outer_vars);
    INGOT_VEC_FREE(outer_ext);
    return st;
  }

  /* Nothing refused: build. */
  ingot_ir_stmt_t* old_body = f->body;
  uint32_t old_vars = f->var_count, old_buffers = f->buffer_count;
  char name[160];
  snprintf(name, sizeof(name), "%s_shared", buffer);
  if (!shared_name || !shared_name[0]) shared_name = name;
  for (uint32_t i = 0; i < f->buffer_count && st == INGOT_OK; ++i)
    if (!strcmp(f->buffers[i].name, shared_name))
      st = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "cache_read %s at '%s': the name '%s' is already a buffer", buffer,
                      loop, shared_name);
  uint32_t sh = UINT32_MAX;
  if (st == INGOT_OK) {
    int64_t dims[1] = {size};
    sh = ingot_ir_add_buffer(f, shared_name, dt, INGOT_IR_BUFFER_SHARED, 1, dims);
    f->buffers[sh].name = ingot_arena_strdup(&f->arena, shared_name);
  }

  /* The loads inside the loop read the copy at sum(var * radix). */
  ingot_ir_expr_t* sh_index = ingot_ir_int(f, 0);
  for (uint32_t t = 0; t < nterms; ++t)
    sh_index = ingot_ir_add(f, sh_index, ingot_ir_mul(f, ingot_ir_var(f, terms[t].var), ingot_ir_int(f, terms[t].radix)));
  ingot_ir_stmt_t* nl = st == INGOT_OK ? redirect_stmt(f, l, buf, sh, sh_index) : l;

  /* The fill: e = j * NT + tid over the thread loops of the block, where the
   * block has them (the same axes and extents as those inside the loop). */
  ingot_ir_stmt_t* fill = NULL;
  if (st == INGOT_OK) {
    uint32_t tv[3] = {0};
    int64_t nt = 1;
    ingot_ir_expr_t* tid = ingot_ir_int(f, 0);
    static const char axis_name[3] = {'x', 'y', 'z'};
    for (int a = 2; a >= 0; --a) {
      if (!in.thread_extent[a]) continue;
      char vn[192];
      snprintf(vn, sizeof(vn), "%s_t%c", shared_name, axis_name[a]);
      tv[a] = ingot_ir_add_var(f, vn, INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
      tid = ingot_ir_add(f, ingot_ir_mul(f, tid, ingot_ir_int(f, in.thread_extent[a])), ingot_ir_var(f, tv[a]));
      nt *= in.thread_extent[a];
    }
    int64_t chunks = (size + nt - 1) / nt;
    ingot_ir_expr_t* e = tid;
    uint32_t jv = UINT32_MAX;
    if (chunks > 1) {
      char vn[192];
      snprintf(vn, sizeof(vn), "%s_j", shared_name);
      jv = ingot_ir_add_var(f, vn, INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
      e = ingot_ir_add(f, ingot_ir_mul(f, ingot_ir_var(f, jv), ingot_ir_int(f, nt)), tid);
    }
    /* src = base + sum(coef * digit), merging terms that continue each
     * other in the source (coef = previous coef * previous extent). */
    ingot_ir_expr_t* src = base;
    for (uint32_t t = 0; t < nterms;) {
      uint32_t u = t + 1;
      int64_t ext = terms[t].extent;
      while (u < nterms && terms[u].coef == terms[u - 1].coef * terms[u - 1].extent) ext *= terms[u++].extent;
      ingot_ir_expr_t* digit = terms[t].radix == 1 ? e : ingot_ir_binary(f, INGOT_IR_DIV, e, ingot_ir_int(f, terms[t].radix));
      if (u < nterms) digit = ingot_ir_binary(f, INGOT_IR_MOD, digit, ingot_ir_int(f, ext));
      src = ingot_ir_add(f, src, ingot_ir_mul(f, digit, ingot_ir_int(f, terms[t].coef)));
      t = u;
    }
    /* Guards: the tail of the last chunk, and the source's bounds where the
     * region reaches past them (a tile over the edge of the data). */
    ingot_ir_expr_t* cond = NULL;
    if (chunks * nt != size) cond = ingot_ir_binary(f, INGOT_IR_LT, e, ingot_ir_int(f, size));
    int64_t numel = ingot_ir_buffer_numel(&f->buffers[buf]);
    range_env_t env = {outer_vars.data, outer_ext.data, (uint32_t)outer_vars.count};
    int64_t blo, bhi;
    bool known = expr_range(base, &env, &blo, &bhi);
    int64_t span = 0;
    for (uint32_t t = 0; t < nterms; ++t) span += terms[t].coef * (terms[t].extent - 1);
    if (!(known && blo >= 0) && !ingot_ir_expr_nonneg(f, base)) {
      ingot_ir_expr_t* c = ingot_ir_binary(f, INGOT_IR_LE, ingot_ir_int(f, 0), src);
      cond = cond ? ingot_ir_binary(f, INGOT_IR_AND, cond, c) : c;
    }
    if (!(known && bhi + span < numel)) {
      ingot_ir_expr_t* c = ingot_ir_binary(f, INGOT_IR_LT, src, ingot_ir_int(f, numel));
      cond = cond ? ingot_ir_binary(f, INGOT_IR_AND, cond, c) : c;
    }
    fill = ingot_ir_store(f, sh, e, ingot_ir_load(f, buf, src));
    if (cond) fill = ingot_ir_if(f, cond, fill);
    if (jv != UINT32_MAX) fill = ingot_ir_for(f, jv, chunks, fill);
    for (int a = 0; a < 3; ++a) {
      if (!in.thread_extent[a]) continue;
      fill = ingot_ir_for(f, tv[a], in.thread_extent[a], fill);
      fill->u.loop.loop_kind = INGOT_IR_LOOP_GPU_THREAD;
      fill->u.loop.gpu_axis = (uint8_t)a;
    }
  }

  /* barrier; fill; barrier; loop -- the first barrier shared with a
   * cache_read right before at the same loop. */
  if (st == INGOT_OK) {
    ingot_ir_stmt_t* target = l;
    ingot_ir_stmt_t* repl;
    if (parent && parent->kind == INGOT_IR_STMT_BLOCK) {
      uint32_t n = parent->u.block.count, at = 0;
      while (at < n && parent->u.block.stmts[at] != l) ++at;
      bool shared_barrier = at > 0 && parent->u.block.stmts[at - 1]->kind == INGOT_IR_STMT_BARRIER;
      ingot_ir_stmt_t** out = ingot_xmalloc(sizeof(*out) * (n + 3));
      uint32_t k = 0;
      for (uint32_t i = 0; i < n; ++i) {
        if (i != at) {
          out[k++] = parent->u.block.stmts[i];
          continue;
        }
        if (!shared_barrier) out[k++] = ingot_ir_barrier(f);
        out[k++] = fill;
        out[k++] = ingot_ir_barrier(f);
        out[k++] = nl;
      }
      target = parent;
      repl = ingot_ir_block(f, out, k);
      free(out);
    } else {
      ingot_ir_stmt_t* seq[4] = {ingot_ir_barrier(f), fill, ingot_ir_barrier(f), nl};
      repl = ingot_ir_block(f, seq, 4);
    }
    f->body = schedule_replace_stmt(f, f->body, target, repl);
    if ((st = ingot_ir_verify(f)) != INGOT_OK) st = ingot_fail_prefix(st, "cache_read %s at '%s'", buffer, loop);
  }
  if (st != INGOT_OK) {
    f->body = old_body;
    f->var_count = old_vars;
    f->buffer_count = old_buffers;
  }
  ingot_ir_uses_free(&uses);
  INGOT_VEC_FREE(in.vars);
  INGOT_VEC_FREE(in.extents);
  INGOT_VEC_FREE(outer_vars);
  INGOT_VEC_FREE(outer_ext);
  return st;
}
