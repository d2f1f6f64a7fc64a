/* `ingot check` as a library call (driver.h): everything a model needs that
 * Ingot does not support, in one pass; and the explanation of a failed
 * compile by the same checker.
 *
 * The walk, each stage continuing past the problems it finds:
 *   1. import in collect mode (importer.h): unknown ops and domains,
 *      attributes and initializers/inputs of unsupported types are reported
 *      and left out;
 *   2. graph inputs: an unknown dtype or rank is reported (the input is left
 *      out); a symbolic dimension is reported and taken as 1 for the rest of
 *      the check;
 *   3. inference and constant folding node by node, as compile does
 *      (ingot_graph_infer_and_fold with the lowering evaluator): a node that
 *      fails is reported and left out, and the walk runs again without it;
 *   4. when nothing was found so far, the whole optimization pipeline of
 *      compile, on a fresh import;
 *   5. a lowering dry run of every node left (ingot_lower_check_node).
 * A node left out takes every node downstream of it along: those are
 * skipped, not reported again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver_internal.h"
#include "importer/importer.h"

/* ---- the report ---- */

static char* dup_or_null(const char* s) { return s ? ingot_xstrdup(s) : NULL; }

/* The message without a leading "node 'NAME' (OP): " (node and op are fields). */
static const char* strip_node_prefix(const char* message, const char* node, const char* op) {
  if (!node || !op) return message;
  char prefix[1024];
  snprintf(prefix, sizeof(prefix), "node '%s' (%s): ", node, op);
  size_t n = strlen(prefix);
  return strncmp(message, prefix, n) == 0 ? message + n : message;
}

static void report_add(ingot_driver_check_report_t* r, const char* node, const char* op, const char* kind,
                       const char* message) {
  ingot_driver_problem_t p;
  p.node = dup_or_null(node);
  p.op = dup_or_null(op);
  p.kind = ingot_xstrdup(kind);
  p.message = ingot_xstrdup(strip_node_prefix(message ? message : "", node, op));
  INGOT_VEC_PUSH(r->problems, p);
}

void ingot_driver_check_report_free(ingot_driver_check_report_t* r) {
  for (size_t i = 0; i < r->problems.count; ++i) {
    ingot_driver_problem_t* p = &r->problems.data[i];
    free(p->node);
    free(p->op);
    free(p->kind);
    free(p->message);
  }
  INGOT_VEC_FREE(r->problems);
  memset(r, 0, sizeof(*r));
}

static void on_import_problem(void* self, const char* node, const char* op, const char* kind, const char* message) {
  report_add((ingot_driver_check_report_t*)self, node, op, kind, message);
}

static bool contains(const char* haystack, const char* needle) { return strstr(haystack, needle) != NULL; }

/* What a failure of node n is about, from its message. */
static const char* classify(const ingot_node_t* n, const char* message) {
  if (contains(message, "symbolic") || contains(message, "unresolved dimension") ||
      contains(message, "--input-shape"))
    return "shape";
  if (contains(message, "dtype") || contains(message, "element type") || contains(message, "data type"))
    return "dtype";
  if (contains(message, "attribute")) return "attribute";
  for (uint32_t i = 0; n && i < n->attr_count; ++i) {
    char quoted[160], assigned[160];
    snprintf(quoted, sizeof(quoted), "'%s'", n->attrs[i].name);
    snprintf(assigned, sizeof(assigned), "%s=", n->attrs[i].name);
    if (contains(message, quoted) || contains(message, assigned)) return "attribute";
  }
  if (contains(message, "type ") || contains(message, " type") || contains(message, "float16")) return "dtype";
  if (contains(message, "shape") || contains(message, "dimension") || contains(message, "rank") ||
      contains(message, "broadcast") || contains(message, "empty"))
    return "shape";
  return "op";
}

/* ---- poisoned values: defined, but never computed (left out upstream) ---- */

static bool is_poisoned(const ingot_graph_t* g, const bool* live_producer, uint32_t v) {
  const ingot_value_t* val = &g->values[v];
  return val->kind == INGOT_VALUE_INTERMEDIATE && !live_producer[v];
}

/* Marks dead every live node that reads a poisoned value, until nothing
 * changes, counting them in *skipped; then drops graph outputs nobody
 * computes. */
static void propagate(ingot_graph_t* g, uint32_t* skipped) {
  bool* live_producer = ingot_xcalloc(g->value_count + 1, sizeof(bool));
  for (bool changed = true; changed;) {
    changed = false;
    memset(live_producer, 0, g->value_count + 1);
    for (uint32_t i = 0; i < g->node_count; ++i) {
      const ingot_node_t* n = &g->nodes[i];
      if (n->dead) continue;
      for (uint32_t k = 0; k < n->output_count; ++k)
        if (n->outputs[k] != INGOT_NO_VALUE && n->outputs[k] < g->value_count) live_producer[n->outputs[k]] = true;
    }
    for (uint32_t i = 0; i < g->node_count; ++i) {
      ingot_node_t* n = &g->nodes[i];
      if (n->dead) continue;
      for (uint32_t k = 0; k < n->input_count; ++k) {
        uint32_t v = n->inputs[k];
        if (v != INGOT_NO_VALUE && v < g->value_count && is_poisoned(g, live_producer, v)) {
          n->dead = true;
          ++*skipped;
          changed = true;
          break;
        }
      }
    }
  }
  uint32_t kept = 0;
  for (uint32_t i = 0; i < g->output_count; ++i) {
    uint32_t v = g->outputs[i];
    if (is_poisoned(g, live_producer, v)) {
      g->values[v].is_output = false;
      continue;
    }
    g->outputs[kept++] = v;
  }
  g->output_count = kept;
  free(live_producer);
}

