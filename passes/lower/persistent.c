/* fuser: lowering a scheduled persistent (normalization) segment.
 *
 * The schedule is a reduction schedule (reduce=warp|block) whose row is
 * used again after its reductions (docs/ir.md, `persist=`).  The kernel is
 *
 *   thread indices; Welford shifts
 *   for each pass (a group of reductions none of which reads another):
 *     accumulators = identity
 *     row loops {                      (the reduced loops of the schedule)
 *       if (point in range) { vector loads; lanes in order: accumulate }
 *     }
 *     combine across the row's threads (shuffles, then shared memory):
 *       every thread of the row holds the results
 *   row loops { if (point in range) { lanes: outputs; one vector store } }
 *   if (row in range && threadIdx.x == 0) { store the per-row outputs }
 *
 * The reduced loops are the schedule's: threadIdx.x, then serial or
 * unroll, then vectorize.  With persist=registers every unroll loop is
 * unrolled here, one copy per iteration (a chunk), and the first pass that
 * reads an input at a chunk keeps the loaded vector in mutables (registers
 * after promotion) that the later passes read instead of global memory:
 * the row is read once.  With persist=smem the loops stay kernel loops
 * and the staged inputs (`tensor %X {memory=shared}`) live in dynamic
 * shared arrays: the first pass that loads one stores it there, the later
 * passes load it from there (a pass that reads nothing else keeps its
 * unroll loops rolled).  With persist=reread each pass loops and
 * loads again.  Only the inputs a pass reaches are loaded in it (layer norm's
 * weight and bias in the last pass only).  Reduction results, once
 * combined, are memoized for the rest of the kernel, so the ops after them
 * (x - mean, exp(x - max), rsqrt(var + eps)) evaluate per element with the
 * interpreter's dtype rules (reduction.c's evaluator).
 *
 * Partial sums (the inner-outer rewrite, docs/ir.md "Partial sums"): the
 * schedule's kept serial loop runs the whole body above once per row of
 * the block (rows ib, ib + parts, ...), with a barrier after each row (the
 * next row's combines reuse the shared slots); each thread keeps one f32
 * accumulator per partial sum, chunk and lane, zeroed before the loop and
 * folded in the output pass, and stores them after it, at the row loop's
 * first row: the part of every row the block took. */
#include <stdio.h>
#include <string.h>

#include "reduction_internal.h"
#include "reduction_online.h"

enum { MAX_CHUNKS = 128, MAX_V = 16, MAX_PERM = 2 * FU_MAX_SEG_REDUCTIONS };
/* `chunk` of a point in the rolled part of a keep= row (roll_staged): a
 * staged chunk numbered by P->chunk_var, not a constant */
enum { CHUNK_STAGED = -2 };

typedef enum pass_kind { PASS_REDUCE, PASS_OUTPUT } pass_kind;

/* What a reduction pass folds per element: the reduction's own combine
 * (a Welford update for var/var_mean), or, for var/var_mean over a row in
 * registers, the element (a sum) or its squared deviation from the mean
 * of the pass before, or, for a max and the sum of exp(x - max) it pairs
 * with (online=true), the online state of both (reduction_online.h), a
 * whole vector at a time. */
typedef enum fold_kind { FOLD_OP, FOLD_SUM, FOLD_SQDEV, FOLD_ONLINE } fold_kind;

typedef struct prow {
  rl *L;
  const fu_ix *tx;  /* the reduced threadIdx.x variable, or NULL */
  uint32_t loops[8]; /* the reduced non-parallel loops, outermost first */
  uint32_t n_loops;
  bool registers;
  /* reduction results, memoized for the rest of the kernel */
  fu_rl_memo perm[MAX_PERM];
  uint32_t n_perm;
  /* the register cache: per load access, chunk and lane a mutable */
  uint32_t n_acc;
  fu_kval **cache;
  bool *loaded;
  /* persist=smem, per load access: its shared array (NULL: not staged),
   * the current point's element in it, whether an earlier pass stored it
   * there, and whether the pass being emitted does */
  fu_kval **stage;
  const fu_ix **stage_at;
  bool *staged, *storing;
  /* keep= (by load access): the first keep[a] chunks of the thread's part
   * stay in the register cache, the rest are staged at (chunk - keep) *
   * chunk_elems past stage_at; with any, `hybrid`: the row loops unroll
   * per chunk, as with persist=registers */
  int32_t *keep;
  int64_t chunk_elems;
  bool hybrid;
  /* the pass being emitted */
  pass_kind kind;
  bool *need;   /* by value id: inputs the pass reads */
  /* the pass reads shared memory only (persist=smem, after the first
   * pass): its unroll loops stay rolled, kernel loops of one vector an
   * iteration (nothing to keep in flight; softmax of bf16 [1024, 65536]
   * 99.6 -> 97.7 us on the H100, and a third less code to compile) */
  bool rolled;
  /* keep=, a pass that rolls its staged chunks (set_rolling): the chunks
   * every input stages (from keep_max on) are a kernel loop over
   * chunk_var, whose points load at a computed offset (CHUNK_STAGED) */
  bool roll_staged;
  int32_t keep_max;
  const fu_ix *chunk_var;
  bool reverse; /* serial row loops run backwards (every other pass) */
  rstate *acc;
  fold_kind fold[FU_MAX_SEG_REDUCTIONS];    /* by reduction of the pass */
  fu_kval *dev_mean[FU_MAX_SEG_REDUCTIONS]; /* FOLD_SQDEV: the mean */
  /* online=true: the (max, sum) pairs that fold together; FOLD_ONLINE
   * states collect a whole vector's elements (`stash`, by state and lane)
   * before they fold it */
  const fu_op *pair_max[FU_MAX_SEG_REDUCTIONS], *pair_sum[FU_MAX_SEG_REDUCTIONS];
  uint32_t n_pairs;
  bool stash;
  fu_kval *stashed[FU_MAX_SEG_REDUCTIONS][MAX_V];
  /* partial sums: the ops, their accumulators by (op, chunk, lane), the
   * chunk being emitted, the kept serial loop over rows (-1: none) */
  const fu_op *partial[FU_PERSIST_MAX_PARTIALS];
  uint32_t n_partial;
  fu_kval **pacc;
  int32_t cur_chunk;
  int32_t row_loop;
  /* a row split over a cluster's blocks: their number (1: none) and the
   * block's rank among them */
  uint32_t cluster;
  const fu_ix *rank;
} prow;

static rl *LL(prow *P) { return P->L; }

/* Forgets the values of the last point, keeping the reduction results. */
static void reset_memo(prow *P) {
  rl *L = LL(P);
  fu_rl_memo_clear(L);
  for (uint32_t i = 0; i < P->n_perm; i++) fu_rl_memo_put(L, P->perm[i].v, P->perm[i].c, P->perm[i].kv);
}

/* Marks in P->need the segment inputs that v reads, not looking through
 * reductions (their results are known by the time a pass reads them). */
static void mark_inputs(prow *P, const fu_value *v) {
  rl *L = LL(P);
  if (P->need[v->id]) return;
  if (fu_segment_has_input(L->seg, v)) {
    P->need[v->id] = true;
    return;
  }
  const fu_op *op = v->def;
  if (!op || op->parent != L->seg->u.segment.body || fu_op_has(op->kind, FU_OF_REDUCTION)) return;
  P->need[v->id] = true; /* visited */
  for (uint32_t i = 0; i < op->n_operands; i++) mark_inputs(P, op->operands[i]);
}

/* Does value v depend on the result of reduction `red` (not through
 * another reduction's operand, which an earlier pass has folded)? */
static bool reads_result(const rl *L, const fu_value *v, const fu_op *red) {
  const fu_op *op = v->def;
  if (!op || op->parent != L->seg->u.segment.body) return false;
  if (op == red) return true;
  if (fu_op_has(op->kind, FU_OF_REDUCTION)) return false;
  for (uint32_t i = 0; i < op->n_operands; i++)
    if (reads_result(L, op->operands[i], red)) return true;
  return false;
}

/* The sum that max `mx` folds with (online=true), or NULL. */
static const fu_op *paired_sum(const prow *P, const fu_op *mx) {
  for (uint32_t k = 0; k < P->n_pairs; k++)
    if (P->pair_max[k] == mx) return P->pair_sum[k];
  return NULL;
}

/* The max that sum `sm` folds with (online=true), or NULL. */
static const fu_op *paired_max(const prow *P, const fu_op *sm) {
  for (uint32_t k = 0; k < P->n_pairs; k++)
    if (P->pair_sum[k] == sm) return P->pair_max[k];
  return NULL;
}

/* online=true: pairs every sum of L->ri that fu_online_softmax_max
 * matches with its max (a max pairs with one sum). */
static void find_pairs(prow *P) {
  rl *L = LL(P);
  P->n_pairs = 0;
  if (!L->s->online) return;
  for (uint32_t j = 0; j < L->ri.n_ops; j++) {
    const fu_op *mx = fu_online_softmax_max(L->ri.ops[j]);
    bool in = false;
    for (uint32_t k = 0; mx && k < L->ri.n_ops; k++) in |= L->ri.ops[k] == mx;
    if (!in || paired_sum(P, mx)) continue;
    P->pair_max[P->n_pairs] = mx;
    P->pair_sum[P->n_pairs++] = L->ri.ops[j];
  }
}

