/* fuser: the LLVM backend: kernel IR -> LLVM IR -> PTX (NVPTX).
 *
 * A backend context owns one LLVMContext, the target machines it created
 * (one per sm), and libdevice, opened lazily on first use and kept for the
 * context's life (a function's body is read from the bitcode the first
 * time a kernel calls it, and stays).  Each emit call builds a fresh module
 * from the kernels, copies in only the libdevice functions the kernels
 * call, marks every non-kernel function internal, runs the optimization
 * pipeline (which inlines and drops them) and prints LLVM IR or PTX.
 *
 * A context is used by one thread at a time (it owns an LLVMContext);
 * threads that compile concurrently each make their own.
 *
 * Errors (a kernel that fails verification, LLVM verifier failures, a
 * missing libdevice, an unknown sm) are reported to the diagnostics engine
 * given to fu_backend_new and returned as a status; nothing aborts.
 *
 * Kernel ABI (what the runtime passes, in k->params order): a tensor
 * parameter is a 64-bit global pointer; a scalar parameter is its dtype's
 * size (bool: one byte 0/1, f16/bf16: two bytes).  The block size is
 * k->block, the grid is k->grid evaluated on the host, and k->smem_bytes of
 * dynamic shared memory, which the kernel's `dynamic` shared arrays index
 * (the others are static). */
#ifndef FUSER_BACKEND_H
#define FUSER_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "fuser/alloc.h"
#include "fuser/diag.h"
#include "fuser/kir.h"
#include "fuser/status.h"
#include "fuser/strbuf.h"

typedef struct fu_backend fu_backend;

typedef struct fu_backend_options {
  /* libdevice.10.bc; NULL: $FUSER_LIBDEVICE, else the path found at
   * configure time (FUSER_LIBDEVICE_PATH), read through the build's
   * subset of it (the functions the math lowering calls, extracted at
   * build time) when the build made one; a function the subset lacks makes
   * the backend warn and read the whole file. */
  const char *libdevice_path;
  /* The new-pass-manager pipeline; NULL: fuser's default, a short pipeline
   * made for fuser's kernels (lib/target/llvm/context.c says what it runs and
   * why); "default<O3>" gives LLVM's standard one. */
  const char *pipeline;
  /* The sm used by fu_backend_emit_llvm (NULL: FU_DEFAULT_ARCH, fuser/target.h). */
  const char *default_sm;
  /* Extra target features such as "+ptx80"; NULL: the sm's default PTX
   * version. */
  const char *features;
  /* fu_backend_emit_llvm prints the module before optimization (libdevice
   * functions are then still separate internal functions). */
  bool llvm_before_opt;
  /* Fully unroll FOR loops of kind `unroll` with a constant trip count up
   * to this many iterations in the backend (0: 1024); longer ones get
   * llvm.loop unroll metadata instead. */
  uint32_t max_self_unroll;
  /* Parse all of libdevice when it is first needed (the behaviour before
   * lazy loading: 30-55 ms) instead of reading only the functions kernels
   * call; for tests and measurements. */
  bool libdevice_whole;
  /* --disable=fast_paths: ops computed with an instruction or an NVVM
   * intrinsic where libdevice has the function (sqrt, abs) call libdevice's
   * instead, to tell the two apart when results differ. */
  bool no_fast_paths;
  /* --enable=tid_range: a return range attribute [0, block extent) on
   * each thread index read (lib/target/llvm/codegen.c). */
  bool tid_range;
} fu_backend_options;

/* Where the time of the last emit call went, in milliseconds. */
typedef struct fu_backend_timing {
  double libdevice_load_ms; /* reading libdevice in this call: opening it (first use in the
                             * context) and the bodies of functions read for the first time */
  double build_ms;          /* kernel IR -> LLVM IR, libdevice copies, verifier */
  double opt_ms;            /* the optimization pipeline */
  double codegen_ms;        /* NVPTX code generation (PTX only) */
  double total_ms;
  double cpu_ms;            /* CPU time of this thread for the call, libdevice load excluded */
} fu_backend_timing;

/* opts may be NULL (defaults).  Initializes LLVM's NVPTX target. */
fu_status fu_backend_new(const fu_backend_options *opts, fu_allocator alloc, fu_diag_engine *diag,
                         fu_backend **out);
void fu_backend_free(fu_backend *be);

/* Every kernel is verified (fu_kernel_verify) first.  The kernels of one
 * call go into one module: one PTX file with one .entry each. */
fu_status fu_backend_emit_llvm(fu_backend *be, const fu_kernel *const *kernels, uint32_t n, fu_strbuf *out);
/* `sm` is an LLVM NVPTX CPU name: sm_70 ... sm_90, sm_90a. */
fu_status fu_backend_emit_ptx(fu_backend *be, const fu_kernel *const *kernels, uint32_t n, const char *sm,
                              fu_strbuf *out);

/* Opens libdevice now (it is otherwise opened by the first emit that needs
 * a libdevice function), so that its cost can be measured apart.  Function
 * bodies are still read on first use (all of them with libdevice_whole). */
fu_status fu_backend_load_libdevice(fu_backend *be);
/* The path libdevice is (or would be) loaded from. */
const char *fu_backend_libdevice_path(const fu_backend *be);
bool fu_backend_sm_supported(const char *sm);
void fu_backend_last_timing(const fu_backend *be, fu_backend_timing *out);

#endif
