/* Ranged input dims: one graph for every size in a range.
 *
 * `--input-shape ids=1x1..128` compiles the graph at the largest size. Every
 * tensor is laid out at the strides of its largest shape, and a run at a
 * smaller size uses the first entries along each ranged dim: what lies
 * past the run's size is never read, so kernels stop there (each value's
 * run_sym and the graph's run_size, which schedule/range_guard.c reads),
 * and the runtime spreads each input to those strides and packs each
 * output back (runtime/session.c).
 *
 * That is right for every node whose first entries along a ranged dim come
 * from the first entries of its inputs: elementwise ops, MatMul's rows and
 * columns, Gather, Transpose, Reshape that keeps the dim, Slice from 0, ...
 * A reduction along a ranged dim would also read the entries past the run's
 * size: its input goes through a mask, Where(position < size, x, identity),
 * with the reduction's identity (0 for a sum or MatMul's inner dim, -inf for
 * a max or Softmax). A window (Conv, a pool) along a ranged image dim
 * reads its input masked to the pads' value where its end pads reach past
 * the run's size, and its output dim is a derived symbol, floor((n + add) /
 * stride) + 1, whose run's size the graph computes from the input's. What
 * none of these holds for is refused, naming the node.
 *
 * Which dims follow which range is found by comparing the graph with a
 * probe: the same model through the same passes with each ranged dim moved
 * by its own step (ingot_graph_range_probe). A dim equal to range k's size
 * in both follows range k, one equal to a derived symbol's in both follows
 * it; one that moves otherwise (2n, n-1) is refused,
 * and so is a constant folded from a ranged size (a Shape) that a node uses
 * as data rather than as a shape. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph_internal.h"

int64_t ingot_graph_range_probe(const ingot_graph_t* graph, uint32_t k) {
  int64_t hi = 0, lo = 1;
  for (uint32_t i = 0; i < graph->input_count; ++i) {
    const ingot_value_t* v = &graph->values[graph->inputs[i]];
    for (int32_t d = 0; d < v->rank; ++d)
      if (v->range_sym[d] == k) {
        hi = v->dims[d];
        lo = v->range_lo[d] > 1 ? v->range_lo[d] : 1;
      }
  }
  /* Symbol k moves by (2k - 1) << e: the odd parts differ, so no two
   * symbols move alike, and a dim after windows of stride 2, 4, ... 64
   * still moves (and by its own step). The largest e that stays in the
   * range; past its top when none does. */
  int64_t odd = 2 * (int64_t)k - 1;
  for (int e = 6; e >= 0; --e)
    if (hi - (odd << e) >= lo) return hi - (odd << e);
  return hi + (odd << 6);
}

void ingot_graph_probe_ranges(ingot_graph_t* graph) {
  int64_t probe[INGOT_MAX_RANGE_SYMBOLS + 1];
  for (uint32_t k = 1; k <= graph->range_symbol_count; ++k) probe[k] = ingot_graph_range_probe(graph, k);
  for (uint32_t i = 0; i < graph->input_count; ++i) {
    ingot_value_t* v = &graph->values[graph->inputs[i]];
    for (int32_t d = 0; d < v->rank; ++d)
      if (v->range_sym[d]) v->dims[d] = probe[v->range_sym[d]];
  }
}

typedef uint8_t dim_syms_t[INGOT_MAX_RANK];
/* A dim that moves with a range other than by being equal to it. */
#define SYM_OTHER 0xffu

typedef enum fill_t { FILL_ZERO, FILL_NEG_INF, FILL_POS_INF } fill_t;

/* Symbols 1..range_symbol_count are the inputs' ranges; after them come
 * derived ones, made where a window (Conv, a pool) with a stride or other
 * than "same" pads maps a ranged dim of n to floor((n + add) / stride) + 1. */
#define MAX_SYMS 254

typedef struct sym_t {
  int64_t hi, lo, probe;        /* at the largest sizes, the least, the probe's */
  uint32_t input;               /* base: the first input with the symbol, and its dim */
  int32_t dim;
  uint32_t parent;              /* derived: the symbol it comes from (0: a base symbol) */
  int64_t add, stride;
  uint32_t size[2];             /* 1 + the int64 run's size, made once: [0] a scalar, [1] shape [1] */
} sym_t;

typedef struct ranges_t {
  ingot_graph_t* g;
  const ingot_graph_t* probe;
  uint32_t nv;                  /* g's values before this pass added any */
  dim_syms_t* syms;             /* per value of g (nv), per dim: 0 or a symbol */
  bool* varies;                 /* per value: a constant whose data follows a range */
  int64_t (*pdims)[INGOT_MAX_RANK]; /* per value: the probe's dims */
  uint32_t* full;               /* per value: dims a reader needs whole (bit d), not only to the run's size */
  sym_t sym[MAX_SYMS + 1];
  uint32_t sym_count;           /* base and derived */
  /* masks made so far: per symbol and trailing rank (the axis from the end) */
  uint32_t mask[MAX_SYMS + 1][INGOT_MAX_RANK + 1];
} ranges_t;

static const char* sym_name(const ranges_t* r, uint32_t k) {
  if (k == SYM_OTHER) return "a dimension that moves with a ranged input's";
  const sym_t* s = &r->sym[k];
  uint32_t base = k;
  while (r->sym[base].parent) base = r->sym[base].parent;
  const ingot_value_t* in = &r->g->values[r->sym[base].input];
  if (base == k)
    return ingot_arena_printf(&r->g->arena, "'%s' dimension %d (%lld..%lld)", in->name, s->dim, (long long)s->lo,
                              (long long)s->hi);
  return ingot_arena_printf(&r->g->arena, "a dimension (%lld..%lld) that follows '%s' dimension %d through windows",
                            (long long)s->lo, (long long)s->hi, in->name, r->sym[base].dim);
}

static ingot_status_t refuse_node(const ingot_node_t* n, const char* why) {
  return ingot_fail(INGOT_ERROR_UNSUPPORTED, "node '%s' (%s): %s", n->name, ingot_op_name(n->op), why);
}

/* The element at multi-index `idx` (of `rank` dims) in a dense tensor of
 * dims `dims`: its flat position. */
static int64_t flat_at(const int64_t* idx, const int64_t* dims, int32_t rank) {
  int64_t f = 0;
  for (int32_t d = 0; d < rank; ++d) f = f * dims[d] + idx[d];
  return f;
}

/* Whether weight b (the probe's, smaller or larger along ranged dims) holds
 * a's data wherever both have entries. */
