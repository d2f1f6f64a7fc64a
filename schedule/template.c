/* Schedule templates per op class, and the one place a schedule is chosen.
 *
 * A template reads the kernel's stages (lower.h) and emits directives from
 * knob values; it never touches the function, so the same template + knobs
 * always give the same directives for a kernel (that is what the tuning log
 * records). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule/schedule.h"
#include "schedule_internal.h"

/* Below this many iterations a stage is not worth handing to the pool. */
#define PARALLEL_MIN_WORK 4096

typedef struct knob_info_t {
  const char* name;
  int64_t min, max;
} knob_info_t;

static const knob_info_t k_knobs[] = {
    {"threads", 1, 4096},       /* fuse outer loops until this many iterations */
    {"vector_bytes", 1, 256},   /* SIMD width: lanes = vector_bytes / dtype size */
    {"unroll", 1, 64},          /* contraction: vectors per inner (vectorized) loop */
    {"order", 0, 1},            /* contraction: 0 = reduce, j_o, j_i; 1 = j_o, reduce, j_i */
    {"tile", 1, 32},            /* contraction: rows of the register tile (1: none) */
};
enum { KNOB_THREADS, KNOB_VECTOR_BYTES, KNOB_UNROLL, KNOB_ORDER, KNOB_TILE, KNOB_COUNT_ };

typedef struct template_info_t {
  const char* name;
  ingot_op_class_t op_class;
  uint32_t knobs;               /* bit mask over k_knobs */
  int64_t default_unroll;
} template_info_t;

#define KB(k) (1u << (k))
static const template_info_t k_templates[] = {
    {"injective", INGOT_OP_CLASS_INJECTIVE, KB(KNOB_THREADS) | KB(KNOB_VECTOR_BYTES), 1},
    {"contraction.direct", INGOT_OP_CLASS_CONTRACTION,
     KB(KNOB_THREADS) | KB(KNOB_VECTOR_BYTES) | KB(KNOB_UNROLL) | KB(KNOB_ORDER) | KB(KNOB_TILE), 2},
    {"pool", INGOT_OP_CLASS_POOL, KB(KNOB_THREADS) | KB(KNOB_VECTOR_BYTES) | KB(KNOB_UNROLL) | KB(KNOB_ORDER), 1},
    {"row", INGOT_OP_CLASS_ROW, KB(KNOB_THREADS) | KB(KNOB_VECTOR_BYTES), 1},
};
#define TEMPLATE_COUNT (sizeof(k_templates) / sizeof(k_templates[0]))

static const template_info_t* find_template(const char* name) {
  for (size_t i = 0; name && i < TEMPLATE_COUNT; ++i)
    if (strcmp(k_templates[i].name, name) == 0) return &k_templates[i];
  return NULL;
}

const char* ingot_schedule_template_for(ingot_op_class_t op_class) {
  for (size_t i = 0; i < TEMPLATE_COUNT; ++i)
    if (k_templates[i].op_class == op_class) return k_templates[i].name;
  return NULL;
}

/* ---- planning ---- */

typedef struct plan_t {
  const ingot_kernel_t* kernel;
  const ingot_ir_func_t* f;
  ingot_schedule_t* s;
  int64_t knob[KNOB_COUNT_];
  int64_t accumulators;          /* vector registers a register tile may hold */
  bool finish_folded;            /* the stage just planned folds the next (FINISH) one */
  INGOT_VEC(const char*) names;  /* names this plan created */
} plan_t;

/* A loop name unused in the function and by this plan. */
static const char* fresh_name(plan_t* p, const char* base) {
  const char* name = base;
  for (int n = 2;; ++n) {
    bool taken = ingot_ir_find_var(p->f, name) != UINT32_MAX;
    for (size_t i = 0; i < p->names.count && !taken; ++i) taken = strcmp(p->names.data[i], name) == 0;
    if (!taken) break;
    name = ingot_arena_printf(&p->s->arena, "%s%d", base, n);
  }
  if (name == base) name = ingot_arena_strdup(&p->s->arena, base);
  INGOT_VEC_PUSH(p->names, name);
  return name;
}

