/* Control flow: If, Loop and Scan expanded into the graph that holds them.
 *
 * ingot_graph_infer_and_fold calls ingot_graph_expand_control_flow when its
 * walk reaches such a node, after the node's inputs were inferred and
 * folded. An expansion instantiates a subgraph (the taken branch, or the
 * body once per iteration) by appending a copy of its nodes, with fresh
 * value names, and hands each appended node back to the walk (`visit`) at
 * once, so that its outputs are inferred and, where the inputs are known,
 * folded before the next one is added: a loop's condition computed by its
 * body is known that way, and so is a nested If's. The results are wired to
 * the carrier's outputs with Identity nodes (dead-code elimination removes
 * them), and the carrier is marked dead. The appended nodes sit after the
 * carrier's consumers; the walk sorts the graph when it is done.
 *
 * See graph.h ("Control flow") for what is expanded and the limits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph_internal.h"
#include "infer_internal.h"

/* Value names of the graph, hashed (ingot_graph_find_value is a linear
 * scan, and unrolling adds many names). */
struct ingot_cf_state_t {
  uint32_t* table; /* value id + 1, 0 = empty */
  uint32_t cap, count;
  uint64_t added;  /* nodes added by every expansion so far */
  uint32_t suffix; /* the last suffix new_value gave a taken name */
  /* The guard of the nodes being added (inside a branch of a run-time If):
   * node.guard and node.guard_when. */
  uint32_t guard;
  bool guard_when;
};

static uint64_t hash_str(const char* s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; ++s) h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

static void names_insert_raw(uint32_t* table, uint32_t cap, const char* name, uint32_t id) {
  uint32_t i = (uint32_t)hash_str(name) & (cap - 1);
  while (table[i]) i = (i + 1) & (cap - 1);
  table[i] = id + 1;
}

static void names_insert(ingot_cf_state_t* st, const ingot_graph_t* g, uint32_t id) {
  if ((st->count + 1) * 2 > st->cap) {
    uint32_t cap = st->cap ? st->cap * 2 : 1024;
    uint32_t* table = ingot_xcalloc(cap, sizeof(uint32_t));
    for (uint32_t i = 0; i < st->cap; ++i) {
      if (st->table[i]) names_insert_raw(table, cap, g->values[st->table[i] - 1].name, st->table[i] - 1);
    }
    free(st->table);
    st->table = table;
    st->cap = cap;
  }
  names_insert_raw(st->table, st->cap, g->values[id].name, id);
  st->count++;
}

static bool names_has(const ingot_cf_state_t* st, const ingot_graph_t* g, const char* name) {
  if (!st->cap) return false;
  for (uint32_t i = (uint32_t)hash_str(name) & (st->cap - 1); st->table[i]; i = (i + 1) & (st->cap - 1)) {
    if (strcmp(g->values[st->table[i] - 1].name, name) == 0) return true;
  }
  return false;
}

void ingot_cf_state_free(ingot_cf_state_t* st) {
  if (!st) return;
  free(st->table);
  free(st);
}

bool ingot_graph_is_control_flow(ingot_op_t op) {
  return op == INGOT_OP_IF || op == INGOT_OP_LOOP || op == INGOT_OP_SCAN;
}

/* ---- building blocks ---- */

typedef struct cf_t {
  ingot_graph_t* g;
  ingot_cf_state_t* st;
  ingot_graph_visit_fn_t visit;
  void* self;
  uint32_t carrier;       /* the node being expanded */
  const char* name;       /* its name (graph arena) */
  const char* op;
} cf_t;

/* A new value named after `base`, unique in the graph. */
static uint32_t new_value(cf_t* c, const char* base, ingot_value_kind_t kind) {
  /* A taken name gets a suffix from one counter for the whole walk: probing
   * _1, _2, ... per base would be quadratic in the copies of one body. */
  const char* name = base;
  while (names_has(c->st, c->g, name)) name = ingot_arena_printf(&c->g->arena, "%s_%u", base, ++c->st->suffix);
  uint32_t id = ingot_graph_add_value(c->g, name, kind);
  names_insert(c->st, c->g, id);
  return id;
}

static uint32_t new_weight(cf_t* c, const char* base, ingot_dtype_t dtype, int32_t rank, const int64_t* dims,
                           const void* data, size_t bytes) {
  uint32_t id = new_value(c, base, INGOT_VALUE_WEIGHT);
  void* copy = ingot_xmalloc(bytes ? bytes : 1);
  if (bytes) memcpy(copy, data, bytes);
  ingot_graph_set_weight(c->g, id, dtype, rank, dims, copy);
  return id;
}

static uint32_t scalar_i64(cf_t* c, const char* base, int64_t v) {
  return new_weight(c, base, INGOT_DTYPE_I64, 0, NULL, &v, sizeof(v));
}

/* Appends a node and lets the walk infer (and fold, or expand) it. */
static ingot_status_t add_visit(cf_t* c, ingot_op_t op, const char* name, const uint32_t* in, uint32_t nin,
                                const uint32_t* out, uint32_t nout, const ingot_attr_t* attrs, uint32_t nattr,
                                uint32_t* out_node) {
  if (++c->st->added > INGOT_UNROLL_MAX_NODES) {
    return ingot_fail(INGOT_ERROR_LIMIT,
                      "node '%s' (%s): expanding control flow adds more than %u nodes (unroll a smaller loop, or "
                      "bind fewer iterations)",
                      c->name, c->op, INGOT_UNROLL_MAX_NODES);
  }
  uint32_t id = ingot_graph_add_node(c->g, op, name, in, nin, out, nout);
  c->g->nodes[id].guard = c->st->guard;
  c->g->nodes[id].guard_when = c->st->guard_when;
  if (nattr) {
    ingot_attr_t* copy = INGOT_ARENA_ARRAY(&c->g->arena, ingot_attr_t, nattr);
    memcpy(copy, attrs, sizeof(ingot_attr_t) * nattr);
    c->g->nodes[id].attrs = copy;
    c->g->nodes[id].attr_count = nattr;
  }
  if (out_node) *out_node = id;
  return c->visit(c->self, c->g, id);
}

/* One output node of op `op` over `in`, a new value named after `base`. */
static ingot_status_t emit1(cf_t* c, ingot_op_t op, const char* base, const uint32_t* in, uint32_t nin,
                            const ingot_attr_t* attrs, uint32_t nattr, uint32_t* out_value) {
  uint32_t out = new_value(c, base, INGOT_VALUE_INTERMEDIATE);
  *out_value = out;
  return add_visit(c, op, ingot_arena_printf(&c->g->arena, "%s", c->g->values[out].name), in, nin, &out, 1, attrs,
                   nattr, NULL);
}

static ingot_attr_t int_attr(const char* name, int64_t v) {
  ingot_attr_t a;
  memset(&a, 0, sizeof(a));
  a.name = name;
  a.type = INGOT_ATTR_INT;
  a.i = v;
  a.tensor = INGOT_NO_VALUE;
  return a;
}

static const ingot_value_t* shaped(cf_t* c, uint32_t v) {
  const ingot_value_t* x = &c->g->values[v];
  return x->rank >= 0 && ingot_value_numel(x) >= 0 ? x : NULL;
}

/* x with a dimension of 1 inserted at `axis` (a Reshape to a constant
 * shape: the same in every opset that has Loop and Scan). */
static ingot_status_t unsqueeze(cf_t* c, uint32_t x, int32_t axis, uint32_t* out) {
  const ingot_value_t* v = shaped(c, x);
  if (!v || v->rank + 1 > (int32_t)INGOT_MAX_RANK || axis < 0 || axis > v->rank) {
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "node '%s' (%s): output '%s' of the body has no static shape to stack",
                      c->name, c->op, c->g->values[x].name);
  }
  int64_t dims[INGOT_MAX_RANK];
  int32_t r = 0;
  for (int32_t i = 0; i <= v->rank; ++i) {
    if (i == axis) dims[r++] = 1;
    if (i < v->rank) dims[r++] = v->dims[i];
  }
  int64_t len = r;
  char* base = ingot_arena_printf(&c->g->arena, "%s.shape", c->g->values[x].name);
  uint32_t in[2] = {x, new_weight(c, base, INGOT_DTYPE_I64, 1, &len, dims, sizeof(int64_t) * (size_t)r)};
  return emit1(c, INGOT_OP_RESHAPE, ingot_arena_printf(&c->g->arena, "%s.unsqueezed", c->g->values[x].name), in, 2,
               NULL, 0, out);
}

/* Concat of `count` values along `axis`, in a tree of Concat nodes of at
 * most INGOT_NODE_INPUTS_MAX inputs. `items` is overwritten. */
static ingot_status_t concat_all(cf_t* c, uint32_t* items, uint32_t count, int32_t axis, const char* base,
                                 uint32_t* out) {
  ingot_attr_t a = int_attr("axis", axis);
  while (count > 1) {
    uint32_t groups = 0;
    for (uint32_t i = 0; i < count; i += INGOT_NODE_INPUTS_MAX) {
      uint32_t n = count - i < INGOT_NODE_INPUTS_MAX ? count - i : INGOT_NODE_INPUTS_MAX;
      uint32_t v = items[i];
      ingot_status_t s = n == 1 ? INGOT_OK : emit1(c, INGOT_OP_CONCAT, base, items + i, n, &a, 1, &v);
      if (s) return s;
      items[groups++] = v;
    }
    count = groups;
  }
  *out = items[0];
  return INGOT_OK;
}

/* Per iteration values of one scan output -> one tensor, stacked along
 * `axis` (of the result), in reverse order when `reverse`. */
static ingot_status_t stack(cf_t* c, uint32_t* items, uint32_t count, int32_t axis, bool reverse, const char* base,
                            uint32_t* out) {
  if (count == 0) {
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "node '%s' (%s): a scan output of zero iterations is not supported",
                      c->name, c->op);
  }
  for (uint32_t i = 0; i < count; ++i) {
    if (c->g->values[items[i]].sequence) {
      return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                        "node '%s' (%s): scan output '%s' of the body is a sequence: not supported (a sequence "
                        "can be carried from one iteration to the next, not stacked)",
                        c->name, c->op, c->g->values[items[i]].name);
    }
  }
  if (reverse) {
    for (uint32_t i = 0; i < count / 2; ++i) {
      uint32_t t = items[i];
      items[i] = items[count - 1 - i];
      items[count - 1 - i] = t;
    }
  }
  for (uint32_t i = 0; i < count; ++i) {
    ingot_status_t s = unsqueeze(c, items[i], axis, &items[i]);
    if (s) return s;
  }
  return concat_all(c, items, count, axis, base, out);
}

