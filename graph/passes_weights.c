/* Weight-only compression (ingot_graph_compress_weights, graph.h).
 *
 * The big float32 constant weights of the contraction ops are stored in a
 * narrower dtype and converted back to float32 inside the kernels where
 * they are loaded (lower/lower.c, lower_weight_load); the graph only says
 * which weights and how:
 *   - float16 / bfloat16: the weight value's dtype changes (each element
 *     rounded to nearest even; float16 overflows to infinity as a cast
 *     would);
 *   - int8: symmetric per output channel. The weight value becomes int8 and
 *     a new float32 weight holds one scale per output channel, appended to
 *     the node's inputs at slot node.weight_scale_input:
 *       scale[c] = max |w[c, ..]| / 127   (float32; 0 for an all-zero channel)
 *       q = clamp(round_half_even(w / scale[c]), -127, 127)
 *     and the kernel reads w as float(q) * scale[c].
 *
 * It runs last, after packing and the blocked layout re-laid the weights
 * (ingot_graph_pack_weights, ingot_graph_block_activations), so that those
 * passes never see a narrow dtype and every layout choice stays the one the
 * float32 model gets. An output channel of the final layout is:
 *   Conv [K, C/g, k..]                   axis 0
 *   Conv packed [P, C, k.., B]           p * B + b (first and last axis)
 *   ConvBlocked [OCb, .., B]             ocb * B + b
 *   MatMul B [K, N], Gemm B (transB 0)   the last axis
 *   Gemm B (transB 1) [N, K]             axis 0
 *   MatMul / Gemm packed [P, K, B]       p * B + b
 * Padded channels (a partial last panel or block) get their own scales, so
 * the scale vector covers every channel index a kernel may form.
 *
 * A Gather's 2-D data along axis 0 (an embedding table, input 0) is
 * compressed the same way, a scale per row: a row is what a gathered output
 * element comes from.
 *
 * Only weights read by exactly one such node (as that input), of float32,
 * with at least INGOT_COMPRESS_MIN_ELEMENTS elements, are compressed:
 * biases, norms and small weights stay float32. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph_internal.h"

uint16_t ingot_f32_to_f16_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);  /* NaN */
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* 65520 and above round to infinity */
  if (a < 0x38800000u) {                                   /* below 2^-14: a subnormal (or 0) */
    float v;
    memcpy(&v, &a, sizeof(v));
    return (uint16_t)(sign | (uint16_t)nearbyintf(v * 16777216.0f)); /* units of 2^-24, exact product */
  }
  a += 0xfffu + ((a >> 13) & 1u); /* round to nearest even on the 13 bits dropped */
  return (uint16_t)(sign | ((a - 0x38000000u) >> 13));
}

uint16_t ingot_f32_to_bf16_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

void ingot_quantize_i8_channels(const float* w, int64_t numel, int64_t outer_size, int64_t inner, int8_t* out_q,
                                float* out_scales) {
  int64_t channels = (numel / outer_size) * inner;
  float* amax = out_scales;
  for (int64_t c = 0; c < channels; ++c) amax[c] = 0.0f;
  for (int64_t i = 0; i < numel; ++i) {
    int64_t c = (i / outer_size) * inner + i % inner;
    float a = fabsf(w[i]);
    if (a > amax[c]) amax[c] = a;
  }
  for (int64_t c = 0; c < channels; ++c) out_scales[c] = amax[c] / 127.0f;
  for (int64_t i = 0; i < numel; ++i) {
    int64_t c = (i / outer_size) * inner + i % inner;
    float s = out_scales[c];
    float q = s > 0.0f ? nearbyintf(w[i] / s) : 0.0f; /* the default rounding mode: half to even */
    if (q > 127.0f) q = 127.0f;
    if (q < -127.0f) q = -127.0f;
    out_q[i] = (int8_t)q;
  }
}

/* How output channels run through node's weight (input 1): element i is in
 * channel (i / outer_size) * inner + i % inner. False for a node or weight
 * this pass leaves alone. */
uint32_t ingot_node_compressed_input(const ingot_node_t* node) { return node->op == INGOT_OP_GATHER ? 0 : 1; }

