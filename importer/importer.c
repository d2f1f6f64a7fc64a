/* ONNX importer: ModelProto (protobuf-c) -> ingot graph.
 *
 * Every size in the file is checked against the data before it is used:
 * tensor dims are non-negative, element counts and byte sizes do not overflow,
 * typed data arrays and raw_data hold exactly the declared element count, and
 * external data stays inside the model's folder and inside its file.
 * Tensor data is assumed little-endian on a little-endian host (as ONNX
 * raw_data is); big-endian hosts are not supported. */
#define _GNU_SOURCE
#include "importer/importer.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "graph/graph.h"
#include "onnx.pb-c.h"

#define DEFAULT_MAX_WEIGHT_BYTES ((uint64_t)16 << 30)
#define DEFAULT_MAX_NODES 1000000u
#define DEFAULT_MAX_TENSOR_ELEMENTS ((uint64_t)1 << 32)

typedef struct importer_t {
  ingot_graph_t* g;
  const char* model_dir;      /* NULL: external data refused */
  char* model_dir_real;       /* realpath of model_dir, lazily */
  uint64_t max_weight_bytes;
  uint64_t weight_bytes;
  uint64_t max_tensor_elements;
  /* name -> value id, open addressing; slots hold id + 1 (0 = empty) */
  uint32_t* table;
  uint32_t table_cap;
  uint32_t table_count;
  ingot_import_problem_fn_t on_problem; /* collect-all mode when set */
  void* problem_self;
  uint32_t problems;
  uint32_t max_nodes;
  /* A subgraph's importer: the enclosing scope's, whose values a name not
   * defined here resolves to (NULL for the main graph); how deep it is; the
   * values read from there (captures of g, and the enclosing value of each:
   * heap arrays of capture_count entries). */
  struct importer_t* parent;
  uint32_t depth;
  uint32_t* capture_ids;
  uint32_t* capture_outer;
  uint32_t capture_count, capture_cap;
} importer_t;

/* Subgraphs nest at most this deep (a bound on the importer's recursion). */
#define MAX_SUBGRAPH_DEPTH 32

/* Collect-all mode: reports the error just recorded by ingot_fail (status s)
 * and returns true when the import may go on without the thing it names. */
static bool collect(importer_t* imp, ingot_status_t s, const char* node, const char* op, const char* kind) {
  if (!imp->on_problem || s != INGOT_ERROR_UNSUPPORTED) return false;
  imp->on_problem(imp->problem_self, node, op, kind, ingot_compiler_error());
  ingot_compiler_error_clear();
  imp->problems++;
  return true;
}

/* ---- name table ---- */

static uint64_t hash_name(const char* s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; ++s) h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

static uint32_t name_find(const importer_t* imp, const char* name) {
  if (!imp->table_cap) return INGOT_NO_VALUE;
  uint32_t mask = imp->table_cap - 1;
  for (uint32_t i = (uint32_t)hash_name(name) & mask;; i = (i + 1) & mask) {
    uint32_t slot = imp->table[i];
    if (!slot) return INGOT_NO_VALUE;
    if (strcmp(imp->g->values[slot - 1].name, name) == 0) return slot - 1;
  }
}

static void name_insert_raw(uint32_t* table, uint32_t cap, const char* name, uint32_t id) {
  uint32_t mask = cap - 1;
  uint32_t i = (uint32_t)hash_name(name) & mask;
  while (table[i]) i = (i + 1) & mask;
  table[i] = id + 1;
}

static void name_insert(importer_t* imp, uint32_t id) {
  if ((imp->table_count + 1) * 2 > imp->table_cap) {
    uint32_t cap = imp->table_cap ? imp->table_cap * 2 : 256;
    uint32_t* table = ingot_xcalloc(cap, sizeof(uint32_t));
    for (uint32_t i = 0; i < imp->table_cap; ++i) {
      uint32_t slot = imp->table[i];
      if (slot) name_insert_raw(table, cap, imp->g->values[slot - 1].name, slot - 1);
    }
    free(imp->table);
    imp->table = table;
    imp->table_cap = cap;
  }
  name_insert_raw(imp->table, imp->table_cap, imp->g->values[id].name, id);
  imp->table_count++;
}

static uint32_t add_value(importer_t* imp, const char* name, ingot_value_kind_t kind) {
  uint32_t id = ingot_graph_add_value(imp->g, name, kind);
  name_insert(imp, id);
  return id;
}

/* Looks `name` up in this scope, then in the enclosing ones: a value found
 * there becomes a capture of this subgraph (an INPUT value of the same
 * name, recorded with the enclosing value it stands for). */
static uint32_t resolve(importer_t* imp, const char* name) {
  uint32_t id = name_find(imp, name);
  if (id != INGOT_NO_VALUE || !imp->parent) return id;
  uint32_t outer = resolve(imp->parent, name);
  if (outer == INGOT_NO_VALUE) return INGOT_NO_VALUE;
  id = add_value(imp, name, INGOT_VALUE_INPUT);
  if (imp->capture_count == imp->capture_cap) {
    imp->capture_cap = imp->capture_cap ? imp->capture_cap * 2 : 8;
    imp->capture_ids = ingot_xrealloc(imp->capture_ids, sizeof(uint32_t) * imp->capture_cap);
    imp->capture_outer = ingot_xrealloc(imp->capture_outer, sizeof(uint32_t) * imp->capture_cap);
  }
  imp->capture_ids[imp->capture_count] = id;
  imp->capture_outer[imp->capture_count++] = outer;
  return id;
}

/* A fresh name derived from base, unique in the table. */
static const char* fresh_name(importer_t* imp, const char* base) {
  if (name_find(imp, base) == INGOT_NO_VALUE) return base;
  for (uint32_t k = 1;; ++k) {
    char* candidate = ingot_arena_printf(&imp->g->arena, "%s_%u", base, k);
    if (name_find(imp, candidate) == INGOT_NO_VALUE) return candidate;
  }
}

/* ---- tensors ---- */

static bool map_dtype(int32_t onnx_type, ingot_dtype_t* out) {
  switch (onnx_type) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: *out = INGOT_DTYPE_F32; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: *out = INGOT_DTYPE_U8; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: *out = INGOT_DTYPE_I8; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: *out = INGOT_DTYPE_I32; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: *out = INGOT_DTYPE_I64; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: *out = INGOT_DTYPE_BOOL; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: *out = INGOT_DTYPE_F16; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: *out = INGOT_DTYPE_F64; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: *out = INGOT_DTYPE_I16; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: *out = INGOT_DTYPE_U16; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: *out = INGOT_DTYPE_U32; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64: *out = INGOT_DTYPE_U64; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: *out = INGOT_DTYPE_BF16; return true;
    /* the system package's onnx.proto may predate these (float8: ONNX 1.14, int4: 1.16) */
    case 17: *out = INGOT_DTYPE_F8E4M3FN; return true;
    case 18: *out = INGOT_DTYPE_F8E4M3FNUZ; return true;
    case 19: *out = INGOT_DTYPE_F8E5M2; return true;
    case 20: *out = INGOT_DTYPE_F8E5M2FNUZ; return true;
    case 21: *out = INGOT_DTYPE_U4; return true;
    case 22: *out = INGOT_DTYPE_I4; return true;
    default: return false;
  }
}

