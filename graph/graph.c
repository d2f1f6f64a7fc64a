/* The graph IR: creation, values, nodes, attributes, the op table, input
 * shapes and the printer. Shape inference lives in shape_infer.c, passes in
 * passes.c. */
#include "graph/graph.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

/* ---- the op table, generated from ops.def ---- */

typedef struct op_info_t {
  const char* name;
  int min_inputs, max_inputs, min_outputs, max_outputs;
} op_info_t;

static const op_info_t kOps[] = {
#define INGOT_OP(id, name, min_in, max_in, min_out, max_out, infer, lower) {name, min_in, max_in, min_out, max_out},
#include "graph/ops.def"
};
static_assert(sizeof(kOps) / sizeof(kOps[0]) == INGOT_OP_COUNT_, "op table out of sync with ops.def");
#define INGOT_OP(id, name, min_in, max_in, min_out, max_out, infer, lower)             \
  static_assert(max_in <= INGOT_NODE_INPUTS_MAX && max_out <= INGOT_NODE_OUTPUTS_MAX, \
                name " takes more inputs or outputs than INGOT_NODE_*_MAX");
#include "graph/ops.def"

const char* ingot_op_name(ingot_op_t op) {
  if ((unsigned)op >= INGOT_OP_COUNT_) return NULL;
  return kOps[op].name;
}

const char* ingot_op_domain(ingot_op_t op) {
  switch (op) {
#define INGOT_OP(id, name, min_in, max_in, min_out, max_out, infer, lower)
#define INGOT_OP_DOMAIN(id, domain) \
  case INGOT_OP_##id:               \
    return domain;
#include "graph/ops.def"
    default:
      return "";
  }
}

ingot_op_t ingot_op_from_domain_name(const char* domain, const char* onnx_name) {
  if (!onnx_name) return INGOT_OP_COUNT_;
  if (!domain || strcmp(domain, "ai.onnx") == 0) domain = "";
  for (int i = 0; i < INGOT_OP_COUNT_; ++i) {
    if (strcmp(kOps[i].name, onnx_name) == 0 && strcmp(ingot_op_domain((ingot_op_t)i), domain) == 0) {
      return (ingot_op_t)i;
    }
  }
  return INGOT_OP_COUNT_;
}

ingot_op_t ingot_op_from_name(const char* onnx_name) { return ingot_op_from_domain_name("", onnx_name); }

void ingot_op_arity(ingot_op_t op, int* out_min_inputs, int* out_max_inputs, int* out_min_outputs,
                    int* out_max_outputs) {
  op_info_t info = {0};
  if ((unsigned)op < INGOT_OP_COUNT_) info = kOps[op];
  if (out_min_inputs) *out_min_inputs = info.min_inputs;
  if (out_max_inputs) *out_max_inputs = info.max_inputs;
  if (out_min_outputs) *out_min_outputs = info.min_outputs;
  if (out_max_outputs) *out_max_outputs = info.max_outputs;
}

/* ---- dtypes: the runtime's public table is the one definition ---- */

size_t ingot_graph_dtype_size(ingot_dtype_t dtype) { return ingot_dtype_size(dtype); }
const char* ingot_graph_dtype_name(ingot_dtype_t dtype) { return ingot_dtype_name(dtype); }

/* ---- create / destroy ---- */

ingot_status_t ingot_graph_create(ingot_graph_t** out_graph) {
  if (!out_graph) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_graph_create: out_graph is NULL");
  *out_graph = NULL;
  ingot_graph_t* g = ingot_xcalloc(1, sizeof(*g));
  ingot_arena_init(&g->arena, ingot_allocator_system());
  g->opset = 0;
  g->name = "";
  g->producer_name = "";
  g->producer_version = "";
  *out_graph = g;
  return INGOT_OK;
}

void ingot_graph_destroy(ingot_graph_t* graph) {
  if (!graph) return;
  for (uint32_t i = 0; i < graph->child_count; ++i) ingot_graph_destroy(graph->children[i]);
  free(graph->children);
  for (uint32_t i = 0; i < graph->value_count; ++i) free(graph->values[i].data);
  free(graph->values);
  free(graph->nodes);
  ingot_arena_deinit(&graph->arena);
  free(graph);
}

