/* The shared pass before every backend: settles, in the loop IR, which
 * PARALLEL loops are outlined and which VECTORIZED loops vectorize (and how
 * wide), by the rules each backend used to apply on its own (the C target's
 * cg_simd_safe and "parallel: run serially" checks, the llvm target's
 * vector_plan and parallel checks, moved here). Loops that do not qualify
 * become SERIAL, which both backends print exactly as they printed the
 * declined loop before; a backend then prints what it is given. */
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen_internal.h"

typedef struct prep_t {
  const ingot_ir_func_t* src;   /* the function as scheduled: analyses read it */
  ingot_ir_func_t* dst;         /* its copy: new statements are allocated here */
  const ingot_target_t* target;
  ingot_codegen_vector_style_t style;
} prep_t;

/* True when the loop body assigns a local bound outside it: iterations would
 * race on it, so the loop neither runs in parallel nor vectorizes. */
static bool assigns_outer(const ingot_ir_func_t* f, const ingot_ir_stmt_t* loop) {
  ingot_ir_uses_t u;
  ingot_ir_uses_collect(f, loop->u.loop.body, &u);
  bool bad = false;
  for (uint32_t v = 0; v < f->var_count && !bad; ++v)
    if (u.assigned[v] && !u.declared[v]) bad = true;
  ingot_ir_uses_free(&u);
  return bad;
}

/* INGOT_CODEGEN_VECTOR_PRAGMA: every store's index depends on the loop
 * (directly or through a local bound inside it). */
static bool store_indices_vary(const ingot_ir_func_t* f, const ingot_ir_stmt_t* s, uint32_t var,
                               const uint8_t* declared) {
  if (!s) return true;
  switch (s->kind) {
    case INGOT_IR_STMT_FOR: return store_indices_vary(f, s->u.loop.body, var, declared);
    case INGOT_IR_STMT_BLOCK:
      for (uint32_t i = 0; i < s->u.block.count; ++i)
        if (!store_indices_vary(f, s->u.block.stmts[i], var, declared)) return false;
      return true;
    case INGOT_IR_STMT_IF: return store_indices_vary(f, s->u.cond.then_body, var, declared);
    case INGOT_IR_STMT_STORE: {
      if (ingot_ir_expr_uses_var(s->u.store.index, var)) return true;
      for (uint32_t v = 0; v < f->var_count; ++v)
        if (declared[v] && ingot_ir_expr_uses_var(s->u.store.index, v)) return true;
      return false;
    }
    default: return true;
  }
}

static bool pragma_safe(const ingot_ir_func_t* f, const ingot_ir_stmt_t* loop) {
  ingot_ir_uses_t u;
  ingot_ir_uses_collect(f, loop->u.loop.body, &u);
  bool ok = true;
  for (uint32_t v = 0; v < f->var_count && ok; ++v)
    if (u.assigned[v] && !u.declared[v]) ok = false;
  if (ok) ok = store_indices_vary(f, loop->u.loop.body, loop->u.loop.var, u.declared);
  ingot_ir_uses_free(&u);
  return ok;
}

/* Dtypes with a vector lane type in INGOT_CODEGEN_VECTOR_LANES backends. */
static bool lane_dtype(ingot_dtype_t t) {
  switch (t) {
    case INGOT_DTYPE_F32:
    case INGOT_DTYPE_F64:
    case INGOT_DTYPE_F16: /* the bits, i16 lanes (float16 arithmetic: lower/ir_ops.def) */
    case INGOT_DTYPE_BF16:
    case INGOT_DTYPE_I8:
    case INGOT_DTYPE_U8:
    case INGOT_DTYPE_I32:
    case INGOT_DTYPE_I64:
    case INGOT_DTYPE_BOOL: return true;
    default: return false;
  }
}

/* INGOT_CODEGEN_VECTOR_LANES: the lane count of the VECTORIZED loop `s`, or 0
 * when it must run scalar (see ingot_codegen_vector_style_t). */
