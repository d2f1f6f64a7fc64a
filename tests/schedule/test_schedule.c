/* Tests for schedule/: every primitive and every template keeps results
 * unchanged (checked with the IR interpreter), invalid directives fail and
 * leave the function unchanged, targets parse, tuning logs pick the best. */
#define _POSIX_C_SOURCE 200809L  /* mkstemp */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "schedule/schedule.h"

static int g_failures = 0;
static int g_verbose = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      if (ingot_compiler_error()[0]) fprintf(stderr, "  last error: %s\n", ingot_compiler_error()); \
      ++g_failures;                                                            \
    }                                                                          \
  } while (0)

#define CHECK_OK(expr)                                                         \
  do {                                                                         \
    ingot_status_t st_ = (expr);                                               \
    if (st_ != INGOT_OK) {                                                     \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, ingot_compiler_error()); \
      ++g_failures;                                                            \
    }                                                                          \
  } while (0)

/* A primitive that must succeed, followed by the verifier. */
#define PRIM(expr)                                                             \
  do {                                                                         \
    CHECK_OK(expr);                                                            \
    CHECK_OK(ingot_ir_verify(f));                                              \
  } while (0)

/* ------------------------------------------------------------------------ */
/* Kernels built by hand, in the stage form of lower.h                       */
/* ------------------------------------------------------------------------ */

typedef struct test_kernel_t {
  ingot_kernel_t k;
  ingot_stage_t stages[4];
} test_kernel_t;

