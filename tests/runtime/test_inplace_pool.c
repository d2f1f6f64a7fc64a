/* Weights used in place, caller arenas and memory pools, through the
 * packager API and the runtime (runtime/ingot.h, issue 13 items 3 and 4).
 *
 * A hand-written kernel library (t = a + w[0..N), y = 2 t + 1) is built with
 * the system C compiler for three sizes N, packaged with raw, zstd and auto
 * weights, and:
 *   - the writer's weights codec: raw sections uncompressed and 64-aligned,
 *     auto picking raw for incompressible weights and zstd for compressible
 *     ones, the same spec giving the same bytes;
 *   - opened by copy, by borrowed memory (aligned: in place; misaligned: a
 *     copy), by a mapped file (in place) and by a read file (a copy): every
 *     output byte-identical to the copying path's;
 *   - run in a caller's arena (exact size: fine; too small or misaligned:
 *     refused with a message);
 *   - corrupt or truncated raw bundles (every 7th byte flipped, through the
 *     file and the borrowed paths): refused with a status and a message;
 *   - three bundles run in sequence from one pool whose budget is the largest
 *     arena: sharing one arena, and one after another with arenas of their
 *     own; over a caller's buffer too; the high-water mark; refusal of a
 *     session or arena beyond the budget (INGOT_ERROR_LIMIT); a shared arena
 *     too small for a bundle; two runs on one shared arena at once;
 *   - peak memory while opening a bundle with 64 MiB of raw weights, in a
 *     child process: VmHWM at most 1.1x the steady VmRSS (after a run), with
 *     the read-file path as the control that must show the copy (> 1.5x).
 *     Not timed.
 *
 * usage: test_inplace_pool <c compiler> <source root> <work dir>
 *        test_inplace_pool --rss <bundle> [read]      (the child) */
#define _DEFAULT_SOURCE 1
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packager/packager.h"
#include "runtime/ingot.h"
#include "runtime/ingot_format.h"
#include "runtime/runtime_internal.h" /* ingot_rt_arena_enter: a run in progress, simulated */

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

static int write_file(const char* path, const uint8_t* data, size_t size) {
  FILE* f = fopen(path, "wb");
  if (!f) return 0;
  size_t put = fwrite(data, 1, size, f);
  return fclose(f) == 0 && put == size;
}

/* The kernel library for vectors of n floats. */
static int build_so(const char* cc, const char* src, const char* work, int n, uint8_t** out, size_t* out_size) {
  char c_path[1024], so_path[1024], cmd[4096];
  snprintf(c_path, sizeof c_path, "%s/inplace_kernels.c", work);
  snprintf(so_path, sizeof so_path, "%s/inplace_kernels_%d.so", work, n);
  if (!write_file(c_path, (const uint8_t*)k_kernel_source, strlen(k_kernel_source))) return 0;
  snprintf(cmd, sizeof cmd,
           "\"%s\" -std=c11 -O2 -fPIC -shared -nostdlib -fvisibility=hidden -fno-stack-protector "
           "-Wl,-z,defs -DN=%d -I\"%s\" -o \"%s\" \"%s\"", cc, n, src, so_path, c_path);
  if (system(cmd) != 0) return 0;
  return read_file(so_path, out, out_size);
}

/* ---- A model: a[n] (input), w[wn >= n] (weight), t[n], y[n] (output). --- */

static const uint32_t g_add_args[] = {0, 1, 2};
static const uint32_t g_scale_args[] = {2, 3};
static const uint32_t g_inputs[] = {0};
static const uint32_t g_outputs[] = {3};

typedef struct model_t {
  ingot_bundle_tensor_t tensors[4];
  ingot_bundle_step_t steps[2];
  const char* kernel_names[2];
  ingot_bundle_code_t code;
  ingot_bundle_spec_t spec;
} model_t;

static void model_init(model_t* m, int n, const float* w, int64_t wn, const uint8_t* so, size_t so_size,
                       ingot_bundle_weights_codec_t codec) {
  memset(m, 0, sizeof *m);
  const char* names[4] = {"a", "w", "t", "y"};
  for (int i = 0; i < 4; ++i) {
    m->tensors[i].name = names[i];
    m->tensors[i].dtype = INGOT_DTYPE_F32;
    m->tensors[i].rank = 1;
    m->tensors[i].dims[0] = n;
    m->tensors[i].storage = INGOT_STORAGE_ARENA;
    m->tensors[i].alias_of = UINT32_MAX;
  }
  m->tensors[1].storage = INGOT_STORAGE_WEIGHT;
  m->tensors[1].dims[0] = wn;
  m->tensors[1].data = w;
  m->steps[0] = (ingot_bundle_step_t){0, g_add_args, 3, "node_add"};
  m->steps[1] = (ingot_bundle_step_t){1, g_scale_args, 2, "node_scale"};
  m->kernel_names[0] = "add_f32";
  m->kernel_names[1] = "scale_f32";
  m->code = (ingot_bundle_code_t){"c", so, so_size, INGOT_LOADER_CPU_ELF, NULL, NULL};
  m->spec = (ingot_bundle_spec_t){
      .tensors = m->tensors, .tensor_count = 4, .inputs = g_inputs, .input_count = 1,
      .outputs = g_outputs, .output_count = 1, .steps = m->steps, .step_count = 2,
      .kernel_names = m->kernel_names, .kernel_count = 2, .codes = &m->code, .code_count = 1,
      .weights_codec = codec};
}

