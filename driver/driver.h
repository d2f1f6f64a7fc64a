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
 *                             plans memory from the steps' live intervals);
 *                             with emit_firmware_dir also (or only) the
 *                             firmware files from the same spec and plan
 *   ingot_driver_check        everything in a model that cannot be compiled,
 *                             collected in one pass (`ingot check`)
 *   ingot_driver_build_kernel_bundle
 *                             one node of an optimized graph, one schedule, one
 *                             target -> a bundle holding only that kernel, to be
 *                             timed by the runtime (what the tuner measures)
 *   ingot_driver_measure      a candidate bundle against a reference in a child
 *                             process: crash, hang, wrong result or load
 *                             failure come back as a kind; interleaved timing
 *                             with its ratio and spread, and a confirm step
 *
 * Errors: a function that fails returns a status and leaves its message in
 * ingot_compiler_error() (naming the node, op, target or file); its outputs
 * are zeroed on entry and hold nothing on failure. Nothing here writes files
 * except `emit_source_path` and `emit_firmware_dir`; writing the bundle is
 * the caller's.
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

/* The stages of a compile, in order, for progress and timings: X(NAME, "name").
 *   import    read the ONNX file (importer/)
 *   passes    input shapes, constants, the graph passes (graph/)
 *   lower     each node to a loop nest (lower/)
 *   schedule  choose, apply and verify each kernel's schedule; deduplicate
 *   codegen   build each target's code object (codegen/)
 *   package   the memory plan and the bundle (packager/) */
#define INGOT_DRIVER_STAGE_LIST(X) \
  X(IMPORT, "import")              \
  X(PASSES, "passes")              \
  X(LOWER, "lower")                \
  X(SCHEDULE, "schedule")          \
  X(CODEGEN, "codegen")            \
  X(PACKAGE, "package")

typedef enum ingot_driver_stage_t {
#define INGOT_DRIVER_STAGE_ENUM_(name, text) INGOT_DRIVER_STAGE_##name,
  INGOT_DRIVER_STAGE_LIST(INGOT_DRIVER_STAGE_ENUM_)
#undef INGOT_DRIVER_STAGE_ENUM_
  INGOT_DRIVER_STAGE_COUNT
} ingot_driver_stage_t;

/* "import", "passes", ...; "?" out of range. */
const char* ingot_driver_stage_name(ingot_driver_stage_t stage);

/* Where ingot_driver_compile is, for a progress line. A call comes when a
 * stage begins (done 0) and, in stages with units, after each unit: kernels
 * (every target's, in order) for schedule, targets for codegen; other stages
 * have total 0. The driver prints nothing: the caller decides what to show
 * and how often. Pointers are valid only during the call. */
typedef struct ingot_driver_progress_t {
  ingot_driver_stage_t stage;
  uint32_t done, total;
  const char* target;        /* the target being lowered, scheduled or built; NULL otherwise */
  double elapsed_s;          /* since ingot_driver_compile began */
} ingot_driver_progress_t;

typedef void (*ingot_driver_progress_fn_t)(void* self, const ingot_driver_progress_t* progress);