static ingot_ir_expr_t* V(ingot_ir_func_t* f, uint32_t v) { return ingot_ir_var(f, v); }
static uint32_t loop_var(ingot_ir_func_t* f, const char* name) {
  return ingot_ir_add_var(f, name, INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
}

static void set_stage(ingot_stage_t* s, ingot_stage_role_t role, const uint32_t* sp, uint32_t ns, const uint32_t* rd,
                      uint32_t nr) {
  memset(s, 0, sizeof(*s));
  s->role = role;
  for (uint32_t i = 0; i < ns; ++i) s->spatial[i] = sp[i];
  for (uint32_t i = 0; i < nr; ++i) s->reduce[i] = rd[i];
  s->spatial_count = ns;
  s->reduce_count = nr;
}

static void kernel_free(test_kernel_t* t) {
  ingot_ir_func_destroy(t->k.func);
  free(t);
}

/* y[i, j] = a[i, j] + b[j] (broadcast), PURE. */
static test_kernel_t* make_add(int64_t m, int64_t n) {
  test_kernel_t* t = calloc(1, sizeof(*t));
  ingot_ir_func_t* f = ingot_ir_func_create("add");
  int64_t d2[2] = {m, n}, d1[1] = {n};
  uint32_t a = ingot_ir_add_buffer(f, "a", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 2, d2);
  uint32_t b = ingot_ir_add_buffer(f, "b", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 1, d1);
  uint32_t y = ingot_ir_add_buffer(f, "y", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 2, d2);
  uint32_t i = loop_var(f, "i"), j = loop_var(f, "j");
  ingot_ir_expr_t* idx[2] = {V(f, i), V(f, j)};
  ingot_ir_expr_t* flat = ingot_ir_flat_index(f, y, idx);
  ingot_ir_stmt_t* st = ingot_ir_store(f, y, flat, ingot_ir_add(f, ingot_ir_load(f, a, flat), ingot_ir_load(f, b, V(f, j))));
  f->body = ingot_ir_for(f, i, m, ingot_ir_for(f, j, n, st));
  ingot_ir_stmt_t* stmts[1] = {f->body};
  f->body = ingot_ir_block(f, stmts, 1);
  uint32_t sp[2] = {i, j};
  set_stage(&t->stages[0], INGOT_STAGE_PURE, sp, 2, NULL, 0);
  t->k.func = f;
  t->k.op_class = INGOT_OP_CLASS_INJECTIVE;
  t->k.stages = t->stages;
  t->k.stage_count = 1;
  t->k.workload = "add f32 7x13";
  return t;
}

/* C[i, j] = sum_k A[i, k] * B[k, j]: INIT then UPDATE, then FINISH (relu). */
static test_kernel_t* make_matmul(int64_t m, int64_t kk, int64_t n) {
  test_kernel_t* t = calloc(1, sizeof(*t));
  ingot_ir_func_t* f = ingot_ir_func_create("matmul");
  int64_t da[2] = {m, kk}, db[2] = {kk, n}, dc[2] = {m, n};
  uint32_t A = ingot_ir_add_buffer(f, "A", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 2, da);
  uint32_t B = ingot_ir_add_buffer(f, "B", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 2, db);
  uint32_t C = ingot_ir_add_buffer(f, "C", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 2, dc);
  uint32_t i0 = loop_var(f, "i0"), j0 = loop_var(f, "j0");
  uint32_t i = loop_var(f, "i"), j = loop_var(f, "j"), k = loop_var(f, "k");
  uint32_t i2 = loop_var(f, "i2"), j2 = loop_var(f, "j2");
  ingot_ir_expr_t* c0[2] = {V(f, i0), V(f, j0)};
  ingot_ir_stmt_t* init = ingot_ir_for(f, i0, m, ingot_ir_for(f, j0, n,
      ingot_ir_store(f, C, ingot_ir_flat_index(f, C, c0), ingot_ir_float(f, INGOT_DTYPE_F32, 0))));
  ingot_ir_expr_t* ci[2] = {V(f, i), V(f, j)}, *ai[2] = {V(f, i), V(f, k)}, *bi[2] = {V(f, k), V(f, j)};
  ingot_ir_expr_t* cidx = ingot_ir_flat_index(f, C, ci);
  ingot_ir_expr_t* prod = ingot_ir_mul(f, ingot_ir_load(f, A, ingot_ir_flat_index(f, A, ai)),
                                       ingot_ir_load(f, B, ingot_ir_flat_index(f, B, bi)));
  ingot_ir_stmt_t* upd = ingot_ir_for(f, i, m, ingot_ir_for(f, j, n, ingot_ir_for(f, k, kk,
      ingot_ir_store(f, C, cidx, ingot_ir_add(f, ingot_ir_load(f, C, cidx), prod)))));
  ingot_ir_expr_t* c2[2] = {V(f, i2), V(f, j2)};
  ingot_ir_expr_t* c2idx = ingot_ir_flat_index(f, C, c2);
  ingot_ir_stmt_t* fin = ingot_ir_for(f, i2, m, ingot_ir_for(f, j2, n,
      ingot_ir_store(f, C, c2idx, ingot_ir_binary(f, INGOT_IR_MAX, ingot_ir_load(f, C, c2idx),
                                                 ingot_ir_float(f, INGOT_DTYPE_F32, 0)))));
  ingot_ir_stmt_t* stages[3] = {init, upd, fin};
  f->body = ingot_ir_block(f, stages, 3);
  uint32_t s0[2] = {i0, j0}, s1[2] = {i, j}, r1[1] = {k}, s2[2] = {i2, j2};
  set_stage(&t->stages[0], INGOT_STAGE_INIT, s0, 2, NULL, 0);
  set_stage(&t->stages[1], INGOT_STAGE_UPDATE, s1, 2, r1, 1);
  set_stage(&t->stages[2], INGOT_STAGE_FINISH, s2, 2, NULL, 0);
  t->k.func = f;
  t->k.op_class = INGOT_OP_CLASS_CONTRACTION;
  t->k.stages = t->stages;
  t->k.stage_count = 3;
  t->k.workload = "matmul f32 m5 k7 n19";
  return t;
}

/* out[n, co, h, w] = sum_{ci, rh, rw} x[n, ci, h + rh - 1, w + rw - 1] * wt[co, ci, rh, rw]
 * with zero padding 1 (a select on the window position): INIT + UPDATE. */
static test_kernel_t* make_conv(int64_t nb, int64_t co, int64_t ci, int64_t hh, int64_t ww, ingot_op_class_t cls) {
  test_kernel_t* t = calloc(1, sizeof(*t));
  ingot_ir_func_t* f = ingot_ir_func_create("conv");
  int64_t dx[4] = {nb, ci, hh, ww}, dw[4] = {co, ci, 3, 3}, dy[4] = {nb, co, hh, ww};
  uint32_t X = ingot_ir_add_buffer(f, "x", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 4, dx);
  uint32_t W = ingot_ir_add_buffer(f, "wt", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 4, dw);
  uint32_t Y = ingot_ir_add_buffer(f, "y", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 4, dy);
  uint32_t a0 = loop_var(f, "n0"), a1 = loop_var(f, "c0"), a2 = loop_var(f, "h0"), a3 = loop_var(f, "w0");
  ingot_ir_expr_t* y0[4] = {V(f, a0), V(f, a1), V(f, a2), V(f, a3)};
  ingot_ir_stmt_t* init = ingot_ir_for(f, a0, nb, ingot_ir_for(f, a1, co, ingot_ir_for(f, a2, hh, ingot_ir_for(f, a3, ww,
      ingot_ir_store(f, Y, ingot_ir_flat_index(f, Y, y0), ingot_ir_float(f, INGOT_DTYPE_F32, 0.25))))));
  uint32_t n = loop_var(f, "n"), c = loop_var(f, "c"), h = loop_var(f, "h"), w = loop_var(f, "w");
  uint32_t rc = loop_var(f, "rc"), rh = loop_var(f, "rh"), rw = loop_var(f, "rw");
  ingot_ir_expr_t* one = ingot_ir_int(f, 1);
  ingot_ir_expr_t* ph = ingot_ir_binary(f, INGOT_IR_SUB, ingot_ir_add(f, V(f, h), V(f, rh)), one);
  ingot_ir_expr_t* pw = ingot_ir_binary(f, INGOT_IR_SUB, ingot_ir_add(f, V(f, w), V(f, rw)), one);
  ingot_ir_expr_t* zero = ingot_ir_int(f, 0);
  ingot_ir_expr_t* inb = ingot_ir_binary(f, INGOT_IR_AND,
      ingot_ir_binary(f, INGOT_IR_AND, ingot_ir_binary(f, INGOT_IR_LE, zero, ph), ingot_ir_binary(f, INGOT_IR_LT, ph, ingot_ir_int(f, hh))),
      ingot_ir_binary(f, INGOT_IR_AND, ingot_ir_binary(f, INGOT_IR_LE, zero, pw), ingot_ir_binary(f, INGOT_IR_LT, pw, ingot_ir_int(f, ww))));
  ingot_ir_expr_t* chh = ingot_ir_binary(f, INGOT_IR_MIN, ingot_ir_binary(f, INGOT_IR_MAX, ph, zero), ingot_ir_int(f, hh - 1));
  ingot_ir_expr_t* cww = ingot_ir_binary(f, INGOT_IR_MIN, ingot_ir_binary(f, INGOT_IR_MAX, pw, zero), ingot_ir_int(f, ww - 1));
  ingot_ir_expr_t* xi[4] = {V(f, n), V(f, rc), chh, cww};
  ingot_ir_expr_t* wi[4] = {V(f, c), V(f, rc), V(f, rh), V(f, rw)};
  ingot_ir_expr_t* yi[4] = {V(f, n), V(f, c), V(f, h), V(f, w)};
  ingot_ir_expr_t* yidx = ingot_ir_flat_index(f, Y, yi);
  ingot_ir_expr_t* xv = ingot_ir_select(f, inb, ingot_ir_load(f, X, ingot_ir_flat_index(f, X, xi)),
                                        ingot_ir_float(f, INGOT_DTYPE_F32, 0));
  ingot_ir_expr_t* val;
  if (cls == INGOT_OP_CLASS_POOL)  /* max pool over the window, weights ignored */
    val = ingot_ir_binary(f, INGOT_IR_MAX, ingot_ir_load(f, Y, yidx), xv);
  else
    val = ingot_ir_add(f, ingot_ir_load(f, Y, yidx), ingot_ir_mul(f, xv, ingot_ir_load(f, W, ingot_ir_flat_index(f, W, wi))));
  ingot_ir_stmt_t* upd = ingot_ir_for(f, n, nb, ingot_ir_for(f, c, co, ingot_ir_for(f, h, hh, ingot_ir_for(f, w, ww,
      ingot_ir_for(f, rc, ci, ingot_ir_for(f, rh, 3, ingot_ir_for(f, rw, 3, ingot_ir_store(f, Y, yidx, val))))))));
  ingot_ir_stmt_t* stages[2] = {init, upd};
  f->body = ingot_ir_block(f, stages, 2);
  uint32_t s0[4] = {a0, a1, a2, a3}, s1[4] = {n, c, h, w}, r1[3] = {rc, rh, rw};
  set_stage(&t->stages[0], INGOT_STAGE_INIT, s0, 4, NULL, 0);
  set_stage(&t->stages[1], INGOT_STAGE_UPDATE, s1, 4, r1, 3);
  t->k.func = f;
  t->k.op_class = cls;
  t->k.stages = t->stages;
  t->k.stage_count = 2;
  t->k.workload = "conv2d f32 test";
  return t;
}

/* A row pass (softmax-like): for r { local m = max_c x; for c { y = exp(x - m) } }: OTHER. */
static test_kernel_t* make_row(int64_t rows, int64_t cols) {
  test_kernel_t* t = calloc(1, sizeof(*t));
  ingot_ir_func_t* f = ingot_ir_func_create("row");
  int64_t d[2] = {rows, cols};
  uint32_t X = ingot_ir_add_buffer(f, "x", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 2, d);
  uint32_t Y = ingot_ir_add_buffer(f, "y", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 2, d);
  uint32_t r = loop_var(f, "r"), c1 = loop_var(f, "c1"), c2 = loop_var(f, "c2");
  uint32_t m = ingot_ir_add_var(f, "m", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
  ingot_ir_expr_t* i1[2] = {V(f, r), V(f, c1)}, *i2[2] = {V(f, r), V(f, c2)};
  ingot_ir_stmt_t* body[3] = {
      ingot_ir_local(f, m, ingot_ir_float(f, INGOT_DTYPE_F32, -INFINITY)),
      ingot_ir_for(f, c1, cols, ingot_ir_assign(f, m, ingot_ir_binary(f, INGOT_IR_MAX, V(f, m),
                                                                      ingot_ir_load(f, X, ingot_ir_flat_index(f, X, i1))))),
      ingot_ir_for(f, c2, cols, ingot_ir_store(f, Y, ingot_ir_flat_index(f, Y, i2),
          ingot_ir_unary(f, INGOT_IR_EXP, ingot_ir_binary(f, INGOT_IR_SUB, ingot_ir_load(f, X, ingot_ir_flat_index(f, X, i2)), V(f, m))))),
  };
  ingot_ir_stmt_t* loop = ingot_ir_for(f, r, rows, ingot_ir_block(f, body, 3));
  f->body = ingot_ir_block(f, &loop, 1);
  uint32_t sp[1] = {r};
  set_stage(&t->stages[0], INGOT_STAGE_OTHER, sp, 1, NULL, 0);
  t->k.func = f;
  t->k.op_class = INGOT_OP_CLASS_ROW;
  t->k.stages = t->stages;
  t->k.stage_count = 1;
  t->k.workload = "softmax f32 test";
  return t;
}

/* ------------------------------------------------------------------------ */
/* Running and comparing                                                     */
/* ------------------------------------------------------------------------ */

typedef struct run_t {
  float* bufs[8];
  uint32_t count;
} run_t;

static void run_free(run_t* r) {
  for (uint32_t i = 0; i < r->count; ++i) free(r->bufs[i]);
}

/* Interprets f on deterministic inputs; outputs start as a sentinel. */
static bool run(const ingot_ir_func_t* f, run_t* out) {
  memset(out, 0, sizeof(*out));
  out->count = f->buffer_count;
  for (uint32_t b = 0; b < f->buffer_count; ++b) {
    int64_t n = ingot_ir_buffer_numel(&f->buffers[b]);
    out->bufs[b] = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; ++i)
      out->bufs[b][i] = f->buffers[b].role == INGOT_IR_BUFFER_INPUT ? (float)((i * 37 + b * 11) % 23) / 8.0f - 1.25f
                                                                    : 777.0f;
  }
  ingot_status_t st = ingot_ir_interpret(f, (void* const*)out->bufs);
  if (st != INGOT_OK) fprintf(stderr, "interpret failed: %s\n", ingot_compiler_error());
  return st == INGOT_OK;
}

static bool same_results(const ingot_ir_func_t* f, const run_t* a, const run_t* b, double tol) {
  for (uint32_t i = 0; i < f->buffer_count; ++i) {
    int64_t n = ingot_ir_buffer_numel(&f->buffers[i]);
    for (int64_t k = 0; k < n; ++k) {
      double x = a->bufs[i][k], y = b->bufs[i][k];
      if (fabs(x - y) > tol * (1.0 + fabs(x))) {
        fprintf(stderr, "buffer '%s' element %lld: %g vs %g\n", f->buffers[i].name, (long long)k, x, y);
        return false;
      }
    }
  }
  return true;
}

/* Reference results of the function as it is now. */
typedef struct ref_t {
  run_t run;
} ref_t;

static void check_same_as(const ingot_ir_func_t* f, const run_t* ref, double tol, int line) {
  if (ingot_ir_verify(f) != INGOT_OK) {
    fprintf(stderr, "line %d: verify failed: %s\n", line, ingot_compiler_error());
    ++g_failures;
    return;
  }
  run_t now;
  if (!run(f, &now) || !same_results(f, ref, &now, tol)) {
    fprintf(stderr, "line %d: results differ after scheduling\n", line);
    ingot_strbuf_t sb = {0};
    ingot_ir_print(f, &sb);
    fprintf(stderr, "%s", sb.data);
    ingot_strbuf_free(&sb);
    ++g_failures;
  }
  run_free(&now);
}
#define SAME(f, ref) check_same_as((f), (ref), 0.0, __LINE__)
#define CLOSE(f, ref) check_same_as((f), (ref), 1e-6, __LINE__)

static ingot_ir_loop_kind_t kind_of(const ingot_ir_func_t* f, const char* name);
static const ingot_ir_stmt_t* find_for(const ingot_ir_stmt_t* s, uint32_t var) {
  if (!s) return NULL;
  switch (s->kind) {
    case INGOT_IR_STMT_FOR:
      return s->u.loop.var == var ? s : find_for(s->u.loop.body, var);
    case INGOT_IR_STMT_BLOCK:
      for (uint32_t i = 0; i < s->u.block.count; ++i) {
        const ingot_ir_stmt_t* r = find_for(s->u.block.stmts[i], var);
        if (r) return r;
      }
      return NULL;
    case INGOT_IR_STMT_IF: return find_for(s->u.cond.then_body, var);
    default: return NULL;
  }
}
static const ingot_ir_stmt_t* loop_named(const ingot_ir_func_t* f, const char* name) {
  uint32_t v = ingot_ir_find_var(f, name);
  return v == UINT32_MAX ? NULL : find_for(f->body, v);
}
static ingot_ir_loop_kind_t kind_of(const ingot_ir_func_t* f, const char* name) {
  const ingot_ir_stmt_t* l = loop_named(f, name);
  return l ? l->u.loop.loop_kind : (ingot_ir_loop_kind_t)-1;
}
static int64_t extent_of(const ingot_ir_func_t* f, const char* name) {
  const ingot_ir_stmt_t* l = loop_named(f, name);
  return l ? l->u.loop.extent : -1;
}

/* ------------------------------------------------------------------------ */
/* Primitives                                                                */
/* ------------------------------------------------------------------------ */

static void test_split(void) {
  /* divisible, not divisible, factor >= extent */
  int64_t factors[] = {4, 13, 5, 1, 20};
  for (size_t t = 0; t < sizeof(factors) / sizeof(factors[0]); ++t) {
    test_kernel_t* k = make_add(7, 13);
    ingot_ir_func_t* f = k->k.func;
    run_t ref;
    CHECK(run(f, &ref));
    PRIM(ingot_schedule_split(f, "j", factors[t], "jo", "ji"));
    SAME(f, &ref);
    int64_t fi = factors[t] < 13 ? factors[t] : 13;
    CHECK(extent_of(f, "ji") == fi);
    CHECK(extent_of(f, "jo") == (13 + fi - 1) / fi);
    CHECK(loop_named(f, "j") == NULL);
    /* then mark: vectorize the inner, parallel the outer */
    PRIM(ingot_schedule_mark(f, "ji", INGOT_IR_LOOP_VECTORIZED));
    PRIM(ingot_schedule_mark(f, "i", INGOT_IR_LOOP_PARALLEL));
    CHECK(kind_of(f, "ji") == INGOT_IR_LOOP_VECTORIZED);
    CHECK(kind_of(f, "i") == INGOT_IR_LOOP_PARALLEL);
    SAME(f, &ref);
    /* split the outer again (default names) */
    PRIM(ingot_schedule_split(f, "i", 3, NULL, NULL));
    CHECK(kind_of(f, "i_o") == INGOT_IR_LOOP_PARALLEL);
    SAME(f, &ref);
    run_free(&ref);
    kernel_free(k);
  }
  /* a reduction loop split (accumulation order kept) */
  test_kernel_t* k = make_matmul(5, 7, 19);
  ingot_ir_func_t* f = k->k.func;
  run_t ref;
  CHECK(run(f, &ref));
  PRIM(ingot_schedule_split(f, "k", 3, "ko", "ki"));
  SAME(f, &ref);
  PRIM(ingot_schedule_split(f, "j", 8, "jo", "ji"));
  SAME(f, &ref);
  PRIM(ingot_schedule_mark(f, "ji", INGOT_IR_LOOP_UNROLLED));
  SAME(f, &ref);
  run_free(&ref);
  kernel_free(k);
}

static void test_reorder(void) {
  test_kernel_t* k = make_matmul(5, 7, 19);
  ingot_ir_func_t* f = k->k.func;
  run_t ref;
  CHECK(run(f, &ref));
  const char* ikj[3] = {"i", "k", "j"};
  PRIM(ingot_schedule_reorder(f, ikj, 3));
  SAME(f, &ref);
  /* the outermost loop now is i, then k, then j */
  const ingot_ir_stmt_t* li = loop_named(f, "i");
  CHECK(li && li->u.loop.body->kind == INGOT_IR_STMT_FOR &&
        li->u.loop.body->u.loop.var == ingot_ir_find_var(f, "k"));
  /* a partial reorder of an inner pair, and a full reversal */
  const char* jk[2] = {"j", "k"};
  PRIM(ingot_schedule_reorder(f, jk, 2));
  SAME(f, &ref);
  const char* kji[3] = {"k", "j", "i"};
  PRIM(ingot_schedule_reorder(f, kji, 3));
  SAME(f, &ref);
  /* after a split with a guard */
  PRIM(ingot_schedule_split(f, "j", 4, "jo", "ji"));
  const char* order[4] = {"jo", "i", "k", "ji"};
  PRIM(ingot_schedule_reorder(f, order, 4));
  SAME(f, &ref);
  PRIM(ingot_schedule_mark(f, "ji", INGOT_IR_LOOP_VECTORIZED));
  SAME(f, &ref);
  run_free(&ref);
  kernel_free(k);

  /* conv: n, c, h, rc, rh, rw, w */
  k = make_conv(1, 3, 2, 5, 6, INGOT_OP_CLASS_CONTRACTION);
  f = k->k.func;
  CHECK(run(f, &ref));
  const char* conv_order[7] = {"n", "c", "h", "rc", "rh", "rw", "w"};
  PRIM(ingot_schedule_reorder(f, conv_order, 7));
  SAME(f, &ref);
  run_free(&ref);
  kernel_free(k);
}

static void test_fuse(void) {
  test_kernel_t* k = make_add(7, 13);
  ingot_ir_func_t* f = k->k.func;
  run_t ref;
  CHECK(run(f, &ref));
  PRIM(ingot_schedule_fuse(f, "i", "j", "ij"));
  CHECK(extent_of(f, "ij") == 91);
  SAME(f, &ref);
  PRIM(ingot_schedule_split(f, "ij", 8, "ijo", "iji"));
  PRIM(ingot_schedule_mark(f, "ijo", INGOT_IR_LOOP_PARALLEL));
  PRIM(ingot_schedule_mark(f, "iji", INGOT_IR_LOOP_VECTORIZED));
  SAME(f, &ref);
  run_free(&ref);
  kernel_free(k);

  k = make_conv(2, 3, 2, 5, 6, INGOT_OP_CLASS_CONTRACTION);
  f = k->k.func;
  CHECK(run(f, &ref));
  PRIM(ingot_schedule_fuse(f, "n", "c", "nc"));
  PRIM(ingot_schedule_fuse(f, "nc", "h", NULL));
  CHECK(extent_of(f, "nc_h") == 30);
  PRIM(ingot_schedule_fuse(f, "rh", "rw", "rhw"));
  PRIM(ingot_schedule_mark(f, "nc_h", INGOT_IR_LOOP_PARALLEL));
  SAME(f, &ref);
  run_free(&ref);
  kernel_free(k);
}

/* Every invalid directive fails and leaves body and variables as they were. */
static void test_invalid(void) {
  test_kernel_t* k = make_matmul(5, 7, 19);
  ingot_ir_func_t* f = k->k.func;
  PRIM(ingot_schedule_mark(f, "i", INGOT_IR_LOOP_PARALLEL));
  ingot_ir_stmt_t* body = f->body;
  uint32_t vars = f->var_count;
#define REFUSED(expr, code, fragment)                                                   \
  do {                                                                                  \
    ingot_compiler_error_clear();                                                       \
    ingot_status_t st_ = (expr);                                                        \
    CHECK(st_ == (code));                                                               \
    CHECK(f->body == body && f->var_count == vars);                                     \
    if (!strstr(ingot_compiler_error(), fragment)) {                                    \
      fprintf(stderr, "line %d: message '%s' lacks '%s'\n", __LINE__, ingot_compiler_error(), fragment); \
      ++g_failures;                                                                     \
    }                                                                                   \
  } while (0)
  REFUSED(ingot_schedule_split(f, "zz", 4, NULL, NULL), INGOT_ERROR_NOT_FOUND, "no loop named 'zz'");
  REFUSED(ingot_schedule_split(f, "j", 0, NULL, NULL), INGOT_ERROR_INVALID_ARGUMENT, "factor 0");
  REFUSED(ingot_schedule_split(f, "j", 4, "k", "ji"), INGOT_ERROR_INVALID_ARGUMENT, "'k' is already taken");
  REFUSED(ingot_schedule_split(f, "j", 4, "ji", "ji"), INGOT_ERROR_INVALID_ARGUMENT, "both named");
  const char* gap[2] = {"i", "k"};
  REFUSED(ingot_schedule_reorder(f, gap, 2), INGOT_ERROR_INVALID_ARGUMENT, "loop 'j' lies between");
  const char* stages[2] = {"i0", "i"};
  REFUSED(ingot_schedule_reorder(f, stages, 2), INGOT_ERROR_INVALID_ARGUMENT, "not perfectly nested");
  const char* twice[2] = {"i", "i"};
  REFUSED(ingot_schedule_reorder(f, twice, 2), INGOT_ERROR_INVALID_ARGUMENT, "twice");
  REFUSED(ingot_schedule_fuse(f, "i", "k", NULL), INGOT_ERROR_INVALID_ARGUMENT, "not directly inside");
  REFUSED(ingot_schedule_fuse(f, "j", "i", NULL), INGOT_ERROR_INVALID_ARGUMENT, "not directly inside");
  REFUSED(ingot_schedule_mark(f, "j", INGOT_IR_LOOP_PARALLEL), INGOT_ERROR_INVALID_ARGUMENT, "inside parallel loop 'i'");
  REFUSED(ingot_schedule_mark(f, "j", INGOT_IR_LOOP_VECTORIZED), INGOT_ERROR_INVALID_ARGUMENT, "not innermost");
  REFUSED(ingot_schedule_mark(f, "m", INGOT_IR_LOOP_VECTORIZED), INGOT_ERROR_NOT_FOUND, "no loop named 'm'");
  /* a vectorized loop may not end up outside another loop */
  PRIM(ingot_schedule_mark(f, "k", INGOT_IR_LOOP_VECTORIZED));
  body = f->body;
  const char* kj[2] = {"k", "j"};
  REFUSED(ingot_schedule_reorder(f, kj, 2), INGOT_ERROR_INVALID_ARGUMENT, "vectorized loop 'k' would not be innermost");
  kernel_free(k);

  k = make_conv(1, 3, 2, 5, 70, INGOT_OP_CLASS_CONTRACTION);
  f = k->k.func;
  body = f->body;
  vars = f->var_count;
  REFUSED(ingot_schedule_mark(f, "w", INGOT_IR_LOOP_UNROLLED), INGOT_ERROR_INVALID_ARGUMENT, "extent 70");
  PRIM(ingot_schedule_mark(f, "rw", INGOT_IR_LOOP_PARALLEL));
  body = f->body;
  REFUSED(ingot_schedule_mark(f, "n", INGOT_IR_LOOP_PARALLEL), INGOT_ERROR_INVALID_ARGUMENT, "contains a parallel loop");

  /* a schedule failing at directive 2 names it and leaves the function unchanged */
  ingot_schedule_t s;
  ingot_schedule_init(&s);
  s.template_name = "contraction.direct";
  ingot_directive_t d = {0};
  d.kind = INGOT_DIRECTIVE_SPLIT;
  d.loop = "w";
  d.factor = 8;
  ingot_schedule_add(&s, &d);
  d.kind = INGOT_DIRECTIVE_FUSE;
  d.loop = "n";
  d.inner = "c";
  ingot_schedule_add(&s, &d);
  memset(&d, 0, sizeof(d));
  d.kind = INGOT_DIRECTIVE_SPLIT;
  d.loop = "hh";
  d.factor = 4;
  ingot_schedule_add(&s, &d);
  REFUSED(ingot_schedule_apply(f, &s), INGOT_ERROR_NOT_FOUND,
          "schedule 'contraction.direct' directive 2 (split hh by 4): no loop named 'hh'");
  CHECK(strstr(ingot_compiler_error(), "function 'conv'") != NULL);
  ingot_schedule_deinit(&s);
  kernel_free(k);
#undef REFUSED
}

/* Many directives through ingot_schedule_add (array growth) and apply. */
static void test_schedule_data(void) {
  test_kernel_t* k = make_add(7, 13);
  ingot_ir_func_t* f = k->k.func;
  run_t ref;
  CHECK(run(f, &ref));
  ingot_schedule_t s;
  ingot_schedule_init(&s);
  s.template_name = "manual";
  char names[40][16];
  const char* prev = "j";
  for (int i = 0; i < 20; ++i) {
    ingot_directive_t d = {0};
    d.kind = INGOT_DIRECTIVE_SPLIT;
    d.loop = prev;
    d.factor = 1 + (i % 3);
    snprintf(names[2 * i], 16, "o%d", i);
    snprintf(names[2 * i + 1], 16, "n%d", i);
    d.outer_name = names[2 * i];
    d.inner_name = names[2 * i + 1];
    ingot_schedule_add(&s, &d);
    prev = names[2 * i];
  }
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i) names[i][0] = 'X'; /* copies must not alias */
  CHECK(s.directive_count == 20);
  PRIM(ingot_schedule_apply(f, &s));
  SAME(f, &ref);
  ingot_strbuf_t sb = {0};
  ingot_schedule_describe(&s, &sb);
  CHECK(strstr(sb.data, "split o18 by 2 -> o19, n19") != NULL);
  ingot_strbuf_free(&sb);
  ingot_schedule_deinit(&s);
  run_free(&ref);
  kernel_free(k);
}

