/* fuser: the .fir lexer (token rules in docs/ir.md, "Lexical structure"). */
#include "lexer.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fu_txt_lex_init(fu_lexer *lx, const fu_source *src, fu_allocator alloc, fu_diag_engine *diag) {
  memset(lx, 0, sizeof *lx);
  lx->alloc = alloc;
  lx->src = src;
  lx->p = src->text ? src->text : "";
  lx->end = lx->p + (src->text ? src->len : 0);
  lx->line_start = lx->p;
  lx->line = 1;
  lx->diag = diag;
}

static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_ident_char(char c) { return is_alpha(c) || is_digit(c) || c == '.'; }
bool fu_txt_is_name_char(char c) { return is_ident_char(c) || c == '$'; }

bool fu_txt_tok_is(const fu_token *t, const char *s) {
  size_t n = strlen(s);
  return t->len == n && memcmp(t->p, s, n) == 0;
}

/* Writes a printable rendering of at most `max` source bytes: control and
 * non-ASCII bytes become \xNN so that messages stay one clean line. */
static void put_printable(char *buf, size_t cap, const char *s, size_t n, size_t max) {
  size_t o = 0;
  for (size_t i = 0; i < n && i < max && o + 5 < cap; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c < 0x7f) {
      buf[o++] = (char)c;
    } else {
      snprintf(buf + o, cap - o, "\\x%02x", c);
      o += 4;
    }
  }
  if (n > max && o + 4 < cap) {
    memcpy(buf + o, "...", 3);
    o += 3;
  }
  buf[o < cap ? o : cap - 1] = '\0';
}

const char *fu_txt_tok_describe(const fu_token *t, char *buf, size_t cap) {
  char text[80];
  put_printable(text, sizeof text, t->p, t->len, 40);
  switch (t->kind) {
  case FU_TOK_EOF: snprintf(buf, cap, "end of input"); break;
  case FU_TOK_ERROR: snprintf(buf, cap, "invalid token"); break;
  case FU_TOK_IDENT: snprintf(buf, cap, "identifier '%s'", text); break;
  case FU_TOK_INT: snprintf(buf, cap, "integer '%s'", text); break;
  case FU_TOK_FLOAT: snprintf(buf, cap, "number '%s'", text); break;
  case FU_TOK_STRING: snprintf(buf, cap, "string %s", text); break;
  default: snprintf(buf, cap, "'%s'", text); break;
  }
  return buf;
}

