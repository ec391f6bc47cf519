/* fuser: what a persistent schedule's blocks take of an SM: the shared
 * memory of a persist=smem schedule (docs/ir.md, `persist=`), the blocks
 * the register file holds, and the full-size tensors the row caches.  The
 * scheduler sizes its choice with these, the verifier checks a schedule
 * against the device with them, and the lowering lays the staged rows out
 * and asks ptxas for blocks by them, so the three agree on what a block
 * takes. */
#include <string.h>

#include "fuser/schedule.h"

int64_t fu_persist_stage_stride(int64_t row) { return (row + 15) / 16 * 16; }

int64_t fu_persist_stage_bytes(fu_dtype dtype, int64_t rows, int64_t row) {
  int64_t b = rows * fu_persist_stage_stride(row) * (int64_t)fu_dtype_size(dtype);
  return (b + 15) / 16 * 16;
}

int64_t fu_persist_slot_bytes(uint32_t n_reductions, int64_t threads) {
  /* per reduction at most three slot arrays (a Welford state's parts, or
   * the two passes of a var over a row on chip), eight bytes a slot (f64),
   * one slot per warp of the block */
  return (int64_t)n_reductions * 3 * 8 * ((threads + 31) / 32);
}

bool fu_persist_device(const fu_schedule *s, fu_device *out) {
  return fu_device_preset(s->device, out) || fu_device_preset(s->arch, out);
}

uint32_t fu_persist_row_loop_blocks(const fu_device *dev, int64_t threads) {
  enum { MAX_BLOCKS = 2, MIN_REGS = 64 };
  if (threads < 1) return 1;
  int64_t b = MAX_BLOCKS;
  if ((int64_t)dev->regs_per_sm / (MIN_REGS * threads) < b) b = (int64_t)dev->regs_per_sm / (MIN_REGS * threads);
  if ((int64_t)dev->max_threads_per_sm / threads < b) b = (int64_t)dev->max_threads_per_sm / threads;
  return b < 1 ? 1 : (uint32_t)b;
}

/* Whether a has the elements of b: the same shape, or with `views`, as
 * many constant elements (a view of it: group norm's [N, C, H, W] input and
 * output beside the [N, G, C/G, H, W] reference; only where a row has more
 * than one element, else the per-row values count as many). */
static bool same_elems(const fu_value *a, const fu_value *b, bool views) {
  bool same = fu_type_same_shape(&a->type, &b->type);
  if (same || !views) return same;
  int64_t na = 1, nb = 1;
  for (int32_t d = 0; d < a->type.rank; d++) {
    if (a->type.dims[d].sym) return false;
    na *= a->type.dims[d].value;
  }
  for (int32_t d = 0; d < b->type.rank; d++) {
    if (b->type.dims[d].sym) return false;
    nb *= b->type.dims[d].value;
  }
  return na == nb;
}

void fu_persist_full_size(const fu_op *seg, const fu_value *ref, bool views, size_t *widest, size_t *cached,
                          const fu_value **inputs, uint32_t *n_inputs) {
  *widest = 0;
  *cached = 0;
  *n_inputs = 0;
  bool any_bool = false;
  const fu_segment_info *si = &seg->u.segment;
  for (uint32_t pass = 0; pass < 2; pass++)
    for (uint32_t k = 0; k < (pass ? si->n_outputs : seg->n_operands); k++) {
      const fu_value *v = pass ? si->outputs[k] : seg->operands[k];
      if (!fu_type_is_tensor(&v->type) || !same_elems(v, ref, views)) continue;
      size_t sz = fu_dtype_size(v->type.dtype);
      any_bool |= v->type.dtype == FU_DT_BOOL;
      if (sz > *widest) *widest = sz;
      /* a cached element lives in registers in its compute dtype (f16 and
       * bf16 in f32: the conversion of a cached vector is computed once
       * and kept, by common subexpression elimination) */
      if (!pass) *cached += sz < 4 ? 4 : sz;
      if (!pass && *n_inputs < FU_STAGE_MAX) inputs[(*n_inputs)++] = v;
    }
  if (any_bool) *widest = 0;
  if (!*cached) *cached = 4;
}

int64_t fu_persist_two_block_regs(const fu_device *dev, int64_t threads) {
  return threads < 1 ? 0 : (int64_t)dev->regs_per_sm / (2 * threads);
}

uint32_t fu_persist_register_blocks(const fu_device *dev, int64_t threads, int64_t cached_bytes) {
  if (threads < 1 || 2 * threads != (int64_t)dev->max_threads_per_sm) return 1;
  int64_t regs = fu_persist_two_block_regs(dev, threads);
  return cached_bytes >= 0 && cached_bytes <= regs / 2 * 4 ? 2 : 1;
}

uint32_t fu_persist_smem_limit(const fu_device *dev) {
  /* the verifier knows only the presets: a device file's figure counts up
   * to that of the preset its schedule will name (by name, else by arch) */
  char arch[16];
  fu_device_arch(dev, arch, sizeof arch);
  fu_device named;
  bool known = fu_device_preset(dev->name, &named) || fu_device_preset(arch, &named);
  return known && named.smem_per_block < dev->smem_per_block ? named.smem_per_block : dev->smem_per_block;
}
