/* Data-movement and shape ops, every dtype the IR has: Shape/Size (when not
 * folded), Gather, GatherElements, GatherND, ScatterND, ScatterElements
 * (and Scatter), Slice, Split, Pad, Expand, Tile, Range, ConstantOfShape,
 * DepthToSpace, SpaceToDepth, Trilu, ReverseSequence, TensorScatter, and the
 * generators EyeLike, OptionalHasElement, the window functions
 * (HannWindow, HammingWindow, BlackmanWindow) and MelWeightMatrix, STFT,
 * and the ops whose output sizes a run computes (NonZero, Unique).
 * (Squeeze/Unsqueeze are views in lower_shape.c, Resize/Upsample in
 * lower_resize.c.)
 *
 * Parameters come from the ingot_graph_*_params resolvers that shape
 * inference uses too. Indices read at run time (Gather*, Scatter*) are made
 * non-negative (i < 0: i + dim) and then CLAMPED into [0, dim): an index out
 * of range is bad input, and the clamp guarantees that no load or store ever
 * leaves its buffer; such an element gets the value at the nearest valid
 * index instead of an error. Constant indices are range-checked at compile
 * time by shape inference.
 *
 * Scatter stages run their update loops serially (an OTHER stage whose
 * outermost loop has extent 1), so duplicate indices apply in order: the
 * last write wins for reduction "none", and add/mul/max/min accumulate. */
#include <string.h>

#include "lower_internal.h"

static uint32_t node_output(const lower_ctx_t* ctx, uint32_t k) {
  return k < ctx->node->output_count ? ctx->node->outputs[k] : INGOT_NO_VALUE;
}

/* Checks x and y: known non-empty shapes, a dtype the IR has, the same dtype. */
static ingot_status_t check_xy(lower_ctx_t* ctx, uint32_t x, uint32_t y) {
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx))) return s;
  if ((s = lower_check_value_dt(ctx, x, LOWER_DT_ANY)) || (s = lower_check_value_dt(ctx, y, LOWER_DT_ANY))) return s;
  if (lower_value(ctx, x)->dtype != lower_value(ctx, y)->dtype) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "output type %s differs from input type %s",
                      ingot_dtype_name(lower_value(ctx, y)->dtype), ingot_dtype_name(lower_value(ctx, x)->dtype));
  }
  return INGOT_OK;
}

static ingot_status_t check_indices(lower_ctx_t* ctx, uint32_t idx) {
  ingot_status_t s = lower_check_value_dt(ctx, idx, LOWER_DT(INGOT_DTYPE_I64) | LOWER_DT(INGOT_DTYPE_I32));
  return s;
}

/* A run-time index into an axis of extent `dim`: negative counts from the
 * end, then clamped into [0, dim). */
static ingot_ir_expr_t* index_expr(lower_ctx_t* ctx, ingot_ir_expr_t* raw, int64_t dim) {
  ingot_ir_func_t* f = ctx->f;
  ingot_ir_expr_t* e = ingot_ir_cast(f, INGOT_DTYPE_I64, raw);
  e = ingot_ir_select(f, ingot_ir_binary(f, INGOT_IR_LT, e, ingot_ir_int(f, 0)), ingot_ir_add(f, e, ingot_ir_int(f, dim)),
                      e);
  e = ingot_ir_binary(f, INGOT_IR_MIN, e, ingot_ir_int(f, dim - 1));
  return ingot_ir_binary(f, INGOT_IR_MAX, e, ingot_ir_int(f, 0));
}

static const char* dt(ingot_dtype_t t) { return ingot_dtype_name(t); }

static void set_workload(lower_ctx_t* ctx, const char* text) {
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE;
  ctx->workload = ingot_arena_strdup(ctx->arena, text);
}

/* ---- Shape, Size (only when the output is a graph output; otherwise they
 * fold to constants) ---- */

ingot_status_t lower_shape_of(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0), y = node_output(ctx, 0);
  if ((s = lower_check_value(ctx, x, false)) || (s = lower_check_value_dt(ctx, y, LOWER_DT(INGOT_DTYPE_I64)))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  int64_t vals[INGOT_MAX_RANK + 1], count = 0;
  if (ctx->node->op == INGOT_OP_SIZE) {
    vals[count++] = ingot_value_numel(xv);
  } else {
    int64_t start, end;
    ingot_graph_shape_range(ctx->node, xv->rank, &start, &end);
    for (int64_t i = start; i < end; ++i) vals[count++] = xv->dims[i];
  }
  if (count != ingot_value_numel(yv)) return lower_fail(ctx, INGOT_ERROR_INTERNAL, "output size mismatch");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  ingot_ir_stmt_t* stores[INGOT_MAX_RANK + 1];
  for (int64_t i = 0; i < count; ++i) stores[i] = ingot_ir_store(f, by, ingot_ir_int(f, i), ingot_ir_int(f, vals[i]));
  uint32_t v = lower_add_var(ctx, "i", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  lower_emit_other(ctx, ingot_ir_for(f, v, 1, ingot_ir_block(f, stores, (uint32_t)count)));
  set_workload(ctx, ingot_arena_printf(ctx->arena, "%s n%lld", ctx->node->op == INGOT_OP_SIZE ? "size" : "shape",
                                       (long long)count));
  return INGOT_OK;
}

/* ---- Gather ---- */

ingot_status_t lower_gather(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0), idx = lower_input(ctx, 1), y = node_output(ctx, 0);
  /* A float32 table stored compressed (ingot_graph_compress_weights): a
   * float32 output from a narrower weight, a scale per row for int8. */
  bool compressed = x != INGOT_NO_VALUE && y != INGOT_NO_VALUE && lower_value(ctx, x)->kind == INGOT_VALUE_WEIGHT &&
                    lower_value(ctx, y)->dtype == INGOT_DTYPE_F32 && lower_value(ctx, x)->dtype != INGOT_DTYPE_F32;
  if (compressed) {
    if ((s = lower_refuse_activation(ctx)) || (s = lower_check_weight(ctx, x)) || (s = lower_check_value(ctx, y, true)) ||
        (s = check_indices(ctx, idx)))
      return s;
  } else if ((s = check_xy(ctx, x, y)) || (s = check_indices(ctx, idx))) {
    return s;
  }
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* iv = lower_value(ctx, idx);
  const ingot_value_t* yv = lower_value(ctx, y);
  int64_t axis = ctx->params->u.axis.axis; /* normalized (graph/params.c) */
  if (axis >= xv->rank || yv->rank != xv->rank - 1 + iv->rank) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "axis or output rank does not fit the inputs");
  }
  if (compressed && axis != 0) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "a compressed table needs axis 0");
  lower_weight_t wx = {UINT32_MAX, UINT32_MAX, INGOT_DTYPE_F32};
  if (compressed) wx = lower_add_weight(ctx, x, "x");
  uint32_t bx = compressed ? wx.buffer : lower_add_input(ctx, x, "x");
  uint32_t bi = lower_add_input(ctx, idx, "indices");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  lower_loops_t loops;
  lower_loops_over(ctx, &loops, yv->rank, yv->dims);
  ingot_ir_expr_t* xi[INGOT_MAX_RANK];
  int32_t q = iv->rank;
  for (int32_t d = 0; d < axis; ++d) xi[d] = loops.idx[d];
  ingot_ir_expr_t* j = ingot_ir_load(f, bi, ingot_ir_flat_index(f, bi, loops.idx + axis));
  xi[axis] = index_expr(ctx, j, xv->dims[axis]);
  for (int32_t d = (int32_t)axis + 1; d < xv->rank; ++d) xi[d] = loops.idx[d - 1 + q];
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL,
                   ingot_ir_store(f, by, ingot_ir_flat_index(f, by, loops.idx),
                                  compressed ? lower_weight_load(ctx, &wx, ingot_ir_flat_index(f, bx, xi), xi[0])
                                             : ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi))));
  set_workload(ctx, ingot_arena_printf(ctx->arena, "gather %s%s x=%s i=%s axis%lld", dt(yv->dtype),
                                       lower_weight_tag(ctx, &wx), lower_shape_str(ctx, x), lower_shape_str(ctx, idx),
                                       (long long)axis));
  return INGOT_OK;
}

ingot_status_t lower_gather_elements(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0), idx = lower_input(ctx, 1), y = node_output(ctx, 0);
  if ((s = check_xy(ctx, x, y)) || (s = check_indices(ctx, idx))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  int64_t axis = ctx->params->u.axis.axis; /* normalized (graph/params.c) */
  if (axis >= xv->rank || yv->rank != xv->rank) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "axis or output rank does not fit the inputs");
  }
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t bi = lower_add_input(ctx, idx, "indices");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  lower_loops_t loops;
  lower_loops_over(ctx, &loops, yv->rank, yv->dims);
  ingot_ir_expr_t* xi[INGOT_MAX_RANK];
  for (int32_t d = 0; d < xv->rank; ++d) xi[d] = loops.idx[d];
  ingot_ir_expr_t* flat = ingot_ir_flat_index(f, by, loops.idx);
  xi[axis] = index_expr(ctx, ingot_ir_load(f, bi, flat), xv->dims[axis]);
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL,
                   ingot_ir_store(f, by, flat, ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi))));
  set_workload(ctx, ingot_arena_printf(ctx->arena, "gather_elements %s x=%s i=%s axis%lld", dt(xv->dtype),
                                       lower_shape_str(ctx, x), lower_shape_str(ctx, idx), (long long)axis));
  return INGOT_OK;
}

/* The data index addressed by the index tuple at positions pos[0..q-1) of an
 * indices tensor [.., k]: out[b + j] = clamp(indices[pos, j]) for j < k. */
static void nd_index(lower_ctx_t* ctx, uint32_t bi, const ingot_value_t* xv, int64_t batch, int64_t k,
                     ingot_ir_expr_t* const* pos, ingot_ir_expr_t** out) {
  ingot_ir_func_t* f = ctx->f;
  const ingot_ir_buffer_t* ib = &f->buffers[bi];
  ingot_ir_expr_t* ii[INGOT_MAX_RANK];
  for (int32_t d = 0; d < ib->rank - 1; ++d) ii[d] = pos[d];
  for (int64_t j = 0; j < k; ++j) {
    ii[ib->rank - 1] = ingot_ir_int(f, j);
    out[batch + j] = index_expr(ctx, ingot_ir_load(f, bi, ingot_ir_flat_index(f, bi, ii)), xv->dims[batch + j]);
  }
}

ingot_status_t lower_gather_nd(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0), idx = lower_input(ctx, 1), y = node_output(ctx, 0);
  if ((s = check_xy(ctx, x, y)) || (s = check_indices(ctx, idx))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* iv = lower_value(ctx, idx);
  const ingot_value_t* yv = lower_value(ctx, y);
  int64_t batch = ctx->params->u.gathernd.batch_dims; /* graph/params.c */
  int64_t k = iv->rank >= 1 ? iv->dims[iv->rank - 1] : 0;
  if (batch < 0 || k < 1 || batch + k > xv->rank || yv->rank != iv->rank - 1 + xv->rank - (int32_t)(batch + k)) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "indices do not fit the data");
  }
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t bi = lower_add_input(ctx, idx, "indices");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  lower_loops_t loops;
  lower_loops_over(ctx, &loops, yv->rank, yv->dims);
  ingot_ir_expr_t* xi[INGOT_MAX_RANK];
  for (int64_t d = 0; d < batch; ++d) xi[d] = loops.idx[d];
  nd_index(ctx, bi, xv, batch, k, loops.idx, xi);
  for (int32_t d = (int32_t)(batch + k); d < xv->rank; ++d) xi[d] = loops.idx[iv->rank - 1 + d - (batch + k)];
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL,
                   ingot_ir_store(f, by, ingot_ir_flat_index(f, by, loops.idx),
                                  ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi))));
  set_workload(ctx, ingot_arena_printf(ctx->arena, "gather_nd %s x=%s i=%s b%lld", dt(xv->dtype),
                                       lower_shape_str(ctx, x), lower_shape_str(ctx, idx), (long long)batch));
  return INGOT_OK;
}

/* ---- Scatter ---- */

typedef enum reduction_t { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN } reduction_t;

/* The scatter reduction: node.params (graph/params.c), as reduction_t. */
static reduction_t read_reduction(lower_ctx_t* ctx) { return (reduction_t)ctx->params->u.scatter.reduction; }

static ingot_ir_expr_t* reduce_expr(lower_ctx_t* ctx, reduction_t r, ingot_ir_expr_t* old, ingot_ir_expr_t* v) {
  static const ingot_ir_binary_op_t kOps[] = {0, INGOT_IR_ADD, INGOT_IR_MUL, INGOT_IR_MAX, INGOT_IR_MIN};
  return r == RED_NONE ? v : ingot_ir_binary(ctx->f, kOps[r], old, v);
}

