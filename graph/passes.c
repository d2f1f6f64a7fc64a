/* Graph passes: sort, inference interleaved with constant folding, dead-code
 * elimination, batch-norm folding, activation fusion, compaction, and the
 * standard pipeline.
 *
 * Folding has no evaluator of its own: a node whose inputs are all weights is
 * evaluated by the hook the caller passes (lower/ lowers it and runs the IR
 * interpreter), so each op's semantics has one definition, its lowering.
 * Only Constant (a copy of its attribute), Shape and Size (read from the
 * static shape) and nodes with empty outputs are folded here directly. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph_internal.h"

uint32_t* ingot_graph_use_counts(const ingot_graph_t* graph) {
  uint32_t* uses = ingot_xcalloc(graph->value_count ? graph->value_count : 1, sizeof(uint32_t));
  for (uint32_t i = 0; i < graph->node_count; ++i) {
    const ingot_node_t* n = &graph->nodes[i];
    if (n->dead) continue;
    for (uint32_t k = 0; k < n->input_count; ++k) {
      if (n->inputs[k] != INGOT_NO_VALUE) uses[n->inputs[k]]++;
    }
  }
  /* Range sizes are read by kernels (schedule/range_guard.c). */
  for (uint32_t k = 1; k <= graph->run_size_count; ++k)
    if (graph->run_size[k] && graph->run_size[k] - 1 < graph->value_count) uses[graph->run_size[k] - 1]++;
  /* A graph output's run-time shape is read by the runtime. */
  for (uint32_t v = 0; v < graph->value_count; ++v) {
    uint32_t shape = graph->values[v].runtime_shape;
    if (graph->values[v].is_output && shape && shape - 1 < graph->value_count) uses[shape - 1]++;
  }
  return uses;
}

/* Replaces every read of `from` by live nodes with `to`. */
static void replace_uses(ingot_graph_t* graph, uint32_t from, uint32_t to) {
  for (uint32_t i = 0; i < graph->node_count; ++i) {
    ingot_node_t* n = &graph->nodes[i];
    if (n->dead) continue;
    for (uint32_t k = 0; k < n->input_count; ++k) {
      if (n->inputs[k] == from) n->inputs[k] = to;
    }
    if (n->guard == from + 1) n->guard = to + 1;
  }
}

static const char* op_name(const ingot_node_t* n) { return ingot_op_name(n->op) ? ingot_op_name(n->op) : "?"; }

/* ---- sort ---- */

typedef struct heap_t {
  uint32_t* data;
  uint32_t count;
} heap_t;

static void heap_push(heap_t* h, uint32_t x) {
  uint32_t i = h->count++;
  h->data[i] = x;
  while (i > 0) {
    uint32_t parent = (i - 1) / 2;
    if (h->data[parent] <= h->data[i]) break;
    uint32_t t = h->data[parent];
    h->data[parent] = h->data[i];
    h->data[i] = t;
    i = parent;
  }
}

static uint32_t heap_pop(heap_t* h) {
  uint32_t top = h->data[0];
  h->data[0] = h->data[--h->count];
  uint32_t i = 0;
  for (;;) {
    uint32_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < h->count && h->data[l] < h->data[m]) m = l;
    if (r < h->count && h->data[r] < h->data[m]) m = r;
    if (m == i) break;
    uint32_t t = h->data[m];
    h->data[m] = h->data[i];
    h->data[i] = t;
    i = m;
  }
  return top;
}

/* Sets value.producer from the live nodes; fails if a value has two producers
 * or a node writes a graph input or weight. */
static ingot_status_t rebuild_producers(ingot_graph_t* graph) {
  for (uint32_t i = 0; i < graph->value_count; ++i) graph->values[i].producer = INGOT_NO_VALUE;
  for (uint32_t i = 0; i < graph->node_count; ++i) {
    const ingot_node_t* n = &graph->nodes[i];
    if (n->dead) continue;
    for (uint32_t k = 0; k < n->output_count; ++k) {
      uint32_t id = n->outputs[k];
      if (id == INGOT_NO_VALUE) continue;
      if (id >= graph->value_count) {
        return ingot_fail(INGOT_ERROR_INTERNAL, "node '%s' (%s): output %u has an invalid value id", n->name,
                          op_name(n), k);
      }
      ingot_value_t* v = &graph->values[id];
      if (v->kind != INGOT_VALUE_INTERMEDIATE) {
        return ingot_fail(INGOT_ERROR_CORRUPT, "node '%s' (%s): output '%s' is also a graph input or initializer",
                          n->name, op_name(n), v->name);
      }
      if (v->producer != INGOT_NO_VALUE) {
        return ingot_fail(INGOT_ERROR_CORRUPT, "node '%s' (%s): output '%s' is also produced by node '%s'", n->name,
                          op_name(n), v->name, graph->nodes[v->producer].name);
      }
      v->producer = i;
    }
  }
  return INGOT_OK;
}

ingot_status_t ingot_graph_sort(ingot_graph_t* graph) {
  ingot_status_t s = rebuild_producers(graph);
  if (s) return s;
  uint32_t n_nodes = graph->node_count, n_values = graph->value_count;
  /* Every input must be defined. */
  for (uint32_t i = 0; i < n_nodes; ++i) {
    const ingot_node_t* n = &graph->nodes[i];
    if (n->dead) continue;
    for (uint32_t k = 0; k < n->input_count; ++k) {
      uint32_t id = n->inputs[k];
      if (id == INGOT_NO_VALUE) continue;
      if (id >= n_values) {
        return ingot_fail(INGOT_ERROR_INTERNAL, "node '%s' (%s): input %u has an invalid value id", n->name,
                          op_name(n), k);
      }
      const ingot_value_t* v = &graph->values[id];
      if (v->kind == INGOT_VALUE_INTERMEDIATE && v->producer == INGOT_NO_VALUE) {
        return ingot_fail(INGOT_ERROR_CORRUPT,
                          "node '%s' (%s): input '%s' is not produced by any node, nor a graph input or initializer",
                          n->name, op_name(n), v->name);
      }
    }
  }
  for (uint32_t i = 0; i < graph->output_count; ++i) {
    const ingot_value_t* v = &graph->values[graph->outputs[i]];
    if (v->kind == INGOT_VALUE_INTERMEDIATE && v->producer == INGOT_NO_VALUE) {
      return ingot_fail(INGOT_ERROR_CORRUPT, "graph output '%s' is not produced by any node", v->name);
    }
  }
  /* Consumers of each value (by slot), as CSR. */
  uint32_t* start = ingot_xcalloc((size_t)n_values + 1, sizeof(uint32_t));
  for (uint32_t i = 0; i < n_nodes; ++i) {
    const ingot_node_t* n = &graph->nodes[i];
    if (n->dead) continue;
    for (uint32_t k = 0; k < n->input_count; ++k) {
      if (n->inputs[k] != INGOT_NO_VALUE) start[n->inputs[k] + 1]++;
    }
  }
  for (uint32_t v = 0; v < n_values; ++v) start[v + 1] += start[v];
  uint32_t* fill = ingot_xmalloc(sizeof(uint32_t) * ((size_t)n_values + 1));
  memcpy(fill, start, sizeof(uint32_t) * ((size_t)n_values + 1));
  uint32_t* consumers = ingot_xmalloc(sizeof(uint32_t) * ((size_t)start[n_values] + 1));
  uint32_t* indegree = ingot_xcalloc((size_t)n_nodes + 1, sizeof(uint32_t));
  uint32_t live = 0;
  for (uint32_t i = 0; i < n_nodes; ++i) {
    const ingot_node_t* n = &graph->nodes[i];
    if (n->dead) continue;
    ++live;
    for (uint32_t k = 0; k < n->input_count; ++k) {
      uint32_t id = n->inputs[k];
      if (id == INGOT_NO_VALUE) continue;
      consumers[fill[id]++] = i;
      if (graph->values[id].producer != INGOT_NO_VALUE) indegree[i]++;
    }
  }
  /* The nodes that compute range sizes (graph->run_size) go first, in
   * node order, then the rest: kernels read the sizes without the graph
   * saying so (schedule/range_guard.c). */
  bool* early = ingot_xcalloc((size_t)n_nodes + 1, sizeof(bool));
  uint32_t* todo = ingot_xmalloc(sizeof(uint32_t) * ((size_t)n_values + 1));
  uint32_t todo_count = 0;
  for (uint32_t k = 1; k <= graph->run_size_count; ++k)
    if (graph->run_size[k] && graph->run_size[k] - 1 < n_values) todo[todo_count++] = graph->run_size[k] - 1;
  while (todo_count) {
    uint32_t p = graph->values[todo[--todo_count]].producer;
    if (p == INGOT_NO_VALUE || early[p]) continue;
    early[p] = true;
    const ingot_node_t* n = &graph->nodes[p];
    for (uint32_t k = 0; k < n->input_count; ++k)
      if (n->inputs[k] != INGOT_NO_VALUE && todo_count < n_values) todo[todo_count++] = n->inputs[k];
  }
  free(todo);
#define SORT_KEY(i) (early[(i)] ? (i) : n_nodes + (i))
  heap_t ready = {ingot_xmalloc(sizeof(uint32_t) * ((size_t)n_nodes + 1)), 0};
  for (uint32_t i = 0; i < n_nodes; ++i) {
    if (!graph->nodes[i].dead && indegree[i] == 0) heap_push(&ready, SORT_KEY(i));
  }
  uint32_t* order = ingot_xmalloc(sizeof(uint32_t) * ((size_t)n_nodes + 1));
  uint32_t emitted = 0;
  while (ready.count) {
    uint32_t key = heap_pop(&ready);
    uint32_t i = key >= n_nodes ? key - n_nodes : key;
    order[emitted++] = i;
    const ingot_node_t* n = &graph->nodes[i];
    for (uint32_t k = 0; k < n->output_count; ++k) {
      uint32_t id = n->outputs[k];
      if (id == INGOT_NO_VALUE) continue;
      for (uint32_t c = start[id]; c < start[id + 1]; ++c) {
        if (--indegree[consumers[c]] == 0) heap_push(&ready, SORT_KEY(consumers[c]));
      }
    }
  }
  if (emitted != live) {
    uint32_t culprit = 0;
    for (uint32_t i = 0; i < n_nodes; ++i) {
      if (!graph->nodes[i].dead && indegree[i] > 0) {
        culprit = i;
        break;
      }
    }
    s = ingot_fail(INGOT_ERROR_CORRUPT, "node '%s' (%s) is part of a cycle", graph->nodes[culprit].name,
                   op_name(&graph->nodes[culprit]));
  } else {
    /* Live nodes in order, dead ones after them. */
    for (uint32_t i = 0; i < n_nodes; ++i) {
      if (graph->nodes[i].dead) order[emitted++] = i;
    }
    ingot_node_t* sorted = ingot_xmalloc(sizeof(ingot_node_t) * (graph->node_cap ? graph->node_cap : 1));
    for (uint32_t i = 0; i < n_nodes; ++i) sorted[i] = graph->nodes[order[i]];
    free(graph->nodes);
    graph->nodes = sorted;
    s = rebuild_producers(graph);
  }
  free(order);
  free(ready.data);
  free(indegree);
  free(early);
#undef SORT_KEY
  free(consumers);
  free(fill);
  free(start);
  return s;
}