/* ---- lists: the values of sequence type (ingot_value_t.sequence) ---- */

static const ingot_sequence_t* list_of(cf_t* c, uint32_t v) {
  return v == INGOT_NO_VALUE || v >= c->g->value_count ? NULL : c->g->values[v].sequence;
}

/* Makes value `v` the list items[count] (copied) of element type dtype. */
static ingot_status_t set_list(cf_t* c, uint32_t v, ingot_dtype_t dtype, const uint32_t* items, uint32_t count) {
  ingot_value_t* x = &c->g->values[v];
  if (x->is_output) {
    return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                      "node '%s' (%s): graph output '%s' is a sequence; a bundle's inputs and outputs are tensors",
                      c->name, c->op, x->name);
  }
  ingot_sequence_t* q = INGOT_ARENA_ARRAY(&c->g->arena, ingot_sequence_t, 1);
  uint32_t* copy = INGOT_ARENA_ARRAY(&c->g->arena, uint32_t, count ? count : 1);
  if (count) memcpy(copy, items, sizeof(uint32_t) * count);
  q->dtype = dtype;
  q->count = count;
  q->items = copy;
  x->sequence = q;
  return INGOT_OK;
}

/* ---- instantiating a subgraph ---- */

/* The value of the body's value `v` in the graph, copying a weight of the
 * body on first use. */
static ingot_status_t map_value(cf_t* c, const ingot_graph_t* body, uint32_t* map, uint32_t v, const char* prefix,
                                uint32_t* out) {
  if (v == INGOT_NO_VALUE) {
    *out = INGOT_NO_VALUE;
    return INGOT_OK;
  }
  if (v >= body->value_count) return ingot_fail(INGOT_ERROR_INTERNAL, "node '%s' (%s): bad body value", c->name, c->op);
  if (map[v] != INGOT_NO_VALUE) {
    *out = map[v];
    return INGOT_OK;
  }
  const ingot_value_t* bv = &body->values[v];
  if (bv->kind != INGOT_VALUE_WEIGHT || !bv->data || ingot_value_numel(bv) < 0) {
    return ingot_fail(INGOT_ERROR_CORRUPT, "node '%s' (%s): value '%s' of its subgraph is read before it is computed",
                      c->name, c->op, bv->name);
  }
  map[v] = new_weight(c, ingot_arena_printf(&c->g->arena, "%s%s", prefix, bv->name), bv->dtype, bv->rank, bv->dims,
                      bv->data, (size_t)ingot_value_bytes(bv));
  *out = map[v];
  return INGOT_OK;
}

/* Appends one instance of `body`: its inputs are `formal` (body->input_count
 * values of the graph, INGOT_NO_VALUE for an absent one), its captures the
 * carrier's inputs at their slots (`carrier_inputs`, a copy). Writes the
 * graph value of each body output to out_outputs (body->output_count). Names
 * of the new nodes and values start with `prefix`. */
static ingot_status_t instantiate(cf_t* c, const ingot_graph_t* body, const uint32_t* formal,
                                  const uint32_t* carrier_inputs, uint32_t carrier_input_count, const char* prefix,
                                  uint32_t* out_outputs) {
  uint32_t* map = ingot_xmalloc(sizeof(uint32_t) * (body->value_count ? body->value_count : 1));
  for (uint32_t v = 0; v < body->value_count; ++v) map[v] = INGOT_NO_VALUE;
  for (uint32_t k = 0; k < body->input_count; ++k) map[body->inputs[k]] = formal[k];
  ingot_status_t s = INGOT_OK;
  for (uint32_t k = 0; k < body->capture_count; ++k) {
    if (body->capture_slots[k] >= carrier_input_count) {
      s = ingot_fail(INGOT_ERROR_INTERNAL, "node '%s' (%s): capture slot out of range", c->name, c->op);
      break;
    }
    map[body->captures[k]] = carrier_inputs[body->capture_slots[k]];
  }
  uint32_t in[INGOT_NODE_INPUTS_MAX], out[INGOT_NODE_OUTPUTS_MAX];
  for (uint32_t j = 0; j < body->node_count && !s; ++j) {
    const ingot_node_t* bn = &body->nodes[j];
    if (bn->dead) continue;
    if (bn->input_count > INGOT_NODE_INPUTS_MAX || bn->output_count > INGOT_NODE_OUTPUTS_MAX) {
      s = ingot_fail(INGOT_ERROR_INTERNAL, "node '%s' (%s): too many inputs", bn->name, ingot_op_name(bn->op));
      break;
    }
    for (uint32_t k = 0; k < bn->input_count && !s; ++k) s = map_value(c, body, map, bn->inputs[k], prefix, &in[k]);
    if (s) break;
    for (uint32_t k = 0; k < bn->output_count; ++k) {
      uint32_t o = bn->outputs[k];
      out[k] = INGOT_NO_VALUE;
      if (o == INGOT_NO_VALUE || o >= body->value_count) continue;
      out[k] = new_value(c, ingot_arena_printf(&c->g->arena, "%s%s", prefix, body->values[o].name),
                         INGOT_VALUE_INTERMEDIATE);
      map[o] = out[k];
    }
    /* Attributes: a deep copy (a pass may rewrite them), tensors copied in. */
    ingot_attr_t* attrs = NULL;
    if (bn->attr_count) {
      attrs = INGOT_ARENA_ARRAY(&c->g->arena, ingot_attr_t, bn->attr_count);
      for (uint32_t k = 0; k < bn->attr_count && !s; ++k) {
        ingot_attr_t a = bn->attrs[k];
        a.name = ingot_arena_strdup(&c->g->arena, a.name);
        if (a.type == INGOT_ATTR_STRING && a.s) a.s = ingot_arena_strdup(&c->g->arena, a.s);
        if (a.type == INGOT_ATTR_INTS) {
          int64_t* ints = INGOT_ARENA_ARRAY(&c->g->arena, int64_t, a.count ? a.count : 1);
          if (a.count) memcpy(ints, a.ints, sizeof(int64_t) * a.count);
          a.ints = ints;
        }
        if (a.type == INGOT_ATTR_FLOATS) {
          float* floats = INGOT_ARENA_ARRAY(&c->g->arena, float, a.count ? a.count : 1);
          if (a.count) memcpy(floats, a.floats, sizeof(float) * a.count);
          a.floats = floats;
        }
        if (a.type == INGOT_ATTR_STRINGS) {
          const char** strings = INGOT_ARENA_ARRAY(&c->g->arena, const char*, a.count ? a.count : 1);
          for (uint32_t j = 0; j < a.count; ++j) strings[j] = ingot_arena_strdup(&c->g->arena, a.strings[j]);
          a.strings = strings;
        }
        if (a.type == INGOT_ATTR_TENSOR) s = map_value(c, body, map, a.tensor, prefix, &a.tensor);
        attrs[k] = a;
      }
      if (s) break;
    }
    const char* name = ingot_arena_printf(&c->g->arena, "%s%s", prefix, bn->name);
    s = add_visit(c, bn->op, name, in, bn->input_count, out, bn->output_count, attrs, bn->attr_count, NULL);
  }
  for (uint32_t k = 0; k < body->output_count && !s; ++k) {
    s = map_value(c, body, map, body->outputs[k], prefix, &out_outputs[k]);
  }
  free(map);
  return s;
}

/* Makes the carrier's output k the value `v` (an Identity node). */
static ingot_status_t wire_output(cf_t* c, uint32_t k, uint32_t v) {
  const ingot_node_t* n = &c->g->nodes[c->carrier];
  if (k >= n->output_count || n->outputs[k] == INGOT_NO_VALUE) return INGOT_OK;
  uint32_t o = n->outputs[k];
  const char* name = ingot_arena_printf(&c->g->arena, "%s.out%u", c->name, k);
  return add_visit(c, INGOT_OP_IDENTITY, name, &v, 1, &o, 1, NULL, 0, NULL);
}

/* The GRAPH attribute `name` of the carrier (NULL when absent). */
static const ingot_graph_t* body_attr(cf_t* c, const char* name) {
  const ingot_attr_t* a = ingot_node_attr(&c->g->nodes[c->carrier], name);
  return a && a->type == INGOT_ATTR_GRAPH ? a->graph : NULL;
}

/* Reads a scalar weight as an integer (bool, int32 or int64); false when
 * `v` is not a known scalar. */
static bool const_scalar(const ingot_graph_t* g, uint32_t v, int64_t* out) {
  if (v == INGOT_NO_VALUE) return false;
  const ingot_value_t* x = &g->values[v];
  if (x->kind != INGOT_VALUE_WEIGHT || !x->data || ingot_value_numel(x) != 1) return false;
  switch (x->dtype) {
    case INGOT_DTYPE_BOOL: case INGOT_DTYPE_U8: *out = *(const uint8_t*)x->data != 0; return true;
    case INGOT_DTYPE_I32: *out = *(const int32_t*)x->data; return true;
    case INGOT_DTYPE_I64: *out = *(const int64_t*)x->data; return true;
    default: return false;
  }
}

/* The carrier's first input slot taken by a capture of any of its
 * subgraphs: its own inputs end before it. */
static uint32_t first_capture_slot(const ingot_node_t* n) {
  uint32_t first = n->input_count;
  for (uint32_t i = 0; i < n->attr_count; ++i) {
    const ingot_graph_t* b = n->attrs[i].type == INGOT_ATTR_GRAPH ? n->attrs[i].graph : NULL;
    for (uint32_t k = 0; b && k < b->capture_count; ++k) {
      if (b->capture_slots[k] < first) first = b->capture_slots[k];
    }
  }
  return first;
}

