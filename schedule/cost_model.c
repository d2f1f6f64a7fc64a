/* The cost model: features of a scheduled kernel (cost_features.def) and
 * XGBoost's ranking trees through its C API (see cost_model.h). */
#include "schedule/cost_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xgboost/c_api.h>

/* ---- Features ---- */

#define COST_MAX_DEPTH 64

typedef struct cost_access_t {
  uint32_t buffer;
  const ingot_ir_expr_t* index;
  double trips;               /* times executed */
  const ingot_ir_stmt_t* loop; /* innermost enclosing loop, NULL: none */
  uint32_t depth;
} cost_access_t;

typedef struct cost_walk_t {
  const ingot_ir_func_t* func;
  const ingot_ir_stmt_t* stack[COST_MAX_DEPTH];
  uint32_t depth;             /* loops on stack (deeper ones are walked, not stacked) */
  uint32_t true_depth;
  uint32_t vectorized;        /* vectorized loops on the stack */
  double flops, statements, vector_statements;
  uint32_t loops, nests;
  /* The main statement: executed most often (first such). */
  double main_trips;
  const ingot_ir_stmt_t* main_stack[COST_MAX_DEPTH];
  uint32_t main_depth;
  ingot_dtype_t main_dtype;
  INGOT_VEC(cost_access_t) accesses;
} cost_walk_t;

static bool cost_is_data(ingot_dtype_t t) { return t != INGOT_DTYPE_I64 && t != INGOT_DTYPE_BOOL; }

static double cost_trips(const cost_walk_t* w) {
  double trips = 1.0;
  for (uint32_t i = 0; i < w->depth; ++i) trips *= (double)w->stack[i]->u.loop.extent;
  return trips;
}

static void cost_add_access(cost_walk_t* w, uint32_t buffer, const ingot_ir_expr_t* index, double trips) {
  cost_access_t a = {buffer, index, trips, w->depth ? w->stack[w->depth - 1] : NULL, w->depth};
  INGOT_VEC_PUSH(w->accesses, a);
}

/* Loads (and data operations, when `count_ops`) of an expression. */
static void cost_expr(cost_walk_t* w, const ingot_ir_expr_t* e, double trips, bool count_ops) {
  if (!e) return;
  switch (e->kind) {
    case INGOT_IR_EXPR_LOAD:
      cost_add_access(w, e->u.load.buffer, e->u.load.index, trips);
      cost_expr(w, e->u.load.index, trips, false);
      break;
    case INGOT_IR_EXPR_UNARY:
    case INGOT_IR_EXPR_CAST:
      if (count_ops && e->kind == INGOT_IR_EXPR_UNARY && cost_is_data(e->dtype)) w->flops += trips;
      cost_expr(w, e->u.unary.a, trips, count_ops);
      break;
    case INGOT_IR_EXPR_BINARY:
      if (count_ops && cost_is_data(e->dtype)) w->flops += trips;
      cost_expr(w, e->u.binary.a, trips, count_ops);
      cost_expr(w, e->u.binary.b, trips, count_ops);
      break;
    case INGOT_IR_EXPR_SELECT:
      cost_expr(w, e->u.select.cond, trips, false);
      cost_expr(w, e->u.select.a, trips, count_ops);
      cost_expr(w, e->u.select.b, trips, count_ops);
      break;
    default:
      break;
  }
}

static void cost_statement(cost_walk_t* w, double trips, ingot_dtype_t dtype) {
  w->statements += trips;
  if (w->vectorized) w->vector_statements += trips;
  if (trips > w->main_trips) {
    w->main_trips = trips;
    w->main_depth = w->depth;
    memcpy(w->main_stack, w->stack, sizeof(w->stack[0]) * w->depth);
    w->main_dtype = dtype;
  }
}