static int build(const model_t* m, uint8_t** data, size_t* size) {
  ingot_status_t st = ingot_bundle_build(&m->spec, data, size, NULL);
  if (st != INGOT_OK) fprintf(stderr, "build: %s\n", ingot_compiler_error());
  return st == INGOT_OK;
}

/* The codec of the bundle's (only) WEIGHTS section and its file offset. */
static uint32_t weights_codec_of(const uint8_t* data, uint64_t* out_offset) {
  ingot_bundle_header_t h;
  memcpy(&h, data, sizeof h);
  for (uint32_t i = 0; i < h.section_count; ++i) {
    ingot_section_entry_t e;
    memcpy(&e, data + sizeof h + i * sizeof e, sizeof e);
    if (e.kind == INGOT_SECTION_WEIGHTS) {
      if (out_offset) *out_offset = e.offset;
      return e.codec;
    }
  }
  return UINT32_MAX;
}

/* Deterministic weights: `noisy` ones have random mantissas (zstd saves
 * little, like trained fp32 weights), the others are small integers. */
static void fill_weights(float* w, int64_t n, int noisy, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 1u;
  for (int64_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    w[i] = noisy ? ((float)(x >> 8) / 16777216.0f - 0.5f) * 4.0f : (float)(i % 5) - 2.0f;
  }
}

/* Fills the inputs of a session (a[i] = i/4 + k), runs it, copies y to `out`. */
static ingot_status_t run_into(ingot_session_t* s, int n, float k, float* out) {
  float* a = (float*)ingot_session_input_data(s, 0);
  for (int i = 0; i < n; ++i) a[i] = (float)i * 0.25f + k;
  ingot_status_t st = ingot_session_run(s);
  if (st == INGOT_OK) memcpy(out, ingot_session_output_data(s, 0), sizeof(float) * (size_t)n);
  return st;
}

/* Opens with `options` (file when path != NULL), runs once with its own
 * arena, copies y to out; returns in_place, or -1 on failure. */
static int open_run(const char* path, const void* data, size_t size, uint32_t flags, int n, float* out,
                    const char* what) {
  ingot_bundle_options_t options;
  memset(&options, 0, sizeof options);
  options.flags = flags;
  ingot_bundle_t* b = NULL;
  ingot_status_t st = path ? ingot_bundle_open_file(path, &options, &b) : ingot_bundle_open_memory(data, size, &options, &b);
  CHECK(st == INGOT_OK, "%s: open: %s", what, ingot_last_error());
  if (st != INGOT_OK) return -1;
  int in_place = ingot_bundle_weights_in_place(b);
  ingot_session_options_t so = {{0}, 1, NULL, 0, NULL, NULL};
  ingot_session_t* s = NULL;
  st = ingot_session_create(b, &so, &s);
  CHECK(st == INGOT_OK, "%s: session: %s", what, ingot_last_error());
  if (st == INGOT_OK) {
    st = run_into(s, n, 0.0f, out);
    CHECK(st == INGOT_OK, "%s: run: %s", what, ingot_last_error());
  }
  ingot_session_release(s);
  ingot_bundle_release(b);
  return st == INGOT_OK ? in_place : -1;
}

static void expect_refused_open(const char* path, const void* data, size_t size, uint32_t flags, const char* what) {
  ingot_bundle_options_t options;
  memset(&options, 0, sizeof options);
  options.flags = flags;
  ingot_bundle_t* b = NULL;
  ingot_status_t st = path ? ingot_bundle_open_file(path, &options, &b) : ingot_bundle_open_memory(data, size, &options, &b);
  CHECK(st != INGOT_OK && b == NULL && ingot_last_error()[0] != '\0', "%s: status %s, message '%s'", what,
        ingot_status_name(st), ingot_last_error());
  ingot_bundle_release(b);
}

/* ---- 1-4: codecs, the four ways to open, caller arenas, corrupt files ---- */

#define N1 1000
#define N2 4000
#define N3 2500

