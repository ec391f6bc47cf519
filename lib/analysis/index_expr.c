/* fuser: index expressions (include/fuser/index_graph.h).
 *
 * Nodes are hash-consed in a per-context arena, so structurally equal
 * expressions are the same pointer and `lower` can CSE them by address.
 * Every quantity is a non-negative integer (an index, an extent, a stride),
 * which makes these rewrites valid:
 *
 *   x + 0 = x, x * 1 = x, x * 0 = 0, x / 1 = x, x % 1 = 0
 *   (x * M) / q = x * (M / q)        when q divides the monomial M
 *   (x * M + y) / q = x * (M/q) + y / q,   (x * M + y) % q = y % q
 *   x / q = 0 and x % q = x          when x < q is known from bounds
 *
 * Products of constants, symbols and variables (monomials) are kept in one
 * canonical shape (factors sorted by id, the constant last) so that equal
 * monomials compare by pointer; the linear simplifier relies on that. */
#include <stdlib.h>
#include <string.h>

#include "fuser/index_graph.h"

struct fu_ix_ctx {
  fu_allocator alloc;
  fu_arena *arena;
  const fu_ix **tab; /* open addressing */
  size_t cap, n;
  uint32_t next_id;
  bool failed;
  bool overflow; /* fu_ix_take_overflow */
};

fu_ix_ctx *fu_ix_ctx_new(fu_allocator alloc) {
  fu_ix_ctx *c = fu_mem_calloc(&alloc, 1, sizeof *c);
  if (!c) return NULL;
  c->alloc = alloc;
  c->arena = fu_arena_new(alloc);
  c->cap = 256;
  c->tab = fu_mem_calloc(&alloc, c->cap, sizeof *c->tab);
  if (!c->arena || !c->tab) {
    fu_ix_ctx_free(c);
    return NULL;
  }
  return c;
}

void fu_ix_ctx_free(fu_ix_ctx *c) {
  if (!c) return;
  fu_allocator a = c->alloc;
  if (c->tab) fu_mem_free(&a, c->tab, c->cap * sizeof *c->tab);
  if (c->arena) fu_arena_free(c->arena);
  fu_mem_free(&a, c, sizeof *c);
}

bool fu_ix_failed(const fu_ix_ctx *c) { return c->failed; }

bool fu_ix_take_overflow(fu_ix_ctx *c) {
  bool o = c->overflow;
  c->overflow = false;
  return o;
}

/* ---- hash-consing ------------------------------------------------------------ */

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

static uint64_t str_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; s && *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static uint64_t node_hash(fu_ix_kind k, int64_t v, const char *sym, const fu_ix *a, const fu_ix *b) {
  uint64_t h = mix(0, (uint64_t)k);
  h = mix(h, (uint64_t)v);
  h = mix(h, str_hash(sym));
  h = mix(h, a ? a->id + 1u : 0u);
  h = mix(h, b ? b->id + 1u : 0u);
  return h;
}

static bool node_eq(const fu_ix *n, fu_ix_kind k, int64_t v, const char *sym, const fu_ix *a, const fu_ix *b) {
  if (n->kind != k || n->a != a || n->b != b || n->value != v) return false;
  if (k == FU_IX_SYM) return strcmp(n->sym, sym) == 0;
  return true;
}

static bool grow(fu_ix_ctx *c) {
  size_t cap = c->cap * 2;
  const fu_ix **t = fu_mem_calloc(&c->alloc, cap, sizeof *t);
  if (!t) return false;
  for (size_t i = 0; i < c->cap; i++) {
    const fu_ix *n = c->tab[i];
    if (!n) continue;
    size_t j = node_hash(n->kind, n->value, n->kind == FU_IX_SYM ? n->sym : NULL, n->a, n->b) & (cap - 1);
    while (t[j]) j = (j + 1) & (cap - 1);
    t[j] = n;
  }
  fu_mem_free(&c->alloc, c->tab, c->cap * sizeof *c->tab);
  c->tab = t;
  c->cap = cap;
  return true;
}

/* The unique node (k, v, sym, a, b), created when new.  Variables are not
 * interned: each fu_ix_var call makes a distinct one. */
