/* fuser: error bounds of the reference interpreter's results, for
 * fuser-run --check (fu_interp_run_bounded).
 *
 * A kernel accumulates a reduction in its own order and precision (serial
 * per thread, then a tree), the interpreter in f64: the two differ by the
 * kernel's rounding, which is bounded relative to the magnitude of the
 * terms, not to the result (a sum may cancel to near zero).  So next to
 * each value downstream of a reduction the interpreter keeps a bound B:
 * per element, how far a correct kernel's value may be from the reference.
 *
 *  - A reduction over n terms x_i, accumulated with unit roundoff u (2^-24
 *    for f32, f16 and bf16 results, which kernels accumulate in f32; 2^-53
 *    for f64) adds C * u * sqrt(n) * S, with C = 8 and the scale S:
 *      sum      S = sum |x_i|
 *      prod     S = |result|
 *      max, min S = 0 (exact)
 *      var      S = sqrt(sum x_i^2) * sqrt(M2) / (n - correction), M2 the
 *               sum of squared deviations: the error of a one-pass (Welford)
 *               or two-pass variance in floating point is of the order
 *               u * ||x|| * sqrt(M2) (it grows with the condition number
 *               ||x|| / sqrt(M2) when the mean is large against the spread)
 *      mean (of var_mean) S = sqrt(n * sum x_i^2) / n >= sum |x_i| / n.
 *    sqrt(n) is the probabilistic growth of a chain of n roundings with
 *    independent errors: |error| <= lambda sqrt(n) u S fails with
 *    probability about exp(-lambda^2 / 2) per element; C = 8 makes that
 *    negligible.  Every order of combining (serial, tree, mixed) is a chain
 *    of at most n roundings per term, so the bound needs no schedule.
 *    Terms that carry a bound themselves (a reduction after a reduction)
 *    add their propagated error: the sum of the terms' bounds for sum (and
 *    divided by n for the mean), their max for max/min, and
 *    2 sqrt(M2) sqrt(sum b_i^2) / (n - correction) for var (Cauchy-Schwarz
 *    on sum 2 |x_i - mean| b_i); prod of bounded terms is unscaled.
 *  - matmul and linear are reductions over K: C u sqrt(K) |A| |B| (the
 *    product of the magnitudes), plus |A| B_b + A_b |B| for bounded
 *    operands and a bias's own bound, and for a 16-bit result its own
 *    rounding (2^-8 or 2^-11 |y|), which a fused epilogue skips.
 *  - A pointwise op with bounded operands: the first-order rule, evaluated
 *    rather than derived, per operand k: max(|f(.., x_k + b_k, ..) - f(x)|,
 *    |f(.., x_k - b_k, ..) - f(x)|), summed over k, all in f64.  It covers
 *    every op without a table of derivatives; NaN where a perturbed value
 *    is NaN (e.g. sqrt of a variance of 0 minus its bound).
 *  - Shape and data-movement ops apply to the bounds as to the values: the
 *    shadow interpreter runs the op itself on the bound tensors (operands
 *    without a bound, and scalar operands such as pad's value, as 0).
 *  - An op the kernels compute with a math library function (FU_OF_APPROX:
 *    exp, log, pow, tan, erf, ...) starts a bound, as a reduction does:
 *    CUDA documents those within a few ulps (up to 4 for f32's tan, pow,
 *    erfc and acosh, 6 for lgamma), not correctly rounded, and the
 *    interpreter's libm has its own last bits.  So the result's bound is
 *    its first-order propagation (above) plus A ulps of |y| in the
 *    computing precision (f32 for 16-bit results, which round once more
 *    after: one ulp of the result's dtype more), with A = 8.  At the op
 *    itself that is far inside the dtype tolerance (8 ulps of f32 is
 *    9.5e-7 relative against 1e-5); what it covers is the op after it that
 *    amplifies those last bits: log2 of erf(3) (a cancellation against 1,
 *    condition number 4.5e4), tan near a pole, pow(x, x).
 *  - A result of an int or bool dtype computed from bounded values (a
 *    comparison, a cast to int) may flip, and nothing downstream of it can
 *    be bounded: its value is "lost" and outputs built on it are unscaled
 *    (bound NaN: the check falls back to the dtype tolerance there).
 *
 * Bounds are stored in their value's dtype, so shape ops run unchanged on
 * them; an f16/bf16 bound rounds by 2^-11/2^-8, far inside C's slack.
 * Values with no reduction upstream have no bound at all (their slot in the
 * shadow stays empty), so an output with none is compared exactly as
 * without this file. */