static void test_open_paths(const char* work, const uint8_t* so, size_t so_size) {
  static float w[N1], y_ref[N1], y[N1];
  fill_weights(w, N1, 1, 1);
  model_t m;
  uint8_t *raw = NULL, *raw2 = NULL, *zst = NULL, *autop = NULL, *auto_small = NULL;
  size_t raw_n = 0, raw2_n = 0, zst_n = 0, auto_n = 0, auto_small_n = 0;
  model_init(&m, N1, w, N1, so, so_size, INGOT_BUNDLE_WEIGHTS_RAW);
  if (!build(&m, &raw, &raw_n) || !build(&m, &raw2, &raw2_n)) {
    CHECK(0, "build raw");
    return;
  }
  CHECK(raw_n == raw2_n && memcmp(raw, raw2, raw_n) == 0, "raw weights: the same spec gave different bytes");
  uint64_t woff = 0;
  CHECK(weights_codec_of(raw, &woff) == INGOT_CODEC_NONE && woff % 64 == 0, "raw: codec %u at %llu",
        weights_codec_of(raw, NULL), (unsigned long long)woff);
  m.spec.weights_codec = INGOT_BUNDLE_WEIGHTS_ZSTD;
  m.spec.zstd_level = 19;
  CHECK(build(&m, &zst, &zst_n), "build zstd");
  m.spec.zstd_level = 0;
  CHECK(zst && weights_codec_of(zst, NULL) == INGOT_CODEC_ZSTD, "zstd weights: codec %u",
        zst ? weights_codec_of(zst, NULL) : 99);
  m.spec.weights_codec = INGOT_BUNDLE_WEIGHTS_AUTO;
  CHECK(build(&m, &autop, &auto_n), "build auto");
  CHECK(autop && weights_codec_of(autop, NULL) == INGOT_CODEC_NONE,
        "auto: noisy weights (zstd saves little) should be stored raw");
  static float wc[N1];
  fill_weights(wc, N1, 0, 2);
  model_t mc;
  model_init(&mc, N1, wc, N1, so, so_size, INGOT_BUNDLE_WEIGHTS_AUTO);
  CHECK(build(&mc, &auto_small, &auto_small_n), "build auto compressible");
  CHECK(auto_small && weights_codec_of(auto_small, NULL) == INGOT_CODEC_ZSTD,
        "auto: compressible weights should be stored with zstd");
  mc.spec.weights_codec = (ingot_bundle_weights_codec_t)7;
  uint8_t* bad = NULL;
  size_t bad_n = 0;
  CHECK(ingot_bundle_build(&mc.spec, &bad, &bad_n, NULL) == INGOT_ERROR_INVALID_ARGUMENT, "weights codec 7 accepted");

  /* The reference: the copying path. */
  CHECK(open_run(NULL, raw, raw_n, 0, N1, y_ref, "copy") == 0, "copying open must not be in place");
  int bad_values = 0;
  for (int i = 0; i < N1; ++i)
    if (fabsf(y_ref[i] - (2.0f * ((float)i * 0.25f + w[i]) + 1.0f)) > 1e-4f) bad_values++;
  CHECK(bad_values == 0, "reference output wrong in %d places", bad_values);

  /* Borrowed, 64-aligned: in place. */
  uint8_t* aligned = aligned_alloc(64, (raw_n + 63) & ~(size_t)63);
  memcpy(aligned, raw, raw_n);
  CHECK(open_run(NULL, aligned, raw_n, INGOT_BUNDLE_BORROW, N1, y, "borrowed") == 1, "borrowed: not in place");
  CHECK(memcmp(y, y_ref, sizeof y) == 0, "borrowed: outputs differ from the copying path");
  /* Borrowed, misaligned by one byte: a copy, same outputs. */
  uint8_t* shifted_buf = malloc(raw_n + 64);
  uint8_t* shifted = shifted_buf + ((64 - ((uintptr_t)shifted_buf % 64)) % 64) + 1;
  memcpy(shifted, raw, raw_n);
  CHECK(open_run(NULL, shifted, raw_n, INGOT_BUNDLE_BORROW, N1, y, "borrowed misaligned") == 0,
        "misaligned borrowed weights must be copied");
  CHECK(memcmp(y, y_ref, sizeof y) == 0, "borrowed misaligned: outputs differ");
  /* Files: mapped (in place), read (a copy), and zstd weights (a copy). */
  char path[1024], zpath[1024], cut_path[1024];
  snprintf(path, sizeof path, "%s/inplace_raw.ingot", work);
  snprintf(zpath, sizeof zpath, "%s/inplace_zstd.ingot", work);
  snprintf(cut_path, sizeof cut_path, "%s/inplace_cut.ingot", work);
  CHECK(write_file(path, raw, raw_n) && (!zst || write_file(zpath, zst, zst_n)), "write bundles");
  CHECK(open_run(path, NULL, 0, 0, N1, y, "mapped file") == 1, "mapped file: not in place");
  CHECK(memcmp(y, y_ref, sizeof y) == 0, "mapped file: outputs differ");
  CHECK(open_run(path, NULL, 0, INGOT_BUNDLE_READ_FILE, N1, y, "read file") == 0, "read file: in place");
  CHECK(memcmp(y, y_ref, sizeof y) == 0, "read file: outputs differ");
  if (zst) {
    CHECK(open_run(zpath, NULL, 0, 0, N1, y, "zstd file") == 0, "zstd weights cannot be in place");
    CHECK(memcmp(y, y_ref, sizeof y) == 0, "zstd file: outputs differ");
  }
  expect_refused_open(NULL, raw, raw_n, 0x80, "unknown flag");
  {
    char missing[1100];
    snprintf(missing, sizeof missing, "%s/no_such.ingot", work);
    expect_refused_open(missing, NULL, 0, 0, "missing file");
    CHECK(strstr(ingot_last_error(), "No such file") != NULL, "missing file: no errno text in '%s'",
          ingot_last_error());
  }

  /* A caller's arena: exact size, too small, misaligned. */
  {
    ingot_bundle_t* b = NULL;
    CHECK(ingot_bundle_open_file(path, NULL, &b) == INGOT_OK, "open: %s", ingot_last_error());
    uint64_t need = ingot_bundle_arena_bytes(b);
    uint8_t* arena = aligned_alloc(64, (size_t)((need + 64 + 63) & ~(uint64_t)63));
    ingot_session_options_t so = {{0}, 1, arena, need, NULL, NULL};
    ingot_session_t* s = NULL;
    ingot_status_t st = ingot_session_create(b, &so, &s);
    CHECK(st == INGOT_OK, "caller arena: %s", ingot_last_error());
    if (st == INGOT_OK) {
      const uint8_t* out = (const uint8_t*)ingot_session_output_data(s, 0);
      CHECK(out >= arena && out < arena + need, "caller arena: the output is not in the caller's arena");
      CHECK(run_into(s, N1, 0.0f, y) == INGOT_OK && memcmp(y, y_ref, sizeof y) == 0,
            "caller arena: outputs differ (%s)", ingot_last_error());
    }
    ingot_session_release(s);
    so.arena_bytes = need - 1;
    s = NULL;
    st = ingot_session_create(b, &so, &s);
    CHECK(st == INGOT_ERROR_INVALID_ARGUMENT && !s && strstr(ingot_last_error(), "ingot_bundle_arena_bytes"),
          "arena too small: %s '%s'", ingot_status_name(st), ingot_last_error());
    so.arena = arena + 8;
    so.arena_bytes = need;
    st = ingot_session_create(b, &so, &s);
    CHECK(st == INGOT_ERROR_INVALID_ARGUMENT && !s && strstr(ingot_last_error(), "aligned"),
          "misaligned arena: %s '%s'", ingot_status_name(st), ingot_last_error());
    ingot_session_release(s);
    free(arena);
    ingot_bundle_release(b);
  }

  /* Corrupt raw bundles, through the mapped file and borrowed memory: every
   * 7th byte flipped (all of the weights' in its section), truncations. */
  int refused = 0, tried = 0;
  for (size_t at = 0; at < raw_n; at += (at >= woff && at < woff + 4 * N1) ? 1 : 7) {
    memcpy(aligned, raw, raw_n);
    aligned[at] ^= 0x10;
    ++tried;
    ingot_bundle_options_t o;
    memset(&o, 0, sizeof o);
    o.flags = INGOT_BUNDLE_BORROW;
    ingot_bundle_t* b = NULL;
    ingot_status_t st = ingot_bundle_open_memory(aligned, raw_n, &o, &b);
    refused += st != INGOT_OK && !b && ingot_last_error()[0];
    ingot_bundle_release(b);
    if (at % 49 == 0 || (at >= woff && at < woff + 4 * N1 && at % 97 == 0)) {
      write_file(cut_path, aligned, raw_n);
      expect_refused_open(cut_path, NULL, 0, 0, "flipped byte, mapped file");
    }
  }
  CHECK(refused == tried, "flipped bytes: %d of %d refused", refused, tried);
  size_t cuts[] = {raw_n - 1, (size_t)woff + 100, (size_t)woff, 200, 64, 10, 0};
  for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; ++k) {
    write_file(cut_path, raw, cuts[k]);
    expect_refused_open(cut_path, NULL, 0, 0, "truncated file");
    expect_refused_open(NULL, aligned, cuts[k], INGOT_BUNDLE_BORROW, "truncated borrowed");
  }
  free(shifted_buf);
  free(aligned);
  free(raw);
  free(raw2);
  free(zst);
  free(autop);
  free(auto_small);
}

