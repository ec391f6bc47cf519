/* fuser: schedules in .fir text (grammar in docs/ir.md, "Schedules"), a
 * matmul segment's `gemm` line (docs/ir.md, "Segments"), and the hook that
 * parses a lowered kernel inside a segment.
 *
 *   schedule ::= 'schedule' attrs? '{' stmt* '}'
 *   stmt     ::= 'reference' VALUE '[' AXIS (',' AXIS)* ']'
 *              | 'merge' AXIS ',' AXIS '->' AXIS
 *              | 'split' AXIS ',' INT '->' AXIS ',' AXIS attrs?      {tail=exact|guard|peel}
 *              | 'loop' '[' (AXIS ':' PTYPE attrs? (',' ...)*)? ']'  {grid=direct|stride}
 *              | 'tensor' VALUE attrs?               {memory=..., inline=N, access=..., keep=N}
 *   attrs    ::= '{' IDENT '=' (IDENT | INT | STRING) (',' ...)* '}'
 *   gemm     ::= 'gemm' VALUE ',' VALUE '->' VALUE '{' IDENT '=' value (',' ...)* '}'
 *                a, b: row | col; lda, ldb: INT | IDENT | STRING; epilogue: none | relu | gelu;
 *                bias: VALUE; alpha: FLOAT | INT
 *
 * The parser resolves names (axes, values, parallel types, attribute
 * values) with located errors; everything that needs the whole fusion
 * (layouts for vector accesses, extents) is fu_schedule_verify's job,
 * which the .fir parser runs once the fusion is read. */
#include <stdio.h>
#include <string.h>

#include "fuser/kir_text.h"
#include "schedule_text.h"

/* ---- names ---------------------------------------------------------------- */

static const char *memory_name(fu_mem_space s) {
  return s == FU_MEM_SHARED ? "shared" : s == FU_MEM_LOCAL ? "local" : "global";
}

/* ---- printing ---------------------------------------------------------------- */

static void indent_to(fu_strbuf *out, int n) {
  for (int i = 0; i < n; i++) fu_strbuf_putc(out, ' ');
}

static bool ident_text(const char *s) {
  if (!s || !*s) return false;
  if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
          *s == '.'))
      return false;
  return true;
}

static void put_word(fu_strbuf *out, const char *s) {
  if (ident_text(s)) {
    fu_strbuf_puts(out, s);
    return;
  }
  fu_strbuf_putc(out, '"');
  for (; s && *s; s++) {
    if (*s == '"' || *s == '\\') fu_strbuf_putc(out, '\\');
    fu_strbuf_putc(out, *s);
  }
  fu_strbuf_putc(out, '"');
}

static void put_ref(fu_strbuf *out, const fu_value *v, fu_value_ref_fn ref, void *user) {
  if (ref) {
    ref(user, out, v);
    return;
  }
  fu_strbuf_putc(out, '%');
  fu_strbuf_puts(out, v && v->name ? v->name : "?");
}

static const char *axis_name(const fu_schedule *s, uint32_t a) {
  return a < s->n_axes && s->axes[a].name ? s->axes[a].name : "?";
}

