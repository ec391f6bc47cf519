/* fuser driver: the body of fuser-opt.
 *
 * Read the input, cut it into chunks (--split-input-file), and for each
 * chunk: parse, verify, run the pipeline, print or emit.  Output is collected
 * in memory and written at the end, so -o is not touched when nothing could
 * be produced.  Diagnostics go to `err`, or to an expectation checker with
 * --verify-diagnostics. */
#include <errno.h>
#include <string.h>

#include "fuser/device.h"   /* codegen: --device at emission */
#include "fuser/dot.h"
#include "fuser/driver.h"
#include "fuser/dump.h"
#include "fuser/schedule.h" /* codegen */
#include "fuser/parse.h"
#include "fuser/print.h"
#include "fuser/segment.h"  /* --extract-segment, --segment-dot */
#include "fuser/verify.h"

typedef struct opt_state {
  const fu_opt_args *args;
  const fu_opt_config *cfg;
  fu_allocator alloc;
  FILE *err;
  fu_timing timing;
  FILE *segment_dot; /* --segment-dot, opened at the first chunk that gets there */
} opt_state;

/* --segment-dot: every fusion's segment graph, appended to the file (one
 * digraph per fusion, every chunk's in turn). */
static fu_status write_segment_dot(opt_state *s, fu_module *m, const fu_source *src, fu_diag_engine *diag) {
  const char *path = s->args->segment_dot;
  fu_loc here = {src, 0, 0}; /* the input file, no line */
  if (!s->segment_dot && fu_dot_open(path, "segment", here, diag, &s->segment_dot) != FU_OK) return FU_ERR_IO;
  fu_status st = FU_OK;
  for (fu_fusion *f = m->first; f && st == FU_OK; f = f->next) st = fu_segment_write_dot(f, s->segment_dot);
  if (st == FU_OK) return FU_OK;
  /* A failed write ends the file: it is closed and reported here. */
  FILE *f = s->segment_dot;
  s->segment_dot = NULL;
  return fu_dot_close(f, FU_ERR_IO, path, "segment", here, diag);
}

/* --extract-segment: replaces *m by the standalone fusion of one segment
 * (fu_segment_extract), verified.  A name that is not there is an error
 * that lists the segments there are. */
static fu_status extract_segment(opt_state *s, fu_module **m, const fu_source *src, fu_diag_engine *diag) {
  fu_loc here = {src, 0, 0}; /* the input file, no line */
  const char *want = s->args->extract_segment;
  const char *name = want[0] == '@' ? want + 1 : want;
  bool found = false;
  fu_strbuf names;
  fu_strbuf_init(&names, s->alloc);
  uint32_t n = 0;
  for (fu_fusion *f = (*m)->first; f; f = f->next)
    for (fu_op *op = f->body.first; op; op = op->next) {
      if (op->kind != FU_OP_SEGMENT || !op->u.segment.name) continue;
      if (strcmp(op->u.segment.name, name) == 0) found = true;
      fu_strbuf_printf(&names, "%s@%s", n++ ? ", " : "", op->u.segment.name);
    }
  if (!found) {
    if (n)
      fu_error(diag, here, "no segment '@%s' in the input; segments are: %s", name,
               names.data ? names.data : "?");
    else
      fu_error(diag, here,
               "no segment '@%s' in the input; it has no segments (run the segment pass first, e.g. --pass=all)", name);
  }
  fu_strbuf_free(&names);
  if (!found) return FU_ERR_INVALID_ARG;
  fu_module *x = NULL;
  fu_status st = fu_segment_extract(*m, name, s->alloc, diag, &x);
  if (st != FU_OK) return st;
  st = fu_verify_module(x, diag);
  if (st != FU_OK) {
    fu_error(diag, here, "internal error: the fusion extracted from segment '@%s' does not verify", name);
    fu_module_free(x);
    return st;
  }
  fu_module_free(*m);
  *m = x;
  return FU_OK;
}

/* Parse, verify, run and print one chunk into `out`.  Returns whether it
 * succeeded; all problems went to `diag`. */