typedef enum ingot_driver_half_ops_t {
  INGOT_DRIVER_HALF_OPS_AUTO = 0,
  INGOT_DRIVER_HALF_OPS_F16 = 1,
  INGOT_DRIVER_HALF_OPS_F32 = 2,
} ingot_driver_half_ops_t;

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
  /* Iterations a Loop whose trip count is known only at run time is
   * compiled for (ingot_graph_t.loop_max_trips); 0: such a Loop is refused.
   * Ignored with `graph`. */
  int64_t max_trips;
  /* Target strings (ingot_target_parse), at most INGOT_DRIVER_MAX_TARGETS,
   * the first leads; none: "llvm" in a build with LLVM, else "c". */
  const char* const* targets;
  uint32_t target_count;
  /* Schedules from a tuning log: an open one (kept by the caller), else the
   * file at tuning_log_path; neither: the target-aware defaults. */
  const ingot_tuning_log_t* tuning_log;
  const char* tuning_log_path;
  /* Neither given: use the pre-tuned logs built in (schedule/logs/;
   * ingot_tuning_log_builtin) instead of the defaults alone. Their records
   * apply only where target and CPU model match (set tuning_cpu_model). */
  bool builtin_tuning_log;
  /* The CPU model the code is tuned for: records whose fingerprint names
   * another CPU model are not applied (see ingot_schedule_choice_t). NULL:
   * records of any CPU apply. `ingot compile` passes this machine's
   * (ingot_cpu_model()). */
  const char* tuning_cpu_model;
  /* The C compiler for target c, a command with flags of its own ("clang
   * --target=aarch64-linux-gnu" cross-compiles; x86 -march flags are added
   * only when it builds for x86-64); NULL: $CC or cc. */
  const char* cc;
  const char* emit_source_path;   /* also write the first target's source here
                                     (C, or the optimized LLVM IR); NULL: no */
  /* Firmware output: also write the model as a freestanding C library into
   * this folder (created if missing; ingot_model.h, ingot_model.c,
   * ingot_model_kernels.c, ingot_model_weights.c: see packager.h,
   * ingot_firmware_build), from the same plan and weights as the bundle.
   * Needs exactly one target, of kind c. NULL: no. */
  const char* emit_firmware_dir;
  /* With emit_firmware_dir: build no code object and no bundle (the result's
   * bundle stays NULL), so that the C compiler is never run: for a target
   * whose compiler cannot build a shared object (a Cortex-M). */
  bool firmware_only;
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
  /* How the bundle stores weights: 0 auto (zstd only where it saves a fifth
   * or more, else raw and 64-byte aligned, which the runtime maps and uses
   * in place), 1 zstd (whenever smaller), 2 raw: the values of
   * ingot_bundle_weights_codec_t (packager/packager.h). */
  uint32_t weights_codec;
  /* How the big float32 weights of convolutions and matrix products are
   * stored (ingot_graph_compress_weights; `--weights fp16|bf16|int8`):
   * INGOT_DTYPE_INVALID or F32 as the model has them, F16 or BF16 rounded
   * to nearest even, I8 symmetric per output channel with float32 scales;
   * the kernels convert them to float32 as they load them. CPU targets
   * only. Ignored with `graph`. */
  ingot_dtype_t weight_dtype;
  /* Activation layout of convolution regions (ingot_graph_block_activations):
   * 0 auto (blocks of the first CPU target's float32 lanes: 16 with 64-byte
   * vectors, 8 with 32, 4 with 16; none for GPU targets), 1 none (NCHW
   * throughout), else the channels a block holds (4, 8, 16). */
  uint32_t activation_block;
  /* Where float16 Add, Sub, Mul, Div, Min, Max, Neg, Abs, Sqrt and Relu
   * compute (ingot_graph_set_half_arith; `--half-ops`): AUTO in float16 when
   * every target computes it natively (ingot_target_has_half_arith), else in
   * float32; F16 in float16 on every target (each op rounds, as ONNX
   * Runtime's kernels; through float32 where not native); F32 in float32,
   * rounded once where the model's float16 values leave float32 code. */
  ingot_driver_half_ops_t half_ops;
  /* Progress of ingot_driver_compile (given hook_self), optional: see
   * ingot_driver_progress_t. */
  ingot_driver_progress_fn_t on_progress;
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
  /* Of those, how many run the loop IR's dot4 (int8 contractions over
   * words, ingot_graph_pack_weights). */
  uint32_t dot4_kernels;
  /* Wall seconds spent in each stage (summed over targets), by
   * ingot_driver_stage_t; with a `graph` given, import and passes are 0. */
  double stage_seconds[INGOT_DRIVER_STAGE_COUNT];
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

/* ---- the accuracy of compressed weights ---- */

typedef struct ingot_driver_accuracy_output_t {
  char name[256];
  double max_abs_error;      /* max |y - y_ref| (infinity where one is NaN) */
  double reference_max_abs;  /* max |y_ref| */
  double max_rel_error;      /* max_abs_error / reference_max_abs (the error itself when that is 0) */
} ingot_driver_accuracy_output_t;

typedef struct ingot_driver_accuracy_t {
  ingot_driver_accuracy_output_t* outputs; /* heap, output_count, in output order */
  uint32_t output_count;
} ingot_driver_accuracy_t;

