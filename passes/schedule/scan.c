/* fuser: the scan scheduler: one thread per line of a cumsum, cumprod,
 * cummax or cummin.
 *
 * A scan segment holds the scan alone (passes/segment/schedulers.c).  The
 * lines along the scanned dim are independent and each is a chain: the
 * schedule merges every other dim of the result into one axis of lines,
 * splits it over blocks of threads (a guarded tail: any number of lines,
 * symbolic ones included) and keeps the scanned dim as a serial loop
 * inside the thread, so each line is folded in order, as the interpreter
 * folds it (lib/interp/scan.c), and the results agree exactly:
 *
 *   reference %T1 [d0, d1]          (scan along d1)
 *   split d0, 128 -> bx, tx {tail=guard}
 *   loop [bx: blockIdx.x, tx: threadIdx.x, d1: serial]
 *
 * A rank-1 scan is one line: one thread, `loop [d0: serial]`.  Indexing is
 * 64-bit (passes/lower/scan.c). */
#include <stdio.h>

#include "fuser/schedule.h"
#include "internal.h"

enum { SCAN_BLOCK = 128 };

/* The segment's scan op, or NULL when the body is not one scan. */
static const fu_op *scan_of(const fu_op *seg) {
  const fu_op *op = seg->u.segment.body ? seg->u.segment.body->first : NULL;
  if (!op || op->next || !fu_op_has(op->kind, FU_OF_SCAN) || op->n_results != 1) return NULL;
  return op;
}

fu_status fu_schedule_scan(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag, FILE *debug,
                           fu_schedule **out) {
  *out = NULL;
  const fu_op *op = scan_of(seg);
  if (!op) {
    fu_error(diag, seg->loc, "scan segment '@%s' does not hold exactly one scan", seg->u.segment.name);
    return FU_ERR_VERIFY;
  }
  const fu_value *ref = op->results[0];
  int32_t rank = ref->type.rank, dim = (int32_t)op->u.scan.dim;
  /* the reference's dims, then at most rank - 2 merges and one split (two
   * axes): fewer than 2 * rank axes */
  char names[2 * FU_MAX_RANK][16];
  fu_saxis axes[2 * FU_MAX_RANK];
  uint32_t na = fu_schedule_ref_axes(ref, axes, names), nx = 0;
  fu_sxform xf[FU_MAX_RANK];
  int32_t lines = -1; /* the axis of lines: the other dims merged */
  for (int32_t d = 0; d < rank; d++) {
    if (d == dim) continue;
    if (lines < 0) {
      lines = d;
      continue;
    }
    snprintf(names[na], sizeof names[na], "m%u", nx);
    xf[nx] = (fu_sxform){FU_SX_MERGE, {(uint32_t)lines, (uint32_t)d}, {na, 0}, 0, FU_TAIL_GUARD, fu_loc_none()};
    axes[na] = (fu_saxis){names[na], -1, (int32_t)nx++, fu_loc_none()};
    lines = (int32_t)na++;
  }
  fu_sloop loops[3];
  uint32_t nl = 0;
  if (lines >= 0) {
    xf[nx] = (fu_sxform){FU_SX_SPLIT, {(uint32_t)lines, 0}, {na, na + 1}, SCAN_BLOCK, FU_TAIL_GUARD, fu_loc_none()};
    const char *o[2] = {"bx", "tx"};
    for (int j = 0; j < 2; j++) {
      snprintf(names[na], sizeof names[na], "%s", o[j]);
      axes[na] = (fu_saxis){names[na], -1, (int32_t)nx, fu_loc_none()};
      na++;
    }
    nx++;
    loops[nl++] = (fu_sloop){na - 2, FU_PT_BLOCK_X, false, fu_loc_none()};
    loops[nl++] = (fu_sloop){na - 1, FU_PT_THREAD_X, false, fu_loc_none()};
  }
  loops[nl++] = (fu_sloop){(uint32_t)dim, FU_PT_SERIAL, false, fu_loc_none()};
  fu_schedule *s = fu_schedule_assemble(f->module, ref, axes, na, xf, nx, loops, nl);
  if (!s) return FU_ERR_NOMEM;
  s->kind = FU_SK_SCAN;
  s->index_dtype = FU_DT_I64;
  s->loc = seg->loc;
  if (dev) {
    char arch[16];
    fu_device_arch(dev, arch, sizeof arch);
    s->device = fu_arena_strdup(f->module->arena, dev->name);
    s->arch = fu_arena_strdup(f->module->arena, arch);
    if (!s->device || !s->arch) return FU_ERR_NOMEM;
  }
  if (debug)
    fprintf(debug, "schedule: @%s: %s along dim %d: %s, the line folded in order in its thread\n",
            seg->u.segment.name ? seg->u.segment.name : "?", fu_op_info_of(op->kind)->name, (int)dim,
            lines >= 0 ? "one thread per line, blocks of 128 threads" : "one line, one thread");
  *out = s;
  return FU_OK;
}
