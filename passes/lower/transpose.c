/* fuser: lowering a transpose segment.
 *
 * A schedule without `access=tile` tensors is a pointwise schedule (the
 * transpose scheduler's choice when no tile pays): the pointwise lowering.
 * With them, the schedule has a tile (fu_transpose_tile: reference dims I
 * and J split by T, T x Y threads, T / Y rows each) and the kernel is
 *
 *   outer loops (blockIdx, grid-stride, serial) {
 *     phase 1, swapped (il = tx, jl = u*Y + ty), for u in [0, T/Y) unrolled:
 *       if (in range) tile_X[jl][il] = X[...]     for each tiled load of X
 *     sync
 *     phase 2, reference order (il = u*Y + ty, jl = tx), for u unrolled:
 *       if (in range) { X = tile_X[jl][il]; evaluate the outputs;
 *                       direct outputs stored, tiled ones: tile_O[jl][il] = O }
 *     sync
 *     phase 3, swapped, for u unrolled:
 *       if (in range) O[...] = tile_O[jl][il]     for each tiled output O
 *     sync                                         (when the outer loops loop)
 *   }
 *
 * Consecutive threads (tx) thus walk J in phase 2, where the reference and
 * every tensor contiguous along J are accessed, and I in phases 1 and 3,
 * where the tiled tensors are.  Tiles are T x (T + 1) elements: the row
 * padding puts the column walks of phase 2 (stride T + 1) on distinct
 * banks, and the row walks of phases 1 and 3 are consecutive.  A load is
 * tiled when its tensor is marked access=tile and its offset has stride 1
 * along il and varies along jl; other loads are made in phase 2 directly.
 *
 * Indices come from the index graph of a derived schedule: the segment's
 * schedule without the split of il, whose loops are the outer loops and
 * then il and jl as plain loops.  Every offset and predicate is thus an
 * expression in il and jl, which each phase binds to its own thread
 * mapping (fu_pwl_bind).  Values are evaluated by the pointwise lowering's
 * evaluator (pointwise_internal.h), the staged loads put in its memo. */
#include <stdio.h>
#include <string.h>

#include "fuser/index_graph.h"
#include "fuser/lower.h"
#include "fuser/schedule.h"
#include "pointwise_internal.h"

enum { MAX_TILES = 32 };

typedef struct tl {
  fu_transpose_tile t;
  const fu_ix *il, *jl; /* the derived graph's tile variables */
  fu_kval *tx, *ty;
  bool loops;           /* an outer loop repeats the tile body */
  /* tiled loads: (value, coordinates, offset) and their tiles */
  struct {
    const fu_value *v;
    const fu_ix *const *c;
    const fu_ix *off;
    fu_kval *tile;
  } in[MAX_TILES], out[MAX_TILES];
  uint32_t n_in, n_out;
} tl;

static const char *vname(const fu_value *v) { return v && v->name ? v->name : "?"; }

/* The derived schedule: s without the split of il (and its axes u and y),
 * loops [outer..., il, jl] with il and jl serial.  Storage from alloc,
 * released by free_derived. */
