/* fuser: the interpreter's shape, data-movement and creation ops.
 *
 * Metadata ops (broadcast_in_dim, broadcast, expand, permute, squeeze,
 * slice, reshape of a row-major tensor) make views that share their
 * operand's memory, exercising the same stride arithmetic a GPU kernel
 * must get right.  cat, pad, iota and reshape of a non-contiguous tensor
 * write fresh row-major memory; full is a stride-0 view of one element. */
#include <string.h>

#include "interp_internal.h"

static fu_status same_dtype(fu_interp *I, fu_op *op, const fu_host_tensor *in) {
  fu_dtype rdt = op->results[0]->type.dtype;
  if (rdt != in->dtype)
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "the result is %s but the operand is %s", fu_dtype_name(rdt),
                              fu_dtype_name(in->dtype));
  return FU_OK;
}

static fu_status result_rank(fu_interp *I, fu_op *op, int32_t *rank) {
  const fu_type *t = &op->results[0]->type;
  if (t->rank < 0) return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "the result must be a tensor");
  *rank = t->rank;
  return FU_OK;
}

/* A view of `in` moved by `off` elements (not when the view is empty: the
 * offset may point past the end then). */
static void *offset_data(const fu_host_tensor *in, int64_t off, bool empty) {
  if (empty) return in->data;
  return (char *)in->data + (size_t)off * fu_dtype_size(in->dtype);
}

static bool any_zero(int32_t rank, const int64_t *shape) {
  for (int32_t d = 0; d < rank; d++)
    if (shape[d] == 0) return true;
  return false;
}

static fu_status eval_broadcast_in_dim(fu_interp *I, fu_op *op, fu_interp_slot *s, fu_host_tensor *in) {
  int32_t rank = 0;
  int64_t shape[FU_MAX_RANK];
  fu_status st = result_rank(I, op, &rank);
  if (st == FU_OK) st = fu_interp_result_shape(I, op, 0, shape, -1);
  if (st != FU_OK) return st;
  const fu_int_list *bd = &op->u.broadcast_in_dim.broadcast_dims;
  if (bd->n != (uint32_t)in->rank)
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "broadcast_dims has %u entries for an operand of rank %d", bd->n,
                              in->rank);
  fu_host_tensor v = *in;
  v.rank = rank;
  for (int32_t d = 0; d < rank; d++) {
    v.shape[d] = shape[d];
    v.strides[d] = 0;
  }
  int64_t prev = -1;
  for (uint32_t i = 0; i < bd->n; i++) {
    int64_t d = bd->v[i];
    if (d <= prev || d >= rank)
      return fu_interp_op_error(I, op, FU_ERR_RUNTIME,
                                "broadcast_dims must be strictly increasing and below the result rank %d", rank);
    prev = d;
    if (in->shape[i] == shape[d])
      v.strides[d] = in->strides[i];
    else if (in->shape[i] != 1)
      return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "operand dim %u has extent %lld, result dim %lld has %lld", i,
                                (long long)in->shape[i], (long long)d, (long long)shape[d]);
  }
  fu_interp_alias_result(I, op, 0, s, &v);
  return FU_OK;
}

static fu_status eval_broadcast(fu_interp *I, fu_op *op, fu_interp_slot *s, fu_host_tensor *in) {
  const bool *isb = op->u.broadcast.is_broadcast;
  uint32_t n = op->u.broadcast.n;
  if (n > FU_MAX_RANK) return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "is_broadcast_dim has too many entries");
  fu_host_tensor v = *in;
  v.rank = (int32_t)n;
  int32_t j = 0;
  for (uint32_t d = 0; d < n; d++) {
    if (isb[d]) {
      v.shape[d] = 1;
      v.strides[d] = 0;
    } else {
      if (j >= in->rank) break;
      v.shape[d] = in->shape[j];
      v.strides[d] = in->strides[j];
      j++;
    }
  }
  uint32_t kept = 0;
  for (uint32_t d = 0; d < n; d++) kept += !isb[d];
  if (kept != (uint32_t)in->rank)
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "is_broadcast_dim keeps %u dims of an operand of rank %d", kept,
                              in->rank);
  fu_status st = fu_interp_check_shape(I, op, 0, v.rank, v.shape);
  if (st != FU_OK) return st;
  fu_interp_alias_result(I, op, 0, s, &v);
  return FU_OK;
}

