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

/* One pointwise loop over rank-1 tensors of `lanes` elements, each operand
 * stored in its own dtype first: the tensor path's kinds and kernels. */
fu_status fu_interp_eval_int_lanes(fu_op_kind k, const fu_dtype *dts, const int64_t *const *in, uint32_t n,
                                   fu_dtype result, uint32_t lanes, int64_t *out) {
  const fu_op_info *info = fu_op_info_of(k);
  if (n < 1 || n > 3 || lanes > FU_INTERP_MAX_LANES || !(info->flags & FU_OF_POINTWISE) ||
      fu_dtype_is_float(result) || result == FU_DT_NONE)
    return FU_ERR_UNSUPPORTED;
  if (lanes == 0) return FU_OK;
  uint64_t raw[4][FU_INTERP_MAX_LANES];
  fu_value vals[3];
  fu_value *ops[3];
  fu_host_tensor ins[3], res;
  for (uint32_t i = 0; i < n; i++) {
    if (fu_dtype_is_float(dts[i]) || dts[i] == FU_DT_NONE) return FU_ERR_UNSUPPORTED;
    memset(&vals[i], 0, sizeof vals[i]);
    vals[i].type.dtype = dts[i];
    vals[i].type.rank = FU_SCALAR_RANK;
    vals[i].is_literal = true;
    ops[i] = &vals[i];
  }
  fu_pw_loop l;
  fu_interp_pw_loop_init(&l, k, ops, n, result);
  for (uint32_t i = 0; i <= n; i++) {
    fu_host_tensor *t = i ? &ins[i - 1] : &res;
    memset(t, 0, sizeof *t);
    t->dtype = i ? dts[i - 1] : result;
    t->rank = 1;
    t->shape[0] = lanes;
    t->strides[0] = 1;
    t->data = raw[i];
    if (i) {
      fu_interp_store(t->dtype, raw[i], 1, lanes, FU_CK_I64, in[i - 1]);
      l.in[i - 1] = t;
    }
  }
  l.out = &res;
  switch (fu_interp_pw_run(&l)) {
  case FU_PW_OK: break;
  case FU_PW_DIV_ZERO: return FU_ERR_RUNTIME;
  case FU_PW_UNSUPPORTED: return FU_ERR_UNSUPPORTED;
  }
  fu_interp_load(result, raw[0], 1, lanes, FU_CK_I64, out);
  return FU_OK;
}
