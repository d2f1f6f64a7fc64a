/* Ingot runtime: the public C API.
 *
 * Load a bundle written by `ingot compile`, create sessions on it, run them.
 *
 *   ingot_bundle_t* bundle;  ingot_session_t* session;
 *   ingot_bundle_open_file("model.ingot", NULL, &bundle);
 *   ingot_session_create(bundle, NULL, &session);
 *   memcpy(ingot_session_input_data(session, 0), image, bytes);
 *   ingot_session_run(session);
 *   const float* y = ingot_session_output_data(session, 0);
 *
 * Ownership: a bundle owns its loaded code and its weights: a view of the
 * memory-mapped file or of the caller's borrowed bytes when the bundle
 * stores them raw (`ingot compile --weights`; see ingot_bundle_open_file and
 * INGOT_BUNDLE_BORROW), else a decoded copy. Weights are read-only: no kernel
 * and no part of the runtime writes to them. A session borrows the bundle
 * (the bundle must outlive its sessions) and owns its thread pool (or
 * borrows a shared one, ingot_threads_t); its arena
 * is its own, the caller's (ingot_session_options_t.arena), or one from an
 * ingot_pool_t. A bundle is immutable once open and may be shared by any
 * number of sessions in any threads; one session is used by one thread at a
 * time. Since 0.4 a session may borrow a thread pool shared with other
 * sessions (ingot_threads_t, usable by sessions running at once) or run its
 * loops on the application's parallel-for, read inputs from and write
 * outputs to the caller's buffers (ingot_session_bind_input/_output), and a
 * bundle tells what it was made from (ingot_bundle_metadata).
 *
 * Errors: every call that can fail returns an ingot_status_t. On failure the
 * outputs are NULL and ingot_last_error() (per thread) names what was wrong.
 *
 * Linking: libingot needs libc, libm, libdl, pthreads, zstd's decoder and
 * libsodium (Ed25519 signature verification only: crypto_sign_init / _update /
 * _final_verify). A libingot built with -DINGOT_SIGNATURES=OFF does not need
 * libsodium; it answers INGOT_ERROR_UNSUPPORTED where a public key is given.
 * GPU drivers are opened at run time (dlopen), never linked.
 */
#ifndef INGOT_H_
#define INGOT_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define INGOT_VERSION_MAJOR 0
/* Before 1.0 a minor version may append fields to the options structs
 * (0.2 added ingot_bundle_options_t.flags and the arena fields of
 * ingot_session_options_t): rebuild a program against the header of the
 * libingot it runs with (the SONAME follows the major version only). Zero
 * new fields keep the old behaviour. */
#define INGOT_VERSION_MINOR 6 /* 2: weights in place, caller arenas, pools;
                                 3: tensors by name, cancel, the signature
                                 checked before the checksums;
                                 4: model metadata, caller-owned input and
                                 output buffers, shared threads and the
                                 application's parallel-for;
                                 5: outputs whose size a run computes;
                                 6: ranged input dims (one bundle for a
                                 range of input sizes) */
#define INGOT_VERSION_PATCH 0
/* (major << 16) | (minor << 8) | patch */
uint32_t ingot_version(void);

/* This CPU, as tuning-log fingerprints record it (static strings, computed
 * once): its model name (x86-64: the CPUID brand string, spaces trimmed,
 * then the family and model numbers: "AMD EPYC (family 25 model 1)";
 * AArch64 Linux: "aarch64 midr 0x..." from MIDR_EL1; "" when unknown), and
 * the features of Ingot's target table it has, space-separated in the
 * table's order ("sse2 ... avx2 fma ...", "" for none). */
const char* ingot_cpu_model(void);
const char* ingot_cpu_features(void);

/* Status codes. Values never change meaning; new ones are appended. */
typedef enum ingot_status_t {
  INGOT_OK = 0,
  INGOT_ERROR_INVALID_ARGUMENT = 1, /* a caller passed something wrong */
  INGOT_ERROR_OUT_OF_MEMORY = 2,    /* an allocation failed */
  INGOT_ERROR_IO = 3,               /* a file could not be read or written */
  INGOT_ERROR_CORRUPT = 4,          /* a bundle or model is malformed */
  INGOT_ERROR_UNSUPPORTED = 5,      /* valid, but beyond what we handle */
  INGOT_ERROR_VERSION = 6,          /* format or ABI version mismatch */
  INGOT_ERROR_NOT_FOUND = 7,        /* a name or index that does not exist */
  INGOT_ERROR_LIMIT = 8,            /* a size above a configured cap */
  INGOT_ERROR_INTERNAL = 9,         /* a bug in Ingot */
  INGOT_ERROR_SIGNATURE = 10,       /* unsigned, signed by another key, or altered */
  INGOT_ERROR_CANCELLED = 11,       /* ingot_session_cancel stopped a run (added in 0.3) */
} ingot_status_t;

