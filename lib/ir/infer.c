/* fuser: shape and dtype inference, one rule per op class (ops.def).
 *
 * Every check reports at the op's location with a message that names the op,
 * the offending operand and the types involved, spelled as in the text
 * format, plus a note at the operand's definition where that helps. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fuser/verify.h"
#include "verify_internal.h"

typedef struct ictx {
  fu_op *op;
  const char *name; /* the op's text name */
  fu_diag_engine *diag;
  fu_extent *scratch;
} ictx;

static fu_status err(ictx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static fu_status err(ictx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fu_diag_vreport(c->diag, FU_SEV_ERROR, c->op->loc, fmt, ap);
  va_end(ap);
  return FU_ERR_VERIFY;
}

/* A note at the definition of an operand, so the user sees where a
 * mismatching type came from. */
static void note_def(ictx *c, const fu_value *v) {
  if (!v || v->is_literal || !v->def || !fu_loc_known(v->def->loc) || v->def == c->op) return;
  fu_ir_valstr vs;
  fu_note(c->diag, v->def->loc, "%s is defined here", fu_ir_value_str(&vs, v));
}

static fu_extent *dims_of(ictx *c, uint32_t result) { return c->scratch + (size_t)result * FU_MAX_RANK; }

/* ---- small formatting helpers ------------------------------------------ */

typedef struct extstr {
  char s[72];
} extstr;

static const char *ext_str(extstr *b, fu_extent e) {
  if (e.sym)
    snprintf(b->s, sizeof b->s, "%s", e.sym);
  else
    snprintf(b->s, sizeof b->s, "%" PRId64, e.value);
  return b->s;
}

/* ---- shared checks ------------------------------------------------------ */

int fu_ir_expected_results(fu_op_kind k) {
  switch (k) {
  case FU_OP_VAR_MEAN: return 2;
  case FU_OP_INPUT: return 1;
  case FU_OP_OUTPUT:
  case FU_OP_SEGMENT: return 0;
  default: return (unsigned)k < FU_OP_COUNT ? 1 : -1;
  }
}

bool fu_ir_type_ok(const fu_type *t) {
  if (t->dtype == FU_DT_NONE || (unsigned)t->dtype >= FU_DT_COUNT) return false;
  if (t->rank < FU_SCALAR_RANK || t->rank > FU_MAX_RANK || (t->rank > 0 && !t->dims)) return false;
  for (int32_t i = 0; i < t->rank; i++)
    if (!t->dims[i].sym && t->dims[i].value < 0) return false;
  return true;
}

bool fu_ir_check_type(const fu_type *t, fu_loc loc, const char *what, fu_diag_engine *diag) {
  if (t->dtype == FU_DT_NONE || (unsigned)t->dtype >= FU_DT_COUNT) {
    fu_error(diag, loc, "%s has no type", what);
    return false;
  }
  if (t->rank < FU_SCALAR_RANK || t->rank > FU_MAX_RANK) {
    fu_error(diag, loc, "%s: rank %" PRId32 " is not supported (the maximum is %d)", what, t->rank, FU_MAX_RANK);
    return false;
  }
  if (t->rank > 0 && !t->dims) {
    fu_error(diag, loc, "%s: type of rank %" PRId32 " has no extents", what, t->rank);
    return false;
  }
  for (int32_t i = 0; i < t->rank; i++) {
    if (!t->dims[i].sym && t->dims[i].value < 0) {
      fu_ir_tystr ts;
      fu_error(diag, loc, "%s: type %s has a negative extent in dim %" PRId32, what, fu_ir_type_str(&ts, t), i);
      return false;
    }
  }
  return true;
}

/* Operands are checked structurally first so that no rule below can read
 * past a bad type; a bad operand type was already reported where it was
 * defined, so this only guards (the message still names it). */
static fu_status check_operands(ictx *c) {
  fu_op *op = c->op;
  const fu_op_info *info = fu_op_info_of(op->kind);
  int want = info->num_operands;
  if (want >= 0 && op->n_operands != (uint32_t)want)
    return err(c, "'%s' expects %d operand%s, got %" PRIu32, c->name, want, want == 1 ? "" : "s", op->n_operands);
  if (want < 0) {
    uint32_t min = (op->kind == FU_OP_CAT || op->kind == FU_OP_OUTPUT) ? 1 : 0;
    if (op->n_operands < min)
      return err(c, "'%s' expects at least %" PRIu32 " operand, got %" PRIu32, c->name, min, op->n_operands);
  }
  int want_res = fu_ir_expected_results(op->kind);
  if (op->n_results != (uint32_t)want_res)
    return err(c, "'%s' expects %d result%s, got %" PRIu32, c->name, want_res, want_res == 1 ? "" : "s",
               op->n_results);
  for (uint32_t i = 0; i < op->n_results; i++)
    if (!op->results[i]) return err(c, "'%s': result %" PRIu32 " is missing", c->name, i);
  for (uint32_t i = 0; i < op->n_operands; i++) {
    const fu_value *v = op->operands[i];
    if (!v) return err(c, "'%s': operand %" PRIu32 " is missing", c->name, i);
    const fu_type *t = &v->type;
    if (t->dtype == FU_DT_NONE || (unsigned)t->dtype >= FU_DT_COUNT || t->rank < FU_SCALAR_RANK ||
        t->rank > FU_MAX_RANK || (t->rank > 0 && !t->dims)) {
      fu_ir_valstr vs;
      return err(c, "'%s': operand %" PRIu32 " %s has no valid type", c->name, i, fu_ir_value_str(&vs, v));
    }
  }
  return FU_OK;
}

static fu_status need_tensor(ictx *c, uint32_t i) {
  const fu_value *v = c->op->operands[i];
  if (fu_type_is_tensor(&v->type)) return FU_OK;
  fu_ir_valstr vs;
  fu_ir_tystr ts;
  err(c, "'%s': operand %" PRIu32 " %s of type %s must be a tensor", c->name, i, fu_ir_value_str(&vs, v),
      fu_ir_type_str(&ts, &v->type));
  note_def(c, v);
  return FU_ERR_VERIFY;
}

static fu_status need_scalar(ictx *c, uint32_t i, const char *role) {
  const fu_value *v = c->op->operands[i];
  if (fu_type_is_scalar(&v->type)) return FU_OK;
  fu_ir_valstr vs;
  fu_ir_tystr ts;
  err(c, "'%s': %s %s of type %s must be a scalar", c->name, role, fu_ir_value_str(&vs, v),
      fu_ir_type_str(&ts, &v->type));
  note_def(c, v);
  return FU_ERR_VERIFY;
}

/* The stated type of result i, for ops whose result type is an argument. */
static const fu_type *stated(ictx *c, uint32_t i, bool tensor) {
  const fu_type *t = &c->op->results[i]->type;
  if (t->dtype == FU_DT_NONE) {
    err(c, "'%s' requires a stated result type", c->name);
    return NULL;
  }
  if (!fu_ir_type_ok(t)) {
    char what[48];
    snprintf(what, sizeof what, "'%s'", c->name);
    fu_ir_check_type(t, c->op->loc, what, c->diag);
    return NULL;
  }
  if (tensor && !fu_type_is_tensor(t)) {
    fu_ir_tystr ts;
    err(c, "'%s': result type %s must be a tensor type", c->name, fu_ir_type_str(&ts, t));
    return NULL;
  }
  return t;
}

static void copy_type(ictx *c, uint32_t result, const fu_type *t, fu_type *out) {
  fu_extent *d = dims_of(c, result);
  for (int32_t i = 0; i < t->rank; i++) d[i] = t->dims[i];
  out->dtype = t->dtype;
  out->rank = t->rank;
  out->dims = d;
}

/* Stated-type ops keep the operand's dtype (all but cast, full and iota). */
static fu_status same_dtype(ictx *c, const fu_type *res, uint32_t operand) {
  const fu_value *v = c->op->operands[operand];
  if (res->dtype == v->type.dtype) return FU_OK;
  fu_ir_tystr a, b;
  fu_ir_valstr vs;
  err(c, "'%s': result type %s must have the dtype of operand %" PRIu32 " %s of type %s", c->name,
      fu_ir_type_str(&a, res), operand, fu_ir_value_str(&vs, v), fu_ir_type_str(&b, &v->type));
  note_def(c, v);
  return FU_ERR_VERIFY;
}

/* Axes in the IR are normalized: in range, sorted, unique. */
static fu_status check_axes(ictx *c, const fu_int_list *axes, const char *what_one, const char *what_many) {
  const fu_value *x = c->op->operands[0];
  int32_t rank = x->type.rank;
  for (uint32_t i = 0; i < axes->n; i++) {
    if (axes->v[i] < 0 || axes->v[i] >= rank) {
      fu_ir_valstr vs;
      fu_ir_tystr ts;
      return err(c, "'%s': %s %" PRId64 " is out of range for operand %s of type %s (rank %" PRId32 ")", c->name,
                 what_one, axes->v[i], fu_ir_value_str(&vs, x), fu_ir_type_str(&ts, &x->type), rank);
    }
    if (i && axes->v[i] <= axes->v[i - 1]) {
      fu_ir_liststr ls;
      return err(c, "'%s': %s must be sorted and unique, got %s", c->name, what_many, fu_ir_list_str(&ls, axes->v, axes->n));
    }
  }
  return FU_OK;
}

/* Result shape of a reduction: reduced axes removed, or kept as 1. */
static void reduced_shape(ictx *c, const fu_int_list *axes, bool keepdim, fu_dtype dt, uint32_t result,
                          fu_type *out) {
  const fu_type *x = &c->op->operands[0]->type;
  fu_extent *d = dims_of(c, result);
  int32_t r = 0;
  uint32_t k = 0;
  for (int32_t i = 0; i < x->rank; i++) {
    bool reduced = k < axes->n && axes->v[k] == i;
    if (reduced) k++;
    if (!reduced) {
      d[r++] = x->dims[i];
    } else if (keepdim) {
      fu_extent one = {1, NULL};
      d[r++] = one;
    }
  }
  out->dtype = dt;
  out->rank = r;
  out->dims = d;
}

/* ---- pointwise ---------------------------------------------------------- */

/* Broadcast the shapes of the given operands: tensors need equal ranks and,
 * per dim, equal extents or a constant 1; scalars combine with anything. */
static fu_status pointwise_shape(ictx *c, const uint32_t *idx, uint32_t n, fu_type *out) {
  fu_op *op = c->op;
  fu_extent *d = dims_of(c, 0);
  uint32_t src[FU_MAX_RANK];
  int64_t ref = -1;
  int32_t rank = FU_SCALAR_RANK;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t i = idx[k];
    const fu_value *v = op->operands[i];
    if (fu_type_is_scalar(&v->type)) continue;
    if (ref < 0) {
      ref = i;
      rank = v->type.rank;
      for (int32_t j = 0; j < rank; j++) {
        d[j] = v->type.dims[j];
        src[j] = i;
      }
      continue;
    }
    const fu_value *r = op->operands[ref];
    fu_ir_valstr vs, rs;
    fu_ir_tystr ts, rt;
    if (v->type.rank != rank) {
      err(c, "'%s': operand %" PRIu32 " %s of type %s has rank %" PRId32 ", but operand %" PRId64
             " %s of type %s has rank %" PRId32,
          c->name, i, fu_ir_value_str(&vs, v), fu_ir_type_str(&ts, &v->type), v->type.rank, ref,
          fu_ir_value_str(&rs, r), fu_ir_type_str(&rt, &r->type), rank);
      note_def(c, v);
      return FU_ERR_VERIFY;
    }
    for (int32_t j = 0; j < rank; j++) {
      fu_extent e = v->type.dims[j];
      if (fu_extent_is_one(e)) continue;
      if (fu_extent_is_one(d[j])) {
        d[j] = e;
        src[j] = i;
        continue;
      }
      if (fu_extent_equal(e, d[j])) continue;
      const fu_value *s = op->operands[src[j]];
      extstr e1, e2;
      err(c, "'%s': operand %" PRIu32 " %s of type %s does not broadcast with operand %" PRIu32
             " %s of type %s (dim %" PRId32 ": %s vs %s)",
          c->name, i, fu_ir_value_str(&vs, v), fu_ir_type_str(&ts, &v->type), src[j], fu_ir_value_str(&rs, s),
          fu_ir_type_str(&rt, &s->type), j, ext_str(&e1, e), ext_str(&e2, d[j]));
      note_def(c, v);
      return FU_ERR_VERIFY;
    }
  }
  out->rank = rank;
  out->dims = d;
  return FU_OK;
}

