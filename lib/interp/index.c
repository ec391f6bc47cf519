/* fuser: the interpreter's indexing ops (index_select, gather,
 * take_along_axis, embedding_fwd; ir.h, "indexing ops").
 *
 * The result is computed element by element: the index operand's element
 * at the result's coordinates (as the op maps them) names the lookup
 * operand's coordinate along the gathered dim.  An index outside
 * [0, extent) is an error naming the op, the index's position and value,
 * never a read out of bounds: the interpreter is the oracle the kernels
 * are checked against, and a kernel reports the same condition through its
 * error flag (docs/ir.md, "Indexing ops"). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "interp_internal.h"

/* The result shape from the operands' real shapes, or an error. */
static fu_status result_shape(fu_interp *I, fu_op *op, const fu_host_tensor *x, const fu_host_tensor *ix,
                              int64_t d, int32_t *rank, int64_t *shape) {
  switch (op->kind) {
  case FU_OP_INDEX_SELECT:
    if (ix->rank != 1) return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "the index must have rank 1");
    *rank = x->rank;
    for (int32_t j = 0; j < x->rank; j++) shape[j] = j == d ? ix->shape[0] : x->shape[j];
    return FU_OK;
  case FU_OP_EMBEDDING_FWD:
    if (x->rank != 2 || ix->rank + 1 > FU_MAX_RANK)
      return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "the weight must have rank 2");
    *rank = ix->rank + 1;
    for (int32_t j = 0; j < ix->rank; j++) shape[j] = ix->shape[j];
    shape[ix->rank] = x->shape[1];
    return FU_OK;
  default:
    if (ix->rank != x->rank) return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "the index must have the input's rank");
    *rank = x->rank;
    for (int32_t j = 0; j < x->rank; j++) {
      shape[j] = ix->shape[j];
      if (j == d) continue;
      if (op->kind == FU_OP_GATHER) {
        if (ix->shape[j] > x->shape[j])
          return fu_interp_op_error(I, op, FU_ERR_RUNTIME,
                                    "index extent %" PRId64 " exceeds the input's %" PRId64 " in dim %d",
                                    ix->shape[j], x->shape[j], j);
      } else if (ix->shape[j] == 1) {
        shape[j] = x->shape[j];
      } else if (x->shape[j] != 1 && x->shape[j] != ix->shape[j]) {
        return fu_interp_op_error(I, op, FU_ERR_RUNTIME,
                                  "index extent %" PRId64 " does not broadcast against the input's %" PRId64
                                  " in dim %d",
                                  ix->shape[j], x->shape[j], j);
      }
    }
    return FU_OK;
  }
}

static void coords_str(char *buf, size_t cap, const int64_t *c, int32_t rank) {
  size_t n = 0;
  buf[0] = '\0';
  for (int32_t j = 0; j < rank && n < cap; j++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%" PRId64, j ? ", " : "", c[j]);
}

fu_status fu_interp_index_into(fu_interp *I, fu_interp *R, fu_op *op, const fu_host_tensor *x,
                               const fu_host_tensor *ix) {
  int64_t d = fu_index_dim(op);
  if (d < 0 || d >= x->rank) return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "dim %" PRId64 " is out of range", d);
  if (!fu_dtype_is_int(ix->dtype)) return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "the index must be an integer");
  int32_t rank = 0;
  int64_t shape[FU_MAX_RANK];
  fu_status st = result_shape(I, op, x, ix, d, &rank, shape);
  if (st == FU_OK) st = fu_interp_check_shape(R, op, 0, rank, shape);
  fu_host_tensor *out;
  if (st == FU_OK) st = fu_interp_alloc_result(R, op, 0, shape, &out);
  if (st != FU_OK) return st;
  if (out->dtype != x->dtype)
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "the result is %s but the input is %s", fu_dtype_name(out->dtype),
                              fu_dtype_name(x->dtype));
  int64_t numel = fu_host_tensor_numel(out);
  size_t es = fu_dtype_size(x->dtype);
  int64_t c[FU_MAX_RANK] = {0}, ic[FU_MAX_RANK], xc[FU_MAX_RANK];
  for (int64_t e = 0; e < numel; e++) {
    /* the index element's coordinates, then the lookup's */
    for (int32_t j = 0; j < ix->rank; j++) {
      int32_t rd = op->kind == FU_OP_INDEX_SELECT ? (int32_t)d : j;
      ic[j] = ix->shape[j] == 1 ? 0 : c[rd];
    }
    int64_t k = fu_host_tensor_get_i64(ix, ic);
    if (k < 0 || k >= x->shape[d]) {
      char at[256];
      coords_str(at, sizeof at, ic, ix->rank);
      const fu_value *iv = op->operands[fu_index_index_operand(op)];
      return fu_interp_op_error(I, op, FU_ERR_RUNTIME,
                                "index %" PRId64 " at [%s] of '%%%s' is out of range for dim %" PRId64
                                " of extent %" PRId64,
                                k, at, iv->name ? iv->name : "?", d, x->shape[d]);
    }
    for (int32_t j = 0; j < x->rank; j++) {
      int32_t rd = op->kind == FU_OP_EMBEDDING_FWD ? ix->rank : j;
      xc[j] = j == d ? k : x->shape[j] == 1 ? 0 : c[rd];
    }
    memcpy(fu_host_tensor_ptr(out, c), fu_host_tensor_ptr(x, xc), es);
    for (int32_t j = rank - 1; j >= 0; j--) { /* next result element, row-major */
      if (++c[j] < shape[j]) break;
      c[j] = 0;
    }
  }
  return FU_OK;
}

fu_status fu_interp_eval_index(fu_interp *I, fu_op *op) {
  fu_host_tensor x, ix;
  fu_status st = fu_interp_operand_tensor(I, op, fu_index_lookup_operand(op), &x);
  if (st == FU_OK) st = fu_interp_operand_tensor(I, op, fu_index_index_operand(op), &ix);
  return st != FU_OK ? st : fu_interp_index_into(I, I, op, &x, &ix);
}

/* Shared by the kernel-IR interpreter and the GPU runtime, so a flagged
 * kernel reads the same wherever it ran. */
fu_status fu_index_error_report(fu_diag_engine *diag, const fu_op *seg, const char *kernel, int32_t code) {
  const fu_op *op = NULL;
  for (fu_op *w = seg && seg->u.segment.body ? seg->u.segment.body->first : NULL; w && !op; w = w->next)
    if ((int64_t)w->id + 1 == code && fu_op_info_of(w->kind)->cls == FU_OC_INDEX) op = w;
  if (!op) {
    fu_error(diag, seg ? seg->loc : fu_loc_none(), "kernel '@%s' flagged an index out of range (code %d)",
             kernel ? kernel : "?", (int)code);
    return FU_ERR_RUNTIME;
  }
  const fu_value *x = op->operands[fu_index_lookup_operand(op)], *ix = op->operands[fu_index_index_operand(op)];
  fu_error(diag, op->loc,
           "'%s': an index in '%%%s' is out of range for dim %" PRId64 " of '%%%s' (kernel '@%s'; indices must lie in "
           "[0, extent))",
           fu_op_info_of(op->kind)->name, ix->name ? ix->name : "?", fu_index_dim(op), x->name ? x->name : "?",
           kernel ? kernel : "?");
  return FU_ERR_RUNTIME;
}
