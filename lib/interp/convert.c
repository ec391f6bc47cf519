/* fuser: conversions between storage dtypes and the interpreter's compute
 * kinds, one strided row at a time (the switch on dtypes sits outside the
 * element loops). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "interp_internal.h"

fu_ck fu_interp_ck(fu_dtype dt) {
  switch (dt) {
  case FU_DT_F64: return FU_CK_F64;
  case FU_DT_F32:
  case FU_DT_F16:
  case FU_DT_BF16: return FU_CK_F32;
  default: return FU_CK_I64;
  }
}

/* C's float-to-int conversion is undefined out of range.  The LLVM backend
 * emits llvm.fptosi.sat (lib/target/llvm/types.c): toward zero, saturating
 * at the integer's bounds, NaN to 0, which is also what the GPU's cvt.rzi
 * does.  The interpreter (and so the constant folder) does the same. */
int64_t fu_interp_f2i64(double d) {
  if (isnan(d)) return 0;
  if (d >= 9223372036854775808.0) return INT64_MAX;
  if (d < -9223372036854775808.0) return INT64_MIN;
  return (int64_t)d;
}

int32_t fu_interp_f2i32(double d) {
  if (isnan(d)) return 0;
  if (d >= 2147483647.0) return INT32_MAX;
  if (d <= -2147483648.0) return INT32_MIN;
  return (int32_t)d;
}

/* Double to float, rounding to nearest even like the GPU's cvt.rn.f32.f64:
 * C leaves a plain (float) cast undefined beyond FLT_MAX, so the overflow
 * is spelled out.  A value that rounds past FLT_MAX (at or above FLT_MAX
 * plus half its ulp, 2^128 - 2^103) is an infinity of its sign; one
 * between FLT_MAX and that rounds to FLT_MAX; NaN stays NaN (its sign
 * kept). */
float fu_interp_d2f(double d) {
  if (isnan(d)) return signbit(d) ? -NAN : NAN;
  double a = fabs(d);
  if (a >= 0x1.ffffffp127) return signbit(d) ? -INFINITY : INFINITY;
  if (a > FLT_MAX) return signbit(d) ? -FLT_MAX : FLT_MAX;
  return (float)d;
}

/* Unaligned-safe element reads and writes (views of .npy buffers need not
 * be aligned). */
#define RD(T, p, i, s) \
  (memcpy(&tmp_##T, (const char *)(p) + (size_t)((i) * (s)) * sizeof(T), sizeof(T)), tmp_##T)
#define WR(T, p, i, s, v)                                                       \
  do {                                                                          \
    T w_ = (v);                                                                 \
    memcpy((char *)(p) + (size_t)((i) * (s)) * sizeof(T), &w_, sizeof(T));      \
  } while (0)

/* Read element i of a row as double / int64. */
static double elem_f(fu_dtype dt, const void *p, int64_t i, int64_t s) {
  double tmp_double;
  float tmp_float;
  int64_t tmp_int64_t;
  int32_t tmp_int32_t;
  uint16_t tmp_uint16_t;
  uint8_t tmp_uint8_t;
  switch (dt) {
  case FU_DT_F64: return RD(double, p, i, s);
  case FU_DT_F32: return RD(float, p, i, s);
  case FU_DT_F16: return fu_f16_to_double(RD(uint16_t, p, i, s));
  case FU_DT_BF16: return fu_bf16_to_double(RD(uint16_t, p, i, s));
  case FU_DT_I64: return (double)RD(int64_t, p, i, s);
  case FU_DT_I32: return RD(int32_t, p, i, s);
  case FU_DT_BOOL: return RD(uint8_t, p, i, s) != 0;
  default: return 0;
  }
}

static int64_t elem_i(fu_dtype dt, const void *p, int64_t i, int64_t s) {
  int64_t tmp_int64_t;
  int32_t tmp_int32_t;
  uint8_t tmp_uint8_t;
  switch (dt) {
  case FU_DT_I64: return RD(int64_t, p, i, s);
  case FU_DT_I32: return RD(int32_t, p, i, s);
  case FU_DT_BOOL: return RD(uint8_t, p, i, s) != 0;
  default: return fu_interp_f2i64(elem_f(dt, p, i, s));
  }
}

/* ---- 16-bit floats and float, bit for bit --------------------------------
 *
 * The f32 compute kind meets f16 and bf16 on every load and store.  These
 * give exactly what the double routes give (half.c's exact widening, then
 * fu_interp_d2f; the exact widening of the float, then half.c's rounding),
 * working on the float's bits with no double in between. */

/* fu_interp_d2f turns every NaN into the default NaN of its sign. */
static float nan_of_sign(uint32_t sign) { return sign ? -NAN : NAN; }

static float bf16_to_f32(uint16_t h) {
  if ((h & 0x7f80) == 0x7f80 && (h & 0x7f)) return nan_of_sign(h & 0x8000);
  return fu_interp_f32_of_bits((uint32_t)h << 16);
}

static float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0x1f) return mant ? nan_of_sign(sign) : fu_interp_f32_of_bits(sign | 0x7f800000u);
  if (exp == 0) return fu_interp_f32_of_bits(sign | fu_interp_f32_bits((float)mant * 0x1p-24f)); /* exact */
  return fu_interp_f32_of_bits(sign | ((exp + 112) << 23) | (mant << 13));
}