/* ---- inference interleaved with constant folding ---- */

/* Folding never materializes constants larger than this (all outputs of one
 * node together); bigger ones stay computed at run time. */
#define FOLD_MAX_BYTES ((uint64_t)64 << 20)

/* Copies a Constant node's attribute (value, value_float(s), value_int(s))
 * into dst, which holds the inferred output. */
static bool constant_data(const ingot_graph_t* g, const ingot_node_t* n, const ingot_value_t* out, void* dst) {
  const ingot_attr_t* a;
  size_t bytes = (size_t)ingot_value_bytes(out);
  if ((a = ingot_node_attr(n, "value")) && a->type == INGOT_ATTR_TENSOR && a->tensor < g->value_count) {
    const ingot_value_t* t = &g->values[a->tensor];
    if (!t->data && bytes) return false;
    if (bytes) memcpy(dst, t->data, bytes);
  } else if ((a = ingot_node_attr(n, "value_float")) && a->type == INGOT_ATTR_FLOAT) {
    *(float*)dst = a->f;
  } else if ((a = ingot_node_attr(n, "value_int")) && a->type == INGOT_ATTR_INT) {
    *(int64_t*)dst = a->i;
  } else if ((a = ingot_node_attr(n, "value_floats")) && a->type == INGOT_ATTR_FLOATS) {
    if (a->count) memcpy(dst, a->floats, sizeof(float) * a->count);
  } else if ((a = ingot_node_attr(n, "value_ints")) && a->type == INGOT_ATTR_INTS) {
    if (a->count) memcpy(dst, a->ints, sizeof(int64_t) * a->count);
  } else {
    return false;
  }
  return true;
}

/* Shape and Size read only the (static) shape of their input. */
static void shape_data(const ingot_graph_t* g, const ingot_node_t* n, void* dst) {
  const ingot_value_t* x = &g->values[n->inputs[0]];
  int64_t* out = dst;
  if (n->op == INGOT_OP_SIZE) {
    out[0] = ingot_value_numel(x);
    return;
  }
  int64_t start = 0, end = 0;
  ingot_graph_shape_range(n, x->rank, &start, &end);
  for (int64_t i = start; i < end; ++i) out[i - start] = x->dims[i];
}

/* After node `id` was inferred: turns its outputs into weights when they are
 * known at compile time. Outputs that are graph outputs stay computed. */
static ingot_status_t fold_node(ingot_graph_t* graph, uint32_t id, ingot_node_eval_fn_t eval, void* eval_self,
                                char** why) {
  ingot_node_t* n = &graph->nodes[id];
  uint32_t nout = n->output_count;
  if (nout == 0) return INGOT_OK;
  uint64_t bytes = 0;
  bool any_output = false, all_empty = true;
  for (uint32_t k = 0; k < nout; ++k) {
    uint32_t o = n->outputs[k];
    if (o == INGOT_NO_VALUE) continue;
    const ingot_value_t* v = &graph->values[o];
    if (v->is_output || v->rank < 0) return INGOT_OK;
    any_output = true;
    bytes += ingot_value_bytes(v);
    if (ingot_value_numel(v) != 0) all_empty = false;
  }
  if (!any_output) return INGOT_OK;
  bool all_weights = true;
  uint32_t present = 0;
  for (uint32_t k = 0; k < n->input_count; ++k) {
    uint32_t x = n->inputs[k];
    if (x == INGOT_NO_VALUE) continue;
    ++present;
    if (graph->values[x].kind != INGOT_VALUE_WEIGHT) all_weights = false;
  }
  void** data = ingot_xcalloc(nout, sizeof(void*));
  bool folded = false;
  ingot_status_t s = INGOT_OK;
  if (n->op == INGOT_OP_CONSTANT) {
    const ingot_value_t* out = &graph->values[n->outputs[0]];
    data[0] = ingot_xcalloc(1, bytes ? (size_t)bytes : 1);
    folded = constant_data(graph, n, out, data[0]);
  } else if (all_empty) {
    /* Nothing to compute: an empty tensor is the same whatever the inputs. */
    for (uint32_t k = 0; k < nout; ++k) {
      if (n->outputs[k] != INGOT_NO_VALUE) data[k] = ingot_xcalloc(1, 1);
    }
    folded = true;
  } else if (n->op == INGOT_OP_SHAPE || n->op == INGOT_OP_SIZE) {
    data[0] = ingot_xcalloc(1, bytes ? (size_t)bytes : 1);
    shape_data(graph, n, data[0]);
    folded = true;
  } else if (all_weights && present > 0 && eval && bytes <= FOLD_MAX_BYTES) {
    s = eval(eval_self, graph, id, data);
    if (s == INGOT_ERROR_UNSUPPORTED) {
      /* Not evaluable here; lowering will compute it (or say why not). The
       * reason is kept for a consumer that needs the value as a constant. */
      n = &graph->nodes[id];
      for (uint32_t k = 0; k < nout; ++k) {
        if (n->outputs[k] != INGOT_NO_VALUE && !why[n->outputs[k]]) why[n->outputs[k]] = ingot_xstrdup(ingot_compiler_error());
      }
      ingot_compiler_error_clear();
      s = INGOT_OK;
    } else if (s != INGOT_OK) {
      n = &graph->nodes[id];
      s = ingot_fail_prefix(s, "node '%s' (%s): evaluating it at compile time", n->name, op_name(n));
    } else {
      folded = true;
    }
  }
  n = &graph->nodes[id];
  if (!folded && !s) {
    /* Outputs computed from a value that failed to fold inherit its reason. */
    const char* root = NULL;
    for (uint32_t k = 0; k < n->input_count && !root; ++k) {
      if (n->inputs[k] != INGOT_NO_VALUE) root = why[n->inputs[k]];
    }
    for (uint32_t k = 0; root && k < nout; ++k) {
      if (n->outputs[k] != INGOT_NO_VALUE && !why[n->outputs[k]]) why[n->outputs[k]] = ingot_xstrdup(root);
    }
  }
  if (folded) {
    for (uint32_t k = 0; k < nout; ++k) {
      uint32_t o = n->outputs[k];
      if (o == INGOT_NO_VALUE) continue;
      const ingot_value_t* v = &graph->values[o];
      if (!data[k]) data[k] = ingot_xcalloc(1, 1); /* an evaluator may leave empty outputs NULL */
      int64_t dims[INGOT_MAX_RANK];
      memcpy(dims, v->dims, sizeof(dims));
      if (v->runtime_shape) {
        /* Its size came out of the evaluation: the shape output (of this
         * node) holds it, and the data is dense in it (within the bounds). */
        const int64_t* computed = NULL;
        for (uint32_t j = 0; j < nout; ++j)
          if (n->outputs[j] == v->runtime_shape - 1) computed = data[j] ? data[j] : graph->values[n->outputs[j]].data;
        for (int32_t d = 0; computed && d < v->rank; ++d)
          if (computed[d] >= 0 && computed[d] <= v->dims[d]) dims[d] = computed[d];
        graph->values[o].runtime_shape = 0;
        graph->values[o].runtime_dims = 0;
      }
      ingot_graph_set_weight(graph, o, v->dtype, v->rank, dims, data[k]);
      graph->values[o].producer = INGOT_NO_VALUE;
      data[k] = NULL;
    }
    graph->nodes[id].dead = true;
  }
  for (uint32_t k = 0; k < nout; ++k) free(data[k]);
  free(data);
  return s;
}

