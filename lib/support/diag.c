/* fuser: diagnostics engine and the default printer. */
#include "fuser/diag.h"

#include <stdlib.h>
#include <string.h>

#include "fuser/strbuf.h"

const char *fu_severity_name(fu_severity s) {
  switch (s) {
  case FU_SEV_ERROR: return "error";
  case FU_SEV_WARNING: return "warning";
  case FU_SEV_NOTE: return "note";
  case FU_SEV_REMARK: return "remark";
  }
  return "error";
}

void fu_diag_init(fu_diag_engine *e, fu_allocator alloc) {
  memset(e, 0, sizeof *e);
  e->alloc = alloc;
}

void fu_diag_restart_limit(fu_diag_engine *e) {
  e->limit_base = e->n_errors;
  e->stopped = false;
}

uint32_t fu_loc_file_line(fu_loc loc) {
  if (!loc.src || loc.line == 0) return loc.line;
  return loc.line + (loc.src->first_line ? loc.src->first_line - 1 : 0);
}

const char *fu_source_line(const fu_source *src, uint32_t line, size_t *len) {
  if (!src || !src->text || line == 0) return NULL;
  const char *p = src->text, *end = src->text + src->len;
  for (uint32_t l = 1; l < line; l++) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) return NULL;
    p = nl + 1;
  }
  const char *nl = memchr(p, '\n', (size_t)(end - p));
  *len = (size_t)((nl ? nl : end) - p);
  return p;
}

/* The window [*from, *to) of a `len`-byte line that is printed for a caret
 * at byte `at`: the whole line when it is short, else FU_DIAG_LINE_MAX bytes
 * around the caret, so a 20 kB line costs 200 bytes per diagnostic.  The cut
 * never splits a UTF-8 sequence. */
static void line_window(const char *line, size_t len, size_t at, size_t *from, size_t *to) {
  *from = 0;
  *to = len;
  if (len <= FU_DIAG_LINE_MAX) return;
  size_t half = FU_DIAG_LINE_MAX / 2;
  size_t a = at > half ? at - half : 0;
  if (a + FU_DIAG_LINE_MAX > len) a = len - FU_DIAG_LINE_MAX;
  size_t b = a + FU_DIAG_LINE_MAX;
  while (a > 0 && a < at && ((unsigned char)line[a] & 0xC0) == 0x80) a++;
  while (b < len && b > at && ((unsigned char)line[b] & 0xC0) == 0x80) b--;
  *from = a;
  *to = b;
}

void fu_diag_print(FILE *out, const fu_diagnostic *d) {
  const char *name = d->loc.src && d->loc.src->name ? d->loc.src->name : "<input>";
  if (fu_loc_known(d->loc))
    fprintf(out, "%s:%u:%u: %s: %s\n", name, fu_loc_file_line(d->loc), d->loc.col,
            fu_severity_name(d->severity), d->message);
  else
    fprintf(out, "%s: %s: %s\n", name, fu_severity_name(d->severity), d->message);
  size_t len = 0;
  const char *line = fu_loc_known(d->loc) ? fu_source_line(d->loc.src, d->loc.line, &len) : NULL;
  if (!line) return;
  size_t at = d->loc.col > 0 ? d->loc.col - 1 : 0, from, to;
  line_window(line, len, at, &from, &to);
  const char *dots = "...";
  fprintf(out, "%s%.*s%s\n", from > 0 ? dots : "", (int)(to - from), line + from, to < len ? dots : "");
  /* The caret keeps tabs so it lines up under the source text. */
  if (from > 0) fputs("   ", out);
  for (size_t i = from; i < at && i < to; i++) fputc(line[i] == '\t' ? '\t' : ' ', out);
  fputs("^\n", out);
}

static void deliver(fu_diag_engine *e, const fu_diagnostic *d) {
  if (e->handler)
    e->handler(e->user, d);
  else
    fu_diag_print(e->stream ? e->stream : stderr, d);
}

/* Past the error limit every diagnostic is dropped before it is formatted,
 * so a file with a million errors costs no more output than one with 21. */
void fu_diag_vreport(fu_diag_engine *e, fu_severity sev, fu_loc loc, const char *fmt, va_list ap) {
  unsigned shown = e->n_errors >= e->limit_base ? e->n_errors - e->limit_base : e->n_errors;
  if (!e->stopped && sev == FU_SEV_ERROR && e->error_limit && shown >= e->error_limit) {
    e->stopped = true;
    fu_loc file = {loc.src, 0, 0};
    fu_diagnostic stop = {FU_SEV_ERROR, file,
                          "too many errors emitted, stopping now (--error-limit=0 shows them all)"};
    deliver(e, &stop);
  }
  if (e->stopped) {
    if (sev == FU_SEV_ERROR) e->n_errors++;
    if (sev == FU_SEV_WARNING) e->n_warnings++;
    return;
  }
  fu_strbuf sb;
  fu_strbuf_init(&sb, e->alloc);
  fu_strbuf_vprintf(&sb, fmt, ap);
  fu_diagnostic d = {sev, loc, sb.data ? sb.data : "(out of memory formatting a diagnostic)"};
  if (sev == FU_SEV_ERROR) e->n_errors++;
  if (sev == FU_SEV_WARNING) e->n_warnings++;
  deliver(e, &d);
  fu_strbuf_free(&sb);
}

void fu_diag_report(fu_diag_engine *e, fu_severity sev, fu_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fu_diag_vreport(e, sev, loc, fmt, ap);
  va_end(ap);
}
