/* Target `llvm`: the math library, written in LLVM IR with the builder.
 *
 * The same algorithms as the C target's prelude (codegen_c.c), one
 * definition each, instantiated per type: a scalar float, or a vector of
 * floats for vectorized loops (lanes computed side by side, no calls per
 * lane). exp/log/tanh/erf work in double where the C prelude does, so that
 * both targets give the same accuracy (~1 ulp). Functions with loops (fmod,
 * integer power) exist only for scalars; the emitter calls them per lane.
 *
 * Every function is internal and alwaysinline: after the O3 pipeline nothing
 * of this file remains but inlined instructions. */
#include <stdio.h>
#include <string.h>

#include "codegen_llvm_internal.h"

/* A function being written: its builder and its types. */
typedef struct mb_t {
  ingot_llvm_module_t* m;
  LLVMBuilderRef b;
  LLVMValueRef fn;
  unsigned lanes;           /* 0: scalar */
  LLVMTypeRef f32, f64, i32, i64, i1;  /* scalar or vector of `lanes` */
} mb_t;

static LLVMValueRef cf(LLVMTypeRef t, double v) { return ingot_llvm_const_real(t, v); }
static LLVMValueRef ci(LLVMTypeRef t, int64_t v) { return ingot_llvm_const_int(t, v); }

static LLVMValueRef fma3(mb_t* w, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
  LLVMValueRef args[3] = {a, b, c};
  return ingot_llvm_call_intrinsic(w->m, w->b, "llvm.fmuladd", LLVMTypeOf(a), args, 3);
}

static LLVMValueRef fabs1(mb_t* w, LLVMValueRef a) {
  return ingot_llvm_call_intrinsic(w->m, w->b, "llvm.fabs", LLVMTypeOf(a), &a, 1);
}

static LLVMValueRef sel(mb_t* w, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(w->b, c, a, b, "");
}

/* Horner: ((c[0] x + c[1]) x + ...) + c[n-1], each step one fmuladd. */
static LLVMValueRef horner(mb_t* w, LLVMTypeRef t, LLVMValueRef x, const double* c, int n) {
  LLVMValueRef p = cf(t, c[0]);
  for (int i = 1; i < n; ++i) p = fma3(w, p, x, cf(t, c[i]));
  return p;
}

static LLVMValueRef bits32(mb_t* w, LLVMValueRef f) { return LLVMBuildBitCast(w->b, f, w->i32, ""); }
static LLVMValueRef from_bits32(mb_t* w, LLVMValueRef i) { return LLVMBuildBitCast(w->b, i, w->f32, ""); }

/* Opens a new internal function `ret name(params...)` and positions the
 * builder at its entry. */
static void mb_begin(mb_t* w, ingot_llvm_module_t* m, const char* base, unsigned lanes, LLVMTypeRef ret,
                     LLVMTypeRef* params, unsigned nparams, LLVMTypeRef* out_fn_type) {
  memset(w, 0, sizeof(*w));
  w->m = m;
  w->lanes = lanes;
  w->f32 = ingot_llvm_vec_type(m->t_f32, lanes);
  w->f64 = ingot_llvm_vec_type(m->t_f64, lanes);
  w->i32 = ingot_llvm_vec_type(m->t_i32, lanes);
  w->i64 = ingot_llvm_vec_type(m->t_i64, lanes);
  w->i1 = ingot_llvm_vec_type(m->t_i1, lanes);
  char name[96];
  if (lanes) snprintf(name, sizeof(name), "%s_v%u", base, lanes);
  else snprintf(name, sizeof(name), "%s", base);
  LLVMTypeRef ft = LLVMFunctionType(ret, params, nparams, 0);
  w->fn = LLVMAddFunction(m->mod, name, ft);
  LLVMSetLinkage(w->fn, LLVMInternalLinkage);
  ingot_llvm_function_attrs(m, w->fn);
  unsigned kind = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
  LLVMAddAttributeAtIndex(w->fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(m->ctx, kind, 0));
  w->b = LLVMCreateBuilderInContext(m->ctx);
  LLVMPositionBuilderAtEnd(w->b, LLVMAppendBasicBlockInContext(m->ctx, w->fn, "entry"));
  *out_fn_type = ft;
}

static void mb_end(mb_t* w, LLVMValueRef result) {
  if (result) LLVMBuildRet(w->b, result);
  LLVMDisposeBuilder(w->b);
}

/* exp(x) in double for |x| <= 700 (callers clamp): Cody-Waite reduction
 * x = k ln2 + r, |r| <= ln2/2, a degree-11 Taylor polynomial, 2^k from bits. */
static LLVMValueRef exp_core(mb_t* w, LLVMValueRef x) {
  LLVMBuilderRef b = w->b;
  LLVMValueRef shifter = cf(w->f64, 0x1.8p52);
  LLVMValueRef kd = fma3(w, x, cf(w->f64, 0x1.71547652b82fep0), shifter);
  LLVMValueRef k = LLVMBuildSub(b, LLVMBuildBitCast(b, kd, w->i64, ""), LLVMBuildBitCast(b, shifter, w->i64, ""), "");
  kd = LLVMBuildFSub(b, kd, shifter, "");
  LLVMValueRef r = LLVMBuildFSub(b, x, LLVMBuildFMul(b, kd, cf(w->f64, 0x1.62e42fee00000p-1), ""), "");
  r = LLVMBuildFSub(b, r, LLVMBuildFMul(b, kd, cf(w->f64, 0x1.a39ef35793c76p-33), ""), "");
  static const double c[] = {0x1.71de3a556c734p-26, 0x1.27e4fb7789f5cp-22, 0x1.71de3a556c734p-19,
                             0x1.a01a01a01a01ap-16, 0x1.a01a01a01a01ap-13, 0x1.6c16c16c16c17p-10,
                             0x1.1111111111111p-7,  0x1.5555555555555p-5,  0x1.5555555555555p-3,
                             0.5, 1.0, 1.0};
  LLVMValueRef p = horner(w, w->f64, r, c, 12);
  LLVMValueRef scale = LLVMBuildShl(b, LLVMBuildAdd(b, k, ci(w->i64, 1023), ""), ci(w->i64, 52), "");
  return LLVMBuildFMul(b, p, LLVMBuildBitCast(b, scale, w->f64, ""), "");
}

/* exp(x) in float (max error 1.3 ulp): k = round(x / ln2) by the 1.5*2^23
 * shifter, r = x - k ln2 with ln2 split so that k*hi is exact, a degree-7
 * Taylor polynomial, and 2^k applied in two halves so that subnormal results
 * round once. x is clamped to [-104, 89]; NaN passes. */
static LLVMValueRef def_expf(mb_t* w, LLVMValueRef x) {
  LLVMBuilderRef b = w->b;
  LLVMValueRef c = sel(w, LLVMBuildFCmp(b, LLVMRealOGT, x, cf(w->f32, 89.0), ""), cf(w->f32, 89.0), x);
  c = sel(w, LLVMBuildFCmp(b, LLVMRealOLT, c, cf(w->f32, -104.0), ""), cf(w->f32, -104.0), c);
  LLVMValueRef shifter = cf(w->f32, 0x1.8p23);
  LLVMValueRef kf = fma3(w, c, cf(w->f32, 0x1.715476p0), shifter);
  LLVMValueRef k = LLVMBuildSub(b, bits32(w, kf), bits32(w, shifter), "");
  kf = LLVMBuildFSub(b, kf, shifter, "");
  LLVMValueRef r = LLVMBuildFSub(b, c, LLVMBuildFMul(b, kf, cf(w->f32, 0x1.62ep-1), ""), "");
  r = LLVMBuildFSub(b, r, LLVMBuildFMul(b, kf, cf(w->f32, 0x1.0bfbe8p-15), ""), "");
  static const double co[] = {0x1.a01a02p-13, 0x1.6c16c2p-10, 0x1.111112p-7, 0x1.555556p-5,
                              0x1.555556p-3,  0.5,            1.0,           1.0};
  LLVMValueRef p = horner(w, w->f32, r, co, 8);
  LLVMValueRef k1 = LLVMBuildAShr(b, k, ci(w->i32, 1), "");
  LLVMValueRef k2 = LLVMBuildSub(b, k, k1, "");
  LLVMValueRef s1 = from_bits32(w, LLVMBuildShl(b, LLVMBuildAdd(b, k1, ci(w->i32, 127), ""), ci(w->i32, 23), ""));
  LLVMValueRef s2 = from_bits32(w, LLVMBuildShl(b, LLVMBuildAdd(b, k2, ci(w->i32, 127), ""), ci(w->i32, 23), ""));
  return LLVMBuildFMul(b, LLVMBuildFMul(b, p, s1, ""), s2, "");
}

