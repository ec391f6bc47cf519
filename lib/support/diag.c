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
  fprintf(out, "%.*s\n", (int)len, line);
  /* The caret keeps tabs so it lines up under the source text. */
  for (uint32_t i = 1; i < d->loc.col && i - 1 < len; i++) fputc(line[i - 1] == '\t' ? '\t' : ' ', out);
  fputs("^\n", out);
}

void fu_diag_vreport(fu_diag_engine *e, fu_severity sev, fu_loc loc, const char *fmt, va_list ap) {
  fu_strbuf sb;
  fu_strbuf_init(&sb, e->alloc);
  fu_strbuf_vprintf(&sb, fmt, ap);
  fu_diagnostic d = {sev, loc, sb.data ? sb.data : "(out of memory formatting a diagnostic)"};
  if (sev == FU_SEV_ERROR) e->n_errors++;
  if (sev == FU_SEV_WARNING) e->n_warnings++;
  if (e->handler)
    e->handler(e->user, &d);
  else
    fu_diag_print(e->stream ? e->stream : stderr, &d);
  fu_strbuf_free(&sb);
}

void fu_diag_report(fu_diag_engine *e, fu_severity sev, fu_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fu_diag_vreport(e, sev, loc, fmt, ap);
  va_end(ap);
}