/* ---- 5: pools ------------------------------------------------------------ */

typedef struct trio_t {
  ingot_bundle_t* b[3];
  int n[3];
  float* y_ref[3];
  uint64_t largest; /* arena bytes, rounded up to 64 */
} trio_t;

static void trio_check(trio_t* t, ingot_session_t* s, int i, float k, const char* what) {
  float* y = malloc(sizeof(float) * (size_t)t->n[i]);
  ingot_status_t st = run_into(s, t->n[i], k, y);
  CHECK(st == INGOT_OK, "%s: bundle %d: run: %s", what, i, ingot_last_error());
  int bad = 0;
  for (int j = 0; j < t->n[i] && st == INGOT_OK; ++j) { /* y_ref is at k = 0; y moves by 2k (rounded) */
    float want = t->y_ref[i][j] + 2.0f * k;
    bad += fabsf(y[j] - want) > 1e-5f * (1.0f + fabsf(want));
  }
  CHECK(bad == 0, "%s: bundle %d: %d outputs differ from its own session's", what, i, bad);
  free(y);
}

static void test_pools(trio_t* t) {
  const ingot_bundle_t* all[3] = {t->b[0], t->b[1], t->b[2]};
  /* (a) One pool of exactly the largest arena; the three share one arena. */
  ingot_pool_t* pool = NULL;
  CHECK(ingot_pool_create(t->largest, (ingot_allocator_t){0}, &pool) == INGOT_OK, "pool: %s", ingot_last_error());
  if (!pool) return;
  ingot_arena_t* shared = NULL;
  CHECK(ingot_pool_arena_create(pool, all, 3, &shared) == INGOT_OK, "shared arena: %s", ingot_last_error());
  CHECK(ingot_arena_bytes(shared) == t->largest, "shared arena of %llu bytes, want %llu",
        (unsigned long long)ingot_arena_bytes(shared), (unsigned long long)t->largest);
  ingot_session_t* s[3] = {NULL, NULL, NULL};
  for (int i = 0; i < 3; ++i) {
    ingot_session_options_t so = {{0}, 1, NULL, 0, NULL, shared};
    CHECK(ingot_session_create(t->b[i], &so, &s[i]) == INGOT_OK, "shared session %d: %s", i, ingot_last_error());
  }
  CHECK(ingot_pool_used_bytes(pool) == t->largest && ingot_pool_high_water_bytes(pool) == t->largest,
        "three sessions in one arena: used %llu, high water %llu, want %llu",
        (unsigned long long)ingot_pool_used_bytes(pool), (unsigned long long)ingot_pool_high_water_bytes(pool),
        (unsigned long long)t->largest);
  for (int round = 0; round < 2; ++round)
    for (int i = 0; i < 3; ++i)
      if (s[i]) trio_check(t, s[i], i, (float)(round * 3 + i), "shared arena");
  /* Beyond the budget: a session with its own arena, another arena. */
  {
    ingot_session_options_t so = {{0}, 1, NULL, 0, pool, NULL};
    ingot_session_t* extra = NULL;
    ingot_status_t st = ingot_session_create(t->b[0], &so, &extra);
    CHECK(st == INGOT_ERROR_LIMIT && !extra && strstr(ingot_last_error(), "budget"),
          "a session beyond the budget: %s '%s'", ingot_status_name(st), ingot_last_error());
    ingot_arena_t* more = NULL;
    st = ingot_pool_arena_create(pool, all, 1, &more);
    CHECK(st == INGOT_ERROR_LIMIT && !more, "an arena beyond the budget: %s", ingot_status_name(st));
    CHECK(ingot_pool_used_bytes(pool) == t->largest, "a refusal took memory");
  }
  /* Two options at once; a GPU-free bundle with a NULL arena entry. */
  {
    ingot_session_options_t so = {{0}, 1, NULL, 0, pool, shared};
    ingot_session_t* x = NULL;
    CHECK(ingot_session_create(t->b[0], &so, &x) == INGOT_ERROR_INVALID_ARGUMENT && !x, "pool and shared arena");
  }
  /* A run while another session of the arena runs (simulated): refused. */
  if (s[0] && s[1]) {
    CHECK(ingot_rt_arena_enter(shared), "enter");
    ingot_status_t st = ingot_session_run(s[1]);
    CHECK(st == INGOT_ERROR_INVALID_ARGUMENT && strstr(ingot_last_error(), "running"),
          "a second run on a busy shared arena: %s '%s'", ingot_status_name(st), ingot_last_error());
    ingot_rt_arena_leave(shared);
    trio_check(t, s[1], 1, 0.5f, "after the busy arena");
  }
  /* The arena goes back when the handle and every session are released. */
  ingot_arena_release(shared);
  CHECK(ingot_pool_used_bytes(pool) == t->largest, "arena freed while sessions use it");
  for (int i = 0; i < 3; ++i) ingot_session_release(s[i]);
  CHECK(ingot_pool_used_bytes(pool) == 0, "used %llu after everything was released",
        (unsigned long long)ingot_pool_used_bytes(pool));
  /* A shared arena too small for a bundle. */
  {
    ingot_arena_t* small = NULL;
    int smallest = t->n[0] <= t->n[2] ? 0 : 2;
    CHECK(ingot_pool_arena_create(pool, &all[smallest], 1, &small) == INGOT_OK, "small arena");
    ingot_session_options_t so = {{0}, 1, NULL, 0, NULL, small};
    ingot_session_t* x = NULL;
    ingot_status_t st = ingot_session_create(t->b[1], &so, &x);
    CHECK(st == INGOT_ERROR_INVALID_ARGUMENT && !x, "a bundle larger than its shared arena: %s",
          ingot_status_name(st));
    ingot_arena_release(small);
  }
  ingot_pool_release(pool);

  /* (b) The same budget, sessions with arenas of their own, one after another. */
  pool = NULL;
  CHECK(ingot_pool_create(t->largest, (ingot_allocator_t){0}, &pool) == INGOT_OK, "pool");
  for (int i = 0; i < 3 && pool; ++i) {
    ingot_session_options_t so = {{0}, 1, NULL, 0, pool, NULL};
    ingot_session_t* x = NULL;
    CHECK(ingot_session_create(t->b[i], &so, &x) == INGOT_OK, "sequential %d: %s", i, ingot_last_error());
    if (x) trio_check(t, x, i, 1.0f, "sequential pool sessions");
    ingot_session_release(x);
  }
  CHECK(pool && ingot_pool_high_water_bytes(pool) == t->largest && ingot_pool_used_bytes(pool) == 0,
        "sequential: high water %llu, want %llu", (unsigned long long)ingot_pool_high_water_bytes(pool),
        (unsigned long long)t->largest);
  ingot_pool_release(pool);

  /* (c) Over a caller's buffer of the largest arena: both ways again, then
   * two small sessions side by side where they fit and the big one refused. */
  uint8_t* buffer = aligned_alloc(64, (size_t)t->largest);
  pool = NULL;
  CHECK(ingot_pool_create_in(buffer, t->largest, (ingot_allocator_t){0}, &pool) == INGOT_OK, "buffer pool: %s",
        ingot_last_error());
  if (pool) {
    shared = NULL;
    CHECK(ingot_pool_arena_create(pool, all, 3, &shared) == INGOT_OK, "buffer pool arena: %s", ingot_last_error());
    for (int i = 0; i < 3 && shared; ++i) {
      ingot_session_options_t so = {{0}, 1, NULL, 0, NULL, shared};
      ingot_session_t* x = NULL;
      CHECK(ingot_session_create(t->b[i], &so, &x) == INGOT_OK, "buffer shared %d: %s", i, ingot_last_error());
      if (x) {
        const uint8_t* out = (const uint8_t*)ingot_session_output_data(x, 0);
        CHECK(out >= buffer && out < buffer + t->largest, "buffer pool: the output is outside the buffer");
        trio_check(t, x, i, 2.0f, "buffer pool, shared arena");
      }
      ingot_session_release(x);
    }
    ingot_arena_release(shared);
    ingot_session_t* x[3] = {NULL, NULL, NULL};
    ingot_session_options_t so = {{0}, 1, NULL, 0, pool, NULL};
    CHECK(ingot_session_create(t->b[0], &so, &x[0]) == INGOT_OK, "buffer pool: a small session: %s",
          ingot_last_error());
    ingot_status_t st = ingot_session_create(t->b[1], &so, &x[1]);
    CHECK(st == INGOT_ERROR_LIMIT && !x[1], "buffer pool: the largest beside another: %s", ingot_status_name(st));
    if (x[0]) trio_check(t, x[0], 0, 3.0f, "buffer pool, own arena");
    ingot_session_release(x[0]);
    CHECK(ingot_session_create(t->b[1], &so, &x[1]) == INGOT_OK, "buffer pool: the largest alone: %s",
          ingot_last_error());
    if (x[1]) trio_check(t, x[1], 1, 3.0f, "buffer pool, own arena");
    ingot_session_release(x[1]);
    CHECK(ingot_pool_high_water_bytes(pool) == t->largest && ingot_pool_used_bytes(pool) == 0,
          "buffer pool: high water %llu used %llu", (unsigned long long)ingot_pool_high_water_bytes(pool),
          (unsigned long long)ingot_pool_used_bytes(pool));
    ingot_pool_release(pool);
  }
  pool = NULL;
  CHECK(ingot_pool_create_in(buffer + 8, 4096, (ingot_allocator_t){0}, &pool) == INGOT_ERROR_INVALID_ARGUMENT &&
            !pool, "a misaligned pool buffer");
  free(buffer);
}