static const char* onnx_type_name(int32_t t) {
  static const char* const kNames[] = {"UNDEFINED", "FLOAT",  "UINT8",  "INT8",      "UINT16",     "INT16",
                                       "INT32",     "INT64",  "STRING", "BOOL",      "FLOAT16",    "DOUBLE",
                                       "UINT32",    "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16",
                                       "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
                                       "UINT4",     "INT4",   "FLOAT4E2M1", "FLOAT8E8M0", "UINT2", "INT2"};
  if (t >= 0 && t < (int32_t)(sizeof(kNames) / sizeof(kNames[0]))) return kNames[t];
  return "unknown";
}

static size_t dtype_bytes(ingot_dtype_t t) { return ingot_dtype_size(t); }

/* int4 / uint4 travel packed in ONNX files, two a byte, the first element in
 * the low nibble; Ingot holds one a byte (int4 sign-extended). */
static bool is_4bit(ingot_dtype_t t) { return t == INGOT_DTYPE_I4 || t == INGOT_DTYPE_U4; }

static void unpack_4bit(ingot_dtype_t t, const uint8_t* packed, uint64_t numel, uint8_t* out) {
  for (uint64_t i = 0; i < numel; ++i) {
    uint8_t v = (uint8_t)((packed[i / 2] >> (4 * (i % 2))) & 0xf);
    out[i] = t == INGOT_DTYPE_I4 && v >= 8 ? (uint8_t)(v | 0xf0) : v;
  }
}

static bool parse_u64(const char* s, uint64_t* out) {
  if (!s || !*s) return false;
  uint64_t v = 0;
  for (; *s; ++s) {
    if (*s < '0' || *s > '9') return false;
    if (v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  *out = v;
  return true;
}

static bool path_is_confined(const char* location) {
  if (!location[0] || location[0] == '/' || strchr(location, '\\')) return false;
  const char* p = location;
  while (*p) {
    const char* end = strchr(p, '/');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == 2 && p[0] == '.' && p[1] == '.') return false;
    if (!end) break;
    p = end + 1;
  }
  return true;
}

/* Reads `bytes` bytes of external data for a tensor into `dst`. */
static ingot_status_t read_external(importer_t* imp, const Onnx__TensorProto* t, const char* what, uint64_t bytes,
                                    void* dst) {
  const char* location = NULL;
  uint64_t offset = 0, length = 0;
  bool has_length = false;
  for (size_t i = 0; i < t->n_external_data; ++i) {
    const Onnx__StringStringEntryProto* e = t->external_data[i];
    if (!e || !e->key) continue;
    const char* value = e->value ? e->value : "";
    if (strcmp(e->key, "location") == 0) {
      location = value;
    } else if (strcmp(e->key, "offset") == 0) {
      if (!parse_u64(value, &offset)) {
        return ingot_fail(INGOT_ERROR_CORRUPT, "%s: external data offset '%s' is not a number", what, value);
      }
    } else if (strcmp(e->key, "length") == 0) {
      if (!parse_u64(value, &length)) {
        return ingot_fail(INGOT_ERROR_CORRUPT, "%s: external data length '%s' is not a number", what, value);
      }
      has_length = true;
    }
  }
  if (!location) return ingot_fail(INGOT_ERROR_CORRUPT, "%s: external data without a 'location'", what);
  if (!imp->model_dir) {
    return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                      "%s: external data ('%s') needs the model's folder; import the model from its file", what,
                      location);
  }
  if (!path_is_confined(location)) {
    return ingot_fail(INGOT_ERROR_CORRUPT,
                      "%s: external data location '%s' must be a relative path inside the model's folder (no '..', "
                      "no absolute path)",
                      what, location);
  }
  if (has_length && length != bytes) {
    return ingot_fail(INGOT_ERROR_CORRUPT, "%s: external data length %llu differs from the %llu bytes the shape needs",
                      what, (unsigned long long)length, (unsigned long long)bytes);
  }
  if (!imp->model_dir_real) {
    imp->model_dir_real = realpath(imp->model_dir, NULL);
    if (!imp->model_dir_real) {
      return ingot_fail(INGOT_ERROR_IO, "%s: cannot resolve the model folder '%s': %s", what, imp->model_dir,
                        strerror(errno));
    }
  }
  size_t dir_len = strlen(imp->model_dir_real);
  char* joined = ingot_xmalloc(dir_len + strlen(location) + 2);
  sprintf(joined, "%s/%s", imp->model_dir_real, location);
  char* real = realpath(joined, NULL);
  free(joined);
  if (!real) {
    return ingot_fail(INGOT_ERROR_IO, "%s: cannot open external data '%s': %s", what, location, strerror(errno));
  }
  bool inside = strncmp(real, imp->model_dir_real, dir_len) == 0 &&
                (real[dir_len] == '/' || (dir_len == 1 && imp->model_dir_real[0] == '/'));
  if (!inside) {
    free(real);
    return ingot_fail(INGOT_ERROR_CORRUPT, "%s: external data '%s' resolves outside the model's folder", what,
                      location);
  }
  FILE* f = fopen(real, "rb");
  free(real);
  if (!f) return ingot_fail(INGOT_ERROR_IO, "%s: cannot open external data '%s': %s", what, location, strerror(errno));
  struct stat st;
  ingot_status_t s = INGOT_OK;
  uint64_t end;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    s = ingot_fail(INGOT_ERROR_IO, "%s: external data '%s' is not a regular file", what, location);
  } else if (!ingot_add_u64(offset, bytes, &end) || end > (uint64_t)st.st_size) {
    s = ingot_fail(INGOT_ERROR_CORRUPT, "%s: external data '%s' needs bytes %llu..%llu, the file has %llu", what,
                   location, (unsigned long long)offset, (unsigned long long)(offset + bytes),
                   (unsigned long long)st.st_size);
  } else if (offset > (uint64_t)LONG_MAX || fseeko(f, (off_t)offset, SEEK_SET) != 0 ||
             (bytes && fread(dst, 1, (size_t)bytes, f) != bytes)) {
    s = ingot_fail(INGOT_ERROR_IO, "%s: cannot read external data '%s'", what, location);
  }
  fclose(f);
  return s;
}

/* Converts a TensorProto into a new WEIGHT value named `name`. `what` names
 * the tensor in messages ("initializer 'w'", "node 'c' (Constant)"). */
