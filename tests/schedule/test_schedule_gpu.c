/* GPU default schedules (gpu.simt, gpu.row) on a hand-made CUDA target: for
 * every kernel of the small test models (argv: their paths; absent ones are
 * skipped) and of op-level graphs (softmax, LayerNorm, reductions, pools,
 * depthwise conv, gemm), the default schedule on the GPU target is a GPU
 * template's, applies, verifies, puts every store inside a thread loop (and
 * a block loop unless the kernel fell back to one block), and the IR
 * interpreter (GPU loops serial, shared buffers real) gives what the
 * unscheduled kernel gives: bit for bit for gpu.simt (each output keeps its
 * serial order), within a tolerance for gpu.row (the tree reduction sums in
 * another order). Also: CPU targets never see a GPU template, GPU targets
 * never a CPU one, and a fallback really happens where stages hand values
 * across threads. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "driver/driver.h"
#include "lower_test_util.h"
#include "schedule/schedule.h"

typedef struct stats_t {
  int kernels, simt, row, fallback, other_template, compared, skipped;
  int unfollowed; /* accesses the race check could not follow */
  int accumulated; /* kernels whose reductions run in a register */
} stats_t;

static bool g_race_check = true;

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

/* ---- structure of a scheduled kernel ---- */

typedef struct shape_t {
  int stores, stores_in_thread, stores_in_block;
  int block_loops, thread_loops, barriers;
  int64_t max_thread_extent;
} shape_t;

static void walk(const ingot_ir_stmt_t* s, bool in_block, bool in_thread, shape_t* out) {
  if (!s) return;
  switch (s->kind) {
    case INGOT_IR_STMT_FOR: {
      bool b = s->u.loop.loop_kind == INGOT_IR_LOOP_GPU_BLOCK, t = s->u.loop.loop_kind == INGOT_IR_LOOP_GPU_THREAD;
      out->block_loops += b;
      out->thread_loops += t;
      if (t && s->u.loop.extent > out->max_thread_extent) out->max_thread_extent = s->u.loop.extent;
      walk(s->u.loop.body, in_block || b, in_thread || t, out);
      return;
    }
    case INGOT_IR_STMT_BLOCK:
      for (uint32_t i = 0; i < s->u.block.count; ++i) walk(s->u.block.stmts[i], in_block, in_thread, out);
      return;
    case INGOT_IR_STMT_IF: walk(s->u.cond.then_body, in_block, in_thread, out); return;
    case INGOT_IR_STMT_STORE:
      ++out->stores;
      out->stores_in_thread += in_thread;
      out->stores_in_block += in_block;
      return;
    case INGOT_IR_STMT_BARRIER: ++out->barriers; return;
    default: return;
  }
}

/* ---- races: the scheduled kernel as a GPU would run it ----
 *
 * Walks the scheduled function like the interpreter but only follows who
 * touches which element: a GPU_BLOCK loop's value is the block, a
 * GPU_THREAD loop's the thread (every loop value its own block or thread:
 * a GPU that strides only adds order), a BARRIER orders the accesses of
 * one block before it against those after it. Two accesses of one element
 * by different (block, thread), one a write, not ordered by a barrier of
 * their block, are a race: what the serial interpreter cannot see. Index
 * expressions are evaluated on integers; an access whose index reads a
 * buffer or a float local is not followed (counted), a guard that cannot
 * be evaluated is taken. */

typedef struct mark_t {
  int64_t block, thread, epoch; /* epoch: barriers its block had passed */
  bool set;
} mark_t;

typedef struct race_t {
  const ingot_ir_func_t* f;
  int64_t* vals;    /* per var */
  bool* known;      /* per var: vals holds its value */
  mark_t** written; /* per buffer, per element */
  mark_t** read;
  int64_t* epochs;  /* per block id (top level: block 0) */
  int64_t block_count;
  int64_t block, thread;
  int races, unfollowed;
  char first[256];
} race_t;

static bool race_eval(race_t* r, const ingot_ir_expr_t* e, int64_t* out) {
  int64_t a, b, c;
  switch (e->kind) {
    case INGOT_IR_EXPR_INT: *out = e->u.i; return true;
    case INGOT_IR_EXPR_VAR:
      if (!r->known[e->u.var]) return false;
      *out = r->vals[e->u.var];
      return true;
    case INGOT_IR_EXPR_CAST:
      if (e->dtype == INGOT_DTYPE_F32 || e->dtype == INGOT_DTYPE_F64 || e->dtype == INGOT_DTYPE_F16) return false;
      return race_eval(r, e->u.unary.a, out);
    case INGOT_IR_EXPR_UNARY:
      if (!race_eval(r, e->u.unary.a, &a)) return false;
      if (e->u.unary.op == INGOT_IR_NEG) *out = -a;
      else if (e->u.unary.op == INGOT_IR_NOT) *out = !a;
      else if (e->u.unary.op == INGOT_IR_ABS) *out = a < 0 ? -a : a;
      else return false;
      return true;
    case INGOT_IR_EXPR_SELECT:
      if (!race_eval(r, e->u.select.cond, &c)) return false;
      return race_eval(r, c ? e->u.select.a : e->u.select.b, out);
    case INGOT_IR_EXPR_BINARY:
      if (e->u.binary.a->dtype == INGOT_DTYPE_F32 || e->u.binary.a->dtype == INGOT_DTYPE_F64) return false;
      if (!race_eval(r, e->u.binary.a, &a) || !race_eval(r, e->u.binary.b, &b)) return false;
      switch (e->u.binary.op) {
        case INGOT_IR_ADD: *out = a + b; return true;
        case INGOT_IR_SUB: *out = a - b; return true;
        case INGOT_IR_MUL: *out = a * b; return true;
        case INGOT_IR_DIV:
          if (!b) return false;
          *out = a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
          return true;
        case INGOT_IR_MOD:
          if (!b) return false;
          *out = a % b;
          if (*out && ((*out < 0) != (b < 0))) *out += b;
          return true;
        case INGOT_IR_MIN: *out = a < b ? a : b; return true;
        case INGOT_IR_MAX: *out = a > b ? a : b; return true;
        case INGOT_IR_LT: *out = a < b; return true;
        case INGOT_IR_LE: *out = a <= b; return true;
        case INGOT_IR_EQ: *out = a == b; return true;
        case INGOT_IR_NE: *out = a != b; return true;
        case INGOT_IR_AND: *out = a && b; return true;
        case INGOT_IR_OR: *out = a || b; return true;
        default: return false;
      }
    default: return false;
  }
}

