/* fuser: the reduction structure of a reduction schedule: which schedule
 * axes are reduced, and whether the loop bindings fit the schedule's
 * `reduce=` combine (include/fuser/schedule.h).  Shared by the schedule
 * verifier and the reduction lowering, so the two agree on what a
 * reduction schedule may say. */
#include <string.h>

#include "fuser/schedule.h"

static const char *seg_name(const fu_op *seg) { return seg->u.segment.name ? seg->u.segment.name : "?"; }

void fu_reduction_dims(const fu_op *op, bool *red) {
  int32_t rank = op->operands[0]->type.rank;
  memset(red, 0, (size_t)FU_MAX_RANK * sizeof *red);
  for (uint32_t i = 0; i < op->u.reduce.axes.n; i++) {
    int64_t a = op->u.reduce.axes.v[i];
    if (a < 0) a += rank;
    if (a >= 0 && a < rank) red[a] = true;
  }
}

/* Collects the segment's reductions and marks the reduced dims of their
 * common operand domain, then propagates the marks through the schedule's
 * transforms.  A schedule must not merge a reduced axis with a kept one:
 * the lowering keeps the two loop nests apart. */
bool fu_schedule_reduction(const fu_op *seg, const fu_schedule *s, fu_reduction_info *ri, fu_diag_engine *diag) {
  bool *ra = ri->reduced_axis;
  memset(ri, 0, sizeof *ri);
  ri->reduced_axis = ra;
  const fu_block *body = seg->u.segment.body;
  for (const fu_op *op = body ? body->first : NULL; op; op = op->next) {
    if (!fu_op_has(op->kind, FU_OF_REDUCTION)) continue;
    if (ri->n_ops == FU_MAX_SEG_REDUCTIONS) {
      fu_error(diag, op->loc, "segment '@%s' has more than %d reductions", seg_name(seg), FU_MAX_SEG_REDUCTIONS);
      return false;
    }
    const fu_value *x = op->operands[0];
    bool red[FU_MAX_RANK];
    fu_reduction_dims(op, red);
    if (ri->n_ops == 0) {
      memcpy(ri->reduced_dim, red, sizeof red);
    } else if (!fu_type_same_shape(&x->type, &ri->ops[0]->operands[0]->type) ||
               memcmp(red, ri->reduced_dim, sizeof red) != 0) {
      fu_error(diag, op->loc, "the reductions of segment '@%s' must reduce the same axes of the same domain",
               seg_name(seg));
      return false;
    }
    ri->ops[ri->n_ops++] = op;
  }
  if (!ri->n_ops) {
    fu_error(diag, s->loc, "segment '@%s' has no reduction for a reduction schedule", seg_name(seg));
    return false;
  }
  if (!fu_type_same_shape(&s->reference->type, &ri->ops[0]->operands[0]->type)) {
    fu_error(diag, s->loc, "the reference of a reduction schedule must have the shape of the reduction's operand");
    return false;
  }
  for (uint32_t a = 0; a < s->n_axes; a++)
    if (s->axes[a].ref_dim >= 0) ra[a] = ri->reduced_dim[s->axes[a].ref_dim];
  for (uint32_t i = 0; i < s->n_xforms; i++) {
    const fu_sxform *x = &s->xforms[i];
    if (x->kind == FU_SX_SPLIT) {
      ra[x->out[0]] = ra[x->out[1]] = ra[x->in[0]];
      continue;
    }
    if (ra[x->in[0]] != ra[x->in[1]]) {
      fu_error(diag, x->loc, "merge of reduced axis '%s' with kept axis '%s'", s->axes[x->in[ra[x->in[0]] ? 0 : 1]].name,
               s->axes[x->in[ra[x->in[0]] ? 1 : 0]].name);
      return false;
    }
    ra[x->out[0]] = ra[x->in[0]];
  }
  return true;
}

/* The constant extent of a thread axis: the inner factor of a split, or a
 * constant dim of the reference; 0 when unknown. */
static int64_t const_extent(const fu_schedule *s, uint32_t a) {
  if (s->axes[a].ref_dim >= 0) {
    fu_extent e = s->reference->type.dims[s->axes[a].ref_dim];
    return fu_extent_is_const(e) ? e.value : 0;
  }
  const fu_sxform *x = s->axes[a].def >= 0 ? &s->xforms[s->axes[a].def] : NULL;
  return x && x->kind == FU_SX_SPLIT && x->out[1] == a ? x->factor : 0;
}

/* The constant extent of any axis (through splits, outer parts included,
 * and merges); 0 when unknown. */