static bool process_chunk(opt_state *s, const fu_source *src, fu_diag_engine *diag, fu_strbuf *out) {
  const fu_opt_args *a = s->args;
  fu_module *m = NULL;
  double t0 = fu_timing_now();
  fu_status st = fu_parse_module(src, s->alloc, diag, &m);
  fu_timing_add(&s->timing, "parse", fu_timing_now() - t0);
  if (st != FU_OK || !m) {
    if (st == FU_ERR_NOMEM) fu_error(diag, fu_loc_none(), "out of memory while parsing");
    return false;
  }
  t0 = fu_timing_now();
  st = fu_verify_module(m, diag);
  fu_timing_add(&s->timing, "verify", fu_timing_now() - t0);
  if (st == FU_OK) st = fu_dump_module(a->dumps, FU_DUMP_FUSION_IR, m, "as parsed");
  if (st == FU_OK) st = fu_pipeline_run(&a->pipeline, m, &a->run, &s->timing, src, diag);
  if (st == FU_OK) st = fu_dump_python(a->dumps, m, src->name, diag);
  if (st == FU_OK) {
    fu_dump_code_options dco = {.src = src, .features = &a->run.features};
    st = fu_dump_code(a->dumps, m, &dco, diag);
  }
  if (st == FU_OK && a->segment_dot) st = write_segment_dot(s, m, src, diag);
  if (st == FU_OK && a->extract_segment) st = extract_segment(s, &m, src, diag);
  if (st == FU_OK) {
    t0 = fu_timing_now();
    if (a->emit == FU_EMIT_FIR) {
      fu_print_options po = {a->run.print_locs};
      fu_print_module(out, m, &po);
      fu_timing_add(&s->timing, "print", fu_timing_now() - t0);
    } else {
      /* ---- codegen: --device names the architecture the kernels are emitted for ---- */
      if (a->run.device) st = fu_schedule_retarget(m, a->run.device);
      /* ---- end codegen ---- */
      fu_target_output what;
      if (st == FU_OK && s->cfg->emitters[a->emit])
        st = s->cfg->emitters[a->emit](s->cfg->emit_user, m, a->emit, out, diag);
      else if (st == FU_OK && fu_opt_target_output(s->cfg, a->emit, &what)) {
        s->cfg->compiler->allow_partial = a->allow_partial;
        st = fu_compile_module(s->cfg->compiler, m, NULL, what, NULL, src, out, diag);
      }
      fu_timing_add(&s->timing, "emit", fu_timing_now() - t0);
    }
    if (out->failed) {
      fu_error(diag, fu_loc_none(), "out of memory while printing");
      st = FU_ERR_NOMEM;
    }
  }
  fu_module_free(m);
  return st == FU_OK;
}

/* With --verify-diagnostics a chunk passes when its diagnostics match its
 * expectations, whether or not processing succeeded. */
static bool run_chunk(opt_state *s, const fu_source *src, fu_diag_engine *report, fu_strbuf *out) {
  fu_diag_restart_limit(report);
  if (!s->args->verify_diagnostics) return process_chunk(s, src, report, out);
  fu_expect_checker *chk = NULL;
  if (fu_expect_new(src, s->alloc, report, &chk) != FU_OK) {
    fu_error(report, fu_loc_none(), "out of memory while reading expectations");
    return false;
  }
  fu_diag_engine capture;
  fu_diag_init(&capture, s->alloc);
  capture.handler = fu_expect_handler;
  capture.user = chk;
  fu_strbuf chunk_out;
  fu_strbuf_init(&chunk_out, s->alloc);
  if (process_chunk(s, src, &capture, &chunk_out)) fu_strbuf_append(out, chunk_out.data ? chunk_out.data : "", chunk_out.len);
  fu_strbuf_free(&chunk_out);
  bool ok = fu_expect_finish(chk, report);
  fu_expect_free(chk);
  return ok;
}

static int write_output(opt_state *s, const fu_strbuf *out, FILE *stdout_stream) {
  const char *path = s->args->output;
  bool to_stdout = !path || strcmp(path, "-") == 0;
  FILE *f = to_stdout ? stdout_stream : fopen(path, "w");
  if (!f) {
    fprintf(s->err, "%s: error: cannot open '%s' for writing: %s\n", s->cfg->tool_name, path, strerror(errno));
    return 1;
  }
  size_t n = out->len ? fwrite(out->data, 1, out->len, f) : 0;
  bool ok = n == out->len;
  ok = (to_stdout ? fflush(f) : fclose(f)) == 0 && ok;
  if (!ok) {
    fprintf(s->err, "%s: error: cannot write '%s': %s\n", s->cfg->tool_name, to_stdout ? "<stdout>" : path,
            strerror(errno));
    return 1;
  }
  return 0;
}