static ingot_status_t import_tensor(importer_t* imp, const Onnx__TensorProto* t, const char* name, const char* what,
                                    uint32_t* out_id) {
  *out_id = INGOT_NO_VALUE;
  ingot_dtype_t dtype;
  int32_t onnx_type = t->has_data_type ? t->data_type : 0;
  if (!map_dtype(onnx_type, &dtype)) {
    return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                      "%s: data type %s (%d) is not supported (FLOAT, DOUBLE, FLOAT16, INT64, INT32, INT8, UINT8, "
                      "BOOL are)",
                      what, onnx_type_name(onnx_type), onnx_type);
  }
  if (t->n_dims > INGOT_MAX_RANK) {
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "%s: rank %zu is above %u", what, t->n_dims, INGOT_MAX_RANK);
  }
  if (t->segment) return ingot_fail(INGOT_ERROR_UNSUPPORTED, "%s: segmented tensors are not supported", what);
  uint64_t numel = 1;
  int64_t dims[INGOT_MAX_RANK] = {0};
  for (size_t i = 0; i < t->n_dims; ++i) {
    if (t->dims[i] < 0) {
      return ingot_fail(INGOT_ERROR_CORRUPT, "%s: dimension %zu is negative (%lld)", what, i, (long long)t->dims[i]);
    }
    dims[i] = t->dims[i];
    if (!ingot_mul_u64(numel, (uint64_t)t->dims[i], &numel) || numel > (uint64_t)INT64_MAX) {
      return ingot_fail(INGOT_ERROR_CORRUPT, "%s: the element count overflows", what);
    }
  }
  if (numel > imp->max_tensor_elements) {
    return ingot_fail(INGOT_ERROR_LIMIT, "%s: %llu elements, above the limit of %llu", what,
                      (unsigned long long)numel, (unsigned long long)imp->max_tensor_elements);
  }
  size_t es = dtype_bytes(dtype);
  uint64_t bytes, total;
  if (!ingot_mul_u64(numel, es, &bytes) || bytes > (uint64_t)SIZE_MAX / 2) {
    return ingot_fail(INGOT_ERROR_CORRUPT, "%s: the byte size overflows", what);
  }
  if (!ingot_add_u64(imp->weight_bytes, bytes, &total) || total > imp->max_weight_bytes) {
    return ingot_fail(INGOT_ERROR_LIMIT, "%s: weights exceed the limit of %llu bytes", what,
                      (unsigned long long)imp->max_weight_bytes);
  }
  bool external = t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  int sources = (t->has_raw_data && t->raw_data.len > 0) + (t->n_float_data > 0) + (t->n_int32_data > 0) +
                (t->n_int64_data > 0) + (t->n_double_data > 0) + (t->n_uint64_data > 0) + (t->n_string_data > 0) +
                external;
  if (sources > 1) return ingot_fail(INGOT_ERROR_CORRUPT, "%s: data is given in more than one field", what);
  if (sources == 0 && numel > 0) {
    return ingot_fail(INGOT_ERROR_CORRUPT, "%s: no data for %llu elements", what, (unsigned long long)numel);
  }
  uint8_t* data = ingot_xcalloc(1, bytes ? (size_t)bytes : 1);
  ingot_status_t s = INGOT_OK;
#define COUNT_CHECK(n, field)                                                                                   \
  if ((uint64_t)(n) != numel) {                                                                                 \
    s = ingot_fail(INGOT_ERROR_CORRUPT, "%s: %s holds %zu elements, the shape needs %llu", what, field, (size_t)(n), \
                   (unsigned long long)numel);                                                                  \
    goto done;                                                                                                  \
  }
  uint64_t packed_bytes = numel / 2 + numel % 2; /* int4 / uint4 in the file */
  if (external && is_4bit(dtype)) {
    uint8_t* packed = ingot_xcalloc(1, packed_bytes ? (size_t)packed_bytes : 1);
    s = read_external(imp, t, what, packed_bytes, packed);
    if (!s) unpack_4bit(dtype, packed, numel, data);
    free(packed);
  } else if (external) {
    s = read_external(imp, t, what, bytes, data);
  } else if (t->has_raw_data && t->raw_data.len > 0 && is_4bit(dtype)) {
    if (t->raw_data.len != packed_bytes) {
      s = ingot_fail(INGOT_ERROR_CORRUPT, "%s: raw_data has %zu bytes, the shape needs %llu (4-bit values packed two a byte)",
                     what, t->raw_data.len, (unsigned long long)packed_bytes);
      goto done;
    }
    unpack_4bit(dtype, t->raw_data.data, numel, data);
  } else if (t->has_raw_data && t->raw_data.len > 0) {
    if (t->raw_data.len != bytes) {
      s = ingot_fail(INGOT_ERROR_CORRUPT, "%s: raw_data has %zu bytes, the shape needs %llu", what, t->raw_data.len,
                     (unsigned long long)bytes);
      goto done;
    }
    memcpy(data, t->raw_data.data, (size_t)bytes);
    if (dtype == INGOT_DTYPE_BOOL) {
      for (uint64_t i = 0; i < numel; ++i) data[i] = data[i] != 0;
    }
  } else if (t->n_float_data) {
    if (dtype != INGOT_DTYPE_F32) goto wrong_field;
    COUNT_CHECK(t->n_float_data, "float_data");
    memcpy(data, t->float_data, (size_t)bytes);
  } else if (t->n_int64_data) {
    if (dtype != INGOT_DTYPE_I64) goto wrong_field;
    COUNT_CHECK(t->n_int64_data, "int64_data");
    memcpy(data, t->int64_data, (size_t)bytes);
  } else if (t->n_double_data) {
    if (dtype != INGOT_DTYPE_F64) goto wrong_field;
    COUNT_CHECK(t->n_double_data, "double_data");
    memcpy(data, t->double_data, (size_t)bytes);
  } else if (t->n_int32_data && is_4bit(dtype)) {
    /* one packed byte (two values) per int32 */
    COUNT_CHECK(t->n_int32_data * 2 - numel % 2, "int32_data (4-bit values packed two an element)");
    uint8_t* packed = ingot_xcalloc(1, (size_t)t->n_int32_data);
    for (size_t i = 0; i < t->n_int32_data; ++i) {
      if (t->int32_data[i] < 0 || t->int32_data[i] > 255) {
        free(packed);
        goto out_of_range;
      }
      packed[i] = (uint8_t)t->int32_data[i];
    }
    unpack_4bit(dtype, packed, numel, data);
    free(packed);
  } else if (t->n_int32_data) {
    COUNT_CHECK(t->n_int32_data, "int32_data");
    for (uint64_t i = 0; i < numel; ++i) {
      int32_t v = t->int32_data[i];
      switch (dtype) {
        case INGOT_DTYPE_I32: ((int32_t*)data)[i] = v; break;
        case INGOT_DTYPE_I8:
          if (v < -128 || v > 127) goto out_of_range;
          ((int8_t*)data)[i] = (int8_t)v;
          break;
        case INGOT_DTYPE_U8:
        case INGOT_DTYPE_F8E4M3FN: /* float8: the bits */
        case INGOT_DTYPE_F8E4M3FNUZ:
        case INGOT_DTYPE_F8E5M2:
        case INGOT_DTYPE_F8E5M2FNUZ:
          if (v < 0 || v > 255) goto out_of_range;
          data[i] = (uint8_t)v;
          break;
        case INGOT_DTYPE_BOOL: data[i] = v != 0; break;
        case INGOT_DTYPE_F16:
        case INGOT_DTYPE_BF16:
        case INGOT_DTYPE_U16:
          if (v < 0 || v > 65535) goto out_of_range;
          ((uint16_t*)data)[i] = (uint16_t)v;
          break;
        case INGOT_DTYPE_I16:
          if (v < -32768 || v > 32767) goto out_of_range;
          ((int16_t*)data)[i] = (int16_t)v;
          break;
        default: goto wrong_field;
      }
    }
  } else if (t->n_uint64_data) {
    if (dtype != INGOT_DTYPE_U32 && dtype != INGOT_DTYPE_U64) goto wrong_field;
    COUNT_CHECK(t->n_uint64_data, "uint64_data");
    for (uint64_t i = 0; i < numel; ++i) {
      uint64_t v = t->uint64_data[i];
      if (dtype == INGOT_DTYPE_U64) {
        ((uint64_t*)data)[i] = v;
      } else {
        if (v > UINT32_MAX) goto out_of_range;
        ((uint32_t*)data)[i] = (uint32_t)v;
      }
    }
  } else if (t->n_string_data) {
    goto wrong_field;
  }
  goto done;
