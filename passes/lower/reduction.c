/* fuser: lowering a scheduled reduction segment to kernel IR.
 *
 * The schedule's loops split in two (lib/analysis/reduction_axes.c): the
 * kept axes (blocks, threadIdx.y, serial loops outside) and the reduced
 * ones (threadIdx.x, and serial loops inside).  The kernel is
 *
 *   kept loops {
 *     acc = identity                      (one mutable per reduction)
 *     reduced serial loops {
 *       if (in range) { acc = acc op prologue(x) }   (full-size outputs stored here)
 *     }                                  (a last vectorize loop: vector loads,
 *                                         then lanes in order)
 *     reduce=warp|block: butterfly shfl.xor over threadIdx.x (16..1, or
 *       from half of a narrower warp row);
 *     reduce=block: lane 0 of each warp stores to shared memory, sync,
 *       every thread combines its row's warp slots in slot order (reduced
 *       axis on threadIdx.y: slots [ty][tx], combined in ty order);
 *     reduce=grid: then partials through a workspace, the last block
 *       (semaphore) combines them in order
 *     if (kept in range && threadIdx.x == 0) { epilogue(acc); store }
 *   }
 *
 * Values are evaluated demand-driven at their index-graph coordinates and
 * memoized per body, with the CPU interpreter's dtype rules (f16/bf16
 * compute in f32 and round after each op, integers in i64).  Accumulators
 * are f32 for f16/bf16/f32 results, f64 for f64, i64 for integers and
 * bools; the combine order is fixed, so results are deterministic.
 * var/var_mean carry a Welford state (mean, m2, count) instead of one
 * accumulator, folded and combined by reduction_welford.c (the grid
 * workspace holds every part), over elements shifted by the first one of
 * their slice (welford_shifts); where every thread folds the same number
 * of elements the count is computed, not carried (welford_counts). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fuser/index_graph.h"
#include "fuser/lower.h"
#include "fuser/schedule.h"
#include "lower_internal.h"
#include "reduction_internal.h"
#include "reduction_online.h"
#include "reduction_welford.h"

/* GRID_UNROLL: the most partials a thread of a grid reduction's last block
 * loads before it combines them (combine_partials, grid_unroll); and the
 * most loads of a step, over the partials and their states' parts. */
enum { GRID_UNROLL = 4, GRID_STEP_LOADS = 16 };

static bool fail(rl *L, fu_loc loc, const char *what) {
  if (!L->failed) fu_error(L->diag, loc, "cannot lower reduction segment '@%s': %s", L->seg->u.segment.name, what);
  L->failed = true;
  return false;
}

static fu_kval *chk(rl *L, fu_kval *v) {
  if (!v) fail(L, L->seg->loc, "out of memory");
  return v;
}

/* ---- index expressions (scoped: values emitted in a body are forgotten
 * when the body closes) ------------------------------------------------------------ */

static void ixv_set(rl *L, const fu_ix *x, fu_kval *kv) {
  fu_lix_set(&L->lix, x, kv);
  L->failed |= L->lix.failed;
}

static fu_kval *emit_ix(rl *L, const fu_ix *x) {
  if (L->failed) return NULL;
  fu_kval *kv = fu_lix_emit(&L->lix, x);
  L->failed |= L->lix.failed;
  return kv;
}

/* Does x depend on a reduced axis's loop variable? */
static bool on_reduced(rl *L, const fu_ix *x) {
  for (uint32_t i = 0; i < L->n_rvars; i++)
    if (fu_ix_subst(L->ix, x, L->rvars[i], fu_ix_const(L->ix, 0)) != x) return true;
  return false;
}

/* Which guard predicates guard_set takes: those on kept axes, all, or
 * those on reduced axes only. */
typedef enum guard_set { GUARDS_KEPT, GUARDS_ALL, GUARDS_REDUCED } guard_set;

/* The conjunction of the guard predicates of `which`; NULL when there is
 * none. */
static fu_kval *guard_set_of(rl *L, guard_set which) {
  fu_kval *all = NULL;
  for (uint32_t i = 0; i < fu_igraph_num_predicates(L->g) && !L->failed; i++) {
    const fu_ix *idx, *ext;
    fu_igraph_predicate(L->g, i, &idx, &ext);
    /* (on_reduced substitutes every reduced loop variable: asked only
     * where the answer matters) */
    if (which == GUARDS_ALL ? L->kept_checked && !on_reduced(L, idx) : on_reduced(L, idx) != (which == GUARDS_REDUCED))
      continue;
    fu_kval *a = emit_ix(L, idx), *e = emit_ix(L, ext);
    fu_kval *p = a && e ? chk(L, fu_kb_binary(&L->b, "in_range", FU_OP_LT, FU_DT_BOOL, a, e)) : NULL;
    all = all && p ? chk(L, fu_kb_binary(&L->b, "in_range", FU_OP_LOGICAL_AND, FU_DT_BOOL, all, p)) : p;
  }
  return all;
}

/* The guards on kept axes, or all of them. */
static fu_kval *guards(rl *L, bool all_axes) { return guard_set_of(L, all_axes ? GUARDS_ALL : GUARDS_KEPT); }

/* ---- values -------------------------------------------------------------------------- */

static const char *vname(const fu_value *v) { return v && v->name ? v->name : "?"; }

static uint32_t memo_slot(const rl *L, const fu_value *v, const fu_ix *const *c) {
  uint64_t h = (uint64_t)(uintptr_t)v * 0x9e3779b97f4a7c15ull;
  h ^= (uint64_t)(uintptr_t)c + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
  uint32_t i = (uint32_t)(h ^ (h >> 32)) & (L->memo_cap - 1);
  while (L->memo[i].gen == L->memo_gen && !(L->memo[i].v == v && L->memo[i].c == c)) i = (i + 1) & (L->memo_cap - 1);
  return i;
}

static fu_kval *memo_get(const rl *L, const fu_value *v, const fu_ix *const *c) {
  if (!L->memo_cap) return NULL;
  const struct rmemo *e = &L->memo[memo_slot(L, v, c)];
  return e->gen == L->memo_gen ? e->kv : NULL;
}

/* Starts a new body: every memoized value is forgotten. */
static void memo_clear(rl *L) {
  L->memo_gen++;
  L->memo_n = 0;
}

/* Records v at c (the first value recorded for a key stays). */
static void memo_put(rl *L, const fu_value *v, const fu_ix *const *c, fu_kval *kv) {
  if ((L->memo_n + 1) * 2 > L->memo_cap) {
    uint32_t cap = L->memo_cap ? L->memo_cap * 2 : 256;
    struct rmemo *old = L->memo, *n = fu_mem_calloc(&L->m->alloc, cap, sizeof *n);
    if (!n) {
      chk(L, NULL);
      return;
    }
    uint32_t old_cap = L->memo_cap;
    L->memo = n;
    L->memo_cap = cap;
    for (uint32_t i = 0; i < old_cap; i++)
      if (old[i].gen == L->memo_gen) L->memo[memo_slot(L, old[i].v, old[i].c)] = old[i];
    fu_mem_free(&L->m->alloc, old, old_cap * sizeof *old);
  }
  struct rmemo *e = &L->memo[memo_slot(L, v, c)];
  if (e->gen == L->memo_gen) return;
  *e = (struct rmemo){v, c, kv, L->memo_gen};
  L->memo_n++;
}

static fu_kval *cast_to(rl *L, fu_kval *x, fu_dtype t) {
  if (!x || x->dtype == t) return x;
  return chk(L, fu_kb_unary(&L->b, NULL, FU_OP_CAST, t, x));
}

static fu_kval *literal(rl *L, const fu_value *v) {
  fu_dtype t = v->type.dtype;
  if (fu_dtype_is_float(t)) return chk(L, fu_kb_const_f(&L->b, NULL, t, v->literal.f));
  if (fu_dtype_is_bool(t)) return chk(L, fu_kb_const_b(&L->b, NULL, v->literal.b));
  return chk(L, fu_kb_const_i(&L->b, NULL, t, v->literal.i));
}

static fu_kval *eval(rl *L, const fu_value *v, const fu_ix *const *c);
static void bind_peel(rl *L);

static bool is_view(const fu_op *op) {
  fu_op_class k = fu_op_info_of(op->kind)->cls;
  return k == FU_OC_BROADCAST_IN_DIM || k == FU_OC_BROADCAST || k == FU_OC_EXPAND || k == FU_OC_RESHAPE ||
         k == FU_OC_PERMUTE || k == FU_OC_SQUEEZE || k == FU_OC_STRIDE_ORDER;
}

/* iota's element at index i: start + i * step, computed in i64 or f64
 * (a prologue of the reduction, as in pointwise segments; its operands
 * are scalars, leaves of the evaluation). */
static fu_kval *iota_at(rl *L, const fu_op *op, const fu_ix *i) {
  fu_dtype rt = op->results[0]->type.dtype, ct = fu_dtype_is_float(rt) ? FU_DT_F64 : FU_DT_I64;
  fu_kval *x = cast_to(L, emit_ix(L, i), ct);
  fu_kval *start = cast_to(L, eval(L, op->operands[0], NULL), ct);
  fu_kval *step = cast_to(L, eval(L, op->operands[1], NULL), ct);
  fu_kval *p = x && start && step ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_MUL, ct, x, step)) : NULL;
  return cast_to(L, p ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_ADD, ct, start, p)) : NULL, rt);
}

/* uniform or normal at coordinates c: one instruction over (a, b, seed,
 * offset, linear logical index), as in pointwise segments; the scalars are
 * leaves of the evaluation. */
static fu_kval *rng_at(rl *L, const fu_op *op, const fu_value *v, const fu_ix *const *c) {
  const fu_ix *lin = fu_lower_linear_index(L->ix, &v->type, c);
  if (!lin) return chk(L, NULL);
  fu_kval *args[5];
  for (uint32_t i = 0; i < 4; i++)
    if (!(args[i] = cast_to(L, eval(L, op->operands[i], NULL), fu_lower_rng_operand_dtype(v->type.dtype, i))))
      return NULL;
  if (!(args[4] = cast_to(L, emit_ix(L, lin), FU_DT_I64))) return NULL;
  return chk(L, fu_kb_math(&L->b, vname(v), op->kind, v->type.dtype, args, 5));
}

/* How many of op's operands are evaluated before it: all of a pointwise
 * op's, a view's one; full evaluates its scalar itself. */
static uint32_t n_args(const fu_op *op) {
  if (fu_op_has(op->kind, FU_OF_POINTWISE)) return op->n_operands;
  return is_view(op) ? 1 : 0;
}

/* Starts evaluating v at c (NULL for a scalar): *kv is its value when it
 * is memoized or a leaf (a literal, a segment input; NULL after an error);
 * otherwise a frame is pushed and the result is true. */
static bool eval_start(rl *L, const fu_value *v, const fu_ix *const *c, fu_kval **kv) {
  if (!fu_type_is_tensor(&v->type)) c = NULL;
  if ((*kv = memo_get(L, v, c))) return false;
  bool input = false;
  for (uint32_t i = 0; i < L->seg->n_operands; i++)
    if (L->seg->operands[i] == v) input = true;
  const fu_op *op = v->def;
  if (v->is_literal) {
    *kv = literal(L, v);
  } else if (input && !c) {
    if (!(*kv = L->sparam[v->id])) fail(L, L->seg->loc, "a scalar input without a parameter");
  } else if (input) {
    const fu_ix *off = fu_igraph_offset(L->g, v, c);
    fu_kval *at = off ? emit_ix(L, off) : NULL;
    if (!off) fail(L, L->seg->loc, "a load cannot be indexed");
    if (at && !fu_kb_load(&L->b, vname(v), L->tparam[v->id], at, 1, v->type.dtype, kv)) chk(L, NULL);
  } else if (op && op->parent == L->seg->u.segment.body && (c || !fu_type_is_tensor(&v->type))) {
    const fu_op_info *info = fu_op_info_of(op->kind);
    if (fu_op_has(op->kind, FU_OF_POINTWISE) && op->n_operands > 3) {
      fail(L, op->loc, "an op with more than 3 operands");
    } else if (info->cls == FU_OC_IOTA && v->type.rank == 1) {
      *kv = iota_at(L, op, c[0]);
    } else if (info->cls == FU_OC_RNG) {
      *kv = rng_at(L, op, v, c);
    } else if (fu_op_has(op->kind, FU_OF_POINTWISE) || info->cls == FU_OC_FULL || is_view(op)) {
      if (L->stk_n == L->stk_cap) {
        uint32_t cap = L->stk_cap ? L->stk_cap * 2 : 64;
        struct rframe *n = fu_mem_realloc(&L->m->alloc, L->stk, L->stk_cap * sizeof *n, cap * sizeof *n);
        if (!n) return chk(L, NULL) != NULL;
        L->stk = n;
        L->stk_cap = cap;
      }
      L->stk[L->stk_n++] = (struct rframe){v, c, 0, {NULL, NULL, NULL}};
      return true;
    } else {
      char what[96];
      snprintf(what, sizeof what, "'%s' is not reached at the coordinates the kernel has", info->name);
      fail(L, op->loc, what);
    }
  } else {
    fail(L, L->seg->loc, "a value is not reached by the loop domain");
  }
  if (*kv) memo_put(L, v, c, *kv);
  return false;
}

/* v (defined by op) from its evaluated operands: a pointwise op in the
 * interpreter's compute dtype (lower_internal.h), full's scalar, or the
 * operand of a view. */
static fu_kval *compute(rl *L, const fu_op *op, const fu_value *v, fu_kval **args) {
  if (fu_op_has(op->kind, FU_OF_POINTWISE)) {
    fu_kval *a[3];
    for (uint32_t i = 0; i < op->n_operands; i++)
      if (!(a[i] = cast_to(L, args[i], fu_lower_operand_dtype(op, i)))) return NULL;
    return chk(L, fu_lower_pointwise_math(&L->b, op, a, vname(v)));
  }
  if (fu_op_info_of(op->kind)->cls == FU_OC_FULL) return cast_to(L, eval(L, op->operands[0], NULL), v->type.dtype);
  return args[0];
}

/* Value v at coordinates c (NULL for scalars), demand driven and memoized
 * per body: operands first, in order, then the op.  The pending ops are an
 * explicit stack, so a long chain of ops costs heap, not C stack (full's
 * scalar operand is a leaf: one level of recursion at most). */
static fu_kval *eval(rl *L, const fu_value *v, const fu_ix *const *c) {
  if (L->failed) return NULL;
  uint32_t base = L->stk_n;
  fu_kval *kv = NULL;
  if (!eval_start(L, v, c, &kv)) return kv;
  while (L->stk_n > base && !L->failed) {
    struct rframe *f = &L->stk[L->stk_n - 1];
    const fu_op *op = f->v->def;
    if (f->next < n_args(op)) {
      const fu_value *x = op->operands[f->next];
      const fu_ix *const *xc = NULL;
      if (fu_type_is_tensor(&x->type)) {
        const fu_ix **t = fu_igraph_back_map(L->g, op, f->next, f->c);
        if (!(xc = t ? fu_igraph_intern_coords(L->g, t, (uint32_t)x->type.rank) : NULL)) {
          fail(L, op->loc, is_view(op) ? "a view cannot be indexed" : "an operand cannot be indexed");
          break;
        }
      }
      fu_kval *a = NULL;
      if (eval_start(L, x, xc, &a)) continue;
      if (!a) break;
      f = &L->stk[L->stk_n - 1];
      f->args[f->next++] = a;
      continue;
    }
    fu_kval *args[3] = {f->args[0], f->args[1], f->args[2]};
    kv = compute(L, op, f->v, args);
    f = &L->stk[L->stk_n - 1];
    if (!kv) break;
    memo_put(L, f->v, f->c, kv);
    if (--L->stk_n > base) {
      struct rframe *p = &L->stk[L->stk_n - 1];
      p->args[p->next++] = kv;
    }
  }
  if (L->stk_n > base) {
    L->stk_n = base;
    return NULL;
  }
  return kv;
}

/* ---- reductions ------------------------------------------------------------------------ */

