/* Helpers for the lowering tests: build small graphs by hand, lower them,
 * verify every kernel and its stage records, run them with the IR interpreter
 * (a tiny executor that honours alias_of) and compare with references. */
#ifndef INGOT_LOWER_TEST_UTIL_H_
#define INGOT_LOWER_TEST_UTIL_H_

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "graph/graph.h"
#include "lower/lower.h"

extern int g_failures;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                            \
    }                                                                          \
  } while (0)

/* ---- graph building ---- */
ingot_graph_t* tg_graph(int64_t opset);
/* An f32 value with a known shape. */
uint32_t tg_value(ingot_graph_t* g, const char* name, ingot_value_kind_t kind, int32_t rank, const int64_t* dims);
uint32_t tg_input(ingot_graph_t* g, const char* name, int32_t rank, const int64_t* dims);
uint32_t tg_inter(ingot_graph_t* g, const char* name, int32_t rank, const int64_t* dims);
/* A graph output (an intermediate produced by a node). */
uint32_t tg_output(ingot_graph_t* g, const char* name, int32_t rank, const int64_t* dims);
/* A weight holding a copy of data (random when data is NULL). */
uint32_t tg_weight(ingot_graph_t* g, const char* name, int32_t rank, const int64_t* dims, const float* data);
uint32_t tg_node(ingot_graph_t* g, ingot_op_t op, const uint32_t* in, uint32_t n_in, const uint32_t* out,
                 uint32_t n_out);
void tg_attr_int(ingot_graph_t* g, uint32_t node, const char* name, int64_t v);
void tg_attr_float(ingot_graph_t* g, uint32_t node, const char* name, float v);
void tg_attr_ints(ingot_graph_t* g, uint32_t node, const char* name, const int64_t* v, uint32_t n);
void tg_attr_string(ingot_graph_t* g, uint32_t node, const char* name, const char* s);

/* ---- data ---- */
float* tg_random(int64_t n, uint32_t seed); /* uniform in [-1, 1), malloc'd */
int64_t tg_numel(const ingot_graph_t* g, uint32_t v);

/* ---- lowering and running ---- */
/* Lowers, verifies each kernel and checks its stage records against the body
 * (the contract of lower/lower.h). NULL (and a failure counted) on error. */
ingot_lowered_t* tg_lower(const ingot_graph_t* g);
/* Runs all kernels in order. vals[v] must hold data for every graph input;
 * the executor allocates every other non-weight value (aliases share their
 * root's storage) and leaves them in vals (free with tg_free_vals). */
bool tg_execute(const ingot_graph_t* g, const ingot_lowered_t* l, float** vals);
float** tg_vals(const ingot_graph_t* g);
void tg_free_vals(const ingot_graph_t* g, const ingot_lowered_t* l, float** vals);

/* Compares got with want (relative 1e-5, floor 1e-6); reports the first
 * mismatches under `what`. */
bool tg_close(const char* what, const float* got, const double* want, int64_t n);

/* Lowers, runs, compares output `out` with `want`, cleans up. Returns the
 * lowered result's kernel count (or -1 on failure) for extra checks. */
int tg_run_and_compare(const char* what, ingot_graph_t* g, float** vals, uint32_t out, const double* want);

#endif /* INGOT_LOWER_TEST_UTIL_H_ */
