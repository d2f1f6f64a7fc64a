/* gpu.gemm: contractions (MatMul, Gemm, conv as an implicit GEMM) on GPU
 * target kinds.
 *
 * The kernel must be one UPDATE (spatial loops s.., reduce loops r0..rm,
 * the select start of lower_update_start or y[i] = y[i] + e), maybe followed
 * by a FINISH y[i] = E(y[i]) that folds into it, maybe after PURE stages
 * that store constants into elements of the output the UPDATE never
 * touches (a conv's zero border when it writes into a padded output;
 * checked by enumerating both index sets): those run in the same launch on
 * their own blocks (fused, split by 256 threads), in no order with the
 * UPDATE. Anything else (an INIT stage, the remainder stage of a packed
 * weight) leaves the space empty and another template takes the kernel. The axes:
 *   M  the register-tile axis lowering names (a conv's output channels, a
 *      matmul's rows; else the one before the innermost),
 *   N  the spatial axes inside M, fused (a conv's output positions),
 *   Z  the spatial axes outside M, fused (batch; bound to blockIdx.z).
 * The nest becomes
 *   Z (block z), bm (block y), bn (block x),
 *     ko (K step): barrier; fill tiles; barrier;
 *       ty (thread y), tx (thread x): acc[TM][TN] from y;
 *         ki, r1..rm: acc += ...   (tm, tn unrolled into locals)
 *         y = acc (the last ko step: E(acc))
 * with m = bm*BM + tm*TY + ty and n = bn*BN + tn*TX + tx (a thread's
 * outputs strided by the thread count, so that neighbouring threads touch
 * neighbouring outputs), TY = BM/TM, TX = BN/TN threads, and r0 = ko*KS+ki.
 * Tails are guarded (split). The fill stages, per ko step, each operand
 * (an input whose index reads a reduce loop) whose index is affine in the
 * loops inside ty (cache_read), in buffer order while the shared bytes of
 * the target allow: a matmul's A and B, a conv's weight (its input is read
 * at (p / W) * stride + r - pad over the fused positions p, not affine: it
 * stays in global memory), a pointwise conv's input and weight.
 *
 * The accumulators live in locals through one K step only: a barrier may
 * not sit inside a GPU thread loop (lower/ir.h), so the thread loops are
 * inside the ko loop and the partial sums go through the output between
 * steps. Tensor-core MMA (fp16/bf16/tf32) is not here: fp32 (and any other
 * dtype) on the SIMT cores.
 *
 * Knobs: gpu_block_m, gpu_block_n (powers of two up to 128, at least the
 * largest thread tile), gpu_thread_m, gpu_thread_n (1..8), such that every
 * combination has at most target->gpu.max_threads_per_block threads;
 * gpu_k_step (powers of two up to 32 and the extent of r0); gpu_shared
 * (0: no staging). Defaults: a 64x64 block of 16x16 threads with 4x4
 * outputs each (256 threads: 8 warps of 32, 4 of 64), K step 8, staging on;
 * each clipped to the kernel's extents, then thread tiles halved while a
 * block has fewer than four warps (target->gpu.warp_size). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template_internal.h"

#define GEMM_MAX_OPERANDS 8

typedef struct gemm_operand_t {
  uint32_t buffer;
  bool uses_m, uses_n, uses_r[INGOT_MAX_STAGE_AXES];
} gemm_operand_t;

#define GEMM_MAX_FILLS 8

typedef struct gemm_shape_t {
  uint32_t fills[GEMM_MAX_FILLS]; /* PURE stages before the UPDATE: constant fills of other elements */
  uint32_t fill_count;
  stage_view_t v;
  bool finish;               /* a FINISH stage folds in */
  uint32_t t;                /* M: spatial[t] */
  int64_t m_ext, n_ext;
  gemm_operand_t ops[GEMM_MAX_OPERANDS]; /* stageable operands, buffer order */
  uint32_t op_count;
} gemm_shape_t;

static bool target_is_gpu(const ingot_target_t* t) {
  return t->kind == INGOT_TARGET_CUDA || t->kind == INGOT_TARGET_ROCM;
}

static bool index_reads_memory(const ingot_ir_expr_t* e) {
  if (!e) return false;
  switch (e->kind) {
    case INGOT_IR_EXPR_LOAD: return true;
    case INGOT_IR_EXPR_UNARY:
    case INGOT_IR_EXPR_CAST: return index_reads_memory(e->u.unary.a);
    case INGOT_IR_EXPR_BINARY: return index_reads_memory(e->u.binary.a) || index_reads_memory(e->u.binary.b);
    case INGOT_IR_EXPR_SELECT:
      return index_reads_memory(e->u.select.cond) || index_reads_memory(e->u.select.a) ||
             index_reads_memory(e->u.select.b);
    default: return false;
  }
}

