/* Shape ops, every dtype: Flatten, Reshape, Identity, Dropout, Squeeze,
 * Unsqueeze (views), Transpose, Concat.
 *
 * A view whose input and output are both intermediates produces no kernel:
 * alias_of[output] = the root of the input's alias chain. Otherwise (a weight,
 * graph input or graph output on either side) it is a PURE copy; row-major
 * order is unchanged, so the output's flat index is the input's. */
#include <string.h>

#include "lower_internal.h"

static bool is_plain_intermediate(const ingot_value_t* v) {
  return v->kind == INGOT_VALUE_INTERMEDIATE && !v->is_output;
}

static ingot_ir_stmt_t* copy_body(lower_ctx_t* ctx, uint32_t bx, uint32_t by, const lower_loops_t* loops) {
  ingot_ir_expr_t* yi = ingot_ir_flat_index(ctx->f, by, loops->idx);
  return ingot_ir_store(ctx->f, by, yi, ingot_ir_load(ctx->f, bx, yi));
}

ingot_status_t lower_view(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0);
  uint32_t y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  if ((s = lower_refuse_activation(ctx))) return s;
  uint32_t dts = LOWER_DT_ANY | LOWER_DT_NARROW; /* copies of the bytes (lower_check_value: which ops) */
  if ((s = lower_check_value_dt(ctx, x, dts)) || (s = lower_check_value_dt(ctx, y, dts))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  if (xv->dtype != yv->dtype || ingot_value_numel(xv) != ingot_value_numel(yv)) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "output %s %s does not hold the input %s %s",
                      ingot_dtype_name(yv->dtype), lower_shape_str(ctx, y), ingot_dtype_name(xv->dtype),
                      lower_shape_str(ctx, x));
  }
  uint32_t mask = INGOT_NO_VALUE;
  if (node->op == INGOT_OP_DROPOUT) {
    if (!ingot_graph_dropout_is_identity(ctx->graph, node)) {
      /* Training mode: which elements stay is random (nothing here draws
       * random numbers), unless the ratio is 0. */
      uint32_t training = lower_input(ctx, 2), ratio = lower_input(ctx, 1);
      const ingot_value_t* tv = lower_value(ctx, training);
      if (tv->kind != INGOT_VALUE_WEIGHT)
        return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED,
                          "input 'training_mode' ('%s') must be known at compile time (bind it with --const "
                          "NAME=FILE.npy)", tv->name);
      if (ratio != INGOT_NO_VALUE && lower_value(ctx, ratio)->kind != INGOT_VALUE_WEIGHT)
        return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED,
                          "training_mode is true, so input 'ratio' ('%s') must be known at compile time (bind "
                          "it with --const NAME=FILE.npy)", lower_value(ctx, ratio)->name);
      return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED,
                        "training_mode is true and the ratio is not 0: the elements dropped are random, which is "
                        "not supported (a ratio of 0, or training_mode false, passes the input through)");
    }
    if (node->output_count > 1) mask = node->outputs[1];
    if (mask != INGOT_NO_VALUE) {
      if ((s = lower_check_value(ctx, mask, false))) return s;
      const ingot_value_t* mv = lower_value(ctx, mask);
      if (mv->dtype != INGOT_DTYPE_BOOL || ingot_value_numel(mv) != ingot_value_numel(xv)) {
        return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "mask output must be bool and shaped like the input");
      }
    }
  }
  if (mask == INGOT_NO_VALUE && is_plain_intermediate(xv) && is_plain_intermediate(yv)) {
    uint32_t root = x;
    while (ctx->alias_of[root] != INGOT_NO_VALUE) root = ctx->alias_of[root];
    ctx->alias_of[y] = root;
    ctx->no_kernel = true;
    return INGOT_OK;
  }
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  uint32_t bm = mask != INGOT_NO_VALUE ? lower_add_output(ctx, mask, "mask") : UINT32_MAX;
  lower_loops_t loops;
  lower_loops_over(ctx, &loops, yv->rank, yv->dims);
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL, copy_body(ctx, bx, by, &loops));
  if (bm != UINT32_MAX) {
    /* Inference: every element is kept. */
    const ingot_value_t* mv = lower_value(ctx, mask);
    lower_loops_over(ctx, &loops, mv->rank, mv->dims);
    ingot_ir_expr_t* all = ingot_ir_binary(ctx->f, INGOT_IR_EQ, ingot_ir_int(ctx->f, 0), ingot_ir_int(ctx->f, 0));
    lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL,
                     ingot_ir_store(ctx->f, bm, ingot_ir_flat_index(ctx->f, bm, loops.idx), all));
  }
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE;
  ctx->workload = ingot_arena_printf(ctx->arena, "copy %s n%lld%s", ingot_dtype_name(yv->dtype),
                                     (long long)ingot_value_numel(yv),
                                     bm != UINT32_MAX ? " mask" : "");
  return INGOT_OK;
}

