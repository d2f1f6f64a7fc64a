/* `ingot run`: runs a bundle through the public runtime API (runtime/ingot.h)
 * on .npy inputs, writes the outputs to an .npz or prints a summary, and can
 * benchmark. */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <math.h>

#include "cli.h"
#include "npy.h"
#include "runtime/ingot.h"

static const char kRunHelp[] =
    "usage: ingot run BUNDLE [options]\n"
    "\n"
    "Runs a compiled bundle once (or benchmarks it) on inputs read from .npy files.\n"
    "\n"
    "options:\n"
    "  --input NAME=FILE.npy  data for the input NAME (repeatable)\n"
    "  --input FILE.npy       data for the next input not named explicitly, in order\n"
    "  --output FILE.npz      write every output to an .npz (member NAME.npy; '/' in\n"
    "                         names becomes '_'); without it, print a summary\n"
    "  --threads N            threads, 1 to %u (default: one per CPU, at most %u)\n"
    "  --device KIND          run a variant of this kind only: cpu, cuda, rocm, or auto\n"
    "                         (default: a GPU variant when a matching device exists,\n"
    "                         else a CPU one); a forced kind that cannot run here fails\n"
    "  --bench N              one warm-up run, then N timed runs; prints the latency\n"
    "  --profile              with --bench: time every step and print the kernels\n"
    "                         that took longest (total over the timed runs)\n"
    "  --trace FILE.json      write the steps of the profiled runs as a Chrome trace\n"
    "                         (chrome://tracing, ui.perfetto.dev): the timed runs with\n"
    "                         --bench (the first %u), else the one run; see below\n"
    "  --seed S               seed for inputs not given (default 0)\n"
    "  -v, --verbose          say which code variant the runtime loaded and why (stderr)\n"
    "  --require-signature PUBKEY\n"
    "                         refuse the bundle unless it is signed by the key in the\n"
    "                         file PUBKEY (NAME.pub from `ingot keygen`); checked before\n"
    "                         any of its code is loaded\n"
    "  -h, --help             show this help\n"
    "\n"
    "Each input's shape must match the bundle's exactly, or lie within its ranges for a\n"
    "ranged input (`ingot inspect` shows them: [1,1..128]). Its dtype must match too, except that\n"
    "float64 converts to float32 (and float32 to float64, int32 to/from int64 when the\n"
    "values fit). Inputs not given get deterministic random data: floats uniform in\n"
    "[0, 1), integers in [0, 10), bools 0/1.\n"
    "\n"
    "The trace is a JSON array of events: per traced run one \"X\" event named \"run N\"\n"
    "(cat \"run\") over the run's wall time, and within it one \"X\" event per step\n"
    "(name: the node, cat: the kernel, args: step and run), ts and dur in microseconds,\n"
    "pid 1, tid 1. The runtime measures each step's duration; the steps are laid out\n"
    "back to back from the run's start, so the gaps between them (the runtime's own\n"
    "work) show as the run's tail. Traced runs are timed step by step, as with\n"
    "--profile: their latency includes that timing's small cost.\n"
    "\n"
    "example:\n"
    "  ingot run model.ingot --input input=x.npy --output y.npz --bench 20\n"
    "  ingot run model.ingot --bench 10 --profile --trace steps.json\n";

/* --trace: runs traced at most (their events are kept in memory). */
#define TRACE_MAX_RUNS 1000u

typedef struct run_input_arg_t {
  const char* name; /* NULL: positional */
  const char* path;
} run_input_arg_t;

typedef struct run_options_t {
  const char* bundle_path;
  run_input_arg_t* inputs;
  int input_count;
  const char* output_path;
  int64_t threads;
  int64_t bench;
  int64_t seed;
  bool verbose;
  bool profile;
  const char* trace_path;      /* --trace */
  const char* public_key_path; /* --require-signature */
  const char* device;          /* --device: NULL (auto), "cpu", "cuda", "rocm" */
} run_options_t;

/* ---- helpers ---- */
static void format_shape(uint32_t rank, const int64_t* dims, char* out, size_t cap) {
  size_t n = (size_t)snprintf(out, cap, "[");
  for (uint32_t i = 0; i < rank && n < cap; ++i) {
    n += (size_t)snprintf(out + n, cap - n, i ? ",%lld" : "%lld", (long long)dims[i]);
  }
  if (n < cap) snprintf(out + n, cap - n, "]");
}

static uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static void fill_random(void* data, const ingot_tensor_info_t* info, uint64_t seed,
                        uint32_t index) {
  uint64_t state = seed * 0x100000001b3ull + index + 1;
  size_t size = ingot_dtype_size(info->dtype);
  size_t count = size ? info->bytes / size : 0;
  for (size_t i = 0; i < count; ++i) {
    uint64_t r = splitmix64(&state);
    double u = (double)(r >> 11) * (1.0 / 9007199254740992.0);
    switch (info->dtype) {
      case INGOT_DTYPE_F32: ((float*)data)[i] = (float)u; break;
      case INGOT_DTYPE_F64: ((double*)data)[i] = u; break;
      case INGOT_DTYPE_I64: ((int64_t*)data)[i] = (int64_t)(r % 10); break;
      case INGOT_DTYPE_I32: ((int32_t*)data)[i] = (int32_t)(r % 10); break;
      case INGOT_DTYPE_U8: ((uint8_t*)data)[i] = (uint8_t)(r % 10); break;
      case INGOT_DTYPE_I8: ((int8_t*)data)[i] = (int8_t)(r % 10); break;
      case INGOT_DTYPE_BOOL: ((uint8_t*)data)[i] = (uint8_t)(r & 1); break;
      case INGOT_DTYPE_I16: ((int16_t*)data)[i] = (int16_t)(r % 10); break;
      case INGOT_DTYPE_U16: ((uint16_t*)data)[i] = (uint16_t)(r % 10); break;
      case INGOT_DTYPE_U32: ((uint32_t*)data)[i] = (uint32_t)(r % 10); break;
      case INGOT_DTYPE_U64: ((uint64_t*)data)[i] = r % 10; break;
      case INGOT_DTYPE_BF16: {
        float f = (float)u; /* [0, 1): the upper half of its bits */
        uint32_t bits;
        memcpy(&bits, &f, 4);
        ((uint16_t*)data)[i] = (uint16_t)(bits >> 16);
        break;
      }
      case INGOT_DTYPE_F16: {
        /* u in [0,1) as a half: exponent and mantissa from the top bits. */
        float f = (float)u;
        uint32_t bits;
        memcpy(&bits, &f, 4);
        int32_t e = (int32_t)((bits >> 23) & 0xff) - 127 + 15;
        uint16_t h = e <= 0 ? 0 : (uint16_t)(((uint32_t)e << 10) | ((bits >> 13) & 0x3ff));
        ((uint16_t*)data)[i] = h;
        break;
      }
      default: memset(data, 0, info->bytes); return;
    }
  }
}

/* Copies `array` into the session's input buffer, converting where allowed. */
static int copy_input(const char* path, const ingot_tensor_info_t* info,
                      const ingot_npy_array_t* array, void* dst) {
  char want[256], got[256];
  format_shape(info->rank, info->dims, want, sizeof(want));
  format_shape(array->rank, array->dims, got, sizeof(got));
  bool same_shape = array->rank == info->rank;
  for (uint32_t i = 0; same_shape && i < info->rank; ++i) {
    same_shape = array->dims[i] == info->dims[i];
  }
  if (!same_shape) {
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE,
                           "input '%s': shape mismatch: the bundle expects %s, '%s' has %s",
                           info->name, want, path, got);
  }
  size_t count = array->count;
  bool bf16_bits = info->dtype == INGOT_DTYPE_BF16 && array->dtype == INGOT_DTYPE_U16; /* raw bits */
  bool f8_bits = ingot_f8_format(info->dtype) && array->dtype == INGOT_DTYPE_U8;      /* raw bits */
  bool int4 = (info->dtype == INGOT_DTYPE_I4 && array->dtype == INGOT_DTYPE_I8) ||
              (info->dtype == INGOT_DTYPE_U4 && array->dtype == INGOT_DTYPE_U8); /* one value a byte */
  if (int4) {
    for (size_t i = 0; i < count; ++i) {
      int v = info->dtype == INGOT_DTYPE_I4 ? ((const int8_t*)array->data)[i] : ((const uint8_t*)array->data)[i];
      int lo = info->dtype == INGOT_DTYPE_I4 ? -8 : 0;
      if (v < lo || v > lo + 15) {
        return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "input '%s': '%s' holds %d at element %zu, outside %s's range",
                               info->name, path, v, i, ingot_dtype_name(info->dtype));
      }
    }
  }
  if (array->dtype == info->dtype || bf16_bits || f8_bits || int4) {
    if (array->bytes != info->bytes) {
      return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "input '%s': size mismatch (%zu vs %zu bytes)",
                             info->name, array->bytes, info->bytes);
    }
    if (array->bytes) memcpy(dst, array->data, array->bytes);
    return INGOT_CLI_EXIT_OK;
  }
  if (count * ingot_dtype_size(info->dtype) != info->bytes) {
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "input '%s': size mismatch", info->name);
  }
  if (info->dtype == INGOT_DTYPE_F32 && array->dtype == INGOT_DTYPE_F64) {
    const double* s = array->data;
    float* d = dst;
    for (size_t i = 0; i < count; ++i) d[i] = (float)s[i];
    return INGOT_CLI_EXIT_OK;
  }
  if (info->dtype == INGOT_DTYPE_F64 && array->dtype == INGOT_DTYPE_F32) {
    const float* s = array->data;
    double* d = dst;
    for (size_t i = 0; i < count; ++i) d[i] = s[i];
    return INGOT_CLI_EXIT_OK;
  }
  if (info->dtype == INGOT_DTYPE_I64 && array->dtype == INGOT_DTYPE_I32) {
    const int32_t* s = array->data;
    int64_t* d = dst;
    for (size_t i = 0; i < count; ++i) d[i] = s[i];
    return INGOT_CLI_EXIT_OK;
  }
  if (info->dtype == INGOT_DTYPE_I32 && array->dtype == INGOT_DTYPE_I64) {
    const int64_t* s = array->data;
    int32_t* d = dst;
    for (size_t i = 0; i < count; ++i) {
      if (s[i] < INT32_MIN || s[i] > INT32_MAX) {
        return ingot_cli_error(INGOT_CLI_EXIT_FAILURE,
                               "input '%s': '%s' holds %lld at element %zu, which does not fit "
                               "the bundle's int32",
                               info->name, path, (long long)s[i], i);
      }
      d[i] = (int32_t)s[i];
    }
    return INGOT_CLI_EXIT_OK;
  }
  return ingot_cli_error(INGOT_CLI_EXIT_FAILURE,
                         "input '%s': dtype mismatch: the bundle expects %s, '%s' holds %s",
                         info->name, ingot_dtype_name(info->dtype), path,
                         ingot_dtype_name(array->dtype));
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Milliseconds with about four significant digits, never in e-notation. */
static void format_ms(double ms, char* out, size_t cap) {
  snprintf(out, cap, ms < 1.0 ? "%.4f" : ms < 10.0 ? "%.3f" : ms < 100.0 ? "%.2f" : "%.1f", ms);
}