/* One vector load of access x from global memory at the current point. */
static void load_global(rl *L, const fu_iaccess *x, int64_t V, fu_kval **vals) {
  fu_kval *at = fu_rl_emit_ix(L, x->offset);
  const char *nm = x->value->name ? x->value->name : "x";
  if (at && !fu_kb_load(&L->b, nm, L->tparam[x->value->id], at, (uint32_t)V, x->value->type.dtype, vals))
    fu_rl_chk(L, NULL);
}

/* A staged access (persist=smem): from its shared array when an earlier
 * pass stored it, else from global memory, stored to the shared array for
 * the passes after this one.  A thread reads back only the elements it
 * stored, so no barrier separates the passes. */
static void load_staged(prow *P, uint32_t a, int64_t V, const fu_ix *off, fu_kval **vals) {
  rl *L = LL(P);
  const fu_iaccess *x = fu_igraph_access(L->g, a);
  const fu_ix *where = off ? fu_ix_add(L->ix, P->stage_at[a], off) : P->stage_at[a];
  fu_kval *at = fu_rl_emit_ix(L, where);
  if (!at) return;
  if (P->staged[a]) {
    char nm[48];
    snprintf(nm, sizeof nm, "%s_s", x->value->name ? x->value->name : "x");
    if (!fu_kb_load(&L->b, nm, P->stage[a], at, (uint32_t)V, x->value->type.dtype, vals)) fu_rl_chk(L, NULL);
    return;
  }
  load_global(L, x, V, vals);
  if (P->kind == PASS_OUTPUT || L->failed) return; /* no later pass reads it */
  if (!fu_kb_store(&L->b, P->stage[a], at, vals, (uint32_t)V)) fu_rl_chk(L, NULL);
  P->storing[a] = true;
}

/* Whether the register cache's values go through `opaque` in the passes
 * after the first: a kept row's 16-bit values (keep=).  Otherwise LLVM
 * reuses the first pass's f32 conversions, and each kept element holds a
 * 32-bit register through the reductions instead of half of one (layer
 * norm over rows of 61440, 8 chunks kept of 30 at 256 threads: 100 bytes
 * spilled and 186.6 us on the H100, against none and 143.4 us through
 * `opaque`).  Rows all in registers (persist=registers) keep LLVM's
 * choice: there `opaque` moved ptxas's register counts both ways (layer
 * norm [16384, 4096] 32 -> 38, group norm 63 -> 48). */
static bool narrow_cache(const prow *P, const fu_iaccess *x) {
  return P->hybrid && fu_dtype_size(x->value->type.dtype) == 2;
}

/* The vector values of load access `a` at the current point (lane 0
 * bound): staged in shared memory (persist=smem), or from the cache when
 * an earlier pass loaded them at this chunk, else one vector load (kept in
 * the cache at `chunk` >= 0 for the passes after it).  In a row loop
 * (partial sums) only the inputs of the reference's shape are cached: a
 * weight broadcast along the rows is the same row every time, in L1, and
 * its registers are what two blocks a SM cannot spare (a layer-norm
 * backward spilled 8 bytes with its weight cached). */
static void load_access(prow *P, uint32_t a, int64_t V, int32_t chunk, fu_kval **vals) {
  rl *L = LL(P);
  int32_t keep = P->keep ? P->keep[a] : 0;
  if (chunk == CHUNK_STAGED) {
    if (!P->stage || !P->stage[a]) { /* a weight: from global memory at the loop's chunk */
      load_global(L, fu_igraph_access(L->g, a), V, vals);
      return;
    }
    /* (chunk_var - keep) * chunk_elems past the thread's place */
    const fu_ix *off = keep ? fu_ix_mul(L->ix, fu_ix_add(L->ix, P->chunk_var, fu_ix_const(L->ix, -(int64_t)keep)),
                                        fu_ix_const(L->ix, P->chunk_elems))
                            : NULL;
    load_staged(P, a, V, off, vals);
    return;
  }
  if (keep && chunk < 0) {
    fu_rl_fail(L, L->s->loc, "keep= needs whole vectors at every point of the row (an exact split)");
    return;
  }
  if (P->stage && P->stage[a] && (!keep || chunk >= keep)) {
    load_staged(P, a, V, keep ? fu_ix_const(L->ix, (int64_t)(chunk - keep) * P->chunk_elems) : NULL, vals);
    return;
  }
  const fu_iaccess *x = fu_igraph_access(L->g, a);
  if (P->row_loop >= 0 && !fu_type_same_shape(&x->value->type, &L->s->reference->type)) chunk = -1;
  fu_kval **slot = chunk >= 0 ? &P->cache[((size_t)a * MAX_CHUNKS + (size_t)chunk) * MAX_V] : NULL;
  bool *done = chunk >= 0 ? &P->loaded[(size_t)a * MAX_CHUNKS + (size_t)chunk] : NULL;
  if (done && *done) {
    for (int64_t j = 0; j < V; j++) vals[j] = fu_rl_chk(L, fu_kb_read(&L->b, slot[j] ? slot[j]->name : NULL, slot[j]));
    if (narrow_cache(P, x) && !L->failed && !fu_kb_opaque(&L->b, vals, (uint32_t)V, vals)) fu_rl_chk(L, NULL);
    return;
  }
  if (P->kind == PASS_OUTPUT) done = NULL; /* no later pass reads it */
  const char *nm = x->value->name ? x->value->name : "x";
  load_global(L, x, V, vals);
  for (int64_t j = 0; done && j < V && !L->failed; j++) {
    char cn[48];
    snprintf(cn, sizeof cn, "%s_c%d_%d", nm, (int)chunk, (int)j);
    if (!(slot[j] = fu_rl_chk(L, fu_kval_new_mutable(L->m, L->k, cn, x->value->type.dtype)))) return;
    if (vals[j] && !fu_kb_assign(&L->b, slot[j], vals[j])) fu_rl_chk(L, NULL);
  }
  if (done) *done = true;
}

/* Folds online state j with the n elements x[0..n). */
static void fold_online(prow *P, uint32_t j, fu_kval *const *x, uint32_t n) {
  rl *L = LL(P);
  rstate a = {NULL}, o = {NULL};
  for (uint32_t p = 0; p < FU_ONLINE_PARTS; p++) a[p] = fu_rl_chk(L, fu_kb_read(&L->b, NULL, P->acc[j][p]));
  for (uint32_t i = 0; i < n; i++)
    if (!x[i]) return;
  if (L->failed || !fu_online_update(&L->b, a, x, n, o)) {
    fu_rl_chk(L, NULL);
    return;
  }
  for (uint32_t p = 0; p < FU_ONLINE_PARTS; p++)
    if (!fu_kb_assign(&L->b, P->acc[j][p], o[p])) fu_rl_chk(L, NULL);
}

/* Folds the online states' stashed vectors of V lanes (after the lanes of
 * a whole vector). */
static void fold_stashed(prow *P, int64_t V) {
  rl *L = LL(P);
  for (uint32_t j = 0; j < L->ri.n_ops && !L->failed; j++)
    if (P->fold[j] == FOLD_ONLINE) fold_online(P, j, P->stashed[j], (uint32_t)V);
}

/* Folds lane's element into the pass's accumulators (Welford elements
 * shifted, as in the reduction lowering; online states' elements stashed
 * when P->stash, for fold_stashed). */
