/* fuser: union-find over the symbolic extents of an imported fusion.
 *
 * nvFuser scripts say only "-1" for a symbolic extent; which of them are the
 * same size is implied by the ops (a pointwise op needs equal extents, a
 * view's original_shape pins them).  The importer gives each -1 its own
 * symbol and merges them here as it meets the ops, so the IR it prints says
 * f32[i0, i1, i2] three times instead of three unrelated shapes. */
#include <stdio.h>
#include <string.h>

#include "fuser/frontend.h"

void fu_py_symtab_init(fu_py_symtab *s, fu_module *m) {
  memset(s, 0, sizeof *s);
  s->m = m;
}

void fu_py_symtab_free(fu_py_symtab *s) {
  if (s->v) fu_mem_free(&s->m->alloc, s->v, s->cap * sizeof *s->v);
  if (s->slot_names) fu_mem_free(&s->m->alloc, s->slot_names, s->n_slots * sizeof *s->slot_names);
  if (s->slot_index) fu_mem_free(&s->m->alloc, s->slot_index, s->n_slots * sizeof *s->slot_index);
  memset(s, 0, sizeof *s);
}

/* Names are interned, so the pointer identifies the symbol. */
static size_t ptr_hash(const char *p, uint32_t n_slots) {
  uint64_t h = (uint64_t)(uintptr_t)p;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return (size_t)(h & (n_slots - 1));
}

static int64_t find_index(const fu_py_symtab *s, const char *name) {
  if (!s->n_slots || !name) return -1;
  size_t j = ptr_hash(name, s->n_slots);
  while (s->slot_names[j]) {
    if (s->slot_names[j] == name) return s->slot_index[j];
    j = (j + 1) & (s->n_slots - 1);
  }
  return -1;
}

static void slots_insert(const char **names, uint32_t *index, uint32_t n_slots, const char *name, uint32_t i) {
  size_t j = ptr_hash(name, n_slots);
  while (names[j]) j = (j + 1) & (n_slots - 1);
  names[j] = name;
  index[j] = i;
}

static bool slots_grow(fu_py_symtab *s) {
  uint32_t n = s->n_slots ? s->n_slots * 2 : 64;
  const char **names = fu_mem_calloc(&s->m->alloc, n, sizeof *names);
  uint32_t *index = fu_mem_calloc(&s->m->alloc, n, sizeof *index);
  if (!names || !index) {
    if (names) fu_mem_free(&s->m->alloc, names, n * sizeof *names);
    if (index) fu_mem_free(&s->m->alloc, index, n * sizeof *index);
    return false;
  }
  for (uint32_t i = 0; i < s->n_slots; i++)
    if (s->slot_names[i]) slots_insert(names, index, n, s->slot_names[i], s->slot_index[i]);
  if (s->slot_names) fu_mem_free(&s->m->alloc, s->slot_names, s->n_slots * sizeof *s->slot_names);
  if (s->slot_index) fu_mem_free(&s->m->alloc, s->slot_index, s->n_slots * sizeof *s->slot_index);
  s->slot_names = names;
  s->slot_index = index;
  s->n_slots = n;
  return true;
}

fu_extent fu_py_symtab_fresh(fu_py_symtab *s, const char *name, int32_t origin_input, int32_t origin_dim) {
  fu_extent none = {0, NULL};
  if (s->n == s->cap) {
    uint32_t cap = s->cap ? s->cap * 2 : 32;
    fu_py_sym *v = fu_mem_realloc(&s->m->alloc, s->v, s->cap * sizeof *v, cap * sizeof *v);
    if (!v) return none;
    s->v = v;
    s->cap = cap;
  }
  if ((s->n + 1) * 2 > s->n_slots && !slots_grow(s)) return none;
  /* make the name unique: a script may reuse a value name.  A long name is
   * cut to leave room for the suffix, so each k gives a new name (cutting
   * the suffix instead would try the same name forever). */
  char buf[96];
  const int keep = (int)sizeof buf - 12;
  const char *interned = NULL;
  for (uint32_t k = 0;; k++) {
    if (k == 0)
      snprintf(buf, sizeof buf, "%.*s", keep, name);
    else
      snprintf(buf, sizeof buf, "%.*s'%u", keep, name, k);
    interned = fu_module_intern(s->m, buf, strlen(buf));
    if (!interned) return none;
    if (find_index(s, interned) < 0) break;
  }
  fu_py_sym *sym = &s->v[s->n];
  sym->parent = s->n;
  sym->bound = false;
  sym->value = 0;
  sym->name = interned;
  sym->origin_input = origin_input;
  sym->origin_dim = origin_dim;
  slots_insert(s->slot_names, s->slot_index, s->n_slots, interned, s->n);
  s->n++;
  fu_extent e = {0, interned};
  return e;
}

