/* fuser: the schedule verifier (include/fuser/schedule.h).  It checks a
 * schedule against its segment: the structure (axes used once, loops are
 * the leaves, parallel types) and that every access can be indexed.  The
 * .fir parser runs it on every schedule it reads, so a hand-written
 * schedule is checked before any pass sees it; the schedule pass runs it
 * on what its schedulers write. */
#include <stdlib.h>
#include <string.h>

#include "fuser/device.h"
#include "fuser/index_graph.h"
#include "fuser/schedule.h"

/* ---- verification -------------------------------------------------------------- */

static const char *seg_name(const fu_op *seg) { return seg->u.segment.name ? seg->u.segment.name : "?"; }

static bool in_segment(const fu_op *seg, const fu_value *v) {
  if (!v) return false;
  return fu_segment_has_input(seg, v) || (v->def && v->def->parent == seg->u.segment.body);
}

/* The structure: axes used once, loop = leaves, parallel types.  used_by
 * and in_loop are per axis (scratch of at least n_axes entries). */
static bool verify_structure_in(fu_op *seg, const fu_schedule *s, fu_diag_engine *diag, int32_t *used_by,
                                bool *in_loop) {
  bool ok = true;
  uint32_t na = s->n_axes;
  for (uint32_t a = 0; a < na; a++) used_by[a] = -1;
  for (uint32_t t = 0; t < s->n_xforms; t++) {
    const fu_sxform *x = &s->xforms[t];
    uint32_t nin = x->kind == FU_SX_MERGE ? 2 : 1;
    for (uint32_t k = 0; k < nin; k++) {
      uint32_t a = x->in[k];
      if (a >= na) return false;
      if (used_by[a] >= 0) {
        fu_error(diag, x->loc, "axis '%s' is transformed twice", s->axes[a].name);
        fu_note(diag, s->xforms[used_by[a]].loc, "first use of '%s' is here", s->axes[a].name);
        ok = false;
      }
      used_by[a] = (int32_t)t;
    }
    if (x->kind == FU_SX_MERGE && x->in[0] == x->in[1]) {
      fu_error(diag, x->loc, "'merge' of axis '%s' with itself", s->axes[x->in[0]].name);
      ok = false;
    }
  }
  memset(in_loop, 0, na * sizeof in_loop[0]);
  int32_t per_ptype[FU_PT_COUNT];
  for (int p = 0; p < FU_PT_COUNT; p++) per_ptype[p] = -1;
  for (uint32_t i = 0; i < s->n_loops; i++) {
    const fu_sloop *l = &s->loops[i];
    if (l->axis >= na) return false;
    const char *an = s->axes[l->axis].name;
    if (in_loop[l->axis]) {
      fu_error(diag, l->loc, "axis '%s' appears twice in the loop", an);
      ok = false;
    }
    in_loop[l->axis] = true;
    if (used_by[l->axis] >= 0) {
      fu_error(diag, l->loc, "axis '%s' is not a loop axis: it is transformed further", an);
      fu_note(diag, s->xforms[used_by[l->axis]].loc, "'%s' is used here", an);
      ok = false;
    }
    if (l->ptype != FU_PT_SERIAL && l->ptype != FU_PT_UNROLL) {
      if (per_ptype[l->ptype] >= 0) {
        fu_error(diag, l->loc, "two loop axes are bound to %s", fu_ptype_name(l->ptype));
        ok = false;
      }
      per_ptype[l->ptype] = (int32_t)i;
    }
    if (l->ptype == FU_PT_VECTORIZE && i + 1 != s->n_loops) {
      fu_error(diag, l->loc, "the vectorized axis '%s' must be the innermost loop axis", an);
      ok = false;
    }
  }
  for (uint32_t a = 0; a < na; a++)
    if (used_by[a] < 0 && !in_loop[a]) {
      fu_error(diag, s->axes[a].loc, "axis '%s' is neither transformed nor in the loop", s->axes[a].name);
      ok = false;
    }
  for (uint32_t i = 0; i < s->n_tensors; i++) {
    const fu_stensor *t = &s->tensors[i];
    if (!in_segment(seg, t->value)) {
      fu_error(diag, t->loc, "'%%%s' is not a tensor of segment '@%s'", t->value->name ? t->value->name : "?",
               seg_name(seg));
      ok = false;
      continue;
    }
    bool global = fu_segment_has_input(seg, t->value) || fu_segment_has_output(seg, t->value);
    /* an input a persist=smem schedule stages in shared memory */
    bool staged = t->memory == FU_MEM_SHARED && s->persist == FU_PM_SMEM && fu_segment_has_input(seg, t->value);
    if (global && t->memory != FU_MEM_GLOBAL && !staged) {
      fu_error(diag, t->loc, "'%%%s' is an input or output of the segment: its memory is global%s",
               t->value->name ? t->value->name : "?",
               t->memory == FU_MEM_SHARED && fu_segment_has_input(seg, t->value)
                   ? " (shared stages an input of a persist=smem schedule only)"
                   : "");
      ok = false;
    }
    if (t->keep > 0 && !staged) {
      fu_error(diag, t->loc,
               "keep= holds part of a staged row in registers: '%%%s' is not an input staged in shared memory by a "
               "persist=smem schedule",
               t->value->name ? t->value->name : "?");
      ok = false;
    }
    if (!global && t->memory != FU_MEM_LOCAL) {
      fu_error(diag, t->loc,
               "'%%%s' is an intermediate: the pointwise lowering keeps intermediates in registers (memory=local)",
               t->value->name ? t->value->name : "?");
      ok = false;
    }
    if (!global && t->access != FU_ACCESS_DEFAULT) {
      fu_error(diag, t->loc, "'access' is for global tensors; '%%%s' is an intermediate",
               t->value->name ? t->value->name : "?");
      ok = false;
    }
    if (t->inline_pos > (int32_t)s->n_loops) {
      fu_error(diag, t->loc, "inline position %d is out of range: the loop has %u axes", (int)t->inline_pos, s->n_loops);
      ok = false;
    }
  }
  if (s->reference && !in_segment(seg, s->reference)) {
    fu_error(diag, s->loc, "the reference '%%%s' is not a tensor of segment '@%s'",
             s->reference->name ? s->reference->name : "?", seg_name(seg));
    ok = false;
  }
  return ok;
}