static int64_t pow2_ceil(int64_t x) {
  int64_t p = 1;
  while (p < x && p < ((int64_t)1 << 40)) p *= 2;
  return p;
}

/* ---- fills: PURE stages that store constants into elements the UPDATE
 * never touches (the zero border of a conv writing into a padded output).
 * They run in the same launch on their own blocks and threads: no order
 * between them and the UPDATE is needed. Checked by enumerating both
 * index sets (small: the output's elements). */

static bool eval_index(const ingot_ir_expr_t* e, const int64_t* env, int64_t* out) {
  int64_t a, b;
  switch (e->kind) {
    case INGOT_IR_EXPR_INT: *out = e->u.i; return true;
    case INGOT_IR_EXPR_VAR: *out = env[e->u.var]; return true;
    case INGOT_IR_EXPR_BINARY:
      if (!eval_index(e->u.binary.a, env, &a) || !eval_index(e->u.binary.b, env, &b)) return false;
      switch (e->u.binary.op) {
        case INGOT_IR_ADD: *out = a + b; return true;
        case INGOT_IR_SUB: *out = a - b; return true;
        case INGOT_IR_MUL: *out = a * b; return true;
        case INGOT_IR_MIN: *out = a < b ? a : b; return true;
        case INGOT_IR_MAX: *out = a > b ? a : b; return true;
        case INGOT_IR_DIV:
        case INGOT_IR_MOD: {
          if (b == 0) return false;
          int64_t q = a / b;
          if ((a % b != 0) && ((a < 0) != (b < 0))) --q; /* floor */
          *out = e->u.binary.op == INGOT_IR_DIV ? q : a - q * b;
          return true;
        }
        default: return false;
      }
    default: return false;
  }
}

/* The perfect nest of loops `vars` around one store (NULL otherwise). */
static const ingot_ir_stmt_t* nest_store(const ingot_ir_stmt_t* s) {
  while (s && (s->kind == INGOT_IR_STMT_FOR || (s->kind == INGOT_IR_STMT_BLOCK && s->u.block.count == 1)))
    s = s->kind == INGOT_IR_STMT_FOR ? s->u.loop.body : s->u.block.stmts[0];
  return s && s->kind == INGOT_IR_STMT_STORE ? s : NULL;
}

/* Marks (mark) or tests (!mark: false on a hit) every index `store` writes
 * over the stage's spatial loops; false too on an index outside the buffer. */
static bool walk_indices(const ingot_ir_func_t* f, const ingot_stage_t* st, const ingot_ir_stmt_t* store,
                         uint8_t* seen, int64_t numel, bool mark) {
  int64_t* env = ingot_xcalloc(f->var_count + 1, sizeof(int64_t));
  int64_t ext[INGOT_MAX_STAGE_AXES];
  for (uint32_t i = 0; i < st->spatial_count; ++i) {
    const ingot_ir_stmt_t* l = ingot_schedule_find_loop(f, f->vars[st->spatial[i]].name);
    ext[i] = l ? l->u.loop.extent : 0;
    if (ext[i] <= 0) {
      free(env);
      return false;
    }
  }
  bool ok = true;
  for (;;) {
    int64_t idx;
    if (!eval_index(store->u.store.index, env, &idx) || idx < 0 || idx >= numel) ok = false;
    else if (mark) seen[idx] = 1;
    else if (seen[idx]) ok = false;
    if (!ok) break;
    int32_t d = (int32_t)st->spatial_count - 1;
    while (d >= 0 && ++env[st->spatial[d]] == ext[d]) env[st->spatial[d--]] = 0;
    if (d < 0) break;
  }
  free(env);
  return ok;
}