/* Runs `bundle` and `reference` (the same model compiled with float32
 * weights) once each on the CPU, on the same inputs: `inputs` where given
 * (by name; dtype and size must match the bundle's input), the others
 * random from `seed` (driver/driver_accuracy.c says how), and measures each
 * output's largest error against the reference. Free *out with
 * ingot_driver_accuracy_free (left empty on failure). */
ingot_status_t ingot_driver_compare_bundles(const void* bundle, size_t bundle_size, const void* reference,
                                            size_t reference_size, const ingot_driver_const_t* inputs,
                                            uint32_t input_count, uint64_t seed, ingot_driver_accuracy_t* out);
void ingot_driver_accuracy_free(ingot_driver_accuracy_t* accuracy);

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

/* ---- Measuring a candidate bundle against a reference (driver_measure.c) ----
 *
 * What the tuner's search calls back into (DESIGN.md: measuring is driver/'s,
 * schedule/ only asks). A candidate is a bundle of one kernel built with some
 * schedule (ingot_driver_build_kernel_bundle); the reference is the bundle of
 * the same kernel with the default schedule. Both run in one child process
 * (fork), never in the caller: the child opens them through the runtime API
 * (runtime/ingot.h), fills the inputs of both with the same seeded random
 * data (the same for every candidate measured with the same seed), runs the
 * reference once and the candidate once, compares every output (within
 * rtol/atol for floats, exactly otherwise), then times the two in `rounds`
 * short alternating rounds (the order flips every round): per round and
 * program, the median of `repeats` timed runs. The child reports through a
 * pipe; after `timeout_s` it is killed. So a candidate that crashes, hangs,
 * computes something else, fails to load or fails a run comes back as a
 * result kind and never stops the caller.
 *
 * Noise: these machines change speed by tens of percent for seconds at a
 * time, so absolute times of programs run one after another are not
 * comparable; only the per-round ratios are. `ratio` is the ratio of the
 * medians of the per-round medians (candidate over reference: below 1 is
 * faster), `ratio_lo`/`ratio_hi` the 25th and 75th percentiles of the
 * per-round ratios, `ratio_min`/`ratio_max` their extremes.
 * Within one child the rounds agree closely, but a child's memory placement
 * can favour one program by a few percent for its whole life (measured here,
 * one thread, CPU time: a 256 KiB streaming kernel against itself gave ratios
 * from 0.95 to 1.07 across 20 children, most with an interquartile spread
 * under 1 %; by the wall clock on the loaded machine single rounds went from
 * 0.67 to 1.25). So ingot_driver_measure_confirm
 * re-measures in `confirmations` fresh children, flipping which program is
 * loaded first each time, before a candidate is accepted as better: only when
 * every look puts ratio_hi below 1 - margin.
 *
 * Another machine: with `runner` "ssh://USER@HOST[:PORT]" the same
 * measuring runs on HOST, in the run-only program `ingot-measure` (it links
 * only libingot). The first measurement through a runner makes a temporary
 * folder there (mktemp -d under the remote $TMPDIR or /tmp) and copies the
 * program into it; later ones reuse it, copy the two bundles (the reference
 * only when it changed), run the program with the options and read its one
 * result line; the candidate is removed after each run, the folder by
 * ingot_driver_measure_runners_release. Everything goes through the system's
 * `ssh` (fork and exec, arguments as an array, `-o BatchMode=yes`: keys or an
 * agent, never a password prompt), one shared connection per runner
 * (ControlMaster, its socket in a /tmp/ingot-ssh.* folder of this process;
 * it ends at release, or 60 s after its last use when release is never
 * called); the remote account needs a POSIX shell,
 * mktemp, cat and rm, nothing of Ingot. On the remote side the program kills
 * itself at timeout_s (TIMEOUT); here ssh is killed 30 s later still, for a
 * machine that stops answering (TIMEOUT too). The remote program killed by a
 * signal is CRASH (`signal`); ssh failing (unreachable host, refused key,
 * the program not runnable there) is ERROR with ssh's or the shell's message.
 *   INGOT_MEASURE_BINARY  the ingot-measure to copy; by default the one beside
 *                         the running program (the folder of /proc/self/exe,
 *                         where `ingot` is installed). For a board of another
 *                         architecture, name one built for it
 *                         (-DINGOT_RUNTIME_ONLY=ON with its cross compiler).
 *   INGOT_SSH_OPTIONS     more ssh arguments, split at white space, no quoting,
 *                         placed before Ingot's own (so that they win), e.g.
 *                         "-i KEY -o UserKnownHostsFile=FILE -F CONFIG".
 *
 * fork() from a process with other threads running is unsafe: call these from
 * a single-threaded caller (the compiler is). POSIX only. */

