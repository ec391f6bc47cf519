/* fuser driver: fuser-run --device=cpu: a fusion on the CPU reference
 * interpreter (lib/interp), with no compilation. */
#include "run_internal.h"

int run_cpu_fusion(const run_args *a, fu_fusion *f, bool several, fu_diag_engine *diag, fu_strbuf *out, bool first) {
  fu_allocator al = a->alloc;
  fu_arg *in = NULL, *res = NULL;
  uint32_t n_in = 0, n_res = 0;
  int rc = 1;
  fu_status st = run_make_inputs(a, f, diag, &in, &n_in);
  fu_interp_options o = {.threads = a->interp_threads};
  if (st == FU_OK) st = fu_interp_run(f, in, n_in, &o, al, diag, &res, &n_res);
  if (st == FU_OK) {
    run_fusion_result r = {.f = f, .in = in, .res = res, .n_in = n_in, .n_res = n_res, .device = "cpu",
                           .what = "cpu reference interpreter"};
    rc = run_report_fusion(a, &r, several, first, diag, out);
  }
  run_repro_after(a, f, in, n_in, st, rc, NULL, 0, several, NULL, NULL, diag);
  fu_args_free(in, n_in, al);
  fu_args_free(res, n_res, al);
  return rc;
}
