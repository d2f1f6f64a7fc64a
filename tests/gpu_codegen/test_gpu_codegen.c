/* Tests of the cuda and rocm code generators (codegen/codegen_gpu.c).
 *
 *   test_gpu_codegen launch   the launches (ingot_codegen_gpu_launches): sizes
 *                             below, at and above the caps, refusals (a bound
 *                             loop assigning an outer local, too many shared
 *                             bytes, float16, a target without GPU facts);
 *                             prepare keeps bound loops for GPU kinds only.
 *   test_gpu_codegen emu      host emulation: the printed CUDA source (and its
 *                             HIP twin) compiled by the host C++ compiler with a
 *                             small shim (every block's threads run as
 *                             pthreads, __syncthreads is a pthread barrier);
 *                             hand-made kernels (guards, strides, x/y axes, a
 *                             shared-memory tree reduction, one-thread stores,
 *                             expression semantics on every dtype) and lowered
 *                             kernels of real ops bound to blocks and threads
 *                             are run and compared with ingot_ir_interpret.
 *                             Skipped (77) without a C++ compiler.
 *   test_gpu_codegen nvrtc MODEL   every kernel of MODEL (bound by a generic
 *                             rule) and the hand-made ones built for sm_80
 *                             and sm_90 through the cuda backend: code sets
 *                             whose CUBIN lists every kernel (readelf) and
 *                             whose PTX passes ptxas. 77 without NVRTC.
 *   test_gpu_codegen hiprtc MODEL  the same through the rocm backend for
 *                             gfx90a (gfx942 where the hiprtc knows it). 77
 *                             without hiprtc.
 *   test_gpu_codegen missing  (run with the compilers' libraries pointed at
 *                             missing files) build fails UNSUPPORTED naming
 *                             NVRTC / hiprtc; emit needs neither. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "codegen/codegen_gpu_rtc.h"
#include "driver/driver.h"
#include "lower_test_util.h"
#include "schedule/schedule.h"

#ifndef INGOT_TEST_CXX
#define INGOT_TEST_CXX ""
#endif
#ifndef INGOT_TEST_READELF
#define INGOT_TEST_READELF "readelf"
#endif
#ifndef INGOT_TEST_PTXAS
#define INGOT_TEST_PTXAS ""
#endif

#define CHECKF(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      ++g_failures;                                                            \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
    }                                                                          \
  } while (0)

static char g_dir[] = "/tmp/ingot_gpu_codegen_XXXXXX";

static int run_cmd(const char* cmd) {
  int rc = system(cmd);
  return rc == -1 ? -1 : (WIFEXITED(rc) ? WEXITSTATUS(rc) : -1);
}

static void write_file(const char* path, const void* data, size_t size) {
  FILE* f = fopen(path, "wb");
  if (!f || fwrite(data, 1, size, f) != size) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(1);
  }
  fclose(f);
}

/* cuda -arch=sm_90 (or rocm -mcpu=gfx90a) as the target parser will give it. */
static ingot_target_t gpu_target(ingot_target_kind_t kind, const char* arch, uint32_t max_threads) {
  ingot_target_t t;
  memset(&t, 0, sizeof(t));
  t.kind = kind;
  if (kind == INGOT_TARGET_CUDA) snprintf(t.name, sizeof(t.name), "cuda -arch=%s", arch);
  else snprintf(t.name, sizeof(t.name), "rocm -mcpu=%s", arch);
  snprintf(t.gpu.arch, sizeof(t.gpu.arch), "%s", arch);
  t.gpu.warp_size = kind == INGOT_TARGET_CUDA ? 32 : 64;
  t.gpu.shared_bytes_per_block = 49152;
  t.gpu.max_threads_per_block = max_threads;
  return t;
}

/* ---- IR building shorthands. */
static ingot_ir_expr_t* V(ingot_ir_func_t* f, uint32_t v) { return ingot_ir_var(f, v); }
static ingot_ir_expr_t* I(ingot_ir_func_t* f, int64_t v) { return ingot_ir_int(f, v); }
static ingot_ir_expr_t* F32(ingot_ir_func_t* f, double v) { return ingot_ir_float(f, INGOT_DTYPE_F32, v); }
static ingot_ir_expr_t* BIN(ingot_ir_func_t* f, ingot_ir_binary_op_t op, ingot_ir_expr_t* a, ingot_ir_expr_t* b) {
  return ingot_ir_binary(f, op, a, b);
}
static ingot_ir_stmt_t* BLK(ingot_ir_func_t* f, int n, ...) {
  ingot_ir_stmt_t* s[32];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; ++i) s[i] = va_arg(ap, ingot_ir_stmt_t*);
  va_end(ap);
  return ingot_ir_block(f, s, (uint32_t)n);
}
static ingot_ir_stmt_t* BOUND(ingot_ir_func_t* f, uint32_t var, int64_t extent, ingot_ir_loop_kind_t kind, int axis,
                              ingot_ir_stmt_t* body) {
  ingot_ir_stmt_t* l = ingot_ir_for(f, var, extent, body);
  l->u.loop.loop_kind = kind;
  l->u.loop.gpu_axis = (uint8_t)axis;
  return l;
}
#define BLOCK_LOOP INGOT_IR_LOOP_GPU_BLOCK
#define THREAD_LOOP INGOT_IR_LOOP_GPU_THREAD
static uint32_t LOOPV(ingot_ir_func_t* f, const char* n) { return ingot_ir_add_var(f, n, INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64); }
static uint32_t BUF(ingot_ir_func_t* f, const char* n, ingot_dtype_t t, ingot_ir_buffer_role_t role, int64_t numel) {
  return ingot_ir_add_buffer(f, n, t, role, 1, &numel);
}

/* ---- Hand-made kernels. With max threads 128:
 * k_sizes: grid x 5, block x 128 (thread loops of 128, 300 and 37: at, above
 * (a block-stride loop) and below (a guard) the block; block loops of 5 and 3:
 * at and below the grid); a store outside every thread loop and outside the
 * block loop of its axis (one thread of one block makes it). */
static ingot_ir_func_t* k_sizes(void) {
  ingot_ir_func_t* f = ingot_ir_func_create("k_sizes");
  uint32_t x = BUF(f, "x", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 1500);
  uint32_t o1 = BUF(f, "o1", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 640);
  uint32_t o2 = BUF(f, "o2", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 1500);
  uint32_t o3 = BUF(f, "o3", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 185);
  uint32_t o4 = BUF(f, "o4", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 384);
  uint32_t cnt = BUF(f, "cnt", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 2);
  uint32_t b = LOOPV(f, "b"), t1 = LOOPV(f, "t1"), t2 = LOOPV(f, "t2"), t3 = LOOPV(f, "t3");
  uint32_t b2 = LOOPV(f, "b2"), t4 = LOOPV(f, "t4");
  ingot_ir_expr_t* i1 = ingot_ir_add(f, ingot_ir_mul(f, V(f, b), I(f, 128)), V(f, t1));
  ingot_ir_expr_t* i2 = ingot_ir_add(f, ingot_ir_mul(f, V(f, b), I(f, 300)), V(f, t2));
  ingot_ir_expr_t* i3 = ingot_ir_add(f, ingot_ir_mul(f, V(f, b), I(f, 37)), V(f, t3));
  ingot_ir_expr_t* i4 = ingot_ir_add(f, ingot_ir_mul(f, V(f, b2), I(f, 128)), V(f, t4));
  ingot_ir_stmt_t* per_block = BLK(
      f, 4,
      BOUND(f, t1, 128, THREAD_LOOP, 0,
            ingot_ir_store(f, o1, i1, ingot_ir_mul(f, ingot_ir_load(f, x, i1), F32(f, 2.0)))),
      BOUND(f, t2, 300, THREAD_LOOP, 0,
            ingot_ir_store(f, o2, i2, ingot_ir_add(f, ingot_ir_load(f, x, i2), F32(f, 1.0)))),
      BOUND(f, t3, 37, THREAD_LOOP, 0,
            ingot_ir_store(f, o3, i3, ingot_ir_unary(f, INGOT_IR_NEG, ingot_ir_load(f, x, i3)))),
      /* outside thread loops, inside the block loop: once per block */
      ingot_ir_store(f, cnt, I(f, 0), ingot_ir_add(f, ingot_ir_load(f, cnt, I(f, 0)), F32(f, 1.0))));
  f->body = BLK(f, 3, BOUND(f, b, 5, BLOCK_LOOP, 0, per_block),
                BOUND(f, b2, 3, BLOCK_LOOP, 0,
                      BOUND(f, t4, 128, THREAD_LOOP, 0,
                            ingot_ir_store(f, o4, i4, ingot_ir_mul(f, ingot_ir_load(f, x, i4), ingot_ir_load(f, x, i4))))),
                /* outside every bound loop: once in the whole grid */
                ingot_ir_store(f, cnt, I(f, 1), ingot_ir_add(f, ingot_ir_load(f, cnt, I(f, 1)), F32(f, 1.0))));
  return f;
}

/* Block loops on y (70000: above the grid's y cap of 65535, a grid-stride
 * loop) and z (3), one thread a block. */
static ingot_ir_func_t* k_ystride(void) {
  ingot_ir_func_t* f = ingot_ir_func_create("k_ystride");
  uint32_t x = BUF(f, "x", INGOT_DTYPE_I32, INGOT_IR_BUFFER_INPUT, 100);
  uint32_t o = BUF(f, "o", INGOT_DTYPE_I32, INGOT_IR_BUFFER_OUTPUT, 210000);
  uint32_t y = LOOPV(f, "y"), z = LOOPV(f, "z");
  ingot_ir_expr_t* idx = ingot_ir_add(f, ingot_ir_mul(f, V(f, z), I(f, 70000)), V(f, y));
  ingot_ir_expr_t* val = ingot_ir_add(f, ingot_ir_load(f, x, BIN(f, INGOT_IR_MOD, V(f, y), I(f, 100))),
                                      ingot_ir_cast(f, INGOT_DTYPE_I32, V(f, z)));
  f->body = BOUND(f, z, 3, BLOCK_LOOP, 2, BOUND(f, y, 70000, BLOCK_LOOP, 1, ingot_ir_store(f, o, idx, val)));
  return f;
}

