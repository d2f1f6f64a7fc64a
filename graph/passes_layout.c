/* Layout passes: rewrites that change how data reaches a kernel.
 *
 * ingot_graph_pad_conv_inputs moves a Conv's zero padding into an explicit
 * Pad node (constant mode, value 0, pads as an int64 weight input), so the
 * conv reads a padded intermediate with pads 0 and lowers without a select
 * and index clamps in its innermost loop. It runs after shape inference
 * (the conv's pads are explicit, auto_pad resolved to "NOTSET"); the new Pad
 * node and its output are inferred by the pipeline's final inference. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph_internal.h"

/* Padded tensors above this size are left to the conv's own bounds checks. */
#define PAD_CONV_MAX_BYTES ((uint64_t)64 << 20)

/* Whether the padded copy of x (rank dims, 2*sp pads) has a known size
 * within PAD_CONV_MAX_BYTES. */
static bool pad_size_ok(const ingot_value_t* xv, const int64_t* pads, int32_t sp) {
  size_t esize = ingot_graph_dtype_size(xv->dtype);
  if (esize == 0) return false;
  uint64_t numel = 1;
  for (int32_t d = 0; d < xv->rank; ++d) {
    int64_t dim = xv->dims[d];
    if (d >= 2) dim += pads[d - 2] + pads[sp + d - 2];
    if (dim < 0) return false;
    if (dim > 0 && numel > (PAD_CONV_MAX_BYTES / esize) / (uint64_t)dim + 1) return false;
    numel *= (uint64_t)dim;
  }
  return numel != 0 && numel <= PAD_CONV_MAX_BYTES / esize;
}

/* Node `i` (whose input 0 is x) reads a new constant Pad of x by `pads`
 * (ONNX order, 2*sp entries) with `value` (a one-element value, or
 * INGOT_NO_VALUE for 0) and its own pads become 0. */
static void insert_pad(ingot_graph_t* graph, uint32_t i, const int64_t* pads, int32_t sp, uint32_t value) {
  uint32_t x = graph->nodes[i].inputs[0];
  int32_t rank = graph->values[x].rank;
  /* The Pad's pads input: begin for every axis, then end (N, C get 0). */
  int64_t* pad_data = ingot_xmalloc(sizeof(int64_t) * 2 * (size_t)rank);
  memset(pad_data, 0, sizeof(int64_t) * 2 * (size_t)rank);
  for (int32_t k = 0; k < sp; ++k) {
    pad_data[2 + k] = pads[k];
    pad_data[rank + 2 + k] = pads[sp + k];
  }
  const char* name = graph->nodes[i].name;
  char* base = ingot_arena_printf(&graph->arena, "%s_pads", name);
  uint32_t pv = ingot_graph_add_value(graph, ingot_graph_unique_name(graph, base), INGOT_VALUE_WEIGHT);
  int64_t pdim = 2 * (int64_t)rank;
  ingot_graph_set_weight(graph, pv, INGOT_DTYPE_I64, 1, &pdim, pad_data);
  base = ingot_arena_printf(&graph->arena, "%s_padded", graph->values[x].name);
  uint32_t yv = ingot_graph_add_value(graph, ingot_graph_unique_name(graph, base), INGOT_VALUE_INTERMEDIATE);
  uint32_t pad_inputs[3] = {x, pv, value};
  base = ingot_arena_printf(&graph->arena, "%s_pad", name);
  uint32_t pad_node =
      ingot_graph_add_node(graph, INGOT_OP_PAD, base, pad_inputs, value != INGOT_NO_VALUE ? 3 : 2, &yv, 1);
  /* Ranged dims (graph/ranges.c): the node reads the padded entries up to
   * the input's size + margin + both pads. */
  for (int32_t d = 0; d < rank; ++d) {
    graph->values[yv].run_sym[d] = graph->values[x].run_sym[d];
    int64_t m = graph->values[x].run_margin[d] + (d >= 2 ? pads[d - 2] + pads[sp + d - 2] : 0);
    graph->values[yv].run_margin[d] = (uint16_t)(m < UINT16_MAX ? m : UINT16_MAX);
  }
  ingot_attr_t* mode = ingot_graph_node_add_attr(graph, pad_node, "mode", INGOT_ATTR_STRING);
  mode->s = "constant";
  /* The node array may have moved. */
  graph->nodes[i].inputs[0] = yv;
  int64_t zeros[6] = {0, 0, 0, 0, 0, 0};
  ingot_graph_node_set_ints(graph, i, "pads", zeros, (uint32_t)(2 * sp));
  ingot_attr_t* ap = ingot_graph_node_add_attr(graph, i, "auto_pad", INGOT_ATTR_STRING);
  ap->s = "NOTSET";
}

/* The pads of a node in canonical form (auto_pad NOTSET, 2*sp entries,
 * some non-zero, none negative or huge); NULL otherwise. */
static const int64_t* canonical_pads(const ingot_node_t* node, int32_t sp) {
  const char* auto_pad = ingot_node_attr_string(node, "auto_pad", "NOTSET");
  if (strcmp(auto_pad, "NOTSET") != 0 && auto_pad[0] != '\0') return NULL; /* not canonical: leave it */
  uint32_t pad_count = 0;
  const int64_t* pads = ingot_node_attr_ints(node, "pads", &pad_count);
  if (!pads || pad_count != (uint32_t)(2 * sp)) return NULL;
  bool any = false;
  for (int32_t k = 0; k < 2 * sp; ++k) {
    if (pads[k] < 0 || pads[k] > ((int64_t)1 << 20)) return NULL;
    if (pads[k] != 0) any = true;
  }
  return any ? pads : NULL;
}

/* A MaxPool over integer bytes (a quantized model's, ingot_graph_fuse_qdq)
 * reads a Pad of the dtype's lowest value, which no window's maximum can
 * exceed, so its loads need no select and stay affine (a stride-2 window
 * then loads whole vectors and deinterleaves them instead of gathering
 * the first vector of every row). Not with ceil_mode (the windows past the
 * end would see the pad value where ONNX skips them, harmless for the
 * lowest value but the shapes would differ), nor for ranged dims. */
static void pad_maxpool_input(ingot_graph_t* graph, uint32_t i) {
  const ingot_node_t* pool = &graph->nodes[i];
  if (pool->input_count != 1 || pool->output_count != 1 || pool->inputs[0] == INGOT_NO_VALUE) return;
  if (ingot_node_attr_int(pool, "ceil_mode", 0) != 0 || ingot_node_attr_int(pool, "storage_order", 0) != 0) return;
  const ingot_value_t* xv = &graph->values[pool->inputs[0]];
  if (xv->rank != 4 || (xv->dtype != INGOT_DTYPE_U8 && xv->dtype != INGOT_DTYPE_I8)) return;
  for (int32_t d = 0; d < xv->rank; ++d)
    if (xv->run_sym[d]) return;
  const int64_t* pads = canonical_pads(pool, 2);
  if (!pads || !pad_size_ok(xv, pads, 2)) return;
  uint32_t value = INGOT_NO_VALUE; /* 0: uint8's lowest */
  if (xv->dtype == INGOT_DTYPE_I8) {
    char* base = ingot_arena_printf(&graph->arena, "%s_pad_value", pool->name);
    value = ingot_graph_add_value(graph, ingot_graph_unique_name(graph, base), INGOT_VALUE_WEIGHT);
    int8_t* lowest = ingot_xmalloc(1);
    *lowest = INT8_MIN;
    ingot_graph_set_weight(graph, value, INGOT_DTYPE_I8, 0, NULL, lowest);
  }
  insert_pad(graph, i, pads, 2, value);
}

ingot_status_t ingot_graph_pad_conv_inputs(ingot_graph_t* graph) {
  uint32_t node_count = graph->node_count; /* new Pad nodes are not visited */
  for (uint32_t i = 0; i < node_count; ++i) {
    ingot_node_t* conv = &graph->nodes[i];
    if (!conv->dead && conv->op == INGOT_OP_MAXPOOL) {
      pad_maxpool_input(graph, i);
      continue;
    }
    bool integer = conv->op == INGOT_OP_CONVINTEGER || conv->op == INGOT_OP_QLINEARCONV;
    if (conv->dead || (conv->op != INGOT_OP_CONV && !integer) || conv->input_count < 2 || conv->output_count != 1) {
      continue;
    }
    uint32_t x = conv->inputs[0];
    /* ConvInteger and QLinearConv pad with x's zero point (input 2; one
     * element), which contributes 0 to the sums. */
    uint32_t zp = integer && conv->input_count > 2 ? conv->inputs[2] : INGOT_NO_VALUE;
    if (zp != INGOT_NO_VALUE && (zp >= graph->value_count || ingot_value_numel(&graph->values[zp]) != 1 ||
                                 graph->values[zp].rank > 1)) {
      continue;
    }
    if (x == INGOT_NO_VALUE || x >= graph->value_count) continue;
    const ingot_value_t* xv = &graph->values[x];
    if (xv->rank < 3 || xv->rank > 5 || xv->dtype == INGOT_DTYPE_INVALID) continue;
    int32_t sp = xv->rank - 2;
    const int64_t* pads = canonical_pads(conv, sp);
    if (!pads || !pad_size_ok(xv, pads, sp)) continue;
    insert_pad(graph, i, pads, sp, zp);
  }
  return INGOT_OK;
}

/* ---- packed weights ---- */

/* The default panel width for N output channels: 32 (two AVX-512 vectors
 * of float32, a register tile of 2 x rows accumulators) from 32 outputs on
 * (the last panel may be partial), else 16 or 8 when it divides N; 0
 * otherwise (not packed by default). */
static uint32_t weight_block_for(int64_t outputs) {
  if (outputs >= 32) return 32;
  if (outputs % 16 == 0) return 16;
  if (outputs % 8 == 0) return 8;
  return 0;
}

/* A 1x1 conv with a reduction (C) under this is not packed by default. */
#define PACK_CONV_MIN_REDUCTION 32
/* Nor is a windowed conv with a reduction (C x taps) under this: a packed
 * register tile stores each of its rows as one scalar per output channel
 * (NCHW planes), 16 a vector of AVX-512 float32 lanes, so below 4 x 16
 * steps those scattered stores outnumber a quarter of its FMAs. */
#define PACK_WINDOW_MIN_REDUCTION 64
/* A 1x1 conv lowers as a matrix product by default when its output
 * positions are a multiple of this (the float32 lanes of the widest
 * vectors, so that no vector needs a tail). */
#define POINTWISE_POSITION_MULTIPLE 16
/* Row reductions keep this many partial results by default. */
#define ROW_CHAINS_DEFAULT 8

/* The weight (input 1) of a Conv/MatMul/Gemm that packing may take, in its
 * ONNX layout: N outputs, R reduction steps, whether it is stored
 * output-major, and the conv's taps. False for any other node. */