static void cost_stmt(cost_walk_t* w, const ingot_ir_stmt_t* s) {
  if (!s) return;
  double trips = cost_trips(w);
  switch (s->kind) {
    case INGOT_IR_STMT_FOR: {
      w->loops++;
      if (w->true_depth == 0) w->nests++;
      bool stacked = w->depth < COST_MAX_DEPTH;
      if (stacked) w->stack[w->depth++] = s;
      w->true_depth++;
      if (s->u.loop.loop_kind == INGOT_IR_LOOP_VECTORIZED) w->vectorized++;
      cost_stmt(w, s->u.loop.body);
      if (s->u.loop.loop_kind == INGOT_IR_LOOP_VECTORIZED) w->vectorized--;
      w->true_depth--;
      if (stacked) w->depth--;
      break;
    }
    case INGOT_IR_STMT_BLOCK:
      for (uint32_t i = 0; i < s->u.block.count; ++i) cost_stmt(w, s->u.block.stmts[i]);
      break;
    case INGOT_IR_STMT_STORE: {
      const ingot_ir_buffer_t* b = &w->func->buffers[s->u.store.buffer];
      cost_statement(w, trips, b->dtype);
      cost_add_access(w, s->u.store.buffer, s->u.store.index, trips);
      cost_expr(w, s->u.store.index, trips, false);
      cost_expr(w, s->u.store.value, trips, true);
      break;
    }
    case INGOT_IR_STMT_IF:
      cost_expr(w, s->u.cond.cond, trips, false);
      cost_stmt(w, s->u.cond.then_body);
      break;
    case INGOT_IR_STMT_LOCAL:
    case INGOT_IR_STMT_ASSIGN:
      cost_statement(w, trips, s->u.local.value ? s->u.local.value->dtype : INGOT_DTYPE_F32);
      cost_expr(w, s->u.local.value, trips, true);
      break;
    case INGOT_IR_STMT_BARRIER:
      cost_statement(w, trips, INGOT_DTYPE_F32);
      break;
  }
}

/* Statements under a statement, unrolled loops counted as written. */
static double cost_static_statements(const ingot_ir_stmt_t* s) {
  if (!s) return 0;
  switch (s->kind) {
    case INGOT_IR_STMT_FOR: return cost_static_statements(s->u.loop.body);
    case INGOT_IR_STMT_BLOCK: {
      double n = 0;
      for (uint32_t i = 0; i < s->u.block.count; ++i) n += cost_static_statements(s->u.block.stmts[i]);
      return n;
    }
    case INGOT_IR_STMT_IF: return cost_static_statements(s->u.cond.then_body);
    default: return 1;
  }
}

/* The integer value of an index with loop variable `var` at `value` and
 * every other loop variable at 0; false when it reads anything else. */
static bool cost_eval(const ingot_ir_expr_t* e, uint32_t var, int64_t value, int64_t* out) {
  int64_t a, b;
  switch (e->kind) {
    case INGOT_IR_EXPR_INT: *out = e->u.i; return true;
    case INGOT_IR_EXPR_VAR: *out = e->u.var == var ? value : 0; return true;
    case INGOT_IR_EXPR_CAST: return cost_eval(e->u.unary.a, var, value, out);
    case INGOT_IR_EXPR_BINARY:
      if (!cost_eval(e->u.binary.a, var, value, &a) || !cost_eval(e->u.binary.b, var, value, &b)) return false;
      switch (e->u.binary.op) {
        case INGOT_IR_ADD: *out = a + b; return true;
        case INGOT_IR_SUB: *out = a - b; return true;
        case INGOT_IR_MUL: *out = a * b; return true;
        case INGOT_IR_DIV:
          if (b == 0) return false;
          *out = a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
          return true;
        case INGOT_IR_MOD:
          if (b == 0) return false;
          *out = a % b;
          if (*out != 0 && ((*out < 0) != (b < 0))) *out += b;
          return true;
        case INGOT_IR_MIN: *out = a < b ? a : b; return true;
        case INGOT_IR_MAX: *out = a > b ? a : b; return true;
        default: return false;
      }
    default: return false;
  }
}

static float cost_log(double x) { return (float)log2(1.0 + (x > 0 ? x : 0)); }

typedef struct cost_buffer_t {
  uint32_t buffer;
  double footprint_bytes;     /* the whole buffer */
  double traffic_bytes;
  double accesses;
  double elem_bytes;
  double numel;
  bool touched, written;
  uint32_t main_sites;        /* accesses in the main statement's loop */
  bool used[COST_MAX_DEPTH];  /* main level l used by some main access's index */
  int64_t stride;             /* -1: not affine */
  bool stride_known;
} cost_buffer_t;

