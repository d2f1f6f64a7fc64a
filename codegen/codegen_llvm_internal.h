/* Private to codegen/'s llvm target: the module state shared by the IR
 * emitter (codegen_llvm.c), the math library written in LLVM IR
 * (codegen_llvm_math.c) and the object/link step (codegen_llvm_link.c). */
#ifndef INGOT_CODEGEN_LLVM_INTERNAL_H_
#define INGOT_CODEGEN_LLVM_INTERNAL_H_

#include <stdbool.h>
#include <stdint.h>

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "codegen/codegen.h"

/* Functions of the math library, each defined once per module and type
 * (scalar, or a vector of `lanes` floats). */
typedef enum ingot_llvm_math_t {
  INGOT_LLVM_MATH_EXPF = 0,   /* float exp, |err| <= 1.3 ulp */
  INGOT_LLVM_MATH_LOGF,       /* float log through double */
  INGOT_LLVM_MATH_TANHF,      /* float tanh through double exp */
  INGOT_LLVM_MATH_ERFF,       /* float erf, a degree-18 polynomial in double */
  INGOT_LLVM_MATH_FMODF,      /* exact float fmod (scalar only) */
  INGOT_LLVM_MATH_FLOORF,     /* floor/ceil without SSE4.1 (scalar or vector) */
  INGOT_LLVM_MATH_CEILF,
  INGOT_LLVM_MATH_FLOOR,      /* double */
  INGOT_LLVM_MATH_CEIL,
  INGOT_LLVM_MATH_IPOW,       /* int64 power by squaring (scalar only) */
  /* double precision, a few ulp each (the C target's algorithms); the float
   * versions of the trigonometric and hyperbolic family widen, call these and
   * round once */
  INGOT_LLVM_MATH_EXP, INGOT_LLVM_MATH_LOG, INGOT_LLVM_MATH_TANH, INGOT_LLVM_MATH_ERF,
  INGOT_LLVM_MATH_SIN, INGOT_LLVM_MATH_COS, INGOT_LLVM_MATH_TAN, INGOT_LLVM_MATH_ASIN,
  INGOT_LLVM_MATH_ACOS, INGOT_LLVM_MATH_ATAN, INGOT_LLVM_MATH_SINH, INGOT_LLVM_MATH_COSH,
  INGOT_LLVM_MATH_ASINH, INGOT_LLVM_MATH_ACOSH, INGOT_LLVM_MATH_ATANH,
  INGOT_LLVM_MATH_ROUND,      /* double, ties to even */
  INGOT_LLVM_MATH_ROUNDF,     /* float, ties to even */
  INGOT_LLVM_MATH_POW,        /* double pow with C's special cases */
  INGOT_LLVM_MATH_FMOD,       /* exact double fmod (scalar only) */
  INGOT_LLVM_MATH_COUNT_
} ingot_llvm_math_t;

#define INGOT_LLVM_MATH_CACHE 128

typedef struct ingot_llvm_module_t {
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  const ingot_target_t* target;
  bool x86;                 /* x86-64 (else AArch64) */
  bool native_scatter;      /* scatter instructions for 32- and 64-bit elements (AVX-512) */
  bool has_round;           /* floor/ceil are instructions (SSE4.1, AArch64) */
  bool has_half_ext;        /* float16 -> float32 is an instruction (F16C, AArch64): fpext */
  bool has_half_arith;      /* float16 + - * / sqrt are instructions (AArch64 fullfp16, x86
                               AVX512-FP16: ingot_target_has_half_arith): LLVM half */
  bool masked_tail;         /* masked loads are cheap (AVX2+): strided loads under
                               a lane mask use one instead of a gather */
  unsigned masked_min_bytes; /* ... of elements at least this wide (4 on AVX2: bytes
                               are scalarized there) */
  /* Widest lanes of int32 for which acc + dot4(a, b) is one vpdpbusd
   * (AVX512-VNNI: 16; 8 and 4 with AVX512VL too); 0: none. */
  unsigned vnni_lanes_max;
  bool vnni_vl;
  /* Without VNNI on x86: the widest lanes of int32 for which dot4 is two
   * exact pmaddwd of the 16-bit halves (4 SSE2, 8 AVX2, 16 AVX512BW). */
  unsigned pmaddwd_lanes_max;
  /* x86: the widest lanes of float32 one cvtps2dq converts (4 SSE2, 8 AVX,
   * 16 AVX512F); 0 elsewhere. */
  unsigned cvt_lanes_max;
  /* AVX2 without AVX512BW: 32 int32 lanes narrow to bytes by two vpackssdw,
   * a vpackuswb and one vpermd (pack_bytes_avx2; measured on AVX2 only). */
  bool avx2_byte_packs;
  /* AArch64: dot4 as usdot (i8mm), else as two sdot (dotprod), 4 lanes */
  bool a64_usdot, a64_sdot;
  unsigned vector_bits;
  LLVMTypeRef t_void, t_i1, t_i8, t_i32, t_i64, t_f32, t_f64, t_ptr;
  struct {
    ingot_llvm_math_t kind;
    unsigned lanes;
    LLVMValueRef fn;
  } math[INGOT_LLVM_MATH_CACHE];
  uint32_t math_count;
} ingot_llvm_module_t;