static void emit_mark(plan_t* p, ingot_directive_kind_t kind, const char* loop) {
  ingot_directive_t d = {0};
  d.kind = kind;
  d.loop = loop;
  ingot_schedule_add(p->s, &d);
}

static const char* emit_split(plan_t* p, const char* loop, int64_t factor, const char** out_inner) {
  char base[160];
  ingot_directive_t d = {0};
  d.kind = INGOT_DIRECTIVE_SPLIT;
  d.loop = loop;
  d.factor = factor;
  snprintf(base, sizeof(base), "%s_o", loop);
  d.outer_name = fresh_name(p, base);
  snprintf(base, sizeof(base), "%s_i", loop);
  d.inner_name = fresh_name(p, base);
  ingot_schedule_add(p->s, &d);
  *out_inner = d.inner_name;
  return d.outer_name;
}

static const char* emit_fuse(plan_t* p, const char* outer, const char* inner) {
  char base[160];
  snprintf(base, sizeof(base), "%s_%s", outer, inner);
  ingot_directive_t d = {0};
  d.kind = INGOT_DIRECTIVE_FUSE;
  d.loop = outer;
  d.inner = inner;
  d.outer_name = fresh_name(p, base);
  ingot_schedule_add(p->s, &d);
  return d.outer_name;
}

/* A split factor for a loop of `extent` near `target`: a divisor of the
 * extent (no tail guard) in [target/2, 2*target] that fills vector registers
 * best (d / (lanes * ceil(d / lanes))), then the one nearest the target;
 * `target` (with a guarded tail) when none divides. An extent up to the
 * target (or up to 4x it when nothing divides) is taken whole. */
static int64_t pick_factor(int64_t extent, int64_t target, int64_t lanes) {
  if (extent <= target) return extent;
  int64_t lo = target / 2 > lanes ? target / 2 : lanes, hi = target * 2;
  int64_t best = 0;
  double best_fill = 0;
  int64_t best_dist = INT64_MAX;
  for (int64_t d = lo; d <= hi && d <= extent; ++d) {
    if (extent % d) continue;
    double fill = (double)d / (double)(lanes * ((d + lanes - 1) / lanes));
    int64_t dist = d > target ? d - target : target - d;
    if (fill > best_fill + 1e-9 || (fill > best_fill - 1e-9 && dist < best_dist)) {
      best = d;
      best_fill = fill;
      best_dist = dist;
    }
  }
  if (best) return best;
  /* No divisor: a short loop is taken whole rather than guarded. */
  return extent <= 4 * target ? extent : target;
}

/* Iterations of the innermost statements of a nest. */
static int64_t nest_work(const ingot_ir_stmt_t* s) {
  if (!s) return 0;
  switch (s->kind) {
    case INGOT_IR_STMT_FOR: {
      int64_t w = nest_work(s->u.loop.body);
      return w > INT64_MAX / s->u.loop.extent ? INT64_MAX : w * s->u.loop.extent;
    }
    case INGOT_IR_STMT_BLOCK: {
      int64_t w = 0;
      for (uint32_t i = 0; i < s->u.block.count; ++i) {
        int64_t x = nest_work(s->u.block.stmts[i]);
        w = w > INT64_MAX - x ? INT64_MAX : w + x;
      }
      return w;
    }
    case INGOT_IR_STMT_IF: return nest_work(s->u.cond.then_body);
    default: return 1;
  }
}

/* Parallel over the outermost of `loops` (outer -> inner, consecutive in one
 * nest), fusing inner ones in while it has fewer iterations than `threads`. */
static void plan_parallel(plan_t* p, const char* const* loops, const int64_t* extents, uint32_t count,
                          int64_t work) {
  if (count == 0 || work < PARALLEL_MIN_WORK) return;
  const char* cur = loops[0];
  int64_t e = extents[0];
  for (uint32_t i = 1; i < count && e < p->knob[KNOB_THREADS]; ++i) {
    cur = emit_fuse(p, cur, loops[i]);
    e *= extents[i];
  }
  if (e >= 2) emit_mark(p, INGOT_DIRECTIVE_PARALLEL, cur);
}

