/* Tests of importer/ on the committed fixtures (made by make_fixtures.py).
 * Usage: ingot_importer_test <fixtures dir> <scratch dir> */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "importer/importer.h"
#include "lower/lower.h" /* the constant-folding evaluator */

static int g_failures = 0;
static const char* g_fixtures;
static const char* g_scratch;

#define CHECK(cond)                                                                  \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);       \
      ++g_failures;                                                                  \
    }                                                                                \
  } while (0)

#define CHECK_OK(expr)                                                               \
  do {                                                                               \
    ingot_status_t s_ = (expr);                                                      \
    if (s_ != INGOT_OK) {                                                            \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr,           \
              ingot_compiler_error());                                               \
      ++g_failures;                                                                  \
    }                                                                                \
  } while (0)

static char* fixture(const char* name) {
  static char path[4096];
  snprintf(path, sizeof(path), "%s/%s", g_fixtures, name);
  return path;
}

static ingot_graph_t* import_ok(const char* name) {
  ingot_graph_t* g = NULL;
  ingot_status_t s = ingot_import_onnx_file(fixture(name), NULL, &g);
  if (s != INGOT_OK) {
    fprintf(stderr, "importing %s failed: %s\n", name, ingot_compiler_error());
    ++g_failures;
    return NULL;
  }
  return g;
}

/* Expects importing `name` to fail with `code` and a message holding both needles. */
static void import_fails(const char* name, ingot_status_t code, const char* needle1, const char* needle2) {
  ingot_graph_t* g = (ingot_graph_t*)1;
  ingot_compiler_error_clear();
  ingot_status_t s = ingot_import_onnx_file(fixture(name), NULL, &g);
  const char* msg = ingot_compiler_error();
  if (s != code || g != NULL || !strstr(msg, needle1) || (needle2 && !strstr(msg, needle2))) {
    fprintf(stderr, "%s: got status %d (want %d), graph %p, message '%s' (want '%s'%s%s)\n", name, (int)s, (int)code,
            (void*)g, msg, needle1, needle2 ? ", " : "", needle2 ? needle2 : "");
    ++g_failures;
  }
  if (g && g != (ingot_graph_t*)1) ingot_graph_destroy(g);
}

static const ingot_value_t* find(const ingot_graph_t* g, const char* name) {
  uint32_t id = ingot_graph_find_value(g, name);
  return id == INGOT_NO_VALUE ? NULL : &g->values[id];
}

static void test_conv_model(void) {
  ingot_graph_t* g = import_ok("conv_bn_relu.onnx");
  if (!g) return;
  CHECK(g->opset == 13);
  CHECK(g->input_count == 1); /* "w" is listed as an input but is an initializer */
  const ingot_value_t* x = &g->values[g->inputs[0]];
  CHECK(strcmp(x->name, "x") == 0 && x->rank == 4 && x->dims[0] < 0 && x->dims[1] == 3);
  CHECK(x->dim_names[0] && strcmp(x->dim_names[0], "N") == 0);
  const ingot_value_t* w = find(g, "w");
  CHECK(w && w->kind == INGOT_VALUE_WEIGHT && w->dtype == INGOT_DTYPE_F32 && w->rank == 4 && w->dims[0] == 4);
  const ingot_value_t* b = find(g, "b"); /* float_data */
  CHECK(b && b->kind == INGOT_VALUE_WEIGHT && b->rank == 1 && b->dims[0] == 4 && b->data);
  CHECK(g->node_count == 8);
  ingot_compiler_error_clear();
  CHECK(ingot_graph_infer_shapes(g) != INGOT_OK);
  CHECK(strstr(ingot_compiler_error(), "--input-shape") && strstr(ingot_compiler_error(), "'x'"));
  CHECK_OK(ingot_graph_set_input_shape(g, "x=2x3x8x8"));
  CHECK_OK(ingot_graph_optimize_with(g, ingot_lower_eval_node, NULL));
  /* Conv(+BN, +Relu), MaxPool, Flatten, Gemm; a padded conv first gets a Pad
   * node (graph/passes_layout.c), skipped here. */
  if (g->node_count == 5 && g->nodes[0].op == INGOT_OP_PAD) {
    memmove(&g->nodes[0], &g->nodes[1], sizeof(g->nodes[0]) * 4);
    g->node_count = 4;
  }
  CHECK(g->node_count == 4);
  if (g->node_count == 4) {
    CHECK(g->nodes[0].op == INGOT_OP_CONV && g->nodes[0].epilogue.activation == INGOT_ACTIVATION_RELU);
    CHECK(g->nodes[0].input_count == 3);
    CHECK(g->nodes[1].op == INGOT_OP_MAXPOOL);
    CHECK(g->nodes[2].op == INGOT_OP_FLATTEN);
    CHECK(g->nodes[3].op == INGOT_OP_GEMM);
  }
  CHECK(g->output_count == 1);
  const ingot_value_t* y = &g->values[g->outputs[0]];
  CHECK(strcmp(y->name, "y") == 0 && y->rank == 2 && y->dims[0] == 2 && y->dims[1] == 10);
  ingot_graph_destroy(g);
}

