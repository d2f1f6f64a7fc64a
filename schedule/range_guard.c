/* Range guards: a kernel over a ranged dim stops at the run's size.
 *
 * A bundle with ranged inputs (graph/ranges.c) lays every tensor out at its
 * largest shape, and what a kernel writes past the run's size along a
 * ranged dim is never read: a reduction along such a dim reads it through
 * a mask, and the runtime packs outputs from the first entries. So a
 * kernel may skip those entries. This pass, after the schedule, wraps the
 * body of each loop that walks a ranged dim of the kernel's output in
 * `if (first position of this iteration along the dim < the run's size)`,
 * reading the size from the int64 value the graph keeps for it
 * (ingot_graph_t.run_size), which becomes one more input of the kernel.
 *
 * A loop is guarded along output dim d when every store inside it goes to
 * the output at an index affine in the loop variables with non-negative
 * coefficients, whose position along d is the same combination of the
 * variables of this loop and the loops around it in every store, up to a
 * constant (the loops inside and the constants past the least then only
 * add to it), and nothing inside assigns a local
 * declared outside. Vectorized and unrolled loops (and loops inside them)
 * are never guarded: their extents are the schedule's, and a guard there
 * would cost more than it saves. A reduction's mask (the identity past the
 * size, read whole) has no run_sym and is never guarded; a window's mask is
 * written to the size + its margin (ingot_value_t.run_margin), as far as
 * the window reads. */
#include <stdlib.h>
#include <string.h>

#include "schedule/schedule.h"

#define GUARD_MAX_DEPTH 32
#define GUARD_MAX_ATOMS 48

/* A term of an index: coef * var, coef * (var / c) or coef * (var % c),
 * var the loop at `depth` of the stack. */
typedef enum atom_kind_t { ATOM_VAR, ATOM_DIV, ATOM_MOD } atom_kind_t;
typedef struct atom_t {
  int32_t depth;
  atom_kind_t kind;
  int64_t c;
  int64_t coef;
} atom_t;

typedef struct guard_site_t {
  const ingot_ir_stmt_t* loop;
  int32_t dim;                     /* output dim */
  int32_t depth;                   /* the loop's depth (0: outermost) */
  bool valid, useful;
  int mode;                        /* 0 unset; 1: sum(coef * var) + c0; 2: that % extent */
  int64_t extent;                  /* the output dim's size (mode 2) */
  atom_t atoms[GUARD_MAX_ATOMS];   /* the position's terms over loops at depth <= depth */
  uint32_t atom_count;
  uint32_t vars[GUARD_MAX_DEPTH];  /* per depth <= depth: the loop var */
  int64_t c0;                      /* and its constant: the least over the stores */
} guard_site_t;

typedef struct guard_t {
  ingot_ir_func_t* f;
  uint32_t out;                    /* the output buffer */
  const ingot_ir_buffer_t* ob;
  int32_t dims[INGOT_MAX_RANK];    /* its ranged dims */
  int64_t margin[INGOT_MAX_RANK];  /* per ranged dim: entries past the size to write too */
  uint32_t syms[INGOT_MAX_RANK];
  int32_t dim_count;
  const ingot_ir_stmt_t* stack[GUARD_MAX_DEPTH];
  int32_t depth;
  int32_t* declared_at;            /* per var: the depth its LOCAL is at, or -1 */
  INGOT_VEC(guard_site_t) sites;
  bool overflow;
} guard_t;

static guard_site_t* site_of(guard_t* g, const ingot_ir_stmt_t* loop, int32_t dim, int32_t depth) {
  for (uint32_t i = 0; i < g->sites.count; ++i)
    if (g->sites.data[i].loop == loop && g->sites.data[i].dim == dim) return &g->sites.data[i];
  guard_site_t s;
  memset(&s, 0, sizeof s);
  s.loop = loop;
  s.dim = dim;
  s.depth = depth;
  s.valid = true;
  for (int32_t j = 0; j < depth && j < g->depth; ++j) s.vars[j] = g->stack[j]->u.loop.var;
  s.vars[depth] = loop->u.loop.var;
  INGOT_VEC_PUSH(g->sites, s);
  return &g->sites.data[g->sites.count - 1];
}