static const char* input_deps(cf_t* c, uint32_t v) {
  char deps[1024];
  ingot_graph_input_deps(c->g, v, deps, sizeof deps);
  return ingot_arena_strdup(&c->g->arena, deps);
}

/* ---- If ---- */

static void shape_text(const ingot_value_t* v, char* buf, size_t size) {
  int n = snprintf(buf, size, "%s [", ingot_dtype_name(v->dtype));
  for (int32_t i = 0; i < v->rank && n > 0 && (size_t)n < size; ++i) {
    n += snprintf(buf + n, size - (size_t)n, "%s%lld", i ? "x" : "", (long long)v->dims[i]);
  }
  if (n > 0 && (size_t)n < size) snprintf(buf + n, size - (size_t)n, "]");
}

/* Where(cond, t, e) into *out, with t's shape (a condition of shape [1]
 * would broadcast a scalar to [1]): the join of guarded values. The
 * condition is used as it is, since a guard names it (a Reshape of it would
 * be a view that the runtime reads no sooner than the Where). */
static ingot_status_t select_value(cf_t* c, uint32_t cond, uint32_t t, uint32_t e, const char* base, uint32_t* out) {
  int32_t rank = c->g->values[t].rank;
  uint32_t in[3] = {cond, t, e}, v;
  ingot_status_t s = emit1(c, INGOT_OP_WHERE, base, in, 3, NULL, 0, &v);
  if (!s && c->g->values[v].rank != rank) {
    const ingot_value_t* tv = &c->g->values[t];
    int64_t len = rank;
    uint32_t rin[2] = {v, new_weight(c, ingot_arena_printf(&c->g->arena, "%s.shape", base), INGOT_DTYPE_I64, 1, &len,
                                     tv->dims, sizeof(int64_t) * (size_t)rank)};
    s = emit1(c, INGOT_OP_RESHAPE, ingot_arena_printf(&c->g->arena, "%s.reshaped", base), rin, 2, NULL, 0, &v);
  }
  *out = v;
  return s;
}

/* Do values a and b have one dtype and static shape? */
static bool same_shape(cf_t* c, uint32_t a, uint32_t b) {
  const ingot_value_t* t = shaped(c, a);
  const ingot_value_t* e = shaped(c, b);
  bool same = t && e && t->dtype == e->dtype && t->rank == e->rank;
  for (int32_t d = 0; same && d < t->rank; ++d) same = t->dims[d] == e->dims[d];
  return same;
}

/* The join of t (when cond holds) and e, guarded values of one dtype and
 * shape (a Where), or two lists of one length (a list of the joins of
 * their members; a member both share stays). *out_why: NULL, or why they
 * cannot be joined (nothing is added then). */
static ingot_status_t join_values(cf_t* c, uint32_t cond, uint32_t t, uint32_t e, const char* base, uint32_t* out,
                                  const char** out_why) {
  const ingot_sequence_t* tq = list_of(c, t);
  const ingot_sequence_t* eq = list_of(c, e);
  *out_why = NULL;
  *out = t;
  if (!tq && !eq) {
    if (!same_shape(c, t, e)) {
      *out_why = "changes dtype or shape";
      return INGOT_OK;
    }
    return select_value(c, cond, t, e, base, out);
  }
  if (!tq || !eq) {
    *out_why = "is a sequence in one case only";
    return INGOT_OK;
  }
  if (tq->count != eq->count) {
    *out_why = ingot_arena_printf(&c->g->arena,
                                  "is a sequence of %u or of %u members (a sequence's length must be known at "
                                  "compile time)",
                                  eq->count, tq->count);
    return INGOT_OK;
  }
  for (uint32_t k = 0; k < tq->count; ++k) {
    if (tq->items[k] != eq->items[k] && !same_shape(c, tq->items[k], eq->items[k])) {
      *out_why = ingot_arena_printf(&c->g->arena, "is a sequence whose member %u changes dtype or shape", k);
      return INGOT_OK;
    }
  }
  uint32_t* items = ingot_xmalloc(sizeof(uint32_t) * (tq->count + 1));
  ingot_status_t s = INGOT_OK;
  for (uint32_t k = 0; k < tq->count && !s; ++k) {
    items[k] = tq->items[k];
    if (tq->items[k] != eq->items[k]) {
      s = select_value(c, cond, tq->items[k], eq->items[k], ingot_arena_printf(&c->g->arena, "%s.%u", base, k),
                       &items[k]);
    }
  }
  if (!s) {
    *out = new_value(c, base, INGOT_VALUE_INTERMEDIATE);
    s = set_list(c, *out, tq->dtype, items, tq->count);
  }
  free(items);
  return s;
}

/* An If whose condition is known only at run time: both branches inlined
 * under guards, each output a Where on the condition. */
static ingot_status_t expand_if_at_run_time(cf_t* c, const uint32_t* ins, uint32_t nin) {
  uint32_t cond = ins[0];
  const ingot_value_t* cv = shaped(c, cond);
  if (c->st->guard) {
    return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                      "node '%s' (If): the condition '%s' is known only at run time, and the If is inside a branch of "
                      "another such If: not supported (bind one condition with --const NAME=FILE.npy)%s",
                      c->name, c->g->values[cond].name, input_deps(c, cond));
  }
  if (!cv || cv->dtype != INGOT_DTYPE_BOOL || ingot_value_numel(cv) != 1) {
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "node '%s' (If): the condition '%s' must be one bool", c->name,
                      c->g->values[cond].name);
  }
  const ingot_graph_t* then_b = body_attr(c, "then_branch");
  const ingot_graph_t* else_b = body_attr(c, "else_branch");
  uint32_t nout = c->g->nodes[c->carrier].output_count;
  if (!then_b || !else_b || then_b->input_count || else_b->input_count || then_b->output_count < nout ||
      else_b->output_count < nout) {
    return ingot_fail(INGOT_ERROR_CORRUPT, "node '%s' (If): needs branches without inputs, with an output for each of its own",
                      c->name);
  }
  ingot_status_t s = INGOT_OK;
  uint32_t* t_outs = ingot_xmalloc(sizeof(uint32_t) * (then_b->output_count + 1));
  uint32_t* e_outs = ingot_xmalloc(sizeof(uint32_t) * (else_b->output_count + 1));
  c->st->guard = cond + 1;
  c->st->guard_when = true;
  s = instantiate(c, then_b, NULL, ins, nin, ingot_arena_printf(&c->g->arena, "%s/then/", c->name), t_outs);
  c->st->guard_when = false;
  if (!s) s = instantiate(c, else_b, NULL, ins, nin, ingot_arena_printf(&c->g->arena, "%s/else/", c->name), e_outs);
  c->st->guard = 0;
  for (uint32_t k = 0; k < nout && !s; ++k) {
    uint32_t v;
    const char* why = NULL;
    if (list_of(c, t_outs[k]) || list_of(c, e_outs[k])) {
      s = join_values(c, cond, t_outs[k], e_outs[k], ingot_arena_printf(&c->g->arena, "%s.select%u", c->name, k), &v,
                      &why);
      if (!s && why) {
        s = ingot_fail(INGOT_ERROR_UNSUPPORTED,
                       "node '%s' (If): its condition '%s' is known only at run time, so both branches are compiled, "
                       "and output %u %s; bind the condition with --const NAME=FILE.npy to compile one branch%s",
                       c->name, c->g->values[ins[0]].name, k, why, input_deps(c, ins[0]));
      }
      if (!s) s = wire_output(c, k, v);
      continue;
    }
    const ingot_value_t* t = shaped(c, t_outs[k]);
    const ingot_value_t* e = shaped(c, e_outs[k]);
    bool same = t && e && t->dtype == e->dtype && t->rank == e->rank;
    for (int32_t d = 0; same && d < t->rank; ++d) same = t->dims[d] == e->dims[d];
    if (!same) {
      char ts[128] = "unknown", es[128] = "unknown";
      if (t) shape_text(t, ts, sizeof ts);
      if (e) shape_text(e, es, sizeof es);
      s = ingot_fail(INGOT_ERROR_UNSUPPORTED,
                     "node '%s' (If): its condition '%s' is known only at run time, so both branches are compiled, "
                     "and they must give output %u one dtype and shape (then: %s, else: %s); bind the condition with "
                     "--const NAME=FILE.npy to compile one branch%s",
                     c->name, c->g->values[ins[0]].name, k, ts, es, input_deps(c, ins[0]));
      break;
    }
    s = select_value(c, cond, t_outs[k], e_outs[k], ingot_arena_printf(&c->g->arena, "%s.select%u", c->name, k), &v);
    if (!s) s = wire_output(c, k, v);
  }
  free(e_outs);
  free(t_outs);
  return s;
}

static ingot_status_t expand_if(cf_t* c, const uint32_t* ins, uint32_t nin) {
  int64_t cond;
  if (!const_scalar(c->g, ins[0], &cond)) return expand_if_at_run_time(c, ins, nin);
  const char* which = cond ? "then_branch" : "else_branch";
  const ingot_graph_t* body = body_attr(c, which);
  if (!body) return ingot_fail(INGOT_ERROR_CORRUPT, "node '%s' (If): no graph attribute '%s'", c->name, which);
  if (body->input_count != 0) {
    return ingot_fail(INGOT_ERROR_CORRUPT, "node '%s' (If): %s has %u inputs, expected none", c->name, which,
                      body->input_count);
  }
  if (body->output_count < c->g->nodes[c->carrier].output_count) {
    return ingot_fail(INGOT_ERROR_CORRUPT, "node '%s' (If): %s has %u outputs, the node %u", c->name, which,
                      body->output_count, c->g->nodes[c->carrier].output_count);
  }
  uint32_t* outs = ingot_xmalloc(sizeof(uint32_t) * (body->output_count + 1));
  ingot_status_t s = instantiate(c, body, NULL, ins, nin, ingot_arena_printf(&c->g->arena, "%s/", c->name), outs);
  for (uint32_t k = 0; k < body->output_count && !s; ++k) s = wire_output(c, k, outs[k]);
  free(outs);
  return s;
}

/* ---- Loop ---- */

