/* fuser: the resize scheduler (slice, pad, cat and the pointwise ops
 * around them).
 *
 * A resize segment is one iteration space, the largest output's, like a
 * pointwise segment: the index graph reads each operand of a slice, pad or
 * cat at its own coordinates (docs/passes.md, "Resize in the index
 * graph").  A segment of slices alone takes the pointwise scheduler's
 * schedule, with the vectors its offsets allow (start + step * i is
 * affine).  A pad's or cat's operand is read at a clamped coordinate, a
 * variable of the index graph: a segment with a pad or a cat gets a 1-D
 * schedule, all dims merged, 128 threads, one vector a thread (not
 * unrolled), with the widest vector that stores every output
 * whole: loads are whole vectors where the operands' extents and offsets
 * along the vectorized dim are multiples of the width (the graph then
 * clamps whole vectors), lane by lane where not; else element by element,
 * still coalesced.  A 2-D pointwise schedule would leave threads idle on rows
 * shorter than a block times the unroll factor (seed004's rows of 128). */
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

/* The 1-D schedule of a segment with a pad or cat at vector width V (1:
 * none): every reference dim merged, split by V and the block
 * (consecutive threads on consecutive vectors of the reference, so every
 * access that is contiguous along it is coalesced); tails, grid,
 * index type and the tensors read lane by lane (access=scalar) from the
 * index graph.  *usable is false when an output would not be stored as
 * whole vectors; *lanewise when a clamped coordinate varies within a
 * vector (its loads then go lane by lane). */
