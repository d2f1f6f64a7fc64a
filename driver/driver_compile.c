/* The compile pipeline (driver.h):
 *
 *   import (importer/) -> fix input shapes, bind constants, optimize (graph/)
 *   -> lower each node (lower/) -> choose and apply a schedule per kernel
 *   (schedule/) -> deduplicate identical kernels -> build the code object of
 *   each target (codegen/) -> the bundle (packager/: memory plan from the
 *   steps' live intervals, weights, manifest).
 *
 * The bundle stays in memory; the caller writes it. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "codegen/codegen.h"
#include "driver_internal.h"
#include "importer/importer.h"

/* ---- stage timings and progress (ingot_driver_progress_t) ---------------- */

const char* ingot_driver_stage_name(ingot_driver_stage_t stage) {
  switch (stage) {
#define STAGE_NAME_(name, text) \
  case INGOT_DRIVER_STAGE_##name: return text;
    INGOT_DRIVER_STAGE_LIST(STAGE_NAME_)
#undef STAGE_NAME_
    default: return "?";
  }
}

/* The stage running now and the time spent in each; a NULL clock (the
 * graph loaders outside compile) does nothing. */
typedef struct driver_clock_t {
  const ingot_driver_options_t* o;
  double begin, mark;               /* seconds: compile's start, the stage's */
  int stage;                        /* -1: none */
  double* sums;                     /* [INGOT_DRIVER_STAGE_COUNT] */
} driver_clock_t;

static double clock_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void clock_tick(driver_clock_t* c, uint32_t done, uint32_t total, const char* target) {
  if (!c || !c->o->on_progress || c->stage < 0) return;
  ingot_driver_progress_t p = {.stage = (ingot_driver_stage_t)c->stage, .done = done, .total = total,
                               .target = target, .elapsed_s = clock_now() - c->begin};
  c->o->on_progress(c->o->hook_self, &p);
}

/* Ends the running stage (its time added to its sum) and, stage >= 0, starts
 * that one. */
static void clock_enter(driver_clock_t* c, int stage, uint32_t total, const char* target) {
  if (!c) return;
  double now = clock_now();
  if (c->stage >= 0) c->sums[c->stage] += now - c->mark;
  c->stage = stage;
  c->mark = now;
  clock_tick(c, 0, total, target);
}

ingot_status_t ingot_driver_optimize_graph(ingot_graph_t* graph) {
  return ingot_graph_optimize_with(graph, ingot_lower_eval_node, NULL);
}

static ingot_status_t bind_const(ingot_graph_t* graph, const ingot_driver_const_t* c);
static ingot_status_t parse_targets(const ingot_driver_options_t* o, ingot_target_t* targets, uint32_t* out_count);

/* The graph through the first half of the passes with its ranged dims at
 * their probe sizes (ingot_graph_settle_ranges): the same import, shapes
 * and constants as `graph`. */
static ingot_status_t load_probe(const ingot_driver_options_t* o, const ingot_graph_t* graph,
                                 ingot_graph_t** out_probe) {
  ingot_graph_t* probe = NULL;
  ingot_status_t s = ingot_import_onnx_file(o->model_path, NULL, &probe);
  for (uint32_t i = 0; i < o->input_shape_count && !s; ++i) s = ingot_graph_set_input_shape(probe, o->input_shapes[i]);
  for (uint32_t i = 0; i < o->const_count && !s; ++i) s = bind_const(probe, &o->consts[i]);
  if (!s) {
    probe->loop_max_trips = graph->loop_max_trips;
    ingot_graph_set_activation_block(probe, graph->activation_block);
    ingot_graph_set_dot4_words(probe, graph->dot4_words);
    ingot_graph_set_half_arith(probe, graph->half_arith);
    ingot_graph_probe_ranges(probe);
    s = ingot_graph_optimize_begin(probe, ingot_lower_eval_node, NULL);
  }
  if (s) {
    ingot_graph_destroy(probe);
    return ingot_fail_prefix(s, "at other sizes of the ranged inputs");
  }
  *out_probe = probe;
  return INGOT_OK;
}

/* ingot_driver_optimize_graph, with ranged input dims settled between the
 * two halves of the passes. */
