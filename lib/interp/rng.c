/* Random numbers: Philox4x32-10 and the uniform and normal maps of its
 * words (include/fuser/rng.h).  This file is the definition the GPU
 * backends follow step for step: each float operation here is one IEEE
 * operation there (fma where written, never a contraction the compiler
 * chose), so the values are identical for uniform; normal calls log, sin
 * and cos, which libm here and libdevice on the GPU compute to within an
 * ulp of each other (docs/ir.md says so). */
#include "fuser/rng.h"

#include <math.h>

#include "fuser/interp.h"

static void philox_round(uint32_t c[4], const uint32_t k[2]) {
  uint64_t p0 = (uint64_t)FU_RNG_PHILOX_M0 * c[0];
  uint64_t p1 = (uint64_t)FU_RNG_PHILOX_M1 * c[2];
  uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
  uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
  uint32_t n[4] = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
  for (int i = 0; i < 4; i++) c[i] = n[i];
}

/* Ten rounds, the key bumped between them (not after the last). */
void fu_rng_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]};
  uint32_t k[2] = {key[0], key[1]};
  for (int r = 0; r < 10; r++) {
    if (r) {
      k[0] += FU_RNG_PHILOX_W0;
      k[1] += FU_RNG_PHILOX_W1;
    }
    philox_round(c, k);
  }
  for (int i = 0; i < 4; i++) out[i] = c[i];
}

void fu_rng_philox(uint64_t seed, uint64_t subsequence, uint64_t offset, uint32_t out[4]) {
  uint32_t ctr[4] = {(uint32_t)offset, (uint32_t)(offset >> 32), (uint32_t)subsequence,
                     (uint32_t)(subsequence >> 32)};
  uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  fu_rng_philox4x32_10(ctr, key, out);
}

uint32_t fu_rng_per_call(fu_dtype dt) { return dt == FU_DT_F64 ? 2 : 4; }

float fu_rng_raw_uniform_f32(uint32_t x) {
  const float scale = 0x1p-32f;
  return (float)x * scale + 0.5f * scale; /* x * 2^-32 is exact: no rounding to contract */
}

double fu_rng_raw_uniform_f64(uint32_t x, uint32_t y) {
  const double scale = 0x1p-53;
  uint64_t z = (uint64_t)x ^ ((uint64_t)y << 21);
  return (double)z * scale + 0.5 * scale;
}

static float uniform_f32(uint32_t x) {
  float u = fu_rng_raw_uniform_f32(x);
  return u == 1.0f ? 0.0f : u;
}

static double uniform_f64(uint32_t x, uint32_t y) {
  double u = fu_rng_raw_uniform_f64(x, y);
  return u == 1.0 ? 0.0 : u;
}

/* f32 rounded to the 16-bit float dtype `dt`, widened back. */
static double narrow(fu_dtype dt, float x) {
  if (dt == FU_DT_F16) return fu_f16_to_double(fu_f16_from_double(x));
  if (dt == FU_DT_BF16) return fu_bf16_to_double(fu_bf16_from_double(x));
  return x;
}

/* One element of a 4-per-call dtype (f32, f16, bf16), computed in f32. */
static double value_f32(fu_op_kind kind, fu_dtype dt, float a, float b, const uint32_t r[4], uint32_t c) {
  if (kind == FU_OP_UNIFORM) {
    if (dt == FU_DT_F32) return fmaf(b - a, uniform_f32(r[c]), a);
    /* 16-bit: round the f32 value, then a result equal to maxval is minval */
    double v = narrow(dt, fmaf(b - a, fu_rng_raw_uniform_f32(r[c]), a));
    return v == narrow(dt, b) ? narrow(dt, a) : v;
  }
  uint32_t pair = c / 2 * 2;
  float u = uniform_f32(r[pair]);
  float v = uniform_f32(r[pair + 1]) * 6.2831855f;
  float rad = sqrtf(-2.0f * logf(u));
  float n = rad * (c % 2 == 0 ? sinf(v) : cosf(v));
  return narrow(dt, fmaf(n, b, a));
}

/* One element of f64: two words per uniform, four per normal pair. */
static double value_f64(fu_op_kind kind, double a, double b, const uint32_t r[4], uint32_t c) {
  if (kind == FU_OP_UNIFORM) return fma(b - a, uniform_f64(r[2 * c], r[2 * c + 1]), a);
  double u = uniform_f64(r[0], r[1]);
  double v = uniform_f64(r[2], r[3]) * 6.2831853071795860;
  double rad = sqrt(-2.0 * log(u));
  double n = rad * (c % 2 == 0 ? sin(v) : cos(v));
  return fma(n, b, a);
}

double fu_rng_value(fu_op_kind kind, fu_dtype dt, double a, double b, uint64_t seed, uint64_t offset,
                    uint64_t index) {
  uint32_t per = fu_rng_per_call(dt), r[4];
  fu_rng_philox(seed, index / per, offset, r);
  uint32_t c = (uint32_t)(index % per);
  if (dt == FU_DT_F64) return value_f64(kind, a, b, r, c);
  return value_f32(kind, dt, (float)a, (float)b, r, c);
}
