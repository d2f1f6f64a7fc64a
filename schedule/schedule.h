/* Schedules: loop-IR rewrites as data, templates with knobs, and the one
 * place where a schedule is chosen per workload.
 *
 * A schedule is a list of directives applied in order by
 * ingot_schedule_apply. Directives name loops by their variable names
 * (unique in a function; a split names its two new loops). Each primitive
 * keeps the function's results unchanged, or fails and leaves it unchanged.
 *
 * Targets are described in target/target.h (included here, so callers of
 * schedules see them); codegen/ compiles for them. */
#ifndef INGOT_SCHEDULE_H_
#define INGOT_SCHEDULE_H_

#include "lower/ir.h"
#include "lower/lower.h"
#include "target/target.h"

/* ---- Directives ---- */
typedef enum ingot_directive_kind_t {
  INGOT_DIRECTIVE_SPLIT = 1,     /* loop -> outer, inner (factor); tail guarded */
  INGOT_DIRECTIVE_REORDER = 2,   /* order[]: permute perfectly nested loops */
  INGOT_DIRECTIVE_FUSE = 3,      /* loop (outer) + inner -> fused (outer_name) */
  INGOT_DIRECTIVE_UNROLL = 4,    /* loop */
  INGOT_DIRECTIVE_VECTORIZE = 5, /* loop */
  INGOT_DIRECTIVE_PARALLEL = 6,  /* loop */
  INGOT_DIRECTIVE_ACCUMULATE = 7,/* loop: the outermost reduce loop of a register
                                    tile (see ingot_schedule_accumulate); factor 1:
                                    with the epilogue (ingot_schedule_accumulate_ex) */
  INGOT_DIRECTIVE_BIND_BLOCK = 8,  /* loop -> a GPU grid's blocks, axis `factor` (0 x, 1 y, 2 z) */
  INGOT_DIRECTIVE_BIND_THREAD = 9, /* loop -> a GPU block's threads, axis `factor` */
  INGOT_DIRECTIVE_BARRIER = 10,    /* loop: a barrier after the stage holding it
                                      (ingot_schedule_barrier_after) */
  INGOT_DIRECTIVE_REDUCE_THREADS = 11, /* loop: the outermost reduce loop of a stage,
                                          shared by `factor` threads of a block
                                          (ingot_schedule_reduce_threads) */
  INGOT_DIRECTIVE_ACCUMULATE_LOCAL = 12, /* loop: the outermost reduce loop of a stage
                                            (ingot_schedule_accumulate_local) */
  INGOT_DIRECTIVE_CACHE_READ = 13, /* buffer `inner` read inside `loop` -> SHARED buffer `outer_name`
                                      (NULL: "<buffer>_shared"); factor: shared bytes at most (0: no
                                      limit); see ingot_schedule_cache_read */
} ingot_directive_kind_t;

typedef struct ingot_directive_t {
  ingot_directive_kind_t kind;
  const char* loop;             /* the loop acted on (FUSE: the outer one) */
  const char* inner;            /* FUSE: the inner loop; CACHE_READ: the buffer */
  int64_t factor;               /* SPLIT: inner extent */
  const char* outer_name;       /* SPLIT/FUSE: name of the new outer / fused loop;
                                   CACHE_READ: name of the SHARED buffer */
  const char* inner_name;       /* SPLIT: name of the new inner loop */
  const char* const* order;     /* REORDER: loop names, outer -> inner */
  uint32_t order_count;
} ingot_directive_t;

#define INGOT_MAX_KNOBS 32

typedef struct ingot_schedule_t {
  const char* template_name;    /* "contraction.direct", "injective", ... */
  const char* knob_names[INGOT_MAX_KNOBS];
  int64_t knob_values[INGOT_MAX_KNOBS];
  uint32_t knob_count;
  ingot_directive_t* directives;
  uint32_t directive_count;
  ingot_arena_t arena;          /* owns directives and names */
} ingot_schedule_t;

void ingot_schedule_init(ingot_schedule_t* schedule);
void ingot_schedule_deinit(ingot_schedule_t* schedule);
/* Appends a directive (strings copied into the schedule's arena). */
void ingot_schedule_add(ingot_schedule_t* schedule, const ingot_directive_t* directive);