/* The state of one infer-and-fold walk: why[v] says why value v could not
 * be computed at compile time (heap strings, grown with the graph). */
typedef struct fold_walk_t {
  ingot_node_eval_fn_t eval;
  void* eval_self;
  char** why;
  uint32_t why_count;
  ingot_cf_state_t* cf;
  bool expanded;
} fold_walk_t;

static void walk_grow(fold_walk_t* w, const ingot_graph_t* graph) {
  if (w->why_count >= graph->value_count) return;
  uint32_t n = graph->value_count + graph->value_count / 2 + 16;
  w->why = ingot_xrealloc(w->why, sizeof(char*) * n);
  memset(w->why + w->why_count, 0, sizeof(char*) * (n - w->why_count));
  w->why_count = n;
}

/* Infers node i and folds it, or expands it when it is control flow or
 * touches a sequence. */
static ingot_status_t walk_node(void* self, ingot_graph_t* graph, uint32_t i) {
  fold_walk_t* w = self;
  walk_grow(w, graph);
  if (graph->nodes[i].dead) return INGOT_OK;
  if (ingot_graph_node_expands(graph, i)) {
    w->expanded = true;
    return ingot_graph_expand_control_flow(graph, i, &w->cf, walk_node, w);
  }
  ingot_status_t s = ingot_graph_infer_node(graph, i);
  if (s) {
    const ingot_node_t* n = &graph->nodes[i];
    const char* root = NULL;
    uint32_t at = INGOT_NO_VALUE;
    for (uint32_t k = 0; k < n->input_count && !root; ++k) {
      at = n->inputs[k];
      if (at != INGOT_NO_VALUE && at < w->why_count) root = w->why[at];
    }
    if (root && s == INGOT_ERROR_UNSUPPORTED) {
      char* msg = ingot_xstrdup(ingot_compiler_error());
      s = ingot_fail(s, "%s; '%s' could not be computed at compile time: %s", msg, graph->values[at].name, root);
      free(msg);
    }
    return s;
  }
  walk_grow(w, graph);
  return fold_node(graph, i, w->eval, w->eval_self, w->why);
}

ingot_status_t ingot_graph_infer_and_fold(ingot_graph_t* graph, ingot_node_eval_fn_t eval, void* eval_self) {
  ingot_status_t s = ingot_graph_infer_begin(graph);
  if (s) return s;
  fold_walk_t w = {eval, eval_self, NULL, 0, NULL, false};
  walk_grow(&w, graph);
  /* Nodes that an expansion appends are visited when appended; the walk
   * meets them again at the end, where inferring them again is harmless
   * and the folded ones are dead. */
  for (uint32_t i = 0; i < graph->node_count && !s; ++i) s = walk_node(&w, graph, i);
  for (uint32_t v = 0; v < w.why_count; ++v) free(w.why[v]);
  free(w.why);
  ingot_cf_state_free(w.cf);
  if (s) return s;
  /* Expanded nodes were appended after the consumers of what they replace. */
  if (w.expanded && (s = ingot_graph_sort(graph))) return s;
  return ingot_graph_infer_end(graph);
}

/* ---- binding inputs to constants ---- */

ingot_status_t ingot_graph_bind_input(ingot_graph_t* graph, const char* name, ingot_dtype_t dtype, int32_t rank,
                                      const int64_t* dims, const void* data) {
  uint32_t at = UINT32_MAX;
  for (uint32_t i = 0; i < graph->input_count; ++i) {
    if (strcmp(graph->values[graph->inputs[i]].name, name) == 0) at = i;
  }
  if (at == UINT32_MAX) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "'%s' is not a graph input", name);
  uint32_t id = graph->inputs[at];
  ingot_value_t* v = &graph->values[id];
  /* The .npy carriers of what numpy has no dtype for (README, "run"):
   * bfloat16 as its uint16 bits, float8 as its uint8 bits, int4 / uint4 one
   * value a byte as int8 / uint8 (checked below). */
  bool carried = (v->dtype == INGOT_DTYPE_BF16 && dtype == INGOT_DTYPE_U16) ||
                 (ingot_f8_format(v->dtype) && dtype == INGOT_DTYPE_U8) ||
                 (v->dtype == INGOT_DTYPE_I4 && dtype == INGOT_DTYPE_I8) ||
                 (v->dtype == INGOT_DTYPE_U4 && dtype == INGOT_DTYPE_U8);
  if (carried) dtype = v->dtype;
  if (v->dtype != INGOT_DTYPE_INVALID && v->dtype != dtype) {
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "input '%s' is %s, the data given for it %s", name,
                      ingot_graph_dtype_name(v->dtype), ingot_graph_dtype_name(dtype));
  }
  if (rank < 0 || rank > (int32_t)INGOT_MAX_RANK) {
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "input '%s': rank %d is not supported", name, rank);
  }
  bool ok = v->rank < 0 || v->rank == rank;
  for (int32_t i = 0; ok && v->rank >= 0 && i < rank; ++i) ok = v->dims[i] < 0 || v->dims[i] == dims[i];
  for (int32_t i = 0; ok && i < rank; ++i) ok = dims[i] >= 0;
  if (!ok) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "input '%s': the data given has another shape", name);
  int64_t numel = 1;
  for (int32_t i = 0; i < rank; ++i) {
    if (dims[i] != 0 && numel > INT64_MAX / dims[i]) return ingot_fail(INGOT_ERROR_LIMIT, "input '%s' is too large", name);
    numel *= dims[i];
  }
  uint64_t bytes;
  if (!ingot_mul_u64((uint64_t)numel, ingot_graph_dtype_size(dtype), &bytes) || bytes > ((uint64_t)1 << 40)) {
    return ingot_fail(INGOT_ERROR_LIMIT, "input '%s' is too large", name);
  }
  for (int64_t i = 0; (dtype == INGOT_DTYPE_I4 || dtype == INGOT_DTYPE_U4) && i < numel; ++i) {
    int x = dtype == INGOT_DTYPE_I4 ? ((const int8_t*)data)[i] : ((const uint8_t*)data)[i];
    int lo = dtype == INGOT_DTYPE_I4 ? -8 : 0;
    if (x < lo || x > lo + 15)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "input '%s': the data holds %d at element %lld, outside %s's range",
                        name, x, (long long)i, ingot_graph_dtype_name(dtype));
  }
  void* copy = ingot_xmalloc(bytes ? (size_t)bytes : 1);
  if (bytes) memcpy(copy, data, (size_t)bytes);
  ingot_graph_set_weight(graph, id, dtype, rank, dims, copy);
  for (uint32_t i = at; i + 1 < graph->input_count; ++i) graph->inputs[i] = graph->inputs[i + 1];
  graph->input_count--;
  return INGOT_OK;
}

/* ---- dead code ---- */

