/* Quantization passes.
 *
 * ingot_graph_split_qlinear turns a large QLinearConv or QLinearMatMul into
 * the integer contraction that ONNX defines beside it (ConvInteger,
 * MatMulInteger: int32 sums of (x - x_zero) * (w - w_zero)) and a
 * Requantize node (domain ai.ingot) that adds the bias and requantizes
 * elementwise:
 *
 *   y = QLinearConv(x, xs, xz, w, ws, wz, ys, yz, B)
 *     ->  acc = ConvInteger(x, w, xz, wz)                 (int32, y's shape)
 *         y   = Requantize(acc, xs, ws, ys, yz, B)  axis 1
 *   y = QLinearMatMul(a, as, az, b, bs, bz, ys, yz)
 *     ->  acc = MatMulInteger(a, b, az, bz)
 *         y   = Requantize(acc, as, bs, ys, yz)  axis rank - 1
 *   y = QGemm(a, as, az, b, bs, bz, C, ys, yz)   transA 0, alpha 1, b a weight
 *     ->  acc = MatMulInteger(a, b or its transpose, az, bz)
 *         y   = Requantize(acc, as, bs, ys, yz, C)  axis 1
 *
 * The contraction then gets the contraction schedules (register tiles,
 * vectors; ConvInteger's padding moved out by ingot_graph_pad_conv_inputs),
 * which a QLinear node's own kernel (one loop nest with a scalar int32
 * accumulator and the requantization after the sum, lower_conv.c /
 * lower_gemm.c) does not get. The price is an int32 intermediate four
 * times y's size, so a contraction below QLINEAR_SPLIT_MIN_MACS stays one
 * kernel. The arithmetic is the same either way (lower_quant.c).
 *
 * ingot_graph_fuse_qdq turns the QDQ form that quantizers write (ONNX
 * Runtime's quantize_static with QuantFormat.QDQ) into those QLinear nodes:
 *
 *   xf = DequantizeLinear(xq, xs, xz)            xs, xz: scalar weights
 *   wf = DequantizeLinear(wq, ws, wz)            wq: int8/uint8 weight;
 *                                                ws, wz per tensor or per
 *                                                output channel
 *   bf = DequantizeLinear(bq, bs[, 0])           optional; bq int32 weight,
 *                                                bs = xs * ws (float32)
 *   c  = Conv(xf, wf[, bf])  | MatMul(xf, wf)  | Gemm(xf, wf[, bf])
 *  [c  = Relu(c) | Clip(c, lo, hi)]              only when a no-op after
 *   y  = QuantizeLinear(c, ys, yz)               the quantization (below)
 *     ->  y = QLinearConv(xq, xs, xz, wq, ws, wz, ys, yz[, bq])
 *         y = QLinearMatMul(xq, xs, xz, wq, ws, wz, ys, yz)
 *         y = QGemm(xq, xs, xz, wq, ws, wz, bq, ys, yz)  transB kept
 *
 * Why the result is the float graph's up to ONNX's rounding: a dequantized
 * value is exactly (q - z) * s, so the float contraction is
 * xs * ws[k] * sum (xq - xz) (wq - wz) + bq * bs[k], computed with float
 * rounding, while the integer kernel sums exactly in int32 and rounds once
 * in the requantization (lower_quant.c's header), as ONNX Runtime's own QDQ
 * kernels do. A bias whose scale is not xs * ws[k] (to 2^-20 relative) is
 * refused: there the float graph would add another value.
 *
 * The activation: QuantizeLinear is monotone, so Q(clip(v, lo, hi)) =
 * clamp(Q(v), Q(lo), Q(hi)). The QLinear kernels have no clamp of their own
 * (the requantization saturates to the dtype's range), so a Relu or Clip is
 * taken in only when Q(lo) is the dtype's lowest value and Q(hi) its
 * highest (Relu: the zero point is 0 for uint8, -128 for int8, what
 * quantize_static writes when it keeps the Relu), the clamp then being a
 * no-op; other activations leave the pattern in float.
 *
 * The residual sums between them, DequantizeLinear(a) + DequantizeLinear(b)
 * [-> the same no-op Relu / Clip] -> QuantizeLinear, per tensor and of one
 * 8-bit dtype, become QLinearAdd (com.microsoft; fuse_qdq_add), the float
 * path's expression in one kernel (see fuse_qdq_add for where it differs).
 *
 * Refused (the float path stays): a float value of the pattern (the
 * contraction's or the activation's output) that something else reads or
 * that is a graph output; scales that are not float32 weights, zero points
 * that are absent or not weights; per-axis w quantization along any axis
 * but the output channels (Conv axis 0, MatMul axis 1, Gemm axis 0 with
 * transB, else 1); blocked quantization; a Gemm with transA, alpha != 1 or
 * beta != 1 with a bias, or a bias that is not one int32 per column; a
 * MatMul whose B is not a 2-D weight; QuantizeLinear with output_dtype.
 * The DequantizeLinear nodes stay for any other reader (dead-code
 * elimination removes them otherwise).
 *
 * Order-preserving ops between a DequantizeLinear and a QuantizeLinear of
 * the same scale and zero point (MaxPool, and the ops that only move
 * elements: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, a nearest
 * Resize or Upsample) run on the
 * 8-bit values themselves (fuse_qdq_passthrough): Q(DQ(q)) = q for equal
 * parameters and DQ is increasing, so Q(maxpool(DQ(x))) = maxpool(x)
 * exactly (a padded tap is the dtype's lowest value, which never wins over
 * a real one). ONNX Runtime runs these on the bytes under the same
 * condition. Any other scale or zero point, or a no-op Relu / Clip between
 * (not taken), leaves the float path. The pass is structural: it runs
 * before inference and constant folding, which would otherwise fold the
 * weights' DequantizeLinear into float weights. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph_internal.h"

/* Multiply-adds below which a QLinear node keeps its single kernel. */
#define QLINEAR_SPLIT_MIN_MACS ((int64_t)1 << 16)

