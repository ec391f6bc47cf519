/* fuser driver: fuser-run's repro folders.
 *
 * When a run fails (a --check mismatch, a compile error, an error while
 * running) fuser-run writes a folder that reproduces it with nothing else:
 *
 *   fusion.fir      the fusion, each input carrying the run's data as
 *                   npy="inputs/<name>.npy" with example_shape and
 *                   example_strides (scalars: example=<value>)
 *   inputs/<name>.npy    the data
 *   run.sh          reruns it from any folder (fuser-run with the same
 *                   device, checks, pipeline and FUSER_* environment);
 *                   `run.sh --python` runs fusion.py instead
 *   fusion.py       the fusion as an nvFuser script whose inputs list
 *                   rebuilds the tensors in their shapes, strides and dtypes
 *                   and fills them from inputs/ (fuser-translate
 *                   --with-inputs)
 *
 * --save-repro DIR writes the same on demand.  A failing fusion of several
 * segments is first narrowed down: each segment alone (fuser-opt's
 * --extract-segment), fed the values the reference interpreter computes
 * for its inputs, runs on the same device; the first that fails alone is
 * the repro. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuser/frontend.h"
#include "fuser/parse.h"
#include "fuser/print.h"
#include "fuser/segment.h"
#include "fuser/verify.h"
#include "run_internal.h"

extern char **environ;

const char *run_failure_name(run_failure why) {
  switch (why) {
  case RUN_FAIL_NONE: return "on request";
  case RUN_FAIL_CHECK: return "--check mismatch";
  case RUN_FAIL_COMPILE: return "compile error";
  case RUN_FAIL_RUN: return "error while running";
  case RUN_FAIL_DIFF: return "backends differ";
  }
  return "failure";
}

/* ---- the folder ---- */

bool run_repro_prepare(const run_args *a) { return !a->save_repro || run_save_mkdir(a, a->save_repro); }

/* The automatic repro's folder: under $FUSER_REPRO_DIR (made if missing)
 * or $TMPDIR (default /tmp) as fuser-repro-<fusion>-XXXXXX, fresh for each
 * failure so that nothing is overwritten. */
static bool fresh_dir(const run_args *a, const char *fusion, char *out, size_t cap) {
  const char *base = getenv("FUSER_REPRO_DIR");
  bool own = base && *base;
  if (!own) base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  if (own && !run_save_mkdir(a, base)) return false;
  char name[64];
  size_t n = 0;
  for (const char *p = fusion ? fusion : "fusion"; *p && n < 40; p++)
    name[n++] = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ? *p : '_';
  name[n] = '\0';
  if ((size_t)snprintf(out, cap, "%s/fuser-repro-%s-XXXXXX", base, name) >= cap || !mkdtemp(out)) {
    fprintf(a->err, RUN_TOOL ": error: cannot make a repro folder under '%s': %s\n", base, strerror(errno));
    return false;
  }
  return true;
}

static bool write_text(const run_args *a, const char *path, const fu_strbuf *sb, bool executable) {
  FILE *f = fopen(path, "wb");
  bool ok = f && fwrite(sb->data ? sb->data : "", 1, sb->len, f) == sb->len && !sb->failed;
  if (f) ok &= fclose(f) == 0;
  if (ok && executable) ok = chmod(path, 0755) == 0;
  if (!ok) fprintf(a->err, RUN_TOOL ": error: cannot write '%s': %s\n", path, strerror(errno));
  return ok;
}

/* `s` as one shell word. */
static void put_shell_word(fu_strbuf *sb, const char *s) {
  fu_strbuf_putc(sb, '\'');
  for (; *s; s++) {
    if (*s == '\'')
      fu_strbuf_puts(sb, "'\\''");
    else
      fu_strbuf_putc(sb, *s);
  }
  fu_strbuf_putc(sb, '\'');
}

/* The fuser-run that runs now, when it is one (tests call fu_run_main from
 * their own binaries): run.sh prefers it to whatever is on PATH. */
static bool own_tool_path(char *out) {
  if (!realpath("/proc/self/exe", out)) return false;
  const char *slash = strrchr(out, '/');
  return strcmp(slash ? slash + 1 : out, RUN_TOOL) == 0;
}

static void put_double_arg(fu_strbuf *sb, const char *opt, double v) {
  fu_strbuf_printf(sb, " %s=", opt);
  fu_strbuf_put_double(sb, v);
}

