/* fuser: IR construction, traversal and use maps. */
#include "fuser/ir.h"

#include <stdint.h>
#include <string.h>

/* ---- symbol interning -------------------------------------------------- */

/* Open-addressing table of arena strings; lives beside the module. */
struct fu_intern_table {
  const char **slots;
  size_t cap; /* power of two */
  size_t count;
};

static uint64_t hash_bytes(const char *s, size_t len) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

static bool intern_grow(fu_module *m) {
  struct fu_intern_table *t = m->interned;
  size_t cap = t->cap ? t->cap * 2 : 64;
  const char **slots = fu_mem_calloc(&m->alloc, cap, sizeof *slots);
  if (!slots) return false;
  for (size_t i = 0; i < t->cap; i++) {
    const char *s = t->slots[i];
    if (!s) continue;
    size_t j = hash_bytes(s, strlen(s)) & (cap - 1);
    while (slots[j]) j = (j + 1) & (cap - 1);
    slots[j] = s;
  }
  fu_mem_free(&m->alloc, t->slots, t->cap * sizeof *t->slots);
  t->slots = slots;
  t->cap = cap;
  return true;
}

const char *fu_module_intern(fu_module *m, const char *s, size_t len) {
  struct fu_intern_table *t = m->interned;
  if ((t->count + 1) * 2 > t->cap && !intern_grow(m)) return NULL;
  size_t j = hash_bytes(s, len) & (t->cap - 1);
  while (t->slots[j]) {
    if (strncmp(t->slots[j], s, len) == 0 && t->slots[j][len] == '\0') return t->slots[j];
    j = (j + 1) & (t->cap - 1);
  }
  char *copy = fu_arena_strndup(m->arena, s, len);
  if (!copy) return NULL;
  t->slots[j] = copy;
  t->count++;
  return copy;
}

/* ---- modules and fusions ---------------------------------------------- */

fu_module *fu_module_new(fu_allocator alloc) {
  fu_arena *arena = fu_arena_new(alloc);
  if (!arena) return NULL;
  fu_module *m = fu_arena_alloc(arena, sizeof *m);
  struct fu_intern_table *t = m ? fu_arena_alloc(arena, sizeof *t) : NULL;
  if (!t) {
    fu_arena_free(arena);
    return NULL;
  }
  m->arena = arena;
  m->alloc = alloc;
  m->interned = t;
  return m;
}

void fu_module_free(fu_module *m) {
  if (!m) return;
  fu_mem_free(&m->alloc, m->interned->slots, m->interned->cap * sizeof *m->interned->slots);
  fu_arena_free(m->arena);
}

fu_fusion *fu_fusion_new(fu_module *m, const char *name, fu_loc loc) {
  fu_fusion *f = fu_arena_alloc(m->arena, sizeof *f);
  if (!f) return NULL;
  f->name = name ? fu_arena_strdup(m->arena, name) : NULL;
  if (name && !f->name) return NULL;
  f->loc = loc;
  f->module = m;
  f->body.fusion = f;
  if (m->last)
    m->last->next = f;
  else
    m->first = f;
  m->last = f;
  return f;
}

uint32_t fu_module_num_fusions(const fu_module *m) {
  uint32_t n = 0;
  for (const fu_fusion *f = m->first; f; f = f->next) n++;
  return n;
}

/* ---- values and ops --------------------------------------------------- */

static fu_value *value_new(fu_fusion *f) {
  fu_value *v = fu_arena_alloc(f->module->arena, sizeof *v);
  if (!v) return NULL;
  v->id = f->next_value_id++;
  return v;
}

void fu_value_set_name(fu_module *m, fu_value *v, const char *name) {
  v->name = name ? fu_arena_strdup(m->arena, name) : NULL;
}