static bool known(const ingot_value_t* v) {
  if (v->rank < 0 || v->dtype == INGOT_DTYPE_INVALID) return false;
  for (int32_t d = 0; d < v->rank; ++d) {
    if (v->dims[d] < 0) return false;
  }
  return true;
}

/* QGemm (com.microsoft: y = requantize(alpha (A - az)(B - bz) + C)) with
 * transA 0, alpha 1, an 8-bit output and a weight B: MatMulInteger over B
 * as [K, N] (transposed here when transB) and a Requantize along the
 * columns with C as its bias, which is QGemm's arithmetic (lower_quant.c). */
static void split_qgemm(ingot_graph_t* graph, uint32_t i) {
  ingot_node_t* n = &graph->nodes[i];
  if (n->dead || n->output_count != 1 || n->input_count != 9 || n->params.u.gemm.trans_a ||
      n->params.u.gemm.alpha != 1.0 || (n->inputs[6] != INGOT_NO_VALUE && n->params.u.gemm.beta != 1.0)) {
    return;
  }
  uint32_t in[9];
  memcpy(in, n->inputs, sizeof in);
  uint32_t y = n->outputs[0];
  if (in[0] == INGOT_NO_VALUE || in[3] == INGOT_NO_VALUE || in[7] == INGOT_NO_VALUE || in[8] == INGOT_NO_VALUE ||
      y == INGOT_NO_VALUE) {
    return;
  }
  const ingot_value_t* yv = &graph->values[y];
  const ingot_value_t* bv = &graph->values[in[3]];
  if (!known(yv) || !known(bv) || bv->rank != 2 || bv->kind != INGOT_VALUE_WEIGHT || !bv->data || yv->rank != 2 ||
      ingot_graph_dtype_size(bv->dtype) != 1) {
    return;
  }
  bool tb = n->params.u.gemm.trans_b;
  int64_t k = bv->dims[tb ? 1 : 0], cols = bv->dims[tb ? 0 : 1];
  if (ingot_value_numel(yv) * k < QLINEAR_SPLIT_MIN_MACS) return;
  uint32_t b = in[3];
  if (tb) {
    uint8_t* t = ingot_xmalloc((size_t)(k * cols));
    const uint8_t* src = bv->data;
    for (int64_t r = 0; r < k; ++r)
      for (int64_t c = 0; c < cols; ++c) t[r * cols + c] = src[c * k + r];
    ingot_dtype_t dt = bv->dtype;
    const char* base = ingot_arena_printf(&graph->arena, "%s_t", bv->name);
    b = ingot_graph_add_value(graph, ingot_graph_unique_name(graph, base), INGOT_VALUE_WEIGHT);
    int64_t dims[2] = {k, cols};
    ingot_graph_set_weight(graph, b, dt, 2, dims, t);
  }
  const char* base = ingot_arena_printf(&graph->arena, "%s_acc", graph->values[y].name);
  uint32_t acc = ingot_graph_add_value(graph, ingot_graph_unique_name(graph, base), INGOT_VALUE_INTERMEDIATE);
  uint32_t contraction_in[4] = {in[0], b, in[2], in[5]};
  base = ingot_arena_printf(&graph->arena, "%s_integer", graph->nodes[i].name);
  ingot_graph_add_node(graph, INGOT_OP_MATMULINTEGER, base, contraction_in, 4, &acc, 1);
  n = &graph->nodes[i]; /* the node array may have moved */
  n->op = INGOT_OP_REQUANTIZE;
  n->attrs = NULL;
  n->attr_count = 0;
  uint32_t* rin = INGOT_ARENA_ARRAY(&graph->arena, uint32_t, 6);
  rin[0] = acc, rin[1] = in[1], rin[2] = in[4], rin[3] = in[7], rin[4] = in[8], rin[5] = in[6];
  n->inputs = rin;
  n->input_count = rin[5] != INGOT_NO_VALUE ? 6 : 5;
  memset(&n->params, 0, sizeof(n->params));
  ingot_graph_node_add_attr(graph, i, "axis", INGOT_ATTR_INT)->i = 1;
}

