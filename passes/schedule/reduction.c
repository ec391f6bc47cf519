/* fuser: the reduction scheduler.
 *
 * The reference is the reductions' operand (docs/ir.md, "Schedules"): its
 * kept dims merge into one row axis `i`, its reduced dims into one axis
 * `r`.  Two layouts are handled:
 *   - inner (the reduced dims are the last ones): threads along threadIdx.x
 *     stride over a row and accumulate serially, then combine with warp
 *     shuffles (reduce=warp: 2..32 threads of one warp per row, several
 *     rows per block on threadIdx.y, for short rows) or shuffles then
 *     shared memory across the warps (reduce=block: one block per row, for
 *     long rows, the serial loop unrolled); 16-byte vector loads along the
 *     row when its length allows;
 *   - outer (the reduced dims are the first ones): each thread owns one
 *     output column and walks down the reduced axis (reduce=serial);
 *     consecutive threads read consecutive columns, so loads coalesce;
 *     deeper ones split the rows over threadIdx.y too (reduce=block);
 * and when there are too few rows (inner) or column blocks (outer) to
 * fill the device, the reduced axis is split over blockIdx.y as well
 * (reduce=grid, combined through a workspace by the last block).
 * A reduction of every dim is an inner one with no row axis.
 * Row lengths and counts are estimated at the inputs' example sizes, but
 * every split is guarded unless its factor provably divides, so the
 * kernel is right for any size.  var/var_mean schedule like sum (their
 * Welford states ride the same combines, the workspace included).
 * Reduced dims in
 * the middle, or not adjacent, merge into `r` and the kept ones into `i`
 * (group_axes): inner when the last dim is reduced, else outer. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fuser/index_graph.h"
#include "fuser/schedule.h"
#include "internal.h"

/* SMEM_BUDGET: the bytes of shared slots a block's combines may take
 * (static shared memory stops at 48 KB a block); ROW_BYTES: the bytes a
 * thread of a short-row reduction should have in flight; OUTER_GRID_REGS:
 * the registers a thread of a tall outer grid reduction is assumed to
 * take (resident_blocks); SWEEP_BLOCKS: the most blocks a one-row grid
 * reduction is split into (grid_split); WIDE_COLUMN_BLOCKS, WIDE_WAVES,
 * WIDE_SEGMENT_BYTES: an outer grid reduction of at least that many
 * column blocks, each reading at least that many bytes of a row, is
 * split into about that many waves (grid_split); SHORT_CHUNK,
 * SHORT_SEGMENT_BYTES: the most iterations of the short blocks of a
 * few-column-block outer grid reduction whose blocks read at least that
 * many bytes of each row, fully unrolled (grid_split). */
enum { MAX_AXES = 48, SHORT_ROW = 256, OUTER_TY = 16, FEW_ROWS = 512, SMEM_BUDGET = 40 * 1024, ROW_BYTES = 64,
       OUTER_GRID_REGS = 40, SWEEP_BLOCKS = 16384, WIDE_COLUMN_BLOCKS = 64, WIDE_WAVES = 8,
       WIDE_SEGMENT_BYTES = 512, SHORT_CHUNK = 16, SHORT_SEGMENT_BYTES = 128 };

typedef struct rbuild {
  fu_saxis axes[MAX_AXES];
  char names[MAX_AXES][8];
  fu_sxform xf[MAX_AXES];
  fu_sloop loops[8];
  uint32_t n_axes, n_xf, n_loops;
  const fu_value *ref;
  const fu_value *peel; /* the input a peeled split aligns (access=vector), or NULL */
} rbuild;

static uint32_t new_axis(rbuild *b, const char *name, int32_t ref_dim) {
  uint32_t a = b->n_axes++;
  snprintf(b->names[a], sizeof b->names[a], "%s", name);
  b->axes[a] = (fu_saxis){.name = b->names[a], .ref_dim = ref_dim, .def = ref_dim >= 0 ? -1 : (int32_t)b->n_xf,
                          .loc = fu_loc_none()};
  return a;
}

/* The extent of axis a when it is constant, else 0. */
static int64_t axis_const(const rbuild *b, uint32_t a) {
  const fu_saxis *x = &b->axes[a];
  if (x->ref_dim >= 0) {
    fu_extent e = b->ref->type.dims[x->ref_dim];
    return e.sym ? 0 : e.value;
  }
  const fu_sxform *t = &b->xf[x->def];
  if (t->kind == FU_SX_SPLIT) {
    int64_t in = axis_const(b, t->in[0]);
    if (in && t->tail == FU_TAIL_PEEL) in += t->factor - 1; /* the shift can start one more vector */
    return t->out[1] == a ? t->factor : in ? (in + t->factor - 1) / t->factor : 0;
  }
  return axis_const(b, t->in[0]) * axis_const(b, t->in[1]);
}

/* Merges reference dims [lo, hi) into one axis named `name`. */
static uint32_t merge_dims(rbuild *b, int32_t lo, int32_t hi, const char *name) {
  uint32_t cur = UINT32_MAX;
  for (int32_t d = lo; d < hi; d++) {
    char nm[8];
    snprintf(nm, sizeof nm, "d%d", (int)d);
    uint32_t a = new_axis(b, nm, d);
    if (cur == UINT32_MAX) {
      cur = a;
      continue;
    }
    fu_sxform *t = &b->xf[b->n_xf];
    *t = (fu_sxform){.kind = FU_SX_MERGE, .in = {cur, a}, .loc = fu_loc_none()};
    char mid[8];
    snprintf(mid, sizeof mid, "m%u", b->n_axes);
    t->out[0] = new_axis(b, d + 1 == hi ? name : mid, -1);
    b->n_xf++;
    cur = t->out[0];
  }
  return cur;
}

/* Splits x by f into (outer, inner); exact when f provably divides. */
static void split_axis(rbuild *b, uint32_t x, int64_t f, const char *outer, const char *inner, uint32_t *o,
                       uint32_t *i) {
  int64_t e = axis_const(b, x);
  fu_sxform *t = &b->xf[b->n_xf];
  *t = (fu_sxform){.kind = FU_SX_SPLIT, .in = {x}, .factor = f, .loc = fu_loc_none()};
  t->tail = e && e % f == 0 ? FU_TAIL_EXACT : FU_TAIL_GUARD;
  t->out[0] = *o = new_axis(b, outer, -1);
  t->out[1] = *i = new_axis(b, inner, -1);
  b->n_xf++;
}

