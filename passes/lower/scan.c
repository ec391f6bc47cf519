/* fuser: the scan lowering: one thread per line of a cumsum, cumprod,
 * cummax or cummin (the schedule of passes/schedule/scan.c).
 *
 * Thread r of the launch takes line r (the other dims' coordinates, r
 * unflattened row-major over their extents), and if r is below the
 * number of lines folds the line in order:
 *
 *   acc = identity                        (-0.0, 1, -inf or +inf; ints 0, 1, min, max)
 *   for j in [0, n):  acc = op(acc, x[line, j]);  y[line, j] = acc
 *
 * with acc in f32 for f32, f16 and bf16, f64 for f64, i64 for ints and
 * bools: the interpreter's order and precision (lib/interp/scan.c), so the
 * kernel's values are the interpreter's exactly.  Extents are parameters
 * where symbolic and every offset goes through the operand's and result's
 * stride parameters, so any size and any input layout (expanded,
 * strided) is read where it lies; indexing is 64-bit. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fuser/lower.h"
#include "fuser/schedule.h"

enum { SCAN_BLOCK = 128 };

typedef struct scan_lw {
  fu_module *m;
  fu_kernel *k;
  fu_kbuilder b;
  bool failed;
} scan_lw;

static fu_kval *ok(scan_lw *L, fu_kval *v) {
  if (!v) L->failed = true;
  return v;
}

static fu_kval *bin(scan_lw *L, fu_op_kind op, fu_dtype t, fu_kval *a, fu_kval *b) {
  return a && b ? ok(L, fu_kb_binary(&L->b, NULL, op, t, a, b)) : ok(L, NULL);
}

static fu_kval *cast(scan_lw *L, fu_kval *v, fu_dtype t) {
  if (!v || v->dtype == t) return v;
  return ok(L, fu_kb_unary(&L->b, NULL, FU_OP_CAST, t, v));
}

/* The running value's start: op(start, x) == x for every x (-0.0 keeps a
 * first element of -0.0 a sum's own; NaN propagates through maximum and
 * minimum from +-inf as from any value). */
static fu_kval *identity(scan_lw *L, fu_op_kind k, fu_dtype ct) {
  bool fl = fu_dtype_is_float(ct);
  switch (k) {
  case FU_OP_CUMSUM: return ok(L, fl ? fu_kb_const_f(&L->b, "init", ct, -0.0) : fu_kb_const_i(&L->b, "init", ct, 0));
  case FU_OP_CUMPROD: return ok(L, fl ? fu_kb_const_f(&L->b, "init", ct, 1.0) : fu_kb_const_i(&L->b, "init", ct, 1));
  case FU_OP_CUMMAX:
    return ok(L, fl ? fu_kb_const_f(&L->b, "init", ct, -INFINITY) : fu_kb_const_i(&L->b, "init", ct, INT64_MIN));
  default:
    return ok(L, fl ? fu_kb_const_f(&L->b, "init", ct, INFINITY) : fu_kb_const_i(&L->b, "init", ct, INT64_MAX));
  }
}

static fu_op_kind step_op(fu_op_kind k) {
  return k == FU_OP_CUMSUM ? FU_OP_ADD : k == FU_OP_CUMPROD ? FU_OP_MUL : k == FU_OP_CUMMAX ? FU_OP_MAXIMUM : FU_OP_MINIMUM;
}

/* Extent d of v as an i64 kernel value (a parameter when symbolic, shared
 * by name), and its launch expression. */
static fu_kval *extent(scan_lw *L, const fu_value *v, int32_t d, fu_kval **syms, const char **names, uint32_t *n) {
  fu_extent e = v->type.dims[d];
  if (fu_extent_is_const(e)) return ok(L, fu_kb_const_i(&L->b, NULL, FU_DT_I64, e.value));
  for (uint32_t i = 0; i < *n; i++)
    if (strcmp(names[i], e.sym) == 0) return syms[i];
  names[*n] = e.sym;
  return syms[(*n)++] = ok(L, fu_kernel_extent_param(L->m, L->k, e.sym, FU_DT_I64, e.sym));
}

static fu_lexpr *lextent(fu_module *m, fu_extent e) {
  return fu_extent_is_const(e) ? fu_lexpr_const(m, e.value) : fu_lexpr_sym(m, e.sym);
}