/* Removes an Identity-like node (output 0 equals input 0); false if kept. */
static bool bypass_node(ingot_graph_t* graph, uint32_t node_id) {
  ingot_node_t* n = &graph->nodes[node_id];
  uint32_t x = n->inputs[0], y = n->outputs[0];
  if (x == INGOT_NO_VALUE || y == INGOT_NO_VALUE) return false;
  ingot_value_t* yv = &graph->values[y];
  ingot_value_t* xv = &graph->values[x];
  if (!yv->is_output) {
    n->dead = true;
    replace_uses(graph, y, x);
    return true;
  }
  /* y names a graph output: let x's producer write y directly, when x is an
   * ordinary computed value. */
  if (xv->is_output || xv->kind != INGOT_VALUE_INTERMEDIATE || xv->producer == INGOT_NO_VALUE) return false;
  ingot_node_t* p = &graph->nodes[xv->producer];
  if (p->dead) return false;
  n->dead = true;
  replace_uses(graph, x, y);
  for (uint32_t k = 0; k < p->output_count; ++k) {
    if (p->outputs[k] == x) p->outputs[k] = y;
  }
  yv->producer = xv->producer;
  xv->producer = INGOT_NO_VALUE;
  if (xv->rank >= 0 && yv->rank < 0) {
    yv->dtype = xv->dtype;
    yv->rank = xv->rank;
    memcpy(yv->dims, xv->dims, sizeof(yv->dims));
  }
  return true;
}

/* ---- Dropout ---- */

static bool weight_all_zero(const ingot_value_t* v) {
  if (v->kind != INGOT_VALUE_WEIGHT || !v->data || v->rank < 0 || ingot_value_numel(v) != 1) return false;
  const uint8_t* b = v->data;
  for (uint64_t i = 0; i < ingot_value_bytes(v); ++i)
    if (b[i]) return false;
  return true;
}

bool ingot_graph_dropout_is_identity(const ingot_graph_t* graph, const ingot_node_t* node) {
  uint32_t training = node->input_count > 2 ? node->inputs[2] : INGOT_NO_VALUE;
  if (training == INGOT_NO_VALUE || weight_all_zero(&graph->values[training])) return true;
  uint32_t ratio = node->input_count > 1 ? node->inputs[1] : INGOT_NO_VALUE;
  /* Training: the kept elements are drawn at random, unless none is dropped
   * (ratio 0; an absent ratio is 0.5). A zero float has all bits zero. */
  return ratio != INGOT_NO_VALUE && weight_all_zero(&graph->values[ratio]);
}

/* ---- constant outputs ---- */

ingot_status_t ingot_graph_copy_constant_outputs(ingot_graph_t* graph) {
  for (uint32_t i = 0; i < graph->output_count; ++i) {
    uint32_t y = graph->outputs[i];
    if (graph->values[y].kind != INGOT_VALUE_WEIGHT) continue;
    char* base = ingot_arena_printf(&graph->arena, "%s/constant", graph->values[y].name);
    uint32_t w = ingot_graph_add_value(graph, ingot_graph_unique_name(graph, base), INGOT_VALUE_WEIGHT);
    ingot_value_t* yv = &graph->values[y];
    ingot_value_t* wv = &graph->values[w];
    wv->dtype = yv->dtype;
    wv->rank = yv->rank;
    memcpy(wv->dims, yv->dims, sizeof(wv->dims));
    memcpy(wv->dim_names, yv->dim_names, sizeof(wv->dim_names));
    wv->data = yv->data;
    yv->data = NULL;
    yv->kind = INGOT_VALUE_INTERMEDIATE;
    replace_uses(graph, y, w); /* other readers keep reading a weight */
    ingot_graph_add_node(graph, INGOT_OP_IDENTITY, ingot_arena_printf(&graph->arena, "%s/copy", base), &w, 1, &y, 1);
  }
  return INGOT_OK;
}

ingot_status_t ingot_graph_eliminate_dead_code(ingot_graph_t* graph) {
  ingot_status_t s = rebuild_producers(graph);
  if (s) return s;
  uint32_t* uses = ingot_graph_use_counts(graph);
  for (uint32_t i = 0; i < graph->node_count; ++i) {
    ingot_node_t* n = &graph->nodes[i];
    if (n->dead) continue;
    if (n->op == INGOT_OP_IDENTITY) {
      bypass_node(graph, i);
    } else if (n->op == INGOT_OP_DROPOUT && ingot_graph_dropout_is_identity(graph, n)) {
      bool mask_used = false;
      if (n->output_count > 1 && n->outputs[1] != INGOT_NO_VALUE) {
        const ingot_value_t* m = &graph->values[n->outputs[1]];
        mask_used = uses[n->outputs[1]] > 0 || m->is_output;
      }
      if (!mask_used) bypass_node(graph, i);
    }
  }
  free(uses);
  uses = ingot_graph_use_counts(graph);
  bool changed = true;
  while (changed) {
    changed = false;
    for (uint32_t i = graph->node_count; i-- > 0;) {
      ingot_node_t* n = &graph->nodes[i];
      if (n->dead) continue;
      bool needed = false;
      for (uint32_t k = 0; k < n->output_count; ++k) {
        uint32_t id = n->outputs[k];
        if (id != INGOT_NO_VALUE && (uses[id] > 0 || graph->values[id].is_output)) needed = true;
      }
      if (needed) continue;
      n->dead = true;
      changed = true;
      for (uint32_t k = 0; k < n->input_count; ++k) {
        if (n->inputs[k] != INGOT_NO_VALUE) uses[n->inputs[k]]--;
      }
    }
  }
  free(uses);
  ingot_graph_compact(graph);
  return rebuild_producers(graph);
}

/* ---- batch-norm folding ---- */

static bool is_f32_weight(const ingot_graph_t* g, uint32_t id, int64_t numel) {
  if (id == INGOT_NO_VALUE || id >= g->value_count) return false;
  const ingot_value_t* v = &g->values[id];
  return v->kind == INGOT_VALUE_WEIGHT && v->dtype == INGOT_DTYPE_F32 && v->data &&
         (numel < 0 || ingot_value_numel(v) == numel);
}

ingot_status_t ingot_graph_fold_batchnorm(ingot_graph_t* graph) {
  ingot_status_t s = rebuild_producers(graph);
  if (s) return s;
  uint32_t* uses = ingot_graph_use_counts(graph);
  for (uint32_t i = 0; i < graph->node_count; ++i) {
    ingot_node_t* bn = &graph->nodes[i];
    if (bn->dead || bn->op != INGOT_OP_BATCHNORMALIZATION || bn->input_count != 5 || bn->output_count != 1) continue;
    if (ingot_node_attr_int(bn, "training_mode", 0) != 0 || ingot_node_attr_int(bn, "spatial", 1) != 1) continue;
    uint32_t x = bn->inputs[0];
    if (x == INGOT_NO_VALUE) continue;
    ingot_value_t* xv = &graph->values[x];
    if (xv->producer == INGOT_NO_VALUE || xv->is_output || uses[x] != 1) continue;
    uint32_t conv_id = xv->producer;
    ingot_node_t* conv = &graph->nodes[conv_id];
    if (conv->dead || conv->op != INGOT_OP_CONV || conv->outputs[0] != x ||
        conv->epilogue.activation != INGOT_ACTIVATION_NONE) {
      continue;
    }
    uint32_t w = conv->inputs[1];
    if (!is_f32_weight(graph, w, -1)) continue;
    const ingot_value_t* wv = &graph->values[w];
    if (wv->rank < 1) continue;
    int64_t m = wv->dims[0];
    if (m <= 0) continue;
    uint32_t b = conv->input_count > 2 ? conv->inputs[2] : INGOT_NO_VALUE;
    if (b != INGOT_NO_VALUE && !is_f32_weight(graph, b, m)) continue;
    bool params_ok = true;
    for (uint32_t k = 1; k < 5; ++k) params_ok = params_ok && is_f32_weight(graph, bn->inputs[k], m);
    if (!params_ok) continue;
    double eps = ingot_node_attr_float(bn, "epsilon", 1e-5f);
    const float* scale = graph->values[bn->inputs[1]].data;
    const float* beta = graph->values[bn->inputs[2]].data;
    const float* mean = graph->values[bn->inputs[3]].data;
    const float* var = graph->values[bn->inputs[4]].data;
    const float* old_b = b != INGOT_NO_VALUE ? graph->values[b].data : NULL;
    int64_t total = ingot_value_numel(wv), per = total / m;
    float* new_w = ingot_xmalloc(sizeof(float) * (size_t)(total ? total : 1));
    float* new_b = ingot_xmalloc(sizeof(float) * (size_t)m);
    const float* old_w = wv->data;
    for (int64_t c = 0; c < m; ++c) {
      double f = (double)scale[c] / sqrt((double)var[c] + eps);
      for (int64_t j = 0; j < per; ++j) new_w[c * per + j] = (float)((double)old_w[c * per + j] * f);
      double bias = old_b ? (double)old_b[c] : 0.0;
      new_b[c] = (float)((bias - (double)mean[c]) * f + (double)beta[c]);
    }
    /* New weight values (the old ones may be shared with other nodes). */
    char* base = ingot_arena_printf(&graph->arena, "%s_bnfold", graph->values[w].name);
    uint32_t nw = ingot_graph_add_value(graph, ingot_graph_unique_name(graph, base), INGOT_VALUE_WEIGHT);
    int64_t wdims[INGOT_MAX_RANK];
    memcpy(wdims, graph->values[w].dims, sizeof(wdims));
    ingot_graph_set_weight(graph, nw, INGOT_DTYPE_F32, graph->values[w].rank, wdims, new_w);
    base = ingot_arena_printf(&graph->arena, "%s_bias_bnfold", conv->name);
    uint32_t nb = ingot_graph_add_value(graph, ingot_graph_unique_name(graph, base), INGOT_VALUE_WEIGHT);
    ingot_graph_set_weight(graph, nb, INGOT_DTYPE_F32, 1, &m, new_b);
    /* values may have moved; refetch pointers. */
    conv = &graph->nodes[conv_id];
    bn = &graph->nodes[i];
    if (conv->input_count < 3) {
      uint32_t* inputs = INGOT_ARENA_ARRAY(&graph->arena, uint32_t, 3);
      memcpy(inputs, conv->inputs, sizeof(uint32_t) * conv->input_count);
      conv->inputs = inputs;
      conv->input_count = 3;
    }
    conv->inputs[1] = nw;
    conv->inputs[2] = nb;
    uint32_t y = bn->outputs[0];
    conv->outputs[0] = y;
    graph->values[y].producer = conv_id;
    graph->values[x].producer = INGOT_NO_VALUE;
    bn->dead = true;
    uses = ingot_xrealloc(uses, sizeof(uint32_t) * graph->value_count);
    uses[nw] = uses[nb] = 1;
    uses[x] = 0;
  }
  free(uses);
  return INGOT_OK;
}