static bool packable_weight(const ingot_graph_t* graph, const ingot_node_t* node, int64_t* out_n, int64_t* out_r,
                            bool* out_output_major, int64_t* out_taps) {
  if (node->dead || node->input_count < 2 || node->output_count != 1) return false;
  bool integer = node->op == INGOT_OP_CONVINTEGER || node->op == INGOT_OP_MATMULINTEGER;
  if (node->op != INGOT_OP_CONV && !integer && node->op != INGOT_OP_MATMUL && node->op != INGOT_OP_GEMM) return false;
  uint32_t w = node->inputs[1];
  if (w == INGOT_NO_VALUE || w >= graph->value_count) return false;
  ingot_value_t scratch;
  const ingot_value_t* wv = ingot_node_logical_input(node, 1, &graph->values[w], &scratch);
  if (!wv || wv->kind != INGOT_VALUE_WEIGHT || !wv->data || wv->is_output) return false;
  /* ConvInteger's and MatMulInteger's weights are uint8 or int8, the others' float32. */
  if (integer ? wv->dtype != INGOT_DTYPE_U8 && wv->dtype != INGOT_DTYPE_I8 : wv->dtype != INGOT_DTYPE_F32) return false;
  int64_t n, r_count = 1;
  bool output_major;
  if (node->op == INGOT_OP_CONV || node->op == INGOT_OP_CONVINTEGER) {
    if (ingot_node_attr_int(node, "group", 1) != 1 || wv->rank < 3 || wv->rank > 5) return false;
    n = wv->dims[0];
    for (int32_t d = 1; d < wv->rank; ++d) r_count *= wv->dims[d];
    output_major = true;
    *out_taps = wv->dims[1] ? r_count / wv->dims[1] : 1;
  } else {
    if (wv->rank != 2) return false;
    /* A packed Gemm has transB 0; its weight was output-major or not, the
     * panels are the same. */
    bool trans = node->op == INGOT_OP_GEMM && !node->weight_block && ingot_node_attr_int(node, "transB", 0) != 0;
    n = trans ? wv->dims[0] : wv->dims[1];
    r_count = trans ? wv->dims[1] : wv->dims[0];
    output_major = trans;
    *out_taps = 1;
  }
  if (n < 1 || r_count < 1) return false;
  *out_n = n;
  *out_r = r_count;
  *out_output_major = output_major;
  return true;
}

void ingot_node_layout_options(const ingot_graph_t* graph, const ingot_node_t* node,
                               ingot_node_layout_options_t* out) {
  memset(out, 0, sizeof(*out));
  out->defaults.chains = ROW_CHAINS_DEFAULT;
  int64_t n, r_count, taps;
  bool output_major;
  if (packable_weight(graph, node, &n, &r_count, &output_major, &taps)) {
    static const uint32_t k_panels[] = {8, 16, 32};
    for (size_t i = 0; i < sizeof(k_panels) / sizeof(k_panels[0]); ++i)
      if ((int64_t)k_panels[i] <= n) out->panels[out->panel_count++] = k_panels[i];
    uint32_t block = weight_block_for(n);
    out->defaults.panel = block ? block : (out->panel_count ? out->panels[0] : 0);
    /* A conv with a short reduction (C under 32; C x taps under 64 when it
     * has several taps) spends more time scattering its accumulators across
     * channels than accumulating; it keeps the ONNX layout and vectorizes
     * along the output row (a 1x1 conv from 16 channels). A windowed conv
     * from few channels (the 3x3 stem of an image, 27 steps) is not
     * packed either: on a Zen 4 core, `ingot run --bench 30` min of three,
     * 2026-12-01, MobileNetV2's stem (3x3/2, 3 -> 32 at 224) ran 0.26 ms
     * unpacked and 0.41 packed, SqueezeNet's (3 -> 64, no pads) 0.59 and
     * 0.73; with 144 steps (3x3, 16 -> 64 at 55) packing won (0.56 against
     * 0.81), with 147 (ResNet's 7x7/2 stem) the two tied. */
    bool short_reduction = (node->op == INGOT_OP_CONV || node->op == INGOT_OP_CONVINTEGER) &&
                           r_count < (taps > 1 ? PACK_WINDOW_MIN_REDUCTION : PACK_CONV_MIN_REDUCTION);
    out->defaults.pack = block != 0 && !short_reduction && out->panel_count > 0;
    out->dot4_short = node->op == INGOT_OP_CONVINTEGER && short_reduction && block != 0 && out->panel_count > 0;
    /* MatMulInteger has no plain packed form: dot4 words or none */
    if (node->op == INGOT_OP_MATMULINTEGER) {
      out->dot4_short = block != 0 && out->panel_count > 0;
      out->defaults.pack = false;
    }
  }
  if (node->op == INGOT_OP_CONV && node->output_count == 1 && node->outputs[0] != INGOT_NO_VALUE &&
      node->outputs[0] < graph->value_count && node->input_count >= 2 && node->inputs[1] != INGOT_NO_VALUE &&
      node->inputs[1] < graph->value_count) {
    const ingot_value_t* yv = &graph->values[node->outputs[0]];
    ingot_value_t scratch;
    const ingot_value_t* wv = ingot_node_logical_input(node, 1, &graph->values[node->inputs[1]], &scratch);
    bool pointwise = wv && yv->rank >= 3 && wv->rank == yv->rank && ingot_node_attr_int(node, "group", 1) == 1 &&
                     !node->epilogue.output_padded;
    int64_t positions = 1;
    for (int32_t d = 2; d < yv->rank; ++d) positions *= yv->dims[d];
    uint32_t count = 0;
    const int64_t* strides = pointwise ? ingot_node_attr_ints(node, "strides", &count) : NULL;
    for (uint32_t i = 0; strides && i < count; ++i) pointwise = pointwise && strides[i] == 1;
    const int64_t* pads = pointwise ? ingot_node_attr_ints(node, "pads", &count) : NULL;
    for (uint32_t i = 0; pads && i < count; ++i) pointwise = pointwise && pads[i] == 0;
    for (int32_t d = 2; pointwise && d < yv->rank; ++d) pointwise = wv->dims[d] == 1;
    out->pointwise = pointwise;
    /* Lowering checks the rest (a 1x1 window, stride 1, no pads). */
    out->defaults.pointwise_matmul = positions % POINTWISE_POSITION_MULTIPLE == 0;
  }
  if (node->op == INGOT_OP_SOFTMAX || node->op == INGOT_OP_LOGSOFTMAX || node->op == INGOT_OP_HARDMAX) {
    static const uint32_t k_chains[] = {1, 2, 4, 8, 16};
    for (size_t i = 0; i < sizeof(k_chains) / sizeof(k_chains[0]); ++i) out->chains[out->chain_count++] = k_chains[i];
  }
}

void ingot_node_layout_resolve(const ingot_graph_t* graph, const ingot_node_t* node, ingot_node_layout_t* out) {
  if (node->layout.chosen) {
    *out = node->layout;
    return;
  }
  ingot_node_layout_options_t options;
  ingot_node_layout_options(graph, node, &options);
  *out = options.defaults;
}

void ingot_graph_set_layout_chooser(ingot_graph_t* graph, ingot_layout_chooser_t* chooser) {
  if (graph) graph->layout_chooser = chooser;
}

/* Element (j, r) of an N x R weight (j an output channel, r a reduction
 * step), stored at src[j*R + r] (output-major) or src[r*N + j], goes to
 * panel j / B at [(j/B)*R + r]*B + j%B; the rest of a partial last panel is 0. */
/* Elements of `esize` bytes (float32; ConvInteger's uint8/int8). */
static void* pack_panels(const void* src, size_t esize, int64_t n, int64_t r_count, bool output_major, uint32_t block) {
  int64_t panels = (n + block - 1) / block;
  char* dst = ingot_xcalloc((size_t)(panels * block * r_count > 0 ? panels * block * r_count : 1), esize);
  const char* s = src;
  for (int64_t j = 0; j < n; ++j)
    for (int64_t r = 0; r < r_count; ++r)
      memcpy(dst + (size_t)(((j / block) * r_count + r) * block + j % block) * esize,
             s + (size_t)(output_major ? j * r_count + r : r * n + j) * esize, esize);
  return dst;
}

const ingot_value_t* ingot_node_logical_input(const ingot_node_t* node, uint32_t input, const ingot_value_t* value,
                                              ingot_value_t* scratch) {
  if (node->rnn_rows && (input == 1 || input == 2) && value) {
    if (value->rank != 3) return NULL;
    *scratch = *value;
    scratch->dims[1] = value->dims[2];
    scratch->dims[2] = value->dims[1];
    return scratch;
  }
  int64_t per = ingot_node_dot_channels(node);
  if (input == 0 && node->x_dot4_words && value) {
    int32_t g = node->words_last ? value->rank - 1 : 1; /* the words' axis */
    if (value->dtype != INGOT_DTYPE_I32 || value->rank < 3 ||
        value->dims[g] != (node->weight_dot4_channels + per - 1) / per)
      return NULL;
    *scratch = *value;
    for (int32_t d = value->rank - 1; node->words_last && d >= 2; --d) scratch->dims[d] = value->dims[d - 1];
    scratch->dims[1] = node->weight_dot4_channels;
    scratch->dtype = node->x_dot4_words == 2 ? INGOT_DTYPE_I8 : INGOT_DTYPE_U8;
    return scratch;
  }
  if (!node->weight_block || input != 1 || !value) return value;
  int64_t block = node->weight_block;
  if (value->rank < 3 || value->dims[value->rank - 1] != block) return NULL;
  *scratch = *value;
  int64_t outputs = node->weight_outputs;
  if (outputs <= (value->dims[0] - 1) * block || outputs > value->dims[0] * block) return NULL;
  if (node->op == INGOT_OP_CONV || node->op == INGOT_OP_CONVINTEGER) {
    scratch->rank = value->rank - 1;
    scratch->dims[0] = outputs;
    if (node->weight_dot4_channels) {
      /* int32 words of 4 (or 2) channels (+ the sums) for the int8 w' */
      int64_t c = node->weight_dot4_channels;
      if (node->op != INGOT_OP_CONVINTEGER || value->dtype != INGOT_DTYPE_I32 || value->dims[1] != (c + per - 1) / per + 1)
        return NULL;
      scratch->dims[1] = c;
      scratch->dtype = INGOT_DTYPE_I8;
    }
    return scratch;
  }
  if (node->op == INGOT_OP_MATMULINTEGER && node->weight_dot4_channels && value->rank == 3) {
    /* [P, G + 1, B] int32 words for the int8 w' [K, N] */
    int64_t k = node->weight_dot4_channels;
    if (value->dtype != INGOT_DTYPE_I32 || value->dims[1] != (k + 3) / 4 + 1) return NULL;
    scratch->rank = 2;
    scratch->dims[0] = k;
    scratch->dims[1] = outputs;
    scratch->dtype = INGOT_DTYPE_I8;
    return scratch;
  }
  if ((node->op == INGOT_OP_MATMUL || node->op == INGOT_OP_GEMM) && value->rank == 3) {
    scratch->rank = 2;
    scratch->dims[0] = value->dims[1];
    scratch->dims[1] = outputs;
    return scratch;
  }
  return NULL;
}

/* The constant w_zero_point of ConvInteger `node` (input 3) for output k:
 * *out_ok false when it is given but not a constant of 1 or N values. */
