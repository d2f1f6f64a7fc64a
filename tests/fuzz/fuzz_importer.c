/* Fuzz target: the ONNX importer and the graph passes.
 *
 * The input is an ONNX ModelProto. It is imported from memory (so external
 * data is refused: no file is ever opened), symbolic input dimensions are
 * fixed to 1 (as `--input-shape` would) so shape inference runs, and the
 * graph is optimized exactly as `ingot compile` does (the passes, with the
 * lowering's evaluator folding constants). Caps keep every allocation small:
 * a model that asks for more must be refused, not allocate it.
 *
 * Built with clang -fsanitize=fuzzer by scripts/fuzz.sh, and linked with
 * replay_main.c for the CTest replay of the corpus under ASan and UBSan. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "graph/graph.h"
#include "importer/importer.h"
#include "lower/lower.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ingot_import_options_t options;
  memset(&options, 0, sizeof options);
  options.max_weight_bytes = (uint64_t)64 << 20;
  options.max_nodes = 4096;
  options.max_tensor_elements = (uint64_t)16 << 20;
  ingot_graph_t* graph = NULL;
  ingot_compiler_error_clear();
  if (ingot_import_onnx_memory(data, size, NULL, &options, &graph) != INGOT_OK) return 0;
  for (uint32_t i = 0; i < graph->input_count; ++i) {
    ingot_value_t* v = &graph->values[graph->inputs[i]];
    for (int32_t d = 0; d < v->rank; ++d)
      if (v->dims[d] < 0) v->dims[d] = 1;
  }
  (void)ingot_graph_optimize_with(graph, ingot_lower_eval_node, NULL);
  ingot_graph_destroy(graph);
  return 0;
}