#include <math.h>
#include <string.h>

#include "interp_internal.h"

/* The constant C above. */
#define FU_BOUND_C 8.0
/* The constant A above: ulps a math library function may be off by. */
#define FU_BOUND_APPROX_ULPS 8.0

fu_status fu_interp_bounds_start(fu_interp *I, fu_interp *J) {
  memset(J, 0, sizeof *J);
  J->f = I->f;
  J->alloc = I->alloc;
  J->diag = I->diag;
  J->n_slots = I->n_slots;
  J->n_outs = I->n_outs;
  J->threads = I->threads;
  J->slots = fu_mem_calloc(&J->alloc, J->n_slots ? J->n_slots : 1, sizeof *J->slots);
  J->lost = fu_mem_calloc(&J->alloc, J->n_slots ? J->n_slots : 1, sizeof *J->lost);
  J->outs = fu_mem_calloc(&J->alloc, J->n_outs ? J->n_outs : 1, sizeof *J->outs);
  if (!J->slots || !J->lost || !J->outs) {
    fu_mem_free(&J->alloc, J->outs, (J->n_outs ? J->n_outs : 1) * sizeof *J->outs);
    fu_interp_bounds_finish(J);
    fu_error(I->diag, I->f->loc, "out of memory starting the error bounds of --check");
    return FU_ERR_NOMEM;
  }
  I->shadow = J;
  return FU_OK;
}

void fu_interp_bounds_finish(fu_interp *J) {
  fu_mem_free(&J->alloc, J->slots, (J->n_slots ? J->n_slots : 1) * sizeof *J->slots);
  fu_mem_free(&J->alloc, J->lost, (J->n_slots ? J->n_slots : 1) * sizeof *J->lost);
  J->slots = NULL;
  J->lost = NULL;
}

static bool is_value(const fu_interp *J, const fu_value *v) { return v && !v->is_literal && v->id < J->n_slots; }

static void mark_lost(fu_interp *J, fu_op *op) {
  for (uint32_t r = 0; r < op->n_results; r++)
    if (is_value(J, op->results[r])) J->lost[op->results[r]->id] = true;
}

/* A fresh zeroed f64 tensor of `like`'s shape. */
static fu_status f64_like(fu_interp *J, const fu_host_tensor *like, fu_host_tensor *t) {
  return fu_host_tensor_alloc(t, J->alloc, FU_DT_F64, like->rank, like->shape);
}

/* The scratch of a reduction's bound: magnitudes, propagated bounds and
 * the bound itself, zeroed f64 tensors of `like`'s shape (all freeable
 * after a failure). */
static fu_status three_f64_like(fu_interp *J, const fu_host_tensor *like, fu_host_tensor *a, fu_host_tensor *b,
                                fu_host_tensor *c) {
  memset(b, 0, sizeof *b);
  memset(c, 0, sizeof *c);
  fu_status st = f64_like(J, like, a);
  if (st == FU_OK) st = f64_like(J, like, b);
  if (st == FU_OK) st = f64_like(J, like, c);
  return st;
}

/* Store the f64 bound `b` as result r's bound in the shadow. */
static fu_status set_bound(fu_interp *J, fu_op *op, uint32_t r, const fu_host_tensor *b) {
  fu_host_tensor *view;
  fu_status st = fu_interp_alloc_result(J, op, r, b->shape, &view);
  if (st == FU_OK) st = fu_interp_copy_into(view, b, J->threads);
  return st;
}

/* `src` seen with `rank` and `shape` (extent-1 dims and scalars repeat with
 * stride 0); the interpreter already checked that it broadcasts. */