static uint32_t find_root(fu_py_symtab *s, uint32_t i) {
  uint32_t r = i;
  while (s->v[r].parent != r) r = s->v[r].parent;
  while (s->v[i].parent != r) { /* path compression */
    uint32_t next = s->v[i].parent;
    s->v[i].parent = r;
    i = next;
  }
  return r;
}

const fu_py_sym *fu_py_symtab_lookup(fu_py_symtab *s, fu_extent e) {
  if (fu_extent_is_const(e)) return NULL;
  int64_t i = find_index(s, e.sym);
  return i < 0 ? NULL : &s->v[find_root(s, (uint32_t)i)];
}

fu_extent fu_py_symtab_canon(fu_py_symtab *s, fu_extent e) {
  if (fu_extent_is_const(e)) return e;
  int64_t i = find_index(s, e.sym);
  if (i < 0) return e;
  const fu_py_sym *r = &s->v[find_root(s, (uint32_t)i)];
  fu_extent out = {r->bound ? r->value : 0, r->bound ? NULL : r->name};
  return out;
}

bool fu_py_symtab_unify(fu_py_symtab *s, fu_extent a, fu_extent b) {
  a = fu_py_symtab_canon(s, a);
  b = fu_py_symtab_canon(s, b);
  if (fu_extent_is_const(a) && fu_extent_is_const(b)) return a.value == b.value;
  if (fu_extent_is_const(a)) {
    fu_extent t = a;
    a = b;
    b = t;
  }
  int64_t ia = find_index(s, a.sym);
  if (ia < 0) return fu_extent_equal(a, b); /* a symbol we do not own: only equal to itself */
  uint32_t ra = find_root(s, (uint32_t)ia);
  if (fu_extent_is_const(b)) {
    s->v[ra].bound = true;
    s->v[ra].value = b.value;
    return true;
  }
  int64_t ib = find_index(s, b.sym);
  if (ib < 0) return false;
  uint32_t rb = find_root(s, (uint32_t)ib);
  if (ra == rb) return true;
  /* the older symbol stays the representative: names follow the script */
  if (ra < rb)
    s->v[rb].parent = ra;
  else
    s->v[ra].parent = rb;
  return true;
}

void fu_py_symtab_canon_type(fu_py_symtab *s, fu_type *t) {
  for (int32_t i = 0; i < t->rank; i++) t->dims[i] = fu_py_symtab_canon(s, t->dims[i]);
}

fu_status fu_py_symtab_finalize(fu_py_symtab *s, fu_fusion *f, const char *prefix) {
  const char **final_names = s->n ? fu_mem_calloc(&s->m->alloc, s->n, sizeof *final_names) : NULL;
  if (s->n && !final_names) return FU_ERR_NOMEM;
  uint32_t next = 0;
  fu_status st = FU_OK;
  for (fu_op *op = fu_walk_first(&f->body); op && st == FU_OK; op = fu_walk_next(op))
    for (uint32_t r = 0; r < op->n_results; r++) {
      fu_type *t = &op->results[r]->type;
      fu_py_symtab_canon_type(s, t);
      for (int32_t d = 0; d < t->rank; d++) {
        if (fu_extent_is_const(t->dims[d])) continue;
        int64_t i = find_index(s, t->dims[d].sym);
        if (i < 0) continue;
        if (!final_names[i]) {
          char buf[64];
          snprintf(buf, sizeof buf, "%s%u", prefix, next++);
          final_names[i] = fu_module_intern(s->m, buf, strlen(buf));
          if (!final_names[i]) {
            st = FU_ERR_NOMEM;
            break;
          }
        }
        t->dims[d].sym = final_names[i];
      }
    }
  if (final_names) fu_mem_free(&s->m->alloc, final_names, s->n * sizeof *final_names);
  return st;
}
