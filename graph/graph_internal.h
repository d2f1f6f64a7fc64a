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

/* Infers dtype and shape of one node's outputs from its inputs (which must
 * be known). May normalize attributes (auto_pad -> explicit pads). */
ingot_status_t ingot_graph_infer_node(ingot_graph_t* graph, uint32_t node_id);

/* ingot_graph_infer_shapes in parts: begin checks that every graph input is
 * resolved and forgets what an earlier inference said about computed values;
 * end checks that every graph output got a type and shape. */
ingot_status_t ingot_graph_infer_begin(ingot_graph_t* graph);
ingot_status_t ingot_graph_infer_end(ingot_graph_t* graph);

/* Number of live-node input slots that read each value (heap array of
 * value_count entries; free() it). */
uint32_t* ingot_graph_use_counts(const ingot_graph_t* graph);

#endif /* INGOT_GRAPH_INTERNAL_H_ */