/* run.sh: fuser-run on fusion.fir with what decides the outcome (device,
 * check, tolerances, pipeline, backend, the PTX) and the FUSER_* variables
 * of this run; extra arguments are passed on. */
static void write_run_sh(const run_args *a, const run_repro_request *r, const char *note, bool with_ptx,
                         fu_strbuf *sb) {
  fu_strbuf_puts(sb, "#!/bin/sh\n# fuser repro, written by " RUN_TOOL ": ");
  fu_strbuf_puts(sb, note);
  fu_strbuf_puts(sb, "\n#   sh run.sh [more fuser-run options]   reruns it (from any folder)\n"
                     "#   sh run.sh --python                   runs fusion.py (nvFuser and PyTorch)\n"
                     "# FUSER_RUN names the fuser-run to use; the FUSER_ variables below are this run's,\n"
                     "# and one set in the caller's environment (even empty) wins.\n"
                     "here=$(cd \"$(dirname \"$0\")\" && pwd) || exit 2\n"
                     "if [ \"${1:-}\" = --python ]; then\n"
                     "  shift\n"
                     "  cd \"$here\" && exec \"${PYTHON:-python3}\" fusion.py \"$@\"\n"
                     "fi\n");
  char self[PATH_MAX];
  fu_strbuf_puts(sb, "run=${FUSER_RUN:-");
  if (own_tool_path(self))
    put_shell_word(sb, self);
  else
    fu_strbuf_puts(sb, RUN_TOOL);
  fu_strbuf_puts(sb, "}\ncommand -v \"$run\" >/dev/null 2>&1 || run=" RUN_TOOL "\n");
  for (char **e = environ; e && *e; e++)
    if (strncmp(*e, "FUSER_", 6) == 0 && strncmp(*e, "FUSER_REPRO_DIR=", 16) != 0 && strncmp(*e, "FUSER_RUN=", 10) != 0) {
      const char *eq = strchr(*e, '=');
      if (!eq) continue;
      int n = (int)(eq - *e);
      fu_strbuf_printf(sb, "%.*s=${%.*s-", n, *e, n, *e);
      put_shell_word(sb, eq + 1);
      fu_strbuf_printf(sb, "}; export %.*s\n", n, *e);
    }
  fu_strbuf_puts(sb, "exec \"$run\" \"$here/fusion.fir\" --no-repro");
  if (a->device == RUN_DEVICE_KIR) fu_strbuf_puts(sb, " --device=kir");
  if (a->device == RUN_DEVICE_CPU) fu_strbuf_puts(sb, " --device=cpu");
  if (a->device != RUN_DEVICE_CPU) fu_strbuf_puts(sb, " --check");
  if (a->rtol >= 0) put_double_arg(sb, "--rtol", a->rtol);
  if (a->atol >= 0) put_double_arg(sb, "--atol", a->atol);
  if (a->pipeline && !with_ptx) {
    fu_strbuf_puts(sb, " --pass=");
    put_shell_word(sb, a->pipeline);
  }
  if (a->backend && !with_ptx) fu_strbuf_printf(sb, " --backend=%s", a->backend);
  if (with_ptx) fu_strbuf_puts(sb, " --ptx \"$here/kernels.ptx\"");
  if (a->gpu) fu_strbuf_printf(sb, " --gpu=%d", a->gpu);
  if (a->diff_backends && !with_ptx) fu_strbuf_puts(sb, " --diff-backends");
  fu_strbuf_puts(sb, " \"$@\"\n");
  (void)r;
}

/* ---- the fusion with its inputs ---- */

/* Gives each INPUT op of `f` the data of in[i]: tensors as
 * npy="inputs/<name>.npy" with their shape and (when not row-major) their
 * strides, scalars as example=<value>. */
