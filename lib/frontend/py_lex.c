/* fuser: the lexer for the Python subset of nvFuser repro scripts.
 *
 * It follows Python's own tokenizer where the scripts depend on it: logical
 * lines end with NEWLINE, brackets and backslashes join physical lines,
 * indentation turns into INDENT/DEDENT, comments and blank lines vanish. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuser/frontend.h"

enum { MAX_INDENT_DEPTH = 100, MAX_BRACKET_DEPTH = 200, TAB_SIZE = 8 };

typedef struct lexer {
  const fu_source *src;
  const char *p, *end;
  const char *line_start;
  uint32_t line;
  fu_diag_engine *diag;
  fu_py_tokens *out;
  int indents[MAX_INDENT_DEPTH];
  int n_indents;
  char brackets[MAX_BRACKET_DEPTH];
  fu_loc bracket_locs[MAX_BRACKET_DEPTH];
  int depth;
  bool line_has_tokens; /* a token was emitted on the current logical line */
  bool nomem;
} lexer;

static fu_loc here(const lexer *lx, const char *at) {
  fu_loc l = {lx->src, lx->line, (uint32_t)(at - lx->line_start) + 1};
  return l;
}

static bool push(lexer *lx, fu_py_tok_kind kind, const char *text, size_t len, fu_loc loc) {
  fu_py_tokens *t = lx->out;
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 256;
    fu_py_token *v = fu_mem_realloc(&t->alloc, t->v, t->cap * sizeof *v, cap * sizeof *v);
    if (!v) {
      lx->nomem = true;
      return false;
    }
    t->v = v;
    t->cap = cap;
  }
  fu_py_token *tok = &t->v[t->n++];
  memset(tok, 0, sizeof *tok);
  tok->kind = kind;
  tok->text = text;
  tok->len = len;
  tok->loc = loc;
  if (kind != FU_PY_TOK_NEWLINE && kind != FU_PY_TOK_INDENT && kind != FU_PY_TOK_DEDENT && kind != FU_PY_TOK_EOF)
    lx->line_has_tokens = true;
  return true;
}

void fu_py_tokens_free(fu_py_tokens *t) {
  if (t->v) fu_mem_free(&t->alloc, t->v, t->cap * sizeof *t->v);
  t->v = NULL;
  t->n = t->cap = 0;
}

bool fu_py_tok_is(const fu_py_token *tok, const char *s) {
  if (tok->kind != FU_PY_TOK_NAME && tok->kind != FU_PY_TOK_OP) return false;
  size_t n = strlen(s);
  return tok->len == n && memcmp(tok->text, s, n) == 0;
}

/* Advance past a newline sequence at lx->p ("\n" or "\r\n"). */
static void next_line(lexer *lx) {
  if (lx->p < lx->end && *lx->p == '\r') lx->p++;
  if (lx->p < lx->end && *lx->p == '\n') lx->p++;
  lx->line++;
  lx->line_start = lx->p;
}

/* At the start of a logical line: measure the indentation, skip blank and
 * comment-only lines, and emit INDENT/DEDENT against the indent stack. */
static bool handle_indentation(lexer *lx) {
  for (;;) {
    int col = 0;
    const char *q = lx->p;
    while (q < lx->end && (*q == ' ' || *q == '\t' || *q == '\f')) {
      if (*q == ' ')
        col++;
      else if (*q == '\t')
        col = (col / TAB_SIZE + 1) * TAB_SIZE;
      else
        col = 0;
      q++;
    }
    if (q < lx->end && *q == '#') {
      while (q < lx->end && *q != '\n') q++;
    }
    if (q < lx->end && (*q == '\r' || *q == '\n')) {
      lx->p = q;
      next_line(lx);
      continue; /* blank or comment-only line */
    }
    lx->p = q;
    if (q >= lx->end) return true; /* end of file: the caller emits the DEDENTs */
    int top = lx->indents[lx->n_indents - 1];
    if (col > top) {
      if (lx->n_indents == MAX_INDENT_DEPTH) {
        fu_error(lx->diag, here(lx, q), "too many levels of indentation");
        return false;
      }
      lx->indents[lx->n_indents++] = col;
      return push(lx, FU_PY_TOK_INDENT, q, 0, here(lx, q));
    }
    while (col < lx->indents[lx->n_indents - 1]) {
      lx->n_indents--;
      if (!push(lx, FU_PY_TOK_DEDENT, q, 0, here(lx, q))) return false;
    }
    if (col != lx->indents[lx->n_indents - 1]) {
      fu_error(lx->diag, here(lx, q), "unindent does not match any outer indentation level");
      return false;
    }
    return true;
  }
}