static bool derive(fu_allocator *a, const fu_schedule *s, const fu_transpose_tile *t, fu_schedule *d) {
  *d = *s;
  d->axes = fu_mem_calloc(a, s->n_axes, sizeof *d->axes);
  d->xforms = fu_mem_calloc(a, s->n_xforms ? s->n_xforms : 1, sizeof *d->xforms);
  d->loops = fu_mem_calloc(a, t->n_outer + 2, sizeof *d->loops);
  uint32_t *amap = fu_mem_calloc(a, s->n_axes, sizeof *amap), *xmap = fu_mem_calloc(a, s->n_xforms + 1, sizeof *xmap);
  bool ok = d->axes && d->xforms && d->loops && amap && xmap;
  uint32_t na = 0, nx = 0;
  for (uint32_t i = 0; ok && i < s->n_xforms; i++) xmap[i] = i == t->xform_il ? UINT32_MAX : nx++;
  for (uint32_t i = 0; ok && i < s->n_axes; i++) {
    if (t->xform_il != UINT32_MAX && (i == t->axis_u || i == t->axis_y)) {
      amap[i] = UINT32_MAX;
      continue;
    }
    amap[i] = na;
    d->axes[na] = s->axes[i];
    if (d->axes[na].def >= 0) d->axes[na].def = (int32_t)xmap[d->axes[na].def];
    na++;
  }
  for (uint32_t i = 0; ok && i < s->n_xforms; i++) {
    if (xmap[i] == UINT32_MAX) continue;
    fu_sxform x = s->xforms[i];
    x.in[0] = amap[x.in[0]];
    if (x.kind == FU_SX_MERGE) x.in[1] = amap[x.in[1]];
    x.out[0] = amap[x.out[0]];
    if (x.kind == FU_SX_SPLIT) x.out[1] = amap[x.out[1]];
    d->xforms[xmap[i]] = x;
  }
  for (uint32_t i = 0; ok && i < t->n_outer; i++) {
    d->loops[i] = s->loops[i];
    d->loops[i].axis = amap[s->loops[i].axis];
  }
  if (ok) {
    d->loops[t->n_outer] = (fu_sloop){amap[t->axis_il], FU_PT_SERIAL, false, s->loc};
    d->loops[t->n_outer + 1] = (fu_sloop){amap[t->axis_jl], FU_PT_SERIAL, false, s->loc};
  }
  d->n_axes = na;
  d->n_xforms = nx;
  d->n_loops = t->n_outer + 2;
  if (amap) fu_mem_free(a, amap, s->n_axes * sizeof *amap);
  if (xmap) fu_mem_free(a, xmap, (s->n_xforms + 1) * sizeof *xmap);
  return ok;
}

static void free_derived(fu_allocator *a, const fu_schedule *s, const fu_transpose_tile *t, fu_schedule *d) {
  fu_mem_free(a, d->axes, s->n_axes * sizeof *d->axes);
  fu_mem_free(a, d->xforms, (s->n_xforms ? s->n_xforms : 1) * sizeof *d->xforms);
  fu_mem_free(a, d->loops, (t->n_outer + 2) * sizeof *d->loops);
}

/* Whether an access at `off` of a tensor marked access=tile goes through
 * the tile: stride 1 along il, varying along jl. */
static bool through_tile(const lw *L, const tl *T, const fu_value *v, const fu_ix *off) {
  const fu_stensor *st = fu_schedule_tensor(L->s, v);
  if (!st || st->access != FU_ACCESS_TILE || !off || v->type.dtype == FU_DT_BOOL) return false;
  fu_ix_lane a = fu_ix_lane_analyze(off, T->il, T->t.tile);
  fu_ix_lane b = fu_ix_lane_analyze(off, T->jl, T->t.tile);
  return a.ok && a.stride == 1 && (!b.ok || b.stride != 0);
}

static fu_kval *tile_array(lw *L, const fu_value *v, const char *what) {
  char nm[96];
  snprintf(nm, sizeof nm, "tile_%s%s", vname(v), what);
  int64_t n = ((tl *)L->user)->t.tile * (((tl *)L->user)->t.tile + 1);
  fu_kval *a = fu_kval_new_array(L->m, L->k, nm, v->type.dtype, FU_MEM_SHARED, n);
  if (!a) fu_pwl_oom(L);
  return a;
}

/* Which loads and outputs go through tiles; their shared arrays. */
static bool find_tiles(lw *L, tl *T) {
  for (uint32_t i = 0; i < fu_igraph_num_accesses(L->g); i++) {
    const fu_iaccess *a = fu_igraph_access(L->g, i);
    if (!through_tile(L, T, a->value, a->offset)) continue;
    if ((a->is_store ? T->n_out : T->n_in) == MAX_TILES) {
      fu_error(L->diag, L->s->loc, "more than %d tensors through the transpose tile", MAX_TILES);
      return false;
    }
    if (a->is_store) {
      T->out[T->n_out].v = a->value;
      T->out[T->n_out].c = (const fu_ix *const *)a->coords;
      T->out[T->n_out].off = a->offset;
      if (!(T->out[T->n_out++].tile = tile_array(L, a->value, ""))) return false;
    } else {
      char what[16];
      snprintf(what, sizeof what, T->n_in ? "_%u" : "", T->n_in);
      T->in[T->n_in].v = a->value;
      T->in[T->n_in].c = (const fu_ix *const *)a->coords;
      T->in[T->n_in].off = a->offset;
      if (!(T->in[T->n_in++].tile = tile_array(L, a->value, what))) return false;
    }
  }
  return true;
}

