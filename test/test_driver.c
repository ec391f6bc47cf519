/* Unit tests for lib/driver: pipeline parsing, the registry helpers, running
 * with dumps and the verifier, input splitting, --verify-diagnostics, timing
 * reports, and fu_opt_main end to end through in-memory streams. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuser/driver.h"
#include "fuser/parse.h"
#include "fuser/verify.h"
#include "harness.h"

/* ---- helpers ---------------------------------------------------------------- */

typedef struct captured {
  fu_severity sev[16];
  uint32_t line[16], col[16];
  char msg[16][512];
  int n;
} captured;

static void capture(void *user, const fu_diagnostic *d) {
  captured *c = user;
  if (c->n >= 16) return;
  c->sev[c->n] = d->severity;
  c->line[c->n] = fu_loc_file_line(d->loc);
  c->col[c->n] = d->loc.col;
  snprintf(c->msg[c->n], sizeof c->msg[0], "%s", d->message);
  c->n++;
}

static void capture_engine(fu_diag_engine *e, captured *c) {
  memset(c, 0, sizeof *c);
  fu_diag_init(e, fu_default_allocator());
  e->handler = capture;
  e->user = c;
}

/* A stream whose contents can be read back after closing. */
typedef struct memfile {
  char *buf;
  size_t len;
  FILE *f;
} memfile;

static void mem_open(memfile *m) {
  m->buf = NULL;
  m->len = 0;
  m->f = open_memstream(&m->buf, &m->len);
}

static const char *mem_close(memfile *m) {
  fclose(m->f);
  m->f = NULL;
  return m->buf ? m->buf : "";
}

/* Runs fu_opt_main on `input` (as stdin) with argv; returns the exit code. */
static int run_opt(const fu_opt_config *cfg, const char *input, char **out, char **err, int argc, ...) {
  char *argv[32];
  va_list ap;
  va_start(ap, argc);
  argv[0] = "fuser-opt";
  for (int i = 1; i < argc && i < 32; i++) argv[i] = va_arg(ap, char *);
  va_end(ap);
  FILE *in = fmemopen((void *)input, strlen(input), "r");
  memfile o, e;
  mem_open(&o);
  mem_open(&e);
  int rc = fu_opt_main(argc, argv, cfg, in, o.f, e.f);
  fclose(in);
  mem_close(&o);
  mem_close(&e);
  *out = o.buf;
  *err = e.buf;
  return rc;
}

static const char *const good_fir = "fusion @f {\n  %T0 = input f32[4]\n  %S1 = add 1.0, 2.0\n"
                                    "  %T1 = mul %T0, %S1\n  %T2 = mul %T0, %S1\n  %T3 = add %T1, %T2\n"
                                    "  output %T3\n}\n";

/* ---- pipelines ---------------------------------------------------------------- */

static void test_pipeline_parse(void) {
  fu_pipeline p;
  fu_pipeline_init(&p, fu_default_allocator());
  fu_diag_engine e;
  captured c;
  capture_engine(&e, &c);
  CHECK_EQ_INT(fu_pipeline_parse(&p, "canonicalize", "--pass", &e), FU_OK);
  CHECK_EQ_INT(fu_pipeline_parse(&p, " canonicalize { fold = false , cse=true } ,canonicalize", "--pass", &e),
               FU_OK);
  CHECK_EQ_INT(p.n_steps, 3);
  CHECK_EQ_INT(p.steps[1].n_options, 2);
  CHECK_STR(p.steps[1].options[0].name, "fold");
  CHECK_STR(p.steps[1].options[0].value, "false");
  CHECK_STR(p.steps[1].options[1].value, "true");
  CHECK_EQ_INT(p.steps[2].n_options, 0);
  CHECK_EQ_INT(c.n, 0);
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_pipeline_print(&sb, &p);
  CHECK_STR(sb.data, "canonicalize,canonicalize{fold=false,cse=true},canonicalize");
  /* The printed form parses back to the same pipeline. */
  fu_pipeline q;
  fu_pipeline_init(&q, fu_default_allocator());
  CHECK_EQ_INT(fu_pipeline_parse(&q, sb.data, "--pass", &e), FU_OK);
  CHECK_EQ_INT(q.n_steps, 3);
  fu_strbuf_clear(&sb);
  fu_pipeline_print(&sb, &q);
  CHECK_STR(sb.data, "canonicalize,canonicalize{fold=false,cse=true},canonicalize");
  fu_pipeline_free(&q);

  /* `all` is every registered pass in order. */
  size_t n_all;
  const fu_pass_def *const *all = fu_pass_all(&n_all);
  fu_pipeline_init(&q, fu_default_allocator());
  CHECK_EQ_INT(fu_pipeline_parse(&q, "all", "--pass", &e), FU_OK);
  CHECK_EQ_INT(q.n_steps, n_all);
  CHECK(q.n_steps >= 1 && q.steps[0].pass == all[0]);
  fu_pipeline_free(&q);
  fu_strbuf_free(&sb);
  fu_pipeline_free(&p);
}

