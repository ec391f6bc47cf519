/* fuser: symbolic strides, and when a view op only reinterprets memory.
 * See include/fuser/view_layout.h for the model. */
#include "fuser/view_layout.h"

#include <string.h>

/* ---- stride algebra ---------------------------------------------------- */

/* Total order on atoms: extent symbols (by name) before input strides (by
 * input id, then dim), so equal products have equal sorted atom lists. */
static int atom_cmp(const fu_stride_atom *a, const fu_stride_atom *b) {
  if (a->sym && b->sym) return strcmp(a->sym, b->sym);
  if (a->sym) return -1;
  if (b->sym) return 1;
  uint32_t ia = a->input ? a->input->id : 0, ib = b->input ? b->input->id : 0;
  if (ia != ib) return ia < ib ? -1 : 1;
  return a->dim < b->dim ? -1 : a->dim > b->dim;
}

void fu_stride_const(fu_stride *s, int64_t c) {
  s->coef = c;
  s->n_atoms = 0;
}

bool fu_stride_equal(const fu_stride *a, const fu_stride *b) {
  if (a->coef != b->coef || a->n_atoms != b->n_atoms) return false;
  for (uint32_t i = 0; i < a->n_atoms; i++)
    if (atom_cmp(&a->atoms[i], &b->atoms[i]) != 0) return false;
  return true;
}

/* Insert one atom keeping the list sorted.  False when full. */
static bool stride_add_atom(fu_stride *s, const fu_stride_atom *at) {
  if (s->coef == 0) return true;
  if (s->n_atoms >= FU_STRIDE_MAX_ATOMS) return false;
  uint32_t i = s->n_atoms;
  while (i > 0 && atom_cmp(&s->atoms[i - 1], at) > 0) {
    s->atoms[i] = s->atoms[i - 1];
    i--;
  }
  s->atoms[i] = *at;
  s->n_atoms++;
  return true;
}

static bool coef_mul(int64_t *c, int64_t k) {
  int64_t r;
  if (__builtin_mul_overflow(*c, k, &r)) return false;
  *c = r;
  return true;
}

bool fu_stride_mul_extent(fu_stride *s, fu_extent e) {
  if (e.sym == NULL) {
    if (e.value < 0 || !coef_mul(&s->coef, e.value)) return false;
    if (s->coef == 0) s->n_atoms = 0;
    return true;
  }
  fu_stride_atom at = {e.sym, NULL, -1};
  return stride_add_atom(s, &at);
}

bool fu_stride_mul(const fu_stride *a, const fu_stride *b, fu_stride *out) {
  fu_stride r = *a;
  if (!coef_mul(&r.coef, b->coef)) return false;
  if (r.coef == 0) {
    r.n_atoms = 0;
  } else {
    for (uint32_t i = 0; i < b->n_atoms; i++)
      if (!stride_add_atom(&r, &b->atoms[i])) return false;
  }
  *out = r;
  return true;
}

static void value_ref(fu_strbuf *sb, const fu_value *v) {
  if (v->name)
    fu_strbuf_printf(sb, "%%%s", v->name);
  else
    fu_strbuf_printf(sb, "%%%u", (unsigned)v->id);
}

void fu_stride_print(fu_strbuf *sb, const fu_stride *s) {
  bool first = true;
  if (s->coef != 1 || s->n_atoms == 0) {
    fu_strbuf_printf(sb, "%lld", (long long)s->coef);
    first = false;
  }
  for (uint32_t i = 0; i < s->n_atoms; i++) {
    if (!first) fu_strbuf_puts(sb, " * ");
    first = false;
    const fu_stride_atom *at = &s->atoms[i];
    if (at->sym) {
      fu_strbuf_puts(sb, at->sym);
    } else {
      fu_strbuf_puts(sb, "stride(");
      if (at->input)
        value_ref(sb, at->input);
      else
        fu_strbuf_puts(sb, "?");
      fu_strbuf_printf(sb, ", %d)", (int)at->dim);
    }
  }
}

/* Whether the atoms of a are a sub-multiset of those of b (both sorted). */
static bool atoms_subset(const fu_stride *a, const fu_stride *b) {
  uint32_t j = 0;
  for (uint32_t i = 0; i < a->n_atoms; i++) {
    while (j < b->n_atoms && atom_cmp(&b->atoms[j], &a->atoms[i]) < 0) j++;
    if (j == b->n_atoms || atom_cmp(&b->atoms[j], &a->atoms[i]) != 0) return false;
    j++;
  }
  return true;
}

/* ---- layouts ----------------------------------------------------------- */

static bool extent_is_one(fu_extent e) { return e.sym == NULL && e.value == 1; }

/* Give every dim of constant extent 1 the stride PyTorch's unsqueeze would:
 * the next inner dim's stride times its extent, or 1 when innermost.  These
 * strides never affect addressing; fixing them keeps layouts canonical. */
static bool fill_unit_strides(const fu_type *t, fu_view_layout *l) {
  for (int32_t d = t->rank - 1; d >= 0; d--) {
    if (!extent_is_one(t->dims[d])) continue;
    if (d == t->rank - 1) {
      fu_stride_const(&l->strides[d], 1);
    } else {
      fu_stride s = l->strides[d + 1];
      if (!fu_stride_mul_extent(&s, t->dims[d + 1])) return false;
      l->strides[d] = s;
    }
  }
  return true;
}

bool fu_layout_row_major(const fu_type *t, fu_view_layout *out) {
  out->rank = t->rank;
  if (t->rank <= 0) return true;
  if (t->rank > FU_MAX_RANK) return false;
  fu_stride_const(&out->strides[t->rank - 1], 1);
  for (int32_t d = t->rank - 2; d >= 0; d--) {
    out->strides[d] = out->strides[d + 1];
    if (!fu_stride_mul_extent(&out->strides[d], t->dims[d + 1])) return false;
  }
  return true;
}

bool fu_layout_is_row_major(const fu_type *t, const fu_view_layout *l) {
  if (l->rank != t->rank) return false;
  fu_view_layout rm;
  if (!fu_layout_row_major(t, &rm)) return false;
  for (int32_t d = 0; d < t->rank; d++)
    if (!extent_is_one(t->dims[d]) && !fu_stride_equal(&rm.strides[d], &l->strides[d])) return false;
  return true;
}

void fu_layout_print(fu_strbuf *sb, const fu_view_layout *l) {
  if (l->rank < 0) {
    fu_strbuf_puts(sb, "scalar");
    return;
  }
  fu_strbuf_putc(sb, '[');
  for (int32_t d = 0; d < l->rank; d++) {
    if (d) fu_strbuf_puts(sb, ", ");
    fu_stride_print(sb, &l->strides[d]);
  }
  fu_strbuf_putc(sb, ']');
}

