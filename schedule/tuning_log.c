/* Tuning logs: JSON lines read with jansson. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule/schedule.h"
#include "schedule_internal.h"

#define TUNING_LOG_VERSION INGOT_TUNING_LOG_VERSION

static ingot_status_t parse_record(ingot_tuning_log_t* log, const char* path, uint32_t line, json_t* obj,
                                   tuning_record_t* r, bool* out_skip) {
  *out_skip = false;
  if (!json_is_object(obj))
    return ingot_fail(INGOT_ERROR_CORRUPT, "tuning log '%s' line %u: not a JSON object", path, line);
  json_t* version = json_object_get(obj, "version");
  if (!json_is_integer(version))
    return ingot_fail(INGOT_ERROR_CORRUPT, "tuning log '%s' line %u: no integer \"version\"", path, line);
  if (json_integer_value(version) != TUNING_LOG_VERSION) {
    *out_skip = true;
    return INGOT_OK;
  }
  static const char* const k_strings[3] = {"workload", "target", "template"};
  const char** fields[3] = {&r->workload, &r->target, &r->template_name};
  for (int i = 0; i < 3; ++i) {
    json_t* v = json_object_get(obj, k_strings[i]);
    if (!json_is_string(v))
      return ingot_fail(INGOT_ERROR_CORRUPT, "tuning log '%s' line %u: no string \"%s\"", path, line, k_strings[i]);
    *fields[i] = ingot_arena_strdup(&log->arena, json_string_value(v));
  }
  r->line = line;
  json_t* error = json_object_get(obj, "error");
  if (error && !json_is_string(error))
    return ingot_fail(INGOT_ERROR_CORRUPT, "tuning log '%s' line %u: \"error\" is not a string", path, line);
  if (error) r->error = ingot_arena_strdup(&log->arena, json_string_value(error));
  json_t* is_default = json_object_get(obj, "default");
  if (is_default && !json_is_boolean(is_default))
    return ingot_fail(INGOT_ERROR_CORRUPT, "tuning log '%s' line %u: \"default\" is not true or false", path, line);
  r->is_default = json_is_true(is_default);
  json_t* is_best = json_object_get(obj, "best");
  if (is_best && !json_is_boolean(is_best))
    return ingot_fail(INGOT_ERROR_CORRUPT, "tuning log '%s' line %u: \"best\" is not true or false", path, line);
  r->is_best = json_is_true(is_best);
  json_t* time = json_object_get(obj, "time_ms");
  if (error && !time) {
    r->time_ms = 0;
  } else if (!json_is_number(time) || json_number_value(time) < 0) {
    return ingot_fail(INGOT_ERROR_CORRUPT, "tuning log '%s' line %u: no non-negative number \"time_ms\"", path, line);
  } else {
    r->time_ms = json_number_value(time);
  }
  json_t* fp = json_object_get(obj, "fingerprint");
  if (fp) {
    if (!json_is_object(fp))
      return ingot_fail(INGOT_ERROR_CORRUPT, "tuning log '%s' line %u: \"fingerprint\" is not an object", path, line);
    static const char* const k_fp[2] = {"target", "cpu"};
    const char** fp_fields[2] = {&r->fp_target, &r->fp_cpu};
    for (int i = 0; i < 2; ++i) {
      json_t* v = json_object_get(fp, k_fp[i]);
      if (v && !json_is_string(v))
        return ingot_fail(INGOT_ERROR_CORRUPT, "tuning log '%s' line %u: fingerprint \"%s\" is not a string", path,
                          line, k_fp[i]);
      if (v) *fp_fields[i] = ingot_arena_strdup(&log->arena, json_string_value(v));
    }
  }
  json_t* knobs = json_object_get(obj, "knobs");
  if (!json_is_object(knobs))
    return ingot_fail(INGOT_ERROR_CORRUPT, "tuning log '%s' line %u: no object \"knobs\"", path, line);
  const char* key;
  json_t* value;
  json_object_foreach(knobs, key, value) {
    if (!json_is_integer(value))
      return ingot_fail(INGOT_ERROR_CORRUPT, "tuning log '%s' line %u: knob \"%s\" is not an integer", path, line, key);
    if (r->knob_count == INGOT_MAX_KNOBS)
      return ingot_fail(INGOT_ERROR_CORRUPT, "tuning log '%s' line %u: more than %d knobs", path, line, INGOT_MAX_KNOBS);
    r->knob_names[r->knob_count] = ingot_arena_strdup(&log->arena, key);
    r->knob_values[r->knob_count++] = json_integer_value(value);
  }
  return INGOT_OK;
}

/* Calls `fn` with each non-blank line of the file parsed as JSON (the
 * object is the callee's to keep or decref) and its line number; stops at
 * the first failure. A line that is not JSON fails naming file and line. */