/* A 24x40 -> 40x24 transpose through a shared 8x9 tile: blocks on x and y,
 * threads on x and y, a barrier between the two thread nests. */
static ingot_ir_func_t* k_transpose(void) {
  ingot_ir_func_t* f = ingot_ir_func_create("k_transpose");
  uint32_t in = BUF(f, "in", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 24 * 40);
  uint32_t out = BUF(f, "out", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 40 * 24);
  uint32_t tile = BUF(f, "tile", INGOT_DTYPE_F32, INGOT_IR_BUFFER_SHARED, 72);
  uint32_t by = LOOPV(f, "by"), bx = LOOPV(f, "bx"), ty = LOOPV(f, "ty"), tx = LOOPV(f, "tx");
  uint32_t ty2 = LOOPV(f, "ty2"), tx2 = LOOPV(f, "tx2");
  ingot_ir_expr_t* src = ingot_ir_add(f, ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_mul(f, V(f, by), I(f, 8)), V(f, ty)), I(f, 40)),
                                      ingot_ir_add(f, ingot_ir_mul(f, V(f, bx), I(f, 8)), V(f, tx)));
  ingot_ir_stmt_t* load = BOUND(f, ty, 8, THREAD_LOOP, 1, BOUND(f, tx, 8, THREAD_LOOP, 0,
      ingot_ir_store(f, tile, ingot_ir_add(f, ingot_ir_mul(f, V(f, ty), I(f, 9)), V(f, tx)), ingot_ir_load(f, in, src))));
  ingot_ir_expr_t* dst = ingot_ir_add(f, ingot_ir_mul(f, ingot_ir_add(f, ingot_ir_mul(f, V(f, bx), I(f, 8)), V(f, ty2)), I(f, 24)),
                                      ingot_ir_add(f, ingot_ir_mul(f, V(f, by), I(f, 8)), V(f, tx2)));
  ingot_ir_stmt_t* save = BOUND(f, ty2, 8, THREAD_LOOP, 1, BOUND(f, tx2, 8, THREAD_LOOP, 0,
      ingot_ir_store(f, out, dst, ingot_ir_load(f, tile, ingot_ir_add(f, ingot_ir_mul(f, V(f, tx2), I(f, 9)), V(f, ty2))))));
  f->body = BOUND(f, by, 3, BLOCK_LOOP, 1, BOUND(f, bx, 5, BLOCK_LOOP, 0, BLK(f, 3, load, ingot_ir_barrier(f), save)));
  return f;
}

/* Row sums by a block-wide tree reduction in shared memory: a block per row
 * (6 rows of 200), 64 threads each summing a strided slice into sh[t], then
 * halving steps (thread loops of 32 .. 1: guards) with barriers; the row's
 * sum is added to y[row] by one thread (a read-modify-write outside every
 * thread loop), and a count at the top, outside the block loop, by one
 * thread of the grid. */