/* y = x (a PURE copy stage); the scatter stage follows. */
static void emit_copy(lower_ctx_t* ctx, uint32_t bx, uint32_t by, const ingot_value_t* yv) {
  lower_loops_t loops;
  lower_loops_over(ctx, &loops, yv->rank, yv->dims);
  ingot_ir_expr_t* flat = ingot_ir_flat_index(ctx->f, by, loops.idx);
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL, ingot_ir_store(ctx->f, by, flat, ingot_ir_load(ctx->f, bx, flat)));
}

/* Wraps `body` in `loops` and one outer loop of extent 1 (so the stage runs
 * serially) and appends it as an OTHER stage. */
static void emit_serial(lower_ctx_t* ctx, const lower_loops_t* loops, ingot_ir_stmt_t* body) {
  for (uint32_t i = loops->count; i-- > 0;) body = ingot_ir_for(ctx->f, loops->vars[i], loops->extents[i], body);
  uint32_t v = lower_add_var(ctx, "serial", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  lower_emit_other(ctx, ingot_ir_for(ctx->f, v, 1, body));
}

ingot_status_t lower_scatter_nd(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0), idx = lower_input(ctx, 1), upd = lower_input(ctx, 2), y = node_output(ctx, 0);
  if ((s = check_xy(ctx, x, y)) || (s = check_xy(ctx, upd, y)) || (s = check_indices(ctx, idx))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* iv = lower_value(ctx, idx);
  const ingot_value_t* uv = lower_value(ctx, upd);
  reduction_t red = read_reduction(ctx);
  int64_t k = iv->dims[iv->rank - 1];
  if (k < 1 || k > xv->rank || uv->rank != iv->rank - 1 + xv->rank - (int32_t)k) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "indices and updates do not fit the data");
  }
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t bi = lower_add_input(ctx, idx, "indices");
  uint32_t bu = lower_add_input(ctx, upd, "updates");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  emit_copy(ctx, bx, by, xv);
  lower_loops_t loops;
  lower_loops_over(ctx, &loops, uv->rank, uv->dims);
  ingot_ir_expr_t* yi[INGOT_MAX_RANK];
  nd_index(ctx, bi, xv, 0, k, loops.idx, yi);
  for (int32_t d = (int32_t)k; d < xv->rank; ++d) yi[d] = loops.idx[iv->rank - 1 + d - k];
  ingot_ir_expr_t* at = ingot_ir_flat_index(f, by, yi);
  ingot_ir_expr_t* v = ingot_ir_load(f, bu, ingot_ir_flat_index(f, bu, loops.idx));
  emit_serial(ctx, &loops, ingot_ir_store(f, by, at, reduce_expr(ctx, red, ingot_ir_load(f, by, at), v)));
  set_workload(ctx, ingot_arena_printf(ctx->arena, "scatter_nd %s x=%s i=%s red%d", dt(xv->dtype),
                                       lower_shape_str(ctx, x), lower_shape_str(ctx, idx), (int)red));
  return INGOT_OK;
}

ingot_status_t lower_scatter_elements(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0), idx = lower_input(ctx, 1), upd = lower_input(ctx, 2), y = node_output(ctx, 0);
  if ((s = check_xy(ctx, x, y)) || (s = check_xy(ctx, upd, y)) || (s = check_indices(ctx, idx))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* iv = lower_value(ctx, idx);
  reduction_t red = read_reduction(ctx);
  int64_t axis = ctx->params->u.scatter.axis; /* normalized (graph/params.c) */
  if (axis >= xv->rank || iv->rank != xv->rank) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "axis or indices do not fit the data");
  }
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t bi = lower_add_input(ctx, idx, "indices");
  uint32_t bu = lower_add_input(ctx, upd, "updates");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  emit_copy(ctx, bx, by, xv);
  lower_loops_t loops;
  lower_loops_over(ctx, &loops, iv->rank, iv->dims);
  ingot_ir_expr_t* flat = ingot_ir_flat_index(f, bi, loops.idx);
  ingot_ir_expr_t* yi[INGOT_MAX_RANK];
  for (int32_t d = 0; d < xv->rank; ++d) yi[d] = loops.idx[d];
  yi[axis] = index_expr(ctx, ingot_ir_load(f, bi, flat), xv->dims[axis]);
  ingot_ir_expr_t* at = ingot_ir_flat_index(f, by, yi);
  ingot_ir_expr_t* v = ingot_ir_load(f, bu, flat);
  emit_serial(ctx, &loops, ingot_ir_store(f, by, at, reduce_expr(ctx, red, ingot_ir_load(f, by, at), v)));
  set_workload(ctx, ingot_arena_printf(ctx->arena, "scatter_elements %s x=%s i=%s axis%lld red%d", dt(xv->dtype),
                                       lower_shape_str(ctx, x), lower_shape_str(ctx, idx), (long long)axis, (int)red));
  return INGOT_OK;
}

/* ---- Slice, Split ---- */

ingot_status_t lower_slice(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0), y = node_output(ctx, 0);
  if ((s = check_xy(ctx, x, y))) return s;
  ingot_slice_params_t p;
  if ((s = ingot_graph_slice_params(ctx->graph, ctx->node_id, &p))) return s;
  const ingot_value_t* yv = lower_value(ctx, y);
  for (int32_t d = 0; d < p.rank; ++d) {
    if (yv->rank != p.rank || yv->dims[d] != p.count[d]) {
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "output shape %s does not match the slice",
                        lower_shape_str(ctx, y));
    }
  }
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  lower_loops_t loops;
  lower_loops_over(ctx, &loops, yv->rank, yv->dims);
  ingot_ir_expr_t* xi[INGOT_MAX_RANK];
  for (int32_t d = 0; d < p.rank; ++d) {
    xi[d] = ingot_ir_add(f, ingot_ir_mul(f, loops.idx[d], ingot_ir_int(f, p.step[d])), ingot_ir_int(f, p.start[d]));
  }
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL,
                   ingot_ir_store(f, by, ingot_ir_flat_index(f, by, loops.idx),
                                  ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi))));
  ingot_strbuf_t sb = {0};
  ingot_strbuf_appendf(&sb, "slice %s x=%s", dt(yv->dtype), lower_shape_str(ctx, x));
  lower_append_ints(&sb, "start", p.start, (uint32_t)p.rank);
  lower_append_ints(&sb, "step", p.step, (uint32_t)p.rank);
  lower_append_ints(&sb, "count", p.count, (uint32_t)p.rank);
  set_workload(ctx, sb.data);
  ingot_strbuf_free(&sb);
  return INGOT_OK;
}

ingot_status_t lower_split(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0);
  if ((s = lower_refuse_activation(ctx)) || (s = lower_check_value_dt(ctx, x, LOWER_DT_ANY))) return s;
  ingot_split_params_t p;
  if ((s = ingot_graph_split_params(ctx->graph, ctx->node_id, &p))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t outs[INGOT_MAX_SPLIT];
  for (uint32_t k = 0; k < p.count; ++k) {
    uint32_t y = node_output(ctx, k);
    outs[k] = UINT32_MAX;
    if (y == INGOT_NO_VALUE || p.sizes[k] == 0) continue; /* empty outputs need no code */
    if ((s = check_xy(ctx, x, y))) return s;
    const ingot_value_t* yv = lower_value(ctx, y);
    if (yv->rank != xv->rank || yv->dims[p.axis] != p.sizes[k]) {
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "output %u shape does not match the split", k);
    }
    outs[k] = lower_add_output(ctx, y, ingot_arena_printf(ctx->arena, "y%u", k));
  }
  ingot_ir_func_t* f = ctx->f;
  int64_t offset = 0;
  for (uint32_t k = 0; k < p.count; ++k) {
    if (outs[k] != UINT32_MAX) {
      const ingot_value_t* yv = lower_value(ctx, node_output(ctx, k));
      lower_loops_t loops;
      lower_loops_over(ctx, &loops, yv->rank, yv->dims);
      ingot_ir_expr_t* xi[INGOT_MAX_RANK];
      for (int32_t d = 0; d < xv->rank; ++d) xi[d] = loops.idx[d];
      xi[p.axis] = ingot_ir_add(f, loops.idx[p.axis], ingot_ir_int(f, offset));
      lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL,
                       ingot_ir_store(f, outs[k], ingot_ir_flat_index(f, outs[k], loops.idx),
                                      ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi))));
    }
    offset += p.sizes[k];
  }
  if (ctx->stages.count == 0) return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "every output is empty");
  ingot_strbuf_t sb = {0};
  ingot_strbuf_appendf(&sb, "split %s x=%s axis%d", dt(xv->dtype), lower_shape_str(ctx, x), p.axis);
  lower_append_ints(&sb, "sizes", p.sizes, p.count);
  set_workload(ctx, sb.data);
  ingot_strbuf_free(&sb);
  return INGOT_OK;
}

/* ---- Pad ---- */

ingot_status_t lower_pad(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0), y = node_output(ctx, 0);
  if ((s = check_xy(ctx, x, y))) return s;
  ingot_pad_params_t p;
  if ((s = ingot_graph_pad_params(ctx->graph, ctx->node_id, &p))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  for (int32_t d = 0; d < p.rank; ++d) {
    if (yv->rank != p.rank || yv->dims[d] != xv->dims[d] + p.begin[d] + p.end[d]) {
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "output shape %s does not match the pads",
                        lower_shape_str(ctx, y));
    }
  }
  if (p.value_in != INGOT_NO_VALUE && (s = lower_check_value_dt(ctx, p.value_in, LOWER_DT(xv->dtype)))) return s;
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t bv = p.value_in != INGOT_NO_VALUE ? lower_add_input(ctx, p.value_in, "value") : UINT32_MAX;
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  lower_loops_t loops;
  bool grow = p.mode == INGOT_PAD_CONSTANT;
  for (int32_t d = 0; d < p.rank; ++d) grow = grow && p.begin[d] >= 0 && p.end[d] >= 0 && xv->dims[d] > 0;
  if (grow) {
    /* Constant pads that only grow: the border filled slab by slab (along
     * axis d: the axes before d over x's interior, d over its begin or end
     * pad, the axes after it whole; disjoint, together the border), then x
     * copied into the interior: contiguous rows both ways, where one
     * select per element would gather x through clamped indices. */
    ingot_ir_expr_t* pad = bv != UINT32_MAX ? ingot_ir_load(f, bv, ingot_ir_int(f, 0)) : lower_const(ctx, xv->dtype, p.value);
    for (int32_t d = 0; d < p.rank; ++d) {
      for (int side = 0; side < 2; ++side) {
        int64_t width = side ? p.end[d] : p.begin[d];
        if (width == 0) continue;
        int64_t ext[INGOT_MAX_RANK];
        for (int32_t e = 0; e < p.rank; ++e) ext[e] = e < d ? xv->dims[e] : e == d ? width : yv->dims[e];
        lower_loops_over(ctx, &loops, yv->rank, ext);
        ingot_ir_expr_t* yi[INGOT_MAX_RANK];
        for (int32_t e = 0; e < p.rank; ++e) {
          int64_t at = e < d ? p.begin[e] : e == d ? (side ? p.begin[d] + xv->dims[d] : 0) : 0;
          yi[e] = ingot_ir_add(f, loops.idx[e], ingot_ir_int(f, at));
        }
        lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL, ingot_ir_store(f, by, ingot_ir_flat_index(f, by, yi), pad));
      }
    }
    lower_loops_over(ctx, &loops, xv->rank, xv->dims);
    ingot_ir_expr_t* yi[INGOT_MAX_RANK];
    for (int32_t e = 0; e < p.rank; ++e) yi[e] = ingot_ir_add(f, loops.idx[e], ingot_ir_int(f, p.begin[e]));
    lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL,
                     ingot_ir_store(f, by, ingot_ir_flat_index(f, by, yi),
                                    ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, loops.idx))));
  }
  if (!grow) {
    lower_loops_over(ctx, &loops, yv->rank, yv->dims);
    ingot_ir_expr_t* xi[INGOT_MAX_RANK];
    ingot_ir_expr_t* inside = NULL;
    for (int32_t d = 0; d < p.rank; ++d) {
      int64_t dim = xv->dims[d];
      ingot_ir_expr_t* src = ingot_ir_add(f, loops.idx[d], ingot_ir_int(f, -p.begin[d]));
      bool can_leave = p.begin[d] > 0 || p.end[d] > 0;
      if (!can_leave) {
        xi[d] = src;
        continue;
      }
      switch (p.mode) {
        case INGOT_PAD_CONSTANT: {
          ingot_ir_expr_t* c = NULL;
          ingot_ir_expr_t* clamped = src;
          if (p.begin[d] > 0) {
            c = ingot_ir_binary(f, INGOT_IR_LE, ingot_ir_int(f, 0), src);
            clamped = ingot_ir_binary(f, INGOT_IR_MAX, clamped, ingot_ir_int(f, 0));
          }
          if (p.end[d] > 0) {
            c = lower_and(ctx, c, ingot_ir_binary(f, INGOT_IR_LT, src, ingot_ir_int(f, dim)));
            clamped = ingot_ir_binary(f, INGOT_IR_MIN, clamped, ingot_ir_int(f, dim - 1));
          }
          inside = lower_and(ctx, inside, c);
          xi[d] = clamped;
          break;
        }
        case INGOT_PAD_REFLECT: {
          if (dim == 1) {
            xi[d] = ingot_ir_int(f, 0);
            break;
          }
          int64_t m = 2 * (dim - 1);
          ingot_ir_expr_t* t = ingot_ir_binary(f, INGOT_IR_MOD, src, ingot_ir_int(f, m));
          xi[d] = ingot_ir_select(f, ingot_ir_binary(f, INGOT_IR_LT, t, ingot_ir_int(f, dim)), t,
                                  ingot_ir_binary(f, INGOT_IR_SUB, ingot_ir_int(f, m), t));
          break;
        }
        case INGOT_PAD_EDGE:
          xi[d] = ingot_ir_binary(f, INGOT_IR_MIN, ingot_ir_binary(f, INGOT_IR_MAX, src, ingot_ir_int(f, 0)),
                                  ingot_ir_int(f, dim - 1));
          break;
        case INGOT_PAD_WRAP:
          xi[d] = ingot_ir_binary(f, INGOT_IR_MOD, src, ingot_ir_int(f, dim));
          break;
      }
    }
    ingot_ir_expr_t* v = ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi));
    if (inside) {
      ingot_ir_expr_t* pad = bv != UINT32_MAX ? ingot_ir_load(f, bv, ingot_ir_int(f, 0)) : lower_const(ctx, xv->dtype, p.value);
      v = ingot_ir_select(f, inside, v, pad);
    }
    lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL, ingot_ir_store(f, by, ingot_ir_flat_index(f, by, loops.idx), v));
  }
  static const char* const kModes[] = {"constant", "reflect", "edge", "wrap"};
  ingot_strbuf_t sb = {0};
  ingot_strbuf_appendf(&sb, "pad %s %s x=%s", kModes[p.mode], dt(xv->dtype), lower_shape_str(ctx, x));
  lower_append_ints(&sb, "begin", p.begin, (uint32_t)p.rank);
  lower_append_ints(&sb, "end", p.end, (uint32_t)p.rank);
  set_workload(ctx, sb.data);
  ingot_strbuf_free(&sb);
  return INGOT_OK;
}