static void add_loop(rbuild *b, uint32_t a, fu_ptype p) {
  b->loops[b->n_loops++] = (fu_sloop){.axis = a, .ptype = p, .loc = fu_loc_none()};
}

/* Binds the loop over axis a, already added, to p instead. */
static void rebind_loop(rbuild *b, uint32_t a, fu_ptype p) {
  for (uint32_t l = 0; l < b->n_loops; l++)
    if (b->loops[l].axis == a) b->loops[l].ptype = p;
}

/* Extent estimate of reference dims [lo, hi) at the example sizes
 * (unbound symbols count as 4096). */
static double estimate(fu_fusion *f, const fu_value *ref, int32_t lo, int32_t hi) {
  double n = 1;
  for (int32_t d = lo; d < hi; d++) {
    fu_extent e = ref->type.dims[d];
    double v = e.sym ? 4096.0 : (double)e.value;
    for (fu_op *op = e.sym ? f->body.first : NULL; op; op = op->next) {
      if (op->kind != FU_OP_INPUT || !op->n_results) continue;
      const fu_type *t = &op->results[0]->type;
      const fu_example *ex = &op->u.input.example;
      for (int32_t k = 0; ex->shape && ex->rank == t->rank && k < t->rank; k++)
        if (t->dims[k].sym && strcmp(t->dims[k].sym, e.sym) == 0) v = (double)ex->shape[k];
    }
    n *= v;
  }
  return n;
}

static int64_t pow2_at_least(double x) {
  int64_t p = 1;
  while ((double)p < x && p < (1 << 20)) p *= 2;
  return p;
}

/* The widest vector (16 bytes at most) along the reduced dims [lo, hi) of
 * the reference that every segment input of the reference's shape can be
 * loaded with: the row length must be a known multiple of it, so every
 * row starts aligned; 1 when no vector fits. */
static int64_t vector_width(fu_fusion *f, const fu_op *seg, const fu_value *ref, int32_t lo, int32_t hi) {
  (void)f;
  /* one row (every dim reduced, a single dim): only its start must be
   * aligned, and the lowering guards a partial last vector */
  bool one_row = lo == 0 && hi == 1;
  int64_t row = 1;
  for (int32_t d = lo; d < hi; d++) {
    fu_extent e = ref->type.dims[d];
    if (e.sym && !one_row) return 1;
    row *= e.sym ? 1 : e.value;
  }
  size_t widest = 0;
  /* the segment's inputs, then its outputs (a full-size output is stored
   * with the same vectors) */
  const fu_segment_info *si = &seg->u.segment;
  for (uint32_t k = 0; k < seg->n_operands + si->n_outputs; k++) {
    const fu_value *v = k < seg->n_operands ? seg->operands[k] : si->outputs[k - seg->n_operands];
    if (!fu_type_is_tensor(&v->type) || v->type.rank != ref->type.rank) continue;
    if (k >= seg->n_operands && !fu_type_same_shape(&v->type, &ref->type)) continue;
    /* a tensor of extent 1 along the vectorized dims (the mean and rstd of
     * a norm's backward, [rows, 1]) is read once per row, not in vectors */
    bool along = false;
    for (int32_t d = lo; d < hi && d < v->type.rank; d++) along |= !fu_extent_is_one(v->type.dims[d]);
    if (!along) continue;
    if (v->type.dtype == FU_DT_BOOL) return 1;
    size_t sz = fu_dtype_size(v->type.dtype);
    if (sz > widest) widest = sz;
  }
  if (!widest) return 1;
  int64_t w = (int64_t)(16 / widest);
  if (w > 8) w = 8;
  if (one_row) return w;
  while (w > 1 && row % w != 0) w /= 2;
  return w;
}

/* The segment input a peeled split of the reduced run would align: the
 * first one of the reference's shape (not bool), whose vectors then start
 * on 16-byte boundaries whatever its address and row length; its width
 * (16 bytes of it, at most 8) in *w.  NULL when there is none. */
static const fu_value *peel_anchor(const fu_op *seg, const fu_value *ref, int64_t *w) {
  for (uint32_t k = 0; k < seg->n_operands; k++) {
    const fu_value *v = seg->operands[k];
    if (!fu_type_is_tensor(&v->type) || !fu_type_same_shape(&v->type, &ref->type) || v->type.dtype == FU_DT_BOOL)
      continue;
    *w = (int64_t)(16 / fu_dtype_size(v->type.dtype));
    if (*w > 8) *w = 8;
    return v;
  }
  return NULL;
}

/* Why vector_width gave 1 along dims [lo, hi), for --debug=schedule:
 * `outer` when they are kept dims (the columns of an outer reduction). */
static const char *no_vector_why(const fu_value *ref, int32_t lo, int32_t hi, bool outer) {
  for (int32_t d = lo; d < hi; d++)
    if (ref->type.dims[d].sym) return outer ? "the column count is symbolic" : "the row length is symbolic";
  return outer ? "the column count is not a multiple of 2, or an input is bool"
               : "the row length is not a multiple of 2 elements, or an input is bool";
}

/* The blocks of `threads` threads that one SM holds at once when each
 * thread takes `regs` registers (allocated in warps of 256-register
 * units), at least 1.  The scheduler cannot know what ptxas will use; an
 * outer grid reduction's kernel took 32 to 40 on sm_90, and with 40 the
 * thread limit's 4 blocks of 512 would be 3. */
static uint32_t resident_blocks(const fu_device *dev, int64_t threads, int regs) {
  uint32_t by_threads = dev->max_threads_per_sm / (uint32_t)threads;
  uint32_t warps = (uint32_t)((threads + dev->warp_size - 1) / dev->warp_size);
  uint32_t per_warp = ((uint32_t)regs * dev->warp_size + 255) / 256 * 256;
  uint32_t by_regs = dev->regs_per_sm / (per_warp * warps);
  uint32_t n = by_threads < by_regs ? by_threads : by_regs;
  if (dev->max_blocks_per_sm && n > dev->max_blocks_per_sm) n = dev->max_blocks_per_sm;
  return n ? n : 1;
}

