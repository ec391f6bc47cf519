/* fuser: the parser for the Python subset of nvFuser repro scripts.
 *
 * A recursive-descent parser over the token array.  It accepts the
 * statement forms repro scripts use (imports, def, with, for, assignments,
 * calls) and expressions made of names, literals, attributes, calls, lists,
 * tuples and + - * / arithmetic.  Every other construct stops the parse with
 * `unsupported Python construct '...'` at its first token: the importer
 * would not know what the script means, so it must not guess. */
#include <string.h>

#include "fuser/frontend.h"

enum { MAX_NESTING = 500 };

typedef struct parser {
  const fu_py_token *t;
  size_t n, pos;
  fu_arena *arena;
  fu_diag_engine *diag;
  int depth;
  bool nomem;
} parser;

static const char *const py_keywords[] = {"False",  "None",   "True",    "and",      "as",       "assert", "async",
                                          "await",  "break",  "class",   "continue", "def",      "del",    "elif",
                                          "else",   "except", "finally", "for",      "from",     "global", "if",
                                          "import", "in",     "is",      "lambda",   "nonlocal", "not",    "or",
                                          "pass",   "raise",  "return",  "try",      "while",    "with",   "yield"};

static bool is_keyword(const fu_py_token *tok) {
  if (tok->kind != FU_PY_TOK_NAME) return false;
  for (size_t i = 0; i < sizeof py_keywords / sizeof py_keywords[0]; i++)
    if (fu_py_tok_is(tok, py_keywords[i])) return true;
  return false;
}

static const fu_py_token *cur(const parser *p) { return &p->t[p->pos < p->n ? p->pos : p->n - 1]; }
static const fu_py_token *peek(const parser *p, size_t k) {
  size_t i = p->pos + k;
  return &p->t[i < p->n ? i : p->n - 1];
}
static void advance(parser *p) {
  if (p->pos + 1 < p->n) p->pos++;
}
static bool at(const parser *p, const char *s) { return fu_py_tok_is(cur(p), s); }
static bool accept(parser *p, const char *s) {
  if (!at(p, s)) return false;
  advance(p);
  return true;
}

/* Describe a token for "expected X, found Y" messages. */
static void describe(const fu_py_token *tok, char *buf, size_t cap) {
  switch (tok->kind) {
    case FU_PY_TOK_EOF: snprintf(buf, cap, "end of file"); break;
    case FU_PY_TOK_NEWLINE: snprintf(buf, cap, "end of line"); break;
    case FU_PY_TOK_INDENT: snprintf(buf, cap, "indent"); break;
    case FU_PY_TOK_DEDENT: snprintf(buf, cap, "dedent"); break;
    default: snprintf(buf, cap, "'%.*s'", (int)(tok->len > 40 ? 40 : tok->len), tok->text); break;
  }
}

static void error_expected(parser *p, const char *what) {
  char found[64];
  describe(cur(p), found, sizeof found);
  fu_error(p->diag, cur(p)->loc, "expected %s, found %s", what, found);
}

static bool expect(parser *p, const char *s) {
  if (accept(p, s)) return true;
  char what[32];
  snprintf(what, sizeof what, "'%s'", s);
  error_expected(p, what);
  return false;
}

static void unsupported(parser *p, fu_loc loc, const char *what) {
  fu_error(p->diag, loc, "unsupported Python construct '%s'", what);
}

static void *alloc(parser *p, size_t size) {
  void *m = fu_arena_alloc(p->arena, size);
  if (!m && !p->nomem) {
    p->nomem = true;
    fu_error(p->diag, fu_loc_none(), "out of memory while parsing");
  }
  return m;
}

static char *tok_strdup(parser *p, const fu_py_token *tok) {
  char *s = fu_arena_strndup(p->arena, tok->text, tok->len);
  if (!s && !p->nomem) {
    p->nomem = true;
    fu_error(p->diag, fu_loc_none(), "out of memory while parsing");
  }
  return s;
}

