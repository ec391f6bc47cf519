/* fuser: the reference interpreter's driver: value slots and their memory,
 * op dispatch, pointwise ops, reductions and outputs.  Shape ops live in
 * eval_shape.c. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fuser/strbuf.h"
#include "interp_internal.h"

/* ---- diagnostics --------------------------------------------------------- */

fu_status fu_interp_op_error(fu_interp *I, const fu_op *op, fu_status st, const char *fmt, ...) {
  fu_strbuf sb;
  fu_strbuf_init(&sb, I->alloc);
  va_list ap;
  va_start(ap, fmt);
  fu_strbuf_vprintf(&sb, fmt, ap);
  va_end(ap);
  const char *name = fu_op_info_of(op->kind)->name;
  fu_interp_vstr vs;
  if (op->n_results > 0)
    fu_error(I->diag, op->loc, "'%s' defining %s: %s", name, fu_interp_value_str(&vs, op->results[0]),
             sb.data ? sb.data : "(out of memory)");
  else
    fu_error(I->diag, op->loc, "'%s': %s", name, sb.data ? sb.data : "(out of memory)");
  fu_strbuf_free(&sb);
  return st;
}

/* ---- slots and storage ------------------------------------------------------ */

static void storage_unref(fu_interp *I, fu_interp_storage *st) {
  if (!st || --st->refs > 0) return;
  fu_mem_free(&I->alloc, st->base, st->bytes);
  fu_mem_free(&I->alloc, st, sizeof *st);
}

static void slot_release(fu_interp *I, fu_interp_slot *s) {
  storage_unref(I, s->st);
  s->st = NULL;
  s->ready = false;
}

/* The value stored in a scalar slot's raw bytes. */
static void slot_set_scalar(fu_interp_slot *s, fu_dtype dt, fu_ck k, const void *v) {
  memset(s->raw, 0, sizeof s->raw);
  fu_interp_store(dt, s->raw, 0, 1, k, v);
  s->scalar = true;
  s->ready = true;
  memset(&s->view, 0, sizeof s->view);
  s->view.dtype = dt;
  s->view.rank = 0;
  s->view.data = s->raw;
}

static void slot_set_literal(fu_interp_slot *s, const fu_value *v) {
  if (fu_dtype_is_float(v->type.dtype)) {
    slot_set_scalar(s, v->type.dtype, FU_CK_F64, &v->literal.f);
  } else {
    int64_t i = fu_interp_literal_i64(v);
    slot_set_scalar(s, fu_dtype_is_bool(v->type.dtype) ? FU_DT_BOOL : v->type.dtype, FU_CK_I64, &i);
  }
}

fu_interp_slot *fu_interp_operand(fu_interp *I, fu_op *op, uint32_t i) {
  fu_value *v = op->operands[i];
  if (!v || v->id >= I->n_slots) {
    fu_interp_op_error(I, op, FU_ERR_RUNTIME, "operand %u is not a value of this fusion", i);
    return NULL;
  }
  fu_interp_slot *s = &I->slots[v->id];
  if (v->is_literal && !s->ready) slot_set_literal(s, v);
  if (!s->ready) {
    fu_interp_vstr vs;
    fu_interp_op_error(I, op, FU_ERR_RUNTIME, "operand %u (%s) has no value here (used before its definition?)", i,
                       fu_interp_value_str(&vs, v));
    return NULL;
  }
  return s;
}

fu_status fu_interp_operand_tensor(fu_interp *I, fu_op *op, uint32_t i, fu_host_tensor *out) {
  fu_interp_slot *s = fu_interp_operand(I, op, i);
  if (!s) return FU_ERR_RUNTIME;
  if (s->scalar) {
    fu_interp_vstr vs;
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "operand %u (%s) must be a tensor", i,
                              fu_interp_value_str(&vs, op->operands[i]));
  }
  *out = s->view;
  return FU_OK;
}

fu_status fu_interp_operand_scalar(fu_interp *I, fu_op *op, uint32_t i, double *f, int64_t *iv) {
  fu_interp_slot *s = fu_interp_operand(I, op, i);
  if (!s) return FU_ERR_RUNTIME;
  if (!s->scalar) {
    fu_interp_vstr vs;
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "operand %u (%s) must be a scalar", i,
                              fu_interp_value_str(&vs, op->operands[i]));
  }
  if (f) fu_interp_load(s->view.dtype, s->raw, 0, 1, FU_CK_F64, f);
  if (iv) fu_interp_load(s->view.dtype, s->raw, 0, 1, FU_CK_I64, iv);
  return FU_OK;
}