static bool attach_inputs(fu_fusion *f, const fu_arg *in, uint32_t n_in) {
  fu_module *m = f->module;
  uint32_t i = 0;
  for (fu_op *op = f->body.first; op; op = op->next) {
    if (op->kind != FU_OP_INPUT) continue;
    if (i >= n_in) return false;
    const fu_arg *x = &in[i++];
    fu_example *ex = &op->u.input.example;
    memset(ex, 0, sizeof *ex);
    ex->rank = -1;
    if (x->kind == FU_ARG_SCALAR) {
      ex->init = FU_INIT_VALUE;
      ex->value = x->scalar;
      continue;
    }
    const fu_host_tensor *t = &x->tensor;
    const char *name = op->results[0]->name ? op->results[0]->name : "unnamed";
    size_t len = strlen(name) + sizeof "inputs/.npy";
    char *path = fu_arena_alloc(m->arena, len);
    if (!path) return false;
    snprintf(path, len, "inputs/%s.npy", name);
    ex->init = FU_INIT_NPY;
    ex->npy_path = path;
    ex->rank = t->rank;
    if (t->rank > 0) {
      ex->shape = fu_arena_memdup(m->arena, t->shape, (size_t)t->rank, sizeof *t->shape);
      if (!ex->shape) return false;
      int64_t c[FU_MAX_RANK];
      fu_contiguous_strides(t->rank, t->shape, c);
      if (memcmp(c, t->strides, (size_t)t->rank * sizeof *c) != 0) {
        ex->strides = fu_arena_memdup(m->arena, t->strides, (size_t)t->rank, sizeof *t->strides);
        if (!ex->strides) return false;
      }
    }
  }
  return i == n_in;
}

/* Collects the diagnostics of a step whose failure is not the run's (the
 * Python export of a construct it cannot express): they go into the file
 * as a comment instead of onto stderr. */
static void collect_diag(void *user, const fu_diagnostic *d) {
  fu_strbuf *sb = user;
  fu_strbuf_printf(sb, "# %s: %s\n", fu_severity_name(d->severity), d->message);
}

/* Writes DIR/fusion.fir, DIR/inputs/<name>.npy, DIR/fusion.py and DIR/run.sh for
 * fusion `f` (alone in its module, or the module's other fusions are left
 * out) with inputs `in`. */
static bool write_folder(const run_args *a, const run_repro_request *r, const char *dir, fu_fusion *f, const fu_arg *in,
                         uint32_t n_in, const char *note, fu_diag_engine *diag) {
  fu_module *m = f->module;
  fu_fusion *first = m->first, *last = m->last, *next = f->next;
  m->first = m->last = f;
  f->next = NULL;
  bool ok = attach_inputs(f, in, n_in);
  if (!ok) fprintf(a->err, RUN_TOOL ": error: the repro's inputs do not match fusion '@%s'\n", f->name ? f->name : "");
  uint32_t n_vals = 0;
  const fu_value *vals[256];
  for (fu_op *op = f->body.first; op && n_vals < 256; op = op->next)
    if (op->kind == FU_OP_INPUT) vals[n_vals++] = op->results[0];
  char path[PATH_MAX];
  if (ok) ok = run_save_args(a, dir, "inputs", vals, in, n_vals < n_in ? n_vals : n_in, diag, NULL);
  fu_strbuf sb;
  fu_strbuf_init(&sb, a->alloc);
  if (ok) {
    fu_strbuf_printf(&sb, "// fuser repro: %s\n// rerun: sh run.sh (beside this file)\n", note);
    fu_print_module(&sb, m, NULL);
    snprintf(path, sizeof path, "%s/fusion.fir", dir);
    ok = write_text(a, path, &sb, false);
  }
  if (ok) {
    fu_strbuf_clear(&sb);
    fu_strbuf why;
    fu_strbuf_init(&why, a->alloc);
    fu_diag_engine pd;
    fu_diag_init(&pd, a->alloc);
    pd.handler = collect_diag;
    pd.user = &why;
    fu_py_export_options eo = {"fusion.fir (run it in this folder, as sh run.sh --python does)", "cuda", true};
    if (fu_py_export(&sb, m, &eo, &pd) != FU_OK) {
      fu_strbuf_clear(&sb);
      fu_strbuf_puts(&sb, "# fusion.fir has no nvFuser Python form:\n");
      fu_strbuf_append(&sb, why.data ? why.data : "", why.len);
    }
    fu_strbuf_free(&why);
    snprintf(path, sizeof path, "%s/fusion.py", dir);
    ok = write_text(a, path, &sb, false);
  }
  bool with_ptx = a->ptx && r->whole;
  if (ok && with_ptx) {
    char *text = NULL;
    size_t len = 0;
    ok = fu_read_file(a->ptx, a->alloc, &text, &len) == FU_OK;
    if (ok) {
      fu_strbuf_clear(&sb);
      fu_strbuf_append(&sb, text, len);
      fu_mem_free(&a->alloc, text, len + 1);
      snprintf(path, sizeof path, "%s/kernels.ptx", dir);
      ok = write_text(a, path, &sb, false);
    } else {
      fprintf(a->err, RUN_TOOL ": error: cannot copy '%s' into the repro\n", a->ptx);
    }
  }
  if (ok) {
    fu_strbuf_clear(&sb);
    write_run_sh(a, r, note, with_ptx, &sb);
    snprintf(path, sizeof path, "%s/run.sh", dir);
    ok = write_text(a, path, &sb, true);
  }
  fu_strbuf_free(&sb);
  f->next = next;
  m->first = first;
  m->last = last;
  return ok;
}