static void expect_pipeline_error(const char *text, uint32_t col, const char *needle) {
  fu_pipeline p;
  fu_pipeline_init(&p, fu_default_allocator());
  fu_diag_engine e;
  captured c;
  capture_engine(&e, &c);
  CHECK_EQ_INT(fu_pipeline_parse(&p, "canonicalize", "--pass", &e), FU_OK);
  CHECK_EQ_INT(fu_pipeline_parse(&p, text, "--pass", &e), FU_ERR_INVALID_ARG);
  CHECK_EQ_INT(p.n_steps, 1); /* unchanged on error */
  CHECK_EQ_INT(c.n, 1);
  if (c.n == 1) {
    CHECK_EQ_INT(c.sev[0], FU_SEV_ERROR);
    CHECK_EQ_INT(c.col[0], col);
    if (!strstr(c.msg[0], needle))
      fu_test_fail(__FILE__, __LINE__, "'%s': message '%s' lacks '%s'", text, c.msg[0], needle);
  }
  fu_pipeline_free(&p);
}

static void test_pipeline_errors(void) {
  expect_pipeline_error("canonicalize,bogus", 14, "unknown pass 'bogus'; valid passes: all, ");
  expect_pipeline_error("canonicalize,bogus", 14, "canonicalize");
  expect_pipeline_error("canonicalize{foo=1}", 14, "unknown option 'foo' for pass 'canonicalize'; valid options: "
                                                   "fold, identities, cse, dce");
  expect_pipeline_error("canonicalize{fold}", 18, "expected '=' after option 'fold'");
  expect_pipeline_error("canonicalize{fold=}", 19, "expected a value for option 'fold'");
  expect_pipeline_error("canonicalize{fold=true", 23, "expected ',' or '}'");
  expect_pipeline_error("canonicalize,", 14, "expected a pass name");
  expect_pipeline_error("canonicalize canonicalize", 14, "expected ',' between passes");
  expect_pipeline_error("", 1, "empty pass pipeline");
  expect_pipeline_error("all{cse=false}", 4, "'all' takes no options");
}