/* ------------------------------------------------------------------------ */
/* Templates and choice                                                      */
/* ------------------------------------------------------------------------ */

static bool has_directive(const ingot_schedule_t* s, ingot_directive_kind_t kind) {
  for (uint32_t i = 0; i < s->directive_count; ++i)
    if (s->directives[i].kind == kind) return true;
  return false;
}

static int64_t knob(const ingot_schedule_t* s, const char* name) {
  for (uint32_t i = 0; i < s->knob_count; ++i)
    if (strcmp(s->knob_names[i], name) == 0) return s->knob_values[i];
  return -1;
}

static void check_template(test_kernel_t* k, const ingot_target_t* target, const char* const* knob_names,
                           const int64_t* knob_values, uint32_t knob_count, bool expect_vec, bool expect_par) {
  ingot_ir_func_t* f = k->k.func;
  run_t ref;
  CHECK(run(f, &ref));
  ingot_ir_stmt_t* body = f->body;
  uint32_t vars = f->var_count;
  ingot_schedule_t s;
  ingot_schedule_init(&s);
  if (knob_count)
    CHECK_OK(ingot_schedule_from_template(&k->k, target, ingot_schedule_template_for(k->k.op_class), knob_names,
                                          knob_values, knob_count, &s));
  else
    CHECK_OK(ingot_schedule_choose(&k->k, target, NULL, NULL, &s));
  if (g_verbose) {
    ingot_strbuf_t sb = {0};
    ingot_schedule_describe(&s, &sb);
    fprintf(stderr, "%s (%s):\n%s", f->name, target->name, sb.data);
    ingot_strbuf_free(&sb);
  }
  if ((expect_vec && !has_directive(&s, INGOT_DIRECTIVE_VECTORIZE)) ||
      (expect_par && !has_directive(&s, INGOT_DIRECTIVE_PARALLEL))) {
    ingot_strbuf_t sb = {0};
    ingot_schedule_describe(&s, &sb);
    fprintf(stderr, "%s (%s): expected %s%s in\n%s", f->name, target->name, expect_vec ? "vectorize " : "",
            expect_par ? "parallel" : "", sb.data);
    ingot_strbuf_free(&sb);
    ++g_failures;
  }
  ingot_status_t st = ingot_schedule_apply(f, &s);
  CHECK(st == INGOT_OK);
  if (st != INGOT_OK) fprintf(stderr, "apply: %s\n", ingot_compiler_error());
  if (g_verbose) {
    ingot_strbuf_t sb = {0};
    ingot_ir_print(f, &sb);
    fprintf(stderr, "%s\n", sb.data);
    ingot_strbuf_free(&sb);
  }
  CLOSE(f, &ref);
  /* the schedule applies to the original function only: undo and re-apply */
  f->body = body;
  f->var_count = vars;
  PRIM(ingot_schedule_apply(f, &s));
  ingot_schedule_deinit(&s);
  run_free(&ref);
}

