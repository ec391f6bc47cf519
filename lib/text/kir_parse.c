/* fuser: the kernel IR parser (grammar in docs/ir.md, "Kernel IR").
 *
 * A small self-contained lexer and a recursive-descent parser.  The parser
 * checks syntax and names (every value defined once, before its use) and
 * leaves the typing rules to fu_kernel_verify, which it runs with a locator
 * so those errors point at the offending line too. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuser/kir_text.h"

/* ---- lexer ------------------------------------------------------------------ */

typedef enum tok_kind {
  T_EOF,
  T_IDENT, /* kernel, f32, ceil_div, load.v4, thread_idx.x */
  T_VALUE, /* %name (text without '%') */
  T_AT,    /* @name (text without '@') */
  T_INT,
  T_FLOAT,
  T_PUNCT, /* ( ) [ ] { } , : = */
  T_ERROR,
} tok_kind;

typedef struct token {
  tok_kind kind;
  const char *text; /* name text for VALUE/AT, else the token */
  size_t len;
  fu_loc loc;
  size_t end; /* byte offset just past the token */
  int64_t ival;
  double fval;
  bool int_overflow;
} token;

typedef struct lexer {
  const fu_source *src;
  size_t pos;
  uint32_t line, col;
} lexer;

static bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '$';
}
static bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9') || c == '.'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static char lx_peek(const lexer *lx, size_t k) {
  return lx->pos + k < lx->src->len ? lx->src->text[lx->pos + k] : '\0';
}

static void lx_advance(lexer *lx, size_t n) {
  for (size_t i = 0; i < n && lx->pos < lx->src->len; i++) {
    if (lx->src->text[lx->pos] == '\n') {
      lx->line++;
      lx->col = 1;
    } else {
      lx->col++;
    }
    lx->pos++;
  }
}

static void lx_skip_space(lexer *lx) {
  for (;;) {
    char c = lx_peek(lx, 0);
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      lx_advance(lx, 1);
    } else if (c == '/' && lx_peek(lx, 1) == '/') {
      while (lx->pos < lx->src->len && lx_peek(lx, 0) != '\n') lx_advance(lx, 1);
    } else {
      return;
    }
  }
}

/* Numbers follow docs/ir.md: `-?[0-9]+` for integers, with a '.' or an
 * exponent for floats; `inf`, `-inf` and `nan` are floats too. */
static void lx_number(lexer *lx, token *t) {
  const char *s = lx->src->text + lx->pos;
  size_t n = 0, avail = lx->src->len - lx->pos;
  bool is_float = false;
  if (n < avail && s[n] == '-') n++;
  while (n < avail && is_digit(s[n])) n++;
  if (n < avail && s[n] == '.') {
    is_float = true;
    n++;
    while (n < avail && is_digit(s[n])) n++;
  }
  if (n < avail && (s[n] == 'e' || s[n] == 'E')) {
    size_t m = n + 1;
    if (m < avail && (s[m] == '+' || s[m] == '-')) m++;
    if (m < avail && is_digit(s[m])) {
      is_float = true;
      n = m;
      while (n < avail && is_digit(s[n])) n++;
    }
  }
  char buf[128];
  size_t copy = n < sizeof buf - 1 ? n : sizeof buf - 1;
  memcpy(buf, s, copy);
  buf[copy] = '\0';
  t->len = n;
  if (is_float) {
    t->kind = T_FLOAT;
    t->fval = strtod(buf, NULL);
  } else {
    t->kind = T_INT;
    errno = 0;
    t->ival = strtoll(buf, NULL, 10);
    t->int_overflow = errno == ERANGE || n >= sizeof buf - 1;
  }
}

static token lx_next(lexer *lx) {
  lx_skip_space(lx);
  token t;
  memset(&t, 0, sizeof t);
  t.loc.src = lx->src;
  t.loc.line = lx->line;
  t.loc.col = lx->col;
  t.text = lx->src->text + lx->pos;
  char c = lx_peek(lx, 0);
  if (lx->pos >= lx->src->len) {
    t.kind = T_EOF;
  } else if (c == '%' || c == '@') {
    size_t n = 1;
    while (is_name_char(lx_peek(lx, n))) n++;
    t.kind = n == 1 ? T_ERROR : c == '%' ? T_VALUE : T_AT;
    t.text += 1;
    t.len = n - 1;
    lx_advance(lx, n);
    t.end = lx->pos;
    return t;
  } else if (is_digit(c) || (c == '-' && is_digit(lx_peek(lx, 1)))) {
    lx_number(lx, &t);
  } else if (c == '-' && lx_peek(lx, 1) == 'i' && lx_peek(lx, 2) == 'n' && lx_peek(lx, 3) == 'f' &&
             !is_ident_char(lx_peek(lx, 4))) {
    t.kind = T_FLOAT;
    t.fval = -INFINITY;
    t.len = 4;
  } else if (is_ident_start(c)) {
    size_t n = 1;
    while (is_ident_char(lx_peek(lx, n))) n++;
    t.kind = T_IDENT;
    t.len = n;
  } else if (strchr("()[]{},:=", c)) {
    t.kind = T_PUNCT;
    t.len = 1;
  } else {
    t.kind = T_ERROR;
    t.len = 1;
  }
  lx_advance(lx, t.len);
  t.end = lx->pos;
  return t;
}

/* ---- parser state ------------------------------------------------------------- */

typedef struct sym_entry {
  const char *name; /* arena copy */
  fu_kval *val;
  fu_loc loc;
} sym_entry;

typedef struct inst_loc {
  const fu_kinst *inst;
  fu_loc loc;
} inst_loc;

typedef struct kparser {
  lexer lx;
  token tok;
  fu_module *m;
  fu_diag_engine *diag;
  fu_allocator alloc;
  fu_fusion *scope;
  fu_kernel *k;
  fu_loc kernel_loc;
  sym_entry *syms; /* open addressing, per kernel */
  size_t syms_cap, syms_n;
  inst_loc *locs;
  size_t locs_cap, locs_n;
  unsigned depth;
  bool failed;
  bool nomem;
} kparser;

enum { MAX_DEPTH = 200 };

