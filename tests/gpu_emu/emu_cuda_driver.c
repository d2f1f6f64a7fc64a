/* An emulated NVIDIA driver (a stand-in for libcuda.so.1, test only) that
 * the runtime's CUDA loader opens with dlopen (INGOT_CUDA_DRIVER=path), so
 * a bundle's CUDA variant runs end to end through the real loader on a
 * machine without a GPU.
 *
 *  - One device, "Ingot emulated GPU", compute capability $INGOT_EMU_SM
 *    (default 90).
 *  - Device memory is host memory: cuMemAlloc is an aligned allocation
 *    filled with 0xff bytes (NaN as floats: a kernel that reads what nobody
 *    wrote shows it) and followed by a guard of 256 bytes that is checked
 *    after every launch; copies are memcpy after a range check; streams are
 *    handles, synchronization returns the first kernel fault (sticky, as on
 *    a GPU).
 *  - cuModuleLoadData takes the code the loader picked (a CUBIN, whose
 *    symbol table is read, or PTX, whose .entry lines are) and runs the
 *    kernels from the host library named by $INGOT_EMU_KERNELS (Ingot's
 *    printed CUDA C built by g++ with emu_kernel.h, see emu_abi.h).
 *    cuModuleGetFunction finds a kernel only if both the code and the
 *    library have it. A new block starts with its __shared__ arrays filled
 *    with 0xff bytes (emu_kernel.h), as undefined as a GPU's.
 *  - cuLaunchKernel checks the launch (limits of the device; the block and
 *    grid the kernel was printed for; every parameter a pointer into device
 *    memory), then runs the grid: blocks one after another; the threads of
 *    a block as fibers (ucontext) on the calling thread, each run until it
 *    reaches __syncthreads or ends, in ascending order on even barrier
 *    phases and descending on odd ones (a missing barrier shows in either
 *    direction); a barrier that some threads skip is a fault. Kernels whose
 *    source has no barrier run their threads as plain calls.
 *  - Errors are CUresult codes with cuGetErrorString's texts, and one line
 *    on stderr ("emu cuda: ...") saying what exactly was wrong.
 *
 * Why fibers and not a thread per GPU thread: this machine has two cores;
 * a gemm block of 256 threads crosses thousands of barriers, each a round
 * of 256 context switches through the kernel as threads, far cheaper as
 * fibers; and the order is deterministic, so a race shows on every run.
 *
 * Environment: INGOT_EMU_KERNELS (required to load a module),
 * INGOT_EMU_SM, INGOT_EMU_CHECK_DIMS=0 (do not compare launches with the
 * printed ones), INGOT_EMU_REVERSE=1 (threads in descending order on even
 * phases, ascending on odd ones), INGOT_EMU_SHRINK_GRID=1 (test of the test: every launch
 * whose grid x is above 1 runs one block fewer, as a wrong launch record
 * would), INGOT_EMU_TRACE=1 (one stderr line per launch). */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "emu_abi.h"

#define EXPORT __attribute__((visibility("default")))

enum {
  CU_OK = 0,
  CU_INVALID_VALUE = 1,
  CU_OUT_OF_MEMORY = 2,
  CU_NOT_INITIALIZED = 3,
  CU_INVALID_DEVICE = 101,
  CU_INVALID_IMAGE = 200,
  CU_INVALID_CONTEXT = 201,
  CU_INVALID_HANDLE = 400,
  CU_NOT_FOUND = 500,
  CU_ILLEGAL_ADDRESS = 700,
  CU_LAUNCH_OUT_OF_RESOURCES = 701,
  CU_ILLEGAL_INSTRUCTION = 715,
  CU_LAUNCH_FAILED = 719,
};

#define GUARD_BYTES 256u
#define GUARD_BYTE 0xa5u
#define FIBER_STACK (256u * 1024u)
#define MAX_THREADS 1024u

