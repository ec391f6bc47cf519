/* Unit tests for the nvFuser Python frontend: lexer, parser, op mapping,
 * symbol unification, example data, errors, and export round trips. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuser/frontend.h"
#include "fuser/print.h"
#include "harness.h"

/* ---- helpers ------------------------------------------------------------ */

typedef struct capture {
  char text[4096];
  size_t len;
  unsigned n;
} capture;

/* Diagnostics as "line:col: severity: message" lines. */
static void capture_handler(void *user, const fu_diagnostic *d) {
  capture *c = user;
  c->n++;
  if (c->len < sizeof c->text)
    c->len += (size_t)snprintf(c->text + c->len, sizeof c->text - c->len, "%u:%u: %s: %s\n", fu_loc_file_line(d->loc),
                               d->loc.col, fu_severity_name(d->severity), d->message);
}

static void capture_engine(fu_diag_engine *e, capture *c) {
  memset(c, 0, sizeof *c);
  fu_diag_init(e, fu_default_allocator());
  e->handler = capture_handler;
  e->user = c;
}

static fu_source make_src(const char *text) {
  fu_source s = {"t.py", text, strlen(text), 1};
  return s;
}

/* Import `text`; returns the module (NULL on error) and the diagnostics. */
static fu_module *import_text(const fu_source *src, capture *c, fu_status *st_out) {
  fu_diag_engine e;
  capture_engine(&e, c);
  fu_module *m = NULL;
  fu_status st = fu_py_import(src, fu_default_allocator(), &e, NULL, &m);
  if (st_out) *st_out = st;
  return m;
}

/* The first diagnostic line, for scripts that must fail. */
static const char *first_error(const char *text) {
  static capture c;
  fu_source src = make_src(text);
  fu_status st;
  fu_module *m = import_text(&src, &c, &st);
  if (m) {
    fu_module_free(m);
    return "(imported without error)";
  }
  if (st == FU_OK) return "(no status)";
  char *nl = strchr(c.text, '\n');
  if (nl) *nl = '\0';
  return c.text;
}

static fu_value *find_value(fu_fusion *f, const char *name) {
  for (fu_op *op = f->body.first; op; op = op->next)
    for (uint32_t r = 0; r < op->n_results; r++)
      if (op->results[r]->name && strcmp(op->results[r]->name, name) == 0) return op->results[r];
  return NULL;
}

static const char *type_str(const fu_value *v) {
  static char buf[256];
  if (!v) return "(no value)";
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_print_type(&sb, &v->type);
  snprintf(buf, sizeof buf, "%s", sb.data ? sb.data : "");
  fu_strbuf_free(&sb);
  return buf;
}

static const char *op_str(const fu_op *op) {
  static char buf[512];
  if (!op) return "(no op)";
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_print_op(&sb, op, 0, NULL);
  snprintf(buf, sizeof buf, "%s", sb.data ? sb.data : "");
  fu_strbuf_free(&sb);
  char *nl = strchr(buf, '\n');
  if (nl) *nl = '\0';
  return buf;
}

static const fu_op *def_of(fu_fusion *f, const char *name) {
  fu_value *v = find_value(f, name);
  return v ? v->def : NULL;
}

#define DEF "def f(fd : FusionDefinition) -> None :\n"
#define T2D "    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)\n"

/* ---- lexer -------------------------------------------------------------- */

static void tokenize(const char *text, fu_py_tokens *t, capture *c, fu_status *st) {
  fu_diag_engine e;
  capture_engine(&e, c);
  fu_source src = make_src(text);
  *st = fu_py_tokenize(&src, fu_default_allocator(), &e, t);
}

static void test_lex_basic_tokens(void) {
  fu_py_tokens t;
  capture c;
  fu_status st;
  tokenize("a = fd.ops.add(T0, 1.5e3, 0x1f, 1_000, .5, 7)  # comment\n", &t, &c, &st);
  CHECK_EQ_INT(st, FU_OK);
  static const fu_py_tok_kind kinds[] = {
      FU_PY_TOK_NAME, FU_PY_TOK_OP, FU_PY_TOK_NAME,    FU_PY_TOK_OP, FU_PY_TOK_NAME,  FU_PY_TOK_OP,
      FU_PY_TOK_NAME, FU_PY_TOK_OP, FU_PY_TOK_NAME,    FU_PY_TOK_OP, FU_PY_TOK_FLOAT, FU_PY_TOK_OP,
      FU_PY_TOK_INT,  FU_PY_TOK_OP, FU_PY_TOK_INT,     FU_PY_TOK_OP, FU_PY_TOK_FLOAT, FU_PY_TOK_OP,
      FU_PY_TOK_INT,  FU_PY_TOK_OP, FU_PY_TOK_NEWLINE, FU_PY_TOK_EOF};
  CHECK_EQ_INT(t.n, sizeof kinds / sizeof kinds[0]);
  for (size_t i = 0; i < t.n && i < sizeof kinds / sizeof kinds[0]; i++) CHECK_EQ_INT(t.v[i].kind, kinds[i]);
  if (t.n == sizeof kinds / sizeof kinds[0]) {
    CHECK_NEAR(t.v[10].value.f, 1500.0, 0);
    CHECK_EQ_INT(t.v[12].value.i, 31);
    CHECK_EQ_INT(t.v[14].value.i, 1000);
    CHECK_NEAR(t.v[16].value.f, 0.5, 0);
    CHECK_EQ_INT(t.v[18].value.i, 7);
    CHECK_EQ_INT(t.v[10].loc.col, 20);
    CHECK(fu_py_tok_is(&t.v[5], "."));
  }
  fu_py_tokens_free(&t);
}

static void test_lex_lines_and_indentation(void) {
  fu_py_tokens t;
  capture c;
  fu_status st;
  /* brackets join lines, backslashes join lines, comments and blank lines
   * vanish, nested blocks give INDENT/DEDENT pairs, CRLF works */
  tokenize(
      "def f(fd,\r\n      x):\r\n\r\n    # only a comment\r\n    a = [1,\r\n  2]\r\n    if b:\r\n"
      "        c = 1 + \\\r\n 2\r\nd = 3",
      &t, &c, &st);
  CHECK_EQ_INT(st, FU_OK);
  int newlines = 0, indents = 0, dedents = 0;
  for (size_t i = 0; i < t.n; i++) {
    newlines += t.v[i].kind == FU_PY_TOK_NEWLINE;
    indents += t.v[i].kind == FU_PY_TOK_INDENT;
    dedents += t.v[i].kind == FU_PY_TOK_DEDENT;
  }
  CHECK_EQ_INT(newlines, 5); /* def, a = [...], if, c = ..., d = 3 (added at EOF) */
  CHECK_EQ_INT(indents, 2);
  CHECK_EQ_INT(dedents, 2);
  /* `d` is on line 10, column 1 */
  const fu_py_token *d = NULL;
  for (size_t i = 0; i < t.n; i++)
    if (fu_py_tok_is(&t.v[i], "d")) d = &t.v[i];
  CHECK(d != NULL);
  if (d) {
    CHECK_EQ_INT(d->loc.line, 10);
    CHECK_EQ_INT(d->loc.col, 1);
  }
  CHECK_EQ_INT(t.v[t.n - 1].kind, FU_PY_TOK_EOF);
  fu_py_tokens_free(&t);
}

