/* fuser: checking a kernel's results against the CPU reference
 * interpreter's, element by element, with tolerances by dtype.  Host code
 * only: the GPU runtime and the kernel-IR interpreter's runs are checked
 * the same way (fuser-run --check). */
#ifndef FUSER_CHECK_H
#define FUSER_CHECK_H

#include <stdint.h>

#include "fuser/interp.h"
#include "fuser/status.h"

typedef struct fu_check_tolerance {
  double rtol, atol;
} fu_check_tolerance;

/* f64 1e-12/1e-12, f32 1e-5/1e-6, f16 2e-3/1e-3, bf16 1.6e-2/1e-2; exact
 * (0/0) for ints and bool. */
fu_check_tolerance fu_check_default_tolerance(fu_dtype dt);

typedef struct fu_check_result {
  int64_t n_elements;
  int64_t n_mismatch;
  int64_t n_poison;       /* elements still holding the 0xFF poison pattern */
  int64_t first_mismatch; /* flat row-major index, -1 when none */
  double got_first, want_first; /* the values there */
  double max_abs_err;     /* over elements where both are finite */
  double max_rel_err;     /* |got - want| / |want| where want != 0 */
  /* With a bound (fu_check_compare_bounded): */
  bool bounded;
  double max_bound_ratio; /* max |got - want| / bound over elements with bound > 0 */
  int64_t n_unscaled;     /* elements whose bound is NaN: compared by rtol/atol alone */
} fu_check_result;

/* Compares `got` (a kernel's result) with `want` (the interpreter's), element by
 * element in row-major order; same dtype and shape (else
 * FU_ERR_INVALID_ARG).  Floats fail when |got - want| > atol + rtol*|want|,
 * when infinities differ, and on NaN unless `want` is NaN there and `got`
 * is a NaN that is not the all-ones poison pattern.  Ints and bools must be
 * equal (a bool byte other than 0 or 1 fails). */
fu_status fu_check_compare(const fu_host_tensor *got, const fu_host_tensor *want, fu_check_tolerance tol,
                           fu_check_result *out);

/* The same where `want` comes from reductions: `bound` (NULL: none; else an
 * f64 tensor of the same shape, from fu_interp_run_bounded) widens each
 * float element's tolerance to
 *     |got - want| <= atol + rtol * |want| + bound
 * where bound = 8 * u * sqrt(n) * scale for a reduction over n terms
 * accumulated with unit roundoff u, scale the magnitude of its terms (sum
 * |x_i| for a sum), carried through the ops after it; NaN elements of the
 * bound count as unscaled and get no widening.  out->max_bound_ratio says
 * how much of the reduction bound the worst element used. */
fu_status fu_check_compare_bounded(const fu_host_tensor *got, const fu_host_tensor *want,
                                   const fu_host_tensor *bound, fu_check_tolerance tol, fu_check_result *out);

/* fu_check_compare_bounded on `threads` threads (0 or 1: one); the result
 * is the same for every count (counts add up, maxima are maxima, the first
 * mismatch is the first in row-major order). */
fu_status fu_check_compare_threads(const fu_host_tensor *got, const fu_host_tensor *want,
                                   const fu_host_tensor *bound, fu_check_tolerance tol, uint32_t threads,
                                   fu_check_result *out);

#endif
