/* fuser: the segment pass's growable vector of node or group ids, and its
 * sort.  Every other file of the pass uses these, so they sit below all of
 * them: no two files of the pass call each other both ways. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

bool fu_seg_vec_push(fu_seg_vec *v, const fu_allocator *a, uint32_t x) {
  if (v->n == v->cap) {
    uint32_t cap = v->cap ? v->cap * 2 : 4;
    uint32_t *p = fu_mem_realloc(a, v->v, (size_t)v->cap * sizeof *p, (size_t)cap * sizeof *p);
    if (!p) return false;
    v->v = p;
    v->cap = cap;
  }
  v->v[v->n++] = x;
  return true;
}

void fu_seg_vec_free(fu_seg_vec *v, const fu_allocator *a) {
  if (v->v) fu_mem_free(a, v->v, (size_t)v->cap * sizeof *v->v);
  memset(v, 0, sizeof *v);
}

int fu_seg_cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Sorting (key, id) pairs packed in one uint64 keeps the sort stable on
 * equal keys without a comparison callback that needs the key array. */
bool fu_seg_vec_sort(fu_seg_vec *v, const fu_allocator *a, const uint32_t *key) {
  if (v->n < 2) return true;
  uint64_t *tmp = fu_mem_alloc(a, (size_t)v->n * sizeof *tmp);
  if (!tmp) return false;
  for (uint32_t i = 0; i < v->n; i++) tmp[i] = ((uint64_t)(key ? key[v->v[i]] : v->v[i]) << 32) | v->v[i];
  qsort(tmp, v->n, sizeof *tmp, fu_seg_cmp_u64);
  for (uint32_t i = 0; i < v->n; i++) v->v[i] = (uint32_t)tmp[i];
  fu_mem_free(a, tmp, (size_t)v->n * sizeof *tmp);
  return true;
}
