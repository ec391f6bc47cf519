/* fuser runtime: a matmul segment's cuBLASLt call from the views of its
 * operands (host only, no GPU: fu_rt_gemm_from_views in fuser/runtime.h).
 *
 * The product is row-major D[M, N] = A[M, K] B[K, N] per batch.  A matrix
 * whose last dim has stride 1 is row-major with its leading dim the stride
 * of the other; one whose second-last dim has stride 1 is column-major; a
 * dim of extent 1 lets either hold.  cuBLASLt is column-major: a row-major
 * [R, C] matrix is the column-major [C, R] one with the same leading dim,
 * so D^T = B^T A^T is computed with cuBLASLt's A = our B and B = our A,
 * each transposed exactly when it is column-major in our terms. */
#include <string.h>

#include "internal.h"

typedef struct mat {
  bool col;    /* column-major in the product's terms */
  int64_t ld;
} mat;

/* Dims r (rows) and c (cols) of a view, with extents R and C. */
static bool matrix(int64_t R, int64_t C, int64_t sr, int64_t sc, mat *m) {
  if (sc == 1 || C == 1) {
    m->col = false;
    m->ld = R == 1 ? (C > 0 ? C : 1) : sr;
    if (m->ld < C) m->ld = C;
    return R <= 1 || sr >= C;
  }
  if (sr == 1 || R == 1) {
    m->col = true;
    m->ld = C == 1 ? (R > 0 ? R : 1) : sc;
    if (m->ld < R) m->ld = R;
    return C <= 1 || sc >= R;
  }
  return false;
}

/* One stride for the batch dims (out's extents, the operand's strides
 * right-aligned, 0 where it broadcasts): false when they do not flatten. */
static bool batch_stride(int32_t nb, const int64_t *ext, const int64_t *str, int64_t *out) {
  int64_t inner = -1, inner_ext = 1;
  *out = 0;
  for (int32_t d = nb - 1; d >= 0; d--) {
    if (ext[d] == 1) continue;
    if (inner < 0) {
      inner = str[d];
      *out = str[d];
    } else if (str[d] != inner * inner_ext) {
      return false;
    }
    inner = inner < 0 ? str[d] : inner;
    inner_ext *= ext[d];
  }
  return true;
}

static bool supported_dtypes(fu_dtype ab, fu_dtype d) {
  if (ab == FU_DT_F32) return d == FU_DT_F32;
  if (ab == FU_DT_BF16) return d == FU_DT_BF16 || d == FU_DT_F32;
  if (ab == FU_DT_F16) return d == FU_DT_F16 || d == FU_DT_F32;
  return false;
}

