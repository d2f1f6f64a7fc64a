/* The graph IR: typed values and nodes, shape inference and passes.
 *
 * A graph owns everything it points to through its arena (names, dims,
 * attributes) except weight data, which lives in heap blocks owned by the
 * graph too; ingot_graph_destroy frees all of it.
 *
 * Values and nodes are referenced by index (uint32_t ids) into the graph's
 * arrays. Passes rewrite the graph in place: they may append values and nodes
 * and mark nodes dead (node.dead); ingot_graph_compact removes dead nodes and
 * unreferenced values and renumbers. Node order is always a valid topological
 * order once ingot_graph_sort has run (the importer calls it). */
#ifndef INGOT_GRAPH_H_
#define INGOT_GRAPH_H_

#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"
#include "runtime/ingot.h"
#include "runtime/ingot_format.h"

typedef enum ingot_op_t {
/* The most inputs and outputs any op of ops.def takes (graph.c checks the
 * table against them; the importer sizes its per-node arrays by them). */
#define INGOT_NODE_INPUTS_MAX 64
#define INGOT_NODE_OUTPUTS_MAX 64
#define INGOT_OP(id, name, min_in, max_in, min_out, max_out, infer, lower) INGOT_OP_##id,
#include "graph/ops.def"
  INGOT_OP_COUNT_
} ingot_op_t;

/* "Conv" for INGOT_OP_CONV; NULL for out-of-range values. */
const char* ingot_op_name(ingot_op_t op);
/* INGOT_OP_COUNT_ when `onnx_name` (in the default domain) is unknown. */
ingot_op_t ingot_op_from_name(const char* onnx_name);
/* The op's domain: "" for ai.onnx (the default), "com.microsoft" for ONNX
 * Runtime's contrib ops (ops.def's INGOT_OP_DOMAIN rows). */
const char* ingot_op_domain(ingot_op_t op);
/* The op named `onnx_name` in `domain` (NULL, "" and "ai.onnx" are the
 * default domain); INGOT_OP_COUNT_ when that domain has no such op here. */
ingot_op_t ingot_op_from_domain_name(const char* domain, const char* onnx_name);
/* Input/output arity bounds from ops.def. */
void ingot_op_arity(ingot_op_t op, int* out_min_inputs, int* out_max_inputs,
                    int* out_min_outputs, int* out_max_outputs);

#define INGOT_NO_VALUE UINT32_MAX /* an absent optional input */
#define INGOT_MAX_RANGE_SYMBOLS 32 /* ranged input dims per graph */

typedef enum ingot_value_kind_t {
  INGOT_VALUE_INTERMEDIATE = 0,
  INGOT_VALUE_INPUT = 1,    /* a graph input (not an initializer) */
  INGOT_VALUE_WEIGHT = 2,   /* constant data known at compile time */
} ingot_value_kind_t;

/* An ONNX sequence as Ingot holds one: a list of tensor values whose
 * length and members are known at compile time (each member may still be
 * computed at run time). Arena-owned; see ingot_value_t.sequence. */
typedef struct ingot_sequence_t {
  ingot_dtype_t dtype;       /* the element type: the members', else SequenceEmpty's (may be INVALID) */
  uint32_t count;
  const uint32_t* items;     /* count value ids, none of them a sequence */
} ingot_sequence_t;

typedef struct ingot_value_t {
  const char* name;          /* unique in the graph */
  ingot_value_kind_t kind;
  bool is_output;            /* a graph output (any kind) */
  ingot_dtype_t dtype;       /* INGOT_DTYPE_INVALID until inferred */
  int32_t rank;              /* -1 until inferred */
  int64_t dims[INGOT_MAX_RANK];
  /* dims[i] < 0: symbolic; dim_names[i] holds the symbol (or NULL). */
  const char* dim_names[INGOT_MAX_RANK];
  void* data;                /* WEIGHT: rank-major dense data, heap, owned */
  uint32_t producer;         /* node id, INGOT_NO_VALUE for inputs/weights */
  /* 0, or 1 + the id of an int64 value of `rank` elements that the steps
   * write: this value's shape as a run computes it, for an op whose output
   * size depends on its input data (NonZero, Compress with a condition
   * known only at run time, Unique, NonMaxSuppression, a Loop's scan
   * outputs). dims[] are then upper bounds, the storage is sized for them,
   * and the data is dense in the run's shape from the start of that
   * storage. Such a value is a graph output, or read by a node that works
   * row by row along dims[0] when that is the only dim the run decides
   * (elementwise ops, Cast, Softmax along another axis: their output shares
   * the run-time shape; graph/shape_infer.c); inference refuses every other
   * reader. Folding a node with constant inputs gives it its computed shape
   * (graph/passes.c). */
  uint32_t runtime_shape;
  /* With runtime_shape: bit d set when dims[d] is only a bound (the run
   * decides it); the other dims are as they read. */
  uint32_t runtime_dims;
  /* Ranged dims (`--input-shape NAME=1x1..128`; driver/driver_range.c).
   * Every tensor whose size follows a ranged dim is laid out at the strides
   * of its largest shape (dims[]): a run uses the first entries along each
   * such dim and leaves the rest unread.
   * - On a graph input: range_dims has bit d set for each ranged dim,
   *   range_lo[d] is its least size (dims[d] the largest), and range_shape
   *   is 1 + the id of an int64 value of `rank` elements that the runtime
   *   fills with the run's dims before the steps: a value of kind INPUT,
   *   not listed in graph->inputs, whose shape_of is 1 + this input's id.
   *   The caller's data is dense in the run's shape; the runtime spreads it
   *   to the strides of dims[] (and back after the run).
   * - On a graph output: runtime_padded with runtime_shape/runtime_dims
   *   (above): the data lies at the strides of dims[] (not dense); the
   *   runtime packs it dense in the run's shape after the run. */
  uint32_t range_dims;
  int64_t range_lo[INGOT_MAX_RANK];
  uint32_t range_shape;
  uint32_t shape_of;
  bool runtime_padded;
  /* On a graph input: per ranged dim, 1 + its range symbol (dims the model
   * names alike share one); 0 on fixed dims (see ingot_graph_t). */
  uint8_t range_sym[INGOT_MAX_RANK];
  /* Once ranged inputs are settled (graph/ranges.c): per dim, 0 or the
   * symbol whose run's size it has (ingot_graph_t.run_size); kernels that
   * write the value may skip the entries past that size (schedule/
   * range_guard.c). */
  uint8_t run_sym[INGOT_MAX_RANK];
  /* With run_sym: this many entries past the run's size are read too (a
   * window's end pads reach there), so a kernel writes size + margin. */
  uint16_t run_margin[INGOT_MAX_RANK];
  /* NULL, or the list this value holds when it is an ONNX sequence (made
   * by the Sequence ops, carried through Loop, Scan and If) during
   * ingot_graph_infer_and_fold, which turns every node that reads or
   * writes one into plain nodes or bookkeeping and marks it dead; dtype
   * and rank stay unset. No live node reads or writes such a value after
   * that walk, and it is never a graph input or output (refused). */
  const ingot_sequence_t* sequence;
} ingot_value_t;

typedef enum ingot_attr_type_t {
  INGOT_ATTR_INT = 1,
  INGOT_ATTR_FLOAT = 2,
  INGOT_ATTR_STRING = 3,
  INGOT_ATTR_INTS = 4,
  INGOT_ATTR_FLOATS = 5,
  INGOT_ATTR_TENSOR = 6,     /* `tensor` holds a value id of kind WEIGHT */
  INGOT_ATTR_STRINGS = 7,
  INGOT_ATTR_GRAPH = 8,      /* `graph` holds a subgraph (the body of If, Loop, Scan) */
} ingot_attr_type_t;

struct ingot_graph_t;

typedef struct ingot_attr_t {
  const char* name;
  ingot_attr_type_t type;
  int64_t i;                 /* INT */
  float f;                   /* FLOAT */
  const char* s;             /* STRING */
  int64_t* ints;             /* INTS: count entries */
  float* floats;             /* FLOATS: count entries */
  const char** strings;      /* STRINGS: count entries */
  uint32_t count;
  uint32_t tensor;           /* TENSOR */
  /* GRAPH: owned by the outermost graph's tree of subgraphs (see
   * ingot_graph_t.children); several nodes may share one after a pass
   * copies a node. */
  struct ingot_graph_t* graph;
} ingot_attr_t;

/* Fused epilogues a pass may attach to a node (graph/ passes set them, lower/
 * applies them in the producer's store). */
typedef enum ingot_activation_t {
  INGOT_ACTIVATION_NONE = 0,
  INGOT_ACTIVATION_RELU = 1,
  INGOT_ACTIVATION_CLIP = 2,  /* clip to [act_min, act_max] */
  INGOT_ACTIVATION_GELU = 3,  /* 0.5 x (1 + erf(x / sqrt 2)) */
  INGOT_ACTIVATION_GELU_TANH = 4, /* Gelu's approximate "tanh" form */
} ingot_activation_t;

