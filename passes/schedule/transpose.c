/* fuser: the transpose scheduler.
 *
 * A transpose segment has tensors that disagree on their innermost dim: a
 * permute inside, an input read in a permuted layout, an output written
 * permuted for a host permute.  The pointwise schedule walks the reference
 * in its own order, so every tensor contiguous along another dim is read
 * or written with a stride (a 32-byte sector per 4-byte element).  This
 * scheduler stages those tensors through a shared-memory tile instead.
 *
 * Decisions, in order (docs/passes.md, "The transpose scheduler"):
 *   1. reference: the largest output (as the pointwise scheduler);
 *   2. each global access's contiguous dim, in the reference's dims, from
 *      a probe index graph with one loop per reference dim: the dim along
 *      which its offset has stride 1;
 *   3. J: the reference's own contiguous dim; I: the contiguous dim of the
 *      most bytes that disagree with J and vary along J (a tensor that
 *      does not vary along J, such as a bias broadcast along it, needs no
 *      tile).  No such access: nothing to tile, the pointwise schedule,
 *      which is then coalesced (a batched permute such as 0213 that keeps
 *      the innermost dim);
 *   4. cost: bytes weighted by how many 32-byte sectors each element
 *      costs, for the pointwise schedule (consecutive threads step along
 *      the reference's last dim) and for the tile (consecutive threads step
 *      along J in the reference's order and along I in the swapped one),
 *      the tile's times 1.1 for its barriers and times the fraction of idle
 *      threads in partial tiles along I and J.  The pointwise schedule
 *      wins ties;
 *   5. the tile: T = 32 (a warp per tile row: 128 bytes of f32 per row),
 *      32 x 8 threads each covering 4 rows (unrolled); or, where the tiles
 *      are many (BIG_TILE_WAVES waves of 64 x 64 tiles, 2 blocks an SM)
 *      and every tiled tensor has 4-byte or wider elements, T = 64 with 64
 *      x 16 threads (4 rows each): on the H100 transpose + add of f32
 *      [16, 1024, 2048] took 137.6 us against 139.5 at 32 x 32, and the
 *      transpose of f32 [8192, 8192] 188.1 against 190.5 (64 x 8 threads:
 *      138.5 and 187.6); the other dims and the tile indices merged onto
 *      blockIdx.x (a grid-stride loop when the count may exceed the launch
 *      limit); every tensor with an access contiguous along I that varies
 *      along J is marked access=tile.
 * `--debug=schedule` prints the dims, the costs and the tiled tensors. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fuser/example_sizes.h"
#include "fuser/index_graph.h"
#include "fuser/schedule.h"
#include "internal.h"

enum { TILE = 32, ROWS = 8, BIG_TILE = 64, BIG_ROWS = 16, BIG_TILE_WAVES = 8, MAX_AXES = 2 * FU_MAX_RANK + 8 };

/* ---- the probe ------------------------------------------------------------------------- */

/* One global access as seen from the reference's dims. */
typedef struct pacc {
  const fu_value *v;
  bool store;
  int32_t unit;                    /* the dim of stride 1, or -1 */
  int64_t stride[FU_MAX_RANK];     /* along each reference dim; -1: not affine */
  double bytes;
} pacc;

typedef struct probe {
  pacc *a;
  uint32_t n;
} probe;

/* A schedule with one serial loop per reference dim, in `arena`-free
 * storage the caller owns (axes, loops of rank entries). */
static void probe_schedule(fu_schedule *s, const fu_value *ref, fu_saxis *axes, fu_sloop *loops, char (*names)[16]) {
  memset(s, 0, sizeof *s);
  s->reference = (fu_value *)ref;
  s->loc = fu_loc_none();
  for (int32_t d = 0; d < ref->type.rank; d++) {
    snprintf(names[d], 16, "d%d", (int)d);
    axes[d] = (fu_saxis){names[d], d, -1, fu_loc_none()};
    loops[d] = (fu_sloop){(uint32_t)d, FU_PT_SERIAL, false, fu_loc_none()};
  }
  s->axes = axes;
  s->loops = loops;
  s->n_axes = s->n_loops = (uint32_t)ref->type.rank;
}

/* The accesses of seg under the probe schedule, in the module's arena;
 * the graph's status when it cannot be built. */
