/* Target `c`: C99 source from the loop IR.
 *
 * The module is self-contained: it includes no header and links against
 * nothing. It starts with its own fixed-width typedefs, inline math helpers
 * (exp/log/tanh/erf accurate to ~1 ulp in float, computed in double so that
 * loops stay vectorizable; double-precision exp, expm1, log, log1p, tanh,
 * erf, round (ties to even), trigonometric and hyperbolic functions and their
 * inverses, fmod and pow, a few ulp each, whose float versions round the
 * double result once; tests/elementwise checks them against libm), integer
 * floor division, and hidden memcpy/memset/
 * memmove for copies the compiler may emit; then the kernel ABI declarations
 * (the env from runtime/ingot_kernel_env.def, the rest from macros checked
 * against ingot_format.h below); then one static function per IR function, outlined bodies for its
 * parallel loops, the kernel table and the exported ingot_library_query.
 *
 * Codegen is generic over the IR: every expression and statement kind maps to
 * C; nothing here knows about graph ops. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen_internal.h"

/* ---- The kernel ABI as the module declares it. The env struct is printed
 * from the rows of runtime/ingot_kernel_env.def with the declarators of
 * ingot_format.h (the very text that declares the runtime's struct); the
 * types around it come from two macros, instantiated here with the prefix cg_
 * (checked against ingot_format.h's layout) and stringified with the prefix
 * ingot_ into every module. */
#define CG_ABI_HEAD(P) \
  typedef void (*P##parallel_body_fn_t)(void* context, int64_t begin, int64_t end);
#define CG_ABI_TAIL(P)                                                                        \
  typedef int32_t (*P##kernel_fn_t)(const P##kernel_env_t* env, void* const* args);          \
  typedef struct P##kernel_entry_t {                                                          \
    const char* name;                                                                         \
    P##kernel_fn_t fn;                                                                        \
  } P##kernel_entry_t;                                                                        \
  typedef struct P##kernel_library_t {                                                        \
    uint32_t abi_version;                                                                     \
    uint32_t kernel_count;                                                                    \
    const P##kernel_entry_t* kernels;                                                         \
  } P##kernel_library_t;

#define CG_STR_(...) #__VA_ARGS__
#define CG_STR(...) CG_STR_(__VA_ARGS__)

typedef ingot_kernel_env_t cg_kernel_env_t;
CG_ABI_TAIL(cg_)

