/* fuser: the persistent (normalization) scheduler.
 *
 * A persistent segment reduces rows and then uses them again (softmax,
 * layer norm, RMS norm): the kernel makes one pass over its row per group
 * of independent reductions, combines each across the row's threads, and
 * a last pass computes and stores the outputs (passes/lower/persistent.c).
 * The reference is the reductions' operand; its kept dims merge into `i`
 * and its reduced dims, which include the last one, into `r` (inner
 * normalizations, and batch norm over N, H, W of NCHW: a row gathered from
 * runs apart; outer ones, the last dim kept, are split by the segmenter).
 * The ladder, on the row length N in vectors of V elements (16 bytes of
 * the widest full-size tensor, V dividing N):
 *   - up to 64 vectors: a group of 2..32 threads of one warp per row
 *     (one vector each up to 32 vectors, then about 2), 256 / group rows
 *     per block, shuffles only
 *     (reduce=warp); with few rows, no more rows per block than there are
 *     and a group widened until the block is whole warps;
 *   - longer: 64..1024 threads per row (about 4 vectors each, or about 2
 *     up to 512 threads where the rows make 8 waves of such blocks),
 *     shuffles then shared memory across the warps (reduce=block), 256
 *     threads per block at least (several rows per block below 256
 *     threads per row); a row that power of two does not divide is split
 *     exactly over a multiple of 32 threads instead (split_threads);
 *   - where no such split exists at V and the ladder leaves threads fewer
 *     than 2 whole vectors: narrower vectors that split the row exactly,
 *     or else the threads that leave the fewest vector slots idle, the
 *     last vector guarded (plan_row);
 * and where a row is kept:
 *   - persist=registers when the row length is constant and each thread's
 *     part of every cached input (the full-size inputs), counted in its
 *     compute dtype (f32 for f16 and bf16), fits in REG_BYTES bytes: loaded
 *     once, 16-byte vectors, reused by every pass; at 1024 threads per row
 *     that is rows of up to 32768 elements with one full-size input (ptxas
 *     keeps them without spilling: 64 registers per thread at 1024
 *     threads; 64 elements per thread spill);
 *   - persist=smem otherwise, for a constant row whose inputs that several
 *     passes read fit in shared memory (staged in their dtype, beside the
 *     reductions' slots, within the device's smem_per_block: a bf16 row of
 *     65536 is 128 KiB of the H100's 227 KiB): the first pass stores them
 *     there, the later ones read them there; those that do not fit are
 *     reread (passes/schedule/persist_stage.c picks them);
 *   - persist=reread otherwise (a symbolic row, or one too long for shared
 *     memory too): every pass reads the row from global memory again (from
 *     L2 when the rows in flight fit it), a serial loop of any trip count,
 *     512 threads per row, correct for any length.
 * Rows longer than the segmenter's limit (FU_SEG_PERSISTENT_MAX_ELEMS)
 * never reach this scheduler: they become a reduction kernel and a
 * pointwise kernel.
 *
 * A segment with partial sums (the inner-outer rewrite, inner_outer.c:
 * a norm backward's weight gradients summed over the rows) loops over
 * rows: `split i, P -> is, ib`, block ib takes rows ib, ib + P, ... in the
 * kept serial loop `is` (P = the parts), and each thread accumulates its
 * columns of every partial sum in registers across them, 4 bytes each per
 * element beside the cached inputs in the register budget. */
#include <stdio.h>
#include <string.h>

#include "fuser/index_graph.h"
#include "fuser/schedule.h"
#include "internal.h"

enum {
  MAX_AXES = 32,
  REG_BYTES = 128,    /* bytes of cached inputs per thread (32 registers) */
  GATHER_BYTES = 112, /* the same where the row gathers runs apart (batch norm NCHW): its index math takes more */
  WARP_VECS = 64,     /* rows of at most this many vectors take a warp or less */
  VECS_PER_THREAD = 4, /* the target number of vectors (loads in flight) per thread */
  WARP_VECS_PER_THREAD = 2, /* the same for a warp's row, and a longer one where the rows are many */
  ONE_VEC_ROW = 32,     /* rows of at most this many vectors take one vector a thread */
  REREAD_THREADS = 512, /* threads per row with persist=reread */
  SMEM_UNROLL = 16,     /* persist=smem unrolls the row loop up to this many vectors per thread */
  MAX_CLUSTER = 8,      /* blocks a row may be split over (the portable cluster size) */
  SPLIT_PER_MIN = 2,    /* split_threads: vectors per thread, at least */
  SPLIT_PER_MAX = 5,    /* at most */
  SPLIT_PER_TARGET = 3, /* and preferably */
  NARROW_MIN_BYTES = 4,  /* plan_row narrows a vector down to this many bytes at least, */
  NARROW_THREAD_BYTES = 16, /* to a plan whose threads each load this many bytes of a row at least, */
  NEAR_IDLE_SHARE = 8    /* and, for a split that is not exact, only from one with more than 1/8 of its slots idle */
};

typedef struct pbuild {
  fu_saxis axes[MAX_AXES];
  char names[MAX_AXES][8];
  fu_sxform xf[MAX_AXES];
  fu_sloop loops[8];
  uint32_t n_axes, n_xf, n_loops;
} pbuild;

static uint32_t axis_new(pbuild *b, const char *name, int32_t ref_dim, int32_t def) {
  uint32_t a = b->n_axes++;
  snprintf(b->names[a], sizeof b->names[a], "%s", name);
  b->axes[a] = (fu_saxis){.name = b->names[a], .ref_dim = ref_dim, .def = def, .loc = fu_loc_none()};
  return a;
}

/* The reference dims as root axes, in dim order (the order the schedule's
 * `reference` line lists them): d<d>, or `i` / `r` for the one kept or the
 * one reduced dim. */
static void root_axes(pbuild *b, const bool *reduced, int32_t rank, uint32_t *roots) {
  int32_t n_red = 0;
  for (int32_t d = 0; d < rank; d++) n_red += reduced[d];
  for (int32_t d = 0; d < rank; d++) {
    char nm[8];
    snprintf(nm, sizeof nm, "d%d", (int)d % 100);
    bool alone = reduced[d] ? n_red == 1 : rank - n_red == 1;
    roots[d] = axis_new(b, alone ? (reduced[d] ? "r" : "i") : nm, d, -1);
  }
}

/* The root axes of the dims d with reduced[d] == want merged, in order,
 * into one axis named `name`, or UINT32_MAX when there are none. */
