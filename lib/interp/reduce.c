/* fuser: reductions (sum, prod, max, min, var, var_mean).
 *
 * The input is walked once per pass in its own row-major order and each
 * element is folded into the accumulator of the output element it belongs
 * to ("scatter-accumulate").  This handles any set of axes with one loop,
 * reads the input sequentially, and folds each output's elements in
 * row-major order, like a straightforward nested loop would.  Float
 * reductions accumulate in double; int and bool ones in int64 (wrapping). */
#include <math.h>
#include <string.h>

#include "interp_internal.h"

typedef enum pass_mode { P_SUM, P_PROD, P_MAX, P_MIN, P_M2, P_ABS, P_SQ } pass_mode;

typedef struct red_ctx {
  const fu_host_tensor *in;
  int64_t ostr[FU_MAX_RANK]; /* accumulator stride per input dim (0 when reduced) */
  fu_ck kind;
  void *acc;
  const double *mean; /* P_M2 */
} red_ctx;

static void fold_f(pass_mode m, double *acc, int64_t os, const double *v, size_t n, const double *mean) {
  for (size_t j = 0; j < n; j++) {
    double *a = &acc[(int64_t)j * os];
    double x = v[j];
    switch (m) {
    case P_SUM: *a += x; break;
    case P_PROD: *a *= x; break;
    case P_MAX: /* -0 below +0, as the kernels' max (lib/interp/pw_float.inc) */
      if (isnan(x) || isnan(*a))
        *a = NAN;
      else if (x > *a || (x == *a && !signbit(x)))
        *a = x;
      break;
    case P_MIN:
      if (isnan(x) || isnan(*a))
        *a = NAN;
      else if (x < *a || (x == *a && signbit(x)))
        *a = x;
      break;
    case P_M2: {
      double d = x - mean[(int64_t)j * os];
      *a += d * d;
      break;
    }
    case P_ABS: *a += fabs(x); break;
    case P_SQ: *a += x * x; break;
    }
  }
}

static void fold_i(pass_mode m, int64_t *acc, int64_t os, const int64_t *v, size_t n) {
  for (size_t j = 0; j < n; j++) {
    int64_t *a = &acc[(int64_t)j * os];
    int64_t x = v[j];
    switch (m) {
    case P_SUM: *a = (int64_t)((uint64_t)*a + (uint64_t)x); break;
    case P_PROD: *a = (int64_t)((uint64_t)*a * (uint64_t)x); break;
    case P_MAX:
      if (x > *a) *a = x;
      break;
    case P_MIN:
      if (x < *a) *a = x;
      break;
    case P_M2:
    case P_ABS:
    case P_SQ: break;
    }
  }
}

/* One pass over the input; rows are the innermost dim, in chunks. */
static void run_pass(const red_ctx *c, pass_mode m) {
  const fu_host_tensor *in = c->in;
  int rank = in->rank;
  for (int d = 0; d < rank; d++)
    if (in->shape[d] == 0) return;
  int64_t row = rank ? in->shape[rank - 1] : 1;
  int64_t is = rank ? in->strides[rank - 1] : 0;
  int64_t os = rank ? c->ostr[rank - 1] : 0;
  int outer = rank ? rank - 1 : 0;
  size_t es = fu_dtype_size(in->dtype);
  fu_chunk buf;
  int64_t idx[FU_MAX_RANK] = {0};
  /* Reading the acc base through pointers of the right type. */
  double *accf = c->acc;
  int64_t *acci = c->acc;
  for (;;) {
    int64_t ioff = 0, aoff = 0;
    for (int d = 0; d < outer; d++) {
      ioff += idx[d] * in->strides[d];
      aoff += idx[d] * c->ostr[d];
    }
    for (int64_t j = 0; j < row; j += FU_INTERP_CHUNK) {
      size_t n = (size_t)(row - j < FU_INTERP_CHUNK ? row - j : FU_INTERP_CHUNK);
      const char *p = (const char *)in->data + (size_t)(ioff + j * is) * es;
      fu_interp_load(in->dtype, p, is, n, c->kind, &buf);
      if (c->kind == FU_CK_F64)
        fold_f(m, accf + aoff + j * os, os, buf.f64, n, c->mean ? c->mean + aoff + j * os : NULL);
      else
        fold_i(m, acci + aoff + j * os, os, buf.i64, n);
    }
    int d = outer - 1;
    while (d >= 0 && ++idx[d] == in->shape[d]) idx[d--] = 0;
    if (d < 0) break;
  }
}

/* A pass split over threads: each part takes a range of one kept dim,
 * whose output elements are its alone, and folds them in the same order
 * as the whole pass does. */
typedef struct red_par {
  const red_ctx *c;
  pass_mode m;
  int dim;
} red_par;

static void red_part(void *ctx, uint32_t part, int64_t lo, int64_t hi) {
  const red_par *P = ctx;
  red_ctx sub = *P->c;
  fu_host_tensor in = *P->c->in;
  int d = P->dim;
  in.shape[d] = hi - lo;
  in.data = (char *)in.data + (size_t)(lo * in.strides[d]) * fu_dtype_size(in.dtype);
  sub.in = &in;
  sub.acc = (char *)sub.acc + (size_t)(lo * sub.ostr[d]) * 8;
  if (sub.mean) sub.mean += lo * sub.ostr[d];
  run_pass(&sub, P->m);
}

