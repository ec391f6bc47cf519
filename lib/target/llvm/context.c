/* fuser backend: the backend context, LLVM diagnostics, target machines. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <llvm-c/Support.h>
#include <llvm-c/Target.h>

#include "fuser/device.h"
#include "fuser/target.h"
#include "internal.h"

#ifndef FUSER_LIBDEVICE_PATH
#define FUSER_LIBDEVICE_PATH "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"
#endif

static const char *const nvptx_triple = "nvptx64-nvidia-cuda";

/* The default optimization pipeline, made for what fuser's kernels are:
 * straight-line bodies of pointwise math (already folded and CSE'd by the
 * canonicalize pass), index arithmetic, a guarded tail, at most a
 * grid-stride and a tail loop, and libdevice copies that are all
 * always-inline.  In order:
 *   - on each function alone, before inlining (as default<O3> starts):
 *     nvvm-intr-range (ranges on tid/ctaid, so index math narrows), and
 *     simplifycfg, sroa, early-cse, which fold the libdevice copies'
 *     answered __nvvm_reflect branches and give each math function the
 *     shape O3 gives it (erf keeps its two polynomial paths as branches,
 *     tanh becomes selects; both measured on an H100, docs/performance.md);
 *   - always-inline: the libdevice copies and fuser's own helpers;
 *   - instcombine, simplifycfg: the per-lane and index clean-up;
 *   - licm: what the grid-stride loop need not recompute;
 *   - loop-unroll, full unrolling only: the `unroll` loops the backend
 *     leaves to LLVM (llvm.loop.unroll.full) and constant short loops;
 *     fuser's schedules decide unrolling, so no partial or runtime
 *     unrolling of the grid-stride and tail loops;
 *   - early-cse with MemorySSA, instcombine, simplifycfg: the rest.
 * LLVM's default<O3> (`fuser-kir --pipeline='default<O3>'`) runs about 90
 * passes for the same kernels: on the 33 kernels of test/gpu, the seeds and
 * a bias-GELU in f16, the sm_90 code ptxas makes from its PTX is 10% larger
 * in total (21 kernels larger, one 3% smaller), and compiling
 * seed000_gelu_bwd_bias's kernel takes 66% more instructions; on an H100
 * the kernels of five fusions run as fast or faster with this pipeline
 * (docs/performance.md, "Compile time"). */
#define BK_INSTCOMBINE "instcombine<max-iterations=1;no-verify-fixpoint>"
static const char *const default_pipeline =
    "function(nvvm-intr-range,simplifycfg,sroa,early-cse<>),always-inline,"
    "function(" BK_INSTCOMBINE ",simplifycfg,loop-mssa(licm<allowspeculation>),"
    "loop-unroll<O3;no-partial;no-runtime;no-upperbound;no-peeling>,early-cse<memssa>," BK_INSTCOMBINE ","
    "simplifycfg),"
    "globaldce";

/* LLVM's code generation without loop strength reduction
 * (-disable-lsr): ptxas reduces the loops' address arithmetic itself.  On
 * the H100 the 15 of 49 benchmark kernels whose PTX it changed ran as fast
 * or faster (a small NHWC batch norm in f32 26.3 -> 25.4 us, layer-norm
 * backward 0.2% slower), and compiling seed000_gelu_bwd_bias took 22%
 * fewer instructions, seed002 14% (docs/performance.md, "Compile time").
 * LLVM's options are global and parsed once a process (a second parse of
 * the same option is an error). */
static pthread_once_t codegen_options_once = PTHREAD_ONCE_INIT;
static void set_codegen_options(void) {
  const char *argv[] = {"fuser", "-disable-lsr"};
  LLVMParseCommandLineOptions(2, argv, NULL);
}

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
  return fu_backend_sm_supported(sm) ? (int)fu_arch_sm(sm) : 0;
}

fu_status fu_backend_new(const fu_backend_options *opts, fu_allocator alloc, fu_diag_engine *diag,
                         fu_backend **out) {
  if (!diag || !out) return FU_ERR_INVALID_ARG;
  *out = NULL;
  fu_backend_options defaults;
  memset(&defaults, 0, sizeof defaults);
  if (!opts) opts = &defaults;
  const char *sm = opts->default_sm ? opts->default_sm : FU_DEFAULT_ARCH;
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
  if (!ld || !*ld) {
    ld = FUSER_LIBDEVICE_PATH;
#ifdef FUSER_LIBDEVICE_SUBSET_PATH
    /* The configured libdevice, read through the build's subset of it. */
    if (!opts->libdevice_whole && access(FUSER_LIBDEVICE_SUBSET_PATH, R_OK) == 0) {
      be->libdevice_full_path = dup_str(&alloc, ld);
      ld = FUSER_LIBDEVICE_SUBSET_PATH;
      if (!be->libdevice_full_path) ld = NULL;
    }
#endif
  }
  be->libdevice_path = dup_str(&alloc, ld);
  be->pipeline = dup_str(&alloc, opts->pipeline ? opts->pipeline : default_pipeline);
  be->default_sm = dup_str(&alloc, sm);
  be->features = dup_str(&alloc, opts->features ? opts->features : "");
  be->llvm_before_opt = opts->llvm_before_opt;
  be->max_self_unroll = opts->max_self_unroll ? opts->max_self_unroll : 1024;
  be->libdevice_whole = opts->libdevice_whole;
  be->no_fast_paths = opts->no_fast_paths;
  be->tid_range = opts->tid_range;
  if (!be->libdevice_path || !be->pipeline || !be->default_sm || !be->features) {
    fu_backend_free(be);
    return FU_ERR_NOMEM;
  }
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
  pthread_once(&codegen_options_once, set_codegen_options);
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
  free_str(&be->alloc, be->libdevice_full_path);
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
  /* Code generation at LLVM's default level, not Aggressive: NVPTX then
   * cleans up after LSR with early-cse instead of GVN; ptxas makes as many
   * sm_90 instructions in total from either PTX over the kernels above,
   * for less compile time.  None
   * (-O0) would save a third of the compile time, but ptxas does not
   * recover everything it skips: a bias-GELU in f16 ran 10% slower. */
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, nvptx_triple, sm, be->features,
                                                    LLVMCodeGenLevelDefault, LLVMRelocDefault,
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
