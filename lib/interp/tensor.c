/* fuser: host tensors (strided views over host memory), fusion arguments,
 * and element-wise comparison of results. */
#include <math.h>
#include <string.h>

#include "interp_internal.h"

bool fu_contiguous_strides(int32_t rank, const int64_t *shape, int64_t *strides) {
  int64_t s = 1;
  for (int32_t d = rank - 1; d >= 0; d--) {
    strides[d] = s;
    if (shape[d] > 1 && s > INT64_MAX / shape[d]) return false;
    if (shape[d] > 0) s *= shape[d];
  }
  return true;
}

/* Elements spanned by a strided layout (0 when any extent is 0); -1 on
 * overflow.  Rejects negative extents or strides. */
static int64_t span_elems(int32_t rank, const int64_t *shape, const int64_t *strides) {
  int64_t span = 1;
  for (int32_t d = 0; d < rank; d++) {
    if (shape[d] < 0 || strides[d] < 0) return -1;
    if (shape[d] == 0) return 0;
  }
  for (int32_t d = 0; d < rank; d++) {
    int64_t ext = shape[d] - 1;
    if (ext == 0 || strides[d] == 0) continue;
    if (ext > INT64_MAX / strides[d]) return -1;
    if (span > INT64_MAX - ext * strides[d]) return -1;
    span += ext * strides[d];
  }
  return span;
}

fu_status fu_host_tensor_alloc_strided(fu_host_tensor *t, fu_allocator alloc, fu_dtype dtype, int32_t rank,
                                       const int64_t *shape, const int64_t *strides) {
  memset(t, 0, sizeof *t);
  if (dtype <= FU_DT_NONE || dtype >= FU_DT_COUNT || rank < 0 || rank > FU_MAX_RANK) return FU_ERR_INVALID_ARG;
  for (int32_t d = 0; d < rank; d++)
    if (shape[d] < 0 || strides[d] < 0) return FU_ERR_INVALID_ARG;
  int64_t span = span_elems(rank, shape, strides);
  if (span < 0) return FU_ERR_NOMEM;
  size_t es = fu_dtype_size(dtype);
  if ((uint64_t)span > SIZE_MAX / es) return FU_ERR_NOMEM;
  size_t bytes = (size_t)span * es;
  void *p = fu_mem_calloc(&alloc, bytes ? bytes : 1, 1);
  if (!p) return FU_ERR_NOMEM;
  t->dtype = dtype;
  t->rank = rank;
  for (int32_t d = 0; d < rank; d++) {
    t->shape[d] = shape[d];
    t->strides[d] = strides[d];
  }
  t->data = p;
  t->owned = p;
  t->nbytes = bytes ? bytes : 1;
  t->alloc = alloc;
  return FU_OK;
}

fu_status fu_host_tensor_alloc(fu_host_tensor *t, fu_allocator alloc, fu_dtype dtype, int32_t rank,
                               const int64_t *shape) {
  int64_t strides[FU_MAX_RANK];
  memset(t, 0, sizeof *t);
  if (rank < 0 || rank > FU_MAX_RANK) return FU_ERR_INVALID_ARG;
  for (int32_t d = 0; d < rank; d++)
    if (shape[d] < 0) return FU_ERR_INVALID_ARG;
  if (!fu_contiguous_strides(rank, shape, strides)) return FU_ERR_NOMEM;
  return fu_host_tensor_alloc_strided(t, alloc, dtype, rank, shape, strides);
}

void fu_host_tensor_free(fu_host_tensor *t) {
  if (!t) return;
  if (t->owned) fu_mem_free(&t->alloc, t->owned, t->nbytes);
  memset(t, 0, sizeof *t);
}

int64_t fu_host_tensor_numel(const fu_host_tensor *t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->rank; d++) {
    if (t->shape[d] == 0) return 0;
  }
  for (int32_t d = 0; d < t->rank; d++) {
    if (t->shape[d] < 0 || (t->shape[d] > 0 && n > INT64_MAX / t->shape[d])) return -1;
    n *= t->shape[d];
  }
  return n;
}

bool fu_host_tensor_is_contiguous(const fu_host_tensor *t) {
  int64_t s = 1;
  for (int32_t d = t->rank - 1; d >= 0; d--) {
    if (t->shape[d] == 0) return true;
    if (t->shape[d] == 1) continue;
    if (t->strides[d] != s) return false;
    s *= t->shape[d];
  }
  return true;
}