static uint32_t merged(pbuild *b, const uint32_t *roots, const bool *reduced, int32_t rank, bool want,
                       const char *name) {
  uint32_t cur = UINT32_MAX;
  int32_t n = 0, k = 0;
  for (int32_t d = 0; d < rank; d++) n += reduced[d] == want;
  for (int32_t d = 0; d < rank; d++) {
    if (reduced[d] != want) continue;
    uint32_t a = roots[d];
    if (cur != UINT32_MAX) {
      char mid[8];
      snprintf(mid, sizeof mid, "m%u", b->n_axes % 100u);
      b->xf[b->n_xf] = (fu_sxform){.kind = FU_SX_MERGE, .in = {cur, a}, .loc = fu_loc_none()};
      a = b->xf[b->n_xf].out[0] = axis_new(b, k + 1 == n ? name : mid, -1, (int32_t)b->n_xf);
      b->n_xf++;
    }
    cur = a;
    k++;
  }
  return cur;
}

/* x split by f into (outer, inner); exact when `exact`. */
static void split_in(pbuild *b, uint32_t x, int64_t f, bool exact, const char *on, const char *in, uint32_t *o,
                     uint32_t *i) {
  fu_sxform *t = &b->xf[b->n_xf];
  *t = (fu_sxform){.kind = FU_SX_SPLIT, .in = {x}, .factor = f, .tail = exact ? FU_TAIL_EXACT : FU_TAIL_GUARD,
                   .loc = fu_loc_none()};
  t->out[0] = *o = axis_new(b, on, -1, (int32_t)b->n_xf);
  t->out[1] = *i = axis_new(b, in, -1, (int32_t)b->n_xf);
  b->n_xf++;
}

static void bind(pbuild *b, uint32_t a, fu_ptype p) {
  b->loops[b->n_loops++] = (fu_sloop){.axis = a, .ptype = p, .loc = fu_loc_none()};
}

/* The extent of a reference dim at the example sizes (a symbol bound by
 * an input's example shape), or `dflt` when unbound. */
static double dim_estimate(fu_fusion *f, fu_extent e, double dflt) {
  if (!e.sym) return (double)e.value;
  for (fu_op *op = f->body.first; op; op = op->next) {
    if (op->kind != FU_OP_INPUT || !op->n_results) continue;
    const fu_type *t = &op->results[0]->type;
    const fu_example *ex = &op->u.input.example;
    for (int32_t k = 0; ex->shape && ex->rank == t->rank && k < t->rank; k++)
      if (t->dims[k].sym && strcmp(t->dims[k].sym, e.sym) == 0) return (double)ex->shape[k];
  }
  return dflt;
}

/* The vector: 16 bytes of the widest full-size tensor (0: bool among
 * them, scalar), at most 8 elements and `cap`, dividing the trailing run
 * of n elements. */
static int64_t vector_width(size_t widest, int64_t n, int64_t cap) {
  int64_t vw = widest ? (int64_t)(16 / widest) : 1;
  if (vw > 8) vw = 8;
  if (vw > cap) vw = cap;
  while (vw > 1 && n % vw != 0) vw /= 2;
  return vw;
}

static int64_t pow2_ceil(double x) {
  int64_t p = 1;
  while ((double)p < x && p < 1024) p *= 2;
  return p;
}

/* Rows a block takes at tx threads a row: 256 threads a block below 256
 * threads a row, and, with few rows (constant kept dims, m of them), no
 * more than there are, to a power of two.  A row of several warps takes
 * fewer where that many do not divide m (down to one): the guard of the
 * last block's missing rows cost a block reduction more than smaller
 * blocks do (layer norm of bf16 [43690, 1536] on the H100: 100.7 us at 4
 * rows a block, 94.0 at 2; [43689, 1536] 94.1 at 1). */
static int64_t rows_per_block(int64_t tx, bool kept_const, int64_t m) {
  int64_t ty = tx < 256 ? 256 / tx : 1;
  if (kept_const && ty > pow2_ceil((double)m)) ty = pow2_ceil((double)m);
  while (kept_const && tx >= 64 && ty > 1 && m % ty != 0) ty /= 2;
  return ty;
}

/* Threads per row (tx), rows per block (ty), vectors per thread (per),
 * and whether the row is a warp's (warp) and fits the registers (regs)
 * within `budget` bytes a thread of `cached` bytes per element; pow2_tx:
 * the ladder's power of two where a split replaced it (split_threads),
 * else 0, counted at the plan's vectors for an exact split and at the
 * widest ones (narrowed_from, when set) for a near split; narrowed_from:
 * the vector width plan_row narrowed, else 0; alone_from: the rows a
 * block plan_row gave up for one (a guarded split), else 0. */
typedef struct tplan {
  int64_t tx, ty, per, pow2_tx, narrowed_from, alone_from;
  bool warp, regs;
} tplan;

/* Threads per row, a multiple of the warp size (two warps or more) that
 * gives each thread SPLIT_PER_MIN..SPLIT_PER_MAX of the row's `vecs`
 * vectors, for a row the power-of-two ladder would leave a guarded tail
 * vector in (a row length that is not a power of two times 8, as most
 * models' widths are); 0 when none fits.  With `exact`, the threads divide
 * the row, the count of vectors nearest SPLIT_PER_TARGET (ties: fewer
 * vectors).  Without (a near split, plan_row), the last vector of some
 * threads is guarded: the fewest idle vector slots, then the count
 * nearest the target, then more threads.  The ladder's threads with one
 * vector, or one and a guarded second, leave too few loads in flight:
 * layer norm of bf16 rows of 1536, 2560, 3072, 5120, 6144 and 12288 ran
 * at 69-84% of copy bandwidth on the H100 with the ladder's 128-1024
 * threads, at 94-96% split exactly over 64-512 threads of 2-4 vectors
 * (docs/performance.md, "Rows that are not a power of two"); a guarded
 * last vector behind 2 whole ones costs little (near splits, plan_row). */
static int64_t split_threads(const fu_device *dev, int64_t vecs, int64_t bytes_per_vec, int64_t budget, bool exact) {
  int64_t best = 0, best_d = 0, best_idle = 0;
  for (int64_t t = 2 * (int64_t)dev->warp_size; t <= (int64_t)dev->max_threads_per_block; t += dev->warp_size) {
    if (exact && vecs % t) continue;
    int64_t per = (vecs + t - 1) / t, idle = per * t - vecs;
    int64_t d = per > SPLIT_PER_TARGET ? per - SPLIT_PER_TARGET : SPLIT_PER_TARGET - per;
    if (per < SPLIT_PER_MIN || per > SPLIT_PER_MAX || per * bytes_per_vec > budget) continue;
    /* beyond 512 threads only where two blocks fit an SM's registers */
    if (t > 512 && fu_persist_register_blocks(dev, t, per * bytes_per_vec) < 2) continue;
    bool better = !best || idle < best_idle || (idle == best_idle && (d < best_d || (d == best_d && t > best)));
    if (better) best = t, best_d = d, best_idle = idle;
  }
  return best;
}

