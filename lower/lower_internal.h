/* Private to lower/: the per-node lowering context and the helpers that every
 * op family shares (arguments, perfect nests, broadcasting, padded windows,
 * fused activations, workload strings). Not part of the stage interface. */
#ifndef INGOT_LOWER_INTERNAL_H_
#define INGOT_LOWER_INTERNAL_H_

#include "lower/lower.h"

/* Everything needed while one node becomes one kernel. The lowering function
 * of an op adds the arguments (inputs first, then outputs), emits stages in
 * body order, and sets op_class and workload. A view op may instead set
 * `no_kernel` after recording an alias. */
typedef struct lower_ctx_t {
  const ingot_graph_t* graph;
  const ingot_node_t* node;
  uint32_t node_id;
  /* The node's typed parameters (kind ingot_op_params_kind(node->op)):
   * &node->params as shape inference set them, or params_local parsed by
   * lower_node_into for a graph whose shapes were set by hand. */
  const ingot_op_params_t* params;
  ingot_op_params_t params_local;
  ingot_arena_t* arena; /* the lowered result's arena */
  uint32_t* alias_of;   /* per graph value, see ingot_lowered_t */
  ingot_ir_func_t* f;
  INGOT_VEC(uint32_t) args; /* graph value id per func buffer */
  INGOT_VEC(ingot_stage_t) stages;
  INGOT_VEC(ingot_ir_stmt_t*) body;
  ingot_op_class_t op_class;
  const char* workload; /* arena string */
  bool no_kernel;
} lower_ctx_t;

/* A set of loops: ids, extents and the VAR expressions, outer -> inner. */
typedef struct lower_loops_t {
  uint32_t count;
  uint32_t vars[INGOT_MAX_STAGE_AXES];
  int64_t extents[INGOT_MAX_STAGE_AXES];
  ingot_ir_expr_t* idx[INGOT_MAX_STAGE_AXES];
} lower_loops_t;

/* ---- errors and checks ---- */
/* Fails with "node '<name>' (<Op>): <message>". */
ingot_status_t lower_fail(const lower_ctx_t* ctx, ingot_status_t code, const char* fmt, ...) INGOT_PRINTF(3, 4);
const ingot_value_t* lower_value(const lower_ctx_t* ctx, uint32_t value);
/* The node's input `i`, or INGOT_NO_VALUE when absent. */
uint32_t lower_input(const lower_ctx_t* ctx, uint32_t i);
/* Checks that `value` exists with a fully known, non-empty shape and a dtype
 * the code targets have (float16 is refused), and (when f32_only) that it is
 * float32. */
ingot_status_t lower_check_value(const lower_ctx_t* ctx, uint32_t value, bool f32_only);
/* Dtype sets for lower_check_dtype: a bit per ingot_dtype_t. */
#define LOWER_DT(t) (1u << (unsigned)(t))
#define LOWER_DT_FLOAT (LOWER_DT(INGOT_DTYPE_F32) | LOWER_DT(INGOT_DTYPE_F64))
#define LOWER_DT_INT                                                                                             \
  (LOWER_DT(INGOT_DTYPE_I64) | LOWER_DT(INGOT_DTYPE_I32) | LOWER_DT(INGOT_DTYPE_I8) | LOWER_DT(INGOT_DTYPE_U8) | \
   LOWER_DT(INGOT_DTYPE_I16) | LOWER_DT(INGOT_DTYPE_U16) | LOWER_DT(INGOT_DTYPE_U32) | LOWER_DT(INGOT_DTYPE_U64))
#define LOWER_DT_SIGNED                                                                                 \
  (LOWER_DT_FLOAT | LOWER_DT(INGOT_DTYPE_I64) | LOWER_DT(INGOT_DTYPE_I32) | LOWER_DT(INGOT_DTYPE_I8) | \
   LOWER_DT(INGOT_DTYPE_I16))
#define LOWER_DT_NUMERIC (LOWER_DT_FLOAT | LOWER_DT_INT)
#define LOWER_DT_ANY (LOWER_DT_NUMERIC | LOWER_DT(INGOT_DTYPE_BOOL))
/* float16 and bfloat16: storage dtypes (loaded and stored as their bits;
 * Cast converts them; the graph computes them in float32, graph/passes.c) */
#define LOWER_DT_HALF (LOWER_DT(INGOT_DTYPE_F16) | LOWER_DT(INGOT_DTYPE_BF16))
/* float16 where the loop IR computes it (lower/ir_ops.def, HALF): Add, Sub,
 * Mul, Div, Min, Max, Neg, Abs, Sqrt and Relu take it; the graph keeps
 * float16 there only when every target computes it natively
 * (graph->half_arith, graph/passes_dtype.c). */
