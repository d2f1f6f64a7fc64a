/* Helpers for the lowering tests (see lower_test_util.h). */
#include "lower_test_util.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int g_failures = 0;

ingot_graph_t* tg_graph(int64_t opset) {
  ingot_graph_t* g = NULL;
  if (ingot_graph_create(&g) != INGOT_OK) {
    fprintf(stderr, "ingot_graph_create failed\n");
    exit(1);
  }
  g->opset = opset;
  return g;
}

uint32_t tg_value(ingot_graph_t* g, const char* name, ingot_value_kind_t kind, int32_t rank, const int64_t* dims) {
  uint32_t v = ingot_graph_add_value(g, name, kind);
  ingot_value_t* val = &g->values[v];
  val->dtype = INGOT_DTYPE_F32;
  val->rank = rank;
  for (int32_t i = 0; i < rank; ++i) val->dims[i] = dims[i];
  return v;
}

static void push_id(ingot_graph_t* g, uint32_t** list, uint32_t* count, uint32_t v) {
  uint32_t* n = INGOT_ARENA_ARRAY(&g->arena, uint32_t, *count + 1);
  if (*count) memcpy(n, *list, sizeof(uint32_t) * *count);
  n[(*count)++] = v;
  *list = n;
}

uint32_t tg_input(ingot_graph_t* g, const char* name, int32_t rank, const int64_t* dims) {
  uint32_t v = tg_value(g, name, INGOT_VALUE_INPUT, rank, dims);
  push_id(g, &g->inputs, &g->input_count, v);
  return v;
}

uint32_t tg_inter(ingot_graph_t* g, const char* name, int32_t rank, const int64_t* dims) {
  return tg_value(g, name, INGOT_VALUE_INTERMEDIATE, rank, dims);
}

uint32_t tg_output(ingot_graph_t* g, const char* name, int32_t rank, const int64_t* dims) {
  uint32_t v = tg_value(g, name, INGOT_VALUE_INTERMEDIATE, rank, dims);
  g->values[v].is_output = true;
  push_id(g, &g->outputs, &g->output_count, v);
  return v;
}

int64_t tg_numel(const ingot_graph_t* g, uint32_t v) {
  int64_t n = 1;
  for (int32_t i = 0; i < g->values[v].rank; ++i) n *= g->values[v].dims[i];
  return n;
}

float* tg_random(int64_t n, uint32_t seed) {
  float* p = malloc(sizeof(float) * (size_t)(n ? n : 1));
  uint32_t s = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    p[i] = (float)((double)(s >> 8) / (double)(1u << 24) * 2.0 - 1.0);
  }
  return p;
}

uint32_t tg_weight(ingot_graph_t* g, const char* name, int32_t rank, const int64_t* dims, const float* data) {
  uint32_t v = tg_value(g, name, INGOT_VALUE_WEIGHT, rank, dims);
  int64_t n = tg_numel(g, v);
  uint32_t seed = 7;
  for (const char* c = name; *c; ++c) seed = seed * 31u + (uint8_t)*c; /* same name, same data */
  float* p = tg_random(n, seed);
  if (data) memcpy(p, data, sizeof(float) * (size_t)n);
  g->values[v].data = p;
  return v;
}

uint32_t tg_node(ingot_graph_t* g, ingot_op_t op, const uint32_t* in, uint32_t n_in, const uint32_t* out,
                 uint32_t n_out) {
  return ingot_graph_add_node(g, op, NULL, in, n_in, out, n_out);
}

static ingot_attr_t* add_attr(ingot_graph_t* g, uint32_t node, const char* name, ingot_attr_type_t type) {
  ingot_node_t* n = &g->nodes[node];
  ingot_attr_t* attrs = INGOT_ARENA_ARRAY(&g->arena, ingot_attr_t, n->attr_count + 1);
  if (n->attr_count) memcpy(attrs, n->attrs, sizeof(ingot_attr_t) * n->attr_count);
  n->attrs = attrs;
  ingot_attr_t* a = &attrs[n->attr_count++];
  memset(a, 0, sizeof(*a));
  a->name = ingot_arena_strdup(&g->arena, name);
  a->type = type;
  a->tensor = INGOT_NO_VALUE;
  return a;
}

void tg_attr_int(ingot_graph_t* g, uint32_t node, const char* name, int64_t v) {
  add_attr(g, node, name, INGOT_ATTR_INT)->i = v;
}

