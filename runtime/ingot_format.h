/* The Ingot bundle format and kernel ABI, shared by the compiler (writer) and
 * the runtime (reader). Includes nothing but <stdint.h> and its own row file
 * ingot_kernel_env.def (next to it). All integers are little-endian; all
 * records are naturally aligned, with explicit padding.
 *
 * Versioning: INGOT_FORMAT_VERSION changes whenever any record below changes
 * layout or meaning; INGOT_KERNEL_ABI_VERSION whenever the kernel call
 * convention or ingot_kernel_env_t changes. Readers refuse other versions.
 * Version 2 added code variants (ingot_variant_record_t): each CODE section
 * names its loader kind, carries a launch record per step and its own weight
 * table into a WEIGHTS section of its choosing (version 1 had one WEIGHTS
 * section for all variants and the kernel index in the step record).
 * Version 3 gave the step record a guard (the field was reserved, zero): a
 * step of a branch that a run may skip. Readers accept versions
 * INGOT_FORMAT_VERSION_MIN to INGOT_FORMAT_VERSION (a version 2 bundle is a
 * version 3 bundle without guards).
 * Version 4 added the MANIFEST's output_shapes (outputs whose size a run
 * computes) and checks. Version 5 added ranged input dims: the MANIFEST's
 * input_ranges and input_lo (after the checks), and the
 * INGOT_OUTPUT_SHAPE_PADDED bit of output_shapes. A bundle compiled for a
 * range of input sizes (`--input-shape ids=1x1..128`) lays every tensor
 * whose size follows a ranged dim out at the strides of its largest shape
 * (the tensor record's dims, "padded"); a run uses the first n entries
 * along each ranged dim. The caller writes a ranged input dense in the
 * run's shape; the runtime writes the run's dims into the input's shape
 * tensor (if any; steps read it), spreads the data to the padded strides
 * before the steps and packs it dense again after them; a padded output
 * (its shape from output_shapes) is packed dense after the steps.
 * Writers write the lowest version a bundle needs (see below).
 *
 * File layout:
 *   ingot_bundle_header_t                      (offset 0, 64 bytes)
 *   ingot_section_entry_t[section_count]       (right after the header)
 *   section payloads, each at a 64-byte aligned offset, stored with `codec`
 *
 * Sections (each decompresses to raw_size bytes, whose CRC-32 is raw_crc32;
 * the stored bytes have CRC-32 stored_crc32):
 *   MANIFEST  tensors, inputs, outputs, steps, kernel names, code variants
 *             with their launch and weight records (layout below)
 *   WEIGHTS   one or more: constant tensor data in one variant's layout, each
 *             tensor at a 64-byte aligned offset. Variants whose weights are
 *             byte-identical share one section (the writer never stores the
 *             same bytes twice), so a bundle whose variants all pack weights
 *             alike costs nothing extra; every WEIGHTS section is used by at
 *             least one variant. Only the loaded variant's is decoded.
 *   PLAN      the arena plan (layout below)
 *   CODE      one per target variant (target names it; what the bytes are is
 *             the variant's loader kind: an ELF shared object for CPU_ELF)
 *   METADATA  at most one, optional: what the bundle was made from and how
 *             (model name and version, producer, the source model's hash,
 *             compile flags; layout below). Written by compilers since
 *             runtime API 0.4; bundles without it stay valid. It changes the
 *             layout of no other record, so it shares INGOT_FORMAT_VERSION
 *             (as SIGNATURE did); a runtime older than 0.4 refuses a bundle
 *             that has it ("unknown kind 6").
 *   SIGNATURE at most one: an Ed25519ph signature over everything before it
 *             (ingot_signature_record_t below; `ingot sign` adds it)
 *
 * Per-variant weights (how two variants may pack weights differently): the
 * MANIFEST lists each tensor once, with its logical dtype and shape; a
 * WEIGHT tensor's record carries offset 0. Each variant has one
 * ingot_weight_record_t per WEIGHT tensor (in tensor order) giving the
 * offset and size of that tensor's bytes, in that variant's layout, inside
 * the variant's WEIGHTS section. The size may differ from the logical one
 * (a layout may pad or pack); kernels of the variant know their layout. The
 * reader picks the variant first, then decodes its WEIGHTS section only.
 * The compiler packs per variant when a tuning log gives the targets
 * different layout knobs (driver/): a WEIGHT tensor's record then describes
 * the first variant's layout (its name, dtype and shape), and the others'
 * weight records give the size of their own; a weight that one variant packs
 * per reader and another keeps shared is one tensor per pairing, so that the
 * tensor table, steps and plan stay one for all variants.
 */