/* Every loop on the stack from `from` (depth) inwards: not guardable. */
static void invalidate(guard_t* g, int32_t from) {
  for (int32_t j = from; j < g->depth; ++j)
    for (int32_t k = 0; k < g->dim_count; ++k) site_of(g, g->stack[j], g->dims[k], j)->valid = false;
}

/* The stack depth of loop var v, or -1. */
static int32_t depth_of(const guard_t* g, uint32_t v) {
  for (int32_t j = 0; j < g->depth; ++j)
    if (g->stack[j]->u.loop.var == v) return j;
  return -1;
}

typedef struct terms_t {
  atom_t atoms[GUARD_MAX_ATOMS];
  uint32_t count;
  int64_t c0;
} terms_t;

static bool add_atom(const guard_t* g, terms_t* t, uint32_t var, atom_kind_t kind, int64_t c, int64_t coef) {
  int32_t depth = depth_of(g, var);
  if (depth < 0) return false;
  for (uint32_t i = 0; i < t->count; ++i)
    if (t->atoms[i].depth == depth && t->atoms[i].kind == kind && t->atoms[i].c == c) {
      t->atoms[i].coef += coef;
      return true;
    }
  if (t->count == GUARD_MAX_ATOMS) return false;
  t->atoms[t->count++] = (atom_t){depth, kind, c, coef};
  return true;
}

/* expr = sum(atoms) + c0; false if not so. */
static bool linear(const guard_t* g, const ingot_ir_expr_t* e, int64_t scale, terms_t* t) {
  const ingot_ir_func_t* f = g->f;
  switch (e->kind) {
    case INGOT_IR_EXPR_INT: t->c0 += scale * e->u.i; return true;
    case INGOT_IR_EXPR_VAR:
      return f->vars[e->u.var].kind == INGOT_IR_VAR_LOOP && add_atom(g, t, e->u.var, ATOM_VAR, 0, scale);
    case INGOT_IR_EXPR_BINARY: {
      const ingot_ir_expr_t *a = e->u.binary.a, *b = e->u.binary.b;
      switch (e->u.binary.op) {
        case INGOT_IR_ADD: return linear(g, a, scale, t) && linear(g, b, scale, t);
        case INGOT_IR_SUB: return linear(g, a, scale, t) && linear(g, b, -scale, t);
        case INGOT_IR_MUL:
          if (a->kind == INGOT_IR_EXPR_INT) return linear(g, b, scale * a->u.i, t);
          if (b->kind == INGOT_IR_EXPR_INT) return linear(g, a, scale * b->u.i, t);
          return false;
        case INGOT_IR_DIV: case INGOT_IR_MOD:
          if (a->kind != INGOT_IR_EXPR_VAR || f->vars[a->u.var].kind != INGOT_IR_VAR_LOOP ||
              b->kind != INGOT_IR_EXPR_INT || b->u.i <= 0)
            return false;
          return add_atom(g, t, a->u.var, e->u.binary.op == INGOT_IR_DIV ? ATOM_DIV : ATOM_MOD, b->u.i, scale);
        default: return false;
      }
    }
    default: return false;
  }
}

/* The largest value an atom's var part takes. */
static int64_t atom_max(const guard_t* g, const atom_t* a) {
  int64_t e = g->stack[a->depth]->u.loop.extent;
  switch (a->kind) {
    case ATOM_DIV: return (e - 1) / a->c;
    case ATOM_MOD: return (e < a->c ? e : a->c) - 1;
    default: return e - 1;
  }
}

static int atom_cmp(const void* pa, const void* pb) {
  const atom_t *a = pa, *b = pb;
  if (a->depth != b->depth) return a->depth < b->depth ? -1 : 1;
  if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
  if (a->c != b->c) return a->c < b->c ? -1 : 1;
  return 0;
}

/* The atoms of `t` at depth <= j with coefficients from `coef` (steps
 * along the dim), the zero ones dropped, sorted. */
static uint32_t atoms_upto(const terms_t* t, const int64_t* coef, int32_t j, atom_t* out) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < t->count; ++i)
    if (t->atoms[i].depth <= j && coef[i]) {
      out[n] = t->atoms[i];
      out[n++].coef = coef[i];
    }
  qsort(out, n, sizeof *out, atom_cmp);
  return n;
}