void tg_attr_float(ingot_graph_t* g, uint32_t node, const char* name, float v) {
  add_attr(g, node, name, INGOT_ATTR_FLOAT)->f = v;
}

void tg_attr_ints(ingot_graph_t* g, uint32_t node, const char* name, const int64_t* v, uint32_t n) {
  ingot_attr_t* a = add_attr(g, node, name, INGOT_ATTR_INTS);
  a->ints = INGOT_ARENA_ARRAY(&g->arena, int64_t, n ? n : 1);
  memcpy(a->ints, v, sizeof(int64_t) * n);
  a->count = n;
}

void tg_attr_string(ingot_graph_t* g, uint32_t node, const char* name, const char* s) {
  add_attr(g, node, name, INGOT_ATTR_STRING)->s = ingot_arena_strdup(&g->arena, s);
}

/* ---- the stage contract ---- */

static bool check_kernel(const ingot_graph_t* g, const ingot_kernel_t* k) {
  bool ok = true;
#define KCHECK(cond)                                                                                                \
  do {                                                                                                              \
    if (!(cond)) {                                                                                                  \
      fprintf(stderr, "%s:%d: kernel '%s': contract check failed: %s\n", __FILE__, __LINE__, k->func->name, #cond); \
      ok = false;                                                                                                   \
    }                                                                                                               \
  } while (0)
  const ingot_ir_func_t* f = k->func;
  KCHECK(isalpha((unsigned char)f->name[0]) || f->name[0] == '_');
  for (const char* p = f->name; *p; ++p) KCHECK(isalnum((unsigned char)*p) || *p == '_');
  KCHECK(k->workload && k->workload[0]);
  KCHECK(k->arg_count == f->buffer_count);
  bool seen_output = false;
  for (uint32_t i = 0; i < k->arg_count && i < f->buffer_count; ++i) {
    const ingot_value_t* v = &g->values[k->args[i]];
    const ingot_ir_buffer_t* b = &f->buffers[i];
    KCHECK(b->dtype == v->dtype && b->rank == v->rank);
    for (int32_t d = 0; d < b->rank; ++d) KCHECK(b->dims[d] == v->dims[d]);
    if (b->role == INGOT_IR_BUFFER_OUTPUT) seen_output = true;
    KCHECK(b->role == INGOT_IR_BUFFER_OUTPUT || !seen_output); /* inputs first */
  }
  for (uint32_t v = 0; v < f->var_count; ++v) {
    for (uint32_t b = 0; b < f->buffer_count; ++b) KCHECK(strcmp(f->vars[v].name, f->buffers[b].name) != 0);
  }
  KCHECK(f->body->kind == INGOT_IR_STMT_BLOCK);
  if (f->body->kind != INGOT_IR_STMT_BLOCK) return false;
  KCHECK(f->body->u.block.count == k->stage_count);
  for (uint32_t s = 0; s < k->stage_count && s < f->body->u.block.count; ++s) {
    const ingot_stage_t* st = &k->stages[s];
    const ingot_ir_stmt_t* n = f->body->u.block.stmts[s];
    KCHECK(st->spatial_count >= 1);
    KCHECK(st->role == INGOT_STAGE_UPDATE || st->reduce_count == 0);
    KCHECK(st->role != INGOT_STAGE_UPDATE || st->reduce_count >= 1);
    uint32_t loops = st->role == INGOT_STAGE_OTHER ? 1 : st->spatial_count + st->reduce_count;
    for (uint32_t i = 0; i < loops; ++i) {
      uint32_t want = i < st->spatial_count ? st->spatial[i] : st->reduce[i - st->spatial_count];
      KCHECK(n->kind == INGOT_IR_STMT_FOR);
      if (n->kind != INGOT_IR_STMT_FOR) break;
      KCHECK(n->u.loop.var == want);
      n = n->u.loop.body;
    }
    if (st->role != INGOT_STAGE_OTHER) {
      KCHECK(n->kind == INGOT_IR_STMT_STORE);
      if (n->kind == INGOT_IR_STMT_STORE) KCHECK(f->buffers[n->u.store.buffer].role == INGOT_IR_BUFFER_OUTPUT);
    }
  }
#undef KCHECK
  return ok;
}

ingot_lowered_t* tg_lower(const ingot_graph_t* g) {
  ingot_lowered_t* l = NULL;
  ingot_status_t s = ingot_lower_graph(g, &l);
  if (s != INGOT_OK) {
    fprintf(stderr, "ingot_lower_graph failed: %s\n", ingot_compiler_error());
    ++g_failures;
    return NULL;
  }
  for (uint32_t i = 0; i < l->kernel_count; ++i) {
    const ingot_kernel_t* k = &l->kernels[i];
    if (ingot_ir_verify(k->func) != INGOT_OK) {
      fprintf(stderr, "verify failed: %s\n", ingot_compiler_error());
      ++g_failures;
    }
    if (!check_kernel(g, k)) {
      ++g_failures;
      ingot_strbuf_t sb = {0};
      ingot_ir_print(k->func, &sb);
      fprintf(stderr, "%s\n", sb.data ? sb.data : "");
      ingot_strbuf_free(&sb);
    }
    if (getenv("INGOT_TEST_DUMP")) {
      ingot_strbuf_t sb = {0};
      ingot_ir_print(k->func, &sb);
      fprintf(stderr, "# workload: %s\n%s\n", k->workload, sb.data ? sb.data : "");
      ingot_strbuf_free(&sb);
    }
  }
  return l;
}

float** tg_vals(const ingot_graph_t* g) { return calloc(g->value_count + 1, sizeof(float*)); }

static uint32_t root_of(const ingot_lowered_t* l, uint32_t v) {
  while (l && v < l->value_count && l->alias_of[v] != INGOT_NO_VALUE) v = l->alias_of[v];
  return v;
}

bool tg_execute(const ingot_graph_t* g, const ingot_lowered_t* l, float** vals) {
  for (uint32_t v = 0; v < g->value_count; ++v) {
    const ingot_value_t* val = &g->values[v];
    if (val->kind == INGOT_VALUE_WEIGHT) {
      vals[v] = val->data;
    } else if (val->kind == INGOT_VALUE_INTERMEDIATE && root_of(l, v) == v && !vals[v]) {
      int64_t n = tg_numel(g, v);
      vals[v] = malloc(sizeof(float) * (size_t)n + 8);
      for (int64_t i = 0; i < n; ++i) vals[v][i] = NAN; /* catch unwritten elements */
    }
  }
  for (uint32_t v = 0; v < g->value_count; ++v) {
    uint32_t r = root_of(l, v);
    if (r != v) vals[v] = vals[r];
  }
  for (uint32_t i = 0; i < l->kernel_count; ++i) {
    const ingot_kernel_t* k = &l->kernels[i];
    void* args[64];
    for (uint32_t a = 0; a < k->arg_count && a < 64; ++a) args[a] = vals[k->args[a]];
    if (ingot_ir_interpret(k->func, args) != INGOT_OK) {
      fprintf(stderr, "interpret '%s' failed: %s\n", k->func->name, ingot_compiler_error());
      ++g_failures;
      return false;
    }
  }
  return true;
}

void tg_free_vals(const ingot_graph_t* g, const ingot_lowered_t* l, float** vals) {
  for (uint32_t v = 0; v < g->value_count; ++v) {
    const ingot_value_t* val = &g->values[v];
    if (val->kind == INGOT_VALUE_WEIGHT) continue;
    if (val->kind == INGOT_VALUE_INTERMEDIATE && root_of(l, v) != v) continue;
    free(vals[v]);
  }
  free(vals);
}

bool tg_close(const char* what, const float* got, const double* want, int64_t n) {
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    double tol = 1e-5 * fabs(want[i]) + 1e-6;
    bool same = (isnan(want[i]) && isnan(got[i])) || (isinf(want[i]) && got[i] == want[i]) ||
                fabs((double)got[i] - want[i]) <= tol;
    if (!same) {
      if (bad < 5) fprintf(stderr, "%s: element %lld: got %.8g, want %.8g\n", what, (long long)i, got[i], want[i]);
      ++bad;
    }
  }
  if (bad) {
    fprintf(stderr, "%s: %d of %lld elements differ\n", what, bad, (long long)n);
    ++g_failures;
  }
  return bad == 0;
}

int tg_run_and_compare(const char* what, ingot_graph_t* g, float** vals, uint32_t out, const double* want) {
  ingot_lowered_t* l = tg_lower(g);
  int kernels = -1;
  if (l) {
    kernels = (int)l->kernel_count;
    if (tg_execute(g, l, vals)) tg_close(what, vals[out], want, tg_numel(g, out));
  }
  tg_free_vals(g, l, vals);
  ingot_lowered_destroy(l);
  ingot_graph_destroy(g);
  return kernels;
}