static const fu_ix *intern(fu_ix_ctx *c, fu_ix_kind k, int64_t v, const char *sym, const fu_ix *a, const fu_ix *b) {
  if (c->failed) return NULL;
  if ((c->n + 1) * 2 > c->cap && !grow(c)) {
    c->failed = true;
    return NULL;
  }
  size_t j = node_hash(k, v, sym, a, b) & (c->cap - 1);
  for (; c->tab[j]; j = (j + 1) & (c->cap - 1))
    if (node_eq(c->tab[j], k, v, sym, a, b)) return c->tab[j];
  fu_ix *n = fu_arena_alloc(c->arena, sizeof *n);
  if (!n || (sym && !(sym = fu_arena_strdup(c->arena, sym)))) {
    c->failed = true;
    return NULL;
  }
  n->kind = k;
  n->id = c->next_id++;
  n->value = v;
  n->sym = sym;
  n->a = a;
  n->b = b;
  c->tab[j] = n;
  c->n++;
  return n;
}

const fu_ix *fu_ix_const(fu_ix_ctx *c, int64_t v) { return intern(c, FU_IX_CONST, v, NULL, NULL, NULL); }

const fu_ix *fu_ix_sym(fu_ix_ctx *c, const char *sym) {
  if (!sym) return NULL;
  return intern(c, FU_IX_SYM, 0, sym, NULL, NULL);
}

const fu_ix *fu_ix_var(fu_ix_ctx *c, const char *name, uint32_t tag, const void *payload, int32_t dim, int64_t bound) {
  if (c->failed) return NULL;
  fu_ix *n = fu_arena_alloc(c->arena, sizeof *n);
  if (!n || !(n->sym = fu_arena_strdup(c->arena, name ? name : "v"))) {
    c->failed = true;
    return NULL;
  }
  n->kind = FU_IX_VAR;
  n->id = c->next_id++;
  n->tag = tag;
  n->payload = payload;
  n->dim = dim;
  n->bound = bound;
  return n;
}

const fu_ix *fu_ix_extent(fu_ix_ctx *c, fu_extent e) { return e.sym ? fu_ix_sym(c, e.sym) : fu_ix_const(c, e.value); }

bool fu_ix_is_const(const fu_ix *x, int64_t *v) {
  if (!x || x->kind != FU_IX_CONST) return false;
  if (v) *v = x->value;
  return true;
}

/* ---- monomials: const * sorted symbolic factors -------------------------------- */

enum { MAX_FACTORS = 24 };

typedef struct mono {
  int64_t c;
  uint32_t n;
  const fu_ix *f[MAX_FACTORS]; /* SYM and VAR nodes, sorted by id */
} mono;

/* x as a monomial; false when x is not a product of constants, symbols and
 * variables (or has too many factors, or the constant overflows). */
static bool to_mono(const fu_ix *x, mono *m) {
  if (!x) return false;
  switch (x->kind) {
  case FU_IX_CONST:
    m->c = x->value;
    m->n = 0;
    return true;
  case FU_IX_SYM:
  case FU_IX_VAR:
    m->c = 1;
    m->n = 1;
    m->f[0] = x;
    return true;
  case FU_IX_MUL: {
    mono a, b;
    if (!to_mono(x->a, &a) || !to_mono(x->b, &b)) return false;
    if (a.n + b.n > MAX_FACTORS || __builtin_mul_overflow(a.c, b.c, &m->c)) return false;
    uint32_t i = 0, j = 0;
    m->n = 0;
    while (i < a.n || j < b.n) {
      if (j >= b.n || (i < a.n && a.f[i]->id <= b.f[j]->id))
        m->f[m->n++] = a.f[i++];
      else
        m->f[m->n++] = b.f[j++];
    }
    return true;
  }
  default: return false;
  }
}

static const fu_ix *raw_mul(fu_ix_ctx *c, const fu_ix *a, const fu_ix *b) { return intern(c, FU_IX_MUL, 0, NULL, a, b); }

/* The canonical node of a monomial: ((f0 * f1) * ...) * const. */
static const fu_ix *from_mono(fu_ix_ctx *c, const mono *m) {
  if (m->c == 0) return fu_ix_const(c, 0);
  const fu_ix *r = NULL;
  for (uint32_t i = 0; i < m->n; i++) r = r ? raw_mul(c, r, m->f[i]) : m->f[i];
  if (!r) return fu_ix_const(c, m->c);
  if (m->c != 1) r = raw_mul(c, r, fu_ix_const(c, m->c));
  return r;
}

/* a * b; false when it has too many factors or its constant overflows
 * (then *overflow is set). */
