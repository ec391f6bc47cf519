/* fuser driver: fuser-run --device=kir: the fusion compiled by the
 * pipeline (--pass, default `all`, for the passes' default device), its
 * lowered kernels run on the CPU by the kernel-IR interpreter
 * (fu_kir_run_fusion: whole blocks in lockstep, barriers, shuffles, shared
 * memory and workspaces, every output element written exactly once), and
 * with --check compared with the reference interpreter as the GPU path
 * does.  This is how real kernels are checked where there is no GPU. */
#include <string.h>

#include "fuser/gemm.h"
#include "fuser/kir_interp.h"
#include "run_internal.h"

bool run_kir_needs_compile(const run_args *a, fu_module *m) {
  if (a->pipeline) return true;
  for (fu_fusion *f = m->first; f; f = f->next) {
    if (a->fusion && (!f->name || strcmp(f->name, a->fusion) != 0)) continue;
    bool any = false;
    for (fu_op *op = f->body.first; op; op = op->next) {
      if (op->kind != FU_OP_SEGMENT) continue;
      if (!fu_segment_runnable(op)) return true;
      any = true;
    }
    if (!any) return true;
  }
  return false;
}

/* A segment the pipeline left without a kernel is an error at it. */
static bool all_lowered(fu_fusion *f, fu_diag_engine *diag) {
  for (fu_op *op = f->body.first; op; op = op->next)
    if (op->kind == FU_OP_SEGMENT && !fu_segment_runnable(op)) {
      fu_error(diag, op->loc,
               "segment '%s' of fusion '@%s' (kind %s) has no kernel after the pipeline: %s",
               op->u.segment.name ? op->u.segment.name : "?", f->name ? f->name : "",
               fu_sched_kind_name(op->u.segment.kind), fu_segment_no_kernel_reason(op));
      return false;
    }
  return true;
}

/* --input-offset: every tensor input moved `off` elements into a fresh
 * buffer (the allocator's, 16-byte aligned), so that its data starts off
 * a 16-byte boundary as a view into a larger tensor's storage does; the
 * kernels must not assume an aligned base (docs/ir.md, "Peeled vector
 * splits"). */
static fu_status offset_inputs(fu_arg *in, uint32_t n, int64_t off, fu_allocator al) {
  for (uint32_t i = 0; off > 0 && i < n; i++) {
    fu_host_tensor *t = &in[i].tensor;
    if (in[i].kind != FU_ARG_TENSOR || !t->data || !t->owned) continue;
    size_t shift = (size_t)off * fu_dtype_size(t->dtype), bytes = t->nbytes + shift;
    unsigned char *p = fu_mem_alloc(&al, bytes ? bytes : 1);
    if (!p) return FU_ERR_NOMEM;
    memset(p, 0, shift);
    size_t used = t->nbytes - (size_t)((unsigned char *)t->data - (unsigned char *)t->owned);
    if (used) memcpy(p + shift, t->data, used);
    fu_mem_free(&t->alloc, t->owned, t->nbytes);
    t->owned = p;
    t->data = p + shift;
    t->nbytes = bytes;
    t->alloc = al;
  }
  return FU_OK;
}

/* run_try_fn for the kir path: the standalone fusion compiled for the
 * passes' default device and run on the kernel-IR interpreter. */
static int kir_try(void *ctx, const run_args *a, fu_module *m) {
  fu_diag_engine *diag = ctx;
  if (run_compile_pipeline(a, m, NULL, a->source, diag) != FU_OK) return 1;
  fu_strbuf out;
  fu_strbuf_init(&out, a->alloc);
  int rc = run_kir_fusion(a, m->first, false, diag, &out, true);
  fu_strbuf_free(&out);
  return rc;
}

int run_kir_fusion(const run_args *a, fu_fusion *f, bool several, fu_diag_engine *diag, fu_strbuf *out, bool first) {
  if (!all_lowered(f, diag)) {
    run_repro_compile_failure(a, f->name, diag);
    return 1;
  }
  fu_allocator al = a->alloc;
  fu_arg *in = NULL, *res = NULL;
  uint32_t n_in = 0, n_res = 0;
  run_check_line *lines = NULL;
  fu_kir_stats stats;
  memset(&stats, 0, sizeof stats);
  int rc = 1;
  fu_status st = run_make_inputs(a, f, diag, &in, &n_in);
  if (st == FU_OK) st = offset_inputs(in, n_in, a->input_offset, al);
  if (st == FU_OK) run_dump_kir(a, f, in, n_in, diag);
  if (st == FU_OK) st = fu_kir_run_fusion(f, in, n_in, al, diag, &res, &n_res, &stats);
  if (st == FU_OK) st = run_test_corrupt_outputs(f, res, n_res);
  if (st == FU_OK && a->check) st = run_check(a, f, in, n_in, res, n_res, "on the kernel-IR interpreter", diag, &lines);
  if (st == FU_OK) {
    uint32_t n_kernels = 0;
    for (fu_op *op = f->body.first; op; op = op->next) n_kernels += op->kind == FU_OP_SEGMENT;
    char what[160], json[160];
    snprintf(what, sizeof what, "kernel-IR interpreter, %u kernel%s, %llu instructions", n_kernels,
             n_kernels == 1 ? "" : "s", (unsigned long long)stats.instructions);
    snprintf(json, sizeof json, ", \"kernels\": %u, \"instructions\": %llu", n_kernels,
             (unsigned long long)stats.instructions);
    run_fusion_result r = {.f = f, .in = in, .res = res, .n_in = n_in, .n_res = n_res, .lines = lines,
                           .device = "kir", .what = what, .json_device = json};
    rc = run_report_fusion(a, &r, several, first, diag, out);
  }
  run_repro_after(a, f, in, n_in, st, rc, lines, n_res, several, kir_try, diag, diag);
  fu_args_free(in, n_in, al);
  fu_args_free(res, n_res, al);
  if (lines) fu_mem_free(&al, lines, (n_res ? n_res : 1) * sizeof *lines);
  return rc;
}
