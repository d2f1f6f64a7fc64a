/* Lowering: each graph node -> one kernel, a loop-IR function computing it
 * from a compute definition (output shape + index expression + reduction axes).
 * Lowering knows nothing of targets; schedule/ transforms what it yields.
 *
 * The body of every kernel is a BLOCK of stages, each a perfect loop nest in
 * this form (the schedule templates rely on it):
 *
 *   PURE    for s0..sk { out[idx] = f(...) }                (injective ops)
 *   INIT    for s0..sk { out[idx] = init }                  (a reduction's start)
 *   UPDATE  for s0..sk { for r0..rm { out[idx] = start + g(...) } }
 *           start: out[idx], after an INIT stage; or
 *           select(r0 == 0 && .. && rm == 0, init, out[idx]), no INIT
 *           stage (the reduction starts at init; lower_update_start)
 *   FINISH  for s0..sk { out[idx] = epilogue(out[idx]) }    (bias/activation/scale)
 *   OTHER   any nest (softmax rows, ...): only its outermost loop is spatial
 *
 * s* are spatial axes (over the output, iterations independent), r* the
 * reduction axes. Stage records name the loops so templates can find them. */
#ifndef INGOT_LOWER_H_
#define INGOT_LOWER_H_

#include "graph/graph.h"
#include "lower/ir.h"

#define INGOT_MAX_STAGE_AXES 12

typedef enum ingot_op_class_t {
  INGOT_OP_CLASS_INJECTIVE = 1,   /* elementwise, broadcast, transpose, concat, copy */
  INGOT_OP_CLASS_CONTRACTION = 2, /* conv, gemm, matmul: UPDATE with multiply-add */
  INGOT_OP_CLASS_POOL = 3,        /* max/average/global pooling */
  INGOT_OP_CLASS_ROW = 4,         /* softmax and other per-row passes */
} ingot_op_class_t;

typedef enum ingot_stage_role_t {
  INGOT_STAGE_PURE = 1,
  INGOT_STAGE_INIT = 2,
  INGOT_STAGE_UPDATE = 3,
  INGOT_STAGE_FINISH = 4,
  INGOT_STAGE_OTHER = 5,
} ingot_stage_role_t;

typedef struct ingot_stage_t {
  ingot_stage_role_t role;
  uint32_t spatial[INGOT_MAX_STAGE_AXES]; /* loop var ids, outer -> inner */
  uint32_t spatial_count;
  uint32_t reduce[INGOT_MAX_STAGE_AXES];  /* UPDATE only, inside the spatial loops */
  uint32_t reduce_count;
  /* UPDATE of a contraction: the position in spatial[] of the axis whose
   * unrolled rows make the register tile (a conv's output channels, the
   * output positions of a packed conv); -1: the axis just outside the
   * innermost (vector) one. */
  int32_t tile_axis;
  /* UPDATE over a blocked layout: the position in spatial[] of the output
   * blocks' axis, several of which one register tile may span (knob
   * tile_blocks: a row then holds that many vectors, each tap of the input
   * loaded once for all); -1: none. */
  int32_t block_axis;
  /* OTHER: loops inside the nest whose iterations are independent (no
   * local carried from one to the next), which a template may vectorize. */
  uint32_t vector_loops[4];
  uint32_t vector_loop_count;
} ingot_stage_t;

typedef struct ingot_kernel_t {
  ingot_ir_func_t* func;        /* owned */
  uint32_t node;                /* the graph node it computes */
  uint32_t* args;               /* graph value id of each func buffer, in order */
  uint32_t arg_count;
  ingot_op_class_t op_class;
  ingot_stage_t* stages;        /* in body order */
  uint32_t stage_count;
  /* Identifies the computation for tuning logs: op, dtypes, shapes and the
   * attributes that change the loop nest, e.g.
   * "conv2d f32 n1 c64 h56 w56 k64 r3 s3 stride1x1 pad1x1x1x1 dil1x1 g1 act=relu".
   * It names the op and shapes, never the layout chosen (a packed weight
   * appears in its ONNX shape), so the layout knobs of a tuning record
   * can be looked up before the node is lowered. */
  const char* workload;
  /* The layout this kernel was lowered with (pack: its weight is packed in
   * panels of `panel`) and the node's layout options: the layout knobs of
   * its schedule space (graph.h ingot_node_layout_options). */
  ingot_node_layout_t layout;
  ingot_node_layout_options_t layout_options;
} ingot_kernel_t;

typedef struct ingot_lowered_t {
  ingot_arena_t arena;          /* stages, args, workload strings */
  ingot_kernel_t* kernels;      /* in execution order */
  uint32_t kernel_count;
  /* Per graph value: the value whose storage it shares (a view, e.g. the
   * output of a Reshape of an intermediate), or INGOT_NO_VALUE. Only
   * intermediates alias intermediates; otherwise lowering emits a copy. */
  uint32_t* alias_of;
  uint32_t value_count;
} ingot_lowered_t;

/* Lowers every live node of an optimized, shape-inferred graph. Fails naming
 * the node and op when a node cannot be lowered (unsupported dtype or
 * attribute combination). */
ingot_status_t ingot_lower_graph(const ingot_graph_t* graph, ingot_lowered_t** out_lowered);
void ingot_lowered_destroy(ingot_lowered_t* lowered);
/* Lowers live node `node` alone, exactly as ingot_lower_graph would: the
 * result holds its one kernel, or none for a view (alias_of then names the
 * storage its output shares). For building one kernel at a time (a tuner's
 * candidates) without lowering the whole graph. */
ingot_status_t ingot_lower_node(const ingot_graph_t* graph, uint32_t node, ingot_lowered_t** out_lowered);

/* The constant-folding evaluator for graph/ (an ingot_node_eval_fn_t; `self`
 * is unused): lowers node `node`, whose present inputs are all weights, into
 * its kernel exactly as ingot_lower_graph would, runs it with the IR
 * interpreter and hands back each output in out_data[k] (malloc'd). Returns
 * INGOT_ERROR_UNSUPPORTED when the node cannot be lowered; a failure while
 * running (an integer division by zero, ...) is INGOT_ERROR_INVALID_ARGUMENT. */
ingot_status_t ingot_lower_eval_node(void* self, ingot_graph_t* graph, uint32_t node, void** out_data);

/* Collect-all checking (`ingot check`): lowers live node `node` of an
 * inferred graph into a throwaway kernel and verifies its IR. Fails exactly
 * as ingot_lower_graph would for this node; leaves nothing behind. */
ingot_status_t ingot_lower_check_node(const ingot_graph_t* graph, uint32_t node);

/* The workload key of live node `node` of an inferred graph (what
 * ingot_lower_graph would give its kernel), malloc'd into *out_workload;
 * NULL when the node needs no kernel. Fails as ingot_lower_graph would. */
ingot_status_t ingot_lower_node_workload(const ingot_graph_t* graph, uint32_t node, char** out_workload);

#endif /* INGOT_LOWER_H_ */
