/* Lowering driver: one kernel per live node, dispatched through a table indexed
 * by ingot_op_t, plus the helpers the op families share (lower_internal.h).
 *
 * Conventions every op family keeps:
 * - Func buffers are the kernel arguments: the node's present inputs (absent
 *   optional inputs are not arguments; an input read twice is one argument),
 *   then its outputs, each with its graph value's dtype and shape.
 *   kernel.args[i] is the graph value of buffer i (not alias-resolved).
 *   Inputs that only steer shapes (Reshape's shape) are not arguments;
 *   Clip bounds held in scalar weights are folded into constants.
 * - Kernel names are "<op lowercased>_<node index>"; loop names are short
 *   (n, k, oh, ow, rc, rh, rw, i, j, ...) and never equal a buffer name.
 * - Padded windows clamp the load index into the buffer and SELECT 0 (or keep
 *   the running max), so no load leaves its buffer even when guarded.
 * - Dtypes: each op checks what it supports (lower_check_dtype; the IR has
 *   F32/F64/I64/I32/I8/U8/BOOL, float16 is refused); anything else, or an
 *   attribute value we do not implement, fails naming the node and op. Views between two plain intermediates
 *   produce no kernel (alias_of); other views are PURE copies. */
#include "lower/lower.h"

#include <assert.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"

/* ---- the dispatch table: the lowering hook of each op in graph/ops.def ---- */
ingot_status_t lower_folded(lower_ctx_t* ctx) {
  return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "this op cannot be lowered (constant folding should have made it a weight)");
}


static const lower_fn_t kLowerers[] = {
#define INGOT_OP(id, name, min_in, max_in, min_out, max_out, infer, lower) lower,
#include "graph/ops.def"
};
static_assert(sizeof(kLowerers) / sizeof(kLowerers[0]) == INGOT_OP_COUNT_,
              "lowering table out of sync with graph/ops.def");

/* ---- errors and checks ---- */

ingot_status_t lower_fail(const lower_ctx_t* ctx, ingot_status_t code, const char* fmt, ...) {
  char msg[1024];
  va_list args;
  va_start(args, fmt);
  vsnprintf(msg, sizeof(msg), fmt, args);
  va_end(args);
  const char* op = ingot_op_name(ctx->node->op);
  return ingot_fail(code, "node '%s' (%s): %s", ctx->node->name, op ? op : "?", msg);
}

const ingot_value_t* lower_value(const lower_ctx_t* ctx, uint32_t value) { return &ctx->graph->values[value]; }

uint32_t lower_input(const lower_ctx_t* ctx, uint32_t i) {
  return i < ctx->node->input_count ? ctx->node->inputs[i] : INGOT_NO_VALUE;
}

/* The ops that read and write the float8s and int4 / uint4 (LOWER_DT_NARROW):
 * the conversions, and the views and Transpose, which copy their bytes. */
static bool narrow_op(const lower_ctx_t* ctx) {
  switch (ctx->node->op) {
    case INGOT_OP_CAST: case INGOT_OP_CASTLIKE: case INGOT_OP_QUANTIZELINEAR: case INGOT_OP_DEQUANTIZELINEAR:
    case INGOT_OP_IDENTITY: case INGOT_OP_RESHAPE: case INGOT_OP_FLATTEN: case INGOT_OP_SQUEEZE:
    case INGOT_OP_UNSQUEEZE: case INGOT_OP_TRANSPOSE:
      return true;
    default: return false;
  }
}

ingot_status_t lower_check_value(const lower_ctx_t* ctx, uint32_t value, bool f32_only) {
  if (value == INGOT_NO_VALUE || value >= ctx->graph->value_count) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "a required input or output is missing");
  }
  const ingot_value_t* v = lower_value(ctx, value);
  if (v->rank < 0) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "the shape of '%s' is unknown (shape inference has not run)",
                      v->name);
  }
  if (v->rank > (int32_t)INGOT_MAX_RANK) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "'%s' has rank %d, above %u", v->name, v->rank, INGOT_MAX_RANK);
  }
  for (int32_t i = 0; i < v->rank; ++i) {
    if (v->dims[i] < 0) {
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT,
                        "dimension %d of '%s' is symbolic; fix it with --input-shape", i, v->name);
    }
    if (v->dims[i] == 0) {
      return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "'%s' has an empty dimension (%d)", v->name, i);
    }
  }
  if (f32_only && v->dtype != INGOT_DTYPE_F32) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "dtype %s is not supported (value '%s'; float32 only)",
                      ingot_dtype_name(v->dtype), v->name);
  }
  if (!((LOWER_DT_ANY | LOWER_DT_HALF) & LOWER_DT(v->dtype)) && !(narrow_op(ctx) && (LOWER_DT_NARROW & LOWER_DT(v->dtype)))) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "dtype %s is not supported (value '%s')%s",
                      ingot_dtype_name(v->dtype), v->name,
                      (LOWER_DT_NARROW & LOWER_DT(v->dtype)) ? "; Cast, QuantizeLinear, DequantizeLinear, Transpose and the views (Reshape, ...) take it" : "");
  }
  return INGOT_OK;
}

ingot_dtype_t lower_storage_dtype(ingot_dtype_t t) {
  if (LOWER_DT(t) & (LOWER_DT_F8 | LOWER_DT(INGOT_DTYPE_U4))) return INGOT_DTYPE_U8;
  if (t == INGOT_DTYPE_I4) return INGOT_DTYPE_I8;
  return t;
}

