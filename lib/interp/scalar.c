/* fuser: pointwise ops on scalar literals through the interpreter's kernels
 * (the constant folder's arithmetic). */
#include <string.h>

#include "interp_internal.h"

int64_t fu_interp_literal_i64(const fu_value *v) {
  return fu_dtype_is_bool(v->type.dtype) ? (v->literal.b ? 1 : 0) : v->literal.i;
}

void fu_interp_pw_loop_init(fu_pw_loop *l, fu_op_kind k, fu_value *const *operands, uint32_t n, fu_dtype rdt) {
  bool bool_result = fu_op_has(k, FU_OF_BOOL_RESULT);
  fu_ck kind;
  if (k == FU_OP_CAST || k == FU_OP_SET) {
    kind = fu_interp_ck(operands[0]->type.dtype); /* load exact, round once on store */
  } else if (bool_result) {
    kind = fu_interp_ck(n == 1 ? operands[0]->type.dtype : fu_dtype_common(operands, n));
  } else {
    kind = fu_interp_ck(rdt);
  }
  memset(l, 0, sizeof *l);
  l->op = k;
  l->kind = kind;
  l->out_kind = bool_result ? FU_CK_I64 : kind;
  l->rdt = rdt;
  l->n_in = n;
  for (uint32_t i = 0; i < n; i++) l->in_kinds[i] = kind;
  if (k == FU_OP_WHERE) l->in_kinds[0] = FU_CK_I64;
}

/* A literal as a rank-0 tensor over `raw`, stored in its own dtype as the
 * interpreter stores a literal operand (an f32 literal is rounded here). */
static void literal_tensor(const fu_value *v, uint64_t *raw, fu_host_tensor *t) {
  memset(t, 0, sizeof *t);
  *raw = 0;
  t->dtype = v->type.dtype;
  t->data = raw;
  if (fu_dtype_is_float(v->type.dtype)) {
    fu_interp_store(v->type.dtype, raw, 0, 1, FU_CK_F64, &v->literal.f);
  } else {
    int64_t i = fu_interp_literal_i64(v);
    fu_interp_store(v->type.dtype, raw, 0, 1, FU_CK_I64, &i);
  }
}

/* One element through fu_interp_pw_run, the loop the tensor path runs, so
 * nothing about kinds, kernels or conversions can differ from it. */
fu_status fu_interp_eval_scalar(fu_op_kind k, fu_value *const *operands, uint32_t n, fu_dtype result,
                                fu_scalar_value *out) {
  const fu_op_info *info = fu_op_info_of(k);
  if (n < 1 || n > 3 || !(info->flags & FU_OF_POINTWISE) || result == FU_DT_NONE) return FU_ERR_UNSUPPORTED;
  for (uint32_t i = 0; i < n; i++)
    if (!operands[i] || !operands[i]->is_literal || operands[i]->type.dtype == FU_DT_NONE) return FU_ERR_UNSUPPORTED;
  uint64_t raw[4];
  fu_host_tensor ins[3], res;
  fu_pw_loop l;
  fu_interp_pw_loop_init(&l, k, operands, n, result);
  for (uint32_t i = 0; i < n; i++) {
    literal_tensor(operands[i], &raw[1 + i], &ins[i]);
    l.in[i] = &ins[i];
  }
  memset(&res, 0, sizeof res);
  raw[0] = 0;
  res.dtype = result;
  res.data = &raw[0];
  l.out = &res;
  switch (fu_interp_pw_run(&l)) {
  case FU_PW_OK: break;
  case FU_PW_DIV_ZERO: return FU_ERR_RUNTIME;
  case FU_PW_UNSUPPORTED: return FU_ERR_UNSUPPORTED;
  }
  memset(out, 0, sizeof *out);
  if (fu_dtype_is_float(result)) {
    fu_interp_load(result, &raw[0], 0, 1, FU_CK_F64, &out->f);
  } else {
    int64_t i;
    fu_interp_load(result, &raw[0], 0, 1, FU_CK_I64, &i);
    if (fu_dtype_is_bool(result)) out->b = i != 0;
    else out->i = i;
  }
  return FU_OK;
}
