/* fuser: index expressions to kernel values, for every lowering
 * (passes/lower/lower_internal.h, fu_lix).  A table by expression id
 * holds the value of each expression in the open scopes; a log of
 * bindings, each with the value it replaced, closes scopes.  Extent and
 * stride parameters are made on first use. */
#include <stdio.h>
#include <string.h>

#include "lower_internal.h"

static const char *seg_name(const fu_lix *e) {
  return e->seg && e->seg->u.segment.name ? e->seg->u.segment.name : "?";
}

static fu_kval *lix_chk(fu_lix *e, fu_kval *v) {
  if (!v && !e->failed) fu_error(e->diag, e->seg->loc, "out of memory while lowering '@%s'", seg_name(e));
  if (!v) e->failed = true;
  return v;
}

fu_kval *fu_lix_get(const fu_lix *e, const fu_ix *x) { return x->id < e->cap ? e->val[x->id] : NULL; }

uint32_t fu_lix_mark(const fu_lix *e) { return e->n_log; }

void fu_lix_pop(fu_lix *e, uint32_t mark) {
  while (e->n_log > mark) {
    struct fu_lix_undo *u = &e->log[--e->n_log];
    e->val[u->id] = u->old;
  }
}

void fu_lix_set(fu_lix *e, const fu_ix *x, fu_kval *kv) {
  if (e->failed || !x) return;
  if (x->id >= e->cap) {
    uint32_t cap = e->cap ? e->cap : 256;
    while (cap <= x->id) cap *= 2;
    fu_kval **n = fu_mem_realloc(&e->alloc, e->val, e->cap * sizeof *n, cap * sizeof *n);
    if (!n) {
      lix_chk(e, NULL);
      return;
    }
    memset(n + e->cap, 0, (cap - e->cap) * sizeof *n);
    e->val = n;
    e->cap = cap;
  }
  if (e->n_log == e->cap_log) {
    uint32_t cap = e->cap_log ? e->cap_log * 2 : 256;
    struct fu_lix_undo *n = fu_mem_realloc(&e->alloc, e->log, e->cap_log * sizeof *n, cap * sizeof *n);
    if (!n) {
      lix_chk(e, NULL);
      return;
    }
    e->log = n;
    e->cap_log = cap;
  }
  e->log[e->n_log].id = x->id;
  e->log[e->n_log++].old = e->val[x->id];
  e->val[x->id] = kv;
}

void fu_lix_free(fu_lix *e) {
  fu_mem_free(&e->alloc, e->val, e->cap * sizeof *e->val);
  fu_mem_free(&e->alloc, e->log, e->cap_log * sizeof *e->log);
  e->val = NULL;
  e->log = NULL;
  e->cap = e->cap_log = e->n_log = 0;
}

static fu_kval *extent_param(fu_lix *e, const char *sym) {
  for (uint32_t i = 0; i < e->n_ext; i++)
    if (strcmp(e->ext[i].sym, sym) == 0) return e->ext[i].kv;
  if (e->n_ext == FU_LIX_MAX_PARAMS) {
    if (!e->failed) fu_error(e->diag, e->seg->loc, "segment '@%s' uses more than 64 extent symbols", seg_name(e));
    e->failed = true;
    return NULL;
  }
  fu_kval *kv = lix_chk(e, fu_kernel_extent_param(e->m, e->k, sym, e->idx, sym));
  e->ext[e->n_ext].sym = sym;
  e->ext[e->n_ext++].kv = kv;
  return kv;
}

static fu_kval *stride_param(fu_lix *e, const fu_value *v, int32_t dim) {
  for (uint32_t i = 0; i < e->n_str; i++)
    if (e->str[i].v == v && e->str[i].dim == dim) return e->str[i].kv;
  fu_kval *t = e->tparam ? e->tparam[v->id] : NULL;
  if (!t || e->n_str == FU_LIX_MAX_PARAMS) {
    if (!e->failed)
      fu_error(e->diag, e->seg->loc, "cannot pass the stride of dim %d of '%%%s' to the kernel", (int)dim,
               v->name ? v->name : "?");
    e->failed = true;
    return NULL;
  }
  char name[64];
  snprintf(name, sizeof name, "%s_stride%d", t->name ? t->name : "t", (int)dim);
  fu_kval *kv = lix_chk(e, fu_kernel_stride_param(e->m, e->k, name, e->idx, t, dim));
  e->str[e->n_str].v = v;
  e->str[e->n_str].dim = dim;
  e->str[e->n_str++].kv = kv;
  return kv;
}