/* The registers a thread of an outer grid reduction is assumed to take
 * with vw-element vectors: OUTER_GRID_REGS for plain accumulators (sum,
 * max, ...: 34 to 40 on sm_90 at 4 lanes), and 16 a lane for each
 * Welford state (var, var_mean: mean, m2 and the lane's shift, the count
 * too where it is not known, partials of each at a step of the last
 * block's combine): ptxas gives a batch norm's NHWC statistics 63
 * registers at 4 lanes, bf16 and f32, so 4 blocks of 256 threads fit an
 * SM (at 20 a lane, the 80 registers that kernel took before its known
 * counts left the shared slots, the plan was 3).  At a flat 40 the
 * heuristic planned 6 blocks an SM where 3 fit: 784 blocks, two waves,
 * and twice the partials for the last block, whose combine is most of a
 * small batch norm's time (on the H100 the NHWC bf16 [32, 28, 28, 64]
 * statistics took 25.1 us in 784 blocks, 17.3 in 392). */
static int outer_thread_regs(const fu_op *seg, int64_t vw) {
  int64_t lanes = vw > 1 ? vw : 1, regs = 0;
  bool plain = false;
  for (const fu_op *op = seg->u.segment.body->first; op; op = op->next) {
    if (!fu_op_has(op->kind, FU_OF_REDUCTION)) continue;
    if (op->kind == FU_OP_VAR || op->kind == FU_OP_VAR_MEAN) regs += 16 * lanes;
    else plain = true;
  }
  if (plain) regs += OUTER_GRID_REGS;
  if (regs < OUTER_GRID_REGS) regs = OUTER_GRID_REGS;
  return regs > 255 ? 255 : (int)regs;
}

/* The chunk of a few-column-block outer grid reduction: the power of two
 * grid_split picks can leave a quarter of the wave empty (50176 rows a
 * column block over 528 block slots: chunks of 128, 392 blocks); the
 * smallest chunk below it that divides the `per` iterations exactly (no
 * guard, so Welford counts stay known), is a multiple of the unroll and
 * still gives at most `blocks` blocks a column block fills the wave
 * instead (chunks of 98: 512 blocks).  On the H100 the statistics of a
 * batch norm NHWC bf16 [256, 56, 56, 64] took 67.5 us in 512 blocks
 * against 76.4 in 392, f32 95.2 against 96.8; 784 blocks of 64 (two
 * waves) took 83.8 and 105.0.  `chunk` when no such divisor exists. */
static int64_t wave_filling_chunk(double per, double blocks, int64_t unroll, int64_t chunk) {
  if (per != floor(per) || per > (double)INT64_MAX / 2 || blocks < 1.0) return chunk;
  int64_t n = (int64_t)per, lo = (int64_t)ceil(per / blocks);
  /* at most MAX_TRIES candidates: an absurd row count must not make the
   * scheduler spin (the search is over the chunks between the wave's and
   * the power of two, about `lo` of them) */
  enum { MAX_TRIES = 4096 };
  int64_t c = (lo + unroll - 1) / unroll * unroll;
  for (int tries = 0; c < chunk && tries < MAX_TRIES; c += unroll, tries++)
    if (n % c == 0) return c;
  return chunk;
}

/* When `groups` blocks (rows, or column blocks) of `threads` cannot fill
 * the device (fewer than half of SMs x blocks per SM) and each thread has
 * at least 4 unrolled iterations (`*per`, of serial axis *rs), splits *rs
 * over blockIdx.y: each block a contiguous chunk of iterations, a power of
 * two (at least the unroll) giving about one wave, SMs x blocks per SM
 * blocks in all; the blocks' partials are combined through a workspace
 * (reduce=grid).  Two waves or more (four times the blocks) measured
 * slower on the H100: [262144,64].sum(0) took 72 us with 2048 blocks
 * against 40 us with 512, the last block's combine growing with the
 * partials (docs/performance.md).  With per_sm_regs > 0 (an outer
 * reduction, whose last block combines a whole column block of partials,
 * blockDim.x values each) and fewer than 4 column blocks, the target is
 * the blocks that are resident at once when a thread takes per_sm_regs
 * registers (resident_blocks, outer_thread_regs), not the thread limit:
 * [262144,64].sum(0) took 34.9 us in 512 blocks of 512 threads, which at 34 registers were 1.3 waves of 3
 * blocks an SM, and 29.4 in 128 (one an SM, 16 warps: too few loads in
 * flight); with 128 column blocks (seed000's bias gradient of
 * [8192,4096]) one block an SM was slower, 162.7 us against 144.0.
 * An inner reduction whose rows are one, or of a static count that fits
 * gridDim.y (rows_on_y), is the exception: a sweep.  Its blocks take
 * `unroll` iterations each, as many blocks as that makes up to
 * SWEEP_BLOCKS, and with several rows the chunks go on blockIdx.x and the
 * rows on blockIdx.y, so that the blocks (launched x first) read
 * consecutive chunks and the grid sweeps memory in order, as a
 * block-per-row kernel does.  On the H100, L2 flushed, the f32 sum of
 * 2^26 elements took 95.5 us in 16384 blocks of 2 iterations against
 * 101.9 in one wave of 512 (8192 blocks: 96.4, 4096: 99.0); 64 rows of
 * 1M took 95.4 swept, 102.1 in one wave, and 103.5 in the same 16384
 * blocks with the rows on blockIdx.x (64 streams at once).
 * An outer reduction of at least WIDE_COLUMN_BLOCKS column blocks takes
 * about WIDE_WAVES waves instead of one (each column's last block then
 * combines about 32 partials): on the H100, f32 sums over dim 0 of
 * [4096, 16384], [2048, 32768] and [8192, 8192] took 99.6, 100.3 and
 * 100.4 us in 8 waves against 101.4, 101.4 and 101.6 in one (4 waves:
 * 100.2-100.5), bf16 [4096, 16384] 53.5 against 54.2-54.5; with 32
 * column blocks ([16384, 4096]) 8 waves gained nothing (101.5 against
 * 101.8).  Those blocks read 512 bytes of each row (32 vectors); blocks
 * of 32 scalar columns (128 bytes: a symbolic column count) lose in 8
 * waves: seed000's [8192, 4096].sum(0) took 74.7 us against 55.1 in one
 * wave (64 scalar columns, 256 bytes: 73.4), so they keep one wave.
 * A few-column-block outer reduction whose blocks read a whole 128-byte
 * line of each row (SHORT_SEGMENT_BYTES) and would take fewer than
 * SHORT_CHUNK iterations at that target is short work: the last block's
 * walk over the partials and the blocks' rounds of loads set its time, not
 * the bandwidth.  Its blocks then take about one block an SM's share, up
 * to SHORT_CHUNK iterations, fully unrolled (`full_unroll`: every load in
 * flight at once): on the H100 the statistics of a batch norm NHWC bf16
 * [32, 28, 28, 64] took 11.4-11.6 us in 98 blocks of 16 unrolled
 * iterations against 16.5 in 392 blocks of 4 unrolled by 2 (14.5 with
 * the 4 unrolled, 12.6 in 196 blocks of 8), f32 12.6-12.7 against 17.6,
 * and bf16 [65536, 64].sum(0) 11.7 -> 10.9 us.  Blocks of a few columns
 * (12 bytes of each row) lost: f32 [262144, 3].sum(0) 10.0 -> 12.9 us,
 * [20011, 3].var(0) 7.5 -> 8.8, so they keep the resident-blocks target.
 * Updates *rs and *per to the chunk and says why in `why`.  var/var_mean
 * split the same way: their Welford states go through the workspace. */