/* A short fixed name for a status ("corrupt", "signature refused",
 * "cancelled", ...). Never NULL. */
const char* ingot_status_name(ingot_status_t status);
/* The message of the last failure in this thread ("" if none). Valid until the
 * next failing call in this thread. */
const char* ingot_last_error(void);

/* Element types. Values match the bundle format and never change. */
typedef enum ingot_dtype_t {
  INGOT_DTYPE_INVALID = 0,
  INGOT_DTYPE_F32 = 1,
  INGOT_DTYPE_U8 = 2,
  INGOT_DTYPE_I8 = 3,
  INGOT_DTYPE_I32 = 4,
  INGOT_DTYPE_I64 = 5,
  INGOT_DTYPE_BOOL = 6,
  INGOT_DTYPE_F16 = 7,
  INGOT_DTYPE_F64 = 8,
  INGOT_DTYPE_I16 = 9,          /* added in 0.4 */
  INGOT_DTYPE_U16 = 10,
  INGOT_DTYPE_U32 = 11,
  INGOT_DTYPE_U64 = 12,
  INGOT_DTYPE_BF16 = 13,        /* bfloat16: the upper half of a float32's bits */
  /* Added after 0.4.0: ONNX's 8-bit floats, one byte each (their bits: sign,
   * exponent, mantissa; FN: finite and NaN, no infinity; UZ: no negative
   * zero, NaN 0x80), and the 4-bit integers, one value per byte (int4 in
   * an int8, -8..7; uint4 in a uint8, 0..15), not packed as in ONNX files. */
  INGOT_DTYPE_F8E4M3FN = 14,
  INGOT_DTYPE_F8E4M3FNUZ = 15,
  INGOT_DTYPE_F8E5M2 = 16,
  INGOT_DTYPE_F8E5M2FNUZ = 17,
  INGOT_DTYPE_I4 = 18,
  INGOT_DTYPE_U4 = 19,
  INGOT_DTYPE_COUNT_ = 20,
} ingot_dtype_t;

/* Bytes per element, 0 for INGOT_DTYPE_INVALID or an unknown value. */
size_t ingot_dtype_size(ingot_dtype_t dtype);
/* "float32", "int64", ... ("invalid" for unknown values). */
const char* ingot_dtype_name(ingot_dtype_t dtype);

/* Allocator hooks, passed by value and kept by whoever they were given to.
 * fn(self, NULL, size) allocates; fn(self, ptr, 0) frees (ptr may be NULL).
 * Allocations must be aligned to at least 64 bytes when size >= 64. */
typedef struct ingot_allocator_t {
  void* self;
  void* (*fn)(void* self, void* ptr, size_t size);
} ingot_allocator_t;

/* The process allocator (aligned_alloc / free). */
ingot_allocator_t ingot_allocator_system(void);

/* Limits checked while a bundle is opened, before anything of that size is
 * allocated. Zero fields take the defaults (in parentheses). Every size read
 * from a bundle is also checked against the bytes it comes from. */
typedef struct ingot_limits_t {
  uint64_t max_section_bytes;  /* decoded size of any one section, which
                                  bounds the total weight bytes (4 GiB) */
  uint64_t max_arena_bytes;    /* arena a session would need (64 GiB) */
  uint32_t max_tensors;        /* tensors in the manifest (65,536) */
  uint32_t max_steps;          /* steps in the manifest (1,048,576) */
} ingot_limits_t;

/* Bytes of an Ed25519 public key (`ingot keygen` writes NAME.pub). */
#define INGOT_PUBLIC_KEY_BYTES 32u