/* log(x): x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) = 2 atanh(s),
 * s = (m-1)/(m+1), |s| <= 0.172, series to s^11, in double. */
static LLVMValueRef def_logf(mb_t* w, LLVMValueRef x) {
  LLVMBuilderRef b = w->b;
  LLVMValueRef sub = LLVMBuildFCmp(b, LLVMRealOLT, x, cf(w->f32, 0x1p-126), "");
  LLVMValueRef xs = sel(w, sub, LLVMBuildFMul(b, x, cf(w->f32, 0x1p24), ""), x);
  LLVMValueRef ix = bits32(w, xs);
  LLVMValueRef e = LLVMBuildSub(b, LLVMBuildLShr(b, ix, ci(w->i32, 23), ""), ci(w->i32, 127), "");
  e = LLVMBuildSub(b, e, sel(w, sub, ci(w->i32, 24), ci(w->i32, 0)), "");
  LLVMValueRef mbits = LLVMBuildOr(b, LLVMBuildAnd(b, ix, ci(w->i32, 0x7fffff), ""), ci(w->i32, 0x3f800000), "");
  LLVMValueRef mf = from_bits32(w, mbits);
  LLVMValueRef big = LLVMBuildFCmp(b, LLVMRealOGT, mf, cf(w->f32, 0x1.6a09e6p0), "");
  LLVMValueRef md = LLVMBuildFPExt(b, mf, w->f64, "");
  md = sel(w, big, LLVMBuildFMul(b, md, cf(w->f64, 0.5), ""), md);
  e = LLVMBuildAdd(b, e, LLVMBuildZExt(b, big, w->i32, ""), "");
  LLVMValueRef f = LLVMBuildFSub(b, md, cf(w->f64, 1.0), "");
  LLVMValueRef s = LLVMBuildFDiv(b, f, LLVMBuildFAdd(b, cf(w->f64, 2.0), f, ""), "");
  LLVMValueRef s2 = LLVMBuildFMul(b, s, s, "");
  static const double c[] = {0x1.745d1745d1746p-4, 0x1.c71c71c71c71cp-4, 0x1.2492492492492p-3,
                             0x1.999999999999ap-3, 0x1.5555555555555p-2, 1.0};
  LLVMValueRef p = horner(w, w->f64, s2, c, 6);
  LLVMValueRef ed = LLVMBuildSIToFP(b, e, w->f64, "");
  LLVMValueRef two_s_p = LLVMBuildFMul(b, LLVMBuildFMul(b, cf(w->f64, 2.0), s, ""), p, "");
  LLVMValueRef rd = fma3(w, ed, cf(w->f64, 0x1.62e42fefa39efp-1), two_s_p);
  LLVMValueRef r = LLVMBuildFPTrunc(b, rd, w->f32, "");
  LLVMValueRef inf = cf(w->f32, 1.0 / 0.0);
  r = sel(w, LLVMBuildFCmp(b, LLVMRealOEQ, x, cf(w->f32, 0.0), ""), cf(w->f32, -1.0 / 0.0), r);
  r = sel(w, LLVMBuildFCmp(b, LLVMRealOLT, x, cf(w->f32, 0.0), ""), cf(w->f32, 0.0 / 0.0), r);
  r = sel(w, LLVMBuildFCmp(b, LLVMRealOEQ, x, inf, ""), x, r);
  return sel(w, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), x, r);
}

/* Copies the sign of `x` onto the float `mag` (non-negative). */
static LLVMValueRef with_sign_of(mb_t* w, LLVMValueRef mag, LLVMValueRef x) {
  LLVMBuilderRef b = w->b;
  LLVMValueRef sign = LLVMBuildAnd(b, bits32(w, x), ci(w->i32, (int64_t)0x80000000u), "");
  return from_bits32(w, LLVMBuildOr(b, bits32(w, mag), sign, ""));
}

/* tanh(x) = (e^2|x| - 1) / (e^2|x| + 1) in double, x - x^3/3 for tiny |x|. */
static LLVMValueRef def_tanhf(mb_t* w, LLVMValueRef x) {
  LLVMBuilderRef b = w->b;
  LLVMValueRef a = fabs1(w, x);
  LLVMValueRef c = sel(w, LLVMBuildFCmp(b, LLVMRealOLT, a, cf(w->f32, 10.0), ""), a, cf(w->f32, 10.0));
  LLVMValueRef ad = LLVMBuildFPExt(b, c, w->f64, "");
  LLVMValueRef e = exp_core(w, LLVMBuildFMul(b, cf(w->f64, 2.0), ad, ""));
  LLVMValueRef t = LLVMBuildFDiv(b, LLVMBuildFSub(b, e, cf(w->f64, 1.0), ""),
                                 LLVMBuildFAdd(b, e, cf(w->f64, 1.0), ""), "");
  LLVMValueRef cube = LLVMBuildFMul(b, LLVMBuildFMul(b, ad, ad, ""), ad, "");
  LLVMValueRef small = LLVMBuildFSub(b, ad, LLVMBuildFMul(b, cube, cf(w->f64, 0x1.5555555555555p-2), ""), "");
  t = sel(w, LLVMBuildFCmp(b, LLVMRealOLT, c, cf(w->f32, 0x1p-12), ""), small, t);
  LLVMValueRef r = with_sign_of(w, LLVMBuildFPTrunc(b, t, w->f32, ""), x);
  return sel(w, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), x, r);
}

/* erf(x) = x P(t), t = 2 x^2 / 3.92^2 - 1, P of degree 18 fitted to
 * erf(x)/x on [0, 3.92] (relative error 2e-10 in double); 1 beyond 3.92. */
static LLVMValueRef def_erff(mb_t* w, LLVMValueRef x) {
  LLVMBuilderRef b = w->b;
  LLVMValueRef a = fabs1(w, x);
  LLVMValueRef inside = LLVMBuildFCmp(b, LLVMRealOLT, a, cf(w->f32, 3.92), "");
  LLVMValueRef c = sel(w, inside, a, cf(w->f32, 3.92));
  LLVMValueRef xd = LLVMBuildFPExt(b, c, w->f64, "");
  LLVMValueRef t = fma3(w, LLVMBuildFMul(b, xd, xd, ""), cf(w->f64, 0x1.0a8e3bebf47c2p-3), cf(w->f64, -1.0));
  static const double co[] = {
      0x1.b8a225717a110p-15,  -0x1.44af237a07da0p-13, 0x1.48a1ce9014bbdp-13, -0x1.26c0b6929ec9cp-12,
      0x1.05cd9b766d0f5p-10,  -0x1.2005b35da7f82p-9,  0x1.01626d49cad62p-8,  -0x1.d1528f9a479acp-8,
      0x1.97cfcdcb682fap-7,   -0x1.4ab0882fabadap-6,  0x1.f439c68d8a5eep-6,  -0x1.63a989201b120p-5,
      0x1.dca808e341bd0p-5,   -0x1.2f2c62875d423p-4,  0x1.7330d2e16631ap-4,  -0x1.bf3371f233cb8p-4,
      0x1.129a4cbb3525fp-3,   -0x1.70dcc76acd53ep-3,  0x1.7164fe357d1f0p-2};
  LLVMValueRef p = horner(w, w->f64, t, co, 19);
  LLVMValueRef v = LLVMBuildFPTrunc(b, LLVMBuildFMul(b, xd, p, ""), w->f32, "");
  LLVMValueRef r = sel(w, inside, v, cf(w->f32, 1.0));
  r = with_sign_of(w, r, x);
  return sel(w, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), x, r);
}