fu_op *fu_op_new(fu_fusion *f, fu_op_kind kind, fu_value *const *operands, uint32_t n_operands,
                 uint32_t n_results, fu_loc loc) {
  fu_arena *a = f->module->arena;
  fu_op *op = fu_arena_alloc(a, sizeof *op);
  if (!op) return NULL;
  op->kind = kind;
  op->loc = loc;
  op->id = f->next_op_id++;
  if (n_operands) {
    op->operands = fu_arena_calloc(a, n_operands, sizeof *op->operands);
    if (!op->operands) return NULL;
    if (operands) memcpy(op->operands, operands, n_operands * sizeof *operands);
  }
  op->n_operands = n_operands;
  if (n_results) {
    op->results = fu_arena_calloc(a, n_results, sizeof *op->results);
    if (!op->results) return NULL;
  }
  op->n_results = n_results;
  for (uint32_t i = 0; i < n_results; i++) {
    fu_value *v = value_new(f);
    if (!v) return NULL;
    v->def = op;
    v->result_index = i;
    v->loc = loc;
    op->results[i] = v;
  }
  return op;
}

void fu_block_append(fu_block *b, fu_op *op) {
  op->parent = b;
  op->next = NULL;
  op->prev = b->last;
  if (b->last)
    b->last->next = op;
  else
    b->first = op;
  b->last = op;
}

void fu_block_insert_before(fu_op *at, fu_op *op) {
  op->parent = at->parent;
  op->next = at;
  op->prev = at->prev;
  if (at->prev)
    at->prev->next = op;
  else
    at->parent->first = op;
  at->prev = op;
}

void fu_block_remove(fu_block *b, fu_op *op) {
  if (op->prev)
    op->prev->next = op->next;
  else
    b->first = op->next;
  if (op->next)
    op->next->prev = op->prev;
  else
    b->last = op->prev;
  op->prev = op->next = NULL;
  op->parent = NULL;
}

static fu_value *literal_new(fu_fusion *f, fu_dtype dt) {
  fu_value *v = value_new(f);
  if (!v) return NULL;
  v->is_literal = true;
  v->type.dtype = dt;
  v->type.rank = FU_SCALAR_RANK;
  return v;
}

fu_value *fu_literal_f(fu_fusion *f, fu_dtype dt, double x) {
  fu_value *v = literal_new(f, dt);
  if (v) v->literal.f = x;
  return v;
}

fu_value *fu_literal_i(fu_fusion *f, fu_dtype dt, int64_t x) {
  fu_value *v = literal_new(f, dt);
  if (v) v->literal.i = x;
  return v;
}

fu_value *fu_literal_b(fu_fusion *f, bool x) {
  fu_value *v = literal_new(f, FU_DT_BOOL);
  if (v) v->literal.b = x;
  return v;
}

fu_extent *fu_dims_copy(fu_module *m, const fu_extent *dims, int32_t rank) {
  if (rank <= 0) return NULL;
  return fu_arena_memdup(m->arena, dims, (size_t)rank, sizeof *dims);
}

fu_int_list fu_int_list_copy(fu_module *m, const int64_t *v, uint32_t n) {
  fu_int_list l = {NULL, 0};
  if (n == 0) return l;
  l.v = fu_arena_memdup(m->arena, v, n, sizeof *v);
  if (l.v) l.n = n;
  return l;
}

/* ---- types ------------------------------------------------------------ */

bool fu_extent_equal(fu_extent a, fu_extent b) {
  if (a.sym || b.sym) return a.sym && b.sym && strcmp(a.sym, b.sym) == 0;
  return a.value == b.value;
}

bool fu_type_same_shape(const fu_type *a, const fu_type *b) {
  if (a->rank != b->rank) return false;
  for (int32_t i = 0; i < a->rank; i++)
    if (!fu_extent_equal(a->dims[i], b->dims[i])) return false;
  return true;
}

bool fu_type_equal(const fu_type *a, const fu_type *b) { return a->dtype == b->dtype && fu_type_same_shape(a, b); }

int64_t fu_type_numel(const fu_type *t) {
  if (t->rank < 0) return 1;
  int64_t n = 1;
  for (int32_t i = 0; i < t->rank; i++) {
    if (t->dims[i].sym || t->dims[i].value < 0) return -1;
    if (t->dims[i].value != 0 && n > INT64_MAX / t->dims[i].value) return -1;
    n *= t->dims[i].value;
  }
  return n;
}

