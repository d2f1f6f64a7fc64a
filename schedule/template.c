/* The template registry (templates.def), schedule spaces, strict knob
 * checks, schedule keys, and the one place a schedule is chosen. The
 * templates themselves live in template_<name>.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template_internal.h"

typedef struct knob_info_t {
  const char* name;
  bool layout;
} knob_info_t;

static const knob_info_t k_knobs[] = {
#define INGOT_KNOB(id, name, layout, doc) {name, layout},
#include "knobs.def"
#undef INGOT_KNOB
};
_Static_assert(sizeof(k_knobs) / sizeof(k_knobs[0]) == SCHEDULE_KNOB_COUNT, "knobs.def and its table disagree");

typedef struct template_info_t {
  const char* name;
  ingot_op_class_t op_class;
  uint32_t knobs; /* mask over knobs.def */
  template_space_fn_t space;
  template_plan_fn_t plan;
} template_info_t;

static const template_info_t k_templates[] = {
#define INGOT_TEMPLATE(id, name, op_class, knobs, space_fn, plan_fn) {name, op_class, knobs, space_fn, plan_fn},
#include "templates.def"
#undef INGOT_TEMPLATE
};
#define TEMPLATE_COUNT (sizeof(k_templates) / sizeof(k_templates[0]))

const char* schedule_knob_name(schedule_knob_t knob) { return k_knobs[knob].name; }
bool schedule_knob_is_layout(schedule_knob_t knob) { return k_knobs[knob].layout; }

static int knob_index(const char* name) {
  for (int j = 0; name && j < SCHEDULE_KNOB_COUNT; ++j)
    if (strcmp(name, k_knobs[j].name) == 0) return j;
  return -1;
}

bool ingot_schedule_knob_is_layout(const char* name) {
  int j = knob_index(name);
  return j >= 0 && k_knobs[j].layout;
}

int64_t schedule_register_count(const ingot_target_t* target) {
  return target->vector_registers ? target->vector_registers : 16;
}

int64_t schedule_register_budget(const ingot_target_t* target) {
  /* Three quarters of the vector registers hold a register tile's
   * accumulators (32 on AVX-512 and AArch64 leave 24, the 16 of SSE/AVX2 12). */
  return schedule_register_count(target) * 3 / 4;
}

uint32_t ingot_schedule_template_count(void) { return (uint32_t)TEMPLATE_COUNT; }
const char* ingot_schedule_template_name(uint32_t index) {
  return index < TEMPLATE_COUNT ? k_templates[index].name : NULL;
}
ingot_op_class_t ingot_schedule_template_class(uint32_t index) {
  return index < TEMPLATE_COUNT ? k_templates[index].op_class : (ingot_op_class_t)0;
}

static const template_info_t* find_template(const char* name) {
  for (size_t i = 0; name && i < TEMPLATE_COUNT; ++i)
    if (strcmp(k_templates[i].name, name) == 0) return &k_templates[i];
  return NULL;
}

/* A GPU template: its name starts "gpu." (templates.def). */
static bool template_is_gpu(const template_info_t* t) { return strncmp(t->name, "gpu.", 4) == 0; }

bool ingot_schedule_target_is_gpu(const ingot_target_t* target) {
  return target && (target->kind == INGOT_TARGET_CUDA || target->kind == INGOT_TARGET_ROCM);
}

bool ingot_schedule_target_has_dot4(const ingot_target_t* target) {
  if (!target || target->kind != INGOT_TARGET_LLVM) return false;
  if (target->arch == INGOT_TARGET_ARCH_X86_64) return true;
  return target->arch == INGOT_TARGET_ARCH_AARCH64 && (ingot_target_has_feature(target, INGOT_TARGET_FEATURE_DOTPROD) ||
                                                        ingot_target_has_feature(target, INGOT_TARGET_FEATURE_I8MM));
}

bool ingot_schedule_target_dot_pairs(const ingot_target_t* target) {
  return ingot_schedule_target_has_dot4(target) && target->arch == INGOT_TARGET_ARCH_X86_64 &&
         !ingot_target_has_feature(target, INGOT_TARGET_FEATURE_AVX512VNNI);
}

/* Whether template t is of the target's kind (GPU templates for GPU target
 * kinds only, the others for CPU kinds only) and serves the op class (op
 * class 0: every class). */
