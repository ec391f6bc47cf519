/* fuser driver: running a pipeline over a module, with IR dumps around each
 * pass, the verifier after each pass, per-pass timing and --debug streams. */
#include <string.h>

#include "fuser/driver.h"
#include "fuser/dump.h"
#include "fuser/print.h"
#include "fuser/verify.h"

fu_run_options fu_run_options_default(void) {
  fu_run_options o;
  memset(&o, 0, sizeof o);
  o.verify_each = true;
  o.dump = stderr;
  return o;
}

bool fu_name_in_list(const char *list, const char *name) {
  if (!list || !name) return false;
  size_t want = strlen(name);
  const char *p = list;
  for (;;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if ((len == want && memcmp(p, name, len) == 0) || (len == 3 && memcmp(p, "all", 3) == 0)) return true;
    if (!end) return false;
    p = end + 1;
  }
}

/* Dumps go to a stream, banner first, as IR comments so that a dump is
 * itself a valid .fir file. */
static void dump(const fu_run_options *o, const char *when, const char *pass, const fu_module *m) {
  FILE *out = o->dump ? o->dump : stderr;
  fu_print_options po = {o->print_locs};
  fprintf(out, "// ----- IR %s %s -----\n", when, pass);
  fu_print_module_file(out, m, &po);
  fflush(out);
}

/* The text a pass wrote to its captured --debug stream. */
static fu_status read_capture(FILE *cap, fu_strbuf *out) {
  rewind(cap);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, cap)) > 0) fu_strbuf_append(out, buf, n);
  return ferror(cap) ? FU_ERR_IO : out->failed ? FU_ERR_NOMEM : FU_OK;
}

/* A pass whose --debug output is a dump (segmenter_logging, index_graph)
 * writes it to a temporary file while it runs; the dump, and the --debug
 * stream when --debug names the pass too, get the text afterwards. */
static fu_status finish_capture(const fu_run_options *o, const char *name, const fu_module *m, FILE *cap,
                                bool also_debug) {
  fu_strbuf text;
  fu_strbuf_init(&text, m->alloc);
  fu_status st = read_capture(cap, &text);
  fclose(cap);
  if (st == FU_OK && also_debug && text.len) {
    FILE *out = o->dump ? o->dump : stderr;
    fwrite(text.data, 1, text.len, out);
    fflush(out);
  }
  if (st == FU_OK) st = fu_dump_pass_debug(o->dumps, name, m, text.data, text.len);
  fu_strbuf_free(&text);
  return st;
}

/* A location that names the input but no line ("file.fir: error: ..."). */
static fu_loc file_loc(const fu_source *src) {
  fu_loc l = {src, 0, 0};
  return l;
}

fu_status fu_pipeline_run(const fu_pipeline *p, fu_module *m, const fu_run_options *o, fu_timing *timing,
                          const fu_source *loc_src, fu_diag_engine *diag) {
  fu_run_options defaults = fu_run_options_default();
  if (!o) o = &defaults;
  for (uint32_t i = 0; i < p->n_steps; i++) {
    const fu_pipeline_step *step = &p->steps[i];
    const char *name = step->pass->name;
    if (o->print_ir_before_all || fu_name_in_list(o->print_ir_before, name)) dump(o, "before", name, m);
    if (o->dumps && fu_dump_before_pass(o->dumps, name, m) != FU_OK) return FU_ERR_IO;

    fu_pass_context ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.diag = diag;
    ctx.options = step->options;
    ctx.n_options = step->n_options;
    ctx.debug_flags = o->debug;
    ctx.debug_out = fu_name_in_list(o->debug, name) ? (o->dump ? o->dump : stderr) : NULL;
    ctx.pass = step->pass;
    ctx.device = o->device;
    ctx.features = &o->features;
    bool also_debug = ctx.debug_out != NULL;
    FILE *cap = o->dumps && fu_dump_on(o->dumps, fu_dump_of_pass_debug(name)) ? tmpfile() : NULL;
    if (cap) {
      ctx.debug_out = cap;
      ctx.debug_flags = name;
    }

    unsigned errors_before = diag->n_errors;
    double t0 = fu_timing_now();
    fu_status st = step->pass->run(m, &ctx);
    if (timing) fu_timing_add(timing, name, fu_timing_now() - t0);
    if (ctx.debug_out) fflush(ctx.debug_out);
    if (cap) {
      fu_status ds = finish_capture(o, name, m, cap, also_debug);
      if (st == FU_OK) st = ds;
    }
    if (st != FU_OK) {
      /* A pass that explains its failure needs nothing more (and an extra
       * unlocated diagnostic would break --verify-diagnostics tests). */
      if (diag->n_errors == errors_before)
        fu_error(diag, file_loc(loc_src), "pass '%s' failed (%s)", name, fu_status_name(st));
      return st;
    }
    if (o->print_ir_after_all || fu_name_in_list(o->print_ir_after, name)) dump(o, "after", name, m);
    if (o->dumps && fu_dump_after_pass(o->dumps, name, m) != FU_OK) return FU_ERR_IO;
    if (o->verify_each) {
      t0 = fu_timing_now();
      st = fu_verify_module(m, diag);
      if (timing) fu_timing_add(timing, "verify", fu_timing_now() - t0);
      if (st != FU_OK) {
        fu_error(diag, file_loc(loc_src),
                 "the IR is invalid after pass '%s' (a bug in that pass; rerun with --print-ir-after=%s "
                 "--no-verify-each to see it)",
                 name, name);
        return FU_ERR_VERIFY;
      }
    }
  }
  return FU_OK;
}
