/* The interpreter's uniform and normal: every element from its linear
 * logical index through fu_rng_value (include/fuser/rng.h), the definition
 * the kernels follow. */
#include "fuser/rng.h"

#include "interp_internal.h"

/* The integer value of scalar operand i (seed or offset), as the 64 bits
 * the Philox key or counter takes. */
static fu_status operand_u64(fu_interp *I, fu_op *op, uint32_t i, uint64_t *out) {
  double f;
  int64_t v;
  fu_status st = fu_interp_operand_scalar(I, op, i, &f, &v);
  *out = (uint64_t)v;
  return st;
}

fu_status fu_interp_eval_rng(fu_interp *I, fu_op *op) {
  double a, b;
  int64_t ia, ib;
  uint64_t seed, offset;
  fu_status st = fu_interp_operand_scalar(I, op, 0, &a, &ia);
  if (st == FU_OK) st = fu_interp_operand_scalar(I, op, 1, &b, &ib);
  if (st == FU_OK) st = operand_u64(I, op, 2, &seed);
  if (st == FU_OK) st = operand_u64(I, op, 3, &offset);
  if (st != FU_OK) return st;
  if (!fu_dtype_is_float(op->operands[0]->type.dtype)) a = (double)ia;
  if (!fu_dtype_is_float(op->operands[1]->type.dtype)) b = (double)ib;
  const fu_type *t = &op->results[0]->type;
  if (!fu_dtype_is_float(t->dtype)) return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "the result must be a float");
  int64_t shape[FU_MAX_RANK], numel = 1;
  fu_host_tensor *out;
  st = fu_interp_result_shape(I, op, 0, shape, -1);
  if (st == FU_OK) st = fu_interp_alloc_result(I, op, 0, shape, &out);
  if (st != FU_OK) return st;
  for (int32_t d = 0; d < t->rank; d++) numel *= shape[d];
  fu_chunk buf;
  size_t es = fu_dtype_size(t->dtype);
  for (int64_t j = 0; j < numel; j += FU_INTERP_CHUNK) {
    size_t n = (size_t)(numel - j < FU_INTERP_CHUNK ? numel - j : FU_INTERP_CHUNK);
    for (size_t k = 0; k < n; k++)
      buf.f64[k] = fu_rng_value(op->kind, t->dtype, a, b, seed, offset, (uint64_t)(j + (int64_t)k));
    fu_interp_store(t->dtype, (char *)out->data + (size_t)j * es, 1, n, FU_CK_F64, &buf);
  }
  return FU_OK;
}
