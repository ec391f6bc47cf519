/* fuser tests: one lowered fusion run by the reference interpreter and by
 * the kernel IR interpreter on the same inputs, every output compared.
 * Shared by the lowering tests (test_lower.c, test_lower_transpose.c);
 * header-only, like harness.h. */
#ifndef FUSER_TEST_KERNEL_COMPARE_H
#define FUSER_TEST_KERNEL_COMPARE_H

#include <stdbool.h>

#include "fuser/check.h"
#include "fuser/interp.h"
#include "fuser/kir_interp.h"
#include "harness.h"

/* Makes inputs for f with `io`, runs both interpreters, and compares every
 * output: with `library`, as fuser-run --check judges it
 * (fu_check_compare_bounded: the dtype's default tolerance plus the
 * reference interpreter's error bound of the reductions upstream, from
 * fu_interp_run_bounded; bit for bit when rtol and atol are both 0);
 * otherwise with relative tolerance `rtol` and absolute tolerance `atol`
 * (both 0: bit for bit).  Each problem is a test failure naming `name`
 * (with `log`, the diagnostics captured so far); the kernel interpreter's
 * counts are added to `stats`.  True when every output agrees. */
static inline bool compare_with_kernels_judged(const char *name, fu_fusion *f, const fu_input_options *io, double rtol,
                                               double atol, bool library, fu_diag_engine *diag, const char *log,
                                               fu_kir_stats *stats) {
  fu_allocator al = fu_default_allocator();
  fu_arg *in = NULL, *want = NULL, *bound = NULL, *got = NULL;
  uint32_t n_in = 0, n_want = 0, n_got = 0;
  if (fu_interp_make_inputs(f, io, al, diag, &in, &n_in) != FU_OK) {
    fu_test_fail(__FILE__, __LINE__, "%s: no inputs:\n%s", name, log);
    return false;
  }
  bool ok = true, exact = rtol == 0 && atol == 0;
  fu_status s1 = fu_interp_run_bounded(f, in, n_in, NULL, al, diag, &want, library ? &bound : NULL, &n_want);
  fu_status s2 = fu_kir_run_fusion(f, in, n_in, al, diag, &got, &n_got, stats);
  if (s1 != FU_OK || s2 != FU_OK || n_want != n_got) {
    fu_test_fail(__FILE__, __LINE__, "%s: run failed (interp %s, kernels %s):\n%s", name, fu_status_name(s1),
                 fu_status_name(s2), log);
    ok = false;
  }
  for (uint32_t i = 0; ok && i < n_want; i++) {
    fu_status st = FU_ERR_INVALID_ARG;
    fu_check_result cr;
    fu_compare_result hr;
    memset(&cr, 0, sizeof cr);
    if (want[i].kind == FU_ARG_TENSOR && got[i].kind == FU_ARG_TENSOR && library) {
      fu_check_tolerance tol = {0, 0};
      if (!exact) tol = fu_check_default_tolerance(want[i].tensor.dtype);
      const fu_host_tensor *b = !exact && bound[i].kind == FU_ARG_TENSOR ? &bound[i].tensor : NULL;
      st = fu_check_compare_bounded(&got[i].tensor, &want[i].tensor, b, tol, &cr);
    } else if (want[i].kind == FU_ARG_TENSOR && got[i].kind == FU_ARG_TENSOR) {
      st = fu_host_tensor_compare(&got[i].tensor, &want[i].tensor, rtol, atol, &hr);
      cr.n_mismatch = hr.n_mismatch;
      cr.first_mismatch = hr.first_mismatch;
      cr.max_abs_err = hr.max_abs_err;
    }
    if (st != FU_OK) {
      fu_test_fail(__FILE__, __LINE__, "%s: output %u cannot be compared", name, i);
      ok = false;
      continue;
    }
    fu_test_checks++;
    if (cr.n_mismatch) {
      fu_test_fail(__FILE__, __LINE__, "%s: output %u: %lld mismatches, first at %lld (max abs err %g, %g of the bound)",
                   name, i, (long long)cr.n_mismatch, (long long)cr.first_mismatch, cr.max_abs_err, cr.max_bound_ratio);
      ok = false;
    }
  }
  fu_args_free(want, n_want, al);
  fu_args_free(bound, n_want, al);
  fu_args_free(got, n_got, al);
  fu_args_free(in, n_in, al);
  return ok;
}

/* With relative tolerance `rtol` and absolute tolerance `atol`. */
static inline bool compare_with_kernels_atol(const char *name, fu_fusion *f, const fu_input_options *io, double rtol,
                                             double atol, fu_diag_engine *diag, const char *log, fu_kir_stats *stats) {
  return compare_with_kernels_judged(name, f, io, rtol, atol, false, diag, log, stats);
}

/* As fuser-run --check judges (`exact`: bit for bit, for max, min, ints). */
static inline bool compare_with_kernels_checked(const char *name, fu_fusion *f, const fu_input_options *io, bool exact,
                                                fu_diag_engine *diag, const char *log, fu_kir_stats *stats) {
  return compare_with_kernels_judged(name, f, io, exact ? 0 : 1, 0, true, diag, log, stats);
}

/* The same with no absolute tolerance. */
static inline bool compare_with_kernels(const char *name, fu_fusion *f, const fu_input_options *io, double rtol,
                                        fu_diag_engine *diag, const char *log, fu_kir_stats *stats) {
  return compare_with_kernels_atol(name, f, io, rtol, 0.0, diag, log, stats);
}

#endif
