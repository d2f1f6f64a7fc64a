/* Contraction templates (conv, gemm, matmul):
 *
 *   contraction.direct  the default: each UPDATE gets a register tile, a
 *                       block of output rows x vectors kept in registers
 *                       through the whole reduction (plan_register_tile);
 *   contraction.plain   no register tile: the reduce loops wrap the vector
 *                       loop, every step loads and stores the output. Only
 *                       a tuning log record chooses it.
 *
 * Knobs of the register tile (direct): tile (rows, a divisor of the tiled
 * axis, or the whole axis when its accumulators fit the register budget),
 * tile_axis (which spatial loop of the main UPDATE gives the rows) and
 * accumulators (the vector registers the tile may fill before its vectors
 * go outside the reduction). They describe the kernel's main UPDATE (the
 * first one with reduce loops); another UPDATE (a partial last weight
 * panel) takes the default rule for its own extents. */
#include <string.h>

#include "schedule/template_internal.h"

/* Rows of a register tile by default: the register budget over the vectors
 * a row holds, at most this many rows. */
#define TILE_DEFAULT_MAX_ROWS 16
/* Rows of a register tile at most (the accumulate directive keeps one
 * local per row x unrolled vector). */
#define TILE_MAX_ROWS 32

/* The default rule: as many rows as the budget holds (at most 16), the
 * largest divisor of the axis below that; when that is under half the
 * wanted rows (a prime extent such as 13), the whole axis if its
 * accumulators still fit. */
static int64_t default_tile(int64_t extent, int64_t vectors, int64_t accumulators) {
  int64_t rows = accumulators / (vectors ? vectors : 1);
  if (rows > TILE_DEFAULT_MAX_ROWS) rows = TILE_DEFAULT_MAX_ROWS;
  if (rows < 1) rows = 1;
  if (rows > extent) rows = extent;
  int64_t tile = 1;
  for (int64_t d = rows; d >= 1; --d)
    if (extent % d == 0) {
      tile = d;
      break;
    }
  if (2 * tile < rows && extent <= accumulators) tile = extent;
  return tile;
}

static uint32_t default_tile_axis(const ingot_stage_t* st) {
  uint32_t k = st->spatial_count - 1;
  return st->tile_axis >= 0 && (uint32_t)st->tile_axis < k ? (uint32_t)st->tile_axis : k - 1;
}

static int64_t space_default(const ingot_schedule_space_t* space, schedule_knob_t knob, int64_t fallback) {
  for (uint32_t i = 0; i < space->knob_count; ++i)
    if (strcmp(space->knobs[i].name, schedule_knob_name(knob)) == 0) return space->knobs[i].default_value;
  return fallback;
}

