/* fuser: the canonicalize pass.
 *
 * Four rewrites, each exact for every input, in one forward walk per block
 * followed by one dead-code sweep (and, first, the one inexact rewrite,
 * option `reciprocal`: canonicalize_reciprocal.c):
 *
 *  - fold:       an op whose operands are all literals and whose result is a
 *                scalar is replaced by a literal of its result dtype, computed
 *                by the interpreter's own kernels (fu_interp_eval_scalar:
 *                double math for f64 results, float math for f32; ints wrap
 *                as int64 and then to the result width; int div truncates;
 *                round is half to even).  Nothing undefined in C is
 *                folded (int division by zero, INT64_MIN / -1, float-to-int
 *                casts out of range), nor anything whose result depends on a
 *                choice the kernels make (f16/bf16 rounding, NaN and
 *                signed-zero corners of maximum/minimum/clamp/relu/sign,
 *                sigmoid, silu, lerp, float remainder).
 *  - identities: x*1, 1*x, x/1 (ints and floats), x+0, 0+x, x-0 (ints only:
 *                for floats -0.0 + 0.0 is +0.0, not x), neg(neg(x)) -> x,
 *                set(set(x)) -> set(x), cast of x to its own type -> x, a
 *                cat whose other operands are empty along its dim (extent
 *                0, as repros with empty inputs write) -> the one that is
 *                not (a `set` of it where the result is pinned); only when
 *                the result type equals x's type exactly.  A pad of an empty
 *                operand (a constant extent 0) -> `full` of its pad value:
 *                every element is padding, and no kernel may read the
 *                operand (it has no element to read).
 *  - cse:        ops with the same kind, operands, attributes and result types
 *                are merged into the first one (hash table, per block: never
 *                across a segment boundary; never INPUT/OUTPUT/SEGMENT; never
 *                a host alias with a kernel op).
 *  - dce:        ops whose results are unused are removed; inputs, outputs and
 *                segments are never removed.
 *
 * The IR keeps no use lists, so replace-all-uses is a forwarding table by
 * value id that the walk applies to each op's operands as it reaches them.
 * Values that cross a block boundary or feed an `output` are pinned: they
 * are never replaced, so segment signatures and fusion outputs keep their
 * names.  When a literal replaces a value, the user's result types are
 * inferred again and the substitution is undone if they would change (a typed
 * literal may promote differently from a scalar value).  Segments already
 * scheduled or lowered are left untouched. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuser/interp.h"
#include "fuser/pass.h"
#include "fuser/print.h"
#include "fuser/strbuf.h"
#include "fuser/verify.h"

#include "canonicalize_internal.h"

static const fu_pass_option_def options[] = {
    {"fold", "fold ops whose operands are all literals into a literal (true|false)", "true"},
    {"identities", "apply algebraic identities exact for every input: x*1, x/1, int x+0, ... (true|false)", "true"},
    {"cse", "merge ops with equal kind, operands, attributes and result types (true|false)", "true"},
    {"dce", "remove ops whose results are unused (true|false)", "true"},
    {"reciprocal",
     "divide by a broadcast computed value (a row sum) by multiplying with its reciprocal, computed once: within 2 ulp "
     "of the quotient (true|false)",
     "true"},
    {NULL, NULL, NULL},
};

static fu_status run_canonicalize(fu_module *m, fu_pass_context *ctx);

const fu_pass_def fu_pass_canonicalize = {
    "canonicalize",
    "fold scalar constants, apply exact algebraic identities, CSE, and remove dead ops",
    options,
    run_canonicalize,
};

typedef struct canon {
  fu_module *m;
  fu_fusion *f;
  fu_allocator alloc;
  FILE *dbg;          /* non-NULL with --debug=canonicalize */
  fu_diag_engine quiet; /* swallows diagnostics of speculative inference */
  bool fold, ident, cse, dce, reciprocal;
  uint32_t n_values;  /* value ids below this were present when the walk began */
  fu_value **repl;    /* by value id: the value replacing it, or NULL */
  uint8_t *pinned;    /* by value id: never replaced, never dead */
  /* scratch for undoing literal substitutions and for inferred types */
  uint32_t *undo_idx;
  fu_value **undo_val;
  uint32_t undo_cap;
  fu_type *types;
  uint32_t types_cap;
  fu_strbuf sb;
  uint32_t n_folded, n_ident, n_cse, n_dce, n_reciprocal;
} canon;