static void visit_store(guard_t* g, const ingot_ir_stmt_t* st) {
  if (st->u.store.buffer != g->out) {
    invalidate(g, 0);
    return;
  }
  terms_t t;
  memset(&t, 0, sizeof t);
  bool ok = linear(g, st->u.store.index, 1, &t) && t.c0 >= 0;
  for (uint32_t i = 0; ok && i < t.count; ++i) ok = t.atoms[i].coef >= 0;
  if (!ok) {
    invalidate(g, 0);
    return;
  }
  int64_t c0 = t.c0;
  const ingot_ir_buffer_t* b = g->ob;
  for (int32_t k = 0; k < g->dim_count; ++k) {
    int32_t d = g->dims[k];
    int64_t inner = 1; /* elements per step of dim d */
    for (int32_t q = d + 1; q < b->rank; ++q) inner *= b->dims[q];
    /* Terms below d (low) must stay below one step of d together; the
     * others move whole steps (al, in steps of d). */
    int64_t D = b->dims[d], low = c0 % inner, c0q = c0 / inner, al[GUARD_MAX_ATOMS] = {0};
    bool fits = true;
    for (uint32_t i = 0; i < t.count && fits; ++i) {
      int64_t c = t.atoms[i].coef;
      if (!c) continue;
      if (c % inner == 0) al[i] = c / inner;
      else if (c < inner) low += c * atom_max(g, &t.atoms[i]);
      else fits = false;
    }
    if (!fits || low >= inner) {
      for (int32_t j = 0; j < g->depth; ++j) site_of(g, g->stack[j], d, j)->valid = false;
      continue;
    }
    /* Mode 1: the steps along d never wrap into the dims above (whole
     * multiples of D aside): the position is sum(mid * atom) + c0 % D. */
    int64_t mid[GUARD_MAX_ATOMS] = {0}, c0_mid = c0q % D, mid_max = c0q % D;
    bool m1 = true;
    for (uint32_t i = 0; i < t.count; ++i) {
      if (!al[i] || al[i] % D == 0) continue;
      if (al[i] < D) {
        mid[i] = al[i];
        mid_max += al[i] * atom_max(g, &t.atoms[i]);
      } else {
        m1 = false;
      }
    }
    if (mid_max >= D) m1 = false;
    bool outside_vector = true;
    for (int32_t j = 0; j < g->depth; ++j) {
      const ingot_ir_stmt_t* loop = g->stack[j];
      guard_site_t* s = site_of(g, loop, d, j);
      ingot_ir_loop_kind_t kind = loop->u.loop.loop_kind;
      if (!outside_vector || (kind != INGOT_IR_LOOP_SERIAL && kind != INGOT_IR_LOOP_PARALLEL)) {
        s->valid = false;
        outside_vector = false;
        continue;
      }
      if (!s->valid) continue;
      /* Mode 2 (a loop fused over d and the dims above, a softmax's rows):
       * (sum(al * atom) + c0 / inner) % D, exact when nothing inside moves
       * along d and every store has the one constant. */
      bool inner_moves = false, moves_here = false;
      for (uint32_t i = 0; i < t.count; ++i) {
        inner_moves |= t.atoms[i].depth > j && al[i] % D != 0;
        moves_here |= t.atoms[i].depth == j && (m1 ? mid[i] : al[i] % D) != 0;
      }
      int mode = m1 ? 1 : inner_moves ? 0 : 2;
      atom_t atoms[GUARD_MAX_ATOMS];
      uint32_t n = atoms_upto(&t, mode == 1 ? mid : al, j, atoms);
      int64_t c = mode == 1 ? c0_mid : c0q;
      if (!mode || (s->mode && s->mode != mode)) {
        s->valid = false;
      } else if (!s->mode) {
        s->mode = mode;
        memcpy(s->atoms, atoms, sizeof(atom_t) * n);
        s->atom_count = n;
        s->c0 = c;
        s->extent = D;
        s->useful = moves_here;
      } else if (s->atom_count != n || memcmp(s->atoms, atoms, sizeof(atom_t) * n) != 0 ||
                 (mode == 2 && c != s->c0)) {
        s->valid = false;
      } else if (c < s->c0) {
        s->c0 = c; /* mode 1: the stores' first position (a register tile's rows) */
      }
    }
  }
}