/* A growable pointer vector in the arena (the old storage is left behind,
 * which at most doubles the memory a list takes). */
typedef struct ptrvec {
  void **v;
  uint32_t n, cap;
} ptrvec;

static bool vec_push(parser *p, ptrvec *vec, void *item) {
  if (vec->n == vec->cap) {
    uint32_t cap = vec->cap ? vec->cap * 2 : 8;
    void **v = alloc(p, cap * sizeof *v);
    if (!v) return false;
    if (vec->n) memcpy(v, vec->v, vec->n * sizeof *v);
    vec->v = v;
    vec->cap = cap;
  }
  vec->v[vec->n++] = item;
  return true;
}

static fu_py_expr *new_expr(parser *p, fu_py_expr_kind kind, fu_loc loc) {
  fu_py_expr *e = alloc(p, sizeof *e);
  if (e) {
    e->kind = kind;
    e->loc = loc;
  }
  return e;
}

/* ---- strings ---------------------------------------------------------- */

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Append the decoded contents of one string token to `sb`. */
static void decode_string(const fu_py_token *tok, fu_strbuf *sb) {
  const char *s = tok->text, *end = tok->text + tok->len;
  bool raw = false;
  while (s < end && *s != '\'' && *s != '"') {
    if (*s == 'r' || *s == 'R') raw = true;
    s++;
  }
  char quote = *s;
  size_t qn = (end - s >= 6 && s[1] == quote && s[2] == quote) ? 3 : 1;
  s += qn;
  end -= qn;
  while (s < end) {
    char c = *s++;
    if (c != '\\' || raw || s >= end) {
      fu_strbuf_putc(sb, c);
      continue;
    }
    char e = *s++;
    switch (e) {
      case 'n': fu_strbuf_putc(sb, '\n'); break;
      case 't': fu_strbuf_putc(sb, '\t'); break;
      case 'r': fu_strbuf_putc(sb, '\r'); break;
      case '0': fu_strbuf_putc(sb, '\0'); break;
      case '\\': fu_strbuf_putc(sb, '\\'); break;
      case '\'': fu_strbuf_putc(sb, '\''); break;
      case '"': fu_strbuf_putc(sb, '"'); break;
      case '\n': break; /* escaped newline joins */
      case 'x':
        if (end - s >= 2 && hexval(s[0]) >= 0 && hexval(s[1]) >= 0) {
          fu_strbuf_putc(sb, (char)(hexval(s[0]) * 16 + hexval(s[1])));
          s += 2;
          break;
        }
        /* fall through */
      default:
        fu_strbuf_putc(sb, '\\');
        fu_strbuf_putc(sb, e);
        break;
    }
  }
}

/* ---- expressions ------------------------------------------------------ */

static fu_py_expr *parse_expr(parser *p);
static fu_py_expr *parse_factor(parser *p);

static bool enter(parser *p) {
  if (++p->depth > MAX_NESTING) {
    fu_error(p->diag, cur(p)->loc, "expression nested too deeply");
    return false;
  }
  return true;
}

/* The items of a list or parenthesized tuple, up to the closing bracket. */
static bool parse_items(parser *p, const char *close, ptrvec *items, bool *saw_comma) {
  *saw_comma = false;
  while (!at(p, close)) {
    if (at(p, "*")) {
      unsupported(p, cur(p)->loc, "starred expression");
      return false;
    }
    fu_py_expr *e = parse_expr(p);
    if (!e || !vec_push(p, items, e)) return false;
    if (at(p, "for")) {
      unsupported(p, cur(p)->loc, "comprehension");
      return false;
    }
    if (!accept(p, ",")) break;
    *saw_comma = true;
  }
  return expect(p, close);
}

/* Names, literals, adjacent strings, parenthesized expressions, tuples
 * and lists. */
