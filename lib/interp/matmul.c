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

/* The product is computed in tiles of MM_ROWS rows by MM_COLS columns,
 * each tile's accumulators in a small array that stays in the first-level
 * cache while k runs through the whole of K in order: every output
 * element still starts from its bias (or 0) and adds x_k * b_kj for
 * k = 0, 1, ..., K-1, one rounding per product and per sum, as a plain
 * triple loop does, whatever the tiling and the thread count.  B is
 * converted to f64 once per run of batches sharing it, in column panels of
 * MM_COLS so that a tile reads it contiguously; threads take whole row
 * tiles. */
#define MM_ROWS 32
#define MM_COLS 64

/* The offsets of a and b in batch number bi. */
static void batch_offsets(const mm_geom *g, int64_t bi, int64_t *oa, int64_t *ob) {
  *oa = *ob = 0;
  for (int32_t d = g->nb - 1; d >= 0; d--) {
    int64_t i = bi % g->bshape[d];
    bi /= g->bshape[d];
    *oa += i * g->sa[d];
    *ob += i * g->sb[d];
  }
}

/* What the parts of one run of batches (sharing b) share. */
typedef struct mm_job {
  const mm_geom *g;
  const fu_host_tensor *a;
  fu_host_tensor *out;
  bool magnitude;
  int64_t first_batch, rows; /* the run's first batch, and its rows (batches * m) */
  const double *panels;      /* b in f64: panel p holds K rows of its columns */
  const double *bias;        /* N values (zeros without a bias) */
  double *scratch;           /* per part: MM_ROWS * K values of a */
  size_t scratch_per_part;
} mm_job;

/* acc[r][j] += a[r][k] * panel[k][j] for k in order; the full tile has
 * constant bounds, which the compiler vectorizes (across j only: each
 * acc[r][j] keeps its own sequence of operations). */
static void mm_tile_full(double (*acc)[MM_COLS], const double *ablk, int64_t k, const double *panel) {
  for (int64_t kk = 0; kk < k; kk++) {
    const double *bp = panel + kk * MM_COLS;
    for (int r = 0; r < MM_ROWS; r++) {
      double x = ablk[(int64_t)r * k + kk];
      for (int j = 0; j < MM_COLS; j++) acc[r][j] += x * bp[j];
    }
  }
}

static void mm_tile_any(double (*acc)[MM_COLS], const double *ablk, int64_t k, const double *panel, int rb, int jb) {
  for (int64_t kk = 0; kk < k; kk++) {
    const double *bp = panel + kk * jb;
    for (int r = 0; r < rb; r++) {
      double x = ablk[(int64_t)r * k + kk];
      for (int j = 0; j < jb; j++) acc[r][j] += x * bp[j];
    }
  }
}

/* Row tiles [lo, hi) of the run: the tile's rows of a in f64, then per
 * column panel the tile's products, stored row by row. */
static void mm_part(void *ctx, uint32_t part, int64_t lo, int64_t hi) {
  const mm_job *J = ctx;
  const mm_geom *g = J->g;
  double *ablk = J->scratch + (size_t)part * J->scratch_per_part;
  double acc[MM_ROWS][MM_COLS];
  int64_t out_row[MM_ROWS];
  for (int64_t t = lo; t < hi; t++) {
    int64_t row0 = t * MM_ROWS;
    int rb = J->rows - row0 < MM_ROWS ? (int)(J->rows - row0) : MM_ROWS;
    for (int r = 0; r < rb; r++) {
      int64_t bi = J->first_batch + (row0 + r) / g->m, i = (row0 + r) % g->m, oa, ob;
      batch_offsets(g, bi, &oa, &ob);
      out_row[r] = bi * g->m + i;
      double *ar = ablk + (int64_t)r * g->k;
      fu_interp_load(J->a->dtype, at(J->a, oa + i * g->am), g->ak, (size_t)g->k, FU_CK_F64, ar);
      if (J->magnitude)
        for (int64_t kk = 0; kk < g->k; kk++) ar[kk] = ar[kk] < 0 ? -ar[kk] : ar[kk];
    }
    for (int64_t j0 = 0; j0 < g->n; j0 += MM_COLS) {
      int jb = g->n - j0 < MM_COLS ? (int)(g->n - j0) : MM_COLS;
      for (int r = 0; r < rb; r++)
        for (int j = 0; j < jb; j++) acc[r][j] = J->bias[j0 + j];
      const double *panel = J->panels + (size_t)j0 * (size_t)g->k;
      if (rb == MM_ROWS && jb == MM_COLS)
        mm_tile_full(acc, ablk, g->k, panel);
      else
        mm_tile_any(acc, ablk, g->k, panel, rb, jb);
      for (int r = 0; r < rb; r++)
        fu_interp_store(J->out->dtype, at(J->out, out_row[r] * g->n + j0), 1, (size_t)jb, FU_CK_F64, acc[r]);
    }
  }
}