/* How many of `count` iterations ran, as an int64 [1]: ran[i] is the bool
 * that guarded iteration i, INGOT_NO_VALUE for one that always runs. */
static ingot_status_t count_runs(cf_t* c, const uint32_t* ran, uint32_t count, uint32_t* out) {
  uint32_t* flags = ingot_xmalloc(sizeof(uint32_t) * count);
  uint32_t n = 0;
  uint8_t true_byte = 1;
  for (uint32_t i = 0; i < count; ++i) {
    flags[n++] = ran[i] != INGOT_NO_VALUE ? ran[i]
                                           : new_weight(c, ingot_arena_printf(&c->g->arena, "%s.ran%u", c->name, i),
                                                        INGOT_DTYPE_BOOL, 0, NULL, &true_byte, 1);
  }
  uint32_t all, as_int, sum;
  ingot_status_t s = stack(c, flags, n, 0, false, ingot_arena_printf(&c->g->arena, "%s.ran", c->name), &all);
  free(flags);
  ingot_attr_t to = int_attr("to", 7 /* int64 */);
  if (!s) s = emit1(c, INGOT_OP_CAST, ingot_arena_printf(&c->g->arena, "%s.ran_int", c->name), &all, 1, &to, 1, &as_int);
  ingot_attr_t keep = int_attr("keepdims", 1);
  if (!s)
    s = emit1(c, INGOT_OP_REDUCESUM, ingot_arena_printf(&c->g->arena, "%s.iterations", c->name), &as_int, 1, &keep, 1,
              &sum);
  *out = sum;
  return s;
}

/* Loop output k, a scan output stacked from every iteration compiled in
 * (`stacked`), has the length the run computes (`ran`, int64 [1]): the
 * carrier's output gets the shape [ran, dims of stacked after the first]
 * as its run-time shape (ingot_value_t.runtime_shape; its rows past `ran`
 * are left as the skipped iterations left them). */
static ingot_status_t scan_runtime_shape(cf_t* c, uint32_t k, uint32_t stacked, uint32_t ran) {
  const ingot_node_t* n = &c->g->nodes[c->carrier];
  if (k >= n->output_count || n->outputs[k] == INGOT_NO_VALUE) return INGOT_OK;
  uint32_t o = n->outputs[k];
  const ingot_value_t* sv = shaped(c, stacked);
  if (!sv) return ingot_fail(INGOT_ERROR_INTERNAL, "node '%s' (Loop): scan output %u has no shape", c->name, k);
  int64_t tail_len = sv->rank - 1;
  uint32_t parts[2] = {ran, new_weight(c, ingot_arena_printf(&c->g->arena, "%s.scan%u.dims", c->name, k),
                                       INGOT_DTYPE_I64, 1, &tail_len, sv->dims + 1,
                                       sizeof(int64_t) * (size_t)tail_len)};
  uint32_t shape;
  ingot_attr_t axis = int_attr("axis", 0);
  ingot_status_t s = emit1(c, INGOT_OP_CONCAT, ingot_arena_printf(&c->g->arena, "%s.scan%u.shape", c->name, k), parts,
                           tail_len ? 2 : 1, &axis, 1, &shape);
  if (!s) {
    c->g->values[o].runtime_shape = shape + 1;
    c->g->values[o].runtime_dims = 1u; /* the iterations, along axis 0 */
  }
  return s;
}

static ingot_status_t expand_loop(cf_t* c, const uint32_t* ins, uint32_t nin) {
  const ingot_graph_t* body = body_attr(c, "body");
  if (!body) return ingot_fail(INGOT_ERROR_CORRUPT, "node '%s' (Loop): no graph attribute 'body'", c->name);
  uint32_t own = first_capture_slot(&c->g->nodes[c->carrier]);
  if (body->input_count < 2 || body->output_count < body->input_count - 1) {
    return ingot_fail(INGOT_ERROR_CORRUPT,
                      "node '%s' (Loop): the body has %u inputs and %u outputs (needs 2 + N inputs and 1 + N + K "
                      "outputs)",
                      c->name, body->input_count, body->output_count);
  }
  uint32_t n_carried = body->input_count - 2, n_scan = body->output_count - 1 - n_carried;
  if (own > 2 + n_carried) {
    return ingot_fail(INGOT_ERROR_CORRUPT, "node '%s' (Loop): %u inputs for a body of %u loop-carried values",
                      c->name, own, n_carried);
  }
  for (uint32_t k = own; k < 2 + n_carried; ++k) {
    if (k >= 2) {
      return ingot_fail(INGOT_ERROR_CORRUPT, "node '%s' (Loop): loop-carried value %u has no initial value", c->name,
                        k - 2);
    }
  }
  uint32_t m_in = own > 0 ? ins[0] : INGOT_NO_VALUE, cond_in = own > 1 ? ins[1] : INGOT_NO_VALUE;
  int64_t trips = -1, cond = 1;
  /* A trip count known only at run time: the loop is compiled for
   * --max-trips iterations, each run under the guard `it < M` (and the
   * condition, as below), and a check fails the run that needs more. */
  uint32_t m_run = INGOT_NO_VALUE;
  if (m_in != INGOT_NO_VALUE && !const_scalar(c->g, m_in, &trips)) {
    const ingot_value_t* mv = shaped(c, m_in);
    const char* why = NULL;
    if (c->g->loop_max_trips <= 0) {
      why = "; or compile it for at most N iterations with --max-trips N";
    } else if (c->st->guard) {
      why = ", since the Loop is inside a branch of an If whose condition is known only at run time";
    } else if (!mv || mv->dtype != INGOT_DTYPE_I64 || ingot_value_numel(mv) != 1) {
      why = ", since it is not one int64";
    }
    if (why) {
      return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                        "node '%s' (Loop): the trip count '%s' must be known at compile time (bind the input it "
                        "comes from with --const NAME=FILE.npy)%s%s",
                        c->name, c->g->values[m_in].name, why, input_deps(c, m_in));
    }
    m_run = m_in;
    trips = c->g->loop_max_trips;
  }
  if (cond_in != INGOT_NO_VALUE && !const_scalar(c->g, cond_in, &cond)) {
    return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                      "node '%s' (Loop): the condition '%s' must be known at compile time (bind the input it comes "
                      "from with --const NAME=FILE.npy)%s",
                      c->name, c->g->values[cond_in].name, input_deps(c, cond_in));
  }
  if (m_in == INGOT_NO_VALUE && cond_in == INGOT_NO_VALUE) {
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "node '%s' (Loop): a loop with neither trip count nor condition never ends",
                      c->name);
  }
  uint32_t nb_in = body->input_count, nb_out = body->output_count;
  uint32_t* formal = ingot_xmalloc(sizeof(uint32_t) * nb_in);
  uint32_t* outs = ingot_xmalloc(sizeof(uint32_t) * nb_out);
  uint32_t* carried = ingot_xmalloc(sizeof(uint32_t) * (n_carried + 1));
  uint32_t* scans = NULL; /* [n_scan][iterations] */
  uint32_t scan_cap = 0;
  for (uint32_t k = 0; k < n_carried; ++k) carried[k] = ins[2 + k];
  uint8_t true_byte = 1;
  uint32_t cond_value = cond_in != INGOT_NO_VALUE
                            ? cond_in
                            : new_weight(c, ingot_arena_printf(&c->g->arena, "%s.true", c->name), INGOT_DTYPE_BOOL, 0,
                                         NULL, &true_byte, 1);
  ingot_status_t s = INGOT_OK;
  /* Once the body's condition is known only at run time (and the trip
   * count bounds the loop): the bool that says whether this iteration runs.
   * The iterations left are unrolled under it as a guard, each carried value
   * a Where(active, new, old), the next `active` Where(active, condition,
   * false). */
  uint32_t active = INGOT_NO_VALUE, no = INGOT_NO_VALUE;
  uint8_t false_byte = 0;
  bool guarded = false; /* some iteration runs under a guard */
  int64_t it = 0;
  for (; (trips < 0 || it < trips) && cond && !s; ++it) {
    if (it >= INGOT_UNROLL_MAX_TRIPS) {
      s = ingot_fail(INGOT_ERROR_LIMIT, "node '%s' (Loop): more than %u iterations to unroll", c->name,
                     INGOT_UNROLL_MAX_TRIPS);
      break;
    }
    formal[0] = scalar_i64(c, ingot_arena_printf(&c->g->arena, "%s.iter%lld", c->name, (long long)it), it);
    if (m_run != INGOT_NO_VALUE) {
      /* This iteration runs when the ones before ran on and it < M. */
      uint32_t lt_in[2] = {formal[0], m_run}, below;
      s = emit1(c, INGOT_OP_LESS, ingot_arena_printf(&c->g->arena, "%s/%lld.below_trips", c->name, (long long)it),
                lt_in, 2, NULL, 0, &below);
      if (!s && active != INGOT_NO_VALUE) {
        uint32_t and_in[2] = {active, below};
        s = emit1(c, INGOT_OP_AND, ingot_arena_printf(&c->g->arena, "%s/%lld.runs", c->name, (long long)it), and_in,
                  2, NULL, 0, &below);
      }
      if (s) break;
      active = below;
      if (it > 0) cond_value = active;
    }
    formal[1] = cond_value;
    for (uint32_t k = 0; k < n_carried; ++k) formal[2 + k] = carried[k];
    if (active != INGOT_NO_VALUE) {
      c->st->guard = active + 1;
      c->st->guard_when = true;
    }
    s = instantiate(c, body, formal, ins, nin, ingot_arena_printf(&c->g->arena, "%s/%lld/", c->name, (long long)it),
                    outs);
    c->st->guard = 0;
    if (s) break;
    if ((uint32_t)it >= scan_cap) { /* room for this iteration's scan values and whether it ran */
      uint32_t cap = scan_cap ? scan_cap * 2 : 16;
      uint32_t* grown = ingot_xcalloc((size_t)(n_scan + 1) * cap, sizeof(uint32_t));
      for (uint32_t k = 0; k < n_scan + 1; ++k) {
        if (scan_cap) memcpy(grown + (size_t)k * cap, scans + (size_t)k * scan_cap, sizeof(uint32_t) * scan_cap);
      }
      free(scans);
      scans = grown;
      scan_cap = cap;
    }
    for (uint32_t k = 0; k < n_scan; ++k) scans[(size_t)k * scan_cap + (size_t)it] = outs[1 + n_carried + k];
    scans[(size_t)n_scan * scan_cap + (size_t)it] = active; /* INGOT_NO_VALUE: it always runs */
    if (active != INGOT_NO_VALUE) guarded = true;
    if (active != INGOT_NO_VALUE) {
      for (uint32_t k = 0; k < n_carried && !s; ++k) {
        const char* why = NULL;
        s = join_values(c, active, outs[1 + k], carried[k],
                        ingot_arena_printf(&c->g->arena, "%s/%lld.carried%u", c->name, (long long)it, k), &carried[k],
                        &why);
        if (!s && why) {
          s = ingot_fail(INGOT_ERROR_UNSUPPORTED,
                         "node '%s' (Loop): its condition or trip count is known only at run time, so iteration "
                         "%lld may not run, and loop-carried value %u then %s",
                         c->name, (long long)it, k, why);
        }
      }
      if (no == INGOT_NO_VALUE) {
        no = new_weight(c, ingot_arena_printf(&c->g->arena, "%s.false", c->name), INGOT_DTYPE_BOOL, 0, NULL,
                        &false_byte, 1);
      }
      if (!s && cond_in != INGOT_NO_VALUE) { /* else a for loop: the body's condition is ignored */
        s = select_value(c, active, outs[0], no,
                         ingot_arena_printf(&c->g->arena, "%s/%lld.active", c->name, (long long)it), &active);
      }
      cond_value = active;
      continue;
    }
    for (uint32_t k = 0; k < n_carried; ++k) carried[k] = outs[1 + k];
    if (cond_in == INGOT_NO_VALUE) continue; /* a for loop: the body's condition is ignored */
    if (outs[0] != cond_value && !const_scalar(c->g, outs[0], &cond)) {
      const ingot_value_t* cv = shaped(c, outs[0]);
      const char* why = NULL;
      if (trips < 0) {
        why = "the loop has no trip count to bound it";
      } else if (c->st->guard) {
        why = "the Loop is inside a branch of an If whose condition is known only at run time";
      } else if (!cv || cv->dtype != INGOT_DTYPE_BOOL || ingot_value_numel(cv) != 1) {
        why = "it is not one bool";
      }
      if (why) {
        s = ingot_fail(INGOT_ERROR_UNSUPPORTED,
                       "node '%s' (Loop): the condition '%s' that the body computes in iteration %lld must be known "
                       "at compile time: %s%s",
                       c->name, c->g->values[outs[0]].name, (long long)it, why, input_deps(c, outs[0]));
        break;
      }
      active = outs[0]; /* the iterations left run while it holds */
      cond_value = active;
      continue;
    }
    cond_value = outs[0];
  }
  if (!s && m_run != INGOT_NO_VALUE && active != INGOT_NO_VALUE) {
    /* The loop would run on past the iterations compiled in: M > bound and
     * the last one left the loop running. */
    uint32_t bound = scalar_i64(c, ingot_arena_printf(&c->g->arena, "%s.max_trips", c->name), trips);
    uint32_t lt_in[2] = {bound, m_run}, above, over;
    s = emit1(c, INGOT_OP_LESS, ingot_arena_printf(&c->g->arena, "%s.above_max_trips", c->name), lt_in, 2, NULL, 0,
              &above);
    uint32_t and_in[2] = {active, above};
    if (!s) {
      s = emit1(c, INGOT_OP_AND, ingot_arena_printf(&c->g->arena, "%s.runs_past_max_trips", c->name), and_in, 2, NULL,
                0, &over);
    }
    if (!s) {
      ingot_graph_add_check(c->g, over,
                            ingot_arena_printf(&c->g->arena,
                                               "Loop '%s': the trip count '%s' asks for more than %lld iterations, "
                                               "the most this bundle was compiled for (--max-trips %lld)",
                                               c->name, c->g->values[m_in].name, (long long)trips, (long long)trips));
    }
  }
  for (uint32_t k = 0; k < n_carried && !s; ++k) s = wire_output(c, k, carried[k]);
  /* Iterations that run under a guard give the scan outputs a length that
   * a run computes: how many ran. */
  uint32_t ran = INGOT_NO_VALUE;
  if (!s && n_scan && guarded) s = count_runs(c, scans + (size_t)n_scan * scan_cap, (uint32_t)it, &ran);
  for (uint32_t k = 0; k < n_scan && !s; ++k) {
    uint32_t v;
    s = stack(c, scans ? scans + (size_t)k * scan_cap : NULL, (uint32_t)it, 0, false,
              ingot_arena_printf(&c->g->arena, "%s.scan%u", c->name, k), &v);
    if (!s) s = wire_output(c, n_carried + k, v);
    if (!s && ran != INGOT_NO_VALUE) s = scan_runtime_shape(c, n_carried + k, v, ran);
  }
  free(scans);
  free(carried);
  free(outs);
  free(formal);
  return s;
}