static int64_t conv_weight_zero(const ingot_graph_t* graph, const ingot_node_t* node, int64_t k, int64_t n,
                                bool* out_ok) {
  uint32_t z = node->input_count > 3 ? node->inputs[3] : INGOT_NO_VALUE;
  if (z == INGOT_NO_VALUE) return 0;
  const ingot_value_t* zv = z < graph->value_count ? &graph->values[z] : NULL;
  int64_t count = zv ? ingot_value_numel(zv) : 0;
  if (!zv || zv->kind != INGOT_VALUE_WEIGHT || !zv->data || (count != 1 && count != n) ||
      (zv->dtype != INGOT_DTYPE_U8 && zv->dtype != INGOT_DTYPE_I8)) {
    *out_ok = false;
    return 0;
  }
  int64_t i = count == 1 ? 0 : k;
  return zv->dtype == INGOT_DTYPE_U8 ? ((const uint8_t*)zv->data)[i] : ((const int8_t*)zv->data)[i];
}

/* ConvInteger's weight `w` ([N, C, taps..] uint8/int8, ONNX layout) as the
 * dot4 words of node.weight_dot4_channels in panels of `block`, `per` (4
 * or 2, layout.dot_pairs) channels a word; NULL when w - w_zero_point does
 * not fit int8 everywhere, or the zero point is not a constant (the plain
 * packed form is used then). */
static int32_t* pack_dot4(const ingot_graph_t* graph, const ingot_node_t* node, const ingot_value_t* wv,
                          int64_t n, int64_t taps, uint32_t block, int64_t per) {
  /* Only once its padding is a Pad node's (ingot_graph_pad_conv_inputs,
   * which leaves the largest inputs alone): every tap is inside x. */
  uint32_t pad_count = 0;
  const int64_t* pads = ingot_node_attr_ints(node, "pads", &pad_count);
  for (uint32_t i = 0; pads && i < pad_count; ++i)
    if (pads[i] != 0) return NULL;
  if (strcmp(ingot_node_attr_string(node, "auto_pad", "NOTSET"), "NOTSET") != 0) return NULL;
  int64_t c = wv->dims[1], groups = (c + per - 1) / per, panels = (n + block - 1) / block;
  unsigned bits = per == 2 ? 16 : 8;
  uint32_t field = per == 2 ? 0xffffu : 0xffu;
  bool ok = true;
  int32_t* dst = ingot_xcalloc((size_t)(panels * (groups + 1) * taps * block), sizeof(int32_t));
  for (int64_t k = 0; k < n && ok; ++k) {
    int64_t zw = conv_weight_zero(graph, node, k, n, &ok);
    int32_t sum = 0;
    for (int64_t ch = 0; ch < c && ok; ++ch) {
      for (int64_t t = 0; t < taps; ++t) {
        int64_t src = (k * c + ch) * taps + t;
        int64_t v = (wv->dtype == INGOT_DTYPE_U8 ? ((const uint8_t*)wv->data)[src] : ((const int8_t*)wv->data)[src]) - zw;
        if (v < -128 || v > 127) {
          ok = false;
          break;
        }
        sum += (int32_t)v;
        size_t at = (size_t)((((k / block) * (groups + 1) + ch / per) * taps + t) * block + k % block);
        dst[at] = (int32_t)((uint32_t)dst[at] | (((uint32_t)(int32_t)v & field) << (bits * (ch % per))));
      }
    }
    dst[(((k / block) * (groups + 1) + groups) * taps) * block + k % block] = sum;
  }
  if (!ok) {
    free(dst);
    return NULL;
  }
  return dst;
}

/* Whether every two neighbouring reduction rows (2i, 2i + 1: the byte
 * pairs of a dot4 word) of a constant integer weight satisfy |w'0| + |w'1|
 * <= 128 for each of its n outputs and `taps` taps, so that 255 (|w'0| +
 * |w'1|) fits int16 (node.dot_sat16); w' = w - the zero point of output k.
 * Element (k, row r, tap t) lies at k * k_stride + r * r_stride + t:
 * ConvInteger's [N, C, taps..] and MatMulInteger's [K, N] alike. */
static bool pairs_fit_int16(const ingot_graph_t* graph, const ingot_node_t* node, const ingot_value_t* wv, int64_t n,
                            int64_t rows, int64_t taps, int64_t k_stride, int64_t r_stride) {
  bool ok = true;
  for (int64_t k = 0; k < n && ok; ++k) {
    int64_t zero = conv_weight_zero(graph, node, k, n, &ok);
    for (int64_t r = 0; r < rows && ok; r += 2) {
      for (int64_t t = 0; t < taps && ok; ++t) {
        int64_t sum = 0;
        for (int64_t j = r; j < r + 2 && j < rows; ++j) {
          size_t src = (size_t)(k * k_stride + j * r_stride + t);
          int64_t v = (wv->dtype == INGOT_DTYPE_U8 ? (int64_t)((const uint8_t*)wv->data)[src]
                                                  : (int64_t)((const int8_t*)wv->data)[src]) - zero;
          sum += v < 0 ? -v : v;
        }
        ok = sum <= 128;
      }
    }
  }
  return ok;
}

/* MatMulInteger's weight `w` ([K, N] uint8/int8) as dot4 words in panels
 * of `block` columns: [P, G + 1, B] int32, G = ceil(K / 4), word (p, g, i)
 * the bytes of w'[4g + j, p*B + i] (j = 0..3, 0 past K), w' = w -
 * b_zero_point[n] as int8, and group G the column sums of w'; NULL where
 * w' does not fit int8 or the zero point is not a constant. */
static int32_t* pack_dot4_matmul(const ingot_graph_t* graph, const ingot_node_t* node, const ingot_value_t* wv,
                                 int64_t n, uint32_t block) {
  int64_t k_count = wv->dims[0], groups = (k_count + 3) / 4, panels = (n + block - 1) / block;
  int32_t* dst = ingot_xcalloc((size_t)(panels * (groups + 1) * block), sizeof(int32_t));
  bool ok = true;
  for (int64_t c = 0; c < n && ok; ++c) {
    int64_t zero = conv_weight_zero(graph, node, c, n, &ok);
    int32_t sum = 0;
    for (int64_t k = 0; k < k_count && ok; ++k) {
      size_t src = (size_t)(k * n + c);
      int64_t v = (wv->dtype == INGOT_DTYPE_U8 ? (int64_t)((const uint8_t*)wv->data)[src]
                                              : (int64_t)((const int8_t*)wv->data)[src]) - zero;
      if (v < -128 || v > 127) {
        ok = false;
        break;
      }
      sum += (int32_t)v;
      size_t at = (size_t)(((c / block) * (groups + 1) + k / 4) * block + c % block);
      dst[at] = (int32_t)((uint32_t)dst[at] | ((uint32_t)(uint8_t)(int8_t)v << (8 * (k % 4))));
    }
    dst[((c / block) * (groups + 1) + groups) * block + c % block] = sum;
  }
  if (!ok) {
    free(dst);
    return NULL;
  }
  return dst;
}

/* Whether dot4 ConvInteger `node` (weights packed, dot_pairs and dot_sat16
 * set) takes words of the last axis (node.words_last): a 2-D 1x1 conv
 * without padding on a target without VNNI (dot2 or dot4s) whose output row
 * is narrower than the lowering's row form needs, so that it runs in the
 * channel form. Each step of its reduction then reads the next word of the
 * tile's few positions (contiguous) instead of a word from another channel
 * plane (a new cache line every step). On a Zen 3 core (AVX2, QDQ ResNet-50,
 * per-step minima of `ingot run --trace`, 2026-12-04): see README "Quantized
 * graphs". With VNNI the planar words stay (not measured there). */
static bool words_last_for(const ingot_graph_t* graph, const ingot_node_t* node) {
  if (!node->dot_pairs && !node->dot_sat16) return false;
  if (node->params.kind != INGOT_PARAMS_CONV || node->output_count < 1) return false;
  const ingot_window_params_t* win = &node->params.u.conv.window;
  if (win->spatial != 2 || node->params.u.conv.group != 1) return false;
  for (int32_t i = 0; i < win->spatial; ++i)
    if (win->kernel[i] != 1 || win->pads[i] || win->pads[win->spatial + i] || win->dilations[i] != 1) return false;
  /* the input's row too: a strided conv from a wide map would need words
   * of every position, most of them never read */
  const ingot_value_t* xv = &graph->values[node->inputs[0]];
  return win->out[win->spatial - 1] < INGOT_DOT2_ROW_MIN_WIDTH && xv->rank == 4 &&
         xv->dims[3] < INGOT_DOT2_ROW_MIN_WIDTH;
}

/* Feeds dot4 ConvInteger `i` the int32 words of its uint8/int8 input (an
 * ai.ingot Dot4Words node, node.x_dot4_words), one int32 load a dot4 in the
 * kernel instead of four bytes from four channel planes. `made` maps an x
 * to the words value already made for it (one Dot4Words per x and layout). */