bool lower_dtype_is_float(ingot_dtype_t t) { return t == INGOT_DTYPE_F32 || t == INGOT_DTYPE_F64; }
bool lower_dtype_is_int(ingot_dtype_t t) { return ingot_ir_dtype_is_int(t); }

ingot_status_t lower_check_dtype(const lower_ctx_t* ctx, uint32_t value, uint32_t allowed) {
  const ingot_value_t* v = lower_value(ctx, value);
  if ((unsigned)v->dtype < 32 && (allowed & LOWER_DT(v->dtype))) return INGOT_OK;
  char list[160];
  size_t used = 0;
  list[0] = '\0';
  for (unsigned t = 1; t < (unsigned)INGOT_DTYPE_COUNT_ && used < sizeof(list); ++t) {
    if (allowed & LOWER_DT(t))
      used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", used ? ", " : "", ingot_dtype_name((ingot_dtype_t)t));
  }
  return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "dtype %s is not supported (value '%s'; supported: %s)",
                    ingot_dtype_name(v->dtype), v->name, list);
}

ingot_status_t lower_check_value_dt(const lower_ctx_t* ctx, uint32_t value, uint32_t allowed) {
  ingot_status_t s = lower_check_value(ctx, value, false);
  if (s) return s;
  return lower_check_dtype(ctx, value, allowed);
}

ingot_status_t lower_check_broadcast(const lower_ctx_t* ctx, uint32_t value, uint32_t out) {
  const ingot_value_t* v = lower_value(ctx, value);
  const ingot_value_t* o = lower_value(ctx, out);
  if (v->rank > o->rank) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "'%s' (rank %d) does not broadcast to '%s' (rank %d)", v->name,
                      v->rank, o->name, o->rank);
  }
  int32_t off = o->rank - v->rank;
  for (int32_t i = 0; i < v->rank; ++i) {
    if (v->dims[i] != 1 && v->dims[i] != o->dims[off + i]) {
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT,
                        "'%s' dimension %d (%lld) does not broadcast to '%s' dimension %d (%lld)", v->name, i,
                        (long long)v->dims[i], o->name, off + i, (long long)o->dims[off + i]);
    }
  }
  return INGOT_OK;
}

ingot_status_t lower_refuse_activation(const lower_ctx_t* ctx) {
  if (ctx->node->epilogue.activation == INGOT_ACTIVATION_NONE) return INGOT_OK;
  return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "a fused activation on this op is not supported");
}

/* ---- arguments ---- */

static uint32_t add_arg(lower_ctx_t* ctx, uint32_t value, const char* name, ingot_ir_buffer_role_t role) {
  const ingot_value_t* v = lower_value(ctx, value);
  uint32_t b = ingot_ir_add_buffer(ctx->f, name, lower_storage_dtype(v->dtype), role, v->rank, v->dims);
  INGOT_VEC_PUSH(ctx->args, value);
  return b;
}

uint32_t lower_add_input(lower_ctx_t* ctx, uint32_t value, const char* name) {
  for (uint32_t b = 0; b < ctx->args.count; ++b) {
    if (ctx->args.data[b] == value && ctx->f->buffers[b].role == INGOT_IR_BUFFER_INPUT) return b;
  }
  return add_arg(ctx, value, name, INGOT_IR_BUFFER_INPUT);
}

ingot_status_t lower_check_weight(const lower_ctx_t* ctx, uint32_t value) {
  ingot_status_t s = lower_check_value(ctx, value, false);
  if (s) return s;
  const ingot_value_t* v = lower_value(ctx, value);
  if (v->dtype == INGOT_DTYPE_F32) return INGOT_OK;
  uint32_t slot = ingot_node_compressed_input(ctx->node);
  bool stored = v->kind == INGOT_VALUE_WEIGHT && ctx->node->input_count > slot && ctx->node->inputs[slot] == value;
  if (stored && (v->dtype == INGOT_DTYPE_F16 || v->dtype == INGOT_DTYPE_BF16)) return INGOT_OK;
  if (stored && v->dtype == INGOT_DTYPE_I8 && ctx->node->weight_scale_input) {
    uint32_t sv = lower_input(ctx, ctx->node->weight_scale_input);
    if (sv != INGOT_NO_VALUE && lower_value(ctx, sv)->dtype == INGOT_DTYPE_F32 && lower_value(ctx, sv)->rank == 1)
      return INGOT_OK;
  }
  return lower_check_value(ctx, value, true); /* the float32-only message */
}

lower_weight_t lower_add_weight(lower_ctx_t* ctx, uint32_t value, const char* name) {
  lower_weight_t w;
  w.buffer = lower_add_input(ctx, value, name);
  w.dtype = lower_value(ctx, value)->dtype;
  w.scale = w.dtype == INGOT_DTYPE_I8 ? lower_add_input(ctx, lower_input(ctx, ctx->node->weight_scale_input),
                                                        ingot_arena_printf(ctx->arena, "%s_scale", name))
                                      : UINT32_MAX;
  return w;
}

ingot_ir_expr_t* lower_weight_load(lower_ctx_t* ctx, const lower_weight_t* w, ingot_ir_expr_t* index,
                                   ingot_ir_expr_t* channel) {
  ingot_ir_func_t* f = ctx->f;
  ingot_ir_expr_t* v = ingot_ir_load(f, w->buffer, index);
  if (w->dtype == INGOT_DTYPE_F32) return v;
  v = ingot_ir_cast(f, INGOT_DTYPE_F32, v);
  if (w->scale == UINT32_MAX) return v;
  return ingot_ir_mul(f, v, ingot_ir_load(f, w->scale, channel));
}

