/* Unit tests for the reference interpreter's error bounds
 * (lib/interp/error_scale.c) and the check that uses them
 * (fu_check_compare_bounded): the bound of a sum and what carries it,
 * results just inside and just outside it, a cancelling sum that a relative
 * tolerance rejects although the kernel is right, and wrong kernels (an
 * element skipped, one element off) that the bound still rejects; the
 * bound a math library op starts and an ill-conditioned op after it. */
#include <math.h>
#include <stdlib.h>

#include "fuser/check.h"
#include "test_interp_util.h"

/* 8 * u(f32) * sqrt(n): the bound per unit of scale of an f32 reduction
 * over n terms. */
static double unit_bound(double n) { return 8.0 * 0x1p-24 * sqrt(n); }

/* Parse `text`, run it bounded on `in`; the outputs in p->out, the bounds
 * in *bounds. */
static bool run_bounded(ti_prog *p, const char *text, fu_arg *in, uint32_t n_in, fu_arg **bounds) {
  *bounds = NULL;
  if (!ti_parse(p, text)) {
    fu_test_fail(__FILE__, __LINE__, "parse failed: %s", p->cap.text);
    return false;
  }
  fu_status st = fu_interp_run_bounded(p->f, in, n_in, NULL, fu_default_allocator(), &p->diag, &p->out, bounds,
                                       &p->n_out);
  if (st != FU_OK) fu_test_fail(__FILE__, __LINE__, "run failed: %s", p->cap.text);
  return st == FU_OK;
}

/* Frees what a case made. */
static void done(ti_prog *p, fu_arg *bounds, fu_arg *in) {
  fu_args_free(bounds, p->n_out, fu_default_allocator());
  fu_arg_free(in);
  ti_free(p);
}

/* Rows [1, -2, 3, -4] (sum |x| 10) and [0.5 x 4] (2). */
static fu_arg rows_2x4(void) {
  return ti_tensor(FU_DT_F32, 2, TI_SHAPE(2, 4), TI_VALS(1, -2, 3, -4, 0.5, 0.5, 0.5, 0.5));
}

/* The bound of a row sum is 8 u sqrt(n) sum|x|; an epilogue scales it with
 * the derivative; max and outputs with no reduction upstream have none. */
static void test_sum_bound(void) {
  ti_prog p;
  fu_arg in = rows_2x4();
  fu_arg *b = NULL;
  if (run_bounded(&p,
                  "fusion @f {\n  %T0 = input f32[2, 4]\n  %T1 = sum %T0 {axes=[1]}\n  %T2 = mul %T1, 2.0\n"
                  "  %T3 = max %T0 {axes=[1]}\n  %T4 = add %T0, 1.0\n  %T5 = broadcast_in_dim %T1 "
                  "{broadcast_dims=[0]} : f32[2, 4]\n  %T6 = sub %T0, %T5\n  output %T1, %T2, %T3, %T4, %T6\n}\n",
                  &in, 1, &b)) {
    CHECK_EQ_INT(p.n_out, 5);
    CHECK_EQ_INT(b[0].kind, FU_ARG_TENSOR);
    CHECK_EQ_INT(b[0].tensor.dtype, FU_DT_F64);
    CHECK_NEAR(fu_host_tensor_get_flat(&b[0].tensor, 0), unit_bound(4) * 10, 1e-12);
    CHECK_NEAR(fu_host_tensor_get_flat(&b[0].tensor, 1), unit_bound(4) * 2, 1e-12);
    CHECK_NEAR(fu_host_tensor_get_flat(&b[1].tensor, 0), 2 * unit_bound(4) * 10, 1e-12);
    CHECK_EQ_INT(b[2].kind, FU_ARG_NONE); /* max is exact */
    CHECK_EQ_INT(b[3].kind, FU_ARG_NONE); /* no reduction upstream */
    /* through a broadcast and a subtraction: each element gets its row's */
    CHECK_EQ_INT(b[4].kind, FU_ARG_TENSOR);
    CHECK_NEAR(fu_host_tensor_get_flat(&b[4].tensor, 3), unit_bound(4) * 10, 1e-12);
    CHECK_NEAR(fu_host_tensor_get_flat(&b[4].tensor, 5), unit_bound(4) * 2, 1e-12);
  }
  done(&p, b, &in);
}

/* A result moved by 0.9 of the bound passes, by 1.1 fails; the check says
 * how much of the bound was used.  The same move fails without the bound. */
