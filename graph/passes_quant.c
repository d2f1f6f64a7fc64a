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
 *
 * The contraction then gets the contraction schedules (register tiles,
 * vectors; ConvInteger's padding moved out by ingot_graph_pad_conv_inputs),
 * which a QLinear node's own kernel (one loop nest with a scalar int32
 * accumulator and the requantization after the sum, lower_conv.c /
 * lower_gemm.c) does not get. The price is an int32 intermediate four
 * times y's size, so a contraction below QLINEAR_SPLIT_MIN_MACS stays one
 * kernel. The arithmetic is the same either way (lower_quant.c). */
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

ingot_status_t ingot_graph_split_qlinear(ingot_graph_t* graph) {
  uint32_t node_count = graph->node_count; /* new nodes are not visited */
  for (uint32_t i = 0; i < node_count; ++i) {
    ingot_node_t* n = &graph->nodes[i];
    bool conv = n->op == INGOT_OP_QLINEARCONV;
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