typedef struct grid_ask {
  int64_t threads;       /* a block's */
  double groups;         /* the independent outputs: rows (inner) or column blocks (outer) */
  int64_t unroll;        /* of the serial loop */
  bool rows_on_y;        /* inner: rows of a static count that fit gridDim.y */
  int per_sm_regs;       /* outer: the registers a thread takes (0 for inner) */
  int64_t segment_bytes; /* outer: the bytes a block reads of each row */
  const char *gname, *bname; /* the groups' and the split blocks' names, for `why` */
  /* out: the chunks went on blockIdx.x, and the caller's rows belong on
   * blockIdx.y (several rows that sweep: blocks launch x first, so a
   * row's chunks run in order) */
  bool chunks_on_x;
  /* out: the chunk is short work, its serial loop to be fully unrolled */
  bool full_unroll;
} grid_ask;

static bool grid_split(rbuild *b, const fu_device *dev, grid_ask *g, uint32_t *rs, double *per, char *why,
                       size_t cap) {
  int64_t threads = g->threads, unroll = g->unroll;
  double groups = g->groups;
  int per_sm_regs = g->per_sm_regs;
  bool per_sm = per_sm_regs > 0, rows_on_y = g->rows_on_y;
  const char *gname = g->gname, *bname = g->bname;
  double wave = (double)dev->n_sms * (double)(dev->max_threads_per_sm / (uint32_t)threads);
  if (groups >= wave / 2 || *per < 4.0 * (double)unroll) return false;
  bool few = per_sm && groups < 4, wide = per_sm && groups >= WIDE_COLUMN_BLOCKS &&
                                       g->segment_bytes >= WIDE_SEGMENT_BYTES;
  uint32_t per_sm_blocks = few ? resident_blocks(dev, threads, per_sm_regs) : 0;
  double want = few ? (double)dev->n_sms * per_sm_blocks : wide ? WIDE_WAVES * wave : wave;
  bool sweep = !per_sm && (groups <= 1.0 || rows_on_y);
  int64_t chunk = pow2_at_least(*per * (sweep ? groups / (double)SWEEP_BLOCKS : 1.0 / ceil(want / groups)));
  if (chunk < unroll) chunk = unroll;
  g->full_unroll = false;
  if (few && g->segment_bytes >= SHORT_SEGMENT_BYTES && chunk < SHORT_CHUNK) {
    int64_t share = pow2_at_least(*per * groups / (double)dev->n_sms);
    chunk = share > SHORT_CHUNK ? SHORT_CHUNK : share > chunk ? share : chunk;
    g->full_unroll = true;
  }
  if (few && !g->full_unroll) chunk = wave_filling_chunk(*per, ceil(want / groups), unroll, chunk);
  double blocks = groups * ceil(*per / (double)chunk);
  uint32_t ry, rss;
  split_axis(b, *rs, chunk, "ry", "rss", &ry, &rss);
  /* several rows: the chunks on blockIdx.x (the caller moves the rows to
   * blockIdx.y), so that the blocks, launched x first, take a row's
   * chunks in order */
  bool swap = sweep && groups > 1.0;
  g->chunks_on_x = swap;
  add_loop(b, ry, swap ? FU_PT_BLOCK_X : FU_PT_BLOCK_Y);
  char fwhy[160] = "";
  if (few && g->full_unroll)
    snprintf(fwhy, sizeof fwhy,
             "; short work: about one block an SM, at most %d iterations, fully unrolled, so that the last block "
             "combines fewer partials",
             SHORT_CHUNK);
  else if (few)
    snprintf(fwhy, sizeof fwhy,
             "; at most %u blocks an SM (%d registers a thread), the last block combining a column block's partials",
             per_sm_blocks, per_sm_regs);
  else if (sweep)
    snprintf(fwhy, sizeof fwhy, "; short blocks that sweep %s in order, at most %d", swap ? "each row" : "the row",
             SWEEP_BLOCKS);
  else if (wide)
    snprintf(fwhy, sizeof fwhy, "; at least %d column blocks of %d bytes a row: about %d waves", WIDE_COLUMN_BLOCKS,
             WIDE_SEGMENT_BYTES, WIDE_WAVES);
  snprintf(why, cap,
           "; %.0f %s cannot fill %u SMs: %.0f %s on %s, %lld iterations each (%.0f blocks, %.1f waves of "
           "%.0f%s), combined through a workspace (reduce=grid)",
           groups, gname, dev->n_sms, ceil(*per / (double)chunk), bname, swap ? "blockIdx.x (rows on blockIdx.y)" : "blockIdx.y",
           (long long)chunk, blocks, blocks / (few ? want : wave), few ? want : wave, fwhy);
  *rs = rss;
  *per = (double)chunk;
  return true;
}

/* The reduced serial axis rs (`per` iterations per thread), unrolled by
 * `unroll` when it has that many: loads in flight before they are used. */
static void serial_loops(rbuild *b, uint32_t rs, double per, int64_t unroll) {
  if (per >= (double)unroll) {
    uint32_t rso, rsu;
    split_axis(b, rs, unroll, "rso", "rsu", &rso, &rsu);
    add_loop(b, rso, FU_PT_SERIAL);
    add_loop(b, rsu, FU_PT_UNROLL);
  } else {
    add_loop(b, rs, FU_PT_SERIAL);
  }
}