/* floor / ceil through a truncating conversion, exact for |x| < 2^23 (2^52
 * in double; larger values are integers). The result keeps the sign of x.
 * For targets where they are no instruction (x86-64 without SSE4.1). */
static LLVMValueRef def_round(mb_t* w, LLVMValueRef x, bool ceil, bool f64) {
  LLVMBuilderRef b = w->b;
  LLVMTypeRef ft = f64 ? w->f64 : w->f32, it = f64 ? w->i64 : w->i32;
  LLVMValueRef ti = LLVMBuildFreeze(b, LLVMBuildFPToSI(b, x, it, ""), "");
  LLVMValueRef t = LLVMBuildSIToFP(b, ti, ft, "");
  LLVMValueRef adjust = ceil ? LLVMBuildFCmp(b, LLVMRealOLT, t, x, "") : LLVMBuildFCmp(b, LLVMRealOGT, t, x, "");
  t = sel(w, adjust, ceil ? LLVMBuildFAdd(b, t, cf(ft, 1.0), "") : LLVMBuildFSub(b, t, cf(ft, 1.0), ""), t);
  LLVMValueRef tb = LLVMBuildBitCast(b, t, it, ""), xb = LLVMBuildBitCast(b, x, it, "");
  int64_t signbit = f64 ? INT64_MIN : (int64_t)0x80000000u;
  tb = LLVMBuildOr(b, tb, LLVMBuildAnd(b, xb, ci(it, signbit), ""), "");
  t = LLVMBuildBitCast(b, tb, ft, "");
  LLVMValueRef exact = LLVMBuildFCmp(b, LLVMRealOLT, fabs1(w, x), cf(ft, f64 ? 0x1p52 : 0x1p23), "");
  return sel(w, exact, t, x);
}

/* ---- Double precision (the C target's algorithms, same constants). */
static LLVMValueRef cd(mb_t* w, double v) { return cf(w->f64, v); }
static LLVMValueRef dbits(mb_t* w, LLVMValueRef f) { return LLVMBuildBitCast(w->b, f, w->i64, ""); }
static LLVMValueRef from_dbits(mb_t* w, LLVMValueRef i) { return LLVMBuildBitCast(w->b, i, w->f64, ""); }
static LLVMValueRef fadd(mb_t* w, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFAdd(w->b, a, b, ""); }
static LLVMValueRef fsub(mb_t* w, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFSub(w->b, a, b, ""); }
static LLVMValueRef fmul(mb_t* w, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFMul(w->b, a, b, ""); }
static LLVMValueRef fdiv(mb_t* w, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFDiv(w->b, a, b, ""); }
static LLVMValueRef fcmp(mb_t* w, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFCmp(w->b, p, a, b, "");
}
static LLVMValueRef isnan1(mb_t* w, LLVMValueRef x) { return fcmp(w, LLVMRealUNO, x, x); }
static LLVMValueRef sqrt1(mb_t* w, LLVMValueRef a) {
  return ingot_llvm_call_intrinsic(w->m, w->b, "llvm.sqrt", LLVMTypeOf(a), &a, 1);
}
static LLVMValueRef nan_or(mb_t* w, LLVMValueRef x, LLVMValueRef r) { return sel(w, isnan1(w, x), x, r); }

static LLVMValueRef copysign_d(mb_t* w, LLVMValueRef x, LLVMValueRef s) {
  LLVMBuilderRef b = w->b;
  LLVMValueRef mag = LLVMBuildAnd(b, dbits(w, x), ci(w->i64, INT64_MAX), "");
  LLVMValueRef sg = LLVMBuildAnd(b, dbits(w, s), ci(w->i64, INT64_MIN), "");
  return from_dbits(w, LLVMBuildOr(b, mag, sg, ""));
}

/* exp(x) for any x: Cody-Waite reduction, degree-13 Taylor, 2^k in halves. */
static LLVMValueRef exp_d(mb_t* w, LLVMValueRef x) {
  LLVMBuilderRef b = w->b;
  LLVMValueRef c = sel(w, fcmp(w, LLVMRealOGT, x, cd(w, 710.0)), cd(w, 710.0), x);
  c = sel(w, fcmp(w, LLVMRealOLT, c, cd(w, -746.0)), cd(w, -746.0), c);
  LLVMValueRef shifter = cd(w, 0x1.8p52);
  LLVMValueRef kd = fma3(w, c, cd(w, 0x1.71547652b82fep0), shifter);
  LLVMValueRef k = LLVMBuildSub(b, dbits(w, kd), dbits(w, shifter), "");
  kd = fsub(w, kd, shifter);
  LLVMValueRef r = fsub(w, c, fmul(w, kd, cd(w, 0x1.62e42fee00000p-1)));
  r = fsub(w, r, fmul(w, kd, cd(w, 0x1.a39ef35793c76p-33)));
  static const double co[] = {1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0,
                              1.0 / 362880.0,     1.0 / 40320.0,     1.0 / 5040.0,      1.0 / 720.0,
                              1.0 / 120.0,        1.0 / 24.0,        1.0 / 6.0,         0.5, 1.0, 1.0};
  LLVMValueRef p = horner(w, w->f64, r, co, 14);
  LLVMValueRef k1 = LLVMBuildSDiv(b, k, ci(w->i64, 2), "");
  LLVMValueRef k2 = LLVMBuildSub(b, k, k1, "");
  LLVMValueRef s1 = from_dbits(w, LLVMBuildShl(b, LLVMBuildAdd(b, k1, ci(w->i64, 1023), ""), ci(w->i64, 52), ""));
  LLVMValueRef s2 = from_dbits(w, LLVMBuildShl(b, LLVMBuildAdd(b, k2, ci(w->i64, 1023), ""), ci(w->i64, 52), ""));
  return nan_or(w, x, fmul(w, fmul(w, p, s1), s2));
}

static LLVMValueRef expm1_d(mb_t* w, LLVMValueRef x) {
  static const double co[] = {1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0,
                              1.0 / 362880.0,     1.0 / 40320.0,     1.0 / 5040.0,      1.0 / 720.0,
                              1.0 / 120.0,        1.0 / 24.0,        1.0 / 6.0,         0.5};
  LLVMValueRef p = horner(w, w->f64, x, co, 12);
  LLVMValueRef small = fadd(w, x, fmul(w, fmul(w, x, x), p));
  return sel(w, fcmp(w, LLVMRealOLT, fabs1(w, x), cd(w, 0.25)), small, fsub(w, exp_d(w, x), cd(w, 1.0)));
}