/* Layout and lowering choices of a node, made before lowering: the layout
 * knobs of its kernel's schedule space (schedule/knobs.def). The packing
 * pass and lowering read these numbers, never a target; the schedule side
 * fills them per kernel and target (ingot_graph_set_layout_chooser). Unless
 * `chosen`, the default rule applies (ingot_node_layout_options). */
typedef struct ingot_node_layout_t {
  bool chosen;
  bool pack;                 /* Conv/MatMul/Gemm: pack the constant weight in panels */
  uint32_t panel;            /* output channels a panel holds (when pack) */
  bool pointwise_matmul;     /* a 1x1 conv lowers as a matrix product over its positions */
  uint32_t chains;           /* Softmax/LogSoftmax/Hardmax: partial results a row reduction keeps */
  /* ConvInteger with pack: the panels hold dot4 words (node.weight_dot4_
   * channels) where w - w_zero_point fits int8. Off by default (a target
   * without a byte dot product runs the plain form faster); the layout
   * chooser turns it on for targets whose code generator has one
   * (schedule/template.c target_layout_default). */
  bool dot4;
  /* With dot4: the words hold 2 channels as signed 16-bit halves (the loop
   * IR's dot2, x86's pmaddwd) instead of 4 bytes: for x86 targets without
   * a byte dot product (VNNI), whose 4-byte words would be unpacked in the
   * inner loop. Set by the target (template.c), never by a record. */
  bool dot_pairs;
} ingot_node_layout_t;

#define INGOT_LAYOUT_MAX_VALUES 8

/* Which layout choices apply to a node, their legal values, and the
 * defaults (today's fixed rules: panels of 32 from 32 outputs on, else 16
 * or 8 dividing them; no packing of a conv with a short reduction; 1x1 as a
 * matrix product when its positions are a multiple of 16; 8 chains). */
typedef struct ingot_node_layout_options_t {
  uint32_t panels[INGOT_LAYOUT_MAX_VALUES]; /* legal panel widths; none: not packable */
  uint32_t panel_count;
  bool pointwise;            /* pointwise_matmul applies (a 1x1 conv, stride 1, no pads) */
  uint32_t chains[INGOT_LAYOUT_MAX_VALUES]; /* legal chain counts; none: chains do not apply */
  uint32_t chain_count;
  /* A ConvInteger whose reduction is too short for float-style panels
   * (defaults.pack false): a target with dot4 words still packs it, and
   * lowering then vectorizes along the output row (lower_conv.c). */
  bool dot4_short;
  ingot_node_layout_t defaults;
} ingot_node_layout_options_t;

/* What a producer does to each output element after computing it, fused in
 * from the nodes that followed it (ingot_graph_fuse_residual_add,
 * ingot_graph_fuse_activations, ingot_graph_pad_into_producers), in this
 * order: y = act(y + residual), stored at the output's interior when the
 * output is padded. All zero (the node's initial state) means none. Any node
 * can carry one; a lowering that cannot apply a part refuses the node. */
typedef struct ingot_epilogue_t {
  ingot_activation_t activation;
  float act_min, act_max;     /* CLIP: the bounds */
  /* 0, or the node input slot holding a tensor of the output's shape added
   * before the activation (input 0 is never a residual). */
  uint32_t residual_input;
  /* 0, or the node input slot holding a vector as long as the output's last
   * axis, added to every row first: y = A x B + bias (a MatMul; the
   * accumulators start at it). */
  uint32_t bias_input;
  /* 0 (none), or the factor the product is multiplied by before the bias
   * and the activation: y = act(scale * (A x B) + bias) (a MatMul; a Mul or
   * Div by a constant scalar fused in: attention's 1/sqrt(d)). */
  float scale;
  /* The output is written into a zero-bordered tensor output_pads larger
   * (begin of each spatial axis, then end; 2-D producers only). */
  bool output_padded;
  int64_t output_pads[6];
  /* The padded output's border value: 0 for a float conv; for a ConvInteger
   * with a fused requantization (below), the Pad's constant, the next
   * conv's x zero point. */
  double output_pad_value;
  /* 0, or (a ConvInteger; ingot_graph_fuse_requantize) the node input slot
   * of a fused requantization's x scale: slots requant_input.. + 4 hold x's
   * scale, w's scale, y's scale and zero point and the int32 bias (the last
   * may be absent), as a Requantize node's inputs 1..5 with axis 1. Output
   * 0 is then the quantized y, output 1 the int32 sums, which the kernel
   * keeps in registers where its schedule allows (scratch otherwise). */
  uint32_t requant_input;
} ingot_epilogue_t;

/* ---- Typed op parameters (graph/params.def, graph/params.c) ----
 * Each op's attributes are read and checked once, at shape inference, into
 * node.params; later stages read the struct, not the attributes. Arrays are
 * indexed by spatial axis (the input's axes 2..). */

/* A sliding window (Conv, ConvInteger, the pools): auto_pad resolved into
 * explicit pads; kernel from the weight (Conv) or kernel_shape (pools). */
typedef struct ingot_window_params_t {
  int32_t spatial;                       /* spatial axes: input rank - 2 */
  int64_t kernel[INGOT_MAX_RANK];
  int64_t strides[INGOT_MAX_RANK];       /* >= 1 */
  int64_t dilations[INGOT_MAX_RANK];     /* >= 1 */
  int64_t pads[2 * INGOT_MAX_RANK];      /* >= 0: begin of each axis, then end */
  int64_t out[INGOT_MAX_RANK];           /* output extent (before any output padding) */
  bool ceil_mode;                        /* pools only */
} ingot_window_params_t;

typedef struct ingot_conv_params_t {     /* Conv, ConvInteger */
  ingot_window_params_t window;
  int64_t group;                         /* >= 1, divides both channel counts */
} ingot_conv_params_t;

typedef struct ingot_pool_params_t {     /* MaxPool, AveragePool, LpPool */
  ingot_window_params_t window;
  bool count_include_pad;                /* AveragePool */
  int32_t storage_order;                 /* MaxPool indices: 0 row-major, 1 column-major */
  int32_t p;                             /* LpPool: 1..64 */
} ingot_pool_params_t;

typedef struct ingot_lp_params_t {       /* GlobalLpPool */
  int32_t p;                             /* 1..64 */
} ingot_lp_params_t;

/* One axis of input 0, normalized into [0, rank): Softmax, LogSoftmax,
 * Hardmax (default 1 before opset 13, else -1), Concat (required from opset
 * 4), Gather, GatherElements (default 0), OneHot (default -1, an axis of the
 * output: of the indices' rank + 1), Compress (-1 when absent: the input
 * flattened). */
typedef struct ingot_axis_params_t {
  int32_t axis;
} ingot_axis_params_t;

typedef struct ingot_reduce_params_t {   /* Reduce* */
  /* The axes reduced (from the attribute or the constant axes input; none
   * given: every axis, unless noop_with_empty_axes). */
  bool reduced[INGOT_MAX_RANK];
  bool keepdims;
} ingot_reduce_params_t;

typedef struct ingot_arg_params_t {      /* ArgMax, ArgMin */
  int32_t axis;                          /* normalized */
  bool keepdims, select_last_index;
} ingot_arg_params_t;

typedef struct ingot_topk_params_t {     /* TopK */
  int32_t axis;                          /* normalized */
  int64_t k;                             /* 1..the axis length (input K or attribute k) */
  bool largest, sorted;
} ingot_topk_params_t;

typedef struct ingot_cum_params_t {      /* CumSum, CumProd */
  int32_t axis;                          /* normalized, from the constant axis input */
  bool exclusive, reverse;
} ingot_cum_params_t;

typedef struct ingot_convtranspose_params_t { /* ConvTranspose (1-D to 3-D) */
  int32_t spatial;
  int64_t kernel[3], strides[3], dilations[3], output_padding[3];
  int64_t pads[6];       /* auto_pad and output_shape resolved; an end pad may be < 0 */
  int64_t out[3];        /* output extents */
  int64_t group;
} ingot_convtranspose_params_t;

/* BatchNormalization (inference and, from opset 14, training mode),
 * LayerNormalization, RMSNormalization, InstanceNormalization,
 * GroupNormalization, LpNormalization. */
typedef struct ingot_norm_params_t {
  double epsilon;                        /* the float attribute widened (default 1e-5) */
  bool training;                         /* BatchNormalization: training_mode = 1 */
  double momentum;                       /* BatchNormalization, training: widened (default 0.9) */
  int32_t axis;                          /* Layer/RMS/LpNormalization: normalized first (Lp: only) axis */
  int64_t num_groups;                    /* GroupNormalization: divides the channels */
  int32_t p;                             /* LpNormalization: 1 or 2 */
  double alpha, beta, bias;              /* LRN: the float attributes widened */
  int64_t size;                          /* LRN: channels in the window, >= 1 */
} ingot_norm_params_t;