/* Merges the reference axes ax[d] with want[d] == keep, in dim order,
 * into one axis named `name`; UINT32_MAX when there is none. */
static uint32_t merge_where(rbuild *b, const uint32_t *ax, const bool *want, bool keep, const char *name) {
  uint32_t cur = UINT32_MAX;
  int32_t n = 0, rank = b->ref->type.rank;
  for (int32_t d = 0; d < rank; d++) n += want[d] == keep;
  for (int32_t d = 0, k = 0; d < rank; d++) {
    if (want[d] != keep) continue;
    if (++k == 1) {
      cur = ax[d];
      continue;
    }
    fu_sxform *t = &b->xf[b->n_xf];
    *t = (fu_sxform){.kind = FU_SX_MERGE, .in = {cur, ax[d]}, .loc = fu_loc_none()};
    char mid[8];
    snprintf(mid, sizeof mid, "m%u", b->n_axes % 1000u);
    t->out[0] = new_axis(b, k == n ? name : mid, -1);
    b->n_xf++;
    cur = t->out[0];
  }
  if (n == 1) snprintf(b->names[cur], sizeof b->names[cur], "%s", name);
  return cur;
}

/* Reduced dims in the middle or apart: the kept dims merge, in order,
 * into `i` and the reduced ones into `r` (merges of non-adjacent axes),
 * and the inner or outer layout runs on those.  The reference axes are
 * made first, in dim order, as the text lists them. */
static void group_axes(rbuild *b, const bool *reduced, uint32_t *i, uint32_t *r) {
  uint32_t ax[FU_MAX_RANK];
  for (int32_t d = 0; d < b->ref->type.rank; d++) {
    char nm[8];
    snprintf(nm, sizeof nm, "d%u", (unsigned)d % 100u);
    ax[d] = new_axis(b, nm, d);
  }
  *i = merge_where(b, ax, reduced, false, "i");
  *r = merge_where(b, ax, reduced, true, "r");
}

/* The estimated element count of the dims d with reduced[d] == want. */
static double estimate_where(fu_fusion *f, const fu_value *ref, const bool *reduced, bool want) {
  double n = 1;
  for (int32_t d = 0; d < ref->type.rank; d++)
    if (reduced[d] == want) n *= estimate(f, ref, d, d + 1);
  return n;
}

/* Bytes of one thread's reduction states in shared memory: per
 * reduction of the segment its accumulator (8 bytes for f64 and integer
 * results, else 4), three of them for var/var_mean (mean, m2, count). */
/* Whether a reduction of the segment is a Welford one (var, var_mean). */
static bool has_welford(const fu_op *seg) {
  for (const fu_op *op = seg->u.segment.body->first; op; op = op->next)
    if (op->kind == FU_OP_VAR || op->kind == FU_OP_VAR_MEAN) return true;
  return false;
}

static int64_t state_bytes(const fu_op *seg) {
  int64_t n = 0;
  for (const fu_op *op = seg->u.segment.body->first; op; op = op->next) {
    if (!fu_op_has(op->kind, FU_OF_REDUCTION)) continue;
    fu_dtype t = op->results[0]->type.dtype;
    int64_t sz = t == FU_DT_F64 || !fu_dtype_is_float(t) ? 8 : 4;
    n += (op->kind == FU_OP_VAR || op->kind == FU_OP_VAR_MEAN ? 3 : 1) * sz;
  }
  return n;
}

/* A reduction of no dim (a copy): a thread per output. */
static void no_reduced_dim(rbuild *b, const bool *reduced, char *why, size_t why_n) {
  uint32_t i, r, ib, ix;
  group_axes(b, reduced, &i, &r);
  if (i != UINT32_MAX) {
    split_axis(b, i, 128, "ib", "ix", &ib, &ix);
    add_loop(b, ib, FU_PT_BLOCK_X);
    add_loop(b, ix, FU_PT_THREAD_X);
  }
  snprintf(why, why_n, "no reduced dim: a thread per output, 128 threads per block");
}

/* One schedule with vector loads at most max_vw wide; *vw_used is the
 * width it took (1: no vector). */