static fu_py_expr *parse_atom(parser *p) {
  const fu_py_token *tok = cur(p);
  fu_loc loc = tok->loc;
  switch (tok->kind) {
    case FU_PY_TOK_INT: {
      fu_py_expr *e = new_expr(p, FU_PY_E_INT, loc);
      if (e) e->u.i = tok->value.i;
      advance(p);
      return e;
    }
    case FU_PY_TOK_FLOAT: {
      fu_py_expr *e = new_expr(p, FU_PY_E_FLOAT, loc);
      if (e) e->u.f = tok->value.f;
      advance(p);
      return e;
    }
    case FU_PY_TOK_STRING: {
      fu_strbuf sb;
      fu_strbuf_init(&sb, fu_default_allocator());
      while (cur(p)->kind == FU_PY_TOK_STRING) {
        decode_string(cur(p), &sb);
        advance(p);
      }
      fu_py_expr *e = new_expr(p, FU_PY_E_STRING, loc);
      if (e) {
        e->u.str = fu_arena_strndup(p->arena, sb.data ? sb.data : "", sb.len);
        if (!e->u.str || sb.failed) e = NULL;
      }
      fu_strbuf_free(&sb);
      if (!e && !p->nomem) {
        p->nomem = true;
        fu_error(p->diag, fu_loc_none(), "out of memory while parsing");
      }
      return e;
    }
    case FU_PY_TOK_NAME: {
      if (fu_py_tok_is(tok, "True") || fu_py_tok_is(tok, "False")) {
        fu_py_expr *e = new_expr(p, FU_PY_E_BOOL, loc);
        if (e) e->u.b = fu_py_tok_is(tok, "True");
        advance(p);
        return e;
      }
      if (fu_py_tok_is(tok, "None")) {
        advance(p);
        return new_expr(p, FU_PY_E_NONE, loc);
      }
      if (is_keyword(tok)) {
        char kw[32];
        snprintf(kw, sizeof kw, "%.*s", (int)tok->len, tok->text);
        unsupported(p, loc, kw);
        return NULL;
      }
      fu_py_expr *e = new_expr(p, FU_PY_E_NAME, loc);
      if (e && !(e->u.name = tok_strdup(p, tok))) return NULL;
      advance(p);
      return e;
    }
    case FU_PY_TOK_OP:
      if (fu_py_tok_is(tok, "(") || fu_py_tok_is(tok, "[")) {
        bool paren = fu_py_tok_is(tok, "(");
        advance(p);
        ptrvec items = {0};
        bool comma;
        if (!enter(p)) return NULL;
        bool ok = parse_items(p, paren ? ")" : "]", &items, &comma);
        p->depth--;
        if (!ok) return NULL;
        if (paren && items.n == 1 && !comma) {
          fu_py_expr *inner = items.v[0];
          return inner; /* plain parentheses */
        }
        fu_py_expr *e = new_expr(p, paren ? FU_PY_E_TUPLE : FU_PY_E_LIST, loc);
        if (e) {
          e->u.list.items = (fu_py_expr **)items.v;
          e->u.list.n = items.n;
        }
        return e;
      }
      if (fu_py_tok_is(tok, "{")) {
        unsupported(p, loc, "dict or set display");
        return NULL;
      }
      if (fu_py_tok_is(tok, "...")) {
        unsupported(p, loc, "Ellipsis");
        return NULL;
      }
      if (fu_py_tok_is(tok, "~")) {
        unsupported(p, loc, "~");
        return NULL;
      }
      break;
    default: break;
  }
  error_expected(p, "an expression");
  return NULL;
}

