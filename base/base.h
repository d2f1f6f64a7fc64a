/* Support shared by the compiler stages (importer .. packager, cli): errors with
 * messages, arenas, growable strings and arrays. Not used by the runtime.
 *
 * Errors: a compiler function that can fail returns ingot_status_t and, on
 * failure, has recorded a message with ingot_fail(); ingot_compiler_error()
 * returns it (per thread). Messages name the node, op and file involved. */
#ifndef INGOT_BASE_H_
#define INGOT_BASE_H_

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/ingot.h"

#ifdef __GNUC__
#define INGOT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define INGOT_PRINTF(f, a)
#endif

/* Records a message for this thread and returns `code`. */
ingot_status_t ingot_fail(ingot_status_t code, const char* fmt, ...) INGOT_PRINTF(2, 3);
/* Prefixes the recorded message with more context ("node 'conv1' (Conv): ...")
 * and returns `code`. */
ingot_status_t ingot_fail_prefix(ingot_status_t code, const char* fmt, ...) INGOT_PRINTF(2, 3);
const char* ingot_compiler_error(void);
void ingot_compiler_error_clear(void);

/* ---- Arena: bump allocation, freed in one call. Never returns NULL: an
 * allocation failure in the compiler is fatal (prints and exits 1), since the
 * compiler runs as a command-line process. */
typedef struct ingot_arena_block_t ingot_arena_block_t;
typedef struct ingot_arena_t {
  ingot_allocator_t allocator;
  ingot_arena_block_t* head;
  size_t block_bytes;
} ingot_arena_t;

void ingot_arena_init(ingot_arena_t* arena, ingot_allocator_t allocator);
void ingot_arena_deinit(ingot_arena_t* arena);
/* Zeroed memory, 16-byte aligned (64 when bytes >= 64). */
void* ingot_arena_alloc(ingot_arena_t* arena, size_t bytes);
char* ingot_arena_strdup(ingot_arena_t* arena, const char* s);
char* ingot_arena_printf(ingot_arena_t* arena, const char* fmt, ...) INGOT_PRINTF(2, 3);
#define INGOT_ARENA_NEW(arena, type) ((type*)ingot_arena_alloc((arena), sizeof(type)))
#define INGOT_ARENA_ARRAY(arena, type, n) ((type*)ingot_arena_alloc((arena), sizeof(type) * (size_t)(n)))

/* Heap helpers for the compiler: abort the process on out-of-memory with a
 * clear message (see the arena note). */
void* ingot_xmalloc(size_t bytes);
void* ingot_xcalloc(size_t count, size_t bytes);
void* ingot_xrealloc(void* ptr, size_t bytes);
char* ingot_xstrdup(const char* s);

/* Growable array of fixed-size items: `INGOT_VEC(T) v = {0}; INGOT_VEC_PUSH(v, x);` */
#define INGOT_VEC(T) struct { T* data; size_t count, cap; }
#define INGOT_VEC_RESERVE(v, n)                                                 \
  do {                                                                          \
    if ((n) > (v).cap) {                                                        \
      size_t cap_ = (v).cap ? (v).cap * 2 : 8;                                  \
      while (cap_ < (n)) cap_ *= 2;                                             \
      (v).data = ingot_xrealloc((v).data, cap_ * sizeof(*(v).data));            \
      (v).cap = cap_;                                                           \
    }                                                                           \
  } while (0)
#define INGOT_VEC_PUSH(v, x)                                                    \
  do {                                                                          \
    INGOT_VEC_RESERVE(v, (v).count + 1);                                        \
    (v).data[(v).count++] = (x);                                                \
  } while (0)
#define INGOT_VEC_FREE(v) do { free((v).data); (v).data = NULL; (v).count = (v).cap = 0; } while (0)

/* Growable string. */
typedef struct ingot_strbuf_t {
  char* data;   /* always NUL-terminated once anything was appended */
  size_t length;
  size_t cap;
} ingot_strbuf_t;

void ingot_strbuf_append(ingot_strbuf_t* sb, const char* s);
void ingot_strbuf_appendf(ingot_strbuf_t* sb, const char* fmt, ...) INGOT_PRINTF(2, 3);
void ingot_strbuf_vappendf(ingot_strbuf_t* sb, const char* fmt, va_list args);
void ingot_strbuf_append_bytes(ingot_strbuf_t* sb, const void* data, size_t bytes);
void ingot_strbuf_free(ingot_strbuf_t* sb);

