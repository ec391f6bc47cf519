/* Unit tests for f16/bf16 conversions, host tensors, the PRNG, and .npy
 * reading and writing (round trips and malformed files). */
#include <float.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuser/npy.h"
#include "test_interp_util.h"

static void test_f16_special_values(void) {
  CHECK_EQ_INT(fu_f16_from_double(1.0), 0x3C00);
  CHECK_EQ_INT(fu_f16_from_double(-2.0), 0xC000);
  CHECK_EQ_INT(fu_f16_from_double(0.0), 0x0000);
  CHECK_EQ_INT(fu_f16_from_double(-0.0), 0x8000);
  CHECK_EQ_INT(fu_f16_from_double(65504.0), 0x7BFF);         /* max finite */
  CHECK_EQ_INT(fu_f16_from_double(65519.99), 0x7BFF);        /* below the midpoint */
  CHECK_EQ_INT(fu_f16_from_double(65520.0), 0x7C00);         /* midpoint to "65536": rounds to inf */
  CHECK_EQ_INT(fu_f16_from_double(1e300), 0x7C00);
  CHECK_EQ_INT(fu_f16_from_double(-INFINITY), 0xFC00);
  CHECK_EQ_INT(fu_f16_from_double(ldexp(1, -24)), 0x0001);    /* smallest subnormal */
  CHECK_EQ_INT(fu_f16_from_double(ldexp(1, -25)), 0x0000);    /* tie: to even (0) */
  CHECK_EQ_INT(fu_f16_from_double(ldexp(3, -25)), 0x0002);    /* tie: to even (2) */
  CHECK_EQ_INT(fu_f16_from_double(ldexp(1.5, -25)), 0x0001);  /* above the tie */
  CHECK_EQ_INT(fu_f16_from_double(ldexp(1023, -24)), 0x03FF); /* largest subnormal */
  CHECK_EQ_INT(fu_f16_from_double(ldexp(1, -14)), 0x0400);    /* smallest normal */
  CHECK_EQ_INT(fu_f16_from_double(ldexp(2047, -25)), 0x0400); /* subnormal rounding up into normal */
  CHECK_EQ_INT(fu_f16_from_double(1.0 + ldexp(1, -11)), 0x3C00); /* tie to even */
  CHECK_EQ_INT(fu_f16_from_double(1.0 + ldexp(3, -11)), 0x3C02); /* tie to even (up) */
  CHECK_EQ_INT(fu_f16_from_double(1.0 + ldexp(1, -11) + ldexp(1, -40)), 0x3C01);
  CHECK_EQ_INT(fu_f16_from_double(2047.5), 0x6800); /* tie: 2047.5 -> 2048 (even) */
  CHECK_EQ_INT(fu_f16_from_double(1e-300), 0x0000);
  uint16_t nan = fu_f16_from_double(NAN);
  CHECK((nan & 0x7C00) == 0x7C00 && (nan & 0x3FF) != 0);
  CHECK(isnan(fu_f16_to_double(0x7E00)));
  CHECK(isnan(fu_f16_to_double(0xFC01)));
  CHECK_NEAR(fu_f16_to_double(0x0001), ldexp(1, -24), 0);
  CHECK_NEAR(fu_f16_to_double(0x7BFF), 65504.0, 0);
  CHECK_NEAR(fu_f16_to_double(0x3555), 0.333251953125, 0);
  CHECK(isinf(fu_f16_to_double(0x7C00)) && fu_f16_to_double(0xFC00) < 0);
  CHECK(signbit(fu_f16_to_double(0x8000)));
  /* every bit pattern round-trips; NaNs stay NaN */
  int bad = 0;
  for (uint32_t h = 0; h < 0x10000; h++) {
    double d = fu_f16_to_double((uint16_t)h);
    uint16_t back = fu_f16_from_double(d);
    if (isnan(d))
      bad += !isnan(fu_f16_to_double(back));
    else
      bad += back != h;
    /* float conversion agrees: (float)d is exact */
    if (!isnan(d)) bad += fu_f16_from_double((float)d) != h;
  }
  CHECK_EQ_INT(bad, 0);
  /* rounding of values between neighbours: midpoints tie to even */
  bad = 0;
  for (uint32_t h = 0x0400; h < 0x7BFF; h++) {
    double a = fu_f16_to_double((uint16_t)h), b = fu_f16_to_double((uint16_t)(h + 1));
    uint16_t mid = fu_f16_from_double((a + b) / 2);
    bad += mid != ((h & 1) ? h + 1 : h);
    bad += fu_f16_from_double(a + (b - a) * 0.25) != h;
    bad += fu_f16_from_double(a + (b - a) * 0.75) != h + 1;
  }
  CHECK_EQ_INT(bad, 0);
}