/* ---- Expand, Tile ---- */

ingot_status_t lower_expand(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0), y = node_output(ctx, 0);
  if ((s = check_xy(ctx, x, y)) || (s = lower_check_broadcast(ctx, x, y))) return s;
  const ingot_value_t* yv = lower_value(ctx, y);
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  lower_loops_t loops;
  lower_loops_over(ctx, &loops, yv->rank, yv->dims);
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL,
                   ingot_ir_store(ctx->f, by, ingot_ir_flat_index(ctx->f, by, loops.idx),
                                  ingot_ir_load(ctx->f, bx, lower_broadcast_index(ctx, bx, yv->rank, loops.idx))));
  set_workload(ctx, ingot_arena_printf(ctx->arena, "expand %s x=%s y=%s", dt(yv->dtype), lower_shape_str(ctx, x),
                                       lower_shape_str(ctx, y)));
  return INGOT_OK;
}

ingot_status_t lower_tile(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0), y = node_output(ctx, 0);
  if ((s = check_xy(ctx, x, y))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  bool ok = xv->rank == yv->rank;
  for (int32_t d = 0; ok && d < xv->rank; ++d) ok = yv->dims[d] % xv->dims[d] == 0;
  if (!ok) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "output shape is not a tiling of the input");
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  lower_loops_t loops;
  lower_loops_over(ctx, &loops, yv->rank, yv->dims);
  ingot_ir_expr_t* xi[INGOT_MAX_RANK];
  for (int32_t d = 0; d < xv->rank; ++d) {
    xi[d] = yv->dims[d] == xv->dims[d] ? loops.idx[d]
                                       : ingot_ir_binary(f, INGOT_IR_MOD, loops.idx[d], ingot_ir_int(f, xv->dims[d]));
  }
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL,
                   ingot_ir_store(f, by, ingot_ir_flat_index(f, by, loops.idx),
                                  ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi))));
  set_workload(ctx, ingot_arena_printf(ctx->arena, "tile %s x=%s y=%s", dt(yv->dtype), lower_shape_str(ctx, x),
                                       lower_shape_str(ctx, y)));
  return INGOT_OK;
}

/* ---- Range, ConstantOfShape ---- */

ingot_status_t lower_range(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t start = lower_input(ctx, 0), delta = lower_input(ctx, 2), y = node_output(ctx, 0);
  uint32_t allowed = LOWER_DT_FLOAT | LOWER_DT(INGOT_DTYPE_I64) | LOWER_DT(INGOT_DTYPE_I32);
  if ((s = lower_refuse_activation(ctx)) || (s = lower_check_value_dt(ctx, y, allowed))) return s;
  const ingot_value_t* yv = lower_value(ctx, y);
  if ((s = lower_check_value_dt(ctx, start, LOWER_DT(yv->dtype))) ||
      (s = lower_check_value_dt(ctx, delta, LOWER_DT(yv->dtype)))) {
    return s;
  }
  uint32_t bs = lower_add_input(ctx, start, "start");
  uint32_t bd = lower_add_input(ctx, delta, "delta");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  lower_loops_t loops;
  lower_loops_over(ctx, &loops, 1, yv->dims);
  ingot_ir_expr_t* i = ingot_ir_cast(f, yv->dtype, loops.idx[0]);
  ingot_ir_expr_t* v = ingot_ir_add(f, ingot_ir_load(f, bs, ingot_ir_int(f, 0)),
                                    ingot_ir_mul(f, i, ingot_ir_load(f, bd, ingot_ir_int(f, 0))));
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL, ingot_ir_store(f, by, loops.idx[0], v));
  set_workload(ctx, ingot_arena_printf(ctx->arena, "range %s n%lld", dt(yv->dtype), (long long)yv->dims[0]));
  return INGOT_OK;
}

ingot_status_t lower_constant_of_shape(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t y = node_output(ctx, 0);
  if ((s = lower_refuse_activation(ctx)) || (s = lower_check_value_dt(ctx, y, LOWER_DT_ANY))) return s;
  const ingot_value_t* yv = lower_value(ctx, y);
  ingot_ir_expr_t* v = lower_const(ctx, yv->dtype, 0.0);
  const ingot_attr_t* a = ingot_node_attr(ctx->node, "value");
  if (a) {
    double fv;
    int64_t iv;
    if (a->type != INGOT_ATTR_TENSOR || a->tensor >= ctx->graph->value_count ||
        lower_value(ctx, a->tensor)->dtype != yv->dtype) {
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'value' must be a one-element tensor");
    }
    if (lower_dtype_is_float(yv->dtype)) {
      if (!lower_weight_scalar(ctx, a->tensor, &fv)) {
        return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'value' must hold one element");
      }
      v = lower_const(ctx, yv->dtype, fv);
    } else {
      if (!lower_weight_int(ctx, a->tensor, 0, &iv)) {
        return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'value' must hold one element");
      }
      v = ingot_ir_int(ctx->f, iv);
      v->dtype = yv->dtype; /* a fresh node: the value fits its own dtype */
    }
  }
  uint32_t by = lower_add_output(ctx, y, "y");
  lower_loops_t loops;
  lower_loops_over(ctx, &loops, yv->rank, yv->dims);
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL, ingot_ir_store(ctx->f, by, ingot_ir_flat_index(ctx->f, by, loops.idx), v));
  set_workload(ctx, ingot_arena_printf(ctx->arena, "fill %s y=%s", dt(yv->dtype), lower_shape_str(ctx, y)));
  return INGOT_OK;
}

/* ---- DepthToSpace, SpaceToDepth ---- */

ingot_status_t lower_depth_to_space(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0), y = node_output(ctx, 0);
  if ((s = check_xy(ctx, x, y))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  int64_t b = ctx->params->u.block.blocksize; /* blocksize, mode: graph/params.c */
  bool crd = ctx->params->u.block.crd;
  if (xv->rank != 4 || yv->rank != 4 || b < 1 || yv->dims[1] * b * b != xv->dims[1] || yv->dims[2] != xv->dims[2] * b ||
      yv->dims[3] != xv->dims[3] * b) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "shapes do not fit blocksize %lld", (long long)b);
  }
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  lower_loops_t l;
  lower_loops_over(ctx, &l, 4, yv->dims);
  ingot_ir_expr_t* B = ingot_ir_int(f, b);
  ingot_ir_expr_t* i = ingot_ir_binary(f, INGOT_IR_MOD, l.idx[2], B);
  ingot_ir_expr_t* j = ingot_ir_binary(f, INGOT_IR_MOD, l.idx[3], B);
  ingot_ir_expr_t* ij = ingot_ir_add(f, ingot_ir_mul(f, i, B), j);
  ingot_ir_expr_t* c = crd ? ingot_ir_add(f, ingot_ir_mul(f, l.idx[1], ingot_ir_int(f, b * b)), ij)
                           : ingot_ir_add(f, ingot_ir_mul(f, ij, ingot_ir_int(f, yv->dims[1])), l.idx[1]);
  ingot_ir_expr_t* xi[4] = {l.idx[0], c, ingot_ir_binary(f, INGOT_IR_DIV, l.idx[2], B),
                            ingot_ir_binary(f, INGOT_IR_DIV, l.idx[3], B)};
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &l, NULL,
                   ingot_ir_store(f, by, ingot_ir_flat_index(f, by, l.idx),
                                  ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi))));
  set_workload(ctx, ingot_arena_printf(ctx->arena, "depth_to_space %s %s x=%s b%lld", crd ? "crd" : "dcr",
                                       dt(xv->dtype), lower_shape_str(ctx, x), (long long)b));
  return INGOT_OK;
}

ingot_status_t lower_space_to_depth(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0), y = node_output(ctx, 0);
  if ((s = check_xy(ctx, x, y))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  int64_t b = ctx->params->u.block.blocksize; /* graph/params.c */
  if (xv->rank != 4 || yv->rank != 4 || b < 1 || xv->dims[1] * b * b != yv->dims[1] || xv->dims[2] != yv->dims[2] * b ||
      xv->dims[3] != yv->dims[3] * b) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "shapes do not fit blocksize %lld", (long long)b);
  }
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  lower_loops_t l;
  lower_loops_over(ctx, &l, 4, yv->dims);
  ingot_ir_expr_t* C = ingot_ir_int(f, xv->dims[1]);
  ingot_ir_expr_t* B = ingot_ir_int(f, b);
  ingot_ir_expr_t* t = ingot_ir_binary(f, INGOT_IR_DIV, l.idx[1], C);
  ingot_ir_expr_t* c = ingot_ir_binary(f, INGOT_IR_MOD, l.idx[1], C);
  ingot_ir_expr_t* i = ingot_ir_binary(f, INGOT_IR_DIV, t, B);
  ingot_ir_expr_t* j = ingot_ir_binary(f, INGOT_IR_MOD, t, B);
  ingot_ir_expr_t* xi[4] = {l.idx[0], c, ingot_ir_add(f, ingot_ir_mul(f, l.idx[2], B), i),
                            ingot_ir_add(f, ingot_ir_mul(f, l.idx[3], B), j)};
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &l, NULL,
                   ingot_ir_store(f, by, ingot_ir_flat_index(f, by, l.idx),
                                  ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi))));
  set_workload(ctx, ingot_arena_printf(ctx->arena, "space_to_depth %s x=%s b%lld", dt(xv->dtype),
                                       lower_shape_str(ctx, x), (long long)b));
  return INGOT_OK;
}

/* ---- Trilu ---- */