static int64_t any_extent(const fu_schedule *s, uint32_t a) {
  if (s->axes[a].ref_dim >= 0) return const_extent(s, a);
  const fu_sxform *x = s->axes[a].def >= 0 ? &s->xforms[s->axes[a].def] : NULL;
  if (!x) return 0;
  int64_t in = any_extent(s, x->in[0]);
  if (x->kind == FU_SX_MERGE) return in * any_extent(s, x->in[1]);
  return x->out[1] == a ? x->factor : in > 0 ? (in + x->factor - 1) / x->factor : 0;
}

bool fu_persist_chunks(const fu_schedule *s, const bool *ra, int64_t *threads, int64_t *chunks, int64_t *lanes) {
  *threads = *chunks = *lanes = 1;
  bool tx = false;
  for (uint32_t i = 0; i < s->n_loops; i++) {
    const fu_sloop *l = &s->loops[i];
    if (!ra[l->axis]) continue;
    int64_t e = any_extent(s, l->axis);
    if (e <= 0) return false;
    if (l->ptype == FU_PT_THREAD_X) *threads *= e, tx = true;
    else if (l->ptype == FU_PT_UNROLL) *chunks *= e;
    else if (l->ptype == FU_PT_VECTORIZE) *lanes *= e;
    else return false;
  }
  return tx;
}

/* keep= on staged input t (persist=smem): a row of threadIdx.x, unroll
 * and vectorize loops of constant extent, exact (each thread's part is
 * whole chunks), at most 64 chunks a thread, fewer kept than there are.
 * *kept: the elements of a row kept in registers. */
static bool keep_check(const fu_schedule *s, const bool *ra, const fu_stensor *t, int64_t row, int64_t *kept,
                       fu_diag_engine *diag) {
  int64_t threads, chunks, lanes;
  const char *nm = t->value->name ? t->value->name : "?";
  if (!fu_persist_chunks(s, ra, &threads, &chunks, &lanes)) {
    fu_error(diag, t->loc,
             "keep=%d on '%%%s' needs the row's loops to be threadIdx.x, unroll and vectorize loops of constant extent",
             (int)t->keep, nm);
    return false;
  }
  if (threads * chunks * lanes != row || chunks > 64 || t->keep >= chunks) {
    fu_error(diag, t->loc,
             "keep=%d on '%%%s': a thread's part of the row is %lld chunk(s) of %lld element(s) at %lld threads (a "
             "row of %lld), and keep= needs them to cover the row exactly, at most 64, more than it keeps",
             (int)t->keep, nm, (long long)chunks, (long long)lanes, (long long)threads, (long long)row);
    return false;
  }
  *kept = (int64_t)t->keep * threads * lanes;
  return true;
}

/* persist=smem: a constant row, at least one staged input, and the
 * staged rows (less the chunks keep= holds in registers) with the
 * reductions' slots within the shared memory a block may have on the
 * device the schedule names (when it names a preset, by device or arch). */
static bool smem_check(const fu_op *seg, const fu_schedule *s, const bool *ra, const fu_reduction_info *ri,
                       fu_diag_engine *diag) {
  int64_t row = 1, rows = 1, threads = 1, staged = 0;
  const fu_value *ref = s->reference;
  for (int32_t d = 0; d < ref->type.rank; d++) {
    if (!ri->reduced_dim[d]) continue;
    if (!fu_extent_is_const(ref->type.dims[d])) {
      fu_error(diag, s->loc, "persist=smem needs rows of constant length, and dim %d of '%%%s' is symbolic", (int)d,
               ref->name ? ref->name : "?");
      return false;
    }
    row *= ref->type.dims[d].value;
  }
  for (uint32_t i = 0; i < s->n_loops; i++) {
    const fu_sloop *l = &s->loops[i];
    if (l->ptype != FU_PT_THREAD_X && l->ptype != FU_PT_THREAD_Y) continue;
    threads *= const_extent(s, l->axis);
    if (l->ptype == FU_PT_THREAD_Y && !ra[l->axis]) rows = const_extent(s, l->axis);
  }
  uint32_t n = 0;
  for (uint32_t i = 0; i < s->n_tensors; i++)
    if (s->tensors[i].memory == FU_MEM_SHARED) {
      int64_t kept = 0;
      if (s->tensors[i].keep > 0 && !keep_check(s, ra, &s->tensors[i], row, &kept, diag)) return false;
      staged += fu_persist_stage_bytes(s->tensors[i].value->type.dtype, rows, row - kept);
      n++;
    }
  if (!n) {
    fu_error(diag, s->loc, "persist=smem stages no input of segment '@%s': name one 'tensor %%X {memory=shared}'",
             seg_name(seg));
    return false;
  }
  fu_device dev;
  int64_t slots = fu_persist_slot_bytes(ri->n_ops, threads);
  if (fu_persist_device(s, &dev) && staged + slots > (int64_t)dev.smem_per_block) {
    fu_error(diag, s->loc,
             "persist=smem needs %lld bytes of shared memory per block (%lld for %u staged row(s) of %lld "
             "elements, at most %lld for the reductions' slots), more than the %u bytes a block may have on %s",
             (long long)(staged + slots), (long long)staged, n * (unsigned)rows, (long long)row, (long long)slots,
             dev.smem_per_block, dev.name);
    return false;
  }
  return true;
}