static void test_bf16_special_values(void) {
  CHECK_EQ_INT(fu_bf16_from_double(1.0), 0x3F80);
  CHECK_EQ_INT(fu_bf16_from_double(-1.0), 0xBF80);
  CHECK_EQ_INT(fu_bf16_from_double(1.0 + ldexp(1, -8)), 0x3F80);     /* tie to even */
  CHECK_EQ_INT(fu_bf16_from_double(1.0 + ldexp(3, -8)), 0x3F82);     /* tie to even (up) */
  CHECK_EQ_INT(fu_bf16_from_double(1.0 + ldexp(1, -8) + 1e-9), 0x3F81);
  CHECK_EQ_INT(fu_bf16_from_double(3.3895313892515355e38), 0x7F7F); /* max finite */
  CHECK_EQ_INT(fu_bf16_from_double(FLT_MAX), 0x7F80);                /* rounds to inf */
  CHECK_EQ_INT(fu_bf16_from_double(ldexp(1, -133)), 0x0001);         /* smallest subnormal */
  CHECK_EQ_INT(fu_bf16_from_double(ldexp(1, -134)), 0x0000);
  CHECK_EQ_INT(fu_bf16_from_double(ldexp(1, -126)), 0x0080);
  uint16_t nan = fu_bf16_from_double(-NAN);
  CHECK((nan & 0x7F80) == 0x7F80 && (nan & 0x7F) != 0);
  CHECK_NEAR(fu_bf16_to_double(0x4049), 3.140625, 0);
  int bad = 0;
  for (uint32_t h = 0; h < 0x10000; h++) {
    double d = fu_bf16_to_double((uint16_t)h);
    if (isnan(d))
      bad += !isnan(fu_bf16_to_double(fu_bf16_from_double(d)));
    else
      bad += fu_bf16_from_double(d) != h;
  }
  CHECK_EQ_INT(bad, 0);
  /* bf16 is the top half of a float for exact values, and RNE otherwise */
  bad = 0;
  srand(1);
  for (int i = 0; i < 100000; i++) {
    uint32_t bits = ((uint32_t)rand() << 16) ^ (uint32_t)rand();
    float f;
    memcpy(&f, &bits, 4);
    if (isnan(f) || isinf(f)) continue;
    uint32_t rounded = bits + 0x7FFF + ((bits >> 16) & 1); /* the usual RNE trick */
    uint16_t want = (uint16_t)(rounded >> 16);
    bad += fu_bf16_from_double(f) != want;
  }
  CHECK_EQ_INT(bad, 0);
}

/* Conversions C leaves undefined out of range are defined in the
 * interpreter as on the GPU: double to float overflows to an infinity
 * (rounding to nearest), NaN stays NaN; float to int saturates and NaN
 * gives 0. */