static void broadcast_view(const fu_interp_slot *s, int32_t rank, const int64_t *shape, fu_host_tensor *out) {
  *out = s->view;
  out->owned = NULL;
  out->rank = rank;
  for (int32_t d = 0; d < rank; d++) {
    out->shape[d] = shape[d];
    out->strides[d] = s->scalar || s->view.shape[d] != shape[d] ? 0 : s->view.strides[d];
  }
}

/* A pointwise op's bound is computed a unit at a time: a block of rows of
 * one dim (the outermost whose inner part holds at most PWB_ELEMS
 * elements) at fixed coordinates of the dims outside it, with f64
 * scratch for that unit alone, so that a bound of a large tensor needs
 * five units of scratch per thread rather than five tensors.  Every
 * element goes through the same operations as a whole-tensor pass. */
#define PWB_ELEMS (INT64_C(1) << 16)

typedef struct pwb_job {
  const fu_pw_loop *l;       /* the op on the whole operands (x) */
  const fu_host_tensor *b[3]; /* the operands' bounds (NULL: none) */
  fu_host_tensor *res;       /* the result's bound, in the shadow */
  int32_t rank, dim;
  const int64_t *shape;
  int64_t block, blocks_per_row; /* rows of `dim` per unit, units per outer index */
  double *scratch;           /* per part: 5 units */
  size_t unit;               /* elements of a full unit */
  double approx;             /* an FU_OF_APPROX op's own last bits, relative (approx_relative) */
  bool ok[FU_INTERP_MAX_THREADS];
} pwb_job;

/* `t` cut to the unit at outer coordinates `oc` and rows [lo, lo + len)
 * of dim d. */
static fu_host_tensor unit_view(const fu_host_tensor *t, int32_t d, const int64_t *oc, int64_t lo, int64_t len) {
  fu_host_tensor v = *t;
  v.owned = NULL;
  if (t->rank == 0) return v;
  int64_t off = lo * t->strides[d];
  for (int32_t j = 0; j < d; j++) {
    off += oc[j] * t->strides[j];
    v.shape[j] = 1;
  }
  v.shape[d] = len;
  v.data = (char *)t->data + (size_t)off * fu_dtype_size(t->dtype);
  return v;
}