static void test_templates(void) {
  const char* targets[] = {"c", "c -mcpu=x86-64-v2", "c -mcpu=x86-64-v3", "c -mcpu=x86-64-v4"};
  for (size_t t = 0; t < sizeof(targets) / sizeof(targets[0]); ++t) {
    ingot_target_t target;
    CHECK_OK(ingot_target_parse(targets[t], &target));
    test_kernel_t* k;
    /* injective: odd extents, tiny, large enough to go parallel, n=1 */
    bool wide = target.vector_bytes > 32; /* 16 lanes: 13 columns stay serial */
    k = make_add(7, 13); check_template(k, &target, NULL, NULL, 0, !wide, false); kernel_free(k);
    k = make_add(3, 5); check_template(k, &target, NULL, NULL, 0, false, false); kernel_free(k);
    k = make_add(64, 96); check_template(k, &target, NULL, NULL, 0, true, true); kernel_free(k);
    k = make_add(1, 4099); check_template(k, &target, NULL, NULL, 0, true, true); kernel_free(k);
    /* contraction */
    k = make_matmul(5, 7, 19); check_template(k, &target, NULL, NULL, 0, true, false); kernel_free(k);
    k = make_matmul(33, 17, 64); check_template(k, &target, NULL, NULL, 0, true, true); kernel_free(k);
    k = make_matmul(1, 64, 200); check_template(k, &target, NULL, NULL, 0, true, true); kernel_free(k);
    k = make_conv(1, 4, 3, 8, 16, INGOT_OP_CLASS_CONTRACTION); check_template(k, &target, NULL, NULL, 0, true, true); kernel_free(k);
    k = make_conv(2, 3, 2, 5, 7, INGOT_OP_CLASS_CONTRACTION); check_template(k, &target, NULL, NULL, 0, false, false); kernel_free(k);
    /* pool and row */
    k = make_conv(1, 3, 3, 9, 20, INGOT_OP_CLASS_POOL); check_template(k, &target, NULL, NULL, 0, true, true); kernel_free(k);
    k = make_row(70, 61); check_template(k, &target, NULL, NULL, 0, false, true); kernel_free(k);
  }
  /* knob variations */
  ingot_target_t target;
  CHECK_OK(ingot_target_parse("c -mcpu=x86-64-v3", &target));
  const char* names[4] = {"threads", "vector_bytes", "unroll", "order"};
  int64_t combos[][4] = {{1, 16, 1, 0}, {64, 32, 4, 1}, {8, 16, 8, 1}, {4, 8, 1, 0}, {16, 4, 2, 1}};
  for (size_t c = 0; c < sizeof(combos) / sizeof(combos[0]); ++c) {
    test_kernel_t* k = make_matmul(9, 11, 70);
    check_template(k, &target, names, combos[c], 4, combos[c][1] >= 8, false);
    kernel_free(k);
    k = make_conv(2, 5, 3, 6, 30, INGOT_OP_CLASS_CONTRACTION);
    check_template(k, &target, names, combos[c], 4, combos[c][1] >= 8, false);
    kernel_free(k);
    k = make_add(5, 1000);
    check_template(k, &target, names, combos[c], 2, combos[c][1] >= 8, false);
    kernel_free(k);
  }
  /* bad knobs are refused */
  test_kernel_t* k = make_add(5, 7);
  ingot_schedule_t s;
  ingot_schedule_init(&s);
  int64_t bad[1] = {0};
  CHECK(ingot_schedule_from_template(&k->k, &target, "injective", names, bad, 1, &s) == INGOT_ERROR_INVALID_ARGUMENT);
  CHECK(ingot_schedule_from_template(&k->k, &target, "injective", names + 2, combos[0] + 2, 1, &s) ==
        INGOT_ERROR_INVALID_ARGUMENT);
  CHECK(ingot_schedule_from_template(&k->k, &target, "nope", NULL, NULL, 0, &s) == INGOT_ERROR_NOT_FOUND);
  CHECK(ingot_schedule_from_template(&k->k, &target, "contraction.direct", NULL, NULL, 0, &s) ==
        INGOT_ERROR_INVALID_ARGUMENT);
  ingot_schedule_deinit(&s);
  kernel_free(k);
}

