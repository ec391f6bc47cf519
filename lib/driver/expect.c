/* fuser driver: --verify-diagnostics.
 *
 * Expectations are comments in the input, as in MLIR:
 *
 *   %T3 = mul %T1, %T9   // expected-error {{incompatible shapes}}
 *   // expected-error@+1 {{unknown op 'frob'}}
 *   %T4 = frob %T3
 *   // expected-note@-2 {{defined here}}
 *
 * `@+N` / `@-N` move the expected line relative to the comment's line
 * (`@above` and `@below` are -1 and +1).  A diagnostic matches an expectation
 * of the same severity on the same file line whose text is a substring of its
 * message.  Every diagnostic must match an unmatched expectation and every
 * expectation must be matched. */
#include <string.h>

#include "fuser/driver.h"

typedef struct expectation {
  fu_severity sev;
  uint32_t line; /* file line the diagnostic must be on */
  fu_loc where;  /* the comment, for reporting */
  const char *text;
  size_t len;
  bool matched;
} expectation;

typedef struct unexpected {
  fu_severity sev;
  fu_loc loc;
  char *msg;
  size_t msg_size;
} unexpected;

struct fu_expect_checker {
  fu_allocator alloc;
  const fu_source *src;
  expectation *exp;
  uint32_t n_exp, cap_exp;
  unexpected *bad;
  uint32_t n_bad, cap_bad;
  bool malformed;
  bool nomem;
};

static const struct {
  const char *word;
  fu_severity sev;
} severities[] = {
    {"error", FU_SEV_ERROR}, {"warning", FU_SEV_WARNING}, {"note", FU_SEV_NOTE}, {"remark", FU_SEV_REMARK}};

static bool grow(fu_allocator *a, void **v, uint32_t n, uint32_t *cap, size_t size) {
  if (n < *cap) return true;
  uint32_t nc = *cap ? *cap * 2 : 8;
  void *nv = fu_mem_realloc(a, *v, *cap * size, nc * size);
  if (!nv) return false;
  *v = nv;
  *cap = nc;
  return true;
}

static bool is_digit(char ch) { return ch >= '0' && ch <= '9'; }

/* Parses one `expected-<sev>[@offset] {{text}}` starting at `p` (just after
 * "expected-"); reports malformed ones. */
static void parse_one(fu_expect_checker *c, fu_diag_engine *report, uint32_t line, const char *line_start,
                      const char *p, const char *eol) {
  fu_loc where = {c->src, line, (uint32_t)(p - line_start) - 8};
  int sev = -1;
  for (size_t i = 0; i < sizeof severities / sizeof severities[0]; i++) {
    size_t wl = strlen(severities[i].word);
    if ((size_t)(eol - p) >= wl && memcmp(p, severities[i].word, wl) == 0) {
      sev = (int)severities[i].sev;
      p += wl;
      break;
    }
  }
  if (sev < 0) return; /* some other word: not an expectation */
  int64_t offset = 0;
  if (p < eol && *p == '@') {
    p++;
    if ((size_t)(eol - p) >= 5 && memcmp(p, "above", 5) == 0) {
      offset = -1;
      p += 5;
    } else if ((size_t)(eol - p) >= 5 && memcmp(p, "below", 5) == 0) {
      offset = 1;
      p += 5;
    } else if (p < eol && (*p == '+' || *p == '-') && p + 1 < eol && is_digit(p[1])) {
      int sign = *p == '-' ? -1 : 1;
      p++;
      while (p < eol && is_digit(*p) && offset < 1000000) offset = offset * 10 + (*p++ - '0');
      offset *= sign;
    } else {
      fu_error(report, where, "expected '@+N', '@-N', '@above' or '@below' after 'expected-%s@'",
               fu_severity_name((fu_severity)sev));
      c->malformed = true;
      return;
    }
  }
  while (p < eol && (*p == ' ' || *p == '\t')) p++;
  if ((size_t)(eol - p) < 2 || memcmp(p, "{{", 2) != 0) {
    fu_error(report, where, "expected '{{' after 'expected-%s'", fu_severity_name((fu_severity)sev));
    c->malformed = true;
    return;
  }
  const char *text = p + 2, *close = NULL;
  for (const char *q = text; q + 1 < eol; q++)
    if (q[0] == '}' && q[1] == '}') {
      close = q;
      break;
    }
  if (!close) {
    fu_error(report, where, "missing '}}' at the end of 'expected-%s'", fu_severity_name((fu_severity)sev));
    c->malformed = true;
    return;
  }
  int64_t target = (int64_t)fu_loc_file_line(where) + offset;
  if (target < 1) {
    fu_error(report, where, "'expected-%s' points before the first line", fu_severity_name((fu_severity)sev));
    c->malformed = true;
    return;
  }
  if (!grow(&c->alloc, (void **)&c->exp, c->n_exp, &c->cap_exp, sizeof *c->exp)) {
    c->nomem = true;
    return;
  }
  expectation e = {(fu_severity)sev, (uint32_t)target, where, text, (size_t)(close - text), false};
  c->exp[c->n_exp++] = e;
}