static void quiet_handler(void *user, const fu_diagnostic *d) {
  (void)user;
  (void)d;
}

/* ---- options -------------------------------------------------------------- */

static fu_status bool_option(fu_pass_context *ctx, const char *name, bool *out) {
  const char *v = fu_pass_option_value(ctx, name);
  if (!v || strcmp(v, "true") == 0 || strcmp(v, "1") == 0) {
    *out = true;
    return FU_OK;
  }
  if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0) {
    *out = false;
    return FU_OK;
  }
  fu_error(ctx->diag, fu_loc_none(), "canonicalize: option '%s' must be true or false, not '%s'", name, v);
  return FU_ERR_INVALID_ARG;
}

/* ---- debug output ---------------------------------------------------------- */

static const char *ref(canon *c, const fu_value *v) {
  fu_strbuf_clear(&c->sb);
  fu_print_value_ref(&c->sb, v);
  return c->sb.data ? c->sb.data : "?";
}

static void debug_op(canon *c, const char *what, const fu_op *op, const fu_value *from, const fu_value *to) {
  if (!c->dbg) return;
  fprintf(c->dbg, "[canonicalize] %s: '%s' at %u:%u: ", what, fu_op_info_of(op->kind)->name,
          fu_loc_file_line(op->loc), op->loc.col);
  if (from) fprintf(c->dbg, "%s", ref(c, from));
  if (to) fprintf(c->dbg, " -> %s", ref(c, to));
  fputc('\n', c->dbg);
}

/* ---- replacement ------------------------------------------------------------ */

static fu_value *resolve(const canon *c, fu_value *v) {
  while (!v->is_literal && v->id < c->n_values && c->repl[v->id]) v = c->repl[v->id];
  return v;
}

static bool is_pinned(const canon *c, const fu_value *v) {
  return v->is_literal || v->id >= c->n_values || c->pinned[v->id];
}

/* Forward `v` to `w` for every later user.  A value may only be replaced by
 * a literal or by a value of the same block (so nothing new crosses a
 * segment boundary). */
static bool replace(canon *c, fu_value *v, fu_value *w) {
  if (is_pinned(c, v) || v == w) return false;
  if (!w->is_literal && (!w->def || !v->def || w->def->parent != v->def->parent)) return false;
  c->repl[v->id] = w;
  return true;
}

static bool grow_scratch(canon *c, uint32_t need) {
  if (need <= c->undo_cap) return true;
  uint32_t cap = c->undo_cap ? c->undo_cap : 8;
  while (cap < need) cap *= 2;
  uint32_t *idx = fu_mem_realloc(&c->alloc, c->undo_idx, c->undo_cap * sizeof *idx, cap * sizeof *idx);
  if (!idx) return false;
  c->undo_idx = idx;
  fu_value **val = fu_mem_realloc(&c->alloc, c->undo_val, c->undo_cap * sizeof *val, cap * sizeof *val);
  if (!val) return false;
  c->undo_val = val;
  c->undo_cap = cap;
  return true;
}

/* True when `op` infers exactly the result types it already has. */
static fu_status types_unchanged(canon *c, fu_op *op, bool *same) {
  if (op->n_results > c->types_cap) {
    fu_type *t = fu_mem_realloc(&c->alloc, c->types, c->types_cap * sizeof *t, op->n_results * sizeof *t);
    if (!t) return FU_ERR_NOMEM;
    c->types = t;
    c->types_cap = op->n_results;
  }
  memset(c->types, 0, op->n_results * sizeof *c->types);
  *same = fu_infer_types(op, c->types, &c->quiet) == FU_OK;
  for (uint32_t i = 0; *same && i < op->n_results; i++)
    *same = fu_type_equal(&c->types[i], &op->results[i]->type);
  return FU_OK;
}

/* Apply the forwarding table to op's operands.  Literal substitutions are
 * undone when they would change the op's inferred result types. */