static void test_lex_strings(void) {
  fu_py_tokens t;
  capture c;
  fu_status st;
  tokenize("x = 'a\\'b' \"c\"\ny = \"\"\"one\ntwo\n\"\"\"\nz = r'\\d'\n", &t, &c, &st);
  CHECK_EQ_INT(st, FU_OK);
  int strings = 0;
  const fu_py_token *z = NULL;
  for (size_t i = 0; i < t.n; i++) {
    strings += t.v[i].kind == FU_PY_TOK_STRING;
    if (fu_py_tok_is(&t.v[i], "z")) z = &t.v[i];
  }
  CHECK_EQ_INT(strings, 4);
  CHECK(z && z->loc.line == 5); /* the triple-quoted string spans three lines */
  fu_py_tokens_free(&t);
}

static void expect_lex_error(const char *text, const char *want) {
  fu_py_tokens t;
  capture c;
  fu_status st;
  tokenize(text, &t, &c, &st);
  CHECK_EQ_INT(st, FU_ERR_PARSE);
  CHECK(t.v == NULL && t.n == 0);
  char *nl = strchr(c.text, '\n');
  if (nl) *nl = '\0';
  CHECK_STR(c.text, want);
}

static void test_lex_errors(void) {
  expect_lex_error("x = 'abc\n", "1:5: error: unterminated string literal");
  expect_lex_error("x = \"\"\"abc\n", "1:5: error: unterminated string literal");
  expect_lex_error("x = 1\ny = $\n", "2:5: error: unexpected character '$'");
  expect_lex_error("x = (1))\n", "1:8: error: unmatched ')'");
  expect_lex_error("x = [1)\n", "1:7: error: closing ')' does not match '['");
  expect_lex_error("x = f(1,\n  2\n", "1:6: error: '(' was never closed");
  expect_lex_error("if a:\n    b\n  c\n", "3:3: error: unindent does not match any outer indentation level");
  expect_lex_error("x = 99999999999999999999\n", "1:5: error: integer literal '99999999999999999999' out of range");
  expect_lex_error("x = 2j\n", "1:5: error: unsupported Python construct 'complex literal'");
  expect_lex_error("x = 1 \\ 2\n", "1:7: error: unexpected character after line continuation");
  expect_lex_error("x = 12abc\n", "1:7: error: invalid number literal");
  expect_lex_error("x = 0b102\n", "1:5: error: invalid number literal");
  expect_lex_error("x = 0x\n", "1:5: error: invalid number literal");
  expect_lex_error("x = \x01\n", "1:5: error: unexpected character (byte 0x01)");
  expect_lex_error("x = \xc3\xa9\n", "1:5: error: unexpected character (byte 0xc3)");
}

/* ---- parser ------------------------------------------------------------- */

static fu_py_script *parse(const char *text, capture *c) {
  fu_diag_engine e;
  capture_engine(&e, c);
  static fu_source src;
  src = make_src(text);
  fu_py_script *s = NULL;
  fu_py_parse(&src, fu_default_allocator(), &e, &s);
  return s;
}

static void test_parse_structure(void) {
  capture c;
  fu_py_script *s = parse(
      "import torch\nfrom nvfuser import (FusionDefinition,\n  DataType)\n"
      "def f(fd : FusionDefinition) -> None :\n"
      "    '''doc'''\n"
      "    T4, T5 = fd.ops.var_mean(T0, dims=[0, -1], correction=1)\n"
      "    fd.add_output(T4); fd.add_output(T5)\n"
      "with FusionDefinition() as fd:\n    f(fd)\n"
      "for _ in range(5): out = fd.execute(inputs)\n",
      &c);
  CHECK(s != NULL);
  if (!s) return;
  CHECK_EQ_INT(s->body.n, 5);
  CHECK_EQ_INT(s->body.v[0]->kind, FU_PY_S_IMPORT);
  CHECK_EQ_INT(s->body.v[1]->kind, FU_PY_S_IMPORT);
  const fu_py_stmt *def = s->body.v[2];
  CHECK_EQ_INT(def->kind, FU_PY_S_DEF);
  CHECK_STR(def->u.def.name, "f");
  CHECK_STR(def->u.def.param, "fd");
  CHECK_EQ_INT(def->u.def.body.n, 4);
  const fu_py_stmt *as = def->u.def.body.v[1];
  CHECK_EQ_INT(as->kind, FU_PY_S_ASSIGN);
  CHECK_EQ_INT(as->u.assign.n_targets, 2);
  const fu_py_expr *call = as->u.assign.value;
  CHECK_EQ_INT(call->kind, FU_PY_E_CALL);
  CHECK_EQ_INT(call->u.call.n_args, 1);
  CHECK_EQ_INT(call->u.call.n_kwargs, 2);
  CHECK_STR(call->u.call.kwargs[0].name, "dims");
  const fu_py_expr *dims = call->u.call.kwargs[0].value;
  CHECK_EQ_INT(dims->kind, FU_PY_E_LIST);
  CHECK_EQ_INT(dims->u.list.n, 2);
  CHECK_EQ_INT(dims->u.list.items[1]->kind, FU_PY_E_UNARY);
  CHECK_EQ_INT(call->u.call.callee->kind, FU_PY_E_ATTR);
  CHECK_STR(call->u.call.callee->u.attr.name, "var_mean");
  CHECK_EQ_INT(call->loc.line, 6);
  CHECK_EQ_INT(call->loc.col, 14);
  CHECK_EQ_INT(s->body.v[3]->kind, FU_PY_S_WITH);
  CHECK_STR(s->body.v[3]->u.with.as_name, "fd");
  CHECK_EQ_INT(s->body.v[4]->kind, FU_PY_S_FOR);
  CHECK_EQ_INT(s->body.v[4]->u.for_.body.n, 1);
  fu_py_script_free(s);
}

static void expect_parse_error(const char *text, const char *want) {
  capture c;
  fu_py_script *s = parse(text, &c);
  CHECK(s == NULL);
  fu_py_script_free(s);
  char *nl = strchr(c.text, '\n');
  if (nl) *nl = '\0';
  CHECK_STR(c.text, want);
}

static void test_parse_errors(void) {
  expect_parse_error("while x:\n    pass\n", "1:1: error: unsupported Python construct 'while'");
  expect_parse_error("x = y if z else w\n", "1:7: error: unsupported Python construct 'if'");
  expect_parse_error("x = lambda a: a\n", "1:5: error: unsupported Python construct 'lambda'");
  expect_parse_error("x = y[1:2]\n", "1:8: error: unsupported Python construct 'slice'");
  expect_parse_error("x = y[1, 2]\n", "1:8: error: unsupported Python construct 'subscript with several indices'");
  expect_parse_error("x = y == z\n", "1:7: error: unsupported Python construct '=='");
  expect_parse_error("x = y = z\n", "1:7: error: unsupported Python construct 'chained assignment'");
  expect_parse_error("x += 1\n", "1:3: error: unsupported Python construct '+='");
  expect_parse_error("f(a=1, 2)\n", "1:8: error: positional argument follows keyword argument");
  expect_parse_error("f(a=1, a=2)\n", "1:8: error: keyword argument 'a' repeated");
  expect_parse_error("def f(fd, x):\n    pass\n",
                     "1:11: error: a fusion definition takes exactly one parameter ('fd')");
  expect_parse_error("def f(fd=1):\n    pass\n", "1:9: error: unsupported Python construct 'default argument'");
  expect_parse_error("x = {1: 2}\n", "1:5: error: unsupported Python construct 'dict or set display'");
  expect_parse_error("x = [a for a in b]\n", "1:8: error: unsupported Python construct 'comprehension'");
  expect_parse_error("@dec\ndef f(fd):\n    pass\n", "1:1: error: unsupported Python construct 'decorator'");
  expect_parse_error("def f(fd):\nx = 1\n", "2:1: error: expected an indented block, found 'x'");
  expect_parse_error("f(1 2)\n", "1:5: error: expected ')', found '2'");
  expect_parse_error("return 1\n", "1:1: error: unsupported Python construct 'return'");
  expect_parse_error("f(*a)\n", "1:3: error: unsupported Python construct '*args'");
  expect_parse_error("1 + 2 = x\n", "1:1: error: cannot assign to this expression");
}