static fu_status eval_expand(fu_interp *I, fu_op *op, fu_interp_slot *s, fu_host_tensor *in) {
  int32_t rank = 0;
  int64_t shape[FU_MAX_RANK];
  fu_status st = result_rank(I, op, &rank);
  if (st == FU_OK) st = fu_interp_result_shape(I, op, 0, shape, -1);
  if (st != FU_OK) return st;
  if (rank != in->rank)
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "expand changes the rank from %d to %d", in->rank, rank);
  fu_host_tensor v = *in;
  for (int32_t d = 0; d < rank; d++) {
    v.shape[d] = shape[d];
    if (in->shape[d] == shape[d]) continue;
    if (in->shape[d] != 1)
      return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "dim %d has extent %lld and cannot expand to %lld", d,
                                (long long)in->shape[d], (long long)shape[d]);
    v.strides[d] = 0;
  }
  fu_interp_alias_result(I, op, 0, s, &v);
  return FU_OK;
}

static fu_status eval_permute(fu_interp *I, fu_op *op, fu_interp_slot *s, fu_host_tensor *in) {
  const fu_int_list *dims = &op->u.permute.dims;
  if (dims->n != (uint32_t)in->rank)
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "dims has %u entries for an operand of rank %d", dims->n,
                              in->rank);
  bool seen[FU_MAX_RANK] = {false};
  fu_host_tensor v = *in;
  for (uint32_t i = 0; i < dims->n; i++) {
    int64_t d = dims->v[i];
    if (d < 0 || d >= in->rank || seen[d])
      return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "dims is not a permutation of 0..%d", in->rank - 1);
    seen[d] = true;
    v.shape[i] = in->shape[d];
    v.strides[i] = in->strides[d];
  }
  fu_status st = fu_interp_check_shape(I, op, 0, v.rank, v.shape);
  if (st != FU_OK) return st;
  fu_interp_alias_result(I, op, 0, s, &v);
  return FU_OK;
}

static fu_status eval_squeeze(fu_interp *I, fu_op *op, fu_interp_slot *s, fu_host_tensor *in) {
  const fu_int_list *dims = &op->u.squeeze.dims;
  bool drop[FU_MAX_RANK] = {false};
  for (uint32_t i = 0; i < dims->n; i++) {
    int64_t d = dims->v[i];
    if (d < 0 || d >= in->rank || drop[d])
      return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "squeeze dim %lld is out of range or repeated", (long long)d);
    if (in->shape[d] != 1)
      return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "cannot squeeze dim %lld of extent %lld", (long long)d,
                                (long long)in->shape[d]);
    drop[d] = true;
  }
  fu_host_tensor v = *in;
  int32_t r = 0;
  for (int32_t d = 0; d < in->rank; d++) {
    if (drop[d]) continue;
    v.shape[r] = in->shape[d];
    v.strides[r] = in->strides[d];
    r++;
  }
  v.rank = r;
  fu_status st = fu_interp_check_shape(I, op, 0, v.rank, v.shape);
  if (st != FU_OK) return st;
  fu_interp_alias_result(I, op, 0, s, &v);
  return FU_OK;
}

static fu_status eval_slice(fu_interp *I, fu_op *op, fu_interp_slot *s, fu_host_tensor *in) {
  const fu_int_list *starts = &op->u.slice.starts, *ends = &op->u.slice.ends, *steps = &op->u.slice.steps;
  uint32_t r = (uint32_t)in->rank;
  if (starts->n != r || ends->n != r || (steps->n != r && steps->n != 0))
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "starts, ends and steps need %u entries each", r);
  fu_host_tensor v = *in;
  int64_t off = 0;
  for (uint32_t d = 0; d < r; d++) {
    int64_t b = starts->v[d], e = ends->v[d], st = steps->n ? steps->v[d] : 1;
    if (st < 1) return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "step %lld in dim %u must be >= 1", (long long)st, d);
    /* the whole of a symbolic dim, as type inference allows: [0:INT64_MAX] */
    if (b == 0 && e == INT64_MAX && st == 1) e = in->shape[d];
    if (b < 0 || b > e || e > in->shape[d])
      return fu_interp_op_error(I, op, FU_ERR_RUNTIME,
                                "slice [%lld:%lld] of dim %u is out of bounds for extent %lld", (long long)b,
                                (long long)e, d, (long long)in->shape[d]);
    v.shape[d] = (e - b) / st + ((e - b) % st != 0);
    /* with two or more elements st <= e - b, so the product stays inside
     * the operand's storage; a huge step over one element must not overflow */
    v.strides[d] = v.shape[d] > 1 ? in->strides[d] * st : in->strides[d];
    off += b * in->strides[d];
  }
  v.data = offset_data(in, off, any_zero(v.rank, v.shape));
  fu_status st = fu_interp_check_shape(I, op, 0, v.rank, v.shape);
  if (st != FU_OK) return st;
  fu_interp_alias_result(I, op, 0, s, &v);
  return FU_OK;
}

