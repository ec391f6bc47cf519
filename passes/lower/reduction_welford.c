/* fuser: Welford updates and combines in kernel IR (var, var_mean).
 *
 * Per element:  n' = n + 1;  d = x - mean;  mean' = mean + d / n';
 *               m2' = m2 + d * (x - mean').
 * Pairwise:     n = na + nb;  delta = mb - ma;  w = nb / (n == 0 ? 1 : n);
 *               mean = ma + delta * w;  m2 = qa + qb + delta * (delta * w) * na.
 * Both are stable for inputs with a large mean: no sum of squares is ever
 * formed.  An infinite mean would turn both into NaN (inf - inf), where
 * the interpreter's mean, sum / n, stays infinite: while a mean is not
 * finite the mean is updated as the plain weighted mean instead
 * (mean + x / n', ma * na / n + mb * nb / n), which keeps an infinity,
 * and gives NaN for infinities of both signs; m2 turns NaN, as the
 * variance of anything with an infinity is.  The count is a float of the state's dtype (exact to 2^24 in
 * f32), so the combine needs no integer-to-float conversion per step. */
#include "reduction_welford.h"

bool fu_welford_op(const fu_op *op) { return op->kind == FU_OP_VAR || op->kind == FU_OP_VAR_MEAN; }

bool fu_welford_identity(fu_kbuilder *b, fu_dtype t, fu_kval **st) {
  for (uint32_t i = 0; i < FU_WELFORD_PARTS; i++)
    if (!(st[i] = fu_kb_const_f(b, NULL, t, 0.0))) return false;
  return true;
}

/* a op c in st's dtype; NULL propagates. */
static fu_kval *bin(fu_kbuilder *b, fu_op_kind k, fu_kval *a, fu_kval *c) {
  return a && c ? fu_kb_binary(b, NULL, k, a->dtype, a, c) : NULL;
}

/* where(finite, a, c) with finite = isfinite(p) [&& isfinite(q)]. */
static fu_kval *if_finite(fu_kbuilder *b, fu_kval *p, fu_kval *q, fu_kval *a, fu_kval *c) {
  if (!p || !a || !c) return NULL;
  fu_kval *fp = fu_kb_math(b, NULL, FU_OP_ISFINITE, FU_DT_BOOL, &p, 1), *fq = NULL;
  if (q) fq = fu_kb_math(b, NULL, FU_OP_ISFINITE, FU_DT_BOOL, &q, 1);
  fu_kval *both = fp && fq ? fu_kb_binary(b, NULL, FU_OP_LOGICAL_AND, FU_DT_BOOL, fp, fq) : fp;
  fu_kval *args[3] = {both, a, c};
  return both && (!q || fq) ? fu_kb_math(b, NULL, FU_OP_WHERE, a->dtype, args, 3) : NULL;
}

/* 1 / n for a count n: a division, which folds away where n is known at
 * compile time; where it is carried (`carried`), the `reciprocal` op, which
 * the backends give the hardware's rcp.approx.f32 (within 1 ulp, no slow
 * path; IEEE again under --disable=fast_paths).  A carried count's
 * reciprocal sits on the dependent chain of every shuffle level of a
 * combine: the IEEE one is a subroutine of a dozen instructions there. */
static fu_kval *inverse(fu_kbuilder *b, fu_kval *one, fu_kval *n, bool carried) {
  if (!carried) return bin(b, FU_OP_DIV, one, n);
  return n && one ? fu_kb_unary(b, NULL, FU_OP_RECIPROCAL, n->dtype, n) : NULL;
}

bool fu_welford_update(fu_kbuilder *b, fu_kval *const *st, fu_kval *x, fu_kval **out, bool carried) {
  fu_kval *one = fu_kb_const_f(b, NULL, x->dtype, 1.0);
  fu_kval *n = bin(b, FU_OP_ADD, st[2], one);
  fu_kval *d = bin(b, FU_OP_SUB, x, st[0]);
  /* d * (1 / n'): with a count known at compile time the reciprocal
   * folds to a constant, and no division is left in the loop */
  fu_kval *rn = inverse(b, one, n, carried);
  fu_kval *mean = if_finite(b, st[0], NULL, bin(b, FU_OP_ADD, st[0], bin(b, FU_OP_MUL, d, rn)),
                            bin(b, FU_OP_ADD, st[0], bin(b, FU_OP_MUL, x, rn)));
  fu_kval *m2 = bin(b, FU_OP_ADD, st[1], bin(b, FU_OP_MUL, d, bin(b, FU_OP_SUB, x, mean)));
  out[0] = mean;
  out[1] = m2;
  out[2] = n;
  return mean && m2 && n;
}

