/* fuser: what the reduction lowering (passes/lower/reduction.c) shares
 * with the persistent lowering (passes/lower/persistent.c): its state, the
 * demand-driven evaluator over the index graph, the accumulators and
 * their combines across threads.  Internal to passes/lower.
 *
 * fu_rl_lower builds the index graph, the kernel, its parameters and
 * launch shape for a reduction or persistent segment, then calls `body`
 * to emit the kernel body, and verifies the result.  The other helpers
 * are those of reduction.c under a prefix (see the comments there). */
#ifndef FUSER_PASSES_LOWER_REDUCTION_INTERNAL_H
#define FUSER_PASSES_LOWER_REDUCTION_INTERNAL_H

#include "fuser/index_graph.h"
#include "fuser/lower.h"
#include "fuser/schedule.h"
#include "lower_internal.h"
#include "reduction_welford.h"

/* A value at its coordinates, as emitted. */
typedef struct fu_rl_memo {
  const fu_value *v;
  const fu_ix *const *c;
  fu_kval *kv;
} fu_rl_memo;

/* MAX_STATES: reductions x kept vector lanes (a thread that owns
 * MAX_KEPT_LANES adjacent outputs keeps one state per output). */
enum { MAX_LANES = 16, MAX_KEPT_LANES = 8,
       MAX_STATES = FU_MAX_SEG_REDUCTIONS * MAX_KEPT_LANES };

typedef struct rl {
  /* what is lowered, and where diagnostics go */
  fu_module *m;
  fu_fusion *f;
  fu_op *seg;
  const fu_schedule *s;
  fu_diag_engine *diag;
  bool failed;
  /* the index graph, and the kernel being built */
  fu_igraph *g;
  fu_ix_ctx *ix;
  fu_kernel *k;
  fu_kbuilder b;
  fu_dtype idx;
  fu_reduction_info ri;
  bool ra[256];
  const fu_ix *rvars[16]; /* loop variables of reduced axes */
  bool ty_red;           /* the reduced thread axis is threadIdx.y (outer reductions) */
  const fu_ix *kx;       /* then the kept threadIdx.x variable, if any */
  uint32_t n_rvars;
  fu_kval **tparam, **sparam; /* by fusion value id */
  /* index expressions of the open scopes, extent and stride parameters
   * (lower_internal.h) */
  fu_lix lix;
  /* the pending evaluations (eval's explicit stack) */
  struct rframe {
    const fu_value *v;
    const fu_ix *const *c;
    uint32_t next;
    fu_kval *args[3];
  } *stk;
  uint32_t stk_n, stk_cap;
  /* the values of the current body by (value, coordinates): an open
   * addressing table whose entries of an older generation are empty, so
   * a new body clears it in O(1) */
  struct rmemo {
    const fu_value *v;
    const fu_ix *const *c;
    fu_kval *kv;
    uint32_t gen;
  } *memo;
  uint32_t memo_cap, memo_n, memo_gen;
  /* a kept axis vectorized (outer reductions: each thread owns n_lanes
   * adjacent columns, loaded as one vector): its lane variable, and the
   * states, n_lanes x the reductions, state s for reduction s % n_ops */
  const fu_ix *klane;
  uint32_t n_lanes, n_states;
  /* the kept lanes are an unroll loop (rows a thread reduces side by side,
   * each with its own loads) rather than a vector; the one being emitted */
  bool klane_rows;
  uint32_t cur_lane;
  fu_kval *shift[MAX_STATES]; /* Welford states: the shift their elements accumulate from */
  /* Welford counts that every thread shares (welford_counts): not
   * carried, shuffled or stored but computed, `lin` the elements before
   * the current one, `n_thread` a thread's elements in all */
  bool known_count;
  const fu_ix *lin, *n_thread;
  /* with known counts, in the reduction lowering: a Welford state's mean
   * and m2 mutables hold the sum of its shifted elements and the sum of
   * their squares through the serial loops (finish converts them:
   * sums_to_welford) */
  bool sums;
  /* the shared-memory folds over threadIdx.y rows are one rolled loop
   * from 2 rows on (a two-level grid combine's group and top levels) */
  bool roll_folds;
  /* the kept axes' guards (the row in range) were tested once around the
   * code being emitted: the guards of its points leave them out */
  bool kept_checked;
  const fu_lower_options *opt; /* the lower pass's switches (NULL: defaults) */
  /* by value id: outputs the body stores itself (partial sums), which
   * store_outputs leaves alone; NULL when none */
  const bool *own_store;
} rl;


