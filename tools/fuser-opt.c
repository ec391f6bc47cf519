/* fuser-opt: run passes over .fir files (see --help).  A thin main over
 * lib/driver; the backends plug in here as --emit emitters when the build
 * has them (fuser_core itself needs neither LLVM nor CUDA). */
#include <stdio.h>
#include <string.h>

#include "fuser/driver.h"
#ifdef FUSER_HAS_LLVM
#include "fuser/backend.h"
#include "fuser/lower.h"
#include "fuser/schedule.h"

/* ---- --emit=llvm|ptx through the LLVM backend ------------------------------
 * One backend per process, made on first use, so libdevice is opened once
 * and each function body in it is read once, however many chunks are
 * emitted.  The kernels of every lowered segment go
 * into one module; the PTX architecture is the one the schedules were made
 * for (--device changes it), sm_90 when they name none. */
typedef struct emit_state {
  fu_backend *be;
  fu_backend_timing total;
  unsigned calls;
} emit_state;

static fu_status emit_kernels(void *user, fu_module *m, fu_emit_kind kind, fu_strbuf *out, fu_diag_engine *diag) {
  emit_state *es = user;
  uint32_t missing = 0;
  uint32_t n = fu_module_kernels(m, NULL, 0, &missing);
  if (n == 0) {
    fu_error(diag, fu_loc_none(),
             "nothing to emit: no segment has a kernel (run the pipeline to the lower pass, e.g. --pass=all)");
    return FU_ERR_INVALID_ARG;
  }
  fu_kernel **ks = fu_mem_alloc(&m->alloc, n * sizeof *ks);
  if (!ks) return FU_ERR_NOMEM;
  fu_module_kernels(m, ks, n, NULL);
  const char *arch = NULL;
  fu_status st = FU_OK;
  for (fu_fusion *f = m->first; f; f = f->next)
    for (fu_op *op = fu_walk_first(&f->body); op; op = fu_walk_next(op)) {
      if (op->kind != FU_OP_SEGMENT) continue;
      const fu_segment_info *si = &op->u.segment;
      if (!si->kernel)
        fu_warning(diag, op->loc, "segment '@%s' (%s) has no kernel: it is not in the output (its scheduler comes later)",
                   si->name ? si->name : "?", fu_sched_kind_name(si->kind));
      else if (si->schedule && si->schedule->arch) {
        if (arch && strcmp(arch, si->schedule->arch) != 0 && st == FU_OK) {
          fu_error(diag, op->loc, "segment '@%s' was scheduled for %s, another for %s: one module has one target",
                   si->name ? si->name : "?", si->schedule->arch, arch);
          st = FU_ERR_INVALID_ARG;
        }
        arch = si->schedule->arch;
      }
    }
  if (st == FU_OK && arch && !fu_backend_sm_supported(arch)) {
    fu_error(diag, fu_loc_none(), "the backend cannot compile for '%s'", arch);
    st = FU_ERR_UNSUPPORTED;
  }
  if (st == FU_OK && !es->be) st = fu_backend_new(NULL, fu_default_allocator(), diag, &es->be);
  if (st == FU_OK) {
    const fu_kernel *const *cks = (const fu_kernel *const *)ks;
    st = kind == FU_EMIT_PTX ? fu_backend_emit_ptx(es->be, cks, n, arch ? arch : "sm_90", out)
                             : fu_backend_emit_llvm(es->be, cks, n, out);
    fu_backend_timing t;
    fu_backend_last_timing(es->be, &t);
    es->total.libdevice_load_ms += t.libdevice_load_ms;
    es->total.build_ms += t.build_ms;
    es->total.opt_ms += t.opt_ms;
    es->total.codegen_ms += t.codegen_ms;
    es->total.total_ms += t.total_ms;
    es->total.cpu_ms += t.cpu_ms;
    es->calls++;
  }
  fu_mem_free(&m->alloc, ks, n * sizeof *ks);
  return st;
}
#endif

int main(int argc, char **argv) {
  fu_opt_config cfg = {.tool_name = "fuser-opt"};
#ifdef FUSER_HAS_LLVM
  emit_state es;
  memset(&es, 0, sizeof es);
  cfg.emitters[FU_EMIT_LLVM] = emit_kernels;
  cfg.emitters[FU_EMIT_PTX] = emit_kernels;
  cfg.emit_user = &es;
#endif
  int rc = fu_opt_main(argc, argv, &cfg, stdin, stdout, stderr);
#ifdef FUSER_HAS_LLVM
  /* With --timing, where the emit time went: libdevice's one-time parse
   * apart from the per-module work. */
  bool timing = false;
  for (int i = 1; i < argc; i++)
    if (strncmp(argv[i], "--timing", 8) == 0 || strncmp(argv[i], "-timing", 7) == 0) timing = true;
  if (timing && es.calls)
    fprintf(stderr,
            "emit breakdown: libdevice load %.3f ms (opening it and reading the bodies used), kernel IR to LLVM %.3f ms, "
            "optimization %.3f ms, code generation %.3f ms, total without libdevice %.3f ms (cpu %.3f ms)\n",
            es.total.libdevice_load_ms, es.total.build_ms, es.total.opt_ms, es.total.codegen_ms,
            es.total.total_ms - es.total.libdevice_load_ms, es.total.cpu_ms);
  fu_backend_free(es.be);
#endif
  return rc;
}
