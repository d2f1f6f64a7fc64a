/* The compiler as a library: every stage run in order, above codegen/ and
 * packager/ (DESIGN.md, "driver/"). cli/ is a thin front end over it; the
 * tuner calls it to build the bundles it measures.
 *
 *   ingot_driver_load_graph   import (importer/), fix input shapes, bind
 *                             constants, optimize (graph/ passes with the
 *                             lowering as constant-folding evaluator)
 *   ingot_driver_compile      ... then lower each target (lower/), choose and
 *                             apply a schedule per kernel (schedule/, with the
 *                             tuning log), verify, deduplicate kernels and name
 *                             their symbols, build one code object per target
 *                             (codegen/), and the bundle (packager/, which
 *                             plans memory from the steps' live intervals)
 *   ingot_driver_check        everything in a model that cannot be compiled,
 *                             collected in one pass (`ingot check`)
 *   ingot_driver_build_kernel_bundle
 *                             one node of an optimized graph, one schedule, one
 *                             target -> a bundle holding only that kernel, to be
 *                             timed by the runtime (what the tuner measures)
 *
 * Errors: a function that fails returns a status and leaves its message in
 * ingot_compiler_error() (naming the node, op, target or file); its outputs
 * are zeroed on entry and hold nothing on failure. Nothing here writes files
 * except `emit_source_path`; writing the bundle is the caller's.
 * Not thread-safe: the compiler error message is per thread, but one options
 * struct, graph or log must not be used by two calls at once. */
#ifndef INGOT_DRIVER_H_
#define INGOT_DRIVER_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "graph/graph.h"
#include "lower/lower.h"
#include "schedule/schedule.h"

/* At most this many targets (code variants) in one bundle. */
#define INGOT_DRIVER_MAX_TARGETS 8u

/* A graph input bound as a constant (`--const NAME=FILE.npy`): for inputs that
 * decide shapes, such as a Reshape target or Resize scales. The data (dense,
 * row-major, `dtype`) is copied; the caller keeps ownership. */
typedef struct ingot_driver_const_t {
  const char* name;
  ingot_dtype_t dtype;
  uint32_t rank;
  const int64_t* dims;
  const void* data;
} ingot_driver_const_t;

/* What ingot_driver_compile hands to `on_kernel`: one unique kernel of one
 * target, scheduled and verified, just before the target's code is generated.
 * Called for every target in order (target_index 0 first), and within a
 * target for every unique kernel in symbol order. Pointers are valid only
 * during the call. This is the seam for `--dump-ir` (print kernel->func),
 * and for listings of the chosen schedules or their spaces. */
typedef struct ingot_driver_kernel_info_t {
  uint32_t kernel;                    /* unique kernel index (the bundle's kernel table) */
  uint32_t kernel_count;              /* unique kernels in the bundle */
  uint32_t step;                      /* the first step that runs it */
  const char* symbol;                 /* its symbol in every variant */
  uint32_t target_index;              /* index into the compiled targets */
  const ingot_target_t* target;
  const ingot_graph_t* graph;         /* the target's optimized graph (kernel_ir->node's): one
                                         for all targets unless the tuning log lays a node out
                                         differently per target (see ingot_driver_compile) */
  const ingot_kernel_t* kernel_ir;    /* node, op class, workload, stages, and the
                                         scheduled func */
  const ingot_schedule_t* schedule;   /* the chosen schedule: template, knobs,
                                         directives */
  bool tuned;                         /* on_kernel: the schedule came from a tuning-log
                                         record (tuning_line: its line), not the defaults */
  uint32_t tuning_line;
} ingot_driver_kernel_info_t;

typedef void (*ingot_driver_graph_fn_t)(void* self, const ingot_graph_t* graph);
typedef void (*ingot_driver_kernel_fn_t)(void* self, const ingot_driver_kernel_info_t* info);
/* A hook that may fail: its status stops the compile (named by node). */
typedef ingot_status_t (*ingot_driver_lowered_fn_t)(void* self, const ingot_driver_kernel_info_t* info);
/* A tuning-log record of the kernel's workload that was not applied, with
 * its line in the log and why (ingot_schedule_choice_t's on_skip). */
