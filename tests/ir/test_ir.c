/* Tests for the loop IR printer, verifier and interpreter (lower/ir_check.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/ir.h"

static int g_failures = 0;

#define CHECK(cond)                                                         \
  do {                                                                      \
    if (!(cond)) {                                                          \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                         \
    }                                                                       \
  } while (0)

static ingot_ir_expr_t* V(ingot_ir_func_t* f, uint32_t var) { return ingot_ir_var(f, var); }

/* y[i, j] = a[i, j] + b[i, j] over 2x3. */
static ingot_ir_func_t* make_add(void) {
  ingot_ir_func_t* f = ingot_ir_func_create("add_f32");
  int64_t dims[2] = {2, 3};
  uint32_t a = ingot_ir_add_buffer(f, "a", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 2, dims);
  uint32_t b = ingot_ir_add_buffer(f, "b", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 2, dims);
  uint32_t y = ingot_ir_add_buffer(f, "y", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 2, dims);
  uint32_t i = ingot_ir_add_var(f, "i", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t j = ingot_ir_add_var(f, "j", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  ingot_ir_expr_t* idx[2] = {V(f, i), V(f, j)};
  ingot_ir_expr_t* flat = ingot_ir_flat_index(f, y, idx);
  ingot_ir_stmt_t* st = ingot_ir_store(
      f, y, flat, ingot_ir_add(f, ingot_ir_load(f, a, flat), ingot_ir_load(f, b, flat)));
  f->body = ingot_ir_for(f, i, 2, ingot_ir_for(f, j, 3, st));
  return f;
}

static void test_print(void) {
  ingot_ir_func_t* f = make_add();
  ingot_strbuf_t sb = {0};
  ingot_ir_print(f, &sb);
  const char* want =
      "func add_f32(a: float32[2, 3] input, b: float32[2, 3] input, y: float32[2, 3] output) {\n"
      "  for (i, 0, 2) {\n"
      "    for (j, 0, 3) {\n"
      "      y[(i * 3) + j] = a[(i * 3) + j] + b[(i * 3) + j];\n"
      "    }\n"
      "  }\n"
      "}\n";
  if (strcmp(sb.data, want) != 0) fprintf(stderr, "got:\n%s\nwant:\n%s\n", sb.data, want);
  CHECK(strcmp(sb.data, want) == 0);
  CHECK(ingot_ir_verify(f) == INGOT_OK);
  ingot_strbuf_free(&sb);

  /* parallel marks, locals, if, select, casts */
  ingot_ir_stmt_t* outer = f->body;
  ingot_ir_stmt_t* par = ingot_ir_for_like(f, outer, outer->u.loop.body);
  par->u.loop.loop_kind = INGOT_IR_LOOP_PARALLEL;
  uint32_t acc = ingot_ir_add_var(f, "acc", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
  ingot_ir_stmt_t* stmts[3] = {
      ingot_ir_local(f, acc, ingot_ir_float(f, INGOT_DTYPE_F32, 0.5)),
      ingot_ir_assign(f, acc, ingot_ir_unary(f, INGOT_IR_EXP, V(f, acc))),
      par,
  };
  f->body = ingot_ir_block(f, stmts, 3);
  ingot_ir_print(f, &sb);
  CHECK(strstr(sb.data, "  local acc: float32 = 0.5f;\n") != NULL);
  CHECK(strstr(sb.data, "  acc = exp(acc);\n") != NULL);
  CHECK(strstr(sb.data, "  for (i, 0, 2) parallel {\n") != NULL);
  CHECK(ingot_ir_verify(f) == INGOT_OK);
  ingot_strbuf_free(&sb);
  ingot_ir_func_destroy(f);
}

static void expect_reject(ingot_ir_func_t* f, const char* fragment) {
  ingot_compiler_error_clear();
  ingot_status_t st = ingot_ir_verify(f);
  CHECK(st != INGOT_OK);
  const char* msg = ingot_compiler_error();
  if (!strstr(msg, fragment) || !strstr(msg, f->name)) {
    fprintf(stderr, "message '%s' lacks '%s' or the function name\n", msg, fragment);
    ++g_failures;
  }
  ingot_ir_func_destroy(f);
}

static void test_verify_rejects(void) {
  /* unbound variable: j used outside its loop */
  {
    ingot_ir_func_t* f = make_add();
    uint32_t j = ingot_ir_find_var(f, "j");
    uint32_t y = 2;
    ingot_ir_stmt_t* extra = ingot_ir_store(f, y, V(f, j), ingot_ir_float(f, INGOT_DTYPE_F32, 1.0));
    ingot_ir_stmt_t* stmts[2] = {f->body, extra};
    f->body = ingot_ir_block(f, stmts, 2);
    expect_reject(f, "'j' used where it is not bound");
  }
  /* a variable bound twice */
  {
    ingot_ir_func_t* f = make_add();
    uint32_t i = ingot_ir_find_var(f, "i");
    ingot_ir_stmt_t* again = ingot_ir_for(f, i, 2, ingot_ir_store(f, 2, V(f, i), ingot_ir_float(f, INGOT_DTYPE_F32, 1)));
    ingot_ir_stmt_t* stmts[2] = {f->body, again};
    f->body = ingot_ir_block(f, stmts, 2);
    expect_reject(f, "'i' bound twice");
  }
  /* a store to an input */
  {
    ingot_ir_func_t* f = make_add();
    uint32_t i = ingot_ir_find_var(f, "i");
    f->body = ingot_ir_for(f, i, 2, ingot_ir_store(f, 0, V(f, i), ingot_ir_float(f, INGOT_DTYPE_F32, 1)));
    expect_reject(f, "input buffer");
  }
  /* an index of the wrong dtype */
  {
    ingot_ir_func_t* f = make_add();
    uint32_t i = ingot_ir_find_var(f, "i");
    ingot_ir_expr_t* bad = ingot_ir_cast(f, INGOT_DTYPE_I32, V(f, i));
    f->body = ingot_ir_for(f, i, 2, ingot_ir_store(f, 2, bad, ingot_ir_float(f, INGOT_DTYPE_F32, 1)));
    expect_reject(f, "not int64");
  }
  /* a negative extent */
  {
    ingot_ir_func_t* f = make_add();
    uint32_t i = ingot_ir_find_var(f, "i");
    f->body = ingot_ir_for(f, i, -3, ingot_ir_store(f, 2, V(f, i), ingot_ir_float(f, INGOT_DTYPE_F32, 1)));
    expect_reject(f, "extent -3");
  }
  /* a stored value of the wrong dtype */
  {
    ingot_ir_func_t* f = make_add();
    uint32_t i = ingot_ir_find_var(f, "i");
    f->body = ingot_ir_for(f, i, 2, ingot_ir_store(f, 2, V(f, i), ingot_ir_float(f, INGOT_DTYPE_F64, 1)));
    expect_reject(f, "store of a float64 value");
  }
  /* a constant index out of range */
  {
    ingot_ir_func_t* f = make_add();
    f->body = ingot_ir_store(f, 2, ingot_ir_int(f, 6), ingot_ir_float(f, INGOT_DTYPE_F32, 1));
    expect_reject(f, "constant index 6 out of range");
  }
  /* a non-bool condition */
  {
    ingot_ir_func_t* f = make_add();
    f->body = ingot_ir_if(f, ingot_ir_int(f, 1), ingot_ir_store(f, 2, ingot_ir_int(f, 0), ingot_ir_float(f, INGOT_DTYPE_F32, 1)));
    expect_reject(f, "condition is not bool");
  }
  /* a local used after its block */
  {
    ingot_ir_func_t* f = make_add();
    uint32_t t = ingot_ir_add_var(f, "t", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_F32);
    ingot_ir_stmt_t* inner[1] = {ingot_ir_local(f, t, ingot_ir_float(f, INGOT_DTYPE_F32, 2))};
    ingot_ir_stmt_t* stmts[2] = {ingot_ir_block(f, inner, 1),
                                 ingot_ir_store(f, 2, ingot_ir_int(f, 0), V(f, t))};
    f->body = ingot_ir_block(f, stmts, 2);
    expect_reject(f, "'t' used where it is not bound");
  }
}

/* C[i, j] = sum_k A[i, k] * B[k, j] in INIT / UPDATE form, then interpreted. */
static void test_interpret_matmul(void) {
  enum { M = 3, K = 4, N = 5 };
  ingot_ir_func_t* f = ingot_ir_func_create("matmul");
  int64_t da[2] = {M, K}, db[2] = {K, N}, dc[2] = {M, N};
  uint32_t A = ingot_ir_add_buffer(f, "A", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 2, da);
  uint32_t B = ingot_ir_add_buffer(f, "B", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 2, db);
  uint32_t C = ingot_ir_add_buffer(f, "C", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 2, dc);
  uint32_t i0 = ingot_ir_add_var(f, "i0", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t j0 = ingot_ir_add_var(f, "j0", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t i = ingot_ir_add_var(f, "i", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t j = ingot_ir_add_var(f, "j", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t k = ingot_ir_add_var(f, "k", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  ingot_ir_expr_t* ci0[2] = {V(f, i0), V(f, j0)};
  ingot_ir_stmt_t* init = ingot_ir_for(f, i0, M, ingot_ir_for(f, j0, N,
      ingot_ir_store(f, C, ingot_ir_flat_index(f, C, ci0), ingot_ir_float(f, INGOT_DTYPE_F32, 0))));
  ingot_ir_expr_t* ci[2] = {V(f, i), V(f, j)};
  ingot_ir_expr_t* ai[2] = {V(f, i), V(f, k)};
  ingot_ir_expr_t* bi[2] = {V(f, k), V(f, j)};
  ingot_ir_expr_t* cidx = ingot_ir_flat_index(f, C, ci);
  ingot_ir_expr_t* prod = ingot_ir_mul(f, ingot_ir_load(f, A, ingot_ir_flat_index(f, A, ai)),
                                       ingot_ir_load(f, B, ingot_ir_flat_index(f, B, bi)));
  ingot_ir_stmt_t* upd = ingot_ir_for(f, i, M, ingot_ir_for(f, j, N, ingot_ir_for(f, k, K,
      ingot_ir_store(f, C, cidx, ingot_ir_add(f, ingot_ir_load(f, C, cidx), prod)))));
  ingot_ir_stmt_t* stages[2] = {init, upd};
  f->body = ingot_ir_block(f, stages, 2);
  CHECK(ingot_ir_verify(f) == INGOT_OK);

  float a[M * K], b[K * N], c[M * N], ref[M * N];
  for (int x = 0; x < M * K; ++x) a[x] = (float)(x % 7) - 2.5f;
  for (int x = 0; x < K * N; ++x) b[x] = (float)(x % 5) * 0.25f + 1.0f;
  for (int x = 0; x < M * N; ++x) c[x] = 1234.0f;
  for (int r = 0; r < M; ++r)
    for (int s = 0; s < N; ++s) {
      float acc = 0;
      for (int t = 0; t < K; ++t) acc = acc + a[r * K + t] * b[t * N + s];
      ref[r * N + s] = acc;
    }
  void* args[3] = {a, b, c};
  CHECK(ingot_ir_interpret(f, args) == INGOT_OK);
  for (int x = 0; x < M * N; ++x) CHECK(c[x] == ref[x]);

  /* out-of-range loads are an error, not a crash */
  uint32_t q = ingot_ir_add_var(f, "q", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  ingot_ir_stmt_t* bad = ingot_ir_for(f, q, M * N + 1,
                                      ingot_ir_store(f, C, ingot_ir_int(f, 0), ingot_ir_load(f, A, V(f, q))));
  f->body = bad;
  ingot_compiler_error_clear();
  CHECK(ingot_ir_interpret(f, args) == INGOT_ERROR_INTERNAL);
  CHECK(strstr(ingot_compiler_error(), "outside its 12 elements") != NULL);
  ingot_ir_func_destroy(f);
}

/* Integer floor division / modulo, casts, select, and locals. */
static void test_interpret_ints(void) {
  ingot_ir_func_t* f = ingot_ir_func_create("ints");
  int64_t d[1] = {6};
  uint32_t x = ingot_ir_add_buffer(f, "x", INGOT_DTYPE_I32, INGOT_IR_BUFFER_INPUT, 1, d);
  uint32_t y = ingot_ir_add_buffer(f, "y", INGOT_DTYPE_I64, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t z = ingot_ir_add_buffer(f, "z", INGOT_DTYPE_F64, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t i = ingot_ir_add_var(f, "i", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t t = ingot_ir_add_var(f, "t", INGOT_IR_VAR_LOCAL, INGOT_DTYPE_I64);
  ingot_ir_expr_t* xi = ingot_ir_cast(f, INGOT_DTYPE_I64, ingot_ir_load(f, x, V(f, i)));
  ingot_ir_expr_t* q = ingot_ir_binary(f, INGOT_IR_DIV, V(f, t), ingot_ir_int(f, 3));
  ingot_ir_expr_t* m = ingot_ir_binary(f, INGOT_IR_MOD, V(f, t), ingot_ir_int(f, 3));
  ingot_ir_stmt_t* body[3] = {
      ingot_ir_local(f, t, xi),
      ingot_ir_store(f, y, V(f, i), ingot_ir_add(f, ingot_ir_mul(f, q, ingot_ir_int(f, 100)), m)),
      ingot_ir_store(f, z, V(f, i),
                     ingot_ir_select(f, ingot_ir_binary(f, INGOT_IR_LT, V(f, t), ingot_ir_int(f, 0)),
                                     ingot_ir_float(f, INGOT_DTYPE_F64, -1.0),
                                     ingot_ir_unary(f, INGOT_IR_SQRT, ingot_ir_cast(f, INGOT_DTYPE_F64, V(f, t))))),
  };
  f->body = ingot_ir_for(f, i, 6, ingot_ir_block(f, body, 3));
  CHECK(ingot_ir_verify(f) == INGOT_OK);
  int32_t xs[6] = {-7, -3, -1, 0, 4, 9};
  int64_t ys[6];
  double zs[6];
  void* args[3] = {xs, ys, zs};
  CHECK(ingot_ir_interpret(f, args) == INGOT_OK);
  int64_t want[6] = {-300 + 2, -100 + 0, -100 + 2, 0, 100 + 1, 300};
  for (int k = 0; k < 6; ++k) CHECK(ys[k] == want[k]);
  CHECK(zs[0] == -1.0 && zs[3] == 0.0 && zs[4] == 2.0 && zs[5] == 3.0);
  ingot_ir_func_destroy(f);
}

/* Row sums through a block's shared memory: block b stages row b in a SHARED
 * buffer (thread loop), waits at a barrier, then thread 0's loop sums it. */
static void test_shared_barrier(void) {
  enum { R = 3, C = 4 };
  ingot_ir_func_t* f = ingot_ir_func_create("rowsum");
  int64_t dx[2] = {R, C}, dy[1] = {R}, ds[1] = {C};
  uint32_t X = ingot_ir_add_buffer(f, "x", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 2, dx);
  uint32_t Y = ingot_ir_add_buffer(f, "y", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 1, dy);
  uint32_t S = ingot_ir_add_buffer(f, "tile", INGOT_DTYPE_F32, INGOT_IR_BUFFER_SHARED, 1, ds);
  CHECK(ingot_ir_param_count(f) == 2);
  uint32_t b = ingot_ir_add_var(f, "b", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t t = ingot_ir_add_var(f, "t", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t u = ingot_ir_add_var(f, "u", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t k = ingot_ir_add_var(f, "k", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  ingot_ir_expr_t* xi[2] = {V(f, b), V(f, t)};
  ingot_ir_stmt_t* fill = ingot_ir_for(f, t, C, ingot_ir_store(f, S, V(f, t), ingot_ir_load(f, X, ingot_ir_flat_index(f, X, xi))));
  ingot_ir_stmt_t* init = ingot_ir_store(f, Y, V(f, b), ingot_ir_float(f, INGOT_DTYPE_F32, 0));
  ingot_ir_stmt_t* sum = ingot_ir_for(f, k, C, ingot_ir_store(f, Y, V(f, b),
      ingot_ir_add(f, ingot_ir_load(f, Y, V(f, b)), ingot_ir_load(f, S, V(f, k)))));
  ingot_ir_stmt_t* one[2] = {init, sum};
  ingot_ir_stmt_t* head = ingot_ir_for(f, u, 1, ingot_ir_block(f, one, 2));
  ingot_ir_stmt_t* body[3] = {fill, ingot_ir_barrier(f), head};
  ingot_ir_stmt_t* blk = ingot_ir_for(f, b, R, ingot_ir_block(f, body, 3));
  blk->u.loop.loop_kind = INGOT_IR_LOOP_GPU_BLOCK;
  fill->u.loop.loop_kind = INGOT_IR_LOOP_GPU_THREAD;
  head->u.loop.loop_kind = INGOT_IR_LOOP_GPU_THREAD;
  f->body = blk;
  CHECK(ingot_ir_verify(f) == INGOT_OK);
  ingot_strbuf_t sb = {0};
  ingot_ir_print(f, &sb);
  CHECK(sb.data && strstr(sb.data, "barrier;") && strstr(sb.data, "shared"));
  ingot_strbuf_free(&sb);
  float x[R * C], y[R];
  for (int i = 0; i < R * C; ++i) x[i] = (float)i;
  void* args[2] = {x, y}; /* parameters only: the interpreter owns 'tile' */
  CHECK(ingot_ir_interpret(f, args) == INGOT_OK);
  for (int r = 0; r < R; ++r) CHECK(y[r] == (float)(4 * r * C + 6));

  /* A barrier inside a thread loop is refused: not every thread reaches it. */
  ingot_ir_stmt_t* in[2] = {ingot_ir_store(f, S, V(f, t), ingot_ir_float(f, INGOT_DTYPE_F32, 1)), ingot_ir_barrier(f)};
  ingot_ir_stmt_t* bad = ingot_ir_for(f, t, C, ingot_ir_block(f, in, 2));
  bad->u.loop.loop_kind = INGOT_IR_LOOP_GPU_THREAD;
  f->body = ingot_ir_for(f, b, R, bad);
  f->body->u.loop.loop_kind = INGOT_IR_LOOP_GPU_BLOCK;
  CHECK(ingot_ir_verify(f) != INGOT_OK);
  CHECK(strstr(ingot_compiler_error(), "barrier inside a GPU thread loop") != NULL);
  /* A parameter after a shared buffer is refused. */
  f->body = blk;
  ingot_ir_add_buffer(f, "late", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 1, dy);
  CHECK(ingot_ir_verify(f) != INGOT_OK);
  ingot_ir_func_destroy(f);
}

/* float16 arithmetic (lower/ir_ops.def, HALF): the verifier takes + - * /
 * min max neg abs sqrt and comparisons on float16 and refuses the rest, and
 * every op on bfloat16; the interpreter rounds each result to float16, ties
 * to even; the printer marks float16 constants. */
static ingot_ir_func_t* make_half(ingot_dtype_t t, ingot_ir_expr_t* (*body)(ingot_ir_func_t*, ingot_ir_expr_t*,
                                                                            ingot_ir_expr_t*)) {
  ingot_ir_func_t* f = ingot_ir_func_create("half");
  int64_t d[1] = {6};
  uint32_t a = ingot_ir_add_buffer(f, "a", t, INGOT_IR_BUFFER_INPUT, 1, d);
  uint32_t b = ingot_ir_add_buffer(f, "b", t, INGOT_IR_BUFFER_INPUT, 1, d);
  uint32_t y = ingot_ir_add_buffer(f, "y", t, INGOT_IR_BUFFER_OUTPUT, 1, d);
  uint32_t i = ingot_ir_add_var(f, "i", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  f->body = ingot_ir_for(f, i, 6, ingot_ir_store(f, y, V(f, i), body(f, ingot_ir_load(f, a, V(f, i)),
                                                                        ingot_ir_load(f, b, V(f, i)))));
  return f;
}
static ingot_ir_expr_t* half_add(ingot_ir_func_t* f, ingot_ir_expr_t* a, ingot_ir_expr_t* b) {
  return ingot_ir_add(f, a, b);
}
static ingot_ir_expr_t* half_exp(ingot_ir_func_t* f, ingot_ir_expr_t* a, ingot_ir_expr_t* b) {
  (void)b;
  return ingot_ir_unary(f, INGOT_IR_EXP, a);
}
static ingot_ir_expr_t* half_pow(ingot_ir_func_t* f, ingot_ir_expr_t* a, ingot_ir_expr_t* b) {
  return ingot_ir_binary(f, INGOT_IR_POW, a, b);
}
/* max(sqrt(a * b) - 0.5h, -a) / 3h: five roundings */
static ingot_ir_expr_t* half_chain(ingot_ir_func_t* f, ingot_ir_expr_t* a, ingot_ir_expr_t* b) {
  ingot_ir_expr_t* r = ingot_ir_unary(f, INGOT_IR_SQRT, ingot_ir_mul(f, a, b));
  r = ingot_ir_binary(f, INGOT_IR_SUB, r, ingot_ir_float(f, INGOT_DTYPE_F16, 0.5));
  r = ingot_ir_binary(f, INGOT_IR_MAX, r, ingot_ir_unary(f, INGOT_IR_NEG, a));
  return ingot_ir_binary(f, INGOT_IR_DIV, r, ingot_ir_float(f, INGOT_DTYPE_F16, 3.0));
}

static void test_half(void) {
  ingot_ir_func_t* f = make_half(INGOT_DTYPE_F16, half_add);
  CHECK(ingot_ir_verify(f) == INGOT_OK);
  /* 65504 + 15 stays, 65504 + 16 is the tie to even: infinity; 2048 + 1 is
   * a tie (to 2048), 2048 + 3 one too (to 2052); subnormals add exactly */
  uint16_t a[6] = {0x7bff, 0x7bff, 0x6800, 0x6800, 0x0001, 0xfbff};
  uint16_t b[6] = {0x4b80, 0x4c00, 0x3c00, 0x4200, 0x03ff, 0xcc00};
  uint16_t y[6];
  void* args[3] = {a, b, y};
  CHECK(ingot_ir_interpret(f, args) == INGOT_OK);
  CHECK(y[0] == 0x7bff && y[1] == 0x7c00 && y[2] == 0x6800 && y[3] == 0x6802 && y[4] == 0x0400 && y[5] == 0xfc00);
  ingot_ir_func_destroy(f);

  f = make_half(INGOT_DTYPE_F16, half_chain);
  CHECK(ingot_ir_verify(f) == INGOT_OK);
  ingot_strbuf_t sb = {0};
  ingot_ir_print(f, &sb);
  CHECK(sb.data && strstr(sb.data, "0.5h") && strstr(sb.data, "3.0h") && strstr(sb.data, "sqrt("));
  ingot_strbuf_free(&sb);
  /* (numpy's float16, which rounds after each op, agrees) a = 3, b = 3:
   * sqrt(9) - 0.5 = 2.5, / 3 -> 0.8335 (0x3aab); a = 1, b = 2: sqrt(2) -> 1.414,
   * - 0.5 -> 0.914, / 3 -> 0.3047 (0x34e0); a = 2, b = 0: max(-0.5, -2) / 3 ->
   * -0.1666 (0xb155); a = 1e-4 (0x068e), b = 1: max(0.01 - 0.5, -1e-4) / 3 ->
   * the subnormal -3.33e-5 (0x822f) */
  uint16_t ca[6] = {0x4200, 0x3c00, 0x4000, 0x068e, 0x7c00, 0x3c00};
  uint16_t cb[6] = {0x4200, 0x4000, 0x0000, 0x3c00, 0x3c00, 0xbc00};
  void* cargs[3] = {ca, cb, y};
  CHECK(ingot_ir_interpret(f, cargs) == INGOT_OK);
  CHECK(y[0] == 0x3aab && y[1] == 0x34e0 && y[2] == 0xb155 && y[3] == 0x822f);
  CHECK(y[4] == 0x7c00); /* inf: sqrt(inf) - 0.5 = inf, / 3 = inf */
  CHECK(y[5] == 0xb555); /* sqrt(-1) is NaN: max(NaN, -1) = -1, / 3 */
  ingot_ir_func_destroy(f);

  expect_reject(make_half(INGOT_DTYPE_F16, half_exp), "exp of a float16");
  expect_reject(make_half(INGOT_DTYPE_F16, half_pow), "'pow' of float16 operands");
  expect_reject(make_half(INGOT_DTYPE_BF16, half_add), "'+' of bfloat16 operands");
}

int main(void) {
  test_print();
  test_shared_barrier();
  test_verify_rejects();
  test_interpret_matmul();
  test_interpret_ints();
  test_half();
  if (g_failures) {
    fprintf(stderr, "%d check(s) failed\n", g_failures);
    return 1;
  }
  printf("ir tests passed\n");
  return 0;
}
