/* `ingot compile`: the command-line front end of the compiler library
 * (driver/driver.h, which runs every stage). Here: parse the flags, read the
 * --const arrays, print what --dump-graph and --dump-ir ask for through the
 * driver's hooks, write the bundle atomically and print the summary.
 *
 * Nothing is written to the output path unless every stage succeeded. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "cli.h"
#include "npy.h"
#include "driver/driver.h"
#include "graph/graph.h"
#include "target/target.h"
#include "runtime/ingot.h"

typedef struct compile_options_t {
  const char* model;
  const char* output;
  const char* targets[8];       /* --target, in order; the first leads */
  char target_text[8][INGOT_CLI_TARGET_BYTES]; /* a target joined with its unquoted options */
  int target_count;
  const char* tuning_log;
  const char* emit_c;
  const char* emit_firmware;   /* --emit-firmware DIR */
  const char* cc;
  const char* input_shapes[64];
  int input_shape_count;
  const char* consts[64];      /* NAME=FILE.npy: graph inputs bound as constants */
  int const_count;
  int64_t max_trips;           /* --max-trips N: Loops whose trip count a run decides; 0: refused */
  const char* dump_space;      /* --dump-space FILE.json */
  bool dump_schedule;
  bool dump_ir;
  bool dump_graph;
  bool quiet;
  bool verbose;
  uint32_t weights_codec;      /* --weights: 0 auto, 1 zstd, 2 raw (ingot_driver_options_t) */
  ingot_dtype_t weight_dtype;  /* --weights fp32|fp16|bf16|int8 (ingot_driver_options_t) */
  const char* accuracy_inputs[64]; /* --accuracy-input NAME=FILE.npy */
  int accuracy_input_count;
  bool no_accuracy;            /* --no-accuracy */
  uint32_t activation_block;   /* --layout: 0 auto, 1 nchw, else 4, 8, 16 (ingot_driver_options_t) */
  ingot_driver_half_ops_t half_ops; /* --half-ops auto|f16|f32 (ingot_driver_options_t) */
} compile_options_t;