static bool channel_layout(const ingot_graph_t* graph, const ingot_node_t* node, int64_t* out_outer_size,
                           int64_t* out_inner) {
  const ingot_value_t* wv = &graph->values[node->inputs[ingot_node_compressed_input(node)]];
  int64_t numel = ingot_value_numel(wv);
  if (wv->rank < 2 || numel <= 0) return false;
  int64_t first = numel / wv->dims[0], last = wv->dims[wv->rank - 1];
  bool packed = node->weight_block != 0;
  switch (node->op) {
    case INGOT_OP_CONV:
      if (node->weight_dot4_channels) return false;
      *out_outer_size = first;
      *out_inner = packed ? last : 1;
      return true;
    case INGOT_OP_GATHER:
      if (wv->rank != 2 || node->params.kind != INGOT_PARAMS_AXIS || node->params.u.axis.axis != 0) return false;
      *out_outer_size = first;
      *out_inner = 1;
      return true;
    case INGOT_OP_CONV_BLOCKED:
      *out_outer_size = first;
      *out_inner = last;
      return true;
    case INGOT_OP_MATMUL:
    case INGOT_OP_GEMM: {
      if (wv->rank != (packed ? 3 : 2)) return false;
      bool trans_b = node->op == INGOT_OP_GEMM && node->params.kind == INGOT_PARAMS_GEMM && node->params.u.gemm.trans_b;
      if (packed) {
        *out_outer_size = first;
        *out_inner = last;
      } else if (trans_b) {
        *out_outer_size = first;
        *out_inner = 1;
      } else {
        *out_outer_size = numel;
        *out_inner = last;
      }
      return true;
    }
    default:
      return false;
  }
}

static void node_append_input(ingot_graph_t* graph, ingot_node_t* node, uint32_t value) {
  uint32_t* inputs = INGOT_ARENA_ARRAY(&graph->arena, uint32_t, node->input_count + 1);
  for (uint32_t k = 0; k < node->input_count; ++k) inputs[k] = node->inputs[k];
  inputs[node->input_count] = value;
  node->inputs = inputs;
  node->input_count++;
}

ingot_status_t ingot_graph_compress_weights(ingot_graph_t* graph, ingot_dtype_t dtype) {
  if (dtype == INGOT_DTYPE_F32 || dtype == INGOT_DTYPE_INVALID) return INGOT_OK;
  if (dtype != INGOT_DTYPE_F16 && dtype != INGOT_DTYPE_BF16 && dtype != INGOT_DTYPE_I8)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "weights cannot be stored as %s (float16, bfloat16 or int8)",
                      ingot_dtype_name(dtype));
  uint32_t* uses = ingot_graph_use_counts(graph);
  uint32_t node_count = graph->node_count;
  for (uint32_t n = 0; n < node_count; ++n) {
    ingot_node_t* node = &graph->nodes[n];
    if (node->dead || node->input_count < 2 || node->output_count < 1 || node->weight_scale_input) continue;
    uint32_t w = node->inputs[ingot_node_compressed_input(node)], y = node->outputs[0];
    if (w == INGOT_NO_VALUE || y == INGOT_NO_VALUE || uses[w] != 1) continue;
    const ingot_value_t* wv = &graph->values[w];
    if (wv->kind != INGOT_VALUE_WEIGHT || wv->dtype != INGOT_DTYPE_F32 || !wv->data || wv->is_output ||
        graph->values[y].dtype != INGOT_DTYPE_F32 || ingot_value_numel(wv) < INGOT_COMPRESS_MIN_ELEMENTS) {
      continue;
    }
    int64_t outer_size, inner;
    if (!channel_layout(graph, node, &outer_size, &inner)) continue;
    int64_t numel = ingot_value_numel(wv);
    const float* src = (const float*)wv->data;
    int64_t dims[INGOT_MAX_RANK];
    memcpy(dims, wv->dims, sizeof(dims));
    int32_t rank = wv->rank;
    if (dtype == INGOT_DTYPE_I8) {
      int64_t channels = (numel / outer_size) * inner;
      int8_t* q = ingot_xmalloc((size_t)numel);
      float* scales = ingot_xmalloc(sizeof(float) * (size_t)channels);
      ingot_quantize_i8_channels(src, numel, outer_size, inner, q, scales);
      const char* name =
          ingot_graph_unique_name(graph, ingot_arena_printf(&graph->arena, "%s_scale", graph->values[w].name));
      uint32_t sv = ingot_graph_add_value(graph, name, INGOT_VALUE_WEIGHT);
      ingot_graph_set_weight(graph, sv, INGOT_DTYPE_F32, 1, &channels, scales);
      ingot_graph_set_weight(graph, w, INGOT_DTYPE_I8, rank, dims, q);
      node = &graph->nodes[n]; /* the arrays may have moved */
      node_append_input(graph, node, sv);
      node->weight_scale_input = node->input_count - 1;
    } else {
      uint16_t* h = ingot_xmalloc(sizeof(uint16_t) * (size_t)numel);
      for (int64_t i = 0; i < numel; ++i)
        h[i] = dtype == INGOT_DTYPE_F16 ? ingot_f32_to_f16_bits(src[i]) : ingot_f32_to_bf16_bits(src[i]);
      ingot_graph_set_weight(graph, w, dtype, rank, dims, h);
    }
  }
  free(uses);
  return INGOT_OK;
}