static fu_dtype acc_dtype(const fu_op *op) {
  fu_dtype t = op->results[0]->type.dtype;
  return fu_dtype_is_float(t) ? fu_lower_compute_of(t) : FU_DT_I64;
}

static fu_op_kind combine_op(const fu_op *op) {
  switch (op->kind) {
  case FU_OP_PROD: return FU_OP_MUL;
  case FU_OP_MAX: return FU_OP_MAXIMUM;
  case FU_OP_MIN: return FU_OP_MINIMUM;
  default: return FU_OP_ADD;
  }
}

static fu_kval *identity(rl *L, const fu_op *op) {
  fu_dtype t = acc_dtype(op);
  bool fl = fu_dtype_is_float(t);
  switch (op->kind) {
  case FU_OP_PROD: return chk(L, fl ? fu_kb_const_f(&L->b, NULL, t, 1.0) : fu_kb_const_i(&L->b, NULL, t, 1));
  case FU_OP_MAX: return chk(L, fl ? fu_kb_const_f(&L->b, NULL, t, -INFINITY) : fu_kb_const_i(&L->b, NULL, t, INT64_MIN));
  case FU_OP_MIN: return chk(L, fl ? fu_kb_const_f(&L->b, NULL, t, INFINITY) : fu_kb_const_i(&L->b, NULL, t, INT64_MAX));
  default: return chk(L, fl ? fu_kb_const_f(&L->b, NULL, t, 0.0) : fu_kb_const_i(&L->b, NULL, t, 0));
  }
}

static fu_kval *combine(rl *L, const fu_op *op, fu_kval *a, fu_kval *b) {
  return a && b ? chk(L, fu_kb_binary(&L->b, NULL, combine_op(op), acc_dtype(op), a, b)) : NULL;
}

static uint32_t parts(const fu_op *op) {
  return fu_welford_op(op) ? FU_WELFORD_PARTS : fu_online_op(op) ? FU_ONLINE_PARTS : 1;
}

/* The reduction of state s (kept lane s / n_ops). */
static const fu_op *op_of(const rl *L, uint32_t s) { return L->ri.ops[s % L->ri.n_ops]; }

/* The parts of op's state that live in mutables, shuffles, shared slots
 * and workspaces: all but a Welford count that is known (L->known_count). */
static uint32_t stored_parts(const rl *L, const fu_op *op) {
  return fu_welford_op(op) && L->known_count ? FU_WELFORD_PARTS - 1 : parts(op);
}

/* A known count, the index expression x, in op's accumulator dtype. */
static fu_kval *count_of(rl *L, const fu_op *op, const fu_ix *x) {
  return cast_to(L, emit_ix(L, x), acc_dtype(op));
}

/* out = a combined with b (out may alias a). */
static void combine_state(rl *L, const fu_op *op, fu_kval *const *a, fu_kval *const *b, fu_kval **out) {
  for (uint32_t p = 0; p < parts(op); p++)
    if (!a[p] || !b[p]) {
      out[0] = NULL;
      return;
    }
  if (fu_online_op(op)) {
    if (!fu_online_combine(&L->b, a, b, out)) out[0] = chk(L, NULL);
  } else if (!fu_welford_op(op)) {
    out[0] = combine(L, op, a[0], b[0]);
  } else if (!fu_welford_combine(&L->b, a, b, out, stored_parts(L, op) == parts(op))) {
    out[0] = chk(L, NULL);
  }
}

/* Every part of every state of `acc` read into v; a known count is a
 * thread's whole count. */
static void read_states(rl *L, rstate *acc, rstate *v) {
  for (uint32_t j = 0; j < L->n_states; j++) {
    const fu_op *op = op_of(L, j);
    for (uint32_t p = 0; p < stored_parts(L, op); p++) v[j][p] = chk(L, fu_kb_read(&L->b, NULL, acc[j][p]));
    if (stored_parts(L, op) < parts(op)) v[j][FU_WELFORD_PARTS - 1] = count_of(L, op, L->n_thread);
  }
}

/* One mutable state per reduction, named `prefix<j>` (Welford parts
 * mean<j>, m2_<j>, count<j>, or sum<j>, sumsq<j> for a thread's
 * accumulators ("acc") that keep sums (L->sums); online ones max<j>,
 * sumexp<j>; after the prefix unless it is "acc"), set to the reduction's
 * identity. */
static void new_accumulators(rl *L, const char *prefix, rstate *acc) {
  static const char *const wn[FU_WELFORD_PARTS] = {"mean", "m2_", "count"};
  static const char *const sn[FU_WELFORD_PARTS] = {"sum", "sumsq", "count"};
  static const char *const on[FU_ONLINE_PARTS] = {"max", "sumexp"};
  bool thread_acc = !strcmp(prefix, "acc");
  for (uint32_t j = 0; j < L->n_states && !L->failed; j++) {
    const fu_op *op = op_of(L, j);
    rstate id = {NULL};
    if (fu_online_op(op)) {
      if (!fu_online_identity(&L->b, acc_dtype(op), id)) chk(L, NULL);
    } else if (!fu_welford_op(op)) {
      id[0] = identity(L, op);
    } else if (!fu_welford_identity(&L->b, acc_dtype(op), id)) {
      chk(L, NULL);
    }
    for (uint32_t p = 0; p < stored_parts(L, op) && !L->failed; p++) {
      char nm[32];
      const char *pre = thread_acc ? "" : prefix;
      if (fu_welford_op(op)) snprintf(nm, sizeof nm, "%s%s%u", pre, thread_acc && L->sums ? sn[p] : wn[p], j);
      else if (fu_online_op(op)) snprintf(nm, sizeof nm, "%s%s%u", pre, on[p], j);
      else snprintf(nm, sizeof nm, "%s%u", prefix, j);
      acc[j][p] = chk(L, fu_kval_new_mutable(L->m, L->k, nm, acc_dtype(op)));
      if (acc[j][p] && id[p] && !fu_kb_assign(&L->b, acc[j][p], id[p])) chk(L, NULL);
    }
  }
}

/* Opens `if (cond)` (nothing when cond is NULL) and returns the builder to
 * restore after the then-block. */
static fu_kbuilder open_if(rl *L, fu_kval *cond) {
  fu_kbuilder saved = L->b;
  if (!cond) return saved;
  fu_kinst *br = fu_kb_if(&L->b, cond);
  if (!br) chk(L, NULL);
  else L->b = fu_kbuilder_at(L->m, L->k, &br->u.branch.then_body);
  return saved;
}

/* all && (x == 0) (x == 0 where all is NULL): one term of a one-writer
 * guard (one_writer, unseen_dims_guard). */
static fu_kval *and_at_zero(rl *L, fu_kval *all, const fu_ix *x) {
  fu_kval *v = emit_ix(L, x), *zero = emit_ix(L, fu_ix_const(L->ix, 0));
  fu_kval *p = v && zero ? chk(L, fu_kb_binary(&L->b, "one_writer", FU_OP_EQ, FU_DT_BOOL, v, zero)) : NULL;
  return all && p ? chk(L, fu_kb_binary(&L->b, "one_writer", FU_OP_LOGICAL_AND, FU_DT_BOOL, all, p)) : p;
}

/* The guard that makes one thread write an output whose offset does not
 * depend on some kept block, thread or serial loop (an intermediate
 * broadcast along the kept dims, indexed by the reduced ones: every kept
 * position would write it): that loop's variable at 0.  NULL when every
 * such loop's variable appears in the offset. */
static fu_kval *one_writer(rl *L, const fu_ix *off) {
  fu_kval *all = NULL;
  for (uint32_t i = 0; i < L->s->n_loops && !L->failed; i++) {
    const fu_sloop *l = &L->s->loops[i];
    bool kept_loop = l->ptype == FU_PT_BLOCK_X || l->ptype == FU_PT_BLOCK_Y || l->ptype == FU_PT_THREAD_X ||
                     l->ptype == FU_PT_THREAD_Y || l->ptype == FU_PT_SERIAL;
    if (L->ra[l->axis] || !kept_loop) continue;
    const fu_ix *var = fu_igraph_loop_var(L->g, i);
    if (!var || fu_ix_subst(L->ix, off, var, fu_ix_const(L->ix, 0)) != off) continue;
    all = and_at_zero(L, all, var);
  }
  return all;
}

/* The guard that makes one position write an output that some reference
 * dim does not index: an output related to the reference by pointwise
 * maps and broadcasts only (each of its dims of extent other than 1 in the
 * exact group of a reference dim) and broadcast along reference dim d (no
 * dim of it in d's group; d of extent other than 1) is written where d's
 * coordinate is 0.  one_writer's test, by loop, misses a loop that merges
 * such a dim with one the output does index (difftest seed 612464: [K, 7]
 * broadcast to [K, K, 1, 7], the kept loop merging the first K with the
 * 7); where it applies it is the whole guard.  NULL when no dim needs
 * it, or when the output is related to the reference otherwise (through a
 * reshape: no dim-by-dim test; one_writer then). */
static fu_kval *unseen_dims_guard(rl *L, const fu_value *o) {
  const fu_value *ref = L->s->reference;
  const fu_ix *const *rc = fu_igraph_coords(L->g, ref);
  int32_t rr = ref->type.rank, orank = o->type.rank;
  if (!rc || rr > FU_MAX_RANK || orank > FU_MAX_RANK) return NULL;
  uint32_t rg[FU_MAX_RANK], og[FU_MAX_RANK];
  for (int32_t d = 0; d < rr; d++) {
    uint32_t id = fu_igraph_tensor_id(L->g, ref, d);
    if (id == UINT32_MAX) return NULL;
    rg[d] = fu_igraph_id(L->g, id)->group;
  }
  for (int32_t k = 0; k < orank; k++) {
    uint32_t id = fu_igraph_tensor_id(L->g, o, k);
    if (id == UINT32_MAX) return NULL;
    og[k] = fu_igraph_id(L->g, id)->group;
    bool mapped = o->type.dims[k].sym == NULL && o->type.dims[k].value == 1;
    for (int32_t d = 0; d < rr && !mapped; d++) mapped = og[k] == rg[d];
    if (!mapped) return NULL;
  }
  fu_kval *all = NULL;
  for (int32_t d = 0; d < rr && !L->failed; d++) {
    if (!ref->type.dims[d].sym && ref->type.dims[d].value == 1) continue;
    bool seen = false;
    for (int32_t k = 0; k < orank && !seen; k++) seen = og[k] == rg[d];
    if (!seen) all = and_at_zero(L, all, rc[d]);
  }
  return all;
}

/* Stores every output whose coordinates do (full-size outputs, inside the
 * accumulation) or do not (reduced outputs, in the epilogue) depend on a
 * reduced axis; a full-size output that some kept loop does not index is
 * written by that loop's position 0 only (one_writer: difftest seed
 * 612464, reduced, wrote an input's reciprocal, [K, 1], once per kept row),
 * and one that a kept loop indexes through one of the dims it merges but
 * not through another (the same seed unreduced) where the other dim's
 * coordinate is 0 (unseen_dims_guard). */
static void store_outputs(rl *L, bool reduced) {
  const fu_segment_info *si = &L->seg->u.segment;
  for (uint32_t i = 0; i < si->n_outputs && !L->failed; i++) {
    const fu_value *o = si->outputs[i];
    if (L->own_store && L->own_store[o->id]) continue;
    const fu_ix *const *c = fu_igraph_coords(L->g, o);
    const fu_ix *off = c ? fu_igraph_offset(L->g, o, c) : NULL;
    if (!fu_type_is_tensor(&o->type) || !off) {
      fail(L, L->seg->loc, "an output is not reached by the loop domain");
      return;
    }
    /* a size-1 dim's coordinate may depend on a reduced loop whose
     * offset does not (0 times its stride): the coordinates say where
     * the value is computed */
    bool varies = on_reduced(L, off);
    for (int32_t d = 0; d < o->type.rank && !varies; d++) varies = on_reduced(L, c[d]);
    if (varies != reduced) continue;
    /* the value and its index before the guard: what they compute is
     * memoized for the code after it */
    fu_kval *val = cast_to(L, eval(L, o, c), o->type.dtype), *at = emit_ix(L, off);
    fu_kval *guard = reduced ? unseen_dims_guard(L, o) : NULL;
    if (reduced && !guard) guard = one_writer(L, off);
    fu_kbuilder saved = open_if(L, guard);
    if (val && at && !fu_kb_store(&L->b, L->tparam[o->id], at, &val, 1)) chk(L, NULL);
    L->b = saved;
  }
}

/* One accumulation at the innermost point, under `cond` (none when NULL):
 * every reduction's operand combined into its state (of kept lane `lane`),
 * and the full-size outputs stored. */
static void accumulate_point(rl *L, fu_kval *cond, rstate *acc, uint32_t lane) {
  fu_kbuilder saved = open_if(L, cond);
  for (uint32_t j = lane * L->ri.n_ops; j < (lane + 1) * L->ri.n_ops && !L->failed; j++) {
    const fu_op *op = op_of(L, j);
    if (fu_online_op(op)) {
      fail(L, op->loc, "an online (max, sum of exp) state outside a persistent kernel");
      break;
    }
    const fu_value *x = op->operands[0];
    fu_kval *v = cast_to(L, eval(L, x, fu_igraph_coords(L->g, x)), acc_dtype(op));
    fu_kval *sh = L->shift[j] && v ? chk(L, fu_kb_read(&L->b, NULL, L->shift[j])) : NULL;
    if (sh) v = chk(L, fu_kb_binary(&L->b, NULL, FU_OP_SUB, v->dtype, v, sh));
    rstate a = {NULL}, n = {NULL};
    for (uint32_t p = 0; p < stored_parts(L, op); p++) a[p] = chk(L, fu_kb_read(&L->b, NULL, acc[j][p]));
    if (fu_welford_op(op) && L->sums) {
      /* s += v, q += v * v (sums_to_welford converts them) */
      fu_kval *sq = v ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_MUL, v->dtype, v, v)) : NULL;
      n[0] = v && a[0] ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_ADD, v->dtype, a[0], v)) : NULL;
      n[1] = sq && a[1] ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_ADD, v->dtype, a[1], sq)) : NULL;
      for (uint32_t p = 0; p < 2; p++)
        if (n[p] && !fu_kb_assign(&L->b, acc[j][p], n[p])) chk(L, NULL);
      continue;
    }
    if (stored_parts(L, op) < parts(op)) a[FU_WELFORD_PARTS - 1] = count_of(L, op, L->lin);
    if (!fu_welford_op(op)) n[0] = combine(L, op, a[0], v);
    else if (v && a[0] && a[1] && a[2] && !fu_welford_update(&L->b, a, v, n, stored_parts(L, op) == parts(op)))
      chk(L, NULL);
    for (uint32_t p = 0; p < stored_parts(L, op); p++)
      if (n[p] && !fu_kb_assign(&L->b, acc[j][p], n[p])) chk(L, NULL);
  }
  store_outputs(L, true);
  L->b = saved;
}

/* The predicates, split by whether they depend on variable `lane`: the
 * conjunction of those that do not (*ind), and of those that do, each
 * taken at the lane where it is tightest (*full): lane `last` for one
 * increasing along the lane, lane 0 for one decreasing (a peeled split's
 * lower bound).  False when a lane-dependent one is not affine (then no
 * single lane in range puts every lane in range). */
static bool lane_guards(rl *L, const fu_ix *lane, int64_t last, fu_kval **ind, fu_kval **full) {
  *ind = *full = NULL;
  bool ok = true;
  for (uint32_t i = 0; i < fu_igraph_num_predicates(L->g) && !L->failed; i++) {
    const fu_ix *idx, *ext;
    fu_igraph_predicate(L->g, i, &idx, &ext);
    bool dep = fu_ix_subst(L->ix, idx, lane, fu_ix_const(L->ix, 0)) != idx;
    if (!dep && L->kept_checked && !on_reduced(L, idx)) continue;
    fu_ix_lane a = dep ? fu_ix_lane_analyze(idx, lane, last + 1) : (fu_ix_lane){.ok = true};
    if (dep && !a.ok) ok = false;
    uint32_t mark = fu_lix_mark(&L->lix);
    if (dep) ixv_set(L, lane, emit_ix(L, fu_ix_const(L->ix, a.ok && a.stride < 0 ? 0 : last)));
    fu_kval *x = emit_ix(L, idx), *e = emit_ix(L, ext);
    fu_kval *p = x && e ? chk(L, fu_kb_binary(&L->b, "in_range", FU_OP_LT, FU_DT_BOOL, x, e)) : NULL;
    fu_lix_pop(&L->lix, mark);
    fu_kval **to = dep ? full : ind;
    *to = *to && p ? chk(L, fu_kb_binary(&L->b, "in_range", FU_OP_LOGICAL_AND, FU_DT_BOOL, *to, p)) : p;
  }
  return ok;
}

