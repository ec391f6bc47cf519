/* fuser: which inputs a persistent schedule stages in shared memory
 * (persist=smem; passes/schedule/persistent.c climbs the ladder).  An
 * input is worth staging when more than one of the kernel's passes reads
 * it; the staged rows and the reductions' slots must fit the shared
 * memory a block may have (lib/analysis/persist_smem.c sizes both). */
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

fu_status fu_schedule_stage_plan(fu_fusion *f, const fu_op *seg, const fu_value *const *full, uint32_t n_full,
                                 int64_t rows, int64_t row, int64_t threads, const fu_device *dev, fu_stage_plan *out) {
  memset(out, 0, sizeof *out);
  uint32_t n_red = 0;
  const fu_block *body = seg->u.segment.body;
  for (const fu_op *op = body ? body->first : NULL; op; op = op->next) n_red += fu_op_has(op->kind, FU_OF_REDUCTION);
  out->slots = fu_persist_slot_bytes(n_red, threads);
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
