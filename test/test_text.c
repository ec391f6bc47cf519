/* Unit tests for the .fir lexer, parser and printer: round trips of every
 * op and construct (byte-identical reprint), locations, every parse error
 * message, fuzzing with random bytes, mutations and truncations, and a
 * 100,000-op scale check. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fuser/parse.h"
#include "fuser/print.h"
#include "fuser/verify.h"
#include "harness.h"

/* ---- helpers ------------------------------------------------------------ */

/* Diagnostics collected as "line:col: severity: message\n". */
static void capture(void *user, const fu_diagnostic *d) {
  fu_strbuf *sb = user;
  fu_strbuf_printf(sb, "%u:%u: %s: %s\n", fu_loc_file_line(d->loc), d->loc.col, fu_severity_name(d->severity),
                   d->message);
}

typedef struct parsed {
  fu_module *m;
  fu_status st;
  fu_strbuf diags;
  fu_source src;
  char *text; /* heap copy without a terminating NUL, so ASan sees over-reads */
} parsed;

static void parse_text(parsed *r, const char *text, size_t len) {
  memset(r, 0, sizeof *r);
  fu_strbuf_init(&r->diags, fu_default_allocator());
  r->text = malloc(len ? len : 1);
  if (len) memcpy(r->text, text, len);
  r->src.name = "t.fir";
  r->src.text = r->text;
  r->src.len = len;
  r->src.first_line = 1;
  fu_diag_engine d;
  fu_diag_init(&d, fu_default_allocator());
  d.handler = capture;
  d.user = &r->diags;
  r->st = fu_parse_module(&r->src, fu_default_allocator(), &d, &r->m);
}

static void parsed_free(parsed *r) {
  fu_module_free(r->m);
  fu_strbuf_free(&r->diags);
  free(r->text);
  memset(r, 0, sizeof *r);
}

static const char *diags_of(const parsed *r) { return r->diags.data ? r->diags.data : ""; }

/* Prints a module into a fresh malloc'd string. */
static char *print_str(const fu_module *m) {
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_print_module(&sb, m, NULL);
  char *s = malloc(sb.len + 1);
  memcpy(s, sb.data ? sb.data : "", sb.len);
  s[sb.len] = '\0';
  fu_strbuf_free(&sb);
  return s;
}

/* parse -> print -> parse -> print; the two prints must be identical.
 * Returns the first print (caller frees), or NULL when the first parse
 * failed. */
static char *roundtrip(const char *text) {
  parsed a;
  parse_text(&a, text, strlen(text));
  if (a.st != FU_OK) {
    fu_test_fail(__FILE__, __LINE__, "parse failed:\n%s", diags_of(&a));
    parsed_free(&a);
    return NULL;
  }
  char *p1 = print_str(a.m);
  parsed b;
  parse_text(&b, p1, strlen(p1));
  CHECK_EQ_INT(b.st, FU_OK);
  if (b.st != FU_OK) fprintf(stderr, "reparse of:\n%s\nfailed:\n%s", p1, diags_of(&b));
  if (b.st == FU_OK) {
    char *p2 = print_str(b.m);
    CHECK_STR(p2, p1);
    free(p2);
  }
  parsed_free(&a);
  parsed_free(&b);
  return p1;
}

/* The text must fail to parse, and the first diagnostic must be `want`
 * ("line:col: error: message"). */
static void expect_error_at(const char *file, int line, const char *text, const char *want) {
  parsed r;
  parse_text(&r, text, strlen(text));
  fu_test_checks++;
  if (r.st != FU_ERR_PARSE || r.m != NULL) {
    fu_test_fail(file, line, "expected a parse error for:\n%s", text);
  } else {
    const char *d = diags_of(&r);
    const char *nl = strchr(d, '\n');
    size_t n = nl ? (size_t)(nl - d) : strlen(d);
    if (strlen(want) != n || strncmp(d, want, n) != 0)
      fu_test_fail(file, line, "first diagnostic:\n  got:  %.*s\n  want: %s", (int)n, d, want);
  }
  parsed_free(&r);
}
#define EXPECT_ERROR(text, want) expect_error_at(__FILE__, __LINE__, text, want)

static fu_op *nth_op(fu_block *b, int n) {
  fu_op *op = b->first;
  while (op && n-- > 0) op = op->next;
  return op;
}

static const char *const ALL_OPS =
    "// every op, every dtype, literals, layouts and example data\n"
    "fusion @all_ops {\n"
    "  %T0 = input f32[N, 8] {contiguity=[true, true], stride_order=[1, 0]}\n"
    "  %T1 = input f32[N, 8] {strides=[8, 1], example=randn, seed=3, example_shape=[4, 8]}\n"
    "  %S0 = input f64 {example=0.5}\n"
    "  %I0 = input i32[N, 8] {example=randint, low=-3, high=7}\n"
    "  %B0 = input bool[N, 8]\n"
    "  %H0 = input f16[N, 8] {example=rand, example_shape=[4, 8], example_strides=[16, 2]}\n"
    "  %G0 = input bf16[N, 8] {example=zeros}\n"
    "  %L0 = input i64[N, 8] {example=ones}\n"
    "  %D0 = input f64[N, 8] {npy=\"data/x \\\"1\\\".npy\"}\n"
    "  %a1 = abs %T0\n  %a2 = neg %T0\n  %a3 = exp %T0\n  %a4 = exp2 %T0\n  %a5 = expm1 %T0\n"
    "  %a6 = log %T0\n  %a7 = log2 %T0\n  %a8 = log10 %T0\n  %a9 = log1p %T0\n  %a10 = sqrt %T0\n"
    "  %a11 = rsqrt %T0\n  %a12 = reciprocal %T0\n  %a13 = sin %T0\n  %a14 = cos %T0\n  %a15 = tan %T0\n"
    "  %a16 = tanh %T0\n  %a17 = sinh %T0\n  %a18 = cosh %T0\n  %a19 = asin %T0\n  %a20 = acos %T0\n"
    "  %a21 = atan %T0\n  %a22 = erf %T0\n  %a23 = erfc %T0\n  %a24 = sigmoid %T0\n  %a25 = silu %T0\n"
    "  %a26 = relu %T0\n  %a27 = floor %T0\n  %a28 = ceil %T0\n  %a29 = round %T0\n  %a30 = trunc %T0\n"
    "  %a31 = sign %T0\n  %a32 = logical_not %B0\n  %a33 = bitwise_not %I0\n  %a34 = isnan %T0\n"
    "  %a35 = isinf %T0\n  %a36 = isfinite %T0\n  %a37 = cast %T0 : bf16[N, 8]\n  %a38 = set %T0\n"
    "  %b1 = add %T0, %T1\n  %b2 = sub %T0, 1.0\n  %b3 = mul %T0, %S0\n  %b4 = div %I0, 2\n"
    "  %b5 = pow %T0, 2.0\n  %b6 = fmod %T0, 3.5\n  %b7 = remainder %I0, i32(3)\n  %b8 = maximum %T0, %T1\n"
    "  %b9 = minimum %T0, f32(0.25)\n  %b10 = atan2 %T0, %T1\n  %b11 = eq %T0, %T1\n  %b12 = ne %T0, %T1\n"
    "  %b13 = lt %T0, %T1\n  %b14 = le %T0, %T1\n  %b15 = gt %T0, %T1\n  %b16 = ge %T0, %T1\n"
    "  %b17 = logical_and %B0, true\n  %b18 = logical_or %B0, bool(false)\n  %b19 = bitwise_and %I0, %I0\n"
    "  %b20 = bitwise_or %I0, 1\n  %b21 = bitwise_xor %I0, i64(-1)\n"
    "  %a39 = acosh %T0\n  %a40 = asinh %T0\n  %a41 = atanh %T0\n  %a42 = lgamma %T0\n  %a43 = erfinv %T0\n"
    "  %a44 = erfcinv %T0\n  %a45 = frac %T0\n  %a46 = signbit %T0\n  %a47 = isneginf %T0\n"
    "  %a48 = isposinf %T0\n  %a49 = isreal %I0\n  %b22 = bitwise_left_shift %I0, 2\n"
    "  %b23 = bitwise_right_shift %I0, %I0\n  %b24 = nextafter %T0, %T1\n  %b25 = gcd %I0, 6\n"
    "  %b26 = logical_right_shift %I0, 3\n"
    "  %c1 = where %B0, %T0, 0.0\n  %c2 = clamp %T0, -1.0, 1.0\n  %c3 = lerp %T0, %T1, 0.5\n"
    "  %r1 = sum %T0 {axes=[1]}\n  %r2 = prod %T0 {keepdim=true, axes=[0, 1]}\n"
    "  %r3 = max %T0 {axes=[1], dtype=f64, keepdim=false}\n  %r4 = min %T0 {axes=[0]}\n"
    "  %r5 = var %T0 {axes=[1], correction=0}\n"
    "  %r6, %r7 = var_mean %T0 {keepdim=true, axes=[1]}\n"
    "  %f1 = full 1.5 : f32[4, 8]\n"
    "  %s1 = broadcast_in_dim %r1 {broadcast_dims=[0]} : f32[N, 8]\n"
    "  %s2 = broadcast %r1 {is_broadcast_dim=[false, true]}\n"
    "  %s3 = expand %s2 : f32[N, 8]\n"
    "  %s4 = reshape %T0 {host=true} : f32[N, 2, 4]\n"
    "  %s5 = permute %s4 {dims=[2, 0, 1]}\n"
    "  %s6 = squeeze %s2 {dims=[1]}\n"
    "  %s7 = slice %f1 {starts=[0, 2], ends=[4, 8], steps=[1, 2]}\n"
    "  %s7b = slice %f1 {starts=[1, 0], ends=[3, 8]}\n"
    "  %s8 = cat %T0, %T1 {dim=1}\n"
    "  %s9 = pad %T0, 0.0 {widths=[1, 2]}\n"
    "  %f2 = iota 0, 1 : i64[N]\n"
    "  %m0 = input f32[8]\n"
    "  %m0b = input f32[4]\n"
    "  %m1 = linear %T0, %f1, %m0b\n"
    "  %m2 = matmul %T0, %m0\n"
    "  %g1 = index_select %T1, %f2 {dim=0}\n  %g2 = gather %T0, %I0 {dim=1}\n"
    "  %g3 = take_along_axis %T0, %I0 {dim=1}\n  %g4 = embedding_fwd %I0, %f1\n"
    "  %g5 = stride_order %T0 {order=[0, 1]}\n"
    "  %sc1 = cumsum %I0 {dim=1}\n  %sc2 = cumprod %T0 {dim=0}\n"
    "  %sc3 = cummax %B0 {dim=1}\n  %sc4 = cummin %H0 {dim=0}\n"
    "  %ps1 = partial_sum %H0 {dim=0, parts=3}\n"
    "  %rng1 = uniform 0.0, 1.0, 7, 3 : bf16[N, 8]\n"
    "  %rng2 = normal 0.0, 2.0, 7, 0 : f64[4]\n"
    "  %z0 = input f32[] {example=randn}\n"
    "  %z1 = sum %z0 {axes=[]}\n"
    "  output %b1, %s8\n"
    "  output %r6\n"
    "}\n";