static LLVMValueRef log_d(mb_t* w, LLVMValueRef x) {
  LLVMBuilderRef b = w->b;
  LLVMValueRef sub = fcmp(w, LLVMRealOLT, x, cd(w, 0x1p-1022));
  LLVMValueRef xs = sel(w, sub, fmul(w, x, cd(w, 0x1p54)), x);
  LLVMValueRef ix = dbits(w, xs);
  LLVMValueRef e = LLVMBuildAnd(b, LLVMBuildLShr(b, ix, ci(w->i64, 52), ""), ci(w->i64, 0x7ff), "");
  e = LLVMBuildSub(b, e, ci(w->i64, 1023), "");
  e = LLVMBuildSub(b, e, sel(w, sub, ci(w->i64, 54), ci(w->i64, 0)), "");
  LLVMValueRef m = from_dbits(w, LLVMBuildOr(b, LLVMBuildAnd(b, ix, ci(w->i64, 0xfffffffffffffll), ""),
                                             ci(w->i64, 0x3ff0000000000000ll), ""));
  LLVMValueRef big = fcmp(w, LLVMRealOGT, m, cd(w, 0x1.6a09e667f3bcdp0));
  m = sel(w, big, fmul(w, cd(w, 0.5), m), m);
  e = LLVMBuildAdd(b, e, LLVMBuildZExt(b, big, w->i64, ""), "");
  LLVMValueRef f = fsub(w, m, cd(w, 1.0));
  LLVMValueRef s = fdiv(w, f, fadd(w, cd(w, 2.0), f));
  LLVMValueRef s2 = fmul(w, s, s);
  static const double co[] = {1.0 / 23, 1.0 / 21, 1.0 / 19, 1.0 / 17, 1.0 / 15, 1.0 / 13,
                              1.0 / 11, 1.0 / 9,  1.0 / 7,  1.0 / 5,  1.0 / 3};
  LLVMValueRef p = horner(w, w->f64, s2, co, 11);
  LLVMValueRef ed = LLVMBuildSIToFP(b, e, w->f64, "");
  LLVMValueRef two_s = fmul(w, cd(w, 2.0), s);
  LLVMValueRef inner = fma3(w, ed, cd(w, 0x1.a39ef35793c76p-33), fmul(w, fmul(w, two_s, s2), p));
  LLVMValueRef r = fma3(w, ed, cd(w, 0x1.62e42fee00000p-1), fadd(w, two_s, inner));
  r = sel(w, fcmp(w, LLVMRealOEQ, x, cd(w, 0.0)), cd(w, -1.0 / 0.0), r);
  r = sel(w, fcmp(w, LLVMRealOLT, x, cd(w, 0.0)), cd(w, 0.0 / 0.0), r);
  r = sel(w, fcmp(w, LLVMRealOEQ, x, cd(w, 1.0 / 0.0)), x, r);
  return nan_or(w, x, r);
}

static LLVMValueRef log1p_d(mb_t* w, LLVMValueRef x) {
  LLVMValueRef u = fadd(w, cd(w, 1.0), x);
  LLVMValueRef d = fsub(w, u, cd(w, 1.0));
  LLVMValueRef dz = fcmp(w, LLVMRealOEQ, d, cd(w, 0.0));
  LLVMValueRef r = fmul(w, log_d(w, u), fdiv(w, x, sel(w, dz, cd(w, 1.0), d)));
  r = sel(w, dz, x, r);
  return sel(w, fcmp(w, LLVMRealOEQ, u, cd(w, 1.0 / 0.0)), u, r);
}

static LLVMValueRef tanh_d(mb_t* w, LLVMValueRef x) {
  LLVMValueRef a = fabs1(w, x);
  LLVMValueRef c = sel(w, fcmp(w, LLVMRealOLT, a, cd(w, 22.0)), a, cd(w, 22.0));
  LLVMValueRef e = expm1_d(w, fmul(w, cd(w, 2.0), c));
  LLVMValueRef t = copysign_d(w, fdiv(w, e, fadd(w, e, cd(w, 2.0))), x);
  return nan_or(w, x, t);
}

static LLVMValueRef sinh_d(mb_t* w, LLVMValueRef x) {
  LLVMValueRef a = fabs1(w, x);
  LLVMValueRef lt = fcmp(w, LLVMRealOLT, a, cd(w, 709.0));
  LLVMValueRef e = exp_d(w, sel(w, lt, a, fmul(w, cd(w, 0.5), a)));
  LLVMValueRef big = sel(w, lt, fmul(w, cd(w, 0.5), fsub(w, e, fdiv(w, cd(w, 1.0), e))),
                         fmul(w, fmul(w, cd(w, 0.5), e), e));
  LLVMValueRef a2 = fmul(w, a, a);
  static const double co[] = {1.0 / 6227020800.0, 1.0 / 39916800.0, 1.0 / 362880.0, 1.0 / 5040.0, 1.0 / 120.0,
                              1.0 / 6.0};
  LLVMValueRef p = horner(w, w->f64, a2, co, 6);
  LLVMValueRef small = fadd(w, a, fmul(w, fmul(w, a, a2), p));
  LLVMValueRef r = copysign_d(w, sel(w, fcmp(w, LLVMRealOLT, a, cd(w, 0.25)), small, big), x);
  return nan_or(w, x, r);
}

static LLVMValueRef cosh_d(mb_t* w, LLVMValueRef x) {
  LLVMValueRef a = fabs1(w, x);
  LLVMValueRef lt = fcmp(w, LLVMRealOLT, a, cd(w, 709.0));
  LLVMValueRef e = exp_d(w, sel(w, lt, a, fmul(w, cd(w, 0.5), a)));
  LLVMValueRef r = sel(w, lt, fmul(w, cd(w, 0.5), fadd(w, e, fdiv(w, cd(w, 1.0), e))), fmul(w, fmul(w, cd(w, 0.5), e), e));
  return nan_or(w, x, r);
}

static LLVMValueRef asinh_d(mb_t* w, LLVMValueRef x) {
  LLVMValueRef a = fabs1(w, x);
  LLVMValueRef a2 = fmul(w, a, a);
  LLVMValueRef mid = log1p_d(w, fadd(w, a, fdiv(w, a2, fadd(w, cd(w, 1.0), sqrt1(w, fadd(w, cd(w, 1.0), a2))))));
  LLVMValueRef huge = fadd(w, log_d(w, a), cd(w, 0x1.62e42fefa39efp-1));
  LLVMValueRef r = copysign_d(w, sel(w, fcmp(w, LLVMRealOGT, a, cd(w, 0x1p500)), huge, mid), x);
  return nan_or(w, x, r);
}

static LLVMValueRef acosh_d(mb_t* w, LLVMValueRef x) {
  LLVMValueRef t = fsub(w, x, cd(w, 1.0));
  LLVMValueRef mid = log1p_d(w, fadd(w, t, sqrt1(w, fadd(w, fmul(w, cd(w, 2.0), t), fmul(w, t, t)))));
  LLVMValueRef huge = fadd(w, log_d(w, x), cd(w, 0x1.62e42fefa39efp-1));
  LLVMValueRef r = sel(w, fcmp(w, LLVMRealOGT, x, cd(w, 0x1p500)), huge, mid);
  return sel(w, fcmp(w, LLVMRealOLT, x, cd(w, 1.0)), cd(w, 0.0 / 0.0), r);
}

static LLVMValueRef atanh_d(mb_t* w, LLVMValueRef x) {
  LLVMValueRef a = fabs1(w, x);
  LLVMValueRef r = fmul(w, cd(w, 0.5), log1p_d(w, fdiv(w, fmul(w, cd(w, 2.0), a), fsub(w, cd(w, 1.0), a))));
  r = sel(w, fcmp(w, LLVMRealOGT, a, cd(w, 1.0)), cd(w, 0.0 / 0.0), r);
  return nan_or(w, x, copysign_d(w, r, x));
}

/* atan: |x| > 1 via pi/2 - atan(1/|x|); above 2 - sqrt(3) via pi/6 +
 * atan((t sqrt3 - 1) / (t + sqrt3)); then the series to t^29. */