static int compare_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* The steps that took longest, per run, as a share of all steps. */
typedef struct step_time_t {
  uint32_t index;
  uint64_t ns;
} step_time_t;

static int compare_step_time(const void* a, const void* b) {
  const step_time_t* x = a;
  const step_time_t* y = b;
  return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : (x->index > y->index) - (x->index < y->index);
}

#define PROFILE_ROWS 25

static void print_profile(const ingot_bundle_t* bundle, const uint64_t* step_ns, uint32_t count, int64_t runs) {
  step_time_t* rows = ingot_xcalloc(count ? count : 1, sizeof(*rows));
  uint64_t total = 0;
  for (uint32_t i = 0; i < count; ++i) {
    rows[i].index = i;
    rows[i].ns = step_ns[i];
    total += step_ns[i];
  }
  qsort(rows, count, sizeof(*rows), compare_step_time);
  double per_run = 1e-6 / (double)runs;
  printf("profile: %u steps, %.3f ms per run in steps\n", count, (double)total * per_run);
  printf("  %9s %6s %5s  %-28s %s\n", "ms/run", "share", "step", "node", "kernel");
  for (uint32_t r = 0; r < count && r < PROFILE_ROWS; ++r) {
    const char* node = "";
    const char* kernel = "";
    ingot_bundle_step_info(bundle, rows[r].index, &node, &kernel);
    printf("  %9.3f %5.1f%% %5u  %-28s %s\n", (double)rows[r].ns * per_run,
           total ? 100.0 * (double)rows[r].ns / (double)total : 0.0, rows[r].index, node, kernel);
  }
  if (count > PROFILE_ROWS) printf("  (%u more steps)\n", count - PROFILE_ROWS);
  /* By kernel kind: the kernel name up to its first '_' ("conv", "matmul"). */
  typedef struct kind_time_t {
    char name[32];
    uint64_t ns;
    uint32_t steps;
  } kind_time_t;
  kind_time_t* kinds = ingot_xcalloc(count ? count : 1, sizeof(*kinds));
  uint32_t kind_count = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const char* kernel = "";
    ingot_bundle_step_info(bundle, i, NULL, &kernel);
    size_t len = strcspn(kernel, "_");
    if (len >= sizeof(kinds[0].name)) len = sizeof(kinds[0].name) - 1;
    uint32_t k = 0;
    while (k < kind_count && (strncmp(kinds[k].name, kernel, len) != 0 || kinds[k].name[len] != '\0')) ++k;
    if (k == kind_count) memcpy(kinds[kind_count++].name, kernel, len);
    kinds[k].ns += step_ns[i];
    kinds[k].steps++;
  }
  for (uint32_t i = 0; i < kind_count; ++i) { /* by time, descending */
    for (uint32_t j = i + 1; j < kind_count; ++j) {
      if (kinds[j].ns > kinds[i].ns) {
        kind_time_t t = kinds[i];
        kinds[i] = kinds[j];
        kinds[j] = t;
      }
    }
  }
  printf("  by kind:\n");
  for (uint32_t i = 0; i < kind_count; ++i) {
    printf("  %9.3f %5.1f%% %5u  %s\n", (double)kinds[i].ns * per_run,
           total ? 100.0 * (double)kinds[i].ns / (double)total : 0.0, kinds[i].steps, kinds[i].name);
  }
  free(kinds);
  free(rows);
}