/* The innermost vectorize loop (loop `i`, lane variable of constant
 * width V), unrolled:
 *
 *   if (lane-independent guards) {
 *     if (lane V-1 in range) {
 *       vector loads of the inputs that allow them (docs/passes.md)
 *       for lane 0..V-1: accumulate (lanes in order: deterministic)
 *     } else {
 *       for lane 0..V-1: if (lane in range) accumulate
 *     }
 *   }
 *
 * A reduced lane accumulates into the thread's states; a kept one (the
 * thread owns V adjacent outputs) into the states of its own lane. */
static void accumulate_vector(rl *L, uint32_t i, rstate *acc) {
  const fu_ix *lane = fu_igraph_loop_var(L->g, i);
  bool kept = lane == L->klane;
  int64_t V = 0;
  if (!fu_ix_is_const(fu_igraph_axis_extent(L->g, L->s->loops[i].axis), &V) || V < 1 || V > MAX_LANES) {
    fail(L, L->s->loops[i].loc, "a vectorize axis without a constant extent of at most 16");
    return;
  }
  fu_kval *lanes[MAX_LANES], *ind, *full;
  for (int64_t j = 0; j < V; j++) lanes[j] = emit_ix(L, fu_ix_const(L->ix, j));
  bool whole = lane_guards(L, lane, V - 1, &ind, &full);
  if (L->failed) return;
  fu_kbuilder outer = open_if(L, ind);
  fu_kinst *br = whole && full ? fu_kb_if(&L->b, full) : NULL;
  if (whole && full && !br) {
    chk(L, NULL);
    return;
  }
  if (whole) {
    /* every lane in range: one vector load per input that allows it */
    fu_kbuilder level = L->b;
    if (br) L->b = fu_kbuilder_at(L->m, L->k, &br->u.branch.then_body);
    uint32_t n_acc = fu_igraph_num_accesses(L->g);
    fu_kval **vals = fu_mem_calloc(&L->m->alloc, (size_t)n_acc * MAX_LANES + 1, sizeof *vals);
    if (!vals) {
      chk(L, NULL);
      return;
    }
    for (uint32_t a = 0; a < n_acc && !L->failed; a++) {
      const fu_iaccess *x = fu_igraph_access(L->g, a);
      if (x->is_store || x->mode != FU_AM_VECTOR || !L->tparam[x->value->id]) continue;
      uint32_t mark = fu_lix_mark(&L->lix);
      ixv_set(L, lane, lanes[0]);
      fu_kval *at = emit_ix(L, x->offset);
      fu_lix_pop(&L->lix, mark);
      if (at && !fu_kb_load(&L->b, vname(x->value), L->tparam[x->value->id], at, (uint32_t)V, x->value->type.dtype,
                            &vals[(size_t)a * MAX_LANES]))
        chk(L, NULL);
    }
    for (int64_t j = 0; j < V && !L->failed; j++) {
      uint32_t mark = fu_lix_mark(&L->lix);
      ixv_set(L, lane, lanes[j]);
      memo_clear(L);
      for (uint32_t a = 0; a < n_acc; a++)
        if (vals[(size_t)a * MAX_LANES])
          memo_put(L, fu_igraph_access(L->g, a)->value, (const fu_ix *const *)fu_igraph_access(L->g, a)->coords,
                   vals[(size_t)a * MAX_LANES + (size_t)j]);
      accumulate_point(L, NULL, acc, kept ? (uint32_t)j : L->cur_lane);
      fu_lix_pop(&L->lix, mark);
    }
    fu_mem_free(&L->m->alloc, vals, ((size_t)n_acc * MAX_LANES + 1) * sizeof *vals);
    L->b = level;
  }
  if (!whole || br) {
    /* the partial last vector (or lanes that cannot be told apart): lane
     * by lane, each under its guards */
    if (br) L->b = fu_kbuilder_at(L->m, L->k, &br->u.branch.else_body);
    for (int64_t j = 0; j < V && !L->failed; j++) {
      uint32_t mark = fu_lix_mark(&L->lix);
      ixv_set(L, lane, lanes[j]);
      memo_clear(L);
      accumulate_point(L, guards(L, true), acc, kept ? (uint32_t)j : L->cur_lane);
      fu_lix_pop(&L->lix, mark);
    }
  }
  L->b = outer;
}

/* The innermost accumulation (the vectorize loop `vec`, or a point when
 * vec < 0), once per kept row lane: their loads are all in flight before
 * any row's combine. */
static void accumulate_rows(rl *L, int64_t vec, rstate *acc) {
  uint32_t rows = L->klane_rows ? L->n_lanes : 1;
  for (uint32_t k = 0; k < rows && !L->failed; k++) {
    uint32_t mark = fu_lix_mark(&L->lix);
    if (L->klane_rows) {
      ixv_set(L, L->klane, emit_ix(L, fu_ix_const(L->ix, k)));
      bind_peel(L);
    }
    L->cur_lane = k;
    if (vec >= 0) {
      accumulate_vector(L, (uint32_t)vec, acc);
    } else {
      memo_clear(L);
      accumulate_point(L, guards(L, true), acc, k);
    }
    fu_lix_pop(&L->lix, mark);
  }
  L->cur_lane = 0;
}

/* The reduced serial loops from loop `i` inward, then one accumulation. */
static void accumulate(rl *L, uint32_t i, rstate *acc) {
  if (L->failed) return;
  const fu_schedule *s = L->s;
  while (i < s->n_loops && s->loops[i].ptype != FU_PT_SERIAL && s->loops[i].ptype != FU_PT_UNROLL &&
         s->loops[i].ptype != FU_PT_VECTORIZE)
    i++;
  uint32_t mark = fu_lix_mark(&L->lix);
  fu_kbuilder saved = L->b;
  if (i + 1 == s->n_loops && s->loops[i].ptype == FU_PT_VECTORIZE) {
    accumulate_rows(L, i, acc);
  } else if (i < s->n_loops) {
    const fu_sloop *l = &s->loops[i];
    fu_kval *zero = emit_ix(L, fu_ix_const(L->ix, 0)), *one = emit_ix(L, fu_ix_const(L->ix, 1));
    fu_kval *end = emit_ix(L, fu_igraph_axis_extent(L->g, l->axis));
    fu_kinst *lp = zero && one && end ? fu_kb_for(&L->b, s->axes[l->axis].name, zero, end, one,
                                                  l->ptype == FU_PT_SERIAL ? FU_LOOP_SERIAL : FU_LOOP_UNROLL)
                                      : NULL;
    if (!lp) {
      chk(L, NULL);
      return;
    }
    L->b = fu_kbuilder_at(L->m, L->k, &lp->u.loop.body);
    ixv_set(L, fu_igraph_loop_var(L->g, i), lp->results[0]);
    accumulate(L, i + 1, acc);
  } else {
    accumulate_rows(L, -1, acc);
  }
  fu_lix_pop(&L->lix, mark);
  L->b = saved;
}

/* The name of part q of state j's array: `tag<j>`, or `tag<j>_<q>` for a
 * Welford state's m2 and count. */
static void part_name(char *nm, size_t cap, const char *tag, uint32_t j, uint32_t q) {
  if (q) snprintf(nm, cap, "%s%u_%u", tag, j, q);
  else snprintf(nm, cap, "%s%u", tag, j);
}

/* Shared arrays `tag<j>` (Welford parts `tag<j>_<part>`) of n slots per
 * state of v, each state stored at slot `at` (none when at is NULL). */
static void new_slots(rl *L, const char *tag, int64_t n, fu_kval *at, rstate *v, rstate *arr) {
  for (uint32_t j = 0; j < L->n_states && !L->failed; j++)
    for (uint32_t q = 0; q < stored_parts(L, op_of(L, j)) && !L->failed; q++) {
      char nm[48];
      part_name(nm, sizeof nm, tag, j, q);
      arr[j][q] = chk(L, fu_kval_new_array(L->m, L->k, nm, acc_dtype(op_of(L, j)), FU_MEM_SHARED, n));
      if (arr[j][q] && at && !fu_kb_store(&L->b, arr[j][q], at, &v[j][q], 1)) chk(L, NULL);
    }
}

/* Whether any of the segment's reductions is a Welford state. */
static bool any_welford(const rl *L) {
  for (uint32_t j = 0; j < L->n_states; j++)
    if (fu_welford_op(op_of(L, j))) return true;
  return false;
}

/* The parts of state j that load_combine loads: all but a known count. */
static uint32_t loaded_parts(const rl *L, uint32_t j, const fu_kval *count) {
  return count ? parts(op_of(L, j)) - 1 : parts(op_of(L, j));
}

/* Reduction j's state at slot `at` of arrays arr, loaded and combined into
 * v (or copied to v when `first`); the count is `count` when the slots
 * hold none (a known count, the same in every slot). */
static void load_combine(rl *L, uint32_t j, fu_kval *const *arr, fu_kval *at, fu_kval *count, bool first,
                         fu_kval **v) {
  rstate p = {NULL};
  const fu_op *op = op_of(L, j);
  uint32_t n = loaded_parts(L, j, count);
  for (uint32_t q = 0; q < n; q++)
    if (at && !fu_kb_load(&L->b, NULL, arr[q], at, 1, acc_dtype(op), &p[q])) chk(L, NULL);
  if (count) p[n] = count;
  if (first) memcpy(v, p, sizeof p);
  else combine_state(L, op_of(L, j), v, p, v);
}

/* The counts of states v that no slot or workspace holds (a known count,
 * the same in every thread), NULL for the others. */
static void known_counts(rl *L, rstate *v, fu_kval **cnt) {
  for (uint32_t j = 0; j < L->n_states; j++)
    cnt[j] = stored_parts(L, op_of(L, j)) < parts(op_of(L, j)) ? v[j][FU_WELFORD_PARTS - 1] : NULL;
}

/* Step s of the fold (fold_rows): rows ty < s combine row ty + s into
 * their own slot, then a sync.  s is the value sv, or the constant
 * s_const when that is not 0.  c[j] is what a slot of a state with a
 * known count holds at this step (NULL for the others); where wn is
 * given, such a state combines with the weights wn[j] (the count after)
 * and ww[j] (both halves' weight) computed for the step already. */
static void fold_step(rl *L, rstate *arr, fu_kval *at, fu_kval *t, fu_kval *sv, uint32_t s_const, uint32_t nx,
                      fu_kval **c, fu_kval *const *wn, fu_kval *const *ww) {
  fu_kval *low = chk(L, fu_kb_binary(&L->b, NULL, FU_OP_LT, FU_DT_BOOL, t, sv));
  if (!low) return;
  fu_kbuilder saved = open_if(L, low);
  uint32_t mark = fu_lix_mark(&L->lix);
  fu_kval *off = NULL;
  if (s_const) {
    off = emit_ix(L, fu_ix_const(L->ix, (int64_t)s_const * nx));
  } else {
    fu_kval *width = emit_ix(L, fu_ix_const(L->ix, nx));
    off = width ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_MUL, L->idx, sv, width)) : NULL;
  }
  fu_kval *up = off ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_ADD, L->idx, at, off)) : NULL;
  for (uint32_t j = 0; j < L->n_states && up && !L->failed; j++) {
    rstate p = {NULL};
    load_combine(L, j, arr[j], at, c[j], true, p);
    if (wn && wn[j]) {
      rstate o = {NULL};
      load_combine(L, j, arr[j], up, c[j], true, o);
      if (!fu_welford_combine_weighted(&L->b, p, o, wn[j], ww[j], ww[j], p)) chk(L, NULL);
    } else {
      load_combine(L, j, arr[j], up, c[j], false, p);
    }
    for (uint32_t q = 0; q < stored_parts(L, op_of(L, j)) && !L->failed; q++)
      if (!p[q] || !fu_kb_store(&L->b, arr[j][q], at, &p[q], 1)) chk(L, NULL);
  }
  fu_lix_pop(&L->lix, mark);
  L->b = saved;
  if (!L->failed && !fu_kb_sync(&L->b)) chk(L, NULL);
}

/* Mutables carrying, through the rolled fold, each known count cnt[j]
 * (cm[j]: what a slot holds) and the reciprocal of twice it (rn[j]), so
 * that a step's weights are products, not a division: 1 / 2c halves
 * exactly when c doubles, so every step gets the bits the unrolled
 * fold's constant-folded 1 / 2c gives. */
static void fold_count_state(rl *L, fu_kval **cnt, fu_kval **cm, fu_kval **rn) {
  for (uint32_t j = 0; j < L->n_states && !L->failed; j++) {
    cm[j] = rn[j] = NULL;
    if (!cnt[j]) continue;
    fu_dtype t = cnt[j]->dtype;
    fu_kval *zero = chk(L, fu_kb_const_f(&L->b, NULL, t, 0.0)), *one = chk(L, fu_kb_const_f(&L->b, NULL, t, 1.0));
    fu_kval *two = chk(L, fu_kb_binary(&L->b, NULL, FU_OP_ADD, t, cnt[j], cnt[j]));
    fu_kval *empty = two && zero ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_EQ, FU_DT_BOOL, two, zero)) : NULL;
    fu_kval *args[3] = {empty, one, two};
    fu_kval *safe = empty && one ? chk(L, fu_kb_math(&L->b, NULL, FU_OP_WHERE, t, args, 3)) : NULL;
    fu_kval *r = safe ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_DIV, t, one, safe)) : NULL;
    cm[j] = chk(L, fu_kval_new_mutable(L->m, L->k, "fold_count", t));
    rn[j] = chk(L, fu_kval_new_mutable(L->m, L->k, "fold_rn", t));
    if (!cm[j] || !rn[j] || !r || !fu_kb_assign(&L->b, cm[j], cnt[j]) || !fu_kb_assign(&L->b, rn[j], r))
      chk(L, NULL);
  }
}

/* fold_rows's steps as one rolled loop over k = 0 .. steps - 1, with
 * s = (ny / 2) >> k (the value %fold_s); known counts ride it in
 * mutables (fold_count_state), and leave cnt[j] as row 0's count. */
static void fold_rows_rolled(rl *L, rstate *arr, fu_kval *at, fu_kval *t, uint32_t nx, uint32_t ny,
                             uint32_t steps, fu_kval **cnt) {
  fu_kval *zero = emit_ix(L, fu_ix_const(L->ix, 0)), *one = emit_ix(L, fu_ix_const(L->ix, 1));
  fu_kval *n = emit_ix(L, fu_ix_const(L->ix, steps)), *half = emit_ix(L, fu_ix_const(L->ix, ny / 2));
  fu_kval *cm[MAX_STATES], *rn[MAX_STATES];
  fold_count_state(L, cnt, cm, rn);
  fu_kinst *lp = zero && one && n && half ? fu_kb_for(&L->b, "fold", zero, n, one, FU_LOOP_ROLLED) : NULL;
  if (!lp) {
    chk(L, NULL);
    return;
  }
  fu_kbuilder saved = L->b;
  L->b = fu_kbuilder_at(L->m, L->k, &lp->u.loop.body);
  uint32_t mark = fu_lix_mark(&L->lix);
  fu_kval *sv = chk(L, fu_kb_binary(&L->b, "fold_s", FU_OP_BITWISE_RIGHT_SHIFT, L->idx, half, lp->results[0]));
  fu_kval *c[MAX_STATES] = {NULL}, *wn[MAX_STATES] = {NULL}, *ww[MAX_STATES] = {NULL}, *r[MAX_STATES] = {NULL};
  for (uint32_t j = 0; j < L->n_states && !L->failed; j++) {
    if (!cm[j]) continue;
    fu_dtype dt = cnt[j]->dtype;
    c[j] = chk(L, fu_kb_read(&L->b, "fold_c", cm[j]));
    r[j] = chk(L, fu_kb_read(&L->b, NULL, rn[j]));
    wn[j] = c[j] ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_ADD, dt, c[j], c[j])) : NULL;
    ww[j] = c[j] && r[j] ? chk(L, fu_kb_binary(&L->b, "fold_w", FU_OP_MUL, dt, c[j], r[j])) : NULL;
  }
  if (sv && !L->failed) fold_step(L, arr, at, t, sv, 0, nx, c, wn, ww);
  for (uint32_t j = 0; j < L->n_states && !L->failed; j++) {
    if (!cm[j]) continue;
    fu_kval *h = chk(L, fu_kb_const_f(&L->b, NULL, cnt[j]->dtype, 0.5));
    fu_kval *next = h ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_MUL, cnt[j]->dtype, r[j], h)) : NULL;
    if (!next || !fu_kb_assign(&L->b, cm[j], wn[j]) || !fu_kb_assign(&L->b, rn[j], next)) chk(L, NULL);
  }
  fu_lix_pop(&L->lix, mark);
  L->b = saved;
  for (uint32_t j = 0; j < L->n_states && !L->failed; j++)
    if (cm[j]) cnt[j] = chk(L, fu_kb_read(&L->b, NULL, cm[j]));
}