/* The ladder of the header for rows of `vecs` vectors of vw elements (m
 * rows when kept_const); with `one_row`, one row per block (partial
 * sums). */
static tplan plan_threads(const fu_device *dev, double vecs, int64_t vw, bool row_const, bool kept_const, int64_t m,
                          size_t cached, int64_t budget, bool one_row) {
  bool warp = vecs <= WARP_VECS;
  /* a row of a warp or less: about 2 vectors a thread, 256 / tx rows a
   * block side by side (on the H100 softmax of bf16 [262144, 256] ran
   * 93.4 us at 16 threads a row against 98.1 at 8, layer norm 94.6
   * against 95.6); longer rows about 4, or about 2 (up to 512 threads)
   * where the rows make 8 waves of such blocks or more: softmax, layer
   * norm and RMS norm of bf16 [16384, 4096] at 256 threads 93.3-94.5 us
   * against 93.8-95.4 at 128, logsumexp of f32 [16384, 4096] at 512
   * 93.2 against 97.1 at 256, rows of 1024 at 64 threads (4 rows a block)
   * 93.3-94.5 against 93.8-95.7 at a warp; a group norm of 1024 rows of
   * 6272 ran 16.4 us at 512 threads against 14.7 at 256 (two waves).
   * 1024 threads only where two such blocks fit an SM's registers
   * (fu_persist_register_blocks; the lowering asks ptxas for them): an RMS
   * norm of [4096, 16384] ran 102.7 us at 1024 threads with one block an
   * SM (38 registers) against 94.2 at 512; softmax 93.5 at 1024 with two
   * against 105.2 at 512 */
  int64_t tx = pow2_ceil(vecs / (warp ? WARP_VECS_PER_THREAD : VECS_PER_THREAD));
  /* a row of a warp's vectors or fewer: one each (layer norm of bf16
   * [262144, 256] 93.7 us at 32 threads a row against 94.6-94.8 at 16, RMS
   * norm 93.1 against 93.3, softmax 93.1-93.3 against 93.1-93.2; f32
   * [262144, 128] within 0.3% either way) */
  if (warp && vecs <= ONE_VEC_ROW) tx = pow2_ceil(vecs);
  if (!warp) {
    int64_t t2 = pow2_ceil(vecs / WARP_VECS_PER_THREAD);
    if (t2 < 64) t2 = 64;
    double wave = (double)dev->n_sms * (double)(dev->max_threads_per_sm / (uint32_t)t2);
    int64_t per2 = ((int64_t)vecs + t2 - 1) / t2;
    bool fits = t2 <= 512 || (row_const && fu_persist_register_blocks(dev, t2, per2 * vw * (int64_t)cached) == 2);
    if (fits && kept_const && (double)m >= 8.0 * wave) tx = t2;
  }
  if (warp && tx < 2) tx = 2;
  if (warp && tx > (int64_t)dev->warp_size) tx = dev->warp_size;
  if (!warp && tx < 64) tx = 64;
  if ((uint32_t)tx > dev->max_threads_per_block) tx = dev->max_threads_per_block;
  /* few rows: no more rows per block than there are (to a power of two),
   * and a short row's thread group widened until the block is whole warps
   * (the reductions shuffle across full warps; the extra threads are the
   * guarded tail of rx) */
  int64_t ty = one_row ? 1 : rows_per_block(tx, kept_const, m); /* partial sums: a block's rows are its part */
  if (tx * ty < (int64_t)dev->warp_size) tx = (int64_t)dev->warp_size / ty;
  int64_t per = row_const ? ((int64_t)vecs + tx - 1) / tx : 0; /* vectors per thread */
  /* (an empty row has nothing to keep: reread, which loops 0 times) */
  bool regs = row_const && per >= 1 && per * vw <= FU_PERSIST_MAX_CACHED && (double)(per * vw) * (double)cached <= (double)budget;
  /* a row over the budget at "about 4 vectors" a thread may fit with more
   * threads per row (a layer-norm backward reads two bf16 rows of 4096:
   * 128 threads hold 256 bytes each, 256 threads 128) */
  while (!regs && !warp && row_const && per > 1 && tx * 2 <= (int64_t)dev->max_threads_per_block) {
    tx *= 2;
    ty = one_row ? 1 : rows_per_block(tx, kept_const, m);
    per = ((int64_t)vecs + tx - 1) / tx;
    regs = per * vw <= FU_PERSIST_MAX_CACHED && (double)(per * vw) * (double)cached <= (double)budget;
  }
  int64_t pow2_tx = 0;
  if (regs && !warp && row_const && (int64_t)vecs % tx != 0) {
    int64_t t = split_threads(dev, (int64_t)vecs, vw * (int64_t)cached, budget, true);
    int64_t w = dev->warp_size, wper = (int64_t)vecs / w;
    /* none over two warps or more: one warp of up to SPLIT_PER_MAX
     * vectors a thread, shuffles only (layer norm of bf16 rows of 768,
     * 96 vectors: 100.4 us at a warp of 3 against 111.6 at 64 threads of
     * 2, the second guarded); not with partial sums, whose rows take a
     * block each */
    if (!t && !one_row && (int64_t)vecs % w == 0 && wper <= SPLIT_PER_MAX && wper * vw * (int64_t)cached <= budget) {
      t = w;
      warp = true;
    }
    if (t) {
      pow2_tx = tx;
      tx = t;
      ty = one_row ? 1 : rows_per_block(tx, kept_const, m);
      per = (int64_t)vecs / tx;
    }
  }
  return (tplan){.tx = tx, .ty = ty, .per = per, .pow2_tx = pow2_tx, .warp = warp, .regs = regs};
}

/* Whether a plan at a narrowed vector of v elements (of `widest` bytes)
 * keeps enough loads in flight: NARROW_THREAD_BYTES of the row or more
 * a thread. */
static bool narrow_ok(int64_t per, int64_t v, size_t widest) {
  return per * v * (int64_t)widest >= NARROW_THREAD_BYTES;
}