/* ---- round trips ---------------------------------------------------------- */

static void test_roundtrip_all_ops(void) {
  char *p = roundtrip(ALL_OPS);
  if (!p) return;
  /* canonical attribute order, defaults dropped, types written out */
  CHECK(strstr(p, "  %T0 = input f32[N, 8] {stride_order=[1, 0], contiguity=[true, true]}\n"));
  CHECK(strstr(p, "  %T1 = input f32[N, 8] {strides=[8, 1], example=randn, seed=3, example_shape=[4, 8]}\n"));
  CHECK(strstr(p, "  %S0 = input f64 {example=0.5}\n"));
  CHECK(strstr(p, "  %I0 = input i32[N, 8] {example=randint, low=-3, high=7}\n"));
  CHECK(strstr(p, "  %B0 = input bool[N, 8]\n"));
  CHECK(strstr(p, "  %H0 = input f16[N, 8] {example=rand, example_shape=[4, 8], example_strides=[16, 2]}\n"));
  CHECK(strstr(p, "  %D0 = input f64[N, 8] {npy=\"data/x \\\"1\\\".npy\"}\n"));
  CHECK(strstr(p, "  %a37 = cast %T0 : bf16[N, 8]\n"));
  CHECK(strstr(p, "  %b7 = remainder %I0, i32(3) : i32[N, 8]\n"));
  CHECK(strstr(p, "  %b21 = bitwise_xor %I0, i64(-1) : i32[N, 8]\n"));
  CHECK(strstr(p, "  %b18 = logical_or %B0, bool(false) : bool[N, 8]\n"));
  CHECK(strstr(p, "  %a46 = signbit %T0 : bool[N, 8]\n"));
  CHECK(strstr(p, "  %b22 = bitwise_left_shift %I0, 2 : i32[N, 8]\n"));
  CHECK(strstr(p, "  %b24 = nextafter %T0, %T1 : f32[N, 8]\n"));
  CHECK(strstr(p, "  %c2 = clamp %T0, -1.0, 1.0 : f32[N, 8]\n"));
  CHECK(strstr(p, "  %r2 = prod %T0 {axes=[0, 1], keepdim=true} : f32[1, 1]\n"));
  CHECK(strstr(p, "  %r3 = max %T0 {axes=[1], dtype=f64} : f64[N]\n"));
  CHECK(strstr(p, "  %r5 = var %T0 {axes=[1], correction=0} : f32[N]\n"));
  CHECK(strstr(p, "  %r6, %r7 = var_mean %T0 {axes=[1], correction=1, keepdim=true} : f32[N, 1], f32[N, 1]\n"));
  CHECK(strstr(p, "  %s2 = broadcast %r1 {is_broadcast_dim=[false, true]} : f32[N, 1]\n"));
  CHECK(strstr(p, "  %s4 = reshape %T0 {host=true} : f32[N, 2, 4]\n"));
  CHECK(strstr(p, "  %s7b = slice %f1 {starts=[1, 0], ends=[3, 8], steps=[1, 1]} : f32[2, 8]\n"));
  CHECK(strstr(p, "  %s9 = pad %T0, 0.0 {widths=[1, 2]} : f32[N, 11]\n"));
  CHECK(strstr(p, "  %f2 = iota 0, 1 : i64[N]\n"));
  CHECK(strstr(p, "  %g1 = index_select %T1, %f2 : f32[N, 8]\n"));
  CHECK(strstr(p, "  %g2 = gather %T0, %I0 {dim=1} : f32[N, 8]\n"));
  CHECK(strstr(p, "  %g4 = embedding_fwd %I0, %f1 : f32[N, 8, 8]\n"));
  CHECK(strstr(p, "  %g5 = stride_order %T0 {order=[0, 1]} : f32[N, 8]\n"));
  CHECK(strstr(p, "  %sc1 = cumsum %I0 {dim=1} : i64[N, 8]\n"));
  CHECK(strstr(p, "  %sc3 = cummax %B0 {dim=1} : bool[N, 8]\n"));
  CHECK(strstr(p, "  %sc4 = cummin %H0 {dim=0} : f16[N, 8]\n"));
  CHECK(strstr(p, "  %ps1 = partial_sum %H0 {dim=0, parts=3} : f32[3, 8]\n"));
  CHECK(strstr(p, "  %rng1 = uniform 0.0, 1.0, 7, 3 : bf16[N, 8]\n"));
  CHECK(strstr(p, "  %rng2 = normal 0.0, 2.0, 7, 0 : f64[4]\n"));
  CHECK(strstr(p, "  %z0 = input f32[] {example=randn, example_shape=[]}\n") == NULL);
  CHECK(strstr(p, "  %z0 = input f32[] {example=randn}\n"));
  CHECK(strstr(p, "  %z1 = sum %z0 {axes=[]} : f32[]\n"));
  CHECK(strstr(p, "  output %b1, %s8\n  output %r6\n}\n"));
  CHECK(strncmp(p, "fusion @all_ops {\n", 18) == 0);

  /* every op kind except the structural ones appears */
  parsed r;
  parse_text(&r, ALL_OPS, strlen(ALL_OPS));
  CHECK_EQ_INT(r.st, FU_OK);
  if (r.m) {
    bool seen[FU_OP_COUNT] = {0};
    for (fu_op *op = fu_walk_first(&r.m->first->body); op; op = fu_walk_next(op)) seen[op->kind] = true;
    for (int k = 0; k < FU_OP_COUNT; k++)
      if (k != FU_OP_SEGMENT && !seen[k]) fu_test_fail(__FILE__, __LINE__, "op '%s' not covered", fu_op_info_of(k)->name);
    fu_diag_engine d;
    fu_diag_init(&d, fu_default_allocator());
    CHECK_EQ_INT(fu_verify_module(r.m, &d), FU_OK);
  }
  parsed_free(&r);
  free(p);
}