/* Every allocation of pool, arena and session creation failing in turn:
 * OUT_OF_MEMORY with a message and NULL outputs, nothing left in use. */
typedef struct failing_t {
  long calls, fail_at, live;
} failing_t;

static void* failing_fn(void* self, void* ptr, size_t size) {
  failing_t* f = (failing_t*)self;
  if (!size) {
    if (ptr) f->live--;
    free(ptr);
    return NULL;
  }
  if (f->calls++ == f->fail_at) return NULL;
  void* p = aligned_alloc(64, (size + 63) & ~(size_t)63);
  if (p) f->live++;
  return p;
}

static void test_pool_alloc_failure(trio_t* t) {
  const ingot_bundle_t* all[3] = {t->b[0], t->b[1], t->b[2]};
  int reached_end = 0;
  for (long n = 0; n < 64 && !reached_end; ++n) {
    failing_t f = {0, n, 0};
    ingot_allocator_t a = {&f, failing_fn};
    ingot_pool_t* pool = (ingot_pool_t*)(uintptr_t)1;
    ingot_arena_t* arena = (ingot_arena_t*)(uintptr_t)1;
    ingot_session_t* s = (ingot_session_t*)(uintptr_t)1;
    ingot_session_t* own = (ingot_session_t*)(uintptr_t)1;
    ingot_status_t st = ingot_pool_create(t->largest * 2, a, &pool);
    if (st == INGOT_OK) st = ingot_pool_arena_create(pool, all, 3, &arena);
    if (st == INGOT_OK) {
      ingot_session_options_t so = {a, 1, NULL, 0, NULL, arena};
      st = ingot_session_create(t->b[1], &so, &s);
    }
    if (st == INGOT_OK) {
      ingot_session_options_t so = {a, 1, NULL, 0, pool, NULL};
      st = ingot_session_create(t->b[0], &so, &own);
    }
    if (st == INGOT_OK) {
      reached_end = 1;
      trio_check(t, s, 1, 0.0f, "allocation failure pass");
      trio_check(t, own, 0, 0.0f, "allocation failure pass");
      ingot_session_release(own);
      ingot_session_release(s);
      ingot_arena_release(arena);
      CHECK(ingot_pool_used_bytes(pool) == 0, "used after release");
      ingot_pool_release(pool);
    } else {
      CHECK(st == INGOT_ERROR_OUT_OF_MEMORY && ingot_last_error()[0], "failing allocation %ld: %s '%s'", n,
            ingot_status_name(st), ingot_last_error());
      if (pool == NULL) { /* failed at the pool */
      } else if (arena == NULL) {
        CHECK(ingot_pool_used_bytes(pool) == 0, "N=%ld: a failed arena took memory", n);
        ingot_pool_release(pool);
      } else if (s == NULL) {
        ingot_arena_release(arena);
        CHECK(ingot_pool_used_bytes(pool) == 0, "N=%ld: a failed shared session kept the arena", n);
        ingot_pool_release(pool);
      } else {
        CHECK(own == NULL, "N=%ld: failed session set its output", n);
        ingot_session_release(s);
        ingot_arena_release(arena);
        CHECK(ingot_pool_used_bytes(pool) == 0, "N=%ld: a failed pool session kept its arena", n);
        ingot_pool_release(pool);
      }
    }
    CHECK(f.live == 0, "N=%ld: %ld allocations leaked", n, f.live);
  }
  CHECK(reached_end, "never got through with up to 64 failing allocations");
}

