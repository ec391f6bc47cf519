/* fuser driver: the body of fuser-run (tools/fuser-run.c is its main).
 *
 * Parse the command line, read and verify the input, pick the fusions,
 * and hand them to the device path: the reference interpreter (cpu), the
 * compiled kernels on the kernel-IR interpreter (kir), or the CUDA
 * runtime (gpu).  Exit codes: 0 success, 1 an error in the input, while
 * running, or a failed check, 2 a usage error or no usable device. */
#include <errno.h>
#include <string.h>

#include "fuser/parse.h"
#include "fuser/verify.h"
#include "run_internal.h"

fu_status run_compile_pipeline(const run_args *a, fu_module *m, const fu_device *dev, const fu_source *src,
                               fu_diag_engine *diag) {
  fu_pipeline p;
  fu_pipeline_init(&p, a->alloc);
  fu_status st = fu_pipeline_parse(&p, a->pipeline ? a->pipeline : "all", "--pass", diag);
  if (st == FU_OK) {
    fu_run_options ro = fu_run_options_default();
    ro.device = dev;
    ro.dump = a->err;
    ro.features = a->features;
    if (fu_dump_any(a->dumps)) ro.dumps = a->dumps;
    st = fu_pipeline_run(&p, m, &ro, NULL, src, diag);
  }
  fu_pipeline_free(&p);
  return st;
}

int run_dump_compiled(const run_args *a, fu_module *m, const fu_source *src, uint32_t skip, fu_diag_engine *diag) {
  fu_dump_code_options o = {.fusion = a->fusion, .src = src, .skip = skip, .features = &a->features};
  return fu_dump_code(a->dumps, m, &o, diag) == FU_OK ? 0 : 1;
}

static bool selected(const run_args *a, const fu_fusion *f) {
  return !a->fusion || (f->name && strcmp(f->name, a->fusion) == 0);
}

int run_each_fusion(const run_args *a, fu_module *m, uint32_t n_selected, bool stop, run_fusion_fn fn, void *ctx) {
  fu_strbuf out;
  fu_strbuf_init(&out, a->alloc);
  if (a->json) fu_strbuf_puts(&out, "{\"fusions\": [\n");
  int rc = 0;
  bool first = true;
  for (fu_fusion *f = m->first; f && !(stop && rc); f = f->next) {
    if (!selected(a, f)) continue;
    size_t before = out.len;
    if (fn(ctx, a, f, n_selected > 1, &out, first) != 0) rc = 1;
    if (out.len != before) first = false;
  }
  if (a->json) fu_strbuf_puts(&out, "\n]}\n");
  fwrite(out.data ? out.data : "", 1, out.len, a->out);
  if (fflush(a->out) != 0) rc = 1;
  fu_strbuf_free(&out);
  return rc;
}

typedef struct host_ctx {
  fu_diag_engine *diag;
} host_ctx;

static int cpu_fusion(void *ctx, const run_args *a, fu_fusion *f, bool several, fu_strbuf *out, bool first) {
  return run_cpu_fusion(a, f, several, ((host_ctx *)ctx)->diag, out, first);
}

static int kir_fusion(void *ctx, const run_args *a, fu_fusion *f, bool several, fu_strbuf *out, bool first) {
  return run_kir_fusion(a, f, several, ((host_ctx *)ctx)->diag, out, first);
}

/* The fusions the command line picks; none is an error (listing the
 * fusions there are when --fusion named another). */
static uint32_t count_selected(const run_args *a, fu_module *m, const fu_source *src, fu_diag_engine *diag) {
  uint32_t n = 0;
  for (fu_fusion *f = m->first; f; f = f->next) n += selected(a, f);
  if (n) return n;
  fu_strbuf names;
  fu_strbuf_init(&names, a->alloc);
  for (fu_fusion *f = m->first; f; f = f->next) fu_strbuf_printf(&names, " @%s", f->name ? f->name : "");
  fu_loc file_loc = {src, 0, 0}; /* the file, no line */
  if (a->fusion)
    fprintf(a->err, RUN_TOOL ": no fusion named '@%s' in '%s' (it has:%s)\n", a->fusion, src->name,
            names.len ? names.data : " none");
  else
    fu_error(diag, file_loc, "the input holds no fusion");
  fu_strbuf_free(&names);
  return 0;
}

int fu_run_main(int argc, char *const *argv, FILE *in, FILE *out, FILE *err) {
  run_args a;
  int rc = run_parse_args(argc, argv, &a, out, err);
  if (rc >= 0) {
    run_args_free(&a);
    return rc;
  }
  if ((a.save_outputs && !run_save_prepare(&a, a.save_outputs)) || (a.save_inputs && !run_save_prepare(&a, a.save_inputs)) ||
      !run_repro_prepare(&a)) {
    run_args_free(&a);
    return 1;
  }
  if (!a.file) { /* --device-info alone */
    rc = run_gpu(&a, NULL, NULL, 0);
    run_args_free(&a);
    return rc;
  }
  fu_allocator al = a.alloc;
  fu_diag_engine diag;
  fu_diag_init(&diag, al);
  diag.stream = err;
  diag.error_limit = a.error_limit;
  char *text = NULL;
  size_t len = 0;
  bool from_stdin = strcmp(a.file, "-") == 0;
  fu_status st = from_stdin ? fu_read_stream(in, al, &text, &len) : fu_read_file(a.file, al, &text, &len);
  if (st != FU_OK) {
    fprintf(err, RUN_TOOL ": cannot read '%s': %s\n", a.file, st == FU_ERR_NOMEM ? "out of memory" : strerror(errno));
    run_args_free(&a);
    return 1;
  }
  fu_source src = {from_stdin ? "<stdin>" : a.file, text, len, 1};
  a.source = &src;
  fu_module *m = NULL;
  rc = 1;
  st = fu_parse_module(&src, al, &diag, &m);
  if (st == FU_OK) st = fu_verify_module(m, &diag);
  if (st == FU_OK) st = fu_dump_module(a.dumps, FU_DUMP_FUSION_IR, m, "as parsed");
  if (st == FU_OK) st = fu_dump_python(a.dumps, m, src.name, &diag);
  uint32_t n_selected = st == FU_OK ? count_selected(&a, m, &src, &diag) : 0;
  host_ctx hc = {&diag};
  if (n_selected && a.device == RUN_DEVICE_GPU) {
    rc = run_gpu(&a, m, &src, n_selected);
  } else if (n_selected && a.device == RUN_DEVICE_KIR) {
    if ((!run_kir_needs_compile(&a, m) || run_compile_pipeline(&a, m, NULL, &src, &diag) == FU_OK) &&
        run_dump_compiled(&a, m, &src, run_dump_plan_kinds(), &diag) == 0)
      rc = run_each_fusion(&a, m, n_selected, false, kir_fusion, &hc);
    else
      run_repro_compile_failure(&a, a.fusion, &diag);
  } else if (n_selected) {
    rc = run_each_fusion(&a, m, n_selected, false, cpu_fusion, &hc);
  }
  if (m) fu_module_free(m);
  fu_mem_free(&al, text, len + 1);
  run_args_free(&a);
  return rc;
}