/* ---- Scan ---- */

/* The INTS attribute `name` of the carrier as `count` values (default 0),
 * each checked in [lo, hi]. */
static ingot_status_t ints_attr(cf_t* c, const char* name, uint32_t count, int64_t lo, int64_t hi, int64_t* out) {
  uint32_t n = 0;
  const int64_t* v = ingot_node_attr_ints(&c->g->nodes[c->carrier], name, &n);
  if (v && n != count) {
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "node '%s' (Scan): attribute '%s' has %u entries, expected %u",
                      c->name, name, n, count);
  }
  for (uint32_t k = 0; k < count; ++k) {
    out[k] = v ? v[k] : 0;
    if (out[k] < lo || out[k] > hi) {
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "node '%s' (Scan): attribute '%s' entry %u (%lld) is out of range",
                        c->name, name, k, (long long)out[k]);
    }
  }
  return INGOT_OK;
}

/* One scan over states[n_state] and xs[n_x] (the scan inputs, iterated
 * along in_axes in the given directions): final states and stacked scan
 * outputs into out (n_state + K values). */
static ingot_status_t scan_core(cf_t* c, const ingot_graph_t* body, const uint32_t* ins, uint32_t nin,
                                const uint32_t* states, uint32_t n_state, const uint32_t* xs, uint32_t n_x,
                                const int64_t* in_dirs, const int64_t* in_axes, const int64_t* out_dirs,
                                const int64_t* out_axes, const char* prefix, uint32_t* out) {
  uint32_t n_y = body->output_count - n_state;
  int64_t T = -1;
  int64_t axes[INGOT_NODE_INPUTS_MAX];
  for (uint32_t j = 0; j < n_x; ++j) {
    const ingot_value_t* x = shaped(c, xs[j]);
    if (!x) {
      return ingot_fail(INGOT_ERROR_UNSUPPORTED, "node '%s' (Scan): scan input '%s' has no static shape", c->name,
                        c->g->values[xs[j]].name);
    }
    axes[j] = in_axes[j] < 0 ? in_axes[j] + x->rank : in_axes[j];
    if (axes[j] < 0 || axes[j] >= x->rank) {
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "node '%s' (Scan): scan axis %lld is out of range for '%s'",
                        c->name, (long long)in_axes[j], x->name);
    }
    if (T >= 0 && x->dims[axes[j]] != T) {
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "node '%s' (Scan): scan inputs differ in sequence length",
                        c->name);
    }
    T = x->dims[axes[j]];
  }
  if (T > (int64_t)INGOT_UNROLL_MAX_TRIPS) {
    return ingot_fail(INGOT_ERROR_LIMIT, "node '%s' (Scan): a sequence of %lld, above %u iterations to unroll",
                      c->name, (long long)T, INGOT_UNROLL_MAX_TRIPS);
  }
  uint32_t* formal = ingot_xmalloc(sizeof(uint32_t) * (body->input_count + 1));
  uint32_t* outs = ingot_xmalloc(sizeof(uint32_t) * (body->output_count + 1));
  uint32_t* ys = ingot_xmalloc(sizeof(uint32_t) * ((size_t)n_y * (size_t)T + 1));
  for (uint32_t k = 0; k < n_state; ++k) out[k] = states[k];
  ingot_status_t s = INGOT_OK;
  for (int64_t t = 0; t < T && !s; ++t) {
    for (uint32_t k = 0; k < n_state; ++k) formal[k] = out[k];
    for (uint32_t j = 0; j < n_x && !s; ++j) {
      int64_t at = in_dirs[j] ? T - 1 - t : t;
      uint32_t in[2] = {xs[j], scalar_i64(c, ingot_arena_printf(&c->g->arena, "%s%lld.index", prefix, (long long)t), at)};
      ingot_attr_t a = int_attr("axis", axes[j]);
      s = emit1(c, INGOT_OP_GATHER, ingot_arena_printf(&c->g->arena, "%s%lld/%s.slice", prefix, (long long)t,
                                                       body->values[body->inputs[n_state + j]].name),
                in, 2, &a, 1, &formal[n_state + j]);
    }
    if (s) break;
    s = instantiate(c, body, formal, ins, nin, ingot_arena_printf(&c->g->arena, "%s%lld/", prefix, (long long)t), outs);
    if (s) break;
    for (uint32_t k = 0; k < n_state; ++k) out[k] = outs[k];
    for (uint32_t k = 0; k < n_y; ++k) ys[(size_t)k * (size_t)T + (size_t)t] = outs[n_state + k];
  }
  for (uint32_t k = 0; k < n_y && !s; ++k) {
    const ingot_value_t* y0 = T > 0 ? shaped(c, ys[(size_t)k * (size_t)T]) : NULL;
    int64_t axis = out_axes[k];
    if (y0 && axis < 0) axis += y0->rank + 1;
    if (y0 && (axis < 0 || axis > y0->rank)) {
      s = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "node '%s' (Scan): scan output axis %lld is out of range", c->name,
                     (long long)out_axes[k]);
      break;
    }
    s = stack(c, ys + (size_t)k * (size_t)T, (uint32_t)T, (int32_t)axis, out_dirs[k] != 0,
              ingot_arena_printf(&c->g->arena, "%sscan%u", prefix, k), &out[n_state + k]);
  }
  free(ys);
  free(outs);
  free(formal);
  return s;
}

