/* fuser: binding a fusion's inputs to concrete arguments, and the sizes of
 * symbolic extents that follow from them. */
#include <string.h>

#include "interp_internal.h"

void fu_bindings_init(fu_bindings *b, fu_allocator alloc) {
  memset(b, 0, sizeof *b);
  b->alloc = alloc;
}

void fu_bindings_free(fu_bindings *b) {
  if (b->v) fu_mem_free(&b->alloc, b->v, (size_t)b->cap * sizeof *b->v);
  fu_allocator a = b->alloc;
  memset(b, 0, sizeof *b);
  b->alloc = a;
}

const fu_sym_binding *fu_bindings_find(const fu_bindings *b, const char *sym) {
  for (uint32_t i = 0; i < b->n; i++)
    if (strcmp(b->v[i].sym, sym) == 0) return &b->v[i];
  return NULL;
}

bool fu_bindings_lookup(const fu_bindings *b, const char *sym, int64_t *value) {
  const fu_sym_binding *s = fu_bindings_find(b, sym);
  if (s && value) *value = s->value;
  return s != NULL;
}

fu_status fu_bindings_add(fu_bindings *b, const char *sym, int64_t value, const fu_value *from, int32_t dim) {
  if (b->n == b->cap) {
    uint32_t cap = b->cap ? b->cap * 2 : 8;
    fu_sym_binding *v = fu_mem_realloc(&b->alloc, b->v, (size_t)b->cap * sizeof *v, (size_t)cap * sizeof *v);
    if (!v) return FU_ERR_NOMEM;
    b->v = v;
    b->cap = cap;
  }
  fu_sym_binding s = {sym, value, from, dim};
  b->v[b->n++] = s;
  return FU_OK;
}

uint32_t fu_interp_inputs_of(fu_fusion *f, fu_op **out, uint32_t cap) {
  uint32_t n = 0;
  for (fu_op *op = fu_walk_first(&f->body); op; op = fu_walk_next(op)) {
    if (op->kind != FU_OP_INPUT) continue;
    if (n < cap) out[n] = op;
    n++;
  }
  return n;
}

fu_status fu_interp_resolve_shape(const fu_type *t, const fu_bindings *b, int64_t *shape, fu_loc loc,
                                  const char *what, fu_diag_engine *diag) {
  if (t->rank < 0) return FU_OK;
  if (t->rank > FU_MAX_RANK || (t->rank > 0 && !t->dims)) {
    fu_error(diag, loc, "%s has a malformed type", what);
    return FU_ERR_RUNTIME;
  }
  for (int32_t d = 0; d < t->rank; d++) {
    fu_extent e = t->dims[d];
    if (fu_extent_is_const(e)) {
      if (e.value < 0) {
        fu_error(diag, loc, "%s has negative extent %lld in dim %d", what, (long long)e.value, d);
        return FU_ERR_RUNTIME;
      }
      shape[d] = e.value;
    } else if (!fu_bindings_lookup(b, e.sym, &shape[d])) {
      fu_error(diag, loc, "symbol '%s' in dim %d of %s is not bound by any input", e.sym, d, what);
      return FU_ERR_RUNTIME;
    }
  }
  return FU_OK;
}

