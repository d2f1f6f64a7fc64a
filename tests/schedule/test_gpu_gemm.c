/* GPU contraction schedules without a GPU: cache_read on hand-made loop
 * nests, and the gpu.gemm template (its default and random points of its
 * space) on lowered MatMul, Gemm and conv kernels, on a hand-made CUDA
 * target. Every scheduled kernel must verify and compute, in the IR
 * interpreter (GPU loops run serially, SHARED buffers allocated), what the
 * unscheduled one does. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower_test_util.h"
#include "schedule/schedule.h"

static ingot_target_t cuda_target(void) {
  ingot_target_t t;
  memset(&t, 0, sizeof(t));
  t.kind = INGOT_TARGET_CUDA;
  snprintf(t.name, sizeof(t.name), "cuda -arch=sm_90");
  snprintf(t.gpu.arch, sizeof(t.gpu.arch), "sm_90");
  t.gpu.warp_size = 32;
  t.gpu.shared_bytes_per_block = 49152;
  t.gpu.max_threads_per_block = 1024;
  return t;
}

/* ---- hand-made nests ---- */

typedef struct mm_t {
  ingot_ir_func_t* f;
  int64_t m, n, k;
  uint32_t a, b, c;
} mm_t;

/* C[i, j] = sum_k A[i, k] * B[k, j] with the select start of lowering;
 * `divided`: A read at (i / 2) * K + k (not affine in i). */
