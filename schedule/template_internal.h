/* Private to schedule/: the template registry's rows and the planning
 * helpers the template files share (template_plan.c).
 *
 * A template has two functions (templates.def): `space` lists each of its
 * knobs' legal values and default for one kernel on one target, `plan`
 * emits the directives for one point of that space. Plans read the kernel's
 * stages and never touch the function, so the same template + knobs always
 * give the same directives for a kernel (what a tuning log records). */
#ifndef INGOT_SCHEDULE_TEMPLATE_INTERNAL_H_
#define INGOT_SCHEDULE_TEMPLATE_INTERNAL_H_

#include "schedule/schedule.h"
#include "schedule_internal.h"

typedef enum schedule_knob_t {
#define INGOT_KNOB(id, name, layout, doc) SCHEDULE_KNOB_##id,
#include "knobs.def"
#undef INGOT_KNOB
  SCHEDULE_KNOB_COUNT
} schedule_knob_t;

_Static_assert(SCHEDULE_KNOB_COUNT <= INGOT_MAX_KNOBS, "INGOT_MAX_KNOBS is below the knob count of knobs.def");
#define TK(id) (1u << SCHEDULE_KNOB_##id)
_Static_assert(SCHEDULE_KNOB_COUNT <= 32, "a template's knob mask holds 32 knobs");

/* The op class of a template that serves every class (templates.def). */
#define SCHEDULE_ANY_CLASS ((ingot_op_class_t)0)

/* The knob's stable name and whether it acts before lowering. */
const char* schedule_knob_name(schedule_knob_t knob);
bool schedule_knob_is_layout(schedule_knob_t knob);

/* Where a plan runs: the kernel, the schedule being filled and the value of
 * every knob (those the template does not take hold their defaults). */
typedef struct plan_t {
  const ingot_kernel_t* kernel;
  const ingot_ir_func_t* f;
  const ingot_target_t* target;
  ingot_schedule_t* s;
  int64_t knob[SCHEDULE_KNOB_COUNT];
  bool register_tile;            /* contraction.direct: UPDATEs get a register tile */
  bool finish_folded;            /* the stage just planned folds the next (FINISH) one */
  INGOT_VEC(const char*) names;  /* names this plan created */
} plan_t;

/* Fills the legal values and default of every knob in `mask` that applies
 * to the kernel (the template's space). Knobs listed here, in knobs.def
 * order, are exactly those ingot_schedule_from_template accepts. */
typedef ingot_status_t (*template_space_fn_t)(plan_t* p, uint32_t mask, ingot_schedule_space_t* space);
typedef ingot_status_t (*template_plan_fn_t)(plan_t* p);

#define INGOT_TEMPLATE(id, name, op_class, knobs, space_fn, plan_fn) \
  ingot_status_t space_fn(plan_t* p, uint32_t mask, ingot_schedule_space_t* space); \
  ingot_status_t plan_fn(plan_t* p);
#include "templates.def"
#undef INGOT_TEMPLATE

/* ---- the register budget ---- */

/* `target`'s vector registers (16 where it does not say), and those a
 * register tile may fill by default: 32 vector registers (AVX-512, AArch64)
 * leave 24 for accumulators, 16 (SSE, AVX2) leave 12. The one place the
 * budget is derived from the target. */
int64_t schedule_register_count(const ingot_target_t* target);
int64_t schedule_register_budget(const ingot_target_t* target);

/* ---- building a space ---- */

/* Appends knob `knob` with `values` (any order, duplicates dropped, sorted
 * ascending; the default is added when missing) when it is in `mask`. */
void space_add(ingot_schedule_space_t* space, uint32_t mask, schedule_knob_t knob, const int64_t* values,
               uint32_t count, int64_t default_value);
/* The knobs every template shares: threads, vector_bytes (powers of two up
 * to the target's vector width), parallel_min_work. */
void space_add_common(plan_t* p, uint32_t mask, ingot_schedule_space_t* space);
/* unroll (vectors of an inner loop) and order, for templates with UPDATEs. */
void space_add_update(plan_t* p, uint32_t mask, ingot_schedule_space_t* space, int64_t default_unroll);