/* ---- import: op mapping ------------------------------------------------- */

static void test_import_pointwise_and_literals(void) {
  fu_source src = make_src(DEF T2D
                           "    S1 = fd.define_scalar(None, dtype=DataType.Double)\n"
                           "    S2 = fd.define_scalar(0.5, dtype=DataType.Double)\n"
                           "    S3 = fd.define_scalar(2, dtype=DataType.Int32)\n"
                           "    S4 = fd.define_constant(1.5)\n"
                           "    S5 = fd.define_scalar(1.0, dtype=DataType.Float)\n"
                           "    T6 = fd.ops.mul(T0, S2)\n"
                           "    T7 = fd.ops.add(T6, S1)\n"
                           "    T8 = fd.ops.sub(T7, S4)\n"
                           "    T9 = fd.ops.mul(T8, S5)\n"
                           "    T10 = fd.ops.cast(T9, dtype=DataType.Half)\n"
                           "    T11 = fd.ops.exp(T10)\n"
                           "    T12 = fd.ops.gt(T11, 0.0)\n"
                           "    T13 = fd.ops.where(T12, T11, -T11)\n"
                           "    T14 = fd.ops.clamp(T13, 0.0, 1.0)\n"
                           "    T15 = fd.ops.lerp(T14, T14, 0.25)\n"
                           "    S16 = fd.ops.mul(S1, S3)\n"
                           "    T17 = T15 * 2 + T15\n"
                           "    fd.add_output(T17)\n"
                           "    fd.add_output(S16)\n");
  capture c;
  fu_module *m = import_text(&src, &c, NULL);
  CHECK(m != NULL);
  if (!m) {
    fprintf(stderr, "%s", c.text);
    return;
  }
  fu_fusion *f = m->first;
  CHECK_STR(f->name, "f");
  CHECK_STR(op_str(def_of(f, "T6")), "%T6 = mul %T0, 0.5 : f32[i0, i1]");
  CHECK_STR(op_str(def_of(f, "T7")), "%T7 = add %T6, %S1 : f32[i0, i1]");
  CHECK_STR(op_str(def_of(f, "T8")), "%T8 = sub %T7, 1.5 : f32[i0, i1]");
  CHECK_STR(op_str(def_of(f, "T9")), "%T9 = mul %T8, f32(1.0) : f32[i0, i1]");
  CHECK_STR(op_str(def_of(f, "T10")), "%T10 = cast %T9 : f16[i0, i1]");
  CHECK_STR(type_str(find_value(f, "T11")), "f16[i0, i1]");
  CHECK_STR(type_str(find_value(f, "T12")), "bool[i0, i1]");
  CHECK_EQ_INT(def_of(f, "T13")->kind, FU_OP_WHERE);
  CHECK_EQ_INT(def_of(f, "T13")->operands[2]->def->kind, FU_OP_NEG);
  CHECK_EQ_INT(def_of(f, "T14")->kind, FU_OP_CLAMP);
  CHECK_EQ_INT(def_of(f, "T15")->kind, FU_OP_LERP);
  CHECK_STR(op_str(def_of(f, "S16")), "%S16 = mul %S1, i32(2) : f64");
  const fu_op *t17 = def_of(f, "T17");
  CHECK(t17 && t17->kind == FU_OP_ADD && t17->operands[0]->def->kind == FU_OP_MUL);
  CHECK_STR(op_str(f->body.last), "output %T17, %S16");
  /* constants are literals, not values of their own */
  CHECK(find_value(f, "S2") == NULL && find_value(f, "S4") == NULL);
  fu_module_free(m);
}

static void test_import_reductions_and_shapes(void) {
  fu_source src =
      make_src(DEF
               "    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.BFloat16)\n"
               "    T1 = fd.ops.sum(T0, axes=[1, 0], keepdim=False, dtype=DataType.Float)\n"
               "    T2 = fd.ops.max(T0, -1, True)\n"
               "    T3 = fd.ops.sum(T0)\n"
               "    T4, T5 = fd.ops.var_mean(T0, dims=[2], correction=0, keepdim=True)\n"
               "    T6 = fd.ops.var(T0, [0, 1], 1, False)\n"
               "    T7 = fd.ops.broadcast_in_dim(T1, shape=[1, -1], broadcast_dims=[1])\n"
               "    T8 = fd.ops.broadcast(T1, is_broadcast_dim=[False, True])\n"
               "    T9 = fd.ops.expand(T8, shape=[-1, 7])\n"
               "    T10 = fd.ops.permute(T0, dims=[2, 0, 1])\n"
               "    T11 = fd.ops.squeeze(T8, dims=[1])\n"
               "    T12 = fd.ops.reshape(T9, new_shape=[-1, 7])\n"
               "    S13 = fd.ops.size(T0, dim=1)\n"
               "    V14 = fd.define_vector([S13, 2], dtype=DataType.Int)\n"
               "    T15 = fd.ops.full(shape=V14, fill_value=0, dtype=DataType.Int32)\n"
               "    T16 = fd.ops.iota(S13, 0.0, 0.5, dtype=DataType.Float)\n"
               "    fd.add_output(T2)\n");
  capture c;
  fu_module *m = import_text(&src, &c, NULL);
  CHECK(m != NULL);
  if (!m) {
    fprintf(stderr, "%s", c.text);
    return;
  }
  fu_fusion *f = m->first;
  CHECK_STR(op_str(def_of(f, "T1")), "%T1 = sum %T0 {axes=[0, 1], dtype=f32} : f32[i2]");
  CHECK_STR(type_str(find_value(f, "T2")), "bf16[i0, i1, 1]");
  CHECK_STR(type_str(find_value(f, "T3")), "bf16[]");
  CHECK_STR(op_str(def_of(f, "T4")),
            "%T4, %T5 = var_mean %T0 {axes=[2], correction=0, keepdim=true} : bf16[i0, i1, 1], bf16[i0, i1, 1]");
  CHECK_EQ_INT(def_of(f, "T6")->u.variance.correction, 1);
  CHECK_STR(type_str(find_value(f, "T7")), "f32[1, i2]");
  CHECK_STR(type_str(find_value(f, "T8")), "f32[i2, 1]");
  CHECK_STR(type_str(find_value(f, "T9")), "f32[i2, 7]");
  CHECK_STR(op_str(def_of(f, "T10")), "%T10 = permute %T0 {dims=[2, 0, 1]} : bf16[i2, i0, i1]");
  CHECK_STR(type_str(find_value(f, "T11")), "f32[i2]");
  /* -1 of a reshape keeps the one symbol when the constants match */
  CHECK_STR(type_str(find_value(f, "T12")), "f32[i2, 7]");
  CHECK(find_value(f, "T12") == NULL || def_of(f, "T12")->kind == FU_OP_RESHAPE);
  CHECK_STR(type_str(find_value(f, "T15")), "i32[i1, 2]");
  CHECK_STR(type_str(find_value(f, "T16")), "f32[i1]");
  fu_module_free(m);
}