void fu_schedule_print(fu_strbuf *out, const fu_schedule *s, int indent, fu_value_ref_fn ref, void *user) {
  if (!s) return;
  indent_to(out, indent);
  fu_strbuf_puts(out, "schedule");
  int n = 0;
  if (s->device) {
    fu_strbuf_puts(out, n++ ? ", " : " {");
    fu_strbuf_puts(out, "device=");
    put_word(out, s->device);
  }
  if (s->arch) {
    fu_strbuf_puts(out, n++ ? ", " : " {");
    fu_strbuf_puts(out, "arch=");
    put_word(out, s->arch);
  }
  if (s->index_dtype == FU_DT_I32 || s->index_dtype == FU_DT_I64) {
    fu_strbuf_puts(out, n++ ? ", " : " {");
    fu_strbuf_printf(out, "index=%s", fu_dtype_name(s->index_dtype));
  }
  if (s->kind != FU_SK_NONE && s->kind != FU_SK_POINTWISE) {
    fu_strbuf_puts(out, n++ ? ", " : " {");
    fu_strbuf_puts(out, "kind=");
    put_word(out, fu_sched_kind_name(s->kind));
  }
  if (s->reduce != FU_RM_NONE) {
    fu_strbuf_puts(out, n++ ? ", " : " {");
    fu_strbuf_printf(out, "reduce=%s", fu_reduce_mode_name(s->reduce));
  }
  if (s->persist != FU_PM_NONE) {
    fu_strbuf_puts(out, n++ ? ", " : " {");
    fu_strbuf_printf(out, "persist=%s", fu_persist_mode_name(s->persist));
  }
  if (s->online) {
    fu_strbuf_puts(out, n++ ? ", " : " {");
    fu_strbuf_puts(out, "online=true");
  }
  if (n) fu_strbuf_putc(out, '}');
  fu_strbuf_puts(out, " {\n");
  if (s->reference) {
    indent_to(out, indent + 2);
    fu_strbuf_puts(out, "reference ");
    put_ref(out, s->reference, ref, user);
    fu_strbuf_puts(out, " [");
    bool first = true;
    for (uint32_t a = 0; a < s->n_axes; a++) {
      if (s->axes[a].ref_dim < 0) continue;
      if (!first) fu_strbuf_puts(out, ", ");
      first = false;
      fu_strbuf_puts(out, axis_name(s, a));
    }
    fu_strbuf_puts(out, "]\n");
  }
  for (uint32_t i = 0; i < s->n_xforms; i++) {
    const fu_sxform *x = &s->xforms[i];
    indent_to(out, indent + 2);
    if (x->kind == FU_SX_MERGE) {
      fu_strbuf_printf(out, "merge %s, %s -> %s\n", axis_name(s, x->in[0]), axis_name(s, x->in[1]),
                       axis_name(s, x->out[0]));
    } else {
      fu_strbuf_printf(out, "split %s, %lld -> %s, %s {tail=%s}\n", axis_name(s, x->in[0]), (long long)x->factor,
                       axis_name(s, x->out[0]), axis_name(s, x->out[1]), fu_tail_name(x->tail));
    }
  }
  indent_to(out, indent + 2);
  fu_strbuf_puts(out, "loop [");
  for (uint32_t i = 0; i < s->n_loops; i++) {
    if (i) fu_strbuf_puts(out, ", ");
    fu_strbuf_printf(out, "%s: %s", axis_name(s, s->loops[i].axis), fu_ptype_name(s->loops[i].ptype));
    if (s->loops[i].grid_stride) fu_strbuf_puts(out, " {grid=stride}");
  }
  fu_strbuf_puts(out, "]\n");
  for (uint32_t i = 0; i < s->n_tensors; i++) {
    const fu_stensor *t = &s->tensors[i];
    indent_to(out, indent + 2);
    fu_strbuf_puts(out, "tensor ");
    put_ref(out, t->value, ref, user);
    fu_strbuf_printf(out, " {memory=%s", memory_name(t->memory));
    if (t->inline_pos >= 0) fu_strbuf_printf(out, ", inline=%d", (int)t->inline_pos);
    if (t->keep > 0) fu_strbuf_printf(out, ", keep=%d", (int)t->keep);
    if (t->access != FU_ACCESS_DEFAULT)
      fu_strbuf_printf(out, ", access=%s",
                       t->access == FU_ACCESS_VECTOR ? "vector" : t->access == FU_ACCESS_TILE ? "tile" : "scalar");
    fu_strbuf_puts(out, "}\n");
  }
  indent_to(out, indent);
  fu_strbuf_puts(out, "}\n");
}

/* A leading dim: a number or a symbol bare, an expression quoted. */
static void put_ld(fu_strbuf *out, const char *s) {
  bool digits = *s != '\0';
  for (const char *c = s; *c; c++) digits &= *c >= '0' && *c <= '9';
  if (digits) fu_strbuf_puts(out, s);
  else put_word(out, s);
}

/* A matmul segment's plan line (fuser/gemm.h). */
void fu_gemm_print(fu_strbuf *out, const fu_gemm *g, int indent, fu_gemm_ref_fn ref, void *user) {
  indent_to(out, indent);
  fu_strbuf_puts(out, "gemm ");
  put_ref(out, g->a, ref, user);
  fu_strbuf_puts(out, ", ");
  put_ref(out, g->b, ref, user);
  fu_strbuf_puts(out, " -> ");
  put_ref(out, g->d, ref, user);
  fu_strbuf_printf(out, " {a=%s", g->a_order == FU_GEMM_ROW ? "row" : "col");
  if (g->lda) {
    fu_strbuf_puts(out, ", lda=");
    put_ld(out, g->lda);
  }
  fu_strbuf_printf(out, ", b=%s", g->b_order == FU_GEMM_ROW ? "row" : "col");
  if (g->ldb) {
    fu_strbuf_puts(out, ", ldb=");
    put_ld(out, g->ldb);
  }
  fu_strbuf_printf(out, ", epilogue=%s", fu_gemm_act_name(g->act));
  if (g->bias) {
    fu_strbuf_puts(out, ", bias=");
    put_ref(out, g->bias, ref, user);
  }
  fu_strbuf_puts(out, ", alpha=");
  fu_strbuf_put_double(out, g->alpha);
  fu_strbuf_puts(out, "}\n");
}

/* ---- parsing -------------------------------------------------------------------- */

/* Axes and transforms are capped: each transform nests the index
 * expressions one level deeper.  Tensor entries (one per value of the
 * segment) grow with the segment. */
enum { MAX_AXES = 256, MAX_STMTS = 256 };