static void pwb_part(void *ctx, uint32_t part, int64_t lo, int64_t hi) {
  pwb_job *P = ctx;
  const fu_pw_loop *l = P->l;
  double *scr = P->scratch + (size_t)part * 5 * P->unit;
  for (int64_t u = lo; u < hi && P->ok[part]; u++) {
    int64_t o = u / P->blocks_per_row, r0 = u % P->blocks_per_row * P->block;
    int64_t extent = P->rank ? P->shape[P->dim] : 1;
    int64_t len = extent - r0 < P->block ? extent - r0 : P->block;
    int64_t oc[FU_MAX_RANK];
    for (int32_t j = P->dim - 1; j >= 0; j--) {
      oc[j] = o % P->shape[j];
      o /= P->shape[j];
    }
    fu_host_tensor x[3], b[3], t[5]; /* y, y+, y-, moved operand, bound */
    for (uint32_t i = 0; i < l->n_in; i++) {
      x[i] = unit_view(l->in[i], P->dim, oc, r0, len);
      if (P->b[i]) b[i] = unit_view(P->b[i], P->dim, oc, r0, len);
    }
    fu_host_tensor shape_of = unit_view(P->res, P->dim, oc, r0, len);
    int64_t n = fu_host_tensor_numel(&shape_of);
    for (int i = 0; i < 5; i++) {
      t[i] = shape_of;
      t[i].dtype = FU_DT_F64;
      t[i].data = scr + (size_t)i * P->unit;
      fu_contiguous_strides(t[i].rank, t[i].shape, t[i].strides);
    }
    fu_pw_loop base = *l;
    base.threads = 1;
    for (uint32_t i = 0; i < l->n_in; i++) base.in[i] = &x[i];
    base.out = &t[0];
    bool ok = fu_interp_pw_run(&base) == FU_PW_OK;
    double *y = t[0].data, *acc = t[4].data;
    for (int64_t i = 0; i < n; i++) acc[i] = 0;
    for (uint32_t k = 0; k < l->n_in && ok; k++) {
      if (!P->b[k]) continue;
      for (int s = 0; s < 2 && ok; s++) {
        fu_pw_loop mv = base;
        mv.op = s ? FU_OP_SUB : FU_OP_ADD;
        mv.n_in = 2;
        mv.in[0] = &x[k];
        mv.in[1] = &b[k];
        mv.in_kinds[0] = mv.in_kinds[1] = FU_CK_F64;
        mv.out = &t[3];
        fu_pw_loop f = base;
        f.in[k] = &t[3];
        f.in_kinds[k] = FU_CK_F64;
        f.out = &t[1 + s];
        ok = fu_interp_pw_run(&mv) == FU_PW_OK && fu_interp_pw_run(&f) == FU_PW_OK;
      }
      const double *yp = t[1].data, *ym = t[2].data;
      for (int64_t i = 0; i < n && ok; i++) {
        double dp = fabs(yp[i] - y[i]), dm = fabs(ym[i] - y[i]);
        acc[i] += isnan(y[i]) ? 0 : isnan(dp) || isnan(dm) ? NAN : dp > dm ? dp : dm;
      }
    }
    /* an infinite result is compared exactly (fu_check_compare_bounded) */
    for (int64_t i = 0; i < n && ok && P->approx > 0; i++)
      if (isfinite(y[i])) acc[i] += P->approx * fabs(y[i]);
    if (ok) ok = fu_interp_copy_into(&shape_of, &t[4], 1) == FU_OK;
    P->ok[part] = ok;
  }
}

/* The relative size of the last bits an FU_OF_APPROX op's result in dtype
 * dt may differ by (see the top): A ulps of the computing precision, and
 * one ulp of a 16-bit result's own rounding. */
static double approx_relative(fu_dtype dt) {
  double ulp = dt == FU_DT_F64 ? 0x1p-52 : 0x1p-23;
  double own = dt == FU_DT_BF16 ? 0x1p-7 : dt == FU_DT_F16 ? 0x1p-10 : 0;
  return FU_BOUND_APPROX_ULPS * ulp + own;
}

/* f(x) with operand k moved by +-b_k, per operand, in f64, and an
 * FU_OF_APPROX op's own last bits (see the top). */