static void test_registry(void) {
  size_t n;
  const fu_pass_def *const *all = fu_pass_all(&n);
  CHECK(n >= 1);
  const fu_pass_def *c = fu_pass_lookup("canonicalize", 12);
  CHECK(c != NULL);
  CHECK(fu_pass_lookup("canonicalize", 5) == NULL);
  CHECK(fu_pass_lookup("canonicalizer", 13) == NULL);
  for (size_t i = 0; i < n; i++) {
    CHECK(all[i]->name && all[i]->summary && all[i]->run);
    CHECK(fu_pass_lookup(all[i]->name, strlen(all[i]->name)) == all[i]);
  }
  fu_pass_option opts[] = {{"cse", "false"}, {"cse", "true"}};
  fu_pass_context ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.pass = c;
  CHECK_STR(fu_pass_option_value(&ctx, "fold"), "true");
  CHECK(!fu_pass_option_given(&ctx, "fold"));
  CHECK(fu_pass_option_value(&ctx, "nope") == NULL);
  ctx.options = opts;
  ctx.n_options = 2;
  CHECK_STR(fu_pass_option_value(&ctx, "cse"), "true");
  CHECK(fu_pass_option_given(&ctx, "cse"));
  ctx.n_options = 1;
  CHECK_STR(fu_pass_option_value(&ctx, "cse"), "false");

  CHECK(!fu_pass_debug_enabled(&ctx, "canonicalize"));
  ctx.debug_flags = "segment,canonicalize";
  CHECK(!fu_pass_debug_enabled(&ctx, "canonicalize")); /* no stream */
  ctx.debug_out = stderr;
  CHECK(fu_pass_debug_enabled(&ctx, "canonicalize"));
  CHECK(fu_pass_debug_enabled(&ctx, "segment"));
  CHECK(!fu_pass_debug_enabled(&ctx, "canon"));
  ctx.debug_flags = "all";
  CHECK(fu_pass_debug_enabled(&ctx, "anything"));

  CHECK(fu_name_in_list("a,bb,c", "bb"));
  CHECK(!fu_name_in_list("a,bb,c", "b"));
  CHECK(fu_name_in_list("all", "x"));
  CHECK(!fu_name_in_list(NULL, "x"));
  CHECK_EQ_INT(fu_emit_kind_from_name("ptx"), FU_EMIT_PTX);
  CHECK_EQ_INT(fu_emit_kind_from_name("asm"), FU_EMIT_COUNT);
  CHECK_STR(fu_emit_kind_name(FU_EMIT_CUDA), "cuda");
}

/* ---- running pipelines ------------------------------------------------------------ */

/* A pass that breaks the IR: it retypes the first non-input result. */
static fu_status break_ir(fu_module *m, fu_pass_context *ctx) {
  (void)ctx;
  for (fu_op *op = m->first->body.first; op; op = op->next)
    if (op->kind != FU_OP_INPUT && op->n_results > 0) {
      op->results[0]->type.dtype = op->results[0]->type.dtype == FU_DT_I64 ? FU_DT_F32 : FU_DT_I64;
      break;
    }
  return FU_OK;
}

static fu_status fail_quietly(fu_module *m, fu_pass_context *ctx) {
  (void)m;
  (void)ctx;
  return FU_ERR_UNSUPPORTED;
}

static fu_status write_debug(fu_module *m, fu_pass_context *ctx) {
  (void)m;
  if (fu_pass_debug_enabled(ctx, "chatty")) fputs("chatty says hi\n", ctx->debug_out);
  return FU_OK;
}