/* Each primitive on its own (the directive form calls these). */
ingot_status_t ingot_schedule_split(ingot_ir_func_t* func, const char* loop, int64_t factor,
                                    const char* outer_name, const char* inner_name);
ingot_status_t ingot_schedule_reorder(ingot_ir_func_t* func, const char* const* order,
                                      uint32_t count);
ingot_status_t ingot_schedule_fuse(ingot_ir_func_t* func, const char* outer, const char* inner,
                                   const char* fused_name);
ingot_status_t ingot_schedule_mark(ingot_ir_func_t* func, const char* loop,
                                   ingot_ir_loop_kind_t kind);

/* Register accumulation. `loop` heads a nest
 *   for r.. (serial) { for u.. (unrolled) { for v (vectorized) {
 *     y[idx] = start op e } } }
 * whose store index does not use the r loops, op one of add, max, min and
 * start either y[idx] or select(first, init, y[idx]) (lower_update_start).
 * It becomes
 *   for v (vectorized) { acc_c = start_c ...; for r.. { acc_c = acc_c op e_c ... };
 *                        y[idx_c] = acc_c ... }
 * with one local per combination c of the unrolled loops' values (at most 64):
 * the accumulators of a register tile, kept in registers through the whole
 * reduction. start_c is init when `first` is exactly "every r loop at 0",
 * else y[idx_c] (and the select stays in the loop). Must be the last
 * directive on that nest. */
/* Binds a loop to a GPU's blocks or threads (kind INGOT_IR_LOOP_GPU_BLOCK or
 * _GPU_THREAD) along `axis` (0 x, 1 y, 2 z). Fails, leaving the function as
 * it was, when the nesting rules of bound loops (lower/ir.h) would break. */
ingot_status_t ingot_schedule_bind(ingot_ir_func_t* func, const char* loop, ingot_ir_loop_kind_t kind,
                                   uint32_t axis);
ingot_status_t ingot_schedule_accumulate(ingot_ir_func_t* func, const char* loop);
/* Register accumulation without vectors (one GPU thread's reduction):
 * `loop` heads a perfect nest of serial reduce loops r.. around one store
 * y[idx] = start op e (op add, mul, max or min; start y[idx] or
 * select(first, init, y[idx]); idx not using the r loops; e not reading
 * y). It becomes { acc = start0; for r.. { acc = acc op e }; y[idx] = acc }
 * with start0 init when `first` is exactly "every r loop at 0" (else
 * y[idx], and the select stays in the loop): the same operations in the
 * same order, y read and written once. */
ingot_status_t ingot_schedule_accumulate_local(ingot_ir_func_t* func, const char* loop);
/* Inserts a barrier (INGOT_IR_STMT_BARRIER: every thread of the block waits)
 * right after the statement of the function's body block that holds loop
 * `loop` (a stage). For kernels that run as one block whose threads stride
 * over every stage: a later stage may then read what other threads of the
 * block wrote in an earlier one. Fails when the body is not a block, or
 * when the stage is the last statement (nothing to wait for). */
ingot_status_t ingot_schedule_barrier_after(ingot_ir_func_t* func, const char* loop);
/* A reduction shared by the threads of a GPU block. `loop` heads a perfect
 * nest of serial reduce loops r.. around one store
 *   y[idx] = start op e      (op add, max or min; idx not using the r loops;
 *                             start y[idx], or select(first, init, y[idx])
 *                             with first exactly "every r loop at 0")
 * inside a GPU_BLOCK loop and outside every GPU_THREAD loop; e reads no
 * buffer the function stores. With P = min(threads, R) threads (R the
 * reduce loops' total extent, `threads` a power of two), it becomes
 *   for t < P (GPU_THREAD x) { acc = e(t); for k { acc = acc op e(t + k*P) }
 *                              red[t] = acc }
 *   BARRIER; then for s = P/2 .. 1 (halving, rounded up to a power of two):
 *   for t < s (GPU_THREAD x) { if (t + s < P) red[t] = red[t] op red[t + s] } BARRIER
 *   for t < 1 (GPU_THREAD x) { y[idx] = start' op red[0] }  BARRIER
 * with red a new SHARED buffer of P elements of y's dtype (named after y)
 * and start' init (the select form) or y[idx]. The tree combines the
 * partial results in another order than the serial loop (float sums round
 * differently). Fails, leaving the function as it was, on any other form. */