/* The value of float16 / bfloat16 bits (exact in a double; NaN and the
 * infinities kept). The compiler's one host-side decoder of both. */
double ingot_half_to_double(uint16_t bits);
double ingot_bf16_to_double(uint16_t bits);

/* The layout of ONNX's 8-bit floats (INGOT_DTYPE_F8*): sign, exp_bits of
 * exponent (bias `bias`), mant_bits of mantissa, subnormals at exponent 0.
 * e4m3fn: no infinities, S.1111.111 is NaN; e5m2: IEEE's rules (exponent
 * all ones: infinity, or NaN); the fnuz ones: no infinities, no negative
 * zero, 0x80 is the one NaN. max_code: the bits of the largest finite
 * magnitude (448, 240, 57344, 57344). */
typedef struct ingot_f8_format_t {
  int exp_bits, mant_bits, bias;
  uint8_t max_code;
  bool ieee;  /* e5m2 */
  bool uz;    /* fnuz */
} ingot_f8_format_t;
/* NULL when t is not a float8. */
const ingot_f8_format_t* ingot_f8_format(ingot_dtype_t t);
/* The value of float8 bits of dtype t (exact in a double). */
double ingot_f8_to_double(ingot_dtype_t t, uint8_t bits);

/* Multiplies/adds with overflow detection; false on overflow. */
bool ingot_mul_u64(uint64_t a, uint64_t b, uint64_t* out);
bool ingot_add_u64(uint64_t a, uint64_t b, uint64_t* out);

/* Reads a whole file into a heap buffer (free() it). Fails with a message
 * naming the path. */
ingot_status_t ingot_file_read(const char* path, uint8_t** out_data, size_t* out_size);
/* SHA-256 of data[0, size) (FIPS 180-4): 32 bytes, or 64 lowercase hex
 * digits and a NUL. */
void ingot_sha256(const void* data, size_t size, uint8_t out[32]);
void ingot_sha256_hex(const void* data, size_t size, char out[65]);
/* Writes a file atomically: a temporary file beside `path`, fsync, rename.
 * On failure nothing is left at `path` (an older file there stays intact). */
ingot_status_t ingot_file_write_atomic(const char* path, const void* data, size_t size);

/* ---- cleanup on a signal ----
 * Temporary files and folders that SIGINT, SIGTERM or SIGHUP must not leave
 * behind: the bundle written beside its output (ingot_file_write_atomic), the
 * private folders where the C compiler and the linker run (codegen/). Once
 * ingot_cleanup_install has run (the `ingot` command does it first), such a
 * signal stops the registered child tool (the same signal, then SIGKILL after
 * about two seconds), removes every registered file, then every registered
 * folder with the plain files directly in it, and ends the process by the
 * same signal, so its exit status still says what happened. Only the process
 * that installed the handlers cleans up: a forked child leaves them alone.
 * The table is fixed (INGOT_CLEANUP_SLOTS paths of fewer than
 * INGOT_CLEANUP_PATH_BYTES bytes) and read by the handler without locks;
 * registration is thread-safe. When the table is full, or the path too long,
 * add returns -1 and that path is only removed the normal way. */
#define INGOT_CLEANUP_SLOTS 32
#define INGOT_CLEANUP_PATH_BYTES 4096
void ingot_cleanup_install(void);
/* Returns a slot for ingot_cleanup_drop, or -1. Register right after
 * creating the path; drop once it is removed or renamed to its final name. */
int ingot_cleanup_add_file(const char* path);
int ingot_cleanup_add_dir(const char* path);
void ingot_cleanup_drop(int slot); /* -1: nothing */
/* The child process working in a registered folder, 0 when it has ended. */
void ingot_cleanup_set_child(pid_t pid);
/* Creating a path and registering it must be one step to the handler: a
 * signal between the two would leave the path behind (base/cleanup.h holds
 * the signals for other such steps). mkdtemp / mkstemp and registration in
 * one step; *slot is as from add. On failure: NULL / -1 with errno set,
 * nothing registered. */
char* ingot_cleanup_mkdtemp(char* templ, int* slot);
int ingot_cleanup_mkstemp(char* templ, int* slot);

#endif /* INGOT_BASE_H_ */