typedef enum ingot_scatter_reduction_t {
  INGOT_SCATTER_NONE = 0,
  INGOT_SCATTER_ADD,
  INGOT_SCATTER_MUL,
  INGOT_SCATTER_MAX,
  INGOT_SCATTER_MIN,
} ingot_scatter_reduction_t;

typedef struct ingot_scatter_params_t {  /* ScatterElements, Scatter, ScatterND */
  int32_t axis;                          /* normalized (ScatterND: 0, unused) */
  ingot_scatter_reduction_t reduction;   /* NONE on bool data */
} ingot_scatter_params_t;

typedef struct ingot_gathernd_params_t { /* GatherND */
  int64_t batch_dims;
} ingot_gathernd_params_t;

typedef struct ingot_block_params_t {    /* DepthToSpace, SpaceToDepth */
  int64_t blocksize;                     /* 1..4096 */
  bool crd;                              /* DepthToSpace mode CRD (else DCR) */
} ingot_block_params_t;

/* GridSample (mode, padding_mode, align_corners) and AffineGrid
 * (align_corners). Modes by their opset-20 names; opset 16's "bilinear" and
 * "bicubic" read as LINEAR and CUBIC. */
typedef enum ingot_grid_mode_t { INGOT_GRID_LINEAR = 0, INGOT_GRID_NEAREST, INGOT_GRID_CUBIC } ingot_grid_mode_t;
typedef enum ingot_grid_padding_t { INGOT_GRID_ZEROS = 0, INGOT_GRID_BORDER, INGOT_GRID_REFLECTION } ingot_grid_padding_t;
typedef struct ingot_grid_params_t {
  ingot_grid_mode_t mode;
  ingot_grid_padding_t padding;
  bool align_corners;
} ingot_grid_params_t;

/* RoiAlign: the attributes, checked (opset 16's defaults; before opset 16
 * the op had no coordinate_transformation_mode and worked as
 * output_half_pixel, which stays its default there). */
typedef struct ingot_roialign_params_t {
  bool max_mode;                         /* mode "max" (else "avg") */
  bool half_pixel;                       /* "half_pixel" (else "output_half_pixel") */
  int64_t output_height, output_width;   /* 1..INT32_MAX */
  int64_t sampling_ratio;                /* 0: adaptive, ceil(roi size / output size) per ROI */
  double spatial_scale;                  /* the float attribute, widened */
} ingot_roialign_params_t;

typedef struct ingot_trilu_params_t {    /* Trilu */
  bool upper;
} ingot_trilu_params_t;

typedef struct ingot_reverse_sequence_params_t { /* ReverseSequence */
  int32_t batch_axis, time_axis;         /* 1 and 0 (the defaults) or 0 and 1 */
} ingot_reverse_sequence_params_t;

typedef struct ingot_tensor_scatter_params_t { /* TensorScatter */
  int32_t axis;                          /* the sequence axis, normalized; >= 1 (0 is the batch) */
  bool circular;                         /* mode "circular" (else "linear") */
} ingot_tensor_scatter_params_t;

/* HannWindow, HammingWindow, BlackmanWindow. periodic (attribute, default
 * 1): the first `size` points of a window of size + 1 (its denominator N is
 * size), else a symmetric window (N = size - 1). dtype: attribute
 * output_datatype (default float32), one of ONNX's T2 for these ops: the 8-
 * to 64-bit integers, float16, bfloat16, float32, float64. */
typedef struct ingot_signal_window_params_t {
  bool periodic;
  ingot_dtype_t dtype;
} ingot_signal_window_params_t;
/* MelWeightMatrix reads the same struct: dtype is its output_datatype
 * (the same types), periodic is false (it has no such attribute). */
/* STFT. onesided (attribute, default 1): only the dft_length / 2 + 1
 * first frequency bins, else all dft_length. */
typedef struct ingot_stft_params_t {
  bool onesided;
} ingot_stft_params_t;
/* Unique. axis: the attribute normalized into [0, rank), or -1 when absent
 * (the input flattened: unique elements). sorted (attribute, default 1):
 * the unique elements or slices in ascending order, else in the order of
 * their first occurrence. */
typedef struct ingot_unique_params_t {
  int32_t axis;
  bool sorted;
} ingot_unique_params_t;
/* NonMaxSuppression. center_point_box (attribute, default 0): boxes are
 * [x_center, y_center, width, height], else [y1, x1, y2, x2] (two opposite
 * corners, in either order). */
typedef struct ingot_nms_params_t {
  bool center_point_box;
} ingot_nms_params_t;

/* Elementwise ops with attributes: HardSigmoid (alpha 0.2, beta 0.5),
 * LeakyRelu (alpha 0.01), Elu, Celu (alpha 1, Celu's not 0), Selu (alpha,
 * gamma), ThresholdedRelu and Swish (alpha 1), Shrink (alpha: lambd 0.5,
 * beta: bias 0), Gelu (approximate), IsInf (detect_*), Mod (fmod), BitShift
 * (direction). Unused fields are 0. */
typedef struct ingot_unary_params_t {
  double alpha, beta, gamma;             /* the attributes as written (float or int) */
  bool gelu_tanh;                        /* Gelu approximate "tanh" (else "none") */
  bool detect_positive, detect_negative; /* IsInf */
  bool fmod;                             /* Mod: 1 (required for float inputs) */
  bool shift_left;                       /* BitShift: direction LEFT (else RIGHT) */
} ingot_unary_params_t;

/* Attention, RotaryEmbedding, LinearAttention: the attributes as given (the
 * shape checks that involve them stay in inference). */
typedef struct ingot_attention_params_t {
  int64_t q_num_heads, kv_num_heads;     /* Attention, LinearAttention (3-D inputs); 0 when absent */
  bool has_scale;                        /* Attention: scale given (else 1/sqrt(head size)) */
  double scale;                          /* Attention: when has_scale; LinearAttention: 0 = default */
  double softcap;                        /* Attention: 0 = none */
  bool is_causal;                        /* Attention */
  int32_t qk_matmul_output_mode;         /* Attention: 0..3 */
  int64_t num_heads;                     /* RotaryEmbedding (3-D input); 0 when absent */
  int64_t rotary_embedding_dim;          /* RotaryEmbedding: 0 = the head size */
  bool interleaved;                      /* RotaryEmbedding */
} ingot_attention_params_t;

typedef struct ingot_binary_params_t {   /* Add, Sub, Mul, Div */
  /* Legacy broadcast (opset < 7: attributes broadcast=1 and axis): B's dims
   * match A's from `axis` (normalized) on, or are 1. */
  bool legacy_broadcast;
  int32_t axis;
} ingot_binary_params_t;

typedef struct ingot_clip_params_t {     /* Clip: bounds as attributes (opset < 11) */
  bool has_min, has_max;
  double min, max;                       /* the float attributes widened */
} ingot_clip_params_t;

typedef struct ingot_transpose_params_t { /* Transpose */
  int32_t perm[INGOT_MAX_RANK];          /* a permutation (default: reversed axes) */
} ingot_transpose_params_t;

typedef enum ingot_loss_reduction_t {
  INGOT_LOSS_MEAN = 0,
  INGOT_LOSS_SUM,
  INGOT_LOSS_NONE,
} ingot_loss_reduction_t;

typedef struct ingot_loss_params_t {     /* NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss */
  ingot_loss_reduction_t reduction;
  bool has_ignore_index;
  int64_t ignore_index;
} ingot_loss_params_t;

typedef struct ingot_gemm_params_t {     /* Gemm */
  bool trans_a, trans_b;
  double alpha, beta;                    /* the float attributes, widened */
} ingot_gemm_params_t;

/* QuantizeLinear, DequantizeLinear: how the scale (and the zero point, of
 * the same shape) maps onto the data, decided from the scale's shape and the
 * attributes axis and block_size (opset 21), and the quantized dtype. */
typedef enum ingot_quant_granularity_t {
  INGOT_QUANT_PER_TENSOR = 0,            /* one scale (a scalar or one element) */
  INGOT_QUANT_PER_AXIS,                  /* a 1-D scale of x's length along axis */
  INGOT_QUANT_BLOCKED,                   /* x's rank; along axis ceil(length / block_size) */
} ingot_quant_granularity_t;

typedef struct ingot_quant_params_t {
  ingot_quant_granularity_t granularity;
  int32_t axis;                          /* normalized; PER_AXIS and BLOCKED only */
  int64_t block_size;                    /* BLOCKED only: >= 1 */
  /* The quantized dtype (uint8, int8, uint16, int16, uint4, int4, the
   * float8s; DequantizeLinear also int32): QuantizeLinear's output (the
   * zero point's, else output_dtype, else uint8), DequantizeLinear's x. */
  ingot_dtype_t qtype;
  bool has_zero_point;
  bool saturate;                         /* QuantizeLinear to a float8: clamp to
                                            its largest finite value (attribute
                                            saturate, default 1) */
} ingot_quant_params_t;