static void emu_say(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static void emu_say(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("emu cuda: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static int env_flag(const char* name, int fallback) {
  const char* s = getenv(name);
  return s && s[0] ? atoi(s) : fallback;
}

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_init;
static int g_ctx;
static int g_sticky; /* first kernel fault, returned by every later sync */

/* ---- Device memory. */
typedef struct alloc_t {
  uint8_t* base;
  size_t size;
} alloc_t;
static alloc_t* g_allocs;
static size_t g_alloc_count, g_alloc_cap;

static alloc_t* alloc_find(uintptr_t p, size_t bytes) {
  for (size_t i = 0; i < g_alloc_count; ++i) {
    uintptr_t b = (uintptr_t)g_allocs[i].base;
    if (p >= b && p - b <= g_allocs[i].size && bytes <= g_allocs[i].size - (p - b)) return &g_allocs[i];
  }
  return NULL;
}

/* The first allocation whose guard was written over, or NULL. */
static const alloc_t* guard_broken(void) {
  for (size_t i = 0; i < g_alloc_count; ++i) {
    const uint8_t* g = g_allocs[i].base + g_allocs[i].size;
    for (unsigned k = 0; k < GUARD_BYTES; ++k)
      if (g[k] != GUARD_BYTE) return &g_allocs[i];
  }
  return NULL;
}

/* ---- Modules: the code the loader gave and the host kernel library. */
typedef struct module_t {
  uint8_t* image; /* a copy: the caller may free its bytes after the load */
  size_t size;
  int is_cubin;
  void* library;
  const ingot_emu_kernel_t* kernels;
  unsigned kernel_count;
  ingot_emu_env_t* env;
} module_t;

typedef struct function_t {
  module_t* module;
  const ingot_emu_kernel_t* kernel;
} function_t;

/* The bytes an ELF64 file spans: the end of its last header table, section
 * or segment (cuModuleLoadData gets no size). */
static size_t elf_extent(const uint8_t* p) {
  uint64_t phoff, shoff, end = 64;
  uint16_t phentsize, phnum, shnum;
  memcpy(&phoff, p + 0x20, 8);
  memcpy(&shoff, p + 0x28, 8);
  memcpy(&phentsize, p + 0x36, 2);
  memcpy(&phnum, p + 0x38, 2);
  memcpy(&shnum, p + 0x3c, 2);
  if (phoff + (uint64_t)phnum * phentsize > end) end = phoff + (uint64_t)phnum * phentsize;
  if (shoff + (uint64_t)shnum * 64 > end) end = shoff + (uint64_t)shnum * 64;
  for (unsigned s = 0; s < shnum; ++s) {
    uint32_t type;
    uint64_t off, sz;
    memcpy(&type, p + shoff + (size_t)s * 64 + 4, 4);
    memcpy(&off, p + shoff + (size_t)s * 64 + 24, 8);
    memcpy(&sz, p + shoff + (size_t)s * 64 + 32, 8);
    if (type != 8 /* SHT_NOBITS */ && off + sz > end) end = off + sz;
  }
  for (unsigned s = 0; s < phnum; ++s) {
    uint64_t off, sz;
    memcpy(&off, p + phoff + (size_t)s * phentsize + 8, 8);
    memcpy(&sz, p + phoff + (size_t)s * phentsize + 32, 8);
    if (off + sz > end) end = off + sz;
  }
  return (size_t)end;
}

/* Whether an ELF64 CUBIN's symbol table names `name`. */
static int cubin_has(const uint8_t* p, size_t size, const char* name) {
  if (size < 64) return 0;
  uint64_t shoff;
  uint16_t shentsize, shnum;
  memcpy(&shoff, p + 0x28, 8);
  memcpy(&shentsize, p + 0x3a, 2);
  memcpy(&shnum, p + 0x3c, 2);
  if (shentsize != 64 || shoff > size || (uint64_t)shnum * 64 > size - shoff) return 0;
  for (unsigned s = 0; s < shnum; ++s) {
    const uint8_t* sh = p + shoff + (size_t)s * 64;
    uint32_t type, link;
    uint64_t off, sz, entsize;
    memcpy(&type, sh + 4, 4);
    memcpy(&off, sh + 24, 8);
    memcpy(&sz, sh + 32, 8);
    memcpy(&link, sh + 40, 4);
    memcpy(&entsize, sh + 56, 8);
    if (type != 2 /* SHT_SYMTAB */ || entsize != 24 || link >= shnum || off > size || sz > size - off) continue;
    const uint8_t* lh = p + shoff + (size_t)link * 64;
    uint64_t str_off, str_size;
    memcpy(&str_off, lh + 24, 8);
    memcpy(&str_size, lh + 32, 8);
    if (str_off > size || str_size > size - str_off) continue;
    for (uint64_t k = 0; k < sz / 24; ++k) {
      uint32_t nm;
      memcpy(&nm, p + off + k * 24, 4);
      if (nm < str_size && strnlen((const char*)p + str_off + nm, str_size - nm) == strlen(name) &&
          memcmp(p + str_off + nm, name, strlen(name)) == 0)
        return 1;
    }
  }
  return 0;
}

static int ptx_has(const char* text, const char* name) {
  size_t n = strlen(name);
  for (const char* e = strstr(text, ".entry "); e; e = strstr(e + 7, ".entry ")) {
    const char* q = e + 7;
    while (*q == ' ') ++q;
    if (strncmp(q, name, n) == 0 && (q[n] == '(' || q[n] == ' ' || q[n] == '\n' || q[n] == '\r')) return 1;
  }
  return 0;
}

/* ---- Running a block: fibers. */
enum { FIBER_RUNNABLE, FIBER_AT_BARRIER, FIBER_DONE };
typedef struct fiber_t {
  ucontext_t ctx;
  int state;
  unsigned tid;
} fiber_t;

static struct {
  ucontext_t scheduler;
  fiber_t* fibers;
  uint8_t* stacks;
  unsigned capacity;
  fiber_t* current;
  const ingot_emu_kernel_t* kernel;
  void* const* params;
  ingot_emu_env_t* env;
  unsigned threads;
  unsigned reverse; /* INGOT_EMU_REVERSE=1: the first phase runs descending */
  int direct; /* threads run as plain calls: a barrier there is a fault */
  int fault;
} g_run;

static void set_thread(ingot_emu_env_t* env, unsigned tid) {
  env->thread_idx.x = tid % env->block_dim.x;
  env->thread_idx.y = (tid / env->block_dim.x) % env->block_dim.y;
  env->thread_idx.z = tid / (env->block_dim.x * env->block_dim.y);
}

static void emu_sync(void) {
  if (g_run.threads == 1) return; /* a block of one thread waits for nobody */
  if (g_run.direct || !g_run.current) {
    emu_say("kernel %s calls __syncthreads, but its source had none when its table was made", g_run.kernel->name);
    abort();
  }
  fiber_t* f = g_run.current;
  f->state = FIBER_AT_BARRIER;
  swapcontext(&f->ctx, &g_run.scheduler);
}

static void fiber_main(void) {
  fiber_t* f = g_run.current;
  g_run.kernel->entry(g_run.params);
  f->state = FIBER_DONE;
  /* uc_link returns to the scheduler. */
}

static int fibers_reserve(unsigned n) {
  if (n <= g_run.capacity) return 1;
  free(g_run.fibers);
  free(g_run.stacks);
  g_run.fibers = calloc(n, sizeof(fiber_t));
  g_run.stacks = malloc((size_t)n * FIBER_STACK);
  g_run.capacity = g_run.fibers && g_run.stacks ? n : 0;
  return g_run.capacity != 0;
}

/* Runs one block as fibers; 0, or a CUresult. */
static int run_block_fibers(unsigned n) {
  for (unsigned i = 0; i < n; ++i) {
    fiber_t* f = &g_run.fibers[i];
    f->tid = i;
    f->state = FIBER_RUNNABLE;
    getcontext(&f->ctx);
    f->ctx.uc_stack.ss_sp = g_run.stacks + (size_t)i * FIBER_STACK;
    f->ctx.uc_stack.ss_size = FIBER_STACK;
    f->ctx.uc_link = &g_run.scheduler;
    makecontext(&f->ctx, fiber_main, 0);
  }
  unsigned flip = g_run.reverse;
  for (unsigned phase = 0;; ++phase) {
    for (unsigned k = 0; k < n; ++k) {
      fiber_t* f = &g_run.fibers[(phase + flip) % 2 ? n - 1 - k : k];
      if (f->state != FIBER_RUNNABLE) continue;
      g_run.current = f;
      set_thread(g_run.env, f->tid);
      swapcontext(&g_run.scheduler, &f->ctx);
    }
    g_run.current = NULL;
    unsigned waiting = 0, done = 0;
    for (unsigned i = 0; i < n; ++i) {
      waiting += g_run.fibers[i].state == FIBER_AT_BARRIER;
      done += g_run.fibers[i].state == FIBER_DONE;
    }
    if (done == n) return CU_OK;
    if (done) {
      emu_say("kernel %s, block (%u,%u,%u): %u of %u threads wait at barrier %u while %u ended without it",
              g_run.kernel->name, g_run.env->block_idx.x, g_run.env->block_idx.y, g_run.env->block_idx.z, waiting, n,
              phase + 1, done);
      return CU_ILLEGAL_INSTRUCTION;
    }
    for (unsigned i = 0; i < n; ++i) g_run.fibers[i].state = FIBER_RUNNABLE;
  }
}

/* ---- The driver API (the entry points runtime/loader_cuda.c resolves). */
static const char* error_name(int r) {
  switch (r) {
    case CU_OK: return "no error";
    case CU_INVALID_VALUE: return "invalid argument";
    case CU_OUT_OF_MEMORY: return "out of memory";
    case CU_NOT_INITIALIZED: return "initialization error";
    case CU_INVALID_DEVICE: return "invalid device ordinal";
    case CU_INVALID_IMAGE: return "device kernel image is invalid";
    case CU_INVALID_CONTEXT: return "invalid device context";
    case CU_INVALID_HANDLE: return "invalid resource handle";
    case CU_NOT_FOUND: return "named symbol not found";
    case CU_ILLEGAL_ADDRESS: return "an illegal memory access was encountered";
    case CU_LAUNCH_OUT_OF_RESOURCES: return "too many resources requested for launch";
    case CU_ILLEGAL_INSTRUCTION: return "an illegal instruction was encountered";
    case CU_LAUNCH_FAILED: return "unspecified launch failure";
    default: return NULL;
  }
}

EXPORT int cuGetErrorString(int r, const char** s) {
  *s = error_name(r);
  return *s ? CU_OK : CU_INVALID_VALUE;
}

static int emu_sm(void) { return env_flag("INGOT_EMU_SM", 90); }

EXPORT int cuInit(unsigned flags) {
  if (flags != 0) return CU_INVALID_VALUE;
  g_init = 1;
  return CU_OK;
}
EXPORT int cuDeviceGetCount(int* n) {
  if (!g_init) return CU_NOT_INITIALIZED;
  *n = 1;
  return CU_OK;
}
EXPORT int cuDeviceGet(int* d, int ordinal) {
  if (!g_init) return CU_NOT_INITIALIZED;
  *d = ordinal;
  return ordinal == 0 ? CU_OK : CU_INVALID_DEVICE;
}
EXPORT int cuDeviceGetAttribute(int* v, int attr, int dev) {
  if (dev != 0) return CU_INVALID_DEVICE;
  if (attr == 75) *v = emu_sm() / 10;
  else if (attr == 76) *v = emu_sm() % 10;
  else return CU_INVALID_VALUE;
  return CU_OK;
}
EXPORT int cuDeviceGetName(char* name, int len, int dev) {
  if (dev != 0) return CU_INVALID_DEVICE;
  snprintf(name, (size_t)len, "Ingot emulated GPU");
  return CU_OK;
}
EXPORT int cuDevicePrimaryCtxRetain(void** ctx, int dev) {
  if (dev != 0) return CU_INVALID_DEVICE;
  *ctx = &g_ctx;
  return CU_OK;
}
EXPORT int cuCtxSetCurrent(void* ctx) { return ctx == &g_ctx ? CU_OK : CU_INVALID_CONTEXT; }

EXPORT int cuModuleLoadData(void** out_module, const void* image) {
  *out_module = NULL;
  const uint8_t* p = image;
  size_t size;
  int is_cubin = memcmp(p, "\177ELF", 4) == 0;
  if (is_cubin) {
    uint16_t machine;
    uint32_t flags;
    uint64_t shoff;
    uint16_t shnum;
    memcpy(&machine, p + 18, 2);
    memcpy(&flags, p + 48, 4);
    memcpy(&shoff, p + 0x28, 8);
    memcpy(&shnum, p + 0x3c, 2);
    if (p[4] != 2 || machine != 190) {
      emu_say("cuModuleLoadData: an ELF that is not a 64-bit CUBIN (machine %u)", machine);
      return CU_INVALID_IMAGE;
    }
    if ((int)((flags >> 8) & 0xffu) / 10 != emu_sm() / 10 || (int)((flags >> 8) & 0xffu) > emu_sm()) {
      emu_say("cuModuleLoadData: a CUBIN for sm_%u does not run on sm_%d", (flags >> 8) & 0xffu, emu_sm());
      return CU_INVALID_IMAGE;
    }
    size = elf_extent(p);
  } else {
    size = strlen((const char*)p) + 1;
    if (!strstr((const char*)p, ".version") || !strstr((const char*)p, ".target sm_")) {
      emu_say("cuModuleLoadData: neither a CUBIN nor PTX");
      return CU_INVALID_IMAGE;
    }
  }
  const char* lib = getenv("INGOT_EMU_KERNELS");
  if (!lib || !lib[0]) {
    emu_say("cuModuleLoadData: INGOT_EMU_KERNELS names no kernel library");
    return CU_INVALID_IMAGE;
  }
  void* handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    emu_say("cuModuleLoadData: %s", dlerror());
    return CU_INVALID_IMAGE;
  }
  ingot_emu_kernel_table_fn table;
  void* sym = dlsym(handle, "ingot_emu_kernel_table");
  memcpy(&table, &sym, sizeof sym);
  ingot_emu_env_t* env = (ingot_emu_env_t*)dlsym(handle, "ingot_emu_env");
  unsigned count = 0, abi = 0;
  const ingot_emu_kernel_t* kernels = table ? table(&count, &abi) : NULL;
  if (!kernels || !env || abi != INGOT_EMU_ABI_VERSION) {
    emu_say("cuModuleLoadData: %s has no kernel table of ABI %u and ingot_emu_env", lib, INGOT_EMU_ABI_VERSION);
    dlclose(handle);
    return CU_INVALID_IMAGE;
  }
  module_t* m = calloc(1, sizeof *m);
  uint8_t* copy = malloc(size);
  if (!m || !copy) {
    free(m);
    free(copy);
    dlclose(handle);
    return CU_OUT_OF_MEMORY;
  }
  memcpy(copy, p, size);
  *m = (module_t){copy, size, is_cubin, handle, kernels, count, env};
  env->sync = emu_sync;
  *out_module = m;
  return CU_OK;
}

EXPORT int cuModuleUnload(void* mod) {
  module_t* m = mod;
  if (!m) return CU_INVALID_HANDLE;
  dlclose(m->library);
  free(m->image);
  free(m);
  return CU_OK;
}

EXPORT int cuModuleGetFunction(void** out_fn, void* mod, const char* name) {
  module_t* m = mod;
  *out_fn = NULL;
  if (!m) return CU_INVALID_HANDLE;
  int in_code = m->is_cubin ? cubin_has(m->image, m->size, name) : ptx_has((const char*)m->image, name);
  const ingot_emu_kernel_t* k = NULL;
  for (unsigned i = 0; i < m->kernel_count; ++i)
    if (strcmp(m->kernels[i].name, name) == 0) k = &m->kernels[i];
  if (!in_code || !k) {
    emu_say("cuModuleGetFunction: kernel '%s' is %s", name,
            !in_code ? "not in the module's code" : "not in the kernel library (not the same printed source?)");
    return CU_NOT_FOUND;
  }
  function_t* f = calloc(1, sizeof *f);
  if (!f) return CU_OUT_OF_MEMORY;
  f->module = m;
  f->kernel = k;
  *out_fn = f; /* freed with the process: the loader keeps functions for a module's life */
  return CU_OK;
}

static int launch_check(const ingot_emu_kernel_t* k, const unsigned g[3], const unsigned b[3], unsigned shared,
                        void** params, void** extra) {
  uint64_t threads = (uint64_t)b[0] * b[1] * b[2];
  if (!g[0] || !g[1] || !g[2] || !b[0] || !b[1] || !b[2] || g[1] > 65535 || g[2] > 65535 || b[0] > 1024 ||
      b[1] > 1024 || b[2] > 64 || threads > MAX_THREADS || g[0] > 2147483647u) {
    emu_say("%s: launch grid %u x %u x %u, block %u x %u x %u is outside the device's limits", k->name, g[0], g[1],
            g[2], b[0], b[1], b[2]);
    return CU_INVALID_VALUE;
  }
  if (shared > 48u * 1024u || extra) {
    emu_say("%s: %s", k->name, extra ? "launch with `extra` parameters" : "dynamic shared memory above 48 KiB");
    return CU_INVALID_VALUE;
  }
  if (k->bounds && threads > k->bounds) {
    emu_say("%s: block of %llu threads, above its __launch_bounds__(%u)", k->name, (unsigned long long)threads,
            k->bounds);
    return CU_LAUNCH_OUT_OF_RESOURCES;
  }
  if (env_flag("INGOT_EMU_CHECK_DIMS", 1) && k->grid[0] &&
      (memcmp(k->grid, g, 3 * sizeof(unsigned)) != 0 || memcmp(k->block, b, 3 * sizeof(unsigned)) != 0)) {
    emu_say("%s: launched with grid %u x %u x %u, block %u x %u x %u; printed for grid %u x %u x %u, block %u x %u x %u",
            k->name, g[0], g[1], g[2], b[0], b[1], b[2], k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1],
            k->block[2]);
    return CU_INVALID_VALUE;
  }
  if (k->params && !params) {
    emu_say("%s: no kernelParams for %u parameters", k->name, k->params);
    return CU_INVALID_VALUE;
  }
  for (unsigned i = 0; i < k->params; ++i) {
    uintptr_t ptr;
    memcpy(&ptr, params[i], sizeof ptr);
    if (!alloc_find(ptr, 0)) {
      emu_say("%s: parameter %u (%#llx) is not device memory", k->name, i, (unsigned long long)ptr);
      return CU_ILLEGAL_ADDRESS;
    }
  }
  return CU_OK;
}