static bool mono_mul(const mono *a, const mono *b, mono *out, bool *overflow) {
  if (a->n + b->n > MAX_FACTORS) return false;
  mono r;
  if (__builtin_mul_overflow(a->c, b->c, &r.c)) {
    *overflow = true;
    return false;
  }
  uint32_t i = 0, j = 0;
  r.n = 0;
  while (i < a->n || j < b->n) {
    if (j >= b->n || (i < a->n && a->f[i]->id <= b->f[j]->id))
      r.f[r.n++] = a->f[i++];
    else
      r.f[r.n++] = b->f[j++];
  }
  *out = r;
  return true;
}

/* out = a / b when b provably divides a (constant divides, factors a
 * sub-multiset). */
static bool mono_div(const mono *a, const mono *b, mono *out) {
  if (b->c == 0 || a->c % b->c != 0) return false;
  mono r;
  r.c = a->c / b->c;
  r.n = 0;
  uint32_t j = 0;
  for (uint32_t i = 0; i < a->n; i++) {
    if (j < b->n && a->f[i] == b->f[j]) {
      j++;
      continue;
    }
    r.f[r.n++] = a->f[i];
  }
  if (j != b->n) return false;
  *out = r;
  return true;
}

static bool mono_equal(const mono *a, const mono *b) {
  if (a->c != b->c || a->n != b->n) return false;
  for (uint32_t i = 0; i < a->n; i++)
    if (a->f[i] != b->f[i]) return false;
  return true;
}

/* ---- bounds ---------------------------------------------------------------------- */

int64_t fu_ix_upper(const fu_ix *x) {
  if (!x) return -1;
  int64_t a, b, r;
  switch (x->kind) {
  case FU_IX_CONST: return x->value < INT64_MAX ? x->value + 1 : -1;
  case FU_IX_SYM: return -1;
  case FU_IX_VAR: return x->bound > 0 ? x->bound : -1;
  case FU_IX_ADD:
    a = fu_ix_upper(x->a);
    b = fu_ix_upper(x->b);
    if (a < 0 || b < 0 || __builtin_add_overflow(a, b - 1, &r)) return -1;
    return r;
  case FU_IX_MUL:
    a = fu_ix_upper(x->a);
    b = fu_ix_upper(x->b);
    if (a <= 0 || b <= 0 || __builtin_mul_overflow(a - 1, b - 1, &r)) return -1;
    return r + 1;
  case FU_IX_DIV:
    a = fu_ix_upper(x->a);
    if (a < 0 || !fu_ix_is_const(x->b, &b) || b <= 0) return -1;
    return (a - 1) / b + 1;
  case FU_IX_MOD:
    if (fu_ix_is_const(x->b, &b) && b > 0) {
      a = fu_ix_upper(x->a);
      return a >= 0 && a < b ? a : b;
    }
    return fu_ix_upper(x->a);
  case FU_IX_CEILDIV:
    a = fu_ix_upper(x->a);
    if (a < 0 || !fu_ix_is_const(x->b, &b) || b <= 0) return -1;
    return (a - 1) / b + ((a - 1) % b != 0) + 1; /* ceil((a - 1) / b) + 1 without overflow */
  }
  return -1;
}

/* Provably x < q. */
static bool below(const fu_ix *x, const fu_ix *q) {
  int64_t u = fu_ix_upper(x), qv;
  if (u >= 0 && fu_ix_is_const(q, &qv)) return u <= qv;
  return false;
}

bool fu_ix_divides(const fu_ix *d, const fu_ix *x) {
  if (!d || !x) return false;
  int64_t dv;
  if (fu_ix_is_const(d, &dv) && dv == 1) return true;
  if (fu_ix_is_const(x, &dv) && dv == 0) return true;
  mono md, mx, q;
  if (!to_mono(d, &md)) return false;
  if (to_mono(x, &mx)) return mono_div(&mx, &md, &q);
  switch (x->kind) {
  case FU_IX_ADD: return fu_ix_divides(d, x->a) && fu_ix_divides(d, x->b);
  case FU_IX_MUL: return fu_ix_divides(d, x->a) || fu_ix_divides(d, x->b);
  default: return false;
  }
}

/* ---- constructors ------------------------------------------------------------------ */

static bool is_zero(const fu_ix *x) { return x && x->kind == FU_IX_CONST && x->value == 0; }
static bool is_one(const fu_ix *x) { return x && x->kind == FU_IX_CONST && x->value == 1; }