static void test_inside_outside(void) {
  ti_prog p;
  fu_arg in = ti_tensor(FU_DT_F32, 2, TI_SHAPE(1, 4), TI_VALS(1, -2, 3, -4));
  fu_arg *b = NULL;
  if (run_bounded(&p, "fusion @f {\n  %T0 = input f32[1, 4]\n  %T1 = sum %T0 {axes=[1]}\n  output %T1\n}\n", &in, 1,
                  &b)) {
    double want = fu_host_tensor_get_flat(&p.out[0].tensor, 0), bound = fu_host_tensor_get_flat(&b[0].tensor, 0);
    CHECK_NEAR(want, -2, 0);
    fu_check_tolerance none = {0, 0};
    double moves[2] = {0.9, 1.1};
    for (int i = 0; i < 2; i++) {
      fu_host_tensor got;
      CHECK_EQ_INT(fu_host_tensor_copy_contiguous(&p.out[0].tensor, fu_default_allocator(), &got), FU_OK);
      fu_host_tensor_set_flat(&got, 0, want + moves[i] * bound);
      fu_check_result r;
      CHECK_EQ_INT(fu_check_compare_bounded(&got, &p.out[0].tensor, &b[0].tensor, none, &r), FU_OK);
      CHECK(r.bounded);
      CHECK_EQ_INT(r.n_mismatch, i == 0 ? 0 : 1);
      CHECK_NEAR(r.max_bound_ratio, moves[i], 0.01);
      CHECK_EQ_INT(fu_check_compare(&got, &p.out[0].tensor, none, &r), FU_OK);
      CHECK_EQ_INT(r.n_mismatch, 1);
      CHECK(!r.bounded);
      fu_host_tensor_free(&got);
    }
    /* a bound of another shape is refused */
    fu_host_tensor other;
    CHECK_EQ_INT(fu_host_tensor_alloc(&other, fu_default_allocator(), FU_DT_F64, 1, TI_SHAPE(2)), FU_OK);
    fu_check_result r;
    CHECK_EQ_INT(fu_check_compare_bounded(&p.out[0].tensor, &p.out[0].tensor, &other, none, &r), FU_ERR_INVALID_ARG);
    fu_host_tensor_free(&other);
  }
  done(&p, b, &in);
}

enum { ROWS = 4, HALF = 2000, COLS = 2 * HALF, THREADS = 128 };

/* A row sum as a kernel computes it: in f32, each of THREADS threads
 * serially over a strided slice, then a tree.  `skip` drops one element
 * (column, or -1), as a kernel with a wrong loop bound would. */
static float kernel_row_sum(const double *row, int skip) {
  float part[THREADS];
  for (int t = 0; t < THREADS; t++) {
    part[t] = 0;
    for (int j = t; j < COLS; j += THREADS)
      if (j != skip) part[t] += (float)row[j];
  }
  for (int w = THREADS / 2; w > 0; w /= 2)
    for (int t = 0; t < w; t++) part[t] += part[t + w];
  return part[0];
}

/* Rows of x and -x + 1e-4 noise: the sums cancel to ~1e-4 sqrt(n) while
 * the terms are ~1, so the f32 kernel is off by far more than 1e-5 of its
 * result, yet well inside its bound.  A skipped element, or one row off by
 * 1e-3 of the terms' magnitude, fails. */