static void accumulate_lane(prow *P, int64_t lane) {
  rl *L = LL(P);
  for (uint32_t j = 0; j < L->ri.n_ops && !L->failed; j++) {
    const fu_op *op = L->ri.ops[j];
    const fu_value *x = op->operands[0];
    fu_kval *v = fu_rl_cast(L, fu_rl_eval(L, x, fu_igraph_coords(L->g, x)), fu_rl_acc_dtype(op));
    if (P->fold[j] == FOLD_ONLINE) {
      if (P->stash && lane >= 0 && lane < MAX_V) P->stashed[j][lane] = v;
      else fold_online(P, j, &v, 1);
      continue;
    }
    if (P->fold[j] != FOLD_OP) {
      bool shifted = L->shift[j] && v && P->fold[j] == FOLD_SUM;
      fu_kval *sh = shifted ? fu_rl_chk(L, fu_kb_read(&L->b, NULL, L->shift[j])) : NULL;
      if (sh) v = fu_rl_chk(L, fu_kb_binary(&L->b, NULL, FU_OP_SUB, v->dtype, v, sh));
      if (P->fold[j] == FOLD_SQDEV && v) {
        fu_kval *d = fu_rl_chk(L, fu_kb_binary(&L->b, NULL, FU_OP_SUB, v->dtype, v, P->dev_mean[j]));
        v = d ? fu_rl_chk(L, fu_kb_binary(&L->b, NULL, FU_OP_MUL, d->dtype, d, d)) : NULL;
      }
      fu_kval *a = v ? fu_rl_chk(L, fu_kb_read(&L->b, NULL, P->acc[j][0])) : NULL;
      fu_kval *n = fu_rl_combine(L, op, a, v); /* a sum: op is a stand-in of kind sum */
      if (n && !fu_kb_assign(&L->b, P->acc[j][0], n)) fu_rl_chk(L, NULL);
      continue;
    }
    fu_kval *sh = L->shift[j] && v ? fu_rl_chk(L, fu_kb_read(&L->b, NULL, L->shift[j])) : NULL;
    if (sh) v = fu_rl_chk(L, fu_kb_binary(&L->b, NULL, FU_OP_SUB, v->dtype, v, sh));
    rstate a = {NULL}, n = {NULL};
    for (uint32_t p = 0; p < fu_rl_parts(op); p++) a[p] = fu_rl_chk(L, fu_kb_read(&L->b, NULL, P->acc[j][p]));
    if (!fu_welford_op(op)) n[0] = fu_rl_combine(L, op, a[0], v);
    else if (v && a[0] && a[1] && a[2] && !fu_welford_update(&L->b, a, v, n, false)) fu_rl_chk(L, NULL);
    for (uint32_t p = 0; p < fu_rl_parts(op); p++)
      if (n[p] && !fu_kb_assign(&L->b, P->acc[j][p], n[p])) fu_rl_chk(L, NULL);
  }
}

/* The store access of output o, or NULL. */
static const fu_iaccess *store_of(const rl *L, const fu_value *o) {
  for (uint32_t a = 0; a < fu_igraph_num_accesses(L->g); a++) {
    const fu_iaccess *x = fu_igraph_access(L->g, a);
    if (x->is_store && x->value == o) return x;
  }
  return NULL;
}

/* The full-size outputs at the current lane: with `vector`, into
 * vals[o * MAX_V + lane] for store_vectors; else stored here, one element
 * each. */
static void outputs_lane(prow *P, int64_t lane, bool vector, fu_kval **vals) {
  rl *L = LL(P);
  if (!vector) {
    fu_rl_store_outputs(L, true);
    return;
  }
  const fu_segment_info *si = &L->seg->u.segment;
  for (uint32_t i = 0; i < si->n_outputs && !L->failed; i++) {
    if (L->own_store && L->own_store[si->outputs[i]->id]) continue;
    const fu_iaccess *st = store_of(L, si->outputs[i]);
    if (st && fu_rl_on_reduced(L, st->offset))
      vals[(size_t)i * MAX_V + (size_t)lane] =
          fu_rl_cast(L, fu_rl_eval(L, st->value, (const fu_ix *const *)st->coords), st->value->type.dtype);
  }
}

/* Whether every full-size output is stored as whole vectors. */
static bool vector_outputs(prow *P) {
  rl *L = LL(P);
  const fu_segment_info *si = &L->seg->u.segment;
  for (uint32_t i = 0; i < si->n_outputs; i++) {
    if (L->own_store && L->own_store[si->outputs[i]->id]) continue;
    const fu_iaccess *st = store_of(L, si->outputs[i]);
    if (!st) return false;
    if (fu_rl_on_reduced(L, st->offset) && st->mode != FU_AM_VECTOR) return false;
  }
  return true;
}

/* The vector stores of the outputs collected by outputs_lane, at lane 0. */
static void store_vectors(prow *P, const fu_ix *lane, int64_t V, fu_kval **vals) {
  rl *L = LL(P);
  const fu_segment_info *si = &L->seg->u.segment;
  for (uint32_t i = 0; i < si->n_outputs && !L->failed; i++) {
    const fu_value *o = si->outputs[i];
    fu_kval **v = &vals[(size_t)i * MAX_V];
    if (!v[0]) continue;
    uint32_t mark = fu_lix_mark(&L->lix);
    if (lane) fu_rl_ixv_set(L, lane, fu_rl_emit_ix(L, fu_ix_const(L->ix, 0)));
    fu_kval *at = fu_rl_emit_ix(L, store_of(L, o)->offset);
    fu_lix_pop(&L->lix, mark);
    /* the index graph checked the vector legal (aligned rows); the runtime
     * checks the buffer's alignment */
    if (L->tparam[o->id]->align < 16) L->tparam[o->id]->align = 16;
    if (at && !fu_kb_store(&L->b, L->tparam[o->id], at, v, (uint32_t)V)) fu_rl_chk(L, NULL);
  }
}

static fu_kval **partial_slot(prow *P, uint32_t j, int32_t chunk, int64_t lane) {
  return &P->pacc[((size_t)j * MAX_CHUNKS + (size_t)chunk) * MAX_V + (size_t)lane];
}

/* Folds the lane's element of every partial sum into its accumulator. */
static void accumulate_partials(prow *P, int64_t lane) {
  rl *L = LL(P);
  if (P->cur_chunk < 0 || P->cur_chunk >= MAX_CHUNKS) {
    fu_rl_fail(L, L->s->loc, "partial sums need the row in registers (unroll and vectorize loops)");
    return;
  }
  for (uint32_t j = 0; j < P->n_partial && !L->failed; j++) {
    const fu_op *op = P->partial[j];
    fu_dtype t = op->results[0]->type.dtype;
    fu_kval **slot = partial_slot(P, j, P->cur_chunk, lane);
    fu_kval *v = fu_rl_cast(L, fu_rl_eval(L, op->operands[0], fu_igraph_coords(L->g, op->operands[0])), t);
    fu_kval *a = v && *slot ? fu_rl_chk(L, fu_kb_read(&L->b, NULL, *slot)) : NULL;
    fu_kval *n = a ? fu_rl_chk(L, fu_kb_binary(&L->b, NULL, FU_OP_ADD, t, a, v)) : NULL;
    if (n && !fu_kb_assign(&L->b, *slot, n)) fu_rl_chk(L, NULL);
    if (!*slot) fu_rl_fail(L, L->s->loc, "a partial sum's accumulator is missing");
  }
}

/* One lane's work for the pass. */
static void lane_work(prow *P, int64_t lane, bool vector, fu_kval **outs) {
  if (P->kind == PASS_REDUCE) {
    accumulate_lane(P, lane);
    return;
  }
  outputs_lane(P, lane, vector, outs);
  if (P->n_partial) accumulate_partials(P, lane);
}

/* The innermost point: lanes 0..V-1 of the vectorize loop `vl` (V = 1
 * and no lane variable when the schedule does not vectorize), as
 * reduction.c's accumulate_vector does it: when every lane is in range,
 * one vector load per input the pass reads (cached at `chunk` with
 * persist=registers), lanes in order, one vector store per output;
 * otherwise lane by lane under each lane's guards. */
