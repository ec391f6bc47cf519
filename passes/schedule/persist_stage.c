/* fuser: which inputs a persistent schedule stages in shared memory
 * (persist=smem; passes/schedule/persistent.c climbs the ladder).  An
 * input is worth staging when more than one of the kernel's passes reads
 * it; the staged rows and the reductions' slots must fit the shared
 * memory a block may have (lib/analysis/persist_smem.c sizes both).
 * Where the staged rows leave room for one block an SM, the first chunks
 * of each thread's part may stay in registers instead (keep=), so that
 * two blocks fit. */
#include <string.h>

#include "internal.h"

/* Whether x reads v inside segment seg, not through a reduction's result
 * (a pass that reads a reduction's result does not read its operand). */
static bool reaches(const fu_op *seg, const fu_value *x, const fu_value *v, bool *seen) {
  if (x == v) return true;
  const fu_op *op = x->def;
  if (!op || op->parent != seg->u.segment.body || fu_op_has(op->kind, FU_OF_REDUCTION) || seen[x->id]) return false;
  seen[x->id] = true;
  for (uint32_t i = 0; i < op->n_operands; i++)
    if (reaches(seg, op->operands[i], v, seen)) return true;
  return false;
}

/* How many of the kernel's passes read input v: one per reduction whose
 * operand reads it (two for var/var_mean, whose mean and deviations take
 * a pass each over a row on chip), and the output pass when an output
 * reads it.  Reductions that share a pass count apart: a bound. */
static uint32_t passes_reading(const fu_op *seg, const fu_value *v, bool *seen, size_t n_seen) {
  uint32_t n = 0;
  const fu_segment_info *si = &seg->u.segment;
  for (const fu_op *op = si->body ? si->body->first : NULL; op; op = op->next) {
    if (!fu_op_has(op->kind, FU_OF_REDUCTION)) continue;
    memset(seen, 0, n_seen);
    if (reaches(seg, op->operands[0], v, seen)) n += op->kind == FU_OP_VAR || op->kind == FU_OP_VAR_MEAN ? 2 : 1;
  }
  for (uint32_t i = 0; i < si->n_outputs; i++) {
    memset(seen, 0, n_seen);
    if (reaches(seg, si->outputs[i], v, seen)) return n + 1;
  }
  return n;
}

/* Whether a reduction's operand in segment seg reads input v. */
static bool reduction_reads(const fu_op *seg, const fu_value *v, bool *seen, size_t n_seen) {
  const fu_block *body = seg->u.segment.body;
  for (const fu_op *op = body ? body->first : NULL; op; op = op->next) {
    if (!fu_op_has(op->kind, FU_OF_REDUCTION)) continue;
    memset(seen, 0, n_seen);
    if (reaches(seg, op->operands[0], v, seen)) return true;
  }
  return false;
}

/* The reductions of segment seg. */
static uint32_t n_reductions(const fu_op *seg) {
  uint32_t n = 0;
  const fu_block *body = seg->u.segment.body;
  for (const fu_op *op = body ? body->first : NULL; op; op = op->next) n += fu_op_has(op->kind, FU_OF_REDUCTION);
  return n;
}

fu_status fu_schedule_stage_plan(fu_fusion *f, const fu_op *seg, const fu_value *const *full, uint32_t n_full,
                                 int64_t rows, int64_t row, int64_t threads, const fu_device *dev, fu_stage_plan *out) {
  memset(out, 0, sizeof *out);
  out->slots = fu_persist_slot_bytes(n_reductions(seg), threads);
  out->limit = fu_persist_smem_limit(dev);
  out->rows = rows;
  out->row = row;
  size_t n_seen = f->next_value_id ? f->next_value_id : 1;
  bool *seen = fu_mem_calloc(&f->module->alloc, n_seen, sizeof *seen);
  if (!seen) return FU_ERR_NOMEM;
  for (uint32_t k = 0; k < n_full; k++) {
    const fu_value *v = full[k];
    if (passes_reading(seg, v, seen, n_seen * sizeof *seen) < 2) continue;
    int64_t b = fu_persist_stage_bytes(v->type.dtype, rows, row);
    if (out->bytes + b + out->slots <= out->limit && out->n_staged < FU_STAGE_MAX) {
      out->staged[out->n_staged++] = v;
      out->bytes += b;
    } else if (out->n_left < FU_STAGE_MAX) {
      out->left[out->n_left] = v;
      out->left_bytes[out->n_left++] = b;
    }
  }
  /* the tensor inputs left in global memory (weights, read through L1 by
   * every block), and the first that a reduction reads */
  for (uint32_t i = 0; i < seg->n_operands; i++) {
    const fu_value *v = seg->operands[i];
    bool staged = false;
    for (uint32_t k = 0; k < out->n_staged; k++) staged |= out->staged[k] == v;
    if (staged || !fu_type_is_tensor(&v->type)) continue;
    out->reads_unstaged = true;
    if (!out->reduced_unstaged && reduction_reads(seg, v, seen, n_seen * sizeof *seen)) out->reduced_unstaged = v;
  }
  fu_mem_free(&f->module->alloc, seen, n_seen * sizeof *seen);
  return FU_OK;
}

/* The segment's outputs of fewer elements than the row tensor x: one
 * value per row (a mean, an rstd). */