static fu_status pointwise_bound(fu_interp *I, fu_interp *J, fu_op *op, bool bounded) {
  const fu_host_tensor *rv = &I->slots[op->results[0]->id].view;
  if (!fu_dtype_is_float(rv->dtype)) {
    if (bounded) mark_lost(J, op);
    return FU_OK;
  }
  fu_host_tensor x[3];
  fu_pw_loop l;
  memset(&l, 0, sizeof l);
  l.op = op->kind;
  l.kind = l.out_kind = FU_CK_F64;
  l.n_in = op->n_operands;
  pwb_job P;
  memset(&P, 0, sizeof P);
  fu_host_tensor bv[3];
  memset(bv, 0, sizeof bv);
  for (uint32_t i = 0; i < op->n_operands; i++) {
    broadcast_view(&I->slots[op->operands[i]->id], rv->rank, rv->shape, &x[i]);
    if (is_value(J, op->operands[i]) && J->slots[op->operands[i]->id].ready) {
      broadcast_view(&J->slots[op->operands[i]->id], rv->rank, rv->shape, &bv[i]);
      P.b[i] = &bv[i];
    }
    l.in[i] = &x[i];
    l.in_kinds[i] = FU_CK_F64;
  }
  if (op->kind == FU_OP_WHERE) l.in_kinds[0] = FU_CK_I64;
  /* dims that every operand and bound repeats: computed once (as the
   * value itself, interp.c's eval_pointwise) */
  int64_t cs[FU_MAX_RANK];
  fu_interp_shared_dims(rv->rank, rv->shape, x, bv, op->n_operands, cs);
  fu_host_tensor *res;
  fu_status st = fu_interp_alloc_result(J, op, 0, cs, &res);
  if (st != FU_OK) return fu_interp_op_error(I, op, st, "out of memory for the error bounds of --check");
  int64_t numel = fu_host_tensor_numel(res);
  if (numel == 0) {
    fu_interp_widen_shared_dims(res, rv->shape);
    return FU_OK;
  }
  /* the unit: the outermost dim whose inner part is small enough */
  P.l = &l;
  P.res = res;
  P.approx = fu_op_has(op->kind, FU_OF_APPROX) ? approx_relative(rv->dtype) : 0;
  P.rank = rv->rank;
  P.shape = cs;
  int64_t inner = 1; /* elements per row of P.dim */
  P.dim = rv->rank - 1;
  while (P.dim > 0 && cs[P.dim] <= PWB_ELEMS / inner) inner *= cs[P.dim--];
  if (rv->rank == 0) {
    P.dim = 0;
    P.block = P.blocks_per_row = 1;
  } else {
    P.block = PWB_ELEMS / inner > 1 ? PWB_ELEMS / inner : 1;
    if (P.block > cs[P.dim]) P.block = cs[P.dim];
    P.blocks_per_row = (cs[P.dim] + P.block - 1) / P.block;
  }
  P.unit = (size_t)(P.block * inner);
  int64_t outer = 1;
  for (int32_t j = 0; j < P.dim; j++) outer *= cs[j];
  int64_t units = outer * P.blocks_per_row;
  uint32_t parts = fu_interp_par_parts(I->threads, units, 1);
  size_t bytes = (size_t)parts * 5 * P.unit * sizeof(double);
  P.scratch = fu_mem_alloc(&J->alloc, bytes);
  if (!P.scratch) return fu_interp_op_error(I, op, FU_ERR_NOMEM, "out of memory for the error bounds of --check");
  for (uint32_t p = 0; p < parts; p++) P.ok[p] = true;
  fu_interp_parallel(parts, units, 1, pwb_part, &P);
  fu_mem_free(&J->alloc, P.scratch, bytes);
  bool ok = true;
  for (uint32_t p = 0; p < parts; p++) ok = ok && P.ok[p];
  if (!ok) {
    fu_interp_drop_result(J, op, 0);
    mark_lost(J, op);
  } else {
    fu_interp_widen_shared_dims(res, rv->shape);
  }
  return FU_OK;
}

/* A shape op on the bounds: the shadow runs it, with a zero bound for
 * operands that have none; a failure there (there should be none) only
 * loses the bound, with its diagnostic dropped. */
static fu_status shape_bound(fu_interp *I, fu_interp *J, fu_op *op) {
  bool filled[FU_MAX_RANK * 4] = {false};
  if (op->n_operands > FU_MAX_RANK * 4) {
    mark_lost(J, op);
    return FU_OK;
  }
  for (uint32_t i = 0; i < op->n_operands; i++) {
    fu_value *v = op->operands[i];
    fu_interp_slot *js = &J->slots[v->id];
    if (is_value(J, v) && js->ready) continue;
    const fu_interp_slot *is = &I->slots[v->id];
    memset(js, 0, sizeof *js);
    js->ready = true;
    js->scalar = is->scalar;
    js->view = is->view;
    js->view.owned = NULL;
    js->view.data = js->raw;
    for (int32_t d = 0; d < js->view.rank; d++) js->view.strides[d] = 0;
    filled[i] = true;
  }
  fu_diag_engine quiet;
  fu_diag_init(&quiet, J->alloc);
  quiet.stopped = true; /* drops every diagnostic */
  J->diag = &quiet;
  J->b = I->b;
  fu_status st = fu_interp_eval_shape_op(J, op);
  I->b = J->b;
  J->diag = I->diag;
  for (uint32_t i = 0; i < op->n_operands; i++)
    if (filled[i]) J->slots[op->operands[i]->id].ready = false;
  if (st == FU_ERR_NOMEM) return fu_interp_op_error(I, op, st, "out of memory for the error bounds of --check");
  if (st != FU_OK) mark_lost(J, op);
  return FU_OK;
}