static ingot_status_t check_fill(plan_t* p, uint32_t stage, const stage_view_t* update) {
  const ingot_ir_func_t* f = p->f;
  const ingot_stage_t* st = &p->kernel->stages[stage];
  const ingot_ir_stmt_t* root = st->spatial_count ? ingot_schedule_find_loop(f, f->vars[st->spatial[0]].name) : NULL;
  const ingot_ir_stmt_t* store = nest_store(root);
  const ingot_ir_stmt_t* ustore = nest_store(update->outer);
  if (!store || !ustore || store->u.store.buffer != ustore->u.store.buffer || index_reads_memory(store->u.store.value))
    return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                      "kernel '%s': template 'gpu.gemm' does not fit: stage %u is not a constant fill of the output",
                      f->name, stage);
  uint32_t buf = store->u.store.buffer;
  int64_t numel = ingot_ir_buffer_numel(&f->buffers[buf]);
  uint8_t* seen = ingot_xcalloc((size_t)numel + 1, 1);
  bool ok = walk_indices(f, update->st, ustore, seen, numel, true) && walk_indices(f, st, store, seen, numel, false);
  free(seen);
  if (!ok)
    return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                      "kernel '%s': template 'gpu.gemm' does not fit: fill stage %u may write what the UPDATE computes",
                      f->name, stage);
  return INGOT_OK;
}

/* The kernel's shape for this template; fails (the space is empty) naming why. */
static ingot_status_t gemm_shape(plan_t* p, gemm_shape_t* out) {
  memset(out, 0, sizeof(*out));
  const ingot_kernel_t* kn = p->kernel;
  const char* name = p->f->name;
#define NOFIT(...) ingot_fail(INGOT_ERROR_UNSUPPORTED, "kernel '%s': template 'gpu.gemm' does not fit: " __VA_ARGS__)
  if (!target_is_gpu(p->target) || !p->target->gpu.max_threads_per_block)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "kernel '%s': template 'gpu.gemm' serves GPU targets only, not '%s'",
                      name, p->target->name);
  uint32_t update = UINT32_MAX;
  for (uint32_t i = 0; i < kn->stage_count; ++i) {
    ingot_stage_role_t r = kn->stages[i].role;
    if (r == INGOT_STAGE_UPDATE && update == UINT32_MAX) update = i;
    else if (r == INGOT_STAGE_FINISH && update != UINT32_MAX && i == update + 1 && !out->finish) out->finish = true;
    else if (r == INGOT_STAGE_PURE && update == UINT32_MAX && out->fill_count < GEMM_MAX_FILLS) out->fills[out->fill_count++] = i;
    else return NOFIT("stage %u (role %d) is not the one UPDATE, its FINISH or a fill before them", name, i, (int)r);
  }
  if (update == UINT32_MAX) return NOFIT("no UPDATE stage", name);
  ingot_status_t s = plan_stage_view(p, update, &out->v);
  if (s != INGOT_OK) return s;
  const ingot_stage_t* st = out->v.st;
  if (st->reduce_count == 0 || st->spatial_count < 2)
    return NOFIT("the UPDATE has %u spatial and %u reduce loops (at least 2 and 1 wanted)", name, st->spatial_count,
                 st->reduce_count);
  if (!ingot_schedule_nest_accumulates(out->v.outer)) return NOFIT("the UPDATE is not y[i] = start op e", name);
  if (out->finish) {
    uint32_t buffer;
    const ingot_ir_stmt_t* fin = ingot_schedule_find_loop(p->f, p->f->vars[kn->stages[update + 1].spatial[0]].name);
    if (!fin || !ingot_schedule_is_epilogue(p->f, fin, &buffer) ||
        buffer != ingot_schedule_nest_store_buffer(out->v.outer))
      return NOFIT("its FINISH stage is not an epilogue y[i] = E(y[i]) of the UPDATE's output", name);
  }
  uint32_t k = st->spatial_count - 1;
  out->t = st->tile_axis >= 0 && (uint32_t)st->tile_axis < k ? (uint32_t)st->tile_axis : k - 1;
  out->m_ext = out->v.sext[out->t];
  out->n_ext = 1;
  for (uint32_t i = out->t + 1; i <= k; ++i) out->n_ext *= out->v.sext[i];

  for (uint32_t i = 0; i < out->fill_count; ++i)
    if ((s = check_fill(p, out->fills[i], &out->v)) != INGOT_OK) return s;

  /* The operands that may be staged: inputs whose index reads a reduce
   * loop, read once, affine in M, N (one axis, or not read when fused) and
   * the reduce loops, with non-negative coefficients. */
  uint32_t vars[2 * INGOT_MAX_STAGE_AXES + 1];
  uint32_t nv = 0, n_first = 0, r_first = 0;
  vars[nv++] = st->spatial[out->t];
  n_first = nv;
  for (uint32_t i = out->t + 1; i <= k; ++i) vars[nv++] = st->spatial[i];
  r_first = nv;
  for (uint32_t i = 0; i < st->reduce_count; ++i) vars[nv++] = st->reduce[i];
  uint32_t n_count = r_first - n_first;
  ingot_ir_uses_t uses;
  ingot_ir_uses_collect(p->f, out->v.outer, &uses);
  uint32_t params = ingot_ir_param_count(p->f);
  for (uint32_t b = 0; b < params && out->op_count < GEMM_MAX_OPERANDS; ++b) {
    if (p->f->buffers[b].role != INGOT_IR_BUFFER_INPUT || !uses.loaded[b]) continue;
    const ingot_ir_expr_t* load = NULL;
    uint32_t loads = 0;
    for (size_t i = 0; i < uses.loads.count; ++i)
      if (uses.loads.data[i]->u.load.buffer == b) {
        load = uses.loads.data[i];
        ++loads;
      }
    int64_t coefs[2 * INGOT_MAX_STAGE_AXES + 1];
    if (loads != 1 || !schedule_affine(load->u.load.index, vars, nv, coefs)) continue;
    bool ok = true, reads_r = false;
    gemm_operand_t op;
    memset(&op, 0, sizeof(op));
    op.buffer = b;
    for (uint32_t i = 0; i < nv; ++i) ok &= coefs[i] >= 0;
    if (index_reads_memory(load->u.load.index)) ok = false; /* a gather: cache_read refuses it */
    op.uses_m = coefs[0] != 0;
    for (uint32_t i = n_first; i < r_first; ++i) op.uses_n |= coefs[i] != 0;
    if (op.uses_n && n_count > 1) ok = false; /* fused positions: div/mod */
    for (uint32_t i = 0; i < st->reduce_count; ++i) {
      op.uses_r[i] = coefs[r_first + i] != 0;
      reads_r |= op.uses_r[i];
    }
    if (ok && reads_r) out->ops[out->op_count++] = op;
  }
  ingot_ir_uses_free(&uses);
  return INGOT_OK;