static ingot_ir_func_t* k_reduce(void) {
  ingot_ir_func_t* f = ingot_ir_func_create("k_reduce");
  uint32_t x = BUF(f, "x", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 1200);
  uint32_t y = BUF(f, "y", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 6);
  uint32_t cnt = BUF(f, "cnt", INGOT_DTYPE_I64, INGOT_IR_BUFFER_OUTPUT, 1);
  uint32_t sh = BUF(f, "sh", INGOT_DTYPE_F32, INGOT_IR_BUFFER_SHARED, 64);
  uint32_t b = LOOPV(f, "b"), t = LOOPV(f, "t"), k = LOOPV(f, "k");
  uint32_t acc = ingot_ir_add_var(f, "acc", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
  ingot_ir_expr_t* col = ingot_ir_add(f, V(f, t), ingot_ir_mul(f, V(f, k), I(f, 64)));
  ingot_ir_stmt_t* slice = BLK(
      f, 3, ingot_ir_local(f, acc, F32(f, 0.0)),
      ingot_ir_for(f, k, 4,
                   ingot_ir_if(f, BIN(f, INGOT_IR_LT, col, I(f, 200)),
                               ingot_ir_assign(f, acc, ingot_ir_add(f, V(f, acc),
                                                                    ingot_ir_load(f, x, ingot_ir_add(f, ingot_ir_mul(f, V(f, b), I(f, 200)), col)))))),
      ingot_ir_store(f, sh, V(f, t), V(f, acc)));
  ingot_ir_stmt_t* steps[20];
  int n = 0;
  steps[n++] = BOUND(f, t, 64, THREAD_LOOP, 0, slice);
  steps[n++] = ingot_ir_barrier(f);
  for (int s = 32; s >= 1; s /= 2) {
    char name[16];
    snprintf(name, sizeof(name), "ts%d", s);
    uint32_t ts = LOOPV(f, name);
    steps[n++] = BOUND(f, ts, s, THREAD_LOOP, 0,
                       ingot_ir_store(f, sh, V(f, ts), ingot_ir_add(f, ingot_ir_load(f, sh, V(f, ts)),
                                                                    ingot_ir_load(f, sh, ingot_ir_add(f, V(f, ts), I(f, s))))));
    steps[n++] = ingot_ir_barrier(f);
  }
  steps[n++] = ingot_ir_store(f, y, V(f, b), ingot_ir_add(f, ingot_ir_load(f, y, V(f, b)), ingot_ir_load(f, sh, I(f, 0))));
  steps[n++] = ingot_ir_barrier(f); /* sh is reused by the next row of a block */
  f->body = BLK(f, 2, ingot_ir_store(f, cnt, I(f, 0), ingot_ir_add(f, ingot_ir_load(f, cnt, I(f, 0)), I(f, 1))),
                BOUND(f, b, 6, BLOCK_LOOP, 0, ingot_ir_block(f, steps, (uint32_t)n)));
  return f;
}

/* Expression semantics on every dtype, one element a thread (2 blocks of 40
 * threads over 80 elements; the inputs hold NaN, infinities, zeros of both
 * signs and out-of-range values). */
enum { kSemN = 80, kSemF32Ops = 20, kSemI32Ops = 12, kSemF64Ops = 6 };
static ingot_ir_func_t* k_semantics(void) {
  ingot_ir_func_t* f = ingot_ir_func_create("k_semantics");
  uint32_t a = BUF(f, "a", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, kSemN);
  uint32_t bb = BUF(f, "b", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, kSemN);
  uint32_t ia = BUF(f, "ia", INGOT_DTYPE_I32, INGOT_IR_BUFFER_INPUT, kSemN);
  uint32_t ib = BUF(f, "ib", INGOT_DTYPE_I32, INGOT_IR_BUFFER_INPUT, kSemN);
  uint32_t c8 = BUF(f, "c8", INGOT_DTYPE_I8, INGOT_IR_BUFFER_INPUT, kSemN);
  uint32_t u8 = BUF(f, "u8", INGOT_DTYPE_U8, INGOT_IR_BUFFER_INPUT, kSemN);
  uint32_t d = BUF(f, "d", INGOT_DTYPE_F64, INGOT_IR_BUFFER_INPUT, kSemN);
  uint32_t of = BUF(f, "of", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, kSemN * kSemF32Ops);
  uint32_t oi = BUF(f, "oi", INGOT_DTYPE_I32, INGOT_IR_BUFFER_OUTPUT, kSemN * kSemI32Ops);
  uint32_t o8 = BUF(f, "o8", INGOT_DTYPE_I8, INGOT_IR_BUFFER_OUTPUT, kSemN * 3);
  uint32_t ou = BUF(f, "ou", INGOT_DTYPE_U8, INGOT_IR_BUFFER_OUTPUT, kSemN * 2);
  uint32_t ob = BUF(f, "ob", INGOT_DTYPE_BOOL, INGOT_IR_BUFFER_OUTPUT, kSemN * 2);
  uint32_t od = BUF(f, "od", INGOT_DTYPE_F64, INGOT_IR_BUFFER_OUTPUT, kSemN * kSemF64Ops);
  uint32_t blk = LOOPV(f, "blk"), th = LOOPV(f, "th");
  uint32_t iv = ingot_ir_add_var(f, "i", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64);
  ingot_ir_expr_t* i = V(f, iv);
  ingot_ir_expr_t* A = ingot_ir_load(f, a, i);
  ingot_ir_expr_t* B = ingot_ir_load(f, bb, i);
  ingot_ir_expr_t* absA = ingot_ir_unary(f, INGOT_IR_ABS, A);
  ingot_ir_expr_t* fo[kSemF32Ops] = {
      BIN(f, INGOT_IR_MIN, A, B), BIN(f, INGOT_IR_MAX, A, B), BIN(f, INGOT_IR_MOD, A, B),
      BIN(f, INGOT_IR_POW, absA, B), BIN(f, INGOT_IR_POW, A, F32(f, 2.0)),
      ingot_ir_unary(f, INGOT_IR_EXP, A), ingot_ir_unary(f, INGOT_IR_LOG, absA), ingot_ir_unary(f, INGOT_IR_TANH, A),
      ingot_ir_unary(f, INGOT_IR_ERF, A), ingot_ir_unary(f, INGOT_IR_SQRT, absA), ingot_ir_unary(f, INGOT_IR_FLOOR, A),
      ingot_ir_unary(f, INGOT_IR_CEIL, A), ingot_ir_unary(f, INGOT_IR_ROUND, A), ingot_ir_unary(f, INGOT_IR_SIN, A),
      ingot_ir_unary(f, INGOT_IR_ATAN, A), ingot_ir_select(f, BIN(f, INGOT_IR_LT, A, B), A, B),
      ingot_ir_unary(f, INGOT_IR_NEG, A), BIN(f, INGOT_IR_DIV, A, B),
      ingot_ir_cast(f, INGOT_DTYPE_F32, ingot_ir_load(f, ia, i)), ingot_ir_cast(f, INGOT_DTYPE_F32, ingot_ir_load(f, d, i))};
  ingot_ir_expr_t* IA = ingot_ir_load(f, ia, i);
  ingot_ir_expr_t* IB = ingot_ir_load(f, ib, i);
  ingot_ir_expr_t* io[kSemI32Ops] = {
      BIN(f, INGOT_IR_DIV, IA, IB), BIN(f, INGOT_IR_MOD, IA, IB), BIN(f, INGOT_IR_MIN, IA, IB),
      BIN(f, INGOT_IR_MAX, IA, IB), BIN(f, INGOT_IR_POW, IA, BIN(f, INGOT_IR_MOD, IB, ingot_ir_int(f, 5) )),
      ingot_ir_cast(f, INGOT_DTYPE_I32, A), ingot_ir_unary(f, INGOT_IR_ABS, IA), ingot_ir_unary(f, INGOT_IR_NEG, IA),
      BIN(f, INGOT_IR_DIV, ingot_ir_unary(f, INGOT_IR_ABS, IA), ingot_ir_int(f, 7)),
      BIN(f, INGOT_IR_MUL, IA, IB), ingot_ir_cast(f, INGOT_DTYPE_I32, ingot_ir_load(f, d, i)),
      ingot_ir_cast(f, INGOT_DTYPE_I32, ingot_ir_load(f, c8, i))};
  /* (ingot_ir_int gives int64: make the int32 constants by a cast.) */
  io[4] = BIN(f, INGOT_IR_POW, IA, BIN(f, INGOT_IR_MOD, IB, ingot_ir_cast(f, INGOT_DTYPE_I32, I(f, 5))));
  io[8] = BIN(f, INGOT_IR_DIV, ingot_ir_unary(f, INGOT_IR_ABS, IA), ingot_ir_cast(f, INGOT_DTYPE_I32, I(f, 7)));
  ingot_ir_expr_t* C8 = ingot_ir_load(f, c8, i);
  ingot_ir_expr_t* U8 = ingot_ir_load(f, u8, i);
  ingot_ir_expr_t* o8v[3] = {BIN(f, INGOT_IR_ADD, C8, C8), BIN(f, INGOT_IR_MUL, C8, ingot_ir_cast(f, INGOT_DTYPE_I8, I(f, 3))),
                             ingot_ir_cast(f, INGOT_DTYPE_I8, A)};
  ingot_ir_expr_t* ouv[2] = {BIN(f, INGOT_IR_ADD, U8, ingot_ir_cast(f, INGOT_DTYPE_U8, I(f, 200))),
                             BIN(f, INGOT_IR_MOD, U8, ingot_ir_cast(f, INGOT_DTYPE_U8, I(f, 7)))};
  ingot_ir_expr_t* obv[2] = {
      BIN(f, INGOT_IR_OR, BIN(f, INGOT_IR_AND, BIN(f, INGOT_IR_LT, A, B), ingot_ir_unary(f, INGOT_IR_NOT, BIN(f, INGOT_IR_EQ, IA, IB))),
          BIN(f, INGOT_IR_NE, A, A)),
      ingot_ir_cast(f, INGOT_DTYPE_BOOL, A)};
  ingot_ir_expr_t* D = ingot_ir_load(f, d, i);
  ingot_ir_expr_t* dov[kSemF64Ops] = {
      BIN(f, INGOT_IR_MUL, D, D), ingot_ir_unary(f, INGOT_IR_EXP, D),
      BIN(f, INGOT_IR_POW, ingot_ir_unary(f, INGOT_IR_ABS, D), ingot_ir_float(f, INGOT_DTYPE_F64, 0.5)),
      BIN(f, INGOT_IR_MIN, D, ingot_ir_cast(f, INGOT_DTYPE_F64, A)), ingot_ir_unary(f, INGOT_IR_TANH, D),
      ingot_ir_cast(f, INGOT_DTYPE_F64, IA)};
  ingot_ir_stmt_t* st[64];
  int n = 0;
  st[n++] = ingot_ir_local(f, iv, ingot_ir_add(f, ingot_ir_mul(f, V(f, blk), I(f, 40)), V(f, th)));
  for (int k = 0; k < kSemF32Ops; ++k) st[n++] = ingot_ir_store(f, of, ingot_ir_add(f, i, I(f, k * kSemN)), fo[k]);
  for (int k = 0; k < kSemI32Ops; ++k) st[n++] = ingot_ir_store(f, oi, ingot_ir_add(f, i, I(f, k * kSemN)), io[k]);
  for (int k = 0; k < 3; ++k) st[n++] = ingot_ir_store(f, o8, ingot_ir_add(f, i, I(f, k * kSemN)), o8v[k]);
  for (int k = 0; k < 2; ++k) st[n++] = ingot_ir_store(f, ou, ingot_ir_add(f, i, I(f, k * kSemN)), ouv[k]);
  for (int k = 0; k < 2; ++k) st[n++] = ingot_ir_store(f, ob, ingot_ir_add(f, i, I(f, k * kSemN)), obv[k]);
  for (int k = 0; k < kSemF64Ops; ++k) st[n++] = ingot_ir_store(f, od, ingot_ir_add(f, i, I(f, k * kSemN)), dov[k]);
  f->body = BOUND(f, blk, 2, BLOCK_LOOP, 0, BOUND(f, th, 40, THREAD_LOOP, 0, ingot_ir_block(f, st, (uint32_t)n)));
  return f;
}

/* No GPU loop at all: one thread runs a serial prefix sum. */
static ingot_ir_func_t* k_serial(void) {
  ingot_ir_func_t* f = ingot_ir_func_create("k_serial");
  uint32_t x = BUF(f, "x", INGOT_DTYPE_F64, INGOT_IR_BUFFER_INPUT, 50);
  uint32_t y = BUF(f, "y", INGOT_DTYPE_F64, INGOT_IR_BUFFER_OUTPUT, 50);
  uint32_t i = LOOPV(f, "i");
  uint32_t acc = ingot_ir_add_var(f, "acc", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F64);
  ingot_ir_stmt_t* loop = ingot_ir_for(f, i, 50, BLK(f, 2, ingot_ir_assign(f, acc, ingot_ir_add(f, V(f, acc), ingot_ir_load(f, x, V(f, i)))),
                                                       ingot_ir_store(f, y, V(f, i), V(f, acc))));
  loop->u.loop.loop_kind = INGOT_IR_LOOP_UNROLLED;
  f->body = BLK(f, 2, ingot_ir_local(f, acc, ingot_ir_float(f, INGOT_DTYPE_F64, 0.0)), loop);
  return f;
}

typedef ingot_ir_func_t* (*kernel_fn)(void);
static const kernel_fn k_hand[] = {k_sizes, k_ystride, k_transpose, k_reduce, k_semantics, k_serial};
enum { kHandCount = sizeof(k_hand) / sizeof(k_hand[0]) };

/* ---- Lowered kernels bound by a generic rule: each stage's spatial loops
 * fused into one, split by `factor`, the outer part bound to blocks on x
 * and the inner to threads on x. Stages over the same output map every
 * element to the same thread, so no barrier is needed between them.
 * Returns how many stages were bound. */
static uint32_t bind_generic(ingot_kernel_t* k, int64_t factor) {
  ingot_ir_func_t* f = k->func;
  uint32_t bound = 0;
  for (uint32_t s = 0; s < k->stage_count; ++s) {
    const ingot_stage_t* st = &k->stages[s];
    if (st->spatial_count == 0) continue;
    char cur[64];
    snprintf(cur, sizeof(cur), "%s", f->vars[st->spatial[0]].name);
    bool ok = true;
    for (uint32_t j = 1; j < st->spatial_count && ok; ++j) {
      char fused[64];
      snprintf(fused, sizeof(fused), "gpu_s%u_f%u", s, j);
      ok = ingot_schedule_fuse(f, cur, f->vars[st->spatial[j]].name, fused) == INGOT_OK;
      if (ok) snprintf(cur, sizeof(cur), "%s", fused);
    }
    if (!ok) continue;
    char outer[64], inner[64];
    snprintf(outer, sizeof(outer), "gpu_s%u_b", s);
    snprintf(inner, sizeof(inner), "gpu_s%u_t", s);
    if (ingot_schedule_split(f, cur, factor, outer, inner) != INGOT_OK) continue;
    if (ingot_schedule_bind(f, outer, INGOT_IR_LOOP_GPU_BLOCK, 0) != INGOT_OK) continue;
    if (ingot_schedule_bind(f, inner, INGOT_IR_LOOP_GPU_THREAD, 0) != INGOT_OK) continue;
    ++bound;
  }
  ingot_compiler_error_clear();
  return bound;
}

/* ---- Host emulation. */
static const char k_shim[] =
    "// Host emulation of the CUDA / HIP subset Ingot's printer uses (test only):\n"
    "// every block's threads run as pthreads, blocks one after another;\n"
    "// __shared__ arrays are static (one copy, reused block after block).\n"
    "#include <math.h>\n#include <pthread.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
    "struct ingot_emu_dim3 { unsigned x, y, z; };\n"
    "static thread_local ingot_emu_dim3 threadIdx, blockIdx;\n"
    "static ingot_emu_dim3 blockDim, gridDim;\n"
    "static pthread_barrier_t ingot_emu_sync, ingot_emu_block_end;\n"
    "#define __global__\n#define __device__\n#define __forceinline__ inline\n#define __shared__ static\n"
    "#define __launch_bounds__(n)\n"
    "static inline void __syncthreads(void) { pthread_barrier_wait(&ingot_emu_sync); }\n"
    "static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }\n"
    "static inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }\n"
    "static inline double __longlong_as_double(long long i) { double d; memcpy(&d, &i, 8); return d; }\n"
    "typedef void (*ingot_emu_fn)(void* const*);\n"
    "struct ingot_emu_job { unsigned tid; ingot_emu_fn fn; void* const* args; };\n"
    "static void* ingot_emu_worker(void* p) {\n"
    "  ingot_emu_job* j = (ingot_emu_job*)p;\n"
    "  threadIdx.x = j->tid % blockDim.x;\n"
    "  threadIdx.y = (j->tid / blockDim.x) % blockDim.y;\n"
    "  threadIdx.z = j->tid / (blockDim.x * blockDim.y);\n"
    "  for (unsigned z = 0; z < gridDim.z; ++z)\n"
    "    for (unsigned y = 0; y < gridDim.y; ++y)\n"
    "      for (unsigned x = 0; x < gridDim.x; ++x) {\n"
    "        blockIdx.x = x; blockIdx.y = y; blockIdx.z = z;\n"
    "        j->fn(j->args);\n"
    "        pthread_barrier_wait(&ingot_emu_block_end);\n"
    "      }\n"
    "  return 0;\n"
    "}\n"
    "static int ingot_emu_run(ingot_emu_fn fn, const unsigned* grid, const unsigned* block, void* const* args) {\n"
    "  gridDim.x = grid[0]; gridDim.y = grid[1]; gridDim.z = grid[2];\n"
    "  blockDim.x = block[0]; blockDim.y = block[1]; blockDim.z = block[2];\n"
    "  unsigned n = block[0] * block[1] * block[2];\n"
    "  if (n == 0 || grid[0] * grid[1] * grid[2] == 0) return -1;\n"
    "  pthread_barrier_init(&ingot_emu_sync, 0, n);\n"
    "  pthread_barrier_init(&ingot_emu_block_end, 0, n);\n"
    "  ingot_emu_job* jobs = (ingot_emu_job*)calloc(n, sizeof(ingot_emu_job));\n"
    "  pthread_t* th = (pthread_t*)calloc(n, sizeof(pthread_t));\n"
    "  pthread_attr_t attr;\n"
    "  pthread_attr_init(&attr);\n"
    "  pthread_attr_setstacksize(&attr, 1 << 18);\n"
    "  for (unsigned i = 0; i < n; ++i) {\n"
    "    jobs[i].tid = i; jobs[i].fn = fn; jobs[i].args = args;\n"
    "    if (pthread_create(&th[i], &attr, ingot_emu_worker, &jobs[i]) != 0) { fprintf(stderr, \"pthread_create\\n\"); abort(); }\n"
    "  }\n"
    "  for (unsigned i = 0; i < n; ++i) pthread_join(th[i], 0);\n"
    "  pthread_attr_destroy(&attr);\n"
    "  pthread_barrier_destroy(&ingot_emu_sync);\n"
    "  pthread_barrier_destroy(&ingot_emu_block_end);\n"
    "  free(jobs);\n  free(th);\n"
    "  return 0;\n"
    "}\n";

typedef int (*emu_launch_fn)(unsigned kernel, const unsigned* grid, const unsigned* block, void* const* args);

typedef struct emu_module_t {
  void* handle;
  emu_launch_fn launch;
} emu_module_t;

static const char* emu_ctype(ingot_dtype_t t) {
  switch (t) {
    case INGOT_DTYPE_F32: return "float";
    case INGOT_DTYPE_F64: return "double";
    case INGOT_DTYPE_I8: return "ingot_gpu_i8";
    case INGOT_DTYPE_U8: return "ingot_gpu_u8";
    case INGOT_DTYPE_I32: return "ingot_gpu_i32";
    case INGOT_DTYPE_I64: return "ingot_gpu_i64";
    case INGOT_DTYPE_BOOL: return "bool";
    default: return "void";
  }
}

/* Builds the printed source of `funcs` with the shim into a shared object
 * and loads it. `tag` names the files. */
static bool emu_build(const char* tag, const char* source, ingot_ir_func_t* const* funcs, uint32_t count,
                      emu_module_t* out) {
  memset(out, 0, sizeof(*out));
  ingot_strbuf_t m = {0};
  ingot_strbuf_append(&m, source);
  ingot_strbuf_append(&m, "\n// ---- test wrappers\n");
  for (uint32_t k = 0; k < count; ++k) {
    const ingot_ir_func_t* f = funcs[k];
    ingot_strbuf_appendf(&m, "static void ingot_emu_call_%u(void* const* a) { %s(", k, f->name);
    uint32_t params = ingot_ir_param_count(f);
    for (uint32_t i = 0; i < params; ++i)
      ingot_strbuf_appendf(&m, "%s(%s%s*)a[%u]", i ? ", " : "", f->buffers[i].role == INGOT_IR_BUFFER_INPUT ? "const " : "",
                           emu_ctype(f->buffers[i].dtype), i);
    ingot_strbuf_append(&m, "); }\n");
  }
  ingot_strbuf_append(&m, "static const ingot_emu_fn ingot_emu_fns[] = {");
  for (uint32_t k = 0; k < count; ++k) ingot_strbuf_appendf(&m, "%singot_emu_call_%u", k ? ", " : "", k);
  ingot_strbuf_appendf(&m, "};\nextern \"C\" int ingot_emu_launch(unsigned k, const unsigned* g, const unsigned* b, void* const* a) {\n"
                           "  return k < %uu ? ingot_emu_run(ingot_emu_fns[k], g, b, a) : -1;\n}\n", count);
  char shim[256], src[256], so[256], hipdir[256], cmd[2048];
  snprintf(shim, sizeof(shim), "%s/ingot_gpu_emu.h", g_dir);
  snprintf(src, sizeof(src), "%s/%s.cpp", g_dir, tag);
  snprintf(so, sizeof(so), "%s/%s.so", g_dir, tag);
  snprintf(hipdir, sizeof(hipdir), "%s/hip", g_dir);
  write_file(shim, k_shim, sizeof(k_shim) - 1);
  snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && : > '%s/hip_runtime.h'", hipdir, hipdir);
  run_cmd(cmd);
  write_file(src, m.data, m.length);
  ingot_strbuf_free(&m);
  snprintf(cmd, sizeof(cmd), "%s -std=c++17 -O1 -w -fPIC -shared -pthread -include '%s' -I '%s' -o '%s' '%s' 2>&1 | head -40",
           INGOT_TEST_CXX, shim, g_dir, so, src);
  int rc = run_cmd(cmd);
  if (rc != 0 || access(so, R_OK) != 0) {
    CHECKF(false, "%s: the host C++ compiler rejects the printed source (%s)", tag, src);
    return false;
  }
  out->handle = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  CHECKF(out->handle != NULL, "%s: dlopen: %s", tag, dlerror());
  if (!out->handle) return false;
  out->launch = (emu_launch_fn)dlsym(out->handle, "ingot_emu_launch");
  CHECKF(out->launch != NULL, "%s: no ingot_emu_launch", tag);
  return out->launch != NULL;
}

/* Deterministic data. specials: floats include NaN, infinities, signed
 * zeros and huge values; ints are never 0 (divisors). */
static uint32_t g_rng = 12345;
static uint32_t rnd(void) {
  g_rng = g_rng * 1664525u + 1013904223u;
  return g_rng >> 8;
}

static void fill(ingot_dtype_t t, void* p, int64_t n, bool input, bool specials) {
  static const double sp[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 3.0e9, -3.0e9, 1e30, 2.5, -2.5, 0.5, -1.5};
  for (int64_t i = 0; i < n; ++i) {
    double v = input ? ((double)(rnd() % 20000) / 2500.0 - 4.0) : 1234.5 + (double)(i % 7);
    if (input && specials && i % 5 == 0) v = sp[(i / 5) % (sizeof(sp) / sizeof(sp[0]))];
    int64_t iv = input ? (int64_t)(rnd() % 401) - 200 : 77;
    if (input && iv == 0) iv = 7;
    switch (t) {
      case INGOT_DTYPE_F32: ((float*)p)[i] = (float)v; break;
      case INGOT_DTYPE_F64: ((double*)p)[i] = v; break;
      case INGOT_DTYPE_I32: ((int32_t*)p)[i] = (int32_t)(specials && i % 11 == 0 ? iv * 10000000 : iv); break;
      case INGOT_DTYPE_I64: ((int64_t*)p)[i] = iv; break;
      case INGOT_DTYPE_I8: ((int8_t*)p)[i] = (int8_t)(input ? (int)(rnd() % 255) - 127 : 77); break;
      case INGOT_DTYPE_U8: ((uint8_t*)p)[i] = (uint8_t)(input ? rnd() % 256 : 77); break;
      case INGOT_DTYPE_BOOL: ((uint8_t*)p)[i] = (uint8_t)(input ? rnd() % 2 : 1); break;
      default: break;
    }
  }
}

/* Compares buffer contents; returns the number of mismatching elements and
 * reports the first few. */
static int64_t compare(const char* what, const char* buf, ingot_dtype_t t, const void* want, const void* got, int64_t n,
                       double tol) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    bool same;
    double w = 0, g = 0;
    switch (t) {
      case INGOT_DTYPE_F32:
      case INGOT_DTYPE_F64:
        w = t == INGOT_DTYPE_F32 ? ((const float*)want)[i] : ((const double*)want)[i];
        g = t == INGOT_DTYPE_F32 ? ((const float*)got)[i] : ((const double*)got)[i];
        same = (isnan(w) && isnan(g)) || w == g || fabs(w - g) <= tol * fmax(1.0, fabs(w));
        break;
      default: {
        size_t sz = ingot_dtype_size(t);
        same = memcmp((const char*)want + i * sz, (const char*)got + i * sz, sz) == 0;
        if (t == INGOT_DTYPE_I32) { w = ((const int32_t*)want)[i]; g = ((const int32_t*)got)[i]; }
        else if (t == INGOT_DTYPE_I64) { w = (double)((const int64_t*)want)[i]; g = (double)((const int64_t*)got)[i]; }
        else if (t == INGOT_DTYPE_I8) { w = ((const int8_t*)want)[i]; g = ((const int8_t*)got)[i]; }
        else { w = ((const uint8_t*)want)[i]; g = ((const uint8_t*)got)[i]; }
      }
    }
    if (!same) {
      if (bad < 3) fprintf(stderr, "  %s: %s[%lld]: interpreter %.9g, emulated GPU %.9g\n", what, buf, (long long)i, w, g);
      ++bad;
    }
  }
  return bad;
}