/* Arguments of a call: positional, then keyword arguments. */
static bool parse_call_args(parser *p, fu_py_expr *call) {
  ptrvec args = {0};
  fu_py_kwarg *kw = NULL;
  uint32_t n_kw = 0, cap_kw = 0;
  while (!at(p, ")")) {
    if (at(p, "*") || at(p, "**")) {
      unsupported(p, cur(p)->loc, at(p, "*") ? "*args" : "**kwargs");
      return false;
    }
    if (cur(p)->kind == FU_PY_TOK_NAME && fu_py_tok_is(peek(p, 1), "=") && !is_keyword(cur(p))) {
      const fu_py_token *name = cur(p);
      for (uint32_t i = 0; i < n_kw; i++)
        if (strlen(kw[i].name) == name->len && memcmp(kw[i].name, name->text, name->len) == 0) {
          fu_error(p->diag, name->loc, "keyword argument '%.*s' repeated", (int)name->len, name->text);
          return false;
        }
      if (n_kw == cap_kw) {
        uint32_t cap = cap_kw ? cap_kw * 2 : 4;
        fu_py_kwarg *v = alloc(p, cap * sizeof *v);
        if (!v) return false;
        if (n_kw) memcpy(v, kw, n_kw * sizeof *v);
        kw = v;
        cap_kw = cap;
      }
      fu_py_kwarg *k = &kw[n_kw];
      k->loc = name->loc;
      if (!(k->name = tok_strdup(p, name))) return false;
      advance(p);
      advance(p);
      if (!(k->value = parse_expr(p))) return false;
      n_kw++;
    } else {
      if (n_kw) {
        fu_error(p->diag, cur(p)->loc, "positional argument follows keyword argument");
        return false;
      }
      fu_py_expr *e = parse_expr(p);
      if (!e || !vec_push(p, &args, e)) return false;
      if (at(p, "for")) {
        unsupported(p, cur(p)->loc, "comprehension");
        return false;
      }
    }
    if (!accept(p, ",")) break;
  }
  if (!expect(p, ")")) return false;
  call->u.call.args = (fu_py_expr **)args.v;
  call->u.call.n_args = args.n;
  call->u.call.kwargs = kw;
  call->u.call.n_kwargs = n_kw;
  return true;
}

static fu_py_expr *parse_primary(parser *p) {
  fu_py_expr *e = parse_atom(p);
  int chain = 0; /* trailers nest like brackets: a.b.c(...) is a tree */
  while (e) {
    if (at(p, "(") || at(p, ".")) {
      if (!enter(p)) return NULL;
      chain++;
    }
    if (at(p, "(")) {
      fu_py_expr *call = new_expr(p, FU_PY_E_CALL, e->loc);
      if (!call) return NULL;
      call->u.call.callee = e;
      advance(p);
      if (!enter(p)) return NULL;
      bool ok = parse_call_args(p, call);
      p->depth--;
      if (!ok) return NULL;
      e = call;
    } else if (at(p, ".")) {
      advance(p);
      if (cur(p)->kind != FU_PY_TOK_NAME) {
        error_expected(p, "an attribute name");
        return NULL;
      }
      fu_py_expr *a = new_expr(p, FU_PY_E_ATTR, e->loc);
      if (!a || !(a->u.attr.name = tok_strdup(p, cur(p)))) return NULL;
      a->u.attr.base = e;
      advance(p);
      e = a;
    } else if (at(p, "[")) { /* x[i]: one index; slices stay unsupported */
      fu_py_expr *sub = new_expr(p, FU_PY_E_SUBSCRIPT, cur(p)->loc); /* located at the '[' */
      advance(p);
      if (!sub) return NULL;
      sub->u.subscript.base = e;
      if (!enter(p)) return NULL;
      sub->u.subscript.index = at(p, ":") ? NULL : parse_expr(p);
      p->depth--;
      if (!sub->u.subscript.index && !at(p, ":")) return NULL;
      if (at(p, ":") || at(p, ",")) {
        unsupported(p, cur(p)->loc, at(p, ":") ? "slice" : "subscript with several indices");
        return NULL;
      }
      if (!expect(p, "]")) return NULL;
      e = sub;
    } else {
      break;
    }
  }
  p->depth -= chain;
  return e;
}

/* Located at the start of the left operand, as Python does. */
static fu_py_expr *make_binary(parser *p, const char *op, fu_py_expr *lhs, fu_py_expr *rhs, fu_loc loc) {
  (void)loc;
  fu_py_expr *e = new_expr(p, FU_PY_E_BINARY, lhs->loc);
  if (!e) return NULL;
  e->u.binary.op = op;
  e->u.binary.lhs = lhs;
  e->u.binary.rhs = rhs;
  return e;
}

