/* Private to driver/: the pieces that compile, check and the one-kernel
 * bundle share. */
#ifndef INGOT_DRIVER_INTERNAL_H_
#define INGOT_DRIVER_INTERNAL_H_

#include "driver/driver.h"
#include "packager/packager.h"

/* A stage before code generation failed with `s`: says everything that is
 * unsupported in the model at once (the collect-all checker), or keeps the
 * original message when the checker finds nothing more specific, the model
 * came as a graph, or constants were bound (driver_check.c). */
ingot_status_t driver_explain_failure(const ingot_driver_options_t* options, ingot_status_t s);
/* ingot_driver_optimize_graph, with ranged input dims (--input-shape
 * LO..HI) settled between the two halves of the passes
 * (ingot_graph_settle_ranges, against a probe imported from o's model). */
ingot_status_t driver_optimize_ranged(const ingot_driver_options_t* o, ingot_graph_t* graph);

/* Schedules one lowered kernel in place: verifies its IR, builds the
 * schedule (`request`: that template and knobs; NULL: ingot_schedule_choose
 * with `log`, which may be NULL, and `choice`, which may be NULL too),
 * applies it and verifies again.
 * `out_schedule` is init'ed by the caller. */
ingot_status_t driver_schedule_kernel(ingot_kernel_t* kernel, const ingot_target_t* target,
                                      const ingot_tuning_log_t* log, const ingot_driver_schedule_t* request,
                                      ingot_schedule_choice_t* choice, ingot_schedule_t* out_schedule);

/* The text of a function with its own and its buffers' names replaced by
 * canonical ones, so that identical computations print identically (heap). */
char* driver_canonical_text(ingot_ir_func_t* func);

/* The symbol of a kernel: op, dtype, target kind and a hash of `text`
 * ("conv_f32_x_1a2b3c4d"), in `arena`. */
const char* driver_kernel_symbol(ingot_arena_t* arena, const ingot_graph_t* graph, const ingot_kernel_t* kernel,
                                 const ingot_target_t* target, const char* text);

/* The bundle's record of a target's code object (`object`, `size`, built
 * from `funcs`): its loader kind and, for a GPU kind, each step's launch
 * (the grid and block its kernel step_kernel[s] expects, from the codegen's
 * ingot_codegen_gpu_launches over the same functions), in `arena`. */
ingot_status_t driver_code_record(ingot_arena_t* arena, ingot_ir_func_t* const* funcs, uint32_t count,
                                  const ingot_target_t* target, const uint32_t* step_kernel, uint32_t step_count,
                                  const uint8_t* object, size_t size, ingot_bundle_code_t* out_code);

/* What becomes a bundle: steps (lowered kernels, in execution order) over the
 * values of `graph`. */
typedef struct driver_package_t {
  const ingot_graph_t* graph;
  const ingot_kernel_t* steps;     /* one step per kernel, in order */
  uint32_t step_count;
  const uint32_t* step_kernel;     /* per step: its index in kernel_names */
  const char* const* kernel_names;
  uint32_t kernel_count;
  const uint32_t* alias_of;        /* per graph value (ingot_lowered_t), or NULL */
  const uint32_t* inputs;          /* graph values that are the bundle's inputs */
  uint32_t input_count;
  const uint32_t* outputs;         /* ... and its outputs */
  uint32_t output_count;
  const ingot_bundle_code_t* codes;
  uint32_t code_count;
  /* Variants lowered from graphs of their own (their weight layouts differ),
   * each code_count entries, or NULL: every variant uses `graph`, `steps`
   * and `alias_of`. variant_graphs[0] must be `graph` (the first variant
   * describes the tensors). Every variant must have the same steps over
   * corresponding values (checked, INTERNAL otherwise); a WEIGHT tensor
   * gets the bytes of each variant's own value (ingot_bundle_code_t.weights),
   * and one weight that two variants use in different pairings (packed per
   * node in one, shared in the other) becomes one tensor per pairing. */
  const ingot_graph_t* const* variant_graphs;
  const ingot_kernel_t* const* variant_steps;
  const uint32_t* const* variant_alias_of;
  uint32_t weights_codec;          /* ingot_bundle_weights_codec_t (packager.h) */
  const ingot_bundle_metadata_t* metadata; /* the METADATA entries, or none */
  uint32_t metadata_count;
} driver_package_t;