static fu_status substitute(canon *c, fu_op *op) {
  uint32_t n_undo = 0;
  for (uint32_t i = 0; i < op->n_operands; i++) {
    fu_value *v = op->operands[i];
    fu_value *w = resolve(c, v);
    if (w == v) continue;
    if (w->is_literal) {
      if (!grow_scratch(c, n_undo + 1)) return FU_ERR_NOMEM;
      c->undo_idx[n_undo] = i;
      c->undo_val[n_undo++] = v;
    }
    op->operands[i] = w;
  }
  if (n_undo == 0 || op->n_results == 0) return FU_OK;
  bool same;
  fu_status st = types_unchanged(c, op, &same);
  if (st != FU_OK) return st;
  if (same) return FU_OK;
  for (uint32_t k = 0; k < n_undo; k++) {
    /* Keep the original value (its def stays alive) but with its own
     * operands already rewritten, so nothing is lost. */
    fu_value *orig = c->undo_val[k];
    while (!orig->is_literal && orig->id < c->n_values && c->repl[orig->id] && !c->repl[orig->id]->is_literal)
      orig = c->repl[orig->id];
    op->operands[c->undo_idx[k]] = orig;
    if (c->dbg) debug_op(c, "kept (a literal would change its type)", op, orig, NULL);
  }
  return FU_OK;
}

/* ---- constant folding -------------------------------------------------------- */

static bool is_half(fu_dtype t) { return t == FU_DT_F16 || t == FU_DT_BF16; }

/* `v` converted to float dtype `r` as a cast does (through the interpreter,
 * so an f32 rounds as it would there). */
static double as_float(fu_value *v, fu_dtype r) {
  fu_scalar_value x;
  if (fu_interp_eval_scalar(FU_OP_CAST, &v, 1, r, &x) != FU_OK) return NAN;
  return x.f;
}

static bool nan_or_zero(double x) { return isnan(x) || x == 0.0; }

/* Whether the value the interpreter computes for `k` on these literals is
 * the value every backend computes.  Refused: what C leaves undefined (int
 * division by zero, the most negative int divided by -1, float-to-int casts
 * out of range or of NaN), an int power with a negative exponent (PyTorch
 * refuses it), and what the kernels choose (NaN and signed-zero
 * corners of maximum/minimum/clamp/relu/sign, sigmoid, silu, lerp, float
 * remainder, float division by zero).  f16/bf16 never reach here. */
static bool foldable(fu_op_kind k, fu_value *const *in, uint32_t n, fu_dtype r) {
  bool float_r = fu_dtype_is_float(r);
  if (k == FU_OP_SIGMOID || k == FU_OP_SILU || k == FU_OP_LERP) return false;
  if (k == FU_OP_CAST && fu_dtype_is_int(r) && fu_dtype_is_float(in[0]->type.dtype)) {
    double x = in[0]->literal.f, lo = r == FU_DT_I32 ? -2147483648.0 : -9223372036854775808.0;
    return !isnan(x) && x >= lo && x < -lo;
  }
  if (float_r && (k == FU_OP_RELU || k == FU_OP_SIGN)) return !nan_or_zero(as_float(in[0], r));
  if (float_r && (k == FU_OP_MAXIMUM || k == FU_OP_MINIMUM)) {
    double x = as_float(in[0], r), y = as_float(in[1], r);
    return !isnan(x) && !isnan(y) && !(x == 0 && y == 0);
  }
  if (float_r && k == FU_OP_CLAMP) {
    for (uint32_t i = 0; i < n; i++)
      if (nan_or_zero(as_float(in[i], r))) return false;
    return true;
  }
  if (float_r && k == FU_OP_REMAINDER) return false;
  if (float_r && (k == FU_OP_DIV || k == FU_OP_FMOD)) return as_float(in[1], r) != 0.0;
  if (fu_dtype_is_int(r) && k == FU_OP_POW) /* PyTorch refuses negative int exponents */
    return fu_dtype_is_bool(in[1]->type.dtype) || (fu_dtype_is_int(in[1]->type.dtype) && in[1]->literal.i >= 0);
  if (fu_dtype_is_int(r) && (k == FU_OP_DIV || k == FU_OP_FMOD || k == FU_OP_REMAINDER)) {
    int64_t min = r == FU_DT_I32 ? INT32_MIN : INT64_MIN;
    if (fu_dtype_is_float(in[0]->type.dtype) || fu_dtype_is_float(in[1]->type.dtype)) return false;
    int64_t x = fu_dtype_is_int(in[0]->type.dtype) ? in[0]->literal.i : in[0]->literal.b;
    int64_t y = fu_dtype_is_int(in[1]->type.dtype) ? in[1]->literal.i : in[1]->literal.b;
    return y != 0 && !(x == min && y == -1);
  }
  return true;
}