#ifndef INGOT_FORMAT_H_
#define INGOT_FORMAT_H_

#include <stdint.h>

#define INGOT_BUNDLE_MAGIC "INGOTBND" /* 8 bytes, no terminator in the file */
/* Writers write version 5 only for a bundle with a ranged input dim
 * (MANIFEST's input_ranges), else 4 for a bundle with an output whose shape
 * is computed at run time (output_shapes) or with checks, else 3, so that
 * bundles without them stay readable by older runtimes (5: 0.6, 4: 0.5). */
#define INGOT_FORMAT_VERSION 5u
#define INGOT_FORMAT_VERSION_RUN_SHAPES 4u
#define INGOT_FORMAT_VERSION_FIXED_SHAPES 3u
#define INGOT_FORMAT_VERSION_MIN 2u
#define INGOT_ENDIAN_MARK 0x01020304u
#define INGOT_SECTION_ALIGN 64u
#define INGOT_WEIGHT_ALIGN 64u
#define INGOT_MAX_RANK 8u
#define INGOT_TARGET_NAME_BYTES 32u

typedef enum ingot_section_kind_t {
  INGOT_SECTION_MANIFEST = 1,
  INGOT_SECTION_WEIGHTS = 2,
  INGOT_SECTION_PLAN = 3,
  INGOT_SECTION_CODE = 4,
  INGOT_SECTION_SIGNATURE = 5,
  INGOT_SECTION_METADATA = 6,
} ingot_section_kind_t;
#define INGOT_SECTION_KIND_LAST INGOT_SECTION_METADATA

/* The name a message gives a section kind ("weights"; "unknown"). */
static inline const char* ingot_section_kind_name(uint32_t kind) {
  switch (kind) {
    case INGOT_SECTION_MANIFEST: return "manifest";
    case INGOT_SECTION_WEIGHTS: return "weights";
    case INGOT_SECTION_PLAN: return "plan";
    case INGOT_SECTION_CODE: return "code";
    case INGOT_SECTION_SIGNATURE: return "signature";
    case INGOT_SECTION_METADATA: return "metadata";
    default: return "unknown";
  }
}

typedef enum ingot_codec_t {
  INGOT_CODEC_NONE = 0,
  INGOT_CODEC_ZSTD = 1,
} ingot_codec_t;

typedef struct ingot_bundle_header_t {
  char magic[8];              /* INGOT_BUNDLE_MAGIC */
  uint32_t format_version;    /* INGOT_FORMAT_VERSION */
  uint32_t endian_mark;       /* INGOT_ENDIAN_MARK as written by the writer */
  uint64_t file_size;         /* total bytes of the bundle */
  uint32_t section_count;
  uint32_t flags;             /* 0; reserved */
  uint32_t table_crc32;       /* CRC-32 of the section table */
  uint32_t header_crc32;      /* CRC-32 of this header with this field zero */
  uint8_t reserved[24];       /* zero */
} ingot_bundle_header_t;

typedef struct ingot_section_entry_t {
  uint32_t kind;              /* ingot_section_kind_t */
  uint32_t codec;             /* ingot_codec_t */
  uint64_t offset;            /* from the start of the file, 64-byte aligned */
  uint64_t stored_size;       /* bytes in the file */
  uint64_t raw_size;          /* bytes once decoded */
  uint32_t stored_crc32;
  uint32_t raw_crc32;
  char target[INGOT_TARGET_NAME_BYTES]; /* CODE: target string, NUL padded */
} ingot_section_entry_t;

