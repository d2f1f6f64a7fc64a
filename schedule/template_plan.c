/* Planning helpers shared by the template files: names, directive emission,
 * vector splits, parallel loops, and the stage walk every template uses.
 * Nothing here decides a knob's value: the knobs come from the space
 * (defaults) or the caller (a tuning log), and plans only derive loop
 * splits from them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template_internal.h"

/* ---- building a space ---- */

void space_add(ingot_schedule_space_t* space, uint32_t mask, schedule_knob_t knob, const int64_t* values,
               uint32_t count, int64_t default_value) {
  if (!(mask & (1u << knob)) || space->knob_count == INGOT_MAX_KNOBS) return;
  ingot_schedule_knob_space_t* k = &space->knobs[space->knob_count++];
  memset(k, 0, sizeof(*k));
  k->name = schedule_knob_name(knob);
  k->default_value = default_value;
  for (uint32_t i = 0; i <= count; ++i) {
    int64_t v = i < count ? values[i] : default_value;
    bool seen = false;
    for (uint32_t j = 0; j < k->value_count && !seen; ++j) seen = k->values[j] == v;
    if (seen || k->value_count == INGOT_MAX_KNOB_VALUES) continue;
    uint32_t at = k->value_count++;
    while (at > 0 && k->values[at - 1] > v) {
      k->values[at] = k->values[at - 1];
      --at;
    }
    k->values[at] = v;
  }
}