typedef ingot_status_t (*json_line_fn_t)(void* self, const char* path, uint32_t line, json_t* obj);

static ingot_status_t read_json_buffer(const char* path, const uint8_t* data, size_t size, json_line_fn_t fn,
                                       void* self) {
  ingot_status_t st = INGOT_OK;
  size_t pos = 0;
  uint32_t line = 0;
  while (pos < size && st == INGOT_OK) {
    size_t end = pos;
    while (end < size && data[end] != '\n') ++end;
    ++line;
    size_t a = pos, b = end;
    pos = end + 1;
    while (a < b && (data[a] == ' ' || data[a] == '\t' || data[a] == '\r')) ++a;
    while (b > a && (data[b - 1] == ' ' || data[b - 1] == '\t' || data[b - 1] == '\r')) --b;
    if (a == b) continue;
    json_error_t err;
    json_t* obj = json_loadb((const char*)data + a, b - a, 0, &err);
    if (!obj) {
      st = ingot_fail(INGOT_ERROR_CORRUPT, "tuning log '%s' line %u: %s", path, line, err.text);
      break;
    }
    st = fn(self, path, line, obj);
  }
  return st;
}

static ingot_status_t read_json_lines(const char* path, json_line_fn_t fn, void* self) {
  uint8_t* data = NULL;
  size_t size = 0;
  ingot_status_t st = ingot_file_read(path, &data, &size);
  if (st != INGOT_OK) return st;
  st = read_json_buffer(path, data, size, fn, self);
  free(data);
  return st;
}

typedef struct load_state_t {
  ingot_tuning_log_t* log;
  INGOT_VEC(tuning_record_t) records;
} load_state_t;

static ingot_status_t load_line(void* self, const char* path, uint32_t line, json_t* obj) {
  load_state_t* ls = self;
  tuning_record_t r;
  memset(&r, 0, sizeof(r));
  bool skip = false;
  ingot_status_t st = parse_record(ls->log, path, line, obj, &r, &skip);
  json_decref(obj);
  if (st == INGOT_OK && !skip) INGOT_VEC_PUSH(ls->records, r);
  return st;
}

/* Loads a log from the file at `path`, or with `data`, from memory (`path`
 * then names it in messages). */
static ingot_status_t load(const char* path, const uint8_t* data, size_t size, ingot_tuning_log_t** out_log) {
  if (!out_log) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_tuning_log_load: no output");
  *out_log = NULL;
  if (!path) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_tuning_log_load: no path");
  ingot_tuning_log_t* log = ingot_xcalloc(1, sizeof(*log));
  ingot_arena_init(&log->arena, ingot_allocator_system());
  load_state_t ls = {.log = log};
  ingot_status_t st = data ? read_json_buffer(path, data, size, load_line, &ls) : read_json_lines(path, load_line, &ls);
  if (st != INGOT_OK) {
    INGOT_VEC_FREE(ls.records);
    ingot_tuning_log_destroy(log);
    return st;
  }
  log->count = (uint32_t)ls.records.count;
  log->records = INGOT_ARENA_ARRAY(&log->arena, tuning_record_t, ls.records.count ? ls.records.count : 1);
  if (ls.records.count) memcpy(log->records, ls.records.data, ls.records.count * sizeof(tuning_record_t));
  INGOT_VEC_FREE(ls.records);
  *out_log = log;
  return INGOT_OK;
}

ingot_status_t ingot_tuning_log_load(const char* path, ingot_tuning_log_t** out_log) {
  return load(path, NULL, 0, out_log);
}

/* The pre-tuned logs (schedule/logs/NAME.jsonl), built in by CMake
 * (pretuned_logs.c, generated). */
typedef struct pretuned_log_t {
  const char* name;
  const unsigned char* data;
  size_t size;
} pretuned_log_t;
extern const pretuned_log_t ingot_pretuned_logs[];
extern const unsigned ingot_pretuned_log_count;