static bool same_prefix(const ingot_value_t* a, const ingot_value_t* b) {
  if (a->dtype != b->dtype || a->rank != b->rank) return false;
  if (!a->data || !b->data) return a->data == b->data;
  size_t es = ingot_graph_dtype_size(a->dtype);
  int64_t common[INGOT_MAX_RANK], idx[INGOT_MAX_RANK] = {0};
  int64_t count = 1;
  for (int32_t d = 0; d < a->rank; ++d) {
    common[d] = a->dims[d] < b->dims[d] ? a->dims[d] : b->dims[d];
    count *= common[d];
  }
  for (int64_t e = 0; e < count; ++e) {
    int64_t fa = flat_at(idx, a->dims, a->rank), fb = flat_at(idx, b->dims, b->rank);
    if (memcmp((const uint8_t*)a->data + fa * es, (const uint8_t*)b->data + fb * es, es) != 0) return false;
    for (int32_t d = a->rank; d-- > 0;) {
      if (++idx[d] < common[d]) break;
      idx[d] = 0;
    }
  }
  return true;
}

/* The dims of each value that follow a range, from the probe. */
static ingot_status_t find_syms(ranges_t* r) {
  const ingot_graph_t* g = r->g;
  const ingot_graph_t* p = r->probe;
  uint32_t live_g = 0, live_p = 0;
  for (uint32_t i = 0; i < g->node_count; ++i) live_g += !g->nodes[i].dead;
  for (uint32_t i = 0; i < p->node_count; ++i) live_p += !p->nodes[i].dead;
  if (live_g != live_p)
    return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                      "the model's graph has %u nodes at the largest sizes of its ranged inputs and %u at other "
                      "sizes: a graph that changes with the size cannot take a range",
                      live_g, live_p);
  for (uint32_t v = 0; v < r->nv; ++v) {
    const ingot_value_t* a = &g->values[v];
    if (a->rank <= 0 || a->sequence) continue;
    uint32_t pv = ingot_graph_find_value(p, a->name);
    if (pv == INGOT_NO_VALUE) {
      if (a->producer == INGOT_NO_VALUE && a->kind != INGOT_VALUE_WEIGHT) continue;
      const ingot_node_t* n = a->producer < g->node_count ? &g->nodes[a->producer] : NULL;
      return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                        "value '%s'%s%s%s exists at the largest sizes of the ranged inputs but not at others: a graph "
                        "that changes with the size cannot take a range",
                        a->name, n ? " (made by node '" : "", n ? n->name : "", n ? "')" : "");
    }
    const ingot_value_t* b = &p->values[pv];
    if (b->rank != a->rank)
      return ingot_fail(INGOT_ERROR_UNSUPPORTED, "value '%s' has rank %d at the largest sizes and %d at others",
                        a->name, a->rank, b->rank);
    bool ranged = false;
    for (int32_t d = 0; d < a->rank; ++d) {
      r->pdims[v][d] = b->dims[d];
      if (a->dims[d] == b->dims[d]) continue;
      uint32_t k = 1;
      while (k <= g->range_symbol_count && !(a->dims[d] == r->sym[k].hi && b->dims[d] == r->sym[k].probe)) ++k;
      if (k > g->range_symbol_count) {
        /* a derived symbol's (settled at the window that makes it), else
         * refused at its producer, unless a node before it is refused first */
        r->syms[v][d] = SYM_OTHER;
        ranged = true;
        continue;
      }
      r->syms[v][d] = (uint8_t)k;
      ranged = true;
    }
    if (a->kind == INGOT_VALUE_WEIGHT) {
      bool same_dims = !ranged && a->dtype == b->dtype;
      size_t bytes = (size_t)ingot_value_numel(a) * ingot_graph_dtype_size(a->dtype);
      r->varies[v] = same_dims ? (a->data && b->data && memcmp(a->data, b->data, bytes) != 0)
                               : !same_prefix(a, b);
    }
  }
  return INGOT_OK;
}

/* Whether node n may read a constant that follows a range at input slot i:
 * as a shape (whose largest size is right for the largest layout), never as
 * data. */
static bool shape_slot(const ingot_node_t* n, uint32_t i) {
  switch (n->op) {
    case INGOT_OP_RESHAPE: case INGOT_OP_EXPAND: case INGOT_OP_TILE: return i == 1;
    case INGOT_OP_SLICE: return i >= 1;
    case INGOT_OP_CONSTANTOFSHAPE: return i == 0;
    default: return false;
  }
}

static bool any_ranged(const ranges_t* r, uint32_t v) {
  if (v == INGOT_NO_VALUE || v >= r->nv) return false;
  for (int32_t d = 0; d < r->g->values[v].rank; ++d)
    if (r->syms[v][d]) return true;
  return false;
}

/* ---- masks ---- */

static uint32_t add_weight(ranges_t* r, const char* name, ingot_dtype_t dtype, int32_t rank, const int64_t* dims,
                           const void* data, size_t bytes) {
  uint32_t id = ingot_graph_add_value(r->g, name, INGOT_VALUE_WEIGHT);
  void* copy = ingot_xmalloc(bytes ? bytes : 1);
  if (bytes) memcpy(copy, data, bytes);
  ingot_graph_set_weight(r->g, id, dtype, rank, dims, copy);
  return id;
}

static uint32_t add_node1(ranges_t* r, ingot_op_t op, const char* name, const uint32_t* in, uint32_t nin,
                          ingot_dtype_t dtype, int32_t rank, const int64_t* dims) {
  uint32_t out = ingot_graph_add_value(r->g, name, INGOT_VALUE_INTERMEDIATE);
  ingot_value_t* v = &r->g->values[out];
  v->dtype = dtype;
  v->rank = rank;
  for (int32_t d = 0; d < rank; ++d) v->dims[d] = dims[d];
  ingot_graph_add_node(r->g, op, name, in, nin, &out, 1);
  return out;
}

/* The int64 tensor of input `in`'s run-time dims (range_shape), made once. */
static uint32_t shape_value(ranges_t* r, uint32_t in) {
  ingot_value_t* v = &r->g->values[in];
  if (v->range_shape) return v->range_shape - 1;
  char* name = ingot_arena_printf(&r->g->arena, "%s:run_shape", v->name);
  uint32_t id = ingot_graph_add_value(r->g, name, INGOT_VALUE_INPUT);
  v = &r->g->values[in]; /* the values may have moved */
  ingot_value_t* s = &r->g->values[id];
  s->dtype = INGOT_DTYPE_I64;
  s->rank = 1;
  s->dims[0] = v->rank;
  s->shape_of = in + 1;
  v->range_shape = id + 1;
  return id;
}

/* An int64 [1] (or scalar when `scalar`) holding dim `dim` of input `in` in this run. */
static uint32_t run_dim(ranges_t* r, uint32_t in, int32_t dim, bool scalar) {
  const char* name = ingot_arena_printf(&r->g->arena, "%s:run_dim%d%s", r->g->values[in].name, dim, scalar ? "" : "_1");
  uint32_t known = ingot_graph_find_value(r->g, name);
  if (known != INGOT_NO_VALUE) return known;
  uint32_t shape = shape_value(r, in);
  int64_t idx = dim, one = 1;
  const char* base = ingot_arena_printf(&r->g->arena, "%s:run_dim%d%s", r->g->values[in].name, dim, scalar ? "" : "_1");
  uint32_t index = add_weight(r, ingot_arena_printf(&r->g->arena, "%s.index", base), INGOT_DTYPE_I64,
                              scalar ? 0 : 1, &one, &idx, sizeof idx);
  uint32_t ins[2] = {shape, index};
  return add_node1(r, INGOT_OP_GATHER, base, ins, 2, INGOT_DTYPE_I64, scalar ? 0 : 1, &one);
}

