/* fuser: helpers shared by the lowerings (passes/lower/): index
 * expressions to kernel values, scoped, and a pointwise op's dtype rules
 * and math.  Internal to passes/lower: not part of the public API.
 *
 * Index expressions (fu_lix): each fu_ix is emitted once per scope and
 * reused while the scope is open; binding a variable (a loop index, a
 * lane's constant) is one more entry, and closing a scope restores what
 * its entries replaced, so a lane can rebind a variable that an outer
 * scope bound.  Extent and stride parameters are added to the kernel as
 * they are first used.  Every function returns NULL (or does nothing)
 * after an error, which it reports once through `diag` and records in
 * `failed`. */
#ifndef FUSER_PASSES_LOWER_INTERNAL_H
#define FUSER_PASSES_LOWER_INTERNAL_H

#include "fuser/index_graph.h"
#include "fuser/kir.h"

enum { FU_LIX_MAX_PARAMS = 64 };

typedef struct fu_lix {
  /* set by the lowering before use */
  fu_module *m;
  fu_kernel *k;
  fu_kbuilder *b;    /* where instructions go (the lowering moves it) */
  fu_ix_ctx *ix;
  fu_dtype idx;      /* the kernel's index dtype */
  fu_allocator alloc;
  fu_diag_engine *diag;
  const fu_op *seg;
  fu_kval **tparam;  /* tensor parameters by fusion value id (strides) */
  /* index variables other than strides that the lowering itself gives a
   * value (a resize's clamped coordinate); NULL: none */
  fu_kval *(*resolve_var)(void *ctx, const fu_ix *x);
  void *resolve_ctx;
  bool failed;
  /* parameters made so far */
  struct {
    const char *sym;
    fu_kval *kv;
  } ext[FU_LIX_MAX_PARAMS];
  uint32_t n_ext;
  struct {
    const fu_value *v;
    int32_t dim;
    fu_kval *kv;
  } str[FU_LIX_MAX_PARAMS];
  uint32_t n_str;
  /* the value of each index expression (by id) in the open scopes, and
   * the log of bindings with what each replaced */
  fu_kval **val;
  uint32_t cap;
  struct fu_lix_undo {
    uint32_t id;
    fu_kval *old;
  } *log;
  uint32_t n_log, cap_log;
} fu_lix;

/* The kernel value of x in the open scopes, emitted now when it has none. */
fu_kval *fu_lix_emit(fu_lix *e, const fu_ix *x);
/* Binds x (a variable, or any expression) to kv until its scope closes. */
void fu_lix_set(fu_lix *e, const fu_ix *x, fu_kval *kv);
/* x's value in the open scopes, NULL when it has none. */
fu_kval *fu_lix_get(const fu_lix *e, const fu_ix *x);
/* Opens a scope (its mark), and closes every scope opened since `mark`. */
uint32_t fu_lix_mark(const fu_lix *e);
void fu_lix_pop(fu_lix *e, uint32_t mark);
/* Frees the tables (not the kernel values). */
void fu_lix_free(fu_lix *e);

/* The dtype f16/bf16 compute in (f32); other dtypes compute in their own. */
fu_dtype fu_lower_compute_of(fu_dtype t);
/* The dtype pointwise op `op` computes in, as the CPU interpreter does:
 * comparisons in their operands' promoted dtype (f16/bf16 in f32,
 * integers in i64), float results in their compute dtype, bitwise ops on
 * bools as bools, logical_right_shift in its result dtype (the shift is at
 * that width), other integer results in i64. */
fu_dtype fu_lower_op_compute_dtype(const fu_op *op);
/* The dtype operand i of op is converted to before the math: bool for
 * where's condition, else the op's compute dtype. */
fu_dtype fu_lower_operand_dtype(const fu_op *op, uint32_t i);
/* Pointwise op `op` on operands a (already in fu_lower_operand_dtype),
 * its result in the op's result dtype, named `name` (may be NULL); a pow
 * by a literal 1, 2, 3 or -1 is multiplications or a reciprocal, as
 * PyTorch's CUDA kernels compute it.  NULL when out of memory. */
fu_kval *fu_lower_pointwise_math(fu_kbuilder *b, const fu_op *op, fu_kval **a, const char *name);
/* The linear logical index of t's element at coordinates c, row-major over
 * t's extents: what uniform and normal key an element's value by, so no
 * schedule changes it.  NULL when the index context fails. */
const fu_ix *fu_lower_linear_index(fu_ix_ctx *ix, const fu_type *t, const fu_ix *const *c);
/* The dtype operand i (a, b, seed, offset, index) of a random op's
 * instruction is converted to: f64 or f32 parameters, i64 for the rest. */
fu_dtype fu_lower_rng_operand_dtype(fu_dtype result, uint32_t i);

/* The walk the load-moving steps share (cone_walk.c): a block's
 * instructions by position (insts), the position defining each kernel
 * value (def, -1 outside the block), and per position a mark. */
