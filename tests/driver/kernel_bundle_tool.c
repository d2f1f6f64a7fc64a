/* Test helper for ingot_driver_build_kernel_bundle (driver/driver.h), driven
 * by kernel_bundle_test.py.
 *
 *   kernel_bundle_tool build MODEL.onnx TARGET OUT_DIR [--input-shape S]... SPEC...
 *     Loads and optimizes the model once, then builds one bundle per SPEC,
 *     OUT_DIR/k<i>.ingot. SPEC is NODE[@TEMPLATE][:KNOB=V,KNOB=V...] with NODE
 *     a node name of the optimized graph or #INDEX (a node index). For each
 *     spec one JSON line on stdout:
 *       {"spec": i, "ok": true, "bundle": PATH, "node": NAME, "op": OP,
 *        "inputs": [{"name", "dtype", "dims"}...], "outputs": [...]}
 *     (inputs and outputs read back through the runtime API), or
 *       {"spec": i, "ok": false, "error": MESSAGE}
 *     Exits 0 when the model loaded (whatever the specs gave), 1 otherwise.
 *   kernel_bundle_tool run BUNDLE IN.bin... -- OUT.bin...
 *     Opens the bundle with the runtime API, fills each input from the raw
 *     bytes of IN.bin (the input's exact size), runs once and writes each
 *     output's raw bytes.
 *   kernel_bundle_tool measure CANDIDATE REFERENCE [--runner R] [--rounds N]
 *                      [--seed S] [--timeout S]
 *     Measures the candidate bundle against the reference with
 *     ingot_driver_measure, here or through a runner ("local",
 *     "ssh://USER@HOST[:PORT]"), and prints one JSON line: kind, message,
 *     rounds, runs_per_repeat, candidate_ms, reference_ms, ratio and its
 *     spread, signal, output_crc. Exits 0 when measured (whatever the kind),
 *     2 on a bad argument or runner (the message on stderr). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver/driver.h"
#include "runtime/ingot.h"

static void json_string(const char* s) {
  putchar('"');
  for (; *s; ++s) {
    if (*s == '"' || *s == '\\') printf("\\%c", *s);
    else if ((unsigned char)*s < 0x20) printf("\\u%04x", *s);
    else putchar(*s);
  }
  putchar('"');
}

static void json_tensors(const ingot_bundle_t* b, bool inputs) {
  uint32_t n = inputs ? ingot_bundle_input_count(b) : ingot_bundle_output_count(b);
  printf("[");
  for (uint32_t i = 0; i < n; ++i) {
    ingot_tensor_info_t info;
    if (inputs) ingot_bundle_input_info(b, i, &info);
    else ingot_bundle_output_info(b, i, &info);
    printf("%s{\"name\": ", i ? ", " : "");
    json_string(info.name);
    printf(", \"dtype\": \"%s\", \"dims\": [", ingot_dtype_name(info.dtype));
    for (uint32_t d = 0; d < info.rank; ++d) printf("%s%lld", d ? ", " : "", (long long)info.dims[d]);
    printf("]}");
  }
  printf("]");
}

static uint32_t find_node(const ingot_graph_t* g, const char* name) {
  if (name[0] == '#') return (uint32_t)strtoul(name + 1, NULL, 10);
  for (uint32_t i = 0; i < g->node_count; ++i)
    if (!g->nodes[i].dead && strcmp(g->nodes[i].name, name) == 0) return i;
  return UINT32_MAX;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* One spec -> one bundle file; prints its JSON line. */