/* ---- 6: peak memory while opening, in a child process ---------------------- */

/* VmHWM and VmRSS in KiB; 0 when /proc is not there. */
static int read_vm(long* hwm, long* rss) {
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  *hwm = *rss = 0;
  while (fgets(line, sizeof line, f)) {
    sscanf(line, "VmHWM: %ld kB", hwm);
    sscanf(line, "VmRSS: %ld kB", rss);
  }
  fclose(f);
  return *hwm > 0 && *rss > 0;
}

/* The child: opens, runs, prints "hwm rss in_place" in KiB. */
static int rss_child(const char* path, int read_whole) {
  ingot_bundle_options_t options;
  memset(&options, 0, sizeof options);
  options.flags = read_whole ? INGOT_BUNDLE_READ_FILE : 0;
  ingot_bundle_t* b = NULL;
  if (ingot_bundle_open_file(path, &options, &b) != INGOT_OK) {
    fprintf(stderr, "open: %s\n", ingot_last_error());
    return 1;
  }
  ingot_session_options_t so = {{0}, 1, NULL, 0, NULL, NULL};
  ingot_session_t* s = NULL;
  float y[N1];
  if (ingot_session_create(b, &so, &s) != INGOT_OK || run_into(s, N1, 0.0f, y) != INGOT_OK) {
    fprintf(stderr, "run: %s\n", ingot_last_error());
    return 1;
  }
  long hwm = 0, rss = 0;
  if (!read_vm(&hwm, &rss)) return 3;
  printf("%ld %ld %d\n", hwm, rss, ingot_bundle_weights_in_place(b));
  ingot_session_release(s);
  ingot_bundle_release(b);
  return 0;
}