static fu_py_expr *parse_power(parser *p) {
  fu_py_expr *e = parse_primary(p);
  if (e && at(p, "**")) {
    fu_loc loc = cur(p)->loc;
    advance(p);
    if (!enter(p)) return NULL;
    fu_py_expr *rhs = parse_factor(p);
    p->depth--;
    return rhs ? make_binary(p, "**", e, rhs, loc) : NULL;
  }
  return e;
}

static fu_py_expr *parse_factor(parser *p) {
  if (at(p, "-") || at(p, "+")) {
    fu_loc loc = cur(p)->loc;
    char op = *cur(p)->text;
    advance(p);
    if (!enter(p)) return NULL;
    fu_py_expr *operand = parse_factor(p);
    p->depth--;
    if (!operand) return NULL;
    fu_py_expr *e = new_expr(p, FU_PY_E_UNARY, loc);
    if (e) {
      e->u.unary.op = op;
      e->u.unary.operand = operand;
    }
    return e;
  }
  return parse_power(p);
}

/* Operator chains build left-deep trees; each link counts as a level of
 * nesting so that evaluating the tree cannot recurse without bound. */
static fu_py_expr *parse_term(parser *p) {
  fu_py_expr *e = parse_factor(p);
  int chain = 0;
  while (e) {
    const char *op = at(p, "*") ? "*" : at(p, "/") ? "/" : at(p, "//") ? "//" : at(p, "%") ? "%" : NULL;
    if (!op) break;
    if (!enter(p)) return NULL;
    chain++;
    fu_loc loc = cur(p)->loc;
    advance(p);
    fu_py_expr *rhs = parse_factor(p);
    e = rhs ? make_binary(p, op, e, rhs, loc) : NULL;
  }
  p->depth -= chain;
  return e;
}

static fu_py_expr *parse_sum(parser *p) {
  fu_py_expr *e = parse_term(p);
  int chain = 0;
  while (e) {
    const char *op = at(p, "+") ? "+" : at(p, "-") ? "-" : NULL;
    if (!op) break;
    if (!enter(p)) return NULL;
    chain++;
    fu_loc loc = cur(p)->loc;
    advance(p);
    fu_py_expr *rhs = parse_term(p);
    e = rhs ? make_binary(p, op, e, rhs, loc) : NULL;
  }
  p->depth -= chain;
  return e;
}

/* An expression; what would continue it into an unsupported construct
 * (comparisons, boolean operators, conditional expressions, bitwise
 * operators, `lambda`, `not`) is reported here. */
static fu_py_expr *parse_expr(parser *p) {
  if (at(p, "lambda") || at(p, "not") || at(p, "await") || at(p, "yield")) {
    char kw[16];
    snprintf(kw, sizeof kw, "%.*s", (int)cur(p)->len, cur(p)->text);
    unsupported(p, cur(p)->loc, kw);
    return NULL;
  }
  if (!enter(p)) return NULL;
  fu_py_expr *e = parse_sum(p);
  p->depth--;
  if (!e) return NULL;
  static const char *const trailing[] = {
      "if", "and", "or", "in", "is", "not", "<", ">", "==", "!=", "<=", ">=", "&", "|", "^", "<<", ">>", "@", ":="};
  for (size_t i = 0; i < sizeof trailing / sizeof trailing[0]; i++)
    if (at(p, trailing[i])) {
      unsupported(p, cur(p)->loc, trailing[i]);
      return NULL;
    }
  return e;
}