ingot_status_t ingot_graph_split_qlinear(ingot_graph_t* graph) {
  uint32_t node_count = graph->node_count; /* new nodes are not visited */
  for (uint32_t i = 0; i < node_count; ++i) {
    ingot_node_t* n = &graph->nodes[i];
    bool conv = n->op == INGOT_OP_QLINEARCONV;
    if (n->op == INGOT_OP_QGEMM) {
      split_qgemm(graph, i);
      continue;
    }
    if (n->dead || (!conv && n->op != INGOT_OP_QLINEARMATMUL) || n->output_count != 1 || n->input_count < 8) continue;
    uint32_t in[9];
    for (uint32_t k = 0; k < 9; ++k) in[k] = k < n->input_count ? n->inputs[k] : INGOT_NO_VALUE;
    uint32_t y = n->outputs[0];
    if (in[0] == INGOT_NO_VALUE || in[3] == INGOT_NO_VALUE || y == INGOT_NO_VALUE) continue;
    const ingot_value_t* yv = &graph->values[y];
    const ingot_value_t* wv = &graph->values[in[3]];
    if (!known(yv) || !known(wv) || !known(&graph->values[in[0]]) || yv->rank < 1) continue;
    /* The multiply-adds: y's elements times one output's reduction. */
    int64_t red = 1;
    if (conv) {
      for (int32_t d = 1; d < wv->rank; ++d) red *= wv->dims[d];
    } else {
      if (wv->rank < 2) continue; /* a 1-D b: no column axis for the scales */
      red = wv->dims[wv->rank - 2];
    }
    if (ingot_value_numel(yv) * red < QLINEAR_SPLIT_MIN_MACS) continue;

    const char* base = ingot_arena_printf(&graph->arena, "%s_acc", yv->name);
    uint32_t acc = ingot_graph_add_value(graph, ingot_graph_unique_name(graph, base), INGOT_VALUE_INTERMEDIATE);
    uint32_t contraction_in[4] = {in[0], in[3], in[2], in[5]};
    base = ingot_arena_printf(&graph->arena, "%s_integer", graph->nodes[i].name);
    uint32_t c = ingot_graph_add_node(graph, conv ? INGOT_OP_CONVINTEGER : INGOT_OP_MATMULINTEGER, base, contraction_in,
                                      4, &acc, 1);
    /* Conv's attributes (window, group) move to the ConvInteger; the node
     * itself becomes the Requantize, with fresh ones. */
    n = &graph->nodes[i]; /* the node array may have moved */
    graph->nodes[c].attrs = n->attrs;
    graph->nodes[c].attr_count = n->attr_count;
    n->attrs = NULL;
    n->attr_count = 0;
    n->op = INGOT_OP_REQUANTIZE;
    uint32_t* rin = INGOT_ARENA_ARRAY(&graph->arena, uint32_t, 6);
    rin[0] = acc, rin[1] = in[1], rin[2] = in[4], rin[3] = in[6], rin[4] = in[7], rin[5] = conv ? in[8] : INGOT_NO_VALUE;
    n->inputs = rin;
    n->input_count = rin[5] != INGOT_NO_VALUE ? 6 : 5;
    memset(&n->params, 0, sizeof(n->params));
    int32_t rank = graph->values[y].rank;
    ingot_graph_node_add_attr(graph, i, "axis", INGOT_ATTR_INT)->i = conv ? 1 : rank - 1;
  }
  return INGOT_OK;
}

/* ---- QDQ patterns into QLinear nodes ---- */

static bool is_weight(const ingot_graph_t* g, uint32_t v, ingot_dtype_t dtype) {
  if (v == INGOT_NO_VALUE) return false;
  const ingot_value_t* x = &g->values[v];
  return x->kind == INGOT_VALUE_WEIGHT && x->dtype == dtype && x->data && known(x);
}

static bool is_q8(ingot_dtype_t t) { return t == INGOT_DTYPE_U8 || t == INGOT_DTYPE_I8; }

/* One DequantizeLinear read into facts (valid when dq_of returns true). */
typedef struct qdq_dq_t {
  uint32_t data, scale, zero; /* inputs; zero INGOT_NO_VALUE when absent */
  int64_t scales;             /* elements of the scale (and zero point) */
  int64_t axis;               /* the attribute as written (default 1) */
} qdq_dq_t;

/* The DequantizeLinear that writes `v`, with a float32 weight scale of rank
 * 0 or 1 and a zero point (when present) a weight of as many elements;
 * false otherwise. */
