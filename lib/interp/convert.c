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

void fu_interp_load(fu_dtype dt, const void *p, int64_t s, size_t n, fu_ck k, void *buf) {
  float tmp_float;
  double tmp_double;
  switch (k) {
  case FU_CK_F64: {
    double *o = buf;
    if (dt == FU_DT_F64) {
      for (size_t i = 0; i < n; i++) o[i] = RD(double, p, (int64_t)i, s);
    } else if (dt == FU_DT_F32) {
      for (size_t i = 0; i < n; i++) o[i] = RD(float, p, (int64_t)i, s);
    } else if (dt == FU_DT_I64) {
      for (size_t i = 0; i < n; i++) o[i] = (double)elem_i(dt, p, (int64_t)i, s);
    } else {
      for (size_t i = 0; i < n; i++) o[i] = elem_f(dt, p, (int64_t)i, s);
    }
    break;
  }
  case FU_CK_F32: {
    float *o = buf;
    if (dt == FU_DT_F32) {
      for (size_t i = 0; i < n; i++) o[i] = RD(float, p, (int64_t)i, s);
    } else if (dt == FU_DT_F64) {
      for (size_t i = 0; i < n; i++) o[i] = fu_interp_d2f(RD(double, p, (int64_t)i, s));
    } else if (dt == FU_DT_I64) {
      /* Directly from int64: one rounding. */
      for (size_t i = 0; i < n; i++) o[i] = (float)elem_i(dt, p, (int64_t)i, s);
    } else {
      for (size_t i = 0; i < n; i++) o[i] = fu_interp_d2f(elem_f(dt, p, (int64_t)i, s));
    }
    break;
  }
  case FU_CK_I64: {
    int64_t *o = buf;
    for (size_t i = 0; i < n; i++) o[i] = elem_i(dt, p, (int64_t)i, s);
    break;
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

void fu_interp_store(fu_dtype dt, void *p, int64_t s, size_t n, fu_ck k, const void *buf) {
  switch (k) {
  case FU_CK_F64: {
    const double *v = buf;
    if (dt == FU_DT_F64) {
      for (size_t i = 0; i < n; i++) WR(double, p, (int64_t)i, s, v[i]);
    } else {
      for (size_t i = 0; i < n; i++) put_f(dt, p, (int64_t)i, s, v[i]);
    }
    break;
  }
  case FU_CK_F32: {
    const float *v = buf;
    if (dt == FU_DT_F32) {
      for (size_t i = 0; i < n; i++) WR(float, p, (int64_t)i, s, v[i]);
    } else {
      for (size_t i = 0; i < n; i++) put_f(dt, p, (int64_t)i, s, v[i]);
    }
    break;
  }
  case FU_CK_I64: {
    const int64_t *v = buf;
    for (size_t i = 0; i < n; i++) put_i(dt, p, (int64_t)i, s, v[i]);
    break;
  }
  }
}