static void test_import_resize_ops(void) {
  fu_source src =
      make_src(DEF
               "    T0 = fd.define_tensor(shape=[4096], contiguity=[True], dtype=DataType.Float, is_cpu=False)\n"
               "    T1 = fd.ops.slice(T0, start_indices=[0], end_indices=[2048], strides=[1])\n"
               "    T2 = fd.ops.slice(T0, [-2048], [4096])\n"
               "    T3 = fd.ops.cat([T2, T1], dim=-1, manual_padding=0)\n"
               "    T4 = fd.ops.pad(T3, [1, 2])\n"
               "    T5 = fd.ops.pad(T3, pad_widths=[0, 3], value=1.0)\n"
               "    fd.add_output(T4)\n"
               "    fd.add_output(T5)\n");
  capture c;
  fu_module *m = import_text(&src, &c, NULL);
  CHECK(m != NULL);
  if (!m) {
    fprintf(stderr, "%s", c.text);
    return;
  }
  fu_fusion *f = m->first;
  CHECK_STR(op_str(def_of(f, "T1")), "%T1 = slice %T0 {starts=[0], ends=[2048], steps=[1]} : f32[2048]");
  CHECK_STR(op_str(def_of(f, "T2")), "%T2 = slice %T0 {starts=[2048], ends=[4096], steps=[1]} : f32[2048]");
  CHECK_STR(op_str(def_of(f, "T3")), "%T3 = cat %T2, %T1 {dim=0} : f32[4096]");
  CHECK_STR(op_str(def_of(f, "T4")), "%T4 = pad %T3, 0.0 {widths=[1, 2]} : f32[4099]");
  CHECK_STR(type_str(find_value(f, "T5")), "f32[4099]");
  fu_module_free(m);
}

static void test_import_legacy_syntax(void) {
  fu_source src = make_src(
      "from torch._C._nvfuser import Fusion, FusionDefinition, DataType\n"
      "def g(fd : FusionDefinition) -> None :\n"
      "    T0 = fd.define_tensor(symbolic_sizes=[-1, 1, -1], contiguous=[True, True, True], dtype=DataType.Half)\n"
      "    T1 = fd.define_tensor(sizes=[4, 6], strides=[1, 4], dtype=DataType.Float)\n"
      "    S2 = fd.define_scalar(DataType.Double)\n"
      "    S3 = fd.define_constant(2)\n"
      "    T4 = fd.ops.view(T0, original_shape=[8, 1, 6], new_shape=[2, 4, 6])\n"
      "    T5 = fd.ops.squeeze(T0, [8, 1, 6], [1])\n"
      "    T6 = fd.ops.add(T5, T1)\n"
      "    T7 = fd.ops.set(T6)\n"
      "    T8 = fd.ops.mul(T7, S3)\n"
      "    fd.add_output(T8)\n"
      "fs = Fusion()\n"
      "with FusionDefinition(fs) as fd :\n"
      "    g(fd)\n");
  capture c;
  fu_module *m = import_text(&src, &c, NULL);
  CHECK(m != NULL);
  if (!m) {
    fprintf(stderr, "%s", c.text);
    return;
  }
  fu_fusion *f = m->first;
  CHECK_STR(f->name, "g");
  const fu_op *in0 = def_of(f, "T0");
  CHECK_STR(type_str(find_value(f, "T0")), "f16[8, 1, 6]");
  CHECK(in0->u.input.layout.contiguity && in0->u.input.layout.contiguity[1] == FU_CONTIG_NONE &&
        in0->u.input.layout.contiguity[2] == FU_CONTIG_TRUE);
  /* sizes/strides: the sizes stay symbolic, contiguity comes from the strides */
  const fu_op *in1 = def_of(f, "T1");
  CHECK_STR(type_str(find_value(f, "T1")), "f32[8, 6]");
  CHECK(in1->u.input.layout.contiguity && in1->u.input.layout.contiguity[0] == FU_CONTIG_FALSE &&
        in1->u.input.layout.contiguity[1] == FU_CONTIG_FALSE);
  CHECK_STR(type_str(find_value(f, "S2")), "f64");
  CHECK_STR(op_str(def_of(f, "T4")), "%T4 = reshape %T0 : f16[2, 4, 6]");
  CHECK_STR(type_str(find_value(f, "T5")), "f16[8, 6]");
  CHECK_EQ_INT(def_of(f, "T7")->kind, FU_OP_SET);
  CHECK_STR(op_str(def_of(f, "T8")), "%T8 = mul %T7, 2 : f32[8, 6]");
  fu_module_free(m);
}

/* ---- symbols -------------------------------------------------------------- */

static void test_symtab_api(void) {
  fu_module *m = fu_module_new(fu_default_allocator());
  fu_py_symtab s;
  fu_py_symtab_init(&s, m);
  fu_extent a = fu_py_symtab_fresh(&s, "T0.0", 0, 0);
  fu_extent b = fu_py_symtab_fresh(&s, "T1.0", 1, 0);
  fu_extent c = fu_py_symtab_fresh(&s, "T1.0", 1, 1); /* same name: made unique */
  fu_extent d = fu_py_symtab_fresh(&s, "T2.0", 2, 0);
  CHECK(a.sym && b.sym && c.sym && d.sym);
  CHECK(b.sym != c.sym);
  CHECK(!fu_extent_equal(fu_py_symtab_canon(&s, a), fu_py_symtab_canon(&s, b)));
  CHECK(fu_py_symtab_unify(&s, b, a));
  CHECK(fu_extent_equal(fu_py_symtab_canon(&s, b), a)); /* the older symbol represents */
  fu_extent k = {8192, NULL}, k2 = {4096, NULL};
  CHECK(fu_py_symtab_unify(&s, c, k));
  CHECK(fu_extent_equal(fu_py_symtab_canon(&s, c), k));
  CHECK(!fu_py_symtab_unify(&s, c, k2)); /* already bound to another constant */
  CHECK(fu_py_symtab_unify(&s, d, c));   /* joins the bound class */
  CHECK(fu_extent_equal(fu_py_symtab_canon(&s, d), k));
  CHECK(!fu_py_symtab_unify(&s, k, k2));
  CHECK(fu_py_symtab_unify(&s, k, k));
  const fu_py_sym *sym = fu_py_symtab_lookup(&s, b);
  CHECK(sym && sym->origin_input == 0);
  fu_py_symtab_free(&s);
  fu_module_free(m);
}

static void test_symbol_unification(void) {
  fu_source src = make_src(DEF
                           "    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)\n"
                           "    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)\n"
                           "    T2 = fd.define_tensor(shape=[1, -1], contiguity=[None, True], dtype=DataType.Float)\n"
                           "    T3 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)\n"
                           "    T4 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)\n"
                           "    T5 = fd.ops.add(T1, T0)\n" /* T1 ~ T0 */
                           "    T6 = fd.ops.mul(T5, T2)\n" /* T2's dim 1 ~ T0's dim 1, dim 0 broadcasts */
                           "    T7 = fd.ops.add(T6, T3)\n"
                           "    T9 = fd.define_tensor(shape=[3, -1], contiguity=[True, True], dtype=DataType.Float)\n"
                           "    T10 = fd.define_tensor(shape=[5, -1], contiguity=[True, True], dtype=DataType.Float)\n"
                           "    T11 = fd.ops.cat([T9, T10], dim=0)\n" /* only the non-cat dims unify */
                           "    T8 = fd.ops.view(T4, original_shape=[16, 32], new_shape=[512])\n"
                           "    fd.add_output(T7)\n"
                           "    fd.add_output(T8)\n");
  capture c;
  fu_module *m = import_text(&src, &c, NULL);
  CHECK(m != NULL);
  if (!m) {
    fprintf(stderr, "%s", c.text);
    return;
  }
  fu_fusion *f = m->first;
  CHECK_STR(type_str(find_value(f, "T0")), "f32[i0, i1]");
  CHECK_STR(type_str(find_value(f, "T1")), "f32[i0, i1]");
  CHECK_STR(type_str(find_value(f, "T2")), "f32[1, i1]");
  CHECK_STR(type_str(find_value(f, "T3")), "f32[i0, i1]");
  CHECK_STR(type_str(find_value(f, "T4")), "f32[16, 32]");
  CHECK_STR(type_str(find_value(f, "T10")), "f32[5, i2]");
  CHECK_STR(type_str(find_value(f, "T11")), "f32[8, i2]");
  CHECK_STR(type_str(find_value(f, "T6")), "f32[i0, i1]");
  fu_module_free(m);
}