/* The dtype stored by the first STORE in a statement (F32 if none). */
static ingot_dtype_t stored_dtype(const ingot_ir_func_t* f, const ingot_ir_stmt_t* s) {
  if (!s) return INGOT_DTYPE_INVALID;
  switch (s->kind) {
    case INGOT_IR_STMT_STORE: return f->buffers[s->u.store.buffer].dtype;
    case INGOT_IR_STMT_FOR: return stored_dtype(f, s->u.loop.body);
    case INGOT_IR_STMT_IF: return stored_dtype(f, s->u.cond.then_body);
    case INGOT_IR_STMT_BLOCK:
      for (uint32_t i = 0; i < s->u.block.count; ++i) {
        ingot_dtype_t t = stored_dtype(f, s->u.block.stmts[i]);
        if (t != INGOT_DTYPE_INVALID) return t;
      }
      return INGOT_DTYPE_INVALID;
    default: return INGOT_DTYPE_INVALID;
  }
}

typedef struct stage_loops_t {
  const char* names[2 * INGOT_MAX_STAGE_AXES + 2];
  int64_t extents[2 * INGOT_MAX_STAGE_AXES + 2];
  uint32_t count;
} stage_loops_t;

static void loops_push(stage_loops_t* l, const char* name, int64_t extent) {
  l->names[l->count] = name;
  l->extents[l->count++] = extent;
}

static ingot_status_t stage_loop(plan_t* p, uint32_t stage, uint32_t var, const char** out_name,
                                 int64_t* out_extent, const ingot_ir_stmt_t** out_loop) {
  if (var >= p->f->var_count)
    return ingot_fail(INGOT_ERROR_INTERNAL, "kernel '%s': stage %u names variable %u of %u", p->f->name, stage, var,
                      p->f->var_count);
  const char* name = p->f->vars[var].name;
  const ingot_ir_stmt_t* loop = ingot_schedule_find_loop(p->f, name);
  if (!loop)
    return ingot_fail(INGOT_ERROR_INTERNAL, "kernel '%s': stage %u loop '%s' is not in the body", p->f->name, stage,
                      name);
  *out_name = name;
  *out_extent = loop->u.loop.extent;
  if (out_loop) *out_loop = loop;
  return INGOT_OK;
}

static int64_t lanes_for(plan_t* p, ingot_dtype_t dtype) {
  size_t size = ingot_dtype_size(dtype);
  if (!size) size = 4;
  int64_t lanes = p->knob[KNOB_VECTOR_BYTES] / (int64_t)size;
  return lanes < 1 ? 1 : lanes;
}

/* Whether the stage after UPDATE `st` is a FINISH that only transforms each
 * element of the UPDATE's output (a fused activation): the accumulators then
 * store E(acc) and that stage is not planned. */
static bool finish_foldable(plan_t* p, const ingot_stage_t* st) {
  const ingot_stage_t* next = st + 1;
  if (next >= p->kernel->stages + p->kernel->stage_count || next->role != INGOT_STAGE_FINISH) return false;
  /* Only the UPDATE that computes every output (not a kernel whose outputs
   * come from several, such as a partial last weight panel). */
  uint32_t updates = 0;
  for (uint32_t i = 0; i < p->kernel->stage_count; ++i) updates += p->kernel->stages[i].role == INGOT_STAGE_UPDATE;
  if (updates != 1) return false;
  if (st->spatial_count == 0 || next->spatial_count == 0) return false;
  const ingot_ir_stmt_t* update = ingot_schedule_find_loop(p->f, p->f->vars[st->spatial[0]].name);
  const ingot_ir_stmt_t* finish = ingot_schedule_find_loop(p->f, p->f->vars[next->spatial[0]].name);
  uint32_t buffer;
  return update && finish && ingot_schedule_is_epilogue(p->f, finish, &buffer) &&
         ingot_schedule_nest_store_buffer(update) == buffer;
}

/* A register-blocked UPDATE: one spatial axis (the output channels of a
 * conv, the rows of a matmul) is split into a tile of `rows` that goes
 * innermost but one, unrolled, above the vector loop; the reduce loops go
 * just outside the tile, so every accumulator y[tile row, vector] keeps the
 * same address through the whole reduction and the compiler holds it in a
 * register:
 *   outer spatial (t -> t_o), vec_o | reduce... | t_i (unrolled) | vec (vector)
 * The vector loop is split once more into whole vectors (unrolled) when its
 * extent is a multiple of the lanes. */