/* An int64 scalar (or [1] when !scalar): the run's size of symbol k. A
 * derived symbol's is computed from its parent's as the window does. */
static uint32_t sym_size(ranges_t* r, uint32_t k, bool scalar) {
  if (r->sym[k].size[!scalar]) return r->sym[k].size[!scalar] - 1;
  uint32_t v;
  if (!r->sym[k].parent) {
    v = run_dim(r, r->sym[k].input, r->sym[k].dim, scalar);
  } else {
    uint32_t p = sym_size(r, r->sym[k].parent, scalar);
    int32_t rank = scalar ? 0 : 1;
    int64_t one = 1, add = r->sym[k].add, stride = r->sym[k].stride;
    const char* base = ingot_arena_printf(&r->g->arena, "range%u_size%s", k, scalar ? "" : "_1");
    uint32_t addv = add_weight(r, ingot_arena_printf(&r->g->arena, "%s.add", base), INGOT_DTYPE_I64, rank, &one,
                               &add, sizeof add);
    uint32_t stridev = add_weight(r, ingot_arena_printf(&r->g->arena, "%s.stride", base), INGOT_DTYPE_I64, rank,
                                  &one, &stride, sizeof stride);
    uint32_t onev = add_weight(r, ingot_arena_printf(&r->g->arena, "%s.one", base), INGOT_DTYPE_I64, rank, &one,
                               &one, sizeof one);
    uint32_t a[2] = {p, addv};
    uint32_t t = add_node1(r, INGOT_OP_ADD, ingot_arena_printf(&r->g->arena, "%s.sum", base), a, 2, INGOT_DTYPE_I64,
                           rank, &one);
    uint32_t b[2] = {t, stridev}; /* n + add >= 0 at every size in the range: Div is floor */
    t = add_node1(r, INGOT_OP_DIV, ingot_arena_printf(&r->g->arena, "%s.div", base), b, 2, INGOT_DTYPE_I64, rank,
                  &one);
    uint32_t c[2] = {t, onev};
    v = add_node1(r, INGOT_OP_ADD, base, c, 2, INGOT_DTYPE_I64, rank, &one);
  }
  r->sym[k].size[!scalar] = v + 1;
  return v;
}

/* A bool [hi, 1, ... 1] (`trailing` dims): position < the run's size of symbol k. */
static uint32_t mask_value(ranges_t* r, uint32_t k, int32_t trailing) {
  if (r->mask[k][trailing]) return r->mask[k][trailing] - 1;
  uint32_t size = sym_size(r, k, true);
  int64_t hi = r->sym[k].hi;
  int64_t dims[INGOT_MAX_RANK];
  dims[0] = hi;
  for (int32_t d = 1; d < trailing; ++d) dims[d] = 1;
  int64_t* iota = ingot_xmalloc(sizeof(int64_t) * (size_t)hi);
  for (int64_t i = 0; i < hi; ++i) iota[i] = i;
  const char* base = ingot_arena_printf(&r->g->arena, "range%u_mask%d", k, trailing);
  uint32_t pos = add_weight(r, ingot_arena_printf(&r->g->arena, "%s.position", base), INGOT_DTYPE_I64, trailing,
                            dims, iota, sizeof(int64_t) * (size_t)hi);
  free(iota);
  uint32_t ins[2] = {pos, size};
  uint32_t m = add_node1(r, INGOT_OP_LESS, base, ins, 2, INGOT_DTYPE_BOOL, trailing, dims);
  r->mask[k][trailing] = m + 1;
  return m;
}

/* Node n's input slot i read through a mask along `axis` (a ranged dim):
 * past the run's size it reads `fill`. */
static bool int_dtype(ingot_dtype_t t) {
  switch (t) {
    case INGOT_DTYPE_I8: case INGOT_DTYPE_U8: case INGOT_DTYPE_I16: case INGOT_DTYPE_U16: case INGOT_DTYPE_I32:
    case INGOT_DTYPE_U32: case INGOT_DTYPE_I64: case INGOT_DTYPE_U64:
      return true;
    default:
      return false;
  }
}

static ingot_status_t mask_input(ranges_t* r, uint32_t node, uint32_t i, int32_t axis, uint32_t k, fill_t fill,
                                 int64_t margin) {
  ingot_node_t* n = &r->g->nodes[node];
  uint32_t x = n->inputs[i];
  const ingot_value_t* xv = &r->g->values[x];
  if (k == SYM_OTHER)
    return refuse_node(n, ingot_arena_printf(&r->g->arena, "reduces '%s' along a dimension that moves with a ranged "
                                             "input's other than by being equal to it", xv->name));
  /* A Softmax along the axis of a masked input is 0 past the run's size
   * already. */
  const ingot_node_t* from = xv->producer < r->g->node_count ? &r->g->nodes[xv->producer] : NULL;
  if (fill == FILL_ZERO && from && from->op == INGOT_OP_SOFTMAX && from->params.u.axis.axis == axis &&
      from->inputs[0] >= r->nv) {
    if (x < r->nv) r->full[x] |= 1u << axis; /* its zeros past the size are read: written whole */
    return INGOT_OK;
  }
  ingot_dtype_t dt = xv->dtype;
  uint8_t bytes[8] = {0};
  size_t es = ingot_graph_dtype_size(dt);
  double f = fill == FILL_ZERO ? 0.0 : fill == FILL_NEG_INF ? -INFINITY : INFINITY;
  switch (dt) {
    case INGOT_DTYPE_F32: { float v = (float)f; memcpy(bytes, &v, 4); break; }
    case INGOT_DTYPE_F64: memcpy(bytes, &f, 8); break;
    case INGOT_DTYPE_F16: { uint16_t h = fill == FILL_ZERO ? 0 : fill == FILL_NEG_INF ? 0xfc00 : 0x7c00; memcpy(bytes, &h, 2); break; }
    case INGOT_DTYPE_BF16: { uint16_t h = fill == FILL_ZERO ? 0 : fill == FILL_NEG_INF ? 0xff80 : 0x7f80; memcpy(bytes, &h, 2); break; }
    default:
      if (fill != FILL_ZERO || !int_dtype(dt))
        return refuse_node(n, ingot_arena_printf(&r->g->arena, "reduces '%s' (%s) along %s, which only float "
                                                 "tensors can do through a mask so far",
                                                 xv->name, ingot_dtype_name(dt), sym_name(r, k)));
      break;
  }
  const char* base = ingot_arena_printf(&r->g->arena, "%s:masked%u_%d_%d%s", xv->name, k, axis, (int)fill,
                                        margin ? ingot_arena_printf(&r->g->arena, "_w%lld", (long long)margin) : "");
  uint32_t known = ingot_graph_find_value(r->g, base);
  if (known != INGOT_NO_VALUE) {
    r->g->nodes[node].inputs[i] = known;
    return INGOT_OK;
  }
  uint32_t mask = mask_value(r, k, xv->rank - axis);
  uint32_t fillv = add_weight(r, ingot_arena_printf(&r->g->arena, "%s.fill", base), dt, 0, NULL, bytes, es);
  xv = &r->g->values[x];
  int64_t dims[INGOT_MAX_RANK];
  memcpy(dims, xv->dims, sizeof dims);
  uint32_t ins[3] = {mask, x, fillv};
  uint32_t y = add_node1(r, INGOT_OP_WHERE, base, ins, 3, dt, xv->rank, dims);
  /* How much of the mask a run needs (run_sym, run_margin; its kernel
   * stops there). A window reads the first size + margin entries along
   * each ranged dim (and so of the window mask it reads, for the other
   * axis). A reduction reads the masked axis whole (and every axis a mask
   * before it in a chain masked, which x then has no run_sym on), the
   * other dims only to the size. */
  ingot_value_t* xw = &r->g->values[x];
  ingot_value_t* yw = &r->g->values[y];
  if (margin && x >= r->nv && xw->run_margin[axis] < margin) xw->run_margin[axis] = (uint16_t)margin;
  for (int32_t d = 0; d < yw->rank; ++d) {
    uint32_t xk = x < r->nv ? r->syms[x][d] : xw->run_sym[d];
    yw->run_sym[d] = (uint8_t)(xk == SYM_OTHER || (!margin && d == axis) ? 0 : xk);
    yw->run_margin[d] = x < r->nv || !yw->run_sym[d] ? 0 : xw->run_margin[d];
  }
  if (margin && yw->run_margin[axis] < margin) yw->run_margin[axis] = (uint16_t)margin;
  r->g->nodes[node].inputs[i] = y;
  return INGOT_OK;
}