/* The vector width (*vw_out) and the plan of plan_threads for a row of
 * `row` elements whose trailing run is n: the widest vector
 * (vector_width, at most `cap`), or, where that leaves threads fewer than
 * SPLIT_PER_MIN whole vectors and some a guarded last one (its vectors
 * split neither over the ladder's power of two nor exactly), the widest
 * narrower one of NARROW_MIN_BYTES or more that splits the row exactly
 * (tplan.narrowed_from: the width it replaced), its threads loading
 * NARROW_THREAD_BYTES or more of each row (vectors x bytes); where no
 * width splits the row exactly, a near split (below).  Rows of 1280 bf16
 * are 160 vectors of 8, which no multiple of 32 threads splits into 2 to
 * 5; in vectors of 4 they are 160 threads of 2.  A narrower width whose
 * ladder or exact split is under NARROW_THREAD_BYTES is passed over
 * whole, even where another count of threads at that width would pass.
 * On the H100 (bf16, 2^26 elements, layer norm / RMS norm / softmax, us;
 * docs/performance.md, "Narrower vectors and near splits"): rows of 1280
 * 103.5 / 93.7 / 93.2 -> 94.2 / 92.9 / 93.6, of 1152 (96 threads of 3
 * vectors of 4) 122.5 / 98.4 / 110.5 -> 98.7 / 93.2 / 93.0, of 1600 (160
 * threads of 5 vectors of 2, 20 bytes) 101.9 / 94.3 / 93.4 -> 97.4 / 93.6
 * / 93.3; but rows of 1408 at 352 threads of 2 vectors of 2 (8 bytes) ran
 * 132.0 / 108.7 / 126.7, and of 2112 at 352 threads of 3 (12 bytes) 108.4
 * / 101.1 / 107.7, where the near split gives 94.9 / 94.2 / 93.3 and
 * 96.0 / 94.3 / 93.5. */
static tplan plan_row_split(const fu_device *dev, double row, size_t widest, int64_t n, int64_t cap, bool row_const,
                            bool kept_const, int64_t m, size_t cached, int64_t budget, bool one_row,
                            int64_t *vw_out) {
  int64_t vw = row_const ? vector_width(widest, n, cap) : 1;
  tplan tp = plan_threads(dev, row / (double)vw, vw, row_const, kept_const, m, cached, budget, one_row);
  *vw_out = vw;
  int64_t vecs = (int64_t)(row / (double)vw);
  if (!row_const || !tp.regs || tp.warp || vecs % tp.tx == 0) return tp;
  /* every thread holds SPLIT_PER_MIN whole vectors, or none a second
   * (guarded) one: the ladder stays */
  if (vecs / tp.tx >= SPLIT_PER_MIN || tp.per < SPLIT_PER_MIN) return tp;
  for (int64_t v = vw / 2; v >= 1 && (size_t)v * widest >= NARROW_MIN_BYTES; v /= 2) {
    tplan t = plan_threads(dev, row / (double)v, v, row_const, kept_const, m, cached, budget, one_row);
    if (!t.regs || !narrow_ok(t.per, v, widest) || (int64_t)(row / (double)v) % t.tx != 0) continue;
    t.narrowed_from = vw;
    *vw_out = v;
    return t;
  }
  /* no exact split at any width: the threads that leave the fewest
   * vector slots idle, as a share of all, at the widest vector, or at a
   * narrower one that idles fewer where the wider idles more than 1 /
   * NEAR_IDLE_SHARE of its slots.  On the H100 (bf16, 2^26 elements, us):
   * layer norm over rows of 4544 (568 vectors of 8) 97.7 at 192 threads
   * of 3, 8 slots idle, against 136.8 at the ladder's 512 threads, one
   * vector each but 56; over rows of 2752 95.7 at 128 threads of 3 (40
   * of 384 idle) against 102.4 at 352 threads of 2 vectors of 4 (16
   * idle); over rows of 1216 116.1 at 64 threads of 3 (40 of 192 idle),
   * 96.2 at 160 threads of 2 vectors of 4 (16 of 320) */
  int64_t best_v = 0, best_t = 0, best_per = 0, best_idle = 0;
  for (int64_t v = vw; v >= 1 && (v == vw || (size_t)v * widest >= NARROW_MIN_BYTES); v /= 2) {
    if (best_t && best_idle * NEAR_IDLE_SHARE <= best_per * best_t) break;
    int64_t nv = (int64_t)(row / (double)v), t = split_threads(dev, nv, v * (int64_t)cached, budget, false);
    if (!t) continue;
    int64_t per = (nv + t - 1) / t, idle = per * t - nv;
    if (v != vw && !narrow_ok(per, v, widest)) continue;
    if (!best_t || idle * best_per * best_t < best_idle * per * t)
      best_v = v, best_t = t, best_per = per, best_idle = idle;
  }
  if (best_t && (best_t != tp.tx || best_v != vw)) {
    tp.pow2_tx = tp.tx;
    tp.narrowed_from = best_v != vw ? vw : 0;
    tp.tx = best_t;
    tp.ty = one_row ? 1 : rows_per_block(best_t, kept_const, m);
    tp.per = best_per;
    *vw_out = best_v;
  }
  return tp;
}

/* plan_row_split's plan, with one row a block where its threads split the
 * row's vectors with a guarded last one (the ladder's, or a near split)
 * over two warps or more: several rows a block ran slower there, not
 * where the threads divide the row.  On the H100 (bf16, 2^26 elements,
 * us, at 4 / 2 / 1 rows a block): rows of 1344 (64 threads of 3 vectors
 * of 8, 24 of 192 slots idle) layer norm 113.7 / 103.3 / 95.9, RMS norm
 * 98.2 / 95.5 / 94.4, softmax 111.7 / 95.1 / 94.1; rows split exactly the
 * same at any count (layer norm over 1024: 94.4 / 94.3 / 94.3).  Over 12
 * widths from 544 to 3008 (docs/performance.md, "One row a block"),
 * layer norm went from 94.1-111.8 us to 94.1-99.3, none of the three
 * norms more than 0.6% slower.  Where an SM takes too few blocks of one
 * row to fill its threads (no preset: 32 blocks of 64 threads fill an
 * H100's 2048), a block takes the fewest rows that fill it.  The cause,
 * found in the PTX and timed since: LLVM bounds tid.x by the block's
 * thread count, so every vector of a row of several a block is guarded;
 * with --enable=tid_range (lib/target/llvm/codegen.c) several rows of
 * softmax over 1344 ran as fast as one, so one row loses nothing. */
static tplan plan_row(const fu_device *dev, double row, size_t widest, int64_t n, int64_t cap, bool row_const,
                      bool kept_const, int64_t m, size_t cached, int64_t budget, bool one_row, int64_t *vw_out) {
  tplan tp = plan_row_split(dev, row, widest, n, cap, row_const, kept_const, m, cached, budget, one_row, vw_out);
  int64_t vecs = row_const ? (int64_t)(row / (double)*vw_out) : 0;
  if (!row_const || !tp.regs || tp.warp || vecs % tp.tx == 0 || tp.ty == 1) return tp;
  /* one row, or as few (a power of two, dividing the old count) as still
   * fill an SM where it takes few blocks */
  int64_t ty = 1;
  while (ty < tp.ty && tp.tx * ty * (int64_t)dev->max_blocks_per_sm < (int64_t)dev->max_threads_per_sm) ty *= 2;
  if (ty < tp.ty) {
    tp.alone_from = tp.ty;
    tp.ty = ty;
  }
  return tp;
}

