/* `ingot compile`: the driver that runs every stage in order.
 *
 *   import (importer/) -> fix input shapes, optimize (graph/) -> lower each
 *   node (lower/) -> choose and apply a schedule per kernel (schedule/) ->
 *   deduplicate identical kernels -> build the code object (codegen/) ->
 *   plan memory and write the bundle (packager/), atomically.
 *
 * Nothing is written to the output path unless every stage succeeded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cli/cli.h"
#include "codegen/codegen.h"
#include "graph/graph.h"
#include "importer/importer.h"
#include "lower/ir.h"
#include "lower/lower.h"
#include "packager/packager.h"
#include "schedule/schedule.h"

typedef struct compile_options_t {
  const char* model;
  const char* output;
  const char* target;
  const char* tuning_log;
  const char* emit_c;
  const char* cc;
  const char* input_shapes[64];
  int input_shape_count;
  bool dump_ir;
  bool dump_graph;
  bool quiet;
} compile_options_t;

static void compile_usage(FILE* out) {
  fprintf(out,
          "usage: ingot compile MODEL.onnx -o OUT.ingot [options]\n"
          "\n"
          "Compiles an ONNX model into a self-contained bundle.\n"
          "\n"
          "options:\n"
          "  -o, --output PATH        the bundle to write (required)\n"
          "  --target TARGET          code target: c, \"c -mcpu=x86-64-v3\", ... (default: c)\n"
          "  --input-shape NAME=DIMS  fix a graph input's shape, e.g. input=1x3x224x224\n"
          "                           (repeat for several inputs)\n"
          "  --tuning-log PATH        pick schedules from a tuning log (JSON lines)\n"
          "  --dump-ir                print each scheduled kernel's loop IR\n"
          "  --dump-graph             print the optimized graph\n"
          "  --emit-c PATH            also write the generated C source to PATH\n"
          "  --cc COMPILER            the C compiler for target c (default: $CC or cc)\n"
          "  -q, --quiet              print nothing on success\n");
}

static int parse_options(int argc, char** argv, compile_options_t* o) {
  memset(o, 0, sizeof(*o));
  o->target = "c";
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* value = NULL;
#define TAKE_VALUE()                                                       \
  do {                                                                     \
    if (i + 1 >= argc) return ingot_cli_usage_error("compile", "option '%s' needs a value", a); \
    value = argv[++i];                                                     \
  } while (0)
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      compile_usage(stdout);
      return -1;
    } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
      TAKE_VALUE();
      o->output = value;
    } else if (!strcmp(a, "--target")) {
      TAKE_VALUE();
      o->target = value;
    } else if (!strcmp(a, "--tuning-log")) {
      TAKE_VALUE();
      o->tuning_log = value;
    } else if (!strcmp(a, "--emit-c")) {
      TAKE_VALUE();
      o->emit_c = value;
    } else if (!strcmp(a, "--cc")) {
      TAKE_VALUE();
      o->cc = value;
    } else if (!strcmp(a, "--input-shape")) {
      TAKE_VALUE();
      if (o->input_shape_count == 64) return ingot_cli_usage_error("compile", "too many --input-shape options%s", "");
      o->input_shapes[o->input_shape_count++] = value;
    } else if (!strcmp(a, "--dump-ir")) {
      o->dump_ir = true;
    } else if (!strcmp(a, "--dump-graph")) {
      o->dump_graph = true;
    } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
      o->quiet = true;
    } else if (a[0] == '-' && a[1] != '\0') {
      return ingot_cli_usage_error("compile", "unknown option '%s'", a);
    } else if (!o->model) {
      o->model = a;
    } else {
      return ingot_cli_usage_error("compile", "unexpected argument '%s': one model at a time", a);
    }
#undef TAKE_VALUE
  }
  if (!o->model) return ingot_cli_usage_error("compile", "no model given%s", "");
  if (!o->output) return ingot_cli_usage_error("compile", "no output given: add -o OUT.ingot%s", "");
  return 0;
}

/* ---- kernel deduplication ---------------------------------------------- */

/* The text of a function with its own and its buffers' names replaced by
 * canonical ones, so that identical computations print identically. */
static char* canonical_text(ingot_ir_func_t* func) {
  const char* saved_name = func->name;
  const char* saved[256];
  uint32_t n = func->buffer_count < 256 ? func->buffer_count : 256;
  char names[256][16];
  func->name = "k";
  for (uint32_t i = 0; i < n; ++i) {
    saved[i] = func->buffers[i].name;
    snprintf(names[i], sizeof(names[i]), "b%u", i);
    func->buffers[i].name = names[i];
  }
  ingot_strbuf_t sb = {0};
  ingot_ir_print(func, &sb);
  func->name = saved_name;
  for (uint32_t i = 0; i < n; ++i) func->buffers[i].name = saved[i];
  if (!sb.data) ingot_strbuf_append(&sb, "");
  return sb.data;
}