/* ---- GELU ---- */

/* Whether value id is a scalar float32 weight within 1e-4 (relative) of v. */
static bool is_scalar_near(const ingot_graph_t* g, uint32_t id, double v) {
  if (!is_f32_weight(g, id, 1)) return false;
  double x = *(const float*)g->values[id].data;
  return fabs(x - v) <= 1e-4 * fabs(v);
}

/* The node that reads value id, when it is the only reader and id is not a
 * graph output; else NULL. */
static ingot_node_t* sole_reader(ingot_graph_t* g, const uint32_t* uses, uint32_t id, ingot_op_t op) {
  if (id == INGOT_NO_VALUE || uses[id] != 1 || g->values[id].is_output) return NULL;
  for (uint32_t i = 0; i < g->node_count; ++i) {
    ingot_node_t* n = &g->nodes[i];
    if (n->dead) continue;
    for (uint32_t k = 0; k < n->input_count; ++k)
      if (n->inputs[k] == id) return n->op == op && n->output_count == 1 ? n : NULL;
  }
  return NULL;
}

/* The other input of a two-input node than `id` (INGOT_NO_VALUE if none). */
static uint32_t other_input(const ingot_node_t* n, uint32_t id) {
  if (n->input_count != 2) return INGOT_NO_VALUE;
  return n->inputs[0] == id ? n->inputs[1] : n->inputs[1] == id ? n->inputs[0] : INGOT_NO_VALUE;
}

ingot_status_t ingot_graph_fuse_gelu(ingot_graph_t* graph) {
  ingot_status_t s = rebuild_producers(graph);
  if (s) return s;
  uint32_t* uses = ingot_graph_use_counts(graph);
  for (uint32_t i = 0; i < graph->node_count; ++i) {
    ingot_node_t* erf = &graph->nodes[i];
    if (erf->dead || erf->op != INGOT_OP_ERF || erf->input_count != 1 || erf->output_count != 1) continue;
    /* d = x / sqrt(2) or x * (1 / sqrt(2)), read only by the Erf. */
    uint32_t d = erf->inputs[0];
    if (d == INGOT_NO_VALUE || graph->values[d].producer == INGOT_NO_VALUE || uses[d] != 1 ||
        graph->values[d].is_output || graph->values[d].dtype != INGOT_DTYPE_F32) {
      continue;
    }
    ingot_node_t* scale = &graph->nodes[graph->values[d].producer];
    if (scale->dead || scale->input_count != 2) continue;
    uint32_t x = INGOT_NO_VALUE;
    if (scale->op == INGOT_OP_DIV && is_scalar_near(graph, scale->inputs[1], 1.41421356237309505)) {
      x = scale->inputs[0];
    } else if (scale->op == INGOT_OP_MUL) {
      if (is_scalar_near(graph, scale->inputs[1], 0.70710678118654752)) x = scale->inputs[0];
      else if (is_scalar_near(graph, scale->inputs[0], 0.70710678118654752)) x = scale->inputs[1];
    }
    if (x == INGOT_NO_VALUE) continue;
    /* a = erf(d) + 1; then 0.5 * x * a in either order of the products. */
    ingot_node_t* add = sole_reader(graph, uses, erf->outputs[0], INGOT_OP_ADD);
    if (!add || !is_scalar_near(graph, other_input(add, erf->outputs[0]), 1.0)) continue;
    uint32_t a = add->outputs[0];
    ingot_node_t* m1 = sole_reader(graph, uses, a, INGOT_OP_MUL);
    if (!m1) continue;
    ingot_node_t* last;
    ingot_node_t* half = NULL; /* Mul(x, 0.5) before the product with a */
    if (other_input(m1, a) == x) {
      last = sole_reader(graph, uses, m1->outputs[0], INGOT_OP_MUL);
      if (!last || !is_scalar_near(graph, other_input(last, m1->outputs[0]), 0.5)) continue;
    } else {
      uint32_t h = other_input(m1, a);
      if (h == INGOT_NO_VALUE || graph->values[h].producer == INGOT_NO_VALUE || uses[h] != 1 ||
          graph->values[h].is_output) {
        continue;
      }
      half = &graph->nodes[graph->values[h].producer];
      if (half->dead || half->op != INGOT_OP_MUL || other_input(half, x) == INGOT_NO_VALUE ||
          !is_scalar_near(graph, other_input(half, x), 0.5)) {
        continue;
      }
      last = m1;
    }
    /* The last product becomes Gelu(x); the rest of the chain goes. */
    uint32_t* in = INGOT_ARENA_ARRAY(&graph->arena, uint32_t, 1);
    in[0] = x;
    last->op = INGOT_OP_GELU;
    last->inputs = in;
    last->input_count = 1;
    last->attr_count = 0;
    last->name = ingot_arena_printf(&graph->arena, "%s_gelu", erf->name);
    ingot_node_t* gone[4] = {scale, erf, add, last == m1 ? half : m1};
    for (uint32_t k = 0; k < 4; ++k) {
      gone[k]->dead = true;
      uses[gone[k]->outputs[0]] = 0;
      graph->values[gone[k]->outputs[0]].producer = INGOT_NO_VALUE;
    }
    uses[x] -= 1; /* read by the scale and by a product before; by the Gelu now */
  }
  free(uses);
  return INGOT_OK;
}

/* ---- LayerNorm ---- */

/* Whether a ReduceMean node averages over the last axis of its rank-r input
 * only, keeping it (axes as an attribute, or as a constant input from opset
 * 18 on). */
static bool mean_of_last_axis(const ingot_graph_t* g, const ingot_node_t* n, int32_t rank) {
  if (n->dead || n->op != INGOT_OP_REDUCEMEAN || n->output_count != 1 || rank < 1) return false;
  if (ingot_node_attr_int(n, "keepdims", 1) != 1) return false;
  uint32_t count = 0;
  const int64_t* axes = ingot_node_attr_ints(n, "axes", &count);
  if (!axes && n->input_count >= 2 && n->inputs[1] != INGOT_NO_VALUE) {
    const ingot_value_t* av = &g->values[n->inputs[1]];
    if (av->kind != INGOT_VALUE_WEIGHT || !av->data || av->dtype != INGOT_DTYPE_I64) return false;
    axes = av->data;
    count = (uint32_t)ingot_value_numel(av);
  }
  return axes && count == 1 && (axes[0] == -1 || axes[0] == rank - 1);
}

/* Whether value id is a 1-D float32 weight of n elements (LayerNorm's
 * scale and bias shape). */