static fu_status need_int_or_bool(ictx *c, uint32_t i) {
  const fu_value *v = c->op->operands[i];
  if (!fu_dtype_is_float(v->type.dtype)) return FU_OK;
  fu_ir_valstr vs;
  fu_ir_tystr ts;
  err(c, "'%s': operand %" PRIu32 " %s of type %s must be an integer or bool", c->name, i,
      fu_ir_value_str(&vs, v), fu_ir_type_str(&ts, &v->type));
  note_def(c, v);
  return FU_ERR_VERIFY;
}

/* The result dtype of a pointwise op from the dtype it computes in. */
static fu_dtype flag_dtype(fu_op_kind k, fu_dtype common) {
  if (fu_op_has(k, FU_OF_BOOL_RESULT)) return FU_DT_BOOL;
  if (fu_op_has(k, FU_OF_FLOAT_RESULT) && !fu_dtype_is_float(common)) return FU_DT_F32;
  return common;
}

static fu_status infer_unary(ictx *c, fu_type *out) {
  if (fu_op_has(c->op->kind, FU_OF_INT_ONLY) && need_int_or_bool(c, 0)) return FU_ERR_VERIFY;
  uint32_t idx = 0;
  fu_status s = pointwise_shape(c, &idx, 1, out);
  out->dtype = flag_dtype(c->op->kind, c->op->operands[0]->type.dtype);
  return s;
}

static fu_status infer_binary(ictx *c, fu_type *out) {
  if (fu_op_has(c->op->kind, FU_OF_INT_ONLY))
    for (uint32_t i = 0; i < 2; i++)
      if (need_int_or_bool(c, i)) return FU_ERR_VERIFY;
  static const uint32_t idx[2] = {0, 1};
  fu_status s = pointwise_shape(c, idx, 2, out);
  out->dtype = flag_dtype(c->op->kind, fu_dtype_common(c->op->operands, 2));
  return s;
}

