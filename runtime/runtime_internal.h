/* Internals of the Ingot runtime, shared between its .c files only. Everything
 * here has hidden visibility: only runtime/ingot.h is exported from libingot.
 * Tests link the static library and may call these directly. */
#ifndef INGOT_RUNTIME_INTERNAL_H_
#define INGOT_RUNTIME_INTERNAL_H_

#include <stddef.h>
#include <stdint.h>

#include "runtime/ingot.h"
#include "runtime/ingot_format.h"
#include "loader.h"

#if defined(__GNUC__)
#define INGOT_HIDDEN __attribute__((visibility("hidden")))
#define INGOT_RT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define INGOT_HIDDEN
#define INGOT_RT_PRINTF(f, a)
#endif

/* ---- status.c ------------------------------------------------------------ */

/* Records a message for ingot_last_error() in this thread and returns `code`.
 * Allocates nothing (a fixed thread-local buffer; long messages are cut). */
INGOT_HIDDEN ingot_status_t ingot_rt_fail(ingot_status_t code, const char* fmt, ...)
    INGOT_RT_PRINTF(2, 3);
/* Clears the thread's message (calls that succeed leave it alone otherwise). */
INGOT_HIDDEN void ingot_rt_error_clear(void);

/* Allocation through the caller's hooks. ingot_rt_alloc never calls fn with
 * size 0 (that would mean "free"): it asks for at least 1 byte. */
INGOT_HIDDEN void* ingot_rt_alloc(ingot_allocator_t allocator, size_t size);
INGOT_HIDDEN void ingot_rt_free(ingot_allocator_t allocator, void* ptr);

/* ---- elf_loader.c ----------------------------------------------------------
 * Loads an ELF64 ET_DYN shared object held in memory into private anonymous
 * pages, without the system loader. The rules (anything else is refused with
 * INGOT_ERROR_CORRUPT or INGOT_ERROR_UNSUPPORTED and a message):
 *   - ELF64, little-endian, EV_CURRENT, ET_DYN, e_machine of this host (a
 *     per-machine table names the relocation types, see elf_loader.c);
 *   - program headers inside the file; PT_LOAD segments sorted, file bytes
 *     inside the file, p_filesz <= p_memsz, span at most 1 GiB; no segment
 *     both writable and executable; no PT_INTERP and no PT_TLS;
 *   - a PT_DYNAMIC inside the image with: no DT_NEEDED, no DT_TEXTREL, no
 *     initializers (DT_INIT, DT_INIT_ARRAY, DT_PREINIT_ARRAY are never run so
 *     they are refused), no DT_REL/DT_RELR/DT_JMPREL tables of non-zero
 *     size; DT_RELA entries of the machine's RELATIVE or NONE type only, each
 *     target word inside the image;
 *   - PT_GNU_RELRO pages are made read-only after relocation; every other
 *     page gets the union of the flags of the segments on it (pages covered
 *     by no segment get no access), and no page ends up writable and
 *     executable;
 *   - symbols come from DT_SYMTAB/DT_STRTAB, counted with DT_HASH or
 *     DT_GNU_HASH, every read bounds-checked against the image.
 * Loaded code runs with the process's privileges: the loader protects against
 * corrupt files, not against hostile code (the bundle's checksums and, later,
 * its signature decide what is trusted). */
typedef struct ingot_elf_image_t ingot_elf_image_t;

/* The e_machine value of the host, 0 when the loader has no support for it. */
INGOT_HIDDEN uint16_t ingot_elf_host_machine(void);
/* Reads e_machine of an ELF file without loading it; 0 if not ELF64. */
INGOT_HIDDEN uint16_t ingot_elf_peek_machine(const void* data, size_t size);
INGOT_HIDDEN ingot_status_t ingot_elf_image_load(const void* data, size_t size,
                                                 ingot_allocator_t allocator,
                                                 ingot_elf_image_t** out_image);
/* The address of a defined function or object symbol, NULL when absent. */
INGOT_HIDDEN void* ingot_elf_image_symbol(const ingot_elf_image_t* image, const char* name);
/* True when [ptr, ptr + bytes) lies inside one readable (PF_R) segment of
 * the loaded image: memory that may be read. */
INGOT_HIDDEN int ingot_elf_image_contains(const ingot_elf_image_t* image, const void* ptr,
                                          size_t bytes);
/* True when ptr lies inside an executable segment. */
INGOT_HIDDEN int ingot_elf_image_is_code(const ingot_elf_image_t* image, const void* ptr);
INGOT_HIDDEN void ingot_elf_image_unload(ingot_elf_image_t* image);