static void perr(kparser *p, fu_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Only the first error is reported: after it the parser unwinds. */
static void perr(kparser *p, fu_loc loc, const char *fmt, ...) {
  if (p->failed) return;
  p->failed = true;
  va_list ap;
  va_start(ap, fmt);
  fu_diag_vreport(p->diag, FU_SEV_ERROR, loc, fmt, ap);
  va_end(ap);
}

static bool oom(kparser *p) {
  if (!p->failed) fu_error(p->diag, p->tok.loc, "out of memory");
  p->failed = true;
  p->nomem = true;
  return false;
}

static void next(kparser *p) { p->tok = lx_next(&p->lx); }

static bool tok_is(const kparser *p, tok_kind k, const char *text) {
  if (p->tok.kind != k) return false;
  if (!text) return true;
  return strlen(text) == p->tok.len && memcmp(p->tok.text, text, p->tok.len) == 0;
}
static bool word_is(const token *t, const char *w) {
  return t->kind == T_IDENT && strlen(w) == t->len && memcmp(t->text, w, t->len) == 0;
}
static bool is_punct(const kparser *p, char c) { return p->tok.kind == T_PUNCT && p->tok.text[0] == c; }

static const char *tok_desc(const token *t, char *buf, size_t n) {
  switch (t->kind) {
  case T_EOF: return "end of input";
  case T_ERROR: snprintf(buf, n, "unexpected character '%.*s'", (int)(t->len ? 1 : 0), t->text); return buf;
  case T_VALUE: snprintf(buf, n, "'%%%.*s'", (int)(t->len > 60 ? 60 : t->len), t->text); return buf;
  case T_AT: snprintf(buf, n, "'@%.*s'", (int)(t->len > 60 ? 60 : t->len), t->text); return buf;
  default: snprintf(buf, n, "'%.*s'", (int)(t->len > 60 ? 60 : t->len), t->text); return buf;
  }
}

static bool expected(kparser *p, const char *what) {
  char buf[96];
  perr(p, p->tok.loc, "expected %s, got %s", what, tok_desc(&p->tok, buf, sizeof buf));
  return false;
}

static bool expect_punct(kparser *p, char c) {
  if (!is_punct(p, c)) {
    char what[8] = {'\'', c, '\'', 0};
    return expected(p, what);
  }
  next(p);
  return true;
}

static bool expect_word(kparser *p, const char *w) {
  if (!tok_is(p, T_IDENT, w)) {
    char what[40];
    snprintf(what, sizeof what, "'%s'", w);
    return expected(p, what);
  }
  next(p);
  return true;
}

static bool parse_dtype(kparser *p, fu_dtype *out) {
  fu_dtype t = p->tok.kind == T_IDENT ? fu_dtype_from_name(p->tok.text, p->tok.len) : FU_DT_NONE;
  if (t == FU_DT_NONE) return expected(p, "a dtype (f64, f32, f16, bf16, i64, i32, bool)");
  *out = t;
  next(p);
  return true;
}

static bool parse_int(kparser *p, int64_t lo, int64_t hi, const char *what, int64_t *out) {
  if (p->tok.kind != T_INT) return expected(p, what);
  if (p->tok.int_overflow || p->tok.ival < lo || p->tok.ival > hi) {
    perr(p, p->tok.loc, "%s %.*s is out of range [%lld, %lld]", what, (int)p->tok.len, p->tok.text, (long long)lo,
         (long long)hi);
    return false;
  }
  *out = p->tok.ival;
  next(p);
  return true;
}

/* ---- the symbol table: one flat namespace of values per kernel ---------------- */

static uint64_t hash_name(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

static sym_entry *sym_find(kparser *p, const char *s, size_t n) {
  if (!p->syms_cap) return NULL;
  for (size_t j = hash_name(s, n) & (p->syms_cap - 1); p->syms[j].name; j = (j + 1) & (p->syms_cap - 1))
    if (strncmp(p->syms[j].name, s, n) == 0 && p->syms[j].name[n] == '\0') return &p->syms[j];
  return NULL;
}

static bool sym_add(kparser *p, fu_kval *v, fu_loc loc) {
  if ((p->syms_n + 1) * 2 > p->syms_cap) {
    size_t cap = p->syms_cap ? p->syms_cap * 2 : 64;
    sym_entry *ns = fu_mem_calloc(&p->alloc, cap, sizeof *ns);
    if (!ns) return oom(p);
    for (size_t i = 0; i < p->syms_cap; i++) {
      if (!p->syms[i].name) continue;
      size_t j = hash_name(p->syms[i].name, strlen(p->syms[i].name)) & (cap - 1);
      while (ns[j].name) j = (j + 1) & (cap - 1);
      ns[j] = p->syms[i];
    }
    fu_mem_free(&p->alloc, p->syms, p->syms_cap * sizeof *p->syms);
    p->syms = ns;
    p->syms_cap = cap;
  }
  size_t j = hash_name(v->name, strlen(v->name)) & (p->syms_cap - 1);
  while (p->syms[j].name) j = (j + 1) & (p->syms_cap - 1);
  p->syms[j].name = v->name;
  p->syms[j].val = v;
  p->syms[j].loc = loc;
  p->syms_n++;
  return true;
}

/* A new value named by the current VALUE token; names are unique per kernel. */
static fu_kval *define_value(kparser *p, fu_kval_kind kind, fu_dtype dtype) {
  if (p->tok.kind != T_VALUE) {
    expected(p, "a value name");
    return NULL;
  }
  sym_entry *prev = sym_find(p, p->tok.text, p->tok.len);
  if (prev) {
    perr(p, p->tok.loc, "redefinition of '%%%.*s'", (int)p->tok.len, p->tok.text);
    fu_note(p->diag, prev->loc, "previous definition is here");
    return NULL;
  }
  char *name = fu_arena_strndup(p->m->arena, p->tok.text, p->tok.len);
  fu_kval *v = name ? fu_kval_new(p->m, p->k, kind, NULL, dtype) : NULL;
  if (!v) {
    oom(p);
    return NULL;
  }
  v->name = name;
  if (!sym_add(p, v, p->tok.loc)) return NULL;
  next(p);
  return v;
}

static fu_kval *use_value(kparser *p) {
  if (p->tok.kind != T_VALUE) {
    expected(p, "a value");
    return NULL;
  }
  sym_entry *e = sym_find(p, p->tok.text, p->tok.len);
  if (!e) {
    perr(p, p->tok.loc, "use of undefined value '%%%.*s'", (int)p->tok.len, p->tok.text);
    return NULL;
  }
  next(p);
  return e->val;
}

static bool record_loc(kparser *p, const fu_kinst *in, fu_loc loc) {
  if (p->locs_n == p->locs_cap) {
    size_t cap = p->locs_cap ? p->locs_cap * 2 : 64;
    inst_loc *nl = fu_mem_realloc(&p->alloc, p->locs, p->locs_cap * sizeof *nl, cap * sizeof *nl);
    if (!nl) return oom(p);
    p->locs = nl;
    p->locs_cap = cap;
  }
  p->locs[p->locs_n].inst = in;
  p->locs[p->locs_n].loc = loc;
  p->locs_n++;
  return true;
}

static fu_loc locate_inst(void *user, const fu_kinst *in) {
  kparser *p = user;
  for (size_t i = 0; i < p->locs_n; i++)
    if (p->locs[i].inst == in) return p->locs[i].loc;
  return fu_loc_none();
}

static fu_loc locate_kernel(void *user, const fu_kernel *k) {
  kparser *p = user;
  return k == p->k ? p->kernel_loc : fu_loc_none();
}

/* Appends `in` to `b` and remembers where it was written. */
static bool append(kparser *p, fu_kblock *b, fu_kinst *in, fu_loc loc) {
  if (!in) return oom(p);
  fu_kblock_append(b, in);
  return record_loc(p, in, loc);
}

/* ---- launch expressions ----------------------------------------------------------- */

static fu_lexpr *parse_lexpr(kparser *p, unsigned depth) {
  if (depth > MAX_DEPTH) {
    perr(p, p->tok.loc, "launch expression nests too deeply");
    return NULL;
  }
  fu_lexpr *e = NULL;
  if (p->tok.kind == T_INT) {
    int64_t v = 0;
    if (!parse_int(p, INT64_MIN, INT64_MAX, "integer", &v)) return NULL;
    if (!(e = fu_lexpr_const(p->m, v))) oom(p);
    return e;
  }
  if (p->tok.kind != T_IDENT) {
    expected(p, "a launch expression");
    return NULL;
  }
  token name = p->tok;
  next(p);
  if (!is_punct(p, '(')) {
    const char *sym = fu_module_intern(p->m, name.text, name.len);
    if (!sym || !(e = fu_lexpr_sym(p->m, sym))) oom(p);
    return e;
  }
  static const struct {
    const char *name;
    fu_lexpr_kind kind;
  } fns[] = {{"mul", FU_LX_MUL}, {"add", FU_LX_ADD}, {"ceil_div", FU_LX_CEIL_DIV}, {"min", FU_LX_MIN}, {"max", FU_LX_MAX}};
  int found = -1;
  for (int i = 0; i < 5; i++)
    if (strlen(fns[i].name) == name.len && memcmp(fns[i].name, name.text, name.len) == 0) found = i;
  if (found < 0) {
    perr(p, name.loc, "unknown launch function '%.*s' (expected mul, add, ceil_div, min or max)", (int)name.len,
         name.text);
    return NULL;
  }
  next(p);
  fu_lexpr *a = parse_lexpr(p, depth + 1);
  if (!a || !expect_punct(p, ',')) return NULL;
  fu_lexpr *b = parse_lexpr(p, depth + 1);
  if (!b || !expect_punct(p, ')')) return NULL;
  if (!(e = fu_lexpr_binary(p->m, fns[found].kind, a, b))) oom(p);
  return e;
}

/* ---- parameters ---------------------------------------------------------------------- */

/* The fusion value named `name`, searching inputs and every op (segment
 * bodies included). */
static fu_value *find_fusion_value(fu_fusion *f, const char *name, size_t len) {
  for (fu_op *op = fu_walk_first(&f->body); op; op = fu_walk_next(op))
    for (uint32_t i = 0; i < op->n_results; i++) {
      fu_value *v = op->results[i];
      if (v->name && strlen(v->name) == len && memcmp(v->name, name, len) == 0) return v;
    }
  return NULL;
}

/* A value of no fusion that carries a parameter's binding when there is no
 * scope to resolve it in. */
static fu_value *placeholder(kparser *p, const char *name, size_t len, fu_dtype dt, int32_t rank,
                             const fu_extent *dims) {
  fu_value *v = fu_arena_alloc(p->m->arena, sizeof *v);
  if (!v || !(v->name = fu_arena_strndup(p->m->arena, name, len))) {
    oom(p);
    return NULL;
  }
  v->type.dtype = dt;
  v->type.rank = rank;
  if (rank > 0 && !(v->type.dims = fu_dims_copy(p->m, dims, rank))) {
    oom(p);
    return NULL;
  }
  return v;
}

static bool parse_shape(kparser *p, fu_extent *dims, int32_t *rank) {
  if (!expect_punct(p, '[')) return false;
  *rank = 0;
  while (!is_punct(p, ']')) {
    if (*rank && !expect_punct(p, ',')) return false;
    if (*rank >= FU_MAX_RANK) {
      perr(p, p->tok.loc, "more than %d dimensions", FU_MAX_RANK);
      return false;
    }
    fu_extent *e = &dims[(*rank)++];
    e->sym = NULL;
    e->value = 0;
    if (p->tok.kind == T_IDENT) {
      if (!(e->sym = fu_module_intern(p->m, p->tok.text, p->tok.len))) return oom(p);
      next(p);
    } else if (!parse_int(p, 0, INT64_MAX, "an extent", &e->value)) {
      return false;
    }
  }
  next(p);
  return true;
}

/* `align = INT`, a power of two. */
static bool parse_align(kparser *p, fu_kval *v) {
  next(p);
  int64_t a = 0;
  if (!expect_punct(p, '=')) return false;
  fu_loc aloc = p->tok.loc;
  if (!parse_int(p, 1, 1 << 20, "alignment", &a)) return false;
  if (a & (a - 1)) {
    perr(p, aloc, "alignment %lld is not a power of two", (long long)a);
    return false;
  }
  v->align = (uint32_t)a;
  return true;
}

/* The attributes after a tensor or workspace parameter's type, in any
 * order: `noalias`, `align=N`, and `readonly`, `stream`, `bind=%V`,
 * `alias=%P` (an earlier tensor parameter) for a tensor or `zeroed` and `error` for a
 * workspace. */
static bool parse_param_attrs(kparser *p, fu_kval *v, bool workspace, token *bind, bool *has_bind, bool *has_align) {
  for (;;) {
    if (!workspace && tok_is(p, T_IDENT, "readonly")) {
      v->readonly = true;
      next(p);
    } else if (!workspace && tok_is(p, T_IDENT, "stream")) {
      v->stream = true;
      next(p);
    } else if (workspace && tok_is(p, T_IDENT, "zeroed")) {
      v->ws_zeroed = true;
      next(p);
    } else if (workspace && tok_is(p, T_IDENT, "error")) {
      v->ws_error = true;
      next(p);
    } else if (tok_is(p, T_IDENT, "noalias")) {
      v->noalias = true;
      next(p);
    } else if (tok_is(p, T_IDENT, "align")) {
      if (!parse_align(p, v)) return false;
      *has_align = true;
    } else if (!workspace && tok_is(p, T_IDENT, "alias")) {
      next(p);
      if (!expect_punct(p, '=')) return false;
      if (!(v->alias_of = use_value(p))) return false;
    } else if (!workspace && tok_is(p, T_IDENT, "bind")) {
      next(p);
      if (!expect_punct(p, '=')) return false;
      if (p->tok.kind != T_VALUE) return expected(p, "the bound fusion value");
      *bind = p->tok;
      *has_bind = true;
      next(p);
    } else {
      return true;
    }
  }
}

/* `workspace DTYPE [lexpr] attrs` after the ':'. */
static bool parse_workspace_param(kparser *p, fu_kval *v) {
  if (!parse_dtype(p, &v->dtype) || !expect_punct(p, '[')) return false;
  if (!(v->ws_size = parse_lexpr(p, 0)) || !expect_punct(p, ']')) return false;
  bool has_align = false, has_bind = false;
  token none;
  if (!parse_param_attrs(p, v, true, &none, &has_bind, &has_align)) return false;
  if (!has_align) v->align = (uint32_t)fu_dtype_size(v->dtype);
  return true;
}

static bool parse_tensor_param(kparser *p, fu_kval *v, fu_loc ploc) {
  fu_dtype dt = FU_DT_NONE;
  if (!parse_dtype(p, &dt)) return false;
  v->dtype = dt;
  fu_extent dims[FU_MAX_RANK];
  int32_t rank = -1;
  fu_loc shape_loc = p->tok.loc;
  if (is_punct(p, '[') && !parse_shape(p, dims, &rank)) return false;
  token bind;
  memset(&bind, 0, sizeof bind);
  bool has_bind = false, has_align = false;
  if (!parse_param_attrs(p, v, false, &bind, &has_bind, &has_align)) return false;
  if (!has_align) v->align = (uint32_t)fu_dtype_size(dt);
  const char *bname = has_bind ? bind.text : v->name;
  size_t blen = has_bind ? bind.len : strlen(v->name);
  fu_loc bloc = has_bind ? bind.loc : ploc;
  if (p->scope) {
    fu_value *fv = find_fusion_value(p->scope, bname, blen);
    if (!fv || !fu_type_is_tensor(&fv->type)) {
      perr(p, bloc, "no tensor '%%%.*s' in fusion '@%s'", (int)blen, bname, p->scope->name ? p->scope->name : "?");
      return false;
    }
    if (fv->type.dtype != dt) {
      perr(p, ploc, "parameter is %s but tensor '%%%s' is %s", fu_dtype_name(dt), fv->name,
           fu_dtype_name(fv->type.dtype));
      return false;
    }
    if (rank >= 0) {
      fu_type t = {dt, rank, dims};
      if (!fu_type_equal(&t, &fv->type)) {
        perr(p, shape_loc, "shape does not match tensor '%%%s'", fv->name);
        return false;
      }
    }
    v->tensor = fv;
  } else if (rank >= 0 || has_bind) {
    if (!(v->tensor = placeholder(p, bname, blen, dt, rank, dims))) return false;
  }
  return true;
}

static bool parse_scalar_param(kparser *p, fu_kval *v) {
  if (!parse_dtype(p, &v->dtype)) return false;
  if (tok_is(p, T_IDENT, "extent")) {
    next(p);
    if (!expect_punct(p, '=')) return false;
    if (p->tok.kind != T_IDENT) return expected(p, "an extent symbol");
    if (!(v->sym = fu_module_intern(p->m, p->tok.text, p->tok.len))) return oom(p);
    v->role = FU_KP_EXTENT;
    next(p);
  } else if (tok_is(p, T_IDENT, "stride")) {
    next(p);
    if (!expect_punct(p, '=')) return false;
    fu_loc tloc = p->tok.loc;
    fu_kval *t = use_value(p);
    if (!t) return false;
    if (t->kind != FU_KV_TENSOR_PARAM) {
      perr(p, tloc, "'%%%s' is not a tensor parameter", t->name);
      return false;
    }
    int64_t dim = 0;
    if (!expect_word(p, "dim") || !expect_punct(p, '=') || !parse_int(p, 0, FU_MAX_RANK - 1, "dim", &dim))
      return false;
    v->role = FU_KP_STRIDE;
    v->stride_of = t;
    v->dim = (int32_t)dim;
  } else if (tok_is(p, T_IDENT, "input")) {
    next(p);
    if (!expect_punct(p, '=')) return false;
    if (p->tok.kind != T_VALUE) return expected(p, "the fusion scalar input");
    token in = p->tok;
    next(p);
    v->role = FU_KP_SCALAR_INPUT;
    if (p->scope) {
      fu_value *fv = find_fusion_value(p->scope, in.text, in.len);
      if (!fv || !fu_type_is_scalar(&fv->type)) {
        perr(p, in.loc, "no scalar '%%%.*s' in fusion '@%s'", (int)in.len, in.text,
             p->scope->name ? p->scope->name : "?");
        return false;
      }
      v->scalar = fv;
    } else if (!(v->scalar = placeholder(p, in.text, in.len, v->dtype, FU_SCALAR_RANK, NULL))) {
      return false;
    }
  }
  return true;
}

static bool parse_param(kparser *p) {
  fu_loc ploc = p->tok.loc;
  bool tensor = false;
  /* The kind is known only after the ':'; define first, fix the kind after. */
  fu_kval *v = define_value(p, FU_KV_SCALAR_PARAM, FU_DT_NONE);
  if (!v || !expect_punct(p, ':')) return false;
  if (tok_is(p, T_IDENT, "global")) {
    next(p);
    tensor = true;
    v->kind = FU_KV_TENSOR_PARAM;
    v->space = FU_MEM_GLOBAL;
    if (!parse_tensor_param(p, v, ploc)) return false;
  } else if (tok_is(p, T_IDENT, "workspace")) {
    next(p);
    v->kind = FU_KV_TENSOR_PARAM;
    v->space = FU_MEM_GLOBAL;
    if (!parse_workspace_param(p, v)) return false;
  } else if (!parse_scalar_param(p, v)) {
    return false;
  }
  (void)tensor;
  if (fu_kernel_add_param(p->m, p->k, v) != FU_OK) return oom(p);
  return true;
}

/* ---- instructions ------------------------------------------------------------------------ */

static bool parse_block(kparser *p, fu_kblock *b, bool top);

/* `load`, `load.v4`, `store.v8`: the vector width, or 0 when `word` is not
 * the op `base`. */
static uint32_t mem_width(const token *t, const char *base) {
  size_t bl = strlen(base);
  if (t->kind != T_IDENT || t->len < bl || memcmp(t->text, base, bl) != 0) return 0;
  if (t->len == bl) return 1;
  if (t->len < bl + 3 || t->text[bl] != '.' || t->text[bl + 1] != 'v') return 0;
  uint32_t w = 0;
  for (size_t i = bl + 2; i < t->len; i++) {
    if (!is_digit(t->text[i]) || w > 100) return 0;
    w = w * 10 + (uint32_t)(t->text[i] - '0');
  }
  return w;
}

/* `%T0[%i] predicated?` after a load/store op word. */
static bool parse_mem_ref(kparser *p, fu_kval **mem, fu_kval **index, bool *pred) {
  fu_loc mloc = p->tok.loc;
  if (!(*mem = use_value(p))) return false;
  if ((*mem)->kind != FU_KV_TENSOR_PARAM && (*mem)->kind != FU_KV_ARRAY) {
    perr(p, mloc, "'%%%s' is not a tensor parameter or an array", (*mem)->name);
    return false;
  }
  if (!expect_punct(p, '[') || !(*index = use_value(p)) || !expect_punct(p, ']')) return false;
  *pred = false;
  if (tok_is(p, T_IDENT, "predicated")) {
    *pred = true;
    next(p);
  }
  return true;
}

static bool check_width(kparser *p, const token *op, uint32_t w, const char *base) {
  if (w == 0 || (op->len > strlen(base) && w != 2 && w != 4 && w != 8 && w != 16)) {
    perr(p, op->loc, "bad vector width in '%.*s' (expected .v2, .v4, .v8 or .v16)", (int)op->len, op->text);
    return false;
  }
  return true;
}

static bool parse_store(kparser *p, fu_kblock *b, const token *op, uint32_t w) {
  fu_kval *mem, *index;
  bool pred;
  if (!check_width(p, op, w, "store")) return false;
  next(p);
  if (!parse_mem_ref(p, &mem, &index, &pred)) return false;
  fu_kval *args[18] = {mem, index};
  uint32_t n = 0;
  while (is_punct(p, ',')) {
    next(p);
    fu_loc vloc = p->tok.loc;
    fu_kval *x = use_value(p);
    if (!x) return false;
    if (n == w) {
      perr(p, vloc, "'%.*s' stores %u values", (int)op->len, op->text, w);
      return false;
    }
    args[2 + n++] = x;
  }
  if (n != w) {
    perr(p, op->loc, "'%.*s' needs %u values, got %u", (int)op->len, op->text, w, n);
    return false;
  }
  fu_kinst *in = fu_kinst_new(p->m, FU_KI_STORE, args, 2 + w, NULL, 0);
  if (!in) return oom(p);
  in->u.mem.width = w;
  in->u.mem.space = mem->kind == FU_KV_ARRAY ? mem->space : FU_MEM_GLOBAL;
  in->u.mem.predicated_by_parent = pred;
  return append(p, b, in, op->loc);
}

static bool parse_for(kparser *p, fu_kblock *b, fu_loc loc) {
  next(p);
  fu_kval *start, *end, *step;
  fu_kval *iv = define_value(p, FU_KV_LOCAL, FU_DT_NONE);
  if (!iv || !expect_punct(p, '=') || !(start = use_value(p)) || !expect_word(p, "to") || !(end = use_value(p)) ||
      !expect_word(p, "step") || !(step = use_value(p)))
    return false;
  iv->dtype = start->dtype;
  fu_loop_kind kind = FU_LOOP_SERIAL;
  if (tok_is(p, T_IDENT, "unroll")) {
    kind = FU_LOOP_UNROLL;
    next(p);
  } else if (tok_is(p, T_IDENT, "rolled")) {
    kind = FU_LOOP_ROLLED;
    next(p);
  }
  fu_kval *args[3] = {start, end, step};
  fu_kinst *in = fu_kinst_new(p->m, FU_KI_FOR, args, 3, &iv, 1);
  if (!append(p, b, in, loc)) return false;
  in->u.loop.kind = kind;
  return expect_punct(p, '{') && parse_block(p, &in->u.loop.body, false) && expect_punct(p, '}');
}

static bool parse_if(kparser *p, fu_kblock *b, fu_loc loc) {
  next(p);
  fu_kval *cond = use_value(p);
  if (!cond) return false;
  fu_kinst *in = fu_kinst_new(p->m, FU_KI_IF, &cond, 1, NULL, 0);
  if (!append(p, b, in, loc)) return false;
  if (!expect_punct(p, '{') || !parse_block(p, &in->u.branch.then_body, false) || !expect_punct(p, '}')) return false;
  if (!tok_is(p, T_IDENT, "else")) return true;
  next(p);
  return expect_punct(p, '{') && parse_block(p, &in->u.branch.else_body, false) && expect_punct(p, '}');
}

/* `const <literal> : dtype` with the literal checked against the dtype. */
static bool parse_const(kparser *p, fu_kinst *in, fu_kval *r) {
  token lit = p->tok;
  bool is_bool = tok_is(p, T_IDENT, "true") || tok_is(p, T_IDENT, "false");
  bool is_special_float = tok_is(p, T_IDENT, "inf") || tok_is(p, T_IDENT, "nan");
  if (lit.kind != T_INT && lit.kind != T_FLOAT && !is_bool && !is_special_float) return expected(p, "a literal");
  next(p);
  fu_dtype dt = FU_DT_NONE;
  if (!expect_punct(p, ':') || !parse_dtype(p, &dt)) return false;
  r->dtype = dt;
  if (fu_dtype_is_bool(dt)) {
    if (!is_bool) {
      perr(p, lit.loc, "a bool constant is 'true' or 'false'");
      return false;
    }
    in->u.constant.b = lit.text[0] == 't';
  } else if (fu_dtype_is_int(dt)) {
    if (lit.kind != T_INT) {
      perr(p, lit.loc, "an %s constant must be an integer", fu_dtype_name(dt));
      return false;
    }
    bool i32 = dt == FU_DT_I32;
    if (lit.int_overflow || (i32 && (lit.ival < INT32_MIN || lit.ival > INT32_MAX))) {
      perr(p, lit.loc, "constant %.*s does not fit in %s", (int)lit.len, lit.text, fu_dtype_name(dt));
      return false;
    }
    in->u.constant.i = lit.ival;
  } else {
    if (is_bool) {
      perr(p, lit.loc, "a %s constant must be a number", fu_dtype_name(dt));
      return false;
    }
    if (is_special_float)
      in->u.constant.f = lit.text[0] == 'i' ? INFINITY : NAN;
    else
      in->u.constant.f = lit.kind == T_INT ? (double)lit.ival : lit.fval;
  }
  return true;
}

static bool parse_result_type(kparser *p, fu_kval *const *res, uint32_t n) {
  fu_dtype dt = FU_DT_NONE;
  if (!expect_punct(p, ':') || !parse_dtype(p, &dt)) return false;
  for (uint32_t i = 0; i < n; i++) res[i]->dtype = dt;
  return true;
}

/* The rest of `%r = OP %x, INT : dtype` (shfl.xor's lane mask, misalign's
 * modulus, in [lo, hi] into *n): the instruction with its operand and
 * typed result, NULL after an error. */
static fu_kinst *parse_value_int(kparser *p, fu_kinst_kind kind, fu_kval **res, int64_t lo, int64_t hi,
                                 const char *what, uint32_t *n) {
  fu_kval *x = use_value(p);
  int64_t v = 0;
  if (!x || !expect_punct(p, ',') || !parse_int(p, lo, hi, what, &v)) return NULL;
  fu_kinst *in = fu_kinst_new(p->m, kind, &x, 1, res, 1);
  if (!in) {
    oom(p);
    return NULL;
  }
  *n = (uint32_t)v;
  return parse_result_type(p, res, 1) ? in : NULL;
}

/* `%a, %b = <rhs>`, where the right-hand side decides how many results
 * there may be.  Declarations (`mutable`, `array`) also take this form. */
static bool parse_assignment(kparser *p, fu_kblock *b, bool top, fu_loc loc) {
  token names[16];
  uint32_t n = 0;
  for (;;) {
    if (p->tok.kind != T_VALUE) return expected(p, "a value name");
    if (n == 16) {
      perr(p, p->tok.loc, "more than 16 results");
      return false;
    }
    names[n++] = p->tok;
    next(p);
    if (!is_punct(p, ',')) break;
    next(p);
  }
  if (!expect_punct(p, '=')) return false;
  token op = p->tok;
  if (op.kind != T_IDENT) return expected(p, "an instruction");

  /* The names are defined here, after the right-hand side is known to be
   * well formed enough; save and restore the lexer to reuse define_value. */
  lexer after_op = p->lx;
  token optok = p->tok;
  fu_kval *res[16];
  bool is_mutable = tok_is(p, T_IDENT, "mutable"), is_array = tok_is(p, T_IDENT, "array");
  if ((is_mutable || is_array) && n != 1) {
    perr(p, names[1].loc, "'%.*s' declares one value", (int)op.len, op.text);
    return false;
  }
  if ((is_mutable || is_array) && !top) {
    perr(p, op.loc, "'%.*s' declarations must be at the top level of the kernel", (int)op.len, op.text);
    return false;
  }
  fu_kval_kind kind = is_mutable ? FU_KV_MUTABLE : is_array ? FU_KV_ARRAY : FU_KV_LOCAL;
  for (uint32_t i = 0; i < n; i++) {
    p->tok = names[i];
    if (!(res[i] = define_value(p, kind, FU_DT_NONE))) return false;
  }
  p->lx = after_op;
  p->tok = optok;
  next(p); /* past the op word */

  if (is_mutable) return parse_dtype(p, &res[0]->dtype);
  if (is_array) {
    fu_kval *a = res[0];
    if (tok_is(p, T_IDENT, "shared"))
      a->space = FU_MEM_SHARED;
    else if (tok_is(p, T_IDENT, "local"))
      a->space = FU_MEM_LOCAL;
    else
      return expected(p, "'shared' or 'local'");
    next(p);
    if (!parse_dtype(p, &a->dtype) || !expect_punct(p, '[') ||
        !parse_int(p, 1, INT64_MAX / 16, "array length", &a->length) || !expect_punct(p, ']'))
      return false;
    if (!tok_is(p, T_IDENT, "dynamic")) return true;
    /* `dynamic=OFFSET`: in the launch's dynamic shared memory */
    if (a->space != FU_MEM_SHARED) {
      perr(p, p->tok.loc, "only a shared array may be 'dynamic'");
      return false;
    }
    int64_t off = 0;
    next(p);
    if (!expect_punct(p, '=') || !parse_int(p, 0, UINT32_MAX, "dynamic offset", &off)) return false;
    a->dynamic = true;
    a->offset = (uint32_t)off;
    return true;
  }

  uint32_t w;
  fu_kinst *in = NULL;
  if (mem_width(&op, "load") == 0 && !word_is(&op, "opaque") && n != 1) {
    perr(p, names[1].loc, "'%.*s' has one result", (int)op.len, op.text);
    return false;
  }
  if (word_is(&op, "const")) {
    in = fu_kinst_new(p->m, FU_KI_CONST, NULL, 0, res, 1);
    if (!in) return oom(p);
    if (!parse_const(p, in, res[0])) return false;
  } else if (word_is(&op, "special")) {
    fu_special sp = FU_SP_TID_X;
    if (p->tok.kind != T_IDENT || !fu_special_from_name(p->tok.text, p->tok.len, &sp))
      return expected(p, "a special register (thread_idx.x, block_idx.x, block_dim.x, grid_dim.x, ...)");
    next(p);
    in = fu_kinst_new(p->m, FU_KI_SPECIAL, NULL, 0, res, 1);
    if (!in) return oom(p);
    in->u.special = sp;
    if (!parse_result_type(p, res, 1)) return false;
  } else if ((w = mem_width(&op, "load")) != 0) {
    if (!check_width(p, &op, w, "load")) return false;
    if (n != w) {
      perr(p, names[0].loc, "'%.*s' has %u results, got %u", (int)op.len, op.text, w, n);
      return false;
    }
    fu_kval *mem, *index, *rank = NULL;
    bool pred;
    if (!parse_mem_ref(p, &mem, &index, &pred)) return false;
    if (!pred && tok_is(p, T_IDENT, "cta")) {
      /* another block's copy of a shared array: `load %a[%i] cta %rank` */
      next(p);
      if (!(rank = use_value(p))) return false;
      if (tok_is(p, T_IDENT, "predicated")) {
        pred = true;
        next(p);
      }
    }
    fu_kval *args[3] = {mem, index, rank};
    in = fu_kinst_new(p->m, FU_KI_LOAD, args, rank ? 3 : 2, res, n);
    if (!in) return oom(p);
    in->u.mem.width = w;
    in->u.mem.space = mem->kind == FU_KV_ARRAY ? mem->space : FU_MEM_GLOBAL;
    in->u.mem.predicated_by_parent = pred;
    if (!parse_result_type(p, res, n)) return false;
  } else if (word_is(&op, "read")) {
    fu_kval *mut = use_value(p);
    if (!mut) return false;
    in = fu_kinst_new(p->m, FU_KI_READ, &mut, 1, res, 1);
    if (!in) return oom(p);
    if (!parse_result_type(p, res, 1)) return false;
  } else if (word_is(&op, "opaque")) {
    /* `%a, %b = opaque %x, %y : dtype`: one operand per result */
    fu_kval *args[16];
    uint32_t na = 0;
    while (!is_punct(p, ':')) {
      if (na && !expect_punct(p, ',')) return false;
      if (na == n) {
        perr(p, p->tok.loc, "'opaque' has one operand per result (%u)", n);
        return false;
      }
      if (!(args[na++] = use_value(p))) return false;
    }
    if (na != n) {
      perr(p, op.loc, "'opaque' has one operand per result: %u results, %u operands", n, na);
      return false;
    }
    in = fu_kinst_new(p->m, FU_KI_OPAQUE, args, na, res, n);
    if (!in) return oom(p);
    if (!parse_result_type(p, res, n)) return false;
  } else if (word_is(&op, "shfl.xor")) {
    uint32_t mask = 0;
    if (!(in = parse_value_int(p, FU_KI_SHFL_XOR, res, 1, 31, "lane mask", &mask))) return false;
    in->u.shfl_mask = mask;
  } else if (word_is(&op, "misalign")) {
    uint32_t mod = 0;
    if (!(in = parse_value_int(p, FU_KI_MISALIGN, res, 2, 16, "misalign modulus", &mod))) return false;
    in->u.misalign = mod;
  } else if (word_is(&op, "atom.add")) {
    fu_kval *mem, *index, *x;
    bool pred;
    if (!parse_mem_ref(p, &mem, &index, &pred) || !expect_punct(p, ',') || !(x = use_value(p))) return false;
    fu_kval *args[3] = {mem, index, x};
    in = fu_kinst_new(p->m, FU_KI_ATOM_ADD, args, 3, res, 1);
    if (!in) return oom(p);
    in->u.mem.width = 1;
    in->u.mem.space = FU_MEM_GLOBAL;
    in->u.mem.predicated_by_parent = pred;
    if (!parse_result_type(p, res, 1)) return false;
  } else {
    fu_op_kind k = fu_op_kind_from_name(op.text, op.len);
    if (k == FU_OP_COUNT || !fu_op_is_kir_math(k)) {
      perr(p, op.loc, "unknown instruction '%.*s'", (int)op.len, op.text);
      return false;
    }
    fu_kval *args[8];
    uint32_t na = 0;
    while (!is_punct(p, ':')) {
      if (na && !expect_punct(p, ',')) return false;
      if (na == 8) {
        perr(p, p->tok.loc, "too many operands");
        return false;
      }
      if (!(args[na++] = use_value(p))) return false;
    }
    in = fu_kinst_new(p->m, FU_KI_MATH, args, na, res, 1);
    if (!in) return oom(p);
    in->u.math = k;
    if (!parse_result_type(p, res, 1)) return false;
  }
  return append(p, b, in, loc);
}

static bool parse_stmt(kparser *p, fu_kblock *b, bool top) {
  fu_loc loc = p->tok.loc;
  if (p->tok.kind == T_VALUE) return parse_assignment(p, b, top, loc);
  if (p->tok.kind != T_IDENT) return expected(p, "an instruction or '}'");
  token op = p->tok;
  uint32_t w = mem_width(&op, "store");
  if (w) return parse_store(p, b, &op, w);
  if (tok_is(p, T_IDENT, "assign")) {
    next(p);
    fu_kval *args[2];
    if (!(args[0] = use_value(p)) || !expect_punct(p, ',') || !(args[1] = use_value(p))) return false;
    return append(p, b, fu_kinst_new(p->m, FU_KI_ASSIGN, args, 2, NULL, 0), loc);
  }
  if (tok_is(p, T_IDENT, "sync")) {
    next(p);
    fu_kinst *in = fu_kinst_new(p->m, FU_KI_SYNC, NULL, 0, NULL, 0);
    if (in && tok_is(p, T_IDENT, "cluster")) {
      in->u.cluster_sync = true;
      next(p);
    }
    return append(p, b, in, loc);
  }
  if (tok_is(p, T_IDENT, "fence")) {
    next(p);
    fu_fence_scope sc;
    if (tok_is(p, T_IDENT, "gpu"))
      sc = FU_FENCE_GPU;
    else if (tok_is(p, T_IDENT, "block"))
      sc = FU_FENCE_BLOCK;
    else
      return expected(p, "a fence scope ('gpu' or 'block')");
    next(p);
    fu_kinst *in = fu_kinst_new(p->m, FU_KI_FENCE, NULL, 0, NULL, 0);
    if (in) in->u.fence = sc;
    return append(p, b, in, loc);
  }
  if (tok_is(p, T_IDENT, "for")) return parse_for(p, b, loc);
  if (tok_is(p, T_IDENT, "if")) return parse_if(p, b, loc);
  perr(p, loc, "unknown instruction '%.*s'", (int)op.len, op.text);
  return false;
}

static bool parse_block(kparser *p, fu_kblock *b, bool top) {
  if (++p->depth > MAX_DEPTH) {
    perr(p, p->tok.loc, "blocks nest more than %d deep", MAX_DEPTH);
    return false;
  }
  while (!is_punct(p, '}')) {
    if (p->tok.kind == T_EOF) return expected(p, "'}'");
    if (!parse_stmt(p, b, top)) return false;
  }
  p->depth--;
  return true;
}

/* ---- kernels ------------------------------------------------------------------------------ */

static bool parse_kernel_attrs(kparser *p) {
  fu_kernel *k = p->k;
  bool seen[6] = {false, false, false, false, false, false};
  static const char *const names[6] = {"grid", "block", "smem", "index", "min_blocks", "cluster"};
  while (p->tok.kind == T_IDENT) {
    int which = -1;
    for (int i = 0; i < 6; i++)
      if (tok_is(p, T_IDENT, names[i])) which = i;
    if (which < 0) return expected(p, "'grid', 'block', 'smem', 'index', 'min_blocks', 'cluster' or '{'");
    if (seen[which]) {
      perr(p, p->tok.loc, "'%s' given twice", names[which]);
      return false;
    }
    seen[which] = true;
    next(p);
    if (!expect_punct(p, '=')) return false;
    if (which == 0 || which == 1) {
      if (!expect_punct(p, '[')) return false;
      for (int i = 0; i < 3; i++) {
        if (i && !expect_punct(p, ',')) return false;
        if (which == 0) {
          if (!(k->grid[i] = parse_lexpr(p, 0))) return false;
        } else {
          int64_t v = 0;
          if (!parse_int(p, 1, 1024, "block size", &v)) return false;
          k->block[i] = (uint32_t)v;
        }
      }
      if (!expect_punct(p, ']')) return false;
    } else if (which == 2) {
      int64_t v = 0;
      if (!parse_int(p, 0, UINT32_MAX, "shared memory size", &v)) return false;
      k->smem_bytes = (uint32_t)v;
    } else if (which == 4) {
      int64_t v = 0;
      if (!parse_int(p, 1, 32, "blocks per SM", &v)) return false;
      k->min_blocks = (uint32_t)v;
    } else if (which == 5) {
      int64_t v = 0;
      fu_loc cl = p->tok.loc;
      if (!parse_int(p, 1, 8, "blocks per cluster", &v)) return false;
      if (v & (v - 1)) {
        perr(p, cl, "blocks per cluster must be 1, 2, 4 or 8, not %lld", (long long)v);
        return false;
      }
      k->cluster = (uint32_t)v;
    } else {
      fu_loc tl = p->tok.loc;
      if (!parse_dtype(p, &k->index_dtype)) return false;
      if (k->index_dtype != FU_DT_I32 && k->index_dtype != FU_DT_I64) {
        perr(p, tl, "index type must be i32 or i64");
        return false;
      }
    }
  }
  return true;
}

static void reset_kernel_state(kparser *p) {
  if (p->syms) memset(p->syms, 0, p->syms_cap * sizeof *p->syms);
  p->syms_n = 0;
  p->locs_n = 0;
  p->depth = 0;
}

static fu_kernel *parse_kernel(kparser *p) {
  reset_kernel_state(p);
  p->kernel_loc = p->tok.loc;
  if (!expect_word(p, "kernel")) return NULL;
  if (p->tok.kind != T_AT) {
    expected(p, "a kernel name '@name'");
    return NULL;
  }
  char *name = fu_arena_strndup(p->m->arena, p->tok.text, p->tok.len);
  if (!name || !(p->k = fu_kernel_new(p->m, NULL))) {
    oom(p);
    return NULL;
  }
  p->k->name = name;
  next(p);
  if (!expect_punct(p, '(')) return NULL;
  while (!is_punct(p, ')')) {
    if (p->k->n_params && !expect_punct(p, ',')) return NULL;
    if (!parse_param(p)) return NULL;
  }
  next(p);
  if (!parse_kernel_attrs(p) || !expect_punct(p, '{') || !parse_block(p, &p->k->body, true)) return NULL;
  if (!is_punct(p, '}')) {
    expected(p, "'}'");
    return NULL;
  }
  /* The closing brace is not consumed here: parse_at stops right after it. */
  return p->k;
}

static void parser_init(kparser *p, const fu_source *src, size_t offset, fu_module *m, fu_diag_engine *diag,
                        const fu_kir_parse_options *opts) {
  memset(p, 0, sizeof *p);
  p->m = m;
  p->diag = diag;
  p->alloc = m->alloc;
  p->scope = opts ? opts->scope : NULL;
  p->lx.src = src;
  p->lx.line = 1;
  p->lx.col = 1;
  if (offset > src->len) offset = src->len;
  for (size_t i = 0; i < offset; i++) {
    if (src->text[i] == '\n') {
      p->lx.line++;
      p->lx.col = 1;
    } else {
      p->lx.col++;
    }
  }
  p->lx.pos = offset;
  next(p);
}

static void parser_free(kparser *p) {
  fu_mem_free(&p->alloc, p->syms, p->syms_cap * sizeof *p->syms);
  fu_mem_free(&p->alloc, p->locs, p->locs_cap * sizeof *p->locs);
}

static fu_status finish_kernel(kparser *p, bool verify) {
  if (p->failed) return p->nomem ? FU_ERR_NOMEM : FU_ERR_PARSE;
  if (!verify) return FU_OK;
  fu_kir_locator loc = {locate_inst, locate_kernel, p};
  return fu_kernel_verify(p->k, p->diag, &loc);
}

fu_status fu_kernel_parse_at(const fu_source *src, size_t offset, const fu_kir_parse_options *opts,
                             fu_module *m, fu_diag_engine *diag, fu_kernel **out, size_t *end_offset) {
  if (!src || !m || !diag || !out) return FU_ERR_INVALID_ARG;
  *out = NULL;
  kparser p;
  parser_init(&p, src, offset, m, diag, opts);
  fu_kernel *k = parse_kernel(&p);
  fu_status st = finish_kernel(&p, opts ? opts->verify : true);
  if (st == FU_OK) {
    *out = k;
    if (end_offset) *end_offset = p.tok.end;
  }
  parser_free(&p);
  return st;
}

fu_status fu_kernel_parse_list(const fu_source *src, fu_module *m, fu_diag_engine *diag, fu_kernel ***out,
                               uint32_t *n_out) {
  if (!src || !m || !diag || !out || !n_out) return FU_ERR_INVALID_ARG;
  *out = NULL;
  *n_out = 0;
  kparser p;
  parser_init(&p, src, 0, m, diag, NULL);
  fu_kernel **ks = NULL;
  uint32_t n = 0, cap = 0;
  fu_status st = FU_OK;
  while (p.tok.kind != T_EOF) {
    fu_kernel *k = parse_kernel(&p);
    if ((st = finish_kernel(&p, true)) != FU_OK) break;
    next(&p); /* the closing brace */
    if (n == cap) {
      uint32_t nc = cap ? cap * 2 : 4;
      fu_kernel **nk = fu_arena_calloc(m->arena, nc, sizeof *nk);
      if (!nk) {
        st = FU_ERR_NOMEM;
        break;
      }
      if (n) memcpy(nk, ks, n * sizeof *nk);
      ks = nk;
      cap = nc;
    }
    ks[n++] = k;
  }
  parser_free(&p);
  if (st != FU_OK) return st;
  *out = ks;
  *n_out = n;
  return FU_OK;
}

fu_status fu_kernel_parse(const fu_source *src, fu_module *m, fu_diag_engine *diag, fu_kernel **out) {
  if (!src || !m || !diag || !out) return FU_ERR_INVALID_ARG;
  *out = NULL;
  kparser p;
  parser_init(&p, src, 0, m, diag, NULL);
  fu_status st = FU_OK;
  if (p.tok.kind == T_EOF) {
    perr(&p, p.tok.loc, "expected a kernel, got end of input");
    st = FU_ERR_PARSE;
  } else {
    fu_kernel *k = parse_kernel(&p);
    st = finish_kernel(&p, true);
    if (st == FU_OK) {
      next(&p);
      if (p.tok.kind != T_EOF) {
        char buf[96];
        perr(&p, p.tok.loc, "expected end of input after the kernel, got %s", tok_desc(&p.tok, buf, sizeof buf));
        st = FU_ERR_PARSE;
      } else {
        *out = k;
      }
    }
  }
  parser_free(&p);
  return st;
}