/* The blocks of a thread-block cluster (sm_90) a constant row too long
 * for one block's registers is split over, with *tp the ladder's plan for
 * one block's part; 1 when there are no clusters or no split fits.  The
 * fewest blocks whose part fits the registers with two blocks resident
 * an SM (the ladder's 1024-thread rows, or fewer threads): a part that
 * fits only at one 1024-thread block an SM leaves that SM idle through
 * the row's reductions and barriers, as the rows staged in shared memory
 * do (softmax of bf16 [1024, 65536] at 83% of copy bandwidth, Nsight
 * Compute: 46% of cycles with no eligible warp).  Each block's part is
 * whole vectors a thread (the split is exact).  Off unless
 * --enable=clusters: on the H100 the cluster barriers cost more than the
 * idle SM did (softmax of bf16 [1024, 65536]: 138 us split over 4
 * blocks, 109 staged in shared memory; docs/performance.md). */
static int64_t cluster_split(const fu_device *dev, double vecs, int64_t vw, bool kept_const, int64_t m, size_t cached,
                             int64_t budget, tplan *tp) {
  for (int64_t c = 2; c <= MAX_CLUSTER && c <= (int64_t)dev->max_cluster; c *= 2) {
    tplan t = plan_threads(dev, vecs / (double)c, vw, true, kept_const, m * c, cached, budget, true);
    if (!t.regs || t.warp || (int64_t)vecs % (c * t.tx) != 0) continue;
    /* 1024 threads only as the ladder has them two an SM: about 2
     * vectors a thread (an f32 row of 65536 at 4 vectors of 4 a thread,
     * 64 bytes, spilled 4-16 bytes at the 32 registers two blocks leave) */
    if (2 * t.tx == (int64_t)dev->max_threads_per_sm &&
        (t.per > WARP_VECS_PER_THREAD || fu_persist_register_blocks(dev, t.tx, t.per * vw * (int64_t)cached) < 2))
      continue;
    *tp = t;
    return c;
  }
  return 1;
}

/* The schedule `b` describes, in the module's arena, with its index type
 * decided from the index graph. */
static fu_status finish(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag, const pbuild *b,
                        const fu_value *ref, fu_reduce_mode mode, fu_persist_mode pm, fu_stage_plan *sp,
                        fu_schedule **out) {
  fu_module *m = f->module;
  fu_schedule *s = fu_arena_calloc(m->arena, 1, sizeof *s);
  if (!s) return FU_ERR_NOMEM;
  char arch[16];
  fu_device_arch(dev, arch, sizeof arch);
  *s = (fu_schedule){.reference = (fu_value *)ref, .loc = seg->loc, .kind = FU_SK_PERSISTENT, .reduce = mode,
                     .persist = pm, .online = pm != FU_PM_REGISTERS && fu_online_softmax_pairs(seg) > 0,
                     .n_axes = b->n_axes,
                     .n_xforms = b->n_xf, .n_loops = b->n_loops,
                     .device = fu_arena_strdup(m->arena, dev->name), .arch = fu_arena_strdup(m->arena, arch)};
  s->axes = fu_arena_memdup(m->arena, b->axes, b->n_axes, sizeof *b->axes);
  s->xforms = b->n_xf ? fu_arena_memdup(m->arena, b->xf, b->n_xf, sizeof *b->xf) : NULL;
  s->loops = fu_arena_memdup(m->arena, b->loops, b->n_loops, sizeof *b->loops);
  if (!s->axes || !s->loops || (b->n_xf && !s->xforms) || !s->device || !s->arch) return FU_ERR_NOMEM;
  for (uint32_t a = 0; a < s->n_axes; a++)
    if (!(s->axes[a].name = fu_arena_strdup(m->arena, b->names[a]))) return FU_ERR_NOMEM;
  fu_igraph *g = NULL;
  fu_status st = fu_igraph_build(f, seg, s, m->alloc, diag, &g);
  if (st != FU_OK) return st;
  s->index_dtype = fu_igraph_index_dtype(g);
  /* a tensor that cannot be a vector along the row (a column-major or
   * strided input) is read or written element by element */
  st = fu_schedule_mark_scalar(m, g, s);
  fu_igraph_free(g);
  if (st != FU_OK) return st;
  /* the staged inputs (not one read element by element: the lowering
   * stages whole vectors; it leaves the plan); none left: reread */
  if (pm == FU_PM_SMEM && sp->n_staged) {
    fu_stensor *t = fu_arena_calloc(m->arena, s->n_tensors + sp->n_staged, sizeof *t);
    if (!t) return FU_ERR_NOMEM;
    for (uint32_t i = 0; i < s->n_tensors; i++) t[i] = s->tensors[i];
    s->tensors = t;
  }
  uint32_t kept = 0;
  for (uint32_t k = 0; pm == FU_PM_SMEM && k < sp->n_staged; k++) {
    const fu_value *v = sp->staged[k];
    if (fu_schedule_tensor(s, v)) {
      sp->bytes -= fu_persist_stage_bytes(v->type.dtype, sp->rows, sp->row);
      continue;
    }
    s->tensors[s->n_tensors++] = (fu_stensor){.value = (fu_value *)v, .memory = FU_MEM_SHARED, .inline_pos = -1,
                                              .loc = fu_loc_none(), .keep = (int32_t)sp->keep};
    sp->staged[kept++] = v;
  }
  if (pm == FU_PM_SMEM) sp->n_staged = kept;
  if (pm == FU_PM_SMEM && !kept) s->persist = FU_PM_REREAD;
  *out = s;
  return FU_OK;
}

/* The segment's first reduction (every reduction of a persistent segment
 * reduces the same dims of the same domain: the segmenter's check), or
 * NULL. */
static const fu_op *first_reduction(const fu_op *seg) {
  const fu_block *body = seg->u.segment.body;
  for (const fu_op *op = body ? body->first : NULL; op; op = op->next)
    if (fu_op_has(op->kind, FU_OF_REDUCTION)) return op;
  return NULL;
}

/* The reason, for --debug=schedule, of a constant row that did not fit
 * the registers (regs_why says why): staged in shared memory (`staged`),
 * or reread, with what did not fit (`planned`: the plan staged inputs,
 * which finish() dropped as read element by element). */
