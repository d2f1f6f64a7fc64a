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

ingot_status_t ingot_tuning_log_load(const char* path, ingot_tuning_log_t** out_log) {
  if (!out_log) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_tuning_log_load: no output");
  *out_log = NULL;
  if (!path) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_tuning_log_load: no path");
  uint8_t* data = NULL;
  size_t size = 0;
  ingot_status_t st = ingot_file_read(path, &data, &size);
  if (st != INGOT_OK) return st;

  ingot_tuning_log_t* log = ingot_xcalloc(1, sizeof(*log));
  ingot_arena_init(&log->arena, ingot_allocator_system());
  INGOT_VEC(tuning_record_t) records = {0};
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
    tuning_record_t r;
    memset(&r, 0, sizeof(r));
    bool skip = false;
    st = parse_record(log, path, line, obj, &r, &skip);
    json_decref(obj);
    if (st == INGOT_OK && !skip) INGOT_VEC_PUSH(records, r);
  }
  free(data);
  if (st != INGOT_OK) {
    INGOT_VEC_FREE(records);
    ingot_tuning_log_destroy(log);
    return st;
  }
  log->count = (uint32_t)records.count;
  log->records = INGOT_ARENA_ARRAY(&log->arena, tuning_record_t, records.count ? records.count : 1);
  if (records.count) memcpy(log->records, records.data, records.count * sizeof(tuning_record_t));
  INGOT_VEC_FREE(records);
  *out_log = log;
  return INGOT_OK;
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
  json_t* obj = json_object();
  json_t* knobs = json_object();
  for (uint32_t i = 0; i < schedule->knob_count; ++i)
    json_object_set_new(knobs, schedule->knob_names[i], json_integer(schedule->knob_values[i]));
  json_object_set_new(obj, "version", json_integer(TUNING_LOG_VERSION));
  json_object_set_new(obj, "workload", json_string(workload));
  json_object_set_new(obj, "target", json_string(target));
  json_object_set_new(obj, "template", json_string(schedule->template_name));
  json_object_set_new(obj, "knobs", knobs);
  json_object_set_new(obj, "time_ms", json_real(time_ms));
  json_t* fp = json_object();
  json_object_set_new(fp, "target", json_string(target));
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