/* From this many steps (32 rows) on the steps are one rolled loop
 * (fold_rows_rolled): each waits on its sync anyway, and their copies
 * cost compile time (every step combines every state, and LLVM's code
 * generation takes about 15 us a PTX instruction): layer-norm backward's
 * column sums 106 M -> 69 M instructions, 0.1 us of a 6.7 us kernel on
 * the H100.  Rolled at 16 rows, a batch norm's statistics ran 1-4%
 * slower. */
#define FOLD_ROLLED_STEPS 5

/* Rows [0, ny) of the slot arrays arr (slot [ty][tx] at `at`) folded
 * into row 0 by halving: rows ty < s combine row ty + s into their own
 * slot, for s = ny / 2, ..., 1, a sync after each step.  log2(ny) steps
 * where the serial walk takes ny loads and combines a thread, one after
 * another: a tall reduction with few columns has up to 512 rows a block.
 * A state whose count is known (cnt[j], the same in every thread) holds
 * cnt[j] x ny / 2s in each slot combined at step s, and is returned in
 * cnt[j] as row 0's count, cnt[j] x ny.
 * The order is fixed by ny alone, so results stay deterministic. */
static void fold_rows(rl *L, rstate *arr, fu_kval *at, const fu_ix *ty, uint32_t nx, uint32_t ny, fu_kval **cnt) {
  fu_kval *t = emit_ix(L, ty);
  uint32_t steps = 0;
  while ((1u << steps) < ny) steps++;
  if (!t || !at || L->failed) return;
  if (steps >= FOLD_ROLLED_STEPS || (L->roll_folds && steps >= 1)) {
    fold_rows_rolled(L, arr, at, t, nx, ny, steps, cnt);
    return;
  }
  for (uint32_t s = ny / 2; s >= 1 && !L->failed; s /= 2) {
    fu_kval *sv = emit_ix(L, fu_ix_const(L->ix, s));
    if (!sv) return;
    fold_step(L, arr, at, t, sv, s, nx, cnt, NULL, NULL);
    for (uint32_t j = 0; j < L->n_states && !L->failed; j++)
      if (cnt[j]) {
        fu_kval *two = chk(L, fu_kb_const_f(&L->b, NULL, cnt[j]->dtype, 2.0));
        cnt[j] = two ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_MUL, cnt[j]->dtype, cnt[j], two)) : NULL;
      }
  }
}

/* The combine across threadIdx.y (the reduced thread axis `ty` of an
 * outer reduction, threadIdx.x keeping columns): every thread stores its
 * value to slot [ty][tx] of shared memory, sync, and every thread combines
 * its column's slots in threadIdx.y order; where fu_reduction_rows_fold
 * says so the rows fold in a tree first (fold_rows) and every thread
 * reads row 0. */
static void combine_rows(rl *L, rstate *v, const fu_ix *ty, bool in_loop, const char *tag) {
  uint32_t nx = L->k->block[0], ny = L->k->block[1];
  const fu_ix *kx = L->kx ? L->kx : fu_ix_const(L->ix, 0);
  fu_kval *at = emit_ix(L, fu_ix_add(L->ix, fu_ix_mul(L->ix, ty, fu_ix_const(L->ix, nx)), kx));
  rstate arr[MAX_STATES];
  fu_kval *cnt[MAX_STATES];
  known_counts(L, v, cnt);
  new_slots(L, tag, (int64_t)(nx * ny), at, v, arr);
  if (!L->failed && !fu_kb_sync(&L->b)) chk(L, NULL);
  bool tree = fu_reduction_rows_fold(ny, any_welford(L));
  if (tree) fold_rows(L, arr, at, ty, nx, ny, cnt);
  for (uint32_t j = 0; j < L->n_states && !L->failed; j++)
    for (uint32_t w = 0; w < (tree ? 1 : ny) && !L->failed; w++)
      load_combine(L, j, arr[j], emit_ix(L, fu_ix_add(L->ix, fu_ix_const(L->ix, (int64_t)w * nx), kx)), cnt[j],
                   w == 0, v[j]);
  if (in_loop && !fu_kb_sync(&L->b)) chk(L, NULL);
}

/* The combine across threadIdx.x of the values v (one per reduction),
 * in place: the butterfly (reduce=warp|block|grid), then for block and
 * grid lane 0 of each warp stores to a shared slot, sync, and every thread
 * combines its row's slots in slot order.  `tag` names the slot arrays. */
/* Whether state j is a Welford state whose count is carried (moved by
 * shuffles, slots and workspaces rather than computed). */
static bool carried_count(rl *L, uint32_t j) {
  const fu_op *op = op_of(L, j);
  return fu_welford_op(op) && stored_parts(L, op) == parts(op);
}

/* The weights of every step of a butterfly (masks top, top / 2, .., 1)
 * of a carried Welford count n, step k's in n[k], wa[k], wc[k]: the
 * counts are data-free, so all their shuffles and reciprocals are emitted
 * before the means move, and the data's chain of shuffle, subtract and
 * multiply-add per step waits on no reciprocal. */
typedef struct wsteps {
  fu_kval *n[6], *wa[6], *wc[6];
} wsteps;

static void count_butterfly(rl *L, fu_kval *n, uint32_t top, wsteps *w) {
  uint32_t k = 0;
  for (uint32_t mask = top; mask >= 1 && n && !L->failed; mask /= 2, k++) {
    fu_kval *nb = chk(L, fu_kb_shfl_xor(&L->b, NULL, n, mask));
    if (nb && !fu_welford_weights(&L->b, n, nb, true, &w->n[k], &w->wa[k], &w->wc[k])) chk(L, NULL);
    n = w->n[k];
  }
}

/* One butterfly step of a Welford state v with a carried count, in place:
 * its mean and m2 from the lane `mask` away, combined with step k's
 * weights (count_butterfly moved the count already). */
static void weighted_step(rl *L, fu_kval **v, uint32_t mask, const wsteps *w, uint32_t k) {
  rstate o = {NULL};
  for (uint32_t q = 0; q + 1 < FU_WELFORD_PARTS; q++)
    o[q] = v[q] ? chk(L, fu_kb_shfl_xor(&L->b, NULL, v[q], mask)) : NULL;
  if (!fu_welford_combine_weighted(&L->b, v, o, w->n[k], w->wa[k], w->wc[k], v)) chk(L, NULL);
}

/* The butterfly over masks top .. 1 of every state of v, in place: each
 * step shuffles the parts not known (a known count is the same in the
 * partner lane) and combines; carried Welford counts go first, all their
 * steps (count_butterfly). */
static void butterfly(rl *L, rstate *v, uint32_t top) {
  wsteps w[MAX_STATES];
  for (uint32_t j = 0; j < L->n_states && !L->failed; j++)
    if (carried_count(L, j)) count_butterfly(L, v[j][FU_WELFORD_PARTS - 1], top, &w[j]);
  uint32_t k = 0;
  for (uint32_t mask = top; mask >= 1 && !L->failed; mask /= 2, k++)
    for (uint32_t j = 0; j < L->n_states; j++) {
      const fu_op *op = op_of(L, j);
      if (carried_count(L, j)) {
        weighted_step(L, v[j], mask, &w[j], k);
        continue;
      }
      rstate o = {NULL};
      for (uint32_t p = 0; p < parts(op); p++)
        o[p] = !v[j][p] || p >= stored_parts(L, op) ? v[j][p] : chk(L, fu_kb_shfl_xor(&L->b, NULL, v[j][p], mask));
      combine_state(L, op, v[j], o, v[j]);
    }
}

/* The second stage of a block combine of state j, for a power-of-two
 * number of warps (2..32): lane l of every warp reads warp (l mod warps)'s
 * slot, so each group of `warps` adjacent lanes holds every warp's partial,
 * then a butterfly over masks warps/2 .. 1 gives every lane the
 * combination of all of them.  log2(warps) shuffle steps (3 for 8 warps)
 * instead of `warps` combines one after another: a combine with a carried
 * count sits on the dependent chain, and 16 of them in a row were most of
 * a small grid reduction's time (seed002); nor five steps over a whole
 * warp, most of whose lanes would hold nothing. */
static void combine_warp_slots(rl *L, uint32_t j, fu_kval **v, fu_kval *const *arr, fu_kval *row, fu_kval *lane,
                               uint32_t warps) {
  const fu_op *op = op_of(L, j);
  fu_kval *mod = chk(L, fu_kb_const_i(&L->b, NULL, L->idx, (int64_t)warps));
  fu_kval *w = lane && mod ? chk(L, fu_kb_binary(&L->b, "slot", FU_OP_FMOD, L->idx, lane, mod)) : NULL;
  fu_kval *at = w && row ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_ADD, L->idx, row, w)) : NULL;
  if (carried_count(L, j)) {
    /* the count's slot and steps first, then mean and m2 (butterfly) */
    fu_kval *n = NULL;
    if (at && !fu_kb_load(&L->b, NULL, arr[FU_WELFORD_PARTS - 1], at, 1, acc_dtype(op), &n)) chk(L, NULL);
    wsteps ws;
    count_butterfly(L, n, warps / 2, &ws);
    for (uint32_t q = 0; q + 1 < FU_WELFORD_PARTS; q++)
      if (at && !fu_kb_load(&L->b, NULL, arr[q], at, 1, acc_dtype(op), &v[q])) chk(L, NULL);
    v[FU_WELFORD_PARTS - 1] = n;
    uint32_t k = 0;
    for (uint32_t mask = warps / 2; mask >= 1 && !L->failed; mask /= 2, k++) weighted_step(L, v, mask, &ws, k);
    return;
  }
  load_combine(L, j, arr, at, NULL, true, v);
  for (uint32_t mask = warps / 2; mask >= 1 && !L->failed; mask /= 2) {
    rstate o = {NULL};
    for (uint32_t p = 0; p < parts(op); p++) o[p] = v[p] ? chk(L, fu_kb_shfl_xor(&L->b, NULL, v[p], mask)) : NULL;
    combine_state(L, op, v, o, v);
  }
}

/* The block's row of the current thread: the threadIdx.y loop's variable,
 * or 0 without one (the slot arrays of the block and cluster combines
 * have a row of slots per threadIdx.y). */
static const fu_ix *block_row(rl *L) {
  for (uint32_t i = 0; i < L->s->n_loops; i++)
    if (L->s->loops[i].ptype == FU_PT_THREAD_Y) return fu_igraph_loop_var(L->g, i);
  return fu_ix_const(L->ix, 0);
}

static void combine_threads(rl *L, rstate *v, const fu_ix *tx, bool in_loop, const char *tag) {
  if (L->ty_red) {
    combine_rows(L, v, tx, in_loop, tag);
    return;
  }
  /* reduce=warp: the row's threads are a power of two (2..32) of one
   * warp, so masks below that count stay within the row */
  uint32_t top = L->s->reduce == FU_RM_WARP && L->k->block[0] < 32 ? L->k->block[0] / 2 : 16;
  butterfly(L, v, top);
  if ((L->s->reduce == FU_RM_BLOCK || L->s->reduce == FU_RM_GRID) && !L->failed) {
    uint32_t warps = L->k->block[0] / 32, rows = L->k->block[1];
    const fu_ix *row = fu_ix_mul(L->ix, block_row(L), fu_ix_const(L->ix, warps));
    const fu_ix *slot = fu_ix_add(L->ix, row, fu_ix_div(L->ix, tx, fu_ix_const(L->ix, 32)));
    fu_kval *lane = emit_ix(L, fu_ix_mod(L->ix, tx, fu_ix_const(L->ix, 32)));
    fu_kval *zero = emit_ix(L, fu_ix_const(L->ix, 0)), *at = emit_ix(L, slot);
    fu_kval *first = lane && zero ? chk(L, fu_kb_binary(&L->b, "lane0", FU_OP_EQ, FU_DT_BOOL, lane, zero)) : NULL;
    rstate arr[MAX_STATES];
    fu_kval *cnt[MAX_STATES];
    known_counts(L, v, cnt);
    fu_kbuilder saved = open_if(L, first);
    new_slots(L, tag, (int64_t)(warps * rows), at, v, arr);
    L->b = saved;
    if (!fu_kb_sync(&L->b)) chk(L, NULL);
    bool tree = warps > 1 && (warps & (warps - 1)) == 0;
    for (uint32_t j = 0; j < L->n_states && !L->failed; j++)
      if (tree && !cnt[j])
        combine_warp_slots(L, j, v[j], arr[j], emit_ix(L, row), lane, warps);
      else /* a known count: the serial combines' divisions fold to constants
            * (a butterfly of them took 1.7 us more of a batch norm's
            * statistics in 98 blocks a row, 3%) */
        for (uint32_t w = 0; w < warps && !L->failed; w++)
          load_combine(L, j, arr[j], emit_ix(L, fu_ix_add(L->ix, row, fu_ix_const(L->ix, w))), cnt[j], w == 0, v[j]);
    /* the next iteration of a kept loop overwrites the slots */
    if (in_loop && !fu_kb_sync(&L->b)) chk(L, NULL);
  }
}

/* The row's states v, already combined in each block (combine_threads),
 * combined across the C blocks of the cluster that split the row
 * (cluster.x): thread 0 of each of the block's rows stores its states in
 * shared slots, a cluster barrier makes them visible to the other blocks,
 * and every thread reads the C blocks' slots in rank order and combines
 * them.  Every block combines the same values in the same order, so all
 * get the same bits. */
static void combine_cluster(rl *L, rstate *v, const fu_ix *tx, uint32_t C, const char *tag) {
  fu_kval *cnt[MAX_STATES];
  known_counts(L, v, cnt);
  for (uint32_t j = 0; j < L->n_states; j++)
    if (cnt[j]) {
      fail(L, L->s->loc, "a Welford state of a known count combined across a cluster's blocks");
      return;
    }
  fu_kval *t = emit_ix(L, tx), *zero = emit_ix(L, fu_ix_const(L->ix, 0));
  fu_kval *slot = emit_ix(L, block_row(L));
  fu_kval *first = t && zero ? chk(L, fu_kb_binary(&L->b, "row_leader", FU_OP_EQ, FU_DT_BOOL, t, zero)) : NULL;
  char ctag[48];
  snprintf(ctag, sizeof ctag, "%scl", tag);
  rstate arr[MAX_STATES];
  fu_kbuilder saved = open_if(L, first);
  new_slots(L, ctag, L->k->block[1], slot, v, arr);
  L->b = saved;
  if (!L->failed && !fu_kb_sync_cluster(&L->b)) chk(L, NULL);
  for (uint32_t j = 0; j < L->n_states && !L->failed; j++) {
    const fu_op *op = op_of(L, j);
    for (uint32_t r = 0; r < C && !L->failed; r++) {
      fu_kval *rank = chk(L, fu_kb_const_i(&L->b, NULL, FU_DT_I32, (int64_t)r));
      rstate p = {NULL};
      for (uint32_t q = 0; q < parts(op) && rank && slot; q++)
        p[q] = chk(L, fu_kb_load_cta(&L->b, NULL, arr[j][q], slot, rank));
      if (r == 0) memcpy(v[j], p, sizeof p);
      else combine_state(L, op, v[j], p, v[j]);
    }
  }
}