typedef void (*ingot_driver_tuning_skip_fn_t)(void* self, const ingot_driver_kernel_info_t* info, uint32_t line,
                                              const char* reason);

typedef struct ingot_driver_options_t {
  /* The model: an ONNX file, or `graph`, an already optimized graph
   * (from ingot_driver_load_graph; compile reads it and does not change it,
   * the caller keeps ownership). With `graph`, model_path may still be set:
   * it then only names the model in messages. */
  const char* model_path;
  const ingot_graph_t* graph;
  /* "NAME=DIMS" for each graph input whose shape is fixed here, e.g.
   * "input=1x3x224x224" (ingot_graph_set_input_shape). Ignored with `graph`. */
  const char* const* input_shapes;
  uint32_t input_shape_count;
  const ingot_driver_const_t* consts;  /* ignored with `graph` */
  uint32_t const_count;
  /* Target strings (ingot_target_parse), at most INGOT_DRIVER_MAX_TARGETS,
   * the first leads; none: "llvm" in a build with LLVM, else "c". */
  const char* const* targets;
  uint32_t target_count;
  /* Schedules from a tuning log: an open one (kept by the caller), else the
   * file at tuning_log_path; neither: the target-aware defaults. */
  const ingot_tuning_log_t* tuning_log;
  const char* tuning_log_path;
  /* The CPU model the code is tuned for: records whose fingerprint names
   * another CPU model are not applied (see ingot_schedule_choice_t). NULL:
   * records of any CPU apply. `ingot compile` passes this machine's
   * (ingot_cpu_model()). */
  const char* tuning_cpu_model;
  const char* cc;                 /* the C compiler for target c; NULL: $CC or cc */
  const char* emit_source_path;   /* also write the first target's source here
                                     (C, or the optimized LLVM IR); NULL: no */
  /* Inspection hooks, each optional, all given `hook_self`:
   *   on_graph   the optimized graph, once optimization succeeded
   *              (ingot_driver_load_graph, hence compile without `graph`;
   *              with one graph per target, the first target's only);
   *   on_lowered every kernel (every step) of every target as lowered, before
   *              it is scheduled: kernel = step = its step, symbol and
   *              schedule NULL, kernel_ir unscheduled (what schedule spaces
   *              are listed from: `--dump-space`);
   *   on_kernel  see ingot_driver_kernel_info_t. */
  void* hook_self;
  ingot_driver_graph_fn_t on_graph;
  ingot_driver_lowered_fn_t on_lowered;
  ingot_driver_kernel_fn_t on_kernel;
  /*   on_tuning_skip  each tuning-log record of a step's workload not applied
   *              to it, with why (info as for on_lowered; a record may be
   *              reported once per step that shares its workload). */
  ingot_driver_tuning_skip_fn_t on_tuning_skip;
} ingot_driver_options_t;

/* What a compile made. Free with ingot_driver_result_free. */
typedef struct ingot_driver_result_t {
  uint8_t* bundle;               /* heap */
  size_t bundle_size;
  uint32_t target_count;
  char targets[INGOT_DRIVER_MAX_TARGETS][INGOT_TARGET_NAME_BYTES]; /* canonical names */
  uint32_t step_count;           /* kernels run, in order */
  uint32_t kernel_count;         /* unique kernels (shared by identical steps) */
  uint64_t weight_bytes;
  uint64_t arena_bytes;
  uint64_t arena_lower_bound;    /* the largest sum of tensors live at one step */
  /* Of the unique kernels of every target (kernel_count * target_count),
   * how many took their schedule from a tuning-log record. */
  uint32_t tuned_kernels;
} ingot_driver_result_t;

/* Imports options->model_path, applies input_shapes and consts, and
 * optimizes (with the tuning log's layout knobs for options->targets: one
 * graph holds one layout per node, so targets whose records lay a node out
 * differently are refused, naming the node and targets; compile from the
 * model path handles them); *out_graph is the caller's (ingot_graph_destroy). A failure of
 * import or optimization is explained, when the model as given has problems
 * `ingot check` finds, by all of them at once ("N problems: ...; ..."). */