static void format_shape(char *buf, size_t cap, int32_t rank, const int64_t *shape) {
  size_t n = (size_t)snprintf(buf, cap, "[");
  for (int32_t d = 0; d < rank && n < cap; d++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%lld", d ? ", " : "", (long long)shape[d]);
  if (n < cap) snprintf(buf + n, cap - n, "]");
}

fu_status fu_interp_result_shape(fu_interp *I, fu_op *op, uint32_t r, int64_t *shape, int64_t infer_numel) {
  const fu_type *t = &op->results[r]->type;
  if (t->rank < 0) return FU_OK;
  if (t->rank > FU_MAX_RANK || (t->rank > 0 && !t->dims))
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "result %u has a malformed type", r);
  int unknown = -1;
  int64_t known = 1;
  for (int32_t d = 0; d < t->rank; d++) {
    fu_extent e = t->dims[d];
    if (fu_extent_is_const(e)) {
      shape[d] = e.value;
    } else if (!fu_bindings_lookup(&I->b, e.sym, &shape[d])) {
      if (infer_numel < 0 || unknown >= 0)
        return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "symbol '%s' in dim %d of the result is not bound by any input",
                                  e.sym, d);
      unknown = d;
      continue;
    }
    if (shape[d] < 0) return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "negative extent in dim %d", d);
    if (shape[d] != 0 && known > INT64_MAX / shape[d])
      return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "the result's element count overflows");
    known *= shape[d];
  }
  if (unknown >= 0) {
    const char *sym = t->dims[unknown].sym;
    if (known == 0 || infer_numel % known != 0)
      return fu_interp_op_error(I, op, FU_ERR_RUNTIME,
                                "cannot solve symbol '%s': %lld elements are not a multiple of %lld", sym,
                                (long long)infer_numel, (long long)known);
    shape[unknown] = infer_numel / known;
    if (fu_bindings_add(&I->b, sym, shape[unknown], op->results[r], unknown) != FU_OK)
      return fu_interp_op_error(I, op, FU_ERR_NOMEM, "out of memory binding '%s'", sym);
  }
  return FU_OK;
}

fu_status fu_interp_check_shape(fu_interp *I, fu_op *op, uint32_t r, int32_t rank, const int64_t *shape) {
  const fu_type *t = &op->results[r]->type;
  int32_t trank = t->rank < 0 ? 0 : t->rank;
  char got[256];
  format_shape(got, sizeof got, rank, shape);
  if (trank != rank)
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "the result has rank %d but its type says %d (computed shape %s)",
                              rank, trank, got);
  for (int32_t d = 0; d < rank; d++) {
    fu_extent e = t->dims[d];
    int64_t want;
    if (fu_extent_is_const(e)) {
      want = e.value;
    } else if (!fu_bindings_lookup(&I->b, e.sym, &want)) {
      if (fu_bindings_add(&I->b, e.sym, shape[d], op->results[r], d) != FU_OK)
        return fu_interp_op_error(I, op, FU_ERR_NOMEM, "out of memory binding '%s'", e.sym);
      continue;
    }
    if (want != shape[d]) {
      if (e.sym)
        return fu_interp_op_error(I, op, FU_ERR_RUNTIME,
                                  "the computed shape %s has %lld in dim %d, but its type says '%s' = %lld", got,
                                  (long long)shape[d], d, e.sym, (long long)want);
      return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "the computed shape %s has %lld in dim %d, but its type says %lld",
                                got, (long long)shape[d], d, (long long)want);
    }
  }
  return FU_OK;
}

/* fu_interp_alloc_result, with the memory zeroed or not; with `store`,
 * the sizes are checked for `shape` but the tensor has `store`'s (each
 * store[d] 1 or shape[d]: fu_interp_shared_dims). */