typedef struct fu_cone_walk {
  fu_allocator alloc;
  uint32_t n_ids;   /* def covers kernel value ids up to this one */
  int32_t *def;
  fu_kinst **insts;
  uint8_t *mark;    /* FU_CONE_STAYS, FU_CONE_MOVES, or FU_CONE_IN during a walk */
  uint32_t *cone;   /* the positions reached by the current walk */
  uint32_t cap;     /* of insts, mark and cone */
} fu_cone_walk;
enum { FU_CONE_STAYS = 0, FU_CONE_MOVES = 1, FU_CONE_IN = 2 };
fu_status fu_cone_walk_init(fu_cone_walk *w, const fu_allocator *alloc, uint32_t n_ids);
bool fu_cone_walk_cover(fu_cone_walk *w, uint32_t n_ids);
bool fu_cone_walk_reserve(fu_cone_walk *w, uint32_t n);
/* Records (defined) or forgets the definitions of positions [lo, hi). */
void fu_cone_walk_define(fu_cone_walk *w, uint32_t lo, uint32_t hi, bool defined);
/* Whether the instruction at position p (may_move's `first`) and the
 * operands it takes from the block, transitively, all may move; marks them
 * FU_CONE_MOVES when they do and `apply`, else leaves the marks as they
 * were. */
bool fu_cone_walk_from(fu_cone_walk *w, uint32_t p, bool (*may_move)(const fu_kinst *in, bool first), bool apply);
void fu_cone_walk_free(fu_cone_walk *w);

/* Every lowering's last step (hoist_loads.c): in each straight-line block of
 * k, loads of read-only tensors and the pure index math they need move ahead
 * of the other instructions, so their memory latencies overlap; regs_per_sm
 * is the register file of the schedule's device (32-bit registers). */
fu_status fu_lower_hoist_loads(fu_module *m, fu_kernel *k, bool kept, uint32_t regs_per_sm, bool across_light_ifs);
/* The bytes of loads one region of a block moves ahead at most (hoist_loads.c). */
uint64_t fu_lower_hoist_budget(const fu_kernel *k, bool kept, uint32_t regs_per_sm);
/* Before it (speculate_loads.c, unless --disable=speculate_loads): loads of
 * read-only inputs in a guard move out of it at an index clamped to 0 where
 * the guard fails, in regions with two or more sources of loads, within
 * `budget` bytes a region; *n_moved counts them, *n_sparse the branches
 * that keep theirs because fewer than half of a block's threads take them.  hoist_loads then runs with
 * across_light_ifs: a branch with no barrier, shuffle, atomic, fence or loop
 * inside no longer ends a region. */
fu_status fu_lower_speculate_loads(fu_module *m, fu_kernel *k, uint64_t budget, uint32_t *n_moved,
                                   uint32_t *n_sparse);
/* A branch whose bodies hold no barrier, shuffle, atomic, fence or loop. */
bool fu_lower_if_is_light(const fu_kinst *in);
/* Whether `in` ends one region of a block for the load-moving steps (and
 * begins the next): a barrier, shuffle, atomic, fence, loop, or a branch
 * (a light one only when not across_light_ifs). */
bool fu_lower_region_boundary(const fu_kinst *in, bool across_light_ifs);

/* The share of a block's threads that take a branch (guard_share.c): its
 * condition's integer math over constants, thread indices, block indices
 * (block 0) and block dims, evaluated at every thread of the block. */
typedef struct fu_guard_eval {
  fu_allocator alloc;
  const fu_kernel *k;
  uint32_t n_ids;
  uint32_t lanes;        /* the block's threads; 0 past FU_INTERP_MAX_LANES */
  const fu_kinst **defs; /* by kernel value id: its defining instruction */
  int32_t *slot;         /* by kernel value id: its lanes in `values` for the current condition, or -1 */
  int64_t *values;       /* 256 values of `lanes` lanes */
  uint32_t n_values;
  uint32_t touched[256]; /* the ids with a slot, reset after each condition */
} fu_guard_eval;
fu_status fu_guard_eval_init(fu_guard_eval *ev, const fu_allocator *alloc, const fu_kernel *k);
void fu_guard_eval_free(fu_guard_eval *ev);
/* In [0, 1]; -1 when the condition is not such math (or the block has
 * more than 1024 threads). */
double fu_guard_share(fu_guard_eval *ev, const fu_kval *cond);
/* Then (relax_exp.c, unless --disable=exp16): f32 exps whose results only
 * reach bf16/f16 values through mul, div, neg and casts become exp2(x *
 * log2 e); *n_relaxed counts them. */
fu_status fu_lower_relax_exp(fu_module *m, fu_kernel *k, uint32_t *n_relaxed);
/* x * log2 e for an f32 x: what exp2 takes to give exp(x) in a product
 * and one ex2.approx.ftz (lower_compute.c); relax_exp.c and the online
 * softmax's states (reduction_online.c) say when its |x| u error is
 * harmless.  NULL when the builder runs out of memory. */
fu_kval *fu_lower_exp2_arg(fu_kbuilder *b, fu_kval *x);

#endif