ingot_status_t lower_trilu(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0), k = lower_input(ctx, 1), y = node_output(ctx, 0);
  if ((s = check_xy(ctx, x, y))) return s;
  if (k != INGOT_NO_VALUE && (s = lower_check_value_dt(ctx, k, LOWER_DT(INGOT_DTYPE_I64)))) return s;
  const ingot_value_t* yv = lower_value(ctx, y);
  if (yv->rank < 2) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "input must have rank >= 2");
  bool upper = ctx->params->u.trilu.upper; /* graph/params.c */
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t bk = k != INGOT_NO_VALUE ? lower_add_input(ctx, k, "k") : UINT32_MAX;
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  lower_loops_t l;
  lower_loops_over(ctx, &l, yv->rank, yv->dims);
  ingot_ir_expr_t* diff = ingot_ir_binary(f, INGOT_IR_SUB, l.idx[yv->rank - 1], l.idx[yv->rank - 2]);
  ingot_ir_expr_t* kv = bk != UINT32_MAX ? ingot_ir_load(f, bk, ingot_ir_int(f, 0)) : ingot_ir_int(f, 0);
  ingot_ir_expr_t* keep = upper ? ingot_ir_binary(f, INGOT_IR_LE, kv, diff) : ingot_ir_binary(f, INGOT_IR_LE, diff, kv);
  ingot_ir_expr_t* flat = ingot_ir_flat_index(f, by, l.idx);
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &l, NULL,
                   ingot_ir_store(f, by, flat,
                                  ingot_ir_select(f, keep, ingot_ir_load(f, bx, flat), lower_const(ctx, yv->dtype, 0.0))));
  set_workload(ctx, ingot_arena_printf(ctx->arena, "trilu %s %s x=%s", upper ? "upper" : "lower", dt(yv->dtype),
                                       lower_shape_str(ctx, x)));
  return INGOT_OK;
}

/* OneHot: y[.., j (at axis), ..] = (i == j ? values[1] : values[0]) with
 * i = the index at the other coordinates (as int64, floats truncated), plus
 * depth when negative; an index outside [-depth, depth) matches no j. */
ingot_status_t lower_onehot(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t ind = lower_input(ctx, 0), vals = lower_input(ctx, 2), y = node_output(ctx, 0);
  if ((s = lower_check_value_dt(ctx, ind, LOWER_DT_NUMERIC)) || (s = lower_check_value_dt(ctx, vals, LOWER_DT_ANY)) ||
      (s = lower_check_value(ctx, y, false))) {
    return s;
  }
  const ingot_value_t* yv = lower_value(ctx, y);
  int32_t axis = ctx->params->u.axis.axis; /* graph/params.c */
  int64_t depth = yv->dims[axis];
  uint32_t bi = lower_add_input(ctx, ind, "indices");
  uint32_t bv = lower_add_input(ctx, vals, "values");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  lower_loops_t l;
  lower_loops_over(ctx, &l, yv->rank, yv->dims);
  ingot_ir_expr_t* ii[INGOT_MAX_RANK];
  for (int32_t i = 0, j = 0; i < yv->rank; ++i) {
    if (i != axis) ii[j++] = l.idx[i];
  }
  ingot_ir_expr_t* iv = ingot_ir_load(f, bi, ingot_ir_flat_index(f, bi, ii));
  iv = ingot_ir_cast(f, INGOT_DTYPE_I64, iv); /* floats truncate toward zero */
  iv = ingot_ir_select(f, ingot_ir_binary(f, INGOT_IR_LT, iv, ingot_ir_int(f, 0)), ingot_ir_add(f, iv, ingot_ir_int(f, depth)), iv);
  ingot_ir_expr_t* hit = ingot_ir_binary(f, INGOT_IR_EQ, iv, l.idx[axis]);
  ingot_ir_expr_t* v = ingot_ir_select(f, hit, ingot_ir_load(f, bv, ingot_ir_int(f, 1)), ingot_ir_load(f, bv, ingot_ir_int(f, 0)));
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &l, NULL, ingot_ir_store(f, by, ingot_ir_flat_index(f, by, l.idx), v));
  set_workload(ctx, ingot_arena_printf(ctx->arena, "onehot %s axis%d depth%lld indices=%s", dt(yv->dtype), axis,
                                       (long long)depth, lower_shape_str(ctx, ind)));
  return INGOT_OK;
}

/* EyeLike: y[i, j] = (j - i == k) ? 1 : 0 in y's dtype (attribute k, 0 by
 * default); x gives only the shape. */
ingot_status_t lower_eyelike(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t y = node_output(ctx, 0);
  if ((s = lower_check_value(ctx, y, false))) return s;
  const ingot_value_t* yv = lower_value(ctx, y);
  int64_t k = ingot_node_attr_int(ctx->node, "k", 0);
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  lower_loops_t l;
  lower_loops_over(ctx, &l, yv->rank, yv->dims);
  ingot_ir_expr_t* on = ingot_ir_binary(f, INGOT_IR_EQ, ingot_ir_binary(f, INGOT_IR_SUB, l.idx[1], l.idx[0]), ingot_ir_int(f, k));
  ingot_ir_expr_t* v = ingot_ir_select(f, on, lower_const(ctx, yv->dtype, 1.0), lower_const(ctx, yv->dtype, 0.0));
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &l, NULL, ingot_ir_store(f, by, ingot_ir_flat_index(f, by, l.idx), v));
  set_workload(ctx, ingot_arena_printf(ctx->arena, "eyelike %s %s k%lld", dt(yv->dtype), lower_shape_str(ctx, y),
                                       (long long)k));
  return INGOT_OK;
}

/* NonZero: y [r, n] int64, the coordinates of x's nonzero elements in
 * row-major order (NaN counts as nonzero), n known only at run time. One
 * OTHER stage of one iteration: count n, then walk x again and write each
 * nonzero element's coordinates at column j of y laid out dense as [r, n]
 * (row a at a * n), then the shape {r, n} (the node's second output). */