static double element_as_double(const void* data, ingot_dtype_t dtype, size_t i) {
  switch (dtype) {
    case INGOT_DTYPE_F32: return ((const float*)data)[i];
    case INGOT_DTYPE_F64: return ((const double*)data)[i];
    case INGOT_DTYPE_I64: return (double)((const int64_t*)data)[i];
    case INGOT_DTYPE_I32: return ((const int32_t*)data)[i];
    case INGOT_DTYPE_U8: return ((const uint8_t*)data)[i];
    case INGOT_DTYPE_I8: return ((const int8_t*)data)[i];
    case INGOT_DTYPE_BOOL: return ((const uint8_t*)data)[i] != 0;
    case INGOT_DTYPE_I16: return ((const int16_t*)data)[i];
    case INGOT_DTYPE_U16: return ((const uint16_t*)data)[i];
    case INGOT_DTYPE_U32: return ((const uint32_t*)data)[i];
    case INGOT_DTYPE_U64: return (double)((const uint64_t*)data)[i];
    case INGOT_DTYPE_BF16: return ingot_bf16_to_double(((const uint16_t*)data)[i]);
    case INGOT_DTYPE_F16: return ingot_half_to_double(((const uint16_t*)data)[i]);
    case INGOT_DTYPE_I4: return ((const int8_t*)data)[i];
    case INGOT_DTYPE_U4: return ((const uint8_t*)data)[i];
    default: return ingot_f8_format(dtype) ? ingot_f8_to_double(dtype, ((const uint8_t*)data)[i]) : 0.0;
  }
}

static void print_summary(const ingot_tensor_info_t* info, const void* data) {
  char shape[256];
  format_shape(info->rank, info->dims, shape, sizeof(shape));
  size_t size = ingot_dtype_size(info->dtype);
  size_t count = size ? info->bytes / size : 0;
  printf("%s: %s %s\n", info->name, ingot_dtype_name(info->dtype), shape);
  printf("  values:");
  size_t shown = count < 8 ? count : 8;
  for (size_t i = 0; i < shown; ++i) printf(" %.6g", element_as_double(data, info->dtype, i));
  printf("%s\n", count > shown ? " ..." : "");
  if (info->rank == 2 && info->dims[0] > 0 && info->dims[1] > 0) {
    int64_t rows = info->dims[0], cols = info->dims[1];
    int64_t show_rows = rows < 16 ? rows : 16;
    printf("  argmax of the first %lld row%s:", (long long)show_rows, show_rows == 1 ? "" : "s");
    for (int64_t r = 0; r < show_rows; ++r) {
      int64_t best = 0;
      double best_value = element_as_double(data, info->dtype, (size_t)(r * cols));
      for (int64_t c = 1; c < cols; ++c) {
        double v = element_as_double(data, info->dtype, (size_t)(r * cols + c));
        if (v > best_value) {
          best_value = v;
          best = c;
        }
      }
      printf(" %lld", (long long)best);
    }
    printf("%s\n", rows > show_rows ? " ..." : "");
  }
}

static bool is_regular_file(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

enum { OPT_INPUT = 256, OPT_THREADS, OPT_BENCH, OPT_SEED, OPT_DEVICE, OPT_REQUIRE_SIGNATURE, OPT_PROFILE, OPT_TRACE };

static const struct option kRunOptions[] = {
    {"help", no_argument, NULL, 'h'},
    {"input", required_argument, NULL, OPT_INPUT},
    {"output", required_argument, NULL, 'o'},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"bench", required_argument, NULL, OPT_BENCH},
    {"seed", required_argument, NULL, OPT_SEED},
    {"device", required_argument, NULL, OPT_DEVICE},
    {"require-signature", required_argument, NULL, OPT_REQUIRE_SIGNATURE},
    {"profile", no_argument, NULL, OPT_PROFILE},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"verbose", no_argument, NULL, 'v'},
    {NULL, 0, NULL, 0},
};