const char* lower_weight_tag(lower_ctx_t* ctx, const lower_weight_t* w) {
  if (w->dtype == INGOT_DTYPE_F32) return "";
  return ingot_arena_printf(ctx->arena, " w=%s", ingot_dtype_name(w->dtype));
}

uint32_t lower_add_output(lower_ctx_t* ctx, uint32_t value, const char* name) {
  return add_arg(ctx, value, name, INGOT_IR_BUFFER_OUTPUT);
}

uint32_t lower_add_arg_as(lower_ctx_t* ctx, uint32_t value, const char* name, bool output, ingot_dtype_t dtype) {
  const ingot_value_t* v = lower_value(ctx, value);
  uint32_t b = ingot_ir_add_buffer(ctx->f, name, dtype, output ? INGOT_IR_BUFFER_OUTPUT : INGOT_IR_BUFFER_INPUT, v->rank,
                                   v->dims);
  INGOT_VEC_PUSH(ctx->args, value);
  return b;
}

uint32_t lower_add_words_input(lower_ctx_t* ctx, uint32_t value, const char* name) {
  const ingot_value_t* v = lower_value(ctx, value);
  int64_t dims[INGOT_MAX_RANK];
  for (int32_t d = 0; d < v->rank; ++d) dims[d] = v->dims[d];
  if (v->rank > 0) dims[v->rank - 1] /= 4;
  uint32_t b = ingot_ir_add_buffer(ctx->f, name, INGOT_DTYPE_I32, INGOT_IR_BUFFER_INPUT, v->rank, dims);
  INGOT_VEC_PUSH(ctx->args, value);
  return b;
}

/* ---- loops and stages ---- */

uint32_t lower_add_var(lower_ctx_t* ctx, const char* name, ingot_ir_var_kind_t kind, ingot_dtype_t dtype) {
  const char* unique = name;
  for (int n = 1;; ++n) {
    bool clash = false;
    for (uint32_t b = 0; b < ctx->f->buffer_count && !clash; ++b) clash = strcmp(ctx->f->buffers[b].name, unique) == 0;
    if (!clash) break;
    unique = ingot_arena_printf(ctx->arena, "%s%d", name, n);
  }
  return ingot_ir_add_var(ctx->f, unique, kind, dtype);
}

