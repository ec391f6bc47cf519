/* Unit tests for shape/dtype inference and the verifier: every op class,
 * every promotion rule, and the error messages for bad IR. */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fuser/ir.h"
#include "fuser/verify.h"
#include "harness.h"

/* ---- fixture: a module, a fusion, and captured diagnostics -------------- */

#define MAX_DIAGS 64

typedef struct captured {
  fu_severity sev;
  uint32_t line;
  char msg[512];
} captured;

typedef struct fixture {
  fu_module *m;
  fu_fusion *f;
  fu_diag_engine diag;
  captured d[MAX_DIAGS];
  int n;
  uint32_t next_line;
} fixture;

static void capture(void *user, const fu_diagnostic *d) {
  fixture *x = user;
  if (x->n >= MAX_DIAGS) return;
  x->d[x->n].sev = d->severity;
  x->d[x->n].line = d->loc.line;
  snprintf(x->d[x->n].msg, sizeof x->d[x->n].msg, "%s", d->message);
  x->n++;
}

static int n_names;

static fixture *fx_new(void) {
  fixture *x = calloc(1, sizeof *x);
  x->m = fu_module_new(fu_default_allocator());
  fu_loc l = {NULL, 1000, 1};
  x->f = fu_fusion_new(x->m, "f", l);
  fu_diag_init(&x->diag, fu_default_allocator());
  x->diag.handler = capture;
  x->diag.user = x;
  x->next_line = 1;
  n_names = 0;
  return x;
}

static void fx_free(fixture *x) {
  fu_module_free(x->m);
  free(x);
}

static void fx_clear(fixture *x) {
  x->n = 0;
  x->diag.n_errors = 0;
}

/* Each op gets its own line so notes can be checked by line. */
static fu_loc next_loc(fixture *x) {
  fu_loc l = {NULL, x->next_line++, 1};
  return l;
}

/* Parse a tiny type spelling: "f32[N, 3]", "i64", "f32[]". */
static fu_type ty(fixture *x, const char *s) {
  fu_type t = {FU_DT_NONE, FU_SCALAR_RANK, NULL};
  const char *br = strchr(s, '[');
  size_t dl = br ? (size_t)(br - s) : strlen(s);
  t.dtype = fu_dtype_from_name(s, dl);
  if (!br) return t;
  fu_extent dims[FU_MAX_RANK];
  int32_t r = 0;
  const char *p = br + 1;
  while (*p && *p != ']') {
    while (*p == ' ' || *p == ',') p++;
    if (*p == ']') break;
    const char *q = p;
    while (*q && *q != ',' && *q != ']') q++;
    if ((*p >= '0' && *p <= '9') || *p == '-') {
      dims[r].value = strtoll(p, NULL, 10);
      dims[r].sym = NULL;
    } else {
      dims[r].value = 0;
      dims[r].sym = fu_module_intern(x->m, p, (size_t)(q - p));
    }
    r++;
    p = q;
  }
  t.rank = r;
  t.dims = fu_dims_copy(x->m, dims, r);
  return t;
}

/* The text spelling of a type, for comparisons. */
static const char *tstr(const fu_type *t) {
  static char buf[8][256];
  static int k;
  char *b = buf[k++ & 7];
  size_t n = (size_t)snprintf(b, 256, "%s", fu_dtype_name(t->dtype));
  if (t->rank >= 0) {
    n += (size_t)snprintf(b + n, 256 - n, "[");
    for (int32_t i = 0; i < t->rank; i++) {
      if (t->dims[i].sym)
        n += (size_t)snprintf(b + n, 256 - n, "%s%s", i ? ", " : "", t->dims[i].sym);
      else
        n += (size_t)snprintf(b + n, 256 - n, "%s%" PRId64, i ? ", " : "", t->dims[i].value);
    }
    snprintf(b + n, 256 - n, "]");
  }
  return b;
}

static fu_value *input(fixture *x, const char *type) {
  fu_op *op = fu_op_new(x->f, FU_OP_INPUT, NULL, 0, 1, next_loc(x));
  op->results[0]->type = ty(x, type);
  char name[16];
  snprintf(name, sizeof name, "T%d", n_names++);
  fu_value_set_name(x->m, op->results[0], name);
  fu_block_append(&x->f->body, op);
  return op->results[0];
}

/* An op appended to the fusion, its operands given; results unnamed-typed
 * (callers then infer or state types). */
static fu_op *op_new(fixture *x, fu_op_kind k, int n, fu_value *a, fu_value *b, fu_value *c) {
  fu_value *ops[3] = {a, b, c};
  uint32_t nres = k == FU_OP_VAR_MEAN ? 2 : k == FU_OP_OUTPUT ? 0 : 1;
  fu_op *op = fu_op_new(x->f, k, ops, (uint32_t)n, nres, next_loc(x));
  for (uint32_t i = 0; i < nres; i++) {
    char name[16];
    snprintf(name, sizeof name, "T%d", n_names++);
    fu_value_set_name(x->m, op->results[i], name);
  }
  fu_block_append(&x->f->body, op);
  return op;
}

/* Infer the op's result types, store them as its stated types, and return
 * the first one spelled out, or "error: <first message>". */
static const char *infer(fixture *x, fu_op *op) {
  static char buf[4][600];
  static int k;
  char *b = buf[k++ & 3];
  fx_clear(x);
  fu_type out[2];
  fu_status s = fu_infer_types(op, out, &x->diag);
  if (s != FU_OK) {
    snprintf(b, 600, "error: %s", x->n ? x->d[0].msg : "(no message)");
    return b;
  }
  for (uint32_t i = 0; i < op->n_results; i++) op->results[i]->type = out[i];
  snprintf(b, 600, "%s", tstr(&out[0]));
  return b;
}

static const char *un(fixture *x, fu_op_kind k, fu_value *a) { return infer(x, op_new(x, k, 1, a, NULL, NULL)); }
static const char *bin(fixture *x, fu_op_kind k, fu_value *a, fu_value *b) {
  return infer(x, op_new(x, k, 2, a, b, NULL));
}
static const char *tern(fixture *x, fu_op_kind k, fu_value *a, fu_value *b, fu_value *c) {
  return infer(x, op_new(x, k, 3, a, b, c));
}

/* An op whose result type is stated (reshape, expand, ...). */
static fu_op *stated_op(fixture *x, fu_op_kind k, int n, fu_value *a, fu_value *b, const char *type) {
  fu_op *op = op_new(x, k, n, a, b, NULL);
  if (type) op->results[0]->type = ty(x, type);
  return op;
}

static fu_int_list ilist(fixture *x, int n, const int64_t *v) { return fu_int_list_copy(x->m, v, (uint32_t)n); }
#define IL(x, ...) ilist((x), (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
#define IL0 ((fu_int_list){NULL, 0})

static fu_value *lit_f(fixture *x, double v) { return fu_literal_f(x->f, FU_DT_F64, v); }
static fu_value *lit_i(fixture *x, int64_t v) { return fu_literal_i(x->f, FU_DT_I64, v); }
static fu_value *typed_f(fixture *x, fu_dtype dt, double v) {
  fu_value *l = fu_literal_f(x->f, dt, v);
  l->literal_typed = true;
  return l;
}
static fu_value *typed_i(fixture *x, fu_dtype dt, int64_t v) {
  fu_value *l = fu_literal_i(x->f, dt, v);
  l->literal_typed = true;
  return l;
}

static bool has_diag(fixture *x, fu_severity sev, const char *substr) {
  for (int i = 0; i < x->n; i++)
    if (x->d[i].sev == sev && strstr(x->d[i].msg, substr)) return true;
  return false;
}

static void dump_diags(fixture *x) {
  for (int i = 0; i < x->n; i++) fprintf(stderr, "  [%s@%u] %s\n", fu_severity_name(x->d[i].sev), x->d[i].line, x->d[i].msg);
}