static void test_reshape_symbol_solving(void) {
  /* one symbol left over by the new shape is solved for */
  fu_source src =
      make_src(DEF
               "    T0 = fd.define_tensor(shape=[-1, 3072], contiguity=[True, True], dtype=DataType.Float)\n"
               "    T1 = fd.ops.reshape(T0, new_shape=[64, 128, 3072])\n"
               "    fd.add_output(T1)\n");
  capture c;
  fu_module *m = import_text(&src, &c, NULL);
  CHECK(m != NULL);
  if (m) {
    CHECK_STR(type_str(find_value(m->first, "T0")), "f32[8192, 3072]");
    fu_module_free(m);
  }
  /* two symbols: the inputs list pins them down */
  fu_source src2 = make_src(DEF T2D
                            "    T1 = fd.ops.reshape(T0, new_shape=[64, 128, 3072])\n"
                            "    fd.add_output(T1)\n"
                            "inputs = [torch.randn(8192, 3072, device='cuda')]\n");
  m = import_text(&src2, &c, NULL);
  CHECK(m != NULL);
  if (m) {
    CHECK_STR(type_str(find_value(m->first, "T0")), "f32[8192, 3072]");
    fu_module_free(m);
  }
  /* ... and without it, it is a located error */
  CHECK_STR(first_error(DEF T2D "    T1 = fd.ops.reshape(T0, new_shape=[64, 128, 3072])\n"),
            "3:39: error: cannot tell the extents of 'fd.ops.reshape' from operand shape [T0.0, T0.1]: give "
            "original_shape, constant input sizes or an inputs list");
}

/* ---- example data --------------------------------------------------------- */

static void test_example_data(void) {
  fu_source src = make_src(
      DEF
      "    S0 = fd.define_scalar(None, dtype=DataType.Double)\n"
      "    S1 = fd.define_scalar(None, dtype=DataType.Int)\n"
      "    S2 = fd.define_scalar(None, dtype=DataType.Bool)\n"
      "    T3 = fd.define_tensor(shape=[-1, -1], contiguity=[False, False], dtype=DataType.Float)\n"
      "    T4 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.BFloat16)\n"
      "    T5 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int)\n"
      "    T6 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half)\n"
      "    T7 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)\n"
      "    fd.add_output(T3)\n"
      "inputs = [\n"
      "    2,\n"
      "    -3,\n"
      "    True,\n"
      "    torch.randn(4, 6, device='cuda').t(),\n"
      "    torch.testing.make_tensor((2, 3, 4), dtype=torch.bfloat16, device='cuda:0').permute(2, 0, 1).contiguous(),\n"
      "    torch.randint(0, 10, (5,), device='cuda'),\n"
      "    torch.randn(120, dtype=torch.float16, device='cuda:0').as_strided((3, 4), (1, 3)),\n"
      "    torch.empty_strided((2, 2), (2, 1), dtype=torch.float32, device='cuda').uniform_(),\n"
      "]\n");
  capture c;
  fu_module *m = import_text(&src, &c, NULL);
  CHECK(m != NULL);
  if (!m) {
    fprintf(stderr, "%s", c.text);
    return;
  }
  fu_fusion *f = m->first;
  const fu_example *e0 = &def_of(f, "S0")->u.input.example;
  CHECK_EQ_INT(e0->init, FU_INIT_VALUE);
  CHECK_NEAR(e0->value.f, 2.0, 0);
  CHECK_EQ_INT(def_of(f, "S1")->u.input.example.value.i, -3);
  CHECK(def_of(f, "S2")->u.input.example.value.b);
  const fu_example *e3 = &def_of(f, "T3")->u.input.example;
  CHECK_EQ_INT(e3->init, FU_INIT_RANDN);
  CHECK_EQ_INT(e3->seed, 3);
  CHECK(e3->shape && e3->shape[0] == 6 && e3->shape[1] == 4);
  CHECK(e3->strides && e3->strides[0] == 1 && e3->strides[1] == 6);
  const fu_example *e4 = &def_of(f, "T4")->u.input.example;
  CHECK(e4->shape && e4->shape[0] == 4 && e4->shape[1] == 2 && e4->shape[2] == 3);
  CHECK(e4->strides == NULL); /* .contiguous() */
  const fu_example *e5 = &def_of(f, "T5")->u.input.example;
  CHECK_EQ_INT(e5->init, FU_INIT_RANDINT);
  CHECK_EQ_INT(e5->low, 0);
  CHECK_EQ_INT(e5->high, 10);
  const fu_example *e6 = &def_of(f, "T6")->u.input.example;
  CHECK(e6->strides && e6->strides[0] == 1 && e6->strides[1] == 3);
  const fu_example *e7 = &def_of(f, "T7")->u.input.example;
  CHECK_EQ_INT(e7->init, FU_INIT_RAND);
  CHECK(e7->strides == NULL); /* (2, 1) is row-major */
  /* example shapes keep extents symbolic */
  CHECK_STR(type_str(find_value(f, "T3")), "f32[i0, i1]");
  fu_module_free(m);
}

static void test_same_shape_inputs_share_symbols(void) {
  fu_source src = make_src(DEF
                           "    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)\n"
                           "    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)\n"
                           "    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)\n"
                           "    T3 = fd.ops.sum(T0, dims=[0])\n"
                           "    fd.add_output(T3)\n"
                           "    fd.add_output(T1)\n"
                           "    fd.add_output(T2)\n"
                           "inputs = [torch.randn(8, 8, device='cuda'), torch.randn(8, 8, device='cuda'), "
                           "torch.randn(8, 4, device='cuda')]\n");
  capture c;
  fu_module *m = import_text(&src, &c, NULL);
  CHECK(m != NULL);
  if (!m) return;
  fu_fusion *f = m->first;
  /* the same example shape shares symbols dim by dim, never within a tensor */
  CHECK_STR(type_str(find_value(f, "T0")), "f32[i0, i1]");
  CHECK_STR(type_str(find_value(f, "T1")), "f32[i0, i1]");
  CHECK_STR(type_str(find_value(f, "T2")), "f32[i2, i3]");
  fu_module_free(m);
}

/* ---- errors ----------------------------------------------------------------- */