/* The shortest decimal that reads back as the same f32, as a double: an f32
 * literal is rounded to float wherever it is used, so f32(0.1) means the
 * same as f32(0.10000000149011612) and prints far better. */
static double shortest_f32(double x) {
  float want = (float)x; /* x is already an f32 value */
  if (!isfinite(x)) return x;
  char buf[48];
  for (int prec = 1; prec <= 9; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, x);
    float got = strtof(buf, NULL);
    if (memcmp(&got, &want, sizeof got) == 0) return strtod(buf, NULL);
  }
  return x;
}

static fu_value *make_literal(canon *c, fu_dtype dt, fu_scalar_value l, fu_loc loc) {
  fu_value *v;
  if (fu_dtype_is_float(dt)) {
    v = fu_literal_f(c->f, dt, dt == FU_DT_F32 ? shortest_f32(l.f) : l.f);
    if (v) v->literal_typed = dt != FU_DT_F64;
  } else if (fu_dtype_is_int(dt)) {
    v = fu_literal_i(c->f, dt, l.i);
    if (v) v->literal_typed = dt != FU_DT_I64;
  } else {
    v = fu_literal_b(c->f, l.b);
  }
  if (v) v->loc = loc;
  return v;
}

/* Fold `op` when every operand is a literal and its one result a scalar. */
static fu_status try_fold(canon *c, fu_op *op, bool *done) {
  *done = false;
  const fu_op_info *info = fu_op_info_of(op->kind);
  if (op->n_results != 1 || op->n_operands == 0 || op->n_operands > 3) return FU_OK;
  if (info->cls != FU_OC_UNARY && info->cls != FU_OC_BINARY && info->cls != FU_OC_TERNARY &&
      info->cls != FU_OC_CAST)
    return FU_OK;
  fu_value *res = op->results[0];
  fu_dtype r = res->type.dtype;
  if (!fu_type_is_scalar(&res->type) || r == FU_DT_NONE || is_half(r) || is_pinned(c, res)) return FU_OK;
  for (uint32_t i = 0; i < op->n_operands; i++) {
    const fu_value *v = op->operands[i];
    if (!v->is_literal || is_half(v->type.dtype) || v->type.dtype == FU_DT_NONE) return FU_OK;
  }
  if ((uint32_t)info->num_operands != op->n_operands || !foldable(op->kind, op->operands, op->n_operands, r))
    return FU_OK;
  fu_scalar_value out;
  if (fu_interp_eval_scalar(op->kind, op->operands, op->n_operands, r, &out) != FU_OK) return FU_OK;
  fu_value *l = make_literal(c, r, out, op->loc);
  if (!l) return FU_ERR_NOMEM;
  if (!replace(c, res, l)) return FU_OK;
  debug_op(c, "fold", op, res, l);
  c->n_folded++;
  *done = true;
  return FU_OK;
}

/* ---- identities ----------------------------------------------------------------- */

static bool lit_is(const fu_value *v, int64_t k) {
  if (!v->is_literal) return false;
  if (fu_dtype_is_float(v->type.dtype)) return v->literal.f == (double)k && !signbit(v->literal.f);
  if (fu_dtype_is_int(v->type.dtype)) return v->literal.i == k;
  return false;
}

