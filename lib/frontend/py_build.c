/* fuser: building one fusion from the body of an nvFuser definition.
 *
 * Statements are evaluated in order.  Names bind to IR values (tensors and
 * runtime scalars), to Python constants (define_scalar(0.5) and friends,
 * which become literal operands where they are used), to shape vectors, or
 * to single extents (fd.ops.size).  Each fd.ops.* call becomes one op: its
 * arguments are read by nvFuser's parameter names (positional or keyword),
 * the extents it forces to be equal are unified, and fu_infer_types gives
 * its result types. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuser/frontend.h"
#include "fuser/verify.h"

/* ---- bindings --------------------------------------------------------- */

typedef enum py_kind { PY_INT, PY_FLOAT, PY_BOOL } py_kind;

/* A Python scalar constant, with the dtype it has as an IR literal. */
typedef struct pconst {
  py_kind kind;
  fu_scalar_value v; /* i, f or b after `kind` */
  fu_dtype dtype;
  bool typed;
} pconst;

typedef enum bind_kind { B_VALUE, B_CONST, B_VECTOR, B_EXTENT, B_SIZE } bind_kind;

/* A size expression: scalar arithmetic on tensor sizes and constants
 * (fd.ops.mul(T0.size(0), 2), T.size(1) // 4, fd.ops.cast(s, ...)).  It is
 * kept as a tree and folded where it is used, when unification may have
 * made its sizes constant. */
typedef struct sexpr {
  char op;      /* 'e' extent, 'k' constant, a Python operator's first char ('/' true division, 'f' floor
                   division), 'n' negation, 'r' reciprocal, 'c' cast */
  fu_extent leaf; /* 'e' */
  pconst cst;     /* 'k' */
  fu_dtype to;    /* 'c' */
  const struct sexpr *l, *r;
} sexpr;

typedef struct binding {
  bind_kind kind;
  const sexpr *size; /* B_SIZE */
  fu_value *value; /* B_VALUE */
  pconst cst;      /* B_CONST */
  fu_extent *dims; /* B_VECTOR; a constant -1 means "infer" */
  uint32_t n_dims;
  fu_extent extent; /* B_EXTENT */
} binding;

enum { MAX_RESULTS = 3, MAX_PARAMS = 8 }; /* welford has three results */

typedef struct result {
  uint32_t n;
  binding b[MAX_RESULTS];
} result;

typedef struct builder {
  fu_module *m;
  fu_fusion *f;
  fu_diag_engine *diag;
  const fu_py_unit *unit;
  fu_arena *scratch;
  fu_py_map env;   /* script name -> binding */
  fu_py_map names; /* IR value names in use */
  fu_py_symtab syms;
  uint32_t n_inputs;
  uint32_t n_temps;
  uint32_t n_stateful_rng; /* random ops without rng_seed/rng_offset so far */
  fu_value **pending; /* consecutive add_output operands, flushed as one OUTPUT op */
  uint32_t n_pending, cap_pending;
  fu_loc pending_loc;
} builder;

static fu_status nomem(builder *b) {
  fu_error(b->diag, fu_loc_none(), "out of memory while importing");
  return FU_ERR_NOMEM;
}

static void *scratch_alloc(builder *b, size_t size) { return fu_arena_alloc(b->scratch, size ? size : 1); }

/* "fd.ops.sum" for messages. */
static const char *op_display(builder *b, const char *op, char *buf, size_t cap) {
  snprintf(buf, cap, "%s.ops.%s", b->unit->fd, op);
  return buf;
}

/* "a.b.c" for a chain of names and attributes. */
static bool dotted(const fu_py_expr *e, char *buf, size_t cap) {
  if (e->kind == FU_PY_E_NAME) return (size_t)snprintf(buf, cap, "%s", e->u.name) < cap;
  if (e->kind != FU_PY_E_ATTR || !dotted(e->u.attr.base, buf, cap)) return false;
  size_t n = strlen(buf);
  return (size_t)snprintf(buf + n, cap - n, ".%s", e->u.attr.name) < cap - n;
}

/* ---- argument binding --------------------------------------------------- */

/* Does `spec` ("!name|alias|...", '!' = required) list `name`? */
static bool param_has(const char *spec, const char *name) {
  if (*spec == '!') spec++;
  size_t n = strlen(name);
  while (*spec) {
    const char *bar = strchr(spec, '|');
    size_t len = bar ? (size_t)(bar - spec) : strlen(spec);
    if (len == n && memcmp(spec, name, n) == 0) return true;
    if (!bar) break;
    spec = bar + 1;
  }
  return false;
}

static void param_first(const char *spec, char *buf, size_t cap) {
  if (*spec == '!') spec++;
  const char *bar = strchr(spec, '|');
  size_t len = bar ? (size_t)(bar - spec) : strlen(spec);
  snprintf(buf, cap, "%.*s", (int)len, spec);
}

/* Match a call's arguments to the parameters `params` (NULL-terminated),
 * positional first, then by keyword; unknown keywords, extra positional
 * arguments and missing required ones are errors. */
static fu_status bind_args(builder *b, const fu_py_expr *call, const char *what, const char *const *params,
                           const fu_py_expr **slots) {
  uint32_t np = 0;
  while (params[np]) np++;
  for (uint32_t i = 0; i < np; i++) slots[i] = NULL;
  if (call->u.call.n_args > np) {
    fu_error(b->diag, call->u.call.args[np]->loc, "too many arguments for '%s' (at most %u)", what, np);
    return FU_ERR_PARSE;
  }
  for (uint32_t i = 0; i < call->u.call.n_args; i++) slots[i] = call->u.call.args[i];
  for (uint32_t k = 0; k < call->u.call.n_kwargs; k++) {
    const fu_py_kwarg *kw = &call->u.call.kwargs[k];
    uint32_t j = 0;
    while (j < np && !param_has(params[j], kw->name)) j++;
    if (j == np) {
      fu_error(b->diag, kw->loc, "unsupported argument '%s' of '%s'", kw->name, what);
      return FU_ERR_UNSUPPORTED;
    }
    if (slots[j]) {
      fu_error(b->diag, kw->loc, "argument '%s' given twice for '%s'", kw->name, what);
      return FU_ERR_PARSE;
    }
    slots[j] = kw->value;
  }
  for (uint32_t i = 0; i < np; i++)
    if (params[i][0] == '!' && !slots[i]) {
      char name[32];
      param_first(params[i], name, sizeof name);
      fu_error(b->diag, call->loc, "missing argument '%s' for '%s'", name, what);
      return FU_ERR_PARSE;
    }
  return FU_OK;
}

/* ---- constants ---------------------------------------------------------- */

static pconst pconst_int(int64_t i) {
  pconst c = {PY_INT, {.i = i}, FU_DT_I64, false};
  return c;
}
static pconst pconst_float(double f) {
  pconst c = {PY_FLOAT, {.f = f}, FU_DT_F64, false};
  return c;
}
static pconst pconst_bool(bool v) {
  pconst c = {PY_BOOL, {.b = v}, FU_DT_BOOL, false};
  return c;
}
static double pconst_as_double(const pconst *c) {
  return c->kind == PY_FLOAT ? c->v.f : c->kind == PY_INT ? (double)c->v.i : (double)c->v.b;
}

/* Python's `l op r` (+ - * / // % **) on two constants: ints stay ints
 * (overflow and division by zero are errors at `loc`), anything else is a
 * float.  1, or -1 after reporting an error. */
static int pconst_binop(builder *b, const char *op, const pconst *lp, const pconst *rp, fu_loc loc, pconst *out) {
  pconst l = *lp, r = *rp;
  bool ints = l.kind != PY_FLOAT && r.kind != PY_FLOAT;
  /* read the union member `kind` names: a float's bytes are no bool */
  int64_t li = !ints ? 0 : l.kind == PY_INT ? l.v.i : l.v.b, ri = !ints ? 0 : r.kind == PY_INT ? r.v.i : r.v.b;
  double lf = pconst_as_double(&l), rf = pconst_as_double(&r);
  if (ints && strcmp(op, "/") != 0) {
    if ((strcmp(op, "//") == 0 || strcmp(op, "%") == 0) && ri == 0) {
      fu_error(b->diag, loc, "integer division by zero");
      return -1;
    }
    int64_t v = 0;
    bool ovf = false;
    if (strcmp(op, "+") == 0)
      ovf = __builtin_add_overflow(li, ri, &v);
    else if (strcmp(op, "-") == 0)
      ovf = __builtin_sub_overflow(li, ri, &v);
    else if (strcmp(op, "*") == 0)
      ovf = __builtin_mul_overflow(li, ri, &v);
    else if (li == INT64_MIN && ri == -1) /* // and % */
      ovf = strcmp(op, "//") == 0;
    else if (strcmp(op, "//") == 0)
      v = li / ri - ((li % ri != 0) && ((li < 0) != (ri < 0)));
    else if (strcmp(op, "%") == 0) {
      v = li % ri;
      if (v != 0 && ((v < 0) != (ri < 0))) v += ri;
    } else { /* ** */
      if (ri < 0) {
        *out = pconst_float(pow(lf, rf));
        return 1;
      }
      v = 1;
      if (li == 0 || li == 1)
        v = ri == 0 ? 1 : li;
      else if (li == -1)
        v = ri % 2 ? -1 : 1;
      else /* |li| >= 2 overflows within 63 steps */
        for (int64_t k = 0; k < ri && !ovf; k++) ovf = __builtin_mul_overflow(v, li, &v);
    }
    if (ovf) {
      fu_error(b->diag, loc, "integer overflow in '%lld %s %lld' (beyond 64 bits)", (long long)li, op,
               (long long)ri);
      return -1;
    }
    *out = pconst_int(v);
    return 1;
  }
  double v;
  if (strcmp(op, "+") == 0)
    v = lf + rf;
  else if (strcmp(op, "-") == 0)
    v = lf - rf;
  else if (strcmp(op, "*") == 0)
    v = lf * rf;
  else if (strcmp(op, "/") == 0) {
    if (rf == 0.0) {
      fu_error(b->diag, loc, "division by zero");
      return -1;
    }
    v = lf / rf;
  } else if (strcmp(op, "//") == 0)
    v = floor(lf / rf);
  else if (strcmp(op, "%") == 0)
    v = lf - floor(lf / rf) * rf;
  else
    v = pow(lf, rf);
  *out = pconst_float(v);
  return 1;
}

/* Evaluate a constant expression: literals, arithmetic on them, names bound
 * to constants, float("inf").  1 = constant, 0 = not a constant, -1 = error
 * (reported). */
static int eval_const(builder *b, const fu_py_expr *e, pconst *out) {
  switch (e->kind) {
    case FU_PY_E_INT: *out = pconst_int(e->u.i); return 1;
    case FU_PY_E_FLOAT: *out = pconst_float(e->u.f); return 1;
    case FU_PY_E_BOOL: *out = pconst_bool(e->u.b); return 1;
    case FU_PY_E_NAME: {
      binding *bd = fu_py_map_get(&b->env, e->u.name);
      if (bd && bd->kind == B_CONST) {
        *out = bd->cst;
        return 1;
      }
      return 0;
    }
    case FU_PY_E_UNARY: {
      int r = eval_const(b, e->u.unary.operand, out);
      if (r != 1) return r;
      if (e->u.unary.op == '-') {
        if (out->kind == PY_FLOAT)
          out->v.f = -out->v.f;
        else if (out->kind == PY_INT)
          out->v.i = -out->v.i;
        else
          *out = pconst_int(out->v.b ? -1 : 0);
      }
      return 1;
    }
    case FU_PY_E_CALL: {
      const fu_py_expr *callee = e->u.call.callee;
      if (callee->kind == FU_PY_E_NAME && strcmp(callee->u.name, "float") == 0 && e->u.call.n_args == 1 &&
          e->u.call.n_kwargs == 0) {
        const fu_py_expr *a = e->u.call.args[0];
        if (a->kind == FU_PY_E_STRING) {
          const char *s = a->u.str;
          if (strcmp(s, "inf") == 0 || strcmp(s, "+inf") == 0 || strcmp(s, "infinity") == 0)
            *out = pconst_float(INFINITY);
          else if (strcmp(s, "-inf") == 0 || strcmp(s, "-infinity") == 0)
            *out = pconst_float(-INFINITY);
          else if (strcmp(s, "nan") == 0)
            *out = pconst_float(NAN);
          else {
            fu_error(b->diag, a->loc, "unsupported float literal \"%s\"", s);
            return -1;
          }
          return 1;
        }
        pconst c;
        int r = eval_const(b, a, &c);
        if (r != 1) return r;
        *out = pconst_float(pconst_as_double(&c));
        return 1;
      }
      return 0;
    }
    case FU_PY_E_BINARY: {
      pconst l, r;
      int rl = eval_const(b, e->u.binary.lhs, &l);
      if (rl != 1) return rl;
      int rr = eval_const(b, e->u.binary.rhs, &r);
      if (rr != 1) return rr;
      return pconst_binop(b, e->u.binary.op, &l, &r, e->loc, out);
    }
    default: return 0;
  }
}

/* Size expressions (below): arithmetic on tensor sizes and constants. */
static int size_expr(builder *b, const fu_py_expr *e, const sexpr **out);
static const char *size_query_of(builder *b, const fu_py_expr *call, const fu_py_expr **self);
static fu_status build_size_query(builder *b, const char *opname, const fu_py_expr *call, const fu_py_expr *self,
                                  const char *what, result *res);
static fu_status size_value(builder *b, const sexpr *x, fu_loc loc, bool sym_ok, const char *param, const char *what,
                            pconst *c, fu_extent *sym, bool *is_sym);

static fu_status eval_int(builder *b, const fu_py_expr *e, const char *param, const char *what, int64_t *out) {
  pconst c;
  int r = eval_const(b, e, &c);
  const sexpr *x;
  if (r == 0 && (r = size_expr(b, e, &x)) == 1) { /* a tensor size that folds to a constant */
    fu_extent sym;
    bool is_sym;
    fu_status st = size_value(b, x, e->loc, false, param, what, &c, &sym, &is_sym);
    if (st != FU_OK) return st;
  }
  if (r < 0) return FU_ERR_PARSE;
  if (r == 0 || c.kind != PY_INT) {
    fu_error(b->diag, e->loc, "expected an integer for '%s' of '%s'", param, what);
    return FU_ERR_PARSE;
  }
  *out = c.v.i;
  return FU_OK;
}

static fu_status eval_bool(builder *b, const fu_py_expr *e, const char *param, const char *what, bool *out) {
  pconst c;
  int r = eval_const(b, e, &c);
  if (r < 0) return FU_ERR_PARSE;
  if (r == 1 && c.kind == PY_BOOL) {
    *out = c.v.b;
    return FU_OK;
  }
  if (r == 1 && c.kind == PY_INT && (c.v.i == 0 || c.v.i == 1)) {
    *out = c.v.i != 0;
    return FU_OK;
  }
  fu_error(b->diag, e->loc, "expected True or False for '%s' of '%s'", param, what);
  return FU_ERR_PARSE;
}

/* A list (or tuple) of integers; a single integer counts as a list of one
 * when `single` is set; a name bound to a constant vector also works. */
static fu_status eval_int_list(builder *b, const fu_py_expr *e, const char *param, const char *what, bool single,
                               int64_t **out, uint32_t *n) {
  *out = NULL;
  *n = 0;
  if (e->kind == FU_PY_E_LIST || e->kind == FU_PY_E_TUPLE) {
    int64_t *v = scratch_alloc(b, e->u.list.n * sizeof *v);
    if (!v) return nomem(b);
    for (uint32_t i = 0; i < e->u.list.n; i++) {
      fu_status st = eval_int(b, e->u.list.items[i], param, what, &v[i]);
      if (st != FU_OK) return st;
    }
    *out = v;
    *n = e->u.list.n;
    return FU_OK;
  }
  if (e->kind == FU_PY_E_NAME) {
    binding *bd = fu_py_map_get(&b->env, e->u.name);
    if (bd && bd->kind == B_VECTOR) {
      int64_t *v = scratch_alloc(b, bd->n_dims * sizeof *v);
      if (!v) return nomem(b);
      for (uint32_t i = 0; i < bd->n_dims; i++) {
        fu_extent x = fu_py_symtab_canon(&b->syms, bd->dims[i]);
        if (!fu_extent_is_const(x)) {
          fu_error(b->diag, e->loc, "'%s' of '%s' must be constant, but '%s' has a symbolic entry", param, what,
                   e->u.name);
          return FU_ERR_UNSUPPORTED;
        }
        v[i] = x.value;
      }
      *out = v;
      *n = bd->n_dims;
      return FU_OK;
    }
  }
  if (single) {
    pconst c;
    int r = eval_const(b, e, &c);
    if (r < 0) return FU_ERR_PARSE;
    if (r == 1 && c.kind == PY_INT) {
      int64_t *v = scratch_alloc(b, sizeof *v);
      if (!v) return nomem(b);
      v[0] = c.v.i;
      *out = v;
      *n = 1;
      return FU_OK;
    }
  }
  fu_error(b->diag, e->loc, "expected a list of integers for '%s' of '%s'", param, what);
  return FU_ERR_PARSE;
}

/* One entry of a shape: an integer (-1 = infer where allowed), a name bound
 * to a constant or to a tensor extent (fd.ops.size). */
static fu_status eval_extent(builder *b, const fu_py_expr *e, const char *param, const char *what, fu_extent *out) {
  const sexpr *x;
  int r = size_expr(b, e, &x);
  if (r < 0) return FU_ERR_PARSE;
  if (r == 1) { /* a tensor size, or arithmetic on sizes */
    pconst c;
    bool is_sym;
    fu_status st = size_value(b, x, e->loc, true, param, what, &c, out, &is_sym);
    if (st != FU_OK || is_sym) return st;
    if (c.kind != PY_INT || c.v.i < -1) {
      fu_error(b->diag, e->loc, "'%s' of '%s' is not a valid extent", param, what);
      return FU_ERR_VERIFY;
    }
    out->value = c.v.i;
    out->sym = NULL;
    return FU_OK;
  }
  if (e->kind == FU_PY_E_NAME) {
    binding *bd = fu_py_map_get(&b->env, e->u.name);
    if (bd && bd->kind == B_VALUE) {
      fu_error(b->diag, e->loc,
               "'%s' of '%s' uses the runtime scalar '%s'; extents must be constants or sizes of input tensors", param,
               what, e->u.name);
      return FU_ERR_UNSUPPORTED;
    }
  }
  int64_t v;
  fu_status st = eval_int(b, e, param, what, &v);
  if (st != FU_OK) return st;
  if (v < -1) {
    fu_error(b->diag, e->loc, "invalid extent %lld in '%s' of '%s'", (long long)v, param, what);
    return FU_ERR_PARSE;
  }
  out->value = v;
  out->sym = NULL;
  return FU_OK;
}