/* Index of partial g of a group in the grid workspaces: g * ystride +
 * base (ystride NULL: 1). */
static fu_kval *partial_at(rl *L, fu_kval *g, fu_kval *ystride, fu_kval *base) {
  fu_kval *y = g && ystride ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_MUL, L->idx, g, ystride)) : g;
  return y && base ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_ADD, L->idx, base, y)) : NULL;
}

/* Partial g of every state loaded into p[j] (a known count added). */
static void load_partials(rl *L, rstate *part, fu_kval **cnt, fu_kval *g, fu_kval *ystride, fu_kval *base,
                          rstate *p) {
  fu_kval *at = partial_at(L, g, ystride, base);
  for (uint32_t j = 0; j < L->n_states && at && !L->failed; j++) load_combine(L, j, part[j], at, cnt[j], true, p[j]);
}

/* An equal-count Welford walk of a state in a grid's last block
 * (gwalk_*): mutables for the running mean of the partials' means, the
 * sum of d (x - mean before) times (x - mean after) over them, the sum of
 * their m2 and the plain sum of their means; `on` marks the states that
 * take it. */
typedef struct gwalk {
  bool on;
  fu_kval *mean, *dev, *m2, *sum;
} gwalk;

/* x op y in x's dtype, and where(c, x, y): NULL (and L failed) when an
 * operand is missing or the builder fails. */
static fu_kval *fbin(rl *L, fu_op_kind op, fu_kval *x, fu_kval *y) {
  return x && y ? chk(L, fu_kb_binary(&L->b, NULL, op, x->dtype, x, y)) : NULL;
}

static fu_kval *fwhere(rl *L, fu_kval *c, fu_kval *x, fu_kval *y) {
  fu_kval *args[3] = {c, x, y};
  return c && x && y ? chk(L, fu_kb_math(&L->b, NULL, FU_OP_WHERE, x->dtype, args, 3)) : NULL;
}

/* The Welford states whose partials all hold the same known count
 * (cnt[j]) are walked as equal-weight Welford updates of their means
 * (weight 1 / k for the thread's k-th partial, one reciprocal a partial
 * for every lane and state) instead of one general combine a partial: the
 * combine's count update, reciprocal and infinity test, about 30
 * instructions a lane, were what made the last block of an NHWC batch
 * norm's statistics (392 partials of 64 columns, 256 threads) take 9 of
 * its 17.7 us on an H100.  Shifted sums (a partial's mean as the shift,
 * no chain from one partial to the next) were 0.5-1.2 us faster but lost
 * a digit on the mean where partial means lie far apart.  *k is the shared count of partials walked (NULL when no state
 * takes the walk). */
static void gwalk_begin(rl *L, fu_kval **cnt, gwalk *w, fu_kval **k) {
  memset(w, 0, sizeof(gwalk) * MAX_STATES);
  *k = NULL;
  fu_dtype kt = FU_DT_NONE; /* the count's: f64 if any state is */
  for (uint32_t j = 0; j < L->n_states && !L->failed; j++) {
    if (!cnt[j] || !fu_welford_op(op_of(L, j))) continue;
    w[j].on = true;
    fu_dtype dt = acc_dtype(op_of(L, j));
    if (kt == FU_DT_NONE || dt == FU_DT_F64) kt = dt;
    fu_kval *z = chk(L, fu_kb_const_f(&L->b, NULL, dt, 0.0));
    fu_kval **m[4] = {&w[j].mean, &w[j].dev, &w[j].m2, &w[j].sum};
    for (uint32_t q = 0; q < 4 && z && !L->failed; q++) {
      *m[q] = chk(L, fu_kval_new_mutable(L->m, L->k, NULL, dt));
      if (*m[q] && !fu_kb_assign(&L->b, *m[q], z)) chk(L, NULL);
    }
  }
  if (kt == FU_DT_NONE || L->failed) return;
  fu_kval *z = chk(L, fu_kb_const_f(&L->b, NULL, kt, 0.0));
  *k = chk(L, fu_kval_new_mutable(L->m, L->k, "gwalk_k", kt));
  if (!z || !*k || !fu_kb_assign(&L->b, *k, z)) chk(L, NULL);
}

/* One partial p[j] (mean, m2) into state j's walk with weight r = 1 / k. */
static void gwalk_add(rl *L, const gwalk *g, fu_kval *const *p, fu_kval *r) {
  r = cast_to(L, r, p[0] ? p[0]->dtype : FU_DT_F32);
  fu_kval *mean = chk(L, fu_kb_read(&L->b, NULL, g->mean));
  fu_kval *d = fbin(L, FU_OP_SUB, p[0], mean);
  fu_kval *next = fbin(L, FU_OP_ADD, mean, fbin(L, FU_OP_MUL, d, r));
  fu_kval *dev = fbin(L, FU_OP_ADD, chk(L, fu_kb_read(&L->b, NULL, g->dev)), fbin(L, FU_OP_MUL, d, fbin(L, FU_OP_SUB, p[0], next)));
  fu_kval *m2 = fbin(L, FU_OP_ADD, chk(L, fu_kb_read(&L->b, NULL, g->m2)), p[1]);
  fu_kval *sum = fbin(L, FU_OP_ADD, chk(L, fu_kb_read(&L->b, NULL, g->sum)), p[0]);
  if (!next || !dev || !m2 || !sum || !fu_kb_assign(&L->b, g->mean, next) || !fu_kb_assign(&L->b, g->dev, dev) ||
      !fu_kb_assign(&L->b, g->m2, m2) || !fu_kb_assign(&L->b, g->sum, sum))
    chk(L, NULL);
}

/* The thread's k partials of count c as one Welford state in acc: count
 * k c, the walked mean (the plain mean of the means where that is not
 * finite: an infinite partial, as the general combine gives), m2 = sum m2
 * + c dev.  With no partial every part stays 0, the identity. */
static void gwalk_end(rl *L, const gwalk *g, fu_kval *k, fu_kval *c, fu_kval **acc) {
  fu_dtype dt = g->mean->dtype;
  fu_kval *n = cast_to(L, chk(L, fu_kb_read(&L->b, NULL, k)), dt);
  fu_kval *o = chk(L, fu_kb_const_f(&L->b, NULL, dt, 1.0)), *z = chk(L, fu_kb_const_f(&L->b, NULL, dt, 0.0));
  fu_kval *none = n && z ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_EQ, FU_DT_BOOL, n, z)) : NULL;
  fu_kval *safe = fwhere(L, none, o, n);
  fu_kval *r = safe ? chk(L, fu_kb_unary(&L->b, NULL, FU_OP_RECIPROCAL, dt, safe)) : NULL;
  fu_kval *mean = chk(L, fu_kb_read(&L->b, NULL, g->mean));
  fu_kval *fin = mean ? chk(L, fu_kb_math(&L->b, NULL, FU_OP_ISFINITE, FU_DT_BOOL, &mean, 1)) : NULL;
  mean = fwhere(L, fin, mean, fbin(L, FU_OP_MUL, chk(L, fu_kb_read(&L->b, NULL, g->sum)), r));
  fu_kval *m2 = fbin(L, FU_OP_ADD, chk(L, fu_kb_read(&L->b, NULL, g->m2)),
                     fbin(L, FU_OP_MUL, c, chk(L, fu_kb_read(&L->b, NULL, g->dev))));
  fu_kval *v[FU_WELFORD_PARTS] = {mean, m2, fbin(L, FU_OP_MUL, n, c)};
  for (uint32_t q = 0; q < FU_WELFORD_PARTS && !L->failed; q++)
    if (!v[q] || !fu_kb_assign(&L->b, acc[q], v[q])) chk(L, NULL);
}

/* The weight of the next partial of the walk: k += 1, then 1 / k (NULL
 * without a walk). */
static fu_kval *gwalk_step(rl *L, fu_kval *k) {
  if (!k) return NULL;
  fu_kval *o = chk(L, fu_kb_const_f(&L->b, NULL, k->dtype, 1.0));
  fu_kval *n = fbin(L, FU_OP_ADD, chk(L, fu_kb_read(&L->b, NULL, k)), o);
  if (!n || !fu_kb_assign(&L->b, k, n)) return chk(L, NULL);
  return chk(L, fu_kb_unary(&L->b, NULL, FU_OP_RECIPROCAL, k->dtype, n));
}

/* acc[j] = acc[j] combined with p[j] for every state but those of the
 * walk (w[j].on), which take p[j] with weight r. */
static void fold_or_walk(rl *L, rstate *acc, rstate *p, const gwalk *w, fu_kval *r) {
  for (uint32_t j = 0; j < L->n_states && !L->failed; j++) {
    if (w[j].on) {
      gwalk_add(L, &w[j], p[j], r);
      continue;
    }
    const fu_op *op = op_of(L, j);
    rstate a = {NULL};
    for (uint32_t q = 0; q < parts(op); q++) a[q] = chk(L, fu_kb_read(&L->b, NULL, acc[j][q]));
    combine_state(L, op, a, p[j], p[j]);
    for (uint32_t q = 0; q < parts(op) && !L->failed; q++)
      if (p[j][q] && !fu_kb_assign(&L->b, acc[j][q], p[j][q])) chk(L, NULL);
  }
}

/* The partials a step of the last block's walk loads (combine_partials):
 * GRID_UNROLL, halved while a step would load more than GRID_STEP_LOADS
 * words.  On the H100 (docs/performance.md, "The grid reduction's last
 * block"): an NHWC batch norm's statistics, four lanes of two words a
 * partial, ran 1.3-2.8% faster at 2 (16 loads) than at 4 (32), and 7-8%
 * slower at 8 or 16; a tall sum over 64 columns (four words a partial)
 * 0.9% slower at 2 than at 4. */
static uint32_t grid_unroll(rl *L, fu_kval *const *cnt) {
  uint32_t words = 0;
  for (uint32_t j = 0; j < L->n_states; j++) words += loaded_parts(L, j, cnt[j]);
  uint32_t u = GRID_UNROLL;
  while (u > 1 && u * words > GRID_STEP_LOADS) u /= 2;
  return u;
}

/* The last block's walk over the partials: thread t folds partials t, t +
 * nr, t + 2 nr, ... (below gridDim.y) into acc, in that order.  The first
 * c - c % U of its c partials go U a step (U = grid_unroll), all of a
 * step's loads issued before its combines; the rest one a step.  A plain
 * loop waits one L2 round trip per partial: 512 blocks' partials over 32
 * threads were 16 round trips in a row.  The order, and so the result, is
 * the same either way.  Returns the builder after the loops. */
static fu_kbuilder combine_partials(rl *L, rstate *part, fu_kval **cnt, rstate *acc, fu_kval *t, fu_kval *gdy,
                                    uint32_t nr, fu_kval *ystride, fu_kval *base) {
  fu_kbuilder here = L->b;
  fu_kval *zero = emit_ix(L, fu_ix_const(L->ix, 0)), *one = emit_ix(L, fu_ix_const(L->ix, 1));
  fu_kval *nrv = emit_ix(L, fu_ix_const(L->ix, nr)), *nr1 = emit_ix(L, fu_ix_const(L->ix, (int64_t)nr - 1));
  uint32_t unroll = grid_unroll(L, cnt);
  fu_kval *uv = emit_ix(L, fu_ix_const(L->ix, unroll));
  fu_kval *stepv = emit_ix(L, fu_ix_const(L->ix, (int64_t)nr * unroll));
  if (L->failed || !zero || !one || !nrv || !nr1 || !uv || !stepv) {
    chk(L, NULL);
    return here;
  }
  /* c = (gdy + nr - 1 - t) / nr partials (t < nr), c / U steps of U */
  fu_kval *c = chk(L, fu_kb_binary(&L->b, NULL, FU_OP_ADD, L->idx, gdy, nr1));
  c = c ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_SUB, L->idx, c, t)) : NULL;
  c = c ? chk(L, fu_kb_binary(&L->b, "mine", FU_OP_DIV, L->idx, c, nrv)) : NULL;
  fu_kval *steps = c ? chk(L, fu_kb_binary(&L->b, "steps", FU_OP_DIV, L->idx, c, uv)) : NULL;
  gwalk w[MAX_STATES];
  fu_kval *wk = NULL;
  gwalk_begin(L, cnt, w, &wk);
  fu_kinst *lp = steps && !L->failed ? fu_kb_for(&L->b, "gu", zero, steps, one, FU_LOOP_SERIAL) : NULL;
  if (!lp) {
    chk(L, NULL);
    return here;
  }
  here = L->b;
  L->b = fu_kbuilder_at(L->m, L->k, &lp->u.loop.body);
  uint32_t mark = fu_lix_mark(&L->lix); /* index values made in the body stay there */
  fu_kval *g0 = chk(L, fu_kb_binary(&L->b, NULL, FU_OP_MUL, L->idx, lp->results[0], stepv));
  g0 = g0 ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_ADD, L->idx, g0, t)) : NULL;
  rstate p[GRID_UNROLL][MAX_STATES];
  for (uint32_t u = 0; u < unroll && g0 && !L->failed; u++) {
    fu_kval *du = u ? emit_ix(L, fu_ix_const(L->ix, (int64_t)u * nr)) : NULL;
    fu_kval *g = u ? (du ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_ADD, L->idx, g0, du)) : NULL) : g0;
    load_partials(L, part, cnt, g, ystride, base, p[u]);
  }
  for (uint32_t u = 0; u < unroll && !L->failed; u++) fold_or_walk(L, acc, p[u], w, gwalk_step(L, wk));
  fu_lix_pop(&L->lix, mark);
  L->b = here;
  /* the rest, from t + steps * U * nr */
  fu_kval *rest = chk(L, fu_kb_binary(&L->b, NULL, FU_OP_MUL, L->idx, steps, stepv));
  rest = rest ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_ADD, L->idx, rest, t)) : NULL;
  lp = rest ? fu_kb_for(&L->b, "g", rest, gdy, nrv, FU_LOOP_SERIAL) : NULL;
  if (!lp) {
    chk(L, NULL);
    return here;
  }
  here = L->b;
  L->b = fu_kbuilder_at(L->m, L->k, &lp->u.loop.body);
  rstate q[MAX_STATES];
  mark = fu_lix_mark(&L->lix);
  load_partials(L, part, cnt, lp->results[0], ystride, base, q);
  fold_or_walk(L, acc, q, w, gwalk_step(L, wk));
  fu_lix_pop(&L->lix, mark);
  L->b = here;
  for (uint32_t j = 0; j < L->n_states && !L->failed; j++)
    if (w[j].on) gwalk_end(L, &w[j], wk, cnt[j], acc[j]);
  return L->b;
}

/* One workspace of `size` elements per stored part of every state, named
 * <prefix><j> and <prefix><j>_<q> (a Welford state's mean, m2 and count:
 * partials<j>, partials<j>_1, partials<j>_2). */
static void partial_workspaces(rl *L, const char *prefix, fu_lexpr *size, rstate *part) {
  for (uint32_t j = 0; j < L->n_states && !L->failed; j++)
    for (uint32_t q = 0; q < stored_parts(L, op_of(L, j)) && !L->failed; q++) {
      char nm[48];
      part_name(nm, sizeof nm, prefix, j, q);
      part[j][q] = chk(L, fu_kernel_workspace_param(L->m, L->k, nm, acc_dtype(op_of(L, j)), size, false));
    }
}

/* Thread 0 stores the block's states v as partial `at` of the
 * workspaces part, then a gpu fence; every thread syncs after. */