static void test_out_of_range_conversions(void) {
  fu_allocator a = fu_default_allocator();
  fu_host_tensor f, i, l;
  CHECK_EQ_INT(fu_host_tensor_alloc(&f, a, FU_DT_F32, 1, TI_SHAPE(8)), FU_OK);
  fu_host_tensor_set_flat(&f, 0, 1e300);
  fu_host_tensor_set_flat(&f, 1, -1e300);
  fu_host_tensor_set_flat(&f, 2, 0x1.ffffffp127); /* FLT_MAX + half an ulp: a tie, rounds to even (inf) */
  fu_host_tensor_set_flat(&f, 3, 0x1.fffffefp127); /* below the tie: FLT_MAX */
  fu_host_tensor_set_flat(&f, 4, -0x1.fffffefp127);
  fu_host_tensor_set_flat(&f, 5, NAN);
  fu_host_tensor_set_flat(&f, 6, 1.0 / 3.0);
  fu_host_tensor_set_flat(&f, 7, 1e-50); /* underflows to 0 */
  const float *fv = f.data;
  CHECK(isinf(fv[0]) && fv[0] > 0);
  CHECK(isinf(fv[1]) && fv[1] < 0);
  CHECK(isinf(fv[2]) && fv[2] > 0);
  CHECK(fv[3] == FLT_MAX);
  CHECK(fv[4] == -FLT_MAX);
  CHECK(isnan(fv[5]));
  CHECK(fv[6] == 1.0f / 3.0f);
  CHECK(fv[7] == 0.0f);
  CHECK_EQ_INT(fu_host_tensor_alloc(&i, a, FU_DT_I32, 1, TI_SHAPE(6)), FU_OK);
  CHECK_EQ_INT(fu_host_tensor_alloc(&l, a, FU_DT_I64, 1, TI_SHAPE(6)), FU_OK);
  const double in[6] = {NAN, INFINITY, -INFINITY, 1e300, -1e300, -2.9};
  const int64_t want32[6] = {0, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, -2};
  const int64_t want64[6] = {0, INT64_MAX, INT64_MIN, INT64_MAX, INT64_MIN, -2};
  for (int k = 0; k < 6; k++) {
    fu_host_tensor_set_flat(&i, k, in[k]);
    fu_host_tensor_set_flat(&l, k, in[k]);
    CHECK_EQ_INT(((const int32_t *)i.data)[k], want32[k]);
    CHECK_EQ_INT(((const int64_t *)l.data)[k], want64[k]);
  }
  fu_host_tensor_free(&f);
  fu_host_tensor_free(&i);
  fu_host_tensor_free(&l);
}