/* ---- narrowing a failure down to one segment ---- */

/* The values the reference interpreter computes for `vals` of fusion `f`
 * (values defined outside any segment) on inputs `in`: a temporary OUTPUT
 * op after the fusion's own outputs, removed again. */
static fu_status interp_values(const run_args *a, fu_fusion *f, fu_value **vals, uint32_t n, const fu_arg *in,
                               uint32_t n_in, fu_diag_engine *diag, fu_arg **out) {
  fu_op *tmp = fu_op_new(f, FU_OP_OUTPUT, vals, n, 0, f->loc);
  if (!tmp) return FU_ERR_NOMEM;
  fu_block_append(&f->body, tmp);
  fu_arg *res = NULL;
  uint32_t n_res = 0;
  fu_interp_options o = {.threads = a->interp_threads};
  fu_status st = fu_interp_run(f, in, n_in, &o, a->alloc, diag, &res, &n_res);
  fu_block_remove(&f->body, tmp);
  if (st != FU_OK) return st;
  /* the last n results are ours; the fusion's own outputs are freed */
  fu_arg *mine = fu_mem_calloc(&a->alloc, n ? n : 1, sizeof *mine);
  if (!mine) {
    fu_args_free(res, n_res, a->alloc);
    return FU_ERR_NOMEM;
  }
  for (uint32_t i = 0; i < n; i++) {
    mine[i] = res[n_res - n + i];
    res[n_res - n + i] = fu_arg_scalar_b(false); /* now owned by `mine` */
  }
  fu_args_free(res, n_res, a->alloc);
  *out = mine;
  return FU_OK;
}

/* The INPUT values of the extracted segment `xf` looked up by name among
 * segment `seg`'s operands in `f`; false when one is missing. */
static bool segment_inputs(const fu_op *seg, fu_fusion *xf, fu_value **vals, uint32_t cap, uint32_t *n) {
  *n = 0;
  for (fu_op *op = xf->body.first; op; op = op->next) {
    if (op->kind != FU_OP_INPUT) continue;
    const char *want = op->results[0]->name;
    fu_value *found = NULL;
    for (uint32_t i = 0; i < seg->n_operands && !found; i++) {
      fu_value *v = seg->operands[i];
      if (!v->is_literal && v->name && want && strcmp(v->name, want) == 0) found = v;
    }
    if (!found || *n >= cap) return false;
    vals[(*n)++] = found;
  }
  return true;
}

/* Tries segment `seg` of `f` alone: extracted, fed the interpreter's values
 * of its inputs, compiled and run by the device path's `try_alone`.  1 when
 * it fails alone (then *x and *x_in hold the repro), 0 when it passes, -1
 * when it could not be tried. */