static void compile_usage(FILE* out) {
  fprintf(out,
          "usage: ingot compile MODEL.onnx -o OUT.ingot [options]\n"
          "       ingot compile MODEL.onnx --target c --emit-firmware DIR [-o OUT.ingot] [options]\n"
          "\n"
          "Compiles an ONNX model into a self-contained bundle (and, with --emit-firmware, a\n"
          "freestanding C library to link into firmware).\n"
          "\n"
          "options:\n"
          "  -o, --output PATH        the bundle to write (required, except with --emit-firmware)\n"
          "  --target TARGET          code target (repeat to carry several variants; the\n"
          "                           runtime picks the best one its machine runs): llvm (this\n"
          "                           machine's level), x86-64, x86-64-v2, x86-64-v3,\n"
          "                           x86-64-v4, aarch64, llvm -mtriple=T -mcpu=CPU\n"
          "                           -mattr=+f, c, c -mcpu=x86-64-v3, cuda -arch=sm_80|sm_86|\n"
          "                           sm_89|sm_90 (cuda: sm_80), rocm -mcpu=gfx90a|gfx942\n"
          "                           (rocm: gfx90a); options (-arch= -mcpu= -mattr=\n"
          "                           -mtriple=) may follow unquoted or inside quotes\n"
          "                           (default: llvm, or c in a build without LLVM)\n"
          "  --input-shape NAME=DIMS  fix a graph input's shape, e.g. input=1x3x224x224, or give\n"
          "                          a dim a range that one bundle accepts: ids=1x1..128\n"
          "                           (repeat for several inputs)\n"
          "  --const NAME=FILE.npy    make graph input NAME a constant with the file's data\n"
          "                           (inputs that decide shapes must be known when compiling)\n"
          "  --max-trips N            compile each Loop whose trip count is known only at run\n"
          "                           time for at most N iterations (a run that asks for more\n"
          "                           fails with an error naming the Loop); default: refused\n"
          "  --tuning-log PATH        pick schedules from a tuning log (JSON lines); records made\n"
          "                           for another target or on another CPU model are not applied;\n"
          "                           without it the pre-tuned logs built in (schedule/logs/) apply\n"
          "                           where target and CPU match; 'none': the defaults only\n"
          "  --dump-space FILE.json   write each unique kernel's schedule space, one object per\n"
          "                           kernel, target and template (workload, target, template,\n"
          "                           log_version, default knobs, legal values of each knob)\n"
          "  --dump-schedule          print each kernel's chosen template, knobs and directives\n"
          "  --dump-ir                print each scheduled kernel's loop IR\n"
          "  --dump-graph             print the optimized graph\n"
          "  --emit-c PATH            also write the generated source to PATH: C for target c,\n"
          "                           the optimized LLVM IR for llvm targets (first target)\n"
          "  --emit-firmware DIR      also write the model as a freestanding C library into DIR\n"
          "                           (ingot_model.h, ingot_model.c, ingot_model_kernels.c,\n"
          "                           ingot_model_weights.c: no libc, no malloc, one entry point\n"
          "                           ingot_model_run); needs --target c; without -o only\n"
          "                           these files are written and no compiler is run\n"
          "  --cc \"COMPILER [FLAGS]\"  the C compiler for target c, with flags of its own, e.g.\n"
          "                           \"clang --target=aarch64-linux-gnu\" (default: $CC or cc);\n"
          "                           x86 -march flags are added only for a compiler that\n"
          "                           targets x86-64\n"
          "  --weights auto|zstd|raw  how weights are stored: raw (64-byte aligned, mapped and\n"
          "                           used in place at open: least memory, fastest open), zstd\n"
          "                           (smallest file, decoded into memory at open), auto (zstd\n"
          "                           only where it saves 20 %% or more; the default)\n"
          "  --weights fp32|fp16|bf16|int8\n"
          "                           the precision of the big float32 weights of Conv, MatMul,\n"
          "                           Gemm and embedding Gathers (1024 elements or more): fp32\n"
          "                           as the model has them (the default), fp16 or bf16 rounded\n"
          "                           to nearest even, int8 symmetric per output channel (per\n"
          "                           row of a table) with float32 scales;\n"
          "                           the kernels convert them to float32 as they load them\n"
          "                           (CPU targets). Give --weights twice to set both, e.g.\n"
          "                           --weights int8 --weights raw. After compiling, the\n"
          "                           bundle and a float32 one run once on the same inputs and\n"
          "                           each output's error is printed, with the sizes of both\n"
          "  --accuracy-input NAME=FILE.npy\n"
          "                           with --weights fp16|bf16|int8: measure the error on this\n"
          "                           input (repeat per input; the others are random, seed 0:\n"
          "                           floats uniform in [-1, 1), integers 0 or 1)\n"
          "  --no-accuracy            with --weights fp16|bf16|int8: skip that measurement (it\n"
          "                           compiles the model a second time, in float32; -q skips\n"
          "                           it too)\n"
          "  --layout auto|nchw|nchw4c|nchw8c|nchw16c\n"
          "                           activations of convolution regions: blocks of channels\n"
          "                           (NCHW16c: 16 channels a vector), converted back once at\n"
          "                           a region's edge; auto: the target's float32 lanes (the\n"
          "                           default), nchw: none\n"
          "  --half-ops auto|f16|f32  where float16 Add, Sub, Mul, Div, Min, Max, Neg, Abs,\n"
          "                           Sqrt and Relu compute: f16 rounds after each op, as IEEE\n"
          "                           float16 (natively on AArch64 fullfp16 and AVX512-FP16,\n"
          "                           through float32 elsewhere: slower); f32 rounds once where\n"
          "                           float16 values leave float32 code, as ONNX Runtime's\n"
          "                           float32 kernels do on x86-64; auto (the default): f16\n"
          "                           when every --target computes float16 natively\n"
          "  -v, --verbose            print each stage's wall time (import, passes, lower,\n"
          "                           schedule, codegen, package, write) on stderr after the\n"
          "                           compile, and progress lines while it runs (below); with\n"
          "                           --tuning-log, say why each record of the model's\n"
          "                           workloads was not applied\n"
          "  -q, --quiet              no summary on success and no progress (-v still prints\n"
          "                           the stage times)\n"
          "\n"
          "Progress: a compile that runs longer than a second shows where it is on stderr\n"
          "(\"schedule: kernel 12/31\"): one line updated in place when stderr is a\n"
          "terminal; with -v otherwise, a plain line at each stage and at most one a second\n"
          "within a stage. INGOT_PROGRESS_AFTER_MS sets the delay (default 1000; 0 shows\n"
          "every compile's progress).\n");
}

enum {
  OPT_TARGET = 256, OPT_TUNING_LOG, OPT_EMIT_C, OPT_CC, OPT_INPUT_SHAPE, OPT_CONST, OPT_MAX_TRIPS, OPT_DUMP_SPACE,
  OPT_DUMP_SCHEDULE, OPT_DUMP_IR, OPT_DUMP_GRAPH, OPT_WEIGHTS, OPT_LAYOUT, OPT_HALF_OPS, OPT_EMIT_FIRMWARE,
  OPT_ACCURACY_INPUT, OPT_NO_ACCURACY,
};