static int run_child(const char* self, const char* path, int read_whole, long* hwm, long* rss, int* in_place) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "\"%s\" --rss \"%s\"%s", self, path, read_whole ? " read" : "");
  FILE* p = popen(cmd, "r");
  if (!p) return 0;
  int got = fscanf(p, "%ld %ld %d", hwm, rss, in_place);
  int rc = pclose(p);
  return got == 3 && rc == 0;
}

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif

static void test_peak_memory(const char* self, const char* work, const uint8_t* so, size_t so_size) {
#ifdef SANITIZED
  (void)self, (void)work, (void)so, (void)so_size;
  printf("peak memory: not measured under AddressSanitizer (its shadow memory is in the figures)\n");
  return;
#endif
  long probe_hwm, probe_rss;
  if (!read_vm(&probe_hwm, &probe_rss)) {
    printf("peak memory: /proc/self/status not available, skipped\n");
    return;
  }
  const int64_t wn = 16 << 20; /* 64 MiB of fp32 weights; the kernel reads N1 of them */
  float* w = malloc(sizeof(float) * (size_t)wn);
  fill_weights(w, wn, 1, 3);
  model_t m;
  model_init(&m, N1, w, wn, so, so_size, INGOT_BUNDLE_WEIGHTS_RAW);
  uint8_t* data = NULL;
  size_t n = 0;
  char path[1024];
  snprintf(path, sizeof path, "%s/inplace_big.ingot", work);
  int built = build(&m, &data, &n) && write_file(path, data, n);
  free(data);
  free(w);
  CHECK(built, "build the 64 MiB bundle");
  if (!built) return;
  long hwm = 0, rss = 0, c_hwm = 0, c_rss = 0;
  int in_place = 0, c_in_place = 1;
  CHECK(run_child(self, path, 0, &hwm, &rss, &in_place), "child (mapped)");
  CHECK(run_child(self, path, 1, &c_hwm, &c_rss, &c_in_place), "child (read file)");
  double ratio = rss ? (double)hwm / (double)rss : 0, c_ratio = c_rss ? (double)c_hwm / (double)c_rss : 0;
  printf("peak memory, 64 MiB raw weights: mapped %ld KiB peak / %ld KiB steady = %.3f (in place %d); "
         "read file %ld / %ld = %.3f\n", hwm, rss, ratio, in_place, c_hwm, c_rss, c_ratio);
  CHECK(in_place == 1 && c_in_place == 0, "in place: mapped %d, read %d", in_place, c_in_place);
  CHECK(rss > 60 * 1024, "steady state %ld KiB does not hold the weights", rss);
  CHECK(ratio <= 1.1, "peak while opening %.3fx the steady state (limit 1.1)", ratio);
  CHECK(c_ratio > 1.5, "the control (a read file and a copy of the weights) shows %.3fx: the measure is blind",
        c_ratio);
  remove(path);
}