ingot_status_t template_contraction_space(plan_t* p, uint32_t mask, ingot_schedule_space_t* space) {
  space_add_common(p, mask, space);
  space_add_update(p, mask, space, 2);
  p->knob[SCHEDULE_KNOB_VECTOR_BYTES] = space_default(space, SCHEDULE_KNOB_VECTOR_BYTES, 16);
  p->knob[SCHEDULE_KNOB_UNROLL] = space_default(space, SCHEDULE_KNOB_UNROLL, 2);
  uint32_t main = plan_main_update(p->kernel);
  if (main == UINT32_MAX || !(mask & TK(TILE))) return INGOT_OK;
  stage_view_t v;
  ingot_status_t s = plan_stage_view(p, main, &v);
  if (s != INGOT_OK) return s;
  uint32_t k = v.st->spatial_count - 1;
  if (k < 1) return INGOT_OK; /* no axis outside the vector one: no register tile */
  uint32_t axis = default_tile_axis(v.st);
  int64_t extent = v.sext[axis];
  int64_t budget = schedule_register_budget(p->target);
  vector_split_t split;
  plan_vector_split(p, &v, &split);
  int64_t tiles[INGOT_MAX_KNOB_VALUES];
  uint32_t n = 0;
  /* Divisors of the axis (no tail guard) up to 32 rows; the whole axis
   * when it fits the budget (at most 24) is one of them. */
  for (int64_t d = 1; d <= extent && d <= TILE_MAX_ROWS && n < INGOT_MAX_KNOB_VALUES; ++d)
    if (extent % d == 0) tiles[n++] = d;
  space_add(space, mask, SCHEDULE_KNOB_TILE, tiles, n, default_tile(extent, split.lanes ? split.vectors : 1, budget));
  /* Another axis may carry the rows when every listed tile divides it. */
  int64_t axes[INGOT_MAX_STAGE_AXES];
  uint32_t na = 0;
  for (uint32_t a = 0; a < k; ++a) {
    bool fits = true;
    for (uint32_t i = 0; i < n && fits; ++i) fits = v.sext[a] % tiles[i] == 0;
    if (fits || a == axis) axes[na++] = a;
  }
  space_add(space, mask, SCHEDULE_KNOB_TILE_AXIS, axes, na, axis);
  int64_t accs[16];
  uint32_t nacc = 0;
  for (int64_t r = 4; r <= budget && nacc < 16; r += 4) accs[nacc++] = r;
  space_add(space, mask, SCHEDULE_KNOB_ACCUMULATORS, accs, nacc, budget);
  return INGOT_OK;
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
ingot_status_t plan_register_tile(plan_t* p, const stage_view_t* v, const char* vec, const char* vec_outer,
                                  int64_t vec_outer_extent, int64_t vec_factor, int64_t lanes, bool main_stage) {
  const ingot_stage_t* st = v->st;
  const char* const* sname = v->sname;
  const int64_t* sext = v->sext;
  uint32_t k = st->spatial_count - 1;
  uint32_t t = main_stage ? (uint32_t)p->knob[SCHEDULE_KNOB_TILE_AXIS] : default_tile_axis(st);
  if (t >= k) t = default_tile_axis(st);
  int64_t vec_extent = vec_outer ? vec_factor : sext[k];
  int64_t vectors = (vec_extent + lanes - 1) / lanes;
  int64_t accumulators = p->knob[SCHEDULE_KNOB_ACCUMULATORS];
  int64_t tile = main_stage ? p->knob[SCHEDULE_KNOB_TILE] : default_tile(sext[t], vectors, accumulators);
  if (tile < 1 || tile > sext[t] || sext[t] % tile != 0)
    return ingot_fail(INGOT_ERROR_INTERNAL, "kernel '%s': tile %lld does not divide loop '%s' of %lld", p->f->name,
                      (long long)tile, sname[t], (long long)sext[t]);
  /* Rows x vectors over the register budget (13 rows of 2 vectors): the
   * vectors go outside the reduction, one at a time through the tile. */
  bool vectors_outside = tile * vectors > accumulators;
  const char* t_o = sname[t];
  const char* t_i = NULL;
  if (tile >= 2 && tile < sext[t]) t_o = plan_emit_split(p, sname[t], tile, &t_i);
  else if (tile == sext[t] && tile >= 2) t_o = NULL, t_i = sname[t];
  const char* v_i = vec;
  const char* v_o2 = NULL;
  if (vec_extent > lanes && vec_extent % lanes == 0 && (vectors <= 4 || vectors_outside))
    v_o2 = plan_emit_split(p, vec, lanes, &v_i);
  if (!v_o2) vectors_outside = false;

  stage_loops_t order = {0}, par = {0};
  for (uint32_t i = 0; i < k; ++i) {
    if (i == t) {
      if (t_o) {
        int64_t e = t_i ? sext[t] / tile : sext[t];
        plan_loops_push(&order, t_o, e);
        plan_loops_push(&par, t_o, e);
      }
      continue;
    }
    plan_loops_push(&order, sname[i], sext[i]);
    plan_loops_push(&par, sname[i], sext[i]);
  }
  if (vec_outer) {
    plan_loops_push(&order, vec_outer, vec_outer_extent);
    plan_loops_push(&par, vec_outer, vec_outer_extent);
  }
  if (vectors_outside) plan_loops_push(&order, v_o2, vectors);
  for (uint32_t i = 0; i < st->reduce_count; ++i) plan_loops_push(&order, v->rname[i], v->rext[i]);
  if (t_i) plan_loops_push(&order, t_i, tile);
  if (v_o2 && !vectors_outside) plan_loops_push(&order, v_o2, vectors);
  plan_loops_push(&order, v_i, lanes);
  ingot_directive_t d = {0};
  d.kind = INGOT_DIRECTIVE_REORDER;
  d.order = order.names;
  d.order_count = order.count;
  ingot_schedule_add(p->s, &d);
  plan_parallel(p, par.names, par.extents, par.count, v->work);
  if (t_i) plan_emit_mark(p, INGOT_DIRECTIVE_UNROLL, t_i);
  if (v_o2 && !vectors_outside) plan_emit_mark(p, INGOT_DIRECTIVE_UNROLL, v_o2);
  plan_emit_mark(p, INGOT_DIRECTIVE_VECTORIZE, v_i);
  if (st->reduce_count > 0) {
    /* The FINISH stage right after (a fused activation) folds into the
     * accumulators' stores. */
    ingot_directive_t d2 = {0};
    d2.kind = INGOT_DIRECTIVE_ACCUMULATE;
    d2.loop = v->rname[0];
    d2.factor = finish_foldable(p, st) ? 1 : 0;
    p->finish_folded = d2.factor == 1;
    ingot_schedule_add(p->s, &d2);
  }
  return INGOT_OK;
}

ingot_status_t template_contraction_plan(plan_t* p) {
  p->register_tile = true;
  return plan_stages(p);
}

ingot_status_t template_contraction_plain_plan(plan_t* p) {
  p->register_tile = false;
  return plan_stages(p);
}