EXPORT int cuLaunchKernel(void* fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                          unsigned shared, void* stream, void** params, void** extra) {
  function_t* f = fn;
  if (!f || !stream) return CU_INVALID_HANDLE;
  pthread_mutex_lock(&g_lock);
  const ingot_emu_kernel_t* k = f->kernel;
  unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
  int r = g_sticky ? g_sticky : launch_check(k, g, b, shared, params, extra);
  if (r != CU_OK) {
    pthread_mutex_unlock(&g_lock);
    return r;
  }
  if (env_flag("INGOT_EMU_SHRINK_GRID", 0) && g[0] > 1) --g[0];
  if (env_flag("INGOT_EMU_TRACE", 0))
    emu_say("launch %s grid %u x %u x %u block %u x %u x %u%s", k->name, g[0], g[1], g[2], b[0], b[1], b[2],
            k->barriers ? " (barriers)" : "");
  unsigned n = bx * by * bz;
  ingot_emu_env_t* env = f->module->env;
  env->grid_dim = (ingot_emu_dim3_t){g[0], g[1], g[2]};
  env->block_dim = (ingot_emu_dim3_t){bx, by, bz};
  g_run.kernel = k;
  g_run.params = params;
  g_run.env = env;
  g_run.threads = n;
  g_run.reverse = env_flag("INGOT_EMU_REVERSE", 0) != 0;
  g_run.direct = !k->barriers || n == 1;
  if (!g_run.direct && !fibers_reserve(n)) r = CU_OUT_OF_MEMORY;
  for (unsigned z = 0; z < g[2] && r == CU_OK; ++z)
    for (unsigned y = 0; y < g[1] && r == CU_OK; ++y)
      for (unsigned x = 0; x < g[0] && r == CU_OK; ++x) {
        env->block_idx = (ingot_emu_dim3_t){x, y, z};
        if (++env->block_serial == 0) env->block_serial = 1;
        if (g_run.direct) {
          for (unsigned t = 0; t < n; ++t) {
            set_thread(env, t);
            k->entry(params);
          }
        } else {
          r = run_block_fibers(n);
        }
      }
  if (r == CU_OK) {
    const alloc_t* a = guard_broken();
    if (a) {
      emu_say("%s wrote past the end of the %zu-byte allocation at %p", k->name, a->size, (void*)a->base);
      r = CU_ILLEGAL_ADDRESS;
    }
  }
  if (r != CU_OK) g_sticky = r; /* a fault in a kernel poisons the context, as on a GPU */
  pthread_mutex_unlock(&g_lock);
  return CU_OK;                 /* the fault shows at the next synchronization */
}

