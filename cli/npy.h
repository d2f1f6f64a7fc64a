/* Private to cli/: NumPy .npy files in and out, and uncompressed .npz archives.
 *
 * Reading accepts format versions 1.0, 2.0 and 3.0, C order only, and the
 * dtypes '<f4' '<f8' '<f2' '<i8' '<i4' '|u1' '|i1' '|b1'. The header dict is
 * checked strictly (exactly the keys descr, fortran_order, shape) and the shape
 * must account for every data byte, computed with overflow checks.
 *
 * Errors: functions return ingot_status_t and record a message with
 * ingot_fail() (base/base.h) that names the file and what is wrong. */
#ifndef INGOT_CLI_NPY_H_
#define INGOT_CLI_NPY_H_

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "runtime/ingot_format.h"

typedef struct ingot_npy_array_t {
  ingot_dtype_t dtype;
  uint32_t rank;                  /* <= INGOT_MAX_RANK */
  int64_t dims[INGOT_MAX_RANK];
  uint64_t count;                 /* product of dims (1 for rank 0) */
  size_t bytes;                   /* count * dtype size */
  void* data;                     /* heap (free with ingot_npy_array_free) */
} ingot_npy_array_t;

/* Parses .npy bytes; `name` is used in messages only. On success *out owns a
 * copy of the data; on failure *out is empty. */
ingot_status_t ingot_npy_parse(const char* name, const uint8_t* bytes, size_t size,
                               ingot_npy_array_t* out);
ingot_status_t ingot_npy_read_file(const char* path, ingot_npy_array_t* out);
void ingot_npy_array_free(ingot_npy_array_t* array);

/* The descr string for a dtype ("<f4", ...), NULL if .npy cannot hold it. */
const char* ingot_npy_descr(ingot_dtype_t dtype);

/* Appends a version 1.0 .npy encoding (header padded to 64 bytes) to `out`. */
ingot_status_t ingot_npy_encode(ingot_dtype_t dtype, uint32_t rank, const int64_t* dims,
                                const void* data, size_t bytes, ingot_strbuf_t* out);
/* Writes one array as a .npy file, atomically. */
ingot_status_t ingot_npy_write_file(const char* path, ingot_dtype_t dtype, uint32_t rank,
                                    const int64_t* dims, const void* data, size_t bytes);

/* One array of an .npz archive; it is stored as member "<name>.npy". */
typedef struct ingot_npz_member_t {
  const char* name;
  ingot_dtype_t dtype;
  uint32_t rank;
  const int64_t* dims;
  const void* data;
  size_t bytes;
} ingot_npz_member_t;

/* The member name an array name is stored under in an .npz, without ".npy":
 * '/', '\\' and control characters become '_' so that no member escapes the
 * folder it is unpacked into. Writes at most `cap` bytes (NUL included). */
void ingot_npz_member_name(const char* name, char* out, size_t cap);

/* Writes an uncompressed zip (stored members, no zip64) atomically; fails
 * cleanly when the archive would need zip64 (4 GiB or 65535 members). */
ingot_status_t ingot_npz_write_file(const char* path, const ingot_npz_member_t* members,
                                    uint32_t count);

#endif /* INGOT_CLI_NPY_H_ */
