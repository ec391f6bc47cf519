/* fuser: a growable string buffer, used by the printers and the tools. */
#ifndef FUSER_STRBUF_H
#define FUSER_STRBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "fuser/alloc.h"

typedef struct fu_strbuf {
  char *data; /* always NUL-terminated when cap > 0 */
  size_t len;
  size_t cap;
  fu_allocator alloc;
  bool failed; /* an allocation failed; contents are truncated */
} fu_strbuf;

void fu_strbuf_init(fu_strbuf *sb, fu_allocator alloc);
void fu_strbuf_free(fu_strbuf *sb);
void fu_strbuf_clear(fu_strbuf *sb);
void fu_strbuf_append(fu_strbuf *sb, const char *s, size_t n);
void fu_strbuf_puts(fu_strbuf *sb, const char *s);
void fu_strbuf_putc(fu_strbuf *sb, char c);
void fu_strbuf_printf(fu_strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fu_strbuf_vprintf(fu_strbuf *sb, const char *fmt, va_list ap);
/* Shortest text that reads back as the same double ("%.17g" fallback),
 * always with a '.', 'e', "inf" or "nan" so it lexes as a float. */
void fu_strbuf_put_double(fu_strbuf *sb, double v);
/* The same text into a fixed buffer of at least FU_DOUBLE_TEXT_MAX bytes
 * (for callers that must not allocate, such as diagnostics formatting). */
enum { FU_DOUBLE_TEXT_MAX = 40 };
void fu_format_double(char *buf, double v);

#endif