typedef enum ingot_params_kind_t {
  INGOT_PARAMS_NONE = 0,
#define INGOT_PARAMS(kind, member, type, parse) INGOT_PARAMS_##kind,
#include "graph/params.def"
  INGOT_PARAMS_COUNT_
} ingot_params_kind_t;

/* A tagged union: `kind` says which member of u is valid (NONE: no member;
 * the node was not inferred yet, or its op has no parameters). */
typedef struct ingot_op_params_t {
  ingot_params_kind_t kind;
  union {
#define INGOT_PARAMS(kind, member, type, parse) type member;
#include "graph/params.def"
  } u;
} ingot_op_params_t;

/* The kind of parameters op `op` has (INGOT_PARAMS_NONE: none). */
ingot_params_kind_t ingot_op_params_kind(ingot_op_t op);

typedef struct ingot_node_t {
  ingot_op_t op;
  const char* name;          /* never NULL: "<op>_<index>" when unnamed */
  uint32_t* inputs;          /* value ids; INGOT_NO_VALUE for absent ones */
  uint32_t input_count;
  uint32_t* outputs;
  uint32_t output_count;
  ingot_attr_t* attrs;
  uint32_t attr_count;
  /* Set by shape inference from attrs (and the inputs' shapes). */
  ingot_op_params_t params;
  ingot_epilogue_t epilogue;
  /* 0, or B when its weight (input 1) is packed in panels of B output
   * channels (ingot_graph_pack_weights): Conv [P, C, k.., B] for the ONNX
   * [K, C, k..]; MatMul and Gemm (then transB 0) [P, K, B] for [K, N]; P =
   * ceil(K / B) panels, the last one zero-padded. weight_outputs is K (N). */
  uint32_t weight_block;
  int64_t weight_outputs;
  /* 0, or C (the ONNX weight's input channels) when a packed ConvInteger
   * weight holds groups of 4 input channels as int32 words, the operands of
   * the loop IR's dot4 (ingot_graph_pack_weights): [P, G + 1, k.., B] int32
   * with G = ceil(C / 4); word (p, g, t.., i) holds the bytes of
   * w'[k, 4g + j, t..] for j = 0..3 (0 past C; byte j = bits 8j..8j+7),
   * k = p*B + i, w' = w - w_zero_point[k] as int8 (so the zero point is
   * folded and input 3 is no longer read); the last group g = G holds at
   * tap 0 the sum of w'[k, ..] over channels and taps (0 at other taps). */
  int64_t weight_dot4_channels;
  /* 0, or for a ConvInteger with dot4 words (weight_dot4_channels = C):
   * 1 (uint8 x) or 2 (int8 x) when its input 0 is no longer x but the
   * int32 words [N, G, spatial..] of x' that an ai.ingot Dot4Words node
   * makes (ingot_graph_pack_weights): word (n, g, p..) holds the bytes of
   * x'[n, min(4g + j, C - 1), p..], j = 0..3, x' = x for uint8 and x + 128
   * for int8, so the conv loads one int32 per dot4 instead of four bytes
   * from four channel planes. On an ai.ingot Im2Col node: 1 or 2 when it
   * writes those words of its patches itself (in place of a Dot4Words). */
  uint8_t x_dot4_words;
  /* With x_dot4_words (a ConvInteger) or on a Dot4Words node: the words
   * value is [N, spatial.., G], each position's G words contiguous, instead
   * of [N, G, spatial..] (ingot_graph_pack_weights chooses it for a 1x1 conv
   * that the lowering runs in the channel form, see INGOT_DOT2_ROW_MIN_WIDTH):
   * a step of such a conv's reduction then reads the next word of a few
   * positions, not a word of another channel plane. */
  bool words_last;
  /* With weight_dot4_channels (a ConvInteger) or on a Dot4Words node (an
   * Im2Col writing words): the words hold 2 channels each, as signed 16-bit halves (half j = bits
   * 16j..16j+15), not 4 bytes: G = ceil(C / 2) above, operands of the loop
   * IR's dot2 (layout.dot_pairs). ingot_node_dot_channels gives 2 or 4. */
  bool dot_pairs;
  /* With layout.dot_pairs, when every two neighbouring channels' weights of
   * a 4-byte word satisfy |w'0| + |w'1| <= 128 (each pair of byte products
   * then fits int16 for any input byte): the 4-byte words are kept
   * (dot_pairs false) and the conv computes the loop IR's dot4s, which x86
   * without VNNI sums with pmaddubsw, exactly. ONNX Runtime's quantizer
   * with reduce_range (7-bit weights) always gives such weights. */
  bool dot_sat16;
  /* On a DynamicQuantizeLSTM whose W and R are constants: both are re-laid
   * [D, 4H, cols] (ONNX LSTM's order) from com.microsoft's [D, cols, 4H]
   * (ingot_graph_pack_weights), so a gate's dot product reads neighbouring
   * bytes. */
  bool rnn_rows;
  /* 0, or the input slot of the float32 scales of an int8 weight (input 1;
   * a Gather's data, input 0) stored by ingot_graph_compress_weights: one
   * per output channel of the weight's final layout (a Gather: per row);
   * the kernel reads w as float(q) * scale[channel]. */
  uint32_t weight_scale_input;
  /* Layout choices made before lowering (see ingot_node_layout_t). */
  ingot_node_layout_t layout;
  /* 0, or 1 + the id of a bool scalar value: the node belongs to a branch of
   * an If whose condition is known only at run time, and its results are
   * needed only when that value equals guard_when, so a run may skip it
   * otherwise (ingot_graph_settle_guards keeps a guard only where skipping
   * is safe). */
  uint32_t guard;
  bool guard_when;
  bool dead;
} ingot_node_t;

typedef struct ingot_graph_t {
  ingot_arena_t arena;
  ingot_value_t* values;
  uint32_t value_count, value_cap;
  ingot_node_t* nodes;
  uint32_t node_count, node_cap;
  uint32_t* inputs;          /* graph inputs in model order (kind INPUT) */
  uint32_t input_count;
  uint32_t* outputs;         /* graph outputs in model order */
  uint32_t output_count;
  int64_t opset;             /* the ai.onnx opset the model imports */
  const char* name;
  /* From the ONNX ModelProto ("" and 0 when unset or not imported): what
   * the bundle's metadata records. */
  const char* producer_name;
  const char* producer_version;
  int64_t model_version;
  /* Layout chooser called by ingot_graph_pack_weights (NULL: defaults). */
  struct ingot_layout_chooser_t* layout_chooser;
  /* Channels a block of the blocked activation layout holds
   * (ingot_graph_block_activations; 0: activations stay NCHW). */
  uint32_t activation_block;
  /* True when ingot_graph_pack_weights may feed dot4 ConvIntegers the words
   * of their input (node.x_dot4_words): the caller's choice, made for every
   * target of a bundle at once, since its variants must run the same steps. */
  bool dot4_words;
  /* True when float16 Add, Sub, Mul, Div, Min, Max, Neg, Abs, Sqrt and Relu
   * (and their fused chains) stay float16 instead of moving to float32
   * (ingot_graph_compute_half_in_f32): the caller's choice, made when every
   * target of a bundle computes float16 natively (ingot_target_has_half_arith). */
  bool half_arith;
  /* A subgraph (a GRAPH attribute: the body of an If, Loop or Scan) reads
   * values of the scopes around it by name, as ONNX allows. Each such value
   * is a value of kind INPUT here, captures[k], not listed in inputs; the
   * node that carries the subgraph reads the outer value as its input
   * capture_slots[k] (after the op's own inputs), so sorting and dead-code
   * elimination of the outer graph see the dependency. Empty for a model's
   * main graph. */
  uint32_t* captures;
  uint32_t* capture_slots;
  uint32_t capture_count;
  /* Conditions a run checks after its steps (ingot_graph_add_check): bool
   * values of one element; one that is true fails the run with its message.
   * Kept alive like outputs (their values are marked is_output, but are not
   * in `outputs`). */
  uint32_t* checks;
  const char** check_messages;
  uint32_t check_count;
  /* The iterations a Loop whose trip count is known only at run time is
   * compiled for (`ingot compile --max-trips N`): a run that needs more
   * fails with a check. 0: such a Loop is refused. */
  int64_t loop_max_trips;
  /* The ranged dims of the inputs (`--input-shape NAME=1x1..128`): range
   * symbols 1..range_symbol_count (ingot_value_t.range_sym). */
  uint32_t range_symbol_count;
  /* Per symbol of run_sym (1..run_size_count; index 0 unused): 1 + an
   * int64 value of shape [] or [1] that holds its size in the run, or 0.
   * Kept alive for the kernels that read it (ingot_graph_use_counts). */
  uint32_t run_size[256];
  uint32_t run_size_count;
  /* The subgraphs this graph owns (ingot_graph_adopt), destroyed with it. */
  struct ingot_graph_t** children;
  uint32_t child_count, child_cap;
} ingot_graph_t;

