/* ONNX importer: a ModelProto file -> an ingot graph.
 *
 * Parses with protobuf-c (C code generated at build time from the system's
 * onnx.proto). Handles initializers (become WEIGHT values), Constant nodes
 * (become WEIGHT values), opset imports (the ai.onnx default domain),
 * external data (resolved only inside the model's folder), graph inputs that
 * are also initializers (weights), subgraphs (GRAPH attributes of If, Loop,
 * Scan: nested graphs the main graph owns, whose reads of the enclosing
 * scopes' values by name become captures, extra inputs of the node; see
 * ingot_graph_t.captures). Unknown ops, other domains, unsupported dtypes: a
 * clear error naming the node and op (inside a subgraph, prefixed with the
 * node and attribute that hold it). */
#ifndef INGOT_IMPORTER_H_
#define INGOT_IMPORTER_H_

#include "graph/graph.h"

/* Collect-all mode (`ingot check`): called once for each thing the importer
 * cannot represent, instead of failing. `node` and `op` name the node (NULL
 * for an initializer or graph input), `kind` is "op", "attribute" or "dtype",
 * `message` the error as it would have been reported. The strings are valid
 * only during the call. */
typedef void (*ingot_import_problem_fn_t)(void* self, const char* node, const char* op, const char* kind,
                                          const char* message);

typedef struct ingot_import_options_t {
  uint64_t max_weight_bytes;  /* 0: 16 GiB */
  uint32_t max_nodes;         /* 0: 1,000,000 */
  /* When set, collect-all mode: a node with an unknown op, another domain or
   * an attribute of an unsupported type, an initializer or graph input of an
   * unsupported type, is reported here and left out: the node is not added
   * (or added dead), and the values it would define exist with no producer
   * (a graph input so left out is not in graph.inputs). Structural errors
   * still fail. When anything was reported, the graph is not sorted (it may
   * have live nodes reading values nobody produces; the caller deals with
   * them). */
  ingot_import_problem_fn_t on_problem;
  void* problem_self;
  /* Elements of any one initializer, constant, or graph input with a fixed
   * shape (0: 2^32). Like the two caps above, checked before anything of that
   * size is allocated; a model above a cap fails with INGOT_ERROR_LIMIT. */
  uint64_t max_tensor_elements;
} ingot_import_options_t;

/* Reads `path` and builds a sorted graph (not yet shape-inferred). */
ingot_status_t ingot_import_onnx_file(const char* path, const ingot_import_options_t* options,
                                      ingot_graph_t** out_graph);
/* Same from memory; external data is refused unless `model_dir` is given. */
ingot_status_t ingot_import_onnx_memory(const void* data, size_t size, const char* model_dir,
                                        const ingot_import_options_t* options,
                                        ingot_graph_t** out_graph);

#endif /* INGOT_IMPORTER_H_ */