/* ---- Small helpers over the LLVM-C API (static inline: one copy a file). */

/* `t` as a vector of `lanes` (lanes 0: `t` itself). */
static inline LLVMTypeRef ingot_llvm_vec_type(LLVMTypeRef t, unsigned lanes) {
  return lanes ? LLVMVectorType(t, lanes) : t;
}

/* A constant of `t` (scalar or vector: splat) from a scalar constant. */
static inline LLVMValueRef ingot_llvm_splat(LLVMTypeRef t, LLVMValueRef scalar) {
  if (LLVMGetTypeKind(t) != LLVMVectorTypeKind) return scalar;
  unsigned n = LLVMGetVectorSize(t);
  LLVMValueRef elems[64];
  for (unsigned i = 0; i < n && i < 64; ++i) elems[i] = scalar;
  return LLVMConstVector(elems, n);
}

static inline LLVMValueRef ingot_llvm_const_real(LLVMTypeRef t, double v) {
  LLVMTypeRef e = LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetElementType(t) : t;
  return ingot_llvm_splat(t, LLVMConstReal(e, v));
}

static inline LLVMValueRef ingot_llvm_const_int(LLVMTypeRef t, int64_t v) {
  LLVMTypeRef e = LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetElementType(t) : t;
  return ingot_llvm_splat(t, LLVMConstInt(e, (unsigned long long)v, 1));
}

/* The declaration of an overloaded intrinsic ("llvm.fmuladd", ...). */
LLVMValueRef ingot_llvm_intrinsic(ingot_llvm_module_t* m, const char* name, LLVMTypeRef* types,
                                  unsigned type_count, LLVMTypeRef* out_fn_type);
/* Calls intrinsic `name` overloaded on `type` with the given arguments. */
LLVMValueRef ingot_llvm_call_intrinsic(ingot_llvm_module_t* m, LLVMBuilderRef b, const char* name,
                                       LLVMTypeRef type, LLVMValueRef* args, unsigned count);
/* Adds the attributes every function of the module carries. */
void ingot_llvm_function_attrs(ingot_llvm_module_t* m, LLVMValueRef fn);

/* ---- codegen_llvm_math.c */
/* The internal function computing `kind` on scalars (lanes 0) or vectors of
 * `lanes` elements, defined on first use. Its type is `ret (args...)` with
 * the element type of the kind (f32, f64 or i64). */
LLVMValueRef ingot_llvm_math_function(ingot_llvm_module_t* m, ingot_llvm_math_t kind, unsigned lanes,
                                      LLVMTypeRef* out_fn_type);
/* Defines hidden memcpy, memmove and memset (byte loops, volatile) for calls
 * the backend may emit; the object must import nothing. */
void ingot_llvm_define_memory_functions(ingot_llvm_module_t* m);

/* ---- codegen_llvm_link.c */
/* A target machine for `target` (the caller disposes of it). */
ingot_status_t ingot_llvm_target_machine(const ingot_target_t* target, LLVMTargetMachineRef* out_tm);
/* Optimizes the module (O3), emits an object file, links it with ld.lld into
 * a shared object in memory (heap) and checks it. When `ir_path` is not NULL
 * the optimized IR is written there, when `out_text` is not NULL appended to
 * it; `out_object` NULL: stops after the IR (no object). */
ingot_status_t ingot_llvm_finish(ingot_llvm_module_t* m, LLVMTargetMachineRef tm, const char* ir_path,
                                 ingot_strbuf_t* out_text, uint8_t** out_object, size_t* out_size);

#endif /* INGOT_CODEGEN_LLVM_INTERNAL_H_ */