/* expr (',' expr)* [','] as a bare tuple when there is a comma. */
static fu_py_expr *parse_expr_list(parser *p) {
  fu_loc loc = cur(p)->loc;
  fu_py_expr *first = parse_expr(p);
  if (!first || !at(p, ",")) return first;
  ptrvec items = {0};
  if (!vec_push(p, &items, first)) return NULL;
  while (accept(p, ",")) {
    if (at(p, "=") || cur(p)->kind == FU_PY_TOK_NEWLINE || at(p, ";")) break;
    fu_py_expr *e = parse_expr(p);
    if (!e || !vec_push(p, &items, e)) return NULL;
  }
  fu_py_expr *t = new_expr(p, FU_PY_E_TUPLE, loc);
  if (t) {
    t->u.list.items = (fu_py_expr **)items.v;
    t->u.list.n = items.n;
  }
  return t;
}

/* ---- statements ------------------------------------------------------- */

static bool parse_statement(parser *p, ptrvec *out);

static fu_py_stmt *new_stmt(parser *p, fu_py_stmt_kind kind, fu_loc loc) {
  fu_py_stmt *s = alloc(p, sizeof *s);
  if (s) {
    s->kind = kind;
    s->loc = loc;
  }
  return s;
}

static bool end_simple(parser *p) {
  if (accept(p, ";")) return true;
  if (cur(p)->kind == FU_PY_TOK_NEWLINE) {
    advance(p);
    return true;
  }
  if (cur(p)->kind == FU_PY_TOK_EOF) return true;
  error_expected(p, "end of line");
  return false;
}

/* The body of a compound statement: statements on the same line after the
 * colon, or an indented block. */
static bool parse_suite(parser *p, fu_py_block *body) {
  if (!expect(p, ":")) return false;
  ptrvec stmts = {0};
  if (cur(p)->kind == FU_PY_TOK_NEWLINE) {
    advance(p);
    if (cur(p)->kind != FU_PY_TOK_INDENT) {
      error_expected(p, "an indented block");
      return false;
    }
    advance(p);
    while (cur(p)->kind != FU_PY_TOK_DEDENT && cur(p)->kind != FU_PY_TOK_EOF)
      if (!parse_statement(p, &stmts)) return false;
    if (cur(p)->kind == FU_PY_TOK_DEDENT) advance(p);
  } else {
    size_t line = cur(p)->loc.line;
    do {
      if (!parse_statement(p, &stmts)) return false;
    } while (cur(p)->kind != FU_PY_TOK_EOF && p->pos > 0 && p->t[p->pos - 1].kind != FU_PY_TOK_NEWLINE &&
             cur(p)->loc.line == line);
  }
  body->v = (fu_py_stmt **)stmts.v;
  body->n = stmts.n;
  return true;
}

/* def NAME(fd [: annotation]) [-> annotation]: suite */
static bool parse_def(parser *p, ptrvec *out) {
  fu_py_stmt *s = new_stmt(p, FU_PY_S_DEF, cur(p)->loc);
  if (!s) return false;
  advance(p);
  if (cur(p)->kind != FU_PY_TOK_NAME || is_keyword(cur(p))) {
    error_expected(p, "a function name");
    return false;
  }
  if (!(s->u.def.name = tok_strdup(p, cur(p)))) return false;
  advance(p);
  if (!expect(p, "(")) return false;
  if (cur(p)->kind != FU_PY_TOK_NAME || is_keyword(cur(p))) {
    if (at(p, "*") || at(p, "**")) {
      unsupported(p, cur(p)->loc, at(p, "*") ? "*args" : "**kwargs");
      return false;
    }
    error_expected(p, "a parameter name");
    return false;
  }
  s->u.def.param_loc = cur(p)->loc;
  if (!(s->u.def.param = tok_strdup(p, cur(p)))) return false;
  advance(p);
  if (accept(p, ":") && !parse_expr(p)) return false; /* annotation, ignored */
  if (at(p, "=")) {
    unsupported(p, cur(p)->loc, "default argument");
    return false;
  }
  if (accept(p, ",") && !at(p, ")")) {
    fu_error(p->diag, cur(p)->loc, "a fusion definition takes exactly one parameter ('%s')", s->u.def.param);
    return false;
  }
  if (!expect(p, ")")) return false;
  if (accept(p, "->") && !parse_expr(p)) return false; /* return annotation, ignored */
  if (!parse_suite(p, &s->u.def.body)) return false;
  return vec_push(p, out, s);
}

