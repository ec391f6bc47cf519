/* fuser: a pointwise op's dtype rules and math in kernel IR, for every
 * lowering (passes/lower/lower_internal.h).  The rules are the CPU
 * interpreter's, so a kernel computes what the reference computes:
 * f16/bf16 in f32, rounded to their dtype after each op; integers in i64;
 * comparisons in the promoted operand dtype. */
#include "lower_internal.h"

fu_dtype fu_lower_compute_of(fu_dtype t) { return t == FU_DT_F16 || t == FU_DT_BF16 ? FU_DT_F32 : t; }

fu_dtype fu_lower_op_compute_dtype(const fu_op *op) {
  fu_dtype rt = op->results[0]->type.dtype;
  if (fu_op_has(op->kind, FU_OF_BOOL_RESULT)) {
    fu_dtype cd = op->n_operands == 1 ? op->operands[0]->type.dtype : fu_dtype_common(op->operands, op->n_operands);
    return fu_dtype_is_float(cd) ? fu_lower_compute_of(cd) : FU_DT_I64;
  }
  if (fu_dtype_is_float(rt)) return fu_lower_compute_of(rt);
  if (rt == FU_DT_BOOL && fu_op_has(op->kind, FU_OF_INT_ONLY)) return FU_DT_BOOL; /* bitwise ops on bools are logical */
  /* zeros come in at the result's own width: an i32 widened to i64 would
   * shift in the copies of its sign bit */
  if (op->kind == FU_OP_LOGICAL_RIGHT_SHIFT) return rt;
  return FU_DT_I64;
}

fu_dtype fu_lower_operand_dtype(const fu_op *op, uint32_t i) {
  if (op->kind == FU_OP_CAST || op->kind == FU_OP_SET) return op->operands[i]->type.dtype;
  if (op->kind == FU_OP_WHERE && i == 0) return FU_DT_BOOL;
  return fu_lower_op_compute_dtype(op);
}

/* pow by a literal small integer, as PyTorch's CUDA kernels compute it:
 * x^2 = x*x and x^-1 = 1/x are what a correctly rounded pow gives; x^3 =
 * x*x*x may differ from powf by an ulp.  libdevice's powf is the largest
 * function a kernel calls, and this keeps compile time low.  NULL when
 * the exponent is none of 1, 2, 3, -1 (or out of memory). */
static fu_kval *small_pow(fu_kbuilder *b, const fu_op *op, fu_kval *x, fu_dtype c, const char *name) {
  const fu_value *y = op->operands[1];
  if (!y->is_literal || !(fu_dtype_is_float(y->type.dtype) || fu_dtype_is_int(y->type.dtype))) return NULL;
  double e = fu_dtype_is_float(y->type.dtype) ? y->literal.f : (double)y->literal.i;
  if (e == 1.0) return x;
  if (e == 2.0 || e == 3.0) {
    fu_kval *res = fu_kb_binary(b, e == 2.0 ? name : NULL, FU_OP_MUL, c, x, x);
    return res && e == 3.0 ? fu_kb_binary(b, name, FU_OP_MUL, c, res, x) : res;
  }
  if (e == -1.0) {
    fu_kval *one = fu_kb_const_f(b, NULL, c, 1.0);
    return one ? fu_kb_binary(b, name, FU_OP_DIV, c, one, x) : NULL;
  }
  return NULL;
}

fu_kval *fu_lower_pointwise_math(fu_kbuilder *b, const fu_op *op, fu_kval **a, const char *name) {
  fu_dtype rt = op->results[0]->type.dtype;
  if (op->kind == FU_OP_CAST) return fu_kb_unary(b, name, FU_OP_CAST, rt, a[0]);
  if (op->kind == FU_OP_SET) return a[0]->dtype == rt ? a[0] : fu_kb_unary(b, name, FU_OP_CAST, rt, a[0]);
  fu_dtype c = fu_lower_op_compute_dtype(op);
  fu_dtype math_rt = fu_op_has(op->kind, FU_OF_BOOL_RESULT) ? FU_DT_BOOL : c;
  bool direct = math_rt == rt;
  fu_kval *res = NULL;
  if (op->kind == FU_OP_POW && fu_dtype_is_float(c)) res = small_pow(b, op, a[0], c, direct ? name : NULL);
  if (!res) res = fu_kb_math(b, direct ? name : NULL, op->kind, math_rt, a, op->n_operands);
  if (!res || direct) return res;
  return fu_kb_unary(b, name, FU_OP_CAST, rt, res);
}

fu_kval *fu_lower_exp2_arg(fu_kbuilder *b, fu_kval *x) {
  fu_kval *l2e = fu_kb_const_f(b, NULL, FU_DT_F32, 1.4426950408889634);
  return l2e ? fu_kb_binary(b, NULL, FU_OP_MUL, FU_DT_F32, x, l2e) : NULL;
}

const fu_ix *fu_lower_linear_index(fu_ix_ctx *ix, const fu_type *t, const fu_ix *const *c) {
  const fu_ix *lin = fu_ix_const(ix, 0);
  for (int32_t d = 0; d < t->rank && lin; d++) {
    lin = fu_ix_mul(ix, lin, fu_ix_extent(ix, t->dims[d]));
    lin = lin ? fu_ix_add(ix, lin, c[d]) : NULL;
  }
  return lin;
}

fu_dtype fu_lower_rng_operand_dtype(fu_dtype result, uint32_t i) {
  if (i >= 2) return FU_DT_I64;
  return result == FU_DT_F64 ? FU_DT_F64 : FU_DT_F32;
}