ingot_status_t lower_nonzero(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0), y = node_output(ctx, 0), shape = node_output(ctx, 1);
  if (shape == INGOT_NO_VALUE) return lower_fail(ctx, INGOT_ERROR_INTERNAL, "has no shape output (inference adds it)");
  if ((s = lower_refuse_activation(ctx)) || (s = lower_check_value_dt(ctx, x, LOWER_DT_ANY | LOWER_DT_HALF)) ||
      (s = lower_check_value_dt(ctx, y, LOWER_DT(INGOT_DTYPE_I64)))) {
    return s;
  }
  const ingot_value_t* xv = lower_value(ctx, x);
  int64_t numel = ingot_value_numel(xv);
  int32_t rank = xv->rank;
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  uint32_t bs = lower_add_output(ctx, shape, "shape");
  ingot_ir_func_t* f = ctx->f;
  uint32_t one = lower_add_var(ctx, "one", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t i = lower_add_var(ctx, "i", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t i2 = lower_add_var(ctx, "i2", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t n = lower_add_var(ctx, "n", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64);
  uint32_t j = lower_add_var(ctx, "j", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64);
  ingot_dtype_t cmp = xv->dtype == INGOT_DTYPE_F16 || xv->dtype == INGOT_DTYPE_BF16 ? INGOT_DTYPE_F32 : xv->dtype;
#define NONZERO_AT(var)                                                                                  \
  ingot_ir_binary(f, INGOT_IR_NE, ingot_ir_cast(f, cmp, ingot_ir_load(f, bx, ingot_ir_var(f, var))), \
                  lower_const(ctx, cmp, 0.0))
  ingot_ir_expr_t* is1 = NONZERO_AT(i);
  ingot_ir_expr_t* is2 = NONZERO_AT(i2);
#undef NONZERO_AT
  /* The coordinates of element i2, one store per axis. */
  ingot_ir_stmt_t* write[INGOT_MAX_RANK + 1];
  int64_t stride = 1;
  for (int32_t a = rank - 1; a >= 0; --a) {
    ingot_ir_expr_t* c = ingot_ir_var(f, i2);
    if (stride > 1) c = ingot_ir_binary(f, INGOT_IR_DIV, c, ingot_ir_int(f, stride));
    if (a > 0) c = ingot_ir_binary(f, INGOT_IR_MOD, c, ingot_ir_int(f, xv->dims[a]));
    ingot_ir_expr_t* at = ingot_ir_add(f, ingot_ir_mul(f, ingot_ir_int(f, a), ingot_ir_var(f, n)), ingot_ir_var(f, j));
    write[a] = ingot_ir_store(f, by, at, c);
    stride *= xv->dims[a];
  }
  write[rank] = ingot_ir_assign(f, j, ingot_ir_add(f, ingot_ir_var(f, j), ingot_ir_int(f, 1)));
  ingot_ir_expr_t* step = ingot_ir_select(f, is1, ingot_ir_int(f, 1), ingot_ir_int(f, 0));
  ingot_ir_stmt_t* body[6] = {
      ingot_ir_local(f, n, ingot_ir_int(f, 0)),
      ingot_ir_for(f, i, numel, ingot_ir_assign(f, n, ingot_ir_add(f, ingot_ir_var(f, n), step))),
      ingot_ir_local(f, j, ingot_ir_int(f, 0)),
      ingot_ir_for(f, i2, numel, ingot_ir_if(f, is2, ingot_ir_block(f, write, (uint32_t)rank + 1))),
      ingot_ir_store(f, bs, ingot_ir_int(f, 0), ingot_ir_int(f, rank)),
      ingot_ir_store(f, bs, ingot_ir_int(f, 1), ingot_ir_var(f, n)),
  };
  lower_emit_other(ctx, ingot_ir_for(f, one, 1, ingot_ir_block(f, body, 6)));
  set_workload(ctx, ingot_arena_printf(ctx->arena, "nonzero %s %s", dt(xv->dtype), lower_shape_str(ctx, x)));
  return INGOT_OK;
}

/* Unique (graph/infer_data.c, infer_unique). The items are x's elements,
 * or its slices along the axis: element (o, q) of item i at
 * (o * N + i) * Q + q, N items, O and Q the extents before and after the
 * axis (O = Q = 1 without one). Items compare in x's dtype (float16 and
 * bfloat16 as float32, bool as uint8): -0 equals 0 (Y holds the first
 * occurrence's value, as ONNX Runtime), and NaN equals NaN and sorts after
 * every number, as numpy.unique (ONNX's reference; ONNX Runtime 1.32
 * orders NaN inconsistently: where it lands depends on the other values).
 * Slices order lexicographically, their elements in (o, q) order.
 *
 * No sort: compare loops, O(N^2 * O * Q) compares, in one OTHER stage of
 * one iteration (so nothing runs it in parallel), in four passes:
 *   1. inverse[i] = the first item equal to item i (<= i);
 *   2. for each item with inverse[i] == i (a first occurrence), its rank
 *      r: sorted, the number of first occurrences whose items are less
 *      than it; else the number met before it. indices[r] = i, and
 *      inverse[i] = -1 - r marks it done (so "a first occurrence" reads
 *      inverse[j] == j or inverse[j] < 0); n counts them;
 *   3. from the last item down, inverse[i] = the r of its first occurrence
 *      f <= i, which still holds -1 - r; counts[r] += 1;
 *   4. Y's slices copied from x at indices[k], dense in Y's run-time shape
 *      (n at the axis); the shapes of Y, indices and counts.
 * The node has all seven outputs (inference adds those the model lacks). */
typedef struct unique_lay_t {
  int64_t outer, items, inner; /* O, N, Q */
  ingot_dtype_t cmp;           /* the dtype items compare in */
  uint32_t x;                  /* func buffer */
} unique_lay_t;

/* Element (o, q) of item `item` of a tensor laid out [O, items, Q]. */
static ingot_ir_expr_t* unique_at(lower_ctx_t* ctx, const unique_lay_t* L, ingot_ir_expr_t* o, ingot_ir_expr_t* q,
                                  ingot_ir_expr_t* item, ingot_ir_expr_t* items) {
  ingot_ir_func_t* f = ctx->f;
  ingot_ir_expr_t* at = item;
  if (L->outer > 1) at = ingot_ir_add(f, ingot_ir_mul(f, o, items), at);
  if (L->inner > 1) at = ingot_ir_add(f, ingot_ir_mul(f, at, ingot_ir_int(f, L->inner)), q);
  return at;
}

/* New loop variables over a slice's (o, q) and their expressions (the
 * constant 0 for an extent of 1, which gets no loop). */
typedef struct unique_slice_t {
  uint32_t o, q;
  ingot_ir_expr_t *oe, *qe;
} unique_slice_t;

static unique_slice_t unique_slice(lower_ctx_t* ctx, const unique_lay_t* L, const char* tag) {
  unique_slice_t sl = {UINT32_MAX, UINT32_MAX, ingot_ir_int(ctx->f, 0), ingot_ir_int(ctx->f, 0)};
  if (L->outer > 1) {
    sl.o = lower_add_var(ctx, ingot_arena_printf(ctx->arena, "%so", tag), INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    sl.oe = ingot_ir_var(ctx->f, sl.o);
  }
  if (L->inner > 1) {
    sl.q = lower_add_var(ctx, ingot_arena_printf(ctx->arena, "%sq", tag), INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    sl.qe = ingot_ir_var(ctx->f, sl.q);
  }
  return sl;
}

static ingot_ir_stmt_t* unique_over_slice(lower_ctx_t* ctx, const unique_lay_t* L, const unique_slice_t* sl,
                                          ingot_ir_stmt_t* body) {
  if (L->inner > 1) body = ingot_ir_for(ctx->f, sl->q, L->inner, body);
  if (L->outer > 1) body = ingot_ir_for(ctx->f, sl->o, L->outer, body);
  return body;
}

/* Element (o, q) of item `item` of x, in the dtype items compare in. */
static ingot_ir_expr_t* unique_load(lower_ctx_t* ctx, const unique_lay_t* L, const unique_slice_t* sl,
                                    ingot_ir_expr_t* item) {
  ingot_ir_func_t* f = ctx->f;
  ingot_ir_expr_t* v = ingot_ir_load(f, L->x, unique_at(ctx, L, sl->oe, sl->qe, item, ingot_ir_int(f, L->items)));
  return ingot_ir_cast(f, L->cmp, v);
}

/* a equals b: a == b, or both NaN. */
static ingot_ir_expr_t* unique_eq(lower_ctx_t* ctx, const unique_lay_t* L, ingot_ir_expr_t* a, ingot_ir_expr_t* b) {
  ingot_ir_func_t* f = ctx->f;
  ingot_ir_expr_t* eq = ingot_ir_binary(f, INGOT_IR_EQ, a, b);
  if (!lower_dtype_is_float(L->cmp)) return eq;
  ingot_ir_expr_t* nans = ingot_ir_binary(f, INGOT_IR_AND, ingot_ir_binary(f, INGOT_IR_NE, a, a),
                                          ingot_ir_binary(f, INGOT_IR_NE, b, b));
  return ingot_ir_binary(f, INGOT_IR_OR, eq, nans);
}

/* a is less than b: a < b, or b alone is NaN. */
static ingot_ir_expr_t* unique_lt(lower_ctx_t* ctx, const unique_lay_t* L, ingot_ir_expr_t* a, ingot_ir_expr_t* b) {
  ingot_ir_func_t* f = ctx->f;
  ingot_ir_expr_t* lt = ingot_ir_binary(f, INGOT_IR_LT, a, b);
  if (!lower_dtype_is_float(L->cmp)) return lt;
  ingot_ir_expr_t* nan_b = ingot_ir_binary(f, INGOT_IR_AND, ingot_ir_binary(f, INGOT_IR_EQ, a, a),
                                           ingot_ir_binary(f, INGOT_IR_NE, b, b));
  return ingot_ir_binary(f, INGOT_IR_OR, lt, nan_b);
}

ingot_status_t lower_unique(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0);
  uint32_t out[7];
  for (uint32_t k = 0; k < 7; ++k) {
    out[k] = node_output(ctx, k);
    if (out[k] == INGOT_NO_VALUE) return lower_fail(ctx, INGOT_ERROR_INTERNAL, "lacks output %u (inference adds it)", k);
  }
  if ((s = lower_refuse_activation(ctx)) || (s = lower_check_value_dt(ctx, x, LOWER_DT_ANY | LOWER_DT_HALF))) return s;
  for (uint32_t k = 0; k < 7; ++k) {
    uint32_t allowed = k == 0 ? LOWER_DT(lower_value(ctx, x)->dtype) : LOWER_DT(INGOT_DTYPE_I64);
    if ((s = lower_check_value_dt(ctx, out[k], allowed))) return s;
  }
  const ingot_value_t* xv = lower_value(ctx, x);
  int32_t axis = ctx->params->u.unique.axis; /* normalized, or -1 (graph/params.c) */
  bool sorted = ctx->params->u.unique.sorted;
  unique_lay_t L = {1, ingot_value_numel(xv), 1, xv->dtype, 0};
  if (axis >= 0) {
    L.items = xv->dims[axis];
    for (int32_t d = 0; d < axis; ++d) L.outer *= xv->dims[d];
    for (int32_t d = axis + 1; d < xv->rank; ++d) L.inner *= xv->dims[d];
  }
  if (xv->dtype == INGOT_DTYPE_F16 || xv->dtype == INGOT_DTYPE_BF16) L.cmp = INGOT_DTYPE_F32;
  if (xv->dtype == INGOT_DTYPE_BOOL) L.cmp = INGOT_DTYPE_U8;
  int64_t N = L.items;

  L.x = lower_add_input(ctx, x, "x");
  static const char* const kNames[7] = {"y", "indices", "inverse", "counts", "y_shape", "indices_shape", "counts_shape"};
  uint32_t b[7];
  for (uint32_t k = 0; k < 7; ++k) b[k] = lower_add_output(ctx, out[k], kNames[k]);
  uint32_t bind = b[1], binv = b[2], bcount = b[3];
  ingot_ir_func_t* f = ctx->f;
#define V(var) ingot_ir_var(f, var)
#define I(v) ingot_ir_int(f, v)
#define BIN(op, a, c) ingot_ir_binary(f, INGOT_IR_##op, a, c)
  uint32_t one = lower_add_var(ctx, "one", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t n = lower_add_var(ctx, "n", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64);
  ingot_ir_stmt_t* body[16];
  uint32_t nb = 0;
  body[nb++] = ingot_ir_local(f, n, I(0));

  /* 1. inverse[i] = the first j equal to i: j runs up, compared while j < first. */
  {
    uint32_t i = lower_add_var(ctx, "i", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    uint32_t j = lower_add_var(ctx, "j", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    uint32_t first = lower_add_var(ctx, "first", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64);
    uint32_t same = lower_add_var(ctx, "same", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_BOOL);
    unique_slice_t sl = unique_slice(ctx, &L, "e");
    ingot_ir_expr_t* eq = unique_eq(ctx, &L, unique_load(ctx, &L, &sl, V(j)), unique_load(ctx, &L, &sl, V(i)));
    ingot_ir_stmt_t* cmp[3] = {
        ingot_ir_local(f, same, lower_const(ctx, INGOT_DTYPE_BOOL, 1)),
        unique_over_slice(ctx, &L, &sl, ingot_ir_assign(f, same, BIN(AND, V(same), eq))),
        ingot_ir_if(f, V(same), ingot_ir_assign(f, first, V(j))),
    };
    ingot_ir_stmt_t* per_i[3] = {
        ingot_ir_local(f, first, V(i)),
        ingot_ir_for(f, j, N, ingot_ir_if(f, BIN(LT, V(j), V(first)), ingot_ir_block(f, cmp, 3))),
        ingot_ir_store(f, binv, V(i), V(first)),
    };
    body[nb++] = ingot_ir_for(f, i, N, ingot_ir_block(f, per_i, 3));
  }

  /* 2. The rank r of each first occurrence: indices[r] = i, inverse[i] = -1 - r. */
  {
    uint32_t i = lower_add_var(ctx, "i2", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    uint32_t r = lower_add_var(ctx, "r", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64);
    ingot_ir_stmt_t* found[5];
    uint32_t nf = 0;
    if (!sorted) {
      found[nf++] = ingot_ir_local(f, r, V(n));
    } else {
      /* r = the number of first occurrences j less than i, lexicographically:
       * `less` is settled at the first element where they differ. */
      uint32_t j = lower_add_var(ctx, "j2", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
      uint32_t less = lower_add_var(ctx, "less", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_BOOL);
      uint32_t settled = lower_add_var(ctx, "settled", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_BOOL);
      unique_slice_t sl = unique_slice(ctx, &L, "c");
      ingot_ir_expr_t* a = unique_load(ctx, &L, &sl, V(j));
      ingot_ir_expr_t* c = unique_load(ctx, &L, &sl, V(i));
      ingot_ir_stmt_t* step[2] = {
          ingot_ir_assign(f, less, ingot_ir_select(f, V(settled), V(less), unique_lt(ctx, &L, a, c))),
          ingot_ir_assign(f, settled, BIN(OR, V(settled), ingot_ir_unary(f, INGOT_IR_NOT, unique_eq(ctx, &L, a, c)))),
      };
      ingot_ir_expr_t* fj = ingot_ir_load(f, binv, V(j));
      ingot_ir_stmt_t* cmp[4] = {
          ingot_ir_local(f, less, lower_const(ctx, INGOT_DTYPE_BOOL, 0)),
          ingot_ir_local(f, settled, lower_const(ctx, INGOT_DTYPE_BOOL, 0)),
          unique_over_slice(ctx, &L, &sl, ingot_ir_block(f, step, 2)),
          ingot_ir_if(f, V(less), ingot_ir_assign(f, r, ingot_ir_add(f, V(r), I(1)))),
      };
      found[nf++] = ingot_ir_local(f, r, I(0));
      found[nf++] = ingot_ir_for(f, j, N, ingot_ir_if(f, BIN(OR, BIN(EQ, fj, V(j)), BIN(LT, fj, I(0))),
                                                      ingot_ir_block(f, cmp, 4)));
    }
    found[nf++] = ingot_ir_store(f, bind, V(r), V(i));
    found[nf++] = ingot_ir_store(f, binv, V(i), BIN(SUB, I(-1), V(r)));
    found[nf++] = ingot_ir_assign(f, n, ingot_ir_add(f, V(n), I(1)));
    body[nb++] = ingot_ir_for(f, i, N, ingot_ir_if(f, BIN(EQ, ingot_ir_load(f, binv, V(i)), V(i)),
                                                   ingot_ir_block(f, found, nf)));
  }

  /* 3. inverse[i] = the rank of its first occurrence, from the last item
   * down (the first occurrence f <= i still holds -1 - r); counts. */
  {
    uint32_t t = lower_add_var(ctx, "t", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    uint32_t k = lower_add_var(ctx, "k", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    uint32_t fi = lower_add_var(ctx, "fi", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64);
    uint32_t r = lower_add_var(ctx, "r3", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64);
    ingot_ir_expr_t* i = BIN(SUB, I(N - 1), V(t));
    body[nb++] = ingot_ir_for(f, k, N, ingot_ir_store(f, bcount, V(k), I(0)));
    ingot_ir_stmt_t* per[5] = {
        ingot_ir_local(f, fi, ingot_ir_load(f, binv, i)),
        ingot_ir_local(f, r, BIN(SUB, I(-1), V(fi))),
        ingot_ir_if(f, BIN(LE, I(0), V(fi)), ingot_ir_assign(f, r, BIN(SUB, I(-1), ingot_ir_load(f, binv, V(fi))))),
        ingot_ir_store(f, binv, i, V(r)),
        ingot_ir_store(f, bcount, V(r), ingot_ir_add(f, ingot_ir_load(f, bcount, V(r)), I(1))),
    };
    body[nb++] = ingot_ir_for(f, t, N, ingot_ir_block(f, per, 5));
  }

  /* 4. Y, dense in its run-time shape [O, n, Q]; the shapes. */
  {
    uint32_t k = lower_add_var(ctx, "k4", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    unique_slice_t sl = unique_slice(ctx, &L, "y");
    ingot_ir_expr_t* from = unique_at(ctx, &L, sl.oe, sl.qe, ingot_ir_load(f, bind, V(k)), I(N));
    ingot_ir_stmt_t* copy = ingot_ir_store(f, b[0], unique_at(ctx, &L, sl.oe, sl.qe, V(k), V(n)),
                                           ingot_ir_load(f, L.x, from));
    body[nb++] = ingot_ir_for(f, k, N, ingot_ir_if(f, BIN(LT, V(k), V(n)), unique_over_slice(ctx, &L, &sl, copy)));
    int32_t rank = axis < 0 ? 1 : xv->rank;
    ingot_ir_stmt_t* dims[INGOT_MAX_RANK];
    for (int32_t d = 0; d < rank; ++d) {
      dims[d] = ingot_ir_store(f, b[4], I(d), axis < 0 || d == axis ? V(n) : I(xv->dims[d]));
    }
    body[nb++] = ingot_ir_block(f, dims, (uint32_t)rank);
  }
  body[nb++] = ingot_ir_store(f, b[5], I(0), V(n));
  body[nb++] = ingot_ir_store(f, b[6], I(0), V(n));
#undef V
#undef I
#undef BIN
  lower_emit_other(ctx, ingot_ir_for(f, one, 1, ingot_ir_block(f, body, nb)));
  set_workload(ctx, ingot_arena_printf(ctx->arena, "unique %s %s axis=%d sorted=%d", dt(xv->dtype),
                                       lower_shape_str(ctx, x), axis, sorted ? 1 : 0));
  return INGOT_OK;
}

/* OptionalHasElement: whether the input is there, known at compile time
 * (graph/infer_data.c, infer_optional). */
ingot_status_t lower_optional_has_element(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t y = node_output(ctx, 0);
  if ((s = lower_check_value(ctx, y, false))) return s;
  bool present = lower_input(ctx, 0) != INGOT_NO_VALUE;
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  lower_loops_t l;
  lower_loops_over(ctx, &l, 0, NULL);
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &l, NULL,
                   ingot_ir_store(f, by, ingot_ir_int(f, 0), lower_const(ctx, INGOT_DTYPE_BOOL, present ? 1.0 : 0.0)));
  set_workload(ctx, ingot_arena_printf(ctx->arena, "optional_has_element %d", present ? 1 : 0));
  return INGOT_OK;
}

/* CenterCropPad: along each axis whose size changes, the output window is
 * centred on the input: y[i] = x[i + o] where 0 <= i + o < dim, else 0,
 * with o = (dim - size) / 2 when cropping and -((size - dim) / 2) when
 * padding (the smaller half before, as ONNX's reference has it). Only the
 * shapes are read: the sizes came from the shape input at inference. */
ingot_status_t lower_centercroppad(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0), y = node_output(ctx, 0);
  if ((s = check_xy(ctx, x, y))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  if (yv->rank != xv->rank) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "output rank differs from input rank");
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  lower_loops_t l;
  lower_loops_over(ctx, &l, yv->rank, yv->dims);
  ingot_ir_expr_t* xi[INGOT_MAX_RANK];
  ingot_ir_expr_t* inside = NULL;
  for (int32_t d = 0; d < yv->rank; ++d) {
    int64_t dim = xv->dims[d], size = yv->dims[d];
    int64_t o = size <= dim ? (dim - size) / 2 : -((size - dim) / 2);
    ingot_ir_expr_t* src = o ? ingot_ir_add(f, l.idx[d], ingot_ir_int(f, o)) : l.idx[d];
    if (size > dim) {
      inside = lower_and(ctx, inside, ingot_ir_binary(f, INGOT_IR_LE, ingot_ir_int(f, 0), src));
      inside = lower_and(ctx, inside, ingot_ir_binary(f, INGOT_IR_LT, src, ingot_ir_int(f, dim)));
      src = ingot_ir_binary(f, INGOT_IR_MIN, ingot_ir_binary(f, INGOT_IR_MAX, src, ingot_ir_int(f, 0)),
                            ingot_ir_int(f, dim > 0 ? dim - 1 : 0));
    }
    xi[d] = src;
  }
  ingot_ir_expr_t* v = ingot_value_numel(xv) > 0 ? ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi)) : NULL;
  if (!v) v = lower_const(ctx, yv->dtype, 0.0);
  else if (inside) v = ingot_ir_select(f, inside, v, lower_const(ctx, yv->dtype, 0.0));
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &l, NULL, ingot_ir_store(f, by, ingot_ir_flat_index(f, by, l.idx), v));
  ingot_strbuf_t sb = {0};
  ingot_strbuf_appendf(&sb, "centercroppad %s x=%s y=%s", dt(xv->dtype), lower_shape_str(ctx, x), lower_shape_str(ctx, y));
  set_workload(ctx, sb.data);
  ingot_strbuf_free(&sb);
  return INGOT_OK;
}

/* ---- ReverseSequence, TensorScatter (lengths and write positions read at
 * run time) ---- */

/* min(max(e, lo), hi) of int64 expressions. */
static ingot_ir_expr_t* clamp_int(ingot_ir_func_t* f, ingot_ir_expr_t* e, int64_t lo, int64_t hi) {
  ingot_ir_expr_t* low = ingot_ir_binary(f, INGOT_IR_MAX, e, ingot_ir_int(f, lo));
  return ingot_ir_binary(f, INGOT_IR_MIN, low, ingot_ir_int(f, hi));
}

/* ReverseSequence, one PURE stage over y, t the time index, b the batch one:
 *   n = clamp(sequence_lens[b], 0, T)
 *   y[.., t, .., b, ..] = x[.., t < n ? n - 1 - t : t, .., b, ..]
 * A length outside [0, T] is bad input (ONNX Runtime fails on it); as with
 * Gather's indices the clamp keeps every load inside x instead: a length
 * above T reverses all T steps, a negative one none. */
ingot_status_t lower_reverse_sequence(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0), lens = lower_input(ctx, 1), y = node_output(ctx, 0);
  if ((s = check_xy(ctx, x, y)) || (s = check_indices(ctx, lens))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* lv = lower_value(ctx, lens);
  const ingot_value_t* yv = lower_value(ctx, y);
  int32_t ba = ctx->params->u.reverse_sequence.batch_axis; /* graph/params.c */
  int32_t ta = ctx->params->u.reverse_sequence.time_axis;
  if (xv->rank < 2 || yv->rank != xv->rank || lv->rank != 1 || lv->dims[0] != xv->dims[ba]) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "sequence_lens or the output do not fit the input");
  }
  int64_t time = xv->dims[ta];
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t bl = lower_add_input(ctx, lens, "sequence_lens");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  lower_loops_t l;
  lower_loops_over(ctx, &l, yv->rank, yv->dims);
  ingot_ir_expr_t* n = clamp_int(f, ingot_ir_cast(f, INGOT_DTYPE_I64, ingot_ir_load(f, bl, l.idx[ba])), 0, time);
  ingot_ir_expr_t* t = l.idx[ta];
  ingot_ir_expr_t* back = ingot_ir_binary(f, INGOT_IR_SUB, ingot_ir_binary(f, INGOT_IR_SUB, n, ingot_ir_int(f, 1)), t);
  ingot_ir_expr_t* xi[INGOT_MAX_RANK];
  for (int32_t d = 0; d < xv->rank; ++d) xi[d] = l.idx[d];
  xi[ta] = ingot_ir_select(f, ingot_ir_binary(f, INGOT_IR_LT, t, n), back, t);
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &l, NULL,
                   ingot_ir_store(f, by, ingot_ir_flat_index(f, by, l.idx),
                                  ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi))));
  set_workload(ctx, ingot_arena_printf(ctx->arena, "reverse_sequence %s x=%s batch%d time%d", dt(xv->dtype),
                                       lower_shape_str(ctx, x), (int)ba, (int)ta));
  return INGOT_OK;
}

/* TensorScatter, one PURE stage over y (as a gather, not a copy and a
 * scatter: each cache position takes at most one update row, as the
 * update's sequence length S is at most the cache's M), s the sequence index,
 * w = write_indices[batch] (0 without the input):
 *   linear:   j = s - clamp(w, 0, M - S), written when 0 <= j < S
 *   circular: j = (s - w mod M) mod M (floor modulo), written when j < S
 *   y[.., s, ..] = written ? update[.., j, ..] : past_cache[.., s, ..]
 * A linear write index outside [0, M - S] is bad input (the spec requires
 * w + S <= M; ONNX's reference raises past the end and wraps below 0); the
 * clamp keeps every update inside the cache, at the nearest valid position,
 * as Gather's clamp does for its indices. An empty update is refused
 * (check_xy takes no empty tensor). */
ingot_status_t lower_tensor_scatter(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0), upd = lower_input(ctx, 1), w = lower_input(ctx, 2), y = node_output(ctx, 0);
  if ((s = check_xy(ctx, x, y)) || (s = check_xy(ctx, upd, y))) return s;
  if (w != INGOT_NO_VALUE && (s = check_indices(ctx, w))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* uv = lower_value(ctx, upd);
  const ingot_value_t* yv = lower_value(ctx, y);
  int32_t axis = ctx->params->u.tensor_scatter.axis; /* graph/params.c */
  bool circular = ctx->params->u.tensor_scatter.circular;
  if (axis < 1 || axis >= xv->rank || uv->rank != xv->rank || yv->rank != xv->rank ||
      uv->dims[axis] > xv->dims[axis] ||
      (w != INGOT_NO_VALUE && (lower_value(ctx, w)->rank != 1 || lower_value(ctx, w)->dims[0] != xv->dims[0]))) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "update or write_indices do not fit past_cache");
  }
  int64_t m = xv->dims[axis], n = uv->dims[axis];
  uint32_t bx = lower_add_input(ctx, x, "past_cache");
  uint32_t bu = lower_add_input(ctx, upd, "update");
  uint32_t bw = w != INGOT_NO_VALUE ? lower_add_input(ctx, w, "write_indices") : UINT32_MAX;
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  lower_loops_t l;
  lower_loops_over(ctx, &l, yv->rank, yv->dims);
  ingot_ir_expr_t* at = ingot_ir_int(f, 0);
  if (bw != UINT32_MAX) at = ingot_ir_cast(f, INGOT_DTYPE_I64, ingot_ir_load(f, bw, l.idx[0]));
  ingot_ir_expr_t* sq = l.idx[axis];
  ingot_ir_expr_t *j, *written;
  if (circular) {
    /* s - (w mod M) lies in (-M, M): + M makes it non-negative */
    ingot_ir_expr_t* start = ingot_ir_binary(f, INGOT_IR_MOD, at, ingot_ir_int(f, m));
    j = ingot_ir_binary(f, INGOT_IR_MOD, ingot_ir_add(f, ingot_ir_binary(f, INGOT_IR_SUB, sq, start), ingot_ir_int(f, m)),
                        ingot_ir_int(f, m));
    written = ingot_ir_binary(f, INGOT_IR_LT, j, ingot_ir_int(f, n));
  } else {
    j = ingot_ir_binary(f, INGOT_IR_SUB, sq, clamp_int(f, at, 0, m - n));
    written = lower_and(ctx, ingot_ir_binary(f, INGOT_IR_LE, ingot_ir_int(f, 0), j),
                        ingot_ir_binary(f, INGOT_IR_LT, j, ingot_ir_int(f, n)));
  }
  ingot_ir_expr_t* ui[INGOT_MAX_RANK];
  for (int32_t d = 0; d < xv->rank; ++d) ui[d] = l.idx[d];
  ui[axis] = clamp_int(f, j, 0, n - 1); /* both sides of the select are loaded */
  ingot_ir_expr_t* flat = ingot_ir_flat_index(f, by, l.idx);
  ingot_ir_expr_t* v = ingot_ir_select(f, written, ingot_ir_load(f, bu, ingot_ir_flat_index(f, bu, ui)),
                                       ingot_ir_load(f, bx, flat));
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &l, NULL, ingot_ir_store(f, by, flat, v));
  set_workload(ctx, ingot_arena_printf(ctx->arena, "tensor_scatter %s x=%s u=%s axis%d %s%s", dt(xv->dtype),
                                       lower_shape_str(ctx, x), lower_shape_str(ctx, upd), (int)axis,
                                       circular ? "circular" : "linear", bw != UINT32_MAX ? " w" : ""));
  return INGOT_OK;
}

