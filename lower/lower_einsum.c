/* Einsum from the canonical equation that shape inference writes (explicit,
 * no ellipsis: "bij,bjk->bik"; see graph/infer_nn.c). Output letters are the
 * spatial loops, letters only on the left are reduce loops:
 *
 *   INIT    y[out..] = 0
 *   UPDATE  y[out..] += x0[..] * x1[..] * ...     (contraction)
 * or, with nothing summed, one PURE stage y[out..] = x0[..] * x1[..] ...
 *
 * A letter repeated in one operand reads its diagonal; an operand axis of
 * size 1 where the letter is larger broadcasts (reads index 0). */
#include <string.h>

#include "lower_internal.h"

static int letter_index(char ch) {
  if (ch >= 'a' && ch <= 'z') return ch - 'a';
  if (ch >= 'A' && ch <= 'Z') return 26 + (ch - 'A');
  return -1;
}

#define EINSUM_MAX_OPERANDS 8

ingot_status_t lower_einsum(lower_ctx_t* ctx) {
  const ingot_node_t* node = ctx->node;
  uint32_t y = node->output_count ? node->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  if ((s = lower_refuse_activation(ctx))) return s;
  if ((s = lower_check_value(ctx, y, false))) return s;
  const ingot_value_t* yv = lower_value(ctx, y);
  ingot_dtype_t dt = yv->dtype;
  if (dt != INGOT_DTYPE_F32 && dt != INGOT_DTYPE_F64 && dt != INGOT_DTYPE_I32 && dt != INGOT_DTYPE_I64) {
    return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "dtype %s is not supported", ingot_dtype_name(dt));
  }
  const char* eq = ingot_node_attr_string(node, "equation", "");
  const char* arrow = strstr(eq, "->");
  if (!arrow || strstr(eq, "...")) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "equation '%s' is not canonical (shape inference has not run)",
                      eq);
  }
  uint32_t nin = node->input_count;
  if (nin > EINSUM_MAX_OPERANDS) return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "too many operands");
  const char* terms[EINSUM_MAX_OPERANDS];
  size_t term_len[EINSUM_MAX_OPERANDS];
  uint32_t nt = 0;
  const char* p = eq;
  while (p <= arrow && nt < EINSUM_MAX_OPERANDS) {
    const char* end = p;
    while (end < arrow && *end != ',') ++end;
    terms[nt] = p;
    term_len[nt++] = (size_t)(end - p);
    p = end + 1;
    if (end == arrow) break;
  }
  if (nt != nin) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "equation '%s' does not fit %u inputs", eq, nin);
  const char* out = arrow + 2;
  size_t out_len = strlen(out);
  if ((int32_t)out_len != yv->rank) {
    return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "equation '%s' does not fit the output rank %d", eq, yv->rank);
  }
  int64_t size[52];
  int role[52]; /* 0 unused, 1 output (spatial), 2 summed */
  for (int i = 0; i < 52; ++i) size[i] = -1, role[i] = 0;
  for (uint32_t t = 0; t < nin; ++t) {
    uint32_t v = lower_input(ctx, t);
    if ((s = lower_check_value(ctx, v, false))) return s;
    const ingot_value_t* xv = lower_value(ctx, v);
    if (xv->dtype != dt || (size_t)xv->rank != term_len[t]) {
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "operand %u does not fit equation '%s'", t, eq);
    }
    for (size_t k = 0; k < term_len[t]; ++k) {
      int li = letter_index(terms[t][k]);
      if (li < 0) return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "equation '%s': bad letter", eq);
      if (size[li] < 0 || size[li] == 1) size[li] = xv->dims[k];
      role[li] = 2;
    }
  }
  for (size_t k = 0; k < out_len; ++k) {
    int li = letter_index(out[k]);
    if (li < 0 || size[li] < 0 || size[li] != yv->dims[k]) {
      return lower_fail(ctx, INGOT_ERROR_INVALID_ARGUMENT, "equation '%s' does not fit the output shape %s", eq,
                        lower_shape_str(ctx, y));
    }
    role[li] = 1;
  }
  uint32_t bufs[EINSUM_MAX_OPERANDS];
  static const char* const kNames[EINSUM_MAX_OPERANDS] = {"a", "b", "c", "d", "e", "f", "g", "h"};
  for (uint32_t t = 0; t < nin; ++t) bufs[t] = lower_add_input(ctx, lower_input(ctx, t), kNames[t]);
  uint32_t by = lower_add_output(ctx, y, "y");
  ingot_ir_func_t* f = ctx->f;
  /* Loops: output letters in output order, summed letters alphabetically. */
  char snames[INGOT_MAX_STAGE_AXES][3], rnames[INGOT_MAX_STAGE_AXES][4];
  const char* sn[INGOT_MAX_STAGE_AXES];
  const char* rn[INGOT_MAX_STAGE_AXES];
  int64_t sext[INGOT_MAX_STAGE_AXES], rext[INGOT_MAX_STAGE_AXES];
  int sl[INGOT_MAX_STAGE_AXES], rl[INGOT_MAX_STAGE_AXES];
  uint32_t ns = 0, nr = 0;
  for (size_t k = 0; k < out_len; ++k) {
    int li = letter_index(out[k]);
    snames[ns][0] = out[k], snames[ns][1] = '\0';
    sn[ns] = snames[ns];
    sext[ns] = size[li];
    sl[ns++] = li;
  }
  for (int li = 0; li < 52; ++li) {
    if (role[li] != 2) continue;
    if (nr >= INGOT_MAX_STAGE_AXES) return lower_fail(ctx, INGOT_ERROR_UNSUPPORTED, "too many summed axes");
    rnames[nr][0] = 'r', rnames[nr][1] = li < 26 ? (char)('a' + li) : (char)('A' + li - 26), rnames[nr][2] = '\0';
    rn[nr] = rnames[nr];
    rext[nr] = size[li];
    rl[nr++] = li;
  }
  lower_loops_t sp, red;
  ingot_ir_expr_t* letter_idx[52] = {NULL};
  if (nr > 0) {
    lower_loops_make(ctx, &sp, ns, sext, sn);
    lower_emit_stage(ctx, INGOT_STAGE_INIT, &sp, NULL,
                     ingot_ir_store(f, by, ingot_ir_flat_index(f, by, sp.idx),
                                    dt == INGOT_DTYPE_F32 || dt == INGOT_DTYPE_F64
                                        ? ingot_ir_float(f, dt, 0.0)
                                        : (dt == INGOT_DTYPE_I64 ? ingot_ir_int(f, 0)
                                                                 : ingot_ir_cast(f, dt, ingot_ir_int(f, 0)))));
  }
  lower_loops_make(ctx, &sp, ns, sext, sn);
  lower_loops_make(ctx, &red, nr, rext, rn);
  for (uint32_t i = 0; i < ns; ++i) letter_idx[sl[i]] = sp.idx[i];
  for (uint32_t i = 0; i < nr; ++i) letter_idx[rl[i]] = red.idx[i];
  ingot_ir_expr_t* prod = NULL;
  for (uint32_t t = 0; t < nin; ++t) {
    const ingot_ir_buffer_t* b = &f->buffers[bufs[t]];
    ingot_ir_expr_t* idx[INGOT_MAX_RANK];
    for (size_t k = 0; k < term_len[t]; ++k) {
      int li = letter_index(terms[t][k]);
      idx[k] = b->dims[k] == 1 ? ingot_ir_int(f, 0) : letter_idx[li];
    }
    ingot_ir_expr_t* v = ingot_ir_load(f, bufs[t], ingot_ir_flat_index(f, bufs[t], idx));
    prod = prod ? ingot_ir_mul(f, prod, v) : v;
  }
  ingot_ir_expr_t* yi = ingot_ir_flat_index(f, by, sp.idx);
  if (nr > 0) {
    lower_emit_stage(ctx, INGOT_STAGE_UPDATE, &sp, &red, ingot_ir_store(f, by, yi, ingot_ir_add(f, ingot_ir_load(f, by, yi), prod)));
    ctx->op_class = INGOT_OP_CLASS_CONTRACTION;
  } else {
    lower_emit_stage(ctx, INGOT_STAGE_PURE, &sp, NULL, ingot_ir_store(f, by, yi, prod));
    ctx->op_class = INGOT_OP_CLASS_INJECTIVE;
  }
  ingot_strbuf_t sb = {0};
  ingot_strbuf_appendf(&sb, "einsum %s %s", ingot_dtype_name(dt), eq);
  for (uint32_t t = 0; t < nin; ++t) ingot_strbuf_appendf(&sb, " %s", lower_shape_str(ctx, lower_input(ctx, t)));
  ctx->workload = ingot_arena_strdup(ctx->arena, sb.data);
  ingot_strbuf_free(&sb);
  return INGOT_OK;
}