static void store_partial(rl *L, rstate *part, fu_kval *at, rstate *v, fu_kval *t0) {
  if (!at) {
    chk(L, NULL);
    return;
  }
  fu_kbuilder saved = open_if(L, t0);
  for (uint32_t j = 0; j < L->n_states && !L->failed; j++)
    for (uint32_t q = 0; q < stored_parts(L, op_of(L, j)) && !L->failed; q++)
      if (!fu_kb_store(&L->b, part[j][q], at, &v[j][q], 1)) chk(L, NULL);
  if (!fu_kb_fence(&L->b, FU_FENCE_GPU)) chk(L, NULL);
  L->b = saved;
  if (!fu_kb_sync(&L->b)) chk(L, NULL);
}

/* The block's arrival at semaphore sem[at] of `total` blocks: the first
 * thread adds 1 and tells the block, through the shared flag (its element
 * `zero`, the index 0), whether it was the last; every thread gets that (a
 * bool), after a sync. */
static fu_kval *arrive(rl *L, fu_kval *sem, fu_kval *at, fu_kval *total, fu_kval *flag, fu_kval *first,
                       fu_kval *zero) {
  fu_kval *one = chk(L, fu_kb_const_i(&L->b, NULL, FU_DT_I32, 1));
  fu_kbuilder saved = open_if(L, first);
  fu_kval *old = one ? chk(L, fu_kb_atom_add(&L->b, "arrived", sem, at, one)) : NULL;
  fu_kval *lastm1 = one ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_SUB, FU_DT_I32, cast_to(L, total, FU_DT_I32), one)) : NULL;
  fu_kval *is_last = old && lastm1 ? chk(L, fu_kb_binary(&L->b, "is_last", FU_OP_EQ, FU_DT_BOOL, old, lastm1)) : NULL;
  fu_kval *f = cast_to(L, is_last, FU_DT_I32);
  if (f && !fu_kb_store(&L->b, flag, zero, &f, 1)) chk(L, NULL);
  L->b = saved;
  if (!fu_kb_sync(&L->b)) chk(L, NULL);
  fu_kval *fl = NULL;
  if (!L->failed && !fu_kb_load(&L->b, NULL, flag, zero, 1, FU_DT_I32, &fl)) chk(L, NULL);
  fu_kval *zi = chk(L, fu_kb_const_i(&L->b, NULL, FU_DT_I32, 0));
  return fl && zi ? chk(L, fu_kb_binary(&L->b, "last", FU_OP_NE, FU_DT_BOOL, fl, zi)) : NULL;
}

/* Opens `if (cond)` and leaves the builder in its body. */
static bool enter_if(rl *L, fu_kval *cond) {
  fu_kinst *br = fu_kb_if(&L->b, cond);
  if (!br) return chk(L, NULL) != NULL;
  L->b = fu_kbuilder_at(L->m, L->k, &br->u.branch.then_body);
  return true;
}

/* The first thread zeroes sem[at] for the next launch. */
static void reset_sem(rl *L, fu_kval *sem, fu_kval *at, fu_kval *first) {
  fu_kbuilder saved = open_if(L, first);
  fu_kval *zs = chk(L, fu_kb_const_i(&L->b, NULL, FU_DT_I32, 0));
  if (zs && !fu_kb_store(&L->b, sem, at, &zs, 1)) chk(L, NULL);
  L->b = saved;
}

/* A last block's walk of n partials at partial_at(g, ystride, base) into
 * v: a gpu fence, each thread's partials in order (combine_partials),
 * then the block combine, whose shared slots `tag` names.  The threads
 * may hold different numbers of partials, so their counts are carried,
 * unless `equal` (every thread walks as many partials of a known count):
 * then the fold weighs by counts it knows, with exact divisions, not the
 * approximate reciprocals of carried counts.  (The means of var_mean over
 * NHWC batch norms' 802816 rows of randn, near zero, came 2.7e-5 to 4.5e-5
 * from PyTorch's, relatively, with two levels of carried folds; 1.1e-5
 * with one.) */
static void walk_level(rl *L, rstate *part, fu_kval **cnt, rstate *v, fu_kval *t, const fu_ix *tx, fu_kval *n,
                       uint32_t nr, fu_kval *ystride, fu_kval *base, const char *acc_tag, const char *tag,
                       bool roll_folds, bool equal) {
  if (!fu_kb_fence(&L->b, FU_FENCE_GPU)) chk(L, NULL);
  bool known = L->known_count;
  L->known_count = false;
  L->roll_folds = roll_folds;
  rstate acc[MAX_STATES];
  new_accumulators(L, acc_tag, acc);
  fu_kbuilder here = combine_partials(L, part, cnt, acc, t, n, nr, ystride, base);
  if (!L->failed) {
    L->b = here;
    read_states(L, acc, v);
    L->known_count = known && equal;
    combine_threads(L, v, tx, false, tag);
  }
  L->known_count = known;
  L->roll_folds = false;
}

/* The group size of a two-level grid combine, or 0 for one level (always
 * without --enable=grid_tree: on the H100 the means of the NHWC batch
 * norms below came 2.7e-5 to 4.5e-5 from PyTorch's, relatively, with the
 * folds' counts carried; 1.1e-5 with one level).  The last block's walk
 * is one thread's partials after another: with 512 blocks of 16 rows (an
 * NHWC batch norm's statistics) 32 a thread, an L2 round trip per
 * grid_unroll of them.  Two levels take a group of G
 * blocks (G dividing the row's constant block count, from one walk step
 * of the block's nr threads up) whose last block folds the group into
 * a group partial while other blocks still run; the grid's last block
 * then walks only gdy / G of those.  Only for Welford states, whose walk
 * does a dozen dependent instructions a partial: on the H100 an NHWC
 * batch norm's statistics (512 blocks) took 2.3 us less in bf16 and 2.1
 * in f32, where a tall sum over 262144 x 64 (a load and an add a
 * partial) took 1.8 us more and a full sum of 2^26 0.4 more.  Rows of
 * fewer than 8 partials a thread keep one level: the second fence and
 * semaphore would cost what the shorter walk saves.  Both levels fold
 * their threadIdx.y rows in a rolled loop (roll_folds): with the folds
 * unrolled the NHWC statistics kernels grew by 950 PTX lines (half again,
 * and as much compile time), rolled by 146, and ran as fast (bf16
 * 120.7-121.3 us against 121.1, f32 222.8-222.9 against 222.4-222.7). */
static uint32_t tree_group(rl *L, const fu_lexpr *gy, uint32_t nr, fu_kval *const *cnt) {
  if (!L->opt || !L->opt->grid_tree) return 0;
  if (!any_welford(L) || !gy || gy->kind != FU_LX_CONST || gy->value < 8 * (int64_t)nr) return 0;
  uint32_t want = nr * grid_unroll(L, cnt);
  for (uint32_t g = want; g <= 4 * want && g < gy->value; g++)
    if (gy->value % g == 0 && gy->value / g >= 2) return g;
  return 0;
}

/* reduce=grid: the blocks of a row (blockIdx.y) combine through global
 * workspaces (docs/ir.md, "Reductions across blocks"):
 *
 *   thread 0: partials[row * gridDim.y + blockIdx.y] = v; fence gpu
 *   sync; thread 0: old = atom.add sem[row], 1; last = old == gridDim.y - 1
 *   (shared through a flag); sync
 *   if (last) {                        -- the builder is left in here
 *     fence gpu
 *     thread t combines partials t, t + blockDim.x, ... in order (grid_unroll
 *     of them loaded before they are combined), then the block combine;
 *     thread 0 resets sem[row] to 0
 *   }
 *
 * An outer reduction (rows on threadIdx.y) keeps its partials block-major,
 * partials[blockIdx.y * (gridDim.x * blockDim.x) + column], so that the
 * last block's threads, consecutive columns on threadIdx.x, read
 * consecutive words; an inner one row-major, partials[row * gridDim.y +
 * blockIdx.y], its threads reading consecutive blocks of one row.
 *
 * With tree_group's G, two levels: each group of G blocks has its own
 * semaphore (group_sem), the group's last block walks the group's
 * partials and stores the group's state to group_partials, then arrives
 * at sem; the last of those walks the group partials.
 *
 * Whatever order the blocks run in, the last one combines the partials in
 * the same fixed order, so results are deterministic (no floating-point
 * atomics).  The semaphore is zeroed by the runtime once and left zero by
 * every launch. */
static void combine_grid(rl *L, rstate *v, const fu_ix *tx) {
  if (!L->ty_red && L->k->block[1] != 1) {
    fail(L, L->s->loc, "reduce=grid with a kept axis on threadIdx.y");
    return;
  }
  /* the kept positions of a block: its threadIdx.x columns (outer), or 1 */
  uint32_t nk = L->ty_red ? L->k->block[0] : 1, nr = L->k->block[L->ty_red ? 1 : 0];
  /* the block index of the row's chunks: blockIdx.y, or blockIdx.x with
   * the rows on blockIdx.y (an inner sweep, fu_schedule_reduction_check) */
  int32_t cx = fu_schedule_loop_of(L->s, FU_PT_BLOCK_X);
  uint32_t cd = cx >= 0 && L->ra[L->s->loops[cx].axis] ? 0 : 1;
  fu_lexpr *gx = L->k->grid[1 - cd] ? L->k->grid[1 - cd] : fu_lexpr_const(L->m, 1);
  fu_lexpr *gy = L->k->grid[cd];
  fu_lexpr *gk = gx && nk > 1 ? fu_lexpr_binary(L->m, FU_LX_MUL, gx, fu_lexpr_const(L->m, nk)) : gx;
  fu_lexpr *size = gk && gy ? fu_lexpr_binary(L->m, FU_LX_MUL, gk, gy) : NULL;
  if (!size) {
    chk(L, NULL);
    return;
  }
  rstate part[MAX_STATES];
  fu_kval *cnt[MAX_STATES];
  known_counts(L, v, cnt);
  partial_workspaces(L, "partials", size, part);
  fu_kval *sem = chk(L, fu_kernel_workspace_param(L->m, L->k, "sem", FU_DT_I32, gx, true));
  fu_kval *flag = chk(L, fu_kval_new_array(L->m, L->k, "last_block", FU_DT_I32, FU_MEM_SHARED, 1));
  fu_kval *bx = chk(L, fu_kb_special(&L->b, NULL, cd ? FU_SP_CTAID_X : FU_SP_CTAID_Y, L->idx));
  fu_kval *by = chk(L, fu_kb_special(&L->b, NULL, cd ? FU_SP_CTAID_Y : FU_SP_CTAID_X, L->idx));
  fu_kval *gdy = chk(L, fu_kb_special(&L->b, NULL, cd ? FU_SP_NCTAID_Y : FU_SP_NCTAID_X, L->idx));
  fu_kval *t = emit_ix(L, tx), *zero = emit_ix(L, fu_ix_const(L->ix, 0));
  if (L->failed || !t || !zero) return;
  /* the output group of this thread: blockIdx.x * nk + its kept column */
  fu_kval *k0 = L->ty_red && L->kx ? emit_ix(L, L->kx) : zero, *nkv = emit_ix(L, fu_ix_const(L->ix, nk));
  fu_kval *slot = k0 && nkv ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_MUL, L->idx, bx, nkv)) : NULL;
  slot = slot ? chk(L, fu_kb_binary(&L->b, "group", FU_OP_ADD, L->idx, slot, k0)) : NULL;
  /* partial g of the group is at g * ystride + base (see above) */
  fu_kval *ystride = NULL, *base = NULL;
  if (L->ty_red) {
    fu_kval *gdx = chk(L, fu_kb_special(&L->b, NULL, FU_SP_NCTAID_X, L->idx));
    ystride = gdx && nkv ? chk(L, fu_kb_binary(&L->b, "columns", FU_OP_MUL, L->idx, gdx, nkv)) : NULL;
    base = slot;
  } else {
    base = slot ? chk(L, fu_kb_binary(&L->b, "row_base", FU_OP_MUL, L->idx, slot, gdy)) : NULL;
  }
  fu_kval *mine = partial_at(L, by, ystride, base);
  fu_kval *t0 = chk(L, fu_kb_binary(&L->b, "thread0", FU_OP_EQ, FU_DT_BOOL, t, zero));
  fu_kval *k00 = k0 ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_EQ, FU_DT_BOOL, k0, zero)) : NULL;
  fu_kval *first = t0 && k00 ? chk(L, fu_kb_binary(&L->b, "first", FU_OP_LOGICAL_AND, FU_DT_BOOL, t0, k00)) : NULL;
  if (!mine || !first) return;
  store_partial(L, part, mine, v, t0);
  uint32_t G = tree_group(L, gy, nr, cnt);
  if (!G) {
    /* one level: the grid's last block walks every partial */
    fu_kval *last = arrive(L, sem, bx, gdy, flag, first, zero);
    if (!last || !enter_if(L, last)) return;
    walk_level(L, part, cnt, v, t, tx, gdy, nr, ystride, base, "gacc", "grid_partials", false, false);
    reset_sem(L, sem, bx, first);
    return;
  }
  /* two levels: the last block of each group of G walks the group's
   * partials into a group partial; the last group's, all of those */
  uint32_t NG = (uint32_t)(gy->value / G);
  fu_kval *Gv = emit_ix(L, fu_ix_const(L->ix, G)), *NGv = emit_ix(L, fu_ix_const(L->ix, NG));
  fu_lexpr *gsize = fu_lexpr_binary(L->m, FU_LX_MUL, gk, fu_lexpr_const(L->m, NG));
  fu_lexpr *nsem = fu_lexpr_binary(L->m, FU_LX_MUL, gx, fu_lexpr_const(L->m, NG));
  rstate gpart[MAX_STATES];
  partial_workspaces(L, "group_partials", gsize, gpart);
  fu_kval *gsem = nsem ? chk(L, fu_kernel_workspace_param(L->m, L->k, "group_sem", FU_DT_I32, nsem, true)) : NULL;
  if (L->failed || !Gv || !NGv || !gsem) {
    chk(L, NULL);
    return;
  }
  fu_kval *group = chk(L, fu_kb_binary(&L->b, "block_group", FU_OP_DIV, L->idx, by, Gv));
  fu_kval *gat = bx && group ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_MUL, L->idx, bx, NGv)) : NULL;
  gat = gat ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_ADD, L->idx, gat, group)) : NULL;
  /* the group's partials start at partial group * G; the group partials
   * are laid out as the partials are, NG of them a row */
  fu_kval *g0 = group ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_MUL, L->idx, group, Gv)) : NULL;
  fu_kval *gbase = g0 ? partial_at(L, g0, ystride, base) : NULL;
  fu_kval *tbase = L->ty_red ? base : slot && NGv ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_MUL, L->idx, slot, NGv)) : NULL;
  fu_kval *last = gat && gbase && tbase ? arrive(L, gsem, gat, Gv, flag, first, zero) : NULL;
  if (!last || !enter_if(L, last)) return;
  walk_level(L, part, cnt, v, t, tx, Gv, nr, ystride, gbase, "gacc", "group_slots", true, G % nr == 0);
  if (L->failed) return;
  store_partial(L, gpart, partial_at(L, group, ystride, tbase), v, t0);
  reset_sem(L, gsem, gat, first);
  fu_kval *gcnt[MAX_STATES];
  for (uint32_t j = 0; j < L->n_states; j++) gcnt[j] = cnt[j] ? fbin(L, FU_OP_MUL, cnt[j], cast_to(L, Gv, cnt[j]->dtype)) : NULL;
  last = arrive(L, sem, bx, NGv, flag, first, zero);
  if (!last || !enter_if(L, last)) return;
  walk_level(L, gpart, gcnt, v, t, tx, NGv, nr, ystride, tbase, "tacc", "grid_partials", true, NG % nr == 0);
  reset_sem(L, sem, bx, first);
}

/* A thread's Welford states from the sums its serial loops kept
 * (L->sums): with n elements of shifted values v, sum s and sum of
 * squares q, mean = s / n and m2 = q - s * mean, the states the combines
 * across threads and blocks take.  Per element that is a multiply and
 * two adds where Welford's update takes a dozen dependent
 * instructions (a reciprocal, two where-isfinite selects): an NHWC batch
 * norm's statistics loop is issue-bound, not load-bound.  The shift (the
 * reduced dim's first element) keeps |mean(v)| near the data's spread, so
 * q and s * mean do not cancel; a non-finite element makes s and q, and
 * so mean and m2, non-finite as Welford's update does (inf: mean inf, m2
 * NaN). */