ingot_status_t driver_optimize_ranged(const ingot_driver_options_t* o, ingot_graph_t* graph) {
  if (!graph->range_symbol_count) return ingot_driver_optimize_graph(graph);
  ingot_target_t targets[INGOT_DRIVER_MAX_TARGETS];
  uint32_t count = 0;
  if (parse_targets(o, targets, &count) == INGOT_OK) {
    for (uint32_t t = 0; t < count; ++t)
      if (targets[t].kind == INGOT_TARGET_CUDA || targets[t].kind == INGOT_TARGET_ROCM)
        return ingot_fail(INGOT_ERROR_UNSUPPORTED, "ranged input dims (--input-shape LO..HI) are for CPU targets "
                          "only so far; give GPU targets fixed sizes");
  } else {
    ingot_compiler_error_clear();
  }
  ingot_status_t s = ingot_graph_optimize_begin(graph, ingot_lower_eval_node, NULL);
  ingot_graph_t* probe = NULL;
  if (!s) s = load_probe(o, graph, &probe);
  if (!s) s = ingot_graph_settle_ranges(graph, probe);
  ingot_graph_destroy(probe);
  if (!s) s = ingot_graph_optimize_end(graph);
  return s;
}

/* Binds one constant: the graph input c->name becomes a weight. */
static ingot_status_t bind_const(ingot_graph_t* graph, const ingot_driver_const_t* c) {
  if (!c->name || !c->name[0]) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "--const: no input name");
  if (c->rank > INGOT_MAX_RANK)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "--const %s: rank %u > %u", c->name, c->rank, INGOT_MAX_RANK);
  ingot_status_t s = ingot_graph_bind_input(graph, c->name, c->dtype, (int32_t)c->rank, c->dims, c->data);
  if (s) return ingot_fail_prefix(s, "--const %s", c->name);
  return INGOT_OK;
}

static ingot_status_t parse_targets(const ingot_driver_options_t* o, ingot_target_t* targets, uint32_t* out_count);

/* The channels of an activation block (ingot_graph_block_activations) for
 * every graph of one compile (one per target or not, and the tuner's), so
 * that they all have one structure: o->activation_block, else the first
 * target's float32 lanes (16 with 64-byte vectors, 8 with 32, 4 with 16);
 * 0 (NCHW) when any target is a GPU (its templates lay data out their own
 * way) or o->activation_block is 1. */
static uint32_t driver_activation_block(const ingot_driver_options_t* o) {
  if (o->activation_block == 1) return 0;
  if (o->activation_block) return o->activation_block;
  ingot_target_t targets[INGOT_DRIVER_MAX_TARGETS];
  uint32_t count = 0;
  if (parse_targets(o, targets, &count) != INGOT_OK || count == 0) {
    ingot_compiler_error_clear(); /* parse_targets reports a bad target elsewhere */
    return 0;
  }
  for (uint32_t t = 0; t < count; ++t)
    if (targets[t].kind == INGOT_TARGET_CUDA || targets[t].kind == INGOT_TARGET_ROCM) return 0;
  uint32_t block = targets[0].vector_bytes / 4;
  return block >= 4 ? block : 0;
}

/* Whether every target of the bundle has `has`: a graph choice that all
 * variants must share, since they run the same steps (false when the
 * targets do not parse; that error comes later, where it is reported). */
static bool all_targets(const ingot_driver_options_t* o, bool (*has)(const ingot_target_t*)) {
  ingot_target_t targets[INGOT_DRIVER_MAX_TARGETS];
  uint32_t count = 0;
  if (parse_targets(o, targets, &count) != INGOT_OK || count == 0) {
    ingot_compiler_error_clear();
    return false;
  }
  for (uint32_t t = 0; t < count; ++t)
    if (!has(&targets[t])) return false;
  return true;
}

/* Dot4 ConvIntegers read their input as words (ingot_graph_set_dot4_words)
 * only when every target of the bundle has the dot4 kernels. */
static bool driver_dot4_words(const ingot_driver_options_t* o) {
  return all_targets(o, ingot_schedule_target_has_dot4);
}

/* Float16 elementwise ops stay float16 (ingot_graph_set_half_arith): as
 * --half-ops says, else (auto) only when every target of the bundle computes
 * float16 natively (ingot_target_has_half_arith); elsewhere float32 with one
 * rounding at the end is as exact and faster. */
static bool driver_half_arith(const ingot_driver_options_t* o) {
  if (o->half_ops != INGOT_DRIVER_HALF_OPS_AUTO) return o->half_ops == INGOT_DRIVER_HALF_OPS_F16;
  return all_targets(o, ingot_target_has_half_arith);
}

/* Import, shapes, constants, optimize. A tuning log's layout knobs act in
 * the packing pass, before lowering, for `targets`. One graph holds one
 * layout per node: where the targets' records differ, `out_differs` NULL
 * refuses (naming the node and targets); else the node takes the first
 * target's layout and *out_differs says so (compile then optimizes one graph
 * for each other target). `on_graph` is called when `report` is set. */