static uint32_t fnv1a(const char* s) {
  uint32_t h = 2166136261u;
  for (; *s; ++s) h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}

/* The symbol name says what the kernel holds: op, dtype, target, a content hash. */
static const char* kernel_symbol(ingot_arena_t* arena, const ingot_graph_t* graph,
                                 const ingot_kernel_t* kernel, const ingot_target_t* target,
                                 const char* text) {
  const ingot_node_t* node = &graph->nodes[kernel->node];
  char op[48];
  size_t j = 0;
  for (const char* p = ingot_op_name(node->op); *p && j + 1 < sizeof(op); ++p)
    op[j++] = (char)((*p >= 'A' && *p <= 'Z') ? *p - 'A' + 'a' : *p);
  op[j] = '\0';
  const ingot_ir_buffer_t* out = &kernel->func->buffers[kernel->func->buffer_count - 1];
  const char* dtype = out->dtype == INGOT_DTYPE_F32 ? "f32" : ingot_dtype_name(out->dtype);
  const char* tname = target->kind == INGOT_TARGET_C ? "c" : "x";
  return ingot_arena_printf(arena, "%s_%s_%s_%08x", op, dtype, tname, fnv1a(text));
}

/* ---- bundle spec --------------------------------------------------------- */

static uint32_t resolve_alias(const ingot_lowered_t* lowered, uint32_t v) {
  while (v < lowered->value_count && lowered->alias_of[v] != INGOT_NO_VALUE) v = lowered->alias_of[v];
  return v;
}

typedef struct build_state_t {
  ingot_arena_t arena;
  ingot_graph_t* graph;
  ingot_lowered_t* lowered;
  ingot_schedule_t* schedules;
  uint32_t schedule_count;
  ingot_tuning_log_t* log;
  uint8_t* object;
  size_t object_size;
  uint8_t* bundle;
  size_t bundle_size;
} build_state_t;