static void explain_smem(fu_strbuf *out, const fu_stage_plan *sp, bool staged, bool planned, const char *regs_why) {
  if (staged) {
    fu_strbuf_puts(out, "the row stays in shared memory: ");
    for (uint32_t k = 0; k < sp->n_staged; k++)
      fu_strbuf_printf(out, "%s%%%s", k ? ", " : "", sp->staged[k]->name ? sp->staged[k]->name : "?");
    fu_strbuf_printf(out, " staged (%lld bytes, and at most %lld for the reductions' slots, of %lld per block)",
                     (long long)sp->bytes, (long long)sp->slots, (long long)sp->limit);
    if (sp->keep)
      fu_strbuf_printf(out,
                       ", but for the first %lld of each thread's %lld vectors, which stay in registers (keep=) so "
                       "that two blocks of %lld threads fit in 7/8 of an SM's shared memory",
                       (long long)sp->keep, (long long)sp->chunks, (long long)sp->threads);
    else if (sp->keep_refused)
      fu_strbuf_printf(out,
                       ", one block an SM: no chunk stays in registers (keep=) because the reductions also read %%%s, "
                       "which is not staged, and that pass would spill",
                       sp->reduced_unstaged->name ? sp->reduced_unstaged->name : "?");
    for (uint32_t k = 0; k < sp->n_left; k++)
      fu_strbuf_printf(out, ", %%%s reread (%lld bytes more do not fit)", sp->left[k]->name ? sp->left[k]->name : "?",
                       (long long)sp->left_bytes[k]);
    fu_strbuf_printf(out, "; in registers, %s", regs_why);
    return;
  }
  fu_strbuf_printf(out, "the row is reread from global memory by every pass: %s", regs_why);
  if (planned)
    fu_strbuf_puts(out, ", and the inputs that shared memory would keep are read element by element");
  else if (sp->n_left)
    fu_strbuf_printf(out, ", and %lld row(s) of %%%s in shared memory (%lld bytes, and at most %lld for the reductions' "
                          "slots) are more than the %lld bytes of a block",
                     (long long)sp->rows, sp->left[0]->name ? sp->left[0]->name : "?", (long long)sp->left_bytes[0],
                     (long long)sp->slots, (long long)sp->limit);
}

/* The schedule with vectors of at most `cap` elements; *vw_out: the width
 * it chose.  With `scalar_staged`, no shared memory: an earlier try
 * staged inputs that the schedule reads element by element, which the
 * lowering does not stage (then *retry asks for that try).  With
 * `keep_ok`, a staged row may take keep= (fu_schedule_stage_keep). */