static LLVMValueRef atan_d(mb_t* w, LLVMValueRef x) {
  LLVMValueRef a = fabs1(w, x);
  LLVMValueRef inv = fcmp(w, LLVMRealOGT, a, cd(w, 1.0));
  LLVMValueRef t = sel(w, inv, fdiv(w, cd(w, 1.0), a), a);
  LLVMValueRef shift = fcmp(w, LLVMRealOGT, t, cd(w, 0x1.126145e9ecd56p-2));
  LLVMValueRef sqrt3 = cd(w, 0x1.bb67ae8584caap0);
  t = sel(w, shift, fdiv(w, fsub(w, fmul(w, t, sqrt3), cd(w, 1.0)), fadd(w, t, sqrt3)), t);
  LLVMValueRef t2 = fmul(w, t, t);
  static const double co[] = {-1.0 / 29, 1.0 / 27, -1.0 / 25, 1.0 / 23, -1.0 / 21, 1.0 / 19, -1.0 / 17,
                              1.0 / 15,  -1.0 / 13, 1.0 / 11, -1.0 / 9, 1.0 / 7,   -1.0 / 5, 1.0 / 3};
  LLVMValueRef p = horner(w, w->f64, t2, co, 14);
  LLVMValueRef r = fsub(w, t, fmul(w, fmul(w, t, t2), p));
  r = sel(w, shift, fadd(w, cd(w, 0x1.0c152382d7366p-1), r), r);
  r = sel(w, inv, fsub(w, cd(w, 0x1.921fb54442d18p0), r), r);
  return nan_or(w, x, copysign_d(w, r, x));
}

static LLVMValueRef asin_d(mb_t* w, LLVMValueRef x) {
  LLVMValueRef a = fabs1(w, x);
  LLVMValueRef r = atan_d(w, fdiv(w, a, sqrt1(w, fmul(w, fsub(w, cd(w, 1.0), a), fadd(w, cd(w, 1.0), a)))));
  r = sel(w, fcmp(w, LLVMRealOGT, a, cd(w, 1.0)), cd(w, 0.0 / 0.0), r);
  return nan_or(w, x, copysign_d(w, r, x));
}

static LLVMValueRef acos_d(mb_t* w, LLVMValueRef x) {
  LLVMValueRef r = fmul(w, cd(w, 2.0), atan_d(w, sqrt1(w, fdiv(w, fsub(w, cd(w, 1.0), x), fadd(w, cd(w, 1.0), x)))));
  r = sel(w, fcmp(w, LLVMRealOGT, fabs1(w, x), cd(w, 1.0)), cd(w, 0.0 / 0.0), r);
  return nan_or(w, x, r);
}

/* k = round(x 2/pi), r = x - k pi/2 in three parts; *q = k. */
static LLVMValueRef trig_reduce(mb_t* w, LLVMValueRef x, LLVMValueRef* q) {
  LLVMValueRef shifter = cd(w, 0x1.8p52);
  LLVMValueRef kd = fma3(w, x, cd(w, 0x1.45f306dc9c883p-1), shifter);
  *q = LLVMBuildSub(w->b, dbits(w, kd), dbits(w, shifter), "");
  kd = fsub(w, kd, shifter);
  LLVMValueRef r = fsub(w, x, fmul(w, kd, cd(w, 0x1.921fb54400000p0)));
  r = fsub(w, r, fmul(w, kd, cd(w, 0x1.0b4611a600000p-34)));
  return fsub(w, r, fmul(w, kd, cd(w, 0x1.3198a2e037073p-69)));
}

static LLVMValueRef sin_poly(mb_t* w, LLVMValueRef r) {
  LLVMValueRef r2 = fmul(w, r, r);
  static const double co[] = {1.0 / 355687428096000.0, -1.0 / 1307674368000.0, 1.0 / 6227020800.0,
                              -1.0 / 39916800.0,       1.0 / 362880.0,         -1.0 / 5040.0,
                              1.0 / 120.0,             -1.0 / 6.0};
  LLVMValueRef p = horner(w, w->f64, r2, co, 8);
  return fadd(w, r, fmul(w, fmul(w, r, r2), p));
}

static LLVMValueRef cos_poly(mb_t* w, LLVMValueRef r) {
  LLVMValueRef r2 = fmul(w, r, r);
  static const double co[] = {-1.0 / 6402373705728000.0, 1.0 / 20922789888000.0, -1.0 / 87178291200.0,
                              1.0 / 479001600.0,         -1.0 / 3628800.0,       1.0 / 40320.0,
                              -1.0 / 720.0,              1.0 / 24.0};
  LLVMValueRef p = horner(w, w->f64, r2, co, 8);
  return fadd(w, fsub(w, cd(w, 1.0), fmul(w, cd(w, 0.5), r2)), fmul(w, fmul(w, r2, r2), p));
}

/* which: 0 sin, 1 cos, 2 tan */
static LLVMValueRef trig_d(mb_t* w, LLVMValueRef x, int which) {
  LLVMBuilderRef b = w->b;
  LLVMValueRef q;
  LLVMValueRef r = trig_reduce(w, x, &q);
  LLVMValueRef s = sin_poly(w, r), c = cos_poly(w, r);
  LLVMValueRef zero = ci(w->i64, 0);
  LLVMValueRef odd = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, q, ci(w->i64, 1), ""), zero, "");
  if (which == 2) return sel(w, odd, fdiv(w, LLVMBuildFNeg(b, c, ""), s), fdiv(w, s, c));
  LLVMValueRef v = which == 0 ? sel(w, odd, c, s) : sel(w, odd, s, c);
  LLVMValueRef qq = which == 0 ? q : LLVMBuildAdd(b, q, ci(w->i64, 1), "");
  LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, qq, ci(w->i64, 2), ""), zero, "");
  return sel(w, neg, LLVMBuildFNeg(b, v, ""), v);
}

/* Round to nearest, ties to even: add and take away 2^52 (2^23 in float). */
static LLVMValueRef round_ties_even(mb_t* w, LLVMValueRef x, bool f64) {
  LLVMTypeRef t = f64 ? w->f64 : w->f32;
  double big = f64 ? 0x1p52 : 0x1p23;
  LLVMValueRef a = fabs1(w, x);
  LLVMValueRef r = LLVMBuildFSub(w->b, LLVMBuildFAdd(w->b, a, cf(t, big), ""), cf(t, big), "");
  r = sel(w, fcmp(w, LLVMRealOLT, a, cf(t, big)), r, a);
  if (f64) return copysign_d(w, r, x);
  return with_sign_of(w, r, x);
}

/* erf: the Maclaurin series below 2 (60 terms), else 1 - erfc(x) with erfc
 * from its continued fraction (60 levels); unrolled, no branches. */
static LLVMValueRef erf_d(mb_t* w, LLVMValueRef x) {
  LLVMValueRef a = fabs1(w, x);
  LLVMValueRef c = sel(w, fcmp(w, LLVMRealOLT, a, cd(w, 6.0)), a, cd(w, 6.0));
  LLVMValueRef x2 = fmul(w, c, c);
  LLVMValueRef nx2 = LLVMBuildFNeg(w->b, x2, "");
  LLVMValueRef term = c, sum = c;
  for (int n = 1; n < 60; ++n) {
    term = fmul(w, term, fdiv(w, nx2, cd(w, (double)n)));
    sum = fadd(w, sum, fdiv(w, term, cd(w, (double)(2 * n + 1))));
  }
  LLVMValueRef series = fmul(w, sum, cd(w, 0x1.20dd750429b6dp0));
  LLVMValueRef t = c;
  for (int k = 60; k >= 1; --k) t = fadd(w, c, fdiv(w, cd(w, 0.5 * (double)k), t));
  LLVMValueRef cfr = fsub(w, cd(w, 1.0), fdiv(w, exp_d(w, nx2), fmul(w, t, cd(w, 0x1.c5bf891b4ef6bp0))));
  LLVMValueRef r = sel(w, fcmp(w, LLVMRealOLT, c, cd(w, 2.0)), series, cfr);
  return nan_or(w, x, copysign_d(w, r, x));
}

