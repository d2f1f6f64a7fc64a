/* Targets: what the compiler generates code for, parsed once from a target
 * string into a description whose fields every later stage reads.
 *
 * The facts come from one table (the .def files of this folder: levels,
 * named CPUs, features, architectures) that the runtime includes too
 * (runtime/cpu.c decides from the same rows which variant a CPU runs). No
 * stage re-derives a fact from the strings of a target: it reads the fields
 * below. To add a level, a CPU or a feature, add one row to
 * target_levels.def, target_cpus.def or target_features.def (each says how).
 *
 * ingot_target_t is a plain value: no pointers, copied freely. */
#ifndef INGOT_TARGET_H_
#define INGOT_TARGET_H_

#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"
#include "runtime/ingot_format.h"

typedef enum ingot_target_kind_t {
  INGOT_TARGET_C = 1,          /* portable C99 built by the system C compiler */
  INGOT_TARGET_LLVM = 2,       /* LLVM IR through the LLVM-C API, linked by ld.lld */
  INGOT_TARGET_CUDA = 3,       /* CUDA C through NVRTC: a CUBIN plus PTX */
  INGOT_TARGET_ROCM = 4,       /* HIP through hiprtc: an AMD GPU code object */
} ingot_target_kind_t;

/* Architectures (target_arches.def). */
typedef enum ingot_target_arch_t {
  INGOT_TARGET_ARCH_NONE = 0,  /* "c" on a host that is none of the rows */
#define INGOT_TARGET_ARCH(id, display, triple_arch, triple) INGOT_TARGET_ARCH_##id,
#include "target/target_arches.def"
#undef INGOT_TARGET_ARCH
  INGOT_TARGET_ARCH_COUNT_
} ingot_target_arch_t;

/* Instruction-set levels (target_levels.def). */
typedef enum ingot_target_level_t {
  INGOT_TARGET_LEVEL_NONE = 0, /* "c" on a host that has no level row */
#define INGOT_TARGET_LEVEL(id, ...) INGOT_TARGET_LEVEL_##id,
#include "target/target_levels.def"
#undef INGOT_TARGET_LEVEL
  INGOT_TARGET_LEVEL_COUNT_
} ingot_target_level_t;

/* CPU features (target_features.def): bit numbers of feature_bits. */
typedef enum ingot_target_feature_t {
#define INGOT_TARGET_FEATURE(id, name, arch, detect) INGOT_TARGET_FEATURE_##id,
#include "target/target_features.def"
#undef INGOT_TARGET_FEATURE
  INGOT_TARGET_FEATURE_COUNT_
} ingot_target_feature_t;

_Static_assert(INGOT_TARGET_FEATURE_COUNT_ <= 64, "feature_bits holds at most 64 features");

/* GPUs (target_gpus.def). */
typedef enum ingot_target_gpu_id_t {
  INGOT_TARGET_GPU_NONE = 0,   /* a CPU target */
#define INGOT_TARGET_GPU(id, ...) INGOT_TARGET_GPU_##id,
#include "target/target_gpus.def"
#undef INGOT_TARGET_GPU
  INGOT_TARGET_GPU_COUNT_
} ingot_target_gpu_id_t;

/* A GPU's facts (its row of target_gpus.def); all zero (and arch "") for a
 * CPU target. Schedules read warp_size, shared_bytes_per_block and
 * max_threads_per_block; the rest describes the row's reference part, for
 * reports (fractions of peak), never for correctness. */
typedef struct ingot_target_gpu_t {
  char arch[16];                   /* "sm_90", "gfx90a" */
  uint32_t warp_size;              /* threads that run in lock step: 32, 64 */
  uint32_t shared_bytes_per_block; /* shared memory one block may use */
  uint32_t max_threads_per_block;
  ingot_target_gpu_id_t id;        /* the row */
  uint32_t number;                 /* as drivers report it: 90 (sm_90), 910 (gfx90a) */
  uint32_t units;                  /* SMs / CUs of the reference part */
  uint32_t fp32_lanes_per_unit;    /* fp32 FMA lanes of one SM / CU */
  uint32_t peak_fp32_gflops;       /* reference part, non-tensor fp32 */
  uint32_t peak_mem_gbps;          /* reference part, GB/s */
  bool has_mma;                    /* fp16/bf16/tf32 matrix instructions */
} ingot_target_gpu_t;

