/* Unit tests for the reference interpreter: pointwise ops against
 * hand-computed values and identities, dtype semantics, broadcasting,
 * strided inputs, reductions, and runtime errors. */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "test_interp_util.h"

static const double PI = 3.14159265358979323846;

/* Run `%T1 = op %T0` on an input of dtype `dt` holding `in` and compare with
 * `want` (result dtype from inference). */
static void unary_case(int line, const char *op, const char *dt, size_t n, const double *in, const double *want,
                       double tol) {
  char text[512];
  snprintf(text, sizeof text, "fusion @u {\n  %%T0 = input %s[%zu]\n  %%T1 = %s %%T0\n  output %%T1\n}\n", dt, n, op);
  ti_prog p;
  if (!ti_parse(&p, text)) {
    fu_test_fail(__FILE__, line, "could not parse the '%s' case", op);
    ti_free(&p);
    return;
  }
  fu_dtype d = fu_dtype_from_name(dt, strlen(dt));
  fu_arg a = ti_tensor(d, 1, TI_SHAPE((int64_t)n), in);
  fu_status st = ti_run(&p, &a, 1);
  if (st != FU_OK) {
    fu_test_fail(__FILE__, line, "'%s' failed: %s", op, p.cap.text);
  } else {
    char where[64];
    snprintf(where, sizeof where, "%s (line %d)", op, line);
    ti_check_vals(where, line, &p.out[0], tol, want, n);
  }
  fu_arg_free(&a);
  ti_free(&p);
}

#define UNARY(op, dt, tol, IN, WANT)                                                                        \
  do {                                                                                                     \
    const double in_[] = IN, want_[] = WANT;                                                        \
    _Static_assert(sizeof in_ == sizeof want_, "same length");                                           \
    unary_case(__LINE__, op, dt, sizeof in_ / sizeof in_[0], in_, want_, tol);                              \
  } while (0)
#define L(...) {__VA_ARGS__}

static void test_unary_float_values(void) {
  const double e = 2.718281828459045;
  UNARY("abs", "f32", 0, L(-2, 0, 3.5, -INFINITY), L(2, 0, 3.5, INFINITY));
  UNARY("neg", "f64", 0, L(-2, 1.5), L(2, -1.5));
  UNARY("exp", "f64", 1e-15, L(0, 1, -INFINITY), L(1, e, 0));
  UNARY("exp", "f32", 0, L(1), L((double)expf(1.0f)));
  UNARY("exp2", "f32", 0, L(3, -1, 10), L(8, 0.5, 1024));
  UNARY("expm1", "f64", 1e-30, L(0, 1e-20), L(0, 1e-20));
  UNARY("log", "f64", 1e-15, L(1, e, 0, -1), L(0, 1, -INFINITY, NAN));
  UNARY("log2", "f32", 0, L(8, 0.25), L(3, -2));
  UNARY("log10", "f64", 1e-15, L(1000, 0.01), L(3, -2));
  UNARY("log1p", "f64", 1e-30, L(0, 1e-20), L(0, 1e-20));
  UNARY("sqrt", "f32", 0, L(4, 2.25, -1), L(2, 1.5, NAN));
  UNARY("rsqrt", "f64", 0, L(4, 0.25, 0), L(0.5, 2, INFINITY));
  UNARY("reciprocal", "f32", 0, L(4, -0.5, 0), L(0.25, -2, INFINITY));
  UNARY("sin", "f64", 1e-15, L(0, PI / 2, PI / 6), L(0, 1, 0.5));
  UNARY("cos", "f64", 1e-15, L(0, PI), L(1, -1));
  UNARY("tan", "f64", 1e-15, L(0, PI / 4), L(0, 1));
  UNARY("tanh", "f64", 1e-15, L(0, INFINITY, -INFINITY), L(0, 1, -1));
  UNARY("sinh", "f64", 1e-15, L(0, 1), L(0, (e - 1 / e) / 2));
  UNARY("cosh", "f64", 1e-15, L(0, 1), L(1, (e + 1 / e) / 2));
  UNARY("asin", "f64", 1e-15, L(1, 0, 2), L(PI / 2, 0, NAN));
  UNARY("acos", "f64", 1e-15, L(1, 0), L(0, PI / 2));
  UNARY("atan", "f64", 1e-15, L(1, INFINITY), L(PI / 4, PI / 2));
  UNARY("erf", "f64", 1e-15, L(0, INFINITY, 0.5), L(0, 1, 0.5204998778130465));
  UNARY("erfc", "f64", 1e-15, L(0, INFINITY), L(1, 0));
  UNARY("sigmoid", "f32", 1e-7, L(0, 100, -100, 2), L(0.5, 1, 0, 0.8807970779778823));
  UNARY("silu", "f64", 1e-15, L(0, 1, -1), L(0, 1 / (1 + 1 / e), -1 / (1 + e)));
  UNARY("relu", "f32", 0, L(-1, 0, 2.5, NAN), L(0, 0, 2.5, NAN));
  UNARY("floor", "f32", 0, L(-1.5, 1.5, 2), L(-2, 1, 2));
  UNARY("ceil", "f32", 0, L(-1.5, 1.5, 2), L(-1, 2, 2));
  /* round half to even */
  UNARY("round", "f32", 0, L(0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, 2.6, 1e20),
        L(0, 2, 2, -0.0, -2, -2, 2, 3, (double)1e20f));
  UNARY("round", "f64", 0, L(0.5, 1.5, 2.5, -3.5, 4503599627370497.0), L(0, 2, 2, -4, 4503599627370497.0));
  UNARY("trunc", "f64", 0, L(-1.7, 1.7), L(-1, 1));
  UNARY("sign", "f32", 0, L(-3, 0, 2, NAN, -INFINITY), L(-1, 0, 1, 0, -1));
}