static fu_status build_schedule(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag, FILE *debug,
                                int64_t max_vw, int64_t *vw_used, fu_schedule **out) {
  *out = NULL;
  *vw_used = 1;
  fu_module *m = f->module;
  const fu_segment_info *si = &seg->u.segment;
  const char *sname = si->name ? si->name : "?";
  const fu_op *red = NULL;
  for (const fu_op *op = si->body ? si->body->first : NULL; op && !red; op = op->next)
    if (fu_op_has(op->kind, FU_OF_REDUCTION)) red = op;
  if (!red) {
    fu_error(diag, seg->loc, "reduction segment '@%s' has no reduction", sname);
    return FU_ERR_INVALID_ARG;
  }
  rbuild *b = fu_mem_calloc(&m->alloc, 1, sizeof *b);
  if (!b) return FU_ERR_NOMEM;
  const fu_value *ref = b->ref = red->operands[0];
  int32_t rank = ref->type.rank;
  bool reduced[FU_MAX_RANK];
  fu_reduction_dims(red, reduced);
  int32_t nred = 0, first = rank, last = -1;
  for (int32_t d = 0; d < rank; d++)
    if (reduced[d]) {
      nred++;
      if (d < first) first = d;
      last = d;
    }
  /* dims in the middle or apart: the inner layout when the last dim is
   * reduced, else the outer one, over merged groups (group_axes) */
  bool apart = nred > 0 && !(last - first + 1 == nred && (last == rank - 1 || first == 0));
  bool inner = nred > 0 && reduced[rank - 1];
  bool outer = !inner && nred > 0;
  uint32_t gi = UINT32_MAX, gr = UINT32_MAX;
  if (apart) group_axes(b, reduced, &gi, &gr);
  fu_status st = FU_OK;
  fu_reduce_mode mode = FU_RM_SERIAL;
  char why[768] = "";
  if (!inner && !outer && rank == 0) {
    /* a 0-d operand: no axis to schedule (the segment keeps no kernel) */
    if (debug) fprintf(debug, "schedule: @%s: a reduction of a 0-d value has no axis: not scheduled\n", sname);
    fu_mem_free(&m->alloc, b, sizeof *b);
    return FU_OK;
  } else if (!inner && !outer) {
    no_reduced_dim(b, reduced, why, sizeof why);
  } else if (inner) {
    double row = estimate_where(f, ref, reduced, true), rows = estimate_where(f, ref, reduced, false);
    uint32_t i = apart ? gi : first > 0 ? merge_dims(b, 0, first, "i") : UINT32_MAX;
    uint32_t r = apart ? gr : merge_dims(b, first, rank, "r"), ro, rv = UINT32_MAX, rs, rx;
    /* vectors run along the innermost reduced dims (the trailing run of
     * reduced dims, contiguous in memory and innermost in `r`) */
    int32_t run = rank;
    while (run > 0 && reduced[run - 1]) run--;
    int64_t vw = vector_width(f, seg, ref, run, rank), pw = 0;
    if (vw > max_vw) vw = max_vw;
    /* rows whose length (or start) does not let every vector be whole and
     * aligned: peel them at run time (tail=peel) when an input of the
     * reference's shape can carry the vectors and the rows are long (a
     * short row's head and tail would be most of it) and of a symbolic
     * length, or it is one row (seed002's var of a symbolic [i0, i1]).
     * Rows of a constant odd length stay scalar: on the H100 rows of 4099
     * f32 ran 81.3 us peeled against 76.2 with scalar loads (a head, a
     * tail and two vectors a thread at 512 threads; 256 or 128 threads
     * were no better).  A hand-written schedule may still peel them. */
    bool row_sym = false;
    for (int32_t d = run; d < rank; d++) row_sym |= ref->type.dims[d].sym != NULL;
    const fu_value *anchor = peel_anchor(seg, ref, &pw);
    if (pw > max_vw) pw = max_vw;
    bool peel = anchor && vw <= 1 && pw > 1 && ((row > SHORT_ROW && row_sym) || i == UINT32_MAX) &&
                row >= 4.0 * (double)pw;
    char vwhy[256] = "";
    if (peel) {
      snprintf(vwhy, sizeof vwhy,
               "; %lld-element vector loads of %%%s, peeled at run time (%s): each row a scalar head up to its "
               "first 16-byte boundary, whole vectors, a scalar tail (tail=peel)",
               (long long)pw, anchor->name ? anchor->name : "?", no_vector_why(ref, run, rank, false));
      vw = pw;
    }
    *vw_used = vw;
    if (vw > 1) split_axis(b, r, vw, "ro", "rv", &ro, &rv);
    else ro = r;
    if (peel) b->xf[b->n_xf - 1].tail = FU_TAIL_PEEL;
    b->peel = peel ? anchor : NULL;
    double vecs = row / (double)vw; /* vector loads per row */
    if (!peel && vw > 1) {
      snprintf(vwhy, sizeof vwhy, "; %lld-element vector loads", (long long)vw);
    } else if (!peel) {
      snprintf(vwhy, sizeof vwhy, "; scalar loads (%s)",
               max_vw < 2 ? "wider vectors do not fit every access" : no_vector_why(ref, run, rank, false));
    }
    if (row <= SHORT_ROW && i != UINT32_MAX) {
      /* a group of tx <= 32 threads per row, about two vectors (or
       * elements) each so that two loads are in flight, several rows per
       * warp and per block of 256; while a thread has fewer than
       * ROW_BYTES in flight and the blocks would still make two waves,
       * each thread group reduces ku rows side by side (a kept unroll
       * loop: all their loads issued before any combine) */
      int64_t tx = pow2_at_least(vecs / 2);
      if (tx < 2) tx = 2;
      if (tx > dev->warp_size) tx = dev->warp_size;
      int64_t ty = 256 / tx, ku = 1;
      double bytes = ceil(vecs / (double)tx) * (vw > 1 ? 16.0 : (double)fu_dtype_size(ref->type.dtype));
      double two_waves = 2.0 * dev->n_sms * (double)(dev->max_threads_per_sm / 256);
      while (ku < 4 && bytes * (double)ku < ROW_BYTES && rows / (double)(ty * ku * 2) >= two_waves) ku *= 2;
      uint32_t ib, iy, ig, iu = UINT32_MAX;
      mode = FU_RM_WARP;
      split_axis(b, ro, tx, "rs", "rx", &rs, &rx);
      split_axis(b, i, ty, ku > 1 ? "ig" : "ib", "iy", &ig, &iy);
      if (ku > 1) split_axis(b, ig, ku, "ib", "iu", &ib, &iu);
      else ib = ig;
      const uint32_t la[] = {ib, iy, rx, iu, rs};
      const fu_ptype lp[] = {FU_PT_BLOCK_X, FU_PT_THREAD_Y, FU_PT_THREAD_X, FU_PT_UNROLL, FU_PT_SERIAL};
      for (uint32_t k = 0; k < 5; k++)
        if (la[k] != UINT32_MAX) add_loop(b, la[k], lp[k]);
      char uwhy[128] = "";
      if (ku > 1)
        snprintf(uwhy, sizeof uwhy, ", %lld rows per thread group side by side (%.0f bytes in flight a thread)",
                 (long long)ku, bytes * (double)ku);
      snprintf(why, sizeof why,
               "short rows (%.0f elements <= %d): %lld threads per row (shuffles within the warp), %lld rows per "
               "block%s, %.0f rows%s",
               row, SHORT_ROW, (long long)tx, (long long)(ty * ku), uwhy, rows, vwhy);
    } else {
      /* one block per row: enough threads for UNROLL vectors each,
       * 64..512, or 1024 for vectors where the rows alone fill the device
       * (half a wave of 2 blocks an SM); the serial loop unrolled so those loads
       * are in flight.  var_mean of f32 [8192, 8192] ran 93.0 us at 1024
       * threads against 99.2 at 512 (H100) */
      int64_t unroll = vw > 1 ? 2 : 4, tx = pow2_at_least(vw > 1 ? vecs / unroll : row / 8);
      double two_an_sm = (double)dev->n_sms * (double)(dev->max_threads_per_sm / 1024);
      bool fills = vw > 1 && i != UINT32_MAX && rows >= two_an_sm / 2;
      if (tx < 64) tx = 64;
      if (tx > (fills ? 1024 : 512)) tx = fills ? 1024 : 512;
      if ((uint32_t)tx > dev->max_threads_per_block) tx = dev->max_threads_per_block;
      /* a small reduction of every dim, split over the grid, whose blocks
       * would not fill half the device even at `unroll` iterations a
       * thread (a grid split's smallest chunk): smaller blocks and more of
       * them, down to 256 threads.
       * seed002's 262,144 elements ran in 11.5 us in 128 blocks of 512
       * threads, 10.5 in 256 blocks of 256 and 11.7 in 512 of 128 (H200) */
      while (i == UINT32_MAX && tx > 256 && vecs / (double)tx >= 4.0 * (double)unroll &&
             rows * (vecs / (double)(tx * unroll)) < (double)dev->n_sms * (double)(dev->max_threads_per_sm / (uint32_t)tx) / 2)
        tx /= 2;
      mode = FU_RM_BLOCK;
      split_axis(b, ro, tx, "rs", "rx", &rs, &rx);
      if (i != UINT32_MAX) add_loop(b, i, FU_PT_BLOCK_X);
      double per = vecs / (double)tx;
      /* too few rows to fill the device with one block each: split the
       * row over blockIdx.y too, each block a contiguous chunk of `per`
       * iterations (a power of two, at least the unroll), the blocks'
       * partials combined through a workspace by the last to finish */
      char gwhy[384] = "";
      /* rows of static extent that fit gridDim.y may move there */
      bool rows_on_y = i != UINT32_MAX && rows <= (double)dev->max_grid_yz;
      for (int32_t d = 0; d < rank; d++) rows_on_y &= reduced[d] || ref->type.dims[d].sym == NULL;
      grid_ask ask = {.threads = tx, .groups = rows, .unroll = unroll, .rows_on_y = rows_on_y,
                      .gname = "row(s)", .bname = "blocks per row"};
      if (grid_split(b, dev, &ask, &rs, &per, gwhy, sizeof gwhy)) {
        mode = FU_RM_GRID;
        if (ask.chunks_on_x && i != UINT32_MAX) rebind_loop(b, i, FU_PT_BLOCK_Y);
      }
      add_loop(b, rx, FU_PT_THREAD_X);
      serial_loops(b, rs, per, unroll);
      snprintf(why, sizeof why,
               "%s (%.0f elements): %s of %lld threads per row, shuffles then shared memory, %.0f row(s)%s%s%s",
               i == UINT32_MAX ? "a reduction of every dim" : "long rows", row,
               mode == FU_RM_GRID ? "blocks" : "one block", (long long)tx, rows, vwhy,
               per >= (double)unroll ? (unroll == 2 ? ", serial loop unrolled by 2" : ", serial loop unrolled by 4")
                                     : "",
               gwhy);
    }
    if (rv != UINT32_MAX) add_loop(b, rv, FU_PT_VECTORIZE);
  } else {
    double cols = estimate_where(f, ref, reduced, false), depth = estimate_where(f, ref, reduced, true);
    uint32_t r = apart ? gr : merge_dims(b, 0, last + 1, "r");
    uint32_t i = apart ? gi : merge_dims(b, last + 1, rank, "i"), ib, ix, io = i, iv = UINT32_MAX;
    /* vectors along the trailing run of kept dims (contiguous in memory,
     * innermost in `i`): each thread owns vw adjacent columns, one state
     * each, loaded as one 16-byte vector per row */
    int32_t run = rank;
    while (run > 0 && !reduced[run - 1]) run--;
    int64_t vw = vector_width(f, seg, ref, run, rank);
    if (vw > max_vw) vw = max_vw;
    *vw_used = vw;
    if (vw > 1) split_axis(b, i, vw, "io", "iv", &io, &iv);
    double vcols = cols / (double)vw; /* column vectors */
    char vwhy[128] = "";
    if (vw > 1) snprintf(vwhy, sizeof vwhy, "; %lld-element vector loads along the columns", (long long)vw);
    else snprintf(vwhy, sizeof vwhy, "; scalar loads (%s)", no_vector_why(ref, run, rank, true));
    if (depth < 64) {
      /* shallow: each thread owns a column (vector) and walks down serially */
      int64_t tx = pow2_at_least(vcols);
      if (tx < 32) tx = 32;
      if (tx > 128) tx = 128;
      split_axis(b, io, tx, "ib", "ix", &ib, &ix);
      add_loop(b, ib, FU_PT_BLOCK_X);
      add_loop(b, ix, FU_PT_THREAD_X);
      add_loop(b, r, FU_PT_SERIAL);
      snprintf(why, sizeof why,
               "outer reduction (%.0f rows down, %.0f columns): each thread owns %s and walks down serially, "
               "%lld threads per block%s",
               depth, cols, vw > 1 ? "a vector of columns" : "a column", (long long)tx, vwhy);
    } else {
      /* deep: a warp spans 32 columns (128-byte lines), OUTER_TY warps of
       * a block split the rows (threadIdx.y, combined through shared
       * memory), the serial loop unrolled by 4 (2 with vectors: as many
       * bytes in flight in fewer registers); with vectors, or fewer
       * than 32 columns, tx threads span the columns (1 to 32, the power
       * of two at least the column vectors, so a warp reads whole lines
       * of one or more rows) and 512 / tx rows split over threadIdx.y;
       * too few column
       * blocks to fill the device: the rows split over blockIdx.y too
       * (reduce=grid) */
      int64_t tx = 32, ty = OUTER_TY, unroll = vw > 1 ? 2 : 4;
      if (vw > 1 || vcols < 32) {
        /* fewer column vectors (or columns) than a warp: tx threads, the
         * power of two at least their count, so no thread idles on a
         * column that is not there, and a warp reads 32 / tx rows (whole
         * lines where rows are contiguous); up to 512 rows a block, their
         * slots folded in a tree (the lowering's fold_rows) */
        tx = pow2_at_least(vcols);
        if (tx > dev->warp_size) tx = dev->warp_size;
        ty = 512 / tx;
      }
      /* few rows (at most FEW_ROWS) and too few column blocks to fill
       * the device: narrower column blocks (down to 16 threads, more rows
       * a block) rather than a grid split, whose second phase (the
       * semaphore, the last block's combine) costs more than such rows
       * spread over more blocks save: on the H100 the sum of a norm
       * backward's 264 partial rows of 4096 (f32) took 4.8 us in 64 blocks
       * of 16 x 32 threads against 6.8 in 288 blocks of 32 x 16 with
       * reduce=grid, and 5.1 in 128 blocks of 8 x 64 */
      bool few_rows = depth <= FEW_ROWS;
      double wave = (double)dev->n_sms * (double)(dev->max_threads_per_sm / (uint32_t)(tx * ty));
      while (few_rows && tx > 16 && ceil(vcols / (double)tx) < wave / 2) {
        tx /= 2;
        ty = 512 / tx;
      }
      int64_t ty0 = ty;
      /* every thread's states (vw of them with vectors) take a shared
       * slot in the threadIdx.y combine, and again in a grid's last block:
       * fewer rows per block while that passes SMEM_BUDGET */
      char swhy[96] = "";
      int64_t smem = 2 * state_bytes(seg) * vw * tx;
      while (ty > 2 && tx * ty > 32 && smem * ty > SMEM_BUDGET) ty /= 2;
      if (ty != ty0)
        snprintf(swhy, sizeof swhy, " (%lld rows a block: the states' shared slots stay within %d bytes)",
                 (long long)ty, SMEM_BUDGET);
      uint32_t rs, rt;
      split_axis(b, io, tx, "ib", "ix", &ib, &ix);
      split_axis(b, r, ty, "rs", "rt", &rs, &rt);
      double colblocks = ceil(vcols / (double)tx), per = depth / (double)ty;
      char gwhy[384] = "";
      mode = FU_RM_BLOCK;
      add_loop(b, ib, FU_PT_BLOCK_X);
      grid_ask ask = {.threads = tx * ty, .groups = colblocks, .unroll = unroll,
                      .per_sm_regs = outer_thread_regs(seg, vw),
                      .segment_bytes = tx * vw * (int64_t)fu_dtype_size(ref->type.dtype),
                      .gname = "column block(s)", .bname = "blocks down"};
      if (few_rows && colblocks < wave / 2)
        snprintf(gwhy, sizeof gwhy, "; %.0f column block(s) of %lld threads for %.0f rows (at most %d: no grid split)",
                 colblocks, (long long)tx, depth, FEW_ROWS);
      else if (grid_split(b, dev, &ask, &rs, &per, gwhy, sizeof gwhy))
        mode = FU_RM_GRID;
      add_loop(b, ix, FU_PT_THREAD_X);
      add_loop(b, rt, FU_PT_THREAD_Y);
      if (mode == FU_RM_GRID && ask.full_unroll) add_loop(b, rs, FU_PT_UNROLL);
      else serial_loops(b, rs, per, unroll);
      snprintf(why, sizeof why,
               "outer reduction (%.0f rows down, %.0f columns): %lld columns per block on threadIdx.x, the rows split "
               "over %lld %s on threadIdx.y (combined through shared memory%s)%s%s%s%s",
               depth, cols, (long long)(tx * vw), (long long)ty, tx == 32 ? "warps" : "threads",
               fu_reduction_rows_fold((uint32_t)ty, has_welford(seg)) ? ", folded in a tree" : "", swhy,
               mode == FU_RM_GRID && ask.full_unroll ? ""
               : per >= (double)unroll ? (unroll == 2 ? ", serial loop unrolled by 2" : ", serial loop unrolled by 4")
                                        : "",
               vwhy, gwhy);
    }
    if (iv != UINT32_MAX) add_loop(b, iv, FU_PT_VECTORIZE);
  }
  fu_schedule *s = NULL;
  if (st == FU_OK && !(s = fu_arena_calloc(m->arena, 1, sizeof *s))) st = FU_ERR_NOMEM;
  if (st == FU_OK) {
    s->reference = (fu_value *)ref;
    s->loc = seg->loc;
    s->reduce = mode;
    s->kind = FU_SK_REDUCTION;
    s->axes = fu_arena_memdup(m->arena, b->axes, b->n_axes, sizeof *b->axes);
    s->xforms = b->n_xf ? fu_arena_memdup(m->arena, b->xf, b->n_xf, sizeof *b->xf) : NULL;
    s->loops = fu_arena_memdup(m->arena, b->loops, b->n_loops, sizeof *b->loops);
    s->n_axes = b->n_axes;
    s->n_xforms = b->n_xf;
    s->n_loops = b->n_loops;
    for (uint32_t a = 0; s->axes && a < s->n_axes; a++)
      if (!(s->axes[a].name = fu_arena_strdup(m->arena, b->names[a]))) st = FU_ERR_NOMEM;
    char arch[16];
    fu_device_arch(dev, arch, sizeof arch);
    s->device = fu_arena_strdup(m->arena, dev->name);
    s->arch = fu_arena_strdup(m->arena, arch);
    if (!s->axes || !s->loops || (b->n_xf && !s->xforms) || !s->device || !s->arch) st = FU_ERR_NOMEM;
  }
  if (st == FU_OK && b->peel) {
    /* the peeled input's vectors are aligned by the peel: access=vector */
    if (!(s->tensors = fu_arena_calloc(m->arena, 1, sizeof *s->tensors))) st = FU_ERR_NOMEM;
    else s->tensors[s->n_tensors++] = (fu_stensor){.value = (fu_value *)b->peel, .memory = FU_MEM_GLOBAL,
                                                   .inline_pos = -1, .access = FU_ACCESS_VECTOR, .loc = fu_loc_none()};
  }
  bool peeled = b->peel != NULL;
  fu_mem_free(&m->alloc, b, sizeof *b);
  fu_igraph *g = NULL;
  if (st == FU_OK) st = fu_igraph_build(f, seg, s, m->alloc, diag, &g);
  /* under a peel every other input and full-size output goes element by element */
  if (st == FU_OK && peeled) st = fu_schedule_mark_scalar(m, g, s);
  if (st != FU_OK) fu_igraph_free(g);
  if (st == FU_OK) {
    s->index_dtype = fu_igraph_index_dtype(g);
    fu_igraph_free(g);
    if (debug)
      fprintf(debug, "schedule: @%s: reduction of %%%s, reduce=%s: %s, index %s\n", sname,
              ref->name ? ref->name : "?", fu_reduce_mode_name(mode), why, fu_dtype_name(s->index_dtype));
    *out = s;
  }
  return st;
}

/* The reduction schedule with the widest vectors that verify
 * (passes/schedule/narrow.c says why that is a retry). */
fu_status fu_schedule_reduction_kind(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag,
                                     FILE *debug, fu_schedule **out) {
  return fu_schedule_narrowed(f, seg, dev, diag, debug, build_schedule, out);
}