void space_add_common(plan_t* p, uint32_t mask, ingot_schedule_space_t* space) {
  static const int64_t k_threads[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  space_add(space, mask, SCHEDULE_KNOB_THREADS, k_threads, sizeof(k_threads) / sizeof(k_threads[0]),
            p->target->max_threads ? p->target->max_threads : 8);
  /* Powers of two from 4 bytes (one float) to the target's vector width. */
  int64_t widest = p->target->vector_bytes ? p->target->vector_bytes : 16;
  int64_t widths[8];
  uint32_t n = 0;
  for (int64_t w = 4; w <= widest && n < 8; w *= 2) widths[n++] = w;
  space_add(space, mask, SCHEDULE_KNOB_VECTOR_BYTES, widths, n, widest);
  static const int64_t k_work[] = {256, 1024, 4096, 16384, 65536};
  space_add(space, mask, SCHEDULE_KNOB_PARALLEL_MIN_WORK, k_work, sizeof(k_work) / sizeof(k_work[0]), 4096);
}

void space_add_update(plan_t* p, uint32_t mask, ingot_schedule_space_t* space, int64_t default_unroll) {
  (void)p;
  static const int64_t k_unroll[] = {1, 2, 4, 8};
  space_add(space, mask, SCHEDULE_KNOB_UNROLL, k_unroll, 4, default_unroll);
  static const int64_t k_order[] = {0, 1};
  space_add(space, mask, SCHEDULE_KNOB_ORDER, k_order, 2, 0);
}

void space_add_layout(plan_t* p, uint32_t mask, ingot_schedule_space_t* space) {
  const ingot_node_layout_options_t* o = &p->kernel->layout_options;
  /* The defaults are the layout the kernel was lowered with, so the default
   * point is the kernel as compiled (the layout rule's choice, which also
   * weighs the target: a MatMulInteger's or a short ConvInteger's dot4
   * words are packed where the options' defaults say not, a GPU packs
   * nothing; or a tuning record's). */
  const ingot_node_layout_t* d = &p->kernel->layout;
  int64_t values[INGOT_LAYOUT_MAX_VALUES];
  static const int64_t k_bool[] = {0, 1};
  if (o->panel_count) {
    space_add(space, mask, SCHEDULE_KNOB_PACK, k_bool, 2, d->pack);
    bool listed = false;
    for (uint32_t i = 0; i < o->panel_count; ++i) listed |= o->panels[i] == d->panel;
    for (uint32_t i = 0; i < o->panel_count; ++i) values[i] = o->panels[i];
    space_add(space, mask, SCHEDULE_KNOB_PANEL, values, o->panel_count,
              d->pack && listed ? d->panel : o->defaults.panel);
  }
  if (o->pointwise) space_add(space, mask, SCHEDULE_KNOB_POINTWISE_MATMUL, k_bool, 2, d->pointwise_matmul);
  if (o->chain_count) {
    bool listed = false;
    for (uint32_t i = 0; i < o->chain_count; ++i) listed |= o->chains[i] == d->chains;
    for (uint32_t i = 0; i < o->chain_count; ++i) values[i] = o->chains[i];
    space_add(space, mask, SCHEDULE_KNOB_CHAINS, values, o->chain_count, listed ? d->chains : o->defaults.chains);
  }
}

/* ---- names and directives ---- */

const char* plan_fresh_name(plan_t* p, const char* base) {
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

void plan_emit_mark(plan_t* p, ingot_directive_kind_t kind, const char* loop) {
  ingot_directive_t d = {0};
  d.kind = kind;
  d.loop = loop;
  ingot_schedule_add(p->s, &d);
}

const char* plan_emit_split(plan_t* p, const char* loop, int64_t factor, const char** out_inner) {
  char base[160];
  ingot_directive_t d = {0};
  d.kind = INGOT_DIRECTIVE_SPLIT;
  d.loop = loop;
  d.factor = factor;
  snprintf(base, sizeof(base), "%s_o", loop);
  d.outer_name = plan_fresh_name(p, base);
  snprintf(base, sizeof(base), "%s_i", loop);
  d.inner_name = plan_fresh_name(p, base);
  ingot_schedule_add(p->s, &d);
  *out_inner = d.inner_name;
  return d.outer_name;
}

const char* plan_emit_fuse(plan_t* p, const char* outer, const char* inner) {
  char base[160];
  snprintf(base, sizeof(base), "%s_%s", outer, inner);
  ingot_directive_t d = {0};
  d.kind = INGOT_DIRECTIVE_FUSE;
  d.loop = outer;
  d.inner = inner;
  d.outer_name = plan_fresh_name(p, base);
  ingot_schedule_add(p->s, &d);
  return d.outer_name;
}

/* The vector operations one pass over d lanes takes: whole vectors, then the
 * tail as codegen_llvm.c's vector_loop runs it (half the lanes, a quarter,
 * ... each unmasked, then one scalar step): 14 int32 lanes on AVX2 are 3
 * (8 + 4 + 2), 28 are 4 (3 x 8 + 4). */
static int64_t vector_ops(int64_t d, int64_t lanes) {
  int64_t n = d / lanes, rem = d % lanes;
  for (int64_t w = lanes / 2; w >= 2 && rem > 0; w /= 2)
    if (rem >= w) ++n, rem -= w;
  return n + (rem > 0);
}

int64_t plan_vector_factor(int64_t extent, int64_t target, int64_t lanes) {
  if (extent <= target) return extent;
  int64_t lo = target / 2 > lanes ? target / 2 : lanes, hi = target * 2;
  int64_t best = 0;
  double best_fill = 0;
  int64_t best_dist = INT64_MAX;
  for (int64_t d = lo; d <= hi && d <= extent; ++d) {
    if (extent % d) continue;
    double fill = (double)d / (double)(lanes * vector_ops(d, lanes));
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

int64_t plan_nest_work(const ingot_ir_stmt_t* s) {
  if (!s) return 0;
  switch (s->kind) {
    case INGOT_IR_STMT_FOR: {
      int64_t w = plan_nest_work(s->u.loop.body);
      return w > INT64_MAX / s->u.loop.extent ? INT64_MAX : w * s->u.loop.extent;
    }
    case INGOT_IR_STMT_BLOCK: {
      int64_t w = 0;
      for (uint32_t i = 0; i < s->u.block.count; ++i) {
        int64_t x = plan_nest_work(s->u.block.stmts[i]);
        w = w > INT64_MAX - x ? INT64_MAX : w + x;
      }
      return w;
    }
    case INGOT_IR_STMT_IF: return plan_nest_work(s->u.cond.then_body);
    default: return 1;
  }
}

void plan_parallel(plan_t* p, const char* const* loops, const int64_t* extents, uint32_t count, int64_t work) {
  if (count == 0 || work < p->knob[SCHEDULE_KNOB_PARALLEL_MIN_WORK]) return;
  const char* cur = loops[0];
  int64_t e = extents[0];
  for (uint32_t i = 1; i < count && e < p->knob[SCHEDULE_KNOB_THREADS]; ++i) {
    cur = plan_emit_fuse(p, cur, loops[i]);
    e *= extents[i];
  }
  if (e >= 2) plan_emit_mark(p, INGOT_DIRECTIVE_PARALLEL, cur);
}

ingot_dtype_t plan_stored_dtype(const ingot_ir_func_t* f, const ingot_ir_stmt_t* s) {
  if (!s) return INGOT_DTYPE_INVALID;
  switch (s->kind) {
    case INGOT_IR_STMT_STORE: return f->buffers[s->u.store.buffer].dtype;
    case INGOT_IR_STMT_FOR: return plan_stored_dtype(f, s->u.loop.body);
    case INGOT_IR_STMT_IF: return plan_stored_dtype(f, s->u.cond.then_body);
    case INGOT_IR_STMT_BLOCK:
      for (uint32_t i = 0; i < s->u.block.count; ++i) {
        ingot_dtype_t t = plan_stored_dtype(f, s->u.block.stmts[i]);
        if (t != INGOT_DTYPE_INVALID) return t;
      }
      return INGOT_DTYPE_INVALID;
    default: return INGOT_DTYPE_INVALID;
  }
}

void plan_loops_push(stage_loops_t* l, const char* name, int64_t extent) {
  l->names[l->count] = name;
  l->extents[l->count++] = extent;
}

static ingot_status_t stage_loop(const plan_t* p, uint32_t stage, uint32_t var, const char** out_name,
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

ingot_status_t plan_stage_view(const plan_t* p, uint32_t index, stage_view_t* v) {
  memset(v, 0, sizeof(*v));
  const ingot_stage_t* st = v->st = &p->kernel->stages[index];
  if (st->spatial_count == 0 || st->spatial_count > INGOT_MAX_STAGE_AXES || st->reduce_count > INGOT_MAX_STAGE_AXES)
    return ingot_fail(INGOT_ERROR_INTERNAL, "kernel '%s': stage %u has %u spatial and %u reduce loops", p->f->name,
                      index, st->spatial_count, st->reduce_count);
  ingot_status_t s;
  for (uint32_t i = 0; i < st->spatial_count; ++i)
    if ((s = stage_loop(p, index, st->spatial[i], &v->sname[i], &v->sext[i], i == 0 ? &v->outer : NULL)) != INGOT_OK)
      return s;
  for (uint32_t i = 0; i < st->reduce_count; ++i)
    if ((s = stage_loop(p, index, st->reduce[i], &v->rname[i], &v->rext[i], NULL)) != INGOT_OK) return s;
  v->work = plan_nest_work(v->outer);
  return INGOT_OK;
}

int64_t plan_lanes(const plan_t* p, ingot_dtype_t dtype) {
  size_t size = ingot_dtype_size(dtype);
  if (!size) size = 4;
  int64_t lanes = p->knob[SCHEDULE_KNOB_VECTOR_BYTES] / (int64_t)size;
  return lanes < 1 ? 1 : lanes;
}

void plan_vector_split(const plan_t* p, const stage_view_t* v, vector_split_t* out) {
  memset(out, 0, sizeof(*out));
  const ingot_stage_t* st = v->st;
  int64_t lanes = plan_lanes(p, plan_stored_dtype(p->f, v->outer));
  uint32_t k = st->spatial_count - 1;
  /* A vector of a narrow dtype longer than the innermost axis (64 uint8
   * lanes on AVX-512 against a row of 56): the lanes of float32, what such
   * kernels mostly compute in (requantization, QLinearAdd), where the axis
   * holds them; otherwise the axis would not be vectorized at all. */
  int64_t f32_lanes = plan_lanes(p, INGOT_DTYPE_F32);
  if (v->sext[k] < lanes && lanes > f32_lanes && v->sext[k] >= f32_lanes) lanes = f32_lanes;
  /* An innermost axis shorter than a vector that divides it (a conv weight
   * block of 8 on 16 lanes) is one narrower vector. */
  if (v->sext[k] < lanes && v->sext[k] >= 4 && lanes % v->sext[k] == 0) lanes = v->sext[k];
  bool update = st->role == INGOT_STAGE_UPDATE && st->reduce_count > 0;
  /* An innermost axis a little shorter than a vector (an int8 depthwise
   * conv's output row of 14 or 7, the int32 words of a 14 x 14 or 7 x 7
   * plane): one vector of that length, of the narrowest width it fills to
   * 3/4 or more, rather than no vector at all. */
  for (int64_t w = lanes; w >= 4 && v->sext[k] < w; w /= 2) {
    if (v->sext[k] * 4 >= w * 3) {
      out->lanes = w;
      out->factor = v->sext[k];
      out->vectors = 1;
      return;
    }
  }
  int64_t target = update ? lanes * p->knob[SCHEDULE_KNOB_UNROLL] : lanes;
  if (lanes > 1 && v->sext[k] >= lanes) {
    out->lanes = lanes;
    out->factor = plan_vector_factor(v->sext[k], target, lanes);
    out->vectors = (out->factor + lanes - 1) / lanes;
  }
}

/* ---- the stage walk ---- */

static ingot_status_t plan_stage(plan_t* p, uint32_t index) {
  stage_view_t view;
  ingot_status_t s = plan_stage_view(p, index, &view);
  if (s != INGOT_OK) return s;
  const stage_view_t* v = &view;
  const ingot_stage_t* st = v->st;
  const char* const* sname = v->sname;
  const int64_t* sext = v->sext;
  const char* const* rname = v->rname;
  const int64_t* rext = v->rext;
  int64_t work = v->work;

  if (st->role == INGOT_STAGE_OTHER) {
    /* Only the outermost loop is known to be spatial; inner loops that
     * lowering names independent are vectorized. */
    if (sext[0] >= 2 && work >= p->knob[SCHEDULE_KNOB_PARALLEL_MIN_WORK])
      plan_emit_mark(p, INGOT_DIRECTIVE_PARALLEL, sname[0]);
    for (uint32_t i = 0; i < st->vector_loop_count; ++i) {
      const char* name = NULL;
      int64_t extent = 0;
      const ingot_ir_stmt_t* loop = NULL;
      if ((s = stage_loop(p, index, st->vector_loops[i], &name, &extent, &loop)) != INGOT_OK) return s;
      int64_t lanes = plan_lanes(p, plan_stored_dtype(p->f, loop));
      if (lanes < 2 || extent < lanes) continue;
      int64_t factor = plan_vector_factor(extent, lanes, lanes);
      const char* vec = name;
      if (factor < extent) plan_emit_split(p, name, factor, &vec);
      plan_emit_mark(p, INGOT_DIRECTIVE_VECTORIZE, vec);
    }
    return INGOT_OK;
  }

  vector_split_t split;
  plan_vector_split(p, v, &split);
  int64_t lanes = split.lanes ? split.lanes : 1;
  uint32_t k = st->spatial_count - 1;
  bool update = st->role == INGOT_STAGE_UPDATE && st->reduce_count > 0;

  /* Split the innermost spatial loop for the vector lanes. */
  const char* vec = NULL;      /* the loop to vectorize */
  const char* vec_outer = NULL;
  int64_t vec_outer_extent = 0, vec_factor = 0;
  /* whole_row (injective): a row that no factor near the lanes divides
   * (58 bytes of a padded 56-wide map) is vectorized whole where the loops
   * outside it feed the threads: codegen runs its tail as narrower unmasked
   * vectors, where a guarded split masks its last iteration, and AVX2
   * masks loads of bytes one lane at a time. */
  int64_t outer = 1;
  for (uint32_t i = 0; i < k; ++i) outer *= sext[i];
  bool whole = !update && p->knob[SCHEDULE_KNOB_WHOLE_ROW] == 1 && split.lanes && split.factor < sext[k] &&
               sext[k] % split.factor != 0 && outer >= p->knob[SCHEDULE_KNOB_THREADS];
  if (whole) split.factor = sext[k];
  if (split.lanes) {
    int64_t factor = vec_factor = split.factor;
    if (factor < sext[k]) {
      vec_outer = plan_emit_split(p, sname[k], factor, &vec);
      vec_outer_extent = (sext[k] + factor - 1) / factor;
    } else {
      vec = sname[k];
    }
  }

  stage_loops_t par = {0};
  for (uint32_t i = 0; i < k; ++i) plan_loops_push(&par, sname[i], sext[i]);

  if (!update) {
    if (!vec) plan_loops_push(&par, sname[k], sext[k]);
    else if (vec_outer) plan_loops_push(&par, vec_outer, vec_outer_extent);
    plan_parallel(p, par.names, par.extents, par.count, work);
    if (vec) plan_emit_mark(p, INGOT_DIRECTIVE_VECTORIZE, vec);
    return INGOT_OK;
  }

  if (p->register_tile && p->kernel->op_class == INGOT_OP_CLASS_CONTRACTION && vec && k >= 1)
    return plan_register_tile(p, v, vec, vec_outer, vec_outer_extent, vec_factor, lanes);

  /* UPDATE: the reduce loops move inside the outer spatial loops and outside
   * the innermost spatial (vector) loop. */
  stage_loops_t order = {0};
  for (uint32_t i = 0; i < k; ++i) plan_loops_push(&order, sname[i], sext[i]);
  /* The split-off outer part of the vector loop goes outside the reduce
   * loops when asked, or when the other spatial loops are too few to keep
   * the threads busy (matmul with one row). */
  int64_t outer_spatial = 1;
  for (uint32_t i = 0; i < k; ++i) outer_spatial *= sext[i];
  bool outer_first = vec_outer && (p->knob[SCHEDULE_KNOB_ORDER] == 1 || outer_spatial < p->knob[SCHEDULE_KNOB_THREADS]);
  if (outer_first) {
    plan_loops_push(&order, vec_outer, vec_outer_extent);
    plan_loops_push(&par, vec_outer, vec_outer_extent);
  }
  if (!vec && k == 0) {
    /* Nothing to vectorize and no outer spatial loop: keep the spatial loop
     * outside so that it can run in parallel. */
    plan_loops_push(&order, sname[k], sext[k]);
    plan_loops_push(&par, sname[k], sext[k]);
    for (uint32_t i = 0; i < st->reduce_count; ++i) plan_loops_push(&order, rname[i], rext[i]);
  } else {
    for (uint32_t i = 0; i < st->reduce_count; ++i) plan_loops_push(&order, rname[i], rext[i]);
    if (vec_outer && !outer_first) plan_loops_push(&order, vec_outer, vec_outer_extent);
    plan_loops_push(&order, vec ? vec : sname[k], vec ? 0 : sext[k]);
  }
  /* The nest as it is now: spatial (innermost maybe split), then reduce. */
  bool same = true;
  {
    stage_loops_t now = {0};
    for (uint32_t i = 0; i < k; ++i) plan_loops_push(&now, sname[i], sext[i]);
    if (vec_outer) {
      plan_loops_push(&now, vec_outer, 0);
      plan_loops_push(&now, vec, 0);
    } else {
      plan_loops_push(&now, sname[k], 0);
    }
    for (uint32_t i = 0; i < st->reduce_count; ++i) plan_loops_push(&now, rname[i], 0);
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
  if (vec) plan_emit_mark(p, INGOT_DIRECTIVE_VECTORIZE, vec);
  /* A pooling window reduces in a register that starts at the window's
   * initial value: reduce loops right outside the vector loop (nothing
   * split off between them). */
  if (p->kernel->op_class == INGOT_OP_CLASS_POOL && vec && st->reduce_count > 0 &&
      (!vec_outer || (outer_first && sext[k] % vec_factor == 0)) && ingot_schedule_nest_accumulates(v->outer))
    plan_emit_mark(p, INGOT_DIRECTIVE_ACCUMULATE, rname[0]);
  return INGOT_OK;
}

ingot_status_t plan_stages(plan_t* p) {
  ingot_status_t st = INGOT_OK;
  for (uint32_t i = 0; i < p->kernel->stage_count && st == INGOT_OK; ++i) {
    p->finish_folded = false;
    st = plan_stage(p, i);
    if (p->finish_folded) ++i; /* the FINISH stage is gone once applied */
  }
  return st;
}
