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
#include "cli/npy.h"
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
  const char* targets[8];       /* --target, in order; the first leads */
  int target_count;
  const char* tuning_log;
  const char* emit_c;
  const char* cc;
  const char* input_shapes[64];
  int input_shape_count;
  const char* consts[64];      /* NAME=FILE.npy: graph inputs bound as constants */
  int const_count;
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
          "  --target TARGET          code target (repeat to carry several CPU variants; the\n"
          "                           runtime picks the best one its CPU runs): llvm (this\n"
          "                           machine's level), x86-64, x86-64-v2, x86-64-v3,\n"
          "                           x86-64-v4, aarch64, \"llvm -mtriple=T -mcpu=CPU\n"
          "                           -mattr=+f\", c, \"c -mcpu=x86-64-v3\" (default: llvm, or c\n"
          "                           in a build without LLVM)\n"
          "  --input-shape NAME=DIMS  fix a graph input's shape, e.g. input=1x3x224x224\n"
          "                           (repeat for several inputs)\n"
          "  --const NAME=FILE.npy    make graph input NAME a constant with the file's data\n"
          "                           (inputs that decide shapes must be known when compiling)\n"
          "  --tuning-log PATH        pick schedules from a tuning log (JSON lines)\n"
          "  --dump-ir                print each scheduled kernel's loop IR\n"
          "  --dump-graph             print the optimized graph\n"
          "  --emit-c PATH            also write the generated source to PATH: C for target c,\n"
          "                           the optimized LLVM IR for llvm targets (first target)\n"
          "  --cc COMPILER            the C compiler for target c (default: $CC or cc)\n"
          "  -q, --quiet              print nothing on success\n");
}

static int parse_options(int argc, char** argv, compile_options_t* o) {
  memset(o, 0, sizeof(*o));
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
      if (o->target_count == 8) return ingot_cli_usage_error("compile", "at most 8 --target options%s", "");
      o->targets[o->target_count++] = value;
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
    } else if (!strcmp(a, "--const")) {
      TAKE_VALUE();
      if (o->const_count == 64) return ingot_cli_usage_error("compile", "too many --const options%s", "");
      if (!strchr(value, '=') || value[0] == '=')
        return ingot_cli_usage_error("compile", "--const takes NAME=FILE.npy, not '%s'", value);
      o->consts[o->const_count++] = value;
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
  if (o->target_count == 0) o->targets[o->target_count++] = ingot_codegen_llvm_available() ? "llvm" : "c";
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
  /* One code object per target, in the order of o->targets. */
  uint8_t* objects[8];
  size_t object_sizes[8];
  const char* object_targets[8];
  uint32_t object_count;
  ingot_lowered_t* lowered_more[8]; /* the lowering of targets after the first */
  uint32_t lowered_more_count;
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

  ingot_bundle_code_t codes[8];
  for (uint32_t t = 0; t < st->object_count; ++t)
    codes[t] = (ingot_bundle_code_t){.target = st->object_targets[t], .data = st->objects[t], .size = st->object_sizes[t],
                                     .loader = INGOT_LOADER_CPU_ELF};
  (void)target;
  ingot_bundle_spec_t spec = {
      .tensors = tensors, .tensor_count = tensor_count,
      .inputs = inputs, .input_count = g->input_count,
      .outputs = outputs, .output_count = g->output_count,
      .steps = bsteps, .step_count = steps,
      .kernel_names = kernel_names, .kernel_count = kernel_count,
      .codes = codes, .code_count = st->object_count,
  };
  (void)o;
  return ingot_bundle_build(&spec, &st->bundle, &st->bundle_size, report);
}

ingot_status_t ingot_cli_optimize_graph(struct ingot_graph_t* graph) {
  return ingot_graph_optimize_with(graph, ingot_lower_eval_node, NULL);
}

/* A stage before code generation failed with `s`: say everything that is
 * unsupported in the model at once (the collect-all checker), or keep the
 * original message when the checker finds nothing more specific. */