static ingot_status_t load_graph_with(const ingot_driver_options_t* o, const ingot_tuning_log_t* log,
                                      const ingot_target_t* targets, uint32_t target_count, bool report,
                                      ingot_layout_chooser_t* custom, driver_clock_t* clock, bool* out_differs,
                                      ingot_graph_t** out_graph) {
  if (out_differs) *out_differs = false;
  ingot_graph_t* graph = NULL;
  clock_enter(clock, INGOT_DRIVER_STAGE_IMPORT, 0, NULL);
  ingot_status_t s = ingot_import_onnx_file(o->model_path, NULL, &graph);
  if (s) return driver_explain_failure(o, s);
  clock_enter(clock, INGOT_DRIVER_STAGE_PASSES, 0, NULL);
  for (uint32_t i = 0; i < o->input_shape_count && !s; ++i) s = ingot_graph_set_input_shape(graph, o->input_shapes[i]);
  for (uint32_t i = 0; i < o->const_count && !s; ++i) s = bind_const(graph, &o->consts[i]);
  graph->loop_max_trips = o->max_trips;
  if (!s) {
    ingot_schedule_layout_chooser_t chooser;
    ingot_schedule_layout_chooser_init(&chooser, log, targets, target_count);
    chooser.lead_on_difference = out_differs != NULL;
    chooser.cpu_model = o->tuning_cpu_model;
    ingot_graph_set_activation_block(graph, driver_activation_block(o));
    ingot_graph_set_dot4_words(graph, driver_dot4_words(o));
    ingot_graph_set_half_arith(graph, driver_half_arith(o));
    if (custom)
      ingot_graph_set_layout_chooser(graph, custom);
    else if (log || target_count) /* each target's defaults differ (schedule/template.c) */
      ingot_graph_set_layout_chooser(graph, &chooser.base);
    s = driver_optimize_ranged(o, graph);
    /* Weight-only compression last: it reads the weights' final layouts. */
    if (!s) s = ingot_graph_compress_weights(graph, o->weight_dtype);
    ingot_graph_set_layout_chooser(graph, NULL);
    if (s) s = driver_explain_failure(o, s);
    if (!s && out_differs) *out_differs = chooser.differs;
  }
  if (s) {
    ingot_graph_destroy(graph);
    return s;
  }
  if (report && o->on_graph) o->on_graph(o->hook_self, graph);
  *out_graph = graph;
  return INGOT_OK;
}

static ingot_status_t load_graph(const ingot_driver_options_t* o, const ingot_tuning_log_t* log,
                                 const ingot_target_t* targets, uint32_t target_count, bool report,
                                 driver_clock_t* clock, bool* out_differs, ingot_graph_t** out_graph) {
  return load_graph_with(o, log, targets, target_count, report, NULL, clock, out_differs, out_graph);
}

ingot_status_t driver_load_graph_layout(const ingot_driver_options_t* o, ingot_layout_chooser_t* chooser,
                                        ingot_graph_t** out_graph) {
  *out_graph = NULL;
  return load_graph_with(o, NULL, NULL, 0, false, chooser, NULL, NULL, out_graph);
}

ingot_status_t ingot_driver_load_graph(const ingot_driver_options_t* o, ingot_graph_t** out_graph) {
  if (out_graph) *out_graph = NULL;
  if (!o || !out_graph || !o->model_path)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_driver_load_graph: no options, model path or output");
  ingot_target_t targets[INGOT_DRIVER_MAX_TARGETS];
  uint32_t count = 0;
  ingot_status_t s = parse_targets(o, targets, &count);
  ingot_tuning_log_t* own_log = NULL;
  const ingot_tuning_log_t* log = o->tuning_log;
  if (!s && !log && o->tuning_log_path && !(s = ingot_tuning_log_load(o->tuning_log_path, &own_log))) log = own_log;
  if (!s && !log && !o->tuning_log_path && o->builtin_tuning_log && !(s = ingot_tuning_log_builtin(&own_log)))
    log = own_log;
  if (!s) s = load_graph(o, log, targets, count, true, NULL, NULL, out_graph);
  ingot_tuning_log_destroy(own_log);
  return s;
}

/* ---- compile ---------------------------------------------------------------- */