static void sums_to_welford(rl *L, rstate *v) {
  for (uint32_t j = 0; j < L->n_states && !L->failed; j++) {
    if (!fu_welford_op(op_of(L, j))) continue;
    fu_kval *s = v[j][0], *q = v[j][1], *n = v[j][FU_WELFORD_PARTS - 1];
    if (!s || !q || !n) {
      chk(L, NULL);
      return;
    }
    fu_kval *one = chk(L, fu_kb_const_f(&L->b, NULL, s->dtype, 1.0));
    fu_kval *rn = one ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_DIV, s->dtype, one, n)) : NULL;
    fu_kval *mean = rn ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_MUL, s->dtype, s, rn)) : NULL;
    fu_kval *sm = mean ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_MUL, s->dtype, s, mean)) : NULL;
    v[j][0] = mean;
    v[j][1] = sm ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_SUB, s->dtype, q, sm)) : NULL;
  }
}

/* The combine across the threads (and blocks) of every reduction, then
 * the epilogue under the kept guards, on threadIdx.x == 0 when the
 * threads of a row share it. */
static void finish(rl *L, rstate *acc, const fu_ix *tx, bool in_loop) {
  rstate v[MAX_STATES];
  read_states(L, acc, v);
  if (L->sums) sums_to_welford(L, v); /* Welford states from here on (the last block's too) */
  if (L->s->reduce != FU_RM_SERIAL) combine_threads(L, v, tx, in_loop, "warp_partials");
  fu_kbuilder outer = L->b;
  if (L->s->reduce == FU_RM_GRID && !L->failed) {
    if (in_loop) fail(L, L->s->loc, "reduce=grid inside a kept serial loop");
    else combine_grid(L, v, tx);
  }
  /* the epilogue of each kept lane, at its coordinates */
  for (uint32_t lane = 0; lane < L->n_lanes && !L->failed; lane++) {
    uint32_t mark = fu_lix_mark(&L->lix);
    if (L->klane) ixv_set(L, L->klane, emit_ix(L, fu_ix_const(L->ix, lane)));
    memo_clear(L);
    for (uint32_t j = lane * L->ri.n_ops; j < (lane + 1) * L->ri.n_ops && !L->failed; j++) {
      const fu_op *op = op_of(L, j);
      fu_kval *res[2] = {v[j][0], NULL};
      if (fu_welford_op(op) && v[j][0] && L->shift[j]) {
        fu_kval *sh = chk(L, fu_kb_read(&L->b, NULL, L->shift[j]));
        v[j][0] = sh ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_ADD, sh->dtype, v[j][0], sh)) : NULL;
      }
      if (fu_welford_op(op) && v[j][0] && !fu_welford_results(&L->b, op, v[j], res)) chk(L, NULL);
      for (uint32_t k = 0; k < op->n_results && k < 2; k++)
        memo_put(L, op->results[k], fu_igraph_coords(L->g, op->results[k]),
                 cast_to(L, res[k], op->results[k]->type.dtype));
    }
    fu_kval *cond = guards(L, false);
    if (L->s->reduce != FU_RM_SERIAL) {
      fu_kval *t = emit_ix(L, tx), *zero = emit_ix(L, fu_ix_const(L->ix, 0));
      fu_kval *t0 = t && zero ? chk(L, fu_kb_binary(&L->b, "thread0", FU_OP_EQ, FU_DT_BOOL, t, zero)) : NULL;
      cond = cond && t0 ? chk(L, fu_kb_binary(&L->b, "store", FU_OP_LOGICAL_AND, FU_DT_BOOL, cond, t0)) : t0;
    }
    fu_kbuilder saved = open_if(L, cond);
    store_outputs(L, false);
    L->b = saved;
    fu_lix_pop(&L->lix, mark);
  }
  L->b = outer;
}

/* A peeled split's shift p for the current run, the kept coordinates
 * bound (docs/ir.md, "Peeled vector splits"): the peeled input's address
 * in elements plus the offset of the run's first element, mod V, so that
 * vector o, at offset start + o * V - p, starts on a V-element (16-byte)
 * boundary whatever the pointer and the row length.  Bound until the
 * current scope closes. */
static void bind_peel(rl *L) {
  const fu_value *pv = NULL;
  const fu_ix *p = fu_igraph_peel_var(L->g, &pv);
  if (!p || L->failed) return;
  const fu_ix *off = NULL;
  for (uint32_t i = 0; pv && i < fu_igraph_num_accesses(L->g) && !off; i++) {
    const fu_iaccess *a = fu_igraph_access(L->g, i);
    if (a->value == pv && !a->is_store && a->mode == FU_AM_VECTOR) off = a->offset;
  }
  if (!off || !L->tparam[pv->id]) {
    fail(L, L->s->loc, "a peeled split without a vector load of its access=vector input");
    return;
  }
  const fu_ix *zero = fu_ix_const(L->ix, 0);
  off = fu_ix_subst(L->ix, off, p, zero);
  for (uint32_t i = 0; i < L->n_rvars; i++) off = fu_ix_subst(L->ix, off, L->rvars[i], zero);
  fu_kval *start = emit_ix(L, off), *vm = emit_ix(L, fu_ix_const(L->ix, p->bound));
  fu_kval *mis = chk(L, fu_kb_misalign(&L->b, "misalign", L->tparam[pv->id], (uint32_t)p->bound, L->idx));
  fu_kval *sum = start && mis ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_ADD, L->idx, mis, start)) : NULL;
  fu_kval *pk = sum && vm ? chk(L, fu_kb_binary(&L->b, "peel", FU_OP_FMOD, L->idx, sum, vm)) : NULL;
  if (pk) ixv_set(L, p, pk);
}

/* With a peeled split and the reduced loop variables bound to 0, the
 * vector lane set to the shift, so that the coordinates are the run's
 * first element (index o * V + lane - p = 0). */
static void peel_first(rl *L) {
  const fu_ix *p = fu_igraph_peel_var(L->g, NULL), *lane = fu_igraph_lane_var(L->g, NULL);
  if (p && lane) ixv_set(L, lane, emit_ix(L, p));
}

/* By value id: whether the value reads a reduction's result in the
 * segment (a persistent segment's later pass reduces such values: their
 * first element is not known before the pass, so they keep shift 0);
 * NULL when out of memory. */
static bool *reduction_readers(rl *L, uint32_t *n) {
  *n = L->f->next_value_id ? L->f->next_value_id : 1;
  bool *r = fu_mem_calloc(&L->m->alloc, *n, sizeof *r);
  const fu_block *body = L->seg->u.segment.body;
  for (const fu_op *op = body && r ? body->first : NULL; op; op = op->next) {
    bool dep = fu_op_has(op->kind, FU_OF_REDUCTION);
    for (uint32_t i = 0; i < op->n_operands && !dep; i++) dep = op->operands[i]->id < *n && r[op->operands[i]->id];
    for (uint32_t k = 0; k < op->n_results; k++)
      if (op->results[k]->id < *n) r[op->results[k]->id] = dep;
  }
  return r;
}

/* Welford ops accumulate x - shift, the shift being the first element of
 * the output's reduced slice (every thread of the slice loads it): the
 * running means then stay near 0 and keep their precision for inputs
 * with a large mean (x = 1e4 + randn), which plain f32 Welford loses.
 * The reduced loop variables are bound to 0 for that one load; an empty
 * or out-of-range slice keeps shift 0. */
static void welford_shifts(rl *L) {
  bool any = false;
  for (uint32_t j = 0; j < L->n_states; j++) {
    L->shift[j] = NULL;
    any |= fu_welford_op(op_of(L, j));
  }
  /* (with kept lanes, one shift per lane: the first element of its own
   * output's slice) */
  if (!any || L->failed) return;
  uint32_t mark = fu_lix_mark(&L->lix);
  fu_kval *zero = emit_ix(L, fu_ix_const(L->ix, 0));
  for (uint32_t i = 0; i < L->n_rvars && zero; i++) ixv_set(L, L->rvars[i], zero);
  for (uint32_t j = 0; j < L->n_states && !L->failed; j++) {
    const fu_op *op = op_of(L, j);
    char nm[16];
    snprintf(nm, sizeof nm, "shift%u", j);
    fu_kval *z = chk(L, fu_kb_const_f(&L->b, NULL, acc_dtype(op), 0.0));
    if (fu_welford_op(op) && (L->shift[j] = chk(L, fu_kval_new_mutable(L->m, L->k, nm, acc_dtype(op)))) && z &&
        !fu_kb_assign(&L->b, L->shift[j], z))
      chk(L, NULL);
  }
  memo_clear(L);
  if (!L->klane_rows) peel_first(L);
  /* the guards hold at reduced coordinate 0 unless a reduced extent is 0
   * (those of kept lanes are taken per lane below) */
  fu_kval *cond = L->klane ? NULL : guards(L, true);
  const fu_value *ref = L->s->reference;
  for (int32_t d = 0; d < ref->type.rank && !L->failed; d++) {
    if (!L->ri.reduced_dim[d]) continue;
    const fu_ix *e = fu_ix_extent(L->ix, ref->type.dims[d]);
    int64_t c = 0;
    if (fu_ix_is_const(e, &c)) {
      if (c > 0) continue;
      fu_lix_pop(&L->lix, mark); /* an empty reduction: no element to load */
      return;
    }
    fu_kval *ek = emit_ix(L, e), *zk = emit_ix(L, fu_ix_const(L->ix, 0));
    fu_kval *p = ek && zk ? chk(L, fu_kb_binary(&L->b, "nonempty", FU_OP_LT, FU_DT_BOOL, zk, ek)) : NULL;
    cond = cond && p ? chk(L, fu_kb_binary(&L->b, "nonempty", FU_OP_LOGICAL_AND, FU_DT_BOOL, cond, p)) : p;
  }
  uint32_t n_ids = 0;
  bool *after = reduction_readers(L, &n_ids);
  if (!after) chk(L, NULL);
  for (uint32_t lane = 0; lane < L->n_lanes && !L->failed; lane++) {
    uint32_t lmark = fu_lix_mark(&L->lix);
    fu_kval *c = cond;
    if (L->klane) {
      /* the lane's own kept guards (and peel: rows side by side have their own) */
      ixv_set(L, L->klane, emit_ix(L, fu_ix_const(L->ix, lane)));
      if (L->klane_rows) {
        bind_peel(L);
        peel_first(L);
      }
      fu_kval *g = guards(L, true);
      c = c && g ? chk(L, fu_kb_binary(&L->b, "nonempty", FU_OP_LOGICAL_AND, FU_DT_BOOL, c, g)) : g ? g : c;
    }
    memo_clear(L);
    fu_kbuilder saved = open_if(L, c);
    for (uint32_t j = lane * L->ri.n_ops; j < (lane + 1) * L->ri.n_ops && !L->failed; j++) {
      const fu_value *x = op_of(L, j)->operands[0];
      bool known = x->id < n_ids && !after[x->id];
      fu_kval *v = L->shift[j] && known ? cast_to(L, eval(L, x, fu_igraph_coords(L->g, x)), L->shift[j]->dtype) : NULL;
      /* an infinite or NaN first element would make every x - shift NaN: shift 0 */
      fu_kval *fin = v ? chk(L, fu_kb_math(&L->b, NULL, FU_OP_ISFINITE, FU_DT_BOOL, &v, 1)) : NULL;
      fu_kval *z = fin ? chk(L, fu_kb_const_f(&L->b, NULL, v->dtype, 0.0)) : NULL;
      fu_kval *args[3] = {fin, v, z};
      v = z ? chk(L, fu_kb_math(&L->b, NULL, FU_OP_WHERE, v->dtype, args, 3)) : NULL;
      if (v && !fu_kb_assign(&L->b, L->shift[j], v)) chk(L, NULL);
    }
    L->b = saved;
    fu_lix_pop(&L->lix, lmark);
  }
  if (after) fu_mem_free(&L->m->alloc, after, n_ids * sizeof *after);
  memo_clear(L);
  fu_lix_pop(&L->lix, mark);
}

/* Welford counts that need not be carried: when no guard depends on a
 * reduced loop variable, every thread folds one element at every point
 * of its reduced serial loops (from loop red0 on), so its count before an
 * element is the loops' linear position (a constant in unrolled code, so
 * the update's 1 / count folds away) and its whole count their trip
 * counts' product, the same in every thread.  Shuffles, shared slots and
 * workspaces then move mean and m2 only, and the combines of those equal
 * counts fold to constants: fewer live values and no division in the
 * loop, hence fewer registers. */
static void welford_counts(rl *L, uint32_t red0) {
  L->known_count = false;
  bool any = false;
  for (uint32_t j = 0; j < L->n_states; j++) any |= fu_welford_op(op_of(L, j));
  for (uint32_t i = 0; any && i < fu_igraph_num_predicates(L->g); i++) {
    const fu_ix *idx, *ext;
    fu_igraph_predicate(L->g, i, &idx, &ext);
    if (on_reduced(L, idx)) any = false;
  }
  if (!any) return;
  const fu_ix *lin = fu_ix_const(L->ix, 0), *n = fu_ix_const(L->ix, 1);
  for (uint32_t i = red0; i < L->s->n_loops; i++) {
    const fu_sloop *l = &L->s->loops[i];
    if (!L->ra[l->axis] || (l->ptype != FU_PT_SERIAL && l->ptype != FU_PT_UNROLL && l->ptype != FU_PT_VECTORIZE))
      continue;
    const fu_ix *e = fu_igraph_axis_extent(L->g, l->axis);
    lin = fu_ix_add(L->ix, fu_ix_mul(L->ix, lin, e), fu_igraph_loop_var(L->g, i));
    n = fu_ix_mul(L->ix, n, e);
  }
  L->lin = lin;
  L->n_thread = n;
  L->known_count = true;
}

/* Kept loops from loop `i` (parallel axes become special registers,
 * serial ones loops), then the reduction. */