void ingot_graph_adopt(ingot_graph_t* graph, ingot_graph_t* child) {
  if (graph->child_count == graph->child_cap) {
    graph->child_cap = graph->child_cap ? graph->child_cap * 2 : 4;
    graph->children = ingot_xrealloc(graph->children, sizeof(ingot_graph_t*) * graph->child_cap);
  }
  graph->children[graph->child_count++] = child;
}

/* ---- values and nodes ---- */

uint32_t ingot_graph_add_value(ingot_graph_t* graph, const char* name, ingot_value_kind_t kind) {
  if (graph->value_count == graph->value_cap) {
    uint32_t cap = graph->value_cap ? graph->value_cap * 2 : 64;
    graph->values = ingot_xrealloc(graph->values, sizeof(ingot_value_t) * cap);
    graph->value_cap = cap;
  }
  uint32_t id = graph->value_count++;
  ingot_value_t* v = &graph->values[id];
  memset(v, 0, sizeof(*v));
  v->name = ingot_arena_strdup(&graph->arena, name ? name : "");
  v->kind = kind;
  v->dtype = INGOT_DTYPE_INVALID;
  v->rank = -1;
  v->producer = INGOT_NO_VALUE;
  return id;
}

uint32_t ingot_graph_add_node(ingot_graph_t* graph, ingot_op_t op, const char* name,
                              const uint32_t* inputs, uint32_t input_count,
                              const uint32_t* outputs, uint32_t output_count) {
  if (graph->node_count == graph->node_cap) {
    uint32_t cap = graph->node_cap ? graph->node_cap * 2 : 64;
    graph->nodes = ingot_xrealloc(graph->nodes, sizeof(ingot_node_t) * cap);
    graph->node_cap = cap;
  }
  uint32_t id = graph->node_count++;
  ingot_node_t* n = &graph->nodes[id];
  memset(n, 0, sizeof(*n));
  n->op = op;
  if (name && name[0]) {
    n->name = ingot_arena_strdup(&graph->arena, name);
  } else {
    const char* op_name = ingot_op_name(op);
    n->name = ingot_arena_printf(&graph->arena, "%s_%u", op_name ? op_name : "op", id);
  }
  n->inputs = INGOT_ARENA_ARRAY(&graph->arena, uint32_t, input_count ? input_count : 1);
  if (input_count) memcpy(n->inputs, inputs, sizeof(uint32_t) * input_count);
  n->input_count = input_count;
  n->outputs = INGOT_ARENA_ARRAY(&graph->arena, uint32_t, output_count ? output_count : 1);
  if (output_count) memcpy(n->outputs, outputs, sizeof(uint32_t) * output_count);
  n->output_count = output_count;
  for (uint32_t i = 0; i < output_count; ++i) {
    if (outputs[i] < graph->value_count) graph->values[outputs[i]].producer = id;
  }
  return id;
}

const char* ingot_graph_unique_name(ingot_graph_t* graph, const char* base) {
  if (!base || !base[0]) base = "v";
  if (ingot_graph_find_value(graph, base) == INGOT_NO_VALUE) {
    return ingot_arena_strdup(&graph->arena, base);
  }
  for (uint32_t k = 1;; ++k) {
    char* candidate = ingot_arena_printf(&graph->arena, "%s_%u", base, k);
    if (ingot_graph_find_value(graph, candidate) == INGOT_NO_VALUE) return candidate;
  }
}

uint32_t ingot_graph_find_value(const ingot_graph_t* graph, const char* name) {
  if (!name) return INGOT_NO_VALUE;
  for (uint32_t i = 0; i < graph->value_count; ++i) {
    if (strcmp(graph->values[i].name, name) == 0) return i;
  }
  return INGOT_NO_VALUE;
}

int64_t ingot_value_numel(const ingot_value_t* value) {
  if (value->rank < 0) return -1;
  int64_t n = 1;
  for (int32_t i = 0; i < value->rank; ++i) {
    if (value->dims[i] < 0) return -1;
    if (value->dims[i] != 0 && n > INT64_MAX / value->dims[i]) return -1;
    n *= value->dims[i];
  }
  return n;
}

