/* fuser: the `llvm` row of the target table (include/fuser/target.h): the
 * target entry points over the LLVM backend (fuser/backend.h). */
#include <string.h>

#include "fuser/backend.h"
#include "fuser/target.h"

static fu_status llvm_open(const fu_target_options *o, fu_allocator alloc, fu_diag_engine *diag, void **state) {
  fu_backend_options bo;
  memset(&bo, 0, sizeof bo);
  if (o) {
    bo.pipeline = o->pipeline;
    bo.llvm_before_opt = o->before_opt;
    bo.default_sm = o->arch;
    bo.no_fast_paths = o->no_fast_paths;
    bo.tid_range = o->tid_range;
  }
  fu_backend *be = NULL;
  fu_status st = fu_backend_new(&bo, alloc, diag, &be);
  *state = be;
  return st;
}

static void llvm_close(void *state) { fu_backend_free(state); }

static fu_status llvm_emit(void *state, const fu_kernel *const *ks, uint32_t n, fu_target_output what,
                           const char *arch, fu_strbuf *out) {
  return what == FU_TARGET_PTX ? fu_backend_emit_ptx(state, ks, n, arch, out) : fu_backend_emit_llvm(state, ks, n, out);
}

static void llvm_timing(void *state, fu_target_timing *out) {
  fu_backend_timing t;
  fu_backend_last_timing(state, &t);
  out->load_ms = t.libdevice_load_ms;
  out->build_ms = t.build_ms;
  out->opt_ms = t.opt_ms;
  out->codegen_ms = t.codegen_ms;
  out->total_ms = t.total_ms;
  out->cpu_ms = t.cpu_ms;
}

const fu_target_def fu_target_llvm = {
    "llvm", "llvm", "kernel IR to LLVM IR and PTX through LLVM's NVPTX target, libdevice for math",
    llvm_open, llvm_close, llvm_emit, fu_backend_sm_supported, llvm_timing,
};