static void build_one(const ingot_graph_t* g, const char* target, const char* dir, int index, const char* spec) {
  char text[1024];
  snprintf(text, sizeof(text), "%s", spec);
  char* knobs = strchr(text, ':');
  if (knobs) *knobs++ = '\0';
  char* template_name = strchr(text, '@');
  if (template_name) *template_name++ = '\0';
  const char* names[8];
  int64_t values[8];
  uint32_t count = 0;
  for (char* k = knobs ? strtok(knobs, ",") : NULL; k && count < 8; k = strtok(NULL, ",")) {
    char* eq = strchr(k, '=');
    if (!eq) continue;
    *eq = '\0';
    names[count] = k;
    values[count++] = strtoll(eq + 1, NULL, 10);
  }
  ingot_driver_schedule_t schedule = {template_name, names, values, count};
  uint32_t node = find_node(g, text);
  uint8_t* data = NULL;
  size_t size = 0;
  ingot_compiler_error_clear();
  double t0 = now_ms();
  ingot_status_t s = ingot_driver_build_kernel_bundle(g, node, (template_name || count) ? &schedule : NULL, target,
                                                      NULL, &data, &size);
  double build_ms = now_ms() - t0;
  if (s) {
    printf("{\"spec\": %d, \"ok\": false, \"error\": ", index);
    json_string(ingot_compiler_error());
    printf("}\n");
    return;
  }
  char path[1100];
  snprintf(path, sizeof(path), "%s/k%d.ingot", dir, index);
  ingot_bundle_t* b = NULL;
  if (ingot_file_write_atomic(path, data, size) || ingot_bundle_open_memory(data, size, NULL, &b)) {
    printf("{\"spec\": %d, \"ok\": false, \"error\": \"written bundle does not open: %s\"}\n", index,
           ingot_last_error());
    free(data);
    return;
  }
  printf("{\"spec\": %d, \"ok\": true, \"bundle\": ", index);
  json_string(path);
  printf(", \"node\": ");
  json_string(g->nodes[node].name);
  printf(", \"op\": \"%s\", \"build_ms\": %.1f, \"steps\": %u, \"inputs\": ", ingot_op_name(g->nodes[node].op),
         build_ms, ingot_bundle_step_count(b));
  json_tensors(b, true);
  printf(", \"outputs\": ");
  json_tensors(b, false);
  printf("}\n");
  ingot_bundle_release(b);
  free(data);
}

static int build_main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: kernel_bundle_tool build MODEL TARGET OUT_DIR [--input-shape S]... SPEC...\n");
    return 2;
  }
  const char* shapes[16];
  uint32_t shape_count = 0;
  int first_spec = 5;
  while (first_spec + 1 < argc && strcmp(argv[first_spec], "--input-shape") == 0 && shape_count < 16) {
    shapes[shape_count++] = argv[first_spec + 1];
    first_spec += 2;
  }
  ingot_driver_options_t options = {.model_path = argv[2], .input_shapes = shapes, .input_shape_count = shape_count};
  ingot_graph_t* graph = NULL;
  double t0 = now_ms();
  if (ingot_driver_load_graph(&options, &graph)) {
    fprintf(stderr, "load: %s\n", ingot_compiler_error());
    return 1;
  }
  fprintf(stderr, "model loaded and optimized once in %.1f ms\n", now_ms() - t0);
  for (int i = first_spec; i < argc; ++i) build_one(graph, argv[3], argv[4], i - first_spec, argv[i]);
  ingot_graph_destroy(graph);
  return 0;
}

static int read_exact(const char* path, void* dst, size_t bytes) {
  FILE* f = fopen(path, "rb");
  if (!f) return 0;
  size_t n = fread(dst, 1, bytes, f);
  int extra = fgetc(f) != EOF;
  fclose(f);
  return n == bytes && !extra;
}

static int run_main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: kernel_bundle_tool run BUNDLE IN.bin... -- OUT.bin...\n");
    return 2;
  }
  ingot_bundle_t* b = NULL;
  ingot_session_t* session = NULL;
  if (ingot_bundle_open_file(argv[2], NULL, &b) || ingot_session_create(b, NULL, &session)) {
    fprintf(stderr, "open: %s\n", ingot_last_error());
    return 1;
  }
  int rc = 0, a = 3;
  for (uint32_t i = 0; i < ingot_bundle_input_count(b) && !rc; ++i, ++a) {
    ingot_tensor_info_t info;
    ingot_bundle_input_info(b, i, &info);
    if (a >= argc || !read_exact(argv[a], ingot_session_input_data(session, i), info.bytes)) {
      fprintf(stderr, "input %u ('%s'): need %s holding exactly %zu bytes\n", i, info.name,
              a < argc ? argv[a] : "a file", info.bytes);
      rc = 1;
    }
  }
  if (!rc && (a >= argc || strcmp(argv[a++], "--") != 0)) {
    fprintf(stderr, "expected -- after the inputs\n");
    rc = 1;
  }
  if (!rc && ingot_session_run(session)) {
    fprintf(stderr, "run: %s\n", ingot_last_error());
    rc = 1;
  }
  for (uint32_t i = 0; i < ingot_bundle_output_count(b) && !rc; ++i, ++a) {
    ingot_tensor_info_t info;
    ingot_bundle_output_info(b, i, &info);
    FILE* f = a < argc ? fopen(argv[a], "wb") : NULL;
    if (!f || fwrite(ingot_session_output_data(session, i), 1, info.bytes, f) != info.bytes) rc = 1;
    if (f) fclose(f);
    if (rc) fprintf(stderr, "output %u: cannot write\n", i);
  }
  ingot_session_release(session);
  ingot_bundle_release(b);
  return rc;
}

