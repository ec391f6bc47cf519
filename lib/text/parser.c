/* fuser: the .fir parser (grammar in docs/ir.md).
 *
 * A recursive-descent parser over the streaming lexer, with one token of
 * lookahead beyond the current one.  Each item is parsed in two steps: the
 * syntax first (results, op name, operands, attribute dict, type list, all
 * generic), then the meaning (op kind, counts, payload from attributes, result
 * types).  Semantic errors therefore never desynchronise the token stream and
 * parsing simply continues; a syntax error abandons the current fusion and
 * resumes at the next `fusion` keyword.
 *
 * Values that could not be built (unknown op, undefined operand, bad result
 * count, failed inference) are "poisoned": they have dtype FU_DT_NONE.  An op
 * with a poisoned operand is not type-inferred, so one mistake gives one
 * error rather than a cascade.  Any error makes the whole parse fail. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuser/parse.h"
#include "fuser/verify.h"
#include "lexer.h"
#include "schedule_text.h" /* codegen: schedules and kernels inside segments */

enum {
  MAX_SEGMENT_DEPTH = 32, /* nested segment bodies */
  MAX_LIST_DEPTH = 16,    /* nested attribute lists */
  MAX_ATTR_LIST = 2 * FU_MAX_RANK,
};

/* ---- scratch stacks ---------------------------------------------------- */

/* Generic growable array through the allocator: used as stacks so nested
 * segment bodies can push above their parent's entries. */
typedef struct scratch {
  void *v;
  size_t n, cap, elem;
} scratch;

static bool scratch_reserve(const fu_allocator *a, scratch *s, size_t need) {
  if (need <= s->cap) return true;
  size_t cap = s->cap ? s->cap : 16;
  while (cap < need) cap *= 2;
  void *v = fu_mem_realloc(a, s->v, s->cap * s->elem, cap * s->elem);
  if (!v) return false;
  s->v = v;
  s->cap = cap;
  return true;
}

static void scratch_free(const fu_allocator *a, scratch *s) {
  if (s->v) fu_mem_free(a, s->v, s->cap * s->elem);
  s->v = NULL;
  s->n = s->cap = 0;
}

/* ---- attribute values -------------------------------------------------- */

typedef enum av_kind { AV_INT, AV_FLOAT, AV_BOOL, AV_NONE, AV_STRING, AV_IDENT, AV_LIST } av_kind;

/* One attribute value; list children are linked through `next` (indices into
 * the node stack, -1 for none) because nested lists interleave. */
typedef struct av_node {
  av_kind kind;
  fu_token tok;
  int32_t first, next;
  uint32_t n;
} av_node;

typedef struct attr_ent {
  fu_token name;
  int32_t value; /* node index */
} attr_ent;

typedef enum attr_kind {
  AK_INT_LIST,
  AK_INT,
  AK_BOOL,
  AK_DTYPE,
  AK_BOOL_LIST,
  AK_CONTIG_LIST,
  AK_STRING,
  AK_EXAMPLE,
} attr_kind;

typedef struct attr_spec {
  const char *name;
  attr_kind kind;
  bool required;
} attr_spec;

/* ---- the parser --------------------------------------------------------- */

typedef struct parser {
  fu_lexer lx;
  fu_token tok, ahead;
  bool have_ahead;
  fu_diag_engine *diag;
  fu_allocator alloc;
  const fu_source *src;
  fu_module *m;
  fu_fusion *f;
  int seg_depth;
  bool nomem;
  fu_txt_symtab values;   /* value name -> fu_value*, per fusion */
  fu_txt_symtab fusions;  /* fusion names, per module */
  fu_txt_symtab segments; /* segment names, per fusion */
  fu_txt_symtab opnames;  /* op name -> kind + 1 */
  fu_value *poison;       /* stands for undefined operands */
  scratch vals;           /* fu_value* */
  scratch toks;           /* fu_token */
  scratch types;          /* fu_type */
  scratch nodes;          /* av_node */
  scratch attrs;          /* attr_ent */
} parser;

#define AT(s, T, i) (((T *)(s).v)[i])

/* The operands collected from `base` on, or NULL while no operand was ever
 * collected (the scratch array is not allocated: taking an address in it
 * would offset a null pointer). */
static fu_value *const *vals_from(const parser *p, size_t base) {
  return p->vals.v ? &AT(p->vals, fu_value *, base) : NULL;
}

static bool push(parser *p, scratch *s, const void *item) {
  if (!scratch_reserve(&p->alloc, s, s->n + 1)) {
    p->nomem = true;
    return false;
  }
  memcpy((char *)s->v + s->n * s->elem, item, s->elem);
  s->n++;
  return true;
}

static fu_loc loc_of(const parser *p, const fu_token *t) {
  fu_loc l = {p->src, t->line, t->col};
  return l;
}