static void test_constants_model(void) {
  ingot_graph_t* g = import_ok("constants.onnx");
  if (!g) return;
  const ingot_value_t* v;
  v = find(g, "i32");
  CHECK(v && v->dtype == INGOT_DTYPE_I32 && v->dims[0] == 3);
  if (v) CHECK(((int32_t*)v->data)[0] == 1 && ((int32_t*)v->data)[1] == -2 && ((int32_t*)v->data)[2] == 3);
  v = find(g, "i64");
  CHECK(v && v->dtype == INGOT_DTYPE_I64);
  if (v) CHECK(((int64_t*)v->data)[0] == 5 && ((int64_t*)v->data)[1] == -6);
  v = find(g, "f64");
  CHECK(v && v->dtype == INGOT_DTYPE_F64);
  if (v) CHECK(((double*)v->data)[0] == 0.5 && ((double*)v->data)[1] == -1.25);
  v = find(g, "i8");
  CHECK(v && v->dtype == INGOT_DTYPE_I8);
  if (v) CHECK(((int8_t*)v->data)[0] == -128 && ((int8_t*)v->data)[1] == 127);
  v = find(g, "u8");
  CHECK(v && v->dtype == INGOT_DTYPE_U8);
  if (v) CHECK(((uint8_t*)v->data)[0] == 0 && ((uint8_t*)v->data)[1] == 7 && ((uint8_t*)v->data)[2] == 255);
  v = find(g, "bo");
  CHECK(v && v->dtype == INGOT_DTYPE_BOOL);
  if (v) CHECK(((uint8_t*)v->data)[0] == 1 && ((uint8_t*)v->data)[1] == 0);
  v = find(g, "scalar");
  CHECK(v && v->dtype == INGOT_DTYPE_F32 && v->rank == 0);
  if (v) CHECK(*(float*)v->data == 2.5f);
  /* Constant nodes became weights. */
  v = find(g, "s0");
  CHECK(v && v->kind == INGOT_VALUE_WEIGHT && v->dtype == INGOT_DTYPE_I64 && v->rank == 1);
  v = find(g, "s1");
  CHECK(v && v->kind == INGOT_VALUE_WEIGHT && v->dtype == INGOT_DTYPE_I64 && v->rank == 1);
  if (v) CHECK(((int64_t*)v->data)[0] == -1);
  v = find(g, "k");
  CHECK(v && v->kind == INGOT_VALUE_WEIGHT && v->rank == 0);
  if (v) CHECK(*(float*)v->data == 3.0f);
  CHECK(g->node_count == 4); /* Concat, Reshape, Mul, Add */
  CHECK_OK(ingot_graph_optimize_with(g, ingot_lower_eval_node, NULL));
  /* the Concat of constants is folded; Mul and Add become one loop
   * (ingot_graph_fuse_elementwise): Reshape, FusedElementwise */
  CHECK(g->node_count == 2);
  CHECK(g->node_count == 2 && g->nodes[1].op == INGOT_OP_FUSED_ELEMENTWISE);
  const ingot_value_t* y = &g->values[g->outputs[0]];
  CHECK(y->rank == 2 && y->dims[0] == 2 && y->dims[1] == 12);
  ingot_graph_destroy(g);
}

static uint8_t* read_all(const char* path, size_t* size) {
  uint8_t* data = NULL;
  if (ingot_file_read(path, &data, size) != INGOT_OK) {
    fprintf(stderr, "cannot read %s\n", path);
    ++g_failures;
    return NULL;
  }
  return data;
}