/* Where a reduction's bounds start (see the top). */
static fu_status reduction_bound(fu_interp *I, fu_interp *J, fu_op *op) {
  fu_value *v = op->operands[0];
  bool variance = fu_op_info_of(op->kind)->cls == FU_OC_VARIANCE;
  bool has_b = is_value(J, v) && J->slots[v->id].ready;
  if (is_value(J, v) && J->lost[v->id]) {
    mark_lost(J, op);
    return FU_OK;
  }
  const fu_host_tensor *rv = &I->slots[op->results[0]->id].view;
  if (!fu_dtype_is_float(rv->dtype)) {
    if (has_b) mark_lost(J, op);
    return FU_OK;
  }
  if ((op->kind == FU_OP_MAX || op->kind == FU_OP_MIN) && !has_b) return FU_OK; /* exact */
  if (op->kind == FU_OP_PROD && has_b) {
    mark_lost(J, op);
    return FU_OK;
  }
  const fu_host_tensor *in = &I->slots[v->id].view;
  const fu_int_list *axes = variance ? &op->u.variance.axes : &op->u.reduce.axes;
  bool reduce[FU_MAX_RANK] = {false};
  for (uint32_t i = 0; i < axes->n; i++)
    if (axes->v[i] >= 0 && axes->v[i] < in->rank) reduce[axes->v[i]] = true;
  double n = 1;
  for (int32_t d = 0; d < in->rank; d++)
    if (reduce[d]) n *= (double)in->shape[d];
  double k = FU_BOUND_C * (rv->dtype == FU_DT_F64 ? 0x1p-53 : 0x1p-24) * sqrt(n);
  fu_host_tensor mag, prop, bt;
  fu_status st = three_f64_like(J, rv, &mag, &prop, &bt);
  if (st == FU_OK && op->kind != FU_OP_MAX && op->kind != FU_OP_MIN)
    fu_interp_reduce_magnitude(variance, in, reduce, &mag, J->threads);
  if (st == FU_OK && has_b) {
    const fu_host_tensor *bin = &J->slots[v->id].view;
    const char *why;
    if (variance)
      fu_interp_reduce_magnitude(true, bin, reduce, &prop, J->threads);
    else
      st = fu_interp_reduce(op->kind == FU_OP_SUM ? FU_OP_SUM : FU_OP_MAX, bin, reduce, 0, &prop, NULL, J->alloc,
                           J->threads, &why);
  }
  int64_t m = fu_host_tensor_numel(rv);
  double *mg = mag.data, *pr = prop.data, *out = bt.data;
  for (uint32_t r = 0; r < op->n_results && st == FU_OK; r++) {
    const fu_host_tensor *res = &I->slots[op->results[r]->id].view;
    for (int64_t i = 0; i < m; i++) {
      double y = fu_host_tensor_get_flat(res, i);
      if (!variance) {
        out[i] = (op->kind == FU_OP_PROD ? k * fabs(y) : k * mg[i]) + pr[i];
      } else if (r == 1) {
        out[i] = (k * sqrt(n * mg[i]) + sqrt(n * pr[i])) / n;
      } else {
        double denom = n - (double)op->u.variance.correction;
        double m2 = y * denom;
        out[i] = isfinite(y) && denom > 0 ? sqrt(m2) * (k * sqrt(mg[i]) + 2 * sqrt(pr[i])) / denom : 0;
      }
    }
    st = set_bound(J, op, r, &bt);
  }
  fu_host_tensor_free(&mag);
  fu_host_tensor_free(&prop);
  fu_host_tensor_free(&bt);
  if (st != FU_OK) return fu_interp_op_error(I, op, st, "out of memory for the error bounds of --check");
  return FU_OK;
}

/* A matmul or linear over K terms per element: C u sqrt(K) (|A| |B|) as a
 * reduction's, plus the operands' bounds carried through the product
 * (|A| B_b + A_b |B|, and a bias's bound along N). */