static bool dq_of(const ingot_graph_t* g, uint32_t v, qdq_dq_t* out) {
  if (v == INGOT_NO_VALUE || g->values[v].producer == INGOT_NO_VALUE) return false;
  const ingot_node_t* d = &g->nodes[g->values[v].producer];
  if (d->dead || d->op != INGOT_OP_DEQUANTIZELINEAR || d->input_count < 2 || d->inputs[0] == INGOT_NO_VALUE) return false;
  if (ingot_node_attr_int(d, "block_size", 0) != 0) return false;
  int64_t odt = ingot_node_attr_int(d, "output_dtype", 0);
  if (odt != 0 && odt != 1) return false; /* 1: ONNX FLOAT */
  out->data = d->inputs[0];
  out->scale = d->inputs[1];
  out->zero = d->input_count > 2 ? d->inputs[2] : INGOT_NO_VALUE;
  out->axis = ingot_node_attr_int(d, "axis", 1);
  if (!is_weight(g, out->scale, INGOT_DTYPE_F32) || g->values[out->scale].rank > 1) return false;
  out->scales = ingot_value_numel(&g->values[out->scale]);
  if (out->scales < 1) return false;
  if (out->zero != INGOT_NO_VALUE) {
    const ingot_value_t* z = &g->values[out->zero];
    if (z->kind != INGOT_VALUE_WEIGHT || !z->data || !known(z) || ingot_value_numel(z) != out->scales) return false;
  }
  return true;
}

/* Scalar scale and zero point of an 8-bit activation. */
static bool dq_activation(const ingot_graph_t* g, const qdq_dq_t* d) {
  return d->scales == 1 && d->zero != INGOT_NO_VALUE && is_q8(g->values[d->zero].dtype);
}

/* An 8-bit weight dequantized per tensor, or per axis `axis` (of a weight of
 * `rank` dims) with `outputs` elements. */
static bool dq_weight(const ingot_graph_t* g, const qdq_dq_t* d, int32_t rank, int32_t axis, int64_t outputs) {
  const ingot_value_t* w = &g->values[d->data];
  if (w->kind != INGOT_VALUE_WEIGHT || !w->data || !known(w) || !is_q8(w->dtype) || w->rank != rank) return false;
  if (d->zero == INGOT_NO_VALUE || g->values[d->zero].dtype != w->dtype) return false;
  if (d->scales == 1) return true;
  int64_t a = d->axis < 0 ? d->axis + rank : d->axis;
  return a == axis && d->scales == outputs;
}

/* An int32 bias of `outputs` elements whose scale is xs * ws[k] and whose
 * zero point is 0. */
static bool dq_bias(const ingot_graph_t* g, const qdq_dq_t* b, const qdq_dq_t* x, const qdq_dq_t* w, int64_t outputs) {
  const ingot_value_t* bv = &g->values[b->data];
  if (!is_weight(g, b->data, INGOT_DTYPE_I32) || bv->rank != 1 || bv->dims[0] != outputs) return false;
  if (b->scales != 1 && b->scales != outputs) return false;
  if (b->zero != INGOT_NO_VALUE) {
    if (!is_weight(g, b->zero, INGOT_DTYPE_I32)) return false;
    const int32_t* z = g->values[b->zero].data;
    for (int64_t k = 0; k < b->scales; ++k)
      if (z[k] != 0) return false;
  }
  float xs = *(const float*)g->values[x->scale].data;
  const float* ws = g->values[w->scale].data;
  const float* bs = g->values[b->scale].data;
  for (int64_t k = 0; k < outputs; ++k) {
    float want = xs * ws[w->scales > 1 ? k : 0];
    float have = bs[b->scales > 1 ? k : 0];
    if (!(fabsf(have - want) <= fabsf(want) * 0x1p-20f)) return false;
  }
  return true;
}

/* QuantizeLinear(v, ys, yz) of a float32 constant v, as lower_quant.c
 * computes it (float32, ties to even, saturated). */
static float quantize_f32(float v, float ys, float yz, float lo, float hi) {
  float q = nearbyintf(v / ys) + yz;
  return q < lo ? lo : q > hi ? hi : q;
}

/* What reads float value `c` in a QDQ pattern: optionally a Relu or Clip
 * that is a no-op after the quantization (see the header), then a
 * QuantizeLinear per tensor with a float32 weight scale and an 8-bit weight
 * zero point; each float value read once and not a graph output. */
typedef struct quantized_reader_t {
  uint32_t act;       /* the Relu / Clip node, INGOT_NO_VALUE when none */
  uint32_t q;         /* the QuantizeLinear node */
  uint32_t ys, yz, y; /* its scale, zero point and output */
} quantized_reader_t;