static fu_status alloc_result(fu_interp *I, fu_op *op, uint32_t r, const int64_t *shape, fu_host_tensor **view,
                              bool zero, const int64_t *store) {
  fu_value *v = op->results[r];
  fu_interp_slot *s = &I->slots[v->id];
  fu_dtype dt = v->type.dtype;
  if (dt <= FU_DT_NONE || dt >= FU_DT_COUNT)
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "result %u has no dtype (was the fusion verified?)", r);
  if (fu_type_is_scalar(&v->type)) {
    int64_t z = 0;
    slot_set_scalar(s, dt, FU_CK_I64, &z);
    *view = &s->view;
    return FU_OK;
  }
  int32_t rank = v->type.rank;
  fu_host_tensor *t = &s->view;
  memset(t, 0, sizeof *t);
  t->dtype = dt;
  t->rank = rank;
  int64_t numel = 1;
  bool empty = false;
  for (int32_t d = 0; d < rank; d++) {
    t->shape[d] = shape[d];
    if (shape[d] == 0) empty = true;
  }
  for (int32_t d = 0; d < rank && !empty; d++) {
    if (numel > INT64_MAX / shape[d]) numel = -1;
    if (numel < 0) break;
    numel *= shape[d];
  }
  if (empty) numel = 0;
  char sh[256];
  format_shape(sh, sizeof sh, rank, shape);
  size_t es = fu_dtype_size(dt);
  if (numel < 0 || (uint64_t)numel > SIZE_MAX / es)
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "the size of a %s%s tensor overflows", fu_dtype_name(dt), sh);
  size_t bytes = (size_t)numel * es;
  if (I->max_bytes && bytes > I->max_bytes)
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "a %s%s tensor needs %zu bytes, more than the limit of %zu",
                              fu_dtype_name(dt), sh, bytes, I->max_bytes);
  if (store && numel > 0) {
    for (int32_t d = 0; d < rank; d++) {
      bytes = bytes / (size_t)shape[d] * (size_t)store[d];
      t->shape[d] = store[d];
    }
  }
  fu_contiguous_strides(rank, t->shape, t->strides);
  fu_interp_storage *st = fu_mem_alloc(&I->alloc, sizeof *st);
  void *data = !st ? NULL : zero ? fu_mem_calloc(&I->alloc, bytes ? bytes : 1, 1) : fu_mem_alloc(&I->alloc, bytes);
  if (!data) {
    fu_mem_free(&I->alloc, st, sizeof *st);
    return fu_interp_op_error(I, op, FU_ERR_NOMEM, "out of memory allocating %zu bytes for a %s%s tensor", bytes,
                              fu_dtype_name(dt), sh);
  }
  st->base = data;
  st->bytes = bytes ? bytes : 1;
  st->refs = 1;
  t->data = data;
  s->st = st;
  s->scalar = false;
  s->ready = true;
  *view = t;
  return FU_OK;
}

fu_status fu_interp_alloc_result(fu_interp *I, fu_op *op, uint32_t r, const int64_t *shape, fu_host_tensor **view) {
  return alloc_result(I, op, r, shape, view, true, NULL);
}

fu_status fu_interp_alloc_result_dense(fu_interp *I, fu_op *op, uint32_t r, const int64_t *shape,
                                       fu_host_tensor **view, const int64_t *store) {
  return alloc_result(I, op, r, shape, view, false, store);
}

void fu_interp_drop_result(fu_interp *I, fu_op *op, uint32_t r) { slot_release(I, &I->slots[op->results[r]->id]); }

void fu_interp_alias_result(fu_interp *I, fu_op *op, uint32_t r, const fu_interp_slot *from,
                            const fu_host_tensor *view) {
  fu_interp_slot *s = &I->slots[op->results[r]->id];
  s->view = *view;
  s->view.owned = NULL;
  s->st = from->st;
  if (s->st) s->st->refs++;
  s->scalar = false;
  s->ready = true;
}

/* ---- pointwise ops ------------------------------------------------------------ */

/* Operand i seen with the result's rank and shape: extent-1 dims and
 * scalars broadcast with stride 0. */