/* b of batch offset ob in f64 panels (|b| for the magnitudes): panel
 * p = j0 / MM_COLS holds, for k = 0..K-1, the columns j0.. of row k. */
static void mm_pack_b(const mm_geom *g, const fu_host_tensor *b, int64_t ob, bool magnitude, double *panels,
                      double *row) {
  for (int64_t kk = 0; kk < g->k; kk++) {
    fu_interp_load(b->dtype, at(b, ob + kk * g->bk), g->bn, (size_t)g->n, FU_CK_F64, row);
    for (int64_t j0 = 0; j0 < g->n; j0 += MM_COLS) {
      int64_t jb = g->n - j0 < MM_COLS ? g->n - j0 : MM_COLS;
      double *dst = panels + (size_t)j0 * (size_t)g->k + (size_t)(kk * jb);
      for (int64_t j = 0; j < jb; j++) dst[j] = magnitude && row[j0 + j] < 0 ? -row[j0 + j] : row[j0 + j];
    }
  }
}

fu_status fu_interp_matmul_compute(const fu_op *op, const fu_host_tensor *a, const fu_host_tensor *b,
                                   const fu_host_tensor *bias, bool magnitude, fu_host_tensor *out,
                                   fu_allocator alloc, uint32_t threads) {
  mm_geom g;
  geometry(op, a, b, bias, &g);
  int64_t nbatch = 1;
  for (int32_t d = 0; d < g.nb; d++) nbatch *= g.bshape[d];
  if (nbatch == 0 || g.m == 0 || g.n == 0) return FU_OK;
  size_t kk1 = (size_t)(g.k ? g.k : 1);
  size_t kn = kk1 * (size_t)g.n;
  /* parts are planned for the largest run (all batches sharing b) */
  uint32_t parts = fu_interp_par_parts(threads, (nbatch * g.m + MM_ROWS - 1) / MM_ROWS, 1);
  size_t per_part = (size_t)MM_ROWS * kk1;
  double *panels = fu_mem_alloc(&alloc, kn * sizeof *panels);
  double *row = fu_mem_alloc(&alloc, (size_t)g.n * sizeof *row);
  double *bv = fu_mem_alloc(&alloc, (size_t)g.n * sizeof *bv);
  double *scratch = fu_mem_alloc(&alloc, parts * per_part * sizeof *scratch);
  fu_status st = panels && row && bv && scratch ? FU_OK : FU_ERR_NOMEM;
  if (st == FU_OK) {
    for (int64_t j = 0; j < g.n; j++) bv[j] = 0;
    if (bias && !magnitude) fu_interp_load(bias->dtype, bias->data, g.bias_n, (size_t)g.n, FU_CK_F64, bv);
    mm_job J = {&g, a, out, magnitude, 0, 0, panels, bv, scratch, per_part};
    for (int64_t bi = 0; bi < nbatch;) {
      int64_t oa, ob, end = bi + 1;
      batch_offsets(&g, bi, &oa, &ob);
      for (int64_t oa2, ob2; end < nbatch; end++) {
        batch_offsets(&g, end, &oa2, &ob2);
        if (ob2 != ob) break;
      }
      mm_pack_b(&g, b, ob, magnitude, panels, row);
      J.first_batch = bi;
      J.rows = (end - bi) * g.m;
      fu_interp_parallel(parts, (J.rows + MM_ROWS - 1) / MM_ROWS, 1, mm_part, &J);
      bi = end;
    }
  }
  fu_mem_free(&alloc, panels, kn * sizeof *panels);
  fu_mem_free(&alloc, row, (size_t)g.n * sizeof *row);
  fu_mem_free(&alloc, bv, (size_t)g.n * sizeof *bv);
  fu_mem_free(&alloc, scratch, parts * per_part * sizeof *scratch);
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
  if (st == FU_OK) st = fu_interp_alloc_result_dense(I, op, 0, shape, &out, NULL);
  if (st != FU_OK) return st;
  if (a.shape[a.rank - 1] != (op->kind == FU_OP_LINEAR ? b.shape[b.rank - 1] : b.shape[b.rank >= 2 ? b.rank - 2 : 0]))
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "the contracted extents differ");
  st = fu_interp_matmul_compute(op, &a, &b, has_bias ? &bias : NULL, false, out, I->alloc, I->threads);
  if (st != FU_OK) return fu_interp_op_error(I, op, st, "out of memory");
  return FU_OK;
}