/* ---- what each node may do with a ranged dim ---- */

/* Reshape-like nodes keep a ranged dim when it has the same elements after
 * it (and before it) in the output as in the input: the layout at the
 * largest size then puts each entry where the output's largest layout wants
 * it. */
static bool keeps_ranged(const ranges_t* r, uint32_t x, uint32_t y) {
  const ingot_value_t* a = &r->g->values[x];
  const ingot_value_t* b = &r->g->values[y];
  for (int32_t q = 0; q < b->rank; ++q) {
    if (!r->syms[y][q]) continue;
    int32_t hits = 0;
    for (int32_t p = 0; p < a->rank; ++p) hits += r->syms[x][p] == r->syms[y][q];
    if (hits != 1) return false;
  }
  for (int32_t p = 0; p < a->rank; ++p) {
    if (!r->syms[x][p]) continue;
    int32_t q = 0;
    while (q < b->rank && r->syms[y][q] != r->syms[x][p]) ++q;
    if (q == b->rank) return false;
    int64_t in_after = 1, out_after = 1, in_before = 1, out_before = 1;
    for (int32_t d = p + 1; d < a->rank; ++d) in_after *= a->dims[d];
    for (int32_t d = q + 1; d < b->rank; ++d) out_after *= b->dims[d];
    for (int32_t d = 0; d < p; ++d) in_before *= a->dims[d];
    for (int32_t d = 0; d < q; ++d) out_before *= b->dims[d];
    if (in_after != out_after || in_before != out_before) return false;
  }
  return true;
}

/* count (a float32 scalar, or INGOT_NO_VALUE for 1) times the run's size of
 * symbol k, for node id's dim d. */
static uint32_t times_size(ranges_t* r, uint32_t id, int32_t d, uint32_t k, uint32_t count) {
  uint32_t size = sym_size(r, k, true);
  const char* base = ingot_arena_printf(&r->g->arena, "%s:count%d", r->g->nodes[id].name, d);
  uint32_t f = add_node1(r, INGOT_OP_CAST, base, &size, 1, INGOT_DTYPE_F32, 0, NULL);
  ingot_attr_t* to = ingot_graph_node_add_attr(r->g, r->g->node_count - 1, "to", INGOT_ATTR_INT);
  to->i = 1; /* FLOAT */
  if (count == INGOT_NO_VALUE) return f;
  uint32_t ab[2] = {count, f};
  return add_node1(r, INGOT_OP_MUL, ingot_arena_printf(&r->g->arena, "%s.times", base), ab, 2, INGOT_DTYPE_F32, 0,
                   NULL);
}

/* Node id writes a new float32 value, named y's + suffix, in place of its
 * output y (which a node added after it then makes); returns the new one. */
static uint32_t redirect_output(ranges_t* r, uint32_t id, const char* suffix) {
  uint32_t y = r->g->nodes[id].outputs[0];
  const char* name = ingot_arena_printf(&r->g->arena, "%s%s", r->g->values[y].name, suffix);
  uint32_t v = ingot_graph_add_value(r->g, name, INGOT_VALUE_INTERMEDIATE);
  const ingot_value_t* yv = &r->g->values[y];
  ingot_value_t* nv = &r->g->values[v];
  nv->dtype = INGOT_DTYPE_F32;
  nv->rank = yv->rank;
  memcpy(nv->dims, yv->dims, sizeof nv->dims);
  r->g->nodes[id].outputs[0] = v;
  nv->producer = id;
  return v;
}

/* A float32 ReduceMean over ranged dims: the sum of the masked input (the
 * node becomes a ReduceSum) divided by the run's count of entries. */