/* Runs function `f` (kernel `k` of module `m`) with `launch` on the host
 * emulation and with the interpreter, on the same data; returns the number
 * of mismatching elements (-1: a run failed). */
static int64_t emu_compare(const emu_module_t* m, uint32_t k, const ingot_ir_func_t* f, const ingot_launch_record_t* launch,
                           bool specials, const char* what) {
  uint32_t params = ingot_ir_param_count(f);
  void** want = calloc(params + 1, sizeof(void*));
  void** got = calloc(params + 1, sizeof(void*));
  int64_t* numel = calloc(params + 1, sizeof(int64_t));
  uint32_t seed = g_rng;
  for (uint32_t i = 0; i < params; ++i) {
    numel[i] = ingot_ir_buffer_numel(&f->buffers[i]);
    size_t bytes = (size_t)numel[i] * ingot_dtype_size(f->buffers[i].dtype) + 1;
    want[i] = malloc(bytes);
    got[i] = malloc(bytes);
    fill(f->buffers[i].dtype, want[i], numel[i], f->buffers[i].role == INGOT_IR_BUFFER_INPUT, specials);
    memcpy(got[i], want[i], bytes);
  }
  (void)seed;
  int64_t bad = 0;
  ingot_status_t st = ingot_ir_interpret(f, want);
  CHECKF(st == INGOT_OK, "%s: interpreter: %s", what, ingot_compiler_error());
  int rc = m->launch(k, launch->grid, launch->block, got);
  CHECKF(rc == 0, "%s: emulated launch failed", what);
  if (st != INGOT_OK || rc != 0) bad = -1;
  for (uint32_t i = 0; i < params && bad >= 0; ++i)
    bad += compare(what, f->buffers[i].name, f->buffers[i].dtype, want[i], got[i], numel[i],
                   f->buffers[i].dtype == INGOT_DTYPE_F32 ? 1e-6 : 1e-12);
  for (uint32_t i = 0; i < params; ++i) {
    free(want[i]);
    free(got[i]);
  }
  free(want);
  free(got);
  free(numel);
  return bad;
}

