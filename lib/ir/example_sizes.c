/* fuser: symbol sizes from the inputs' example shapes (example_sizes.h). */
#include <string.h>

#include "fuser/example_sizes.h"

static uint64_t str_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* The slot holding `sym`, or the empty slot where it would go. */
static uint32_t slot_of(const fu_example_sizes *s, const char *sym) {
  uint32_t j = (uint32_t)(str_hash(sym) & (s->cap - 1));
  while (s->sym[j] && s->sym[j] != sym && strcmp(s->sym[j], sym) != 0) j = (j + 1) & (s->cap - 1);
  return j;
}

/* Counts the symbolic dims of the inputs, so the table is sized once. */
static uint32_t count_symbols(const fu_fusion *f) {
  uint64_t n = 0;
  for (const fu_op *op = f->body.first; op; op = op->next) {
    if (op->kind != FU_OP_INPUT || op->n_results != 1) continue;
    const fu_type *t = &op->results[0]->type;
    for (int32_t d = 0; t->dims && d < t->rank; d++) n += t->dims[d].sym != NULL;
  }
  return n > UINT32_MAX / 4 ? UINT32_MAX / 4 : (uint32_t)n;
}

fu_status fu_example_sizes_bind(fu_example_sizes *s, const fu_fusion *f, fu_allocator alloc) {
  memset(s, 0, sizeof *s);
  s->alloc = alloc;
  uint32_t n = count_symbols(f);
  if (n == 0) return FU_OK;
  uint32_t cap = 16;
  while (cap < 2 * n) cap *= 2;
  s->cap = cap;
  s->sym = fu_mem_calloc(&s->alloc, cap, sizeof *s->sym);
  s->val = fu_mem_calloc(&s->alloc, cap, sizeof *s->val);
  if (!s->sym || !s->val) {
    fu_example_sizes_free(s);
    return FU_ERR_NOMEM;
  }
  for (const fu_op *op = f->body.first; op; op = op->next) {
    if (op->kind != FU_OP_INPUT || op->n_results != 1) continue;
    const fu_type *t = &op->results[0]->type;
    const fu_example *ex = &op->u.input.example;
    if (!ex->shape || ex->rank != t->rank || !t->dims) continue;
    for (int32_t d = 0; d < t->rank; d++) {
      const char *sym = t->dims[d].sym;
      if (!sym) continue;
      uint32_t j = slot_of(s, sym);
      if (s->sym[j]) continue; /* the first binding wins */
      s->sym[j] = sym;
      s->val[j] = ex->shape[d];
      s->n++;
    }
  }
  return FU_OK;
}

void fu_example_sizes_free(fu_example_sizes *s) {
  if (s->sym) fu_mem_free(&s->alloc, s->sym, (size_t)s->cap * sizeof *s->sym);
  if (s->val) fu_mem_free(&s->alloc, s->val, (size_t)s->cap * sizeof *s->val);
  s->sym = NULL;
  s->val = NULL;
  s->cap = s->n = 0;
}

bool fu_example_sizes_get(const fu_example_sizes *s, const char *sym, int64_t *value) {
  if (!s->cap || !sym) return false;
  uint32_t j = slot_of(s, sym);
  if (!s->sym[j]) return false;
  if (value) *value = s->val[j];
  return true;
}

int64_t fu_example_extent(const fu_example_sizes *s, fu_extent e, int64_t unbound) {
  if (!e.sym) return e.value;
  int64_t v;
  return fu_example_sizes_get(s, e.sym, &v) ? v : unbound;
}
