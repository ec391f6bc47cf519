/* fuser kernel IR: which values a kernel computes from data.
 *
 * The backends' fast f32 division (lib/target/llvm/fast_math.c) replaces
 * a/b by a sequence around the hardware's reciprocal, which no compiler
 * folds.  A divisor computed from indices and constants only (Welford's
 * 1 / count over an unrolled loop) folds to a constant once the loops
 * unroll, and is better left an IEEE division; a divisor computed from
 * data (softmax's row sum) never folds, and is where the fast path pays.
 * Both backends ask this analysis, so they take the same path for every
 * division and their outputs stay bit-identical. */
#include "fuser/kir.h"

/* Marks the results of the instructions of `blk` (and their nested
 * bodies): loads, shuffles, mutable reads and atomics give data; math
 * gives data when an operand is data; constants, special registers, loop
 * variables and alignment tests do not. */
static void mark_block(const fu_kblock *blk, bool *data, uint32_t n) {
  for (const fu_kinst *in = blk->first; in; in = in->next) {
    bool d = false;
    switch (in->kind) {
    case FU_KI_LOAD:
    case FU_KI_SHFL_XOR:
    case FU_KI_READ:
    case FU_KI_ATOM_ADD: d = true; break;
    case FU_KI_MATH:
      for (uint32_t i = 0; i < in->n_args; i++) d |= in->args[i]->id < n && data[in->args[i]->id];
      break;
    case FU_KI_FOR: mark_block(&in->u.loop.body, data, n); break;
    case FU_KI_IF:
      mark_block(&in->u.branch.then_body, data, n);
      mark_block(&in->u.branch.else_body, data, n);
      break;
    default: break;
    }
    if (in->kind == FU_KI_FOR) continue; /* its result is the loop variable */
    for (uint32_t r = 0; r < in->n_results; r++)
      if (in->results[r]->id < n) data[in->results[r]->id] = d;
  }
}

fu_status fu_kernel_data_values(const fu_kernel *k, fu_allocator al, bool **out) {
  *out = NULL;
  uint32_t n = k->next_kval_id ? k->next_kval_id : 1;
  bool *data = fu_mem_calloc(&al, n, sizeof *data);
  if (!data) return FU_ERR_NOMEM;
  /* a scalar fusion input is data; extents and strides are indices */
  for (uint32_t i = 0; i < k->n_params; i++) {
    const fu_kval *p = k->params[i];
    if (p->kind == FU_KV_SCALAR_PARAM && p->role == FU_KP_SCALAR_INPUT && p->id < n) data[p->id] = true;
  }
  mark_block(&k->body, data, n);
  *out = data;
  return FU_OK;
}