static int try_segment(const run_args *a, const run_repro_request *r, fu_op *seg, fu_diag_engine *diag,
                       fu_module **x, fu_arg **x_in, uint32_t *n_x_in) {
  fu_allocator al = a->alloc;
  *x = NULL;
  *x_in = NULL;
  *n_x_in = 0;
  fu_module *xm = NULL;
  if (fu_segment_extract(r->f->module, seg->u.segment.name, al, diag, &xm) != FU_OK) return -1;
  if (fu_verify_module(xm, diag) != FU_OK || !xm->first) {
    fu_module_free(xm);
    return -1;
  }
  fu_value *vals[256];
  uint32_t n = 0;
  fu_arg *in = NULL;
  if (!segment_inputs(seg, xm->first, vals, 256, &n) ||
      interp_values(a, r->f, vals, n, r->in, r->n_in, diag, &in) != FU_OK) {
    fu_module_free(xm);
    return -1;
  }
  /* the try: checked, quiet, no repro of its own; it compiles a copy, so
   * that the repro keeps the segment's ops as extracted */
  fu_module *run_m = NULL;
  fu_strbuf text;
  fu_strbuf_init(&text, al);
  fu_print_module(&text, xm, NULL);
  fu_source src = {"<segment>", text.data ? text.data : "", text.len, 1};
  int fails = -1;
  if (fu_parse_module(&src, al, diag, &run_m) == FU_OK && fu_verify_module(run_m, diag) == FU_OK) {
    run_args t = *a;
    t.given_in = in;
    t.n_given_in = n;
    t.no_repro = true;
    t.save_repro = t.save_inputs = t.save_outputs = NULL;
    t.check = true;
    t.json = false;
    t.print_values = 0;
    t.source = &src;
    fails = r->try_alone(r->ctx, &t, run_m) != 0;
  }
  if (run_m) fu_module_free(run_m);
  fu_strbuf_free(&text);
  if (fails != 1) {
    fu_args_free(in, n, al);
    fu_module_free(xm);
    return fails;
  }
  *x = xm;
  *x_in = in;
  *n_x_in = n;
  return 1;
}

/* A fresh parse of the file's fusion named like `f`, for the whole-fusion
 * repro: the fusion as given, before any pass ran on it. */
static fu_fusion *source_fusion(const run_args *a, const char *name, fu_diag_engine *diag, fu_module **m) {
  *m = NULL;
  if (!a->source || fu_parse_module(a->source, a->alloc, diag, m) != FU_OK) return NULL;
  for (fu_fusion *f = (*m)->first; f; f = f->next)
    if ((!name && !f->name) || (name && f->name && strcmp(f->name, name) == 0)) return f;
  return NULL;
}

bool run_repro_write(const run_args *a, const run_repro_request *r, fu_diag_engine *diag) {
  if (r->why != RUN_FAIL_NONE && (a->no_repro || a->given_in)) return true;
  if (r->why == RUN_FAIL_NONE && !a->save_repro) return true;
  if (!r->in) return true; /* nothing ran: no data to save */
  fu_allocator al = a->alloc;
  const char *fname = r->f ? r->f->name : r->fusion_name;
  char dir[PATH_MAX];
  if (a->save_repro) {
    if (r->several)
      snprintf(dir, sizeof dir, "%s/%s", a->save_repro, fname ? fname : "fusion");
    else
      snprintf(dir, sizeof dir, "%s", a->save_repro);
    if (!run_save_mkdir(a, dir)) return false;
  } else if (!fresh_dir(a, fname, dir, sizeof dir)) {
    return false;
  }
  fu_strbuf note;
  fu_strbuf_init(&note, al);
  fu_strbuf_printf(&note, "fusion '@%s', %s", fname ? fname : "", run_failure_name(r->why));
  if (r->detail) fu_strbuf_printf(&note, " (%s)", r->detail);
  /* a failure inside a fusion of several segments: the first segment that
   * fails alone */
  fu_module *x = NULL;
  fu_arg *x_in = NULL;
  uint32_t n_x_in = 0;
  uint32_t n_seg = 0;
  if (r->f && r->try_alone && r->why != RUN_FAIL_NONE && !a->ptx)
    for (fu_op *op = r->f->body.first; op; op = op->next) n_seg += op->kind == FU_OP_SEGMENT && op->u.segment.name;
  fu_strbuf passed;
  fu_strbuf_init(&passed, al);
  if (n_seg > 1)
    for (fu_op *op = r->f->body.first; op && !x; op = op->next) {
      if (op->kind != FU_OP_SEGMENT || !op->u.segment.name) continue;
      int t = try_segment(a, r, op, diag, &x, &x_in, &n_x_in);
      if (t == 1)
        fu_strbuf_printf(&note, "; reduced to segment '@%s', which fails alone%s%s", op->u.segment.name,
                         passed.len ? " (passing alone: " : "", passed.len ? passed.data : "");
      else
        fu_strbuf_printf(&passed, "%s@%s%s", passed.len ? ", " : "", op->u.segment.name, t < 0 ? " (not tried)" : "");
      if (t == 1 && passed.len) fu_strbuf_putc(&note, ')');
    }
  if (n_seg > 1 && !x) fu_strbuf_puts(&note, "; no segment fails alone, so the repro is the whole fusion");
  bool ok;
  fu_module *src_m = NULL;
  if (x) {
    run_repro_request rr = *r;
    rr.whole = false;
    ok = write_folder(a, &rr, dir, x->first, x_in, n_x_in, note.data, diag);
  } else {
    fu_fusion *sf = source_fusion(a, fname, diag, &src_m);
    run_repro_request rr = *r;
    rr.whole = true;
    ok = sf && write_folder(a, &rr, dir, sf, r->in, r->n_in, note.data, diag);
  }
  if (ok)
    fprintf(a->err, RUN_TOOL ": repro of '@%s' (%s) written to %s; rerun: sh %s/run.sh\n", fname ? fname : "",
            run_failure_name(r->why), dir, dir);
  if (x_in) fu_args_free(x_in, n_x_in, al);
  if (x) fu_module_free(x);
  if (src_m) fu_module_free(src_m);
  fu_strbuf_free(&passed);
  fu_strbuf_free(&note);
  return ok;
}