/* ---- thread_pool.c ---------------------------------------------------------
 * A fixed set of worker threads made at creation. parallel_for splits
 * [0, count) into contiguous chunks, one per thread, the calling thread taking
 * the first; it allocates nothing and returns when every chunk is done. A
 * parallel_for issued from inside a body runs inline. One thread at a time may
 * call parallel_for on a pool. */
typedef struct ingot_thread_pool_t ingot_thread_pool_t;

/* threads counts the calling thread: threads == 1 makes no workers. */
INGOT_HIDDEN ingot_status_t ingot_thread_pool_create(uint32_t threads, ingot_allocator_t allocator,
                                                     ingot_thread_pool_t** out_pool);
INGOT_HIDDEN uint32_t ingot_thread_pool_thread_count(const ingot_thread_pool_t* pool);
/* Matches ingot_kernel_env_t.parallel_for (pool is an ingot_thread_pool_t*). */
INGOT_HIDDEN void ingot_thread_pool_parallel_for(void* pool, int64_t count,
                                                 ingot_parallel_body_fn_t body, void* context);
INGOT_HIDDEN void ingot_thread_pool_release(ingot_thread_pool_t* pool);
/* The parallel_for of a shared ingot_threads_t (raw): the pool when it is
 * free, else inline on the calling thread (ingot.h). */
INGOT_HIDDEN void ingot_rt_threads_parallel_for(void* raw, int64_t count, ingot_parallel_body_fn_t body,
                                                void* context);
/* Online CPUs, 1 to INGOT_SESSION_THREADS_MAX. */
INGOT_HIDDEN uint32_t ingot_rt_online_cpus(void);

/* ---- pool.c ------------------------------------------------------------------
 * Arenas from pools (ingot_pool_t, ingot_arena_t in ingot.h). take returns
 * an arena of at least `bytes` (64-aligned) with one reference; retain adds
 * one (ingot_arena_release drops one). enter marks the arena busy for a run
 * (0 when another run holds it), leave clears it. */
INGOT_HIDDEN ingot_status_t ingot_rt_pool_take(ingot_pool_t* pool, uint64_t bytes, ingot_arena_t** out_arena);
INGOT_HIDDEN void ingot_rt_arena_retain(ingot_arena_t* arena);
INGOT_HIDDEN uint8_t* ingot_rt_arena_base(const ingot_arena_t* arena);
INGOT_HIDDEN int ingot_rt_arena_enter(ingot_arena_t* arena);
INGOT_HIDDEN void ingot_rt_arena_leave(ingot_arena_t* arena);

/* ---- Configuration switches (tested with #if under -Wundef) --------------
 * INGOT_RT_FUZZING=1 (fuzz and replay builds only, never a product): open
 * does everything up to and including loading the code object with the ELF
 * loader, but never calls into it. Kernel lookup is skipped, steps get no
 * function and ingot_session_run refuses to run. A fuzzed bundle whose
 * checksums pass may hold any code: running it would test the CPU, not the
 * reader (a signature is what makes code trustworthy). */
#ifndef INGOT_RT_FUZZING
#define INGOT_RT_FUZZING 0
#endif

/* ---- signature.c ----------------------------------------------------------
 * The SIGNATURE section's place and shape (always), and when public_key is
 * not NULL its Ed25519ph check (runtime/ingot_format.h). Needs only the
 * header's section count and the section table (entries) read: it bounds the
 * signature section itself, so with a key it runs before any checksum. */
INGOT_HIDDEN ingot_status_t ingot_rt_signature_check(const uint8_t* file, size_t size,
                                                     const ingot_bundle_header_t* header,
                                                     const ingot_section_entry_t* entries,
                                                     const uint8_t* public_key);

/* ---- cpu.c -----------------------------------------------------------------
 * Whether this CPU runs a CODE section's target (see cpu.c for the strings):
 * 0 when it cannot, else a rank (higher is preferred: level, then llvm over
 * c). `why` (may be NULL) receives the reason either way: "CPU has avx512f
 * ...", "CPU lacks avx2 fma", "built for AArch64, this CPU is x86-64". */
INGOT_HIDDEN int ingot_rt_variant_rank(const char* target, char* why, size_t why_cap);
/* "x86-64: sse3 ssse3 ... avx512vl": the features this CPU has. */
INGOT_HIDDEN void ingot_rt_cpu_describe(char* out, size_t cap);