int main(int argc, char** argv) {
  if (argc >= 3 && strcmp(argv[1], "--rss") == 0) return rss_child(argv[2], argc > 3);
  if (argc != 4) {
    fprintf(stderr, "usage: %s <cc> <source root> <work dir>\n", argv[0]);
    return 2;
  }
  const int sizes[3] = {N1, N2, N3};
  uint8_t* so[3] = {NULL, NULL, NULL};
  size_t so_size[3] = {0, 0, 0};
  for (int i = 0; i < 3; ++i)
    if (!build_so(argv[1], argv[2], argv[3], sizes[i], &so[i], &so_size[i])) {
      fprintf(stderr, "cannot build the kernel library (N=%d)\n", sizes[i]);
      return 1;
    }

  test_open_paths(argv[3], so[0], so_size[0]);

  /* Three bundles of different arena sizes, mapped, and each one's outputs
   * from a session with an arena of its own (the reference). */
  trio_t t;
  memset(&t, 0, sizeof t);
  static float w[N2];
  fill_weights(w, N2, 1, 4);
  char path[1024];
  for (int i = 0; i < 3; ++i) {
    model_t m;
    model_init(&m, sizes[i], w, sizes[i], so[i], so_size[i], INGOT_BUNDLE_WEIGHTS_AUTO);
    uint8_t* data = NULL;
    size_t n = 0;
    snprintf(path, sizeof path, "%s/inplace_trio_%d.ingot", argv[3], i);
    if (!build(&m, &data, &n) || !write_file(path, data, n) ||
        ingot_bundle_open_file(path, NULL, &t.b[i]) != INGOT_OK) {
      fprintf(stderr, "bundle %d: %s\n", i, ingot_last_error());
      return 1;
    }
    free(data);
    t.n[i] = sizes[i];
    t.y_ref[i] = malloc(sizeof(float) * (size_t)sizes[i]);
    CHECK(open_run(path, NULL, 0, 0, sizes[i], t.y_ref[i], "reference") == 1, "trio %d not in place", i);
    uint64_t a = (ingot_bundle_arena_bytes(t.b[i]) + 63) & ~(uint64_t)63;
    if (a > t.largest) t.largest = a;
  }
  CHECK(t.largest == (ingot_bundle_arena_bytes(t.b[1]) + 63) / 64 * 64, "the middle bundle should be the largest");
  test_pools(&t);
  test_pool_alloc_failure(&t);
  for (int i = 0; i < 3; ++i) {
    ingot_bundle_release(t.b[i]);
    free(t.y_ref[i]);
  }

  test_peak_memory(argv[0], argv[3], so[0], so_size[0]);
  for (int i = 0; i < 3; ++i) free(so[i]);
  if (g_failures) {
    fprintf(stderr, "%d failure(s)\n", g_failures);
    return 1;
  }
  printf("inplace_pool: ok\n");
  return 0;
}