/* The value `op`'s result equals for every input, or NULL. */
static fu_value *identity_of(const fu_op *op) {
  if (op->n_results != 1) return NULL;
  const fu_type *rt = &op->results[0]->type;
  fu_value *x = NULL;
  bool int_result = fu_dtype_is_int(rt->dtype);
  switch (op->kind) {
  case FU_OP_MUL:
    if (lit_is(op->operands[1], 1)) x = op->operands[0];
    else if (lit_is(op->operands[0], 1)) x = op->operands[1];
    break;
  case FU_OP_DIV:
    if (lit_is(op->operands[1], 1)) x = op->operands[0];
    break;
  case FU_OP_ADD:
    if (!int_result) break;
    if (lit_is(op->operands[1], 0)) x = op->operands[0];
    else if (lit_is(op->operands[0], 0)) x = op->operands[1];
    break;
  case FU_OP_SUB:
    if (int_result && lit_is(op->operands[1], 0)) x = op->operands[0];
    break;
  case FU_OP_NEG: {
    fu_op *d = op->operands[0]->def;
    if (d && d->kind == FU_OP_NEG && d->n_results == 1) x = d->operands[0];
    break;
  }
  case FU_OP_SET: {
    fu_op *d = op->operands[0]->def;
    if (d && d->kind == FU_OP_SET && d->n_results == 1) x = op->operands[0];
    break;
  }
  case FU_OP_CAST:
    x = op->operands[0];
    break;
  case FU_OP_CAT: {
    uint32_t nonempty = 0;
    for (uint32_t i = 0; i < op->n_operands; i++) {
      const fu_type *t = &op->operands[i]->type;
      int64_t d = op->u.cat.dim;
      if (d < 0 || d >= t->rank) return NULL;
      if (!fu_extent_is_const(t->dims[d]) || t->dims[d].value != 0) {
        nonempty++;
        x = op->operands[i];
      }
    }
    if (nonempty != 1) x = NULL;
    break;
  }
  default: break;
  }
  if (!x || x->is_literal || !fu_type_equal(&x->type, rt)) return NULL;
  return x;
}

/* Has v a constant extent 0, so no element? */
static bool is_empty(const fu_value *v) {
  for (int32_t d = 0; d < v->type.rank; d++)
    if (fu_extent_is_const(v->type.dims[d]) && v->type.dims[d].value == 0) return true;
  return false;
}

/* A pad of an empty operand is its pad value everywhere: the op becomes
 * `full` of that value in place (its result keeps its name and type), so
 * lowering never loads the operand, which has no element to load. */
static bool try_pad_of_empty(canon *c, fu_op *op) {
  if (op->kind != FU_OP_PAD || op->n_operands != 2 || !is_empty(resolve(c, op->operands[0]))) return false;
  debug_op(c, "identity (a pad of an empty operand is full)", op, op->results[0], op->operands[1]);
  op->kind = FU_OP_FULL;
  op->operands[0] = op->operands[1];
  op->n_operands = 1;
  memset(&op->u, 0, sizeof op->u);
  c->n_ident++;
  return true;
}

static bool try_identity(canon *c, fu_op *op) {
  if (try_pad_of_empty(c, op)) return true;
  fu_value *x = identity_of(op);
  if (!x) return false;
  x = resolve(c, x);
  if (op->kind == FU_OP_CAT && is_pinned(c, op->results[0]) && x != op->results[0]) {
    /* a pinned result keeps its value: the cat becomes a copy of x */
    op->kind = FU_OP_SET;
    op->operands[0] = x;
    op->n_operands = 1;
    debug_op(c, "identity", op, op->results[0], x);
    c->n_ident++;
    return true;
  }
  if (!replace(c, op->results[0], x)) return false;
  debug_op(c, "identity", op, op->results[0], x);
  c->n_ident++;
  return true;
}

/* ---- CSE -------------------------------------------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

static uint64_t lit_bits(const fu_value *v) {
  uint64_t bits = 0;
  if (fu_dtype_is_float(v->type.dtype)) memcpy(&bits, &v->literal.f, sizeof bits);
  else if (fu_dtype_is_int(v->type.dtype)) bits = (uint64_t)v->literal.i;
  else bits = v->literal.b;
  return bits;
}

/* Literals are equal by dtype, spelling and bits (so 0.0 and -0.0 differ). */
static bool value_eq(const fu_value *a, const fu_value *b) {
  if (a == b) return true;
  return a->is_literal && b->is_literal && a->type.dtype == b->type.dtype &&
         a->literal_typed == b->literal_typed && lit_bits(a) == lit_bits(b);
}

static uint64_t value_hash(const fu_value *v) {
  if (!v->is_literal) return mix(1, (uint64_t)(uintptr_t)v);
  return mix(mix(2, (uint64_t)v->type.dtype * 2 + v->literal_typed), lit_bits(v));
}

/* Operand order matters except for commutative ops whose result does not
 * depend on it bit for bit (maximum/minimum may pick either signed zero). */