/* ---- MANIFEST ----------------------------------------------------------
 *   ingot_manifest_header_t
 *   ingot_tensor_record_t[tensor_count]
 *   uint32_t inputs[input_count]           tensor indices
 *   uint32_t outputs[output_count]         tensor indices
 *   uint32_t output_shapes[output_count][2] version 4 only: {0, 0}, the
 *                                          output's shape is its tensor
 *                                          record's; else {1 + the index
 *                                          of an int64 ARENA tensor that
 *                                          the steps fill, dims}: each dim
 *                                          d whose bit is set in `dims`
 *                                          is element d of that tensor
 *                                          after a run (the record's dim
 *                                          is then its bound), the others
 *                                          are the record's; the data is
 *                                          dense in the run's shape
 *   uint32_t check_count, reserved         version 4 only (reserved: 0)
 *   uint32_t checks[check_count][2]        version 4 only: a bool ARENA
 *                                          tensor of one element and a
 *                                          string offset; after its steps
 *                                          a run fails with that message
 *                                          when the tensor is true (a Loop
 *                                          asked for more iterations than
 *                                          were compiled in)
 *   uint32_t input_ranges[input_count][2]  version 5 only: {1 + the index
 *                                          of an int64 ARENA tensor of
 *                                          `rank` elements that the runtime
 *                                          fills with the run's dims before
 *                                          the steps, or 0 (no step reads
 *                                          them); dims mask}: bit d set when
 *                                          the input's dim d is ranged (its
 *                                          record's dim is then the bound);
 *                                          only bits below the rank
 *   int64_t input_lo[input_count][INGOT_MAX_RANK]
 *                                          version 5 only: each dim's least
 *                                          size: 1 <= lo <= the bound for a
 *                                          ranged dim, lo == the dim for a
 *                                          fixed one, 0 past the rank
 *   ingot_step_record_t[step_count]
 *   uint32_t args[arg_count]               tensor indices, steps slice this
 *   uint32_t kernel_names[kernel_count]    string offsets
 *   ingot_variant_record_t[variant_count]
 *   ingot_launch_record_t[variant_count * step_count]
 *                                          variant v's launch of step s at
 *                                          [v * step_count + s]
 *   ingot_weight_record_t[variant_count * weight_count]
 *                                          weight_count = tensors with
 *                                          storage WEIGHT; variant v's record
 *                                          for the w-th of them (tensor
 *                                          order) at [v * weight_count + w]
 *   char strings[string_bytes]             NUL-terminated names
 * Every array starts at the next multiple of 8 bytes. */

/* In output_shapes' dims word (version 5): the output is padded, its data
 * lies at the strides of its record's dims (the bounds), not dense; the
 * runtime packs it dense in the run's shape after the steps. Only with a
 * shape tensor. The other bits are the dims mask. */
#define INGOT_OUTPUT_SHAPE_PADDED 0x80000000u
#define INGOT_OUTPUT_SHAPE_DIMS_MASK 0x7fffffffu

typedef enum ingot_storage_t {
  INGOT_STORAGE_ARENA = 1,   /* offset comes from the PLAN section */
  INGOT_STORAGE_WEIGHT = 2,  /* offset comes from the variant's weight records */
} ingot_storage_t;

typedef struct ingot_manifest_header_t {
  uint32_t tensor_count;
  uint32_t input_count;
  uint32_t output_count;
  uint32_t step_count;
  uint32_t arg_count;
  uint32_t kernel_count;
  uint32_t string_bytes;
  uint32_t variant_count;     /* == the number of CODE sections, >= 1 */
} ingot_manifest_header_t;

typedef struct ingot_tensor_record_t {
  uint32_t name;              /* string offset */
  uint32_t dtype;             /* ingot_dtype_t */
  uint32_t rank;              /* <= INGOT_MAX_RANK */
  uint32_t storage;           /* ingot_storage_t */
  uint64_t offset;            /* 0 (ARENA: PLAN places it; WEIGHT: the variant) */
  uint64_t bytes;             /* element count * dtype size */
  int64_t dims[INGOT_MAX_RANK];
} ingot_tensor_record_t;