static ingot_status_t plan_register_tile(plan_t* p, const ingot_stage_t* st, const char* const* sname,
                                         const int64_t* sext, const char* const* rname, const int64_t* rext,
                                         const char* vec, const char* vec_outer, int64_t vec_outer_extent,
                                         int64_t vec_factor, int64_t lanes, int64_t work) {
  uint32_t k = st->spatial_count - 1;
  /* The tiled axis: the one lowering names, else the one just outside the
   * vector one. */
  uint32_t t = st->tile_axis >= 0 && (uint32_t)st->tile_axis < k ? (uint32_t)st->tile_axis : k - 1;
  int64_t vec_extent = vec_outer ? vec_factor : sext[k];
  int64_t vectors = (vec_extent + lanes - 1) / lanes;
  int64_t rows = p->knob[KNOB_TILE];
  bool chosen = rows != 0;
  if (!chosen) {
    rows = p->accumulators / (vectors ? vectors : 1);
    if (rows > 16) rows = 16;
    if (rows < 1) rows = 1;
  }
  if (rows > sext[t]) rows = sext[t];
  /* A divisor of the axis (no tail guard); when the best is under half the
   * wanted rows (a prime extent such as 13), the whole axis if its
   * accumulators still fit in the registers. */
  int64_t tile = 1;
  for (int64_t d = rows; d >= 1; --d)
    if (sext[t] % d == 0) {
      tile = d;
      break;
    }
  if (!chosen && 2 * tile < rows && sext[t] <= p->accumulators) tile = sext[t];
  /* Rows x vectors over the register budget (13 rows of 2 vectors): the
   * vectors go outside the reduction, one at a time through the tile. */
  bool vectors_outside = !chosen && tile * vectors > p->accumulators;
  const char* t_o = sname[t];
  const char* t_i = NULL;
  if (tile >= 2 && tile < sext[t]) t_o = emit_split(p, sname[t], tile, &t_i);
  else if (tile == sext[t] && tile >= 2) t_o = NULL, t_i = sname[t];
  const char* v_i = vec;
  const char* v_o2 = NULL;
  if (vec_extent > lanes && vec_extent % lanes == 0 && (vectors <= 4 || vectors_outside))
    v_o2 = emit_split(p, vec, lanes, &v_i);
  if (!v_o2) vectors_outside = false;

  stage_loops_t order = {0}, par = {0};
  for (uint32_t i = 0; i < k; ++i) {
    if (i == t) {
      if (t_o) {
        int64_t e = t_i ? sext[t] / tile : sext[t];
        loops_push(&order, t_o, e);
        loops_push(&par, t_o, e);
      }
      continue;
    }
    loops_push(&order, sname[i], sext[i]);
    loops_push(&par, sname[i], sext[i]);
  }
  if (vec_outer) {
    loops_push(&order, vec_outer, vec_outer_extent);
    loops_push(&par, vec_outer, vec_outer_extent);
  }
  if (vectors_outside) loops_push(&order, v_o2, vectors);
  for (uint32_t i = 0; i < st->reduce_count; ++i) loops_push(&order, rname[i], rext[i]);
  if (t_i) loops_push(&order, t_i, tile);
  if (v_o2 && !vectors_outside) loops_push(&order, v_o2, vectors);
  loops_push(&order, v_i, lanes);
  ingot_directive_t d = {0};
  d.kind = INGOT_DIRECTIVE_REORDER;
  d.order = order.names;
  d.order_count = order.count;
  ingot_schedule_add(p->s, &d);
  plan_parallel(p, par.names, par.extents, par.count, work);
  if (t_i) emit_mark(p, INGOT_DIRECTIVE_UNROLL, t_i);
  if (v_o2 && !vectors_outside) emit_mark(p, INGOT_DIRECTIVE_UNROLL, v_o2);
  emit_mark(p, INGOT_DIRECTIVE_VECTORIZE, v_i);
  if (st->reduce_count > 0) {
    /* The FINISH stage right after (a fused activation) folds into the
     * accumulators' stores. */
    ingot_directive_t d2 = {0};
    d2.kind = INGOT_DIRECTIVE_ACCUMULATE;
    d2.loop = rname[0];
    d2.factor = finish_foldable(p, st) ? 1 : 0;
    p->finish_folded = d2.factor == 1;
    ingot_schedule_add(p->s, &d2);
  }
  return INGOT_OK;
}