/* Payloads are filled from the attribute dicts. */
static void test_payloads(void) {
  parsed r;
  parse_text(&r, ALL_OPS, strlen(ALL_OPS));
  CHECK_EQ_INT(r.st, FU_OK);
  if (!r.m) return;
  fu_block *b = &r.m->first->body;
  fu_op *t0 = nth_op(b, 0), *t1 = nth_op(b, 1), *s0 = nth_op(b, 2), *i0 = nth_op(b, 3), *b0 = nth_op(b, 4);
  fu_op *h0 = nth_op(b, 5), *d0 = nth_op(b, 8);
  CHECK(t0->u.input.layout.strides == NULL);
  CHECK(t0->u.input.layout.stride_order && t0->u.input.layout.stride_order[0] == 1 && t0->u.input.layout.stride_order[1] == 0);
  CHECK(t0->u.input.layout.contiguity && t0->u.input.layout.contiguity[1] == FU_CONTIG_TRUE);
  CHECK_EQ_INT(t0->u.input.example.init, FU_INIT_NONE);
  CHECK_EQ_INT(t0->u.input.example.rank, -1);
  CHECK(t1->u.input.layout.strides && t1->u.input.layout.strides[0] == 8);
  CHECK_EQ_INT(t1->u.input.example.init, FU_INIT_RANDN);
  CHECK_EQ_INT(t1->u.input.example.seed, 3);
  CHECK_EQ_INT(t1->u.input.example.rank, 2);
  CHECK(t1->u.input.example.shape && t1->u.input.example.shape[0] == 4 && t1->u.input.example.shape[1] == 8);
  CHECK_EQ_INT(s0->u.input.example.init, FU_INIT_VALUE);
  CHECK(s0->u.input.example.value.f == 0.5);
  CHECK_EQ_INT(s0->results[0]->type.rank, FU_SCALAR_RANK);
  CHECK_EQ_INT(i0->u.input.example.init, FU_INIT_RANDINT);
  CHECK_EQ_INT(i0->u.input.example.low, -3);
  CHECK_EQ_INT(i0->u.input.example.high, 7);
  CHECK_EQ_INT(b0->results[0]->type.dtype, FU_DT_BOOL);
  CHECK(h0->u.input.example.strides && h0->u.input.example.strides[0] == 16);
  CHECK_EQ_INT(d0->u.input.example.init, FU_INIT_NPY);
  CHECK_STR(d0->u.input.example.npy_path, "data/x \"1\".npy");
  CHECK(t0->results[0]->type.dims[0].sym == t1->results[0]->type.dims[0].sym); /* interned */
  CHECK_STR(t0->results[0]->type.dims[0].sym, "N");
  CHECK_EQ_INT(t0->results[0]->type.dims[1].value, 8);
  for (fu_op *op = b->first; op; op = op->next) {
    const fu_op_info *info = fu_op_info_of(op->kind);
    if (op->kind == FU_OP_SUM && op->u.reduce.axes.n == 1) CHECK(!op->u.reduce.keepdim);
    if (op->kind == FU_OP_PROD) {
      CHECK(op->u.reduce.keepdim);
      CHECK_EQ_INT(op->u.reduce.axes.n, 2);
      CHECK_EQ_INT(op->u.reduce.dtype, FU_DT_NONE);
    }
    if (op->kind == FU_OP_MAX) CHECK_EQ_INT(op->u.reduce.dtype, FU_DT_F64);
    if (op->kind == FU_OP_VAR) CHECK_EQ_INT(op->u.variance.correction, 0);
    if (op->kind == FU_OP_VAR_MEAN) {
      CHECK_EQ_INT(op->u.variance.correction, 1);
      CHECK(op->u.variance.keepdim);
      CHECK_EQ_INT(op->n_results, 2);
      CHECK_STR(op->results[1]->name, "r7");
    }
    if (op->kind == FU_OP_BROADCAST) {
      CHECK_EQ_INT(op->u.broadcast.n, 2);
      CHECK(!op->u.broadcast.is_broadcast[0] && op->u.broadcast.is_broadcast[1]);
    }
    if (op->kind == FU_OP_PERMUTE) CHECK(op->u.permute.dims.n == 3 && op->u.permute.dims.v[0] == 2);
    if (op->kind == FU_OP_SQUEEZE) CHECK(op->u.squeeze.dims.n == 1 && op->u.squeeze.dims.v[0] == 1);
    if (op->kind == FU_OP_SLICE && op->u.slice.starts.v[0] == 0)
      CHECK(op->u.slice.steps.n == 2 && op->u.slice.steps.v[1] == 2 && op->u.slice.ends.v[1] == 8);
    if (op->kind == FU_OP_SLICE && op->u.slice.starts.v[0] == 1)
      CHECK(op->u.slice.steps.n == 2 && op->u.slice.steps.v[0] == 1 && op->u.slice.steps.v[1] == 1);
    if (op->kind == FU_OP_CAT) CHECK_EQ_INT(op->u.cat.dim, 1);
    if (op->kind == FU_OP_PAD) CHECK(op->u.pad.widths.n == 2 && op->u.pad.widths.v[1] == 2);
    if (op->kind == FU_OP_BROADCAST_IN_DIM) CHECK(op->u.broadcast_in_dim.broadcast_dims.n == 1);
    if (op->kind == FU_OP_RESHAPE) CHECK(op->host);
    if (op->kind == FU_OP_EXPAND) CHECK(!op->host);
    if (op->kind == FU_OP_CAST) CHECK_EQ_INT(op->results[0]->type.dtype, FU_DT_BF16);
    (void)info;
  }
  parsed_free(&r);
}

static void test_literals(void) {
  const char *text =
      "fusion @lits {\n"
      "  %S0 = input f64\n"
      "  %a = add %S0, 0.5\n"
      "  %b = add %S0, 3\n"
      "  %c = logical_and true, false\n"
      "  %d = add %S0, f32(0.5)\n"
      "  %e = add %S0, i32(3)\n"
      "  %f = add %S0, bf16(1.5)\n"
      "  %g = logical_or bool(true), false\n"
      "  %h = add %S0, inf\n"
      "  %i = add %S0, -inf\n"
      "  %j = add %S0, nan\n"
      "  %k = add %S0, -0.0\n"
      "  %l = add %S0, 1e-30\n"
      "  %m = add %S0, 2.5e+300\n"
      "  %n = add %S0, f16(2)\n"
      "  %o = add %S0, i64(-9223372036854775808)\n"
      "  %p = add %S0, 0.1\n"
      "  %q = add %S0, f64(-inf)\n"
      "  %r = add %S0, 1E3\n"
      "  %s = add %S0, 7.\n"
      "  output %a\n"
      "}\n";
  char *p = roundtrip(text);
  if (!p) return;
  CHECK(strstr(p, "  %a = add %S0, 0.5 : f64\n"));
  CHECK(strstr(p, "  %b = add %S0, 3 : f64\n"));
  CHECK(strstr(p, "  %c = logical_and true, false : bool\n"));
  CHECK(strstr(p, "  %d = add %S0, f32(0.5) : f64\n"));
  CHECK(strstr(p, "  %e = add %S0, i32(3) : f64\n"));
  CHECK(strstr(p, "  %f = add %S0, bf16(1.5) : f64\n"));
  CHECK(strstr(p, "  %g = logical_or bool(true), false : bool\n"));
  CHECK(strstr(p, "  %h = add %S0, inf : f64\n"));
  CHECK(strstr(p, "  %i = add %S0, -inf : f64\n"));
  CHECK(strstr(p, "  %j = add %S0, nan : f64\n"));
  CHECK(strstr(p, "  %k = add %S0, -0.0 : f64\n"));
  CHECK(strstr(p, "  %l = add %S0, 1e-30 : f64\n"));
  CHECK(strstr(p, "  %m = add %S0, 2.5e+300 : f64\n"));
  CHECK(strstr(p, "  %n = add %S0, f16(2.0) : f64\n"));
  CHECK(strstr(p, "  %o = add %S0, i64(-9223372036854775808) : f64\n"));
  CHECK(strstr(p, "  %p = add %S0, 0.1 : f64\n"));
  CHECK(strstr(p, "  %q = add %S0, f64(-inf) : f64\n"));
  CHECK(strstr(p, "  %r = add %S0, 1e+03 : f64\n"));
  CHECK(strstr(p, "  %s = add %S0, 7.0 : f64\n"));
  free(p);

  parsed r;
  parse_text(&r, text, strlen(text));
  CHECK_EQ_INT(r.st, FU_OK);
  if (!r.m) return;
  fu_block *b = &r.m->first->body;
  struct {
    int op;
    int operand;
    fu_dtype dt;
    bool typed;
  } want[] = {
      {1, 1, FU_DT_F64, false}, {2, 1, FU_DT_I64, false}, {3, 0, FU_DT_BOOL, false}, {4, 1, FU_DT_F32, true},
      {5, 1, FU_DT_I32, true},  {6, 1, FU_DT_BF16, true}, {7, 0, FU_DT_BOOL, true},  {8, 1, FU_DT_F64, false},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    fu_value *v = nth_op(b, want[i].op)->operands[want[i].operand];
    CHECK(v->is_literal);
    CHECK(v->def == NULL);
    CHECK_EQ_INT(v->type.dtype, want[i].dt);
    CHECK_EQ_INT(v->type.rank, FU_SCALAR_RANK);
    CHECK_EQ_INT(v->literal_typed, want[i].typed);
  }
  CHECK(nth_op(b, 1)->operands[1]->literal.f == 0.5);
  CHECK_EQ_INT(nth_op(b, 2)->operands[1]->literal.i, 3);
  CHECK(nth_op(b, 3)->operands[0]->literal.b && !nth_op(b, 3)->operands[1]->literal.b);
  CHECK_EQ_INT(nth_op(b, 5)->operands[1]->literal.i, 3);
  CHECK(isinf(nth_op(b, 8)->operands[1]->literal.f) && nth_op(b, 8)->operands[1]->literal.f > 0);
  CHECK(isinf(nth_op(b, 9)->operands[1]->literal.f) && nth_op(b, 9)->operands[1]->literal.f < 0);
  CHECK(isnan(nth_op(b, 10)->operands[1]->literal.f));
  CHECK(signbit(nth_op(b, 11)->operands[1]->literal.f));
  CHECK_EQ_INT(nth_op(b, 15)->operands[1]->literal.i, INT64_MIN);
  /* literal locations point at the literal */
  CHECK_EQ_INT(nth_op(b, 1)->operands[1]->loc.line, 3);
  CHECK_EQ_INT(nth_op(b, 1)->operands[1]->loc.col, 17);
  parsed_free(&r);

  /* doubles survive print -> parse exactly */
  const double vals[] = {0.1, 1.0 / 3.0, 6.02214076e23, 5e-324, 1.7976931348623157e308, -2.5, 123456789.125};
  for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
    fu_strbuf sb;
    fu_strbuf_init(&sb, fu_default_allocator());
    fu_strbuf_puts(&sb, "fusion @x {\n  %S = input f64\n  %a = add %S, ");
    fu_strbuf_put_double(&sb, vals[i]);
    fu_strbuf_puts(&sb, "\n}\n");
    parsed q;
    parse_text(&q, sb.data, sb.len);
    CHECK_EQ_INT(q.st, FU_OK);
    if (q.m) CHECK(nth_op(&q.m->first->body, 1)->operands[1]->literal.f == vals[i]);
    parsed_free(&q);
    fu_strbuf_free(&sb);
  }
}