uint64_t ingot_value_bytes(const ingot_value_t* value) {
  int64_t n = ingot_value_numel(value);
  if (n < 0) return 0;
  uint64_t bytes;
  if (!ingot_mul_u64((uint64_t)n, ingot_graph_dtype_size(value->dtype), &bytes)) return 0;
  return bytes;
}

const float* ingot_value_f32(const ingot_graph_t* graph, uint32_t value) {
  if (value >= graph->value_count) return NULL;
  const ingot_value_t* v = &graph->values[value];
  if (v->kind != INGOT_VALUE_WEIGHT || v->dtype != INGOT_DTYPE_F32) return NULL;
  return (const float*)v->data;
}

void ingot_graph_set_weight(ingot_graph_t* graph, uint32_t value, ingot_dtype_t dtype, int32_t rank,
                            const int64_t* dims, void* data) {
  ingot_value_t* v = &graph->values[value];
  if (v->data != data) free(v->data);
  v->kind = INGOT_VALUE_WEIGHT;
  v->dtype = dtype;
  v->rank = rank;
  for (int32_t i = 0; i < rank; ++i) {
    v->dims[i] = dims[i];
    v->dim_names[i] = NULL;
  }
  v->data = data;
  v->producer = INGOT_NO_VALUE;
}

/* ---- attributes ---- */

const ingot_attr_t* ingot_node_attr(const ingot_node_t* node, const char* name) {
  for (uint32_t i = 0; i < node->attr_count; ++i) {
    if (strcmp(node->attrs[i].name, name) == 0) return &node->attrs[i];
  }
  return NULL;
}

int64_t ingot_node_attr_int(const ingot_node_t* node, const char* name, int64_t fallback) {
  const ingot_attr_t* a = ingot_node_attr(node, name);
  return a && a->type == INGOT_ATTR_INT ? a->i : fallback;
}

float ingot_node_attr_float(const ingot_node_t* node, const char* name, float fallback) {
  const ingot_attr_t* a = ingot_node_attr(node, name);
  if (!a) return fallback;
  if (a->type == INGOT_ATTR_FLOAT) return a->f;
  if (a->type == INGOT_ATTR_INT) return (float)a->i;
  return fallback;
}

const char* ingot_node_attr_string(const ingot_node_t* node, const char* name, const char* fallback) {
  const ingot_attr_t* a = ingot_node_attr(node, name);
  return a && a->type == INGOT_ATTR_STRING && a->s ? a->s : fallback;
}

const int64_t* ingot_node_attr_ints(const ingot_node_t* node, const char* name, uint32_t* out_count) {
  const ingot_attr_t* a = ingot_node_attr(node, name);
  if (!a || a->type != INGOT_ATTR_INTS) {
    if (out_count) *out_count = 0;
    return NULL;
  }
  if (out_count) *out_count = a->count;
  return a->ints;
}

ingot_attr_t* ingot_graph_node_add_attr(ingot_graph_t* graph, uint32_t node_id, const char* name,
                                        ingot_attr_type_t type) {
  ingot_node_t* node = &graph->nodes[node_id];
  for (uint32_t i = 0; i < node->attr_count; ++i) {
    if (strcmp(node->attrs[i].name, name) == 0) {
      ingot_attr_t* a = &node->attrs[i];
      memset(a, 0, sizeof(*a));
      a->name = ingot_arena_strdup(&graph->arena, name);
      a->type = type;
      a->tensor = INGOT_NO_VALUE;
      return a;
    }
  }
  ingot_attr_t* attrs = INGOT_ARENA_ARRAY(&graph->arena, ingot_attr_t, node->attr_count + 1);
  if (node->attr_count) memcpy(attrs, node->attrs, sizeof(ingot_attr_t) * node->attr_count);
  node->attrs = attrs;
  ingot_attr_t* a = &attrs[node->attr_count++];
  a->name = ingot_arena_strdup(&graph->arena, name);
  a->type = type;
  a->tensor = INGOT_NO_VALUE;
  return a;
}

