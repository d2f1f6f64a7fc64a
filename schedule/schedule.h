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
} ingot_directive_kind_t;

typedef struct ingot_directive_t {
  ingot_directive_kind_t kind;
  const char* loop;             /* the loop acted on (FUSE: the outer one) */
  const char* inner;            /* FUSE: the inner loop */
  int64_t factor;               /* SPLIT: inner extent */
  const char* outer_name;       /* SPLIT/FUSE: name of the new outer / fused loop */
  const char* inner_name;       /* SPLIT: name of the new inner loop */
  const char* const* order;     /* REORDER: loop names, outer -> inner */
  uint32_t order_count;
} ingot_directive_t;

#define INGOT_MAX_KNOBS 8

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
ingot_status_t ingot_schedule_accumulate(ingot_ir_func_t* func, const char* loop);
/* The same; with `epilogue`, when the statement after this nest in the
 * function body is a FINISH stage y[i] = E(y[i]) that reads nothing else
 * (a fused activation), the final stores become y[i] = E(acc) and that
 * stage is removed (the nest must then be the whole UPDATE). The directive
 * form: ACCUMULATE with factor 1. */
ingot_status_t ingot_schedule_accumulate_ex(ingot_ir_func_t* func, const char* loop, bool epilogue);

/* Applies every directive in order; on failure names the directive. */
ingot_status_t ingot_schedule_apply(ingot_ir_func_t* func, const ingot_schedule_t* schedule);

/* Appends a readable listing of the schedule (template, knobs, directives). */
void ingot_schedule_describe(const ingot_schedule_t* schedule, ingot_strbuf_t* sb);

/* A tuning log: JSON lines, see DESIGN.md. NULL means none. One record a line:
 *   {"version":1,"workload":"...","target":"c -mcpu=x86-64-v3",
 *    "template":"contraction.direct","knobs":{"threads":8,...},"time_ms":1.25}
 * Blank lines are skipped, as are records of another version. */
typedef struct ingot_tuning_log_t ingot_tuning_log_t;

/* Reads a log file. Fails naming the path and line of a malformed record;
 * *out_log is NULL on failure. */
ingot_status_t ingot_tuning_log_load(const char* path, ingot_tuning_log_t** out_log);
void ingot_tuning_log_destroy(ingot_tuning_log_t* log);

/* Builds the schedule of a template for a kernel with the given knob values
 * (knobs not given take the template's defaults for the target). This is
 * what ingot_schedule_choose uses, and what a tuner calls to try knobs.
 * Templates: "injective", "contraction.direct", "pool", "row"; each kernel
 * op class has exactly one. Fills `out_schedule` (init'ed by the caller;
 * emptied again on failure). */
ingot_status_t ingot_schedule_from_template(const ingot_kernel_t* kernel, const ingot_target_t* target,
                                            const char* template_name, const char* const* knob_names,
                                            const int64_t* knob_values, uint32_t knob_count,
                                            ingot_schedule_t* out_schedule);
/* The template used for a kernel's op class (NULL for an unknown class). */
const char* ingot_schedule_template_for(ingot_op_class_t op_class);

/* The one place a schedule is chosen for a workload: the best record in the
 * log for (kernel->workload, target) if any, else the template's default
 * knobs for this target. Fills `out_schedule` (init'ed by the caller). */
ingot_status_t ingot_schedule_choose(const ingot_kernel_t* kernel, const ingot_target_t* target,
                                     const ingot_tuning_log_t* log, ingot_schedule_t* out_schedule);

#endif /* INGOT_SCHEDULE_H_ */