static bool is_row_weight(const ingot_graph_t* g, uint32_t id, int64_t n) {
  return is_f32_weight(g, id, n) && g->values[id].rank == 1;
}

ingot_status_t ingot_graph_fuse_layernorm(ingot_graph_t* graph) {
  ingot_status_t s = rebuild_producers(graph);
  if (s) return s;
  uint32_t* uses = ingot_graph_use_counts(graph);
  for (uint32_t i = 0; i < graph->node_count; ++i) {
    ingot_node_t* pow = &graph->nodes[i];
    if (pow->dead || pow->op != INGOT_OP_POW || pow->input_count != 2 || pow->output_count != 1 ||
        !is_scalar_near(graph, pow->inputs[1], 2.0)) {
      continue;
    }
    /* d = Sub(x, ReduceMean(x)), read by the Pow and the Div only. */
    uint32_t d = pow->inputs[0];
    if (d == INGOT_NO_VALUE || graph->values[d].producer == INGOT_NO_VALUE || uses[d] != 2 ||
        graph->values[d].is_output || graph->values[d].dtype != INGOT_DTYPE_F32) {
      continue;
    }
    ingot_node_t* sub = &graph->nodes[graph->values[d].producer];
    if (sub->dead || sub->op != INGOT_OP_SUB || sub->input_count != 2) continue;
    uint32_t x = sub->inputs[0], m = sub->inputs[1];
    if (x == INGOT_NO_VALUE || m == INGOT_NO_VALUE || uses[m] != 1 || graph->values[m].is_output ||
        graph->values[m].producer == INGOT_NO_VALUE) {
      continue;
    }
    const ingot_value_t* xv = &graph->values[x];
    if (xv->dtype != INGOT_DTYPE_F32 || xv->rank < 1 || xv->dims[xv->rank - 1] < 1) continue;
    int64_t len = xv->dims[xv->rank - 1];
    ingot_node_t* mean = &graph->nodes[graph->values[m].producer];
    if (!mean_of_last_axis(graph, mean, xv->rank) || mean->inputs[0] != x) continue;
    /* v = ReduceMean(d^2); e = v + eps; r = Sqrt(e); n = d / r. */
    ingot_node_t* var = sole_reader(graph, uses, pow->outputs[0], INGOT_OP_REDUCEMEAN);
    if (!var || !mean_of_last_axis(graph, var, xv->rank)) continue;
    ingot_node_t* add_eps = sole_reader(graph, uses, var->outputs[0], INGOT_OP_ADD);
    uint32_t eps_id = add_eps ? other_input(add_eps, var->outputs[0]) : INGOT_NO_VALUE;
    if (!add_eps || !is_f32_weight(graph, eps_id, 1)) continue;
    float eps = *(const float*)graph->values[eps_id].data;
    if (!(eps >= 0.0f && eps < 1.0f)) continue;
    ingot_node_t* root = sole_reader(graph, uses, add_eps->outputs[0], INGOT_OP_SQRT);
    if (!root) continue;
    ingot_node_t* div = sole_reader(graph, uses, root->outputs[0], INGOT_OP_DIV);
    if (!div || div->inputs[0] != d) continue;
    /* y = n * gamma (either order), then + beta (either order) if present. */
    ingot_node_t* mul = sole_reader(graph, uses, div->outputs[0], INGOT_OP_MUL);
    uint32_t gamma = mul ? other_input(mul, div->outputs[0]) : INGOT_NO_VALUE;
    if (!mul || !is_row_weight(graph, gamma, len)) continue;
    ingot_node_t* add_beta = sole_reader(graph, uses, mul->outputs[0], INGOT_OP_ADD);
    uint32_t beta = add_beta ? other_input(add_beta, mul->outputs[0]) : INGOT_NO_VALUE;
    if (add_beta && !is_row_weight(graph, beta, len)) add_beta = NULL;
    /* The last node becomes LayerNormalization(x, gamma[, beta]); the rest
     * of the chain goes. */
    ingot_node_t* last = add_beta ? add_beta : mul;
    uint32_t* in = INGOT_ARENA_ARRAY(&graph->arena, uint32_t, 3);
    in[0] = x;
    in[1] = gamma;
    in[2] = beta;
    ingot_node_t* gone[8] = {mean, sub, pow, var, add_eps, root, div, add_beta ? mul : NULL};
    last->op = INGOT_OP_LAYERNORMALIZATION;
    last->inputs = in;
    last->input_count = add_beta ? 3 : 2;
    last->attr_count = 0;
    last->name = ingot_arena_printf(&graph->arena, "%s_layernorm", mean->name);
    uint32_t last_id = (uint32_t)(last - graph->nodes);
    for (uint32_t k = 0; k < 8; ++k) {
      if (!gone[k]) continue;
      gone[k]->dead = true;
      uses[gone[k]->outputs[0]] = 0;
      graph->values[gone[k]->outputs[0]].producer = INGOT_NO_VALUE;
    }
    uses[x] -= 1; /* read by the mean and the Sub before; by the LayerNorm now */
    ingot_attr_t* a = ingot_graph_node_add_attr(graph, last_id, "axis", INGOT_ATTR_INT);
    a->i = -1;
    a = ingot_graph_node_add_attr(graph, last_id, "epsilon", INGOT_ATTR_FLOAT);
    a->f = eps;
  }
  free(uses);
  return INGOT_OK;
}

/* ---- activation fusion ---- */

bool ingot_graph_clip_bounds_f32(const ingot_graph_t* g, const ingot_node_t* n, float* lo, float* hi) {
  *lo = -FLT_MAX;
  *hi = FLT_MAX;
  if (n->input_count <= 1) {
    *lo = ingot_node_attr_float(n, "min", -FLT_MAX);
    *hi = ingot_node_attr_float(n, "max", FLT_MAX);
    return true;
  }
  for (uint32_t k = 1; k < n->input_count && k < 3; ++k) {
    if (n->inputs[k] == INGOT_NO_VALUE) continue;
    const ingot_value_t* v = &g->values[n->inputs[k]];
    if (v->kind != INGOT_VALUE_WEIGHT || v->dtype != INGOT_DTYPE_F32 || !v->data || ingot_value_numel(v) != 1) {
      return false;
    }
    float x = *(const float*)v->data;
    if (k == 1) *lo = x; else *hi = x;
  }
  return true;
}

static bool same_shape(const ingot_value_t* a, const ingot_value_t* b) {
  if (a->rank != b->rank || a->rank < 0 || a->dtype != b->dtype) return false;
  for (int32_t i = 0; i < a->rank; ++i)
    if (a->dims[i] != b->dims[i] || a->dims[i] < 0) return false;
  return true;
}

/* Node p_id takes over `consumer`'s output: the consumer reads p's output x,
 * which nothing else reads, and dies; with `extra` (not INGOT_NO_VALUE) p's
 * inputs grow to slot + 1 with extra at `slot`. */
static void absorb_consumer(ingot_graph_t* graph, uint32_t p_id, ingot_node_t* consumer, uint32_t x, uint32_t extra,
                            uint32_t slot, uint32_t* uses) {
  ingot_node_t* p = &graph->nodes[p_id];
  if (extra != INGOT_NO_VALUE) {
    uint32_t* inputs = INGOT_ARENA_ARRAY(&graph->arena, uint32_t, slot + 1);
    for (uint32_t k = 0; k <= slot; ++k) inputs[k] = k < p->input_count ? p->inputs[k] : INGOT_NO_VALUE;
    inputs[slot] = extra;
    p->inputs = inputs;
    p->input_count = slot + 1;
  }
  uint32_t y = consumer->outputs[0];
  p->outputs[0] = y;
  graph->values[y].producer = p_id;
  graph->values[x].producer = INGOT_NO_VALUE;
  consumer->dead = true;
  uses[x] = 0;
}

/* Offers every two-input node of op `op` whose input x is a float32 value
 * made by a node and read by nothing else (x taken from either side; the
 * fuser checks the side where the op is not commutative) to `fuse` with the
 * node's other input; `fuse` absorbs the node into x's producer and returns
 * true, or declines. */
typedef bool (*add_fuser_t)(ingot_graph_t* graph, uint32_t* uses, ingot_node_t* add, uint32_t x, uint32_t other);