/* The schedule of a kernel make(dims...) with one knob set on x86-64-v3:
 * checked against the reference (check_template) and returned described
 * (the caller frees it). */
static char* knob_schedule(test_kernel_t* (*make)(int64_t, int64_t, int64_t), const int64_t* dims, const char* tmpl,
                           const char* name, int64_t value, bool expect_par) {
  ingot_target_t target;
  CHECK_OK(ingot_target_parse("c -mcpu=x86-64-v3", &target));
  test_kernel_t* k = make(dims[0], dims[1], dims[2]);
  check_template(k, &target, &name, &value, 1, true, expect_par);
  kernel_free(k);
  k = make(dims[0], dims[1], dims[2]);
  ingot_schedule_t s;
  ingot_schedule_init(&s);
  CHECK_OK(ingot_schedule_from_template(&k->k, &target, tmpl, &name, &value, 1, &s));
  ingot_strbuf_t sb = {0};
  ingot_schedule_describe(&s, &sb);
  if (g_verbose) fprintf(stderr, "%s=%lld:\n%s", name, (long long)value, sb.data);
  ingot_schedule_deinit(&s);
  kernel_free(k);
  return sb.data;
}

static test_kernel_t* make_add3(int64_t m, int64_t n, int64_t unused) {
  (void)unused;
  return make_add(m, n);
}

/* whole_tile: 7 rows x 2 vectors (14 accumulators, over AVX2's default
 * 12) keep both vectors inside the reduction with 1, one at a time with 0;
 * whole_row: a 58-wide row (no factor near 8 lanes divides it) under 128
 * rows is vectorized whole with 1, split by 8 under a guard with 0. Each
 * computes the reference's result. */
static void test_whole_knobs(void) {
  static const int64_t mm[3] = {7, 40, 16}, add[3] = {128, 58, 0};
  char* t0 = knob_schedule(make_matmul, mm, "contraction.direct", "whole_tile", 0, false);
  char* t1 = knob_schedule(make_matmul, mm, "contraction.direct", "whole_tile", 1, false);
  CHECK(t0 && strstr(t0, "reorder j_o, k, i, j_i") && !strstr(t0, "unroll j_o"));
  CHECK(t1 && strstr(t1, "reorder k, i, j_o, j_i") && strstr(t1, "unroll j_o"));
  char* r0 = knob_schedule(make_add3, add, "injective", "whole_row", 0, true);
  char* r1 = knob_schedule(make_add3, add, "injective", "whole_row", 1, true);
  CHECK(r0 && strstr(r0, "split") && strstr(r0, "by 8"));
  CHECK(r1 && !strstr(r1, "split") && strstr(r1, "vectorize"));
  free(t0);
  free(t1);
  free(r0);
  free(r1);
}

