/* The packager: the static memory plan and the bundle writer.
 *
 * Memory plan: every ARENA tensor has a live interval [first_step,
 * last_step], derived from the execution order of the steps (the order of
 * spec.steps) by ingot_bundle_live_intervals; tensors whose intervals
 * overlap never overlap in memory.
 * Placement is greedy by size (largest first), best fit among the gaps left
 * by tensors already placed whose intervals overlap. Offsets are 64-byte
 * aligned. The lower bound is the largest sum of (aligned) bytes live at any
 * one step; no plan can use less.
 *
 * Bundle: see runtime/ingot_format.h. The same spec gives a byte-identical
 * bundle (fixed zstd level, no timestamps, sections in a fixed order).
 *
 * Variants: each ingot_bundle_code_t is one code variant. It names its
 * loader kind, may give its own launch record per step (else every step
 * launches spec.steps[s].kernel with no grid, what a CPU variant wants) and
 * may give its own bytes for the weight tensors (a layout of its own: packed
 * or padded differently); variants that give none share the tensors' own
 * data. Variants whose weights come out byte-identical share one WEIGHTS
 * section, so one set of weights is stored once however many variants use
 * it. */
#ifndef INGOT_PACKAGER_H_
#define INGOT_PACKAGER_H_

#include <stdint.h>

#include "base/base.h"
#include "runtime/ingot_format.h"

typedef struct ingot_plan_item_t {
  uint64_t bytes;        /* in */
  uint32_t first_step;   /* in */
  uint32_t last_step;    /* in, >= first_step */
  uint64_t offset;       /* out */
} ingot_plan_item_t;

/* Places `count` items; sets each offset, the arena size and the lower bound. */
ingot_status_t ingot_memory_plan(ingot_plan_item_t* items, uint32_t count,
                                 uint64_t* out_arena_bytes, uint64_t* out_lower_bound);

/* How the writer stores WEIGHTS sections. A section stored with codec NONE
 * is used in place by the runtime when the bundle is memory-mapped or
 * borrowed (ingot_bundle_open_file, INGOT_BUNDLE_BORROW): no copy, no
 * decoding, pages shared between processes; a zstd one is decoded into a
 * heap copy at every open (peak memory about stored + raw bytes).
 *   AUTO  zstd when it saves at least INGOT_BUNDLE_WEIGHTS_MIN_SAVING_PERCENT
 *         of the section's raw bytes, else stored raw. fp32 weights save
 *         7-11 % (BERT-base, ResNet-50): raw, in place; int8 or sparse
 *         weights that shrink by a fifth or more: zstd. The default.
 *   ZSTD  zstd whenever it makes the section smaller (smallest file).
 *   RAW   never compressed (cheapest open). */
typedef enum ingot_bundle_weights_codec_t {
  INGOT_BUNDLE_WEIGHTS_AUTO = 0,
  INGOT_BUNDLE_WEIGHTS_ZSTD = 1,
  INGOT_BUNDLE_WEIGHTS_RAW = 2,
} ingot_bundle_weights_codec_t;
#define INGOT_BUNDLE_WEIGHTS_MIN_SAVING_PERCENT 20u

/* What goes into a bundle, independent of the graph IR. */
typedef struct ingot_bundle_tensor_t {
  const char* name;
  ingot_dtype_t dtype;
  uint32_t rank;
  int64_t dims[INGOT_MAX_RANK];
  ingot_storage_t storage;
  const void* data;       /* WEIGHT: the bytes to store */
  /* ARENA: a tensor that shares the storage of another (a view such as
   * Reshape) names it in alias_of and the planner gives both one offset;
   * UINT32_MAX otherwise. Live intervals are not part of the spec: the
   * packager derives them from the steps (ingot_bundle_live_intervals). */
  uint32_t alias_of;
} ingot_bundle_tensor_t;

typedef struct ingot_bundle_step_t {
  uint32_t kernel;        /* index into kernel_names */
  const uint32_t* args;   /* tensor indices */
  uint32_t arg_count;
  const char* name;       /* node name */
  /* 0, or the step's guard as the step record holds it (ingot_format.h):
   * INGOT_STEP_GUARD_WHEN_TRUE or not, | 1 + a bool tensor of one element. */
  uint32_t guard;
} ingot_bundle_step_t;