static int cost_buffer_order(const void* pa, const void* pb) {
  const cost_buffer_t* a = pa;
  const cost_buffer_t* b = pb;
  if (a->touched != b->touched) return a->touched ? -1 : 1;
  if (a->footprint_bytes != b->footprint_bytes) return a->footprint_bytes > b->footprint_bytes ? -1 : 1;
  return a->buffer < b->buffer ? -1 : a->buffer > b->buffer;
}

/* Elements of buffer `b` touched within main levels [from, depth). */
static double cost_footprint(const cost_buffer_t* b, const cost_walk_t* w, uint32_t from) {
  double n = 1.0;
  for (uint32_t l = from; l < w->main_depth; ++l)
    if (b->used[l]) n *= (double)w->main_stack[l]->u.loop.extent;
  return n < b->numel ? n : b->numel;
}

ingot_status_t ingot_cost_features(const ingot_ir_func_t* func, const ingot_target_t* target, float* out) {
  if (!func || !func->body || !target || !out)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_cost_features: no function body, target or output");
  memset(out, 0, sizeof(float) * INGOT_COST_FEATURE_COUNT);
  cost_walk_t w;
  memset(&w, 0, sizeof(w));
  w.func = func;
  w.main_dtype = INGOT_DTYPE_F32;
  cost_stmt(&w, func->body);

  cost_buffer_t* bufs = ingot_xcalloc(func->buffer_count ? func->buffer_count : 1, sizeof(cost_buffer_t));
  for (uint32_t i = 0; i < func->buffer_count; ++i) {
    const ingot_ir_buffer_t* b = &func->buffers[i];
    bufs[i].buffer = i;
    bufs[i].elem_bytes = (double)ingot_dtype_size(b->dtype);
    bufs[i].numel = (double)ingot_ir_buffer_numel(b);
    bufs[i].footprint_bytes = bufs[i].numel * bufs[i].elem_bytes;
  }
  const ingot_ir_stmt_t* main_loop = w.main_depth ? w.main_stack[w.main_depth - 1] : NULL;
  double accesses = 0;
  for (size_t i = 0; i < w.accesses.count; ++i) {
    const cost_access_t* a = &w.accesses.data[i];
    cost_buffer_t* b = &bufs[a->buffer];
    b->touched = true;
    b->accesses += a->trips;
    b->traffic_bytes += a->trips * b->elem_bytes;
    accesses += a->trips;
    if (a->loop != main_loop || a->depth != w.main_depth) continue;
    b->main_sites++;
    for (uint32_t l = 0; l < w.main_depth; ++l)
      if (ingot_ir_expr_uses_var(a->index, w.main_stack[l]->u.loop.var)) b->used[l] = true;
    if (main_loop) {
      int64_t v0, v1;
      uint32_t var = main_loop->u.loop.var;
      if (cost_eval(a->index, var, 0, &v0) && cost_eval(a->index, var, 1, &v1)) {
        int64_t step = v1 > v0 ? v1 - v0 : v0 - v1;
        if (!b->stride_known || (b->stride >= 0 && step > b->stride)) b->stride = step;
      } else {
        b->stride = -1;
      }
      b->stride_known = true;
    }
  }
  for (uint32_t i = 0; i < func->buffer_count; ++i)
    bufs[i].written = func->buffers[i].role == INGOT_IR_BUFFER_OUTPUT;

  /* Globals. */
  double bytes = 0;
  for (uint32_t i = 0; i < func->buffer_count; ++i)
    if (bufs[i].touched) bytes += bufs[i].footprint_bytes;
  out[INGOT_COST_GLOBAL_FLOPS] = cost_log(w.flops);
  out[INGOT_COST_GLOBAL_BYTES] = cost_log(bytes);
  out[INGOT_COST_GLOBAL_INTENSITY] = bytes > 0 ? (float)(w.flops / bytes) : 0.0f;
  out[INGOT_COST_GLOBAL_ACCESSES] = cost_log(accesses);
  out[INGOT_COST_GLOBAL_STATEMENTS] = cost_log(w.statements);
  out[INGOT_COST_GLOBAL_LOOPS] = (float)w.loops;
  out[INGOT_COST_GLOBAL_NESTS] = (float)w.nests;
  out[INGOT_COST_GLOBAL_DEPTH] = (float)w.main_depth;
  double parallel = 0;
  double unrolled = 1;
  for (uint32_t l = 0; l < w.main_depth; ++l) {
    const ingot_ir_stmt_t* loop = w.main_stack[l];
    if (loop->u.loop.loop_kind == INGOT_IR_LOOP_PARALLEL && parallel == 0) parallel = (double)loop->u.loop.extent;
    if (loop->u.loop.loop_kind == INGOT_IR_LOOP_UNROLLED) unrolled *= (double)loop->u.loop.extent;
  }
  double threads = 1;
  if (parallel > 0) {
    threads = parallel;
    if (target->max_threads > 0 && target->max_threads < threads) threads = target->max_threads;
  }
  out[INGOT_COST_GLOBAL_PARALLEL_EXTENT] = cost_log(parallel);
  out[INGOT_COST_GLOBAL_WORK_PER_THREAD] = cost_log((w.flops + w.statements) / threads);
  out[INGOT_COST_GLOBAL_VECTOR_FRACTION] = w.statements > 0 ? (float)(w.vector_statements / w.statements) : 0.0f;
  out[INGOT_COST_GLOBAL_UNROLLED_BODY] =
      main_loop ? cost_log(cost_static_statements(main_loop->u.loop.body) * unrolled) : 0.0f;
  out[INGOT_COST_GLOBAL_VECTOR_BYTES] = (float)target->vector_bytes;
  out[INGOT_COST_GLOBAL_VECTOR_REGISTERS] = (float)target->vector_registers;
  out[INGOT_COST_GLOBAL_L1] = cost_log(target->l1_bytes);
  out[INGOT_COST_GLOBAL_L2] = cost_log(target->l2_bytes);
  out[INGOT_COST_GLOBAL_L3] = cost_log(target->l3_bytes);

  /* Loop levels: the outer LEVELS-1 and the innermost when deeper. */
  double elem = (double)ingot_dtype_size(w.main_dtype);
  if (elem <= 0) elem = 4;
  double level_trips = 1;
  for (uint32_t l = 0, slot = 0; l < w.main_depth; ++l) {
    const ingot_ir_stmt_t* loop = w.main_stack[l];
    level_trips *= (double)loop->u.loop.extent;
    if (slot == INGOT_COST_LOOP_LEVELS - 1 && l != w.main_depth - 1) continue;
    float* f = &out[INGOT_COST_LOOP_INDEX(slot, 0)];
    slot++;
    f[INGOT_COST_LOOP_EXTENT] = cost_log((double)loop->u.loop.extent);
    f[INGOT_COST_LOOP_SERIAL] = loop->u.loop.loop_kind == INGOT_IR_LOOP_SERIAL;
    f[INGOT_COST_LOOP_PARALLEL] = loop->u.loop.loop_kind == INGOT_IR_LOOP_PARALLEL;
    f[INGOT_COST_LOOP_VECTORIZED] = loop->u.loop.loop_kind == INGOT_IR_LOOP_VECTORIZED;
    f[INGOT_COST_LOOP_UNROLLED] = loop->u.loop.loop_kind == INGOT_IR_LOOP_UNROLLED;
    if (loop->u.loop.loop_kind == INGOT_IR_LOOP_VECTORIZED) {
      double lanes = loop->u.loop.lanes;
      if (lanes == 0) {
        lanes = target->vector_bytes ? floor(target->vector_bytes / elem) : 1;
        if (lanes < 1) lanes = 1;
        if ((double)loop->u.loop.extent < lanes) lanes = (double)loop->u.loop.extent;
      }
      f[INGOT_COST_LOOP_VECTOR_WIDTH] = (float)lanes;
    }
    if (loop->u.loop.loop_kind == INGOT_IR_LOOP_UNROLLED) f[INGOT_COST_LOOP_UNROLL] = cost_log((double)loop->u.loop.extent);
    f[INGOT_COST_LOOP_TRIPS] = cost_log(level_trips);
  }

  /* Reuse per cache level: the most inner loops whose footprint fits. */
  const double caches[3] = {target->l1_bytes, target->l2_bytes, target->l3_bytes};
  uint32_t fit[3] = {0, 0, 0};   /* inner levels kept: main levels [depth - fit, depth) */
  for (int c = 0; c < 3; ++c) {
    if (caches[c] <= 0) continue;
    for (uint32_t k = 1; k <= w.main_depth; ++k) {
      double total = 0;
      for (uint32_t i = 0; i < func->buffer_count; ++i)
        if (bufs[i].main_sites) total += cost_footprint(&bufs[i], &w, w.main_depth - k) * bufs[i].elem_bytes;
      if (total > caches[c]) break;
      fit[c] = k;
    }
  }
  qsort(bufs, func->buffer_count, sizeof(cost_buffer_t), cost_buffer_order);
  for (uint32_t i = 0; i < func->buffer_count && i < INGOT_COST_BUFFERS; ++i) {
    const cost_buffer_t* b = &bufs[i];
    if (!b->touched) break;
    float* f = &out[INGOT_COST_BUFFER_INDEX(i, 0)];
    f[INGOT_COST_BUFFER_FOOTPRINT] = cost_log(b->footprint_bytes);
    f[INGOT_COST_BUFFER_TRAFFIC] = cost_log(b->traffic_bytes);
    f[INGOT_COST_BUFFER_IS_OUTPUT] = b->written;
    f[INGOT_COST_BUFFER_STRIDE] = !b->stride_known ? 0.0f : b->stride < 0 ? -1.0f : cost_log((double)b->stride);
    for (int c = 0; c < 3; ++c) {
      if (!b->main_sites || caches[c] <= 0) continue;
      uint32_t from = w.main_depth - fit[c];
      double iterations = 1;
      for (uint32_t l = from; l < w.main_depth; ++l) iterations *= (double)w.main_stack[l]->u.loop.extent;
      double r = iterations * b->main_sites / cost_footprint(b, &w, from);
      f[INGOT_COST_BUFFER_REUSE_L1 + c] = cost_log(r);
    }
    f[INGOT_COST_BUFFER_REUSE_ALL] = b->numel > 0 ? cost_log(b->accesses / b->numel) : 0.0f;
  }
  free(bufs);
  INGOT_VEC_FREE(w.accesses);
  return INGOT_OK;
}