static void test_import_errors(void) {
  CHECK_STR(first_error(DEF T2D "    T1 = fd.ops.foo(T0)\n"), "3:10: error: unsupported op 'fd.ops.foo'");
  CHECK_STR(first_error(DEF T2D "    T1 = fd.ops.input(T0)\n"), "3:10: error: unsupported op 'fd.ops.input'");
  CHECK_STR(first_error(DEF T2D "    T1 = fd.ops.sum(T0, axes=[0], bogus=1)\n"),
            "3:35: error: unsupported argument 'bogus' of 'fd.ops.sum'");
  CHECK_STR(first_error(DEF T2D "    T1 = fd.ops.add(T0, T9)\n"), "3:25: error: undefined name 'T9'");
  CHECK_STR(first_error(DEF T2D "    T1 = fd.ops.add(T0)\n"), "3:10: error: missing argument 'arg2' for 'fd.ops.add'");
  CHECK_STR(first_error(DEF T2D "    T1 = fd.ops.neg(T0, T0)\n"),
            "3:25: error: too many arguments for 'fd.ops.neg' (at most 1)");
  CHECK_STR(first_error(DEF "    S0 = fd.define_scalar(None, dtype=DataType.ComplexFloat)\n"),
            "2:39: error: unsupported dtype 'DataType.ComplexFloat'");
  CHECK_STR(first_error(DEF "    S0 = fd.define_scalar(None, dtype=DataType.Floot)\n"),
            "2:39: error: unknown dtype 'DataType.Floot' for 'fd.define_scalar'");
  CHECK_STR(first_error(DEF T2D "    fd.permute(T0)\n"),
            "3:5: error: unsupported FusionDefinition method 'fd.permute'");
  CHECK_STR(first_error(DEF T2D "    T1 = torch.abs(T0)\n"), "3:10: error: unsupported call 'torch.abs'");
  CHECK_STR(first_error(DEF T2D "    for i in range(3):\n        pass\n"),
            "3:5: error: unsupported Python construct 'for' inside a fusion definition");
  CHECK_STR(first_error(DEF T2D "    T1, T2 = fd.ops.abs(T0)\n"),
            "3:5: error: 2 names assigned from a call that gives 1 value");
  CHECK_STR(first_error(DEF T2D "    T1 = fd.ops.sum(T0, dims=[2])\n"),
            "3:30: error: 'dims' of 'fd.ops.sum' has a dim out of range for rank 2");
  CHECK_STR(first_error(DEF T2D "    T1 = fd.ops.reshape(T0, new_shape=[-1, -1])\n"),
            "3:39: error: 'new_shape' of 'fd.ops.reshape' has more than one -1");
  CHECK_STR(first_error(DEF T2D "    S1 = fd.define_scalar(None, dtype=DataType.Int)\n"
                                "    T2 = fd.ops.full(shape=[S1], fill_value=0, dtype=DataType.Int)\n"),
            "4:29: error: 'shape' of 'fd.ops.full' uses the runtime scalar 'S1'; extents must be constants or sizes of "
            "input tensors");
  CHECK_STR(first_error(DEF T2D "    fd.add_output(1.0)\n"),
            "3:19: error: 'fd.add_output' needs a tensor or a scalar value, not a constant");
  CHECK_STR(first_error(DEF "    T0 = fd.define_tensor(shape=[4], contiguity=[True, True])\n"),
            "2:49: error: 'contiguity' of 'fd.define_tensor' has 2 entries but the shape has 1");
  CHECK_STR(first_error(DEF T2D "    T1 = fd.ops.view(T0, original_shape=[4, 4, 4], new_shape=[64])\n"),
            "3:41: error: 'original_shape' of 'fd.ops.view' does not match the operand's shape [T0.0, T0.1]");
  /* an op the type rules reject is reported by inference, at the call */
  const char *e = first_error(DEF
                              "    T0 = fd.define_tensor(shape=[2, 3], contiguity=[True, True])\n"
                              "    T1 = fd.define_tensor(shape=[3, 3], contiguity=[True, True])\n"
                              "    T2 = fd.ops.add(T0, T1)\n");
  CHECK(strncmp(e, "4:10: error: ", 13) == 0);
  /* top level */
  CHECK_STR(first_error("x = 1\n"), "1:1: error: unsupported top-level assignment to 'x'");
  CHECK_STR(first_error("print(1)\n"), "1:1: error: unsupported top-level statement");
  CHECK_STR(first_error("import torch\n"),
            "0:0: error: no fusion definition found (expected 'def name(fd : FusionDefinition)')");
  CHECK_STR(first_error(DEF "    pass\nwith FusionDefinition() as fd:\n    g(fd)\n"),
            "4:5: error: call to undefined function 'g'");
  CHECK_STR(first_error(DEF "    pass\n" DEF "    pass\n"), "3:1: error: duplicate definition of 'f'");
  CHECK_STR(first_error(DEF "    pass\nwhile True:\n    pass\n"), "3:1: error: unsupported Python construct 'while'");
  CHECK_STR(first_error(DEF "    pass\nfor x in y:\n    pass\n"),
            "3:10: error: unsupported 'for' loop (only 'for _ in range(n):' around fd.execute is accepted)");
  CHECK_STR(first_error(DEF "    pass\nwith open('x') as f:\n    pass\n"),
            "3:6: error: unsupported 'with' statement (only 'with FusionDefinition() as fd:' is accepted)");
}

static void test_inputs_list_errors(void) {
  CHECK_STR(first_error(DEF T2D "    fd.add_output(T0)\ninputs = [torch.randn(2, 3, device='cuda'), 1.0]\n"),
            "4:10: error: the inputs list has 2 entries but 'f' defines 1 input");
  CHECK_STR(first_error(DEF T2D "    fd.add_output(T0)\ninputs = [torch.randn(2, 3, 4, device='cuda')]\n"),
            "4:11: error: input 0 ('%T0' : f32[i0, i1]) has rank 2, but the inputs list gives rank 3");
  CHECK_STR(first_error(DEF T2D "    fd.add_output(T0)\ninputs = [torch.randn(2, 3, dtype=torch.half)]\n"),
            "4:11: error: input 0 ('%T0' : f32[i0, i1]) gets float16 data from the inputs list");
  CHECK_STR(first_error(DEF T2D "    fd.add_output(T0)\ninputs = [2.0]\n"),
            "4:11: error: input 0 ('%T0' : f32[i0, i1]) is a tensor, but the inputs list gives a scalar");
  CHECK_STR(first_error(DEF "    T0 = fd.define_tensor(shape=[4, -1], contiguity=[True, True])\n"
                            "    fd.add_output(T0)\ninputs = [torch.randn(5, 3)]\n"),
            "4:11: error: input 0 ('%T0' : f32[4, i0]) has extent 4 at dim 0, but the inputs list gives 5");
  CHECK_STR(first_error(DEF T2D "    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True])\n"
                                "    T2 = fd.ops.add(T0, T1)\n    fd.add_output(T2)\n"
                                "inputs = [torch.randn(2, 3), torch.randn(2, 4)]\n"),
            "6:30: error: extent 'i1' of input 1 ('%T1') is 4, but an earlier input makes it 3");
  CHECK_STR(
      first_error(DEF "    S0 = fd.define_scalar(None, dtype=DataType.Int)\n    fd.add_output(S0)\ninputs = [1.5]\n"),
      "4:11: error: input 0 ('%S0' : i64) cannot take this float value");
  CHECK_STR(first_error(DEF T2D "    fd.add_output(T0)\ninputs = [torch.randn(2, 3).foo()]\n"),
            "4:11: error: unsupported input expression 'foo'");
  CHECK_STR(first_error(DEF T2D "    fd.add_output(T0)\ninputs = [torch.randn(2, 3, devise='cuda')]\n"),
            "4:29: error: unsupported keyword argument 'devise' for 'torch.randn'");
  CHECK_STR(first_error(DEF T2D "    fd.add_output(T0)\ninputs = [x]\n"),
            "4:11: error: unsupported input expression 'x'");
  CHECK_STR(first_error(DEF T2D "    fd.add_output(T0)\ninputs = [torch.randn(4).as_strided((2, 3), (3, 1))]\n"),
            "4:11: error: as_strided view needs 6 elements but the tensor has 4");
  CHECK_STR(first_error(DEF T2D "    fd.add_output(T0)\ninputs = [torch.randn(2, 3, dtype=torch.complex64)]\n"),
            "4:35: error: unsupported dtype 'torch.complex64'");
}

/* ---- several definitions, selection -------------------------------------- */