static void test_pipeline_run(void) {
  static const fu_pass_def broken = {"broken", "breaks the IR", NULL, break_ir};
  static const fu_pass_def failing = {"failing", "fails", NULL, fail_quietly};
  static const fu_pass_def chatty = {"chatty", "debug output", NULL, write_debug};
  fu_source src = {"in.fir", good_fir, strlen(good_fir), 1};
  fu_diag_engine e;
  captured c;
  capture_engine(&e, &c);
  fu_module *m = NULL;
  CHECK_EQ_INT(fu_parse_module(&src, fu_default_allocator(), &e, &m), FU_OK);
  if (!m) return;

  fu_pipeline_step steps[3] = {{fu_pass_lookup("canonicalize", 12), NULL, 0}, {&chatty, NULL, 0}, {&broken, NULL, 0}};
  fu_pipeline p = {steps, 3, 3, fu_default_allocator(), NULL};
  memfile dump;
  mem_open(&dump);
  fu_run_options o = fu_run_options_default();
  o.dump = dump.f;
  o.print_ir_after = "canonicalize";
  o.print_ir_before = "broken";
  o.debug = "chatty";
  fu_timing t;
  fu_timing_init(&t, fu_default_allocator());
  CHECK_EQ_INT(fu_pipeline_run(&p, m, &o, &t, &src, &e), FU_ERR_VERIFY);
  const char *d = mem_close(&dump);
  CHECK(strstr(d, "// ----- IR after canonicalize -----\nfusion @f {") != NULL);
  CHECK(strstr(d, "// ----- IR before broken -----\nfusion @f {") != NULL);
  CHECK(strstr(d, "IR before canonicalize") == NULL);
  CHECK(strstr(d, "chatty says hi\n") != NULL);
  CHECK(c.n >= 2);
  CHECK(strstr(c.msg[c.n - 1], "the IR is invalid after pass 'broken'") != NULL);
  free(dump.buf);
  /* Timing saw each pass once and the verifier after each. */
  CHECK_EQ_INT(t.n, 4);
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_timing_report(&t, FU_TIMING_JSON, &sb);
  CHECK(strstr(sb.data, "{\"name\": \"canonicalize\", \"ms\": ") != NULL);
  CHECK(strstr(sb.data, "{\"name\": \"verify\", \"ms\": ") != NULL && strstr(sb.data, "\"count\": 3}") != NULL);
  fu_strbuf_clear(&sb);
  fu_timing_report(&t, FU_TIMING_TEXT, &sb);
  CHECK(strstr(sb.data, "fuser timing report") != NULL && strstr(sb.data, "  broken\n") != NULL);
  CHECK(strstr(sb.data, "100.0%         total\n") != NULL);
  fu_strbuf_free(&sb);
  fu_timing_free(&t);
  fu_module_free(m);

  /* Without the verifier the broken pass goes through. */
  capture_engine(&e, &c);
  CHECK_EQ_INT(fu_parse_module(&src, fu_default_allocator(), &e, &m), FU_OK);
  o = fu_run_options_default();
  o.verify_each = false;
  fu_pipeline_step one[1] = {{&broken, NULL, 0}};
  fu_pipeline p1 = {one, 1, 1, fu_default_allocator(), NULL};
  CHECK_EQ_INT(fu_pipeline_run(&p1, m, &o, NULL, &src, &e), FU_OK);
  CHECK_EQ_INT(c.n, 0);
  /* A pass that fails without saying why still gets an error naming it. */
  one[0].pass = &failing;
  CHECK_EQ_INT(fu_pipeline_run(&p1, m, &o, NULL, &src, &e), FU_ERR_UNSUPPORTED);
  CHECK_EQ_INT(c.n, 1);
  CHECK(strstr(c.msg[0], "pass 'failing' failed") != NULL);
  fu_module_free(m);
}

/* ---- splitting ---------------------------------------------------------------------- */

static void test_split(void) {
  const char *text = "a\nb\n// -----\nc\n  // -----  \nd\n// ----- IR after x -----\ne\n// -----";
  fu_source whole = {"x.fir", text, strlen(text), 1};
  fu_source *chunks = NULL;
  uint32_t n = 0;
  CHECK_EQ_INT(fu_split_input(&whole, fu_default_allocator(), &chunks, &n), FU_OK);
  CHECK_EQ_INT(n, 4);
  if (n == 4) {
    CHECK(chunks[0].len == 4 && memcmp(chunks[0].text, "a\nb\n", 4) == 0);
    CHECK_EQ_INT(chunks[0].first_line, 1);
    CHECK(chunks[1].len == 2 && memcmp(chunks[1].text, "c\n", 2) == 0);
    CHECK_EQ_INT(chunks[1].first_line, 4);
    CHECK_EQ_INT(chunks[2].first_line, 6);
    CHECK(chunks[2].len == strlen("d\n// ----- IR after x -----\ne\n"));
    CHECK_EQ_INT(chunks[3].len, 0);
    CHECK_STR(chunks[3].name, "x.fir");
  }
  fu_allocator a = fu_default_allocator();
  fu_mem_free(&a, chunks, n * sizeof *chunks);
}

/* Python chunks split at `# -----`, and `// -----` is then not a separator. */
static void test_split_python(void) {
  const char *text = "a\n# -----\nb\n// -----\n";
  fu_source whole = {"x.py", text, strlen(text), 1};
  fu_source *chunks = NULL;
  uint32_t n = 0;
  CHECK_EQ_INT(fu_split_input_at(&whole, "#", fu_default_allocator(), &chunks, &n), FU_OK);
  CHECK_EQ_INT(n, 2);
  if (n == 2) CHECK(chunks[1].len == strlen("b\n// -----\n") && chunks[1].first_line == 3);
  fu_allocator a = fu_default_allocator();
  fu_mem_free(&a, chunks, n * sizeof *chunks);
}

/* A compiler without a target (a build without backends, or an unknown
 * name) says so, naming the input, instead of failing silently. */