static ingot_status_t mean_over_ranges(ranges_t* r, uint32_t id) {
  ingot_node_t* n = &r->g->nodes[id];
  uint32_t x0 = n->inputs[0];
  int32_t rank = r->g->values[x0].rank;
  dim_syms_t ks;
  memcpy(ks, r->syms[x0], sizeof ks);
  bool reduced[INGOT_MAX_RANK];
  memcpy(reduced, n->params.u.reduce.reduced, sizeof reduced);
  bool any = false;
  for (int32_t d = 0; d < rank; ++d) any |= reduced[d] && ks[d];
  if (!any) return INGOT_OK;
  ingot_status_t s;
  float fixed = 1.0f;
  uint32_t count = INGOT_NO_VALUE; /* float32 scalar: the ranged part of the count */
  for (int32_t d = 0; d < rank; ++d) {
    if (!reduced[d]) continue;
    if (!ks[d]) {
      fixed *= (float)r->g->values[x0].dims[d];
      continue;
    }
    if ((s = mask_input(r, id, 0, d, ks[d], FILL_ZERO, 0))) return s;
    count = times_size(r, id, d, ks[d], count);
  }
  uint32_t y = r->g->nodes[id].outputs[0];
  uint32_t sum = redirect_output(r, id, ":sum");
  const char* sum_name = r->g->values[sum].name;
  r->g->nodes[id].op = INGOT_OP_REDUCESUM;
  uint32_t fixedv = add_weight(r, ingot_arena_printf(&r->g->arena, "%s:fixed_count", sum_name), INGOT_DTYPE_F32, 0,
                               NULL, &fixed, sizeof fixed);
  uint32_t ab[2] = {count, fixedv};
  uint32_t total = add_node1(r, INGOT_OP_MUL, ingot_arena_printf(&r->g->arena, "%s:count", sum_name), ab, 2,
                             INGOT_DTYPE_F32, 0, NULL);
  uint32_t div_in[2] = {sum, total};
  ingot_graph_add_node(r->g, INGOT_OP_DIV, ingot_arena_printf(&r->g->arena, "%s:mean", sum_name), div_in, 2, &y, 1);
  return INGOT_OK;
}

/* The symbol of a window's output along an input dim of symbol k, where
 * out = floor((n + add) / stride) + 1: k itself for "same" windows, else
 * a derived symbol (one per parent, add and stride). */
static ingot_status_t window_sym(ranges_t* r, uint32_t id, uint32_t y, int32_t d, uint32_t k, int64_t add,
                                 int64_t stride, uint32_t* out) {
  const ingot_node_t* n = &r->g->nodes[id];
  if (add == -1 && stride == 1) {
    *out = k;
    return INGOT_OK;
  }
  for (uint32_t j = r->g->range_symbol_count + 1; j <= r->sym_count; ++j)
    if (r->sym[j].parent == k && r->sym[j].add == add && r->sym[j].stride == stride) {
      *out = j;
      return INGOT_OK;
    }
  const sym_t* p = &r->sym[k];
  /* p's sizes are >= 1 and n + add >= 0 for every size kept (lo checked) */
  int64_t hi = (p->hi + add) / stride + 1, probe = (p->probe + add) / stride + 1;
  int64_t lo = p->lo + add >= 0 ? (p->lo + add) / stride + 1 : 0;
  const ingot_value_t* yv = &r->g->values[y];
  if (lo < 1)
    return refuse_node(n, ingot_arena_printf(&r->g->arena, "its window along %s is larger than the input at the "
                                             "least size %lld; raise the range's least size",
                                             sym_name(r, k), (long long)p->lo));
  if (hi != yv->dims[d] || probe != r->pdims[y][d] || probe == hi)
    return refuse_node(n, ingot_arena_printf(&r->g->arena,
                                             "output '%s' dimension %d (%lld, and %lld at other sizes) does not "
                                             "follow %s as its window says, or not visibly; widen the range",
                                             yv->name, d, (long long)yv->dims[d], (long long)r->pdims[y][d],
                                             sym_name(r, k)));
  for (uint32_t j = 1; j <= r->sym_count; ++j)
    if (r->sym[j].hi == hi && r->sym[j].probe == probe)
      return refuse_node(n, ingot_arena_printf(&r->g->arena, "output '%s' dimension %d cannot be told apart from %s",
                                               yv->name, d, sym_name(r, j)));
  if (r->sym_count >= MAX_SYMS) return refuse_node(n, "makes more ranged dimensions than a graph may have");
  uint32_t j = ++r->sym_count;
  sym_t* s = &r->sym[j];
  s->hi = hi;
  s->lo = lo;
  s->probe = probe;
  s->parent = k;
  s->add = add;
  s->stride = stride;
  *out = j;
  return INGOT_OK;
}

/* Conv, MaxPool, AveragePool with ranged image dims: a window at an output
 * position below the run's size reads the input below the run's size, and
 * past it where the pads at the end reach; those entries are masked to what
 * the pads hold (0, or -inf for a max). The output dim follows the window's
 * size formula. */
static ingot_status_t settle_window(ranges_t* r, uint32_t id) {
  ingot_node_t* n = &r->g->nodes[id];
  ingot_window_params_t w = n->op == INGOT_OP_CONV ? n->params.u.conv.window : n->params.u.pool.window;
  bool avg_excl = n->op == INGOT_OP_AVERAGEPOOL && !n->params.u.pool.count_include_pad;
  bool same = ingot_node_attr_int(n, "ingot.auto_pad_same", 0) != 0; /* graph/shape_infer.c */
  uint32_t x0 = n->inputs[0], y0 = n->outputs[0];
  int32_t rank = r->g->values[x0].rank;
  dim_syms_t ks;
  memcpy(ks, r->syms[x0], sizeof ks);
  ingot_status_t s;
  for (int32_t d = 2; d < rank; ++d) {
    uint32_t k = ks[d];
    if (!k) continue;
    int32_t a = d - 2;
    const char* why = NULL;
    if (k == SYM_OTHER) why = "a dimension that moves with a ranged input's other than by being equal to it";
    else if (w.ceil_mode) why = "ceil_mode along a ranged dimension";
    else if (same && w.strides[a] > 1) why = "auto_pad SAME with a stride along a ranged dimension (its pads change "
                                              "with the size)";
    else if (avg_excl && w.pads[w.spatial + a] > 0) why = "an average without count_include_pad whose pads reach "
                                                          "past a ranged dimension's end";
    else if (n->output_count > 1 && n->outputs[1] != INGOT_NO_VALUE) why = "MaxPool indices over a ranged image";
    if (why) return refuse_node(n, ingot_arena_printf(&r->g->arena, "%s (%s)", why, sym_name(r, k)));
    if (w.pads[w.spatial + a] > 0 &&
        (s = mask_input(r, id, 0, d, k, r->g->nodes[id].op == INGOT_OP_MAXPOOL ? FILL_NEG_INF : FILL_ZERO,
                        w.pads[w.spatial + a])))
      return s;
    int64_t add = w.pads[a] + w.pads[w.spatial + a] - w.dilations[a] * (w.kernel[a] - 1) - 1;
    uint32_t j = 0;
    if ((s = window_sym(r, id, y0, d, k, add, w.strides[a], &j))) return s;
    r->syms[y0][d] = (uint8_t)j;
  }
  return INGOT_OK;
}

/* GlobalAveragePool / GlobalMaxPool over ranged image dims: the masked
 * input; an average is then scaled by the largest count over the run's. */