static bool template_fits(const template_info_t* t, ingot_op_class_t op_class, const ingot_target_t* target) {
  return template_is_gpu(t) == ingot_schedule_target_is_gpu(target) &&
         (t->op_class == op_class || t->op_class == SCHEDULE_ANY_CLASS);
}

const char* ingot_schedule_template_for(ingot_op_class_t op_class) {
  for (size_t i = 0; i < TEMPLATE_COUNT; ++i)
    if (k_templates[i].op_class == op_class && !template_is_gpu(&k_templates[i])) return k_templates[i].name;
  return NULL;
}

/* ---- spaces ---- */

/* The value of layout knob `knob` in a node layout. */
static int64_t layout_value(const ingot_node_layout_t* layout, schedule_knob_t knob) {
  switch (knob) {
    case SCHEDULE_KNOB_PACK: return layout->pack;
    case SCHEDULE_KNOB_PANEL: return layout->panel;
    case SCHEDULE_KNOB_POINTWISE_MATMUL: return layout->pointwise_matmul;
    case SCHEDULE_KNOB_CHAINS: return layout->chains;
    default: return 0;
  }
}

/* The plan context and space of template `name` for a kernel on a target;
 * every knob of p->knob holds its default. */
static ingot_status_t open_space(const ingot_kernel_t* kernel, const ingot_target_t* target, const char* name,
                                 const template_info_t** out_template, plan_t* p, ingot_schedule_space_t* space) {
  if (!kernel || !kernel->func || !target)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "schedule space: missing kernel or target");
  const template_info_t* t = find_template(name);
  if (!t)
    return ingot_fail(INGOT_ERROR_NOT_FOUND, "kernel '%s': unknown schedule template '%s'", kernel->func->name,
                      name ? name : "(null)");
  if (t->op_class != kernel->op_class && t->op_class != SCHEDULE_ANY_CLASS)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "kernel '%s': template '%s' does not fit its op class %d",
                      kernel->func->name, t->name, (int)kernel->op_class);
  if (template_is_gpu(t) != ingot_schedule_target_is_gpu(target))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "kernel '%s': template '%s' is for %s targets; '%s' is a %s target",
                      kernel->func->name, t->name, template_is_gpu(t) ? "GPU" : "CPU", target->name,
                      ingot_schedule_target_is_gpu(target) ? "GPU" : "CPU");
  memset(p, 0, sizeof(*p));
  p->kernel = kernel;
  p->f = kernel->func;
  p->target = target;
  /* Values for knobs that a kernel does not list (they do not act on it). */
  p->knob[SCHEDULE_KNOB_THREADS] = target->max_threads ? target->max_threads : 8;
  p->knob[SCHEDULE_KNOB_VECTOR_BYTES] = target->vector_bytes ? target->vector_bytes : 16;
  p->knob[SCHEDULE_KNOB_UNROLL] = 1;
  p->knob[SCHEDULE_KNOB_MAX_ROWS] = 16;
  p->knob[SCHEDULE_KNOB_ACCUMULATORS] = schedule_register_budget(target);
  p->knob[SCHEDULE_KNOB_PARALLEL_MIN_WORK] = 4096;
  memset(space, 0, sizeof(*space));
  space->template_name = t->name;
  space->op_class = t->op_class;
  ingot_status_t s = t->space(p, t->knobs, space);
  if (s != INGOT_OK) return s;
  for (uint32_t i = 0; i < space->knob_count; ++i) p->knob[knob_index(space->knobs[i].name)] = space->knobs[i].default_value;
  *out_template = t;
  return INGOT_OK;
}

ingot_status_t ingot_schedule_space(const ingot_kernel_t* kernel, const ingot_target_t* target,
                                    const char* template_name, ingot_schedule_space_t* out_space) {
  if (!out_space) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_schedule_space: no output");
  const template_info_t* t;
  plan_t p;
  return open_space(kernel, target, template_name, &t, &p, out_space);
}

bool ingot_schedule_template_applies(const ingot_kernel_t* kernel, const ingot_target_t* target, uint32_t index) {
  if (!kernel || !kernel->func || !target || index >= TEMPLATE_COUNT) return false;
  const template_info_t* t = &k_templates[index];
  if (!template_fits(t, kernel->op_class, target)) return false;
  if (!template_is_gpu(t)) return true; /* a CPU template's space opens for every kernel of its class */
  const template_info_t* opened;
  plan_t p;
  ingot_schedule_space_t space;
  bool ok = open_space(kernel, target, t->name, &opened, &p, &space) == INGOT_OK;
  ingot_compiler_error_clear();
  return ok;
}