static ingot_status_t plan_stage(plan_t* p, uint32_t index) {
  const ingot_stage_t* st = &p->kernel->stages[index];
  if (st->spatial_count == 0 || st->spatial_count > INGOT_MAX_STAGE_AXES || st->reduce_count > INGOT_MAX_STAGE_AXES)
    return ingot_fail(INGOT_ERROR_INTERNAL, "kernel '%s': stage %u has %u spatial and %u reduce loops", p->f->name,
                      index, st->spatial_count, st->reduce_count);
  const char* sname[INGOT_MAX_STAGE_AXES];
  int64_t sext[INGOT_MAX_STAGE_AXES];
  const char* rname[INGOT_MAX_STAGE_AXES];
  int64_t rext[INGOT_MAX_STAGE_AXES];
  const ingot_ir_stmt_t* outer = NULL;
  ingot_status_t s;
  for (uint32_t i = 0; i < st->spatial_count; ++i)
    if ((s = stage_loop(p, index, st->spatial[i], &sname[i], &sext[i], i == 0 ? &outer : NULL)) != INGOT_OK) return s;
  for (uint32_t i = 0; i < st->reduce_count; ++i)
    if ((s = stage_loop(p, index, st->reduce[i], &rname[i], &rext[i], NULL)) != INGOT_OK) return s;
  int64_t work = nest_work(outer);

  if (st->role == INGOT_STAGE_OTHER) {
    /* Only the outermost loop is known to be spatial; inner loops that
     * lowering names independent are vectorized. */
    if (sext[0] >= 2 && work >= PARALLEL_MIN_WORK) emit_mark(p, INGOT_DIRECTIVE_PARALLEL, sname[0]);
    for (uint32_t i = 0; i < st->vector_loop_count; ++i) {
      const char* name = NULL;
      int64_t extent = 0;
      const ingot_ir_stmt_t* loop = NULL;
      if ((s = stage_loop(p, index, st->vector_loops[i], &name, &extent, &loop)) != INGOT_OK) return s;
      int64_t lanes = lanes_for(p, stored_dtype(p->f, loop));
      if (lanes < 2 || extent < lanes) continue;
      int64_t factor = pick_factor(extent, lanes, lanes);
      const char* vec = name;
      if (factor < extent) emit_split(p, name, factor, &vec);
      emit_mark(p, INGOT_DIRECTIVE_VECTORIZE, vec);
    }
    return INGOT_OK;
  }

  int64_t lanes = lanes_for(p, stored_dtype(p->f, outer));
  uint32_t k = st->spatial_count - 1;
  /* An innermost axis shorter than a vector that divides it (a conv weight
   * block of 8 on 16 lanes) is one narrower vector. */
  if (sext[k] < lanes && sext[k] >= 4 && lanes % sext[k] == 0) lanes = sext[k];
  bool update = st->role == INGOT_STAGE_UPDATE && st->reduce_count > 0;
  int64_t target = update ? lanes * p->knob[KNOB_UNROLL] : lanes;

  /* Split the innermost spatial loop for the vector lanes. */
  const char* vec = NULL;      /* the loop to vectorize */
  const char* vec_outer = NULL;
  int64_t vec_outer_extent = 0, vec_factor = 0;
  if (lanes > 1 && sext[k] >= lanes) {
    int64_t factor = vec_factor = pick_factor(sext[k], target, lanes);
    if (factor < sext[k]) {
      vec_outer = emit_split(p, sname[k], factor, &vec);
      vec_outer_extent = (sext[k] + factor - 1) / factor;
    } else {
      vec = sname[k];
    }
  }

  stage_loops_t par = {0};
  for (uint32_t i = 0; i < k; ++i) loops_push(&par, sname[i], sext[i]);

  if (!update) {
    if (!vec) loops_push(&par, sname[k], sext[k]);
    else if (vec_outer) loops_push(&par, vec_outer, vec_outer_extent);
    plan_parallel(p, par.names, par.extents, par.count, work);
    if (vec) emit_mark(p, INGOT_DIRECTIVE_VECTORIZE, vec);
    return INGOT_OK;
  }

  if (p->kernel->op_class == INGOT_OP_CLASS_CONTRACTION && vec && k >= 1 && p->knob[KNOB_TILE] != 1)
    return plan_register_tile(p, st, sname, sext, rname, rext, vec, vec_outer, vec_outer_extent, vec_factor, lanes, work);

  /* UPDATE: the reduce loops move inside the outer spatial loops and outside
   * the innermost spatial (vector) loop. */
  stage_loops_t order = {0};
  for (uint32_t i = 0; i < k; ++i) loops_push(&order, sname[i], sext[i]);
  /* The split-off outer part of the vector loop goes outside the reduce
   * loops when asked, or when the other spatial loops are too few to keep
   * the threads busy (matmul with one row). */
  int64_t outer_spatial = 1;
  for (uint32_t i = 0; i < k; ++i) outer_spatial *= sext[i];
  bool outer_first = vec_outer && (p->knob[KNOB_ORDER] == 1 || outer_spatial < p->knob[KNOB_THREADS]);
  if (outer_first) {
    loops_push(&order, vec_outer, vec_outer_extent);
    loops_push(&par, vec_outer, vec_outer_extent);
  }
  if (!vec && k == 0) {
    /* Nothing to vectorize and no outer spatial loop: keep the spatial loop
     * outside so that it can run in parallel. */
    loops_push(&order, sname[k], sext[k]);
    loops_push(&par, sname[k], sext[k]);
    for (uint32_t i = 0; i < st->reduce_count; ++i) loops_push(&order, rname[i], rext[i]);
  } else {
    for (uint32_t i = 0; i < st->reduce_count; ++i) loops_push(&order, rname[i], rext[i]);
    if (vec_outer && !outer_first) loops_push(&order, vec_outer, vec_outer_extent);
    loops_push(&order, vec ? vec : sname[k], vec ? 0 : sext[k]);
  }
  /* The nest as it is now: spatial (innermost maybe split), then reduce. */
  bool same = true;
  {
    stage_loops_t now = {0};
    for (uint32_t i = 0; i < k; ++i) loops_push(&now, sname[i], sext[i]);
    if (vec_outer) {
      loops_push(&now, vec_outer, 0);
      loops_push(&now, vec, 0);
    } else {
      loops_push(&now, sname[k], 0);
    }
    for (uint32_t i = 0; i < st->reduce_count; ++i) loops_push(&now, rname[i], 0);
    for (uint32_t i = 0; i < order.count; ++i) same &= strcmp(now.names[i], order.names[i]) == 0;
  }
  if (!same) {
    ingot_directive_t d = {0};
    d.kind = INGOT_DIRECTIVE_REORDER;
    d.order = order.names;
    d.order_count = order.count;
    ingot_schedule_add(p->s, &d);
  }
  plan_parallel(p, par.names, par.extents, par.count, work);
  if (vec) emit_mark(p, INGOT_DIRECTIVE_VECTORIZE, vec);
  /* A pooling window reduces in a register that starts at the window's
   * initial value: reduce loops right outside the vector loop (nothing
   * split off between them). */
  if (p->kernel->op_class == INGOT_OP_CLASS_POOL && vec && st->reduce_count > 0 &&
      (!vec_outer || (outer_first && sext[k] % vec_factor == 0)) && ingot_schedule_nest_accumulates(outer))
    emit_mark(p, INGOT_DIRECTIVE_ACCUMULATE, rname[0]);
  return INGOT_OK;
}