static void test_compiler_without_target(void) {
  fu_compiler c;
  fu_compiler_init(&c, "no-such-target", NULL, fu_default_allocator());
  CHECK(c.target == NULL);
  fu_diag_engine e;
  captured cap;
  capture_engine(&e, &cap);
  fu_source src = {"k.kir", "", 0, 1};
  fu_strbuf out;
  fu_strbuf_init(&out, fu_default_allocator());
  CHECK_EQ_INT(fu_compile_kernels(&c, NULL, 0, FU_TARGET_PTX, NULL, &src, &out, &e), FU_ERR_UNSUPPORTED);
  CHECK_EQ_INT(cap.n, 1);
  if (cap.n == 1) CHECK(strstr(cap.msg[0], "no code-generation backend is available in this build") != NULL);
  fu_strbuf_free(&out);
  fu_compiler_free(&c);
  size_t n;
  const fu_target_def *const *all = fu_target_all(&n);
  for (size_t i = 0; i < n; i++) CHECK(fu_target_lookup(all[i]->name) == all[i] && all[i]->emit && all[i]->open);
  CHECK(n == 0 || fu_target_lookup(NULL) == all[0]);
}

/* ---- expectations ---------------------------------------------------------------------- */

static fu_loc at(const fu_source *s, uint32_t line, uint32_t col) {
  fu_loc l = {s, line, col};
  return l;
}

static void test_expect(void) {
  const char *text = "line1\n"
                     "// expected-error@+1 {{bad thing}}\n"
                     "line3  // expected-warning {{careful}}\n"
                     "line4\n"
                     "// expected-note@-1 {{}}\n"
                     "// expected-remark@above {{r}} expected-error@below {{two on one line}}\n"
                     "line7\n";
  /* As a chunk starting at file line 10. */
  fu_source src = {"t.fir", text, strlen(text), 10};
  fu_diag_engine report;
  captured rc;
  capture_engine(&report, &rc);
  fu_expect_checker *chk = NULL;
  CHECK_EQ_INT(fu_expect_new(&src, fu_default_allocator(), &report, &chk), FU_OK);
  CHECK_EQ_INT(rc.n, 0);
  fu_diag_engine e;
  fu_diag_init(&e, fu_default_allocator());
  e.handler = fu_expect_handler;
  e.user = chk;
  fu_error(&e, at(&src, 3, 2), "a bad thing happened");
  fu_warning(&e, at(&src, 3, 1), "be careful");
  fu_note(&e, at(&src, 4, 1), "anything");
  fu_remark(&e, at(&src, 5, 1), "r");
  fu_error(&e, at(&src, 7, 1), "two on one line!");
  CHECK(fu_expect_finish(chk, &report));
  CHECK_EQ_INT(rc.n, 0);
  fu_expect_free(chk);

  /* Unexpected diagnostics and unmet expectations are both reported. */
  CHECK_EQ_INT(fu_expect_new(&src, fu_default_allocator(), &report, &chk), FU_OK);
  e.user = chk;
  fu_error(&e, at(&src, 4, 3), "a bad thing happened");   /* wrong line */
  fu_warning(&e, at(&src, 3, 1), "be careful");
  fu_warning(&e, at(&src, 3, 1), "be careful");            /* twice: the second is unexpected */
  fu_error(&e, fu_loc_none(), "no location");
  fu_note(&e, at(&src, 4, 1), "x");
  fu_remark(&e, at(&src, 5, 1), "r");
  fu_error(&e, at(&src, 7, 1), "two on one line");
  CHECK(!fu_expect_finish(chk, &report));
  CHECK_EQ_INT(rc.n, 4);
  if (rc.n == 4) {
    CHECK(strstr(rc.msg[0], "unexpected error: a bad thing happened") && rc.line[0] == 13);
    CHECK(strstr(rc.msg[1], "unexpected warning: be careful") && rc.line[1] == 12);
    CHECK(strstr(rc.msg[2], "unexpected error: no location") != NULL);
    CHECK(strstr(rc.msg[3], "expected error {{bad thing}} on line 12 was not produced there (it was on line 13)"));
    CHECK_EQ_INT(rc.line[3], 11);
    CHECK_EQ_INT(rc.col[3], 4);
  }
  fu_expect_free(chk);

  /* Malformed expectations are errors of their own. */
  const char *bad = "// expected-error no braces\n// expected-error@x {{y}}\n// expected-error {{open\n";
  fu_source bsrc = {"b.fir", bad, strlen(bad), 1};
  capture_engine(&report, &rc);
  CHECK_EQ_INT(fu_expect_new(&bsrc, fu_default_allocator(), &report, &chk), FU_OK);
  CHECK_EQ_INT(rc.n, 3);
  CHECK(!fu_expect_finish(chk, &report));
  fu_expect_free(chk);
}

