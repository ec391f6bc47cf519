/* Random numbers (include/fuser/rng.h): Philox4x32-10 against the
 * published known-answer vectors of the Random123 library, the element
 * layout (4 elements per call, 2 for f64), the uniform edge cases, and the
 * distributions' moments and Kolmogorov-Smirnov distance. */
#include <stdint.h>
#include <stdlib.h>

#include "fuser/rng.h"
#include "harness.h"

/* Random123's kat_vectors for philox4x32 with 10 rounds: counter, key, output. */
static void test_philox_kat(void) {
  static const struct {
    uint32_t ctr[4], key[2], out[4];
  } kat[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
      {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
       {0xffffffffu, 0xffffffffu},
       {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
      {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
       {0xa4093822u, 0x299f31d0u},
       {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
  };
  for (size_t t = 0; t < sizeof kat / sizeof kat[0]; t++) {
    uint32_t out[4];
    fu_rng_philox4x32_10(kat[t].ctr, kat[t].key, out);
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(out[i], kat[t].out[i]);
  }
  /* (seed, subsequence, offset): key = seed, counter = (offset, subsequence) */
  uint32_t out[4];
  fu_rng_philox(0x299f31d0a4093822ull, 0x0370734413198a2eull, 0x85a308d3243f6a88ull, out);
  CHECK_EQ_INT(out[0], 0xd16cfe09u);
  CHECK_EQ_INT(out[3], 0x24126ea1u);
}

/* Element i takes word i % 4 of the call for subsequence i / 4 (f32), and
 * words 2(i % 2), 2(i % 2) + 1 of subsequence i / 2 (f64). */
static void test_layout(void) {
  const uint64_t seed = 1234, offset = 7;
  for (uint64_t i = 0; i < 64; i++) {
    uint32_t r[4];
    fu_rng_philox(seed, i / 4, offset, r);
    float u = fu_rng_raw_uniform_f32(r[i % 4]);
    if (u == 1.0f) u = 0.0f;
    CHECK(fu_rng_value(FU_OP_UNIFORM, FU_DT_F32, 0.0, 1.0, seed, offset, i) == (double)u);
    fu_rng_philox(seed, i / 2, offset, r);
    double d = fu_rng_raw_uniform_f64(r[2 * (i % 2)], r[2 * (i % 2) + 1]);
    CHECK(fu_rng_value(FU_OP_UNIFORM, FU_DT_F64, 0.0, 1.0, seed, offset, i) == d);
  }
  /* the offset and the seed both change the values */
  CHECK(fu_rng_value(FU_OP_UNIFORM, FU_DT_F32, 0, 1, 1, 0, 0) != fu_rng_value(FU_OP_UNIFORM, FU_DT_F32, 0, 1, 1, 1, 0));
  CHECK(fu_rng_value(FU_OP_UNIFORM, FU_DT_F32, 0, 1, 1, 0, 0) != fu_rng_value(FU_OP_UNIFORM, FU_DT_F32, 0, 1, 2, 0, 0));
  /* a normal pair shares its words: sine for the even element, cosine for the odd */
  double n0 = fu_rng_value(FU_OP_NORMAL, FU_DT_F64, 0, 1, seed, offset, 0);
  double n1 = fu_rng_value(FU_OP_NORMAL, FU_DT_F64, 0, 1, seed, offset, 1);
  uint32_t r[4];
  fu_rng_philox(seed, 0, offset, r);
  double uu = fu_rng_raw_uniform_f64(r[0], r[1]), v = fu_rng_raw_uniform_f64(r[2], r[3]) * 6.2831853071795860;
  CHECK_NEAR(n0, sqrt(-2 * log(uu)) * sin(v), 1e-12);
  CHECK_NEAR(n1, sqrt(-2 * log(uu)) * cos(v), 1e-12);
  CHECK_NEAR(n0 * n0 + n1 * n1, -2 * log(uu), 1e-9);
}

/* The largest word rounds to 1 in f32 and is taken to 0 (so (0, 1] becomes
 * [0, 1)); the smallest is 2^-33; ranges and 16-bit results stay in [a, b). */
static void test_uniform_edges(void) {
  CHECK(fu_rng_raw_uniform_f32(0xffffffffu) == 1.0f);
  CHECK(fu_rng_raw_uniform_f32(0) == 0x1p-33f);
  CHECK(fu_rng_raw_uniform_f64(0, 0) == 0x1p-54);
  CHECK(fu_rng_raw_uniform_f64(0xffffffffu, 0xffffffffu) < 1.0);
  for (uint64_t i = 0; i < 4096; i++) {
    double f = fu_rng_value(FU_OP_UNIFORM, FU_DT_F32, -2.0, 3.0, 99, 0, i);
    double h = fu_rng_value(FU_OP_UNIFORM, FU_DT_BF16, 0.0, 1.0, 99, 0, i);
    double g = fu_rng_value(FU_OP_UNIFORM, FU_DT_F16, 0.5, 0.75, 99, 0, i);
    CHECK(f >= -2.0 && f < 3.0);
    CHECK(h >= 0.0 && h < 1.0);
    CHECK(g >= 0.5 && g < 0.75);
    /* bf16 keeps 8 significant bits */
    float hf = (float)h;
    uint32_t bits;
    memcpy(&bits, &hf, sizeof bits);
    CHECK((bits & 0xffffu) == 0);
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The Kolmogorov-Smirnov distance of sorted x from the CDF `cdf`. */
static double ks(const double *x, size_t n, double (*cdf)(double)) {
  double d = 0;
  for (size_t i = 0; i < n; i++) {
    double f = cdf(x[i]), lo = f - (double)i / (double)n, hi = (double)(i + 1) / (double)n - f;
    if (lo > d) d = lo;
    if (hi > d) d = hi;
  }
  return d;
}

static double cdf_uniform(double x) { return x < 0 ? 0 : x > 1 ? 1 : x; }
static double cdf_normal(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }

/* 2^17 values of each distribution and dtype: mean, variance and the KS
 * distance within the 1% critical value (1.63 / sqrt(n)). */
static void test_distributions(void) {
  enum { N = 1 << 17 };
  double *x = malloc(N * sizeof *x);
  if (!x) {
    CHECK(x);
    return;
  }
  static const fu_dtype dts[] = {FU_DT_F32, FU_DT_F64};
  for (int kind = 0; kind < 2; kind++)
    for (size_t t = 0; t < 2; t++) {
      fu_op_kind op = kind ? FU_OP_NORMAL : FU_OP_UNIFORM;
      double sum = 0, sq = 0;
      for (size_t i = 0; i < N; i++) {
        x[i] = fu_rng_value(op, dts[t], 0.0, 1.0, 2024 + t, 3, i);
        sum += x[i];
      }
      double mean = sum / N;
      for (size_t i = 0; i < N; i++) sq += (x[i] - mean) * (x[i] - mean);
      double var = sq / (N - 1);
      qsort(x, N, sizeof *x, cmp_double);
      double d = ks(x, N, kind ? cdf_normal : cdf_uniform), crit = 1.63 / sqrt((double)N);
      if (kind) {
        CHECK_NEAR(mean, 0.0, 0.01);
        CHECK_NEAR(var, 1.0, 0.02);
      } else {
        CHECK_NEAR(mean, 0.5, 0.003);
        CHECK_NEAR(var, 1.0 / 12.0, 0.002);
      }
      if (!(d < crit)) fu_test_fail(__FILE__, __LINE__, "KS distance %g >= %g (%s %s)", d, crit,
                                    kind ? "normal" : "uniform", fu_dtype_name(dts[t]));
    }
  free(x);
}

FU_TEST_MAIN(FU_TEST(test_philox_kat), FU_TEST(test_layout), FU_TEST(test_uniform_edges), FU_TEST(test_distributions))