static void test_unary_int_and_bool(void) {
  UNARY("abs", "i32", 0, L(-5, 7), L(5, 7));
  UNARY("neg", "i64", 0, L(-5, 7), L(5, -7));
  UNARY("relu", "i32", 0, L(-5, 7), L(0, 7));
  UNARY("sign", "i64", 0, L(-5, 0, 7), L(-1, 0, 1));
  UNARY("bitwise_not", "i32", 0, L(5, -1), L(-6, 0));
  UNARY("bitwise_not", "bool", 0, L(1, 0), L(0, 1));
  UNARY("logical_not", "f32", 0, L(0, 2, NAN), L(1, 0, 0));
  UNARY("isnan", "f32", 0, L(NAN, 1, INFINITY), L(1, 0, 0));
  UNARY("isinf", "f64", 0, L(NAN, 1, -INFINITY), L(0, 0, 1));
  UNARY("isfinite", "f16", 0, L(NAN, 1, INFINITY), L(0, 1, 0));
  UNARY("isfinite", "i32", 0, L(3), L(1));
  /* float-result ops on ints compute in f32 */
  UNARY("sqrt", "i32", 0, L(4, 2), L(2, (double)sqrtf(2.0f)));
  UNARY("floor", "i64", 0, L(-3, 3), L(-3, 3));
}

/* Identities on random data made from the file's example attributes. */
static void test_identities(void) {
  ti_prog p;
  const char *text =
      "fusion @id {\n"
      "  %T0 = input f64[1000] {example=randn, seed=7}\n"
      "  %T1 = sin %T0\n  %T2 = cos %T0\n"
      "  %T3 = mul %T1, %T1\n  %T4 = mul %T2, %T2\n  %T5 = add %T3, %T4\n"
      "  %T6 = abs %T0\n  %T7 = add %T6, 0.01\n  %T8 = log %T7\n  %T9 = exp %T8\n  %T10 = sub %T9, %T7\n"
      "  %T11 = erf %T0\n  %T12 = neg %T0\n  %T13 = erf %T12\n  %T14 = add %T11, %T13\n"
      "  %T15 = tanh %T0\n  %T16 = mul %T0, 2.0\n  %T17 = sigmoid %T16\n  %T18 = mul %T17, 2.0\n"
      "  %T19 = sub %T18, 1.0\n  %T20 = sub %T19, %T15\n"
      "  %T21 = sqrt %T7\n  %T22 = mul %T21, %T21\n  %T23 = sub %T22, %T7\n"
      "  output %T5, %T10, %T14, %T20, %T23, %T0\n"
      "}\n";
  CHECK(ti_parse(&p, text));
  CHECK_EQ_INT(ti_run_examples(&p, NULL), FU_OK);
  CHECK_EQ_INT(p.n_out, 6);
  if (p.n_out == 6) {
    double worst[5] = {0, 0, 0, 0, 0};
    double sum = 0, sumsq = 0;
    for (int64_t i = 0; i < 1000; i++) {
      worst[0] = fmax(worst[0], fabs(fu_host_tensor_get_flat(&p.out[0].tensor, i) - 1.0));
      for (int k = 1; k < 5; k++) worst[k] = fmax(worst[k], fabs(fu_host_tensor_get_flat(&p.out[k].tensor, i)));
      double x = fu_host_tensor_get_flat(&p.out[5].tensor, i);
      sum += x;
      sumsq += x * x;
    }
    CHECK(worst[0] < 1e-15);
    CHECK(worst[1] < 1e-14);
    CHECK(worst[2] == 0); /* erf is odd, exactly */
    CHECK(worst[3] < 1e-15);
    CHECK(worst[4] < 1e-14);
    /* the example data is normal-ish */
    CHECK(fabs(sum / 1000) < 0.15);
    CHECK(fabs(sumsq / 1000 - 1) < 0.2);
  }
  ti_free(&p);
}

/* f32, f16 and bf16 compute in float and round on store; f64 in double. */
static void test_compute_dtypes(void) {
  ti_prog p;
  CHECK(ti_parse(&p, "fusion @f {\n  %T0 = input f32[2]\n  %T1 = input f64[2]\n  %T2 = add %T0, 1.0\n"
                     "  %T3 = add %T1, 1.0\n  %T4 = mul %T0, 0.1\n  output %T2, %T3, %T4\n}\n"));
  fu_arg in[2] = {ti_tensor(FU_DT_F32, 1, TI_SHAPE(2), TI_VALS(16777216.0, 3.0)),
                  ti_tensor(FU_DT_F64, 1, TI_SHAPE(2), TI_VALS(16777216.0, 3.0))};
  CHECK_EQ_INT(ti_run(&p, in, 2), FU_OK);
  CHECK_VALS(&p.out[0], 0, 16777216.0, 4.0);
  CHECK_VALS(&p.out[1], 0, 16777217.0, 4.0);
  /* weak scalar: 0.1 becomes a float, product rounded in float */
  CHECK_VALS(&p.out[2], 0, (double)(16777216.0f * 0.1f), (double)(3.0f * 0.1f));
  CHECK_EQ_INT(p.out[2].tensor.dtype, FU_DT_F32);
  fu_arg_free(&in[0]);
  fu_arg_free(&in[1]);
  ti_free(&p);

  /* f16: 2048 + 1 ties to even (2048); 1000 * 1000 overflows to inf;
   * bf16: 256 + 1 ties to 256, 257 + ... */
  CHECK(ti_parse(&p, "fusion @h {\n  %T0 = input f16[3]\n  %T1 = input bf16[3]\n  %T2 = add %T0, 1.0\n"
                     "  %T3 = mul %T0, 1000.0\n  %T4 = add %T1, 1.0\n  %T5 = add %T0, %T1\n  output %T2, %T3, %T4, %T5\n}\n"));
  fu_arg h[2] = {ti_tensor(FU_DT_F16, 1, TI_SHAPE(3), TI_VALS(2048, 1000, 0.5)),
                 ti_tensor(FU_DT_BF16, 1, TI_SHAPE(3), TI_VALS(256, 1, 0))};
  CHECK_EQ_INT(ti_run(&p, h, 2), FU_OK);
  CHECK_VALS(&p.out[0], 0, 2048, 1001, 1.5);
  CHECK_VALS(&p.out[1], 0, INFINITY, INFINITY, 500);
  CHECK_VALS(&p.out[2], 0, 256, 2, 1);
  CHECK_EQ_INT(p.out[3].tensor.dtype, FU_DT_F32); /* f16 with bf16 promotes to f32 */
  CHECK_SHAPE(&p.out[3], FU_DT_F32, 1, 3);
  CHECK_VALS(&p.out[3], 0, 2304, 1001, 0.5);
  fu_arg_free(&h[0]);
  fu_arg_free(&h[1]);
  ti_free(&p);
}