ingot_status_t ingot_tuning_log_builtin(ingot_tuning_log_t** out_log) {
  if (!out_log) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_tuning_log_builtin: no output");
  size_t total = 0;
  for (unsigned i = 0; i < ingot_pretuned_log_count; ++i) total += ingot_pretuned_logs[i].size + 1;
  /* one log of all of them: a record applies only to its own target and CPU */
  uint8_t* all = ingot_xmalloc(total + 1);
  size_t used = 0;
  for (unsigned i = 0; i < ingot_pretuned_log_count; ++i) {
    memcpy(all + used, ingot_pretuned_logs[i].data, ingot_pretuned_logs[i].size);
    used += ingot_pretuned_logs[i].size;
    all[used++] = '\n';
  }
  ingot_status_t st = load("schedule/logs (built in)", all, used, out_log);
  free(all);
  return st;
}

uint32_t ingot_tuning_log_builtin_names(const char** out_names, uint32_t capacity) {
  uint32_t n = 0;
  for (unsigned i = 0; i < ingot_pretuned_log_count; ++i)
    if (n < capacity && out_names) out_names[n++] = ingot_pretuned_logs[i].name;
  return (uint32_t)ingot_pretuned_log_count;
}

void ingot_tuning_log_destroy(ingot_tuning_log_t* log) {
  if (!log) return;
  ingot_arena_deinit(&log->arena);
  free(log);
}

/* ---- writing ---- */

static ingot_status_t append_json(json_t* obj, ingot_strbuf_t* sb) {
  char* text = obj ? json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9)) : NULL;
  json_decref(obj);
  if (!text) return ingot_fail(INGOT_ERROR_OUT_OF_MEMORY, "tuning log: cannot format JSON");
  ingot_strbuf_append(sb, text);
  free(text);
  return INGOT_OK;
}

ingot_status_t ingot_tuning_log_format_record(const char* workload, const char* target,
                                              const ingot_schedule_t* schedule, double time_ms,
                                              const ingot_tuning_fingerprint_t* fingerprint, ingot_strbuf_t* sb) {
  if (!workload || !target || !schedule || !schedule->template_name || !fingerprint || !sb || !(time_ms >= 0))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_tuning_log_format_record: missing argument");
  ingot_tuning_entry_t e;
  memset(&e, 0, sizeof(e));
  e.workload = workload;
  e.target = target;
  e.template_name = schedule->template_name;
  for (uint32_t i = 0; i < schedule->knob_count && i < INGOT_MAX_KNOBS; ++i) {
    e.knob_names[i] = schedule->knob_names[i];
    e.knob_values[i] = schedule->knob_values[i];
  }
  e.knob_count = schedule->knob_count < INGOT_MAX_KNOBS ? schedule->knob_count : INGOT_MAX_KNOBS;
  e.time_ms = time_ms;
  return ingot_tuning_log_format_entry(&e, fingerprint, sb);
}

uint32_t ingot_tuning_log_count(const ingot_tuning_log_t* log) { return log ? log->count : 0; }

void ingot_tuning_log_entry(const ingot_tuning_log_t* log, uint32_t index, ingot_tuning_entry_t* out) {
  memset(out, 0, sizeof(*out));
  if (!log || index >= log->count) return;
  const tuning_record_t* r = &log->records[index];
  out->workload = r->workload;
  out->target = r->target;
  out->template_name = r->template_name;
  for (uint32_t k = 0; k < r->knob_count; ++k) {
    out->knob_names[k] = r->knob_names[k];
    out->knob_values[k] = r->knob_values[k];
  }
  out->knob_count = r->knob_count;
  out->time_ms = r->time_ms;
  out->is_default = r->is_default;
  out->error = r->error;
  out->cpu_model = r->fp_cpu;
  out->line = r->line;
}

