/* Private to schedule/: helpers shared by the primitives and the templates. */
#ifndef INGOT_SCHEDULE_INTERNAL_H_
#define INGOT_SCHEDULE_INTERNAL_H_

#include "schedule/schedule.h"

/* The FOR statement binding the loop variable called `name`, or NULL. */
ingot_ir_stmt_t* ingot_schedule_find_loop(const ingot_ir_func_t* func, const char* name);
/* For the stage nest `nest` (a perfect nest of loops around one store):
 * true when its store is y[i] = E(y[i], r[i]..) reading nothing else but
 * input buffers r of y's layout at the same index, an epilogue
 * ingot_schedule_accumulate_ex can fold; *out_buffer is y. */
bool ingot_schedule_is_epilogue(const ingot_ir_func_t* func, const ingot_ir_stmt_t* nest, uint32_t* out_buffer);
/* Whether the innermost store of a perfect nest has the form register
 * accumulation takes: y[i] = start op e, op add/max/min, start y[i] or
 * select(first, init, y[i]), e not reading y. */
bool ingot_schedule_nest_accumulates(const ingot_ir_stmt_t* nest);
/* The buffer the innermost store of a perfect nest writes, UINT32_MAX if none. */
uint32_t ingot_schedule_nest_store_buffer(const ingot_ir_stmt_t* nest);
/* Whether the nest at `loop` has the form ingot_schedule_reduce_threads
 * takes (its GPU binding aside); fails saying why not. */
ingot_status_t ingot_schedule_reduce_threads_check(const ingot_ir_func_t* func, const ingot_ir_stmt_t* loop);
/* Whether ingot_schedule_accumulate_local takes the nest at `loop`. */
bool ingot_schedule_accumulate_local_check(const ingot_ir_func_t* func, const ingot_ir_stmt_t* loop);
/* Sets (or appends) a knob value; names are copied into the schedule. */
void ingot_schedule_set_knob(ingot_schedule_t* schedule, const char* name, int64_t value);

/* Appends one directive's readable text ("split j by 8 -> j_o, j_i"). */
void ingot_schedule_describe_directive(const ingot_directive_t* d, ingot_strbuf_t* sb);

/* One record of a tuning log (strings in the log's arena). */
typedef struct tuning_record_t {
  const char* workload;
  const char* target;
  const char* template_name;
  const char* knob_names[INGOT_MAX_KNOBS];
  int64_t knob_values[INGOT_MAX_KNOBS];
  uint32_t knob_count;
  double time_ms;
  uint32_t line;            /* in the file, from 1 */
  const char* fp_target;    /* the fingerprint's, NULL without one */
  const char* fp_cpu;       /* NULL or "" when unknown */
  bool is_default;          /* "default": true */
  bool is_best;             /* "best": true (the tuner accepted it): wins a tie in time */
  const char* error;        /* "error": the candidate failed; never applied */
} tuning_record_t;

struct ingot_tuning_log_t {
  ingot_arena_t arena;
  tuning_record_t* records;
  uint32_t count;
};

#endif /* INGOT_SCHEDULE_INTERNAL_H_ */