static ingot_status_t settle_global_pool(ranges_t* r, uint32_t id) {
  ingot_node_t* n = &r->g->nodes[id];
  bool avg = n->op == INGOT_OP_GLOBALAVERAGEPOOL;
  uint32_t x0 = n->inputs[0];
  int32_t rank = r->g->values[x0].rank;
  dim_syms_t ks;
  memcpy(ks, r->syms[x0], sizeof ks);
  ingot_status_t s;
  float largest = 1.0f;
  uint32_t count = INGOT_NO_VALUE;
  for (int32_t d = 2; d < rank; ++d) {
    if (!ks[d]) continue;
    if (avg && r->g->values[x0].dtype != INGOT_DTYPE_F32)
      return refuse_node(&r->g->nodes[id], "averages a non-float32 tensor over a ranged dimension");
    if ((s = mask_input(r, id, 0, d, ks[d], avg ? FILL_ZERO : FILL_NEG_INF, 0))) return s;
    if (!avg) continue;
    largest *= (float)r->g->values[x0].dims[d];
    count = times_size(r, id, d, ks[d], count);
  }
  if (count == INGOT_NO_VALUE) return INGOT_OK;
  /* y = pool(masked x) * (largest count / the run's count) */
  uint32_t y = r->g->nodes[id].outputs[0];
  uint32_t raw = redirect_output(r, id, ":sum_scaled");
  const char* raw_name = r->g->values[raw].name;
  uint32_t lv = add_weight(r, ingot_arena_printf(&r->g->arena, "%s.largest", raw_name), INGOT_DTYPE_F32, 0, NULL,
                           &largest, sizeof largest);
  uint32_t ab[2] = {lv, count};
  uint32_t factor = add_node1(r, INGOT_OP_DIV, ingot_arena_printf(&r->g->arena, "%s.factor", raw_name), ab, 2,
                              INGOT_DTYPE_F32, 0, NULL);
  uint32_t mul_in[2] = {raw, factor};
  ingot_graph_add_node(r->g, INGOT_OP_MUL, ingot_arena_printf(&r->g->arena, "%s:mean", raw_name), mul_in, 2, &y, 1);
  return INGOT_OK;
}