static void lex_error(fu_lexer *lx, const char *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void lex_error(fu_lexer *lx, const char *at, const char *fmt, ...) {
  if (lx->quiet || !lx->diag) return;
  fu_loc loc = {lx->src, lx->line, (uint32_t)(at - lx->line_start) + 1};
  va_list ap;
  va_start(ap, fmt);
  fu_diag_vreport(lx->diag, FU_SEV_ERROR, loc, fmt, ap);
  va_end(ap);
}

/* Skips whitespace and // comments, keeping the line count. */
static void skip_space(fu_lexer *lx) {
  while (lx->p < lx->end) {
    char c = *lx->p;
    if (c == '\n') {
      lx->p++;
      lx->line++;
      lx->line_start = lx->p;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      lx->p++;
    } else if (c == '/' && lx->p + 1 < lx->end && lx->p[1] == '/') {
      while (lx->p < lx->end && *lx->p != '\n') lx->p++;
    } else {
      break;
    }
  }
}

/* Decimal int64 with overflow detection; `s` is -?[0-9]+. */
static bool parse_int64(const char *s, size_t n, int64_t *out) {
  bool neg = n > 0 && s[0] == '-';
  uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  uint64_t v = 0;
  for (size_t i = neg; i < n; i++) {
    unsigned d = (unsigned)(s[i] - '0');
    if (v > (limit - d) / 10) return false;
    v = v * 10 + d;
  }
  if (neg)
    *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
  else
    *out = (int64_t)v;
  return true;
}

/* strtod on a NUL-terminated copy: the source buffer need not be
 * terminated after the token.  False when the value overflows to inf. */
static bool parse_double(fu_lexer *lx, const char *s, size_t n, double *out) {
  char small[64];
  char *buf = small;
  if (n >= sizeof small) {
    buf = fu_mem_alloc(&lx->alloc, n + 1); /* rare: a float literal longer than 63 chars */
    if (!buf) return false;
  }
  memcpy(buf, s, n);
  buf[n] = '\0';
  errno = 0;
  char *endp = NULL;
  double v = strtod(buf, &endp);
  bool ok = endp == buf + n && !isinf(v);
  if (buf != small) fu_mem_free(&lx->alloc, buf, n + 1);
  *out = v;
  return ok;
}

/* Lexes a number starting at lx->p (a digit, or '-' then a digit).  A
 * number glued to name characters ("12ab", "1.5.2") is one bad token. */
static fu_token lex_number(fu_lexer *lx, fu_token t) {
  const char *s = lx->p, *q = s;
  if (*q == '-') q++;
  while (q < lx->end && is_digit(*q)) q++;
  bool is_float = false;
  if (q < lx->end && *q == '.') {
    is_float = true;
    q++;
    while (q < lx->end && is_digit(*q)) q++;
  }
  if (q < lx->end && (*q == 'e' || *q == 'E')) {
    const char *e = q + 1;
    if (e < lx->end && (*e == '+' || *e == '-')) e++;
    if (e < lx->end && is_digit(*e)) {
      while (e < lx->end && is_digit(*e)) e++;
      q = e;
      is_float = true;
    }
  }
  if (q < lx->end && fu_txt_is_name_char(*q)) {
    while (q < lx->end && (fu_txt_is_name_char(*q) || *q == '-' || *q == '+')) q++;
    char text[80];
    put_printable(text, sizeof text, s, (size_t)(q - s), 40);
    lex_error(lx, s, "invalid number '%s'", text);
    t.kind = FU_TOK_ERROR;
  } else if (is_float) {
    t.kind = FU_TOK_FLOAT;
    if (!parse_double(lx, s, (size_t)(q - s), &t.fval)) {
      char text[80];
      put_printable(text, sizeof text, s, (size_t)(q - s), 40);
      lex_error(lx, s, "float literal '%s' is out of range", text);
      t.kind = FU_TOK_ERROR;
    }
  } else {
    t.kind = FU_TOK_INT;
    if (!parse_int64(s, (size_t)(q - s), &t.ival)) {
      char text[80];
      put_printable(text, sizeof text, s, (size_t)(q - s), 40);
      lex_error(lx, s, "integer literal '%s' is out of range", text);
      t.kind = FU_TOK_ERROR;
    }
  }
  t.len = (uint32_t)(q - s);
  lx->p = q;
  return t;
}

/* Strings may not span lines; only \" and \\ escapes exist. */
static fu_token lex_string(fu_lexer *lx, fu_token t) {
  const char *s = lx->p, *q = s + 1;
  while (q < lx->end && *q != '"' && *q != '\n') {
    if (*q == '\\') {
      if (q + 1 < lx->end && (q[1] == '"' || q[1] == '\\')) {
        q += 2;
        continue;
      }
      if (q + 1 < lx->end && q[1] != '\n') {
        char esc[8];
        put_printable(esc, sizeof esc, q + 1, 1, 1);
        lex_error(lx, q, "unknown escape sequence '\\%s' in string", esc);
        t.kind = FU_TOK_ERROR;
      }
    }
    q++;
  }
  if (q >= lx->end || *q != '"') {
    lex_error(lx, s, "unterminated string");
    t.kind = FU_TOK_ERROR;
  } else {
    q++;
    if (t.kind != FU_TOK_ERROR) t.kind = FU_TOK_STRING;
  }
  t.len = (uint32_t)(q - s);
  lx->p = q;
  return t;
}

/* %name and @name: the sigil must be followed by at least one name char. */
static fu_token lex_sigil(fu_lexer *lx, fu_token t, fu_txt_tok kind) {
  const char *s = lx->p, *q = s + 1;
  while (q < lx->end && fu_txt_is_name_char(*q)) q++;
  if (q == s + 1) {
    char c[2] = {*s, 0};
    lex_error(lx, s, "expected a name after '%s'", c);
    t.kind = FU_TOK_ERROR;
  } else {
    t.kind = kind;
  }
  t.len = (uint32_t)(q - s);
  lx->p = q;
  return t;
}

/* Lexes one token into *out. */
static fu_token lex_one(fu_lexer *lx) {
  skip_space(lx);
  fu_token t;
  memset(&t, 0, sizeof t);
  t.p = lx->p;
  t.line = lx->line;
  t.col = (uint32_t)(lx->p - lx->line_start) + 1;
  if (lx->p >= lx->end) {
    t.kind = FU_TOK_EOF;
    return t;
  }
  char c = *lx->p;
  const char *next = lx->p + 1;
  if (is_alpha(c)) {
    const char *q = next;
    while (q < lx->end && is_ident_char(*q)) q++;
    t.kind = FU_TOK_IDENT;
    t.len = (uint32_t)(q - lx->p);
    lx->p = q;
    return t;
  }
  if (is_digit(c) || (c == '-' && next < lx->end && is_digit(*next))) return lex_number(lx, t);
  if (c == '-' && lx->end - next >= 3 && memcmp(next, "inf", 3) == 0 &&
      (next + 3 == lx->end || !is_ident_char(next[3]))) {
    t.kind = FU_TOK_FLOAT;
    t.fval = -INFINITY;
    t.len = 4;
    lx->p += 4;
    return t;
  }
  if (c == '"') return lex_string(lx, t);
  if (c == '%') return lex_sigil(lx, t, FU_TOK_VALUE);
  if (c == '@') return lex_sigil(lx, t, FU_TOK_AT);
  t.len = 1;
  lx->p++;
  switch (c) {
  case '=': t.kind = FU_TOK_EQ; return t;
  case ',': t.kind = FU_TOK_COMMA; return t;
  case ':': t.kind = FU_TOK_COLON; return t;
  case '(': t.kind = FU_TOK_LPAREN; return t;
  case ')': t.kind = FU_TOK_RPAREN; return t;
  case '{': t.kind = FU_TOK_LBRACE; return t;
  case '}': t.kind = FU_TOK_RBRACE; return t;
  case '[': t.kind = FU_TOK_LBRACKET; return t;
  case ']': t.kind = FU_TOK_RBRACKET; return t;
  case '-':
    if (lx->p < lx->end && *lx->p == '>') {
      lx->p++;
      t.len = 2;
      t.kind = FU_TOK_ARROW;
      return t;
    }
    break;
  default: break;
  }
  char text[8];
  put_printable(text, sizeof text, &c, 1, 1);
  lex_error(lx, t.p, "unexpected character '%s'", text);
  t.kind = FU_TOK_ERROR;
  return t;
}

void fu_txt_lex_next(fu_lexer *lx, fu_token *out) { *out = lex_one(lx); }