EXPORT int cuMemAlloc_v2(unsigned long long* out, size_t bytes) {
  *out = 0;
  if (bytes == 0) return CU_INVALID_VALUE;
  size_t rounded = (bytes + 255u) & ~(size_t)255u;
  uint8_t* m = aligned_alloc(256, rounded + GUARD_BYTES);
  if (!m) return CU_OUT_OF_MEMORY;
  pthread_mutex_lock(&g_lock);
  if (g_alloc_count == g_alloc_cap) {
    size_t cap = g_alloc_cap ? g_alloc_cap * 2 : 64;
    alloc_t* grown = realloc(g_allocs, cap * sizeof *grown);
    if (!grown) {
      pthread_mutex_unlock(&g_lock);
      free(m);
      return CU_OUT_OF_MEMORY;
    }
    g_allocs = grown;
    g_alloc_cap = cap;
  }
  memset(m, 0xff, bytes);
  memset(m + bytes, GUARD_BYTE, rounded - bytes + GUARD_BYTES);
  g_allocs[g_alloc_count++] = (alloc_t){m, bytes};
  pthread_mutex_unlock(&g_lock);
  *out = (unsigned long long)(uintptr_t)m;
  return CU_OK;
}

EXPORT int cuMemFree_v2(unsigned long long p) {
  pthread_mutex_lock(&g_lock);
  for (size_t i = 0; i < g_alloc_count; ++i)
    if ((uintptr_t)g_allocs[i].base == (uintptr_t)p) {
      free(g_allocs[i].base);
      g_allocs[i] = g_allocs[--g_alloc_count];
      pthread_mutex_unlock(&g_lock);
      return CU_OK;
    }
  pthread_mutex_unlock(&g_lock);
  emu_say("cuMemFree: %#llx is not an allocation", p);
  return CU_INVALID_VALUE;
}