static ingot_status_t settle_node(ranges_t* r, uint32_t id) {
  ingot_node_t* n = &r->g->nodes[id];
  ingot_arena_t* A = &r->g->arena;
  bool reads = false, writes = false;
  for (uint32_t i = 0; i < n->input_count; ++i) {
    uint32_t x = n->inputs[i];
    if (x == INGOT_NO_VALUE || x >= r->nv) continue;
    reads |= any_ranged(r, x);
    if (r->varies[x] && !shape_slot(n, i))
      return refuse_node(n, ingot_arena_printf(A, "reads '%s', a value computed from the size of a ranged input, as "
                                               "data; a bundle with ranged inputs computes such values only at the "
                                               "largest size (use a fixed --input-shape)",
                                               r->g->values[x].name));
  }
  for (uint32_t k = 0; k < n->output_count; ++k) writes |= any_ranged(r, n->outputs[k]);
  if (!reads && !writes) return INGOT_OK;
  uint32_t x0 = n->inputs[0];
  const ingot_value_t* a = x0 != INGOT_NO_VALUE ? &r->g->values[x0] : NULL;
  uint32_t y0 = n->output_count ? n->outputs[0] : INGOT_NO_VALUE;
  ingot_status_t s;
  if (ingot_op_works_by_element(n->op)) return INGOT_OK;
  switch (n->op) {
    case INGOT_OP_DROPOUT: case INGOT_OP_SHAPE: case INGOT_OP_SIZE: case INGOT_OP_EXPAND: case INGOT_OP_TRANSPOSE:
    case INGOT_OP_RANGE: case INGOT_OP_CONSTANTOFSHAPE:
      return INGOT_OK;
    case INGOT_OP_RESHAPE: case INGOT_OP_FLATTEN: case INGOT_OP_SQUEEZE: case INGOT_OP_UNSQUEEZE:
      if (keeps_ranged(r, x0, y0)) return INGOT_OK;
      return refuse_node(n, "merges or splits a ranged dimension with others; at the largest layout its entries "
                            "would move with the run's size");
    case INGOT_OP_MATMUL: case INGOT_OP_GEMM: {
      const ingot_value_t* b = &r->g->values[n->inputs[1]];
      bool ta = n->op == INGOT_OP_GEMM && n->params.u.gemm.trans_a;
      bool tb = n->op == INGOT_OP_GEMM && n->params.u.gemm.trans_b;
      int32_t ka = a->rank == 1 ? 0 : ta ? a->rank - 2 : a->rank - 1;
      int32_t kb = b->rank == 1 ? 0 : tb ? b->rank - 1 : b->rank - 2;
      uint32_t k = r->syms[x0][ka] ? r->syms[x0][ka] : r->syms[n->inputs[1]][kb];
      if (k && (s = mask_input(r, id, 0, ka, k, FILL_ZERO, 0))) return s;
      if (k && (s = mask_input(r, id, 1, kb, k, FILL_ZERO, 0))) return s;
      return INGOT_OK; /* Gemm's C broadcasts like an elementwise input */
    }
    case INGOT_OP_SOFTMAX: case INGOT_OP_LOGSOFTMAX: case INGOT_OP_HARDMAX: {
      int32_t axis = n->params.u.axis.axis;
      if (r->syms[x0][axis]) return mask_input(r, id, 0, axis, r->syms[x0][axis], FILL_NEG_INF, 0);
      return INGOT_OK;
    }
    case INGOT_OP_ARGMAX: case INGOT_OP_ARGMIN: {
      int32_t axis = n->params.u.arg.axis;
      if (r->syms[x0][axis])
        return mask_input(r, id, 0, axis, r->syms[x0][axis], n->op == INGOT_OP_ARGMAX ? FILL_NEG_INF : FILL_POS_INF, 0);
      return INGOT_OK;
    }
    case INGOT_OP_REDUCESUM: case INGOT_OP_REDUCESUMSQUARE: case INGOT_OP_REDUCEL1: case INGOT_OP_REDUCEL2:
    case INGOT_OP_REDUCEMAX: case INGOT_OP_REDUCEMIN: case INGOT_OP_REDUCELOGSUMEXP: {
      fill_t fill = n->op == INGOT_OP_REDUCEMAX || n->op == INGOT_OP_REDUCELOGSUMEXP ? FILL_NEG_INF
                    : n->op == INGOT_OP_REDUCEMIN ? FILL_POS_INF : FILL_ZERO;
      int32_t rank = a->rank;
      dim_syms_t ks;
      memcpy(ks, r->syms[x0], sizeof ks);
      for (int32_t d = 0; d < rank; ++d) /* one mask per ranged axis, each around the last */
        if (n->params.u.reduce.reduced[d] && ks[d] && (s = mask_input(r, id, 0, d, ks[d], fill, 0))) return s;
      return INGOT_OK;
    }
    case INGOT_OP_REDUCEMEAN:
      if (a->dtype == INGOT_DTYPE_F32) return mean_over_ranges(r, id);
      /* fall through */
    case INGOT_OP_REDUCEPROD: case INGOT_OP_REDUCELOGSUM:
      for (int32_t d = 0; d < a->rank; ++d)
        if (n->params.u.reduce.reduced[d] && r->syms[x0][d])
          return refuse_node(n, ingot_arena_printf(A, "reduces over %s; only sums, maxima, minima and float32 means "
                                                   "over a ranged dimension are supported so far",
                                                   sym_name(r, r->syms[x0][d])));
      return INGOT_OK;
    case INGOT_OP_LAYERNORMALIZATION: case INGOT_OP_RMSNORMALIZATION: {
      int32_t axis = n->params.u.norm.axis;
      for (int32_t d = axis; d < a->rank; ++d)
        if (r->syms[x0][d])
          return refuse_node(n, ingot_arena_printf(A, "normalizes over %s; a mean over a ranged dimension is not "
                                                   "supported yet", sym_name(r, r->syms[x0][d])));
      return INGOT_OK;
    }
    case INGOT_OP_GATHER: {
      int32_t axis = n->params.u.axis.axis;
      uint32_t idx = n->inputs[1];
      if (!r->syms[x0][axis]) return INGOT_OK;
      const ingot_value_t* iv = &r->g->values[idx];
      if (iv->kind == INGOT_VALUE_WEIGHT && iv->data) {
        int64_t count = ingot_value_numel(iv);
        int64_t least = r->sym[r->syms[x0][axis]].lo;
        for (int64_t e = 0; e < count; ++e) {
          int64_t j = iv->dtype == INGOT_DTYPE_I32 ? ((const int32_t*)iv->data)[e] : ((const int64_t*)iv->data)[e];
          if (j < 0 || j >= least)
            return refuse_node(n, ingot_arena_printf(A, "gathers entry %lld along %s, which not every run has",
                                                     (long long)j, sym_name(r, r->syms[x0][axis])));
        }
      }
      return INGOT_OK; /* indices computed at run time: the model's own contract */
    }
    case INGOT_OP_SLICE: {
      ingot_slice_params_t sp;
      if ((s = ingot_graph_slice_params(r->g, id, &sp))) return s;
      for (int32_t d = 0; d < a->rank; ++d) {
        uint32_t k = r->syms[x0][d];
        if (!k) continue;
        if (r->syms[y0][d] == k && sp.start[d] == 0 && sp.step[d] == 1) continue;
        int64_t last = sp.start[d] + sp.step[d] * (sp.count[d] - 1);
        if (k != SYM_OTHER && !r->syms[y0][d] && sp.start[d] >= 0 && last >= 0 && sp.start[d] < r->sym[k].lo &&
            last < r->sym[k].lo)
          continue;
        return refuse_node(n, ingot_arena_printf(A, "slices %s other than from its start, or past its least size",
                                                 sym_name(r, k)));
      }
      return INGOT_OK;
    }
    case INGOT_OP_CONCAT: case INGOT_OP_SPLIT: {
      int32_t axis = n->op == INGOT_OP_CONCAT ? n->params.u.axis.axis : -1;
      if (n->op == INGOT_OP_SPLIT) {
        ingot_split_params_t sp;
        if ((s = ingot_graph_split_params(r->g, id, &sp))) return s;
        axis = sp.axis;
      }
      for (uint32_t i = 0; i < n->input_count; ++i)
        if (n->inputs[i] != INGOT_NO_VALUE && n->inputs[i] < r->nv && r->syms[n->inputs[i]][axis])
          return refuse_node(n, ingot_arena_printf(A, "joins or splits along %s; at the largest layout the parts "
                                                   "would not meet", sym_name(r, r->syms[n->inputs[i]][axis])));
      return INGOT_OK;
    }
    case INGOT_OP_CUMSUM: {
      int32_t axis = n->params.u.cum.axis;
      if (r->syms[x0][axis] && n->params.u.cum.reverse)
        return refuse_node(n, "sums in reverse along a ranged dimension");
      return INGOT_OK;
    }
    case INGOT_OP_CONV: case INGOT_OP_MAXPOOL: case INGOT_OP_AVERAGEPOOL: case INGOT_OP_BATCHNORMALIZATION:
    case INGOT_OP_GLOBALAVERAGEPOOL: case INGOT_OP_GLOBALMAXPOOL: case INGOT_OP_INSTANCENORMALIZATION: {
      /* batch items are independent, channels are not; spatial dims as
       * each op allows (windows) */
      for (int32_t d = 1; d < a->rank; ++d)
        if (r->syms[x0][d] && (d == 1 || n->op == INGOT_OP_INSTANCENORMALIZATION))
          return refuse_node(n, ingot_arena_printf(A, "works across %s (%s); only the batch and image dimensions "
                                                   "may be ranged for it so far",
                                                   sym_name(r, r->syms[x0][d]),
                                                   d == 1 ? "its channels" : "a mean over it"));
      for (uint32_t i = 1; i < n->input_count; ++i)
        if (any_ranged(r, n->inputs[i])) return refuse_node(n, "has a ranged weight");
      if (n->op == INGOT_OP_CONV || n->op == INGOT_OP_MAXPOOL || n->op == INGOT_OP_AVERAGEPOOL)
        return settle_window(r, id);
      if (n->op == INGOT_OP_GLOBALAVERAGEPOOL || n->op == INGOT_OP_GLOBALMAXPOOL) return settle_global_pool(r, id);
      return INGOT_OK;
    }
    default:
      break;
  }
  for (uint32_t i = 0; i < n->input_count; ++i) {
    uint32_t x = n->inputs[i];
    if (!any_ranged(r, x)) continue;
    for (int32_t d = 0; d < r->g->values[x].rank; ++d)
      if (r->syms[x][d])
        return refuse_node(n, ingot_arena_printf(A, "reads '%s', whose dimension %d follows %s; this op does not take "
                                                 "ranged dimensions yet",
                                                 r->g->values[x].name, d, sym_name(r, r->syms[x][d])));
  }
  return refuse_node(n, "makes a ranged dimension from fixed inputs");
}

/* A graph output with ranged dims: its run-time shape, from the inputs'. */
static void settle_output(ranges_t* r, uint32_t o) {
  ingot_value_t* v = &r->g->values[o];
  int32_t rank = v->rank;
  uint32_t parts[INGOT_MAX_RANK];
  uint32_t dims_mask = 0;
  const char* oname = v->name;
  for (int32_t d = 0; d < rank; ++d) {
    uint32_t k = r->syms[o][d];
    if (k) {
      parts[d] = sym_size(r, k, false);
      dims_mask |= 1u << d;
    } else {
      int64_t one = 1, size = r->g->values[o].dims[d];
      parts[d] = add_weight(r, ingot_arena_printf(&r->g->arena, "%s:dim%d", oname, d), INGOT_DTYPE_I64, 1, &one,
                            &size, sizeof size);
    }
  }
  int64_t n = rank;
  uint32_t shape = add_node1(r, INGOT_OP_CONCAT, ingot_arena_printf(&r->g->arena, "%s:run_shape", oname), parts,
                             (uint32_t)rank, INGOT_DTYPE_I64, 1, &n);
  uint32_t node = r->g->node_count - 1;
  ingot_attr_t* ax = ingot_graph_node_add_attr(r->g, node, "axis", INGOT_ATTR_INT);
  ax->i = 0;
  v = &r->g->values[o];
  v->runtime_shape = shape + 1;
  v->runtime_dims = dims_mask;
  v->runtime_padded = true;
}