/* ---- bundle.c: the parsed bundle that sessions read ---------------------- */

typedef struct ingot_rt_tensor_t {
  ingot_tensor_info_t info;
  uint32_t storage;  /* ingot_storage_t */
  uint64_t offset;   /* WEIGHT: in weights (the loaded variant's layout);
                        ARENA: in the arena (from PLAN) */
  uint32_t first_step, last_step; /* ARENA: the PLAN record's live interval */
} ingot_rt_tensor_t;

/* One step as the loaded variant runs it. */
typedef struct ingot_rt_step_t {
  ingot_rt_kernel_t kernel;       /* looked up in the variant's module */
  ingot_launch_record_t launch;   /* the variant's launch record */
  const char* kernel_name;
  const char* node_name;
  uint32_t arg_begin;
  uint32_t arg_count;
  uint32_t guard_tensor;          /* UINT32_MAX: always runs; else needed only when that bool ... */
  uint8_t guard_when;             /* ... is this (0 or 1) */
} ingot_rt_step_t;

struct ingot_bundle_t {
  ingot_allocator_t allocator;
  uint32_t format_version;  /* INGOT_FORMAT_VERSION_MIN..INGOT_FORMAT_VERSION */
  /* Decompressed sections, each from the allocator. weights is the loaded
   * variant's WEIGHTS section (the others are never decoded): read-only, in
   * place (in the mapped file or the borrowed bytes, weights_copy NULL) or
   * weights_copy, a decoded copy from the allocator. */
  uint8_t* manifest;
  uint64_t manifest_bytes;
  const uint8_t* weights;
  uint8_t* weights_copy;
  uint64_t weights_bytes;
  /* Whether the file's bytes outlive the open (mapped or borrowed), so that
   * raw weights may be used in place; the mapping, kept while weights
   * point into it (else unmapped at the end of the open). */
  int file_kept;
  void* map;
  size_t map_bytes;
  uint8_t* plan;
  uint64_t plan_bytes;
  /* The METADATA section decoded (from the allocator), NULL when the bundle
   * has none; entries and strings point into it. */
  uint8_t* metadata;
  uint64_t metadata_bytes;
  uint32_t metadata_count;
  const ingot_metadata_entry_t* metadata_entries;
  const char* metadata_strings;
  /* Parsed views; arrays from the allocator, strings point into manifest. */
  uint32_t tensor_count;
  ingot_rt_tensor_t* tensors;
  uint32_t input_count;
  const uint32_t* inputs;   /* into manifest */
  uint32_t output_count;
  const uint32_t* outputs;  /* into manifest */
  /* into manifest (version 4), or NULL: per output, {0, 0} or {1 + the
   * int64 tensor holding its run-time dims, the mask of those dims} */
  const uint32_t* output_shapes;
  /* into manifest (version 4): check_count pairs (bool tensor, message
   * string offset) that a run checks after its steps */
  const uint32_t* checks;
  uint32_t check_count;
  /* into manifest (version 5), or NULL: per input {0 or 1 + the int64
   * tensor the runtime fills with the run's dims, the mask of ranged dims}
   * and per input INGOT_MAX_RANK least sizes (input_lo) */
  const uint32_t* input_ranges;
  const int64_t* input_lo;
  int ranged;               /* some input is ranged or some output padded */
  uint32_t step_count;
  ingot_rt_step_t* steps;
  uint32_t arg_count;
  const uint32_t* args;     /* into manifest */
  uint32_t kernel_count;
  const uint32_t* kernel_names; /* into manifest: string offsets */
  const char* strings;          /* into manifest */
  uint32_t variant_count;
  const ingot_variant_record_t* variants;  /* into manifest */
  const ingot_launch_record_t* launches;   /* into manifest, [variant][step] */
  uint32_t weight_count;                    /* WEIGHT tensors */
  const ingot_weight_record_t* weight_records; /* into manifest, [variant][weight] */
  uint64_t arena_bytes;
  uint64_t arena_lower_bound;
  /* The loaded variant: its index, target, loader row and module. */
  uint32_t variant;
  char target[INGOT_TARGET_NAME_BYTES + 1];
  char target_reason[1024]; /* which variant was picked and why (cpu.c) */
  uint32_t forced_loader;   /* ingot_loader_kind_t from options.device, 0: any */
  const char* forced_target; /* options.target during open only, NULL: any */
  const ingot_rt_loader_t* loader;
  ingot_rt_module_t* module;
};

#endif /* INGOT_RUNTIME_INTERNAL_H_ */