static bool quantized_reader(const ingot_graph_t* graph, const uint32_t* uses, const uint32_t* reader, uint32_t c,
                             quantized_reader_t* out) {
  if (graph->values[c].is_output || uses[c] != 1) return false;
  uint32_t act = INGOT_NO_VALUE, q = reader[c];
  const ingot_node_t* r = &graph->nodes[q];
  if ((r->op == INGOT_OP_RELU || r->op == INGOT_OP_CLIP) && r->output_count == 1 && r->inputs[0] == c) {
    act = q;
    uint32_t c2 = r->outputs[0];
    if (c2 == INGOT_NO_VALUE || graph->values[c2].is_output || uses[c2] != 1) return false;
    c = c2;
    q = reader[c2];
  }
  const ingot_node_t* qn = &graph->nodes[q];
  if (qn->op != INGOT_OP_QUANTIZELINEAR || qn->inputs[0] != c || qn->input_count < 3 || qn->output_count != 1 ||
      qn->outputs[0] == INGOT_NO_VALUE || ingot_node_attr_int(qn, "output_dtype", 0) != 0) {
    return false;
  }
  uint32_t ys = qn->inputs[1], yz = qn->inputs[2];
  if (!is_weight(graph, ys, INGOT_DTYPE_F32) || ingot_value_numel(&graph->values[ys]) != 1) return false;
  if (yz == INGOT_NO_VALUE || graph->values[yz].kind != INGOT_VALUE_WEIGHT || !graph->values[yz].data ||
      !known(&graph->values[yz]) || !is_q8(graph->values[yz].dtype) || ingot_value_numel(&graph->values[yz]) != 1) {
    return false;
  }
  if (act != INGOT_NO_VALUE) {
    float lo = 0.0f, hi = INFINITY;
    if (graph->nodes[act].op == INGOT_OP_CLIP && !ingot_graph_clip_bounds_f32(graph, &graph->nodes[act], &lo, &hi))
      return false;
    bool s8 = graph->values[yz].dtype == INGOT_DTYPE_I8;
    float qlo = s8 ? -128.0f : 0.0f, qhi = s8 ? 127.0f : 255.0f;
    float zp = s8 ? (float)*(const int8_t*)graph->values[yz].data : (float)*(const uint8_t*)graph->values[yz].data;
    float sc = *(const float*)graph->values[ys].data;
    if (quantize_f32(lo, sc, zp, qlo, qhi) != qlo || quantize_f32(hi, sc, zp, qlo, qhi) != qhi) return false;
  }
  *out = (quantized_reader_t){.act = act, .q = q, .ys = ys, .yz = yz, .y = qn->outputs[0]};
  return true;
}

/* DequantizeLinear(a), DequantizeLinear(b) -> Add [-> no-op Relu/Clip] ->
 * QuantizeLinear, all per tensor with one 8-bit dtype, becomes QLinearAdd
 * (com.microsoft), whose kernel computes the same float32 expression
 * (lower_quant.c): ((a - za) sa + (b - zb) sb) / sc, rounded, + zc,
 * saturated, in one pass over the bytes instead of four kernels and three
 * float tensors. Where the target fuses a multiply-add (x86-64-v3 and up,
 * AArch64), the first product is not rounded on its own as the separate
 * DequantizeLinear rounds it: over 40 random scale sets and all 65,536
 * byte pairs each, 4 of 2.6 million sums land on the other side of a half
 * and the byte moves by one step (a C model of both, 2026-12-04); without
 * a fused multiply-add the bytes are the float path's exactly. The kernel
 * multiplies by 1 / sc instead of dividing only where that is shown to give
 * the same bytes (lower_quant.c, choose_rescale). */
static void fuse_qdq_add(ingot_graph_t* graph, const uint32_t* uses, const uint32_t* reader, uint32_t i) {
  ingot_node_t* n = &graph->nodes[i];
  if (n->input_count != 2 || n->output_count != 1 || n->outputs[0] == INGOT_NO_VALUE) return;
  qdq_dq_t da, db;
  if (!dq_of(graph, n->inputs[0], &da) || !dq_activation(graph, &da) || !dq_of(graph, n->inputs[1], &db) ||
      !dq_activation(graph, &db)) {
    return;
  }
  /* the zero points' dtypes (the data's are not inferred yet) */
  ingot_dtype_t t = graph->values[da.zero].dtype;
  if (!is_q8(t) || graph->values[db.zero].dtype != t) return;
  quantized_reader_t qr;
  if (!quantized_reader(graph, uses, reader, n->outputs[0], &qr) || graph->values[qr.yz].dtype != t) return;
  uint32_t* in = INGOT_ARENA_ARRAY(&graph->arena, uint32_t, 8);
  in[0] = da.data, in[1] = da.scale, in[2] = da.zero;
  in[3] = db.data, in[4] = db.scale, in[5] = db.zero;
  in[6] = qr.ys, in[7] = qr.yz;
  n->op = INGOT_OP_QLINEARADD;
  n->inputs = in;
  n->input_count = 8;
  n->outputs[0] = qr.y;
  n->attrs = NULL;
  n->attr_count = 0;
  memset(&n->params, 0, sizeof(n->params));
  graph->values[qr.y].producer = i;
  graph->nodes[qr.q].dead = true;
  if (qr.act != INGOT_NO_VALUE) graph->nodes[qr.act].dead = true;
}

