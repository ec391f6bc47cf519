/* fuser: the resize scheduler (slice, pad, cat and the pointwise ops
 * around them).
 *
 * A resize segment is one iteration space, the largest output's, like a
 * pointwise segment: the index graph reads each operand of a slice, pad or
 * cat at its own coordinates (docs/passes.md, "Resize in the index
 * graph").  A segment of slices alone takes the pointwise scheduler's
 * schedule, with the vectors its offsets allow (start + step * i is
 * affine).  A pad's or cat's operand is read at a clamped coordinate,
 * which the lane analysis cannot see through, so a segment with a pad or
 * a cat gets a 1-D schedule without a vectorize axis: all dims merged,
 * 128 threads, unrolled 4 times while the grid keeps a full wave (its
 * accesses go element by element, still coalesced: consecutive threads
 * read consecutive elements).  A 2-D pointwise schedule would leave
 * threads idle on rows shorter than a block times the unroll factor (the
 * rows of 128 of seed004's heads). */
#include <stdio.h>

#include "fuser/index_graph.h"
#include "fuser/schedule.h"
#include "internal.h"

enum { BLOCK = 128 };

bool fu_schedule_resize_scalar(const fu_op *seg) {
  if (seg->u.segment.kind != FU_SK_RESIZE) return false;
  for (fu_op *op = seg->u.segment.body ? seg->u.segment.body->first : NULL; op; op = op->next)
    if (op->kind == FU_OP_PAD || op->kind == FU_OP_CAT) return true;
  return false;
}

/* The 1-D schedule of a segment with a pad or cat: every reference dim
 * merged, split by the block and the unroll factor (consecutive threads on
 * consecutive elements of the reference, so every access that is
 * contiguous along it is coalesced), tails and grid from the index graph. */
static fu_status scalar_schedule(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag, FILE *debug,
                                 fu_schedule **out) {
  fu_module *m = f->module;
  fu_example_sizes bind;
  if (fu_example_sizes_bind(&bind, f, m->alloc) != FU_OK) return FU_ERR_NOMEM;
  double n = -1;
  const fu_value *ref = fu_schedule_largest_output(seg, &bind, &n);
  fu_example_sizes_free(&bind);
  if (!ref || ref->type.rank < 1) return fu_schedule_pointwise(f, seg, dev, diag, debug, out);
  /* unroll for bytes in flight (4 elements a thread), keeping a full wave */
  int64_t unroll = 4;
  double wave = (double)dev->n_sms * (double)(dev->max_threads_per_sm / BLOCK);
  while (unroll > 1 && n / (double)(BLOCK * unroll) < wave) unroll /= 2;
  enum { MAXA = FU_MAX_RANK + 8 };
  fu_saxis axes[MAXA];
  fu_sxform xf[MAXA];
  fu_sloop loops[3];
  char names[MAXA][16];
  uint32_t na = 0, nx = 0, nl = 0;
  for (int32_t d = 0; d < ref->type.rank; d++) {
    snprintf(names[na], sizeof names[na], "d%d", (int)d);
    axes[na] = (fu_saxis){names[na], d, -1, fu_loc_none()};
    na++;
  }
  uint32_t cur = 0;
  for (int32_t d = 1; d < ref->type.rank; d++) {
    snprintf(names[na], sizeof names[na], d + 1 == ref->type.rank ? "m" : "m%d", (int)d);
    xf[nx] = (fu_sxform){FU_SX_MERGE, {cur, (uint32_t)d}, {na, 0}, 0, FU_TAIL_GUARD, fu_loc_none()};
    axes[na] = (fu_saxis){names[na], -1, (int32_t)nx++, fu_loc_none()};
    cur = na++;
  }
  /* split by the block, then by the unroll factor */
  const char *o[2][2] = {{unroll > 1 ? "s1" : "bx", "tx"}, {"bx", "u"}};
  uint32_t inner[2];
  for (int k = 0; k < (unroll > 1 ? 2 : 1); k++) {
    xf[nx] = (fu_sxform){FU_SX_SPLIT, {cur, 0}, {na, na + 1}, k ? unroll : BLOCK, FU_TAIL_GUARD, fu_loc_none()};
    for (int j = 0; j < 2; j++) {
      snprintf(names[na], sizeof names[na], "%s", o[k][j]);
      axes[na] = (fu_saxis){names[na], -1, (int32_t)nx, fu_loc_none()};
      na++;
    }
    nx++;
    cur = na - 2;
    inner[k] = na - 1;
  }
  loops[nl++] = (fu_sloop){cur, FU_PT_BLOCK_X, false, fu_loc_none()};
  if (unroll > 1) loops[nl++] = (fu_sloop){inner[1], FU_PT_UNROLL, false, fu_loc_none()};
  loops[nl++] = (fu_sloop){inner[0], FU_PT_THREAD_X, false, fu_loc_none()};
  fu_schedule *s = fu_schedule_assemble(m, ref, axes, na, xf, nx, loops, nl);
  if (!s) return FU_ERR_NOMEM;
  fu_igraph *g = NULL;
  fu_status st = fu_igraph_build(f, seg, s, m->alloc, diag, &g);
  if (st != FU_OK) return st;
  fu_schedule_exact_tails(g, s);
  int64_t e = 0;
  s->loops[0].grid_stride =
      !(fu_ix_is_const(fu_igraph_axis_extent(g, s->loops[0].axis), &e) && e <= fu_block_axis_limit(FU_PT_BLOCK_X));
  s->index_dtype = fu_igraph_index_dtype(g);
  fu_igraph_free(g);
  char arch[16];
  fu_device_arch(dev, arch, sizeof arch);
  s->device = fu_arena_strdup(m->arena, dev->name);
  s->arch = fu_arena_strdup(m->arena, arch);
  s->loc = seg->loc;
  s->kind = FU_SK_RESIZE;
  if (!s->device || !s->arch) return FU_ERR_NOMEM;
  if (debug)
    fprintf(debug, "schedule: @%s: resize: reference %%%s (%.0f elements), 1-D, block %d, unroll %lld, index %s, grid %s\n",
            seg->u.segment.name ? seg->u.segment.name : "?", ref->name ? ref->name : "?", n, BLOCK, (long long)unroll,
            fu_dtype_name(s->index_dtype), s->loops[0].grid_stride ? "grid-stride in x" : "direct");
  *out = s;
  return FU_OK;
}

fu_status fu_schedule_resize(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag, FILE *debug,
                             fu_schedule **out) {
  *out = NULL;
  bool scalar = fu_schedule_resize_scalar(seg);
  if (debug)
    fprintf(debug, "schedule: @%s: resize: %s\n", seg->u.segment.name ? seg->u.segment.name : "?",
            scalar ? "1-D, no vectors (a pad or cat reads clamped coordinates)" : "the pointwise schedule");
  return scalar ? scalar_schedule(f, seg, dev, diag, debug, out) : fu_schedule_pointwise(f, seg, dev, diag, debug, out);
}