ingot_status_t ingot_graph_create(ingot_graph_t** out_graph);
void ingot_graph_destroy(ingot_graph_t* graph);
/* `graph` takes over `child` (a subgraph of one of its nodes, or of its
 * subgraphs' nodes): destroyed with it. */
void ingot_graph_adopt(ingot_graph_t* graph, ingot_graph_t* child);

/* Number of live-node input slots that read each value (heap array of
 * value_count entries; free() it). */
uint32_t* ingot_graph_use_counts(const ingot_graph_t* graph);
/* Appends a value; the name is copied. Returns its id. */
uint32_t ingot_graph_add_value(ingot_graph_t* graph, const char* name, ingot_value_kind_t kind);
/* Appends a node; inputs/outputs are copied. Returns its id. */
uint32_t ingot_graph_add_node(ingot_graph_t* graph, ingot_op_t op, const char* name,
                              const uint32_t* inputs, uint32_t input_count,
                              const uint32_t* outputs, uint32_t output_count);
/* A unique value name derived from `base`, arena-owned. */
const char* ingot_graph_unique_name(ingot_graph_t* graph, const char* base);
/* Returns the id of the value named `name`, or INGOT_NO_VALUE. */
uint32_t ingot_graph_find_value(const ingot_graph_t* graph, const char* name);

/* Element count of a value with a fully known shape (1 for rank 0). */
int64_t ingot_value_numel(const ingot_value_t* value);
uint64_t ingot_value_bytes(const ingot_value_t* value);
/* Weight data as float (NULL unless WEIGHT with dtype F32). */
const float* ingot_value_f32(const ingot_graph_t* graph, uint32_t value);

/* Attribute lookup on a node; NULL if absent. */
const ingot_attr_t* ingot_node_attr(const ingot_node_t* node, const char* name);
int64_t ingot_node_attr_int(const ingot_node_t* node, const char* name, int64_t fallback);
float ingot_node_attr_float(const ingot_node_t* node, const char* name, float fallback);
const char* ingot_node_attr_string(const ingot_node_t* node, const char* name, const char* fallback);
/* INTS attribute: its entries and count, or (NULL, 0) if absent. */
const int64_t* ingot_node_attr_ints(const ingot_node_t* node, const char* name, uint32_t* out_count);

/* TfIdfVectorizer's attributes, checked (graph/infer_data.c): the pool's
 * n-grams in order, entry k of size[k] ids from pool[offset[k]], counted
 * into output column column[k] and weighted by weight[k] (1 without
 * `weights`). Entries of a size outside [min_gram, max_gram] are never
 * counted. mode: 0 TF, 1 IDF, 2 TFIDF. Arrays from `arena`. */
typedef struct ingot_tfidf_t {
  int mode;
  int64_t min_gram, max_gram, max_skip, columns;
  uint32_t entries;
  const int64_t* pool;
  int64_t *size, *offset, *column;
  float* weight;
} ingot_tfidf_t;
ingot_status_t ingot_graph_tfidf_params(ingot_arena_t* arena, const ingot_node_t* node, ingot_tfidf_t* out);

/* Fixes symbolic input dimensions: "name=1x3x224x224", or gives them a
 * range, "name=1x1..128" (the dim is set to its largest size; range_lo,
 * range_dims and range_sym say the rest). Fails on an unknown name, a rank
 * mismatch, a fixed dimension that disagrees, or an empty range. */
ingot_status_t ingot_graph_set_input_shape(ingot_graph_t* graph, const char* spec);
/* The DIMS of such a spec: "1x3x224x224" (also 'X' or ','), "" for a scalar;
 * at most INGOT_MAX_RANK entries of dims. false when it is not one. */
bool ingot_graph_dims_parse(const char* text, int32_t* out_rank, int64_t* dims);
/* As ingot_graph_dims_parse, where each dim may be a range LO..HI (a fixed
 * dim has lo == hi). */
bool ingot_graph_dims_parse_ranges(const char* text, int32_t* out_rank, int64_t* lo, int64_t* hi);

/* Makes graph input `name` a weight holding a copy of `data` (dtype, rank,
 * dims): fixes at compile time an input that decides shapes (a Reshape
 * target, Slice bounds, Resize scales, ...) the way --input-shape fixes
 * dimensions. The input leaves graph->inputs. Fails on an unknown name or a
 * dtype or shape that disagrees with the declared one (symbolic dimensions
 * take any size). */
ingot_status_t ingot_graph_bind_input(ingot_graph_t* graph, const char* name, ingot_dtype_t dtype, int32_t rank,
                                      const int64_t* dims, const void* data);

/* ---- Passes: each takes the graph, rewrites it, reports failure. ---- */

/* Orders nodes topologically; fails on a cycle or an undefined input. */
ingot_status_t ingot_graph_sort(ingot_graph_t* graph);
/* Infers dtype and shape of every value; fails naming the node on an
 * unsupported attribute or a shape that does not fit, or on a symbolic
 * dimension that is still unresolved. Reads and checks each node's
 * attributes into node.params (ingot_graph_node_params) before inferring
 * it. Canonicalizes Conv/pool attributes:
 * kernel_shape, strides, dilations and explicit pads are always set after
 * it (auto_pad resolved, then "NOTSET"); Transpose always has perm. */
ingot_status_t ingot_graph_infer_shapes(ingot_graph_t* graph);
/* Computes the outputs of node `node`, whose present inputs are all weights
 * and whose outputs have inferred dtypes and shapes: sets out_data[k] (the
 * array has node.output_count slots, all NULL on entry) to a malloc'd block
 * holding output k, rank-major, which the graph takes over. Returns
 * INGOT_ERROR_UNSUPPORTED when it cannot evaluate this node (the node then
 * stays in the graph), any other failure aborts the pass. The compiler's
 * evaluator is ingot_lower_eval_node (lower/lower.h): it lowers the node and
 * runs the IR interpreter, so folding and the compiled code share one
 * definition of every op. */
typedef ingot_status_t (*ingot_node_eval_fn_t)(void* self, ingot_graph_t* graph, uint32_t node, void** out_data);

/* One topological walk that infers each node (as ingot_graph_infer_shapes)
 * and then folds it when its outputs are known at compile time, so later
 * nodes see them as weights: Constant nodes, Shape and Size (from the static
 * shape), nodes whose outputs are all empty, and, through `eval` (may be
 * NULL), nodes whose inputs are all weights. Outputs that are graph outputs
 * stay computed. */
ingot_status_t ingot_graph_infer_and_fold(ingot_graph_t* graph, ingot_node_eval_fn_t eval, void* eval_self);
/* MelWeightMatrix's triangle corners as ONNX's reference finds them: point
 * i of the count = num_mel_bins + 2 mel points, evenly spaced from
 * lower_edge up (mel = 2595 log10(1 + hz / 700), step (high - low) / count),
 * back in hertz, as (dft_length + 1) * hz // sample_rate (numpy's floor
 * division), truncated to int64 (INT64_MIN when not finite). `edges_f32`:
 * the edges are float32, and the mel edges and step are computed in float32
 * as numpy computes them; the rest is float64. Shape inference and lowering
 * share it. */
int64_t ingot_graph_mel_bin(int64_t dft_length, int64_t sample_rate, double lower_edge, double upper_edge,
                            bool edges_f32, int64_t count, int64_t i);
/* Control flow. ingot_graph_infer_and_fold expands each If, Loop and Scan
 * node when it reaches it (graph/control_flow.c), so that a model's main
 * graph holds none after it:
 * - If whose condition is known at compile time (a constant, an input bound
 *   with ingot_graph_bind_input, a folded value): the taken branch is
 *   inlined (its values renamed uniquely, its outputs wired to the If's),
 *   the other dropped. Otherwise it fails: "... must be known at compile
 *   time".
 * - Loop whose trip count and condition are known at compile time, each
 *   iteration (the body's condition output folded as the body is inlined):
 *   unrolled, the carried values chained from one instance of the body to
 *   the next, scan outputs stacked along a new axis 0 (Concat).
 * - Scan (opset 9 on; opset 8 with no sequence_lens) with static sequence
 *   lengths: unrolled, the scan inputs sliced (Gather) per iteration, in
 *   either direction, the scan outputs stacked along their axis.
 * - If whose condition is known only at run time: both branches inlined,
 *   their nodes guarded (node.guard) by the condition, and each output a
 *   Where(condition, then, else); the branches must give outputs of one
 *   dtype and shape (the static plan holds both). A run-time If inside a
 *   branch of another is refused.
 * - The Sequence ops work on lists known at compile time
 *   (ingot_value_t.sequence): positions and split sizes must be known at
 *   compile time; SequenceAt, SequenceLength, ConcatFromSequence and
 *   SplitToSequence become Identity, a constant, Concat (Reshape first for
 *   new_axis) and Split (Reshape after for keepdims 0). Lists pass through
 *   Identity, If and as Loop/Scan carried values; under a run-time guard two
 *   lists join member by member (Where) when their lengths agree, else the
 *   node is refused. A sequence as a graph input or output, a scan output,
 *   a member of a sequence or the input of any other op is refused.
 * Unrolling stops with INGOT_ERROR_LIMIT past INGOT_UNROLL_MAX_NODES nodes
 * added to the graph (all expansions of one pass together) or
 * INGOT_UNROLL_MAX_TRIPS iterations of one Loop. */