ingot_status_t ingot_driver_load_graph(const ingot_driver_options_t* options, ingot_graph_t** out_graph);

/* The graph passes of compile, with the lowering as constant-folding
 * evaluator (what ingot_driver_load_graph runs after import). */
ingot_status_t ingot_driver_optimize_graph(ingot_graph_t* graph);

/* Compiles the model (or options->graph) into a bundle in memory. From a
 * model path with a tuning log whose layout knobs differ between the
 * targets, it optimizes one graph per target (the first target's layouts in
 * the first, each other target's alone in its own), lowers each target from
 * its graph and gives each variant its own weight bytes; the variants must
 * still run the same steps over the same tensors (a layout changes how a
 * kernel reads its weight, never which kernels run: INTERNAL naming the node
 * otherwise). Without such differences one graph serves every target. */
ingot_status_t ingot_driver_compile(const ingot_driver_options_t* options, ingot_driver_result_t* out_result);
void ingot_driver_result_free(ingot_driver_result_t* result);

/* ---- `ingot check`: collect every problem ---- */

typedef struct ingot_driver_problem_t {
  char* node;     /* NULL for a graph-level problem (an input, an initializer) */
  char* op;       /* the ONNX op type; NULL with node */
  char* kind;     /* "op", "attribute", "dtype" or "shape" */
  char* message;  /* without the "node 'N' (Op): " prefix */
} ingot_driver_problem_t;

typedef struct ingot_driver_check_report_t {
  INGOT_VEC(ingot_driver_problem_t) problems;
  uint32_t node_count;  /* nodes in the model (Constant nodes are weights) */
  uint32_t skipped;     /* nodes left out because they are downstream of a problem */
} ingot_driver_check_report_t;

/* Checks options->model_path (with options->input_shapes; nothing else is
 * read) in one pass and fills *out_report: free it with
 * ingot_driver_check_report_free, also on failure. Fails only when the model
 * cannot be read at all (I/O, not ONNX, a bad input shape). See
 * driver_check.c for the walk. */
ingot_status_t ingot_driver_check(const ingot_driver_options_t* options, ingot_driver_check_report_t* out_report);
void ingot_driver_check_report_free(ingot_driver_check_report_t* report);
/* "node 'N' (Op): message" (or the bare message) appended to sb. */
void ingot_driver_problem_format(const ingot_driver_problem_t* problem, ingot_strbuf_t* sb);

/* ---- One kernel, one schedule, one target -> a bundle that can be timed ---- */

/* A schedule given as data: a template and knob values (knobs not given take
 * the template's defaults for the target; unknown knobs and values outside a
 * knob's range are refused by ingot_schedule_from_template). */
typedef struct ingot_driver_schedule_t {
  const char* template_name;      /* NULL: the template of the kernel's op class */
  const char* const* knob_names;
  const int64_t* knob_values;
  uint32_t knob_count;
} ingot_driver_schedule_t;

/* Lowers node `node` of an optimized graph (ingot_driver_load_graph; it is
 * only read, so one graph serves any number of calls), schedules it with
 * `schedule` (NULL: the default schedule for the target, as compile chooses
 * it without a tuning log), builds its code for `target` (a target string;
 * `cc` as in the options) and packages a complete bundle with that kernel as
 * its one step: its inputs are the node's inputs that are not weights, its
 * outputs the node's outputs, the weights it reads are included. The bundle
 * runs in the runtime as any other (`ingot run --bench`). *out_bundle is heap
 * (free() it). Fails, naming the node, on a node index out of range, a dead
 * node, a node that computes nothing of its own (a view), a bad template or
 * knob, or anything the stages refuse. */
ingot_status_t ingot_driver_build_kernel_bundle(const ingot_graph_t* graph, uint32_t node,
                                                const ingot_driver_schedule_t* schedule, const char* target,
                                                const char* cc, uint8_t** out_bundle, size_t* out_size);

#endif /* INGOT_DRIVER_H_ */