/* The bundle's metadata for a compile of `graph` (the first target's) with
 * options `o` for `targets` (driver_metadata.c): name, model version,
 * producer, the source file's name and SHA-256 (when o->model_path was
 * imported here), the options that shape the code, the compiler version.
 * Strings and the array come from `arena`. Fails only when the model file
 * cannot be read again. */
ingot_status_t driver_metadata(ingot_arena_t* arena, const ingot_driver_options_t* o, const ingot_graph_t* graph,
                               const ingot_target_t* targets, uint32_t target_count,
                               ingot_bundle_metadata_t** out_entries, uint32_t* out_count);

/* Builds the bundle spec (one tensor per value that a step, an input or an
 * output uses, in value order; alias roots included; with variant graphs,
 * then the extra weight tensors of pairings, in step order) and the bundle
 * (heap, free() it). Temporary arrays come from `arena`. */
ingot_status_t driver_package(ingot_arena_t* arena, const driver_package_t* package, uint8_t** out_data,
                              size_t* out_size, ingot_bundle_report_t* out_report);

/* The bundle spec alone (what driver_package builds the bundle from; the
 * firmware writer reads the same). Its arrays live in `arena`. */
ingot_status_t driver_bundle_spec(ingot_arena_t* arena, const driver_package_t* package, ingot_bundle_spec_t* out_spec);

/* Faults the tuner's tests plant in a candidate (INGOT_TUNE_INJECT, see
 * driver_tune.c): a store out of bounds (the child crashes), a loop that
 * does not end (time-out), an output element off by one (wrong), a build
 * that fails (compile). */
typedef enum driver_fault_t {
  DRIVER_FAULT_NONE = 0,
  DRIVER_FAULT_CRASH,
  DRIVER_FAULT_HANG,
  DRIVER_FAULT_WRONG,
  DRIVER_FAULT_COMPILE,
} driver_fault_t;

/* Imports and optimizes options->model_path (input shapes and consts
 * applied) with `chooser` settling every node's layout (the tuner's graphs
 * for layout knobs other than the defaults). */
ingot_status_t driver_load_graph_layout(const ingot_driver_options_t* options, ingot_layout_chooser_t* chooser,
                                        ingot_graph_t** out_graph);

/* The tuner's look at one candidate (driver_tune.c): measured against the
 * reference; with `confirm`, a candidate that looks faster (ratio_hi below
 * 1 - margin) is measured again (ingot_driver_measure_confirm) and counts as
 * faster (out->faster) only when every look agrees. */
struct ingot_tune_result_t;
/* The tuner's measuring options: zero fields get its defaults (6 rounds of 3
 * repeats, a 4 % margin, 4 confirmations; the rest as ingot_driver_measure's). */
void driver_tune_measure_defaults(ingot_driver_measure_options_t* options);
ingot_status_t driver_tune_measure_one(const ingot_driver_measure_options_t* options, const void* candidate,
                                       size_t candidate_size, const void* reference, size_t reference_size,
                                       bool confirm, struct ingot_tune_result_t* out);

/* ingot_driver_build_kernel_bundle with a planted fault. */
ingot_status_t driver_build_kernel_bundle(const ingot_graph_t* graph, uint32_t node,
                                          const ingot_driver_schedule_t* schedule, const char* target,
                                          const char* cc, driver_fault_t fault, uint8_t** out_bundle,
                                          size_t* out_size);

#endif /* INGOT_DRIVER_INTERNAL_H_ */