static void test_cancellation_and_wrong_kernels(void) {
  double *v = malloc(sizeof(double) * ROWS * COLS);
  fu_rng rng;
  fu_rng_seed(&rng, 7);
  for (int r = 0; r < ROWS; r++)
    for (int j = 0; j < HALF; j++) {
      float x = (float)fu_rng_normal(&rng);
      v[r * COLS + j] = x;
      v[r * COLS + HALF + j] = (float)(-x + 1e-4 * fu_rng_normal(&rng));
    }
  fu_arg in = ti_tensor(FU_DT_F32, 2, TI_SHAPE(ROWS, COLS), v);
  ti_prog p;
  fu_arg *b = NULL;
  if (run_bounded(&p, "fusion @f {\n  %T0 = input f32[4, 4000]\n  %T1 = sum %T0 {axes=[1]}\n  output %T1\n}\n", &in, 1,
                  &b)) {
    const fu_host_tensor *want = &p.out[0].tensor;
    fu_check_tolerance tol = fu_check_default_tolerance(FU_DT_F32);
    for (int c = 0; c < 3; c++) {
      fu_host_tensor got;
      CHECK_EQ_INT(fu_host_tensor_copy_contiguous(want, fu_default_allocator(), &got), FU_OK);
      double scale = 0;
      for (int j = 0; j < COLS; j++) scale += fabs(v[2 * COLS + j]);
      for (int r = 0; r < ROWS; r++) {
        double s = kernel_row_sum(&v[r * COLS], c == 1 && r == 2 ? 17 : -1);
        if (c == 2 && r == 2) s += 1e-3 * scale;
        fu_host_tensor_set_flat(&got, r, s);
      }
      fu_check_result plain, bounded;
      CHECK_EQ_INT(fu_check_compare(&got, want, tol, &plain), FU_OK);
      CHECK_EQ_INT(fu_check_compare_bounded(&got, want, &b[0].tensor, tol, &bounded), FU_OK);
      if (c == 0) {
        CHECK(plain.n_mismatch > 0); /* a relative tolerance rejects the right kernel */
        CHECK(plain.max_rel_err > 1e-4);
        CHECK_EQ_INT(bounded.n_mismatch, 0);
        CHECK(bounded.max_bound_ratio > 0 && bounded.max_bound_ratio < 0.5);
      } else {
        CHECK_EQ_INT(bounded.n_mismatch, 1); /* the wrong row fails */
        CHECK_EQ_INT(bounded.first_mismatch, 2);
        CHECK(bounded.max_bound_ratio > 1);
      }
      fu_host_tensor_free(&got);
    }
  }
  done(&p, b, &in);
  free(v);
}

/* var_mean's two results get bounds; a comparison of a reduced value can
 * flip, so what is computed from it is unscaled (NaN bound), which the
 * check counts and judges by the dtype tolerance alone. */
static void test_variance_and_unscaled(void) {
  ti_prog p;
  fu_arg in = ti_tensor(FU_DT_F32, 2, TI_SHAPE(2, 4), TI_VALS(1, 2, 3, 4, 10, 10, 10, 11));
  fu_arg *b = NULL;
  if (run_bounded(&p,
                  "fusion @f {\n  %T0 = input f32[2, 4]\n  %T1, %T2 = var_mean %T0 {axes=[1], correction=1}\n"
                  "  %T3 = gt %T2, 5.0\n  %T4 = cast %T3 : f32[2]\n  %T5 = sum %T4 {axes=[0]}\n"
                  "  output %T1, %T2, %T4, %T5\n}\n",
                  &in, 1, &b)) {
    CHECK_EQ_INT(p.n_out, 4);
    for (int i = 0; i < 2; i++) {
      CHECK_EQ_INT(b[i].kind, FU_ARG_TENSOR);
      for (int64_t e = 0; e < 2; e++) {
        double x = fu_host_tensor_get_flat(&b[i].tensor, e);
        CHECK(isfinite(x) && x > 0 && x < 1e-4);
      }
    }
    /* mean bound: 8 u sqrt(4) sqrt(4 * sum x^2) / 4 for row 0 (sum x^2 = 30) */
    CHECK_NEAR(fu_host_tensor_get_flat(&b[1].tensor, 0), unit_bound(4) * sqrt(4 * 30.0) / 4, 1e-12);
    CHECK_EQ_INT(b[2].kind, FU_ARG_TENSOR);
    CHECK(isnan(fu_host_tensor_get_flat(&b[2].tensor, 1)));
    CHECK(isnan(fu_host_tensor_get_flat(&b[3].tensor, 0))); /* lost stays lost through a reduction */
    fu_check_result r;
    CHECK_EQ_INT(fu_check_compare_bounded(&p.out[2].tensor, &p.out[2].tensor, &b[2].tensor,
                                          fu_check_default_tolerance(FU_DT_F32), &r),
                 FU_OK);
    CHECK_EQ_INT(r.n_unscaled, 2);
    CHECK_EQ_INT(r.n_mismatch, 0);
  }
  done(&p, b, &in);
}

/* Data-movement ops run on the bounds: cat with an operand that has none
 * (its part is 0), pad (the padding's bound is 0, not the pad value), and
 * a permute of a keepdim result. */