static fu_status eval_reshape(fu_interp *I, fu_op *op, fu_interp_slot *s, fu_host_tensor *in) {
  int32_t rank = 0;
  int64_t shape[FU_MAX_RANK];
  int64_t n_in = fu_host_tensor_numel(in);
  fu_status st = result_rank(I, op, &rank);
  if (st == FU_OK) st = fu_interp_result_shape(I, op, 0, shape, n_in);
  if (st != FU_OK) return st;
  fu_host_tensor v = *in;
  v.rank = rank;
  for (int32_t d = 0; d < rank; d++) v.shape[d] = shape[d];
  if (fu_host_tensor_numel(&v) != n_in)
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "cannot reshape %lld elements into %lld",
                              (long long)n_in, (long long)fu_host_tensor_numel(&v));
  fu_contiguous_strides(rank, shape, v.strides);
  if (fu_host_tensor_is_contiguous(in)) {
    fu_interp_alias_result(I, op, 0, s, &v);
    return FU_OK;
  }
  /* Not row-major: materialize in row-major order, then view. */
  fu_host_tensor *out;
  st = fu_interp_alloc_result(I, op, 0, shape, &out);
  if (st != FU_OK) return st;
  fu_host_tensor tmp = *in;
  tmp.data = out->data;
  tmp.owned = NULL;
  fu_contiguous_strides(in->rank, in->shape, tmp.strides);
  if (fu_interp_copy_into(&tmp, in, I->threads) != FU_OK)
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "copy failed while materializing");
  return FU_OK;
}

static fu_status eval_cat(fu_interp *I, fu_op *op) {
  fu_host_tensor in[64];
  if (op->n_operands < 1 || op->n_operands > 64)
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "cat takes 1 to 64 operands, got %u", op->n_operands);
  for (uint32_t i = 0; i < op->n_operands; i++) {
    fu_status st = fu_interp_operand_tensor(I, op, i, &in[i]);
    if (st != FU_OK) return st;
  }
  int32_t rank = in[0].rank;
  int64_t dim = op->u.cat.dim;
  if (dim < 0 || dim >= rank)
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "dim %lld is out of range for rank %d", (long long)dim, rank);
  int64_t shape[FU_MAX_RANK];
  for (int32_t d = 0; d < rank; d++) shape[d] = in[0].shape[d];
  shape[dim] = 0;
  for (uint32_t i = 0; i < op->n_operands; i++) {
    if (in[i].rank != rank)
      return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "operand %u has rank %d, operand 0 has %d", i, in[i].rank,
                                rank);
    for (int32_t d = 0; d < rank; d++)
      if (d != dim && in[i].shape[d] != in[0].shape[d])
        return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "operand %u has extent %lld in dim %d, operand 0 has %lld", i,
                                  (long long)in[i].shape[d], d, (long long)in[0].shape[d]);
    if (in[i].shape[dim] > INT64_MAX - shape[dim])
      return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "the concatenated extent overflows");
    shape[dim] += in[i].shape[dim];
  }
  fu_status st = fu_interp_check_shape(I, op, 0, rank, shape);
  fu_host_tensor *out;
  if (st == FU_OK) st = fu_interp_alloc_result_dense(I, op, 0, shape, &out, NULL);
  if (st != FU_OK) return st;
  int64_t at = 0;
  for (uint32_t i = 0; i < op->n_operands; i++) {
    fu_host_tensor dst = *out;
    dst.shape[dim] = in[i].shape[dim];
    dst.data = offset_data(out, at * out->strides[dim], any_zero(rank, dst.shape));
    if (fu_interp_copy_into(&dst, &in[i], I->threads) != FU_OK)
      return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "copy of operand %u failed", i);
    at += in[i].shape[dim];
  }
  return FU_OK;
}