const char* ingot_schedule_template_default(const ingot_kernel_t* kernel, const ingot_target_t* target) {
  if (!kernel) return NULL;
  if (!ingot_schedule_target_is_gpu(target)) return ingot_schedule_template_for(kernel->op_class);
  /* GPU: the first GPU template of the kernel's own class that applies,
   * then the first that serves every class (gpu.simt). */
  for (int pass = 0; pass < 2; ++pass)
    for (uint32_t i = 0; i < TEMPLATE_COUNT; ++i) {
      const template_info_t* t = &k_templates[i];
      if (!template_is_gpu(t) || t->op_class != (pass == 0 ? kernel->op_class : SCHEDULE_ANY_CLASS)) continue;
      if (ingot_schedule_template_applies(kernel, target, i)) return t->name;
    }
  return NULL;
}

double ingot_schedule_space_size(const ingot_schedule_space_t* space) {
  double n = 1;
  for (uint32_t i = 0; space && i < space->knob_count; ++i) n *= space->knobs[i].value_count;
  return n;
}

static void append_values(ingot_strbuf_t* sb, const ingot_schedule_knob_space_t* k) {
  ingot_strbuf_append(sb, "[");
  for (uint32_t i = 0; i < k->value_count; ++i) ingot_strbuf_appendf(sb, "%s%lld", i ? ", " : "", (long long)k->values[i]);
  ingot_strbuf_append(sb, "]");
}

/* Checks one given knob against the space; fails naming kernel, template,
 * knob, value and the legal values. */
static ingot_status_t check_knob(const ingot_kernel_t* kernel, const template_info_t* t,
                                 const ingot_schedule_space_t* space, const char* name, int64_t value) {
  const char* kname = kernel->func->name;
  int j = knob_index(name);
  if (j < 0 || !(t->knobs & (1u << j))) {
    ingot_strbuf_t sb = {0};
    for (uint32_t i = 0; i < space->knob_count; ++i) ingot_strbuf_appendf(&sb, "%s%s", i ? ", " : "", space->knobs[i].name);
    ingot_status_t s = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "kernel '%s': template '%s' has no knob '%s' (its knobs: %s)",
                                  kname, t->name, name ? name : "(null)", sb.data ? sb.data : "none");
    ingot_strbuf_free(&sb);
    return s;
  }
  for (uint32_t i = 0; i < space->knob_count; ++i) {
    const ingot_schedule_knob_space_t* k = &space->knobs[i];
    if (strcmp(k->name, name) != 0) continue;
    for (uint32_t v = 0; v < k->value_count; ++v)
      if (k->values[v] == value) return INGOT_OK;
    ingot_strbuf_t sb = {0};
    append_values(&sb, k);
    ingot_status_t s = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                                  "kernel '%s': template '%s' knob %s=%lld is not in its space; legal values: %s",
                                  kname, t->name, name, (long long)value, sb.data);
    ingot_strbuf_free(&sb);
    return s;
  }
  return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "kernel '%s': template '%s' knob '%s' does not apply to this kernel",
                    kname, t->name, name);
}