void *fu_host_tensor_ptr(const fu_host_tensor *t, const int64_t *idx) {
  int64_t off = 0;
  for (int32_t d = 0; d < t->rank; d++) off += idx[d] * t->strides[d];
  return (char *)t->data + (size_t)off * fu_dtype_size(t->dtype);
}

int64_t fu_interp_flat_offset(const fu_host_tensor *t, int64_t i) {
  int64_t off = 0;
  for (int32_t d = t->rank - 1; d >= 0; d--) {
    int64_t n = t->shape[d];
    if (n <= 0) return 0;
    off += (i % n) * t->strides[d];
    i /= n;
  }
  return off;
}

/* Element accessors go through the row converters with n = 1, so they
 * convert exactly as the interpreter does. */
static double get_at(const fu_host_tensor *t, int64_t off) {
  double v;
  fu_interp_load(t->dtype, (const char *)t->data + (size_t)off * fu_dtype_size(t->dtype), 0, 1, FU_CK_F64, &v);
  return v;
}

static int64_t get_at_i(const fu_host_tensor *t, int64_t off) {
  int64_t v;
  fu_interp_load(t->dtype, (const char *)t->data + (size_t)off * fu_dtype_size(t->dtype), 0, 1, FU_CK_I64, &v);
  return v;
}

static void set_at(fu_host_tensor *t, int64_t off, double v) {
  fu_interp_store(t->dtype, (char *)t->data + (size_t)off * fu_dtype_size(t->dtype), 0, 1, FU_CK_F64, &v);
}

static int64_t offset_of(const fu_host_tensor *t, const int64_t *idx) {
  int64_t off = 0;
  for (int32_t d = 0; d < t->rank; d++) off += idx[d] * t->strides[d];
  return off;
}

double fu_host_tensor_get(const fu_host_tensor *t, const int64_t *idx) { return get_at(t, offset_of(t, idx)); }
void fu_host_tensor_set(fu_host_tensor *t, const int64_t *idx, double v) { set_at(t, offset_of(t, idx), v); }
int64_t fu_host_tensor_get_i64(const fu_host_tensor *t, const int64_t *idx) {
  return get_at_i(t, offset_of(t, idx));
}
void fu_host_tensor_set_i64(fu_host_tensor *t, const int64_t *idx, int64_t v) {
  fu_interp_store(t->dtype, fu_host_tensor_ptr(t, idx), 0, 1, FU_CK_I64, &v);
}
double fu_host_tensor_get_flat(const fu_host_tensor *t, int64_t i) { return get_at(t, fu_interp_flat_offset(t, i)); }
void fu_host_tensor_set_flat(fu_host_tensor *t, int64_t i, double v) { set_at(t, fu_interp_flat_offset(t, i), v); }
int64_t fu_host_tensor_get_flat_i64(const fu_host_tensor *t, int64_t i) {
  return get_at_i(t, fu_interp_flat_offset(t, i));
}

/* A copy is the pointwise `set` with conversion on store: loading in the
 * source's kind keeps every value exact until the one rounding at the
 * store. */
fu_status fu_interp_copy_into(fu_host_tensor *dst, const fu_host_tensor *src, uint32_t threads) {
  if (dst->rank != src->rank) return FU_ERR_INVALID_ARG;
  for (int32_t d = 0; d < dst->rank; d++)
    if (dst->shape[d] != src->shape[d]) return FU_ERR_INVALID_ARG;
  fu_ck k = fu_interp_ck(src->dtype);
  /* i64 -> float stores from i64 directly; f64 -> f16 from double. */
  fu_pw_loop l = {FU_OP_SET, k, k, dst->dtype, 1, {src, NULL, NULL}, {k, k, k}, dst, threads};
  return fu_interp_pw_run(&l) == FU_PW_OK ? FU_OK : FU_ERR_RUNTIME;
}

fu_status fu_host_tensor_copy_into(fu_host_tensor *dst, const fu_host_tensor *src) {
  return fu_interp_copy_into(dst, src, 1);
}

