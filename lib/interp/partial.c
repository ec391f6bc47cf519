/* fuser: partial sums (partial_sum) in the reference interpreter.
 *
 * Part g along dim is the sum of the operand's elements whose index along
 * dim is g modulo parts (docs/ir.md, "Partial sums"): the inner-outer
 * rewrite of the schedule pass splits a sum over the rows of a
 * normalization into these parts, which its kernel accumulates, and a sum
 * of the parts.  Each part is accumulated in double, in index order, and
 * rounded once to the result dtype. */
#include <string.h>

#include "interp_internal.h"

fu_status fu_interp_eval_partial(fu_interp *I, fu_op *op) {
  fu_host_tensor x;
  fu_status st = fu_interp_operand_tensor(I, op, 0, &x);
  if (st != FU_OK) return st;
  int32_t dim = (int32_t)op->u.partial.dim;
  int64_t parts = op->u.partial.parts;
  if (dim < 0 || dim >= x.rank || parts < 1)
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "dim %d or parts %lld is out of range", (int)dim,
                              (long long)parts);
  int64_t shape[FU_MAX_RANK];
  memcpy(shape, x.shape, (size_t)x.rank * sizeof *shape);
  shape[dim] = parts;
  fu_host_tensor *out;
  if ((st = fu_interp_check_shape(I, op, 0, x.rank, shape)) != FU_OK ||
      (st = fu_interp_alloc_result(I, op, 0, shape, &out)) != FU_OK)
    return st;
  int64_t n = 1;
  for (int32_t d = 0; d < x.rank; d++) n *= shape[d];
  /* every output element: its part's operand indices along dim, in order */
  int64_t idx[FU_MAX_RANK] = {0};
  for (int64_t e = 0; e < n; e++) {
    int64_t at[FU_MAX_RANK];
    memcpy(at, idx, sizeof at);
    double acc = 0;
    for (int64_t i = idx[dim]; i < x.shape[dim]; i += parts) {
      at[dim] = i;
      acc += fu_host_tensor_get(&x, at);
    }
    fu_host_tensor_set(out, idx, acc);
    for (int32_t d = x.rank - 1; d >= 0; d--) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return FU_OK;
}