static fu_kval *ibin(lw *L, const char *name, fu_op_kind op, fu_kval *a, fu_kval *b) {
  fu_kval *r = a && b ? fu_kb_binary(&L->b, name, op, L->idx, a, b) : NULL;
  if (!r) fu_pwl_oom(L);
  return r;
}

/* The element [row][col] of a padded tile. */
static fu_kval *tile_index(lw *L, const tl *T, fu_kval *row, fu_kval *col) {
  return ibin(L, NULL, FU_OP_ADD, ibin(L, NULL, FU_OP_MUL, row, fu_pwl_const_idx(L, T->t.tile + 1)), col);
}

typedef enum phase { PH_LOAD, PH_COMPUTE, PH_STORE } phase;

static const char *vfor(const char *base, const fu_value *v, char *buf, size_t cap) {
  snprintf(buf, cap, "%s%s", base, vname(v));
  return buf;
}

/* One row of a phase, inside `if (in range)`, with il and jl bound. */
static void phase_row(lw *L, tl *T, phase ph, fu_kval *row) {
  char nm[96];
  const fu_segment_info *si = &L->seg->u.segment;
  /* tile coordinates: [jl][il] */
  fu_kval *at = ph == PH_COMPUTE ? tile_index(L, T, T->tx, row) : tile_index(L, T, row, T->tx);
  if (!at) return;
  if (ph == PH_LOAD) {
    for (uint32_t i = 0; i < T->n_in && !L->failed; i++) {
      fu_kval *off = fu_pwl_emit_ix(L, T->in[i].off), *x = NULL;
      if (!off || !fu_kb_load(&L->b, vname(T->in[i].v), L->tparam[T->in[i].v->id], off, 1, T->in[i].v->type.dtype, &x) ||
          !fu_kb_store(&L->b, T->in[i].tile, at, &x, 1))
        fu_pwl_oom(L);
    }
    return;
  }
  if (ph == PH_STORE) {
    for (uint32_t i = 0; i < T->n_out && !L->failed; i++) {
      fu_kval *off = fu_pwl_emit_ix(L, T->out[i].off), *x = NULL;
      if (!off || !fu_kb_load(&L->b, vfor("t", T->out[i].v, nm, sizeof nm), T->out[i].tile, at, 1,
                              T->out[i].v->type.dtype, &x) ||
          !fu_kb_store(&L->b, L->tparam[T->out[i].v->id], off, &x, 1))
        fu_pwl_oom(L);
    }
    return;
  }
  fu_pwl_memo_clear(L);
  for (uint32_t i = 0; i < T->n_in && !L->failed; i++) {
    fu_kval *x = NULL;
    if (!fu_kb_load(&L->b, vfor("t", T->in[i].v, nm, sizeof nm), T->in[i].tile, at, 1, T->in[i].v->type.dtype, &x))
      fu_pwl_oom(L);
    else fu_pwl_memo_put(L, T->in[i].v, T->in[i].c, x);
  }
  for (uint32_t i = 0; i < si->n_outputs && !L->failed; i++) {
    const fu_value *o = si->outputs[i];
    const fu_ix *const *c;
    const fu_ix *off;
    if (!fu_pwl_output_at(L, o, &c, &off)) return;
    fu_kval *x = fu_pwl_cast_to(L, fu_pwl_eval(L, o, c), o->type.dtype);
    if (!x) return;
    fu_kval *dst = L->tparam[o->id], *idx = NULL;
    for (uint32_t k = 0; k < T->n_out; k++)
      if (T->out[k].v == o) {
        dst = T->out[k].tile;
        idx = at;
      }
    if (!idx) idx = fu_pwl_emit_ix(L, off);
    if (!idx || !fu_kb_store(&L->b, dst, idx, &x, 1)) fu_pwl_oom(L);
  }
}

/* One phase: for u in [0, T/Y) unrolled, row = u*Y + ty, il and jl bound
 * to (row, tx) or (tx, row), then phase_row under the predicates. */