/* Emits funcs for `target`, builds them on the host and compares each with
 * the interpreter. */
static void emu_check_module(const char* tag, ingot_ir_func_t* const* funcs, uint32_t count, const ingot_target_t* target,
                             bool specials_for_semantics, int* out_kernels) {
  ingot_strbuf_t src = {0};
  ingot_status_t st = ingot_codegen_emit(funcs, count, target, &src);
  CHECKF(st == INGOT_OK, "%s: emit: %s", tag, ingot_compiler_error());
  ingot_launch_record_t* launches = calloc(count + 1, sizeof(*launches));
  if (st == INGOT_OK) st = ingot_codegen_gpu_launches(funcs, count, target, launches);
  CHECKF(st == INGOT_OK, "%s: launches: %s", tag, ingot_compiler_error());
  emu_module_t m;
  if (st == INGOT_OK && emu_build(tag, src.data, funcs, count, &m)) {
    for (uint32_t k = 0; k < count; ++k) {
      char what[160];
      snprintf(what, sizeof(what), "%s/%s (grid %u x %u x %u, block %u x %u x %u)", tag, funcs[k]->name, launches[k].grid[0],
               launches[k].grid[1], launches[k].grid[2], launches[k].block[0], launches[k].block[1], launches[k].block[2]);
      bool sp = specials_for_semantics && strcmp(funcs[k]->name, "k_semantics") == 0;
      int64_t bad = emu_compare(&m, k, funcs[k], &launches[k], sp, what);
      CHECKF(bad == 0, "%s: %lld elements differ from the interpreter", what, (long long)bad);
      if (bad == 0) printf("ok   %s\n", what);
      ++*out_kernels;
    }
    /* The harness can fail: the first kernel with more than one block,
     * launched with a block fewer, leaves work undone. */
    for (uint32_t k = 0; k < count; ++k) {
      if (launches[k].grid[0] < 2) continue;
      ingot_launch_record_t short_launch = launches[k];
      short_launch.grid[0] -= 1;
      char what[160];
      snprintf(what, sizeof(what), "%s/%s launched with grid x %u (harness self-check)", tag, funcs[k]->name,
               short_launch.grid[0]);
      fprintf(stderr, "expected mismatches follow (%s):\n", what);
      int64_t bad = emu_compare(&m, k, funcs[k], &short_launch, false, what);
      CHECKF(bad > 0, "%s: a launch short of a block went unnoticed", what);
      break;
    }
    dlclose(m.handle);
  }
  free(launches);
  ingot_strbuf_free(&src);
}

/* Small graphs of real ops (tests/lower's helpers), lowered, bound. */
static ingot_graph_t* g_conv(void) {
  ingot_graph_t* g = tg_graph(13);
  int64_t xd[4] = {1, 8, 10, 10}, wd[4] = {16, 8, 3, 3}, bd[1] = {16}, yd[4] = {1, 16, 10, 10};
  uint32_t x = tg_input(g, "x", 4, xd);
  uint32_t w = tg_weight(g, "w", 4, wd, NULL);
  uint32_t b = tg_weight(g, "b", 1, bd, NULL);
  uint32_t y = tg_output(g, "y", 4, yd);
  uint32_t ins[3] = {x, w, b};
  uint32_t node = tg_node(g, INGOT_OP_CONV, ins, 3, &y, 1);
  int64_t k[2] = {3, 3}, pads[4] = {1, 1, 1, 1};
  tg_attr_ints(g, node, "kernel_shape", k, 2);
  tg_attr_ints(g, node, "pads", pads, 4);
  g->nodes[node].epilogue.activation = INGOT_ACTIVATION_RELU;
  return g;
}
static ingot_graph_t* g_gemm(void) {
  ingot_graph_t* g = tg_graph(13);
  int64_t ad[2] = {3, 20}, bd[2] = {30, 20}, cd[1] = {30}, yd[2] = {3, 30};
  uint32_t a = tg_input(g, "a", 2, ad);
  uint32_t b = tg_weight(g, "b", 2, bd, NULL);
  uint32_t c = tg_weight(g, "c", 1, cd, NULL);
  uint32_t y = tg_output(g, "y", 2, yd);
  uint32_t ins[3] = {a, b, c};
  uint32_t node = tg_node(g, INGOT_OP_GEMM, ins, 3, &y, 1);
  tg_attr_int(g, node, "transB", 1);
  return g;
}
static ingot_graph_t* g_softmax(void) {
  ingot_graph_t* g = tg_graph(13);
  int64_t d[2] = {5, 37};
  uint32_t x = tg_input(g, "x", 2, d);
  uint32_t y = tg_output(g, "y", 2, d);
  tg_node(g, INGOT_OP_SOFTMAX, &x, 1, &y, 1);
  return g;
}
static ingot_graph_t* g_maxpool(void) {
  ingot_graph_t* g = tg_graph(13);
  int64_t xd[4] = {1, 4, 9, 9}, yd[4] = {1, 4, 4, 4}, k[2] = {3, 3}, s[2] = {2, 2};
  uint32_t x = tg_input(g, "x", 4, xd);
  uint32_t y = tg_output(g, "y", 4, yd);
  uint32_t node = tg_node(g, INGOT_OP_MAXPOOL, &x, 1, &y, 1);
  tg_attr_ints(g, node, "kernel_shape", k, 2);
  tg_attr_ints(g, node, "strides", s, 2);
  return g;
}
static ingot_graph_t* g_add(void) {
  ingot_graph_t* g = tg_graph(13);
  int64_t ad[3] = {2, 3, 50}, bd[1] = {50};
  uint32_t a = tg_input(g, "a", 3, ad);
  uint32_t b = tg_input(g, "b", 1, bd);
  uint32_t y = tg_output(g, "y", 3, ad);
  uint32_t ins[2] = {a, b};
  tg_node(g, INGOT_OP_ADD, ins, 2, &y, 1);
  return g;
}
static ingot_graph_t* g_tanh(void) {
  ingot_graph_t* g = tg_graph(13);
  int64_t d[2] = {7, 30};
  uint32_t x = tg_input(g, "x", 2, d);
  uint32_t y = tg_output(g, "y", 2, d);
  tg_node(g, INGOT_OP_TANH, &x, 1, &y, 1);
  return g;
}

typedef ingot_graph_t* (*graph_fn)(void);