static ingot_status_t expand_scan(cf_t* c, const uint32_t* ins, uint32_t nin) {
  const ingot_graph_t* body = body_attr(c, "body");
  if (!body) return ingot_fail(INGOT_ERROR_CORRUPT, "node '%s' (Scan): no graph attribute 'body'", c->name);
  const ingot_node_t* n = &c->g->nodes[c->carrier];
  int64_t m = ingot_node_attr_int(n, "num_scan_inputs", -1);
  uint32_t own = first_capture_slot(n);
  bool v8 = c->g->opset < 9;
  uint32_t lead = v8 ? 1 : 0; /* Scan-8: sequence_lens first */
  if (m < 1 || (uint64_t)m > body->input_count || own != lead + body->input_count ||
      body->output_count < body->input_count - (uint32_t)m) {
    return ingot_fail(INGOT_ERROR_CORRUPT,
                      "node '%s' (Scan): num_scan_inputs %lld, %u inputs and a body of %u inputs and %u outputs do "
                      "not fit together",
                      c->name, (long long)m, own, body->input_count, body->output_count);
  }
  uint32_t n_x = (uint32_t)m, n_state = body->input_count - n_x, n_y = body->output_count - n_state;
  if (n->output_count > n_state + n_y) {
    return ingot_fail(INGOT_ERROR_CORRUPT, "node '%s' (Scan): %u outputs, the body gives %u", c->name, n->output_count,
                      n_state + n_y);
  }
  int64_t in_dirs[INGOT_NODE_INPUTS_MAX], in_axes[INGOT_NODE_INPUTS_MAX];
  int64_t out_dirs[INGOT_NODE_OUTPUTS_MAX], out_axes[INGOT_NODE_OUTPUTS_MAX];
  if (n_y > INGOT_NODE_OUTPUTS_MAX) return ingot_fail(INGOT_ERROR_LIMIT, "node '%s' (Scan): too many outputs", c->name);
  ingot_status_t s;
  uint32_t* result = ingot_xmalloc(sizeof(uint32_t) * (n_state + n_y + 1));
  if (!v8) {
    if ((s = ints_attr(c, "scan_input_directions", n_x, 0, 1, in_dirs)) ||
        (s = ints_attr(c, "scan_output_directions", n_y, 0, 1, out_dirs)) ||
        (s = ints_attr(c, "scan_input_axes", n_x, -(int64_t)INGOT_MAX_RANK, INGOT_MAX_RANK - 1, in_axes)) ||
        (s = ints_attr(c, "scan_output_axes", n_y, -(int64_t)INGOT_MAX_RANK - 1, INGOT_MAX_RANK, out_axes))) {
      free(result);
      return s;
    }
    s = scan_core(c, body, ins, nin, ins, n_state, ins + n_state, n_x, in_dirs, in_axes, out_dirs, out_axes,
                  ingot_arena_printf(&c->g->arena, "%s/", c->name), result);
  } else {
    /* Scan-8: a batch axis 0 on every input and output, the sequence axis 1;
     * each batch entry scanned on its own, the results stacked. */
    if (ins[0] != INGOT_NO_VALUE) {
      free(result);
      return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                        "node '%s' (Scan): sequence_lens is not supported (opset 8); leave it out for full-length "
                        "sequences",
                        c->name);
    }
    if ((s = ints_attr(c, "directions", n_x, 0, 1, in_dirs))) {
      free(result);
      return s;
    }
    for (uint32_t j = 0; j < n_x; ++j) in_axes[j] = 0;
    for (uint32_t k = 0; k < n_y; ++k) out_dirs[k] = 0, out_axes[k] = 0;
    const ingot_value_t* first = shaped(c, ins[1]);
    if (!first || first->rank < 1) {
      free(result);
      return ingot_fail(INGOT_ERROR_UNSUPPORTED, "node '%s' (Scan): input '%s' has no static shape with a batch axis",
                        c->name, c->g->values[ins[1]].name);
    }
    int64_t batch = first->dims[0];
    if (batch > (int64_t)INGOT_UNROLL_MAX_TRIPS) batch = INGOT_UNROLL_MAX_TRIPS + 1; /* fails below */
    uint32_t total = n_state + n_y;
    uint32_t* per = ingot_xmalloc(sizeof(uint32_t) * ((size_t)total * (size_t)batch + 1));
    uint32_t* parts = ingot_xmalloc(sizeof(uint32_t) * (total + 1));
    uint32_t sliced[INGOT_NODE_INPUTS_MAX];
    s = INGOT_OK;
    for (int64_t b = 0; b < batch && !s; ++b) {
      if (b >= (int64_t)INGOT_UNROLL_MAX_TRIPS) {
        s = ingot_fail(INGOT_ERROR_LIMIT, "node '%s' (Scan): a batch above %u to unroll", c->name,
                       INGOT_UNROLL_MAX_TRIPS);
        break;
      }
      for (uint32_t j = 0; j < n_state + n_x && !s; ++j) {
        uint32_t in[2] = {ins[1 + j],
                          scalar_i64(c, ingot_arena_printf(&c->g->arena, "%s/b%lld.index", c->name, (long long)b), b)};
        ingot_attr_t a = int_attr("axis", 0);
        s = emit1(c, INGOT_OP_GATHER,
                  ingot_arena_printf(&c->g->arena, "%s/b%lld/%s", c->name, (long long)b, c->g->values[ins[1 + j]].name),
                  in, 2, &a, 1, &sliced[j]);
      }
      if (s) break;
      s = scan_core(c, body, ins, nin, sliced, n_state, sliced + n_state, n_x, in_dirs, in_axes, out_dirs, out_axes,
                    ingot_arena_printf(&c->g->arena, "%s/b%lld/", c->name, (long long)b), parts);
      for (uint32_t k = 0; k < total && !s; ++k) per[(size_t)k * (size_t)batch + (size_t)b] = parts[k];
    }
    for (uint32_t k = 0; k < total && !s; ++k) {
      s = stack(c, per + (size_t)k * (size_t)batch, (uint32_t)batch, 0, false,
                ingot_arena_printf(&c->g->arena, "%s.out%u", c->name, k), &result[k]);
    }
    free(parts);
    free(per);
  }
  for (uint32_t k = 0; k < n_state + n_y && !s; ++k) s = wire_output(c, k, result[k]);
  free(result);
  return s;
}

/* ---- Sequence ops ----
 *
 * A sequence is a list known at compile time (ingot_value_t.sequence): its
 * length and the value of each member, which may itself be computed at run
 * time. Each Sequence op becomes bookkeeping on such lists (SequenceEmpty,
 * SequenceConstruct, SequenceInsert, SequenceErase, an Identity of a
 * sequence) or plain nodes over their members (SequenceAt: an Identity;
 * SequenceLength: a constant; ConcatFromSequence: Concat, after a Reshape
 * of each member for new_axis; SplitToSequence: Split, then a Reshape of
 * each piece when it drops the axis). A position must be known at compile
 * time. */

bool ingot_graph_is_sequence_op(ingot_op_t op) {
  switch (op) {
    case INGOT_OP_SEQUENCEEMPTY: case INGOT_OP_SEQUENCECONSTRUCT: case INGOT_OP_SEQUENCEINSERT:
    case INGOT_OP_SEQUENCEERASE: case INGOT_OP_SEQUENCEAT: case INGOT_OP_SEQUENCELENGTH:
    case INGOT_OP_CONCATFROMSEQUENCE: case INGOT_OP_SPLITTOSEQUENCE:
      return true;
    default:
      return false;
  }
}

bool ingot_graph_node_expands(const ingot_graph_t* graph, uint32_t node) {
  const ingot_node_t* n = &graph->nodes[node];
  if (ingot_graph_is_control_flow(n->op) || ingot_graph_is_sequence_op(n->op)) return true;
  for (uint32_t k = 0; k < n->input_count; ++k) {
    if (n->inputs[k] != INGOT_NO_VALUE && n->inputs[k] < graph->value_count && graph->values[n->inputs[k]].sequence) {
      return true;
    }
  }
  return false;
}

/* Input `k` of the carrier, which must be a list. */
static ingot_status_t list_input(cf_t* c, const uint32_t* ins, uint32_t k, const ingot_sequence_t** out) {
  *out = list_of(c, ins[k]);
  if (*out) return INGOT_OK;
  return ingot_fail(INGOT_ERROR_UNSUPPORTED, "node '%s' (%s): input '%s' is not a sequence known at compile time",
                    c->name, c->op, ins[k] == INGOT_NO_VALUE ? "" : c->g->values[ins[k]].name);
}

/* A member to be of list `q` (NULL: a new one): a tensor with an inferred
 * shape, of the members' dtype. */
static ingot_status_t member_check(cf_t* c, const ingot_sequence_t* q, uint32_t v) {
  const ingot_value_t* x = &c->g->values[v];
  if (x->sequence) {
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "node '%s' (%s): '%s' is a sequence; sequences of sequences are not "
                      "supported", c->name, c->op, x->name);
  }
  if (!shaped(c, v)) {
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "node '%s' (%s): '%s' has no static shape", c->name, c->op, x->name);
  }
  if (q && q->count && c->g->values[q->items[0]].dtype != x->dtype) {
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "node '%s' (%s): '%s' is %s, the sequence's members %s", c->name,
                      c->op, x->name, ingot_dtype_name(x->dtype), ingot_dtype_name(c->g->values[q->items[0]].dtype));
  }
  return INGOT_OK;
}

/* The position input `v` of the carrier: `fallback` when absent; counted
 * from the end when negative (+ count); must then lie in [0, hi]. */
