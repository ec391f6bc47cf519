/* fuser: the allocation hook and the arena. */
#include "fuser/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void *default_alloc(void *user, void *ptr, size_t old_size, size_t new_size) {
  (void)user;
  (void)old_size;
  if (new_size == 0) {
    free(ptr);
    return NULL;
  }
  return realloc(ptr, new_size);
}

fu_allocator fu_default_allocator(void) {
  fu_allocator a = {default_alloc, NULL};
  return a;
}

void *fu_mem_alloc(const fu_allocator *a, size_t size) {
  if (size == 0) size = 1;
  return a->fn(a->user, NULL, 0, size);
}

void *fu_mem_calloc(const fu_allocator *a, size_t count, size_t size) {
  if (size != 0 && count > SIZE_MAX / size) return NULL;
  size_t total = count * size;
  void *p = fu_mem_alloc(a, total);
  if (p) memset(p, 0, total ? total : 1);
  return p;
}

void *fu_mem_realloc(const fu_allocator *a, void *ptr, size_t old_size, size_t new_size) {
  if (new_size == 0) new_size = 1;
  return a->fn(a->user, ptr, old_size, new_size);
}

void fu_mem_free(const fu_allocator *a, void *ptr, size_t size) {
  if (ptr) a->fn(a->user, ptr, size, 0);
}

/* The arena is a list of chunks; large requests get a chunk of their own so
 * that a huge allocation does not waste a default-sized tail. */
typedef struct arena_chunk {
  struct arena_chunk *next;
  size_t size; /* bytes of payload after the header */
  size_t used;
  _Alignas(16) unsigned char data[];
} arena_chunk;

struct fu_arena {
  fu_allocator alloc;
  arena_chunk *head;
};

enum { ARENA_CHUNK_DEFAULT = 64 * 1024 };

fu_arena *fu_arena_new(fu_allocator a) {
  fu_arena *arena = fu_mem_alloc(&a, sizeof *arena);
  if (!arena) return NULL;
  arena->alloc = a;
  arena->head = NULL;
  return arena;
}

void fu_arena_free(fu_arena *arena) {
  if (!arena) return;
  arena_chunk *c = arena->head;
  while (c) {
    arena_chunk *next = c->next;
    fu_mem_free(&arena->alloc, c, sizeof *c + c->size);
    c = next;
  }
  fu_allocator a = arena->alloc;
  fu_mem_free(&a, arena, sizeof *arena);
}

void *fu_arena_alloc(fu_arena *arena, size_t size) {
  if (size == 0) size = 1;
  if (size > SIZE_MAX - 64) return NULL;
  size_t rounded = (size + 15) & ~(size_t)15;
  arena_chunk *c = arena->head;
  if (!c || c->size - c->used < rounded) {
    size_t payload = rounded > ARENA_CHUNK_DEFAULT / 2 ? rounded : ARENA_CHUNK_DEFAULT;
    arena_chunk *fresh = fu_mem_alloc(&arena->alloc, sizeof *fresh + payload);
    if (!fresh) return NULL;
    fresh->size = payload;
    fresh->used = 0;
    if (c && payload == rounded && c->size - c->used >= 256) {
      /* A dedicated big chunk: keep the current one at the head for small
       * allocations. */
      fresh->next = c->next;
      c->next = fresh;
    } else {
      fresh->next = c;
      arena->head = fresh;
    }
    c = fresh;
  }
  void *p = c->data + c->used;
  c->used += rounded;
  memset(p, 0, size);
  return p;
}

void *fu_arena_calloc(fu_arena *arena, size_t count, size_t size) {
  if (size != 0 && count > SIZE_MAX / size) return NULL;
  return fu_arena_alloc(arena, count * size);
}

char *fu_arena_strndup(fu_arena *arena, const char *s, size_t len) {
  char *p = fu_arena_alloc(arena, len + 1);
  if (!p) return NULL;
  memcpy(p, s, len);
  p[len] = '\0';
  return p;
}

char *fu_arena_strdup(fu_arena *arena, const char *s) { return fu_arena_strndup(arena, s, strlen(s)); }

void *fu_arena_memdup(fu_arena *arena, const void *src, size_t count, size_t size) {
  if (count == 0) return NULL;
  void *p = fu_arena_calloc(arena, count, size);
  if (p) memcpy(p, src, count * size);
  return p;
}