static ingot_status_t explain_failure(const compile_options_t* o, ingot_status_t s) {
  /* The checker reads the model as given; with inputs bound by --const it
   * would report a different model, so keep the original message then. */
  if (s == INGOT_ERROR_IO || s == INGOT_ERROR_OUT_OF_MEMORY || o->const_count > 0) return s;
  char* original = ingot_xstrdup(ingot_compiler_error());
  ingot_cli_check_report_t r;
  ingot_status_t cs = ingot_cli_check_model(o->model, o->input_shapes, o->input_shape_count, &r);
  if (cs == INGOT_OK && r.problems.count > 0) {
    ingot_strbuf_t sb = {0};
    if (r.problems.count > 1) ingot_strbuf_appendf(&sb, "%zu problems: ", r.problems.count);
    for (size_t i = 0; i < r.problems.count; ++i) {
      if (i) ingot_strbuf_append(&sb, "; ");
      ingot_cli_check_format(&r.problems.data[i], &sb);
    }
    s = ingot_fail(s, "%s", sb.data);
    ingot_strbuf_free(&sb);
  } else {
    s = ingot_fail(s, "%s", original);
  }
  ingot_cli_check_report_free(&r);
  free(original);
  return s;
}

/* --const NAME=FILE.npy: the graph input NAME becomes a constant with the
 * file's contents (for inputs that decide shapes, such as a Reshape target
 * or Resize scales, which must be known at compile time). */
static ingot_status_t bind_const(ingot_graph_t* graph, const char* spec) {
  const char* eq = strchr(spec, '=');
  char name[512];
  size_t n = (size_t)(eq - spec);
  if (n >= sizeof(name)) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "--const: input name too long");
  memcpy(name, spec, n);
  name[n] = '\0';
  ingot_npy_array_t array;
  ingot_status_t s = ingot_npy_read_file(eq + 1, &array);
  if (s) return s;
  s = ingot_graph_bind_input(graph, name, array.dtype, (int32_t)array.rank, array.dims, array.data);
  ingot_npy_array_free(&array);
  if (s) return ingot_fail_prefix(s, "--const %s", name);
  return INGOT_OK;
}

