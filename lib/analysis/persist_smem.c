/* fuser: the shared memory of a persist=smem schedule (docs/ir.md,
 * `persist=`).  The scheduler sizes its choice with these, the verifier
 * checks a schedule against the device with them, and the lowering lays
 * the staged rows out by them, so the three agree on what a block takes. */
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

uint32_t fu_persist_register_blocks(const fu_device *dev, int64_t threads, int64_t cached_bytes) {
  if (threads < 1 || 2 * threads != (int64_t)dev->max_threads_per_sm) return 1;
  int64_t regs = (int64_t)dev->regs_per_sm / (2 * threads); /* per thread, two blocks resident */
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