/* One weight tensor's bytes in one variant's layout. */
typedef struct ingot_bundle_weight_t {
  const void* data;       /* may be NULL when bytes is 0 */
  uint64_t bytes;
} ingot_bundle_weight_t;

typedef struct ingot_bundle_code_t {
  const char* target;     /* target string, < INGOT_TARGET_NAME_BYTES */
  const void* data;       /* the code: for INGOT_LOADER_CPU_ELF an ELF shared object */
  size_t size;
  ingot_loader_kind_t loader; /* required: what loads and launches the code */
  /* step_count records, or NULL: step s launches spec.steps[s].kernel with
   * no grid (shared_bytes, grid and block zero: a CPU launch). */
  const ingot_launch_record_t* launches;
  /* tensor_count entries, or NULL: every WEIGHT tensor's data and logical
   * size. Entries of non-WEIGHT tensors must be {NULL, 0}. */
  const ingot_bundle_weight_t* weights;
} ingot_bundle_code_t;

/* One METADATA entry (runtime/ingot_format.h; the keys the compiler writes
 * are INGOT_METADATA_* in runtime/ingot.h). */
typedef struct ingot_bundle_metadata_t {
  const char* key;        /* 1 to INGOT_METADATA_MAX_KEY_BYTES bytes, unique */
  const char* value;
} ingot_bundle_metadata_t;

typedef struct ingot_bundle_spec_t {
  const ingot_bundle_tensor_t* tensors;
  uint32_t tensor_count;
  const uint32_t* inputs;
  uint32_t input_count;
  const uint32_t* outputs;
  uint32_t output_count;
  /* output_count entries, or NULL (all UINT32_MAX): UINT32_MAX, or the
   * int64 ARENA tensor that the steps fill with the output's run-time dims
   * (an output whose size depends on the data): dim d, for each bit d of
   * output_shape_dims[i], is the tensor's element d after a run (the
   * output's own dim is its bound). A bundle with one is format version 4. */
  const uint32_t* output_shapes;
  const uint32_t* output_shape_dims;
  /* Ranged input dims (format version 5). input_count entries each, or
   * all NULL (no input is ranged). input_range_dims[i]: bit d set when dim d
   * of input i is ranged (its tensor's dim is then the bound);
   * input_range_lo[i][d]: dim d's least size (1 .. the bound; a fixed dim's
   * own size; 0 past the rank); input_shapes[i]: UINT32_MAX, or an int64
   * ARENA tensor of the input's rank elements that the runtime fills with
   * the run's dims before the steps (not an input of the bundle, but live
   * for the whole run like one: the plan pins it from step 0). */
  const uint32_t* input_shapes;
  const uint32_t* input_range_dims;
  const int64_t (*input_range_lo)[INGOT_MAX_RANK];
  /* output_count entries, or NULL: output i is padded (its data at the
   * strides of its bound dims; the runtime packs it dense), which needs a
   * run-time shape (output_shapes[i]). Format version 5. */
  const uint8_t* output_padded;
  /* Checks a run makes after its steps (version 4): checks[k] is a bool
   * ARENA tensor of one element; when true the run fails with
   * check_messages[k]. */
  const uint32_t* checks;
  const char* const* check_messages;
  uint32_t check_count;
  const ingot_bundle_step_t* steps;
  uint32_t step_count;
  const char* const* kernel_names;
  uint32_t kernel_count;
  const ingot_bundle_code_t* codes;
  uint32_t code_count;
  int zstd_level;         /* 0: 19 below 1 MiB of raw bytes, 3 above */
  /* How WEIGHTS sections are stored (other sections: zstd whenever it makes
   * them smaller). */
  ingot_bundle_weights_codec_t weights_codec;
  /* metadata_count entries in any order (the writer sorts them by key), or
   * none: no METADATA section, a bundle as before 0.4. */
  const ingot_bundle_metadata_t* metadata;
  uint32_t metadata_count;
} ingot_bundle_spec_t;