static bool swappable(const fu_op *op) {
  return op->n_operands == 2 && fu_op_has(op->kind, FU_OF_COMMUTATIVE) && op->kind != FU_OP_MAXIMUM &&
         op->kind != FU_OP_MINIMUM;
}

static uint64_t op_hash(const fu_op *op) {
  uint64_t h = mix(mix((uint64_t)op->kind, op->n_operands), op->n_results);
  if (swappable(op)) {
    uint64_t a = value_hash(op->operands[0]), b = value_hash(op->operands[1]);
    h = mix(h, a < b ? a : b);
    h = mix(h, a < b ? b : a);
  } else {
    for (uint32_t i = 0; i < op->n_operands; i++) h = mix(h, value_hash(op->operands[i]));
  }
  for (uint32_t i = 0; i < op->n_results; i++)
    h = mix(h, (uint64_t)op->results[i]->type.dtype * 64 + (uint64_t)(op->results[i]->type.rank + 1));
  return fu_op_attrs_hash(op, h);
}

static bool op_eq(const fu_op *a, const fu_op *b) {
  /* A host alias and a kernel op stay apart: strip-bookend-views decided. */
  if (a->kind != b->kind || a->n_operands != b->n_operands || a->n_results != b->n_results || a->host != b->host)
    return false;
  bool same = true;
  for (uint32_t i = 0; same && i < a->n_operands; i++) same = value_eq(a->operands[i], b->operands[i]);
  if (!same && swappable(a))
    same = value_eq(a->operands[0], b->operands[1]) && value_eq(a->operands[1], b->operands[0]);
  if (!same) return false;
  for (uint32_t i = 0; i < a->n_results; i++)
    if (!fu_type_equal(&a->results[i]->type, &b->results[i]->type)) return false;
  return fu_op_attrs_equal(a, b);
}

typedef struct cse_table {
  fu_op **slots;
  uint64_t *hashes;
  size_t cap; /* power of two, at least twice the ops of the block */
} cse_table;

static fu_status cse_init(canon *c, cse_table *t, const fu_block *b) {
  size_t n = 0;
  for (const fu_op *op = b->first; op; op = op->next) n++;
  t->cap = 16;
  while (t->cap < 2 * n) t->cap *= 2;
  t->slots = fu_mem_calloc(&c->alloc, t->cap, sizeof *t->slots);
  t->hashes = fu_mem_calloc(&c->alloc, t->cap, sizeof *t->hashes);
  if (!t->slots || !t->hashes) {
    fu_mem_free(&c->alloc, t->slots, t->cap * sizeof *t->slots);
    fu_mem_free(&c->alloc, t->hashes, t->cap * sizeof *t->hashes);
    t->slots = NULL;
    t->hashes = NULL;
    return FU_ERR_NOMEM;
  }
  return FU_OK;
}

static void cse_free(canon *c, cse_table *t) {
  fu_mem_free(&c->alloc, t->slots, t->cap * sizeof *t->slots);
  fu_mem_free(&c->alloc, t->hashes, t->cap * sizeof *t->hashes);
}

/* Find an earlier equal op, or insert `op`.  The table never fills up: it
 * has twice as many slots as the block has ops. */
static fu_op *cse_find_or_insert(cse_table *t, fu_op *op) {
  uint64_t h = op_hash(op);
  size_t j = (size_t)h & (t->cap - 1);
  while (t->slots[j]) {
    if (t->hashes[j] == h && op_eq(t->slots[j], op)) return t->slots[j];
    j = (j + 1) & (t->cap - 1);
  }
  t->slots[j] = op;
  t->hashes[j] = h;
  return NULL;
}

static bool try_cse(canon *c, cse_table *t, fu_op *op) {
  fu_op *prev = cse_find_or_insert(t, op);
  if (!prev) return false;
  for (uint32_t i = 0; i < op->n_results; i++)
    if (is_pinned(c, op->results[i])) return false;
  for (uint32_t i = 0; i < op->n_results; i++) replace(c, op->results[i], prev->results[i]);
  debug_op(c, "cse", op, op->results[0], prev->results[0]);
  c->n_cse++;
  return true;
}

/* ---- the walk ------------------------------------------------------------------ */

/* A segment that was scheduled or lowered refers to the ops of its body:
 * those are left exactly as they are. */