/* Round to nearest even on the float's bits: adding 0x7fff plus the kept
 * lowest bit carries exactly when the dropped half is above a tie, or a
 * tie with an odd kept part; a carry out of the mantissa bumps the
 * exponent (up to infinity), as the rounding of a value does.  A NaN keeps
 * its sign and top payload bits and gets the quiet bit. */
static uint16_t f32_to_bf16(float f) {
  uint32_t b = fu_interp_f32_bits(f);
  if ((b & 0x7f800000u) == 0x7f800000u && (b & 0x7fffffu)) return (uint16_t)((b >> 16) | 0x40);
  return (uint16_t)((b + 0x7fffu + ((b >> 16) & 1)) >> 16);
}

/* The same for binary16, whose smaller exponent range makes values below
 * 2^-14 subnormal (units of 2^-24) and values from 65520 up infinite. */
static uint16_t f32_to_f16(float f) {
  uint32_t b = fu_interp_f32_bits(f);
  uint16_t sign = (uint16_t)((b >> 16) & 0x8000);
  uint32_t a = b & 0x7fffffffu;
  if (a >= 0x7f800000u) return a == 0x7f800000u ? (uint16_t)(sign | 0x7c00) : (uint16_t)(sign | 0x7e00 | ((a >> 13) & 0x3ff));
  int e = (int)(a >> 23) - 127;
  if (e > 15) return (uint16_t)(sign | 0x7c00);
  if ((a >> 23) == 0) return sign; /* float subnormals are far below half of f16's least subnormal */
  uint32_t m = (a & 0x7fffffu) | 0x800000u;
  int shift = e >= -14 ? 13 : -1 - e; /* to units of 2^(e-10) when normal, of 2^-24 when subnormal */
  if (shift > 31) return sign;
  uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) q++;
  if (e < -14) return (uint16_t)(sign | q); /* q == 0x400 is the least normal */
  uint32_t bits = ((uint32_t)(e + 15) << 10) + (q - 0x400);
  return (uint16_t)(sign | (bits >= 0x7c00 ? 0x7c00 : bits));
}

/* One typed loop per (dtype, kind): `s == 1` gets its own loop, which the
 * compiler can keep simple, and nothing inside switches on the dtype. */
#define ROW_LOOP(T, OUT, EXPR)                                          \
  do {                                                                  \
    const char *b_ = p;                                                 \
    T x_;                                                               \
    if (s == 1) {                                                       \
      for (size_t i = 0; i < n; i++) {                                  \
        memcpy(&x_, b_ + i * sizeof(T), sizeof(T));                     \
        (OUT)[i] = (EXPR);                                              \
      }                                                                 \
    } else {                                                            \
      for (size_t i = 0; i < n; i++) {                                  \
        memcpy(&x_, b_ + (size_t)((int64_t)i * s) * sizeof(T), sizeof(T)); \
        (OUT)[i] = (EXPR);                                              \
      }                                                                 \
    }                                                                   \
  } while (0)

void fu_interp_load(fu_dtype dt, const void *p, int64_t s, size_t n, fu_ck k, void *buf) {
  switch (k) {
  case FU_CK_F64: {
    double *o = buf;
    switch (dt) {
    case FU_DT_F64: ROW_LOOP(double, o, x_); return;
    case FU_DT_F32: ROW_LOOP(float, o, (double)x_); return;
    case FU_DT_BF16: ROW_LOOP(uint16_t, o, fu_bf16_to_double(x_)); return;
    case FU_DT_F16: ROW_LOOP(uint16_t, o, fu_f16_to_double(x_)); return;
    case FU_DT_I64: ROW_LOOP(int64_t, o, (double)x_); return;
    case FU_DT_I32: ROW_LOOP(int32_t, o, (double)x_); return;
    case FU_DT_BOOL: ROW_LOOP(uint8_t, o, x_ != 0); return;
    default: break;
    }
    for (size_t i = 0; i < n; i++) o[i] = 0;
    return;
  }
  case FU_CK_F32: {
    float *o = buf;
    switch (dt) {
    case FU_DT_F32: ROW_LOOP(float, o, x_); return;
    case FU_DT_F64: ROW_LOOP(double, o, fu_interp_d2f(x_)); return;
    case FU_DT_BF16: ROW_LOOP(uint16_t, o, bf16_to_f32(x_)); return;
    case FU_DT_F16: ROW_LOOP(uint16_t, o, f16_to_f32(x_)); return;
    case FU_DT_I64: ROW_LOOP(int64_t, o, (float)x_); return; /* directly from int64: one rounding */
    case FU_DT_I32: ROW_LOOP(int32_t, o, (float)x_); return;
    case FU_DT_BOOL: ROW_LOOP(uint8_t, o, x_ != 0); return;
    default: break;
    }
    for (size_t i = 0; i < n; i++) o[i] = 0;
    return;
  }
  case FU_CK_I64: {
    int64_t *o = buf;
    switch (dt) {
    case FU_DT_I64: ROW_LOOP(int64_t, o, x_); return;
    case FU_DT_I32: ROW_LOOP(int32_t, o, x_); return;
    case FU_DT_BOOL: ROW_LOOP(uint8_t, o, x_ != 0); return;
    default: break;
    }
    for (size_t i = 0; i < n; i++) o[i] = elem_i(dt, p, (int64_t)i, s);
    return;
  }
  }
}