#define LOWER_DT_F16_ARITH LOWER_DT(INGOT_DTYPE_F16)
/* The float8s and int4 / uint4: their kernels' buffers hold them as uint8
 * (the float8 bits; uint4) and int8 (int4), one a byte (lower_storage_dtype).
 * Only Cast, CastLike, QuantizeLinear, DequantizeLinear, Transpose and the
 * views (Identity, Reshape, Flatten, Squeeze, Unsqueeze) read or write them
 * (lower_check_value refuses them elsewhere); the conversions are IR
 * expressions (lower_f8.c). */
#define LOWER_DT_F8                                                                  \
  (LOWER_DT(INGOT_DTYPE_F8E4M3FN) | LOWER_DT(INGOT_DTYPE_F8E4M3FNUZ) |               \
   LOWER_DT(INGOT_DTYPE_F8E5M2) | LOWER_DT(INGOT_DTYPE_F8E5M2FNUZ))
#define LOWER_DT_INT4 (LOWER_DT(INGOT_DTYPE_I4) | LOWER_DT(INGOT_DTYPE_U4))
#define LOWER_DT_NARROW (LOWER_DT_F8 | LOWER_DT_INT4)
/* The dtype a kernel buffer holds a value of dtype t in: t, but uint8 for a
 * float8 or uint4 and int8 for int4. */
ingot_dtype_t lower_storage_dtype(ingot_dtype_t t);
/* float8 bits (an integer expression of 8 bits) -> their value as float32,
 * exactly (NaN and the infinities kept, -0 kept). */
ingot_ir_expr_t* lower_f8_decode(lower_ctx_t* ctx, ingot_dtype_t f8, ingot_ir_expr_t* bits);
/* QuantizeLinear's saturate(round(xf / scale) + zpf) as integer dtype t
 * (zpf may be NULL); xf, scale, zpf float32 (lower_quant.c). */
ingot_ir_expr_t* lower_quantize_expr(lower_ctx_t* ctx, ingot_dtype_t t, ingot_ir_expr_t* xf, ingot_ir_expr_t* scale,
                                     ingot_ir_expr_t* zpf);
/* The same of an already scaled float32 value: saturate(round(scaled) + zpf). */
ingot_ir_expr_t* lower_quantize_scaled(lower_ctx_t* ctx, ingot_dtype_t t, ingot_ir_expr_t* scaled,
                                       ingot_ir_expr_t* zpf);
/* A float32 or float64 expression -> float8 bits (uint8), rounded to nearest,
 * ties to even, as ONNX's Cast: with `saturate` a magnitude past the largest
 * finite value gives that value (the infinities too), without it the
 * format's infinity (float8e5m2) or NaN (the others). NaN gives NaN. */
ingot_ir_expr_t* lower_f8_encode(lower_ctx_t* ctx, ingot_dtype_t f8, ingot_ir_expr_t* x, bool saturate);
/* Fails unless the dtype of `value` is in `allowed` (a LOWER_DT_* set); the
 * message lists the allowed dtypes. */
ingot_status_t lower_check_dtype(const lower_ctx_t* ctx, uint32_t value, uint32_t allowed);
/* lower_check_value (shape) and lower_check_dtype in one call. */
ingot_status_t lower_check_value_dt(const lower_ctx_t* ctx, uint32_t value, uint32_t allowed);
bool lower_dtype_is_float(ingot_dtype_t t);
bool lower_dtype_is_int(ingot_dtype_t t); /* the integers of 8 to 64 bits, signed and unsigned (not BOOL) */
/* Checks that `value` broadcasts (numpy rules, unidirectionally) to `out`. */
ingot_status_t lower_check_broadcast(const lower_ctx_t* ctx, uint32_t value, uint32_t out);
/* Fails when the node carries a fused activation that this op cannot apply. */
ingot_status_t lower_refuse_activation(const lower_ctx_t* ctx);

/* ---- kernel arguments ---- */
/* Appends a func buffer for graph value `value` (its dtype and shape) and
 * records it as the next kernel argument. An input already added returns its
 * existing buffer (x + x reads one argument). Add all inputs before outputs. */
uint32_t lower_add_input(lower_ctx_t* ctx, uint32_t value, const char* name);