void ingot_graph_node_set_ints(ingot_graph_t* graph, uint32_t node_id, const char* name,
                               const int64_t* ints, uint32_t count) {
  ingot_attr_t* a = ingot_graph_node_add_attr(graph, node_id, name, INGOT_ATTR_INTS);
  a->ints = INGOT_ARENA_ARRAY(&graph->arena, int64_t, count ? count : 1);
  if (count) memcpy(a->ints, ints, sizeof(int64_t) * count);
  a->count = count;
}

/* ---- input shapes ---- */

static bool parse_dim(const char** p, int64_t* out) {
  const char* s = *p;
  if (*s < '0' || *s > '9') return false;
  int64_t d = 0;
  while (*s >= '0' && *s <= '9') {
    if (d > (INT64_MAX - 9) / 10) return false;
    d = d * 10 + (*s - '0');
    ++s;
  }
  *out = d;
  *p = s;
  return true;
}

bool ingot_graph_dims_parse_ranges(const char* s, int32_t* out_rank, int64_t* lo, int64_t* hi) {
  int32_t rank = 0;
  if (*s == '\0') {  /* "name=" : a scalar */
    *out_rank = 0;
    return true;
  }
  for (;;) {
    int64_t a, b;
    if (!parse_dim(&s, &a)) return false;
    b = a;
    if (s[0] == '.' && s[1] == '.') {
      s += 2;
      if (!parse_dim(&s, &b)) return false;
    }
    if (rank >= (int32_t)INGOT_MAX_RANK) return false;
    lo[rank] = a;
    hi[rank++] = b;
    if (*s == '\0') break;
    if (*s != 'x' && *s != 'X' && *s != ',') return false;
    ++s;
  }
  *out_rank = rank;
  return true;
}

bool ingot_graph_dims_parse(const char* s, int32_t* out_rank, int64_t* dims) {
  int64_t lo[INGOT_MAX_RANK];
  if (!ingot_graph_dims_parse_ranges(s, out_rank, lo, dims)) return false;
  for (int32_t i = 0; i < *out_rank; ++i)
    if (lo[i] != dims[i]) return false;
  return true;
}

