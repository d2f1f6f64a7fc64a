/* Contraction templates (conv, gemm, matmul):
 *
 *   contraction.direct  the default: each UPDATE gets a register tile, a
 *                       block of output rows x vectors kept in registers
 *                       through the whole reduction (plan_register_tile);
 *   contraction.plain   no register tile: the reduce loops wrap the vector
 *                       loop, every step loads and stores the output. Only
 *                       a tuning log record chooses it.
 *
 * Knobs of the register tile (direct), each meaningful in every layout the
 * kernel's layout knobs allow (so that every point of the space is one
 * program): tile_axis (0: the axis lowering names, a conv's output channels
 * or a packed kernel's output positions; 1: the axis just outside the
 * vector loop), max_rows, accumulators and rows_outside (the loop order of
 * the tile's outer loops). The rows of a tile follow from
 * them by one rule: as many as `accumulators` registers hold (over the
 * vectors a row needs), at most max_rows and the axis, the largest divisor
 * of the axis below that (no tail guard); when that is under half the rows
 * wanted (a prime extent such as 13), the whole axis if its accumulators
 * fit. With the defaults (16 rows, the target's register budget) this is
 * the rule the compiler always had. */
#include <string.h>

#include "template_internal.h"

static int64_t tile_rows(int64_t extent, int64_t vectors, int64_t accumulators, int64_t max_rows) {
  int64_t rows = accumulators / (vectors ? vectors : 1);
  if (rows > max_rows) rows = max_rows;
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

/* The default cache block, from the target's L2 size: none while a packed
 * weight panel over the whole reduction (reduction x panel x 4 bytes) fits
 * in half the L2, which then serves every row block; else the largest block
 * whose slice fills at most a quarter of it. Blocks sized for the L1 instead
 * (a 16 KiB slice) ran 3-12 % slower than none on a Zen 4 core (1 MiB L2:
 * 1024^3 and BERT-base's FFN products, 128-step blocks), where a panel of
 * even 3072 steps fits the L2; the tuner tries the other sizes. 0 for an
 * unpacked weight or an unknown L2. */
static int64_t k_block_default(const plan_t* p, int64_t reduction, const int64_t* blocks, uint32_t count) {
  const ingot_node_layout_t* layout = &p->kernel->layout;
  if (!layout->pack || !layout->panel || !p->target->l2_bytes) return 0;
  int64_t slice = (int64_t)layout->panel * 4; /* float32 bytes of one step of a panel */
  if (reduction * slice <= (int64_t)p->target->l2_bytes / 2) return 0;
  int64_t best = 0;
  for (uint32_t i = 0; i < count; ++i)
    if (blocks[i] * slice <= (int64_t)p->target->l2_bytes / 4 && blocks[i] > best) best = blocks[i];
  return best;
}

ingot_status_t template_contraction_space(plan_t* p, uint32_t mask, ingot_schedule_space_t* space) {
  space_add_common(p, mask, space);
  space_add_update(p, mask, space, 2);
  space_add_layout(p, mask, space);
  static const int64_t k_rows[] = {1, 2, 4, 8, 16, 32};
  space_add(space, mask, SCHEDULE_KNOB_MAX_ROWS, k_rows, sizeof(k_rows) / sizeof(k_rows[0]), 16);
  static const int64_t k_axis[] = {0, 1};
  space_add(space, mask, SCHEDULE_KNOB_TILE_AXIS, k_axis, 2, 0);
  /* Accumulators: even counts from 4 to every register but two (one
   * broadcast operand, one temporary); the default three quarters. */
  int64_t budget = schedule_register_budget(p->target);
  int64_t accs[16];
  uint32_t nacc = 0;
  for (int64_t r = 4; r <= schedule_register_count(p->target) - 2 && nacc < 16; r += 2) accs[nacc++] = r;
  space_add(space, mask, SCHEDULE_KNOB_ACCUMULATORS, accs, nacc, budget);
  static const int64_t k_whole[] = {0, 1};
  space_add(space, mask, SCHEDULE_KNOB_WHOLE_TILE, k_whole, 2, 1);
  /* Cache blocks of the reduction: block sizes that divide it into two or
   * more blocks (no tail guard), for kernels whose UPDATEs reduce along one
   * loop of one extent (a matrix product, a 1x1 conv), in every layout (a
   * plan applies them where the rows have an outer loop; the default blocks
   * only packed weights). */
  int64_t extent = 0;
  bool one_reduce = true;
  for (uint32_t i = 0; i < p->kernel->stage_count; ++i) {
    const ingot_stage_t* st = &p->kernel->stages[i];
    if (st->role != INGOT_STAGE_UPDATE) continue;
    const ingot_ir_stmt_t* r = st->reduce_count == 1 && st->reduce[0] < p->f->var_count
                                   ? ingot_schedule_find_loop(p->f, p->f->vars[st->reduce[0]].name)
                                   : NULL;
    if (!r || (extent && r->u.loop.extent != extent)) one_reduce = false;
    else extent = r->u.loop.extent;
  }
  static const int64_t k_blocks[] = {32, 64, 128, 256, 512};
  int64_t blocks[8] = {0};
  uint32_t nblocks = 1;
  for (uint32_t i = 0; one_reduce && extent && i < sizeof(k_blocks) / sizeof(k_blocks[0]); ++i)
    if (extent % k_blocks[i] == 0 && extent >= 2 * k_blocks[i]) blocks[nblocks++] = k_blocks[i];
  if (nblocks > 1) space_add(space, mask, SCHEDULE_KNOB_K_BLOCK, blocks, nblocks, k_block_default(p, extent, blocks, nblocks));
  /* Output blocks a tile spans (a blocked layout's UPDATE names its blocks'
   * axis): counts that divide that axis. The default takes 2 where they
   * divide it and the rows' axis still gives a tile of at least as many
   * accumulators within the budget: rows of two vectors then load each
   * input tap once for both, as a panel of 32 output channels does in
   * NCHW (56 positions: 8 rows x 2 instead of 14 x 1). A prime row count
   * (13) would need 26 accumulators for two blocks: 1. */
  int64_t block_extent = 0, row_extent = 0;
  for (uint32_t i = 0; i < p->kernel->stage_count; ++i) {
    const ingot_stage_t* st = &p->kernel->stages[i];
    if (st->role != INGOT_STAGE_UPDATE || st->block_axis < 0 || (uint32_t)st->block_axis >= st->spatial_count ||
        st->tile_axis < 0 || (uint32_t)st->tile_axis >= st->spatial_count) {
      continue;
    }
    const ingot_ir_stmt_t* l = ingot_schedule_find_loop(p->f, p->f->vars[st->spatial[st->block_axis]].name);
    const ingot_ir_stmt_t* r = ingot_schedule_find_loop(p->f, p->f->vars[st->spatial[st->tile_axis]].name);
    if (l && r) block_extent = l->u.loop.extent, row_extent = r->u.loop.extent;
  }
  if (block_extent > 0) {
    static const int64_t k_tb[] = {1, 2, 4};
    int64_t tb[3];
    uint32_t ntb = 0;
    for (uint32_t i = 0; i < 3; ++i)
      if (block_extent % k_tb[i] == 0) tb[ntb++] = k_tb[i];
    int64_t rows1 = tile_rows(row_extent, 1, budget, 16), rows2 = tile_rows(row_extent, 2, budget, 16);
    bool two = block_extent % 2 == 0 && 2 * rows2 <= budget && 2 * rows2 >= rows1;
    space_add(space, mask, SCHEDULE_KNOB_TILE_BLOCKS, tb, ntb, two ? 2 : 1);
  }
  /* Loop order of the register tile's outer loops: where spatial loops sit
   * between the tile's axis and the vector loop (a conv's output rows), its
   * blocks first (0: each block's weights stay in L1 while the whole input
   * streams past; the default) or the rows first (1: each input row stays in
   * L1 while every block's weights stream past). Which wins depends on the
   * sizes and the caches: on a Zen 4 core ResNet-50's int8 1x1 convs from 256
   * channels ran 6-8 % faster with 1, those from 64 channels to 256 about
   * 6 % slower; the tuner picks. */
  /* Offered for outputs of rank 4 or more (a conv's rows), whatever the
   * layout: the knobs must not depend on the layout knobs. */
  bool rows_between = false;
  for (uint32_t b = 0; b < p->f->buffer_count && !rows_between; ++b)
    if (p->f->buffers[b].role == INGOT_IR_BUFFER_OUTPUT) rows_between = p->f->buffers[b].rank >= 4;
  if (rows_between) {
    static const int64_t k_rows_outside[] = {0, 1};
    space_add(space, mask, SCHEDULE_KNOB_ROWS_OUTSIDE, k_rows_outside, 2, 0);
    /* A second tile axis (tile_2d, see plan_register_tile): on by default,
     * acting only where the rows' axis leaves the tile short. */
    static const int64_t k_tile_2d[] = {0, 1};
    space_add(space, mask, SCHEDULE_KNOB_TILE_2D, k_tile_2d, 2, 1);
  }
  return INGOT_OK;
}

/* Whether a load of the UPDATE nest `s` (other than of the output `out`,
 * the accumulators' start) indexes both `vec` and `h`: a vector operand that
 * varies along h, which a tile over h could not share. */
static bool expr_vector_load_varies(const ingot_ir_expr_t* e, uint32_t out, uint32_t vec, uint32_t h) {
  if (!e) return false;
  switch (e->kind) {
    case INGOT_IR_EXPR_LOAD:
      return (e->u.load.buffer != out && ingot_ir_expr_uses_var(e->u.load.index, vec) &&
              ingot_ir_expr_uses_var(e->u.load.index, h)) ||
             expr_vector_load_varies(e->u.load.index, out, vec, h);
    case INGOT_IR_EXPR_UNARY:
    case INGOT_IR_EXPR_CAST: return expr_vector_load_varies(e->u.unary.a, out, vec, h);
    case INGOT_IR_EXPR_BINARY:
      return expr_vector_load_varies(e->u.binary.a, out, vec, h) || expr_vector_load_varies(e->u.binary.b, out, vec, h);
    case INGOT_IR_EXPR_SELECT:
      return expr_vector_load_varies(e->u.select.cond, out, vec, h) ||
             expr_vector_load_varies(e->u.select.a, out, vec, h) || expr_vector_load_varies(e->u.select.b, out, vec, h);
    default: return false;
  }
}

static bool stmt_vector_load_varies(const ingot_ir_stmt_t* s, uint32_t out, uint32_t vec, uint32_t h) {
  if (!s) return false;
  switch (s->kind) {
    case INGOT_IR_STMT_FOR: return stmt_vector_load_varies(s->u.loop.body, out, vec, h);
    case INGOT_IR_STMT_BLOCK:
      for (uint32_t i = 0; i < s->u.block.count; ++i)
        if (stmt_vector_load_varies(s->u.block.stmts[i], out, vec, h)) return true;
      return false;
    case INGOT_IR_STMT_STORE: return expr_vector_load_varies(s->u.store.value, out, vec, h);
    case INGOT_IR_STMT_IF:
      return expr_vector_load_varies(s->u.cond.cond, out, vec, h) ||
             stmt_vector_load_varies(s->u.cond.then_body, out, vec, h);
    case INGOT_IR_STMT_LOCAL:
    case INGOT_IR_STMT_ASSIGN: return expr_vector_load_varies(s->u.local.value, out, vec, h);
    default: return false;
  }
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
                                  int64_t vec_outer_extent, int64_t vec_factor, int64_t lanes) {
  const ingot_stage_t* st = v->st;
  const char* const* sname = v->sname;
  const int64_t* sext = v->sext;
  uint32_t k = st->spatial_count - 1;
  uint32_t t = k - 1;
  if (p->knob[SCHEDULE_KNOB_TILE_AXIS] == 0 && st->tile_axis >= 0 && (uint32_t)st->tile_axis < k) t = (uint32_t)st->tile_axis;
  int64_t vec_extent = vec_outer ? vec_factor : sext[k];
  int64_t vectors = (vec_extent + lanes - 1) / lanes;
  int64_t accumulators = p->knob[SCHEDULE_KNOB_ACCUMULATORS];
  /* Output blocks the tile spans (tile_blocks, a blocked layout): the
   * blocks' axis splits, its inner part unrolled inside the reduction. */
  int64_t blocks = p->knob[SCHEDULE_KNOB_TILE_BLOCKS];
  uint32_t bt = st->block_axis >= 0 && (uint32_t)st->block_axis < k && (uint32_t)st->block_axis != t
                    ? (uint32_t)st->block_axis
                    : UINT32_MAX;
  if (bt == UINT32_MAX || blocks < 2 || sext[bt] % blocks != 0) blocks = 1;
  const char* b_o = NULL;
  const char* b_i = NULL;
  if (blocks > 1) b_o = plan_emit_split(p, sname[bt], blocks, &b_i);
  int64_t tile = tile_rows(sext[t], vectors * blocks, accumulators, p->knob[SCHEDULE_KNOB_MAX_ROWS]);
  /* Rows x vectors over the register budget (13 rows of 2 vectors): the
   * vectors go outside the reduction, one at a time through the tile;
   * with whole_tile not while every register but two holds them (7 rows of
   * 2 vectors on AVX2: each broadcast then serves both vectors). Zen 3
   * (AVX2), int8 1x1 convs on 7x7 inputs alone (`ingot run --bench 15`,
   * minima of 7 interleaved rounds): 512 -> 2048 0.666 -> 0.600 ms, 1024 ->
   * 2048 1.39 -> 1.17 ms (ONNX Runtime 0.60, 1.12). */
  bool vectors_outside = tile * vectors * blocks > accumulators;
  if (vectors_outside && p->knob[SCHEDULE_KNOB_WHOLE_TILE] == 1 &&
      tile * vectors * blocks <= schedule_register_count(p->target) - 2) {
    vectors_outside = false;
  }
  /* tile_2d: where the rows' axis gives under half the rows the registers
   * hold (a conv's 14 output columns: 2 of 6 rows of 2 vectors), the spatial
   * axis just outside it (the output rows) splits by its largest divisor
   * that fills the rest and its inner part is unrolled beside the rows
   * (2 x 2 positions), as long as the vector operand (a conv's weights) is
   * the same along it, so that each vector still serves every row. */
  int64_t want = accumulators / (vectors * blocks);
  if (want > p->knob[SCHEDULE_KNOB_MAX_ROWS]) want = p->knob[SCHEDULE_KNOB_MAX_ROWS];
  uint32_t h = t - 1;
  int64_t tile_h = 1;
  if (p->knob[SCHEDULE_KNOB_TILE_2D] == 1 && t >= 2 && h != bt && (int32_t)h != st->block_axis && !vectors_outside &&
      2 * tile <= want && sext[h] >= 2 && v->outer) {
    for (int64_t d = want / tile; d >= 2; --d)
      if (sext[h] % d == 0) {
        tile_h = d;
        break;
      }
    uint32_t out = ingot_schedule_nest_store_buffer(v->outer);
    if (tile_h > 1 && stmt_vector_load_varies(v->outer, out, st->spatial[k], st->spatial[h])) tile_h = 1;
  }
  const char* h_o = NULL;
  const char* h_i = NULL;
  if (tile_h > 1) h_o = plan_emit_split(p, sname[h], tile_h, &h_i);
  const char* t_o = sname[t];
  const char* t_i = NULL;
  if (tile >= 2 && tile < sext[t]) t_o = plan_emit_split(p, sname[t], tile, &t_i);
  else if (tile == sext[t] && tile >= 2) t_o = NULL, t_i = sname[t];
  const char* v_i = vec;
  const char* v_o2 = NULL;
  if (vec_extent > lanes && vec_extent % lanes == 0 && (vectors <= 4 || vectors_outside))
    v_o2 = plan_emit_split(p, vec, lanes, &v_i);
  if (!v_o2) vectors_outside = false;
  /* Cache blocking (k_block): the reduction splits into blocks whose loop
   * goes right outside the rows' outer loop, so the block's slice of the
   * weight is read by every row block while it is in L1. Only where the
   * loops before the rows already give the threads their work (the block
   * loop must not sit between the loops that fuse into the parallel one). */
  const char* r_o = NULL;
  const char* r_i = v->rname[0];
  int64_t kc = p->knob[SCHEDULE_KNOB_K_BLOCK];
  int64_t before_rows = 1;
  for (uint32_t i = 0; i < t; ++i) before_rows *= sext[i];
  if (kc > 0 && st->reduce_count == 1 && v->rext[0] > kc && v->rext[0] % kc == 0 && t_o && t_i && !vectors_outside && !h_o &&
      before_rows >= p->knob[SCHEDULE_KNOB_THREADS])
    r_o = plan_emit_split(p, v->rname[0], kc, &r_i);

  stage_loops_t order = {0}, par = {0};
  /* rows_outside: the spatial loops between the tile's axis and the vector
   * loop go first (not with a cache block, whose loop must stay outside the
   * rows' blocks). */
  bool rows_first = p->knob[SCHEDULE_KNOB_ROWS_OUTSIDE] == 1 && t + 1 < k && !r_o;
  if (rows_first)
    for (uint32_t i = t + 1; i < k; ++i) {
      plan_loops_push(&order, sname[i], sext[i]);
      plan_loops_push(&par, sname[i], sext[i]);
    }
  for (uint32_t i = 0; i < k; ++i) {
    if (rows_first && i > t) continue;
    if (i == t) {
      if (r_o) plan_loops_push(&order, r_o, v->rext[0] / kc);
      if (t_o) {
        int64_t e = t_i ? sext[t] / tile : sext[t];
        plan_loops_push(&order, t_o, e);
        plan_loops_push(&par, t_o, e);
      }
      continue;
    }
    if (i == bt && b_o) {
      plan_loops_push(&order, b_o, sext[i] / blocks);
      plan_loops_push(&par, b_o, sext[i] / blocks);
      continue;
    }
    if (i == h && h_o) {
      plan_loops_push(&order, h_o, sext[i] / tile_h);
      plan_loops_push(&par, h_o, sext[i] / tile_h);
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
  for (uint32_t i = 0; i < st->reduce_count; ++i)
    plan_loops_push(&order, i == 0 ? r_i : v->rname[i], i == 0 && r_o ? kc : v->rext[i]);
  if (b_i) plan_loops_push(&order, b_i, blocks);
  if (h_i) plan_loops_push(&order, h_i, tile_h);
  if (t_i) plan_loops_push(&order, t_i, tile);
  if (v_o2 && !vectors_outside) plan_loops_push(&order, v_o2, vectors);
  plan_loops_push(&order, v_i, lanes);
  ingot_directive_t d = {0};
  d.kind = INGOT_DIRECTIVE_REORDER;
  d.order = order.names;
  d.order_count = order.count;
  ingot_schedule_add(p->s, &d);
  plan_parallel(p, par.names, par.extents, par.count, v->work);
  if (b_i) plan_emit_mark(p, INGOT_DIRECTIVE_UNROLL, b_i);
  if (h_i) plan_emit_mark(p, INGOT_DIRECTIVE_UNROLL, h_i);
  if (t_i) plan_emit_mark(p, INGOT_DIRECTIVE_UNROLL, t_i);
  if (v_o2 && !vectors_outside) plan_emit_mark(p, INGOT_DIRECTIVE_UNROLL, v_o2);
  plan_emit_mark(p, INGOT_DIRECTIVE_VECTORIZE, v_i);
  /* Accumulators need the vector loop to be one store: not where the vector
   * axis's split leaves a guarded tail (111 output columns in vectors of 16,
   * an NCHW conv with unpacked weights): each reduce step then reads and
   * writes the output, and a fused activation runs as its own stage. */
  if (st->reduce_count > 0 && (!vec_outer || sext[k] % vec_factor == 0)) {
    /* The FINISH stage right after (a fused activation) folds into the
     * accumulators' stores. */
    ingot_directive_t d2 = {0};
    d2.kind = INGOT_DIRECTIVE_ACCUMULATE;
    d2.loop = r_i;
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