static fu_status eval_shape(builder *b, const fu_py_expr *e, const char *param, const char *what, fu_extent **out,
                            uint32_t *n) {
  const fu_py_expr *self;
  const char *query = e->kind == FU_PY_E_CALL ? size_query_of(b, e, &self) : NULL;
  if (query && strcmp(query, "shape") == 0) { /* T.shape() or fd.ops.shape(T) in place */
    result r;
    char name[96];
    snprintf(name, sizeof name, "%s.shape", self ? self->u.name : "fd.ops");
    fu_status st = build_size_query(b, query, e, self, name, &r);
    if (st != FU_OK) return st;
    *out = r.b[0].dims;
    *n = r.b[0].n_dims;
    for (uint32_t i = 0; i < *n; i++) (*out)[i] = fu_py_symtab_canon(&b->syms, (*out)[i]);
    return FU_OK;
  }
  if (e->kind == FU_PY_E_NAME) {
    binding *bd = fu_py_map_get(&b->env, e->u.name);
    if (bd && bd->kind == B_VECTOR) {
      fu_extent *v = scratch_alloc(b, bd->n_dims * sizeof *v);
      if (!v) return nomem(b);
      for (uint32_t i = 0; i < bd->n_dims; i++) v[i] = fu_py_symtab_canon(&b->syms, bd->dims[i]);
      *out = v;
      *n = bd->n_dims;
      return FU_OK;
    }
  }
  if (e->kind != FU_PY_E_LIST && e->kind != FU_PY_E_TUPLE) {
    fu_error(b->diag, e->loc, "expected a list of extents for '%s' of '%s'", param, what);
    return FU_ERR_PARSE;
  }
  if (e->u.list.n > FU_MAX_RANK) {
    fu_error(b->diag, e->loc, "'%s' of '%s' has more than %d entries", param, what, FU_MAX_RANK);
    return FU_ERR_UNSUPPORTED;
  }
  fu_extent *v = scratch_alloc(b, e->u.list.n * sizeof *v);
  if (!v) return nomem(b);
  for (uint32_t i = 0; i < e->u.list.n; i++) {
    fu_status st = eval_extent(b, e->u.list.items[i], param, what, &v[i]);
    if (st != FU_OK) return st;
  }
  *out = v;
  *n = e->u.list.n;
  return FU_OK;
}

/* DataType.X (or nvfuser.DataType.X, or a torch dtype). */
static fu_status eval_dtype(builder *b, const fu_py_expr *e, const char *what, bool allow_null, fu_dtype *out) {
  char name[128];
  bool known = false, supported = false;
  fu_dtype t = FU_DT_NONE;
  if (dotted(e, name, sizeof name)) {
    const char *dot = strrchr(name, '.');
    size_t prefix = dot ? (size_t)(dot - name) : 0;
    if (dot &&
        ((prefix == 8 && strncmp(name, "DataType", 8) == 0) || (prefix > 9 && strncmp(dot - 9, ".DataType", 9) == 0)))
      t = fu_py_datatype_from_name(dot + 1, &known, &supported);
    else if (dot && prefix == 5 && strncmp(name, "torch", 5) == 0)
      t = fu_py_torch_dtype_from_name(dot + 1, &known, &supported);
    if (!known) {
      fu_error(b->diag, e->loc, "unknown dtype '%s' for '%s'", name, what);
      return FU_ERR_PARSE;
    }
    if (!supported) {
      fu_error(b->diag, e->loc, "unsupported dtype '%s'", name);
      return FU_ERR_UNSUPPORTED;
    }
    if (t == FU_DT_NONE && !allow_null) {
      fu_error(b->diag, e->loc, "'%s' needs a dtype, not '%s'", what, name);
      return FU_ERR_PARSE;
    }
    *out = t;
    return FU_OK;
  }
  if (e->kind == FU_PY_E_NONE && allow_null) {
    *out = FU_DT_NONE;
    return FU_OK;
  }
  fu_error(b->diag, e->loc, "expected a DataType for '%s'", what);
  return FU_ERR_PARSE;
}

/* ---- values --------------------------------------------------------- */

/* Give `v` the name `want` (or a fresh temporary name), unique within the
 * fusion: a script may assign the same name twice. */
static fu_status name_value(builder *b, fu_value *v, const char *want) {
  char buf[128];
  const int keep = (int)sizeof buf - 12; /* a long name is cut before its suffix, so each k is new */
  bool tensor = fu_type_is_tensor(&v->type);
  for (uint32_t k = 0;; k++) {
    if (want && k == 0)
      snprintf(buf, sizeof buf, "%.*s", keep, want);
    else if (want)
      snprintf(buf, sizeof buf, "%.*s_%u", keep, want, k);
    else
      snprintf(buf, sizeof buf, "_%c%u", tensor ? 'T' : 'S', b->n_temps++);
    if (!fu_py_map_get(&b->names, buf)) break;
  }
  fu_value_set_name(b->m, v, buf);
  if (!v->name || !fu_py_map_set(&b->names, v->name, v)) return nomem(b);
  return FU_OK;
}

/* C's float-to-int conversion is undefined outside this range (and for NaN). */
static bool in_i64_range(double f) { return f >= -9223372036854775808.0 && f < 9223372036854775808.0; }

static fu_value *make_literal(builder *b, const pconst *c) {
  fu_value *v;
  if (fu_dtype_is_float(c->dtype))
    v = fu_literal_f(b->f, c->dtype, pconst_as_double(c));
  else if (fu_dtype_is_int(c->dtype))
    v = fu_literal_i(b->f, c->dtype,
                     c->kind == PY_FLOAT ? (in_i64_range(c->v.f) ? (int64_t)c->v.f : 0)
                     : c->kind == PY_INT ? c->v.i
                                         : c->v.b);
  else
    v = fu_literal_b(b->f, c->kind == PY_BOOL ? c->v.b : pconst_as_double(c) != 0.0);
  if (v) v->literal_typed = c->typed;
  return v;
}

/* ---- size expressions --------------------------------------------------- */

/* "fd.ops.X" -> "X"; NULL for any other callee. */
static const char *fd_op_name(builder *b, const fu_py_expr *call, char *buf, size_t cap) {
  if (!dotted(call->u.call.callee, buf, cap)) return NULL;
  size_t nfd = strlen(b->unit->fd);
  if (strncmp(buf, b->unit->fd, nfd) != 0 || strncmp(buf + nfd, ".ops.", 5) != 0 || strchr(buf + nfd + 5, '.'))
    return NULL;
  return buf + nfd + 5;
}

/* The size query a call is: fd.ops.size / shape / at, or the tensor
 * methods T.size(d) and T.shape() (*self is then T); NULL for others. */
static const char *size_query_of(builder *b, const fu_py_expr *call, const fu_py_expr **self) {
  static const char *const queries[] = {"size", "shape", "at"};
  char buf[160];
  *self = NULL;
  const char *op = fd_op_name(b, call, buf, sizeof buf);
  for (size_t i = 0; op && i < 3; i++)
    if (strcmp(op, queries[i]) == 0) return queries[i];
  const fu_py_expr *callee = call->u.call.callee;
  if (callee->kind != FU_PY_E_ATTR || callee->u.attr.base->kind != FU_PY_E_NAME) return NULL;
  binding *bd = fu_py_map_get(&b->env, callee->u.attr.base->u.name);
  if (!bd || bd->kind != B_VALUE || !fu_type_is_tensor(&bd->value->type)) return NULL;
  for (size_t i = 0; i < 2; i++)
    if (strcmp(callee->u.attr.name, queries[i]) == 0) {
      *self = callee->u.attr.base;
      return queries[i];
    }
  return NULL;
}

/* fd.ops names that are scalar arithmetic on sizes, and their sexpr op. */
static char size_op_of(const char *name) {
  static const struct {
    const char *name;
    char op;
  } ops[] = {{"add", '+'},       {"sub", '-'},       {"mul", '*'}, {"div", 'd'},        {"truediv", '/'},
             {"remainder", '%'}, {"mod", '%'},       {"neg", 'n'}, {"reciprocal", 'r'}, {"cast", 'c'}};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (strcmp(ops[i].name, name) == 0) return ops[i].op;
  return 0;
}

static int size_tree(builder *b, const fu_py_expr *e, const sexpr **out, bool *has);

/* Whether a call is T.shape() or fd.ops.shape(T). */
static bool q_is_shape(builder *b, const fu_py_expr *call, const fu_py_expr **self) {
  const char *q = size_query_of(b, call, self);
  return q && strcmp(q, "shape") == 0;
}

/* The operands of fd.ops.<op>(...) on sizes, bound by nvFuser's names. */
static int size_call(builder *b, const fu_py_expr *e, const char *opname, sexpr *x, bool *has) {
  static const char *const unary[] = {"!arg|input|arg1|x", NULL};
  static const char *const binary[] = {"!arg1|lhs|input|arg|x", "!arg2|rhs|other|y", NULL};
  static const char *const cast[] = {"!arg|input|arg1|x", "!dtype", NULL};
  const fu_py_expr *s[MAX_PARAMS];
  char what[96];
  op_display(b, opname, what, sizeof what);
  bool is_binary = x->op != 'n' && x->op != 'r' && x->op != 'c';
  if (bind_args(b, e, what, x->op == 'c' ? cast : is_binary ? binary : unary, s) != FU_OK) return -1;
  int r = size_tree(b, s[0], &x->l, has);
  if (r == 1 && is_binary) r = size_tree(b, s[1], &x->r, has);
  if (r == 1 && x->op == 'c' && eval_dtype(b, s[1], what, false, &x->to) != FU_OK) return -1;
  return r;
}

/* Reads `e` as a size expression.  1: it is one (*out; *has when it
 * mentions a tensor size), 0: it is not (a tensor, a runtime scalar, an
 * op on those), -1: an error was reported.  Nothing but size queries is
 * evaluated on the way, and they make no ops. */
static int size_tree(builder *b, const fu_py_expr *e, const sexpr **out, bool *has) {
  sexpr *x = scratch_alloc(b, sizeof *x);
  if (!x) return nomem(b), -1;
  memset(x, 0, sizeof *x);
  *out = x;
  switch (e->kind) {
    case FU_PY_E_INT:
    case FU_PY_E_FLOAT:
    case FU_PY_E_BOOL: x->op = 'k'; return eval_const(b, e, &x->cst);
    case FU_PY_E_NAME: {
      binding *bd = fu_py_map_get(&b->env, e->u.name);
      if (!bd) return 0;
      x->op = bd->kind == B_CONST ? 'k' : 'e';
      x->cst = bd->cst;
      x->leaf = bd->extent;
      if (bd->kind == B_SIZE) *out = bd->size;
      *has |= bd->kind == B_EXTENT || bd->kind == B_SIZE;
      return bd->kind == B_CONST || bd->kind == B_EXTENT || bd->kind == B_SIZE;
    }
    case FU_PY_E_UNARY:
      if (e->u.unary.op == '+') return size_tree(b, e->u.unary.operand, out, has);
      x->op = 'n';
      return size_tree(b, e->u.unary.operand, &x->l, has);
    case FU_PY_E_BINARY: {
      const char *op = e->u.binary.op;
      x->op = strcmp(op, "//") == 0 ? 'F' : strcmp(op, "**") == 0 ? 'p' : op[0];
      int r = size_tree(b, e->u.binary.lhs, &x->l, has);
      return r == 1 ? size_tree(b, e->u.binary.rhs, &x->r, has) : r;
    }
    case FU_PY_E_CALL: {
      const fu_py_expr *self;
      const char *q = size_query_of(b, e, &self);
      if (q && strcmp(q, "shape") != 0) {
        char what[96];
        result res;
        if (self)
          snprintf(what, sizeof what, "%s.%s", self->u.name, q);
        else
          op_display(b, q, what, sizeof what);
        if (build_size_query(b, q, e, self, what, &res) != FU_OK) return -1;
        x->op = 'e';
        x->leaf = res.b[0].extent;
        *has = true;
        return 1;
      }
      char buf[160];
      const char *opname = q ? NULL : fd_op_name(b, e, buf, sizeof buf);
      if (!opname || !(x->op = size_op_of(opname))) return 0;
      return size_call(b, e, opname, x, has);
    }
    case FU_PY_E_SUBSCRIPT: { /* V[i] of a shape vector, as fd.ops.at(V, i) */
      const fu_py_expr *base = e->u.subscript.base;
      const fu_py_expr *self;
      binding *bd = base->kind == FU_PY_E_NAME ? fu_py_map_get(&b->env, base->u.name) : NULL;
      bool is_vector = (bd && bd->kind == B_VECTOR) ||
                       (base->kind == FU_PY_E_CALL && (q_is_shape(b, base, &self)));
      if (!is_vector) return 0;
      fu_extent *dims;
      uint32_t n;
      int64_t index;
      if (eval_shape(b, base, "vector", "subscript", &dims, &n) != FU_OK ||
          eval_int(b, e->u.subscript.index, "index", "subscript", &index) != FU_OK)
        return -1;
      if (index < 0) index += n;
      if (index < 0 || index >= (int64_t)n) {
        fu_error(b->diag, e->u.subscript.index->loc, "index %lld is out of range for a shape of %u entries",
                 (long long)index, n);
        return -1;
      }
      x->op = 'e';
      x->leaf = dims[index];
      *has = true;
      return 1;
    }
    default: return 0;
  }
}

/* 1 and *out when `e` is a size expression that mentions a tensor size;
 * 0 when it is not one; -1 after an error. */
static int size_expr(builder *b, const fu_py_expr *e, const sexpr **out) {
  bool has = false;
  int r = size_tree(b, e, out, &has);
  return r < 0 ? -1 : r == 1 && has ? 1 : 0;
}

/* The size the inputs list gives the symbol `e`, if it does. */
static bool example_extent(builder *b, fu_extent e, int64_t *v) {
  const fu_py_unit *u = b->unit;
  const fu_py_sym *sym = u->examples ? fu_py_symtab_lookup(&b->syms, e) : NULL;
  if (!sym || sym->origin_input < 0 || (uint32_t)sym->origin_input >= u->n_examples) return false;
  const fu_py_example_spec *ex = &u->examples[sym->origin_input];
  if (ex->is_scalar || ex->rank <= sym->origin_dim) return false;
  *v = ex->shape[sym->origin_dim];
  return true;
}

/* nvFuser's scalar op `op` on two folded constants (or one for n, r, c). */
static int size_apply(builder *b, const sexpr *x, const pconst *l, const pconst *r, fu_loc loc, pconst *out) {
  bool ints = l->kind != PY_FLOAT && (!r || r->kind != PY_FLOAT);
  switch (x->op) {
    case 'n': {
      pconst zero = pconst_int(0);
      return pconst_binop(b, "-", &zero, l, loc, out);
    }
    case 'r':
      *out = pconst_float(1.0 / pconst_as_double(l));
      if (l->kind == PY_FLOAT) { /* a float keeps its dtype */
        out->dtype = l->dtype;
        out->typed = l->typed;
      }
      return 1;
    case 'c':
      if (fu_dtype_is_float(x->to))
        *out = pconst_float(pconst_as_double(l));
      else if (fu_dtype_is_int(x->to))
        *out = pconst_int(l->kind == PY_FLOAT ? (in_i64_range(l->v.f) ? (int64_t)l->v.f : 0)
                          : l->kind == PY_INT ? l->v.i
                                              : l->v.b);
      else
        *out = pconst_bool(pconst_as_double(l) != 0.0);
      out->dtype = x->to;
      out->typed = true;
      return 1;
    case 'd': /* nvFuser's div: C's truncation on integers */
      if (ints) {
        int64_t li = l->kind == PY_INT ? l->v.i : l->v.b, ri = r->kind == PY_INT ? r->v.i : r->v.b;
        if (ri == 0 || (li == INT64_MIN && ri == -1)) {
          fu_error(b->diag, loc, "integer division by zero or overflow in a size expression");
          return -1;
        }
        *out = pconst_int(li / ri);
        return 1;
      }
      return pconst_binop(b, "/", l, r, loc, out);
    case 'F': return pconst_binop(b, "//", l, r, loc, out);
    case 'p': return pconst_binop(b, "**", l, r, loc, out);
    default: {
      char op[2] = {x->op, 0};
      return pconst_binop(b, op, l, r, loc, out);
    }
  }
}

/* Folds a size expression: 1 the constant *c, 2 exactly the symbolic
 * extent *sym (through integer casts and x*1, x+0), 0 arithmetic on
 * symbolic sizes, -1 an error.  With `concretize` symbolic sizes take the
 * sizes the inputs list gives them. */
static int size_fold(builder *b, const sexpr *x, bool concretize, fu_loc loc, pconst *c, fu_extent *sym) {
  if (x->op == 'k') {
    *c = x->cst;
    return 1;
  }
  if (x->op == 'e') {
    fu_extent e = fu_py_symtab_canon(&b->syms, x->leaf);
    int64_t v = e.value;
    if (fu_extent_is_const(e) || (concretize && example_extent(b, e, &v))) {
      *c = pconst_int(v);
      return 1;
    }
    *sym = e;
    return 2;
  }
  pconst l, r;
  fu_extent ls = {0, NULL}, rs = {0, NULL};
  int kl = size_fold(b, x->l, concretize, loc, &l, &ls);
  int kr = x->r ? size_fold(b, x->r, concretize, loc, &r, &rs) : 1;
  if (kl < 0 || kr < 0) return -1;
  if (kl == 1 && kr == 1) return size_apply(b, x, &l, x->r ? &r : NULL, loc, c);
  bool r_is = kr == 1 && x->r && r.kind == PY_INT, l_is = kl == 1 && l.kind == PY_INT;
  if (kl == 2 && ((x->op == 'c' && fu_dtype_is_int(x->to)) ||
                  (r_is && (((x->op == '*' || x->op == 'd' || x->op == 'F') && r.v.i == 1) ||
                            ((x->op == '+' || x->op == '-') && r.v.i == 0))))) {
    *sym = ls;
    return 2;
  }
  if (kr == 2 && l_is && ((x->op == '*' && l.v.i == 1) || (x->op == '+' && l.v.i == 0))) {
    *sym = rs;
    return 2;
  }
  return 0;
}

/* A size expression where a constant is needed (an index, a width) or,
 * with `sym_ok`, an extent: folded, and failing that, folded again with
 * the inputs list's sizes.  Errors name the parameter. */
static fu_status size_value(builder *b, const sexpr *x, fu_loc loc, bool sym_ok, const char *param, const char *what,
                            pconst *c, fu_extent *sym, bool *is_sym) {
  *is_sym = false;
  int k = size_fold(b, x, false, loc, c, sym);
  if (k == 0 || (k == 2 && !sym_ok)) k = size_fold(b, x, true, loc, c, sym);
  if (k < 0) return FU_ERR_PARSE;
  if (k == 1) return FU_OK;
  if (k == 2 && sym_ok) {
    *is_sym = true;
    return FU_OK;
  }
  const char *dot = k == 2 ? strrchr(sym->sym, '.') : NULL; /* symbols are named "<input>.<dim>" until finalized */
  if (k == 2 && dot)
    fu_error(b->diag, loc,
             "'%s' of '%s' must be constant here, but it is the symbolic size %.*s.size(%s) (give constant input "
             "sizes or an inputs list)",
             param, what, (int)(dot - sym->sym), sym->sym, dot + 1);
  else if (k == 2)
    fu_error(b->diag, loc,
             "'%s' of '%s' must be constant here, but it is the symbolic size '%s' (give constant input sizes or an "
             "inputs list)",
             param, what, sym->sym);
  else
    fu_error(b->diag, loc,
             "'%s' of '%s' is arithmetic on symbolic sizes, which an extent cannot state (give constant input sizes "
             "or an inputs list)",
             param, what);
  return FU_ERR_UNSUPPORTED;
}