/* Binary ops on two tensors of one dtype: results per element. */
static void binary_case(int line, const char *op, const char *dt, size_t n, const double *a, const double *b,
                        const double *want) {
  char text[512];
  snprintf(text, sizeof text,
           "fusion @b {\n  %%T0 = input %s[%zu]\n  %%T1 = input %s[%zu]\n  %%T2 = %s %%T0, %%T1\n  output %%T2\n}\n", dt,
           n, dt, n, op);
  ti_prog p;
  if (!ti_parse(&p, text)) {
    fu_test_fail(__FILE__, line, "could not parse the '%s' case", op);
    ti_free(&p);
    return;
  }
  fu_dtype d = fu_dtype_from_name(dt, strlen(dt));
  fu_arg in[2] = {ti_tensor(d, 1, TI_SHAPE((int64_t)n), a), ti_tensor(d, 1, TI_SHAPE((int64_t)n), b)};
  if (ti_run(&p, in, 2) != FU_OK)
    fu_test_fail(__FILE__, line, "'%s' failed: %s", op, p.cap.text);
  else
    ti_check_vals(op, line, &p.out[0], 0, want, n);
  fu_arg_free(&in[0]);
  fu_arg_free(&in[1]);
  ti_free(&p);
}

#define BINARY(op, dt, A, B, WANT)                                                   \
  do {                                                                              \
    const double a_[] = A, b_[] = B, w_[] = WANT;                            \
    _Static_assert(sizeof a_ == sizeof w_ && sizeof b_ == sizeof w_, "same length"); \
    binary_case(__LINE__, op, dt, sizeof a_ / sizeof a_[0], a_, b_, w_);             \
  } while (0)

static void test_int_semantics(void) {
  /* div truncates; remainder takes the divisor's sign; fmod the dividend's */
  BINARY("div", "i32", L(7, -7, 7, -7), L(2, 2, -2, -2), L(3, -3, -3, 3));
  BINARY("remainder", "i64", L(7, -7, 7, -7, 6), L(2, 2, -2, -2, 3), L(1, 1, -1, -1, 0));
  BINARY("fmod", "i64", L(7, -7, 7, -7), L(2, 2, -2, -2), L(1, -1, 1, -1));
  BINARY("remainder", "f32", L(-7.5, 7.5, 5), L(2, -2, INFINITY), L(0.5, -0.5, 5));
  BINARY("fmod", "f64", L(-7.5, 7.5, 1), L(2, -2, 0), L(-1.5, 1.5, NAN));
  BINARY("div", "f32", L(1, -1, 0), L(0, 0, 0), L(INFINITY, -INFINITY, NAN));
  BINARY("pow", "i64", L(3, 2, -1, 1, -2, 0), L(4, -1, -3, -5, 3, 0), L(81, 0, -1, 1, -8, 1));
  BINARY("pow", "f64", L(2, 4, -8), L(10, 0.5, 1.0 / 3), L(1024, 2, NAN));
  /* wrapping overflow */
  BINARY("add", "i32", L(2147483647), L(1), L(-2147483648.0));
  BINARY("mul", "i32", L(65536), L(65536), L(0));
  BINARY("maximum", "i32", L(3, -3), L(2, 5), L(3, 5));
  BINARY("minimum", "f32", L(NAN, 1, 1), L(1, NAN, 2), L(NAN, NAN, 1));
  BINARY("maximum", "f64", L(NAN, 1, -0.5), L(1, 2, -1), L(NAN, 2, -0.5));
  BINARY("atan2", "f64", L(1, 0, -1), L(1, -1, 0), L(PI / 4, PI, -PI / 2));
  BINARY("bitwise_and", "i32", L(12, -1), L(10, 7), L(8, 7));
  BINARY("bitwise_or", "i64", L(12), L(10), L(14));
  BINARY("bitwise_xor", "i64", L(12), L(10), L(6));
  BINARY("bitwise_xor", "bool", L(1, 1, 0), L(1, 0, 0), L(0, 1, 0));
  BINARY("logical_and", "f32", L(1, NAN, 0), L(2, 1, 1), L(1, 1, 0));
  BINARY("logical_or", "i32", L(0, 0, 5), L(0, 3, 0), L(0, 1, 1));
  BINARY("eq", "f32", L(1, NAN, 2), L(1, NAN, 3), L(1, 0, 0));
  BINARY("ne", "f32", L(1, NAN), L(1, NAN), L(0, 1));
  BINARY("lt", "i64", L(1, 2, 3), L(2, 2, 2), L(1, 0, 0));
  BINARY("le", "i64", L(1, 2, 3), L(2, 2, 2), L(1, 1, 0));
  BINARY("gt", "f64", L(1, 2, NAN), L(2, 1, 0), L(0, 1, 0));
  BINARY("ge", "f64", L(1, 2, 2), L(2, 2, 1), L(0, 1, 1));
  BINARY("sub", "bool", L(1), L(0), L(1));
  BINARY("add", "bool", L(1, 0), L(1, 0), L(1, 0));

  /* integer division by zero is an error naming the op */
  ti_prog p;
  CHECK(ti_parse(&p, "fusion @d {\n  %T0 = input i32[2]\n  %T1 = div %T0, 0\n  output %T1\n}\n"));
  fu_arg a = ti_tensor(FU_DT_I32, 1, TI_SHAPE(2), TI_VALS(1, 2));
  CHECK_EQ_INT(ti_run(&p, &a, 1), FU_ERR_RUNTIME);
  CHECK_HAS(p.cap.text, "integer division by zero");
  CHECK_HAS(p.cap.text, "'div' defining '%T1'");
  CHECK(p.out == NULL);
  fu_arg_free(&a);
  ti_free(&p);
}

