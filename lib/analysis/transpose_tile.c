/* fuser: the tile of a transpose schedule (fuser/schedule.h,
 * fu_transpose_tile).
 *
 * The schedule verifier and the transpose lowering both need the tile's
 * axes: the verifier to reject a schedule with `access=tile` tensors that
 * the lowering could not stage through shared memory, the lowering to know
 * which loop variables to swap.  The form is recognized from the loop list
 * inward: threadIdx.x is the inner part of a split of reference dim J,
 * threadIdx.y the inner part of a split of another reference dim I by the
 * same factor (or of a split of that inner part, whose outer part is the
 * loop just before). */
#include <stdio.h>

#include "fuser/schedule.h"

bool fu_schedule_has_tile(const fu_schedule *s) {
  for (uint32_t i = 0; s && i < s->n_tensors; i++)
    if (s->tensors[i].access == FU_ACCESS_TILE) return true;
  return false;
}

/* The split that defines axis a as its inner output, or NULL. */
static const fu_sxform *inner_split_of(const fu_schedule *s, uint32_t a) {
  int32_t d = s->axes[a].def;
  if (d < 0 || (uint32_t)d >= s->n_xforms) return NULL;
  const fu_sxform *x = &s->xforms[d];
  return x->kind == FU_SX_SPLIT && x->out[1] == a ? x : NULL;
}

/* Whether some transform reads axis a. */
static bool consumed(const fu_schedule *s, uint32_t a) {
  for (uint32_t t = 0; t < s->n_xforms; t++) {
    const fu_sxform *x = &s->xforms[t];
    if (x->in[0] == a || (x->kind == FU_SX_MERGE && x->in[1] == a)) return true;
  }
  return false;
}

static bool fail(fu_diag_engine *diag, fu_loc loc, const char *why) {
  if (diag) {
    fu_error(diag, loc, "a schedule with 'access=tile' tensors must have a transpose tile: %s", why);
    fu_note(diag, loc,
            "the form is 'split dI, T -> ti, il', 'split dJ, T -> tj, jl', optionally 'split il, Y -> u, y', and the "
            "loop ending in '[u: unroll, y: threadIdx.y, jl: threadIdx.x]'");
  }
  return false;
}

bool fu_schedule_transpose_tile(const fu_schedule *s, fu_transpose_tile *t, fu_diag_engine *diag) {
  fu_loc loc = s->loc;
  uint32_t n = s->n_loops;
  if (n < 2 || s->loops[n - 1].ptype != FU_PT_THREAD_X || s->loops[n - 2].ptype != FU_PT_THREAD_Y)
    return fail(diag, loc, "the last two loops are not threadIdx.y and threadIdx.x");
  t->axis_jl = s->loops[n - 1].axis;
  t->axis_y = s->loops[n - 2].axis;
  const fu_sxform *xj = inner_split_of(s, t->axis_jl);
  if (!xj || s->axes[xj->in[0]].ref_dim < 0)
    return fail(diag, loc, "the threadIdx.x axis is not the inner part of a split of a reference dim");
  t->dim_j = s->axes[xj->in[0]].ref_dim;
  t->tile = xj->factor;
  const fu_sxform *xy = inner_split_of(s, t->axis_y);
  if (!xy) return fail(diag, loc, "the threadIdx.y axis is not the inner part of a split");
  t->axis_u = UINT32_MAX;
  t->xform_il = UINT32_MAX;
  const fu_sxform *xi = xy;
  t->axis_il = t->axis_y;
  if (s->axes[xy->in[0]].ref_dim < 0) {
    /* y splits il: il = u * Y + y, u the loop before */
    t->axis_il = xy->in[0];
    t->axis_u = xy->out[0];
    t->xform_il = (uint32_t)s->axes[t->axis_y].def;
    xi = inner_split_of(s, t->axis_il);
    if (n < 3 || s->loops[n - 3].axis != t->axis_u ||
        (s->loops[n - 3].ptype != FU_PT_UNROLL && s->loops[n - 3].ptype != FU_PT_SERIAL))
      return fail(diag, loc, "the outer part of the split of il is not the unroll or serial loop before threadIdx.y");
    if (!xi || xy->tail != FU_TAIL_EXACT || t->tile % xy->factor != 0)
      return fail(diag, loc, "the split of il is not an exact split of the inner part of a reference dim's split");
  }
  if (!xi || s->axes[xi->in[0]].ref_dim < 0)
    return fail(diag, loc, "il is not the inner part of a split of a reference dim");
  t->dim_i = s->axes[xi->in[0]].ref_dim;
  t->rows = t->axis_u == UINT32_MAX ? xi->factor : xy->factor;
  if (t->dim_i == t->dim_j || xi->factor != t->tile)
    return fail(diag, loc, "the two tiled dims must differ and be split by the same factor");
  t->n_outer = n - (t->axis_u == UINT32_MAX ? 2u : 3u);
  for (uint32_t i = 0; i < t->n_outer; i++) {
    fu_ptype p = s->loops[i].ptype;
    if (p != FU_PT_BLOCK_X && p != FU_PT_BLOCK_Y && p != FU_PT_SERIAL)
      return fail(diag, s->loops[i].loc, "a loop outside the tile is not on blockIdx or serial");
  }
  if (consumed(s, t->axis_jl) || consumed(s, t->axis_y) || (t->axis_u != UINT32_MAX && consumed(s, t->axis_u)) ||
      (t->axis_u == UINT32_MAX && consumed(s, t->axis_il)))
    return fail(diag, loc, "a tile axis is transformed further");
  return true;
}