const fu_ix *fu_ix_add(fu_ix_ctx *c, const fu_ix *a, const fu_ix *b) {
  if (!a || !b) return NULL;
  if (is_zero(a)) return b;
  if (is_zero(b)) return a;
  int64_t av = 0, bv = 0, r;
  bool ac = fu_ix_is_const(a, &av), bc = fu_ix_is_const(b, &bv);
  if (ac && bc) {
    if (!__builtin_add_overflow(av, bv, &r)) return fu_ix_const(c, r);
    c->overflow = true;
  }
  if (ac) {
    const fu_ix *t = a;
    a = b;
    b = t;
    int64_t tv = av;
    av = bv;
    bv = tv;
    bool tc = ac;
    ac = bc;
    bc = tc;
  }
  /* (x + c1) + c2 -> x + (c1 + c2) */
  int64_t inner;
  if (bc && a->kind == FU_IX_ADD && fu_ix_is_const(a->b, &inner)) {
    if (!__builtin_add_overflow(inner, bv, &r)) return fu_ix_add(c, a->a, fu_ix_const(c, r));
    c->overflow = true;
  }
  if (!bc && a->id > b->id) {
    const fu_ix *t = a;
    a = b;
    b = t;
  }
  return intern(c, FU_IX_ADD, 0, NULL, a, b);
}

const fu_ix *fu_ix_mul(fu_ix_ctx *c, const fu_ix *a, const fu_ix *b) {
  if (!a || !b) return NULL;
  if (is_zero(a) || is_zero(b)) return fu_ix_const(c, 0);
  if (is_one(a)) return b;
  if (is_one(b)) return a;
  mono ma, mb, m;
  bool am = to_mono(a, &ma), bm = to_mono(b, &mb);
  if (am && bm && mono_mul(&ma, &mb, &m, &c->overflow)) return from_mono(c, &m);
  /* keep the monomial on the right, and fold (x * M1) * M2 */
  if (am && !bm) {
    const fu_ix *t = a;
    a = b;
    b = t;
    mono tm = ma;
    ma = mb;
    mb = tm;
    am = false;
    bm = true;
  }
  if (bm && a->kind == FU_IX_MUL) {
    mono mi;
    if (to_mono(a->b, &mi) && mono_mul(&mi, &mb, &m, &c->overflow)) return fu_ix_mul(c, a->a, from_mono(c, &m));
  }
  if (!bm && a->id > b->id) {
    const fu_ix *t = a;
    a = b;
    b = t;
  }
  return raw_mul(c, a, b);
}

/* x split as x_mul * M + rest, where q divides M: returns the quotient
 * part x_mul * (M / q) in *hi (or NULL) and the remainder part in *lo. */
static void split_by(fu_ix_ctx *c, const fu_ix *x, const mono *mq, const fu_ix **hi, const fu_ix **lo) {
  mono mx, r;
  if (to_mono(x, &mx) && mono_div(&mx, mq, &r)) {
    *hi = from_mono(c, &r);
    *lo = NULL;
    return;
  }
  if (x->kind == FU_IX_MUL) {
    mono mb;
    if (to_mono(x->b, &mb) && mono_div(&mb, mq, &r)) {
      *hi = fu_ix_mul(c, x->a, from_mono(c, &r));
      *lo = NULL;
      return;
    }
  }
  if (x->kind == FU_IX_ADD) {
    const fu_ix *h1, *l1, *h2, *l2;
    split_by(c, x->a, mq, &h1, &l1);
    split_by(c, x->b, mq, &h2, &l2);
    *hi = h1 && h2 ? fu_ix_add(c, h1, h2) : h1 ? h1 : h2;
    *lo = l1 && l2 ? fu_ix_add(c, l1, l2) : l1 ? l1 : l2;
    return;
  }
  *hi = NULL;
  *lo = x;
}