static void point(prow *P, int32_t vl, int32_t chunk) {
  rl *L = LL(P);
  P->cur_chunk = chunk;
  const fu_ix *lane = vl >= 0 ? fu_igraph_loop_var(L->g, (uint32_t)vl) : NULL;
  int64_t V = 1;
  if (lane && (!fu_ix_is_const(fu_igraph_axis_extent(L->g, L->s->loops[vl].axis), &V) || V < 1 || V > MAX_V)) {
    fu_rl_fail(L, L->s->loops[vl].loc, "a vectorize axis without a constant extent of at most 16");
    return;
  }
  uint32_t scope = fu_lix_mark(&L->lix); /* index values emitted here stay inside */
  fu_kval *ind = NULL, *full = NULL;
  bool whole = lane ? fu_rl_lane_guards(L, lane, V - 1, &ind, &full) : true;
  if (!lane) ind = fu_rl_guards(L, true);
  if (L->failed) return;
  uint32_t n_out = L->seg->u.segment.n_outputs;
  size_t n_vals = (size_t)(P->n_acc > n_out ? P->n_acc : n_out) * MAX_V + 1;
  fu_kval **vals = fu_mem_calloc(&L->m->alloc, n_vals, sizeof *vals);
  if (!vals) {
    fu_rl_chk(L, NULL);
    return;
  }
  fu_kbuilder outer = fu_rl_open_if(L, ind);
  fu_kinst *br = whole && full ? fu_kb_if(&L->b, full) : NULL;
  if (whole && full && !br) fu_rl_chk(L, NULL);
  if (whole && !L->failed) {
    fu_kbuilder level = L->b;
    if (br) L->b = fu_kbuilder_at(L->m, L->k, &br->u.branch.then_body);
    uint32_t mark = fu_lix_mark(&L->lix);
    if (lane) fu_rl_ixv_set(L, lane, fu_rl_emit_ix(L, fu_ix_const(L->ix, 0)));
    for (uint32_t a = 0; a < P->n_acc && !L->failed; a++) {
      const fu_iaccess *x = fu_igraph_access(L->g, a);
      if (x->is_store || !L->tparam[x->value->id] || !P->need[x->value->id]) continue;
      if (lane && x->mode != FU_AM_VECTOR) continue;
      load_access(P, a, V, br ? -1 : chunk, &vals[(size_t)a * MAX_V]);
    }
    fu_lix_pop(&L->lix, mark);
    bool vec_out = lane && vector_outputs(P);
    P->stash = P->kind == PASS_REDUCE;
    fu_kval **outs = fu_mem_calloc(&L->m->alloc, (size_t)n_out * MAX_V + 1, sizeof *outs);
    if (!outs) fu_rl_chk(L, NULL);
    for (int64_t j = 0; j < V && !L->failed; j++) {
      mark = fu_lix_mark(&L->lix);
      if (lane) fu_rl_ixv_set(L, lane, fu_rl_emit_ix(L, fu_ix_const(L->ix, j)));
      reset_memo(P);
      for (uint32_t a = 0; a < P->n_acc; a++)
        if (vals[(size_t)a * MAX_V])
          fu_rl_memo_put(L, fu_igraph_access(L->g, a)->value, (const fu_ix *const *)fu_igraph_access(L->g, a)->coords,
                         vals[(size_t)a * MAX_V + (size_t)j]);
      lane_work(P, j, vec_out, outs);
      fu_lix_pop(&L->lix, mark);
    }
    P->stash = false;
    if (P->kind == PASS_REDUCE) fold_stashed(P, V);
    if (outs && vec_out && P->kind == PASS_OUTPUT) store_vectors(P, lane, V, outs);
    if (outs) fu_mem_free(&L->m->alloc, outs, ((size_t)n_out * MAX_V + 1) * sizeof *outs);
    L->b = level;
  }
  if ((!whole || br) && !L->failed) {
    /* a partial last vector: lane by lane, each under its guards, from
     * global memory */
    if (br) L->b = fu_kbuilder_at(L->m, L->k, &br->u.branch.else_body);
    for (int64_t j = 0; j < V && !L->failed; j++) {
      uint32_t mark = fu_lix_mark(&L->lix);
      fu_rl_ixv_set(L, lane, fu_rl_emit_ix(L, fu_ix_const(L->ix, j)));
      reset_memo(P);
      fu_kbuilder in = fu_rl_open_if(L, fu_rl_guards(L, true));
      lane_work(P, j, false, NULL);
      L->b = in;
      fu_lix_pop(&L->lix, mark);
    }
  }
  L->b = outer;
  fu_lix_pop(&L->lix, scope);
  fu_mem_free(&L->m->alloc, vals, n_vals * sizeof *vals);
}

static void row_loops(prow *P, uint32_t li, int32_t chunk);

/* A pass's loops over the thread's part of the row, inside one test of
 * the kept axes' guards (the row in range: rows that are not a multiple
 * of the block's rows) rather than under it at every vector: with a test
 * a vector, each vector's loads sit in their own branch and ptxas issues
 * them one after another (layer norm of bf16 [43690, 1536], 4 rows a
 * block: 109.3 us against 94.0 for [43688, 1536] on the H100).  With the
 * row in registers only: the loops hold no barrier then (the staged rows'
 * passes may), and the reductions' combines, which every thread of the
 * block takes part in, come after. */
static void pass_loops(prow *P) {
  rl *L = LL(P);
  fu_kval *kept = P->registers ? fu_rl_guards(L, false) : NULL;
  if (!kept || L->failed) {
    row_loops(P, 0, 0);
    return;
  }
  fu_kbuilder saved = fu_rl_open_if(L, kept);
  L->kept_checked = true;
  row_loops(P, 0, 0);
  L->kept_checked = false;
  L->b = saved;
}

/* Loop P->loops[li] as a kernel loop over [from, extent) of `kind`, its
 * body the loops inside at `body_chunk`: serial loops backwards in every
 * other pass; the staged chunks of a keep= row (body_chunk CHUNK_STAGED)
 * number their points by the loop variable, P->chunk_var. */
static void kernel_row_loop(prow *P, uint32_t li, int64_t from, fu_loop_kind kind, int32_t body_chunk) {
  rl *L = LL(P);
  const fu_sloop *l = &L->s->loops[P->loops[li]];
  const fu_ix *var = fu_igraph_loop_var(L->g, P->loops[li]);
  uint32_t mark = fu_lix_mark(&L->lix);
  fu_kbuilder saved = L->b;
  fu_kval *start = fu_rl_emit_ix(L, fu_ix_const(L->ix, from)), *one = fu_rl_emit_ix(L, fu_ix_const(L->ix, 1));
  fu_kval *end = fu_rl_emit_ix(L, fu_igraph_axis_extent(L->g, l->axis));
  fu_kinst *lp = start && one && end ? fu_kb_for(&L->b, L->s->axes[l->axis].name, start, end, one, kind) : NULL;
  if (!lp) {
    fu_rl_chk(L, NULL);
    return;
  }
  L->b = fu_kbuilder_at(L->m, L->k, &lp->u.loop.body);
  fu_kval *it = lp->results[0];
  if (P->reverse && l->ptype == FU_PT_SERIAL) {
    /* end - 1 - k: this pass starts where the last one ended, on the part
     * of the row most likely still in L2 */
    fu_kval *last = fu_rl_chk(L, fu_kb_binary(&L->b, NULL, FU_OP_SUB, L->idx, end, one));
    it = last ? fu_rl_chk(L, fu_kb_binary(&L->b, "rev", FU_OP_SUB, L->idx, last, it)) : NULL;
  }
  fu_rl_ixv_set(L, var, it);
  if (body_chunk == CHUNK_STAGED) P->chunk_var = var;
  row_loops(P, li + 1, body_chunk);
  fu_lix_pop(&L->lix, mark);
  L->b = saved;
}

/* The reduced loops from P->loops[li] inward, then the point.  With
 * persist=registers unroll loops are copied per iteration here (`chunk`
 * numbers the copies); other loops are kernel loops, whose points load
 * from global memory every time (chunk -1), serial ones backwards in
 * every other pass. */
static void row_loops(prow *P, uint32_t li, int32_t chunk) {
  rl *L = LL(P);
  if (L->failed) return;
  if (li == P->n_loops || (li + 1 == P->n_loops && L->s->loops[P->loops[li]].ptype == FU_PT_VECTORIZE)) {
    point(P, li < P->n_loops ? (int32_t)P->loops[li] : -1, chunk);
    return;
  }
  const fu_sloop *l = &L->s->loops[P->loops[li]];
  const fu_ix *var = fu_igraph_loop_var(L->g, P->loops[li]);
  int64_t e = 0;
  if ((P->registers || P->hybrid) && l->ptype == FU_PT_UNROLL &&
      fu_ix_is_const(fu_igraph_axis_extent(L->g, l->axis), &e)) {
    /* with roll_staged only the chunks some input keeps are copies */
    int64_t copies = P->roll_staged && li == 0 && P->keep_max < e ? P->keep_max : e;
    for (int64_t k = 0; k < copies && !L->failed; k++) {
      uint32_t mark = fu_lix_mark(&L->lix);
      fu_rl_ixv_set(L, var, fu_rl_emit_ix(L, fu_ix_const(L->ix, k)));
      int64_t c = chunk < 0 ? -1 : (int64_t)chunk * e + k;
      row_loops(P, li + 1, c >= 0 && c < MAX_CHUNKS ? (int32_t)c : -1);
      fu_lix_pop(&L->lix, mark);
    }
    /* roll_staged: the staged chunks as a kernel loop of one chunk an
     * iteration (no global load to keep in flight, as in a rolled pass).
     * Softmax over bf16 rows of 65536 compiles in 29% fewer instructions
     * (200 M -> 143 M), layer norm 10% fewer; on the H100 both ran as
     * fast as with every chunk a copy, layer norm [512, 65536] 0.8%
     * slower. */
    if (copies < e && !L->failed) kernel_row_loop(P, li, copies, FU_LOOP_SERIAL, CHUNK_STAGED);
    return;
  }
  kernel_row_loop(P, li, 0, l->ptype == FU_PT_UNROLL && !P->rolled ? FU_LOOP_UNROLL : FU_LOOP_SERIAL, -1);
}

/* Whether every segment input that P->need marks is staged in shared
 * memory: will be after the first pass (`now` false), or is already.
 * With `weights`, an input not staged passes too when it is smaller than
 * the row's tensor (a weight broadcast along the rows, which L1 serves). */
static bool need_staged(prow *P, bool now, bool weights) {
  rl *L = LL(P);
  if (!P->stage) return false;
  for (uint32_t a = 0; a < P->n_acc; a++) {
    const fu_iaccess *x = fu_igraph_access(L->g, a);
    if (x->is_store || !P->need[x->value->id] || !fu_segment_has_input(L->seg, x->value)) continue;
    if (P->stage[a] ? now && !P->staged[a]
                    : !weights || fu_type_same_shape(&x->value->type, &L->s->reference->type))
      return false;
  }
  return true;
}

/* Whether the reduce pass now folding L->ri.ops folds an online softmax
 * pair (a max and its sum of exps in one state: reduce_pass's stand-in). */
static bool folds_pair(prow *P) {
  rl *L = LL(P);
  for (uint32_t j = 0; j < L->ri.n_ops; j++)
    if (fu_online_op(L->ri.ops[j])) return true;
  return false;
}