typedef enum ingot_driver_measure_kind_t {
  INGOT_DRIVER_MEASURE_OK = 0,          /* ran, outputs match, timed */
  INGOT_DRIVER_MEASURE_LOAD_FAILED = 1, /* the candidate does not open or gets no session */
  INGOT_DRIVER_MEASURE_RUN_FAILED = 2,  /* ingot_session_run returned an error */
  INGOT_DRIVER_MEASURE_CRASH = 3,       /* the child was killed by a signal (`signal`) */
  INGOT_DRIVER_MEASURE_TIMEOUT = 4,     /* the child ran past timeout_s and was killed */
  INGOT_DRIVER_MEASURE_WRONG = 5,       /* outputs (or the input/output signature) differ */
  INGOT_DRIVER_MEASURE_ERROR = 6,       /* the measurement itself failed: fork or pipe, or
                                           the reference does not load or run */
} ingot_driver_measure_kind_t;

/* "ok", "load_failed", "run_failed", "crash", "timeout", "wrong", "error". */
const char* ingot_driver_measure_kind_name(ingot_driver_measure_kind_t kind);

/* Zero fields take the defaults in parentheses. */
typedef struct ingot_driver_measure_options_t {
  uint32_t rounds;       /* alternating rounds (10), at most INGOT_DRIVER_MEASURE_MAX_ROUNDS */
  uint32_t repeats;      /* timed repeats per program and round (5) */
  uint32_t warmup;       /* untimed runs of each program first (2) */
  double min_repeat_ms;  /* a repeat runs the program as many times as the reference needs to
                            last this long, the same count for both (1.0) */
  double timeout_s;      /* the whole child, loading included (30) */
  uint32_t threads;      /* session threads (1) */
  bool wall_clock;       /* time by the wall clock; otherwise, with one thread, by the CPU time of
                            the thread that runs the kernels, which leaves out the time other
                            processes held the core (more than one thread: always the wall clock) */
  uint64_t seed;         /* input data: the same seed gives the same inputs (0 is a seed too) */
  double rtol, atol;     /* |cand - ref| <= atol + rtol * |ref| for float outputs (1e-3, 1e-4) */
  double margin;         /* confirm: accept when ratio_hi < 1 - margin (0.05) */
  uint32_t confirmations; /* confirm: fresh measurements after the first (2) */
  bool candidate_first;  /* open the candidate before the reference (false); where the two land in
                            memory, and so their speed, depends on the order: confirm alternates it */
  const char* runner;    /* where to measure: NULL or "local", a child of this process;
                            "ssh://[USER@]HOST[:PORT]", on HOST through ssh (see above). Anything
                            else: INVALID_ARGUMENT naming it */
} ingot_driver_measure_options_t;

#define INGOT_DRIVER_MEASURE_MAX_ROUNDS 64u

typedef struct ingot_driver_measure_result_t {
  ingot_driver_measure_kind_t kind;
  int signal;                 /* CRASH: the signal that killed the child */
  char message[256];          /* what went wrong and where ("" when OK) */
  uint32_t rounds;            /* rounds timed */
  uint32_t runs_per_repeat;   /* runs per timed repeat (from min_repeat_ms) */
  double candidate_ms;        /* median over rounds of the per-round medians, one run */
  double reference_ms;
  double ratio;               /* candidate_ms / reference_ms: below 1 is faster */
  double ratio_lo, ratio_hi;  /* 25th / 75th percentile of the per-round ratios */
  double ratio_min, ratio_max;
  double max_abs_diff;        /* largest |candidate - reference| over float outputs */
  uint32_t output_crc;        /* ingot_crc32 over the candidate's output bytes, in order */
  uint32_t measurements;      /* children behind these numbers: 1, or from confirm the count
                                 of looks taken (the numbers are the least favourable look's) */
} ingot_driver_measure_result_t;