static const struct option kCompileOptions[] = {
    {"help", no_argument, NULL, 'h'},
    {"output", required_argument, NULL, 'o'},
    {"target", required_argument, NULL, OPT_TARGET},
    {"tuning-log", required_argument, NULL, OPT_TUNING_LOG},
    {"emit-c", required_argument, NULL, OPT_EMIT_C},
    {"emit-firmware", required_argument, NULL, OPT_EMIT_FIRMWARE},
    {"cc", required_argument, NULL, OPT_CC},
    {"weights", required_argument, NULL, OPT_WEIGHTS},
    {"layout", required_argument, NULL, OPT_LAYOUT},
    {"half-ops", required_argument, NULL, OPT_HALF_OPS},
    {"accuracy-input", required_argument, NULL, OPT_ACCURACY_INPUT},
    {"no-accuracy", no_argument, NULL, OPT_NO_ACCURACY},
    {"input-shape", required_argument, NULL, OPT_INPUT_SHAPE},
    {"const", required_argument, NULL, OPT_CONST},
    {"max-trips", required_argument, NULL, OPT_MAX_TRIPS},
    {"dump-space", required_argument, NULL, OPT_DUMP_SPACE},
    {"dump-schedule", no_argument, NULL, OPT_DUMP_SCHEDULE},
    {"dump-ir", no_argument, NULL, OPT_DUMP_IR},
    {"dump-graph", no_argument, NULL, OPT_DUMP_GRAPH},
    {"quiet", no_argument, NULL, 'q'},
    {"verbose", no_argument, NULL, 'v'},
    {NULL, 0, NULL, 0},
};

/* An option value that must not be empty ("--output=" is a mistake). */
static int need_text(const char* option, const char* value) {
  if (value && *value) return 0;
  return ingot_cli_usage_error("compile", "option '%s' needs a value", option);
}

static int parse_options(int argc, char** argv, compile_options_t* o) {
  memset(o, 0, sizeof(*o));
  ingot_cli_args_t args;
  ingot_cli_args_init(&args, "compile", argc, argv, "ho:qv", kCompileOptions);
  for (int c; (c = ingot_cli_args_next(&args)) != INGOT_CLI_ARG_END;) {
    const char* value = args.value;
    int rc = 0;
    switch (c) {
      case INGOT_CLI_ARG_BAD: return INGOT_CLI_EXIT_USAGE;
      case 'h': compile_usage(stdout); return -1;
      case 'o':
        if ((rc = need_text("--output", value))) return rc;
        o->output = value;
        break;
      case OPT_TARGET: {
        if ((rc = need_text("--target", value))) return rc;
        if (o->target_count == 8) return ingot_cli_usage_error("compile", "at most 8 --target options%s", "");
        const char* joined = ingot_cli_args_target(&args, o->target_text[o->target_count], sizeof o->target_text[0]);
        if (!joined) return ingot_cli_usage_error("compile", "target '%s ...': too long", value);
        if ((rc = ingot_cli_check_target("compile", joined))) return rc;
        o->targets[o->target_count++] = joined;
        break;
      }
      case OPT_TUNING_LOG:
        if ((rc = need_text("--tuning-log", value))) return rc;
        o->tuning_log = value;
        break;
      case OPT_EMIT_C:
        if ((rc = need_text("--emit-c", value))) return rc;
        o->emit_c = value;
        break;
      case OPT_EMIT_FIRMWARE:
        if ((rc = need_text("--emit-firmware", value))) return rc;
        o->emit_firmware = value;
        break;
      case OPT_CC:
        if ((rc = need_text("--cc", value))) return rc;
        o->cc = value;
        break;
      case OPT_WEIGHTS:
        if (!strcmp(value, "auto")) o->weights_codec = 0;
        else if (!strcmp(value, "zstd")) o->weights_codec = 1;
        else if (!strcmp(value, "raw")) o->weights_codec = 2;
        else if (!strcmp(value, "fp32")) o->weight_dtype = INGOT_DTYPE_F32;
        else if (!strcmp(value, "fp16")) o->weight_dtype = INGOT_DTYPE_F16;
        else if (!strcmp(value, "bf16")) o->weight_dtype = INGOT_DTYPE_BF16;
        else if (!strcmp(value, "int8")) o->weight_dtype = INGOT_DTYPE_I8;
        else
          return ingot_cli_usage_error("compile",
                                       "--weights takes a storage codec (auto, zstd, raw) or a precision (fp32, fp16, "
                                       "bf16, int8), not '%s'", value);
        break;
      case OPT_ACCURACY_INPUT:
        if (o->accuracy_input_count == 64) return ingot_cli_usage_error("compile", "too many --accuracy-input options%s", "");
        if (!strchr(value, '=') || value[0] == '=')
          return ingot_cli_usage_error("compile", "--accuracy-input takes NAME=FILE.npy, not '%s'", value);
        o->accuracy_inputs[o->accuracy_input_count++] = value;
        break;
      case OPT_NO_ACCURACY: o->no_accuracy = true; break;
      case OPT_LAYOUT:
        if (!strcmp(value, "auto")) o->activation_block = 0;
        else if (!strcmp(value, "nchw")) o->activation_block = 1;
        else if (!strcmp(value, "nchw4c")) o->activation_block = 4;
        else if (!strcmp(value, "nchw8c")) o->activation_block = 8;
        else if (!strcmp(value, "nchw16c")) o->activation_block = 16;
        else return ingot_cli_usage_error("compile", "--layout takes auto, nchw, nchw4c, nchw8c or nchw16c, not '%s'", value);
        break;
      case OPT_HALF_OPS:
        if (!strcmp(value, "auto")) o->half_ops = INGOT_DRIVER_HALF_OPS_AUTO;
        else if (!strcmp(value, "f16")) o->half_ops = INGOT_DRIVER_HALF_OPS_F16;
        else if (!strcmp(value, "f32")) o->half_ops = INGOT_DRIVER_HALF_OPS_F32;
        else return ingot_cli_usage_error("compile", "--half-ops takes auto, f16 or f32, not '%s'", value);
        break;
      case OPT_INPUT_SHAPE:
        if (o->input_shape_count == 64) return ingot_cli_usage_error("compile", "too many --input-shape options%s", "");
        if ((rc = ingot_cli_check_input_shape("compile", value))) return rc;
        o->input_shapes[o->input_shape_count++] = value;
        break;
      case OPT_CONST:
        if (o->const_count == 64) return ingot_cli_usage_error("compile", "too many --const options%s", "");
        if (!strchr(value, '=') || value[0] == '=')
          return ingot_cli_usage_error("compile", "--const takes NAME=FILE.npy, not '%s'", value);
        o->consts[o->const_count++] = value;
        break;
      case OPT_MAX_TRIPS:
        if (!ingot_cli_parse_int(value, 1, INGOT_UNROLL_MAX_TRIPS, &o->max_trips))
          return ingot_cli_usage_error("compile", "--max-trips takes a count from 1 to %u, not '%s'",
                                       INGOT_UNROLL_MAX_TRIPS, value);
        break;
      case OPT_DUMP_SPACE:
        if ((rc = need_text("--dump-space", value))) return rc;
        o->dump_space = value;
        break;
      case OPT_DUMP_SCHEDULE: o->dump_schedule = true; break;
      case OPT_DUMP_IR: o->dump_ir = true; break;
      case OPT_DUMP_GRAPH: o->dump_graph = true; break;
      case 'q': o->quiet = true; break;
      case 'v': o->verbose = true; break;
      case INGOT_CLI_ARG_POSITIONAL:
        if (o->model) return ingot_cli_usage_error("compile", "unexpected argument '%s': one model at a time", value);
        o->model = value;
        break;
      default: return ingot_cli_usage_error("compile", "unhandled option (a bug)%s", "");
    }
  }
  /* No --target: the driver's default (llvm, or c in a build without LLVM). */
  if (!o->model) return ingot_cli_usage_error("compile", "no model given%s", "");
  if (o->accuracy_input_count && o->weight_dtype != INGOT_DTYPE_F16 && o->weight_dtype != INGOT_DTYPE_BF16 &&
      o->weight_dtype != INGOT_DTYPE_I8)
    return ingot_cli_usage_error("compile", "--accuracy-input needs --weights fp16, bf16 or int8%s", "");
  if (!o->output && !o->emit_firmware)
    return ingot_cli_usage_error("compile", "no output given: add -o OUT.ingot (or --emit-firmware DIR)%s", "");
  return 0;
}