static void write_all(const char* path, const void* data, size_t size) {
  FILE* f = fopen(path, "wb");
  if (!f || fwrite(data, 1, size, f) != size) {
    fprintf(stderr, "cannot write %s\n", path);
    ++g_failures;
  }
  if (f) fclose(f);
}

static void test_external(void) {
  ingot_graph_t* g = import_ok("external.onnx");
  if (g) {
    const ingot_value_t* e = find(g, "e");
    CHECK(e && e->kind == INGOT_VALUE_WEIGHT && e->dims[0] == 4);
    if (e) {
      const float* f = e->data;
      CHECK(f[0] == 1.0f && f[1] == 2.0f && f[2] == 3.0f && f[3] == 4.0f);
    }
    ingot_graph_destroy(g);
  }
  /* From memory: only with a folder. */
  size_t size = 0;
  uint8_t* data = read_all(fixture("external.onnx"), &size);
  if (data) {
    g = NULL;
    CHECK(ingot_import_onnx_memory(data, size, NULL, NULL, &g) == INGOT_ERROR_UNSUPPORTED && g == NULL);
    CHECK(strstr(ingot_compiler_error(), "external") != NULL);
    CHECK_OK(ingot_import_onnx_memory(data, size, g_fixtures, NULL, &g));
    ingot_graph_destroy(g);
    free(data);
  }
  import_fails("external_dotdot.onnx", INGOT_ERROR_CORRUPT, "..", "initializer 'e'");
  import_fails("external_absolute.onnx", INGOT_ERROR_CORRUPT, "/etc/hostname", "relative");
  import_fails("external_short.onnx", INGOT_ERROR_CORRUPT, "external.bin", "the file has 28");

  /* Symbolic links: one out of the folder is refused, one inside is fine. */
  char dir[2048], path[4200], target[4200];
  snprintf(dir, sizeof(dir), "%s/importer_links", g_scratch);
  mkdir(g_scratch, 0755);
  mkdir(dir, 0755);
  data = read_all(fixture("external_link.onnx"), &size);
  size_t bin_size = 0;
  uint8_t* bin = read_all(fixture("external.bin"), &bin_size);
  if (data && bin) {
    snprintf(path, sizeof(path), "%s/model.onnx", dir);
    write_all(path, data, size);
    snprintf(target, sizeof(target), "%s/outside.bin", g_scratch);
    write_all(target, bin, bin_size);
    char link[4200];
    snprintf(link, sizeof(link), "%s/link.bin", dir);
    unlink(link);
    CHECK(symlink(target, link) == 0);
    g = NULL;
    ingot_compiler_error_clear();
    ingot_status_t s = ingot_import_onnx_file(path, NULL, &g);
    CHECK(s == INGOT_ERROR_CORRUPT && g == NULL);
    CHECK(strstr(ingot_compiler_error(), "outside") != NULL);
    snprintf(target, sizeof(target), "%s/inside.bin", dir);
    write_all(target, bin, bin_size);
    unlink(link);
    CHECK(symlink("inside.bin", link) == 0);
    CHECK_OK(ingot_import_onnx_file(path, NULL, &g));
    ingot_graph_destroy(g);
  }
  free(data);
  free(bin);
}

static void test_refused(void) {
  import_fails("custom_domain.onnx", INGOT_ERROR_UNSUPPORTED, "com.example", "node 'odd'");
  import_fails("ms_unknown_op.onnx", INGOT_ERROR_UNSUPPORTED, "operator 'QLinearLeakyRelu' of domain 'com.microsoft'",
               "node 'leaky'");
  import_fails("unknown_op.onnx", INGOT_ERROR_UNSUPPORTED, "FancyOp", "node 'fancy'");
  import_fails("bad_raw.onnx", INGOT_ERROR_CORRUPT, "raw_data has 12 bytes", "'bad'");
  import_fails("bad_dtype.onnx", INGOT_ERROR_UNSUPPORTED, "COMPLEX64", "'c64'");
  import_fails("bad_overflow.onnx", INGOT_ERROR_CORRUPT, "overflow", "'huge'");
  import_fails("bad_input.onnx", INGOT_ERROR_CORRUPT, "'nowhere'", "node 'lost' (Relu)");
  import_fails("no_such_file.onnx", INGOT_ERROR_IO, "no_such_file.onnx", NULL);

  ingot_graph_t* g = NULL;
  ingot_import_options_t few_nodes = {0, 2};
  CHECK(ingot_import_onnx_file(fixture("conv_bn_relu.onnx"), &few_nodes, &g) == INGOT_ERROR_LIMIT && !g);
  ingot_import_options_t few_bytes = {64, 0};
  CHECK(ingot_import_onnx_file(fixture("conv_bn_relu.onnx"), &few_bytes, &g) == INGOT_ERROR_LIMIT && !g);
}