static bool frozen(const fu_op *seg) { return seg->u.segment.schedule || seg->u.segment.kernel; }

static bool in_frozen_segment(const fu_op *op) {
  for (const fu_block *b = op->parent; b && b->parent_op; b = b->parent_op->parent)
    if (frozen(b->parent_op)) return true;
  return false;
}

/* One forward walk over a block; segment bodies get their own CSE scope. */
static fu_status canon_block(canon *c, fu_block *b) {
  cse_table t = {NULL, NULL, 0};
  fu_status st = FU_OK;
  if (c->cse && (st = cse_init(c, &t, b)) != FU_OK) return st;
  for (fu_op *op = b->first; op && st == FU_OK; op = op->next) {
    if ((st = substitute(c, op)) != FU_OK) break;
    if (op->kind == FU_OP_SEGMENT) {
      if (op->u.segment.body && !frozen(op)) st = canon_block(c, op->u.segment.body);
      continue;
    }
    if (fu_op_has(op->kind, FU_OF_NO_CSE)) continue;
    if (c->ident && try_identity(c, op)) continue;
    if (c->fold) {
      bool done;
      if ((st = try_fold(c, op, &done)) != FU_OK || done) continue;
    }
    if (c->cse) try_cse(c, &t, op);
  }
  if (c->cse) cse_free(c, &t);
  return st;
}

/* Values that feed an output, cross a segment boundary, or are listed in a
 * segment's signature keep their identity. */
static void pin_boundaries(canon *c) {
  for (fu_op *op = fu_walk_first(&c->f->body); op; op = fu_walk_next(op)) {
    bool all = op->kind == FU_OP_OUTPUT || op->kind == FU_OP_SEGMENT;
    for (uint32_t i = 0; i < op->n_operands; i++) {
      fu_value *v = op->operands[i];
      if (v->is_literal || v->id >= c->n_values) continue;
      if (all || !v->def || v->def->parent != op->parent) c->pinned[v->id] = 1;
    }
    if (op->kind == FU_OP_SEGMENT)
      for (uint32_t i = 0; i < op->u.segment.n_outputs; i++) {
        fu_value *v = op->u.segment.outputs[i];
        if (v && !v->is_literal && v->id < c->n_values) c->pinned[v->id] = 1;
      }
  }
}

static bool removable(const fu_op *op) {
  return op->kind != FU_OP_INPUT && op->kind != FU_OP_OUTPUT && op->kind != FU_OP_SEGMENT && op->n_results > 0 &&
         !in_frozen_segment(op);
}

/* An op of the fusion's body that reads a segment's output keeps that
 * output used: the segment's interface was fixed when it was cut, and the
 * verifier requires every listed output to be used after the segment. */
static bool reads_segment_output(const canon *c, const fu_op *op) {
  if (op->parent != &c->f->body) return false;
  for (uint32_t i = 0; i < op->n_operands; i++) {
    const fu_value *v = op->operands[i];
    if (!v->is_literal && v->def && v->def->parent != &c->f->body) return true;
  }
  return false;
}

static bool op_dead(const canon *c, const fu_op *op, const uint32_t *uses) {
  if (!removable(op) || reads_segment_output(c, op)) return false;
  for (uint32_t i = 0; i < op->n_results; i++) {
    const fu_value *v = op->results[i];
    if (uses[v->id] || (v->id < c->n_values && c->pinned[v->id])) return false;
  }
  return true;
}

/* Count uses, then remove dead ops with a worklist, so a dead chain goes in
 * time linear in its length. */