ingot_status_t ingot_schedule_from_template(const ingot_kernel_t* kernel, const ingot_target_t* target,
                                            const char* template_name, const char* const* knob_names,
                                            const int64_t* knob_values, uint32_t knob_count,
                                            ingot_schedule_t* out) {
  if (!kernel || !kernel->func || !target || !out || (knob_count && (!knob_names || !knob_values)))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_schedule_from_template: missing argument");
  const template_info_t* t;
  plan_t p;
  ingot_schedule_space_t space;
  ingot_status_t st = open_space(kernel, target, template_name, &t, &p, &space);
  if (st != INGOT_OK) return st;
  bool given[SCHEDULE_KNOB_COUNT] = {0};
  for (uint32_t i = 0; i < knob_count; ++i) {
    if ((st = check_knob(kernel, t, &space, knob_names[i], knob_values[i])) != INGOT_OK) return st;
    p.knob[knob_index(knob_names[i])] = knob_values[i];
    given[knob_index(knob_names[i])] = true;
  }
  /* Layout knobs act before lowering: not given, they take the layout the
   * kernel was lowered with; given, they must be that layout (a panel is
   * free when the weight is not packed). */
  for (uint32_t i = 0; i < space.knob_count; ++i) {
    int j = knob_index(space.knobs[i].name);
    if (!k_knobs[j].layout) continue;
    int64_t actual = layout_value(&kernel->layout, (schedule_knob_t)j);
    if (!given[j]) {
      p.knob[j] = actual;
    } else if (p.knob[j] != actual && !(j == SCHEDULE_KNOB_PANEL && !kernel->layout.pack)) {
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                        "kernel '%s': template '%s' layout knob %s=%lld differs from the layout the kernel was "
                        "lowered with (%s=%lld); layout knobs act before lowering (a tuning log sets them for "
                        "compile)", kernel->func->name, t->name, k_knobs[j].name, (long long)p.knob[j],
                        k_knobs[j].name, (long long)actual);
    }
  }

  ingot_schedule_deinit(out);
  ingot_schedule_init(out);
  p.s = out;
  out->template_name = ingot_arena_strdup(&out->arena, t->name);
  for (uint32_t i = 0; i < space.knob_count; ++i)
    ingot_schedule_set_knob(out, space.knobs[i].name, p.knob[knob_index(space.knobs[i].name)]);
  st = t->plan(&p);
  INGOT_VEC_FREE(p.names);
  if (st != INGOT_OK) {
    ingot_schedule_deinit(out);
    ingot_schedule_init(out);
  }
  return st;
}

/* ---- keys ---- */

uint64_t ingot_schedule_key(const ingot_schedule_t* s) {
  ingot_strbuf_t sb = {0};
  ingot_strbuf_appendf(&sb, "template %s\n", s && s->template_name ? s->template_name : "");
  for (uint32_t i = 0; s && i < s->knob_count; ++i) {
    int j = knob_index(s->knob_names[i]);
    bool unpacked = false; /* the panel of an unpacked weight changes nothing */
    for (uint32_t u = 0; u < s->knob_count; ++u)
      unpacked |= !strcmp(s->knob_names[u], "pack") && s->knob_values[u] == 0;
    if (j == SCHEDULE_KNOB_PANEL && unpacked) continue;
    if (j >= 0 && k_knobs[j].layout)
      ingot_strbuf_appendf(&sb, "layout %s=%lld\n", s->knob_names[i], (long long)s->knob_values[i]);
  }
  for (uint32_t i = 0; s && i < s->directive_count; ++i) {
    ingot_schedule_describe_directive(&s->directives[i], &sb);
    ingot_strbuf_append(&sb, "\n");
  }
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; sb.data && sb.data[i]; ++i) h = (h ^ (uint8_t)sb.data[i]) * 1099511628211ull;
  ingot_strbuf_free(&sb);
  return h;
}

/* ---- choice ---- */

/* Whether record r beats `best` (NULL: any does): faster, or as fast and
 * marked "best" by the tuner where `best` is not (a candidate the tuner did
 * not confirm is logged at the time of the best it was measured against). */
static bool record_faster(const tuning_record_t* r, const tuning_record_t* best) {
  if (!best || r->time_ms < best->time_ms) return true;
  return r->time_ms == best->time_ms && r->is_best && !best->is_best;
}

/* Whether record `r` may apply to code for `target_name` tuned for CPU
 * `cpu` (NULL/"": any); when not, why in `why`. */
static bool record_applies(const tuning_record_t* r, const char* target_name, const char* cpu, char* why,
                           size_t why_cap) {
  if (r->error) {
    snprintf(why, why_cap, "an error record (%s)", r->error);
    return false;
  }
  if (strcmp(r->target, target_name) != 0 || (r->fp_target && strcmp(r->fp_target, target_name) != 0)) {
    snprintf(why, why_cap, "other target '%s'", strcmp(r->target, target_name) ? r->target : r->fp_target);
    return false;
  }
  if (cpu && cpu[0] && r->fp_cpu && r->fp_cpu[0] && strcmp(r->fp_cpu, cpu) != 0) {
    snprintf(why, why_cap, "other CPU '%s'", r->fp_cpu);
    return false;
  }
  return true;
}