static void test_segments(void) {
  const char *text =
      "fusion @seg {\n"
      "  %T0 = input f32[64, 128]\n"
      "  %T1 = reshape %T0 : f32[8192]\n"
      "  segment @g0 pointwise (%T1) -> (%T3, %T4) {\n"
      "    %T2 = mul %T1, 0.5\n"
      "    %T3 = erf %T2\n"
      "    %T4 = neg %T2\n"
      "  }\n"
      "  segment @g1 reduction (%T3) -> (%T5) {\n"
      "    %T5 = sum %T3 {axes=[0], keepdim=true}\n"
      "  }\n"
      "  %T6 = add %T4, %T5\n"
      "  output %T6\n"
      "}\n";
  char *p = roundtrip(text);
  if (!p) return;
  CHECK(strstr(p, "  segment @g0 pointwise (%T1) -> (%T3, %T4) {\n"
                  "    %T2 = mul %T1, 0.5 : f32[8192]\n"
                  "    %T3 = erf %T2 : f32[8192]\n"
                  "    %T4 = neg %T2 : f32[8192]\n"
                  "  }\n"
                  "  segment @g1 reduction (%T3) -> (%T5) {\n"
                  "    %T5 = sum %T3 {axes=[0], keepdim=true} : f32[1]\n"
                  "  }\n"
                  "  %T6 = add %T4, %T5 : f32[8192]\n"));
  free(p);
  parsed r;
  parse_text(&r, text, strlen(text));
  CHECK_EQ_INT(r.st, FU_OK);
  if (!r.m) return;
  fu_fusion *f = r.m->first;
  fu_op *g0 = nth_op(&f->body, 2);
  CHECK_EQ_INT(g0->kind, FU_OP_SEGMENT);
  CHECK_STR(g0->u.segment.name, "g0");
  CHECK_EQ_INT(g0->u.segment.kind, FU_SK_POINTWISE);
  CHECK_EQ_INT(g0->n_operands, 1);
  CHECK(g0->operands[0] == nth_op(&f->body, 1)->results[0]);
  CHECK_EQ_INT(g0->n_results, 0);
  CHECK_EQ_INT(g0->u.segment.n_outputs, 2);
  fu_block *body = g0->u.segment.body;
  CHECK(body && body->parent_op == g0 && body->fusion == f);
  CHECK(body->first && body->first->parent == body);
  CHECK(g0->u.segment.outputs[0] == nth_op(body, 1)->results[0]);
  CHECK(g0->u.segment.outputs[1] == nth_op(body, 2)->results[0]);
  CHECK_EQ_INT(g0->loc.line, 4);
  CHECK_EQ_INT(g0->loc.col, 3);
  /* %T4 defined in g0 is used after the segment */
  fu_op *add = nth_op(&f->body, 4);
  CHECK(add->operands[0] == nth_op(body, 2)->results[0]);
  fu_diag_engine d;
  fu_diag_init(&d, fu_default_allocator());
  CHECK_EQ_INT(fu_verify_module(r.m, &d), FU_OK);
  parsed_free(&r);

  /* an empty segment (the verifier rejects it, the text format does not) */
  parse_text(&r, "fusion @e { segment @g2 pointwise () -> () { } }", 48);
  CHECK_EQ_INT(r.st, FU_OK);
  if (r.m) {
    fu_op *g2 = r.m->first->body.first;
    CHECK(g2->u.segment.body && g2->u.segment.body->first == NULL && g2->u.segment.n_outputs == 0);
    char *e = print_str(r.m);
    CHECK_STR(e, "fusion @e {\n  segment @g2 pointwise () -> () {\n  }\n}\n");
    free(e);
  }
  parsed_free(&r);

  /* nested segments parse and print (the verifier decides if they are valid) */
  char *q = roundtrip("fusion @n {\n  %a = input f32[2]\n  segment @o pointwise (%a) -> (%c) {\n"
                      "    segment @i pointwise (%a) -> (%c) {\n      %c = neg %a\n    }\n  }\n  output %c\n}\n");
  if (q) CHECK(strstr(q, "    segment @i pointwise (%a) -> (%c) {\n      %c = neg %a : f32[2]\n    }\n  }\n"));
  free(q);
}

/* Fusions are separated by one blank line; comments and layout vanish. */
static void test_multi_fusion_and_comments(void) {
  const char *text = "// header comment\n"
                     "fusion @a { %x = input f32[3] // trailing\n"
                     "  %y = neg %x output %y }\n"
                     "\n\n// between\n"
                     "fusion @b {\n"
                     "\t%s = input i32\n"
                     "}\n";
  char *p = roundtrip(text);
  if (!p) return;
  CHECK_STR(p, "fusion @a {\n"
               "  %x = input f32[3]\n"
               "  %y = neg %x : f32[3]\n"
               "  output %y\n"
               "}\n"
               "\n"
               "fusion @b {\n"
               "  %s = input i32\n"
               "}\n");
  free(p);
  /* the empty module and an empty fusion */
  parsed r;
  parse_text(&r, "", 0);
  CHECK_EQ_INT(r.st, FU_OK);
  CHECK(r.m && r.m->first == NULL);
  parsed_free(&r);
  parse_text(&r, "  // only a comment", 19);
  CHECK_EQ_INT(r.st, FU_OK);
  parsed_free(&r);
  char *e = roundtrip("fusion @e{}");
  if (e) CHECK_STR(e, "fusion @e {\n}\n");
  free(e);
  /* same value names in different fusions are independent */
  char *s = roundtrip("fusion @a { %x = input f32 }\nfusion @b { %x = input i32 }");
  free(s);
}