#define INGOT_UNROLL_MAX_NODES 200000u
#define INGOT_UNROLL_MAX_TRIPS 100000u

/* Keeps node.guard only where skipping the node when its condition says so
 * is safe: each of its outputs is read only by nodes under the same guard,
 * or by a Where on that condition that reads it on the side the guard
 * selects, and is no graph output; other guards are cleared (the node then
 * always runs). Guards on a condition that became a weight are cleared.
 * Runs last in ingot_graph_optimize_with. */
ingot_status_t ingot_graph_settle_guards(ingot_graph_t* graph);

/* Whether a Dropout node passes its input through (and keeps every element):
 * no training_mode or a constant false one, or a constant ratio of 0. */
bool ingot_graph_dropout_is_identity(const ingot_graph_t* graph, const ingot_node_t* node);
/* A graph output that is a weight (an initializer or a Constant node listed
 * as an output, an input bound with --const) becomes the output of an
 * Identity that copies a weight holding its data, under a new name: the
 * bundle's outputs are computed, so a run writes them like any other. Other
 * readers of the value read the weight. Runs first in optimize. */
ingot_status_t ingot_graph_copy_constant_outputs(ingot_graph_t* graph);
/* Removes Identity/Dropout (inference), nodes whose outputs nobody uses, and
 * weights nobody reads. Compacts the graph, so value and node ids change. */
ingot_status_t ingot_graph_eliminate_dead_code(ingot_graph_t* graph);
/* Adds a run-time check (ingot_graph_t.checks): `value`, a bool of one
 * element, fails the run with `message` (copied) when true. */
void ingot_graph_add_check(ingot_graph_t* graph, uint32_t value, const char* message);
/* Folds BatchNormalization into the Conv that feeds it (when the conv output
 * has no other consumer), rewriting the conv's weights and bias. Only the
 * inference form (training_mode=0, one output): training mode normalizes with
 * the batch's statistics, known only at run time. */
ingot_status_t ingot_graph_fold_batchnorm(ingot_graph_t* graph);
/* Float16 and bfloat16 computed in float32: half weights converted, half
 * graph inputs and outputs (by their declared types) kept with a Cast at the
 * edge, Casts to half inside the graph made casts to float32
 * (graph/passes_dtype.c). With graph->half_arith, float16 Add, Sub, Mul,
 * Div, Min, Max, Neg, Abs, Sqrt and Relu whose inputs are float16 stay
 * float16 (rounded after each op, as ONNX Runtime's kernels), with Casts
 * where they meet float32. Before inference. */
ingot_status_t ingot_graph_compute_half_in_f32(ingot_graph_t* graph);
/* Weight-only compression (graph/passes_weights.c): the float32 constant
 * weight (input 1) of every Conv, ConvBlocked, MatMul (2-D B) and Gemm,
 * and the 2-D data (input 0) of a Gather along axis 0 (an embedding table),
 * that alone reads it and has INGOT_COMPRESS_MIN_ELEMENTS elements or more
 * is stored as `dtype`: float16 or bfloat16 (rounded to nearest even), or
 * int8 symmetric per output channel with float32 scales (a new weight at
 * node.weight_scale_input). The kernels convert on load. Last, after
 * ingot_graph_pack_weights (it reads the final layouts); F32 (or INVALID):
 * nothing. Other dtypes: INVALID_ARGUMENT. */
#define INGOT_COMPRESS_MIN_ELEMENTS 1024
ingot_status_t ingot_graph_compress_weights(ingot_graph_t* graph, ingot_dtype_t dtype);
/* float32 to float16 / bfloat16 bits, rounded to nearest even (NaN kept,
 * float16 overflow to infinity). */
/* The input a compressed weight of `node` sits at: 0 for a Gather, else 1. */
uint32_t ingot_node_compressed_input(const ingot_node_t* node);
uint16_t ingot_f32_to_f16_bits(float f);
uint16_t ingot_f32_to_bf16_bits(float f);
/* Symmetric int8 quantization per channel, element i in channel
 * (i / outer_size) * inner + i % inner of (numel / outer_size) * inner:
 * out_scales[c] = max |w| over c / 127, out_q[i] = clamp(round_half_even(
 * w[i] / scale), -127, 127) (0 where the scale is 0). */
void ingot_quantize_i8_channels(const float* w, int64_t numel, int64_t outer_size, int64_t inner, int8_t* out_q,
                                float* out_scales);
/* Fuses Add(conv_out, r) into the Conv (r becomes its input 3, named by
 * epilogue.residual_input) when the conv output has no other consumer, r has
 * the output's shape and dtype and is computed before the conv, and the conv has no activation yet, so
 * that a following Relu then fuses too: y = act(conv(x) + bias + r). The
 * same for a float32 MatMul (input 3 too, after a fused bias at 2):
 * y = act(scale * A x B + bias + r), a transformer's residual connection;
 * the pipeline runs it again after the MatMul bias fusion. */
ingot_status_t ingot_graph_fuse_residual_add(ingot_graph_t* graph);
/* Fuses Add(matmul_out, bias) into a float32 MatMul with a 2-D (or packed)
 * B when the MatMul output has no other consumer and bias is a weight or
 * graph input whose elements run along the output's last axis only (dims of
 * 1 before it): bias becomes the MatMul's input 2 (epilogue.bias_input), so
 * the product's accumulators start at it and the Add's pass over memory
 * goes (a transformer's projections). */
ingot_status_t ingot_graph_fuse_matmul_bias(ingot_graph_t* graph);
/* Fuses Mul(matmul_out, c) or Div(matmul_out, c), c a constant float32
 * scalar, into a float MatMul whose output has no other consumer and no
 * epilogue yet (epilogue.scale = c or 1 / c): the product is scaled in the
 * MatMul's last pass, and a bias Add after it still fuses (attention's
 * scores, Q x K^T / sqrt(d) + mask, in one kernel). */
ingot_status_t ingot_graph_fuse_matmul_scale(ingot_graph_t* graph);
/* Replaces the erf form of GELU that exporters write, 0.5 * x * (1 +
 * erf(x / sqrt(2))) (Div by sqrt(2) or Mul by its inverse; the products in
 * either order), by one Gelu node (approximate none) when every
 * intermediate has that chain as its only reader: five passes over memory
 * become one. */
ingot_status_t ingot_graph_fuse_gelu(ingot_graph_t* graph);
/* Replaces the LayerNorm that exporters write for opsets before 17,
 * (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) * gamma [+ beta] with
 * the means over the last axis (ReduceMean keepdims, Sub, Pow 2, ReduceMean,
 * Add eps, Sqrt, Div, Mul, Add; the products and sums in either order), by
 * one LayerNormalization node (axis -1) when every intermediate has that
 * chain as its only reader: nine kernels become one two-pass row kernel. */
ingot_status_t ingot_graph_fuse_layernorm(ingot_graph_t* graph);
/* Fuses Relu / Clip(constant bounds) / Gelu into a preceding Conv, Gemm or
 * float MatMul whose output has no other consumer (sets
 * node.epilogue.activation and its bounds). */
ingot_status_t ingot_graph_fuse_activations(ingot_graph_t* graph);
/* Splits a QLinearConv / QLinearMatMul of at least 2^16 multiply-adds into
 * ConvInteger / MatMulInteger (int32) and a Requantize node (domain
 * ai.ingot: bias, requantization), so the contraction gets the contraction
 * schedules (graph/passes_quant.c). Needs inferred shapes; the new values
 * are inferred by a later ingot_graph_infer_shapes. */
ingot_status_t ingot_graph_split_qlinear(ingot_graph_t* graph);
/* Rewrites DequantizeLinear -> Conv / MatMul / Gemm [-> Relu / Clip] ->
 * QuantizeLinear, with 8-bit activations and weights, int32 bias, scales
 * per tensor (w's also per output channel), into QLinearConv,
 * QLinearMatMul or QGemm over the quantized tensors, where the integer
 * kernel computes what the float graph does up to ONNX's rounding (the
 * patterns taken and refused: graph/passes_quant.c). Structural: runs
 * before inference and constant folding (folding would dequantize the
 * weights); needs sorted nodes. */