static void feed_dot4_words(ingot_graph_t* graph, uint32_t i, uint32_t* made) {
  uint32_t x = graph->nodes[i].inputs[0];
  const ingot_value_t* xv = &graph->values[x];
  if ((xv->dtype != INGOT_DTYPE_U8 && xv->dtype != INGOT_DTYPE_I8) || xv->rank < 3 ||
      xv->dims[1] != graph->nodes[i].weight_dot4_channels) {
    return;
  }
  uint8_t kind = xv->dtype == INGOT_DTYPE_I8 ? 2 : 1;
  bool pairs = graph->nodes[i].dot_pairs;
  bool last = words_last_for(graph, &graph->nodes[i]);
  int64_t per = pairs ? 2 : 4;
  /* patches made for this conv alone (im2col_narrow_convs): their Im2Col
   * writes the words itself, planar; a 1-D conv's through the Reshape that
   * drops their H = 1, whose shape becomes the words' */
  uint32_t producer = xv->producer;
  uint32_t reshape = INGOT_NO_VALUE;
  if (producer != INGOT_NO_VALUE && graph->nodes[producer].op == INGOT_OP_RESHAPE && !xv->is_output &&
      graph->nodes[producer].input_count == 2) {
    const ingot_value_t* pv = &graph->values[graph->nodes[producer].inputs[0]];
    const ingot_value_t* sv = &graph->values[graph->nodes[producer].inputs[1]];
    if (pv->producer != INGOT_NO_VALUE && graph->nodes[pv->producer].op == INGOT_OP_IM2COL && !pv->is_output &&
        sv->kind == INGOT_VALUE_WEIGHT && sv->data && sv->dtype == INGOT_DTYPE_I64 && ingot_value_numel(sv) == xv->rank) {
      reshape = producer;
      producer = pv->producer;
    }
  }
  if (producer != INGOT_NO_VALUE && graph->nodes[producer].op == INGOT_OP_IM2COL &&
      !graph->nodes[producer].x_dot4_words && (reshape != INGOT_NO_VALUE || !xv->is_output)) {
    ingot_node_t* im = &graph->nodes[producer];
    im->x_dot4_words = kind;
    im->dot_pairs = pairs;
    ingot_value_t* pv = &graph->values[im->outputs[0]];
    pv->dtype = INGOT_DTYPE_I32;
    pv->dims[1] = (pv->dims[1] + per - 1) / per;
    if (reshape != INGOT_NO_VALUE) {
      ingot_value_t* rv = &graph->values[x];
      rv->dtype = INGOT_DTYPE_I32;
      rv->dims[1] = pv->dims[1];
      ((int64_t*)graph->values[graph->nodes[reshape].inputs[1]].data)[1] = pv->dims[1];
    }
    graph->nodes[i].x_dot4_words = kind;
    graph->nodes[i].words_last = false;
    return;
  }
  /* made[2x] planar words of x, made[2x + 1] words of the last axis */
  uint32_t v = made[2 * (size_t)x + last];
  /* words of the other width: a node of their own */
  if (v != INGOT_NO_VALUE && graph->nodes[graph->values[v].producer].dot_pairs != pairs) v = INGOT_NO_VALUE;
  if (v == INGOT_NO_VALUE) {
    char* base = ingot_arena_printf(&graph->arena, pairs ? "%s_dot2words" : "%s_dot4words", xv->name);
    v = ingot_graph_add_value(graph, ingot_graph_unique_name(graph, base), INGOT_VALUE_INTERMEDIATE);
    xv = &graph->values[x];
    ingot_value_t* vv = &graph->values[v];
    vv->dtype = INGOT_DTYPE_I32;
    vv->rank = xv->rank;
    int64_t groups = (xv->dims[1] + per - 1) / per;
    vv->dims[0] = xv->dims[0];
    for (int32_t d = 2; d < xv->rank; ++d) vv->dims[last ? d - 1 : d] = xv->dims[d];
    vv->dims[last ? xv->rank - 1 : 1] = groups;
    uint32_t n = ingot_graph_add_node(graph, INGOT_OP_DOT4_WORDS,
                                      ingot_graph_unique_name(graph, vv->name), &x, 1, &v, 1);
    graph->nodes[n].dot_pairs = pairs;
    graph->nodes[n].words_last = last;
    /* a guarded conv's words are made under the same guard */
    graph->nodes[n].guard = graph->nodes[i].guard;
    graph->nodes[n].guard_when = graph->nodes[i].guard_when;
    made[2 * (size_t)x + last] = v;
  } else if (graph->nodes[graph->values[v].producer].guard != graph->nodes[i].guard) {
    graph->nodes[graph->values[v].producer].guard = 0; /* needed on more than one path */
  }
  graph->nodes[i].inputs[0] = v;
  graph->nodes[i].x_dot4_words = kind;
  graph->nodes[i].words_last = last;
}

/* A windowed dot4 ConvInteger from under 4 input channels (an image's 3:
 * the 7x7/2 stem of ResNet, the 3x3/2 of MobileNetV2) wastes a word's
 * slots at every tap (49 words of 3 bytes for 147 products); over its
 * patches (ai.ingot Im2Col, channels (c, rh, rw)) it is a 1x1 conv from
 * C*KH*KW channels whose words are full but the last (37 words). Taken
 * where the padding is already outside (ingot_graph_pad_conv_inputs) and
 * every target of the bundle has dot4 words (graph->dot4_words). The price
 * is the patches' bytes, C*KH*KW per output position, in the memory plan.
 * *any: whether it rewrote a node (appended nodes: sort again). */
/* A Reshape of `v` to `dims` (rank dims): the new value's id. */
static uint32_t add_reshape(ingot_graph_t* graph, uint32_t v, int32_t rank, const int64_t* dims, const char* suffix) {
  int64_t* shape = ingot_xmalloc(sizeof(int64_t) * (size_t)rank);
  memcpy(shape, dims, sizeof(int64_t) * (size_t)rank);
  char* base = ingot_arena_printf(&graph->arena, "%s_%s_shape", graph->values[v].name, suffix);
  uint32_t sv = ingot_graph_add_value(graph, ingot_graph_unique_name(graph, base), INGOT_VALUE_WEIGHT);
  int64_t n = rank;
  ingot_graph_set_weight(graph, sv, INGOT_DTYPE_I64, 1, &n, shape);
  base = ingot_arena_printf(&graph->arena, "%s_%s", graph->values[v].name, suffix);
  uint32_t mv = ingot_graph_add_value(graph, ingot_graph_unique_name(graph, base), INGOT_VALUE_INTERMEDIATE);
  ingot_value_t* m = &graph->values[mv];
  m->dtype = graph->values[v].dtype;
  m->rank = rank;
  for (int32_t d = 0; d < rank; ++d) m->dims[d] = dims[d];
  uint32_t in[2] = {v, sv};
  ingot_graph_add_node(graph, INGOT_OP_RESHAPE, graph->values[mv].name, in, 2, &mv, 1);
  return mv;
}

static ingot_status_t im2col_narrow_convs(ingot_graph_t* graph, bool* any) {
  *any = false;
  uint32_t node_count = graph->node_count;
  for (uint32_t i = 0; i < node_count; ++i) {
    ingot_node_t* node = &graph->nodes[i];
    if (node->dead || node->op != INGOT_OP_CONVINTEGER || node->weight_block || node->input_count < 2 ||
        node->output_count != 1 || node->params.kind != INGOT_PARAMS_CONV || node->params.u.conv.group != 1 ||
        node->epilogue.requant_input || node->epilogue.output_padded)
      continue;
    const ingot_window_params_t* win = &node->params.u.conv.window;
    uint32_t x = node->inputs[0], w = node->inputs[1];
    /* sp: 2, or 1 (a 1-D conv: its patches are made as those of the 2-D
     * conv with H = 1, reshaped around the Im2Col) */
    int32_t sp = win->spatial;
    if ((sp != 1 && sp != 2) || x == INGOT_NO_VALUE || w == INGOT_NO_VALUE) continue;
    const ingot_value_t* xv = &graph->values[x];
    const ingot_value_t* wv = &graph->values[w];
    if (xv->rank != 2 + sp || (xv->dtype != INGOT_DTYPE_U8 && xv->dtype != INGOT_DTYPE_I8) || xv->dims[1] >= 4 ||
        wv->kind != INGOT_VALUE_WEIGHT || !wv->data || wv->is_output || wv->rank != 2 + sp || wv->dims[1] != xv->dims[1] ||
        (wv->dtype != INGOT_DTYPE_U8 && wv->dtype != INGOT_DTYPE_I8))
      continue;
    int64_t taps = 1;
    for (int32_t d = 0; d < sp; ++d) taps *= win->kernel[d];
    bool plain = taps > 1;
    for (int d = 0; d < 2 * sp && plain; ++d) plain = win->pads[d] == 0;
    const char* auto_pad = ingot_node_attr_string(node, "auto_pad", "NOTSET");
    if (!plain || (strcmp(auto_pad, "NOTSET") != 0 && strcmp(auto_pad, "VALID") != 0)) continue;
    int64_t kernel[2] = {1, 1}, strides[2] = {1, 1}, dil[2] = {1, 1};
    for (int32_t d = 0; d < sp; ++d) {
      kernel[2 - sp + d] = win->kernel[d];
      strides[2 - sp + d] = win->strides[d];
      dil[2 - sp + d] = win->dilations[d];
    }
    uint32_t x2 = x;
    if (sp == 1) {
      int64_t d4[4] = {xv->dims[0], xv->dims[1], 1, xv->dims[2]};
      x2 = add_reshape(graph, x, 4, d4, "rows");
      if (ingot_graph_infer_node(graph, graph->values[x2].producer) != INGOT_OK) continue;
    }
    /* the patches */
    uint32_t cols = ingot_graph_add_value(
        graph, ingot_graph_unique_name(graph, ingot_arena_printf(&graph->arena, "%s_patches", graph->values[x].name)),
        INGOT_VALUE_INTERMEDIATE);
    uint32_t m = ingot_graph_add_node(graph, INGOT_OP_IM2COL, graph->values[cols].name, &x2, 1, &cols, 1);
    ingot_graph_node_set_ints(graph, m, "kernel_shape", kernel, 2);
    ingot_graph_node_set_ints(graph, m, "strides", strides, 2);
    ingot_graph_node_set_ints(graph, m, "dilations", dil, 2);
    graph->nodes[m].guard = graph->nodes[i].guard;
    graph->nodes[m].guard_when = graph->nodes[i].guard_when;
    if (ingot_graph_infer_node(graph, m) != INGOT_OK) {
      graph->nodes[m].dead = true;
      continue;
    }
    if (sp == 1) {
      const ingot_value_t* cv = &graph->values[cols];
      int64_t d3[3] = {cv->dims[0], cv->dims[1], cv->dims[3]};
      cols = add_reshape(graph, cols, 3, d3, "row");
      if (ingot_graph_infer_node(graph, graph->values[cols].producer) != INGOT_OK) return INGOT_ERROR_INTERNAL;
    }
    /* the weight [K, C, k..] is [K, C*taps, 1..] as it is */
    wv = &graph->values[w];
    size_t bytes = (size_t)ingot_value_numel(wv);
    void* data = ingot_xmalloc(bytes ? bytes : 1);
    memcpy(data, wv->data, bytes);
    int64_t wdims[4] = {wv->dims[0], wv->dims[1] * taps, 1, 1};
    ingot_dtype_t wt = wv->dtype;
    uint32_t w2 = ingot_graph_add_value(
        graph, ingot_graph_unique_name(graph, ingot_arena_printf(&graph->arena, "%s_patches", wv->name)),
        INGOT_VALUE_WEIGHT);
    ingot_graph_set_weight(graph, w2, wt, 2 + sp, wdims, data);
    static const int64_t ones[2] = {1, 1}, zeros[4] = {0, 0, 0, 0};
    graph->nodes[i].inputs[0] = cols;
    graph->nodes[i].inputs[1] = w2;
    ingot_graph_node_set_ints(graph, i, "kernel_shape", ones, (uint32_t)sp);
    ingot_graph_node_set_ints(graph, i, "strides", ones, (uint32_t)sp);
    ingot_graph_node_set_ints(graph, i, "dilations", ones, (uint32_t)sp);
    ingot_graph_node_set_ints(graph, i, "pads", zeros, 2 * (uint32_t)sp);
    graph->nodes[i].layout.chosen = false;
    ingot_status_t st = ingot_graph_infer_node(graph, i);
    if (st != INGOT_OK) return st;
    *any = true;
  }
  return INGOT_OK;
}

/* DynamicQuantizeLSTM `i`'s W and R, [D, cols, 4H] bytes, re-laid
 * [D, 4H, cols] when both are constants (node.rnn_rows). */