static fu_status build_tier(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag, FILE *debug,
                            int64_t cap, bool scalar_staged, bool keep_ok, int64_t *vw_out, fu_schedule **out,
                            bool *retry) {
  *out = NULL;
  const char *sname = seg->u.segment.name ? seg->u.segment.name : "?";
  const fu_op *red = first_reduction(seg);
  if (!red) {
    fu_error(diag, seg->loc, "persistent segment '@%s' has no reduction", sname);
    return FU_ERR_INVALID_ARG;
  }
  const fu_value *ref = red->operands[0];
  int32_t rank = ref->type.rank;
  bool reduced[FU_MAX_RANK];
  fu_reduction_dims(red, reduced);
  /* the reduced dims include the last one: r merges them in order, i the
   * kept ones (batch norm over N, H, W of NCHW: a row of N runs of H * W);
   * with the last dim kept (an outer normalization) the segmenter makes a
   * reduction kernel and a pointwise kernel instead */
  if (rank == 0 || !reduced[rank - 1]) {
    if (debug)
      fprintf(debug, "schedule: @%s: persistent segment whose last dim is kept (an outer normalization): comes later\n",
              sname);
    return FU_OK;
  }
  double row = 1, rows = 1;
  bool row_const = true;
  for (int32_t d = 0; d < rank; d++) {
    double e = dim_estimate(f, ref->type.dims[d], 1024.0);
    if (reduced[d]) row *= e, row_const &= !ref->type.dims[d].sym;
    else rows *= e;
  }
  /* a vector stays inside the trailing run of reduced dims (contiguous in
   * a row-major input) */
  int32_t run = rank;
  while (run > 0 && reduced[run - 1]) run--;
  int64_t n = 1;
  for (int32_t d = run; row_const && d < rank; d++) n *= ref->type.dims[d].value;
  size_t widest, cached;
  const fu_value *full[FU_STAGE_MAX];
  uint32_t n_full;
  fu_persist_full_size(seg, ref, row_const && row > 1, &widest, &cached, full, &n_full);
  /* partial sums: an f32 accumulator per element and sum, in registers */
  const fu_op *first_partial = NULL;
  uint32_t n_partial = fu_segment_partial_sums(seg, &first_partial, 1);
  int64_t parts = n_partial ? first_partial->u.partial.parts : 0; /* every one has the same (inner_outer.c) */
  cached += 4 * (size_t)n_partial;
  /* the kept rows, when constant (none kept: one row) */
  int64_t m = 1;
  bool kept_const = true;
  for (int32_t d = 0; d < rank; d++) {
    if (reduced[d]) continue;
    kept_const &= !ref->type.dims[d].sym;
    m *= ref->type.dims[d].sym ? 1 : ref->type.dims[d].value;
  }
  /* a row of runs apart (batch norm over N, H, W of NCHW) divides and
   * takes remainders per vector: bf16 rows of 25088 at 1024 threads (128
   * bytes) spill 24 bytes at 64 registers, f32 ones (112 bytes) do not */
  bool gathered = false;
  for (int32_t d = 0; d < run; d++) gathered |= reduced[d];
  int64_t budget = gathered ? GATHER_BYTES : REG_BYTES;
  /* the vector: 16 bytes of the widest full-size tensor, dividing a
   * constant row (a symbolic row, or bool tensors: scalar), narrower where
   * that splits the row better (plan_row) */
  int64_t vw = 1;
  tplan tp = plan_row(dev, row, widest, n, cap, row_const, kept_const, m, cached, budget, n_partial > 0, &vw);
  *vw_out = vw;
  double vecs = row / (double)vw;
  int64_t cluster = 1;
  if (!tp.regs && row_const && !tp.warp && !n_partial)
    cluster = cluster_split(dev, vecs, vw, kept_const, m, cached, budget, &tp);
  bool warp = tp.warp, regs = tp.regs;
  int64_t tx = tp.tx, ty = tp.ty, per = tp.per;
  if (n_partial && (!regs || warp || ty != 1)) {
    fu_error(diag, seg->loc,
             "persistent segment '@%s' has partial sums, which need a row per block in registers (rows of %.0f "
             "elements at %lld threads do not fit)",
             sname, row, (long long)tx);
    return FU_ERR_UNSUPPORTED;
  }
  /* a row that did not fit a block's registers: its inputs that several
   * passes read go to shared memory, as many as fit with the reductions'
   * slots (the same threads and rows per block) */
  fu_stage_plan sp = {0};
  if (!regs && row_const && per >= 1 && !scalar_staged) {
    fu_status pst = fu_schedule_stage_plan(f, seg, full, n_full, ty, (int64_t)row, tx * ty, dev, &sp);
    if (pst != FU_OK) return pst;
  }
  bool smem = sp.n_staged > 0;
  int64_t tried = tx, tried_per = per; /* what the registers schedule would have had */
  /* one block an SM by its staged rows: keep= may let two in */
  if (keep_ok && smem && ty == 1 && cluster == 1 && !n_partial &&
      fu_schedule_stage_keep(seg, dev, (int64_t)vecs, vw, &sp)) {
    tx = sp.threads;
    per = sp.chunks;
  }
  /* else every pass rereads it with REREAD_THREADS threads (at 1024, the
   * 64 registers a thread may have spill a little) */
  if (!regs && !smem && !warp) {
    tx = (uint32_t)REREAD_THREADS < dev->max_threads_per_block ? REREAD_THREADS : dev->max_threads_per_block;
    ty = 1;
  }
  pbuild b = {0};
  uint32_t roots[FU_MAX_RANK];
  root_axes(&b, reduced, rank, roots);
  uint32_t i = merged(&b, roots, reduced, rank, false, "i");
  uint32_t r = merged(&b, roots, reduced, rank, true, "r"), ro = r, rv = UINT32_MAX, rs, rx, ib, iy;
  if (vw > 1) split_in(&b, r, vw, true, "ro", "rv", &ro, &rv);
  split_in(&b, ro, tx, row_const && ((int64_t)vecs % tx == 0), cluster > 1 ? "rb" : "rs", "rx", &rs, &rx);
  uint32_t is = UINT32_MAX;
  if (i != UINT32_MAX && ty > 1) {
    split_in(&b, i, ty, kept_const && m % ty == 0, "ib", "iy", &ib, &iy);
    bind(&b, ib, FU_PT_BLOCK_X);
    bind(&b, iy, FU_PT_THREAD_Y);
  } else if (i != UINT32_MAX && n_partial) {
    /* rows ib, ib + parts, ...: block ib's part of every partial sum */
    split_in(&b, i, parts, kept_const && m % parts == 0, "is", "ib", &is, &ib);
    bind(&b, ib, FU_PT_BLOCK_X);
  } else if (i != UINT32_MAX) {
    bind(&b, i, FU_PT_BLOCK_X);
  }
  if (cluster > 1) {
    /* block c of the cluster takes the c-th part of the row (rs of per
     * vectors a thread) */
    uint32_t rc;
    split_in(&b, rs, per, true, "rc", "rs", &rc, &rs);
    bind(&b, rc, FU_PT_CLUSTER_X);
  }
  bind(&b, rx, FU_PT_THREAD_X);
  if (is != UINT32_MAX) bind(&b, is, FU_PT_SERIAL);
  /* shared memory: the first pass's loads in flight, up to 16 per thread,
   * where one full-size input is read (with two, the unrolled loads of a
   * 1024-thread block spill at its 64 registers: a bf16 residual add plus
   * layer norm over rows of 65536 spilled 168 bytes, 0 as a loop) */
  bind(&b, rs, regs || sp.keep || (smem && per <= SMEM_UNROLL && n_full == 1) ? FU_PT_UNROLL : FU_PT_SERIAL);
  if (rv != UINT32_MAX) bind(&b, rv, FU_PT_VECTORIZE);
  fu_reduce_mode mode = warp ? FU_RM_WARP : FU_RM_BLOCK;
  fu_persist_mode pm = regs ? FU_PM_REGISTERS : smem ? FU_PM_SMEM : FU_PM_REREAD;
  fu_status st = finish(f, seg, dev, diag, &b, ref, mode, pm, &sp, out);
  if (st == FU_OK && smem && (*out)->persist != FU_PM_SMEM) {
    *retry = true;
    return FU_OK;
  }
  if (st == FU_OK && debug) {
    char vwhy[128], regs_why[160];
    if (tp.narrowed_from)
      snprintf(vwhy, sizeof vwhy, "%s%lld-element vector loads (%lld would leave %s)", vw > 1 ? "" : "scalar loads, not ",
               (long long)(vw > 1 ? vw : tp.narrowed_from), (long long)tp.narrowed_from,
               (int64_t)vecs % tx ? "more vector slots idle" : "a guarded last vector");
    else if (vw > 1) snprintf(vwhy, sizeof vwhy, "%lld-element vector loads", (long long)vw);
    else
      snprintf(vwhy, sizeof vwhy, "scalar loads (%s)",
               !row_const ? "symbolic row" : cap < 8 ? "wider vectors do not fit every access" : "no vector divides the row");
    snprintf(regs_why, sizeof regs_why,
             "at %lld threads per row, %lld elements per thread would need %lld bytes of registers, more than %d",
             (long long)tried, (long long)(tried_per * vw), (long long)(tried_per * vw * (int64_t)cached), (int)budget);
    char alone[96] = "";
    if (tp.alone_from)
      snprintf(alone, sizeof alone, " (not %lld: several rows a block measured slower behind a guarded vector)",
               (long long)tp.alone_from);
    fu_strbuf where;
    fu_strbuf_init(&where, f->module->alloc);
    if (regs && cluster > 1)
      fu_strbuf_printf(&where,
                       "the row stays in registers, split over a cluster of %lld blocks (one block's registers "
                       "would not hold it) that combine their partial results through distributed shared memory: "
                       "%lld vector(s) per thread, %lld bytes of input",
                       (long long)cluster, (long long)per, (long long)(per * vw * (int64_t)cached));
    else if (regs && tp.pow2_tx && (int64_t)vecs % tx != 0)
      fu_strbuf_printf(&where,
                       "the row stays in registers: %lld vector(s) per thread, %lld bytes of input (no split of "
                       "whole vectors over the threads, at %d bytes a thread or more, divides the row: %lld threads "
                       "leave %lld of its %.0f vector slot(s) idle, the last vector guarded; the ladder's %lld "
                       "threads at %lld-element vectors left threads fewer than 2 whole vectors)",
                       (long long)per, (long long)(per * vw * (int64_t)cached), (int)NARROW_THREAD_BYTES,
                       (long long)tx, (long long)(per * tx - (int64_t)vecs), (double)(per * tx),
                       (long long)tp.pow2_tx, (long long)(tp.narrowed_from ? tp.narrowed_from : vw));
    else if (regs && tp.pow2_tx)
      fu_strbuf_printf(&where,
                       "the row stays in registers: %lld vector(s) per thread, %lld bytes of input (the row's %.0f "
                       "vectors split exactly over %lld threads: %lld, the power of two, would leave some threads a "
                       "guarded last vector)",
                       (long long)per, (long long)(per * vw * (int64_t)cached), vecs, (long long)tx,
                       (long long)tp.pow2_tx);
    else if (regs)
      fu_strbuf_printf(&where, "the row stays in registers: %lld vector(s) per thread, %lld bytes of input%s",
                       (long long)per, (long long)(per * vw * (int64_t)cached),
                       n_partial ? " and partial sums" : "");
    else if (!row_const)
      fu_strbuf_puts(&where, "the row is reread from global memory by every pass: its length is symbolic");
    else
      explain_smem(&where, &sp, smem, scalar_staged, regs_why);
    if (n_partial)
      fu_strbuf_printf(&where, "; %u partial sum(s) of %lld parts: block b takes rows b, b + %lld, ... (serial loop "
                               "'is')",
                       n_partial, (long long)parts, (long long)parts);
    fprintf(debug,
            "schedule: @%s: persistent normalization of %%%s, reduce=%s, persist=%s: rows of %.0f elements, %.0f "
            "row(s), %lld thread(s) per row (%s), %lld row(s) per block%s, %s; %s, index %s\n",
            sname, ref->name ? ref->name : "?", fu_reduce_mode_name(mode), fu_persist_mode_name((*out)->persist), row,
            rows, (long long)tx, warp ? "shuffles within the warp" : "shuffles then shared memory", (long long)ty,
            alone, vwhy,
            where.data ? where.data : "", fu_dtype_name((*out)->index_dtype));
    uint32_t pairs = fu_online_softmax_pairs(seg);
    if ((*out)->online)
      fprintf(debug,
              "schedule: @%s: online=true: %u sum(s) of exp(x - max(x)) fold in their max's pass, each thread "
              "keeping (max, sum of exp(x - max)) and rescaling the sum when the max grows: one pass over the row "
              "(%s) and one combine across threads fewer\n",
              sname, pairs, (*out)->persist == FU_PM_SMEM ? "through shared memory" : "from global memory");
    else if (pairs)
      fprintf(debug,
              "schedule: @%s: online=false: the row stays in registers, where the sum's own pass reads no memory "
              "(and shares the output pass's exponentials): folding it in measured no faster, in a larger kernel\n",
              sname);
    fu_strbuf_free(&where);
  }
  return st;
}