ingot_status_t ingot_schedule_reduce_threads(ingot_ir_func_t* func, const char* loop, int64_t threads);
/* ingot_schedule_accumulate also takes its nest without a vectorized loop
 * (a GPU thread's tile): the
 * unrolled loops hold the store directly, maybe under guards (IFs whose
 * conditions read no buffer, such as split tails):
 *   for r.. { for u.. (unrolled) { if (g..) y[idx] = start op e } }
 * becomes, per combination c of the unrolled loops,
 *   acc_c = 0; if (gs_c) acc_c = start_c; for r.. { if (g_c..) acc_c = acc_c op e_c };
 *   if (gs_c) y[idx_c] = acc_c
 * where gs are the guards that read no r loop (a guard reading both an r
 * loop and a variable of the store index is refused). Loops around the nest whose variable
 * the store index does not read repeat the whole reduction on the same
 * outputs (the outer steps of a split reduction): with the epilogue, the
 * final store is y[idx_c] = E(acc_c) only on their last iteration,
 * y[idx_c] = acc_c before. */
/* The same; with `epilogue`, when the statement after this nest in the
 * function body is a FINISH stage y[i] = E(y[i]) that reads nothing else
 * (a fused activation), the final stores become y[i] = E(acc) and that
 * stage is removed (the nest must then be the whole UPDATE). The directive
 * form: ACCUMULATE with factor 1. */
ingot_status_t ingot_schedule_accumulate_ex(ingot_ir_func_t* func, const char* loop, bool epilogue);

/* Stages a buffer in a GPU block's shared memory for the loads inside one
 * loop. `loop` is any loop outside every GPU thread loop (and every
 * parallel, vectorized or unrolled one); `buffer` a parameter buffer that
 * the loop reads and does not write. The loads of `buffer` inside the loop
 * must all read base + sum(coef_v * v) with the same base (any expression of
 * the variables outside the loop, no load) and the same non-negative
 * integer coefficients over the loop variables v bound inside the loop (the
 * loop's own included): the region they read in one iteration of the loops
 * outside. The region becomes a new SHARED buffer `shared_name` (NULL:
 * "<buffer>_shared") of prod(extent_v) elements over the loops with a
 * non-zero coefficient (ordered by coefficient, so a row of the source is a
 * row of the copy), and the loop is replaced by
 *   barrier; fill; barrier; loop'
 * where loop' reads the copy at sum(v * radix_v) and the fill copies element
 * e from base + sum(coef_v * digit_v(e)): a loop over e = j * NT + tid
 * inside GPU thread loops of the same axes and extents as the thread loops
 * inside `loop` (NT threads; no thread loops inside: one serial loop),
 * guarded by e < size and, where the region may reach past the buffer (a
 * tile over the edge of the data), by 0 <= src < numel: such elements are
 * never read back, as the loads inside keep their guards. The first barrier
 * is left out when the statement before the loop is already one (two
 * cache_reads at one loop share it). Refused with a message naming buffer
 * and loop, leaving the function as it was: an index that is not affine
 * (a division or modulo of a loop variable, a product of two, a gather, a
 * local set inside the loop), different bases or coefficients, a falling
 * index, a loop that writes the buffer, and a region whose bytes with the
 * function's other SHARED buffers exceed `max_bytes` (> 0; 0: no limit).
 * No double buffering (one copy, two barriers per iteration of the loop
 * around). Directive: CACHE_READ. */
ingot_status_t ingot_schedule_cache_read(ingot_ir_func_t* func, const char* loop, const char* buffer,
                                         const char* shared_name, int64_t max_bytes);

/* Applies every directive in order; on failure names the directive. */
ingot_status_t ingot_schedule_apply(ingot_ir_func_t* func, const ingot_schedule_t* schedule);