static fu_status infer_ternary(ictx *c, fu_type *out) {
  fu_op *op = c->op;
  if (op->kind == FU_OP_WHERE && !fu_dtype_is_bool(op->operands[0]->type.dtype)) {
    fu_ir_valstr vs;
    fu_ir_tystr ts;
    err(c, "'where': condition %s of type %s must be bool", fu_ir_value_str(&vs, op->operands[0]),
        fu_ir_type_str(&ts, &op->operands[0]->type));
    note_def(c, op->operands[0]);
    return FU_ERR_VERIFY;
  }
  static const uint32_t idx[3] = {0, 1, 2};
  fu_status s = pointwise_shape(c, idx, 3, out);
  if (s) return s;
  switch (op->kind) {
  case FU_OP_WHERE: out->dtype = fu_dtype_common(op->operands + 1, 2); break;
  case FU_OP_CLAMP: out->dtype = op->operands[0]->type.dtype; break;
  case FU_OP_LERP: { /* a float result */
    fu_dtype d = fu_dtype_common(op->operands, 3);
    out->dtype = fu_dtype_is_float(d) ? d : FU_DT_F32;
    break;
  }
  default: /* a new ternary op needs its dtype rule here */
    return err(c, "'%s': no dtype rule for this ternary op", c->name);
  }
  return FU_OK;
}

static fu_status infer_cast(ictx *c, fu_type *out) {
  const fu_type *t = stated(c, 0, false);
  if (!t) return FU_ERR_VERIFY;
  const fu_value *x = c->op->operands[0];
  fu_type shape = x->type;
  shape.dtype = t->dtype;
  if (!fu_type_equal(&shape, t)) {
    fu_ir_tystr a, b;
    fu_ir_valstr vs;
    err(c, "'cast': result type %s must have the shape of operand 0 %s of type %s", fu_ir_type_str(&a, t),
        fu_ir_value_str(&vs, x), fu_ir_type_str(&b, &x->type));
    note_def(c, x);
    return FU_ERR_VERIFY;
  }
  copy_type(c, 0, t, out);
  return FU_OK;
}

/* ---- reductions --------------------------------------------------------- */

static fu_status infer_reduce(ictx *c, fu_type *out) {
  fu_op *op = c->op;
  if (need_tensor(c, 0) || check_axes(c, &op->u.reduce.axes, "axis", "axes")) return FU_ERR_VERIFY;
  fu_dtype in = op->operands[0]->type.dtype, dt = op->u.reduce.dtype;
  if ((unsigned)dt >= FU_DT_COUNT) return err(c, "'%s': invalid dtype attribute", c->name);
  if (dt == FU_DT_NONE) {
    bool widen = (op->kind == FU_OP_SUM || op->kind == FU_OP_PROD) && !fu_dtype_is_float(in);
    dt = widen ? FU_DT_I64 : in;
  }
  /* max/min of no elements has no value (PyTorch raises): a constant
   * 0-size reduced dim is an error here; sum and prod give their identity */
  const fu_value *x = op->operands[0];
  for (uint32_t i = 0; (op->kind == FU_OP_MAX || op->kind == FU_OP_MIN) && i < op->u.reduce.axes.n; i++) {
    int64_t a = op->u.reduce.axes.v[i];
    fu_extent e = x->type.dims[a];
    if (!e.sym && e.value == 0)
      return err(c, "'%s': reduced dim %" PRId64 " of operand '%%%s' has size 0, and the %s of no elements is undefined",
                 c->name, a, x->name ? x->name : "?", c->name);
  }
  reduced_shape(c, &op->u.reduce.axes, op->u.reduce.keepdim, dt, 0, out);
  return FU_OK;
}

static fu_status infer_variance(ictx *c, fu_type *out) {
  fu_op *op = c->op;
  if (need_tensor(c, 0)) return FU_ERR_VERIFY;
  const fu_value *x = op->operands[0];
  if (!fu_dtype_is_float(x->type.dtype)) {
    fu_ir_valstr vs;
    fu_ir_tystr ts;
    err(c, "'%s': operand 0 %s of type %s must be floating-point", c->name, fu_ir_value_str(&vs, x),
        fu_ir_type_str(&ts, &x->type));
    note_def(c, x);
    return FU_ERR_VERIFY;
  }
  if (check_axes(c, &op->u.variance.axes, "axis", "axes")) return FU_ERR_VERIFY;
  if (op->u.variance.correction < 0)
    return err(c, "'%s': correction %" PRId64 " must be >= 0", c->name, op->u.variance.correction);
  for (uint32_t r = 0; r < op->n_results; r++)
    reduced_shape(c, &op->u.variance.axes, op->u.variance.keepdim, x->type.dtype, r, &out[r]);
  return FU_OK;
}

/* ---- shape ops ---------------------------------------------------------- */

static fu_status infer_broadcast_in_dim(ictx *c, fu_type *out) {
  fu_op *op = c->op;
  if (need_tensor(c, 0)) return FU_ERR_VERIFY;
  const fu_type *t = stated(c, 0, true);
  if (!t || same_dtype(c, t, 0)) return FU_ERR_VERIFY;
  const fu_value *x = op->operands[0];
  const fu_int_list *bd = &op->u.broadcast_in_dim.broadcast_dims;
  fu_ir_valstr vs;
  fu_ir_tystr xs, ts;
  if (bd->n != (uint32_t)x->type.rank)
    return err(c, "'broadcast_in_dim': broadcast_dims has %" PRIu32 " entries, but operand %s of type %s has rank %" PRId32,
               bd->n, fu_ir_value_str(&vs, x), fu_ir_type_str(&xs, &x->type), x->type.rank);
  for (uint32_t i = 0; i < bd->n; i++) {
    if (bd->v[i] < 0 || bd->v[i] >= t->rank)
      return err(c, "'broadcast_in_dim': broadcast_dims entry %" PRId64 " is out of range for result type %s (rank %" PRId32 ")",
                 bd->v[i], fu_ir_type_str(&ts, t), t->rank);
    if (i && bd->v[i] <= bd->v[i - 1]) {
      fu_ir_liststr ls;
      return err(c, "'broadcast_in_dim': broadcast_dims must be strictly increasing, got %s", fu_ir_list_str(&ls, bd->v, bd->n));
    }
    fu_extent e = x->type.dims[i], r = t->dims[bd->v[i]];
    if (!fu_extent_is_one(e) && !fu_extent_equal(e, r)) {
      extstr e1, e2;
      err(c, "'broadcast_in_dim': operand dim %" PRIu32 " of extent %s cannot map to result dim %" PRId64
             " of extent %s (operand %s of type %s, result type %s)",
          i, ext_str(&e1, e), bd->v[i], ext_str(&e2, r), fu_ir_value_str(&vs, x), fu_ir_type_str(&xs, &x->type),
          fu_ir_type_str(&ts, t));
      note_def(c, x);
      return FU_ERR_VERIFY;
    }
  }
  copy_type(c, 0, t, out);
  return FU_OK;
}

static fu_status infer_broadcast(ictx *c, fu_type *out) {
  fu_op *op = c->op;
  if (need_tensor(c, 0)) return FU_ERR_VERIFY;
  const fu_value *x = op->operands[0];
  uint32_t n = op->u.broadcast.n, kept = 0;
  if (n > FU_MAX_RANK)
    return err(c, "'broadcast': is_broadcast_dim has %" PRIu32 " entries (the maximum rank is %d)", n, FU_MAX_RANK);
  for (uint32_t i = 0; i < n; i++) kept += !op->u.broadcast.is_broadcast[i];
  if (kept != (uint32_t)x->type.rank) {
    fu_ir_valstr vs;
    fu_ir_tystr ts;
    return err(c, "'broadcast': is_broadcast_dim has %" PRIu32 " false entries, but operand %s of type %s has rank %" PRId32,
               kept, fu_ir_value_str(&vs, x), fu_ir_type_str(&ts, &x->type), x->type.rank);
  }
  fu_extent *d = dims_of(c, 0);
  uint32_t k = 0;
  for (uint32_t i = 0; i < n; i++) {
    fu_extent one = {1, NULL};
    d[i] = op->u.broadcast.is_broadcast[i] ? one : x->type.dims[k++];
  }
  out->dtype = x->type.dtype;
  out->rank = (int32_t)n;
  out->dims = d;
  return FU_OK;
}