static void test_multiple_definitions(void) {
  const char *text =
      "def a(fd : FusionDefinition) -> None :\n"
      "    T0 = fd.define_tensor(shape=[-1], contiguity=[True])\n    fd.add_output(T0)\n"
      "def b(fd : FusionDefinition) -> None :\n"
      "    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half)\n    fd.add_output(T0)\n"
      "inputs = [torch.randn(3, dtype=torch.float16)]\n"
      "with FusionDefinition() as fd:\n    b(fd)\n"
      "fd.execute(inputs)\n";
  fu_source src = make_src(text);
  capture c;
  fu_module *m = import_text(&src, &c, NULL);
  CHECK(m != NULL);
  if (m) {
    CHECK_EQ_INT(fu_module_num_fusions(m), 2);
    CHECK_STR(m->first->name, "a");
    CHECK_EQ_INT(def_of(m->first, "T0")->u.input.example.init, FU_INIT_NONE);
    CHECK_EQ_INT(def_of(m->last, "T0")->u.input.example.init, FU_INIT_RANDN);
    fu_module_free(m);
  }
  fu_diag_engine e;
  capture_engine(&e, &c);
  fu_py_import_options opts = {"b"};
  m = NULL;
  CHECK_EQ_INT(fu_py_import(&src, fu_default_allocator(), &e, &opts, &m), FU_OK);
  if (m) {
    CHECK_EQ_INT(fu_module_num_fusions(m), 1);
    CHECK_STR(m->first->name, "b");
    fu_module_free(m);
  }
  fu_py_import_options missing = {"zzz"};
  m = NULL;
  CHECK(fu_py_import(&src, fu_default_allocator(), &e, &missing, &m) != FU_OK);
  CHECK(m == NULL);
  CHECK(strstr(c.text, "no definition named 'zzz'") != NULL);
  /* an inline definition inside the with block */
  fu_source inl = make_src(
      "with FusionDefinition() as fd:\n"
      "    T0 = fd.define_tensor(shape=[2], contiguity=[True])\n"
      "    fd.add_output(fd.ops.abs(T0))\n");
  m = import_text(&inl, &c, NULL);
  CHECK(m != NULL);
  if (m) {
    CHECK_STR(m->first->name, "fusion");
    CHECK_STR(op_str(m->first->body.last), "output %_T0");
    fu_module_free(m);
  }
}

/* ---- export --------------------------------------------------------------- */

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  if (buf) buf[n] = '\0';
  fclose(f);
  return buf;
}

/* py -> IR -> py -> IR gives the same IR text for every seed fusion. */
static void test_export_round_trip_seeds(void) {
  static const char *const seeds[] = {
      "seed000_gelu_bwd_bias",     "seed000_pow_sum",    "seed001_gelu_bookend", "seed001_gelu_bookend_two_outputs",
      "seed001_transpose_bookend", "seed001_view_chain", "seed002_var_add",      "seed004_rotate_residual"};
  for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/test/fusions/%s.py", FUSER_SOURCE_DIR, seeds[i]);
    char *text = read_file(path);
    CHECK(text != NULL);
    if (!text) continue;
    fu_source src = {path, text, strlen(text), 1};
    capture c;
    fu_module *m1 = import_text(&src, &c, NULL);
    CHECK(m1 != NULL);
    fu_strbuf ir1, py, ir2;
    fu_strbuf_init(&ir1, fu_default_allocator());
    fu_strbuf_init(&py, fu_default_allocator());
    fu_strbuf_init(&ir2, fu_default_allocator());
    if (m1) {
      fu_print_module(&ir1, m1, NULL);
      fu_diag_engine e;
      capture_engine(&e, &c);
      fu_py_export_options eo = {"seed.fir", NULL, false};
      CHECK_EQ_INT(fu_py_export(&py, m1, &eo, &e), FU_OK);
      fu_source src2 = {"exported.py", py.data ? py.data : "", py.len, 1};
      fu_module *m2 = import_text(&src2, &c, NULL);
      CHECK(m2 != NULL);
      if (m2) {
        fu_print_module(&ir2, m2, NULL);
        CHECK_STR(ir2.data, ir1.data);
        fu_module_free(m2);
      } else {
        fprintf(stderr, "%s\n%s", seeds[i], c.text);
      }
      fu_module_free(m1);
    }
    fu_strbuf_free(&ir1);
    fu_strbuf_free(&py);
    fu_strbuf_free(&ir2);
    free(text);
  }
}

static void test_export_text(void) {
  fu_source src = make_src(
      DEF
      "    T0 = fd.define_tensor(shape=[-1, 4], contiguity=[True, True], dtype=DataType.Float, stride_order=[1, 0])\n"
      "    S1 = fd.define_scalar(0.5, dtype=DataType.Float)\n"
      "    T2 = fd.ops.mul(T0, S1)\n"
      "    T3 = fd.ops.reshape(T2, new_shape=[-1, 2, 2])\n"
      "    T4 = fd.ops.broadcast_in_dim(T3, shape=[T3_0, 2, 2, 5], broadcast_dims=[0, 1, 2])\n"
      "    fd.add_output(T4)\n");
  /* T3_0 is not defined: the error says so */
  CHECK_STR(first_error(src.text), "6:45: error: expected an integer for 'shape' of 'fd.ops.broadcast_in_dim'");
  fu_source ok = make_src(
      DEF
      "    T0 = fd.define_tensor(shape=[-1, 4], contiguity=[True, True], dtype=DataType.Float, stride_order=[1, 0])\n"
      "    S1 = fd.define_scalar(0.5, dtype=DataType.Float)\n"
      "    T2 = fd.ops.mul(T0, S1)\n"
      "    T3 = fd.ops.reshape(T2, new_shape=[-1, 2, 2])\n"
      "    S5 = fd.ops.size(T0, dim=0)\n"
      "    T4 = fd.ops.broadcast_in_dim(T3, shape=[S5, 2, 2, 5], broadcast_dims=[0, 1, 2])\n"
      "    fd.add_output(T4)\n");
  capture c;
  fu_module *m = import_text(&ok, &c, NULL);
  CHECK(m != NULL);
  if (!m) {
    fprintf(stderr, "%s", c.text);
    return;
  }
  fu_strbuf py;
  fu_strbuf_init(&py, fu_default_allocator());
  fu_diag_engine e;
  capture_engine(&e, &c);
  CHECK_EQ_INT(fu_py_export(&py, m, NULL, &e), FU_OK);
  const char *want =
      "import torch\n"
      "from nvfuser import FusionDefinition, DataType\n"
      "\n"
      "def f(fd : FusionDefinition) -> None :\n"
      "    T0 = fd.define_tensor(shape=[-1, 4], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, "
      "stride_order=[1, 0])\n"
      "    S0 = fd.define_scalar(0.5, dtype=DataType.Float)\n"
      "    T2 = fd.ops.mul(T0, S0)\n"
      "    size_i0 = fd.ops.size(T0, dim=0)\n"
      "    T3 = fd.ops.reshape(T2, new_shape=[size_i0, 2, 2])\n"
      "    T4 = fd.ops.broadcast_in_dim(T3, shape=[size_i0, 2, 2, 5], broadcast_dims=[0, 1, 2])\n"
      "    fd.add_output(T4)\n"
      "\n"
      "with FusionDefinition() as fd:\n"
      "    f(fd)\n"
      "\n"
      "# Unbound symbolic extents get size 4: i0 = 4.\n"
      "# The IR has no example data: these inputs are made up (fuser-translate ignores this list).\n"
      "placeholder_inputs = [\n"
      "    torch.randn(4, 4, dtype=torch.float32, device=\"cuda\"),\n"
      "]\n"
      "fd.execute(placeholder_inputs)\n";
  CHECK_STR(py.data, want);
  /* and it imports back to the same IR */
  fu_source back = {"back.py", py.data ? py.data : "", py.len, 1};
  fu_module *m2 = import_text(&back, &c, NULL);
  CHECK(m2 != NULL);
  if (m2) {
    fu_strbuf a, b;
    fu_strbuf_init(&a, fu_default_allocator());
    fu_strbuf_init(&b, fu_default_allocator());
    fu_print_module(&a, m, NULL);
    fu_print_module(&b, m2, NULL);
    CHECK_STR(b.data, a.data);
    fu_strbuf_free(&a);
    fu_strbuf_free(&b);
    fu_module_free(m2);
  }
  fu_strbuf_free(&py);
  fu_module_free(m);
}

