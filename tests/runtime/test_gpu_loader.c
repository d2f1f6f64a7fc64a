/* The CUDA loader row and the device choice, on a machine without a usable
 * NVIDIA driver (the test makes sure of that: INGOT_CUDA_DRIVER names a
 * library that is missing, or one that is not the driver, before the first
 * probe). Checks: the probe says why and does not crash; the CUDA row refuses
 * devices and code with that reason; a bundle with a CUDA variant beside a
 * CPU one runs the CPU one (auto, --device cpu) and says why the CUDA one was
 * skipped; a forced "cuda" or "rocm" and a CUDA-only bundle are refused with
 * one clear message; an unknown device name is an invalid argument. It also
 * writes gpu_mixed.ingot and gpu_only.ingot for test_gpu_cli.sh.
 *
 * usage: test_gpu_loader <c compiler> <source root> <work dir> missing|notdriver */
#define _DEFAULT_SOURCE 1
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packager/packager.h"
#include "runtime/ingot.h"
#include "runtime/ingot_format.h"
#include "runtime/loader.h" /* the loader table, tested directly */

#define N 256

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
    "#define N 256\n"
    "static int32_t add_f32(const ingot_kernel_env_t* env, void* const* args) {\n"
    "  (void)env;\n"
    "  const float* a = (const float*)args[0]; const float* w = (const float*)args[1];\n"
    "  float* y = (float*)args[2];\n"
    "  for (int i = 0; i < N; ++i) y[i] = a[i] + w[i];\n"
    "  return 0;\n"
    "}\n"
    "static const ingot_kernel_entry_t kernels[] = {{\"add_f32\", add_f32}};\n"
    "static const ingot_kernel_library_t library = {INGOT_KERNEL_ABI_VERSION, 1, kernels};\n"
    "__attribute__((visibility(\"default\")))\n"
    "const ingot_kernel_library_t* ingot_library_query(uint32_t abi_version) {\n"
    "  return abi_version == INGOT_KERNEL_ABI_VERSION ? &library : 0;\n"
    "}\n";

/* What a CUDA variant's CODE holds for this test: PTX text (the loader would
 * hand it to cuModuleLoadData; here no driver ever sees it). */
static const char k_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry add_f32(.param .u64 a, .param .u64 w, .param .u64 y)\n{\n  ret;\n}\n";

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
  int ok = fwrite(data, 1, size, f) == size;
  return fclose(f) == 0 && ok;
}