static unsigned lanes_of_loop(const prep_t* p, const ingot_ir_stmt_t* s) {
  const ingot_ir_func_t* f = p->src;
  ingot_dtype_t t = ingot_codegen_first_store_dtype(f, s->u.loop.body);
  size_t size = ingot_dtype_size(t);
  if (t == INGOT_DTYPE_INVALID || !lane_dtype(t) || size == 0 || !p->target) return 0;
  unsigned lanes = (unsigned)(p->target->vector_bytes / size);
  if (lanes < 2 || lanes > 64 || s->u.loop.extent < 2) return 0;
  if (assigns_outer(f, s)) return 0;
  ingot_ir_uses_t u;
  ingot_ir_uses_collect(f, s->u.loop.body, &u);
  ingot_codegen_lanes_t V;
  ingot_codegen_lanes_init(&V, f, s);
  bool ok = true;
  /* Every store moves with the loop (affine, coefficient != 0). */
  for (size_t i = 0; ok && i < u.stores.count; ++i) {
    int64_t c;
    if (!ingot_codegen_lanes_affine(&V, u.stores.data[i]->u.store.index, &c) || c == 0) ok = false;
  }
  /* A buffer written here is read only where the same lane writes it. */
  for (size_t i = 0; ok && i < u.loads.count; ++i) {
    const ingot_ir_expr_t* ld = u.loads.data[i];
    if (!u.stored[ld->u.load.buffer]) continue;
    bool same = false;
    for (size_t k = 0; k < u.stores.count && !same; ++k)
      same = u.stores.data[k]->u.store.buffer == ld->u.load.buffer &&
             ingot_codegen_expr_equal(u.stores.data[k]->u.store.index, ld->u.load.index);
    if (!same) ok = false;
  }
  ingot_codegen_lanes_free(&V);
  ingot_ir_uses_free(&u);
  return ok ? lanes : 0;
}

/* The first loop bound to a GPU's blocks or threads, or BARRIER, in `s`, or
 * NULL. */
static const ingot_ir_stmt_t* first_gpu_loop(const ingot_ir_stmt_t* s) {
  if (!s) return NULL;
  if (s->kind == INGOT_IR_STMT_BARRIER) return s;
  if (s->kind == INGOT_IR_STMT_FOR) {
    if (s->u.loop.loop_kind == INGOT_IR_LOOP_GPU_BLOCK || s->u.loop.loop_kind == INGOT_IR_LOOP_GPU_THREAD) return s;
    return first_gpu_loop(s->u.loop.body);
  }
  if (s->kind == INGOT_IR_STMT_BLOCK) {
    for (uint32_t i = 0; i < s->u.block.count; ++i) {
      const ingot_ir_stmt_t* g = first_gpu_loop(s->u.block.stmts[i]);
      if (g) return g;
    }
    return NULL;
  }
  if (s->kind == INGOT_IR_STMT_IF) return first_gpu_loop(s->u.cond.then_body);
  return NULL;
}

/* `s` with its loops settled. in_outlined: inside the body of an outlined
 * PARALLEL loop; in_vector: inside a loop that vectorizes. */
static ingot_ir_stmt_t* prep_stmt(const prep_t* p, ingot_ir_stmt_t* s, bool in_outlined, bool in_vector) {
  if (!s) return s;
  switch (s->kind) {
    case INGOT_IR_STMT_FOR: {
      ingot_ir_loop_kind_t kind = s->u.loop.loop_kind;
      uint32_t lanes = 0;
      bool outlined = in_outlined, vector = in_vector;
      if (kind == INGOT_IR_LOOP_PARALLEL) {
        bool outline = p->style != INGOT_CODEGEN_VECTOR_NONE && !in_outlined &&
                       !(p->style == INGOT_CODEGEN_VECTOR_LANES && in_vector) && s->u.loop.extent > 1 &&
                       !assigns_outer(p->src, s);
        if (outline) outlined = true;
        else kind = INGOT_IR_LOOP_SERIAL;
      } else if (kind == INGOT_IR_LOOP_VECTORIZED) {
        bool vectorize = false;
        if (p->style == INGOT_CODEGEN_VECTOR_PRAGMA) {
          vectorize = pragma_safe(p->src, s);
        } else if (p->style == INGOT_CODEGEN_VECTOR_LANES && !in_vector) {
          lanes = lanes_of_loop(p, s);
          vectorize = lanes != 0;
        }
        if (vectorize) vector = true;
        else kind = INGOT_IR_LOOP_SERIAL;
      }
      ingot_ir_stmt_t* body = prep_stmt(p, s->u.loop.body, outlined, vector);
      if (body == s->u.loop.body && kind == s->u.loop.loop_kind && lanes == s->u.loop.lanes) return s;
      ingot_ir_stmt_t* n = ingot_ir_for_like(p->dst, s, body);
      n->u.loop.loop_kind = kind;
      n->u.loop.lanes = lanes;
      return n;
    }
    case INGOT_IR_STMT_BLOCK: {
      ingot_ir_stmt_t** out = NULL;
      for (uint32_t i = 0; i < s->u.block.count; ++i) {
        ingot_ir_stmt_t* c = prep_stmt(p, s->u.block.stmts[i], in_outlined, in_vector);
        if (c != s->u.block.stmts[i] && !out) {
          out = ingot_xcalloc(s->u.block.count, sizeof(*out));
          memcpy(out, s->u.block.stmts, i * sizeof(*out));
        }
        if (out) out[i] = c;
      }
      if (!out) return s;
      ingot_ir_stmt_t* n = ingot_ir_block(p->dst, out, s->u.block.count);
      free(out);
      return n;
    }
    case INGOT_IR_STMT_IF: {
      ingot_ir_stmt_t* then_body = prep_stmt(p, s->u.cond.then_body, in_outlined, in_vector);
      return then_body == s->u.cond.then_body ? s : ingot_ir_if(p->dst, s->u.cond.cond, then_body);
    }
    default: return s;
  }
}