#undef NOFIT
}

static void add_pow2(int64_t* values, uint32_t* n, int64_t lo, int64_t hi) {
  for (int64_t v = lo; v <= hi && *n < INGOT_MAX_KNOB_VALUES; v *= 2) values[(*n)++] = v;
}

static int64_t largest_at_most(const int64_t* values, uint32_t n, int64_t cap) {
  int64_t best = values[0];
  for (uint32_t i = 0; i < n; ++i)
    if (values[i] <= cap) best = values[i];
  return best;
}

ingot_status_t template_gpu_gemm_space(plan_t* p, uint32_t mask, ingot_schedule_space_t* space) {
  gemm_shape_t g;
  ingot_status_t s = gemm_shape(p, &g);
  if (s != INGOT_OK) return s;
  int64_t tm[4], tn[4], bm[8], bn[8], ks[8];
  uint32_t ntm = 0, ntn = 0, nbm = 0, nbn = 0, nks = 0;
  add_pow2(tm, &ntm, 1, pow2_ceil(g.m_ext) < 8 ? pow2_ceil(g.m_ext) : 8);
  add_pow2(tn, &ntn, 1, pow2_ceil(g.n_ext) < 8 ? pow2_ceil(g.n_ext) : 8);
  int64_t bm_hi = pow2_ceil(g.m_ext) < 128 ? pow2_ceil(g.m_ext) : 128, bn_hi = pow2_ceil(g.n_ext) < 128 ? pow2_ceil(g.n_ext) : 128;
  add_pow2(bm, &nbm, tm[ntm - 1], bm_hi > tm[ntm - 1] ? bm_hi : tm[ntm - 1]);
  add_pow2(bn, &nbn, tn[ntn - 1], bn_hi > tn[ntn - 1] ? bn_hi : tn[ntn - 1]);
  /* Every combination within the threads of a block: the largest blocks go
   * first (the wider side), down to one thread tile. */
  int64_t max_threads = p->target->gpu.max_threads_per_block;
  while ((bm[nbm - 1] / tm[0]) * (bn[nbn - 1] / tn[0]) > max_threads && (nbm > 1 || nbn > 1)) {
    if (nbn > 1 && (bn[nbn - 1] / tn[0] >= bm[nbm - 1] / tm[0] || nbm == 1)) --nbn;
    else --nbm;
  }
  if ((bm[nbm - 1] / tm[0]) * (bn[nbn - 1] / tn[0]) > max_threads)
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "kernel '%s': template 'gpu.gemm': %lld threads per block are too few",
                      p->f->name, (long long)max_threads);
  add_pow2(ks, &nks, 1, pow2_ceil(g.v.rext[0]) < 32 ? pow2_ceil(g.v.rext[0]) : 32);
  /* Defaults: 64 x 64 blocks of 4 x 4 thread tiles, within the lists; then
   * smaller thread tiles while a block has fewer than four warps (a thin
   * axis: a conv's few output positions deep in a network). */
  int64_t dtm = largest_at_most(tm, ntm, 4), dtn = largest_at_most(tn, ntn, 4);
  int64_t dbm = largest_at_most(bm, nbm, 64), dbn = largest_at_most(bn, nbn, 64);
  int64_t warp = p->target->gpu.warp_size ? p->target->gpu.warp_size : 32;
  while ((dbm / dtm) * (dbn / dtn) < 4 * warp && (dtm > 1 || dtn > 1) &&
         (dbm / (dtm > 1 ? dtm / 2 : dtm)) * (dbn / (dtn > 1 ? dtn / 2 : dtn)) <= max_threads) {
    if (dtm >= dtn) dtm /= 2;
    else dtn /= 2;
  }
  space_add(space, mask, SCHEDULE_KNOB_GPU_BLOCK_M, bm, nbm, dbm);
  space_add(space, mask, SCHEDULE_KNOB_GPU_BLOCK_N, bn, nbn, dbn);
  space_add(space, mask, SCHEDULE_KNOB_GPU_THREAD_M, tm, ntm, dtm);
  space_add(space, mask, SCHEDULE_KNOB_GPU_THREAD_N, tn, ntn, dtn);
  space_add(space, mask, SCHEDULE_KNOB_GPU_K_STEP, ks, nks, largest_at_most(ks, nks, 8));
  static const int64_t k_bool[] = {0, 1};
  space_add(space, mask, SCHEDULE_KNOB_GPU_SHARED, k_bool, 2, 1);
  return INGOT_OK;
}