/* Mixed operand categories and the weak-scalar rule. */
static void test_promotion(void) {
  ti_prog p;
  CHECK(ti_parse(&p, "fusion @p {\n  %T0 = input i32[3]\n  %S0 = input f64\n  %T1 = mul %T0, 0.5\n"
                     "  %T2 = add %T0, 3\n  %T3 = lt %T0, 1.5\n  %T4 = mul %T0, %S0\n  %T5 = cast %T1 : i64[3]\n"
                     "  output %T1, %T2, %T3, %T4, %T5\n}\n"));
  fu_arg in[2] = {ti_tensor(FU_DT_I32, 1, TI_SHAPE(3), TI_VALS(1, 2, -3)), fu_arg_scalar_f(FU_DT_F64, 0.25)};
  CHECK_EQ_INT(ti_run(&p, in, 2), FU_OK);
  CHECK_SHAPE(&p.out[0], FU_DT_F32, 1, 3);
  CHECK_VALS(&p.out[0], 0, 0.5, 1, -1.5);
  CHECK_SHAPE(&p.out[1], FU_DT_I32, 1, 3);
  CHECK_VALS(&p.out[1], 0, 4, 5, 0);
  CHECK_SHAPE(&p.out[2], FU_DT_BOOL, 1, 3);
  CHECK_VALS(&p.out[2], 0, 1, 0, 1);
  CHECK_SHAPE(&p.out[3], FU_DT_F32, 1, 3);
  CHECK_VALS(&p.out[3], 0, 0.25, 0.5, -0.75);
  CHECK_VALS(&p.out[4], 0, 0, 1, -1); /* truncation toward zero */
  fu_arg_free(&in[0]);
  ti_free(&p);

  /* scalar-only arithmetic gives a scalar output */
  CHECK(ti_parse(&p, "fusion @s {\n  %S0 = input f64 {example=1.5}\n  %S1 = input i64 {example=4}\n"
                     "  %S2 = mul %S0, %S1\n  %S3 = div %S1, 3\n  output %S2, %S3\n}\n"));
  CHECK_EQ_INT(ti_run_examples(&p, NULL), FU_OK);
  CHECK_EQ_INT(p.out[0].kind, FU_ARG_SCALAR);
  CHECK_EQ_INT(p.out[0].scalar_dtype, FU_DT_F64);
  CHECK_NEAR(p.out[0].scalar.f, 6.0, 0);
  CHECK_EQ_INT(p.out[1].scalar_dtype, FU_DT_I64);
  CHECK_EQ_INT(p.out[1].scalar.i, 1);
  ti_free(&p);
}

static void test_casts(void) {
  ti_prog p;
  CHECK(ti_parse(&p, "fusion @c {\n  %T0 = input f32[6]\n  %T1 = cast %T0 : i32[6]\n  %T2 = cast %T0 : bool[6]\n"
                     "  %T3 = cast %T0 : i64[6]\n  %T4 = cast %T0 : f16[6]\n  output %T1, %T2, %T3, %T4\n}\n"));
  fu_arg a = ti_tensor(FU_DT_F32, 1, TI_SHAPE(6), TI_VALS(-1.7, 2.9, NAN, 1e10, -1e10, 0.0));
  CHECK_EQ_INT(ti_run(&p, &a, 1), FU_OK);
  CHECK_VALS(&p.out[0], 0, -1, 2, 0, 2147483647.0, -2147483648.0, 0);
  CHECK_VALS(&p.out[1], 0, 1, 1, 1, 1, 1, 0);
  CHECK_VALS(&p.out[2], 0, -1, 2, 0, 1e10, -1e10, 0);
  CHECK_VALS(&p.out[3], 0, -1.7001953125, 2.900390625, NAN, INFINITY, -INFINITY, 0);
  fu_arg_free(&a);
  ti_free(&p);

  CHECK(ti_parse(&p, "fusion @c2 {\n  %T0 = input i64[3]\n  %T1 = cast %T0 : i32[3]\n  %T2 = cast %T0 : f32[3]\n"
                     "  %T3 = input bool[2]\n  %T4 = cast %T3 : f64[2]\n  output %T1, %T2, %T4\n}\n"));
  fu_arg in[2];
  fu_host_tensor t;
  fu_host_tensor_alloc(&t, fu_default_allocator(), FU_DT_I64, 1, TI_SHAPE(3));
  fu_host_tensor_set_i64(&t, TI_SHAPE(0), INT64_C(4294967297)); /* 2^32 + 1 wraps to 1 */
  fu_host_tensor_set_i64(&t, TI_SHAPE(1), -1);
  fu_host_tensor_set_i64(&t, TI_SHAPE(2), INT64_C(16777217)); /* rounds to even in f32 */
  in[0] = fu_arg_tensor(t);
  in[1] = ti_tensor(FU_DT_BOOL, 1, TI_SHAPE(2), TI_VALS(1, 0));
  CHECK_EQ_INT(ti_run(&p, in, 2), FU_OK);
  CHECK_VALS(&p.out[0], 0, 1, -1, 16777217);
  CHECK_VALS(&p.out[1], 0, 4294967296.0, -1, 16777216);
  CHECK_VALS(&p.out[2], 0, 1, 0);
  fu_arg_free(&in[0]);
  fu_arg_free(&in[1]);
  ti_free(&p);
}