static int copy_checked(void* dst, const void* src, size_t n, uintptr_t device, const char* what) {
  pthread_mutex_lock(&g_lock);
  int r = g_sticky;
  if (!r && !alloc_find(device, n)) {
    emu_say("%s of %zu bytes at %#llx: outside every allocation", what, n, (unsigned long long)device);
    r = CU_INVALID_VALUE;
  }
  if (!r) memcpy(dst, src, n);
  pthread_mutex_unlock(&g_lock);
  return r;
}

EXPORT int cuMemcpyHtoDAsync_v2(unsigned long long dst, const void* src, size_t n, void* s) {
  if (!s) return CU_INVALID_HANDLE;
  return copy_checked((void*)(uintptr_t)dst, src, n, (uintptr_t)dst, "cuMemcpyHtoD");
}
EXPORT int cuMemcpyDtoHAsync_v2(void* dst, unsigned long long src, size_t n, void* s) {
  if (!s) return CU_INVALID_HANDLE;
  return copy_checked(dst, (const void*)(uintptr_t)src, n, (uintptr_t)src, "cuMemcpyDtoH");
}

EXPORT int cuStreamCreate(void** s, unsigned flags) {
  (void)flags;
  *s = malloc(16);
  return *s ? CU_OK : CU_OUT_OF_MEMORY;
}
EXPORT int cuStreamDestroy_v2(void* s) {
  free(s);
  return s ? CU_OK : CU_INVALID_HANDLE;
}
EXPORT int cuStreamSynchronize(void* s) {
  if (!s) return CU_INVALID_HANDLE;
  pthread_mutex_lock(&g_lock);
  int r = g_sticky;
  pthread_mutex_unlock(&g_lock);
  return r;
}