static bool is_name_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static bool is_name_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* A string literal starting at `start` (prefix letters, then the quote at
 * `q`).  Escapes are skipped here and decoded by the parser. */
static bool lex_string(lexer *lx, const char *start, const char *q) {
  fu_loc loc = here(lx, start);
  char quote = *q;
  bool triple = q + 2 < lx->end && q[1] == quote && q[2] == quote;
  const char *p = q + (triple ? 3 : 1);
  uint32_t lines = 0;
  const char *last_line_start = lx->line_start;
  for (;;) {
    if (p >= lx->end) {
      fu_error(lx->diag, loc, "unterminated string literal");
      return false;
    }
    if (*p == '\\' && p + 1 < lx->end) {
      if (p[1] == '\n') {
        lines++;
        last_line_start = p + 2;
      }
      p += 2;
      continue;
    }
    if (*p == '\n') {
      if (!triple) {
        fu_error(lx->diag, loc, "unterminated string literal");
        return false;
      }
      lines++;
      last_line_start = p + 1;
      p++;
      continue;
    }
    if (*p == quote) {
      if (!triple) {
        p++;
        break;
      }
      if (p + 2 < lx->end && p[1] == quote && p[2] == quote) {
        p += 3;
        break;
      }
    }
    p++;
  }
  if (!push(lx, FU_PY_TOK_STRING, start, (size_t)(p - start), loc)) return false;
  lx->line += lines;
  lx->line_start = last_line_start;
  lx->p = p;
  return true;
}

/* Numbers as Python writes them: 12, 1_000, 0x1f, 0o17, 0b101, 1.5, .5, 1.,
 * 1e-3.  Imaginary literals are reported as unsupported. */
static bool lex_number(lexer *lx) {
  const char *start = lx->p, *p = lx->p;
  fu_loc loc = here(lx, start);
  char buf[128];
  size_t n = 0;
  bool is_float = false;
  int base = 10;
  if (p + 1 < lx->end && p[0] == '0' && strchr("xXoObB", p[1])) {
    base = (p[1] == 'x' || p[1] == 'X') ? 16 : (p[1] == 'o' || p[1] == 'O') ? 8 : 2;
    p += 2;
    while (p < lx->end && (isxdigit((unsigned char)*p) || *p == '_')) {
      if (*p != '_' && n < sizeof buf - 1) buf[n++] = *p;
      p++;
    }
  } else {
    while (p < lx->end && (isdigit((unsigned char)*p) || *p == '_')) {
      if (*p != '_' && n < sizeof buf - 1) buf[n++] = *p;
      p++;
    }
    if (p < lx->end && *p == '.') {
      is_float = true;
      if (n < sizeof buf - 1) buf[n++] = '.';
      p++;
      while (p < lx->end && (isdigit((unsigned char)*p) || *p == '_')) {
        if (*p != '_' && n < sizeof buf - 1) buf[n++] = *p;
        p++;
      }
    }
    if (p < lx->end && (*p == 'e' || *p == 'E')) {
      const char *e = p + 1;
      if (e < lx->end && (*e == '+' || *e == '-')) e++;
      if (e < lx->end && isdigit((unsigned char)*e)) {
        is_float = true;
        while (p < e) {
          if (n < sizeof buf - 1) buf[n++] = *p;
          p++;
        }
        while (p < lx->end && (isdigit((unsigned char)*p) || *p == '_')) {
          if (*p != '_' && n < sizeof buf - 1) buf[n++] = *p;
          p++;
        }
      }
    }
  }
  if (p < lx->end && (*p == 'j' || *p == 'J')) {
    fu_error(lx->diag, loc, "unsupported Python construct 'complex literal'");
    return false;
  }
  if (p < lx->end && is_name_char(*p)) {
    fu_error(lx->diag, here(lx, p), "invalid number literal");
    return false;
  }
  if (n == 0 || n >= sizeof buf - 1) {
    fu_error(lx->diag, loc, "invalid number literal");
    return false;
  }
  buf[n] = '\0';
  if (!push(lx, is_float ? FU_PY_TOK_FLOAT : FU_PY_TOK_INT, start, (size_t)(p - start), loc)) return false;
  fu_py_token *tok = &lx->out->v[lx->out->n - 1];
  errno = 0;
  if (is_float) {
    tok->value.f = strtod(buf, NULL);
  } else {
    char *endp = NULL;
    unsigned long long v = strtoull(buf, &endp, base);
    if (endp && *endp) {
      fu_error(lx->diag, loc, "invalid number literal");
      return false;
    }
    if (errno == ERANGE || v > (unsigned long long)INT64_MAX) {
      fu_error(lx->diag, loc, "integer literal '%.*s' out of range", (int)(p - start), start);
      return false;
    }
    tok->value.i = (int64_t)v;
  }
  lx->p = p;
  return true;
}