static void visit(guard_t* g, const ingot_ir_stmt_t* st) {
  switch (st->kind) {
    case INGOT_IR_STMT_FOR:
      if (g->depth >= GUARD_MAX_DEPTH) {
        g->overflow = true;
        return;
      }
      for (int32_t k = 0; k < g->dim_count; ++k) (void)site_of(g, st, g->dims[k], g->depth);
      g->stack[g->depth++] = st;
      visit(g, st->u.loop.body);
      --g->depth;
      return;
    case INGOT_IR_STMT_BLOCK:
      for (uint32_t i = 0; i < st->u.block.count; ++i) visit(g, st->u.block.stmts[i]);
      return;
    case INGOT_IR_STMT_IF: visit(g, st->u.cond.then_body); return;
    case INGOT_IR_STMT_STORE: visit_store(g, st); return;
    case INGOT_IR_STMT_LOCAL: g->declared_at[st->u.local.var] = g->depth; return;
    case INGOT_IR_STMT_ASSIGN: {
      int32_t at = g->declared_at[st->u.local.var];
      invalidate(g, at < 0 ? 0 : at); /* loops entered since its declaration */
      return;
    }
    default: invalidate(g, 0); return;
  }
}

/* The run's size of symbol k: a load of the kernel's input for it, added on
 * first use. */
typedef struct sizes_t {
  uint32_t buffer[256];            /* 1 + the func buffer, per symbol */
  uint32_t added[256];             /* the graph values added, in order */
  uint32_t added_count;
} sizes_t;

static ingot_ir_expr_t* run_size(guard_t* g, const ingot_graph_t* graph, sizes_t* z, uint32_t k) {
  if (!z->buffer[k]) {
    const ingot_value_t* v = &graph->values[graph->run_size[k] - 1];
    z->buffer[k] = ingot_ir_add_buffer(g->f, ingot_arena_printf(&g->f->arena, "run_size%u", k), INGOT_DTYPE_I64,
                                       INGOT_IR_BUFFER_INPUT, v->rank, v->dims) + 1;
    z->added[z->added_count++] = graph->run_size[k] - 1;
  }
  return ingot_ir_load(g->f, z->buffer[k] - 1, ingot_ir_int(g->f, 0));
}

static ingot_ir_stmt_t* rewrite(guard_t* g, const ingot_graph_t* graph, sizes_t* z, ingot_ir_stmt_t* st) {
  switch (st->kind) {
    case INGOT_IR_STMT_FOR: {
      ingot_ir_stmt_t* body = rewrite(g, graph, z, st->u.loop.body);
      ingot_ir_expr_t* cond = NULL;
      for (uint32_t i = 0; i < g->sites.count; ++i) {
        const guard_site_t* s = &g->sites.data[i];
        if (s->loop != st || !s->valid || !s->useful) continue;
        int32_t k = 0;
        while (g->dims[k] != s->dim) ++k;
        /* the first position along the dim of this iteration: the inner
         * loops at 0 */
        ingot_ir_expr_t* pos = ingot_ir_int(g->f, s->c0);
        for (uint32_t i = 0; i < s->atom_count; ++i) {
          const atom_t* a = &s->atoms[i];
          ingot_ir_expr_t* x = ingot_ir_var(g->f, s->vars[a->depth]);
          if (a->kind != ATOM_VAR)
            x = ingot_ir_binary(g->f, a->kind == ATOM_DIV ? INGOT_IR_DIV : INGOT_IR_MOD, x, ingot_ir_int(g->f, a->c));
          pos = ingot_ir_add(g->f, pos, ingot_ir_mul(g->f, ingot_ir_int(g->f, a->coef), x));
        }
        if (s->mode == 2) pos = ingot_ir_binary(g->f, INGOT_IR_MOD, pos, ingot_ir_int(g->f, s->extent));
        ingot_ir_expr_t* limit = run_size(g, graph, z, g->syms[k]);
        if (g->margin[k]) limit = ingot_ir_add(g->f, limit, ingot_ir_int(g->f, g->margin[k]));
        ingot_ir_expr_t* c = ingot_ir_binary(g->f, INGOT_IR_LT, pos, limit);
        cond = cond ? ingot_ir_binary(g->f, INGOT_IR_AND, cond, c) : c;
      }
      if (cond) body = ingot_ir_if(g->f, cond, body);
      return body == st->u.loop.body ? st : ingot_ir_for_like(g->f, st, body);
    }
    case INGOT_IR_STMT_BLOCK: {
      ingot_ir_stmt_t** stmts = INGOT_ARENA_ARRAY(&g->f->arena, ingot_ir_stmt_t*, st->u.block.count ? st->u.block.count : 1);
      bool changed = false;
      for (uint32_t i = 0; i < st->u.block.count; ++i) {
        stmts[i] = rewrite(g, graph, z, st->u.block.stmts[i]);
        changed |= stmts[i] != st->u.block.stmts[i];
      }
      return changed ? ingot_ir_block(g->f, stmts, st->u.block.count) : st;
    }
    case INGOT_IR_STMT_IF: {
      ingot_ir_stmt_t* then_body = rewrite(g, graph, z, st->u.cond.then_body);
      return then_body == st->u.cond.then_body ? st : ingot_ir_if(g->f, st->u.cond.cond, then_body);
    }
    default:
      return st;
  }
}