/* The pass's rolling, before its row loops: a pass that reads only rows
 * already on chip keeps its unroll loops rolled (`rolled`), or with keep=
 * rolls its staged chunks (`roll_staged`).  With keep=, the pass that
 * reads the row from global memory rolls its staged chunks too where it
 * folds an online softmax pair: an exp and a rescale an element make it
 * the pass with the most code per chunk.  The loop loads a chunk, stores
 * it to shared memory and folds it, an iteration; an input it does not
 * stage (a weight) it reads from global memory in the loop (a softmax of
 * bf16 x times a weight over rows of 65536: 4 bytes spilled, against 584
 * with every chunk a copy).  Softmax over bf16
 * rows of 65536: 144 M -> 88 M instructions to compile (1559 -> 913 PTX
 * lines); on the H100 0.5-1.4% slower over rows of 57344-65536 (two
 * chunks an iteration, for more loads in flight, was slower still).
 * Layer and RMS norm's first passes (a sum) would compile a tenth faster,
 * and ptxas spilled them (178 and 208 bytes): they keep their copies.
 * A whole row staged in shared memory (no keep=) loops over its chunks
 * in the output pass too when the only other inputs it reads are weights
 * (from L1 every iteration, as the copies do; a second full row from
 * global memory, as a residual's, keeps the copies): group norm
 * [2, 320, 64, 64] compiled in 99 M -> 74 M instructions and ran as fast
 * on the H100, batch norm NCHW [32, 64, 28, 28] 80 M -> 68 M, 1% slower
 * (0.1 us of 8.9). */
static void set_rolling(prow *P) {
  bool on_chip = need_staged(P, true, false);
  P->rolled = !P->hybrid && (on_chip || (P->kind == PASS_OUTPUT && need_staged(P, true, true)));
  P->roll_staged = P->hybrid && !P->n_partial && (on_chip || (P->kind == PASS_REDUCE && folds_pair(P)));
}

/* Folds the reductions L->ri.ops (of P->fold) over the row, combines them
 * across the row's threads and leaves their states in v.  `pass` and
 * `sfx` name the accumulators and slots. */
static void fold_row(prow *P, const fu_op *const *orig, uint32_t pass, const char *sfx, rstate *v) {
  rl *L = LL(P);
  rstate acc[FU_MAX_SEG_REDUCTIONS];
  char prefix[24], tag[32];
  snprintf(prefix, sizeof prefix, "acc%u%s_", pass, sfx);
  snprintf(tag, sizeof tag, "partials%u%s_", pass, sfx);
  fu_rl_new_accumulators(L, prefix, acc);
  memset(P->need, 0, L->f->next_value_id * sizeof *P->need);
  for (uint32_t j = 0; j < L->ri.n_ops; j++) mark_inputs(P, orig[j]->operands[0]);
  P->kind = PASS_REDUCE;
  P->acc = acc;
  P->reverse = pass % 2 == 1;
  set_rolling(P);
  pass_loops(P);
  P->rolled = P->roll_staged = false;
  for (uint32_t a = 0; P->stage && a < P->n_acc; a++) P->staged[a] |= P->storing[a];
  fu_rl_read_states(L, acc, v);
  if (L->s->reduce != FU_RM_SERIAL && !L->failed) fu_rl_combine_threads(L, v, P->tx, tag);
  if (P->cluster > 1 && !L->failed) fu_rl_combine_cluster(L, v, P->tx, P->cluster, tag);
}

/* The number of elements of a row (the reduced extent), as a value of
 * dtype t. */
static fu_kval *row_count(rl *L, fu_dtype t) {
  const fu_ix *n = fu_ix_const(L->ix, 1);
  const fu_value *ref = L->s->reference;
  for (int32_t d = 0; d < ref->type.rank; d++)
    if (L->ri.reduced_dim[d]) n = fu_ix_mul(L->ix, n, fu_ix_extent(L->ix, ref->type.dims[d]));
  return fu_rl_cast(L, fu_rl_emit_ix(L, n), t);
}

/* Whether every input op's operand reads is on chip after the first pass
 * (every one with persist=registers; the staged ones with persist=smem),
 * so that a second pass over the row costs no global read. */
static bool on_chip(prow *P, const fu_op *op) {
  rl *L = LL(P);
  if (P->registers) return true;
  memset(P->need, 0, L->f->next_value_id * sizeof *P->need);
  mark_inputs(P, op->operands[0]);
  return need_staged(P, false, false);
}

/* One pass that folds the reductions ops[0..n) (none reading another),
 * combines them across the row's threads and memoizes their results.
 * With the row in registers, var/var_mean take a second pass instead of
 * Welford updates (a division per element): the pass sums the row, and a
 * second one sums the squared deviations from its mean, which is exact
 * enough at any mean (x = 1e4 + randn) and costs no global read. */
static void reduce_pass(prow *P, const fu_op **ops, uint32_t n, uint32_t pass) {
  rl *L = LL(P);
  /* a max and the sum it pairs with, both of this pass: one online state,
   * a stand-in max with the two results (reduction_online.h) */
  fu_op pairs[FU_MAX_SEG_REDUCTIONS];
  fu_value *pair_res[FU_MAX_SEG_REDUCTIONS][2];
  const fu_op *states[FU_MAX_SEG_REDUCTIONS];
  uint32_t ns = 0;
  for (uint32_t j = 0; j < n; j++) {
    const fu_op *sm = paired_sum(P, ops[j]), *mx = paired_max(P, ops[j]);
    bool sum_here = false, max_here = false;
    for (uint32_t k = 0; k < n; k++) sum_here |= sm && ops[k] == sm, max_here |= mx && ops[k] == mx;
    if (max_here) continue;
    if (!sum_here) {
      states[ns++] = ops[j];
      continue;
    }
    pairs[ns] = *ops[j];
    pair_res[ns][0] = ops[j]->results[0];
    pair_res[ns][1] = sm->results[0];
    pairs[ns].results = pair_res[ns];
    pairs[ns].n_results = 2;
    states[ns] = &pairs[ns];
    ns++;
  }
  ops = states;
  n = ns;
  /* the reduction lowering's helpers work on L->ri: narrow it to this
   * pass's reductions (var/var_mean by two passes as stand-ins of kind
   * sum), and their shifts, for the pass */
  fu_reduction_info all = L->ri;
  fu_kval *shifts[FU_MAX_SEG_REDUCTIONS];
  memcpy(shifts, L->shift, sizeof shifts);
  fu_op sums[FU_MAX_SEG_REDUCTIONS];
  bool two = false;
  for (uint32_t j = 0; j < n; j++) {
    L->ri.ops[j] = ops[j];
    P->fold[j] = fu_online_op(ops[j]) ? FOLD_ONLINE : FOLD_OP;
    L->shift[j] = NULL;
    if (fu_welford_op(ops[j]) && on_chip(P, ops[j])) {
      sums[j] = *ops[j];
      sums[j].kind = FU_OP_SUM;
      L->ri.ops[j] = &sums[j];
      P->fold[j] = FOLD_SUM;
      two = true;
    }
    for (uint32_t k = 0; k < all.n_ops; k++)
      if (all.ops[k] == ops[j]) L->shift[j] = shifts[k];
  }
  L->ri.n_ops = n;
  /* one state per reduction of the pass (not one per reduction of the
   * segment: the others would be copies, with their own shared slots) */
  uint32_t all_states = L->n_states;
  L->n_states = n;
  rstate v[FU_MAX_SEG_REDUCTIONS], w[FU_MAX_SEG_REDUCTIONS];
  fold_row(P, ops, pass, "", v);
  if (two && !L->failed) {
    /* v[j][0] is the row's sum: the mean, then the squared deviations
     * (the other reductions are done: only the two-pass ones fold) */
    fu_reduction_info first = L->ri;
    fu_kval *first_shift[FU_MAX_SEG_REDUCTIONS];
    memcpy(first_shift, L->shift, sizeof first_shift);
    const fu_op *dev_ops[FU_MAX_SEG_REDUCTIONS];
    uint32_t m = 0, at[FU_MAX_SEG_REDUCTIONS];
    for (uint32_t j = 0; j < n && !L->failed; j++) {
      if (P->fold[j] != FOLD_SUM) continue;
      fu_kval *count = row_count(L, v[j][0]->dtype);
      v[j][2] = count;
      v[j][0] = count ? fu_rl_chk(L, fu_kb_binary(&L->b, "mean", FU_OP_DIV, count->dtype, v[j][0], count)) : NULL;
      /* deviations from the whole mean, shift + mean: x - shift again
       * would be the first pass's values, which LLVM would then keep live
       * (32 more registers) */
      fu_kval *sh = L->shift[j] && v[j][0] ? fu_rl_chk(L, fu_kb_read(&L->b, NULL, L->shift[j])) : NULL;
      P->dev_mean[m] = sh ? fu_rl_chk(L, fu_kb_binary(&L->b, NULL, FU_OP_ADD, sh->dtype, v[j][0], sh)) : v[j][0];
      P->fold[m] = FOLD_SQDEV;
      L->ri.ops[m] = first.ops[j];
      L->shift[m] = first_shift[j];
      dev_ops[m] = ops[j];
      at[m++] = j;
    }
    L->ri.n_ops = m;
    L->n_states = m;
    fold_row(P, dev_ops, pass, "_dev", w);
    for (uint32_t k = 0; k < m; k++) v[at[k]][1] = w[k][0];
    L->ri = first;
    L->n_states = n;
    memcpy(L->shift, first_shift, sizeof first_shift);
  }
  for (uint32_t j = 0; j < n && !L->failed; j++) {
    const fu_op *op = ops[j];
    fu_kval *res[2] = {v[j][0], NULL};
    if (fu_online_op(op) && v[j][0] && v[j][1] && !fu_online_results(&L->b, v[j], res)) fu_rl_chk(L, NULL);
    if (fu_welford_op(op) && v[j][0] && L->shift[j]) {
      fu_kval *sh = fu_rl_chk(L, fu_kb_read(&L->b, NULL, L->shift[j]));
      v[j][0] = sh ? fu_rl_chk(L, fu_kb_binary(&L->b, NULL, FU_OP_ADD, sh->dtype, v[j][0], sh)) : NULL;
    }
    if (fu_welford_op(op) && v[j][0] && !fu_welford_results(&L->b, op, v[j], res)) fu_rl_chk(L, NULL);
    for (uint32_t k = 0; k < op->n_results && k < 2 && P->n_perm < MAX_PERM; k++) {
      P->perm[P->n_perm].v = op->results[k];
      P->perm[P->n_perm].c = fu_igraph_coords(L->g, op->results[k]);
      P->perm[P->n_perm++].kv = fu_rl_cast(L, res[k], op->results[k]->type.dtype);
    }
  }
  L->ri = all;
  L->n_states = all_states;
  memcpy(L->shift, shifts, sizeof shifts);
}