/* The space API: listed points accepted, others refused with the legal
 * list, no rounding, and keys that tell programs apart. */
static void test_space(void) {
  ingot_target_t v3, v4;
  CHECK_OK(ingot_target_parse("c -mcpu=x86-64-v3", &v3));
  CHECK_OK(ingot_target_parse("c -mcpu=x86-64-v4", &v4));
  test_kernel_t* k = make_matmul(9, 11, 70);
  ingot_schedule_space_t space;
  CHECK_OK(ingot_schedule_space(&k->k, &v3, "contraction.direct", &space));
  const ingot_schedule_knob_space_t* vb = NULL;
  const ingot_schedule_knob_space_t* rows = NULL;
  const ingot_schedule_knob_space_t* acc = NULL;
  for (uint32_t i = 0; i < space.knob_count; ++i) {
    if (!strcmp(space.knobs[i].name, "vector_bytes")) vb = &space.knobs[i];
    if (!strcmp(space.knobs[i].name, "max_rows")) rows = &space.knobs[i];
    if (!strcmp(space.knobs[i].name, "accumulators")) acc = &space.knobs[i];
  }
  CHECK(vb && vb->default_value == 32 && vb->values[vb->value_count - 1] == 32); /* AVX2: no 64 or 256 */
  CHECK(rows && rows->default_value == 16);
  for (uint32_t i = 0; rows && i < rows->value_count; ++i) CHECK(rows->values[i] >= 1);
  /* 16 AVX2 registers: 12 by default, up to all but two */
  CHECK(acc && acc->default_value == 12 && acc->values[0] == 4 && acc->values[acc->value_count - 1] == 14);
  CHECK(ingot_schedule_space_size(&space) > 1);
  CHECK_OK(ingot_schedule_space(&k->k, &v4, "contraction.direct", &space));
  CHECK(space.knobs[1].default_value == 64);
  /* every template of the class has a space; another class's does not fit */
  CHECK_OK(ingot_schedule_space(&k->k, &v3, "contraction.plain", &space));
  for (uint32_t i = 0; i < space.knob_count; ++i) CHECK(strcmp(space.knobs[i].name, "max_rows") != 0);
  CHECK(ingot_schedule_space(&k->k, &v3, "pool", &space) == INGOT_ERROR_INVALID_ARGUMENT);

  ingot_schedule_t a, b;
  ingot_schedule_init(&a);
  ingot_schedule_init(&b);
  const char* name = "vector_bytes";
  int64_t value = 64;
  ingot_compiler_error_clear();
  CHECK(ingot_schedule_from_template(&k->k, &v3, "contraction.direct", &name, &value, 1, &a) ==
        INGOT_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(ingot_compiler_error(), "kernel 'matmul'") && strstr(ingot_compiler_error(), "vector_bytes=64") &&
        strstr(ingot_compiler_error(), "[4, 8, 16, 32]"));
  /* a value between listed ones is refused, not rounded */
  name = "unroll";
  value = 3;
  CHECK(ingot_schedule_from_template(&k->k, &v3, "contraction.direct", &name, &value, 1, &a) ==
        INGOT_ERROR_INVALID_ARGUMENT);
  name = "max_rows";
  value = 0; /* no magic "automatic" */
  CHECK(ingot_schedule_from_template(&k->k, &v3, "contraction.direct", &name, &value, 1, &a) ==
        INGOT_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(ingot_compiler_error(), "max_rows=0") != NULL);
  CHECK(ingot_schedule_from_template(&k->k, &v3, "contraction.plain", &name, &value, 1, &a) ==
        INGOT_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(ingot_compiler_error(), "has no knob 'max_rows'") != NULL);

  /* keys: stable for the same point, different for another program */
  CHECK_OK(ingot_schedule_from_template(&k->k, &v3, "contraction.direct", NULL, NULL, 0, &a));
  CHECK_OK(ingot_schedule_choose(&k->k, &v3, NULL, NULL, &b));
  CHECK(ingot_schedule_key(&a) == ingot_schedule_key(&b));
  uint64_t def = ingot_schedule_key(&a);
  CHECK_OK(ingot_schedule_from_template(&k->k, &v3, "contraction.plain", NULL, NULL, 0, &b));
  CHECK(ingot_schedule_key(&b) != def);
  name = "threads";
  value = 1; /* nothing to fuse or not: the same program as the default */
  CHECK_OK(ingot_schedule_from_template(&k->k, &v3, "contraction.direct", &name, &value, 1, &b));
  name = "vector_bytes";
  value = 16;
  CHECK_OK(ingot_schedule_from_template(&k->k, &v3, "contraction.direct", &name, &value, 1, &b));
  CHECK(ingot_schedule_key(&b) != def);
  /* every listed value of every knob is accepted */
  CHECK_OK(ingot_schedule_space(&k->k, &v3, "contraction.direct", &space));
  for (uint32_t i = 0; i < space.knob_count; ++i)
    for (uint32_t v = 0; v < space.knobs[i].value_count; ++v)
      CHECK_OK(ingot_schedule_from_template(&k->k, &v3, "contraction.direct", &space.knobs[i].name,
                                            &space.knobs[i].values[v], 1, &b));
  ingot_schedule_deinit(&a);
  ingot_schedule_deinit(&b);
  kernel_free(k);
}

static void test_targets(void) {
  ingot_target_t t;
  CHECK_OK(ingot_target_parse("c", &t));
  CHECK(t.kind == INGOT_TARGET_C && strcmp(t.name, "c") == 0 && t.vector_bytes == 16 && t.cpu[0] == 0);
  CHECK(t.l1_bytes == 32 * 1024 && t.l2_bytes >= 128 * 1024); /* the host's baseline level (tests/target) */
  CHECK_OK(ingot_target_parse("  c   -mcpu=x86-64-v3 ", &t));
  CHECK(strcmp(t.name, "c -mcpu=x86-64-v3") == 0 && t.vector_bytes == 32 && strcmp(t.cpu, "x86-64-v3") == 0);
  CHECK_OK(ingot_target_parse("c -mcpu=x86-64-v4", &t));
  CHECK(t.vector_bytes == 64);
  CHECK_OK(ingot_target_parse("c -mcpu=x86-64-v2", &t));
  CHECK(t.vector_bytes == 16);
  CHECK_OK(ingot_target_parse("c -mcpu=x86-64", &t));
  CHECK(t.vector_bytes == 16 && strcmp(t.name, "c -mcpu=x86-64") == 0);
  ingot_compiler_error_clear();
  CHECK(ingot_target_parse("c -mcpu=native", &t) == INGOT_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(ingot_compiler_error(), "native") != NULL);
  CHECK(ingot_target_parse("c -mcpu=skylake", &t) == INGOT_ERROR_INVALID_ARGUMENT);
  CHECK(ingot_target_parse("c -mcpu=x86-64-v3 -mcpu=x86-64-v2", &t) == INGOT_ERROR_INVALID_ARGUMENT);
  CHECK(ingot_target_parse("c -O3", &t) == INGOT_ERROR_INVALID_ARGUMENT);
  CHECK(ingot_target_parse("", &t) == INGOT_ERROR_INVALID_ARGUMENT);
  CHECK(ingot_target_parse("wasm", &t) == INGOT_ERROR_INVALID_ARGUMENT);
  CHECK(ingot_target_parse("cuda -arch=sm_75", &t) == INGOT_ERROR_INVALID_ARGUMENT);
  CHECK(ingot_target_parse(NULL, &t) == INGOT_ERROR_INVALID_ARGUMENT);
}

static char* write_temp(const char* text) {
  static char path[64];
  snprintf(path, sizeof(path), "/tmp/ingot_tuning_XXXXXX");
  int fd = mkstemp(path);
  if (fd < 0) return NULL;
  size_t n = strlen(text);
  CHECK(write(fd, text, n) == (ssize_t)n);
  close(fd);
  return path;
}

typedef struct skips_t {
  uint32_t count;
  uint32_t lines[8];
  char why[8][600];
} skips_t;