static fu_status one_d(fu_fusion *f, fu_op *seg, fu_diag_engine *diag, const fu_value *ref,
                       double n, int64_t V, fu_schedule **out, bool *usable, bool *lanewise) {
  fu_module *m = f->module;
  *out = NULL;
  *usable = false;
  /* one vector a thread, no unroll loop: on the H100 unrolling by 4 cost
   * 1.5-3 us on cat, pad and seed004's rotation (cat of two f32[8192,
   * 4096]: 184.6 us against 181.7, the same at 256 or 512 threads), as the
   * pointwise kernels' 16 bytes a thread already keep enough in flight */
  enum { MAXA = FU_MAX_RANK + 10 };
  fu_saxis axes[MAXA];
  fu_sxform xf[MAXA];
  fu_sloop loops[4];
  char names[MAXA][16];
  uint32_t na = fu_schedule_ref_axes(ref, axes, names), nx = 0, nl = 0;
  uint32_t cur = 0;
  for (int32_t d = 1; d < ref->type.rank; d++) {
    snprintf(names[na], sizeof names[na], d + 1 == ref->type.rank ? "m" : "m%d", (int)d);
    xf[nx] = (fu_sxform){FU_SX_MERGE, {cur, (uint32_t)d}, {na, 0}, 0, FU_TAIL_GUARD, fu_loc_none()};
    axes[na] = (fu_saxis){names[na], -1, (int32_t)nx++, fu_loc_none()};
    cur = na++;
  }
  /* splits by the vector width, then the block */
  const int64_t factor[2] = {V, BLOCK};
  const char *o[2][2] = {{"s0", "v"}, {"bx", "tx"}};
  uint32_t inner[2] = {0, 0};
  for (int k = 0; k < 2; k++) {
    if (factor[k] <= 1 && k != 1) continue;
    xf[nx] = (fu_sxform){FU_SX_SPLIT, {cur, 0}, {na, na + 1}, factor[k], FU_TAIL_GUARD, fu_loc_none()};
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
  loops[nl++] = (fu_sloop){inner[1], FU_PT_THREAD_X, false, fu_loc_none()};
  if (V > 1) loops[nl++] = (fu_sloop){inner[0], FU_PT_VECTORIZE, false, fu_loc_none()};
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
  *usable = true;
  *lanewise = fu_igraph_resize_lanewise(g);
  uint32_t n_acc = fu_igraph_num_accesses(g);
  s->tensors = fu_arena_calloc(m->arena, n_acc ? n_acc : 1, sizeof *s->tensors);
  if (!s->tensors) st = FU_ERR_NOMEM;
  s->n_tensors = 0; /* counted as listed: fu_schedule_tensor sees a value listed once */
  for (uint32_t i = 0; st == FU_OK && V > 1 && i < n_acc; i++) {
    const fu_iaccess *a = fu_igraph_access(g, i);
    if (a->mode != FU_AM_LANES || (!a->is_store && fu_igraph_names_lanewise(g, a->offset))) continue;
    if (a->is_store) *usable = false;
    /* a tensor read on several paths has several accesses: list it once */
    if (!fu_schedule_tensor(s, a->value))
      s->tensors[s->n_tensors++] =
          (fu_stensor){.value = (fu_value *)a->value, .memory = FU_MEM_GLOBAL, .inline_pos = -1,
                       .access = FU_ACCESS_SCALAR, .loc = fu_loc_none()};
  }
  fu_igraph_free(g);
  *out = s;
  return st;
}

/* The widest vector (16 bytes of the widest dtype down to 2 elements) that
 * one_d can use, else none. */
static fu_status scalar_schedule(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag, FILE *debug,
                                 fu_schedule **out) {
  fu_module *m = f->module;
  fu_example_sizes bind;
  if (fu_example_sizes_bind(&bind, f, m->alloc) != FU_OK) return FU_ERR_NOMEM;
  double n = -1;
  const fu_value *ref = fu_schedule_largest_output(seg, &bind, &n);
  fu_example_sizes_free(&bind);
  if (!ref || ref->type.rank < 1) return fu_schedule_pointwise(f, seg, dev, diag, debug, out);
  size_t widest = 1;
  for (uint32_t i = 0; i < seg->n_operands + seg->u.segment.n_outputs; i++) {
    const fu_value *v = i < seg->n_operands ? seg->operands[i] : seg->u.segment.outputs[i - seg->n_operands];
    if (fu_type_is_tensor(&v->type) && v->type.dtype != FU_DT_BOOL && fu_dtype_size(v->type.dtype) > widest)
      widest = fu_dtype_size(v->type.dtype);
  }
  fu_schedule *s = NULL;
  bool usable = false, lanewise = false;
  int64_t V = (int64_t)(16 / widest);
  for (; V >= 1; V /= 2) {
    fu_status st = one_d(f, seg, diag, ref, n, V, &s, &usable, &lanewise);
    if (st != FU_OK) return st;
    if (debug && V > 1)
      fprintf(debug, "schedule: @%s: resize: width %lld: %s\n", seg->u.segment.name ? seg->u.segment.name : "?",
              (long long)V, !usable ? "an output is lane by lane"
              : lanewise ? "every output whole vectors, loads through clamps lane by lane"
                         : "every output whole vectors");
    if (usable) break;
  }
  char arch[16];
  fu_device_arch(dev, arch, sizeof arch);
  s->device = fu_arena_strdup(m->arena, dev->name);
  s->arch = fu_arena_strdup(m->arena, arch);
  s->loc = seg->loc;
  s->kind = FU_SK_RESIZE;
  if (!s->device || !s->arch) return FU_ERR_NOMEM;
  int32_t ul = fu_schedule_loop_of(s, FU_PT_UNROLL);
  if (debug)
    fprintf(debug,
            "schedule: @%s: resize: reference %%%s (%.0f elements), 1-D, vector %lld, block %d, unroll %lld, index %s, "
            "grid %s\n",
            seg->u.segment.name ? seg->u.segment.name : "?", ref->name ? ref->name : "?", n, (long long)(V ? V : 1),
            BLOCK, ul >= 0 ? (long long)s->xforms[s->axes[s->loops[ul].axis].def].factor : 1LL,
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
            scalar ? "1-D (a pad or cat reads clamped coordinates)" : "the pointwise schedule");
  return scalar ? scalar_schedule(f, seg, dev, diag, debug, out) : fu_schedule_pointwise(f, seg, dev, diag, debug, out);
}
