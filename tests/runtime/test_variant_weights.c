/* Per-variant weights and launch records, through the packager API and the
 * runtime: a hand-written kernel library (y = 2 * (a + w) + 1) is built with
 * the system C compiler and packaged as several CPU variants whose weight
 * tensor w has different bytes (and, for one, a padded layout of a different
 * size). The runtime must load the variant it ranks best and run with that
 * variant's weights; identical weights must be stored once; the reader must
 * refuse manifests whose variant, launch or weight records lie (checksums
 * repaired, so only the new checks can catch them), each with a message.
 *
 * usage: test_variant_weights <c compiler> <source root> <work dir> */
#define _DEFAULT_SOURCE 1
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "packager/packager.h"
#include "runtime/ingot.h"
#include "runtime/ingot_format.h"
#include "runtime/loader.h" /* the loader table, tested directly */

#define N 1000

static int g_failures;
#define CHECK(cond, ...)                                                 \
  do {                                                                   \
    if (!(cond)) {                                                       \
      fprintf(stderr, "%s:%d: FAILED %s: ", __FILE__, __LINE__, #cond);  \
      fprintf(stderr, __VA_ARGS__);                                      \
      fprintf(stderr, "\n");                                             \
      ++g_failures;                                                      \
    }                                                                    \
  } while (0)

static const char k_kernel_source[] =
    "#include <stdint.h>\n"
    "#include \"runtime/ingot_format.h\"\n"
    "#define N 1000\n"
    "static int32_t add_f32(const ingot_kernel_env_t* env, void* const* args) {\n"
    "  (void)env;\n"
    "  const float* a = (const float*)args[0]; const float* w = (const float*)args[1];\n"
    "  float* t = (float*)args[2];\n"
    "  for (int i = 0; i < N; ++i) t[i] = a[i] + w[i];\n"
    "  return 0;\n"
    "}\n"
    "static int32_t scale_f32(const ingot_kernel_env_t* env, void* const* args) {\n"
    "  (void)env;\n"
    "  const float* t = (const float*)args[0]; float* y = (float*)args[1];\n"
    "  for (int i = 0; i < N; ++i) y[i] = 2.0f * t[i] + 1.0f;\n"
    "  return 0;\n"
    "}\n"
    "static const ingot_kernel_entry_t kernels[] = {{\"add_f32\", add_f32}, {\"scale_f32\", scale_f32}};\n"
    "static const ingot_kernel_library_t library = {INGOT_KERNEL_ABI_VERSION, 2, kernels};\n"
    "__attribute__((visibility(\"default\")))\n"
    "const ingot_kernel_library_t* ingot_library_query(uint32_t abi_version) {\n"
    "  return abi_version == INGOT_KERNEL_ABI_VERSION ? &library : 0;\n"
    "}\n";

/* A target this CPU runs that ranks above "c" (cpu.c: llvm at the baseline
 * level of the host's architecture). */
#if defined(__x86_64__)
#define BETTER_TARGET "llvm x86-64"
#elif defined(__aarch64__)
#define BETTER_TARGET "llvm aarch64"
#else
#error "no baseline llvm target for this architecture in this test"
#endif

static int read_file(const char* path, uint8_t** out, size_t* out_size) {
  FILE* f = fopen(path, "rb");
  if (!f) return 0;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  *out = malloc(n > 0 ? (size_t)n : 1);
  *out_size = fread(*out, 1, (size_t)n, f);
  fclose(f);
  return *out_size == (size_t)n;
}

static int build_so(const char* cc, const char* src, const char* work, uint8_t** out, size_t* out_size) {
  char c_path[1024], so_path[1024], cmd[4096];
  snprintf(c_path, sizeof c_path, "%s/variant_kernels.c", work);
  snprintf(so_path, sizeof so_path, "%s/variant_kernels.so", work);
  FILE* f = fopen(c_path, "wb");
  if (!f) return 0;
  fputs(k_kernel_source, f);
  fclose(f);
  snprintf(cmd, sizeof cmd,
           "\"%s\" -std=c11 -O2 -fPIC -shared -nostdlib -fvisibility=hidden -fno-stack-protector "
           "-Wl,-z,defs -I\"%s\" -o \"%s\" \"%s\"", cc, src, so_path, c_path);
  if (system(cmd) != 0) return 0;
  return read_file(so_path, out, out_size);
}

/* ---- The model: a (input), w (weight), t, y; add then scale. ------------ */

static float g_w_default[N], g_w_a[N], g_w_b[N + 64]; /* b: padded layout, 64 more floats */
static const uint32_t g_add_args[] = {0, 1, 2};
static const uint32_t g_scale_args[] = {2, 3};
static const uint32_t g_inputs[] = {0};
static const uint32_t g_outputs[] = {3};

typedef struct model_t {
  ingot_bundle_tensor_t tensors[4];
  ingot_bundle_step_t steps[2];
  const char* kernel_names[2];
  ingot_bundle_code_t codes[3];
  ingot_bundle_weight_t weights[3][4];
  ingot_bundle_spec_t spec;
} model_t;

static void model_init(model_t* m) {
  memset(m, 0, sizeof *m);
  const char* names[4] = {"a", "w", "t", "y"};
  for (int i = 0; i < 4; ++i) {
    m->tensors[i].name = names[i];
    m->tensors[i].dtype = INGOT_DTYPE_F32;
    m->tensors[i].rank = 1;
    m->tensors[i].dims[0] = N;
    m->tensors[i].storage = INGOT_STORAGE_ARENA;
    m->tensors[i].alias_of = UINT32_MAX;
  }
  m->tensors[1].storage = INGOT_STORAGE_WEIGHT;
  m->tensors[1].data = g_w_default;
  m->steps[0] = (ingot_bundle_step_t){0, g_add_args, 3, "node_add"};
  m->steps[1] = (ingot_bundle_step_t){1, g_scale_args, 2, "node_scale"};
  m->kernel_names[0] = "add_f32";
  m->kernel_names[1] = "scale_f32";
  m->spec.tensors = m->tensors;
  m->spec.tensor_count = 4;
  m->spec.inputs = g_inputs;
  m->spec.input_count = 1;
  m->spec.outputs = g_outputs;
  m->spec.output_count = 1;
  m->spec.steps = m->steps;
  m->spec.step_count = 2;
  m->spec.kernel_names = m->kernel_names;
  m->spec.kernel_count = 2;
  m->spec.codes = m->codes;
  m->spec.zstd_level = 3;
}

/* Variant c runs `so` for `target` with weight bytes `w` (NULL: shared). */
static void model_variant(model_t* m, uint32_t c, const char* target, const uint8_t* so, size_t so_size,
                          const float* w, uint64_t w_bytes) {
  m->codes[c] = (ingot_bundle_code_t){target, so, so_size, INGOT_LOADER_CPU_ELF, NULL, NULL};
  if (w) {
    m->weights[c][1] = (ingot_bundle_weight_t){w, w_bytes};
    m->codes[c].weights = m->weights[c];
  }
  if (m->spec.code_count < c + 1) m->spec.code_count = c + 1;
}

static int build(const ingot_bundle_spec_t* spec, uint8_t** data, size_t* size, ingot_bundle_report_t* report) {
  ingot_status_t st = ingot_bundle_build(spec, data, size, report);
  if (st != INGOT_OK) fprintf(stderr, "build: %s\n", ingot_compiler_error());
  return st == INGOT_OK;
}

/* Opens (only the variant `force` when it is not NULL:
 * ingot_bundle_options_t.target), checks the loaded target, runs once,
 * compares with `w`. */
static void run_expect_variant(const uint8_t* data, size_t size, const char* force, const char* target,
                               const float* w, const char* what) {
  ingot_bundle_t* bundle = NULL;
  ingot_bundle_options_t open_options = {.target = force};
  ingot_status_t st = ingot_bundle_open_memory(data, size, &open_options, &bundle);
  CHECK(st == INGOT_OK, "%s: open: %s", what, ingot_last_error());
  if (st != INGOT_OK) return;
  CHECK(strcmp(ingot_bundle_target(bundle), target) == 0, "%s: loaded %s, want %s (%s)", what,
        ingot_bundle_target(bundle), target, ingot_bundle_target_reason(bundle));
  ingot_session_options_t options = {{0}, 1};
  ingot_session_t* session = NULL;
  st = ingot_session_create(bundle, &options, &session);
  CHECK(st == INGOT_OK, "%s: session: %s", what, ingot_last_error());
  if (st == INGOT_OK) {
    float* a = (float*)ingot_session_input_data(session, 0);
    for (int i = 0; i < N; ++i) a[i] = (float)i * 0.25f;
    st = ingot_session_run(session);
    CHECK(st == INGOT_OK, "%s: run: %s", what, ingot_last_error());
    const float* y = (const float*)ingot_session_output_data(session, 0);
    int bad = 0;
    for (int i = 0; i < N && !bad && st == INGOT_OK; ++i) {
      float want = 2.0f * ((float)i * 0.25f + w[i]) + 1.0f;
      if (fabsf(y[i] - want) > 1e-4f) {
        fprintf(stderr, "%s: y[%d] = %g, want %g\n", what, i, y[i], want);
        bad = 1;
      }
    }
    CHECK(!bad, "%s: the output was not computed with the loaded variant's weights", what);
    ingot_session_release(session);
  }
  ingot_bundle_release(bundle);
}

static void run_expect(const uint8_t* data, size_t size, const char* target, const float* w, const char* what) {
  run_expect_variant(data, size, NULL, target, w, what);
}

/* Opening one named variant that cannot be loaded: `want`, a message. */
static void open_variant_refused(const uint8_t* data, size_t size, const char* force, ingot_status_t want,
                                 const char* needle, const char* what) {
  ingot_bundle_t* bundle = NULL;
  ingot_bundle_options_t open_options = {.target = force};
  ingot_status_t st = ingot_bundle_open_memory(data, size, &open_options, &bundle);
  CHECK(st == want && bundle == NULL, "%s: status %s, want %s", what, ingot_status_name(st), ingot_status_name(want));
  CHECK(strstr(ingot_last_error(), needle) != NULL, "%s: message '%s' lacks '%s'", what, ingot_last_error(), needle);
  ingot_bundle_release(bundle);
}

/* ---- Rewriting a bundle with every section uncompressed, so that the
 * manifest can be patched in place and its checksums repaired. ----------- */

typedef struct flat_t {
  uint8_t* data;
  size_t size;
  uint64_t manifest_offset, manifest_size;
  uint32_t manifest_index;
} flat_t;

static int flatten(const uint8_t* in, size_t n, flat_t* out) {
  memset(out, 0, sizeof *out);
  ingot_bundle_header_t h;
  memcpy(&h, in, sizeof h);
  ingot_section_entry_t e[64];
  if (h.section_count > 64) return 0;
  memcpy(e, in + sizeof h, h.section_count * sizeof e[0]);
  uint64_t total = sizeof h + h.section_count * sizeof e[0] + 64;
  for (uint32_t i = 0; i < h.section_count; ++i) total += e[i].raw_size + 64;
  uint8_t* file = calloc(1, (size_t)total);
  uint64_t pos = sizeof h + h.section_count * sizeof e[0];
  for (uint32_t i = 0; i < h.section_count; ++i) { /* sections are in table order in our files */
    pos = (pos + 63) & ~(uint64_t)63;
    if (e[i].codec == INGOT_CODEC_NONE) {
      memcpy(file + pos, in + e[i].offset, (size_t)e[i].raw_size);
    } else {
      size_t got = ZSTD_decompress(file + pos, (size_t)e[i].raw_size, in + e[i].offset, (size_t)e[i].stored_size);
      if (ZSTD_isError(got) || got != e[i].raw_size) {
        free(file);
        return 0;
      }
    }
    e[i].offset = pos;
    e[i].codec = INGOT_CODEC_NONE;
    e[i].stored_size = e[i].raw_size;
    if (e[i].kind == INGOT_SECTION_MANIFEST) {
      out->manifest_offset = pos;
      out->manifest_size = e[i].raw_size;
      out->manifest_index = i;
    }
    pos += e[i].raw_size;
  }
  h.file_size = pos;
  memcpy(file + sizeof h, e, h.section_count * sizeof e[0]);
  memcpy(file, &h, sizeof h);
  out->data = file;
  out->size = (size_t)pos;
  return 1;
}

/* Recomputes every checksum of a flat bundle. */
static void repair(uint8_t* file) {
  ingot_bundle_header_t h;
  memcpy(&h, file, sizeof h);
  ingot_section_entry_t* table = (ingot_section_entry_t*)(file + sizeof h);
  for (uint32_t i = 0; i < h.section_count; ++i) {
    ingot_section_entry_t e;
    memcpy(&e, &table[i], sizeof e);
    e.stored_crc32 = e.raw_crc32 = ingot_crc32(0, file + e.offset, (size_t)e.stored_size);
    memcpy(&table[i], &e, sizeof e);
  }
  h.table_crc32 = ingot_crc32(0, table, h.section_count * sizeof(ingot_section_entry_t));
  h.header_crc32 = 0;
  h.header_crc32 = ingot_crc32(0, &h, sizeof h);
  memcpy(file, &h, sizeof h);
}

/* Where the arrays of a manifest start (the layout of ingot_format.h). */
typedef struct manifest_layout_t {
  ingot_manifest_header_t h;
  uint64_t steps, variants, launches, weights;
  uint32_t weight_count;
} manifest_layout_t;

static uint64_t align8(uint64_t x) { return (x + 7) & ~(uint64_t)7; }

static void manifest_layout(const uint8_t* m, manifest_layout_t* out) {
  memcpy(&out->h, m, sizeof out->h);
  uint64_t pos = align8(sizeof out->h);
  out->weight_count = 0;
  for (uint32_t t = 0; t < out->h.tensor_count; ++t) {
    ingot_tensor_record_t r;
    memcpy(&r, m + pos + t * sizeof r, sizeof r);
    out->weight_count += r.storage == INGOT_STORAGE_WEIGHT;
  }
  pos = align8(pos + out->h.tensor_count * sizeof(ingot_tensor_record_t));
  pos = align8(pos + 4 * (uint64_t)out->h.input_count);
  pos = align8(pos + 4 * (uint64_t)out->h.output_count);
  out->steps = pos;
  pos = align8(pos + out->h.step_count * sizeof(ingot_step_record_t));
  pos = align8(pos + 4 * (uint64_t)out->h.arg_count);
  pos = align8(pos + 4 * (uint64_t)out->h.kernel_count);
  out->variants = pos;
  pos = align8(pos + out->h.variant_count * sizeof(ingot_variant_record_t));
  out->launches = pos;
  pos = align8(pos + (uint64_t)out->h.variant_count * out->h.step_count * sizeof(ingot_launch_record_t));
  out->weights = pos;
}

/* Patches 4 bytes at `offset` of the manifest to `value`, repairs, opens:
 * must be refused as corrupt with `needle` in the message. */
static void expect_refused(const flat_t* flat, uint64_t offset, uint32_t value, const char* needle,
                           const char* what) {
  uint8_t* copy = malloc(flat->size);
  memcpy(copy, flat->data, flat->size);
  memcpy(copy + flat->manifest_offset + offset, &value, 4);
  repair(copy);
  ingot_bundle_t* bundle = NULL;
  ingot_status_t st = ingot_bundle_open_memory(copy, flat->size, NULL, &bundle);
  CHECK(st == INGOT_ERROR_CORRUPT && !bundle, "%s: status %s (%s)", what, ingot_status_name(st),
        ingot_last_error());
  CHECK(strstr(ingot_last_error(), needle) != NULL, "%s: message '%s' lacks '%s'", what,
        ingot_last_error(), needle);
  ingot_bundle_release(bundle);
  free(copy);
}

static void test_lying_records(const uint8_t* data, size_t size) {
  flat_t flat;
  if (!flatten(data, size, &flat)) {
    CHECK(0, "cannot flatten the bundle");
    return;
  }
  repair(flat.data);
  {
    ingot_bundle_t* bundle = NULL;
    CHECK(ingot_bundle_open_memory(flat.data, flat.size, NULL, &bundle) == INGOT_OK,
          "flattened bundle: %s", ingot_last_error());
    ingot_bundle_release(bundle);
  }
  manifest_layout_t L;
  manifest_layout(flat.data + flat.manifest_offset, &L);
  CHECK(L.h.variant_count == 2 && L.weight_count == 1, "layout: %u variants, %u weights",
        L.h.variant_count, L.weight_count);
  const uint64_t V = sizeof(ingot_variant_record_t), LR = sizeof(ingot_launch_record_t);
  expect_refused(&flat, offsetof(ingot_manifest_header_t, variant_count), 3, "3 variants for 2 code sections",
                 "variant count");
  expect_refused(&flat, L.steps + offsetof(ingot_step_record_t, guard), 0x7fffffffu, "guard", "step guard");
  expect_refused(&flat, L.variants + offsetof(ingot_variant_record_t, code_section), flat.manifest_index,
                 "is not the next CODE section", "code section -> manifest");
  uint32_t code0, weights1;
  memcpy(&code0, flat.data + flat.manifest_offset + L.variants + offsetof(ingot_variant_record_t, code_section), 4);
  memcpy(&weights1, flat.data + flat.manifest_offset + L.variants + V + offsetof(ingot_variant_record_t, weights_section), 4);
  expect_refused(&flat, L.variants + V + offsetof(ingot_variant_record_t, code_section), code0,
                 "is not the next CODE section", "two variants on one CODE section");
  expect_refused(&flat, L.variants + offsetof(ingot_variant_record_t, weights_section), flat.manifest_index,
                 "is not a WEIGHTS section", "weights section -> manifest");
  expect_refused(&flat, L.variants + offsetof(ingot_variant_record_t, loader), 0, "unknown loader kind 0",
                 "loader 0");
  expect_refused(&flat, L.variants + offsetof(ingot_variant_record_t, loader), INGOT_LOADER_KIND_END_,
                 "unknown loader kind", "loader past the end");
  expect_refused(&flat, L.variants + offsetof(ingot_variant_record_t, reserved), 7, "reserved",
                 "variant reserved");
  expect_refused(&flat, L.launches + LR + offsetof(ingot_launch_record_t, kernel), 2, "bad kernel index",
                 "launch kernel");
  expect_refused(&flat, L.launches + offsetof(ingot_launch_record_t, grid), 4, "launch dims",
                 "CPU launch with a grid");
  expect_refused(&flat, L.launches + offsetof(ingot_launch_record_t, shared_bytes), 1024, "launch dims",
                 "CPU launch with shared memory");
  /* Variant 0's weights fit in variant 1's (larger) section: pointing it
   * there leaves its own section used by no variant. */
  expect_refused(&flat, L.variants + offsetof(ingot_variant_record_t, weights_section), weights1,
                 "used by no variant", "orphan weights section");
  expect_refused(&flat, L.weights + offsetof(ingot_weight_record_t, offset), 32, "outside its weights section",
                 "misaligned weight");
  expect_refused(&flat, L.weights + sizeof(ingot_weight_record_t) + offsetof(ingot_weight_record_t, bytes),
                 0x7FFFFFFF, "outside its weights section", "weight past its section");
  free(flat.data);
}

/* Every byte of a two-variant bundle flipped: refused, with a message (the
 * WEIGHTS section of the variant not loaded included). */
static void test_flips(const uint8_t* data, size_t size) {
  uint8_t* copy = malloc(size);
  for (size_t i = 0; i < size; ++i) {
    memcpy(copy, data, size);
    copy[i] ^= 0x01;
    ingot_bundle_t* bundle = NULL;
    ingot_status_t st = ingot_bundle_open_memory(copy, size, NULL, &bundle);
    CHECK(st != INGOT_OK && !bundle && ingot_last_error()[0], "byte %zu flipped: accepted", i);
    ingot_bundle_release(bundle);
  }
  free(copy);
  printf("two variants: %zu flipped bytes refused\n", size);
}

/* The loader table and the CPU row's device buffers, called directly. */
static void test_loader_table(void) {
  const ingot_rt_loader_t* cpu = ingot_rt_loader_find(INGOT_LOADER_CPU_ELF);
  CHECK(cpu && cpu->kind == INGOT_LOADER_CPU_ELF && cpu->host_visible, "CPU row");
  CHECK(ingot_rt_loader_find(INGOT_LOADER_KIND_END_) == NULL && ingot_rt_loader_find(0) == NULL, "no other rows");
  const ingot_rt_loader_t* cuda = ingot_rt_loader_find(INGOT_LOADER_CUDA);
  CHECK(cuda && cuda->kind == INGOT_LOADER_CUDA && !cuda->host_visible, "CUDA row (test_gpu_loader tests it)");
  if (!cpu) return;
  ingot_rt_device_t* device = NULL;
  CHECK(cpu->device_create(300, ingot_allocator_system(), &device) == INGOT_ERROR_INVALID_ARGUMENT && !device,
        "300 threads");
  CHECK(cpu->device_create(2, ingot_allocator_system(), &device) == INGOT_OK && device, "device: %s",
        ingot_last_error());
  if (!device) return;
  uint8_t* buffer = NULL;
  CHECK(cpu->buffer_alloc(device, 100, (void**)&buffer) == INGOT_OK && buffer && ((uintptr_t)buffer & 63) == 0,
        "buffer");
  uint8_t host[100], back[100];
  for (int i = 0; i < 100; ++i) host[i] = (uint8_t)(i * 7);
  CHECK(cpu->buffer_copy(device, buffer, host, 100, INGOT_RT_COPY_TO_DEVICE) == INGOT_OK, "to device");
  CHECK(cpu->buffer_copy(device, back, buffer, 100, INGOT_RT_COPY_TO_HOST) == INGOT_OK &&
            memcmp(host, back, 100) == 0, "round trip");
  CHECK(cpu->buffer_copy(device, back, buffer, 100, (ingot_rt_copy_t)9) == INGOT_ERROR_INVALID_ARGUMENT,
        "bad direction");
  cpu->buffer_free(device, buffer);
  cpu->device_release(device);
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s <cc> <source root> <work dir>\n", argv[0]);
    return 2;
  }
  for (int i = 0; i < N; ++i) {
    g_w_default[i] = (float)(i % 5) - 2.0f;
    g_w_a[i] = (float)(i % 7) * 0.5f;
    g_w_b[i] = -(float)(i % 3) * 1.5f;
  }
  for (int i = N; i < N + 64; ++i) g_w_b[i] = 12345.0f; /* padding a kernel never reads */
  uint8_t* so = NULL;
  size_t so_size = 0;
  if (!build_so(argv[1], argv[2], argv[3], &so, &so_size)) {
    fprintf(stderr, "cannot build the kernel library\n");
    return 1;
  }

  /* 1. Two runnable variants with different weights: the better-ranked one
   *    is loaded and runs with its own weights, whichever comes first. */
  for (int order = 0; order < 2; ++order) {
    model_t m;
    model_init(&m);
    uint32_t c_slot = order ? 1 : 0, llvm_slot = order ? 0 : 1;
    model_variant(&m, c_slot, "c", so, so_size, g_w_a, sizeof(float) * N);
    model_variant(&m, llvm_slot, BETTER_TARGET, so, so_size, g_w_b, sizeof g_w_b);
    uint8_t* d = NULL;
    size_t n = 0;
    ingot_bundle_report_t report;
    if (!build(&m.spec, &d, &n, &report)) {
      CHECK(0, "build two variants");
      continue;
    }
    CHECK(report.weight_sections == 2, "two layouts: %u weights sections", report.weight_sections);
    CHECK(report.weight_bytes == sizeof(float) * N + sizeof g_w_b, "weight bytes %llu",
          (unsigned long long)report.weight_bytes);
    run_expect(d, n, BETTER_TARGET, g_w_b, order ? "llvm first" : "c first");
    /* One variant by name: the lower-ranked one loads, with its own weights. */
    run_expect_variant(d, n, "c", "c", g_w_a, order ? "target c, llvm first" : "target c, c first");
    run_expect_variant(d, n, BETTER_TARGET, BETTER_TARGET, g_w_b, "target " BETTER_TARGET);
    open_variant_refused(d, n, "rocm -mcpu=gfx942", INGOT_ERROR_NOT_FOUND, "no variant for target 'rocm -mcpu=gfx942'",
                         "a target the bundle lacks");
    uint8_t* again = NULL;
    size_t again_n = 0;
    if (build(&m.spec, &again, &again_n, NULL))
      CHECK(again_n == n && memcmp(again, d, n) == 0, "the same spec gave different bytes");
    free(again);
    if (order == 0) {
      test_lying_records(d, n);
      test_flips(d, n);
    }
    free(d);
  }

  /* 2. A variant this machine cannot run comes first with its own weights:
   *    skipped, and the "c" variant runs with the shared weights. */
  {
    static const uint8_t junk[] = "not a code object";
    model_t m;
    model_init(&m);
    model_variant(&m, 0, "cuda -arch=sm_90", junk, sizeof junk, g_w_a, sizeof(float) * N);
    model_variant(&m, 1, "c", so, so_size, NULL, 0);
    uint8_t* d = NULL;
    size_t n = 0;
    if (build(&m.spec, &d, &n, NULL)) run_expect(d, n, "c", g_w_default, "gpu-like first");
    free(d);
    /* Its loader kind is CUDA: with no usable driver here (or, on a GPU
     * machine, junk that is no CUBIN) the reader skips it, naming why,
     * instead of refusing the bundle (its launch records carry a grid). */
    ingot_launch_record_t gpu[2] = {{0, 0, {4, 1, 1}, {256, 1, 1}}, {1, 128, {8, 2, 1}, {64, 2, 1}}};
    m.codes[0].loader = INGOT_LOADER_CUDA;
    m.codes[0].launches = gpu;
    if (build(&m.spec, &d, &n, NULL)) {
      run_expect(d, n, "c", g_w_default, "cuda kind first");
      /* Asked for by name, the variant that does not run here is refused,
       * saying why (no driver, or junk where a CUBIN should be). */
      ingot_bundle_t* only = NULL;
      ingot_bundle_options_t only_options = {.target = "cuda -arch=sm_90"};
      ingot_status_t only_st = ingot_bundle_open_memory(d, n, &only_options, &only);
      CHECK(only_st != INGOT_OK && only == NULL, "target cuda -arch=sm_90 alone: opened (%s)", ingot_status_name(only_st));
      if (only_st == INGOT_ERROR_UNSUPPORTED)
        CHECK(strstr(ingot_last_error(), "variant 'cuda -arch=sm_90' does not run on this machine: ") != NULL,
              "target cuda alone: %s", ingot_last_error());
      ingot_bundle_release(only);
      ingot_bundle_t* bundle = NULL;
      if (ingot_bundle_open_memory(d, n, NULL, &bundle) == INGOT_OK) {
        CHECK(strstr(ingot_bundle_target_reason(bundle), "skipped cuda -arch=sm_90 (") != NULL, "reason: %s",
              ingot_bundle_target_reason(bundle));
        ingot_bundle_release(bundle);
      }
      free(d);
    }
    /* A CPU launch record with a grid, a GPU one without: refused by the writer. */
    m.codes[1].launches = gpu;
    CHECK(ingot_bundle_build(&m.spec, &d, &n, NULL) == INGOT_ERROR_INVALID_ARGUMENT && !d, "CPU grid");
    m.codes[1].launches = NULL;
    ingot_launch_record_t none[2] = {{0, 0, {0, 0, 0}, {0, 0, 0}}, {1, 0, {0, 0, 0}, {0, 0, 0}}};
    m.codes[0].launches = none;
    CHECK(ingot_bundle_build(&m.spec, &d, &n, NULL) == INGOT_ERROR_INVALID_ARGUMENT && !d, "GPU without grid");
  }

  /* 3. Identical weights are stored once: a variant giving the shared bytes
   *    explicitly yields the same file as one giving none. */
  {
    model_t shared, explicit_;
    model_init(&shared);
    model_variant(&shared, 0, "c", so, so_size, NULL, 0);
    model_variant(&shared, 1, BETTER_TARGET, so, so_size, NULL, 0);
    model_init(&explicit_);
    model_variant(&explicit_, 0, "c", so, so_size, NULL, 0);
    model_variant(&explicit_, 1, BETTER_TARGET, so, so_size, g_w_default, sizeof g_w_default);
    uint8_t *d1 = NULL, *d2 = NULL;
    size_t n1 = 0, n2 = 0;
    ingot_bundle_report_t r1, r2;
    if (build(&shared.spec, &d1, &n1, &r1) && build(&explicit_.spec, &d2, &n2, &r2)) {
      CHECK(r1.weight_sections == 1 && r2.weight_sections == 1, "sections %u %u", r1.weight_sections,
            r2.weight_sections);
      CHECK(r1.weight_bytes == sizeof g_w_default, "weight bytes %llu", (unsigned long long)r1.weight_bytes);
      CHECK(n1 == n2 && memcmp(d1, d2, n1) == 0, "identical weights stored differently");
      run_expect(d1, n1, BETTER_TARGET, g_w_default, "shared weights");
    }
    free(d1);
    free(d2);
  }

  /* 4. The writer refuses weight data for a tensor that is not a weight, a
   *    weight with bytes and no data, and a code without a loader kind. */
  {
    model_t m;
    model_init(&m);
    model_variant(&m, 0, "c", so, so_size, g_w_a, sizeof(float) * N);
    uint8_t* d = NULL;
    size_t n = 0;
    m.weights[0][0] = (ingot_bundle_weight_t){g_w_a, 4};
    CHECK(ingot_bundle_build(&m.spec, &d, &n, NULL) == INGOT_ERROR_INVALID_ARGUMENT && !d, "non-weight data");
    m.weights[0][0] = (ingot_bundle_weight_t){NULL, 0};
    m.weights[0][1] = (ingot_bundle_weight_t){NULL, 8};
    CHECK(ingot_bundle_build(&m.spec, &d, &n, NULL) == INGOT_ERROR_INVALID_ARGUMENT && !d, "no data");
    model_init(&m);
    model_variant(&m, 0, "c", so, so_size, NULL, 0);
    m.codes[0].loader = (ingot_loader_kind_t)0;
    CHECK(ingot_bundle_build(&m.spec, &d, &n, NULL) == INGOT_ERROR_INVALID_ARGUMENT && !d, "no loader");
    CHECK(strstr(ingot_compiler_error(), "loader kind") != NULL, "message: %s", ingot_compiler_error());
  }

  test_loader_table();
  free(so);
  if (g_failures) {
    fprintf(stderr, "%d failures\n", g_failures);
    return 1;
  }
  printf("variant weights: ok\n");
  return 0;
}