static void note_skip(void* self, uint32_t line, const char* reason) {
  skips_t* s = self;
  if (g_verbose) fprintf(stderr, "skip line %u: %s\n", line, reason);
  if (s->count == 8) return;
  s->lines[s->count] = line;
  snprintf(s->why[s->count++], sizeof s->why[0], "%s", reason);
}

static void test_tuning_log(void) {
  test_kernel_t* k = make_matmul(9, 11, 70);
  k->k.workload = "matmul f32 m9 k11 n70";
  const char* text =
      "{\"version\":1,\"workload\":\"matmul f32 m9 k11 n70\",\"target\":\"c -mcpu=x86-64-v3\","
      "\"template\":\"contraction.direct\",\"knobs\":{\"unroll\":1,\"threads\":4},\"time_ms\":2.0}\n"
      "\n"
      "{\"version\":1,\"workload\":\"matmul f32 m9 k11 n70\",\"target\":\"c -mcpu=x86-64-v3\","
      "\"template\":\"contraction.direct\",\"knobs\":{\"unroll\":4,\"order\":1},\"time_ms\":1.0}\n"
      "{\"version\":1,\"workload\":\"matmul f32 m9 k11 n70\",\"target\":\"c -mcpu=x86-64-v3\","
      "\"template\":\"contraction.direct\",\"knobs\":{\"unroll\":4000},\"time_ms\":0.1}\n"
      "{\"version\":1,\"workload\":\"matmul f32 m9 k11 n70\",\"target\":\"c\","
      "\"template\":\"contraction.direct\",\"knobs\":{\"unroll\":8},\"time_ms\":0.5}\n"
      "{\"version\":2,\"workload\":\"matmul f32 m9 k11 n70\",\"target\":\"c -mcpu=x86-64-v3\","
      "\"template\":\"whatever\",\"knobs\":{},\"time_ms\":0.01,\"extra\":[1,2]}\n"
      "  {\"version\":1,\"workload\":\"other\",\"target\":\"c -mcpu=x86-64-v3\","
      "\"template\":\"contraction.direct\",\"knobs\":{\"unroll\":3},\"time_ms\":0.2}  \r\n";
  char* path = write_temp(text);
  CHECK(path != NULL);
  ingot_tuning_log_t* log = NULL;
  CHECK_OK(ingot_tuning_log_load(path, &log));
  unlink(path);

  ingot_target_t v3, generic, v4;
  CHECK_OK(ingot_target_parse("c -mcpu=x86-64-v3", &v3));
  CHECK_OK(ingot_target_parse("c", &generic));
  CHECK_OK(ingot_target_parse("c -mcpu=x86-64-v4", &v4));
  ingot_schedule_t s;
  ingot_schedule_init(&s);
  /* the fastest valid record for workload + target (the 0.1 ms one has an invalid knob) */
  CHECK_OK(ingot_schedule_choose(&k->k, &v3, log, NULL, &s));
  CHECK(knob(&s, "unroll") == 4 && knob(&s, "order") == 1 && knob(&s, "threads") == 8);
  CHECK(strcmp(s.template_name, "contraction.direct") == 0);
  /* another target has its own record */
  CHECK_OK(ingot_schedule_choose(&k->k, &generic, log, NULL, &s));
  CHECK(knob(&s, "unroll") == 8);
  /* no record: the defaults */
  CHECK_OK(ingot_schedule_choose(&k->k, &v4, log, NULL, &s));
  CHECK(knob(&s, "unroll") == 2 && knob(&s, "vector_bytes") == 64);
  k->k.workload = "matmul f32 m1 k1 n1";
  CHECK_OK(ingot_schedule_choose(&k->k, &v3, log, NULL, &s));
  CHECK(knob(&s, "unroll") == 2 && knob(&s, "order") == 0);
  /* a record of another template of the class is chosen when it is the
   * fastest; the record written from a schedule reads back as that schedule */
  {
    k->k.workload = "matmul f32 m9 k11 n70";
    ingot_schedule_t plain;
    ingot_schedule_init(&plain);
    const char* kn = "unroll";
    int64_t kv = 4;
    CHECK_OK(ingot_schedule_from_template(&k->k, &v3, "contraction.plain", &kn, &kv, 1, &plain));
    ingot_strbuf_t line = {0};
    ingot_tuning_fingerprint_t fp = {.cpu_model = "Test CPU @ 1GHz", .cpu_features = "sse2 avx2",
                                     .ingot_version = "0.1.0"};
    CHECK_OK(ingot_tuning_log_format_record(k->k.workload, v3.name, &plain, 0.05, &fp, &line));
    CHECK(strstr(line.data, ",\"fingerprint\":{\"target\":\"c -mcpu=x86-64-v3\",\"cpu\":\"Test CPU @ 1GHz\","
                            "\"cpu_features\":\"sse2 avx2\",\"ingot\":\"0.1.0\",\"log_version\":1}}") != NULL);
    CHECK(strncmp(line.data, "{\"version\":1,\"workload\":\"matmul f32 m9 k11 n70\",\"target\":\"c -mcpu=x86-64-v3\","
                             "\"template\":\"contraction.plain\",\"knobs\":{\"threads\":8,", 120) == 0);
    CHECK(strstr(line.data, "\"time_ms\":0.05") != NULL);
    if (g_verbose) fprintf(stderr, "%s\n", line.data);
    ingot_strbuf_append(&line, "\n");
    path = write_temp(line.data);
    ingot_tuning_log_t* log2 = NULL;
    CHECK_OK(ingot_tuning_log_load(path, &log2));
    unlink(path);
    CHECK_OK(ingot_schedule_choose(&k->k, &v3, log2, NULL, &s));
    CHECK(strcmp(s.template_name, "contraction.plain") == 0 && knob(&s, "unroll") == 4);
    CHECK(ingot_schedule_key(&s) == ingot_schedule_key(&plain));
    /* the record applies on its CPU (or when no CPU is asked for), never on another */
    ingot_schedule_choice_t choice = {.cpu_model = "Test CPU @ 1GHz"};
    CHECK_OK(ingot_schedule_choose(&k->k, &v3, log2, &choice, &s));
    CHECK(choice.tuned && choice.line == 1 && strcmp(s.template_name, "contraction.plain") == 0);
    skips_t skips = {0};
    choice = (ingot_schedule_choice_t){.cpu_model = "Other CPU", .on_skip = note_skip, .skip_self = &skips};
    CHECK_OK(ingot_schedule_choose(&k->k, &v3, log2, &choice, &s));
    CHECK(!choice.tuned && choice.line == 0 && strcmp(s.template_name, "contraction.direct") == 0);
    CHECK(skips.count == 1 && skips.lines[0] == 1 && strstr(skips.why[0], "other CPU 'Test CPU @ 1GHz'"));
    ingot_tuning_log_destroy(log2);
    ingot_strbuf_free(&line);
    ingot_schedule_deinit(&plain);
  }

  /* why each record of the workload was not applied */
  {
    skips_t skips = {0};
    ingot_schedule_choice_t choice = {.on_skip = note_skip, .skip_self = &skips};
    CHECK_OK(ingot_schedule_choose(&k->k, &v3, log, &choice, &s));
    CHECK(choice.tuned && choice.line == 3);
    /* line 4: a knob value outside the space; line 5: another target */
    CHECK(skips.count == 2 && skips.lines[0] == 4 && strstr(skips.why[0], "knobs not in the kernel's space") &&
          skips.lines[1] == 5 && strstr(skips.why[1], "other target 'c'"));
  }
  /* a fingerprint naming another target, or an error record, never applies */
  {
    const char* t2 =
        "{\"version\":1,\"workload\":\"matmul f32 m9 k11 n70\",\"target\":\"c -mcpu=x86-64-v3\","
        "\"template\":\"contraction.direct\",\"knobs\":{\"unroll\":8},\"time_ms\":0.5,"
        "\"fingerprint\":{\"target\":\"c -mcpu=x86-64-v4\",\"cpu\":\"\"}}\n"
        "{\"version\":1,\"workload\":\"matmul f32 m9 k11 n70\",\"target\":\"c -mcpu=x86-64-v3\","
        "\"template\":\"contraction.direct\",\"knobs\":{\"unroll\":1},\"error\":\"crashed\"}\n";
    char* p2 = write_temp(t2);
    ingot_tuning_log_t* log3 = NULL;
    CHECK_OK(ingot_tuning_log_load(p2, &log3));
    unlink(p2);
    skips_t skips = {0};
    ingot_schedule_choice_t choice = {.cpu_model = "Any", .on_skip = note_skip, .skip_self = &skips};
    CHECK_OK(ingot_schedule_choose(&k->k, &v3, log3, &choice, &s));
    CHECK(!choice.tuned && knob(&s, "unroll") == 2);
    CHECK(skips.count == 2 && strstr(skips.why[0], "other target 'c -mcpu=x86-64-v4'") &&
          strstr(skips.why[1], "error record (crashed)"));
    ingot_tuning_log_destroy(log3);
  }

  /* the chosen schedule keeps results */
  k->k.workload = "matmul f32 m9 k11 n70";
  CHECK_OK(ingot_schedule_choose(&k->k, &v3, log, NULL, &s));
  run_t ref;
  CHECK(run(k->k.func, &ref));
  CHECK_OK(ingot_schedule_apply(k->k.func, &s));
  SAME(k->k.func, &ref);
  run_free(&ref);
  ingot_schedule_deinit(&s);
  ingot_tuning_log_destroy(log);
  kernel_free(k);

  /* malformed logs fail naming the line */
  const char* bad[] = {
      "{\"version\":1,\"workload\":\"w\",\"target\":\"c\",\"template\":\"injective\",\"knobs\":{},\"time_ms\":1}\n{oops\n",
      "{\"version\":1,\"workload\":\"w\",\"target\":\"c\",\"template\":\"injective\",\"knobs\":{}}\n",
      "{\"version\":1,\"workload\":\"w\",\"target\":\"c\",\"template\":\"injective\",\"knobs\":{\"a\":1.5},\"time_ms\":1}\n",
      "[1,2]\n",
  };
  const char* where[] = {"line 2", "time_ms", "knob \"a\"", "line 1"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
    path = write_temp(bad[i]);
    ingot_compiler_error_clear();
    log = (ingot_tuning_log_t*)1;
    CHECK(ingot_tuning_log_load(path, &log) == INGOT_ERROR_CORRUPT);
    CHECK(log == NULL);
    if (!strstr(ingot_compiler_error(), where[i])) {
      fprintf(stderr, "message '%s' lacks '%s'\n", ingot_compiler_error(), where[i]);
      ++g_failures;
    }
    unlink(path);
  }
  CHECK(ingot_tuning_log_load("/nonexistent/ingot.log", &log) == INGOT_ERROR_IO);
}