static void rnn_weight_rows(ingot_graph_t* graph, uint32_t i) {
  ingot_node_t* node = &graph->nodes[i];
  if (node->rnn_rows || node->input_count < 3) return;
  for (uint32_t k = 1; k <= 2; ++k) {
    const ingot_value_t* v = &graph->values[node->inputs[k]];
    if (v->kind != INGOT_VALUE_WEIGHT || !v->data || v->rank != 3 || ingot_graph_dtype_size(v->dtype) != 1) return;
  }
  uint32_t made[2];
  for (uint32_t k = 1; k <= 2; ++k) {
    const ingot_value_t* v = &graph->values[graph->nodes[i].inputs[k]];
    int64_t d_count = v->dims[0], cols = v->dims[1], rows = v->dims[2];
    const uint8_t* src = v->data;
    uint8_t* dst = ingot_xmalloc((size_t)(d_count * cols * rows));
    for (int64_t d = 0; d < d_count; ++d)
      for (int64_t c = 0; c < cols; ++c)
        for (int64_t g = 0; g < rows; ++g) dst[(d * rows + g) * cols + c] = src[(d * cols + c) * rows + g];
    int64_t dims[3] = {d_count, rows, cols};
    ingot_dtype_t dtype = v->dtype;
    char* base = ingot_arena_printf(&graph->arena, "%s_rows", v->name);
    made[k - 1] = ingot_graph_add_value(graph, ingot_graph_unique_name(graph, base), INGOT_VALUE_WEIGHT);
    ingot_graph_set_weight(graph, made[k - 1], dtype, 3, dims, dst);
  }
  /* The value array may have moved. */
  node = &graph->nodes[i];
  node->inputs[1] = made[0];
  node->inputs[2] = made[1];
  node->rnn_rows = true;
}

ingot_status_t ingot_graph_pack_weights(ingot_graph_t* graph) {
  bool patches = false;
  for (uint32_t i = 0; i < graph->node_count; ++i)
    if (!graph->nodes[i].dead && graph->nodes[i].op == INGOT_OP_DYNAMICQUANTIZELSTM) rnn_weight_rows(graph, i);
  if (graph->dot4_words) {
    ingot_status_t st = im2col_narrow_convs(graph, &patches);
    if (st != INGOT_OK) return st;
  }
  uint32_t node_count = graph->node_count;
  /* Every node with choices gets its layout from the chooser, if any. */
  for (uint32_t i = 0; graph->layout_chooser && i < node_count; ++i) {
    ingot_node_t* node = &graph->nodes[i];
    if (node->dead || node->layout.chosen) continue;
    ingot_node_layout_options_t options;
    ingot_node_layout_options(graph, node, &options);
    if (!options.panel_count && !options.pointwise && !options.chain_count) continue;
    ingot_node_layout_t layout = options.defaults;
    ingot_status_t s = graph->layout_chooser->choose(graph->layout_chooser, graph, i, &options, &layout);
    if (s != INGOT_OK) return s;
    layout.chosen = true;
    graph->nodes[i].layout = layout;
  }
  uint32_t value_count = graph->value_count;
  uint32_t* words_of = ingot_xmalloc(sizeof(uint32_t) * 2 * (value_count ? value_count : 1));
  for (uint32_t v = 0; v < 2 * value_count; ++v) words_of[v] = INGOT_NO_VALUE;
  bool any_words = false;
  for (uint32_t i = 0; i < node_count; ++i) {
    ingot_node_t* node = &graph->nodes[i];
    if (node->weight_block) continue;
    int64_t n, r_count, taps;
    bool output_major;
    if (!packable_weight(graph, node, &n, &r_count, &output_major, &taps)) continue;
    ingot_node_layout_t layout;
    ingot_node_layout_resolve(graph, node, &layout);
    if (!layout.pack || layout.panel < 2) continue;
    uint32_t block = layout.panel;
    uint32_t w = node->inputs[1];
    const ingot_value_t* wv = &graph->values[w];
    /* ConvInteger: the dot4 words where w - w_zero_point fits int8 (int8
     * weights with zero point 0, ORT's default; uint8 ones with 128). */
    bool pairs = node->op == INGOT_OP_CONVINTEGER && layout.dot4 && layout.dot_pairs;
    /* weights whose byte pairs cannot saturate pmaddubsw keep 4-byte words */
    bool sat16 = pairs && pairs_fit_int16(graph, node, wv, n, wv->dims[1], taps, wv->dims[1] * taps, taps);
    if (sat16) pairs = false;
    int64_t per = pairs ? 2 : 4;
    int32_t* dot4 =
        node->op == INGOT_OP_CONVINTEGER && layout.dot4 ? pack_dot4(graph, node, wv, n, taps, block, per) : NULL;
    if (node->op == INGOT_OP_MATMULINTEGER) {
      /* words only: A uint8 whose rows are whole words (read as int32),
       * a scalar a_zero_point */
      const ingot_value_t* av = &graph->values[node->inputs[0]];
      uint32_t az = node->input_count > 2 ? node->inputs[2] : INGOT_NO_VALUE;
      if (!layout.dot4 || av->dtype != INGOT_DTYPE_U8 || av->rank < 2 || av->dims[av->rank - 1] % 4 ||
          (az != INGOT_NO_VALUE && ingot_value_numel(&graph->values[az]) != 1)) {
        continue;
      }
      if (!(dot4 = pack_dot4_matmul(graph, node, wv, n, block))) continue;
      /* pmaddubsw where its pair sums cannot saturate (see pairs_fit_int16) */
      sat16 = layout.dot_pairs && pairs_fit_int16(graph, node, wv, n, wv->dims[0], 1, 1, n);
    }
    void* dst = dot4 ? (void*)dot4 : pack_panels(wv->data, ingot_graph_dtype_size(wv->dtype), n, r_count, output_major, block);
    int64_t channels = wv->dims[1];
    int64_t dims[INGOT_MAX_RANK];
    int32_t rank;
    if (node->op == INGOT_OP_CONV || node->op == INGOT_OP_CONVINTEGER) {
      rank = wv->rank + 1;
      dims[0] = (n + block - 1) / block;
      for (int32_t d = 1; d < wv->rank; ++d) dims[d] = wv->dims[d];
      if (dot4) dims[1] = (wv->dims[1] + per - 1) / per + 1;
    } else {
      rank = 3;
      dims[0] = (n + block - 1) / block;
      dims[1] = dot4 ? (r_count + 3) / 4 + 1 : r_count;
    }
    dims[rank - 1] = block;
    char* base = ingot_arena_printf(&graph->arena, !dot4 ? "%s_packed%u" : pairs ? "%s_dot2packed%u" : "%s_dot4packed%u",
                                    wv->name, block);
    uint32_t pv = ingot_graph_add_value(graph, ingot_graph_unique_name(graph, base), INGOT_VALUE_WEIGHT);
    ingot_graph_set_weight(graph, pv, dot4 ? INGOT_DTYPE_I32 : graph->values[w].dtype, rank, dims, dst);
    /* The value and node arrays may have moved. */
    node = &graph->nodes[i];
    node->inputs[1] = pv;
    node->weight_block = block;
    node->weight_outputs = n;
    node->weight_dot4_channels = dot4 ? (node->op == INGOT_OP_MATMULINTEGER ? r_count : channels) : 0;
    node->dot_pairs = dot4 && pairs;
    node->dot_sat16 = dot4 && sat16;
    if (dot4 && node->op == INGOT_OP_CONVINTEGER && graph->dot4_words && node->inputs[0] < value_count) {
      feed_dot4_words(graph, i, words_of);
      any_words = true;
      node = &graph->nodes[i];
    }
    if (node->op == INGOT_OP_GEMM) {
      ingot_attr_t* t = ingot_graph_node_add_attr(graph, i, "transB", INGOT_ATTR_INT);
      t->i = 0;
      if (node->params.kind == INGOT_PARAMS_GEMM) node->params.u.gemm.trans_b = false;
    }
  }
  free(words_of);
  /* the Dot4Words and Im2Col nodes were appended: before their convs again */
  return any_words || patches ? ingot_graph_sort(graph) : INGOT_OK;
}

/* ---- pads absorbed by their producer ---- */

ingot_status_t ingot_graph_pad_into_producers(ingot_graph_t* graph) {
  uint32_t* uses = ingot_graph_use_counts(graph);
  for (uint32_t i = 0; i < graph->node_count; ++i) {
    ingot_node_t* pad = &graph->nodes[i];
    if (pad->dead || pad->op != INGOT_OP_PAD || pad->input_count < 1 || pad->output_count != 1) continue;
    uint32_t x = pad->inputs[0], y = pad->outputs[0];
    if (x == INGOT_NO_VALUE || y == INGOT_NO_VALUE || uses[x] != 1) continue;
    const ingot_value_t* xv = &graph->values[x];
    if (xv->is_output || xv->producer == INGOT_NO_VALUE) continue;
    /* 2-D convs: [N, C, H, W], or blocked [N, C/B, H, W, B]; or the bytes
     * of a ConvInteger with a fused requantization (ingot_graph_fuse_requantize),
     * padded with the next conv's x zero point */
    ingot_node_t* conv = &graph->nodes[xv->producer];
    bool bytes = conv->op == INGOT_OP_CONVINTEGER && conv->epilogue.requant_input && xv->rank == 4 &&
                 (xv->dtype == INGOT_DTYPE_U8 || xv->dtype == INGOT_DTYPE_I8);
    if (!bytes && (xv->dtype != INGOT_DTYPE_F32 ||
                   conv->op != (xv->rank == 4 ? INGOT_OP_CONV : xv->rank == 5 ? INGOT_OP_CONV_BLOCKED : INGOT_OP_COUNT_)))
      continue;
    if (conv->dead || conv->epilogue.output_padded || conv->epilogue.residual_input ||
        conv->output_count != (bytes ? 2u : 1u) || conv->outputs[0] != x) {
      continue;
    }
    ingot_pad_params_t pp;
    if (ingot_graph_pad_params(graph, i, &pp) != INGOT_OK) {
      ingot_compiler_error_clear();
      continue;
    }
    double value = pp.value;
    if (bytes && pp.value_in != INGOT_NO_VALUE) {
      /* the constant's one element */
      const ingot_value_t* cv = &graph->values[pp.value_in];
      if (cv->kind != INGOT_VALUE_WEIGHT || !cv->data || ingot_value_numel(cv) != 1 || cv->dtype != xv->dtype) continue;
      value = xv->dtype == INGOT_DTYPE_U8 ? (double)*(const uint8_t*)cv->data : (double)*(const int8_t*)cv->data;
    } else if (pp.value_in != INGOT_NO_VALUE) {
      continue;
    }
    if (pp.mode != INGOT_PAD_CONSTANT || (!bytes && value != 0.0) || pp.rank != xv->rank) continue;
    int32_t sp = 2;
    bool ok = pp.begin[0] == 0 && pp.end[0] == 0 && pp.begin[1] == 0 && pp.end[1] == 0;
    for (int32_t d = 2; d < 4 && ok; ++d) ok = pp.begin[d] >= 0 && pp.end[d] >= 0 && pp.begin[d] + pp.end[d] > 0;
    if (xv->rank == 5) ok = ok && pp.begin[4] == 0 && pp.end[4] == 0; /* not the lanes */
    if (!ok) continue;
    for (int32_t d = 0; d < sp; ++d) {
      conv->epilogue.output_pads[d] = pp.begin[2 + d];
      conv->epilogue.output_pads[sp + d] = pp.end[2 + d];
    }
    conv->epilogue.output_padded = true;
    conv->epilogue.output_pad_value = value;
    conv->outputs[0] = y;
    graph->values[y].producer = xv->producer;
    graph->values[x].producer = INGOT_NO_VALUE;
    pad->dead = true;
    uses[x] = 0;
  }
  free(uses);
  return INGOT_OK;
}

