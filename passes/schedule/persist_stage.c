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
  fu_mem_free(&f->module->alloc, seen, n_seen * sizeof *seen);
  return FU_OK;
}

/* With one block an SM a row's passes leave the SM idle through their
 * reductions and barriers; a second block covers them.  Measured on the
 * H100 against the whole row staged (docs/performance.md, "keep="), it
 * helps some rows and costs others, by ptxas's register allocation more
 * than by rule, so it is off unless --enable=smem_keep: bf16 layer norm
 * [1024, 65536] 106.0 -> 102.7-104.0 us, [512, 65536] 60.4 -> 55.4, the
 * residual add and layer norm of [2048, 32768] 190.2 -> 187.0, RMS norm
 * equal, softmax 97.7 -> 98.7, f32 softmax [2048, 40960] 231.5 -> 243.0,
 * and layer norm [1536, 61440] 156 -> 347 (648 bytes spilled). */
bool fu_schedule_stage_keep(const fu_op *seg, const fu_device *dev, int64_t vecs, int64_t vw, fu_stage_plan *sp) {
  enum { KEEP_THREADS = 256, MAX_CHUNKS = 64 };
  const int64_t per_sm = dev->smem_per_sm;
  if (sp->rows != 1 || !sp->n_staged || sp->n_left || 2 * (sp->bytes + sp->slots + FU_SMEM_RESERVED_PER_BLOCK) <= per_sm)
    return false;
  int64_t threads = KEEP_THREADS;
  if (vecs % threads != 0 || 2 * threads > (int64_t)dev->max_threads_per_sm) return false;
  int64_t chunks = vecs / threads;
  if (chunks < 2 || chunks > MAX_CHUNKS) return false;
  /* a kept element lives in its compute dtype (f32 for f16 and bf16) */
  int64_t chunk_bytes = 0;
  for (uint32_t k = 0; k < sp->n_staged; k++) {
    size_t sz = fu_dtype_size(sp->staged[k]->type.dtype);
    chunk_bytes += vw * (int64_t)(sz < 4 ? 4 : sz);
  }
  int64_t regs = (int64_t)dev->regs_per_sm / (2 * threads); /* a thread's, two blocks resident */
  int64_t keep = regs / 2 * 4 / chunk_bytes;
  if (keep >= chunks) keep = chunks - 1;
  if (keep < 1) return false;
  int64_t bytes = 0, slots = fu_persist_slot_bytes(n_reductions(seg), threads);
  for (uint32_t k = 0; k < sp->n_staged; k++)
    bytes += fu_persist_stage_bytes(sp->staged[k]->type.dtype, 1, sp->row - keep * threads * vw);
  if (2 * (bytes + slots + FU_SMEM_RESERVED_PER_BLOCK) > per_sm || bytes + slots > sp->limit) return false;
  sp->keep = keep;
  sp->threads = threads;
  sp->chunks = chunks;
  sp->bytes = bytes;
  sp->slots = slots;
  return true;
}
