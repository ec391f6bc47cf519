/* fuser: slice, pad and cat in the pointwise lowering (resize segments).
 *
 * The index graph gives an operand of a resize op its coordinates per
 * expression (fuser/index_graph.h): a slice reads start + step * i; a pad
 * or a cat reads its operand at a clamped coordinate, a variable of the
 * graph (FU_IG_VAR_RESIZE) standing for clamp(src - shift, 0, E - 1), so
 * every load stays in bounds whichever operand the element comes from
 * (the lanes outside an operand all read its edge element: one sector per
 * warp).  The element is then selected:
 *
 *   pad:  where(every padded dim has 0 <= c - lo < E, x, pad value)
 *   cat:  where(c < end_0, x_0, where(c < end_1, x_1, ... x_last))
 *
 * with c the result's coordinate along the dim, per vector lane.  Under a
 * vectorize axis the clamped coordinate is the vector's where the
 * operand's edges fall on vector boundaries (whole-vector loads), else one
 * per lane (fu_igraph_resize_at_lane, loads lane by lane); the select is
 * made lane by lane.  Index math is signed (the
 * index dtype), so c - lo may be negative before the clamp. */
#include <stdio.h>
#include <string.h>

#include "pointwise_internal.h"

static fu_kval *ix_op(lw *L, fu_op_kind op, fu_dtype t, fu_kval *a, fu_kval *b) {
  fu_kval *r = a && b ? fu_kb_binary(&L->b, NULL, op, t, a, b) : NULL;
  if (!r && !L->failed) fu_pwl_oom(L);
  return r;
}

fu_kval *fu_pwl_resize_index(lw *L, const fu_ix *var) {
  const fu_ix *src = NULL;
  int64_t shift = 0, extent = 0;
  if (!fu_igraph_resize_var(L->g, var, &src, &shift, &extent) || extent < 1) {
    fu_error(L->diag, L->seg->loc, "internal error: resize index '%s' is not in the index graph", var->sym);
    L->failed = true;
    return NULL;
  }
  fu_kval *t = fu_pwl_emit_ix(L, src);
  if (shift) t = ix_op(L, FU_OP_SUB, L->idx, t, fu_pwl_const_idx(L, shift));
  t = ix_op(L, FU_OP_MAXIMUM, L->idx, t, fu_pwl_const_idx(L, 0));
  return ix_op(L, FU_OP_MINIMUM, L->idx, t, fu_pwl_const_idx(L, extent - 1));
}

/* lo <= c < lo + extent, for the result coordinate c. */
static fu_kval *within(lw *L, const fu_ix *c, int64_t lo, int64_t extent, bool check_lo) {
  fu_kval *cv = fu_pwl_emit_ix(L, c);
  fu_kval *hi = ix_op(L, FU_OP_LT, FU_DT_BOOL, cv, fu_pwl_const_idx(L, lo + extent));
  if (!check_lo || lo <= 0) return hi;
  fu_kval *above = ix_op(L, FU_OP_GE, FU_DT_BOOL, cv, fu_pwl_const_idx(L, lo));
  return ix_op(L, FU_OP_LOGICAL_AND, FU_DT_BOOL, above, hi);
}

static fu_kval *pick(lw *L, fu_kval *cond, fu_kval *a, fu_kval *b, fu_dtype t, const char *name) {
  fu_kval *args[3] = {cond, a, b};
  fu_kval *r = cond && a && b ? fu_kb_math(&L->b, name, FU_OP_WHERE, t, args, 3) : NULL;
  if (!r && !L->failed) fu_pwl_oom(L);
  return r;
}

fu_kval *fu_pwl_resize_value(lw *L, const fu_op *op, const fu_value *v, const fu_ix *const *c, uint32_t lane,
                             fu_kval **args, fu_kval *pad_value, char *name) {
  fu_dtype t = v->type.dtype;
  if (op->kind == FU_OP_PAD) {
    const fu_value *x = op->operands[0];
    const fu_int_list *w = &op->u.pad.widths;
    fu_kval *cond = NULL;
    for (uint32_t k = 0; k < w->n / 2; k++) {
      int32_t j = x->type.rank - 1 - (int32_t)k;
      int64_t lo = w->v[2 * k], hi = w->v[2 * k + 1];
      if ((lo <= 0 && hi <= 0) || j < 0) continue; /* crops only: every element is the operand's */
      fu_kval *in = within(L, fu_pwl_at_lane(L, c[j], lane), lo, x->type.dims[j].value, true);
      cond = cond ? ix_op(L, FU_OP_LOGICAL_AND, FU_DT_BOOL, cond, in) : in;
    }
    fu_kval *a = fu_pwl_cast_to(L, args[0], t), *p = fu_pwl_cast_to(L, pad_value, t);
    return cond ? pick(L, cond, a, p, t, name) : a;
  }
  /* cat: from the last operand backwards, each earlier one where c < its end */
  int64_t dim = op->u.cat.dim, end = 0;
  int64_t ends[FU_PWL_MAX_ARGS];
  for (uint32_t i = 0; i < op->n_operands; i++) ends[i] = end += op->operands[i]->type.dims[dim].value;
  fu_kval *r = fu_pwl_cast_to(L, args[op->n_operands - 1], t);
  for (uint32_t i = op->n_operands - 1; i-- > 0 && r;) {
    fu_kval *in = within(L, fu_pwl_at_lane(L, c[dim], lane), 0, ends[i], false);
    r = pick(L, in, fu_pwl_cast_to(L, args[i], t), r, t, i == 0 ? name : NULL);
  }
  return r;
}