uint32_t fu_segment_partial_sums(const fu_op *seg, const fu_op **ops, uint32_t cap) {
  uint32_t n = 0;
  for (const fu_op *op = seg->u.segment.body ? seg->u.segment.body->first : NULL; op; op = op->next)
    if (op->kind == FU_OP_PARTIAL_SUM) {
      if (ops && n < cap) ops[n] = op;
      n++;
    }
  return n;
}

/* What a persistent schedule adds to a reduction schedule's rules: it
 * says where rows stay (persist=), combines within a block (no
 * reduce=grid: a row's passes need its statistic in every thread), keeps
 * no kept axis in a serial loop (the passes run once per row), except one
 * where the segment has partial sums (its blocks loop over rows, with
 * persist=registers and one row per block: no kept threadIdx.y), and with
 * persist=registers its reduced loops besides threadIdx.x are unroll and
 * vectorize only, at most FU_PERSIST_MAX_CACHED elements per thread;
 * persist=smem adds smem_check's rules.  A row split over a cluster's
 * blocks (cluster.x) keeps each block's part in registers. */
static bool persistent_check(const fu_op *seg, const fu_schedule *s, const bool *ra, const fu_reduction_info *ri,
                             fu_diag_engine *diag) {
  if (s->persist == FU_PM_NONE) {
    fu_error(diag, s->loc,
             "the schedule of persistent segment '@%s' must say where rows stay: persist=registers, smem or reread",
             seg_name(seg));
    return false;
  }
  if (s->reduce == FU_RM_GRID) {
    fu_error(diag, s->loc, "persistent segment '@%s' cannot combine across blocks: reduce=grid", seg_name(seg));
    return false;
  }
  int64_t cached = 1;
  bool partial = fu_segment_partial_sums(seg, NULL, 0) > 0;
  uint32_t kept_loops = 0;
  for (uint32_t i = 0; i < s->n_loops; i++) {
    const fu_sloop *l = &s->loops[i];
    const char *an = s->axes[l->axis].name;
    bool serial = l->ptype == FU_PT_SERIAL || l->ptype == FU_PT_UNROLL || l->ptype == FU_PT_VECTORIZE;
    if (l->ptype == FU_PT_CLUSTER_X && (s->persist != FU_PM_REGISTERS || partial)) {
      fu_error(diag, l->loc,
               "axis '%s' splits the row over a cluster's blocks, which needs persist=registers and no partial sums",
               an);
      return false;
    }
    if (partial && !ra[l->axis] && l->ptype == FU_PT_THREAD_Y) {
      fu_error(diag, l->loc, "kept axis '%s' is on threadIdx.y, and a segment with partial sums takes one row per block",
               an);
      return false;
    }
    if (partial && !ra[l->axis] && l->ptype == FU_PT_SERIAL && kept_loops++ == 0) {
      if (s->persist != FU_PM_REGISTERS) {
        fu_error(diag, l->loc, "kept axis '%s' is a loop over rows, which needs persist=registers", an);
        return false;
      }
      continue;
    }
    if (!ra[l->axis] && serial) {
      fu_error(diag, l->loc, "kept axis '%s' of a persistent schedule is a loop: kept axes are blocks or threads", an);
      return false;
    }
    if (!ra[l->axis] || s->persist != FU_PM_REGISTERS || !serial) continue;
    if (l->ptype == FU_PT_SERIAL) {
      fu_error(diag, l->loc, "persist=registers needs reduced axis '%s' to be unroll or vectorize, not serial", an);
      return false;
    }
    int64_t e = any_extent(s, l->axis);
    /* e is at most 64 (unroll) or 16 (vectorize), checked by the verifier;
     * the product stops growing once over the limit */
    if (cached <= FU_PERSIST_MAX_CACHED) cached *= e > 0 ? e : FU_PERSIST_MAX_CACHED + 1;
  }
  if (s->persist == FU_PM_SMEM) return smem_check(seg, s, ra, ri, diag);
  if (cached > FU_PERSIST_MAX_CACHED) {
    fu_error(diag, s->loc, "persist=registers keeps %lld elements of a row per thread, more than %d",
             (long long)cached, FU_PERSIST_MAX_CACHED);
    return false;
  }
  return true;
}