static ingot_status_t position(cf_t* c, uint32_t v, int64_t fallback, int64_t count, int64_t hi, int64_t* out) {
  *out = fallback;
  if (v == INGOT_NO_VALUE) return INGOT_OK;
  const ingot_value_t* x = &c->g->values[v];
  if (x->sequence || (x->dtype != INGOT_DTYPE_I32 && x->dtype != INGOT_DTYPE_I64 && x->dtype != INGOT_DTYPE_INVALID)) {
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "node '%s' (%s): the position '%s' must be an int32 or int64 scalar",
                      c->name, c->op, x->name);
  }
  if (!const_scalar(c->g, v, out)) {
    return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                      "node '%s' (%s): the position '%s' must be known at compile time (bind the input it comes from "
                      "with --const NAME=FILE.npy)%s",
                      c->name, c->op, x->name, input_deps(c, v));
  }
  int64_t p = *out < 0 ? *out + count : *out;
  if (p < 0 || p > hi) {
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "node '%s' (%s): position %lld is out of range for a sequence of %lld",
                      c->name, c->op, (long long)*out, (long long)count);
  }
  *out = p;
  return INGOT_OK;
}

/* x reshaped to dims[rank] (its element count), a new value. */
static ingot_status_t reshape_to(cf_t* c, uint32_t x, int32_t rank, const int64_t* dims, const char* base,
                                 uint32_t* out) {
  int64_t len = rank;
  uint32_t in[2] = {x, new_weight(c, ingot_arena_printf(&c->g->arena, "%s.shape", base), INGOT_DTYPE_I64, 1, &len, dims,
                                  sizeof(int64_t) * (size_t)rank)};
  return emit1(c, INGOT_OP_RESHAPE, base, in, 2, NULL, 0, out);
}

/* x split along `axis` into n pieces of sizes[n] (Split nodes of at most
 * INGOT_NODE_OUTPUTS_MAX outputs: groups of pieces first when there are
 * more) into out[n]. */
static ingot_status_t split_pieces(cf_t* c, uint32_t x, int32_t axis, const int64_t* sizes, uint32_t n,
                                   const char* base, uint32_t* out) {
  ingot_attr_t a = int_attr("axis", axis);
  if (n <= INGOT_NODE_OUTPUTS_MAX) {
    int64_t len = n;
    uint32_t in[2] = {x, new_weight(c, ingot_arena_printf(&c->g->arena, "%s.split", base), INGOT_DTYPE_I64, 1, &len,
                                    sizes, sizeof(int64_t) * n)};
    for (uint32_t i = 0; i < n; ++i) {
      out[i] = new_value(c, ingot_arena_printf(&c->g->arena, "%s.%u", base, i), INGOT_VALUE_INTERMEDIATE);
    }
    return add_visit(c, INGOT_OP_SPLIT, base, in, 2, out, n, &a, 1, NULL);
  }
  uint32_t per = (n + INGOT_NODE_OUTPUTS_MAX - 1) / INGOT_NODE_OUTPUTS_MAX, groups = (n + per - 1) / per;
  int64_t group_sizes[INGOT_NODE_OUTPUTS_MAX];
  uint32_t group_values[INGOT_NODE_OUTPUTS_MAX];
  for (uint32_t g = 0; g < groups; ++g) {
    group_sizes[g] = 0;
    for (uint32_t i = g * per; i < n && i < (g + 1) * per; ++i) group_sizes[g] += sizes[i];
  }
  ingot_status_t s = split_pieces(c, x, axis, group_sizes, groups, ingot_arena_printf(&c->g->arena, "%s.g", base),
                                  group_values);
  for (uint32_t g = 0; g < groups && !s; ++g) {
    uint32_t first = g * per, count = n - first < per ? n - first : per;
    s = split_pieces(c, group_values[g], axis, sizes + first, count, ingot_arena_printf(&c->g->arena, "%s.g%u", base, g),
                     out + first);
  }
  return s;
}

/* The carrier's output 0 becomes `v` (an Identity). */
static ingot_status_t wire_tensor(cf_t* c, uint32_t v) { return wire_output(c, 0, v); }

static ingot_status_t expand_split_to_sequence(cf_t* c, const uint32_t* ins, uint32_t out) {
  const ingot_node_t* n = &c->g->nodes[c->carrier];
  uint32_t x = ins[0], split = n->input_count > 1 ? ins[1] : INGOT_NO_VALUE;
  ingot_status_t s = member_check(c, NULL, x);
  if (s) return s;
  const ingot_value_t* xv = &c->g->values[x];
  int64_t axis = ingot_node_attr_int(n, "axis", 0), keepdims = ingot_node_attr_int(n, "keepdims", 1);
  if (xv->rank < 1 || axis < -(int64_t)xv->rank || axis >= xv->rank) {
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "node '%s' (SplitToSequence): axis %lld is out of range for rank %d",
                      c->name, (long long)axis, xv->rank);
  }
  if (axis < 0) axis += xv->rank;
  int64_t dim = xv->dims[axis];
  int64_t* sizes = NULL;
  int64_t count = 0;
  bool squeeze = false;
  if (split == INGOT_NO_VALUE) {
    count = dim;
    squeeze = keepdims == 0;
    if (count > (int64_t)INGOT_UNROLL_MAX_TRIPS) count = -1;
    sizes = ingot_xmalloc(sizeof(int64_t) * (size_t)(count > 0 ? count : 1));
    for (int64_t i = 0; i < count; ++i) sizes[i] = 1;
  } else {
    const ingot_value_t* sv = &c->g->values[split];
    if (sv->kind != INGOT_VALUE_WEIGHT || !sv->data) {
      return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                        "node '%s' (SplitToSequence): the split '%s' must be known at compile time (bind the input it "
                        "comes from with --const NAME=FILE.npy)%s",
                        c->name, sv->name, input_deps(c, split));
    }
    int64_t m = ingot_value_numel(sv);
    if ((sv->dtype != INGOT_DTYPE_I32 && sv->dtype != INGOT_DTYPE_I64) || sv->rank > 1 || m < 0 ||
        (sv->rank == 0 && m != 1)) {
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                        "node '%s' (SplitToSequence): the split '%s' must be an int32 or int64 scalar or 1-D tensor",
                        c->name, sv->name);
    }
    int64_t* given = ingot_xmalloc(sizeof(int64_t) * (size_t)(m ? m : 1));
    for (int64_t i = 0; i < m; ++i) {
      given[i] = sv->dtype == INGOT_DTYPE_I32 ? ((const int32_t*)sv->data)[i] : ((const int64_t*)sv->data)[i];
    }
    if (sv->rank == 0) {
      int64_t chunk = given[0];
      free(given);
      if (chunk < 1) {
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "node '%s' (SplitToSequence): split %lld must be positive",
                          c->name, (long long)chunk);
      }
      count = (dim + chunk - 1) / chunk;
      if (count > (int64_t)INGOT_UNROLL_MAX_TRIPS) count = -1;
      sizes = ingot_xmalloc(sizeof(int64_t) * (size_t)(count > 0 ? count : 1));
      for (int64_t i = 0; i < count; ++i) sizes[i] = i + 1 < count ? chunk : dim - chunk * (count - 1);
    } else {
      int64_t sum = 0;
      for (int64_t i = 0; i < m && sum >= 0; ++i) sum = given[i] < 0 ? -1 : sum + given[i];
      if (sum != dim) {
        free(given);
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                          "node '%s' (SplitToSequence): the split sizes do not add up to dimension %lld (%lld)",
                          c->name, (long long)axis, (long long)dim);
      }
      count = m > (int64_t)INGOT_UNROLL_MAX_TRIPS ? -1 : m;
      sizes = given;
    }
  }
  if (count < 0) {
    free(sizes);
    return ingot_fail(INGOT_ERROR_LIMIT, "node '%s' (SplitToSequence): more than %u pieces", c->name,
                      INGOT_UNROLL_MAX_TRIPS);
  }
  uint32_t* items = ingot_xmalloc(sizeof(uint32_t) * (size_t)(count + 1));
  const char* base = ingot_arena_printf(&c->g->arena, "%s.piece", c->name);
  s = count ? split_pieces(c, x, (int32_t)axis, sizes, (uint32_t)count, base, items) : INGOT_OK;
  for (int64_t i = 0; squeeze && i < count && !s; ++i) {
    int64_t dims[INGOT_MAX_RANK];
    int32_t r = 0;
    for (int32_t d = 0; d < xv->rank; ++d) {
      if (d != axis) dims[r++] = c->g->values[x].dims[d];
    }
    s = reshape_to(c, items[i], r, dims, ingot_arena_printf(&c->g->arena, "%s.%lld.squeezed", base, (long long)i),
                   &items[i]);
  }
  if (!s) s = set_list(c, out, c->g->values[x].dtype, items, (uint32_t)count);
  free(items);
  free(sizes);
  return s;
}

static ingot_status_t expand_concat_from_sequence(cf_t* c, const ingot_sequence_t* q) {
  const ingot_node_t* n = &c->g->nodes[c->carrier];
  const ingot_attr_t* a = ingot_node_attr(n, "axis");
  int64_t new_axis = ingot_node_attr_int(n, "new_axis", 0);
  if (!a || a->type != INGOT_ATTR_INT) {
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "node '%s' (ConcatFromSequence): attribute 'axis' is required",
                      c->name);
  }
  if (new_axis != 0 && new_axis != 1) {
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "node '%s' (ConcatFromSequence): new_axis must be 0 or 1", c->name);
  }
  if (q->count == 0) {
    return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                      "node '%s' (ConcatFromSequence): the sequence is empty, and its concatenation has no shape",
                      c->name);
  }
  const ingot_value_t* first = &c->g->values[q->items[0]];
  int32_t rank = first->rank + (int32_t)new_axis;
  int64_t axis = a->i;
  if (axis < -(int64_t)rank || axis >= rank || rank < 1) {
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                      "node '%s' (ConcatFromSequence): axis %lld is out of range for members of rank %d%s", c->name,
                      (long long)axis, first->rank, new_axis ? " and a new axis" : "");
  }
  if (axis < 0) axis += rank;
  uint32_t* items = ingot_xmalloc(sizeof(uint32_t) * (q->count + 1));
  memcpy(items, q->items, sizeof(uint32_t) * q->count);
  ingot_status_t s = INGOT_OK;
  for (uint32_t i = 0; new_axis && i < q->count && !s; ++i) s = unsqueeze(c, items[i], (int32_t)axis, &items[i]);
  uint32_t v = INGOT_NO_VALUE;
  if (!s) s = concat_all(c, items, q->count, (int32_t)axis, ingot_arena_printf(&c->g->arena, "%s.concat", c->name), &v);
  if (!s) s = wire_tensor(c, v);
  free(items);
  return s;
}