int fu_opt_main(int argc, char *const *argv, const fu_opt_config *cfg_in, FILE *in, FILE *out, FILE *err) {
  fu_opt_config defaults;
  memset(&defaults, 0, sizeof defaults);
  defaults.tool_name = "fuser-opt";
  fu_opt_config cfg = cfg_in ? *cfg_in : defaults;
  if (!cfg.tool_name) cfg.tool_name = "fuser-opt";

  fu_opt_args args;
  if (fu_opt_parse_args(argc, argv, &cfg, &args, err) != FU_OK) {
    fu_opt_args_free(&args);
    return 2;
  }
  const fu_target_def *want = fu_opt_select_target(&cfg, &args);
  if (cfg.compiler && want && want != cfg.compiler->target) fu_compiler_retarget(cfg.compiler, want);
  opt_state s;
  memset(&s, 0, sizeof s);
  s.args = &args;
  s.cfg = &cfg;
  s.alloc = fu_default_allocator();
  s.err = err;
  fu_timing_init(&s.timing, s.alloc);
  if (!args.run.dump) args.run.dump = err;
  if (args.run.dump == stderr) args.run.dump = err;

  fu_strbuf text;
  fu_strbuf_init(&text, s.alloc);
  int rc = 0;
  if (cfg.compiler) fu_target_options_set_features(&cfg.compiler->options, &args.run.features);
  args.dumps->stream = err;
  if (args.help || args.version || args.list_passes || args.dump_help) {
    if (args.dump_help) {
      fu_dump_print_help(&text);
      fu_features_print_help(&text);
    }
    if (args.version) fu_strbuf_printf(&text, "%s (fuser) %s\n", cfg.tool_name, FU_VERSION_STRING);
    if (args.help) fu_opt_print_help(&text, &cfg);
    if (args.list_passes) fu_opt_print_pass_list(&text);
    fputs(text.data ? text.data : "", out);
    fflush(out);
    fu_strbuf_free(&text);
    fu_opt_args_free(&args);
    return 0;
  }

  /* Read the whole input. */
  char *data = NULL;
  size_t len = 0;
  bool from_stdin = !args.input || strcmp(args.input, "-") == 0;
  fu_status st = from_stdin ? fu_read_stream(in, s.alloc, &data, &len) : fu_read_file(args.input, s.alloc, &data, &len);
  if (st != FU_OK) {
    fprintf(err, "%s: error: cannot read '%s': %s\n", cfg.tool_name, from_stdin ? "<stdin>" : args.input,
            st == FU_ERR_NOMEM ? "out of memory" : strerror(errno));
    fu_strbuf_free(&text);
    fu_opt_args_free(&args);
    return 1;
  }
  fu_source whole = {from_stdin ? "<stdin>" : args.input, data, len, 1};

  fu_diag_engine report;
  fu_diag_init(&report, s.alloc);
  report.stream = err;
  report.error_limit = args.error_limit;

  fu_source *chunks = NULL;
  uint32_t n_chunks = 1;
  if (args.split_input_file) {
    if (fu_split_input(&whole, s.alloc, &chunks, &n_chunks) != FU_OK) {
      fprintf(err, "%s: error: out of memory splitting the input\n", cfg.tool_name);
      rc = 1;
      n_chunks = 0;
    }
  }
  bool all_ok = rc == 0, any_ok = false;
  for (uint32_t i = 0; i < n_chunks; i++) {
    if (i > 0) fu_strbuf_puts(&text, "// -----\n");
    bool ok = run_chunk(&s, chunks ? &chunks[i] : &whole, &report, &text);
    all_ok = all_ok && ok;
    any_ok = any_ok || ok;
  }
  fflush(err);
  /* Without splitting, a failed run writes nothing (and leaves -o alone). */
  if (rc == 0 && (all_ok || (args.split_input_file && any_ok))) rc = write_output(&s, &text, out);
  if (!all_ok) rc = 1;
  if (args.timing != FU_TIMING_OFF) {
    fu_strbuf rep;
    fu_strbuf_init(&rep, s.alloc);
    fu_timing_report(&s.timing, args.timing, &rep);
    if (cfg.compiler) fu_compiler_timing_report(cfg.compiler, &rep);
    fputs(rep.data ? rep.data : "", err);
    fu_strbuf_free(&rep);
  }
  if (s.segment_dot && fu_dot_close(s.segment_dot, FU_OK, args.segment_dot, "segment", fu_loc_none(), &report) != FU_OK)
    rc = 1;
  if (chunks) fu_mem_free(&s.alloc, chunks, n_chunks * sizeof *chunks);
  fu_mem_free(&s.alloc, data, len + 1);
  fu_timing_free(&s.timing);
  fu_strbuf_free(&text);
  fu_opt_args_free(&args);
  return rc;
}