/* pow in double: exp(y log|x|) with the sign and special cases of C pow. */
static LLVMValueRef pow_d(mb_t* w, LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef b = w->b;
  LLVMValueRef ay = fabs1(w, y);
  LLVMValueRef small = fcmp(w, LLVMRealOLT, ay, cd(w, 0x1p53));
  LLVMValueRef yint = LLVMBuildOr(b, LLVMBuildNot(b, small, ""), fcmp(w, LLVMRealOEQ, round_ties_even(w, y, true), y), "");
  /* an integer below 2^53 is odd when its low bit is (fmod(|y|, 2) == 1) */
  LLVMValueRef ay_safe = sel(w, small, ay, cd(w, 0.0));
  LLVMValueRef low = LLVMBuildAnd(b, LLVMBuildFPToSI(b, ay_safe, w->i64, ""), ci(w->i64, 1), "");
  LLVMValueRef yodd = LLVMBuildAnd(b, LLVMBuildAnd(b, yint, small, ""),
                                   LLVMBuildICmp(b, LLVMIntNE, low, ci(w->i64, 0), ""), "");
  LLVMValueRef ax = fabs1(w, x);
  LLVMValueRef inf = cd(w, 1.0 / 0.0), zero = cd(w, 0.0);
  LLVMValueRef yneg = fcmp(w, LLVMRealOLT, y, zero);
  LLVMValueRef r = exp_d(w, fmul(w, y, log_d(w, ax)));
  r = sel(w, fcmp(w, LLVMRealOEQ, ax, zero), sel(w, yneg, inf, zero), r);
  r = sel(w, fcmp(w, LLVMRealOEQ, ax, inf), sel(w, yneg, zero, inf), r);
  r = sel(w, LLVMBuildAnd(b, fcmp(w, LLVMRealOEQ, ax, cd(w, 1.0)), fcmp(w, LLVMRealOEQ, ay, inf), ""), cd(w, 1.0), r);
  LLVMValueRef negx = LLVMBuildOr(b, fcmp(w, LLVMRealOLT, x, zero),
                                  LLVMBuildAnd(b, fcmp(w, LLVMRealOEQ, x, zero),
                                               LLVMBuildICmp(b, LLVMIntNE, dbits(w, x), ci(w->i64, 0), ""), ""), "");
  r = sel(w, LLVMBuildAnd(b, negx, yodd, ""), LLVMBuildFNeg(b, r, ""), r);
  r = sel(w, LLVMBuildAnd(b, fcmp(w, LLVMRealOLT, x, zero), LLVMBuildNot(b, yint, ""), ""), cd(w, 0.0 / 0.0), r);
  r = sel(w, LLVMBuildOr(b, isnan1(w, y), isnan1(w, x), ""), fadd(w, x, y), r);
  r = sel(w, LLVMBuildOr(b, fcmp(w, LLVMRealOEQ, y, zero), fcmp(w, LLVMRealOEQ, x, cd(w, 1.0)), ""), cd(w, 1.0), r);
  return r;
}

/* ---- Scalar functions with loops: locals in allocas (SROA promotes them). */

typedef struct loop_t {
  LLVMBasicBlockRef head, body, done;
} loop_t;

static LLVMBasicBlockRef new_block(mb_t* w, const char* name) {
  return LLVMAppendBasicBlockInContext(w->m->ctx, w->fn, name);
}

/* A local in an alloca at the top of the entry block (where SROA looks). */
static LLVMValueRef var(mb_t* w, LLVMTypeRef t, LLVMValueRef init) {
  LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(w->fn);
  LLVMBuilderRef tb = LLVMCreateBuilderInContext(w->m->ctx);
  LLVMValueRef first = LLVMGetFirstInstruction(entry);
  if (first) LLVMPositionBuilderBefore(tb, first);
  else LLVMPositionBuilderAtEnd(tb, entry);
  LLVMValueRef a = LLVMBuildAlloca(tb, t, "");
  LLVMDisposeBuilder(tb);
  LLVMBuildStore(w->b, init, a);
  return a;
}
static LLVMValueRef get(mb_t* w, LLVMValueRef a, LLVMTypeRef t) { return LLVMBuildLoad2(w->b, t, a, ""); }
static void put(mb_t* w, LLVMValueRef a, LLVMValueRef v) { LLVMBuildStore(w->b, v, a); }

/* Emits `if (cond) return value;` and continues in a new block. */
static void return_if(mb_t* w, LLVMValueRef cond, LLVMValueRef value) {
  LLVMBasicBlockRef yes = new_block(w, "ret"), no = new_block(w, "cont");
  LLVMBuildCondBr(w->b, cond, yes, no);
  LLVMPositionBuilderAtEnd(w->b, yes);
  LLVMBuildRet(w->b, value);
  LLVMPositionBuilderAtEnd(w->b, no);
}

/* while (cond()) body(): the caller emits the condition after loop_head and
 * the body after loop_test, then calls loop_end. */
static void loop_head(mb_t* w, loop_t* l) {
  l->head = new_block(w, "head");
  l->body = new_block(w, "body");
  l->done = new_block(w, "done");
  LLVMBuildBr(w->b, l->head);
  LLVMPositionBuilderAtEnd(w->b, l->head);
}
static void loop_test(mb_t* w, loop_t* l, LLVMValueRef cond) {
  LLVMBuildCondBr(w->b, cond, l->body, l->done);
  LLVMPositionBuilderAtEnd(w->b, l->body);
}
static void loop_end(mb_t* w, loop_t* l) {
  LLVMBuildBr(w->b, l->head);
  LLVMPositionBuilderAtEnd(w->b, l->done);
}

/* Shifts the significand m left until its hidden bit is set, lowering e. */
static void normalize_w(mb_t* w, LLVMTypeRef it, LLVMValueRef m, LLVMValueRef e, uint64_t hidden) {
  LLVMBuilderRef b = w->b;
  loop_t l;
  loop_head(w, &l);
  LLVMValueRef bit = LLVMBuildAnd(b, get(w, m, it), LLVMConstInt(it, hidden, 0), "");
  loop_test(w, &l, LLVMBuildICmp(b, LLVMIntEQ, bit, LLVMConstInt(it, 0, 0), ""));
  put(w, m, LLVMBuildShl(b, get(w, m, it), LLVMConstInt(it, 1, 0), ""));
  put(w, e, LLVMBuildSub(b, get(w, e, it), LLVMConstInt(it, 1, 0), ""));
  loop_end(w, &l);
}

/* fmod, exact (C fmod/fmodf semantics): long division of the significands;
 * `f64` picks double (52-bit fraction) or float (23-bit). */