static void test_locations(void) {
  const char *text = "// c\n"
                     "fusion   @loc {\n"
                     "  %T0 = input f32[4]\n"
                     "      %T1, %T2 = var_mean %T0 {axes=[0]}\n"
                     "\t%T3 = add %T1,\n"
                     "            %T2\n"
                     "  output %T3\n"
                     "}\n";
  parsed r;
  parse_text(&r, text, strlen(text));
  CHECK_EQ_INT(r.st, FU_OK);
  if (!r.m) return;
  fu_fusion *f = r.m->first;
  CHECK_EQ_INT(f->loc.line, 2);
  CHECK_EQ_INT(f->loc.col, 10);
  CHECK(f->loc.src == &r.src);
  CHECK(r.m->source == &r.src);
  CHECK_STR(f->name, "loc");
  fu_op *in = nth_op(&f->body, 0), *vm = nth_op(&f->body, 1), *add = nth_op(&f->body, 2), *out = nth_op(&f->body, 3);
  CHECK_EQ_INT(in->loc.line, 3);
  CHECK_EQ_INT(in->loc.col, 3);
  CHECK_EQ_INT(vm->loc.line, 4);
  CHECK_EQ_INT(vm->loc.col, 7);
  CHECK_EQ_INT(vm->results[1]->loc.col, 12); /* each result at its own name */
  CHECK_EQ_INT(add->loc.line, 5);
  CHECK_EQ_INT(add->loc.col, 2);
  CHECK_EQ_INT(out->loc.line, 7);
  CHECK_EQ_INT(out->loc.col, 3);
  /* print_locs appends the locations as comments, and the text still parses */
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_print_options o = {true};
  fu_print_module(&sb, r.m, &o);
  CHECK(strstr(sb.data, "fusion @loc {  // 2:10\n"));
  CHECK(strstr(sb.data, "  %T1, %T2 = var_mean %T0 {axes=[0], correction=1} : f32[], f32[]  // 4:7\n"));
  CHECK(strstr(sb.data, "  output %T3  // 7:3\n"));
  parsed q;
  parse_text(&q, sb.data, sb.len);
  CHECK_EQ_INT(q.st, FU_OK);
  parsed_free(&q);
  /* single op printing, value refs and types */
  fu_strbuf_clear(&sb);
  fu_print_op(&sb, add, 4, NULL);
  CHECK_STR(sb.data, "    %T3 = add %T1, %T2 : f32[]\n");
  fu_strbuf_clear(&sb);
  fu_print_value_ref(&sb, vm->results[1]);
  CHECK_STR(sb.data, "%T2");
  fu_strbuf_clear(&sb);
  fu_print_type(&sb, &in->results[0]->type);
  CHECK_STR(sb.data, "f32[4]");
  fu_strbuf_free(&sb);
  parsed_free(&r);

  /* first_line shifts reported lines (split-input-file chunks) */
  fu_strbuf diags;
  fu_strbuf_init(&diags, fu_default_allocator());
  fu_diag_engine d;
  fu_diag_init(&d, fu_default_allocator());
  d.handler = capture;
  d.user = &diags;
  const char *bad = "fusion @f {\n  %a = nope\n}\n";
  fu_source src = {"s.fir", bad, strlen(bad), 40};
  fu_module *m = NULL;
  CHECK_EQ_INT(fu_parse_module(&src, fu_default_allocator(), &d, &m), FU_ERR_PARSE);
  CHECK(m == NULL);
  CHECK_STR(diags.data, "41:8: error: unknown op 'nope'\n");
  fu_strbuf_free(&diags);
}

/* Unnamed, duplicate and invalid names get fresh names that do not clash. */
static void test_generated_names(void) {
  fu_module *m = fu_module_new(fu_default_allocator());
  fu_fusion *f = fu_fusion_new(m, "gen", fu_loc_none());
  fu_extent dims[1] = {{4, NULL}};
  fu_op *in = fu_op_new(f, FU_OP_INPUT, NULL, 0, 1, fu_loc_none());
  in->u.input.example.rank = -1;
  in->results[0]->type = (fu_type){FU_DT_F32, 1, fu_dims_copy(m, dims, 1)};
  fu_block_append(&f->body, in);
  fu_value *x = in->results[0]; /* id 0, unnamed */
  fu_value *ops[2] = {x, fu_literal_f(f, FU_DT_F32, 2.0)};
  fu_op *a = fu_op_new(f, FU_OP_MUL, ops, 2, 1, fu_loc_none());
  a->results[0]->type = x->type;
  fu_value_set_name(m, a->results[0], "v0"); /* the name v0 is taken */
  fu_block_append(&f->body, a);
  fu_op *b = fu_op_new(f, FU_OP_NEG, &a->results[0], 1, 1, fu_loc_none());
  b->results[0]->type = x->type;
  fu_value_set_name(m, b->results[0], "v0"); /* duplicate */
  fu_block_append(&f->body, b);
  fu_op *c = fu_op_new(f, FU_OP_NEG, &b->results[0], 1, 1, fu_loc_none());
  c->results[0]->type = x->type;
  fu_value_set_name(m, c->results[0], "bad name"); /* invalid */
  fu_block_append(&f->body, c);
  fu_op *o = fu_op_new(f, FU_OP_OUTPUT, &c->results[0], 1, 0, fu_loc_none());
  fu_block_append(&f->body, o);
  char *p = print_str(m);
  CHECK_STR(p, "fusion @gen {\n"
               "  %v0_1 = input f32[4]\n"
               "  %v0 = mul %v0_1, f32(2.0) : f32[4]\n"
               "  %v3 = neg %v0 : f32[4]\n"
               "  %v4 = neg %v3 : f32[4]\n"
               "  output %v4\n"
               "}\n");
  char *q = roundtrip(p);
  if (q) CHECK_STR(q, p);
  free(q);
  free(p);
  fu_module_free(m);
}

/* ---- errors ---------------------------------------------------------------- */

#define PRE "fusion @f {\n  %T0 = input f32[4]\n"

static void test_errors_syntax(void) {
  /* truncated input, at several depths */
  EXPECT_ERROR("fusion", "1:7: error: expected '@name' after 'fusion', got end of input");
  EXPECT_ERROR("fusion @f", "1:10: error: expected '{' after the fusion name, got end of input");
  EXPECT_ERROR("fusion @f {", "1:12: error: expected an op, 'output', 'segment' or '}', got end of input");
  EXPECT_ERROR(PRE, "3:1: error: expected an op, 'output', 'segment' or '}', got end of input");
  EXPECT_ERROR("fusion @f {\n  %T0 = input f32[", "2:19: error: expected an extent (an integer or a symbol), got end of input");
  EXPECT_ERROR("fusion @f {\n  %T0 = input f32[4", "2:20: error: expected ',' or ']' in the shape, got end of input");
  EXPECT_ERROR("fusion @f {\n  %T0 = input", "2:14: error: expected a type after 'input', got end of input");
  EXPECT_ERROR("fusion @f {\n  %T0 =", "2:8: error: expected an op name, got end of input");
  EXPECT_ERROR("fusion @f {\n  %T0", "2:6: error: expected '=' after the result names, got end of input");
  EXPECT_ERROR(PRE "  %a = sum %T0 {axes=[0", "3:24: error: expected ',' or ']' in the list, got end of input");
  EXPECT_ERROR(PRE "  %a = sum %T0 {axes", "3:21: error: expected '=' after the attribute name, got end of input");
  EXPECT_ERROR(PRE "  %a = sum %T0 {axes=[0]", "3:25: error: expected ',' or '}' in the attribute dictionary, got end of input");
  EXPECT_ERROR(PRE "  %a = add %T0,", "3:16: error: expected an operand (a %value or a literal), got end of input");
  EXPECT_ERROR(PRE "  %a = add %T0, f32(", "3:21: error: expected a number, true or false in the typed literal, got end of input");
  EXPECT_ERROR(PRE "  %a = add %T0, f32(1", "3:22: error: expected ')' after the literal value, got end of input");
  EXPECT_ERROR(PRE "  output", "3:9: error: expected a %value to output, got end of input");
  EXPECT_ERROR(PRE "  segment", "3:10: error: expected '@name' after 'segment', got end of input");
  EXPECT_ERROR(PRE "  segment @g", "3:13: error: expected a scheduler kind after the segment name, got end of input");
  EXPECT_ERROR(PRE "  segment @g pointwise", "3:23: error: expected '(' before the segment inputs, got end of input");
  EXPECT_ERROR(PRE "  segment @g pointwise (%T0", "3:28: error: expected ',' or ')' in the value list, got end of input");
  EXPECT_ERROR(PRE "  segment @g pointwise (%T0)", "3:29: error: expected '->' after the segment inputs, got end of input");
  EXPECT_ERROR(PRE "  segment @g pointwise (%T0) ->", "3:32: error: expected '(' before the segment outputs, got end of input");
  EXPECT_ERROR(PRE "  segment @g pointwise (%T0) -> ()", "3:35: error: expected '{' to open the segment body, got end of input");
  EXPECT_ERROR(PRE "  segment @g pointwise (%T0) -> () {", "3:37: error: expected an op, 'output', 'segment' or '}', got end of input");
  /* stray and malformed tokens */
  EXPECT_ERROR("}", "1:1: error: expected 'fusion', got '}'");
  EXPECT_ERROR("fusion @a {}\n]", "2:1: error: expected 'fusion', got ']'");
  EXPECT_ERROR("fusion f {}", "1:8: error: expected '@name' after 'fusion', got identifier 'f'");
  EXPECT_ERROR(PRE "  %a %b = neg %T0\n}", "3:6: error: expected '=' after the result names, got '%b'");
  EXPECT_ERROR(PRE "  %a, = neg %T0\n}", "3:7: error: expected a result name, got '='");
  EXPECT_ERROR(PRE "  %a = \"neg\" %T0\n}", "3:8: error: expected an op name, got string \"neg\"");
  EXPECT_ERROR(PRE "  %a = add %T0 # 1\n}", "3:16: error: unexpected character '#'");
  EXPECT_ERROR(PRE "  %a = add %T0, \x01\n}", "3:17: error: unexpected character '\\x01'");
  EXPECT_ERROR(PRE "  % = neg %T0\n}", "3:3: error: expected a name after '%'");
  EXPECT_ERROR(PRE "  %a = neg %T0 : [4]\n}", "3:18: error: expected a type, got '['");
  EXPECT_ERROR(PRE "  %a = neg %T0 : f32[4.5]\n}", "3:22: error: expected an extent (an integer or a symbol), got number '4.5'");
  EXPECT_ERROR(PRE "  %a = add %T0, foo\n}", "3:17: error: expected an operand (a %value or a literal), got identifier 'foo'");
  EXPECT_ERROR(PRE "  %a = sum %T0 {axes=[0],}\n}", "3:26: error: expected an attribute name, got '}'");
  EXPECT_ERROR(PRE "  %a = sum %T0 {axes=:}\n}", "3:22: error: expected an attribute value, got ':'");
  EXPECT_ERROR(PRE "  output %T0,\n}", "4:1: error: expected a %value to output, got '}'");
  EXPECT_ERROR(PRE "  neg %T0\n}", "3:3: error: expected an op, 'output', 'segment' or '}', got identifier 'neg'");
  EXPECT_ERROR(PRE "  %a = sum %T0 {axes=[[[[[[[[[[[[[[[[[0]]]]]]]]]]]]]]]]]}\n}",
               "3:38: error: attribute lists nested deeper than 16");
  /* numbers and strings */
  EXPECT_ERROR(PRE "  %a = add %T0, 99999999999999999999\n}",
               "3:17: error: integer literal '99999999999999999999' is out of range");
  EXPECT_ERROR(PRE "  %a = add %T0, -9223372036854775809\n}",
               "3:17: error: integer literal '-9223372036854775809' is out of range");
  EXPECT_ERROR(PRE "  %a = add %T0, 1e999\n}", "3:17: error: float literal '1e999' is out of range");
  EXPECT_ERROR(PRE "  %a = add %T0, -1.5e400\n}", "3:17: error: float literal '-1.5e400' is out of range");
  EXPECT_ERROR(PRE "  %a = add %T0, 12abc\n}", "3:17: error: invalid number '12abc'");
  EXPECT_ERROR(PRE "  %a = add %T0, 1.5.2\n}", "3:17: error: invalid number '1.5.2'");
  EXPECT_ERROR(PRE "  %a = add %T0, 1e\n}", "3:17: error: invalid number '1e'");
  EXPECT_ERROR(PRE "  %a = neg %T0 : f32[99999999999999999999]\n}",
               "3:22: error: integer literal '99999999999999999999' is out of range");
  EXPECT_ERROR(PRE "  %T1 = input f32[4] {npy=\"abc\n}", "3:27: error: unterminated string");
  EXPECT_ERROR(PRE "  %T1 = input f32[4] {npy=\"abc", "3:27: error: unterminated string");
  EXPECT_ERROR(PRE "  %T1 = input f32[4] {npy=\"a\\qb\"}\n}", "3:29: error: unknown escape sequence '\\q' in string");
  /* too deep */
  {
    fu_strbuf sb;
    fu_strbuf_init(&sb, fu_default_allocator());
    fu_strbuf_puts(&sb, PRE);
    for (int i = 0; i < 40; i++) fu_strbuf_printf(&sb, "segment @s%d pointwise () -> () {\n", i);
    EXPECT_ERROR(sb.data, "35:33: error: segments nested deeper than 32");
    fu_strbuf_free(&sb);
  }
}