/* Extents of split(extent, factor): inner min(factor, extent), outer the rest. */
static int64_t split_inner(int64_t extent, int64_t factor) { return factor < extent ? factor : extent; }
static int64_t split_outer(int64_t extent, int64_t factor) {
  int64_t i = split_inner(extent, factor);
  return (extent + i - 1) / i;
}

static void emit_bind(plan_t* p, ingot_directive_kind_t kind, const char* loop, int64_t axis) {
  ingot_directive_t d = {0};
  d.kind = kind;
  d.loop = loop;
  d.factor = axis;
  ingot_schedule_add(p->s, &d);
}

ingot_status_t template_gpu_gemm_plan(plan_t* p) {
  gemm_shape_t g;
  ingot_status_t s = gemm_shape(p, &g);
  if (s != INGOT_OK) return s;
  const stage_view_t* v = &g.v;
  const ingot_stage_t* st = v->st;
  uint32_t k = st->spatial_count - 1, t = g.t;
  int64_t BM = p->knob[SCHEDULE_KNOB_GPU_BLOCK_M], BN = p->knob[SCHEDULE_KNOB_GPU_BLOCK_N];
  int64_t TM = p->knob[SCHEDULE_KNOB_GPU_THREAD_M], TN = p->knob[SCHEDULE_KNOB_GPU_THREAD_N];
  int64_t KS = p->knob[SCHEDULE_KNOB_GPU_K_STEP];
  int64_t TY = BM / TM, TX = BN / TN;

  /* The fills: their loops fused, on blocks of up to 256 threads. */
  for (uint32_t i = 0; i < g.fill_count; ++i) {
    stage_view_t fv;
    if ((s = plan_stage_view(p, g.fills[i], &fv)) != INGOT_OK) return s;
    const char* all = fv.sname[0];
    int64_t extent = fv.sext[0];
    for (uint32_t j = 1; j < fv.st->spatial_count; ++j) {
      all = plan_emit_fuse(p, all, fv.sname[j]);
      extent *= fv.sext[j];
    }
    int64_t threads = p->target->gpu.max_threads_per_block < 256 ? p->target->gpu.max_threads_per_block : 256;
    const char* inner;
    const char* outer = plan_emit_split(p, all, threads < extent ? threads : extent, &inner);
    emit_bind(p, INGOT_DIRECTIVE_BIND_BLOCK, outer, 0);
    emit_bind(p, INGOT_DIRECTIVE_BIND_THREAD, inner, 0);
  }

  /* N: the axes inside M fused; Z: the axes outside M fused. */
  const char* n = v->sname[t + 1];
  for (uint32_t i = t + 2; i <= k; ++i) n = plan_emit_fuse(p, n, v->sname[i]);
  const char* z = t > 0 ? v->sname[0] : NULL;
  for (uint32_t i = 1; i < t; ++i) z = plan_emit_fuse(p, z, v->sname[i]);

  /* m = bm*BM + tm*TY + ty, n = bn*BN + tn*TX + tx */
  const char *mi, *ty, *ni, *tx, *ki = NULL;
  const char* bm = plan_emit_split(p, v->sname[t], BM, &mi);
  const char* tm = plan_emit_split(p, mi, TY, &ty);
  const char* bn = plan_emit_split(p, n, BN, &ni);
  const char* tn = plan_emit_split(p, ni, TX, &tx);
  const char* ko = NULL;
  if (KS < v->rext[0]) ko = plan_emit_split(p, v->rname[0], KS, &ki);
  else ki = v->rname[0];

  stage_loops_t order = {0};
  if (z) plan_loops_push(&order, z, 0);
  plan_loops_push(&order, bm, 0);
  plan_loops_push(&order, bn, 0);
  if (ko) plan_loops_push(&order, ko, 0);
  plan_loops_push(&order, ty, 0);
  plan_loops_push(&order, tx, 0);
  plan_loops_push(&order, ki, 0);
  for (uint32_t i = 1; i < st->reduce_count; ++i) plan_loops_push(&order, v->rname[i], 0);
  plan_loops_push(&order, tm, 0);
  plan_loops_push(&order, tn, 0);
  ingot_directive_t d = {0};
  d.kind = INGOT_DIRECTIVE_REORDER;
  d.order = order.names;
  d.order_count = order.count;
  ingot_schedule_add(p->s, &d);

  emit_bind(p, INGOT_DIRECTIVE_BIND_BLOCK, bn, 0);
  emit_bind(p, INGOT_DIRECTIVE_BIND_BLOCK, bm, 1);
  if (z) emit_bind(p, INGOT_DIRECTIVE_BIND_BLOCK, z, 2);
  emit_bind(p, INGOT_DIRECTIVE_BIND_THREAD, tx, 0);
  emit_bind(p, INGOT_DIRECTIVE_BIND_THREAD, ty, 1);
  plan_emit_mark(p, INGOT_DIRECTIVE_UNROLL, tm);
  plan_emit_mark(p, INGOT_DIRECTIVE_UNROLL, tn);

  /* The operands' tiles, while the shared bytes last (each tile's size from
   * the loop extents the splits give: what cache_read will find). */
  if (p->knob[SCHEDULE_KNOB_GPU_SHARED]) {
    int64_t mi_ext = split_inner(g.m_ext, BM), ni_ext = split_inner(g.n_ext, BN);
    int64_t m_tile = split_inner(mi_ext, TY) * split_outer(mi_ext, TY);
    int64_t n_tile = split_inner(ni_ext, TX) * split_outer(ni_ext, TX);
    int64_t budget = p->target->gpu.shared_bytes_per_block, used = 0;
    for (uint32_t o = 0; o < g.op_count; ++o) {
      const gemm_operand_t* op = &g.ops[o];
      int64_t elems = (op->uses_m ? m_tile : 1) * (op->uses_n ? n_tile : 1);
      for (uint32_t i = 0; i < st->reduce_count; ++i)
        if (op->uses_r[i]) elems *= i == 0 ? split_inner(v->rext[0], KS) : v->rext[i];
      int64_t bytes = elems * (int64_t)ingot_dtype_size(p->f->buffers[op->buffer].dtype);
      if (used + bytes > budget) continue;
      used += bytes;
      char name[160];
      snprintf(name, sizeof(name), "%s_shared", p->f->buffers[op->buffer].name);
      ingot_directive_t c = {0};
      c.kind = INGOT_DIRECTIVE_CACHE_READ;
      c.loop = ty;
      c.inner = p->f->buffers[op->buffer].name;
      c.outer_name = name;
      c.factor = budget;
      ingot_schedule_add(p->s, &c);
    }
  }

  ingot_directive_t a = {0};
  a.kind = INGOT_DIRECTIVE_ACCUMULATE;
  a.loop = ki;
  a.factor = g.finish ? 1 : 0;
  ingot_schedule_add(p->s, &a);
  return INGOT_OK;
}