/* The float32 weight operand of a contraction (Conv, ConvBlocked, MatMul,
 * Gemm: node input 1) or a Gather's table (input 0; see
 * ingot_node_compressed_input), stored as float32 or compressed by
 * ingot_graph_compress_weights (float16, bfloat16, or int8 with the
 * node's per-output-channel scales at node.weight_scale_input). */
typedef struct lower_weight_t {
  uint32_t buffer;     /* the weight, in its stored dtype */
  uint32_t scale;      /* int8: the float32 scales; UINT32_MAX: none */
  ingot_dtype_t dtype; /* the stored dtype */
} lower_weight_t;
/* lower_check_value for the weight operand `value`: float32,
 * or a weight stored in float16, bfloat16 or int8 (with its scales). */
ingot_status_t lower_check_weight(const lower_ctx_t* ctx, uint32_t value);
/* Adds the weight operand (and its scales) as inputs. */
lower_weight_t lower_add_weight(lower_ctx_t* ctx, uint32_t value, const char* name);
/* The weight element at flat `index` as float32: a plain load, or the
 * stored value cast to float32 (times scale[channel] for int8). */
ingot_ir_expr_t* lower_weight_load(lower_ctx_t* ctx, const lower_weight_t* w, ingot_ir_expr_t* index,
                                   ingot_ir_expr_t* channel);
/* What a workload key adds for a compressed weight: "" (float32), else
 * " w=float16" and the like, so that a tuning record of one kernel is never
 * applied to the other. */
const char* lower_weight_tag(lower_ctx_t* ctx, const lower_weight_t* w);
uint32_t lower_add_output(lower_ctx_t* ctx, uint32_t value, const char* name);
/* The same for a view of the value's bytes as `dtype`, which must be as
 * wide as the value's (BitCast reads and writes its tensors as integers of
 * their width). */
uint32_t lower_add_arg_as(lower_ctx_t* ctx, uint32_t value, const char* name, bool output, ingot_dtype_t dtype);
/* An 8-bit input whose last axis is a multiple of 4, read as the int32 words
 * of 4 consecutive elements (the operands of the loop IR's dot4): its last
 * axis a quarter as long. */
uint32_t lower_add_words_input(lower_ctx_t* ctx, uint32_t value, const char* name);

/* ---- loops and stages ---- */
/* ingot_ir_add_var, but the name also avoids every buffer name (loop vars and
 * parameters share one C scope in generated code). Add buffers first. */
uint32_t lower_add_var(lower_ctx_t* ctx, const char* name, ingot_ir_var_kind_t kind, ingot_dtype_t dtype);
/* New loop variables with the given extents and names. */
void lower_loops_make(lower_ctx_t* ctx, lower_loops_t* out, uint32_t count, const int64_t* extents,
                      const char* const* names);
/* Loops over every dim of a shape, named n/c/h/w, i/j, ... by rank. */
void lower_loops_over(lower_ctx_t* ctx, lower_loops_t* out, int32_t rank, const int64_t* dims);
/* Wraps `inner` in the reduce loops (if any) and then the spatial loops, appends
 * it to the kernel body and records the stage. A rank-0 spatial set gets one
 * loop of extent 1 so that every stage has an outermost spatial loop. */
void lower_emit_stage(lower_ctx_t* ctx, ingot_stage_role_t role, const lower_loops_t* spatial,
                      const lower_loops_t* reduce, ingot_ir_stmt_t* inner);
/* What an UPDATE adds to: `init` on the first step of the reduction (every
 * reduce loop at 0), the output y[idx] on the others:
 *   select(r0 == 0 && r1 == 0 .., init, y[idx])
 * so that no INIT stage writes y first; a register tile then starts its
 * accumulators at `init` (ingot_schedule_accumulate). */
ingot_ir_expr_t* lower_update_start(lower_ctx_t* ctx, const lower_loops_t* reduce, uint32_t buffer,
                                    ingot_ir_expr_t* index, ingot_ir_expr_t* init);
/* After an UPDATE over whole panels (spatial loop kb_pos over `panels`
 * panels, loop ki_pos over the panel's width), emits the same update for the
 * last, partial panel: kb fixed to `panels`, ki over `width` outputs, fresh
 * loops otherwise (a weight packed in panels whose outputs are not a whole
 * number of panels). `store` is the UPDATE's statement; the tile axis shifts
 * with the dropped kb loop. */
void lower_emit_remainder(lower_ctx_t* ctx, const lower_loops_t* spatial, const lower_loops_t* reduce,
                          ingot_ir_stmt_t* store, uint32_t kb_pos, uint32_t ki_pos, int64_t panels, int64_t width);
