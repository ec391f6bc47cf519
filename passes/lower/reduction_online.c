/* fuser: online-softmax states in kernel IR (reduction_online.h says what
 * they hold and why the exponentials may be exp2 of a product). */
#include <math.h>

#include "lower_internal.h"
#include "reduction_online.h"

bool fu_online_op(const fu_op *op) { return op->kind == FU_OP_MAX && op->n_results == 2; }

bool fu_online_identity(fu_kbuilder *b, fu_dtype t, fu_kval **st) {
  st[0] = fu_kb_const_f(b, NULL, t, -INFINITY);
  st[1] = fu_kb_const_f(b, NULL, t, 0.0);
  return st[0] && st[1];
}

/* a op c in a's dtype; NULL propagates. */
static fu_kval *bin(fu_kbuilder *b, fu_op_kind k, fu_kval *a, fu_kval *c) {
  return a && c ? fu_kb_binary(b, NULL, k, a->dtype, a, c) : NULL;
}

/* exp(d) for d <= 0 (the header's bound): exp2(d log2 e) in f32. */
static fu_kval *exp_nonpositive(fu_kbuilder *b, fu_kval *d) {
  if (!d) return NULL;
  if (d->dtype != FU_DT_F32) return fu_kb_unary(b, NULL, FU_OP_EXP, d->dtype, d);
  fu_kval *t = fu_lower_exp2_arg(b, d);
  return t ? fu_kb_unary(b, NULL, FU_OP_EXP2, d->dtype, t) : NULL;
}

/* What exponentials subtract for a max m: m, or 0 where m is -inf. */
static fu_kval *subtrahend(fu_kbuilder *b, fu_kval *m) {
  fu_kval *ninf = fu_kb_const_f(b, NULL, m->dtype, -INFINITY), *zero = fu_kb_const_f(b, NULL, m->dtype, 0.0);
  fu_kval *none = ninf ? fu_kb_binary(b, NULL, FU_OP_EQ, FU_DT_BOOL, m, ninf) : NULL;
  fu_kval *args[3] = {none, zero, m};
  return none && zero ? fu_kb_math(b, NULL, FU_OP_WHERE, m->dtype, args, 3) : NULL;
}

bool fu_online_update(fu_kbuilder *b, fu_kval *const *st, fu_kval *const *x, uint32_t n, fu_kval **out) {
  fu_kval *m = st[0];
  for (uint32_t i = 0; i < n; i++) m = bin(b, FU_OP_MAXIMUM, m, x[i]);
  fu_kval *ms = m ? subtrahend(b, m) : NULL;
  fu_kval *s = bin(b, FU_OP_MUL, st[1], exp_nonpositive(b, bin(b, FU_OP_SUB, st[0], ms)));
  for (uint32_t i = 0; i < n; i++) s = bin(b, FU_OP_ADD, s, exp_nonpositive(b, bin(b, FU_OP_SUB, x[i], ms)));
  out[0] = m;
  out[1] = s;
  return m && s;
}

/* One exponential a combine: the larger max's sum plus the other's scaled
 * by exp(-|ma - mc|); a NaN difference (both -inf, or a NaN max) scales by
 * 0, which leaves an all -inf pair at sum 0 (a NaN max is the results'
 * NaN anyway).  Either order gives the same bits: |ma - mc| is the same,
 * and the larger's sum is the addend either way. */
bool fu_online_combine(fu_kbuilder *b, fu_kval *const *a, fu_kval *const *c, fu_kval **out) {
  fu_kval *m = bin(b, FU_OP_MAXIMUM, a[0], c[0]);
  fu_kval *d = bin(b, FU_OP_SUB, a[0], c[0]);
  fu_kval *ad = d ? fu_kb_unary(b, NULL, FU_OP_ABS, d->dtype, d) : NULL;
  fu_kval *e = ad ? exp_nonpositive(b, fu_kb_unary(b, NULL, FU_OP_NEG, ad->dtype, ad)) : NULL;
  fu_kval *nan = d ? fu_kb_math(b, NULL, FU_OP_ISNAN, FU_DT_BOOL, &d, 1) : NULL;
  fu_kval *zero = e ? fu_kb_const_f(b, NULL, e->dtype, 0.0) : NULL;
  fu_kval *a1[3] = {nan, zero, e};
  fu_kval *w = nan && zero ? fu_kb_math(b, NULL, FU_OP_WHERE, e->dtype, a1, 3) : NULL;
  fu_kval *ge = fu_kb_binary(b, NULL, FU_OP_GE, FU_DT_BOOL, a[0], c[0]);
  fu_kval *sa = bin(b, FU_OP_ADD, a[1], bin(b, FU_OP_MUL, c[1], w));
  fu_kval *sc = bin(b, FU_OP_ADD, c[1], bin(b, FU_OP_MUL, a[1], w));
  fu_kval *a2[3] = {ge, sa, sc};
  out[0] = m;
  out[1] = ge && sa && sc ? fu_kb_math(b, NULL, FU_OP_WHERE, a[1]->dtype, a2, 3) : NULL;
  return m && out[1];
}

bool fu_online_results(fu_kbuilder *b, fu_kval *const *st, fu_kval **res) {
  fu_kval *m = st[0];
  fu_kval *fin = fu_kb_math(b, NULL, FU_OP_ISFINITE, FU_DT_BOOL, &m, 1);
  fu_kval *nan = fu_kb_const_f(b, NULL, m->dtype, NAN);
  fu_kval *args[3] = {fin, st[1], nan};
  res[0] = m;
  res[1] = fin && nan ? fu_kb_math(b, NULL, FU_OP_WHERE, m->dtype, args, 3) : NULL;
  return res[1] != NULL;
}