/* Measures `candidate` against `reference` (bundle bytes, only read) as above
 * and fills *out_result. Fails (INVALID_ARGUMENT) only for missing arguments,
 * rounds above the maximum or a malformed runner, and (NOT_FOUND) for an ssh
 * runner without an ingot-measure program to copy; everything that goes
 * wrong with the bundles or the remote machine is out_result->kind. */
ingot_status_t ingot_driver_measure(const void* candidate, size_t candidate_size, const void* reference,
                                    size_t reference_size, const ingot_driver_measure_options_t* options,
                                    ingot_driver_measure_result_t* out_result);

/* Checks a runner string as ingot_driver_measure would, before anything is
 * measured (for a command-line flag): OK for NULL, "local" and a well-formed
 * "ssh://..." whose ingot-measure program is found (INVALID_ARGUMENT or
 * NOT_FOUND otherwise, with the message). Nothing is contacted. */
ingot_status_t ingot_driver_measure_runner_check(const char* runner);

/* Removes the temporary folders that ssh runners made on their machines (one
 * ssh call each, errors ignored) and forgets them; the next measurement
 * through a runner sets it up again. Call it once measuring is over (a
 * process that never calls it leaves the folders in the remote /tmp). */
void ingot_driver_measure_runners_release(void);

/* Whether one measurement calls the candidate faster: OK and
 * ratio_hi < 1 - margin (margin <= 0: 0.05). */
bool ingot_driver_measure_is_faster(const ingot_driver_measure_result_t* result, double margin);

/* Accepts a candidate as better only after more looks: `first` (a
 * measurement of this pair; NULL: measured here first) must be faster, then
 * the pair is measured `confirmations` more times, each in a fresh child with
 * the loading order flipped, and must be faster every time (it stops at the
 * first look that is not). *out_result is the least favourable look (its
 * `measurements` counts the looks), *out_accepted the verdict. */
ingot_status_t ingot_driver_measure_confirm(const void* candidate, size_t candidate_size, const void* reference,
                                            size_t reference_size, const ingot_driver_measure_options_t* options,
                                            const ingot_driver_measure_result_t* first,
                                            ingot_driver_measure_result_t* out_result, bool* out_accepted);

/* One candidate's bytes, for measuring many. */
typedef struct ingot_driver_bundle_bytes_t {
  const void* data;
  size_t size;
} ingot_driver_bundle_bytes_t;

/* ingot_driver_measure for each of `count` candidates against one reference,
 * one child each, in order: out_results has `count` entries. */
ingot_status_t ingot_driver_measure_candidates(const ingot_driver_bundle_bytes_t* candidates, uint32_t count,
                                               const void* reference, size_t reference_size,
                                               const ingot_driver_measure_options_t* options,
                                               ingot_driver_measure_result_t* out_results);


/* ---- Tuning a model (driver_tune.c; `ingot tune`) ----
 *
 * The tasks are the model's unique workloads on one target (kernels that
 * share a workload share a schedule), each with the spaces of the templates
 * of its op class; a task whose spaces hold one point is left out. Measured
 * with one thread (measure.threads 0 or 1), the knobs that act only with
 * more threads (threads, parallel_min_work) keep their defaults: one thread
 * cannot see them, and would favour serial code that is slower where the
 * bundle runs on several. The
 * search is schedule/tune.h's; this file gives it its hooks: featurize (lower
 * the task's node, apply the point's schedule, read the cost features and
 * the schedule key), and measure (build the candidates' one-kernel bundles,
 * `jobs` at a time in child processes, and time each interleaved with the
 * task's incumbent through ingot_driver_measure; a candidate that looks
 * faster is confirmed with more looks before it counts). A point with
 * layout knobs other than the defaults is lowered from a graph optimized
 * with that layout for the task's workload (kept for the next points).
 *
 * The log (log_path) is appended one record a line as results come in,
 * and read first: records of this target (and, when the fingerprint names
 * one, this CPU model) for the tasks are given back to the search, so a
 * killed run continues where it stopped and the trial budget counts them.
 * An incomplete last line (a run killed while writing) is dropped. The cost
 * model is saved beside the log (LOG without .json/.jsonl + ".costmodel.ubj")
 * after the run and loaded from there to warm-start the next one. */