/* Appends a stage that the op built itself (role OTHER): `loop` is its
 * outermost (spatial) loop statement, whose var is recorded. */
void lower_emit_other(lower_ctx_t* ctx, ingot_ir_stmt_t* loop);
/* Records loop variable `var`, inside the OTHER stage just emitted, as one
 * whose iterations are independent (stage.vector_loops). */
void lower_mark_vector_loop(lower_ctx_t* ctx, uint32_t var);

/* ---- row reductions ---- */
/* One row's terms: at(t, j) is the term at element j (0 <= j < len). An op
 * embeds this as the first member of its own struct to carry more. */
typedef struct lower_row_term_t {
  ingot_ir_expr_t* (*at)(const struct lower_row_term_t* t, ingot_ir_expr_t* j);
  int64_t len;
} lower_row_term_t;
typedef enum lower_reduce_kind_t { LOWER_REDUCE_MAX, LOWER_REDUCE_SUM } lower_reduce_kind_t;
#define LOWER_ROW_CHAINS_MAX 16
/* Appends to body[*nb] statements that leave the reduction of t over the row
 * in local `acc` (declared by them): one chain for a row shorter than
 * 2 * chains, else `chains` (a power of two up to LOWER_ROW_CHAINS_MAX)
 * partial results seeded with the first terms, a loop over the rest in
 * blocks of `chains`, a tail, and a combining tree; so the latency of one
 * add or max does not serialize the row, and the chains pack into vectors.
 * Appends at most LOWER_ROW_CHAINS_MAX + 3 statements. */
void lower_row_reduce(lower_ctx_t* ctx, const lower_row_term_t* t, lower_reduce_kind_t kind, uint32_t acc,
                      ingot_dtype_t dt, ingot_ir_stmt_t** body, uint32_t* nb, int chains);

/* BatchNormalization with training_mode=1 (lower_norm.c); lower_batchnorm
 * hands it over. */
ingot_status_t lower_batchnorm_training(lower_ctx_t* ctx);

/* ---- index helpers ---- */
/* Flat index into `buffer` for output indices `out_idx` (out_rank of them),
 * numpy broadcasting: the buffer's dims align right; a dim of 1 reads index 0. */
ingot_ir_expr_t* lower_broadcast_index(lower_ctx_t* ctx, uint32_t buffer, int32_t out_rank,
                                       ingot_ir_expr_t* const* out_idx);
/* One axis of a sliding window: pos = o*stride - pad + r*dilation, for o in
 * [0, out_extent) and r in [0, k). When pos can leave [0, in_extent) it sets
 * *cond to the in-range test (BOOL) and *index to pos clamped into range, so
 * the load stays inside the buffer; otherwise *cond = NULL and *index = pos. */
void lower_window_axis(lower_ctx_t* ctx, ingot_ir_expr_t* o, ingot_ir_expr_t* r, int64_t stride, int64_t pad,
                       int64_t dilation, int64_t in_extent, int64_t out_extent, int64_t k, ingot_ir_expr_t** cond,
                       ingot_ir_expr_t** index);
/* Reads an INTS attribute of `count` entries, each >= min_value, into out
 * (all `fallback` when absent). For ops without typed parameters yet
 * (graph/params.def); the others read ctx->params. */
ingot_status_t lower_ints_attr(lower_ctx_t* ctx, const char* name, uint32_t count, int64_t fallback, int64_t min_value,
                               int64_t* out);
/* Appends " <tag>AxBxC" to sb (workload strings). */
void lower_append_ints(ingot_strbuf_t* sb, const char* tag, const int64_t* v, uint32_t n);
/* a && b where either may be NULL (meaning true). */
ingot_ir_expr_t* lower_and(lower_ctx_t* ctx, ingot_ir_expr_t* a, ingot_ir_expr_t* b);

/* ---- values ---- */
ingot_ir_expr_t* lower_f32(lower_ctx_t* ctx, double v);
/* A constant of any IR dtype: float dtypes hold v, integer ones v truncated
 * toward zero and wrapped (as a C cast does), BOOL v != 0. */
ingot_ir_expr_t* lower_const(lower_ctx_t* ctx, ingot_dtype_t dtype, double v);
/* The single element of a WEIGHT value of any dtype, as a double (ints beyond
 * 2^53 lose precision); false when `value` is not a one-element weight. */
bool lower_weight_scalar(const lower_ctx_t* ctx, uint32_t value, double* out);
/* Element i of a WEIGHT value as int64 (floats truncated); false when not a
 * weight or i is out of range. */
