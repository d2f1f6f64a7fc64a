/* Shape inference internals shared by the files of graph/ that infer ops
 * (shape_infer.c and one file per further op family). */
#ifndef INGOT_INFER_INTERNAL_H_
#define INGOT_INFER_INTERNAL_H_

#include "graph/graph.h"

typedef struct infer_ctx_t {
  ingot_graph_t* g;
  uint32_t id;        /* the node being inferred */
  ingot_node_t* n;
} infer_ctx_t;

/* Fails with "node 'NAME' (OP): message". */
ingot_status_t infer_fail(const ingot_node_t* n, ingot_status_t code, const char* fmt, ...)
    INGOT_PRINTF(3, 4);
/* Input i, or NULL when absent. */
ingot_value_t* infer_input(const infer_ctx_t* c, uint32_t i);
/* Sets output k's dtype and shape (ignored when the output is absent). */
void infer_set_output(const infer_ctx_t* c, uint32_t k, ingot_dtype_t dtype, int32_t rank,
                      const int64_t* dims);
void infer_copy_output(const infer_ctx_t* c, uint32_t k, const ingot_value_t* from);
/* Gives the node output k when it has none: a new intermediate value named
 * NODE_suffix (for outputs that inference adds, such as a scratch buffer). */
void infer_ensure_output(infer_ctx_t* c, uint32_t k, const char* suffix);
/* Declares output k's size as computed at run time (ingot_value_t.runtime_shape):
 * set output k first, with its upper bounds; output `shape_k` (added when
 * absent, named NODE_suffix) becomes the int64 [rank] tensor the lowering
 * writes the run's shape to; `dims` has bit d set for each dim the run
 * decides. */
void infer_runtime_shape(infer_ctx_t* c, uint32_t k, uint32_t shape_k, const char* suffix, uint32_t dims);
bool infer_is_float(ingot_dtype_t t);
/* "[1x3x224x224]" into buf. */
void infer_shape_str(const ingot_value_t* v, char* buf, size_t size);
/* Normalizes an axis into [0, rank) (or [0, rank] when `inclusive`). */
ingot_status_t infer_norm_axis(const infer_ctx_t* c, int64_t axis, int32_t rank, bool inclusive,
                               int64_t* out);

/* Numpy (multidirectional) broadcasting of a's and b's shapes into dims. */
ingot_status_t infer_broadcast(const infer_ctx_t* c, const ingot_value_t* a, const ingot_value_t* b, int32_t* out_rank,
                               int64_t* dims);
/* MatMulInteger's shape rules (numpy MatMul of uint8/int8 operands, zero
 * points scalar or per row of A / per column of B) over inputs a_in, b_in
 * and the zero points az_in, bz_in (absent ones skipped); sets output 0 to
 * out_dtype. QLinearMatMul shares them (graph/infer_quant.c). */
ingot_status_t infer_matmul_integer_shape(infer_ctx_t* c, uint32_t a_in, uint32_t b_in, uint32_t az_in, uint32_t bz_in,
                                          ingot_dtype_t out_dtype);

/* The parse function of every kind of typed parameters, named in
 * graph/params.def (graph/params.c and the infer_*.c files). */
#define INGOT_PARAMS(kind, member, type, parse) \
  ingot_status_t parse(const ingot_graph_t* graph, uint32_t node, type* out);
#include "graph/params.def"

/* The dtype of an ONNX TensorProto data type code (Cast's 'to', EyeLike's
 * 'dtype'), INGOT_DTYPE_INVALID for one Ingot has not. */
ingot_dtype_t infer_onnx_dtype(int64_t t);

/* The inference function of every op, named in graph/ops.def. */
#define INGOT_OP(id, name, min_in, max_in, min_out, max_out, infer, lower) \
  ingot_status_t infer(infer_ctx_t* c);
#include "graph/ops.def"

#endif /* INGOT_INFER_INTERNAL_H_ */