/* HannWindow, HammingWindow, BlackmanWindow: y[n] for n in [0, size), with
 * N = size (periodic) or size - 1 (symmetric) and angles n * k pi / N:
 *   Hann      sin(n pi / N)^2
 *   Hamming   25/46 - (1 - 25/46) cos(n 2pi / N)
 *   Blackman  -0.5 cos(n 2pi / N) + 0.08 cos(n 4pi / N) + 0.42
 * in the order ONNX's reference evaluates them. Computed in the output
 * dtype for float32 and float64; in float32 for float16 and bfloat16,
 * rounded once at the store (as the graph computes half types,
 * graph/passes_dtype.c); in float64 for an integer output, truncated toward
 * zero at the store (numpy's astype, which the reference ends with). A
 * symmetric window of size 1 divides 0 by 0: NaN, as the reference's (an
 * integer output gets what the target's conversion makes of NaN, as Cast). */
/* A window's angle n * k / N (k a multiple of pi), in dtype t, multiplied
 * before it is divided, as the reference computes it. */
static ingot_ir_expr_t* window_angle(lower_ctx_t* ctx, ingot_dtype_t t, ingot_ir_expr_t* n, double k, double big_n) {
  ingot_ir_func_t* f = ctx->f;
  return ingot_ir_binary(f, INGOT_IR_DIV, ingot_ir_mul(f, n, lower_const(ctx, t, k)), lower_const(ctx, t, big_n));
}