static void phase_rows(lw *L, tl *T, phase ph) {
  fu_kbuilder outer = L->b;
  uint32_t mark = fu_pwl_scope_mark(L);
  int64_t n_rows = T->t.tile / T->t.rows;
  fu_kval *row = T->ty;
  fu_kinst *lp = NULL;
  if (n_rows > 1) {
    fu_kval *zero = fu_pwl_const_idx(L, 0), *one = fu_pwl_const_idx(L, 1), *end = fu_pwl_const_idx(L, n_rows);
    lp = zero && one && end ? fu_kb_for(&L->b, "u", zero, end, one, FU_LOOP_UNROLL) : NULL;
    if (!lp) {
      fu_pwl_oom(L);
      return;
    }
    L->b = fu_kbuilder_at(L->m, L->k, &lp->u.loop.body);
    row = ibin(L, "row", FU_OP_ADD, ibin(L, NULL, FU_OP_MUL, lp->results[0], fu_pwl_const_idx(L, T->t.rows)), T->ty);
    if (!row) return;
  }
  uint32_t inner = fu_pwl_scope_mark(L);
  fu_pwl_bind(L, T->il, ph == PH_COMPUTE ? row : T->tx);
  fu_pwl_bind(L, T->jl, ph == PH_COMPUTE ? T->tx : row);
  fu_kval *p = fu_pwl_predicate(L);
  if (!L->failed && (!p || fu_pwl_open_if(L, p))) phase_row(L, T, ph, row);
  fu_pwl_scope_pop(L, inner);
  fu_pwl_scope_pop(L, mark);
  L->b = outer;
}

static void sync(lw *L) {
  if (!L->failed && !fu_kb_sync(&L->b)) fu_pwl_oom(L);
}

/* The tile body, at the innermost point of the outer loops. */
static void tile_body(lw *L) {
  tl *T = L->user;
  fu_kbuilder outer = L->b;
  uint32_t mark = fu_pwl_scope_mark(L);
  T->tx = fu_kb_special(&L->b, "tx", FU_SP_TID_X, L->idx);
  T->ty = fu_kb_special(&L->b, "ty", FU_SP_TID_Y, L->idx);
  if (!T->tx || !T->ty) {
    fu_pwl_oom(L);
    return;
  }
  if (T->n_in) {
    phase_rows(L, T, PH_LOAD);
    sync(L);
  }
  phase_rows(L, T, PH_COMPUTE);
  if (T->n_out) {
    sync(L);
    phase_rows(L, T, PH_STORE);
  }
  if (T->loops && (T->n_in || T->n_out)) sync(L);
  fu_pwl_scope_pop(L, mark);
  L->b = outer;
}

fu_status fu_lower_transpose(fu_fusion *f, fu_op *seg, const fu_lower_options *opt, fu_diag_engine *diag,
                             fu_kernel **out) {
  *out = NULL;
  const fu_schedule *s = seg->u.segment.schedule;
  if (!s) return FU_ERR_INVALID_ARG;
  if (!fu_schedule_has_tile(s)) return fu_lower_pointwise(f, seg, opt, diag, out);
  tl T;
  memset(&T, 0, sizeof T);
  if (!fu_schedule_transpose_tile(s, &T.t, diag)) return FU_ERR_VERIFY;
  fu_allocator a = f->module->alloc;
  fu_schedule d;
  if (!derive(&a, s, &T.t, &d)) {
    free_derived(&a, s, &T.t, &d);
    return FU_ERR_NOMEM;
  }
  for (uint32_t i = 0; i < T.t.n_outer; i++)
    if (s->loops[i].ptype == FU_PT_SERIAL || s->loops[i].grid_stride) T.loops = true;
  lw L;
  if (fu_pwl_begin(&L, f, seg, &d, diag)) {
    T.il = fu_igraph_loop_var(L.g, T.t.n_outer);
    T.jl = fu_igraph_loop_var(L.g, T.t.n_outer + 1);
    L.user = &T;
    L.loop_end = T.t.n_outer;
    L.at_innermost = tile_body;
    if (find_tiles(&L, &T) && fu_pwl_make_launch(&L)) {
      L.k->block[0] = (uint32_t)T.t.tile;
      L.k->block[1] = (uint32_t)T.t.rows;
      fu_pwl_loops(&L);
    } else {
      L.failed = true;
    }
  }
  fu_status st = fu_pwl_end(&L, out);
  free_derived(&a, s, &T.t, &d);
  return st;
}