static void test_host_tensors(void) {
  fu_allocator a = fu_default_allocator();
  fu_host_tensor t;
  CHECK_EQ_INT(fu_host_tensor_alloc(&t, a, FU_DT_I32, 2, TI_SHAPE(2, 3)), FU_OK);
  CHECK_EQ_INT(t.strides[0], 3);
  CHECK_EQ_INT(t.nbytes, 24);
  CHECK(fu_host_tensor_is_contiguous(&t));
  fu_host_tensor_set(&t, TI_SHAPE(1, 2), 7.9);
  CHECK_EQ_INT(fu_host_tensor_get_i64(&t, TI_SHAPE(1, 2)), 7); /* set converts like a cast */
  CHECK_EQ_INT(((int32_t *)t.data)[5], 7);
  fu_host_tensor_set_flat(&t, 0, 1e12); /* saturates */
  CHECK_EQ_INT(fu_host_tensor_get_flat_i64(&t, 0), INT32_MAX);
  fu_host_tensor_free(&t);
  CHECK(t.data == NULL);
  fu_host_tensor_free(&t); /* twice is fine */

  CHECK_EQ_INT(fu_host_tensor_alloc(&t, a, FU_DT_F32, 2, TI_SHAPE(-1, 3)), FU_ERR_INVALID_ARG);
  CHECK_EQ_INT(fu_host_tensor_alloc(&t, a, FU_DT_F32, 17, TI_SHAPE(1)), FU_ERR_INVALID_ARG);
  CHECK_EQ_INT(fu_host_tensor_alloc(&t, a, FU_DT_NONE, 1, TI_SHAPE(1)), FU_ERR_INVALID_ARG);
  CHECK_EQ_INT(fu_host_tensor_alloc(&t, a, FU_DT_F64, 2, TI_SHAPE(INT64_MAX / 2, 4)), FU_ERR_NOMEM);
  CHECK_EQ_INT(fu_host_tensor_alloc_strided(&t, a, FU_DT_F32, 1, TI_SHAPE(3), TI_SHAPE(-1)), FU_ERR_INVALID_ARG);

  /* rank 0 and empty tensors */
  CHECK_EQ_INT(fu_host_tensor_alloc(&t, a, FU_DT_BF16, 0, NULL), FU_OK);
  CHECK_EQ_INT(fu_host_tensor_numel(&t), 1);
  fu_host_tensor_set_flat(&t, 0, 3.140625);
  CHECK_EQ_INT(*(uint16_t *)t.data, 0x4049);
  fu_host_tensor_free(&t);
  CHECK_EQ_INT(fu_host_tensor_alloc(&t, a, FU_DT_F32, 2, TI_SHAPE(0, 5)), FU_OK);
  CHECK_EQ_INT(fu_host_tensor_numel(&t), 0);
  fu_host_tensor_free(&t);

  /* copies and comparison */
  fu_host_tensor s, c;
  CHECK_EQ_INT(fu_host_tensor_alloc_strided(&s, a, FU_DT_F16, 2, TI_SHAPE(2, 2), TI_SHAPE(1, 4)), FU_OK);
  CHECK(!fu_host_tensor_is_contiguous(&s));
  for (int i = 0; i < 4; i++) fu_host_tensor_set_flat(&s, i, i + 0.5);
  CHECK_EQ_INT(fu_host_tensor_copy_contiguous(&s, a, &c), FU_OK);
  CHECK(fu_host_tensor_is_contiguous(&c));
  for (int i = 0; i < 4; i++) CHECK_NEAR(fu_host_tensor_get_flat(&c, i), i + 0.5, 0);
  fu_compare_result r;
  CHECK_EQ_INT(fu_host_tensor_compare(&c, &s, 0, 0, &r), FU_OK);
  CHECK_EQ_INT(r.n_mismatch, 0);
  CHECK_EQ_INT(r.first_mismatch, -1);
  fu_host_tensor_set_flat(&c, 2, 2.75);
  CHECK_EQ_INT(fu_host_tensor_compare(&c, &s, 0, 0.1, &r), FU_OK);
  CHECK_EQ_INT(r.n_mismatch, 1);
  CHECK_EQ_INT(r.first_mismatch, 2);
  CHECK_NEAR(r.max_abs_err, 0.25, 0);
  CHECK_EQ_INT(fu_host_tensor_compare(&c, &s, 0.2, 0, &r), FU_OK); /* 0.25 <= 0.2 * 2.5 */
  CHECK_EQ_INT(r.n_mismatch, 0);
  fu_host_tensor_set_flat(&c, 0, NAN);
  CHECK_EQ_INT(fu_host_tensor_compare(&c, &s, 1, 1, &r), FU_OK);
  CHECK_EQ_INT(r.n_mismatch, 1);
  fu_host_tensor_set_flat(&s, 0, NAN);
  CHECK_EQ_INT(fu_host_tensor_compare(&c, &s, 1, 1, &r), FU_OK);
  CHECK_EQ_INT(r.n_mismatch, 0); /* NaN matches NaN */
  fu_host_tensor other;
  fu_host_tensor_alloc(&other, a, FU_DT_F16, 1, TI_SHAPE(4));
  CHECK_EQ_INT(fu_host_tensor_compare(&c, &other, 0, 0, &r), FU_ERR_INVALID_ARG);
  fu_host_tensor_free(&other);
  fu_host_tensor_free(&s);
  fu_host_tensor_free(&c);
}

static void test_rng(void) {
  fu_rng r1, r2;
  fu_rng_seed(&r1, 42);
  fu_rng_seed(&r2, 42);
  int same = 1;
  for (int i = 0; i < 100; i++) same &= fu_rng_next(&r1) == fu_rng_next(&r2);
  CHECK(same);
  fu_rng_seed(&r2, 43);
  CHECK(fu_rng_next(&r1) != fu_rng_next(&r2));
  /* splitmix64(0) seeds the first word: the reference value of splitmix64 */
  fu_rng_seed(&r1, 0);
  CHECK(r1.s[0] == UINT64_C(0xE220A8397B1DCDAF));
  /* Pinned stream values: a change here changes every example input. */
  fu_rng_seed(&r1, 0);
  uint64_t first = fu_rng_next(&r1);
  fu_rng_seed(&r2, 0);
  CHECK(fu_rng_next(&r2) == first);
  double sum = 0, sumsq = 0, umin = 1, umax = 0;
  int64_t imin = 100, imax = -100;
  for (int i = 0; i < 200000; i++) {
    double z = fu_rng_normal(&r1);
    sum += z;
    sumsq += z * z;
    double u = fu_rng_uniform(&r1);
    umin = fmin(umin, u);
    umax = fmax(umax, u);
    int64_t k = fu_rng_int(&r1, -3, 4);
    if (k < imin) imin = k;
    if (k > imax) imax = k;
  }
  CHECK(fabs(sum / 200000) < 0.01);
  CHECK(fabs(sumsq / 200000 - 1) < 0.02);
  CHECK(umin >= 0 && umin < 1e-3 && umax < 1 && umax > 0.999);
  CHECK_EQ_INT(imin, -3);
  CHECK_EQ_INT(imax, 3);
  CHECK_EQ_INT(fu_rng_int(&r1, INT64_MIN, INT64_MAX) != INT64_MAX, 1);
}