static ingot_status_t compile_model(const compile_options_t* o, build_state_t* st) {
  ingot_status_t s;
  ingot_target_t targets[8];
  uint32_t nt = (uint32_t)o->target_count;
  for (uint32_t t = 0; t < nt; ++t) {
    if ((s = ingot_target_parse(o->targets[t], &targets[t]))) return s;
    for (uint32_t u = 0; u < t; ++u)
      if (!strcmp(targets[u].name, targets[t].name))
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "target '%s' is given twice (as '%s' and '%s')",
                          targets[t].name, o->targets[u], o->targets[t]);
  }
  ingot_target_t target = targets[0];
  if (o->tuning_log && (s = ingot_tuning_log_load(o->tuning_log, &st->log))) return s;

  if ((s = ingot_import_onnx_file(o->model, NULL, &st->graph))) return explain_failure(o, s);
  for (int i = 0; i < o->input_shape_count; ++i)
    if ((s = ingot_graph_set_input_shape(st->graph, o->input_shapes[i]))) return s;
  for (int i = 0; i < o->const_count; ++i)
    if ((s = bind_const(st->graph, o->consts[i]))) return s;
  if ((s = ingot_cli_optimize_graph(st->graph))) return explain_failure(o, s);
  if (o->dump_graph) {
    ingot_strbuf_t sb = {0};
    ingot_graph_print(st->graph, &sb);
    if (sb.data) fputs(sb.data, stdout);
    ingot_strbuf_free(&sb);
  }
  if ((s = ingot_lower_graph(st->graph, &st->lowered))) return explain_failure(o, s);
  ingot_lowered_t* lw = st->lowered;
  if (lw->kernel_count == 0)
    return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                      "'%s': nothing to compute after optimization (every output is a constant or "
                      "an input)", o->model);

  /* Per target: lower (the first target uses st->lowered), then schedule each
   * kernel (the one choice point), apply and verify. Every target has the
   * same kernels in the same order; only their loop nests differ. */
  uint32_t n = lw->kernel_count;
  ingot_lowered_t* lows[8] = {lw};
  st->schedules = ingot_xcalloc((size_t)n * nt, sizeof(ingot_schedule_t));
  char** texts = ingot_xcalloc((size_t)n * nt, sizeof(char*));
  for (uint32_t t = 0; t < nt && s == INGOT_OK; ++t) {
    if (t > 0) {
      if ((s = ingot_lower_graph(st->graph, &lows[t]))) break;
      st->lowered_more[st->lowered_more_count++] = lows[t];
    }
    for (uint32_t k = 0; k < n; ++k) {
      ingot_kernel_t* kn = &lows[t]->kernels[k];
      const ingot_node_t* node = &st->graph->nodes[kn->node];
      ingot_schedule_t* sc = &st->schedules[(size_t)t * n + k];
      ingot_schedule_init(sc);
      st->schedule_count = t * n + k + 1;
      if ((s = ingot_ir_verify(kn->func)) || (s = ingot_schedule_choose(kn, &targets[t], st->log, sc)) ||
          (s = ingot_schedule_apply(kn->func, sc)) || (s = ingot_ir_verify(kn->func))) {
        s = ingot_fail_prefix(s, "node '%s' (%s)%s%s", node->name, ingot_op_name(node->op),
                              nt > 1 ? ", target " : "", nt > 1 ? targets[t].name : "");
        break;
      }
      texts[(size_t)t * n + k] = canonical_text(kn->func);
    }
  }

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
      const char* sym = kernel_symbol(&st->arena, st->graph, &lw->kernels[k], &target, keys[k]);
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

  /* The code object of each target; --dump-ir and --emit-c show the first. */
  ingot_ir_func_t** funcs = INGOT_ARENA_ARRAY(&st->arena, ingot_ir_func_t*, unique ? unique : 1);
  for (uint32_t t = 0; t < nt; ++t) {
    for (uint32_t u = 0; u < unique; ++u) funcs[u] = lows[t]->kernels[rep_step[u]].func;
    if (t == 0 && o->dump_ir) {
      for (uint32_t u = 0; u < unique; ++u) {
        ingot_strbuf_t sb = {0};
        ingot_ir_print(funcs[u], &sb);
        if (sb.data) fputs(sb.data, stdout);
        fputc('\n', stdout);
        ingot_strbuf_free(&sb);
      }
    }
    if ((s = ingot_codegen_build(funcs, unique, &targets[t], o->cc, t == 0 ? o->emit_c : NULL,
                                 &st->objects[t], &st->object_sizes[t])))
      return nt > 1 ? ingot_fail_prefix(s, "target '%s'", targets[t].name) : s;
    st->object_targets[t] = ingot_arena_strdup(&st->arena, targets[t].name);
    st->object_count = t + 1;
  }

  ingot_bundle_report_t report;
  memset(&report, 0, sizeof(report));
  if ((s = build_bundle(o, st, &target, step_kernel, kernel_names, unique, &report))) return s;
  if ((s = ingot_file_write_atomic(o->output, st->bundle, st->bundle_size))) return s;
  if (!o->quiet) {
    printf("compiled %s -> %s\n", o->model, o->output);
    printf("  target:       ");
    for (uint32_t t = 0; t < nt; ++t) printf("%s%s", t ? ", " : "", targets[t].name);
    printf("\n");
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
  for (uint32_t t = 0; t < st.object_count; ++t) free(st.objects[t]);
  for (uint32_t t = 0; t < st.lowered_more_count; ++t) ingot_lowered_destroy(st.lowered_more[t]);
  free(st.bundle);
  ingot_arena_deinit(&st.arena);
  return s ? 1 : 0;
}