bool fu_schedule_reduction_check(const fu_op *seg, const fu_schedule *s, fu_diag_engine *diag) {
  bool persistent = seg->u.segment.kind == FU_SK_PERSISTENT;
  bool is_red = seg->u.segment.kind == FU_SK_REDUCTION || persistent;
  if (!persistent && s->persist != FU_PM_NONE) {
    fu_error(diag, s->loc, "'persist=' is for persistent segments, and segment '@%s' is a %s segment", seg_name(seg),
             fu_sched_kind_name(seg->u.segment.kind));
    return false;
  }
  if (s->online && !persistent) {
    fu_error(diag, s->loc, "'online=' is for persistent segments, and segment '@%s' is a %s segment", seg_name(seg),
             fu_sched_kind_name(seg->u.segment.kind));
    return false;
  }
  if (s->online && fu_online_softmax_pairs(seg) == 0) {
    fu_error(diag, s->loc,
             "online=true, but segment '@%s' has no sum of exp(x - max(x)) over the max's axes to fold with its max",
             seg_name(seg));
    return false;
  }
  if (!is_red && s->reduce == FU_RM_NONE) return true;
  if (!is_red) {
    fu_error(diag, s->loc, "'reduce=' is for reduction segments, and segment '@%s' is a %s segment", seg_name(seg),
             fu_sched_kind_name(seg->u.segment.kind));
    return false;
  }
  if (s->reduce == FU_RM_NONE) {
    fu_error(diag, s->loc,
             "the schedule of %s segment '@%s' must say how it combines: reduce=serial, warp, block or grid",
             fu_sched_kind_name(seg->u.segment.kind), seg_name(seg));
    return false;
  }
  bool ra[256];
  if (s->n_axes > 256) return false;
  fu_reduction_info ri = {.reduced_axis = ra};
  memset(ra, 0, sizeof ra);
  if (!fu_schedule_reduction(seg, s, &ri, diag)) return false;
  if (persistent && !persistent_check(seg, s, ra, &ri, diag)) return false;
  bool ok = true, in_reduction = false, on_tx = false, on_by = false, tx_red = false;
  /* red_bx: an inner grid reduction whose reduced chunks are on
   * blockIdx.x and kept rows on blockIdx.y (the blocks sweep a row's
   * chunks in order, docs/ir.md) */
  bool red_bx = false;
  for (uint32_t i = 0; i < s->n_loops; i++) {
    if (s->loops[i].ptype == FU_PT_THREAD_X && ra[s->loops[i].axis]) tx_red = true;
    if (s->loops[i].ptype == FU_PT_BLOCK_X && ra[s->loops[i].axis]) red_bx = true;
  }
  red_bx = red_bx && tx_red && s->reduce == FU_RM_GRID;
  for (uint32_t i = 0; i < s->n_loops; i++) {
    const fu_sloop *l = &s->loops[i];
    const char *an = s->axes[l->axis].name;
    bool r = ra[l->axis];
    bool par = l->ptype != FU_PT_SERIAL && l->ptype != FU_PT_UNROLL && l->ptype != FU_PT_VECTORIZE;
    if (r && (l->ptype == FU_PT_BLOCK_Y || (red_bx && l->ptype == FU_PT_BLOCK_X)) && s->reduce == FU_RM_GRID) {
      if (on_by) {
        fu_error(diag, l->loc, "reduce=grid: a second reduced axis '%s' on a block index", an);
        ok = false;
      }
      on_by = true;
    } else if (r && l->ptype == FU_PT_THREAD_Y && !tx_red &&
               (s->reduce == FU_RM_BLOCK || s->reduce == FU_RM_GRID)) {
      /* an outer reduction: columns on threadIdx.x, rows combined across threadIdx.y */
      on_tx = true;
      if (const_extent(s, l->axis) < 2) {
        fu_error(diag, l->loc, "reduce=%s needs reduced axis '%s' on threadIdx.y to have a constant extent of 2 or more",
                 fu_reduce_mode_name(s->reduce), an);
        ok = false;
      }
    } else if (r && (l->ptype == FU_PT_BLOCK_X || l->ptype == FU_PT_BLOCK_Y || l->ptype == FU_PT_THREAD_Y)) {
      fu_error(diag, l->loc,
               "reduced axis '%s' is on %s: a reduced axis may be on threadIdx.x, threadIdx.y (reduce=block|grid, "
               "threadIdx.x kept), blockIdx.y (reduce=grid) or blockIdx.x (reduce=grid, the row on threadIdx.x)",
               an, fu_ptype_name(l->ptype));
      ok = false;
    }
    if (l->ptype == FU_PT_CLUSTER_X && (!r || !persistent || !tx_red)) {
      fu_error(diag, l->loc,
               "axis '%s' is on cluster.x: only a reduced axis of a persistent schedule whose row is also on "
               "threadIdx.x may be split across a cluster's blocks",
               an);
      ok = false;
    }
    if (!r && l->ptype == FU_PT_BLOCK_Y && s->reduce == FU_RM_GRID && !red_bx) {
      fu_error(diag, l->loc, "reduce=grid keeps blockIdx.y for the reduced axis, and kept axis '%s' is on it", an);
      ok = false;
    }
    if (!r && l->ptype == FU_PT_THREAD_Y && s->reduce == FU_RM_GRID) {
      fu_error(diag, l->loc, "reduce=grid: kept axis '%s' on threadIdx.y (one row per block)", an);
      ok = false;
    }
    /* a kept vectorize axis (innermost, as for every schedule) gives each
     * thread adjacent outputs, one state each: outer reductions load them
     * as one vector along the kept, contiguous axis */
    if (!r && l->ptype == FU_PT_VECTORIZE && tx_red) {
      fu_error(diag, l->loc,
               "kept axis '%s' of a reduction is vectorized, but a reduced axis is on threadIdx.x: only an outer "
               "reduction (reduced axes on threadIdx.y or serial) may vectorize a kept axis",
               an);
      ok = false;
    }
    if (r && !par) in_reduction = true;
    if (!r && !par && in_reduction && l->ptype != FU_PT_VECTORIZE) {
      fu_error(diag, l->loc, "kept axis '%s' is inside the reduction's serial loops: put it before them", an);
      ok = false;
    }
    if (r && l->ptype == FU_PT_THREAD_X) {
      on_tx = true;
      int64_t e = const_extent(s, l->axis);
      if (s->reduce == FU_RM_SERIAL) {
        fu_error(diag, l->loc, "reduce=serial, but reduced axis '%s' is on threadIdx.x", an);
        ok = false;
      } else if (s->reduce == FU_RM_WARP && (e < 2 || e > 32 || (e & (e - 1)) != 0)) {
        fu_error(diag, l->loc, "reduce=warp needs reduced axis '%s' on threadIdx.x to have an extent of 2, 4, 8, 16 or 32",
                 an);
        ok = false;
      } else if ((s->reduce == FU_RM_BLOCK || s->reduce == FU_RM_GRID) && (e < 64 || e % 32 != 0)) {
        fu_error(diag, l->loc, "reduce=%s needs reduced axis '%s' on threadIdx.x to have an extent of 64 or more, a "
                               "multiple of 32", fu_reduce_mode_name(s->reduce), an);
        ok = false;
      }
    }
  }
  if (ok && s->reduce == FU_RM_GRID && !on_by) {
    fu_error(diag, s->loc, "reduce=grid, but no reduced axis is on blockIdx.y");
    ok = false;
  }
  if (ok && s->reduce != FU_RM_SERIAL && !on_tx) {
    fu_error(diag, s->loc, "reduce=%s, but no reduced axis is on threadIdx.x%s", fu_reduce_mode_name(s->reduce),
             s->reduce == FU_RM_WARP ? "" : " or threadIdx.y");
    ok = false;
  }
  return ok;
}

/* From 32 rows of a sum: [262144, 64].sum(0) (32 rows of 4 lanes, walked
 * twice) compiles in 36% fewer instructions in a tree and ran 1.2% slower
 * on the H100 (31.9 us against 31.5), the norm backward weights 0.1-0.2%;
 * the unrolled walk of 32 rows was the compile time's largest part.  From
 * 8 rows of a Welford state, whose combines cost several times a sum's:
 * the serial walk of 16 rows of four lanes (an NHWC batch norm's
 * statistics) ran as one half warp a block while the others waited at the
 * barrier. */
bool fu_reduction_rows_fold(uint32_t rows, bool welford) {
  return rows >= (welford ? 8u : 32u) && (rows & (rows - 1)) == 0;
}