typedef struct ingot_bundle_options_t {
  ingot_allocator_t allocator; /* fn == NULL: the system allocator */
  ingot_limits_t limits;
  /* NULL: signatures are not checked (a SIGNATURE section is still checked
   * for its place and shape). Otherwise INGOT_PUBLIC_KEY_BYTES of an Ed25519
   * public key, read during the call only: open fails with
   * INGOT_ERROR_SIGNATURE unless the bundle carries a valid signature by that
   * key over all its other bytes (see runtime/ingot_format.h). The check runs
   * first, before any checksum (since 0.3): only the header's magic, byte
   * order and format version and the place of the section table are read
   * before it, so a signed bundle altered anywhere the signature covers
   * fails with INGOT_ERROR_SIGNATURE, not INGOT_ERROR_CORRUPT (a changed
   * checksum field, which the signature does not cover, is still CORRUPT).
   * Nothing is decoded and no code is mapped before it passes. A libingot
   * built without
   * signature verification (-DINGOT_SIGNATURES=OFF) fails with
   * INGOT_ERROR_UNSUPPORTED whenever a key is given.
   * Checksums only catch accidents; a bundle from anywhere but your own build
   * should be opened with a key, since its code runs in your process. */
  const uint8_t* signature_public_key;
  /* Which kind of code to load: NULL or "auto" picks the best variant that
   * runs here (a GPU variant when a matching device exists, else a CPU one);
   * "cpu", "cuda" or "rocm" considers only variants of that kind, and open
   * fails with INGOT_ERROR_UNSUPPORTED (naming why each was skipped) when
   * none of them runs here; "none" loads no code at all (the bundle is
   * verified and its manifest read, for tools that only look: sessions
   * cannot be created). Another name: INGOT_ERROR_INVALID_ARGUMENT. */
  const char* device;
  /* NULL: the best variant, as above. Otherwise the target string of one
   * variant, exactly as ingot_bundle_target and `ingot inspect` spell it
   * ("llvm x86-64-v3"): only that one is considered; open fails with
   * INGOT_ERROR_NOT_FOUND when the bundle has no such variant and with
   * INGOT_ERROR_UNSUPPORTED (saying why) when it does not run here. Read
   * during the call only. Tools use it to load-check each variant. */
  const char* target;
  /* INGOT_BUNDLE_* flags below, or 0 (added in 0.2). */
  uint32_t flags;
} ingot_bundle_options_t;

/* ingot_bundle_open_memory keeps pointers into `data` instead of copying
 * what it needs: the caller keeps the bytes valid and unchanged until
 * ingot_bundle_release. Raw (codec NONE) weights are then used in place when
 * they are 64-byte aligned in memory (`data` 64-byte aligned is enough: the
 * format aligns every section and weight to 64 in the file); otherwise
 * (misaligned, or zstd weights) they are decoded into a copy as without the
 * flag. ingot_bundle_weights_in_place says which happened. */
#define INGOT_BUNDLE_BORROW 0x1u
/* ingot_bundle_open_file reads the file into memory instead of mapping it
 * (the file may then change or go away while the bundle is open). */
#define INGOT_BUNDLE_READ_FILE 0x2u

typedef struct ingot_bundle_t ingot_bundle_t;

/* Opens a bundle held in memory. The bytes are only read during the call,
 * unless options->flags has INGOT_BUNDLE_BORROW (above). */
ingot_status_t ingot_bundle_open_memory(const void* data, size_t size,
                                        const ingot_bundle_options_t* options,
                                        ingot_bundle_t** out_bundle);
/* Opens a bundle file. The file is memory-mapped read-only (private) and
 * checked in full (every checksum, and the signature when a key is given);
 * raw weights are then used in place from the mapping, which the bundle
 * keeps until ingot_bundle_release, so opening costs no copy and the pages
 * are shared with every other process that maps the file. The file must not
 * be truncated or rewritten in place while the bundle is open (replace it by
 * renaming a new file over it, as `ingot compile` does); with zstd weights
 * the mapping is dropped at the end of the open. INGOT_BUNDLE_READ_FILE
 * reads it into memory instead. A file that cannot be opened, examined,
 * mapped or read fails with INGOT_ERROR_IO, and the message names the path
 * and the system's reason (strerror(errno), since 0.3): "bundle: cannot open
 * 'x.ingot': No such file or directory". */
ingot_status_t ingot_bundle_open_file(const char* path,
                                      const ingot_bundle_options_t* options,
                                      ingot_bundle_t** out_bundle);