static void def_fmod(mb_t* w, LLVMValueRef x, LLVMValueRef y, bool f64) {
  LLVMBuilderRef b = w->b;
  LLVMTypeRef it = f64 ? w->m->t_i64 : w->m->t_i32, ft = f64 ? w->m->t_f64 : w->m->t_f32;
  unsigned fbits = f64 ? 52 : 23;
  uint64_t sign_bit = f64 ? 0x8000000000000000ull : 0x80000000ull;
  uint64_t inf_bits = f64 ? 0x7ff0000000000000ull : 0x7f800000ull;
  uint64_t frac = ((uint64_t)1 << fbits) - 1, hidden = (uint64_t)1 << fbits;
  unsigned top = f64 ? 63 : 31;
#define K(v) LLVMConstInt(it, (unsigned long long)(v), 0)
  LLVMValueRef ux0 = LLVMBuildBitCast(b, x, it, ""), uy0 = LLVMBuildBitCast(b, y, it, "");
  LLVMValueRef sign = LLVMBuildAnd(b, ux0, K(sign_bit), "");
  LLVMValueRef ux = LLVMBuildAnd(b, ux0, K(sign_bit - 1), "");
  LLVMValueRef uy = LLVMBuildAnd(b, uy0, K(sign_bit - 1), "");
  LLVMValueRef bad = LLVMBuildOr(b, LLVMBuildICmp(b, LLVMIntEQ, uy, K(0), ""),
                                 LLVMBuildOr(b, LLVMBuildICmp(b, LLVMIntUGE, ux, K(inf_bits), ""),
                                             LLVMBuildICmp(b, LLVMIntUGT, uy, K(inf_bits), ""), ""), "");
  LLVMValueRef xy = LLVMBuildFMul(b, x, y, "");
  return_if(w, bad, LLVMBuildFDiv(b, xy, xy, ""));
  return_if(w, LLVMBuildICmp(b, LLVMIntULT, ux, uy, ""), x);
  return_if(w, LLVMBuildICmp(b, LLVMIntEQ, ux, uy, ""), LLVMBuildBitCast(b, sign, ft, ""));
  LLVMValueRef ex = var(w, it, LLVMBuildLShr(b, ux, K(fbits), ""));
  LLVMValueRef ey = var(w, it, LLVMBuildLShr(b, uy, K(fbits), ""));
  LLVMValueRef mx = var(w, it, LLVMBuildAnd(b, ux, K(frac), ""));
  LLVMValueRef my = var(w, it, LLVMBuildAnd(b, uy, K(frac), ""));
  LLVMValueRef es[2] = {ex, ey}, ms[2] = {mx, my};
  for (int k = 0; k < 2; ++k) {
    /* Subnormal: exponent 1 and normalize; else set the hidden bit. */
    LLVMBasicBlockRef sub = new_block(w, "sub"), norm = new_block(w, "norm"), next = new_block(w, "next");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, get(w, es[k], it), K(0), ""), sub, norm);
    LLVMPositionBuilderAtEnd(b, sub);
    put(w, es[k], K(1));
    normalize_w(w, it, ms[k], es[k], hidden);
    LLVMBuildBr(b, next);
    LLVMPositionBuilderAtEnd(b, norm);
    put(w, ms[k], LLVMBuildOr(b, get(w, ms[k], it), K(hidden), ""));
    LLVMBuildBr(b, next);
    LLVMPositionBuilderAtEnd(b, next);
  }
  /* for (; ex > ey; --ex) { if (mx >= my) mx -= my; mx <<= 1; } */
  loop_t l;
  loop_head(w, &l);
  loop_test(w, &l, LLVMBuildICmp(b, LLVMIntSGT, get(w, ex, it), get(w, ey, it), ""));
  LLVMValueRef m = get(w, mx, it), d = get(w, my, it);
  m = sel(w, LLVMBuildICmp(b, LLVMIntUGE, m, d, ""), LLVMBuildSub(b, m, d, ""), m);
  put(w, mx, LLVMBuildShl(b, m, K(1), ""));
  put(w, ex, LLVMBuildSub(b, get(w, ex, it), K(1), ""));
  loop_end(w, &l);
  m = get(w, mx, it);
  d = get(w, my, it);
  m = sel(w, LLVMBuildICmp(b, LLVMIntUGE, m, d, ""), LLVMBuildSub(b, m, d, ""), m);
  put(w, mx, m);
  return_if(w, LLVMBuildICmp(b, LLVMIntEQ, m, K(0), ""), LLVMBuildBitCast(b, sign, ft, ""));
  normalize_w(w, it, mx, ex, hidden);
  LLVMValueRef e = get(w, ex, it);
  m = get(w, mx, it);
  LLVMValueRef normal = LLVMBuildOr(b, LLVMBuildShl(b, e, K(fbits), ""), LLVMBuildAnd(b, m, K(frac), ""), "");
  /* ex <= 0: a subnormal result, m >> (1 - ex) (the shift stays in range). */
  LLVMValueRef shift = LLVMBuildSub(b, K(1), e, "");
  shift = sel(w, LLVMBuildICmp(b, LLVMIntUGT, shift, K(top), ""), K(top), shift);
  LLVMValueRef subn = LLVMBuildLShr(b, m, shift, "");
  LLVMValueRef r = sel(w, LLVMBuildICmp(b, LLVMIntSGT, e, K(0), ""), normal, subn);
  LLVMBuildRet(b, LLVMBuildBitCast(b, LLVMBuildOr(b, r, sign, ""), ft, ""));
#undef K
}

/* Integer power by squaring in int64 (wrapping); b < 0 gives 0 unless
 * |a| == 1. */
static void def_ipow(mb_t* w, LLVMValueRef a, LLVMValueRef e) {
  LLVMBuilderRef b = w->b;
  LLVMTypeRef i64 = w->m->t_i64;
#define K(v) LLVMConstInt(i64, (unsigned long long)(v), 1)
  LLVMValueRef odd = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, e, K(1), ""), K(0), "");
  LLVMValueRef neg_result = sel(w, LLVMBuildICmp(b, LLVMIntEQ, a, K(1), ""), K(1),
                                sel(w, LLVMBuildICmp(b, LLVMIntEQ, a, K(-1), ""), sel(w, odd, K(-1), K(1)), K(0)));
  return_if(w, LLVMBuildICmp(b, LLVMIntSLT, e, K(0), ""), neg_result);
  LLVMValueRef r = var(w, i64, K(1)), x = var(w, i64, a), n = var(w, i64, e);
  loop_t l;
  loop_head(w, &l);
  loop_test(w, &l, LLVMBuildICmp(b, LLVMIntNE, get(w, n, i64), K(0), ""));
  LLVMValueRef nv = get(w, n, i64), xv = get(w, x, i64), rv = get(w, r, i64);
  LLVMValueRef bit = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, nv, K(1), ""), K(0), "");
  put(w, r, sel(w, bit, LLVMBuildMul(b, rv, xv, ""), rv));
  put(w, x, LLVMBuildMul(b, xv, xv, ""));
  put(w, n, LLVMBuildLShr(b, nv, K(1), ""));
  loop_end(w, &l);
  LLVMBuildRet(b, get(w, r, i64));
#undef K
}

static const char* const k_math_names[INGOT_LLVM_MATH_COUNT_] = {
    "ingot_expf", "ingot_logf", "ingot_tanhf", "ingot_erff", "ingot_fmodf", "ingot_floorf", "ingot_ceilf",
    "ingot_floor", "ingot_ceil", "ingot_ipow", "ingot_exp", "ingot_log", "ingot_tanh", "ingot_erf",
    "ingot_sin", "ingot_cos", "ingot_tan", "ingot_asin", "ingot_acos", "ingot_atan", "ingot_sinh",
    "ingot_cosh", "ingot_asinh", "ingot_acosh", "ingot_atanh", "ingot_round", "ingot_roundf", "ingot_pow",
    "ingot_fmod",
};