/* Evaluate a call: fd.ops.<op>, or an fd.<method>.  Results that no
 * assignment names get temporary names here. */
static fu_status eval_call(builder *b, const fu_py_expr *call, const char *name_hint, result *res);
static fu_status eval_arith(builder *b, const fu_py_expr *e, const char *name, fu_value **out);

/* An operand: a tensor or scalar value, or a constant (as a literal). */
static fu_status eval_operand(builder *b, const fu_py_expr *e, const char *what, fu_value **out) {
  pconst c;
  int r = eval_const(b, e, &c);
  const sexpr *x;
  if (r == 0 && (r = size_expr(b, e, &x)) == 1) { /* a tensor size as a value: only a constant one */
    fu_extent sym;
    bool is_sym;
    fu_status st = size_value(b, x, e->loc, false, "operand", what, &c, &sym, &is_sym);
    if (st != FU_OK) return st;
  }
  if (r < 0) return FU_ERR_PARSE;
  if (r == 1) {
    *out = make_literal(b, &c);
    return *out ? FU_OK : nomem(b);
  }
  if (e->kind == FU_PY_E_NAME) {
    binding *bd = fu_py_map_get(&b->env, e->u.name);
    if (!bd) {
      fu_error(b->diag, e->loc, "undefined name '%s'", e->u.name);
      return FU_ERR_PARSE;
    }
    if (bd->kind != B_VALUE) {
      fu_error(b->diag, e->loc, "'%s' is a %s, not a tensor or scalar operand of '%s'", e->u.name,
               bd->kind == B_EXTENT ? "tensor size" : "shape vector", what);
      return FU_ERR_UNSUPPORTED;
    }
    *out = bd->value;
    return FU_OK;
  }
  if (e->kind == FU_PY_E_CALL) {
    result res;
    fu_status st = eval_call(b, e, NULL, &res);
    if (st != FU_OK) return st;
    if (res.n != 1 || res.b[0].kind != B_VALUE) {
      fu_error(b->diag, e->loc, "expected one tensor or scalar as an operand of '%s'", what);
      return FU_ERR_PARSE;
    }
    *out = res.b[0].value;
    return FU_OK;
  }
  if (e->kind == FU_PY_E_BINARY || e->kind == FU_PY_E_UNARY) return eval_arith(b, e, NULL, out);
  if (e->kind == FU_PY_E_SUBSCRIPT) {
    fu_error(b->diag, e->loc, "unsupported Python construct 'subscript' (as an operand of '%s')", what);
    return FU_ERR_UNSUPPORTED;
  }
  fu_error(b->diag, e->loc, "expected a tensor or scalar operand of '%s'", what);
  return FU_ERR_PARSE;
}

static fu_status eval_tensor(builder *b, const fu_py_expr *e, const char *what, fu_value **out) {
  fu_status st = eval_operand(b, e, what, out);
  if (st != FU_OK) return st;
  if (!fu_type_is_tensor(&(*out)->type)) {
    fu_error(b->diag, e->loc, "'%s' needs a tensor here, not a scalar", what);
    return FU_ERR_VERIFY;
  }
  fu_py_symtab_canon_type(&b->syms, &(*out)->type);
  return FU_OK;
}

/* ---- op construction ---------------------------------------------------- */

static fu_op *new_op(builder *b, fu_op_kind kind, fu_value *const *operands, uint32_t n, uint32_t n_results,
                     fu_loc loc) {
  fu_op *op = fu_op_new(b->f, kind, operands, n, n_results, loc);
  if (op) fu_block_append(&b->f->body, op);
  return op;
}

/* A stated result type (reshape, expand, broadcast_in_dim, full, iota,
 * cast), copied into the module. */
static fu_status state_type(builder *b, fu_op *op, fu_dtype dt, const fu_extent *dims, int32_t rank) {
  fu_type *t = &op->results[0]->type;
  t->dtype = dt;
  t->rank = rank;
  t->dims = NULL;
  if (rank > 0) {
    fu_extent *d = fu_arena_alloc(b->m->arena, (size_t)rank * sizeof *d);
    if (!d) return nomem(b);
    for (int32_t i = 0; i < rank; i++) d[i] = fu_py_symtab_canon(&b->syms, dims[i]);
    t->dims = d;
  }
  return FU_OK;
}

/* Unify the extents pointwise operands must share: same position, same
 * rank, neither a broadcast 1.  Rank mismatches are left to inference. */
static void unify_pointwise(builder *b, fu_value *const *vals, uint32_t n) {
  int32_t rank = -2;
  for (uint32_t i = 0; i < n; i++) {
    if (!fu_type_is_tensor(&vals[i]->type)) continue;
    if (rank == -2)
      rank = vals[i]->type.rank;
    else if (rank != vals[i]->type.rank)
      return;
  }
  for (int32_t d = 0; d < rank; d++) {
    fu_extent first = {0, NULL};
    bool have = false;
    for (uint32_t i = 0; i < n; i++) {
      if (!fu_type_is_tensor(&vals[i]->type)) continue;
      fu_extent e = fu_py_symtab_canon(&b->syms, vals[i]->type.dims[d]);
      if (fu_extent_is_one(e)) continue;
      if (!have) {
        first = e;
        have = true;
      } else {
        fu_py_symtab_unify(&b->syms, first, e);
      }
    }
  }
}

/* Run inference on a built op and bind its results. */
static fu_status finish_op(builder *b, fu_op *op, result *res) {
  for (uint32_t i = 0; i < op->n_operands; i++)
    if (!op->operands[i]->is_literal) fu_py_symtab_canon_type(&b->syms, &op->operands[i]->type);
  fu_type out[MAX_RESULTS];
  memset(out, 0, sizeof out);
  fu_status st = fu_infer_types(op, out, b->diag);
  if (st != FU_OK) return st;
  res->n = op->n_results;
  for (uint32_t r = 0; r < op->n_results; r++) {
    op->results[r]->type = out[r];
    fu_py_symtab_canon_type(&b->syms, &op->results[r]->type);
    memset(&res->b[r], 0, sizeof res->b[r]);
    res->b[r].kind = B_VALUE;
    res->b[r].value = op->results[r];
  }
  return FU_OK;
}

static fu_status single_value(builder *b, fu_op *op, result *res) {
  if (!op) return nomem(b);
  return finish_op(b, op, res);
}

/* Normalize dims (negative counts from the end), check the range, sort and
 * drop duplicates when `sort` is set. */
static fu_status normalize_dims(builder *b, int64_t *v, uint32_t *n, int32_t rank, bool sort, fu_loc loc,
                                const char *param, const char *what) {
  for (uint32_t i = 0; i < *n; i++) {
    if (v[i] < 0) v[i] += rank;
    if (v[i] < 0 || v[i] >= (rank > 0 ? rank : 1) || (rank == 0)) {
      fu_error(b->diag, loc, "'%s' of '%s' has a dim out of range for rank %d", param, what, rank);
      return FU_ERR_VERIFY;
    }
  }
  if (!sort) return FU_OK;
  for (uint32_t i = 1; i < *n; i++)
    for (uint32_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
      int64_t t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  uint32_t k = 0;
  for (uint32_t i = 0; i < *n; i++)
    if (k == 0 || v[k - 1] != v[i]) v[k++] = v[i];
  *n = k;
  return FU_OK;
}

static const fu_py_expr *arg_loc_expr(const fu_py_expr *slot, const fu_py_expr *call) { return slot ? slot : call; }

/* ---- per-class op builders ------------------------------------------- */

/* One fd.ops call being built: its IR op, its arguments bound to the
 * parameters of its row in frontend_ops, and the first argument evaluated
 * when the row asks for it. */
typedef struct op_call {
  fu_op_kind kind;
  const fu_py_expr *call;
  const char *what; /* the call's name as written, for messages */
  const fu_py_expr *s[MAX_PARAMS];
  fu_value *x;    /* s[0] evaluated (FIRST_TENSOR, FIRST_OPERAND) */
  bool old_order; /* bound with the row's `legacy` parameters */
} op_call;

typedef fu_status (*build_fn)(builder *b, op_call *c, result *res);

static fu_status build_unary(builder *b, op_call *c, result *res) {
  return single_value(b, new_op(b, c->kind, &c->x, 1, 1, c->call->loc), res);
}

/* fd.ops.cast(arg, dtype): the result type is stated, the operand's shape
 * with the new dtype. */
static fu_status build_cast(builder *b, op_call *c, result *res) {
  fu_status st;
  fu_dtype dt;
  if ((st = eval_dtype(b, c->s[1], c->what, false, &dt)) != FU_OK) return st;
  fu_py_symtab_canon_type(&b->syms, &c->x->type);
  fu_op *op = new_op(b, FU_OP_CAST, &c->x, 1, 1, c->call->loc);
  if (!op) return nomem(b);
  if ((st = state_type(b, op, dt, c->x->type.dims, c->x->type.rank)) != FU_OK) return st;
  return finish_op(b, op, res);
}

/* A 0-dim tensor operand of a pointwise op beside higher-rank tensors
 * broadcasts to their shape, as in nvFuser: a broadcast_in_dim with no
 * mapped dims makes that explicit for fuser's inference. */
static fu_status broadcast_rank0(builder *b, fu_value **v, uint32_t n, fu_loc loc) {
  const fu_value *ref = NULL;
  for (uint32_t i = 0; i < n; i++)
    if (fu_type_is_tensor(&v[i]->type) && v[i]->type.rank > 0 && (!ref || v[i]->type.rank > ref->type.rank)) ref = v[i];
  for (uint32_t i = 0; ref && i < n; i++) {
    if (!fu_type_is_tensor(&v[i]->type) || v[i]->type.rank != 0) continue;
    fu_op *op = new_op(b, FU_OP_BROADCAST_IN_DIM, &v[i], 1, 1, loc);
    if (!op) return nomem(b);
    fu_status st = state_type(b, op, v[i]->type.dtype, ref->type.dims, ref->type.rank);
    result r;
    if (st != FU_OK || (st = finish_op(b, op, &r)) != FU_OK || (st = name_value(b, op->results[0], NULL)) != FU_OK)
      return st;
    v[i] = op->results[0];
  }
  return FU_OK;
}

/* Binary and ternary pointwise ops; their tensor operands share extents. */
static fu_status build_nary(builder *b, op_call *c, result *res) {
  fu_status st;
  uint32_t n = (uint32_t)fu_op_info_of(c->kind)->num_operands;
  fu_value *v[3];
  for (uint32_t i = 0; i < n; i++)
    if ((st = eval_operand(b, c->s[i], c->what, &v[i])) != FU_OK) return st;
  if ((st = broadcast_rank0(b, v, n, c->call->loc)) != FU_OK) return st;
  unify_pointwise(b, v, n);
  return single_value(b, new_op(b, c->kind, v, n, 1, c->call->loc), res);
}

/* The dims of a reduction (s[1]), normalized; none reduces every dim, as
 * nvFuser's overload without axes does. */
static fu_status eval_axes(builder *b, const op_call *c, int64_t **axes, uint32_t *n_axes) {
  fu_status st;
  if (c->s[1]) {
    if ((st = eval_int_list(b, c->s[1], "dims", c->what, true, axes, n_axes)) != FU_OK) return st;
  } else {
    *n_axes = (uint32_t)c->x->type.rank;
    *axes = scratch_alloc(b, (*n_axes ? *n_axes : 1) * sizeof **axes);
    if (!*axes) return nomem(b);
    for (uint32_t i = 0; i < *n_axes; i++) (*axes)[i] = i;
  }
  return normalize_dims(b, *axes, n_axes, c->x->type.rank, true, arg_loc_expr(c->s[1], c->call)->loc, "dims",
                        c->what);
}

/* sum/prod/max/min(arg, dims, keepdim, dtype): no dims reduces every dim,
 * as nvFuser's overload without axes does. */
static fu_status build_reduce(builder *b, op_call *c, result *res) {
  fu_status st;
  int64_t *axes;
  uint32_t n_axes;
  if ((st = eval_axes(b, c, &axes, &n_axes)) != FU_OK) return st;
  bool keepdim = false;
  if (c->s[2] && (st = eval_bool(b, c->s[2], "keepdim", c->what, &keepdim)) != FU_OK) return st;
  fu_dtype dt = FU_DT_NONE;
  if (c->s[3] && (st = eval_dtype(b, c->s[3], c->what, true, &dt)) != FU_OK) return st;
  fu_op *op = new_op(b, c->kind, &c->x, 1, 1, c->call->loc);
  if (!op) return nomem(b);
  op->u.reduce.axes = fu_int_list_copy(b->m, axes, n_axes);
  if (n_axes && !op->u.reduce.axes.v) return nomem(b);
  op->u.reduce.keepdim = keepdim;
  op->u.reduce.dtype = dt;
  return finish_op(b, op, res);
}

/* var / var_mean(arg, dims, correction, keepdim); the old `unbiased` flag
 * means correction 1. */
static fu_status build_variance(builder *b, op_call *c, result *res) {
  fu_status st;
  int64_t *axes;
  uint32_t n_axes;
  if ((st = eval_axes(b, c, &axes, &n_axes)) != FU_OK) return st;
  int64_t correction = 1;
  if (c->s[2] && c->s[4]) {
    fu_error(b->diag, c->s[4]->loc, "'%s' takes either 'correction' or 'unbiased', not both", c->what);
    return FU_ERR_PARSE;
  }
  if (c->s[2] && (st = eval_int(b, c->s[2], "correction", c->what, &correction)) != FU_OK) return st;
  if (c->s[4]) {
    bool unbiased;
    if ((st = eval_bool(b, c->s[4], "unbiased", c->what, &unbiased)) != FU_OK) return st;
    correction = unbiased ? 1 : 0;
  }
  if (correction < 0) {
    fu_error(b->diag, c->s[2]->loc, "'correction' of '%s' must not be negative", c->what);
    return FU_ERR_VERIFY;
  }
  bool keepdim = false;
  if (c->s[3] && (st = eval_bool(b, c->s[3], "keepdim", c->what, &keepdim)) != FU_OK) return st;
  fu_op *op = new_op(b, c->kind, &c->x, 1, c->kind == FU_OP_VAR_MEAN ? 2 : 1, c->call->loc);
  if (!op) return nomem(b);
  op->u.variance.axes = fu_int_list_copy(b->m, axes, n_axes);
  if (n_axes && !op->u.variance.axes.v) return nomem(b);
  op->u.variance.keepdim = keepdim;
  op->u.variance.correction = correction;
  return finish_op(b, op, res);
}

/* cumsum / cumprod / cummax / cummin(arg, dim): an inclusive scan along
 * dim (negative counts from the end). */
static fu_status build_scan(builder *b, op_call *c, result *res) {
  fu_status st;
  int64_t dim;
  uint32_t one = 1;
  if ((st = eval_int(b, c->s[1], "dim", c->what, &dim)) != FU_OK) return st;
  if ((st = normalize_dims(b, &dim, &one, c->x->type.rank, false, c->s[1]->loc, "dim", c->what)) != FU_OK) return st;
  fu_op *op = new_op(b, c->kind, &c->x, 1, 1, c->call->loc);
  if (!op) return nomem(b);
  op->u.scan.dim = dim;
  return finish_op(b, op, res);
}

/* broadcast_in_dim(arg, shape, broadcast_dims): -1 in shape keeps the
 * operand's extent; a stated extent pins the operand's symbol. */
static fu_status build_broadcast_in_dim(builder *b, op_call *c, result *res) {
  fu_status st;
  fu_extent *shape;
  uint32_t rank;
  int64_t *bdims;
  uint32_t nb;
  if ((st = eval_shape(b, c->s[1], "shape", c->what, &shape, &rank)) != FU_OK) return st;
  if ((st = eval_int_list(b, c->s[2], "broadcast_dims", c->what, false, &bdims, &nb)) != FU_OK) return st;
  if (nb != (uint32_t)c->x->type.rank) {
    fu_error(b->diag, c->s[2]->loc, "'broadcast_dims' of '%s' has %u entries but the operand has rank %d", c->what, nb,
             c->x->type.rank);
    return FU_ERR_VERIFY;
  }
  if ((st = normalize_dims(b, bdims, &nb, (int32_t)rank, false, c->s[2]->loc, "broadcast_dims", c->what)) != FU_OK)
    return st;
  bool *mapped = scratch_alloc(b, (rank ? rank : 1) * sizeof *mapped);
  if (!mapped) return nomem(b);
  for (uint32_t i = 0; i < nb; i++) {
    uint32_t j = (uint32_t)bdims[i];
    mapped[j] = true;
    fu_extent xe = fu_py_symtab_canon(&b->syms, c->x->type.dims[i]);
    if (fu_extent_is_const(shape[j]) && shape[j].value == -1)
      shape[j] = xe; /* -1: keep the operand's extent */
    else if (!fu_extent_is_one(xe))
      fu_py_symtab_unify(&b->syms, xe, shape[j]);
  }
  for (uint32_t j = 0; j < rank; j++)
    if (!mapped[j] && fu_extent_is_const(shape[j]) && shape[j].value == -1) {
      fu_error(b->diag, c->s[1]->loc, "'shape' of '%s' has -1 at dim %u, which does not come from the operand", c->what,
               j);
      return FU_ERR_VERIFY;
    }
  fu_op *op = new_op(b, FU_OP_BROADCAST_IN_DIM, &c->x, 1, 1, c->call->loc);
  if (!op) return nomem(b);
  op->u.broadcast_in_dim.broadcast_dims = fu_int_list_copy(b->m, bdims, nb);
  if (nb && !op->u.broadcast_in_dim.broadcast_dims.v) return nomem(b);
  if ((st = state_type(b, op, c->x->type.dtype, shape, (int32_t)rank)) != FU_OK) return st;
  return finish_op(b, op, res);
}

/* broadcast(arg, is_broadcast_dim): new dims of extent 1. */
static fu_status build_broadcast(builder *b, op_call *c, result *res) {
  fu_status st;
  if (c->s[1]->kind != FU_PY_E_LIST && c->s[1]->kind != FU_PY_E_TUPLE) {
    fu_error(b->diag, c->s[1]->loc, "expected a list of booleans for 'is_broadcast_dim' of '%s'", c->what);
    return FU_ERR_PARSE;
  }
  uint32_t n = c->s[1]->u.list.n;
  bool *flags = fu_arena_alloc(b->m->arena, (n ? n : 1) * sizeof *flags);
  if (!flags) return nomem(b);
  for (uint32_t i = 0; i < n; i++)
    if ((st = eval_bool(b, c->s[1]->u.list.items[i], "is_broadcast_dim", c->what, &flags[i])) != FU_OK) return st;
  fu_op *op = new_op(b, FU_OP_BROADCAST, &c->x, 1, 1, c->call->loc);
  if (!op) return nomem(b);
  op->u.broadcast.is_broadcast = flags;
  op->u.broadcast.n = n;
  return finish_op(b, op, res);
}

/* expand(arg, shape): -1 keeps the operand's extent. */
static fu_status build_expand(builder *b, op_call *c, result *res) {
  fu_status st;
  fu_extent *shape;
  uint32_t rank;
  if ((st = eval_shape(b, c->s[1], "shape", c->what, &shape, &rank)) != FU_OK) return st;
  if (rank != (uint32_t)c->x->type.rank) {
    fu_error(b->diag, c->s[1]->loc, "'shape' of '%s' has %u entries but the operand has rank %d", c->what, rank,
             c->x->type.rank);
    return FU_ERR_VERIFY;
  }
  for (uint32_t i = 0; i < rank; i++) {
    fu_extent xe = fu_py_symtab_canon(&b->syms, c->x->type.dims[i]);
    if (fu_extent_is_const(shape[i]) && shape[i].value == -1)
      shape[i] = xe;
    else if (!fu_extent_is_one(xe))
      fu_py_symtab_unify(&b->syms, xe, shape[i]);
  }
  fu_op *op = new_op(b, FU_OP_EXPAND, &c->x, 1, 1, c->call->loc);
  if (!op) return nomem(b);
  if ((st = state_type(b, op, c->x->type.dtype, shape, (int32_t)rank)) != FU_OK) return st;
  return finish_op(b, op, res);
}

/* Bind the operand's symbols to the sizes in the inputs list, for reshapes
 * that cannot be resolved from the script alone.  True when every symbol of
 * the operand became a constant. */
static bool concretize_from_examples(builder *b, fu_value *x) {
  const fu_py_unit *u = b->unit;
  if (!u->examples) return false;
  bool all = true;
  for (int32_t d = 0; d < x->type.rank; d++) {
    fu_extent e = fu_py_symtab_canon(&b->syms, x->type.dims[d]);
    if (fu_extent_is_const(e)) continue;
    const fu_py_sym *sym = fu_py_symtab_lookup(&b->syms, e);
    if (!sym || sym->origin_input < 0 || (uint32_t)sym->origin_input >= u->n_examples) {
      all = false;
      continue;
    }
    const fu_py_example_spec *ex = &u->examples[sym->origin_input];
    if (ex->is_scalar || ex->rank <= sym->origin_dim) {
      all = false;
      continue;
    }
    fu_extent c = {ex->shape[sym->origin_dim], NULL};
    if (!fu_py_symtab_unify(&b->syms, e, c)) all = false;
  }
  fu_py_symtab_canon_type(&b->syms, &x->type);
  return all;
}

static bool has_zero(fu_py_symtab *syms, const fu_extent *dims, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    fu_extent e = fu_py_symtab_canon(syms, dims[i]);
    if (fu_extent_is_const(e) && e.value == 0) return true;
  }
  return false;
}