fu_status fu_expect_new(const fu_source *src, fu_allocator alloc, fu_diag_engine *report, fu_expect_checker **out) {
  *out = NULL;
  fu_expect_checker *c = fu_mem_calloc(&alloc, 1, sizeof *c);
  if (!c) return FU_ERR_NOMEM;
  c->alloc = alloc;
  c->src = src;
  const char *p = src->text, *end = src->text + src->len;
  for (uint32_t line = 1; p < end; line++) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *eol = nl ? nl : end;
    const char *comment = NULL;
    for (const char *q = p; q + 1 < eol; q++)
      if (q[0] == '/' && q[1] == '/') {
        comment = q;
        break;
      }
    for (const char *q = comment; q && q + 9 <= eol; q++)
      if (memcmp(q, "expected-", 9) == 0) parse_one(c, report, line, p, q + 9, eol);
    p = nl ? nl + 1 : end;
  }
  if (c->nomem) {
    fu_expect_free(c);
    return FU_ERR_NOMEM;
  }
  *out = c;
  return FU_OK;
}

static bool text_matches(const expectation *e, const char *msg) {
  if (e->len == 0) return true;
  size_t n = strlen(msg);
  for (size_t i = 0; i + e->len <= n; i++)
    if (memcmp(msg + i, e->text, e->len) == 0) return true;
  return false;
}

void fu_expect_handler(void *user, const fu_diagnostic *d) {
  fu_expect_checker *c = user;
  if (fu_loc_known(d->loc)) {
    uint32_t line = fu_loc_file_line(d->loc);
    for (uint32_t i = 0; i < c->n_exp; i++) {
      expectation *e = &c->exp[i];
      if (!e->matched && e->sev == d->severity && e->line == line && text_matches(e, d->message)) {
        e->matched = true;
        return;
      }
    }
  }
  if (!grow(&c->alloc, (void **)&c->bad, c->n_bad, &c->cap_bad, sizeof *c->bad)) {
    c->nomem = true;
    return;
  }
  size_t size = strlen(d->message) + 1;
  char *msg = fu_mem_alloc(&c->alloc, size);
  if (!msg) {
    c->nomem = true;
    return;
  }
  memcpy(msg, d->message, size);
  unexpected u = {d->severity, d->loc, msg, size};
  c->bad[c->n_bad++] = u;
}

bool fu_expect_finish(fu_expect_checker *c, fu_diag_engine *report) {
  bool ok = !c->malformed && !c->nomem;
  for (uint32_t i = 0; i < c->n_bad; i++) {
    const unexpected *u = &c->bad[i];
    fu_loc loc = u->loc;
    if (!fu_loc_known(loc)) loc.src = c->src;
    fu_error(report, loc, "unexpected %s: %s", fu_severity_name(u->sev), u->msg);
    ok = false;
  }
  for (uint32_t i = 0; i < c->n_exp; i++) {
    const expectation *e = &c->exp[i];
    if (e->matched) continue;
    ok = false;
    /* Point out a near miss: the right text on another line. */
    uint32_t other = 0;
    for (uint32_t k = 0; k < c->n_bad && !other; k++)
      if (c->bad[k].sev == e->sev && fu_loc_known(c->bad[k].loc) && text_matches(e, c->bad[k].msg))
        other = fu_loc_file_line(c->bad[k].loc);
    if (other)
      fu_error(report, e->where, "expected %s {{%.*s}} on line %u was not produced there (it was on line %u)",
               fu_severity_name(e->sev), (int)e->len, e->text, e->line, other);
    else
      fu_error(report, e->where, "expected %s {{%.*s}} on line %u was not produced", fu_severity_name(e->sev),
               (int)e->len, e->text, e->line);
  }
  if (c->nomem) fu_error(report, fu_loc_none(), "out of memory while checking diagnostics");
  return ok;
}

void fu_expect_free(fu_expect_checker *c) {
  if (!c) return;
  fu_allocator a = c->alloc;
  for (uint32_t i = 0; i < c->n_bad; i++) fu_mem_free(&a, c->bad[i].msg, c->bad[i].msg_size);
  fu_mem_free(&a, c->bad, c->cap_bad * sizeof *c->bad);
  fu_mem_free(&a, c->exp, c->cap_exp * sizeof *c->exp);
  fu_mem_free(&a, c, sizeof *c);
}