typedef struct compile_state_t {
  ingot_arena_t arena;
  /* Per target, the optimized graph it is lowered from: one graph for all
   * (graphs[t] == graphs[0]) unless the tuning log lays some node out
   * differently for different targets; then each target has its own. */
  ingot_graph_t* own_graphs[INGOT_DRIVER_MAX_TARGETS]; /* imported here; NULL when given or shared */
  const ingot_graph_t* graphs[INGOT_DRIVER_MAX_TARGETS];
  ingot_tuning_log_t* own_log;
  ingot_target_t targets[INGOT_DRIVER_MAX_TARGETS];
  uint32_t target_count;
  /* Per target, the lowering (every target has the same kernels in the same
   * order; only their loop nests differ) and its schedules. */
  ingot_lowered_t* lowered[INGOT_DRIVER_MAX_TARGETS];
  ingot_schedule_t* schedules;      /* [target][kernel] */
  uint32_t schedule_count;          /* init'ed so far */
  /* One code object per target, in target order. */
  ingot_bundle_code_t codes[INGOT_DRIVER_MAX_TARGETS];
  uint8_t* objects[INGOT_DRIVER_MAX_TARGETS];
  uint32_t object_count;
  driver_clock_t clock;
  ingot_strbuf_t firmware_source;   /* the kernels' C source, for emit_firmware_dir */
} compile_state_t;

/* Whether the function reads or writes its buffer `b`. */
static bool touches(const ingot_ir_func_t* f, uint32_t b) {
  ingot_ir_uses_t uses;
  ingot_ir_uses_collect(f, f->body, &uses);
  bool hit = uses.loaded[b] || uses.stored[b];
  ingot_ir_uses_free(&uses);
  return hit;
}

/* An output of a kernel that no target's scheduled code touches and nothing
 * else reads needs no storage: the int32 sums of a ConvInteger whose
 * requantization the schedule moved into its accumulators
 * (ingot_graph_fuse_requantize). Its argument becomes another output of the
 * same step, which the code never reaches through it, so the value gets no
 * tensor and the memory plan no place for it. Where some target's schedule
 * kept the sums (a stage after them), they keep their storage. */
static void drop_untouched_outputs(compile_state_t* st, uint32_t n, uint32_t nt) {
  for (uint32_t k = 0; k < n; ++k) {
    const ingot_kernel_t* k0 = &st->lowered[0]->kernels[k];
    for (uint32_t a = 0; a < k0->arg_count; ++a) {
      bool drop = true;
      uint32_t keep = UINT32_MAX; /* another output argument the code writes */
      for (uint32_t t = 0; t < nt && drop; ++t) {
        const ingot_lowered_t* lw = st->lowered[t];
        const ingot_kernel_t* kn = &lw->kernels[k];
        const ingot_graph_t* g = st->graphs[t];
        uint32_t v = kn->args[a];
        const ingot_ir_func_t* f = kn->func;
        drop = a < f->buffer_count && f->buffers[a].role == INGOT_IR_BUFFER_OUTPUT && v < g->value_count &&
               !g->values[v].is_output && !touches(f, a);
        for (uint32_t j = 0; drop && j < n; ++j)
          for (uint32_t b = 0; drop && b < lw->kernels[j].arg_count; ++b)
            drop = (j == k && b == a) || lw->kernels[j].args[b] != v;
        for (uint32_t w = 0; drop && lw->alias_of && w < lw->value_count; ++w) drop = lw->alias_of[w] != v;
        for (uint32_t b = 0; drop && t == 0 && keep == UINT32_MAX && b < kn->arg_count; ++b)
          if (b != a && f->buffers[b].role == INGOT_IR_BUFFER_OUTPUT && touches(f, b)) keep = b;
        drop = drop && keep != UINT32_MAX && touches(f, keep);
      }
      if (!drop) continue;
      for (uint32_t t = 0; t < nt; ++t) {
        ingot_kernel_t* kn = &st->lowered[t]->kernels[k];
        kn->args[a] = kn->args[keep];
      }
    }
  }
}

static void compile_state_release(compile_state_t* st) {
  for (uint32_t i = 0; i < st->schedule_count; ++i) ingot_schedule_deinit(&st->schedules[i]);
  free(st->schedules);
  for (uint32_t t = 0; t < st->target_count; ++t) ingot_lowered_destroy(st->lowered[t]);
  for (uint32_t t = 0; t < INGOT_DRIVER_MAX_TARGETS; ++t) ingot_graph_destroy(st->own_graphs[t]);
  if (st->own_log) ingot_tuning_log_destroy(st->own_log);
  for (uint32_t t = 0; t < st->object_count; ++t) free(st->objects[t]);
  ingot_strbuf_free(&st->firmware_source);
  ingot_arena_deinit(&st->arena);
}

static ingot_status_t parse_targets(const ingot_driver_options_t* o, ingot_target_t* targets, uint32_t* out_count) {
  const char* default_target = ingot_codegen_llvm_available() ? "llvm" : "c";
  const char* const* names = o->target_count ? o->targets : &default_target;
  uint32_t count = o->target_count ? o->target_count : 1;
  if (count > INGOT_DRIVER_MAX_TARGETS)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "%u targets: at most %u in one bundle", count,
                      INGOT_DRIVER_MAX_TARGETS);
  ingot_status_t s;
  for (uint32_t t = 0; t < count; ++t) {
    if ((s = ingot_target_parse(names[t], &targets[t]))) return s;
    for (uint32_t u = 0; u < t; ++u)
      if (!strcmp(targets[u].name, targets[t].name))
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target '%s' is given twice (as '%s' and '%s')",
                          targets[t].name, names[u], names[t]);
  }
  *out_count = count;
  return INGOT_OK;
}

