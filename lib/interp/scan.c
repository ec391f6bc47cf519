/* fuser: inclusive scans (cumsum, cumprod, cummax, cummin) in the
 * reference interpreter.
 *
 * Each line along the scanned dim is folded from its first element on, in
 * order, as a kernel that gives each line to one thread computes it: floats
 * in float for f32, f16 and bf16 (the element is rounded to the result
 * dtype when stored, the running value is not) and in double for f64; ints
 * and bools in int64, wrapping.  cummax and cummin propagate NaN, as
 * PyTorch's do: once a line meets a NaN, the rest of it is NaN. */
#include <math.h>
#include <string.h>

#include "interp_internal.h"

/* One fold step of the running value `a` with the element x.  For f32
 * operands the double result rounded to float is the float operation's
 * (double has more than 2 * 24 + 2 bits: one rounding after another is
 * exact for + and *). */
static double step_f(fu_op_kind k, double a, double x) {
  switch (k) {
  case FU_OP_CUMSUM: return a + x;
  case FU_OP_CUMPROD: return a * x;
  case FU_OP_CUMMAX: return isnan(a) || isnan(x) ? NAN : x > a ? x : a;
  default: return isnan(a) || isnan(x) ? NAN : x < a ? x : a;
  }
}

static int64_t step_i(fu_op_kind k, int64_t a, int64_t x) {
  switch (k) {
  case FU_OP_CUMSUM: return (int64_t)((uint64_t)a + (uint64_t)x);
  case FU_OP_CUMPROD: return (int64_t)((uint64_t)a * (uint64_t)x);
  case FU_OP_CUMMAX: return x > a ? x : a;
  default: return x < a ? x : a;
  }
}

/* Scan every line of `in` along dim into `out` (same shape): lines are
 * visited by a counter over the other dims; each is loaded whole into a
 * chunk, folded, and stored. */
static void scan_lines(fu_op_kind k, const fu_host_tensor *in, fu_host_tensor *out, int32_t dim) {
  int32_t rank = in->rank;
  int64_t n = in->shape[dim];
  for (int32_t d = 0; d < rank; d++)
    if (in->shape[d] == 0) return;
  fu_ck ck = fu_interp_ck(out->dtype);
  int64_t idx[FU_MAX_RANK] = {0};
  fu_chunk buf;
  for (;;) {
    int64_t ioff = 0, ooff = 0;
    for (int32_t d = 0; d < rank; d++) {
      ioff += idx[d] * in->strides[d];
      ooff += idx[d] * out->strides[d];
    }
    const char *ip = (const char *)in->data + ioff * (int64_t)fu_dtype_size(in->dtype);
    char *op = (char *)out->data + ooff * (int64_t)fu_dtype_size(out->dtype);
    double af = 0;
    float a32 = 0;
    int64_t ai = 0;
    for (int64_t j = 0; j < n; j += FU_INTERP_CHUNK) {
      size_t m = (size_t)(n - j < FU_INTERP_CHUNK ? n - j : FU_INTERP_CHUNK);
      fu_interp_load(in->dtype, ip + j * in->strides[dim] * (int64_t)fu_dtype_size(in->dtype), in->strides[dim], m,
                     ck, &buf);
      for (size_t e = 0; e < m; e++) {
        bool first = j == 0 && e == 0;
        if (ck == FU_CK_F64) buf.f64[e] = af = first ? buf.f64[e] : step_f(k, af, buf.f64[e]);
        else if (ck == FU_CK_F32) buf.f32[e] = a32 = first ? buf.f32[e] : (float)step_f(k, a32, buf.f32[e]);
        else buf.i64[e] = ai = first ? buf.i64[e] : step_i(k, ai, buf.i64[e]);
      }
      fu_interp_store(out->dtype, op + j * out->strides[dim] * (int64_t)fu_dtype_size(out->dtype), out->strides[dim],
                      m, ck, &buf);
    }
    int32_t d = rank - 1;
    for (; d >= 0; d--) {
      if (d == dim) continue;
      if (++idx[d] < in->shape[d]) break;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

fu_status fu_interp_eval_scan(fu_interp *I, fu_op *op) {
  fu_host_tensor x;
  fu_status st = fu_interp_operand_tensor(I, op, 0, &x);
  if (st != FU_OK) return st;
  int32_t dim = (int32_t)op->u.scan.dim;
  if (dim < 0 || dim >= x.rank) return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "dim %d is out of range", (int)dim);
  fu_host_tensor *out;
  if ((st = fu_interp_check_shape(I, op, 0, x.rank, x.shape)) != FU_OK ||
      (st = fu_interp_alloc_result(I, op, 0, x.shape, &out)) != FU_OK)
    return st;
  /* an int or bool operand of an i64 result loads and stores as int64, as
   * a float one as its result's kind: one walk for every dtype pair */
  scan_lines(op->kind, &x, out, dim);
  return FU_OK;
}