/* A Resize or Upsample that only moves elements: mode nearest, and no
 * tf_crop_and_resize (whose extrapolation_value is a float). */
static bool nearest_resize(const ingot_node_t* n) {
  if (n->op != INGOT_OP_RESIZE && n->op != INGOT_OP_UPSAMPLE) return false;
  return strcmp(ingot_node_attr_string(n, "mode", "nearest"), "nearest") == 0 &&
         strcmp(ingot_node_attr_string(n, "coordinate_transformation_mode", "half_pixel"), "tf_crop_and_resize") != 0;
}

/* MaxPool / Reshape / Flatten / Squeeze / Unsqueeze / Transpose / nearest
 * Resize between a
 * DequantizeLinear and a QuantizeLinear of the same per-tensor parameters
 * read the bytes and write the QuantizeLinear's output (see the header). */
static void fuse_qdq_passthrough(ingot_graph_t* graph, const uint32_t* uses, const uint32_t* reader, uint32_t i) {
  ingot_node_t* n = &graph->nodes[i];
  if (n->input_count < 1 || n->output_count < 1 || n->outputs[0] == INGOT_NO_VALUE) return;
  for (uint32_t k = 1; k < n->output_count; ++k)
    if (n->outputs[k] != INGOT_NO_VALUE) return; /* MaxPool's Indices */
  qdq_dq_t dx;
  if (!dq_of(graph, n->inputs[0], &dx) || !dq_activation(graph, &dx)) return;
  quantized_reader_t qr;
  if (!quantized_reader(graph, uses, reader, n->outputs[0], &qr) || qr.act != INGOT_NO_VALUE) return;
  const ingot_value_t* xz = &graph->values[dx.zero];
  const ingot_value_t* yz = &graph->values[qr.yz];
  if (yz->dtype != xz->dtype) return;
  float xs = *(const float*)graph->values[dx.scale].data, ys = *(const float*)graph->values[qr.ys].data;
  if (memcmp(&xs, &ys, sizeof xs) != 0 || memcmp(xz->data, yz->data, 1) != 0) return;
  uint32_t* in = INGOT_ARENA_ARRAY(&graph->arena, uint32_t, n->input_count);
  memcpy(in, n->inputs, sizeof(uint32_t) * n->input_count);
  in[0] = dx.data;
  n->inputs = in;
  n->outputs[0] = qr.y;
  graph->values[qr.y].producer = i;
  graph->nodes[qr.q].dead = true;
}