static fu_status broadcast_operand(fu_interp *I, fu_op *op, uint32_t i, int32_t rank, const int64_t *shape,
                                   fu_host_tensor *out) {
  fu_interp_slot *s = fu_interp_operand(I, op, i);
  if (!s) return FU_ERR_RUNTIME;
  memset(out, 0, sizeof *out);
  out->dtype = s->view.dtype;
  out->rank = rank;
  out->data = s->view.data;
  for (int32_t d = 0; d < rank; d++) out->shape[d] = shape[d];
  if (s->scalar) return FU_OK;
  if (s->view.rank != rank) {
    fu_interp_vstr vs;
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "operand %u (%s) has rank %d but the result has rank %d", i,
                              fu_interp_value_str(&vs, op->operands[i]), s->view.rank, rank);
  }
  for (int32_t d = 0; d < rank; d++) {
    if (s->view.shape[d] == shape[d]) {
      out->strides[d] = s->view.strides[d];
    } else if (s->view.shape[d] == 1) {
      out->strides[d] = 0;
    } else {
      fu_interp_vstr vs;
      return fu_interp_op_error(I, op, FU_ERR_RUNTIME,
                                "operand %u (%s) has extent %lld in dim %d, which does not broadcast to %lld", i,
                                fu_interp_value_str(&vs, op->operands[i]), (long long)s->view.shape[d], d,
                                (long long)shape[d]);
    }
  }
  return FU_OK;
}

void fu_interp_shared_dims(int32_t rank, const int64_t *shape, const fu_host_tensor *a, const fu_host_tensor *b,
                           uint32_t n, int64_t *cshape) {
  for (int32_t d = 0; d < rank; d++) {
    bool shared = shape[d] > 1;
    for (uint32_t i = 0; i < n; i++)
      if (a[i].strides[d] != 0 || (b && b[i].data && b[i].strides[d] != 0)) shared = false;
    cshape[d] = shared ? 1 : shape[d];
  }
}

void fu_interp_widen_shared_dims(fu_host_tensor *t, const int64_t *shape) {
  for (int32_t d = 0; d < t->rank; d++)
    if (t->shape[d] != shape[d]) {
      t->shape[d] = shape[d];
      t->strides[d] = 0;
    }
}

static fu_status eval_pointwise(fu_interp *I, fu_op *op) {
  fu_value *res = op->results[0];
  int32_t rank = res->type.rank < 0 ? 0 : res->type.rank;
  int64_t shape[FU_MAX_RANK];
  fu_status st = fu_interp_result_shape(I, op, 0, shape, -1);
  if (st != FU_OK) return st;
  if (op->n_operands < 1 || op->n_operands > 3)
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "expected 1 to 3 operands, got %u", op->n_operands);

  /* `set` of a tensor to the same type is a copy of an immutable value:
   * share the memory. */
  if (op->kind == FU_OP_SET && !fu_type_is_scalar(&res->type)) {
    fu_interp_slot *s = fu_interp_operand(I, op, 0);
    if (!s) return FU_ERR_RUNTIME;
    if (!s->scalar && s->view.dtype == res->type.dtype) {
      st = fu_interp_check_shape(I, op, 0, s->view.rank, s->view.shape);
      if (st != FU_OK) return st;
      fu_interp_alias_result(I, op, 0, s, &s->view);
      return FU_OK;
    }
  }

  fu_host_tensor ins[3];
  for (uint32_t i = 0; i < op->n_operands; i++) {
    st = broadcast_operand(I, op, i, rank, shape, &ins[i]);
    if (st != FU_OK) return st;
  }
  fu_dtype rdt = res->type.dtype;
  fu_host_tensor *out;
  /* A dim every operand repeats (stride 0) repeats in the result too: each
   * element along it would be the same computation on the same values, so
   * the result is computed once along it and seen through stride 0. */
  int64_t cshape[FU_MAX_RANK];
  fu_interp_shared_dims(rank, shape, ins, NULL, op->n_operands, cshape);
  st = fu_interp_alloc_result_dense(I, op, 0, shape, &out, cshape);
  if (st != FU_OK) return st;
  fu_pw_loop l;
  fu_interp_pw_loop_init(&l, op->kind, op->operands, op->n_operands, rdt);
  for (uint32_t i = 0; i < op->n_operands; i++) l.in[i] = &ins[i];
  l.out = out;
  l.threads = I->threads;
  fu_pw_err e = fu_interp_pw_run(&l);
  fu_interp_widen_shared_dims(out, shape);
  switch (e) {
  case FU_PW_OK: return FU_OK;
  case FU_PW_DIV_ZERO: return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "integer division by zero");
  case FU_PW_UNSUPPORTED: break;
  }
  return fu_interp_op_error(I, op, FU_ERR_UNSUPPORTED, "not defined for %s operands computing %s",
                            fu_dtype_name(op->operands[0]->type.dtype), fu_dtype_name(rdt));
}