/* The live node a failure message names ("node 'NAME' (...": ...), else the
 * first live node (in order) with a present output not inferred yet. */
static uint32_t failing_node(const ingot_graph_t* g, const char* message) {
  const char* p = strstr(message, "node '");
  if (p) {
    p += 6;
    const char* end = strstr(p, "' (");
    if (end) {
      size_t len = (size_t)(end - p);
      for (uint32_t i = 0; i < g->node_count; ++i) {
        const ingot_node_t* n = &g->nodes[i];
        if (!n->dead && strlen(n->name) == len && strncmp(n->name, p, len) == 0) return i;
      }
    }
  }
  for (uint32_t i = 0; i < g->node_count; ++i) {
    const ingot_node_t* n = &g->nodes[i];
    if (n->dead) continue;
    for (uint32_t k = 0; k < n->output_count; ++k) {
      uint32_t v = n->outputs[k];
      if (v != INGOT_NO_VALUE && (g->values[v].dtype == INGOT_DTYPE_INVALID || g->values[v].rank < 0)) return i;
    }
  }
  return UINT32_MAX;
}

/* Step 2: inputs with an unknown type or rank are left out; symbolic
 * dimensions are reported and taken as 1. */
static void check_inputs(ingot_graph_t* g, ingot_driver_check_report_t* r) {
  uint32_t kept = 0;
  for (uint32_t i = 0; i < g->input_count; ++i) {
    ingot_value_t* v = &g->values[g->inputs[i]];
    char msg[1024];
    if (v->dtype == INGOT_DTYPE_INVALID || v->rank < 0) {
      snprintf(msg, sizeof(msg), "input '%s' has %s; give it a type and shape in the model%s", v->name,
               v->dtype == INGOT_DTYPE_INVALID ? "no known element type" : "an unknown rank",
               v->dtype == INGOT_DTYPE_INVALID ? "" : " or with --input-shape");
      report_add(r, NULL, NULL, v->dtype == INGOT_DTYPE_INVALID ? "dtype" : "shape", msg);
      v->kind = INGOT_VALUE_INTERMEDIATE; /* poisoned */
      continue;
    }
    for (int32_t d = 0; d < v->rank; ++d) {
      if (v->dims[d] >= 0) continue;
      snprintf(msg, sizeof(msg), "input '%s' dimension %d%s%s%s is symbolic; fix it with --input-shape %s=...",
               v->name, d, v->dim_names[d] ? " ('" : "", v->dim_names[d] ? v->dim_names[d] : "",
               v->dim_names[d] ? "')" : "", v->name);
      report_add(r, NULL, NULL, "shape", msg);
      v->dims[d] = 1;
      v->dim_names[d] = NULL;
    }
    g->inputs[kept++] = g->inputs[i];
  }
  g->input_count = kept;
}

static ingot_status_t import_model(const char* model, const char* const* input_shapes, uint32_t input_shape_count,
                                   ingot_driver_check_report_t* r, ingot_graph_t** out_graph) {
  ingot_import_options_t options;
  memset(&options, 0, sizeof(options));
  options.on_problem = r ? on_import_problem : NULL;
  options.problem_self = r;
  ingot_status_t s = ingot_import_onnx_file(model, &options, out_graph);
  if (s) return s;
  for (uint32_t i = 0; i < input_shape_count; ++i) {
    if ((s = ingot_graph_set_input_shape(*out_graph, input_shapes[i]))) {
      /* An input the import left out (its type is reported) takes no shape. */
      const char* eq = strrchr(input_shapes[i], '=');
      char name[512];
      size_t n = eq ? (size_t)(eq - input_shapes[i]) : 0;
      if (r && s == INGOT_ERROR_NOT_FOUND && n < sizeof(name)) {
        memcpy(name, input_shapes[i], n);
        name[n] = '\0';
        if (ingot_graph_find_value(*out_graph, name) != INGOT_NO_VALUE) {
          ingot_compiler_error_clear();
          continue;
        }
      }
      ingot_graph_destroy(*out_graph);
      *out_graph = NULL;
      return s;
    }
  }
  return INGOT_OK;
}

