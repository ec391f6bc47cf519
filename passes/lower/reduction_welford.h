/* fuser: Welford states for the reduction lowering (passes/lower/reduction.c).
 *
 * A var/var_mean accumulates (mean, m2, count) per thread, count kept in
 * the accumulator's float dtype; two states combine pairwise with Chan's
 * formula (a zero total count gives weight 0, guarded with `where`), so
 * the same shuffles and shared-memory slots that carry one accumulator
 * for sum/prod/max/min carry three for a Welford op.  Every helper returns
 * false when the builder runs out of memory. */
#ifndef FUSER_PASSES_LOWER_REDUCTION_WELFORD_H
#define FUSER_PASSES_LOWER_REDUCTION_WELFORD_H

#include "fuser/kir.h"

enum { FU_WELFORD_PARTS = 3 }; /* mean, m2, count */

/* Is op a Welford reduction (var, var_mean)? */
bool fu_welford_op(const fu_op *op);
/* The initial state (0, 0, 0) of type t. */
bool fu_welford_identity(fu_kbuilder *b, fu_dtype t, fu_kval **st);
/* st folded with one element x (of st's dtype).  `carried`: the count is
 * a run-time value (not known at compile time), whose reciprocal is then
 * the hardware's approximation (reduction_welford.c, inverse). */
bool fu_welford_update(fu_kbuilder *b, fu_kval *const *st, fu_kval *x, fu_kval **out, bool carried);
/* The pairwise combine of states a and b (Chan et al.); `carried` as for
 * fu_welford_update.  It is fu_welford_weights then
 * fu_welford_combine_weighted: the weights need the counts only, so a
 * butterfly can compute every step's weights before any mean moves, and
 * the data's dependent chain has no reciprocal on it. */
bool fu_welford_combine(fu_kbuilder *b, fu_kval *const *a, fu_kval *const *c, fu_kval **out, bool carried);
/* The combined count *n = na + nc and the weights *wa = na / n, *wc = nc / n
 * (0 for an empty pair). */
bool fu_welford_weights(fu_kbuilder *b, fu_kval *na, fu_kval *nc, bool carried, fu_kval **n, fu_kval **wa,
                        fu_kval **wc);
/* The combine of a (count a[2]) and c with their weights; c[2] is unused,
 * out[2] = n. */
bool fu_welford_combine_weighted(fu_kbuilder *b, fu_kval *const *a, fu_kval *const *c, fu_kval *n, fu_kval *wa,
                                 fu_kval *wc, fu_kval **out);
/* The results of `op` from its final state: results[0] the variance
 * m2 / max(count - correction, 0), results[1] (var_mean) the mean, NaN
 * for an empty reduction as the reference interpreter gives. */
bool fu_welford_results(fu_kbuilder *b, const fu_op *op, fu_kval *const *st, fu_kval **res);

#endif