/* ---- reductions ----------------------------------------------------------------- */

static fu_status eval_reduction(fu_interp *I, fu_op *op) {
  bool variance = fu_op_info_of(op->kind)->cls == FU_OC_VARIANCE;
  const fu_int_list *axes = variance ? &op->u.variance.axes : &op->u.reduce.axes;
  bool keepdim = variance ? op->u.variance.keepdim : op->u.reduce.keepdim;
  uint32_t want_results = op->kind == FU_OP_VAR_MEAN ? 2 : 1;
  if (op->n_results != want_results)
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "expected %u results, got %u", want_results, op->n_results);
  fu_host_tensor in;
  fu_status st = fu_interp_operand_tensor(I, op, 0, &in);
  if (st != FU_OK) return st;
  bool reduce[FU_MAX_RANK] = {false};
  for (uint32_t i = 0; i < axes->n; i++) {
    int64_t a = axes->v[i];
    if (a < 0 || a >= in.rank)
      return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "axis %lld is out of range for rank %d", (long long)a,
                                in.rank);
    reduce[a] = true;
  }
  int64_t shape[FU_MAX_RANK];
  int32_t rank = 0;
  for (int32_t d = 0; d < in.rank; d++) {
    if (!reduce[d])
      shape[rank++] = in.shape[d];
    else if (keepdim)
      shape[rank++] = 1;
  }
  fu_host_tensor *outs[2] = {NULL, NULL};
  for (uint32_t r = 0; r < want_results; r++) {
    st = fu_interp_check_shape(I, op, r, rank, shape);
    if (st == FU_OK) st = fu_interp_alloc_result_dense(I, op, r, shape, &outs[r], NULL);
    if (st != FU_OK) return st;
    /* A scalar-typed result (rank -1) still reduces to one element. */
  }
  const char *why = NULL;
  st = fu_interp_reduce(op->kind, &in, reduce, variance ? op->u.variance.correction : 0, outs[0], outs[1], I->alloc,
                        I->threads, &why);
  if (st != FU_OK) return fu_interp_op_error(I, op, st, "%s", why ? why : "reduction failed");
  return FU_OK;
}

/* ---- inputs and outputs ------------------------------------------------------------- */

static fu_status eval_input(fu_interp *I, fu_op *op) {
  if (I->next_input >= I->n_inputs)
    return fu_interp_op_error(I, op, FU_ERR_INVALID_ARG, "more inputs than arguments");
  const fu_arg *a = &I->inputs[I->next_input++];
  fu_interp_slot *s = &I->slots[op->results[0]->id];
  if (a->kind == FU_ARG_SCALAR) {
    fu_dtype dt = a->scalar_dtype;
    if (fu_dtype_is_float(dt)) {
      slot_set_scalar(s, dt, FU_CK_F64, &a->scalar.f);
    } else {
      int64_t v = fu_dtype_is_bool(dt) ? (a->scalar.b ? 1 : 0) : a->scalar.i;
      slot_set_scalar(s, dt, FU_CK_I64, &v);
    }
    return FU_OK;
  }
  s->view = a->tensor;
  s->view.owned = NULL; /* borrowed from the caller */
  s->st = NULL;
  s->scalar = false;
  s->ready = true;
  return FU_OK;
}

/* An output that is the last use of a row-major value owning all of its
 * storage moves that storage into the result instead of copying it (half
 * the memory for a large output, and no copy). */