ingot_status_t ingot_tuning_log_format_entry(const ingot_tuning_entry_t* e,
                                             const ingot_tuning_fingerprint_t* fingerprint, ingot_strbuf_t* sb) {
  if (!e || !e->workload || !e->target || !e->template_name || !fingerprint || !sb ||
      (!e->error && !(e->time_ms >= 0)))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_tuning_log_format_entry: missing argument");
  json_t* obj = json_object();
  json_t* knobs = json_object();
  for (uint32_t i = 0; i < e->knob_count; ++i) json_object_set_new(knobs, e->knob_names[i], json_integer(e->knob_values[i]));
  json_object_set_new(obj, "version", json_integer(TUNING_LOG_VERSION));
  json_object_set_new(obj, "workload", json_string(e->workload));
  json_object_set_new(obj, "target", json_string(e->target));
  json_object_set_new(obj, "template", json_string(e->template_name));
  json_object_set_new(obj, "knobs", knobs);
  if (e->error)
    json_object_set_new(obj, "error", json_string(e->error));
  else
    json_object_set_new(obj, "time_ms", json_real(e->time_ms));
  if (e->is_default) json_object_set_new(obj, "default", json_true());
  if (e->best) json_object_set_new(obj, "best", json_true());
  if (e->has_ratio) {
    json_t* ratio = json_array();
    json_array_append_new(ratio, json_real(e->ratio));
    json_array_append_new(ratio, json_real(e->ratio_lo));
    json_array_append_new(ratio, json_real(e->ratio_hi));
    json_object_set_new(obj, "ratio", ratio);
  }
  json_t* fp = json_object();
  json_object_set_new(fp, "target", json_string(e->target));
  json_object_set_new(fp, "cpu", json_string(fingerprint->cpu_model ? fingerprint->cpu_model : ""));
  json_object_set_new(fp, "cpu_features", json_string(fingerprint->cpu_features ? fingerprint->cpu_features : ""));
  json_object_set_new(fp, "ingot", json_string(fingerprint->ingot_version ? fingerprint->ingot_version : ""));
  json_object_set_new(fp, "log_version", json_integer(TUNING_LOG_VERSION));
  json_object_set_new(obj, "fingerprint", fp);
  return append_json(obj, sb);
}

ingot_status_t ingot_schedule_space_format(const ingot_kernel_t* kernel, const ingot_target_t* target,
                                           const char* template_name, ingot_strbuf_t* sb) {
  if (!sb) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_schedule_space_format: no output");
  ingot_schedule_space_t space;
  ingot_status_t s = ingot_schedule_space(kernel, target, template_name, &space);
  if (s != INGOT_OK) return s;
  json_t* obj = json_object();
  json_t* knobs = json_object();
  json_t* values = json_object();
  for (uint32_t i = 0; i < space.knob_count; ++i) {
    const ingot_schedule_knob_space_t* k = &space.knobs[i];
    json_object_set_new(knobs, k->name, json_integer(k->default_value));
    json_t* list = json_array();
    for (uint32_t v = 0; v < k->value_count; ++v) json_array_append_new(list, json_integer(k->values[v]));
    json_object_set_new(values, k->name, list);
  }
  json_object_set_new(obj, "workload", json_string(kernel->workload ? kernel->workload : kernel->func->name));
  json_object_set_new(obj, "target", json_string(target->name));
  json_object_set_new(obj, "template", json_string(space.template_name));
  json_object_set_new(obj, "log_version", json_integer(TUNING_LOG_VERSION));
  json_object_set_new(obj, "knobs", knobs);
  json_object_set_new(obj, "space", values);
  return append_json(obj, sb);
}

/* ---- whole-log operations (`ingot log`) ---- */

/* One line of a log as read: its record fields (parse_record checked them)
 * and its canonical text (keys sorted), which is what is written back. */
typedef struct raw_record_t {
  tuning_record_t r;
  bool other_version;  /* a record of another log version: merged, not counted */
  char* text;          /* heap */
  uint32_t order;      /* index in reading order */
} raw_record_t;

typedef struct raw_log_t {
  ingot_tuning_log_t scratch;  /* the arena the fields live in */
  INGOT_VEC(raw_record_t) records;
} raw_log_t;

static ingot_status_t raw_line(void* self, const char* path, uint32_t line, json_t* obj) {
  raw_log_t* raw = self;
  raw_record_t rr;
  memset(&rr, 0, sizeof(rr));
  bool skip = false;
  ingot_status_t st = parse_record(&raw->scratch, path, line, obj, &rr.r, &skip);
  if (st == INGOT_OK && skip) {
    /* Another version: kept as it is, keyed by whatever names it has. */
    json_t* w = json_object_get(obj, "workload");
    json_t* t = json_object_get(obj, "target");
    rr.r.workload = ingot_arena_strdup(&raw->scratch.arena, json_is_string(w) ? json_string_value(w) : "");
    rr.r.target = ingot_arena_strdup(&raw->scratch.arena, json_is_string(t) ? json_string_value(t) : "");
    rr.r.line = line;
    rr.other_version = true;
  }
  if (st == INGOT_OK) {
    rr.text = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(15));
    if (!rr.text) st = ingot_fail(INGOT_ERROR_OUT_OF_MEMORY, "tuning log '%s' line %u: cannot format", path, line);
  }
  json_decref(obj);
  if (st == INGOT_OK) {
    rr.order = (uint32_t)raw->records.count;
    INGOT_VEC_PUSH(raw->records, rr);
  }
  return st;
}