/* What solve_reshape found. */
typedef enum solved { SOLVED, OPEN, OPERAND_OVERFLOWS, SHAPE_OVERFLOWS } solved;

/* Work out a reshape's result extents: -1 entries, and symbols of the
 * operand that the new shape must pin down.  OPEN when the symbolic
 * extents leave it open; the products of the constant extents are
 * checked, so a shape beyond 2^63-1 elements is reported, not wrapped. */
static solved solve_reshape(builder *b, fu_value *x, fu_extent *shape, uint32_t rank) {
  /* multisets of symbols: operand minus result, and result minus operand */
  const char *xs[FU_MAX_RANK];
  uint32_t nxs = 0;
  bool used[FU_MAX_RANK] = {false};
  int64_t xc = 1, rc = 1;
  bool xovf = false, rovf = false; /* a product past 2^63-1 (a 0 extent makes it 0) */
  int infer = -1;
  for (int32_t d = 0; d < x->type.rank; d++) {
    fu_extent e = fu_py_symtab_canon(&b->syms, x->type.dims[d]);
    if (!fu_extent_is_const(e))
      xs[nxs++] = e.sym;
    else
      xovf |= __builtin_mul_overflow(xc, e.value, &xc);
  }
  if (xovf && !has_zero(&b->syms, x->type.dims, (uint32_t)x->type.rank)) return OPERAND_OVERFLOWS;
  if (xovf) xc = 0;
  uint32_t extra_result_syms = 0;
  const char *extra = NULL;
  for (uint32_t j = 0; j < rank; j++) {
    fu_extent e = fu_py_symtab_canon(&b->syms, shape[j]);
    shape[j] = e;
    if (fu_extent_is_const(e)) {
      if (e.value == -1)
        infer = (int)j;
      else
        rovf |= __builtin_mul_overflow(rc, e.value, &rc);
      continue;
    }
    uint32_t k = 0;
    while (k < nxs && (used[k] || xs[k] != e.sym)) k++;
    if (k < nxs) {
      used[k] = true;
    } else {
      extra_result_syms++;
      extra = e.sym;
    }
  }
  if (rovf && !has_zero(&b->syms, shape, rank)) return SHAPE_OVERFLOWS;
  if (rovf) rc = 0;
  const char *left = NULL;
  uint32_t n_left = 0;
  for (uint32_t k = 0; k < nxs; k++)
    if (!used[k]) {
      left = xs[k];
      n_left++;
    }
  /* [a, b] -> [a, a]: the element counts agree only if the one symbol
   * left on each side is the same extent */
  if (extra_result_syms == 1 && n_left == 1 && infer < 0 && xc == rc && xc != 0) {
    fu_extent l = {0, left}, r = {0, extra};
    fu_py_symtab_unify(&b->syms, l, r);
    fu_py_symtab_canon_type(&b->syms, &x->type);
    for (uint32_t j = 0; j < rank; j++) shape[j] = fu_py_symtab_canon(&b->syms, shape[j]);
    return SOLVED;
  }
  if (extra_result_syms) return OPEN;
  if (infer >= 0) {
    if (n_left == 0) {
      if (rc == 0 || xc % rc != 0) return OPEN;
      shape[infer].value = xc / rc;
      return SOLVED;
    }
    if (n_left == 1 && xc == rc) {
      shape[infer].sym = left;
      shape[infer].value = 0;
      return SOLVED;
    }
    return OPEN;
  }
  if (n_left == 0) return SOLVED; /* inference checks the element count */
  if (n_left == 1 && xc != 0 && rc % xc == 0) {
    fu_extent s = {0, left}, c = {rc / xc, NULL};
    fu_py_symtab_unify(&b->syms, s, c);
    fu_py_symtab_canon_type(&b->syms, &x->type);
    return SOLVED;
  }
  return OPEN;
}

static void format_extents(builder *b, const fu_extent *dims, int32_t rank, char *buf, size_t cap) {
  size_t n = 0;
  n += (size_t)snprintf(buf + n, cap - n, "[");
  for (int32_t i = 0; i < rank && n < cap; i++) {
    fu_extent e = fu_py_symtab_canon(&b->syms, dims[i]);
    if (fu_extent_is_const(e))
      n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)e.value);
    else
      n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", e.sym);
  }
  if (n < cap) snprintf(buf + n, cap - n, "]");
}

/* reshape(arg, new_shape) and the pre-2023 view/reshape(arg,
 * original_shape, new_shape); original_shape pins the operand's symbols. */
static fu_status build_reshape(builder *b, op_call *c, result *res) {
  fu_status st;
  bool old_order = c->old_order;
  const fu_py_expr *new_e = old_order ? c->s[2] : c->s[1], *orig_e = old_order ? c->s[1] : c->s[2];
  if (orig_e) {
    fu_extent *orig;
    uint32_t n;
    if ((st = eval_shape(b, orig_e, "original_shape", c->what, &orig, &n)) != FU_OK) return st;
    bool ok = n == (uint32_t)c->x->type.rank;
    for (uint32_t i = 0; ok && i < n; i++) {
      if (fu_extent_is_const(orig[i]) && orig[i].value == -1) continue;
      ok = fu_py_symtab_unify(&b->syms, c->x->type.dims[i], orig[i]);
    }
    if (!ok) {
      char have[256];
      format_extents(b, c->x->type.dims, c->x->type.rank, have, sizeof have);
      fu_error(b->diag, orig_e->loc, "'original_shape' of '%s' does not match the operand's shape %s", c->what, have);
      return FU_ERR_VERIFY;
    }
    fu_py_symtab_canon_type(&b->syms, &c->x->type);
  }
  fu_extent *shape;
  uint32_t rank;
  if ((st = eval_shape(b, new_e, "new_shape", c->what, &shape, &rank)) != FU_OK) return st;
  uint32_t n_infer = 0;
  for (uint32_t j = 0; j < rank; j++) n_infer += fu_extent_is_const(shape[j]) && shape[j].value == -1;
  if (n_infer > 1) {
    fu_error(b->diag, new_e->loc, "'new_shape' of '%s' has more than one -1", c->what);
    return FU_ERR_VERIFY;
  }
  fu_extent saved[FU_MAX_RANK];
  memcpy(saved, shape, rank * sizeof *shape);
  solved sv = solve_reshape(b, c->x, shape, rank);
  if (sv == OPEN) {
    memcpy(shape, saved, rank * sizeof *shape);
    sv = concretize_from_examples(b, c->x) ? solve_reshape(b, c->x, shape, rank) : OPEN;
  }
  if (sv == OPERAND_OVERFLOWS || sv == SHAPE_OVERFLOWS) {
    char have[256];
    bool opnd = sv == OPERAND_OVERFLOWS;
    if (opnd)
      format_extents(b, c->x->type.dims, c->x->type.rank, have, sizeof have);
    else
      format_extents(b, saved, (int32_t)rank, have, sizeof have);
    fu_error(b->diag, opnd ? c->s[0]->loc : new_e->loc, "the %s %s of '%s' has more than 2^63-1 elements",
             opnd ? "operand shape" : "'new_shape'", have, c->what);
    return FU_ERR_VERIFY;
  }
  if (sv == OPEN) {
    char have[256];
    format_extents(b, c->x->type.dims, c->x->type.rank, have, sizeof have);
    fu_error(b->diag, new_e->loc,
             "cannot tell the extents of '%s' from operand shape %s: give original_shape, constant input sizes "
             "or an inputs list",
             c->what, have);
    return FU_ERR_UNSUPPORTED;
  }
  fu_op *op = new_op(b, FU_OP_RESHAPE, &c->x, 1, 1, c->call->loc);
  if (!op) return nomem(b);
  if ((st = state_type(b, op, c->x->type.dtype, shape, (int32_t)rank)) != FU_OK) return st;
  return finish_op(b, op, res);
}

/* Whether v[0..n) holds each of 0..rank-1 once. */
static bool is_permutation_of(const int64_t *v, uint32_t n, int32_t rank) {
  bool seen[FU_MAX_RANK] = {false};
  if (n != (uint32_t)rank || rank > FU_MAX_RANK) return false;
  for (uint32_t i = 0; i < n; i++) {
    if (v[i] < 0 || v[i] >= rank || seen[v[i]]) return false;
    seen[v[i]] = true;
  }
  return true;
}

/* An op of `kind` on c->x whose one payload member, an int list at
 * `member` (offsetof in the payload union), is v[0..n): permute and
 * stride_order. */
static fu_status finish_list_op(builder *b, op_call *c, fu_op_kind kind, size_t member, const int64_t *v, uint32_t n,
                                result *res) {
  fu_op *op = new_op(b, kind, &c->x, 1, 1, c->call->loc);
  if (!op) return nomem(b);
  fu_int_list l = fu_int_list_copy(b->m, v, n);
  if (n && !l.v) return nomem(b);
  memcpy((char *)&op->u + member, &l, sizeof l);
  return finish_op(b, op, res);
}

/* permute(arg, dims): negative dims count from the end. */
static fu_status build_permute(builder *b, op_call *c, result *res) {
  fu_status st;
  int64_t *dims;
  uint32_t n;
  if ((st = eval_int_list(b, c->s[1], "dims", c->what, false, &dims, &n)) != FU_OK) return st;
  if ((st = normalize_dims(b, dims, &n, c->x->type.rank, false, c->s[1]->loc, "dims", c->what)) != FU_OK) return st;
  return finish_list_op(b, c, FU_OP_PERMUTE, offsetof(union fu_op_payload, permute.dims), dims, n, res);
}

/* squeeze(arg, dims) and the pre-2023 squeeze(arg, original_shape, dims). */
static fu_status build_squeeze(builder *b, op_call *c, result *res) {
  fu_status st;
  bool old_order = c->old_order;
  const fu_py_expr *dims_e = old_order ? c->s[2] : c->s[1], *orig_e = old_order ? c->s[1] : c->s[3];
  if (!old_order && c->s[2]) {
    bool ignored;
    if ((st = eval_bool(b, c->s[2], "squeeze_expanded", c->what, &ignored)) != FU_OK) return st;
  }
  if (orig_e) {
    int64_t *orig;
    uint32_t n;
    if ((st = eval_int_list(b, orig_e, "original_shape", c->what, false, &orig, &n)) != FU_OK) return st;
    bool ok = n == (uint32_t)c->x->type.rank;
    for (uint32_t i = 0; ok && i < n; i++) {
      fu_extent e = {orig[i], NULL};
      ok = orig[i] == -1 || fu_py_symtab_unify(&b->syms, c->x->type.dims[i], e);
    }
    if (!ok) {
      fu_error(b->diag, orig_e->loc, "'original_shape' of '%s' does not match the operand's shape", c->what);
      return FU_ERR_VERIFY;
    }
  }
  int64_t *dims;
  uint32_t n;
  if ((st = eval_int_list(b, dims_e, "dims", c->what, true, &dims, &n)) != FU_OK) return st;
  if ((st = normalize_dims(b, dims, &n, c->x->type.rank, true, dims_e->loc, "dims", c->what)) != FU_OK) return st;
  /* squeezing a symbolic dim says that it is 1 */
  fu_extent one = {1, NULL};
  for (uint32_t i = 0; i < n; i++) fu_py_symtab_unify(&b->syms, c->x->type.dims[dims[i]], one);
  fu_op *op = new_op(b, FU_OP_SQUEEZE, &c->x, 1, 1, c->call->loc);
  if (!op) return nomem(b);
  op->u.squeeze.dims = fu_int_list_copy(b->m, dims, n);
  if (n && !op->u.squeeze.dims.v) return nomem(b);
  return finish_op(b, op, res);
}

/* slice(arg, start_indices, end_indices, strides): indices are normalized
 * like Python's unless manual_normalization is set. */
static fu_status build_slice(builder *b, op_call *c, result *res) {
  fu_status st;
  int64_t *starts, *ends, *steps;
  uint32_t ns, ne, nt;
  if ((st = eval_int_list(b, c->s[1], "start_indices", c->what, false, &starts, &ns)) != FU_OK) return st;
  if ((st = eval_int_list(b, c->s[2], "end_indices", c->what, false, &ends, &ne)) != FU_OK) return st;
  uint32_t rank = (uint32_t)c->x->type.rank;
  if (c->s[3] && c->s[3]->kind != FU_PY_E_NONE) {
    if ((st = eval_int_list(b, c->s[3], "strides", c->what, false, &steps, &nt)) != FU_OK) return st;
  } else {
    nt = rank;
    steps = scratch_alloc(b, (rank ? rank : 1) * sizeof *steps);
    if (!steps) return nomem(b);
    for (uint32_t i = 0; i < rank; i++) steps[i] = 1;
  }
  bool manual = false;
  if (c->s[4] && (st = eval_bool(b, c->s[4], "manual_normalization", c->what, &manual)) != FU_OK) return st;
  if (ns != rank || ne != rank || nt != rank) {
    fu_error(b->diag, c->call->loc, "'%s' needs one start, end and stride per dim (rank %u)", c->what, rank);
    return FU_ERR_VERIFY;
  }
  if (!manual) { /* Python-style: negative indices count from the end, ends clamp */
    for (uint32_t i = 0; i < rank; i++) {
      fu_extent e = fu_py_symtab_canon(&b->syms, c->x->type.dims[i]);
      int64_t *ix[2] = {&starts[i], &ends[i]};
      for (int k = 0; k < 2; k++) {
        if (!fu_extent_is_const(e)) {
          if (*ix[k] < 0) {
            fu_error(b->diag, c->s[1 + k]->loc, "'%s' has a negative index on the symbolic dim %u", c->what, i);
            return FU_ERR_UNSUPPORTED;
          }
          continue;
        }
        if (*ix[k] < 0) *ix[k] += e.value;
        if (*ix[k] < 0) *ix[k] = 0;
        if (*ix[k] > e.value) *ix[k] = e.value;
      }
      if (ends[i] < starts[i]) ends[i] = starts[i];
    }
  }
  fu_op *op = new_op(b, FU_OP_SLICE, &c->x, 1, 1, c->call->loc);
  if (!op) return nomem(b);
  op->u.slice.starts = fu_int_list_copy(b->m, starts, rank);
  op->u.slice.ends = fu_int_list_copy(b->m, ends, rank);
  op->u.slice.steps = fu_int_list_copy(b->m, steps, rank);
  if (rank && (!op->u.slice.starts.v || !op->u.slice.ends.v || !op->u.slice.steps.v)) return nomem(b);
  return finish_op(b, op, res);
}

/* cat(tensors, dim): every dim but `dim` is shared by the operands. */
static fu_status build_cat(builder *b, op_call *c, result *res) {
  fu_status st;
  if (c->s[0]->kind != FU_PY_E_LIST && c->s[0]->kind != FU_PY_E_TUPLE) {
    fu_error(b->diag, c->s[0]->loc, "expected a list of tensors for '%s'", c->what);
    return FU_ERR_PARSE;
  }
  uint32_t n = c->s[0]->u.list.n;
  if (n == 0) {
    fu_error(b->diag, c->s[0]->loc, "'%s' needs at least one tensor", c->what);
    return FU_ERR_VERIFY;
  }
  fu_value **v = scratch_alloc(b, n * sizeof *v);
  if (!v) return nomem(b);
  for (uint32_t i = 0; i < n; i++)
    if ((st = eval_tensor(b, c->s[0]->u.list.items[i], c->what, &v[i])) != FU_OK) return st;
  int64_t dim = 0;
  if (c->s[1] && (st = eval_int(b, c->s[1], "dim", c->what, &dim)) != FU_OK) return st;
  if (c->s[2]) {
    bool ignored;
    if ((st = eval_bool(b, c->s[2], "manual_padding", c->what, &ignored)) != FU_OK) return st;
  }
  int32_t rank = v[0]->type.rank;
  uint32_t one = 1;
  if ((st = normalize_dims(b, &dim, &one, rank, false, arg_loc_expr(c->s[1], c->call)->loc, "dim", c->what)) != FU_OK)
    return st;
  /* every dim but the cat dim is shared */
  bool same_rank = true;
  for (uint32_t i = 1; i < n; i++) same_rank &= v[i]->type.rank == rank;
  if (same_rank)
    for (int32_t d = 0; d < rank; d++) {
      if (d == dim) continue;
      for (uint32_t i = 1; i < n; i++) fu_py_symtab_unify(&b->syms, v[0]->type.dims[d], v[i]->type.dims[d]);
    }
  /* a symbolic extent along the cat dim takes the inputs list's size */
  for (uint32_t i = 0; i < n; i++)
    if (dim < v[i]->type.rank && !fu_extent_is_const(fu_py_symtab_canon(&b->syms, v[i]->type.dims[dim])))
      concretize_from_examples(b, v[i]);
  fu_op *op = new_op(b, FU_OP_CAT, v, n, 1, c->call->loc);
  if (!op) return nomem(b);
  op->u.cat.dim = dim;
  return finish_op(b, op, res);
}