/* A step's guard (version 3): 0, the step runs in every run. Else the low
 * 31 bits hold 1 + the index of a bool tensor of one element, computed by an
 * earlier step or a graph input, and the top bit when the step is needed:
 * set, when that tensor is true (nonzero); clear, when it is false. A run
 * may skip a step that is not needed (the CPU runtime does): nothing that
 * runs reads what such a step writes, except a Where on that tensor, which
 * reads it on the side it drops. Running it anyway is correct too. */
#define INGOT_STEP_GUARD_WHEN_TRUE 0x80000000u
#define INGOT_STEP_GUARD_TENSOR_MASK 0x7fffffffu

typedef struct ingot_step_record_t {
  uint32_t guard;             /* 0 or a guard (above); the kernel is in each variant's launch record */
  uint32_t arg_begin;         /* first entry in args */
  uint32_t arg_count;
  uint32_t name;              /* string offset: the graph node it came from */
} ingot_step_record_t;

/* What kind of code a CODE section holds, hence which loader of the runtime
 * loads and launches it. A runtime without a loader for a kind skips the
 * variants of that kind (they are valid, just not runnable there). */
/* X(NAME, value, "text"): one row a kind; values never change meaning. */
#define INGOT_LOADER_KIND_LIST(X)                                              \
  X(CPU_ELF, 1, "cpu-elf") /* ELF shared object, kernel ABI below */           \
  X(CUDA, 2, "cuda")       /* reserved: a cubin, launched on a grid */         \
  X(HIP, 3, "hip")         /* reserved: an AMD GPU code object, on a grid */

typedef enum ingot_loader_kind_t {
#define INGOT_LOADER_KIND_ENUM_(name, value, text) INGOT_LOADER_##name = value,
  INGOT_LOADER_KIND_LIST(INGOT_LOADER_KIND_ENUM_)
#undef INGOT_LOADER_KIND_ENUM_
  INGOT_LOADER_KIND_END_ = 4, /* one past the last kind (loader.c checks it) */
} ingot_loader_kind_t;

/* The CODE section of a CUDA variant: a code set, one CUBIN for the
 * target's architecture and the same kernels as PTX, which the driver
 * compiles for a later GPU at load:
 *   ingot_gpu_code_header_t
 *   ingot_gpu_code_entry_t[count]
 *   the codes, each at its offset (from the section's start, 16-aligned)
 * A loader takes the CUBIN when the device's major architecture is the
 * CUBIN's and its minor is at least the CUBIN's, else the PTX when the device
 * is at least the PTX's architecture, else refuses the variant. A bare CUBIN
 * or PTX text (no header) is also accepted. A HIP variant's CODE section is
 * a bare AMD GPU code object (ELF, machine EM_AMDGPU). */
#define INGOT_GPU_CODE_MAGIC "INGOTGPU"
#define INGOT_GPU_CODE_VERSION 1u

typedef enum ingot_gpu_code_kind_t {
  INGOT_GPU_CODE_CUBIN = 1,   /* an NVIDIA ELF for one architecture */
  INGOT_GPU_CODE_PTX = 2,     /* PTX text with its NUL, for that one and later */
} ingot_gpu_code_kind_t;

typedef struct ingot_gpu_code_header_t {
  char magic[8];              /* INGOT_GPU_CODE_MAGIC, no NUL */
  uint32_t version;           /* INGOT_GPU_CODE_VERSION */
  uint32_t count;             /* entries, 1..8 */
} ingot_gpu_code_header_t;    /* 16 bytes */

typedef struct ingot_gpu_code_entry_t {
  uint32_t kind;              /* ingot_gpu_code_kind_t */
  uint32_t arch;              /* 10 * major + minor: 90 for sm_90 / compute_90 */
  uint64_t offset;            /* from the section's start, 16-aligned */
  uint64_t size;              /* bytes; offset + size <= section size */
} ingot_gpu_code_entry_t;     /* 24 bytes */

