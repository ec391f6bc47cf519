/* fuser: the description of a target GPU that the schedulers tune for.
 *
 * A device is plain data: the numbers a heuristic needs (SM count, thread
 * and register limits, shared memory, L2 size, memory bandwidth) and the
 * architecture the backend compiles for.  The compiler takes one from
 * `--device=`: a preset name (`h100`, `h200`, `a100`, `sm_80`, `sm_90`) or a
 * file of `key = value` lines (see fu_device_parse).  The runtime, later,
 * fills one from the driver's attributes of the GPU it runs on. */
#ifndef FUSER_DEVICE_H
#define FUSER_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "fuser/diag.h"
#include "fuser/status.h"
#include "fuser/strbuf.h"

#define FU_DEVICE_NAME_MAX 32

typedef struct fu_device {
  char name[FU_DEVICE_NAME_MAX]; /* "h100", or what a file says */
  uint32_t sm;                    /* compute capability * 10: 80, 90 */
  uint32_t n_sms;                 /* streaming multiprocessors */
  uint32_t warp_size;
  uint32_t max_threads_per_block;
  uint32_t max_threads_per_sm;
  uint32_t max_blocks_per_sm;
  uint32_t regs_per_sm;           /* 32-bit registers */
  uint32_t max_regs_per_thread;
  uint32_t smem_per_block;        /* bytes a block may use (opt-in maximum) */
  uint32_t smem_per_sm;           /* bytes */
  uint64_t l2_bytes;
  double mem_bandwidth_gbs;       /* peak DRAM bandwidth, GB/s (1e9 bytes) */
  uint64_t mem_bytes;             /* global memory: bounds every tensor's size */
  uint32_t max_grid_x;            /* 2^31 - 1 */
  uint32_t max_grid_yz;           /* 65535 */
  /* blocks a thread-block cluster may have: 8 (the portable size) from
   * sm_90 on, 1 (no clusters) before; a scheduler splits a row over a
   * cluster only up to it */
  uint32_t max_cluster;
} fu_device;

/* The shared memory the driver keeps per resident block (1 KiB from sm_80
 * on), counted against smem_per_sm where blocks per SM are sized. */
enum { FU_SMEM_RESERVED_PER_BLOCK = 1024 };

/* The preset named `name` ("h100", "h100-sxm", "h200", "a100", "sm_80",
 * "sm_90"; case-sensitive).  False when there is no such preset.
 * sm_90 is the H100 SXM, sm_80 the A100 SXM 80 GB. */
bool fu_device_preset(const char *name, fu_device *out);

/* The names fu_device_preset knows, comma-separated, for messages. */
const char *fu_device_preset_names(void);

/* The default target: the H100 SXM. */
fu_device fu_device_default(void);

/* Parses a device file: `key = value` lines, `#` comments, blank lines.
 * `base = <preset>` (first) starts from a preset, otherwise from the
 * default; then any of: name, sm (80 or sm_80), sms, warp_size,
 * max_threads_per_block, max_threads_per_sm, max_blocks_per_sm,
 * regs_per_sm, max_regs_per_thread, smem_per_block, smem_per_sm,
 * l2_bytes (or l2_mb), mem_bandwidth_gbs (or mem_bandwidth_tbs),
 * mem_bytes (or mem_gib), max_grid_x, max_grid_yz.  Unknown keys, bad numbers and duplicate keys
 * are located errors (FU_ERR_PARSE). */
fu_status fu_device_parse(const fu_source *src, fu_device *out, fu_diag_engine *diag);

/* `spec` is a preset name or the path of a device file.  Errors (no such
 * preset or file, a bad file) are reported to `diag`; FU_ERR_INVALID_ARG
 * for a spec that is neither a preset nor a readable file. */
fu_status fu_device_from_spec(const char *spec, fu_allocator alloc, fu_device *out, fu_diag_engine *diag);

/* The LLVM NVPTX name of the device's architecture: "sm_90". */
void fu_device_arch(const fu_device *d, char *buf, size_t cap);

/* The compute capability an architecture name gives: 90 for "sm_90" and
 * "sm_90a" (two or three digits, then an optional 'a' or 'f'); 0 for
 * NULL or any other text.  The one reading of such names for the
 * verifier and the targets. */
uint32_t fu_arch_sm(const char *arch);

/* Checks the numbers make sense (non-zero, warp-multiple limits, ...);
 * false with the reason in `why` (may be NULL). */
bool fu_device_valid(const fu_device *d, fu_strbuf *why);

/* One line per field, `key = value`, in the file syntax fu_device_parse
 * reads. */
void fu_device_print(fu_strbuf *out, const fu_device *d);

#endif