/* ---- blocked activation layouts ---- */

void ingot_graph_set_activation_block(ingot_graph_t* graph, uint32_t block) {
  if (graph) graph->activation_block = block >= 2 && block <= 64 ? block : 0;
}

void ingot_graph_set_dot4_words(ingot_graph_t* graph, bool on) {
  if (graph) graph->dot4_words = on;
}

void ingot_graph_set_half_arith(ingot_graph_t* graph, bool on) {
  if (graph) graph->half_arith = on;
}

/* How a Conv joins a blocked region. */
typedef enum block_conv_t {
  BLOCK_CONV_NO = 0,
  BLOCK_CONV_PLAIN_IN,  /* group 1, NCHW input: the region's entry */
  BLOCK_CONV_BLOCKED_IN,
  BLOCK_CONV_DEPTHWISE, /* needs a blocked input */
} block_conv_t;

static bool value_f32_4d(const ingot_graph_t* graph, uint32_t v) {
  if (v == INGOT_NO_VALUE || v >= graph->value_count) return false;
  const ingot_value_t* val = &graph->values[v];
  if (val->dtype != INGOT_DTYPE_F32 || val->rank != 4) return false;
  for (int d = 0; d < 4; ++d)
    if (val->dims[d] < 1) return false;
  return true;
}

static bool same_dims(const ingot_value_t* a, const ingot_value_t* b) {
  if (a->rank != b->rank) return false;
  for (int32_t d = 0; d < a->rank; ++d)
    if (a->dims[d] != b->dims[d]) return false;
  return true;
}

/* Whether Conv `node` can be a ConvBlocked, given which values are blocked
 * (blocked[v] != INGOT_NO_VALUE). */
static block_conv_t block_conv_kind(const ingot_graph_t* graph, const ingot_node_t* node, const uint32_t* blocked) {
  if (node->op != INGOT_OP_CONV || node->output_count != 1 || node->input_count < 2 || node->weight_block) {
    return BLOCK_CONV_NO;
  }
  uint32_t x = node->inputs[0], w = node->inputs[1], y = node->outputs[0];
  if (!value_f32_4d(graph, x) || !value_f32_4d(graph, y) || !value_f32_4d(graph, w)) return BLOCK_CONV_NO;
  const ingot_value_t* wv = &graph->values[w];
  if (wv->kind != INGOT_VALUE_WEIGHT || !wv->data || wv->is_output) return BLOCK_CONV_NO;
  if (node->input_count > 2 && node->inputs[2] != INGOT_NO_VALUE) {
    const ingot_value_t* bv = &graph->values[node->inputs[2]];
    if (bv->kind != INGOT_VALUE_WEIGHT || !bv->data || bv->dtype != INGOT_DTYPE_F32 || bv->rank != 1) {
      return BLOCK_CONV_NO;
    }
  }
  const ingot_epilogue_t* ep = &node->epilogue;
  if (ep->output_padded || ep->bias_input || ep->scale != 0.0f) return BLOCK_CONV_NO;
  if (ep->residual_input) {
    uint32_t r = ep->residual_input == 3 && node->input_count > 3 ? node->inputs[3] : INGOT_NO_VALUE;
    if (r == INGOT_NO_VALUE || blocked[r] == INGOT_NO_VALUE || !same_dims(&graph->values[r], &graph->values[y])) {
      return BLOCK_CONV_NO;
    }
  }
  if (node->params.kind != INGOT_PARAMS_CONV) return BLOCK_CONV_NO;
  const ingot_conv_params_t* cp = &node->params.u.conv;
  if (cp->window.spatial != 2) return BLOCK_CONV_NO;
  for (int k = 0; k < 4; ++k)
    if (cp->window.pads[k] != 0) return BLOCK_CONV_NO;
  int64_t channels = graph->values[x].dims[1], outputs = wv->dims[0];
  if (cp->group == 1) return blocked[x] != INGOT_NO_VALUE ? BLOCK_CONV_BLOCKED_IN : BLOCK_CONV_PLAIN_IN;
  if (cp->group == channels && outputs == channels && wv->dims[1] == 1 && blocked[x] != INGOT_NO_VALUE) {
    return BLOCK_CONV_DEPTHWISE;
  }
  return BLOCK_CONV_NO;
}

/* Whether a lane-wise op maps finite values to finite ones (padding lanes,
 * zero or not, then never poison a conv that reads them with zero weights). */
static bool lane_wise_unary(ingot_op_t op) {
  switch (op) {
    case INGOT_OP_RELU: case INGOT_OP_CLIP: case INGOT_OP_LEAKYRELU: case INGOT_OP_SIGMOID: case INGOT_OP_TANH:
    case INGOT_OP_HARDSIGMOID: case INGOT_OP_HARDSWISH:
      return true;
    default:
      return false;
  }
}

static bool lane_wise_binary(ingot_op_t op) {
  return op == INGOT_OP_ADD || op == INGOT_OP_SUB || op == INGOT_OP_MUL || op == INGOT_OP_DIV || op == INGOT_OP_MAX ||
         op == INGOT_OP_MIN;
}

/* A constant float32 weight with one value per channel of a [N, C, H, W]
 * operand: [C, 1, 1] or [1, C, 1, 1] (C > 1). */
static bool channel_constant(const ingot_graph_t* graph, uint32_t v, int64_t channels) {
  if (v == INGOT_NO_VALUE || v >= graph->value_count) return false;
  const ingot_value_t* val = &graph->values[v];
  if (val->kind != INGOT_VALUE_WEIGHT || !val->data || val->dtype != INGOT_DTYPE_F32 || channels < 2) return false;
  if (val->rank == 3) return val->dims[0] == channels && val->dims[1] == 1 && val->dims[2] == 1;
  return val->rank == 4 && val->dims[0] == 1 && val->dims[1] == channels && val->dims[2] == 1 && val->dims[3] == 1;
}

/* An operand of a blocked binary op: a blocked tensor with y's batch and
 * channels whose spatial dims are y's or 1 (a squeeze-and-excitation scale
 * [N, C, 1, 1]), any float32 scalar (left as it is: it broadcasts over the
 * 5-D tensor too), or a constant per channel (re-laid [1, C/B, 1, 1, B]). */
static bool blocked_operand(const ingot_graph_t* graph, uint32_t v, const uint32_t* blocked, const ingot_value_t* yv,
                            bool* out_scalar) {
  *out_scalar = false;
  if (v == INGOT_NO_VALUE || v >= graph->value_count) return false;
  const ingot_value_t* val = &graph->values[v];
  if (val->dtype != INGOT_DTYPE_F32) return false;
  if (blocked[v] == INGOT_NO_VALUE) {
    *out_scalar = val->rank >= 0 && val->rank <= 4 && ingot_value_numel(val) == 1;
    return *out_scalar || channel_constant(graph, v, yv->dims[1]);
  }
  if (!value_f32_4d(graph, v) || val->dims[0] != yv->dims[0] || val->dims[1] != yv->dims[1]) return false;
  for (int d = 2; d < 4; ++d)
    if (val->dims[d] != yv->dims[d] && val->dims[d] != 1) return false;
  return true;
}

/* A Where that masks image positions (graph/ranges.c: a window along a
 * ranged dim): Where(cond, x, fill) with x blocked like y, cond a bool over
 * H and W alone ([H, 1], [H, W] or [W]; re-laid with a trailing 1 for the
 * lanes), and a scalar fill that keeps padding lanes finite (or no padding
 * lanes). */
static bool spatial_mask_ok(const ingot_graph_t* graph, const ingot_node_t* node, const uint32_t* blocked,
                            const ingot_value_t* yv, uint32_t b) {
  if (node->input_count != 3) return false;
  uint32_t cond = node->inputs[0], x = node->inputs[1], fill = node->inputs[2];
  if (cond >= graph->value_count || x >= graph->value_count || fill >= graph->value_count) return false;
  const ingot_value_t* cv = &graph->values[cond];
  const ingot_value_t* fv = &graph->values[fill];
  if (blocked[x] == INGOT_NO_VALUE || !same_dims(&graph->values[x], yv) || blocked[cond] != INGOT_NO_VALUE ||
      cv->dtype != INGOT_DTYPE_BOOL || cv->rank < 1 || cv->rank > 2)
    return false;
  for (int32_t d = 0; d < cv->rank; ++d)
    if (cv->dims[d] != 1 && cv->dims[d] != yv->dims[4 - cv->rank + d]) return false;
  if (fv->kind != INGOT_VALUE_WEIGHT || !fv->data || fv->dtype != INGOT_DTYPE_F32 || ingot_value_numel(fv) != 1)
    return false;
  float f = *(const float*)fv->data;
  return (f - f == 0.0f) || yv->dims[1] % b == 0; /* finite, or no padding lanes */
}

static bool scalar_or_absent(const ingot_graph_t* graph, uint32_t v) {
  return v == INGOT_NO_VALUE || (v < graph->value_count && ingot_value_numel(&graph->values[v]) == 1);
}

/* Whether non-conv node `node` keeps a blocked layout when its inputs are
 * blocked (the rewrite of block_node). */