/* Shared with check and tune (cli.h); here, with the compiler, because a
 * runtime-only build of this command has none. */
int ingot_cli_check_input_shape(const char* command, const char* spec) {
  const char* eq = strrchr(spec, '=');
  int32_t rank = 0;
  int64_t dims[INGOT_MAX_RANK], lo[INGOT_MAX_RANK];
  if (!eq || eq == spec)
    return ingot_cli_usage_error(command, "--input-shape takes NAME=DIMS, e.g. input=1x3x224x224, not '%s'", spec);
  if (!ingot_graph_dims_parse_ranges(eq + 1, &rank, lo, dims))
    return ingot_cli_usage_error(command, "--input-shape '%s': '%s' is not a list of dimensions like 1x3x224x224 "
                                 "or 1x1..128 (at most %u)", spec, eq + 1, (unsigned)INGOT_MAX_RANK);
  for (int32_t i = 0; i < rank; ++i)
    if (lo[i] > dims[i] || (lo[i] < 1 && lo[i] != dims[i]))
      return ingot_cli_usage_error(command, "--input-shape '%s': the range of dimension %d is empty or starts "
                                   "below 1", spec, i);
  return 0;
}

int ingot_cli_check_target(const char* command, const char* target) {
  ingot_target_t t;
  ingot_compiler_error_clear();
  if (ingot_target_parse(target, &t) != INGOT_OK)
    return ingot_cli_usage_error(command, "%s", ingot_compiler_error());
  return 0;
}

/* ---- the driver's hooks -------------------------------------------------- */

