/* fuser backend: the emit pipeline: kernels -> module -> optimized IR -> PTX. */
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "internal.h"

static void init_types(bk_module *m) {
  LLVMContextRef C = m->C;
  m->t_i1 = LLVMInt1TypeInContext(C);
  m->t_i8 = LLVMInt8TypeInContext(C);
  m->t_i16 = LLVMInt16TypeInContext(C);
  m->t_i32 = LLVMInt32TypeInContext(C);
  m->t_i64 = LLVMInt64TypeInContext(C);
  m->t_f16 = LLVMHalfTypeInContext(C);
  m->t_bf16 = LLVMBFloatTypeInContext(C);
  m->t_f32 = LLVMFloatTypeInContext(C);
  m->t_f64 = LLVMDoubleTypeInContext(C);
  m->t_void = LLVMVoidTypeInContext(C);
  m->t_ptr0 = LLVMPointerTypeInContext(C, 0);
  m->t_ptr1 = LLVMPointerTypeInContext(C, 1);
  m->t_ptr3 = LLVMPointerTypeInContext(C, 3);
}

static void module_dispose(bk_module *m) {
  if (m->B) LLVMDisposeBuilder(m->B);
  if (m->M) LLVMDisposeModule(m->M);
  memset(m, 0, sizeof *m);
}

/* Verifies the kernels, then builds one module holding all of them for
 * target `sm`, with the libdevice functions they call as internal
 * functions, and runs LLVM's verifier on it. */
static fu_status build_module(fu_backend *be, const fu_kernel *const *ks, uint32_t n, const char *sm,
                              bk_module *m, LLVMTargetMachineRef *tm_out) {
  memset(m, 0, sizeof *m);
  if (!ks && n) return FU_ERR_INVALID_ARG;
  fu_status st = FU_OK;
  for (uint32_t i = 0; i < n; i++) {
    if (!ks[i]) return FU_ERR_INVALID_ARG;
    fu_status vs = fu_kernel_verify(ks[i], be->diag, NULL);
    if (vs != FU_OK) st = vs;
  }
  if (st != FU_OK) return st;
  LLVMTargetMachineRef tm = bk_target_machine(be, sm);
  if (!tm) return FU_ERR_INVALID_ARG;
  *tm_out = tm;
  m->be = be;
  m->C = be->ctx;
  m->sm = bk_sm_number(sm);
  m->arch = sm;
  m->M = LLVMModuleCreateWithNameInContext("fuser", m->C);
  m->B = LLVMCreateBuilderInContext(m->C);
  init_types(m);
  LLVMSetTarget(m->M, "nvptx64-nvidia-cuda");
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(m->M, td);
  LLVMDisposeTargetData(td);
  LLVMAddModuleFlag(m->M, LLVMModuleFlagBehaviorOverride, "nvvm-reflect-ftz", 16,
                    LLVMValueAsMetadata(LLVMConstInt(m->t_i32, 0, 0)));

  for (uint32_t i = 0; i < n && st == FU_OK; i++) st = bk_emit_kernel(m, ks[i]);
  if (st != FU_OK) return st;
  /* Only the kernels are entry points; everything else may be inlined and
   * dropped (the device functions the inline budget adds afterwards keep
   * external linkage, libdevice.c says why). */
  for (LLVMValueRef f = LLVMGetFirstFunction(m->M); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f) && LLVMGetFunctionCallConv(f) != LLVMPTXKernelCallConv)
      LLVMSetLinkage(f, LLVMInternalLinkage);
  st = bk_limit_inlining(m);
  if (st != FU_OK) return st;
  char *msg = NULL;
  if (LLVMVerifyModule(m->M, LLVMReturnStatusAction, &msg)) {
    bk_error(be, "internal error: the LLVM IR made from the kernel IR does not verify: %s", msg ? msg : "");
    LLVMDisposeMessage(msg);
    return FU_ERR_VERIFY;
  }
  LLVMDisposeMessage(msg);
  return be->llvm_error ? FU_ERR_UNSUPPORTED : FU_OK;
}