/* with EXPR [as NAME]: suite */
static bool parse_with(parser *p, ptrvec *out) {
  fu_py_stmt *s = new_stmt(p, FU_PY_S_WITH, cur(p)->loc);
  if (!s) return false;
  advance(p);
  if (!(s->u.with.context = parse_expr(p))) return false;
  if (accept(p, "as")) {
    if (cur(p)->kind != FU_PY_TOK_NAME || is_keyword(cur(p))) {
      error_expected(p, "a name after 'as'");
      return false;
    }
    if (!(s->u.with.as_name = tok_strdup(p, cur(p)))) return false;
    advance(p);
  }
  if (at(p, ",")) {
    unsupported(p, cur(p)->loc, "with statement with several items");
    return false;
  }
  if (!parse_suite(p, &s->u.with.body)) return false;
  return vec_push(p, out, s);
}

/* for NAME in EXPR: suite */
static bool parse_for(parser *p, ptrvec *out) {
  fu_py_stmt *s = new_stmt(p, FU_PY_S_FOR, cur(p)->loc);
  if (!s) return false;
  advance(p);
  if (cur(p)->kind != FU_PY_TOK_NAME || is_keyword(cur(p))) {
    error_expected(p, "a loop variable");
    return false;
  }
  if (!(s->u.for_.target = tok_strdup(p, cur(p)))) return false;
  advance(p);
  if (at(p, ",")) {
    unsupported(p, cur(p)->loc, "tuple loop target");
    return false;
  }
  if (!expect(p, "in")) return false;
  if (!(s->u.for_.iter = parse_expr(p))) return false;
  if (!parse_suite(p, &s->u.for_.body)) return false;
  return vec_push(p, out, s);
}

/* import a.b as c, d / from a.b import (c, d): the contents do not matter
 * to the importer, so the tokens are skipped to the end of the line. */
static bool parse_import(parser *p, ptrvec *out) {
  fu_py_stmt *s = new_stmt(p, FU_PY_S_IMPORT, cur(p)->loc);
  if (!s) return false;
  advance(p);
  if (cur(p)->kind != FU_PY_TOK_NAME && !at(p, ".")) {
    error_expected(p, "a module name");
    return false;
  }
  while (cur(p)->kind != FU_PY_TOK_NEWLINE && cur(p)->kind != FU_PY_TOK_EOF && !at(p, ";")) advance(p);
  if (!end_simple(p)) return false;
  return vec_push(p, out, s);
}

static bool is_target(const fu_py_expr *e) {
  if (e->kind == FU_PY_E_NAME) return true;
  if (e->kind != FU_PY_E_TUPLE && e->kind != FU_PY_E_LIST) return false;
  for (uint32_t i = 0; i < e->u.list.n; i++)
    if (e->u.list.items[i]->kind != FU_PY_E_NAME) return false;
  return e->u.list.n > 0;
}

/* An expression statement or an assignment to names. */
static bool parse_simple(parser *p, ptrvec *out) {
  fu_loc loc = cur(p)->loc;
  fu_py_expr *e = parse_expr_list(p);
  if (!e) return false;
  static const char *const aug[] = {"+=", "-=", "*=", "/=", "//=", "%=", "**=", "&=", "|=", "^=", ">>=", "<<=", "@="};
  for (size_t i = 0; i < sizeof aug / sizeof aug[0]; i++)
    if (at(p, aug[i])) {
      unsupported(p, cur(p)->loc, aug[i]);
      return false;
    }
  if (at(p, ":")) {
    unsupported(p, cur(p)->loc, "annotated assignment");
    return false;
  }
  if (!at(p, "=")) {
    fu_py_stmt *s = new_stmt(p, FU_PY_S_EXPR, loc);
    if (!s) return false;
    s->u.expr = e;
    return end_simple(p) && vec_push(p, out, s);
  }
  if (!is_target(e)) {
    fu_error(p->diag, e->loc, "cannot assign to this expression");
    return false;
  }
  advance(p);
  fu_py_stmt *s = new_stmt(p, FU_PY_S_ASSIGN, loc);
  if (!s) return false;
  if (e->kind == FU_PY_E_NAME) {
    fu_py_expr **t = alloc(p, sizeof *t);
    if (!t) return false;
    t[0] = e;
    s->u.assign.targets = t;
    s->u.assign.n_targets = 1;
  } else {
    s->u.assign.targets = e->u.list.items;
    s->u.assign.n_targets = e->u.list.n;
  }
  if (!(s->u.assign.value = parse_expr_list(p))) return false;
  if (at(p, "=")) {
    unsupported(p, cur(p)->loc, "chained assignment");
    return false;
  }
  return end_simple(p) && vec_push(p, out, s);
}