static fu_status matmul_bound(fu_interp *I, fu_interp *J, fu_op *op) {
  for (uint32_t i = 0; i < op->n_operands; i++)
    if (is_value(J, op->operands[i]) && J->lost[op->operands[i]->id]) {
      mark_lost(J, op);
      return FU_OK;
    }
  const fu_host_tensor *rv = &I->slots[op->results[0]->id].view;
  const fu_host_tensor *x[2] = {&I->slots[op->operands[0]->id].view, &I->slots[op->operands[1]->id].view};
  const fu_host_tensor *bx[3] = {NULL, NULL, NULL};
  for (uint32_t i = 0; i < op->n_operands; i++)
    if (is_value(J, op->operands[i]) && J->slots[op->operands[i]->id].ready) bx[i] = &J->slots[op->operands[i]->id].view;
  double kk = (double)x[0]->shape[x[0]->rank - 1];
  double k = FU_BOUND_C * 0x1p-24 * sqrt(kk > 1 ? kk : 1);
  fu_host_tensor mag, prop, bt;
  fu_status st = three_f64_like(J, rv, &mag, &prop, &bt);
  if (st == FU_OK) st = fu_interp_matmul_compute(op, x[0], x[1], NULL, true, &mag, J->alloc, J->threads);
  int64_t m = fu_host_tensor_numel(rv);
  double *mg = mag.data, *pr = prop.data, *out = bt.data;
  for (int side = 0; side < 2 && st == FU_OK; side++) {
    if (!bx[side]) continue;
    st = fu_interp_matmul_compute(op, side ? x[0] : bx[0], side ? bx[1] : x[1], NULL, true, &prop, J->alloc, J->threads);
    for (int64_t i = 0; i < m && st == FU_OK; i++) out[i] += pr[i];
  }
  if (st == FU_OK && bx[2]) {
    const fu_host_tensor *bb = bx[2];
    int64_t n = bb->rank == 1 && rv->rank >= 1 ? rv->shape[rv->rank - 1] : 1;
    for (int64_t i = 0; i < m; i++)
      out[i] += fabs(fu_host_tensor_get_flat(bb, bb->rank == 1 && bb->shape[0] != 1 ? i % (n ? n : 1) : 0));
  }
  /* the product's own rounding to a 16-bit dtype: cuBLASLt skips it when
   * the epilogue that follows is fused (it rounds once, at the end) */
  double u_out = rv->dtype == FU_DT_BF16 ? 0x1p-8 : rv->dtype == FU_DT_F16 ? 0x1p-11 : 0;
  fu_chunk y;
  bool dense = fu_host_tensor_is_contiguous(rv);
  for (int64_t i0 = 0; i0 < m && st == FU_OK; i0 += FU_INTERP_CHUNK) {
    int64_t n = m - i0 < FU_INTERP_CHUNK ? m - i0 : FU_INTERP_CHUNK;
    if (dense) /* a row of the result as fu_host_tensor_get_flat reads it */
      fu_interp_load(rv->dtype, (const char *)rv->data + (size_t)i0 * fu_dtype_size(rv->dtype), 1, (size_t)n,
                     FU_CK_F64, y.f64);
    else
      for (int64_t i = 0; i < n; i++) y.f64[i] = fu_host_tensor_get_flat(rv, i0 + i);
    for (int64_t i = 0; i < n; i++) out[i0 + i] += k * mg[i0 + i] + u_out * fabs(y.f64[i]);
  }
  if (st == FU_OK) st = set_bound(J, op, 0, &bt);
  fu_host_tensor_free(&mag);
  fu_host_tensor_free(&prop);
  fu_host_tensor_free(&bt);
  if (st != FU_OK) return fu_interp_op_error(I, op, st, "out of memory for the error bounds of --check");
  return FU_OK;
}

