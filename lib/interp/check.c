/* fuser: comparing kernel results (GPU or kernel-IR interpreter) with the
 * reference interpreter's (include/fuser/check.h).
 *
 * Works on the raw element bits, not on values converted to double, so
 * that the 0xFF poison the executor fills outputs with is recognised: an
 * all-ones float is a NaN, and a NaN in the result passes only where the
 * reference has a NaN too and the bits are not the poison. */
#include <math.h>
#include <string.h>

#include "fuser/check.h"
#include "interp_internal.h"

fu_check_tolerance fu_check_default_tolerance(fu_dtype dt) {
  fu_check_tolerance t = {0, 0};
  switch (dt) {
  case FU_DT_F64: t.rtol = 1e-12; t.atol = 1e-12; break;
  case FU_DT_F32: t.rtol = 1e-5; t.atol = 1e-6; break;
  /* One rounding of an f16 (bf16) result flips at most 2^-10 (2^-7)
   * relative; fused kernels may keep intermediates wider than the
   * interpreter, which rounds after every op, so allow about two. */
  case FU_DT_F16: t.rtol = 2e-3; t.atol = 1e-3; break;
  case FU_DT_BF16: t.rtol = 1.6e-2; t.atol = 1e-2; break;
  default: break;
  }
  return t;
}

/* The element at byte offset `off` as a double, and whether its bits are
 * all ones. */
static double load(fu_dtype dt, const unsigned char *p, bool *poison, int64_t *ival) {
  *ival = 0;
  switch (dt) {
  case FU_DT_F64: {
    uint64_t b;
    double v;
    memcpy(&b, p, 8);
    memcpy(&v, p, 8);
    *poison = b == UINT64_MAX;
    return v;
  }
  case FU_DT_F32: {
    uint32_t b;
    float v;
    memcpy(&b, p, 4);
    memcpy(&v, p, 4);
    *poison = b == UINT32_MAX;
    return v;
  }
  case FU_DT_F16:
  case FU_DT_BF16: {
    uint16_t b;
    memcpy(&b, p, 2);
    *poison = b == UINT16_MAX;
    return dt == FU_DT_F16 ? fu_f16_to_double(b) : fu_bf16_to_double(b);
  }
  case FU_DT_I64: {
    int64_t v;
    memcpy(&v, p, 8);
    *poison = v == -1;
    *ival = v;
    return (double)v;
  }
  case FU_DT_I32: {
    int32_t v;
    memcpy(&v, p, 4);
    *poison = v == -1;
    *ival = v;
    return (double)v;
  }
  case FU_DT_BOOL:
    *poison = p[0] == 0xFF;
    *ival = p[0];
    return (double)p[0];
  default: *poison = false; return 0;
  }
}

fu_status fu_check_compare(const fu_host_tensor *got, const fu_host_tensor *want, fu_check_tolerance tol,
                           fu_check_result *out) {
  return fu_check_compare_bounded(got, want, NULL, tol, out);
}

/* The bound's element of logical index idx: 0 without one, NaN counted. */
static double bound_at(const fu_host_tensor *bound, const int64_t *idx, fu_check_result *out) {
  if (!bound) return 0;
  double b = fu_host_tensor_get(bound, idx);
  if (isnan(b)) {
    out->n_unscaled++;
    return 0;
  }
  return b;
}

/* What the parts of one comparison share. */
typedef struct cmp_job {
  const fu_host_tensor *got, *want, *bound;
  fu_check_tolerance tol;
  fu_check_result part[FU_INTERP_MAX_THREADS];
} cmp_job;