typedef struct ingot_variant_record_t {
  uint32_t code_section;      /* section table index of its CODE section; the
                                 variants list the CODE sections in table order,
                                 each exactly once */
  uint32_t weights_section;   /* section table index of a WEIGHTS section */
  uint32_t loader;            /* ingot_loader_kind_t */
  uint32_t reserved;          /* zero */
} ingot_variant_record_t;

/* How a variant runs one step. CPU_ELF: the kernel is called once with the
 * step's arguments; shared_bytes, grid and block are zero. CUDA, HIP: a grid
 * of grid[0] x grid[1] x grid[2] blocks of block[0] x block[1] x block[2]
 * threads with shared_bytes of dynamic shared memory; every dim >= 1. */
typedef struct ingot_launch_record_t {
  uint32_t kernel;            /* index into kernel_names */
  uint32_t shared_bytes;
  uint32_t grid[3];
  uint32_t block[3];
} ingot_launch_record_t;      /* 32 bytes */

typedef struct ingot_weight_record_t {
  uint64_t offset;            /* in the variant's WEIGHTS section, 64-aligned */
  uint64_t bytes;             /* of this layout; offset + bytes <= section size */
} ingot_weight_record_t;

/* ---- PLAN ---------------------------------------------------------------
 *   ingot_plan_header_t
 *   ingot_plan_record_t[record_count]   one per ARENA tensor */

typedef struct ingot_plan_header_t {
  uint64_t arena_bytes;
  uint64_t lower_bound_bytes; /* largest sum of bytes live at one step */
  uint32_t record_count;
  uint32_t reserved;
} ingot_plan_header_t;

typedef struct ingot_plan_record_t {
  uint32_t tensor;            /* tensor index */
  uint32_t first_step;        /* live from this step ... */
  uint32_t last_step;         /* ... to this one, inclusive */
  uint32_t reserved;
  uint64_t offset;            /* in the arena, 64-byte aligned */
  uint64_t bytes;
} ingot_plan_record_t;

/* ---- METADATA -------------------------------------------------------------
 *   ingot_metadata_header_t
 *   ingot_metadata_entry_t[entry_count]
 *   char strings[string_bytes]              NUL-terminated UTF-8
 * Each entry names a key and a value by their offsets in strings. Rules (the
 * reader refuses anything else as CORRUPT): entry_count <=
 * INGOT_METADATA_MAX_ENTRIES; string_bytes >= 1 and the last string byte is
 * NUL; every offset < string_bytes; keys are non-empty, at most
 * INGOT_METADATA_MAX_KEY_BYTES long, unique, and the entries are sorted by
 * key (strcmp), so the same metadata is always the same bytes; codec NONE or
 * ZSTD; all-zero target. The keys the compiler writes are listed in
 * runtime/ingot.h (INGOT_METADATA_*); readers ignore keys they do not know. */
#define INGOT_METADATA_MAX_ENTRIES 256u
#define INGOT_METADATA_MAX_KEY_BYTES 64u

typedef struct ingot_metadata_header_t {
  uint32_t entry_count;
  uint32_t string_bytes;
} ingot_metadata_header_t;    /* 8 bytes */

typedef struct ingot_metadata_entry_t {
  uint32_t key;               /* string offset */
  uint32_t value;             /* string offset */
} ingot_metadata_entry_t;     /* 8 bytes */