ingot_status_t ingot_graph_fuse_qdq(ingot_graph_t* graph) {
  if (graph->opset < 10) return INGOT_OK; /* no QLinearConv / QLinearMatMul before opset 10 */
  uint32_t* uses = ingot_graph_use_counts(graph);
  /* The last live reader of each value: its only one where uses says 1. */
  uint32_t* reader = ingot_xmalloc(sizeof(uint32_t) * (graph->value_count ? graph->value_count : 1));
  for (uint32_t v = 0; v < graph->value_count; ++v) reader[v] = INGOT_NO_VALUE;
  for (uint32_t i = 0; i < graph->node_count; ++i) {
    const ingot_node_t* n = &graph->nodes[i];
    if (n->dead) continue;
    for (uint32_t k = 0; k < n->input_count; ++k)
      if (n->inputs[k] != INGOT_NO_VALUE) reader[n->inputs[k]] = i;
  }
  for (uint32_t i = 0; i < graph->node_count; ++i) {
    ingot_node_t* n = &graph->nodes[i];
    ingot_op_t op = n->op;
    if (!n->dead && op == INGOT_OP_ADD) {
      fuse_qdq_add(graph, uses, reader, i);
      continue;
    }
    if (!n->dead && (op == INGOT_OP_MAXPOOL || op == INGOT_OP_RESHAPE || op == INGOT_OP_FLATTEN ||
                     op == INGOT_OP_SQUEEZE || op == INGOT_OP_UNSQUEEZE || op == INGOT_OP_TRANSPOSE ||
                     nearest_resize(n))) {
      fuse_qdq_passthrough(graph, uses, reader, i);
      continue;
    }
    if (n->dead || (op != INGOT_OP_CONV && op != INGOT_OP_MATMUL && op != INGOT_OP_GEMM)) continue;
    if (n->output_count != 1 || n->outputs[0] == INGOT_NO_VALUE || n->input_count < 2) continue;
    qdq_dq_t dx, dw, db;
    if (!dq_of(graph, n->inputs[0], &dx) || !dq_activation(graph, &dx)) continue;
    if (!dq_of(graph, n->inputs[1], &dw)) continue;
    const ingot_value_t* wv = &graph->values[dw.data];
    bool trans_b = false;
    int64_t outputs;
    if (op == INGOT_OP_CONV) {
      if (wv->rank < 3 || !dq_weight(graph, &dw, wv->rank, 0, wv->dims[0])) continue;
      outputs = wv->dims[0];
    } else {
      if (wv->rank != 2) continue;
      if (op == INGOT_OP_GEMM) {
        trans_b = ingot_node_attr_int(n, "transB", 0) != 0;
        if (ingot_node_attr_int(n, "transA", 0) != 0 || ingot_node_attr_float(n, "alpha", 1.0f) != 1.0f) continue;
        if (n->input_count > 2 && n->inputs[2] != INGOT_NO_VALUE && ingot_node_attr_float(n, "beta", 1.0f) != 1.0f)
          continue;
      }
      outputs = wv->dims[trans_b ? 0 : 1];
      if (!dq_weight(graph, &dw, 2, trans_b ? 0 : 1, outputs)) continue;
    }
    uint32_t bias = INGOT_NO_VALUE;
    if (op != INGOT_OP_MATMUL && n->input_count > 2 && n->inputs[2] != INGOT_NO_VALUE) {
      if (!dq_of(graph, n->inputs[2], &db) || !dq_bias(graph, &db, &dx, &dw, outputs)) continue;
      bias = db.data;
    }
    /* The float values after the contraction: read once, by the pattern. */
    quantized_reader_t qr;
    if (!quantized_reader(graph, uses, reader, n->outputs[0], &qr)) continue;
    uint32_t act = qr.act, q = qr.q, ys = qr.ys, yz = qr.yz, y = qr.y;

    uint32_t* in = INGOT_ARENA_ARRAY(&graph->arena, uint32_t, 9);
    uint32_t count = 8;
    in[0] = dx.data, in[1] = dx.scale, in[2] = dx.zero;
    in[3] = dw.data, in[4] = dw.scale, in[5] = dw.zero;
    if (op == INGOT_OP_GEMM) {
      in[6] = bias, in[7] = ys, in[8] = yz, count = 9;
    } else {
      in[6] = ys, in[7] = yz, in[8] = bias;
      if (bias != INGOT_NO_VALUE) count = 9;
    }
    n = &graph->nodes[i];
    n->op = op == INGOT_OP_CONV ? INGOT_OP_QLINEARCONV : op == INGOT_OP_MATMUL ? INGOT_OP_QLINEARMATMUL : INGOT_OP_QGEMM;
    n->inputs = in;
    n->input_count = count;
    n->outputs[0] = y;
    memset(&n->params, 0, sizeof(n->params));
    if (op == INGOT_OP_GEMM) { /* QGemm: transA 0, alpha 1 (checked), transB kept */
      n->attrs = NULL;
      n->attr_count = 0;
      ingot_graph_node_add_attr(graph, i, "transB", INGOT_ATTR_INT)->i = trans_b;
    }
    graph->values[y].producer = i;
    graph->nodes[q].dead = true;
    if (act != INGOT_NO_VALUE) graph->nodes[act].dead = true;
  }
  free(reader);
  free(uses);
  return INGOT_OK;
}

/* ---- Requantize into its ConvInteger ---- */

ingot_status_t ingot_graph_fuse_requantize(ingot_graph_t* graph) {
  uint32_t* uses = ingot_graph_use_counts(graph);
  for (uint32_t i = 0; i < graph->node_count; ++i) {
    ingot_node_t* r = &graph->nodes[i];
    if (r->dead || r->op != INGOT_OP_REQUANTIZE || r->output_count != 1 || r->input_count < 5 ||
        r->epilogue.activation != INGOT_ACTIVATION_NONE)
      continue;
    const ingot_attr_t* ax = ingot_node_attr(r, "axis");
    const ingot_attr_t* al = ingot_node_attr(r, "alpha");
    uint32_t acc = r->inputs[0];
    if (!ax || ax->type != INGOT_ATTR_INT || ax->i != 1 || (al && al->f != 1.0f) || acc == INGOT_NO_VALUE ||
        uses[acc] != 1 || graph->values[acc].is_output)
      continue;
    uint32_t p = graph->values[acc].producer;
    if (p == INGOT_NO_VALUE || p >= graph->node_count) continue;
    ingot_node_t* c = &graph->nodes[p];
    const ingot_epilogue_t* ep = &c->epilogue;
    if (c->dead || c->op != INGOT_OP_CONVINTEGER || c->output_count != 1 || c->input_count > 4 ||
        ep->activation != INGOT_ACTIVATION_NONE || ep->residual_input || ep->bias_input || ep->output_padded ||
        ep->requant_input)
      continue;
    uint32_t* in = INGOT_ARENA_ARRAY(&graph->arena, uint32_t, 9);
    for (uint32_t k = 0; k < 4; ++k) in[k] = k < c->input_count ? c->inputs[k] : INGOT_NO_VALUE;
    for (uint32_t k = 0; k < 5; ++k) in[4 + k] = 1 + k < r->input_count ? r->inputs[1 + k] : INGOT_NO_VALUE;
    uint32_t* out = INGOT_ARENA_ARRAY(&graph->arena, uint32_t, 2);
    out[0] = r->outputs[0];
    out[1] = acc;
    c->inputs = in;
    c->input_count = in[8] != INGOT_NO_VALUE ? 9 : 8;
    c->outputs = out;
    c->output_count = 2;
    c->epilogue.requant_input = 4;
    /* the user's node name (the QLinearConv's, or the QuantizeLinear's of a
     * QDQ group) stays on the one kernel */
    c->name = r->name;
    graph->values[out[0]].producer = p;
    r->dead = true;
  }
  free(uses);
  return INGOT_OK;
}