/* Whether mark m (an earlier access) is ordered before an access by the
 * current block and thread. */
static bool race_ordered(const race_t* r, const mark_t* m) {
  if (!m->set || (m->block == r->block && m->thread == r->thread)) return true;
  return m->block == r->block && r->epochs[r->block] > m->epoch;
}

static void race_access(race_t* r, uint32_t buffer, const ingot_ir_expr_t* index, bool write) {
  int64_t i;
  if (!race_eval(r, index, &i)) {
    ++r->unfollowed;
    return;
  }
  int64_t n = ingot_ir_buffer_numel(&r->f->buffers[buffer]);
  if (i < 0 || i >= n) return; /* the interpreter reports those */
  mark_t* w = &r->written[buffer][i];
  mark_t* rd = &r->read[buffer][i];
  if (r->f->buffers[buffer].role == INGOT_IR_BUFFER_SHARED) {
    /* one copy a block: another block's marks are of another copy */
    if (w->block != r->block) w->set = false;
    if (rd->block != r->block) rd->set = false;
  }
  bool race = !race_ordered(r, w) || (write && !race_ordered(r, rd));
  if (race && !r->races++)
    snprintf(r->first, sizeof(r->first), "%s %s[%lld] by block %lld thread %lld, after block %lld thread %lld",
             write ? "write of" : "read of", r->f->buffers[buffer].name, (long long)i, (long long)r->block,
             (long long)r->thread, (long long)(w->set && !race_ordered(r, w) ? w->block : rd->block),
             (long long)(w->set && !race_ordered(r, w) ? w->thread : rd->thread));
  mark_t now = {r->block, r->thread, r->epochs[r->block], true};
  if (write) *w = now;
  else *rd = now;
}

static void race_expr(race_t* r, const ingot_ir_expr_t* e) {
  if (!e) return;
  switch (e->kind) {
    case INGOT_IR_EXPR_LOAD:
      race_expr(r, e->u.load.index);
      race_access(r, e->u.load.buffer, e->u.load.index, false);
      return;
    case INGOT_IR_EXPR_UNARY:
    case INGOT_IR_EXPR_CAST: race_expr(r, e->u.unary.a); return;
    case INGOT_IR_EXPR_BINARY:
      race_expr(r, e->u.binary.a);
      race_expr(r, e->u.binary.b);
      return;
    case INGOT_IR_EXPR_SELECT:
      race_expr(r, e->u.select.cond);
      race_expr(r, e->u.select.a);
      race_expr(r, e->u.select.b);
      return;
    default: return;
  }
}

static void race_stmt(race_t* r, const ingot_ir_stmt_t* s) {
  if (!s) return;
  switch (s->kind) {
    case INGOT_IR_STMT_FOR: {
      uint32_t v = s->u.loop.var;
      bool blk = s->u.loop.loop_kind == INGOT_IR_LOOP_GPU_BLOCK, thr = s->u.loop.loop_kind == INGOT_IR_LOOP_GPU_THREAD;
      int64_t saved_block = r->block, saved_thread = r->thread;
      for (int64_t i = 0; i < s->u.loop.extent; ++i) {
        r->vals[v] = i;
        r->known[v] = true;
        if (blk) r->block = i < r->block_count ? i : r->block_count - 1;
        if (thr) r->thread = i;
        race_stmt(r, s->u.loop.body);
      }
      r->block = saved_block;
      r->thread = saved_thread;
      r->known[v] = false;
      return;
    }
    case INGOT_IR_STMT_BLOCK:
      for (uint32_t i = 0; i < s->u.block.count; ++i) race_stmt(r, s->u.block.stmts[i]);
      return;
    case INGOT_IR_STMT_STORE:
      race_expr(r, s->u.store.index);
      race_expr(r, s->u.store.value);
      race_access(r, s->u.store.buffer, s->u.store.index, true);
      return;
    case INGOT_IR_STMT_IF: {
      int64_t c = 1;
      race_expr(r, s->u.cond.cond);
      if (!race_eval(r, s->u.cond.cond, &c)) c = 1;
      if (c) race_stmt(r, s->u.cond.then_body);
      return;
    }
    case INGOT_IR_STMT_LOCAL:
    case INGOT_IR_STMT_ASSIGN: {
      race_expr(r, s->u.local.value);
      int64_t x;
      bool ok = race_eval(r, s->u.local.value, &x);
      r->known[s->u.local.var] = ok;
      if (ok) r->vals[s->u.local.var] = x;
      return;
    }
    case INGOT_IR_STMT_BARRIER: ++r->epochs[r->block]; return;
    default: return;
  }
}