void ingot_cost_feature_name(uint32_t index, char* buf, size_t size) {
  if (!buf || size == 0) return;
  buf[0] = '\0';
  static const char* const globals[] = {
#define INGOT_COST_GLOBAL(id, doc) #id,
#define INGOT_COST_LOOP(id, doc)
#define INGOT_COST_BUFFER(id, doc)
#include "schedule/cost_features.def"
  };
  static const char* const loops[] = {
#define INGOT_COST_GLOBAL(id, doc)
#define INGOT_COST_LOOP(id, doc) #id,
#define INGOT_COST_BUFFER(id, doc)
#include "schedule/cost_features.def"
  };
  static const char* const buffers[] = {
#define INGOT_COST_GLOBAL(id, doc)
#define INGOT_COST_LOOP(id, doc)
#define INGOT_COST_BUFFER(id, doc) #id,
#include "schedule/cost_features.def"
  };
  char raw[64];
  if (index < INGOT_COST_GLOBAL_COUNT) {
    snprintf(raw, sizeof(raw), "%s", globals[index]);
  } else if (index < INGOT_COST_BUFFER_INDEX(0, 0)) {
    uint32_t i = index - INGOT_COST_GLOBAL_COUNT;
    snprintf(raw, sizeof(raw), "loop%u.%s", i / INGOT_COST_LOOP_FIELDS, loops[i % INGOT_COST_LOOP_FIELDS]);
  } else if (index < INGOT_COST_FEATURE_COUNT) {
    uint32_t i = index - INGOT_COST_BUFFER_INDEX(0, 0);
    snprintf(raw, sizeof(raw), "buffer%u.%s", i / INGOT_COST_BUFFER_FIELDS, buffers[i % INGOT_COST_BUFFER_FIELDS]);
  } else {
    return;
  }
  size_t n = 0;
  for (; raw[n] && n + 1 < size; ++n) buf[n] = (char)(raw[n] >= 'A' && raw[n] <= 'Z' ? raw[n] - 'A' + 'a' : raw[n]);
  buf[n] = '\0';
}