static void note_printf(fu_strbuf *note, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note_printf(fu_strbuf *note, const char *fmt, ...) {
  if (!note) return;
  va_list ap;
  va_start(ap, fmt);
  fu_strbuf_vprintf(note, fmt, ap);
  va_end(ap);
}

/* The input's layout: constant strides; or, walking the dims from the
 * innermost outward in stride order, a contiguous dim's stride is the
 * previous (inner) dim's stride times its extent (1 for the innermost), a
 * non-contiguous dim's stride is an unknown run-time atom, and a broadcast
 * dim (contiguity none) has stride 0 and is skipped, as nvFuser does. */
bool fu_layout_of_input(const fu_op *input, fu_view_layout *out, fu_strbuf *why) {
  const fu_value *v = input->results[0];
  const fu_type *t = &v->type;
  const fu_layout *lay = &input->u.input.layout;
  out->rank = t->rank;
  if (t->rank <= 0) return true;
  if (t->rank > FU_MAX_RANK) {
    note_printf(why, "rank %d is above the maximum %d", (int)t->rank, FU_MAX_RANK);
    return false;
  }
  if (lay->strides) {
    for (int32_t d = 0; d < t->rank; d++) {
      if (lay->strides[d] < 0) {
        note_printf(why, "negative stride %lld", (long long)lay->strides[d]);
        return false;
      }
      fu_stride_const(&out->strides[d], lay->strides[d]);
    }
    return true;
  }
  int32_t order[FU_MAX_RANK]; /* order[k]: the dim whose stride has rank k (0 innermost) */
  for (int32_t k = 0; k < t->rank; k++) order[k] = -1;
  for (int32_t d = 0; d < t->rank; d++) {
    int32_t k = lay->stride_order ? lay->stride_order[d] : t->rank - 1 - d;
    if (k < 0 || k >= t->rank || order[k] != -1) {
      note_printf(why, "stride_order is not a permutation of 0..%d", (int)t->rank - 1);
      return false;
    }
    order[k] = d;
  }
  bool have_inner = false;
  fu_stride inner;
  fu_extent inner_extent = {1, NULL};
  for (int32_t k = 0; k < t->rank; k++) {
    int32_t d = order[k];
    int c = lay->contiguity ? lay->contiguity[d] : FU_CONTIG_TRUE;
    fu_stride s;
    if (c == FU_CONTIG_NONE) {
      fu_stride_const(&out->strides[d], 0);
      continue;
    }
    if (c == FU_CONTIG_TRUE) {
      if (have_inner) {
        s = inner;
        if (!fu_stride_mul_extent(&s, inner_extent)) {
          note_printf(why, "its strides are too complex to reason about");
          return false;
        }
      } else {
        fu_stride_const(&s, 1);
      }
    } else {
      fu_stride_const(&s, 1);
      fu_stride_atom at = {NULL, v, d};
      stride_add_atom(&s, &at);
    }
    out->strides[d] = s;
    inner = s;
    inner_extent = t->dims[d];
    have_inner = true;
  }
  return true;
}

/* ---- reshape ----------------------------------------------------------- */

static void stride_from_extent(fu_stride *s, fu_extent e) {
  fu_stride_const(s, 1);
  fu_stride_mul_extent(s, e); /* one atom or a constant: cannot fail */
}

/* "0", "0 and 1", "0, 1 and 3" */
static void print_dim_list(fu_strbuf *sb, const int32_t *dims, int n) {
  for (int i = 0; i < n; i++) {
    if (i) fu_strbuf_puts(sb, i == n - 1 ? " and " : ", ");
    fu_strbuf_printf(sb, "%d", (int)dims[i]);
  }
}

/* A growing " and "-joined list of phrases. */
typedef struct phrase_list {
  fu_strbuf *sb;
  int n;
} phrase_list;

static void phrase_begin(phrase_list *p) {
  if (!p->sb) return;
  if (p->n++) fu_strbuf_puts(p->sb, " and ");
}

static void phrase_dims(phrase_list *p, const char *one, const char *many, const int32_t *dims, int n,
                        const char *tail) {
  if (!p->sb || n == 0) return;
  phrase_begin(p);
  fu_strbuf_puts(p->sb, n == 1 ? one : many);
  fu_strbuf_putc(p->sb, ' ');
  print_dim_list(p->sb, dims, n);
  if (tail) fu_strbuf_puts(p->sb, tail);
}

typedef enum { MONO_EQ, MONO_LT, MONO_GT, MONO_INCOMPARABLE } mono_order;

/* Which side of a reshape group to grow next: the product that provably
 * divides into the other (fewer atoms, or same atoms and smaller constant). */
static mono_order mono_compare(const fu_stride *p, const fu_stride *q) {
  bool pq = atoms_subset(p, q), qp = atoms_subset(q, p);
  if (pq && qp) return p->coef == q->coef ? MONO_EQ : p->coef < q->coef ? MONO_LT : MONO_GT;
  if (pq) return MONO_LT;
  if (qp) return MONO_GT;
  return MONO_INCOMPARABLE;
}

/* See the header.  Two pointers walk the non-unit dims of both shapes,
 * growing the smaller extent product until the products are equal: the
 * first equality closes a group, which is the finest grouping, and any
 * grouping found this way holds for every binding of the symbols. */
bool fu_layout_reshape(const fu_type *from, const fu_view_layout *in, const fu_type *to,
                       fu_view_layout *out, const char *desc, fu_strbuf *note) {
  if (in->rank != from->rank || from->rank < 0 || to->rank < 0 || to->rank > FU_MAX_RANK) {
    note_printf(note, "reshape of %s has a malformed layout or type", desc);
    return false;
  }
  out->rank = to->rank;
  for (int32_t d = 0; d < from->rank; d++)
    if (from->dims[d].sym == NULL && from->dims[d].value == 0) {
      if (!fu_layout_row_major(to, out)) {
        note_printf(note, "strides of the result are too complex to reason about");
        return false;
      }
      note_printf(note, "reshapes the empty tensor %s", desc);
      return true;
    }
  int32_t fa[FU_MAX_RANK], ta[FU_MAX_RANK];
  int nf = 0, nt = 0;
  for (int32_t d = 0; d < from->rank; d++)
    if (!extent_is_one(from->dims[d])) fa[nf++] = d;
  for (int32_t d = 0; d < to->rank; d++) {
    if (!extent_is_one(to->dims[d])) ta[nt++] = d;
    fu_stride_const(&out->strides[d], 1);
  }
  fu_strbuf scratch;
  fu_strbuf_init(&scratch, note ? note->alloc : fu_default_allocator());
  phrase_list what = {note ? &scratch : NULL, 0};
  bool ok = false;
  int i = 0, j = 0;
  while (i < nf || j < nt) {
    if (i == nf || j == nt) {
      note_printf(note, "the extents of %s and of the result do not have the same product", desc);
      goto done;
    }
    int gi = i, gj = j;
    fu_stride p, q;
    stride_from_extent(&p, from->dims[fa[i++]]);
    stride_from_extent(&q, to->dims[ta[j++]]);
    for (;;) {
      mono_order o = mono_compare(&p, &q);
      if (o == MONO_EQ) break;
      bool grown;
      if (o == MONO_LT && i < nf)
        grown = fu_stride_mul_extent(&p, from->dims[fa[i++]]);
      else if (o == MONO_GT && j < nt)
        grown = fu_stride_mul_extent(&q, to->dims[ta[j++]]);
      else {
        if (note) {
          fu_strbuf_clear(&scratch);
          fu_stride_print(&scratch, &p);
          fu_strbuf_puts(&scratch, " vs ");
          fu_stride_print(&scratch, &q);
          note_printf(note, "cannot match the extents of %s with the result's (%s)", desc,
                      scratch.data ? scratch.data : "");
        }
        goto done;
      }
      if (!grown) {
        note_printf(note, "the extents of %s are too complex to reason about", desc);
        goto done;
      }
    }
    /* operand dims fa[gi..i) <-> result dims ta[gj..j) */
    for (int k = gi; k + 1 < i; k++) {
      int32_t a = fa[k], b = fa[k + 1];
      fu_stride want = in->strides[b];
      if (!fu_stride_mul_extent(&want, from->dims[b])) {
        note_printf(note, "strides of %s are too complex to reason about", desc);
        goto done;
      }
      if (!fu_stride_equal(&in->strides[a], &want)) {
        if (note) {
          fu_strbuf_clear(&scratch);
          fu_stride_print(&scratch, &in->strides[a]);
          fu_strbuf_puts(&scratch, " != ");
          fu_stride_print(&scratch, &in->strides[b]);
          fu_strbuf_puts(&scratch, " * ");
          fu_stride e;
          stride_from_extent(&e, from->dims[b]);
          fu_stride_print(&scratch, &e);
          note_printf(note, "%s dims %d and %d of %s, which are not contiguous (stride %s)",
                      j - gj == 1 ? "merges" : "regroups", (int)a, (int)b, desc,
                      scratch.data ? scratch.data : "");
        }
        goto done;
      }
    }
    fu_stride s = in->strides[fa[i - 1]];
    for (int r = j - 1; r >= gj; r--) {
      out->strides[ta[r]] = s;
      if (r > gj && !fu_stride_mul_extent(&s, to->dims[ta[r]])) {
        note_printf(note, "strides of the result are too complex to reason about");
        goto done;
      }
    }
    if (i - gi == 1 && j - gj > 1)
      phrase_dims(&what, "splits dim", "splits dims", &fa[gi], 1, NULL);
    else if (i - gi > 1 && j - gj == 1)
      phrase_dims(&what, "merges dim", "merges dims", &fa[gi], i - gi, NULL);
    else if (i - gi > 1)
      phrase_dims(&what, "regroups dim", "regroups dims", &fa[gi], i - gi, NULL);
  }
  if (!fill_unit_strides(to, out)) {
    note_printf(note, "strides of the result are too complex to reason about");
    goto done;
  }
  if (nf < from->rank) {
    phrase_begin(&what);
    if (what.sb) fu_strbuf_puts(what.sb, "drops size-1 dims");
  }
  if (nt < to->rank) {
    phrase_begin(&what);
    if (what.sb) fu_strbuf_puts(what.sb, "adds size-1 dims");
  }
  if (what.n == 0) {
    phrase_begin(&what);
    if (what.sb) fu_strbuf_puts(what.sb, "keeps the shape");
  }
  note_printf(note, "%s of %s", scratch.data ? scratch.data : "", desc);
  ok = true;
done:
  fu_strbuf_free(&scratch);
  return ok;
}

/* ---- the other views ------------------------------------------------------ */

static bool int_list_ok(const fu_int_list *l, uint32_t n, int32_t bound, bool increasing) {
  if (l->n != n) return false;
  for (uint32_t i = 0; i < n; i++) {
    if (l->v[i] < 0 || l->v[i] >= bound) return false;
    if (increasing && i && l->v[i] <= l->v[i - 1]) return false;
  }
  return true;
}

static bool apply_permute(const fu_op *op, const fu_view_layout *in, fu_view_layout *out, const char *desc,
                          fu_strbuf *note) {
  const fu_int_list *dims = &op->u.permute.dims;
  int32_t rank = in->rank;
  bool seen[FU_MAX_RANK] = {false};
  if (!int_list_ok(dims, (uint32_t)rank, rank, false)) goto bad;
  for (int32_t i = 0; i < rank; i++) {
    if (seen[dims->v[i]]) goto bad;
    seen[dims->v[i]] = true;
    out->strides[i] = in->strides[dims->v[i]];
  }
  out->rank = rank;
  note_printf(note, "permutes the dims of %s (strides permute)", desc);
  return true;
bad:
  note_printf(note, "permute of %s has malformed dims", desc);
  return false;
}

static bool apply_squeeze(const fu_op *op, const fu_view_layout *in, fu_view_layout *out, const char *desc,
                          fu_strbuf *note) {
  const fu_type *t = &op->operands[0]->type;
  const fu_int_list *dims = &op->u.squeeze.dims;
  bool drop[FU_MAX_RANK] = {false};
  int32_t list[FU_MAX_RANK];
  int n = 0;
  for (uint32_t i = 0; i < dims->n; i++) {
    int64_t d = dims->v[i];
    if (d < 0 || d >= t->rank || drop[d]) {
      note_printf(note, "squeeze of %s has malformed dims", desc);
      return false;
    }
    if (!extent_is_one(t->dims[d])) {
      note_printf(note, "squeezes dim %d of %s, whose extent is not the constant 1", (int)d, desc);
      return false;
    }
    drop[d] = true;
    list[n++] = (int32_t)d;
  }
  out->rank = 0;
  for (int32_t d = 0; d < t->rank; d++)
    if (!drop[d]) out->strides[out->rank++] = in->strides[d];
  if (note) {
    phrase_list p = {note, 0};
    phrase_dims(&p, "drops size-1 dim", "drops size-1 dims", list, n, NULL);
    if (n == 0) fu_strbuf_puts(note, "drops no dim");
    fu_strbuf_printf(note, " of %s", desc);
  }
  return true;
}

static bool apply_broadcast(const fu_op *op, const fu_view_layout *in, fu_view_layout *out, const char *desc,
                            fu_strbuf *note) {
  const fu_type *rt = &op->results[0]->type;
  bool *isb = op->u.broadcast.is_broadcast;
  uint32_t n = op->u.broadcast.n;
  int32_t added[FU_MAX_RANK], expanded[FU_MAX_RANK];
  int na = 0, ne = 0;
  if ((int64_t)n != rt->rank || (n && !isb)) goto bad;
  int32_t k = 0;
  for (int32_t d = 0; d < rt->rank; d++) {
    if (isb[d]) {
      fu_stride_const(&out->strides[d], 0);
      if (extent_is_one(rt->dims[d]))
        added[na++] = d;
      else
        expanded[ne++] = d;
    } else {
      if (k >= in->rank) goto bad;
      out->strides[d] = in->strides[k++];
    }
  }
  if (k != in->rank) goto bad;
  out->rank = rt->rank;
  if (note) {
    phrase_list p = {note, 0};
    phrase_dims(&p, "adds size-1 dim", "adds size-1 dims", added, na, NULL);
    phrase_dims(&p, "broadcasts along new dim", "broadcasts along new dims", expanded, ne, " (stride 0)");
    if (p.n == 0) fu_strbuf_puts(note, "adds no dim");
    fu_strbuf_printf(note, " to %s", desc);
  }
  return true;
bad:
  note_printf(note, "broadcast of %s has a malformed is_broadcast_dim", desc);
  return false;
}

static bool apply_broadcast_in_dim(const fu_op *op, const fu_view_layout *in, fu_view_layout *out,
                                   const char *desc, fu_strbuf *note) {
  const fu_type *ot = &op->operands[0]->type, *rt = &op->results[0]->type;
  const fu_int_list *bd = &op->u.broadcast_in_dim.broadcast_dims;
  bool mapped[FU_MAX_RANK] = {false};
  int32_t added[FU_MAX_RANK], newb[FU_MAX_RANK], expanded[FU_MAX_RANK];
  int na = 0, nn = 0, ne = 0;
  if (rt->rank > FU_MAX_RANK || !int_list_ok(bd, (uint32_t)ot->rank, rt->rank, true)) {
    note_printf(note, "broadcast_in_dim of %s has malformed broadcast_dims", desc);
    return false;
  }
  for (int32_t i = 0; i < ot->rank; i++) {
    int32_t r = (int32_t)bd->v[i];
    mapped[r] = true;
    if (fu_extent_equal(ot->dims[i], rt->dims[r])) {
      out->strides[r] = in->strides[i];
    } else if (extent_is_one(ot->dims[i])) {
      fu_stride_const(&out->strides[r], 0);
      expanded[ne++] = r;
    } else {
      note_printf(note, "broadcast_in_dim maps dim %d of %s to a dim of another extent", (int)i, desc);
      return false;
    }
  }
  for (int32_t r = 0; r < rt->rank; r++) {
    if (mapped[r]) continue;
    fu_stride_const(&out->strides[r], 0);
    if (extent_is_one(rt->dims[r]))
      added[na++] = r;
    else
      newb[nn++] = r;
  }
  out->rank = rt->rank;
  if (note) {
    phrase_list p = {note, 0};
    phrase_dims(&p, "adds size-1 dim", "adds size-1 dims", added, na, NULL);
    phrase_dims(&p, "broadcasts along new dim", "broadcasts along new dims", newb, nn, " (stride 0)");
    phrase_dims(&p, "expands dim", "expands dims", expanded, ne, " (stride 0)");
    if (p.n == 0) fu_strbuf_puts(note, "maps the dims one to one");
    fu_strbuf_printf(note, " of %s", desc);
  }
  return true;
}

static bool apply_expand(const fu_op *op, const fu_view_layout *in, fu_view_layout *out, const char *desc,
                         fu_strbuf *note) {
  const fu_type *ot = &op->operands[0]->type, *rt = &op->results[0]->type;
  int32_t expanded[FU_MAX_RANK];
  int ne = 0;
  if (ot->rank != rt->rank) {
    note_printf(note, "expand of %s changes the rank", desc);
    return false;
  }
  for (int32_t d = 0; d < rt->rank; d++) {
    if (fu_extent_equal(ot->dims[d], rt->dims[d])) {
      out->strides[d] = in->strides[d];
    } else if (extent_is_one(ot->dims[d])) {
      fu_stride_const(&out->strides[d], 0);
      expanded[ne++] = d;
    } else {
      note_printf(note, "expand changes dim %d of %s, whose extent is not 1", (int)d, desc);
      return false;
    }
  }
  out->rank = rt->rank;
  if (note) {
    phrase_list p = {note, 0};
    phrase_dims(&p, "expands dim", "expands dims", expanded, ne, " (stride 0)");
    if (p.n == 0) fu_strbuf_puts(note, "keeps the shape");
    fu_strbuf_printf(note, " of %s", desc);
  }
  return true;
}

bool fu_layout_apply_view(const fu_op *op, const fu_view_layout *in, fu_view_layout *out,
                          const char *desc, fu_strbuf *note) {
  if (!fu_op_has(op->kind, FU_OF_VIEW) || op->n_operands < 1 || op->n_results != 1) {
    note_printf(note, "'%s' is not a view op", fu_op_info_of(op->kind)->name);
    return false;
  }
  const fu_type *ot = &op->operands[0]->type, *rt = &op->results[0]->type;
  if (ot->rank < 0 || rt->rank < 0 || in->rank != ot->rank || rt->rank > FU_MAX_RANK) {
    note_printf(note, "'%s' of %s does not take a tensor of the layout's rank",
                fu_op_info_of(op->kind)->name, desc);
    return false;
  }
  bool ok = false;
  switch (fu_op_info_of(op->kind)->cls) {
  case FU_OC_RESHAPE: return fu_layout_reshape(ot, in, rt, out, desc, note);
  case FU_OC_PERMUTE: ok = apply_permute(op, in, out, desc, note); break;
  case FU_OC_SQUEEZE: ok = apply_squeeze(op, in, out, desc, note); break;
  case FU_OC_BROADCAST: ok = apply_broadcast(op, in, out, desc, note); break;
  case FU_OC_BROADCAST_IN_DIM: ok = apply_broadcast_in_dim(op, in, out, desc, note); break;
  case FU_OC_EXPAND: ok = apply_expand(op, in, out, desc, note); break;
  case FU_OC_META: case FU_OC_UNARY: case FU_OC_BINARY: case FU_OC_TERNARY: case FU_OC_CAST: /* set is unary */
  case FU_OC_REDUCE: case FU_OC_VARIANCE: case FU_OC_SLICE: case FU_OC_CAT: case FU_OC_PAD: case FU_OC_FULL:
  case FU_OC_IOTA: case FU_OC_MATMUL:
  case FU_OC_INDEX: case FU_OC_STRIDE_ORDER:
  case FU_OC_RNG: case FU_OC_SCAN: case FU_OC_PARTIAL:
    if (op->kind != FU_OP_SET || !fu_type_equal(ot, rt)) {
      note_printf(note, "'%s' is not a view op", fu_op_info_of(op->kind)->name);
      return false;
    }
    *out = *in;
    note_printf(note, "aliases %s", desc);
    return true;
  }
  if (ok && !fill_unit_strides(rt, out)) {
    note_printf(note, "; but the result's strides are too complex to reason about");
    return false;
  }
  return ok;
}

/* See the header: each case inverts the index map of the forward view. */
bool fu_layout_unapply_view(const fu_op *op, const fu_view_layout *in, fu_view_layout *out) {
  if (!fu_op_has(op->kind, FU_OF_VIEW) || op->n_operands < 1 || op->n_results != 1) return false;
  const fu_type *ot = &op->operands[0]->type, *rt = &op->results[0]->type;
  if (ot->rank < 0 || rt->rank < 0 || ot->rank > FU_MAX_RANK || in->rank != rt->rank) return false;
  out->rank = ot->rank;
  for (int32_t d = 0; d < ot->rank; d++) fu_stride_const(&out->strides[d], 1);
  switch (fu_op_info_of(op->kind)->cls) {
  case FU_OC_RESHAPE: return fu_layout_reshape(rt, in, ot, out, "", NULL);
  case FU_OC_PERMUTE: {
    const fu_int_list *dims = &op->u.permute.dims;
    if (!int_list_ok(dims, (uint32_t)ot->rank, ot->rank, false)) return false;
    for (int32_t i = 0; i < ot->rank; i++) out->strides[dims->v[i]] = in->strides[i];
    break;
  }
  case FU_OC_SQUEEZE: {
    bool drop[FU_MAX_RANK] = {false};
    for (uint32_t i = 0; i < op->u.squeeze.dims.n; i++) {
      int64_t d = op->u.squeeze.dims.v[i];
      if (d < 0 || d >= ot->rank) return false;
      drop[d] = true;
    }
    int32_t k = 0;
    for (int32_t d = 0; d < ot->rank; d++) {
      if (drop[d]) continue;
      if (k >= in->rank) return false;
      out->strides[d] = in->strides[k++];
    }
    if (k != in->rank) return false;
    break;
  }
  case FU_OC_BROADCAST: {
    if ((int64_t)op->u.broadcast.n != rt->rank || !op->u.broadcast.is_broadcast) return false;
    int32_t k = 0;
    for (int32_t d = 0; d < rt->rank; d++) {
      if (op->u.broadcast.is_broadcast[d]) continue;
      if (k >= ot->rank) return false;
      out->strides[k++] = in->strides[d];
    }
    if (k != ot->rank) return false;
    break;
  }
  case FU_OC_BROADCAST_IN_DIM: {
    const fu_int_list *bd = &op->u.broadcast_in_dim.broadcast_dims;
    if (!int_list_ok(bd, (uint32_t)ot->rank, rt->rank, true)) return false;
    for (int32_t i = 0; i < ot->rank; i++) out->strides[i] = in->strides[bd->v[i]];
    break;
  }
  case FU_OC_EXPAND:
  case FU_OC_META: case FU_OC_UNARY: case FU_OC_BINARY: case FU_OC_TERNARY: case FU_OC_CAST: /* set is unary */
  case FU_OC_REDUCE: case FU_OC_VARIANCE: case FU_OC_SLICE: case FU_OC_CAT: case FU_OC_PAD: case FU_OC_FULL:
  case FU_OC_IOTA: case FU_OC_MATMUL:
  case FU_OC_INDEX: case FU_OC_STRIDE_ORDER:
  case FU_OC_RNG: case FU_OC_SCAN: case FU_OC_PARTIAL:
    if (ot->rank != rt->rank) return false;
    *out = *in;
    break;
  }
  return fill_unit_strides(ot, out);
}

/* ---- the analysis of one fusion ------------------------------------------ */

fu_status fu_layout_analysis_init(fu_layout_analysis *a, fu_fusion *f) {
  memset(a, 0, sizeof *a);
  a->fusion = f;
  a->alloc = f->module->alloc;
  fu_status st = fu_use_map_build(f, &a->uses);
  if (st != FU_OK) return st;
  a->n_values = f->next_value_id;
  size_t n = a->n_values ? a->n_values : 1;
  a->is_output = fu_mem_calloc(&a->alloc, n, sizeof *a->is_output);
  a->memo = fu_mem_calloc(&a->alloc, n, sizeof *a->memo);
  a->memo_state = fu_mem_calloc(&a->alloc, n, sizeof *a->memo_state);
  if (!a->is_output || !a->memo || !a->memo_state) {
    fu_layout_analysis_free(a);
    return FU_ERR_NOMEM;
  }
  for (fu_op *op = fu_walk_first(&f->body); op; op = fu_walk_next(op))
    if (op->kind == FU_OP_OUTPUT)
      for (uint32_t i = 0; i < op->n_operands; i++)
        if (op->operands[i]->id < a->n_values) a->is_output[op->operands[i]->id] = true;
  return FU_OK;
}

static size_t memo_bytes(const fu_value *v) {
  return (size_t)(v->type.rank > 0 ? v->type.rank : 1) * sizeof(fu_stride);
}

void fu_layout_analysis_forget(fu_layout_analysis *a) {
  if (!a->memo) return;
  for (fu_op *op = fu_walk_first(&a->fusion->body); op; op = fu_walk_next(op))
    for (uint32_t r = 0; r < op->n_results; r++) {
      fu_value *v = op->results[r];
      if (v->id >= a->n_values || !a->memo[v->id]) continue;
      fu_mem_free(&a->alloc, a->memo[v->id], memo_bytes(v));
      a->memo[v->id] = NULL;
      a->memo_state[v->id] = 0;
    }
}

void fu_layout_analysis_free(fu_layout_analysis *a) {
  size_t n = a->n_values ? a->n_values : 1;
  if (a->memo) fu_layout_analysis_forget(a);
  fu_mem_free(&a->alloc, a->is_output, n * sizeof *a->is_output);
  fu_mem_free(&a->alloc, a->memo, n * sizeof *a->memo);
  fu_mem_free(&a->alloc, a->memo_state, n * sizeof *a->memo_state);
  fu_use_map_free(&a->uses);
  memset(a, 0, sizeof *a);
}

static void memo_store(fu_layout_analysis *a, const fu_value *v, const fu_view_layout *l) {
  if (v->id >= a->n_values || a->memo_state[v->id] == 1) return;
  fu_stride *s = fu_mem_alloc(&a->alloc, memo_bytes(v));
  if (!s) return; /* memoization is only an optimisation */
  if (l->rank > 0) memcpy(s, l->strides, (size_t)l->rank * sizeof *s);
  a->memo[v->id] = s;
  a->memo_state[v->id] = 1;
}

static bool memo_load(const fu_layout_analysis *a, const fu_value *v, fu_view_layout *out) {
  if (v->id >= a->n_values || a->memo_state[v->id] != 1) return false;
  out->rank = v->type.rank;
  if (out->rank > 0) memcpy(out->strides, a->memo[v->id], (size_t)out->rank * sizeof *out->strides);
  return true;
}

static bool member_is_host(const fu_op *op, void *user) {
  (void)user;
  return op->host;
}

/* A description of value v for notes: "%T0". */
static const char *value_desc(fu_strbuf *sb, const fu_value *v) {
  fu_strbuf_clear(sb);
  value_ref(sb, v);
  return sb->data ? sb->data : "%?";
}

/* A stride_order op's result: dense, dims packed from the lowest order
 * (innermost) outwards, extent-1 dims skipped (stride 0). */
static bool ordered_layout(const fu_op *op, fu_view_layout *out) {
  const fu_type *t = &op->results[0]->type;
  const fu_int_list *o = &op->u.stride_order.order;
  if (t->rank < 0 || t->rank > FU_MAX_RANK || o->n != (uint32_t)t->rank) return false;
  int32_t dim_of[FU_MAX_RANK];
  for (int32_t k = 0; k < t->rank; k++) dim_of[k] = -1;
  for (int32_t d = 0; d < t->rank; d++) {
    if (o->v[d] < 0 || o->v[d] >= t->rank || dim_of[o->v[d]] >= 0) return false;
    dim_of[o->v[d]] = d;
  }
  out->rank = t->rank;
  fu_stride s;
  fu_stride_const(&s, 1);
  for (int32_t k = 0; k < t->rank; k++) {
    int32_t d = dim_of[k];
    if (extent_is_one(t->dims[d])) {
      fu_stride_const(&out->strides[d], 0);
      continue;
    }
    out->strides[d] = s;
    if (!fu_stride_mul_extent(&s, t->dims[d])) return false;
  }
  return true;
}

/* The layout of a value computed by a kernel (see the header). */
static fu_status kernel_value_layout(fu_layout_analysis *a, const fu_value *v, fu_view_layout *out) {
  if (v->def && v->def->kind == FU_OP_STRIDE_ORDER) return ordered_layout(v->def, out) ? FU_OK : FU_ERR_UNSUPPORTED;
  bool host_users = false;
  if (v->id < a->n_values) {
    const fu_use *u = fu_uses_of(&a->uses, v);
    for (uint32_t i = 0; i < fu_use_count(&a->uses, v); i++) host_users |= u[i].user->host;
  }
  if (!host_users) {
    if (!fu_layout_row_major(&v->type, out)) return FU_ERR_UNSUPPORTED;
    return FU_OK;
  }
  fu_status st = FU_OK;
  fu_layout_analysis_choose_root(a, v, member_is_host, NULL, out, NULL, &st);
  return st;
}

/* Iterative on purpose: a chain of thousands of host views must not recurse
 * thousands of frames deep. */
fu_status fu_layout_analysis_value(fu_layout_analysis *a, const fu_value *v, fu_view_layout *out,
                                   fu_strbuf *why) {
  if (v->type.rank < 0) {
    out->rank = FU_SCALAR_RANK;
    return FU_OK;
  }
  if (memo_load(a, v, out)) return FU_OK;
  /* Walk up through host ops to a value whose layout is known. */
  size_t cap = 16, n = 0;
  const fu_op **chain = fu_mem_alloc(&a->alloc, cap * sizeof *chain);
  if (!chain) return FU_ERR_NOMEM;
  fu_status st = FU_OK;
  const fu_value *cur = v;
  while (cur->def && cur->def->host && cur->def->n_operands >= 1 && !memo_load(a, cur, out)) {
    if (n == cap || n > a->n_values) {
      if (n > a->n_values) break; /* a cycle: cannot happen in verified IR */
      const fu_op **grown = fu_mem_realloc(&a->alloc, chain, cap * sizeof *chain, 2 * cap * sizeof *chain);
      if (!grown) {
        st = FU_ERR_NOMEM;
        goto done;
      }
      chain = grown;
      cap *= 2;
    }
    chain[n++] = cur->def;
    cur = cur->def->operands[0];
  }
  if (!memo_load(a, cur, out)) {
    if (cur->type.rank < 0) {
      out->rank = FU_SCALAR_RANK;
    } else if (cur->def && cur->def->kind == FU_OP_INPUT) {
      fu_strbuf tmp;
      fu_strbuf_init(&tmp, a->alloc);
      if (!fu_layout_of_input(cur->def, out, &tmp)) {
        if (why) {
          value_ref(why, cur);
          fu_strbuf_printf(why, " has an inconsistent layout: %s", tmp.data ? tmp.data : "");
        }
        st = FU_ERR_UNSUPPORTED;
      }
      fu_strbuf_free(&tmp);
      if (st != FU_OK) goto done;
    } else {
      st = kernel_value_layout(a, cur, out);
      if (st == FU_ERR_UNSUPPORTED && why) {
        value_ref(why, cur);
        fu_strbuf_puts(why, " has strides too complex to reason about");
      }
      if (st != FU_OK) goto done;
    }
    memo_store(a, cur, out);
  }
  fu_strbuf desc, note;
  fu_strbuf_init(&desc, a->alloc);
  fu_strbuf_init(&note, a->alloc);
  while (n > 0) {
    const fu_op *op = chain[--n];
    fu_view_layout next;
    fu_strbuf_clear(&note);
    if (!fu_layout_apply_view(op, out, &next, value_desc(&desc, op->operands[0]), &note)) {
      if (why) {
        value_ref(why, op->results[0]);
        fu_strbuf_printf(why, " is marked host but is not a view: %s", note.data ? note.data : "");
      }
      st = FU_ERR_UNSUPPORTED;
      break;
    }
    *out = next;
    memo_store(a, op->results[0], out);
  }
  fu_strbuf_free(&desc);
  fu_strbuf_free(&note);
done:
  fu_mem_free(&a->alloc, chain, cap * sizeof *chain);
  return st;
}

/* ---- output-end trees ------------------------------------------------------ */

/* A frame of the tree walk: a value, its layout, whether its buffer is seen
 * by nobody else, and the next use to visit. */
typedef struct tree_frame {
  const fu_value *v;
  fu_view_layout *layout;
  bool exclusive;
  uint32_t next_use;
} tree_frame;

typedef struct tree_walk {
  fu_layout_analysis *a;
  tree_frame *frames;
  size_t n, cap;
  fu_view_layout **spare; /* layouts to reuse */
  size_t n_spare, cap_spare;
} tree_walk;

static void walk_free(tree_walk *w) {
  for (size_t i = 0; i < w->n; i++) fu_mem_free(&w->a->alloc, w->frames[i].layout, sizeof(fu_view_layout));
  for (size_t i = 0; i < w->n_spare; i++) fu_mem_free(&w->a->alloc, w->spare[i], sizeof(fu_view_layout));
  fu_mem_free(&w->a->alloc, w->frames, w->cap * sizeof *w->frames);
  fu_mem_free(&w->a->alloc, w->spare, w->cap_spare * sizeof *w->spare);
}

static fu_view_layout *walk_layout(tree_walk *w) {
  if (w->n_spare) return w->spare[--w->n_spare];
  return fu_mem_alloc(&w->a->alloc, sizeof(fu_view_layout));
}

static void walk_pop(tree_walk *w) {
  fu_view_layout *l = w->frames[--w->n].layout;
  if (w->n_spare == w->cap_spare) {
    size_t cap = w->cap_spare ? 2 * w->cap_spare : 8;
    fu_view_layout **g = fu_mem_realloc(&w->a->alloc, w->spare, w->cap_spare * sizeof *g, cap * sizeof *g);
    if (!g) {
      fu_mem_free(&w->a->alloc, l, sizeof *l);
      return;
    }
    w->spare = g;
    w->cap_spare = cap;
  }
  w->spare[w->n_spare++] = l;
}

/* Push value v with layout l (copied); false on allocation failure. */
static bool walk_push(tree_walk *w, const fu_value *v, const fu_view_layout *l, bool exclusive) {
  if (w->n == w->cap) {
    size_t cap = w->cap ? 2 * w->cap : 8;
    tree_frame *g = fu_mem_realloc(&w->a->alloc, w->frames, w->cap * sizeof *g, cap * sizeof *g);
    if (!g) return false;
    w->frames = g;
    w->cap = cap;
  }
  fu_view_layout *copy = walk_layout(w);
  if (!copy) return false;
  *copy = *l;
  tree_frame fr = {v, copy, exclusive, 0};
  w->frames[w->n++] = fr;
  return true;
}

/* The next member use of the top frame's value, or NULL. */
static const fu_op *walk_next_member(tree_walk *w, fu_layout_member_fn member, void *user) {
  tree_frame *fr = &w->frames[w->n - 1];
  const fu_use_map *um = &w->a->uses;
  if (fr->v->id >= um->n_values) return NULL;
  const fu_use *u = fu_uses_of(um, fr->v);
  uint32_t cnt = fu_use_count(um, fr->v);
  while (fr->next_use < cnt) {
    const fu_op *user_op = u[fr->next_use++].user;
    if (user_op->kind != FU_OP_OUTPUT && member(user_op, user)) return user_op;
  }
  return NULL;
}

/* Whether the top frame's value has a member use left to visit. */
static bool walk_has_more(const tree_walk *w, fu_layout_member_fn member, void *user) {
  const tree_frame *fr = &w->frames[w->n - 1];
  const fu_use_map *um = &w->a->uses;
  if (fr->v->id >= um->n_values) return false;
  const fu_use *u = fu_uses_of(um, fr->v);
  for (uint32_t i = fr->next_use; i < fu_use_count(um, fr->v); i++)
    if (u[i].user->kind != FU_OP_OUTPUT && member(u[i].user, user)) return true;
  return false;
}

static bool value_exclusive(const fu_layout_analysis *a, const fu_value *v) {
  return !fu_layout_analysis_is_output(a, v) && v->id < a->uses.n_values && fu_use_count(&a->uses, v) == 1;
}

/* One step of the tree check: op applied to `in`; the result's layout in
 * *out.  False with the reason. */
static bool tree_step(fu_layout_analysis *a, const fu_op *op, const fu_view_layout *in, bool exclusive,
                      fu_view_layout *out, fu_strbuf *why) {
  fu_strbuf desc;
  fu_strbuf_init(&desc, a->alloc);
  bool ok = true;
  const fu_value *x = op->operands[0], *r = op->results[0];
  if (op->kind == FU_OP_SET && !exclusive) {
    if (why) {
      value_ref(why, r);
      fu_strbuf_puts(why, " = set ");
      value_ref(why, x);
      fu_strbuf_puts(why, " would alias a buffer that is also ");
      fu_strbuf_puts(why, fu_layout_analysis_is_output(a, x) ? "a fusion output" : "read elsewhere");
      fu_strbuf_puts(why, ", and set asks for a copy");
    }
    ok = false;
  } else {
    fu_strbuf note;
    fu_strbuf_init(&note, a->alloc);
    if (!fu_layout_apply_view(op, in, out, value_desc(&desc, x), why ? &note : NULL)) {
      if (why) {
        value_ref(why, r);
        fu_strbuf_printf(why, " = %s ", fu_op_info_of(op->kind)->name);
        value_ref(why, x);
        fu_strbuf_printf(why, " would not be a view: %s", note.data ? note.data : "");
      }
      ok = false;
    }
    fu_strbuf_free(&note);
  }
  if (ok && fu_layout_analysis_is_output(a, r) && !fu_layout_is_row_major(&r->type, out)) {
    if (why) {
      fu_view_layout rm;
      fu_strbuf_puts(why, "the output ");
      value_ref(why, r);
      fu_strbuf_puts(why, " would have strides ");
      fu_layout_print(why, out);
      if (fu_layout_row_major(&r->type, &rm)) {
        fu_strbuf_puts(why, ", not dense row-major ");
        fu_layout_print(why, &rm);
      } else {
        fu_strbuf_puts(why, ", not dense row-major");
      }
    }
    ok = false;
  }
  fu_strbuf_free(&desc);
  return ok;
}

bool fu_layout_analysis_tree_ok(fu_layout_analysis *a, const fu_op *op, const fu_view_layout *in,
                                bool exclusive, fu_layout_member_fn member, void *user,
                                fu_strbuf *why, fu_status *st) {
  fu_view_layout *out = fu_mem_alloc(&a->alloc, sizeof *out);
  if (!out) {
    *st = FU_ERR_NOMEM;
    return false;
  }
  tree_walk w = {a, NULL, 0, 0, NULL, 0, 0};
  bool ok = tree_step(a, op, in, exclusive, out, why);
  if (ok) {
    const fu_value *r = op->results[0];
    if (!walk_push(&w, r, out, exclusive && value_exclusive(a, r))) goto nomem;
  }
  while (ok && w.n > 0) {
    const fu_op *u = walk_next_member(&w, member, user);
    if (!u) {
      walk_pop(&w);
      continue;
    }
    tree_frame *fr = &w.frames[w.n - 1];
    if (!tree_step(a, u, fr->layout, fr->exclusive, out, why)) {
      ok = false;
      break;
    }
    bool excl = fr->exclusive && value_exclusive(a, u->results[0]);
    /* Drop an exhausted parent first, so a chain takes one frame, not n. */
    if (!walk_has_more(&w, member, user)) walk_pop(&w);
    if (!walk_push(&w, u->results[0], out, excl)) goto nomem;
  }
  walk_free(&w);
  fu_mem_free(&a->alloc, out, sizeof *out);
  return ok;
nomem:
  walk_free(&w);
  fu_mem_free(&a->alloc, out, sizeof *out);
  *st = FU_ERR_NOMEM;
  return false;
}

/* Every member op reading p is valid under layout l. */
static bool root_ok(fu_layout_analysis *a, const fu_value *p, const fu_view_layout *l, fu_layout_member_fn member,
                    void *user, fu_strbuf *why, fu_status *st) {
  bool excl = value_exclusive(a, p);
  const fu_use *u = fu_uses_of(&a->uses, p);
  for (uint32_t i = 0; i < fu_use_count(&a->uses, p); i++) {
    const fu_op *op = u[i].user;
    if (op->kind == FU_OP_OUTPUT || !member(op, user)) continue;
    if (!fu_layout_analysis_tree_ok(a, op, l, excl, member, user, why, st)) return false;
  }
  return true;
}

#define MAX_BACKWARD_CANDIDATES 8

/* Up to `cap` fusion outputs reached from p through member ops, in
 * depth-first order.  Returns how many were found; -1 on allocation
 * failure. */
static int tree_outputs(fu_layout_analysis *a, const fu_value *p, fu_layout_member_fn member, void *user,
                        const fu_value **outs, int cap) {
  size_t scap = 16, n = 0;
  const fu_value **stack = fu_mem_alloc(&a->alloc, scap * sizeof *stack);
  if (!stack) return -1;
  int found = 0;
  stack[n++] = p;
  while (n > 0 && found < cap) {
    const fu_value *v = stack[--n];
    if (v != p && fu_layout_analysis_is_output(a, v)) outs[found++] = v;
    if (v->id >= a->uses.n_values) continue;
    const fu_use *u = fu_uses_of(&a->uses, v);
    uint32_t cnt = fu_use_count(&a->uses, v);
    for (uint32_t i = cnt; i-- > 0;) {
      const fu_op *op = u[i].user;
      if (op->kind == FU_OP_OUTPUT || !member(op, user) || op->n_results != 1) continue;
      if (n == scap) {
        const fu_value **g = fu_mem_realloc(&a->alloc, stack, scap * sizeof *g, 2 * scap * sizeof *g);
        if (!g) {
          fu_mem_free(&a->alloc, stack, scap * sizeof *stack);
          return -1;
        }
        stack = g;
        scap *= 2;
      }
      stack[n++] = op->results[0];
    }
  }
  fu_mem_free(&a->alloc, stack, scap * sizeof *stack);
  return found;
}

/* The layout p needs so that output o, reached from p through views, is
 * dense row-major: o's row-major layout pushed back up the chain. */
static bool backward_candidate(fu_layout_analysis *a, const fu_value *p, const fu_value *o, fu_view_layout *out) {
  if (!fu_layout_row_major(&o->type, out)) return false;
  fu_view_layout prev;
  const fu_value *cur = o;
  for (uint32_t steps = 0; cur != p; steps++) {
    const fu_op *op = cur->def;
    if (!op || op->n_operands < 1 || steps > a->n_values) return false;
    if (!fu_layout_unapply_view(op, out, &prev)) return false;
    *out = prev;
    cur = op->operands[0];
  }
  return true;
}

bool fu_layout_analysis_choose_root(fu_layout_analysis *a, const fu_value *p,
                                    fu_layout_member_fn member, void *user, fu_view_layout *out,
                                    fu_strbuf *why, fu_status *st) {
  if (!fu_layout_row_major(&p->type, out)) {
    if (why) {
      value_ref(why, p);
      fu_strbuf_puts(why, " has strides too complex to reason about");
    }
    return false;
  }
  if (p->id >= a->uses.n_values) return true;
  if (root_ok(a, p, out, member, user, why, st)) return true;
  if (*st != FU_OK || fu_layout_analysis_is_output(a, p)) return false;
  const fu_use *u = fu_uses_of(&a->uses, p);
  for (uint32_t i = 0; i < fu_use_count(&a->uses, p); i++)
    if (u[i].user->kind == FU_OP_OUTPUT || !member(u[i].user, user)) return false;
  const fu_value *outs[MAX_BACKWARD_CANDIDATES];
  int n = tree_outputs(a, p, member, user, outs, MAX_BACKWARD_CANDIDATES);
  if (n < 0) {
    *st = FU_ERR_NOMEM;
    return false;
  }
  fu_view_layout *cand = fu_mem_alloc(&a->alloc, sizeof *cand);
  if (!cand) {
    *st = FU_ERR_NOMEM;
    return false;
  }
  bool ok = false;
  for (int k = 0; k < n && !ok; k++) {
    if (!backward_candidate(a, p, outs[k], cand)) continue;
    if (root_ok(a, p, cand, member, user, NULL, st)) {
      *out = *cand;
      ok = true;
    }
    if (*st != FU_OK) break;
  }
  fu_mem_free(&a->alloc, cand, sizeof *cand);
  return ok;
}

fu_status fu_value_layout(fu_fusion *f, const fu_value *v, fu_view_layout *out, fu_strbuf *why) {
  fu_layout_analysis a;
  fu_status st = fu_layout_analysis_init(&a, f);
  if (st != FU_OK) return st;
  st = fu_layout_analysis_value(&a, v, out, why);
  fu_layout_analysis_free(&a);
  return st;
}