static fu_status dce(canon *c) {
  fu_fusion *f = c->f;
  uint32_t nv = f->next_value_id, no = f->next_op_id;
  uint32_t *uses = fu_mem_calloc(&c->alloc, (size_t)nv + 1, sizeof *uses);
  uint8_t *gone = fu_mem_calloc(&c->alloc, (size_t)no + 1, 1);
  fu_op **work = fu_mem_calloc(&c->alloc, (size_t)no + 1, sizeof *work);
  fu_status st = FU_OK;
  if (!uses || !gone || !work) {
    st = FU_ERR_NOMEM;
    goto done;
  }
  for (fu_op *op = fu_walk_first(&f->body); op; op = fu_walk_next(op))
    for (uint32_t i = 0; i < op->n_operands; i++)
      if (!op->operands[i]->is_literal) uses[op->operands[i]->id]++;
  size_t n_work = 0;
  for (fu_op *op = fu_walk_first(&f->body); op; op = fu_walk_next(op))
    if (op_dead(c, op, uses)) {
      gone[op->id] = 1;
      work[n_work++] = op;
    }
  while (n_work > 0) {
    fu_op *op = work[--n_work];
    for (uint32_t i = 0; i < op->n_operands; i++) {
      fu_value *v = op->operands[i];
      if (v->is_literal || --uses[v->id] > 0 || !v->def || gone[v->def->id]) continue;
      if (op_dead(c, v->def, uses)) {
        gone[v->def->id] = 1;
        work[n_work++] = v->def;
      }
    }
    debug_op(c, "dce", op, op->results[0], NULL);
    fu_block_remove(op->parent, op);
    c->n_dce++;
  }
done:
  fu_mem_free(&c->alloc, uses, ((size_t)nv + 1) * sizeof *uses);
  fu_mem_free(&c->alloc, gone, (size_t)no + 1);
  fu_mem_free(&c->alloc, work, ((size_t)no + 1) * sizeof *work);
  return st;
}

static fu_status canon_fusion(canon *c, fu_fusion *f) {
  c->f = f;
  if (c->reciprocal) {
    fu_status rs = fu_canon_reciprocals(f, &f->body, c->dbg, &c->n_reciprocal);
    if (rs != FU_OK) return rs;
  }
  c->n_values = f->next_value_id;
  c->repl = fu_mem_calloc(&c->alloc, (size_t)c->n_values + 1, sizeof *c->repl);
  c->pinned = fu_mem_calloc(&c->alloc, (size_t)c->n_values + 1, 1);
  fu_status st = FU_OK;
  if (!c->repl || !c->pinned) st = FU_ERR_NOMEM;
  if (st == FU_OK) {
    pin_boundaries(c);
    if (c->fold || c->ident || c->cse) st = canon_block(c, &f->body);
  }
  if (st == FU_OK && c->dce) st = dce(c);
  fu_mem_free(&c->alloc, c->repl, ((size_t)c->n_values + 1) * sizeof *c->repl);
  fu_mem_free(&c->alloc, c->pinned, (size_t)c->n_values + 1);
  c->repl = NULL;
  c->pinned = NULL;
  return st;
}

static fu_status run_canonicalize(fu_module *m, fu_pass_context *ctx) {
  canon c;
  memset(&c, 0, sizeof c);
  c.m = m;
  c.alloc = m->alloc;
  fu_status st;
  if ((st = bool_option(ctx, "fold", &c.fold)) != FU_OK || (st = bool_option(ctx, "identities", &c.ident)) != FU_OK ||
      (st = bool_option(ctx, "cse", &c.cse)) != FU_OK || (st = bool_option(ctx, "dce", &c.dce)) != FU_OK ||
      (st = bool_option(ctx, "reciprocal", &c.reciprocal)) != FU_OK)
    return st;
  c.dbg = fu_pass_debug_enabled(ctx, "canonicalize") ? ctx->debug_out : NULL;
  fu_diag_init(&c.quiet, m->alloc);
  c.quiet.handler = quiet_handler;
  fu_strbuf_init(&c.sb, m->alloc);
  for (fu_fusion *f = m->first; f && st == FU_OK; f = f->next) st = canon_fusion(&c, f);
  if (c.dbg)
    fprintf(c.dbg, "[canonicalize] folded %u, identities %u, cse %u, removed %u, reciprocals %u\n", c.n_folded,
            c.n_ident, c.n_cse, c.n_dce, c.n_reciprocal);
  if (st == FU_ERR_NOMEM) fu_error(ctx->diag, fu_loc_none(), "canonicalize: out of memory");
  fu_mem_free(&c.alloc, c.undo_idx, c.undo_cap * sizeof *c.undo_idx);
  fu_mem_free(&c.alloc, c.undo_val, c.undo_cap * sizeof *c.undo_val);
  fu_mem_free(&c.alloc, c.types, c.types_cap * sizeof *c.types);
  fu_strbuf_free(&c.sb);
  return st;
}