static ingot_status_t build_bundle(const compile_options_t* o, build_state_t* st,
                                   const ingot_target_t* target, uint32_t* step_kernel, const char** kernel_names,
                                   uint32_t kernel_count, ingot_bundle_report_t* report) {
  ingot_graph_t* g = st->graph;
  ingot_lowered_t* lw = st->lowered;
  uint32_t steps = lw->kernel_count;
  ingot_arena_t* A = &st->arena;

  /* Tensor index per graph value, UINT32_MAX where the value needs no storage. */
  uint32_t* tensor_of = INGOT_ARENA_ARRAY(A, uint32_t, g->value_count);
  for (uint32_t v = 0; v < g->value_count; ++v) tensor_of[v] = UINT32_MAX;
  ingot_bundle_tensor_t* tensors = INGOT_ARENA_ARRAY(A, ingot_bundle_tensor_t, g->value_count);
  uint32_t tensor_count = 0;

  /* Which values are used at all: kernel arguments, graph inputs, outputs, and
   * the roots of aliases. */
  bool* used = INGOT_ARENA_ARRAY(A, bool, g->value_count);
  for (uint32_t k = 0; k < steps; ++k)
    for (uint32_t a = 0; a < lw->kernels[k].arg_count; ++a) used[lw->kernels[k].args[a]] = true;
  for (uint32_t i = 0; i < g->input_count; ++i) used[g->inputs[i]] = true;
  for (uint32_t i = 0; i < g->output_count; ++i) used[g->outputs[i]] = true;
  for (uint32_t v = 0; v < g->value_count; ++v)
    if (used[v]) used[resolve_alias(lw, v)] = true;

  for (uint32_t v = 0; v < g->value_count; ++v) {
    if (!used[v]) continue;
    const ingot_value_t* val = &g->values[v];
    if (val->rank < 0 || val->dtype == INGOT_DTYPE_INVALID)
      return ingot_fail(INGOT_ERROR_INTERNAL, "value '%s' has no inferred shape", val->name);
    if (val->kind == INGOT_VALUE_WEIGHT && val->is_output)
      return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                        "graph output '%s' is a constant; a model whose output is fixed at compile "
                        "time is not supported", val->name);
    ingot_bundle_tensor_t* t = &tensors[tensor_count];
    t->name = val->name;
    t->dtype = val->dtype;
    t->rank = (uint32_t)val->rank;
    for (int32_t d = 0; d < val->rank; ++d) t->dims[d] = val->dims[d];
    t->storage = val->kind == INGOT_VALUE_WEIGHT ? INGOT_STORAGE_WEIGHT : INGOT_STORAGE_ARENA;
    t->data = val->data;
    t->first_step = UINT32_MAX;
    t->last_step = 0;
    t->alias_of = UINT32_MAX;
    tensor_of[v] = tensor_count++;
  }
  /* Aliases point at their root's tensor (roots come first or later; fix after). */
  for (uint32_t v = 0; v < g->value_count; ++v) {
    if (tensor_of[v] == UINT32_MAX) continue;
    uint32_t root = resolve_alias(lw, v);
    if (root != v) tensors[tensor_of[v]].alias_of = tensor_of[root];
  }
  /* Live intervals from the steps that touch each tensor. */
  ingot_bundle_step_t* bsteps = INGOT_ARENA_ARRAY(A, ingot_bundle_step_t, steps ? steps : 1);
  for (uint32_t k = 0; k < steps; ++k) {
    const ingot_kernel_t* kn = &lw->kernels[k];
    uint32_t* args = INGOT_ARENA_ARRAY(A, uint32_t, kn->arg_count ? kn->arg_count : 1);
    for (uint32_t a = 0; a < kn->arg_count; ++a) {
      uint32_t t = tensor_of[kn->args[a]];
      args[a] = t;
      if (tensors[t].first_step == UINT32_MAX || tensors[t].first_step > k) tensors[t].first_step = k;
      if (tensors[t].last_step < k) tensors[t].last_step = k;
    }
    bsteps[k].kernel = step_kernel[k];
    bsteps[k].args = args;
    bsteps[k].arg_count = kn->arg_count;
    bsteps[k].name = g->nodes[kn->node].name;
  }
  uint32_t* inputs = INGOT_ARENA_ARRAY(A, uint32_t, g->input_count ? g->input_count : 1);
  uint32_t* outputs = INGOT_ARENA_ARRAY(A, uint32_t, g->output_count ? g->output_count : 1);
  for (uint32_t i = 0; i < g->input_count; ++i) {
    inputs[i] = tensor_of[g->inputs[i]];
    tensors[inputs[i]].first_step = 0;
  }
  for (uint32_t i = 0; i < g->output_count; ++i) {
    outputs[i] = tensor_of[g->outputs[i]];
    tensors[outputs[i]].last_step = steps - 1;
  }
  for (uint32_t t = 0; t < tensor_count; ++t) {
    if (tensors[t].first_step == UINT32_MAX) tensors[t].first_step = 0;
    if (tensors[t].last_step < tensors[t].first_step) tensors[t].last_step = tensors[t].first_step;
  }

  ingot_bundle_code_t code = {.target = target->name, .data = st->object, .size = st->object_size};
  ingot_bundle_spec_t spec = {
      .tensors = tensors, .tensor_count = tensor_count,
      .inputs = inputs, .input_count = g->input_count,
      .outputs = outputs, .output_count = g->output_count,
      .steps = bsteps, .step_count = steps,
      .kernel_names = kernel_names, .kernel_count = kernel_count,
      .codes = &code, .code_count = 1,
  };
  (void)o;
  return ingot_bundle_build(&spec, &st->bundle, &st->bundle_size, report);
}