/* Appends a readable listing of the schedule (template, knobs, directives). */
void ingot_schedule_describe(const ingot_schedule_t* schedule, ingot_strbuf_t* sb);

/* A tuning log: JSON lines, see DESIGN.md and README "Schedule spaces and
 * tuning logs". NULL means none. One record a line:
 *   {"version":1,"workload":"...","target":"c -mcpu=x86-64-v3",
 *    "template":"contraction.direct","knobs":{"threads":8,...},"time_ms":1.25,
 *    "fingerprint":{"target":"c -mcpu=x86-64-v3","cpu":"<CPU model name>",
 *                   "cpu_features":"sse4.2 avx2 fma ...","ingot":"0.1.0","log_version":1}}
 * Optional fields: "fingerprint" (every record the writer makes has one;
 * older version-1 records without it are still read), "default": true (the
 * measurement of the default schedule, for `ingot log stats`), "error":
 * "text" (a candidate that failed; its "time_ms" may be absent; never
 * applied). Blank lines are skipped, as are records of another version. */
#define INGOT_TUNING_LOG_VERSION 1
typedef struct ingot_tuning_log_t ingot_tuning_log_t;

/* Where a record was measured, written into each record by the writer. The
 * target is the record's own; the rest is the measuring machine's:
 * cpu_model its CPU model name (ingot_cpu_model() of the runtime), or "" /
 * NULL when unknown, cpu_features its feature list (space-separated,
 * ingot_cpu_features()), ingot_version "MAJOR.MINOR.PATCH". */
typedef struct ingot_tuning_fingerprint_t {
  const char* cpu_model;
  const char* cpu_features;
  const char* ingot_version;
} ingot_tuning_fingerprint_t;

/* Reads a log file. Fails naming the path and line of a malformed record;
 * *out_log is NULL on failure. */
ingot_status_t ingot_tuning_log_load(const char* path, ingot_tuning_log_t** out_log);
void ingot_tuning_log_destroy(ingot_tuning_log_t* log);
/* The pre-tuned logs built into the compiler (schedule/logs/NAME.jsonl: the
 * benchmark models tuned on the machine classes named by their file names)
 * as one log; its records apply only where their target and CPU match, as
 * any log's. Fails only when a built-in log is malformed. */
ingot_status_t ingot_tuning_log_builtin(ingot_tuning_log_t** out_log);
/* The built-in logs' file names (up to `capacity` into out_names); returns
 * how many there are. */
uint32_t ingot_tuning_log_builtin_names(const char** out_names, uint32_t capacity);
/* Appends one record (a JSON line, no newline) for a schedule of
 * `workload` on target `target` measured at `time_ms`: its template, every
 * knob it holds, and the fingerprint (`fingerprint` required; its fields may
 * be NULL, written as ""). */
ingot_status_t ingot_tuning_log_format_record(const char* workload, const char* target,
                                              const ingot_schedule_t* schedule, double time_ms,
                                              const ingot_tuning_fingerprint_t* fingerprint, ingot_strbuf_t* sb);

/* One record as data: what the tuner writes (ingot_tuning_log_format_entry)
 * and reads back to resume (ingot_tuning_log_entry). Strings are borrowed
 * (from the log when read). */
typedef struct ingot_tuning_entry_t {
  const char* workload;
  const char* target;
  const char* template_name;
  const char* knob_names[INGOT_MAX_KNOBS];
  int64_t knob_values[INGOT_MAX_KNOBS];
  uint32_t knob_count;
  double time_ms;            /* not written for an error */
  bool is_default;           /* "default": true */
  bool best;                 /* "best": true: the tuner accepted it as its workload's fastest so far */
  const char* error;         /* "error": what went wrong ("crash: ...", "wrong: ..."); NULL: none */
  bool has_ratio;            /* "ratio": [median, 25th, 75th percentile] against the schedule it
                                was timed with (written when set; not read back) */
  double ratio, ratio_lo, ratio_hi;
  const char* cpu_model;     /* read: the fingerprint's CPU model, NULL without one */
  uint32_t line;             /* read: its line in the file */
} ingot_tuning_entry_t;