ingot_status_t ingot_schedule_choose(const ingot_kernel_t* kernel, const ingot_target_t* target,
                                     const ingot_tuning_log_t* log, ingot_schedule_choice_t* choice,
                                     ingot_schedule_t* out) {
  if (!kernel || !kernel->func || !target || !out)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_schedule_choose: missing argument");
  if (choice) {
    choice->tuned = false;
    choice->line = 0;
  }
  const char* name = ingot_schedule_template_default(kernel, target);
  if (!name)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "kernel '%s': no schedule template for op class %d",
                      kernel->func->name, (int)kernel->op_class);
  /* The fastest record for this workload and target (and CPU), of any
   * template of the class, whose knobs its space accepts. */
  if (log && kernel->workload) {
    const char* cpu = choice ? choice->cpu_model : NULL;
    const tuning_record_t* best = NULL;
    char why[512];
    for (uint32_t i = 0; i < log->count; ++i) {
      const tuning_record_t* r = &log->records[i];
      if (strcmp(r->workload, kernel->workload) != 0) continue;
      bool ok = record_applies(r, target->name, cpu, why, sizeof why);
      const template_info_t* t = ok ? find_template(r->template_name) : NULL;
      if (ok && !t) {
        snprintf(why, sizeof why, "unknown template '%s'", r->template_name);
        ok = false;
      } else if (ok && t->op_class != kernel->op_class && t->op_class != SCHEDULE_ANY_CLASS) {
        snprintf(why, sizeof why, "template '%s' serves another op class", r->template_name);
        ok = false;
      } else if (ok && template_is_gpu(t) != ingot_schedule_target_is_gpu(target)) {
        snprintf(why, sizeof why, "template '%s' is for %s targets", r->template_name, template_is_gpu(t) ? "GPU" : "CPU");
        ok = false;
      }
      if (ok && !(best && !record_faster(r, best))) {
        ingot_schedule_t trial;
        ingot_schedule_init(&trial);
        ingot_status_t st = ingot_schedule_from_template(kernel, target, r->template_name, r->knob_names,
                                                         r->knob_values, r->knob_count, &trial);
        ingot_schedule_deinit(&trial);
        if (st == INGOT_OK) {
          best = r;
        } else {
          snprintf(why, sizeof why, "knobs not in the kernel's space: %s", ingot_compiler_error());
          ok = false;
        }
      }
      if (!ok && choice && choice->on_skip) choice->on_skip(choice->skip_self, r->line, why);
    }
    ingot_compiler_error_clear();
    if (best) {
      if (choice) {
        choice->tuned = true;
        choice->line = best->line;
      }
      return ingot_schedule_from_template(kernel, target, best->template_name, best->knob_names, best->knob_values,
                                          best->knob_count, out);
    }
  }
  return ingot_schedule_from_template(kernel, target, name, NULL, NULL, 0, out);
}

/* ---- layout choices from a tuning log ---- */

/* The layout a record sets for a node with `options` (its other knobs are
 * checked once the node is lowered); false when a layout knob is not one
 * the options allow. */
static bool record_layout(const tuning_record_t* r, const ingot_node_layout_options_t* options,
                          ingot_node_layout_t base, ingot_node_layout_t* out) {
  *out = base;
  for (uint32_t i = 0; i < r->knob_count; ++i) {
    int j = knob_index(r->knob_names[i]);
    int64_t v = r->knob_values[i];
    bool ok = true;
    if (j == SCHEDULE_KNOB_PACK) {
      ok = options->panel_count > 0 && (v == 0 || v == 1);
      out->pack = v == 1;
    } else if (j == SCHEDULE_KNOB_PANEL) {
      ok = false;
      for (uint32_t k = 0; k < options->panel_count; ++k) ok |= options->panels[k] == v;
      out->panel = (uint32_t)v;
    } else if (j == SCHEDULE_KNOB_POINTWISE_MATMUL) {
      ok = options->pointwise && (v == 0 || v == 1);
      out->pointwise_matmul = v == 1;
    } else if (j == SCHEDULE_KNOB_CHAINS) {
      ok = false;
      for (uint32_t k = 0; k < options->chain_count; ++k) ok |= options->chains[k] == v;
      out->chains = (uint32_t)v;
    }
    if (!ok) return false;
  }
  return true;
}

static bool same_layout(const ingot_node_layout_t* a, const ingot_node_layout_t* b) {
  return a->pack == b->pack && (!a->pack || a->panel == b->panel) && a->pointwise_matmul == b->pointwise_matmul &&
         a->chains == b->chains && (!a->pack || (a->dot4 == b->dot4 && (!a->dot4 || a->dot_pairs == b->dot_pairs)));
}