/* Target t, lowered from a graph of its own (its layouts), must have the
 * first target's steps: the same nodes in the same order with the same
 * number of arguments. A layout choice changes how a kernel reads its
 * weight, never which kernels run. */
static ingot_status_t check_same_steps(const compile_state_t* st, uint32_t t) {
  const ingot_lowered_t* a = st->lowered[0];
  const ingot_lowered_t* b = st->lowered[t];
  const ingot_graph_t* ga = st->graphs[0];
  const ingot_graph_t* gb = st->graphs[t];
  if (a->kernel_count != b->kernel_count)
    return ingot_fail(INGOT_ERROR_INTERNAL,
                      "target '%s' lowers to %u steps with its layouts, target '%s' to %u; the variants of a "
                      "bundle must run the same steps", st->targets[t].name, b->kernel_count, st->targets[0].name,
                      a->kernel_count);
  for (uint32_t k = 0; k < a->kernel_count; ++k) {
    const ingot_node_t* na = &ga->nodes[a->kernels[k].node];
    const ingot_node_t* nb = &gb->nodes[b->kernels[k].node];
    if (na->op != nb->op || strcmp(na->name, nb->name) != 0 || a->kernels[k].arg_count != b->kernels[k].arg_count)
      return ingot_fail(INGOT_ERROR_INTERNAL,
                        "node '%s' (%s): step %u is node '%s' (%s) with %u arguments for target '%s' but has %u "
                        "for target '%s'; a layout choice changed the graph's structure", na->name,
                        ingot_op_name(na->op), k, nb->name, ingot_op_name(nb->op), b->kernels[k].arg_count,
                        st->targets[t].name, a->kernels[k].arg_count, st->targets[0].name);
  }
  return INGOT_OK;
}

/* Passes ingot_schedule_choose's skipped records on to on_tuning_skip. */
typedef struct skip_relay_t {
  const ingot_driver_options_t* o;
  const ingot_driver_kernel_info_t* info;
} skip_relay_t;

static void relay_skip(void* self, uint32_t line, const char* reason) {
  const skip_relay_t* r = self;
  r->o->on_tuning_skip(r->o->hook_self, r->info, line, reason);
}

/* The kernels' C source for the firmware output (and, with firmware_only,
 * for emit_source_path, which no build writes then). */
static ingot_status_t firmware_source(ingot_ir_func_t* const* funcs, uint32_t count, const ingot_target_t* target,
                                      const ingot_driver_options_t* o, ingot_strbuf_t* out) {
  ingot_strbuf_free(out);
  ingot_status_t s = ingot_codegen_c_emit(funcs, count, target, out);
  if (!s && o->firmware_only && o->emit_source_path)
    s = ingot_file_write_atomic(o->emit_source_path, out->data, out->length);
  return s;
}

/* The firmware files of `package` into `dir` (created if missing); the
 * report gets the plan's and weights' sizes. */
static ingot_status_t write_firmware(ingot_arena_t* A, const driver_package_t* package, const ingot_strbuf_t* source,
                                     const char* dir, ingot_bundle_report_t* report) {
  ingot_bundle_spec_t spec;
  ingot_status_t s = driver_bundle_spec(A, package, &spec);
  if (s) return s;
  ingot_firmware_t fw;
  if ((s = ingot_firmware_build(&spec, source->data, source->length, &fw))) return s;
  if (mkdir(dir, 0777) != 0 && errno != EEXIST)
    s = ingot_fail(INGOT_ERROR_IO, "--emit-firmware: cannot create folder '%s': %s", dir, strerror(errno));
  for (uint32_t f = 0; !s && f < fw.file_count; ++f) {
    const char* path = ingot_arena_printf(A, "%s/%s", dir, fw.files[f].name);
    s = ingot_file_write_atomic(path, fw.files[f].text.data, fw.files[f].text.length);
  }
  report->arena_bytes = fw.arena_bytes;
  report->arena_lower_bound = fw.arena_lower_bound;
  report->weight_bytes = fw.weight_bytes;
  ingot_firmware_free(&fw);
  return s;
}