wrong_field:
  s = ingot_fail(INGOT_ERROR_CORRUPT, "%s: the data field used does not hold %s values", what,
                 onnx_type_name(onnx_type));
  goto done;
out_of_range:
  s = ingot_fail(INGOT_ERROR_CORRUPT, "%s: a data field holds a value out of range for %s", what,
                 onnx_type_name(onnx_type));
done:
#undef COUNT_CHECK
  if (s) {
    free(data);
    return s;
  }
  imp->weight_bytes = total;
  uint32_t id = add_value(imp, name, INGOT_VALUE_WEIGHT);
  ingot_value_t* v = &imp->g->values[id];
  v->dtype = dtype;
  v->rank = (int32_t)t->n_dims;
  memcpy(v->dims, dims, sizeof(dims));
  v->data = data;
  *out_id = id;
  return INGOT_OK;
}

/* ---- attributes ---- */

static ingot_attr_type_t attr_kind(const Onnx__AttributeProto* a) {
  if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED) {
    switch (a->type) {
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: return INGOT_ATTR_FLOAT;
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: return INGOT_ATTR_INT;
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: return INGOT_ATTR_STRING;
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: return INGOT_ATTR_TENSOR;
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: return INGOT_ATTR_FLOATS;
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS: return INGOT_ATTR_INTS;
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH: return INGOT_ATTR_GRAPH;
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: return INGOT_ATTR_STRINGS;
      default: return (ingot_attr_type_t)0;
    }
  }
  /* Old files leave `type` unset: go by the field that is filled. */
  if (a->has_f) return INGOT_ATTR_FLOAT;
  if (a->has_i) return INGOT_ATTR_INT;
  if (a->has_s) return INGOT_ATTR_STRING;
  if (a->t) return INGOT_ATTR_TENSOR;
  if (a->n_floats) return INGOT_ATTR_FLOATS;
  if (a->n_ints) return INGOT_ATTR_INTS;
  if (a->g) return INGOT_ATTR_GRAPH;
  if (a->n_strings) return INGOT_ATTR_STRINGS;
  return (ingot_attr_type_t)0;
}

static ingot_status_t import_graph(importer_t* imp, const Onnx__GraphProto* gp);

/* Imports the GRAPH attribute `a` of node `node_id` as a subgraph that the
 * graph adopts, and makes every value the subgraph reads from the scopes
 * around it an input of the node (appended after its own inputs, each
 * once, at slots from `own_inputs` on: the node's inputs in the file,
 * trailing empty ones included, which are padded with absent values). */
static ingot_status_t import_subgraph(importer_t* imp, const Onnx__AttributeProto* a, uint32_t node_id,
                                      uint32_t own_inputs, const char* node_name, const char* op,
                                      ingot_graph_t** out_graph) {
  *out_graph = NULL;
  if (!a->g) {
    return ingot_fail(INGOT_ERROR_CORRUPT, "node '%s' (%s): graph attribute '%s' holds no graph", node_name, op,
                      a->name);
  }
  if (imp->depth + 1 > MAX_SUBGRAPH_DEPTH) {
    return ingot_fail(INGOT_ERROR_LIMIT, "node '%s' (%s): subgraphs nest deeper than %d", node_name, op,
                      MAX_SUBGRAPH_DEPTH);
  }
  if (a->g->n_node > imp->max_nodes) {
    return ingot_fail(INGOT_ERROR_LIMIT, "node '%s' (%s): subgraph '%s' has %zu nodes, above the limit of %u",
                      node_name, op, a->name, a->g->n_node, imp->max_nodes);
  }
  ingot_graph_t* child = NULL;
  ingot_status_t s = ingot_graph_create(&child);
  if (s) return s;
  ingot_graph_adopt(imp->g, child);
  child->opset = imp->g->opset;
  importer_t sub = {0};
  sub.g = child;
  sub.model_dir = imp->model_dir;
  sub.max_weight_bytes = imp->max_weight_bytes;
  sub.weight_bytes = imp->weight_bytes;
  sub.max_tensor_elements = imp->max_tensor_elements;
  sub.max_nodes = imp->max_nodes;
  sub.on_problem = imp->on_problem;
  sub.problem_self = imp->problem_self;
  sub.parent = imp;
  sub.depth = imp->depth + 1;
  s = import_graph(&sub, a->g);
  imp->weight_bytes = sub.weight_bytes;
  imp->problems += sub.problems;
  if (!s) {
    child->capture_count = sub.capture_count;
    child->captures = INGOT_ARENA_ARRAY(&child->arena, uint32_t, sub.capture_count ? sub.capture_count : 1);
    child->capture_slots = INGOT_ARENA_ARRAY(&child->arena, uint32_t, sub.capture_count ? sub.capture_count : 1);
    for (uint32_t k = 0; k < sub.capture_count && !s; ++k) {
      child->captures[k] = sub.capture_ids[k];
      ingot_node_t* n = &imp->g->nodes[node_id];
      uint32_t slot = own_inputs;
      while (slot < n->input_count && n->inputs[slot] != sub.capture_outer[k]) ++slot;
      if (slot >= n->input_count) {
        if (own_inputs >= INGOT_NODE_INPUTS_MAX || n->input_count >= INGOT_NODE_INPUTS_MAX) {
          s = ingot_fail(INGOT_ERROR_LIMIT,
                         "node '%s' (%s): its subgraphs read more than %d values of the enclosing graph and inputs",
                         node_name, op, INGOT_NODE_INPUTS_MAX);
          break;
        }
        uint32_t count = n->input_count > own_inputs ? n->input_count : own_inputs;
        uint32_t* inputs = INGOT_ARENA_ARRAY(&imp->g->arena, uint32_t, count + 1);
        memcpy(inputs, n->inputs, sizeof(uint32_t) * n->input_count);
        for (uint32_t i = n->input_count; i < count; ++i) inputs[i] = INGOT_NO_VALUE;
        inputs[count] = sub.capture_outer[k];
        slot = count;
        n->inputs = inputs;
        n->input_count = count + 1;
      }
      child->capture_slots[k] = slot;
    }
  } else {
    s = ingot_fail_prefix(s, "node '%s' (%s) attribute '%s'", node_name, op, a->name);
  }
  free(sub.table);
  free(sub.model_dir_real);
  free(sub.capture_ids);
  free(sub.capture_outer);
  if (!s) *out_graph = child;
  return s;
}