/* ---- The model ---- */

struct ingot_cost_model_t {
  BoosterHandle booster;      /* NULL until trained or loaded */
  INGOT_VEC(float) features;  /* INGOT_COST_FEATURE_COUNT per record */
  INGOT_VEC(uint32_t) groups;
  INGOT_VEC(double) times;
};

/* XGBoost's last error, its first line (the rest is a stack trace). */
static ingot_status_t cost_xgb_fail(ingot_status_t code, const char* what) {
  const char* e = XGBGetLastError();
  if (!e) e = "";
  /* "[12:00:00] ./src/file.cc:407: message": the message. */
  if (e[0] == '[') {
    const char* end = strstr(e, "] ");
    if (end) e = end + 2;
    const char* colon = strstr(e, ": ");
    const char* line_end = e + strcspn(e, "\n");
    if (colon && colon < line_end && (e[0] == '.' || e[0] == '/')) e = colon + 2;
  }
  size_t n = strcspn(e, "\n");
  return ingot_fail(code, "cost model: %s: %.*s", what, (int)n, e);
}

ingot_status_t ingot_cost_model_create(ingot_cost_model_t** out_model) {
  if (!out_model) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_cost_model_create: no output");
  /* Quiet: warnings would go to stderr of the compiler. */
  XGBSetGlobalConfig("{\"verbosity\":0}");
  *out_model = ingot_xcalloc(1, sizeof(ingot_cost_model_t));
  return INGOT_OK;
}