/* ---- The requantization multiplier, once ---- */

/* A float32 weight's data when `v` is one with n elements (1, or `alt`). */
static const float* f32_weight(const ingot_graph_t* graph, uint32_t v, int64_t alt, int64_t* out_n) {
  if (v == INGOT_NO_VALUE || v >= graph->value_count) return NULL;
  const ingot_value_t* val = &graph->values[v];
  if (val->kind != INGOT_VALUE_WEIGHT || !val->data || val->dtype != INGOT_DTYPE_F32) return NULL;
  int64_t n = ingot_value_numel(val);
  if (n != 1 && n != alt) return NULL;
  *out_n = n;
  return (const float*)val->data;
}

ingot_status_t ingot_graph_fold_requant_multipliers(ingot_graph_t* graph) {
  uint32_t one = INGOT_NO_VALUE;
  uint32_t node_count = graph->node_count;
  for (uint32_t i = 0; i < node_count; ++i) {
    const ingot_node_t* n = &graph->nodes[i];
    uint32_t xs_in, ws_in, ys_in;
    if (n->dead) continue;
    if (n->op == INGOT_OP_CONVINTEGER && n->epilogue.requant_input) {
      xs_in = n->epilogue.requant_input, ws_in = xs_in + 1, ys_in = xs_in + 2;
    } else if (n->op == INGOT_OP_QLINEARCONV || n->op == INGOT_OP_QLINEARMATMUL) {
      xs_in = 1, ws_in = 4, ys_in = 6;
    } else {
      continue;
    }
    if (ys_in >= n->input_count) continue;
    int64_t nx = 0, nw = 0, ny = 0;
    const float* xs = f32_weight(graph, n->inputs[xs_in], 1, &nx);
    const float* ys = f32_weight(graph, n->inputs[ys_in], 1, &ny);
    uint32_t wsv = n->inputs[ws_in];
    const float* ws = f32_weight(graph, wsv, wsv < graph->value_count ? ingot_value_numel(&graph->values[wsv]) : 1, &nw);
    if (!xs || !ws || !ys) continue;
    if (xs[0] == 1.0f && ys[0] == 1.0f) continue; /* folded already */
    /* m[k] = x_scale * w_scale[k] / y_scale, in float32 and in this order:
     * the value the kernel would compute (lower_requant_value) */
    float* m = ingot_xmalloc(sizeof(float) * (size_t)nw);
    for (int64_t k = 0; k < nw; ++k) {
      float p = xs[0] * ws[k];
      m[k] = p / ys[0];
    }
    const ingot_value_t* wv = &graph->values[wsv];
    int32_t rank = wv->rank;
    int64_t dims[INGOT_MAX_RANK];
    for (int32_t d = 0; d < rank; ++d) dims[d] = wv->dims[d];
    char* base = ingot_arena_printf(&graph->arena, "%s_requant_multiplier", n->name);
    uint32_t mv = ingot_graph_add_value(graph, ingot_graph_unique_name(graph, base), INGOT_VALUE_WEIGHT);
    ingot_graph_set_weight(graph, mv, INGOT_DTYPE_F32, rank, dims, m);
    if (one == INGOT_NO_VALUE) {
      one = ingot_graph_add_value(graph, ingot_graph_unique_name(graph, "requant_scale_one"), INGOT_VALUE_WEIGHT);
      float* v = ingot_xmalloc(sizeof(float));
      *v = 1.0f;
      ingot_graph_set_weight(graph, one, INGOT_DTYPE_F32, 0, NULL, v);
    }
    /* The node's inputs live in the arena, its own array. */
    ingot_node_t* nn = &graph->nodes[i];
    uint32_t* in = INGOT_ARENA_ARRAY(&graph->arena, uint32_t, nn->input_count);
    memcpy(in, nn->inputs, sizeof(uint32_t) * nn->input_count);
    in[xs_in] = one;
    in[ws_in] = mv;
    in[ys_in] = one;
    nn->inputs = in;
  }
  return INGOT_OK;
}