static ingot_status_t fuse_consumers(ingot_graph_t* graph, ingot_op_t op, add_fuser_t fuse) {
  ingot_status_t s = rebuild_producers(graph);
  if (s) return s;
  uint32_t* uses = ingot_graph_use_counts(graph);
  for (uint32_t i = 0; i < graph->node_count; ++i) {
    ingot_node_t* add = &graph->nodes[i];
    if (add->dead || add->op != op || add->input_count != 2 || add->output_count != 1) continue;
    for (uint32_t side = 0; side < 2; ++side) {
      uint32_t x = add->inputs[side], other = add->inputs[1 - side];
      if (x == INGOT_NO_VALUE || other == INGOT_NO_VALUE || x == other) continue;
      const ingot_value_t* xv = &graph->values[x];
      if (xv->producer == INGOT_NO_VALUE || xv->is_output || uses[x] != 1 || xv->dtype != INGOT_DTYPE_F32) continue;
      if (!same_shape(xv, &graph->values[add->outputs[0]])) continue;
      if (fuse(graph, uses, add, x, other)) break;
    }
  }
  free(uses);
  return INGOT_OK;
}

/* The graph is sorted: a value made by a node before the conv does not
 * depend on the conv's output. */
static bool fuse_residual(ingot_graph_t* graph, uint32_t* uses, ingot_node_t* add, uint32_t x, uint32_t r) {
  const ingot_value_t* rv = &graph->values[r];
  if (!same_shape(&graph->values[x], rv)) return false;
  uint32_t p_id = graph->values[x].producer;
  ingot_node_t* p = &graph->nodes[p_id];
  if (p->dead || (p->op != INGOT_OP_CONV && p->op != INGOT_OP_MATMUL) || p->epilogue.residual_input ||
      p->epilogue.activation != INGOT_ACTIVATION_NONE || p->output_count != 1 || p->outputs[0] != x ||
      p->input_count > 3) {
    return false;
  }
  /* A MatMul's input 2 is only ever its fused bias. */
  if (p->op == INGOT_OP_MATMUL && p->input_count == 3 && p->epilogue.bias_input != 2) return false;
  if (rv->producer != INGOT_NO_VALUE && rv->producer >= p_id) return false;
  p->epilogue.residual_input = 3;
  absorb_consumer(graph, p_id, add, x, r, 3, uses);
  return true;
}

ingot_status_t ingot_graph_fuse_residual_add(ingot_graph_t* graph) { return fuse_consumers(graph, INGOT_OP_ADD, fuse_residual); }

/* The bias is a weight, a graph input or a value made by a node before the
 * MatMul (the graph is sorted: it does not depend on the product). */
static bool fuse_bias(ingot_graph_t* graph, uint32_t* uses, ingot_node_t* add, uint32_t x, uint32_t c) {
  const ingot_value_t* xv = &graph->values[x];
  const ingot_value_t* cv = &graph->values[c];
  if ((cv->producer != INGOT_NO_VALUE && cv->producer >= xv->producer) || cv->dtype != INGOT_DTYPE_F32 ||
      cv->rank < 1 || cv->rank > xv->rank || xv->rank < 2) {
    return false;
  }
  bool along_last = cv->dims[cv->rank - 1] == xv->dims[xv->rank - 1];
  for (int32_t d = 0; along_last && d + 1 < cv->rank; ++d) along_last = cv->dims[d] == 1;
  if (!along_last) return false;
  uint32_t p_id = xv->producer;
  ingot_node_t* p = &graph->nodes[p_id];
  if (p->dead || p->op != INGOT_OP_MATMUL || p->input_count != 2 || p->output_count != 1 || p->outputs[0] != x ||
      p->epilogue.bias_input || p->epilogue.residual_input || p->epilogue.activation != INGOT_ACTIVATION_NONE ||
      p->inputs[1] == INGOT_NO_VALUE || graph->values[p->inputs[1]].rank < 2) {
    return false;
  }
  p->epilogue.bias_input = 2;
  absorb_consumer(graph, p_id, add, x, c, 2, uses);
  return true;
}

ingot_status_t ingot_graph_fuse_matmul_bias(ingot_graph_t* graph) { return fuse_consumers(graph, INGOT_OP_ADD, fuse_bias); }

/* A product scaled by a constant: Mul(x, c) either way round, Div(x, c). */
static bool fuse_scale(ingot_graph_t* graph, uint32_t* uses, ingot_node_t* op, uint32_t x, uint32_t c) {
  if ((op->op == INGOT_OP_DIV && op->inputs[0] != x) || !is_f32_weight(graph, c, 1)) return false;
  float k = *(const float*)graph->values[c].data;
  if (op->op == INGOT_OP_DIV) k = 1.0f / k;
  if (!isfinite(k) || k == 0.0f) return false;
  uint32_t p_id = graph->values[x].producer;
  ingot_node_t* p = &graph->nodes[p_id];
  if (p->dead || p->op != INGOT_OP_MATMUL || p->input_count != 2 || p->output_count != 1 || p->outputs[0] != x ||
      p->epilogue.bias_input || p->epilogue.residual_input || p->epilogue.scale != 0.0f ||
      p->epilogue.activation != INGOT_ACTIVATION_NONE) {
    return false;
  }
  p->epilogue.scale = k;
  absorb_consumer(graph, p_id, op, x, INGOT_NO_VALUE, 0, uses);
  return true;
}

ingot_status_t ingot_graph_fuse_matmul_scale(ingot_graph_t* graph) {
  ingot_status_t s = fuse_consumers(graph, INGOT_OP_MUL, fuse_scale);
  return s ? s : fuse_consumers(graph, INGOT_OP_DIV, fuse_scale);
}

ingot_status_t ingot_graph_fuse_activations(ingot_graph_t* graph) {
  ingot_status_t s = rebuild_producers(graph);
  if (s) return s;
  uint32_t* uses = ingot_graph_use_counts(graph);
  for (uint32_t i = 0; i < graph->node_count; ++i) {
    ingot_node_t* act = &graph->nodes[i];
    if (act->dead || (act->op != INGOT_OP_RELU && act->op != INGOT_OP_CLIP && act->op != INGOT_OP_GELU) ||
        act->output_count != 1) {
      continue;
    }
    uint32_t x = act->inputs[0];
    if (x == INGOT_NO_VALUE) continue;
    ingot_value_t* xv = &graph->values[x];
    if (xv->producer == INGOT_NO_VALUE || xv->is_output || uses[x] != 1) continue;
    if (xv->dtype != INGOT_DTYPE_F32 && xv->dtype != INGOT_DTYPE_INVALID) continue;
    uint32_t p_id = xv->producer;
    ingot_node_t* p = &graph->nodes[p_id];
    if (p->dead || (p->op != INGOT_OP_CONV && p->op != INGOT_OP_GEMM && p->op != INGOT_OP_MATMUL) ||
        p->epilogue.activation != INGOT_ACTIVATION_NONE || p->outputs[0] != x) {
      continue;
    }
    float lo = 0.0f, hi = FLT_MAX;
    ingot_activation_t kind = INGOT_ACTIVATION_RELU;
    if (act->op == INGOT_OP_CLIP) {
      if (!ingot_graph_clip_bounds_f32(graph, act, &lo, &hi)) continue;
      kind = INGOT_ACTIVATION_CLIP;
    } else if (act->op == INGOT_OP_GELU) {
      const char* approx = ingot_node_attr_string(act, "approximate", "none");
      if (strcmp(approx, "none") != 0 && strcmp(approx, "tanh") != 0) continue;
      kind = strcmp(approx, "tanh") == 0 ? INGOT_ACTIVATION_GELU_TANH : INGOT_ACTIVATION_GELU;
    }
    p->epilogue.activation = kind;
    p->epilogue.act_min = lo;
    p->epilogue.act_max = hi;
    absorb_consumer(graph, p_id, act, x, INGOT_NO_VALUE, 0, uses);
  }
  free(uses);
  return INGOT_OK;
}

/* ---- compaction ---- */