static fu_status infer_expand(ictx *c, fu_type *out) {
  fu_op *op = c->op;
  if (need_tensor(c, 0)) return FU_ERR_VERIFY;
  const fu_type *t = stated(c, 0, true);
  if (!t || same_dtype(c, t, 0)) return FU_ERR_VERIFY;
  const fu_value *x = op->operands[0];
  fu_ir_valstr vs;
  fu_ir_tystr xs, ts;
  if (t->rank != x->type.rank)
    return err(c, "'expand': result type %s has rank %" PRId32 ", but operand %s of type %s has rank %" PRId32,
               fu_ir_type_str(&ts, t), t->rank, fu_ir_value_str(&vs, x), fu_ir_type_str(&xs, &x->type),
               x->type.rank);
  for (int32_t i = 0; i < t->rank; i++) {
    fu_extent e = x->type.dims[i];
    if (fu_extent_is_one(e) || fu_extent_equal(e, t->dims[i])) continue;
    extstr e1, e2;
    err(c, "'expand': dim %" PRId32 " of operand %s of type %s has extent %s and cannot expand to %s (result type %s)",
        i, fu_ir_value_str(&vs, x), fu_ir_type_str(&xs, &x->type), ext_str(&e1, e), ext_str(&e2, t->dims[i]),
        fu_ir_type_str(&ts, t));
    note_def(c, x);
    return FU_ERR_VERIFY;
  }
  copy_type(c, 0, t, out);
  return FU_OK;
}

/* Element count of a shape as (product of constants, symbols); false when
 * the constant product overflows. */
static bool count_elems(const fu_type *t, int64_t *prod, const char **syms, int *nsym) {
  int64_t p = 1;
  bool ovf = false, zero = false; /* a 0 extent makes any product 0 */
  *nsym = 0;
  for (int32_t i = 0; i < t->rank; i++) {
    if (t->dims[i].sym) {
      syms[(*nsym)++] = t->dims[i].sym;
      continue;
    }
    zero |= t->dims[i].value == 0;
    ovf |= __builtin_mul_overflow(p, t->dims[i].value, &p);
  }
  *prod = zero ? 0 : p;
  return zero || !ovf;
}

/* Same element count: both empty (a constant 0 extent), or equal constant
 * products and the same multiset of symbols. */
static bool same_count(const fu_type *a, const fu_type *b, bool *overflow) {
  const char *sa[FU_MAX_RANK], *sb[FU_MAX_RANK];
  int na, nb;
  int64_t pa, pb;
  *overflow = false;
  if (!count_elems(a, &pa, sa, &na) || !count_elems(b, &pb, sb, &nb)) {
    *overflow = true;
    return false;
  }
  if (pa == 0 || pb == 0) return pa == pb;
  if (pa != pb || na != nb) return false;
  bool used[FU_MAX_RANK] = {false};
  for (int i = 0; i < na; i++) {
    int j = 0;
    while (j < nb && (used[j] || strcmp(sa[i], sb[j]) != 0)) j++;
    if (j == nb) return false;
    used[j] = true;
  }
  return true;
}

static fu_status infer_reshape(ictx *c, fu_type *out) {
  if (need_tensor(c, 0)) return FU_ERR_VERIFY;
  const fu_type *t = stated(c, 0, true);
  if (!t || same_dtype(c, t, 0)) return FU_ERR_VERIFY;
  const fu_value *x = c->op->operands[0];
  bool overflow;
  if (!same_count(&x->type, t, &overflow)) {
    fu_ir_valstr vs;
    fu_ir_tystr xs, ts;
    err(c, overflow ? "'reshape': the element count of result type %s or of operand %s of type %s overflows"
                    : "'reshape': result type %s has a different element count than operand %s of type %s",
        fu_ir_type_str(&ts, t), fu_ir_value_str(&vs, x), fu_ir_type_str(&xs, &x->type));
    note_def(c, x);
    return FU_ERR_VERIFY;
  }
  copy_type(c, 0, t, out);
  return FU_OK;
}

/* Whether l holds each of 0..rank-1 once. */
static bool is_permutation(const fu_int_list *l, int32_t rank) {
  bool seen[FU_MAX_RANK] = {false};
  if (l->n != (uint32_t)rank) return false;
  for (uint32_t i = 0; i < l->n; i++) {
    if (l->v[i] < 0 || l->v[i] >= rank || seen[l->v[i]]) return false;
    seen[l->v[i]] = true;
  }
  return true;
}

static fu_status infer_permute(ictx *c, fu_type *out) {
  fu_op *op = c->op;
  if (need_tensor(c, 0)) return FU_ERR_VERIFY;
  const fu_value *x = op->operands[0];
  const fu_int_list *p = &op->u.permute.dims;
  int32_t rank = x->type.rank;
  if (p->n != (uint32_t)rank) {
    fu_ir_valstr vs;
    fu_ir_tystr ts;
    return err(c, "'permute': dims has %" PRIu32 " entries, but operand %s of type %s has rank %" PRId32, p->n,
               fu_ir_value_str(&vs, x), fu_ir_type_str(&ts, &x->type), rank);
  }
  if (!is_permutation(p, rank)) {
    fu_ir_liststr ls;
    return err(c, "'permute': dims %s is not a permutation of 0..%" PRId32, fu_ir_list_str(&ls, p->v, p->n), rank - 1);
  }
  fu_extent *d = dims_of(c, 0);
  for (uint32_t i = 0; i < p->n; i++) d[i] = x->type.dims[p->v[i]];
  out->dtype = x->type.dtype;
  out->rank = rank;
  out->dims = d;
  return FU_OK;
}

static fu_status infer_squeeze(ictx *c, fu_type *out) {
  fu_op *op = c->op;
  if (need_tensor(c, 0) || check_axes(c, &op->u.squeeze.dims, "dim", "dims")) return FU_ERR_VERIFY;
  const fu_value *x = op->operands[0];
  const fu_int_list *sq = &op->u.squeeze.dims;
  for (uint32_t i = 0; i < sq->n; i++) {
    fu_extent e = x->type.dims[sq->v[i]];
    if (fu_extent_is_one(e)) continue;
    fu_ir_valstr vs;
    fu_ir_tystr ts;
    extstr es;
    err(c, "'squeeze': dim %" PRId64 " of operand %s of type %s has extent %s, not 1", sq->v[i],
        fu_ir_value_str(&vs, x), fu_ir_type_str(&ts, &x->type), ext_str(&es, e));
    note_def(c, x);
    return FU_ERR_VERIFY;
  }
  reduced_shape(c, sq, false, x->type.dtype, 0, out);
  return FU_OK;
}

/* Slicing a symbolic extent: [0, INT64_MAX) with step 1 keeps the whole
 * extent; other bounds give a constant extent (their end is checked against
 * the bound size at run time, not here). */
