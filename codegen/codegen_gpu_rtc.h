/* GPU source -> code objects at compile time, through the vendors' runtime
 * compilers: NVRTC for CUDA C (a CUBIN for one real architecture plus PTX
 * for newer GPUs), hiprtc for HIP (an AMDGPU code object). Private to
 * codegen/ (the cuda and rocm backends' build functions call it) and its
 * tests.
 *
 * Both compilers are optional: they are loaded with dlopen on first use (see
 * codegen_gpu_rtc.c for where they are looked for), so ingot builds and runs
 * without the CUDA toolkit or ROCm, and only a GPU target says what is
 * missing. Calls are thread-safe (the library is loaded once). */
#ifndef INGOT_CODEGEN_GPU_RTC_H_
#define INGOT_CODEGEN_GPU_RTC_H_

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

typedef enum ingot_codegen_rtc_kind_t {
  INGOT_CODEGEN_RTC_NVRTC = 1,  /* CUDA C -> CUBIN + PTX (libnvrtc) */
  INGOT_CODEGEN_RTC_HIPRTC = 2, /* HIP -> AMDGPU code object (hiprtc in libamdhip64) */
} ingot_codegen_rtc_kind_t;

/* What one compile gives (heap; release with ingot_codegen_rtc_code_free). */
typedef struct ingot_codegen_rtc_code_t {
  uint8_t* object;    /* NVRTC: the CUBIN (ELF) for the real architecture;
                         hiprtc: the code object (ELF) */
  size_t object_size;
  char* ptx;          /* NVRTC: PTX for the virtual architecture of the same
                         number (compute_XX), NUL-terminated; hiprtc: NULL */
  size_t ptx_size;    /* bytes before the NUL */
} ingot_codegen_rtc_code_t;

/* INGOT_OK when the compiler of `kind` can be loaded; otherwise
 * INGOT_ERROR_UNSUPPORTED with a message naming the library and where it
 * was looked for. */
ingot_status_t ingot_codegen_rtc_check(ingot_codegen_rtc_kind_t kind);

/* The compiler, its library and the version it reports into out
 * (cap bytes), or the reason it is missing; returns whether it is there. */
bool ingot_codegen_rtc_describe(ingot_codegen_rtc_kind_t kind, char* out, size_t cap);

/* Compiles `source` (NUL-terminated; `name` names it in messages and in the
 * compiler's log, e.g. the module or kernel name) for `arch`:
 *   NVRTC:  "sm_80", "sm_90", "sm_90a", ...: a CUBIN with -arch=sm_XX, and PTX
 *           with -arch=compute_XX (a second compile);
 *   hiprtc: "gfx90a", "gfx942", ... (features allowed: "gfx90a:xnack-"):
 *           --gpu-architecture=ARCH.
 * `options` (count of them, may be 0) are passed to the compiler after ours
 * (the architecture; for NVRTC also -I of the toolkit's include folder when
 * it is there, so cuda_fp16.h / cuda_bf16.h / mma.h can be included).
 * out_code is cleared on entry and stays empty on failure. Fails with
 * INGOT_ERROR_UNSUPPORTED when the compiler is missing, INGOT_ERROR_INVALID_ARGUMENT
 * for a malformed arch, and INGOT_ERROR_INVALID_ARGUMENT with the compiler's log
 * (its first lines) when the source does not compile. */
ingot_status_t ingot_codegen_rtc_compile(ingot_codegen_rtc_kind_t kind, const char* source,
                                         const char* name, const char* arch,
                                         const char* const* options, uint32_t option_count,
                                         ingot_codegen_rtc_code_t* out_code);

void ingot_codegen_rtc_code_free(ingot_codegen_rtc_code_t* code);

#endif /* INGOT_CODEGEN_GPU_RTC_H_ */