static const fu_ix *div_or_mod(fu_ix_ctx *c, fu_ix_kind k, const fu_ix *a, const fu_ix *b) {
  if (!a || !b) return NULL;
  int64_t av = 0, bv = 0;
  bool ac = fu_ix_is_const(a, &av), bc = fu_ix_is_const(b, &bv);
  if (bc && bv == 1) return k == FU_IX_DIV ? a : fu_ix_const(c, 0);
  if (is_zero(a)) return a;
  if (ac && bc && bv > 0 && av >= 0) return fu_ix_const(c, k == FU_IX_DIV ? av / bv : av % bv);
  if (a == b) return fu_ix_const(c, k == FU_IX_DIV ? 1 : 0);
  if (below(a, b)) return k == FU_IX_DIV ? fu_ix_const(c, 0) : a;
  mono mq;
  if (to_mono(b, &mq) && mq.c > 0) {
    const fu_ix *hi, *lo;
    split_by(c, a, &mq, &hi, &lo);
    if (hi) {
      if (k == FU_IX_MOD) return lo ? div_or_mod(c, k, lo, b) : fu_ix_const(c, 0);
      return lo ? fu_ix_add(c, hi, div_or_mod(c, k, lo, b)) : hi;
    }
  }
  /* (y / p) / q = y / (p * q): one division for dims merged in memory
   * order (indices are never negative, so floor division composes) */
  mono mp, pq;
  bool too_big = false;
  if (k == FU_IX_DIV && a->kind == FU_IX_DIV && to_mono(a->b, &mp) && mp.c > 0 && to_mono(b, &mq) && mq.c > 0 &&
      mono_mul(&mp, &mq, &pq, &too_big))
    return div_or_mod(c, k, a->a, from_mono(c, &pq));
  /* (x % q) % q = x % q */
  if (k == FU_IX_MOD && a->kind == FU_IX_MOD && a->b == b) return a;
  return intern(c, k, 0, NULL, a, b);
}

const fu_ix *fu_ix_div(fu_ix_ctx *c, const fu_ix *a, const fu_ix *b) { return div_or_mod(c, FU_IX_DIV, a, b); }
const fu_ix *fu_ix_mod(fu_ix_ctx *c, const fu_ix *a, const fu_ix *b) { return div_or_mod(c, FU_IX_MOD, a, b); }

const fu_ix *fu_ix_ceildiv(fu_ix_ctx *c, const fu_ix *a, const fu_ix *b) {
  if (!a || !b) return NULL;
  int64_t av = 0, bv = 0;
  bool ac = fu_ix_is_const(a, &av), bc = fu_ix_is_const(b, &bv);
  if (bc && bv == 1) return a;
  if (ac && bc && bv > 0 && av >= 0) return fu_ix_const(c, av / bv + (av % bv != 0));
  if (is_zero(a)) return a;
  if (fu_ix_divides(b, a)) return fu_ix_div(c, a, b);
  return intern(c, FU_IX_CEILDIV, 0, NULL, a, b);
}

/* ---- substitution and the linear simplifier ---------------------------------------- */

static const fu_ix *rebuild(fu_ix_ctx *c, fu_ix_kind k, const fu_ix *a, const fu_ix *b) {
  switch (k) {
  case FU_IX_ADD: return fu_ix_add(c, a, b);
  case FU_IX_MUL: return fu_ix_mul(c, a, b);
  case FU_IX_DIV: return fu_ix_div(c, a, b);
  case FU_IX_MOD: return fu_ix_mod(c, a, b);
  case FU_IX_CEILDIV: return fu_ix_ceildiv(c, a, b);
  default: return NULL;
  }
}

static bool mentions(const fu_ix *x, const fu_ix *var) {
  if (!x) return false;
  if (x == var) return true;
  if (x->kind < FU_IX_ADD) return false;
  return mentions(x->a, var) || mentions(x->b, var);
}

const fu_ix *fu_ix_subst(fu_ix_ctx *c, const fu_ix *x, const fu_ix *var, const fu_ix *value) {
  if (!x || !var || !value) return NULL;
  if (x == var) return value;
  if (x->kind < FU_IX_ADD || !mentions(x, var)) return x;
  return rebuild(c, x->kind, fu_ix_subst(c, x->a, var, value), fu_ix_subst(c, x->b, var, value));
}

/* A term of a linear form: atom * coef, atom NULL meaning 1. */
typedef struct term {
  const fu_ix *atom;
  mono coef;
} term;

typedef struct terms {
  term v[64];
  uint32_t n;
  bool overflow;
} terms;

static void add_term(terms *t, const fu_ix *atom, const mono *coef) {
  if (coef->c == 0) return;
  for (uint32_t i = 0; i < t->n; i++) {
    term *e = &t->v[i];
    if (e->atom != atom || e->coef.n != coef->n) continue;
    bool same = true;
    for (uint32_t k = 0; k < coef->n; k++)
      if (e->coef.f[k] != coef->f[k]) same = false;
    if (same && !__builtin_add_overflow(e->coef.c, coef->c, &e->coef.c)) return;
  }
  if (t->n == sizeof t->v / sizeof t->v[0]) {
    t->overflow = true;
    return;
  }
  t->v[t->n].atom = atom;
  t->v[t->n].coef = *coef;
  t->n++;
}

