/* fuser: the indexing ops in the pointwise lowering (index_select, gather,
 * take_along_axis, embedding_fwd; ir.h, "indexing ops").
 *
 * The index graph reads an indexing op's lookup operand at coordinates
 * whose gathered one is a variable (FU_IG_VAR_GATHER) standing for the
 * index operand's element at given coordinates.  Resolving it here loads
 * that element (evaluating the index operand like any other value of the
 * segment), widens it to i64 and checks 0 <= k < extent.  An index out of
 * range writes the op's id + 1 into the kernel's error flag, a one-element
 * workspace (`workspace[1] zeroed error`) that the runtime and the kernel
 * interpreter read after the kernel and report as an error naming the op;
 * the coordinate is clamped into [0, extent) all the same, so the kernel
 * never reads outside the tensor before the error is seen (docs/ir.md,
 * "Indexing ops"). */
#include <stdio.h>

#include "pointwise_internal.h"

static fu_kval *i64_op(lw *L, fu_op_kind op, fu_dtype t, fu_kval *a, fu_kval *b) {
  fu_kval *r = a && b ? fu_kb_binary(&L->b, NULL, op, t, a, b) : NULL;
  if (!r && !L->failed) fu_pwl_oom(L);
  return r;
}

/* The kernel's error flag, added as a parameter on first use. */
static fu_kval *error_flag(lw *L) {
  if (L->index_error) return L->index_error;
  fu_lexpr *one = fu_lexpr_const(L->m, 1);
  fu_kval *p = one ? fu_kernel_workspace_param(L->m, L->k, "index_error", FU_DT_I32, one, true) : NULL;
  if (!p) {
    fu_pwl_oom(L);
    return NULL;
  }
  p->ws_error = true;
  return L->index_error = p;
}

/* if (bad) index_error[0] = id + 1, built in a then-block of its own. */
static void flag_if(lw *L, const fu_op *op, fu_kval *bad) {
  fu_kval *flag = error_flag(L);
  fu_kinst *br = flag && bad ? fu_kb_if(&L->b, bad) : NULL;
  if (!br) {
    if (!L->failed) fu_pwl_oom(L);
    return;
  }
  fu_kbuilder tb = fu_kbuilder_at(L->m, L->k, &br->u.branch.then_body);
  fu_kval *at = fu_kb_const_i(&tb, NULL, L->idx, 0);
  fu_kval *code = fu_kb_const_i(&tb, NULL, FU_DT_I32, (int64_t)op->id + 1);
  if (!at || !code || !fu_kb_store(&tb, flag, at, &code, 1)) fu_pwl_oom(L);
}

fu_kval *fu_pwl_gather_index(lw *L, const fu_ix *var) {
  const fu_op *op = NULL;
  const fu_ix *const *ic = NULL;
  if (!fu_igraph_gather_var(L->g, var, &op, &ic)) {
    fu_error(L->diag, L->seg->loc, "internal error: gathered index '%s' is not in the index graph", var->sym);
    L->failed = true;
    return NULL;
  }
  const fu_value *x = op->operands[fu_index_lookup_operand(op)];
  const fu_value *iv = op->operands[fu_index_index_operand(op)];
  fu_kval *k = fu_pwl_cast_to(L, fu_pwl_eval(L, iv, ic), FU_DT_I64);
  fu_kval *e = fu_pwl_cast_to(L, fu_pwl_emit_ix(L, fu_ix_extent(L->ix, x->type.dims[fu_index_dim(op)])), FU_DT_I64);
  if (!k || !e) return NULL;
  fu_kval *zero = fu_kb_const_i(&L->b, NULL, FU_DT_I64, 0), *one = fu_kb_const_i(&L->b, NULL, FU_DT_I64, 1);
  if (!zero || !one) {
    fu_pwl_oom(L);
    return NULL;
  }
  fu_kval *below = i64_op(L, FU_OP_LT, FU_DT_BOOL, k, zero);
  fu_kval *above = i64_op(L, FU_OP_GE, FU_DT_BOOL, k, e);
  fu_kval *bad = i64_op(L, FU_OP_LOGICAL_OR, FU_DT_BOOL, below, above);
  if (!bad) return NULL;
  flag_if(L, op, bad);
  fu_kval *t = i64_op(L, FU_OP_MINIMUM, FU_DT_I64, k, i64_op(L, FU_OP_SUB, FU_DT_I64, e, one));
  t = i64_op(L, FU_OP_MAXIMUM, FU_DT_I64, t, zero);
  return fu_pwl_cast_to(L, t, L->idx);
}
