/* fuser backend: the backend context, LLVM diagnostics, target machines. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <llvm-c/Target.h>

#include "internal.h"

#ifndef FUSER_LIBDEVICE_PATH
#define FUSER_LIBDEVICE_PATH "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"
#endif

static const char *const nvptx_triple = "nvptx64-nvidia-cuda";

/* The default optimization pipeline: LLVM 19's default<O3> for this target
 * (`opt -mtriple=nvptx64-nvidia-cuda -passes='default<O3>'
 * -print-pipeline-passes`), written out in the same order, without the
 * passes that cannot change a fuser module, which holds kernels and internal
 * libdevice copies only (no coroutines, OpenMP, indirect calls, libcalls,
 * available_externally globals or profile data): annotation2metadata,
 * forceattrs, inferattrs, coro-*, openmp-opt*, called-value-propagation,
 * argpromotion, globals-aa, libcalls-shrinkwrap, tailcallelim,
 * move-auto-init, chr, lower-constant-intrinsics, loop-distribute,
 * inject-tli-mappings, transform-warning, loop-sink, elim-avail-extern,
 * cg-profile, rel-lookup-table-converter and annotation-remarks; also
 * nvvm-reflect (the libdevice copier answers __nvvm_reflect) and
 * loop-vectorize (NVPTX has no vector registers and interleaves nothing, so
 * it only runs its cost model).  The function simplification pipeline is
 * LLVM's own `function-simplification<O3>`, so that its loop passes keep
 * their O3 thresholds (the textual loop-unroll-full has O2's).  It gives
 * byte-identical PTX to default<O3> on the seeds, the lit/backend kernels
 * and the kernels of test/gpu (test_backend checks a few) for 5-6% less
 * optimization time; the rest of O3's time goes to passes that do change
 * the code (docs/performance.md, "Compile time"). */
#define BK_SIMPLIFYCFG(x) "simplifycfg<bonus-inst-threshold=1;" x ";speculate-blocks;simplify-cond-branch"
#define BK_INSTCOMBINE "instcombine<max-iterations=1;no-use-loop-info;no-verify-fixpoint>"
static const char *const default_pipeline =
    "function(nvvm-intr-range),"
    /* each function alone, libdevice copies before they are inlined */
    "function<eager-inv>(lower-expect,"
    BK_SIMPLIFYCFG("no-forward-switch-cond;no-switch-range-to-icmp;no-switch-to-lookup;keep-loops;"
                   "no-hoist-common-insts;no-sink-common-insts") ";no-speculate-unpredictables>,"
    "sroa<modify-cfg>,early-cse<>,callsite-splitting),"
    "ipsccp,globalopt,"
    "function<eager-inv>(mem2reg," BK_INSTCOMBINE ","
    BK_SIMPLIFYCFG("no-forward-switch-cond;switch-range-to-icmp;no-switch-to-lookup;keep-loops;"
                   "no-hoist-common-insts;no-sink-common-insts") ";no-speculate-unpredictables>),"
    /* inline, then simplify the kernels */
    "always-inline,"
    "cgscc(devirt<4>(inline,function-attrs<skip-non-recursive-function-attrs>,"
    "function<eager-inv;no-rerun>(function-simplification<O3>),function-attrs)),"
    "deadargelim,globalopt,globaldce,rpo-function-attrs,"
    /* O3's module optimization pipeline, per function */
    "function<eager-inv>(float2int,loop(loop-rotate<header-duplication;no-prepare-for-lto>,loop-deletion),"
    "infer-alignment,loop-load-elim," BK_INSTCOMBINE ","
    BK_SIMPLIFYCFG("forward-switch-cond;switch-range-to-icmp;switch-to-lookup;no-keep-loops;"
                   "hoist-common-insts;sink-common-insts") ";no-speculate-unpredictables>,"
    "slp-vectorizer,vector-combine," BK_INSTCOMBINE ",loop-unroll<O3>,sroa<preserve-cfg>,infer-alignment,"
    BK_INSTCOMBINE ",loop-mssa(licm<allowspeculation>),alignment-from-assumptions,instsimplify,div-rem-pairs,"
    BK_SIMPLIFYCFG("no-forward-switch-cond;switch-range-to-icmp;no-switch-to-lookup;keep-loops;"
                   "no-hoist-common-insts;no-sink-common-insts") ";speculate-unpredictables>),"
    "globaldce,constmerge";

double bk_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

double bk_cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

void bk_error(fu_backend *be, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fu_diag_vreport(be->diag, FU_SEV_ERROR, fu_loc_none(), fmt, ap);
  va_end(ap);
}

/* LLVM would print its diagnostics to stderr; they go to fuser's engine
 * instead, and an error marks the current emit call as failed. */
static void llvm_diag_handler(LLVMDiagnosticInfoRef di, void *user) {
  fu_backend *be = user;
  LLVMDiagnosticSeverity sev = LLVMGetDiagInfoSeverity(di);
  if (sev == LLVMDSRemark || sev == LLVMDSNote) return;
  char *msg = LLVMGetDiagInfoDescription(di);
  if (sev == LLVMDSError) {
    be->llvm_error = true;
    fu_error(be->diag, fu_loc_none(), "LLVM: %s", msg ? msg : "(no message)");
  } else {
    fu_warning(be->diag, fu_loc_none(), "LLVM: %s", msg ? msg : "(no message)");
  }
  LLVMDisposeMessage(msg);
}