void ingot_bundle_release(ingot_bundle_t* bundle);

/* Checks a bundle's header, section table, section checksums and its
 * signature by `public_key` (INGOT_PUBLIC_KEY_BYTES), without decoding or
 * loading anything: INGOT_OK, or INGOT_ERROR_SIGNATURE (unsigned, another
 * key, altered) or another status for a malformed bundle (or
 * INGOT_ERROR_UNSUPPORTED from a libingot built with -DINGOT_SIGNATURES=OFF).
 * Allocates nothing. */
ingot_status_t ingot_bundle_verify_signature(const void* data, size_t size,
                                             const uint8_t* public_key);

typedef struct ingot_tensor_info_t {
  const char* name;  /* owned by the bundle */
  ingot_dtype_t dtype;
  uint32_t rank;
  const int64_t* dims; /* rank entries, owned by the bundle */
  size_t bytes;
} ingot_tensor_info_t;

uint32_t ingot_bundle_input_count(const ingot_bundle_t* bundle);
uint32_t ingot_bundle_output_count(const ingot_bundle_t* bundle);
ingot_status_t ingot_bundle_input_info(const ingot_bundle_t* bundle, uint32_t index,
                                       ingot_tensor_info_t* out_info);
ingot_status_t ingot_bundle_output_info(const ingot_bundle_t* bundle, uint32_t index,
                                        ingot_tensor_info_t* out_info);
/* The index of the input (or output) named `name` (exactly, as
 * ingot_tensor_info_t.name spells it), for ingot_bundle_input_info,
 * ingot_session_input_data and the others (added in 0.3). No such tensor:
 * INGOT_ERROR_NOT_FOUND, with a message naming it; *out_index is then
 * UINT32_MAX. */
ingot_status_t ingot_bundle_input_index(const ingot_bundle_t* bundle, const char* name,
                                        uint32_t* out_index);
ingot_status_t ingot_bundle_output_index(const ingot_bundle_t* bundle, const char* name,
                                         uint32_t* out_index);
/* ---- Model metadata (added in 0.4) ------------------------------------------
 * What the bundle was made from, as `ingot compile` records it (the bundle's
 * METADATA section; `ingot inspect` shows it). Keys and values are UTF-8
 * strings owned by the bundle. The compiler writes the keys below; a bundle
 * written before 0.4, or by a tool that records nothing, has none (count 0,
 * every lookup INGOT_ERROR_NOT_FOUND). Values are byte-reproducible: no
 * timestamps, no absolute paths. */
#define INGOT_METADATA_NAME "name"                  /* the ONNX graph's name, else the
                                                       file's name without ".onnx" */
#define INGOT_METADATA_MODEL_VERSION "model_version" /* ONNX ModelProto.model_version
                                                       ("0" when unset) */
#define INGOT_METADATA_PRODUCER "producer"          /* ModelProto.producer_name */
#define INGOT_METADATA_PRODUCER_VERSION "producer_version"
#define INGOT_METADATA_SOURCE "source"              /* the .onnx file's name (no folder) */
#define INGOT_METADATA_SOURCE_SHA256 "source_sha256" /* of the .onnx file, 64 hex digits */
#define INGOT_METADATA_COMPILE_FLAGS "compile_flags" /* the options that shaped the code,
                                                       as `ingot compile` options:
                                                       "--target 'llvm x86-64-v3' ..." */
#define INGOT_METADATA_COMPILER "compiler"          /* "ingot 0.4.0" */

/* The value of metadata `key`: INGOT_OK, or INGOT_ERROR_NOT_FOUND (and
 * *out_value NULL). */
ingot_status_t ingot_bundle_metadata(const ingot_bundle_t* bundle, const char* key,
                                     const char** out_value);
/* Entries, sorted by key: index < ingot_bundle_metadata_count, else
 * INGOT_ERROR_NOT_FOUND. */
uint32_t ingot_bundle_metadata_count(const ingot_bundle_t* bundle);
ingot_status_t ingot_bundle_metadata_entry(const ingot_bundle_t* bundle, uint32_t index,
                                           const char** out_key, const char** out_value);

/* 1 when the loaded variant's weights are used in place (from the mapped
 * file or the borrowed bytes), 0 when they were decoded into a copy. */