static void test_ternary(void) {
  ti_prog p;
  CHECK(ti_parse(&p, "fusion @t {\n  %T0 = input bool[4]\n  %T1 = input f32[4]\n  %T2 = input f32[4]\n"
                     "  %T3 = where %T0, %T1, %T2\n  %T4 = clamp %T1, -1.0, 1.0\n  %T5 = lerp %T1, %T2, 0.25\n"
                     "  %T6 = clamp %T1, 2.0, 1.0\n  %T7 = where %T0, %T1, 0.0\n  %T8 = lerp %T1, %T2, 1.0\n"
                     "  output %T3, %T4, %T5, %T6, %T7, %T8\n}\n"));
  fu_arg in[3] = {ti_tensor(FU_DT_BOOL, 1, TI_SHAPE(4), TI_VALS(1, 0, 1, 0)),
                  ti_tensor(FU_DT_F32, 1, TI_SHAPE(4), TI_VALS(-3, 0.5, 7, NAN)),
                  ti_tensor(FU_DT_F32, 1, TI_SHAPE(4), TI_VALS(1, 4.5, -1, 2))};
  CHECK_EQ_INT(ti_run(&p, in, 3), FU_OK);
  CHECK_VALS(&p.out[0], 0, -3, 4.5, 7, 2);
  CHECK_VALS(&p.out[1], 0, -1, 0.5, 1, NAN);
  CHECK_VALS(&p.out[2], 0, -2, 1.5, 5, NAN);
  CHECK_VALS(&p.out[3], 0, 1, 1, 1, NAN); /* lo > hi gives hi */
  CHECK_VALS(&p.out[4], 0, -3, 0, 7, 0);
  CHECK_VALS(&p.out[5], 0, 1, 4.5, -1, NAN); /* exact at weight 1 */
  for (int i = 0; i < 3; i++) fu_arg_free(&in[i]);
  ti_free(&p);

  CHECK(ti_parse(&p, "fusion @ti {\n  %T0 = input i32[3]\n  %T1 = clamp %T0, 0, 10\n  output %T1\n}\n"));
  fu_arg a = ti_tensor(FU_DT_I32, 1, TI_SHAPE(3), TI_VALS(-5, 5, 50));
  CHECK_EQ_INT(ti_run(&p, &a, 1), FU_OK);
  CHECK_VALS(&p.out[0], 0, 0, 5, 10);
  fu_arg_free(&a);
  ti_free(&p);
}

/* Broadcasting extent-1 dims, and inputs whose strides are permuted or 0. */
static void test_broadcast_and_strides(void) {
  ti_prog p;
  CHECK(ti_parse(&p, "fusion @bc {\n  %T0 = input f32[3, 1]\n  %T1 = input f32[1, 4]\n  %T2 = add %T0, %T1\n"
                     "  output %T2\n}\n"));
  fu_arg in[2] = {ti_tensor(FU_DT_F32, 2, TI_SHAPE(3, 1), TI_VALS(0, 10, 20)),
                  ti_tensor(FU_DT_F32, 2, TI_SHAPE(1, 4), TI_VALS(1, 2, 3, 4))};
  CHECK_EQ_INT(ti_run(&p, in, 2), FU_OK);
  CHECK_SHAPE(&p.out[0], FU_DT_F32, 2, 3, 4);
  CHECK_VALS(&p.out[0], 0, 1, 2, 3, 4, 11, 12, 13, 14, 21, 22, 23, 24);
  fu_arg_free(&in[0]);
  fu_arg_free(&in[1]);
  ti_free(&p);

  /* A column-major input (strides [1, 2]) and an expanded one (stride 0). */
  CHECK(ti_parse(&p, "fusion @st {\n  %T0 = input f64[2, 3]\n  %T1 = input f64[2, 3]\n  %T2 = sub %T0, %T1\n"
                     "  %T3 = sum %T0 {axes=[1]}\n  output %T2, %T3\n}\n"));
  fu_host_tensor cm, ex;
  CHECK_EQ_INT(fu_host_tensor_alloc_strided(&cm, fu_default_allocator(), FU_DT_F64, 2, TI_SHAPE(2, 3), TI_SHAPE(1, 2)),
               FU_OK);
  CHECK_EQ_INT(cm.nbytes, 6 * 8);
  for (int64_t i = 0; i < 6; i++) fu_host_tensor_set_flat(&cm, i, (double)i); /* logical 0..5 */
  CHECK_NEAR(((double *)cm.data)[1], 3.0, 0); /* storage is column-major */
  CHECK_EQ_INT(fu_host_tensor_alloc_strided(&ex, fu_default_allocator(), FU_DT_F64, 2, TI_SHAPE(2, 3), TI_SHAPE(0, 1)),
               FU_OK);
  CHECK_EQ_INT(ex.nbytes, 3 * 8);
  for (int64_t i = 0; i < 3; i++) fu_host_tensor_set_flat(&ex, i, 10.0 * (double)i);
  fu_arg st_in[2] = {fu_arg_tensor(cm), fu_arg_tensor(ex)};
  CHECK_EQ_INT(ti_run(&p, st_in, 2), FU_OK);
  CHECK_VALS(&p.out[0], 0, 0, -9, -18, 3, -6, -15);
  CHECK_VALS(&p.out[1], 0, 3, 12);
  CHECK_EQ_INT(p.out[0].tensor.strides[0], 3); /* outputs are row-major */
  fu_arg_free(&st_in[0]);
  fu_arg_free(&st_in[1]);
  ti_free(&p);
}