static fu_kval *stride(scan_lw *L, fu_kval *t, int32_t d) {
  char name[64];
  snprintf(name, sizeof name, "%s_stride%d", t->name ? t->name : "t", (int)d);
  return ok(L, fu_kernel_stride_param(L->m, L->k, name, FU_DT_I64, t, d));
}

/* The kernel, verified. */
static fu_status finish(scan_lw *L, const fu_op *seg, fu_diag_engine *diag, fu_kernel **out) {
  if (fu_kernel_verify(L->k, diag, NULL) != FU_OK) {
    fu_error(diag, seg->loc, "internal error: the kernel lowered from '@%s' does not verify",
             seg->u.segment.name ? seg->u.segment.name : "?");
    return FU_ERR_VERIFY;
  }
  *out = L->k;
  return FU_OK;
}

fu_status fu_lower_scan(fu_fusion *f, fu_op *seg, const fu_lower_options *opt, fu_diag_engine *diag, fu_kernel **out) {
  *out = NULL;
  const fu_schedule *s = seg->u.segment.schedule;
  const fu_op *op = seg->u.segment.body ? seg->u.segment.body->first : NULL;
  if (!s || !op || op->next || !fu_op_has(op->kind, FU_OF_SCAN)) {
    fu_error(diag, seg->loc, "scan segment '@%s' does not hold exactly one scheduled scan",
             seg->u.segment.name ? seg->u.segment.name : "?");
    return FU_ERR_VERIFY;
  }
  fu_value *x = op->operands[0], *y = op->results[0];
  int32_t rank = y->type.rank, dim = (int32_t)op->u.scan.dim;
  fu_dtype yt = y->type.dtype;
  fu_dtype ct = yt == FU_DT_F64 ? FU_DT_F64 : fu_dtype_is_float(yt) ? FU_DT_F32 : FU_DT_I64;
  char name[256];
  fu_kernel_name_for(f, seg, name, sizeof name);
  scan_lw L = {f->module, fu_kernel_new(f->module, name), {0}, false};
  if (!L.k) return FU_ERR_NOMEM;
  L.k->index_dtype = FU_DT_I64;
  L.b = fu_kbuilder_at(L.m, L.k, &L.k->body);
  fu_kval *px = ok(&L, fu_kernel_tensor_param(L.m, L.k, "x", x->type.dtype, x, true, true,
                                               (uint32_t)fu_dtype_size(x->type.dtype)));
  fu_kval *py = ok(&L, fu_kernel_tensor_param(L.m, L.k, "y", yt, y, false, true, (uint32_t)fu_dtype_size(yt)));
  if (L.failed) return FU_ERR_NOMEM;
  /* the launch: ceil(lines / 128) blocks of 128 threads (one thread for a
   * rank-1 scan); at least one block, so an empty tensor launches */
  bool threads = rank > 1;
  fu_lexpr *lines = fu_lexpr_const(L.m, 1);
  for (int32_t d = 0; d < rank; d++)
    if (d != dim) lines = fu_lexpr_binary(L.m, FU_LX_MUL, lines, lextent(L.m, y->type.dims[d]));
  L.k->block[0] = threads ? SCAN_BLOCK : 1;
  L.k->grid[0] = threads ? fu_lexpr_binary(L.m, FU_LX_MAX, fu_lexpr_const(L.m, 1),
                                           fu_lexpr_binary(L.m, FU_LX_CEIL_DIV, lines, fu_lexpr_const(L.m, SCAN_BLOCK)))
                         : fu_lexpr_const(L.m, 1);
  if (!L.k->grid[0]) return FU_ERR_NOMEM;
  /* a constant extent 0: no element, and a body would divide by it */
  for (int32_t d = 0; d < rank; d++)
    if (fu_extent_is_const(y->type.dims[d]) && y->type.dims[d].value == 0) return finish(&L, seg, diag, out);
  fu_kval *syms[FU_MAX_RANK];
  const char *names[FU_MAX_RANK];
  uint32_t n_syms = 0;
  fu_kval *ext[FU_MAX_RANK];
  for (int32_t d = 0; d < rank; d++) ext[d] = extent(&L, y, d, syms, names, &n_syms);
  /* r = blockIdx.x * 128 + threadIdx.x, when r < lines */
  fu_kval *r = ok(&L, fu_kb_const_i(&L.b, NULL, FU_DT_I64, 0)), *n_lines = ok(&L, fu_kb_const_i(&L.b, NULL, FU_DT_I64, 1));
  if (threads) {
    fu_kval *bx = cast(&L, ok(&L, fu_kb_special(&L.b, "bx", FU_SP_CTAID_X, FU_DT_I32)), FU_DT_I64);
    fu_kval *tx = cast(&L, ok(&L, fu_kb_special(&L.b, "tx", FU_SP_TID_X, FU_DT_I32)), FU_DT_I64);
    r = bin(&L, FU_OP_ADD, FU_DT_I64, bin(&L, FU_OP_MUL, FU_DT_I64, bx, ok(&L, fu_kb_const_i(&L.b, NULL, FU_DT_I64, SCAN_BLOCK))), tx);
    for (int32_t d = 0; d < rank; d++)
      if (d != dim) n_lines = bin(&L, FU_OP_MUL, FU_DT_I64, n_lines, ext[d]);
  }
  fu_kval *in_range = bin(&L, FU_OP_LT, FU_DT_BOOL, r, n_lines);
  fu_kinst *br = in_range ? fu_kb_if(&L.b, in_range) : NULL;
  if (!br) return FU_ERR_NOMEM;
  L.b = fu_kbuilder_at(L.m, L.k, &br->u.branch.then_body);
  /* the line's coordinates, innermost first, and its offsets */
  fu_kval *zero = ok(&L, fu_kb_const_i(&L.b, NULL, FU_DT_I64, 0));
  fu_kval *rest = r, *bx_off = zero, *by_off = zero;
  for (int32_t d = rank - 1; d >= 0; d--) {
    if (d == dim) continue;
    fu_kval *c = bin(&L, FU_OP_FMOD, FU_DT_I64, rest, ext[d]);
    rest = bin(&L, FU_OP_DIV, FU_DT_I64, rest, ext[d]);
    bx_off = bin(&L, FU_OP_ADD, FU_DT_I64, bx_off, bin(&L, FU_OP_MUL, FU_DT_I64, c, stride(&L, px, d)));
    by_off = bin(&L, FU_OP_ADD, FU_DT_I64, by_off, bin(&L, FU_OP_MUL, FU_DT_I64, c, stride(&L, py, d)));
  }
  fu_kval *sx = stride(&L, px, dim), *sy = stride(&L, py, dim);
  fu_kval *acc = ok(&L, fu_kval_new_mutable(L.m, L.k, "acc", ct));
  fu_kval *init = identity(&L, op->kind, ct);
  if (L.failed || !fu_kb_assign(&L.b, acc, init)) return FU_ERR_NOMEM;
  fu_kval *one = ok(&L, fu_kb_const_i(&L.b, NULL, FU_DT_I64, 1));
  fu_kinst *lp = one ? fu_kb_for(&L.b, "j", zero, ext[dim], one, FU_LOOP_SERIAL) : NULL;
  if (!lp) return FU_ERR_NOMEM;
  L.b = fu_kbuilder_at(L.m, L.k, &lp->u.loop.body);
  fu_kval *j = lp->results[0], *v = NULL;
  fu_kval *xi = bin(&L, FU_OP_ADD, FU_DT_I64, bx_off, bin(&L, FU_OP_MUL, FU_DT_I64, j, sx));
  fu_kval *yi = bin(&L, FU_OP_ADD, FU_DT_I64, by_off, bin(&L, FU_OP_MUL, FU_DT_I64, j, sy));
  if (L.failed || !fu_kb_load(&L.b, "xj", px, xi, 1, x->type.dtype, &v) || !v) return FU_ERR_NOMEM;
  fu_kval *a = ok(&L, fu_kb_read(&L.b, "a", acc));
  fu_kval *next = bin(&L, step_op(op->kind), ct, a, cast(&L, v, ct));
  fu_kval *stored = cast(&L, next, yt);
  if (L.failed || !fu_kb_assign(&L.b, acc, next) || !fu_kb_store(&L.b, py, yi, &stored, 1)) return FU_ERR_NOMEM;
  return finish(&L, seg, diag, out);
}
