/* fuser: a kernel IR interpreter, and a host-side runner for lowered
 * fusions built on it.
 *
 * fu_kir_run executes one kernel over host memory for a given grid, block
 * after block (a kernel with `cluster=` a cluster's blocks together, each
 * with its own shared arrays, so `sync cluster` and reads of another
 * block's shared memory behave as on sm_90), with the CPU interpreter's
 * arithmetic (lib/interp), so a
 * lowered kernel can be checked against the fusion interpreter with no
 * GPU.  The threads of a block run in lockstep (lib/interp/kir_exec.c):
 * barriers and warp shuffles behave as on the GPU, and a barrier reached by
 * only some threads, a shuffle reached by only part of a warp, a thread
 * finishing while others wait at a barrier, and a shared-memory race
 * between two barriers (a write and another thread's access of the same
 * element) are errors.  Every load and store is bounds-checked, vector
 * accesses must be aligned to their width, and stores can be counted per
 * element (each output element written exactly once).
 *
 * fu_kir_run_fusion runs a whole lowered fusion the way the runtime will:
 * inputs bound, host ops applied as views (strides from
 * fuser/view_layout.h), each segment's kernel launched on buffers in the
 * layouts the compiler assumed, and the outputs copied out contiguous, as
 * fu_interp_run returns them. */
#ifndef FUSER_KIR_INTERP_H
#define FUSER_KIR_INTERP_H

#include <stdint.h>

#include "fuser/interp.h"
#include "fuser/kir.h"

/* What a parameter is bound to: a tensor parameter's memory (`data`, of
 * `n_elems` elements of the parameter's dtype; `writes`, when not NULL,
 * counts the stores to each element), or a scalar parameter's value (in
 * `scalar.f` for float dtypes, `.i` for ints, `.b` for bool). */
typedef struct fu_kir_arg {
  void *data;
  int64_t n_elems;
  uint32_t *writes;
  fu_scalar_value scalar;
} fu_kir_arg;

typedef struct fu_kir_stats {
  uint64_t instructions; /* executed */
  uint64_t loads, stores; /* memory instructions (a vector access counts once) */
  uint64_t vector_loads, vector_stores;
} fu_kir_stats;

/* Runs kernel k with args[i] bound to k->params[i] over grid[0..3) blocks of
 * k->block threads.  Errors (out-of-bounds or misaligned access, integer
 * division by zero, an unsupported instruction) are reported naming the
 * kernel, instruction, block and thread.  `stats` may be NULL. */
fu_status fu_kir_run(const fu_kernel *k, const fu_kir_arg *args, const int64_t grid[3], fu_allocator alloc,
                     fu_diag_engine *diag, fu_kir_stats *stats);

/* Runs lowered fusion f on `inputs` (as fu_interp_run takes them): every
 * segment must have a kernel.  Outputs as fu_interp_run returns them.
 * Each segment output element must be written exactly once, which is
 * checked.  `stats` (may be NULL) accumulates over all kernels. */
/* A matmul segment's plan (fuser/gemm.h) on host tensors, as cuBLASLt
 * computes it: D = act(alpha * A B + bias), one rounding to D's dtype.
 * `d` has the product's shape (lib/interp/gemm_exec.c). */
fu_status fu_interp_gemm_run(const fu_op *seg, const fu_host_tensor *a, const fu_host_tensor *b,
                             const fu_host_tensor *bias, fu_host_tensor *d, fu_allocator alloc);

fu_status fu_kir_run_fusion(fu_fusion *f, const fu_arg *inputs, uint32_t n_inputs, fu_allocator alloc,
                            fu_diag_engine *diag, fu_arg **outputs, uint32_t *n_outputs, fu_kir_stats *stats);

#endif