static fu_value *zero_literal(builder *b, fu_dtype like) {
  if (fu_dtype_is_float(like)) return fu_literal_f(b->f, FU_DT_F64, 0.0);
  if (fu_dtype_is_int(like)) return fu_literal_i(b->f, FU_DT_I64, 0);
  return fu_literal_b(b->f, false);
}

/* pad(arg, pad_widths, value): no value pads with zero of the tensor's
 * category, as nvFuser does. */
static fu_status build_pad(builder *b, op_call *c, result *res) {
  fu_status st;
  fu_value *v[2] = {c->x, NULL};
  int64_t *widths;
  uint32_t n;
  if ((st = eval_int_list(b, c->s[1], "pad_widths", c->what, false, &widths, &n)) != FU_OK) return st;
  if (c->s[2] && c->s[2]->kind != FU_PY_E_NONE) {
    if ((st = eval_operand(b, c->s[2], c->what, &v[1])) != FU_OK) return st;
  } else if (!(v[1] = zero_literal(b, v[0]->type.dtype))) {
    return nomem(b);
  }
  fu_op *op = new_op(b, FU_OP_PAD, v, 2, 1, c->call->loc);
  if (!op) return nomem(b);
  op->u.pad.widths = fu_int_list_copy(b->m, widths, n);
  if (n && !op->u.pad.widths.v) return nomem(b);
  return finish_op(b, op, res);
}

/* full(shape, fill_value, dtype). */
static fu_status build_full(builder *b, op_call *c, result *res) {
  fu_status st;
  fu_extent *shape;
  uint32_t rank;
  if ((st = eval_shape(b, c->s[0], "shape", c->what, &shape, &rank)) != FU_OK) return st;
  for (uint32_t i = 0; i < rank; i++)
    if (fu_extent_is_const(shape[i]) && shape[i].value < 0) {
      fu_error(b->diag, c->s[0]->loc, "'shape' of '%s' must not contain -1", c->what);
      return FU_ERR_VERIFY;
    }
  fu_value *fill;
  fu_dtype dt;
  if ((st = eval_operand(b, c->s[1], c->what, &fill)) != FU_OK) return st;
  if ((st = eval_dtype(b, c->s[2], c->what, false, &dt)) != FU_OK) return st;
  fu_op *op = new_op(b, FU_OP_FULL, &fill, 1, 1, c->call->loc);
  if (!op) return nomem(b);
  if ((st = state_type(b, op, dt, shape, (int32_t)rank)) != FU_OK) return st;
  return finish_op(b, op, res);
}

/* iota(length, start, step, dtype): start and step default to 0 and 1. */
static fu_status build_iota(builder *b, op_call *c, result *res) {
  fu_status st;
  fu_extent len;
  if ((st = eval_extent(b, c->s[0], "length", c->what, &len)) != FU_OK) return st;
  if (fu_extent_is_const(len) && len.value < 0) {
    fu_error(b->diag, c->s[0]->loc, "'length' of '%s' must not be negative", c->what);
    return FU_ERR_VERIFY;
  }
  fu_dtype dt = FU_DT_I64;
  if (c->s[3] && (st = eval_dtype(b, c->s[3], c->what, false, &dt)) != FU_OK) return st;
  fu_value *v[2];
  bool is_float = fu_dtype_is_float(dt);
  for (int i = 0; i < 2; i++) {
    const fu_py_expr *e = c->s[1 + i];
    if (e && e->kind != FU_PY_E_NONE) {
      if ((st = eval_operand(b, e, c->what, &v[i])) != FU_OK) return st;
    } else {
      v[i] = is_float ? fu_literal_f(b->f, FU_DT_F64, (double)i) : fu_literal_i(b->f, FU_DT_I64, i);
      if (!v[i]) return nomem(b);
    }
  }
  fu_op *op = new_op(b, FU_OP_IOTA, v, 2, 1, c->call->loc);
  if (!op) return nomem(b);
  if ((st = state_type(b, op, dt, &len, 1)) != FU_OK) return st;
  return finish_op(b, op, res);
}

/* fd.ops.size / shape / at and the tensor methods T.size(d) and
 * T.shape() (`self` is T, the arguments are the rest): frontend-only, they
 * name extents. */
static fu_status build_size_query(builder *b, const char *opname, const fu_py_expr *call, const fu_py_expr *self,
                                  const char *what, result *res) {
  memset(res, 0, sizeof *res);
  res->n = 1;
  const fu_py_expr *s[MAX_PARAMS];
  fu_status st;
  if (strcmp(opname, "at") == 0) {
    static const char *const params[] = {"!arg|vector", "!index", NULL};
    if ((st = bind_args(b, call, what, params, s)) != FU_OK) return st;
    fu_extent *dims;
    uint32_t n;
    int64_t index;
    if ((st = eval_shape(b, s[0], "arg", what, &dims, &n)) != FU_OK) return st;
    if ((st = eval_int(b, s[1], "index", what, &index)) != FU_OK) return st;
    if (index < 0) index += n;
    if (index < 0 || index >= (int64_t)n) {
      fu_error(b->diag, s[1]->loc, "'index' of '%s' is out of range", what);
      return FU_ERR_VERIFY;
    }
    res->b[0].kind = B_EXTENT;
    res->b[0].extent = dims[index];
    return FU_OK;
  }
  bool is_size = strcmp(opname, "size") == 0;
  static const char *const size_params[] = {"!arg|input", "!dim|dims|index", NULL};
  static const char *const shape_params[] = {"!arg|input", NULL};
  const char *const *params = is_size ? size_params : shape_params;
  if (self) {
    s[0] = self;
    st = bind_args(b, call, what, params + 1, s + 1);
  } else {
    st = bind_args(b, call, what, params, s);
  }
  if (st != FU_OK) return st;
  fu_value *x;
  if ((st = eval_tensor(b, s[0], what, &x)) != FU_OK) return st;
  if (is_size) {
    int64_t d;
    uint32_t one = 1;
    if ((st = eval_int(b, s[1], "dim", what, &d)) != FU_OK) return st;
    if ((st = normalize_dims(b, &d, &one, x->type.rank, false, s[1]->loc, "dim", what)) != FU_OK) return st;
    res->b[0].kind = B_EXTENT;
    res->b[0].extent = x->type.dims[d];
    return FU_OK;
  }
  res->b[0].kind = B_VECTOR;
  res->b[0].n_dims = (uint32_t)x->type.rank;
  res->b[0].dims = scratch_alloc(b, (x->type.rank > 0 ? (size_t)x->type.rank : 1) * sizeof *res->b[0].dims);
  if (!res->b[0].dims) return nomem(b);
  for (int32_t i = 0; i < x->type.rank; i++) res->b[0].dims[i] = x->type.dims[i];
  return FU_OK;
}

/* ---- ops nvFuser defines as compositions ------------------------------ */

/* One op of a composition: built, typed and given a temporary name. */
static fu_status compose(builder *b, fu_op_kind k, fu_value **v, uint32_t n, fu_loc loc, fu_value **out) {
  unify_pointwise(b, v, n);
  fu_op *op = new_op(b, k, v, n, 1, loc);
  result res;
  fu_status st = single_value(b, op, &res);
  if (st == FU_OK) st = name_value(b, op->results[0], NULL);
  *out = st == FU_OK ? op->results[0] : NULL;
  return st;
}

/* The last op of a composition: its result is the call's. */
static fu_status compose_last(builder *b, fu_op_kind k, fu_value **v, uint32_t n, fu_loc loc, result *res) {
  unify_pointwise(b, v, n);
  return single_value(b, new_op(b, k, v, n, 1, loc), res);
}

/* truediv(a, b): nvFuser's div after promoting two integer (or bool)
 * operands to Float. */
static fu_status build_truediv(builder *b, op_call *c, result *res) {
  fu_status st;
  fu_value *v[2];
  for (uint32_t i = 0; i < 2; i++)
    if ((st = eval_operand(b, c->s[i], c->what, &v[i])) != FU_OK) return st;
  if (!fu_dtype_is_float(v[0]->type.dtype) && !fu_dtype_is_float(v[1]->type.dtype))
    for (uint32_t i = 0; i < 2; i++) {
      fu_op *op = new_op(b, FU_OP_CAST, &v[i], 1, 1, c->call->loc);
      if (!op) return nomem(b);
      if ((st = state_type(b, op, FU_DT_F32, v[i]->type.dims, v[i]->type.rank)) != FU_OK) return st;
      result r;
      if ((st = finish_op(b, op, &r)) != FU_OK || (st = name_value(b, op->results[0], NULL)) != FU_OK) return st;
      v[i] = op->results[0];
    }
  return compose_last(b, FU_OP_DIV, v, 2, c->call->loc, res);
}

/* addcmul(input, tensor1, tensor2, value) = input + value * (tensor1 *
 * tensor2), in nvFuser's order. */
static fu_status build_addcmul(builder *b, op_call *c, result *res) {
  fu_status st;
  fu_value *v[4], *t, *u;
  for (uint32_t i = 0; i < 4; i++)
    if ((st = eval_operand(b, c->s[i], c->what, &v[i])) != FU_OK) return st;
  fu_value *m1[2] = {v[1], v[2]};
  if ((st = compose(b, FU_OP_MUL, m1, 2, c->call->loc, &t)) != FU_OK) return st;
  fu_value *m2[2] = {v[3], t};
  if ((st = compose(b, FU_OP_MUL, m2, 2, c->call->loc, &u)) != FU_OK) return st;
  fu_value *a[2] = {v[0], u};
  return compose_last(b, FU_OP_ADD, a, 2, c->call->loc, res);
}

/* threshold(x, threshold, value) = where(x <= threshold, value, x). */
static fu_status build_threshold(builder *b, op_call *c, result *res) {
  fu_status st;
  fu_value *v[3], *le;
  for (uint32_t i = 0; i < 3; i++)
    if ((st = eval_operand(b, c->s[i], c->what, &v[i])) != FU_OK) return st;
  fu_value *cmp[2] = {v[0], v[1]};
  if ((st = compose(b, FU_OP_LE, cmp, 2, c->call->loc, &le)) != FU_OK) return st;
  fu_value *w[3] = {le, v[2], v[0]};
  return compose_last(b, FU_OP_WHERE, w, 3, c->call->loc, res);
}

/* One op of a composition with its result type stated (full, cast; or
 * FU_DT_NONE: inferred, a reduction's payload already set): typed and
 * inferred; a temporary name when `temp` (a result the call returns is
 * named by its assignment). */
static fu_status compose_typed(builder *b, fu_op *op, fu_dtype dt, const fu_extent *dims, int32_t rank, bool temp,
                               fu_value **out) {
  result r;
  fu_status st = op ? FU_OK : nomem(b);
  if (st == FU_OK && dt != FU_DT_NONE) st = state_type(b, op, dt, dims, rank);
  if (st == FU_OK) st = finish_op(b, op, &r);
  if (st == FU_OK && temp) st = name_value(b, op->results[0], NULL);
  *out = st == FU_OK ? op->results[0] : NULL;
  return st;
}

/* welford(x, dims) = (avg, var_sum, n), nvFuser's Welford reduction over
 * dims (not kept): var_mean with correction 0 (one Welford reduction in
 * the kernel), var_sum = var * n (the M2 it divided), and n the count of
 * reduced elements as i64 of the reduced shape: a constant where the
 * reduced extents are, else a sum of ones. */
static fu_status build_welford(builder *b, op_call *c, result *res) {
  fu_status st;
  int64_t *axes;
  uint32_t n_axes;
  fu_loc loc = c->call->loc;
  if ((st = eval_axes(b, c, &axes, &n_axes)) != FU_OK) return st;
  fu_op *op = new_op(b, FU_OP_VAR_MEAN, &c->x, 1, 2, loc);
  if (!op) return nomem(b);
  op->u.variance.axes = fu_int_list_copy(b->m, axes, n_axes);
  if (n_axes && !op->u.variance.axes.v) return nomem(b);
  op->u.variance.correction = 0;
  result vm;
  if ((st = finish_op(b, op, &vm)) != FU_OK) return st;
  fu_value *var = op->results[0], *mean = op->results[1], *n, *nf, *var_sum;
  if ((st = name_value(b, var, NULL)) != FU_OK) return st;
  int64_t count = 1;
  bool known = true;
  for (uint32_t i = 0; i < n_axes; i++) {
    fu_extent e = fu_py_symtab_canon(&b->syms, c->x->type.dims[axes[i]]);
    if (!fu_extent_is_const(e) || __builtin_mul_overflow(count, e.value, &count)) known = false;
  }
  if (known) {
    fu_value *k = fu_literal_i(b->f, FU_DT_I64, count);
    if (!k) return nomem(b);
    st = compose_typed(b, new_op(b, FU_OP_FULL, &k, 1, 1, loc), FU_DT_I64, var->type.dims, var->type.rank, false, &n);
  } else {
    fu_value *one = fu_literal_i(b->f, FU_DT_I64, 1), *ones;
    if (!one) return nomem(b);
    if ((st = compose_typed(b, new_op(b, FU_OP_FULL, &one, 1, 1, loc), FU_DT_I64, c->x->type.dims, c->x->type.rank,
                            true, &ones)) != FU_OK)
      return st;
    fu_op *sum = new_op(b, FU_OP_SUM, &ones, 1, 1, loc);
    if (!sum) return nomem(b);
    sum->u.reduce.axes = fu_int_list_copy(b->m, axes, n_axes);
    if (n_axes && !sum->u.reduce.axes.v) return nomem(b);
    st = compose_typed(b, sum, FU_DT_NONE, NULL, 0, false, &n);
  }
  if (st != FU_OK) return st;
  if ((st = compose_typed(b, new_op(b, FU_OP_CAST, &n, 1, 1, loc), var->type.dtype, var->type.dims, var->type.rank,
                          true, &nf)) != FU_OK)
    return st;
  fu_value *m[2] = {var, nf};
  if ((st = compose_typed(b, new_op(b, FU_OP_MUL, m, 2, 1, loc), FU_DT_NONE, NULL, 0, false, &var_sum)) != FU_OK)
    return st;
  fu_value *outs[3] = {mean, var_sum, n};
  memset(res, 0, sizeof *res);
  res->n = 3;
  for (uint32_t i = 0; i < 3; i++) {
    res->b[i].kind = B_VALUE;
    res->b[i].value = outs[i];
  }
  return FU_OK;
}

/* iota along dim `d` of x's shape: iota(extent d) broadcast in that dim. */
static fu_status iota_along(builder *b, const fu_value *x, int32_t d, fu_loc loc, fu_value **out) {
  fu_value *v[2] = {fu_literal_i(b->f, FU_DT_I64, 0), fu_literal_i(b->f, FU_DT_I64, 1)};
  if (!v[0] || !v[1]) return nomem(b);
  fu_op *op = new_op(b, FU_OP_IOTA, v, 2, 1, loc);
  if (!op) return nomem(b);
  result r;
  fu_status st = state_type(b, op, FU_DT_I64, &x->type.dims[d], 1);
  if (st != FU_OK || (st = finish_op(b, op, &r)) != FU_OK || (st = name_value(b, op->results[0], NULL)) != FU_OK)
    return st;
  fu_value *line = op->results[0];
  op = new_op(b, FU_OP_BROADCAST_IN_DIM, &line, 1, 1, loc);
  if (!op) return nomem(b);
  int64_t dim = d;
  op->u.broadcast_in_dim.broadcast_dims = fu_int_list_copy(b->m, &dim, 1);
  if (!op->u.broadcast_in_dim.broadcast_dims.v) return nomem(b);
  if ((st = state_type(b, op, FU_DT_I64, x->type.dims, x->type.rank)) != FU_OK ||
      (st = finish_op(b, op, &r)) != FU_OK || (st = name_value(b, op->results[0], NULL)) != FU_OK)
    return st;
  *out = op->results[0];
  return FU_OK;
}

/* triu(x, diagonal=0), torch.triu: x where column - row >= diagonal over
 * the last two dims, else zero; pointwise ops over two iotas, so it fuses
 * as any elementwise op does. */
static fu_status build_triu(builder *b, op_call *c, result *res) {
  fu_status st;
  fu_loc loc = c->call->loc;
  fu_value *x = c->x, *diag, *row, *col, *dist, *keep;
  int32_t rank = x->type.rank;
  if (rank < 2) {
    fu_error(b->diag, c->s[0]->loc, "'%s' needs a tensor of rank 2 or more, not rank %d", c->what, rank);
    return FU_ERR_VERIFY;
  }
  if (c->s[1] && c->s[1]->kind != FU_PY_E_NONE) {
    if ((st = eval_operand(b, c->s[1], c->what, &diag)) != FU_OK) return st;
    if (!fu_type_is_scalar(&diag->type) || !fu_dtype_is_int(diag->type.dtype)) {
      fu_error(b->diag, c->s[1]->loc, "'diagonal' of '%s' must be an integer scalar", c->what);
      return FU_ERR_VERIFY;
    }
  } else if (!(diag = fu_literal_i(b->f, FU_DT_I64, 0))) {
    return nomem(b);
  }
  if ((st = iota_along(b, x, rank - 2, loc, &row)) != FU_OK || (st = iota_along(b, x, rank - 1, loc, &col)) != FU_OK)
    return st;
  fu_value *sub[2] = {col, row};
  if ((st = compose(b, FU_OP_SUB, sub, 2, loc, &dist)) != FU_OK) return st;
  fu_value *ge[2] = {dist, diag};
  if ((st = compose(b, FU_OP_GE, ge, 2, loc, &keep)) != FU_OK) return st;
  fu_dtype dt = x->type.dtype;
  fu_value *zero = fu_dtype_is_float(dt) ? fu_literal_f(b->f, FU_DT_F64, 0.0)
                   : fu_dtype_is_bool(dt) ? fu_literal_b(b->f, false)
                                          : fu_literal_i(b->f, FU_DT_I64, 0);
  if (!zero) return nomem(b);
  fu_value *w[3] = {keep, x, zero};
  return compose_last(b, FU_OP_WHERE, w, 3, loc, res);
}