/* Each dtype survives a write + read; strided tensors write logically. */
static void test_npy_round_trip(void) {
  fu_allocator a = fu_default_allocator();
  fu_diag_engine diag;
  fu_diag_init(&diag, a);
  fu_dtype dts[] = {FU_DT_F64, FU_DT_F32, FU_DT_F16, FU_DT_BF16, FU_DT_I64, FU_DT_I32, FU_DT_BOOL};
  for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
    fu_host_tensor t, back;
    CHECK_EQ_INT(fu_host_tensor_alloc_strided(&t, a, dts[k], 3, TI_SHAPE(2, 3, 4), TI_SHAPE(1, 2, 6)), FU_OK);
    for (int64_t i = 0; i < 24; i++) fu_host_tensor_set_flat(&t, i, dts[k] == FU_DT_BOOL ? (double)(i % 3 == 0) : i - 5.5);
    fu_strbuf sb;
    fu_strbuf_init(&sb, a);
    CHECK_EQ_INT(fu_npy_write_buffer(&t, &sb), FU_OK);
    CHECK_EQ_INT((sb.len - 24 * fu_dtype_size(dts[k])) % 64, 0); /* header aligned to 64 */
    CHECK(strstr(sb.data + 10, fu_npy_descr(dts[k])) != NULL); /* the header text has no NUL */
    CHECK_EQ_INT(fu_npy_read_buffer(sb.data, sb.len, "rt.npy", dts[k], a, &diag, &back), FU_OK);
    CHECK_EQ_INT(back.rank, 3);
    CHECK_EQ_INT(back.shape[2], 4);
    fu_compare_result r;
    CHECK_EQ_INT(fu_host_tensor_compare(&back, &t, 0, 0, &r), FU_OK);
    CHECK_EQ_INT(r.n_mismatch, 0);
    CHECK_EQ_INT(back.dtype, dts[k]);
    fu_strbuf_free(&sb);
    fu_host_tensor_free(&t);
    fu_host_tensor_free(&back);
  }
  /* rank 0 through a real file */
  char path[] = "/tmp/fuser_npy_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  close(fd);
  fu_host_tensor s, back;
  fu_host_tensor_alloc(&s, a, FU_DT_F64, 0, NULL);
  fu_host_tensor_set_flat(&s, 0, -0.125);
  CHECK_EQ_INT(fu_npy_write(path, &s, &diag), FU_OK);
  CHECK_EQ_INT(fu_npy_read(path, FU_DT_NONE, a, &diag, &back), FU_OK);
  CHECK_EQ_INT(back.rank, 0);
  CHECK_NEAR(fu_host_tensor_get_flat(&back, 0), -0.125, 0);
  fu_host_tensor_free(&s);
  fu_host_tensor_free(&back);
  unlink(path);
  CHECK_EQ_INT(diag.n_errors, 0);
}

/* Build an .npy image by hand: header text as given, then `data`. */
static size_t make_npy(unsigned char *buf, int major, const char *dict, const void *data, size_t n) {
  size_t dl = strlen(dict);
  size_t pre = major == 1 ? 10 : 12;
  size_t hlen = dl + 1;
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (unsigned char)major;
  buf[7] = 0;
  buf[8] = (unsigned char)(hlen & 0xff);
  buf[9] = (unsigned char)(hlen >> 8);
  if (major != 1) buf[10] = buf[11] = 0;
  memcpy(buf + pre, dict, dl);
  buf[pre + dl] = '\n';
  memcpy(buf + pre + hlen, data, n);
  return pre + hlen + n;
}

