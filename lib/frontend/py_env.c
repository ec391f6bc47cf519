/* fuser: a string-keyed hash map for the importer's name bindings.
 *
 * Scripts of ten thousand statements look names up constantly, so this is
 * an open-addressing table rather than a list.  Keys are borrowed (they
 * live in the script's arena), values are opaque pointers. */
#include <string.h>

#include "fuser/frontend.h"

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

void fu_py_map_init(fu_py_map *m, fu_allocator alloc) {
  memset(m, 0, sizeof *m);
  m->alloc = alloc;
}

void fu_py_map_free(fu_py_map *m) {
  if (m->keys) fu_mem_free(&m->alloc, m->keys, m->cap * sizeof *m->keys);
  if (m->vals) fu_mem_free(&m->alloc, m->vals, m->cap * sizeof *m->vals);
  memset(m, 0, sizeof *m);
}

static size_t slot_of(const fu_py_map *m, const char *key) {
  size_t j = hash_str(key) & (m->cap - 1);
  while (m->keys[j] && strcmp(m->keys[j], key) != 0) j = (j + 1) & (m->cap - 1);
  return j;
}

void *fu_py_map_get(const fu_py_map *m, const char *key) {
  if (!m->cap) return NULL;
  size_t j = slot_of(m, key);
  return m->keys[j] ? m->vals[j] : NULL;
}

static bool grow(fu_py_map *m) {
  size_t cap = m->cap ? m->cap * 2 : 64;
  const char **keys = fu_mem_calloc(&m->alloc, cap, sizeof *keys);
  void **vals = fu_mem_calloc(&m->alloc, cap, sizeof *vals);
  if (!keys || !vals) {
    if (keys) fu_mem_free(&m->alloc, keys, cap * sizeof *keys);
    if (vals) fu_mem_free(&m->alloc, vals, cap * sizeof *vals);
    return false;
  }
  fu_py_map old = *m;
  m->keys = keys;
  m->vals = vals;
  m->cap = cap;
  for (size_t i = 0; i < old.cap; i++)
    if (old.keys[i]) {
      size_t j = slot_of(m, old.keys[i]);
      m->keys[j] = old.keys[i];
      m->vals[j] = old.vals[i];
    }
  if (old.keys) fu_mem_free(&m->alloc, old.keys, old.cap * sizeof *old.keys);
  if (old.vals) fu_mem_free(&m->alloc, old.vals, old.cap * sizeof *old.vals);
  return true;
}

bool fu_py_map_set(fu_py_map *m, const char *key, void *val) {
  if ((m->count + 1) * 2 > m->cap && !grow(m)) return false;
  size_t j = slot_of(m, key);
  if (!m->keys[j]) {
    m->keys[j] = key;
    m->count++;
  }
  m->vals[j] = val;
  return true;
}