/* The races of a scheduled function (0: none); the first in *out_first. */
static int count_races(const ingot_ir_func_t* f, char* out_first, size_t cap, int* out_unfollowed) {
  race_t r;
  memset(&r, 0, sizeof(r));
  r.f = f;
  r.vals = calloc(f->var_count + 1, sizeof(int64_t));
  r.known = calloc(f->var_count + 1, sizeof(bool));
  r.written = calloc(f->buffer_count + 1, sizeof(mark_t*));
  r.read = calloc(f->buffer_count + 1, sizeof(mark_t*));
  for (uint32_t b = 0; b < f->buffer_count; ++b) {
    size_t n = (size_t)ingot_ir_buffer_numel(&f->buffers[b]) + 1;
    r.written[b] = calloc(n, sizeof(mark_t));
    r.read[b] = calloc(n, sizeof(mark_t));
  }
  r.block_count = 1 << 20;
  r.epochs = calloc((size_t)r.block_count, sizeof(int64_t));
  race_stmt(&r, f->body);
  snprintf(out_first, cap, "%s", r.first);
  *out_unfollowed = r.unfollowed;
  for (uint32_t b = 0; b < f->buffer_count; ++b) {
    free(r.written[b]);
    free(r.read[b]);
  }
  free(r.written);
  free(r.read);
  free(r.vals);
  free(r.known);
  free(r.epochs);
  return r.races;
}

/* ---- running a kernel ---- */