static fu_status eval_pad(fu_interp *I, fu_op *op, fu_host_tensor *in) {
  fu_interp_slot *val = fu_interp_operand(I, op, 1);
  if (!val) return FU_ERR_RUNTIME;
  if (!val->scalar) return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "the pad value must be a scalar");
  const fu_int_list *w = &op->u.pad.widths;
  int32_t rank = in->rank;
  if (w->n % 2 != 0 || w->n / 2 > (uint32_t)rank)
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "widths has %u entries for an operand of rank %d", w->n, rank);
  int64_t before[FU_MAX_RANK] = {0}, after[FU_MAX_RANK] = {0}, shape[FU_MAX_RANK];
  const int64_t lim = INT64_C(1) << 60;
  for (uint32_t k = 0; k < w->n / 2; k++) {
    int32_t d = rank - 1 - (int32_t)k; /* innermost first */
    before[d] = w->v[2 * k];
    after[d] = w->v[2 * k + 1];
    if (before[d] > lim || before[d] < -lim || after[d] > lim || after[d] < -lim)
      return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "pad width out of range");
  }
  for (int32_t d = 0; d < rank; d++) {
    shape[d] = in->shape[d] + before[d] + after[d];
    if (in->shape[d] > lim || shape[d] < 0)
      return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "padding dim %d of extent %lld by (%lld, %lld) gives extent %lld", d,
                                (long long)in->shape[d], (long long)before[d], (long long)after[d],
                                (long long)shape[d]);
  }
  fu_status st = same_dtype(I, op, in);
  if (st == FU_OK) st = fu_interp_check_shape(I, op, 0, rank, shape);
  fu_host_tensor *out;
  if (st == FU_OK) st = fu_interp_alloc_result_dense(I, op, 0, shape, &out, NULL);
  if (st != FU_OK) return st;
  /* Fill with the pad value (a stride-0 view of the scalar), then copy the
   * operand's surviving region. */
  fu_host_tensor fillv = *out;
  fillv.dtype = val->view.dtype;
  fillv.data = val->raw;
  for (int32_t d = 0; d < rank; d++) fillv.strides[d] = 0;
  if (fu_interp_copy_into(out, &fillv, I->threads) != FU_OK)
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "fill failed");
  fu_host_tensor src = *in, dst = *out;
  int64_t soff = 0, doff = 0;
  for (int32_t d = 0; d < rank; d++) {
    int64_t lo = before[d] < 0 ? -before[d] : 0;
    int64_t hi = after[d] < 0 ? -after[d] : 0;
    int64_t len = in->shape[d] - lo - hi;
    if (len <= 0) return FU_OK; /* everything was cropped */
    src.shape[d] = dst.shape[d] = len;
    soff += lo * in->strides[d];
    doff += (before[d] > 0 ? before[d] : 0) * out->strides[d];
  }
  src.data = offset_data(in, soff, false);
  dst.data = offset_data(out, doff, false);
  if (fu_interp_copy_into(&dst, &src, I->threads) != FU_OK)
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "copy failed");
  return FU_OK;
}

static fu_status eval_full(fu_interp *I, fu_op *op) {
  fu_interp_slot *val = fu_interp_operand(I, op, 0);
  if (!val) return FU_ERR_RUNTIME;
  if (!val->scalar) return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "the fill value must be a scalar");
  int64_t shape[FU_MAX_RANK];
  fu_status st = fu_interp_result_shape(I, op, 0, shape, -1);
  if (st != FU_OK) return st;
  fu_value *res = op->results[0];
  fu_dtype dt = res->type.dtype;
  if (dt <= FU_DT_NONE || dt >= FU_DT_COUNT) return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "the result has no dtype");
  fu_interp_slot *s = &I->slots[res->id];
  fu_chunk tmp;
  fu_ck k = fu_interp_ck(val->view.dtype);
  fu_interp_load(val->view.dtype, val->raw, 0, 1, k, &tmp);
  memset(s->raw, 0, sizeof s->raw);
  fu_interp_store(dt, s->raw, 0, 1, k, &tmp);
  /* One element seen through stride-0 dims: no memory beyond the slot. */
  memset(&s->view, 0, sizeof s->view);
  s->view.dtype = dt;
  s->view.rank = res->type.rank < 0 ? 0 : res->type.rank;
  for (int32_t d = 0; d < s->view.rank; d++) s->view.shape[d] = shape[d];
  s->view.data = s->raw;
  s->st = NULL;
  s->scalar = fu_type_is_scalar(&res->type);
  s->ready = true;
  return FU_OK;
}