static void kept_from(rl *L, uint32_t i, bool in_loop) {
  if (L->failed) return;
  const fu_schedule *s = L->s;
  static const fu_special sp[FU_PT_COUNT] = {[FU_PT_BLOCK_X] = FU_SP_CTAID_X, [FU_PT_BLOCK_Y] = FU_SP_CTAID_Y,
                                             [FU_PT_THREAD_X] = FU_SP_TID_X, [FU_PT_THREAD_Y] = FU_SP_TID_Y};
  const fu_ix *tx = NULL;
  uint32_t red0 = s->n_loops; /* the first reduced serial loop */
  for (; i < s->n_loops; i++) {
    const fu_sloop *l = &s->loops[i];
    int64_t w = 0;
    bool lanes_ok = !L->klane && fu_ix_is_const(fu_igraph_axis_extent(L->g, l->axis), &w) && w >= 1 &&
                    w <= MAX_KEPT_LANES;
    if (l->ptype == FU_PT_VECTORIZE && !L->ra[l->axis]) {
      /* kept lanes (the innermost loop): one state per lane and reduction */
      if (!lanes_ok) {
        fail(L, l->loc, "a kept vectorize axis without a constant extent of at most 8, or a second kept lane axis");
        return;
      }
      L->klane = fu_igraph_loop_var(L->g, i);
      L->n_lanes = (uint32_t)w;
      L->n_states = L->n_lanes * L->ri.n_ops;
      continue;
    }
    if (l->ptype == FU_PT_UNROLL && !L->ra[l->axis] && lanes_ok && i + 1 < s->n_loops && L->ra[s->loops[i + 1].axis]) {
      /* a kept unroll loop right before the reduced loops: rows reduced
       * side by side (kept lanes), not one after the other */
      L->klane = fu_igraph_loop_var(L->g, i);
      L->klane_rows = true;
      L->n_lanes = (uint32_t)w;
      L->n_states = L->n_lanes * L->ri.n_ops;
      continue;
    }
    if (l->ptype == FU_PT_SERIAL || l->ptype == FU_PT_UNROLL || l->ptype == FU_PT_VECTORIZE) {
      if (!L->ra[l->axis]) break;
      if (red0 == s->n_loops) red0 = i;
      continue;
    }
    if (l->grid_stride) {
      fail(L, l->loc, "a grid-stride block axis");
      return;
    }
    fu_kval *kv = chk(L, fu_kb_special(&L->b, s->axes[l->axis].name, sp[l->ptype], L->idx));
    if (kv) ixv_set(L, fu_igraph_loop_var(L->g, i), kv);
    if (l->ptype == FU_PT_THREAD_X && L->ra[l->axis]) tx = fu_igraph_loop_var(L->g, i);
  }
  for (uint32_t j = 0; j < s->n_loops && !tx; j++)
    if (s->loops[j].ptype == FU_PT_THREAD_X && L->ra[s->loops[j].axis]) tx = fu_igraph_loop_var(L->g, j);
  /* an outer reduction's reduced axis on threadIdx.y, columns on threadIdx.x */
  for (uint32_t j = 0; j < s->n_loops && !tx; j++)
    if (s->loops[j].ptype == FU_PT_THREAD_Y && L->ra[s->loops[j].axis]) {
      tx = fu_igraph_loop_var(L->g, j);
      L->ty_red = true;
    }
  for (uint32_t j = 0; j < s->n_loops && L->ty_red; j++)
    if (s->loops[j].ptype == FU_PT_THREAD_X) L->kx = fu_igraph_loop_var(L->g, j);
  if (i < s->n_loops) {
    /* a kept serial loop */
    const fu_sloop *l = &s->loops[i];
    fu_kbuilder saved = L->b;
    uint32_t mark = fu_lix_mark(&L->lix);
    fu_kval *zero = emit_ix(L, fu_ix_const(L->ix, 0)), *one = emit_ix(L, fu_ix_const(L->ix, 1));
    fu_kval *end = emit_ix(L, fu_igraph_axis_extent(L->g, l->axis));
    fu_kinst *lp = zero && one && end ? fu_kb_for(&L->b, s->axes[l->axis].name, zero, end, one, FU_LOOP_SERIAL) : NULL;
    if (!lp) {
      chk(L, NULL);
      return;
    }
    L->b = fu_kbuilder_at(L->m, L->k, &lp->u.loop.body);
    ixv_set(L, fu_igraph_loop_var(L->g, i), lp->results[0]);
    kept_from(L, i + 1, true);
    fu_lix_pop(&L->lix, mark);
    L->b = saved;
    return;
  }
  rstate acc[MAX_STATES];
  if (!L->klane_rows) bind_peel(L);
  welford_counts(L, red0);
  L->sums = L->known_count && !(L->opt && L->opt->no_welford_sums);
  new_accumulators(L, "acc", acc);
  welford_shifts(L);
  accumulate(L, red0, acc);
  if (!L->failed && s->reduce != FU_RM_SERIAL && !tx) fail(L, s->loc, "no reduced axis on threadIdx.x or threadIdx.y");
  finish(L, acc, tx, in_loop);
}

/* ---- parameters and launch --------------------------------------------------------------- */

/* Whether input v is read with vector loads (its parameter is then
 * declared 16-byte aligned, which the runtime checks). */
static bool read_with_vectors(const rl *L, const fu_value *v) {
  /* a peeled input's base is not aligned: its vectors are, by the peel */
  if (fu_igraph_peel_var(L->g, NULL)) return false;
  int64_t width = 1;
  const fu_ix *lane = fu_igraph_lane_var(L->g, &width);
  bool last = L->s->n_loops && L->s->loops[L->s->n_loops - 1].ptype == FU_PT_VECTORIZE;
  for (uint32_t i = 0; lane && width > 1 && last && i < fu_igraph_num_accesses(L->g); i++) {
    const fu_iaccess *a = fu_igraph_access(L->g, i);
    if (a->value == v && !a->is_store && a->mode == FU_AM_VECTOR) return true;
  }
  return false;
}

/* Whether input v is a `stream` parameter: a kernel that reduces rows and
 * writes no tensor of its reference's shape reads each element of an
 * input of that shape once, in whole lines, and never again.  Those loads
 * evict first from L2 (ld.global.cs), so they do not push out the lines
 * earlier kernels wrote: on the H100, behind a flush that left L2 dirty
 * (as every timing harness does, and as a training step's earlier kernels
 * do), sum(-1) of [262144, 64] took 28.6 us instead of 32.9, sum(0) 31.4
 * instead of 36.2, amax of bf16 [16384, 4096] 49.6 instead of 55.3 and
 * logsumexp of f32 [16384, 4096] (a persistent kernel with a per-row
 * output) 97.1 instead of 98.6 (docs/performance.md).  Kernels that also
 * write a full-size output keep the default: with their full-size inputs
 * so marked, the persistent, pointwise and movement kernels of the
 * benchmarks ran 1-7% slower (softmax of bf16 [1024, 65536] 129.1
 * against 138.7 us, transpose + add 139.6 against 143.9).  A persistent
 * kernel with partial sums (a row loop) takes them whatever it writes:
 * its layer-norm and RMS-norm backward ran 0.4% faster with dy and x so
 * marked (173.3 against 174.2 us for RMS norm, three rounds each). */
static bool read_once(const rl *L, const fu_value *v) {
  const fu_value *ref = L->s->reference;
  if ((L->s->kind != FU_SK_REDUCTION && L->s->kind != FU_SK_PERSISTENT) || !ref || !fu_type_is_tensor(&v->type) ||
      !fu_type_same_shape(&v->type, &ref->type))
    return false;
  /* the persistent tier that rereads the row reads it more than once */
  if (L->s->kind == FU_SK_PERSISTENT && L->s->persist == FU_PM_REREAD) return false;
  const fu_segment_info *si = &L->seg->u.segment;
  if (fu_segment_partial_sums(L->seg, NULL, 0)) return L->s->persist == FU_PM_REGISTERS;
  for (uint32_t i = 0; i < si->n_outputs; i++)
    if (fu_type_same_shape(&si->outputs[i]->type, &ref->type)) return false;
  return true;
}

static bool make_params(rl *L) {
  const fu_segment_info *si = &L->seg->u.segment;
  for (uint32_t pass = 0; pass < 3; pass++) {
    uint32_t n = pass == 1 ? si->n_outputs : L->seg->n_operands;
    for (uint32_t i = 0; i < n; i++) {
      const fu_value *v = pass == 1 ? si->outputs[i] : L->seg->operands[i];
      bool tensor = fu_type_is_tensor(&v->type);
      if (tensor != (pass < 2) || v->is_literal || L->tparam[v->id] || L->sparam[v->id]) continue;
      if (!v->name) return fail(L, L->seg->loc, "a parameter without a name");
      if (tensor)
        L->tparam[v->id] = fu_kernel_tensor_param(L->m, L->k, v->name, v->type.dtype, (fu_value *)v, pass == 0, true,
                                                  read_with_vectors(L, v) ? 16 : (uint32_t)fu_dtype_size(v->type.dtype));
      else
        L->sparam[v->id] = fu_kernel_scalar_input_param(L->m, L->k, v->name, v->type.dtype, (fu_value *)v);
      if (!(tensor ? L->tparam[v->id] : L->sparam[v->id])) return chk(L, NULL) != NULL;
      if (tensor && pass == 0) L->tparam[v->id]->stream = read_once(L, v);
    }
  }
  return true;
}

static bool make_launch(rl *L) {
  const fu_schedule *s = L->s;
  for (uint32_t i = 0; i < s->n_loops; i++) {
    const fu_sloop *l = &s->loops[i];
    const fu_ix *ext = fu_igraph_axis_extent(L->g, l->axis);
    int64_t e = 0;
    if (l->ptype == FU_PT_THREAD_X || l->ptype == FU_PT_THREAD_Y) {
      if (!fu_ix_is_const(ext, &e) || e < 1 || e > 1024) return fail(L, l->loc, "a thread axis of no constant extent");
      L->k->block[l->ptype == FU_PT_THREAD_X ? 0 : 1] = (uint32_t)e;
    } else if (l->ptype == FU_PT_BLOCK_X || l->ptype == FU_PT_BLOCK_Y) {
      fu_lexpr *g = fu_ix_to_lexpr(L->m, ext);
      if (!g) return fail(L, l->loc, "a block axis whose extent the host cannot evaluate");
      L->k->grid[l->ptype == FU_PT_BLOCK_X ? 0 : 1] = g;
    }
  }
  /* a row split over a cluster: C blocks along x per row (kir `cluster=`) */
  int32_t cl = fu_schedule_loop_of(s, FU_PT_CLUSTER_X);
  int64_t c = 0;
  if (cl >= 0) {
    if (!fu_ix_is_const(fu_igraph_axis_extent(L->g, s->loops[cl].axis), &c) || c < 2 || c > 8)
      return fail(L, s->loops[cl].loc, "a cluster.x axis of no constant extent of 2, 4 or 8");
    L->k->cluster = (uint32_t)c;
    fu_lexpr *g = L->k->grid[0];
    L->k->grid[0] = g->kind == FU_LX_CONST && g->value <= INT64_MAX / c
                        ? fu_lexpr_const(L->m, g->value * c)
                        : fu_lexpr_binary(L->m, FU_LX_MUL, g, fu_lexpr_const(L->m, c));
    if (!L->k->grid[0]) return chk(L, NULL) != NULL;
  }
  if (s->reduce != FU_RM_SERIAL && (L->k->block[0] * L->k->block[1]) % 32 != 0)
    return fail(L, s->loc, "a block that is not whole warps");
  return true;
}

fu_status fu_rl_lower(fu_fusion *f, fu_op *seg, const fu_lower_options *opt, fu_diag_engine *diag, fu_kernel **out,
                      void (*body)(rl *L)) {
  *out = NULL;
  const fu_schedule *s = seg->u.segment.schedule;
  if (!s) return FU_ERR_INVALID_ARG;
  if (s->n_axes > 256) return FU_ERR_UNSUPPORTED;
  fu_module *m = f->module;
  fu_allocator alloc = m->alloc;
  rl *L = fu_mem_calloc(&alloc, 1, sizeof *L);
  if (!L) return FU_ERR_NOMEM;
  L->m = m;
  L->f = f;
  L->seg = seg;
  L->s = s;
  L->diag = diag;
  L->opt = opt;
  L->ri.reduced_axis = L->ra;
  L->memo_gen = 1;
  unsigned errors_before = diag->n_errors;
  fu_status st = fu_schedule_reduction_check(seg, s, diag) && fu_schedule_reduction(seg, s, &L->ri, diag)
                     ? fu_igraph_build(f, seg, s, alloc, diag, &L->g)
                     : FU_ERR_VERIFY;
  uint32_t nv = f->next_value_id ? f->next_value_id : 1;
  if (st == FU_OK) {
    L->ix = fu_igraph_ix(L->g);
    L->idx = s->index_dtype == FU_DT_I32 || s->index_dtype == FU_DT_I64 ? s->index_dtype : fu_igraph_index_dtype(L->g);
    for (uint32_t i = 0; i < s->n_loops && L->n_rvars < 16; i++)
      if (L->ra[s->loops[i].axis]) L->rvars[L->n_rvars++] = fu_igraph_loop_var(L->g, i);
    char name[256];
    fu_kernel_name_for(f, seg, name, sizeof name);
    L->k = fu_kernel_new(m, name);
    L->tparam = fu_mem_calloc(&alloc, nv, sizeof *L->tparam);
    L->sparam = fu_mem_calloc(&alloc, nv, sizeof *L->sparam);
    if (!L->k || !L->tparam || !L->sparam) {
      chk(L, NULL);
    } else {
      L->k->index_dtype = L->idx;
      L->lix = (fu_lix){.m = m, .k = L->k, .b = &L->b, .ix = L->ix, .idx = L->idx, .alloc = alloc, .diag = diag,
                        .seg = seg, .tparam = L->tparam};
      L->n_lanes = 1;
      L->n_states = L->ri.n_ops;
      L->b = fu_kbuilder_at(m, L->k, &L->k->body);
      if (make_params(L) && make_launch(L)) body(L);
    }
    st = L->failed ? FU_ERR_VERIFY : FU_OK;
    if (st == FU_OK && fu_kernel_verify(L->k, diag, NULL) != FU_OK) {
      fu_error(diag, seg->loc, "internal error: the kernel lowered from '@%s' does not verify",
               seg->u.segment.name ? seg->u.segment.name : "?");
      st = FU_ERR_VERIFY;
    }
  }
  if (st != FU_OK && diag->n_errors == errors_before)
    fu_error(diag, seg->loc, "cannot lower segment '@%s'", seg->u.segment.name ? seg->u.segment.name : "?");
  if (st == FU_OK) *out = L->k;
  if (L->tparam) fu_mem_free(&alloc, L->tparam, nv * sizeof *L->tparam);
  if (L->sparam) fu_mem_free(&alloc, L->sparam, nv * sizeof *L->sparam);
  fu_lix_free(&L->lix);
  if (L->memo) fu_mem_free(&alloc, L->memo, L->memo_cap * sizeof *L->memo);
  if (L->stk) fu_mem_free(&alloc, L->stk, L->stk_cap * sizeof *L->stk);
  fu_igraph_free(L->g);
  fu_mem_free(&alloc, L, sizeof *L);
  return st;
}

/* ---- entry points, and the helpers the persistent lowering shares
 * (reduction_internal.h) --------------------------------------------------------------- */

static void reduction_body(rl *L) { kept_from(L, 0, false); }

fu_status fu_lower_reduction(fu_fusion *f, fu_op *seg, const fu_lower_options *opt, fu_diag_engine *diag,
                             fu_kernel **out) {
  return fu_rl_lower(f, seg, opt, diag, out, reduction_body);
}

bool fu_rl_fail(rl *L, fu_loc loc, const char *what) { return fail(L, loc, what); }
fu_kval *fu_rl_chk(rl *L, fu_kval *v) { return chk(L, v); }
void fu_rl_ixv_set(rl *L, const fu_ix *x, fu_kval *kv) { ixv_set(L, x, kv); }
fu_kval *fu_rl_emit_ix(rl *L, const fu_ix *x) { return emit_ix(L, x); }
bool fu_rl_on_reduced(rl *L, const fu_ix *x) { return on_reduced(L, x); }
fu_kval *fu_rl_guards(rl *L, bool all_axes) { return guards(L, all_axes); }
fu_kval *fu_rl_reduced_guards(rl *L) { return guard_set_of(L, GUARDS_REDUCED); }
bool fu_rl_lane_guards(rl *L, const fu_ix *lane, int64_t last, fu_kval **ind, fu_kval **full) {
  return lane_guards(L, lane, last, ind, full);
}
void fu_rl_memo_put(rl *L, const fu_value *v, const fu_ix *const *c, fu_kval *kv) { memo_put(L, v, c, kv); }
void fu_rl_memo_clear(rl *L) { memo_clear(L); }
fu_kval *fu_rl_eval(rl *L, const fu_value *v, const fu_ix *const *c) { return eval(L, v, c); }
fu_kval *fu_rl_cast(rl *L, fu_kval *x, fu_dtype t) { return cast_to(L, x, t); }
fu_dtype fu_rl_acc_dtype(const fu_op *op) { return acc_dtype(op); }
uint32_t fu_rl_parts(const fu_op *op) { return parts(op); }
fu_kval *fu_rl_combine(rl *L, const fu_op *op, fu_kval *a, fu_kval *b) { return combine(L, op, a, b); }
void fu_rl_new_accumulators(rl *L, const char *prefix, rstate *acc) { new_accumulators(L, prefix, acc); }
void fu_rl_read_states(rl *L, rstate *acc, rstate *v) { read_states(L, acc, v); }
fu_kbuilder fu_rl_open_if(rl *L, fu_kval *cond) { return open_if(L, cond); }
void fu_rl_store_outputs(rl *L, bool reduced) { store_outputs(L, reduced); }
void fu_rl_combine_threads(rl *L, rstate *v, const fu_ix *tx, const char *tag) {
  combine_threads(L, v, tx, false, tag);
}
void fu_rl_combine_cluster(rl *L, rstate *v, const fu_ix *tx, uint32_t C, const char *tag) {
  combine_cluster(L, v, tx, C, tag);
}
void fu_rl_welford_shifts(rl *L) { welford_shifts(L); }
void fu_rl_bind_peel(rl *L) { bind_peel(L); }