/* The layout knobs that apply to the kernel (kernel->layout_options):
 * pack {0, 1} and panel (the legal widths) for a packable weight,
 * pointwise_matmul {0, 1} for a 1x1 conv, chains for a softmax row; the
 * defaults are the kernel's own layout (kernel->layout), what it was
 * lowered with. */
void space_add_layout(plan_t* p, uint32_t mask, ingot_schedule_space_t* space);

/* ---- shared planning ---- */

/* A loop name unused in the function and by this plan. */
const char* plan_fresh_name(plan_t* p, const char* base);
void plan_emit_mark(plan_t* p, ingot_directive_kind_t kind, const char* loop);
/* Splits `loop` by `factor`; returns the outer loop, *out_inner the inner. */
const char* plan_emit_split(plan_t* p, const char* loop, int64_t factor, const char** out_inner);
const char* plan_emit_fuse(plan_t* p, const char* outer, const char* inner);
/* The split factor of a vector loop of `extent` aiming at `target`
 * iterations: the divisor in [target/2, 2*target] that fills vector
 * registers best (a tail counted as the llvm backend runs it: narrower
 * vectors, then a scalar step), then the one nearest the target; the extent when it is at
 * most the target (or 4x when nothing divides); else the target (tail). This
 * derives a loop split from the knobs; it never changes a knob's value. */
int64_t plan_vector_factor(int64_t extent, int64_t target, int64_t lanes);
/* Iterations of the innermost statements of a nest. */
int64_t plan_nest_work(const ingot_ir_stmt_t* s);
/* Parallel over the outermost of `loops` (consecutive in one nest), fusing
 * inner ones in while it has fewer iterations than the threads knob; nothing
 * when `work` is below the parallel_min_work knob. */
void plan_parallel(plan_t* p, const char* const* loops, const int64_t* extents, uint32_t count, int64_t work);
/* The dtype stored by the first STORE in a statement. */
ingot_dtype_t plan_stored_dtype(const ingot_ir_func_t* f, const ingot_ir_stmt_t* s);
/* Vector lanes of `dtype` under the vector_bytes knob (at least 1). */
int64_t plan_lanes(const plan_t* p, ingot_dtype_t dtype);

typedef struct stage_loops_t {
  const char* names[2 * INGOT_MAX_STAGE_AXES + 2];
  int64_t extents[2 * INGOT_MAX_STAGE_AXES + 2];
  uint32_t count;
} stage_loops_t;
void plan_loops_push(stage_loops_t* l, const char* name, int64_t extent);

/* The loops of stage `index`: names and extents of its spatial and reduce
 * loops, the outermost loop statement and the work of its nest. */
typedef struct stage_view_t {
  const ingot_stage_t* st;
  const char* sname[INGOT_MAX_STAGE_AXES];
  int64_t sext[INGOT_MAX_STAGE_AXES];
  const char* rname[INGOT_MAX_STAGE_AXES];
  int64_t rext[INGOT_MAX_STAGE_AXES];
  const ingot_ir_stmt_t* outer;
  int64_t work;
} stage_view_t;
ingot_status_t plan_stage_view(const plan_t* p, uint32_t index, stage_view_t* out_view);

/* The vector loop of an UPDATE or PURE stage as plan_stage splits it. */
typedef struct vector_split_t {
  int64_t lanes;       /* lanes of the vector loop (0: not vectorized) */
  int64_t factor;      /* inner extent of the split (the vector loop) */
  int64_t vectors;     /* whole vectors in the vector loop */
} vector_split_t;
void plan_vector_split(const plan_t* p, const stage_view_t* v, vector_split_t* out_split);

/* Plans every stage in order (the register tile for contraction.direct). */
ingot_status_t plan_stages(plan_t* p);
/* Contraction: the register tile of an UPDATE (template_contraction.c). */
ingot_status_t plan_register_tile(plan_t* p, const stage_view_t* v, const char* vec, const char* vec_outer,
                                  int64_t vec_outer_extent, int64_t vec_factor, int64_t lanes);

#endif /* INGOT_SCHEDULE_TEMPLATE_INTERNAL_H_ */