static void test_npy_variants(void) {
  fu_allocator a = fu_default_allocator();
  ti_prog p;
  memset(&p, 0, sizeof p);
  ti_diag_init(&p);
  unsigned char buf[1024];
  fu_host_tensor t;
  /* Fortran order: column-major strides, no copy needed */
  float fdata[6] = {0, 3, 1, 4, 2, 5};
  size_t n = make_npy(buf, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", fdata, sizeof fdata);
  CHECK_EQ_INT(fu_npy_read_buffer(buf, n, "f.npy", FU_DT_F32, a, &p.diag, &t), FU_OK);
  CHECK_EQ_INT(t.strides[0], 1);
  CHECK_EQ_INT(t.strides[1], 2);
  for (int i = 0; i < 6; i++) CHECK_NEAR(fu_host_tensor_get_flat(&t, i), i, 0);
  fu_host_tensor_free(&t);
  /* empty tensors whose stride products would overflow: they read, with
   * no element and non-negative strides, in both orders */
  const char *empty[2] = {
      "{'descr': '<f4', 'fortran_order': True, 'shape': (0, 1099511627776, 1099511627776, 1099511627776), }",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 1099511627776, 1099511627776, 1099511627776), }"};
  for (int k = 0; k < 2; k++) {
    n = make_npy(buf, 1, empty[k], fdata, 0);
    CHECK_EQ_INT(fu_npy_read_buffer(buf, n, "e.npy", FU_DT_F32, a, &p.diag, &t), FU_OK);
    CHECK_EQ_INT(fu_host_tensor_numel(&t), 0);
    for (int d = 0; d < 4; d++) CHECK(t.strides[d] >= 0);
    fu_host_tensor_free(&t);
  }
  /* version 2.0, big-endian int32, double-quoted keys, Python 2 'L' */
  unsigned char be[8] = {0, 0, 1, 2, 0xff, 0xff, 0xff, 0xfe};
  n = make_npy(buf, 2, "{\"descr\": \">i4\", \"fortran_order\": False, \"shape\": (2L,)}", be, sizeof be);
  CHECK_EQ_INT(fu_npy_read_buffer(buf, n, "be.npy", FU_DT_NONE, a, &p.diag, &t), FU_OK);
  CHECK_EQ_INT(t.dtype, FU_DT_I32);
  CHECK_EQ_INT(fu_host_tensor_get_flat_i64(&t, 0), 258);
  CHECK_EQ_INT(fu_host_tensor_get_flat_i64(&t, 1), -2);
  fu_host_tensor_free(&t);
  /* bools other than 0/1 normalise; '<u2' reads only as bf16 */
  unsigned char bo[3] = {0, 2, 1};
  n = make_npy(buf, 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", bo, 3);
  CHECK_EQ_INT(fu_npy_read_buffer(buf, n, "b.npy", FU_DT_BOOL, a, &p.diag, &t), FU_OK);
  CHECK_EQ_INT(((unsigned char *)t.data)[1], 1);
  fu_host_tensor_free(&t);
  uint16_t u2[1] = {0x3F80};
  n = make_npy(buf, 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (), }", u2, 2);
  CHECK_EQ_INT(fu_npy_read_buffer(buf, n, "bf.npy", FU_DT_BF16, a, &p.diag, &t), FU_OK);
  CHECK_NEAR(fu_host_tensor_get_flat(&t, 0), 1.0, 0);
  fu_host_tensor_free(&t);
  CHECK_EQ_INT(p.cap.n_errors, 0);

  /* malformed files: each a clear error, never a crash */
  struct {
    int major;
    const char *dict;
    size_t data;
    const char *msg;
  } bad[] = {
      {1, "{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }", 2, "only be read as bf16"},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", 8, "truncated .npy data"},
      {1, "{'descr': '<u4', 'fortran_order': False, 'shape': (1,), }", 4, "unsupported .npy dtype '<u4'"},
      {1, "{'descr': '<f4', 'shape': (1,), }", 4, "missing 'fortran_order'"},
      {1, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }", 4, "must be True or False"},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, x), }", 4, "tuple of integers"},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 4, "too large"},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1), }", 4,
       "too many dims"},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 8), }", 4, "overflows"},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}", 4, "unknown key 'extra'"},
      {1, "['descr']", 4, "expected '{'"},
      {1, "{'descr': '<f4' 'fortran_order': False}", 4, "expected ',' or '}'"},
      {1, "{'descr': '|f4', 'fortran_order': False, 'shape': (1,), }", 4, "needs a 1-byte type"},
      {7, "{}", 0, "unsupported .npy format version 7.0"},
  };
  float zeros[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ti_diag_init(&p);
    n = make_npy(buf, bad[i].major, bad[i].dict, zeros, bad[i].data);
    fu_status st = fu_npy_read_buffer(buf, n, "bad.npy", strstr(bad[i].dict, "'<u2'") ? FU_DT_F32 : FU_DT_NONE, a,
                                      &p.diag, &t);
    CHECK(st != FU_OK);
    CHECK(t.data == NULL);
    CHECK_HAS(p.cap.text, bad[i].msg);
  }
  ti_diag_init(&p);
  CHECK_EQ_INT(fu_npy_read_buffer("\x93NUMPY\x01", 7, "short.npy", FU_DT_NONE, a, &p.diag, &t), FU_ERR_PARSE);
  CHECK_HAS(p.cap.text, "bad magic");
  n = make_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", zeros, 4);
  buf[8] = 0xff; /* header length beyond the buffer */
  CHECK_EQ_INT(fu_npy_read_buffer(buf, n, "hl.npy", FU_DT_NONE, a, &p.diag, &t), FU_ERR_PARSE);
  CHECK_HAS(p.cap.text, "truncated .npy header");
  n = make_npy(buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", zeros, 8);
  CHECK_EQ_INT(fu_npy_read_buffer(buf, n, "dt.npy", FU_DT_F32, a, &p.diag, &t), FU_ERR_PARSE);
  CHECK_HAS(p.cap.text, "holds f64 ('<f8') but f32 is wanted");
  ti_diag_init(&p);
  p.diag.handler = NULL; /* the default printer names the file */
  p.diag.stream = tmpfile();
  CHECK_EQ_INT(fu_npy_read("/nonexistent/x.npy", FU_DT_NONE, a, &p.diag, &t), FU_ERR_IO);
  rewind(p.diag.stream);
  char line[256] = "";
  CHECK(fgets(line, sizeof line, p.diag.stream) != NULL);
  CHECK_HAS(line, "/nonexistent/x.npy: error: cannot open .npy file");
  fclose(p.diag.stream);
}