static ingot_status_t import_attrs(importer_t* imp, const Onnx__NodeProto* np, uint32_t node_id, const char* node_name,
                                   const char* op) {
  ingot_graph_t* g = imp->g;
  if (np->n_attribute == 0) return INGOT_OK;
  if (np->n_attribute > 4096) {
    return ingot_fail(INGOT_ERROR_LIMIT, "node '%s' (%s): too many attributes (%zu)", node_name, op, np->n_attribute);
  }
  ingot_attr_t* attrs = INGOT_ARENA_ARRAY(&g->arena, ingot_attr_t, np->n_attribute);
  uint32_t count = 0;
  for (size_t i = 0; i < np->n_attribute; ++i) {
    const Onnx__AttributeProto* a = np->attribute[i];
    if (!a || !a->name || !a->name[0]) {
      return ingot_fail(INGOT_ERROR_CORRUPT, "node '%s' (%s): an attribute has no name", node_name, op);
    }
    if (a->ref_attr_name && a->ref_attr_name[0]) {
      return ingot_fail(INGOT_ERROR_UNSUPPORTED, "node '%s' (%s): attribute '%s' refers to a function attribute",
                        node_name, op, a->name);
    }
    for (uint32_t k = 0; k < count; ++k) {
      if (strcmp(attrs[k].name, a->name) == 0) {
        return ingot_fail(INGOT_ERROR_CORRUPT, "node '%s' (%s): attribute '%s' appears twice", node_name, op, a->name);
      }
    }
    ingot_attr_t* out = &attrs[count];
    out->name = ingot_arena_strdup(&g->arena, a->name);
    out->type = attr_kind(a);
    out->tensor = INGOT_NO_VALUE;
    switch (out->type) {
      case INGOT_ATTR_FLOAT: out->f = a->f; break;
      case INGOT_ATTR_INT: out->i = a->i; break;
      case INGOT_ATTR_STRING: {
        if (a->s.len && memchr(a->s.data, 0, a->s.len)) {
          return ingot_fail(INGOT_ERROR_CORRUPT, "node '%s' (%s): attribute '%s' holds a NUL byte", node_name, op,
                            a->name);
        }
        char* s = ingot_arena_alloc(&g->arena, a->s.len + 1);
        if (a->s.len) memcpy(s, a->s.data, a->s.len);
        out->s = s;
        break;
      }
      case INGOT_ATTR_INTS:
        out->count = (uint32_t)a->n_ints;
        out->ints = INGOT_ARENA_ARRAY(&g->arena, int64_t, a->n_ints ? a->n_ints : 1);
        if (a->n_ints) memcpy(out->ints, a->ints, sizeof(int64_t) * a->n_ints);
        break;
      case INGOT_ATTR_FLOATS:
        out->count = (uint32_t)a->n_floats;
        out->floats = INGOT_ARENA_ARRAY(&g->arena, float, a->n_floats ? a->n_floats : 1);
        if (a->n_floats) memcpy(out->floats, a->floats, sizeof(float) * a->n_floats);
        break;
      case INGOT_ATTR_STRINGS:
        out->count = (uint32_t)a->n_strings;
        out->strings = INGOT_ARENA_ARRAY(&g->arena, const char*, a->n_strings ? a->n_strings : 1);
        for (size_t k = 0; k < a->n_strings; ++k) {
          if (a->strings[k].len && memchr(a->strings[k].data, 0, a->strings[k].len)) {
            return ingot_fail(INGOT_ERROR_CORRUPT, "node '%s' (%s): attribute '%s' holds a NUL byte", node_name, op,
                              a->name);
          }
          char* s = ingot_arena_alloc(&g->arena, a->strings[k].len + 1);
          if (a->strings[k].len) memcpy(s, a->strings[k].data, a->strings[k].len);
          out->strings[k] = s;
        }
        break;
      case INGOT_ATTR_TENSOR: {
        if (!a->t) {
          return ingot_fail(INGOT_ERROR_CORRUPT, "node '%s' (%s): tensor attribute '%s' holds no tensor", node_name,
                            op, a->name);
        }
        char* what = ingot_arena_printf(&g->arena, "node '%s' (%s) attribute '%s'", node_name, op, a->name);
        const char* name = fresh_name(imp, ingot_arena_printf(&g->arena, "%s.%s", node_name, a->name));
        uint32_t id;
        ingot_status_t s = import_tensor(imp, a->t, name, what, &id);
        if (s) return s;
        out->tensor = id;
        break;
      }
      case INGOT_ATTR_GRAPH: {
        ingot_status_t s = import_subgraph(imp, a, node_id, (uint32_t)np->n_input, node_name, op, &out->graph);
        if (s) return s;
        break;
      }
      default:
        return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                          "node '%s' (%s): attribute '%s' has a type that is not supported (graph lists, "
                          "tensor lists, sparse tensors, type protos)",
                          node_name, op, a->name);
    }
    ++count;
  }
  g->nodes[node_id].attrs = attrs;
  g->nodes[node_id].attr_count = count;
  return INGOT_OK;
}