static bool parse_statement(parser *p, ptrvec *out) {
  const fu_py_token *tok = cur(p);
  if (tok->kind == FU_PY_TOK_INDENT) {
    fu_error(p->diag, tok->loc, "unexpected indent");
    return false;
  }
  if (tok->kind == FU_PY_TOK_NAME) {
    if (fu_py_tok_is(tok, "def")) return parse_def(p, out);
    if (fu_py_tok_is(tok, "with")) return parse_with(p, out);
    if (fu_py_tok_is(tok, "for")) return parse_for(p, out);
    if (fu_py_tok_is(tok, "import") || fu_py_tok_is(tok, "from")) return parse_import(p, out);
    if (fu_py_tok_is(tok, "pass")) {
      fu_py_stmt *s = new_stmt(p, FU_PY_S_PASS, tok->loc);
      advance(p);
      return s && end_simple(p) && vec_push(p, out, s);
    }
    if (is_keyword(tok) && !fu_py_tok_is(tok, "True") && !fu_py_tok_is(tok, "False") && !fu_py_tok_is(tok, "None")) {
      char kw[32];
      snprintf(kw, sizeof kw, "%.*s", (int)tok->len, tok->text);
      unsupported(p, tok->loc, kw);
      return false;
    }
  }
  if (fu_py_tok_is(tok, "@")) {
    unsupported(p, tok->loc, "decorator");
    return false;
  }
  return parse_simple(p, out);
}

fu_status fu_py_parse(const fu_source *src, fu_allocator alloc_, fu_diag_engine *diag, fu_py_script **out) {
  *out = NULL;
  fu_py_tokens toks;
  fu_status st = fu_py_tokenize(src, alloc_, diag, &toks);
  if (st != FU_OK) return st;
  fu_arena *arena = fu_arena_new(alloc_);
  fu_py_script *script = arena ? fu_arena_alloc(arena, sizeof *script) : NULL;
  if (!script) {
    fu_arena_free(arena);
    fu_py_tokens_free(&toks);
    fu_error(diag, fu_loc_none(), "out of memory while parsing");
    return FU_ERR_NOMEM;
  }
  script->arena = arena;
  script->src = src;
  parser p = {toks.v, toks.n, 0, arena, diag, 0, false};
  ptrvec stmts = {0};
  bool ok = true;
  while (ok && cur(&p)->kind != FU_PY_TOK_EOF) {
    if (cur(&p)->kind == FU_PY_TOK_DEDENT || cur(&p)->kind == FU_PY_TOK_NEWLINE) {
      advance(&p);
      continue;
    }
    ok = parse_statement(&p, &stmts);
  }
  fu_py_tokens_free(&toks);
  if (!ok) {
    fu_arena_free(arena);
    return p.nomem ? FU_ERR_NOMEM : FU_ERR_PARSE;
  }
  script->body.v = (fu_py_stmt **)stmts.v;
  script->body.n = stmts.n;
  *out = script;
  return FU_OK;
}

void fu_py_script_free(fu_py_script *s) {
  if (s) fu_arena_free(s->arena);
}