/* Every truncation of a valid file fails cleanly. */
static void test_npy_truncations(void) {
  fu_allocator a = fu_default_allocator();
  fu_host_tensor t;
  fu_host_tensor_alloc(&t, a, FU_DT_I64, 2, TI_SHAPE(3, 2));
  fu_strbuf sb;
  fu_strbuf_init(&sb, a);
  fu_npy_write_buffer(&t, &sb);
  fu_host_tensor_free(&t);
  ti_prog p;
  memset(&p, 0, sizeof p);
  int failures = 0;
  for (size_t len = 0; len < sb.len; len++) {
    ti_diag_init(&p);
    char *copy = malloc(len ? len : 1); /* exact size, so ASan sees overreads */
    memcpy(copy, sb.data, len);
    fu_host_tensor back;
    if (fu_npy_read_buffer(copy, len, "cut.npy", FU_DT_NONE, a, &p.diag, &back) != FU_OK && p.cap.n_errors == 1)
      failures++;
    free(copy);
  }
  CHECK_EQ_INT(failures, (long long)sb.len);
  fu_strbuf_free(&sb);
}

FU_TEST_MAIN(FU_TEST(test_f16_special_values), FU_TEST(test_bf16_special_values), FU_TEST(test_host_tensors), FU_TEST(test_out_of_range_conversions),
             FU_TEST(test_rng), FU_TEST(test_npy_round_trip), FU_TEST(test_npy_variants),
             FU_TEST(test_npy_truncations))