void ingot_graph_compact(ingot_graph_t* graph) {
  uint32_t nv = graph->value_count, nn = graph->node_count;
  bool* keep = ingot_xcalloc(nv ? nv : 1, sizeof(bool));
  for (uint32_t i = 0; i < graph->input_count; ++i) keep[graph->inputs[i]] = true;
  for (uint32_t i = 0; i < graph->output_count; ++i) keep[graph->outputs[i]] = true;
  for (uint32_t i = 0; i < graph->check_count; ++i) keep[graph->checks[i]] = true;
  for (uint32_t k = 1; k <= graph->run_size_count; ++k)
    if (graph->run_size[k] && graph->run_size[k] - 1 < nv) keep[graph->run_size[k] - 1] = true;
  for (uint32_t i = 0; i < nv; ++i) {
    if (graph->values[i].is_output) keep[i] = true;
  }
  for (uint32_t i = 0; i < nn; ++i) {
    const ingot_node_t* n = &graph->nodes[i];
    if (n->dead) continue;
    for (uint32_t k = 0; k < n->input_count; ++k) {
      if (n->inputs[k] != INGOT_NO_VALUE) keep[n->inputs[k]] = true;
    }
    for (uint32_t k = 0; k < n->output_count; ++k) {
      if (n->outputs[k] != INGOT_NO_VALUE) keep[n->outputs[k]] = true;
    }
    for (uint32_t k = 0; k < n->attr_count; ++k) {
      if (n->attrs[k].type == INGOT_ATTR_TENSOR && n->attrs[k].tensor < nv) keep[n->attrs[k].tensor] = true;
    }
  }
  /* A sequence kept (none is, once the infer-and-fold walk is done) keeps
   * its members. */
  for (uint32_t i = 0; i < nv; ++i) {
    const ingot_sequence_t* q = graph->values[i].sequence;
    for (uint32_t k = 0; keep[i] && q && k < q->count; ++k) {
      if (q->items[k] < nv) keep[q->items[k]] = true;
    }
  }
  uint32_t* value_map = ingot_xmalloc(sizeof(uint32_t) * (nv ? nv : 1));
  uint32_t* node_map = ingot_xmalloc(sizeof(uint32_t) * (nn ? nn : 1));
  uint32_t count = 0;
  for (uint32_t i = 0; i < nv; ++i) {
    if (!keep[i]) {
      free(graph->values[i].data);
      graph->values[i].data = NULL;
      value_map[i] = INGOT_NO_VALUE;
      continue;
    }
    value_map[i] = count;
    graph->values[count++] = graph->values[i];
  }
  graph->value_count = count;
  count = 0;
  for (uint32_t i = 0; i < nn; ++i) {
    if (graph->nodes[i].dead) {
      node_map[i] = INGOT_NO_VALUE;
      continue;
    }
    node_map[i] = count;
    graph->nodes[count++] = graph->nodes[i];
  }
  graph->node_count = count;
#define REMAP(x) ((x) == INGOT_NO_VALUE ? INGOT_NO_VALUE : value_map[(x)])
  for (uint32_t i = 0; i < graph->node_count; ++i) {
    ingot_node_t* n = &graph->nodes[i];
    for (uint32_t k = 0; k < n->input_count; ++k) n->inputs[k] = REMAP(n->inputs[k]);
    if (n->guard) {
      uint32_t g = REMAP(n->guard - 1);
      n->guard = g == INGOT_NO_VALUE ? 0 : g + 1;
    }
    for (uint32_t k = 0; k < n->output_count; ++k) n->outputs[k] = REMAP(n->outputs[k]);
    for (uint32_t k = 0; k < n->attr_count; ++k) {
      if (n->attrs[k].type == INGOT_ATTR_TENSOR && n->attrs[k].tensor < nv) {
        n->attrs[k].tensor = value_map[n->attrs[k].tensor];
      }
    }
  }
  for (uint32_t i = 0; i < graph->input_count; ++i) graph->inputs[i] = REMAP(graph->inputs[i]);
  for (uint32_t i = 0; i < graph->output_count; ++i) graph->outputs[i] = REMAP(graph->outputs[i]);
  for (uint32_t i = 0; i < graph->check_count; ++i) graph->checks[i] = REMAP(graph->checks[i]);
  for (uint32_t k = 1; k <= graph->run_size_count; ++k)
    if (graph->run_size[k]) {
      uint32_t v = REMAP(graph->run_size[k] - 1);
      graph->run_size[k] = v == INGOT_NO_VALUE ? 0 : v + 1;
    }
  for (uint32_t i = 0; i < graph->value_count; ++i) {
    ingot_value_t* v = &graph->values[i];
    v->producer = v->producer == INGOT_NO_VALUE || v->producer >= nn ? INGOT_NO_VALUE : node_map[v->producer];
    if (v->runtime_shape) {
      uint32_t shape = REMAP(v->runtime_shape - 1);
      v->runtime_shape = shape == INGOT_NO_VALUE ? 0 : shape + 1;
      if (!v->runtime_shape) v->runtime_dims = 0;
    }
    if (v->range_shape) {
      uint32_t shape = REMAP(v->range_shape - 1);
      v->range_shape = shape == INGOT_NO_VALUE ? 0 : shape + 1;
    }
    if (v->shape_of) {
      uint32_t of = REMAP(v->shape_of - 1);
      v->shape_of = of == INGOT_NO_VALUE ? 0 : of + 1;
    }
    if (v->sequence) {
      ingot_sequence_t* q = INGOT_ARENA_ARRAY(&graph->arena, ingot_sequence_t, 1);
      uint32_t* items = INGOT_ARENA_ARRAY(&graph->arena, uint32_t, v->sequence->count ? v->sequence->count : 1);
      *q = *v->sequence;
      for (uint32_t k = 0; k < q->count; ++k) items[k] = q->items[k] < nv ? value_map[q->items[k]] : INGOT_NO_VALUE;
      q->items = items;
      v->sequence = q;
    }
  }
#undef REMAP
  free(node_map);
  free(value_map);
  free(keep);
}

/* ---- the pipeline ---- */

ingot_status_t ingot_graph_optimize_with(ingot_graph_t* graph, ingot_node_eval_fn_t eval, void* eval_self) {
  ingot_status_t s = ingot_graph_optimize_begin(graph, eval, eval_self);
  return s ? s : ingot_graph_optimize_end(graph);
}

ingot_status_t ingot_graph_optimize_begin(ingot_graph_t* graph, ingot_node_eval_fn_t eval, void* eval_self) {
  ingot_status_t s;
  /* Dead code first (Identity/Dropout bypassed, unused nodes dropped), then
   * one walk that infers each node and folds it when its value is known, so
   * that a Reshape/Expand/Slice/... whose shape input is computed from
   * constants or static shapes finds a weight there. */
  if ((s = ingot_graph_copy_constant_outputs(graph))) return s;
  if ((s = ingot_graph_sort(graph))) return s;
  if ((s = ingot_graph_compute_half_in_f32(graph))) return s;
  /* Before folding, which would turn the weights' DequantizeLinear into
   * float weights. */
  if ((s = ingot_graph_fuse_qdq(graph))) return s;
  if ((s = ingot_graph_eliminate_dead_code(graph))) return s;
  if ((s = ingot_graph_infer_and_fold(graph, eval, eval_self))) return s;
  return ingot_graph_eliminate_dead_code(graph);
}

ingot_status_t ingot_graph_optimize_end(ingot_graph_t* graph) {
  ingot_status_t s;
  if ((s = ingot_graph_fold_batchnorm(graph))) return s;
  if ((s = ingot_graph_fuse_residual_add(graph))) return s;
  if ((s = ingot_graph_fuse_gelu(graph))) return s;
  if ((s = ingot_graph_fuse_layernorm(graph))) return s;
  if ((s = ingot_graph_fuse_matmul_scale(graph))) return s;
  if ((s = ingot_graph_fuse_matmul_bias(graph))) return s;
  /* again: a MatMul's residual Add follows its bias Add */
  if ((s = ingot_graph_fuse_residual_add(graph))) return s;
  if ((s = ingot_graph_fuse_activations(graph))) return s;
  if ((s = ingot_graph_split_qlinear(graph))) return s;
  if ((s = ingot_graph_pad_conv_inputs(graph))) return s;
  if ((s = ingot_graph_eliminate_dead_code(graph))) return s;
  if ((s = ingot_graph_sort(graph))) return s;
  if ((s = ingot_graph_infer_shapes(graph))) return s;
  if (graph->activation_block) {
    if ((s = ingot_graph_block_activations(graph)) || (s = ingot_graph_sort(graph)) ||
        (s = ingot_graph_infer_shapes(graph))) {
      return s;
    }
  }
  if ((s = ingot_graph_fuse_elementwise(graph)) || (s = ingot_graph_infer_shapes(graph))) return s;
  if ((s = ingot_graph_pad_into_producers(graph))) return s;
  if ((s = ingot_graph_pack_weights(graph))) return s;
  if ((s = ingot_graph_fuse_requantize(graph))) return s;
  if ((s = ingot_graph_fold_requant_multipliers(graph))) return s;
  if ((s = ingot_graph_pad_into_producers(graph))) return s; /* the fused ConvIntegers' pads */
  if ((s = ingot_graph_eliminate_dead_code(graph))) return s;
  ingot_graph_compact(graph);
  return ingot_graph_settle_guards(graph);
}

ingot_status_t ingot_graph_optimize(ingot_graph_t* graph) { return ingot_graph_optimize_with(graph, NULL, NULL); }