static void test_errors_semantic(void) {
  EXPECT_ERROR(PRE "  %a = foo %T0\n}", "3:8: error: unknown op 'foo'");
  EXPECT_ERROR(PRE "  %a = output %T0\n}", "3:8: error: 'output' cannot appear after '='");
  EXPECT_ERROR(PRE "  %a = sum %T0 {axes=[0], bogus=1}\n}", "3:27: error: unknown attribute 'bogus' for 'sum'");
  EXPECT_ERROR(PRE "  %a = neg %T0 {axes=[0]}\n}", "3:17: error: unknown attribute 'axes' for 'neg'");
  EXPECT_ERROR(PRE "  %a = neg %T0 {host=true}\n}", "3:17: error: unknown attribute 'host' for 'neg'");
  EXPECT_ERROR(PRE "  %a = reshape %T0 {host=1} : f32[2, 2]\n}", "3:26: error: attribute 'host' must be true or false");
  EXPECT_ERROR(PRE "  %a = sum %T0\n}", "3:8: error: 'sum' requires attribute 'axes'");
  EXPECT_ERROR(PRE "  %a = slice %T0 {starts=[0]}\n}", "3:8: error: 'slice' requires attribute 'ends'");
  EXPECT_ERROR(PRE "  %a = sum %T0 {axes=[0], axes=[0]}\n}", "3:27: error: duplicate attribute 'axes'");
  EXPECT_ERROR(PRE "  %a = sum %T0 {axes=0}\n}", "3:22: error: attribute 'axes' must be a list of integers");
  EXPECT_ERROR(PRE "  %a = sum %T0 {axes=[0, true]}\n}", "3:22: error: attribute 'axes' must be a list of integers");
  EXPECT_ERROR(PRE "  %a = sum %T0 {axes=[0], keepdim=1}\n}", "3:35: error: attribute 'keepdim' must be true or false");
  EXPECT_ERROR(PRE "  %a = sum %T0 {axes=[0], dtype=f8}\n}", "3:33: error: unknown dtype 'f8'");
  EXPECT_ERROR(PRE "  %a = sum %T0 {axes=[0], dtype=3}\n}", "3:33: error: attribute 'dtype' must be a dtype");
  EXPECT_ERROR(PRE "  %a = cat %T0, %T0 {dim=[0]}\n}", "3:26: error: attribute 'dim' must be an integer");
  EXPECT_ERROR(PRE "  %a = broadcast %T0 {is_broadcast_dim=[1, 0]}\n}",
               "3:40: error: attribute 'is_broadcast_dim' must be a list of true or false");
  EXPECT_ERROR(PRE "  %a = sum %T0 {axes=[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}\n}",
               "3:22: error: attribute 'axes' has more than 32 entries");
  EXPECT_ERROR(PRE "  %a = slice %T0 {starts=[0], ends=[4, 4]}\n}",
               "3:8: error: 'slice' attributes 'starts', 'ends' and 'steps' must have the same length");
  EXPECT_ERROR(PRE "  %a = add %T0, %T9\n}", "3:17: error: use of undefined value '%T9'");
  EXPECT_ERROR(PRE "  %a = add %a, %T0\n}", "3:12: error: use of undefined value '%a'");
  EXPECT_ERROR(PRE "  output %T7\n}", "3:10: error: use of undefined value '%T7'");
  EXPECT_ERROR(PRE "  %T0 = neg %T0\n}", "3:3: error: redefinition of value '%T0'");
  EXPECT_ERROR(PRE "  %a, %b = neg %T0\n}", "3:3: error: 'neg' defines 1 result, got 2");
  EXPECT_ERROR(PRE "  %a = var_mean %T0 {axes=[0]}\n}", "3:3: error: 'var_mean' defines 2 results, got 1");
  EXPECT_ERROR(PRE "  %a, %b = input f32\n}", "3:3: error: 'input' defines 1 result, got 2");
  EXPECT_ERROR(PRE "  %a = add %T0\n}", "3:8: error: 'add' takes 2 operands, got 1");
  EXPECT_ERROR(PRE "  %a = neg %T0, %T0, %T0\n}", "3:8: error: 'neg' takes 1 operand, got 3");
  EXPECT_ERROR(PRE "  %a = neg\n  %b = neg %T0\n}", "3:8: error: 'neg' takes 1 operand, got 0");
  EXPECT_ERROR(PRE "  %a = cat {dim=0} : f32[4]\n}", "3:8: error: 'cat' takes at least one operand");
  EXPECT_ERROR(PRE "  %a, %b = var_mean %T0 {axes=[0]} : f32\n}",
               "3:12: error: 'var_mean' defines 2 results, but 1 type was given");
  EXPECT_ERROR(PRE "  %a = reshape %T0\n}", "3:8: error: 'reshape' requires a result type (': type')");
  EXPECT_ERROR(PRE "  %a = cast %T0\n}", "3:8: error: 'cast' requires a result type (': type')");
  EXPECT_ERROR(PRE "  %a = full 1.0\n}", "3:8: error: 'full' requires a result type (': type')");
  EXPECT_ERROR(PRE "  %a = neg %T0 : f8[4]\n}", "3:18: error: unknown dtype 'f8'");
  EXPECT_ERROR("fusion @f {\n  %T0 = input u8[4]\n}", "2:15: error: unknown dtype 'u8'");
  EXPECT_ERROR(PRE "  %a = neg %T0 : f32[-3]\n}", "3:22: error: negative extent -3");
  EXPECT_ERROR(PRE "  %a = neg %T0 : f32[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]\n}",
               "3:21: error: tensor rank exceeds the maximum of 16");
  EXPECT_ERROR(PRE "  %a = add %T0, f8(1)\n}", "3:17: error: unknown dtype 'f8'");
  EXPECT_ERROR(PRE "  %a = add %T0, i32(0.5)\n}", "3:21: error: 'i32(...)' needs an integer");
  EXPECT_ERROR(PRE "  %a = add %T0, i32(3000000000)\n}", "3:21: error: value 3000000000 is out of range for i32");
  EXPECT_ERROR(PRE "  %a = add %T0, bool(1)\n}", "3:22: error: 'bool(...)' needs true or false");
  EXPECT_ERROR(PRE "  %a = add %T0, f32(true)\n}", "3:21: error: 'f32(...)' needs a number");
  EXPECT_ERROR("fusion @f {}\nfusion @f {}", "2:8: error: redefinition of fusion '@f'");
  EXPECT_ERROR(PRE "  segment @g pointwise () -> () {\n  }\n  segment @g pointwise () -> () {\n  }\n}",
               "5:11: error: redefinition of segment '@g'");
  EXPECT_ERROR(PRE "  segment @g pointwise (%T0) -> (%zz) {\n  }\n}", "3:34: error: segment output '%zz' is not defined");
  EXPECT_ERROR(PRE "  segment @g pointwise (%nope) -> () {\n  }\n}", "3:25: error: use of undefined value '%nope'");
  EXPECT_ERROR(PRE "  segment @g k () -> () {\n  }\n}",
               "3:14: error: unknown scheduler kind 'k'; valid: pointwise, transpose, reduction, persistent, resize, matmul, scan, "
               "none");
}