/* Output operands' bounds, as f64 tensors (NaN where lost). */
static fu_status output_bounds(fu_interp *I, fu_interp *J, fu_op *op) {
  for (uint32_t i = 0; i < op->n_operands && J->next_out < J->n_outs; i++) {
    fu_value *v = op->operands[i];
    fu_arg *a = &J->outs[J->next_out++];
    const fu_interp_slot *s = &I->slots[v->id];
    if (!is_value(J, v) || s->scalar || (!J->lost[v->id] && !J->slots[v->id].ready)) continue;
    fu_host_tensor t;
    fu_status st = f64_like(J, &s->view, &t);
    if (st != FU_OK) return fu_interp_op_error(I, op, st, "out of memory for the error bounds of --check");
    if (J->lost[v->id]) {
      for (int64_t e = 0, n = fu_host_tensor_numel(&t); e < n; e++) ((double *)t.data)[e] = NAN;
    } else {
      fu_interp_copy_into(&t, &J->slots[v->id].view, J->threads);
    }
    *a = fu_arg_tensor(t);
  }
  return FU_OK;
}

/* A segment's results are its body's outputs: their bounds too. */
static void segment_bounds(fu_interp *J, fu_op *op) {
  for (uint32_t r = 0; r < op->n_results && r < op->u.segment.n_outputs; r++) {
    fu_value *from = op->u.segment.outputs[r], *to = op->results[r];
    if (!is_value(J, from) || !is_value(J, to)) continue;
    J->lost[to->id] = J->lost[from->id];
    fu_interp_slot *fs = &J->slots[from->id], *ts = &J->slots[to->id];
    if (!fs->ready) continue;
    uint32_t uses = ts->uses;
    *ts = *fs;
    ts->uses = uses;
    if (ts->scalar) ts->view.data = ts->raw;
    if (ts->st) ts->st->refs++;
  }
}

/* An indexing op gathers its lookup's bounds by the real indices (an index
 * computed from bounded values may differ in a kernel: lost). */
static fu_status index_bound(fu_interp *I, fu_interp *J, fu_op *op) {
  fu_value *x = op->operands[fu_index_lookup_operand(op)], *ix = op->operands[fu_index_index_operand(op)];
  if ((is_value(J, ix) && (J->lost[ix->id] || J->slots[ix->id].ready)) || (is_value(J, x) && J->lost[x->id])) {
    mark_lost(J, op);
    return FU_OK;
  }
  if (!is_value(J, x) || !J->slots[x->id].ready) return FU_OK;
  fu_status st = fu_interp_index_into(I, J, op, &J->slots[x->id].view, &I->slots[ix->id].view);
  if (st == FU_ERR_NOMEM) return fu_interp_op_error(I, op, st, "out of memory for the error bounds of --check");
  if (st != FU_OK) mark_lost(J, op);
  return FU_OK;
}

fu_status fu_interp_bounds_op(fu_interp *I, fu_op *op) {
  fu_interp *J = I->shadow;
  const fu_op_info *info = fu_op_info_of(op->kind);
  if (op->kind == FU_OP_OUTPUT) return output_bounds(I, J, op);
  if (op->kind == FU_OP_SEGMENT) {
    segment_bounds(J, op);
    return FU_OK;
  }
  if (op->kind == FU_OP_INPUT) return FU_OK;
  if (info->cls == FU_OC_REDUCE || info->cls == FU_OC_VARIANCE) return reduction_bound(I, J, op);
  if (info->cls == FU_OC_MATMUL) return matmul_bound(I, J, op);
  if (info->cls == FU_OC_INDEX) return index_bound(I, J, op);
  bool bounded = false, lost = false;
  for (uint32_t i = 0; i < op->n_operands; i++) {
    fu_value *v = op->operands[i];
    if (!is_value(J, v)) continue;
    bounded = bounded || J->slots[v->id].ready;
    lost = lost || J->lost[v->id];
  }
  if (lost) mark_lost(J, op);
  bool starts = fu_op_has(op->kind, FU_OF_APPROX);
  if (lost || (!bounded && !starts)) return FU_OK;
  if (fu_op_has(op->kind, FU_OF_POINTWISE)) return pointwise_bound(I, J, op, bounded);
  return shape_bound(I, J, op);
}