ingot_status_t lower_transpose(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  ingot_status_t s;
  uint32_t x = lower_input(ctx, 0);
  uint32_t y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  if ((s = lower_refuse_activation(ctx))) return s;
  uint32_t dts = LOWER_DT_ANY | LOWER_DT_NARROW; /* a copy of the bytes */
  if ((s = lower_check_value_dt(ctx, x, dts)) || (s = lower_check_value_dt(ctx, y, dts))) return s;
  const ingot_value_t* xv = lower_value(ctx, x);
  const ingot_value_t* yv = lower_value(ctx, y);
  int32_t rank = xv->rank;
  int64_t perm[INGOT_MAX_RANK];
  for (int32_t i = 0; i < rank; ++i) perm[i] = ctx->params->u.transpose.perm[i]; /* graph/params.c */
  bool ok = yv->rank == rank && yv->dtype == xv->dtype;
  for (int32_t i = 0; ok && i < rank; ++i) ok = yv->dims[i] == xv->dims[perm[i]];
  if (!ok) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "output shape %s is not the permuted input %s",
                      lower_shape_str(ctx, y), lower_shape_str(ctx, x));
  }
  uint32_t bx = lower_add_input(ctx, x, "x");
  uint32_t by = lower_add_output(ctx, y, "y");
  lower_loops_t loops;
  lower_loops_over(ctx, &loops, rank, yv->dims);
  ingot_ir_expr_t* xi[INGOT_MAX_RANK];
  for (int32_t i = 0; i < rank; ++i) xi[perm[i]] = loops.idx[i];
  ingot_ir_func_t* f = ctx->f;
  lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL,
                   ingot_ir_store(f, by, ingot_ir_flat_index(f, by, loops.idx),
                                  ingot_ir_load(f, bx, ingot_ir_flat_index(f, bx, xi))));
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE;
  ingot_strbuf_t sb = {0};
  ingot_strbuf_appendf(&sb, "transpose %s x=%s", ingot_dtype_name(yv->dtype), lower_shape_str(ctx, x));
  lower_append_ints(&sb, "perm", perm, (uint32_t)rank);
  ctx->workload = ingot_arena_strdup(ctx->arena, sb.data);
  ingot_strbuf_free(&sb);
  return INGOT_OK;
}

/* One PURE stage per input, each over that input's shape, writing its slab.
 * Empty inputs (a zero extent on the axis) contribute nothing and are not
 * arguments. */
ingot_status_t lower_concat(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  ingot_status_t s;
  uint32_t y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  if ((s = lower_refuse_activation(ctx))) return s;
  if ((s = lower_check_value_dt(ctx, y, LOWER_DT_ANY))) return s;
  if (node->input_count == 0) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "no inputs");
  const ingot_value_t* yv = lower_value(ctx, y);
  int32_t rank = yv->rank;
  int64_t axis = ctx->params->u.axis.axis; /* normalized (graph/params.c) */
  if (axis >= rank) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "axis %lld is out of range for rank %d", (long long)axis, rank);
  }
  int64_t total = 0;
  for (uint32_t k = 0; k < node->input_count; ++k) {
    uint32_t x = node->inputs[k];
    if (x == INGOT_NO_VALUE || x >= ctx->graph->value_count) {
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "input %u is missing", k);
    }
    const ingot_value_t* xv = lower_value(ctx, x);
    if (xv->rank == rank && xv->rank > 0 && xv->dims[axis] == 0) continue; /* empty: nothing to copy */
    if ((s = lower_check_value_dt(ctx, x, LOWER_DT_ANY))) return s;
    bool ok = xv->rank == rank && xv->dtype == yv->dtype;
    for (int32_t i = 0; ok && i < rank; ++i) ok = i == axis || xv->dims[i] == yv->dims[i];
    if (!ok) {
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "input %u shape %s does not fit output %s on axis %lld", k,
                        lower_shape_str(ctx, x), lower_shape_str(ctx, y), (long long)axis);
    }
    total += xv->dims[axis];
  }
  if (total != yv->dims[axis]) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "inputs sum to %lld along axis %lld, output has %lld",
                      (long long)total, (long long)axis, (long long)yv->dims[axis]);
  }
  uint32_t* bufs = INGOT_ARENA_ARRAY(ctx->arena, uint32_t, node->input_count);
  for (uint32_t k = 0; k < node->input_count; ++k) {
    bool empty = lower_value(ctx, node->inputs[k])->dims[axis] == 0;
    bufs[k] = empty ? UINT32_MAX : lower_add_input(ctx, node->inputs[k], ingot_arena_printf(ctx->arena, "x%u", k));
  }
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  ingot_strbuf_t sb = {0};
  ingot_strbuf_appendf(&sb, "concat %s axis%lld y=%s in=", ingot_dtype_name(yv->dtype), (long long)axis,
                       lower_shape_str(ctx, y));
  int64_t offset = 0;
  for (uint32_t k = 0; k < node->input_count; ++k) {
    const ingot_value_t* xv = lower_value(ctx, node->inputs[k]);
    if (bufs[k] == UINT32_MAX) continue;
    lower_loops_t loops;
    lower_loops_over(ctx, &loops, rank, xv->dims);
    ingot_ir_expr_t* yi[INGOT_MAX_RANK];
    for (int32_t i = 0; i < rank; ++i) yi[i] = loops.idx[i];
    yi[axis] = ingot_ir_add(f, loops.idx[axis], ingot_ir_int(f, offset));
    lower_emit_stage(ctx, INGOT_STAGE_PURE, &loops, NULL,
                     ingot_ir_store(f, by, ingot_ir_flat_index(f, by, yi),
                                    ingot_ir_load(f, bufs[k], ingot_ir_flat_index(f, bufs[k], loops.idx))));
    offset += xv->dims[axis];
    ingot_strbuf_appendf(&sb, "%s%lld", k ? "," : "", (long long)xv->dims[axis]);
  }
  ctx->op_class = INGOT_OP_CLASS_INJECTIVE;
  ctx->workload = ingot_arena_strdup(ctx->arena, sb.data);
  ingot_strbuf_free(&sb);
  return INGOT_OK;
}