int ingot_bundle_weights_in_place(const ingot_bundle_t* bundle);
/* Bytes of arena a session needs, and the planner's lower bound. A caller's
 * arena (ingot_session_options_t.arena) must hold ingot_bundle_arena_bytes,
 * 64-byte aligned. */
uint64_t ingot_bundle_arena_bytes(const ingot_bundle_t* bundle);
uint64_t ingot_bundle_arena_lower_bound(const ingot_bundle_t* bundle);
/* The target string of the code variant this bundle loaded ("c", ...). */
const char* ingot_bundle_target(const ingot_bundle_t* bundle);
/* Why that variant: "picked llvm x86-64-v4: CPU has avx512f avx512bw avx512cd
 * avx512dq avx512vl; skipped llvm x86-64-v3 (runs here, ranks lower); skipped
 * llvm aarch64 (built for AArch64, this CPU is x86-64)". A bundle carries one
 * code section per variant; the runtime loads the best this CPU runs: the
 * highest instruction-set level whose features the CPU has, llvm before c.
 * Owned by the bundle. */
const char* ingot_bundle_target_reason(const ingot_bundle_t* bundle);
/* The kind of device the loaded variant runs on: "cpu", "cuda" or "rocm". */
const char* ingot_bundle_device(const ingot_bundle_t* bundle);

/* Whether this machine has a usable `device` ("cpu", "cuda", "rocm"): 1 or
 * 0, and why in out_why (may be NULL; cut to why_cap): "libcuda.so.1 not
 * found (no NVIDIA driver)", "no CUDA device", "CUDA device 0: NVIDIA H200,
 * sm_90", or the CPU's features. GPU drivers are opened with dlopen at run
 * time (libcuda.so.1 for cuda, libamdhip64.so for rocm; INGOT_CUDA_DRIVER
 * and INGOT_HIP_RUNTIME name other files), once per process; the runtime
 * links none. Never crashes without a driver. */
int ingot_device_probe(const char* device, char* out_why, size_t why_cap);

/* The most threads a session runs (its thread pool, the caller included). */
#define INGOT_SESSION_THREADS_MAX 256u

/* ---- Memory pools (added in 0.2) -------------------------------------------
 * A pool hands out arenas to sessions of any bundles, within a byte budget:
 * either memory it allocates as arenas are taken (ingot_pool_create, up to
 * budget_bytes in use at once), or a range of one buffer the caller owns
 * (ingot_pool_create_in: the whole buffer is the budget; the pool never
 * allocates arena memory then). A session takes an arena of its own from a
 * pool (ingot_session_options_t.pool) and gives it back when released; or
 * several sessions that never run at the same time share one ingot_arena_t,
 * sized by the largest plan among the bundles it is declared for. Taking an
 * arena that would exceed the budget fails with INGOT_ERROR_LIMIT and a
 * message giving the bytes asked, in use and budgeted; nothing is taken.
 * All of it happens when sessions and arenas are created: runs allocate
 * nothing. Arena sizes are counted rounded up to 64 bytes.
 *
 * A pool is thread-safe (a mutex around taking and giving back). It must
 * outlive its arenas and the sessions that use them. */
typedef struct ingot_pool_t ingot_pool_t;
typedef struct ingot_arena_t ingot_arena_t;

/* A pool that allocates arenas with `allocator` (fn == NULL: the system
 * allocator), at most budget_bytes of them at once. */
ingot_status_t ingot_pool_create(uint64_t budget_bytes, ingot_allocator_t allocator,
                                 ingot_pool_t** out_pool);
/* A pool over buffer[0, bytes) (64-byte aligned, owned by the caller, which
 * keeps it valid until ingot_pool_release). Arenas are carved out of it
 * (first fit); the pool's own small record comes from `allocator`. At most
 * INGOT_POOL_MAX_ARENAS arenas at once. */
#define INGOT_POOL_MAX_ARENAS 64u
ingot_status_t ingot_pool_create_in(void* buffer, uint64_t bytes, ingot_allocator_t allocator,
                                    ingot_pool_t** out_pool);
void ingot_pool_release(ingot_pool_t* pool);
uint64_t ingot_pool_budget_bytes(const ingot_pool_t* pool);
/* Bytes of arenas handed out now, and the most ever handed out at once. */
uint64_t ingot_pool_used_bytes(const ingot_pool_t* pool);
uint64_t ingot_pool_high_water_bytes(const ingot_pool_t* pool);