static ingot_status_t expand_sequence(cf_t* c, const uint32_t* ins, uint32_t nin) {
  const ingot_node_t* n = &c->g->nodes[c->carrier];
  uint32_t out = n->output_count ? n->outputs[0] : INGOT_NO_VALUE;
  ingot_op_t op = n->op;
  const ingot_sequence_t* q = NULL;
  ingot_status_t s = INGOT_OK;
  if (!ingot_graph_is_sequence_op(op)) {
    if (op == INGOT_OP_IDENTITY && (q = list_of(c, ins[0])) != NULL) return set_list(c, out, q->dtype, q->items, q->count);
    for (uint32_t k = 0; k < nin; ++k) {
      if (list_of(c, ins[k])) {
        return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                          "node '%s' (%s): input '%s' is a sequence; only the Sequence ops, Identity, If, Loop and "
                          "Scan read one",
                          c->name, c->op, c->g->values[ins[k]].name);
      }
    }
    return ingot_fail(INGOT_ERROR_INTERNAL, "node '%s' (%s): nothing to expand", c->name, c->op);
  }
  if (out == INGOT_NO_VALUE) return INGOT_OK;
  switch (op) {
    case INGOT_OP_SEQUENCEEMPTY: {
      int64_t code = ingot_node_attr_int(n, "dtype", 1 /* float */);
      ingot_dtype_t dtype = infer_onnx_dtype(code);
      if (dtype == INGOT_DTYPE_INVALID) {
        return ingot_fail(INGOT_ERROR_UNSUPPORTED, "node '%s' (SequenceEmpty): dtype %lld is not supported", c->name,
                          (long long)code);
      }
      return set_list(c, out, dtype, NULL, 0);
    }
    case INGOT_OP_SEQUENCECONSTRUCT: {
      ingot_sequence_t first = {INGOT_DTYPE_INVALID, 1, ins};
      for (uint32_t k = 0; k < nin && !s; ++k) s = member_check(c, &first, ins[k]);
      return s ? s : set_list(c, out, c->g->values[ins[0]].dtype, ins, nin);
    }
    case INGOT_OP_SEQUENCEINSERT: {
      int64_t p;
      if ((s = list_input(c, ins, 0, &q)) || (s = member_check(c, q, ins[1])) ||
          (s = position(c, nin > 2 ? ins[2] : INGOT_NO_VALUE, q->count, q->count, q->count, &p))) {
        return s;
      }
      uint32_t* items = ingot_xmalloc(sizeof(uint32_t) * (q->count + 1));
      memcpy(items, q->items, sizeof(uint32_t) * (size_t)p);
      items[p] = ins[1];
      memcpy(items + p + 1, q->items + p, sizeof(uint32_t) * (q->count - (size_t)p));
      s = set_list(c, out, c->g->values[ins[1]].dtype, items, q->count + 1);
      free(items);
      return s;
    }
    case INGOT_OP_SEQUENCEERASE: {
      int64_t p;
      if ((s = list_input(c, ins, 0, &q))) return s;
      if (q->count == 0) {
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "node '%s' (SequenceErase): the sequence is empty", c->name);
      }
      if ((s = position(c, nin > 1 ? ins[1] : INGOT_NO_VALUE, q->count - 1, q->count, q->count - 1, &p))) return s;
      uint32_t* items = ingot_xmalloc(sizeof(uint32_t) * q->count);
      memcpy(items, q->items, sizeof(uint32_t) * (size_t)p);
      memcpy(items + p, q->items + p + 1, sizeof(uint32_t) * (q->count - 1 - (size_t)p));
      s = set_list(c, out, q->dtype, items, q->count - 1);
      free(items);
      return s;
    }
    case INGOT_OP_SEQUENCEAT: {
      int64_t p;
      if ((s = list_input(c, ins, 0, &q))) return s;
      if (q->count == 0) {
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "node '%s' (SequenceAt): the sequence is empty", c->name);
      }
      if ((s = position(c, ins[1], 0, q->count, q->count - 1, &p))) return s;
      return wire_tensor(c, q->items[p]);
    }
    case INGOT_OP_SEQUENCELENGTH:
      if ((s = list_input(c, ins, 0, &q))) return s;
      return wire_tensor(c, scalar_i64(c, ingot_arena_printf(&c->g->arena, "%s.length", c->name), q->count));
    case INGOT_OP_CONCATFROMSEQUENCE:
      if ((s = list_input(c, ins, 0, &q))) return s;
      return expand_concat_from_sequence(c, q);
    default:
      return expand_split_to_sequence(c, ins, out);
  }
}

/* ---- guards ---- */

/* May node `j` read value `o` of a node guarded by (guard, when), were
 * that node skipped? */
static bool reads_safely(const ingot_node_t* j, uint32_t o, uint32_t guard, bool when) {
  if (j->guard == guard && j->guard_when == when) return true;
  if (j->op != INGOT_OP_WHERE || j->input_count != 3 || j->inputs[0] != guard - 1) return false;
  uint32_t mine = when ? 1 : 2, other = when ? 2 : 1;
  return j->inputs[mine] == o && j->inputs[other] != o && j->inputs[0] != o;
}

ingot_status_t ingot_graph_settle_guards(ingot_graph_t* graph) {
  uint32_t nv = graph->value_count, nn = graph->node_count;
  bool any = false;
  for (uint32_t i = 0; i < nn; ++i) {
    ingot_node_t* n = &graph->nodes[i];
    if (n->dead || !n->guard) continue;
    if (n->guard - 1 >= nv || graph->values[n->guard - 1].kind == INGOT_VALUE_WEIGHT) n->guard = 0;
    any |= n->guard != 0;
  }
  if (!any) return INGOT_OK;
  /* Readers of each value, as CSR. */
  uint32_t* start = ingot_xcalloc((size_t)nv + 1, sizeof(uint32_t));
  for (uint32_t i = 0; i < nn; ++i) {
    const ingot_node_t* n = &graph->nodes[i];
    for (uint32_t k = 0; !n->dead && k < n->input_count; ++k) {
      if (n->inputs[k] < nv) start[n->inputs[k] + 1]++;
    }
  }
  for (uint32_t v = 0; v < nv; ++v) start[v + 1] += start[v];
  uint32_t* fill = ingot_xmalloc(sizeof(uint32_t) * ((size_t)nv + 1));
  memcpy(fill, start, sizeof(uint32_t) * ((size_t)nv + 1));
  uint32_t* readers = ingot_xmalloc(sizeof(uint32_t) * ((size_t)start[nv] + 1));
  for (uint32_t i = 0; i < nn; ++i) {
    const ingot_node_t* n = &graph->nodes[i];
    for (uint32_t k = 0; !n->dead && k < n->input_count; ++k) {
      if (n->inputs[k] < nv) readers[fill[n->inputs[k]]++] = i;
    }
  }
  /* Clearing a guard can make its producers' unsafe: repeat until none. */
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t i = nn; i-- > 0;) {
      ingot_node_t* n = &graph->nodes[i];
      if (n->dead || !n->guard) continue;
      bool safe = true;
      for (uint32_t k = 0; safe && k < n->output_count; ++k) {
        uint32_t o = n->outputs[k];
        if (o >= nv) continue;
        if (graph->values[o].is_output) safe = false;
        for (uint32_t r = start[o]; safe && r < start[o + 1]; ++r) {
          safe = reads_safely(&graph->nodes[readers[r]], o, n->guard, n->guard_when);
        }
      }
      if (!safe) {
        n->guard = 0;
        changed = true;
      }
    }
  }
  free(readers);
  free(fill);
  free(start);
  return INGOT_OK;
}

ingot_status_t ingot_graph_expand_control_flow(ingot_graph_t* graph, uint32_t node, ingot_cf_state_t** state,
                                               ingot_graph_visit_fn_t visit, void* self) {
  if (!*state) {
    ingot_cf_state_t* st = ingot_xcalloc(1, sizeof(*st));
    for (uint32_t v = 0; v < graph->value_count; ++v) names_insert(st, graph, v);
    *state = st;
  }
  const ingot_node_t* n = &graph->nodes[node];
  uint32_t first_added = graph->node_count;
  cf_t c = {graph, *state, visit, self, node, n->name, ingot_op_name(n->op)};
  /* The carrier's inputs, copied: the node array moves as nodes are added. */
  uint32_t nin = n->input_count;
  uint32_t* ins = ingot_xmalloc(sizeof(uint32_t) * (nin + 2));
  memcpy(ins, n->inputs, sizeof(uint32_t) * nin);
  ins[nin] = ins[nin + 1] = INGOT_NO_VALUE; /* reads past the end of absent trailing inputs */
  ingot_status_t s;
  switch (n->op) {
    case INGOT_OP_IF: s = expand_if(&c, ins, nin); break;
    case INGOT_OP_LOOP: s = expand_loop(&c, ins, nin); break;
    case INGOT_OP_SCAN: s = expand_scan(&c, ins, nin); break;
    default: s = expand_sequence(&c, ins, nin); break;
  }
  free(ins);
  if (!s) {
    graph->nodes[node].dead = true;
    return s;
  }
  /* Failed: the nodes added so far go (the graph reads as before, so a
   * caller that leaves the node out and walks again, as `ingot check` does,
   * starts from a clean graph), and the message names this node first. */
  for (uint32_t i = first_added; i < graph->node_count; ++i) graph->nodes[i].dead = true;
  char* lead = ingot_arena_printf(&graph->arena, "node '%s' (", graph->nodes[node].name);
  if (strncmp(ingot_compiler_error(), lead, strlen(lead)) != 0) {
    s = ingot_fail_prefix(s, "node '%s' (%s)", graph->nodes[node].name, ingot_op_name(graph->nodes[node].op));
  }
  return s;
}