static void raw_log_free(raw_log_t* raw) {
  for (size_t i = 0; i < raw->records.count; ++i) free(raw->records.data[i].text);
  INGOT_VEC_FREE(raw->records);
  ingot_arena_deinit(&raw->scratch.arena);
}

static ingot_status_t raw_log_read(const char* const* paths, uint32_t path_count, raw_log_t* raw) {
  memset(raw, 0, sizeof(*raw));
  ingot_arena_init(&raw->scratch.arena, ingot_allocator_system());
  ingot_status_t st = INGOT_OK;
  for (uint32_t i = 0; i < path_count && st == INGOT_OK; ++i) {
    if (!paths[i]) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "tuning log: no path");
    st = read_json_lines(paths[i], raw_line, raw);
  }
  return st;
}

/* Key order: workload, target; then usable records before errors and
 * other versions, faster first, of equal times the one marked "best";
 * then the canonical text. */
static int raw_compare(const void* pa, const void* pb) {
  const raw_record_t* a = pa;
  const raw_record_t* b = pb;
  int c = strcmp(a->r.workload, b->r.workload);
  if (!c) c = strcmp(a->r.target, b->r.target);
  if (c) return c;
  int ua = a->other_version ? 2 : a->r.error ? 1 : 0, ub = b->other_version ? 2 : b->r.error ? 1 : 0;
  if (ua != ub) return ua - ub;
  if (a->r.time_ms != b->r.time_ms) return a->r.time_ms < b->r.time_ms ? -1 : 1;
  if (a->r.is_best != b->r.is_best) return a->r.is_best ? -1 : 1;
  return strcmp(a->text, b->text);
}

static bool same_key(const raw_record_t* a, const raw_record_t* b) {
  return strcmp(a->r.workload, b->r.workload) == 0 && strcmp(a->r.target, b->r.target) == 0;
}

ingot_status_t ingot_tuning_log_merge(const char* const* paths, uint32_t path_count, ingot_strbuf_t* sb) {
  if (!paths || !sb) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_tuning_log_merge: missing argument");
  raw_log_t raw;
  ingot_status_t st = raw_log_read(paths, path_count, &raw);
  if (st == INGOT_OK && raw.records.count) {
    qsort(raw.records.data, raw.records.count, sizeof(raw_record_t), raw_compare);
    for (size_t i = 0; i < raw.records.count; ++i) {
      if (i && strcmp(raw.records.data[i].text, raw.records.data[i - 1].text) == 0) continue;
      ingot_strbuf_append(sb, raw.records.data[i].text);
      ingot_strbuf_append(sb, "\n");
    }
  }
  if (!sb->data) ingot_strbuf_append(sb, "");
  raw_log_free(&raw);
  return st;
}

ingot_status_t ingot_tuning_log_best(const char* path, ingot_strbuf_t* sb) {
  if (!path || !sb) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_tuning_log_best: missing argument");
  raw_log_t raw;
  ingot_status_t st = raw_log_read(&path, 1, &raw);
  if (st == INGOT_OK && raw.records.count) {
    qsort(raw.records.data, raw.records.count, sizeof(raw_record_t), raw_compare);
    for (size_t i = 0; i < raw.records.count; ++i) {
      const raw_record_t* r = &raw.records.data[i];
      if (i && same_key(r, &raw.records.data[i - 1])) continue;
      if (r->r.error || r->other_version) continue; /* the key has no usable record */
      ingot_strbuf_append(sb, r->text);
      ingot_strbuf_append(sb, "\n");
    }
  }
  if (!sb->data) ingot_strbuf_append(sb, "");
  raw_log_free(&raw);
  return st;
}

typedef struct key_stats_t {
  const char* workload;
  const char* target;
  uint32_t records, errors;
  double best_ms, default_ms; /* < 0: none */
  uint32_t best_line;
} key_stats_t;