/* The layout a target takes where no record says otherwise: the default
 * rule's, except on a GPU: no weight panels (they serve a CPU's vector
 * registers; a GPU's threads read the weight in its ONNX layout); and
 * dot4 words for ConvInteger's panels where the code generator has a byte
 * dot product: llvm on x86-64 (vpdpbusd with AVX512-VNNI; else pmaddwd, and
 * the words hold 2 channels as 16-bit halves, layout.dot_pairs), also for
 * a ConvInteger too short for the default panels
 * (options.dot4_short: it then vectorizes along the output row). Elsewhere
 * (c, AArch64 without one yet) the words would be
 * unpacked byte by byte: on a Zen 4 core the c target's quantized ResNet-18
 * ran about 1.3x slower with them. */
static ingot_node_layout_t target_layout_default(const ingot_target_t* t, const ingot_node_layout_options_t* options) {
  ingot_node_layout_t layout = options->defaults;
  if (ingot_schedule_target_is_gpu(t)) layout.pack = false;
  /* a short integer reduction: dot4 words along the output row, or none */
  if (options->dot4_short && ingot_schedule_target_has_dot4(t)) layout.pack = true;
  layout.dot4 = layout.pack && ingot_schedule_target_has_dot4(t);
  layout.dot_pairs = ingot_schedule_target_dot_pairs(t);
  return layout;
}

static ingot_status_t choose_layout(ingot_layout_chooser_t* base, const ingot_graph_t* graph, uint32_t node,
                                    const ingot_node_layout_options_t* options, ingot_node_layout_t* out) {
  ingot_schedule_layout_chooser_t* c = (ingot_schedule_layout_chooser_t*)base;
  *out = options->defaults;
  if (c->target_count == 0) return INGOT_OK;
  char* workload = NULL;
  ingot_status_t s = ingot_lower_node_workload(graph, node, &workload);
  if (s != INGOT_OK || !workload) return s;
  ingot_node_layout_t first = options->defaults;
  /* 16-bit pair words only where every target takes them: the variants of
   * one bundle share the shapes of their intermediate tensors, and with
   * them the words their convs read (a VNNI variant beside a plain x86 one
   * keeps 4-byte words for both) */
  bool pairs = true;
  for (uint32_t t = 0; t < c->target_count; ++t) pairs &= ingot_schedule_target_dot_pairs(&c->targets[t]);
  for (uint32_t t = 0; t < c->target_count; ++t) {
    /* The fastest record for this workload and target whose layout fits. */
    const tuning_record_t* best = NULL;
    ingot_node_layout_t base = target_layout_default(&c->targets[t], options), candidate;
    base.dot_pairs = pairs;
    ingot_node_layout_t layout = base;
    for (uint32_t i = 0; c->log && i < c->log->count; ++i) {
      const tuning_record_t* r = &c->log->records[i];
      char why[256];
      if (strcmp(r->workload, workload) != 0 || !record_applies(r, c->targets[t].name, c->cpu_model, why, sizeof why))
        continue;
      if (!find_template(r->template_name) || (best && !record_faster(r, best))) continue;
      if (!record_layout(r, options, base, &candidate)) continue;
      best = r;
      layout = candidate;
    }
    if (t == 0) {
      first = layout;
    } else if (!same_layout(&first, &layout)) {
      if (c->lead_on_difference) {
        if (!c->differs) {
          c->differs = true;
          c->differing_node = node;
          c->differing_target = t;
        }
        continue;
      }
      const ingot_node_t* n = &graph->nodes[node];
      s = ingot_fail(INGOT_ERROR_UNSUPPORTED,
                     "node '%s' (%s): the tuning log lays it out differently for targets '%s' and '%s', and one "
                     "optimized graph holds one layout per node; compile the model from its file (the compiler "
                     "then optimizes one graph per target) or load the graph for one target",
                     n->name, ingot_op_name(n->op), c->targets[0].name, c->targets[t].name);
      break;
    }
  }
  free(workload);
  if (s == INGOT_OK) *out = first;
  return s;
}

void ingot_schedule_layout_chooser_init(ingot_schedule_layout_chooser_t* chooser, const ingot_tuning_log_t* log,
                                        const ingot_target_t* targets, uint32_t target_count) {
  memset(chooser, 0, sizeof(*chooser));
  chooser->base.choose = choose_layout;
  chooser->log = log;
  chooser->targets = targets;
  chooser->target_count = target_count;
}