#define CHECK_DIAG(x, sev, substr)                 \
  do {                                             \
    bool ok_ = has_diag((x), (sev), (substr));     \
    CHECK(ok_ && #substr);                         \
    if (!ok_) dump_diags(x);                       \
  } while (0)

static fu_status verify(fixture *x) {
  fx_clear(x);
  return fu_verify_fusion(x->f, &x->diag);
}

static void output(fixture *x, fu_value *v) { op_new(x, FU_OP_OUTPUT, 1, v, NULL, NULL); }

/* ---- unary --------------------------------------------------------------- */

static void test_unary(void) {
  fixture *x = fx_new();
  fu_value *f32 = input(x, "f32[N, 3]"), *i32 = input(x, "i32[4]"), *b = input(x, "bool[2]");
  fu_value *f16 = input(x, "f16[8]"), *bf = input(x, "bf16[8]"), *s = input(x, "f64");
  CHECK_STR(un(x, FU_OP_EXP, f32), "f32[N, 3]");
  CHECK_STR(un(x, FU_OP_EXP, i32), "f32[4]");
  CHECK_STR(un(x, FU_OP_ERF, b), "f32[2]");
  CHECK_STR(un(x, FU_OP_SQRT, f16), "f16[8]");
  CHECK_STR(un(x, FU_OP_ABS, i32), "i32[4]");
  CHECK_STR(un(x, FU_OP_NEG, bf), "bf16[8]");
  CHECK_STR(un(x, FU_OP_RELU, f16), "f16[8]");
  CHECK_STR(un(x, FU_OP_ISNAN, f16), "bool[8]");
  CHECK_STR(un(x, FU_OP_LOGICAL_NOT, i32), "bool[4]");
  CHECK_STR(un(x, FU_OP_BITWISE_NOT, i32), "i32[4]");
  CHECK_STR(un(x, FU_OP_BITWISE_NOT, b), "bool[2]");
  CHECK_STR(un(x, FU_OP_BITWISE_NOT, f32),
            "error: 'bitwise_not': operand 0 '%T0' of type f32[N, 3] must be an integer or bool");
  CHECK_STR(un(x, FU_OP_SET, bf), "bf16[8]");
  CHECK_STR(un(x, FU_OP_EXP, s), "f64");
  CHECK_STR(un(x, FU_OP_TANH, lit_i(x, 2)), "f32");
  CHECK_STR(un(x, FU_OP_FLOOR, i32), "i32[4]");
  fx_free(x);
}

/* ---- binary: promotion and broadcasting ---------------------------------- */

static void test_binary_promotion(void) {
  fixture *x = fx_new();
  fu_value *f32 = input(x, "f32[4]"), *f64 = input(x, "f64[4]"), *f16 = input(x, "f16[4]");
  fu_value *bf = input(x, "bf16[4]"), *i32 = input(x, "i32[4]"), *i64 = input(x, "i64[4]");
  fu_value *b = input(x, "bool[4]");
  fu_value *sf64 = input(x, "f64"), *si64 = input(x, "i64"), *sf32 = input(x, "f32"), *si32 = input(x, "i32");
  /* tensors promote among themselves */
  CHECK_STR(bin(x, FU_OP_ADD, f32, f64), "f64[4]");
  CHECK_STR(bin(x, FU_OP_ADD, f16, bf), "f32[4]");
  CHECK_STR(bin(x, FU_OP_ADD, f16, f32), "f32[4]");
  CHECK_STR(bin(x, FU_OP_ADD, i32, i64), "i64[4]");
  CHECK_STR(bin(x, FU_OP_ADD, b, i32), "i32[4]");
  CHECK_STR(bin(x, FU_OP_MUL, i64, f16), "f16[4]");
  CHECK_STR(bin(x, FU_OP_ADD, b, b), "bool[4]");
  /* weak scalars: same category keeps the tensor's dtype */
  CHECK_STR(bin(x, FU_OP_MUL, f32, lit_f(x, 0.5)), "f32[4]");
  CHECK_STR(bin(x, FU_OP_MUL, lit_f(x, 0.5), bf), "bf16[4]");
  CHECK_STR(bin(x, FU_OP_ADD, i32, lit_i(x, 3)), "i32[4]");
  CHECK_STR(bin(x, FU_OP_ADD, f16, sf64), "f16[4]");
  CHECK_STR(bin(x, FU_OP_ADD, i32, si64), "i32[4]");
  CHECK_STR(bin(x, FU_OP_ADD, f16, typed_f(x, FU_DT_F64, 2.0)), "f16[4]");
  /* a higher-category scalar: int tensor with float scalar gives f32 */
  CHECK_STR(bin(x, FU_OP_MUL, i32, lit_f(x, 0.5)), "f32[4]");
  CHECK_STR(bin(x, FU_OP_MUL, i64, sf64), "f32[4]");
  CHECK_STR(bin(x, FU_OP_MUL, i64, typed_f(x, FU_DT_F64, 0.5)), "f32[4]");
  CHECK_STR(bin(x, FU_OP_ADD, b, lit_f(x, 1.0)), "f32[4]");
  /* bool tensor with an int scalar takes the scalar's int dtype */
  CHECK_STR(bin(x, FU_OP_ADD, b, lit_i(x, 3)), "i64[4]");
  CHECK_STR(bin(x, FU_OP_ADD, b, typed_i(x, FU_DT_I32, 3)), "i32[4]");
  CHECK_STR(bin(x, FU_OP_ADD, b, fu_literal_b(x->f, true)), "bool[4]");
  /* scalar-only ops promote normally */
  CHECK_STR(bin(x, FU_OP_ADD, sf64, lit_f(x, 1.0)), "f64");
  CHECK_STR(bin(x, FU_OP_ADD, si64, lit_f(x, 1.0)), "f64");
  CHECK_STR(bin(x, FU_OP_ADD, sf32, lit_f(x, 1.0)), "f64");
  CHECK_STR(bin(x, FU_OP_ADD, si32, lit_i(x, 1)), "i64");
  CHECK_STR(bin(x, FU_OP_ADD, si32, typed_i(x, FU_DT_I32, 1)), "i32");
  /* float-result, bool-result, int-only ops */
  CHECK_STR(bin(x, FU_OP_ATAN2, i32, i32), "f32[4]");
  CHECK_STR(bin(x, FU_OP_ATAN2, f16, f16), "f16[4]");
  CHECK_STR(bin(x, FU_OP_ATAN2, si64, lit_i(x, 1)), "f32");
  CHECK_STR(bin(x, FU_OP_EQ, f32, f64), "bool[4]");
  CHECK_STR(bin(x, FU_OP_LT, i32, lit_f(x, 0.5)), "bool[4]");
  CHECK_STR(bin(x, FU_OP_LOGICAL_AND, b, i32), "bool[4]");
  CHECK_STR(bin(x, FU_OP_BITWISE_AND, i32, b), "i32[4]");
  CHECK_STR(bin(x, FU_OP_BITWISE_XOR, i64, lit_i(x, 7)), "i64[4]");
  CHECK_STR(bin(x, FU_OP_BITWISE_OR, i32, f32),
            "error: 'bitwise_or': operand 1 '%T0' of type f32[4] must be an integer or bool");
  CHECK_STR(bin(x, FU_OP_BITWISE_AND, i32, lit_f(x, 0.5)),
            "error: 'bitwise_and': operand 1 '0.5' of type f64 must be an integer or bool");
  /* int division truncates and stays int */
  CHECK_STR(bin(x, FU_OP_DIV, i32, i32), "i32[4]");
  CHECK_STR(bin(x, FU_OP_DIV, i32, lit_f(x, 2.0)), "f32[4]");
  CHECK_STR(bin(x, FU_OP_POW, f32, lit_i(x, 2)), "f32[4]");
  fx_free(x);
}

static void test_binary_shapes(void) {
  fixture *x = fx_new();
  n_names = 0;
  fu_value *a = input(x, "f32[N, 3]");  /* T0 */
  fu_value *b = input(x, "f32[1, 3]");  /* T1 */
  fu_value *c = input(x, "f32[N, 1]");  /* T2 */
  fu_value *d = input(x, "f32[N, 4]");  /* T3 */
  fu_value *e = input(x, "f32[4, 3, 2]"); /* T4 */
  fu_value *g = input(x, "f32[M, 3]");  /* T5 */
  fu_value *h = input(x, "f32[1, 1]");  /* T6 */
  CHECK_STR(bin(x, FU_OP_ADD, a, b), "f32[N, 3]");
  CHECK_STR(bin(x, FU_OP_ADD, b, a), "f32[N, 3]");
  CHECK_STR(bin(x, FU_OP_ADD, c, b), "f32[N, 3]");
  CHECK_STR(bin(x, FU_OP_ADD, h, h), "f32[1, 1]");
  CHECK_STR(bin(x, FU_OP_SUB, a, lit_f(x, 1.0)), "f32[N, 3]");
  CHECK_STR(bin(x, FU_OP_ADD, a, d),
            "error: 'add': operand 1 '%T3' of type f32[N, 4] does not broadcast with operand 0 '%T0' of type f32[N, "
            "3] (dim 1: 4 vs 3)");
  CHECK(has_diag(x, FU_SEV_NOTE, "'%T3' is defined here"));
  CHECK_EQ_INT(x->d[1].line, 4); /* the note points at T3's input line */
  CHECK_STR(bin(x, FU_OP_MUL, a, g),
            "error: 'mul': operand 1 '%T5' of type f32[M, 3] does not broadcast with operand 0 '%T0' of type f32[N, "
            "3] (dim 0: M vs N)");
  CHECK_STR(bin(x, FU_OP_ADD, a, e),
            "error: 'add': operand 1 '%T4' of type f32[4, 3, 2] has rank 3, but operand 0 '%T0' of type f32[N, 3] has "
            "rank 2");
  /* the broadcast extent comes from the operand that set it */
  CHECK_STR(tern(x, FU_OP_WHERE, input(x, "bool[1, 1]"), c, d), "f32[N, 4]");
  CHECK_STR(tern(x, FU_OP_CLAMP, b, c, g),
            "error: 'clamp': operand 2 '%T5' of type f32[M, 3] does not broadcast with operand 1 '%T2' of type f32[N, "
            "1] (dim 0: M vs N)");
  fx_free(x);
}

static void test_ternary(void) {
  fixture *x = fx_new();
  n_names = 0;
  fu_value *cond = input(x, "bool[4]"), *f32 = input(x, "f32[4]"), *f16 = input(x, "f16[4]");
  fu_value *i32 = input(x, "i32[4]"), *sb = input(x, "bool");
  CHECK_STR(tern(x, FU_OP_WHERE, cond, f32, lit_f(x, 0.0)), "f32[4]");
  CHECK_STR(tern(x, FU_OP_WHERE, cond, f16, f32), "f32[4]");
  CHECK_STR(tern(x, FU_OP_WHERE, cond, i32, lit_f(x, 0.5)), "f32[4]");
  CHECK_STR(tern(x, FU_OP_WHERE, cond, lit_i(x, 1), lit_f(x, 2.5)), "f64[4]");
  CHECK_STR(tern(x, FU_OP_WHERE, sb, f16, lit_f(x, 0.0)), "f16[4]");
  CHECK_STR(tern(x, FU_OP_WHERE, f32, f32, f32), "error: 'where': condition '%T1' of type f32[4] must be bool");
  CHECK_STR(tern(x, FU_OP_CLAMP, i32, lit_i(x, 0), lit_i(x, 10)), "i32[4]");
  CHECK_STR(tern(x, FU_OP_CLAMP, f16, lit_f(x, -1.0), lit_f(x, 1.0)), "f16[4]");
  CHECK_STR(tern(x, FU_OP_LERP, f16, f16, lit_f(x, 0.5)), "f16[4]");
  CHECK_STR(tern(x, FU_OP_LERP, f16, f32, lit_f(x, 0.5)), "f32[4]");
  CHECK_STR(tern(x, FU_OP_LERP, i32, i32, lit_i(x, 1)), "f32[4]");
  fx_free(x);
}

static void test_cast(void) {
  fixture *x = fx_new();
  n_names = 0;
  fu_value *a = input(x, "f32[4, 3]");
  CHECK_STR(infer(x, stated_op(x, FU_OP_CAST, 1, a, NULL, "f16[4, 3]")), "f16[4, 3]");
  CHECK_STR(infer(x, stated_op(x, FU_OP_CAST, 1, lit_f(x, 1.0), NULL, "i32")), "i32");
  CHECK_STR(infer(x, stated_op(x, FU_OP_CAST, 1, a, NULL, "f16[4, 4]")),
            "error: 'cast': result type f16[4, 4] must have the shape of operand 0 '%T0' of type f32[4, 3]");
  CHECK_STR(infer(x, stated_op(x, FU_OP_CAST, 1, a, NULL, NULL)), "error: 'cast' requires a stated result type");
  fx_free(x);
}

/* ---- reductions ----------------------------------------------------------- */

static fu_op *reduce(fixture *x, fu_op_kind k, fu_value *a, fu_int_list axes, bool keepdim, fu_dtype dt) {
  fu_op *op = op_new(x, k, 1, a, NULL, NULL);
  op->u.reduce.axes = axes;
  op->u.reduce.keepdim = keepdim;
  op->u.reduce.dtype = dt;
  return op;
}

static fu_op *variance(fixture *x, fu_op_kind k, fu_value *a, fu_int_list axes, bool keepdim, int64_t corr) {
  fu_op *op = op_new(x, k, 1, a, NULL, NULL);
  op->u.variance.axes = axes;
  op->u.variance.keepdim = keepdim;
  op->u.variance.correction = corr;
  return op;
}

static void test_reductions(void) {
  fixture *x = fx_new();
  n_names = 0;
  fu_value *a = input(x, "f32[N, 3]"), *i = input(x, "i32[4, 5]"), *b = input(x, "bool[4]");
  fu_value *h = input(x, "bf16[2, 3, 4]");
  CHECK_STR(infer(x, reduce(x, FU_OP_SUM, a, IL(x, 1), false, FU_DT_NONE)), "f32[N]");
  CHECK_STR(infer(x, reduce(x, FU_OP_SUM, a, IL(x, 0, 1), false, FU_DT_NONE)), "f32[]");
  CHECK_STR(infer(x, reduce(x, FU_OP_MAX, a, IL(x, 1), true, FU_DT_NONE)), "f32[N, 1]");
  CHECK_STR(infer(x, reduce(x, FU_OP_SUM, h, IL(x, 0, 2), true, FU_DT_NONE)), "bf16[1, 3, 1]");
  CHECK_STR(infer(x, reduce(x, FU_OP_SUM, h, IL(x, 2), false, FU_DT_F32)), "f32[2, 3]");
  CHECK_STR(infer(x, reduce(x, FU_OP_SUM, i, IL(x, 0), false, FU_DT_NONE)), "i64[5]");
  CHECK_STR(infer(x, reduce(x, FU_OP_PROD, b, IL(x, 0), false, FU_DT_NONE)), "i64[]");
  CHECK_STR(infer(x, reduce(x, FU_OP_SUM, b, IL(x, 0), false, FU_DT_NONE)), "i64[]");
  CHECK_STR(infer(x, reduce(x, FU_OP_MAX, i, IL(x, 1), false, FU_DT_NONE)), "i32[4]");
  CHECK_STR(infer(x, reduce(x, FU_OP_MIN, b, IL(x, 0), false, FU_DT_NONE)), "bool[]");
  CHECK_STR(infer(x, reduce(x, FU_OP_SUM, a, IL(x, 2), false, FU_DT_NONE)),
            "error: 'sum': axis 2 is out of range for operand '%T0' of type f32[N, 3] (rank 2)");
  CHECK_STR(infer(x, reduce(x, FU_OP_SUM, a, IL(x, -1), false, FU_DT_NONE)),
            "error: 'sum': axis -1 is out of range for operand '%T0' of type f32[N, 3] (rank 2)");
  CHECK_STR(infer(x, reduce(x, FU_OP_MAX, a, IL(x, 1, 0), false, FU_DT_NONE)),
            "error: 'max': axes must be sorted and unique, got [1, 0]");
  CHECK_STR(infer(x, reduce(x, FU_OP_SUM, a, IL(x, 1, 1), false, FU_DT_NONE)),
            "error: 'sum': axes must be sorted and unique, got [1, 1]");
  CHECK_STR(infer(x, reduce(x, FU_OP_SUM, lit_f(x, 1.0), IL0, false, FU_DT_NONE)),
            "error: 'sum': operand 0 '1.0' of type f64 must be a tensor");

  /* var / var_mean */
  CHECK_STR(infer(x, variance(x, FU_OP_VAR, a, IL(x, 0, 1), false, 1)), "f32[]");
  fu_op *vm = variance(x, FU_OP_VAR_MEAN, h, IL(x, 1), true, 0);
  CHECK_STR(infer(x, vm), "bf16[2, 1, 4]");
  CHECK_STR(tstr(&vm->results[1]->type), "bf16[2, 1, 4]");
  CHECK_STR(infer(x, variance(x, FU_OP_VAR, i, IL(x, 0), false, 1)),
            "error: 'var': operand 0 '%T1' of type i32[4, 5] must be floating-point");
  CHECK_STR(infer(x, variance(x, FU_OP_VAR, a, IL(x, 0), false, -1)), "error: 'var': correction -1 must be >= 0");
  CHECK_STR(infer(x, variance(x, FU_OP_VAR_MEAN, a, IL(x, 3), false, 1)),
            "error: 'var_mean': axis 3 is out of range for operand '%T0' of type f32[N, 3] (rank 2)");
  fx_free(x);
}

/* ---- shape ops ------------------------------------------------------------ */

static fu_op *bid(fixture *x, fu_value *a, fu_int_list dims, const char *type) {
  fu_op *op = stated_op(x, FU_OP_BROADCAST_IN_DIM, 1, a, NULL, type);
  op->u.broadcast_in_dim.broadcast_dims = dims;
  return op;
}

static void test_broadcasts(void) {
  fixture *x = fx_new();
  n_names = 0;
  fu_value *a = input(x, "f32[3072]"), *o = input(x, "f32[1, 3]"), *s = input(x, "f32[N, 3]");
  CHECK_STR(infer(x, bid(x, a, IL(x, 1), "f32[4, 3072]")), "f32[4, 3072]");
  CHECK_STR(infer(x, bid(x, a, IL(x, 0), "f32[3072, 1, 5]")), "f32[3072, 1, 5]");
  CHECK_STR(infer(x, bid(x, o, IL(x, 0, 2), "f32[7, 2, 3]")), "f32[7, 2, 3]"); /* extent 1 expands */
  CHECK_STR(infer(x, bid(x, s, IL(x, 1, 2), "f32[2, N, 3]")), "f32[2, N, 3]");
  CHECK_STR(infer(x, bid(x, a, IL(x, 1), "f32[4, 3071]")),
            "error: 'broadcast_in_dim': operand dim 0 of extent 3072 cannot map to result dim 1 of extent 3071 "
            "(operand '%T0' of type f32[3072], result type f32[4, 3071])");
  CHECK_STR(infer(x, bid(x, s, IL(x, 1, 0), "f32[3, N]")),
            "error: 'broadcast_in_dim': broadcast_dims must be strictly increasing, got [1, 0]");
  CHECK_STR(infer(x, bid(x, a, IL(x, 2), "f32[4, 3072]")),
            "error: 'broadcast_in_dim': broadcast_dims entry 2 is out of range for result type f32[4, 3072] (rank 2)");
  CHECK_STR(infer(x, bid(x, a, IL(x, 0, 1), "f32[3072, 4]")),
            "error: 'broadcast_in_dim': broadcast_dims has 2 entries, but operand '%T0' of type f32[3072] has rank 1");
  CHECK_STR(infer(x, bid(x, a, IL(x, 1), "f16[4, 3072]")),
            "error: 'broadcast_in_dim': result type f16[4, 3072] must have the dtype of operand 0 '%T0' of type f32[3072]");
  CHECK_STR(infer(x, bid(x, a, IL(x, 1), "f32")), "error: 'broadcast_in_dim': result type f32 must be a tensor type");
  CHECK_STR(infer(x, bid(x, a, IL(x, 1), NULL)), "error: 'broadcast_in_dim' requires a stated result type");

  /* broadcast */
  fu_op *br = op_new(x, FU_OP_BROADCAST, 1, a, NULL, NULL);
  bool flags[3] = {true, false, true};
  br->u.broadcast.is_broadcast = flags;
  br->u.broadcast.n = 3;
  CHECK_STR(infer(x, br), "f32[1, 3072, 1]");
  fu_op *br2 = op_new(x, FU_OP_BROADCAST, 1, a, NULL, NULL);
  bool flags2[2] = {false, false};
  br2->u.broadcast.is_broadcast = flags2;
  br2->u.broadcast.n = 2;
  CHECK_STR(infer(x, br2),
            "error: 'broadcast': is_broadcast_dim has 2 false entries, but operand '%T0' of type f32[3072] has rank 1");

  /* expand */
  CHECK_STR(infer(x, stated_op(x, FU_OP_EXPAND, 1, o, NULL, "f32[4, 3]")), "f32[4, 3]");
  CHECK_STR(infer(x, stated_op(x, FU_OP_EXPAND, 1, o, NULL, "f32[N, 3]")), "f32[N, 3]");
  CHECK_STR(infer(x, stated_op(x, FU_OP_EXPAND, 1, s, NULL, "f32[4, 3]")),
            "error: 'expand': dim 0 of operand '%T2' of type f32[N, 3] has extent N and cannot expand to 4 (result "
            "type f32[4, 3])");
  CHECK_STR(infer(x, stated_op(x, FU_OP_EXPAND, 1, o, NULL, "f32[2, 4, 3]")),
            "error: 'expand': result type f32[2, 4, 3] has rank 3, but operand '%T1' of type f32[1, 3] has rank 2");
  fx_free(x);
}

static void test_reshape_permute_squeeze(void) {
  fixture *x = fx_new();
  n_names = 0;
  fu_value *a = input(x, "f32[8192, 3072]"), *s = input(x, "f32[N, 6]"), *z = input(x, "f32[0, N]");
  fu_value *t = input(x, "f32[64, 128, 3072]"), *o = input(x, "f32[1, 3, 1]");
  CHECK_STR(infer(x, stated_op(x, FU_OP_RESHAPE, 1, a, NULL, "f32[64, 128, 3072]")), "f32[64, 128, 3072]");
  CHECK_STR(infer(x, stated_op(x, FU_OP_RESHAPE, 1, s, NULL, "f32[2, N, 3]")), "f32[2, N, 3]");
  CHECK_STR(infer(x, stated_op(x, FU_OP_RESHAPE, 1, z, NULL, "f32[0]")), "f32[0]");
  CHECK_STR(infer(x, stated_op(x, FU_OP_RESHAPE, 1, a, NULL, "f32[8192, 3073]")),
            "error: 'reshape': result type f32[8192, 3073] has a different element count than operand '%T0' of "
            "type f32[8192, 3072]");
  CHECK_STR(infer(x, stated_op(x, FU_OP_RESHAPE, 1, s, NULL, "f32[M, 6]")),
            "error: 'reshape': result type f32[M, 6] has a different element count than operand '%T1' of type f32[N, "
            "6]");
  CHECK_STR(infer(x, stated_op(x, FU_OP_RESHAPE, 1, s, NULL, "f32[N, N, 6]")),
            "error: 'reshape': result type f32[N, N, 6] has a different element count than operand '%T1' of type "
            "f32[N, 6]");
  CHECK_STR(infer(x, stated_op(x, FU_OP_RESHAPE, 1, a, NULL, "f64[8192, 3072]")),
            "error: 'reshape': result type f64[8192, 3072] must have the dtype of operand 0 '%T0' of type f32[8192, "
            "3072]");
  CHECK_STR(infer(x, stated_op(x, FU_OP_RESHAPE, 1, a, NULL, "f32[-1, 3072]")),
            "error: 'reshape': type f32[-1, 3072] has a negative extent in dim 0");

  fu_op *p = op_new(x, FU_OP_PERMUTE, 1, t, NULL, NULL);
  p->u.permute.dims = IL(x, 0, 2, 1);
  CHECK_STR(infer(x, p), "f32[64, 3072, 128]");
  p = op_new(x, FU_OP_PERMUTE, 1, s, NULL, NULL);
  p->u.permute.dims = IL(x, 1, 0);
  CHECK_STR(infer(x, p), "f32[6, N]");
  p = op_new(x, FU_OP_PERMUTE, 1, t, NULL, NULL);
  p->u.permute.dims = IL(x, 0, 0, 1);
  CHECK_STR(infer(x, p), "error: 'permute': dims [0, 0, 1] is not a permutation of 0..2");
  p = op_new(x, FU_OP_PERMUTE, 1, t, NULL, NULL);
  p->u.permute.dims = IL(x, 0, 1);
  CHECK_STR(infer(x, p), "error: 'permute': dims has 2 entries, but operand '%T3' of type f32[64, 128, 3072] has rank 3");

  fu_op *q = op_new(x, FU_OP_SQUEEZE, 1, o, NULL, NULL);
  q->u.squeeze.dims = IL(x, 0, 2);
  CHECK_STR(infer(x, q), "f32[3]");
  q = op_new(x, FU_OP_SQUEEZE, 1, s, NULL, NULL);
  q->u.squeeze.dims = IL(x, 0);
  CHECK_STR(infer(x, q), "error: 'squeeze': dim 0 of operand '%T1' of type f32[N, 6] has extent N, not 1");
  q = op_new(x, FU_OP_SQUEEZE, 1, o, NULL, NULL);
  q->u.squeeze.dims = IL(x, 3);
  CHECK_STR(infer(x, q), "error: 'squeeze': dim 3 is out of range for operand '%T4' of type f32[1, 3, 1] (rank 3)");
  fx_free(x);
}

static fu_op *slice(fixture *x, fu_value *a, fu_int_list st, fu_int_list en, fu_int_list sp) {
  fu_op *op = op_new(x, FU_OP_SLICE, 1, a, NULL, NULL);
  op->u.slice.starts = st;
  op->u.slice.ends = en;
  op->u.slice.steps = sp;
  return op;
}

static fu_op *cat(fixture *x, fu_value **vals, uint32_t n, int64_t dim) {
  fu_op *op = fu_op_new(x->f, FU_OP_CAT, vals, n, 1, next_loc(x));
  fu_value_set_name(x->m, op->results[0], "cat");
  fu_block_append(&x->f->body, op);
  op->u.cat.dim = dim;
  return op;
}

static fu_op *pad(fixture *x, fu_value *a, fu_value *v, fu_int_list w) {
  fu_op *op = op_new(x, FU_OP_PAD, 2, a, v, NULL);
  op->u.pad.widths = w;
  return op;
}

static void test_resize(void) {
  fixture *x = fx_new();
  n_names = 0;
  fu_value *a = input(x, "f32[4096]"), *t = input(x, "f32[10, 7]"), *s = input(x, "f32[N, 4]");
  fu_value *u = input(x, "f16[2, 3]"), *v = input(x, "f32[2, 4]"), *w = input(x, "f32[2, 3, 1]");
  CHECK_STR(infer(x, slice(x, a, IL(x, 0), IL(x, 2048), IL(x, 1))), "f32[2048]");
  CHECK_STR(infer(x, slice(x, a, IL(x, 2048), IL(x, 4096), IL0)), "f32[2048]");
  CHECK_STR(infer(x, slice(x, t, IL(x, 1, 0), IL(x, 10, 7), IL(x, 2, 3))), "f32[5, 3]");
  CHECK_STR(infer(x, slice(x, t, IL(x, 3, 0), IL(x, 3, 7), IL(x, 1, 1))), "f32[0, 7]");
  CHECK_STR(infer(x, slice(x, s, IL(x, 0, 1), IL(x, INT64_MAX, 3), IL(x, 1, 1))), "f32[N, 2]");
  CHECK_STR(infer(x, slice(x, s, IL(x, 2, 0), IL(x, 6, 4), IL(x, 1, 1))), "f32[4, 4]");
  CHECK_STR(infer(x, slice(x, a, IL(x, 0), IL(x, 4097), IL(x, 1))),
            "error: 'slice': dim 0: end 4097 exceeds extent 4096 of operand '%T0' of type f32[4096]");
  CHECK_STR(infer(x, slice(x, a, IL(x, 5), IL(x, 4), IL(x, 1))),
            "error: 'slice': dim 0: start 5 and end 4 must satisfy 0 <= start <= end");
  CHECK_STR(infer(x, slice(x, a, IL(x, -1), IL(x, 4), IL(x, 1))),
            "error: 'slice': dim 0: start -1 and end 4 must satisfy 0 <= start <= end");
  CHECK_STR(infer(x, slice(x, t, IL(x, 0, 0), IL(x, 1, 1), IL(x, 1, 0))), "error: 'slice': step 0 of dim 1 must be >= 1");
  CHECK_STR(infer(x, slice(x, t, IL(x, 0), IL(x, 1), IL(x, 1))),
            "error: 'slice': starts, ends and steps need one entry per dim of operand '%T1' of type f32[10, 7] (rank "
            "2), got 1, 1 and 1");

  fu_value *two[2] = {a, a};
  CHECK_STR(infer(x, cat(x, two, 2, 0)), "f32[8192]");
  fu_value *uv[3] = {u, v, u};
  CHECK_STR(infer(x, cat(x, uv, 3, 1)), "f32[2, 10]");
  CHECK_STR(infer(x, cat(x, uv, 1, 0)), "f16[2, 3]");
  CHECK_STR(infer(x, cat(x, uv, 2, 0)),
            "error: 'cat': operand 1 '%T4' of type f32[2, 4] differs from operand 0 '%T3' of type f16[2, 3] in dim 1 "
            "(only the cat dim 0 may differ)");
  fu_value *uw[2] = {u, w};
  CHECK_STR(infer(x, cat(x, uw, 2, 0)),
            "error: 'cat': operand 1 '%T5' of type f32[2, 3, 1] has rank 3, but operand 0 '%T3' of type f16[2, 3] has "
            "rank 2");
  fu_value *ss[2] = {s, s};
  CHECK_STR(infer(x, cat(x, ss, 2, 0)),
            "error: 'cat': cat along a symbolic extent is not supported (operand 0 '%T2' of type f32[N, 4], dim 0)");
  CHECK_STR(infer(x, cat(x, ss, 2, 1)), "f32[N, 8]");
  CHECK_STR(infer(x, cat(x, ss, 2, 2)), "error: 'cat': dim 2 is out of range for operand 0 '%T2' of type f32[N, 4] (rank 2)");
  fu_value *as[2] = {a, lit_f(x, 1.0)};
  CHECK_STR(infer(x, cat(x, as, 2, 0)), "error: 'cat': operand 1 '1.0' of type f64 must be a tensor");
  CHECK_STR(infer(x, cat(x, as, 0, 0)), "error: 'cat' expects at least 1 operand, got 0");

  CHECK_STR(infer(x, pad(x, a, lit_f(x, 0.0), IL(x, 1, 2))), "f32[4099]");
  CHECK_STR(infer(x, pad(x, t, lit_f(x, 0.0), IL(x, 1, 1))), "f32[10, 9]");
  CHECK_STR(infer(x, pad(x, t, lit_f(x, 0.0), IL(x, 1, 1, 2, 3))), "f32[15, 9]");
  CHECK_STR(infer(x, pad(x, t, lit_f(x, 0.0), IL(x, -3, -4))), "f32[10, 0]");
  CHECK_STR(infer(x, pad(x, s, lit_f(x, 0.0), IL(x, 1, 0, 0, 0))), "f32[N, 5]");
  CHECK_STR(infer(x, pad(x, t, lit_f(x, 0.0), IL(x, -4, -4))),
            "error: 'pad': dim 1 of extent 7 would get extent -1 with widths (-4, -4)");
  CHECK_STR(infer(x, pad(x, t, lit_f(x, 0.0), IL(x, 1, 1, 1))),
            "error: 'pad': widths must have an even number of entries, got 3");
  CHECK_STR(infer(x, pad(x, a, lit_f(x, 0.0), IL(x, 1, 1, 1, 1))),
            "error: 'pad': widths has 2 pairs, but operand '%T0' of type f32[4096] has rank 1");
  CHECK_STR(infer(x, pad(x, s, lit_f(x, 0.0), IL(x, 0, 0, 1, 0))),
            "error: 'pad': cannot pad symbolic extent N of dim 0 of operand '%T2' of type f32[N, 4]");
  CHECK_STR(infer(x, pad(x, a, a, IL(x, 1, 1))), "error: 'pad': pad value '%T0' of type f32[4096] must be a scalar");
  fx_free(x);
}

static void test_creation(void) {
  fixture *x = fx_new();
  n_names = 0;
  fu_value *a = input(x, "f32[4]"), *n = input(x, "i64");
  CHECK_STR(infer(x, stated_op(x, FU_OP_FULL, 1, lit_f(x, 0.0), NULL, "f32[4, N]")), "f32[4, N]");
  CHECK_STR(infer(x, stated_op(x, FU_OP_FULL, 1, n, NULL, "bf16[2]")), "bf16[2]");
  CHECK_STR(infer(x, stated_op(x, FU_OP_FULL, 1, a, NULL, "f32[4]")),
            "error: 'full': fill value '%T0' of type f32[4] must be a scalar");
  CHECK_STR(infer(x, stated_op(x, FU_OP_FULL, 1, lit_f(x, 0.0), NULL, NULL)), "error: 'full' requires a stated result type");
  CHECK_STR(infer(x, stated_op(x, FU_OP_IOTA, 2, lit_i(x, 0), lit_i(x, 1), "i64[N]")), "i64[N]");
  CHECK_STR(infer(x, stated_op(x, FU_OP_IOTA, 2, lit_f(x, 0.0), lit_f(x, 0.5), "f32[8]")), "f32[8]");
  CHECK_STR(infer(x, stated_op(x, FU_OP_IOTA, 2, lit_i(x, 0), lit_i(x, 1), "bool[8]")),
            "error: 'iota': result type bool[8] must be a rank-1 tensor of an integer or floating-point dtype");
  CHECK_STR(infer(x, stated_op(x, FU_OP_IOTA, 2, lit_i(x, 0), lit_i(x, 1), "i64[2, 2]")),
            "error: 'iota': result type i64[2, 2] must be a rank-1 tensor of an integer or floating-point dtype");
  CHECK_STR(infer(x, stated_op(x, FU_OP_IOTA, 2, a, lit_i(x, 1), "i64[4]")),
            "error: 'iota': start '%T0' of type f32[4] must be a scalar");
  fx_free(x);
}

static void test_counts(void) {
  fixture *x = fx_new();
  n_names = 0;
  fu_value *a = input(x, "f32[4]");
  fu_value *three[3] = {a, a, a};
  fu_op *op = fu_op_new(x->f, FU_OP_ADD, three, 3, 1, next_loc(x));
  fu_block_append(&x->f->body, op);
  CHECK_STR(infer(x, op), "error: 'add' expects 2 operands, got 3");
  op = fu_op_new(x->f, FU_OP_EXP, three, 0, 1, next_loc(x));
  fu_block_append(&x->f->body, op);
  CHECK_STR(infer(x, op), "error: 'exp' expects 1 operand, got 0");
  op = fu_op_new(x->f, FU_OP_VAR_MEAN, three, 1, 1, next_loc(x));
  fu_block_append(&x->f->body, op);
  CHECK_STR(infer(x, op), "error: 'var_mean' expects 2 results, got 1");
  op = fu_op_new(x->f, FU_OP_ADD, three, 2, 2, next_loc(x));
  fu_block_append(&x->f->body, op);
  CHECK_STR(infer(x, op), "error: 'add' expects 1 result, got 2");
  op = fu_op_new(x->f, FU_OP_OUTPUT, three, 0, 0, next_loc(x));
  fu_block_append(&x->f->body, op);
  CHECK_STR(infer(x, op), "error: 'output' expects at least 1 operand, got 0");
  fu_value *bad[2] = {a, NULL};
  op = fu_op_new(x->f, FU_OP_MUL, bad, 2, 1, next_loc(x));
  fu_block_append(&x->f->body, op);
  CHECK_STR(infer(x, op), "error: 'mul': operand 1 is missing");
  fx_free(x);
}

/* The public API gives extents lasting storage in the module's arena. */
static void test_infer_storage(void) {
  fixture *x = fx_new();
  fu_value *a = input(x, "f32[N, 3]");
  fu_value *ops[2] = {a, a};
  fu_op *op = fu_op_new(x->f, FU_OP_ADD, ops, 2, 1, next_loc(x)); /* not linked yet */
  fu_type out;
  CHECK_EQ_INT(fu_infer_types(op, &out, &x->diag), FU_OK);
  CHECK_STR(tstr(&out), "f32[N, 3]");
  CHECK(out.dims != a->type.dims);
  fu_type again;
  CHECK_EQ_INT(fu_infer_types(op, &again, &x->diag), FU_OK);
  CHECK(again.dims != out.dims && fu_type_equal(&again, &out));
  fu_op *r = fu_op_new(x->f, FU_OP_RESHAPE, &a, 1, 1, next_loc(x));
  r->results[0]->type = ty(x, "f32[3, N]");
  CHECK_EQ_INT(fu_infer_types(r, &out, &x->diag), FU_OK);
  CHECK(out.dims == r->results[0]->type.dims);
  fx_free(x);
}

/* ---- the verifier --------------------------------------------------------- */

static void test_verify_good(void) {
  fixture *x = fx_new();
  fu_value *a = input(x, "f32[8192, 3072]");
  fu_op *r = stated_op(x, FU_OP_RESHAPE, 1, a, NULL, "f32[64, 128, 3072]");
  fu_value *t1 = r->results[0];
  fu_op *m = op_new(x, FU_OP_MUL, 2, t1, lit_f(x, 0.5), NULL);
  CHECK_STR(infer(x, m), "f32[64, 128, 3072]");
  fu_op *e = op_new(x, FU_OP_ERF, 1, m->results[0], NULL, NULL);
  CHECK_STR(infer(x, e), "f32[64, 128, 3072]");
  fu_op *s = reduce(x, FU_OP_SUM, e->results[0], IL(x, 2), false, FU_DT_NONE);
  CHECK_STR(infer(x, s), "f32[64, 128]");
  output(x, s->results[0]);
  output(x, t1);
  CHECK_EQ_INT(verify(x), FU_OK);
  CHECK_EQ_INT(x->n, 0);
  CHECK_EQ_INT(fu_verify_module(x->m, &x->diag), FU_OK);
  fx_free(x);
}

static void test_verify_errors(void) {
  fixture *x = fx_new();
  n_names = 0;
  fu_value *a = input(x, "f32[8]");                                  /* line 1, T0 */
  fu_op *add = op_new(x, FU_OP_ADD, 2, a, a, NULL);                  /* line 2, T1 */
  add->results[0]->type = ty(x, "f32[4]");
  fu_op *mul = op_new(x, FU_OP_MUL, 2, a, lit_f(x, 2.0), NULL);      /* line 3, T2 */
  mul->results[0]->type = ty(x, "f64[8]");
  /* a use before the definition: T4 is defined on line 5 */
  fu_op *late = op_new(x, FU_OP_NEG, 1, a, NULL, NULL);              /* line 4, T3 */
  fu_op *def = op_new(x, FU_OP_EXP, 1, a, NULL, NULL);               /* line 5, T4 */
  def->results[0]->type = ty(x, "f32[8]");
  late->operands[0] = def->results[0];
  late->results[0]->type = ty(x, "f32[8]");
  /* a value from another fusion */
  fu_fusion *g = fu_fusion_new(x->m, "g", fu_loc_none());
  fu_op *gin = fu_op_new(g, FU_OP_INPUT, NULL, 0, 1, fu_loc_none());
  for (int i = 0; i < 40; i++) fu_literal_i(g, FU_DT_I64, i); /* push g's value ids past f's */
  gin = fu_op_new(g, FU_OP_INPUT, NULL, 0, 1, fu_loc_none());
  gin->results[0]->type = ty(x, "f32[8]");
  fu_value_set_name(x->m, gin->results[0], "G0");
  fu_op *foreign = op_new(x, FU_OP_ABS, 1, gin->results[0], NULL, NULL); /* line 6 */
  foreign->results[0]->type = ty(x, "f32[8]");
  /* a duplicate name */
  fu_op *dup = op_new(x, FU_OP_ABS, 1, a, NULL, NULL);                /* line 7 */
  dup->results[0]->type = ty(x, "f32[8]");
  fu_value_set_name(x->m, dup->results[0], "T0");
  /* outputs: a literal */
  op_new(x, FU_OP_OUTPUT, 1, lit_f(x, 1.0), NULL, NULL);              /* line 8 */
  CHECK_EQ_INT(verify(x), FU_ERR_VERIFY);
  CHECK_DIAG(x, FU_SEV_ERROR, "'add': result type f32[4] does not match inferred type f32[8]");
  CHECK_DIAG(x, FU_SEV_ERROR, "'mul': result type f64[8] does not match inferred type f32[8]");
  CHECK_DIAG(x, FU_SEV_ERROR, "'neg': operand 0 '%T4' is used before its definition");
  CHECK_DIAG(x, FU_SEV_NOTE, "'%T4' is defined here");
  CHECK_DIAG(x, FU_SEV_ERROR, "'abs': operand 0 '%G0' is not defined in this fusion");
  CHECK_DIAG(x, FU_SEV_ERROR, "'%T0' is already defined");
  CHECK_DIAG(x, FU_SEV_NOTE, "previous definition is here");
  CHECK_DIAG(x, FU_SEV_ERROR, "'output': operand 0 '1.0' is a literal; only values can be fusion outputs");
  CHECK(x->diag.n_errors >= 6);
  /* the note about T4 points at its definition (line 5) */
  for (int i = 0; i < x->n; i++)
    if (x->d[i].sev == FU_SEV_NOTE && strstr(x->d[i].msg, "'%T4' is defined here")) CHECK_EQ_INT(x->d[i].line, 5);
  fx_free(x);
}

static void test_verify_no_outputs(void) {
  fixture *x = fx_new();
  input(x, "f32[8]");
  CHECK_EQ_INT(verify(x), FU_ERR_VERIFY);
  CHECK_DIAG(x, FU_SEV_ERROR, "fusion '@f' has no outputs");
  CHECK_EQ_INT(x->d[0].line, 1000);
  /* a result with no type at all */
  fixture *y = fx_new();
  fu_value *a = input(y, "f32[8]");
  fu_op *e = op_new(y, FU_OP_EXP, 1, a, NULL, NULL);
  output(y, e->results[0]);
  CHECK_EQ_INT(verify(y), FU_ERR_VERIFY);
  CHECK_DIAG(y, FU_SEV_ERROR, "result '%T");
  CHECK_DIAG(y, FU_SEV_ERROR, "has no type");
  /* duplicate fusion names */
  fu_fusion_new(y->m, "f", fu_loc_none());
  fx_clear(y);
  CHECK_EQ_INT(fu_verify_module(y->m, &y->diag), FU_ERR_VERIFY);
  CHECK_DIAG(y, FU_SEV_ERROR, "fusion '@f' is defined more than once");
  fx_free(x);
  fx_free(y);
}

static fu_op *input_op(fixture *x, const char *type) { return input(x, type)->def; }

static void test_verify_inputs(void) {
  fixture *x = fx_new();
  n_names = 0;
  fu_op *a = input_op(x, "f32[4, 3]"); /* T0 */
  int32_t so[2] = {1, 1};
  a->u.input.layout.stride_order = so;
  int8_t cg[2] = {FU_CONTIG_TRUE, FU_CONTIG_NONE};
  a->u.input.layout.contiguity = cg;
  fu_op *b = input_op(x, "f32[N, 1]"); /* T1: none on a broadcast dim is fine */
  int8_t cg2[2] = {FU_CONTIG_TRUE, FU_CONTIG_NONE};
  b->u.input.layout.contiguity = cg2;
  int64_t ex1[2] = {8, 1};
  b->u.input.example.rank = 2;
  b->u.input.example.shape = ex1;
  b->u.input.example.init = FU_INIT_RANDN;
  fu_op *c = input_op(x, "f32[N, M]"); /* T2: N bound again to 4 */
  int64_t ex2[2] = {4, 5};
  c->u.input.example.rank = 2;
  c->u.input.example.shape = ex2;
  fu_op *d = input_op(x, "f32[4, 3]"); /* T3 */
  int64_t ex3[3] = {4, 3, 1};
  d->u.input.example.rank = 3;
  d->u.input.example.shape = ex3;
  fu_op *e = input_op(x, "f32[4, 3]"); /* T4 */
  int64_t ex4[2] = {4, 2};
  e->u.input.example.rank = 2;
  e->u.input.example.shape = ex4;
  fu_op *g = input_op(x, "f32[K]"); /* T5 */
  int64_t ex5[1] = {-3};
  g->u.input.example.rank = 1;
  g->u.input.example.shape = ex5;
  fu_op *h = input_op(x, "f32[L, L]"); /* T6: 2^22 * 2^22 * 4 bytes */
  int64_t ex6[2] = {1 << 22, 1 << 22};
  h->u.input.example.rank = 2;
  h->u.input.example.shape = ex6;
  fu_op *i = input_op(x, "i32[4]"); /* T7 */
  i->u.input.example.init = FU_INIT_RANDINT;
  i->u.input.example.low = 5;
  i->u.input.example.high = 5;
  i->u.input.example.rank = -1;
  fu_op *j = input_op(x, "f64"); /* T8 */
  int64_t st[1] = {1};
  j->u.input.layout.strides = st;
  j->u.input.example.rank = -1;
  fu_op *k = input_op(x, "f32[1099511627776]"); /* T9: 4 TiB */
  k->u.input.example.rank = -1;
  fu_op *l = input_op(x, "f32[2, 3]"); /* T10 */
  int64_t st2[2] = {-3, 1};
  l->u.input.layout.strides = st2;
  l->u.input.example.rank = -1;
  /* inputs built by input() have example.rank 0 from calloc: mark "none" */
  a->u.input.example.rank = -1;
  output(x, a->results[0]);
  CHECK_EQ_INT(verify(x), FU_ERR_VERIFY);
  CHECK_DIAG(x, FU_SEV_ERROR, "'input': stride_order [1, 1] of '%T0' is not a permutation of 0..1");
  CHECK_DIAG(x, FU_SEV_ERROR,
             "'input': contiguity of dim 1 of '%T0' of type f32[4, 3] is none, but only broadcast dims (extent 1) may be none");
  CHECK(!has_diag(x, FU_SEV_ERROR, "of '%T1' of type f32[N, 1] is none"));
  CHECK_DIAG(x, FU_SEV_ERROR, "'input': example_shape of '%T2' binds symbol 'N' to 4, but it is already bound to 8");
  CHECK_DIAG(x, FU_SEV_NOTE, "'N' is bound to 8 here");
  CHECK_DIAG(x, FU_SEV_ERROR, "'input': example_shape has 3 entries, but '%T3' of type f32[4, 3] has rank 2");
  CHECK_DIAG(x, FU_SEV_ERROR, "'input': example_shape [4, 2] of '%T4' does not match its type f32[4, 3] in dim 1");
  CHECK_DIAG(x, FU_SEV_ERROR, "'input': example_shape entry -3 of '%T5' (dim 0) must be >= 0");
  CHECK_DIAG(x, FU_SEV_ERROR, "'input': '%T6' of type f32[L, L] would take more than 2^40 bytes");
  CHECK_DIAG(x, FU_SEV_ERROR, "'input': randint example of '%T7' needs low < high, got low=5, high=5");
  CHECK_DIAG(x, FU_SEV_ERROR, "'input': scalar input '%T8' cannot have a layout");
  CHECK_DIAG(x, FU_SEV_ERROR, "'input': '%T9' of type f32[1099511627776] would take more than 2^40 bytes");
  CHECK_DIAG(x, FU_SEV_ERROR, "'input': stride -3 of dim 0 of '%T10' must be >= 0");
  /* the N note points at T1's line (2) */
  for (int n = 0; n < x->n; n++)
    if (x->d[n].sev == FU_SEV_NOTE && strstr(x->d[n].msg, "'N' is bound")) CHECK_EQ_INT(x->d[n].line, 2);
  CHECK_EQ_INT(x->diag.n_errors, 11);
  fx_free(x);
}

/* ---- segments --------------------------------------------------------------- */

static fu_op *segment(fixture *x, const char *name, fu_value **ins, uint32_t n_in) {
  fu_op *s = fu_op_new(x->f, FU_OP_SEGMENT, ins, n_in, 0, next_loc(x));
  fu_block *body = fu_arena_calloc(x->m->arena, 1, sizeof *body);
  body->parent_op = s;
  body->fusion = x->f;
  s->u.segment.body = body;
  s->u.segment.name = name;
  s->u.segment.kind = FU_SK_POINTWISE;
  fu_block_append(&x->f->body, s);
  return s;
}

static void seg_outputs(fixture *x, fu_op *s, fu_value **outs, uint32_t n) {
  s->u.segment.outputs = fu_arena_memdup(x->m->arena, outs, n, sizeof *outs);
  s->u.segment.n_outputs = n;
}

/* An op inside a segment body, with its type inferred. */
static fu_op *in_seg(fixture *x, fu_op *s, fu_op_kind k, int n, fu_value *a, fu_value *b) {
  fu_op *op = op_new(x, k, n, a, b, NULL);
  fu_block_remove(&x->f->body, op);
  fu_block_append(s->u.segment.body, op);
  infer(x, op);
  return op;
}

static void test_segments_good(void) {
  fixture *x = fx_new();
  fu_value *a = input(x, "f32[N]");
  fu_op *s = segment(x, "g0", &a, 1);
  fu_op *m = in_seg(x, s, FU_OP_MUL, 2, a, lit_f(x, 0.5));
  fu_op *e = in_seg(x, s, FU_OP_EXP, 1, m->results[0], NULL);
  seg_outputs(x, s, &e->results[0], 1);
  fu_value *ea = e->results[0];
  fu_op *s2 = segment(x, "g1", &ea, 1);
  fu_op *n = in_seg(x, s2, FU_OP_NEG, 1, ea, NULL);
  fu_op *o = op_new(x, FU_OP_OUTPUT, 1, n->results[0], NULL, NULL);
  fu_block_remove(&x->f->body, o);
  fu_block_append(s2->u.segment.body, o); /* an output inside a segment */
  seg_outputs(x, s2, &n->results[0], 1);
  output(x, ea); /* a value defined in a segment is visible after it */
  CHECK_EQ_INT(verify(x), FU_OK);
  if (x->n) dump_diags(x);
  fx_free(x);
}

static void test_segments_bad(void) {
  fixture *x = fx_new();
  n_names = 0;
  fu_value *a = input(x, "f32[N]"); /* T0 */
  fu_value *b = input(x, "f32[N]"); /* T1 */
  fu_value *ins[2] = {a, b};
  fu_op *s = segment(x, "g0", ins, 2);               /* operand T1 unused */
  fu_op *m = in_seg(x, s, FU_OP_MUL, 2, a, a);       /* T2 */
  fu_op *e = in_seg(x, s, FU_OP_EXP, 1, m->results[0], NULL); /* T3 */
  fu_op *u = in_seg(x, s, FU_OP_NEG, 1, m->results[0], NULL); /* T4: unused outside, listed */
  seg_outputs(x, s, &u->results[0], 1);              /* T3 used outside, not listed */
  fu_op *s2 = segment(x, "g1", NULL, 0);
  fu_op *k = in_seg(x, s2, FU_OP_ADD, 2, e->results[0], b); /* T5: operands not listed */
  fu_op *inner_in = input_op(x, "f32[4]");           /* an input inside a segment */
  fu_block_remove(&x->f->body, inner_in);
  fu_block_append(s2->u.segment.body, inner_in);
  fu_op *nested = fu_op_new(x->f, FU_OP_SEGMENT, NULL, 0, 0, next_loc(x));
  nested->u.segment.name = "g2";
  fu_block_append(s2->u.segment.body, nested);
  fu_value *bogus = a;
  seg_outputs(x, s2, &bogus, 1);                     /* T0 is not defined inside g1 */
  fu_op *s3 = segment(x, "g3", NULL, 0);             /* empty */
  (void)s3;
  output(x, e->results[0]);
  output(x, k->results[0]);
  CHECK_EQ_INT(verify(x), FU_ERR_VERIFY);
  CHECK_DIAG(x, FU_SEV_ERROR, "segment '@g0': operand '%T1' is not used inside it");
  CHECK_DIAG(x, FU_SEV_ERROR, "segment '@g0' does not list '%T3' among its outputs, but it is used outside it");
  CHECK_DIAG(x, FU_SEV_NOTE, "used here by 'add'");
  CHECK_DIAG(x, FU_SEV_ERROR, "segment '@g0': output '%T4' is not used after it");
  CHECK_DIAG(x, FU_SEV_ERROR, "'add': operand 0 '%T3' is defined outside segment '@g1' but is not among its operands");
  CHECK_DIAG(x, FU_SEV_ERROR, "'add': operand 1 '%T1' is defined outside segment '@g1' but is not among its operands");
  CHECK_DIAG(x, FU_SEV_NOTE, "segment '@g1' begins here");
  CHECK_DIAG(x, FU_SEV_ERROR, "'input' must be outside every segment");
  CHECK_DIAG(x, FU_SEV_ERROR, "segment '@g2' is nested in segment '@g1'; segments do not nest");
  CHECK_DIAG(x, FU_SEV_ERROR, "segment '@g1': output '%T0' is not defined inside it");
  CHECK_DIAG(x, FU_SEV_ERROR, "segment '@g1' does not list '%T5' among its outputs");
  CHECK_DIAG(x, FU_SEV_ERROR, "segment '@g3' is empty");
  fx_free(x);
}

/* Host ops (set by strip-bookend-views) must be views and stay outside
 * segments. */
static void test_host_ops(void) {
  fixture *x = fx_new();
  fu_value *a = input(x, "f32[4, 3]");
  fu_op *r = stated_op(x, FU_OP_RESHAPE, 1, a, NULL, "f32[12]");
  r->host = true;
  fu_op *e = op_new(x, FU_OP_EXP, 1, r->results[0], NULL, NULL);
  infer(x, e);
  e->host = true;
  fu_value *ev = e->results[0];
  fu_op *s = segment(x, "g0", &ev, 1);
  fu_op *p = op_new(x, FU_OP_PERMUTE, 1, ev, NULL, NULL);
  p->u.permute.dims = IL(x, 0);
  fu_block_remove(&x->f->body, p);
  fu_block_append(s->u.segment.body, p);
  infer(x, p);
  p->host = true;
  seg_outputs(x, s, &p->results[0], 1);
  output(x, p->results[0]);
  CHECK_EQ_INT(verify(x), FU_ERR_VERIFY);
  CHECK_DIAG(x, FU_SEV_ERROR, "'exp': host=true is only for view ops");
  CHECK_DIAG(x, FU_SEV_ERROR, "'permute': host ops must stay outside segments");
  CHECK_EQ_INT(x->diag.n_errors, 2);
  fx_free(x);
}

/* Ops of a (wrongly) nested segment count as the outer segment's: one error
 * for the nesting, none for the values they define. */
static void test_nested_segment_values(void) {
  fixture *x = fx_new();
  fu_value *a = input(x, "f32[4]");
  fu_op *s = segment(x, "g0", &a, 1);
  fu_op *n = in_seg(x, s, FU_OP_NEG, 1, a, NULL);
  fu_op *inner = fu_op_new(x->f, FU_OP_SEGMENT, &n->results[0], 1, 0, next_loc(x));
  fu_block *body = fu_arena_calloc(x->m->arena, 1, sizeof *body);
  body->parent_op = inner;
  body->fusion = x->f;
  inner->u.segment.body = body;
  inner->u.segment.name = "g1";
  fu_block_append(s->u.segment.body, inner);
  fu_op *e = op_new(x, FU_OP_EXP, 1, n->results[0], NULL, NULL);
  fu_block_remove(&x->f->body, e);
  fu_block_append(body, e);
  infer(x, e);
  seg_outputs(x, s, &e->results[0], 1);
  output(x, e->results[0]);
  CHECK_EQ_INT(verify(x), FU_ERR_VERIFY);
  CHECK_DIAG(x, FU_SEV_ERROR, "segment '@g1' is nested in segment '@g0'; segments do not nest");
  CHECK_EQ_INT(x->diag.n_errors, 1);
  fx_free(x);
}

/* ---- scale ------------------------------------------------------------------ */

/* CPU time, not wall time: the check must hold on a loaded build machine. */
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* 100,000 ops, each using a value defined long before and the previous
 * one: verifying must stay linear. */
static void test_verify_scale(void) {
  fixture *x = fx_new();
  fu_value *a = input(x, "f32[N, 1024]");
  fu_value *prev = a;
  fu_value *early[64];
  int ne = 0;
  for (int i = 0; i < 100000; i++) {
    fu_value *ops[2] = {prev, ne ? early[i % ne] : a};
    fu_op *op = fu_op_new(x->f, i % 3 ? FU_OP_ADD : FU_OP_MUL, ops, 2, 1, fu_loc_none());
    char name[16];
    snprintf(name, sizeof name, "V%d", i);
    fu_value_set_name(x->m, op->results[0], name);
    op->results[0]->type = a->type;
    fu_block_append(&x->f->body, op);
    prev = op->results[0];
    if (ne < 64) early[ne++] = prev;
  }
  output(x, prev);
  double dt = 1e9;
  for (int rep = 0; rep < 3; rep++) { /* best of three */
    double t0 = now();
    fu_status s = verify(x);
    double t = now() - t0;
    CHECK_EQ_INT(s, FU_OK);
    if (t < dt) dt = t;
  }
  printf("verify 100000 ops: %.1f ms CPU\n", dt * 1e3);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__OPTIMIZE_SIZE__)
#ifdef __OPTIMIZE__
  CHECK(dt < 0.3);
#endif
#endif
  fx_free(x);
}

FU_TEST_MAIN(FU_TEST(test_unary), FU_TEST(test_binary_promotion), FU_TEST(test_binary_shapes), FU_TEST(test_ternary),
             FU_TEST(test_cast), FU_TEST(test_reductions), FU_TEST(test_broadcasts),
             FU_TEST(test_reshape_permute_squeeze), FU_TEST(test_resize), FU_TEST(test_creation), FU_TEST(test_counts),
             FU_TEST(test_infer_storage), FU_TEST(test_verify_good), FU_TEST(test_verify_errors),
             FU_TEST(test_verify_no_outputs), FU_TEST(test_verify_inputs), FU_TEST(test_segments_good),
             FU_TEST(test_segments_bad), FU_TEST(test_host_ops),
             FU_TEST(test_nested_segment_values), FU_TEST(test_verify_scale))
