/* fuser driver: --split-input-file, cutting a buffer at `// -----` lines. */
#include <string.h>

#include "fuser/driver.h"

/* The one separator rule of every tool: a line whose only content
 * (blanks around it aside) is the comment leader, one space and `-----`. */
static bool is_separator(const char *p, const char *end, const char *leader) {
  while (p < end && (*p == ' ' || *p == '\t')) p++;
  while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r')) end--;
  size_t n = strlen(leader);
  return (size_t)(end - p) == n + 6 && memcmp(p, leader, n) == 0 && memcmp(p + n, " -----", 6) == 0;
}

static bool push(fu_allocator alloc, fu_source **v, uint32_t *n, uint32_t *cap, fu_source s) {
  if (*n == *cap) {
    uint32_t nc = *cap ? *cap * 2 : 8;
    fu_source *nv = fu_mem_realloc(&alloc, *v, *cap * sizeof *nv, nc * sizeof *nv);
    if (!nv) return false;
    *v = nv;
    *cap = nc;
  }
  (*v)[(*n)++] = s;
  return true;
}

fu_status fu_split_input(const fu_source *whole, fu_allocator alloc, fu_source **out, uint32_t *n) {
  return fu_split_input_at(whole, "//", alloc, out, n);
}

fu_status fu_split_input_at(const fu_source *whole, const char *leader, fu_allocator alloc, fu_source **out,
                            uint32_t *n) {
  fu_source *v = NULL;
  uint32_t count = 0, cap = 0;
  const char *text = whole->text, *end = whole->text + whole->len;
  const char *chunk = text, *p = text;
  uint32_t line = whole->first_line ? whole->first_line : 1, chunk_line = line;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *eol = nl ? nl : end;
    if (is_separator(p, eol, leader)) {
      fu_source s = {whole->name, chunk, (size_t)(p - chunk), chunk_line};
      if (!push(alloc, &v, &count, &cap, s)) goto nomem;
      chunk = nl ? nl + 1 : end;
      chunk_line = line + 1;
    }
    p = nl ? nl + 1 : end;
    line++;
  }
  fu_source last = {whole->name, chunk, (size_t)(end - chunk), chunk_line};
  if (!push(alloc, &v, &count, &cap, last)) goto nomem;
  /* Shrink so the caller frees exactly n entries. */
  fu_source *exact = fu_mem_realloc(&alloc, v, cap * sizeof *v, count * sizeof *v);
  if (!exact) goto nomem;
  *out = exact;
  *n = count;
  return FU_OK;
nomem:
  fu_mem_free(&alloc, v, cap * sizeof *v);
  *out = NULL;
  *n = 0;
  return FU_ERR_NOMEM;
}
