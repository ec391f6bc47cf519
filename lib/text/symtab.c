/* fuser: the name tables of the parser and printer (value names, fusion
 * and segment names, op names).  See lexer.h for the design. */
#include <string.h>

#include "lexer.h"

void fu_txt_symtab_init(fu_txt_symtab *t, fu_allocator alloc) {
  memset(t, 0, sizeof *t);
  t->alloc = alloc;
}

void fu_txt_symtab_free(fu_txt_symtab *t) {
  fu_mem_free(&t->alloc, t->slots, t->cap * sizeof *t->slots);
  fu_mem_free(&t->alloc, t->entries, t->entries_cap * sizeof *t->entries);
  fu_allocator a = t->alloc;
  fu_txt_symtab_init(t, a);
}

/* Emptying costs O(cap); a table grown for one big fusion is released
 * instead when it is much larger than what it held, so that many small
 * fusions after a big one stay linear overall. */
void fu_txt_symtab_clear(fu_txt_symtab *t) {
  if (t->cap > 1024 && t->cap > 8 * t->count) {
    fu_txt_symtab_free(t);
    return;
  }
  if (t->slots) memset(t->slots, 0, t->cap * sizeof *t->slots);
  t->count = 0;
}

static uint32_t hash_key(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  /* FNV's low bits mix poorly and the table masks them: finish with a
   * multiply-xorshift so every input bit reaches the low bits. */
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  return (uint32_t)(h ^ (h >> 33));
}

static bool slot_match(const fu_txt_symtab *t, const fu_txt_symtab_slot *s, uint32_t h, const char *key, size_t len) {
  if (s->hash != h) return false;
  const fu_txt_symtab_entry *e = &t->entries[s->index - 1];
  return e->len == len && memcmp(e->key, key, len) == 0;
}

/* The slot holding `key`, or the empty slot where it would go. */
static fu_txt_symtab_slot *find_slot(const fu_txt_symtab *t, uint32_t h, const char *key, size_t len) {
  size_t mask = t->cap - 1;
  for (size_t j = h & mask;; j = (j + 1) & mask) {
    fu_txt_symtab_slot *s = &t->slots[j];
    if (!s->index || slot_match(t, s, h, key, len)) return s;
  }
}

void *fu_txt_symtab_get(const fu_txt_symtab *t, const char *key, size_t len) {
  if (!t->count) return NULL;
  const fu_txt_symtab_slot *s = find_slot(t, hash_key(key, len), key, len);
  return s->index ? t->entries[s->index - 1].val : NULL;
}

/* Room for one more entry: doubles the slots (rehashing from the stored
 * hashes) and the entry array as needed. */
static bool reserve_one(fu_txt_symtab *t) {
  if (t->count >= UINT32_MAX - 1) return false;
  if (t->count + 1 > t->entries_cap) {
    size_t ncap = t->entries_cap ? t->entries_cap * 2 : 32;
    fu_txt_symtab_entry *e =
        fu_mem_realloc(&t->alloc, t->entries, t->entries_cap * sizeof *e, ncap * sizeof *e);
    if (!e) return false;
    t->entries = e;
    t->entries_cap = ncap;
  }
  if ((t->count + 1) * 2 > t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    fu_txt_symtab_slot *slots = fu_mem_calloc(&t->alloc, cap, sizeof *slots);
    if (!slots) return false;
    for (size_t i = 0; i < t->cap; i++) {
      fu_txt_symtab_slot s = t->slots[i];
      if (!s.index) continue;
      size_t j = s.hash & (cap - 1);
      while (slots[j].index) j = (j + 1) & (cap - 1);
      slots[j] = s;
    }
    fu_mem_free(&t->alloc, t->slots, t->cap * sizeof *t->slots);
    t->slots = slots;
    t->cap = cap;
  }
  return true;
}

/* The entry for `key`, created (with val NULL) when absent. */
static fu_txt_symtab_entry *claim(fu_txt_symtab *t, const char *key, size_t len, bool *fresh) {
  *fresh = false;
  if (!reserve_one(t)) return NULL;
  uint32_t h = hash_key(key, len);
  fu_txt_symtab_slot *s = find_slot(t, h, key, len);
  if (s->index) return &t->entries[s->index - 1];
  fu_txt_symtab_entry *e = &t->entries[t->count++];
  e->key = key;
  e->len = len;
  e->val = NULL;
  s->hash = h;
  s->index = (uint32_t)t->count;
  *fresh = true;
  return e;
}

bool fu_txt_symtab_put(fu_txt_symtab *t, const char *key, size_t len, void *val) {
  bool fresh;
  fu_txt_symtab_entry *e = claim(t, key, len, &fresh);
  if (!e) return false;
  e->val = val;
  return true;
}

void *fu_txt_symtab_insert(fu_txt_symtab *t, const char *key, size_t len, void *val, bool *nomem) {
  bool fresh;
  fu_txt_symtab_entry *e = claim(t, key, len, &fresh);
  *nomem = e == NULL;
  if (!e) return NULL;
  if (!fresh) return e->val;
  e->val = val;
  return NULL;
}