static int parse_options(int argc, char** argv, run_options_t* o) {
  ingot_cli_args_t args;
  ingot_cli_args_init(&args, "run", argc, argv, "ho:v", kRunOptions);
  for (int c; (c = ingot_cli_args_next(&args)) != INGOT_CLI_ARG_END;) {
    const char* value = args.value;
    switch (c) {
      case INGOT_CLI_ARG_BAD: return INGOT_CLI_EXIT_USAGE;
      case 'h': printf(kRunHelp, INGOT_CLI_THREADS_MAX, INGOT_CLI_THREADS_MAX, TRACE_MAX_RUNS); return -1;
      case OPT_INPUT: {
        if (!*value) return ingot_cli_usage_error("run", "--input needs NAME=FILE.npy");
        run_input_arg_t in = {NULL, value};
        const char* eq = strchr(value, '=');
        /* NAME=FILE, unless the whole text names an existing file. */
        if (eq && !is_regular_file(value)) {
          size_t n = (size_t)(eq - value);
          char* name = ingot_xmalloc(n + 1);
          memcpy(name, value, n);
          name[n] = '\0';
          in.name = name;
          in.path = eq + 1;
          if (!*in.path || !n) {
            free(name);
            return ingot_cli_usage_error("run", "--input '%s' needs NAME=FILE.npy", value);
          }
        }
        o->inputs = ingot_xrealloc(o->inputs, sizeof(run_input_arg_t) * (size_t)(o->input_count + 1));
        o->inputs[o->input_count++] = in;
        break;
      }
      case 'o':
        if (!*value) return ingot_cli_usage_error("run", "--output needs FILE.npz");
        o->output_path = value;
        break;
      case OPT_THREADS:
        if (!ingot_cli_parse_int(value, 1, INGOT_CLI_THREADS_MAX, &o->threads))
          return ingot_cli_usage_error("run", "--threads needs an integer from 1 to %u, not '%s'",
                                       INGOT_CLI_THREADS_MAX, value);
        break;
      case OPT_BENCH:
        if (!ingot_cli_parse_int(value, 1, 1000000, &o->bench))
          return ingot_cli_usage_error("run", "--bench needs a run count from 1 to 1000000, not '%s'", value);
        break;
      case OPT_SEED:
        if (!ingot_cli_parse_int(value, 0, INT64_MAX, &o->seed))
          return ingot_cli_usage_error("run", "--seed needs a non-negative integer, not '%s'", value);
        break;
      case OPT_DEVICE:
        if (strcmp(value, "auto") != 0 && strcmp(value, "cpu") != 0 && strcmp(value, "cuda") != 0 &&
            strcmp(value, "rocm") != 0)
          return ingot_cli_usage_error("run", "--device needs cpu, cuda, rocm or auto, not '%s'", value);
        o->device = value;
        break;
      case OPT_REQUIRE_SIGNATURE:
        if (!*value) return ingot_cli_usage_error("run", "--require-signature needs a public key file");
        o->public_key_path = value;
        break;
      case OPT_PROFILE: o->profile = true; break;
      case OPT_TRACE:
        if (!*value) return ingot_cli_usage_error("run", "--trace needs FILE.json");
        o->trace_path = value;
        break;
      case 'v': o->verbose = true; break;
      case INGOT_CLI_ARG_POSITIONAL:
        if (o->bundle_path) return ingot_cli_usage_error("run", "unexpected argument '%s' (one bundle per run)", value);
        o->bundle_path = value;
        break;
      default: return ingot_cli_usage_error("run", "unhandled option (a bug)");
    }
  }
  if (!o->bundle_path) return ingot_cli_usage_error("run", "no bundle given");
  if (o->profile && o->bench == 0) return ingot_cli_usage_error("run", "--profile needs --bench N");
  return INGOT_CLI_EXIT_OK;
}

static void free_options(run_options_t* o) {
  for (int i = 0; i < o->input_count; ++i) free((char*)o->inputs[i].name);
  free(o->inputs);
}

/* The valid input names, for messages: "'a', 'b'". */
static void list_input_names(const ingot_tensor_info_t* infos, uint32_t count, char* out,
                             size_t cap) {
  size_t n = 0;
  out[0] = '\0';
  for (uint32_t i = 0; i < count && n < cap; ++i) {
    n += (size_t)snprintf(out + n, cap - n, "%s'%s'", i ? ", " : "", infos[i].name);
  }
}

/* --trace: the events of one profiled run, whose wall time began at
 * `start_us` (from the first traced run) and lasted `wall_us`, its steps
 * having taken run_ns[i]. */