static void test_errors_inputs(void) {
  EXPECT_ERROR(PRE "  %T1 = input f32[4, 4] {strides=[1]}\n}",
               "3:34: error: attribute 'strides' has 1 entry, but the input has rank 2");
  EXPECT_ERROR(PRE "  %T1 = input f32[4, 4] {stride_order=[1, 0, 2]}\n}",
               "3:39: error: attribute 'stride_order' has 3 entries, but the input has rank 2");
  EXPECT_ERROR(PRE "  %T1 = input f32[4] {contiguity=[maybe]}\n}",
               "3:34: error: attribute 'contiguity' must be a list of true, false or none");
  EXPECT_ERROR(PRE "  %S = input f32 {strides=[]}\n}", "3:27: error: attribute 'strides' is not valid on a scalar input");
  EXPECT_ERROR(PRE "  %T1 = input f32[4] {example=1.0}\n}", "3:31: error: example=<number> is only valid on a scalar input");
  EXPECT_ERROR(PRE "  %T1 = input f32[4] {example=foo}\n}",
               "3:31: error: attribute 'example' must be randn, rand, zeros, ones, randint or a number");
  EXPECT_ERROR(PRE "  %T1 = input f32[4] {example=randn, npy=\"x.npy\"}\n}",
               "3:42: error: attributes 'example' and 'npy' are mutually exclusive");
  EXPECT_ERROR(PRE "  %T1 = input f32[4] {npy=3}\n}", "3:27: error: attribute 'npy' must be a string");
  EXPECT_ERROR(PRE "  %T1 = input f32[4] {seed=1}\n}", "3:28: error: attribute 'seed' requires example=randn, rand or randint");
  EXPECT_ERROR(PRE "  %T1 = input f32[4] {example=randn, seed=-1}\n}", "3:43: error: attribute 'seed' must not be negative");
  EXPECT_ERROR(PRE "  %T1 = input i32[4] {example=randint}\n}", "3:31: error: example=randint requires attribute 'high'");
  EXPECT_ERROR(PRE "  %T1 = input f32[4] {example=zeros, low=0}\n}", "3:42: error: attribute 'low' requires example=randint");
  EXPECT_ERROR(PRE "  %T1 = input f32[4] {example_shape=[4]}\n}",
               "3:37: error: attribute 'example_shape' requires 'example' or 'npy'");
  EXPECT_ERROR(PRE "  %T1 = input f32[4] {example=ones, example_shape=[-4]}\n}",
               "3:51: error: attribute 'example_shape' has a negative size");
  EXPECT_ERROR(PRE "  %T1 = input f32[4] {example=ones, example_strides=[1, 1]}\n}",
               "3:53: error: attribute 'example_strides' has 2 entries, but the input has rank 1");
  EXPECT_ERROR(PRE "  %S1 = input i32 {example=0.5}\n}", "3:28: error: example value for an i32 input must be an integer");
  EXPECT_ERROR(PRE "  %S1 = input i32 {example=4000000000}\n}", "3:28: error: example value 4000000000 is out of range for i32");
  EXPECT_ERROR(PRE "  %S1 = input f32 {example=true}\n}", "3:28: error: example value for an f32 input must be a number");
  EXPECT_ERROR(PRE "  %S1 = input bool {example=1}\n}", "3:29: error: example value for a bool input must be true or false");
  EXPECT_ERROR(PRE "  %S1 = input f32 {example=1.0, example_shape=[]}\n}",
               "3:47: error: attribute 'example_shape' is not valid on a scalar input");
  EXPECT_ERROR(PRE "  %T1 = input f32[4] {example=randn, bogus=1}\n}", "3:38: error: unknown attribute 'bogus' for 'input'");
}

/* One error per mistake: poisoned values do not cascade, semantic errors
 * keep going in the same fusion, syntax errors resume at the next fusion. */
static void test_error_recovery(void) {
  parsed r;
  const char *t1 = PRE "  %a = foo %T0\n  %b = neg %a\n  %c = add %b, %a\n  %d = bar %c\n  output %d\n}\n";
  parse_text(&r, t1, strlen(t1));
  CHECK_EQ_INT(r.st, FU_ERR_PARSE);
  CHECK_STR(diags_of(&r), "3:8: error: unknown op 'foo'\n6:8: error: unknown op 'bar'\n");
  parsed_free(&r);

  const char *t2 = "fusion @a {\n  %x = input f32[4\n}\n"
                   "fusion @b {\n  %y = input f32[4]\n  %z = nope %y\n}\n"
                   "fusion @c {\n  %y = input f32[4]\n  output %q\n}\n";
  parse_text(&r, t2, strlen(t2));
  CHECK_EQ_INT(r.st, FU_ERR_PARSE);
  CHECK(r.m == NULL);
  CHECK_STR(diags_of(&r), "3:1: error: expected ',' or ']' in the shape, got '}'\n"
                          "6:8: error: unknown op 'nope'\n"
                          "10:10: error: use of undefined value '%q'\n");
  parsed_free(&r);

  /* redefinition carries a note at the first definition */
  const char *t3 = PRE "  %T0 = neg %T0\n}\n";
  parse_text(&r, t3, strlen(t3));
  CHECK_STR(diags_of(&r), "3:3: error: redefinition of value '%T0'\n2:3: note: previous definition of '%T0' is here\n");
  parsed_free(&r);

  /* a type error found by inference is located at the op */
  const char *t4 = PRE "  %T1 = input f32[5]\n  %a = add %T0, %T1\n  %b = neg %a\n}\n";
  parse_text(&r, t4, strlen(t4));
  CHECK_EQ_INT(r.st, FU_ERR_PARSE);
  CHECK(strncmp(diags_of(&r), "4:3: error: ", 12) == 0);
  CHECK(strstr(diags_of(&r), "\n5:") == NULL); /* nothing about %b */
  printf("inference error: %s", diags_of(&r));
  parsed_free(&r);

  /* a NULL diag engine is allowed and still fails */
  fu_source src = {"x", "fusion", 6, 1};
  fu_module *m = (fu_module *)&src;
  CHECK_EQ_INT(fu_parse_module(&src, fu_default_allocator(), NULL, &m), FU_ERR_PARSE);
  CHECK(m == NULL);
}