/* One arena for the sessions of `bundles` (count >= 1; a bundle may appear
 * more than once), sized by the largest ingot_bundle_arena_bytes among them.
 * The caller declares that the sessions made with it never run at the same
 * time: each run may overwrite everything in the arena, so fill a session's
 * inputs just before its run and read (or copy) its outputs before another
 * session of the arena runs. A run that starts while another session of the
 * arena is running fails with INGOT_ERROR_INVALID_ARGUMENT. The arena goes
 * back to the pool when it and all its sessions are released, in any order. */
ingot_status_t ingot_pool_arena_create(ingot_pool_t* pool, const ingot_bundle_t* const* bundles,
                                       uint32_t count, ingot_arena_t** out_arena);
void ingot_arena_release(ingot_arena_t* arena);
uint64_t ingot_arena_bytes(const ingot_arena_t* arena);

/* ---- Threads (added in 0.4) -------------------------------------------------
 * By default every session has a thread pool of its own
 * (ingot_session_options_t.threads). Sessions may instead share one pool,
 * or run their parallel loops on the application's own parallel-for; either
 * way the kernels see a parallel-for with this contract (the kernel
 * environment's, runtime/ingot_kernel_env.def): run body over [0, count) in
 * chunks [begin, end) that together cover each index exactly once, on any
 * threads, and return when all are done; never fail; a body may call the
 * parallel-for again (a nested loop), which must then still complete (running
 * it inline on the calling thread is fine). */
typedef void (*ingot_parallel_body_t)(void* context, int64_t begin, int64_t end);
typedef void (*ingot_parallel_for_t)(void* self, int64_t count, ingot_parallel_body_t body,
                                     void* context);

/* A thread pool that sessions share: `count` threads, the calling one
 * included (count - 1 workers are started here; 0: one per online CPU, at
 * most INGOT_SESSION_THREADS_MAX).
 * Thread-safety: any number of sessions may use it, running at the same time
 * in any threads. One parallel loop runs on the pool at a time: a loop that
 * finds the pool busy with another session's loop runs inline on its own
 * calling thread instead of waiting, so concurrent sessions never block each
 * other and never oversubscribe the CPUs beyond their own threads plus the
 * pool's workers. Results do not depend on which happened. The pool must
 * outlive the sessions that use it. */
typedef struct ingot_threads_t ingot_threads_t;
ingot_status_t ingot_threads_create(uint32_t count, ingot_allocator_t allocator,
                                    ingot_threads_t** out_threads);
void ingot_threads_release(ingot_threads_t* threads);
uint32_t ingot_threads_count(const ingot_threads_t* threads);

typedef struct ingot_session_options_t {
  ingot_allocator_t allocator; /* fn == NULL: the bundle's allocator */
  uint32_t threads;            /* 0: one per online CPU (at most
                                  INGOT_SESSION_THREADS_MAX); 1 to
                                  INGOT_SESSION_THREADS_MAX: that many; more:
                                  INGOT_ERROR_INVALID_ARGUMENT */
  /* Where the arena comes from (added in 0.2; at most one of the three;
   * none: the session allocates its own). CPU variants only: a GPU variant's
   * arena is device memory (INGOT_ERROR_UNSUPPORTED).
   *   arena, arena_bytes  the caller's memory, 64-byte aligned, at least
   *                       ingot_bundle_arena_bytes (else
   *                       INGOT_ERROR_INVALID_ARGUMENT), borrowed for the
   *                       session's life;
   *   pool                an arena of the session's own from this pool,
   *                       given back at ingot_session_release;
   *   shared_arena        an arena from ingot_pool_arena_create whose
   *                       bundles include this one. */
  void* arena;
  uint64_t arena_bytes;
  ingot_pool_t* pool;
  ingot_arena_t* shared_arena;
  /* Where parallel loops run (added in 0.4; at most one of the two, and then
   * `threads` must be 0, else INGOT_ERROR_INVALID_ARGUMENT; neither: a pool
   * of the session's own of `threads` threads):
   *   shared_threads  a pool from ingot_threads_create (borrowed: it must
   *                   outlive the session);
   *   parallel_for    the application's (contract above), called with
   *                   parallel_for_self and count >= 2 (shorter loops run
   *                   inline) from the thread that runs the session, or
   *                   from inside one of its own bodies (a nested loop);
   *                   kernels split their loops for
   *                   parallel_for_threads threads (0: one per online CPU,
   *                   at most INGOT_SESSION_THREADS_MAX).
   * GPU variants run no host loops: they accept and ignore both. */
  ingot_threads_t* shared_threads;
  ingot_parallel_for_t parallel_for;
  void* parallel_for_self;
  uint32_t parallel_for_threads;
} ingot_session_options_t;