/* Loops bound to a GPU's blocks and threads: the primitive, its nesting
 * rules (the verifier's), the directive, and CPU code generation refusing
 * them. The IR interpreter runs bound loops serially. */
static void test_bind(void) {
  test_kernel_t* k = make_add(7, 13);
  ingot_ir_func_t* f = k->k.func;
  run_t ref;
  CHECK(run(f, &ref));
  PRIM(ingot_schedule_split(f, "j", 4, "jo", "ji"));
  PRIM(ingot_schedule_bind(f, "i", INGOT_IR_LOOP_GPU_BLOCK, 0));
  PRIM(ingot_schedule_bind(f, "ji", INGOT_IR_LOOP_GPU_THREAD, 0));
  CHECK(kind_of(f, "i") == INGOT_IR_LOOP_GPU_BLOCK && kind_of(f, "ji") == INGOT_IR_LOOP_GPU_THREAD);
  SAME(f, &ref);
  ingot_strbuf_t sb = {0};
  ingot_ir_print(f, &sb);
  CHECK(sb.data && strstr(sb.data, "gpu_block.x") && strstr(sb.data, "gpu_thread.x"));
  ingot_strbuf_free(&sb);
  /* the same axis twice on a path, for blocks and for threads */
  CHECK(ingot_schedule_bind(f, "jo", INGOT_IR_LOOP_GPU_BLOCK, 0) != INGOT_OK);
  CHECK(strstr(ingot_compiler_error(), "binds a block axis that an enclosing loop binds already") != NULL);
  CHECK(ingot_schedule_bind(f, "jo", INGOT_IR_LOOP_GPU_THREAD, 0) != INGOT_OK);
  CHECK(kind_of(f, "jo") == INGOT_IR_LOOP_SERIAL); /* a refused bind leaves the function as it was */
  CHECK(ingot_schedule_bind(f, "jo", INGOT_IR_LOOP_GPU_BLOCK, 3) != INGOT_OK);
  CHECK(ingot_schedule_bind(f, "jo", INGOT_IR_LOOP_PARALLEL, 0) != INGOT_OK);
  PRIM(ingot_schedule_bind(f, "jo", INGOT_IR_LOOP_GPU_BLOCK, 1));
  SAME(f, &ref);
  /* CPU code generation refuses a bound loop, naming it */
  ingot_target_t target;
  CHECK_OK(ingot_target_parse("c", &target));
  ingot_codegen_prepared_t prepared;
  ingot_ir_func_t* funcs[1] = {f};
  CHECK(ingot_codegen_prepare(funcs, 1, &target, &prepared) == INGOT_ERROR_UNSUPPORTED);
  CHECK(strstr(ingot_compiler_error(), "loop 'i' is bound to a GPU's blocks") != NULL);
  run_free(&ref);
  kernel_free(k);

  /* blocks inside threads; a bound loop inside a parallel one */
  k = make_add(7, 13);
  f = k->k.func;
  PRIM(ingot_schedule_bind(f, "i", INGOT_IR_LOOP_GPU_THREAD, 0));
  CHECK(ingot_schedule_bind(f, "j", INGOT_IR_LOOP_GPU_BLOCK, 0) != INGOT_OK);
  CHECK(strstr(ingot_compiler_error(), "binds blocks inside a loop bound to threads") != NULL);
  kernel_free(k);
  k = make_add(7, 13);
  f = k->k.func;
  PRIM(ingot_schedule_mark(f, "i", INGOT_IR_LOOP_PARALLEL));
  CHECK(ingot_schedule_bind(f, "j", INGOT_IR_LOOP_GPU_THREAD, 0) != INGOT_OK);
  CHECK(strstr(ingot_compiler_error(), "inside a parallel, vectorized or unrolled loop") != NULL);
  kernel_free(k);

  /* as directives: applied, described (hence in the schedule key) */
  k = make_add(7, 13);
  f = k->k.func;
  ingot_schedule_t sched;
  ingot_schedule_init(&sched);
  ingot_directive_t d1 = {.kind = INGOT_DIRECTIVE_BIND_BLOCK, .loop = "i", .factor = 0};
  ingot_directive_t d2 = {.kind = INGOT_DIRECTIVE_BIND_THREAD, .loop = "j", .factor = 0};
  ingot_schedule_add(&sched, &d1);
  ingot_schedule_add(&sched, &d2);
  CHECK_OK(ingot_schedule_apply(f, &sched));
  CHECK(kind_of(f, "i") == INGOT_IR_LOOP_GPU_BLOCK && kind_of(f, "j") == INGOT_IR_LOOP_GPU_THREAD);
  ingot_strbuf_t text = {0};
  ingot_schedule_describe(&sched, &text);
  CHECK(text.data && strstr(text.data, "bind i to blockIdx.x") && strstr(text.data, "bind j to threadIdx.x"));
  ingot_strbuf_free(&text);
  ingot_schedule_t other;
  ingot_schedule_init(&other);
  ingot_directive_t d3 = {.kind = INGOT_DIRECTIVE_BIND_THREAD, .loop = "j", .factor = 1};
  ingot_schedule_add(&other, &d1);
  ingot_schedule_add(&other, &d3);
  CHECK(ingot_schedule_key(&sched) != ingot_schedule_key(&other));
  ingot_schedule_deinit(&other);
  ingot_schedule_deinit(&sched);
  kernel_free(k);
}

int main(int argc, char** argv) {
  g_verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
  test_split();
  test_reorder();
  test_fuse();
  test_invalid();
  test_schedule_data();
  test_space();
  test_whole_knobs();
  test_targets();
  test_templates();
  test_tuning_log();
  test_bind();
  if (g_failures) {
    fprintf(stderr, "%d check(s) failed\n", g_failures);
    return 1;
  }
  printf("schedule tests passed\n");
  return 0;
}