ingot_status_t ingot_graph_fuse_qdq(ingot_graph_t* graph);
/* Moves a Conv's non-zero pads into a Pad node (constant 0; for ConvInteger
 * and QLinearConv x's zero point) that produces a
 * padded intermediate, and sets the conv's pads to 0, so the conv reads no
 * out-of-bounds taps (graph/passes_layout.c). Skips convs whose padded input
 * would exceed 64 MiB or whose shape is not known. Needs inferred shapes; the
 * new values are inferred by a later ingot_graph_infer_shapes. */
ingot_status_t ingot_graph_pad_conv_inputs(ingot_graph_t* graph);
/* Settles every node's layout (the chooser's, else the defaults; see
 * ingot_node_layout_t), then packs constant float32 weights where the
 * layout says so in panels of B output channels and sets
 * node.weight_block = B (the last panel zero-padded): Conv
 * with group 1 [K, C, k..] -> [K/B, C, k.., B]; MatMul with a 2-D B
 * [K, N] -> [N/B, K, B]; Gemm B (either transB) -> [N/B, K, B], transB 0.
 * A kernel then reads the B outputs of one reduction step as one contiguous
 * vector, and each panel as one stream (graph/passes_layout.c). A
 * ConvInteger packed as dot4 words (node.weight_dot4_channels) reads its
 * input through an ai.ingot Dot4Words node when graph->dot4_words
 * (node.x_dot4_words; one such node per input value). A DynamicQuantizeLSTM's
 * constant W and R are re-laid as node.rnn_rows says. Needs inferred
 * shapes. */
ingot_status_t ingot_graph_pack_weights(ingot_graph_t* graph);
/* Blocked activation layouts (graph/passes_layout.c). With
 * graph->activation_block = B (the caller's choice from the target: the
 * float32 lanes of a vector), regions of 2-D float32 convolutions and the
 * ops between them keep their activations as [N, ceil(C/B), H, W, B]
 * (NCHW<B>c; channels past C are zero), so a kernel loads and stores whole
 * vectors of channels:
 *   Conv (group 1, or depthwise with a blocked input; no pads left, as
 *     ingot_graph_pad_conv_inputs leaves them) -> ConvBlocked (ai.ingot),
 *     the weight re-laid once: [OCb, ICb, KH, KW, B, B] (a blocked input),
 *     [OCb, C, KH, KW, B] (an NCHW input: the entry of a region, such as an
 *     image's 3-channel stem), [OCb, KH, KW, B] (depthwise); bias padded;
 *   Relu, Clip, LeakyRelu, Sigmoid, Tanh, HardSigmoid, HardSwish: unchanged
 *     (lane-wise; they keep finite padding lanes finite);
 *   Add, Sub, Mul, Div, Max, Min of a blocked tensor and a blocked one of
 *     its shape or of [N, C, 1, 1] (an SE scale), a scalar, or a constant
 *     per channel (re-laid [1, C/B, 1, 1, B]); Div only by constants, none 0;
 *   Pad (constant 0, spatial axes) -> the same over the 5-D tensor;
 *   MaxPool, AveragePool (2-D) -> 3-D pools with a window of 1 along B, and
 *     GlobalAveragePool / GlobalMaxPool -> such pools over all of H and W;
 *   Resize (opset 11 inputs, constant scales or sizes of H and W only,
 *     nearest or linear, a coordinate mode that maps the lanes onto
 *     themselves) -> the same over the 5-D tensor;
 *   Concat along channels of parts whose channels are multiples of B.
 * A value read by anything else, or a graph output, is converted back once
 * by a FromBlocked node (ai.ingot) at the region's edge. A conv on an NCHW
 * input starts a region only when a consumer of its output would join it
 * and its channels fill their blocks to 8/9 or more.
 * Needs inferred shapes; sort and infer again after it. */
ingot_status_t ingot_graph_block_activations(ingot_graph_t* graph);
/* Elementwise chains fused into one loop (graph/passes_fuse_elementwise.c):
 * a tree of float32 Add, Sub, Mul, Div, Max, Min, Relu, Clip (constant
 * bounds), Sigmoid, Tanh, HardSigmoid, HardSwish and LeakyRelu nodes whose
 * inner results are read once, by the tree, and have the tree output's
 * shape becomes one FusedElementwise node (ai.ingot) over the tree's leaves
 * (read with broadcasting), its steps in attributes "program" and
 * "params"; also per-tensor QuantizeLinear / DequantizeLinear of uint8 and
 * int8 with constant scales, their dtypes in attribute "qtypes" (with
 * INGOT_FUSED_Q_RECIPROCAL where a QuantizeLinear step may multiply by
 * 1/scale: equal to the division for every input it can get). After the
 * producers' epilogue fusions; sorts the graph. */
ingot_status_t ingot_graph_fuse_elementwise(ingot_graph_t* graph);
#define INGOT_FUSED_Q_RECIPROCAL 0x100

/* The layout options of `node` (its weight read in its ONNX layout, packed
 * or not). Nodes without choices get counts of 0 and pointwise false. */
void ingot_node_layout_options(const ingot_graph_t* graph, const ingot_node_t* node,
                               ingot_node_layout_options_t* out_options);
/* The layout a node is lowered with: node->layout when chosen, else the
 * defaults of its options. */
void ingot_node_layout_resolve(const ingot_graph_t* graph, const ingot_node_t* node, ingot_node_layout_t* out_layout);

/* Chooses the layout of node `node` from its options (the caller's
 * policy: a tuning log per kernel and target). Fails with a message naming
 * the node when no choice can be made. */
typedef struct ingot_layout_chooser_t {
  ingot_status_t (*choose)(struct ingot_layout_chooser_t* self, const ingot_graph_t* graph, uint32_t node,
                           const ingot_node_layout_options_t* options, ingot_node_layout_t* out_layout);
} ingot_layout_chooser_t;
/* Sets (NULL: clears) the chooser ingot_graph_pack_weights asks for every
 * node with layout options before packing; the graph does not own it. */
void ingot_graph_set_layout_chooser(ingot_graph_t* graph, ingot_layout_chooser_t* chooser);
/* Sets graph->activation_block (0: none; else 2..64). */
void ingot_graph_set_activation_block(ingot_graph_t* graph, uint32_t block);
/* Sets graph->dot4_words. */
void ingot_graph_set_dot4_words(ingot_graph_t* graph, bool on);
/* Sets graph->half_arith. */
void ingot_graph_set_half_arith(ingot_graph_t* graph, bool on);

/* Channels a dot4 word of `node` holds: 2 (node.dot_pairs) or 4. */
static inline int64_t ingot_node_dot_channels(const ingot_node_t* node) { return node->dot_pairs ? 2 : 4; }

/* The narrowest output row that a dot4 ConvInteger over words computes along
 * the row (vectors of output positions, each weight word broadcast) rather
 * than in the channel form (vectors of output channels, each input word
 * broadcast): with VNNI (the loop IR's dot4) and without it (dot2, dot4s:
 * 8 int32 lanes on AVX2, the row must be wider). lower/lower_conv.c has the
 * whole rule and the measurements; ingot_graph_pack_weights reads it to give
 * channel-form 1x1 convs words of the last axis (node.words_last). */
#define INGOT_DOT4_ROW_MIN_WIDTH 16
#define INGOT_DOT2_ROW_MIN_WIDTH 32

/* The ONNX-layout shape of node input `input` (`value`): `value` itself
 * unless it is a packed weight (node.weight_block, node.rnn_rows), whose
 * logical shape is written to *scratch and returned. NULL when the packed shape is malformed. */
const ingot_value_t* ingot_node_logical_input(const ingot_node_t* node, uint32_t input, const ingot_value_t* value,
                                              ingot_value_t* scratch);
/* A constant-zero Pad of spatial axes whose input is made by a Conv and read
 * by nothing else is absorbed: the conv writes its output into the padded
 * tensor (node.epilogue.output_padded) and zeroes the border itself, so the copy the
 * Pad made goes. Needs inferred shapes (graph/passes_layout.c). */
ingot_status_t ingot_graph_pad_into_producers(ingot_graph_t* graph);
/* Fuses each Requantize (axis 1) into the ConvInteger whose int32 sums it
 * alone reads (epilogue.requant_input): one kernel, whose schedule stores
 * the requantized bytes straight from the accumulators. Run after
 * ingot_graph_pack_weights. */
ingot_status_t ingot_graph_fuse_requantize(ingot_graph_t* graph);