/* stride_order(arg, stride_order): the values, allocated in that stride
 * order where the result is stored (an output is written in it). */
static fu_status build_stride_order(builder *b, op_call *c, result *res) {
  fu_status st;
  int64_t *order;
  uint32_t n;
  if ((st = eval_int_list(b, c->s[1], "stride_order", c->what, false, &order, &n)) != FU_OK) return st;
  int32_t rank = c->x->type.rank;
  if (!is_permutation_of(order, n, rank)) {
    fu_error(b->diag, c->s[1]->loc, "'stride_order' of '%s' must be a permutation of 0..%d", c->what,
             rank > 0 ? rank - 1 : 0);
    return FU_ERR_VERIFY;
  }
  return finish_list_op(b, c, FU_OP_STRIDE_ORDER, offsetof(union fu_op_payload, stride_order.order), order, n, res);
}

/* The indexing ops (ir.h, "indexing ops"): index_select, gather and
 * take_along_axis(arg, index, dim), embedding_fwd(input, weight, ...).
 * take_along_axis's lookup and index share their extents outside dim
 * (unless one is a broadcast 1); embedding_fwd's options change only its
 * backward, except max_norm, which renormalizes the weight in place and is
 * refused. */
static fu_status build_index(builder *b, op_call *c, result *res) {
  fu_status st;
  fu_value *v[2];
  if ((st = eval_tensor(b, c->s[0], c->what, &v[0])) != FU_OK) return st;
  if ((st = eval_tensor(b, c->s[1], c->what, &v[1])) != FU_OK) return st;
  int64_t dim = 0;
  if (c->kind == FU_OP_EMBEDDING_FWD) {
    if (c->s[3] && c->s[3]->kind != FU_PY_E_NONE) {
      fu_error(b->diag, c->s[3]->loc, "unsupported argument 'max_norm' of '%s' (it renormalizes the weight in place)",
               c->what);
      return FU_ERR_UNSUPPORTED;
    }
  } else {
    if ((st = eval_int(b, c->s[2], "dim", c->what, &dim)) != FU_OK) return st;
    uint32_t one = 1;
    if ((st = normalize_dims(b, &dim, &one, v[0]->type.rank, false, arg_loc_expr(c->s[2], c->call)->loc, "dim",
                             c->what)) != FU_OK)
      return st;
  }
  if (c->kind == FU_OP_TAKE_ALONG_AXIS && v[0]->type.rank == v[1]->type.rank)
    for (int32_t j = 0; j < v[0]->type.rank; j++) {
      fu_extent xe = fu_py_symtab_canon(&b->syms, v[0]->type.dims[j]);
      fu_extent ie = fu_py_symtab_canon(&b->syms, v[1]->type.dims[j]);
      if (j != dim && !fu_extent_is_one(xe) && !fu_extent_is_one(ie)) fu_py_symtab_unify(&b->syms, xe, ie);
    }
  fu_op *op = new_op(b, c->kind, v, 2, 1, c->call->loc);
  if (!op) return nomem(b);
  op->u.index.dim = dim;
  return finish_op(b, op, res);
}

/* select(arg, index, dim), torch.select: arg at `index` along dim, which
 * the result drops: index_select with a one-element index tensor (a
 * `full` of the scalar index), then a squeeze.  A negative constant index
 * counts from the end of a constant extent; an index out of range is an
 * error of the run, as for index_select. */
static fu_status build_select(builder *b, op_call *c, result *res) {
  fu_status st;
  fu_loc loc = c->call->loc;
  fu_value *x = c->x, *idx, *ixt, *picked;
  int64_t dim;
  uint32_t one = 1;
  if ((st = eval_int(b, c->s[2], "dim", c->what, &dim)) != FU_OK) return st;
  if ((st = normalize_dims(b, &dim, &one, x->type.rank, false, c->s[2]->loc, "dim", c->what)) != FU_OK) return st;
  if ((st = eval_operand(b, c->s[1], c->what, &idx)) != FU_OK) return st;
  if (!fu_type_is_scalar(&idx->type) || !fu_dtype_is_int(idx->type.dtype)) {
    fu_error(b->diag, c->s[1]->loc, "'index' of '%s' must be an integer scalar", c->what);
    return FU_ERR_VERIFY;
  }
  fu_extent e = fu_py_symtab_canon(&b->syms, x->type.dims[dim]);
  if (idx->is_literal && idx->literal.i < 0 && fu_extent_is_const(e) &&
      !(idx = fu_literal_i(b->f, FU_DT_I64, idx->literal.i + e.value)))
    return nomem(b);
  fu_extent len1 = {1, NULL};
  if ((st = compose_typed(b, new_op(b, FU_OP_FULL, &idx, 1, 1, loc), FU_DT_I64, &len1, 1, true, &ixt)) != FU_OK)
    return st;
  fu_value *v[2] = {x, ixt};
  fu_op *op = new_op(b, FU_OP_INDEX_SELECT, v, 2, 1, loc);
  if (!op) return nomem(b);
  op->u.index.dim = dim;
  if ((st = compose_typed(b, op, FU_DT_NONE, NULL, 0, true, &picked)) != FU_OK) return st;
  fu_op *sq = new_op(b, FU_OP_SQUEEZE, &picked, 1, 1, loc);
  if (!sq) return nomem(b);
  sq->u.squeeze.dims = fu_int_list_copy(b->m, &dim, 1);
  if (!sq->u.squeeze.dims.v) return nomem(b);
  return finish_op(b, sq, res);
}

/* Two extents a product needs equal (neither a broadcast 1). */
static void unify_pair(builder *b, fu_extent x, fu_extent y) {
  x = fu_py_symtab_canon(&b->syms, x);
  y = fu_py_symtab_canon(&b->syms, y);
  if (!fu_extent_is_one(x) && !fu_extent_is_one(y)) fu_py_symtab_unify(&b->syms, x, y);
}

/* The extents a matmul or linear contracts, broadcasts or adds must be
 * equal: as for pointwise operands, symbols of the definition's tensors
 * are unified where the shape rule (lib/ir/infer.c) pairs them. */
static void unify_matmul(builder *b, fu_op_kind k, fu_value *const *v, uint32_t n) {
  const fu_type *x = &v[0]->type, *w = &v[1]->type;
  if (x->rank < 1 || w->rank < 1) return;
  if (k == FU_OP_LINEAR) {
    unify_pair(b, x->dims[x->rank - 1], w->dims[w->rank - 1]);
    if (n == 3 && v[2]->type.rank == 1 && w->rank == 2) unify_pair(b, v[2]->type.dims[0], w->dims[0]);
    return;
  }
  unify_pair(b, x->dims[x->rank - 1], w->dims[w->rank >= 2 ? w->rank - 2 : 0]);
  for (int32_t i = 3; i <= x->rank && i <= w->rank; i++) unify_pair(b, x->dims[x->rank - i], w->dims[w->rank - i]);
}

/* matmul(a, b) and linear(input, weight, bias=None): tensors only; a bias
 * of None is no bias. */
static fu_status build_matmul(builder *b, op_call *c, result *res) {
  fu_status st;
  fu_value *v[3];
  uint32_t n = 2;
  for (uint32_t i = 0; i < 2; i++)
    if ((st = eval_tensor(b, c->s[i], c->what, &v[i])) != FU_OK) return st;
  if (c->kind == FU_OP_LINEAR && c->s[2] && c->s[2]->kind != FU_PY_E_NONE) {
    if ((st = eval_tensor(b, c->s[2], c->what, &v[2])) != FU_OK) return st;
    n = 3;
  }
  unify_matmul(b, c->kind, v, n);
  return single_value(b, new_op(b, c->kind, v, n, 1, c->call->loc), res);
}

/* The seed and offset operands of a random op: rng_seed and rng_offset
 * (c->s[is] and c->s[is + 1]) when given, both or neither.  Without them
 * nvFuser draws from PyTorch's generator; fuser has no generator state, so
 * the op takes seed 0 and the offset of its place among such ops, with a
 * warning (docs/frontend.md). */
static fu_status rng_seed_offset(builder *b, op_call *c, uint32_t is, fu_value **v) {
  const fu_py_expr *es = c->s[is], *eo = c->s[is + 1];
  bool has_s = es && es->kind != FU_PY_E_NONE, has_o = eo && eo->kind != FU_PY_E_NONE;
  fu_status st;
  if (has_s != has_o) {
    fu_error(b->diag, (has_s ? es : eo)->loc, "'%s' needs both rng_seed and rng_offset, or neither", c->what);
    return FU_ERR_VERIFY;
  }
  if (has_s) {
    if ((st = eval_operand(b, es, c->what, &v[0])) != FU_OK) return st;
    return eval_operand(b, eo, c->what, &v[1]);
  }
  uint32_t k = b->n_stateful_rng++;
  fu_warning(b->diag, c->call->loc,
             "'%s' without rng_seed and rng_offset: fuser has no generator state, so it takes seed 0 and offset %u",
             c->what, k);
  v[0] = fu_literal_i(b->f, FU_DT_I64, 0);
  v[1] = fu_literal_i(b->f, FU_DT_I64, k);
  return v[0] && v[1] ? FU_OK : nomem(b);
}

/* uniform(minval, maxval, shape, rng_seed=, rng_offset=, dtype=) and
 * normal(mean, std, shape, ...): dtype defaults to Float. */
static fu_status build_rng(builder *b, op_call *c, result *res) {
  fu_status st;
  fu_extent *shape;
  uint32_t rank;
  fu_value *v[4];
  fu_dtype dt = FU_DT_F32;
  for (uint32_t i = 0; i < 2; i++)
    if ((st = eval_operand(b, c->s[i], c->what, &v[i])) != FU_OK) return st;
  if ((st = eval_shape(b, c->s[2], "shape", c->what, &shape, &rank)) != FU_OK) return st;
  if ((st = rng_seed_offset(b, c, 3, &v[2])) != FU_OK) return st;
  if (c->s[5] && c->s[5]->kind != FU_PY_E_NONE && (st = eval_dtype(b, c->s[5], c->what, false, &dt)) != FU_OK)
    return st;
  fu_op *op = new_op(b, c->kind, v, 4, 1, c->call->loc);
  if (!op) return nomem(b);
  if ((st = state_type(b, op, dt, shape, (int32_t)rank)) != FU_OK) return st;
  return finish_op(b, op, res);
}

/* rand_like(arg, rng_seed=, rng_offset=) and randn_like: uniform in [0, 1)
 * and the standard normal, of arg's shape and dtype. */
static fu_status build_rng_like(builder *b, op_call *c, result *res) {
  fu_status st;
  fu_value *v[4];
  if (!fu_type_is_tensor(&c->x->type) || !fu_dtype_is_float(c->x->type.dtype)) {
    fu_error(b->diag, c->s[0]->loc, "'%s' takes a floating-point tensor", c->what);
    return FU_ERR_VERIFY;
  }
  v[0] = fu_literal_f(b->f, FU_DT_F64, 0.0);
  v[1] = fu_literal_f(b->f, FU_DT_F64, 1.0);
  if (!v[0] || !v[1]) return nomem(b);
  if ((st = rng_seed_offset(b, c, 1, &v[2])) != FU_OK) return st;
  fu_op *op = new_op(b, c->kind, v, 4, 1, c->call->loc);
  if (!op) return nomem(b);
  if ((st = state_type(b, op, c->x->type.dtype, c->x->type.dims, c->x->type.rank)) != FU_OK) return st;
  return finish_op(b, op, res);
}

/* The frontend ops: an nvFuser name and its IR op kind, or NULL and an
 * IR op class (every op of the class in ops.def, under its own name); the
 * parameters ("!" for
 * required, "|" between aliases), the parameters of the pre-2023 three-
 * argument form (or NULL), whether the first argument is evaluated for the
 * builder, and the builder.  A frontend op is one row (and, for a new
 * class, its builder); the first row that matches wins. */
enum first_arg { FIRST_NONE, FIRST_OPERAND, FIRST_TENSOR };
typedef struct frontend_op {
  const char *name;
  int op; /* named rows: the fu_op_kind; class rows: the fu_op_class */
  const char *const *params;
  const char *const *legacy;
  enum first_arg first;
  build_fn fn;
} frontend_op;

#define PARAMS(...) ((const char *const[]){__VA_ARGS__, NULL})
static const char *const reshape_legacy[] = {"!arg|input|arg1", "original_shape", "!new_shape|shape", NULL};
static const frontend_op frontend_ops[] = {
    {"view", FU_OP_RESHAPE, reshape_legacy, reshape_legacy, FIRST_TENSOR, build_reshape},
    {"where", FU_OP_WHERE, PARAMS("!pred|cond|condition|arg1", "!arg2|x|input|a", "!arg3|y|other|b"), NULL,
     FIRST_NONE, build_nary},
    {"clamp", FU_OP_CLAMP, PARAMS("!arg|arg1|input|x", "!min|arg2|lo", "!max|arg3|hi"), NULL, FIRST_NONE, build_nary},
    {"lerp", FU_OP_LERP, PARAMS("!start|arg1|input", "!end|arg2", "!weight|arg3"), NULL, FIRST_NONE, build_nary},
    {"mod", FU_OP_FMOD, PARAMS("!arg1|lhs|input|arg|x", "!arg2|rhs|other|y"), NULL, FIRST_NONE, build_nary},
    {"truediv", FU_OP_DIV, PARAMS("!arg1|lhs|input|arg|x", "!arg2|rhs|other|y"), NULL, FIRST_NONE, build_truediv},
    {"addcmul", FU_OP_ADD, PARAMS("!arg1|input", "!arg2|tensor1", "!arg3|tensor2", "!arg4|value|alpha"), NULL,
     FIRST_NONE, build_addcmul},
    {"threshold", FU_OP_WHERE, PARAMS("!arg|arg1|input|x", "!threshold|arg2", "!value|arg3"), NULL, FIRST_NONE,
     build_threshold},
    {"segment_set", FU_OP_SET, PARAMS("!arg|input|arg1|x"), NULL, FIRST_OPERAND, build_unary},
    {"real", FU_OP_SET, PARAMS("!arg|input|arg1|x"), NULL, FIRST_OPERAND, build_unary}, /* fuser has no complex */
    {"welford", FU_OP_VAR_MEAN, PARAMS("!arg|input|arg1|x", "!axes|dims"), NULL, FIRST_TENSOR, build_welford},
    {"select", FU_OP_INDEX_SELECT, PARAMS("!arg|input|arg1|x", "!index|arg2", "!dim|arg3"), NULL, FIRST_TENSOR,
     build_select},
    {"triu", FU_OP_WHERE, PARAMS("!arg|input|arg1|x", "diagonal|arg2"), NULL, FIRST_TENSOR, build_triu},
    {"stride_order", FU_OP_STRIDE_ORDER, PARAMS("!arg|input|arg1", "!stride_order|dims"), NULL, FIRST_TENSOR,
     build_stride_order},
    /* random numbers */
    {"rand_like", FU_OP_UNIFORM, PARAMS("!arg|input|arg1|x", "rng_seed", "rng_offset"), NULL, FIRST_TENSOR,
     build_rng_like},
    {"randn_like", FU_OP_NORMAL, PARAMS("!arg|input|arg1|x", "rng_seed", "rng_offset"), NULL, FIRST_TENSOR,
     build_rng_like},
    {NULL, FU_OC_UNARY, PARAMS("!arg|input|arg1|x"), NULL, FIRST_OPERAND, build_unary},
    {NULL, FU_OC_CAST, PARAMS("!arg|input|arg1|x", "!dtype"), NULL, FIRST_OPERAND, build_cast},
    {NULL, FU_OC_BINARY, PARAMS("!arg1|lhs|input|arg|x", "!arg2|rhs|other|y"), NULL, FIRST_NONE, build_nary},
    {NULL, FU_OC_REDUCE, PARAMS("!arg|input|arg1", "axes|dims|axis|dim", "keepdim", "dtype"), NULL, FIRST_TENSOR,
     build_reduce},
    {NULL, FU_OC_VARIANCE, PARAMS("!arg|input|arg1", "axes|dims", "correction", "keepdim", "unbiased"), NULL,
     FIRST_TENSOR, build_variance},
    {NULL, FU_OC_SCAN, PARAMS("!arg|input|arg1|x", "!dim|axis"), NULL, FIRST_TENSOR, build_scan},
    {NULL, FU_OC_BROADCAST_IN_DIM, PARAMS("!arg|input|arg1", "!shape|output_shape", "!broadcast_dims"), NULL,
     FIRST_TENSOR, build_broadcast_in_dim},
    {NULL, FU_OC_BROADCAST, PARAMS("!arg|input|arg1", "!is_broadcast_dim"), NULL, FIRST_TENSOR, build_broadcast},
    {NULL, FU_OC_EXPAND, PARAMS("!arg|input|arg1", "!shape|output_shape"), NULL, FIRST_TENSOR, build_expand},
    {NULL, FU_OC_RESHAPE, PARAMS("!arg|input|arg1", "!new_shape|shape", "original_shape"), reshape_legacy, FIRST_TENSOR,
     build_reshape},
    {NULL, FU_OC_PERMUTE, PARAMS("!arg|input|arg1", "!dims"), NULL, FIRST_TENSOR, build_permute},
    {NULL, FU_OC_SQUEEZE, PARAMS("!arg|input|arg1", "!dims|dim", "squeeze_expanded", "original_shape"),
     PARAMS("!arg|input|arg1", "original_shape", "!dims|dim"), FIRST_TENSOR, build_squeeze},
    {NULL, FU_OC_SLICE, PARAMS("!arg|input|arg1", "!start_indices", "!end_indices", "strides", "manual_normalization"),
     NULL, FIRST_TENSOR, build_slice},
    {NULL, FU_OC_CAT, PARAMS("!tensors|inputs|input", "dim", "manual_padding"), NULL, FIRST_NONE, build_cat},
    {NULL, FU_OC_PAD, PARAMS("!arg|input|arg1", "!pad_widths|widths", "value"), NULL, FIRST_TENSOR, build_pad},
    {NULL, FU_OC_FULL, PARAMS("!shape|size", "!fill_value|arg|value", "!dtype"), NULL, FIRST_NONE, build_full},
    {NULL, FU_OC_IOTA, PARAMS("!length", "start", "step", "dtype"), NULL, FIRST_NONE, build_iota},
    {"linear", FU_OP_LINEAR, PARAMS("!arg1|input|arg|x", "!arg2|weight", "arg3|bias"), NULL, FIRST_NONE,
     build_matmul},
    {NULL, FU_OC_MATMUL, PARAMS("!arg1|input|arg|a|x", "!arg2|other|b|y"), NULL, FIRST_NONE, build_matmul},
    {"embedding_fwd", FU_OP_EMBEDDING_FWD,
     PARAMS("!input|arg1", "!weight|arg2", "padding_idx", "max_norm", "norm_type", "scale_grad_by_freq", "sparse"), NULL,
     FIRST_NONE, build_index},
    {NULL, FU_OC_INDEX, PARAMS("!arg|input|arg1", "!index|arg2", "!dim"), NULL, FIRST_NONE, build_index},
    {NULL, FU_OC_RNG, PARAMS("!minval|mean", "!maxval|std", "!shape", "rng_seed", "rng_offset", "dtype"), NULL,
     FIRST_NONE, build_rng},
};
#undef PARAMS

