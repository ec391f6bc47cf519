/* fuser: a matmul segment's plan run on the CPU, as cuBLASLt runs it on the
 * GPU: D = act(alpha * A B + bias) with the product accumulated (in f64
 * here), the epilogue in double, and one rounding to D's dtype.  The
 * kernel-IR path (fuser-run --device=kir) runs matmul segments through it,
 * so --check there compares the plan (its epilogue, its bias, its alpha)
 * with the reference interpreter's op-by-op result. */
#include <math.h>
#include <string.h>

#include "fuser/gemm.h"
#include "fuser/kir_interp.h"
#include "interp_internal.h"

static double act(fu_gemm_act a, double x) {
  switch (a) {
  case FU_GEMM_ACT_NONE: return x;
  case FU_GEMM_ACT_RELU: return x > 0 ? x : 0;
  case FU_GEMM_ACT_GELU: return 0.5 * x * (1.0 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
  }
  return x;
}

fu_status fu_interp_gemm_run(const fu_op *seg, const fu_host_tensor *a, const fu_host_tensor *b,
                             const fu_host_tensor *bias, fu_host_tensor *d, fu_allocator alloc) {
  const fu_gemm *g = seg->u.segment.gemm;
  const fu_op *mm = fu_gemm_product(seg);
  if (!g || !mm) return FU_ERR_INVALID_ARG;
  fu_host_tensor p;
  fu_status st = fu_host_tensor_alloc(&p, alloc, FU_DT_F64, d->rank, d->shape);
  if (st != FU_OK) return st;
  st = fu_interp_matmul_compute(mm, a, b, NULL, false, &p, alloc, 1);
  int64_t n = fu_host_tensor_numel(&p), nn = d->rank >= 1 ? d->shape[d->rank - 1] : 1;
  double *pv = p.data;
  int64_t idx[FU_MAX_RANK] = {0};
  for (int64_t i = 0; i < n && st == FU_OK; i++) {
    double y = g->alpha * pv[i];
    if (bias) {
      int64_t j = nn ? i % nn : 0;
      int64_t bi[FU_MAX_RANK] = {0};
      if (bias->rank >= 1 && bias->shape[bias->rank - 1] != 1) bi[bias->rank - 1] = j;
      y += fu_host_tensor_get(bias, bi);
    }
    fu_host_tensor_set(d, idx, act(g->act, y));
    for (int32_t k = d->rank - 1; k >= 0; k--) {
      if (++idx[k] < d->shape[k]) break;
      idx[k] = 0;
    }
  }
  fu_host_tensor_free(&p);
  return st;
}