/* The records of a loaded log (of its version), in file order. */
uint32_t ingot_tuning_log_count(const ingot_tuning_log_t* log);
void ingot_tuning_log_entry(const ingot_tuning_log_t* log, uint32_t index, ingot_tuning_entry_t* out_entry);
/* Appends one record (a JSON line, no newline) with the fingerprint, as
 * ingot_tuning_log_format_record does. */
ingot_status_t ingot_tuning_log_format_entry(const ingot_tuning_entry_t* entry,
                                             const ingot_tuning_fingerprint_t* fingerprint, ingot_strbuf_t* sb);
/* Whether a knob acts before lowering (pack, panel, pointwise_matmul,
 * chains: knobs.def's layout column). */
bool ingot_schedule_knob_is_layout(const char* name);

/* `ingot log`: whole-log operations on the raw JSON lines (every field kept).
 * Each reads the files named, failing with one message naming the file and
 * line of the first malformed line, and builds its output text in `sb`
 * (the caller writes it). A record's key is (workload, target); its time is
 * "time_ms" unless it has "error".
 *   stats: per key, in order of first appearance: records, errors, the best
 *          time, the default time (the fastest record with "default": true).
 *          As text lines, or one JSON object {"log":..., "workloads":[...]}.
 *   best:  the fastest record (not an error) of each key, sorted by key.
 *   merge: every record of every file, exact duplicates (the same JSON
 *          object, key order aside) once, sorted by key, then time, then
 *          the record's canonical text. */
ingot_status_t ingot_tuning_log_stats(const char* path, bool json, ingot_strbuf_t* sb);
ingot_status_t ingot_tuning_log_best(const char* path, ingot_strbuf_t* sb);
ingot_status_t ingot_tuning_log_merge(const char* const* paths, uint32_t path_count, ingot_strbuf_t* sb);

/* ---- Templates and their spaces ----
 *
 * A template (schedule/templates.def, one file each) turns knob values into
 * directives for a kernel of its op class. Its space for a kernel on a
 * target lists every knob's legal values: each point of the product of
 * those lists compiles to a correct program, and nothing else is accepted.
 * Defaults are derived from the target and reproduce the compiler's fixed
 * choices. Several templates may serve one op class; the first is the
 * default, the others are chosen only through a tuning log. */

#define INGOT_MAX_KNOB_VALUES 40

typedef struct ingot_schedule_knob_space_t {
  const char* name;             /* static storage: "threads", "max_rows", ... */
  int64_t default_value;        /* one of values[] */
  int64_t values[INGOT_MAX_KNOB_VALUES]; /* ascending, distinct */
  uint32_t value_count;
} ingot_schedule_knob_space_t;

typedef struct ingot_schedule_space_t {
  const char* template_name;    /* static storage */
  ingot_op_class_t op_class;
  ingot_schedule_knob_space_t knobs[INGOT_MAX_KNOBS]; /* in the template's order */
  uint32_t knob_count;
} ingot_schedule_space_t;

/* The number of templates, and template `index`'s name and op class. */
uint32_t ingot_schedule_template_count(void);
const char* ingot_schedule_template_name(uint32_t index);
ingot_op_class_t ingot_schedule_template_class(uint32_t index);
/* The default CPU template of a kernel's op class (NULL for an unknown
 * class). Templates named "gpu.*" (templates.def) are GPU templates: only
 * GPU target kinds (INGOT_TARGET_CUDA, _ROCM) see them. */
const char* ingot_schedule_template_for(ingot_op_class_t op_class);
/* Whether template `index` may schedule `kernel` on `target`: it serves the
 * kernel's op class and the target's kind, and (a GPU template, which may
 * not take every kernel of its class) its space for the kernel is not
 * empty. */
bool ingot_schedule_template_applies(const ingot_kernel_t* kernel, const ingot_target_t* target, uint32_t index);
/* The default template for a kernel on a target: on GPU kinds the first GPU
 * template that fits it, else (and on CPU kinds) ingot_schedule_template_for. */
const char* ingot_schedule_template_default(const ingot_kernel_t* kernel, const ingot_target_t* target);