/* Check one input arg against its INPUT op and bind its symbols. */
static fu_status bind_one(fu_op *op, uint32_t pos, const fu_arg *arg, fu_bindings *b, fu_diag_engine *diag) {
  const fu_value *v = op->results[0];
  const fu_type *t = &v->type;
  fu_interp_vstr vs;
  const char *name = fu_interp_value_str(&vs, v);
  if (fu_type_is_scalar(t)) {
    if (arg->kind != FU_ARG_SCALAR) {
      fu_error(diag, op->loc, "input %u (%s) is a %s scalar but the argument is %s", pos, name,
               fu_dtype_name(t->dtype), arg->kind == FU_ARG_TENSOR ? "a tensor" : "missing");
      return FU_ERR_INVALID_ARG;
    }
    if (arg->scalar_dtype != t->dtype) {
      fu_error(diag, op->loc, "input %u (%s) is %s but the argument is %s", pos, name, fu_dtype_name(t->dtype),
               fu_dtype_name(arg->scalar_dtype));
      return FU_ERR_INVALID_ARG;
    }
    return FU_OK;
  }
  if (arg->kind != FU_ARG_TENSOR) {
    fu_error(diag, op->loc, "input %u (%s) is a tensor but the argument is %s", pos, name,
             arg->kind == FU_ARG_SCALAR ? "a scalar" : "missing");
    return FU_ERR_INVALID_ARG;
  }
  const fu_host_tensor *ht = &arg->tensor;
  if (ht->rank != t->rank) {
    fu_error(diag, op->loc, "input %u (%s) has rank %d but the argument has rank %d", pos, name, t->rank, ht->rank);
    return FU_ERR_INVALID_ARG;
  }
  if (ht->dtype != t->dtype) {
    fu_error(diag, op->loc, "input %u (%s) is %s but the argument is %s", pos, name, fu_dtype_name(t->dtype),
             fu_dtype_name(ht->dtype));
    return FU_ERR_INVALID_ARG;
  }
  if (!ht->data && fu_host_tensor_numel(ht) != 0) {
    fu_error(diag, op->loc, "input %u (%s): the argument has no data", pos, name);
    return FU_ERR_INVALID_ARG;
  }
  for (int32_t d = 0; d < t->rank; d++) {
    fu_extent e = t->dims[d];
    int64_t got = ht->shape[d];
    if (got < 0 || ht->strides[d] < 0) {
      fu_error(diag, op->loc, "input %u (%s): the argument has a negative extent or stride in dim %d", pos, name, d);
      return FU_ERR_INVALID_ARG;
    }
    if (fu_extent_is_const(e)) {
      if (e.value != got) {
        fu_error(diag, op->loc, "input %u (%s) has extent %lld in dim %d but the argument has %lld", pos, name,
                 (long long)e.value, d, (long long)got);
        return FU_ERR_INVALID_ARG;
      }
      continue;
    }
    const fu_sym_binding *s = fu_bindings_find(b, e.sym);
    if (!s) {
      fu_status st = fu_bindings_add(b, e.sym, got, v, d);
      if (st != FU_OK) {
        fu_error(diag, op->loc, "out of memory binding symbol '%s'", e.sym);
        return st;
      }
    } else if (s->value != got) {
      if (s->from) {
        fu_interp_vstr fs;
        fu_error(diag, op->loc,
                 "symbol '%s' is bound inconsistently: %lld by dim %d of %s, but %lld by dim %d of input %u (%s)",
                 e.sym, (long long)s->value, s->dim, fu_interp_value_str(&fs, s->from), (long long)got, d, pos,
                 name);
        if (s->from->def) fu_note(diag, s->from->def->loc, "'%s' was bound to %lld here", e.sym, (long long)s->value);
      } else {
        fu_error(diag, op->loc, "symbol '%s' is bound to %lld, but dim %d of input %u (%s) has %lld", e.sym,
                 (long long)s->value, d, pos, name, (long long)got);
      }
      return FU_ERR_INVALID_ARG;
    }
  }
  return FU_OK;
}

fu_status fu_interp_bind_inputs(fu_fusion *f, const fu_arg *inputs, uint32_t n_inputs, fu_bindings *b,
                                fu_diag_engine *diag) {
  uint32_t n = fu_interp_inputs_of(f, NULL, 0);
  if (n != n_inputs) {
    fu_error(diag, f->loc, "fusion '@%s' has %u input%s but %u argument%s given", f->name ? f->name : "?", n,
             n == 1 ? "" : "s", n_inputs, n_inputs == 1 ? " was" : "s were");
    return FU_ERR_INVALID_ARG;
  }
  uint32_t pos = 0;
  for (fu_op *op = fu_walk_first(&f->body); op; op = fu_walk_next(op)) {
    if (op->kind != FU_OP_INPUT) continue;
    if (op->n_results != 1) {
      fu_error(diag, op->loc, "'input' must have exactly one result");
      return FU_ERR_INVALID_ARG;
    }
    fu_status st = bind_one(op, pos, &inputs[pos], b, diag);
    if (st != FU_OK) return st;
    pos++;
  }
  return FU_OK;
}