static fu_status infer_slice(ictx *c, fu_type *out) {
  fu_op *op = c->op;
  if (need_tensor(c, 0)) return FU_ERR_VERIFY;
  const fu_value *x = op->operands[0];
  const fu_int_list *st = &op->u.slice.starts, *en = &op->u.slice.ends, *sp = &op->u.slice.steps;
  uint32_t rank = (uint32_t)x->type.rank;
  fu_ir_valstr vs;
  fu_ir_tystr ts;
  if (st->n != rank || en->n != rank || (sp->n != rank && sp->n != 0))
    return err(c, "'slice': starts, ends and steps need one entry per dim of operand %s of type %s (rank %" PRIu32
                  "), got %" PRIu32 ", %" PRIu32 " and %" PRIu32,
               fu_ir_value_str(&vs, x), fu_ir_type_str(&ts, &x->type), rank, st->n, en->n, sp->n);
  fu_extent *d = dims_of(c, 0);
  for (uint32_t i = 0; i < rank; i++) {
    int64_t s = st->v[i], e = en->v[i], step = sp->n ? sp->v[i] : 1;
    fu_extent ext = x->type.dims[i];
    if (step < 1) return err(c, "'slice': step %" PRId64 " of dim %" PRIu32 " must be >= 1", step, i);
    if (s < 0 || s > e)
      return err(c, "'slice': dim %" PRIu32 ": start %" PRId64 " and end %" PRId64 " must satisfy 0 <= start <= end", i,
                 s, e);
    if (ext.sym && s == 0 && e == INT64_MAX && step == 1) {
      d[i] = ext;
      continue;
    }
    if (!ext.sym && e > ext.value) {
      err(c, "'slice': dim %" PRIu32 ": end %" PRId64 " exceeds extent %" PRId64 " of operand %s of type %s", i, e,
          ext.value, fu_ir_value_str(&vs, x), fu_ir_type_str(&ts, &x->type));
      note_def(c, x);
      return FU_ERR_VERIFY;
    }
    fu_extent r = {(e - s) / step + ((e - s) % step != 0), NULL};
    d[i] = r;
  }
  out->dtype = x->type.dtype;
  out->rank = (int32_t)rank;
  out->dims = d;
  return FU_OK;
}

static fu_status infer_cat(ictx *c, fu_type *out) {
  fu_op *op = c->op;
  for (uint32_t i = 0; i < op->n_operands; i++)
    if (need_tensor(c, i)) return FU_ERR_VERIFY;
  const fu_value *x0 = op->operands[0];
  int32_t rank = x0->type.rank;
  int64_t dim = op->u.cat.dim;
  fu_ir_valstr vs, v0s;
  fu_ir_tystr ts, t0s;
  if (dim < 0 || dim >= rank)
    return err(c, "'cat': dim %" PRId64 " is out of range for operand 0 %s of type %s (rank %" PRId32 ")", dim,
               fu_ir_value_str(&v0s, x0), fu_ir_type_str(&t0s, &x0->type), rank);
  fu_extent *d = dims_of(c, 0);
  for (int32_t j = 0; j < rank; j++) d[j] = x0->type.dims[j];
  d[dim].value = 0;
  d[dim].sym = NULL;
  fu_dtype dt = FU_DT_NONE;
  for (uint32_t i = 0; i < op->n_operands; i++) {
    const fu_value *v = op->operands[i];
    dt = fu_dtype_promote(dt, v->type.dtype);
    if (v->type.rank != rank) {
      err(c, "'cat': operand %" PRIu32 " %s of type %s has rank %" PRId32 ", but operand 0 %s of type %s has rank %" PRId32,
          i, fu_ir_value_str(&vs, v), fu_ir_type_str(&ts, &v->type), v->type.rank, fu_ir_value_str(&v0s, x0),
          fu_ir_type_str(&t0s, &x0->type), rank);
      note_def(c, v);
      return FU_ERR_VERIFY;
    }
    for (int32_t j = 0; j < rank; j++) {
      fu_extent e = v->type.dims[j];
      if (j == dim) {
        if (e.sym) {
          err(c, "'cat': cat along a symbolic extent is not supported (operand %" PRIu32 " %s of type %s, dim %" PRId64 ")",
              i, fu_ir_value_str(&vs, v), fu_ir_type_str(&ts, &v->type), dim);
          note_def(c, v);
          return FU_ERR_VERIFY;
        }
        if (__builtin_add_overflow(d[j].value, e.value, &d[j].value))
          return err(c, "'cat': the result extent of dim %" PRId64 " overflows", dim);
        continue;
      }
      if (fu_extent_equal(e, x0->type.dims[j])) continue;
      err(c, "'cat': operand %" PRIu32 " %s of type %s differs from operand 0 %s of type %s in dim %" PRId32
             " (only the cat dim %" PRId64 " may differ)",
          i, fu_ir_value_str(&vs, v), fu_ir_type_str(&ts, &v->type), fu_ir_value_str(&v0s, x0),
          fu_ir_type_str(&t0s, &x0->type), j, dim);
      note_def(c, v);
      return FU_ERR_VERIFY;
    }
  }
  out->dtype = dt;
  out->rank = rank;
  out->dims = d;
  return FU_OK;
}

/* widths pairs apply innermost dim first, as nvFuser's pad does. */
static fu_status infer_pad(ictx *c, fu_type *out) {
  fu_op *op = c->op;
  if (need_tensor(c, 0) || need_scalar(c, 1, "pad value")) return FU_ERR_VERIFY;
  const fu_value *x = op->operands[0];
  const fu_int_list *w = &op->u.pad.widths;
  int32_t rank = x->type.rank;
  fu_ir_valstr vs;
  fu_ir_tystr ts;
  if (w->n % 2) return err(c, "'pad': widths must have an even number of entries, got %" PRIu32, w->n);
  if (w->n / 2 > (uint32_t)rank)
    return err(c, "'pad': widths has %" PRIu32 " pairs, but operand %s of type %s has rank %" PRId32, w->n / 2,
               fu_ir_value_str(&vs, x), fu_ir_type_str(&ts, &x->type), rank);
  fu_extent *d = dims_of(c, 0);
  for (int32_t j = 0; j < rank; j++) d[j] = x->type.dims[j];
  for (uint32_t k = 0; k < w->n / 2; k++) {
    int32_t j = rank - 1 - (int32_t)k;
    int64_t before = w->v[2 * k], after = w->v[2 * k + 1];
    if (d[j].sym) {
      if (before == 0 && after == 0) continue;
      err(c, "'pad': cannot pad symbolic extent %s of dim %" PRId32 " of operand %s of type %s", d[j].sym, j,
          fu_ir_value_str(&vs, x), fu_ir_type_str(&ts, &x->type));
      note_def(c, x);
      return FU_ERR_VERIFY;
    }
    int64_t r;
    if (__builtin_add_overflow(d[j].value, before, &r) || __builtin_add_overflow(r, after, &r))
      return err(c, "'pad': the extent of dim %" PRId32 " overflows", j);
    if (r < 0)
      return err(c, "'pad': dim %" PRId32 " of extent %" PRId64 " would get extent %" PRId64 " with widths (%" PRId64
                    ", %" PRId64 ")",
                 j, d[j].value, r, before, after);
    d[j].value = r;
  }
  out->dtype = x->type.dtype;
  out->rank = rank;
  out->dims = d;
  return FU_OK;
}

