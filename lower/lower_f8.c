/* ONNX's 8-bit floats as IR expressions (lower_f8_decode, lower_f8_encode).
 *
 * The code targets have no float8 type: a float8 tensor is a uint8 buffer
 * of its bits (lower_storage_dtype), and the two conversions are built here
 * from the IR's integer and float operators, so that every backend and the
 * interpreter compute them the same way, exactly, with nothing new to emit.
 *
 * Decode: mag = bits mod 128, e = mag div 2^m, ee = max(e, 1);
 *   value = (mag - (ee - 1) 2^m) * 2^(ee - bias - m)
 * (the subnormals at e = 0 fall out of the same form), the power of two a
 * product of one select per exponent bit (exact), then the sign, NaN and
 * the infinities (ingot_f8_format_t).
 *
 * Encode (x a float32 or float64): E = the exponent of |x| clamped to the
 * format's normal range [1 - bias, emax], found by a chain of compares with
 * the powers of two; then
 *   code = (E + bias - 1) 2^m + round(|x| 2^(m - E))
 * with round to nearest, ties to even (the IR's ROUND): scaling by a power
 * of two is exact, so this is the one rounding, and a mantissa that rounds
 * up to 2^(m+1) carries into the exponent by itself. A code past max_code
 * overflows: to the format's infinity (e5m2) or NaN (the others), or, with
 * saturate, |x| is first clamped to the largest finite value (NaN passes:
 * its compares are false), which is ONNX's saturate_cast (clip, then
 * round). The sign is x < 0, or x == 0 and 1 / x < 0 (-0); the fnuz
 * formats have no negative zero, so their zero and NaN take no sign. */
#include <math.h>

#include "lower_internal.h"

static ingot_ir_expr_t* bin(ingot_ir_func_t* f, ingot_ir_binary_op_t op, ingot_ir_expr_t* a, ingot_ir_expr_t* b) {
  return ingot_ir_binary(f, op, a, b);
}

static ingot_ir_expr_t* ival(ingot_ir_func_t* f, int64_t v) { return ingot_ir_int(f, v); }

ingot_ir_expr_t* lower_f8_decode(lower_ctx_t* ctx, ingot_dtype_t f8, ingot_ir_expr_t* bits) {
  ingot_ir_func_t* f = ctx->f;
  const ingot_f8_format_t* fm = ingot_f8_format(f8);
  int m = fm->mant_bits, E = fm->exp_bits;
  ingot_ir_expr_t* b = ingot_ir_cast(f, INGOT_DTYPE_I64, bits);
  ingot_ir_expr_t* mag = bin(f, INGOT_IR_MOD, b, ival(f, 128));
  ingot_ir_expr_t* neg = bin(f, INGOT_IR_LE, ival(f, 128), b);
  ingot_ir_expr_t* e = bin(f, INGOT_IR_DIV, mag, ival(f, 1 << m));
  ingot_ir_expr_t* t = bin(f, INGOT_IR_SUB, bin(f, INGOT_IR_MAX, e, ival(f, 1)), ival(f, 1)); /* ee - 1 */
  ingot_ir_expr_t* frac = bin(f, INGOT_IR_SUB, mag, bin(f, INGOT_IR_MUL, t, ival(f, 1 << m)));
  ingot_ir_expr_t* scale = ingot_ir_float(f, INGOT_DTYPE_F32, ldexp(1.0, 1 - fm->bias - m));
  for (int j = 0; j < E; ++j) {
    ingot_ir_expr_t* set = bin(f, INGOT_IR_EQ, bin(f, INGOT_IR_MOD, bin(f, INGOT_IR_DIV, t, ival(f, 1 << j)), ival(f, 2)),
                               ival(f, 1));
    ingot_ir_expr_t* factor = ingot_ir_select(f, set, ingot_ir_float(f, INGOT_DTYPE_F32, ldexp(1.0, 1 << j)),
                                              ingot_ir_float(f, INGOT_DTYPE_F32, 1.0));
    scale = bin(f, INGOT_IR_MUL, scale, factor);
  }
  ingot_ir_expr_t* v = bin(f, INGOT_IR_MUL, ingot_ir_cast(f, INGOT_DTYPE_F32, frac), scale);
  v = ingot_ir_select(f, neg, ingot_ir_unary(f, INGOT_IR_NEG, v), v);
  ingot_ir_expr_t* nan = ingot_ir_float(f, INGOT_DTYPE_F32, NAN);
  if (fm->uz) {
    v = ingot_ir_select(f, bin(f, INGOT_IR_EQ, b, ival(f, 0x80)), nan, v);
  } else if (fm->ieee) {
    ingot_ir_expr_t* inf = ingot_ir_select(f, neg, ingot_ir_float(f, INGOT_DTYPE_F32, -INFINITY),
                                           ingot_ir_float(f, INGOT_DTYPE_F32, INFINITY));
    ingot_ir_expr_t* special = ingot_ir_select(f, bin(f, INGOT_IR_EQ, bin(f, INGOT_IR_MOD, mag, ival(f, 1 << m)), ival(f, 0)),
                                               inf, nan);
    v = ingot_ir_select(f, bin(f, INGOT_IR_EQ, e, ival(f, (1 << E) - 1)), special, v);
  } else {
    v = ingot_ir_select(f, bin(f, INGOT_IR_EQ, mag, ival(f, 0x7f)), nan, v);
  }
  return v;
}