static int test_emu(void) {
  if (!INGOT_TEST_CXX[0]) {
    printf("skipped: no C++ compiler found at build time for the host emulation\n");
    return 77;
  }
  int kernels = 0;
  /* 1. Hand-made kernels; max 128 threads a block (k_sizes' 300 is a block
   * stride), in the CUDA dialect and in the HIP one. */
  ingot_ir_func_t* hand[kHandCount];
  for (int i = 0; i < kHandCount; ++i) {
    hand[i] = k_hand[i]();
    ingot_status_t st = ingot_ir_verify(hand[i]);
    CHECKF(st == INGOT_OK, "hand kernel %d: %s", i, ingot_compiler_error());
  }
  ingot_target_t cuda = gpu_target(INGOT_TARGET_CUDA, "sm_90", 128);
  ingot_target_t rocm = gpu_target(INGOT_TARGET_ROCM, "gfx90a", 128);
  emu_check_module("hand_cuda", hand, kHandCount, &cuda, true, &kernels);
  emu_check_module("hand_hip", hand, kHandCount, &rocm, true, &kernels);
  /* 2. The same with 32 threads a block at most: more strides. */
  ingot_target_t small = gpu_target(INGOT_TARGET_CUDA, "sm_80", 32);
  emu_check_module("hand_cuda_32", hand, kHandCount, &small, true, &kernels);
  for (int i = 0; i < kHandCount; ++i) ingot_ir_func_destroy(hand[i]);

  /* 3. Lowered kernels of real ops, bound by the generic rule (64 and 48
   * threads: the last block partly idle). */
  graph_fn graphs[] = {g_conv, g_gemm, g_softmax, g_maxpool, g_add, g_tanh};
  ingot_ir_func_t* lowered[64];
  uint32_t n = 0, stages = 0, bound = 0;
  ingot_lowered_t* keep[16];
  ingot_graph_t* keep_g[16];
  uint32_t nkeep = 0;
  for (size_t gi = 0; gi < sizeof(graphs) / sizeof(graphs[0]); ++gi) {
    ingot_graph_t* g = graphs[gi]();
    ingot_lowered_t* l = tg_lower(g);
    CHECKF(l != NULL, "graph %zu does not lower", gi);
    if (!l) {
      ingot_graph_destroy(g);
      continue;
    }
    for (uint32_t k = 0; k < l->kernel_count && n < 64; ++k) {
      stages += l->kernels[k].stage_count;
      bound += bind_generic(&l->kernels[k], gi % 2 ? 48 : 64);
      lowered[n++] = l->kernels[k].func;
    }
    keep[nkeep] = l;
    keep_g[nkeep++] = g;
  }
  printf("lowered: %u kernels, %u of %u stages bound to blocks and threads\n", n, bound, stages);
  CHECKF(bound == stages, "the generic rule bound %u of %u stages", bound, stages);
  ingot_target_t big = gpu_target(INGOT_TARGET_CUDA, "sm_90", 1024);
  emu_check_module("lowered_cuda", lowered, n, &big, false, &kernels);
  for (uint32_t i = 0; i < nkeep; ++i) {
    ingot_lowered_destroy(keep[i]);
    ingot_graph_destroy(keep_g[i]);
  }

  /* 4. Contractions scheduled by gpu.gemm (block and thread tiles, operand
   * tiles in shared memory filled between barriers): the defaults and a K
   * step of 2 (several fills, each between two barriers), with every thread
   * of a block a pthread. */
  graph_fn gemms[] = {g_conv, g_gemm};
  ingot_ir_func_t* tiled[16];
  uint32_t nt = 0, staged = 0;
  nkeep = 0;
  for (size_t gi = 0; gi < sizeof(gemms) / sizeof(gemms[0]); ++gi)
    for (int variant = 0; variant < 2; ++variant) {
      ingot_graph_t* g = gemms[gi]();
      ingot_lowered_t* l = tg_lower(g);
      CHECKF(l != NULL, "gemm graph %zu does not lower", gi);
      if (!l) {
        ingot_graph_destroy(g);
        continue;
      }
      for (uint32_t k = 0; k < l->kernel_count && nt < 16; ++k) {
        ingot_kernel_t* kn = &l->kernels[k];
        ingot_schedule_space_t space;
        if (ingot_schedule_space(kn, &big, "gpu.gemm", &space) != INGOT_OK) continue;
        const char* knob = "gpu_k_step";
        int64_t two = 2;
        ingot_schedule_t s;
        ingot_schedule_init(&s);
        ingot_status_t st = ingot_schedule_from_template(kn, &big, "gpu.gemm", &knob, &two, variant, &s);
        if (st == INGOT_OK) st = ingot_schedule_apply(kn->func, &s);
        CHECKF(st == INGOT_OK, "gpu.gemm on %s: %s", kn->func->name, ingot_compiler_error());
        for (uint32_t d = 0; d < s.directive_count; ++d) staged += s.directives[d].kind == INGOT_DIRECTIVE_CACHE_READ;
        ingot_schedule_deinit(&s);
        if (variant) kn->func->name = ingot_arena_printf(&kn->func->arena, "%s_k2", kn->func->name);
        if (st == INGOT_OK) tiled[nt++] = kn->func;
      }
      keep[nkeep] = l;
      keep_g[nkeep++] = g;
    }
  CHECKF(nt >= 4 && staged >= 4, "gpu.gemm scheduled %u kernels, %u shared tiles", nt, staged);
  emu_check_module("gemm_cuda", tiled, nt, &big, false, &kernels);
  for (uint32_t i = 0; i < nkeep; ++i) {
    ingot_lowered_destroy(keep[i]);
    ingot_graph_destroy(keep_g[i]);
  }
  printf("%d kernels run on the host emulation\n", kernels);
  return 0;
}

/* ---- Launches and refusals (no tools needed). */
static void expect_fail(ingot_status_t st, ingot_status_t code, const char* needle, const char* what) {
  const char* msg = ingot_compiler_error();
  CHECKF(st == code && strstr(msg, needle), "%s: status %d (want %d), message: %s", what, (int)st, (int)code, msg);
  if (st == code) printf("refused as expected (%s): %s\n", what, msg);
}