/* A pipeline that failed before any fusion ran: each selected fusion of
 * the file, with the inputs the run would have made, is a repro. */
void run_repro_compile_failure(const run_args *a, const char *only, fu_diag_engine *diag) {
  if (a->no_repro) return;
  fu_module *m = NULL;
  fu_diag_engine quiet;
  fu_diag_init(&quiet, a->alloc);
  quiet.stream = a->err;
  if (!a->source || fu_parse_module(a->source, a->alloc, &quiet, &m) != FU_OK) {
    return;
  }
  uint32_t n = 0;
  for (fu_fusion *f = m->first; f; f = f->next) n += !only || (f->name && strcmp(f->name, only) == 0);
  for (fu_fusion *f = m->first; f; f = f->next) {
    if (only && (!f->name || strcmp(f->name, only) != 0)) continue;
    fu_arg *in = NULL;
    uint32_t n_in = 0;
    if (run_make_inputs(a, f, &quiet, &in, &n_in) != FU_OK) continue;
    run_repro_request r = {.fusion_name = f->name, .in = in, .n_in = n_in, .why = RUN_FAIL_COMPILE,
                           .several = n > 1};
    run_repro_write(a, &r, diag);
    fu_args_free(in, n_in, a->alloc);
  }
  fu_module_free(m);
}

void run_repro_failed_outputs(fu_strbuf *sb, fu_fusion *f, const run_check_line *lines, uint32_t n) {
  uint32_t n_out = fu_fusion_outputs(f, NULL, 0);
  fu_value *outs[256];
  fu_fusion_outputs(f, outs, n_out < 256 ? n_out : 256);
  bool any = false;
  for (uint32_t i = 0; lines && i < n; i++) {
    if (lines[i].pass) continue;
    const char *name = i < n_out && i < 256 && outs[i]->name ? outs[i]->name : NULL;
    if (name)
      fu_strbuf_printf(sb, "%s%%%s", any ? ", " : "", name);
    else
      fu_strbuf_printf(sb, "%soutput %u", any ? ", " : "", i);
    any = true;
  }
}

void run_repro_after(const run_args *a, fu_fusion *f, const fu_arg *in, uint32_t n_in, fu_status st, int rc,
                     const run_check_line *lines, uint32_t n_lines, bool several, run_try_fn try_alone, void *ctx,
                     fu_diag_engine *diag) {
  run_repro_request r = {.f = f, .in = in, .n_in = n_in, .several = several, .try_alone = try_alone, .ctx = ctx};
  fu_strbuf detail;
  fu_strbuf_init(&detail, a->alloc);
  if (st != FU_OK) {
    r.why = RUN_FAIL_RUN;
  } else if (rc != 0 && lines) {
    run_repro_failed_outputs(&detail, f, lines, n_lines);
    if (detail.len) r.why = RUN_FAIL_CHECK;
  }
  if (r.why == RUN_FAIL_CHECK) r.detail = detail.data;
  if (st == FU_OK && rc != 0 && r.why == RUN_FAIL_NONE) r.in = NULL; /* a failure of the summary itself */
  run_repro_write(a, &r, diag);
  fu_strbuf_free(&detail);
}