bool fu_rt_gemm_from_views(fu_op_kind k, const fu_rt_view *a, const fu_rt_view *b, const fu_rt_view *bias,
                           const fu_rt_view *d, fu_rt_gemm *out, fu_strbuf *why) {
  memset(out, 0, sizeof *out);
  out->buf_a = a->buffer;
  out->buf_b = b->buffer;
  out->buf_d = d->buffer;
  out->buf_bias = bias ? bias->buffer : -1;
  out->ab_dtype = a->dtype;
  out->d_dtype = d->dtype;
  out->bias_dtype = bias ? bias->dtype : FU_DT_NONE;
  out->alpha = 1.0f;
  if (a->rank < 1 || b->rank < 1) {
    fu_strbuf_puts(why, "an operand has rank 0");
    return false;
  }
  if (a->dtype != b->dtype || !supported_dtypes(a->dtype, d->dtype)) {
    fu_strbuf_printf(why, "cuBLASLt does not compute %s x %s -> %s here (f32 -> f32, bf16 or f16 -> itself or f32)",
                     fu_dtype_name(a->dtype), fu_dtype_name(b->dtype), fu_dtype_name(d->dtype));
    return false;
  }
  int32_t ra = a->rank, rb = b->rank;
  int64_t M, N, K;
  mat ma, mb;
  int64_t sa = 0, sb = 0, batch = 1;
  if (k == FU_OP_LINEAR) {
    /* x[..., K]: the leading dims are M rows, one stride apart */
    K = a->shape[ra - 1];
    M = 1;
    int64_t row = K;
    int64_t ext[FU_MAX_RANK], str[FU_MAX_RANK];
    for (int32_t i = 0; i + 1 < ra; i++) {
      ext[i] = a->shape[i];
      str[i] = a->strides[i];
      M *= a->shape[i];
    }
    if (ra >= 2 && !batch_stride(ra - 1, ext, str, &row)) {
      fu_strbuf_puts(why, "the input's leading dims do not flatten into rows of one stride");
      return false;
    }
    if (!matrix(M, K, M > 1 ? row : K, a->strides[ra - 1], &ma)) {
      fu_strbuf_puts(why, "the input has no dim of stride 1 among its last two");
      return false;
    }
    /* the weight [N, K] is B[K, N] with the strides swapped */
    N = rb == 2 ? b->shape[0] : 1;
    int64_t sk = b->strides[rb - 1], sn = rb == 2 ? b->strides[0] : 0;
    if (!matrix(K, N, sk, sn, &mb)) {
      fu_strbuf_puts(why, "the weight has no dim of stride 1");
      return false;
    }
  } else {
    M = ra >= 2 ? a->shape[ra - 2] : 1;
    K = a->shape[ra - 1];
    N = rb >= 2 ? b->shape[rb - 1] : 1;
    int64_t s_am = ra >= 2 ? a->strides[ra - 2] : 0, s_bn = rb >= 2 ? b->strides[rb - 1] : 0;
    int64_t s_bk = rb >= 2 ? b->strides[rb - 2] : b->strides[0];
    if (!matrix(M, K, s_am, a->strides[ra - 1], &ma) || !matrix(K, N, s_bk, s_bn, &mb)) {
      fu_strbuf_puts(why, "an operand has no dim of stride 1 among its last two");
      return false;
    }
    int32_t ba = ra >= 2 ? ra - 2 : 0, bb = rb >= 2 ? rb - 2 : 0;
    int32_t nb = ba > bb ? ba : bb;
    int64_t ext[FU_MAX_RANK], stra[FU_MAX_RANK], strb[FU_MAX_RANK];
    for (int32_t i = 0; i < nb; i++) {
      int32_t ja = i - (nb - ba), jb = i - (nb - bb);
      int64_t ea = ja >= 0 ? a->shape[ja] : 1, eb = jb >= 0 ? b->shape[jb] : 1;
      ext[i] = ea == 1 ? eb : ea;
      stra[i] = ja >= 0 && ea != 1 ? a->strides[ja] : 0;
      strb[i] = jb >= 0 && eb != 1 ? b->strides[jb] : 0;
      batch *= ext[i];
    }
    if (!batch_stride(nb, ext, stra, &sa) || !batch_stride(nb, ext, strb, &sb)) {
      fu_strbuf_puts(why, "the batch dims do not flatten into one batch of one stride per operand");
      return false;
    }
  }
  /* D: dense row-major [batch, M, N] */
  int64_t expect = 1;
  for (int32_t i = d->rank - 1; i >= 0; i--) {
    if (d->shape[i] != 1 && d->strides[i] != expect) {
      fu_strbuf_puts(why, "the result is not dense row-major");
      return false;
    }
    expect *= d->shape[i];
  }
  if (bias) {
    for (int32_t i = 0; i < bias->rank; i++) {
      bool last = i == bias->rank - 1;
      bool ok = bias->shape[i] == 1 || (last ? bias->strides[i] == 1 && bias->shape[i] == N : bias->strides[i] == 0);
      if (!ok) {
        fu_strbuf_printf(why, "the bias is not a contiguous vector of the %lld outputs", (long long)N);
        return false;
      }
    }
    if (bias->dtype != d->dtype && bias->dtype != FU_DT_F32) {
      fu_strbuf_printf(why, "a %s bias with a %s result", fu_dtype_name(bias->dtype), fu_dtype_name(d->dtype));
      return false;
    }
  }
  if (K == 0) {
    fu_strbuf_puts(why, "the contracted extent is 0");
    return false;
  }
  out->m = N;
  out->n = M;
  out->k = K;
  out->trans_a = mb.col;
  out->lda = mb.ld;
  out->trans_b = ma.col;
  out->ldb = ma.ld;
  out->ldd = N > 0 ? N : 1;
  out->batch = batch;
  out->stride_a = sb;
  out->stride_b = sa;
  out->stride_d = M * N;
  return true;
}