static bool take_storage(fu_interp *I, fu_interp_slot *s, fu_host_tensor *t) {
  fu_interp_storage *st = s->st;
  int64_t numel = fu_host_tensor_numel(&s->view);
  if (!st || st->refs != 1 || s->uses != 1 || numel <= 0 || s->view.data != st->base ||
      !fu_host_tensor_is_contiguous(&s->view) || (uint64_t)numel * fu_dtype_size(s->view.dtype) != st->bytes)
    return false;
  memset(t, 0, sizeof *t);
  t->dtype = s->view.dtype;
  t->rank = s->view.rank;
  for (int32_t d = 0; d < t->rank; d++) t->shape[d] = s->view.shape[d];
  fu_contiguous_strides(t->rank, t->shape, t->strides);
  t->data = t->owned = st->base;
  t->nbytes = st->bytes;
  t->alloc = I->alloc;
  st->base = NULL; /* the slot's release frees only the record */
  st->bytes = 0;
  return true;
}

static fu_status eval_output(fu_interp *I, fu_op *op) {
  for (uint32_t i = 0; i < op->n_operands; i++) {
    fu_interp_slot *s = fu_interp_operand(I, op, i);
    if (!s) return FU_ERR_RUNTIME;
    if (I->next_out >= I->n_outs) return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "more outputs than counted");
    fu_arg *a = &I->outs[I->next_out];
    if (s->scalar) {
      fu_dtype dt = s->view.dtype;
      if (fu_dtype_is_float(dt)) {
        double v;
        fu_interp_load(dt, s->raw, 0, 1, FU_CK_F64, &v);
        *a = fu_arg_scalar_f(dt, v);
      } else {
        int64_t v;
        fu_interp_load(dt, s->raw, 0, 1, FU_CK_I64, &v);
        *a = fu_dtype_is_bool(dt) ? fu_arg_scalar_b(v != 0) : fu_arg_scalar_i(dt, v);
      }
    } else {
      fu_host_tensor t;
      if (take_storage(I, s, &t)) {
        *a = fu_arg_tensor(t);
        I->next_out++;
        continue;
      }
      fu_status st = fu_host_tensor_alloc(&t, I->alloc, s->view.dtype, s->view.rank, s->view.shape);
      if (st == FU_OK && (st = fu_interp_copy_into(&t, &s->view, I->threads)) != FU_OK) fu_host_tensor_free(&t);
      if (st != FU_OK) {
        fu_interp_vstr vs;
        return fu_interp_op_error(I, op, st, "out of memory copying output %s",
                                  fu_interp_value_str(&vs, op->operands[i]));
      }
      *a = fu_arg_tensor(t);
    }
    I->next_out++;
  }
  return FU_OK;
}

/* ---- the walk ------------------------------------------------------------------------ */

static fu_status eval_block(fu_interp *I, fu_block *b);
static fu_status eval_meta(fu_interp *I, fu_op *op);

/* One op, dispatched on its class; the switch lists every class, so the
 * compiler names it when a class is added. */
static fu_status eval_op(fu_interp *I, fu_op *op) {
  const fu_op_info *info = fu_op_info_of(op->kind);
  if (info->num_operands >= 0 && op->n_operands != (uint32_t)info->num_operands && op->kind != FU_OP_SEGMENT)
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "expected %d operands, got %u", info->num_operands,
                              op->n_operands);
  for (uint32_t i = 0; i < op->n_operands; i++)
    if (!op->operands[i]) return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "operand %u is missing", i);
  if (info->cls != FU_OC_META && op->n_results < 1)
    return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "the op has no result");
  switch (info->cls) {
  case FU_OC_META: return eval_meta(I, op);
  case FU_OC_UNARY:
  case FU_OC_BINARY:
  case FU_OC_TERNARY:
  case FU_OC_CAST: return eval_pointwise(I, op);
  case FU_OC_REDUCE:
  case FU_OC_VARIANCE: return eval_reduction(I, op);
  case FU_OC_BROADCAST_IN_DIM:
  case FU_OC_BROADCAST:
  case FU_OC_EXPAND:
  case FU_OC_RESHAPE:
  case FU_OC_PERMUTE:
  case FU_OC_SQUEEZE:
  case FU_OC_SLICE:
  case FU_OC_CAT:
  case FU_OC_PAD:
  case FU_OC_FULL:
  case FU_OC_IOTA: return fu_interp_eval_shape_op(I, op);
  case FU_OC_MATMUL: return fu_interp_eval_matmul(I, op);
  case FU_OC_INDEX: return fu_interp_eval_index(I, op);
  case FU_OC_STRIDE_ORDER: return fu_interp_eval_shape_op(I, op);
  case FU_OC_RNG: return fu_interp_eval_rng(I, op);
  case FU_OC_SCAN: return fu_interp_eval_scan(I, op);
  case FU_OC_PARTIAL: return fu_interp_eval_partial(I, op);
  }
  return fu_interp_op_error(I, op, FU_ERR_UNSUPPORTED, "the interpreter does not implement this op");
}