static void trace_add_run(json_t* events, const ingot_bundle_t* bundle, const uint64_t* run_ns, uint32_t count,
                          uint32_t run, double start_us, double wall_us) {
  char name[32];
  snprintf(name, sizeof name, "run %u", run);
  json_array_append_new(events, json_pack("{s:s, s:s, s:s, s:f, s:f, s:i, s:i, s:{s:i}}", "name", name, "cat", "run",
                                          "ph", "X", "ts", start_us, "dur", wall_us, "pid", 1, "tid", 1, "args",
                                          "run", (int)run));
  double at = start_us;
  for (uint32_t i = 0; i < count; ++i) {
    const char* node = "";
    const char* kernel = "";
    ingot_bundle_step_info(bundle, i, &node, &kernel);
    double dur = (double)run_ns[i] / 1000.0;
    json_array_append_new(events, json_pack("{s:s, s:s, s:s, s:f, s:f, s:i, s:i, s:{s:i, s:i}}", "name",
                                            node ? node : "", "cat", kernel ? kernel : "", "ph", "X", "ts", at,
                                            "dur", dur, "pid", 1, "tid", 1, "args", "step", (int)i, "run",
                                            (int)run));
    at += dur;
  }
}

/* Writes the trace atomically (no partial file on failure). */
static int trace_write(const char* path, const char* bundle_path, json_t* events) {
  char title[1100];
  snprintf(title, sizeof title, "ingot run %s", bundle_path);
  json_array_insert_new(events, 0, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", "process_name", "ph", "M",
                                             "pid", 1, "tid", 1, "args", "name", title));
  json_array_insert_new(events, 1, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", "thread_name", "ph", "M",
                                             "pid", 1, "tid", 1, "args", "name", "steps (back to back)"));
  char* text = json_dumps(events, JSON_COMPACT | JSON_PRESERVE_ORDER);
  if (!text) return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "--trace: cannot format JSON (out of memory?)");
  ingot_compiler_error_clear();
  ingot_status_t s = ingot_file_write_atomic(path, text, strlen(text));
  free(text);
  if (s) return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "--trace: %s", ingot_compiler_error());
  return INGOT_CLI_EXIT_OK;
}

