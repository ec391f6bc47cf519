/* fuser: growable string buffer. */
#include "fuser/strbuf.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fu_strbuf_init(fu_strbuf *sb, fu_allocator alloc) {
  sb->data = NULL;
  sb->len = 0;
  sb->cap = 0;
  sb->alloc = alloc;
  sb->failed = false;
}

void fu_strbuf_free(fu_strbuf *sb) {
  fu_mem_free(&sb->alloc, sb->data, sb->cap);
  sb->data = NULL;
  sb->len = sb->cap = 0;
}

void fu_strbuf_clear(fu_strbuf *sb) {
  sb->len = 0;
  if (sb->data) sb->data[0] = '\0';
}

/* Make room for `extra` more bytes plus the NUL; false when that fails. */
static bool reserve(fu_strbuf *sb, size_t extra) {
  if (sb->failed) return false;
  if (sb->len + extra + 1 <= sb->cap) return true;
  size_t cap = sb->cap ? sb->cap : 256;
  while (cap < sb->len + extra + 1) {
    if (cap > SIZE_MAX / 2) {
      sb->failed = true;
      return false;
    }
    cap *= 2;
  }
  char *p = fu_mem_realloc(&sb->alloc, sb->data, sb->cap, cap);
  if (!p) {
    sb->failed = true;
    return false;
  }
  sb->data = p;
  sb->cap = cap;
  return true;
}

void fu_strbuf_append(fu_strbuf *sb, const char *s, size_t n) {
  if (!reserve(sb, n)) return;
  memcpy(sb->data + sb->len, s, n);
  sb->len += n;
  sb->data[sb->len] = '\0';
}

void fu_strbuf_puts(fu_strbuf *sb, const char *s) { fu_strbuf_append(sb, s, strlen(s)); }

void fu_strbuf_putc(fu_strbuf *sb, char c) { fu_strbuf_append(sb, &c, 1); }

void fu_strbuf_vprintf(fu_strbuf *sb, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0 || !reserve(sb, (size_t)n)) return;
  vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
  sb->len += (size_t)n;
}

void fu_strbuf_printf(fu_strbuf *sb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fu_strbuf_vprintf(sb, fmt, ap);
  va_end(ap);
}

/* Shortest round-tripping decimal: try increasing precision until the text
 * reads back as the same double. */
void fu_format_double(char *buf, double v) {
  if (isnan(v)) {
    strcpy(buf, "nan");
    return;
  }
  if (isinf(v)) {
    strcpy(buf, v < 0 ? "-inf" : "inf");
    return;
  }
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, FU_DOUBLE_TEXT_MAX, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) break;
  }
  if (!strpbrk(buf, ".eE")) strcat(buf, ".0");
}

void fu_strbuf_put_double(fu_strbuf *sb, double v) {
  char buf[FU_DOUBLE_TEXT_MAX];
  fu_format_double(buf, v);
  fu_strbuf_puts(sb, buf);
}