/* A fusion output that names an input some `output %o {alias=%in}` writes
 * into is that input after the run: o's values (fu_fusion_alias_writer). */
static fu_status returned_inputs(fu_fusion *f, fu_arg *outs, uint32_t n, fu_allocator alloc, fu_diag_engine *diag) {
  bool any = false;
  for (const fu_op *op = f->body.first; op; op = op->next) any |= op->kind == FU_OP_OUTPUT && op->u.output.alias;
  if (!any || fu_fusion_outputs(f, NULL, 0) != n || !n) return FU_OK;
  fu_value **vals = fu_mem_calloc(&alloc, n, sizeof *vals);
  if (!vals) {
    fu_error(diag, f->loc, "out of memory returning the inputs outputs were written into");
    return FU_ERR_NOMEM;
  }
  fu_fusion_outputs(f, vals, n);
  fu_status st = FU_OK;
  for (uint32_t i = 0; i < n && st == FU_OK; i++) {
    const fu_value *w = vals[i]->def && vals[i]->def->kind == FU_OP_INPUT ? fu_fusion_alias_writer(f, vals[i]) : NULL;
    uint32_t j = 0;
    while (w && j < n && vals[j] != w) j++;
    if (!w || j == n || outs[j].kind != FU_ARG_TENSOR) continue;
    fu_host_tensor t;
    if ((st = fu_host_tensor_copy_contiguous(&outs[j].tensor, alloc, &t)) != FU_OK) {
      fu_error(diag, f->loc, "out of memory returning the inputs outputs were written into");
      break;
    }
    fu_arg_free(&outs[i]);
    outs[i] = fu_arg_tensor(t);
  }
  fu_mem_free(&alloc, vals, n * sizeof *vals);
  return st;
}

/* The structural ops: inputs, outputs and a segment's body. */
static fu_status eval_meta(fu_interp *I, fu_op *op) {
  if (op->kind == FU_OP_INPUT) return eval_input(I, op);
  if (op->kind == FU_OP_OUTPUT) return eval_output(I, op);
  if (op->kind == FU_OP_SEGMENT) {
    if (op->u.segment.body) {
      fu_status st = eval_block(I, op->u.segment.body);
      if (st != FU_OK) return st;
    }
    /* If the segment op defines results, they are its body's outputs. */
    for (uint32_t r = 0; r < op->n_results && r < op->u.segment.n_outputs; r++) {
      fu_value *v = op->u.segment.outputs[r];
      fu_interp_slot *from = v ? &I->slots[v->id] : NULL;
      if (!from || !from->ready)
        return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "segment output %u has no value", r);
      fu_interp_slot *to = &I->slots[op->results[r]->id];
      uint32_t uses = to->uses;
      *to = *from;
      to->uses = uses;
      if (to->scalar) to->view.data = to->raw;
      if (to->st) to->st->refs++;
    }
    return FU_OK;
  }
  return fu_interp_op_error(I, op, FU_ERR_UNSUPPORTED, "the interpreter does not implement this op");
}

/* After an op: drop one use of each operand, and results nobody uses. */
static void release_after(fu_interp *I, fu_op *op) {
  for (uint32_t i = 0; i < op->n_operands; i++) {
    fu_value *v = op->operands[i];
    if (!v || v->is_literal || v->id >= I->n_slots) continue;
    fu_interp_slot *s = &I->slots[v->id];
    if (s->uses > 0 && --s->uses == 0) slot_release(I, s);
  }
  for (uint32_t r = 0; r < op->n_results; r++) {
    fu_value *v = op->results[r];
    if (v->id < I->n_slots && I->slots[v->id].uses == 0) slot_release(I, &I->slots[v->id]);
  }
}