typedef struct compile_hooks_t {
  const compile_options_t* o;
  struct compile_progress_t* progress;
  ingot_strbuf_t space;          /* --dump-space: the JSON array being built */
  uint32_t space_objects;
  uint32_t target_index;         /* the target whose steps are being lowered */
  const char** workloads;        /* listed for that target so far (once a target) */
  uint32_t workload_count, workload_cap;
  ingot_strbuf_t skipped;        /* --verbose: one line per record not applied */
  uint64_t* skip_seen;           /* (target << 32 | line) of each line written */
  uint32_t skip_count, skip_cap;
} compile_hooks_t;

/* ---- progress and stage times -------------------------------------------- */

typedef struct compile_progress_t {
  bool show;           /* print progress at all */
  bool tty;            /* stderr is a terminal: one line updated in place */
  bool drawn;          /* a line is on the terminal, to be cleared */
  double after_s;      /* print nothing before the compile has run this long */
  double last_s;       /* when the last line was printed */
  int last_stage;      /* its stage (-1: none yet) */
} compile_progress_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void on_progress(void* self, const ingot_driver_progress_t* p) {
  compile_progress_t* pr = ((compile_hooks_t*)self)->progress;
  if (!pr->show || p->elapsed_s < pr->after_s) return;
  bool new_stage = (int)p->stage != pr->last_stage;
  /* A terminal line is redrawn at most ten times a second; plain lines come at
   * each stage and at most once a second within one. */
  if (!new_stage && p->elapsed_s - pr->last_s < (pr->tty ? 0.1 : 1.0)) return;
  pr->last_stage = (int)p->stage;
  pr->last_s = p->elapsed_s;
  char what[160] = "";
  const char* unit = p->stage == INGOT_DRIVER_STAGE_SCHEDULE ? "kernel" : "target";
  if (p->total) snprintf(what, sizeof what, ": %s %u/%u", unit, p->done, p->total);
  char target[INGOT_TARGET_NAME_BYTES + 8] = "";
  if (p->target) snprintf(target, sizeof target, " (%s)", p->target);
  fprintf(stderr, "%singot: [%6.1f s] %s%s%s%s", pr->tty ? "\r" : "", p->elapsed_s,
          ingot_driver_stage_name(p->stage), what, target, pr->tty ? "\033[K" : "\n");
  fflush(stderr);
  pr->drawn = pr->tty;
}

/* Clears the terminal's progress line, if one is drawn. */
static void progress_clear(compile_progress_t* pr) {
  if (!pr->drawn) return;
  fputs("\r\033[K", stderr);
  fflush(stderr);
  pr->drawn = false;
}

/* -v: each stage's wall time, the bundle's write included. */
static void print_stage_times(const ingot_driver_result_t* r, double write_s) {
  double total = write_s;
  for (int i = 0; i < INGOT_DRIVER_STAGE_COUNT; ++i) total += r->stage_seconds[i];
  fprintf(stderr, "stage times:\n");
  for (int i = 0; i <= INGOT_DRIVER_STAGE_COUNT; ++i) {
    double t = i < INGOT_DRIVER_STAGE_COUNT ? r->stage_seconds[i] : write_s;
    fprintf(stderr, "  %-9s %9.4f s %5.1f%%\n", i < INGOT_DRIVER_STAGE_COUNT ? ingot_driver_stage_name(i) : "write",
            t, total > 0 ? 100.0 * t / total : 0.0);
  }
  fprintf(stderr, "  %-9s %9.4f s\n", "total", total);
}

/* --verbose: a tuning-log record not applied to a kernel, once per target
 * (steps that share a workload report the same record). */
static void note_skip(void* self, const ingot_driver_kernel_info_t* info, uint32_t line, const char* reason) {
  compile_hooks_t* h = self;
  uint64_t key = ((uint64_t)info->target_index << 32) | line;
  for (uint32_t i = 0; i < h->skip_count; ++i)
    if (h->skip_seen[i] == key) return;
  if (h->skip_count == h->skip_cap) {
    h->skip_cap = h->skip_cap ? 2 * h->skip_cap : 16;
    h->skip_seen = ingot_xrealloc(h->skip_seen, h->skip_cap * sizeof(uint64_t));
  }
  h->skip_seen[h->skip_count++] = key;
  ingot_strbuf_appendf(&h->skipped, "  record at line %u not applied (workload '%s', target '%s'): %s\n", line,
                       info->kernel_ir->workload ? info->kernel_ir->workload : "?", info->target->name, reason);
}

static void print_graph(void* self, const ingot_graph_t* graph) {
  const compile_options_t* o = ((const compile_hooks_t*)self)->o;
  if (!o->dump_graph) return;
  ingot_strbuf_t sb = {0};
  ingot_graph_print(graph, &sb);
  if (sb.data) fputs(sb.data, stdout);
  ingot_strbuf_free(&sb);
}


/* --dump-space: the space of each template of a kernel's op class, once per
 * workload and target, listed from the kernel as lowered. */