static int64_t row_outputs(const fu_op *seg, const fu_value *x) {
  int64_t n = 0, full = fu_type_numel(&x->type);
  for (uint32_t k = 0; k < seg->u.segment.n_outputs; k++) {
    int64_t e = fu_type_numel(&seg->u.segment.outputs[k]->type);
    n += full > 0 && e >= 0 && e < full;
  }
  return n;
}

/* The shared memory two blocks take on an SM: each its staged bytes, its
 * combine slots and the runtime's reserve. */
static int64_t two_blocks_smem(int64_t bytes, int64_t slots) {
  return 2 * (bytes + slots + FU_SMEM_RESERVED_PER_BLOCK);
}

/* With one block an SM a row's passes leave the SM idle through their
 * reductions and barriers; a second block covers them.  Each thread keeps
 * its first chunks in registers, in their 16-bit form (the lowering puts
 * them through `opaque` in the later passes, and moves fewer loads ahead),
 * in 3/8 of the registers two blocks leave it, and stages the rest.  512
 * threads where the row divides (256 otherwise): more warps to cover the
 * first pass's loads.  Only 16-bit rows: an f32 row's kept chunks take
 * twice the registers, and f32 softmax [2048, 40960], at 97% of copy
 * staged whole, ran 231.9 -> 243.0 us.  Measured on the H100 against the
 * whole row staged (docs/performance.md, "Kept chunks in their 16-bit
 * form"): bf16 layer norm [1024, 65536] 106.5 -> 99.3 us, [1536, 61440]
 * 155.9 -> 136.8, [512, 65536] 60.4 -> 53.6, residual add and layer norm
 * [2048, 32768] 191.1 -> 189.0, softmax 98.0 -> 97.8, RMS norm 97.0 ->
 * 97.5. */
bool fu_schedule_stage_keep(const fu_op *seg, const fu_device *dev, int64_t vecs, int64_t vw, fu_stage_plan *sp) {
  enum { MAX_CHUNKS = 64 };
  const int64_t per_sm = dev->smem_per_sm;
  /* Rows of which two blocks fit an SM stay whole, unless they leave less
   * than 1/8 of its shared memory to L1 and the segment reads a tensor it
   * does not stage there (a weight: layer norm over bf16 rows of 53248, two
   * blocks of 104 KiB, ran 90.3 us staged whole and 81.0 keeping 6 of 13
   * chunks, RMS norm 87.0 and 79.1, both 8-11% faster over rows of 51200
   * and 55296; softmax, which reads only its row, 4.5% slower at those) */
  int64_t two = two_blocks_smem(sp->bytes, sp->slots);
  if (sp->rows != 1 || !sp->n_staged || sp->n_left || two <= per_sm / 8 * 7 ||
      (two <= per_sm && !sp->reads_unstaged))
    return false;
  int64_t threads = vecs % 512 == 0 ? 512 : 256;
  if (vecs % threads != 0 || 2 * threads > (int64_t)dev->max_threads_per_sm) return false;
  int64_t chunks = vecs / threads;
  if (chunks < 2 || chunks > MAX_CHUNKS) return false;
  /* A first pass that loads a weight beside the row does not fit 64
   * registers with any chunk kept: over bf16 rows of 53248 to 65536 a
   * softmax of x times a weight spilled 4-12 bytes keeping 1 to 4 chunks,
   * an RMS norm of x times a weight 246-508 keeping 5 or 6; both staged
   * whole (one block an SM) spill none. */
  if (sp->reduced_unstaged) {
    sp->keep_refused = true;
    return false;
  }
  int64_t chunk_bytes = 0;
  for (uint32_t k = 0; k < sp->n_staged; k++) {
    size_t sz = fu_dtype_size(sp->staged[k]->type.dtype);
    if (sz != 2) return false;
    chunk_bytes += vw * (int64_t)sz;
  }
  int64_t regs = fu_persist_two_block_regs(dev, threads);
  /* 3/8 of them (4 bytes a register) hold the kept chunks and what else
   * lives through the passes, a 16-bit vector's worth each: per further
   * staged input one in flight, per per-row output (a layer norm's mean
   * and rstd) one, and per online softmax pair the f32 vector its first
   * pass collects before it folds.  ptxas runs these kernels at the 64
   * registers' edge: without the outputs' and the pairs' shares a layer
   * norm with its mean and rstd and softmax over rows of 61440 spilled 4
   * bytes (0 with them, over rows of 30720 to 98304) */
  int64_t held = (int64_t)(sp->n_staged - 1 + row_outputs(seg, sp->staged[0])) * vw * 2 +
                 (int64_t)fu_online_softmax_pairs(seg) * vw * 4;
  int64_t keep = (regs * 3 / 8 * 4 - held) / chunk_bytes;
  if (keep >= chunks) keep = chunks - 1;
  if (keep < 1) return false;
  int64_t bytes = 0, slots = fu_persist_slot_bytes(n_reductions(seg), threads);
  for (uint32_t k = 0; k < sp->n_staged; k++)
    bytes += fu_persist_stage_bytes(sp->staged[k]->type.dtype, 1, sp->row - keep * threads * vw);
  /* two blocks in 7/8 of the SM's shared memory: the rest stays L1 (3
   * chunks kept of 16 over rows of 65536, 2 x 105 KiB, ran 104.4 us where
   * 4 ran 100.2) */
  if (two_blocks_smem(bytes, slots) > per_sm / 8 * 7 || bytes + slots > sp->limit) return false;
  sp->keep = keep;
  sp->threads = threads;
  sp->chunks = chunks;
  sp->bytes = bytes;
  sp->slots = slots;
  return true;
}