void ingot_cost_model_destroy(ingot_cost_model_t* model) {
  if (!model) return;
  if (model->booster) XGBoosterFree(model->booster);
  INGOT_VEC_FREE(model->features);
  INGOT_VEC_FREE(model->groups);
  INGOT_VEC_FREE(model->times);
  free(model);
}

ingot_status_t ingot_cost_model_add(ingot_cost_model_t* model, uint32_t group, const float* features, double time_ms) {
  if (!model || !features) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_cost_model_add: no model or features");
  if (!(time_ms > 0) || !isfinite(time_ms))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "cost model: record of group %u: time %g ms is not positive and finite",
                      group, time_ms);
  for (uint32_t i = 0; i < INGOT_COST_FEATURE_COUNT; ++i) {
    if (!isfinite(features[i])) {
      char name[64];
      ingot_cost_feature_name(i, name, sizeof(name));
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "cost model: record of group %u: feature %u (%s) is not finite",
                        group, i, name);
    }
  }
  for (uint32_t i = 0; i < INGOT_COST_FEATURE_COUNT; ++i) INGOT_VEC_PUSH(model->features, features[i]);
  INGOT_VEC_PUSH(model->groups, group);
  INGOT_VEC_PUSH(model->times, time_ms);
  return INGOT_OK;
}

uint32_t ingot_cost_model_record_count(const ingot_cost_model_t* model) {
  return model ? (uint32_t)model->groups.count : 0;
}

bool ingot_cost_model_trained(const ingot_cost_model_t* model) { return model && model->booster; }

typedef struct cost_row_t {
  uint32_t group, record;
} cost_row_t;

static int cost_row_order(const void* pa, const void* pb) {
  const cost_row_t* a = pa;
  const cost_row_t* b = pb;
  if (a->group != b->group) return a->group < b->group ? -1 : 1;
  return a->record < b->record ? -1 : a->record > b->record;
}

static ingot_status_t cost_set_params(BoosterHandle booster) {
  static const char* const params[][2] = {
      {"objective", "rank:pairwise"}, {"nthread", "1"},      {"tree_method", "hist"},
      {"max_depth", "8"},             {"eta", "0.2"},        {"gamma", "0.001"},
      {"min_child_weight", "0"},      {"seed", "0"},         {"verbosity", "0"},
  };
  for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); ++i)
    if (XGBoosterSetParam(booster, params[i][0], params[i][1]) != 0) return cost_xgb_fail(INGOT_ERROR_INTERNAL, "setting a parameter");
  return INGOT_OK;
}