static void flatten(const fu_ix *x, const mono *k, terms *t) {
  if (t->overflow) return;
  mono m, p;
  if (to_mono(x, &m)) {
    if (!mono_mul(&m, k, &p, &t->overflow)) t->overflow = true;
    else add_term(t, NULL, &p);
    return;
  }
  if (x->kind == FU_IX_ADD) {
    flatten(x->a, k, t);
    flatten(x->b, k, t);
    return;
  }
  if (x->kind == FU_IX_MUL && to_mono(x->b, &m)) {
    if (!mono_mul(&m, k, &p, &t->overflow)) t->overflow = true;
    else flatten(x->a, &p, t);
    return;
  }
  add_term(t, x, k);
}

/* x as a chain of divisions y / q1 / q2 / ... by monomials: *base = y,
 * *q = q1 * q2 * ... (1 and x itself when x is no division). */
static bool div_chain(const fu_ix *x, const fu_ix **base, mono *q) {
  mono one = {1, 0, {NULL}};
  *q = one;
  *base = x;
  while (*base && (*base)->kind == FU_IX_DIV) {
    mono d, p;
    bool overflow = false;
    if (!to_mono((*base)->b, &d) || d.c <= 0 || !mono_mul(q, &d, &p, &overflow)) return false;
    *q = p;
    *base = (*base)->a;
  }
  return true;
}

/* The divisor of y % q as a monomial (q > 0), and y in *y. */
static bool mod_of(const fu_ix *x, const fu_ix **y, mono *q) {
  if (!x || x->kind != FU_IX_MOD || !to_mono(x->b, q) || q->c <= 0) return false;
  *y = x->a;
  return true;
}

/* Whether terms i and j fold, two digits of one mixed-radix number: i is
 * q*c*(y / q) or q*c*((y / q) % b), j is c*(y % q), where y / q may be a
 * chain of divisions whose divisors multiply to q.  *merged gets y
 * (first form) or y % (q*b) (second form), which replaces both with
 * coefficient c.  Indices are never negative, so floor division holds. */
static bool digit_pair(fu_ix_ctx *c, const terms *t, uint32_t i, uint32_t j, const fu_ix **merged) {
  const fu_ix *hi = t->v[i].atom, *y, *qy, *inner = hi;
  mono q, qd, b, want, qb;
  bool too_big = false, with_mod = false;
  if (!mod_of(t->v[j].atom, &y, &q)) return false;
  if (hi && hi->kind == FU_IX_MOD) {
    if (!mod_of(hi, &inner, &b)) return false;
    with_mod = true;
  }
  if (!inner || inner->kind != FU_IX_DIV || !div_chain(inner, &qy, &qd)) return false;
  if (qy != y || !mono_equal(&qd, &q)) return false;
  if (!mono_mul(&t->v[j].coef, &q, &want, &too_big) || !mono_equal(&want, &t->v[i].coef)) return false;
  if (!with_mod) {
    *merged = y;
    return true;
  }
  if (!mono_mul(&q, &b, &qb, &too_big)) return false;
  *merged = fu_ix_mod(c, y, from_mono(c, &qb));
  return *merged != NULL;
}

/* Folds pairs of mixed-radix digits (digit_pair) until none is left:
 * q*c*(y / q) + c*(y % q) becomes c*y, and q*c*((y / q) % b) + c*(y % q)
 * becomes c*(y % (q*b)), the offset of dims merged in memory order. */
static void fold_pairs(fu_ix_ctx *c, terms *t) {
  for (bool again = true; again && !t->overflow;) {
    again = false;
    for (uint32_t i = 0; i < t->n && !again; i++) {
      for (uint32_t j = 0; j < t->n; j++) {
        const fu_ix *merged = NULL;
        if (i == j || !digit_pair(c, t, i, j, &merged)) continue;
        mono k = t->v[j].coef;
        uint32_t hi = i > j ? i : j, lo = i > j ? j : i;
        t->v[hi] = t->v[--t->n];
        t->v[lo] = t->v[--t->n];
        flatten(merged, &k, t);
        again = true;
        break;
      }
    }
  }
}