void lower_loops_make(lower_ctx_t* ctx, lower_loops_t* out, uint32_t count, const int64_t* extents,
                      const char* const* names) {
  assert(count <= INGOT_MAX_STAGE_AXES);
  memset(out, 0, sizeof(*out));
  out->count = count;
  for (uint32_t i = 0; i < count; ++i) {
    out->vars[i] = lower_add_var(ctx, names[i], INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    out->extents[i] = extents[i];
    out->idx[i] = ingot_ir_var(ctx->f, out->vars[i]);
  }
}

void lower_loops_over(lower_ctx_t* ctx, lower_loops_t* out, int32_t rank, const int64_t* dims) {
  static const char* const k1[] = {"i"};
  static const char* const k2[] = {"i", "j"};
  static const char* const k3[] = {"n", "i", "j"};
  static const char* const k4[] = {"n", "c", "h", "w"};
  static const char* const k5[] = {"n", "c", "d", "h", "w"};
  static const char* const kMany[] = {"i0", "i1", "i2", "i3", "i4", "i5", "i6", "i7"};
  const char* const* names = kMany;
  switch (rank) {
    case 1:
      names = k1;
      break;
    case 2:
      names = k2;
      break;
    case 3:
      names = k3;
      break;
    case 4:
      names = k4;
      break;
    case 5:
      names = k5;
      break;
    default:
      break;
  }
  lower_loops_make(ctx, out, (uint32_t)rank, dims, names);
}

static ingot_stage_t* push_stage(lower_ctx_t* ctx, ingot_stage_role_t role) {
  ingot_stage_t stage;
  memset(&stage, 0, sizeof(stage));
  stage.role = role;
  stage.tile_axis = -1;
  stage.block_axis = -1;
  INGOT_VEC_PUSH(ctx->stages, stage);
  return &ctx->stages.data[ctx->stages.count - 1];
}

void lower_emit_stage(lower_ctx_t* ctx, ingot_stage_role_t role, const lower_loops_t* spatial,
                      const lower_loops_t* reduce, ingot_ir_stmt_t* inner) {
  ingot_ir_stmt_t* s = inner;
  if (reduce) {
    for (uint32_t i = reduce->count; i-- > 0;) s = ingot_ir_for(ctx->f, reduce->vars[i], reduce->extents[i], s);
  }
  ingot_stage_t* stage = push_stage(ctx, role);
  if (spatial->count == 0) {
    uint32_t v = lower_add_var(ctx, "i", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    s = ingot_ir_for(ctx->f, v, 1, s);
    stage->spatial[stage->spatial_count++] = v;
  } else {
    for (uint32_t i = spatial->count; i-- > 0;) s = ingot_ir_for(ctx->f, spatial->vars[i], spatial->extents[i], s);
    for (uint32_t i = 0; i < spatial->count; ++i) stage->spatial[stage->spatial_count++] = spatial->vars[i];
  }
  if (reduce) {
    for (uint32_t i = 0; i < reduce->count; ++i) stage->reduce[stage->reduce_count++] = reduce->vars[i];
  }
  INGOT_VEC_PUSH(ctx->body, s);
}

ingot_ir_expr_t* lower_update_start(lower_ctx_t* ctx, const lower_loops_t* reduce, uint32_t buffer,
                                    ingot_ir_expr_t* index, ingot_ir_expr_t* init) {
  ingot_ir_func_t* f = ctx->f;
  ingot_ir_expr_t* first = NULL;
  for (uint32_t i = 0; i < reduce->count; ++i)
    first = lower_and(ctx, first, ingot_ir_binary(f, INGOT_IR_EQ, reduce->idx[i], ingot_ir_int(f, 0)));
  ingot_ir_expr_t* y = ingot_ir_load(f, buffer, index);
  return first ? ingot_ir_select(f, first, init, y) : init;
}

void lower_emit_remainder(lower_ctx_t* ctx, const lower_loops_t* spatial, const lower_loops_t* reduce,
                          ingot_ir_stmt_t* store, uint32_t kb_pos, uint32_t ki_pos, int64_t panels, int64_t width) {
  ingot_ir_func_t* f = ctx->f;
  int32_t tile_axis = ctx->stages.count ? ctx->stages.data[ctx->stages.count - 1].tile_axis : -1;
  const char* names[INGOT_MAX_STAGE_AXES];
  int64_t extents[INGOT_MAX_STAGE_AXES];
  uint32_t n = 0;
  for (uint32_t i = 0; i < spatial->count; ++i) {
    if (i == kb_pos) continue;
    names[n] = f->vars[spatial->vars[i]].name;
    extents[n++] = i == ki_pos ? width : spatial->extents[i];
  }
  lower_loops_t sp, red;
  lower_loops_make(ctx, &sp, n, extents, names);
  const char* rnames[INGOT_MAX_STAGE_AXES];
  for (uint32_t i = 0; i < reduce->count; ++i) rnames[i] = f->vars[reduce->vars[i]].name;
  lower_loops_make(ctx, &red, reduce->count, reduce->extents, rnames);
  ingot_ir_expr_t* index = store->u.store.index;
  ingot_ir_expr_t* value = store->u.store.value;
  for (uint32_t i = 0, j = 0; i < spatial->count; ++i) {
    ingot_ir_expr_t* to = i == kb_pos ? ingot_ir_int(f, panels) : sp.idx[j++];
    index = ingot_ir_expr_substitute(f, index, spatial->vars[i], to);
    value = ingot_ir_expr_substitute(f, value, spatial->vars[i], to);
  }
  for (uint32_t i = 0; i < reduce->count; ++i) {
    index = ingot_ir_expr_substitute(f, index, reduce->vars[i], red.idx[i]);
    value = ingot_ir_expr_substitute(f, value, reduce->vars[i], red.idx[i]);
  }
  lower_emit_stage(ctx, INGOT_STAGE_UPDATE, &sp, &red, ingot_ir_store(f, store->u.store.buffer, index, value));
  if (tile_axis >= 0) {
    if (tile_axis == (int32_t)kb_pos) tile_axis = -1;
    else if (tile_axis > (int32_t)kb_pos) --tile_axis;
  }
  ctx->stages.data[ctx->stages.count - 1].tile_axis = tile_axis;
}

void lower_emit_other(lower_ctx_t* ctx, ingot_ir_stmt_t* loop) {
  assert(loop->kind == INGOT_IR_STMT_FOR);
  ingot_stage_t* stage = push_stage(ctx, INGOT_STAGE_OTHER);
  stage->spatial[stage->spatial_count++] = loop->u.loop.var;
  INGOT_VEC_PUSH(ctx->body, loop);
}

void lower_mark_vector_loop(lower_ctx_t* ctx, uint32_t var) {
  assert(ctx->stages.count > 0);
  ingot_stage_t* stage = &ctx->stages.data[ctx->stages.count - 1];
  if (stage->vector_loop_count < sizeof(stage->vector_loops) / sizeof(stage->vector_loops[0]))
    stage->vector_loops[stage->vector_loop_count++] = var;
}

/* ---- row reductions ---- */

static ingot_ir_expr_t* row_combine(ingot_ir_func_t* f, lower_reduce_kind_t kind, ingot_ir_expr_t* a,
                                    ingot_ir_expr_t* b) {
  return kind == LOWER_REDUCE_MAX ? ingot_ir_binary(f, INGOT_IR_MAX, a, b) : ingot_ir_add(f, a, b);
}

void lower_row_reduce(lower_ctx_t* ctx, const lower_row_term_t* t, lower_reduce_kind_t kind, uint32_t acc,
                      ingot_dtype_t dt, ingot_ir_stmt_t** body, uint32_t* nb, int chains) {
  ingot_ir_func_t* f = ctx->f;
  int64_t len = t->len;
  if (len < 2 * chains) {
    uint32_t j = lower_add_var(ctx, "j", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    body[(*nb)++] = ingot_ir_local(f, acc, kind == LOWER_REDUCE_MAX ? t->at(t, ingot_ir_int(f, 0)) : ingot_ir_float(f, dt, 0.0));
    body[(*nb)++] =
        ingot_ir_for(f, j, len, ingot_ir_assign(f, acc, row_combine(f, kind, ingot_ir_var(f, acc), t->at(t, ingot_ir_var(f, j)))));
    return;
  }
  uint32_t part[LOWER_ROW_CHAINS_MAX];
  ingot_ir_stmt_t* step[LOWER_ROW_CHAINS_MAX];
  uint32_t jo = lower_add_var(ctx, "jo", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  int64_t blocks = len / chains;
  for (int c = 0; c < chains; ++c) {
    part[c] = lower_add_var(ctx, "part", INGOT_IR_VAR_LOCAL, dt);
    body[(*nb)++] = ingot_ir_local(f, part[c], t->at(t, ingot_ir_int(f, c)));
    /* j = (jo + 1) * chains + c */
    ingot_ir_expr_t* j = ingot_ir_add(
        f, ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_var(f, jo), ingot_ir_int(f, 1)), ingot_ir_int(f, chains)), ingot_ir_int(f, c));
    step[c] = ingot_ir_assign(f, part[c], row_combine(f, kind, ingot_ir_var(f, part[c]), t->at(t, j)));
  }
  body[(*nb)++] = ingot_ir_for(f, jo, blocks - 1, ingot_ir_block(f, step, chains));
  if (len % chains) {
    uint32_t jt = lower_add_var(ctx, "jt", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
    ingot_ir_expr_t* j = ingot_ir_add(f, ingot_ir_var(f, jt), ingot_ir_int(f, blocks * chains));
    body[(*nb)++] = ingot_ir_for(
        f, jt, len % chains, ingot_ir_assign(f, part[0], row_combine(f, kind, ingot_ir_var(f, part[0]), t->at(t, j))));
  }
  ingot_ir_expr_t* v[LOWER_ROW_CHAINS_MAX];
  for (int c = 0; c < chains; ++c) v[c] = ingot_ir_var(f, part[c]);
  for (int w = chains; w > 1; w /= 2)
    for (int c = 0; c < w / 2; ++c) v[c] = row_combine(f, kind, v[c], v[c + w / 2]);
  body[(*nb)++] = ingot_ir_local(f, acc, v[0]);
}

/* ---- index helpers ---- */

ingot_ir_expr_t* lower_broadcast_index(lower_ctx_t* ctx, uint32_t buffer, int32_t out_rank,
                                       ingot_ir_expr_t* const* out_idx) {
  const ingot_ir_buffer_t* b = &ctx->f->buffers[buffer];
  ingot_ir_expr_t* idx[INGOT_MAX_RANK];
  int32_t off = out_rank - b->rank;
  assert(off >= 0);
  for (int32_t i = 0; i < b->rank; ++i) idx[i] = b->dims[i] == 1 ? ingot_ir_int(ctx->f, 0) : out_idx[off + i];
  return ingot_ir_flat_index(ctx->f, buffer, idx);
}

ingot_ir_expr_t* lower_and(lower_ctx_t* ctx, ingot_ir_expr_t* a, ingot_ir_expr_t* b) {
  if (!a) return b;
  if (!b) return a;
  return ingot_ir_binary(ctx->f, INGOT_IR_AND, a, b);
}

void lower_window_axis(lower_ctx_t* ctx, ingot_ir_expr_t* o, ingot_ir_expr_t* r, int64_t stride, int64_t pad,
                       int64_t dilation, int64_t in_extent, int64_t out_extent, int64_t k, ingot_ir_expr_t** cond,
                       ingot_ir_expr_t** index) {
  ingot_ir_func_t* f = ctx->f;
  ingot_ir_expr_t* pos = ingot_ir_add(f, ingot_ir_mul(f, o, ingot_ir_int(f, stride)), ingot_ir_int(f, -pad));
  pos = ingot_ir_add(f, pos, ingot_ir_mul(f, r, ingot_ir_int(f, dilation)));
  int64_t lo = -pad;
  int64_t hi = (out_extent - 1) * stride - pad + (k - 1) * dilation;
  ingot_ir_expr_t* c = NULL;
  ingot_ir_expr_t* clamped = pos;
  if (lo < 0) {
    c = ingot_ir_binary(f, INGOT_IR_LE, ingot_ir_int(f, 0), pos);
    clamped = ingot_ir_binary(f, INGOT_IR_MAX, clamped, ingot_ir_int(f, 0));
  }
  if (hi >= in_extent) {
    c = lower_and(ctx, c, ingot_ir_binary(f, INGOT_IR_LT, pos, ingot_ir_int(f, in_extent)));
    clamped = ingot_ir_binary(f, INGOT_IR_MIN, clamped, ingot_ir_int(f, in_extent - 1));
  }
  *cond = c;
  *index = clamped;
}

/* ---- values ---- */

ingot_ir_expr_t* lower_f32(lower_ctx_t* ctx, double v) { return ingot_ir_float(ctx->f, INGOT_DTYPE_F32, v); }

ingot_ir_expr_t* lower_const(lower_ctx_t* ctx, ingot_dtype_t dtype, double v) {
  if (lower_dtype_is_float(dtype) || dtype == INGOT_DTYPE_F16) return ingot_ir_float(ctx->f, dtype, v);
  int64_t i;
  if (dtype == INGOT_DTYPE_BOOL) {
    i = v != 0.0;
  } else if (v != v) {
    i = 0;
  } else if (dtype == INGOT_DTYPE_U64 && v >= 9.2233720368547758e18) {
    i = v >= 1.8446744073709552e19 ? -1 : (int64_t)(uint64_t)v; /* the bits of the uint64 */
  } else if (v >= 9.2233720368547758e18) {
    i = INT64_MAX;
  } else if (v <= -9.2233720368547758e18) {
    i = INT64_MIN;
  } else {
    i = (int64_t)v;
  }
  switch (dtype) {
    case INGOT_DTYPE_I32: i = (int64_t)(int32_t)(uint32_t)(uint64_t)i; break;
    case INGOT_DTYPE_I8: i = (int64_t)(int8_t)(uint8_t)(uint64_t)i; break;
    case INGOT_DTYPE_U8: i = (int64_t)(uint8_t)(uint64_t)i; break;
    case INGOT_DTYPE_I16: i = (int64_t)(int16_t)(uint16_t)(uint64_t)i; break;
    case INGOT_DTYPE_U16: i = (int64_t)(uint16_t)(uint64_t)i; break;
    case INGOT_DTYPE_U32: i = (int64_t)(uint32_t)(uint64_t)i; break;
    default: break;
  }
  ingot_ir_expr_t* e = ingot_ir_int(ctx->f, i);
  e->dtype = dtype; /* a fresh node: typed integer constant */
  return e;
}

static bool weight_elem(const ingot_value_t* v, int64_t i, double* out_f, int64_t* out_i) {
  if (v->kind != INGOT_VALUE_WEIGHT || !v->data || v->rank < 0 || i < 0 || i >= ingot_value_numel(v)) return false;
  const void* d = v->data;
  switch (v->dtype) {
    case INGOT_DTYPE_F32: *out_f = ((const float*)d)[i]; *out_i = 0; return true;
    case INGOT_DTYPE_F64: *out_f = ((const double*)d)[i]; *out_i = 0; return true;
    case INGOT_DTYPE_I64: *out_i = ((const int64_t*)d)[i]; break;
    case INGOT_DTYPE_I32: *out_i = ((const int32_t*)d)[i]; break;
    case INGOT_DTYPE_I8: *out_i = ((const int8_t*)d)[i]; break;
    case INGOT_DTYPE_U8: *out_i = ((const uint8_t*)d)[i]; break;
    case INGOT_DTYPE_I16: *out_i = ((const int16_t*)d)[i]; break;
    case INGOT_DTYPE_U16: *out_i = ((const uint16_t*)d)[i]; break;
    case INGOT_DTYPE_U32: *out_i = ((const uint32_t*)d)[i]; break;
    case INGOT_DTYPE_U64: *out_i = (int64_t)((const uint64_t*)d)[i]; break;
    case INGOT_DTYPE_BOOL: *out_i = ((const uint8_t*)d)[i] != 0; break;
    default: return false;
  }
  *out_f = v->dtype == INGOT_DTYPE_U64 ? (double)(uint64_t)*out_i : (double)*out_i;
  return true;
}

bool lower_weight_scalar(const lower_ctx_t* ctx, uint32_t value, double* out) {
  if (value == INGOT_NO_VALUE || value >= ctx->graph->value_count) return false;
  const ingot_value_t* v = lower_value(ctx, value);
  if (v->rank < 0 || ingot_value_numel(v) != 1) return false;
  int64_t i;
  return weight_elem(v, 0, out, &i);
}

bool lower_weight_int(const lower_ctx_t* ctx, uint32_t value, int64_t i, int64_t* out) {
  if (value == INGOT_NO_VALUE || value >= ctx->graph->value_count) return false;
  double f;
  if (!weight_elem(lower_value(ctx, value), i, &f, out)) return false;
  if (lower_dtype_is_float(lower_value(ctx, value)->dtype)) {
    if (f != f || f >= 9.2233720368547758e18 || f <= -9.2233720368547758e18) return false;
    *out = (int64_t)f;
  }
  return true;
}

ingot_ir_expr_t* lower_gelu(lower_ctx_t* ctx, ingot_ir_expr_t* x, bool tanh_form) {
  ingot_ir_func_t* f = ctx->f;
  ingot_dtype_t t = x->dtype;
  ingot_ir_expr_t* inner;
  if (!tanh_form) {
    inner = ingot_ir_unary(f, INGOT_IR_ERF, ingot_ir_mul(f, x, lower_const(ctx, t, 0.70710678118654752440)));
  } else {
    ingot_ir_expr_t* cube = ingot_ir_mul(f, ingot_ir_mul(f, x, x), x);
    ingot_ir_expr_t* arg = ingot_ir_add(f, x, ingot_ir_mul(f, lower_const(ctx, t, 0.044715), cube));
    inner = ingot_ir_unary(f, INGOT_IR_TANH,
                           ingot_ir_mul(f, lower_const(ctx, t, 0.79788456080286535588), arg)); /* sqrt(2/pi) */
  }
  return ingot_ir_mul(f, ingot_ir_mul(f, lower_const(ctx, t, 0.5), x),
                      ingot_ir_add(f, lower_const(ctx, t, 1.0), inner));
}

bool lower_has_activation(const lower_ctx_t* ctx) { return ctx->node->epilogue.activation != INGOT_ACTIVATION_NONE; }

ingot_ir_expr_t* lower_activation(lower_ctx_t* ctx, ingot_ir_expr_t* v) {
  const ingot_epilogue_t* ep = &ctx->node->epilogue;
  switch (ep->activation) {
    case INGOT_ACTIVATION_NONE:
      return v;
    case INGOT_ACTIVATION_RELU:
      return ingot_ir_binary(ctx->f, INGOT_IR_MAX, v, lower_const(ctx, v->dtype, 0.0));
    case INGOT_ACTIVATION_CLIP:
      v = ingot_ir_binary(ctx->f, INGOT_IR_MAX, v, lower_const(ctx, v->dtype, ep->act_min));
      return ingot_ir_binary(ctx->f, INGOT_IR_MIN, v, lower_const(ctx, v->dtype, ep->act_max));
    case INGOT_ACTIVATION_GELU:
    case INGOT_ACTIVATION_GELU_TANH:
      return lower_gelu(ctx, v, ep->activation == INGOT_ACTIVATION_GELU_TANH);
  }
  return v;
}

const char* lower_activation_name(lower_ctx_t* ctx) {
  const ingot_epilogue_t* ep = &ctx->node->epilogue;
  switch (ep->activation) {
    case INGOT_ACTIVATION_NONE:
      return "none";
    case INGOT_ACTIVATION_RELU:
      return "relu";
    case INGOT_ACTIVATION_CLIP:
      return ingot_arena_printf(ctx->arena, "clip(%g,%g)", (double)ep->act_min, (double)ep->act_max);
    case INGOT_ACTIVATION_GELU:
      return "gelu";
    case INGOT_ACTIVATION_GELU_TANH:
      return "gelu_tanh";
  }
  return "?";
}

const char* lower_shape_str(lower_ctx_t* ctx, uint32_t value) {
  const ingot_value_t* v = lower_value(ctx, value);
  if (v->rank == 0) return "scalar";
  ingot_strbuf_t sb = {0};
  for (int32_t i = 0; i < v->rank; ++i) ingot_strbuf_appendf(&sb, "%s%lld", i ? "x" : "", (long long)v->dims[i]);
  const char* s = ingot_arena_strdup(ctx->arena, sb.data);
  ingot_strbuf_free(&sb);
  return s;
}

const char* lower_op_lower(lower_ctx_t* ctx) {
  const char* name = ingot_op_name(ctx->node->op);
  char* s = ingot_arena_strdup(ctx->arena, name ? name : "op");
  for (char* p = s; *p; ++p) *p = (char)tolower((unsigned char)*p);
  return s;
}

/* ---- the driver ---- */

static void ctx_release(lower_ctx_t* ctx) {
  INGOT_VEC_FREE(ctx->args);
  INGOT_VEC_FREE(ctx->stages);
  INGOT_VEC_FREE(ctx->body);
  ingot_ir_func_destroy(ctx->f);
  ctx->f = NULL;
}

ingot_status_t lower_node_into(const ingot_graph_t* graph, uint32_t node_id, ingot_lowered_t* lowered) {
  const ingot_node_t* node = &graph->nodes[node_id];
  lower_ctx_t ctx;
  memset(&ctx, 0, sizeof(ctx));
  ctx.graph = graph;
  ctx.node = node;
  ctx.node_id = node_id;
  ctx.arena = &lowered->arena;
  ctx.alias_of = lowered->alias_of;
  if ((unsigned)node->op >= INGOT_OP_COUNT_ || !kLowerers[node->op]) {
    return lower_fail(&ctx, INGOT_ERROR_UNSUPPORTED, "this op cannot be lowered%s",
                      node->op == INGOT_OP_CONSTANT ? " (constant folding should have made it a weight)" : "");
  }
  for (uint32_t i = 0; i < node->input_count; ++i) {
    if (node->inputs[i] != INGOT_NO_VALUE && node->inputs[i] >= graph->value_count) {
      return lower_fail(&ctx, INGOT_ERROR_INVALID_ARGUMENT, "input %u refers to no value", i);
    }
  }
  for (uint32_t i = 0; i < node->output_count; ++i) {
    if (node->outputs[i] != INGOT_NO_VALUE && node->outputs[i] >= graph->value_count) {
      return lower_fail(&ctx, INGOT_ERROR_INVALID_ARGUMENT, "output %u refers to no value", i);
    }
  }
  /* Typed parameters: as shape inference left them in node.params; a graph
   * whose shapes were set by hand (never inferred) gets them parsed here by
   * the same function (graph/params.c). */
  ingot_params_kind_t kind = ingot_op_params_kind(node->op);
  if (kind != INGOT_PARAMS_NONE && node->params.kind == kind) {
    ctx.params = &node->params;
  } else {
    ingot_status_t ps = ingot_graph_node_params(graph, node_id, &ctx.params_local);
    if (ps) return ps;
    ctx.params = &ctx.params_local;
  }
  /* Parts of a fused epilogue that only some lowerings apply. */
  if ((node->epilogue.residual_input && node->op != INGOT_OP_CONV && node->op != INGOT_OP_CONV_BLOCKED &&
       node->op != INGOT_OP_MATMUL) ||
      (node->epilogue.output_padded && node->op != INGOT_OP_CONV && node->op != INGOT_OP_CONV_BLOCKED &&
       !(node->op == INGOT_OP_CONVINTEGER && node->epilogue.requant_input))) {
    return lower_fail(&ctx, INGOT_ERROR_UNSUPPORTED, "a fused residual or padded output on this op is not supported");
  }
  if (node->epilogue.bias_input && node->op != INGOT_OP_MATMUL)
    return lower_fail(&ctx, INGOT_ERROR_UNSUPPORTED, "a fused bias on this op is not supported");
  if (node->epilogue.requant_input && node->op != INGOT_OP_CONVINTEGER)
    return lower_fail(&ctx, INGOT_ERROR_UNSUPPORTED, "a fused requantization on this op is not supported");
  /* A node whose outputs are all empty (a zero-size dimension) has nothing
   * to write: no kernel. */
  bool all_empty = node->output_count > 0;
  for (uint32_t i = 0; i < node->output_count && all_empty; ++i) {
    uint32_t o = node->outputs[i];
    all_empty = o == INGOT_NO_VALUE || (graph->values[o].rank > 0 && ingot_value_numel(&graph->values[o]) == 0);
  }
  if (all_empty) return INGOT_OK;
  ctx.f = ingot_ir_func_create(ingot_arena_printf(ctx.arena, "%s_%u", lower_op_lower(&ctx), node_id));
  ingot_status_t status = kLowerers[node->op](&ctx);
  if (status != INGOT_OK || ctx.no_kernel) {
    ctx_release(&ctx);
    return status;
  }
  ctx.f->body = ingot_ir_block(ctx.f, ctx.body.data, (uint32_t)ctx.body.count);
  ingot_kernel_t* k = &lowered->kernels[lowered->kernel_count++];
  memset(k, 0, sizeof(*k));
  k->func = ctx.f;
  k->node = node_id;
  k->arg_count = (uint32_t)ctx.args.count;
  k->args = INGOT_ARENA_ARRAY(ctx.arena, uint32_t, ctx.args.count ? ctx.args.count : 1);
  if (ctx.args.count) memcpy(k->args, ctx.args.data, sizeof(uint32_t) * ctx.args.count);
  k->op_class = ctx.op_class;
  k->stage_count = (uint32_t)ctx.stages.count;
  k->stages = INGOT_ARENA_ARRAY(ctx.arena, ingot_stage_t, ctx.stages.count ? ctx.stages.count : 1);
  if (ctx.stages.count) memcpy(k->stages, ctx.stages.data, sizeof(ingot_stage_t) * ctx.stages.count);
  k->workload = ctx.workload ? ctx.workload : ingot_arena_strdup(ctx.arena, ctx.f->name);
  ingot_node_layout_options(graph, node, &k->layout_options);
  ingot_node_layout_resolve(graph, node, &k->layout);
  k->layout.pack = node->weight_block != 0;
  if (node->weight_block) k->layout.panel = node->weight_block;
  ctx.f = NULL; /* now owned by the kernel */
  ctx_release(&ctx);
  return INGOT_OK;
}

ingot_status_t ingot_lower_graph(const ingot_graph_t* graph, ingot_lowered_t** out_lowered) {
  if (!out_lowered) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_lower_graph: out_lowered is NULL");
  *out_lowered = NULL;
  if (!graph) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_lower_graph: graph is NULL");
  ingot_lowered_t* lowered = ingot_xcalloc(1, sizeof(*lowered));
  ingot_arena_init(&lowered->arena, ingot_allocator_system());
  lowered->value_count = graph->value_count;
  lowered->alias_of = INGOT_ARENA_ARRAY(&lowered->arena, uint32_t, graph->value_count ? graph->value_count : 1);
  for (uint32_t i = 0; i < graph->value_count; ++i) lowered->alias_of[i] = INGOT_NO_VALUE;
  lowered->kernels = INGOT_ARENA_ARRAY(&lowered->arena, ingot_kernel_t, graph->node_count ? graph->node_count : 1);
  for (uint32_t n = 0; n < graph->node_count; ++n) {
    if (graph->nodes[n].dead) continue;
    ingot_status_t status = lower_node_into(graph, n, lowered);
    if (status != INGOT_OK) {
      ingot_lowered_destroy(lowered);
      return status;
    }
  }
  *out_lowered = lowered;
  return INGOT_OK;
}

ingot_status_t ingot_lower_node(const ingot_graph_t* graph, uint32_t node, ingot_lowered_t** out_lowered) {
  if (!out_lowered) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_lower_node: out_lowered is NULL");
  *out_lowered = NULL;
  if (!graph || node >= graph->node_count)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_lower_node: no graph or node %u out of range", node);
  ingot_lowered_t* lowered = ingot_xcalloc(1, sizeof(*lowered));
  ingot_arena_init(&lowered->arena, ingot_allocator_system());
  lowered->value_count = graph->value_count;
  lowered->alias_of = INGOT_ARENA_ARRAY(&lowered->arena, uint32_t, graph->value_count ? graph->value_count : 1);
  for (uint32_t i = 0; i < graph->value_count; ++i) lowered->alias_of[i] = INGOT_NO_VALUE;
  lowered->kernels = INGOT_ARENA_ARRAY(&lowered->arena, ingot_kernel_t, 1);
  ingot_status_t status = lower_node_into(graph, node, lowered);
  if (status != INGOT_OK) {
    ingot_lowered_destroy(lowered);
    return status;
  }
  *out_lowered = lowered;
  return INGOT_OK;
}

void ingot_lowered_destroy(ingot_lowered_t* lowered) {
  if (!lowered) return;
  for (uint32_t i = 0; i < lowered->kernel_count; ++i) ingot_ir_func_destroy(lowered->kernels[i].func);
  ingot_arena_deinit(&lowered->arena);
  free(lowered);
}