ingot_status_t ingot_cost_model_train(ingot_cost_model_t* model, uint32_t rounds) {
  if (!model) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_cost_model_train: no model");
  if (rounds == 0) rounds = 100;
  uint32_t n = (uint32_t)model->groups.count;
  cost_row_t* rows = ingot_xmalloc(sizeof(cost_row_t) * (n ? n : 1));
  for (uint32_t i = 0; i < n; ++i) rows[i] = (cost_row_t){model->groups.data[i], i};
  qsort(rows, n, sizeof(cost_row_t), cost_row_order);
  float* data = ingot_xmalloc(sizeof(float) * INGOT_COST_FEATURE_COUNT * (n ? n : 1));
  float* labels = ingot_xmalloc(sizeof(float) * (n ? n : 1));
  unsigned* sizes = ingot_xmalloc(sizeof(unsigned) * (n ? n : 1));
  uint32_t group_count = 0;
  bool rankable = false;
  for (uint32_t i = 0; i < n;) {
    uint32_t j = i;
    double best = model->times.data[rows[i].record];
    double worst = best;
    while (j < n && rows[j].group == rows[i].group) {
      double t = model->times.data[rows[j].record];
      if (t < best) best = t;
      if (t > worst) worst = t;
      ++j;
    }
    if (worst > best) rankable = true;
    for (uint32_t k = i; k < j; ++k) {
      memcpy(&data[(size_t)k * INGOT_COST_FEATURE_COUNT],
             &model->features.data[(size_t)rows[k].record * INGOT_COST_FEATURE_COUNT],
             sizeof(float) * INGOT_COST_FEATURE_COUNT);
      labels[k] = (float)(best / model->times.data[rows[k].record]);
    }
    sizes[group_count++] = j - i;
    i = j;
  }
  ingot_status_t st = INGOT_OK;
  DMatrixHandle dm = NULL;
  BoosterHandle booster = NULL;
  if (!rankable) {
    st = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                    "cost model: %u records in %u groups, and no group has two different times: nothing to rank", n,
                    group_count);
    goto done;
  }
  if (XGDMatrixCreateFromMat_omp(data, n, INGOT_COST_FEATURE_COUNT, NAN, &dm, 1) != 0) {
    st = cost_xgb_fail(INGOT_ERROR_INTERNAL, "making the training matrix");
    goto done;
  }
  if (XGDMatrixSetFloatInfo(dm, "label", labels, n) != 0 || XGDMatrixSetUIntInfo(dm, "group", sizes, group_count) != 0) {
    st = cost_xgb_fail(INGOT_ERROR_INTERNAL, "setting labels and groups");
    goto done;
  }
  if (XGBoosterCreate(&dm, 1, &booster) != 0) {
    st = cost_xgb_fail(INGOT_ERROR_INTERNAL, "creating the booster");
    goto done;
  }
  st = cost_set_params(booster);
  for (uint32_t r = 0; st == INGOT_OK && r < rounds; ++r)
    if (XGBoosterUpdateOneIter(booster, (int)r, dm) != 0) st = cost_xgb_fail(INGOT_ERROR_INTERNAL, "training");
  if (st == INGOT_OK) {
    if (model->booster) XGBoosterFree(model->booster);
    model->booster = booster;
    booster = NULL;
  }
done:
  if (booster) XGBoosterFree(booster);
  if (dm) XGDMatrixFree(dm);
  free(rows);
  free(data);
  free(labels);
  free(sizes);
  return st;
}

ingot_status_t ingot_cost_model_predict(const ingot_cost_model_t* model, const float* features, uint32_t count,
                                        float* out_scores) {
  if (!model || (count && (!features || !out_scores)))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_cost_model_predict: no model, features or output");
  if (!model->booster) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "cost model: predict before training or loading");
  if (count == 0) return INGOT_OK;
  DMatrixHandle dm = NULL;
  if (XGDMatrixCreateFromMat_omp(features, count, INGOT_COST_FEATURE_COUNT, NAN, &dm, 1) != 0)
    return cost_xgb_fail(INGOT_ERROR_INTERNAL, "making the prediction matrix");
  bst_ulong len = 0;
  const float* result = NULL;
  ingot_status_t st = INGOT_OK;
  if (XGBoosterPredict(model->booster, dm, 0, 0, 0, &len, &result) != 0) {
    st = cost_xgb_fail(INGOT_ERROR_INTERNAL, "predicting");
  } else if (len != count) {
    st = ingot_fail(INGOT_ERROR_INTERNAL, "cost model: %llu predictions for %u candidates", (unsigned long long)len, count);
  } else {
    memcpy(out_scores, result, sizeof(float) * count);
  }
  XGDMatrixFree(dm);
  return st;
}