static int cmp_term(const void *pa, const void *pb) {
  const term *a = pa, *b = pb;
  uint32_t ia = a->atom ? a->atom->id + 1 : 0, ib = b->atom ? b->atom->id + 1 : 0;
  if (ia != ib) return ia < ib ? -1 : 1;
  if (a->coef.n != b->coef.n) return a->coef.n < b->coef.n ? -1 : 1;
  for (uint32_t k = 0; k < a->coef.n; k++)
    if (a->coef.f[k] != b->coef.f[k]) return a->coef.f[k]->id < b->coef.f[k]->id ? -1 : 1;
  return 0;
}

const fu_ix *fu_ix_simplify_linear(fu_ix_ctx *c, const fu_ix *x) {
  if (!x) return NULL;
  terms *t = fu_mem_alloc(&c->alloc, sizeof *t);
  if (!t) {
    c->failed = true;
    return NULL;
  }
  t->n = 0;
  t->overflow = false;
  mono one = {1, 0, {NULL}};
  flatten(x, &one, t);
  fold_pairs(c, t);
  const fu_ix *r = x;
  if (!t->overflow) {
    /* Terms whose atom is itself foldable after the pairs (y / q where y
     * became simpler) keep their shape; the order is canonical: atoms by
     * id, the constant-only term last. */
    qsort(t->v, t->n, sizeof t->v[0], cmp_term);
    const fu_ix *sum = NULL, *cst = NULL;
    for (uint32_t i = 0; i < t->n; i++) {
      const fu_ix *m = from_mono(c, &t->v[i].coef);
      const fu_ix *e = t->v[i].atom ? fu_ix_mul(c, t->v[i].atom, m) : m;
      if (!t->v[i].atom && t->v[i].coef.n == 0)
        cst = cst ? fu_ix_add(c, cst, e) : e;
      else
        sum = sum ? fu_ix_add(c, sum, e) : e;
    }
    if (cst) sum = sum ? fu_ix_add(c, sum, cst) : cst;
    r = sum ? sum : fu_ix_const(c, 0);
  }
  fu_mem_free(&c->alloc, t, sizeof *t);
  return r;
}

/* ---- lanes ---------------------------------------------------------------------------- */