/* ---- SIGNATURE ------------------------------------------------------------
 * Written by `ingot sign`, checked by the runtime when the caller names a
 * public key (ingot_bundle_options_t.signature_public_key). Rules:
 *   - the SIGNATURE section is the last entry of the section table and the
 *     last bytes of the file (offset + stored_size == file_size); codec NONE;
 *     stored_size == raw_size == sizeof(ingot_signature_record_t); all-zero
 *     target; at most one per bundle;
 *   - the signed message M is the first `offset` bytes of the file (the
 *     signature section's offset): the header, the whole section table
 *     including the signature's own entry, every other section and all
 *     padding, with exactly four 32-bit fields taken as zero, the only bytes
 *     before `offset` whose value depends on the signature:
 *       header.table_crc32, header.header_crc32,
 *       the signature entry's stored_crc32 and raw_crc32;
 *     everything else (file_size, section_count, every other entry, the
 *     signature entry's kind, codec, offset and sizes) is signed as stored;
 *   - algorithm INGOT_SIGNATURE_ED25519PH: Ed25519ph of RFC 8032 (SHA-512
 *     over M, empty context), i.e. libsodium's crypto_sign_init / _update /
 *     _final_create and _final_verify;
 *   - the record's public_key names the signer (the reader compares it with
 *     the key it was given before verifying, to tell "another key" from
 *     "altered"); the record itself is protected by its entry's CRC-32 and
 *     the signature.
 * A SIGNATURE section changes the layout of no other record, so signed and
 * unsigned bundles share one INGOT_FORMAT_VERSION. */

#define INGOT_SIGNATURE_MAGIC "INGOTSIG" /* 8 bytes, no terminator */
#define INGOT_SIGNATURE_ED25519PH 1u
#define INGOT_SIGNATURE_PUBLIC_KEY_BYTES 32u
#define INGOT_SIGNATURE_BYTES 64u

typedef struct ingot_signature_record_t {
  char magic[8];              /* INGOT_SIGNATURE_MAGIC */
  uint32_t algorithm;         /* INGOT_SIGNATURE_ED25519PH */
  uint32_t reserved;          /* zero */
  uint8_t public_key[INGOT_SIGNATURE_PUBLIC_KEY_BYTES];
  uint8_t signature[INGOT_SIGNATURE_BYTES];
} ingot_signature_record_t;   /* 112 bytes */

/* ---- Kernel ABI -----------------------------------------------------------
 * A CODE section of loader kind CPU_ELF is an ELF shared object that imports
 * nothing. It exports one
 * symbol, INGOT_LIBRARY_QUERY_SYMBOL, of type ingot_library_query_fn_t. The
 * library lists its kernels by name; the manifest's kernel_names refer to them.
 * A kernel receives its arguments as an array of pointers in the order of the
 * step's args, and returns 0 on success. */

#define INGOT_KERNEL_ABI_VERSION 1u
#define INGOT_LIBRARY_QUERY_SYMBOL "ingot_library_query"

/* A parallel loop body: runs iterations [begin, end) of a loop. */
typedef void (*ingot_parallel_body_fn_t)(void* context, int64_t begin, int64_t end);

/* What the runtime hands every kernel call. Its fields are the rows of
 * ingot_kernel_env.def (next to this header); the declarators of their types: */
#define INGOT_KERNEL_ENV_DECL_U32(name) uint32_t name
#define INGOT_KERNEL_ENV_DECL_PTR(name) void* name
#define INGOT_KERNEL_ENV_DECL_PARALLEL_FOR(name) \
  void (*name)(void* pool, int64_t count, ingot_parallel_body_fn_t body, void* context)
#define INGOT_KERNEL_ENV_DECL_F32_F32(name) float (*name)(float)
#define INGOT_KERNEL_ENV_DECL_F32_F32_F32(name) float (*name)(float, float)

typedef struct ingot_kernel_env_t {
#define INGOT_KERNEL_ENV_FIELD(type, name) INGOT_KERNEL_ENV_DECL_##type(name);
#include "ingot_kernel_env.def"
} ingot_kernel_env_t;

typedef int32_t (*ingot_kernel_fn_t)(const ingot_kernel_env_t* env, void* const* args);

typedef struct ingot_kernel_entry_t {
  const char* name;
  ingot_kernel_fn_t fn;
} ingot_kernel_entry_t;

typedef struct ingot_kernel_library_t {
  uint32_t abi_version;       /* INGOT_KERNEL_ABI_VERSION */
  uint32_t kernel_count;
  const ingot_kernel_entry_t* kernels;
} ingot_kernel_library_t;

/* Returns NULL when the library does not speak abi_version. */
typedef const ingot_kernel_library_t* (*ingot_library_query_fn_t)(uint32_t abi_version);

#endif /* INGOT_FORMAT_H_ */
