/* fuser: online-softmax states for the persistent lowering
 * (passes/lower/persistent.c, reduction.c).
 *
 * A sum of exp(a - max(a)) folded with its max (`online=true`,
 * lib/analysis/online_softmax.c) keeps per thread the state (m, s): m the
 * largest element so far, NaN-propagating like the max reduction, and s
 * the sum of exp(x - m) over the elements so far.  A vector of elements
 * raises m to m' once and rescales s by exp(m - m'); two states combine
 * as (max(ma, mc), the larger max's s plus the other's times exp(-|ma -
 * mc|)), the same bits whichever comes first.  -inf is handled by subtracting 0 instead of an
 * m' of -inf (so -inf elements add 0 and an all -inf state stays (-inf,
 * 0)); at the end a max that is not finite gives the sum the NaN that the
 * two-pass definition gives (exp(-inf - -inf), exp(inf - inf), NaN).
 *
 * Every exponential here has a non-positive argument, and is computed as
 * exp2(d log2 e) (f32): the product's rounding moves exp by |d| u
 * relatively, so each term is off by at most |d| e^d u <= u / e of the
 * largest term, 1, and the sum by its terms' mean |d| (weighted by e^d,
 * at most about ln n) times u, far inside the reduction's error bound
 * (docs/ir.md, "The error bound of --check").  f64 states use exp.
 * Every helper returns false when the builder runs out of memory. */
#ifndef FUSER_PASSES_LOWER_REDUCTION_ONLINE_H
#define FUSER_PASSES_LOWER_REDUCTION_ONLINE_H

#include "fuser/kir.h"

enum { FU_ONLINE_PARTS = 2 }; /* max, sum of exp(x - max) */

/* Is op the lowering's stand-in for a folded (max, sum) pair: a max
 * reduction with two results, the max's and the sum's? */
bool fu_online_op(const fu_op *op);
/* The initial state (-inf, 0) of type t. */
bool fu_online_identity(fu_kbuilder *b, fu_dtype t, fu_kval **st);
/* st folded with the n elements x[0..n) (of st's dtype). */
bool fu_online_update(fu_kbuilder *b, fu_kval *const *st, fu_kval *const *x, uint32_t n, fu_kval **out);
/* The pairwise combine of states a and c. */
bool fu_online_combine(fu_kbuilder *b, fu_kval *const *a, fu_kval *const *c, fu_kval **out);
/* The max and the sum from a row's final state (a row has elements: the
 * max of none is an error of the fusion's definition). */
bool fu_online_results(fu_kbuilder *b, fu_kval *const *st, fu_kval **res);

#endif