ingot_status_t lower_signal_window(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t y = node_output(ctx, 0);
  if ((s = lower_refuse_activation(ctx)) || (s = lower_check_value_dt(ctx, y, LOWER_DT_NUMERIC | LOWER_DT_HALF)))
    return s;
  const ingot_value_t* yv = lower_value(ctx, y);
  bool periodic = ctx->params->u.signal_window.periodic; /* graph/params.c */
  ingot_dtype_t t = yv->dtype == INGOT_DTYPE_F64 || lower_dtype_is_int(yv->dtype) ? INGOT_DTYPE_F64 : INGOT_DTYPE_F32;
  double big_n = (double)(periodic ? yv->dims[0] : yv->dims[0] - 1);
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  lower_loops_t l;
  lower_loops_over(ctx, &l, 1, yv->dims);
  ingot_ir_expr_t* n = ingot_ir_cast(f, t, l.idx[0]);
  const double pi = 3.14159265358979323846;
  ingot_ir_expr_t* v;
  switch (ctx->node->op) {
    case INGOT_OP_HANNWINDOW: {
      ingot_ir_expr_t* sin_a = ingot_ir_unary(f, INGOT_IR_SIN, window_angle(ctx, t, n, pi, big_n));
      v = ingot_ir_mul(f, sin_a, sin_a);
      break;
    }
    case INGOT_OP_HAMMINGWINDOW: {
      const double alpha = 25.0 / 46.0, beta = 1.0 - alpha;
      ingot_ir_expr_t* a = window_angle(ctx, t, n, 2.0 * pi, big_n);
      v = ingot_ir_binary(f, INGOT_IR_SUB, lower_const(ctx, t, alpha),
                          ingot_ir_mul(f, ingot_ir_unary(f, INGOT_IR_COS, a), lower_const(ctx, t, beta)));
      break;
    }
    case INGOT_OP_BLACKMANWINDOW: {
      ingot_ir_expr_t* a2 = window_angle(ctx, t, n, 2.0 * pi, big_n);
      ingot_ir_expr_t* a4 = window_angle(ctx, t, n, 4.0 * pi, big_n);
      v = ingot_ir_mul(f, ingot_ir_unary(f, INGOT_IR_COS, a2), lower_const(ctx, t, -0.5));
      v = ingot_ir_add(f, v, ingot_ir_mul(f, ingot_ir_unary(f, INGOT_IR_COS, a4), lower_const(ctx, t, 0.08)));
      v = ingot_ir_add(f, v, lower_const(ctx, t, 0.42));
      break;
    }
    default:
      return lower_fail(ctx, INGOT_ERROR_INTERNAL, "not a window function");
  }
  if (yv->dtype != t) v = ingot_ir_cast(f, yv->dtype, v); /* float -> int truncates toward zero */
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &l, NULL, ingot_ir_store(f, by, l.idx[0], v));
  set_workload(ctx, ingot_arena_printf(ctx->arena, "%s %s n%lld %s", lower_op_lower(ctx), dt(yv->dtype),
                                       (long long)yv->dims[0], periodic ? "periodic" : "symmetric"));
  return INGOT_OK;
}

/* Corner `i + off` of MelWeightMatrix's triangle for mel bin i (an I64
 * loop index): the compile-time corners as a chain of selects over i. */
static ingot_ir_expr_t* mel_corner(lower_ctx_t* ctx, const int64_t* bins, int64_t mels, ingot_ir_expr_t* i, int64_t off) {
  ingot_ir_func_t* f = ctx->f;
  ingot_ir_expr_t* v = ingot_ir_int(f, bins[mels - 1 + off]);
  for (int64_t m = mels - 2; m >= 0; --m)
    v = ingot_ir_select(f, ingot_ir_binary(f, INGOT_IR_EQ, i, ingot_ir_int(f, m)), ingot_ir_int(f, bins[m + off]), v);
  return v;
}

/* MelWeightMatrix: y[j, i] for spectrogram bin j and mel bin i, from the
 * corners lo, mid, hi = bins[i], bins[i + 1], bins[i + 2] that
 * ingot_graph_mel_bin finds at compile time (every input is a constant):
 *   (hi - j) / (hi - mid)       where mid <= j < hi          (falling edge)
 *   1 at j = mid, else 0        where lo = mid
 *   (j - lo) / (mid - lo)       where lo <= j <= mid         (rising edge)
 *   0                           elsewhere
 * which is what ONNX's reference leaves after writing the rising edge and
 * then the falling one (they meet at j = mid with 1). Computed in float64
 * and cast once to output_datatype (half types through float32, as the
 * window functions). */
ingot_status_t lower_mel_weight_matrix(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t y = node_output(ctx, 0);
  if ((s = lower_refuse_activation(ctx)) || (s = lower_check_value_dt(ctx, y, LOWER_DT_NUMERIC | LOWER_DT_HALF)))
    return s;
  double in[5];
  for (uint32_t k = 0; k < 5; ++k) {
    if (!lower_weight_scalar(ctx, lower_input(ctx, k), &in[k]))
      return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "input %u must be known at compile time", k);
  }
  const ingot_value_t* yv = lower_value(ctx, y);
  int64_t spectrum = yv->dims[0], mels = yv->dims[1];
  bool f32 = lower_value(ctx, lower_input(ctx, 3))->dtype == INGOT_DTYPE_F32;
  int64_t* bins = ingot_arena_alloc(ctx->arena, sizeof(int64_t) * (size_t)(mels + 2));
  if (!bins) return lower_fail(ctx, INGOT_ERROR_OUT_OF_MEMORY, "out of memory");
  for (int64_t i = 0; i < mels + 2; ++i)
    bins[i] = ingot_graph_mel_bin((int64_t)in[1], (int64_t)in[2], in[3], in[4], f32, mels + 2, i);
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  lower_loops_t l;
  lower_loops_over(ctx, &l, 2, yv->dims);
  ingot_ir_expr_t* j = l.idx[0];
  ingot_ir_expr_t* lo = mel_corner(ctx, bins, mels, l.idx[1], 0);
  ingot_ir_expr_t* mid = mel_corner(ctx, bins, mels, l.idx[1], 1);
  ingot_ir_expr_t* hi = mel_corner(ctx, bins, mels, l.idx[1], 2);
  const ingot_dtype_t d = INGOT_DTYPE_F64;
  ingot_ir_expr_t* zero = lower_const(ctx, d, 0.0);
  ingot_ir_expr_t* fall = ingot_ir_binary(f, INGOT_IR_DIV, ingot_ir_cast(f, d, ingot_ir_binary(f, INGOT_IR_SUB, hi, j)),
                                          ingot_ir_cast(f, d, ingot_ir_binary(f, INGOT_IR_SUB, hi, mid)));
  ingot_ir_expr_t* rise = ingot_ir_binary(f, INGOT_IR_DIV, ingot_ir_cast(f, d, ingot_ir_binary(f, INGOT_IR_SUB, j, lo)),
                                          ingot_ir_cast(f, d, ingot_ir_binary(f, INGOT_IR_SUB, mid, lo)));
  ingot_ir_expr_t* in_fall = lower_and(ctx, ingot_ir_binary(f, INGOT_IR_LE, mid, j), ingot_ir_binary(f, INGOT_IR_LT, j, hi));
  ingot_ir_expr_t* in_rise = lower_and(ctx, ingot_ir_binary(f, INGOT_IR_LE, lo, j), ingot_ir_binary(f, INGOT_IR_LE, j, mid));
  ingot_ir_expr_t* peak = ingot_ir_select(f, ingot_ir_binary(f, INGOT_IR_EQ, j, mid), lower_const(ctx, d, 1.0), zero);
  ingot_ir_expr_t* v = ingot_ir_select(f, in_rise, rise, zero);
  v = ingot_ir_select(f, ingot_ir_binary(f, INGOT_IR_EQ, lo, mid), peak, v);
  v = ingot_ir_select(f, in_fall, fall, v);
  if (yv->dtype == INGOT_DTYPE_F16 || yv->dtype == INGOT_DTYPE_BF16) v = ingot_ir_cast(f, INGOT_DTYPE_F32, v);
  if (yv->dtype != v->dtype) v = ingot_ir_cast(f, yv->dtype, v);
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &l, NULL, ingot_ir_store(f, by, ingot_ir_flat_index(f, by, l.idx), v));
  set_workload(ctx, ingot_arena_printf(ctx->arena, "%s %s %lldx%lld", lower_op_lower(ctx), dt(yv->dtype),
                                       (long long)spectrum, (long long)mels));
  return INGOT_OK;
}

/* STFT: y[b, t, k, c] = sum over n < N (frame_length) of
 *   x[b, t * step + n] * w[n] * e^(-2 pi i k n / N)
 * real part (c = 0) and imaginary part (c = 1); a complex signal (last axis
 * 2) xr + i xi gives xr cos + xi sin and xi cos - xr sin. The twiddle's
 * angle is 2 pi ((k n) mod N) / N, its cos and sin computed in float64 and
 * rounded to the signal's dtype; x * w is rounded to that dtype first, as
 * ONNX's reference weights the frames before its DFT; the sum runs in the
 * signal's dtype (float32 or float64). One OTHER stage over b, t, k, c with
 * the sum over n in a local. */
ingot_status_t lower_stft(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0), w = lower_input(ctx, 2), y = node_output(ctx, 0);
  if (ctx->node->input_count < 3) w = INGOT_NO_VALUE;
  const uint32_t fdt = LOWER_DT(INGOT_DTYPE_F32) | LOWER_DT(INGOT_DTYPE_F64);
  if ((s = lower_refuse_activation(ctx)) || (s = lower_check_value_dt(ctx, x, fdt)) ||
      (w != INGOT_NO_VALUE && (s = lower_check_value_dt(ctx, w, LOWER_DT(lower_value(ctx, x)->dtype)))))
    return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  int64_t step = 0, big_n = 0;
  if (!lower_weight_int(ctx, lower_input(ctx, 1), 0, &step))
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "frame_step must be known at compile time");
  uint32_t fl = ctx->node->input_count > 3 ? lower_input(ctx, 3) : INGOT_NO_VALUE;
  if (fl != INGOT_NO_VALUE) {
    if (!lower_weight_int(ctx, fl, 0, &big_n))
      return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "frame_length must be known at compile time");
  } else {
    big_n = w != INGOT_NO_VALUE ? lower_value(ctx, w)->dims[0] : xv->dims[1];
  }
  ingot_dtype_t t = xv->dtype;
  int64_t len = xv->dims[1], chans = xv->dims[2];
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t bw = w != INGOT_NO_VALUE ? lower_add_input(ctx, w, "window") : UINT32_MAX;
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  static const char* const kOut[4] = {"b", "t", "k", "c"};
  static const char* const kRed[1] = {"n"};
  lower_loops_t sp, red;
  lower_loops_make(ctx, &sp, 4, yv->dims, kOut);
  lower_loops_make(ctx, &red, 1, &big_n, kRed);
  ingot_ir_expr_t* n = red.idx[0];
  const ingot_dtype_t d = INGOT_DTYPE_F64;
  ingot_ir_expr_t* kn = ingot_ir_binary(f, INGOT_IR_MOD, ingot_ir_mul(f, sp.idx[2], n), ingot_ir_int(f, big_n));
  ingot_ir_expr_t* angle = ingot_ir_mul(f, ingot_ir_cast(f, d, kn), lower_const(ctx, d, 2.0 * 3.14159265358979323846 / (double)big_n));
  ingot_ir_expr_t* cs = ingot_ir_unary(f, INGOT_IR_COS, angle);
  ingot_ir_expr_t* sn = ingot_ir_unary(f, INGOT_IR_SIN, angle);
  ingot_ir_expr_t* real = ingot_ir_binary(f, INGOT_IR_EQ, sp.idx[3], ingot_ir_int(f, 0));
  /* x_r's twiddle: cos (real part), -sin (imaginary); x_i's: sin, cos */
  ingot_ir_expr_t* tw_r = ingot_ir_select(f, real, cs, ingot_ir_unary(f, INGOT_IR_NEG, sn));
  ingot_ir_expr_t* tw_i = ingot_ir_select(f, real, sn, cs);
  if (t != d) {
    tw_r = ingot_ir_cast(f, t, tw_r);
    tw_i = ingot_ir_cast(f, t, tw_i);
  }
  ingot_ir_expr_t* at = ingot_ir_add(f, ingot_ir_mul(f, sp.idx[0], ingot_ir_int(f, len)),
                                     ingot_ir_add(f, ingot_ir_mul(f, sp.idx[1], ingot_ir_int(f, step)), n));
  at = ingot_ir_mul(f, at, ingot_ir_int(f, chans));
  ingot_ir_expr_t* wn = bw != UINT32_MAX ? ingot_ir_load(f, bw, n) : NULL;
  ingot_ir_expr_t* xr = ingot_ir_load(f, bx, at);
  if (wn) xr = ingot_ir_mul(f, xr, wn);
  ingot_ir_expr_t* term = ingot_ir_mul(f, xr, tw_r);
  if (chans == 2) {
    ingot_ir_expr_t* xi = ingot_ir_load(f, bx, ingot_ir_add(f, at, ingot_ir_int(f, 1)));
    if (wn) xi = ingot_ir_mul(f, xi, wn);
    term = ingot_ir_add(f, term, ingot_ir_mul(f, xi, tw_i));
  }
  uint32_t acc = lower_add_var(ctx, "acc", INGOT_IR_VAR_LOCAL, t);
  lower_emit_accumulate(ctx, &sp, 0, &red, acc, lower_const(ctx, t, 0.0), term,
                        ingot_ir_store(f, by, ingot_ir_flat_index(f, by, sp.idx), ingot_ir_var(f, acc)));
  ctx->op_class = INGOT_OP_CLASS_ROW;
  ctx->workload = ingot_arena_printf(ctx->arena, "stft %s x=%s step%lld n%lld%s%s", dt(t), lower_shape_str(ctx, x),
                                     (long long)step, (long long)big_n, bw != UINT32_MAX ? " window" : "",
                                     yv->dims[2] == big_n ? " twosided" : "");
  return INGOT_OK;
}