/* GPU templates (names "gpu.*" in templates.def) schedule kernels for GPU
 * target kinds (INGOT_TARGET_CUDA, _ROCM) only, the others CPU kinds only;
 * a GPU template may serve every op class (gpu.simt). */
bool ingot_schedule_target_is_gpu(const ingot_target_t* target);
/* Whether packed ConvInteger weights take dot4 words on `target` by
 * default (ingot_node_layout_t.dot4): its code generator has a byte dot
 * product (llvm on x86-64). */
bool ingot_schedule_target_has_dot4(const ingot_target_t* target);
/* Whether those words hold 2 channels as 16-bit halves on `target`
 * (ingot_node_layout_t.dot_pairs): x86-64 without AVX512-VNNI, whose dot
 * product is pmaddwd of 16-bit pairs (the loop IR's dot2). */
bool ingot_schedule_target_dot_pairs(const ingot_target_t* target);
/* Whether template `index` may schedule `kernel` on `target`: of the
 * target's kind, serving the kernel's op class, and (GPU templates) its
 * space opens for the kernel (gpu.row wants one long reduction). */
bool ingot_schedule_template_applies(const ingot_kernel_t* kernel, const ingot_target_t* target, uint32_t index);
/* The default template of `kernel` on `target`: on CPU kinds the class's
 * (ingot_schedule_template_for); on GPU kinds the first GPU template of the
 * kernel's own class that applies, else the first serving every class.
 * NULL when none. */
const char* ingot_schedule_template_default(const ingot_kernel_t* kernel, const ingot_target_t* target);

/* Lists, for `kernel` on `target`, each knob of template `template_name`
 * that applies to it with its legal values and default: powers of two up
 * to the target's vector width (vector_bytes), multiples of 4 up to the
 * target's register budget (accumulators), the register tile's row cap and
 * axis, and the layout choices of its node (pack, panel, pointwise_matmul,
 * chains; graph.h ingot_node_layout_options). Every knob's list is valid
 * in every layout the layout knobs allow, so each point of the product is
 * one program (loop splits follow from the knobs by fixed rules: a tile's
 * rows are the largest divisor of its axis within max_rows and the budget).
 * Fails when the template is unknown or does not fit the kernel's op class. */
ingot_status_t ingot_schedule_space(const ingot_kernel_t* kernel, const ingot_target_t* target,
                                    const char* template_name, ingot_schedule_space_t* out_space);
/* Appends the JSON object of one kernel's space for one template (what
 * `ingot compile --dump-space` writes, one per kernel and template):
 *   {"workload":"...","target":"...","template":"...","log_version":1,
 *    "knobs":{"KNOB":default,...},"space":{"KNOB":[legal values],...}} */
ingot_status_t ingot_schedule_space_format(const ingot_kernel_t* kernel, const ingot_target_t* target,
                                           const char* template_name, ingot_strbuf_t* sb);
/* The number of points of a space: the product of its knobs' value counts. */
double ingot_schedule_space_size(const ingot_schedule_space_t* space);

/* Builds the schedule of a template for a kernel with the given knob values;
 * knobs not given take the space's defaults, except layout knobs, which
 * take the layout the kernel was lowered with (given, they must equal it:
 * they act before lowering, through ingot_schedule_layout_chooser_t). Every value must be one its
 * space lists: anything else (an unknown knob, a knob that does not apply
 * to this kernel, a value not listed) is refused with a message naming the
 * kernel, template, knob, value and the legal values; nothing is rounded.
 * This is what ingot_schedule_choose uses, and what a tuner calls to try a
 * point. Fills `out_schedule` (init'ed by the caller; emptied again on
 * failure); its knobs are every knob of the space with the value used. */
ingot_status_t ingot_schedule_from_template(const ingot_kernel_t* kernel, const ingot_target_t* target,
                                            const char* template_name, const char* const* knob_names,
                                            const int64_t* knob_values, uint32_t knob_count,
                                            ingot_schedule_t* out_schedule);

/* A stable key of a schedule: FNV-1a 64 over a canonical text of its
 * template, its layout knobs (which change the lowered kernel, not the
 * directives) and its directives. Two schedules of one kernel with the same
 * key are the same program, so a search measures each key once. */