static const char *const multi_ops[] = {"**=", "//=", ">>=", "<<=", "...", "->", "**", "//", "==", "!=", "<=", ">=",
                                        "<<",  ">>",  "+=",  "-=",  "*=",  "/=", "%=", "&=", "|=", "^=", "@=", ":="};

/* Operators and punctuation; brackets are tracked so that newlines inside
 * them join lines and mismatches are reported where they happen. */
static bool lex_op(lexer *lx) {
  const char *p = lx->p;
  fu_loc loc = here(lx, p);
  size_t avail = (size_t)(lx->end - p);
  for (size_t i = 0; i < sizeof multi_ops / sizeof multi_ops[0]; i++) {
    size_t n = strlen(multi_ops[i]);
    if (n <= avail && memcmp(p, multi_ops[i], n) == 0) {
      lx->p += n;
      return push(lx, FU_PY_TOK_OP, p, n, loc);
    }
  }
  char c = *p;
  if (!strchr("()[]{},:.;=+-*/%@<>&|^~!", c) || c == '\0') {
    if ((unsigned char)c >= 0x20 && (unsigned char)c < 0x7f)
      fu_error(lx->diag, loc, "unexpected character '%c'", c);
    else
      fu_error(lx->diag, loc, "unexpected character (byte 0x%02x)", (unsigned)(unsigned char)c);
    return false;
  }
  if (c == '(' || c == '[' || c == '{') {
    if (lx->depth == MAX_BRACKET_DEPTH) {
      fu_error(lx->diag, loc, "brackets nested too deeply");
      return false;
    }
    lx->brackets[lx->depth] = c;
    lx->bracket_locs[lx->depth] = loc;
    lx->depth++;
  } else if (c == ')' || c == ']' || c == '}') {
    char open = c == ')' ? '(' : c == ']' ? '[' : '{';
    if (lx->depth == 0) {
      fu_error(lx->diag, loc, "unmatched '%c'", c);
      return false;
    }
    if (lx->brackets[lx->depth - 1] != open) {
      fu_error(lx->diag, loc, "closing '%c' does not match '%c'", c, lx->brackets[lx->depth - 1]);
      fu_note(lx->diag, lx->bracket_locs[lx->depth - 1], "opened here");
      return false;
    }
    lx->depth--;
  }
  lx->p++;
  return push(lx, FU_PY_TOK_OP, p, 1, loc);
}