static ingot_status_t list_space(void* self, const ingot_driver_kernel_info_t* info) {
  compile_hooks_t* h = (compile_hooks_t*)self;
  if (!h->o->dump_space) return INGOT_OK;
  const ingot_kernel_t* kn = info->kernel_ir;
  if (info->target_index != h->target_index) {
    h->target_index = info->target_index;
    h->workload_count = 0;
  }
  for (uint32_t i = 0; i < h->workload_count; ++i)
    if (!strcmp(h->workloads[i], kn->workload)) return INGOT_OK;
  if (h->workload_count == h->workload_cap) {
    h->workload_cap = h->workload_cap ? 2 * h->workload_cap : 64;
    h->workloads = ingot_xrealloc(h->workloads, h->workload_cap * sizeof(*h->workloads));
  }
  h->workloads[h->workload_count++] = kn->workload;
  ingot_status_t s = INGOT_OK;
  for (uint32_t i = 0; i < ingot_schedule_template_count() && s == INGOT_OK; ++i) {
    if (!ingot_schedule_template_applies(kn, info->target, i)) continue;
    ingot_strbuf_append(&h->space, h->space_objects++ ? ",\n" : "\n");
    s = ingot_schedule_space_format(kn, info->target, ingot_schedule_template_name(i), &h->space);
  }
  return s;
}

/* --dump-schedule: each unique kernel's schedule on each target;
 * --dump-ir: each unique kernel of the first target, as scheduled. */
static void print_kernel(void* self, const ingot_driver_kernel_info_t* info) {
  const compile_options_t* o = ((const compile_hooks_t*)self)->o;
  ingot_strbuf_t sb = {0};
  if (o->dump_schedule) {
    ingot_strbuf_appendf(&sb, "kernel %s (node '%s', target '%s', workload '%s'): ", info->symbol,
                         info->graph->nodes[info->kernel_ir->node].name, info->target->name,
                         info->kernel_ir->workload);
    ingot_schedule_describe(info->schedule, &sb);
  }
  if (o->dump_ir && info->target_index == 0) {
    ingot_ir_print(info->kernel_ir->func, &sb);
    ingot_strbuf_append(&sb, "\n");
  }
  if (sb.data) fputs(sb.data, stdout);
  ingot_strbuf_free(&sb);
}

/* --const NAME=FILE.npy: reads the file; the driver makes the graph input
 * NAME a constant with its contents. */
static ingot_status_t read_const(const char* spec, char* name, size_t name_cap, ingot_npy_array_t* out_array) {
  const char* eq = strchr(spec, '=');
  size_t n = (size_t)(eq - spec);
  if (n >= name_cap) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "--const: input name too long");
  memcpy(name, spec, n);
  name[n] = '\0';
  return ingot_npy_read_file(eq + 1, out_array);
}

/* --weights fp16|bf16|int8: the same model compiled with float32 weights,
 * both bundles run once on the same inputs (--accuracy-input, else random
 * with seed 0), and each output's error printed beside the sizes. */
static ingot_status_t report_accuracy(const compile_options_t* o, const ingot_driver_options_t* options,
                                      const ingot_driver_result_t* result, ingot_strbuf_t* out_text) {
  ingot_driver_options_t ref_options = *options;
  ref_options.weight_dtype = INGOT_DTYPE_F32;
  ref_options.emit_source_path = NULL;
  ref_options.emit_firmware_dir = NULL;
  ref_options.firmware_only = false;
  ref_options.on_graph = NULL;
  ref_options.on_lowered = NULL;
  ref_options.on_kernel = NULL;
  ref_options.on_tuning_skip = NULL;
  ref_options.on_progress = NULL;
  ingot_driver_result_t ref;
  memset(&ref, 0, sizeof(ref));
  char names[64][512];
  ingot_npy_array_t arrays[64];
  ingot_driver_const_t inputs[64];
  int read = 0;
  ingot_status_t s = INGOT_OK;
  for (; read < o->accuracy_input_count && !s; ++read) {
    memset(&arrays[read], 0, sizeof(arrays[read]));
    s = read_const(o->accuracy_inputs[read], names[read], sizeof(names[read]), &arrays[read]);
    if (s) s = ingot_fail_prefix(s, "--accuracy-input %s", o->accuracy_inputs[read]);
    inputs[read] = (ingot_driver_const_t){.name = names[read], .dtype = arrays[read].dtype, .rank = arrays[read].rank,
                                          .dims = arrays[read].dims, .data = arrays[read].data};
  }
  if (!s) s = ingot_driver_compile(&ref_options, &ref);
  ingot_driver_accuracy_t acc = {0};
  if (!s)
    s = ingot_driver_compare_bundles(result->bundle, result->bundle_size, ref.bundle, ref.bundle_size, inputs,
                                     (uint32_t)o->accuracy_input_count, 0, &acc);
  if (s == INGOT_ERROR_UNSUPPORTED) { /* a variant for another machine: nothing runs here */
    ingot_strbuf_appendf(out_text, "accuracy: not measured (%s)\n", ingot_compiler_error());
    ingot_compiler_error_clear();
    s = INGOT_OK;
  } else if (!s) {
    static const char* const kNames[] = {[INGOT_DTYPE_F16] = "fp16", [INGOT_DTYPE_BF16] = "bf16",
                                         [INGOT_DTYPE_I8] = "int8"};
    ingot_strbuf_appendf(out_text, "accuracy: %s weights against float32 on %s:\n", kNames[o->weight_dtype],
                         o->accuracy_input_count ? "the inputs given (random where not given, seed 0)"
                                                 : "random inputs (seed 0)");
    for (uint32_t i = 0; i < acc.output_count; ++i) {
      const ingot_driver_accuracy_output_t* r = &acc.outputs[i];
      ingot_strbuf_appendf(out_text, "  output '%s': max abs error %.3g, %.3g of the float32 output's max |y| %.4g\n",
                           r->name, r->max_abs_error, r->max_rel_error, r->reference_max_abs);
    }
    double w = ref.weight_bytes ? 100.0 * (double)result->weight_bytes / (double)ref.weight_bytes : 0.0;
    double b = ref.bundle_size ? 100.0 * (double)result->bundle_size / (double)ref.bundle_size : 0.0;
    ingot_strbuf_appendf(out_text, "  weights: %llu bytes against %llu in float32 (%.1f%%)\n",
                         (unsigned long long)result->weight_bytes, (unsigned long long)ref.weight_bytes, w);
    ingot_strbuf_appendf(out_text, "  bundle:  %llu bytes against %llu in float32 (%.1f%%)\n",
                         (unsigned long long)result->bundle_size, (unsigned long long)ref.bundle_size, b);
  }
  ingot_driver_accuracy_free(&acc);
  ingot_driver_result_free(&ref);
  for (int i = 0; i < read; ++i) ingot_npy_array_free(&arrays[i]);
  return s;
}