/* One line of progress, after each measured batch (and once at the end). */
typedef struct ingot_driver_tune_progress_t {
  uint32_t trials;           /* measurements so far, earlier runs' included */
  uint32_t budget;
  uint32_t task;             /* the batch's task (index into the tasks) */
  uint32_t task_count;
  const char* workload;
  double default_ms;         /* sum over measured tasks of weight x default time */
  double best_ms;            /* ... x best time: default_ms / best_ms is the speed-up */
  double elapsed_s;
  bool done;
} ingot_driver_tune_progress_t;

typedef void (*ingot_driver_tune_progress_fn_t)(void* self, const ingot_driver_tune_progress_t* progress);

typedef struct ingot_driver_tune_options_t {
  /* The model, input shapes, consts, `cc` and one target (targets[0];
   * none: as compile). Tuning logs and hooks in it are ignored. */
  const ingot_driver_options_t* compile;
  const char* log_path;      /* required: appended, resumed from */
  uint32_t trials;           /* the whole model's budget (0: 1000); a shard gets its share of it,
                                in proportion to its tasks */
  double time_limit_s;       /* stop after the batch that passes it (0: none) */
  uint32_t jobs;             /* candidates built at once (1) */
  uint32_t batch;            /* candidates per round (8) */
  uint32_t shard_index, shard_count;  /* tune tasks i with i % count == index (count 0: all) */
  bool random_search;        /* random points, no cost model */
  uint64_t seed;
  const char* cpu_model;     /* the fingerprint's and the resume filter's CPU (NULL: this machine's) */
  ingot_driver_measure_options_t measure; /* zero fields: defaults (6 rounds, 3 repeats, confirm 2) */
  void* hook_self;
  ingot_driver_tune_progress_fn_t on_progress;
} ingot_driver_tune_options_t;

typedef struct ingot_driver_tune_task_report_t {
  char* workload;
  uint32_t weight;           /* steps that run it */
  uint32_t trials;           /* records of this run and earlier ones */
  double default_ms, best_ms; /* negative when not measured */
} ingot_driver_tune_task_report_t;

typedef struct ingot_driver_tune_report_t {
  char target[INGOT_TARGET_NAME_BYTES];
  uint32_t task_count;       /* this shard's */
  uint32_t model_task_count; /* unique tunable workloads of the model */
  ingot_driver_tune_task_report_t* tasks;
  uint32_t budget;           /* this shard's trials (earlier runs' records included) */
  uint32_t trials, resumed, errors; /* records in all, of them from the log before, failed ones */
  double default_ms, best_ms;
  double accuracy;           /* the cost model's pairwise accuracy on each round's candidates, scored
                                before it was trained on them (0: no pairs) */
  uint64_t accuracy_pairs;
  double cv_accuracy;        /* ... on all records, 5-fold cross-validated (ingot_tuner_cross_validate) */
  uint64_t cv_pairs;
  double cv_accuracy_5;      /* ... on the pairs whose times differ by 5 % or more */
  uint64_t cv_pairs_5;
  double elapsed_s;
  bool model_loaded;         /* the cost model was warm-started from a saved one */
  char model_path[1024];     /* where the cost model was saved ("" when not) */
  uint32_t dropped_line;     /* the incomplete last line dropped from the log (0: none) */
} ingot_driver_tune_report_t;

/* Tunes as above; *out_report is the caller's to free with
 * ingot_driver_tune_report_free (also on failure). Fails on a model that
 * does not compile, a log that cannot be read (naming file and line) or
 * written, or a bad shard; never because of a candidate. */
ingot_status_t ingot_driver_tune(const ingot_driver_tune_options_t* options, ingot_driver_tune_report_t* out_report);
void ingot_driver_tune_report_free(ingot_driver_tune_report_t* report);

#endif /* INGOT_DRIVER_H_ */