ingot_status_t ingot_graph_set_input_shape(ingot_graph_t* graph, const char* spec) {
  if (!spec) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "--input-shape: empty specification");
  const char* eq = strrchr(spec, '=');
  if (!eq || eq == spec) {
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                      "--input-shape '%s': expected NAME=D0xD1x..., e.g. input=1x3x224x224", spec);
  }
  size_t name_len = (size_t)(eq - spec);
  char* name = ingot_xmalloc(name_len + 1);
  memcpy(name, spec, name_len);
  name[name_len] = '\0';
  int64_t dims[INGOT_MAX_RANK], lo[INGOT_MAX_RANK];
  int32_t rank = 0;
  if (!ingot_graph_dims_parse_ranges(eq + 1, &rank, lo, dims)) {
    ingot_status_t s = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                                  "--input-shape '%s': '%s' is not a list of dimensions like 1x3x224x224 "
                                  "or 1x1..128 (at most %u)",
                                  spec, eq + 1, INGOT_MAX_RANK);
    free(name);
    return s;
  }
  for (int32_t i = 0; i < rank; ++i) {
    if (lo[i] > dims[i] || (lo[i] < 1 && lo[i] != dims[i])) {
      ingot_status_t s = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                                    "--input-shape '%s': the range %lld..%lld of dimension %d is empty or starts "
                                    "below 1",
                                    spec, (long long)lo[i], (long long)dims[i], i);
      free(name);
      return s;
    }
  }
  uint32_t id = INGOT_NO_VALUE;
  for (uint32_t i = 0; i < graph->input_count; ++i) {
    if (strcmp(graph->values[graph->inputs[i]].name, name) == 0) id = graph->inputs[i];
  }
  if (id == INGOT_NO_VALUE) {
    ingot_strbuf_t known = {0};
    for (uint32_t i = 0; i < graph->input_count; ++i) {
      ingot_strbuf_appendf(&known, "%s'%s'", i ? ", " : "", graph->values[graph->inputs[i]].name);
    }
    ingot_status_t s = ingot_fail(INGOT_ERROR_NOT_FOUND, "--input-shape: the model has no input '%s' (inputs: %s)",
                                  name, known.data ? known.data : "none");
    ingot_strbuf_free(&known);
    free(name);
    return s;
  }
  free(name);
  ingot_value_t* v = &graph->values[id];
  if (v->rank >= 0 && v->rank != rank) {
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "--input-shape: input '%s' has rank %d, the shape given has rank %d",
                      v->name, v->rank, rank);
  }
  if (v->rank >= 0) {
    for (int32_t i = 0; i < rank; ++i) {
      if (v->dims[i] >= 0 && lo[i] != dims[i]) {
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                          "--input-shape: input '%s' has dimension %d fixed to %lld by the model, not a range",
                          v->name, i, (long long)v->dims[i]);
      }
      if (v->dims[i] >= 0 && v->dims[i] != dims[i]) {
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                          "--input-shape: input '%s' has dimension %d fixed to %lld by the model, not %lld",
                          v->name, i, (long long)v->dims[i], (long long)dims[i]);
      }
    }
  }
  /* Symbols fixed here are fixed wherever else they appear in other inputs. */
  const char* symbols[INGOT_MAX_RANK] = {0};
  for (int32_t i = 0; i < rank; ++i) symbols[i] = v->rank >= 0 ? v->dim_names[i] : NULL;
  v->rank = rank;
  v->range_dims = 0;
  for (int32_t i = 0; i < rank; ++i) {
    v->dims[i] = dims[i];
    v->dim_names[i] = NULL;
    v->range_lo[i] = lo[i];
    v->range_sym[i] = 0;
    if (lo[i] < dims[i]) {
      if (graph->range_symbol_count >= INGOT_MAX_RANGE_SYMBOLS)
        return ingot_fail(INGOT_ERROR_LIMIT, "--input-shape: more than %d ranged dimensions",
                          INGOT_MAX_RANGE_SYMBOLS);
      v->range_dims |= 1u << i;
      v->range_sym[i] = (uint8_t)++graph->range_symbol_count;
    }
  }
  /* A dimension the model names shares the size (and the range) given
   * for it here with every other input that names it. */
  for (int32_t i = 0; i < rank; ++i) {
    if (!symbols[i]) continue;
    for (uint32_t k = 0; k < graph->input_count; ++k) {
      ingot_value_t* w = &graph->values[graph->inputs[k]];
      for (int32_t j = 0; j < w->rank; ++j) {
        if (w->dims[j] < 0 && w->dim_names[j] && strcmp(w->dim_names[j], symbols[i]) == 0) {
          w->dims[j] = dims[i];
          w->dim_names[j] = NULL;
          w->range_lo[j] = lo[i];
          w->range_sym[j] = v->range_sym[i];
          if (lo[i] < dims[i]) w->range_dims |= 1u << j;
        }
      }
    }
  }
  return INGOT_OK;
}

/* ---- printing ---- */

static void print_type(const ingot_value_t* v, ingot_strbuf_t* sb) {
  ingot_strbuf_append(sb, ingot_graph_dtype_name(v->dtype));
  if (v->rank < 0) {
    ingot_strbuf_append(sb, "[?]");
    return;
  }
  ingot_strbuf_append(sb, "[");
  for (int32_t i = 0; i < v->rank; ++i) {
    if (i) ingot_strbuf_append(sb, "x");
    if (v->dims[i] >= 0) {
      ingot_strbuf_appendf(sb, "%lld", (long long)v->dims[i]);
    } else {
      ingot_strbuf_append(sb, v->dim_names[i] ? v->dim_names[i] : "?");
    }
  }
  ingot_strbuf_append(sb, "]");
}

