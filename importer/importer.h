/* ONNX importer: a ModelProto file -> an ingot graph.
 *
 * Parses with protobuf-c (C code generated at build time from the system's
 * onnx.proto). Handles initializers (become WEIGHT values), Constant nodes
 * (become WEIGHT values), opset imports (the ai.onnx default domain),
 * external data (resolved only inside the model's folder), graph inputs that
 * are also initializers (weights). Unknown ops, other domains, unsupported
 * dtypes: a clear error naming the node and op. */
#ifndef INGOT_IMPORTER_H_
#define INGOT_IMPORTER_H_

#include "graph/graph.h"

typedef struct ingot_import_options_t {
  uint64_t max_weight_bytes;  /* 0: 16 GiB */
  uint32_t max_nodes;         /* 0: 1,000,000 */
} ingot_import_options_t;

/* Reads `path` and builds a sorted graph (not yet shape-inferred). */
ingot_status_t ingot_import_onnx_file(const char* path, const ingot_import_options_t* options,
                                      ingot_graph_t** out_graph);
/* Same from memory; external data is refused unless `model_dir` is given. */
ingot_status_t ingot_import_onnx_memory(const void* data, size_t size, const char* model_dir,
                                        const ingot_import_options_t* options,
                                        ingot_graph_t** out_graph);

#endif /* INGOT_IMPORTER_H_ */