fu_status fu_host_tensor_copy_contiguous(const fu_host_tensor *src, fu_allocator alloc, fu_host_tensor *dst) {
  fu_status st = fu_host_tensor_alloc(dst, alloc, src->dtype, src->rank, src->shape);
  if (st != FU_OK) return st;
  st = fu_host_tensor_copy_into(dst, src);
  if (st != FU_OK) fu_host_tensor_free(dst);
  return st;
}

/* ---- comparison --------------------------------------------------------- */

fu_status fu_host_tensor_compare(const fu_host_tensor *got, const fu_host_tensor *want, double rtol, double atol,
                                 fu_compare_result *out) {
  memset(out, 0, sizeof *out);
  out->first_mismatch = -1;
  if (got->rank != want->rank) return FU_ERR_INVALID_ARG;
  for (int32_t d = 0; d < got->rank; d++)
    if (got->shape[d] != want->shape[d]) return FU_ERR_INVALID_ARG;
  int64_t n = fu_host_tensor_numel(got);
  bool ints = !fu_dtype_is_float(got->dtype) && !fu_dtype_is_float(want->dtype);
  for (int64_t i = 0; i < n; i++) {
    bool bad;
    if (ints) {
      int64_t a = fu_host_tensor_get_flat_i64(got, i), b = fu_host_tensor_get_flat_i64(want, i);
      double err = fabs((double)a - (double)b);
      bad = a != b && err > atol + rtol * fabs((double)b);
      if (err > out->max_abs_err) out->max_abs_err = err;
    } else {
      double a = fu_host_tensor_get_flat(got, i), b = fu_host_tensor_get_flat(want, i);
      if (isnan(a) || isnan(b)) {
        bad = isnan(a) != isnan(b);
      } else if (isinf(a) || isinf(b)) {
        bad = a != b;
      } else {
        double err = fabs(a - b);
        double rel = b != 0 ? err / fabs(b) : (err != 0 ? INFINITY : 0);
        bad = err > atol + rtol * fabs(b);
        if (err > out->max_abs_err) out->max_abs_err = err;
        if (rel > out->max_rel_err) out->max_rel_err = rel;
      }
    }
    if (bad) {
      if (out->first_mismatch < 0) out->first_mismatch = i;
      out->n_mismatch++;
    }
  }
  return FU_OK;
}

/* ---- args --------------------------------------------------------------- */

fu_arg fu_arg_scalar_f(fu_dtype dtype, double v) {
  fu_arg a;
  memset(&a, 0, sizeof a);
  a.kind = FU_ARG_SCALAR;
  a.scalar_dtype = dtype;
  a.scalar.f = v;
  return a;
}

fu_arg fu_arg_scalar_i(fu_dtype dtype, int64_t v) {
  fu_arg a;
  memset(&a, 0, sizeof a);
  a.kind = FU_ARG_SCALAR;
  a.scalar_dtype = dtype;
  a.scalar.i = v;
  return a;
}

fu_arg fu_arg_scalar_b(bool v) {
  fu_arg a;
  memset(&a, 0, sizeof a);
  a.kind = FU_ARG_SCALAR;
  a.scalar_dtype = FU_DT_BOOL;
  a.scalar.b = v;
  return a;
}

fu_arg fu_arg_tensor(fu_host_tensor t) {
  fu_arg a;
  memset(&a, 0, sizeof a);
  a.kind = FU_ARG_TENSOR;
  a.tensor = t;
  return a;
}

double fu_arg_scalar_as_double(const fu_arg *a) {
  if (fu_dtype_is_float(a->scalar_dtype)) return a->scalar.f;
  if (fu_dtype_is_bool(a->scalar_dtype)) return a->scalar.b ? 1.0 : 0.0;
  return (double)a->scalar.i;
}

void fu_arg_free(fu_arg *a) {
  if (!a) return;
  if (a->kind == FU_ARG_TENSOR) fu_host_tensor_free(&a->tensor);
  memset(a, 0, sizeof *a);
}

void fu_args_free(fu_arg *args, uint32_t n, fu_allocator alloc) {
  if (!args) return;
  for (uint32_t i = 0; i < n; i++) fu_arg_free(&args[i]);
  fu_mem_free(&alloc, args, (size_t)(n ? n : 1) * sizeof *args); /* arrays hold at least one entry */
}
