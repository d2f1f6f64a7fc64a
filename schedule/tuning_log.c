/* Tuning logs: JSON lines read with jansson. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule/schedule.h"
#include "schedule_internal.h"

#define TUNING_LOG_VERSION 1

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
  json_t* time = json_object_get(obj, "time_ms");
  if (!json_is_number(time) || json_number_value(time) < 0)
    return ingot_fail(INGOT_ERROR_CORRUPT, "tuning log '%s' line %u: no non-negative number \"time_ms\"", path, line);
  r->time_ms = json_number_value(time);
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