void ingot_graph_print(const ingot_graph_t* graph, ingot_strbuf_t* sb) {
  ingot_strbuf_appendf(sb, "graph '%s' (opset %lld)\n", graph->name ? graph->name : "",
                       (long long)graph->opset);
  for (uint32_t i = 0; i < graph->input_count; ++i) {
    const ingot_value_t* v = &graph->values[graph->inputs[i]];
    ingot_strbuf_appendf(sb, "  input %%%s : ", v->name);
    print_type(v, sb);
    ingot_strbuf_append(sb, "\n");
  }
  uint32_t weights = 0;
  uint64_t weight_bytes = 0;
  for (uint32_t i = 0; i < graph->value_count; ++i) {
    if (graph->values[i].kind == INGOT_VALUE_WEIGHT) {
      ++weights;
      weight_bytes += ingot_value_bytes(&graph->values[i]);
    }
  }
  ingot_strbuf_appendf(sb, "  %u weights, %llu bytes\n", weights, (unsigned long long)weight_bytes);
  for (uint32_t i = 0; i < graph->node_count; ++i) {
    const ingot_node_t* n = &graph->nodes[i];
    if (n->dead) continue;
    ingot_strbuf_append(sb, "  ");
    for (uint32_t k = 0; k < n->output_count; ++k) {
      const ingot_value_t* v = &graph->values[n->outputs[k]];
      ingot_strbuf_appendf(sb, "%s%%%s : ", k ? ", " : "", v->name);
      print_type(v, sb);
    }
    ingot_strbuf_appendf(sb, " = %s(", ingot_op_name(n->op));
    for (uint32_t k = 0; k < n->input_count; ++k) {
      if (k) ingot_strbuf_append(sb, ", ");
      if (n->inputs[k] == INGOT_NO_VALUE) {
        ingot_strbuf_append(sb, "_");
      } else {
        const ingot_value_t* v = &graph->values[n->inputs[k]];
        ingot_strbuf_appendf(sb, "%s%s", v->kind == INGOT_VALUE_WEIGHT ? "@" : "%", v->name);
      }
    }
    ingot_strbuf_append(sb, ")");
    for (uint32_t k = 0; k < n->attr_count; ++k) {
      const ingot_attr_t* a = &n->attrs[k];
      ingot_strbuf_appendf(sb, " %s=", a->name);
      switch (a->type) {
        case INGOT_ATTR_INT: ingot_strbuf_appendf(sb, "%lld", (long long)a->i); break;
        case INGOT_ATTR_FLOAT: ingot_strbuf_appendf(sb, "%g", (double)a->f); break;
        case INGOT_ATTR_STRING: ingot_strbuf_appendf(sb, "\"%s\"", a->s ? a->s : ""); break;
        case INGOT_ATTR_INTS:
          ingot_strbuf_append(sb, "[");
          for (uint32_t j = 0; j < a->count; ++j) ingot_strbuf_appendf(sb, "%s%lld", j ? "," : "", (long long)a->ints[j]);
          ingot_strbuf_append(sb, "]");
          break;
        case INGOT_ATTR_FLOATS:
          ingot_strbuf_append(sb, "[");
          for (uint32_t j = 0; j < a->count; ++j) ingot_strbuf_appendf(sb, "%s%g", j ? "," : "", (double)a->floats[j]);
          ingot_strbuf_append(sb, "]");
          break;
        case INGOT_ATTR_TENSOR:
          ingot_strbuf_appendf(sb, "@%s", a->tensor < graph->value_count ? graph->values[a->tensor].name : "?");
          break;
        case INGOT_ATTR_GRAPH:
          ingot_strbuf_appendf(sb, "{graph of %u nodes}", a->graph ? a->graph->node_count : 0);
          break;
        case INGOT_ATTR_STRINGS:
          ingot_strbuf_append(sb, "[");
          for (uint32_t j = 0; j < a->count; ++j) ingot_strbuf_appendf(sb, "%s\"%s\"", j ? "," : "", a->strings[j]);
          ingot_strbuf_append(sb, "]");
          break;
      }
    }
    const ingot_epilogue_t* ep = &n->epilogue;
    if (ep->residual_input) ingot_strbuf_append(sb, " +residual");
    if (ep->bias_input) ingot_strbuf_append(sb, " +bias");
    if (ep->output_padded) {
      ingot_strbuf_appendf(sb, " output_pads=[%lld,%lld,%lld,%lld]", (long long)ep->output_pads[0],
                           (long long)ep->output_pads[1], (long long)ep->output_pads[2], (long long)ep->output_pads[3]);
    }
    if (n->weight_block) {
      ingot_strbuf_appendf(sb, " panels=%u%s", n->weight_block,
                           !n->weight_dot4_channels ? "" : n->dot_pairs ? " dot2" : n->dot_sat16 ? " dot4s" : " dot4");
    }
    if (n->guard && n->guard - 1 < graph->value_count) {
      ingot_strbuf_appendf(sb, " if %s%%%s", n->guard_when ? "" : "!", graph->values[n->guard - 1].name);
    }
    if (ep->activation == INGOT_ACTIVATION_RELU) ingot_strbuf_append(sb, " +relu");
    if (ep->activation == INGOT_ACTIVATION_GELU) ingot_strbuf_append(sb, " +gelu");
    if (ep->activation == INGOT_ACTIVATION_GELU_TANH) ingot_strbuf_append(sb, " +gelu_tanh");
    if (ep->activation == INGOT_ACTIVATION_CLIP) {
      ingot_strbuf_appendf(sb, " +clip(%g,%g)", (double)ep->act_min, (double)ep->act_max);
    }
    ingot_strbuf_appendf(sb, "  # %s\n", n->name);
  }
  for (uint32_t i = 0; i < graph->output_count; ++i) {
    const ingot_value_t* v = &graph->values[graph->outputs[i]];
    ingot_strbuf_appendf(sb, "  output %%%s : ", v->name);
    print_type(v, sb);
    ingot_strbuf_append(sb, "\n");
  }
}