typedef struct ingot_session_t ingot_session_t;

ingot_status_t ingot_session_create(ingot_bundle_t* bundle,
                                    const ingot_session_options_t* options,
                                    ingot_session_t** out_session);
void ingot_session_release(ingot_session_t* session);

/* Input and output tensors live in the session's arena (CPU variants), or in
 * host buffers of the session that ingot_session_run copies to and from the
 * device (GPU variants: ingot_bundle_device is "cuda" or "rocm"). The pointers
 * stay valid for the session's life; inputs are read by ingot_session_run and
 * outputs are written by it. Outputs may share memory with intermediates of
 * the next run. */
void* ingot_session_input_data(ingot_session_t* session, uint32_t index);
const void* ingot_session_output_data(const ingot_session_t* session, uint32_t index);

/* Outputs whose size depends on the data (added in 0.5): NonZero, Unique,
 * NonMaxSuppression and what a model computes from them end at a graph
 * output whose size a run computes. ingot_bundle_output_info then gives
 * upper bounds (its bytes are what the output's storage holds), and
 * ingot_bundle_output_shape_varies returns 1. After each run,
 * ingot_session_output_shape gives the shape the run computed (rank and
 * INGOT_MAX_RANK dims, zero past rank), and the output's data is dense in
 * that shape from its start; before the first run such an output's dims
 * are 0. For every other output it gives the bundle's shape. */
int ingot_bundle_output_shape_varies(const ingot_bundle_t* bundle, uint32_t index);
ingot_status_t ingot_session_output_shape(const ingot_session_t* session, uint32_t index, uint32_t* out_rank,
                                          int64_t* out_dims);

/* Ranged input dims (added in 0.6): a bundle compiled for a range of input
 * sizes (`ingot compile --input-shape ids=1x1..128`) runs at any shape
 * within it. ingot_bundle_input_info gives the largest shape (its bytes are
 * what the input's storage holds); ingot_bundle_input_shape_varies returns
 * 1 for an input with a ranged dim, and ingot_bundle_input_range gives each
 * dim's least and largest size (rank and INGOT_MAX_RANK entries each, zero
 * past rank; lo == hi for a fixed dim; every input has one).
 *
 * ingot_session_set_input_shape sets the shape the next runs take input
 * `index` in: rank must be the input's, each dim within its range (a fixed
 * dim equal to its size); else INGOT_ERROR_INVALID_ARGUMENT with a message
 * naming the input, the dim, the value and the range, and the shape is
 * unchanged. It stays set for later runs; until set, the largest shape.
 * ingot_session_input_shape gives the shape set. The caller writes the
 * input dense in that shape from the start of ingot_session_input_data (or
 * of its bound buffer, which then needs only that shape's bytes; a ranged
 * input is always bound by copy, see below). A run lays it out as the
 * kernels read it and back, in place, allocating nothing: after the run the
 * input reads as the caller wrote it. Outputs whose shape follows the input
 * sizes vary (ingot_bundle_output_shape_varies) and are dense in the shape
 * the run gives (ingot_session_output_shape). GPU variants take no ranges:
 * ingot_session_create refuses a ranged bundle on them
 * (INGOT_ERROR_UNSUPPORTED). Not thread-safe, like every session call. */
int ingot_bundle_input_shape_varies(const ingot_bundle_t* bundle, uint32_t index);
ingot_status_t ingot_bundle_input_range(const ingot_bundle_t* bundle, uint32_t index, uint32_t* out_rank,
                                        int64_t* out_lo, int64_t* out_hi);
ingot_status_t ingot_session_set_input_shape(ingot_session_t* session, uint32_t index, uint32_t rank,
                                             const int64_t* dims);
ingot_status_t ingot_session_input_shape(const ingot_session_t* session, uint32_t index, uint32_t* out_rank,
                                         int64_t* out_dims);