/* persist=smem: a dynamic shared array per staged input (the schedule's
 * `tensor %X {memory=shared}`; its first vector access, or any access
 * when nothing vectorizes), of the block's rows of the row rounded up to
 * 16 elements (fu_persist_stage_stride), in the input's dtype.  A point's
 * element is its row within the block (the kept threadIdx.y) times that
 * stride plus its linear index in the row (the reference's reduced
 * coordinates), so a thread's vector i of the row sits at vector i *
 * threads + threadIdx.x: consecutive threads, consecutive 16 bytes. */
static void setup_stage(prow *P) {
  rl *L = LL(P);
  const fu_schedule *s = L->s;
  const fu_value *ref = s->reference;
  const fu_ix *const *c = fu_igraph_coords(L->g, ref);
  const fu_ix *lin = fu_ix_const(L->ix, 0), *ty = fu_ix_const(L->ix, 0);
  int64_t row = 1, rows = 1, width = 1;
  for (int32_t d = 0; c && d < ref->type.rank; d++) {
    if (!L->ri.reduced_dim[d]) continue;
    row *= ref->type.dims[d].value; /* constant: the verifier's check */
    lin = fu_ix_add(L->ix, fu_ix_mul(L->ix, lin, fu_ix_extent(L->ix, ref->type.dims[d])), c[d]);
  }
  for (uint32_t i = 0; i < s->n_loops; i++)
    if (s->loops[i].ptype == FU_PT_THREAD_Y && !L->ra[s->loops[i].axis]) {
      ty = fu_igraph_loop_var(L->g, i);
      rows = L->k->block[1];
    }
  if (!c) {
    fu_rl_fail(L, s->loc, "the reference is not reached");
    return;
  }
  int64_t stride = fu_persist_stage_stride(row);
  const fu_ix *at = fu_ix_add(L->ix, fu_ix_mul(L->ix, ty, fu_ix_const(L->ix, stride)), lin);
  const fu_ix *lane = fu_igraph_lane_var(L->g, &width);
  bool vector = lane != NULL;
  /* keep=: the staged chunks in the thread's order, (chunk - keep) *
   * threads * lanes + threadIdx.x * lanes + lane, after the row's ty */
  int64_t threads = 1, chunks = 1, lanes = 1;
  bool chunked = P->tx && fu_persist_chunks(s, L->ra, &threads, &chunks, &lanes);
  P->chunk_elems = threads * lanes;
  for (uint32_t a = 0; a < P->n_acc && !L->failed; a++) {
    const fu_iaccess *x = fu_igraph_access(L->g, a);
    const fu_stensor *t = fu_schedule_tensor(s, x->value);
    if (x->is_store || !t || t->memory != FU_MEM_SHARED || (vector && x->mode != FU_AM_VECTOR)) continue;
    bool first = true;
    for (uint32_t b = 0; b < a; b++) first &= !P->stage[b] || fu_igraph_access(L->g, b)->value != x->value;
    if (!first) continue;
    char nm[48];
    snprintf(nm, sizeof nm, "%s_row", x->value->name ? x->value->name : "x");
    int64_t len = rows * stride;
    P->stage_at[a] = at;
    if (t->keep > 0) {
      if (!chunked || t->keep >= chunks) {
        fu_rl_fail(L, t->loc, "keep= needs a row of threadIdx.x, unroll and vectorize loops, with chunks left to stage");
        return;
      }
      int64_t kstride = fu_persist_stage_stride(row - (int64_t)t->keep * P->chunk_elems);
      len = rows * kstride;
      const fu_ix *mine = fu_ix_mul(L->ix, P->tx, fu_ix_const(L->ix, lanes));
      if (lane) mine = fu_ix_add(L->ix, mine, lane);
      P->stage_at[a] = fu_ix_add(L->ix, fu_ix_mul(L->ix, ty, fu_ix_const(L->ix, kstride)), mine);
      P->keep[a] = t->keep;
      if (t->keep > P->keep_max) P->keep_max = t->keep;
      P->hybrid = true;
    }
    P->stage[a] = fu_rl_chk(L, fu_kernel_dynamic_array(L->m, L->k, nm, x->value->type.dtype, len));
  }
}

/* The partial sums' accumulators: one f32 (f64) mutable per sum, chunk
 * (the unrolled row loops' iterations) and lane, zeroed here, before the
 * row loop. */
static void init_partials(prow *P) {
  rl *L = LL(P);
  int64_t chunks = 1, V = 1;
  for (uint32_t li = 0; li < P->n_loops; li++) {
    const fu_sloop *l = &L->s->loops[P->loops[li]];
    int64_t e = 0;
    if (!fu_ix_is_const(fu_igraph_axis_extent(L->g, l->axis), &e) ||
        (l->ptype != FU_PT_UNROLL && l->ptype != FU_PT_VECTORIZE)) {
      fu_rl_fail(L, l->loc, "partial sums need the row's loops to be unroll and vectorize loops of constant extent");
      return;
    }
    if (l->ptype == FU_PT_UNROLL) chunks *= e;
    else V = e;
  }
  if (chunks > MAX_CHUNKS || V > MAX_V) {
    fu_rl_fail(L, L->s->loc, "partial sums of more than 128 chunks or 16 lanes per thread");
    return;
  }
  for (uint32_t j = 0; j < P->n_partial && !L->failed; j++) {
    fu_dtype t = P->partial[j]->results[0]->type.dtype;
    fu_kval *zero = fu_rl_chk(L, fu_kb_const_f(&L->b, NULL, t, 0.0));
    for (int64_t c = 0; c < chunks && !L->failed; c++)
      for (int64_t v = 0; v < V && !L->failed; v++) {
        char nm[48];
        snprintf(nm, sizeof nm, "part%u_%d_%d", j, (int)c, (int)v);
        fu_kval **slot = partial_slot(P, j, (int32_t)c, v);
        if (!(*slot = fu_rl_chk(L, fu_kval_new_mutable(L->m, L->k, nm, t)))) return;
        if (zero && !fu_kb_assign(&L->b, *slot, zero)) fu_rl_chk(L, NULL);
      }
  }
}

/* Stores the partial sums' accumulators (after the row loop), through
 * the row loops from P->loops[li] in as row_loops numbers the chunks:
 * each at its part (the row loop's first row) and column. */