/* ---- traversal -------------------------------------------------------- */

fu_op *fu_walk_first(fu_block *b) { return b->first; }

/* Pre-order: a segment op is visited, then its body, then what follows it. */
fu_op *fu_walk_next(fu_op *op) {
  if (op->kind == FU_OP_SEGMENT && op->u.segment.body && op->u.segment.body->first)
    return op->u.segment.body->first;
  while (op) {
    if (op->next) return op->next;
    fu_block *b = op->parent;
    op = b ? b->parent_op : NULL;
  }
  return NULL;
}

uint32_t fu_fusion_outputs(fu_fusion *f, fu_value **out, uint32_t cap) {
  uint32_t n = 0;
  for (fu_op *op = fu_walk_first(&f->body); op; op = fu_walk_next(op)) {
    if (op->kind != FU_OP_OUTPUT) continue;
    for (uint32_t i = 0; i < op->n_operands; i++, n++)
      if (n < cap) out[n] = op->operands[i];
  }
  return n;
}

fu_value *fu_fusion_alias_writer(fu_fusion *f, const fu_value *in) {
  for (fu_op *op = f->body.first; op; op = op->next)
    if (op->kind == FU_OP_OUTPUT && op->u.output.alias == in && op->n_operands == 1) return op->operands[0];
  return NULL;
}

/* Counting sort of (value, user) pairs: one pass to count, one to fill. */
fu_status fu_use_map_build(fu_fusion *f, fu_use_map *out) {
  memset(out, 0, sizeof *out);
  out->alloc = f->module->alloc;
  uint32_t nv = f->next_value_id;
  out->n_values = nv;
  out->start = fu_mem_calloc(&out->alloc, (size_t)nv + 1, sizeof *out->start);
  if (!out->start) return FU_ERR_NOMEM;
  size_t total = 0;
  for (fu_op *op = fu_walk_first(&f->body); op; op = fu_walk_next(op))
    for (uint32_t i = 0; i < op->n_operands; i++) {
      out->start[op->operands[i]->id + 1]++;
      total++;
    }
  for (uint32_t v = 0; v < nv; v++) out->start[v + 1] += out->start[v];
  out->uses = fu_mem_calloc(&out->alloc, total ? total : 1, sizeof *out->uses);
  uint32_t *fill = fu_mem_calloc(&out->alloc, (size_t)nv + 1, sizeof *fill);
  if (!out->uses || !fill) {
    fu_mem_free(&out->alloc, fill, ((size_t)nv + 1) * sizeof *fill);
    fu_use_map_free(out);
    return FU_ERR_NOMEM;
  }
  memcpy(fill, out->start, ((size_t)nv + 1) * sizeof *fill);
  for (fu_op *op = fu_walk_first(&f->body); op; op = fu_walk_next(op))
    for (uint32_t i = 0; i < op->n_operands; i++) {
      fu_use u = {op, i};
      out->uses[fill[op->operands[i]->id]++] = u;
    }
  fu_mem_free(&out->alloc, fill, ((size_t)nv + 1) * sizeof *fill);
  return FU_OK;
}

void fu_use_map_free(fu_use_map *m) {
  if (m->start) fu_mem_free(&m->alloc, m->start, ((size_t)m->n_values + 1) * sizeof *m->start);
  if (m->uses) fu_mem_free(&m->alloc, m->uses, 0);
  memset(m, 0, sizeof *m);
}

bool fu_segment_has_input(const fu_op *seg, const fu_value *v) {
  for (uint32_t i = 0; i < seg->n_operands; i++)
    if (seg->operands[i] == v) return true;
  return false;
}

bool fu_segment_has_output(const fu_op *seg, const fu_value *v) {
  for (uint32_t i = 0; i < seg->u.segment.n_outputs; i++)
    if (seg->u.segment.outputs[i] == v) return true;
  return false;
}
