/* fuser: the single allocation hook and the per-module arena.
 *
 * Every allocation the libraries make goes through one fu_allocator (a
 * realloc-style function and its user data, as in Lua's lua_Alloc).  IR
 * objects live in an arena owned by their module and are freed at once with
 * it; scratch buffers use fu_mem_* directly. */
#ifndef FUSER_ALLOC_H
#define FUSER_ALLOC_H

#include <stddef.h>

/* Resize `ptr` from `old_size` to `new_size` bytes.  new_size == 0 frees and
 * returns NULL.  Returns NULL on failure, leaving `ptr` untouched. */
typedef void *(*fu_alloc_fn)(void *user, void *ptr, size_t old_size, size_t new_size);

typedef struct fu_allocator {
  fu_alloc_fn fn;
  void *user;
} fu_allocator;

/* The default allocator: malloc/realloc/free. */
fu_allocator fu_default_allocator(void);

void *fu_mem_alloc(const fu_allocator *a, size_t size);               /* uninitialised */
void *fu_mem_calloc(const fu_allocator *a, size_t count, size_t size); /* zeroed, overflow-checked */
void *fu_mem_realloc(const fu_allocator *a, void *ptr, size_t old_size, size_t new_size);
void fu_mem_free(const fu_allocator *a, void *ptr, size_t size);

typedef struct fu_arena fu_arena;

fu_arena *fu_arena_new(fu_allocator a);
void fu_arena_free(fu_arena *arena);
/* Zeroed, 16-byte aligned memory that lives until the arena is freed.
 * Returns NULL when the allocator fails or size overflows. */
void *fu_arena_alloc(fu_arena *arena, size_t size);
void *fu_arena_calloc(fu_arena *arena, size_t count, size_t size);
/* Copies `len` bytes of `s` and appends a NUL. */
char *fu_arena_strndup(fu_arena *arena, const char *s, size_t len);
char *fu_arena_strdup(fu_arena *arena, const char *s);
/* Copies `count` elements of `size` bytes (NULL when count == 0). */
void *fu_arena_memdup(fu_arena *arena, const void *src, size_t count, size_t size);

#endif