static fu_status infer_full(ictx *c, fu_type *out) {
  if (need_scalar(c, 0, "fill value")) return FU_ERR_VERIFY;
  const fu_type *t = stated(c, 0, true);
  if (!t) return FU_ERR_VERIFY;
  copy_type(c, 0, t, out);
  return FU_OK;
}

static fu_status infer_iota(ictx *c, fu_type *out) {
  if (need_scalar(c, 0, "start") || need_scalar(c, 1, "step")) return FU_ERR_VERIFY;
  const fu_type *t = stated(c, 0, true);
  if (!t) return FU_ERR_VERIFY;
  if (t->rank != 1 || fu_dtype_is_bool(t->dtype)) {
    fu_ir_tystr ts;
    return err(c, "'iota': result type %s must be a rank-1 tensor of an integer or floating-point dtype",
               fu_ir_type_str(&ts, t));
  }
  copy_type(c, 0, t, out);
  return FU_OK;
}

/* ---- matmul and linear (torch.matmul and F.linear's shape rules) ------------ */

/* Operands of matmul or linear: tensors of one float dtype among f32, bf16
 * and f16 (the accumulation is f32 in every case). */
static fu_status mm_operand(ictx *c, uint32_t i) {
  if (need_tensor(c, i)) return FU_ERR_VERIFY;
  const fu_value *v = c->op->operands[i], *x = c->op->operands[0];
  fu_dtype dt = v->type.dtype;
  fu_ir_valstr vs, xs;
  fu_ir_tystr ts, xt;
  if (dt != FU_DT_F32 && dt != FU_DT_BF16 && dt != FU_DT_F16) {
    err(c, "'%s': operand %" PRIu32 " %s of type %s must be f32, bf16 or f16", c->name, i, fu_ir_value_str(&vs, v),
        fu_ir_type_str(&ts, &v->type));
    note_def(c, v);
    return FU_ERR_VERIFY;
  }
  if (dt != x->type.dtype) {
    err(c, "'%s': operand %" PRIu32 " %s of type %s must have the dtype of operand 0 %s of type %s", c->name, i,
        fu_ir_value_str(&vs, v), fu_ir_type_str(&ts, &v->type), fu_ir_value_str(&xs, x), fu_ir_type_str(&xt, &x->type));
    note_def(c, v);
    return FU_ERR_VERIFY;
  }
  return FU_OK;
}

/* The contracted extents of two operands must be equal. */
static fu_status mm_same_k(ictx *c, uint32_t ia, int32_t da, uint32_t ib, int32_t db) {
  const fu_value *a = c->op->operands[ia], *b = c->op->operands[ib];
  if (fu_extent_equal(a->type.dims[da], b->type.dims[db])) return FU_OK;
  fu_ir_valstr as, bs;
  fu_ir_tystr at, bt;
  extstr e1, e2;
  err(c, "'%s': the contracted dims differ: dim %" PRId32 " of operand %" PRIu32 " %s of type %s is %s, dim %" PRId32
         " of operand %" PRIu32 " %s of type %s is %s",
      c->name, da, ia, fu_ir_value_str(&as, a), fu_ir_type_str(&at, &a->type), ext_str(&e1, a->type.dims[da]), db, ib,
      fu_ir_value_str(&bs, b), fu_ir_type_str(&bt, &b->type), ext_str(&e2, b->type.dims[db]));
  note_def(c, b);
  return FU_ERR_VERIFY;
}

/* matmul: 1-D x 1-D is a dot product (rank 0), a 1-D operand gets a dim of
 * 1 prepended (first) or appended (second) that the result drops, and the
 * dims before the last two broadcast (right-aligned, 1 against anything).
 * linear(x, w[, b]): x[..., K] times w[N, K] transposed (w[K]: a dot over
 * the last dim), plus b[N] (or a bias of rank 0, or of one element). */
static fu_status infer_matmul(ictx *c, fu_type *out) {
  fu_op *op = c->op;
  bool linear = op->kind == FU_OP_LINEAR;
  if (linear && (op->n_operands < 2 || op->n_operands > 3))
    return err(c, "'linear' expects 2 or 3 operands (input, weight, optional bias), got %" PRIu32, op->n_operands);
  for (uint32_t i = 0; i < op->n_operands; i++)
    if (mm_operand(c, i)) return FU_ERR_VERIFY;
  const fu_type *a = &op->operands[0]->type, *b = &op->operands[1]->type;
  fu_extent *d = dims_of(c, 0);
  int32_t r = 0;
  fu_ir_valstr vs;
  fu_ir_tystr ts;
  if (a->rank < 1 || b->rank < 1 || (linear && b->rank > 2)) {
    const fu_value *v = a->rank < 1 ? op->operands[0] : op->operands[1];
    err(c, "'%s': operand %s of type %s must have rank %s", c->name, fu_ir_value_str(&vs, v), fu_ir_type_str(&ts, &v->type),
        linear && v == op->operands[1] ? "1 or 2 (a weight [out, in] or [in])" : "1 or more");
    note_def(c, v);
    return FU_ERR_VERIFY;
  }
  if (linear) {
    if (mm_same_k(c, 0, a->rank - 1, 1, b->rank - 1)) return FU_ERR_VERIFY;
    for (int32_t j = 0; j < a->rank - 1; j++) d[r++] = a->dims[j];
    if (b->rank == 2) d[r++] = b->dims[0];
    if (op->n_operands == 3) {
      const fu_type *bias = &op->operands[2]->type;
      fu_extent n = b->rank == 2 ? b->dims[0] : (fu_extent){1, NULL};
      bool ok = bias->rank == 0 || (bias->rank == 1 && (fu_extent_is_one(bias->dims[0]) || fu_extent_equal(bias->dims[0], n)));
      if (!ok) {
        extstr e;
        err(c, "'linear': bias %s of type %s must have rank 0, or rank 1 with extent %s (the weight's out dim) or 1",
            fu_ir_value_str(&vs, op->operands[2]), fu_ir_type_str(&ts, bias), ext_str(&e, n));
        note_def(c, op->operands[2]);
        return FU_ERR_VERIFY;
      }
    }
  } else {
    int32_t ka = a->rank - 1, kb = b->rank >= 2 ? b->rank - 2 : 0;
    if (mm_same_k(c, 0, ka, 1, kb)) return FU_ERR_VERIFY;
    int32_t ba = a->rank >= 2 ? a->rank - 2 : 0, bb = b->rank >= 2 ? b->rank - 2 : 0;
    int32_t nb = ba > bb ? ba : bb;
    for (int32_t j = 0; j < nb; j++) {
      int32_t ja = j - (nb - ba), jb = j - (nb - bb);
      fu_extent ea = ja >= 0 ? a->dims[ja] : (fu_extent){1, NULL};
      fu_extent eb = jb >= 0 ? b->dims[jb] : (fu_extent){1, NULL};
      if (fu_extent_is_one(ea)) d[r++] = eb;
      else if (fu_extent_is_one(eb) || fu_extent_equal(ea, eb)) d[r++] = ea;
      else {
        fu_ir_valstr bs;
        fu_ir_tystr bt;
        extstr e1, e2;
        return err(c, "'matmul': the batch dims of %s of type %s and %s of type %s do not broadcast (%s vs %s)",
                   fu_ir_value_str(&vs, op->operands[0]), fu_ir_type_str(&ts, a), fu_ir_value_str(&bs, op->operands[1]),
                   fu_ir_type_str(&bt, b), ext_str(&e1, ea), ext_str(&e2, eb));
      }
    }
    if (a->rank >= 2) d[r++] = a->dims[a->rank - 2];
    if (b->rank >= 2) d[r++] = b->dims[b->rank - 1];
  }
  if (r > FU_MAX_RANK) return err(c, "'%s': the result would have rank %" PRId32, c->name, r);
  out->dtype = a->dtype;
  out->rank = r;
  out->dims = d;
  return FU_OK;
}