/* Store one double, converting like a cast. */
static void put_f(fu_dtype dt, void *p, int64_t i, int64_t s, double v) {
  switch (dt) {
  case FU_DT_F64: WR(double, p, i, s, v); break;
  case FU_DT_F32: WR(float, p, i, s, fu_interp_d2f(v)); break;
  case FU_DT_F16: WR(uint16_t, p, i, s, fu_f16_from_double(v)); break;
  case FU_DT_BF16: WR(uint16_t, p, i, s, fu_bf16_from_double(v)); break;
  case FU_DT_I64: WR(int64_t, p, i, s, fu_interp_f2i64(v)); break;
  case FU_DT_I32: WR(int32_t, p, i, s, fu_interp_f2i32(v)); break;
  case FU_DT_BOOL: WR(uint8_t, p, i, s, (uint8_t)(v != 0)); break;
  default: break;
  }
}

static void put_i(fu_dtype dt, void *p, int64_t i, int64_t s, int64_t v) {
  switch (dt) {
  case FU_DT_F64: WR(double, p, i, s, (double)v); break;
  case FU_DT_F32: WR(float, p, i, s, (float)v); break;
  case FU_DT_F16: WR(uint16_t, p, i, s, fu_f16_from_double((double)v)); break;
  case FU_DT_BF16: WR(uint16_t, p, i, s, fu_bf16_from_double((double)v)); break;
  case FU_DT_I64: WR(int64_t, p, i, s, v); break;
  case FU_DT_I32: WR(int32_t, p, i, s, (int32_t)(uint32_t)(uint64_t)v); break; /* wraps */
  case FU_DT_BOOL: WR(uint8_t, p, i, s, (uint8_t)(v != 0)); break;
  default: break;
  }
}

/* Store loops: ROW_STORE writes EXPR of the buffer's v[i] as a T. */
#define ROW_STORE(T, EXPR)                                              \
  do {                                                                  \
    char *b_ = p;                                                       \
    if (s == 1) {                                                       \
      for (size_t i = 0; i < n; i++) {                                  \
        T w_ = (EXPR);                                                  \
        memcpy(b_ + i * sizeof(T), &w_, sizeof(T));                     \
      }                                                                 \
    } else {                                                            \
      for (size_t i = 0; i < n; i++) {                                  \
        T w_ = (EXPR);                                                  \
        memcpy(b_ + (size_t)((int64_t)i * s) * sizeof(T), &w_, sizeof(T)); \
      }                                                                 \
    }                                                                   \
  } while (0)

void fu_interp_store(fu_dtype dt, void *p, int64_t s, size_t n, fu_ck k, const void *buf) {
  switch (k) {
  case FU_CK_F64: {
    const double *v = buf;
    switch (dt) {
    case FU_DT_F64: ROW_STORE(double, v[i]); return;
    case FU_DT_F32: ROW_STORE(float, fu_interp_d2f(v[i])); return;
    case FU_DT_BF16: ROW_STORE(uint16_t, fu_bf16_from_double(v[i])); return;
    case FU_DT_F16: ROW_STORE(uint16_t, fu_f16_from_double(v[i])); return;
    default: break;
    }
    for (size_t i = 0; i < n; i++) put_f(dt, p, (int64_t)i, s, v[i]);
    return;
  }
  case FU_CK_F32: {
    /* a float widens to double exactly: put_f's conversions of (double)v[i] */
    const float *v = buf;
    switch (dt) {
    case FU_DT_F32: ROW_STORE(float, v[i]); return;
    case FU_DT_F64: ROW_STORE(double, (double)v[i]); return;
    case FU_DT_BF16: ROW_STORE(uint16_t, f32_to_bf16(v[i])); return;
    case FU_DT_F16: ROW_STORE(uint16_t, f32_to_f16(v[i])); return;
    default: break;
    }
    for (size_t i = 0; i < n; i++) put_f(dt, p, (int64_t)i, s, v[i]);
    return;
  }
  case FU_CK_I64: {
    const int64_t *v = buf;
    switch (dt) {
    case FU_DT_I64: ROW_STORE(int64_t, v[i]); return;
    case FU_DT_I32: ROW_STORE(int32_t, (int32_t)(uint32_t)(uint64_t)v[i]); return; /* wraps */
    case FU_DT_BOOL: ROW_STORE(uint8_t, (uint8_t)(v[i] != 0)); return;
    case FU_DT_F32: ROW_STORE(float, (float)v[i]); return;
    case FU_DT_F64: ROW_STORE(double, (double)v[i]); return;
    default: break;
    }
    for (size_t i = 0; i < n; i++) put_i(dt, p, (int64_t)i, s, v[i]);
    return;
  }
  }
}