/* The row for an nvFuser op name: a named row, else its class's row. */
static const frontend_op *find_frontend_op(const char *opname, fu_op_kind *kind) {
  *kind = fu_op_kind_from_name(opname, strlen(opname));
  size_t n = sizeof frontend_ops / sizeof frontend_ops[0];
  for (size_t i = 0; i < n; i++)
    if (frontend_ops[i].name && strcmp(frontend_ops[i].name, opname) == 0) {
      *kind = (fu_op_kind)frontend_ops[i].op;
      return &frontend_ops[i];
    }
  if (*kind == FU_OP_COUNT) return NULL;
  for (size_t i = 0; i < n; i++)
    if (!frontend_ops[i].name && frontend_ops[i].op == (int)fu_op_info_of(*kind)->cls) return &frontend_ops[i];
  return NULL;
}

/* Dispatch an fd.ops call through frontend_ops: bind the arguments to the
 * row's parameters, evaluate the first one if the row asks, and build.
 * size, shape and at read a tensor's sizes rather than make an op. */
static fu_status build_op(builder *b, const char *opname, const fu_py_expr *call, result *res) {
  char what[96];
  op_display(b, opname, what, sizeof what);
  if (strcmp(opname, "size") == 0 || strcmp(opname, "shape") == 0 || strcmp(opname, "at") == 0)
    return build_size_query(b, opname, call, NULL, what, res);
  op_call c = {.call = call, .what = what};
  const frontend_op *row = find_frontend_op(opname, &c.kind);
  if (!row) {
    fu_error(b->diag, call->loc, "unsupported op '%s'", what);
    return FU_ERR_UNSUPPORTED;
  }
  c.old_order = row->legacy && (row->legacy == row->params || call->u.call.n_args == 3);
  fu_status st = bind_args(b, call, what, c.old_order ? row->legacy : row->params, c.s);
  if (st != FU_OK) return st;
  if (row->first == FIRST_TENSOR && (st = eval_tensor(b, c.s[0], what, &c.x)) != FU_OK) return st;
  if (row->first == FIRST_OPERAND && (st = eval_operand(b, c.s[0], what, &c.x)) != FU_OK) return st;
  return row->fn(b, &c, res);
}

/* ---- FusionDefinition methods ------------------------------------------ */

static fu_status flush_outputs(builder *b) {
  if (!b->n_pending) return FU_OK;
  fu_op *op = new_op(b, FU_OP_OUTPUT, b->pending, b->n_pending, 0, b->pending_loc);
  b->n_pending = 0;
  return op ? FU_OK : nomem(b);
}

/* fd.add_output(x): consecutive calls are gathered into one OUTPUT op;
 * fd.add_output(x, alias_input) is an OUTPUT op of its own with the alias
 * (docs/frontend.md): the input must be a tensor input of x's type. */
static fu_status add_output(builder *b, const fu_py_expr *call, const char *what) {
  static const char *const params[] = {"!output|arg", "alias_input", NULL};
  const fu_py_expr *s[MAX_PARAMS];
  fu_status st = bind_args(b, call, what, params, s);
  if (st != FU_OK) return st;
  fu_value *v, *alias = NULL;
  if ((st = eval_operand(b, s[0], what, &v)) != FU_OK) return st;
  if (s[1] && (st = eval_tensor(b, s[1], what, &alias)) != FU_OK) return st;
  if (v->is_literal) {
    fu_error(b->diag, s[0]->loc, "'%s' needs a tensor or a scalar value, not a constant", what);
    return FU_ERR_VERIFY;
  }
  if (alias) {
    if (!alias->def || alias->def->kind != FU_OP_INPUT) {
      fu_error(b->diag, s[1]->loc, "'%s': alias_input '%%%s' is not a fusion input as defined (an expanded input "
               "is an expand of one)", what, alias->name ? alias->name : "?");
      return FU_ERR_VERIFY;
    }
    if (!fu_type_equal(&alias->type, &v->type)) {
      fu_error(b->diag, s[1]->loc, "'%s': alias_input '%%%s' does not have the output's shape and dtype", what,
               alias->name ? alias->name : "?");
      return FU_ERR_VERIFY;
    }
    if ((st = flush_outputs(b)) != FU_OK) return st;
    fu_op *op = new_op(b, FU_OP_OUTPUT, &v, 1, 0, call->loc);
    if (!op) return nomem(b);
    op->u.output.alias = alias;
    return FU_OK;
  }
  if (b->n_pending == b->cap_pending) {
    uint32_t cap = b->cap_pending ? b->cap_pending * 2 : 8;
    fu_value **p = scratch_alloc(b, cap * sizeof *p);
    if (!p) return nomem(b);
    if (b->n_pending) memcpy(p, b->pending, b->n_pending * sizeof *p);
    b->pending = p;
    b->cap_pending = cap;
  }
  if (!b->n_pending) b->pending_loc = call->loc;
  b->pending[b->n_pending++] = v;
  return FU_OK;
}

/* nvFuser's computeContiguity: whether each dim's stride is the next
 * non-broadcast inner dim's stride times its extent (None for broadcasts). */
static void contiguity_from_strides(const int64_t *sizes, const int64_t *strides, int32_t rank, int8_t *out) {
  for (int32_t i = 0; i < rank; i++) out[i] = FU_CONTIG_NONE;
  int32_t last = rank - 1;
  for (; last >= 0; last--)
    if (strides[last] != 0 && sizes[last] != 1) {
      out[last] = strides[last] == 1 ? FU_CONTIG_TRUE : FU_CONTIG_FALSE;
      break;
    }
  for (int32_t i = 0; i < last;) {
    if (strides[i] == 0 || sizes[i] == 1) {
      i++;
      continue;
    }
    int32_t l = i++;
    while (i <= last && (strides[i] == 0 || sizes[i] == 1)) i++;
    out[l] = strides[l] == strides[i] * sizes[i] ? FU_CONTIG_TRUE : FU_CONTIG_FALSE;
  }
}

/* An input dim whose contiguity is None but whose extent is not 1 is an
 * expanded broadcast (a stride-0 dim, such as a bias expanded before it
 * reaches the fusion): the input takes extent 1 there, and an expand to
 * the extent (the inputs list's, the shape's, or a fresh symbol) is what
 * the script's name binds to.  Runs after the INPUT op `in` is built. */
static fu_status expand_input(builder *b, fu_op *in, const int64_t *sizes, uint32_t rank, const char *hint,
                              result *res) {
  const int8_t *contig = in->u.input.layout.contiguity;
  fu_type *t = &in->results[0]->type;
  uint32_t index = b->n_inputs - 1;
  const fu_py_example_spec *ex =
      b->unit->examples && index < b->unit->n_examples ? &b->unit->examples[index] : NULL;
  if (ex && (ex->is_scalar || ex->rank != (int32_t)rank)) ex = NULL;
  fu_extent target[FU_MAX_RANK];
  bool any = false;
  for (uint32_t i = 0; i < rank; i++) {
    target[i] = t->dims[i];
    if (!contig || contig[i] != FU_CONTIG_NONE || sizes[i] == 1) continue;
    any = true;
    if (ex) {
      target[i].value = ex->shape[i];
      target[i].sym = NULL;
    }
    t->dims[i].value = 1;
    t->dims[i].sym = NULL;
  }
  if (!any) return FU_OK;
  fu_status st = name_value(b, in->results[0], hint ? hint : "input");
  if (st != FU_OK) return st;
  fu_op *op = new_op(b, FU_OP_EXPAND, in->results, 1, 1, in->loc);
  if (!op) return nomem(b);
  if ((st = state_type(b, op, t->dtype, target, (int32_t)rank)) != FU_OK) return st;
  return finish_op(b, op, res);
}

static fu_status make_tensor_input(builder *b, fu_loc loc, fu_loc shape_loc, int64_t *sizes, uint32_t rank,
                                   fu_dtype dt, fu_layout layout, const char *hint, const char *what, result *res);

/* fd.from_pytorch(inputs[i]): the tensor input nvFuser defines for that
 * entry of the inputs list: its dtype, contiguity from its strides, sizes
 * symbolic except size-1 dims (all given with static_sizes=True). */
static fu_status from_pytorch(builder *b, const fu_py_expr *call, const char *what, const char *hint, result *res) {
  static const char *const params[] = {"!tensor|arg", "static_sizes", NULL};
  const fu_py_expr *s[MAX_PARAMS];
  fu_status st = bind_args(b, call, what, params, s);
  if (st != FU_OK) return st;
  const fu_py_expr *e = s[0];
  int64_t index;
  if (e->kind != FU_PY_E_SUBSCRIPT || e->u.subscript.base->kind != FU_PY_E_NAME ||
      eval_const(b, e->u.subscript.index, &(pconst){0}) != 1 ||
      (st = eval_int(b, e->u.subscript.index, "index", what, &index)) != FU_OK) {
    fu_error(b->diag, e->loc, "'%s' takes an entry of the inputs list, such as inputs[0]", what);
    return FU_ERR_UNSUPPORTED;
  }
  const fu_py_unit *u = b->unit;
  if (!u->examples || index < 0 || (uint64_t)index >= u->n_examples) {
    fu_error(b->diag, e->loc, "'%s' needs entry %lld of an inputs list beside the definition", what, (long long)index);
    return FU_ERR_UNSUPPORTED;
  }
  const fu_py_example_spec *ex = &u->examples[index];
  if (ex->is_scalar || ex->rank < 0) {
    fu_error(b->diag, e->loc, "'%s' of a %s is not supported", what, ex->is_scalar ? "scalar" : ".npy file");
    return FU_ERR_UNSUPPORTED;
  }
  bool static_sizes = false;
  if (s[1] && (st = eval_bool(b, s[1], "static_sizes", what, &static_sizes)) != FU_OK) return st;
  uint32_t rank = (uint32_t)ex->rank;
  int64_t sizes[FU_MAX_RANK], strides[FU_MAX_RANK];
  for (uint32_t i = 0; i < rank; i++) sizes[i] = static_sizes || ex->shape[i] == 1 ? ex->shape[i] : -1;
  int64_t next = 1;
  for (uint32_t i = rank; i-- > 0;) {
    strides[i] = ex->has_strides ? ex->strides[i] : next;
    next *= ex->shape[i] ? ex->shape[i] : 1;
  }
  fu_layout layout = {NULL, NULL, NULL};
  layout.contiguity = fu_arena_alloc(b->m->arena, (rank ? rank : 1) * sizeof *layout.contiguity);
  if (!layout.contiguity) return nomem(b);
  contiguity_from_strides(ex->shape, strides, (int32_t)rank, layout.contiguity);
  return make_tensor_input(b, call->loc, e->loc, sizes, rank, ex->dtype, layout, hint, what, res);
}

/* fd.define_tensor in its current (shape, contiguity, dtype, is_cpu,
 * stride_order) and pre-2023 (symbolic_sizes/contiguous, sizes/strides,
 * ndims) forms: an INPUT op, each -1 a fresh symbol. */
static fu_status define_tensor(builder *b, const fu_py_expr *call, const char *what, const char *hint, result *res) {
  static const char *const params[] = {"shape|symbolic_sizes|sizes|ndims",
                                       "contiguity|contiguous",
                                       "dtype",
                                       "is_cpu",
                                       "stride_order",
                                       "strides",
                                       "static_sizes",
                                       NULL};
  const fu_py_expr *s[MAX_PARAMS];
  fu_status st = bind_args(b, call, what, params, s);
  if (st != FU_OK) return st;
  if (!s[0]) {
    fu_error(b->diag, call->loc, "missing argument 'shape' for '%s'", what);
    return FU_ERR_PARSE;
  }
  bool legacy = false; /* symbolic_sizes/contiguous, or sizes/strides */
  for (uint32_t k = 0; k < call->u.call.n_kwargs; k++) {
    const char *n = call->u.call.kwargs[k].name;
    legacy |= strcmp(n, "symbolic_sizes") == 0 || strcmp(n, "contiguous") == 0 || strcmp(n, "sizes") == 0;
  }
  int64_t *sizes;
  uint32_t rank;
  pconst c;
  if (eval_const(b, s[0], &c) == 1 && c.kind == PY_INT) { /* define_tensor(ndims) */
    if (c.v.i < 0 || c.v.i > FU_MAX_RANK) {
      fu_error(b->diag, s[0]->loc, "invalid rank %lld for '%s'", (long long)c.v.i, what);
      return FU_ERR_VERIFY;
    }
    rank = (uint32_t)c.v.i;
    sizes = scratch_alloc(b, (rank ? rank : 1) * sizeof *sizes);
    if (!sizes) return nomem(b);
    for (uint32_t i = 0; i < rank; i++) sizes[i] = -1;
  } else if ((st = eval_int_list(b, s[0], "shape", what, false, &sizes, &rank)) != FU_OK) {
    return st;
  }
  if (rank > FU_MAX_RANK) {
    fu_error(b->diag, s[0]->loc, "'%s' has more than %d dims", what, FU_MAX_RANK);
    return FU_ERR_UNSUPPORTED;
  }
  fu_dtype dt = FU_DT_F32;
  if (s[2] && (st = eval_dtype(b, s[2], what, false, &dt)) != FU_OK) return st;
  if (s[3]) {
    bool is_cpu;
    if ((st = eval_bool(b, s[3], "is_cpu", what, &is_cpu)) != FU_OK) return st;
  }
  fu_layout layout = {NULL, NULL, NULL};
  fu_arena *a = b->m->arena;
  /* sizes + strides (the old "integration" overload): contiguity from the
   * strides; sizes other than 1 stay symbolic unless static_sizes */
  if (s[5]) {
    int64_t *strides;
    uint32_t ns;
    if ((st = eval_int_list(b, s[5], "strides", what, false, &strides, &ns)) != FU_OK) return st;
    if (ns != rank) {
      fu_error(b->diag, s[5]->loc, "'strides' of '%s' has %u entries but the shape has %u", what, ns, rank);
      return FU_ERR_VERIFY;
    }
    bool static_sizes = false;
    if (s[6] && (st = eval_bool(b, s[6], "static_sizes", what, &static_sizes)) != FU_OK) return st;
    layout.contiguity = fu_arena_alloc(a, (rank ? rank : 1) * sizeof *layout.contiguity);
    if (!layout.contiguity) return nomem(b);
    contiguity_from_strides(sizes, strides, (int32_t)rank, layout.contiguity);
    if (!static_sizes)
      for (uint32_t i = 0; i < rank; i++)
        if (sizes[i] != 1) sizes[i] = -1;
  } else if (s[6]) {
    fu_error(b->diag, s[6]->loc, "'static_sizes' of '%s' needs 'strides'", what);
    return FU_ERR_PARSE;
  }
  if (s[1] && s[1]->kind != FU_PY_E_NONE) {
    if (s[5]) {
      fu_error(b->diag, s[1]->loc, "'%s' takes either 'contiguity' or 'strides', not both", what);
      return FU_ERR_PARSE;
    }
    layout.contiguity = fu_arena_alloc(a, (rank ? rank : 1) * sizeof *layout.contiguity);
    if (!layout.contiguity) return nomem(b);
    pconst one;
    int r = eval_const(b, s[1], &one);
    if (r < 0) return FU_ERR_PARSE;
    if (r == 1 && one.kind == PY_BOOL) { /* contiguous=True for every dim */
      for (uint32_t i = 0; i < rank; i++) layout.contiguity[i] = one.v.b ? FU_CONTIG_TRUE : FU_CONTIG_FALSE;
    } else if (s[1]->kind == FU_PY_E_LIST || s[1]->kind == FU_PY_E_TUPLE) {
      if (s[1]->u.list.n != rank) {
        fu_error(b->diag, s[1]->loc, "'contiguity' of '%s' has %u entries but the shape has %u", what, s[1]->u.list.n,
                 rank);
        return FU_ERR_VERIFY;
      }
      for (uint32_t i = 0; i < rank; i++) {
        const fu_py_expr *item = s[1]->u.list.items[i];
        bool v;
        if (item->kind == FU_PY_E_NONE)
          layout.contiguity[i] = FU_CONTIG_NONE;
        else if ((st = eval_bool(b, item, "contiguity", what, &v)) != FU_OK)
          return st;
        else
          layout.contiguity[i] = v ? FU_CONTIG_TRUE : FU_CONTIG_FALSE;
      }
    } else {
      fu_error(b->diag, s[1]->loc, "expected a list of True/False/None for 'contiguity' of '%s'", what);
      return FU_ERR_PARSE;
    }
  }
  if (s[4] && s[4]->kind != FU_PY_E_NONE) {
    int64_t *order;
    uint32_t n;
    if ((st = eval_int_list(b, s[4], "stride_order", what, false, &order, &n)) != FU_OK) return st;
    if (n != 0) {
      if (!is_permutation_of(order, n, (int32_t)rank)) {
        fu_error(b->diag, s[4]->loc, "'stride_order' of '%s' must be a permutation of 0..%u", what,
                 rank ? rank - 1 : 0);
        return FU_ERR_VERIFY;
      }
      layout.stride_order = fu_arena_alloc(a, rank * sizeof *layout.stride_order);
      if (!layout.stride_order) return nomem(b);
      for (uint32_t i = 0; i < rank; i++) layout.stride_order[i] = (int32_t)order[i];
      /* nvFuser's contiguity list is in allocation order (outermost
       * first) when a stride order is given; the IR's is per logical dim */
      if (layout.contiguity && !s[5]) {
        int8_t alloc_order[FU_MAX_RANK];
        memcpy(alloc_order, layout.contiguity, rank * sizeof *alloc_order);
        for (uint32_t d = 0; d < rank; d++) layout.contiguity[d] = alloc_order[rank - 1 - order[d]];
      }
    }
  }
  /* broadcast dims have no contiguity */
  for (uint32_t i = 0; layout.contiguity && s[1] && s[1]->kind != FU_PY_E_NONE && i < rank; i++)
    if (sizes[i] == 1 && (legacy || layout.contiguity[i] == FU_CONTIG_TRUE)) layout.contiguity[i] = FU_CONTIG_NONE;
  return make_tensor_input(b, call->loc, s[0]->loc, sizes, rank, dt, layout, hint, what, res);
}

/* The INPUT op of a tensor: each size -1 a fresh symbol, then
 * expand_input for expanded dims.  `shape_loc` is where errors about the
 * sizes point. */