typedef struct sparser {
  fu_lexer *lx;
  fu_token tok;
  fu_diag_engine *diag;
  fu_module *m;
  const fu_txt_symtab *values;
  bool nomem, bad;
  fu_saxis axes[MAX_AXES];
  uint32_t n_axes;
  fu_sxform xforms[MAX_STMTS];
  uint32_t n_xforms;
  fu_sloop loops[MAX_STMTS];
  uint32_t n_loops;
  bool have_loop;
  fu_stensor *tensors;
  uint32_t n_tensors, cap_tensors;
} sparser;

static fu_loc tloc(const sparser *p, const fu_token *t) {
  fu_loc l = {p->lx->src, t->line, t->col};
  return l;
}

static void next(sparser *p) { fu_txt_lex_next(p->lx, &p->tok); }

static void serr(sparser *p, const fu_token *t, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void serr(sparser *p, const fu_token *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fu_diag_vreport(p->diag, FU_SEV_ERROR, tloc(p, t), fmt, ap);
  va_end(ap);
  p->bad = true;
}

static bool expected(sparser *p, const char *what) {
  if (p->tok.kind != FU_TOK_ERROR) {
    char got[128];
    serr(p, &p->tok, "expected %s, got %s", what, fu_txt_tok_describe(&p->tok, got, sizeof got));
  }
  return false;
}

static bool accept(sparser *p, fu_txt_tok k, const char *what) {
  if (p->tok.kind != k) return expected(p, what);
  next(p);
  return true;
}

static bool is_word(const fu_token *t, const char *w) { return t->kind == FU_TOK_IDENT && fu_txt_tok_is(t, w); }

static const char *dup_tok(sparser *p, const fu_token *t, size_t skip) {
  char *s = fu_arena_strndup(p->m->arena, t->p + skip, t->len - skip);
  if (!s) p->nomem = true;
  return s;
}

static int32_t find_axis(const sparser *p, const fu_token *t) {
  for (uint32_t i = 0; i < p->n_axes; i++)
    if (strlen(p->axes[i].name) == t->len && memcmp(p->axes[i].name, t->p, t->len) == 0) return (int32_t)i;
  return -1;
}

/* An axis used by a transform or the loop: it must be defined. */
static bool use_axis(sparser *p, uint32_t *out) {
  if (p->tok.kind != FU_TOK_IDENT) return expected(p, "an axis name");
  int32_t a = find_axis(p, &p->tok);
  if (a < 0) {
    serr(p, &p->tok, "unknown axis '%.*s'", (int)p->tok.len, p->tok.p);
    a = 0;
  }
  *out = (uint32_t)a;
  next(p);
  return true;
}

/* A new axis: defined once per schedule. */
static bool def_axis(sparser *p, int32_t ref_dim, int32_t def, uint32_t *out) {
  if (p->tok.kind != FU_TOK_IDENT) return expected(p, "a new axis name");
  int32_t old = find_axis(p, &p->tok);
  if (old >= 0) {
    serr(p, &p->tok, "redefinition of axis '%.*s'", (int)p->tok.len, p->tok.p);
    fu_note(p->diag, p->axes[old].loc, "previous definition of '%s' is here", p->axes[old].name);
  }
  if (p->n_axes == MAX_AXES) {
    serr(p, &p->tok, "too many axes (the limit is %d)", MAX_AXES);
    return false;
  }
  fu_saxis *a = &p->axes[p->n_axes];
  a->name = dup_tok(p, &p->tok, 0);
  a->ref_dim = ref_dim;
  a->def = def;
  a->loc = tloc(p, &p->tok);
  if (!a->name) return false;
  *out = p->n_axes++;
  next(p);
  return true;
}

static fu_value *use_value(sparser *p) {
  if (p->tok.kind != FU_TOK_VALUE) {
    expected(p, "a %value");
    return NULL;
  }
  fu_value *v = fu_txt_symtab_get(p->values, p->tok.p + 1, p->tok.len - 1);
  if (!v) serr(p, &p->tok, "use of undefined value '%.*s'", (int)p->tok.len, p->tok.p);
  else if (!fu_type_is_tensor(&v->type)) serr(p, &p->tok, "'%.*s' is not a tensor", (int)p->tok.len, p->tok.p);
  next(p);
  return v && fu_type_is_tensor(&v->type) ? v : NULL;
}

/* One parsed attribute: its name token and its value token. */
typedef struct sattr {
  fu_token name, value;
} sattr;

/* attrs ::= '{' IDENT '=' (IDENT|INT|STRING) (',' ...)* '}' into a[0..*n).
 * Duplicate names are errors. */
static bool parse_attrs(sparser *p, sattr *a, uint32_t cap, uint32_t *n) {
  *n = 0;
  next(p); /* '{' */
  if (p->tok.kind == FU_TOK_RBRACE) {
    next(p);
    return true;
  }
  for (;;) {
    if (p->tok.kind != FU_TOK_IDENT) return expected(p, "an attribute name");
    fu_token name = p->tok;
    for (uint32_t i = 0; i < *n; i++)
      if (a[i].name.len == name.len && memcmp(a[i].name.p, name.p, name.len) == 0)
        serr(p, &name, "duplicate attribute '%.*s'", (int)name.len, name.p);
    next(p);
    if (!accept(p, FU_TOK_EQ, "'=' after the attribute name")) return false;
    if (p->tok.kind != FU_TOK_IDENT && p->tok.kind != FU_TOK_INT && p->tok.kind != FU_TOK_STRING)
      return expected(p, "an attribute value");
    if (*n < cap) {
      a[*n].name = name;
      a[*n].value = p->tok;
      (*n)++;
    } else {
      serr(p, &name, "too many attributes");
    }
    next(p);
    if (p->tok.kind == FU_TOK_COMMA) {
      next(p);
      continue;
    }
    return accept(p, FU_TOK_RBRACE, "',' or '}' in the attributes");
  }
}

/* The text of an IDENT or STRING attribute value (strings unescaped). */
static const char *attr_word(sparser *p, const fu_token *t) {
  if (t->kind == FU_TOK_IDENT) return dup_tok(p, t, 0);
  if (t->kind != FU_TOK_STRING) return NULL;
  char *s = fu_arena_alloc(p->m->arena, t->len);
  if (!s) {
    p->nomem = true;
    return NULL;
  }
  size_t o = 0;
  for (uint32_t i = 1; i + 1 < t->len; i++) {
    char c = t->p[i];
    if (c == '\\' && i + 2 < t->len) c = t->p[++i];
    s[o++] = c;
  }
  s[o] = '\0';
  return s;
}

static void bad_attr_value(sparser *p, const sattr *a, const char *what) {
  serr(p, &a->value, "attribute '%.*s' must be %s", (int)a->name.len, a->name.p, what);
}

static void header_attrs(sparser *p, fu_schedule *s) {
  sattr a[8];
  uint32_t n;
  if (!parse_attrs(p, a, 8, &n)) return;
  for (uint32_t i = 0; i < n; i++) {
    if (fu_txt_tok_is(&a[i].name, "device")) {
      if (!(s->device = attr_word(p, &a[i].value)) && !p->nomem) bad_attr_value(p, &a[i], "a device name");
    } else if (fu_txt_tok_is(&a[i].name, "arch")) {
      if (!(s->arch = attr_word(p, &a[i].value)) && !p->nomem) bad_attr_value(p, &a[i], "an architecture such as sm_90");
    } else if (fu_txt_tok_is(&a[i].name, "index")) {
      if (is_word(&a[i].value, "i32")) s->index_dtype = FU_DT_I32;
      else if (is_word(&a[i].value, "i64")) s->index_dtype = FU_DT_I64;
      else bad_attr_value(p, &a[i], "i32 or i64");
    } else if (fu_txt_tok_is(&a[i].name, "kind")) {
      const char *w = attr_word(p, &a[i].value);
      if (!w) {
        if (!p->nomem) bad_attr_value(p, &a[i], "a segment kind such as transpose");
      } else if (!fu_sched_kind_from_name(w, strlen(w), &s->kind)) {
        serr(p, &a[i].value, "unknown segment kind '%s' for 'kind'; valid: %s", w, fu_sched_kind_names());
        s->kind = FU_SK_NONE;
      }
    } else if (fu_txt_tok_is(&a[i].name, "reduce")) {
      s->reduce = FU_RM_NONE;
      for (fu_reduce_mode r = FU_RM_SERIAL; r <= FU_RM_GRID; r++)
        if (is_word(&a[i].value, fu_reduce_mode_name(r))) s->reduce = r;
      if (s->reduce == FU_RM_NONE) bad_attr_value(p, &a[i], "serial, warp, block or grid");
    } else if (fu_txt_tok_is(&a[i].name, "persist")) {
      s->persist = FU_PM_NONE;
      for (fu_persist_mode r = FU_PM_REGISTERS; r <= FU_PM_REREAD; r++)
        if (is_word(&a[i].value, fu_persist_mode_name(r))) s->persist = r;
      if (s->persist == FU_PM_NONE) bad_attr_value(p, &a[i], "registers, smem or reread");
    } else if (fu_txt_tok_is(&a[i].name, "online")) {
      if (is_word(&a[i].value, "true")) s->online = true;
      else if (is_word(&a[i].value, "false")) s->online = false;
      else bad_attr_value(p, &a[i], "true or false");
    } else {
      serr(p, &a[i].name,
           "unknown attribute '%.*s' for 'schedule'; valid: device, arch, index, kind, reduce, persist, online",
           (int)a[i].name.len, a[i].name.p);
    }
  }
}

/* Does the lexer's next token (after the current '{') read `IDENT =`?  Looks
 * ahead on a quiet copy of the lexer, which consumes nothing. */
static bool brace_starts_attrs(const sparser *p) {
  fu_lexer copy = *p->lx;
  copy.quiet = true;
  fu_token a, b;
  fu_txt_lex_next(&copy, &a);
  fu_txt_lex_next(&copy, &b);
  if (a.kind == FU_TOK_RBRACE) return b.kind == FU_TOK_LBRACE; /* `schedule {} {` */
  return a.kind == FU_TOK_IDENT && b.kind == FU_TOK_EQ;
}

static bool parse_reference(sparser *p, fu_schedule *s, const fu_token *kw) {
  next(p);
  if (s->reference || p->n_axes) serr(p, kw, "the schedule has a reference already");
  fu_token vt = p->tok;
  fu_value *v = use_value(p);
  if (vt.kind != FU_TOK_VALUE) return false;
  if (!s->reference) s->reference = v;
  if (!accept(p, FU_TOK_LBRACKET, "'[' before the reference's axis names")) return false;
  int32_t d = 0;
  bool more = p->tok.kind != FU_TOK_RBRACKET; /* `[]`: a rank-0 reference */
  if (!more) next(p);
  while (more) {
    uint32_t a;
    if (!def_axis(p, d++, -1, &a)) return false;
    if (p->tok.kind == FU_TOK_COMMA) {
      next(p);
      continue;
    }
    if (!accept(p, FU_TOK_RBRACKET, "',' or ']' in the axis names")) return false;
    more = false;
  }
  if (v && d != v->type.rank)
    serr(p, &vt, "reference '%%%s' has rank %d, but %d axes were named", v->name ? v->name : "?", (int)v->type.rank,
         (int)d);
  return true;
}

static bool parse_merge(sparser *p, const fu_token *kw) {
  next(p);
  if (p->n_xforms == MAX_STMTS) {
    serr(p, kw, "too many transforms");
    return false;
  }
  fu_sxform *x = &p->xforms[p->n_xforms];
  memset(x, 0, sizeof *x);
  x->kind = FU_SX_MERGE;
  x->loc = tloc(p, kw);
  if (!use_axis(p, &x->in[0]) || !accept(p, FU_TOK_COMMA, "',' between the merged axes") || !use_axis(p, &x->in[1]) ||
      !accept(p, FU_TOK_ARROW, "'->' after the merged axes") ||
      !def_axis(p, -1, (int32_t)p->n_xforms, &x->out[0]))
    return false;
  p->n_xforms++;
  return true;
}

static bool parse_split(sparser *p, const fu_token *kw) {
  next(p);
  if (p->n_xforms == MAX_STMTS) {
    serr(p, kw, "too many transforms");
    return false;
  }
  fu_sxform *x = &p->xforms[p->n_xforms];
  memset(x, 0, sizeof *x);
  x->kind = FU_SX_SPLIT;
  x->tail = FU_TAIL_GUARD;
  x->loc = tloc(p, kw);
  if (!use_axis(p, &x->in[0]) || !accept(p, FU_TOK_COMMA, "',' before the split factor")) return false;
  if (p->tok.kind != FU_TOK_INT) return expected(p, "an integer split factor");
  x->factor = p->tok.ival;
  if (x->factor <= 0) serr(p, &p->tok, "split factor must be positive, got %lld", (long long)x->factor);
  next(p);
  if (!accept(p, FU_TOK_ARROW, "'->' after the split factor") || !def_axis(p, -1, (int32_t)p->n_xforms, &x->out[0]) ||
      !accept(p, FU_TOK_COMMA, "',' between the split's outer and inner axes") ||
      !def_axis(p, -1, (int32_t)p->n_xforms, &x->out[1]))
    return false;
  if (p->tok.kind == FU_TOK_LBRACE) {
    sattr a[4];
    uint32_t n;
    if (!parse_attrs(p, a, 4, &n)) return false;
    for (uint32_t i = 0; i < n; i++) {
      if (!fu_txt_tok_is(&a[i].name, "tail")) {
        serr(p, &a[i].name, "unknown attribute '%.*s' for 'split'; valid: tail", (int)a[i].name.len, a[i].name.p);
      } else if (is_word(&a[i].value, "exact")) {
        x->tail = FU_TAIL_EXACT;
      } else if (is_word(&a[i].value, "guard")) {
        x->tail = FU_TAIL_GUARD;
      } else if (is_word(&a[i].value, "peel")) {
        x->tail = FU_TAIL_PEEL;
      } else {
        serr(p, &a[i].value, "unknown tail strategy '%.*s'; valid: exact, guard, peel", (int)a[i].value.len,
             a[i].value.p);
      }
    }
  }
  p->n_xforms++;
  return true;
}

/* `{grid=direct|stride}` after a block axis's parallel type. */
static bool parse_loop_attrs(sparser *p, fu_sloop *l) {
  sattr a[4];
  uint32_t n;
  if (!parse_attrs(p, a, 4, &n)) return false;
  for (uint32_t i = 0; i < n; i++) {
    if (!fu_txt_tok_is(&a[i].name, "grid")) {
      serr(p, &a[i].name, "unknown attribute '%.*s' for a loop axis; valid: grid", (int)a[i].name.len, a[i].name.p);
    } else if (l->ptype != FU_PT_BLOCK_X && l->ptype != FU_PT_BLOCK_Y) {
      serr(p, &a[i].name, "'grid' is for axes bound to blockIdx.x or blockIdx.y, not %s", fu_ptype_name(l->ptype));
    } else if (is_word(&a[i].value, "stride")) {
      l->grid_stride = true;
    } else if (is_word(&a[i].value, "direct")) {
      l->grid_stride = false;
    } else {
      serr(p, &a[i].value, "unknown grid binding '%.*s'; valid: direct, stride", (int)a[i].value.len, a[i].value.p);
    }
  }
  return true;
}

static bool parse_loop(sparser *p, const fu_token *kw) {
  next(p);
  if (p->have_loop) serr(p, kw, "the schedule has a 'loop' already");
  p->have_loop = true;
  p->n_loops = 0;
  if (!accept(p, FU_TOK_LBRACKET, "'[' after 'loop'")) return false;
  if (p->tok.kind == FU_TOK_RBRACKET) {
    next(p);
    return true;
  }
  for (;;) {
    fu_sloop l;
    l.loc = tloc(p, &p->tok);
    if (!use_axis(p, &l.axis) || !accept(p, FU_TOK_COLON, "':' after the loop axis")) return false;
    if (p->tok.kind != FU_TOK_IDENT) return expected(p, "a parallel type");
    l.ptype = fu_ptype_from_name(p->tok.p, p->tok.len);
    if (l.ptype == FU_PT_COUNT) {
      serr(p, &p->tok,
           "unknown parallel type '%.*s'; valid: serial, blockIdx.x, blockIdx.y, threadIdx.x, threadIdx.y, "
           "vectorize, unroll",
           (int)p->tok.len, p->tok.p);
      l.ptype = FU_PT_SERIAL;
    }
    next(p);
    l.grid_stride = false;
    if (p->tok.kind == FU_TOK_LBRACE && !parse_loop_attrs(p, &l)) return false;
    if (p->n_loops == MAX_STMTS) {
      serr(p, kw, "too many loop axes");
      return false;
    }
    p->loops[p->n_loops++] = l;
    if (p->tok.kind == FU_TOK_COMMA) {
      next(p);
      continue;
    }
    return accept(p, FU_TOK_RBRACKET, "',' or ']' in the loop axes");
  }
}

static bool parse_tensor(sparser *p, const fu_token *kw) {
  next(p);
  fu_token vt = p->tok;
  fu_value *v = use_value(p);
  if (vt.kind != FU_TOK_VALUE) return false;
  fu_stensor t;
  memset(&t, 0, sizeof t);
  t.value = v;
  t.memory = FU_MEM_LOCAL;
  t.inline_pos = -1;
  t.loc = tloc(p, kw);
  for (uint32_t i = 0; v && i < p->n_tensors; i++)
    if (p->tensors[i].value == v) {
      serr(p, &vt, "tensor '%.*s' is listed twice", (int)vt.len, vt.p);
      fu_note(p->diag, p->tensors[i].loc, "previous entry is here");
    }
  bool memory_given = false;
  if (p->tok.kind == FU_TOK_LBRACE) {
    sattr a[8];
    uint32_t n;
    if (!parse_attrs(p, a, 8, &n)) return false;
    for (uint32_t i = 0; i < n; i++) {
      const fu_token *val = &a[i].value;
      if (fu_txt_tok_is(&a[i].name, "memory")) {
        memory_given = true;
        if (is_word(val, "global")) t.memory = FU_MEM_GLOBAL;
        else if (is_word(val, "shared")) t.memory = FU_MEM_SHARED;
        else if (is_word(val, "local")) t.memory = FU_MEM_LOCAL;
        else serr(p, val, "unknown memory space '%.*s'; valid: global, shared, local", (int)val->len, val->p);
      } else if (fu_txt_tok_is(&a[i].name, "inline")) {
        if (val->kind != FU_TOK_INT || val->ival < 0 || val->ival > MAX_AXES)
          bad_attr_value(p, &a[i], "a non-negative integer (a loop position)");
        else
          t.inline_pos = (int32_t)val->ival;
      } else if (fu_txt_tok_is(&a[i].name, "keep")) {
        if (val->kind != FU_TOK_INT || val->ival < 1 || val->ival > 64)
          bad_attr_value(p, &a[i], "an integer from 1 to 64 (chunks a thread keeps in registers)");
        else
          t.keep = (int32_t)val->ival;
      } else if (fu_txt_tok_is(&a[i].name, "access")) {
        if (is_word(val, "vector")) t.access = FU_ACCESS_VECTOR;
        else if (is_word(val, "scalar")) t.access = FU_ACCESS_SCALAR;
        else if (is_word(val, "tile")) t.access = FU_ACCESS_TILE;
        else serr(p, val, "unknown access mode '%.*s'; valid: vector, scalar, tile", (int)val->len, val->p);
      } else {
        serr(p, &a[i].name, "unknown attribute '%.*s' for 'tensor'; valid: memory, inline, access, keep", (int)a[i].name.len,
             a[i].name.p);
      }
    }
  }
  (void)memory_given;
  if (v && p->n_tensors == p->cap_tensors) {
    uint32_t cap = p->cap_tensors ? p->cap_tensors * 2 : 16;
    fu_stensor *n = fu_mem_realloc(&p->m->alloc, p->tensors, p->cap_tensors * sizeof *n, cap * sizeof *n);
    if (!n) {
      p->nomem = true;
      return false;
    }
    p->tensors = n;
    p->cap_tensors = cap;
  }
  if (v) p->tensors[p->n_tensors++] = t;
  return true;
}

/* The statements up to and including the closing '}' (not reading past
 * it). */
static bool parse_body(sparser *p, fu_schedule *s) {
  for (;;) {
    if (p->nomem) return false;
    if (p->tok.kind == FU_TOK_RBRACE) return true;
    fu_token kw = p->tok;
    if (is_word(&kw, "reference")) {
      if (!parse_reference(p, s, &kw)) return false;
      continue;
    }
    if (!s->reference && (is_word(&kw, "merge") || is_word(&kw, "split") || is_word(&kw, "loop"))) {
      serr(p, &kw, "'%.*s' before 'reference': the schedule starts with 'reference %%T [axes]'", (int)kw.len, kw.p);
    }
    if (is_word(&kw, "merge")) {
      if (!parse_merge(p, &kw)) return false;
    } else if (is_word(&kw, "split")) {
      if (!parse_split(p, &kw)) return false;
    } else if (is_word(&kw, "loop")) {
      if (!parse_loop(p, &kw)) return false;
    } else if (is_word(&kw, "tensor")) {
      if (!parse_tensor(p, &kw)) return false;
    } else {
      return expected(p, "'reference', 'merge', 'split', 'loop', 'tensor' or '}'");
    }
  }
}

bool fu_txt_parse_schedule(fu_lexer *lx, const fu_token *kw, fu_module *m, const fu_txt_symtab *values,
                           fu_diag_engine *diag, fu_schedule **out, bool *nomem) {
  *out = NULL;
  sparser *p = fu_mem_calloc(&m->alloc, 1, sizeof *p);
  if (!p) {
    *nomem = true;
    return false;
  }
  p->lx = lx;
  p->diag = diag;
  p->m = m;
  p->values = values;
  fu_schedule *s = fu_arena_calloc(m->arena, 1, sizeof *s);
  bool ok = false;
  if (!s) {
    p->nomem = true;
    goto done;
  }
  s->loc = tloc(p, kw);
  next(p);
  if (p->tok.kind == FU_TOK_LBRACE && brace_starts_attrs(p)) header_attrs(p, s);
  if (!accept(p, FU_TOK_LBRACE, "'{' to open the schedule")) goto done;
  if (!parse_body(p, s)) goto done;
  /* p->tok is the closing '}': the lexer stands just after it. */
  if (!s->reference) serr(p, kw, "the schedule has no 'reference'");
  if (!p->have_loop) serr(p, kw, "the schedule has no 'loop'");
  s->axes = fu_arena_memdup(m->arena, p->axes, p->n_axes, sizeof *p->axes);
  s->xforms = fu_arena_memdup(m->arena, p->xforms, p->n_xforms, sizeof *p->xforms);
  s->loops = fu_arena_memdup(m->arena, p->loops, p->n_loops, sizeof *p->loops);
  s->tensors = fu_arena_memdup(m->arena, p->tensors, p->n_tensors, sizeof *p->tensors);
  if ((p->n_axes && !s->axes) || (p->n_xforms && !s->xforms) || (p->n_loops && !s->loops) ||
      (p->n_tensors && !s->tensors)) {
    p->nomem = true;
    goto done;
  }
  s->n_axes = p->n_axes;
  s->n_xforms = p->n_xforms;
  s->n_loops = p->n_loops;
  s->n_tensors = p->n_tensors;
  ok = true;
  if (!p->bad) *out = s;
done:
  if (p->nomem) *nomem = true;
  fu_mem_free(&m->alloc, p->tensors, p->cap_tensors * sizeof *p->tensors);
  fu_mem_free(&m->alloc, p, sizeof *p);
  return ok;
}

/* ---- the gemm line of a matmul segment ------------------------------------------------- */

static void gemm_order(sparser *p, const fu_token *v, fu_gemm_order *o) {
  if (is_word(v, "row")) *o = FU_GEMM_ROW;
  else if (is_word(v, "col")) *o = FU_GEMM_COL;
  else serr(p, v, "'gemm': the order of a matrix is row or col, got '%.*s'", (int)v->len, v->p);
}

/* One attribute of the gemm line; p->tok is its value. */
static bool gemm_attr(sparser *p, const fu_token *name, fu_gemm *g) {
  fu_token v = p->tok;
  if (fu_txt_tok_is(name, "a") || fu_txt_tok_is(name, "b")) {
    gemm_order(p, &v, fu_txt_tok_is(name, "a") ? &g->a_order : &g->b_order);
  } else if (fu_txt_tok_is(name, "lda") || fu_txt_tok_is(name, "ldb")) {
    const char *s = v.kind == FU_TOK_INT ? dup_tok(p, &v, 0) : attr_word(p, &v);
    if (!s) return p->nomem ? false : expected(p, "a leading dim (a number, a symbol or a string)");
    if (fu_txt_tok_is(name, "lda")) g->lda = s;
    else g->ldb = s;
  } else if (fu_txt_tok_is(name, "epilogue")) {
    bool found = false;
    for (fu_gemm_act a = FU_GEMM_ACT_NONE; a <= FU_GEMM_ACT_GELU; a++)
      if (is_word(&v, fu_gemm_act_name(a))) {
        g->act = a;
        found = true;
      }
    if (!found) serr(p, &v, "'gemm': unknown epilogue '%.*s'; valid: none, relu, gelu", (int)v.len, v.p);
  } else if (fu_txt_tok_is(name, "bias")) {
    g->bias = use_value(p);
    return v.kind == FU_TOK_VALUE;
  } else if (fu_txt_tok_is(name, "alpha")) {
    if (v.kind == FU_TOK_FLOAT) g->alpha = v.fval;
    else if (v.kind == FU_TOK_INT) g->alpha = (double)v.ival;
    else return expected(p, "a number (alpha)");
  } else {
    serr(p, name, "unknown attribute '%.*s' for 'gemm'; valid: a, lda, b, ldb, epilogue, bias, alpha", (int)name->len,
         name->p);
  }
  next(p);
  return true;
}

bool fu_txt_parse_gemm(fu_lexer *lx, const fu_token *kw, fu_module *m, const fu_txt_symtab *values,
                       fu_diag_engine *diag, fu_gemm **out, bool *nomem) {
  *out = NULL;
  sparser *p = fu_mem_calloc(&m->alloc, 1, sizeof *p);
  fu_gemm *g = fu_arena_calloc(m->arena, 1, sizeof *g);
  bool ok = false;
  if (!p || !g) {
    *nomem = true;
    fu_mem_free(&m->alloc, p, p ? sizeof *p : 0);
    return false;
  }
  p->lx = lx;
  p->diag = diag;
  p->m = m;
  p->values = values;
  g->loc = tloc(p, kw);
  g->alpha = 1.0;
  next(p);
  fu_token t = p->tok;
  g->a = use_value(p);
  if (t.kind != FU_TOK_VALUE || !accept(p, FU_TOK_COMMA, "',' between the gemm's operands")) goto done;
  t = p->tok;
  g->b = use_value(p);
  if (t.kind != FU_TOK_VALUE || !accept(p, FU_TOK_ARROW, "'->' before the gemm's result")) goto done;
  t = p->tok;
  g->d = use_value(p);
  if (t.kind != FU_TOK_VALUE || !accept(p, FU_TOK_LBRACE, "'{' before the gemm's attributes")) goto done;
  while (p->tok.kind != FU_TOK_RBRACE && !p->nomem) {
    if (p->tok.kind != FU_TOK_IDENT) {
      expected(p, "an attribute name");
      goto done;
    }
    fu_token name = p->tok;
    next(p);
    if (!accept(p, FU_TOK_EQ, "'=' after the attribute name") || !gemm_attr(p, &name, g)) goto done;
    if (p->tok.kind == FU_TOK_COMMA) next(p);
    else if (p->tok.kind != FU_TOK_RBRACE) {
      expected(p, "',' or '}' in the attributes");
      goto done;
    }
  }
  /* p->tok is the closing '}': the lexer stands just after it */
  ok = !p->nomem;
  if (ok && !p->bad) *out = g;
done:
  if (p->nomem) *nomem = true;
  fu_mem_free(&m->alloc, p, sizeof *p);
  return ok;
}

/* ---- kernels inside segments ----------------------------------------------------------- */

bool fu_txt_parse_segment_kernel(fu_lexer *lx, const fu_token *kw, fu_module *m, fu_fusion *f,
                                 fu_diag_engine *diag, struct fu_kernel **out, bool *nomem) {
  *out = NULL;
  const fu_source *src = lx->src;
  size_t start = (size_t)(kw->p - src->text), end = 0;
  fu_kir_parse_options opts = {f, true};
  fu_status st = fu_kernel_parse_at(src, start, &opts, m, diag, out, &end);
  if (st == FU_ERR_NOMEM) *nomem = true;
  if (st != FU_OK || end <= start || end > src->len) return false;
  /* Move the lexer past the kernel, keeping its line count: it stands
   * just after `kernel`, on kw's line. */
  for (const char *c = kw->p; c < src->text + end; c++)
    if (*c == '\n') {
      lx->line++;
      lx->line_start = c + 1;
    }
  lx->p = src->text + end;
  return true;
}