/* Caller-owned input and output buffers (added in 0.4). Binds input (or
 * output) `index` to the caller's `data` of `bytes` bytes: runs then read
 * that input from (write that output to) the caller's memory, and
 * ingot_session_input_data / _output_data return `data`. data NULL unbinds
 * (bytes ignored): the tensor is in the session's memory again, with
 * unspecified contents. Checked: bytes at least the tensor's
 * (ingot_tensor_info_t.bytes), data aligned to the element size (what the
 * kernels assume; the arena's 64 bytes are not needed), an output buffer
 * overlapping no other bound buffer of the session; else
 * INGOT_ERROR_INVALID_ARGUMENT and the binding is unchanged; a bad index:
 * INGOT_ERROR_NOT_FOUND. Bind between runs, from the thread that runs the
 * session (like every session call but ingot_session_cancel). Never
 * allocates; a run then allocates nothing either. Bindings last until
 * changed or the session is released.
 *
 * CPU variants, zero-copy: the kernels' argument pointers for the tensor
 * point into `data`, so steps read a bound input in place and write a bound
 * output there, and later steps that read the output read it there too. A
 * run never writes to a bound input. The buffers must stay valid, and must
 * not be read or written by the caller while a run is in progress (an
 * output's bytes are scratch until the run returns; after a failed or
 * cancelled run they are unspecified). A tensor whose storage the bundle's
 * plan shares with another tensor while it is live (a view: `ingot compile`
 * never makes one of an input or output, a hand-made bundle may) is bound
 * by copy instead: the run copies a bound input into the session's memory
 * at its start and a bound output out of it at its end (same results, no
 * allocation); so is an output kept with the weights. The plan records
 * every view's storage interval since 0.4, which makes the test exact; a
 * hand-made bundle from before 0.4 with a view of an output that no step
 * touches while the output is live is not detected.
 * ingot_session_binding_copies says which way a binding went.
 * GPU variants: the run copies a bound input to the device from `data` and
 * the output back into `data` (instead of the session's host staging
 * buffers): one copy each way, as without binding. */
ingot_status_t ingot_session_bind_input(ingot_session_t* session, uint32_t index, const void* data,
                                        uint64_t bytes);
ingot_status_t ingot_session_bind_output(ingot_session_t* session, uint32_t index, void* data,
                                         uint64_t bytes);
/* 1 when the input (is_output 0) or output `index` is bound and a run
 * copies it (see above), 0 when it is unbound or bound without a copy. */
int ingot_session_binding_copies(const ingot_session_t* session, int is_output, uint32_t index);

/* Runs the model once. Allocates nothing. */
ingot_status_t ingot_session_run(ingot_session_t* session);

/* Asks the session to stop (added in 0.3). Sets a flag and returns at once:
 * safe from any thread and from a signal handler (a lock-free atomic store),
 * while the session runs or not. A run (ingot_session_run or
 * ingot_session_run_profiled) checks the flag before each step, the first
 * included; when it finds it set it clears it, waits for what it already
 * launched on a device, and returns INGOT_ERROR_CANCELLED. A step that has
 * started is never interrupted, so a run stops within one step's time.
 * The request stays pending until a run consumes it: a cancel made between
 * runs cancels the next run before its first step, and the run after the
 * cancelled one starts un-cancelled. A cancel that comes after a run's last
 * step check leaves that run's result as it is and cancels the next run.
 * After a cancelled run the outputs (and intermediates) are unspecified.
 * The session must not be released while a cancel is in progress. */
void ingot_session_cancel(ingot_session_t* session);

/* Profiling. A bundle runs as a list of steps, one kernel call each. */
uint32_t ingot_bundle_step_count(const ingot_bundle_t* bundle);
/* The node and kernel names of step `index` (owned by the bundle). */
ingot_status_t ingot_bundle_step_info(const ingot_bundle_t* bundle, uint32_t index,
                                      const char** out_node_name, const char** out_kernel_name);
/* Runs the model once like ingot_session_run and adds each step's wall time
 * in nanoseconds to step_ns[i] (ingot_bundle_step_count entries). */
ingot_status_t ingot_session_run_profiled(ingot_session_t* session, uint64_t* step_ns);

/* The checksum the bundle format uses (CRC-32, IEEE polynomial). `seed` is the
 * previous result when checksumming in pieces, 0 at first. */
uint32_t ingot_crc32(uint32_t seed, const void* data, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* INGOT_H_ */