ingot_status_t ingot_schedule_guard_ranges(const ingot_graph_t* graph, ingot_kernel_t* kernel) {
  if (!graph->run_size_count) return INGOT_OK;
  ingot_ir_func_t* f = kernel->func;
  uint32_t out = UINT32_MAX;
  for (uint32_t a = 0; a < kernel->arg_count; ++a) {
    if (a >= f->buffer_count || f->buffers[a].role == INGOT_IR_BUFFER_SHARED) return INGOT_OK;
    if (f->buffers[a].role != INGOT_IR_BUFFER_OUTPUT) continue;
    if (out != UINT32_MAX) return INGOT_OK; /* one output only */
    out = a;
  }
  if (out == UINT32_MAX || kernel->arg_count != f->buffer_count) return INGOT_OK;
  const ingot_value_t* ov = &graph->values[kernel->args[out]];
  guard_t g;
  memset(&g, 0, sizeof g);
  g.f = f;
  g.out = out;
  g.ob = &f->buffers[out];
  for (int32_t d = 0; d < ov->rank && d < g.ob->rank; ++d) {
    uint32_t k = ov->run_sym[d];
    if (!k || k > graph->run_size_count || !graph->run_size[k]) continue;
    g.dims[g.dim_count] = d;
    g.margin[g.dim_count] = ov->run_margin[d];
    g.syms[g.dim_count++] = k;
  }
  /* the buffer must be the value as the graph lays it out */
  if (!g.dim_count || g.ob->rank != ov->rank || memcmp(g.ob->dims, ov->dims, sizeof(int64_t) * (size_t)ov->rank))
    return INGOT_OK;
  g.declared_at = ingot_xmalloc(sizeof(int32_t) * (f->var_count ? f->var_count : 1));
  for (uint32_t v = 0; v < f->var_count; ++v) g.declared_at[v] = -1;
  visit(&g, f->body);
  /* The size inputs depend on the output alone, not on where the schedule
   * lets a guard go: every target's kernel of a step takes the same
   * arguments (one step, one argument list in the bundle). */
  sizes_t z;
  memset(&z, 0, sizeof z);
  for (int32_t k = 0; k < g.dim_count; ++k) (void)run_size(&g, graph, &z, g.syms[k]);
  if (!g.overflow) f->body = rewrite(&g, graph, &z, f->body);
  uint32_t* args = INGOT_ARENA_ARRAY(&f->arena, uint32_t, kernel->arg_count + z.added_count);
  memcpy(args, kernel->args, sizeof(uint32_t) * kernel->arg_count);
  memcpy(args + kernel->arg_count, z.added, sizeof(uint32_t) * z.added_count);
  kernel->args = args;
  kernel->arg_count += z.added_count;
  ingot_status_t s = ingot_ir_verify(f);
  free(g.declared_at);
  INGOT_VEC_FREE(g.sites);
  return s;
}