/* The main loop: one token (or one line break) per iteration. */
static bool run(lexer *lx) {
  lx->indents[0] = 0;
  lx->n_indents = 1;
  bool at_line_start = true;
  for (;;) {
    if (at_line_start && lx->depth == 0) {
      if (!handle_indentation(lx)) return false;
      at_line_start = false;
    }
    /* skip spaces and comments within a line */
    while (lx->p < lx->end && (*lx->p == ' ' || *lx->p == '\t' || *lx->p == '\f')) lx->p++;
    if (lx->p < lx->end && *lx->p == '#')
      while (lx->p < lx->end && *lx->p != '\n' && *lx->p != '\r') lx->p++;
    if (lx->p >= lx->end) break;
    char c = *lx->p;
    if (c == '\r' && lx->p + 1 < lx->end && lx->p[1] != '\n') {
      lx->p++; /* a stray carriage return is whitespace */
      continue;
    }
    if (c == '\n' || c == '\r') {
      if (lx->depth == 0 && lx->line_has_tokens) {
        if (!push(lx, FU_PY_TOK_NEWLINE, lx->p, 0, here(lx, lx->p))) return false;
        lx->line_has_tokens = false;
      }
      next_line(lx);
      at_line_start = lx->depth == 0;
      continue;
    }
    if (c == '\\') {
      const char *q = lx->p + 1;
      if (q < lx->end && *q == '\r') q++;
      if (q < lx->end && *q == '\n') {
        lx->p = q;
        next_line(lx); /* explicit line joining: no indentation processing */
        continue;
      }
      if (q >= lx->end) {
        fu_error(lx->diag, here(lx, lx->p), "unexpected end of file after line continuation");
        return false;
      }
      fu_error(lx->diag, here(lx, lx->p), "unexpected character after line continuation");
      return false;
    }
    if (is_name_start(c)) {
      const char *s = lx->p, *q = lx->p;
      while (q < lx->end && is_name_char(*q)) q++;
      size_t n = (size_t)(q - s);
      /* string prefixes: r, b, u, f and their pairs */
      if (n <= 2 && q < lx->end && (*q == '\'' || *q == '"')) {
        bool prefix = true;
        for (size_t i = 0; i < n; i++) prefix &= strchr("rRbBuUfF", s[i]) != NULL;
        if (prefix) {
          if (!lex_string(lx, s, q)) return false;
          continue;
        }
      }
      lx->p = q;
      if (!push(lx, FU_PY_TOK_NAME, s, n, here(lx, s))) return false;
      continue;
    }
    if (isdigit((unsigned char)c) || (c == '.' && lx->p + 1 < lx->end && isdigit((unsigned char)lx->p[1]))) {
      if (!lex_number(lx)) return false;
      continue;
    }
    if (c == '\'' || c == '"') {
      if (!lex_string(lx, lx->p, lx->p)) return false;
      continue;
    }
    if (!lex_op(lx)) return false;
  }
  if (lx->depth > 0) {
    fu_error(lx->diag, lx->bracket_locs[lx->depth - 1], "'%c' was never closed", lx->brackets[lx->depth - 1]);
    return false;
  }
  if (lx->line_has_tokens && !push(lx, FU_PY_TOK_NEWLINE, lx->p, 0, here(lx, lx->p))) return false;
  while (lx->n_indents > 1) {
    lx->n_indents--;
    if (!push(lx, FU_PY_TOK_DEDENT, lx->p, 0, here(lx, lx->p))) return false;
  }
  return push(lx, FU_PY_TOK_EOF, lx->p, 0, here(lx, lx->p));
}

fu_status fu_py_tokenize(const fu_source *src, fu_allocator alloc, fu_diag_engine *diag, fu_py_tokens *out) {
  memset(out, 0, sizeof *out);
  out->alloc = alloc;
  lexer lx;
  memset(&lx, 0, sizeof lx);
  lx.src = src;
  lx.p = src->text ? src->text : "";
  lx.end = lx.p + (src->text ? src->len : 0);
  lx.line_start = lx.p;
  lx.line = 1;
  lx.diag = diag;
  lx.out = out;
  /* a UTF-8 byte order mark is allowed at the very start */
  if (lx.end - lx.p >= 3 && memcmp(lx.p, "\xEF\xBB\xBF", 3) == 0) {
    lx.p += 3;
    lx.line_start = lx.p;
  }
  if (run(&lx)) return FU_OK;
  if (lx.nomem) fu_error(diag, fu_loc_none(), "out of memory while tokenizing");
  fu_py_tokens_free(out);
  return lx.nomem ? FU_ERR_NOMEM : FU_ERR_PARSE;
}