static bool block_other_ok(const ingot_graph_t* graph, const ingot_node_t* node, const uint32_t* blocked, uint32_t b) {
  if (node->output_count != 1 || node->input_count < 1 || !value_f32_4d(graph, node->outputs[0])) return false;
  const ingot_epilogue_t none = {0};
  if (memcmp(&node->epilogue, &none, sizeof(none)) != 0) return false;
  uint32_t x = node->inputs[0];
  const ingot_value_t* yv = &graph->values[node->outputs[0]];
  if (node->op == INGOT_OP_WHERE) return spatial_mask_ok(graph, node, blocked, yv, b);
  bool x_blocked = value_f32_4d(graph, x) && blocked[x] != INGOT_NO_VALUE;
  if (!x_blocked && !lane_wise_binary(node->op)) return false; /* a binary op's blocked operand may be input 1 */
  if (lane_wise_unary(node->op)) {
    for (uint32_t k = 1; k < node->input_count; ++k)
      if (!scalar_or_absent(graph, node->inputs[k])) return false;
    return true;
  }
  if (lane_wise_binary(node->op)) {
    if (node->input_count != 2) return false;
    bool scalar0, scalar1;
    if (!blocked_operand(graph, node->inputs[0], blocked, yv, &scalar0) ||
        !blocked_operand(graph, node->inputs[1], blocked, yv, &scalar1)) {
      return false;
    }
    /* One operand is the whole output; padding lanes stay finite: a Div
     * only of a blocked tensor by a non-zero constant. */
    bool whole = (!scalar0 && same_dims(&graph->values[node->inputs[0]], yv)) ||
                 (!scalar1 && same_dims(&graph->values[node->inputs[1]], yv));
    if (node->op == INGOT_OP_DIV) {
      /* a divisor of constants, none zero (the padding lanes divide by 1) */
      const ingot_value_t* d = &graph->values[node->inputs[1]];
      if (blocked[node->inputs[1]] != INGOT_NO_VALUE || d->kind != INGOT_VALUE_WEIGHT || !d->data) return false;
      for (int64_t k = 0; k < ingot_value_numel(d); ++k)
        if (((const float*)d->data)[k] == 0.0f) return false;
    }
    return whole;
  }
  if (node->op == INGOT_OP_GLOBALAVERAGEPOOL || node->op == INGOT_OP_GLOBALMAXPOOL) return true;
  if (node->op == INGOT_OP_RESIZE) {
    /* Spatial axes only (scale 1 on N and C), opset 11's inputs with
     * constant scales or sizes, and a coordinate mode that maps the lanes
     * (scale 1) onto themselves, in every nearest and linear mode. */
    if (graph->opset > 0 && graph->opset < 11) return false;
    if (ingot_node_attr(node, "axes") || node->input_count < 3) return false;
    ingot_resize_params_t rp;
    if (ingot_graph_resize_params(graph, (uint32_t)(node - graph->nodes), &rp) != INGOT_OK) {
      ingot_compiler_error_clear();
      return false;
    }
    if (rp.rank != 4 || rp.in[0] != rp.out[0] || rp.in[1] != rp.out[1] || rp.mode == INGOT_RESIZE_CUBIC ||
        rp.coord == INGOT_RESIZE_TF_HALF_PIXEL_FOR_NN || rp.coord == INGOT_RESIZE_TF_CROP_AND_RESIZE) {
      return false;
    }
    for (uint32_t k = 1; k < node->input_count && k < 4; ++k) {
      uint32_t v = node->inputs[k];
      if (v == INGOT_NO_VALUE) continue;
      const ingot_value_t* val = &graph->values[v];
      int64_t numel = ingot_value_numel(val);
      if (numel == 0) continue;
      if (k == 1 || val->kind != INGOT_VALUE_WEIGHT || !val->data || numel != 4) return false; /* a roi */
      if (val->dtype != (k == 2 ? INGOT_DTYPE_F32 : INGOT_DTYPE_I64)) return false;
    }
    return true;
  }
  if (node->op == INGOT_OP_PAD) {
    if (node->input_count > 3 && node->inputs[3] != INGOT_NO_VALUE) return false; /* axes */
    if (node->input_count > 2 && node->inputs[2] != INGOT_NO_VALUE) return false; /* a constant_value input */
    ingot_pad_params_t pp;
    if (ingot_graph_pad_params(graph, (uint32_t)(node - graph->nodes), &pp) != INGOT_OK) {
      ingot_compiler_error_clear();
      return false;
    }
    if (pp.mode != INGOT_PAD_CONSTANT || pp.value != 0.0 || pp.rank != 4) return false;
    for (int d = 0; d < 4; ++d)
      if (pp.begin[d] < 0 || pp.end[d] < 0 || (d < 2 && (pp.begin[d] || pp.end[d]))) return false;
    return node->input_count < 2 || node->inputs[1] == INGOT_NO_VALUE ||
           graph->values[node->inputs[1]].kind == INGOT_VALUE_WEIGHT;
  }
  if (node->op == INGOT_OP_MAXPOOL || node->op == INGOT_OP_AVERAGEPOOL) {
    return node->params.kind == INGOT_PARAMS_POOL && node->params.u.pool.window.spatial == 2;
  }
  if (node->op == INGOT_OP_CONCAT) {
    int64_t axis = ingot_node_attr_int(node, "axis", 0);
    if (axis != 1 && axis != -3) return false;
    for (uint32_t k = 0; k < node->input_count; ++k) {
      uint32_t v = node->inputs[k];
      if (!value_f32_4d(graph, v) || blocked[v] == INGOT_NO_VALUE || graph->values[v].dims[1] % b != 0) return false;
    }
    return true;
  }
  return false;
}

/* The blocked twin of logical value v: [N, ceil(C/B), H, W, B]. */
static uint32_t add_blocked_value(ingot_graph_t* graph, uint32_t v, uint32_t b) {
  char* base = ingot_arena_printf(&graph->arena, "%s_nchw%uc", graph->values[v].name, b);
  uint32_t bv = ingot_graph_add_value(graph, ingot_graph_unique_name(graph, base), INGOT_VALUE_INTERMEDIATE);
  ingot_value_t* val = &graph->values[bv];
  const ingot_value_t* src = &graph->values[v];
  val->dtype = INGOT_DTYPE_F32;
  val->rank = 5;
  val->dims[0] = src->dims[0];
  val->dims[1] = (src->dims[1] + b - 1) / b;
  val->dims[2] = src->dims[2];
  for (int32_t d = 0; d < 4; ++d) { /* ranged dims (graph/ranges.c); the channels are not */
    val->run_sym[d] = d == 1 ? 0 : src->run_sym[d];
    val->run_margin[d] = d == 1 ? 0 : src->run_margin[d];
  }
  val->dims[3] = src->dims[3];
  val->dims[4] = b;
  return bv;
}

/* A new float32 weight named after `like`. */
static uint32_t add_f32_weight(ingot_graph_t* graph, uint32_t like, const char* suffix, int32_t rank,
                               const int64_t* dims, float* data) {
  char* base = ingot_arena_printf(&graph->arena, "%s_%s", graph->values[like].name, suffix);
  uint32_t v = ingot_graph_add_value(graph, ingot_graph_unique_name(graph, base), INGOT_VALUE_WEIGHT);
  ingot_graph_set_weight(graph, v, INGOT_DTYPE_F32, rank, dims, data);
  return v;
}

/* Constant v, one value per channel, as [1, C/B, 1, 1, B] (lanes past C
 * hold `pad`). */
static uint32_t add_blocked_channels(ingot_graph_t* graph, uint32_t v, int64_t channels, uint32_t b, float pad) {
  int64_t cb = (channels + b - 1) / b;
  float* data = ingot_xmalloc(sizeof(float) * (size_t)(cb * b));
  for (int64_t c = 0; c < cb * b; ++c) data[c] = c < channels ? ((const float*)graph->values[v].data)[c] : pad;
  int64_t dims[5] = {1, cb, 1, 1, b};
  return add_f32_weight(graph, v, ingot_arena_printf(&graph->arena, "nchw%uc", b), 5, dims, data);
}

/* Rewrites Conv node i as a ConvBlocked of `kind` (weights re-laid). */
static void block_conv(ingot_graph_t* graph, uint32_t i, block_conv_t kind, const uint32_t* blocked, uint32_t b) {
  ingot_node_t* node = &graph->nodes[i];
  const ingot_value_t* wv = &graph->values[node->inputs[1]];
  const float* w = wv->data;
  int64_t oc = wv->dims[0], cg = wv->dims[1], kh = wv->dims[2], kw = wv->dims[3];
  int64_t ocb = (oc + b - 1) / b, icb = (cg + b - 1) / b, taps = kh * kw;
  int64_t dims[6];
  int32_t rank;
  float* dst;
  if (kind == BLOCK_CONV_DEPTHWISE) {
    /* [OCb, KH, KW, B] from [OC, 1, KH, KW] */
    rank = 4;
    dims[0] = ocb, dims[1] = kh, dims[2] = kw, dims[3] = b;
    dst = ingot_xcalloc((size_t)(ocb * taps * b), sizeof(float));
    for (int64_t o = 0; o < oc; ++o)
      for (int64_t t = 0; t < taps; ++t) dst[((o / b) * taps + t) * b + o % b] = w[o * taps + t];
  } else if (kind == BLOCK_CONV_BLOCKED_IN) {
    /* [OCb, ICb, KH, KW, B (input lane), B (output lane)] from [OC, C, KH, KW] */
    rank = 6;
    dims[0] = ocb, dims[1] = icb, dims[2] = kh, dims[3] = kw, dims[4] = b, dims[5] = b;
    dst = ingot_xcalloc((size_t)(ocb * icb * taps * b * b), sizeof(float));
    for (int64_t o = 0; o < oc; ++o)
      for (int64_t c = 0; c < cg; ++c)
        for (int64_t t = 0; t < taps; ++t)
          dst[((((o / b) * icb + c / b) * taps + t) * b + c % b) * b + o % b] = w[(o * cg + c) * taps + t];
  } else {
    /* [OCb, C, KH, KW, B] from [OC, C, KH, KW] */
    rank = 5;
    dims[0] = ocb, dims[1] = cg, dims[2] = kh, dims[3] = kw, dims[4] = b;
    dst = ingot_xcalloc((size_t)(ocb * cg * taps * b), sizeof(float));
    for (int64_t o = 0; o < oc; ++o)
      for (int64_t r = 0; r < cg * taps; ++r) dst[((o / b) * cg * taps + r) * b + o % b] = w[o * cg * taps + r];
  }
  uint32_t nw = add_f32_weight(graph, graph->nodes[i].inputs[1], ingot_arena_printf(&graph->arena, "nchw%uc", b), rank,
                               dims, dst);
  uint32_t nb = INGOT_NO_VALUE;
  node = &graph->nodes[i];
  if (node->input_count > 2 && node->inputs[2] != INGOT_NO_VALUE) {
    const ingot_value_t* bv = &graph->values[node->inputs[2]];
    float* bias = ingot_xcalloc((size_t)(ocb * b), sizeof(float));
    memcpy(bias, bv->data, sizeof(float) * (size_t)ingot_value_numel(bv));
    int64_t bd = ocb * b;
    nb = add_f32_weight(graph, node->inputs[2], ingot_arena_printf(&graph->arena, "pad%u", b), 1, &bd, bias);
  }
  node = &graph->nodes[i];
  const ingot_conv_params_t cp = node->params.u.conv;
  node->op = INGOT_OP_CONV_BLOCKED;
  node->params.kind = INGOT_PARAMS_NONE;
  if (kind != BLOCK_CONV_PLAIN_IN) node->inputs[0] = blocked[node->inputs[0]];
  node->inputs[1] = nw;
  if (node->input_count > 2) node->inputs[2] = nb;
  if (node->epilogue.residual_input) node->inputs[3] = blocked[node->inputs[3]];
  ingot_attr_t* a = ingot_graph_node_add_attr(graph, i, "block", INGOT_ATTR_INT);
  a->i = b;
  a = ingot_graph_node_add_attr(graph, i, "in_block", INGOT_ATTR_INT);
  a->i = kind != BLOCK_CONV_PLAIN_IN;
  a = ingot_graph_node_add_attr(graph, i, "depthwise", INGOT_ATTR_INT);
  a->i = kind == BLOCK_CONV_DEPTHWISE;
  ingot_graph_node_set_ints(graph, i, "strides", cp.window.strides, 2);
  ingot_graph_node_set_ints(graph, i, "dilations", cp.window.dilations, 2);
}