ingot_status_t ingot_schedule_from_template(const ingot_kernel_t* kernel, const ingot_target_t* target,
                                            const char* template_name, const char* const* knob_names,
                                            const int64_t* knob_values, uint32_t knob_count,
                                            ingot_schedule_t* out) {
  if (!kernel || !kernel->func || !target || !out)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_schedule_from_template: missing argument");
  const template_info_t* t = find_template(template_name);
  if (!t)
    return ingot_fail(INGOT_ERROR_NOT_FOUND, "kernel '%s': unknown schedule template '%s'", kernel->func->name,
                      template_name ? template_name : "(null)");
  if (t->op_class != kernel->op_class)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "kernel '%s': template '%s' does not fit its op class %d",
                      kernel->func->name, t->name, (int)kernel->op_class);

  plan_t p = {0};
  p.kernel = kernel;
  p.f = kernel->func;
  p.s = out;
  p.knob[KNOB_THREADS] = target->max_threads ? target->max_threads : 8;
  p.knob[KNOB_VECTOR_BYTES] = target->vector_bytes ? target->vector_bytes : 16;
  p.knob[KNOB_UNROLL] = t->default_unroll;
  p.knob[KNOB_ORDER] = 0;
  p.knob[KNOB_TILE] = 0; /* 0: chosen per stage from the vector registers */
  /* Accumulators of a register tile: three quarters of the vector registers
   * (32 on AVX-512 and AArch64 leave 24, the 16 of SSE/AVX2 leave 12). */
  p.accumulators = (target->vector_registers ? target->vector_registers : 16) * 3 / 4;
  for (uint32_t i = 0; i < knob_count; ++i) {
    int k = -1;
    for (int j = 0; j < KNOB_COUNT_; ++j)
      if ((t->knobs & KB(j)) && knob_names[i] && strcmp(knob_names[i], k_knobs[j].name) == 0) k = j;
    if (k < 0)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "kernel '%s': template '%s' has no knob '%s'", p.f->name,
                        t->name, knob_names[i] ? knob_names[i] : "(null)");
    if (knob_values[i] < k_knobs[k].min || knob_values[i] > k_knobs[k].max)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "kernel '%s': template '%s' knob %s=%lld outside [%lld, %lld]",
                        p.f->name, t->name, k_knobs[k].name, (long long)knob_values[i], (long long)k_knobs[k].min,
                        (long long)k_knobs[k].max);
    p.knob[k] = knob_values[i];
  }

  ingot_schedule_deinit(out);
  ingot_schedule_init(out);
  out->template_name = ingot_arena_strdup(&out->arena, t->name);
  for (int j = 0; j < KNOB_COUNT_; ++j)
    if (t->knobs & KB(j)) ingot_schedule_set_knob(out, k_knobs[j].name, p.knob[j]);

  ingot_status_t st = INGOT_OK;
  for (uint32_t i = 0; i < kernel->stage_count && st == INGOT_OK; ++i) {
    p.finish_folded = false;
    st = plan_stage(&p, i);
    if (p.finish_folded) ++i; /* the FINISH stage is gone once applied */
  }
  INGOT_VEC_FREE(p.names);
  if (st != INGOT_OK) {
    ingot_schedule_deinit(out);
    ingot_schedule_init(out);
  }
  return st;
}