/* Step 5: every live node through the lowering. */
static void check_lowering(const ingot_graph_t* g, ingot_driver_check_report_t* r) {
  for (uint32_t i = 0; i < g->node_count; ++i) {
    const ingot_node_t* n = &g->nodes[i];
    if (n->dead) continue;
    ingot_compiler_error_clear();
    if (ingot_lower_check_node(g, i) != INGOT_OK) {
      const char* msg = ingot_compiler_error();
      report_add(r, n->name, ingot_op_name(n->op), classify(n, msg), msg);
    }
  }
}

ingot_status_t ingot_driver_check(const ingot_driver_options_t* options, ingot_driver_check_report_t* r) {
  if (r) memset(r, 0, sizeof(*r));
  if (!options || !options->model_path || !r)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_driver_check: no options, model path or report");
  const char* model = options->model_path;
  const char* const* input_shapes = options->input_shapes;
  uint32_t input_shape_count = options->input_shape_count;
  ingot_graph_t* g = NULL;
  ingot_status_t s = import_model(model, input_shapes, input_shape_count, r, &g);
  if (s) return s;
  uint32_t unknown = (uint32_t)r->problems.count;
  r->node_count = g->node_count;
  for (size_t i = 0; i < r->problems.count; ++i)
    if (!strcmp(r->problems.data[i].kind, "op")) r->node_count++;

  check_inputs(g, r);
  propagate(g, &r->skipped);
  bool clean = r->problems.count == 0;
  (void)unknown;

  /* Step 3: infer and fold; leave out each node that fails and walk again. */
  bool walked = false;
  if (g->output_count > 0) {
    ingot_compiler_error_clear();
    if ((s = ingot_graph_sort(g)) || (s = ingot_graph_compute_half_in_f32(g))) {
      report_add(r, NULL, NULL, "op", ingot_compiler_error());
    } else {
      for (uint32_t round = 0; round <= g->node_count; ++round) {
        ingot_compiler_error_clear();
        s = ingot_graph_infer_and_fold(g, ingot_lower_eval_node, NULL);
        if (s == INGOT_OK) {
          walked = true;
          break;
        }
        char* msg = ingot_xstrdup(ingot_compiler_error());
        uint32_t bad = failing_node(g, msg);
        if (bad == UINT32_MAX) {
          report_add(r, NULL, NULL, classify(NULL, msg), msg);
          free(msg);
          break;
        }
        ingot_node_t* n = &g->nodes[bad];
        report_add(r, n->name, ingot_op_name(n->op), classify(n, msg), msg);
        free(msg);
        n->dead = true;
        propagate(g, &r->skipped);
        if (g->output_count == 0) break;
      }
    }
  }

  if (walked && clean && r->problems.count == 0) {
    /* Step 4: nothing found so far: the whole pipeline, as compile runs it. */
    ingot_graph_destroy(g);
    g = NULL;
    if ((s = import_model(model, input_shapes, input_shape_count, NULL, &g))) {
      report_add(r, NULL, NULL, "op", ingot_compiler_error());
    } else if ((s = driver_optimize_ranged(options, g))) {
      const char* msg = ingot_compiler_error();
      uint32_t bad = failing_node(g, msg);
      const ingot_node_t* n = bad == UINT32_MAX ? NULL : &g->nodes[bad];
      report_add(r, n ? n->name : NULL, n ? ingot_op_name(n->op) : NULL, classify(n, msg), msg);
    } else {
      check_lowering(g, r);
    }
  } else if (walked) {
    check_lowering(g, r);
  }
  if (g) ingot_graph_destroy(g);
  ingot_compiler_error_clear();
  return INGOT_OK;
}

void ingot_driver_problem_format(const ingot_driver_problem_t* p, ingot_strbuf_t* sb) {
  if (p->node) ingot_strbuf_appendf(sb, "node '%s' (%s): ", p->node, p->op ? p->op : "?");
  ingot_strbuf_append(sb, p->message);
}

/* ---- explaining a failed compile ---- */

ingot_status_t driver_explain_failure(const ingot_driver_options_t* o, ingot_status_t s) {
  /* The checker reads the model as given; with inputs bound as constants it
   * would report a different model, so keep the original message then. */
  if (s == INGOT_ERROR_IO || s == INGOT_ERROR_OUT_OF_MEMORY || o->const_count > 0 || o->graph || !o->model_path)
    return s;
  char* original = ingot_xstrdup(ingot_compiler_error());
  ingot_driver_check_report_t r;
  ingot_status_t cs = ingot_driver_check(o, &r);
  if (cs == INGOT_OK && r.problems.count > 0) {
    ingot_strbuf_t sb = {0};
    if (r.problems.count > 1) ingot_strbuf_appendf(&sb, "%zu problems: ", r.problems.count);
    for (size_t i = 0; i < r.problems.count; ++i) {
      if (i) ingot_strbuf_append(&sb, "; ");
      ingot_driver_problem_format(&r.problems.data[i], &sb);
    }
    s = ingot_fail(s, "%s", sb.data);
    ingot_strbuf_free(&sb);
  } else {
    s = ingot_fail(s, "%s", original);
  }
  ingot_driver_check_report_free(&r);
  free(original);
  return s;
}
