/* fuser: the interpreter's matmul and linear (torch.matmul and F.linear).
 *
 * Every shape class reduces to one form: batches (broadcast dims, stride 0
 * where an operand has extent 1 or lacks the dim) of an [M, K] x [K, N]
 * product, plus a bias along N for linear.  A 1-D first operand is M = 1,
 * a 1-D second operand N = 1; linear's leading dims are batches of one row
 * against a weight that every batch shares, read transposed ([N, K]).  The
 * result is row-major over (batch, M, N) with the dims of extent 1 that
 * the rules drop simply absent, so its flat order is the same.
 *
 * Products accumulate in f64 whatever the dtype, so the reference is the
 * exact product rounded once; --check allows the kernel's own f32
 * accumulation through the bound error_scale.c derives from the same
 * kernel run on magnitudes (|A| |B|). */
#include <string.h>

#include "interp_internal.h"

typedef struct mm_geom {
  int32_t nb;               /* batch dims */
  int64_t bshape[FU_MAX_RANK];
  int64_t sa[FU_MAX_RANK], sb[FU_MAX_RANK]; /* batch strides of a and b (0: broadcast) */
  int64_t m, n, k;
  int64_t am, ak, bk, bn;   /* element strides */
  int64_t bias_n;           /* bias stride along N */
} mm_geom;

/* The form above for op's operands a, b (and bias). */
static void geometry(const fu_op *op, const fu_host_tensor *a, const fu_host_tensor *b, const fu_host_tensor *bias,
                     mm_geom *g) {
  memset(g, 0, sizeof *g);
  int32_t ra = a->rank, rb = b->rank;
  g->k = a->shape[ra - 1];
  g->ak = a->strides[ra - 1];
  if (op->kind == FU_OP_LINEAR) {
    g->nb = ra - 1;
    for (int32_t d = 0; d < g->nb; d++) {
      g->bshape[d] = a->shape[d];
      g->sa[d] = a->shape[d] == 1 ? 0 : a->strides[d];
    }
    g->m = 1;
    g->n = rb == 2 ? b->shape[0] : 1;
    g->bn = rb == 2 ? b->strides[0] : 0;
    g->bk = b->strides[rb - 1];
    if (bias) g->bias_n = bias->rank == 1 && bias->shape[0] != 1 ? bias->strides[0] : 0;
    return;
  }
  g->m = ra >= 2 ? a->shape[ra - 2] : 1;
  g->am = ra >= 2 ? a->strides[ra - 2] : 0;
  g->n = rb >= 2 ? b->shape[rb - 1] : 1;
  g->bn = rb >= 2 ? b->strides[rb - 1] : 0;
  g->bk = rb >= 2 ? b->strides[rb - 2] : b->strides[0];
  int32_t ba = ra >= 2 ? ra - 2 : 0, bb = rb >= 2 ? rb - 2 : 0;
  g->nb = ba > bb ? ba : bb;
  for (int32_t d = 0; d < g->nb; d++) {
    int32_t ja = d - (g->nb - ba), jb = d - (g->nb - bb);
    int64_t ea = ja >= 0 ? a->shape[ja] : 1, eb = jb >= 0 ? b->shape[jb] : 1;
    g->bshape[d] = ea == 1 ? eb : ea;
    g->sa[d] = ja >= 0 && ea != 1 ? a->strides[ja] : 0;
    g->sb[d] = jb >= 0 && eb != 1 ? b->strides[jb] : 0;
  }
}

static void *at(const fu_host_tensor *t, int64_t off) {
  return (char *)t->data + off * (int64_t)fu_dtype_size(t->dtype);
}