static void error_at(parser *p, const fu_token *t, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void error_at(parser *p, const fu_token *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fu_diag_vreport(p->diag, FU_SEV_ERROR, loc_of(p, t), fmt, ap);
  va_end(ap);
}

/* Reports `expected <what>, got <token>` unless the token is a lexer error
 * (already reported). */
static void error_expected(parser *p, const char *what) {
  if (p->tok.kind == FU_TOK_ERROR) return;
  char got[128];
  error_at(p, &p->tok, "expected %s, got %s", what, fu_txt_tok_describe(&p->tok, got, sizeof got));
}

static void advance(parser *p) {
  if (p->have_ahead) {
    p->tok = p->ahead;
    p->have_ahead = false;
  } else {
    fu_txt_lex_next(&p->lx, &p->tok);
  }
}

static const fu_token *peek_ahead(parser *p) {
  if (!p->have_ahead) {
    fu_txt_lex_next(&p->lx, &p->ahead);
    p->have_ahead = true;
  }
  return &p->ahead;
}

static bool is_kw(const fu_token *t, const char *kw) { return t->kind == FU_TOK_IDENT && fu_txt_tok_is(t, kw); }

/* Consumes a token of `kind` or reports `expected <what>`. */
static bool expect(parser *p, fu_txt_tok kind, const char *what) {
  if (p->tok.kind != kind) {
    error_expected(p, what);
    return false;
  }
  advance(p);
  return true;
}

static const char *arena_strn(parser *p, const char *s, size_t n) {
  char *c = fu_arena_strndup(p->m->arena, s, n);
  if (!c) p->nomem = true;
  return c;
}

/* A poisoned stand-in value (dtype NONE) for a result that could not be
 * built; it still carries its name and location for later diagnostics. */
static fu_value *make_poison(parser *p, const fu_token *t) {
  fu_value *v = fu_arena_alloc(p->m->arena, sizeof *v);
  if (!v) {
    p->nomem = true;
    return p->poison;
  }
  v->loc = loc_of(p, t);
  v->type.rank = FU_SCALAR_RANK;
  v->name = arena_strn(p, t->p + 1, t->len - 1);
  return v;
}

static bool is_poison(const fu_value *v) { return v->type.dtype == FU_DT_NONE; }

/* ---- names -------------------------------------------------------------- */

static fu_value *lookup_value(parser *p, const fu_token *t) {
  return fu_txt_symtab_get(&p->values, t->p + 1, t->len - 1);
}

/* Resolves a %name operand; an undefined name is reported and poisoned. */
static fu_value *use_value(parser *p, const fu_token *t) {
  fu_value *v = lookup_value(p, t);
  if (v) return v;
  error_at(p, t, "use of undefined value '%.*s'", (int)t->len, t->p);
  return p->poison;
}

/* Names `v` after the %name token `t` and makes it visible; a second
 * definition of a name in one fusion is an error (the first one stays). */
static void define_value(parser *p, fu_value *v, const fu_token *t) {
  v->loc = loc_of(p, t);
  v->name = arena_strn(p, t->p + 1, t->len - 1);
  if (!v->name) return;
  bool nomem;
  fu_value *old = fu_txt_symtab_insert(&p->values, v->name, t->len - 1, v, &nomem);
  p->nomem |= nomem;
  if (old) {
    error_at(p, t, "redefinition of value '%.*s'", (int)t->len, t->p);
    if (fu_loc_known(old->loc)) fu_note(p->diag, old->loc, "previous definition of '%.*s' is here", (int)t->len, t->p);
  }
}

/* ---- types -------------------------------------------------------------- */

/* type ::= DTYPE | DTYPE '[' (extent (',' extent)*)? ']'.  Returns false on
 * a syntax error; sets *bad on a semantic one (unknown dtype, rank or
 * extent out of range) after consuming the whole type. */
static bool parse_type(parser *p, fu_type *out, bool *bad) {
  memset(out, 0, sizeof *out);
  if (p->tok.kind != FU_TOK_IDENT) {
    error_expected(p, "a type");
    return false;
  }
  out->dtype = fu_dtype_from_name(p->tok.p, p->tok.len);
  if (out->dtype == FU_DT_NONE) {
    error_at(p, &p->tok, "unknown dtype '%.*s'", (int)p->tok.len, p->tok.p);
    *bad = true;
  }
  advance(p);
  if (p->tok.kind != FU_TOK_LBRACKET) {
    out->rank = FU_SCALAR_RANK;
    return true;
  }
  fu_token open = p->tok;
  advance(p);
  fu_extent dims[FU_MAX_RANK];
  int32_t rank = 0;
  bool too_big = false;
  if (p->tok.kind == FU_TOK_RBRACKET) {
    advance(p);
    out->rank = 0;
    return true;
  }
  for (;;) {
    fu_extent e = {0, NULL};
    if (p->tok.kind == FU_TOK_INT) {
      e.value = p->tok.ival;
      if (e.value < 0) {
        error_at(p, &p->tok, "negative extent %lld", (long long)e.value);
        *bad = true;
      }
    } else if (p->tok.kind == FU_TOK_IDENT) {
      e.sym = fu_module_intern(p->m, p->tok.p, p->tok.len);
      if (!e.sym) p->nomem = true;
    } else {
      error_expected(p, "an extent (an integer or a symbol)");
      return false;
    }
    if (rank < FU_MAX_RANK) {
      dims[rank] = e;
    } else if (!too_big) {
      error_at(p, &open, "tensor rank exceeds the maximum of %d", FU_MAX_RANK);
      too_big = true;
      *bad = true;
    }
    rank++;
    advance(p);
    if (p->tok.kind == FU_TOK_COMMA) {
      advance(p);
      continue;
    }
    if (p->tok.kind == FU_TOK_RBRACKET) break;
    error_expected(p, "',' or ']' in the shape");
    return false;
  }
  advance(p);
  if (too_big) rank = FU_MAX_RANK;
  out->rank = rank;
  out->dims = fu_dims_copy(p->m, dims, rank);
  if (rank > 0 && !out->dims) p->nomem = true;
  return true;
}

/* ---- attribute dictionaries -------------------------------------------- */

static av_node *node(parser *p, int32_t i) { return &AT(p->nodes, av_node, i); }

/* attr-value ::= INT | FLOAT | true | false | none | STRING | IDENT | list.
 * Returns the node index, or -1 on a syntax error.  `inf`/`nan` read as
 * floats. */
static int32_t parse_attr_value(parser *p, int depth) {
  av_node nd = {AV_INT, p->tok, -1, -1, 0};
  switch (p->tok.kind) {
  case FU_TOK_INT: nd.kind = AV_INT; break;
  case FU_TOK_FLOAT: nd.kind = AV_FLOAT; break;
  case FU_TOK_STRING: nd.kind = AV_STRING; break;
  case FU_TOK_IDENT:
    if (is_kw(&p->tok, "true") || is_kw(&p->tok, "false")) {
      nd.kind = AV_BOOL;
    } else if (is_kw(&p->tok, "none")) {
      nd.kind = AV_NONE;
    } else if (is_kw(&p->tok, "inf") || is_kw(&p->tok, "nan")) {
      nd.kind = AV_FLOAT;
      nd.tok.fval = is_kw(&p->tok, "inf") ? INFINITY : NAN;
    } else {
      nd.kind = AV_IDENT;
    }
    break;
  case FU_TOK_LBRACKET: {
    if (depth >= MAX_LIST_DEPTH) {
      error_at(p, &p->tok, "attribute lists nested deeper than %d", MAX_LIST_DEPTH);
      return -1;
    }
    nd.kind = AV_LIST;
    int32_t self = (int32_t)p->nodes.n;
    if (!push(p, &p->nodes, &nd)) return -1;
    advance(p);
    if (p->tok.kind == FU_TOK_RBRACKET) {
      advance(p);
      return self;
    }
    int32_t last = -1;
    for (;;) {
      int32_t child = parse_attr_value(p, depth + 1);
      if (child < 0) return -1;
      if (last < 0)
        node(p, self)->first = child;
      else
        node(p, last)->next = child;
      last = child;
      node(p, self)->n++;
      if (p->tok.kind == FU_TOK_COMMA) {
        advance(p);
        continue;
      }
      if (p->tok.kind == FU_TOK_RBRACKET) break;
      error_expected(p, "',' or ']' in the list");
      return -1;
    }
    advance(p);
    return self;
  }
  default: error_expected(p, "an attribute value"); return -1;
  }
  int32_t self = (int32_t)p->nodes.n;
  if (!push(p, &p->nodes, &nd)) return -1;
  advance(p);
  return self;
}

/* attr-dict ::= '{' (attr (',' attr)*)? '}' ; attr ::= IDENT '=' attr-value */
static bool parse_attr_dict(parser *p) {
  advance(p); /* '{' */
  if (p->tok.kind == FU_TOK_RBRACE) {
    advance(p);
    return true;
  }
  for (;;) {
    if (p->tok.kind != FU_TOK_IDENT) {
      error_expected(p, "an attribute name");
      return false;
    }
    attr_ent a = {p->tok, -1};
    advance(p);
    if (!expect(p, FU_TOK_EQ, "'=' after the attribute name")) return false;
    a.value = parse_attr_value(p, 0);
    if (a.value < 0 || !push(p, &p->attrs, &a)) return false;
    if (p->tok.kind == FU_TOK_COMMA) {
      advance(p);
      continue;
    }
    if (p->tok.kind == FU_TOK_RBRACE) break;
    error_expected(p, "',' or '}' in the attribute dictionary");
    return false;
  }
  advance(p);
  return true;
}

static bool list_all(parser *p, const av_node *n, av_kind k1, av_kind k2) {
  for (int32_t c = n->first; c >= 0; c = node(p, c)->next)
    if (node(p, c)->kind != k1 && node(p, c)->kind != k2) return false;
  return true;
}

static bool is_example_kind(const fu_token *t) {
  return fu_txt_tok_is(t, "randn") || fu_txt_tok_is(t, "rand") || fu_txt_tok_is(t, "zeros") ||
         fu_txt_tok_is(t, "ones") || fu_txt_tok_is(t, "randint");
}

/* Checks that a value has the shape its spec asks for. */
static bool check_attr_kind(parser *p, const attr_spec *s, int32_t vi) {
  const av_node *n = node(p, vi);
  const fu_token *t = &n->tok;
  switch (s->kind) {
  case AK_INT_LIST:
    if (n->kind != AV_LIST || !list_all(p, n, AV_INT, AV_INT)) {
      error_at(p, t, "attribute '%s' must be a list of integers", s->name);
      return false;
    }
    break;
  case AK_BOOL_LIST:
    if (n->kind != AV_LIST || !list_all(p, n, AV_BOOL, AV_BOOL)) {
      error_at(p, t, "attribute '%s' must be a list of true or false", s->name);
      return false;
    }
    break;
  case AK_CONTIG_LIST:
    if (n->kind != AV_LIST || !list_all(p, n, AV_BOOL, AV_NONE)) {
      error_at(p, t, "attribute '%s' must be a list of true, false or none", s->name);
      return false;
    }
    break;
  case AK_INT:
    if (n->kind != AV_INT) {
      error_at(p, t, "attribute '%s' must be an integer", s->name);
      return false;
    }
    break;
  case AK_BOOL:
    if (n->kind != AV_BOOL) {
      error_at(p, t, "attribute '%s' must be true or false", s->name);
      return false;
    }
    break;
  case AK_STRING:
    if (n->kind != AV_STRING) {
      error_at(p, t, "attribute '%s' must be a string", s->name);
      return false;
    }
    break;
  case AK_DTYPE:
    if (n->kind == AV_IDENT && fu_dtype_from_name(t->p, t->len) != FU_DT_NONE) break;
    if (n->kind == AV_IDENT || n->kind == AV_BOOL || n->kind == AV_NONE)
      error_at(p, t, "unknown dtype '%.*s'", (int)t->len, t->p);
    else
      error_at(p, t, "attribute '%s' must be a dtype", s->name);
    return false;
  case AK_EXAMPLE:
    if ((n->kind == AV_IDENT && is_example_kind(t)) || n->kind == AV_INT || n->kind == AV_FLOAT ||
        n->kind == AV_BOOL)
      break;
    error_at(p, t, "attribute '%s' must be randn, rand, zeros, ones, randint or a number", s->name);
    return false;
  }
  if ((s->kind == AK_INT_LIST || s->kind == AK_BOOL_LIST || s->kind == AK_CONTIG_LIST) && n->n > MAX_ATTR_LIST) {
    error_at(p, t, "attribute '%s' has more than %d entries", s->name, MAX_ATTR_LIST);
    return false;
  }
  return true;
}

/* Matches the op's attributes (attrs[abase..]) against `specs`: found[i] gets
 * the node of spec i or -1.  Reports unknown, duplicate, ill-kinded and
 * missing required attributes; false if any. */
static bool match_attrs(parser *p, size_t abase, const char *opname, const fu_token *optok,
                        const attr_spec *specs, int n_specs, int32_t *found) {
  bool ok = true;
  for (int i = 0; i < n_specs; i++) found[i] = -1;
  for (size_t a = abase; a < p->attrs.n; a++) {
    attr_ent *e = &AT(p->attrs, attr_ent, a);
    if (e->value < 0) continue; /* consumed already (host=) */
    int i = 0;
    while (i < n_specs && !fu_txt_tok_is(&e->name, specs[i].name)) i++;
    if (i == n_specs) {
      error_at(p, &e->name, "unknown attribute '%.*s' for '%s'", (int)e->name.len, e->name.p, opname);
      ok = false;
    } else if (found[i] >= 0) {
      error_at(p, &e->name, "duplicate attribute '%s'", specs[i].name);
      ok = false;
    } else if (!check_attr_kind(p, &specs[i], e->value)) {
      found[i] = -2; /* present but bad: no "missing" error */
      ok = false;
    } else {
      found[i] = e->value;
    }
  }
  for (int i = 0; i < n_specs; i++) {
    if (found[i] == -2) found[i] = -1;
    else if (found[i] == -1 && specs[i].required) {
      error_at(p, optok, "'%s' requires attribute '%s'", opname, specs[i].name);
      ok = false;
    }
  }
  return ok;
}

/* Copies an integer list node into the arena. */
static fu_int_list get_int_list(parser *p, int32_t ni) {
  int64_t v[MAX_ATTR_LIST] = {0};
  uint32_t n = 0;
  for (int32_t c = node(p, ni)->first; c >= 0 && n < MAX_ATTR_LIST; c = node(p, c)->next) v[n++] = node(p, c)->tok.ival;
  fu_int_list l = fu_int_list_copy(p->m, v, n);
  if (n && !l.v) p->nomem = true;
  return l;
}

static bool get_bool(parser *p, int32_t ni) { return is_kw(&node(p, ni)->tok, "true"); }

/* ---- op payloads ------------------------------------------------------- */

enum { IN_STRIDES, IN_STRIDE_ORDER, IN_CONTIGUITY, IN_EXAMPLE, IN_NPY, IN_SEED, IN_SHAPE, IN_EX_STRIDES, IN_LOW, IN_HIGH, IN_NONZERO, IN_N };
static const attr_spec input_specs[IN_N] = {
    [IN_STRIDES] = {"strides", AK_INT_LIST, false},
    [IN_STRIDE_ORDER] = {"stride_order", AK_INT_LIST, false},
    [IN_CONTIGUITY] = {"contiguity", AK_CONTIG_LIST, false},
    [IN_EXAMPLE] = {"example", AK_EXAMPLE, false},
    [IN_NPY] = {"npy", AK_STRING, false},
    [IN_SEED] = {"seed", AK_INT, false},
    [IN_SHAPE] = {"example_shape", AK_INT_LIST, false},
    [IN_EX_STRIDES] = {"example_strides", AK_INT_LIST, false},
    [IN_LOW] = {"low", AK_INT, false},
    [IN_HIGH] = {"high", AK_INT, false},
    [IN_NONZERO] = {"nonzero", AK_BOOL, false},
};


/* The parser's view of an attribute kind of the op attribute table. */
static attr_kind field_kind(fu_attr_kind k) {
  switch (k) {
  case FU_AK_INT: return AK_INT;
  case FU_AK_BOOL: return AK_BOOL;
  case FU_AK_DTYPE: return AK_DTYPE;
  case FU_AK_INT_LIST: return AK_INT_LIST;
  case FU_AK_BOOL_LIST: return AK_BOOL_LIST;
  }
  return AK_INT;
}

/* Writes one attribute (node `ni`, or -1 when absent) into the payload
 * member the table names. */
static bool store_field(parser *p, fu_op *op, const fu_attr_field *fd, int32_t ni) {
  void *x = (char *)&op->u + fd->offset;
  switch (fd->kind) {
  case FU_AK_INT: *(int64_t *)x = ni >= 0 ? node(p, ni)->tok.ival : fd->absent; break;
  case FU_AK_BOOL: *(bool *)x = ni >= 0 && get_bool(p, ni); break;
  case FU_AK_DTYPE:
    *(fu_dtype *)x = ni >= 0 ? fu_dtype_from_name(node(p, ni)->tok.p, node(p, ni)->tok.len) : FU_DT_NONE;
    break;
  case FU_AK_INT_LIST: *(fu_int_list *)x = ni >= 0 ? get_int_list(p, ni) : (fu_int_list){0}; break;
  case FU_AK_BOOL_LIST: {
    uint32_t n = ni >= 0 ? node(p, ni)->n : 0;
    bool *b = n ? fu_arena_calloc(p->m->arena, n, sizeof *b) : NULL;
    if (n && !b) {
      p->nomem = true;
      return false;
    }
    uint32_t i = 0;
    if (ni >= 0)
      for (int32_t c = node(p, ni)->first; c >= 0; c = node(p, c)->next) b[i++] = get_bool(p, c);
    *(bool **)x = b;
    memcpy((char *)&op->u + fd->count_offset, &n, sizeof n);
    break;
  }
  }
  return true;
}

/* A slice's steps default to 1, and its three lists have one length. */
static bool fill_slice_steps(parser *p, fu_op *op, bool stated, const fu_token *optok) {
  uint32_t n = op->u.slice.starts.n;
  if (!stated) {
    int64_t ones[MAX_ATTR_LIST];
    for (uint32_t i = 0; i < n; i++) ones[i] = 1;
    op->u.slice.steps = fu_int_list_copy(p->m, ones, n);
  }
  if (op->u.slice.ends.n != n || op->u.slice.steps.n != n) {
    error_at(p, optok, "'slice' attributes 'starts', 'ends' and 'steps' must have the same length");
    return false;
  }
  return true;
}

/* Fills op->u from the attribute dict through the class's attribute table
 * (lib/ir/op_attrs.c).  False on any error (already reported). */
static bool fill_payload(parser *p, fu_op *op, size_t abase, const fu_token *optok) {
  const fu_op_info *info = fu_op_info_of(op->kind);
  fu_attr_spec spec = fu_op_attr_spec(info->cls);
  enum { MAX_FIELDS = 4 };
  attr_spec specs[MAX_FIELDS] = {{NULL, AK_INT, false}};
  int32_t f[MAX_FIELDS];
  if (spec.n > MAX_FIELDS) {
    error_at(p, optok, "'%s' has more attributes than the parser takes", info->name);
    return false;
  }
  for (uint32_t i = 0; i < spec.n; i++)
    specs[i] = (attr_spec){spec.fields[i].name, field_kind(spec.fields[i].kind), spec.fields[i].required};
  if (!match_attrs(p, abase, info->name, optok, specs, (int)spec.n, f)) return false;
  for (uint32_t i = 0; i < spec.n; i++)
    if (!store_field(p, op, &spec.fields[i], f[i])) return false;
  if (info->cls == FU_OC_SLICE) return fill_slice_steps(p, op, f[2] >= 0, optok);
  return true;
}

/* `host=true|false` marks a view op as a host-side alias (ir.h, fu_op.host).
 * It is taken out of the attribute list before the per-class matching; on
 * ops that are not views it stays and is reported as unknown. */
static bool take_host_attr(parser *p, fu_op *op, size_t abase) {
  if (!fu_op_has(op->kind, FU_OF_VIEW)) return true;
  static const attr_spec host_spec = {"host", AK_BOOL, false};
  bool ok = true, seen = false;
  for (size_t a = abase; a < p->attrs.n; a++) {
    attr_ent *e = &AT(p->attrs, attr_ent, a);
    if (!fu_txt_tok_is(&e->name, "host")) continue;
    if (seen) {
      error_at(p, &e->name, "duplicate attribute 'host'");
      ok = false;
    } else if (!check_attr_kind(p, &host_spec, e->value)) {
      ok = false;
    } else {
      op->host = get_bool(p, e->value);
    }
    seen = true;
    e->value = -1;
  }
  return ok;
}

/* Decodes a string token (quotes stripped, \" and \\ undone) into the arena. */
static const char *decode_string(parser *p, const fu_token *t) {
  char *s = fu_arena_alloc(p->m->arena, t->len);
  if (!s) {
    p->nomem = true;
    return NULL;
  }
  size_t o = 0;
  for (uint32_t i = 1; i + 1 < t->len; i++) {
    if (t->p[i] == '\\' && i + 2 < t->len) i++;
    s[o++] = t->p[i];
  }
  s[o] = '\0';
  return s;
}

/* Reads a list attribute whose length must equal the input's rank. */
static bool input_list_len(parser *p, int32_t ni, const char *attr, const fu_type *t) {
  if (t->rank == FU_SCALAR_RANK) {
    error_at(p, &node(p, ni)->tok, "attribute '%s' is not valid on a scalar input", attr);
    return false;
  }
  if ((int64_t)node(p, ni)->n != t->rank) {
    error_at(p, &node(p, ni)->tok, "attribute '%s' has %u entr%s, but the input has rank %d", attr, node(p, ni)->n,
             node(p, ni)->n == 1 ? "y" : "ies", t->rank);
    return false;
  }
  return true;
}

/* The value of `example=<number>` for a scalar input of dtype dt. */
static bool example_value(parser *p, const av_node *n, fu_dtype dt, fu_scalar_value *out) {
  const char *dn = fu_dtype_name(dt);
  if (fu_dtype_is_float(dt)) {
    if (n->kind == AV_INT) out->f = (double)n->tok.ival;
    else if (n->kind == AV_FLOAT) out->f = n->tok.fval;
    else {
      error_at(p, &n->tok, "example value for an %s input must be a number", dn);
      return false;
    }
  } else if (fu_dtype_is_int(dt)) {
    if (n->kind != AV_INT) {
      error_at(p, &n->tok, "example value for an %s input must be an integer", dn);
      return false;
    }
    if (dt == FU_DT_I32 && (n->tok.ival < INT32_MIN || n->tok.ival > INT32_MAX)) {
      error_at(p, &n->tok, "example value %lld is out of range for i32", (long long)n->tok.ival);
      return false;
    }
    out->i = n->tok.ival;
  } else if (dt == FU_DT_BOOL) {
    if (n->kind != AV_BOOL) {
      error_at(p, &n->tok, "example value for a bool input must be true or false");
      return false;
    }
    out->b = is_kw(&n->tok, "true");
  }
  return true;
}

/* Layout and example-data attributes of an input (docs/ir.md, Inputs). */
static bool fill_input(parser *p, fu_op *op, size_t abase, const fu_token *optok, const fu_type *t) {
  int32_t f[IN_N];
  if (!match_attrs(p, abase, "input", optok, input_specs, IN_N, f)) return false;
  bool ok = true;
  fu_layout *lay = &op->u.input.layout;
  fu_example *ex = &op->u.input.example;
  ex->rank = -1;
  bool len_ok[IN_N];
  for (int i = 0; i < IN_N; i++) {
    len_ok[i] = true;
    if ((i == IN_STRIDES || i == IN_STRIDE_ORDER || i == IN_CONTIGUITY) && f[i] >= 0)
      len_ok[i] = input_list_len(p, f[i], input_specs[i].name, t);
    ok = ok && len_ok[i];
  }
  if (f[IN_STRIDES] >= 0 && len_ok[IN_STRIDES]) lay->strides = get_int_list(p, f[IN_STRIDES]).v;
  if (f[IN_STRIDE_ORDER] >= 0 && len_ok[IN_STRIDE_ORDER]) {
    uint32_t n = node(p, f[IN_STRIDE_ORDER])->n;
    int32_t *so = n ? fu_arena_calloc(p->m->arena, n, sizeof *so) : NULL;
    if (n && !so) p->nomem = true;
    uint32_t i = 0;
    for (int32_t c = node(p, f[IN_STRIDE_ORDER])->first; c >= 0 && so; c = node(p, c)->next, i++) {
      int64_t v = node(p, c)->tok.ival;
      if (v < INT32_MIN || v > INT32_MAX) {
        error_at(p, &node(p, c)->tok, "stride_order entry %lld is out of range", (long long)v);
        ok = false;
      }
      so[i] = (int32_t)v;
    }
    lay->stride_order = so;
  }
  if (f[IN_CONTIGUITY] >= 0 && len_ok[IN_CONTIGUITY]) {
    uint32_t n = node(p, f[IN_CONTIGUITY])->n;
    int8_t *cg = n ? fu_arena_calloc(p->m->arena, n, sizeof *cg) : NULL;
    if (n && !cg) p->nomem = true;
    uint32_t i = 0;
    for (int32_t c = node(p, f[IN_CONTIGUITY])->first; c >= 0 && cg; c = node(p, c)->next, i++)
      cg[i] = node(p, c)->kind == AV_NONE ? FU_CONTIG_NONE : get_bool(p, c) ? FU_CONTIG_TRUE : FU_CONTIG_FALSE;
    lay->contiguity = cg;
  }
  /* example data */
  if (f[IN_EXAMPLE] >= 0 && f[IN_NPY] >= 0) {
    error_at(p, &AT(p->nodes, av_node, f[IN_NPY]).tok, "attributes 'example' and 'npy' are mutually exclusive");
    ok = false;
  }
  if (f[IN_EXAMPLE] >= 0) {
    const av_node *n = node(p, f[IN_EXAMPLE]);
    if (n->kind == AV_IDENT) {
      const fu_token *k = &n->tok;
      ex->init = fu_txt_tok_is(k, "randn")   ? FU_INIT_RANDN
                 : fu_txt_tok_is(k, "rand")  ? FU_INIT_RAND
                 : fu_txt_tok_is(k, "zeros") ? FU_INIT_ZEROS
                 : fu_txt_tok_is(k, "ones")  ? FU_INIT_ONES
                                             : FU_INIT_RANDINT;
    } else if (t->rank != FU_SCALAR_RANK) {
      error_at(p, &n->tok, "example=<number> is only valid on a scalar input");
      ok = false;
    } else if (example_value(p, n, t->dtype, &ex->value)) {
      ex->init = FU_INIT_VALUE;
    } else {
      ok = false;
    }
  } else if (f[IN_NPY] >= 0) {
    ex->init = FU_INIT_NPY;
    ex->npy_path = decode_string(p, &node(p, f[IN_NPY])->tok);
  }
  bool random = ex->init == FU_INIT_RANDN || ex->init == FU_INIT_RAND || ex->init == FU_INIT_RANDINT;
  if (f[IN_SEED] >= 0) {
    const fu_token *st = &node(p, f[IN_SEED])->tok;
    if (!random) {
      error_at(p, st, "attribute 'seed' requires example=randn, rand or randint");
      ok = false;
    } else if (st->ival < 0) {
      error_at(p, st, "attribute 'seed' must not be negative");
      ok = false;
    } else {
      ex->seed = (uint64_t)st->ival;
    }
  }
  static const int lh[2] = {IN_LOW, IN_HIGH};
  for (int i = 0; i < 2; i++) {
    if (f[lh[i]] >= 0 && ex->init != FU_INIT_RANDINT) {
      error_at(p, &node(p, f[lh[i]])->tok, "attribute '%s' requires example=randint", input_specs[lh[i]].name);
      ok = false;
    }
  }
  if (ex->init == FU_INIT_RANDINT) {
    ex->low = f[IN_LOW] >= 0 ? node(p, f[IN_LOW])->tok.ival : 0;
    if (f[IN_HIGH] < 0) {
      error_at(p, &node(p, f[IN_EXAMPLE])->tok, "example=randint requires attribute 'high'");
      ok = false;
    } else {
      ex->high = node(p, f[IN_HIGH])->tok.ival;
    }
  }
  if (f[IN_NONZERO] >= 0) {
    if (ex->init != FU_INIT_RANDN && ex->init != FU_INIT_RANDINT) {
      error_at(p, &node(p, f[IN_NONZERO])->tok, "attribute 'nonzero' requires example=randn or randint");
      ok = false;
    }
    ex->nonzero = get_bool(p, f[IN_NONZERO]);
  }
  static const int sh[2] = {IN_SHAPE, IN_EX_STRIDES};
  for (int i = 0; i < 2; i++) {
    int32_t ni = f[sh[i]];
    if (ni < 0) continue;
    const char *an = input_specs[sh[i]].name;
    if (ex->init == FU_INIT_NONE || ex->init == FU_INIT_VALUE) {
      if (ex->init == FU_INIT_NONE)
        error_at(p, &node(p, ni)->tok, "attribute '%s' requires 'example' or 'npy'", an);
      else
        error_at(p, &node(p, ni)->tok, "attribute '%s' is not valid on a scalar input", an);
      ok = false;
      continue;
    }
    if (!input_list_len(p, ni, an, t)) {
      ok = false;
      continue;
    }
    fu_int_list l = get_int_list(p, ni);
    if (sh[i] == IN_SHAPE) {
      for (uint32_t j = 0; j < l.n; j++)
        if (l.v[j] < 0) {
          error_at(p, &node(p, ni)->tok, "attribute 'example_shape' has a negative size");
          ok = false;
          break;
        }
      ex->shape = l.v;
      ex->rank = t->rank;
    } else {
      ex->strides = l.v;
    }
  }
  return ok;
}

/* ---- operands ------------------------------------------------------------ */

/* Can the current token start an operand?  A %name followed by '=' is the
 * next item's result, not an operand, and the item keywords end the list. */
static bool operand_start(parser *p) {
  switch (p->tok.kind) {
  case FU_TOK_VALUE: return peek_ahead(p)->kind != FU_TOK_EQ;
  case FU_TOK_INT:
  case FU_TOK_FLOAT: return true;
  case FU_TOK_IDENT: return !is_kw(&p->tok, "output") && !is_kw(&p->tok, "segment") && !is_kw(&p->tok, "fusion");
  default: return false;
  }
}

/* The value inside `dtype(...)`, converted to the dtype.  Semantic errors
 * give the poison value. */
static fu_value *typed_literal(parser *p, const fu_token *dtok, fu_dtype dt, const fu_token *v) {
  fu_value *lit = NULL;
  const char *dn = fu_dtype_name(dt);
  bool is_bool = is_kw(v, "true") || is_kw(v, "false");
  bool is_float = v->kind == FU_TOK_FLOAT || is_kw(v, "inf") || is_kw(v, "nan");
  double fv = v->kind == FU_TOK_FLOAT ? v->fval : is_kw(v, "inf") ? INFINITY : NAN;
  if (fu_dtype_is_float(dt)) {
    if (v->kind == FU_TOK_INT) lit = fu_literal_f(p->f, dt, (double)v->ival);
    else if (is_float) lit = fu_literal_f(p->f, dt, fv);
    else {
      error_at(p, v, "'%s(...)' needs a number", dn);
      return p->poison;
    }
  } else if (fu_dtype_is_int(dt)) {
    if (v->kind != FU_TOK_INT) {
      error_at(p, v, "'%s(...)' needs an integer", dn);
      return p->poison;
    }
    if (dt == FU_DT_I32 && (v->ival < INT32_MIN || v->ival > INT32_MAX)) {
      error_at(p, v, "value %lld is out of range for i32", (long long)v->ival);
      return p->poison;
    }
    lit = fu_literal_i(p->f, dt, v->ival);
  } else {
    if (!is_bool) {
      error_at(p, v, "'bool(...)' needs true or false");
      return p->poison;
    }
    lit = fu_literal_b(p->f, is_kw(v, "true"));
  }
  if (!lit) {
    p->nomem = true;
    return p->poison;
  }
  lit->literal_typed = true;
  lit->loc = loc_of(p, dtok);
  return lit;
}

/* operand ::= VALUE | literal.  Returns false on a syntax error. */
static bool parse_operand(parser *p, fu_value **out) {
  fu_token t = p->tok;
  fu_value *v = NULL;
  switch (t.kind) {
  case FU_TOK_VALUE:
    advance(p);
    *out = use_value(p, &t);
    return true;
  case FU_TOK_INT: v = fu_literal_i(p->f, FU_DT_I64, t.ival); break;
  case FU_TOK_FLOAT: v = fu_literal_f(p->f, FU_DT_F64, t.fval); break;
  case FU_TOK_IDENT:
    if (is_kw(&t, "true") || is_kw(&t, "false")) {
      v = fu_literal_b(p->f, is_kw(&t, "true"));
    } else if (is_kw(&t, "inf") || is_kw(&t, "nan")) {
      v = fu_literal_f(p->f, FU_DT_F64, is_kw(&t, "inf") ? INFINITY : NAN);
    } else if (peek_ahead(p)->kind == FU_TOK_LPAREN) {
      fu_dtype dt = fu_dtype_from_name(t.p, t.len);
      advance(p);
      advance(p); /* '(' */
      fu_token inner = p->tok;
      if (inner.kind != FU_TOK_INT && inner.kind != FU_TOK_FLOAT && inner.kind != FU_TOK_IDENT) {
        error_expected(p, "a number, true or false in the typed literal");
        return false;
      }
      advance(p);
      if (!expect(p, FU_TOK_RPAREN, "')' after the literal value")) return false;
      if (dt == FU_DT_NONE) {
        error_at(p, &t, "unknown dtype '%.*s'", (int)t.len, t.p);
        *out = p->poison;
      } else {
        *out = typed_literal(p, &t, dt, &inner);
      }
      return true;
    } else {
      error_expected(p, "an operand (a %value or a literal)");
      return false;
    }
    break;
  default: error_expected(p, "an operand (a %value or a literal)"); return false;
  }
  if (!v) {
    p->nomem = true;
    *out = p->poison;
  } else {
    v->loc = loc_of(p, &t);
    *out = v;
  }
  advance(p);
  return true;
}

/* operands ::= operand (',' operand)* ; pushed on p->vals. */
static bool parse_operands(parser *p) {
  if (!operand_start(p)) return true;
  for (;;) {
    fu_value *v;
    if (fu_diag_stopped(p->diag) || !parse_operand(p, &v) || !push(p, &p->vals, &v)) return false;
    if (p->tok.kind != FU_TOK_COMMA) return true;
    advance(p);
  }
}

/* ---- items ------------------------------------------------------------- */

static bool parse_items(parser *p, fu_block *b);

/* Ops whose result shape or dtype is an argument: the type is required. */
static bool type_is_stated(fu_op_kind k) {
  switch (fu_op_info_of(k)->cls) {
  case FU_OC_RESHAPE:
  case FU_OC_EXPAND:
  case FU_OC_BROADCAST_IN_DIM:
  case FU_OC_FULL:
  case FU_OC_IOTA:
  case FU_OC_RNG:
  case FU_OC_CAST: return true;
  case FU_OC_META:
  case FU_OC_UNARY:
  case FU_OC_BINARY:
  case FU_OC_TERNARY:
  case FU_OC_REDUCE:
  case FU_OC_VARIANCE:
  case FU_OC_BROADCAST:
  case FU_OC_PERMUTE:
  case FU_OC_SQUEEZE:
  case FU_OC_SLICE:
  case FU_OC_CAT:
  case FU_OC_PAD:
  case FU_OC_MATMUL: break;
  case FU_OC_INDEX:
  case FU_OC_STRIDE_ORDER:
  case FU_OC_SCAN:
  case FU_OC_PARTIAL: break;
  }
  return false;
}

static void bind_poison(parser *p, size_t tbase) {
  for (size_t i = tbase; i < p->toks.n; i++) {
    const fu_token *t = &AT(p->toks, fu_token, i);
    define_value(p, make_poison(p, t), t);
  }
}

/* Builds an op from its parsed pieces (result tokens from tbase, operands
 * from vbase, attrs from abase, types from tybase), infers omitted types and
 * defines the results. */
static void build_op(parser *p, fu_block *b, const fu_token *first, const fu_token *optok, size_t tbase,
                     size_t vbase, size_t abase, size_t tybase, bool have_types, bool types_bad) {
  uint32_t n_res = (uint32_t)(p->toks.n - tbase);
  uint32_t n_ops = (uint32_t)(p->vals.n - vbase);
  uint32_t n_types = (uint32_t)(p->types.n - tybase);
  fu_op_kind kind = (fu_op_kind)((uintptr_t)fu_txt_symtab_get(&p->opnames, optok->p, optok->len));
  if (kind == 0 || kind - 1 == FU_OP_INPUT || kind - 1 == FU_OP_OUTPUT || kind - 1 == FU_OP_SEGMENT) {
    if (kind == 0)
      error_at(p, optok, "unknown op '%.*s'", (int)optok->len, optok->p);
    else
      error_at(p, optok, "'%.*s' cannot appear after '='", (int)optok->len, optok->p);
    bind_poison(p, tbase);
    return;
  }
  kind = (fu_op_kind)(kind - 1);
  const fu_op_info *info = fu_op_info_of(kind);
  uint32_t want_res = kind == FU_OP_VAR_MEAN ? 2 : 1;
  if (n_res != want_res) {
    error_at(p, first, "'%s' defines %u result%s, got %u", info->name, want_res, want_res == 1 ? "" : "s", n_res);
    bind_poison(p, tbase);
    return;
  }
  bool bad = types_bad;
  if (info->num_operands >= 0 && n_ops != (uint32_t)info->num_operands) {
    error_at(p, optok, "'%s' takes %d operand%s, got %u", info->name, info->num_operands,
             info->num_operands == 1 ? "" : "s", n_ops);
    bad = true;
  } else if (info->num_operands < 0 && n_ops == 0) {
    error_at(p, optok, "'%s' takes at least one operand", info->name);
    bad = true;
  }
  if (have_types && n_types != n_res) {
    error_at(p, optok, "'%s' defines %u result%s, but %u type%s given", info->name, n_res, n_res == 1 ? "" : "s", n_types,
             n_types == 1 ? " was" : "s were");
    bad = true;
  }
  fu_op *op = fu_op_new(p->f, kind, vals_from(p, vbase), n_ops, n_res, loc_of(p, first));
  if (!op) {
    p->nomem = true;
    return;
  }
  if (!take_host_attr(p, op, abase) || !fill_payload(p, op, abase, optok)) bad = true;
  if (!have_types && type_is_stated(kind)) {
    error_at(p, optok, "'%s' requires a result type (': type')", info->name);
    bad = true;
  }
  bool poisoned = false;
  for (uint32_t i = 0; i < n_ops; i++) poisoned |= is_poison(op->operands[i]);
  fu_block_append(b, op); /* before inference: it finds the module through the block */
  if (have_types && n_types == n_res) {
    for (uint32_t i = 0; i < n_res; i++) op->results[i]->type = AT(p->types, fu_type, tybase + i);
  } else if (!bad && !poisoned) {
    fu_type out[2];
    memset(out, 0, sizeof out);
    if (fu_infer_types(op, out, p->diag) == FU_OK)
      for (uint32_t i = 0; i < n_res; i++) op->results[i]->type = out[i];
  }
  for (uint32_t i = 0; i < n_res; i++) define_value(p, op->results[i], &AT(p->toks, fu_token, tbase + i));
}

/* input ::= VALUE '=' 'input' type attr-dict?  (the results and the keyword
 * are consumed by the caller) */
static bool parse_input(parser *p, fu_block *b, const fu_token *first, const fu_token *kw, size_t tbase) {
  size_t abase = p->attrs.n;
  fu_type t;
  bool bad = false;
  if (p->tok.kind != FU_TOK_IDENT) {
    error_expected(p, "a type after 'input'");
    return false;
  }
  if (!parse_type(p, &t, &bad)) return false;
  if (p->tok.kind == FU_TOK_LBRACE && !parse_attr_dict(p)) return false;
  uint32_t n_res = (uint32_t)(p->toks.n - tbase);
  if (n_res != 1) {
    error_at(p, first, "'input' defines 1 result, got %u", n_res);
    bind_poison(p, tbase);
    return true;
  }
  fu_op *op = fu_op_new(p->f, FU_OP_INPUT, NULL, 0, 1, loc_of(p, first));
  if (!op) {
    p->nomem = true;
    return false;
  }
  op->u.input.example.rank = -1;
  if (!bad) {
    op->results[0]->type = t;
    fill_input(p, op, abase, kw, &t);
  }
  define_value(p, op->results[0], first);
  fu_block_append(b, op);
  return true;
}

/* op ::= results '=' OPNAME operands? attr-dict? (':' type-list)? */
static bool parse_op(parser *p, fu_block *b) {
  size_t tbase = p->toks.n, vbase = p->vals.n, abase = p->attrs.n, tybase = p->types.n, nbase = p->nodes.n;
  fu_token first = p->tok;
  bool ok = false;
  for (;;) {
    if (!push(p, &p->toks, &p->tok)) goto done;
    advance(p);
    if (p->tok.kind != FU_TOK_COMMA) break;
    advance(p);
    if (p->tok.kind != FU_TOK_VALUE) {
      error_expected(p, "a result name");
      goto done;
    }
  }
  if (!expect(p, FU_TOK_EQ, "'=' after the result names")) goto done;
  if (p->tok.kind != FU_TOK_IDENT) {
    error_expected(p, "an op name");
    goto done;
  }
  fu_token optok = p->tok;
  advance(p);
  if (fu_txt_tok_is(&optok, "input")) {
    ok = parse_input(p, b, &first, &optok, tbase);
    goto done;
  }
  if (!parse_operands(p)) goto done;
  if (p->tok.kind == FU_TOK_LBRACE && !parse_attr_dict(p)) goto done;
  bool have_types = false, types_bad = false;
  if (p->tok.kind == FU_TOK_COLON) {
    advance(p);
    have_types = true;
    for (;;) {
      fu_type t;
      if (!parse_type(p, &t, &types_bad) || !push(p, &p->types, &t)) goto done;
      if (p->tok.kind != FU_TOK_COMMA) break;
      advance(p);
    }
  }
  build_op(p, b, &first, &optok, tbase, vbase, abase, tybase, have_types, types_bad);
  ok = true;
done:
  p->toks.n = tbase;
  p->vals.n = vbase;
  p->attrs.n = abase;
  p->types.n = tybase;
  p->nodes.n = nbase;
  return ok && !p->nomem;
}

/* The optional `{alias=%X}` of an output line: *alias is %X, or NULL
 * when the line has no dictionary; false after an error. */
static bool parse_output_alias(parser *p, fu_value **alias) {
  *alias = NULL;
  if (p->tok.kind != FU_TOK_LBRACE) return true;
  advance(p);
  if (!is_kw(&p->tok, "alias")) {
    error_expected(p, "'alias' (the only attribute of an output)");
    return false;
  }
  advance(p);
  if (!expect(p, FU_TOK_EQ, "'=' after 'alias'")) return false;
  if (p->tok.kind != FU_TOK_VALUE) {
    error_expected(p, "the %input the output is written into");
    return false;
  }
  *alias = use_value(p, &p->tok);
  advance(p);
  return expect(p, FU_TOK_RBRACE, "'}' after the alias");
}

/* output ::= 'output' VALUE (',' VALUE)* ('{' 'alias' '=' VALUE '}')? */
static bool parse_output(parser *p, fu_block *b) {
  fu_token kw = p->tok;
  size_t vbase = p->vals.n;
  bool ok = false;
  advance(p);
  for (;;) {
    if (p->tok.kind != FU_TOK_VALUE) {
      error_expected(p, "a %value to output");
      goto done;
    }
    fu_value *v = use_value(p, &p->tok);
    if (!push(p, &p->vals, &v)) goto done;
    advance(p);
    if (p->tok.kind != FU_TOK_COMMA) break;
    advance(p);
  }
  fu_token at = p->tok;
  fu_value *alias;
  if (!parse_output_alias(p, &alias)) goto done;
  if (alias && p->vals.n - vbase != 1) {
    error_at(p, &at, "an output with an alias names one value, not %u", (unsigned)(p->vals.n - vbase));
    goto done;
  }
  fu_op *op = fu_op_new(p->f, FU_OP_OUTPUT, vals_from(p, vbase), (uint32_t)(p->vals.n - vbase), 0,
                        loc_of(p, &kw));
  if (!op) {
    p->nomem = true;
    goto done;
  }
  op->u.output.alias = alias;
  fu_block_append(b, op);
  ok = true;
done:
  p->vals.n = vbase;
  return ok;
}

/* '(' (VALUE (',' VALUE)*)? ')' : the tokens are pushed on p->toks. */
static bool parse_value_list(parser *p, const char *what) {
  if (!expect(p, FU_TOK_LPAREN, what)) return false;
  if (p->tok.kind == FU_TOK_RPAREN) {
    advance(p);
    return true;
  }
  for (;;) {
    if (p->tok.kind != FU_TOK_VALUE) {
      error_expected(p, "a %value");
      return false;
    }
    if (!push(p, &p->toks, &p->tok)) return false;
    advance(p);
    if (p->tok.kind == FU_TOK_COMMA) {
      advance(p);
      continue;
    }
    return expect(p, FU_TOK_RPAREN, "',' or ')' in the value list");
  }
}

/* Whether some segment of f carries a schedule. */
static bool has_schedule(fu_fusion *f) {
  for (fu_op *op = fu_walk_first(&f->body); op; op = fu_walk_next(op))
    if (op->kind == FU_OP_SEGMENT && op->u.segment.schedule) return true;
  return false;
}

/* segment ::= 'segment' '@' NAME KIND '(' values ')' '->' '(' values ')' '{' item* '}'
 * The inputs are resolved before the body, the outputs after it. */
static bool parse_segment(parser *p, fu_block *b) {
  fu_token kw = p->tok;
  size_t tbase = p->toks.n, vbase = p->vals.n;
  bool ok = false;
  advance(p);
  if (p->tok.kind != FU_TOK_AT) {
    error_expected(p, "'@name' after 'segment'");
    return false;
  }
  fu_token name = p->tok;
  advance(p);
  if (p->tok.kind != FU_TOK_IDENT) {
    error_expected(p, "a scheduler kind after the segment name");
    return false;
  }
  fu_token sched = p->tok;
  fu_sched_kind kind = FU_SK_NONE;
  if (!fu_sched_kind_from_name(sched.p, sched.len, &kind)) {
    error_at(p, &sched, "unknown scheduler kind '%.*s'; valid: %s", (int)sched.len, sched.p, fu_sched_kind_names());
    return false;
  }
  advance(p);
  if (!parse_value_list(p, "'(' before the segment inputs")) goto done;
  for (size_t i = tbase; i < p->toks.n; i++) {
    fu_value *v = use_value(p, &AT(p->toks, fu_token, i));
    if (!push(p, &p->vals, &v)) goto done;
  }
  p->toks.n = tbase;
  if (!expect(p, FU_TOK_ARROW, "'->' after the segment inputs")) goto done;
  if (!parse_value_list(p, "'(' before the segment outputs")) goto done;
  if (p->tok.kind != FU_TOK_LBRACE) {
    error_expected(p, "'{' to open the segment body");
    goto done;
  }
  fu_token open = p->tok;
  advance(p);
  fu_op *op = fu_op_new(p->f, FU_OP_SEGMENT, vals_from(p, vbase), (uint32_t)(p->vals.n - vbase), 0,
                        loc_of(p, &kw));
  fu_block *body = fu_arena_alloc(p->m->arena, sizeof *body);
  if (!op || !body) {
    p->nomem = true;
    goto done;
  }
  p->vals.n = vbase;
  body->parent_op = op;
  body->fusion = p->f;
  op->u.segment.body = body;
  op->u.segment.name = arena_strn(p, name.p + 1, name.len - 1);
  op->u.segment.kind = kind;
  if (op->u.segment.name) {
    if (fu_txt_symtab_get(&p->segments, name.p + 1, name.len - 1))
      error_at(p, &name, "redefinition of segment '%.*s'", (int)name.len, name.p);
    else if (!fu_txt_symtab_put(&p->segments, op->u.segment.name, name.len - 1, op))
      p->nomem = true;
  }
  fu_block_append(b, op);
  if (p->seg_depth >= MAX_SEGMENT_DEPTH) {
    error_at(p, &open, "segments nested deeper than %d", MAX_SEGMENT_DEPTH);
    goto done;
  }
  p->seg_depth++;
  bool body_ok = parse_items(p, body);
  p->seg_depth--;
  if (!body_ok) goto done;
  advance(p); /* '}' */
  uint32_t n_out = (uint32_t)(p->toks.n - tbase);
  fu_value **outs = n_out ? fu_arena_calloc(p->m->arena, n_out, sizeof *outs) : NULL;
  if (n_out && !outs) {
    p->nomem = true;
    goto done;
  }
  for (uint32_t i = 0; i < n_out; i++) {
    const fu_token *t = &AT(p->toks, fu_token, tbase + i);
    outs[i] = lookup_value(p, t);
    if (!outs[i]) {
      error_at(p, t, "segment output '%.*s' is not defined", (int)t->len, t->p);
      outs[i] = p->poison;
    }
  }
  op->u.segment.outputs = outs;
  op->u.segment.n_outputs = n_out;
  ok = true;
done:
  p->toks.n = tbase;
  p->vals.n = vbase;
  return ok && !p->nomem;
}

/* ---- codegen: `schedule` and `kernel` items in a segment body ------------
 * (lib/text/schedule_text.c).  The sub-parsers take over the lexer at the
 * keyword and leave it just after their closing '}'.  False on a syntax
 * error. */
static bool parse_segment_codegen(parser *p, fu_block *b) {
  fu_token kw = p->tok;
  fu_segment_info *seg = &b->parent_op->u.segment;
  if (p->have_ahead) {
    error_expected(p, "an op, 'output', 'segment' or '}'");
    return false;
  }
  bool nomem = false, ok;
  if (is_kw(&kw, "gemm")) {
    fu_gemm *g = NULL;
    ok = fu_txt_parse_gemm(&p->lx, &kw, p->m, &p->values, p->diag, &g, &nomem);
    if (ok && seg->gemm) error_at(p, &kw, "segment '@%s' has a gemm already", seg->name ? seg->name : "?");
    else if (ok && g) seg->gemm = g;
  } else if (is_kw(&kw, "schedule")) {
    fu_schedule *s = NULL;
    ok = fu_txt_parse_schedule(&p->lx, &kw, p->m, &p->values, p->diag, &s, &nomem);
    if (ok && seg->schedule) error_at(p, &kw, "segment '@%s' has a schedule already", seg->name ? seg->name : "?");
    else if (ok && s) seg->schedule = s;
  } else {
    struct fu_kernel *k = NULL;
    ok = fu_txt_parse_segment_kernel(&p->lx, &kw, p->m, p->f, p->diag, &k, &nomem);
    if (ok && seg->kernel) error_at(p, &kw, "segment '@%s' has a kernel already", seg->name ? seg->name : "?");
    else if (ok) seg->kernel = k;
  }
  p->nomem |= nomem;
  if (!ok) return false;
  advance(p); /* the token after the closing '}' */
  return true;
}
/* ---- end codegen ---- */

/* item* up to (not including) the closing '}'.  False on a syntax error. */
static bool parse_items(parser *p, fu_block *b) {
  for (;;) {
    if (p->nomem || fu_diag_stopped(p->diag)) return false;
    switch (p->tok.kind) {
    case FU_TOK_RBRACE: return true;
    case FU_TOK_VALUE:
      if (!parse_op(p, b)) return false;
      break;
    case FU_TOK_IDENT:
      if (is_kw(&p->tok, "output")) {
        if (!parse_output(p, b)) return false;
        break;
      }
      if (is_kw(&p->tok, "segment")) {
        if (!parse_segment(p, b)) return false;
        break;
      }
      /* ---- codegen: a segment's schedule and kernel ---- */
      if (b->parent_op && (is_kw(&p->tok, "schedule") || is_kw(&p->tok, "kernel") || is_kw(&p->tok, "gemm"))) {
        if (!parse_segment_codegen(p, b)) return false;
        break;
      }
      /* ---- end codegen ---- */
      /* fall through */
    default: error_expected(p, "an op, 'output', 'segment' or '}'"); return false;
    }
  }
}

/* fusion ::= 'fusion' '@' NAME '{' item* '}' */
static bool parse_fusion(parser *p) {
  advance(p); /* 'fusion' */
  if (p->tok.kind != FU_TOK_AT) {
    error_expected(p, "'@name' after 'fusion'");
    return false;
  }
  fu_token name = p->tok;
  p->f = fu_fusion_new(p->m, NULL, loc_of(p, &name));
  if (!p->f) {
    p->nomem = true;
    return false;
  }
  p->f->name = arena_strn(p, name.p + 1, name.len - 1);
  if (p->f->name) {
    if (fu_txt_symtab_get(&p->fusions, name.p + 1, name.len - 1))
      error_at(p, &name, "redefinition of fusion '%.*s'", (int)name.len, name.p);
    else if (!fu_txt_symtab_put(&p->fusions, p->f->name, name.len - 1, p->f))
      p->nomem = true;
  }
  fu_txt_symtab_clear(&p->values);
  fu_txt_symtab_clear(&p->segments);
  advance(p);
  if (!expect(p, FU_TOK_LBRACE, "'{' after the fusion name")) return false;
  unsigned errors_before = p->diag->n_errors;
  if (!parse_items(p, &p->f->body)) return false;
  advance(p); /* '}' */
  /* Schedules are checked once their fusion is complete, and only over ops
   * that verified: the index graph indexes arrays with the ops' attributes
   * (a permute's dims), which only the op verifier bounds.  A fusion
   * without schedules is left to the caller's verifier, as before. */
  if (p->diag->n_errors == errors_before && !p->nomem && has_schedule(p->f) && fu_verify_fusion(p->f, p->diag) == FU_OK)
    fu_schedule_verify_fusion(p->f, p->diag);
  /* matmul segments: each gemm line against its segment */
  for (fu_op *op = p->f->body.first; op && p->diag->n_errors == errors_before; op = op->next)
    if (op->kind == FU_OP_SEGMENT && op->u.segment.gemm) fu_gemm_verify(op, op->u.segment.gemm, p->diag);
  return true;
}

/* Skips to the next `fusion` keyword after a syntax error, quietly. */
static void recover(parser *p) {
  p->lx.quiet = true;
  while (p->tok.kind != FU_TOK_EOF && !is_kw(&p->tok, "fusion")) advance(p);
  p->lx.quiet = false;
}

static void discard_diag(void *user, const fu_diagnostic *d) {
  (void)user;
  (void)d;
}

fu_status fu_parse_module(const fu_source *src, fu_allocator alloc, fu_diag_engine *diag, fu_module **out) {
  if (out) *out = NULL;
  fu_diag_engine quiet_diag;
  if (!diag) {
    fu_diag_init(&quiet_diag, alloc);
    quiet_diag.handler = discard_diag;
    diag = &quiet_diag;
  }
  if (!src || !out || (!src->text && src->len)) return FU_ERR_INVALID_ARG;
  parser p;
  memset(&p, 0, sizeof p);
  p.diag = diag;
  p.alloc = alloc;
  p.src = src;
  p.m = fu_module_new(alloc);
  if (!p.m) return FU_ERR_NOMEM;
  p.m->source = src;
  p.vals.elem = sizeof(fu_value *);
  p.toks.elem = sizeof(fu_token);
  p.types.elem = sizeof(fu_type);
  p.nodes.elem = sizeof(av_node);
  p.attrs.elem = sizeof(attr_ent);
  fu_txt_symtab_init(&p.values, alloc);
  fu_txt_symtab_init(&p.fusions, alloc);
  fu_txt_symtab_init(&p.segments, alloc);
  fu_txt_symtab_init(&p.opnames, alloc);
  unsigned errors_before = diag->n_errors;
  p.poison = fu_arena_alloc(p.m->arena, sizeof *p.poison);
  if (!p.poison) p.nomem = true;
  else p.poison->type.rank = FU_SCALAR_RANK;
  for (int k = 0; k < FU_OP_COUNT && !p.nomem; k++) {
    const char *n = fu_op_info_of((fu_op_kind)k)->name;
    if (!fu_txt_symtab_put(&p.opnames, n, strlen(n), (void *)(uintptr_t)(k + 1))) p.nomem = true;
  }
  fu_txt_lex_init(&p.lx, src, alloc, diag);
  advance(&p);
  while (!p.nomem && !fu_diag_stopped(diag) && p.tok.kind != FU_TOK_EOF) {
    if (is_kw(&p.tok, "fusion")) {
      if (!parse_fusion(&p)) recover(&p);
    } else {
      error_expected(&p, "'fusion'");
      advance(&p);
      recover(&p);
    }
  }
  fu_txt_symtab_free(&p.values);
  fu_txt_symtab_free(&p.fusions);
  fu_txt_symtab_free(&p.segments);
  fu_txt_symtab_free(&p.opnames);
  scratch_free(&alloc, &p.vals);
  scratch_free(&alloc, &p.toks);
  scratch_free(&alloc, &p.types);
  scratch_free(&alloc, &p.nodes);
  scratch_free(&alloc, &p.attrs);
  if (p.nomem) {
    fu_error(diag, fu_loc_none(), "out of memory while parsing");
    fu_module_free(p.m);
    return FU_ERR_NOMEM;
  }
  if (diag->n_errors != errors_before) {
    fu_module_free(p.m);
    return FU_ERR_PARSE;
  }
  *out = p.m;
  return FU_OK;
}