static fu_kval *const_idx(fu_lix *e, int64_t v) {
  const fu_ix *x = fu_ix_const(e->ix, v);
  if (!x) return lix_chk(e, NULL);
  fu_kval *kv = fu_lix_get(e, x);
  if (kv) return kv;
  kv = lix_chk(e, fu_kb_const_i(e->b, NULL, e->idx, v));
  if (kv) fu_lix_set(e, x, kv);
  return kv;
}

/* Emitted once per scope; (y / c1) / c2 becomes one division by c1 * c2
 * (indices are non-negative). */
fu_kval *fu_lix_emit(fu_lix *e, const fu_ix *x) {
  if (e->failed) return NULL;
  if (!x) return lix_chk(e, NULL);
  fu_kval *kv = fu_lix_get(e, x);
  if (kv) return kv;
  fu_kval *a = NULL, *c = NULL;
  int64_t c1, c2, prod;
  switch (x->kind) {
  case FU_IX_CONST: return const_idx(e, x->value);
  case FU_IX_SYM: kv = extent_param(e, x->sym); break;
  case FU_IX_VAR:
    if (x->tag == FU_IG_VAR_STRIDE) {
      kv = stride_param(e, (const fu_value *)x->payload, x->dim);
      break;
    }
    if (e->resolve_var && (kv = e->resolve_var(e->resolve_ctx, x)) != NULL) break;
    if (!e->failed)
      fu_error(e->diag, e->seg->loc, "internal error: loop variable '%s' used outside its loop", x->sym ? x->sym : "?");
    e->failed = true;
    return NULL;
  case FU_IX_ADD:
  case FU_IX_MUL:
  case FU_IX_MOD:
    a = fu_lix_emit(e, x->a);
    c = fu_lix_emit(e, x->b);
    if (!a || !c) return NULL;
    kv = lix_chk(e, fu_kb_binary(e->b, NULL,
                                 x->kind == FU_IX_ADD ? FU_OP_ADD : x->kind == FU_IX_MUL ? FU_OP_MUL : FU_OP_FMOD,
                                 e->idx, a, c));
    break;
  case FU_IX_DIV:
    if (x->a->kind == FU_IX_DIV && fu_ix_is_const(x->a->b, &c1) && fu_ix_is_const(x->b, &c2) &&
        !__builtin_mul_overflow(c1, c2, &prod))
      return fu_lix_emit(e, fu_ix_div(e->ix, x->a->a, fu_ix_const(e->ix, prod)));
    a = fu_lix_emit(e, x->a);
    c = fu_lix_emit(e, x->b);
    if (!a || !c) return NULL;
    kv = lix_chk(e, fu_kb_binary(e->b, NULL, FU_OP_DIV, e->idx, a, c));
    break;
  case FU_IX_CEILDIV: {
    a = fu_lix_emit(e, x->a);
    c = fu_lix_emit(e, x->b);
    fu_kval *one = const_idx(e, 1);
    if (!a || !c || !one) return NULL;
    fu_kval *t = lix_chk(e, fu_kb_binary(e->b, NULL, FU_OP_SUB, e->idx, c, one));
    fu_kval *s = t ? lix_chk(e, fu_kb_binary(e->b, NULL, FU_OP_ADD, e->idx, a, t)) : NULL;
    kv = s ? lix_chk(e, fu_kb_binary(e->b, NULL, FU_OP_DIV, e->idx, s, c)) : NULL;
    break;
  }
  }
  if (kv) fu_lix_set(e, x, kv);
  return kv;
}