typedef struct ingot_target_t {
  ingot_target_kind_t kind;
  char name[INGOT_TARGET_NAME_BYTES]; /* canonical string stored in bundles */
  char triple[64];             /* "x86_64-linux-gnu" (the arch row's triple) */
  char cpu[32];                /* "x86-64-v3", "" for generic: the instruction set
                                  (LLVM's -mcpu, or the C compiler's -march) */
  ingot_target_arch_t arch;
  ingot_target_level_t level;  /* NONE only for "c" on an unknown host */
  uint32_t vector_bytes;       /* SIMD register width: 16, 32, 64 */
  uint32_t vector_registers;   /* SIMD registers: 16 (SSE, AVX2) or 32 (AVX-512, AArch64) */
  bool has_fma;                /* fused multiply-add instructions */
  bool has_masked_load;        /* cheap masked vector loads/stores (AVX2, AVX-512) */
  uint32_t masked_load_min_bytes; /* of elements this wide and wider (4 on AVX2, 1 with
                                  AVX-512BW); 0: none */
  uint64_t feature_bits;       /* bit INGOT_TARGET_FEATURE_x: the level's features,
                                  plus -mattr's '+', minus its '-' */
  /* Cache sizes in bytes: a named CPU's where its row knows them, the
   * build host's for plain "llvm" (read at compile time), else the level's
   * conservative defaults; 0: none or unknown. Not read by schedules yet. */
  uint32_t l1_bytes, l2_bytes, l3_bytes;
  uint32_t max_threads;        /* 0: decided at run time */
  /* LLVM only (empty otherwise): */
  char tune[32];               /* -mcpu=NAME of a named CPU: scheduling model only
                                  ("znver3"); the instructions stay those of `cpu` */
  char features[96];           /* a named CPU's features beyond its level
                                  ('+', target_cpus.def), then the -mattr list
                                  as given, e.g. "+avx512vnni,-fma"; passed to
                                  LLVM; facts are in feature_bits */
  ingot_target_gpu_t gpu;      /* zero for CPU targets */
} ingot_target_t;

/* Parses a target string; fails on anything else with a message listing what
 * is accepted. The canonical form (out_target->name, what bundles store and
 * runtimes read, at most 31 bytes) is given on the right:
 *   c                                   c        (host, generic)
 *   c -mcpu=x86-64-v3                   c -mcpu=x86-64-v3
 *   llvm                                llvm x86-64-v4   (the build host's level,
 *                                                        detected now)
 *   x86-64 | x86-64-v2 | x86-64-v3 | x86-64-v4 | aarch64  (short names)
 *                                       llvm x86-64-v3 ...
 *   llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64-v3      llvm x86-64-v3
 *   llvm -mtriple=aarch64-linux-gnu                     llvm aarch64
 *   llvm -mcpu=skylake-avx512           llvm -mcpu=skylake-avx512 (a named CPU
 *                                       implies its level: x86-64-v4 here; it
 *                                       only tunes the code)
 *   llvm x86-64-v3 -mattr=+avx512vnni   llvm x86-64-v3 -mattr=+avx512vnni
 *   cuda                                cuda -arch=sm_80  (the first cuda row)
 *   cuda -arch=sm_80|sm_86|sm_89|sm_90  cuda -arch=sm_90 ...
 *   rocm                                rocm -mcpu=gfx90a (the first rocm row)
 *   rocm -mcpu=gfx90a|gfx942            rocm -mcpu=gfx942 ...
 * (the GPUs are the rows of target_gpus.def; a GPU target fills `gpu`, the
 * triple and arch of its target_arches.def row, cpu = the GPU's arch name)
 * -mcpu=native is refused: a bundle must not depend on the build machine.
 * *out_target is zeroed first and fully filled on success. */
ingot_status_t ingot_target_parse(const char* text, ingot_target_t* out_target);

/* For a named CPU or level accepted by -mcpu= on an llvm target: its
 * instruction-set level ("x86-64-v4", "aarch64"), NULL when unknown. */
const char* ingot_target_cpu_level(const char* cpu);

/* Whether the target's code may use `feature` (its bit in feature_bits). */
bool ingot_target_has_feature(const ingot_target_t* target, ingot_target_feature_t feature);
/* Whether the target's code computes float16 + - * / sqrt natively: an llvm
 * target with AArch64 fullfp16 or x86 AVX512-FP16 (with AVX512VL for the
 * narrower vectors). Codegen emits LLVM half arithmetic there; the driver
 * keeps float16 elementwise ops in float16 only when every target of a
 * bundle has it (elsewhere float32 arithmetic gives the same bits, slower). */
bool ingot_target_has_half_arith(const ingot_target_t* target);
/* Whether this machine (the compiler's, not a target's) has `feature`: x86
 * features by CPUID with the OS's support; false for other architectures'
 * features and on other hosts. */
bool ingot_target_host_has_feature(ingot_target_feature_t feature);

/* Names from the table ("sse4.1", "x86-64-v3", "x86_64"); NULL out of range. */
const char* ingot_target_feature_name(ingot_target_feature_t feature);
const char* ingot_target_level_name(ingot_target_level_t level);
/* The baseline level of `level`'s architecture ("x86-64" for "x86-64-v4";
 * itself for a baseline), INGOT_TARGET_LEVEL_NONE out of range. */
ingot_target_level_t ingot_target_level_baseline(ingot_target_level_t level);
const char* ingot_target_arch_name(ingot_target_arch_t arch);
/* The GPU architecture name of a row ("sm_90", "gfx90a"); NULL out of range. */
const char* ingot_target_gpu_name(ingot_target_gpu_id_t gpu);

#endif /* INGOT_TARGET_H_ */