uint64_t ingot_schedule_key(const ingot_schedule_t* schedule);

/* What ingot_schedule_choose is told and tells about the log's records (all
 * optional: pass NULL for no CPU check and no report). */
typedef void (*ingot_schedule_skip_fn_t)(void* self, uint32_t line, const char* reason);
typedef struct ingot_schedule_choice_t {
  /* in: the CPU model the code is tuned for (NULL or "": any). A record
   * applies only when its fingerprint's target (if it has one) equals its
   * "target" and the compile target's canonical name, and, when both this
   * and the record's fingerprint name a CPU model, the two strings are
   * equal. Features and versions are not compared (the target already fixes
   * the instruction set). */
  const char* cpu_model;
  /* in: called for each record of the kernel's workload that was not
   * applied for a reason other than being slower ("other target 'x'", "other
   * CPU 'y'", "template 't' serves another op class", "an error record",
   * the knob check's message, ...), with its line in the log file. */
  ingot_schedule_skip_fn_t on_skip;
  void* skip_self;
  /* out: a record was applied, and its line (0: none, defaults used). */
  bool tuned;
  uint32_t line;
} ingot_schedule_choice_t;

/* The one place a schedule is chosen for a workload: the fastest record in
 * the log for (kernel->workload, target) that applies (see
 * ingot_schedule_choice_t), whose template serves the kernel's op class and
 * whose knobs its space accepts, if any; else the default template with its
 * default knobs for this target (ingot_schedule_template_default). `choice` may be NULL. Fills `out_schedule`
 * (init'ed by the caller). */
ingot_status_t ingot_schedule_choose(const ingot_kernel_t* kernel, const ingot_target_t* target,
                                     const ingot_tuning_log_t* log, ingot_schedule_choice_t* choice,
                                     ingot_schedule_t* out_schedule);

/* Layout knobs from a tuning log, before lowering: set with
 * ingot_graph_set_layout_chooser before the graph is optimized, it gives
 * each node with layout options the layout (pack, panel, pointwise_matmul,
 * chains) of the fastest record for its workload on each target whose
 * layout knobs the node allows (missing ones: defaults), and the default
 * layout where there is none. One graph holds one layout per node: when the
 * targets' records lay a node out differently, it fails naming the node and
 * the two targets, unless `lead_on_difference` is set; then the node takes
 * the first target's layout and `differs` (with the first such node and
 * target) tells the caller to optimize one graph per target (driver/ does,
 * so that two variants of a bundle may pack weights differently). `log` and
 * `targets` must outlive the optimization. */
typedef struct ingot_schedule_layout_chooser_t {
  ingot_layout_chooser_t base;
  const ingot_tuning_log_t* log;
  const ingot_target_t* targets;
  uint32_t target_count;
  const char* cpu_model;     /* in: as ingot_schedule_choice_t's (init: NULL, any CPU) */
  bool lead_on_difference;   /* in: see above (init: false) */
  bool differs;              /* out: some node's layout differs between targets */
  uint32_t differing_node;   /* out, when differs: the first such node */
  uint32_t differing_target; /* out, when differs: a target whose layout for it is not the first's */
} ingot_schedule_layout_chooser_t;
void ingot_schedule_layout_chooser_init(ingot_schedule_layout_chooser_t* chooser, const ingot_tuning_log_t* log,
                                        const ingot_target_t* targets, uint32_t target_count);

/* Range guards (schedule/range_guard.c): in a scheduled kernel of a graph
 * with ranged inputs, wraps the body of each serial or parallel loop that
 * walks a ranged dim of the kernel's output (ingot_value_t.run_sym) in
 * `if (its first position < the run's size)`, the size read from
 * graph->run_size, appended to the kernel's buffers and args. Leaves the
 * kernel whole where it cannot show every store inside such a loop lies
 * past the size (plus the value's run_margin) when the guard fails. */
ingot_status_t ingot_schedule_guard_ranges(const ingot_graph_t* graph, ingot_kernel_t* kernel);

#endif /* INGOT_SCHEDULE_H_ */
