/* fuser driver: reading whole inputs into memory (files and stdin). */
#include <errno.h>
#include <stdio.h>

#include "fuser/driver.h"

/* Grows geometrically; the buffer is always NUL-terminated so the lexer can
 * rely on a terminator. */
fu_status fu_read_stream(FILE *f, fu_allocator alloc, char **data, size_t *len) {
  size_t cap = 1 << 16, n = 0;
  char *buf = fu_mem_alloc(&alloc, cap + 1);
  *data = NULL;
  *len = 0;
  if (!buf) return FU_ERR_NOMEM;
  for (;;) {
    if (n == cap) {
      char *nb = fu_mem_realloc(&alloc, buf, cap + 1, cap * 2 + 1);
      if (!nb) {
        fu_mem_free(&alloc, buf, cap + 1);
        return FU_ERR_NOMEM;
      }
      buf = nb;
      cap *= 2;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  if (ferror(f)) {
    int saved = errno;
    fu_mem_free(&alloc, buf, cap + 1);
    errno = saved ? saved : EIO;
    return FU_ERR_IO;
  }
  /* Shrink to the exact size so callers free with len + 1. */
  char *exact = fu_mem_realloc(&alloc, buf, cap + 1, n + 1);
  if (!exact) {
    fu_mem_free(&alloc, buf, cap + 1);
    return FU_ERR_NOMEM;
  }
  exact[n] = '\0';
  *data = exact;
  *len = n;
  return FU_OK;
}

fu_status fu_read_file(const char *path, fu_allocator alloc, char **data, size_t *len) {
  FILE *f = fopen(path, "rb");
  *data = NULL;
  *len = 0;
  if (!f) return FU_ERR_IO;
  fu_status st = fu_read_stream(f, alloc, data, len);
  int saved = errno;
  fclose(f);
  errno = saved;
  return st;
}