static void test_export_examples(void) {
  fu_source src =
      make_src(DEF
               "    S0 = fd.define_scalar(None, dtype=DataType.Double)\n"
               "    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[False, True], dtype=DataType.Half)\n"
               "    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int32)\n"
               "    T3 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Bool)\n"
               "    fd.add_output(T1)\n"
               "inputs = [float('inf'), torch.randn(8, 8, dtype=torch.float16).as_strided((4, 4), (8, 1)),\n"
               "          torch.randint(-5, 5, (3,), dtype=torch.int32), torch.ones((), dtype=torch.bool)]\n");
  capture c;
  fu_module *m = import_text(&src, &c, NULL);
  CHECK(m != NULL);
  if (!m) {
    fprintf(stderr, "%s", c.text);
    return;
  }
  fu_strbuf py;
  fu_strbuf_init(&py, fu_default_allocator());
  fu_diag_engine e;
  capture_engine(&e, &c);
  CHECK_EQ_INT(fu_py_export(&py, m, NULL, &e), FU_OK);
  const char *want =
      "inputs = [\n"
      "    float(\"inf\"),\n"
      "    torch.randn(28, dtype=torch.float16, device=\"cuda\").as_strided((4, 4), (8, 1)),\n"
      "    torch.randint(-5, 5, (3,), dtype=torch.int32, device=\"cuda\"),\n"
      "    torch.ones((), dtype=torch.bool, device=\"cuda\"),\n"
      "]\n"
      "fd.execute(inputs)\n";
  CHECK(py.data && strstr(py.data, want) != NULL);
  if (!py.data || !strstr(py.data, want)) fprintf(stderr, "%s", py.data ? py.data : "");
  fu_source back = {"back.py", py.data ? py.data : "", py.len, 1};
  fu_module *m2 = import_text(&back, &c, NULL);
  CHECK(m2 != NULL);
  if (m2) {
    fu_strbuf a, b;
    fu_strbuf_init(&a, fu_default_allocator());
    fu_strbuf_init(&b, fu_default_allocator());
    fu_print_module(&a, m, NULL);
    fu_print_module(&b, m2, NULL);
    CHECK_STR(b.data, a.data);
    fu_strbuf_free(&a);
    fu_strbuf_free(&b);
    fu_module_free(m2);
  }
  fu_strbuf_free(&py);
  fu_module_free(m);
}

static void test_export_unsupported(void) {
  /* a symbolic extent no input carries cannot be spelled in Python */
  fu_module *m = fu_module_new(fu_default_allocator());
  fu_fusion *f = fu_fusion_new(m, "g", fu_loc_none());
  fu_value *fill = fu_literal_f(f, FU_DT_F64, 0.0);
  fu_op *full = fu_op_new(f, FU_OP_FULL, &fill, 1, 1, fu_loc_none());
  fu_block_append(&f->body, full);
  fu_extent n = {0, fu_module_intern(m, "N", 1)};
  full->results[0]->type.dtype = FU_DT_F32;
  full->results[0]->type.rank = 1;
  full->results[0]->type.dims = fu_dims_copy(m, &n, 1);
  fu_value_set_name(m, full->results[0], "T0");
  fu_op *out = fu_op_new(f, FU_OP_OUTPUT, &full->results[0], 1, 0, fu_loc_none());
  fu_block_append(&f->body, out);
  fu_strbuf py;
  fu_strbuf_init(&py, fu_default_allocator());
  capture c;
  fu_diag_engine e;
  capture_engine(&e, &c);
  CHECK_EQ_INT(fu_py_export(&py, m, NULL, &e), FU_ERR_UNSUPPORTED);
  CHECK(strstr(c.text, "cannot export 'full': its symbolic extent 'N' is not an extent of any input") != NULL);
  fu_strbuf_free(&py);
  fu_module_free(m);
}

static void test_dtype_names(void) {
  bool known, supported;
  CHECK_EQ_INT(fu_py_datatype_from_name("BFloat16", &known, &supported), FU_DT_BF16);
  CHECK(known && supported);
  CHECK_EQ_INT(fu_py_datatype_from_name("Null", &known, &supported), FU_DT_NONE);
  CHECK(known && supported);
  fu_py_datatype_from_name("ComplexFloat", &known, &supported);
  CHECK(known && !supported);
  fu_py_datatype_from_name("Quux", &known, &supported);
  CHECK(!known);
  CHECK_EQ_INT(fu_py_torch_dtype_from_name("long", &known, &supported), FU_DT_I64);
  CHECK_STR(fu_py_datatype_name(FU_DT_I32), "Int32");
  CHECK_STR(fu_py_torch_dtype_name(FU_DT_F16), "float16");
  for (int t = 1; t < FU_DT_COUNT; t++) {
    CHECK_EQ_INT(fu_py_datatype_from_name(fu_py_datatype_name((fu_dtype)t), NULL, NULL), t);
    CHECK_EQ_INT(fu_py_torch_dtype_from_name(fu_py_torch_dtype_name((fu_dtype)t), NULL, NULL), t);
  }
}

static void test_map(void) {
  fu_py_map m;
  fu_py_map_init(&m, fu_default_allocator());
  static char keys[500][16];
  for (int i = 0; i < 500; i++) {
    snprintf(keys[i], sizeof keys[i], "k%d", i);
    CHECK(fu_py_map_set(&m, keys[i], &keys[i]));
  }
  CHECK_EQ_INT(m.count, 500);
  for (int i = 0; i < 500; i++) CHECK(fu_py_map_get(&m, keys[i]) == &keys[i]);
  CHECK(fu_py_map_get(&m, "nope") == NULL);
  CHECK(fu_py_map_set(&m, "k7", NULL));
  CHECK(fu_py_map_get(&m, "k7") == NULL);
  CHECK_EQ_INT(m.count, 500);
  fu_py_map_free(&m);
}

FU_TEST_MAIN(FU_TEST(test_lex_basic_tokens), FU_TEST(test_lex_lines_and_indentation), FU_TEST(test_lex_strings),
             FU_TEST(test_lex_errors), FU_TEST(test_parse_structure), FU_TEST(test_parse_errors),
             FU_TEST(test_import_pointwise_and_literals), FU_TEST(test_import_reductions_and_shapes),
             FU_TEST(test_import_resize_ops), FU_TEST(test_import_legacy_syntax), FU_TEST(test_symtab_api),
             FU_TEST(test_symbol_unification), FU_TEST(test_reshape_symbol_solving), FU_TEST(test_example_data),
             FU_TEST(test_same_shape_inputs_share_symbols), FU_TEST(test_import_errors),
             FU_TEST(test_inputs_list_errors), FU_TEST(test_multiple_definitions),
             FU_TEST(test_export_round_trip_seeds), FU_TEST(test_export_text), FU_TEST(test_export_examples),
             FU_TEST(test_export_unsupported), FU_TEST(test_dtype_names), FU_TEST(test_map))