static fu_status run_probe(fu_fusion *f, fu_op *seg, const fu_value *ref, const fu_example_sizes *bind,
                           fu_diag_engine *diag, probe *p) {
  memset(p, 0, sizeof *p);
  fu_module *m = f->module;
  fu_saxis axes[FU_MAX_RANK];
  fu_sloop loops[FU_MAX_RANK];
  char names[FU_MAX_RANK][16];
  fu_schedule s;
  probe_schedule(&s, ref, axes, loops, names);
  fu_igraph *g = NULL;
  fu_status st = fu_igraph_build(f, seg, &s, m->alloc, diag, &g);
  if (st != FU_OK) return st;
  uint32_t n = fu_igraph_num_accesses(g);
  p->a = fu_arena_calloc(m->arena, n ? n : 1, sizeof *p->a);
  if (!p->a) {
    fu_igraph_free(g);
    return FU_ERR_NOMEM;
  }
  for (uint32_t i = 0; i < n; i++) {
    const fu_iaccess *ia = fu_igraph_access(g, i);
    pacc *a = &p->a[p->n++];
    a->v = ia->value;
    a->store = ia->is_store;
    a->unit = -1;
    a->bytes = (double)fu_dtype_size(ia->value->type.dtype);
    for (int32_t d = 0; d < ia->value->type.rank; d++)
      a->bytes *= (double)fu_example_extent(bind, ia->value->type.dims[d], 4096);
    for (int32_t d = 0; d < ref->type.rank; d++) {
      fu_ix_lane l = fu_ix_lane_analyze(ia->offset, fu_igraph_loop_var(g, (uint32_t)d), 2);
      a->stride[d] = l.ok ? (l.stride < 0 ? -l.stride : l.stride) : -1;
      if (l.ok && l.stride == 1 && a->unit < 0 && !fu_extent_is_one(ref->type.dims[d])) a->unit = d;
    }
  }
  fu_igraph_free(g);
  return FU_OK;
}

/* Sectors per element, in elements' worth, of consecutive threads stepping
 * along a dim where the access has `stride`. */
static double penalty(int64_t stride, const fu_value *v) {
  double per_sector = 32.0 / (double)(fu_dtype_size(v->type.dtype) ? fu_dtype_size(v->type.dtype) : 1);
  if (stride == 0 || stride == 1) return 1.0;
  if (stride < 0) return per_sector;
  return (double)stride < per_sector ? (double)stride : per_sector;
}

/* Threads of the partial tiles along an extent: ceil(E / T) * T / E. */
static double pad(double e, int64_t t) { return e <= 0 ? 1.0 : ceil(e / (double)t) * (double)t / e; }

/* An access that goes through the tile: contiguous along I, varying along
 * J, not bool (bools are accessed element by element everywhere). */
static bool tiled(const pacc *a, int32_t di, int32_t dj) {
  return a->unit == di && a->stride[dj] != 0 && a->v->type.dtype != FU_DT_BOOL;
}

/* ---- the tile schedule ----------------------------------------------------------------- */

typedef struct tbuild {
  fu_saxis axes[MAX_AXES];
  fu_sxform xf[MAX_AXES];
  fu_sloop loops[8];
  char names[MAX_AXES][16];
  uint32_t n_axes, n_xf, n_loops;
} tbuild;

static uint32_t new_axis(tbuild *b, const char *name, int32_t ref_dim) {
  uint32_t a = b->n_axes++;
  snprintf(b->names[a], sizeof b->names[a], "%s", name);
  b->axes[a] = (fu_saxis){b->names[a], ref_dim, ref_dim >= 0 ? -1 : (int32_t)b->n_xf, fu_loc_none()};
  return a;
}

/* One transform: a split of x by f (tail guard) or a merge of x and y. */
static uint32_t xform(tbuild *b, fu_sxform_kind k, uint32_t x, uint32_t y, int64_t f, const char *o0, const char *o1) {
  fu_sxform t;
  memset(&t, 0, sizeof t);
  t.kind = k;
  t.in[0] = x;
  t.in[1] = y;
  t.factor = f;
  t.tail = FU_TAIL_GUARD;
  t.loc = fu_loc_none();
  t.out[0] = new_axis(b, o0, -1);
  if (k == FU_SX_SPLIT) t.out[1] = new_axis(b, o1, -1);
  b->xf[b->n_xf++] = t;
  return t.out[0];
}

static void add_loop(tbuild *b, uint32_t a, fu_ptype p) {
  b->loops[b->n_loops++] = (fu_sloop){a, p, false, fu_loc_none()};
}

/* The tile schedule over reference dims di, dj, in m's arena: tiles of
 * `tile` x `tile`, `rows` rows of threads. */