/* ---- tuning logs ---- */

ingot_status_t ingot_schedule_choose(const ingot_kernel_t* kernel, const ingot_target_t* target,
                                     const ingot_tuning_log_t* log, ingot_schedule_t* out) {
  if (!kernel || !kernel->func || !target || !out)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_schedule_choose: missing argument");
  const char* name = ingot_schedule_template_for(kernel->op_class);
  if (!name)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "kernel '%s': no schedule template for op class %d",
                      kernel->func->name, (int)kernel->op_class);
  /* The fastest record for this workload and target whose knobs still fit. */
  if (log && kernel->workload) {
    const tuning_record_t* best = NULL;
    for (uint32_t i = 0; i < log->count; ++i) {
      const tuning_record_t* r = &log->records[i];
      if (strcmp(r->workload, kernel->workload) != 0 || strcmp(r->target, target->name) != 0) continue;
      if (strcmp(r->template_name, name) != 0) continue;
      if (best && best->time_ms <= r->time_ms) continue;
      ingot_schedule_t trial;
      ingot_schedule_init(&trial);
      ingot_status_t st = ingot_schedule_from_template(kernel, target, r->template_name, r->knob_names,
                                                       r->knob_values, r->knob_count, &trial);
      ingot_schedule_deinit(&trial);
      if (st == INGOT_OK) best = r;
    }
    ingot_compiler_error_clear();
    if (best)
      return ingot_schedule_from_template(kernel, target, best->template_name, best->knob_names, best->knob_values,
                                          best->knob_count, out);
  }
  return ingot_schedule_from_template(kernel, target, name, NULL, NULL, 0, out);
}