static void store_partials(prow *P, uint32_t li, int32_t chunk) {
  rl *L = LL(P);
  if (L->failed) return;
  if (li == P->n_loops || (li + 1 == P->n_loops && L->s->loops[P->loops[li]].ptype == FU_PT_VECTORIZE)) {
    const fu_ix *lane = li < P->n_loops ? fu_igraph_loop_var(L->g, P->loops[li]) : NULL;
    int64_t V = 1;
    if (lane) fu_ix_is_const(fu_igraph_axis_extent(L->g, L->s->loops[P->loops[li]].axis), &V);
    for (int64_t j = 0; j < V && !L->failed; j++) {
      uint32_t mark = fu_lix_mark(&L->lix);
      if (lane) fu_rl_ixv_set(L, lane, fu_rl_emit_ix(L, fu_ix_const(L->ix, j)));
      /* the columns' guards only: a part is stored whether or not the
       * block had a row */
      fu_kbuilder saved = fu_rl_open_if(L, fu_rl_reduced_guards(L));
      for (uint32_t k = 0; k < P->n_partial && !L->failed; k++) {
        const fu_value *o = P->partial[k]->results[0];
        const fu_ix *const *c = fu_igraph_coords(L->g, o);
        const fu_ix *off = c ? fu_igraph_offset(L->g, o, c) : NULL;
        fu_kval **slot = partial_slot(P, k, chunk, j);
        fu_kval *at = off ? fu_rl_emit_ix(L, off) : NULL;
        fu_kval *val = *slot ? fu_rl_chk(L, fu_kb_read(&L->b, NULL, *slot)) : NULL;
        if (!off || !*slot) fu_rl_fail(L, L->s->loc, "a partial sum is not reached by the loop domain");
        else if (at && val && !fu_kb_store(&L->b, L->tparam[o->id], at, &val, 1)) fu_rl_chk(L, NULL);
      }
      L->b = saved;
      fu_lix_pop(&L->lix, mark);
    }
    return;
  }
  const fu_sloop *l = &L->s->loops[P->loops[li]];
  int64_t e = 0;
  fu_ix_is_const(fu_igraph_axis_extent(L->g, l->axis), &e);
  for (int64_t k = 0; k < e && !L->failed; k++) {
    uint32_t mark = fu_lix_mark(&L->lix);
    fu_rl_ixv_set(L, fu_igraph_loop_var(L->g, P->loops[li]), fu_rl_emit_ix(L, fu_ix_const(L->ix, k)));
    store_partials(P, li + 1, (int32_t)((int64_t)chunk * e + k));
    fu_lix_pop(&L->lix, mark);
  }
}

/* Whether every partial sum's part is the same at every iteration of the
 * row loop (its coordinate along the parts does not change with the loop
 * variable), so that a thread's accumulators all belong to one part. */
static bool parts_fixed(prow *P) {
  rl *L = LL(P);
  const fu_ix *var = fu_igraph_loop_var(L->g, (uint32_t)P->row_loop);
  for (uint32_t k = 0; k < P->n_partial; k++) {
    const fu_op *op = P->partial[k];
    const fu_ix *const *c = fu_igraph_coords(L->g, op->results[0]);
    if (!c) return false;
    const fu_ix *x = c[op->u.partial.dim];
    if (fu_ix_subst(L->ix, x, var, fu_ix_const(L->ix, 0)) != fu_ix_subst(L->ix, x, var, fu_ix_const(L->ix, 1)))
      return false;
  }
  return true;
}

/* One row: the reduction passes, the output pass and the per-row outputs. */
static void row_body(prow *P, uint32_t nv) {
  rl *L = LL(P);
  fu_rl_welford_shifts(L);
  /* passes: the reductions in order, a new pass at the first that reads
   * a result of the current one */
  const fu_op *group[FU_MAX_SEG_REDUCTIONS];
  uint32_t n = 0, pass = 0;
  for (uint32_t j = 0; j <= L->ri.n_ops && !L->failed; j++) {
    bool dep = false;
    /* a sum folds in the pass of the max it pairs with (online=true) */
    const fu_op *mx = j < L->ri.n_ops ? paired_max(P, L->ri.ops[j]) : NULL;
    for (uint32_t k = 0; j < L->ri.n_ops && k < n; k++)
      dep |= group[k] != mx && reads_result(L, L->ri.ops[j]->operands[0], group[k]);
    if (n && (j == L->ri.n_ops || dep)) {
      reduce_pass(P, group, n, pass++);
      n = 0;
    }
    if (j < L->ri.n_ops) group[n++] = L->ri.ops[j];
  }
  /* the last pass: the full-size outputs (and the partial sums' elements) */
  memset(P->need, 0, nv * sizeof *P->need);
  const fu_segment_info *si = &L->seg->u.segment;
  for (uint32_t i = 0; i < si->n_outputs; i++) mark_inputs(P, si->outputs[i]);
  for (uint32_t k = 0; k < P->n_partial; k++) mark_inputs(P, P->partial[k]->operands[0]);
  P->kind = PASS_OUTPUT;
  P->reverse = pass % 2 == 1;
  set_rolling(P);
  pass_loops(P);
  P->rolled = P->roll_staged = false;
  /* the per-row outputs (mean, rstd), by the row's thread 0 */
  reset_memo(P);
  fu_kval *cond = fu_rl_guards(L, false);
  if (P->tx && !L->failed) {
    fu_kval *t = fu_rl_emit_ix(L, P->tx), *zero = fu_rl_emit_ix(L, fu_ix_const(L->ix, 0));
    fu_kval *t0 = t && zero ? fu_rl_chk(L, fu_kb_binary(&L->b, "thread0", FU_OP_EQ, FU_DT_BOOL, t, zero)) : NULL;
    cond = cond && t0 ? fu_rl_chk(L, fu_kb_binary(&L->b, "store", FU_OP_LOGICAL_AND, FU_DT_BOOL, cond, t0)) : t0;
  }
  if (P->rank && !L->failed) {
    /* one block of the cluster stores them */
    fu_kval *r = fu_rl_emit_ix(L, P->rank), *zero = fu_rl_emit_ix(L, fu_ix_const(L->ix, 0));
    fu_kval *r0 = r && zero ? fu_rl_chk(L, fu_kb_binary(&L->b, "rank0", FU_OP_EQ, FU_DT_BOOL, r, zero)) : NULL;
    cond = cond && r0 ? fu_rl_chk(L, fu_kb_binary(&L->b, "store", FU_OP_LOGICAL_AND, FU_DT_BOOL, cond, r0)) : r0;
  }
  fu_kbuilder saved = fu_rl_open_if(L, cond);
  fu_rl_store_outputs(L, false);
  L->b = saved;
}

/* The row loop (the schedule's kept serial loop) around row_body, with a
 * barrier closing each row where threads combine through shared memory;
 * or row_body alone. */
static void rows(prow *P, uint32_t nv) {
  rl *L = LL(P);
  if (P->row_loop < 0) {
    row_body(P, nv);
    return;
  }
  const fu_sloop *l = &L->s->loops[P->row_loop];
  fu_kval *zero = fu_rl_emit_ix(L, fu_ix_const(L->ix, 0)), *one = fu_rl_emit_ix(L, fu_ix_const(L->ix, 1));
  fu_kval *end = fu_rl_emit_ix(L, fu_igraph_axis_extent(L->g, l->axis));
  fu_kinst *lp = zero && one && end ? fu_kb_for(&L->b, L->s->axes[l->axis].name, zero, end, one, FU_LOOP_SERIAL) : NULL;
  if (!lp) {
    fu_rl_chk(L, NULL);
    return;
  }
  uint32_t mark = fu_lix_mark(&L->lix);
  fu_kbuilder saved = L->b;
  L->b = fu_kbuilder_at(L->m, L->k, &lp->u.loop.body);
  fu_rl_ixv_set(L, fu_igraph_loop_var(L->g, (uint32_t)P->row_loop), lp->results[0]);
  P->n_perm = 0;
  row_body(P, nv);
  if (L->s->reduce == FU_RM_BLOCK && !L->failed && !fu_kb_sync(&L->b)) fu_rl_chk(L, NULL);
  fu_lix_pop(&L->lix, mark);
  L->b = saved;
}

/* The blocks per SM the kernel plans on, which the lowering asks ptxas
 * for (`min_blocks`; 0 or 1: no bound): with a row loop (the inner-outer
 * rewrite's partial sums) fu_persist_row_loop_blocks; with a constant row
 * in registers fu_persist_register_blocks of its part of the row (of the
 * block's part, split over a cluster) times the cached bytes per element
 * the scheduler planned on (fu_persist_full_size). */
static uint32_t planned_blocks(const prow *P) {
  rl *L = P->L;
  fu_device dev;
  if (!fu_persist_device(L->s, &dev)) return 0;
  int64_t threads = (int64_t)L->k->block[0] * L->k->block[1] * L->k->block[2];
  if (P->row_loop >= 0) return P->n_partial ? fu_persist_row_loop_blocks(&dev, threads) : 0;
  if (!P->registers) return 0;
  const fu_value *ref = L->s->reference;
  int64_t row = 1;
  for (int32_t d = 0; d < ref->type.rank; d++) {
    if (!L->ri.reduced_dim[d]) continue;
    if (ref->type.dims[d].sym) return 0;
    row *= ref->type.dims[d].value;
  }
  row = (row + P->cluster - 1) / P->cluster; /* a block's part of a row split over a cluster */
  size_t widest = 0, cached = 0;
  const fu_value *inputs[FU_STAGE_MAX];
  uint32_t n_inputs = 0;
  fu_persist_full_size(L->seg, ref, row > 1, &widest, &cached, inputs, &n_inputs);
  return fu_persist_register_blocks(&dev, threads, (int64_t)cached * ((row + threads - 1) / threads));
}