void ingot_graph_add_check(ingot_graph_t* graph, uint32_t value, const char* message) {
  uint32_t n = graph->check_count;
  uint32_t* checks = INGOT_ARENA_ARRAY(&graph->arena, uint32_t, n + 1);
  const char** messages = INGOT_ARENA_ARRAY(&graph->arena, const char*, n + 1);
  if (n) {
    memcpy(checks, graph->checks, sizeof(uint32_t) * n);
    memcpy(messages, graph->check_messages, sizeof(const char*) * n);
  }
  checks[n] = value;
  messages[n] = ingot_arena_strdup(&graph->arena, message);
  graph->checks = checks;
  graph->check_messages = messages;
  graph->check_count = n + 1;
  graph->values[value].is_output = true;
}

/* "; it is computed from the inputs 'a', 'b'" when value `v` depends on
 * graph inputs (those that --const could bind), else "". Arena-owned. */
void ingot_graph_input_deps(const ingot_graph_t* g, uint32_t v, char* out, size_t cap) {
  if (cap) out[0] = '\0';
  if (v >= g->value_count || g->values[v].kind == INGOT_VALUE_INPUT) return;
  bool* seen = ingot_xcalloc(g->value_count ? g->value_count : 1, sizeof(bool));
  uint32_t* stack = ingot_xmalloc(sizeof(uint32_t) * (g->value_count + 1));
  uint32_t top = 0, visited = 0;
  ingot_strbuf_t sb = {0};
  stack[top++] = v;
  seen[v] = true;
  while (top && visited++ < 100000) {
    const ingot_value_t* x = &g->values[stack[--top]];
    if (x->kind == INGOT_VALUE_INPUT) {
      ingot_strbuf_appendf(&sb, "%s'%s'", sb.length ? ", " : "", x->name);
      continue;
    }
    if (x->producer == INGOT_NO_VALUE || x->producer >= g->node_count) continue;
    const ingot_node_t* p = &g->nodes[x->producer];
    for (uint32_t k = 0; k < p->input_count; ++k) {
      uint32_t u = p->inputs[k];
      if (u == INGOT_NO_VALUE || u >= g->value_count || seen[u]) continue;
      seen[u] = true;
      stack[top++] = u;
    }
  }
  if (sb.length && cap) snprintf(out, cap, "; it is computed from the input%s %s", strchr(sb.data, ',') ? "s" : "", sb.data);
  ingot_strbuf_free(&sb);
  free(stack);
  free(seen);
}