static fu_status optimize(fu_backend *be, bk_module *m, LLVMTargetMachineRef tm) {
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMErrorRef err = LLVMRunPasses(m->M, be->pipeline, tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (err) {
    char *msg = LLVMGetErrorMessage(err);
    bk_error(be, "LLVM pass pipeline '%s': %s", be->pipeline, msg ? msg : "");
    LLVMDisposeErrorMessage(msg);
    return FU_ERR_INVALID_ARG;
  }
  fu_status st = bk_fix_nvptx_lowering(m);
  if (st != FU_OK) {
    bk_error(be, "internal error: a bool-to-float conversion of more than 64 lanes after optimization");
    return st;
  }
  st = bk_widen_bf16_pairs(m);
  if (st != FU_OK) return st;
  return be->llvm_error ? FU_ERR_UNSUPPORTED : FU_OK;
}

static void start_call(fu_backend *be, double *t0, double *c0) {
  be->llvm_error = false;
  memset(&be->timing, 0, sizeof be->timing);
  be->libdevice_cpu_ms = 0;
  *t0 = bk_now_ms();
  *c0 = bk_cpu_ms();
}

static void end_call(fu_backend *be, double t0, double c0) {
  be->timing.total_ms = bk_now_ms() - t0;
  be->timing.cpu_ms = bk_cpu_ms() - c0 - be->libdevice_cpu_ms;
}

fu_status fu_backend_emit_llvm(fu_backend *be, const fu_kernel *const *kernels, uint32_t n, fu_strbuf *out) {
  if (!be || !out) return FU_ERR_INVALID_ARG;
  double t0, t1, c0;
  start_call(be, &t0, &c0);
  bk_module m;
  LLVMTargetMachineRef tm = NULL;
  fu_status st = build_module(be, kernels, n, be->default_sm, &m, &tm);
  t1 = bk_now_ms();
  be->timing.build_ms = t1 - t0 - be->timing.libdevice_load_ms;
  if (st == FU_OK && !be->llvm_before_opt) {
    st = optimize(be, &m, tm);
    be->timing.opt_ms = bk_now_ms() - t1;
  }
  if (st == FU_OK) {
    char *text = LLVMPrintModuleToString(m.M);
    fu_strbuf_puts(out, text);
    LLVMDisposeMessage(text);
    if (out->failed) st = FU_ERR_NOMEM;
  }
  module_dispose(&m);
  end_call(be, t0, c0);
  return st;
}

fu_status fu_backend_emit_ptx(fu_backend *be, const fu_kernel *const *kernels, uint32_t n, const char *sm,
                              fu_strbuf *out) {
  if (!be || !out) return FU_ERR_INVALID_ARG;
  double t0, t1, t2, c0;
  start_call(be, &t0, &c0);
  bk_module m;
  LLVMTargetMachineRef tm = NULL;
  fu_status st = build_module(be, kernels, n, sm ? sm : be->default_sm, &m, &tm);
  t1 = bk_now_ms();
  be->timing.build_ms = t1 - t0 - be->timing.libdevice_load_ms;
  if (st == FU_OK) st = optimize(be, &m, tm);
  t2 = bk_now_ms();
  be->timing.opt_ms = t2 - t1;
  if (st == FU_OK) {
    LLVMMemoryBufferRef buf = NULL;
    char *msg = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, m.M, LLVMAssemblyFile, &msg, &buf)) {
      bk_error(be, "NVPTX code generation failed: %s", msg ? msg : "");
      LLVMDisposeMessage(msg);
      st = FU_ERR_UNSUPPORTED;
    } else {
      fu_strbuf_append(out, LLVMGetBufferStart(buf), LLVMGetBufferSize(buf));
      LLVMDisposeMemoryBuffer(buf);
      if (be->llvm_error) st = FU_ERR_UNSUPPORTED;
      if (out->failed) st = FU_ERR_NOMEM;
    }
    be->timing.codegen_ms = bk_now_ms() - t2;
  }
  module_dispose(&m);
  end_call(be, t0, c0);
  return st;
}