static void test_reductions(void) {
  ti_prog p;
  CHECK(ti_parse(&p,
                 "fusion @r {\n  %T0 = input f32[2, 3]\n"
                 "  %T1 = sum %T0 {axes=[0]}\n  %T2 = sum %T0 {axes=[1], keepdim=true}\n"
                 "  %T3 = sum %T0 {axes=[0, 1]}\n  %T4 = prod %T0 {axes=[1]}\n  %T5 = max %T0 {axes=[1]}\n"
                 "  %T6 = min %T0 {axes=[0]}\n  %T7 = var %T0 {axes=[1], correction=0}\n"
                 "  %T8 = var %T0 {axes=[1]}\n  %T9, %T10 = var_mean %T0 {axes=[0, 1], correction=1, keepdim=true}\n"
                 "  output %T1, %T2, %T3, %T4, %T5, %T6, %T7, %T8, %T9, %T10\n}\n"));
  fu_arg a = ti_tensor(FU_DT_F32, 2, TI_SHAPE(2, 3), TI_VALS(1, 2, 3, 4, 5, 6));
  CHECK_EQ_INT(ti_run(&p, &a, 1), FU_OK);
  CHECK_SHAPE(&p.out[0], FU_DT_F32, 1, 3);
  CHECK_VALS(&p.out[0], 0, 5, 7, 9);
  CHECK_SHAPE(&p.out[1], FU_DT_F32, 2, 2, 1);
  CHECK_VALS(&p.out[1], 0, 6, 15);
  CHECK_SHAPE(&p.out[2], FU_DT_F32, 0, 0);
  CHECK_VALS(&p.out[2], 0, 21);
  CHECK_VALS(&p.out[3], 0, 6, 120);
  CHECK_VALS(&p.out[4], 0, 3, 6);
  CHECK_VALS(&p.out[5], 0, 1, 2, 3);
  CHECK_VALS(&p.out[6], 1e-7, 2.0 / 3, 2.0 / 3);
  CHECK_VALS(&p.out[7], 0, 1, 1);
  CHECK_SHAPE(&p.out[8], FU_DT_F32, 2, 1, 1);
  CHECK_VALS(&p.out[8], 1e-6, 3.5);
  CHECK_VALS(&p.out[9], 0, 3.5);
  fu_arg_free(&a);
  ti_free(&p);

  /* NaN propagation, empty reductions, constants, ints, bools */
  CHECK(ti_parse(&p, "fusion @rn {\n  %T0 = input f64[2, N]\n  %T1 = max %T0 {axes=[1]}\n  %T2 = min %T0 {axes=[1]}\n"
                     "  %T3 = sum %T0 {axes=[1]}\n  output %T1, %T2, %T3\n}\n"));
  fu_arg n = ti_tensor(FU_DT_F64, 2, TI_SHAPE(2, 2), TI_VALS(NAN, 1, 3, -INFINITY));
  CHECK_EQ_INT(ti_run(&p, &n, 1), FU_OK);
  CHECK_VALS(&p.out[0], 0, NAN, 3);
  CHECK_VALS(&p.out[1], 0, NAN, -INFINITY);
  CHECK_VALS(&p.out[2], 0, NAN, -INFINITY);
  fu_arg_free(&n);
  fu_arg e = ti_tensor(FU_DT_F64, 2, TI_SHAPE(2, 0), TI_VALS(0));
  CHECK_EQ_INT(ti_run(&p, &e, 1), FU_ERR_RUNTIME);
  CHECK_HAS(p.cap.text, "zero elements");
  fu_arg_free(&e);
  ti_free(&p);

  CHECK(ti_parse(&p, "fusion @ri {\n  %T0 = input i32[3]\n  %T1 = sum %T0 {axes=[0]}\n  %T2 = input bool[4]\n"
                     "  %T3 = sum %T2 {axes=[0]}\n  %T4 = prod %T0 {axes=[0]}\n  %T5 = max %T2 {axes=[0]}\n"
                     "  %T6 = input f16[4]\n  %T7 = sum %T6 {axes=[0], dtype=f32}\n  %T8 = sum %T6 {axes=[0]}\n"
                     "  %T9 = var %T6 {axes=[0]}\n"
                     "  output %T1, %T3, %T4, %T5, %T7, %T8, %T9\n}\n"));
  fu_arg in[3] = {ti_tensor(FU_DT_I32, 1, TI_SHAPE(3), TI_VALS(2147483647, 2147483647, 2)),
                  ti_tensor(FU_DT_BOOL, 1, TI_SHAPE(4), TI_VALS(1, 0, 1, 1)),
                  ti_tensor(FU_DT_F16, 1, TI_SHAPE(4), TI_VALS(2048, 1, 1, 7))};
  CHECK_EQ_INT(ti_run(&p, in, 3), FU_OK);
  CHECK_SHAPE(&p.out[0], FU_DT_I64, 0, 0);
  CHECK_VALS(&p.out[0], 0, 4294967296.0); /* i64 accumulation: no i32 overflow */
  CHECK_SHAPE(&p.out[1], FU_DT_I64, 0, 0);
  CHECK_VALS(&p.out[1], 0, 3);
  CHECK_VALS(&p.out[2], 0, 9223372028264841218.0);
  CHECK_VALS(&p.out[3], 0, 1);
  CHECK_SHAPE(&p.out[4], FU_DT_F32, 0, 0);
  CHECK_VALS(&p.out[4], 0, 2057); /* accumulated in double, not f16 */
  CHECK_SHAPE(&p.out[5], FU_DT_F16, 0, 0);
  CHECK_VALS(&p.out[5], 0, 2056); /* 2057 rounds to even in f16 */
  CHECK_VALS(&p.out[6], 0, INFINITY); /* var 1045514.25 (in double) overflows f16 */
  for (int i = 0; i < 3; i++) fu_arg_free(&in[i]);
  ti_free(&p);

  /* var of constants is 0; var of one element is NaN; sum of iota is n(n-1)/2 */
  CHECK(ti_parse(&p, "fusion @rv {\n  %T0 = full 3.25 : f64[5, 7]\n  %T1 = var %T0 {axes=[0, 1]}\n"
                     "  %T2 = full 1.0 : f32[1]\n  %T3 = var %T2 {axes=[0]}\n"
                     "  %T4 = iota 0, 1 : i64[1000]\n  %T5 = sum %T4 {axes=[0]}\n"
                     "  %T6 = iota 0.0, 0.5 : f64[10]\n  %T7 = sum %T6 {axes=[0]}\n  output %T1, %T3, %T5, %T7\n}\n"));
  CHECK_EQ_INT(ti_run(&p, NULL, 0), FU_OK);
  CHECK_VALS(&p.out[0], 0, 0);
  CHECK_VALS(&p.out[1], 0, NAN);
  CHECK_VALS(&p.out[2], 0, 499500);
  CHECK_VALS(&p.out[3], 0, 22.5);
  ti_free(&p);
}

/* Reductions over every axis subset of a random 3-D tensor, against a
 * direct nested-loop computation. */