#define CG_SAME_FIELD(T, f) \
  _Static_assert(offsetof(cg_##T, f) == offsetof(ingot_##T, f) && \
                 sizeof(((cg_##T*)0)->f) == sizeof(((ingot_##T*)0)->f), "ABI field " #T "." #f)
_Static_assert(sizeof(cg_kernel_entry_t) == sizeof(ingot_kernel_entry_t), "ABI: entry size");
_Static_assert(sizeof(cg_kernel_library_t) == sizeof(ingot_kernel_library_t), "ABI: library size");
CG_SAME_FIELD(kernel_entry_t, name);
CG_SAME_FIELD(kernel_entry_t, fn);
CG_SAME_FIELD(kernel_library_t, abi_version);
CG_SAME_FIELD(kernel_library_t, kernel_count);
CG_SAME_FIELD(kernel_library_t, kernels);
_Static_assert(INGOT_KERNEL_ABI_VERSION == 1u, "update CG_ABI_HEAD/CG_ABI_TAIL with the kernel ABI");

static const char k_abi_decls[] =
    CG_STR(CG_ABI_HEAD(ingot_)) " typedef struct ingot_kernel_env_t { "
#define INGOT_KERNEL_ENV_FIELD(type, name) CG_STR(INGOT_KERNEL_ENV_DECL_##type(name);) " "
#include "runtime/ingot_kernel_env.def"
    "} ingot_kernel_env_t; " CG_STR(CG_ABI_TAIL(ingot_));

/* ---- Types and helpers every module starts with. */
static const char k_prelude[] =
    "typedef __INT8_TYPE__ int8_t;\n"
    "typedef __UINT8_TYPE__ uint8_t;\n"
    "typedef __INT16_TYPE__ int16_t;\n"
    "typedef __UINT16_TYPE__ uint16_t;\n"
    "typedef __INT32_TYPE__ int32_t;\n"
    "typedef __UINT32_TYPE__ uint32_t;\n"
    "typedef __INT64_TYPE__ int64_t;\n"
    "typedef __UINT64_TYPE__ uint64_t;\n"
    "typedef __SIZE_TYPE__ size_t;\n"
    "\n"
    "/* Bit casts (folded by the compiler; vectorizable). */\n"
    "static inline uint32_t ingot_f32_bits(float f) { uint32_t u; __builtin_memcpy(&u, &f, 4); return u; }\n"
    "static inline float ingot_f32_from_bits(uint32_t u) { float f; __builtin_memcpy(&f, &u, 4); return f; }\n"
    "static inline uint64_t ingot_f64_bits(double f) { uint64_t u; __builtin_memcpy(&u, &f, 8); return u; }\n"
    "static inline double ingot_f64_from_bits(uint64_t u) { double f; __builtin_memcpy(&f, &u, 8); return f; }\n"
    "\n"
    "/* float16 and bfloat16 are storage: their bits in uint16_t, converted to\n"
    " * and from float32 on load and store (round to nearest, ties to even). */\n"
    "static inline float ingot_h2f(uint16_t h) {\n"
    "  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;\n"
    "  if (e == 0) return ingot_f32_from_bits(ingot_f32_bits((float)m * 0x1p-24f) | sign);\n"
    "  if (e == 31) return ingot_f32_from_bits(sign | 0x7f800000u | (m << 13));\n"
    "  return ingot_f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));\n"
    "}\n"
    "static inline uint16_t ingot_f2h(float f) {\n"
    "  uint32_t u = ingot_f32_bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;\n"
    "  if (a >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0u));\n"
    "  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);\n"
    "  if (a < 0x38800000u) {\n"
    "    float v = ingot_f32_from_bits(a) * 0x1p24f; /* exact; below 1024 */\n"
    "    v = (v + 0x1p23f) - 0x1p23f;                  /* to an integer, ties to even */\n"
    "    return (uint16_t)(sign | (uint32_t)v);\n"
    "  }\n"
    "  a += 0xfffu + ((a >> 13) & 1u);\n"
    "  return (uint16_t)(sign | ((a - 0x38000000u) >> 13));\n"
    "}\n"
    "/* float16 min and max (the loop IR's; + - * / sqrt go through float32,\n"
    " * exactly): one operand's bits, a NaN operand yields the other one. */\n"
    "static inline uint16_t ingot_minh(uint16_t a, uint16_t b) {\n"
    "  float x = ingot_h2f(a), y = ingot_h2f(b);\n"
    "  return (x < y || y != y) ? a : b;\n"
    "}\n"
    "static inline uint16_t ingot_maxh(uint16_t a, uint16_t b) {\n"
    "  float x = ingot_h2f(a), y = ingot_h2f(b);\n"
    "  return (x > y || y != y) ? a : b;\n"
    "}\n"
    "static inline float ingot_bf2f(uint16_t b) { return ingot_f32_from_bits((uint32_t)b << 16); }\n"
    "static inline uint16_t ingot_f2bf(float f) {\n"
    "  uint32_t u = ingot_f32_bits(f);\n"
    "  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* NaN stays NaN */\n"
    "  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
    "}\n"
    "\n"
    "/* exp(x) in double, relative error ~1e-15 for |x| <= 700 (no special cases:\n"
    " * callers clamp). Cody-Waite reduction x = k ln2 + r, |r| <= ln2/2, then a\n"
    " * degree-11 Taylor polynomial; 2^k is built from bits. */\n"
    "static inline double ingot_exp_core(double x) {\n"
    "  const double shifter = 0x1.8p52;\n"
    "  double kd = x * 0x1.71547652b82fep0 + shifter;\n"
    "  int64_t k = (int64_t)(ingot_f64_bits(kd) - ingot_f64_bits(shifter));\n"
    "  kd -= shifter;\n"
    "  double r = x - kd * 0x1.62e42fee00000p-1 - kd * 0x1.a39ef35793c76p-33;\n"
    "  double p = 1.0 / 39916800.0;             /* 1/11! */\n"
    "  p = p * r + 0x1.27e4fb7789f5cp-22;        /* 1/10! */\n"
    "  p = p * r + 0x1.71de3a556c734p-19;        /* 1/9! */\n"
    "  p = p * r + 0x1.a01a01a01a01ap-16;        /* 1/8! */\n"
    "  p = p * r + 0x1.a01a01a01a01ap-13;        /* 1/7! */\n"
    "  p = p * r + 0x1.6c16c16c16c17p-10;        /* 1/6! */\n"
    "  p = p * r + 0x1.1111111111111p-7;         /* 1/5! */\n"
    "  p = p * r + 0x1.5555555555555p-5;         /* 1/4! */\n"
    "  p = p * r + 0x1.5555555555555p-3;         /* 1/3! */\n"
    "  p = p * r + 0.5;\n"
    "  p = p * r + 1.0;\n"
    "  p = p * r + 1.0;\n"
    "  return p * ingot_f64_from_bits((uint64_t)(k + 1023) << 52);\n"
    "}\n"
    "\n"
    "/* exp(x) in float (max error 1.3 ulp): k = round(x / ln2) by the\n"
    " * 1.5*2^23 shifter, r = x - k ln2 with ln2 split so k*hi is exact, a\n"
    " * degree-7 Taylor polynomial, and 2^k applied in two halves so that\n"
    " * subnormal results round once. x is clamped to [-104, 89]; NaN passes. */\n"
    "static inline float ingot_expf(float x) {\n"
    "  float c = x > 89.0f ? 89.0f : x;\n"
    "  c = c < -104.0f ? -104.0f : c;\n"
    "  const float shifter = 0x1.8p23f;\n"
    "  float kf = c * 0x1.715476p0f + shifter;\n"
    "  int32_t k = (int32_t)(ingot_f32_bits(kf) - ingot_f32_bits(shifter));\n"
    "  kf -= shifter;\n"
    "  float r = c - kf * 0x1.62ep-1f;\n"
    "  r = r - kf * 0x1.0bfbe8p-15f;\n"
    "  float p = 0x1.a01a02p-13f;\n"
    "  p = p * r + 0x1.6c16c2p-10f;\n"
    "  p = p * r + 0x1.111112p-7f;\n"
    "  p = p * r + 0x1.555556p-5f;\n"
    "  p = p * r + 0x1.555556p-3f;\n"
    "  p = p * r + 0.5f;\n"
    "  p = p * r + 1.0f;\n"
    "  p = p * r + 1.0f;\n"
    "  int32_t k1 = k >> 1, k2 = k - k1;\n"
    "  return p * ingot_f32_from_bits((uint32_t)(k1 + 127) << 23) *\n"
    "         ingot_f32_from_bits((uint32_t)(k2 + 127) << 23);\n"
    "}\n"
    "\n"
    "/* log(x): x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) = 2 atanh(s),\n"
    " * s = (m-1)/(m+1), |s| <= 0.172, series to s^11, in double. */\n"
    "static inline float ingot_logf(float x) {\n"
    "  int sub = x < 0x1p-126f;\n"
    "  float xs = sub ? x * 0x1p24f : x;\n"
    "  uint32_t ix = ingot_f32_bits(xs);\n"
    "  int32_t e = (int32_t)(ix >> 23) - 127 - (sub ? 24 : 0);\n"
    "  float m = ingot_f32_from_bits((ix & 0x7fffffu) | 0x3f800000u);\n"
    "  int big = m > 0x1.6a09e6p0f;\n"
    "  double md = big ? 0.5 * (double)m : (double)m;\n"
    "  e += big;\n"
    "  double f = md - 1.0;\n"
    "  double s = f / (2.0 + f);\n"
    "  double s2 = s * s;\n"
    "  double p = 0x1.745d1745d1746p-4;          /* 1/11 */\n"
    "  p = p * s2 + 0x1.c71c71c71c71cp-4;        /* 1/9 */\n"
    "  p = p * s2 + 0x1.2492492492492p-3;        /* 1/7 */\n"
    "  p = p * s2 + 0x1.999999999999ap-3;        /* 1/5 */\n"
    "  p = p * s2 + 0x1.5555555555555p-2;        /* 1/3 */\n"
    "  p = p * s2 + 1.0;\n"
    "  float r = (float)((double)e * 0x1.62e42fefa39efp-1 + 2.0 * s * p);\n"
    "  r = x == 0.0f ? -__builtin_inff() : r;\n"
    "  r = x < 0.0f ? __builtin_nanf(\"\") : r;\n"
    "  r = x == __builtin_inff() ? x : r;\n"
    "  return x != x ? x : r;\n"
    "}\n"
    "\n"
    "/* tanh(x) = (e^2|x| - 1) / (e^2|x| + 1) in double, x - x^3/3 for tiny |x|. */\n"
    "static inline float ingot_tanhf(float x) {\n"
    "  float a = __builtin_fabsf(x);\n"
    "  float c = a < 10.0f ? a : 10.0f;\n"
    "  double ad = (double)c;\n"
    "  double e = ingot_exp_core(2.0 * ad);\n"
    "  double t = (e - 1.0) / (e + 1.0);\n"
    "  t = c < 0x1p-12f ? ad - ad * ad * ad * 0x1.5555555555555p-2 : t;\n"
    "  uint32_t bits = ingot_f32_bits((float)t) | (ingot_f32_bits(x) & 0x80000000u);\n"
    "  float r = ingot_f32_from_bits(bits);\n"
    "  return x != x ? x : r;\n"
    "}\n"
    "\n"
    "/* erf(x) = x P(t), t = 2 x^2 / 3.92^2 - 1, P of degree 18 fitted (weighted\n"
    " * least squares at Chebyshev nodes) to erf(x)/x on [0, 3.92]; relative error\n"
    " * 2e-10 in double. erf(x) rounds to 1 in float beyond 3.92. */\n"
    "static inline float ingot_erff(float x) {\n"
    "  float a = __builtin_fabsf(x);\n"
    "  float c = a < 3.92f ? a : 3.92f;\n"
    "  double xd = (double)c;\n"
    "  double t = xd * xd * 0x1.0a8e3bebf47c2p-3 - 1.0;\n"
    "  double p = 0x1.b8a225717a110p-15;\n"
    "  p = p * t + -0x1.44af237a07da0p-13;\n"
    "  p = p * t + 0x1.48a1ce9014bbdp-13;\n"
    "  p = p * t + -0x1.26c0b6929ec9cp-12;\n"
    "  p = p * t + 0x1.05cd9b766d0f5p-10;\n"
    "  p = p * t + -0x1.2005b35da7f82p-9;\n"
    "  p = p * t + 0x1.01626d49cad62p-8;\n"
    "  p = p * t + -0x1.d1528f9a479acp-8;\n"
    "  p = p * t + 0x1.97cfcdcb682fap-7;\n"
    "  p = p * t + -0x1.4ab0882fabadap-6;\n"
    "  p = p * t + 0x1.f439c68d8a5eep-6;\n"
    "  p = p * t + -0x1.63a989201b120p-5;\n"
    "  p = p * t + 0x1.dca808e341bd0p-5;\n"
    "  p = p * t + -0x1.2f2c62875d423p-4;\n"
    "  p = p * t + 0x1.7330d2e16631ap-4;\n"
    "  p = p * t + -0x1.bf3371f233cb8p-4;\n"
    "  p = p * t + 0x1.129a4cbb3525fp-3;\n"
    "  p = p * t + -0x1.70dcc76acd53ep-3;\n"
    "  p = p * t + 0x1.7164fe357d1f0p-2;\n"
    "  float r = a < 3.92f ? (float)(xd * p) : 1.0f;\n"
    "  r = ingot_f32_from_bits(ingot_f32_bits(r) | (ingot_f32_bits(x) & 0x80000000u));\n"
    "  return x != x ? x : r;\n"
    "}\n"
    "\n"
    "\n"
    "/* Double-precision cores (|error| a few ulp in double); the float versions\n"
    " * round them once. No libm: everything inline. */\n"
    "static inline double ingot_f64_copysign(double x, double s) {\n"
    "  return ingot_f64_from_bits((ingot_f64_bits(x) & 0x7fffffffffffffffull) | (ingot_f64_bits(s) & 0x8000000000000000ull));\n"
    "}\n"
    "/* exp(x) for any x: Cody-Waite reduction, degree-13 Taylor, 2^k applied in\n"
    " * two halves (so results between subnormal and overflow round once more at\n"
    " * most). About 1 ulp. */\n"
    "static inline double ingot_exp(double x) {\n"
    "  double c = x > 710.0 ? 710.0 : x;\n"
    "  c = c < -746.0 ? -746.0 : c;\n"
    "  const double shifter = 0x1.8p52;\n"
    "  double kd = c * 0x1.71547652b82fep0 + shifter;\n"
    "  int64_t k = (int64_t)(ingot_f64_bits(kd) - ingot_f64_bits(shifter));\n"
    "  kd -= shifter;\n"
    "  double r = c - kd * 0x1.62e42fee00000p-1 - kd * 0x1.a39ef35793c76p-33;\n"
    "  double p = 1.0 / 6227020800.0;              /* 1/13! */\n"
    "  p = p * r + 1.0 / 479001600.0;\n"
    "  p = p * r + 1.0 / 39916800.0;\n"
    "  p = p * r + 1.0 / 3628800.0;\n"
    "  p = p * r + 1.0 / 362880.0;\n"
    "  p = p * r + 1.0 / 40320.0;\n"
    "  p = p * r + 1.0 / 5040.0;\n"
    "  p = p * r + 1.0 / 720.0;\n"
    "  p = p * r + 1.0 / 120.0;\n"
    "  p = p * r + 1.0 / 24.0;\n"
    "  p = p * r + 1.0 / 6.0;\n"
    "  p = p * r + 0.5;\n"
    "  p = p * r + 1.0;\n"
    "  p = p * r + 1.0;\n"
    "  int64_t k1 = k / 2, k2 = k - k1;\n"
    "  double y = p * ingot_f64_from_bits((uint64_t)(k1 + 1023) << 52) * ingot_f64_from_bits((uint64_t)(k2 + 1023) << 52);\n"
    "  return x != x ? x : y;\n"
    "}\n"
    "/* exp(x) - 1 without cancellation near 0 (Taylor for |x| < 0.25). */\n"
    "static inline double ingot_expm1(double x) {\n"
    "  double p = 1.0 / 6227020800.0;              /* 1/13! */\n"
    "  p = p * x + 1.0 / 479001600.0;\n"
    "  p = p * x + 1.0 / 39916800.0;\n"
    "  p = p * x + 1.0 / 3628800.0;\n"
    "  p = p * x + 1.0 / 362880.0;\n"
    "  p = p * x + 1.0 / 40320.0;\n"
    "  p = p * x + 1.0 / 5040.0;\n"
    "  p = p * x + 1.0 / 720.0;\n"
    "  p = p * x + 1.0 / 120.0;\n"
    "  p = p * x + 1.0 / 24.0;\n"
    "  p = p * x + 1.0 / 6.0;\n"
    "  p = p * x + 0.5;\n"
    "  double small = x + x * x * p;\n"
    "  return __builtin_fabs(x) < 0.25 ? small : ingot_exp(x) - 1.0;\n"
    "}\n"
    "/* log(x): x = m 2^e, m in [sqrt(1/2), sqrt(2)), log(m) = 2 atanh(s) with\n"
    " * s = (m-1)/(m+1), |s| <= 0.1716, series to s^23. */\n"
    "static inline double ingot_log(double x) {\n"
    "  int sub = x < 0x1p-1022;\n"
    "  double xs = sub ? x * 0x1p54 : x;\n"
    "  uint64_t ix = ingot_f64_bits(xs);\n"
    "  int64_t e = (int64_t)((ix >> 52) & 0x7ff) - 1023 - (sub ? 54 : 0);\n"
    "  double m = ingot_f64_from_bits((ix & 0xfffffffffffffull) | 0x3ff0000000000000ull);\n"
    "  int big = m > 0x1.6a09e667f3bcdp0;\n"
    "  m = big ? 0.5 * m : m;\n"
    "  e += big;\n"
    "  double f = m - 1.0;\n"
    "  double s = f / (2.0 + f);\n"
    "  double s2 = s * s;\n"
    "  double p = 1.0 / 23.0;\n"
    "  p = p * s2 + 1.0 / 21.0;\n"
    "  p = p * s2 + 1.0 / 19.0;\n"
    "  p = p * s2 + 1.0 / 17.0;\n"
    "  p = p * s2 + 1.0 / 15.0;\n"
    "  p = p * s2 + 1.0 / 13.0;\n"
    "  p = p * s2 + 1.0 / 11.0;\n"
    "  p = p * s2 + 1.0 / 9.0;\n"
    "  p = p * s2 + 1.0 / 7.0;\n"
    "  p = p * s2 + 1.0 / 5.0;\n"
    "  p = p * s2 + 1.0 / 3.0;\n"
    "  double ed = (double)e;\n"
    "  double r = ed * 0x1.62e42fee00000p-1 + (2.0 * s + (2.0 * s * s2 * p + ed * 0x1.a39ef35793c76p-33));\n"
    "  r = x == 0.0 ? -__builtin_inf() : r;\n"
    "  r = x < 0.0 ? __builtin_nan(\"\") : r;\n"
    "  r = x == __builtin_inf() ? x : r;\n"
    "  return x != x ? x : r;\n"
    "}\n"
    "/* log(1 + x) with full relative accuracy near 0: log(u) * x / (u - 1), u = 1 + x. */\n"
    "static inline double ingot_log1p(double x) {\n"
    "  double u = 1.0 + x;\n"
    "  double d = u - 1.0;\n"
    "  double r = ingot_log(u) * (x / (d == 0.0 ? 1.0 : d));\n"
    "  r = d == 0.0 ? x : r;\n"
    "  return u == __builtin_inf() ? u : r;\n"
    "}\n"
    "static inline double ingot_tanh(double x) {\n"
    "  double a = __builtin_fabs(x);\n"
    "  double c = a < 22.0 ? a : 22.0;\n"
    "  double e = ingot_expm1(2.0 * c);\n"
    "  double t = e / (e + 2.0);\n"
    "  t = ingot_f64_copysign(t, x);\n"
    "  return x != x ? x : t;\n"
    "}\n"
    "/* sinh, cosh: exp in halves near overflow; Taylor of sinh below 0.25. */\n"
    "static inline double ingot_sinh(double x) {\n"
    "  double a = __builtin_fabs(x);\n"
    "  double e = ingot_exp(a < 709.0 ? a : 0.5 * a);\n"
    "  double big = a < 709.0 ? 0.5 * (e - 1.0 / e) : (0.5 * e) * e;\n"
    "  double a2 = a * a;\n"
    "  double p = 1.0 / 6227020800.0;\n"
    "  p = p * a2 + 1.0 / 39916800.0;\n"
    "  p = p * a2 + 1.0 / 362880.0;\n"
    "  p = p * a2 + 1.0 / 5040.0;\n"
    "  p = p * a2 + 1.0 / 120.0;\n"
    "  p = p * a2 + 1.0 / 6.0;\n"
    "  double small = a + a * a2 * p;\n"
    "  double r = ingot_f64_copysign(a < 0.25 ? small : big, x);\n"
    "  return x != x ? x : r;\n"
    "}\n"
    "static inline double ingot_cosh(double x) {\n"
    "  double a = __builtin_fabs(x);\n"
    "  double e = ingot_exp(a < 709.0 ? a : 0.5 * a);\n"
    "  double r = a < 709.0 ? 0.5 * (e + 1.0 / e) : (0.5 * e) * e;\n"
    "  return x != x ? x : r;\n"
    "}\n"
    "static inline double ingot_asinh(double x) {\n"
    "  double a = __builtin_fabs(x);\n"
    "  double r = a > 0x1p500 ? ingot_log(a) + 0x1.62e42fefa39efp-1\n"
    "                         : ingot_log1p(a + a * a / (1.0 + __builtin_sqrt(1.0 + a * a)));\n"
    "  r = ingot_f64_copysign(r, x);\n"
    "  return x != x ? x : r;\n"
    "}\n"
    "static inline double ingot_acosh(double x) {\n"
    "  double t = x - 1.0;\n"
    "  double r = x > 0x1p500 ? ingot_log(x) + 0x1.62e42fefa39efp-1 : ingot_log1p(t + __builtin_sqrt(2.0 * t + t * t));\n"
    "  return x < 1.0 ? __builtin_nan(\"\") : r;\n"
    "}\n"
    "static inline double ingot_atanh(double x) {\n"
    "  double a = __builtin_fabs(x);\n"
    "  double r = 0.5 * ingot_log1p(2.0 * a / (1.0 - a));\n"
    "  r = a > 1.0 ? __builtin_nan(\"\") : r;\n"
    "  r = ingot_f64_copysign(r, x);\n"
    "  return x != x ? x : r;\n"
    "}\n"
    "/* atan: |x| > 1 via pi/2 - atan(1/|x|); above tan(pi/12) via\n"
    " * pi/6 + atan((t sqrt3 - 1) / (t + sqrt3)); then the series to t^29. */\n"
    "static inline double ingot_atan(double x) {\n"
    "  double a = __builtin_fabs(x);\n"
    "  int inv = a > 1.0;\n"
    "  double t = inv ? 1.0 / a : a;\n"
    "  int shift = t > 0x1.126145e9ecd56p-2; /* 2 - sqrt(3) */\n"
    "  const double sqrt3 = 0x1.bb67ae8584caap0;\n"
    "  t = shift ? (t * sqrt3 - 1.0) / (t + sqrt3) : t;\n"
    "  double t2 = t * t;\n"
    "  double p = -1.0 / 29.0;\n"
    "  p = p * t2 + 1.0 / 27.0;\n"
    "  p = p * t2 - 1.0 / 25.0;\n"
    "  p = p * t2 + 1.0 / 23.0;\n"
    "  p = p * t2 - 1.0 / 21.0;\n"
    "  p = p * t2 + 1.0 / 19.0;\n"
    "  p = p * t2 - 1.0 / 17.0;\n"
    "  p = p * t2 + 1.0 / 15.0;\n"
    "  p = p * t2 - 1.0 / 13.0;\n"
    "  p = p * t2 + 1.0 / 11.0;\n"
    "  p = p * t2 - 1.0 / 9.0;\n"
    "  p = p * t2 + 1.0 / 7.0;\n"
    "  p = p * t2 - 1.0 / 5.0;\n"
    "  p = p * t2 + 1.0 / 3.0;\n"
    "  double r = t - t * t2 * p;\n"
    "  r = shift ? 0x1.0c152382d7366p-1 + r : r;   /* pi/6 */\n"
    "  r = inv ? 0x1.921fb54442d18p0 - r : r;      /* pi/2 */\n"
    "  r = ingot_f64_copysign(r, x);\n"
    "  return x != x ? x : r;\n"
    "}\n"
    "static inline double ingot_asin(double x) {\n"
    "  double a = __builtin_fabs(x);\n"
    "  double r = ingot_atan(a / __builtin_sqrt((1.0 - a) * (1.0 + a)));\n"
    "  r = a > 1.0 ? __builtin_nan(\"\") : r;\n"
    "  r = ingot_f64_copysign(r, x);\n"
    "  return x != x ? x : r;\n"
    "}\n"
    "static inline double ingot_acos(double x) {\n"
    "  double r = 2.0 * ingot_atan(__builtin_sqrt((1.0 - x) / (1.0 + x)));\n"
    "  r = __builtin_fabs(x) > 1.0 ? __builtin_nan(\"\") : r;\n"
    "  return x != x ? x : r;\n"
    "}\n"
    "/* sin, cos, tan: k = round(x 2/pi), r = x - k pi/2 in three parts (exact\n"
    " * for |x| < 2^20 pi/2; beyond, the reduction loses bits), then the Taylor\n"
    " * series of sin and cos on [-pi/4, pi/4]; the quadrant k mod 4 picks. */\n"
    "static inline double ingot_trig_reduce(double x, int64_t* q) {\n"
    "  const double shifter = 0x1.8p52;\n"
    "  double kd = x * 0x1.45f306dc9c883p-1 + shifter;\n"
    "  *q = (int64_t)(ingot_f64_bits(kd) - ingot_f64_bits(shifter));\n"
    "  kd -= shifter;\n"
    "  double r = x - kd * 0x1.921fb54400000p0;\n"
    "  r = r - kd * 0x1.0b4611a600000p-34;\n"
    "  r = r - kd * 0x1.3198a2e037073p-69;\n"
    "  return r;\n"
    "}\n"
    "static inline double ingot_sin_poly(double r) {\n"
    "  double r2 = r * r;\n"
    "  double p = 1.0 / 355687428096000.0;        /* 1/17! */\n"
    "  p = p * r2 - 1.0 / 1307674368000.0;\n"
    "  p = p * r2 + 1.0 / 6227020800.0;\n"
    "  p = p * r2 - 1.0 / 39916800.0;\n"
    "  p = p * r2 + 1.0 / 362880.0;\n"
    "  p = p * r2 - 1.0 / 5040.0;\n"
    "  p = p * r2 + 1.0 / 120.0;\n"
    "  p = p * r2 - 1.0 / 6.0;\n"
    "  return r + r * r2 * p;\n"
    "}\n"
    "static inline double ingot_cos_poly(double r) {\n"
    "  double r2 = r * r;\n"
    "  double p = -1.0 / 6402373705728000.0;      /* -1/18! */\n"
    "  p = p * r2 + 1.0 / 20922789888000.0;\n"
    "  p = p * r2 - 1.0 / 87178291200.0;\n"
    "  p = p * r2 + 1.0 / 479001600.0;\n"
    "  p = p * r2 - 1.0 / 3628800.0;\n"
    "  p = p * r2 + 1.0 / 40320.0;\n"
    "  p = p * r2 - 1.0 / 720.0;\n"
    "  p = p * r2 + 1.0 / 24.0;\n"
    "  return 1.0 - 0.5 * r2 + r2 * r2 * p;\n"
    "}\n"
    "static inline double ingot_sin(double x) {\n"
    "  int64_t q;\n"
    "  double r = ingot_trig_reduce(x, &q);\n"
    "  double s = ingot_sin_poly(r), c = ingot_cos_poly(r);\n"
    "  double v = (q & 1) ? c : s;\n"
    "  return (q & 2) ? -v : v;\n"
    "}\n"
    "static inline double ingot_cos(double x) {\n"
    "  int64_t q;\n"
    "  double r = ingot_trig_reduce(x, &q);\n"
    "  double s = ingot_sin_poly(r), c = ingot_cos_poly(r);\n"
    "  double v = (q & 1) ? s : c;\n"
    "  return ((q + 1) & 2) ? -v : v;\n"
    "}\n"
    "static inline double ingot_tan(double x) {\n"
    "  int64_t q;\n"
    "  double r = ingot_trig_reduce(x, &q);\n"
    "  double s = ingot_sin_poly(r), c = ingot_cos_poly(r);\n"
    "  return (q & 1) ? -c / s : s / c;\n"
    "}\n"
    "/* Round to nearest, ties to even (the default rounding mode does it when\n"
    " * 2^52 is added and taken away); |x| >= 2^52 is an integer already. */\n"
    "static inline double ingot_round(double x) {\n"
    "  double a = __builtin_fabs(x);\n"
    "  double r = (a + 0x1p52) - 0x1p52;\n"
    "  r = a < 0x1p52 ? r : a;\n"
    "  return ingot_f64_copysign(r, x);\n"
    "}\n"
    "static inline float ingot_roundf(float x) {\n"
    "  float a = __builtin_fabsf(x);\n"
    "  float r = (a + 0x1p23f) - 0x1p23f;\n"
    "  r = a < 0x1p23f ? r : a;\n"
    "  return ingot_f32_from_bits((ingot_f32_bits(r) & 0x7fffffffu) | (ingot_f32_bits(x) & 0x80000000u));\n"
    "}\n"
    "/* fmod in double, exact: long division of the significands. */\n"
    "static inline double ingot_fmod(double x, double y) {\n"
    "  uint64_t ux = ingot_f64_bits(x), uy = ingot_f64_bits(y);\n"
    "  uint64_t sign = ux & 0x8000000000000000ull;\n"
    "  ux &= 0x7fffffffffffffffull;\n"
    "  uy &= 0x7fffffffffffffffull;\n"
    "  if (uy == 0 || ux >= 0x7ff0000000000000ull || uy > 0x7ff0000000000000ull) return (x * y) / (x * y);\n"
    "  if (ux < uy) return x;\n"
    "  if (ux == uy) return ingot_f64_from_bits(sign);\n"
    "  int64_t ex = (int64_t)(ux >> 52), ey = (int64_t)(uy >> 52);\n"
    "  uint64_t mx = ux & 0xfffffffffffffull, my = uy & 0xfffffffffffffull;\n"
    "  const uint64_t hidden = 0x10000000000000ull;\n"
    "  if (ex == 0) { ex = 1; while (!(mx & hidden)) { mx <<= 1; --ex; } } else { mx |= hidden; }\n"
    "  if (ey == 0) { ey = 1; while (!(my & hidden)) { my <<= 1; --ey; } } else { my |= hidden; }\n"
    "  for (; ex > ey; --ex) {\n"
    "    if (mx >= my) mx -= my;\n"
    "    mx <<= 1;\n"
    "  }\n"
    "  if (mx >= my) mx -= my;\n"
    "  if (mx == 0) return ingot_f64_from_bits(sign);\n"
    "  while (!(mx & hidden)) { mx <<= 1; --ex; }\n"
    "  uint64_t bits = ex > 0 ? ((uint64_t)ex << 52) | (mx & 0xfffffffffffffull) : mx >> (1 - ex);\n"
    "  return ingot_f64_from_bits(bits | sign);\n"
    "}\n"
    "/* pow in double: exp(y log|x|) with the sign and special cases of C pow. */\n"
    "static inline double ingot_pow(double x, double y) {\n"
    "  double ay = __builtin_fabs(y);\n"
    "  int yint = ay < 0x1p53 ? ingot_round(y) == y : 1;\n"
    "  int yodd = yint && ay < 0x1p53 && ingot_fmod(ay, 2.0) == 1.0;\n"
    "  double ax = __builtin_fabs(x);\n"
    "  double r = ingot_exp(y * ingot_log(ax));\n"
    "  r = ax == 0.0 ? (y < 0.0 ? __builtin_inf() : 0.0) : r;\n"
    "  r = ax == __builtin_inf() ? (y < 0.0 ? 0.0 : __builtin_inf()) : r;\n"
    "  r = (ax == 1.0 && ay == __builtin_inf()) ? 1.0 : r;\n"
    "  r = (x < 0.0 || (x == 0.0 && ingot_f64_bits(x) != 0)) && yodd ? -r : r;\n"
    "  r = x < 0.0 && !yint ? __builtin_nan(\"\") : r;\n"
    "  r = y != y || x != x ? x + y : r;\n"
    "  r = y == 0.0 || x == 1.0 ? 1.0 : r;\n"
    "  return r;\n"
    "}\n"
    "/* erf in double: the Maclaurin series below 2 (60 terms), else\n"
    " * 1 - erfc(x) with erfc from its continued fraction (60 levels). */\n"
    "static inline double ingot_erf(double x) {\n"
    "  double a = __builtin_fabs(x);\n"
    "  double c = a < 6.0 ? a : 6.0;\n"
    "  double x2 = c * c;\n"
    "  double term = c, sum = c;\n"
    "  for (int n = 1; n < 60; ++n) {\n"
    "    term *= -x2 / (double)n;\n"
    "    sum += term / (double)(2 * n + 1);\n"
    "  }\n"
    "  double series = sum * 0x1.20dd750429b6dp0;   /* 2/sqrt(pi) */\n"
    "  double t = c;\n"
    "  for (int k = 60; k >= 1; --k) t = c + (0.5 * (double)k) / t;\n"
    "  double cf = 1.0 - ingot_exp(-x2) / (t * 0x1.c5bf891b4ef6bp0);  /* sqrt(pi) */\n"
    "  double r = c < 2.0 ? series : cf;\n"
    "  r = ingot_f64_copysign(r, x);\n"
    "  return x != x ? x : r;\n"
    "}\n"
    "/* Float versions: the double cores, rounded once. */\n"
    "static inline float ingot_sinf(float x) { return (float)ingot_sin((double)x); }\n"
    "static inline float ingot_cosf(float x) { return (float)ingot_cos((double)x); }\n"
    "static inline float ingot_tanf(float x) { return (float)ingot_tan((double)x); }\n"
    "static inline float ingot_asinf(float x) { return (float)ingot_asin((double)x); }\n"
    "static inline float ingot_acosf(float x) { return (float)ingot_acos((double)x); }\n"
    "static inline float ingot_atanf(float x) { return (float)ingot_atan((double)x); }\n"
    "static inline float ingot_sinhf(float x) { return (float)ingot_sinh((double)x); }\n"
    "static inline float ingot_coshf(float x) { return (float)ingot_cosh((double)x); }\n"
    "static inline float ingot_asinhf(float x) { return (float)ingot_asinh((double)x); }\n"
    "static inline float ingot_acoshf(float x) { return (float)ingot_acosh((double)x); }\n"
    "static inline float ingot_atanhf(float x) { return (float)ingot_atanh((double)x); }\n"
    "/* floor / ceil: the compiler's builtins where they are one instruction\n"
    " * (x86 with SSE4.1, AArch64); elsewhere a builtin may become a call to libm\n"
    " * (gcc on plain x86-64, Arm M-profile, RISC-V), which the code must not\n"
    " * import, so through a truncating conversion, exact for |x| < 2^23 (larger\n"
    " * floats are integers). The result keeps the sign of x (floor(-0) = -0,\n"
    " * ceil(-0.5) = -0). */\n"
    "#if !defined(__SSE4_1__) && !defined(__aarch64__)\n"
    "static inline float ingot_floorf(float x) {\n"
    "  float t = (float)(int32_t)x;\n"
    "  t = t > x ? t - 1.0f : t;\n"
    "  t = ingot_f32_from_bits(ingot_f32_bits(t) | (ingot_f32_bits(x) & 0x80000000u));\n"
    "  return __builtin_fabsf(x) < 0x1p23f ? t : x;\n"
    "}\n"
    "static inline float ingot_ceilf(float x) {\n"
    "  float t = (float)(int32_t)x;\n"
    "  t = t < x ? t + 1.0f : t;\n"
    "  t = ingot_f32_from_bits(ingot_f32_bits(t) | (ingot_f32_bits(x) & 0x80000000u));\n"
    "  return __builtin_fabsf(x) < 0x1p23f ? t : x;\n"
    "}\n"
    "static inline double ingot_floor(double x) {\n"
    "  double t = (double)(int64_t)x;\n"
    "  t = t > x ? t - 1.0 : t;\n"
    "  t = ingot_f64_from_bits(ingot_f64_bits(t) | (ingot_f64_bits(x) & 0x8000000000000000ull));\n"
    "  return __builtin_fabs(x) < 0x1p52 ? t : x;\n"
    "}\n"
    "static inline double ingot_ceil(double x) {\n"
    "  double t = (double)(int64_t)x;\n"
    "  t = t < x ? t + 1.0 : t;\n"
    "  t = ingot_f64_from_bits(ingot_f64_bits(t) | (ingot_f64_bits(x) & 0x8000000000000000ull));\n"
    "  return __builtin_fabs(x) < 0x1p52 ? t : x;\n"
    "}\n"
    "#else\n"
    "static inline float ingot_floorf(float x) { return __builtin_floorf(x); }\n"
    "static inline float ingot_ceilf(float x) { return __builtin_ceilf(x); }\n"
    "static inline double ingot_floor(double x) { return __builtin_floor(x); }\n"
    "static inline double ingot_ceil(double x) { return __builtin_ceil(x); }\n"
    "#endif\n"
    "\n"
    "/* fmod for float, exact (C fmodf semantics): long division of the significands. */\n"
    "static inline float ingot_fmodf(float x, float y) {\n"
    "  uint32_t ux = ingot_f32_bits(x), uy = ingot_f32_bits(y);\n"
    "  uint32_t sign = ux & 0x80000000u;\n"
    "  ux &= 0x7fffffffu;\n"
    "  uy &= 0x7fffffffu;\n"
    "  if (uy == 0 || ux >= 0x7f800000u || uy > 0x7f800000u) return (x * y) / (x * y);\n"
    "  if (ux < uy) return x;\n"
    "  if (ux == uy) return ingot_f32_from_bits(sign);\n"
    "  int32_t ex = (int32_t)(ux >> 23), ey = (int32_t)(uy >> 23);\n"
    "  uint32_t mx = ux & 0x7fffffu, my = uy & 0x7fffffu;\n"
    "  if (ex == 0) { ex = 1; while (!(mx & 0x800000u)) { mx <<= 1; --ex; } } else { mx |= 0x800000u; }\n"
    "  if (ey == 0) { ey = 1; while (!(my & 0x800000u)) { my <<= 1; --ey; } } else { my |= 0x800000u; }\n"
    "  for (; ex > ey; --ex) {\n"
    "    if (mx >= my) mx -= my;\n"
    "    mx <<= 1;\n"
    "  }\n"
    "  if (mx >= my) mx -= my;\n"
    "  if (mx == 0) return ingot_f32_from_bits(sign);\n"
    "  while (!(mx & 0x800000u)) { mx <<= 1; --ex; }\n"
    "  uint32_t bits = ex > 0 ? ((uint32_t)ex << 23) | (mx & 0x7fffffu) : mx >> (1 - ex);\n"
    "  return ingot_f32_from_bits(bits | sign);\n"
    "}\n"
    "\n"
    "/* Integer division and modulo rounding toward negative infinity (Python and\n"
    " * ONNX Mod semantics). Division by zero gives 0 rather than trapping. */\n"
    "static inline int64_t ingot_floordiv(int64_t a, int64_t b) {\n"
    "  if (b == 0) return 0;\n"
    "  if (b == -1) return (int64_t)(0u - (uint64_t)a);\n"
    "  int64_t q = a / b, r = a % b;\n"
    "  return q - (int64_t)((r != 0) & ((r ^ b) < 0));\n"
    "}\n"
    "static inline int64_t ingot_floormod(int64_t a, int64_t b) {\n"
    "  if (b == 0 || b == -1) return 0;\n"
    "  int64_t r = a % b;\n"
    "  return r + (((r != 0) & ((r ^ b) < 0)) ? b : 0);\n"
    "}\n"
    "static inline int64_t ingot_ipow(int64_t a, int64_t b) {\n"
    "  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;\n"
    "  uint64_t r = 1, x = (uint64_t)a;\n"
    "  while (b) { if (b & 1) r *= x; x *= x; b >>= 1; }\n"
    "  return (int64_t)r;\n"
    "}\n"
    "static inline int64_t ingot_min_i64(int64_t a, int64_t b) { return a < b ? a : b; }\n"
    "static inline int64_t ingot_max_i64(int64_t a, int64_t b) { return a > b ? a : b; }\n"
    "static inline int64_t ingot_abs_i64(int64_t a) { return a < 0 ? (int64_t)(0u - (uint64_t)a) : a; }\n"
    "/* dot4: the four bytes of a (unsigned) times those of b (signed), summed;\n"
    " * in int32 (|sum| < 2^17), unrolled, so that a loop over b vectorizes. */\n"
    "static inline int32_t ingot_dot4(int32_t a, int32_t b) {\n"
    "  uint32_t ua = (uint32_t)a, ub = (uint32_t)b;\n"
    "  return (int32_t)(ua & 255u) * (int32_t)(int8_t)(uint8_t)ub +\n"
    "         (int32_t)((ua >> 8) & 255u) * (int32_t)(int8_t)(uint8_t)(ub >> 8) +\n"
    "         (int32_t)((ua >> 16) & 255u) * (int32_t)(int8_t)(uint8_t)(ub >> 16) +\n"
    "         (int32_t)(ua >> 24) * (int32_t)(int8_t)(uint8_t)(ub >> 24);\n"
    "}\n"
    "/* dot2: the two signed 16-bit halves of a times those of b, summed,\n"
    " * wrapped to int32 (x86's pmaddwd). */\n"
    "static inline int32_t ingot_dot2(int32_t a, int32_t b) {\n"
    "  uint32_t ua = (uint32_t)a, ub = (uint32_t)b;\n"
    "  return (int32_t)((uint32_t)((int32_t)(int16_t)(uint16_t)ua * (int32_t)(int16_t)(uint16_t)ub) +\n"
    "                   (uint32_t)((int32_t)(int16_t)(uint16_t)(ua >> 16) * (int32_t)(int16_t)(uint16_t)(ub >> 16)));\n"
    "}\n"
    "/* fminf / fmaxf semantics: a NaN operand yields the other one. */\n"
    "static inline float ingot_fminf(float a, float b) { return (a < b || b != b) ? a : b; }\n"
    "static inline float ingot_fmaxf(float a, float b) { return (a > b || b != b) ? a : b; }\n"
    "static inline double ingot_fmin(double a, double b) { return (a < b || b != b) ? a : b; }\n"
    "static inline double ingot_fmax(double a, double b) { return (a > b || b != b) ? a : b; }\n"
    "static inline float ingot_sqf(float a) { return a * a; }\n"
    "static inline double ingot_sq(double a) { return a * a; }\n"
    "\n"
    "/* The compiler may emit calls to these for copies; volatile byte loops keep\n"
    " * it from turning them back into calls to themselves. */\n"
    "__attribute__((visibility(\"hidden\"))) void* memcpy(void* dst, const void* src, size_t n) {\n"
    "  volatile unsigned char* d = (volatile unsigned char*)dst;\n"
    "  const volatile unsigned char* s = (const volatile unsigned char*)src;\n"
    "  while (n--) *d++ = *s++;\n"
    "  return dst;\n"
    "}\n"
    "__attribute__((visibility(\"hidden\"))) void* memmove(void* dst, const void* src, size_t n) {\n"
    "  volatile unsigned char* d = (volatile unsigned char*)dst;\n"
    "  const volatile unsigned char* s = (const volatile unsigned char*)src;\n"
    "  if (d < s) { while (n--) *d++ = *s++; } else { d += n; s += n; while (n--) *--d = *--s; }\n"
    "  return dst;\n"
    "}\n"
    "__attribute__((visibility(\"hidden\"))) void* memset(void* dst, int c, size_t n) {\n"
    "  volatile unsigned char* d = (volatile unsigned char*)dst;\n"
    "  while (n--) *d++ = (unsigned char)c;\n"
    "  return dst;\n"
    "}\n"
    ;

/* ---- Emitter state for one module. */
typedef struct cg_t {
  ingot_cprint_t p;             /* names, scopes, expressions */
  const char* cname;            /* C name of the kernel function */
  ingot_strbuf_t outlined;      /* outlined parallel bodies of this kernel */
  uint32_t par_count;           /* module-wide counter for outlined bodies */
  bool in_parallel;             /* emitting inside an outlined body */
} cg_t;

#define CG_PAIR(fn) \
  { fn "f", fn }

/* How C spells what expressions need (codegen_cprint.c prints them): the
 * prelude's helpers, the compiler's builtins. */
static const ingot_cprint_dialect_t k_c_dialect = {
    .target = "c",
    .types = {[INGOT_DTYPE_F32] = "float",
              [INGOT_DTYPE_F64] = "double",
              [INGOT_DTYPE_I8] = "int8_t",
              [INGOT_DTYPE_U8] = "uint8_t",
              [INGOT_DTYPE_I32] = "int32_t",
              [INGOT_DTYPE_I64] = "int64_t",
              [INGOT_DTYPE_I16] = "int16_t",
              [INGOT_DTYPE_U16] = "uint16_t",
              [INGOT_DTYPE_U32] = "uint32_t",
              [INGOT_DTYPE_U64] = "uint64_t",
              [INGOT_DTYPE_F16] = "uint16_t",  /* storage: the bits (ingot_h2f, ingot_f2h) */
              [INGOT_DTYPE_BF16] = "uint16_t",
              [INGOT_DTYPE_BOOL] = "_Bool"},
    .unary = {[INGOT_IR_ABS] = CG_PAIR("__builtin_fabs"), [INGOT_IR_SQRT] = CG_PAIR("__builtin_sqrt"),
              [INGOT_IR_FLOOR] = CG_PAIR("ingot_floor"),  [INGOT_IR_CEIL] = CG_PAIR("ingot_ceil"),
              [INGOT_IR_ROUND] = CG_PAIR("ingot_round"),  [INGOT_IR_EXP] = CG_PAIR("ingot_exp"),
              [INGOT_IR_LOG] = CG_PAIR("ingot_log"),      [INGOT_IR_TANH] = CG_PAIR("ingot_tanh"),
              [INGOT_IR_ERF] = CG_PAIR("ingot_erf"),      [INGOT_IR_SIN] = CG_PAIR("ingot_sin"),
              [INGOT_IR_COS] = CG_PAIR("ingot_cos"),      [INGOT_IR_TAN] = CG_PAIR("ingot_tan"),
              [INGOT_IR_ASIN] = CG_PAIR("ingot_asin"),    [INGOT_IR_ACOS] = CG_PAIR("ingot_acos"),
              [INGOT_IR_ATAN] = CG_PAIR("ingot_atan"),    [INGOT_IR_SINH] = CG_PAIR("ingot_sinh"),
              [INGOT_IR_COSH] = CG_PAIR("ingot_cosh"),    [INGOT_IR_ASINH] = CG_PAIR("ingot_asinh"),
              [INGOT_IR_ACOSH] = CG_PAIR("ingot_acosh"),  [INGOT_IR_ATANH] = CG_PAIR("ingot_atanh")},
    /* float pow goes to the runtime's powf (env), double pow to the prelude. */
    .binary = {[INGOT_IR_MOD] = CG_PAIR("ingot_fmod"),
               [INGOT_IR_MIN] = CG_PAIR("ingot_fmin"),
               [INGOT_IR_MAX] = CG_PAIR("ingot_fmax"),
               [INGOT_IR_POW] = {"env->powf", "ingot_pow"}},
    .square = CG_PAIR("ingot_sq"),
    .nan = {"__builtin_nanf(\"\")", "__builtin_nan(\"\")"},
    .inf = {"__builtin_inff()", "__builtin_inf()"},
    .int_helper = "ingot_",
};

#define CG_CHECK(expr)               \
  do {                               \
    ingot_status_t st_ = (expr);     \
    if (st_ != INGOT_OK) return st_; \
  } while (0)

static void cg_append_c_string(ingot_strbuf_t* sb, const char* s) {
  ingot_strbuf_append(sb, "\"");
  for (const unsigned char* p = (const unsigned char*)s; *p; ++p) {
    if (*p == '"' || *p == '\\') ingot_strbuf_appendf(sb, "\\%c", *p);
    else if (*p < 32 || *p >= 127 || *p == '?') ingot_strbuf_appendf(sb, "\\%03o", *p);
    else ingot_strbuf_append_bytes(sb, p, 1);
  }
  ingot_strbuf_append(sb, "\"");
}

/* The ABI declarations arrive as one line (a stringified macro); lay them out
 * one member a line for readers of the module. */
static void cg_append_decls(ingot_strbuf_t* sb, const char* text) {
  int depth = 0, parens = 0;
  for (const char* p = text; *p; ++p) {
    char c = *p;
    if (c == '(') ++parens;
    if (c == ')') --parens;
    if (c == '}') {
      --depth;
      while (sb->length && sb->data[sb->length - 1] == ' ') sb->data[--sb->length] = '\0';
    }
    ingot_strbuf_append_bytes(sb, &c, 1);
    if ((c == ';' && parens == 0) || c == '{') {
      if (c == '{') ++depth;
      ingot_strbuf_append(sb, "\n");
      for (int i = 0; i < depth; ++i) ingot_strbuf_append(sb, "  ");
      while (p[1] == ' ') ++p;
    }
  }
}

/* ---- Statements. */
static ingot_status_t cg_stmt(cg_t* cg, ingot_strbuf_t* sb, const ingot_ir_stmt_t* s, int depth);

/* Emits `s` as the contents of a C block (the braces are the caller's): a
 * BLOCK's statements inline, anything else as one statement. Declarations made
 * inside go out of scope at the end. */
static ingot_status_t cg_body(cg_t* cg, ingot_strbuf_t* sb, const ingot_ir_stmt_t* s, int depth) {
  size_t mark = cg->p.scope.count;
  ingot_status_t st = INGOT_OK;
  if (s && s->kind == INGOT_IR_STMT_BLOCK) {
    for (uint32_t i = 0; i < s->u.block.count && st == INGOT_OK; ++i)
      st = cg_stmt(cg, sb, s->u.block.stmts[i], depth);
  } else {
    st = cg_stmt(cg, sb, s, depth);
  }
  ingot_cprint_scope_pop(&cg->p, mark);
  return st;
}

static ingot_status_t cg_check_loop(cg_t* cg, const ingot_ir_stmt_t* s) {
  const ingot_ir_func_t* f = cg->p.f;
  uint32_t v = s->u.loop.var;
  if (v >= f->var_count)
    return ingot_cprint_fail(&cg->p, INGOT_ERROR_INVALID_ARGUMENT, "loop variable index %u out of range", v);
  if (f->vars[v].kind != INGOT_IR_VAR_LOOP)
    return ingot_cprint_fail(&cg->p, INGOT_ERROR_INVALID_ARGUMENT, "loop over '%s', which is not a loop variable",
                             f->vars[v].name);
  if (cg->p.in_scope[v])
    return ingot_cprint_fail(&cg->p, INGOT_ERROR_INVALID_ARGUMENT, "loop variable '%s' bound twice", f->vars[v].name);
  if (s->u.loop.extent <= 0)
    return ingot_cprint_fail(&cg->p, INGOT_ERROR_INVALID_ARGUMENT, "loop '%s' has extent %lld", f->vars[v].name,
                             (long long)s->u.loop.extent);
  return INGOT_OK;
}

/* A PARALLEL loop: its body becomes a static function over [begin, end) with
 * a context struct holding the env, the buffers it touches and the enclosing
 * variables it reads; the kernel fills the struct and calls parallel_for. */
static ingot_status_t cg_parallel(cg_t* cg, ingot_strbuf_t* sb, const ingot_ir_stmt_t* s, int depth) {
  const ingot_ir_func_t* f = cg->p.f;
  ingot_ir_uses_t u;
  ingot_ir_uses_collect(f, s->u.loop.body, &u);
  uint32_t k = cg->par_count++;
  ingot_strbuf_t fn = {0};
  ingot_strbuf_t call = {0};
  ingot_strbuf_appendf(&fn, "typedef struct par%u_%s_ctx {\n  const ingot_kernel_env_t* env;\n", k,
                       cg->cname);
  ingot_cprint_indent(&call, depth);
  ingot_strbuf_appendf(&call, "{\n");
  ingot_cprint_indent(&call, depth + 1);
  ingot_strbuf_appendf(&call, "par%u_%s_ctx ctx%u_;\n", k, cg->cname, k);
  ingot_cprint_indent(&call, depth + 1);
  ingot_strbuf_appendf(&call, "ctx%u_.env = env;\n", k);
  ingot_strbuf_t unpack = {0};
  ingot_strbuf_append(&unpack, "  const ingot_kernel_env_t* env = c_->env;\n  (void)env;\n");
  for (uint32_t i = 0; i < f->buffer_count; ++i) {
    if (!(u.loaded[i] || u.stored[i])) continue;
    const char* ty;
    ingot_status_t st = ingot_cprint_type(&cg->p, f->buffers[i].dtype, &ty);
    if (st != INGOT_OK) {
      ingot_ir_uses_free(&u);
      ingot_strbuf_free(&fn);
      ingot_strbuf_free(&call);
      ingot_strbuf_free(&unpack);
      return st;
    }
    const char* cq = f->buffers[i].role == INGOT_IR_BUFFER_INPUT ? "const " : "";
    ingot_strbuf_appendf(&fn, "  %s%s* %s;\n", cq, ty, cg->p.buf_names[i]);
    ingot_strbuf_appendf(&unpack, "  %s%s* restrict %s = c_->%s;\n", cq, ty, cg->p.buf_names[i], cg->p.buf_names[i]);
    ingot_cprint_indent(&call, depth + 1);
    ingot_strbuf_appendf(&call, "ctx%u_.%s = %s;\n", k, cg->p.buf_names[i], cg->p.buf_names[i]);
  }
  for (uint32_t v = 0; v < f->var_count; ++v) {
    if (!u.vars[v] || !cg->p.in_scope[v]) continue;
    const char* ty = ingot_cprint_ctype(&k_c_dialect, f->vars[v].dtype);
    if (!ty) ty = "int64_t";
    ingot_strbuf_appendf(&fn, "  %s %s;\n", ty, cg->p.var_names[v]);
    ingot_strbuf_appendf(&unpack, "  %s %s = c_->%s;\n", ty, cg->p.var_names[v], cg->p.var_names[v]);
    ingot_cprint_indent(&call, depth + 1);
    ingot_strbuf_appendf(&call, "ctx%u_.%s = %s;\n", k, cg->p.var_names[v], cg->p.var_names[v]);
  }
  ingot_ir_uses_free(&u);
  ingot_strbuf_appendf(&fn, "} par%u_%s_ctx;\n\n", k, cg->cname);
  ingot_strbuf_appendf(&fn, "static void par%u_%s(void* ctx_, int64_t begin_, int64_t end_) {\n", k,
                       cg->cname);
  ingot_strbuf_appendf(&fn, "  const par%u_%s_ctx* c_ = (const par%u_%s_ctx*)ctx_;\n", k, cg->cname, k,
                       cg->cname);
  ingot_strbuf_append_bytes(&fn, unpack.data, unpack.length);
  ingot_strbuf_free(&unpack);
  size_t mark = cg->p.scope.count;
  ingot_cprint_declare(&cg->p, s->u.loop.var);
  ingot_strbuf_appendf(&fn, "  for (int64_t %s = begin_; %s < end_; ++%s) {\n", cg->p.var_names[s->u.loop.var],
                       cg->p.var_names[s->u.loop.var], cg->p.var_names[s->u.loop.var]);
  cg->in_parallel = true;
  ingot_status_t st = cg_body(cg, &fn, s->u.loop.body, 2);
  cg->in_parallel = false;
  ingot_cprint_scope_pop(&cg->p, mark);
  if (st == INGOT_OK) {
    ingot_strbuf_append(&fn, "  }\n}\n\n");
    ingot_strbuf_append_bytes(&cg->outlined, fn.data, fn.length);
    ingot_cprint_indent(&call, depth + 1);
    ingot_strbuf_appendf(&call, "env->parallel_for(env->pool, %lldLL, par%u_%s, &ctx%u_);\n",
                         (long long)s->u.loop.extent, k, cg->cname, k);
    ingot_cprint_indent(&call, depth);
    ingot_strbuf_append(&call, "}\n");
    ingot_strbuf_append_bytes(sb, call.data, call.length);
  }
  ingot_strbuf_free(&fn);
  ingot_strbuf_free(&call);
  return st;
}

static ingot_status_t cg_stmt(cg_t* cg, ingot_strbuf_t* sb, const ingot_ir_stmt_t* s, int depth) {
  const ingot_ir_func_t* f = cg->p.f;
  if (!s) return ingot_cprint_fail(&cg->p, INGOT_ERROR_INVALID_ARGUMENT, "missing statement");
  if (sb->length > cg->p.max_bytes)
    return ingot_cprint_fail(&cg->p, INGOT_ERROR_LIMIT, "generated source exceeds %zu bytes", cg->p.max_bytes);
  switch (s->kind) {
    case INGOT_IR_STMT_FOR: {
      CG_CHECK(cg_check_loop(cg, s));
      uint32_t v = s->u.loop.var;
      const char* name = cg->p.var_names[v];
      ingot_ir_loop_kind_t kind = s->u.loop.loop_kind;
      /* ingot_codegen_prepare left PARALLEL only on loops to outline and
       * VECTORIZED only on loops whose iterations are independent. */
      if (kind == INGOT_IR_LOOP_PARALLEL) {
        if (cg->in_parallel)
          return ingot_cprint_fail(&cg->p, INGOT_ERROR_INVALID_ARGUMENT,
                                   "loop '%s': PARALLEL inside an outlined loop (not prepared)", f->vars[v].name);
        return cg_parallel(cg, sb, s, depth);
      } else if (kind == INGOT_IR_LOOP_VECTORIZED) {
        ingot_cprint_indent(sb, depth);
        /* (gcc accepts only one loop pragma before a for; omp simd
         * already asserts the iterations independent, as ivdep would.) */
        ingot_strbuf_append(sb, "#pragma omp simd\n");
      } else if (kind == INGOT_IR_LOOP_UNROLLED) {
        int64_t n = s->u.loop.extent < 65534 ? s->u.loop.extent : 65534;
        ingot_cprint_indent(sb, depth);
        ingot_strbuf_appendf(sb, "#pragma GCC unroll %lld\n", (long long)n);
      } else if (kind != INGOT_IR_LOOP_SERIAL) {
        return ingot_cprint_fail(&cg->p, INGOT_ERROR_INVALID_ARGUMENT, "loop '%s' has unknown kind %d", f->vars[v].name,
                                 (int)kind);
      }
      ingot_cprint_indent(sb, depth);
      ingot_strbuf_appendf(sb, "for (int64_t %s = 0; %s < %lldLL; ++%s) {\n", name, name,
                           (long long)s->u.loop.extent, name);
      size_t mark = cg->p.scope.count;
      ingot_cprint_declare(&cg->p, v);
      ingot_status_t st = cg_body(cg, sb, s->u.loop.body, depth + 1);
      ingot_cprint_scope_pop(&cg->p, mark);
      CG_CHECK(st);
      ingot_cprint_indent(sb, depth);
      ingot_strbuf_append(sb, "}\n");
      return INGOT_OK;
    }
    case INGOT_IR_STMT_BLOCK:
      ingot_cprint_indent(sb, depth);
      ingot_strbuf_append(sb, "{\n");
      CG_CHECK(cg_body(cg, sb, s, depth + 1));
      ingot_cprint_indent(sb, depth);
      ingot_strbuf_append(sb, "}\n");
      return INGOT_OK;
    case INGOT_IR_STMT_STORE: {
      uint32_t b = s->u.store.buffer;
      if (b >= f->buffer_count)
        return ingot_cprint_fail(&cg->p, INGOT_ERROR_INVALID_ARGUMENT, "store to buffer index %u out of range", b);
      if (f->buffers[b].role != INGOT_IR_BUFFER_OUTPUT)
        return ingot_cprint_fail(&cg->p, INGOT_ERROR_INVALID_ARGUMENT, "store to input buffer '%s'",
                                 f->buffers[b].name);
      if (!s->u.store.index || s->u.store.index->dtype != INGOT_DTYPE_I64)
        return ingot_cprint_fail(&cg->p, INGOT_ERROR_INVALID_ARGUMENT, "store to '%s': index is not int64",
                                 f->buffers[b].name);
      if (!s->u.store.value || s->u.store.value->dtype != f->buffers[b].dtype)
        return ingot_cprint_fail(&cg->p, INGOT_ERROR_INVALID_ARGUMENT, "store to '%s' (%s): value of another dtype",
                                 f->buffers[b].name, ingot_dtype_name(f->buffers[b].dtype));
      ingot_cprint_indent(sb, depth);
      ingot_strbuf_appendf(sb, "%s[", cg->p.buf_names[b]);
      CG_CHECK(ingot_cprint_expr(&cg->p, sb, s->u.store.index));
      ingot_strbuf_append(sb, "] = ");
      CG_CHECK(ingot_cprint_expr(&cg->p, sb, s->u.store.value));
      ingot_strbuf_append(sb, ";\n");
      return INGOT_OK;
    }
    case INGOT_IR_STMT_IF:
      if (!s->u.cond.cond || s->u.cond.cond->dtype != INGOT_DTYPE_BOOL)
        return ingot_cprint_fail(&cg->p, INGOT_ERROR_INVALID_ARGUMENT, "if: condition is not bool");
      ingot_cprint_indent(sb, depth);
      ingot_strbuf_append(sb, "if (");
      CG_CHECK(ingot_cprint_expr(&cg->p, sb, s->u.cond.cond));
      ingot_strbuf_append(sb, ") {\n");
      CG_CHECK(cg_body(cg, sb, s->u.cond.then_body, depth + 1));
      ingot_cprint_indent(sb, depth);
      ingot_strbuf_append(sb, "}\n");
      return INGOT_OK;
    case INGOT_IR_STMT_BARRIER: return ingot_cprint_fail(&cg->p, INGOT_ERROR_UNSUPPORTED, "a GPU barrier in CPU code");
    case INGOT_IR_STMT_LOCAL:
    case INGOT_IR_STMT_ASSIGN: {
      uint32_t v = s->u.local.var;
      if (v >= f->var_count)
        return ingot_cprint_fail(&cg->p, INGOT_ERROR_INVALID_ARGUMENT, "variable index %u out of range", v);
      const ingot_ir_var_t* var = &f->vars[v];
      if (var->kind != INGOT_IR_VAR_LOCAL)
        return ingot_cprint_fail(&cg->p, INGOT_ERROR_INVALID_ARGUMENT, "'%s' is not a local", var->name);
      if (!s->u.local.value || s->u.local.value->dtype != var->dtype)
        return ingot_cprint_fail(&cg->p, INGOT_ERROR_INVALID_ARGUMENT, "local '%s' (%s): value of another dtype",
                                 var->name, ingot_dtype_name(var->dtype));
      const char* ty;
      CG_CHECK(ingot_cprint_type(&cg->p, var->dtype, &ty));
      ingot_cprint_indent(sb, depth);
      if (s->kind == INGOT_IR_STMT_LOCAL) {
        if (cg->p.in_scope[v])
          return ingot_cprint_fail(&cg->p, INGOT_ERROR_INVALID_ARGUMENT, "local '%s' declared twice", var->name);
        ingot_strbuf_appendf(sb, "%s %s = ", ty, cg->p.var_names[v]);
        CG_CHECK(ingot_cprint_expr(&cg->p, sb, s->u.local.value));
        ingot_cprint_declare(&cg->p, v);
      } else {
        if (!cg->p.in_scope[v])
          return ingot_cprint_fail(&cg->p, INGOT_ERROR_INVALID_ARGUMENT, "assignment to '%s' out of its scope",
                                   var->name);
        ingot_strbuf_appendf(sb, "%s = ", cg->p.var_names[v]);
        CG_CHECK(ingot_cprint_expr(&cg->p, sb, s->u.local.value));
      }
      ingot_strbuf_append(sb, ";\n");
      return INGOT_OK;
    }
  }
  return ingot_cprint_fail(&cg->p, INGOT_ERROR_INVALID_ARGUMENT, "unknown statement kind %d", (int)s->kind);
}

/* ---- Functions and the module. */
static ingot_status_t cg_func(cg_t* cg, const ingot_ir_func_t* f, ingot_strbuf_t* module) {
  ingot_cprint_begin(&cg->p, &k_c_dialect, f, f->buffer_count);

  ingot_strbuf_t body = {0};
  ingot_status_t st = INGOT_OK;
  for (uint32_t i = 0; i < f->buffer_count && st == INGOT_OK; ++i) {
    const char* ty;
    st = ingot_cprint_type(&cg->p, f->buffers[i].dtype, &ty);
    if (st != INGOT_OK) break;
    const char* cq = f->buffers[i].role == INGOT_IR_BUFFER_INPUT ? "const " : "";
    ingot_strbuf_appendf(&body, "  %s%s* restrict %s = (%s%s*)args[%u];\n", cq, ty, cg->p.buf_names[i], cq, ty, i);
  }
  if (st == INGOT_OK) {
    ingot_strbuf_append(&body, "  (void)env;\n  (void)args;\n");
    st = cg_body(cg, &body, f->body, 1);
  }
  if (st == INGOT_OK) {
    ingot_strbuf_appendf(module, "/* ---- %s */\n", f->name);
    ingot_strbuf_append_bytes(module, cg->outlined.data, cg->outlined.length);
    ingot_strbuf_appendf(module, "static int32_t %s(const ingot_kernel_env_t* env, void* const* args) {\n",
                         cg->cname);
    ingot_strbuf_append_bytes(module, body.data, body.length);
    ingot_strbuf_append(module, "  return 0;\n}\n\n");
  }
  ingot_strbuf_free(&body);
  ingot_cprint_end(&cg->p);
  ingot_strbuf_free(&cg->outlined);
  return st;
}

ingot_status_t ingot_codegen_c_source(ingot_ir_func_t* const* funcs, uint32_t count,
                                      const ingot_target_t* target, ingot_strbuf_t* out_source) {
  if (!out_source) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "codegen c: missing functions or output");
  if (target && target->kind != INGOT_TARGET_C)
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "codegen c: target '%s' is not a C target", target->name);
  ingot_codegen_prepared_t prepared;
  ingot_status_t st = ingot_codegen_prepare(funcs, count, target, &prepared);
  if (st == INGOT_OK) st = ingot_codegen_c_emit(prepared.funcs, prepared.count, target, out_source);
  ingot_codegen_prepared_free(&prepared);
  return st;
}

ingot_status_t ingot_codegen_c_emit(ingot_ir_func_t* const* funcs, uint32_t count,
                                    const ingot_target_t* target, ingot_strbuf_t* out_source) {
  if (!out_source || (count && !funcs))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "codegen c: missing functions or output");
  if (target && target->kind != INGOT_TARGET_C)
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "codegen c: target '%s' is not a C target", target->name);
  for (uint32_t i = 0; i < count; ++i) {
    if (!funcs[i] || !funcs[i]->name || !funcs[i]->body)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "codegen c: function %u is incomplete", i);
    /* The verifier's checks first (scopes, dtypes, roles, constant indices);
     * the emitter still checks what it relies on. */
    ingot_status_t st = ingot_ir_verify(funcs[i]);
    if (st != INGOT_OK) return ingot_fail_prefix(st, "codegen c");
  }

  ingot_strbuf_t m = {0};
  ingot_strbuf_append(&m, "/* Generated by Ingot (target c): do not edit. */\n");
  ingot_strbuf_appendf(&m, "/* %u kernel%s; target '%s'%s%s. Self-contained C99: no headers, no libc. */\n\n",
                       count, count == 1 ? "" : "s", target && target->name[0] ? target->name : "c",
                       target && target->cpu[0] ? ", cpu " : "", target && target->cpu[0] ? target->cpu : "");
  ingot_strbuf_append(&m, k_prelude);
  ingot_strbuf_append(&m, "\n/* Kernel ABI (runtime/ingot_format.h, INGOT_KERNEL_ABI_VERSION 1). */\n");
  cg_append_decls(&m, k_abi_decls);
  ingot_strbuf_append(&m, "\n\n");

  char** cnames = ingot_xcalloc(count ? count : 1, sizeof(char*));
  for (uint32_t i = 0; i < count; ++i) ingot_cprint_unique_name(cnames, i, "k_", funcs[i]->name);
  ingot_status_t st = INGOT_OK;
  uint32_t par_count = 0;
  for (uint32_t i = 0; i < count && st == INGOT_OK; ++i) {
    cg_t cg = {0};
    cg.cname = cnames[i];
    cg.par_count = par_count;
    st = cg_func(&cg, funcs[i], &m);
    par_count = cg.par_count;
  }
  if (st == INGOT_OK) {
    ingot_strbuf_append(&m, "static const ingot_kernel_entry_t ingot_kernels[] = {\n");
    for (uint32_t i = 0; i < count; ++i) {
      ingot_strbuf_append(&m, "  {");
      cg_append_c_string(&m, funcs[i]->name);
      ingot_strbuf_appendf(&m, ", %s},\n", cnames[i]);
    }
    if (count == 0) ingot_strbuf_append(&m, "  {0, 0},\n");
    ingot_strbuf_appendf(&m,
                         "};\n\nstatic const ingot_kernel_library_t ingot_library = {1u, %uu, ingot_kernels};\n\n",
                         count);
    ingot_strbuf_append(&m,
                        "__attribute__((visibility(\"default\")))\n"
                        "const ingot_kernel_library_t* ingot_library_query(uint32_t abi_version) {\n"
                        "  return abi_version == ingot_library.abi_version ? &ingot_library : 0;\n"
                        "}\n");
    ingot_strbuf_append_bytes(out_source, m.data, m.length);
  }
  for (uint32_t i = 0; i < count; ++i) free(cnames[i]);
  free(cnames);
  ingot_strbuf_free(&m);
  return st;
}