static fu_schedule *tile_schedule(fu_module *m, const fu_value *ref, int32_t di, int32_t dj, int64_t tile,
                                  int64_t rows) {
  tbuild *b = fu_mem_calloc(&m->alloc, 1, sizeof *b);
  if (!b) return NULL;
  int32_t r = ref->type.rank;
  for (int32_t d = 0; d < r; d++) {
    char nm[16];
    snprintf(nm, sizeof nm, "d%d", (int)d);
    new_axis(b, nm, d);
  }
  uint32_t ti = xform(b, FU_SX_SPLIT, (uint32_t)di, 0, tile, "ti", "il");
  uint32_t il = ti + 1;
  uint32_t tj = xform(b, FU_SX_SPLIT, (uint32_t)dj, 0, tile, "tj", "jl");
  uint32_t jl = tj + 1;
  uint32_t u = xform(b, FU_SX_SPLIT, il, 0, rows, "u", "ty");
  b->xf[b->n_xf - 1].tail = FU_TAIL_EXACT;
  uint32_t outer[FU_MAX_RANK + 2], n_outer = 0;
  for (int32_t d = 0; d < r; d++)
    if (d != di && d != dj) outer[n_outer++] = (uint32_t)d;
  outer[n_outer++] = ti;
  outer[n_outer++] = tj;
  uint32_t bx = outer[0];
  for (uint32_t k = 1; k < n_outer; k++) {
    char nm[16];
    snprintf(nm, sizeof nm, k + 1 == n_outer ? "bx" : "m%u", k);
    bx = xform(b, FU_SX_MERGE, bx, outer[k], 0, nm, NULL);
  }
  add_loop(b, bx, FU_PT_BLOCK_X);
  add_loop(b, u, FU_PT_UNROLL);
  add_loop(b, u + 1, FU_PT_THREAD_Y);
  add_loop(b, jl, FU_PT_THREAD_X);
  fu_schedule *s = fu_schedule_assemble(m, ref, b->axes, b->n_axes, b->xf, b->n_xf, b->loops, b->n_loops);
  if (s) s->kind = FU_SK_TRANSPOSE;
  fu_mem_free(&m->alloc, b, sizeof *b);
  return s;
}

/* Tails (exact where the tile divides the extent), the block axis's grid
 * binding and the index type, from the schedule's index graph. */
static fu_status finish_tile(fu_fusion *f, fu_op *seg, fu_schedule *s, fu_diag_engine *diag) {
  fu_igraph *g = NULL;
  fu_status st = fu_igraph_build(f, seg, s, f->module->alloc, diag, &g);
  if (st != FU_OK) return st;
  fu_schedule_exact_tails(g, s);
  int64_t e = 0;
  fu_sloop *bl = &s->loops[0];
  bl->grid_stride = !(fu_ix_is_const(fu_igraph_axis_extent(g, bl->axis), &e) && e <= fu_block_axis_limit(FU_PT_BLOCK_X));
  s->index_dtype = fu_igraph_index_dtype(g);
  fu_igraph_free(g);
  return FU_OK;
}

/* ---- the scheduler ----------------------------------------------------------------------- */

static const char *vn(const fu_value *v) { return v && v->name ? v->name : "?"; }