ingot_status_t ingot_cost_model_accuracy(const ingot_cost_model_t* model, const uint32_t* groups, const float* features,
                                         const double* times_ms, uint32_t count, double* out_accuracy,
                                         uint64_t* out_pairs) {
  if (!out_accuracy || (count && (!groups || !times_ms)))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_cost_model_accuracy: no records or output");
  float* scores = ingot_xmalloc(sizeof(float) * (count ? count : 1));
  ingot_status_t st = ingot_cost_model_predict(model, features, count, scores);
  if (st != INGOT_OK) {
    free(scores);
    return st;
  }
  double right = 0;
  uint64_t pairs = 0;
  for (uint32_t i = 0; i < count; ++i) {
    for (uint32_t j = i + 1; j < count; ++j) {
      if (groups[i] != groups[j] || times_ms[i] == times_ms[j]) continue;
      pairs++;
      if (scores[i] == scores[j]) right += 0.5;
      else if ((times_ms[i] < times_ms[j]) == (scores[i] > scores[j])) right += 1;
    }
  }
  free(scores);
  *out_accuracy = pairs ? right / (double)pairs : 0.0;
  if (out_pairs) *out_pairs = pairs;
  return INGOT_OK;
}

static bool cost_known_format(const char* path) {
  size_t n = strlen(path);
  return (n > 5 && strcmp(path + n - 5, ".json") == 0) || (n > 4 && strcmp(path + n - 4, ".ubj") == 0);
}

ingot_status_t ingot_cost_model_save(const ingot_cost_model_t* model, const char* path) {
  if (!model || !path) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_cost_model_save: no model or path");
  if (!model->booster) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "cost model: save before training or loading ('%s')", path);
  if (!cost_known_format(path))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "cost model '%s': the name must end in .json or .ubj", path);
  if (XGBoosterSaveModel(model->booster, path) != 0) {
    char what[512];
    snprintf(what, sizeof(what), "writing '%s'", path);
    return cost_xgb_fail(INGOT_ERROR_IO, what);
  }
  return INGOT_OK;
}

ingot_status_t ingot_cost_model_load(const char* path, ingot_cost_model_t** out_model) {
  if (!path || !out_model) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_cost_model_load: no path or output");
  *out_model = NULL;
  if (!cost_known_format(path))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "cost model '%s': the name must end in .json or .ubj", path);
  FILE* file = fopen(path, "rb");
  if (!file) return ingot_fail(INGOT_ERROR_IO, "cost model '%s': cannot be read", path);
  fclose(file);
  ingot_cost_model_t* model = NULL;
  ingot_status_t st = ingot_cost_model_create(&model);
  if (st != INGOT_OK) return st;
  char what[512];
  if (XGBoosterCreate(NULL, 0, &model->booster) != 0) {
    model->booster = NULL;
    st = cost_xgb_fail(INGOT_ERROR_INTERNAL, "creating the booster");
  } else if (XGBoosterLoadModel(model->booster, path) != 0) {
    snprintf(what, sizeof(what), "'%s' is not a model XGBoost can read", path);
    st = cost_xgb_fail(INGOT_ERROR_CORRUPT, what);
  } else {
    bst_ulong features = 0;
    if (XGBoosterGetNumFeature(model->booster, &features) != 0) {
      snprintf(what, sizeof(what), "'%s'", path);
      st = cost_xgb_fail(INGOT_ERROR_CORRUPT, what);
    } else if (features != INGOT_COST_FEATURE_COUNT) {
      st = ingot_fail(INGOT_ERROR_VERSION, "cost model '%s': has %llu features, this version of Ingot uses %d", path,
                      (unsigned long long)features, INGOT_COST_FEATURE_COUNT);
    } else {
      st = cost_set_params(model->booster);
    }
  }
  if (st != INGOT_OK) {
    ingot_cost_model_destroy(model);
    return st;
  }
  *out_model = model;
  return INGOT_OK;
}