LLVMValueRef ingot_llvm_math_function(ingot_llvm_module_t* m, ingot_llvm_math_t kind, unsigned lanes,
                                      LLVMTypeRef* out_fn_type) {
  bool scalar_only = kind == INGOT_LLVM_MATH_FMODF || kind == INGOT_LLVM_MATH_IPOW || kind == INGOT_LLVM_MATH_FMOD;
  if (scalar_only) lanes = 0;
  for (uint32_t i = 0; i < m->math_count; ++i)
    if (m->math[i].kind == kind && m->math[i].lanes == lanes) {
      *out_fn_type = LLVMGlobalGetValueType(m->math[i].fn);
      return m->math[i].fn;
    }
  mb_t w;
  bool f64 = kind == INGOT_LLVM_MATH_FLOOR || kind == INGOT_LLVM_MATH_CEIL ||
             (kind >= INGOT_LLVM_MATH_EXP && kind != INGOT_LLVM_MATH_ROUNDF);
  LLVMTypeRef et = kind == INGOT_LLVM_MATH_IPOW ? m->t_i64 : f64 ? m->t_f64 : m->t_f32;
  LLVMTypeRef t = ingot_llvm_vec_type(et, lanes);
  LLVMTypeRef params[2] = {t, t};
  unsigned nparams = (kind == INGOT_LLVM_MATH_FMODF || kind == INGOT_LLVM_MATH_IPOW ||
                      kind == INGOT_LLVM_MATH_FMOD || kind == INGOT_LLVM_MATH_POW) ? 2 : 1;
  LLVMTypeRef ft;
  mb_begin(&w, m, k_math_names[kind], lanes, t, params, nparams, &ft);
  LLVMValueRef x = LLVMGetParam(w.fn, 0);
  switch (kind) {
    case INGOT_LLVM_MATH_EXPF: mb_end(&w, def_expf(&w, x)); break;
    case INGOT_LLVM_MATH_LOGF: mb_end(&w, def_logf(&w, x)); break;
    case INGOT_LLVM_MATH_TANHF: mb_end(&w, def_tanhf(&w, x)); break;
    case INGOT_LLVM_MATH_ERFF: mb_end(&w, def_erff(&w, x)); break;
    case INGOT_LLVM_MATH_FLOORF: mb_end(&w, def_round(&w, x, false, false)); break;
    case INGOT_LLVM_MATH_CEILF: mb_end(&w, def_round(&w, x, true, false)); break;
    case INGOT_LLVM_MATH_FLOOR: mb_end(&w, def_round(&w, x, false, true)); break;
    case INGOT_LLVM_MATH_CEIL: mb_end(&w, def_round(&w, x, true, true)); break;
    case INGOT_LLVM_MATH_FMODF:
    case INGOT_LLVM_MATH_FMOD:
      def_fmod(&w, x, LLVMGetParam(w.fn, 1), kind == INGOT_LLVM_MATH_FMOD);
      mb_end(&w, NULL);
      break;
    case INGOT_LLVM_MATH_EXP: mb_end(&w, exp_d(&w, x)); break;
    case INGOT_LLVM_MATH_LOG: mb_end(&w, log_d(&w, x)); break;
    case INGOT_LLVM_MATH_TANH: mb_end(&w, tanh_d(&w, x)); break;
    case INGOT_LLVM_MATH_ERF: mb_end(&w, erf_d(&w, x)); break;
    case INGOT_LLVM_MATH_SIN: mb_end(&w, trig_d(&w, x, 0)); break;
    case INGOT_LLVM_MATH_COS: mb_end(&w, trig_d(&w, x, 1)); break;
    case INGOT_LLVM_MATH_TAN: mb_end(&w, trig_d(&w, x, 2)); break;
    case INGOT_LLVM_MATH_ASIN: mb_end(&w, asin_d(&w, x)); break;
    case INGOT_LLVM_MATH_ACOS: mb_end(&w, acos_d(&w, x)); break;
    case INGOT_LLVM_MATH_ATAN: mb_end(&w, atan_d(&w, x)); break;
    case INGOT_LLVM_MATH_SINH: mb_end(&w, sinh_d(&w, x)); break;
    case INGOT_LLVM_MATH_COSH: mb_end(&w, cosh_d(&w, x)); break;
    case INGOT_LLVM_MATH_ASINH: mb_end(&w, asinh_d(&w, x)); break;
    case INGOT_LLVM_MATH_ACOSH: mb_end(&w, acosh_d(&w, x)); break;
    case INGOT_LLVM_MATH_ATANH: mb_end(&w, atanh_d(&w, x)); break;
    case INGOT_LLVM_MATH_ROUND: mb_end(&w, round_ties_even(&w, x, true)); break;
    case INGOT_LLVM_MATH_ROUNDF: mb_end(&w, round_ties_even(&w, x, false)); break;
    case INGOT_LLVM_MATH_POW: mb_end(&w, pow_d(&w, x, LLVMGetParam(w.fn, 1))); break;
    case INGOT_LLVM_MATH_IPOW:
      def_ipow(&w, x, LLVMGetParam(w.fn, 1));
      mb_end(&w, NULL);
      break;
    default: mb_end(&w, x); break;
  }
  if (m->math_count < INGOT_LLVM_MATH_CACHE) {
    m->math[m->math_count].kind = kind;
    m->math[m->math_count].lanes = lanes;
    m->math[m->math_count].fn = w.fn;
    m->math_count++;
  }
  *out_fn_type = ft;
  return w.fn;
}

/* ---- memcpy / memmove / memset: hidden, byte loops through volatile
 * accesses (so that they are never turned back into calls to themselves). */
static void def_mem(ingot_llvm_module_t* m, const char* name, int kind /* 0 cpy, 1 move, 2 set */) {
  LLVMTypeRef p = m->t_ptr, i64 = m->t_i64, i8 = m->t_i8;
  LLVMTypeRef params[3] = {p, kind == 2 ? m->t_i32 : p, i64};
  LLVMTypeRef ft = LLVMFunctionType(p, params, 3, 0);
  LLVMValueRef fn = LLVMAddFunction(m->mod, name, ft);
  LLVMSetVisibility(fn, LLVMHiddenVisibility);
  ingot_llvm_function_attrs(m, fn);
  mb_t w;
  memset(&w, 0, sizeof(w));
  w.m = m;
  w.fn = fn;
  w.b = LLVMCreateBuilderInContext(m->ctx);
  LLVMBuilderRef b = w.b;
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(m->ctx, fn, "entry"));
  LLVMValueRef dst = LLVMGetParam(fn, 0), src = LLVMGetParam(fn, 1), n = LLVMGetParam(fn, 2);
  LLVMValueRef i = var(&w, i64, LLVMConstInt(i64, 0, 0));
  /* memmove copies backwards when dst > src. */
  LLVMValueRef backwards = LLVMConstInt(m->t_i1, 0, 0);
  if (kind == 1)
    backwards = LLVMBuildICmp(b, LLVMIntUGT, LLVMBuildPtrToInt(b, dst, i64, ""), LLVMBuildPtrToInt(b, src, i64, ""), "");
  loop_t l;
  loop_head(&w, &l);
  LLVMValueRef iv = get(&w, i, i64);
  loop_test(&w, &l, LLVMBuildICmp(b, LLVMIntULT, iv, n, ""));
  LLVMValueRef at = sel(&w, backwards, LLVMBuildSub(b, LLVMBuildSub(b, n, iv, ""), LLVMConstInt(i64, 1, 0), ""), iv);
  LLVMValueRef byte;
  if (kind == 2) {
    byte = LLVMBuildTrunc(b, src, i8, "");
  } else {
    LLVMValueRef sp = LLVMBuildGEP2(b, i8, src, &at, 1, "");
    byte = LLVMBuildLoad2(b, i8, sp, "");
    LLVMSetVolatile(byte, 1);
  }
  LLVMValueRef dp = LLVMBuildGEP2(b, i8, dst, &at, 1, "");
  LLVMSetVolatile(LLVMBuildStore(b, byte, dp), 1);
  put(&w, i, LLVMBuildAdd(b, iv, LLVMConstInt(i64, 1, 0), ""));
  loop_end(&w, &l);
  LLVMBuildRet(b, dst);
  LLVMDisposeBuilder(b);
}

void ingot_llvm_define_memory_functions(ingot_llvm_module_t* m) {
  def_mem(m, "memcpy", 0);
  def_mem(m, "memmove", 1);
  def_mem(m, "memset", 2);
}