static int run_main(run_options_t* o) {
  int rc = INGOT_CLI_EXIT_FAILURE;
  ingot_bundle_t* bundle = NULL;
  ingot_session_t* session = NULL;
  ingot_tensor_info_t* in_infos = NULL;
  ingot_tensor_info_t* out_infos = NULL;
  int64_t (*run_dims)[INGOT_MAX_RANK] = NULL; /* outputs whose shape a run computes */
  int* source = NULL; /* per bundle input: index into o->inputs, or -1 */
  double* times = NULL;
  uint64_t* step_ns = NULL;
  uint64_t* run_ns = NULL;  /* --trace: one run's step times */
  json_t* trace = NULL;

  /* A trace that could not be written is said before the runs, not after. */
  if (o->trace_path) {
    char dir[4096];
    const char* slash = strrchr(o->trace_path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - o->trace_path) + 1 : 1, slash ? o->trace_path : ".");
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || access(dir, W_OK) != 0) {
      rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "--trace: cannot write '%s': its folder '%s' %s", o->trace_path,
                           dir, stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) ? "does not exist" : "is not writable");
      goto done;
    }
  }

  ingot_bundle_options_t bundle_options = {0};
  uint8_t public_key[INGOT_PUBLIC_KEY_BYTES];
  if (o->public_key_path) {
    ingot_compiler_error_clear();
    if (ingot_cli_key_read(o->public_key_path, false, public_key) != INGOT_OK) {
      rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "%s", ingot_compiler_error());
      goto done;
    }
    bundle_options.signature_public_key = public_key;
  }
  bundle_options.device = o->device;
  if (o->verbose) {
    char why[256];
    int cuda = ingot_device_probe("cuda", why, sizeof why);
    ingot_cli_note("cuda: %s%s", cuda ? "" : "none: ", why);
    int rocm = ingot_device_probe("rocm", why, sizeof why);
    ingot_cli_note("rocm: %s%s", rocm ? "" : "none: ", why);
  }
  ingot_status_t s = ingot_bundle_open_file(o->bundle_path, &bundle_options, &bundle);
  if (s) {
    rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "cannot open bundle '%s': %s (%s)", o->bundle_path,
                         ingot_last_error(), ingot_status_name(s));
    goto done;
  }
  if (o->verbose) {
    ingot_cli_note("code variant: %s", ingot_bundle_target_reason(bundle));
    ingot_cli_note("device: %s", ingot_bundle_device(bundle));
  }
  uint32_t n_in = ingot_bundle_input_count(bundle);
  uint32_t n_out = ingot_bundle_output_count(bundle);
  in_infos = ingot_xcalloc(n_in ? n_in : 1, sizeof(*in_infos));
  out_infos = ingot_xcalloc(n_out ? n_out : 1, sizeof(*out_infos));
  source = ingot_xcalloc(n_in ? n_in : 1, sizeof(int));
  for (uint32_t i = 0; i < n_in; ++i) {
    source[i] = -1;
    if (ingot_bundle_input_info(bundle, i, &in_infos[i]) != INGOT_OK) {
      rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': cannot read input %u: %s", o->bundle_path,
                           i, ingot_last_error());
      goto done;
    }
  }
  for (uint32_t i = 0; i < n_out; ++i) {
    if (ingot_bundle_output_info(bundle, i, &out_infos[i]) != INGOT_OK) {
      rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': cannot read output %u: %s",
                           o->bundle_path, i, ingot_last_error());
      goto done;
    }
  }

  /* Bind --input arguments: named ones first, then positional ones in order. */
  char names[2048];
  list_input_names(in_infos, n_in, names, sizeof(names));
  for (int a = 0; a < o->input_count; ++a) {
    if (!o->inputs[a].name) continue;
    uint32_t k = 0;
    while (k < n_in && strcmp(in_infos[k].name, o->inputs[a].name) != 0) ++k;
    if (k == n_in) {
      rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE,
                           "the bundle has no input '%s'; its inputs are: %s", o->inputs[a].name,
                           n_in ? names : "(none)");
      goto done;
    }
    if (source[k] >= 0) {
      rc = ingot_cli_usage_error("run", "input '%s' is given twice", in_infos[k].name);
      goto done;
    }
    source[k] = a;
  }
  for (int a = 0; a < o->input_count; ++a) {
    if (o->inputs[a].name) continue;
    uint32_t k = 0;
    while (k < n_in && source[k] >= 0) ++k;
    if (k == n_in) {
      rc = ingot_cli_usage_error("run", "more --input files than inputs (the bundle's inputs: %s)",
                                 n_in ? names : "none");
      goto done;
    }
    source[k] = a;
  }

  ingot_session_options_t session_options = {0};
  session_options.threads = (uint32_t)o->threads;
  s = ingot_session_create(bundle, &session_options, &session);
  if (s) {
    rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': cannot create a session: %s (%s)",
                         o->bundle_path, ingot_last_error(), ingot_status_name(s));
    goto done;
  }
  for (uint32_t k = 0; k < n_in; ++k) {
    void* dst = ingot_session_input_data(session, k);
    if (!dst && in_infos[k].bytes) {
      rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': input '%s' has no buffer",
                           o->bundle_path, in_infos[k].name);
      goto done;
    }
    if (source[k] < 0) {
      char shape[256];
      format_shape(in_infos[k].rank, in_infos[k].dims, shape, sizeof(shape));
      ingot_cli_note("input '%s' (%s %s) not given: using random data (seed %lld)",
                     in_infos[k].name, ingot_dtype_name(in_infos[k].dtype), shape,
                     (long long)o->seed);
      fill_random(dst, &in_infos[k], (uint64_t)o->seed, k);
      continue;
    }
    const char* path = o->inputs[source[k]].path;
    ingot_npy_array_t array;
    s = ingot_npy_read_file(path, &array);
    if (s) {
      rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "input '%s': %s", in_infos[k].name,
                           ingot_compiler_error());
      goto done;
    }
    /* A ranged input takes the .npy's shape when it is within the range
     * (the runtime checks it); the data is dense in that shape. */
    ingot_tensor_info_t info = in_infos[k];
    if (ingot_bundle_input_shape_varies(bundle, k)) {
      char got[256];
      format_shape(array.rank, array.dims, got, sizeof(got));
      if (ingot_session_set_input_shape(session, k, array.rank, array.dims) != INGOT_OK) {
        rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "input '%s': '%s' has shape %s: %s", info.name, path, got,
                             ingot_last_error());
        ingot_npy_array_free(&array);
        goto done;
      }
      info.dims = array.dims;
      info.bytes = ingot_dtype_size(info.dtype);
      for (uint32_t d = 0; d < array.rank; ++d) info.bytes *= (size_t)array.dims[d];
    }
    rc = copy_input(path, &info, &array, dst);
    ingot_npy_array_free(&array);
    if (rc != INGOT_CLI_EXIT_OK) goto done;
    rc = INGOT_CLI_EXIT_FAILURE;
  }

  int64_t timed = o->bench;
  int64_t total_runs = timed > 0 ? timed + 1 : 1;
  times = ingot_xcalloc((size_t)total_runs, sizeof(double));
  uint32_t step_count = ingot_bundle_step_count(bundle);
  if (o->profile) step_ns = ingot_xcalloc(step_count ? step_count : 1, sizeof(uint64_t));
  if (o->trace_path) {
    run_ns = ingot_xcalloc(step_count ? step_count : 1, sizeof(uint64_t));
    trace = json_array();
  }
  double trace_t0 = 0.0;
  for (int64_t r = 0; r < total_runs; ++r) {
    /* The warm-up run (with --bench, run 0) is neither profiled nor traced. */
    bool timed_run = r > 0 || timed == 0;
    bool traced = run_ns && timed_run && (uint64_t)(timed ? r - 1 : r) < TRACE_MAX_RUNS;
    if (traced) memset(run_ns, 0, (step_count ? step_count : 1) * sizeof(uint64_t));
    double t0 = now_ms();
    if (traced && trace_t0 == 0.0) trace_t0 = t0;
    s = traced ? ingot_session_run_profiled(session, run_ns)
        : step_ns && r > 0 ? ingot_session_run_profiled(session, step_ns)
                           : ingot_session_run(session);
    times[r] = now_ms() - t0;
    if (!s && traced) {
      for (uint32_t i = 0; step_ns && i < step_count; ++i) step_ns[i] += run_ns[i];
      trace_add_run(trace, bundle, run_ns, step_count, (uint32_t)(timed ? r - 1 : r), (t0 - trace_t0) * 1000.0,
                    times[r] * 1000.0);
    }
    if (s) {
      rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': run failed: %s (%s)", o->bundle_path,
                           ingot_last_error(), ingot_status_name(s));
      goto done;
    }
  }

  /* Outputs whose size the run computed: their shape and bytes as it left them. */
  run_dims = ingot_xcalloc(n_out ? n_out : 1, sizeof(*run_dims));
  for (uint32_t i = 0; i < n_out; ++i) {
    if (!ingot_bundle_output_shape_varies(bundle, i)) continue;
    uint32_t rank = 0;
    if (ingot_session_output_shape(session, i, &rank, run_dims[i]) != INGOT_OK) {
      rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': cannot read the shape of output '%s': %s", o->bundle_path,
                           out_infos[i].name, ingot_last_error());
      goto done;
    }
    size_t bytes = ingot_dtype_size(out_infos[i].dtype);
    for (uint32_t d = 0; d < rank; ++d) bytes *= (size_t)run_dims[i][d];
    out_infos[i].dims = run_dims[i];
    out_infos[i].bytes = bytes;
  }

  if (o->output_path) {
    ingot_npz_member_t* members = ingot_xcalloc(n_out ? n_out : 1, sizeof(*members));
    for (uint32_t i = 0; i < n_out; ++i) {
      members[i].name = out_infos[i].name;
      members[i].dtype = out_infos[i].dtype;
      members[i].rank = out_infos[i].rank;
      members[i].dims = out_infos[i].dims;
      members[i].data = ingot_session_output_data(session, i);
      members[i].bytes = out_infos[i].bytes;
      if (!members[i].data && members[i].bytes) {
        free(members);
        rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': output '%s' has no buffer",
                             o->bundle_path, out_infos[i].name);
        goto done;
      }
    }
    s = ingot_npz_write_file(o->output_path, members, n_out);
    free(members);
    if (s) {
      rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "%s", ingot_compiler_error());
      goto done;
    }
  } else {
    for (uint32_t i = 0; i < n_out; ++i) {
      print_summary(&out_infos[i], ingot_session_output_data(session, i));
    }
  }

  if (timed > 0) {
    qsort(times + 1, (size_t)timed, sizeof(double), compare_double);
    double median = (timed % 2) ? times[1 + timed / 2]
                                : 0.5 * (times[timed / 2] + times[1 + timed / 2]);
    int64_t threads = o->threads;
    if (threads == 0) {
      long cpus = sysconf(_SC_NPROCESSORS_ONLN);
      threads = cpus > 0 ? cpus : 1;
    }
    char min_text[32], median_text[32];
    format_ms(times[1], min_text, sizeof(min_text));
    format_ms(median, median_text, sizeof(median_text));
    printf("latency: min %s ms, median %s ms (%lld runs, %lld threads)\n", min_text, median_text,
           (long long)timed, (long long)threads);
    if (step_ns) print_profile(bundle, step_ns, step_count, timed);
  }
  if (trace && (rc = trace_write(o->trace_path, o->bundle_path, trace)) != INGOT_CLI_EXIT_OK) goto done;
  rc = INGOT_CLI_EXIT_FAILURE;
  fflush(stdout);
  rc = INGOT_CLI_EXIT_OK;

done:
  if (trace) json_decref(trace);
  free(run_ns);
  free(step_ns);
  free(times);
  free(source);
  free(in_infos);
  free(out_infos);
  free(run_dims);
  if (session) ingot_session_release(session);
  if (bundle) ingot_bundle_release(bundle);
  return rc;
}

int ingot_cli_run(int argc, char** argv) {
  run_options_t o = {0};
  int rc = parse_options(argc, argv, &o);
  if (rc == -1) {
    rc = INGOT_CLI_EXIT_OK; /* --help */
  } else if (rc == INGOT_CLI_EXIT_OK) {
    rc = run_main(&o);
  }
  free_options(&o);
  return rc;
}