static fu_status eval_iota(fu_interp *I, fu_op *op) {
  double f0, fstep;
  int64_t i0, istep;
  fu_status st = fu_interp_operand_scalar(I, op, 0, &f0, &i0);
  if (st == FU_OK) st = fu_interp_operand_scalar(I, op, 1, &fstep, &istep);
  if (st != FU_OK) return st;
  const fu_type *t = &op->results[0]->type;
  if (t->rank != 1) return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "the result must have rank 1");
  int64_t shape[1];
  fu_host_tensor *out;
  st = fu_interp_result_shape(I, op, 0, shape, -1);
  if (st == FU_OK) st = fu_interp_alloc_result(I, op, 0, shape, &out);
  if (st != FU_OK) return st;
  bool is_float = fu_dtype_is_float(t->dtype);
  /* Computed in double (floats) or wrapping int64, as PyTorch's arange. */
  fu_chunk buf;
  size_t es = fu_dtype_size(t->dtype);
  for (int64_t j = 0; j < shape[0]; j += FU_INTERP_CHUNK) {
    size_t n = (size_t)(shape[0] - j < FU_INTERP_CHUNK ? shape[0] - j : FU_INTERP_CHUNK);
    for (size_t k = 0; k < n; k++) {
      int64_t idx = j + (int64_t)k;
      if (is_float)
        buf.f64[k] = f0 + (double)idx * fstep;
      else
        buf.i64[k] = (int64_t)((uint64_t)i0 + (uint64_t)idx * (uint64_t)istep);
    }
    fu_interp_store(t->dtype, (char *)out->data + (size_t)j * es, 1, n, is_float ? FU_CK_F64 : FU_CK_I64, &buf);
  }
  return FU_OK;
}

/* The op's one tensor operand, as a slot and a host view; with `same`,
 * also checks that the result keeps its dtype (every view op but pad). */
static fu_status take_operand(fu_interp *I, fu_op *op, bool same, fu_interp_slot **s, fu_host_tensor *in) {
  *s = fu_interp_operand(I, op, 0);
  if (!*s) return FU_ERR_RUNTIME;
  fu_status st = fu_interp_operand_tensor(I, op, 0, in);
  if (st != FU_OK || !same) return st;
  return same_dtype(I, op, in);
}

fu_status fu_interp_eval_shape_op(fu_interp *I, fu_op *op) {
  fu_interp_slot *s = NULL;
  fu_host_tensor in;
  fu_status st;
  switch (fu_op_info_of(op->kind)->cls) {
  case FU_OC_CAT: return eval_cat(I, op);
  case FU_OC_FULL: return eval_full(I, op);
  case FU_OC_IOTA: return eval_iota(I, op);
  case FU_OC_PAD: return (st = take_operand(I, op, false, &s, &in)) ? st : eval_pad(I, op, &in);
  case FU_OC_BROADCAST_IN_DIM:
    return (st = take_operand(I, op, true, &s, &in)) ? st : eval_broadcast_in_dim(I, op, s, &in);
  case FU_OC_BROADCAST: return (st = take_operand(I, op, true, &s, &in)) ? st : eval_broadcast(I, op, s, &in);
  case FU_OC_EXPAND: return (st = take_operand(I, op, true, &s, &in)) ? st : eval_expand(I, op, s, &in);
  case FU_OC_RESHAPE: return (st = take_operand(I, op, true, &s, &in)) ? st : eval_reshape(I, op, s, &in);
  case FU_OC_PERMUTE: return (st = take_operand(I, op, true, &s, &in)) ? st : eval_permute(I, op, s, &in);
  case FU_OC_SQUEEZE: return (st = take_operand(I, op, true, &s, &in)) ? st : eval_squeeze(I, op, s, &in);
  case FU_OC_SLICE: return (st = take_operand(I, op, true, &s, &in)) ? st : eval_slice(I, op, s, &in);
  case FU_OC_STRIDE_ORDER: /* the values: the layout is the kernels' (the interpreter's outputs are row-major) */
    if ((st = take_operand(I, op, true, &s, &in)) != FU_OK) return st;
    fu_interp_alias_result(I, op, 0, s, &in);
    return FU_OK;
  case FU_OC_META:
  case FU_OC_UNARY:
  case FU_OC_BINARY:
  case FU_OC_TERNARY:
  case FU_OC_CAST:
  case FU_OC_REDUCE:
  case FU_OC_VARIANCE:
  case FU_OC_MATMUL: break;
  case FU_OC_INDEX: break; /* index.c */
  case FU_OC_RNG: break;
  case FU_OC_SCAN: break; /* scan.c */
  case FU_OC_PARTIAL: break; /* partial.c */
  }
  return fu_interp_op_error(I, op, FU_ERR_UNSUPPORTED, "the interpreter does not implement this op");
}