/* ---- fu_opt_main ---------------------------------------------------------------------------- */

static fu_status fake_ptx(void *user, fu_module *m, fu_emit_kind kind, fu_strbuf *out, fu_diag_engine *diag) {
  (void)diag;
  (*(int *)user)++;
  fu_strbuf_printf(out, "// fake %s for %u fusions\n", fu_emit_kind_name(kind), fu_module_num_fusions(m));
  return FU_OK;
}

static void test_opt_main(void) {
  fu_opt_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.tool_name = "fuser-opt";
  char *out, *err;

  CHECK_EQ_INT(run_opt(&cfg, good_fir, &out, &err, 2, "--pass=canonicalize"), 0);
  CHECK(strstr(out, "%T3 = add %T1, %T1 : f32[4]") != NULL);
  CHECK_STR(err, "");
  free(out);
  free(err);

  /* No passes: parse, verify, print; stdin given as '-'. */
  CHECK_EQ_INT(run_opt(&cfg, good_fir, &out, &err, 2, "-"), 0);
  CHECK(strstr(out, "%S1 = add 1.0, 2.0 : f64") != NULL);
  free(out);
  free(err);

  /* Usage errors exit 2 with a message naming the tool. */
  CHECK_EQ_INT(run_opt(&cfg, good_fir, &out, &err, 2, "--frobnicate"), 2);
  CHECK(strstr(err, "fuser-opt: error: unknown option '--frobnicate'") != NULL);
  free(out);
  free(err);
  CHECK_EQ_INT(run_opt(&cfg, good_fir, &out, &err, 2, "--emit=ptx"), 2);
  CHECK(strstr(err, "--emit=ptx is not available in this build") != NULL);
  free(out);
  free(err);
  CHECK_EQ_INT(run_opt(&cfg, good_fir, &out, &err, 3, "a.fir", "b.fir"), 2);
  CHECK(strstr(err, "more than one input file") != NULL);
  free(out);
  free(err);
  CHECK_EQ_INT(run_opt(&cfg, good_fir, &out, &err, 2, "--print-ir-after=nope"), 2);
  CHECK(strstr(err, "unknown pass 'nope' in --print-ir-after; valid passes: ") != NULL);
  CHECK(strstr(err, "canonicalize") != NULL && strstr(err, "valid passes: all") == NULL);
  free(out);
  free(err);

  /* An emitter supplied by the tool is used for its kind. */
  int calls = 0;
  cfg.emitters[FU_EMIT_PTX] = fake_ptx;
  cfg.emit_user = &calls;
  CHECK_EQ_INT(run_opt(&cfg, good_fir, &out, &err, 3, "--emit", "ptx"), 0);
  CHECK_STR(out, "// fake ptx for 1 fusions\n");
  CHECK_EQ_INT(calls, 1);
  free(out);
  free(err);
  cfg.emitters[FU_EMIT_PTX] = NULL;

  /* A missing file is an I/O error (exit 1). */
  CHECK_EQ_INT(run_opt(&cfg, "", &out, &err, 2, "/nonexistent/x.fir"), 1);
  CHECK(strstr(err, "cannot read '/nonexistent/x.fir'") != NULL);
  free(out);
  free(err);

  /* Split input: bad chunk reports the file's own line, good ones print. */
  const char *split = "fusion @a {\n  %T0 = input f32[4]\n  output %T0\n}\n// -----\n"
                      "fusion @b {\n  %T0 = input f32[4]\n  %T1 = frob %T0\n  output %T1\n}\n// -----\n"
                      "fusion @c {\n  %T0 = input f32[4]\n  output %T0\n}\n";
  CHECK_EQ_INT(run_opt(&cfg, split, &out, &err, 2, "--split-input-file"), 1);
  CHECK(strstr(out, "fusion @a {") && strstr(out, "fusion @c {") && !strstr(out, "fusion @b"));
  CHECK(strstr(out, "}\n// -----\n// -----\nfusion @c") != NULL);
  CHECK(strstr(err, "<stdin>:8:") != NULL);
  free(out);
  free(err);

  /* --verify-diagnostics: success exits 0 even though errors happened. */
  const char *vd = "fusion @b {\n  %T0 = input f32[4]\n  // expected-error@+1 {{unknown op 'frob'}}\n"
                   "  %T1 = frob %T0\n  output %T1\n}\n";
  CHECK_EQ_INT(run_opt(&cfg, vd, &out, &err, 2, "--verify-diagnostics"), 0);
  CHECK_STR(err, "");
  free(out);
  free(err);
  const char *vd_bad = "fusion @b {\n  %T0 = input f32[4]\n  // expected-error@+2 {{unknown op 'frob'}}\n"
                       "  %T1 = frob %T0\n  output %T1\n}\n";
  CHECK_EQ_INT(run_opt(&cfg, vd_bad, &out, &err, 2, "--verify-diagnostics"), 1);
  CHECK(strstr(err, "<stdin>:4:") && strstr(err, "unexpected error: unknown op 'frob'"));
  CHECK(strstr(err, "<stdin>:3:6: error: expected error {{unknown op 'frob'}} on line 5 was not produced") != NULL);
  free(out);
  free(err);

  /* -o writes the file; a failed run leaves it alone. */
  char path[] = "/tmp/fuser-test-driver-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd >= 0) {
    FILE *f = fdopen(fd, "w");
    fputs("old contents\n", f);
    fclose(f);
    CHECK_EQ_INT(run_opt(&cfg, "fusion @x {\n  %T0 = frob\n}\n", &out, &err, 3, "-o", path), 1);
    free(out);
    free(err);
    char buf[256] = {0};
    f = fopen(path, "r");
    CHECK(f && fread(buf, 1, sizeof buf - 1, f) > 0);
    if (f) fclose(f);
    CHECK_STR(buf, "old contents\n");
    CHECK_EQ_INT(run_opt(&cfg, good_fir, &out, &err, 2, "--output=-"), 0);
    CHECK(strstr(out, "fusion @f") != NULL);
    free(out);
    free(err);
    CHECK_EQ_INT(run_opt(&cfg, good_fir, &out, &err, 3, "-o", path), 0);
    CHECK_STR(out, "");
    free(out);
    free(err);
    memset(buf, 0, sizeof buf);
    f = fopen(path, "r");
    CHECK(f && fread(buf, 1, sizeof buf - 1, f) > 0);
    if (f) fclose(f);
    CHECK(strncmp(buf, "fusion @f {", 11) == 0);
    remove(path);
  }

  /* --help, --version, --list-passes */
  CHECK_EQ_INT(run_opt(&cfg, "", &out, &err, 2, "--version"), 0);
  CHECK(strncmp(out, "fuser-opt (fuser) " FU_VERSION_STRING, 18 + strlen(FU_VERSION_STRING)) == 0);
  free(out);
  free(err);
  CHECK_EQ_INT(run_opt(&cfg, "", &out, &err, 2, "-h"), 0);
  CHECK(strstr(out, "usage: fuser-opt") && strstr(out, "--split-input-file"));
  free(out);
  free(err);
  CHECK_EQ_INT(run_opt(&cfg, "", &out, &err, 2, "-list-passes"), 0);
  CHECK(strstr(out, "  canonicalize\n") && strstr(out, "cse (default: true)"));
  free(out);
  free(err);
}

FU_TEST_MAIN(FU_TEST(test_pipeline_parse), FU_TEST(test_pipeline_errors), FU_TEST(test_registry),
             FU_TEST(test_pipeline_run), FU_TEST(test_split), FU_TEST(test_split_python), FU_TEST(test_compiler_without_target),
             FU_TEST(test_expect), FU_TEST(test_opt_main))