static bool read_all(const char* path, uint8_t** out, size_t* out_size) {
  FILE* f = fopen(path, "rb");
  if (!f) return false;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  *out = malloc(n > 0 ? (size_t)n : 1);
  *out_size = *out ? fread(*out, 1, (size_t)(n > 0 ? n : 0), f) : 0;
  fclose(f);
  return *out && n > 0 && *out_size == (size_t)n;
}

static int measure_main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: kernel_bundle_tool measure CANDIDATE REFERENCE [--runner R] [--rounds N] [--seed S] "
                    "[--timeout S]\n");
    return 2;
  }
  ingot_driver_measure_options_t o = {.rounds = 8, .repeats = 3, .min_repeat_ms = 0.5};
  for (int i = 4; i < argc; i += 2) {
    if (i + 1 >= argc) {
      fprintf(stderr, "%s needs a value\n", argv[i]);
      return 2;
    }
    if (strcmp(argv[i], "--runner") == 0) o.runner = argv[i + 1];
    else if (strcmp(argv[i], "--rounds") == 0) o.rounds = (uint32_t)strtoul(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--seed") == 0) o.seed = strtoull(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--timeout") == 0) o.timeout_s = strtod(argv[i + 1], NULL);
    else {
      fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (ingot_driver_measure_runner_check(o.runner)) {
    fprintf(stderr, "%s\n", ingot_compiler_error());
    return 2;
  }
  uint8_t *cand = NULL, *ref = NULL;
  size_t cand_size = 0, ref_size = 0;
  if (!read_all(argv[2], &cand, &cand_size) || !read_all(argv[3], &ref, &ref_size)) {
    fprintf(stderr, "cannot read %s or %s\n", argv[2], argv[3]);
    free(cand);
    free(ref);
    return 2;
  }
  ingot_driver_measure_result_t r;
  ingot_status_t s = ingot_driver_measure(cand, cand_size, ref, ref_size, &o, &r);
  free(cand);
  free(ref);
  ingot_driver_measure_runners_release();
  if (s) {
    fprintf(stderr, "%s\n", ingot_compiler_error());
    return 2;
  }
  printf("{\"kind\": \"%s\", \"message\": ", ingot_driver_measure_kind_name(r.kind));
  json_string(r.message);
  printf(", \"rounds\": %u, \"runs_per_repeat\": %u, \"candidate_ms\": %.9g, \"reference_ms\": %.9g, "
         "\"ratio\": %.9g, \"ratio_lo\": %.9g, \"ratio_hi\": %.9g, \"ratio_min\": %.9g, \"ratio_max\": %.9g, "
         "\"max_abs_diff\": %.9g, \"signal\": %d, \"output_crc\": %u}\n",
         r.rounds, r.runs_per_repeat, r.candidate_ms, r.reference_ms, r.ratio, r.ratio_lo, r.ratio_hi, r.ratio_min,
         r.ratio_max, r.max_abs_diff, r.signal, r.output_crc);
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "build") == 0) return build_main(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "run") == 0) return run_main(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "measure") == 0) return measure_main(argc, argv);
  fprintf(stderr, "usage: kernel_bundle_tool build|run|measure ...\n");
  return 2;
}
