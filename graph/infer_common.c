/* Helpers shared by the shape inference files (see infer_internal.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "infer_internal.h"

ingot_status_t infer_fail(const ingot_node_t* n, ingot_status_t code, const char* fmt, ...) {
  char msg[1024];
  va_list args;
  va_start(args, fmt);
  vsnprintf(msg, sizeof(msg), fmt, args);
  va_end(args);
  return ingot_fail(code, "node '%s' (%s): %s", n->name, ingot_op_name(n->op), msg);
}


/* Input i, or NULL when absent. */
ingot_value_t* infer_input(const infer_ctx_t* c, uint32_t i) {
  if (i >= c->n->input_count || c->n->inputs[i] == INGOT_NO_VALUE) return NULL;
  return &c->g->values[c->n->inputs[i]];
}

void infer_set_output(const infer_ctx_t* c, uint32_t k, ingot_dtype_t dtype, int32_t rank, const int64_t* dims) {
  if (k >= c->n->output_count || c->n->outputs[k] == INGOT_NO_VALUE) return;
  ingot_value_t* v = &c->g->values[c->n->outputs[k]];
  v->dtype = dtype;
  v->rank = rank;
  for (int32_t i = 0; i < (int32_t)INGOT_MAX_RANK; ++i) {
    v->dims[i] = i < rank ? dims[i] : 0;
    v->dim_names[i] = NULL;
  }
}

void infer_copy_output(const infer_ctx_t* c, uint32_t k, const ingot_value_t* from) {
  infer_set_output(c, k, from->dtype, from->rank, from->dims);
}

bool infer_is_float(ingot_dtype_t t) {
  return t == INGOT_DTYPE_F32 || t == INGOT_DTYPE_F16 || t == INGOT_DTYPE_F64;
}

void infer_shape_str(const ingot_value_t* v, char* buf, size_t size) {
  size_t used = 0;
  used += (size_t)snprintf(buf + used, size - used, "[");
  for (int32_t i = 0; i < v->rank && used < size; ++i) {
    used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? "x" : "", (long long)v->dims[i]);
  }
  if (used < size) snprintf(buf + used, size - used, "]");
}

/* Normalizes an axis attribute into [0, rank) (or [0, rank] when `inclusive`). */
ingot_status_t infer_norm_axis(const infer_ctx_t* c, int64_t axis, int32_t rank, bool inclusive, int64_t* out) {
  int64_t hi = inclusive ? rank : rank - 1;
  if (axis < -(int64_t)rank || axis > hi) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "axis %lld is out of range for rank %d",
                     (long long)axis, rank);
  }
  *out = axis < 0 ? axis + rank : axis;
  return INGOT_OK;
}

void infer_ensure_output(infer_ctx_t* c, uint32_t k, const char* suffix) {
  ingot_node_t* n = &c->g->nodes[c->id];
  if (k < n->output_count && n->outputs[k] != INGOT_NO_VALUE) return;
  uint32_t count = n->output_count > k + 1 ? n->output_count : k + 1;
  uint32_t* outs = INGOT_ARENA_ARRAY(&c->g->arena, uint32_t, count);
  for (uint32_t i = 0; i < count; ++i) outs[i] = i < n->output_count ? n->outputs[i] : INGOT_NO_VALUE;
  char base[256];
  snprintf(base, sizeof(base), "%s_%s", n->name, suffix);
  const char* name = ingot_graph_unique_name(c->g, base);
  uint32_t id = ingot_graph_add_value(c->g, name, INGOT_VALUE_INTERMEDIATE);
  c->g->values[id].producer = c->id;
  n = &c->g->nodes[c->id];
  outs[k] = id;
  n->outputs = outs;
  n->output_count = count;
  c->n = n;
}

void infer_runtime_shape(infer_ctx_t* c, uint32_t k, uint32_t shape_k, const char* suffix, uint32_t dims) {
  infer_ensure_output(c, shape_k, suffix);
  const ingot_value_t* y = &c->g->values[c->n->outputs[k]];
  int64_t rank = y->rank;
  infer_set_output(c, shape_k, INGOT_DTYPE_I64, 1, &rank);
  c->g->values[c->n->outputs[k]].runtime_shape = c->n->outputs[shape_k] + 1;
  c->g->values[c->n->outputs[k]].runtime_dims = dims;
}