/* A Constant node becomes a WEIGHT value named after its output. */
static ingot_status_t import_constant(importer_t* imp, const Onnx__NodeProto* np, const char* node_name) {
  ingot_graph_t* g = imp->g;
  if (np->n_output != 1 || !np->output[0] || !np->output[0][0] || np->n_input != 0) {
    return ingot_fail(INGOT_ERROR_CORRUPT, "node '%s' (Constant): needs no inputs and one named output", node_name);
  }
  const char* out_name = np->output[0];
  if (name_find(imp, out_name) != INGOT_NO_VALUE) {
    return ingot_fail(INGOT_ERROR_CORRUPT, "node '%s' (Constant): output '%s' is defined twice", node_name, out_name);
  }
  if (np->n_attribute != 1 || !np->attribute[0] || !np->attribute[0]->name) {
    return ingot_fail(INGOT_ERROR_CORRUPT, "node '%s' (Constant): needs exactly one value attribute", node_name);
  }
  const Onnx__AttributeProto* a = np->attribute[0];
  char* what = ingot_arena_printf(&g->arena, "node '%s' (Constant)", node_name);
  ingot_attr_type_t kind = attr_kind(a);
  uint32_t id;
  if (strcmp(a->name, "value") == 0 && kind == INGOT_ATTR_TENSOR && a->t) {
    return import_tensor(imp, a->t, out_name, what, &id);
  }
  ingot_dtype_t dtype;
  int32_t rank;
  int64_t dim = 0;
  size_t bytes;
  const void* src;
  float f;
  int64_t i64;
  if (strcmp(a->name, "value_float") == 0 && kind == INGOT_ATTR_FLOAT) {
    f = a->f;
    dtype = INGOT_DTYPE_F32, rank = 0, bytes = 4, src = &f;
  } else if (strcmp(a->name, "value_int") == 0 && kind == INGOT_ATTR_INT) {
    i64 = a->i;
    dtype = INGOT_DTYPE_I64, rank = 0, bytes = 8, src = &i64;
  } else if (strcmp(a->name, "value_floats") == 0 && kind == INGOT_ATTR_FLOATS) {
    dtype = INGOT_DTYPE_F32, rank = 1, dim = (int64_t)a->n_floats, bytes = 4 * a->n_floats, src = a->floats;
  } else if (strcmp(a->name, "value_ints") == 0 && kind == INGOT_ATTR_INTS) {
    dtype = INGOT_DTYPE_I64, rank = 1, dim = (int64_t)a->n_ints, bytes = 8 * a->n_ints, src = a->ints;
  } else {
    return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                      "node '%s' (Constant): attribute '%s' is not supported (value, value_float(s), value_int(s) are)",
                      node_name, a->name);
  }
  if ((uint64_t)dim > imp->max_tensor_elements) {
    return ingot_fail(INGOT_ERROR_LIMIT, "%s: %llu elements, above the limit of %llu", what,
                      (unsigned long long)dim, (unsigned long long)imp->max_tensor_elements);
  }
  uint64_t total;
  if (!ingot_add_u64(imp->weight_bytes, bytes, &total) || total > imp->max_weight_bytes) {
    return ingot_fail(INGOT_ERROR_LIMIT, "%s: weights exceed the limit of %llu bytes", what,
                      (unsigned long long)imp->max_weight_bytes);
  }
  imp->weight_bytes = total;
  void* data = ingot_xmalloc(bytes ? bytes : 1);
  if (bytes) memcpy(data, src, bytes);
  id = add_value(imp, out_name, INGOT_VALUE_WEIGHT);
  ingot_value_t* v = &g->values[id];
  v->dtype = dtype;
  v->rank = rank;
  v->dims[0] = dim;
  v->data = data;
  return INGOT_OK;
}

/* ---- graph inputs ---- */

/* Is `tp` a sequence, or an optional one? */
static bool is_sequence_type(const Onnx__TypeProto* tp) {
  if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE && tp->optional_type) {
    tp = tp->optional_type->elem_type;
  }
  return tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
}

static ingot_status_t import_input(importer_t* imp, const Onnx__ValueInfoProto* vi, uint32_t* out_id) {
  ingot_graph_t* g = imp->g;
  uint32_t id = add_value(imp, vi->name, INGOT_VALUE_INPUT);
  *out_id = id;
  const Onnx__TypeProto* tp = vi->type;
  if (!tp) return INGOT_OK; /* no type: inference reports it */
  if (is_sequence_type(tp)) {
    /* A subgraph's input: a loop-carried sequence (control flow gives it
     * its list, graph/control_flow.c). */
    if (imp->parent) return INGOT_OK;
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "input '%s' is a sequence; a bundle's inputs and outputs are tensors",
                      vi->name);
  }
  if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) {
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "input '%s': only tensor inputs are supported", vi->name);
  }
  const Onnx__TypeProto__Tensor* tt = tp->tensor_type;
  ingot_value_t* v = &g->values[id];
  if (tt->has_elem_type) {
    ingot_dtype_t dtype;
    if (!map_dtype(tt->elem_type, &dtype)) {
      return ingot_fail(INGOT_ERROR_UNSUPPORTED, "input '%s': element type %s (%d) is not supported", vi->name,
                        onnx_type_name(tt->elem_type), tt->elem_type);
    }
    v->dtype = dtype;
  }
  if (!tt->shape) return INGOT_OK; /* unknown rank */
  if (tt->shape->n_dim > INGOT_MAX_RANK) {
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "input '%s': rank %zu is above %u", vi->name, tt->shape->n_dim,
                      INGOT_MAX_RANK);
  }
  v->rank = (int32_t)tt->shape->n_dim;
  uint64_t numel = 1;
  for (size_t i = 0; i < tt->shape->n_dim; ++i) {
    const Onnx__TensorShapeProto__Dimension* d = tt->shape->dim[i];
    v->dims[i] = -1;
    v->dim_names[i] = NULL;
    if (!d) continue;
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
      /* Exporters (Paddle, some Keras) write a dynamic dimension as -1, and
       * ONNX Runtime reads it so: unknown, fixed later with --input-shape. */
      if (d->dim_value < 0) continue;
      v->dims[i] = d->dim_value;
      if (!ingot_mul_u64(numel, (uint64_t)d->dim_value, &numel) || numel > imp->max_tensor_elements) {
        return ingot_fail(INGOT_ERROR_LIMIT, "input '%s': its shape has more than %llu elements", vi->name,
                          (unsigned long long)imp->max_tensor_elements);
      }
    } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param &&
               d->dim_param[0]) {
      v->dim_names[i] = ingot_arena_strdup(&g->arena, d->dim_param);
    }
  }
  return INGOT_OK;
}

/* ---- the model ---- */

static bool default_domain(const char* d) { return !d || !d[0] || strcmp(d, "ai.onnx") == 0; }

static ingot_status_t import_model(importer_t* imp, const Onnx__ModelProto* model) {
  ingot_graph_t* g = imp->g;
  const Onnx__GraphProto* gp = model->graph;
  if (!gp) return ingot_fail(INGOT_ERROR_CORRUPT, "the model has no graph");
  g->name = ingot_arena_strdup(&g->arena, gp->name ? gp->name : "");
  g->producer_name = ingot_arena_strdup(&g->arena, model->producer_name ? model->producer_name : "");
  g->producer_version = ingot_arena_strdup(&g->arena, model->producer_version ? model->producer_version : "");
  g->model_version = model->has_model_version ? model->model_version : 0;
  g->opset = 0;
  for (size_t i = 0; i < model->n_opset_import; ++i) {
    const Onnx__OperatorSetIdProto* o = model->opset_import[i];
    if (o && default_domain(o->domain)) g->opset = o->has_version ? o->version : 0;
  }
  if (g->opset <= 0) {
    /* Collect mode: a model of other domains only (ai.onnx.ml, training)
     * gets each of its nodes reported below. */
    if (imp->on_problem && model->n_opset_import > 0) {
      g->opset = 1;
    } else {
      return ingot_fail(INGOT_ERROR_CORRUPT, "the model imports no ai.onnx opset (opset_import is missing or empty)");
    }
  }
  return import_graph(imp, gp);
}