static int64_t gcd64(int64_t a, int64_t b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* align 0 stands for "zero", which every number divides. */
static int64_t align_gcd(int64_t a, int64_t b) { return a == 0 ? b : b == 0 ? a : gcd64(a, b); }

/* The largest constant x is provably a multiple of (0 when x is 0). */
static int64_t const_align(const fu_ix *x) {
  mono m;
  int64_t a, b, r;
  if (x->kind == FU_IX_CONST) return x->value < 0 ? -x->value : x->value;
  if (to_mono(x, &m)) return m.c < 0 ? -m.c : m.c;
  switch (x->kind) {
  case FU_IX_ADD: return align_gcd(const_align(x->a), const_align(x->b));
  case FU_IX_MUL:
    a = const_align(x->a);
    b = const_align(x->b);
    if (a == 0 || b == 0) return 0;
    return __builtin_mul_overflow(a, b, &r) ? 1 : r;
  default: return 1;
  }
}

static fu_ix_lane lane_fail(void) {
  fu_ix_lane r = {false, 0, 0};
  return r;
}

fu_ix_lane fu_ix_lane_analyze(const fu_ix *x, const fu_ix *lane, int64_t width) {
  fu_ix_lane r = {true, 0, 1};
  if (!x) return lane_fail();
  if (!lane || !mentions(x, lane)) {
    r.align = const_align(x);
    return r;
  }
  if (x == lane) {
    r.stride = 1;
    r.align = 0;
    return r;
  }
  fu_ix_lane a, b;
  int64_t q;
  switch (x->kind) {
  case FU_IX_ADD:
    a = fu_ix_lane_analyze(x->a, lane, width);
    b = fu_ix_lane_analyze(x->b, lane, width);
    if (!a.ok || !b.ok || __builtin_add_overflow(a.stride, b.stride, &r.stride)) return lane_fail();
    r.align = align_gcd(a.align, b.align);
    return r;
  case FU_IX_MUL:
    if (!fu_ix_is_const(x->b, &q)) {
      /* lane-invariant times something that does not name the lane (a
       * symbolic stride): lane-invariant */
      if (mentions(x->b, lane)) return lane_fail();
      a = fu_ix_lane_analyze(x->a, lane, width);
      if (!a.ok || a.stride != 0) return lane_fail();
      r.stride = 0;
      r.align = 1;
      return r;
    }
    a = fu_ix_lane_analyze(x->a, lane, width);
    if (!a.ok || __builtin_mul_overflow(a.stride, q, &r.stride)) return lane_fail();
    if (a.align == 0) r.align = 0;
    else if (__builtin_mul_overflow(a.align, q, &r.align)) r.align = 1; /* a multiple of 1, at least */
    return r;
  case FU_IX_DIV:
  case FU_IX_MOD: {
    mono mq;
    a = fu_ix_lane_analyze(x->a, lane, width);
    if (!a.ok) return lane_fail();
    /* An operand that names the lane but is the same in every lane (a
     * quotient such as (v + 4*t) / 64) gives the same result in every lane:
     * the dims above a contiguous innermost dim of a permuted layout. */
    if (a.stride == 0 && !mentions(x->b, lane)) {
      r.stride = 0;
      r.align = 1;
      return r;
    }
    if (!to_mono(x->b, &mq) || mq.c <= 0) return lane_fail();
    int64_t span;
    if (__builtin_mul_overflow(a.stride, width, &span) || span <= 0) return lane_fail();
    /* All lanes stay in one block of q when the lane-0 value is a multiple
     * of the span and q is too. */
    if (mq.c % span != 0 || (a.align != 0 && a.align % span != 0)) return lane_fail();
    if (x->kind == FU_IX_DIV) {
      r.stride = 0;
      r.align = 1;
    } else {
      r.stride = a.stride;
      r.align = a.align == 0 ? 0 : gcd64(a.align, mq.c);
    }
    return r;
  }
  default: return lane_fail();
  }
}

/* ---- printing ----------------------------------------------------------------------------- */

static int prec(const fu_ix *x) {
  switch (x->kind) {
  case FU_IX_ADD: return 1;
  case FU_IX_MUL:
  case FU_IX_DIV:
  case FU_IX_MOD: return 2;
  default: return 3;
  }
}

static void print_rec(fu_strbuf *out, const fu_ix *x, int ctx) {
  if (!x) {
    fu_strbuf_puts(out, "<null>");
    return;
  }
  bool paren = prec(x) < ctx;
  if (paren) fu_strbuf_putc(out, '(');
  switch (x->kind) {
  case FU_IX_CONST: fu_strbuf_printf(out, "%lld", (long long)x->value); break;
  case FU_IX_SYM:
  case FU_IX_VAR: fu_strbuf_puts(out, x->sym); break;
  case FU_IX_ADD:
    print_rec(out, x->a, 1);
    fu_strbuf_puts(out, " + ");
    print_rec(out, x->b, 2);
    break;
  case FU_IX_MUL:
  case FU_IX_DIV:
  case FU_IX_MOD:
    print_rec(out, x->a, 2);
    fu_strbuf_puts(out, x->kind == FU_IX_MUL ? " * " : x->kind == FU_IX_DIV ? " / " : " % ");
    print_rec(out, x->b, 3);
    break;
  case FU_IX_CEILDIV:
    fu_strbuf_puts(out, "ceil_div(");
    print_rec(out, x->a, 0);
    fu_strbuf_puts(out, ", ");
    print_rec(out, x->b, 0);
    fu_strbuf_putc(out, ')');
    break;
  }
  if (paren) fu_strbuf_putc(out, ')');
}

void fu_ix_print(fu_strbuf *out, const fu_ix *x) { print_rec(out, x, 0); }

fu_lexpr *fu_ix_to_lexpr(fu_module *m, const fu_ix *x) {
  if (!x) return NULL;
  switch (x->kind) {
  case FU_IX_CONST: return fu_lexpr_const(m, x->value);
  case FU_IX_SYM: return fu_lexpr_sym(m, x->sym);
  case FU_IX_ADD: return fu_lexpr_binary(m, FU_LX_ADD, fu_ix_to_lexpr(m, x->a), fu_ix_to_lexpr(m, x->b));
  case FU_IX_MUL: return fu_lexpr_binary(m, FU_LX_MUL, fu_ix_to_lexpr(m, x->a), fu_ix_to_lexpr(m, x->b));
  case FU_IX_CEILDIV: return fu_lexpr_binary(m, FU_LX_CEIL_DIV, fu_ix_to_lexpr(m, x->a), fu_ix_to_lexpr(m, x->b));
  default: return NULL;
  }
}