static ingot_status_t compile(const ingot_driver_options_t* o, compile_state_t* st, ingot_driver_result_t* res) {
  ingot_status_t s;
  if ((s = parse_targets(o, st->targets, &st->target_count))) return s;
  const uint32_t nt = st->target_count;
  bool compressed = o->weight_dtype != INGOT_DTYPE_INVALID && o->weight_dtype != INGOT_DTYPE_F32;
  for (uint32_t t = 0; t < nt && compressed && !o->graph; ++t)
    if (st->targets[t].kind == INGOT_TARGET_CUDA || st->targets[t].kind == INGOT_TARGET_ROCM)
      return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                        "--weights %s: compressed weights are for CPU targets (llvm, c), not '%s'; use --weights fp32",
                        ingot_dtype_name(o->weight_dtype), st->targets[t].name);
  const ingot_tuning_log_t* log = o->tuning_log;
  if (!log && (o->tuning_log_path || o->builtin_tuning_log)) {
    if ((s = o->tuning_log_path ? ingot_tuning_log_load(o->tuning_log_path, &st->own_log)
                                : ingot_tuning_log_builtin(&st->own_log)))
      return s;
    log = st->own_log;
  }

  bool per_target = false;
  if (o->graph) {
    st->graphs[0] = o->graph;
  } else {
    if (!o->model_path)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_driver_compile: no model path or graph");
    if ((s = load_graph(o, log, st->targets, nt, true, &st->clock, &per_target, &st->own_graphs[0]))) return s;
    st->graphs[0] = st->own_graphs[0];
  }
  /* Targets whose layouts differ get a graph each (the first target's is
   * the one above: it took the first target's layout everywhere). */
  for (uint32_t t = 1; t < nt; ++t) {
    st->graphs[t] = st->graphs[0];
    if (per_target) {
      if ((s = load_graph(o, log, &st->targets[t], 1, false, &st->clock, NULL, &st->own_graphs[t])))
        return ingot_fail_prefix(s, "target '%s'", st->targets[t].name);
      st->graphs[t] = st->own_graphs[t];
    }
  }
  const ingot_graph_t* graph = st->graphs[0];
  clock_enter(&st->clock, INGOT_DRIVER_STAGE_LOWER, 0, st->targets[0].name);
  if ((s = ingot_lower_graph(graph, &st->lowered[0]))) return driver_explain_failure(o, s);
  ingot_lowered_t* lw = st->lowered[0];

  /* Per target: lower (the first target uses lowered[0]), then schedule each
   * kernel (the one choice point), apply and verify. */
  const uint32_t n = lw->kernel_count;
  ingot_lowered_t** lows = st->lowered;
  st->schedules = ingot_xcalloc((size_t)n * nt, sizeof(ingot_schedule_t));
  char** texts = ingot_xcalloc((size_t)n * nt, sizeof(char*));
  uint32_t* tuned_line = INGOT_ARENA_ARRAY(&st->arena, uint32_t, (size_t)n * nt);
  memset(tuned_line, 0, (size_t)n * nt * sizeof(uint32_t));
  for (uint32_t t = 0; t < nt && s == INGOT_OK; ++t) {
    if (t > 0) clock_enter(&st->clock, INGOT_DRIVER_STAGE_LOWER, 0, st->targets[t].name);
    if (t > 0 && (s = ingot_lower_graph(st->graphs[t], &lows[t]))) break;
    if (t > 0 && (s = check_same_steps(st, t))) break;
    clock_enter(&st->clock, INGOT_DRIVER_STAGE_SCHEDULE, n * nt, st->targets[t].name);
    if (t > 0) clock_tick(&st->clock, t * n, n * nt, st->targets[t].name);
    for (uint32_t k = 0; k < n; ++k) {
      ingot_kernel_t* kn = &lows[t]->kernels[k];
      const ingot_node_t* node = &st->graphs[t]->nodes[kn->node];
      ingot_schedule_t* sc = &st->schedules[(size_t)t * n + k];
      ingot_schedule_init(sc);
      st->schedule_count = t * n + k + 1;
      ingot_driver_kernel_info_t info = {.kernel = k, .kernel_count = n, .step = k, .target_index = t,
                                         .target = &st->targets[t], .graph = st->graphs[t], .kernel_ir = kn};
      skip_relay_t relay = {.o = o, .info = &info};
      ingot_schedule_choice_t choice = {.cpu_model = o->tuning_cpu_model,
                                        .on_skip = o->on_tuning_skip ? relay_skip : NULL, .skip_self = &relay};
      if ((o->on_lowered && (s = o->on_lowered(o->hook_self, &info))) ||
          (s = driver_schedule_kernel(kn, &st->targets[t], log, NULL, &choice, sc))) {
        s = ingot_fail_prefix(s, "node '%s' (%s)%s%s", node->name, ingot_op_name(node->op),
                              nt > 1 ? ", target " : "", nt > 1 ? st->targets[t].name : "");
        break;
      }
      tuned_line[(size_t)t * n + k] = choice.tuned ? choice.line : 0;
      clock_tick(&st->clock, t * n + k + 1, n * nt, st->targets[t].name);
    }
  }
  /* Ranged dims: kernels stop at the run's size (once every target's steps
   * were compared as lowered), then the text each is deduplicated by. */
  for (uint32_t t = 0; t < nt && s == INGOT_OK; ++t)
    for (uint32_t k = 0; k < n && s == INGOT_OK; ++k) {
      ingot_kernel_t* kn = &lows[t]->kernels[k];
      if ((s = ingot_schedule_guard_ranges(st->graphs[t], kn)))
        s = ingot_fail_prefix(s, "node '%s' (%s)", st->graphs[t]->nodes[kn->node].name,
                              ingot_op_name(st->graphs[t]->nodes[kn->node].op));
      else
        texts[(size_t)t * n + k] = driver_canonical_text(kn->func);
    }

  if (s == INGOT_OK) drop_untouched_outputs(st, n, nt);

  /* Deduplicate: steps whose scheduled IR is identical (for every target)
   * share one function, under one name in every variant. */
  char** keys = ingot_xcalloc(n ? n : 1, sizeof(char*));
  uint32_t* step_kernel = INGOT_ARENA_ARRAY(&st->arena, uint32_t, n);
  const char** kernel_names = INGOT_ARENA_ARRAY(&st->arena, const char*, n);
  uint32_t* rep_step = INGOT_ARENA_ARRAY(&st->arena, uint32_t, n);
  uint32_t unique = 0;
  for (uint32_t k = 0; k < n && s == INGOT_OK; ++k) {
    ingot_strbuf_t key = {0};
    for (uint32_t t = 0; t < nt; ++t) {
      if (t) ingot_strbuf_append(&key, "\n-- next target --\n");
      ingot_strbuf_append(&key, texts[(size_t)t * n + k]);
    }
    keys[k] = key.data;
    uint32_t found = UINT32_MAX;
    for (uint32_t u = 0; u < unique; ++u)
      if (!strcmp(keys[rep_step[u]], keys[k])) {
        found = u;
        break;
      }
    if (found == UINT32_MAX) {
      found = unique++;
      rep_step[found] = k;
      const char* sym = driver_kernel_symbol(&st->arena, graph, &lw->kernels[k], &st->targets[0], keys[k]);
      /* Two different kernels with the same hash: add a suffix. */
      for (uint32_t u = 0; u < found; ++u)
        if (!strcmp(kernel_names[u], sym)) sym = ingot_arena_printf(&st->arena, "%s_%u", sym, found);
      kernel_names[found] = sym;
      for (uint32_t t = 0; t < nt; ++t) lows[t]->kernels[k].func->name = sym;
    }
    step_kernel[k] = found;
  }
  for (uint32_t k = 0; k < n; ++k) free(keys[k]);
  free(keys);
  for (size_t k = 0; k < (size_t)n * nt; ++k) free(texts[k]);
  free(texts);
  if (s != INGOT_OK) return s;

  if (o->emit_firmware_dir && (nt != 1 || st->targets[0].kind != INGOT_TARGET_C))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "--emit-firmware needs exactly one target, of kind c "
                      "(--target c); %u target%s given, the first '%s'", nt, nt == 1 ? "" : "s", st->targets[0].name);
  if (o->firmware_only && !o->emit_firmware_dir)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_driver_compile: firmware_only without emit_firmware_dir");

  /* The code object of each target; emit_source_path shows the first. */
  ingot_ir_func_t** funcs = INGOT_ARENA_ARRAY(&st->arena, ingot_ir_func_t*, unique ? unique : 1);
  clock_enter(&st->clock, INGOT_DRIVER_STAGE_CODEGEN, nt, st->targets[0].name);
  for (uint32_t t = 0; t < nt; ++t) {
    if (t > 0) clock_tick(&st->clock, t, nt, st->targets[t].name);
    for (uint32_t u = 0; u < unique; ++u) {
      funcs[u] = lows[t]->kernels[rep_step[u]].func;
      if (tuned_line[(size_t)t * n + rep_step[u]]) ++res->tuned_kernels;
      const ingot_kernel_t* kernel = &lows[t]->kernels[rep_step[u]];
      if (kernel->node < st->graphs[t]->node_count && st->graphs[t]->nodes[kernel->node].weight_dot4_channels)
        ++res->dot4_kernels;
      if (o->on_kernel) {
        ingot_driver_kernel_info_t info = {
            .kernel = u, .kernel_count = unique, .step = rep_step[u], .symbol = kernel_names[u],
            .target_index = t, .target = &st->targets[t], .graph = st->graphs[t],
            .kernel_ir = &lows[t]->kernels[rep_step[u]],
            .schedule = &st->schedules[(size_t)t * n + rep_step[u]],
            .tuned = tuned_line[(size_t)t * n + rep_step[u]] != 0,
            .tuning_line = tuned_line[(size_t)t * n + rep_step[u]],
        };
        o->on_kernel(o->hook_self, &info);
      }
    }
    if (o->emit_firmware_dir && (s = firmware_source(funcs, unique, &st->targets[t], o, &st->firmware_source)))
      return s;
    if (o->emit_firmware_dir && o->firmware_only) continue;
    size_t size = 0;
    if ((s = ingot_codegen_build(funcs, unique, &st->targets[t], o->cc, t == 0 ? o->emit_source_path : NULL,
                                 &st->objects[t], &size)))
      return nt > 1 ? ingot_fail_prefix(s, "target '%s'", st->targets[t].name) : s;
    st->object_count = t + 1;
    clock_tick(&st->clock, t + 1, nt, st->targets[t].name);
    if ((s = driver_code_record(&st->arena, funcs, unique, &st->targets[t], step_kernel, n, st->objects[t], size,
                                &st->codes[t])))
      return nt > 1 ? ingot_fail_prefix(s, "target '%s'", st->targets[t].name) : s;
  }

  ingot_bundle_report_t report;
  memset(&report, 0, sizeof(report));
  driver_package_t package = {
      .graph = graph,
      .steps = lw->kernels, .step_count = n, .step_kernel = step_kernel,
      .kernel_names = kernel_names, .kernel_count = unique,
      .alias_of = lw->alias_of,
      .inputs = graph->inputs, .input_count = graph->input_count,
      .outputs = graph->outputs, .output_count = graph->output_count,
      .codes = st->codes, .code_count = st->object_count,
      .weights_codec = o->weights_codec,
  };
  ingot_bundle_metadata_t* metadata = NULL;
  if ((s = driver_metadata(&st->arena, o, graph, st->targets, nt, &metadata, &package.metadata_count))) return s;
  package.metadata = metadata;
  const ingot_kernel_t* variant_steps[INGOT_DRIVER_MAX_TARGETS];
  const uint32_t* variant_alias_of[INGOT_DRIVER_MAX_TARGETS];
  if (per_target) {
    for (uint32_t t = 0; t < nt; ++t) {
      variant_steps[t] = lows[t]->kernels;
      variant_alias_of[t] = lows[t]->alias_of;
    }
    package.variant_graphs = st->graphs;
    package.variant_steps = variant_steps;
    package.variant_alias_of = variant_alias_of;
  }
  clock_enter(&st->clock, INGOT_DRIVER_STAGE_PACKAGE, 0, NULL);
  if (o->emit_firmware_dir) {
    s = write_firmware(&st->arena, &package, &st->firmware_source, o->emit_firmware_dir, &report);
    if (s) return s;
  }
  if (!o->firmware_only && (s = driver_package(&st->arena, &package, &res->bundle, &res->bundle_size, &report)))
    return s;
  clock_enter(&st->clock, -1, 0, NULL);
  res->target_count = nt;
  for (uint32_t t = 0; t < nt; ++t) memcpy(res->targets[t], st->targets[t].name, INGOT_TARGET_NAME_BYTES);
  res->step_count = n;
  res->kernel_count = unique;
  res->weight_bytes = report.weight_bytes;
  res->arena_bytes = report.arena_bytes;
  res->arena_lower_bound = report.arena_lower_bound;
  return INGOT_OK;
}

ingot_status_t ingot_driver_compile(const ingot_driver_options_t* options, ingot_driver_result_t* out_result) {
  if (out_result) memset(out_result, 0, sizeof(*out_result));
  if (!options || !out_result)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_driver_compile: no options or result");
  if (!options->graph && !options->model_path)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_driver_compile: neither a model path nor a graph");
  compile_state_t st;
  memset(&st, 0, sizeof(st));
  ingot_arena_init(&st.arena, ingot_allocator_system());
  st.clock = (driver_clock_t){.o = options, .begin = clock_now(), .stage = -1, .sums = out_result->stage_seconds};
  st.clock.mark = st.clock.begin;
  ingot_status_t s = compile(options, &st, out_result);
  compile_state_release(&st);
  if (s) ingot_driver_result_free(out_result);
  return s;
}

void ingot_driver_result_free(ingot_driver_result_t* result) {
  if (!result) return;
  free(result->bundle);
  memset(result, 0, sizeof(*result));
}
