/* fuser: f16 and bf16 conversions, bit-exact and independent of the host's
 * floating-point environment (no reliance on the rounding mode or on
 * compiler support for _Float16). */
#include <math.h>
#include <string.h>

#include "fuser/interp.h"

/* A small binary format: `mbits` stored mantissa bits, `ebits` exponent
 * bits.  binary16 is (10, 5), bfloat16 is (7, 8). */
typedef struct small_fmt {
  int mbits;
  int ebits;
} small_fmt;

static const small_fmt F16 = {10, 5};
static const small_fmt BF16 = {7, 8};

static uint64_t double_bits(double x) {
  uint64_t b;
  memcpy(&b, &x, sizeof b);
  return b;
}

static double bits_double(uint64_t b) {
  double x;
  memcpy(&x, &b, sizeof x);
  return x;
}

/* Shift `m` right by `shift` bits, rounding to nearest with ties to even.
 * shift may exceed 63 (the result is then 0: m < 2^53 is below half). */
static uint64_t shift_round_even(uint64_t m, int shift) {
  if (shift <= 0) return m;
  if (shift > 63) return 0;
  uint64_t q = m >> shift;
  uint64_t rem = m & ((UINT64_C(1) << shift) - 1);
  uint64_t half = UINT64_C(1) << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) q++;
  return q;
}

/* Round a double to the small format.  Works on the double's bits: the
 * 53-bit significand m (value m * 2^(e-52)) is shifted to the target's
 * precision with one rounding, whether the result is normal or subnormal.
 * A carry out of the mantissa falls into the exponent field naturally, which
 * also turns the largest finite values into infinity when they round up. */
static uint16_t round_to_small(double x, small_fmt f) {
  uint64_t b = double_bits(x);
  uint16_t sign = (uint16_t)((b >> 63) << (f.mbits + f.ebits));
  int exp = (int)((b >> 52) & 0x7ff);
  uint64_t mant = b & ((UINT64_C(1) << 52) - 1);
  uint16_t exp_all = (uint16_t)(((1u << f.ebits) - 1) << f.mbits);
  if (exp == 0x7ff) {
    if (mant == 0) return sign | exp_all; /* infinity */
    /* NaN: keep the top payload bits and set the quiet bit. */
    uint16_t payload = (uint16_t)(mant >> (52 - f.mbits));
    return sign | exp_all | (uint16_t)(1u << (f.mbits - 1)) | payload;
  }
  if (exp == 0) return sign; /* zero or double subnormal: far below the target's range */
  int bias = (1 << (f.ebits - 1)) - 1;
  int e = exp - 1023;
  int emin = 1 - bias;
  uint64_t m = mant | (UINT64_C(1) << 52);
  if (e > bias) return sign | exp_all;
  if (e >= emin) {
    uint64_t q = shift_round_even(m, 52 - f.mbits); /* 1.mbits, possibly 2.0 after rounding */
    uint64_t biased = (uint64_t)(e + bias);
    /* q includes the implicit bit: subtracting it and adding the exponent
     * field lets a carry to 2^(mbits+1) bump the exponent. */
    uint64_t bits = (biased << f.mbits) + (q - (UINT64_C(1) << f.mbits));
    if (bits >= exp_all) return sign | exp_all;
    return sign | (uint16_t)bits;
  }
  /* Subnormal in the target: units of 2^(emin - mbits). */
  int shift = 52 + emin - f.mbits - e;
  uint64_t q = shift_round_even(m, shift);
  return sign | (uint16_t)q; /* q == 2^mbits becomes the smallest normal */
}

/* Exact widening: the small format's values are all doubles.  The double
 * is assembled from its fields (a subnormal as its integer significand
 * times a power of two, both exact), without ldexp's call. */
static double widen_small(uint16_t h, small_fmt f) {
  uint64_t sign = (uint64_t)((h >> (f.mbits + f.ebits)) & 1) << 63;
  int exp = (h >> f.mbits) & ((1 << f.ebits) - 1);
  uint64_t mant = h & ((1u << f.mbits) - 1);
  int bias = (1 << (f.ebits - 1)) - 1;
  if (exp == (1 << f.ebits) - 1)
    return bits_double(sign | (UINT64_C(0x7ff) << 52) | (mant << (52 - f.mbits))); /* inf, or NaN with the payload kept */
  if (exp == 0) {
    /* mant * 2^(1 - bias - mbits): both factors and the product are exact */
    double unit = bits_double((uint64_t)(1023 + 1 - bias - f.mbits) << 52);
    return bits_double(sign | double_bits((double)mant * unit));
  }
  return bits_double(sign | ((uint64_t)(exp - bias + 1023) << 52) | (mant << (52 - f.mbits)));
}

uint16_t fu_f16_from_double(double x) { return round_to_small(x, F16); }
double fu_f16_to_double(uint16_t h) { return widen_small(h, F16); }
/* bfloat16 shares float's exponent range, so a double whose exponent lies
 * in bf16's normal range rounds on its own bits: adding 2^44 - 1 plus the
 * lowest kept bit carries into bit 45 exactly when round_to_small would
 * round up (a carry out of the mantissa bumps the exponent, to infinity
 * at the top), and rebasing the exponent field from 1023 to 127 gives the
 * bf16 pattern.  Everything else (zero, subnormal results, infinities,
 * NaN, overflow before rounding) takes round_to_small. */
uint16_t fu_bf16_from_double(double x) {
  uint64_t b = double_bits(x);
  uint64_t a = b & ~(UINT64_C(1) << 63);
  uint64_t e = a >> 52;
  if (e < 1023 - 126 || e > 1023 + 127) return round_to_small(x, BF16);
  uint64_t q = (a + ((UINT64_C(1) << 44) - 1) + ((a >> 45) & 1)) >> 45;
  uint64_t bits = q - ((uint64_t)(1023 - 127) << 7);
  if (bits >= 0x7f80) bits = 0x7f80;
  return (uint16_t)(((b >> 48) & 0x8000) | bits);
}
double fu_bf16_to_double(uint16_t h) { return widen_small(h, BF16); }