/* keep=: the blocks an SM holds by their shared memory (the staged rows
 * and the reductions' slots, and what the driver reserves a block)
 * and threads, at most 2, which the lowering asks ptxas for: a kept
 * chunk is worth its registers only where it lets a second block in. */
static uint32_t hybrid_blocks(const prow *P) {
  rl *L = P->L;
  fu_device dev;
  if (!fu_persist_device(L->s, &dev)) return 0;
  int64_t threads = (int64_t)L->k->block[0] * L->k->block[1] * L->k->block[2];
  int64_t smem = fu_persist_slot_bytes(L->ri.n_ops, threads) + FU_SMEM_RESERVED_PER_BLOCK;
  for (uint32_t a = 0; a < P->n_acc; a++)
    if (P->stage[a]) smem += P->stage[a]->length * (int64_t)fu_dtype_size(P->stage[a]->dtype);
  int64_t b = 2;
  if ((int64_t)dev.smem_per_sm / smem < b) b = (int64_t)dev.smem_per_sm / smem;
  if ((int64_t)dev.max_threads_per_sm / threads < b) b = (int64_t)dev.max_threads_per_sm / threads;
  return b > 1 ? (uint32_t)b : 0;
}

/* The kernel body (fu_rl_lower's callback). */
static void persistent_body(rl *L) {
  const fu_schedule *s = L->s;
  static const fu_special sp[FU_PT_COUNT] = {[FU_PT_BLOCK_X] = FU_SP_CTAID_X, [FU_PT_BLOCK_Y] = FU_SP_CTAID_Y,
                                             [FU_PT_THREAD_X] = FU_SP_TID_X, [FU_PT_THREAD_Y] = FU_SP_TID_Y,
                                             [FU_PT_CLUSTER_X] = FU_SP_CLUSTER_RANK};
  prow P = {.L = L, .registers = s->persist == FU_PM_REGISTERS, .row_loop = -1, .cur_chunk = -1, .cluster = 1};
  if (L->k->cluster > 1) P.cluster = L->k->cluster;
  for (uint32_t i = 0; i < s->n_loops && !L->failed; i++) {
    const fu_sloop *l = &s->loops[i];
    bool par = l->ptype != FU_PT_SERIAL && l->ptype != FU_PT_UNROLL && l->ptype != FU_PT_VECTORIZE;
    if (!par && !L->ra[l->axis] && l->ptype == FU_PT_SERIAL && P.row_loop < 0) {
      P.row_loop = (int32_t)i; /* the rows of a segment with partial sums (the verifier's rule) */
      continue;
    }
    if (!par) {
      if (P.n_loops == 8) fu_rl_fail(L, l->loc, "more than 8 reduced loops");
      else P.loops[P.n_loops++] = i;
      continue;
    }
    if (l->grid_stride) fu_rl_fail(L, l->loc, "a grid-stride block axis");
    bool by_cluster = l->ptype == FU_PT_BLOCK_X && P.cluster > 1;
    fu_kval *kv = fu_rl_chk(L, fu_kb_special(&L->b, by_cluster ? NULL : s->axes[l->axis].name, sp[l->ptype], L->idx));
    if (kv && by_cluster) {
      /* the cluster's index: its blocks are consecutive along x */
      fu_kval *c = fu_rl_chk(L, fu_kb_const_i(&L->b, NULL, L->idx, P.cluster));
      kv = c ? fu_rl_chk(L, fu_kb_binary(&L->b, s->axes[l->axis].name, FU_OP_DIV, L->idx, kv, c)) : NULL;
    }
    if (l->ptype == FU_PT_CLUSTER_X) P.rank = fu_igraph_loop_var(L->g, i);
    if (kv) fu_rl_ixv_set(L, fu_igraph_loop_var(L->g, i), kv);
    if (l->ptype == FU_PT_THREAD_X && L->ra[l->axis]) P.tx = fu_igraph_loop_var(L->g, i);
  }
  if (!L->failed && s->reduce != FU_RM_SERIAL && !P.tx) fu_rl_fail(L, s->loc, "no reduced axis on threadIdx.x");
  if (L->failed) return;
  find_pairs(&P);
  P.n_acc = fu_igraph_num_accesses(L->g);
  size_t n_cache = (size_t)P.n_acc * MAX_CHUNKS;
  uint32_t nv = L->f->next_value_id ? L->f->next_value_id : 1;
  P.cache = fu_mem_calloc(&L->m->alloc, n_cache * MAX_V + 1, sizeof *P.cache);
  P.loaded = fu_mem_calloc(&L->m->alloc, n_cache + 1, sizeof *P.loaded);
  P.need = fu_mem_calloc(&L->m->alloc, nv, sizeof *P.need);
  size_t n_st = s->persist == FU_PM_SMEM ? (size_t)P.n_acc + 1 : 0;
  if (n_st) {
    P.stage = fu_mem_calloc(&L->m->alloc, n_st, sizeof *P.stage);
    P.stage_at = fu_mem_calloc(&L->m->alloc, n_st, sizeof *P.stage_at);
    P.staged = fu_mem_calloc(&L->m->alloc, n_st, sizeof *P.staged);
    P.storing = fu_mem_calloc(&L->m->alloc, n_st, sizeof *P.storing);
    P.keep = fu_mem_calloc(&L->m->alloc, n_st, sizeof *P.keep);
  }
  /* partial sums: their ops, and their outputs, which this body stores */
  bool *own = fu_mem_calloc(&L->m->alloc, nv, sizeof *own);
  size_t n_pacc = (size_t)FU_PERSIST_MAX_PARTIALS * MAX_CHUNKS * MAX_V + 1;
  P.pacc = fu_mem_calloc(&L->m->alloc, n_pacc, sizeof *P.pacc);
  uint32_t n_partial = fu_segment_partial_sums(L->seg, P.partial, FU_PERSIST_MAX_PARTIALS);
  P.n_partial = n_partial < FU_PERSIST_MAX_PARTIALS ? n_partial : FU_PERSIST_MAX_PARTIALS;
  if (n_partial > FU_PERSIST_MAX_PARTIALS) fu_rl_fail(L, s->loc, "more than 4 partial sums in one segment");
  for (uint32_t k = 0; k < P.n_partial && own; k++) own[P.partial[k]->results[0]->id] = true;
  L->own_store = own;
  uint32_t want = planned_blocks(&P);
  if (want > 1) L->k->min_blocks = want;
  if (!P.cache || !P.loaded || !P.need || !own || !P.pacc ||
      (n_st && (!P.stage || !P.stage_at || !P.staged || !P.storing || !P.keep))) {
    fu_rl_chk(L, NULL);
  } else if (!L->failed) {
    if (n_st) setup_stage(&P);
    if (P.hybrid && !L->failed) L->k->min_blocks = hybrid_blocks(&P);
    if (P.n_partial) init_partials(&P);
    if (P.n_partial && P.row_loop >= 0 && !L->failed && !parts_fixed(&P))
      fu_rl_fail(L, s->loc, "a partial sum's part changes along the row loop: split the rows by its parts");
    if (!L->failed) rows(&P, nv);
    uint32_t mark = fu_lix_mark(&L->lix);
    if (P.row_loop >= 0)
      fu_rl_ixv_set(L, fu_igraph_loop_var(L->g, (uint32_t)P.row_loop), fu_rl_emit_ix(L, fu_ix_const(L->ix, 0)));
    if (P.n_partial && !L->failed) store_partials(&P, 0, 0);
    fu_lix_pop(&L->lix, mark);
    /* no block leaves while another may still read its shared slots */
    if (P.cluster > 1 && !L->failed && !fu_kb_sync_cluster(&L->b)) fu_rl_chk(L, NULL);
  }
  L->own_store = NULL;
  if (own) fu_mem_free(&L->m->alloc, own, nv * sizeof *own);
  if (P.pacc) fu_mem_free(&L->m->alloc, P.pacc, n_pacc * sizeof *P.pacc);
  if (P.cache) fu_mem_free(&L->m->alloc, P.cache, (n_cache * MAX_V + 1) * sizeof *P.cache);
  if (P.loaded) fu_mem_free(&L->m->alloc, P.loaded, (n_cache + 1) * sizeof *P.loaded);
  if (P.need) fu_mem_free(&L->m->alloc, P.need, nv * sizeof *P.need);
  fu_mem_free(&L->m->alloc, P.stage, n_st * sizeof *P.stage);
  fu_mem_free(&L->m->alloc, P.stage_at, n_st * sizeof *P.stage_at);
  fu_mem_free(&L->m->alloc, P.staged, n_st * sizeof *P.staged);
  fu_mem_free(&L->m->alloc, P.storing, n_st * sizeof *P.storing);
  fu_mem_free(&L->m->alloc, P.keep, n_st * sizeof *P.keep);
}

fu_status fu_lower_persistent(fu_fusion *f, fu_op *seg, const fu_lower_options *opt, fu_diag_engine *diag,
                              fu_kernel **out) {
  return fu_rl_lower(f, seg, opt, diag, out, persistent_body);
}