static int build_so(const char* cc, const char* src, const char* work, uint8_t** out, size_t* out_size) {
  char c_path[1024], so_path[1024], cmd[4096];
  snprintf(c_path, sizeof c_path, "%s/gpu_loader_kernels.c", work);
  snprintf(so_path, sizeof so_path, "%s/gpu_loader_kernels.so", work);
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

/* ---- The model: y = a + w, one step. --------------------------------- */

static float g_w[N];
static const uint32_t g_args[] = {0, 1, 2};
static const uint32_t g_inputs[] = {0};
static const uint32_t g_outputs[] = {2};

typedef struct model_t {
  ingot_bundle_tensor_t tensors[3];
  ingot_bundle_step_t steps[1];
  const char* kernel_names[1];
  ingot_bundle_code_t codes[2];
  ingot_launch_record_t gpu_launch[1];
  ingot_bundle_spec_t spec;
} model_t;

static void model_init(model_t* m) {
  memset(m, 0, sizeof *m);
  const char* names[3] = {"a", "w", "y"};
  for (int i = 0; i < 3; ++i) {
    m->tensors[i].name = names[i];
    m->tensors[i].dtype = INGOT_DTYPE_F32;
    m->tensors[i].rank = 1;
    m->tensors[i].dims[0] = N;
    m->tensors[i].storage = INGOT_STORAGE_ARENA;
    m->tensors[i].alias_of = UINT32_MAX;
  }
  m->tensors[1].storage = INGOT_STORAGE_WEIGHT;
  m->tensors[1].data = g_w;
  m->steps[0] = (ingot_bundle_step_t){0, g_args, 3, "node_add"};
  m->kernel_names[0] = "add_f32";
  m->gpu_launch[0] = (ingot_launch_record_t){0, 0, {1, 1, 1}, {N, 1, 1}};
  m->spec.tensors = m->tensors;
  m->spec.tensor_count = 3;
  m->spec.inputs = g_inputs;
  m->spec.input_count = 1;
  m->spec.outputs = g_outputs;
  m->spec.output_count = 1;
  m->spec.steps = m->steps;
  m->spec.step_count = 1;
  m->spec.kernel_names = m->kernel_names;
  m->spec.kernel_count = 1;
  m->spec.codes = m->codes;
  m->spec.zstd_level = 3;
}

static void model_cuda(model_t* m, uint32_t c) {
  m->codes[c] = (ingot_bundle_code_t){"cuda -arch=sm_90", (const uint8_t*)k_ptx, sizeof k_ptx, INGOT_LOADER_CUDA,
                                      m->gpu_launch, NULL};
  if (m->spec.code_count < c + 1) m->spec.code_count = c + 1;
}

static void model_cpu(model_t* m, uint32_t c, const uint8_t* so, size_t so_size) {
  m->codes[c] = (ingot_bundle_code_t){"c", so, so_size, INGOT_LOADER_CPU_ELF, NULL, NULL};
  if (m->spec.code_count < c + 1) m->spec.code_count = c + 1;
}

static int build(const ingot_bundle_spec_t* spec, uint8_t** data, size_t* size) {
  ingot_status_t st = ingot_bundle_build(spec, data, size, NULL);
  if (st != INGOT_OK) fprintf(stderr, "build: %s\n", ingot_compiler_error());
  return st == INGOT_OK;
}

static ingot_status_t open_with(const uint8_t* d, size_t n, const char* device, ingot_bundle_t** out) {
  ingot_bundle_options_t o;
  memset(&o, 0, sizeof o);
  o.device = device;
  return ingot_bundle_open_memory(d, n, &o, out);
}

/* Opens with `device`, expects the "c" variant on the CPU, runs once. */
static void run_cpu(const uint8_t* d, size_t n, const char* device, const char* probe_why) {
  ingot_bundle_t* b = NULL;
  ingot_status_t st = open_with(d, n, device, &b);
  CHECK(st == INGOT_OK, "device %s: open: %s", device ? device : "auto", ingot_last_error());
  if (st != INGOT_OK) return;
  CHECK(strcmp(ingot_bundle_target(b), "c") == 0 && strcmp(ingot_bundle_device(b), "cpu") == 0,
        "device %s: loaded %s on %s", device ? device : "auto", ingot_bundle_target(b), ingot_bundle_device(b));
  const char* reason = ingot_bundle_target_reason(b);
  if (!device || strcmp(device, "auto") == 0) {
    char want[256];
    snprintf(want, sizeof want, "skipped cuda -arch=sm_90 (%.60s", probe_why);
    CHECK(strstr(reason, want) != NULL, "auto: reason '%s' lacks '%s'", reason, want);
  } else {
    CHECK(strstr(reason, "a cuda variant, device cpu asked for") != NULL, "cpu: reason '%s'", reason);
  }
  ingot_session_options_t so = {{0}, 1};
  ingot_session_t* s = NULL;
  st = ingot_session_create(b, &so, &s);
  CHECK(st == INGOT_OK, "session: %s", ingot_last_error());
  if (st == INGOT_OK) {
    float* a = (float*)ingot_session_input_data(s, 0);
    for (int i = 0; i < N; ++i) a[i] = (float)i;
    CHECK(ingot_session_run(s) == INGOT_OK, "run: %s", ingot_last_error());
    const float* y = (const float*)ingot_session_output_data(s, 0);
    int bad = 0;
    for (int i = 0; i < N; ++i) bad += y[i] != (float)i + g_w[i];
    CHECK(!bad, "%d wrong outputs", bad);
    ingot_session_release(s);
  }
  ingot_bundle_release(b);
}

static void expect_refused(const uint8_t* d, size_t n, const char* device, ingot_status_t want, const char* text1,
                           const char* text2) {
  ingot_bundle_t* b = NULL;
  ingot_status_t st = open_with(d, n, device, &b);
  const char* msg = ingot_last_error();
  CHECK(st == want && !b, "device %s: status %d, want %d (%s)", device ? device : "auto", (int)st, (int)want, msg);
  CHECK(strstr(msg, text1) != NULL && (!text2 || strstr(msg, text2) != NULL),
        "device %s: message '%s' lacks '%s' / '%s'", device ? device : "auto", msg, text1, text2 ? text2 : "");
  printf("device %s refused: %s\n", device ? device : "auto", msg);
  ingot_bundle_release(b);
}

int main(int argc, char** argv) {
  if (argc != 5 || (strcmp(argv[4], "missing") != 0 && strcmp(argv[4], "notdriver") != 0)) {
    fprintf(stderr, "usage: %s <cc> <source root> <work dir> missing|notdriver\n", argv[0]);
    return 2;
  }
  const int missing = strcmp(argv[4], "missing") == 0;
  /* Before the first probe (it runs once per process). */
  setenv("INGOT_CUDA_DRIVER", missing ? "/nonexistent/libcuda.so.1" : "libm.so.6", 1);
  setenv("INGOT_HIP_RUNTIME", missing ? "/nonexistent/libamdhip64.so" : "libm.so.6", 1);
  const char* expect_hip = missing ? "/nonexistent/libamdhip64.so not found" : "libm.so.6 lacks hipInit";
  const char* expect_why = missing ? "/nonexistent/libcuda.so.1 not found" : "libm.so.6 lacks cuInit";

  /* 1. The probe. */
  char why[256];
  CHECK(ingot_device_probe("cuda", why, sizeof why) == 0, "cuda probe: %s", why);
  CHECK(strstr(why, expect_why) != NULL, "cuda probe: '%s' lacks '%s'", why, expect_why);
  printf("cuda probe: %s\n", why);
  CHECK(ingot_device_probe("cuda", NULL, 0) == 0, "probe without why");
  CHECK(ingot_device_probe("cpu", why, sizeof why) == 1, "cpu probe: %s", why);
  CHECK(ingot_device_probe("rocm", why, sizeof why) == 0 && strstr(why, expect_hip), "rocm: %s", why);
  printf("rocm probe: %s\n", why);
  CHECK(ingot_device_probe("gpu", why, sizeof why) == 0 && strstr(why, "unknown device"), "gpu: %s", why);
  CHECK(ingot_device_probe(NULL, why, sizeof why) == 0, "NULL device");

  /* 2. The CUDA row, called directly: every call says why, none crashes. */
  const ingot_rt_loader_t* hip = ingot_rt_loader_find(INGOT_LOADER_HIP);
  CHECK(hip && !hip->host_visible && hip->finish, "HIP row");
  if (hip) {
    char hwhy[128];
    CHECK(hip->rank("rocm -mcpu=gfx90a", hwhy, sizeof hwhy) == 0 && strstr(hwhy, expect_hip), "rank: %s", hwhy);
    CHECK(hip->rank("cuda -arch=sm_90", hwhy, sizeof hwhy) == 0 && strstr(hwhy, "not a ROCm target"), "rank: %s",
          hwhy);
    ingot_rt_device_t* dev = (ingot_rt_device_t*)1;
    CHECK(hip->device_create(0, ingot_allocator_system(), &dev) == INGOT_ERROR_UNSUPPORTED && !dev, "device");
  }
  const ingot_rt_loader_t* cuda = ingot_rt_loader_find(INGOT_LOADER_CUDA);
  CHECK(cuda && !cuda->host_visible && cuda->finish, "CUDA row");
  if (cuda) {
    char rwhy[128];
    CHECK(cuda->rank("cuda -arch=sm_90", rwhy, sizeof rwhy) == 0 && strstr(rwhy, expect_why), "rank: %s", rwhy);
    CHECK(cuda->rank("llvm x86-64", rwhy, sizeof rwhy) == 0 && strstr(rwhy, "not a CUDA target"), "rank: %s",
          rwhy);
    CHECK(cuda->rank("cuda -arch=sm_x", rwhy, sizeof rwhy) == 0 && strstr(rwhy, "not a CUDA target"), "rank: %s",
          rwhy);
    CHECK(cuda->code_fits(k_ptx, sizeof k_ptx), "PTX fits");
    static const uint8_t host_elf[20] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 62, 0};
    static const uint8_t cuda_elf[20] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 190, 0};
    CHECK(!cuda->code_fits(host_elf, sizeof host_elf) && cuda->code_fits(cuda_elf, sizeof cuda_elf), "ELF");
    CHECK(!cuda->code_fits("junk", 4), "junk");
    ingot_rt_device_t* dev = (ingot_rt_device_t*)1;
    CHECK(cuda->device_create(0, ingot_allocator_system(), &dev) == INGOT_ERROR_UNSUPPORTED && !dev &&
              strstr(ingot_last_error(), expect_why),
          "device_create: %s", ingot_last_error());
    ingot_rt_module_t* mod = (ingot_rt_module_t*)1;
    CHECK(cuda->load(k_ptx, sizeof k_ptx, ingot_allocator_system(), &mod) == INGOT_ERROR_UNSUPPORTED && !mod,
          "load: %s", ingot_last_error());
  }

  /* 3. Bundles. */
  for (int i = 0; i < N; ++i) g_w[i] = (float)(i % 9) - 4.0f;
  uint8_t* so = NULL;
  size_t so_size = 0;
  if (!build_so(argv[1], argv[2], argv[3], &so, &so_size)) {
    fprintf(stderr, "cannot build the kernel library\n");
    return 1;
  }
  char path[1024];
  model_t m;
  model_init(&m);
  model_cuda(&m, 0);
  model_cpu(&m, 1, so, so_size);
  uint8_t* d = NULL;
  size_t n = 0;
  if (build(&m.spec, &d, &n)) {
    char probe_why[256];
    ingot_device_probe("cuda", probe_why, sizeof probe_why);
    run_cpu(d, n, NULL, probe_why);
    run_cpu(d, n, "auto", probe_why);
    run_cpu(d, n, "cpu", probe_why);
    expect_refused(d, n, "cuda", INGOT_ERROR_UNSUPPORTED, "no cuda variant runs on this machine", expect_why);
    expect_refused(d, n, "rocm", INGOT_ERROR_UNSUPPORTED, "no rocm variant runs on this machine",
                   "a cpu-elf variant, device rocm asked for");
    expect_refused(d, n, "gpu", INGOT_ERROR_INVALID_ARGUMENT, "unknown device 'gpu'", NULL);
    snprintf(path, sizeof path, "%s/gpu_mixed.ingot", argv[3]);
    CHECK(write_file(path, d, n), "write %s", path);
  } else {
    CHECK(0, "build the mixed bundle");
  }
  free(d);
  {
    /* A HIP variant beside the CPU one: skipped with the ROCm probe's reason. */
    model_t h;
    model_init(&h);
    static const uint8_t amdgpu_elf[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 64, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 224, 0};
    h.codes[0] = (ingot_bundle_code_t){"rocm -mcpu=gfx90a", amdgpu_elf, sizeof amdgpu_elf, INGOT_LOADER_HIP,
                                       h.gpu_launch, NULL};
    model_cpu(&h, 1, so, so_size);
    uint8_t* hd = NULL;
    size_t hn = 0;
    if (build(&h.spec, &hd, &hn)) {
      ingot_bundle_t* b = NULL;
      CHECK(open_with(hd, hn, NULL, &b) == INGOT_OK && strcmp(ingot_bundle_device(b), "cpu") == 0 &&
                strstr(ingot_bundle_target_reason(b), expect_hip),
            "HIP beside CPU: %s", b ? ingot_bundle_target_reason(b) : ingot_last_error());
      ingot_bundle_release(b);
      expect_refused(hd, hn, "rocm", INGOT_ERROR_UNSUPPORTED, "no rocm variant runs on this machine", expect_hip);
      free(hd);
    }
  }

  model_t g;
  model_init(&g);
  model_cuda(&g, 0);
  d = NULL;
  if (build(&g.spec, &d, &n)) {
    expect_refused(d, n, NULL, INGOT_ERROR_UNSUPPORTED, "no code variant runs on this machine: cuda -arch=sm_90",
                   expect_why);
    expect_refused(d, n, "cuda", INGOT_ERROR_UNSUPPORTED, "no cuda variant runs on this machine", expect_why);
    expect_refused(d, n, "cpu", INGOT_ERROR_UNSUPPORTED, "no cpu variant runs on this machine",
                   "a cuda variant, device cpu asked for");
    snprintf(path, sizeof path, "%s/gpu_only.ingot", argv[3]);
    CHECK(write_file(path, d, n), "write %s", path);
  } else {
    CHECK(0, "build the CUDA-only bundle");
  }
  free(d);
  free(so);
  if (g_failures) {
    fprintf(stderr, "%d check(s) failed\n", g_failures);
    return 1;
  }
  printf("gpu loader (%s): ok\n", argv[4]);
  return 0;
}