/* A copy of `f` (same buffers and variables, so every index stays valid)
 * whose body is `f`'s, to be rewritten. */
static ingot_ir_func_t* copy_func(const ingot_ir_func_t* f) {
  ingot_ir_func_t* c = ingot_ir_func_create(f->name);
  if (f->buffer_count) {
    c->buffers = ingot_xcalloc(f->buffer_count, sizeof(*c->buffers));
    memcpy(c->buffers, f->buffers, f->buffer_count * sizeof(*c->buffers));
  }
  c->buffer_count = c->buffer_cap = f->buffer_count;
  if (f->var_count) {
    c->vars = ingot_xcalloc(f->var_count, sizeof(*c->vars));
    memcpy(c->vars, f->vars, f->var_count * sizeof(*c->vars));
  }
  c->var_count = c->var_cap = f->var_count;
  c->body = f->body;
  return c;
}

void ingot_codegen_prepared_free(ingot_codegen_prepared_t* prepared) {
  if (!prepared) return;
  for (uint32_t i = 0; i < prepared->count; ++i) ingot_ir_func_destroy(prepared->funcs[i]);
  free(prepared->funcs);
  prepared->funcs = NULL;
  prepared->count = 0;
}

ingot_status_t ingot_codegen_prepare(ingot_ir_func_t* const* funcs, uint32_t count,
                                     const ingot_target_t* target, ingot_codegen_prepared_t* out_prepared) {
  if (!out_prepared) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "codegen: missing output");
  out_prepared->funcs = NULL;
  out_prepared->count = 0;
  ingot_target_kind_t kind = target ? target->kind : INGOT_TARGET_C;
  const ingot_codegen_backend_t* backend = ingot_codegen_backend_find(kind);
  if (!backend)
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "codegen: no backend for target '%s' in this build",
                      target ? target->name : "?");
  if (count && !funcs)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "codegen %s: missing functions", backend->name);
  for (uint32_t i = 0; i < count; ++i) {
    if (!funcs[i] || !funcs[i]->name || !funcs[i]->body)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "codegen %s: function %u is incomplete", backend->name, i);
    ingot_status_t st = ingot_ir_verify(funcs[i]);
    if (st != INGOT_OK) return ingot_fail_prefix(st, "codegen %s", backend->name);
  }
  /* Backends with vectors or a thread pool generate CPU code: a loop bound
   * to a GPU's blocks or threads is a schedule made for another target. */
  for (uint32_t i = 0; i < count && backend->vectors != INGOT_CODEGEN_VECTOR_NONE; ++i) {
    const ingot_ir_stmt_t* g = first_gpu_loop(funcs[i]->body);
    uint32_t params = ingot_ir_param_count(funcs[i]);
    if (params < funcs[i]->buffer_count)
      return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                        "codegen %s: function '%s': buffer '%s' is in a GPU block's shared memory; this backend "
                        "generates CPU code",
                        backend->name, funcs[i]->name, funcs[i]->buffers[params].name);
    if (g && g->kind == INGOT_IR_STMT_BARRIER)
      return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                        "codegen %s: function '%s': a barrier of a GPU block; this backend generates CPU code",
                        backend->name, funcs[i]->name);
    if (g)
      return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                        "codegen %s: function '%s': loop '%s' is bound to a GPU's %s (axis %c); this backend "
                        "generates CPU code",
                        backend->name, funcs[i]->name, funcs[i]->vars[g->u.loop.var].name,
                        g->u.loop.loop_kind == INGOT_IR_LOOP_GPU_BLOCK ? "blocks" : "threads",
                        "xyz"[g->u.loop.gpu_axis % 3]);
  }
  ingot_ir_func_t** out = ingot_xcalloc(count ? count : 1, sizeof(*out));
  for (uint32_t i = 0; i < count; ++i) {
    prep_t p = {funcs[i], NULL, target, backend->vectors};
    out[i] = p.dst = copy_func(funcs[i]);
    out[i]->body = prep_stmt(&p, funcs[i]->body, false, false);
  }
  out_prepared->funcs = out;
  out_prepared->count = count;
  return INGOT_OK;
}