static void test_reduction_axes_exhaustive(void) {
  for (int mask = 1; mask < 8; mask++) {
    for (int keep = 0; keep < 2; keep++) {
      char axes[32] = "";
      size_t n = 0;
      for (int d = 0; d < 3; d++)
        if (mask & (1 << d)) n += (size_t)snprintf(axes + n, sizeof axes - n, "%s%d", n ? ", " : "", d);
      char text[512];
      snprintf(text, sizeof text,
               "fusion @ra {\n  %%T0 = input f64[3, 4, 5] {example=randn, seed=3}\n"
               "  %%T1 = sum %%T0 {axes=[%s], keepdim=%s}\n  %%T2 = max %%T0 {axes=[%s], keepdim=%s}\n"
               "  output %%T0, %%T1, %%T2\n}\n",
               axes, keep ? "true" : "false", axes, keep ? "true" : "false");
      ti_prog p;
      CHECK(ti_parse(&p, text));
      CHECK_EQ_INT(ti_run_examples(&p, NULL), FU_OK);
      if (p.n_out != 3) {
        ti_free(&p);
        continue;
      }
      const fu_host_tensor *x = &p.out[0].tensor, *s = &p.out[1].tensor, *m = &p.out[2].tensor;
      int64_t ext[3] = {3, 4, 5};
      int64_t osz[3];
      for (int d = 0; d < 3; d++) osz[d] = (mask & (1 << d)) ? 1 : ext[d];
      int bad = 0;
      for (int64_t o0 = 0; o0 < osz[0]; o0++)
        for (int64_t o1 = 0; o1 < osz[1]; o1++)
          for (int64_t o2 = 0; o2 < osz[2]; o2++) {
            double sum = 0, mx = -INFINITY;
            for (int64_t i0 = 0; i0 < ext[0]; i0++)
              for (int64_t i1 = 0; i1 < ext[1]; i1++)
                for (int64_t i2 = 0; i2 < ext[2]; i2++) {
                  if (!(mask & 1) && i0 != o0) continue;
                  if (!(mask & 2) && i1 != o1) continue;
                  if (!(mask & 4) && i2 != o2) continue;
                  double v = fu_host_tensor_get(x, TI_SHAPE(i0, i1, i2));
                  sum += v;
                  mx = fmax(mx, v);
                }
            int64_t flat = (o0 * osz[1] + o1) * osz[2] + o2;
            if (fabs(fu_host_tensor_get_flat(s, flat) - sum) > 1e-12) bad++;
            if (fu_host_tensor_get_flat(m, flat) != mx) bad++;
          }
      CHECK_EQ_INT(bad, 0);
      CHECK_EQ_INT(s->rank, keep ? 3 : 3 - __builtin_popcount((unsigned)mask));
      ti_free(&p);
    }
  }
}

/* A fusion built with the C API (no parser): (x + y) * 2 over f32[2, 2]. */
static void test_c_api_fusion(void) {
  fu_module *m = fu_module_new(fu_default_allocator());
  fu_fusion *f = fu_fusion_new(m, "capi", fu_loc_none());
  fu_extent dims[2] = {{2, NULL}, {0, fu_module_intern(m, "N", 1)}};
  fu_value *in[2];
  for (int i = 0; i < 2; i++) {
    fu_op *op = fu_op_new(f, FU_OP_INPUT, NULL, 0, 1, fu_loc_none());
    op->u.input.example.rank = -1;
    op->results[0]->type.dtype = FU_DT_F32;
    op->results[0]->type.rank = 2;
    op->results[0]->type.dims = fu_dims_copy(m, dims, 2);
    fu_value_set_name(m, op->results[0], i ? "T1" : "T0");
    fu_block_append(&f->body, op);
    in[i] = op->results[0];
  }
  fu_op *add = fu_op_new(f, FU_OP_ADD, in, 2, 1, fu_loc_none());
  add->results[0]->type = in[0]->type;
  fu_value_set_name(m, add->results[0], "T2");
  fu_block_append(&f->body, add);
  fu_value *mo[2] = {add->results[0], fu_literal_f(f, FU_DT_F64, 2.0)};
  fu_op *mul = fu_op_new(f, FU_OP_MUL, mo, 2, 1, fu_loc_none());
  mul->results[0]->type = in[0]->type;
  fu_value_set_name(m, mul->results[0], "T3");
  fu_block_append(&f->body, mul);
  fu_op *out = fu_op_new(f, FU_OP_OUTPUT, &mul->results[0], 1, 0, fu_loc_none());
  fu_block_append(&f->body, out);

  fu_arg args[2] = {ti_tensor(FU_DT_F32, 2, TI_SHAPE(2, 2), TI_VALS(1, 2, 3, 4)),
                    ti_tensor(FU_DT_F32, 2, TI_SHAPE(2, 2), TI_VALS(10, 20, 30, 40))};
  ti_prog p;
  memset(&p, 0, sizeof p);
  ti_diag_init(&p);
  p.f = f;
  CHECK_EQ_INT(ti_run(&p, args, 2), FU_OK);
  CHECK_VALS(&p.out[0], 0, 22, 44, 66, 88);
  /* N is bound inconsistently: error names the symbol and both sizes */
  fu_arg bad = ti_tensor(FU_DT_F32, 2, TI_SHAPE(2, 3), TI_VALS(1, 2, 3, 4, 5, 6));
  fu_arg mixed[2] = {args[0], bad};
  CHECK_EQ_INT(ti_run(&p, mixed, 2), FU_ERR_INVALID_ARG);
  CHECK_HAS(p.cap.text, "symbol 'N' is bound inconsistently: 2 by dim 1 of '%T0', but 3 by dim 1 of input 1 ('%T1')");
  fu_arg_free(&bad);
  fu_arg_free(&args[0]);
  fu_arg_free(&args[1]);
  ti_free_outputs(&p);
  fu_module_free(m);
}

/* Custom allocator that fails after a budget, to check every failure path
 * frees what it took. */
typedef struct budget {
  size_t left;
  size_t live;
} budget;

static void *budget_alloc(void *user, void *ptr, size_t old, size_t size) {
  budget *b = user;
  if (size == 0) {
    if (ptr) b->live--;
    free(ptr);
    return NULL;
  }
  (void)old;
  if (b->left == 0) return NULL;
  b->left--;
  void *p = realloc(ptr, size);
  if (p && !ptr) b->live++;
  return p;
}