/* uniform and normal: two float parameters, then the i64 seed and offset
 * scalars; the stated result is a float tensor of any shape. */
static fu_status infer_rng(ictx *c, fu_type *out) {
  const char *name = fu_op_info_of(c->op->kind)->name;
  bool uni = c->op->kind == FU_OP_UNIFORM;
  if (need_scalar(c, 0, uni ? "minval" : "mean") || need_scalar(c, 1, uni ? "maxval" : "std") ||
      need_scalar(c, 2, "rng_seed") || need_scalar(c, 3, "rng_offset"))
    return FU_ERR_VERIFY;
  for (uint32_t i = 2; i < 4; i++)
    if (!fu_dtype_is_int(c->op->operands[i]->type.dtype))
      return err(c, "'%s': %s must be an integer scalar, not %s", name, i == 2 ? "rng_seed" : "rng_offset",
                 fu_dtype_name(c->op->operands[i]->type.dtype));
  const fu_type *t = stated(c, 0, true);
  if (!t) return FU_ERR_VERIFY;
  if (!fu_dtype_is_float(t->dtype)) {
    fu_ir_tystr ts;
    return err(c, "'%s': result type %s must be a floating-point tensor", name, fu_ir_type_str(&ts, t));
  }
  copy_type(c, 0, t, out);
  return FU_OK;
}

static fu_status infer_meta(ictx *c, fu_type *out) {
  if (c->op->kind != FU_OP_INPUT) return FU_OK; /* output and segment define no values */
  const fu_type *t = stated(c, 0, false);
  if (!t) return FU_ERR_VERIFY;
  copy_type(c, 0, t, out);
  return FU_OK;
}

/* Lists built through the C API must hold the entries they count; the
 * rules below index them freely.  The class's attribute table names the
 * lists. */
static bool payload_ok(const fu_op *op) {
  fu_attr_spec spec = fu_op_attr_spec(fu_op_info_of(op->kind)->cls);
  for (uint32_t i = 0; i < spec.n; i++) {
    const fu_attr_field *f = &spec.fields[i];
    const char *at = (const char *)&op->u;
    if (f->kind == FU_AK_INT_LIST) {
      fu_int_list l;
      memcpy(&l, at + f->offset, sizeof l);
      if (l.n && !l.v) return false;
    } else if (f->kind == FU_AK_BOOL_LIST) {
      uint32_t n;
      bool *b;
      memcpy(&n, at + f->count_offset, sizeof n);
      memcpy(&b, at + f->offset, sizeof b);
      if (n && !b) return false;
    }
  }
  return true;
}

/* The indexing ops (ir.h, "indexing ops"): the result has the lookup
 * operand's dtype; its shape follows the op.  The index is an integer
 * tensor; extents that must agree are checked where they are constants or
 * the same symbol (a symbolic mismatch is the interpreter's to report). */
static fu_status infer_index(ictx *c, fu_type *out) {
  fu_op *op = c->op;
  uint32_t xi = fu_index_lookup_operand(op), ii = fu_index_index_operand(op);
  if (need_tensor(c, xi) || need_tensor(c, ii)) return FU_ERR_VERIFY;
  const fu_value *x = op->operands[xi], *ix = op->operands[ii];
  int32_t xr = x->type.rank, ir = ix->type.rank;
  int64_t dim = fu_index_dim(op);
  fu_ir_valstr vs, xs;
  fu_ir_tystr ts;
  if (op->kind == FU_OP_EMBEDDING_FWD && op->u.index.dim != 0)
    return err(c, "'embedding_fwd' has no dim (it gathers rows of its weight)");
  if (!fu_dtype_is_int(ix->type.dtype)) {
    err(c, "'%s': index %s of type %s must have an integer dtype (i32 or i64)", c->name, fu_ir_value_str(&vs, ix),
        fu_ir_type_str(&ts, &ix->type));
    note_def(c, ix);
    return FU_ERR_VERIFY;
  }
  if (dim < 0 || dim >= xr)
    return err(c, "'%s': dim %" PRId64 " is out of range for %s of type %s (rank %" PRId32 ")", c->name, dim,
               fu_ir_value_str(&vs, x), fu_ir_type_str(&ts, &x->type), xr);
  fu_extent *d = dims_of(c, 0);
  int32_t rank = 0;
  switch (op->kind) {
  case FU_OP_INDEX_SELECT:
    if (ir != 1)
      return err(c, "'index_select': index %s of type %s must have rank 1", fu_ir_value_str(&vs, ix),
                 fu_ir_type_str(&ts, &ix->type));
    rank = xr;
    for (int32_t j = 0; j < xr; j++) d[j] = j == dim ? ix->type.dims[0] : x->type.dims[j];
    break;
  case FU_OP_EMBEDDING_FWD:
    if (xr != 2)
      return err(c, "'embedding_fwd': weight %s of type %s must have rank 2", fu_ir_value_str(&vs, x),
                 fu_ir_type_str(&ts, &x->type));
    if (ir + 1 > FU_MAX_RANK) return err(c, "'embedding_fwd': the result rank exceeds %d", FU_MAX_RANK);
    rank = ir + 1;
    for (int32_t j = 0; j < ir; j++) d[j] = ix->type.dims[j];
    d[ir] = x->type.dims[1];
    break;
  default: /* gather, take_along_axis */
    if (ir != xr)
      return err(c, "'%s': index %s of type %s must have the rank of %s (%" PRId32 ")", c->name,
                 fu_ir_value_str(&vs, ix), fu_ir_type_str(&ts, &ix->type), fu_ir_value_str(&xs, x), xr);
    rank = xr;
    for (int32_t j = 0; j < xr; j++) {
      fu_extent xe = x->type.dims[j], ie = ix->type.dims[j];
      d[j] = ie;
      if (j == dim) continue;
      if (op->kind == FU_OP_GATHER) {
        if (fu_extent_is_const(xe) && fu_extent_is_const(ie) && ie.value > xe.value)
          return err(c, "'gather': index extent %" PRId64 " exceeds the input's %" PRId64 " in dim %" PRId32,
                     ie.value, xe.value, j);
        continue;
      }
      if (fu_extent_is_one(ie)) d[j] = xe;
      else if (!fu_extent_is_one(xe) && !fu_extent_equal(xe, ie))
        return err(c, "'take_along_axis': index %s of type %s does not broadcast against %s in dim %" PRId32,
                   fu_ir_value_str(&vs, ix), fu_ir_type_str(&ts, &ix->type), fu_ir_value_str(&xs, x), j);
    }
    break;
  }
  *out = (fu_type){x->type.dtype, rank, d};
  return FU_OK;
}

/* stride_order keeps its operand's type; the order is a permutation of
 * the dims (the rank of each dim's stride, 0 innermost). */
