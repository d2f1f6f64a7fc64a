/* Helpers shared by the files of graph/ (not part of its interface). */
#ifndef INGOT_GRAPH_INTERNAL_H_
#define INGOT_GRAPH_INTERNAL_H_

#include "graph/graph.h"

size_t ingot_graph_dtype_size(ingot_dtype_t dtype);
const char* ingot_graph_dtype_name(ingot_dtype_t dtype);

/* Makes `value` a WEIGHT with the given type and heap data (taken over; the
 * old data, if different, is freed). */
void ingot_graph_set_weight(ingot_graph_t* graph, uint32_t value, ingot_dtype_t dtype, int32_t rank,
                            const int64_t* dims, void* data);

/* Adds (or replaces) an attribute on a node; returns it zeroed but for name
 * and type. The pointer is valid until the next attribute is added. */
ingot_attr_t* ingot_graph_node_add_attr(ingot_graph_t* graph, uint32_t node_id, const char* name,
                                        ingot_attr_type_t type);
void ingot_graph_node_set_ints(ingot_graph_t* graph, uint32_t node_id, const char* name,
                               const int64_t* ints, uint32_t count);

/* Clip's bounds as floats: attributes (opset < 11) or scalar float32 weights
 * (absent: -FLT_MAX, FLT_MAX); false when a bound is not a constant. */
bool ingot_graph_clip_bounds_f32(const ingot_graph_t* graph, const ingot_node_t* clip, float* out_lo, float* out_hi);

/* Whether op computes each output element from the input elements at the
 * same place (broadcasting): elementwise ops, Cast, Where, fused chains. */
bool ingot_op_works_by_element(ingot_op_t op);

/* Infers dtype and shape of one node's outputs from its inputs (which must
 * be known). May normalize attributes (auto_pad -> explicit pads). */
ingot_status_t ingot_graph_infer_node(ingot_graph_t* graph, uint32_t node_id);

/* ingot_graph_infer_shapes in parts: begin checks that every graph input is
 * resolved and forgets what an earlier inference said about computed values;
 * end checks that every graph output got a type and shape. */
ingot_status_t ingot_graph_infer_begin(ingot_graph_t* graph);
ingot_status_t ingot_graph_infer_end(ingot_graph_t* graph);


/* "; it is computed from the inputs 'a', 'b'" into out (cap bytes, cut
 * short if need be) when value `v` depends on graph inputs (those that
 * --const could bind), else "": what a message asking for a value at
 * compile time appends. */
void ingot_graph_input_deps(const ingot_graph_t* g, uint32_t v, char* out, size_t cap);

/* Control flow and sequences (graph/control_flow.c). The walk of
 * ingot_graph_infer_and_fold hands each node for which
 * ingot_graph_node_expands holds (If, Loop, Scan, a Sequence op, a node
 * that reads a sequence) to ingot_graph_expand_control_flow, which appends
 * the nodes that replace it, calls `visit` on each right after appending it
 * (to infer and fold it, or expand it in turn), wires the results to the
 * node's outputs (a sequence output gets its list, ingot_value_t.sequence)
 * and marks the node dead. *state (NULL at first) keeps the graph's value
 * names and the count of nodes added across calls; free it with
 * ingot_cf_state_free. */
typedef struct ingot_cf_state_t ingot_cf_state_t;
typedef ingot_status_t (*ingot_graph_visit_fn_t)(void* self, ingot_graph_t* graph, uint32_t node);
bool ingot_graph_is_control_flow(ingot_op_t op);
bool ingot_graph_is_sequence_op(ingot_op_t op);
bool ingot_graph_node_expands(const ingot_graph_t* graph, uint32_t node);
ingot_status_t ingot_graph_expand_control_flow(ingot_graph_t* graph, uint32_t node, ingot_cf_state_t** state,
                                               ingot_graph_visit_fn_t visit, void* self);
void ingot_cf_state_free(ingot_cf_state_t* state);

#endif /* INGOT_GRAPH_INTERNAL_H_ */