bool fu_welford_weights(fu_kbuilder *b, fu_kval *na, fu_kval *nc, bool carried, fu_kval **n, fu_kval **wa,
                        fu_kval **wc) {
  fu_dtype t = na->dtype;
  fu_kval *zero = fu_kb_const_f(b, NULL, t, 0.0), *one = fu_kb_const_f(b, NULL, t, 1.0);
  *n = bin(b, FU_OP_ADD, na, nc);
  fu_kval *empty = *n && zero ? fu_kb_binary(b, NULL, FU_OP_EQ, FU_DT_BOOL, *n, zero) : NULL;
  fu_kval *args[3] = {empty, one, *n};
  fu_kval *safe = empty && one ? fu_kb_math(b, NULL, FU_OP_WHERE, t, args, 3) : NULL;
  /* one division per combine: both weights from 1 / n (within an ulp of
   * n_c / n and n_a / n); a combine sits on the critical path of every
   * shuffle and shared-memory level, and a division is a dozen dependent
   * instructions there */
  fu_kval *rn = inverse(b, one, safe, carried);
  *wc = bin(b, FU_OP_MUL, nc, rn);
  *wa = bin(b, FU_OP_MUL, na, rn);
  return *n && *wa && *wc;
}

bool fu_welford_combine(fu_kbuilder *b, fu_kval *const *a, fu_kval *const *c, fu_kval **out, bool carried) {
  fu_kval *n = NULL, *wa = NULL, *wc = NULL;
  return fu_welford_weights(b, a[2], c[2], carried, &n, &wa, &wc) &&
         fu_welford_combine_weighted(b, a, c, n, wa, wc, out);
}

bool fu_welford_combine_weighted(fu_kbuilder *b, fu_kval *const *a, fu_kval *const *c, fu_kval *n, fu_kval *wa,
                                 fu_kval *wc, fu_kval **out) {
  fu_kval *delta = bin(b, FU_OP_SUB, c[0], a[0]);
  fu_kval *dw = bin(b, FU_OP_MUL, delta, wc);
  fu_kval *plain = bin(b, FU_OP_ADD, bin(b, FU_OP_MUL, a[0], wa), bin(b, FU_OP_MUL, c[0], wc));
  fu_kval *mean = if_finite(b, a[0], c[0], bin(b, FU_OP_ADD, a[0], dw), plain);
  fu_kval *m2 = bin(b, FU_OP_ADD, bin(b, FU_OP_ADD, a[1], c[1]), bin(b, FU_OP_MUL, bin(b, FU_OP_MUL, delta, dw), a[2]));
  out[0] = mean;
  out[1] = m2;
  out[2] = n;
  return mean && m2 && n;
}

bool fu_welford_results(fu_kbuilder *b, const fu_op *op, fu_kval *const *st, fu_kval **res) {
  fu_dtype t = st[0]->dtype;
  fu_kval *zero = fu_kb_const_f(b, NULL, t, 0.0);
  fu_kval *corr = fu_kb_const_f(b, NULL, t, (double)op->u.variance.correction);
  /* max(n - correction, 0): an empty or too small count divides by 0, giving NaN or inf like PyTorch */
  fu_kval *denom = bin(b, FU_OP_MAXIMUM, bin(b, FU_OP_SUB, st[2], corr), zero);
  res[0] = bin(b, FU_OP_DIV, st[1], denom);
  if (!res[0]) return false;
  if (op->n_results < 2) return true;
  fu_kval *empty = zero ? fu_kb_binary(b, NULL, FU_OP_EQ, FU_DT_BOOL, st[2], zero) : NULL;
  fu_kval *nan = bin(b, FU_OP_DIV, zero, zero); /* 0/0, as the interpreter's mean of nothing */
  fu_kval *args[3] = {empty, nan, st[0]};
  res[1] = empty && nan ? fu_kb_math(b, NULL, FU_OP_WHERE, t, args, 3) : NULL;
  return res[1] != NULL;
}