static char *dup_str(const fu_allocator *a, const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *d = fu_mem_alloc(a, n);
  if (d) memcpy(d, s, n);
  return d;
}

static void free_str(const fu_allocator *a, char *s) {
  if (s) fu_mem_free(a, s, strlen(s) + 1);
}

/* The CPUs LLVM 19's NVPTX target knows.  Checked here because LLVM only
 * prints a warning (to stderr) for an unknown one. */
static const char *const known_sms[] = {"sm_60", "sm_61", "sm_62", "sm_70", "sm_72", "sm_75", "sm_80",
                                        "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a"};

bool fu_backend_sm_supported(const char *sm) {
  if (!sm) return false;
  for (size_t i = 0; i < sizeof known_sms / sizeof known_sms[0]; i++)
    if (strcmp(sm, known_sms[i]) == 0) return true;
  return false;
}

int bk_sm_number(const char *sm) {
  if (!fu_backend_sm_supported(sm)) return 0;
  return atoi(sm + 3);
}

fu_status fu_backend_new(const fu_backend_options *opts, fu_allocator alloc, fu_diag_engine *diag,
                         fu_backend **out) {
  if (!diag || !out) return FU_ERR_INVALID_ARG;
  *out = NULL;
  fu_backend_options defaults;
  memset(&defaults, 0, sizeof defaults);
  if (!opts) opts = &defaults;
  const char *sm = opts->default_sm ? opts->default_sm : "sm_90";
  if (!fu_backend_sm_supported(sm)) {
    fu_error(diag, fu_loc_none(), "unknown GPU architecture '%s' (expected sm_70 ... sm_90, sm_90a)", sm);
    return FU_ERR_INVALID_ARG;
  }
  fu_backend *be = fu_mem_calloc(&alloc, 1, sizeof *be);
  if (!be) return FU_ERR_NOMEM;
  be->alloc = alloc;
  be->diag = diag;
  const char *ld = opts->libdevice_path;
  if (!ld) ld = getenv("FUSER_LIBDEVICE");
  if (!ld || !*ld) ld = FUSER_LIBDEVICE_PATH;
  be->libdevice_path = dup_str(&alloc, ld);
  be->pipeline = dup_str(&alloc, opts->pipeline ? opts->pipeline : default_pipeline);
  be->default_sm = dup_str(&alloc, sm);
  be->features = dup_str(&alloc, opts->features ? opts->features : "");
  be->llvm_before_opt = opts->llvm_before_opt;
  be->max_self_unroll = opts->max_self_unroll ? opts->max_self_unroll : 1024;
  be->libdevice_whole = opts->libdevice_whole;
  if (!be->libdevice_path || !be->pipeline || !be->default_sm || !be->features) {
    fu_backend_free(be);
    return FU_ERR_NOMEM;
  }
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
  be->ctx = LLVMContextCreate();
  LLVMContextSetDiagnosticHandler(be->ctx, llvm_diag_handler, be);
  *out = be;
  return FU_OK;
}

void fu_backend_free(fu_backend *be) {
  if (!be) return;
  for (unsigned i = 0; i < be->n_tms; i++) LLVMDisposeTargetMachine(be->tms[i].tm);
  if (be->libdevice_reader) LLVMDisposePassManager(be->libdevice_reader);
  if (be->libdevice) LLVMDisposeModule(be->libdevice);
  if (be->ctx) LLVMContextDispose(be->ctx);
  free_str(&be->alloc, be->libdevice_path);
  free_str(&be->alloc, be->pipeline);
  free_str(&be->alloc, be->default_sm);
  free_str(&be->alloc, be->features);
  fu_allocator a = be->alloc;
  fu_mem_free(&a, be, sizeof *be);
}

/* Target machines cost a few hundred microseconds to make; one per sm is
 * kept for the context's life. */
LLVMTargetMachineRef bk_target_machine(fu_backend *be, const char *sm) {
  if (!fu_backend_sm_supported(sm)) {
    bk_error(be, "unknown GPU architecture '%s' (expected sm_70 ... sm_90, sm_90a)", sm ? sm : "(null)");
    return NULL;
  }
  for (unsigned i = 0; i < be->n_tms; i++)
    if (strcmp(be->tms[i].sm, sm) == 0) return be->tms[i].tm;
  if (be->n_tms == BK_MAX_TMS) {
    bk_error(be, "too many target machines");
    return NULL;
  }
  LLVMTargetRef target = NULL;
  char *err = NULL;
  if (LLVMGetTargetFromTriple(nvptx_triple, &target, &err)) {
    bk_error(be, "LLVM has no NVPTX target: %s", err ? err : "");
    LLVMDisposeMessage(err);
    return NULL;
  }
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, nvptx_triple, sm, be->features,
                                                    LLVMCodeGenLevelAggressive, LLVMRelocDefault,
                                                    LLVMCodeModelDefault);
  if (!tm) {
    bk_error(be, "could not create an NVPTX target machine for %s", sm);
    return NULL;
  }
  snprintf(be->tms[be->n_tms].sm, sizeof be->tms[0].sm, "%s", sm);
  be->tms[be->n_tms++].tm = tm;
  return tm;
}

const char *fu_backend_libdevice_path(const fu_backend *be) { return be->libdevice_path; }

void fu_backend_last_timing(const fu_backend *be, fu_backend_timing *out) { *out = be->timing; }