/* Which dims of each value kernels may stop at the run's size
 * (run_sym), and the sizes they read (run_size). */
static void mark_run_dims(ranges_t* r) {
  ingot_graph_t* g = r->g;
  bool used[MAX_SYMS + 1] = {false};
  for (uint32_t v = 0; v < r->nv; ++v)
    for (int32_t d = 0; d < g->values[v].rank; ++d) {
      uint32_t k = r->syms[v][d];
      if (!k || k == SYM_OTHER || (r->full[v] >> d & 1u)) continue;
      g->values[v].run_sym[d] = (uint8_t)k;
      used[k] = true;
    }
  for (uint32_t k = 1; k <= r->sym_count; ++k)
    if (used[k]) g->run_size[k] = sym_size(r, k, true) + 1;
  g->run_size_count = r->sym_count;
}

/* Inputs that name one dim alike share its range: a run must give them one
 * size (a check after the steps). */
static void check_shared(ranges_t* r) {
  ingot_graph_t* g = r->g;
  for (uint32_t i = 0; i < g->input_count; ++i) {
    uint32_t in = g->inputs[i];
    for (int32_t d = 0; d < g->values[in].rank; ++d) {
      uint32_t k = g->values[in].range_sym[d];
      if (!k || (r->sym[k].input == in && r->sym[k].dim == d)) continue;
      uint32_t a = sym_size(r, k, true);
      uint32_t b = run_dim(r, in, d, true);
      uint32_t ab[2] = {a, b};
      const char* base = ingot_arena_printf(&g->arena, "range%u_same_%s_%d", k, g->values[in].name, d);
      uint32_t eq = add_node1(r, INGOT_OP_EQUAL, base, ab, 2, INGOT_DTYPE_BOOL, 0, NULL);
      uint32_t ne = add_node1(r, INGOT_OP_NOT, ingot_arena_printf(&g->arena, "%s.not", base), &eq, 1,
                              INGOT_DTYPE_BOOL, 0, NULL);
      ingot_graph_add_check(g, ne, ingot_arena_printf(&g->arena,
                                                       "input '%s' dimension %d and input '%s' dimension %d are one "
                                                       "size in the model; this run gave them two",
                                                       g->values[r->sym[k].input].name, r->sym[k].dim,
                                                       g->values[in].name, d));
    }
  }
}

/* settle_node, then: an output dim that follows a range other than by
 * equality is refused at the node that makes it. */
static ingot_status_t settle_node_checked(ranges_t* r, uint32_t id) {
  ingot_status_t s = settle_node(r, id);
  const ingot_node_t* n = &r->g->nodes[id];
  for (uint32_t k = 0; !s && k < n->output_count; ++k) {
    uint32_t y = n->outputs[k];
    if (y == INGOT_NO_VALUE || y >= r->nv) continue;
    const ingot_value_t* v = &r->g->values[y];
    for (int32_t d = 0; d < v->rank; ++d) {
      if (r->syms[y][d] != SYM_OTHER) continue;
      uint32_t j = r->g->range_symbol_count + 1; /* a dim equal to a window's output */
      while (j <= r->sym_count && !(r->sym[j].hi == v->dims[d] && r->sym[j].probe == r->pdims[y][d])) ++j;
      if (j <= r->sym_count) {
        r->syms[y][d] = (uint8_t)j;
        continue;
      }
      return refuse_node(n, ingot_arena_printf(&r->g->arena,
                                               "output '%s' dimension %d is %lld at the largest sizes of the ranged "
                                               "inputs and %lld at others: a dim may follow a range only by being "
                                               "equal to it, or through a window (not 2n or n-1)",
                                               v->name, d, (long long)v->dims[d], (long long)r->pdims[y][d]));
    }
  }
  return s;
}

ingot_status_t ingot_graph_settle_ranges(ingot_graph_t* graph, const ingot_graph_t* probe) {
  if (!graph->range_symbol_count) return INGOT_OK;
  ranges_t r;
  memset(&r, 0, sizeof r);
  r.g = graph;
  r.probe = probe;
  r.nv = graph->value_count;
  r.syms = ingot_xcalloc(r.nv ? r.nv : 1, sizeof(dim_syms_t));
  r.varies = ingot_xcalloc(r.nv ? r.nv : 1, sizeof(bool));
  r.pdims = ingot_xcalloc(r.nv ? r.nv : 1, sizeof *r.pdims);
  r.full = ingot_xcalloc(r.nv ? r.nv : 1, sizeof(uint32_t));
  r.sym_count = graph->range_symbol_count;
  for (uint32_t i = 0; i < graph->input_count; ++i) {
    uint32_t in = graph->inputs[i];
    const ingot_value_t* v = &graph->values[in];
    for (int32_t d = 0; d < v->rank; ++d) {
      uint32_t k = v->range_sym[d];
      if (!k || r.sym[k].hi) continue;
      r.sym[k].input = in;
      r.sym[k].dim = d;
      r.sym[k].hi = v->dims[d];
      r.sym[k].lo = v->range_lo[d];
      r.sym[k].probe = ingot_graph_range_probe(graph, k);
    }
  }
  ingot_status_t s = find_syms(&r);
  /* Inputs' own dims: as given (a dim the probe moved by chance equally is
   * still the input's range). */
  for (uint32_t i = 0; !s && i < graph->input_count; ++i) {
    uint32_t in = graph->inputs[i];
    for (int32_t d = 0; d < graph->values[in].rank; ++d) r.syms[in][d] = graph->values[in].range_sym[d];
  }
  uint32_t nn = graph->node_count;
  for (uint32_t i = 0; !s && i < nn; ++i) {
    if (graph->nodes[i].dead) continue;
    s = settle_node_checked(&r, i);
  }
  for (uint32_t i = 0; !s && i < graph->output_count; ++i) {
    uint32_t o = graph->outputs[i];
    if (o < r.nv && any_ranged(&r, o) && !graph->values[o].runtime_shape) settle_output(&r, o);
    else if (o < r.nv && any_ranged(&r, o))
      s = ingot_fail(INGOT_ERROR_UNSUPPORTED, "output '%s' has both a ranged dimension and a size its run computes",
                     graph->values[o].name);
  }
  if (!s) check_shared(&r);
  if (!s) mark_run_dims(&r);
  free(r.full);
  free(r.syms);
  free(r.varies);
  free(r.pdims);
  if (!s) s = ingot_graph_sort(graph);
  return s;
}