static void test_shape_ops(void) {
  ti_prog p;
  fu_arg in = rows_2x4();
  fu_arg *b = NULL;
  if (run_bounded(&p,
                  "fusion @f {\n  %T0 = input f32[2, 4]\n  %T1 = sum %T0 {axes=[1]}\n  %T2 = max %T0 {axes=[1]}\n"
                  "  %T3 = cat %T2, %T1 {dim=0} : f32[4]\n  %T4 = pad %T1, 7.0 {widths=[1, 1]} : f32[4]\n"
                  "  %T5 = sum %T0 {axes=[1], keepdim=true}\n  %T6 = permute %T5 {dims=[1, 0]} : f32[1, 2]\n"
                  "  output %T3, %T4, %T6\n}\n",
                  &in, 1, &b)) {
    double r0 = unit_bound(4) * 10, r1 = unit_bound(4) * 2;
    const double cat_want[4] = {0, 0, r0, r1}, pad_want[4] = {0, r0, r1, 0};
    for (int64_t e = 0; e < 4; e++) {
      CHECK_NEAR(fu_host_tensor_get_flat(&b[0].tensor, e), cat_want[e], 1e-12);
      CHECK_NEAR(fu_host_tensor_get_flat(&b[1].tensor, e), pad_want[e], 1e-12);
    }
    CHECK_NEAR(fu_host_tensor_get_flat(&p.out[1].tensor, 0), 7.0, 0);
    CHECK_NEAR(fu_host_tensor_get_flat(&b[2].tensor, 1), r1, 1e-12);
  }
  done(&p, b, &in);
}

/* A math library op starts a bound of its last bits, which an op after it
 * that amplifies them carries: 1 / log2(erf(x)) for x = 3 cancels erf's
 * 0.99997791 against 1 (condition number ~4.5e4), so erf one ulp off, as
 * a kernel's math library may be, moves the result by ~0.3%, which rtol
 * rejects and the bound accepts.  A result 10% off still fails (at x = 3
 * the bound is 4.3%: 8 ulps of erf through that cancellation), and exact
 * ops (add) start none. */
static void test_math_library_bound(void) {
  ti_prog p;
  fu_arg in = ti_tensor(FU_DT_F32, 1, TI_SHAPE(3), TI_VALS(3, 2, 0.5));
  fu_arg *b = NULL;
  if (run_bounded(&p,
                  "fusion @f {\n  %T0 = input f32[3]\n  %T1 = erf %T0 : f32[3]\n  %T2 = log2 %T1 : f32[3]\n"
                  "  %T3 = pow %T2, f32(-1.0) : f32[3]\n  %T4 = add %T0, 1.0 : f32[3]\n  output %T3, %T1, %T4\n}\n",
                  &in, 1, &b)) {
    CHECK_EQ_INT(b[2].kind, FU_ARG_NONE); /* add is exact */
    CHECK_EQ_INT(b[1].kind, FU_ARG_TENSOR);
    CHECK_NEAR(fu_host_tensor_get_flat(&b[1].tensor, 0), 8 * 0x1p-23 * erf(3.0), 1e-12);
    fu_check_tolerance f32_tol = {1e-5, 1e-6};
    const fu_host_tensor *want = &p.out[0].tensor;
    for (int wrong = 0; wrong < 2; wrong++) {
      fu_host_tensor got;
      CHECK_EQ_INT(fu_host_tensor_copy_contiguous(want, fu_default_allocator(), &got), FU_OK);
      for (int64_t e = 0; e < 3; e++) {
        float x = (float)fu_host_tensor_get_flat(&in.tensor, e);
        float r = wrong ? (float)fu_host_tensor_get_flat(want, e) * 1.1f
                        : powf(log2f(nextafterf(erff(x), 0.0f)), -1.0f); /* erf one ulp low */
        fu_host_tensor_set_flat(&got, e, r);
      }
      fu_check_result r;
      CHECK_EQ_INT(fu_check_compare_bounded(&got, want, &b[0].tensor, f32_tol, &r), FU_OK);
      CHECK_EQ_INT(r.n_mismatch, wrong ? 3 : 0);
      if (!wrong) {
        CHECK(r.max_rel_err > 1e-3); /* what rtol alone rejects */
        CHECK_EQ_INT(fu_check_compare(&got, want, f32_tol, &r), FU_OK);
        CHECK(r.n_mismatch > 0);
      }
      fu_host_tensor_free(&got);
    }
  }
  done(&p, b, &in);
}

FU_TEST_MAIN(FU_TEST(test_sum_bound), FU_TEST(test_math_library_bound), FU_TEST(test_shape_ops), FU_TEST(test_inside_outside), FU_TEST(test_cancellation_and_wrong_kernels),
             FU_TEST(test_variance_and_unscaled))