/* Rewrites the attributes or pads of non-conv node i for 5-D inputs. */
static void block_other(ingot_graph_t* graph, uint32_t i) {
  ingot_node_t* node = &graph->nodes[i];
  if (node->op == INGOT_OP_PAD) {
    ingot_pad_params_t pp;
    if (ingot_graph_pad_params(graph, i, &pp) != INGOT_OK) return; /* checked by block_other_ok */
    int64_t pads[10] = {0};
    for (int d = 2; d < 4; ++d) {
      pads[d] = pp.begin[d];
      pads[5 + d] = pp.end[d];
    }
    if (node->input_count >= 2 && node->inputs[1] != INGOT_NO_VALUE) {
      int64_t* data = ingot_xmalloc(sizeof(pads));
      memcpy(data, pads, sizeof(pads));
      char* base = ingot_arena_printf(&graph->arena, "%s_pads5", node->name);
      uint32_t pv = ingot_graph_add_value(graph, ingot_graph_unique_name(graph, base), INGOT_VALUE_WEIGHT);
      int64_t pd = 10;
      ingot_graph_set_weight(graph, pv, INGOT_DTYPE_I64, 1, &pd, data);
      graph->nodes[i].inputs[1] = pv;
    } else {
      ingot_graph_node_set_ints(graph, i, "pads", pads, 10);
    }
  } else if (node->op == INGOT_OP_MAXPOOL || node->op == INGOT_OP_AVERAGEPOOL) {
    /* A 3-D pool whose window along B is 1. */
    const ingot_window_params_t win = node->params.u.pool.window;
    int64_t k[3] = {win.kernel[0], win.kernel[1], 1}, s[3] = {win.strides[0], win.strides[1], 1};
    int64_t d[3] = {win.dilations[0], win.dilations[1], 1};
    int64_t p[6] = {win.pads[0], win.pads[1], 0, win.pads[2], win.pads[3], 0};
    ingot_graph_node_set_ints(graph, i, "kernel_shape", k, 3);
    ingot_graph_node_set_ints(graph, i, "strides", s, 3);
    ingot_graph_node_set_ints(graph, i, "dilations", d, 3);
    ingot_graph_node_set_ints(graph, i, "pads", p, 6);
    ingot_attr_t* ap = ingot_graph_node_add_attr(graph, i, "auto_pad", INGOT_ATTR_STRING);
    ap->s = "NOTSET";
  } else if (node->op == INGOT_OP_CONCAT) {
    ingot_attr_t* a = ingot_graph_node_add_attr(graph, i, "axis", INGOT_ATTR_INT);
    a->i = 1;
  } else if (node->op == INGOT_OP_RESIZE) {
    /* scales [s0, s1, s2, s3] -> [s0, s1, s2, s3, 1]; sizes [N, C, h, w] ->
     * [N, C/B, h, w, B] (checked by block_other_ok) */
    uint32_t b = graph->activation_block;
    for (uint32_t k = 2; k < node->input_count && k < 4; ++k) {
      uint32_t v = graph->nodes[i].inputs[k];
      if (v == INGOT_NO_VALUE || ingot_value_numel(&graph->values[v]) == 0) continue;
      int64_t five = 5;
      uint32_t nv;
      if (k == 2) {
        float* s = ingot_xmalloc(sizeof(float) * 5);
        memcpy(s, graph->values[v].data, sizeof(float) * 4);
        s[4] = 1.0f;
        nv = add_f32_weight(graph, v, "scales5", 1, &five, s);
      } else {
        int64_t* z = ingot_xmalloc(sizeof(int64_t) * 5);
        const int64_t* src = graph->values[v].data;
        z[0] = src[0], z[1] = (src[1] + b - 1) / b, z[2] = src[2], z[3] = src[3], z[4] = b;
        char* base = ingot_arena_printf(&graph->arena, "%s_sizes5", graph->values[v].name);
        nv = ingot_graph_add_value(graph, ingot_graph_unique_name(graph, base), INGOT_VALUE_WEIGHT);
        ingot_graph_set_weight(graph, nv, INGOT_DTYPE_I64, 1, &five, z);
      }
      graph->nodes[i].inputs[k] = nv;
    }
  } else if (node->op == INGOT_OP_GLOBALAVERAGEPOOL || node->op == INGOT_OP_GLOBALMAXPOOL) {
    /* A 3-D pool whose window is the whole of H and W and 1 along B. */
    const ingot_value_t* xv = &graph->values[node->inputs[0]];
    int64_t k[3] = {xv->dims[2], xv->dims[3], 1}, ones[3] = {1, 1, 1}, p[6] = {0};
    node->op = node->op == INGOT_OP_GLOBALAVERAGEPOOL ? INGOT_OP_AVERAGEPOOL : INGOT_OP_MAXPOOL;
    node->params.kind = INGOT_PARAMS_NONE;
    ingot_graph_node_set_ints(graph, i, "kernel_shape", k, 3);
    ingot_graph_node_set_ints(graph, i, "strides", ones, 3);
    ingot_graph_node_set_ints(graph, i, "dilations", ones, 3);
    ingot_graph_node_set_ints(graph, i, "pads", p, 6);
  }
}

/* Whether some consumer of value y could join a region that y starts. */
static bool joins_region(const ingot_graph_t* graph, uint32_t y, uint32_t* blocked, uint32_t b) {
  bool joins = false;
  blocked[y] = y; /* as if blocked, for the test */
  for (uint32_t j = 0; j < graph->node_count && !joins; ++j) {
    const ingot_node_t* c = &graph->nodes[j];
    if (c->dead) continue;
    bool reads = false;
    for (uint32_t k = 0; k < c->input_count; ++k) reads |= c->inputs[k] == y;
    if (!reads) continue;
    joins = c->op == INGOT_OP_CONV ? c->inputs[0] == y && block_conv_kind(graph, c, blocked) != BLOCK_CONV_NO
                                   : block_other_ok(graph, c, blocked, b);
  }
  blocked[y] = INGOT_NO_VALUE;
  return joins;
}

/* Whether a conv on an NCHW input with output y starts a region: a consumer
 * would join it, and its output channels fill their blocks to 8/9 or more
 * (24 channels in blocks of 16 would compute 32: a third more work). */
static bool entry_worth_it(const ingot_graph_t* graph, uint32_t y, uint32_t* blocked, uint32_t b) {
  int64_t c = graph->values[y].dims[1], padded = (c + b - 1) / b * b;
  return 9 * c >= 8 * padded && joins_region(graph, y, blocked, b);
}

/* A Where's spatial mask v ([H, 1], [H, W], [W]) with a trailing 1 for the
 * lanes of a blocked operand, by a Reshape. */
static uint32_t add_lane_axis(ingot_graph_t* graph, uint32_t v) {
  int32_t rank = graph->values[v].rank;
  int64_t* shape = ingot_xmalloc(sizeof(int64_t) * (size_t)(rank + 1));
  for (int32_t d = 0; d < rank; ++d) shape[d] = graph->values[v].dims[d];
  shape[rank] = 1;
  char* base = ingot_arena_printf(&graph->arena, "%s_lanes_shape", graph->values[v].name);
  uint32_t sv = ingot_graph_add_value(graph, ingot_graph_unique_name(graph, base), INGOT_VALUE_WEIGHT);
  int64_t n = rank + 1;
  ingot_graph_set_weight(graph, sv, INGOT_DTYPE_I64, 1, &n, shape);
  base = ingot_arena_printf(&graph->arena, "%s_lanes", graph->values[v].name);
  uint32_t mv = ingot_graph_add_value(graph, ingot_graph_unique_name(graph, base), INGOT_VALUE_INTERMEDIATE);
  ingot_value_t* m = &graph->values[mv];
  m->dtype = INGOT_DTYPE_BOOL;
  m->rank = rank + 1;
  for (int32_t d = 0; d < rank; ++d) m->dims[d] = graph->values[v].dims[d];
  m->dims[rank] = 1;
  uint32_t in[2] = {v, sv};
  ingot_graph_add_node(graph, INGOT_OP_RESHAPE, ingot_graph_unique_name(graph, base), in, 2, &mv, 1);
  return mv;
}

ingot_status_t ingot_graph_block_activations(ingot_graph_t* graph) {
  uint32_t b = graph->activation_block;
  if (b < 2) return INGOT_OK;
  uint32_t logical_count = graph->value_count, node_count = graph->node_count;
  /* blocked[v]: the blocked twin of logical value v, or INGOT_NO_VALUE. */
  uint32_t* blocked = ingot_xmalloc(sizeof(uint32_t) * (logical_count + 1));
  for (uint32_t v = 0; v < logical_count; ++v) blocked[v] = INGOT_NO_VALUE;
  bool any = false;
  /* Nodes are in execution order (the graph is sorted). */
  for (uint32_t i = 0; i < node_count; ++i) {
    ingot_node_t* node = &graph->nodes[i];
    if (node->dead || node->output_count != 1 || node->outputs[0] >= logical_count) continue;
    uint32_t y = node->outputs[0];
    if (node->op == INGOT_OP_CONV) {
      block_conv_t kind = block_conv_kind(graph, node, blocked);
      if (kind == BLOCK_CONV_NO || (kind == BLOCK_CONV_PLAIN_IN && !entry_worth_it(graph, y, blocked, b))) continue;
      uint32_t yb = add_blocked_value(graph, y, b);
      block_conv(graph, i, kind, blocked, b);
      graph->nodes[i].outputs[0] = yb;
      blocked[y] = yb;
      any = true;
    } else if (block_other_ok(graph, node, blocked, b)) {
      /* Pads and windows for 5-D inputs (read from the logical ones). */
      block_other(graph, i);
      uint32_t yb = add_blocked_value(graph, y, b);
      int64_t channels = graph->values[y].dims[1];
      for (uint32_t k = 0; k < graph->nodes[i].input_count; ++k) {
        uint32_t v = graph->nodes[i].inputs[k];
        if (v != INGOT_NO_VALUE && v < logical_count && blocked[v] != INGOT_NO_VALUE) {
          graph->nodes[i].inputs[k] = blocked[v];
        } else if (lane_wise_binary(graph->nodes[i].op) && channel_constant(graph, v, channels)) {
          float pad = graph->nodes[i].op == INGOT_OP_DIV ? 1.0f : 0.0f;
          graph->nodes[i].inputs[k] = add_blocked_channels(graph, v, channels, b, pad);
        } else if (graph->nodes[i].op == INGOT_OP_WHERE && k == 0) {
          graph->nodes[i].inputs[k] = add_lane_axis(graph, v);
        }
      }
      node = &graph->nodes[i];
      node->outputs[0] = yb;
      blocked[y] = yb;
    }
  }
  /* The edges: a logical value still read (or a graph output) is made from
   * its twin by one FromBlocked. */
  for (uint32_t v = 0; any && v < logical_count; ++v) {
    if (blocked[v] == INGOT_NO_VALUE) continue;
    bool used = graph->values[v].is_output;
    for (uint32_t j = 0; j < graph->node_count && !used; ++j) {
      const ingot_node_t* c = &graph->nodes[j];
      if (c->dead) continue;
      for (uint32_t k = 0; k < c->input_count; ++k) used |= c->inputs[k] == v;
    }
    if (!used) continue;
    char* base = ingot_arena_printf(&graph->arena, "%s_from_nchw%uc", graph->values[v].name, b);
    uint32_t in = blocked[v];
    uint32_t n = ingot_graph_add_node(graph, INGOT_OP_FROM_BLOCKED, ingot_graph_unique_name(graph, base), &in, 1, &v, 1);
    ingot_attr_t* a = ingot_graph_node_add_attr(graph, n, "channels", INGOT_ATTR_INT);
    a->i = graph->values[v].dims[1];
  }
  free(blocked);
  return INGOT_OK;
}