static mm_t make_matmul(int64_t m, int64_t n, int64_t k, bool divided) {
  mm_t r = {ingot_ir_func_create("mm"), m, n, k, 0, 0, 0};
  ingot_ir_func_t* f = r.f;
  int64_t ad[2] = {m, k}, bd[2] = {k, n}, cd[2] = {m, n};
  r.a = ingot_ir_add_buffer(f, "a", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 2, ad);
  r.b = ingot_ir_add_buffer(f, "b", INGOT_DTYPE_F32, INGOT_IR_BUFFER_INPUT, 2, bd);
  r.c = ingot_ir_add_buffer(f, "c", INGOT_DTYPE_F32, INGOT_IR_BUFFER_OUTPUT, 2, cd);
  uint32_t i = ingot_ir_add_var(f, "i", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t j = ingot_ir_add_var(f, "j", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  uint32_t kk = ingot_ir_add_var(f, "k", INGOT_IR_VAR_LOOP, INGOT_DTYPE_I64);
  ingot_ir_expr_t* row = ingot_ir_var(f, i);
  if (divided) row = ingot_ir_binary(f, INGOT_IR_DIV, row, ingot_ir_int(f, 2));
  ingot_ir_expr_t* ai[2] = {row, ingot_ir_var(f, kk)};
  ingot_ir_expr_t* bi[2] = {ingot_ir_var(f, kk), ingot_ir_var(f, j)};
  ingot_ir_expr_t* ci[2] = {ingot_ir_var(f, i), ingot_ir_var(f, j)};
  ingot_ir_expr_t* cidx = ingot_ir_flat_index(f, r.c, ci);
  ingot_ir_expr_t* start = ingot_ir_select(f, ingot_ir_binary(f, INGOT_IR_EQ, ingot_ir_var(f, kk), ingot_ir_int(f, 0)),
                                           ingot_ir_float(f, INGOT_DTYPE_F32, 0.0), ingot_ir_load(f, r.c, cidx));
  ingot_ir_expr_t* prod = ingot_ir_mul(f, ingot_ir_load(f, r.a, ingot_ir_flat_index(f, r.a, ai)),
                                       ingot_ir_load(f, r.b, ingot_ir_flat_index(f, r.b, bi)));
  ingot_ir_stmt_t* s = ingot_ir_store(f, r.c, cidx, ingot_ir_add(f, start, prod));
  s = ingot_ir_for(f, kk, k, s);
  s = ingot_ir_for(f, j, n, s);
  f->body = ingot_ir_for(f, i, m, s);
  return r;
}

static void run_mm(const mm_t* r, const float* a, const float* b, float* c) {
  void* args[3] = {(void*)a, (void*)b, c};
  for (int64_t i = 0; i < r->m * r->n; ++i) c[i] = NAN;
  ingot_status_t st = ingot_ir_interpret(r->f, args);
  if (st != INGOT_OK) {
    fprintf(stderr, "interpret: %s\n", ingot_compiler_error());
    ++g_failures;
  }
}

static uint32_t count_stmts(const ingot_ir_stmt_t* s, ingot_ir_stmt_kind_t kind) {
  if (!s) return 0;
  uint32_t n = s->kind == kind;
  switch (s->kind) {
    case INGOT_IR_STMT_FOR: return n + count_stmts(s->u.loop.body, kind);
    case INGOT_IR_STMT_IF: return n + count_stmts(s->u.cond.then_body, kind);
    case INGOT_IR_STMT_BLOCK:
      for (uint32_t i = 0; i < s->u.block.count; ++i) n += count_stmts(s->u.block.stmts[i], kind);
      return n;
    default: return n;
  }
}

static uint32_t shared_buffers(const ingot_ir_func_t* f) { return f->buffer_count - ingot_ir_param_count(f); }

#define CHECK_OK(expr)                                                         \
  do {                                                                         \
    ingot_status_t st_ = (expr);                                               \
    if (st_ != INGOT_OK) {                                                     \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, ingot_compiler_error()); \
      ++g_failures;                                                            \
    }                                                                          \
  } while (0)

/* A refused cache_read names what it refuses and leaves the function as it was. */
static void expect_refused(ingot_ir_func_t* f, const char* loop, const char* buffer, int64_t max_bytes,
                           const char* words) {
  const ingot_ir_stmt_t* body = f->body;
  uint32_t vars = f->var_count, buffers = f->buffer_count;
  ingot_status_t st = ingot_schedule_cache_read(f, loop, buffer, NULL, max_bytes);
  const char* msg = ingot_compiler_error();
  if (st == INGOT_OK || !msg || !strstr(msg, words)) {
    fprintf(stderr, "cache_read %s at %s: wanted a refusal naming '%s', got %d '%s'\n", buffer, loop, words, (int)st,
            msg ? msg : "");
    ++g_failures;
  }
  CHECK(f->body == body && f->var_count == vars && f->buffer_count == buffers);
  ingot_compiler_error_clear();
}

static void test_cache_read(void) {
  const int64_t M = 13, N = 11, K = 10;
  float* a = tg_random(M * K, 1);
  float* b = tg_random(K * N, 2);
  float* want = malloc(sizeof(float) * M * N);
  float* got = malloc(sizeof(float) * M * N);
  mm_t ref = make_matmul(M, N, K, false);
  run_mm(&ref, a, b, want);

  /* blocks of 8x4 outputs, threads 8x4, K steps of 4; A and B staged */
  for (int variant = 0; variant < 3; ++variant) {
    mm_t r = make_matmul(M, N, K, false);
    ingot_ir_func_t* f = r.f;
    CHECK_OK(ingot_schedule_split(f, "i", 8, "io", "ii"));
    CHECK_OK(ingot_schedule_split(f, "j", 4, "jo", "ji"));
    CHECK_OK(ingot_schedule_split(f, "k", 4, "ko", "ki"));
    const char* order[] = {"io", "jo", "ko", "ii", "ji", "ki"};
    CHECK_OK(ingot_schedule_reorder(f, order, 6));
    if (variant < 2) {
      CHECK_OK(ingot_schedule_bind(f, "io", INGOT_IR_LOOP_GPU_BLOCK, 1));
      CHECK_OK(ingot_schedule_bind(f, "jo", INGOT_IR_LOOP_GPU_BLOCK, 0));
      CHECK_OK(ingot_schedule_bind(f, "ii", INGOT_IR_LOOP_GPU_THREAD, 1));
      CHECK_OK(ingot_schedule_bind(f, "ji", INGOT_IR_LOOP_GPU_THREAD, 0));
    }
    /* variant 1 stages at ko (the whole reduction of a block); 0 and 2 at ii */
    const char* at = variant == 1 ? "jo" : "ii";
    CHECK_OK(ingot_schedule_cache_read(f, at, "a", NULL, 49152));
    CHECK_OK(ingot_schedule_cache_read(f, at, "b", "b_tile", 49152));
    CHECK(shared_buffers(f) == 2);
    /* two stagings at one loop share the first barrier */
    CHECK(count_stmts(f->body, INGOT_IR_STMT_BARRIER) == 3);
    if (variant == 0) {
      /* a tile per K step: 8 rows x 4 steps of A, 4 steps x 4 columns of B */
      CHECK(ingot_ir_buffer_numel(&f->buffers[3]) == 8 * 4);
      CHECK(ingot_ir_buffer_numel(&f->buffers[4]) == 4 * 4);
      CHECK(!strcmp(f->buffers[3].name, "a_shared") && !strcmp(f->buffers[4].name, "b_tile"));
    }
    CHECK_OK(ingot_ir_verify(f));
    run_mm(&r, a, b, got);
    char what[64];
    snprintf(what, sizeof(what), "cache_read matmul variant %d", variant);
    double* w = malloc(sizeof(double) * M * N);
    for (int64_t i = 0; i < M * N; ++i) w[i] = want[i];
    CHECK(tg_close(what, got, w, M * N));
    free(w);
    if (getenv("INGOT_TEST_DUMP")) {
      ingot_strbuf_t sb = {0};
      ingot_ir_print(f, &sb);
      fprintf(stderr, "%s\n", sb.data);
      ingot_strbuf_free(&sb);
    }

    /* refusals */
    if (variant == 0) {
      expect_refused(f, "nope", "a", 0, "no loop named 'nope'");
      expect_refused(f, "ii", "zz", 0, "no buffer named 'zz'");
      expect_refused(f, "ki", "a", 0, "inside GPU thread loop");
      expect_refused(f, "ii", "c", 0, "writes 'c'");
      expect_refused(f, "ii", "a_shared", 0, "not a parameter");
      expect_refused(f, "ko", "b", 0, "not affine"); /* the fills inside read b at digits of e */
    }
    ingot_ir_func_destroy(f);
  }
  /* not affine: A at (i / 2) * K + k */
  {
    mm_t r = make_matmul(M, N, K, true);
    expect_refused(r.f, "i", "a", 0, "not affine");
    CHECK_OK(ingot_schedule_cache_read(r.f, "i", "b", NULL, 0)); /* B is: all of it, once */
    CHECK(ingot_ir_buffer_numel(&r.f->buffers[3]) == K * N);
    ingot_ir_func_destroy(r.f);
    mm_t q = make_matmul(M, N, K, false);
    expect_refused(q.f, "k", "b", 16, "exceeds the limit"); /* a column: K floats, 40 bytes */
    CHECK_OK(ingot_schedule_cache_read(q.f, "k", "b", NULL, 40));
    CHECK(ingot_ir_buffer_numel(&q.f->buffers[3]) == K);
    run_mm(&q, a, b, got);
    double* w = malloc(sizeof(double) * M * N);
    for (int64_t i = 0; i < M * N; ++i) w[i] = want[i];
    CHECK(tg_close("cache_read of a column, no GPU loops", got, w, M * N));
    free(w);
    ingot_ir_func_destroy(q.f);
  }
  ingot_ir_func_destroy(ref.f);
  free(a);
  free(b);
  free(want);
  free(got);
}

/* ---- gpu.gemm on lowered kernels ---- */

typedef ingot_graph_t* (*graph_fn)(uint32_t* out_input, uint32_t* out_output);

static ingot_graph_t* conv_graph(const int64_t* xd, const int64_t* wd, const int64_t* yd, const int64_t* k,
                                 const int64_t* strides, const int64_t* pads, int64_t group, bool bias, bool relu,
                                 uint32_t* in, uint32_t* out) {
  ingot_graph_t* g = tg_graph(13);
  uint32_t x = tg_input(g, "x", 4, xd);
  uint32_t w = tg_weight(g, "w", 4, wd, NULL);
  int64_t bd[1] = {wd[0]};
  uint32_t ins[3] = {x, w, bias ? tg_weight(g, "b", 1, bd, NULL) : 0};
  uint32_t y = tg_output(g, "y", 4, yd);
  uint32_t node = tg_node(g, INGOT_OP_CONV, ins, bias ? 3 : 2, &y, 1);
  tg_attr_ints(g, node, "kernel_shape", k, 2);
  if (strides) tg_attr_ints(g, node, "strides", strides, 2);
  if (pads) tg_attr_ints(g, node, "pads", pads, 4);
  if (group > 1) tg_attr_int(g, node, "group", group);
  if (relu) g->nodes[node].epilogue.activation = INGOT_ACTIVATION_RELU;
  *in = x;
  *out = y;
  return g;
}

static ingot_graph_t* g_conv3x3(uint32_t* in, uint32_t* out) {
  int64_t xd[4] = {1, 8, 14, 14}, wd[4] = {16, 8, 3, 3}, yd[4] = {1, 16, 14, 14}, k[2] = {3, 3}, p[4] = {1, 1, 1, 1};
  return conv_graph(xd, wd, yd, k, NULL, p, 1, true, true, in, out);
}
static ingot_graph_t* g_conv_strided(uint32_t* in, uint32_t* out) {
  int64_t xd[4] = {2, 3, 17, 11}, wd[4] = {5, 3, 3, 3}, yd[4] = {2, 5, 8, 5}, k[2] = {3, 3}, s[2] = {2, 2};
  return conv_graph(xd, wd, yd, k, s, NULL, 1, false, false, in, out);
}
static ingot_graph_t* g_conv_padded_strided(uint32_t* in, uint32_t* out) {
  int64_t xd[4] = {1, 6, 9, 10}, wd[4] = {7, 6, 3, 3}, yd[4] = {1, 7, 5, 5}, k[2] = {3, 3}, s[2] = {2, 2},
          p[4] = {1, 1, 1, 1};
  return conv_graph(xd, wd, yd, k, s, p, 1, true, false, in, out);
}
static ingot_graph_t* g_conv1x1(uint32_t* in, uint32_t* out) {
  int64_t xd[4] = {1, 12, 7, 9}, wd[4] = {20, 12, 1, 1}, yd[4] = {1, 20, 7, 9}, k[2] = {1, 1};
  return conv_graph(xd, wd, yd, k, NULL, NULL, 1, true, true, in, out);
}
static ingot_graph_t* g_conv_grouped(uint32_t* in, uint32_t* out) {
  int64_t xd[4] = {1, 8, 9, 9}, wd[4] = {12, 4, 3, 3}, yd[4] = {1, 12, 9, 9}, k[2] = {3, 3}, p[4] = {1, 1, 1, 1};
  return conv_graph(xd, wd, yd, k, NULL, p, 2, true, false, in, out);
}

/* A conv whose output a zero Pad widens, absorbed (the conv writes into the
 * padded output; its kernel fills the border first). */
static ingot_graph_t* g_conv_outpad(uint32_t* in, uint32_t* out) {
  ingot_graph_t* g = tg_graph(13);
  int64_t xd[4] = {1, 8, 10, 10}, wd[4] = {16, 8, 3, 3}, bd[1] = {16}, td[4] = {1, 16, 8, 8}, yd[4] = {1, 16, 11, 10};
  uint32_t x = tg_input(g, "x", 4, xd);
  uint32_t w = tg_weight(g, "w", 4, wd, NULL);
  uint32_t b = tg_weight(g, "b", 1, bd, NULL);
  uint32_t t = tg_inter(g, "t", 4, td);
  uint32_t y = tg_output(g, "y", 4, yd);
  uint32_t ins[3] = {x, w, b};
  uint32_t node = tg_node(g, INGOT_OP_CONV, ins, 3, &t, 1);
  int64_t k[2] = {3, 3};
  tg_attr_ints(g, node, "kernel_shape", k, 2);
  g->nodes[node].epilogue.activation = INGOT_ACTIVATION_RELU;
  uint32_t pad = tg_node(g, INGOT_OP_PAD, &t, 1, &y, 1);
  int64_t pads[8] = {0, 0, 2, 1, 0, 0, 1, 1};
  tg_attr_ints(g, pad, "pads", pads, 8);
  CHECK(ingot_graph_pad_into_producers(g) == INGOT_OK);
  *in = x;
  *out = y;
  return g;
}

static ingot_graph_t* g_matmul(uint32_t* in, uint32_t* out) {
  ingot_graph_t* g = tg_graph(13);
  int64_t ad[2] = {13, 17}, bd[2] = {17, 40}, yd[2] = {13, 40};
  uint32_t a = tg_input(g, "a", 2, ad);
  uint32_t b = tg_weight(g, "b", 2, bd, NULL);
  uint32_t y = tg_output(g, "y", 2, yd);
  uint32_t ins[2] = {a, b};
  tg_node(g, INGOT_OP_MATMUL, ins, 2, &y, 1);
  *in = a;
  *out = y;
  return g;
}

static ingot_graph_t* g_matmul_batched(uint32_t* in, uint32_t* out) {
  ingot_graph_t* g = tg_graph(13);
  int64_t ad[3] = {3, 70, 33}, bd[3] = {3, 33, 130}, yd[3] = {3, 70, 130};
  uint32_t a = tg_input(g, "a", 3, ad);
  uint32_t b = tg_weight(g, "b", 3, bd, NULL);
  uint32_t y = tg_output(g, "y", 3, yd);
  uint32_t ins[2] = {a, b};
  tg_node(g, INGOT_OP_MATMUL, ins, 2, &y, 1);
  *in = a;
  *out = y;
  return g;
}

static ingot_graph_t* g_gemm(uint32_t* in, uint32_t* out) {
  ingot_graph_t* g = tg_graph(13);
  int64_t ad[2] = {5, 64}, bd[2] = {100, 64}, cd[1] = {100}, yd[2] = {5, 100};
  uint32_t a = tg_input(g, "a", 2, ad);
  uint32_t b = tg_weight(g, "b", 2, bd, NULL);
  uint32_t c = tg_weight(g, "c", 1, cd, NULL);
  uint32_t y = tg_output(g, "y", 2, yd);
  uint32_t ins[3] = {a, b, c};
  uint32_t node = tg_node(g, INGOT_OP_GEMM, ins, 3, &y, 1);
  tg_attr_int(g, node, "transB", 1);
  tg_attr_float(g, node, "alpha", 0.5f);
  g->nodes[node].epilogue.activation = INGOT_ACTIVATION_RELU;
  *in = a;
  *out = y;
  return g;
}

/* Lays every node out unpacked (pack 0) when `unpacked`, as the GPU wants. */
static void lay_out(ingot_graph_t* g, bool unpacked) {
  if (!unpacked) return;
  for (uint32_t i = 0; i < g->node_count; ++i) {
    ingot_node_layout_options_t o;
    ingot_node_layout_options(g, &g->nodes[i], &o);
    ingot_node_layout_t layout = o.defaults;
    layout.pack = false;
    layout.chosen = true;
    g->nodes[i].layout = layout;
  }
  CHECK(ingot_graph_pack_weights(g) == INGOT_OK);
}

static uint32_t g_gemm_kernels; /* contraction kernels scheduled with gpu.gemm */
static uint32_t g_staged;       /* of those, with at least one cache_read */

static uint64_t g_rng = 88172645463325252ull;
static uint64_t rng_next(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return g_rng;
}

/* points: 0 the chosen default, else that many random points of each
 * contraction kernel's gpu.gemm space (the other kernels chosen). */
static void run_case(const char* name, graph_fn make, bool unpacked, const ingot_target_t* target, int point) {
  uint32_t x, y;
  ingot_graph_t* g = make(&x, &y);
  lay_out(g, unpacked);
  ingot_lowered_t* l = tg_lower(g);
  if (!l) {
    ingot_graph_destroy(g);
    return;
  }
  float** vals = tg_vals(g);
  vals[x] = tg_random(tg_numel(g, x), 7);
  int64_t n = tg_numel(g, y);
  double* want = malloc(sizeof(double) * (size_t)n);
  bool ok = tg_execute(g, l, vals);
  for (int64_t i = 0; ok && i < n; ++i) want[i] = vals[y][i];
  float* input = malloc(sizeof(float) * (size_t)tg_numel(g, x));
  memcpy(input, vals[x], sizeof(float) * (size_t)tg_numel(g, x));
  tg_free_vals(g, l, vals);
  vals = tg_vals(g);
  vals[x] = input;
  char what[256];
  snprintf(what, sizeof(what), "%s%s gpu.gemm %s", name, unpacked ? " (unpacked)" : "", point ? "random point" : "default");
  for (uint32_t k = 0; ok && k < l->kernel_count; ++k) {
    ingot_kernel_t* kern = &l->kernels[k];
    ingot_schedule_t s;
    ingot_schedule_init(&s);
    ingot_schedule_space_t space;
    bool fits = ingot_schedule_space(kern, target, "gpu.gemm", &space) == INGOT_OK;
    ingot_compiler_error_clear();
    ingot_status_t st;
    if (fits && point) {
      const char* names[INGOT_MAX_KNOBS];
      int64_t values[INGOT_MAX_KNOBS];
      for (uint32_t i = 0; i < space.knob_count; ++i) {
        names[i] = space.knobs[i].name;
        values[i] = space.knobs[i].values[rng_next() % space.knobs[i].value_count];
      }
      st = ingot_schedule_from_template(kern, target, "gpu.gemm", names, values, space.knob_count, &s);
    } else {
      st = ingot_schedule_choose(kern, target, NULL, NULL, &s);
      /* where its space is not empty, gpu.gemm is the default on a GPU kind */
      if (st == INGOT_OK) CHECK(fits == !strcmp(s.template_name, "gpu.gemm"));
    }
    bool staged = false;
    for (uint32_t d = 0; st == INGOT_OK && d < s.directive_count; ++d)
      staged |= s.directives[d].kind == INGOT_DIRECTIVE_CACHE_READ;
    if (st == INGOT_OK) st = ingot_schedule_apply(kern->func, &s);
    if (st == INGOT_OK) st = ingot_ir_verify(kern->func);
    if (st != INGOT_OK) {
      fprintf(stderr, "%s kernel '%s': %s\n", what, kern->func->name, ingot_compiler_error());
      ++g_failures;
      ok = false;
    } else if (fits) {
      ++g_gemm_kernels;
      g_staged += staged;
    }
    if (getenv("INGOT_TEST_DUMP")) {
      ingot_strbuf_t sb = {0};
      ingot_schedule_describe(&s, &sb);
      ingot_ir_print(kern->func, &sb);
      fprintf(stderr, "# %s\n%s\n", what, sb.data);
      ingot_strbuf_free(&sb);
    }
    ingot_schedule_deinit(&s);
  }
  if (ok && tg_execute(g, l, vals)) CHECK(tg_close(what, vals[y], want, n));
  tg_free_vals(g, l, vals);
  ingot_lowered_destroy(l);
  ingot_graph_destroy(g);
  free(want);
}

/* CPU kinds never see gpu.gemm. */
static void test_cpu_untouched(void) {
  ingot_target_t cpu;
  CHECK(ingot_target_parse("c", &cpu) == INGOT_OK);
  uint32_t x, y;
  ingot_graph_t* g = g_matmul(&x, &y);
  ingot_lowered_t* l = tg_lower(g);
  if (l) {
    ingot_schedule_space_t space;
    CHECK(ingot_schedule_space(&l->kernels[0], &cpu, "gpu.gemm", &space) != INGOT_OK);
    const char* msg = ingot_compiler_error();
    CHECK(msg && strstr(msg, "is for GPU targets"));
    ingot_compiler_error_clear();
    CHECK(!strcmp(ingot_schedule_template_default(&l->kernels[0], &cpu), "contraction.direct"));
    for (uint32_t t = 0; t < ingot_schedule_template_count(); ++t)
      if (!strncmp(ingot_schedule_template_name(t), "gpu.", 4)) CHECK(!ingot_schedule_template_applies(&l->kernels[0], &cpu, t));
    ingot_lowered_destroy(l);
  }
  ingot_graph_destroy(g);
}

int main(void) {
  test_cache_read();
  test_cpu_untouched();
  ingot_target_t target = cuda_target();
  struct {
    const char* name;
    graph_fn fn;
  } cases[] = {
      {"matmul 13x17x40", g_matmul},
      {"batched matmul 3x70x33x130", g_matmul_batched},
      {"gemm 5x64x100 alpha relu", g_gemm},
      {"conv3x3 bias relu", g_conv3x3},
      {"conv strided", g_conv_strided},
      {"conv padded strided", g_conv_padded_strided},
      {"conv1x1 bias relu", g_conv1x1},
      {"conv grouped", g_conv_grouped},
      {"conv into a padded output", g_conv_outpad},
  };
  uint32_t ncases = sizeof(cases) / sizeof(cases[0]);
  for (uint32_t c = 0; c < ncases; ++c)
    for (int unpacked = 0; unpacked < 2; ++unpacked) {
      run_case(cases[c].name, cases[c].fn, unpacked, &target, 0);
      for (int pt = 1; pt <= 6; ++pt) run_case(cases[c].name, cases[c].fn, unpacked, &target, pt);
    }
  /* A ROCm GPU (warps of 64): the defaults again. */
  ingot_target_t rocm = cuda_target();
  rocm.kind = INGOT_TARGET_ROCM;
  snprintf(rocm.name, sizeof(rocm.name), "rocm -mcpu=gfx90a");
  snprintf(rocm.gpu.arch, sizeof(rocm.gpu.arch), "gfx90a");
  rocm.gpu.warp_size = 64;
  for (uint32_t c = 0; c < ncases; ++c) run_case(cases[c].name, cases[c].fn, true, &rocm, 0);
  /* every case has an unpacked contraction gpu.gemm takes, defaults and points */
  CHECK(g_gemm_kernels >= ncases * 8);
  CHECK(g_staged >= ncases * 3);
  if (g_failures) {
    fprintf(stderr, "%d check(s) failed\n", g_failures);
    return 1;
  }
  printf("gpu.gemm: %u kernels scheduled (%u with shared tiles), all match\n", g_gemm_kernels, g_staged);
  return 0;
}