static uint32_t g_rng = 12345u;
static uint32_t next_rand(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 17;
  g_rng ^= g_rng << 5;
  return g_rng;
}

static void test_truncated_and_garbage(const char* name) {
  size_t size = 0;
  uint8_t* data = read_all(fixture(name), &size);
  if (!data) return;
  /* Every proper prefix is refused. */
  for (size_t n = 0; n < size; ++n) {
    ingot_graph_t* g = NULL;
    ingot_status_t s = ingot_import_onnx_memory(data, n, NULL, NULL, &g);
    if (s == INGOT_OK || g) {
      fprintf(stderr, "a %zu-byte prefix of %zu was accepted\n", n, size);
      ++g_failures;
      ingot_graph_destroy(g);
      break;
    }
  }
  ingot_graph_t* g = NULL;
  CHECK(ingot_import_onnx_memory(data, size / 2, NULL, NULL, &g) == INGOT_ERROR_CORRUPT);
  CHECK(strlen(ingot_compiler_error()) > 0);
  /* Random garbage is refused. */
  uint8_t junk[4096];
  for (int iter = 0; iter < 300; ++iter) {
    size_t n = 1 + next_rand() % sizeof(junk);
    for (size_t i = 0; i < n; ++i) junk[i] = (uint8_t)next_rand();
    g = NULL;
    ingot_status_t s = ingot_import_onnx_memory(junk, n, NULL, NULL, &g);
    if (s == INGOT_OK) {
      ++g_failures;
      fprintf(stderr, "random garbage of %zu bytes was accepted\n", n);
      ingot_graph_destroy(g);
    }
  }
  /* Bit flips in a valid model: any outcome but a crash (run under ASan). */
  uint8_t* copy = malloc(size);
  int accepted = 0;
  /* INGOT_FUZZ_ITERS raises the count for a longer local run. */
  const char* env = getenv("INGOT_FUZZ_ITERS");
  int iters = env && atoi(env) > 0 ? atoi(env) : 2000;
  for (int iter = 0; iter < iters; ++iter) {
    memcpy(copy, data, size);
    size_t n = size;
    int flips = 1 + (int)(next_rand() % 4);
    for (int k = 0; k < flips; ++k) {
      uint32_t kind = next_rand() % 4;
      size_t at = next_rand() % n;
      if (kind == 0) {
        copy[at] ^= (uint8_t)(1u << (next_rand() % 8));
      } else if (kind == 1) {
        copy[at] = (uint8_t)next_rand();
      } else if (kind == 2 && n > 1) { /* delete a byte */
        memmove(copy + at, copy + at + 1, n - at - 1);
        --n;
      } else {
        copy[at] = (uint8_t)(next_rand() % 3 == 0 ? 0xff : 0x80 | next_rand());
      }
    }
    g = NULL;
    if (ingot_import_onnx_memory(copy, n, NULL, NULL, &g) == INGOT_OK) {
      /* Whatever parsed must survive the passes without crashing. */
      ++accepted;
      ingot_graph_set_input_shape(g, "x=1x3x8x8");
      ingot_graph_optimize_with(g, ingot_lower_eval_node, NULL);
      ingot_graph_destroy(g);
    }
  }
  printf("%s: %d of %d mutants imported\n", name, accepted, iters);
  free(copy);
  free(data);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s <fixtures dir> <scratch dir>\n", argv[0]);
    return 2;
  }
  g_fixtures = argv[1];
  g_scratch = argv[2];
  test_conv_model();
  test_constants_model();
  test_external();
  test_refused();
  test_truncated_and_garbage("conv_bn_relu.onnx");
  test_truncated_and_garbage("constants.onnx");
  if (g_failures) {
    fprintf(stderr, "importer_test: %d failure(s)\n", g_failures);
    return 1;
  }
  printf("importer_test: all passed\n");
  return 0;
}