fu_status fu_schedule_transpose(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag, FILE *debug,
                                fu_schedule **out) {
  *out = NULL;
  fu_module *m = f->module;
  const fu_segment_info *si = &seg->u.segment;
  const char *sn = si->name ? si->name : "?";
  fu_example_sizes bind;
  if (fu_example_sizes_bind(&bind, f, m->alloc) != FU_OK) return FU_ERR_NOMEM;
  /* 1. reference: the largest output */
  double ref_n = -1;
  const fu_value *ref = fu_schedule_largest_output(seg, &bind, &ref_n);
  /* 2. contiguous dims */
  probe p = {NULL, 0};
  fu_status st = ref && ref->type.rank >= 2 ? run_probe(f, seg, ref, &bind, diag, &p) : FU_OK;
  fu_example_sizes_free(&bind);
  if (st != FU_OK) return st;
  /* 3. J and I */
  int32_t dj = -1, di = -1;
  for (uint32_t i = 0; i < p.n; i++)
    if (p.a[i].store && p.a[i].v == ref) dj = p.a[i].unit;
  double votes[FU_MAX_RANK] = {0};
  for (uint32_t i = 0; dj >= 0 && i < p.n; i++)
    if (p.a[i].unit >= 0 && p.a[i].unit != dj && tiled(&p.a[i], p.a[i].unit, dj)) votes[p.a[i].unit] += p.a[i].bytes;
  for (int32_t d = 0; ref && d < ref->type.rank; d++)
    if (votes[d] > 0 && (di < 0 || votes[d] > votes[di])) di = d;
  if (di < 0) {
    if (debug)
      fprintf(debug, "schedule: @%s: transpose: %s: no tile, the pointwise schedule\n", sn,
              !ref || ref->type.rank < 2 ? "the reference has fewer than 2 dims"
              : dj < 0                   ? "the reference is not contiguous along any of its dims"
                                         : "every access is contiguous along the reference's innermost dim, does "
                                           "not vary along it, or is bool");
    return fu_schedule_pointwise(f, seg, dev, diag, debug, out);
  }
  /* 4. cost */
  int32_t last = ref->type.rank - 1;
  double cost_pw = 0, cost_tile = 0;
  for (uint32_t i = 0; i < p.n; i++) {
    const pacc *a = &p.a[i];
    cost_pw += a->bytes * penalty(a->stride[last], a->v);
    cost_tile += a->bytes * (tiled(a, di, dj) ? 1.0 : penalty(a->stride[dj], a->v));
  }
  if (fu_example_sizes_bind(&bind, f, m->alloc) != FU_OK) return FU_ERR_NOMEM;
  double ei = (double)fu_example_extent(&bind, ref->type.dims[di], 4096);
  double ej = (double)fu_example_extent(&bind, ref->type.dims[dj], 4096);
  double elems = 1;
  for (int32_t d = 0; d < ref->type.rank; d++) elems *= (double)fu_example_extent(&bind, ref->type.dims[d], 4096);
  fu_example_sizes_free(&bind);
  /* the tile: 64 x 64 where such tiles make BIG_TILE_WAVES waves of 2
   * blocks an SM and every tiled access has elements of 4 bytes or more */
  bool wide = true;
  for (uint32_t i = 0; i < p.n; i++)
    if (tiled(&p.a[i], di, dj) && fu_dtype_size(p.a[i].v->type.dtype) < 4) wide = false;
  bool big = wide && elems / (double)(BIG_TILE * BIG_TILE) >= (double)BIG_TILE_WAVES * 2.0 * (double)dev->n_sms;
  int64_t tile = big ? BIG_TILE : TILE, rows = big ? BIG_ROWS : ROWS;
  cost_tile *= 1.1 * pad(ei, tile) * pad(ej, tile);
  if (debug)
    fprintf(debug,
            "schedule: @%s: transpose: reference %%%s contiguous along dim %d, tile candidates along dim %d; cost "
            "(sector-weighted bytes) tile %.4g, pointwise %.4g\n",
            sn, vn(ref), (int)dj, (int)di, cost_tile, cost_pw);
  if (cost_tile >= cost_pw) {
    if (debug) fprintf(debug, "schedule: @%s: transpose: the pointwise schedule costs less than a tile\n", sn);
    return fu_schedule_pointwise(f, seg, dev, diag, debug, out);
  }
  /* 5. the tile */
  fu_schedule *s = tile_schedule(m, ref, di, dj, tile, rows);
  if (!s) return FU_ERR_NOMEM;
  uint32_t n_glob = seg->n_operands + si->n_outputs, n_t = 0;
  s->tensors = fu_arena_calloc(m->arena, n_glob ? n_glob : 1, sizeof *s->tensors);
  if (!s->tensors) return FU_ERR_NOMEM;
  char list[256] = "";
  for (uint32_t gi = 0; gi < n_glob; gi++) {
    fu_value *gv = gi < seg->n_operands ? seg->operands[gi] : si->outputs[gi - seg->n_operands];
    bool t = false;
    for (uint32_t i = 0; i < p.n; i++)
      if (p.a[i].v == gv && p.a[i].store == (gi >= seg->n_operands) && tiled(&p.a[i], di, dj)) t = true;
    if (!t || fu_schedule_tensor(s, gv)) continue;
    s->tensors[n_t++] = (fu_stensor){.value = gv, .memory = FU_MEM_GLOBAL, .inline_pos = -1, .access = FU_ACCESS_TILE, .loc = fu_loc_none()};
    size_t len = strlen(list);
    snprintf(list + len, sizeof list - len, "%s%%%s", len ? ", " : "", vn(gv));
  }
  s->n_tensors = n_t;
  st = finish_tile(f, seg, s, diag);
  if (st != FU_OK) return st;
  char arch[16];
  fu_device_arch(dev, arch, sizeof arch);
  s->device = fu_arena_strdup(m->arena, dev->name);
  s->arch = fu_arena_strdup(m->arena, arch);
  s->loc = seg->loc;
  if (!s->device || !s->arch) return FU_ERR_NOMEM;
  char why_big[96] = "";
  if (big)
    snprintf(why_big, sizeof why_big, " (%d x %d: the tiles make %d waves of 2 blocks an SM)", BIG_TILE, BIG_TILE,
             BIG_TILE_WAVES);
  if (debug)
    fprintf(debug,
            "schedule: @%s: transpose: tile %lldx%lld over dims %d and %d, block %lldx%lld, unroll %lld, through the "
            "tile: %s, index %s, grid %s%s\n",
            sn, (long long)tile, (long long)tile, (int)di, (int)dj, (long long)tile, (long long)rows,
            (long long)(tile / rows), list, fu_dtype_name(s->index_dtype),
            s->loops[0].grid_stride ? "grid-stride in x" : "direct",
            why_big);
  *out = s;
  return FU_OK;
}