/* Imports a GraphProto into imp->g: the model's main graph, or a subgraph
 * (imp->parent set) whose names may refer to the enclosing scopes. */
static ingot_status_t import_graph(importer_t* imp, const Onnx__GraphProto* gp) {
  ingot_graph_t* g = imp->g;
  if (gp->n_sparse_initializer) {
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "sparse initializers are not supported");
  }
  /* Initializers. */
  for (size_t i = 0; i < gp->n_initializer; ++i) {
    const Onnx__TensorProto* t = gp->initializer[i];
    if (!t || !t->name || !t->name[0]) return ingot_fail(INGOT_ERROR_CORRUPT, "initializer %zu has no name", i);
    if (name_find(imp, t->name) != INGOT_NO_VALUE) {
      return ingot_fail(INGOT_ERROR_CORRUPT, "initializer '%s' is defined twice", t->name);
    }
    char* what = ingot_arena_printf(&g->arena, "initializer '%s'", t->name);
    uint32_t id;
    ingot_status_t s = import_tensor(imp, t, t->name, what, &id);
    if (s && collect(imp, s, NULL, NULL, "dtype")) {
      add_value(imp, t->name, INGOT_VALUE_INTERMEDIATE); /* defined, never produced */
      continue;
    }
    if (s) return s;
  }
  /* Graph inputs (those that are initializers are weights). */
  g->inputs = INGOT_ARENA_ARRAY(&g->arena, uint32_t, gp->n_input ? gp->n_input : 1);
  g->input_count = 0;
  for (size_t i = 0; i < gp->n_input; ++i) {
    const Onnx__ValueInfoProto* vi = gp->input[i];
    if (!vi || !vi->name || !vi->name[0]) return ingot_fail(INGOT_ERROR_CORRUPT, "graph input %zu has no name", i);
    uint32_t existing = name_find(imp, vi->name);
    if (existing != INGOT_NO_VALUE) {
      if (g->values[existing].kind == INGOT_VALUE_WEIGHT) continue;
      return ingot_fail(INGOT_ERROR_CORRUPT, "graph input '%s' is listed twice", vi->name);
    }
    uint32_t id;
    ingot_status_t s = import_input(imp, vi, &id);
    if (s && collect(imp, s, NULL, NULL, "dtype")) {
      g->values[id].kind = INGOT_VALUE_INTERMEDIATE; /* defined, never produced */
      continue;
    }
    if (s) return s;
    g->inputs[g->input_count++] = id;
  }
  /* Nodes: first define every output (so the file's node order need not be
   * topological), then build the nodes. */
  ingot_op_t* ops = ingot_xcalloc(gp->n_node ? gp->n_node : 1, sizeof(ingot_op_t));
  const char** names = ingot_xcalloc(gp->n_node ? gp->n_node : 1, sizeof(char*));
  ingot_status_t s = INGOT_OK;
  for (size_t i = 0; i < gp->n_node && !s; ++i) {
    const Onnx__NodeProto* np = gp->node[i];
    if (!np || !np->op_type || !np->op_type[0]) {
      s = ingot_fail(INGOT_ERROR_CORRUPT, "node %zu has no op_type", i);
      break;
    }
    const char* name = np->name && np->name[0] ? np->name : ingot_arena_printf(&g->arena, "%s_%zu", np->op_type, i);
    names[i] = name;
    ops[i] = INGOT_OP_COUNT_;
    if (!default_domain(np->domain) && strcmp(np->domain, "com.microsoft") != 0) {
      s = ingot_fail(INGOT_ERROR_UNSUPPORTED,
                     "node '%s' (%s): domain '%s' is not supported (only ai.onnx, and com.microsoft's quantized ops)",
                     name, np->op_type, np->domain);
    } else {
      /* com.microsoft: the ONNX Runtime contrib ops of ops.def's INGOT_OP_DOMAIN rows. */
      ops[i] = ingot_op_from_domain_name(np->domain, np->op_type);
      if (ops[i] == INGOT_OP_COUNT_ && default_domain(np->domain)) {
        s = ingot_fail(INGOT_ERROR_UNSUPPORTED, "node '%s' (%s): operator '%s' is not supported", name, np->op_type,
                       np->op_type);
      } else if (ops[i] == INGOT_OP_COUNT_) {
        s = ingot_fail(INGOT_ERROR_UNSUPPORTED, "node '%s' (%s): operator '%s' of domain '%s' is not supported", name,
                       np->op_type, np->op_type, np->domain);
      }
    }
    if (s && !collect(imp, s, name, np->op_type, "op")) break;
    s = INGOT_OK;
    if (ops[i] == INGOT_OP_CONSTANT) {
      s = import_constant(imp, np, name);
      if (s && collect(imp, s, name, np->op_type, "attribute")) {
        ops[i] = INGOT_OP_COUNT_;
        s = INGOT_OK;
      } else {
        continue;
      }
    }
    for (size_t k = 0; k < np->n_output; ++k) {
      const char* out = np->output[k];
      if (!out || !out[0]) continue;
      if (name_find(imp, out) != INGOT_NO_VALUE) {
        s = ingot_fail(INGOT_ERROR_CORRUPT, "node '%s' (%s): output '%s' is already defined", name, np->op_type, out);
        break;
      }
      add_value(imp, out, INGOT_VALUE_INTERMEDIATE);
    }
  }
  for (size_t i = 0; i < gp->n_node && !s; ++i) {
    const Onnx__NodeProto* np = gp->node[i];
    if (ops[i] == INGOT_OP_CONSTANT || ops[i] == INGOT_OP_COUNT_) continue; /* COUNT_: left out (collect mode) */
    const char* name = names[i];
    int min_in, max_in, min_out, max_out;
    ingot_op_arity(ops[i], &min_in, &max_in, &min_out, &max_out);
    size_t n_in = np->n_input, n_out = np->n_output;
    while (n_in > 0 && (!np->input[n_in - 1] || !np->input[n_in - 1][0])) --n_in;
    while (n_out > 0 && (!np->output[n_out - 1] || !np->output[n_out - 1][0])) --n_out;
    if ((long)n_in < min_in || (long)n_in > max_in || (long)n_out < min_out || (long)n_out > max_out) {
      s = ingot_fail(INGOT_ERROR_CORRUPT, "node '%s' (%s): has %zu inputs and %zu outputs, expected %d..%d and %d..%d",
                     name, np->op_type, n_in, n_out, min_in, max_in, min_out, max_out);
      /* Collect mode: a variant with more inputs or outputs than Ingot
       * handles (training outputs, indices, ...) is reported, and left out. */
      if (collect(imp, INGOT_ERROR_UNSUPPORTED, name, np->op_type, "op")) {
        s = INGOT_OK;
        continue;
      }
      break;
    }
    uint32_t inputs[INGOT_NODE_INPUTS_MAX], outputs[INGOT_NODE_OUTPUTS_MAX]; /* the arity check above bounds both */
    for (size_t k = 0; k < n_in && !s; ++k) {
      const char* in = np->input[k];
      if (!in || !in[0]) {
        if ((long)k < min_in) {
          s = ingot_fail(INGOT_ERROR_CORRUPT, "node '%s' (%s): required input %zu is empty", name, np->op_type, k);
        }
        inputs[k] = INGOT_NO_VALUE;
        continue;
      }
      inputs[k] = resolve(imp, in);
      if (inputs[k] == INGOT_NO_VALUE) {
        s = ingot_fail(INGOT_ERROR_CORRUPT,
                       "node '%s' (%s): input '%s' is not defined (no node output, graph input or initializer has that "
                       "name)",
                       name, np->op_type, in);
      }
    }
    if (s) break;
    for (size_t k = 0; k < n_out; ++k) {
      const char* out = np->output[k];
      if (!out || !out[0]) {
        const char* fresh = fresh_name(imp, ingot_arena_printf(&g->arena, "%s.unused%zu", name, k));
        outputs[k] = add_value(imp, fresh, INGOT_VALUE_INTERMEDIATE);
      } else {
        outputs[k] = name_find(imp, out);
      }
    }
    uint32_t node_id = ingot_graph_add_node(g, ops[i], name, inputs, (uint32_t)n_in, outputs, (uint32_t)n_out);
    s = import_attrs(imp, np, node_id, name, np->op_type);
    if (s && collect(imp, s, name, np->op_type, "attribute")) {
      g->nodes[node_id].dead = true; /* its outputs stay unproduced */
      s = INGOT_OK;
    }
  }
  free(ops);
  free(names);
  if (s) return s;
  /* Outputs. */
  g->outputs = INGOT_ARENA_ARRAY(&g->arena, uint32_t, gp->n_output ? gp->n_output : 1);
  g->output_count = 0;
  if (gp->n_output == 0) return ingot_fail(INGOT_ERROR_CORRUPT, "the graph has no outputs");
  for (size_t i = 0; i < gp->n_output; ++i) {
    const Onnx__ValueInfoProto* vi = gp->output[i];
    if (!vi || !vi->name || !vi->name[0]) return ingot_fail(INGOT_ERROR_CORRUPT, "graph output %zu has no name", i);
    uint32_t id = resolve(imp, vi->name);
    if (id == INGOT_NO_VALUE) {
      return ingot_fail(INGOT_ERROR_CORRUPT, "graph output '%s' is not produced by any node", vi->name);
    }
    if (g->values[id].is_output && !imp->parent) return ingot_fail(INGOT_ERROR_CORRUPT, "graph output '%s' is listed twice", vi->name);
    if (!imp->parent && is_sequence_type(vi->type)) {
      return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                        "graph output '%s' is a sequence; a bundle's inputs and outputs are tensors", vi->name);
    }
    g->values[id].is_output = true;
    g->outputs[g->output_count++] = id;
    /* the declared element type, until inference sets it (a float16 output
     * stays float16 when the graph computes in float32: graph/passes_dtype.c) */
    ingot_dtype_t declared;
    const Onnx__TypeProto* tp = vi->type;
    if (g->values[id].dtype == INGOT_DTYPE_INVALID && tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
        tp->tensor_type && tp->tensor_type->has_elem_type && map_dtype(tp->tensor_type->elem_type, &declared))
      g->values[id].dtype = declared;
  }
  if (imp->problems) return INGOT_OK; /* collect mode: the caller sorts what is left */
  return ingot_graph_sort(g);
}