static bool verify_structure(fu_op *seg, const fu_schedule *s, fu_diag_engine *diag) {
  size_t n = s->n_axes ? s->n_axes : 1;
  int32_t *used_by = fu_mem_alloc(&diag->alloc, n * sizeof *used_by);
  bool *in_loop = fu_mem_alloc(&diag->alloc, n * sizeof *in_loop);
  bool ok = used_by && in_loop;
  if (!ok) fu_error(diag, s->loc, "out of memory while verifying the schedule");
  else ok = verify_structure_in(seg, s, diag, used_by, in_loop);
  fu_mem_free(&diag->alloc, used_by, n * sizeof *used_by);
  fu_mem_free(&diag->alloc, in_loop, n * sizeof *in_loop);
  return ok;
}

/* What needs extents and layouts: exact splits, thread and vector axes,
 * vector accesses, the index type. */
static bool verify_indexing(fu_fusion *f, fu_op *seg, const fu_schedule *s, fu_diag_engine *diag) {
  fu_igraph *g = NULL;
  fu_status st = fu_igraph_build(f, seg, s, diag->alloc, diag, &g);
  if (st != FU_OK) return false;
  bool ok = true;
  fu_ix_ctx *ix = fu_igraph_ix(g);
  for (uint32_t t = 0; t < s->n_xforms; t++) {
    const fu_sxform *x = &s->xforms[t];
    if (x->kind != FU_SX_SPLIT || x->tail != FU_TAIL_EXACT) continue;
    const fu_ix *e = fu_igraph_axis_extent(g, x->in[0]);
    if (!fu_ix_divides(fu_ix_const(ix, x->factor), e)) {
      fu_strbuf sb;
      fu_strbuf_init(&sb, diag->alloc);
      fu_ix_print(&sb, e);
      fu_error(diag, x->loc,
               "split of '%s' by %lld is marked tail=exact, but %lld does not provably divide its extent %s "
               "(use tail=guard)",
               s->axes[x->in[0]].name, (long long)x->factor, (long long)x->factor, sb.data ? sb.data : "?");
      fu_strbuf_free(&sb);
      ok = false;
    }
  }
  int64_t threads = 1;
  for (uint32_t i = 0; i < s->n_loops; i++) {
    const fu_sloop *l = &s->loops[i];
    const fu_ix *e = fu_igraph_axis_extent(g, l->axis);
    int64_t v = 0;
    bool c = fu_ix_is_const(e, &v);
    const char *an = s->axes[l->axis].name;
    switch (l->ptype) {
    case FU_PT_THREAD_X:
    case FU_PT_THREAD_Y:
      if (!c || v < 1 || v > 1024) {
        fu_error(diag, l->loc, "axis '%s' bound to %s needs a constant extent between 1 and 1024", an,
                 fu_ptype_name(l->ptype));
        ok = false;
      } else {
        threads *= v;
      }
      break;
    case FU_PT_VECTORIZE:
      if (!c || (v != 1 && v != 2 && v != 4 && v != 8 && v != 16)) {
        fu_error(diag, l->loc, "the vectorized axis '%s' needs a constant extent of 1, 2, 4, 8 or 16", an);
        ok = false;
      }
      break;
    case FU_PT_BLOCK_X:
    case FU_PT_BLOCK_Y:
      if (c && !l->grid_stride && v > fu_block_axis_limit(l->ptype)) {
        fu_error(diag, l->loc, "axis '%s' has %lld iterations, more than the %lld blocks a launch may have along %s",
                 an, (long long)v, (long long)fu_block_axis_limit(l->ptype), fu_ptype_name(l->ptype));
        fu_note(diag, l->loc, "bind it '%s: %s {grid=stride}' for a grid-stride loop", an, fu_ptype_name(l->ptype));
        ok = false;
      }
      break;
    case FU_PT_CLUSTER_X: {
      uint32_t sm = fu_arch_sm(s->arch);
      if (!c || (v != 2 && v != 4 && v != 8)) {
        fu_error(diag, l->loc, "axis '%s' bound to cluster.x needs a constant extent of 2, 4 or 8 blocks", an);
        ok = false;
      }
      if (s->persist == FU_PM_NONE || s->reduce != FU_RM_BLOCK) {
        fu_error(diag, l->loc, "cluster.x is for the row of a persistent schedule with reduce=block");
        ok = false;
      }
      if (sm < 90) {
        fu_error(diag, l->loc, "cluster.x needs thread-block clusters: arch=sm_90 or later, not %s",
                 s->arch ? s->arch : "the default");
        ok = false;
      }
      break;
    }
    case FU_PT_UNROLL:
      if (!c || v < 1 || v > 64) {
        fu_error(diag, l->loc, "the unrolled axis '%s' needs a constant extent between 1 and 64", an);
        ok = false;
      }
      break;
    default: break;
    }
  }
  if (threads > 1024) {
    fu_error(diag, s->loc, "the block has %lld threads; the limit is 1024", (long long)threads);
    ok = false;
  }
  /* stores one to one: an output reached only through a pad's or cat's
   * clamped coordinate would see some elements twice and others never */
  for (uint32_t i = 0; i < fu_igraph_num_accesses(g); i++) {
    const fu_iaccess *a = fu_igraph_access(g, i);
    if (!a->is_store || !fu_igraph_names_clamp(g, a->offset)) continue;
    fu_error(diag, s->loc,
             "'%%%s' is stored at a clamped coordinate of a pad or cat operand: the loops do not reach each of its "
             "elements once (it belongs in another segment)",
             a->value->name ? a->value->name : "?");
    ok = false;
  }
  /* vector accesses */
  int32_t vl = fu_schedule_loop_of(s, FU_PT_VECTORIZE);
  int64_t width = 1;
  fu_igraph_lane_var(g, &width);
  if (ok && vl >= 0 && width > 1) {
    for (uint32_t i = 0; i < fu_igraph_num_accesses(g); i++) {
      const fu_iaccess *a = fu_igraph_access(g, i);
      const fu_stensor *t = fu_schedule_tensor(s, a->value);
      if (t && t->access == FU_ACCESS_SCALAR) continue;
      if (a->mode == FU_AM_VECTOR || a->mode == FU_AM_UNIFORM) continue;
      if (!a->is_store && fu_igraph_names_lanewise(g, a->offset)) continue; /* through a pad's or cat's clamp */
      if (a->mode == FU_AM_UNIFORM && a->is_store) continue;
      fu_loc loc = t ? t->loc : s->loops[vl].loc;
      fu_error(diag, loc, "cannot vectorize %s of '%%%s' along axis '%s' (width %lld): %s",
               a->is_store ? "the store" : "a load", a->value->name ? a->value->name : "?",
               s->axes[s->loops[vl].axis].name, (long long)width, a->why_not_vector ? a->why_not_vector : "not contiguous");
      if (!t) fu_note(diag, s->loc, "mark it 'tensor %%%s {memory=global, access=scalar}' to access it element by element",
                      a->value->name ? a->value->name : "?");
      ok = false;
    }
  }
  /* a peel is computed from its tensor's vector load along the lane */
  const fu_value *pv = NULL;
  if (ok && fu_igraph_peel_var(g, &pv) && pv) {
    const char *why = "it is not read along the vector";
    bool vec = false;
    const fu_ix *first = NULL;
    fu_ix_ctx *ixc = fu_igraph_ix(g);
    for (uint32_t i = 0; i < fu_igraph_num_accesses(g); i++) {
      const fu_iaccess *a = fu_igraph_access(g, i);
      if (a->value != pv || a->is_store) continue;
      if (a->mode == FU_AM_VECTOR && first) {
        /* the shift aligns the first vector load's index; another one must
         * lie a whole number of vectors from it */
        int64_t d = 0;
        const fu_ix *back = fu_ix_mul(ixc, first, fu_ix_const(ixc, -1));
        const fu_ix *diff = fu_ix_simplify_linear(ixc, fu_ix_add(ixc, a->offset, back));
        if (!fu_ix_is_const(diff, &d) || d % width != 0) {
          vec = false;
          why = "it is read at two places along the vector that the one shift cannot both align";
          break;
        }
      }
      if (a->mode == FU_AM_VECTOR && !first) first = a->offset;
      vec |= a->mode == FU_AM_VECTOR;
      if (a->mode == FU_AM_UNIFORM) why = "it is the same element in every lane";
      else if (a->why_not_vector) why = a->why_not_vector;
    }
    const fu_stensor *t = fu_schedule_tensor(s, pv);
    if (!vec) {
      fu_error(diag, t ? t->loc : s->loc, "the peeled split cannot align '%%%s': %s", pv->name ? pv->name : "?", why);
      ok = false;
    }
  }
  if (s->index_dtype == FU_DT_I32 && fu_igraph_index_dtype(g) == FU_DT_I64) {
    bool all_const = true;
    for (uint32_t a = 0; a < s->n_axes; a++)
      if (!fu_ix_is_const(fu_igraph_axis_extent(g, a), NULL)) all_const = false;
    if (all_const) {
      fu_error(diag, s->loc, "index=i32, but a tensor or loop index of this segment reaches 2^31: use index=i64");
      ok = false;
    }
  }
  fu_igraph_free(g);
  return ok;
}