static fu_status infer_stride_order(ictx *c, fu_type *out) {
  fu_op *op = c->op;
  if (need_tensor(c, 0)) return FU_ERR_VERIFY;
  const fu_value *x = op->operands[0];
  if (!is_permutation(&op->u.stride_order.order, x->type.rank)) {
    fu_ir_valstr vs;
    fu_ir_tystr ts;
    return err(c, "'stride_order': order is not a permutation of the dims of %s of type %s", fu_ir_value_str(&vs, x),
               fu_ir_type_str(&ts, &x->type));
  }
  copy_type(c, 0, &x->type, out);
  return FU_OK;
}

/* A scan keeps its operand's shape; dim is one of its dims.  cumsum and
 * cumprod of ints or bools give i64, as PyTorch's do; cummax and cummin
 * keep the dtype. */
static fu_status infer_scan(ictx *c, fu_type *out) {
  fu_op *op = c->op;
  if (need_tensor(c, 0)) return FU_ERR_VERIFY;
  const fu_value *x = op->operands[0];
  if (op->u.scan.dim < 0 || op->u.scan.dim >= x->type.rank) {
    fu_ir_valstr vs;
    fu_ir_tystr ts;
    return err(c, "'%s': dim %" PRId64 " is out of range for %s of type %s", c->name, op->u.scan.dim,
               fu_ir_value_str(&vs, x), fu_ir_type_str(&ts, &x->type));
  }
  copy_type(c, 0, &x->type, out);
  if ((op->kind == FU_OP_CUMSUM || op->kind == FU_OP_CUMPROD) && !fu_dtype_is_float(x->type.dtype))
    out[0].dtype = FU_DT_I64;
  return FU_OK;
}

/* partial_sum: the operand's type with dim `dim` of extent `parts`, in
 * the dtype it accumulates in (f32 for f16, bf16 and f32; f64). */
static fu_status infer_partial(ictx *c, fu_type *out) {
  fu_op *op = c->op;
  if (need_tensor(c, 0)) return FU_ERR_VERIFY;
  const fu_value *x = op->operands[0];
  fu_dtype in = x->type.dtype;
  if (!fu_dtype_is_float(in)) {
    fu_ir_valstr vs;
    fu_ir_tystr ts;
    return err(c, "'%s': operand %s of type %s must be floating-point", c->name, fu_ir_value_str(&vs, x),
               fu_ir_type_str(&ts, &x->type));
  }
  if (op->u.partial.dim < 0 || op->u.partial.dim >= x->type.rank)
    return err(c, "'%s': dim %" PRId64 " is out of range for rank %d", c->name, op->u.partial.dim, (int)x->type.rank);
  if (op->u.partial.parts < 1 || op->u.partial.parts > (int64_t)1 << 31)
    return err(c, "'%s': parts %" PRId64 " must be in [1, 2^31]", c->name, op->u.partial.parts);
  copy_type(c, 0, &x->type, out);
  dims_of(c, 0)[op->u.partial.dim] = (fu_extent){.value = op->u.partial.parts};
  out[0].dtype = in == FU_DT_F64 ? FU_DT_F64 : FU_DT_F32;
  return FU_OK;
}

fu_status fu_ir_infer(fu_op *op, fu_type *out, fu_extent *scratch, fu_diag_engine *diag) {
  ictx c = {op, fu_op_info_of(op->kind)->name, diag, scratch};
  if ((unsigned)op->kind >= FU_OP_COUNT) return err(&c, "unknown op kind %d", (int)op->kind);
  fu_status s = check_operands(&c);
  if (s) return s;
  for (uint32_t i = 0; i < op->n_results; i++) {
    out[i].dtype = FU_DT_NONE;
    out[i].rank = FU_SCALAR_RANK;
    out[i].dims = NULL;
  }
  if (!payload_ok(op)) return err(&c, "'%s': malformed attribute list (entries missing)", c.name);
  switch (fu_op_info_of(op->kind)->cls) {
  case FU_OC_META: return infer_meta(&c, out);
  case FU_OC_UNARY: return infer_unary(&c, out);
  case FU_OC_BINARY: return infer_binary(&c, out);
  case FU_OC_TERNARY: return infer_ternary(&c, out);
  case FU_OC_CAST: return infer_cast(&c, out);
  case FU_OC_REDUCE: return infer_reduce(&c, out);
  case FU_OC_VARIANCE: return infer_variance(&c, out);
  case FU_OC_BROADCAST_IN_DIM: return infer_broadcast_in_dim(&c, out);
  case FU_OC_BROADCAST: return infer_broadcast(&c, out);
  case FU_OC_EXPAND: return infer_expand(&c, out);
  case FU_OC_RESHAPE: return infer_reshape(&c, out);
  case FU_OC_PERMUTE: return infer_permute(&c, out);
  case FU_OC_SQUEEZE: return infer_squeeze(&c, out);
  case FU_OC_SLICE: return infer_slice(&c, out);
  case FU_OC_CAT: return infer_cat(&c, out);
  case FU_OC_PAD: return infer_pad(&c, out);
  case FU_OC_FULL: return infer_full(&c, out);
  case FU_OC_IOTA: return infer_iota(&c, out);
  case FU_OC_MATMUL: return infer_matmul(&c, out);
  case FU_OC_INDEX: return infer_index(&c, out);
  case FU_OC_STRIDE_ORDER: return infer_stride_order(&c, out);
  case FU_OC_RNG: return infer_rng(&c, out);
  case FU_OC_SCAN: return infer_scan(&c, out);
  case FU_OC_PARTIAL: return infer_partial(&c, out);
  }
  return err(&c, "'%s': no inference rule for this op", c.name);
}

/* The module owning an op: through its block, or, for an op not linked yet
 * (a parser infers before appending), through an operand's definition. */
static fu_module *module_of(const fu_op *op) {
  if (op->parent && op->parent->fusion) return op->parent->fusion->module;
  for (uint32_t i = 0; i < op->n_operands; i++) {
    const fu_value *v = op->operands[i];
    if (v && v->def && v->def->parent && v->def->parent->fusion) return v->def->parent->fusion->module;
  }
  return NULL;
}

/* The public entry: infer into scratch, then give the extents lasting
 * storage: the stated type's own extents when they are the answer (reshape,
 * input, ...), else a copy in the module's arena. */
fu_status fu_infer_types(fu_op *op, fu_type *out, fu_diag_engine *diag) {
  fu_extent scratch[FU_IR_MAX_RESULTS * FU_MAX_RANK];
  fu_type tmp[FU_IR_MAX_RESULTS];
  if (!op || !out || !diag) return FU_ERR_INVALID_ARG;
  fu_status s = fu_ir_infer(op, tmp, scratch, diag);
  if (s) return s;
  fu_module *m = NULL;
  for (uint32_t i = 0; i < op->n_results; i++) {
    out[i] = tmp[i];
    const fu_type *st = &op->results[i]->type;
    if (tmp[i].rank <= 0) {
      out[i].dims = NULL;
    } else if (st->dims && fu_type_equal(st, &tmp[i])) {
      out[i].dims = st->dims;
    } else {
      if (!m) m = module_of(op);
      fu_extent *d = m ? fu_dims_copy(m, tmp[i].dims, tmp[i].rank) : NULL;
      if (!d) {
        const char *name = fu_op_info_of(op->kind)->name;
        if (m) {
          fu_error(diag, op->loc, "out of memory inferring the type of '%s'", name);
          return FU_ERR_NOMEM;
        }
        fu_error(diag, op->loc, "'%s': cannot infer the type of an op outside every fusion", name);
        return FU_ERR_INVALID_ARG;
      }
      out[i].dims = d;
    }
  }
  return FU_OK;
}