/* Elements [lo, hi) in row-major order into the part's result. */
static void compare_part(void *ctx, uint32_t part, int64_t lo, int64_t hi) {
  cmp_job *J = ctx;
  const fu_host_tensor *got = J->got, *want = J->want, *bound = J->bound;
  fu_check_tolerance tol = J->tol;
  fu_check_result *out = &J->part[part];
  out->first_mismatch = -1;
  out->bounded = bound && fu_dtype_is_float(got->dtype);
  fu_dtype dt = got->dtype;
  size_t es = fu_dtype_size(dt);
  bool is_float = fu_dtype_is_float(dt);
  int64_t idx[FU_MAX_RANK] = {0};
  if (lo >= hi) return; /* also no element to find the coordinates of */
  int64_t r = lo;
  for (int32_t d = got->rank - 1; d >= 0; d--) {
    idx[d] = r % got->shape[d];
    r /= got->shape[d];
  }
  for (int64_t i = lo; i < hi; i++) {
    int64_t og = 0, ow = 0;
    for (int32_t d = 0; d < got->rank; d++) {
      og += idx[d] * got->strides[d];
      ow += idx[d] * want->strides[d];
    }
    bool gp, wp;
    int64_t gi, wi;
    double g = load(dt, (const unsigned char *)got->data + og * (int64_t)es, &gp, &gi);
    double w = load(dt, (const unsigned char *)want->data + ow * (int64_t)es, &wp, &wi);
    bool bad;
    if (is_float) {
      if (gp) {
        bad = true;
      } else if (isnan(w) || isnan(g)) {
        bad = !(isnan(w) && isnan(g));
      } else if (isinf(w) || isinf(g)) {
        bad = g != w;
      } else {
        double err = fabs(g - w);
        double b = out->bounded ? bound_at(bound, idx, out) : 0;
        bad = err > tol.atol + tol.rtol * fabs(w) + b;
        if (b > 0 && err / b > out->max_bound_ratio) out->max_bound_ratio = err / b;
        if (err > out->max_abs_err) out->max_abs_err = err;
        if (w != 0 && err / fabs(w) > out->max_rel_err) out->max_rel_err = err / fabs(w);
      }
    } else {
      bad = gi != wi || (dt == FU_DT_BOOL && gi > 1);
      double err = fabs((double)gi - (double)wi);
      if (err > out->max_abs_err) out->max_abs_err = err;
      if (wi != 0 && err / fabs((double)wi) > out->max_rel_err) out->max_rel_err = err / fabs((double)wi);
    }
    if (bad) {
      if (gp) out->n_poison++;
      if (out->n_mismatch++ == 0) {
        out->first_mismatch = i;
        out->got_first = g;
        out->want_first = w;
      }
    }
    for (int32_t d = got->rank - 1; d >= 0; d--) {
      if (++idx[d] < got->shape[d]) break;
      idx[d] = 0;
    }
  }
}

fu_status fu_check_compare_bounded(const fu_host_tensor *got, const fu_host_tensor *want,
                                   const fu_host_tensor *bound, fu_check_tolerance tol, fu_check_result *out) {
  return fu_check_compare_threads(got, want, bound, tol, 1, out);
}

fu_status fu_check_compare_threads(const fu_host_tensor *got, const fu_host_tensor *want,
                                   const fu_host_tensor *bound, fu_check_tolerance tol, uint32_t threads,
                                   fu_check_result *out) {
  memset(out, 0, sizeof *out);
  out->first_mismatch = -1;
  if (got->dtype != want->dtype || got->rank != want->rank) return FU_ERR_INVALID_ARG;
  for (int32_t d = 0; d < got->rank; d++)
    if (got->shape[d] != want->shape[d] || (bound && bound->shape[d] != got->shape[d])) return FU_ERR_INVALID_ARG;
  if (bound && (bound->dtype != FU_DT_F64 || bound->rank != got->rank)) return FU_ERR_INVALID_ARG;
  out->bounded = bound && fu_dtype_is_float(got->dtype);
  int64_t n = fu_host_tensor_numel(got);
  if (n < 0) return FU_ERR_INVALID_ARG;
  out->n_elements = n;
  cmp_job J = {.got = got, .want = want, .bound = bound, .tol = tol};
  uint32_t parts = fu_interp_par_parts(threads, n, FU_INTERP_GRAIN);
  fu_interp_parallel(parts, n, FU_INTERP_GRAIN, compare_part, &J);
  /* parts in order: the first mismatch is the first part's that has one */
  for (uint32_t p = 0; p < parts; p++) {
    const fu_check_result *r = &J.part[p];
    if (r->n_mismatch && out->n_mismatch == 0) {
      out->first_mismatch = r->first_mismatch;
      out->got_first = r->got_first;
      out->want_first = r->want_first;
    }
    out->n_mismatch += r->n_mismatch;
    out->n_poison += r->n_poison;
    out->n_unscaled += r->n_unscaled;
    if (r->max_abs_err > out->max_abs_err) out->max_abs_err = r->max_abs_err;
    if (r->max_rel_err > out->max_rel_err) out->max_rel_err = r->max_rel_err;
    if (r->max_bound_ratio > out->max_bound_ratio) out->max_bound_ratio = r->max_bound_ratio;
  }
  return FU_OK;
}