static ingot_status_t compile_model(const compile_options_t* o) {
  ingot_status_t s = INGOT_OK;
  char names[64][512];
  ingot_npy_array_t arrays[64];
  ingot_driver_const_t consts[64];
  int read = 0;
  for (; read < o->const_count && !s; ++read) {
    memset(&arrays[read], 0, sizeof(arrays[read]));
    s = read_const(o->consts[read], names[read], sizeof(names[read]), &arrays[read]);
    consts[read] = (ingot_driver_const_t){.name = names[read], .dtype = arrays[read].dtype,
                                          .rank = arrays[read].rank, .dims = arrays[read].dims,
                                          .data = arrays[read].data};
  }
  ingot_driver_result_t result;
  memset(&result, 0, sizeof(result));
  const char* after = getenv("INGOT_PROGRESS_AFTER_MS");
  compile_progress_t progress = {.tty = isatty(2) != 0, .after_s = 1.0, .last_stage = -1};
  progress.show = !o->quiet && (progress.tty || o->verbose);
  int64_t after_ms;
  if (after && ingot_cli_parse_int(after, 0, INT32_MAX, &after_ms)) progress.after_s = (double)after_ms / 1000.0;
  compile_hooks_t hooks = {.o = o, .progress = &progress};
  ingot_strbuf_append(&hooks.space, "[");
  ingot_driver_options_t options;
  memset(&options, 0, sizeof(options));
  if (!s) {
    options = (ingot_driver_options_t){
        .model_path = o->model,
        .input_shapes = o->input_shapes, .input_shape_count = (uint32_t)o->input_shape_count,
        .consts = consts, .const_count = (uint32_t)o->const_count, .max_trips = o->max_trips,
        .targets = o->targets, .target_count = (uint32_t)o->target_count,
        .tuning_log_path = o->tuning_log && strcmp(o->tuning_log, "none") != 0 ? o->tuning_log : NULL,
        .builtin_tuning_log = !o->tuning_log,
        .tuning_cpu_model = ingot_cpu_model(),
        .on_tuning_skip = o->verbose ? note_skip : NULL,
        .cc = o->cc,
        .emit_source_path = o->emit_c,
        .emit_firmware_dir = o->emit_firmware,
        .firmware_only = o->emit_firmware && !o->output,
        .weights_codec = o->weights_codec,
        .weight_dtype = o->weight_dtype,
        .activation_block = o->activation_block,
        .half_ops = o->half_ops,
        .hook_self = &hooks, .on_graph = print_graph, .on_lowered = list_space, .on_kernel = print_kernel,
        .on_progress = on_progress,
    };
    s = ingot_driver_compile(&options, &result);
    progress_clear(&progress);
  }
  if (!s && o->dump_space) {
    ingot_strbuf_append(&hooks.space, "\n]\n");
    s = ingot_file_write_atomic(o->dump_space, hooks.space.data, strlen(hooks.space.data));
  }
  ingot_strbuf_free(&hooks.space);
  free(hooks.workloads);
  /* Before writing: a bundle that does not run is not written. */
  ingot_strbuf_t accuracy = {0};
  bool compressed = o->weight_dtype == INGOT_DTYPE_F16 || o->weight_dtype == INGOT_DTYPE_BF16 ||
                    o->weight_dtype == INGOT_DTYPE_I8;
  if (!s && compressed && !o->no_accuracy && !o->quiet && result.bundle)
    s = report_accuracy(o, &options, &result, &accuracy);
  double write_s = now_s();
  if (!s && o->output) s = ingot_file_write_atomic(o->output, result.bundle, result.bundle_size);
  write_s = now_s() - write_s;
  if (!s && !o->quiet) {
    if (o->output) printf("compiled %s -> %s\n", o->model, o->output);
    if (o->emit_firmware) printf("compiled %s -> %s/ (firmware: ingot_model.h, .c, _kernels.c, _weights.c)\n",
                                 o->model, o->emit_firmware);
    printf("  target:       ");
    for (uint32_t t = 0; t < result.target_count; ++t) printf("%s%s", t ? ", " : "", result.targets[t]);
    printf("\n");
    printf("  steps:        %u (%u unique kernels)\n", result.step_count, result.kernel_count);
    printf("  weights:      %llu bytes\n", (unsigned long long)result.weight_bytes);
    printf("  arena:        %llu bytes (lower bound %llu)\n", (unsigned long long)result.arena_bytes,
           (unsigned long long)result.arena_lower_bound);
    if (o->output) printf("  bundle:       %llu bytes\n", (unsigned long long)result.bundle_size);
    /* The default target is this machine's level: say which CPUs the bundle
     * will refuse and how to add a variant for them (issue 13: a bundle must
     * not silently refuse a common CPU of its architecture). */
    ingot_target_t t;
    if (!o->target_count && result.target_count == 1 && ingot_target_parse(result.targets[0], &t) == INGOT_OK &&
        t.level != INGOT_TARGET_LEVEL_NONE && ingot_target_level_baseline(t.level) != t.level) {
      const char* level = ingot_target_level_name(t.level);
      const char* base = ingot_target_level_name(ingot_target_level_baseline(t.level));
      printf("  runs on:      %s CPUs from %s (this machine's level, the default); older %s CPUs are refused:\n"
             "                --target 'llvm -mcpu=%s' --target 'llvm -mcpu=%s' adds a variant they run\n",
             ingot_target_arch_name(t.arch), level, ingot_target_arch_name(t.arch), level, base);
    }
    /* int8 kernels on the default target of a host whose VNNI that level
     * leaves out (x86-64-v4 has none): say how to use it. */
    if (!o->target_count && result.target_count == 1 && result.dot4_kernels &&
        ingot_target_parse(result.targets[0], &t) == INGOT_OK && t.arch == INGOT_TARGET_ARCH_X86_64 &&
        !ingot_target_has_feature(&t, INGOT_TARGET_FEATURE_AVX512VNNI) &&
        ingot_target_host_has_feature(INGOT_TARGET_FEATURE_AVX512VNNI)) {
      printf("  int8:         %u kernels use byte dot products, here as pmaddwd; this machine has AVX512-VNNI,\n"
             "                which the default level leaves out: --target 'llvm -mcpu=CPU' with a CPU that has\n"
             "                it (znver4, icelake-server, sapphirerapids, ...) runs them as vpdpbusd\n",
             result.dot4_kernels);
    }
    uint32_t m = result.kernel_count * result.target_count;
    if (o->tuning_log && strcmp(o->tuning_log, "none") != 0) {
      printf("tuning log: %u of %u kernels tuned, %u use defaults\n", result.tuned_kernels, m,
             m - result.tuned_kernels);
      if (hooks.skipped.data) fputs(hooks.skipped.data, stdout);
    } else if (!o->tuning_log && result.tuned_kernels) {
      printf("pre-tuned log (built in): %u of %u kernels tuned, %u use defaults (--tuning-log none: "
             "defaults only)\n", result.tuned_kernels, m, m - result.tuned_kernels);
    }
  }
  if (!s && o->verbose) {
    fflush(stdout); /* the summary first, where both go to one terminal */
    print_stage_times(&result, write_s);
  }
  if (!s && accuracy.data) fputs(accuracy.data, stdout);
  ingot_strbuf_free(&accuracy);
  for (int i = 0; i < read; ++i) ingot_npy_array_free(&arrays[i]);
  ingot_strbuf_free(&hooks.skipped);
  free(hooks.skip_seen);
  ingot_driver_result_free(&result);
  return s;
}

int ingot_cli_compile(int argc, char** argv) {
  compile_options_t o;
  int rc = parse_options(argc, argv, &o);
  if (rc < 0) return 0;  /* --help */
  if (rc) return rc;
  ingot_compiler_error_clear();
  ingot_status_t s = compile_model(&o);
  if (s) ingot_cli_error(1, "%s", ingot_compiler_error());
  return s ? 1 : 0;
}