static uint32_t g_seed = 1;
static float next_random(void) {
  g_seed = g_seed * 1664525u + 1013904223u;
  return (float)((g_seed >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* Buffers for every parameter of f: floats random in [-1, 1), the rest 0. */
static void** make_args(const ingot_ir_func_t* f, uint32_t seed) {
  uint32_t n = ingot_ir_param_count(f);
  void** args = calloc(n ? n : 1, sizeof(void*));
  g_seed = seed;
  for (uint32_t i = 0; i < n; ++i) {
    int64_t numel = ingot_ir_buffer_numel(&f->buffers[i]);
    size_t size = ingot_dtype_size(f->buffers[i].dtype);
    args[i] = calloc((size_t)(numel ? numel : 1), size ? size : 8);
    if (f->buffers[i].dtype == INGOT_DTYPE_F32)
      for (int64_t k = 0; k < numel; ++k) ((float*)args[i])[k] = next_random();
    else if (f->buffers[i].dtype == INGOT_DTYPE_F64)
      for (int64_t k = 0; k < numel; ++k) ((double*)args[i])[k] = next_random();
  }
  return args;
}

static void free_args(const ingot_ir_func_t* f, void** args) {
  for (uint32_t i = 0; i < ingot_ir_param_count(f); ++i) free(args[i]);
  free(args);
}

/* Compares the OUTPUT buffers; exact (NaN equal to NaN) or within a
 * tolerance for floats. */
static bool same_outputs(const char* what, const ingot_ir_func_t* f, void** got, void** want, bool exact) {
  for (uint32_t i = 0; i < ingot_ir_param_count(f); ++i) {
    const ingot_ir_buffer_t* b = &f->buffers[i];
    if (b->role != INGOT_IR_BUFFER_OUTPUT) continue;
    int64_t numel = ingot_ir_buffer_numel(b);
    size_t size = ingot_dtype_size(b->dtype);
    for (int64_t k = 0; k < numel; ++k) {
      double g, w;
      if (b->dtype == INGOT_DTYPE_F32) {
        g = ((float*)got[i])[k];
        w = ((float*)want[i])[k];
      } else if (b->dtype == INGOT_DTYPE_F64) {
        g = ((double*)got[i])[k];
        w = ((double*)want[i])[k];
      } else {
        if (memcmp((char*)got[i] + k * size, (char*)want[i] + k * size, size)) {
          fprintf(stderr, "%s: buffer %s element %lld differs\n", what, b->name, (long long)k);
          return false;
        }
        continue;
      }
      if (isnan(g) && isnan(w)) continue;
      bool ok = exact ? g == w : fabs(g - w) <= 1e-4 + 1e-4 * fabs(w);
      if (!ok) {
        fprintf(stderr, "%s: buffer %s element %lld: %.9g, want %.9g\n", what, b->name, (long long)k, g, w);
        return false;
      }
    }
  }
  return true;
}

/* Schedules `kern` with its GPU default and checks it against `ref` (the
 * same kernel, unscheduled). */
static void check_kernel(const char* model, ingot_kernel_t* kern, const ingot_kernel_t* ref,
                         const ingot_target_t* target, bool run, stats_t* st) {
  char what[256];
  snprintf(what, sizeof(what), "%s kernel '%s' (%s)", model, kern->func->name, kern->workload ? kern->workload : "");
  ++st->kernels;
  const char* name = ingot_schedule_template_default(kern, target);
  if (!name || strncmp(name, "gpu.", 4) != 0) {
    fprintf(stderr, "%s: GPU default template %s\n", what, name ? name : "(none)");
    ++g_failures;
    return;
  }
  ingot_schedule_t s;
  ingot_schedule_init(&s);
  ingot_status_t stt = ingot_schedule_choose(kern, target, NULL, NULL, &s);
  if (stt == INGOT_OK) CHECK(s.template_name && !strcmp(s.template_name, name));
  if (stt == INGOT_OK) stt = ingot_schedule_apply(kern->func, &s);
  if (stt == INGOT_OK) stt = ingot_ir_verify(kern->func);
  if (stt != INGOT_OK) {
    fprintf(stderr, "%s: %s\n", what, ingot_compiler_error());
    ++g_failures;
    ingot_schedule_deinit(&s);
    return;
  }
  bool row = !strcmp(name, "gpu.row");
  bool accumulated = false;
  for (uint32_t d = 0; d < s.directive_count; ++d) accumulated |= s.directives[d].kind == INGOT_DIRECTIVE_ACCUMULATE_LOCAL;
  st->accumulated += accumulated;
  shape_t sh = {0};
  walk(kern->func->body, false, false, &sh);
  bool fallback = sh.barriers > 0 && sh.block_loops == 0;
  if (row) ++st->row;
  else if (!strcmp(name, "gpu.simt")) ++st->simt;
  else ++st->other_template;
  if (fallback) {
    ++st->fallback;
    printf("  one block (stages hand values across threads): %s\n", what);
  }
  /* Every store runs on one thread; outside the fallback on a block too. */
  if (sh.stores_in_thread != sh.stores || (!fallback && sh.stores_in_block != sh.stores) ||
      sh.max_thread_extent > (int64_t)target->gpu.max_threads_per_block || sh.thread_loops == 0) {
    fprintf(stderr, "%s: %d stores, %d in thread loops, %d in block loops, widest thread loop %lld\n", what, sh.stores,
            sh.stores_in_thread, sh.stores_in_block, (long long)sh.max_thread_extent);
    ++g_failures;
  }
  if (g_race_check && run) {
    char first[256];
    int unfollowed = 0;
    int races = count_races(kern->func, first, sizeof(first), &unfollowed);
    st->unfollowed += unfollowed;
    if (races) {
      fprintf(stderr, "%s: %d races, the first: %s\n", what, races, first);
      ++g_failures;
    }
  }
  if (getenv("INGOT_TEST_DUMP")) {
    ingot_strbuf_t sb = {0};
    ingot_schedule_describe(&s, &sb);
    ingot_ir_print(kern->func, &sb);
    fprintf(stderr, "# %s\n%s\n", what, sb.data);
    ingot_strbuf_free(&sb);
  }
  ingot_schedule_deinit(&s);
  if (!run) return;

  void** want = make_args(ref->func, 17);
  void** got = make_args(kern->func, 17);
  if (ingot_ir_interpret(ref->func, want) != INGOT_OK) {
    /* random data the kernel cannot take (an integer division by zero) */
    ingot_compiler_error_clear();
    ++st->skipped;
  } else if (ingot_ir_interpret(kern->func, got) != INGOT_OK) {
    fprintf(stderr, "%s: the scheduled kernel fails: %s\n", what, ingot_compiler_error());
    ++g_failures;
  } else {
    ++st->compared;
    if (!same_outputs(what, kern->func, got, want, !row)) ++g_failures;
  }
  free_args(ref->func, want);
  free_args(kern->func, got);
}

/* The scheduled kernels as the CUDA printer sees them: their launches
 * (a fallback kernel is one block; no block over the target's limit), and,
 * where NVRTC is there, the module built to a CUBIN + PTX for sm_90. */
static bool g_have_nvrtc;
static void check_codegen(const char* what, ingot_lowered_t* l, const ingot_target_t* target) {
  ingot_ir_func_t** funcs = calloc(l->kernel_count + 1, sizeof(*funcs));
  for (uint32_t k = 0; k < l->kernel_count; ++k) funcs[k] = l->kernels[k].func;
  ingot_launch_record_t* launches = calloc(l->kernel_count + 1, sizeof(*launches));
  if (ingot_codegen_gpu_launches(funcs, l->kernel_count, target, launches) != INGOT_OK) {
    fprintf(stderr, "%s: launches: %s\n", what, ingot_compiler_error());
    ++g_failures;
  } else {
    for (uint32_t k = 0; k < l->kernel_count; ++k) {
      shape_t sh = {0};
      walk(funcs[k]->body, false, false, &sh);
      const ingot_launch_record_t* x = &launches[k];
      uint32_t threads = x->block[0] * x->block[1] * x->block[2];
      bool fallback = sh.barriers > 0 && sh.block_loops == 0;
      if (threads == 0 || threads > target->gpu.max_threads_per_block || (fallback && x->grid[0] * x->grid[1] * x->grid[2] != 1)) {
        fprintf(stderr, "%s kernel '%s': launch grid %ux%ux%u block %ux%ux%u\n", what, funcs[k]->name, x->grid[0],
                x->grid[1], x->grid[2], x->block[0], x->block[1], x->block[2]);
        ++g_failures;
      }
    }
  }
  if (g_have_nvrtc) {
    uint8_t* obj = NULL;
    size_t size = 0;
    if (ingot_codegen_build(funcs, l->kernel_count, target, NULL, NULL, &obj, &size) != INGOT_OK) {
      fprintf(stderr, "%s: NVRTC build: %s\n", what, ingot_compiler_error());
      ++g_failures;
    } else {
      CHECK(size > 0);
    }
    free(obj);
  }
  free(launches);
  free(funcs);
}

static void check_lowered(const char* what, ingot_lowered_t* l, const ingot_lowered_t* ref, stats_t* st) {
  ingot_target_t target = cuda_target();
  CHECK(l->kernel_count == ref->kernel_count);
  /* Each workload is run once (its other kernels compute the same on other
   * tensors); every kernel is scheduled and its structure checked. */
  for (uint32_t k = 0; k < l->kernel_count && k < ref->kernel_count; ++k) {
    bool seen = false;
    for (uint32_t j = 0; j < k && !seen; ++j)
      seen = l->kernels[k].workload && l->kernels[j].workload && !strcmp(l->kernels[k].workload, l->kernels[j].workload);
    check_kernel(what, &l->kernels[k], &ref->kernels[k], &target, !seen, st);
  }
  check_codegen(what, l, &target);
}

static void report(const char* what, const stats_t* st) {
  printf("%s: %d kernels: gpu.simt %d, gpu.row %d, other %d; one-block fallback %d; compared %d, skipped %d; "
         "accesses not followed by the race check %d\n",
         what, st->kernels, st->simt, st->row, st->other_template, st->fallback, st->compared, st->skipped,
         st->unfollowed);
}

/* ---- op-level graphs ---- */

static bool infer(ingot_graph_t* g) {
  if (ingot_graph_infer_shapes(g) != INGOT_OK) {
    fprintf(stderr, "infer failed: %s\n", ingot_compiler_error());
    ++g_failures;
    return false;
  }
  return true;
}

static ingot_graph_t* g_softmax(void) {
  ingot_graph_t* g = tg_graph(13);
  int64_t d[2] = {70, 50};
  uint32_t x = tg_input(g, "x", 2, d);
  uint32_t y = tg_output(g, "y", 2, d);
  uint32_t node = tg_node(g, INGOT_OP_SOFTMAX, &x, 1, &y, 1);
  tg_attr_int(g, node, "axis", -1);
  return g;
}

static ingot_graph_t* g_layernorm(void) {
  ingot_graph_t* g = tg_graph(17);
  int64_t d[3] = {2, 5, 40}, sd[1] = {40}, md[3] = {2, 5, 1};
  uint32_t x = tg_input(g, "x", 3, d);
  uint32_t sc = tg_weight(g, "scale", 1, sd, NULL);
  uint32_t b = tg_weight(g, "bias", 1, sd, NULL);
  uint32_t y = tg_output(g, "y", 3, d);
  uint32_t mean = tg_output(g, "mean", 3, md);
  uint32_t inv = tg_output(g, "inv", 3, md);
  uint32_t in[3] = {x, sc, b}, out[3] = {y, mean, inv};
  uint32_t node = tg_node(g, INGOT_OP_LAYERNORMALIZATION, in, 3, out, 3);
  tg_attr_int(g, node, "axis", -1);
  return g;
}

/* A reduction over axes 1 and 2 of [6, 20, 30] (600 an output: gpu.row)
 * or over axis 2 of [6, 20, 5] (5 an output: gpu.simt). */
static ingot_graph_t* g_reduce(ingot_op_t op, bool long_row) {
  ingot_graph_t* g = tg_graph(13);
  int64_t d[3] = {6, 20, long_row ? 30 : 5}, yd[3] = {6, long_row ? 1 : 20, 1};
  uint32_t x = tg_input(g, "x", 3, d);
  uint32_t y = tg_output(g, "y", 3, yd);
  uint32_t node = tg_node(g, op, &x, 1, &y, 1);
  int64_t axes_long[2] = {1, 2}, axes_short[1] = {2};
  tg_attr_ints(g, node, "axes", long_row ? axes_long : axes_short, long_row ? 2 : 1);
  tg_attr_int(g, node, "keepdims", 1);
  return g;
}

static ingot_graph_t* g_reducesum_long(void) { return g_reduce(INGOT_OP_REDUCESUM, true); }
static ingot_graph_t* g_reducemean_long(void) { return g_reduce(INGOT_OP_REDUCEMEAN, true); }
static ingot_graph_t* g_reducemax_long(void) { return g_reduce(INGOT_OP_REDUCEMAX, true); }
static ingot_graph_t* g_reducemin_short(void) { return g_reduce(INGOT_OP_REDUCEMIN, false); }
static ingot_graph_t* g_reduceprod_long(void) { return g_reduce(INGOT_OP_REDUCEPROD, true); }

static ingot_graph_t* g_maxpool(void) {
  ingot_graph_t* g = tg_graph(13);
  int64_t xd[4] = {1, 8, 15, 15}, yd[4] = {1, 8, 8, 8};
  uint32_t x = tg_input(g, "x", 4, xd);
  uint32_t y = tg_output(g, "y", 4, yd);
  uint32_t node = tg_node(g, INGOT_OP_MAXPOOL, &x, 1, &y, 1);
  int64_t k[2] = {3, 3}, s[2] = {2, 2}, p[4] = {1, 1, 1, 1};
  tg_attr_ints(g, node, "kernel_shape", k, 2);
  tg_attr_ints(g, node, "strides", s, 2);
  tg_attr_ints(g, node, "pads", p, 4);
  return g;
}

static ingot_graph_t* g_gap(bool big) {
  ingot_graph_t* g = tg_graph(13);
  int64_t xd[4] = {2, 24, big ? 16 : 7, big ? 16 : 7}, yd[4] = {2, 24, 1, 1};
  uint32_t x = tg_input(g, "x", 4, xd);
  uint32_t y = tg_output(g, "y", 4, yd);
  tg_node(g, INGOT_OP_GLOBALAVERAGEPOOL, &x, 1, &y, 1);
  return g;
}
static ingot_graph_t* g_gap_small(void) { return g_gap(false); }
static ingot_graph_t* g_gap_big(void) { return g_gap(true); }

static ingot_graph_t* g_depthwise(void) {
  ingot_graph_t* g = tg_graph(13);
  int64_t xd[4] = {1, 12, 13, 13}, wd[4] = {12, 1, 3, 3}, bd[1] = {12}, yd[4] = {1, 12, 13, 13};
  uint32_t x = tg_input(g, "x", 4, xd);
  uint32_t w = tg_weight(g, "w", 4, wd, NULL);
  uint32_t b = tg_weight(g, "b", 1, bd, NULL);
  uint32_t y = tg_output(g, "y", 4, yd);
  uint32_t ins[3] = {x, w, b};
  uint32_t node = tg_node(g, INGOT_OP_CONV, ins, 3, &y, 1);
  int64_t k[2] = {3, 3}, pads[4] = {1, 1, 1, 1};
  tg_attr_ints(g, node, "kernel_shape", k, 2);
  tg_attr_ints(g, node, "pads", pads, 4);
  tg_attr_int(g, node, "group", 12);
  g->nodes[node].epilogue.activation = INGOT_ACTIVATION_RELU;
  return g;
}

static ingot_graph_t* g_gemm(void) {
  ingot_graph_t* g = tg_graph(13);
  int64_t ad[2] = {5, 64}, bd[2] = {100, 64}, cd[1] = {100}, yd[2] = {5, 100};
  uint32_t a = tg_input(g, "a", 2, ad);
  uint32_t b = tg_weight(g, "b", 2, bd, NULL);
  uint32_t c = tg_weight(g, "c", 1, cd, NULL);
  uint32_t y = tg_output(g, "y", 2, yd);
  uint32_t ins[3] = {a, b, c};
  uint32_t node = tg_node(g, INGOT_OP_GEMM, ins, 3, &y, 1);
  tg_attr_int(g, node, "transB", 1);
  return g;
}

/* A conv whose weight is packed in panels of 32 output channels with a
 * tail panel of 16: its UPDATE stages and its FINISH map the tail's
 * elements to other threads, so the kernel falls back to one block. */
static ingot_graph_t* g_conv_packed_tail(void) {
  ingot_graph_t* g = tg_graph(13);
  int64_t xd[4] = {1, 12, 5, 5}, wd[4] = {48, 12, 3, 3}, bd[1] = {48}, yd[4] = {1, 48, 3, 3};
  uint32_t x = tg_input(g, "x", 4, xd);
  uint32_t w = tg_weight(g, "w", 4, wd, NULL);
  uint32_t b = tg_weight(g, "b", 1, bd, NULL);
  uint32_t y = tg_output(g, "y", 4, yd);
  uint32_t ins[3] = {x, w, b};
  uint32_t node = tg_node(g, INGOT_OP_CONV, ins, 3, &y, 1);
  int64_t k[2] = {3, 3};
  tg_attr_ints(g, node, "kernel_shape", k, 2);
  g->nodes[node].epilogue.activation = INGOT_ACTIVATION_RELU;
  ingot_node_layout_t layout = {0};
  layout.pack = true;
  layout.panel = 32;
  layout.chosen = true;
  g->nodes[node].layout = layout;
  return g;
}

typedef ingot_graph_t* (*graph_fn)(void);

/* Lowers the graph twice (reference and scheduled) and checks each kernel;
 * returns the template counts. */
static stats_t run_graph(const char* name, graph_fn make) {
  stats_t st = {0};
  ingot_graph_t* g = make();
  if (!infer(g)) {
    ingot_graph_destroy(g);
    return st;
  }
  CHECK(ingot_graph_pack_weights(g) == INGOT_OK);
  ingot_lowered_t* ref = tg_lower(g);
  ingot_lowered_t* l = tg_lower(g);
  if (ref && l) check_lowered(name, l, ref, &st);
  if (ref) ingot_lowered_destroy(ref);
  if (l) ingot_lowered_destroy(l);
  ingot_graph_destroy(g);
  report(name, &st);
  return st;
}

/* ---- models ---- */

/* arg: a model path, optionally followed by "@NAME=DIMS,NAME=DIMS" (input
 * shapes for symbolic dimensions). */
static void run_model(const char* arg) {
  char path[1024], shapes_text[512] = "";
  snprintf(path, sizeof(path), "%s", arg);
  char* at = strchr(path, '@');
  const char* shapes[8];
  uint32_t shape_count = 0;
  if (at) {
    *at = 0;
    snprintf(shapes_text, sizeof(shapes_text), "%s", at + 1);
    for (char* tok = strtok(shapes_text, ","); tok && shape_count < 8; tok = strtok(NULL, ",")) shapes[shape_count++] = tok;
  }
  FILE* fp = fopen(path, "rb");
  if (!fp) {
    printf("%s: not there, skipped\n", path);
    return;
  }
  fclose(fp);
  ingot_driver_options_t o;
  memset(&o, 0, sizeof(o));
  o.model_path = path;
  o.input_shapes = shapes;
  o.input_shape_count = shape_count;
  /* The graph as compile lays it out for a GPU target (weights unpacked). */
  const char* targets[1] = {"cuda -arch=sm_90"};
  o.targets = targets;
  o.target_count = 1;
  ingot_graph_t* g = NULL;
  ingot_lowered_t *ref = NULL, *l = NULL;
  if (ingot_driver_load_graph(&o, &g) != INGOT_OK || ingot_lower_graph(g, &ref) != INGOT_OK ||
      ingot_lower_graph(g, &l) != INGOT_OK) {
    fprintf(stderr, "%s: %s\n", path, ingot_compiler_error());
    ++g_failures;
  } else {
    stats_t st = {0};
    const char* base = strrchr(path, '/');
    check_lowered(base ? base + 1 : path, l, ref, &st);
    report(base ? base + 1 : path, &st);
    CHECK(st.kernels > 0 && st.compared > 0);
  }
  if (ref) ingot_lowered_destroy(ref);
  if (l) ingot_lowered_destroy(l);
  if (g) ingot_graph_destroy(g);
}

/* ---- choice by target kind ---- */

static void check_kinds(void) {
  ingot_graph_t* g = g_gemm();
  if (!infer(g)) {
    ingot_graph_destroy(g);
    return;
  }
  ingot_lowered_t* l = tg_lower(g);
  if (!l) {
    ingot_graph_destroy(g);
    return;
  }
  ingot_kernel_t* k = &l->kernels[0];
  ingot_target_t gpu = cuda_target(), cpu;
  CHECK(ingot_target_parse("c", &cpu) == INGOT_OK);
  ingot_target_t rocm = gpu;
  rocm.kind = INGOT_TARGET_ROCM;
  snprintf(rocm.name, sizeof(rocm.name), "rocm -mcpu=gfx90a");
  rocm.gpu.warp_size = 64;
  CHECK(!strcmp(ingot_schedule_template_default(k, &cpu), ingot_schedule_template_for(k->op_class)));
  CHECK(!strncmp(ingot_schedule_template_default(k, &gpu), "gpu.", 4));
  CHECK(!strncmp(ingot_schedule_template_default(k, &rocm), "gpu.", 4));
  for (uint32_t t = 0; t < ingot_schedule_template_count(); ++t) {
    bool is_gpu = !strncmp(ingot_schedule_template_name(t), "gpu.", 4);
    if (is_gpu) CHECK(!ingot_schedule_template_applies(k, &cpu, t));
    else CHECK(!ingot_schedule_template_applies(k, &gpu, t));
  }
  ingot_schedule_space_t space;
  CHECK(ingot_schedule_space(k, &cpu, "gpu.simt", &space) != INGOT_OK);
  CHECK(ingot_schedule_space(k, &gpu, ingot_schedule_template_for(k->op_class), &space) != INGOT_OK);
  CHECK(ingot_schedule_space(k, &gpu, "gpu.simt", &space) == INGOT_OK);
  CHECK(space.knob_count == 1 && !strcmp(space.knobs[0].name, "gpu_threads") && space.knobs[0].default_value == 256 &&
        space.knobs[0].value_count == 6 && space.knobs[0].values[0] == 32 && space.knobs[0].values[5] == 1024);
  /* The space as the tuner and --dump-space see it. */
  ingot_strbuf_t sb = {0};
  CHECK(ingot_schedule_space_format(k, &gpu, "gpu.simt", &sb) == INGOT_OK);
  CHECK(sb.data && strstr(sb.data, "\"gpu_threads\":[32,64,128,256,512,1024]") &&
        strstr(sb.data, "\"target\":\"cuda -arch=sm_90\""));
  if (sb.data && !strstr(sb.data, "\"gpu_threads\":[32,64,128,256,512,1024]")) fprintf(stderr, "space: %s\n", sb.data);
  ingot_strbuf_free(&sb);
  /* Tuning-log records: a GPU template's for the GPU target applies; a CPU
   * template's for the GPU target and a GPU template's for a CPU target
   * do not. */
  char path[] = "/tmp/ingot_gpu_log_XXXXXX";
  int fd = mkstemp(path);
  FILE* fp = fd >= 0 ? fdopen(fd, "w") : NULL;
  CHECK(fp != NULL);
  if (fp) {
    fprintf(fp,
            "{\"version\":1,\"workload\":\"%s\",\"target\":\"cuda -arch=sm_90\",\"template\":\"gpu.simt\","
            "\"knobs\":{\"gpu_threads\":64},\"time_ms\":2.0}\n"
            "{\"version\":1,\"workload\":\"%s\",\"target\":\"cuda -arch=sm_90\",\"template\":\"%s\","
            "\"knobs\":{},\"time_ms\":1.0}\n"
            "{\"version\":1,\"workload\":\"%s\",\"target\":\"%s\",\"template\":\"gpu.simt\","
            "\"knobs\":{\"gpu_threads\":64},\"time_ms\":0.5}\n",
            k->workload, k->workload, ingot_schedule_template_for(k->op_class), k->workload, cpu.name);
    fclose(fp);
    ingot_tuning_log_t* log = NULL;
    CHECK(ingot_tuning_log_load(path, &log) == INGOT_OK);
    ingot_schedule_choice_t choice;
    memset(&choice, 0, sizeof(choice));
    ingot_schedule_t s;
    ingot_schedule_init(&s);
    CHECK(ingot_schedule_choose(k, &gpu, log, &choice, &s) == INGOT_OK);
    CHECK(choice.tuned && choice.line == 1 && !strcmp(s.template_name, "gpu.simt") && s.knob_count == 1 &&
          s.knob_values[0] == 64);
    memset(&choice, 0, sizeof(choice));
    CHECK(ingot_schedule_choose(k, &cpu, log, &choice, &s) == INGOT_OK);
    CHECK(!choice.tuned && !strcmp(s.template_name, ingot_schedule_template_for(k->op_class)));
    ingot_schedule_deinit(&s);
    ingot_tuning_log_destroy(log);
    remove(path);
  }
  /* Every listed gpu_threads value is a correct program (one launch). */
  for (uint32_t v = 0; v < space.knob_count && v < 1; ++v)
    for (uint32_t i = 0; i < space.knobs[0].value_count; ++i) {
      ingot_lowered_t* a = tg_lower(g);
      ingot_lowered_t* r = tg_lower(g);
      const char* knob = "gpu_threads";
      int64_t value = space.knobs[0].values[i];
      ingot_schedule_t s;
      ingot_schedule_init(&s);
      CHECK(ingot_schedule_from_template(&a->kernels[0], &gpu, "gpu.simt", &knob, &value, 1, &s) == INGOT_OK);
      CHECK(ingot_schedule_apply(a->kernels[0].func, &s) == INGOT_OK);
      CHECK(ingot_ir_verify(a->kernels[0].func) == INGOT_OK);
      shape_t sh = {0};
      walk(a->kernels[0].func->body, false, false, &sh);
      CHECK(sh.max_thread_extent == (value < 500 ? value : 500)); /* 5 x 100 outputs */
      void** want = make_args(r->kernels[0].func, 3);
      void** got = make_args(a->kernels[0].func, 3);
      CHECK(ingot_ir_interpret(r->kernels[0].func, want) == INGOT_OK);
      CHECK(ingot_ir_interpret(a->kernels[0].func, got) == INGOT_OK);
      CHECK(same_outputs("gemm gpu_threads", a->kernels[0].func, got, want, true));
      free_args(r->kernels[0].func, want);
      free_args(a->kernels[0].func, got);
      ingot_schedule_deinit(&s);
      ingot_lowered_destroy(a);
      ingot_lowered_destroy(r);
    }
  ingot_lowered_destroy(l);
  ingot_graph_destroy(g);
}

int main(int argc, char** argv) {
  g_have_nvrtc = ingot_codegen_gpu_compiler_check(INGOT_TARGET_CUDA) == INGOT_OK;
  ingot_compiler_error_clear();
  printf("NVRTC %s\n", g_have_nvrtc ? "found: every scheduled module is built for sm_90" : "not found: launches only");
  check_kinds();
  stats_t s;
  s = run_graph("softmax 70x50", g_softmax);
  CHECK(s.simt == 1 && s.fallback == 0);
  s = run_graph("layernorm 2x5x40", g_layernorm);
  CHECK(s.simt >= 1);
  s = run_graph("reducesum 6x(20x30)", g_reducesum_long);
  CHECK(s.row == 1);
  s = run_graph("reducemean 6x(20x30)", g_reducemean_long);
  CHECK(s.row == 1);
  s = run_graph("reducemax 6x(20x30)", g_reducemax_long);
  CHECK(s.row == 1);
  s = run_graph("reducemin 6x20x(5)", g_reducemin_short);
  CHECK(s.simt == 1 && s.fallback == 0);
  s = run_graph("reduceprod 6x(20x30)", g_reduceprod_long); /* no add/max/min: gpu.simt */
  CHECK(s.simt == 1);
  s = run_graph("maxpool 3x3/2", g_maxpool);
  CHECK(s.simt == 1 && s.fallback == 0);
  s = run_graph("global average pool 7x7", g_gap_small);
  CHECK(s.simt == 1);
  s = run_graph("global average pool 16x16", g_gap_big);
  CHECK(s.row == 1);
  s = run_graph("depthwise conv 3x3 relu", g_depthwise);
  CHECK(s.kernels == 1 && s.fallback == 0 && s.accumulated == 1);
  s = run_graph("conv 12->48 packed in panels of 32", g_conv_packed_tail);
  CHECK(s.kernels == 1 && s.fallback == 1);
  CHECK(s.accumulated == 1);
  s = run_graph("gemm 5x64x100", g_gemm);
  CHECK(s.kernels == 1 && s.fallback == 0 && s.accumulated == 1);
  for (int i = 1; i < argc; ++i) run_model(argv[i]);
  if (g_failures) {
    fprintf(stderr, "%d check(s) failed\n", g_failures);
    return 1;
  }
  printf("GPU schedules match the unscheduled kernels\n");
  return 0;
}