static fu_status make_tensor_input(builder *b, fu_loc loc, fu_loc shape_loc, int64_t *sizes, uint32_t rank,
                                   fu_dtype dt, fu_layout layout, const char *hint, const char *what, result *res) {
  fu_arena *a = b->m->arena;
  fu_op *op = new_op(b, FU_OP_INPUT, NULL, 0, 1, loc);
  if (!op) return nomem(b);
  op->u.input.layout = layout;
  fu_type *t = &op->results[0]->type;
  t->dtype = dt;
  t->rank = (int32_t)rank;
  if (rank) {
    t->dims = fu_arena_alloc(a, rank * sizeof *t->dims);
    if (!t->dims) return nomem(b);
  }
  for (uint32_t i = 0; i < rank; i++) {
    if (sizes[i] < -1) {
      fu_error(b->diag, shape_loc, "invalid extent %lld in the shape of '%s'", (long long)sizes[i], what);
      return FU_ERR_VERIFY;
    }
    if (sizes[i] == -1) {
      char name[96];
      snprintf(name, sizeof name, "%s.%u", hint ? hint : "input", i);
      t->dims[i] = fu_py_symtab_fresh(&b->syms, name, (int32_t)b->n_inputs, (int32_t)i);
      if (!t->dims[i].sym) return nomem(b);
    } else {
      t->dims[i].value = sizes[i];
      t->dims[i].sym = NULL;
    }
  }
  b->n_inputs++;
  memset(res, 0, sizeof *res);
  res->n = 1;
  res->b[0].kind = B_VALUE;
  res->b[0].value = op->results[0];
  return expand_input(b, op, sizes, rank, hint, res);
}

/* Convert a Python constant to `dt`, as define_scalar(value, dtype=dt). */
static fu_status convert_const(builder *b, pconst *c, fu_dtype dt, const fu_py_expr *at, const char *what) {
  fu_dtype natural = c->kind == PY_FLOAT ? FU_DT_F64 : c->kind == PY_INT ? FU_DT_I64 : FU_DT_BOOL;
  if (dt == natural || dt == FU_DT_NONE) return FU_OK;
  if (fu_dtype_is_float(dt)) {
    *c = pconst_float(pconst_as_double(c));
  } else if (fu_dtype_is_int(dt)) {
    if (c->kind == PY_FLOAT && (c->v.f != floor(c->v.f) || !in_i64_range(c->v.f))) {
      fu_error(b->diag, at->loc, "'%s' cannot make an integer from %g", what, c->v.f);
      return FU_ERR_VERIFY;
    }
    *c = pconst_int(c->kind == PY_FLOAT ? (int64_t)c->v.f : c->kind == PY_INT ? c->v.i : c->v.b);
  } else {
    *c = pconst_bool(pconst_as_double(c) != 0.0);
  }
  c->dtype = dt;
  c->typed = true;
  return FU_OK;
}

/* define_scalar(None, dtype) is a runtime scalar INPUT; define_scalar(v)
 * and define_constant(v) are constants that become literals where used. */
static fu_status define_scalar(builder *b, const fu_py_expr *call, const char *what, bool constant, result *res) {
  static const char *const scalar_params[] = {"value|val", "dtype", NULL};
  static const char *const const_params[] = {"!val|value", "dtype", NULL};
  const fu_py_expr *s[MAX_PARAMS];
  fu_status st = bind_args(b, call, what, constant ? const_params : scalar_params, s);
  if (st != FU_OK) return st;
  const fu_py_expr *value = s[0], *dtype_e = s[1];
  char name[128];
  /* define_scalar(DataType.Double): the old spelling of a runtime scalar */
  if (value && !dtype_e && dotted(value, name, sizeof name) && strstr(name, "DataType.")) {
    dtype_e = value;
    value = NULL;
  }
  fu_dtype dt = FU_DT_NONE;
  if (dtype_e && (st = eval_dtype(b, dtype_e, what, false, &dt)) != FU_OK) return st;
  memset(res, 0, sizeof *res);
  res->n = 1;
  if (!value || value->kind == FU_PY_E_NONE) {
    if (constant) {
      fu_error(b->diag, call->loc, "'%s' needs a value", what);
      return FU_ERR_PARSE;
    }
    fu_op *op = new_op(b, FU_OP_INPUT, NULL, 0, 1, call->loc);
    if (!op) return nomem(b);
    op->results[0]->type.dtype = dt == FU_DT_NONE ? FU_DT_F64 : dt;
    op->results[0]->type.rank = FU_SCALAR_RANK;
    b->n_inputs++;
    res->b[0].kind = B_VALUE;
    res->b[0].value = op->results[0];
    return FU_OK;
  }
  pconst c;
  int r = eval_const(b, value, &c);
  if (r < 0) return FU_ERR_PARSE;
  if (r == 0) {
    fu_error(b->diag, value->loc, "'%s' needs a number, a bool or None", what);
    return FU_ERR_PARSE;
  }
  if ((st = convert_const(b, &c, dt, value, what)) != FU_OK) return st;
  res->b[0].kind = B_CONST;
  res->b[0].cst = c;
  return FU_OK;
}

/* define_vector([...]): a shape of constants and tensor sizes. */
static fu_status define_vector(builder *b, const fu_py_expr *call, const char *what, result *res) {
  static const char *const params[] = {"!values|value|size", "dtype", NULL};
  const fu_py_expr *s[MAX_PARAMS];
  fu_status st = bind_args(b, call, what, params, s);
  if (st != FU_OK) return st;
  if (s[1]) {
    fu_dtype dt;
    if ((st = eval_dtype(b, s[1], what, false, &dt)) != FU_OK) return st;
    if (!fu_dtype_is_int(dt)) {
      fu_error(b->diag, s[1]->loc, "'%s' makes shape vectors, which are integers", what);
      return FU_ERR_UNSUPPORTED;
    }
  }
  if (s[0]->kind != FU_PY_E_LIST && s[0]->kind != FU_PY_E_TUPLE) {
    fu_error(b->diag, s[0]->loc, "'%s' with a size defines runtime scalar inputs, which fuser does not support", what);
    return FU_ERR_UNSUPPORTED;
  }
  memset(res, 0, sizeof *res);
  res->n = 1;
  res->b[0].kind = B_VECTOR;
  return eval_shape(b, s[0], "values", what, &res->b[0].dims, &res->b[0].n_dims);
}

/* ---- calls and statements ----------------------------------------------- */

/* x + y and friends on tensors and scalars become pointwise ops; the
 * result is named `name`, or gets a temporary name. */
static fu_status eval_arith(builder *b, const fu_py_expr *e, const char *name, fu_value **out) {
  fu_op_kind kind;
  fu_value *v[2];
  uint32_t n;
  fu_status st;
  if (e->kind == FU_PY_E_UNARY) {
    if ((st = eval_operand(b, e->u.unary.operand, e->u.unary.op == '-' ? "-" : "+", &v[0])) != FU_OK) return st;
    if (e->u.unary.op == '+') {
      *out = v[0];
      return FU_OK;
    }
    kind = FU_OP_NEG;
    n = 1;
  } else {
    const char *op = e->u.binary.op;
    kind = strcmp(op, "+") == 0    ? FU_OP_ADD
           : strcmp(op, "-") == 0  ? FU_OP_SUB
           : strcmp(op, "*") == 0  ? FU_OP_MUL
           : strcmp(op, "/") == 0  ? FU_OP_DIV
           : strcmp(op, "**") == 0 ? FU_OP_POW
           : strcmp(op, "%") == 0  ? FU_OP_REMAINDER
                                   : FU_OP_COUNT;
    if (kind == FU_OP_COUNT) {
      fu_error(b->diag, e->loc, "unsupported Python construct '%s' on tensors", op);
      return FU_ERR_UNSUPPORTED;
    }
    if ((st = eval_operand(b, e->u.binary.lhs, op, &v[0])) != FU_OK) return st;
    if ((st = eval_operand(b, e->u.binary.rhs, op, &v[1])) != FU_OK) return st;
    n = 2;
    if ((st = broadcast_rank0(b, v, 2, e->loc)) != FU_OK) return st;
    unify_pointwise(b, v, 2);
  }
  fu_op *op = new_op(b, kind, v, n, 1, e->loc);
  if (!op) return nomem(b);
  result res;
  if ((st = finish_op(b, op, &res)) != FU_OK) return st;
  if ((st = name_value(b, op->results[0], name)) != FU_OK) return st;
  *out = op->results[0];
  return FU_OK;
}

static fu_status eval_call(builder *b, const fu_py_expr *call, const char *name_hint, result *res) {
  memset(res, 0, sizeof *res);
  const fu_py_expr *callee = call->u.call.callee;
  char name[160];
  if (!dotted(callee, name, sizeof name)) {
    fu_error(b->diag, call->loc, "unsupported call");
    return FU_ERR_UNSUPPORTED;
  }
  const fu_py_expr *self;
  const char *query = size_query_of(b, call, &self);
  if (query && self) return build_size_query(b, query, call, self, name, res);
  const char *fd = b->unit->fd;
  size_t nfd = strlen(fd);
  fu_status st;
  if (strncmp(name, fd, nfd) == 0 && strncmp(name + nfd, ".ops.", 5) == 0 && !strchr(name + nfd + 5, '.')) {
    st = build_op(b, name + nfd + 5, call, res);
  } else if (strncmp(name, fd, nfd) == 0 && name[nfd] == '.' && !strchr(name + nfd + 1, '.')) {
    const char *method = name + nfd + 1;
    if (strcmp(method, "define_tensor") == 0)
      st = define_tensor(b, call, name, name_hint, res);
    else if (strcmp(method, "define_scalar") == 0)
      st = define_scalar(b, call, name, false, res);
    else if (strcmp(method, "define_constant") == 0)
      st = define_scalar(b, call, name, true, res);
    else if (strcmp(method, "from_pytorch") == 0)
      st = from_pytorch(b, call, name, name_hint, res);
    else if (strcmp(method, "define_vector") == 0)
      st = define_vector(b, call, name, res);
    else if (strcmp(method, "add_output") == 0)
      return add_output(b, call, name);
    else {
      fu_error(b->diag, call->loc, "unsupported FusionDefinition method '%s'", name);
      return FU_ERR_UNSUPPORTED;
    }
  } else {
    fu_error(b->diag, call->loc, "unsupported call '%s'", name);
    return FU_ERR_UNSUPPORTED;
  }
  if (st != FU_OK) return st;
  /* name new values now, so nested calls get names in evaluation order */
  if (!name_hint)
    for (uint32_t i = 0; i < res->n; i++)
      if (res->b[i].kind == B_VALUE && !res->b[i].value->name && (st = name_value(b, res->b[i].value, NULL)) != FU_OK)
        return st;
  return FU_OK;
}

/* Bind a script name; an unnamed value takes it as its IR name. */
static fu_status bind_name(builder *b, const fu_py_expr *target, const binding *bd) {
  binding *copy = scratch_alloc(b, sizeof *copy);
  if (!copy) return nomem(b);
  *copy = *bd;
  if (bd->kind == B_VALUE && !bd->value->name) {
    fu_status st = name_value(b, bd->value, target->u.name);
    if (st != FU_OK) return st;
  }
  if (!fu_py_map_set(&b->env, target->u.name, copy)) return nomem(b);
  return FU_OK;
}

/* NAME = expr, or several names from a multi-result op (var_mean). */
static fu_status exec_assign(builder *b, const fu_py_stmt *s) {
  const fu_py_expr *value = s->u.assign.value;
  uint32_t nt = s->u.assign.n_targets;
  result res;
  memset(&res, 0, sizeof res);
  fu_status st;
  pconst c;
  int r = eval_const(b, value, &c);
  if (r < 0) return FU_ERR_PARSE;
  const sexpr *x = NULL;
  if (r == 0 &&
      (value->kind == FU_PY_E_CALL || value->kind == FU_PY_E_BINARY || value->kind == FU_PY_E_UNARY ||
       value->kind == FU_PY_E_SUBSCRIPT) &&
      (r = size_expr(b, value, &x)) < 0)
    return FU_ERR_PARSE;
  if (x && r == 1) { /* a tensor size or arithmetic on sizes: folded where it is used */
    res.n = 1;
    res.b[0].kind = x->op == 'e' ? B_EXTENT : B_SIZE;
    res.b[0].extent = x->leaf;
    res.b[0].size = x;
  } else if (r == 1) {
    res.n = 1;
    res.b[0].kind = B_CONST;
    res.b[0].cst = c;
  } else if (value->kind == FU_PY_E_CALL) {
    if ((st = eval_call(b, value, nt == 1 ? s->u.assign.targets[0]->u.name : "", &res)) != FU_OK) return st;
  } else if (value->kind == FU_PY_E_NAME) {
    binding *bd = fu_py_map_get(&b->env, value->u.name);
    if (!bd) {
      fu_error(b->diag, value->loc, "undefined name '%s'", value->u.name);
      return FU_ERR_PARSE;
    }
    res.n = 1;
    res.b[0] = *bd;
  } else if (value->kind == FU_PY_E_BINARY || value->kind == FU_PY_E_UNARY) {
    fu_value *v;
    if ((st = eval_arith(b, value, nt == 1 ? s->u.assign.targets[0]->u.name : NULL, &v)) != FU_OK) return st;
    res.n = 1;
    res.b[0].kind = B_VALUE;
    res.b[0].value = v;
  } else if (value->kind == FU_PY_E_SUBSCRIPT) {
    fu_error(b->diag, value->loc, "unsupported Python construct 'subscript'");
    return FU_ERR_UNSUPPORTED;
  } else {
    fu_error(b->diag, value->loc, "unsupported value in an assignment");
    return FU_ERR_UNSUPPORTED;
  }
  if (res.n != nt) {
    fu_error(b->diag, s->loc, "%u name%s assigned from a call that gives %u value%s", nt, nt == 1 ? "" : "s", res.n,
             res.n == 1 ? "" : "s");
    return FU_ERR_VERIFY;
  }
  /* values a call produced for several targets (var_mean) get their names
   * here; a single target already named its value through the hint */
  for (uint32_t i = 0; i < nt; i++) {
    if (res.b[i].kind == B_VALUE && res.b[i].value->name == NULL) {
      if ((st = name_value(b, res.b[i].value, s->u.assign.targets[i]->u.name)) != FU_OK) return st;
    }
    if ((st = bind_name(b, s->u.assign.targets[i], &res.b[i])) != FU_OK) return st;
  }
  return FU_OK;
}

static bool is_add_output(builder *b, const fu_py_stmt *s) {
  if (s->kind != FU_PY_S_EXPR || s->u.expr->kind != FU_PY_E_CALL) return false;
  char name[160];
  if (!dotted(s->u.expr->u.call.callee, name, sizeof name)) return false;
  size_t nfd = strlen(b->unit->fd);
  return strncmp(name, b->unit->fd, nfd) == 0 && strcmp(name + nfd, ".add_output") == 0;
}

static const char *stmt_keyword(fu_py_stmt_kind k) {
  switch (k) {
    case FU_PY_S_DEF: return "def";
    case FU_PY_S_WITH: return "with";
    case FU_PY_S_FOR: return "for";
    case FU_PY_S_IMPORT: return "import";
    default: return "statement";
  }
}

/* One statement of a definition body. */
static fu_status exec_stmt(builder *b, const fu_py_stmt *s) {
  if (!is_add_output(b, s)) {
    fu_status st = flush_outputs(b);
    if (st != FU_OK) return st;
  }
  switch (s->kind) {
    case FU_PY_S_PASS: return FU_OK;
    case FU_PY_S_ASSIGN: return exec_assign(b, s);
    case FU_PY_S_EXPR: {
      const fu_py_expr *e = s->u.expr;
      if (e->kind == FU_PY_E_STRING) return FU_OK; /* docstring */
      if (e->kind != FU_PY_E_CALL) {
        fu_error(b->diag, e->loc, "expression statement has no effect");
        return FU_ERR_UNSUPPORTED;
      }
      result res;
      return eval_call(b, e, NULL, &res);
    }
    default: break;
  }
  fu_error(b->diag, s->loc, "unsupported Python construct '%s' inside a fusion definition", stmt_keyword(s->kind));
  return FU_ERR_UNSUPPORTED;
}

/* Inputs that the inputs list makes with exactly the same shape share their
 * symbols, dim by dim: three torch.randn(16, 512, 4096) inputs are
 * f32[i0, i1, i2] three times, not three unrelated shapes (nvFuser itself
 * keeps them apart, which hides that a reduction and a pointwise op run
 * over the same domain).  Only symbols are merged; a symbol is never bound
 * to a constant this way, and dims of one tensor are never merged. */
static void unify_same_shape_inputs(builder *b) {
  const fu_py_unit *u = b->unit;
  if (!u->examples) return;
  const fu_value *firsts[64]; /* one representative per distinct example shape */
  const fu_py_example_spec *shapes[64];
  uint32_t n_classes = 0, k = 0;
  for (fu_op *op = b->f->body.first; op; op = op->next) {
    if (op->kind != FU_OP_INPUT) continue;
    uint32_t index = k++;
    fu_value *v = op->results[0];
    if (index >= u->n_examples || !fu_type_is_tensor(&v->type)) continue;
    const fu_py_example_spec *spec = &u->examples[index];
    if (spec->is_scalar || spec->rank != v->type.rank) continue;
    uint32_t c = 0;
    while (c < n_classes && !(shapes[c]->rank == spec->rank &&
                              memcmp(shapes[c]->shape, spec->shape, (size_t)spec->rank * sizeof *spec->shape) == 0))
      c++;
    if (c == n_classes) {
      if (n_classes < sizeof firsts / sizeof firsts[0]) {
        firsts[n_classes] = v;
        shapes[n_classes++] = spec;
      }
      continue;
    }
    for (int32_t d = 0; d < v->type.rank; d++) {
      fu_extent a = fu_py_symtab_canon(&b->syms, firsts[c]->type.dims[d]);
      fu_extent e = fu_py_symtab_canon(&b->syms, v->type.dims[d]);
      if (!fu_extent_is_const(a) && !fu_extent_is_const(e)) fu_py_symtab_unify(&b->syms, a, e);
    }
  }
}

fu_status fu_py_build_fusion(fu_module *m, const fu_py_unit *unit, fu_diag_engine *diag, fu_fusion **out) {
  *out = NULL;
  builder b;
  memset(&b, 0, sizeof b);
  b.m = m;
  b.diag = diag;
  b.unit = unit;
  b.scratch = fu_arena_new(m->alloc);
  fu_py_map_init(&b.env, m->alloc);
  fu_py_map_init(&b.names, m->alloc);
  fu_py_symtab_init(&b.syms, m);
  fu_status st = FU_OK;
  if (!b.scratch || !(b.f = fu_fusion_new(m, unit->name, unit->loc))) st = nomem(&b);
  for (uint32_t i = 0; st == FU_OK && i < unit->body->n; i++) st = exec_stmt(&b, unit->body->v[i]);
  if (st == FU_OK) st = flush_outputs(&b);
  if (st == FU_OK) unify_same_shape_inputs(&b);
  if (st == FU_OK && (st = fu_py_symtab_finalize(&b.syms, b.f, "i")) != FU_OK) nomem(&b);
  fu_py_symtab_free(&b.syms);
  fu_py_map_free(&b.env);
  fu_py_map_free(&b.names);
  fu_arena_free(b.scratch);
  if (st == FU_OK) *out = b.f;
  return st;
}