/* The persistent schedule with the widest vectors that verify: the width
 * above judges the row length, the dtypes and the threads' split only (a
 * permuted input can make a vector cross a dim boundary;
 * passes/schedule/narrow.c). */
/* The ladder at vector width `cap` (fu_schedule_width_fn): again without
 * shared memory when its staged inputs turned out to be read element by
 * element. */
static fu_status build_with(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag, FILE *debug,
                            int64_t cap, bool keep_ok, int64_t *vw_out, fu_schedule **out) {
  bool retry = false;
  fu_status st = build_tier(f, seg, dev, diag, debug, cap, false, keep_ok, vw_out, out, &retry);
  if (st == FU_OK && retry) st = build_tier(f, seg, dev, diag, debug, cap, true, keep_ok, vw_out, out, &retry);
  return st;
}

static fu_status build(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag, FILE *debug, int64_t cap,
                       int64_t *vw_out, fu_schedule **out) {
  return build_with(f, seg, dev, diag, debug, cap, false, vw_out, out);
}

static fu_status build_keep(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag, FILE *debug,
                            int64_t cap, int64_t *vw_out, fu_schedule **out) {
  return build_with(f, seg, dev, diag, debug, cap, true, vw_out, out);
}

fu_status fu_schedule_persistent(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag, FILE *debug,
                                 fu_schedule **out) {
  return fu_schedule_narrowed(f, seg, dev, diag, debug, build, out);
}

fu_status fu_schedule_persistent_keep(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag,
                                      FILE *debug, fu_schedule **out) {
  return fu_schedule_narrowed(f, seg, dev, diag, debug, build_keep, out);
}

/* The parts of the inner-outer rewrite for persistent segment `seg` with
 * `n_partials` more partial sums (inner_outer.c), 0 when it does not fit:
 * the reductions keep dim 0 alone (rows) and reduce the rest, a constant
 * row of more than a warp's vectors (one row per block) whose cached
 * inputs and an f32 accumulator per partial sum fit the registers at the
 * threads per row the schedule takes (plan_row), and rows enough for
 * every part to take ROWS_PER_PART.  The parts are the blocks resident at once
 * (fu_persist_row_loop_blocks a SM: up to 2 while each thread keeps 64
 * registers; the kernel asks ptxas for that many, kernel IR
 * `min_blocks`).  On the H100
 * a layer-norm backward of bf16 [16384, 4096] took 176.5 us at two blocks
 * of 512 threads a SM against 226.6 at one (78 registers), 198.1 at two
 * of 256 (128 registers), 221.1 at four of 256 with 528 parts. */
int64_t fu_schedule_inner_outer_parts(fu_fusion *f, const fu_op *seg, uint32_t n_partials, const fu_device *dev) {
  enum { ROWS_PER_PART = 8 };
  const fu_op *red = first_reduction(seg);
  if (!red) return 0;
  const fu_value *ref = red->operands[0];
  int32_t rank = ref->type.rank;
  if (rank < 2) return 0;
  bool reduced[FU_MAX_RANK];
  fu_reduction_dims(red, reduced);
  int64_t n = 1;
  for (int32_t d = 0; d < rank; d++) {
    if (reduced[d] != (d > 0) || (d > 0 && ref->type.dims[d].sym)) return 0;
    if (d > 0) n *= ref->type.dims[d].value;
  }
  size_t widest, cached;
  const fu_value *full[FU_STAGE_MAX];
  uint32_t n_full;
  fu_persist_full_size(seg, ref, false, &widest, &cached, full, &n_full);
  bool kept_const = !ref->type.dims[0].sym;
  int64_t m = kept_const ? ref->type.dims[0].value : 1, vw = 1;
  tplan tp = plan_row(dev, (double)n, widest, n, 8, true, kept_const, m, cached + 4 * (size_t)n_partials, REG_BYTES,
                      true, &vw);
  if (tp.warp || !tp.regs || tp.ty != 1) return 0;
  int64_t parts = (int64_t)fu_persist_row_loop_blocks(dev, tp.tx) * dev->n_sms;
  double rows = dim_estimate(f, ref->type.dims[0], 0.0);
  return rows >= (double)(ROWS_PER_PART * parts) ? parts : 0;
}