fu_status fu_interp_matmul_compute(const fu_op *op, const fu_host_tensor *a, const fu_host_tensor *b,
                                   const fu_host_tensor *bias, bool magnitude, fu_host_tensor *out,
                                   fu_allocator alloc) {
  mm_geom g;
  geometry(op, a, b, bias, &g);
  int64_t nbatch = 1;
  for (int32_t d = 0; d < g.nb; d++) nbatch *= g.bshape[d];
  if (nbatch == 0 || g.m == 0 || g.n == 0) return FU_OK;
  size_t kn = (size_t)(g.k ? g.k : 1) * (size_t)g.n;
  double *bt = fu_mem_alloc(&alloc, kn * sizeof *bt);            /* b of one batch, [K][N] */
  double *arow = fu_mem_alloc(&alloc, (size_t)(g.k ? g.k : 1) * sizeof *arow);
  double *acc = fu_mem_alloc(&alloc, (size_t)g.n * sizeof *acc);
  double *bv = fu_mem_alloc(&alloc, (size_t)g.n * sizeof *bv);
  fu_status st = bt && arow && acc && bv ? FU_OK : FU_ERR_NOMEM;
  if (st == FU_OK) {
    for (int64_t j = 0; j < g.n; j++) bv[j] = 0;
    if (bias) fu_interp_load(bias->dtype, bias->data, g.bias_n, (size_t)g.n, FU_CK_F64, bv);
    int64_t idx[FU_MAX_RANK] = {0}, prev_off_b = -1;
    for (int64_t bi = 0; bi < nbatch; bi++) {
      int64_t off_a = 0, off_b = 0;
      for (int32_t d = 0; d < g.nb; d++) {
        off_a += idx[d] * g.sa[d];
        off_b += idx[d] * g.sb[d];
      }
      if (off_b != prev_off_b) {
        for (int64_t kk = 0; kk < g.k; kk++) {
          double *row = bt + (size_t)kk * (size_t)g.n;
          fu_interp_load(b->dtype, at(b, off_b + kk * g.bk), g.bn, (size_t)g.n, FU_CK_F64, row);
          if (magnitude)
            for (int64_t j = 0; j < g.n; j++) row[j] = row[j] < 0 ? -row[j] : row[j];
        }
        prev_off_b = off_b;
      }
      for (int64_t i = 0; i < g.m; i++) {
        fu_interp_load(a->dtype, at(a, off_a + i * g.am), g.ak, (size_t)g.k, FU_CK_F64, arow);
        for (int64_t j = 0; j < g.n; j++) acc[j] = magnitude ? 0 : bv[j];
        for (int64_t kk = 0; kk < g.k; kk++) {
          double x = magnitude && arow[kk] < 0 ? -arow[kk] : arow[kk];
          const double *row = bt + (size_t)kk * (size_t)g.n;
          for (int64_t j = 0; j < g.n; j++) acc[j] += x * row[j];
        }
        fu_interp_store(out->dtype, at(out, (bi * g.m + i) * g.n), 1, (size_t)g.n, FU_CK_F64, acc);
      }
      for (int32_t d = g.nb - 1; d >= 0; d--) {
        if (++idx[d] < g.bshape[d]) break;
        idx[d] = 0;
      }
    }
  }
  fu_mem_free(&alloc, bt, kn * sizeof *bt);
  fu_mem_free(&alloc, arow, (size_t)(g.k ? g.k : 1) * sizeof *arow);
  fu_mem_free(&alloc, acc, (size_t)g.n * sizeof *acc);
  fu_mem_free(&alloc, bv, (size_t)g.n * sizeof *bv);
  return st;
}

fu_status fu_interp_eval_matmul(fu_interp *I, fu_op *op) {
  fu_host_tensor a, b, bias;
  fu_status st = fu_interp_operand_tensor(I, op, 0, &a);
  if (st == FU_OK) st = fu_interp_operand_tensor(I, op, 1, &b);
  bool has_bias = op->n_operands == 3;
  if (st == FU_OK && has_bias) st = fu_interp_operand_tensor(I, op, 2, &bias);
  if (st != FU_OK) return st;
  if (a.rank < 1 || b.rank < 1)
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "the operands must have rank 1 or more");
  int64_t shape[FU_MAX_RANK];
  st = fu_interp_result_shape(I, op, 0, shape, -1);
  if (st != FU_OK) return st;
  int32_t rank = op->results[0]->type.rank;
  st = fu_interp_check_shape(I, op, 0, rank, shape);
  fu_host_tensor *out = NULL;
  if (st == FU_OK) st = fu_interp_alloc_result(I, op, 0, shape, &out);
  if (st != FU_OK) return st;
  if (a.shape[a.rank - 1] != (op->kind == FU_OP_LINEAR ? b.shape[b.rank - 1] : b.shape[b.rank >= 2 ? b.rank - 2 : 0]))
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "the contracted extents differ");
  st = fu_interp_matmul_compute(op, &a, &b, has_bias ? &bias : NULL, false, out, I->alloc);
  if (st != FU_OK) return fu_interp_op_error(I, op, st, "out of memory");
  return FU_OK;
}
