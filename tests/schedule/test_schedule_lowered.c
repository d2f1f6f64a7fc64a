/* Default schedules on kernels from the real lowering: for each target, every
 * kernel of a few small graphs (conv+bias+relu, gemm, matmul, pools, softmax,
 * broadcast add, transpose) gets the schedule ingot_schedule_choose picks;
 * the scheduled kernels must verify and compute what the unscheduled ones do. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower_test_util.h"
#include "schedule/schedule.h"



static int g_accumulated; /* kernels given register accumulators */

typedef ingot_graph_t* (*graph_fn)(uint32_t* out_input, uint32_t* out_output);

static ingot_graph_t* g_conv(uint32_t* in, uint32_t* out) {
  ingot_graph_t* g = tg_graph(13);
  int64_t xd[4] = {1, 8, 14, 14}, wd[4] = {16, 8, 3, 3}, bd[1] = {16}, yd[4] = {1, 16, 14, 14};
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
  *in = x;
  *out = y;
  return g;
}

static ingot_graph_t* g_conv_strided(uint32_t* in, uint32_t* out) {
  ingot_graph_t* g = tg_graph(13);
  int64_t xd[4] = {2, 3, 17, 11}, wd[4] = {5, 3, 3, 3}, yd[4] = {2, 5, 8, 5};
  uint32_t x = tg_input(g, "x", 4, xd);
  uint32_t w = tg_weight(g, "w", 4, wd, NULL);
  uint32_t y = tg_output(g, "y", 4, yd);
  uint32_t ins[2] = {x, w};
  uint32_t node = tg_node(g, INGOT_OP_CONV, ins, 2, &y, 1);
  int64_t k[2] = {3, 3}, s[2] = {2, 2};
  tg_attr_ints(g, node, "kernel_shape", k, 2);
  tg_attr_ints(g, node, "strides", s, 2);
  *in = x;
  *out = y;
  return g;
}

static ingot_graph_t* g_gemm(uint32_t* in, uint32_t* out) {
  ingot_graph_t* g = tg_graph(13);
  int64_t ad[2] = {1, 64}, bd[2] = {100, 64}, cd[1] = {100}, yd[2] = {1, 100};
  uint32_t a = tg_input(g, "a", 2, ad);
  uint32_t b = tg_weight(g, "b", 2, bd, NULL);
  uint32_t c = tg_weight(g, "c", 1, cd, NULL);
  uint32_t y = tg_output(g, "y", 2, yd);
  uint32_t ins[3] = {a, b, c};
  uint32_t node = tg_node(g, INGOT_OP_GEMM, ins, 3, &y, 1);
  tg_attr_int(g, node, "transB", 1);
  *in = a;
  *out = y;
  return g;
}