typedef struct ingot_bundle_report_t {
  uint64_t arena_bytes;
  uint64_t arena_lower_bound;
  uint64_t weight_bytes;  /* raw bytes of all WEIGHTS sections (each stored once) */
  uint32_t weight_sections;
  uint64_t bundle_bytes;
} ingot_bundle_report_t;

/* The live interval [out_first[t], out_last[t]] in steps of every tensor t
 * of `spec` (arrays of spec->tensor_count), as the memory plan uses them:
 *   - a tensor lives from the first step that has it as an argument to the
 *     last one;
 *   - graph inputs, and the tensors the runtime fills with ranged inputs'
 *     dims (spec->input_shapes), live for the whole run (a caller may fill
 *     them once and run many times): from step 0 to the last step;
 *   - graph outputs, the tensors holding their run-time shapes, and the
 *     checks live to the last step;
 *   - a tensor no step touches (an alias root's view, a weight) starts at
 *     step 0 and lives for one step unless the rules above extend it.
 * Alias groups are not merged here (the planner gives a group the union of
 * its members' intervals). Weights get intervals too; the plan ignores them.
 * Step arguments, inputs and outputs must index tensors (the writer checks
 * this before calling). */
void ingot_bundle_live_intervals(const ingot_bundle_spec_t* spec, uint32_t* out_first, uint32_t* out_last);

/* The memory plan of `spec` as ingot_bundle_build makes it: out_offsets
 * (spec->tensor_count entries) gets every ARENA tensor's offset (aliases
 * share their root's; weights 0), and the arena size and its lower bound.
 * Checks the spec as the bundle writer does, except its code variants
 * (none are needed). */
ingot_status_t ingot_bundle_plan(const ingot_bundle_spec_t* spec, uint64_t* out_offsets, uint64_t* out_arena_bytes,
                                 uint64_t* out_lower_bound);

/* Plans memory and serializes the bundle into a heap buffer (free() it). */
ingot_status_t ingot_bundle_build(const ingot_bundle_spec_t* spec, uint8_t** out_data,
                                  size_t* out_size, ingot_bundle_report_t* out_report);

/* ---- Firmware output (firmware_writer.c) --------------------------------
 *
 * The data of a bundle as a freestanding C library to link into firmware:
 * the same spec (tensors, steps, kernel names, the first code variant's
 * weights if it has its own) and the same memory plan, plus the kernels'
 * C source from codegen (target c: it defines ingot_library_query). The
 * files, in this order:
 *   ingot_model.h          int ingot_model_run(void* arena,
 *                          const void* const* inputs, void* const* outputs);
 *                          INGOT_MODEL_ARENA_BYTES; each input's and
 *                          output's name, dtype, shape and bytes as macros
 *   ingot_model.c          step table, kernel environment (single-threaded
 *                          parallel_for, float math in plain C), entry point
 *   ingot_model_kernels.c  kernel_source, unchanged
 *   ingot_model_weights.c  the weights, const, 64-byte aligned
 * No libc, malloc or libm is used by any of them; the contract for callers
 * is written at the top of ingot_model.h. spec->codes may be empty. */
#define INGOT_FIRMWARE_FILE_COUNT 4u

typedef struct ingot_firmware_file_t {
  const char* name;        /* a file name, no directory (static storage) */
  ingot_strbuf_t text;
} ingot_firmware_file_t;

typedef struct ingot_firmware_t {
  ingot_firmware_file_t files[INGOT_FIRMWARE_FILE_COUNT];
  uint32_t file_count;
  uint64_t arena_bytes;
  uint64_t arena_lower_bound;
  uint64_t weight_bytes;
} ingot_firmware_t;

/* Fills *out (free with ingot_firmware_free; emptied on entry and on
 * failure). */
ingot_status_t ingot_firmware_build(const ingot_bundle_spec_t* spec, const char* kernel_source, size_t source_size,
                                    ingot_firmware_t* out);
void ingot_firmware_free(ingot_firmware_t* firmware);

#endif /* INGOT_PACKAGER_H_ */