ingot_status_t ingot_import_onnx_memory(const void* data, size_t size, const char* model_dir,
                                        const ingot_import_options_t* options, ingot_graph_t** out_graph) {
  if (!out_graph) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_import_onnx_memory: out_graph is NULL");
  *out_graph = NULL;
  if (!data && size) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_import_onnx_memory: data is NULL");
  if (size == 0) return ingot_fail(INGOT_ERROR_CORRUPT, "the model is empty (0 bytes)");
  uint64_t max_weight = options && options->max_weight_bytes ? options->max_weight_bytes : DEFAULT_MAX_WEIGHT_BYTES;
  uint32_t max_nodes = options && options->max_nodes ? options->max_nodes : DEFAULT_MAX_NODES;
  Onnx__ModelProto* model = onnx__model_proto__unpack(NULL, size, data);
  if (!model) {
    return ingot_fail(INGOT_ERROR_CORRUPT,
                      "not a valid ONNX model: the protobuf data does not parse (truncated or not an ONNX file)");
  }
  if (model->graph && model->graph->n_node > max_nodes) {
    ingot_status_t s = ingot_fail(INGOT_ERROR_LIMIT, "the model has %zu nodes, above the limit of %u",
                                  model->graph->n_node, max_nodes);
    onnx__model_proto__free_unpacked(model, NULL);
    return s;
  }
  ingot_graph_t* g = NULL;
  ingot_status_t s = ingot_graph_create(&g);
  if (s) {
    onnx__model_proto__free_unpacked(model, NULL);
    return s;
  }
  importer_t imp = {0};
  imp.g = g;
  imp.model_dir = model_dir;
  imp.max_weight_bytes = max_weight;
  imp.max_tensor_elements =
      options && options->max_tensor_elements ? options->max_tensor_elements : DEFAULT_MAX_TENSOR_ELEMENTS;
  imp.on_problem = options ? options->on_problem : NULL;
  imp.max_nodes = max_nodes;
  imp.problem_self = options ? options->problem_self : NULL;
  s = import_model(&imp, model);
  free(imp.table);
  free(imp.model_dir_real);
  onnx__model_proto__free_unpacked(model, NULL);
  if (s) {
    ingot_graph_destroy(g);
    return s;
  }
  *out_graph = g;
  return INGOT_OK;
}

ingot_status_t ingot_import_onnx_file(const char* path, const ingot_import_options_t* options,
                                      ingot_graph_t** out_graph) {
  if (!out_graph) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_import_onnx_file: out_graph is NULL");
  *out_graph = NULL;
  if (!path) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "ingot_import_onnx_file: path is NULL");
  uint8_t* data;
  size_t size;
  ingot_status_t s = ingot_file_read(path, &data, &size);
  if (s) return s;
  const char* slash = strrchr(path, '/');
  char* dir;
  if (!slash) {
    dir = ingot_xstrdup(".");
  } else if (slash == path) {
    dir = ingot_xstrdup("/");
  } else {
    size_t n = (size_t)(slash - path);
    dir = ingot_xmalloc(n + 1);
    memcpy(dir, path, n);
    dir[n] = '\0';
  }
  s = ingot_import_onnx_memory(data, size, dir, options, out_graph);
  free(dir);
  free(data);
  if (s) return ingot_fail_prefix(s, "%s", path);
  return INGOT_OK;
}
