/* fuser tests: one lowered fusion run by the reference interpreter and by
 * the kernel IR interpreter on the same inputs, every output compared.
 * Shared by the lowering tests (test_lower.c, test_lower_transpose.c);
 * header-only, like harness.h. */
#ifndef FUSER_TEST_KERNEL_COMPARE_H
#define FUSER_TEST_KERNEL_COMPARE_H

#include <stdbool.h>

#include "fuser/interp.h"
#include "fuser/kir_interp.h"
#include "harness.h"

/* Makes inputs for f with `io`, runs both interpreters, and compares every
 * output with relative tolerance `rtol` and absolute tolerance `atol` (both
 * 0: bit for bit; a reduction's tolerance grows with its extent).  Each problem is
 * a test failure naming `name` (with `log`, the diagnostics captured so
 * far); the kernel interpreter's counts are added to `stats`.  True when
 * every output agrees. */
static inline bool compare_with_kernels_atol(const char *name, fu_fusion *f, const fu_input_options *io, double rtol,
                                             double atol, fu_diag_engine *diag, const char *log, fu_kir_stats *stats) {
  fu_arg *in = NULL;
  uint32_t n_in = 0;
  if (fu_interp_make_inputs(f, io, fu_default_allocator(), diag, &in, &n_in) != FU_OK) {
    fu_test_fail(__FILE__, __LINE__, "%s: no inputs:\n%s", name, log);
    return false;
  }
  bool ok = true;
  fu_arg *want = NULL, *got = NULL;
  uint32_t n_want = 0, n_got = 0;
  fu_status s1 = fu_interp_run(f, in, n_in, NULL, fu_default_allocator(), diag, &want, &n_want);
  fu_status s2 = fu_kir_run_fusion(f, in, n_in, fu_default_allocator(), diag, &got, &n_got, stats);
  if (s1 != FU_OK || s2 != FU_OK || n_want != n_got) {
    fu_test_fail(__FILE__, __LINE__, "%s: run failed (interp %s, kernels %s):\n%s", name, fu_status_name(s1),
                 fu_status_name(s2), log);
    ok = false;
  } else {
    for (uint32_t i = 0; i < n_want; i++) {
      fu_compare_result cr;
      if (want[i].kind != FU_ARG_TENSOR || got[i].kind != FU_ARG_TENSOR ||
          fu_host_tensor_compare(&got[i].tensor, &want[i].tensor, rtol, atol, &cr) != FU_OK) {
        fu_test_fail(__FILE__, __LINE__, "%s: output %u cannot be compared", name, i);
        ok = false;
        continue;
      }
      fu_test_checks++;
      if (cr.n_mismatch) {
        fu_test_fail(__FILE__, __LINE__, "%s: output %u: %lld mismatches, first at %lld (max abs err %g)", name, i,
                     (long long)cr.n_mismatch, (long long)cr.first_mismatch, cr.max_abs_err);
        ok = false;
      }
    }
  }
  if (want) fu_args_free(want, n_want, fu_default_allocator());
  if (got) fu_args_free(got, n_got, fu_default_allocator());
  fu_args_free(in, n_in, fu_default_allocator());
  return ok;
}

/* The same with no absolute tolerance. */
static inline bool compare_with_kernels(const char *name, fu_fusion *f, const fu_input_options *io, double rtol,
                                        fu_diag_engine *diag, const char *log, fu_kir_stats *stats) {
  return compare_with_kernels_atol(name, f, io, rtol, 0.0, diag, log, stats);
}

#endif