bool lower_weight_int(const lower_ctx_t* ctx, uint32_t value, int64_t i, int64_t* out);

/* ---- integer contractions with a requantizing epilogue ----
 * (QLinearConv, QLinearMatMul; lower/lower_quant.c) */
typedef struct lower_requant_t {
  uint32_t x_scale, w_scale, y_scale; /* func buffers, float32 */
  bool x_scale_one, y_scale_one;      /* the scale is a weight 1 (ingot_graph_fold_requant_multipliers) */
  uint32_t y_zero;                    /* func buffer, or UINT32_MAX: zero point 0 */
  int64_t w_scales;                   /* 1: per tensor, else one per output channel */
  ingot_dtype_t ytype;                /* uint8 or int8 */
  float alpha;                        /* QGemm's alpha; 1 otherwise */
} lower_requant_t;
/* Adds the scale and zero-point inputs of a QLinear node (x's scale at
 * input xs_in, w's at ws_in, y's scale and zero point at ys_in, yz_in: 1, 4,
 * 6, 7 for QLinearConv and QLinearMatMul; QGemm's 1, 4, 7, 8) as buffers:
 * call after the node's other inputs, before its output. Fails unless x's
 * and y's scale are scalars and w's a scalar or `channels` long. */
ingot_status_t lower_requant_args(lower_ctx_t* ctx, uint32_t xs_in, uint32_t ws_in, uint32_t ys_in, uint32_t yz_in,
                                  int64_t channels, ingot_dtype_t ytype, lower_requant_t* out);
/* saturate(round_half_even(float(acc) * m) + y_zero) as rq->ytype, where
 * m = x_scale * w_scale[channel] / y_scale in float32 (acc int32; with an
 * alpha, ((alpha * x_scale) * w_scale) / y_scale, as ONNX Runtime's QGemm). */
ingot_ir_expr_t* lower_requant_value(lower_ctx_t* ctx, const lower_requant_t* rq, ingot_ir_expr_t* acc,
                                     ingot_ir_expr_t* channel);
/* Emits one OTHER stage: for spatial loops (sp->idx[outer] outermost, the
 * others in order) { acc = init; for reduce loops: acc = acc + term; store },
 * where `acc` is a LOCAL var of init's dtype that `term` and `store` may
 * read. A contraction whose accumulator is not the output's dtype. */
void lower_emit_accumulate(lower_ctx_t* ctx, const lower_loops_t* sp, uint32_t outer, const lower_loops_t* red,
                           uint32_t acc, ingot_ir_expr_t* init, ingot_ir_expr_t* term, ingot_ir_stmt_t* store);

/* GELU of x: 0.5 x (1 + erf(x / sqrt 2)), or with tanh_form Gelu's
 * approximate "tanh" form (the Gelu op and the GELU epilogues). */
ingot_ir_expr_t* lower_gelu(lower_ctx_t* ctx, ingot_ir_expr_t* x, bool tanh_form);
/* Applies node->epilogue's activation (NONE: returns v), in v's dtype. */
ingot_ir_expr_t* lower_activation(lower_ctx_t* ctx, ingot_ir_expr_t* v);
bool lower_has_activation(const lower_ctx_t* ctx);
/* "none", "relu", "clip(0,6)" (arena string). */
const char* lower_activation_name(lower_ctx_t* ctx);
/* "1x3x224x224" ("scalar" for rank 0), arena string. */
const char* lower_shape_str(lower_ctx_t* ctx, uint32_t value);
/* Lowercased op name ("conv", "globalaveragepool"). */
const char* lower_op_lower(lower_ctx_t* ctx);

/* ---- the driver ---- */
/* Lowers node `node_id` into lowered->kernels[lowered->kernel_count++] (or
 * records only an alias when the op is a view); `lowered` must have room for
 * one more kernel and alias_of sized for the graph's values. Used by
 * ingot_lower_graph and by ingot_lower_eval_node. */
ingot_status_t lower_node_into(const ingot_graph_t* graph, uint32_t node_id, ingot_lowered_t* lowered);

/* ---- per-op lowerings: one hook per op, named in graph/ops.def (one file
 * per op family); the prototypes come from that table. ---- */
typedef ingot_status_t (*lower_fn_t)(lower_ctx_t* ctx);
#define INGOT_OP(id, name, min_in, max_in, min_out, max_out, infer, lower) \
  ingot_status_t lower(lower_ctx_t* ctx);
#include "graph/ops.def"

#endif /* INGOT_LOWER_INTERNAL_H_ */