ingot_status_t ingot_tuning_log_stats(const char* path, bool json, ingot_strbuf_t* sb) {
  if (!path || !sb) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_tuning_log_stats: missing argument");
  raw_log_t raw;
  ingot_status_t st = raw_log_read(&path, 1, &raw);
  if (st != INGOT_OK) {
    raw_log_free(&raw);
    return st;
  }
  INGOT_VEC(key_stats_t) keys = {0};
  uint32_t other_version = 0;
  for (size_t i = 0; i < raw.records.count; ++i) {
    const raw_record_t* rr = &raw.records.data[i];
    if (rr->other_version) {
      ++other_version;
      continue;
    }
    key_stats_t* k = NULL;
    for (size_t j = 0; j < keys.count && !k; ++j)
      if (!strcmp(keys.data[j].workload, rr->r.workload) && !strcmp(keys.data[j].target, rr->r.target))
        k = &keys.data[j];
    if (!k) {
      key_stats_t fresh = {.workload = rr->r.workload, .target = rr->r.target, .best_ms = -1, .default_ms = -1};
      INGOT_VEC_PUSH(keys, fresh);
      k = &keys.data[keys.count - 1];
    }
    ++k->records;
    if (rr->r.error) {
      ++k->errors;
      continue;
    }
    if (k->best_ms < 0 || rr->r.time_ms < k->best_ms) {
      k->best_ms = rr->r.time_ms;
      k->best_line = rr->r.line;
    }
    if (rr->r.is_default && (k->default_ms < 0 || rr->r.time_ms < k->default_ms)) k->default_ms = rr->r.time_ms;
  }
  if (json) {
    json_t* obj = json_object();
    json_object_set_new(obj, "log", json_string(path));
    json_object_set_new(obj, "records", json_integer((json_int_t)raw.records.count));
    json_object_set_new(obj, "other_version", json_integer(other_version));
    json_t* list = json_array();
    for (size_t j = 0; j < keys.count; ++j) {
      const key_stats_t* k = &keys.data[j];
      json_t* o = json_object();
      json_object_set_new(o, "workload", json_string(k->workload));
      json_object_set_new(o, "target", json_string(k->target));
      json_object_set_new(o, "records", json_integer(k->records));
      json_object_set_new(o, "errors", json_integer(k->errors));
      json_object_set_new(o, "best_ms", k->best_ms >= 0 ? json_real(k->best_ms) : json_null());
      json_object_set_new(o, "best_line", k->best_ms >= 0 ? json_integer(k->best_line) : json_null());
      json_object_set_new(o, "default_ms", k->default_ms >= 0 ? json_real(k->default_ms) : json_null());
      json_object_set_new(o, "speedup", k->default_ms >= 0 && k->best_ms > 0 ? json_real(k->default_ms / k->best_ms)
                                                                              : json_null());
      json_array_append_new(list, o);
    }
    json_object_set_new(obj, "workloads", list);
    st = append_json(obj, sb);
    ingot_strbuf_append(sb, "\n");
  } else {
    ingot_strbuf_appendf(sb, "%s: %zu records, %zu workload/target pairs", path, raw.records.count, keys.count);
    if (other_version) ingot_strbuf_appendf(sb, ", %u of another log version (ignored)", other_version);
    ingot_strbuf_append(sb, "\n");
    for (size_t j = 0; j < keys.count; ++j) {
      const key_stats_t* k = &keys.data[j];
      ingot_strbuf_appendf(sb, "  %s | %s: %u record%s", k->workload, k->target, k->records, k->records == 1 ? "" : "s");
      if (k->best_ms >= 0) ingot_strbuf_appendf(sb, ", best %.6g ms (line %u)", k->best_ms, k->best_line);
      if (k->default_ms >= 0) {
        ingot_strbuf_appendf(sb, ", default %.6g ms", k->default_ms);
        if (k->best_ms > 0) ingot_strbuf_appendf(sb, " (%.2fx)", k->default_ms / k->best_ms);
      }
      if (k->errors) ingot_strbuf_appendf(sb, ", %u error%s", k->errors, k->errors == 1 ? "" : "s");
      ingot_strbuf_append(sb, "\n");
    }
  }
  INGOT_VEC_FREE(keys);
  raw_log_free(&raw);
  return st;
}