/* `access=tile` is the transpose lowering's: only in a transpose segment,
 * and only with the tile form it stages through shared memory. */
static bool verify_tile(const fu_op *seg, const fu_schedule *s, fu_diag_engine *diag) {
  if (!fu_schedule_has_tile(s)) return true;
  if (seg->u.segment.kind != FU_SK_TRANSPOSE) {
    fu_error(diag, s->loc, "'access=tile' is for transpose segments; '@%s' is a %s segment", seg_name(seg),
             fu_sched_kind_name(seg->u.segment.kind));
    return false;
  }
  fu_transpose_tile t;
  return fu_schedule_transpose_tile(s, &t, diag);
}

/* `tail=peel` (docs/ir.md, "Peeled vector splits"): one split, whose inner
 * axis is the vectorize loop, in a reduction segment (the lowering that
 * binds the shift), aligning exactly one segment input: the tensor with
 * access=vector, from whose address and run start the shift is computed. */
static bool verify_peel(const fu_op *seg, const fu_schedule *s, fu_diag_engine *diag) {
  const fu_sxform *peel = NULL;
  bool ok = true;
  for (uint32_t t = 0; t < s->n_xforms; t++) {
    const fu_sxform *x = &s->xforms[t];
    if (x->kind != FU_SX_SPLIT || x->tail != FU_TAIL_PEEL) continue;
    if (peel) {
      fu_error(diag, x->loc, "a second split with tail=peel: a schedule peels one axis");
      fu_note(diag, peel->loc, "the first is here");
      return false;
    }
    peel = x;
  }
  if (!peel) return true;
  int32_t vl = fu_schedule_loop_of(s, FU_PT_VECTORIZE);
  if (vl < 0 || s->loops[vl].axis != peel->out[1]) {
    fu_error(diag, peel->loc, "the split of '%s' has tail=peel, but its inner axis '%s' is not the vectorize axis",
             s->axes[peel->in[0]].name, s->axes[peel->out[1]].name);
    return false;
  }
  if (seg->u.segment.kind != FU_SK_REDUCTION) {
    fu_error(diag, peel->loc, "tail=peel is lowered in reduction segments only; '@%s' is a %s segment", seg_name(seg),
             fu_sched_kind_name(seg->u.segment.kind));
    return false;
  }
  const fu_stensor *vec = NULL;
  for (uint32_t i = 0; i < s->n_tensors; i++) {
    const fu_stensor *t = &s->tensors[i];
    if (t->access != FU_ACCESS_VECTOR) continue;
    if (vec) {
      fu_error(diag, t->loc, "a peeled split aligns one tensor, but '%%%s' is access=vector too",
               t->value->name ? t->value->name : "?");
      fu_note(diag, vec->loc, "the first is here");
      ok = false;
    } else if (!fu_segment_has_input(seg, t->value)) {
      fu_error(diag, t->loc, "a peeled split aligns the loads of a segment input; '%%%s' is not one",
               t->value->name ? t->value->name : "?");
      ok = false;
    }
    vec = vec ? vec : t;
  }
  if (!vec) {
    fu_error(diag, peel->loc,
             "the split of '%s' has tail=peel, but no tensor has access=vector: name the input whose vectors it aligns",
             s->axes[peel->in[0]].name);
    ok = false;
  }
  return ok;
}