/* For each requantizing kernel whose scales are weights (a ConvInteger with
 * a fused requantization, QLinearConv, QLinearMatMul): the multiplier
 * m[k] = x_scale * w_scale[k] / y_scale computed once, in float32 in the
 * kernel's own order, becomes its w_scale and 1 its x and y scales, which
 * lowering leaves out (x * 1 and x / 1 are exact): the same results without
 * a vector division per output vector in the kernel's epilogue. */
ingot_status_t ingot_graph_fold_requant_multipliers(ingot_graph_t* graph);
/* Drops dead nodes and values no node or graph output references. */
void ingot_graph_compact(ingot_graph_t* graph);

/* Runs the standard pipeline: sort, half in float32, QDQ patterns into
 * QLinear nodes, DCE, infer-and-fold (with `eval`), DCE,
 * fold batchnorm, fuse residual adds, GELU chains, MatMul biases and
 * activations, pad conv inputs, DCE,
 * sort, infer again, blocked activations (then sort and infer), elementwise
 * chains (then infer), pads into producers, pack weights, DCE, compact,
 * settle guards. */
ingot_status_t ingot_graph_optimize_with(ingot_graph_t* graph, ingot_node_eval_fn_t eval, void* eval_self);
/* ingot_graph_optimize_with in two halves: begin ends after the second DCE
 * (every shape inferred and folded, nothing fused yet), end does the rest.
 * Ranged inputs are settled between them (ingot_graph_settle_ranges). */
ingot_status_t ingot_graph_optimize_begin(ingot_graph_t* graph, ingot_node_eval_fn_t eval, void* eval_self);
ingot_status_t ingot_graph_optimize_end(ingot_graph_t* graph);
/* Ranged input dims (graph/ranges.c). `graph` has every ranged dim at its
 * largest size, `probe` is the same model through ingot_graph_optimize_begin
 * with each ranged dim k (range_sym k) at ingot_graph_range_probe(graph, k).
 * Comparing the two finds which dims of every value follow which range;
 * the graph is refused when a dim follows one in another way than equal to
 * it or through a window's size formula (sizes 2n, n-1), when a value
 * computed from a ranged size is used as data, or when a node reads a
 * ranged dim in a way that a run over the largest size cannot give the
 * right first entries (a window whose pads change with the size, a
 * LayerNormalization over it, a Concat along it, ...). Windows along a
 * ranged image dim read it masked to their pads' value. What it
 * accepts runs over the largest size: reductions along a ranged dim
 * (MatMul's inner dim, Softmax, ReduceSum/Max/Min, ArgMax/ArgMin) read their
 * input through a mask (Where) that puts the reduction's identity past the
 * run's size; a float32 ReduceMean becomes that masked sum divided by the
 * run's count;
 * graph outputs with ranged dims get runtime_shape (from the inputs'
 * range_shape tensors) and runtime_padded. */
ingot_status_t ingot_graph_settle_ranges(ingot_graph_t* graph, const ingot_graph_t* probe);
/* The size at which `probe` sees range symbol k (1-based): below the
 * largest size by (2k - 1) << e, with the largest e <= 6 that stays within
 * the range, else above it by (2k - 1) << 6; every symbol moves by its own
 * step, and a dim after windows of stride up to 64 still moves. */
int64_t ingot_graph_range_probe(const ingot_graph_t* graph, uint32_t k);
/* Sets each ranged input dim of `graph` to its probe size. */
void ingot_graph_probe_ranges(ingot_graph_t* graph);
/* ingot_graph_optimize_with without an evaluator: only Constant, Shape, Size
 * and empty outputs are folded. */
ingot_status_t ingot_graph_optimize(ingot_graph_t* graph);

/* ---- Parameters of data-movement ops, resolved from their attributes and
 * constant inputs (opset differences included). Shape inference and lowering
 * both read them, so each op's parameters have one definition. Each fails
 * naming the node when a parameter is invalid, or is not known at compile
 * time where the output shape depends on it (INGOT_ERROR_UNSUPPORTED). The
 * node's data inputs must have inferred shapes. ---- */

/* The [start, end) range of dimensions a Shape node reports for an input of
 * rank `rank` (attributes start/end, negative from the back, clamped). */
void ingot_graph_shape_range(const ingot_node_t* node, int32_t rank, int64_t* out_start, int64_t* out_end);

typedef struct ingot_slice_params_t {
  int32_t rank;
  int64_t start[INGOT_MAX_RANK]; /* input index of output index 0, per dim */
  int64_t step[INGOT_MAX_RANK];  /* never 0 */
  int64_t count[INGOT_MAX_RANK]; /* output extent (may be 0) */
} ingot_slice_params_t;
ingot_status_t ingot_graph_slice_params(const ingot_graph_t* graph, uint32_t node, ingot_slice_params_t* out);

typedef enum ingot_pad_mode_t {
  INGOT_PAD_CONSTANT = 0,
  INGOT_PAD_REFLECT = 1,
  INGOT_PAD_EDGE = 2,
  INGOT_PAD_WRAP = 3,
} ingot_pad_mode_t;

typedef struct ingot_pad_params_t {
  int32_t rank;
  ingot_pad_mode_t mode;
  int64_t begin[INGOT_MAX_RANK], end[INGOT_MAX_RANK]; /* may be < 0 (crop) in constant mode */
  double value;      /* the pad value when it is an attribute (opset < 11) or absent */
  uint32_t value_in; /* the constant_value input (read at run time), or INGOT_NO_VALUE */
} ingot_pad_params_t;
ingot_status_t ingot_graph_pad_params(const ingot_graph_t* graph, uint32_t node, ingot_pad_params_t* out);

#define INGOT_MAX_SPLIT 64
typedef struct ingot_split_params_t {
  int32_t axis;
  uint32_t count; /* = the node's output count */
  int64_t sizes[INGOT_MAX_SPLIT];
} ingot_split_params_t;
ingot_status_t ingot_graph_split_params(const ingot_graph_t* graph, uint32_t node, ingot_split_params_t* out);

typedef enum ingot_resize_mode_t {
  INGOT_RESIZE_NEAREST = 0,
  INGOT_RESIZE_LINEAR = 1,
  INGOT_RESIZE_CUBIC = 2,
} ingot_resize_mode_t;

typedef enum ingot_resize_coord_t {
  INGOT_RESIZE_HALF_PIXEL = 0,
  INGOT_RESIZE_HALF_PIXEL_SYMMETRIC,
  INGOT_RESIZE_PYTORCH_HALF_PIXEL,
  INGOT_RESIZE_ALIGN_CORNERS,
  INGOT_RESIZE_ASYMMETRIC,
  INGOT_RESIZE_TF_HALF_PIXEL_FOR_NN,
  INGOT_RESIZE_TF_CROP_AND_RESIZE,
} ingot_resize_coord_t;

typedef enum ingot_resize_nearest_t {
  INGOT_RESIZE_ROUND_PREFER_FLOOR = 0,
  INGOT_RESIZE_ROUND_PREFER_CEIL,
  INGOT_RESIZE_FLOOR,
  INGOT_RESIZE_CEIL,
  INGOT_RESIZE_SIMPLE, /* Resize-10 / Upsample: floor, or ceil when downsampling */
} ingot_resize_nearest_t;

/* Resize (all opsets) and Upsample. Per axis: the output index x maps to the
 * input coordinate given by `coord` with `scale`; `identity` axes map x to x.
 * `antialias` (Resize-18, linear and cubic only): the filter is stretched by
 * 1 / min(scale, 1) and its weights normalized to sum 1. */
typedef struct ingot_resize_params_t {
  int32_t rank;
  ingot_resize_mode_t mode;
  ingot_resize_coord_t coord;
  ingot_resize_nearest_t nearest;
  double cubic_a;
  bool exclude_outside;
  bool antialias;
  double extrapolation; /* tf_crop_and_resize, outside the input */
  int64_t in[INGOT_MAX_RANK], out[INGOT_MAX_RANK];
  double scale[INGOT_MAX_RANK];
  double roi_start[INGOT_MAX_RANK], roi_end[INGOT_MAX_RANK];
  bool identity[INGOT_MAX_RANK];
} ingot_resize_params_t;
ingot_status_t ingot_graph_resize_params(const ingot_graph_t* graph, uint32_t node, ingot_resize_params_t* out);

/* Reads and checks the attributes of node `node` (and, where they decide the
 * parameters, its inputs' shapes, which must be inferred) into *out, as
 * shape inference does before it stores them in node.params: the one
 * definition of each op's parameters. Ops without parameters give kind
 * INGOT_PARAMS_NONE. Fails naming the node and op on a bad attribute. */
ingot_status_t ingot_graph_node_params(const ingot_graph_t* graph, uint32_t node, ingot_op_params_t* out);

/* Writes a readable listing (one node a line, with shapes) to sb. */
void ingot_graph_print(const ingot_graph_t* graph, ingot_strbuf_t* sb);

#endif /* INGOT_GRAPH_H_ */