static void test_allocation_failures(void) {
  ti_prog p;
  CHECK(ti_parse(&p, "fusion @a {\n  %T0 = input f32[4, 8]\n  %T1 = permute %T0 {dims=[1, 0]}\n"
                     "  %T2 = reshape %T1 : f32[32]\n  %T3 = exp %T2\n  %T4 = sum %T0 {axes=[1]}\n"
                     "  %T5 = cat %T3, %T3 {dim=0}\n  %T6 = pad %T5, 0.0 {widths=[1, 1]}\n  output %T6, %T4\n}\n"));
  fu_arg a = ti_tensor(FU_DT_F32, 2, TI_SHAPE(4, 8), TI_VALS(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
                                                            18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31));
  int ok_at = -1;
  for (int limit = 0; limit < 200 && ok_at < 0; limit++) {
    budget b = {(size_t)limit, 0};
    fu_allocator al = {budget_alloc, &b};
    fu_arg *out = NULL;
    uint32_t n = 0;
    ti_diag_init(&p);
    fu_status st = fu_interp_run(p.f, &a, 1, NULL, al, &p.diag, &out, &n);
    if (st == FU_OK) {
      ok_at = limit;
      CHECK_EQ_INT(n, 2);
      CHECK_NEAR(fu_host_tensor_get_flat(&out[0].tensor, 2), (double)expf(8.0f), 0);
      fu_args_free(out, n, al);
    } else {
      CHECK(out == NULL);
      CHECK(p.cap.n_errors > 0);
    }
    CHECK_EQ_INT(b.live, 0);
  }
  CHECK(ok_at > 0);
  fu_arg_free(&a);
  ti_free(&p);
}

static void test_size_limit(void) {
  ti_prog p;
  CHECK(ti_parse(&p, "fusion @big {\n  %T0 = input f32[4]\n  %T1 = broadcast_in_dim %T0 {broadcast_dims=[1]} : "
                     "f32[1000000000000, 4]\n  %T2 = exp %T1\n  output %T2\n}\n"));
  fu_arg a = ti_tensor(FU_DT_F32, 1, TI_SHAPE(4), TI_VALS(1, 2, 3, 4));
  fu_interp_options o = {.max_tensor_bytes = 1 << 20};
  fu_arg *out;
  uint32_t n;
  CHECK_EQ_INT(fu_interp_run(p.f, &a, 1, &o, fu_default_allocator(), &p.diag, &out, &n), FU_ERR_RUNTIME);
  CHECK_HAS(p.cap.text, "more than the limit");
  fu_arg_free(&a);
  ti_free(&p);

  CHECK(ti_parse(&p, "fusion @ovf {\n  %T0 = full 1.0 : f64[4611686018427387904, 4]\n  %T1 = exp %T0\n  output %T1\n}\n"));
  CHECK_EQ_INT(ti_run(&p, NULL, 0), FU_ERR_RUNTIME);
  CHECK_HAS(p.cap.text, "overflows");
  ti_free(&p);
}

/* fu_interp_eval_int_lanes: the tensor path's integer semantics, lane by
 * lane (i32 wraps, comparisons give 0 / 1, where takes a bool), and its
 * refusals (a division by zero, a float, too many lanes). */
static void test_int_lanes(void) {
  int64_t a[4] = {2147483647, -7, 0, 5}, b[4] = {1, 2, 3, 5}, out[4];
  const int64_t *ab[2] = {a, b};
  fu_dtype i32x2[2] = {FU_DT_I32, FU_DT_I32};
  CHECK_EQ_INT(fu_interp_eval_int_lanes(FU_OP_ADD, i32x2, ab, 2, FU_DT_I32, 4, out), FU_OK);
  CHECK(out[0] == -2147483647 - 1 && out[1] == -5 && out[2] == 3 && out[3] == 10);
  CHECK_EQ_INT(fu_interp_eval_int_lanes(FU_OP_LT, i32x2, ab, 2, FU_DT_BOOL, 4, out), FU_OK);
  CHECK(out[0] == 0 && out[1] == 1 && out[2] == 1 && out[3] == 0);
  CHECK_EQ_INT(fu_interp_eval_int_lanes(FU_OP_DIV, i32x2, ab, 2, FU_DT_I32, 4, out), FU_OK);
  CHECK(out[1] == -3); /* truncates, as kernel-IR division does */
  int64_t c[4] = {1, 0, 1, 0};
  const int64_t *cab[3] = {c, a, b};
  fu_dtype wd[3] = {FU_DT_BOOL, FU_DT_I64, FU_DT_I64};
  CHECK_EQ_INT(fu_interp_eval_int_lanes(FU_OP_WHERE, wd, cab, 3, FU_DT_I64, 4, out), FU_OK);
  CHECK(out[0] == 2147483647 && out[1] == 2 && out[2] == 0 && out[3] == 5);
  const int64_t *ba[2] = {b, a};
  CHECK_EQ_INT(fu_interp_eval_int_lanes(FU_OP_DIV, i32x2, ba, 2, FU_DT_I32, 4, out), FU_ERR_RUNTIME);
  fu_dtype f32x2[2] = {FU_DT_F32, FU_DT_F32};
  CHECK_EQ_INT(fu_interp_eval_int_lanes(FU_OP_ADD, f32x2, ab, 2, FU_DT_F32, 4, out), FU_ERR_UNSUPPORTED);
  CHECK_EQ_INT(fu_interp_eval_int_lanes(FU_OP_ADD, i32x2, ab, 2, FU_DT_I32, FU_INTERP_MAX_LANES + 1, out),
               FU_ERR_UNSUPPORTED);
}

FU_TEST_MAIN(FU_TEST(test_unary_float_values), FU_TEST(test_unary_int_and_bool), FU_TEST(test_identities),
             FU_TEST(test_compute_dtypes), FU_TEST(test_int_semantics), FU_TEST(test_promotion), FU_TEST(test_casts),
             FU_TEST(test_ternary), FU_TEST(test_broadcast_and_strides), FU_TEST(test_reductions),
             FU_TEST(test_reduction_axes_exhaustive), FU_TEST(test_c_api_fusion), FU_TEST(test_allocation_failures),
             FU_TEST(test_size_limit), FU_TEST(test_int_lanes))