static int test_launch(void) {
  ingot_target_t t128 = gpu_target(INGOT_TARGET_CUDA, "sm_90", 128);
  ingot_target_t t1024 = gpu_target(INGOT_TARGET_CUDA, "sm_90", 1024);
  ingot_ir_func_t* f[kHandCount];
  for (int i = 0; i < kHandCount; ++i) f[i] = k_hand[i]();
  ingot_launch_record_t l[kHandCount];
  ingot_status_t st = ingot_codegen_gpu_launches(f, kHandCount, &t128, l);
  CHECKF(st == INGOT_OK, "launches: %s", ingot_compiler_error());
  static const uint32_t want[kHandCount][6] = {
      {5, 1, 1, 128, 1, 1},      /* k_sizes: thread loops 128, 300, 37 capped at 128 */
      {1, 65535, 3, 1, 1, 1},    /* k_ystride: y 70000 capped */
      {5, 3, 1, 8, 8, 1},        /* k_transpose */
      {6, 1, 1, 64, 1, 1},       /* k_reduce */
      {2, 1, 1, 40, 1, 1},       /* k_semantics */
      {1, 1, 1, 1, 1, 1},        /* k_serial: no GPU loop */
  };
  for (int i = 0; i < kHandCount && st == INGOT_OK; ++i) {
    CHECKF(l[i].kernel == (uint32_t)i && l[i].shared_bytes == 0, "%s: kernel %u shared %u", f[i]->name, l[i].kernel,
           l[i].shared_bytes);
    CHECKF(memcmp(l[i].grid, want[i], 12) == 0 && memcmp(l[i].block, want[i] + 3, 12) == 0,
           "%s: grid %u %u %u block %u %u %u", f[i]->name, l[i].grid[0], l[i].grid[1], l[i].grid[2], l[i].block[0],
           l[i].block[1], l[i].block[2]);
  }
  /* With 1024 threads: k_sizes takes 300; 32 threads: 32. */
  st = ingot_codegen_gpu_launches(f, 1, &t1024, l);
  CHECKF(st == INGOT_OK && l[0].block[0] == 300, "k_sizes on 1024: block %u", l[0].block[0]);
  ingot_target_t t32 = gpu_target(INGOT_TARGET_CUDA, "sm_90", 32);
  st = ingot_codegen_gpu_launches(f + 2, 1, &t32, l);
  /* 8 x 8 = 64 > 32: the largest axis (x first on ties) halves. */
  CHECKF(st == INGOT_OK && l[0].block[0] == 4 && l[0].block[1] == 8, "transpose on 32: block %u x %u", l[0].block[0],
         l[0].block[1]);

  /* The printed source says the same (rule 2): a guard, a stride, idx. */
  ingot_strbuf_t src = {0};
  st = ingot_codegen_emit(f, 1, &t128, &src);
  CHECKF(st == INGOT_OK, "emit: %s", ingot_compiler_error());
  if (st == INGOT_OK) {
    CHECKF(strstr(src.data, "extern \"C\" __global__ void __launch_bounds__(128) k_sizes(const float* __restrict__ b_x, "
                            "float* __restrict__ b_o1"),
           "signature:\n%s", src.data);
    CHECKF(strstr(src.data, "v_t2 < 300LL; v_t2 += 128LL"), "block-stride loop missing");
    CHECKF(strstr(src.data, "if (v_t3 < 37LL)"), "guard missing");
    CHECKF(strstr(src.data, "if (v_b2 < 3LL)"), "block guard missing");
    CHECKF(strstr(src.data, "if (threadIdx.x == 0u && blockIdx.x == 0u) b_cnt[1LL]"), "one-thread store missing");
    CHECKF(!strstr(src.data, "#include"), "CUDA source includes a header");
  }
  ingot_strbuf_free(&src);
  ingot_target_t rocm = gpu_target(INGOT_TARGET_ROCM, "gfx90a", 1024);
  st = ingot_codegen_emit(f + 3, 1, &rocm, &src);
  CHECKF(st == INGOT_OK && strstr(src.data, "#include <hip/hip_runtime.h>") && strstr(src.data, "__shared__ float s_sh[64];") &&
             strstr(src.data, "__syncthreads();"),
         "HIP source: %s", st == INGOT_OK ? src.data : ingot_compiler_error());
  ingot_strbuf_free(&src);

  /* Prepare: PARALLEL and VECTORIZED become SERIAL, bound loops stay; the C
   * target still refuses them. */
  {
    ingot_ir_func_t* p = ingot_ir_func_create("k_par");
    uint32_t x = BUF(p, "x", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 64);
    uint32_t i = LOOPV(p, "i"), j = LOOPV(p, "j"), t = LOOPV(p, "t");
    ingot_ir_expr_t* idx = ingot_ir_add(p, ingot_ir_mul(p, V(p, i), I(p, 8)), V(p, j));
    ingot_ir_stmt_t* inner = ingot_ir_for(p, j, 8, ingot_ir_store(p, x, idx, F32(p, 1.0)));
    inner->u.loop.loop_kind = INGOT_IR_LOOP_VECTORIZED;
    ingot_ir_stmt_t* outer = ingot_ir_for(p, i, 4, inner);
    outer->u.loop.loop_kind = INGOT_IR_LOOP_PARALLEL;
    p->body = BLK(p, 2, outer, BOUND(p, t, 32, THREAD_LOOP, 0, ingot_ir_store(p, x, ingot_ir_add(p, V(p, t), I(p, 32)), F32(p, 2.0))));
    ingot_codegen_prepared_t prep;
    st = ingot_codegen_prepare(&p, 1, &t128, &prep);
    CHECKF(st == INGOT_OK, "prepare for cuda: %s", ingot_compiler_error());
    if (st == INGOT_OK) {
      const ingot_ir_stmt_t* b = prep.funcs[0]->body;
      const ingot_ir_stmt_t* o = b->u.block.stmts[0];
      CHECKF(o->u.loop.loop_kind == INGOT_IR_LOOP_SERIAL && o->u.loop.body->u.loop.loop_kind == INGOT_IR_LOOP_SERIAL,
             "parallel/vectorized not made serial");
      CHECKF(b->u.block.stmts[1]->u.loop.loop_kind == INGOT_IR_LOOP_GPU_THREAD, "bound loop not kept");
      ingot_codegen_prepared_free(&prep);
    }
    st = ingot_codegen_prepare(&p, 1, NULL, &prep);
    expect_fail(st, INGOT_ERROR_UNSUPPORTED, "bound to a GPU", "bound loop for target c");
    ingot_ir_func_destroy(p);
  }
  /* Refusals. A reduction into an outer local bound to threads. */
  {
    ingot_ir_func_t* r = ingot_ir_func_create("k_bad_local");
    uint32_t x = BUF(r, "x", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 32);
    uint32_t y = BUF(r, "y", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 1);
    uint32_t t = LOOPV(r, "t");
    uint32_t acc = ingot_ir_add_var(r, "acc", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
    r->body = BLK(r, 3, ingot_ir_local(r, acc, F32(r, 0.0)),
                  BOUND(r, t, 32, THREAD_LOOP, 0, ingot_ir_assign(r, acc, ingot_ir_add(r, V(r, acc), ingot_ir_load(r, x, V(r, t))))),
                  ingot_ir_store(r, y, I(r, 0), V(r, acc)));
    st = ingot_codegen_gpu_launches(&r, 1, &t128, l);
    expect_fail(st, INGOT_ERROR_UNSUPPORTED, "assigns local 'acc'", "outer local in a thread loop");
    st = ingot_codegen_emit(&r, 1, &t128, &src);
    expect_fail(st, INGOT_ERROR_UNSUPPORTED, "k_bad_local", "emit of the same");
    CHECKF(src.length == 0, "output not empty on failure");
    ingot_ir_func_destroy(r);
  }
  /* Too much shared memory: 12289 floats. */
  {
    ingot_ir_func_t* s = ingot_ir_func_create("k_big_shared");
    uint32_t y = BUF(s, "y", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 1);
    uint32_t sh = BUF(s, "sh", INGOT_DTYPE_F32, INGOT_IR_BUFFER_SHARED, 12289);
    s->body = BLK(s, 3, ingot_ir_store(s, sh, I(s, 0), F32(s, 1.0)), ingot_ir_barrier(s),
                  ingot_ir_store(s, y, I(s, 0), ingot_ir_load(s, sh, I(s, 0))));
    st = ingot_codegen_gpu_launches(&s, 1, &t128, l);
    expect_fail(st, INGOT_ERROR_UNSUPPORTED, "49156 bytes", "shared bytes over the limit");
    ingot_ir_func_destroy(s);
  }
  /* float16 is storage: arithmetic on it is refused with a message (issue 14). */
  {
    ingot_ir_func_t* h = ingot_ir_func_create("k_half");
    uint32_t x = BUF(h, "x", INGOT_DTYPE_F16, INGOT_IR_BUFFER_INPUT, 8);
    uint32_t y = BUF(h, "y", INGOT_DTYPE_F16, INGOT_IR_BUFFER_OUTPUT, 8);
    uint32_t t = LOOPV(h, "t");
    h->body = BOUND(h, t, 8, THREAD_LOOP, 0,
                    ingot_ir_store(h, y, V(h, t), ingot_ir_add(h, ingot_ir_load(h, x, V(h, t)), ingot_ir_load(h, x, V(h, t)))));
    st = ingot_codegen_emit(&h, 1, &t128, &src);
    expect_fail(st, INGOT_ERROR_UNSUPPORTED, "float16", "float16 arithmetic");
    ingot_ir_func_destroy(h);
  }
  /* Kernel names are the functions' own: one that is no identifier, or a
   * helper's, is refused. */
  {
    const char* bad[] = {"conv-1", "ingot_gpu_floordiv"};
    for (int i = 0; i < 2; ++i) {
      ingot_ir_func_t* b = ingot_ir_func_create(bad[i]);
      uint32_t y = BUF(b, "y", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 1);
      b->body = ingot_ir_store(b, y, I(b, 0), F32(b, 1.0));
      st = ingot_codegen_emit(&b, 1, &t128, &src);
      expect_fail(st, INGOT_ERROR_INVALID_ARGUMENT, "not a C identifier free for a kernel", bad[i]);
      ingot_ir_func_destroy(b);
    }
  }
  /* A GPU target without its facts; a CPU target. */
  ingot_target_t bare = t128;
  bare.gpu.max_threads_per_block = 0;
  st = ingot_codegen_gpu_launches(f, 1, &bare, l);
  expect_fail(st, INGOT_ERROR_INVALID_ARGUMENT, "no GPU facts", "target without GPU facts");
  ingot_target_t cpu = t128;
  cpu.kind = INGOT_TARGET_C;
  snprintf(cpu.name, sizeof(cpu.name), "c");
  st = ingot_codegen_gpu_launches(f, 1, &cpu, l);
  expect_fail(st, INGOT_ERROR_INVALID_ARGUMENT, "not a GPU target", "launches for target c");
  for (int i = 0; i < kHandCount; ++i) ingot_ir_func_destroy(f[i]);
  return 0;
}

/* ---- NVRTC and hiprtc through the backends. */

/* Every kernel of the model, lowered and bound by the generic rule; NULL
 * (skip) when the model file is missing. */
static ingot_lowered_t* model_kernels(const char* path, ingot_graph_t** out_graph, uint32_t* out_bound,
                                      uint32_t* out_stages) {
  *out_graph = NULL;
  if (!path || access(path, R_OK) != 0) return NULL;
  ingot_driver_options_t opt;
  memset(&opt, 0, sizeof(opt));
  opt.model_path = path;
  ingot_graph_t* g = NULL;
  ingot_status_t st = ingot_driver_load_graph(&opt, &g);
  CHECKF(st == INGOT_OK, "load %s: %s", path, ingot_compiler_error());
  if (st != INGOT_OK) return NULL;
  ingot_lowered_t* l = NULL;
  st = ingot_lower_graph(g, &l);
  CHECKF(st == INGOT_OK, "lower %s: %s", path, ingot_compiler_error());
  if (st != INGOT_OK) {
    ingot_graph_destroy(g);
    return NULL;
  }
  *out_bound = *out_stages = 0;
  for (uint32_t k = 0; k < l->kernel_count; ++k) {
    *out_stages += l->kernels[k].stage_count;
    *out_bound += bind_generic(&l->kernels[k], 128);
  }
  *out_graph = g;
  return l;
}

/* Whether readelf lists every kernel of funcs as a defined function of the
 * ELF in data. */
static void check_symbols(const char* what, const uint8_t* data, size_t size, uint16_t machine,
                          ingot_ir_func_t* const* funcs, uint32_t count) {
  CHECKF(size > 64 && memcmp(data, "\x7f" "ELF", 4) == 0, "%s: not an ELF file", what);
  if (size <= 64) return;
  uint16_t m = (uint16_t)(data[18] | data[19] << 8);
  CHECKF(m == machine, "%s: e_machine %u, expected %u", what, m, machine);
  char path[256], list[256], cmd[1024];
  snprintf(path, sizeof(path), "%s/%s.elf", g_dir, what);
  snprintf(list, sizeof(list), "%s/%s.syms", g_dir, what);
  write_file(path, data, size);
  snprintf(cmd, sizeof(cmd), "%s -Ws '%s' > '%s'", INGOT_TEST_READELF, path, list);
  CHECKF(run_cmd(cmd) == 0, "%s: readelf failed", what);
  uint8_t* text = NULL;
  size_t n = 0;
  if (ingot_file_read(list, &text, &n) != INGOT_OK) return;
  char* t = calloc(n + 1, 1);
  memcpy(t, text, n);
  free(text);
  uint32_t found = 0;
  for (uint32_t k = 0; k < count; ++k) {
    bool ok = false;
    /* A line "... FUNC GLOBAL DEFAULT ... NAME" for the kernel. */
    char pat[160];
    snprintf(pat, sizeof(pat), " %s\n", funcs[k]->name);
    for (const char* p = strstr(t, pat); p && !ok; p = strstr(p + 1, pat)) {
      const char* bol = p;
      while (bol > t && bol[-1] != '\n') --bol;
      char line[512];
      size_t len = (size_t)(p - bol) < sizeof(line) - 1 ? (size_t)(p - bol) : sizeof(line) - 1;
      memcpy(line, bol, len);
      line[len] = '\0';
      ok = strstr(line, "FUNC") && strstr(line, "GLOBAL") && !strstr(line, "UND");
    }
    CHECKF(ok, "%s: readelf -Ws does not list kernel %s", what, funcs[k]->name);
    found += ok;
  }
  printf("%s: %zu bytes, %u of %u kernels listed\n", what, size, found, count);
  free(t);
}

static void gather(ingot_lowered_t* l, ingot_ir_func_t** hand, ingot_ir_func_t*** out, uint32_t* out_count) {
  uint32_t n = (l ? l->kernel_count : 0) + kHandCount;
  ingot_ir_func_t** all = calloc(n + 1, sizeof(*all));
  uint32_t c = 0;
  for (int i = 0; i < kHandCount; ++i) all[c++] = hand[i];
  for (uint32_t k = 0; l && k < l->kernel_count; ++k) all[c++] = l->kernels[k].func;
  *out = all;
  *out_count = c;
}

static int test_rtc(bool cuda, const char* model) {
  char about[1600];
  if (!ingot_codegen_rtc_describe(cuda ? INGOT_CODEGEN_RTC_NVRTC : INGOT_CODEGEN_RTC_HIPRTC, about, sizeof(about))) {
    printf("skipped: %s\n", about);
    return 77;
  }
  printf("%s\n", about);
  ingot_ir_func_t* hand[kHandCount];
  for (int i = 0; i < kHandCount; ++i) hand[i] = k_hand[i]();
  ingot_graph_t* g = NULL;
  uint32_t bound = 0, stages = 0;
  ingot_lowered_t* l = model_kernels(model, &g, &bound, &stages);
  if (l) printf("%s: %u kernels, %u of %u stages bound to blocks and threads\n", model, l->kernel_count, bound, stages);
  else printf("note: model '%s' not found: the hand-made kernels only\n", model ? model : "(none)");
  ingot_ir_func_t** all;
  uint32_t count;
  gather(l, hand, &all, &count);
  const char* archs_cuda[] = {"sm_80", "sm_90"};
  /* gfx942 first: the check of what hiprtc knows runs before hiprtc has
   * loaded its code-object library. */
  const char* archs_rocm[] = {"gfx942", "gfx90a"};
  for (int a = 0; a < 2; ++a) {
    const char* arch = cuda ? archs_cuda[a] : archs_rocm[a];
    ingot_target_t t = gpu_target(cuda ? INGOT_TARGET_CUDA : INGOT_TARGET_ROCM, arch, 1024);
    uint8_t* obj = NULL;
    size_t size = 0;
    char keep[256];
    snprintf(keep, sizeof(keep), "%s/module_%s.%s", g_dir, arch, cuda ? "cu" : "hip");
    printf("building %u kernels for %s\n", count, t.name);
    fflush(stdout);
    ingot_status_t st = ingot_codegen_build(all, count, &t, NULL, keep, &obj, &size);
    if (!cuda && strcmp(arch, "gfx942") == 0 && st != INGOT_OK) {
      /* ROCm 5.2's hiprtc predates gfx942: a clean error naming it. */
      const char* msg = ingot_compiler_error();
      CHECKF(st == INGOT_ERROR_UNSUPPORTED && strstr(msg, "gfx942") && strstr(msg, "gfx90a"), "gfx942: status %d: %s",
             (int)st, msg);
      printf("note: this hiprtc cannot compile for gfx942 (%s)\n", msg);
      continue;
    }
    CHECKF(st == INGOT_OK, "%s: build: %s", arch, ingot_compiler_error());
    if (st != INGOT_OK) continue;
    if (!cuda) {
      char what[64];
      snprintf(what, sizeof(what), "code_object_%s", arch);
      check_symbols(what, obj, size, 224 /* EM_AMDGPU */, all, count);
      CHECKF(memmem(obj, size, arch, strlen(arch)) != NULL, "%s: the code object does not name its processor", arch);
      free(obj);
      continue;
    }
    /* The code set: header, a CUBIN and PTX entry. */
    ingot_gpu_code_header_t h;
    ingot_gpu_code_entry_t e[2];
    CHECKF(size >= sizeof(h) + sizeof(e), "%s: code set of %zu bytes", arch, size);
    if (size < sizeof(h) + sizeof(e)) {
      free(obj);
      continue;
    }
    memcpy(&h, obj, sizeof(h));
    memcpy(e, obj + sizeof(h), sizeof(e));
    uint32_t num = (uint32_t)atoi(arch + 3);
    CHECKF(memcmp(h.magic, INGOT_GPU_CODE_MAGIC, 8) == 0 && h.version == INGOT_GPU_CODE_VERSION && h.count == 2,
           "%s: header", arch);
    CHECKF(e[0].kind == INGOT_GPU_CODE_CUBIN && e[0].arch == num && e[1].kind == INGOT_GPU_CODE_PTX && e[1].arch == num,
           "%s: entries %u/%u %u/%u", arch, e[0].kind, e[0].arch, e[1].kind, e[1].arch);
    bool in_range = e[0].offset % 16 == 0 && e[1].offset % 16 == 0 && e[0].offset + e[0].size <= size &&
                    e[1].offset + e[1].size <= size && e[1].size > 0;
    CHECKF(in_range, "%s: entries out of range", arch);
    if (in_range) {
      char what[64];
      snprintf(what, sizeof(what), "cubin_%s", arch);
      check_symbols(what, obj + e[0].offset, e[0].size, 190 /* EM_CUDA */, all, count);
      const char* ptx = (const char*)obj + e[1].offset;
      CHECKF(ptx[e[1].size - 1] == '\0', "%s: PTX without its NUL", arch);
      char target[32];
      snprintf(target, sizeof(target), ".target sm_%u", num);
      CHECKF(strstr(ptx, target), "%s: PTX lacks '%s'", arch, target);
      for (uint32_t k = 0; k < count; ++k) {
        char entry[160];
        snprintf(entry, sizeof(entry), ".entry %s(", all[k]->name);
        CHECKF(strstr(ptx, entry), "%s: PTX lacks '%s'", arch, entry);
      }
      if (INGOT_TEST_PTXAS[0]) {
        char ptx_path[256], out_path[256], cmd[1024];
        snprintf(ptx_path, sizeof(ptx_path), "%s/%s.ptx", g_dir, arch);
        snprintf(out_path, sizeof(out_path), "%s/%s_ptxas.cubin", g_dir, arch);
        write_file(ptx_path, ptx, e[1].size - 1);
        snprintf(cmd, sizeof(cmd), "'%s' -arch=sm_90 -o '%s' '%s'", INGOT_TEST_PTXAS, out_path, ptx_path);
        CHECKF(run_cmd(cmd) == 0, "%s: ptxas -arch=sm_90 rejects the PTX (%s)", arch, cmd);
      } else {
        printf("note: no ptxas found at build time: the PTX was not assembled\n");
      }
    }
    free(obj);
  }
  free(all);
  for (int i = 0; i < kHandCount; ++i) ingot_ir_func_destroy(hand[i]);
  if (l) ingot_lowered_destroy(l);
  if (g) ingot_graph_destroy(g);
  return 0;
}

/* With INGOT_NVRTC_LIBRARY / INGOT_HIPRTC_LIBRARY naming missing files:
 * building fails UNSUPPORTED naming the library; emit still works. */
static int test_missing(void) {
  ingot_ir_func_t* f = k_sizes();
  for (int i = 0; i < 2; ++i) {
    ingot_target_t t = i == 0 ? gpu_target(INGOT_TARGET_CUDA, "sm_90", 1024) : gpu_target(INGOT_TARGET_ROCM, "gfx90a", 1024);
    uint8_t* obj = (uint8_t*)1;
    size_t size = 1;
    ingot_status_t st = ingot_codegen_build(&f, 1, &t, NULL, NULL, &obj, &size);
    expect_fail(st, INGOT_ERROR_UNSUPPORTED, i == 0 ? "NVRTC" : "hiprtc", t.name);
    CHECKF(obj == NULL && size == 0, "%s: outputs not cleared", t.name);
    ingot_strbuf_t src = {0};
    st = ingot_codegen_emit(&f, 1, &t, &src);
    CHECKF(st == INGOT_OK && src.length > 0, "%s: emit needs no compiler: %s", t.name, ingot_compiler_error());
    ingot_strbuf_free(&src);
  }
  ingot_ir_func_destroy(f);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_gpu_codegen launch | emu | nvrtc [MODEL] | hiprtc [MODEL] | missing\n");
    return 2;
  }
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return 1;
  }
  int rc;
  const char* model = argc > 2 ? argv[2] : NULL;
  if (strcmp(argv[1], "launch") == 0) rc = test_launch();
  else if (strcmp(argv[1], "emu") == 0) rc = test_emu();
  else if (strcmp(argv[1], "nvrtc") == 0) rc = test_rtc(true, model);
  else if (strcmp(argv[1], "hiprtc") == 0) rc = test_rtc(false, model);
  else if (strcmp(argv[1], "missing") == 0) rc = test_missing();
  else rc = 2;
  char cmd[128];
  if (!getenv("INGOT_TEST_KEEP")) {
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
    run_cmd(cmd);
  } else {
    printf("files kept in %s\n", g_dir);
  }
  if (rc != 0) return rc;
  if (g_failures) fprintf(stderr, "%d check(s) failed\n", g_failures);
  else printf("all checks passed\n");
  return g_failures ? 1 : 0;
}