/* A reduction's state: one accumulator, or a Welford (mean, m2, count). */
typedef fu_kval *rstate[FU_WELFORD_PARTS];

fu_status fu_rl_lower(fu_fusion *f, fu_op *seg, const fu_lower_options *opt, fu_diag_engine *diag, fu_kernel **out,
                      void (*body)(rl *L));

/* Reports `what` once, at loc; false. */
bool fu_rl_fail(rl *L, fu_loc loc, const char *what);
/* v, or a failure (out of memory) when v is NULL. */
fu_kval *fu_rl_chk(rl *L, fu_kval *v);
/* Binds index expression x to kv until its scope (fu_lix_mark) is popped. */
void fu_rl_ixv_set(rl *L, const fu_ix *x, fu_kval *kv);
fu_kval *fu_rl_emit_ix(rl *L, const fu_ix *x);
/* Does x depend on a reduced loop variable? */
bool fu_rl_on_reduced(rl *L, const fu_ix *x);
/* The guard predicates (those on kept axes, or all), NULL when none. */
fu_kval *fu_rl_guards(rl *L, bool all_axes);
/* The guard predicates on reduced axes only, NULL when none. */
fu_kval *fu_rl_reduced_guards(rl *L);
/* The guards split by whether they depend on `lane` (taken at `last`). */
bool fu_rl_lane_guards(rl *L, const fu_ix *lane, int64_t last, fu_kval **ind, fu_kval **full);
void fu_rl_memo_put(rl *L, const fu_value *v, const fu_ix *const *c, fu_kval *kv);
/* Starts a new body: every memoized value is forgotten. */
void fu_rl_memo_clear(rl *L);
/* Value v at coordinates c, memoized in L->memo. */
fu_kval *fu_rl_eval(rl *L, const fu_value *v, const fu_ix *const *c);
fu_kval *fu_rl_cast(rl *L, fu_kval *x, fu_dtype t);
fu_dtype fu_rl_acc_dtype(const fu_op *op);
/* 3 for a Welford op, else 1. */
uint32_t fu_rl_parts(const fu_op *op);
fu_kval *fu_rl_combine(rl *L, const fu_op *op, fu_kval *a, fu_kval *b);
void fu_rl_new_accumulators(rl *L, const char *prefix, rstate *acc);
void fu_rl_read_states(rl *L, rstate *acc, rstate *v);
/* Opens `if (cond)`; returns the builder to restore after it. */
fu_kbuilder fu_rl_open_if(rl *L, fu_kval *cond);
/* Stores the outputs whose index does (reduced) or does not depend on a
 * reduced axis, one element each. */
void fu_rl_store_outputs(rl *L, bool reduced);
/* The combine of v across the threads of a row (reduce=warp|block), in
 * place; every thread of the row ends with the result.  Shared slot
 * arrays are named after `tag`. */
void fu_rl_combine_threads(rl *L, rstate *v, const fu_ix *tx, const char *tag);
/* The combine of v, already combined in the block, across the C blocks of
 * the cluster that split the row (cluster.x), in place: every thread of
 * every block ends with the row's result, the same bits in each. */
void fu_rl_combine_cluster(rl *L, rstate *v, const fu_ix *tx, uint32_t C, const char *tag);
/* The Welford shifts (the first element of each row), in L->shift. */
void fu_rl_welford_shifts(rl *L);
/* A peeled split's shift (tail=peel) for the current row, its kept
 * coordinates bound: from the peeled input's address and the row's first
 * element; nothing without a peeled split.  A lowering that reduces a
 * peeled row binds it before the row's loops (the persistent lowering may,
 * once its scheduler peels). */
void fu_rl_bind_peel(rl *L);

#endif