static ingot_status_t compile_model(const compile_options_t* o, build_state_t* st) {
  ingot_status_t s;
  ingot_target_t target;
  if ((s = ingot_target_parse(o->target, &target))) return s;
  if (o->tuning_log && (s = ingot_tuning_log_load(o->tuning_log, &st->log))) return s;

  if ((s = ingot_import_onnx_file(o->model, NULL, &st->graph))) return s;
  for (int i = 0; i < o->input_shape_count; ++i)
    if ((s = ingot_graph_set_input_shape(st->graph, o->input_shapes[i]))) return s;
  if ((s = ingot_graph_optimize(st->graph))) return s;
  if (o->dump_graph) {
    ingot_strbuf_t sb = {0};
    ingot_graph_print(st->graph, &sb);
    if (sb.data) fputs(sb.data, stdout);
    ingot_strbuf_free(&sb);
  }
  if ((s = ingot_lower_graph(st->graph, &st->lowered))) return s;
  ingot_lowered_t* lw = st->lowered;
  if (lw->kernel_count == 0)
    return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                      "'%s': nothing to compute after optimization (every output is a constant or "
                      "an input)", o->model);

  /* Schedule each kernel: the one choice point, then apply and verify. */
  st->schedules = ingot_xcalloc(lw->kernel_count, sizeof(ingot_schedule_t));
  for (uint32_t k = 0; k < lw->kernel_count; ++k) {
    ingot_kernel_t* kn = &lw->kernels[k];
    const ingot_node_t* node = &st->graph->nodes[kn->node];
    ingot_schedule_init(&st->schedules[k]);
    st->schedule_count = k + 1;
    if ((s = ingot_ir_verify(kn->func)) ||
        (s = ingot_schedule_choose(kn, &target, st->log, &st->schedules[k])) ||
        (s = ingot_schedule_apply(kn->func, &st->schedules[k])) || (s = ingot_ir_verify(kn->func)))
      return ingot_fail_prefix(s, "node '%s' (%s)", node->name, ingot_op_name(node->op));
  }

  /* Deduplicate: kernels whose scheduled IR is identical share one function. */
  uint32_t n = lw->kernel_count;
  char** texts = ingot_xcalloc(n, sizeof(char*));
  uint32_t* step_kernel = INGOT_ARENA_ARRAY(&st->arena, uint32_t, n);
  const char** kernel_names = INGOT_ARENA_ARRAY(&st->arena, const char*, n);
  ingot_ir_func_t** funcs = INGOT_ARENA_ARRAY(&st->arena, ingot_ir_func_t*, n);
  char** unique_texts = INGOT_ARENA_ARRAY(&st->arena, char*, n);
  uint32_t unique = 0;
  for (uint32_t k = 0; k < n; ++k) {
    ingot_kernel_t* kn = &lw->kernels[k];
    texts[k] = canonical_text(kn->func);
    uint32_t found = UINT32_MAX;
    for (uint32_t u = 0; u < unique; ++u)
      if (!strcmp(unique_texts[u], texts[k])) {
        found = u;
        break;
      }
    if (found == UINT32_MAX) {
      found = unique++;
      funcs[found] = kn->func;
      unique_texts[found] = texts[k];
      const char* sym = kernel_symbol(&st->arena, st->graph, kn, &target, texts[k]);
      /* Two different kernels with the same hash: add a suffix. */
      for (uint32_t u = 0; u < found; ++u)
        if (!strcmp(kernel_names[u], sym)) sym = ingot_arena_printf(&st->arena, "%s_%u", sym, found);
      kernel_names[found] = sym;
      kn->func->name = sym;
    }
    step_kernel[k] = found;
  }

  if (o->dump_ir) {
    for (uint32_t u = 0; u < unique; ++u) {
      ingot_strbuf_t sb = {0};
      ingot_ir_print(funcs[u], &sb);
      if (sb.data) fputs(sb.data, stdout);
      fputc('\n', stdout);
      ingot_strbuf_free(&sb);
    }
  }
  for (uint32_t k = 0; k < n; ++k) free(texts[k]);
  free(texts);

  if ((s = ingot_codegen_build(funcs, unique, &target, o->cc, o->emit_c, &st->object, &st->object_size)))
    return s;

  ingot_bundle_report_t report;
  memset(&report, 0, sizeof(report));
  if ((s = build_bundle(o, st, &target, step_kernel, kernel_names, unique, &report))) return s;
  if ((s = ingot_file_write_atomic(o->output, st->bundle, st->bundle_size))) return s;
  if (!o->quiet) {
    printf("compiled %s -> %s\n", o->model, o->output);
    printf("  target:       %s\n", target.name);
    printf("  steps:        %u (%u unique kernels)\n", n, unique);
    printf("  weights:      %llu bytes\n", (unsigned long long)report.weight_bytes);
    printf("  arena:        %llu bytes (lower bound %llu)\n", (unsigned long long)report.arena_bytes,
           (unsigned long long)report.arena_lower_bound);
    printf("  bundle:       %llu bytes\n", (unsigned long long)st->bundle_size);
  }
  return INGOT_OK;
}

int ingot_cli_compile(int argc, char** argv) {
  compile_options_t o;
  int rc = parse_options(argc, argv, &o);
  if (rc < 0) return 0;  /* --help */
  if (rc) return rc;

  build_state_t st;
  memset(&st, 0, sizeof(st));
  ingot_arena_init(&st.arena, ingot_allocator_system());
  ingot_compiler_error_clear();
  ingot_status_t s = compile_model(&o, &st);
  if (s) ingot_cli_error(1, "%s", ingot_compiler_error());

  for (uint32_t i = 0; i < st.schedule_count; ++i) ingot_schedule_deinit(&st.schedules[i]);
  free(st.schedules);
  if (st.lowered) ingot_lowered_destroy(st.lowered);
  if (st.graph) ingot_graph_destroy(st.graph);
  if (st.log) ingot_tuning_log_destroy(st.log);
  free(st.object);
  free(st.bundle);
  ingot_arena_deinit(&st.arena);
  return s ? 1 : 0;
}