/* Compress, one OTHER stage that reads the condition (axis absent: the
 * flattened input, o and q of extent 1):
 *   k = 0
 *   for i in [0, min(len, extent)): if (cond[i]) { y[(o * w + k) * inner + q]
 *     = x[(o * extent + i) * inner + q] for every outer o and inner q;
 *     k = k + 1 }
 * w, y's extent along the axis, is the number of true entries: known when
 * compiling for a constant condition; else (graph/infer_data.c: y's dims
 * are then bounds and y is dense in the run's shape) counted first
 * (n = the true entries among cond[0, len)), and the run's shape, x's dims
 * with n at the axis ({n} flattened), is stored last in the node's second
 * output. The stage is one iteration of an outer loop, so it is not split. */
ingot_status_t lower_compress(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0), cond = lower_input(ctx, 1), y = node_output(ctx, 0);
  if ((s = check_xy(ctx, x, y)) || (s = lower_check_value_dt(ctx, cond, LOWER_DT(INGOT_DTYPE_BOOL)))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  int32_t axis = ctx->params->u.axis.axis; /* -1: flattened (graph/params.c) */
  int64_t outer = 1, inner = 1, extent = ingot_value_numel(xv);
  if (axis >= 0) {
    extent = xv->dims[axis];
    for (int32_t i = 0; i < axis; ++i) outer *= xv->dims[i];
    for (int32_t i = axis + 1; i < xv->rank; ++i) inner *= xv->dims[i];
  }
  int64_t len = lower_value(ctx, cond)->dims[0];
  if (len > extent) len = extent;
  bool at_run_time = yv->runtime_shape != 0;
  uint32_t shape = at_run_time ? node_output(ctx, 1) : INGOT_NO_VALUE;
  if (at_run_time && (shape == INGOT_NO_VALUE || yv->runtime_shape != shape + 1)) {
    return lower_fail(ctx, INGOT_ERROR_INTERNAL, "has no shape output (inference adds it)");
  }
  if (at_run_time && (s = lower_check_value_dt(ctx, shape, LOWER_DT(INGOT_DTYPE_I64)))) return s;
  int64_t kept = axis >= 0 ? yv->dims[axis] : yv->dims[0];
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t bc = lower_add_input(ctx, cond, "condition");
  uint32_t by = lower_add_output(ctx, y, "y");
  uint32_t bs = at_run_time ? lower_add_output(ctx, shape, "shape") : UINT32_MAX;
  ingot_ir_func_t* f = ctx->f;
  uint32_t i = lower_add_var(ctx, "i", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t o = lower_add_var(ctx, "o", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t q = lower_add_var(ctx, "q", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t k = lower_add_var(ctx, "k", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64);
  uint32_t once = lower_add_var(ctx, "once", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t n = at_run_time ? lower_add_var(ctx, "n", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64) : UINT32_MAX;
  ingot_ir_expr_t* width = at_run_time ? ingot_ir_var(f, n) : ingot_ir_int(f, kept);
  /* y[(o * w + k) * inner + q] = x[(o * extent + i) * inner + q] */
  ingot_ir_expr_t* yi = ingot_ir_add(
      f, ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_mul(f, ingot_ir_var(f, o), width), ingot_ir_var(f, k)),
                      ingot_ir_int(f, inner)),
      ingot_ir_var(f, q));
  ingot_ir_expr_t* xi = ingot_ir_add(
      f, ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_mul(f, ingot_ir_var(f, o), ingot_ir_int(f, extent)), ingot_ir_var(f, i)),
                      ingot_ir_int(f, inner)),
      ingot_ir_var(f, q));
  ingot_ir_stmt_t* copy =
      ingot_ir_for(f, o, outer, ingot_ir_for(f, q, inner, ingot_ir_store(f, by, yi, ingot_ir_load(f, bx, xi))));
  ingot_ir_stmt_t* take[2] = {copy, ingot_ir_assign(f, k, ingot_ir_add(f, ingot_ir_var(f, k), ingot_ir_int(f, 1)))};
  ingot_ir_stmt_t* body[4 + INGOT_MAX_RANK];
  uint32_t nb = 0;
  if (at_run_time) {
    uint32_t c = lower_add_var(ctx, "c", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    ingot_ir_expr_t* step =
        ingot_ir_select(f, ingot_ir_load(f, bc, ingot_ir_var(f, c)), ingot_ir_int(f, 1), ingot_ir_int(f, 0));
    body[nb++] = ingot_ir_local(f, n, ingot_ir_int(f, 0));
    body[nb++] = ingot_ir_for(f, c, len, ingot_ir_assign(f, n, ingot_ir_add(f, ingot_ir_var(f, n), step)));
  }
  body[nb++] = ingot_ir_local(f, k, ingot_ir_int(f, 0));
  body[nb++] =
      ingot_ir_for(f, i, len, ingot_ir_if(f, ingot_ir_load(f, bc, ingot_ir_var(f, i)), ingot_ir_block(f, take, 2)));
  for (int32_t d = 0; at_run_time && d < yv->rank; ++d) {
    bool counted = axis < 0 || d == axis;
    body[nb++] = ingot_ir_store(f, bs, ingot_ir_int(f, d), counted ? ingot_ir_var(f, n) : ingot_ir_int(f, yv->dims[d]));
  }
  lower_emit_other(ctx, ingot_ir_for(f, once, 1, ingot_ir_block(f, body, nb)));
  if (at_run_time) {
    set_workload(ctx, ingot_arena_printf(ctx->arena, "compress %s x=%s axis%d len%lld runtime", dt(xv->dtype),
                                         lower_shape_str(ctx, x), axis, (long long)len));
  } else {
    set_workload(ctx, ingot_arena_printf(ctx->arena, "compress %s x=%s axis%d len%lld kept%lld", dt(xv->dtype),
                                         lower_shape_str(ctx, x), axis, (long long)len, (long long)kept));
  }
  return INGOT_OK;
}

/* TfIdfVectorizer (ingot_graph_tfidf_params): y = 0, then for each pool
 * n-gram k of size n, one OTHER stage per row b:
 *   count = sum over starts i and skips d (d = 1 for a unigram, 1 ..
 *           max_skip + 1 otherwise) of [i + (n-1) d < N and
 *           x[b, i + j d] = pool[k][j] for j < n]
 *   y[b, column[k]] = count (TF) | count > 0 ? weight[k] : 0 (IDF) |
 *                     count * weight[k] (TFIDF)
 * the counting of ONNX's reference (unigrams once, not per skip). */
ingot_status_t lower_tfidf(lower_ctx_t* ctx) {
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0), y = node_output(ctx, 0);
  if ((s = lower_check_value_dt(ctx, x, LOWER_DT(INGOT_DTYPE_I32) | LOWER_DT(INGOT_DTYPE_I64))) ||
      (s = lower_check_value_dt(ctx, y, LOWER_DT(INGOT_DTYPE_F32)))) {
    return s;
  }
  ingot_tfidf_t t;
  if ((s = ingot_graph_tfidf_params(ctx->arena, ctx->node, &t))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  int64_t rows = xv->rank == 2 ? xv->dims[0] : 1, len = xv->dims[xv->rank - 1];
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  lower_loops_t l;
  lower_loops_over(ctx, &l, yv->rank, yv->dims);
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &l, NULL,
                   ingot_ir_store(f, by, ingot_ir_flat_index(f, by, l.idx), lower_const(ctx, INGOT_DTYPE_F32, 0.0)));
  static const char* const kRow[1] = {"b"};
  static const char* const kStart[1] = {"i"};
  for (uint32_t k = 0; k < t.entries; ++k) {
    int64_t n = t.size[k];
    if (n < t.min_gram || n > t.max_gram || len < 1) continue;
    int64_t skips = n == 1 ? 1 : t.max_skip + 1;
    lower_loops_t sp, red;
    lower_loops_make(ctx, &sp, 1, &rows, kRow);
    lower_loops_make(ctx, &red, 1, &len, kStart);
    ingot_ir_expr_t* term = NULL;
    for (int64_t d = 1; d <= skips; ++d) {
      if ((n - 1) * d >= len) break;
      ingot_ir_expr_t* hit = ingot_ir_binary(f, INGOT_IR_LT, red.idx[0], ingot_ir_int(f, len - (n - 1) * d));
      for (int64_t j = 0; j < n; ++j) {
        /* clamped into the row: the test above decides, the load stays inside */
        ingot_ir_expr_t* at = ingot_ir_binary(f, INGOT_IR_MIN, ingot_ir_add(f, red.idx[0], ingot_ir_int(f, j * d)),
                                              ingot_ir_int(f, len - 1));
        ingot_ir_expr_t* xi = xv->rank == 2 ? ingot_ir_add(f, ingot_ir_mul(f, sp.idx[0], ingot_ir_int(f, len)), at) : at;
        ingot_ir_expr_t* v = ingot_ir_cast(f, INGOT_DTYPE_I64, ingot_ir_load(f, bx, xi));
        hit = lower_and(ctx, hit, ingot_ir_binary(f, INGOT_IR_EQ, v, ingot_ir_int(f, t.pool[t.offset[k] + j])));
      }
      ingot_ir_expr_t* one = ingot_ir_select(f, hit, lower_const(ctx, INGOT_DTYPE_F32, 1.0),
                                             lower_const(ctx, INGOT_DTYPE_F32, 0.0));
      term = term ? ingot_ir_add(f, term, one) : one;
    }
    if (!term) continue;
    uint32_t acc = lower_add_var(ctx, "count", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
    ingot_ir_expr_t* count = ingot_ir_var(f, acc);
    ingot_ir_expr_t* w = lower_const(ctx, INGOT_DTYPE_F32, t.weight[k]);
    ingot_ir_expr_t* v = t.mode == 0 ? count
                         : t.mode == 1 ? ingot_ir_select(f, ingot_ir_binary(f, INGOT_IR_LT, lower_const(ctx, INGOT_DTYPE_F32, 0.0),
                                                                             count),
                                                         w, lower_const(ctx, INGOT_DTYPE_F32, 0.0))
                                       : ingot_ir_mul(f, count, w);
    ingot_ir_expr_t* col = ingot_ir_int(f, t.column[k]);
    ingot_ir_expr_t* yi = yv->rank == 2 ? ingot_ir_add(f, ingot_ir_mul(f, sp.idx[0], ingot_ir_int(f, t.columns)), col) : col;
    lower_emit_accumulate(ctx, &sp, 0, &red, acc, lower_const(ctx, INGOT_DTYPE_F32, 0.0), term,
                          ingot_ir_store(f, by, yi, v));
  }
  ctx->op_class = INGOT_OP_CLASS_ROW;
  ctx->workload = ingot_arena_printf(ctx->arena, "tfidf %s x=%s mode%d grams%lld-%lld skip%lld pool%u", dt(xv->dtype),
                                     lower_shape_str(ctx, x), t.mode, (long long)t.min_gram, (long long)t.max_gram,
                                     (long long)t.max_skip, t.entries);
  return INGOT_OK;
}