/* Big enough for a register tile: rows of A unrolled, two vectors of B. */
static ingot_graph_t* g_matmul_tile(uint32_t* in, uint32_t* out) {
  ingot_graph_t* g = tg_graph(13);
  int64_t ad[2] = {24, 19}, bd[2] = {19, 64}, yd[2] = {24, 64};
  uint32_t a = tg_input(g, "a", 2, ad);
  uint32_t b = tg_weight(g, "b", 2, bd, NULL);
  uint32_t y = tg_output(g, "y", 2, yd);
  uint32_t ins[2] = {a, b};
  tg_node(g, INGOT_OP_MATMUL, ins, 2, &y, 1);
  *in = a;
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

/* A packed MatMul with a fused bias and GELU whose reduction (128 steps)
 * splits into cache blocks (k_block 32, 64) with 8 weight panels before the
 * rows: the accumulators start at the bias in the first block only, and
 * GELU applies after the last. */
static ingot_graph_t* g_matmul_blocked(uint32_t* in, uint32_t* out) {
  ingot_graph_t* g = tg_graph(13);
  int64_t ad[2] = {40, 128}, bd[2] = {128, 256}, cd[1] = {256}, yd[2] = {40, 256};
  uint32_t a = tg_input(g, "a", 2, ad);
  uint32_t b = tg_weight(g, "b", 2, bd, NULL);
  uint32_t c = tg_weight(g, "bias", 1, cd, NULL);
  uint32_t y = tg_output(g, "y", 2, yd);
  uint32_t ins[3] = {a, b, c};
  uint32_t node = tg_node(g, INGOT_OP_MATMUL, ins, 3, &y, 1);
  g->nodes[node].epilogue.bias_input = 2;
  g->nodes[node].epilogue.activation = INGOT_ACTIVATION_GELU;
  CHECK(ingot_graph_pack_weights(g) == INGOT_OK);
  CHECK(g->nodes[node].weight_block == 32);
  *in = a;
  *out = y;
  return g;
}

static ingot_graph_t* g_maxpool(uint32_t* in, uint32_t* out) {
  ingot_graph_t* g = tg_graph(13);
  int64_t xd[4] = {1, 8, 15, 15}, yd[4] = {1, 8, 8, 8};
  uint32_t x = tg_input(g, "x", 4, xd);
  uint32_t y = tg_output(g, "y", 4, yd);
  uint32_t node = tg_node(g, INGOT_OP_MAXPOOL, &x, 1, &y, 1);
  int64_t k[2] = {3, 3}, s[2] = {2, 2}, p[4] = {1, 1, 1, 1};
  tg_attr_ints(g, node, "kernel_shape", k, 2);
  tg_attr_ints(g, node, "strides", s, 2);
  tg_attr_ints(g, node, "pads", p, 4);
  *in = x;
  *out = y;
  return g;
}

static ingot_graph_t* g_gap(uint32_t* in, uint32_t* out) {
  ingot_graph_t* g = tg_graph(13);
  int64_t xd[4] = {2, 24, 7, 7}, yd[4] = {2, 24, 1, 1};
  uint32_t x = tg_input(g, "x", 4, xd);
  uint32_t y = tg_output(g, "y", 4, yd);
  tg_node(g, INGOT_OP_GLOBALAVERAGEPOOL, &x, 1, &y, 1);
  *in = x;
  *out = y;
  return g;
}

static ingot_graph_t* g_softmax(uint32_t* in, uint32_t* out) {
  ingot_graph_t* g = tg_graph(13);
  int64_t d[2] = {70, 50};
  uint32_t x = tg_input(g, "x", 2, d);
  uint32_t y = tg_output(g, "y", 2, d);
  uint32_t node = tg_node(g, INGOT_OP_SOFTMAX, &x, 1, &y, 1);
  tg_attr_int(g, node, "axis", -1);
  *in = x;
  *out = y;
  return g;
}

static ingot_graph_t* g_add(uint32_t* in, uint32_t* out) {
  ingot_graph_t* g = tg_graph(13);
  int64_t xd[4] = {2, 3, 50, 7}, bd[1] = {7};
  uint32_t x = tg_input(g, "x", 4, xd);
  uint32_t b = tg_weight(g, "b", 1, bd, NULL);
  uint32_t y = tg_output(g, "y", 4, xd);
  uint32_t ins[2] = {x, b};
  tg_node(g, INGOT_OP_ADD, ins, 2, &y, 1);
  *in = x;
  *out = y;
  return g;
}

static ingot_graph_t* g_transpose(uint32_t* in, uint32_t* out) {
  ingot_graph_t* g = tg_graph(13);
  int64_t xd[3] = {9, 40, 33}, yd[3] = {33, 9, 40};
  uint32_t x = tg_input(g, "x", 3, xd);
  uint32_t y = tg_output(g, "y", 3, yd);
  uint32_t node = tg_node(g, INGOT_OP_TRANSPOSE, &x, 1, &y, 1);
  int64_t perm[3] = {2, 0, 1};
  tg_attr_ints(g, node, "perm", perm, 3);
  *in = x;
  *out = y;
  return g;
}

/* Sets layout knob `knob` to `value` on every node it applies to (the rest
 * of their layout at the defaults) and packs the graph; false when `knob`
 * is not a layout knob. */
static bool apply_layout(ingot_graph_t* g, const char* knob, int64_t value) {
  bool pack = !strcmp(knob, "pack"), panel = !strcmp(knob, "panel"), pw = !strcmp(knob, "pointwise_matmul"),
       chains = !strcmp(knob, "chains");
  if (!pack && !panel && !pw && !chains) return false;
  for (uint32_t i = 0; i < g->node_count; ++i) {
    ingot_node_layout_options_t o;
    ingot_node_layout_options(g, &g->nodes[i], &o);
    ingot_node_layout_t layout = o.defaults;
    if ((pack || panel) && o.panel_count) {
      if (pack) layout.pack = value == 1;
      else layout.panel = (uint32_t)value;
    } else if (pw && o.pointwise) {
      layout.pointwise_matmul = value == 1;
    } else if (chains && o.chain_count) {
      layout.chains = (uint32_t)value;
    } else {
      continue;
    }
    layout.chosen = true;
    g->nodes[i].layout = layout;
  }
  CHECK(ingot_graph_pack_weights(g) == INGOT_OK);
  return true;
}

/* tmpl: NULL for the chosen schedule, else that template for the kernels
 * of its op class (the others chosen), with one knob set when `knob` is not
 * NULL ("contraction.plain": no register tile, so an UPDATE that starts at
 * its initial value through a select keeps that select in its loop). */
static void run_case(const char* name, graph_fn make, const ingot_target_t* target, const char* tmpl,
                     const char* knob, int64_t value) {
  uint32_t x, y;
  /* reference: unscheduled kernels */
  ingot_graph_t* g = make(&x, &y);
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

  /* scheduled */
  if (ok) {
    float* input = malloc(sizeof(float) * (size_t)tg_numel(g, x));
    memcpy(input, vals[x], sizeof(float) * (size_t)tg_numel(g, x));
    tg_free_vals(g, l, vals);
    if (knob && apply_layout(g, knob, value)) {
      /* A layout knob acts before lowering: lay the graph out, lower again. */
      ingot_lowered_destroy(l);
      l = tg_lower(g);
      if (!l) {
        free(input);
        ingot_graph_destroy(g);
        free(want);
        return;
      }
    }
    vals = tg_vals(g);
    vals[x] = input;
    for (uint32_t k = 0; k < l->kernel_count; ++k) {
      ingot_kernel_t* kern = &l->kernels[k];
      ingot_schedule_t s;
      ingot_schedule_init(&s);
      ingot_schedule_space_t space;
      bool fits = tmpl && ingot_schedule_space(kern, target, tmpl, &space) == INGOT_OK;
      ingot_compiler_error_clear();
      ingot_status_t st = fits ? ingot_schedule_from_template(kern, target, tmpl, &knob, &value, knob ? 1 : 0, &s)
                               : ingot_schedule_choose(kern, target, NULL, NULL, &s);
      for (uint32_t d = 0; st == INGOT_OK && d < s.directive_count; ++d)
        g_accumulated += s.directives[d].kind == INGOT_DIRECTIVE_ACCUMULATE;
      if (st == INGOT_OK) st = ingot_schedule_apply(kern->func, &s);
      if (st == INGOT_OK) st = ingot_ir_verify(kern->func);
      if (st != INGOT_OK) {
        fprintf(stderr, "%s (%s) kernel '%s': %s\n", name, target->name, kern->func->name, ingot_compiler_error());
        ++g_failures;
      }
      if (getenv("INGOT_TEST_DUMP")) {
        ingot_strbuf_t sb = {0};
        ingot_schedule_describe(&s, &sb);
        ingot_ir_print(kern->func, &sb);
        fprintf(stderr, "# %s (%s)\n%s\n", name, target->name, sb.data);
        ingot_strbuf_free(&sb);
      }
      ingot_schedule_deinit(&s);
    }
    char what[128];
    snprintf(what, sizeof(what), "%s scheduled for '%s'%s%s %s=%lld", name, target->name, tmpl ? " with " : "",
             tmpl ? tmpl : "", knob ? knob : "", (long long)value);
    if (tg_execute(g, l, vals)) CHECK(tg_close(what, vals[y], want, n));
  }
  tg_free_vals(g, l, vals);
  ingot_lowered_destroy(l);
  ingot_graph_destroy(g);
  free(want);
}

/* The spaces of a case's kernels: each knob of each template, each value. */
static void sweep_space(const char* name, graph_fn make, const ingot_target_t* target) {
  uint32_t x, y;
  ingot_graph_t* g = make(&x, &y);
  ingot_lowered_t* l = tg_lower(g);
  if (!l) {
    ingot_graph_destroy(g);
    return;
  }
  /* A case built with its weights packed keeps that layout: its layout
   * knobs are not swept. */
  bool prepacked = false;
  for (uint32_t i = 0; i < g->node_count; ++i) prepacked |= g->nodes[i].weight_block != 0;
  /* Collect (template, knob, value) first: run_case lowers afresh. */
  struct point { const char* tmpl; const char* knob; int64_t value; };
  INGOT_VEC(struct point) points = {0};
  INGOT_VEC(uint64_t) keys = {0}; /* points giving a program already run are skipped */
  for (uint32_t k = 0; k < l->kernel_count; ++k) {
    for (uint32_t t = 0; t < ingot_schedule_template_count(); ++t) {
      if (!ingot_schedule_template_applies(&l->kernels[k], target, t)) continue;
      ingot_schedule_space_t space;
      if (ingot_schedule_space(&l->kernels[k], target, ingot_schedule_template_name(t), &space) != INGOT_OK) {
        fprintf(stderr, "%s: space: %s\n", name, ingot_compiler_error());
        ++g_failures;
        continue;
      }
      CHECK(ingot_schedule_space_size(&space) >= 1);
      for (uint32_t i = 0; i < space.knob_count; ++i) {
        bool has_default = false;
        for (uint32_t v = 0; v < space.knobs[i].value_count; ++v) {
          has_default |= space.knobs[i].values[v] == space.knobs[i].default_value;
          if (v && space.knobs[i].values[v] <= space.knobs[i].values[v - 1]) ++g_failures;
          struct point pt = {space.template_name, space.knobs[i].name, space.knobs[i].values[v]};
          bool layout = !strcmp(pt.knob, "pack") || !strcmp(pt.knob, "panel") ||
                        !strcmp(pt.knob, "pointwise_matmul") || !strcmp(pt.knob, "chains");
          if (layout) { /* run_case lays the graph out */
            if (!prepacked) INGOT_VEC_PUSH(points, pt);
            continue;
          }
          ingot_schedule_t s;
          ingot_schedule_init(&s);
          if (ingot_schedule_from_template(&l->kernels[k], target, pt.tmpl, &pt.knob, &pt.value, 1, &s) != INGOT_OK) {
            fprintf(stderr, "%s: listed point %s %s=%lld refused: %s\n", name, pt.tmpl, pt.knob, (long long)pt.value,
                    ingot_compiler_error());
            ++g_failures;
          }
          uint64_t key = ingot_schedule_key(&s);
          ingot_schedule_deinit(&s);
          bool seen = false;
          for (size_t q = 0; q < keys.count && !seen; ++q) seen = keys.data[q] == key;
          if (seen) continue;
          INGOT_VEC_PUSH(keys, key);
          INGOT_VEC_PUSH(points, pt);
        }
        CHECK(has_default);
      }
    }
  }
  ingot_lowered_destroy(l);
  ingot_graph_destroy(g);
  for (size_t i = 0; i < points.count; ++i)
    run_case(name, make, target, points.data[i].tmpl, points.data[i].knob, points.data[i].value);
  INGOT_VEC_FREE(points);
  INGOT_VEC_FREE(keys);
}

int main(void) {
  const char* targets[] = {"c", "c -mcpu=x86-64-v3", "c -mcpu=x86-64-v4"};
  struct { const char* name; graph_fn fn; } cases[] = {
      {"conv3x3 bias relu", g_conv}, {"conv strided", g_conv_strided}, {"gemm 1x64x100", g_gemm},
      {"matmul 13x17x40", g_matmul}, {"matmul 24x19x64 (register tile)", g_matmul_tile},
      {"matmul 40x128x256 bias gelu (k blocks)", g_matmul_blocked}, {"maxpool", g_maxpool}, {"global average pool", g_gap},
      {"softmax", g_softmax}, {"broadcast add", g_add}, {"transpose", g_transpose},
  };
  for (size_t t = 0; t < sizeof(targets) / sizeof(targets[0]); ++t) {
    ingot_target_t target;
    if (ingot_target_parse(targets[t], &target) != INGOT_OK) {
      fprintf(stderr, "target: %s\n", ingot_compiler_error());
      return 1;
    }
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); ++c)
      run_case(cases[c].name, cases[c].fn, &target, NULL, NULL, 0);
    for (size_t c = 0; c < 6; ++c) run_case(cases[c].name, cases[c].fn, &target, "contraction.plain", NULL, 0);
    /* Every listed value of every knob (the others at their defaults), for
     * every template of each case's kernels, gives the same results (on the
     * widest target, whose spaces hold the others'; the interpreter is slow). */
    if (t == sizeof(targets) / sizeof(targets[0]) - 1)
      for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); ++c) sweep_space(cases[c].name, cases[c].fn, &target);
  }
  /* conv, gemm and both matmuls on every target (the strided conv's rows are
   * narrower than a vector on some). */
  CHECK(g_accumulated >= 4 * 3);
  if (g_failures) {
    fprintf(stderr, "%d check(s) failed\n", g_failures);
    return 1;
  }
  printf("scheduled lowered kernels match\n");
  return 0;
}