static fu_status eval_block(fu_interp *I, fu_block *b) {
  for (fu_op *op = b->first; op; op = op->next) {
    for (uint32_t r = 0; r < op->n_results; r++)
      if (!op->results[r] || op->results[r]->id >= I->n_slots)
        return fu_interp_op_error(I, op, FU_ERR_RUNTIME, "result %u is not a value of this fusion", r);
    fu_status st = eval_op(I, op);
    if (st == FU_OK && I->shadow) st = fu_interp_bounds_op(I, op);
    if (st != FU_OK) return st;
    release_after(I, op);
    if (I->shadow) release_after(I->shadow, op);
  }
  return FU_OK;
}

static void count_uses(fu_interp *I, fu_block *b) {
  for (fu_op *op = b->first; op; op = op->next) {
    for (uint32_t i = 0; i < op->n_operands; i++) {
      fu_value *v = op->operands[i];
      if (v && !v->is_literal && v->id < I->n_slots) I->slots[v->id].uses++;
    }
    if (op->kind == FU_OP_SEGMENT && op->u.segment.body) count_uses(I, op->u.segment.body);
  }
}

fu_status fu_interp_run(fu_fusion *f, const fu_arg *inputs, uint32_t n_inputs, const fu_interp_options *opts,
                        fu_allocator alloc, fu_diag_engine *diag, fu_arg **outputs, uint32_t *n_outputs) {
  return fu_interp_run_bounded(f, inputs, n_inputs, opts, alloc, diag, outputs, NULL, n_outputs);
}

fu_status fu_interp_run_bounded(fu_fusion *f, const fu_arg *inputs, uint32_t n_inputs, const fu_interp_options *opts,
                                fu_allocator alloc, fu_diag_engine *diag, fu_arg **outputs, fu_arg **bounds,
                                uint32_t *n_outputs) {
  *outputs = NULL;
  *n_outputs = 0;
  if (bounds) *bounds = NULL;
  fu_interp I, J;
  memset(&I, 0, sizeof I);
  I.f = f;
  I.alloc = alloc;
  I.diag = diag;
  I.max_bytes = opts ? opts->max_tensor_bytes : 0;
  I.threads = opts ? opts->threads : 0;
  I.inputs = inputs;
  I.n_inputs = n_inputs;
  fu_bindings_init(&I.b, alloc);
  fu_status st = fu_interp_bind_inputs(f, inputs, n_inputs, &I.b, diag);
  if (st != FU_OK) {
    fu_bindings_free(&I.b);
    return st;
  }
  I.n_slots = f->next_value_id;
  I.slots = fu_mem_calloc(&alloc, I.n_slots ? I.n_slots : 1, sizeof *I.slots);
  I.n_outs = fu_fusion_outputs(f, NULL, 0);
  I.outs = fu_mem_calloc(&alloc, I.n_outs ? I.n_outs : 1, sizeof *I.outs);
  if (!I.slots || !I.outs) {
    fu_error(diag, f->loc, "out of memory starting the interpreter");
    st = FU_ERR_NOMEM;
  } else {
    count_uses(&I, &f->body);
    if (bounds && (st = fu_interp_bounds_start(&I, &J)) == FU_OK) count_uses(&J, &f->body);
    if (st == FU_OK) st = eval_block(&I, &f->body);
  }
  if (I.shadow) {
    for (uint32_t i = 0; i < J.n_slots; i++) slot_release(&J, &J.slots[i]);
    if (st == FU_OK) *bounds = J.outs;
    else fu_args_free(J.outs, J.n_outs, alloc);
    fu_interp_bounds_finish(&J);
  }
  if (I.slots)
    for (uint32_t i = 0; i < I.n_slots; i++) slot_release(&I, &I.slots[i]);
  fu_mem_free(&alloc, I.slots, (size_t)(I.n_slots ? I.n_slots : 1) * sizeof *I.slots);
  fu_bindings_free(&I.b);
  if (st == FU_OK && I.next_out != I.n_outs) {
    fu_error(diag, f->loc, "the interpreter produced %u of %u outputs", I.next_out, I.n_outs);
    st = FU_ERR_RUNTIME;
  }
  if (st == FU_OK) st = returned_inputs(f, I.outs, I.n_outs, alloc, diag);
  if (st != FU_OK) {
    fu_args_free(I.outs, I.n_outs, alloc);
    return st;
  }
  *outputs = I.outs;
  *n_outputs = I.n_outs;
  return FU_OK;
}