ingot_ir_expr_t* lower_f8_encode(lower_ctx_t* ctx, ingot_dtype_t f8, ingot_ir_expr_t* x, bool saturate) {
  ingot_ir_func_t* f = ctx->f;
  const ingot_f8_format_t* fm = ingot_f8_format(f8);
  ingot_dtype_t T = x->dtype;
  int m = fm->mant_bits;
  int emin = 1 - fm->bias, emax = (fm->max_code >> m) - fm->bias;
#define K(v) ingot_ir_float(f, T, (v))
  ingot_ir_expr_t* ax = ingot_ir_unary(f, INGOT_IR_ABS, x);
  if (saturate) {
    double top = ingot_f8_to_double(f8, fm->max_code);
    ax = ingot_ir_select(f, bin(f, INGOT_IR_LT, K(top), ax), K(top), ax);
  }
  ingot_ir_expr_t* inv = K(ldexp(1.0, m - emin));
  ingot_ir_expr_t* base = K(0.0);
  for (int k = emin + 1; k <= emax; ++k) {
    ingot_ir_expr_t* at = bin(f, INGOT_IR_LE, K(ldexp(1.0, k)), ax);
    inv = ingot_ir_select(f, at, K(ldexp(1.0, m - k)), inv);
    base = ingot_ir_select(f, at, K((double)((k + fm->bias - 1) << m)), base);
  }
  ingot_ir_expr_t* code = bin(f, INGOT_IR_ADD, base, ingot_ir_unary(f, INGOT_IR_ROUND, bin(f, INGOT_IR_MUL, ax, inv)));
  double overflow = fm->uz ? 0x80 : fm->ieee ? 0x7c : 0x7f; /* NaN, inf, NaN */
  double nan_code = fm->uz ? 0x80 : fm->ieee ? 0x7e : 0x7f; /* e5m2: a float32 quiet NaN's top bits */
  code = ingot_ir_select(f, bin(f, INGOT_IR_LT, K((double)fm->max_code), code), K(overflow), code);
  code = ingot_ir_select(f, bin(f, INGOT_IR_NE, x, x), K(nan_code), code);
  ingot_ir_expr_t* zero = K(0.0);
  ingot_ir_expr_t* neg = bin(f, INGOT_IR_OR, bin(f, INGOT_IR_LT, x, zero),
                             bin(f, INGOT_IR_AND, bin(f, INGOT_IR_EQ, x, zero),
                                 bin(f, INGOT_IR_LT, bin(f, INGOT_IR_DIV, K(1.0), x), zero)));
  if (fm->uz) {
    neg = bin(f, INGOT_IR_AND, neg,
              bin(f, INGOT_IR_AND, bin(f, INGOT_IR_NE, code, zero), bin(f, INGOT_IR_NE, code, K(128.0))));
  }
  code = bin(f, INGOT_IR_ADD, code, ingot_ir_select(f, neg, K(128.0), zero));
#undef K
  return ingot_ir_cast(f, INGOT_DTYPE_U8, code);
}
