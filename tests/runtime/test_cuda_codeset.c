/* The CUDA code set (runtime/ingot_format.h) as the CUDA loader row reads it.
 *
 *   test_cuda_codeset                     the rule and the checks, no driver:
 *     hand-made code sets (good; every truncation; bad offsets, alignment,
 *     counts, kinds, magic, version; a CUBIN that is not one) go through
 *     ingot_rt_cuda_code_pick for devices sm_50..sm_120; the row's rank
 *     (ingot_rt_cuda_rank_for) agrees with the pick on the code set the
 *     compiler ships for each target; every byte of a good set flipped
 *     never crashes; bare CUBIN and PTX are still taken.
 *   test_cuda_codeset FAKE_DRIVER SM      through a whole bundle, with the
 *     fake driver (fake_cuda_driver.c) posing as a device of compute
 *     capability SM: which variant is picked, which code cuModuleLoadData
 *     gets, a session created and run, the reason when nothing runs. */
#define _DEFAULT_SOURCE 1
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packager/packager.h"
#include "runtime/ingot.h"
#include "runtime/ingot_format.h"
#include "runtime/loader.h" /* the code-set rule, tested directly */

static int g_failures;
#define CHECK(cond, ...)                                                \
  do {                                                                  \
    if (!(cond)) {                                                      \
      fprintf(stderr, "%s:%d: FAILED %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                     \
      fprintf(stderr, "\n");                                            \
      ++g_failures;                                                     \
    }                                                                   \
  } while (0)

/* ---- Hand-made codes. */

/* The ELF header of a CUBIN as CUDA 13's ptxas writes it (ABI version 8, sm
 * in e_flags bits 8..15), padded to 64 bytes. */
static size_t make_cubin(uint8_t* out, uint32_t sm) {
  memset(out, 0, 64);
  static const uint8_t ident[9] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0x41, 8};
  memcpy(out, ident, sizeof ident);
  out[16] = 2;   /* ET_EXEC */
  out[18] = 190; /* EM_CUDA */
  uint32_t flags = 0x06000004u | (sm << 8);
  memcpy(out + 48, &flags, sizeof flags);
  return 64;
}

static size_t make_ptx(uint8_t* out, uint32_t sm) {
  int n = sprintf((char*)out,
                  ".version 8.0\n.target sm_%u\n.address_size 64\n"
                  ".visible .entry add_f32(.param .u64 a, .param .u64 w, .param .u64 y)\n{\n  ret;\n}\n", sm);
  return (size_t)n + 1; /* with its NUL */
}

typedef struct entry_spec_t {
  uint32_t kind, arch;
} entry_spec_t;

/* header, entries, then each code at a 16-aligned offset. Returns the size. */
static size_t make_set(uint8_t* out, const entry_spec_t* specs, uint32_t count) {
  memset(out, 0, 4096);
  ingot_gpu_code_header_t h;
  memcpy(h.magic, INGOT_GPU_CODE_MAGIC, 8);
  h.version = INGOT_GPU_CODE_VERSION;
  h.count = count;
  memcpy(out, &h, sizeof h);
  size_t at = sizeof h + count * sizeof(ingot_gpu_code_entry_t);
  for (uint32_t i = 0; i < count; ++i) {
    at = (at + 15) & ~(size_t)15;
    size_t n = specs[i].kind == INGOT_GPU_CODE_CUBIN ? make_cubin(out + at, specs[i].arch)
                                                      : make_ptx(out + at, specs[i].arch);
    ingot_gpu_code_entry_t e = {specs[i].kind, specs[i].arch, at, n};
    memcpy(out + sizeof h + i * sizeof e, &e, sizeof e);
    at += n;
  }
  return at;
}

/* The code set the compiler ships for sm: a CUBIN for it plus its PTX. */
static size_t make_shipped(uint8_t* out, uint32_t sm) {
  entry_spec_t specs[2] = {{INGOT_GPU_CODE_CUBIN, sm}, {INGOT_GPU_CODE_PTX, sm}};
  return make_set(out, specs, 2);
}

static ingot_gpu_code_entry_t* entry(uint8_t* set, uint32_t i) {
  return (ingot_gpu_code_entry_t*)(set + sizeof(ingot_gpu_code_header_t) + i * sizeof(ingot_gpu_code_entry_t));
}

/* pick on a copy of exactly `size` bytes (so reading past it is caught by
 * tools like ASan). */
static int pick(const uint8_t* code, size_t size, uint32_t sm, ingot_rt_cuda_code_t* out, char* why, size_t cap) {
  uint8_t* copy = malloc(size ? size : 1);
  memcpy(copy, code, size);
  int r = ingot_rt_cuda_code_pick(copy, size, sm, out, why, cap);
  if (r == INGOT_RT_CUDA_CODE_OK && out->data) out->data = code + (out->data - copy);
  free(copy);
  return r;
}

/* ---- The rule, driver-free. */

typedef struct choice_t {
  uint32_t device;
  int result;
  uint32_t kind, arch;
} choice_t;

static void test_choice(void) {
  static uint8_t set[4096];
  char why[192];
  ingot_rt_cuda_code_t got;
  /* sm_90 shipped: CUBIN on sm_90, PTX on later majors, nothing on sm_8x. */
  size_t n = make_shipped(set, 90);
  static const choice_t sm90[] = {
      {90, INGOT_RT_CUDA_CODE_OK, INGOT_GPU_CODE_CUBIN, 90},  {100, INGOT_RT_CUDA_CODE_OK, INGOT_GPU_CODE_PTX, 90},
      {120, INGOT_RT_CUDA_CODE_OK, INGOT_GPU_CODE_PTX, 90},   {89, INGOT_RT_CUDA_CODE_NO_MATCH, 0, 0},
      {80, INGOT_RT_CUDA_CODE_NO_MATCH, 0, 0},                {0, INGOT_RT_CUDA_CODE_OK, 0, 0},
  };
  for (size_t i = 0; i < sizeof sm90 / sizeof sm90[0]; ++i) {
    const choice_t* c = &sm90[i];
    int r = pick(set, n, c->device, &got, why, sizeof why);
    CHECK(r == c->result && got.kind == c->kind && got.arch == c->arch, "sm_90 set on sm_%u: %d %u %u (%s)",
          c->device, r, got.kind, got.arch, why);
    if (r == INGOT_RT_CUDA_CODE_OK && c->device)
      CHECK(got.data >= set && got.data + got.size <= set + n && got.size > 0, "sm_%u: the code lies in the set",
            c->device);
  }
  pick(set, n, 80, &got, why, sizeof why);
  CHECK(strstr(why, "device sm_80") && strstr(why, "CUBIN sm_90") && strstr(why, "PTX compute_90"), "why: %s", why);
  pick(set, n, 100, &got, why, sizeof why);
  CHECK(strstr(why, "PTX compute_90") != NULL, "why: %s", why);
  /* sm_80 shipped: its CUBIN on every sm_8x, PTX on sm_90. */
  n = make_shipped(set, 80);
  static const choice_t sm80[] = {
      {80, INGOT_RT_CUDA_CODE_OK, INGOT_GPU_CODE_CUBIN, 80}, {86, INGOT_RT_CUDA_CODE_OK, INGOT_GPU_CODE_CUBIN, 80},
      {89, INGOT_RT_CUDA_CODE_OK, INGOT_GPU_CODE_CUBIN, 80}, {90, INGOT_RT_CUDA_CODE_OK, INGOT_GPU_CODE_PTX, 80},
      {75, INGOT_RT_CUDA_CODE_NO_MATCH, 0, 0},
  };
  for (size_t i = 0; i < sizeof sm80 / sizeof sm80[0]; ++i) {
    const choice_t* c = &sm80[i];
    int r = pick(set, n, c->device, &got, why, sizeof why);
    CHECK(r == c->result && got.kind == c->kind && got.arch == c->arch, "sm_80 set on sm_%u: %d %u %u (%s)",
          c->device, r, got.kind, got.arch, why);
  }
  /* sm_86 shipped: not on sm_80 (a lower minor), its CUBIN on sm_89. */
  n = make_shipped(set, 86);
  CHECK(pick(set, n, 80, &got, why, sizeof why) == INGOT_RT_CUDA_CODE_NO_MATCH, "sm_86 on sm_80: %s", why);
  CHECK(pick(set, n, 89, &got, why, sizeof why) == INGOT_RT_CUDA_CODE_OK && got.kind == INGOT_GPU_CODE_CUBIN,
        "sm_86 on sm_89: %s", why);
  /* Several of each: the best CUBIN of the major, else the highest PTX. */
  entry_spec_t many[4] = {{INGOT_GPU_CODE_PTX, 80}, {INGOT_GPU_CODE_CUBIN, 80}, {INGOT_GPU_CODE_CUBIN, 86},
                          {INGOT_GPU_CODE_PTX, 86}};
  n = make_set(set, many, 4);
  CHECK(pick(set, n, 89, &got, why, sizeof why) == INGOT_RT_CUDA_CODE_OK && got.kind == INGOT_GPU_CODE_CUBIN &&
            got.arch == 86, "many on sm_89: %u %u", got.kind, got.arch);
  CHECK(pick(set, n, 80, &got, why, sizeof why) == INGOT_RT_CUDA_CODE_OK && got.kind == INGOT_GPU_CODE_CUBIN &&
            got.arch == 80, "many on sm_80: %u %u", got.kind, got.arch);
  CHECK(pick(set, n, 90, &got, why, sizeof why) == INGOT_RT_CUDA_CODE_OK && got.kind == INGOT_GPU_CODE_PTX &&
            got.arch == 86, "many on sm_90: %u %u", got.kind, got.arch);
  /* A PTX-only set. */
  entry_spec_t ptx_only[1] = {{INGOT_GPU_CODE_PTX, 90}};
  n = make_set(set, ptx_only, 1);
  CHECK(pick(set, n, 90, &got, why, sizeof why) == INGOT_RT_CUDA_CODE_OK && got.kind == INGOT_GPU_CODE_PTX,
        "PTX only: %s", why);
}

/* The row's rank and the pick agree on the code set the compiler ships for
 * every target the compiler accepts, on devices from sm_50 to sm_120. */
static void test_rank_agrees(void) {
  static const uint32_t targets[] = {80, 86, 89, 90};
  static const uint32_t devices[] = {50, 60, 70, 75, 80, 86, 87, 89, 90, 100, 103, 110, 120};
  static uint8_t set[4096];
  int checked = 0;
  for (size_t t = 0; t < sizeof targets / sizeof targets[0]; ++t) {
    size_t n = make_shipped(set, targets[t]);
    char target[32];
    snprintf(target, sizeof target, "cuda -arch=sm_%u", targets[t]);
    for (size_t d = 0; d < sizeof devices / sizeof devices[0]; ++d, ++checked) {
      char why[192], why2[192];
      ingot_rt_cuda_code_t got;
      int r = pick(set, n, devices[d], &got, why, sizeof why);
      int rank = ingot_rt_cuda_rank_for(target, devices[d], why2, sizeof why2);
      CHECK((r == INGOT_RT_CUDA_CODE_OK) == (rank > 0), "%s on sm_%u: pick %d (%s), rank %d (%s)", target,
            devices[d], r, why, rank, why2);
      if (rank > 0) {
        /* Above every CPU rank; a CUBIN above PTX. */
        CHECK(rank >= 1000000, "%s on sm_%u: rank %d", target, devices[d], rank);
        CHECK((rank >= 2000000) == (got.kind == INGOT_GPU_CODE_CUBIN), "%s on sm_%u: rank %d, picked kind %u",
              target, devices[d], rank, got.kind);
      } else {
        CHECK(strstr(why2, "code for sm_") != NULL, "rank 0 says why: %s", why2);
      }
    }
  }
  /* Plain "cuda" is sm_80, as the compiler reads it; other strings are not
   * CUDA targets. */
  char why[128];
  CHECK(ingot_rt_cuda_rank_for("cuda", 86, why, sizeof why) == ingot_rt_cuda_rank_for("cuda -arch=sm_80", 86, NULL, 0),
        "plain cuda: %s", why);
  static const char* const not_cuda[] = {"llvm x86-64", "rocm -mcpu=gfx90a", "cuda -arch=sm_", "cuda -arch=sm_9x",
                                         "cuda -arch=compute_90", "cudax", ""};
  for (size_t i = 0; i < sizeof not_cuda / sizeof not_cuda[0]; ++i)
    CHECK(ingot_rt_cuda_rank_for(not_cuda[i], 90, why, sizeof why) == 0 && strstr(why, "not a CUDA target"),
          "'%s': %s", not_cuda[i], why);
  CHECK(ingot_rt_cuda_rank_for(NULL, 90, NULL, 0) == 0, "NULL target");
  printf("rank and pick agree on %d target/device pairs\n", checked);
}

/* Corrupt sets: each refused as CORRUPT with a reason, whatever the device. */
static void expect_corrupt(const uint8_t* set, size_t n, const char* what, const char* says) {
  char why[192];
  ingot_rt_cuda_code_t got;
  for (uint32_t sm = 0; sm <= 100; sm += 90) {
    int r = pick(set, n, sm, &got, why, sizeof why);
    CHECK(r == INGOT_RT_CUDA_CODE_CORRUPT && got.data == NULL, "%s (sm %u): %d (%s)", what, sm, r, why);
    CHECK(!says || strstr(why, says), "%s: '%s' lacks '%s'", what, why, says);
  }
}

static void test_corrupt(void) {
  static uint8_t good[4096], bad[4096];
  const size_t n = make_shipped(good, 90);
  /* Every truncation. */
  for (size_t cut = 0; cut < n; ++cut) {
    char what[64];
    snprintf(what, sizeof what, "cut to %zu of %zu bytes", cut, n);
    expect_corrupt(good, cut, what, NULL);
  }
#define MUTATE(what, says, stmt) \
  do {                           \
    memcpy(bad, good, n);        \
    stmt;                        \
    expect_corrupt(bad, n, what, says); \
  } while (0)
  MUTATE("wrong magic", "neither a code set", bad[0] = 'X');
  MUTATE("version 2", "version 2", ((ingot_gpu_code_header_t*)bad)->version = 2);
  MUTATE("count 0", "0 entries", ((ingot_gpu_code_header_t*)bad)->count = 0);
  MUTATE("count 9", "9 entries", ((ingot_gpu_code_header_t*)bad)->count = 9);
  MUTATE("count 8: codes inside the table", "outside", ((ingot_gpu_code_header_t*)bad)->count = 8;
         expect_corrupt(bad, 16 + 3 * 24, "count 8, three entries' bytes", "truncated"));
  MUTATE("kind 3", "kind 3", entry(bad, 1)->kind = 3);
  MUTATE("kind 0", "kind 0", entry(bad, 0)->kind = 0);
  MUTATE("arch 0", "architecture 0", entry(bad, 0)->arch = 0);
  MUTATE("arch 5000", "architecture 5000", entry(bad, 1)->arch = 5000);
  MUTATE("offset unaligned", "16-aligned", entry(bad, 0)->offset += 8);
  MUTATE("offset in the table", "outside", entry(bad, 0)->offset = 16);
  MUTATE("offset 0", "outside", entry(bad, 1)->offset = 0);
  MUTATE("offset past the end", "outside", entry(bad, 1)->offset = ((uint64_t)n + 15) & ~(uint64_t)15);
  MUTATE("offset huge", "outside", entry(bad, 1)->offset = UINT64_MAX - 15);
  MUTATE("size 0", "outside", entry(bad, 0)->size = 0);
  MUTATE("size past the end", "outside", entry(bad, 1)->size += 1);
  MUTATE("size huge", "outside", entry(bad, 1)->size = UINT64_MAX);
  MUTATE("CUBIN of another machine", "not a CUBIN (an ELF of machine EM_CUDA)", (bad + entry(bad, 0)->offset)[18] = 62);
  MUTATE("CUBIN for another sm", "a CUBIN for sm_90, the entry says sm_80", entry(bad, 0)->arch = 80);
  MUTATE("CUBIN entry on the PTX", "not a CUBIN", entry(bad, 1)->kind = INGOT_GPU_CODE_CUBIN);
  MUTATE("PTX entry on the CUBIN", "not PTX", entry(bad, 0)->kind = INGOT_GPU_CODE_PTX);
  MUTATE("PTX without its NUL", "not PTX", entry(bad, 1)->size -= 1);
  MUTATE("two alike", "both", *entry(bad, 1) = *entry(bad, 0));
#undef MUTATE
  expect_corrupt((const uint8_t*)"junk", 4, "junk", "neither");
  {
    char why[64];
    ingot_rt_cuda_code_t got;
    CHECK(ingot_rt_cuda_code_pick(NULL, 0, 90, &got, why, sizeof why) == INGOT_RT_CUDA_CODE_CORRUPT, "NULL code");
    CHECK(ingot_rt_cuda_code_pick(good, n, 90, &got, NULL, 0) == INGOT_RT_CUDA_CODE_OK, "no why buffer");
  }
  /* Every byte of the header, table and codes flipped: never a crash, never a
   * code outside the set. */
  int flips = 0;
  for (size_t i = 0; i < n; ++i)
    for (int bit = 0; bit < 8; bit += 3, ++flips) {
      memcpy(bad, good, n);
      bad[i] ^= (uint8_t)(1u << bit);
      for (uint32_t sm = 80; sm <= 100; sm += 10) {
        ingot_rt_cuda_code_t got;
        char why[192];
        if (pick(bad, n, sm, &got, why, sizeof why) == INGOT_RT_CUDA_CODE_OK && got.data)
          CHECK(got.data >= bad && got.data + got.size <= bad + n && got.size > 0, "flip %zu.%d: code outside", i,
                bit);
      }
    }
  printf("corrupt code sets refused: %zu truncations, 23 mutations, %d flips without a crash\n", n, flips);
}

/* Bare codes, as before the code set. */
static void test_bare(void) {
  static uint8_t code[512];
  char why[192];
  ingot_rt_cuda_code_t got;
  size_t n = make_ptx(code, 90);
  CHECK(pick(code, n, 90, &got, why, sizeof why) == INGOT_RT_CUDA_CODE_OK && got.kind == INGOT_GPU_CODE_PTX &&
            got.arch == 90 && got.data == code && got.size == n, "bare PTX on sm_90: %s", why);
  CHECK(pick(code, n, 100, &got, why, sizeof why) == INGOT_RT_CUDA_CODE_OK, "bare PTX on sm_100: %s", why);
  CHECK(pick(code, n, 80, &got, why, sizeof why) == INGOT_RT_CUDA_CODE_NO_MATCH, "bare PTX on sm_80: %s", why);
  CHECK(pick(code, n - 1, 90, &got, why, sizeof why) == INGOT_RT_CUDA_CODE_OK, "bare PTX without a NUL: %s", why);
  n = make_cubin(code, 90);
  CHECK(pick(code, n, 90, &got, why, sizeof why) == INGOT_RT_CUDA_CODE_OK && got.kind == INGOT_GPU_CODE_CUBIN &&
            got.arch == 90, "bare CUBIN on sm_90: %s", why);
  CHECK(pick(code, n, 100, &got, why, sizeof why) == INGOT_RT_CUDA_CODE_NO_MATCH, "bare CUBIN on sm_100: %s", why);
  code[8] = 7; /* an ELF ABI whose sm we do not read: left to the driver */
  CHECK(pick(code, n, 100, &got, why, sizeof why) == INGOT_RT_CUDA_CODE_OK && got.arch == 0, "old CUBIN: %s", why);
  /* The row without a driver: code_fits says whether the code is well formed. */
  const ingot_rt_loader_t* cuda = ingot_rt_loader_find(INGOT_LOADER_CUDA);
  CHECK(cuda != NULL, "CUDA row");
  if (cuda && !getenv("INGOT_FAKE_CUDA_SM")) {
    static uint8_t set[4096];
    size_t m = make_shipped(set, 90);
    CHECK(cuda->code_fits(set, m) && !cuda->code_fits(set, m - 1), "code_fits without a driver");
  }
}

/* ---- Through a bundle, with the fake driver. */

#define N 64
static float g_w[N];
static const uint32_t g_args[] = {0, 1, 2};
static const uint32_t g_inputs[] = {0};
static const uint32_t g_outputs[] = {2};

static int build_bundle(const uint32_t* sms, uint32_t count, uint8_t** out, size_t* out_size) {
  static uint8_t sets[4][4096];
  static char targets[4][32];
  ingot_bundle_tensor_t tensors[3];
  memset(tensors, 0, sizeof tensors);
  const char* names[3] = {"a", "w", "y"};
  for (int i = 0; i < 3; ++i) {
    tensors[i].name = names[i];
    tensors[i].dtype = INGOT_DTYPE_F32;
    tensors[i].rank = 1;
    tensors[i].dims[0] = N;
    tensors[i].storage = i == 1 ? INGOT_STORAGE_WEIGHT : INGOT_STORAGE_ARENA;
    tensors[i].alias_of = UINT32_MAX;
  }
  tensors[1].data = g_w;
  ingot_bundle_step_t steps[1] = {{0, g_args, 3, "node_add"}};
  const char* kernel_names[1] = {"add_f32"};
  static const ingot_launch_record_t launch[1] = {{0, 0, {1, 1, 1}, {N, 1, 1}}};
  ingot_bundle_code_t codes[4];
  for (uint32_t c = 0; c < count; ++c) {
    snprintf(targets[c], sizeof targets[c], "cuda -arch=sm_%u", sms[c]);
    size_t n = make_shipped(sets[c], sms[c]);
    codes[c] = (ingot_bundle_code_t){targets[c], sets[c], n, INGOT_LOADER_CUDA, launch, NULL};
  }
  ingot_bundle_spec_t spec;
  memset(&spec, 0, sizeof spec);
  spec.tensors = tensors;
  spec.tensor_count = 3;
  spec.inputs = g_inputs;
  spec.input_count = 1;
  spec.outputs = g_outputs;
  spec.output_count = 1;
  spec.steps = steps;
  spec.step_count = 1;
  spec.kernel_names = kernel_names;
  spec.kernel_count = 1;
  spec.codes = codes;
  spec.code_count = count;
  spec.zstd_level = 3;
  spec.weights_codec = INGOT_BUNDLE_WEIGHTS_RAW; /* usable in place when borrowed */
  ingot_status_t st = ingot_bundle_build(&spec, out, out_size, NULL);
  CHECK(st == INGOT_OK, "build: %s", ingot_compiler_error());
  return st == INGOT_OK;
}

/* Opens a bundle of CUDA variants for `sms`; expects `want_target` loaded
 * with `want_code` given to the driver, or (want_target NULL) a refusal
 * whose message holds `want_code`. */
static void fake_case(void* driver, const uint32_t* sms, uint32_t count, const char* want_target,
                      const char* want_code) {
  const char* loaded = (const char*)dlsym(driver, "ingot_fake_cuda_loaded");
  const int* modules = (const int*)dlsym(driver, "ingot_fake_cuda_modules");
  CHECK(loaded && modules, "the fake driver's records");
  if (!loaded || !modules) return;
  uint8_t* data = NULL;
  size_t size = 0;
  if (!build_bundle(sms, count, &data, &size)) return;
  ingot_bundle_t* b = NULL;
  ingot_status_t st = ingot_bundle_open_memory(data, size, NULL, &b);
  if (!want_target) {
    CHECK(st == INGOT_ERROR_UNSUPPORTED && !b && strstr(ingot_last_error(), want_code), "refused: %d %s", (int)st,
          ingot_last_error());
    printf("  %u variant(s): refused: %s\n", count, ingot_last_error());
  } else {
    CHECK(st == INGOT_OK, "open: %s", ingot_last_error());
    if (st == INGOT_OK) {
      CHECK(strcmp(ingot_bundle_target(b), want_target) == 0 && strcmp(ingot_bundle_device(b), "cuda") == 0,
            "loaded %s on %s, want %s", ingot_bundle_target(b), ingot_bundle_device(b), want_target);
      CHECK(strcmp(loaded, want_code) == 0, "the driver got %s, want %s", loaded, want_code);
      printf("  %u variant(s): %s, driver got %s; %s\n", count, ingot_bundle_target(b), loaded,
             ingot_bundle_target_reason(b));
      ingot_session_t* s = NULL;
      ingot_session_options_t so = {{0}, 1};
      st = ingot_session_create(b, &so, &s);
      CHECK(st == INGOT_OK, "session: %s", ingot_last_error());
      if (st == INGOT_OK) {
        CHECK(ingot_session_run(s) == INGOT_OK, "run: %s", ingot_last_error());
        ingot_session_release(s);
      }
      ingot_bundle_release(b);
      CHECK(*modules == 0, "%d module(s) left loaded", *modules);
      /* Borrowed: the raw weights are used in place on the host and uploaded
       * from there; pools and caller arenas serve CPU variants only. */
      uint8_t* aligned = aligned_alloc(64, (size + 63) & ~(size_t)63);
      memcpy(aligned, data, size);
      ingot_bundle_options_t bo;
      memset(&bo, 0, sizeof bo);
      bo.flags = INGOT_BUNDLE_BORROW;
      ingot_bundle_t* bb = NULL;
      CHECK(ingot_bundle_open_memory(aligned, size, &bo, &bb) == INGOT_OK, "borrowed open: %s", ingot_last_error());
      if (bb) {
        CHECK(ingot_bundle_weights_in_place(bb) == 1, "borrowed raw weights are not in place");
        ingot_session_options_t so = {{0}, 1, NULL, 0, NULL, NULL};
        s = NULL;
        CHECK(ingot_session_create(bb, &so, &s) == INGOT_OK && ingot_session_run(s) == INGOT_OK,
              "borrowed session: %s", ingot_last_error());
        ingot_session_release(s);
        ingot_pool_t* pool = NULL;
        CHECK(ingot_pool_create(1 << 20, (ingot_allocator_t){0}, &pool) == INGOT_OK, "pool");
        so.pool = pool;
        s = NULL;
        st = ingot_session_create(bb, &so, &s);
        CHECK(st == INGOT_ERROR_UNSUPPORTED && !s && strstr(ingot_last_error(), "CPU variants only"),
              "a pool for a CUDA session: %s '%s'", ingot_status_name(st), ingot_last_error());
        ingot_pool_release(pool);
        ingot_bundle_release(bb);
      }
      free(aligned);
    }
  }
  free(data);
}

static int run_fake(const char* driver_path, const char* sm_text) {
  setenv("INGOT_CUDA_DRIVER", driver_path, 1);
  setenv("INGOT_FAKE_CUDA_SM", sm_text, 1);
  void* driver = dlopen(driver_path, RTLD_NOW | RTLD_LOCAL);
  if (!driver) {
    fprintf(stderr, "cannot open %s: %s\n", driver_path, dlerror());
    return 1;
  }
  char why[192];
  int sm = ingot_device_probe("cuda", why, sizeof why);
  CHECK(sm > 0 && strstr(why, "Fake GPU"), "probe: %d %s", sm, why);
  printf("fake device: %s\n", why);
  const uint32_t one90[] = {90}, one80[] = {80}, both[] = {80, 90};
  switch (atoi(sm_text)) {
    case 90:
      fake_case(driver, one90, 1, "cuda -arch=sm_90", "CUBIN sm_90");
      fake_case(driver, one80, 1, "cuda -arch=sm_80", "PTX sm_80");
      fake_case(driver, both, 2, "cuda -arch=sm_90", "CUBIN sm_90");
      break;
    case 86:
      fake_case(driver, one90, 1, NULL, "device sm_86, code for sm_90");
      fake_case(driver, both, 2, "cuda -arch=sm_80", "CUBIN sm_80");
      break;
    case 100:
      fake_case(driver, one90, 1, "cuda -arch=sm_90", "PTX sm_90");
      fake_case(driver, both, 2, "cuda -arch=sm_90", "PTX sm_90");
      break;
    default:
      fprintf(stderr, "no cases for sm %s\n", sm_text);
      return 2;
  }
  return 0;
}

int main(int argc, char** argv) {
  for (int i = 0; i < N; ++i) g_w[i] = (float)i;
  if (argc == 3) {
    int r = run_fake(argv[1], argv[2]);
    if (r) return r;
  } else if (argc != 1) {
    fprintf(stderr, "usage: %s [FAKE_DRIVER SM]\n", argv[0]);
    return 2;
  } else {
    test_choice();
    test_rank_agrees();
    test_corrupt();
    test_bare();
  }
  if (g_failures) {
    fprintf(stderr, "%d check(s) failed\n", g_failures);
    return 1;
  }
  printf("cuda code set: ok\n");
  return 0;
}