fu_status fu_schedule_verify(fu_fusion *f, fu_op *seg, const fu_schedule *s, fu_diag_engine *diag) {
  if (!f || !seg || !s || seg->kind != FU_OP_SEGMENT) return FU_ERR_INVALID_ARG;
  if (!s->reference) {
    fu_error(diag, s->loc, "the schedule has no reference");
    return FU_ERR_VERIFY;
  }
  /* A recorded kind must be the segment's: a segment re-kinded by hand (or
   * a schedule pasted into another segment) would otherwise keep a
   * schedule made for something else.  No kind recorded: a hand-written
   * schedule, accepted for any segment the lowering can handle. */
  if (s->kind != FU_SK_NONE && s->kind != seg->u.segment.kind) {
    fu_error(diag, s->loc, "the schedule was made for a %s segment, but segment '@%s' is a %s segment",
             fu_sched_kind_name(s->kind), seg_name(seg), fu_sched_kind_name(seg->u.segment.kind));
    return FU_ERR_VERIFY;
  }
  if (s->reference->type.rank < 0) {
    fu_error(diag, s->loc, "the reference must be a tensor");
    return FU_ERR_VERIFY;
  }
  if (!verify_structure(seg, s, diag)) return FU_ERR_VERIFY;
  if (!fu_schedule_reduction_check(seg, s, diag)) return FU_ERR_VERIFY;
  if (!verify_tile(seg, s, diag)) return FU_ERR_VERIFY;
  if (!verify_peel(seg, s, diag)) return FU_ERR_VERIFY;
  return verify_indexing(f, seg, s, diag) ? FU_OK : FU_ERR_VERIFY;
}

fu_status fu_schedule_verify_fusion(fu_fusion *f, fu_diag_engine *diag) {
  fu_status st = FU_OK;
  for (fu_op *op = fu_walk_first(&f->body); op; op = fu_walk_next(op)) {
    if (op->kind != FU_OP_SEGMENT || !op->u.segment.schedule) continue;
    fu_status s2 = fu_schedule_verify(f, op, op->u.segment.schedule, diag);
    if (s2 != FU_OK && st == FU_OK) st = s2;
  }
  return st;
}