/* run_pass on `threads` threads, split along the kept dim of largest
 * extent (the outermost of equals). */
static void run_pass_par(const red_ctx *c, pass_mode m, uint32_t threads) {
  const fu_host_tensor *in = c->in;
  int dim = -1;
  for (int d = 0; d < in->rank; d++)
    if (c->ostr[d] != 0 && (dim < 0 || in->shape[d] > in->shape[dim])) dim = d;
  int64_t numel = fu_host_tensor_numel(in);
  if (threads <= 1 || dim < 0 || numel <= 0) {
    run_pass(c, m);
    return;
  }
  int64_t per = numel / in->shape[dim];
  red_par P = {c, m, dim};
  fu_interp_parallel(threads, in->shape[dim], FU_INTERP_GRAIN / per + 1, red_part, &P);
}

static void fill(fu_ck kind, void *acc, int64_t n, double f, int64_t i) {
  for (int64_t j = 0; j < n; j++) {
    if (kind == FU_CK_F64)
      ((double *)acc)[j] = f;
    else
      ((int64_t *)acc)[j] = i;
  }
}

fu_status fu_interp_reduce(fu_op_kind k, const fu_host_tensor *in, const bool *reduce, int64_t correction,
                           fu_host_tensor *out, fu_host_tensor *out2, fu_allocator alloc, uint32_t threads,
                           const char **why) {
  *why = NULL;
  bool variance = k == FU_OP_VAR || k == FU_OP_VAR_MEAN;
  red_ctx c;
  memset(&c, 0, sizeof c);
  c.in = in;
  c.kind = variance || fu_dtype_is_float(out->dtype) ? FU_CK_F64 : FU_CK_I64;
  bool keep = out->rank == in->rank;
  int j = 0;
  int64_t count = 1;
  for (int d = 0; d < in->rank; d++) {
    if (reduce[d]) {
      c.ostr[d] = 0;
      count *= in->shape[d];
      if (keep) j++;
    } else {
      c.ostr[d] = out->strides[j++];
    }
  }
  int64_t n_out = fu_host_tensor_numel(out);
  if (n_out == 0) return FU_OK;
  if ((k == FU_OP_MAX || k == FU_OP_MIN) && count == 0) {
    *why = "reduction over zero elements has no identity";
    return FU_ERR_RUNTIME;
  }
  size_t bytes = (size_t)n_out * 8;
  void *acc = fu_mem_calloc(&alloc, (size_t)n_out, 8);
  double *mean = variance ? fu_mem_calloc(&alloc, (size_t)n_out, sizeof(double)) : NULL;
  if (!acc || (variance && !mean)) {
    fu_mem_free(&alloc, acc, bytes);
    fu_mem_free(&alloc, mean, bytes);
    *why = "out of memory for the accumulators";
    return FU_ERR_NOMEM;
  }
  c.acc = acc;
  switch (k) {
  case FU_OP_SUM: run_pass_par(&c, P_SUM, threads); break;
  case FU_OP_PROD:
    fill(c.kind, acc, n_out, 1.0, 1);
    run_pass_par(&c, P_PROD, threads);
    break;
  case FU_OP_MAX:
    fill(c.kind, acc, n_out, -INFINITY, INT64_MIN);
    run_pass_par(&c, P_MAX, threads);
    break;
  case FU_OP_MIN:
    fill(c.kind, acc, n_out, INFINITY, INT64_MAX);
    run_pass_par(&c, P_MIN, threads);
    break;
  default: {
    /* Two passes: the mean, then the sum of squared deviations from it. */
    double *a = acc;
    run_pass_par(&c, P_SUM, threads);
    for (int64_t i = 0; i < n_out; i++) {
      mean[i] = a[i] / (double)count;
      a[i] = 0;
    }
    c.mean = mean;
    run_pass_par(&c, P_M2, threads);
    double denom = (double)count - (double)correction;
    if (denom < 0) denom = 0;
    for (int64_t i = 0; i < n_out; i++) a[i] = a[i] / denom; /* 0/0 is NaN, x/0 inf, as PyTorch */
    break;
  }
  }
  fu_interp_store(out->dtype, out->data, 1, (size_t)n_out, c.kind, acc);
  if (k == FU_OP_VAR_MEAN && out2) fu_interp_store(out2->dtype, out2->data, 1, (size_t)n_out, FU_CK_F64, mean);
  fu_mem_free(&alloc, acc, bytes);
  fu_mem_free(&alloc, mean, bytes);
  return FU_OK;
}

/* The magnitude of a reduction's terms, which bounds its rounding error
 * (error_scale.c): the same walk as the reduction, in f64 whatever the
 * dtype, into the f64 tensor `out` laid out as fu_interp_reduce's. */
void fu_interp_reduce_magnitude(bool squares, const fu_host_tensor *in, const bool *reduce, fu_host_tensor *out,
                                uint32_t threads) {
  red_ctx c;
  memset(&c, 0, sizeof c);
  c.in = in;
  c.kind = FU_CK_F64;
  c.acc = out->data;
  for (int d = 0, j = 0; d < in->rank; d++) {
    if (!reduce[d] || out->rank == in->rank) j++;
    c.ostr[d] = reduce[d] ? 0 : out->strides[j - 1];
  }
  run_pass_par(&c, squares ? P_SQ : P_ABS, threads);
}