/* ---- fuzzing ------------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Must not crash; when a mutant parses, it must also round-trip. */
static void fuzz_one(const char *text, size_t len, int *n_ok) {
  parsed r;
  parse_text(&r, text, len);
  CHECK((r.st == FU_OK) == (r.m != NULL));
  CHECK(r.st == FU_OK || r.st == FU_ERR_PARSE);
  if (r.st == FU_OK) {
    (*n_ok)++;
    char *p1 = print_str(r.m);
    parsed q;
    parse_text(&q, p1, strlen(p1));
    fu_test_checks++;
    if (q.st != FU_OK) {
      fu_test_fail(__FILE__, __LINE__, "mutant parsed but its print did not:\n%.*s\n--- printed:\n%s\n--- diags:\n%s",
                   (int)len, text, p1, diags_of(&q));
    } else {
      char *p2 = print_str(q.m);
      CHECK_STR(p2, p1);
      free(p2);
    }
    parsed_free(&q);
    free(p1);
  } else {
    CHECK(r.diags.len > 0); /* a failure always says why */
  }
  parsed_free(&r);
}

static const char *const SEG_TEXT =
    "fusion @s {\n  %T0 = input f32[N] {example=randn}\n  segment @g0 pointwise (%T0) -> (%T2) {\n"
    "    %T1 = mul %T0, f32(0.5)\n    %T2 = sum %T1 {axes=[0], keepdim=true}\n  }\n  output %T2\n}\n";

static void test_fuzz(void) {
  uint64_t seed = 0x9E3779B97F4A7C15ull;
  int n_ok = 0;
  const char *corpus[] = {ALL_OPS, SEG_TEXT};
  /* every truncation */
  for (int c = 0; c < 2; c++) {
    size_t len = strlen(corpus[c]);
    size_t step = len > 2000 ? 3 : 1;
    for (size_t i = 0; i < len; i += step) fuzz_one(corpus[c], i, &n_ok);
  }
  /* byte mutations from an alphabet of meaningful characters */
  static const char alpha[] = "%@{}[](),=:->\"\\ \n0123456789.eE-_abfinrstux/";
  char *buf = malloc(strlen(ALL_OPS) + 64);
  for (int it = 0; it < 3000; it++) {
    const char *src = corpus[it & 1];
    size_t len = strlen(src);
    memcpy(buf, src, len);
    int edits = 1 + (int)(rng_next(&seed) % 4);
    for (int e = 0; e < edits; e++) {
      size_t pos = rng_next(&seed) % len;
      uint64_t r = rng_next(&seed);
      switch (r % 4) {
      case 0: buf[pos] = alpha[(r >> 8) % (sizeof alpha - 1)]; break;
      case 1: buf[pos] = (char)(r >> 16); break; /* any byte, NUL included */
      case 2: /* delete a short run */
        if (len > 8) {
          size_t n = 1 + (r >> 8) % 6;
          if (pos + n > len) n = len - pos;
          memmove(buf + pos, buf + pos + n, len - pos - n);
          len -= n;
        }
        break;
      default: { /* duplicate a short run */
        size_t n = 1 + (r >> 8) % 8;
        if (pos + n > len) n = len - pos;
        if (len + n < strlen(ALL_OPS) + 64) {
          memmove(buf + pos + n, buf + pos, len - pos);
          len += n;
        }
        break;
      }
      }
    }
    fuzz_one(buf, len, &n_ok);
  }
  free(buf);
  /* the lit round-trip files: truncations and single-byte edits */
  static const char *const files[] = {"ops.fir", "inputs.fir", "segments.fir", "literals.fir", "comments.fir"};
  for (size_t fi = 0; fi < sizeof files / sizeof files[0]; fi++) {
    char path[512];
    snprintf(path, sizeof path, "%s/lit/ir/%s", FUSER_SOURCE_DIR, files[fi]);
    FILE *fp = fopen(path, "rb");
    CHECK(fp != NULL);
    if (!fp) continue;
    char *text = malloc(1 << 16);
    size_t len = fread(text, 1, (1 << 16) - 1, fp);
    fclose(fp);
    int ok_before = n_ok;
    fuzz_one(text, len, &n_ok);
    CHECK_EQ_INT(n_ok, ok_before + 1); /* the file itself parses */
    for (int it = 0; it < 300; it++) {
      size_t cut = rng_next(&seed) % (len + 1);
      fuzz_one(text, cut, &n_ok);
      size_t pos = rng_next(&seed) % len;
      char saved = text[pos];
      text[pos] = alpha[rng_next(&seed) % (sizeof alpha - 1)];
      fuzz_one(text, len, &n_ok);
      text[pos] = saved;
    }
    free(text);
  }
  /* pure random bytes, and random token soup */
  static const char *const toks[] = {"fusion", "@f",  "{",     "}",   "%a",  "%b",     "=",    "input", "f32",
                                     "[",      "]",   ",",     "4",   "N",   "add",    "neg",  ":",     "output",
                                     "segment", "->", "(",     ")",   "0.5", "true",   "none", "sum",   "axes",
                                     "\"s\"",  "f32(", "-inf", "var_mean", "example", "randn", "//c\n", "i32"};
  char rnd[300];
  for (int it = 0; it < 3000; it++) {
    size_t len = rng_next(&seed) % sizeof rnd;
    if (it & 1) {
      for (size_t i = 0; i < len; i++) rnd[i] = (char)rng_next(&seed);
    } else {
      size_t o = 0;
      while (o < len) {
        const char *t = toks[rng_next(&seed) % (sizeof toks / sizeof toks[0])];
        size_t n = strlen(t);
        if (o + n + 1 > sizeof rnd) break;
        memcpy(rnd + o, t, n);
        o += n;
        rnd[o++] = ' ';
      }
      len = o;
    }
    fuzz_one(rnd, len, &n_ok);
  }
  printf("fuzz: %d inputs parsed successfully and round-tripped\n", n_ok);
  CHECK(n_ok > 0);
}

/* ---- scale ---------------------------------------------------------------- */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* 100,000 ops: parse, verify and print stay linear and fast. */
static void test_scale(void) {
  enum { N_OPS = 100000 };
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_strbuf_puts(&sb, "fusion @big {\n  %T0 = input f32[N, 1024] {example=randn}\n  %S0 = input f32\n");
  fu_strbuf_puts(&sb, "  %v0 = neg %T0\n");
  for (int i = 1; i < N_OPS; i++) {
    switch (i % 4) {
    case 0: fu_strbuf_printf(&sb, "  %%v%d = add %%v%d, %%T0 : f32[N, 1024]\n", i, i - 1); break;
    case 1: fu_strbuf_printf(&sb, "  %%v%d = mul %%v%d, 0.5\n", i, i - 1); break;
    case 2: fu_strbuf_printf(&sb, "  %%v%d = sub %%S0, %%v%d\n", i, i - 1); break;
    default: fu_strbuf_printf(&sb, "  %%v%d = exp %%v%d\n", i, i - 1); break;
    }
  }
  fu_strbuf_printf(&sb, "  output %%v%d\n}\n", N_OPS - 1);
  double t0 = now_s();
  parsed r;
  parse_text(&r, sb.data, sb.len);
  double t1 = now_s();
  CHECK_EQ_INT(r.st, FU_OK);
  if (r.m) {
    fu_diag_engine d;
    fu_diag_init(&d, fu_default_allocator());
    CHECK_EQ_INT(fu_verify_module(r.m, &d), FU_OK);
    double t2 = now_s();
    fu_strbuf out;
    fu_strbuf_init(&out, fu_default_allocator());
    fu_print_module(&out, r.m, NULL);
    double t3 = now_s();
    CHECK(out.len > sb.len / 2);
    printf("scale: %d ops, %zu bytes: parse %.1f ms, verify %.1f ms, print %.1f ms\n", N_OPS, sb.len,
           (t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3);
    /* generous bound so sanitizer builds pass; the release build is ~10x under */
    CHECK(t3 - t0 < 5.0);
    fu_strbuf_free(&out);
  }
  parsed_free(&r);
  fu_strbuf_free(&sb);

  /* a very long operand list and a long symbol do not go quadratic or overflow */
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_strbuf_puts(&sb, "fusion @wide {\n  %a = input f32[4]\n  %c = cat %a");
  for (int i = 0; i < 20000; i++) fu_strbuf_puts(&sb, ", %a");
  fu_strbuf_puts(&sb, " {dim=0}\n}\n");
  t0 = now_s();
  parse_text(&r, sb.data, sb.len);
  CHECK_EQ_INT(r.st, FU_OK);
  CHECK(now_s() - t0 < 2.0);
  if (r.m) CHECK_EQ_INT(r.m->first->body.last->results[0]->type.dims[0].value, 4 * 20001);
  parsed_free(&r);
  fu_strbuf_free(&sb);
}

FU_TEST_MAIN(FU_TEST(test_roundtrip_all_ops), FU_TEST(test_payloads), FU_TEST(test_literals), FU_TEST(test_segments),
             FU_TEST(test_multi_fusion_and_comments), FU_TEST(test_locations), FU_TEST(test_generated_names),
             FU_TEST(test_errors_syntax), FU_TEST(test_errors_semantic), FU_TEST(test_errors_inputs),
             FU_TEST(test_error_recovery), FU_TEST(test_fuzz), FU_TEST(test_scale))
