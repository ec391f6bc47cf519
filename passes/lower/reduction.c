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
 * accumulator, folded and combined by reduction_welford.c, over elements
 * shifted by the first one of their slice (welford_shifts). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fuser/index_graph.h"
#include "fuser/lower.h"
#include "fuser/schedule.h"
#include "reduction_welford.h"

enum { MAX_MEMO = 512, MAX_PARAMS = 64, MAX_LANES = 16 };

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
  struct {
    const void *key;
    int32_t dim;
    fu_kval *kv;
  } params[MAX_PARAMS];
  uint32_t n_params;
  struct {
    const fu_ix *x;
    fu_kval *kv;
  } ixv[1024];
  uint32_t n_ixv;
  struct {
    const fu_value *v;
    const fu_ix *const *c;
    fu_kval *kv;
  } memo[MAX_MEMO];
  uint32_t n_memo;
  fu_kval *shift[FU_MAX_SEG_REDUCTIONS]; /* Welford ops: the shift their elements accumulate from */
} rl;

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

static fu_kval *ixv_get(const rl *L, const fu_ix *x) {
  for (uint32_t i = L->n_ixv; i-- > 0;)
    if (L->ixv[i].x == x) return L->ixv[i].kv;
  return NULL;
}

static void ixv_set(rl *L, const fu_ix *x, fu_kval *kv) {
  if (L->n_ixv == 1024) {
    fail(L, L->seg->loc, "too many index expressions");
    return;
  }
  L->ixv[L->n_ixv].x = x;
  L->ixv[L->n_ixv++].kv = kv;
}

static fu_kval *param_of(rl *L, const void *key, int32_t dim, const char *sym) {
  for (uint32_t i = 0; i < L->n_params; i++)
    if (L->params[i].key == key && L->params[i].dim == dim) return L->params[i].kv;
  if (L->n_params == MAX_PARAMS) return fail(L, L->seg->loc, "too many extent and stride parameters") ? NULL : NULL;
  fu_kval *kv;
  if (sym) {
    kv = fu_kernel_extent_param(L->m, L->k, sym, L->idx, sym);
  } else {
    const fu_value *v = key;
    fu_kval *t = L->tparam[v->id];
    if (!t) return fail(L, L->seg->loc, "a stride of a tensor without a parameter") ? NULL : NULL;
    char name[64];
    snprintf(name, sizeof name, "%s_stride%d", t->name ? t->name : "t", (int)dim);
    kv = fu_kernel_stride_param(L->m, L->k, name, L->idx, t, dim);
  }
  if (!chk(L, kv)) return NULL;
  L->params[L->n_params].key = key;
  L->params[L->n_params].dim = dim;
  L->params[L->n_params++].kv = kv;
  return kv;
}

static fu_kval *emit_ix(rl *L, const fu_ix *x) {
  if (L->failed || !x) return x ? NULL : chk(L, NULL);
  fu_kval *kv = ixv_get(L, x);
  if (kv) return kv;
  static const fu_op_kind ops[] = {[FU_IX_ADD] = FU_OP_ADD, [FU_IX_MUL] = FU_OP_MUL, [FU_IX_DIV] = FU_OP_DIV,
                                   [FU_IX_MOD] = FU_OP_FMOD};
  switch (x->kind) {
  case FU_IX_CONST: kv = chk(L, fu_kb_const_i(&L->b, NULL, L->idx, x->value)); break;
  case FU_IX_SYM: kv = param_of(L, x->sym, -1, x->sym); break;
  case FU_IX_VAR:
    if (x->tag != FU_IG_VAR_STRIDE) return fail(L, L->seg->loc, "a loop variable used outside its loop") ? NULL : NULL;
    kv = param_of(L, x->payload, x->dim, NULL);
    break;
  case FU_IX_CEILDIV: {
    fu_kval *a = emit_ix(L, x->a), *b = emit_ix(L, x->b), *one = emit_ix(L, fu_ix_const(L->ix, 1));
    fu_kval *t = a && b && one ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_SUB, L->idx, b, one)) : NULL;
    t = t ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_ADD, L->idx, a, t)) : NULL;
    kv = t ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_DIV, L->idx, t, b)) : NULL;
    break;
  }
  default: {
    fu_kval *a = emit_ix(L, x->a), *b = emit_ix(L, x->b);
    kv = a && b ? chk(L, fu_kb_binary(&L->b, NULL, ops[x->kind], L->idx, a, b)) : NULL;
    break;
  }
  }
  if (kv) ixv_set(L, x, kv);
  return kv;
}

/* Does x depend on a reduced axis's loop variable? */
static bool on_reduced(rl *L, const fu_ix *x) {
  for (uint32_t i = 0; i < L->n_rvars; i++)
    if (fu_ix_subst(L->ix, x, L->rvars[i], fu_ix_const(L->ix, 0)) != x) return true;
  return false;
}

/* The conjunction of the guard predicates (those on kept axes, or all of
 * them); NULL when there is none. */
static fu_kval *guards(rl *L, bool all_axes) {
  fu_kval *all = NULL;
  for (uint32_t i = 0; i < fu_igraph_num_predicates(L->g) && !L->failed; i++) {
    const fu_ix *idx, *ext;
    fu_igraph_predicate(L->g, i, &idx, &ext);
    if (!all_axes && on_reduced(L, idx)) continue;
    fu_kval *a = emit_ix(L, idx), *e = emit_ix(L, ext);
    fu_kval *p = a && e ? chk(L, fu_kb_binary(&L->b, "in_range", FU_OP_LT, FU_DT_BOOL, a, e)) : NULL;
    all = all && p ? chk(L, fu_kb_binary(&L->b, "in_range", FU_OP_LOGICAL_AND, FU_DT_BOOL, all, p)) : p;
  }
  return all;
}

/* ---- values -------------------------------------------------------------------------- */

static const char *vname(const fu_value *v) { return v && v->name ? v->name : "?"; }

static fu_kval *memo_get(const rl *L, const fu_value *v, const fu_ix *const *c) {
  for (uint32_t i = 0; i < L->n_memo; i++)
    if (L->memo[i].v == v && L->memo[i].c == c) return L->memo[i].kv;
  return NULL;
}

static void memo_put(rl *L, const fu_value *v, const fu_ix *const *c, fu_kval *kv) {
  if (L->n_memo == MAX_MEMO) {
    fail(L, L->seg->loc, "too many values in one body");
    return;
  }
  L->memo[L->n_memo].v = v;
  L->memo[L->n_memo].c = c;
  L->memo[L->n_memo++].kv = kv;
}

static fu_dtype compute_of(fu_dtype t) { return t == FU_DT_F16 || t == FU_DT_BF16 ? FU_DT_F32 : t; }

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

/* A pointwise op in the interpreter's compute dtype, rounded to the
 * result's dtype. */
static fu_kval *pointwise(rl *L, const fu_op *op, const fu_ix *const *c) {
  const fu_value *r = op->results[0];
  fu_dtype rt = r->type.dtype, ct;
  fu_kval *a[3];
  if (op->n_operands > 3) return fail(L, op->loc, "an op with more than 3 operands") ? NULL : NULL;
  for (uint32_t i = 0; i < op->n_operands; i++) {
    const fu_value *x = op->operands[i];
    if (!fu_type_is_tensor(&x->type)) {
      a[i] = eval(L, x, NULL);
    } else {
      const fu_ix **xc = fu_igraph_back_map(L->g, op, i, c);
      const fu_ix *const *t = xc ? fu_igraph_intern_coords(L->g, xc, (uint32_t)x->type.rank) : NULL;
      a[i] = t ? eval(L, x, t) : NULL;
      if (!t) fail(L, op->loc, "an operand cannot be indexed");
    }
    if (!a[i]) return NULL;
  }
  if (op->kind == FU_OP_CAST || op->kind == FU_OP_SET) return cast_to(L, a[0], rt);
  if (fu_op_has(op->kind, FU_OF_BOOL_RESULT)) {
    fu_dtype cd = op->n_operands == 1 ? op->operands[0]->type.dtype : fu_dtype_common(op->operands, op->n_operands);
    ct = fu_dtype_is_float(cd) ? compute_of(cd) : FU_DT_I64;
  } else if (fu_dtype_is_float(rt)) {
    ct = compute_of(rt);
  } else {
    ct = rt == FU_DT_BOOL && fu_op_has(op->kind, FU_OF_INT_ONLY) ? FU_DT_BOOL : FU_DT_I64;
  }
  for (uint32_t i = 0; i < op->n_operands; i++)
    if (!(a[i] = cast_to(L, a[i], op->kind == FU_OP_WHERE && i == 0 ? FU_DT_BOOL : ct))) return NULL;
  fu_dtype mt = fu_op_has(op->kind, FU_OF_BOOL_RESULT) ? FU_DT_BOOL : ct;
  return cast_to(L, chk(L, fu_kb_math(&L->b, vname(r), op->kind, mt, a, op->n_operands)), rt);
}

/* iota's element at index i: start + i * step, computed in i64 or f64
 * (a prologue of the reduction, as in pointwise segments). */
static fu_kval *iota_at(rl *L, const fu_op *op, const fu_ix *i) {
  fu_dtype rt = op->results[0]->type.dtype, ct = fu_dtype_is_float(rt) ? FU_DT_F64 : FU_DT_I64;
  fu_kval *x = cast_to(L, emit_ix(L, i), ct);
  fu_kval *start = cast_to(L, eval(L, op->operands[0], NULL), ct);
  fu_kval *step = cast_to(L, eval(L, op->operands[1], NULL), ct);
  fu_kval *p = x && start && step ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_MUL, ct, x, step)) : NULL;
  return cast_to(L, p ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_ADD, ct, start, p)) : NULL, rt);
}

static fu_kval *eval(rl *L, const fu_value *v, const fu_ix *const *c) {
  if (L->failed) return NULL;
  if (!fu_type_is_tensor(&v->type)) c = NULL;
  fu_kval *kv = memo_get(L, v, c);
  if (kv) return kv;
  bool input = false;
  for (uint32_t i = 0; i < L->seg->n_operands; i++)
    if (L->seg->operands[i] == v) input = true;
  const fu_op *op = v->def;
  if (v->is_literal) {
    kv = literal(L, v);
  } else if (input && !c) {
    if (!(kv = L->sparam[v->id])) fail(L, L->seg->loc, "a scalar input without a parameter");
  } else if (input) {
    const fu_ix *off = fu_igraph_offset(L->g, v, c);
    fu_kval *at = off ? emit_ix(L, off) : NULL;
    if (!off) fail(L, L->seg->loc, "a load cannot be indexed");
    if (at && !fu_kb_load(&L->b, vname(v), L->tparam[v->id], at, 1, v->type.dtype, &kv)) chk(L, NULL);
  } else if (op && op->parent == L->seg->u.segment.body && c) {
    const fu_op_info *info = fu_op_info_of(op->kind);
    if (fu_op_has(op->kind, FU_OF_POINTWISE)) {
      kv = pointwise(L, op, c);
    } else if (info->cls == FU_OC_FULL) {
      kv = cast_to(L, eval(L, op->operands[0], NULL), v->type.dtype);
    } else if (info->cls == FU_OC_IOTA && v->type.rank == 1) {
      kv = iota_at(L, op, c[0]);
    } else if (info->cls == FU_OC_BROADCAST_IN_DIM || info->cls == FU_OC_BROADCAST || info->cls == FU_OC_EXPAND ||
               info->cls == FU_OC_RESHAPE || info->cls == FU_OC_PERMUTE || info->cls == FU_OC_SQUEEZE) {
      const fu_ix **xc = fu_igraph_back_map(L->g, op, 0, c);
      const fu_ix *const *t = xc ? fu_igraph_intern_coords(L->g, xc, (uint32_t)op->operands[0]->type.rank) : NULL;
      kv = t ? eval(L, op->operands[0], t) : NULL;
      if (!t) fail(L, op->loc, "a view cannot be indexed");
    } else {
      char what[96];
      snprintf(what, sizeof what, "'%s' is not reached at the coordinates the kernel has", info->name);
      fail(L, op->loc, what);
    }
  } else {
    fail(L, L->seg->loc, "a value is not reached by the loop domain");
  }
  if (kv) memo_put(L, v, c, kv);
  return kv;
}

/* ---- reductions ------------------------------------------------------------------------ */

static fu_dtype acc_dtype(const fu_op *op) {
  fu_dtype t = op->results[0]->type.dtype;
  return fu_dtype_is_float(t) ? compute_of(t) : FU_DT_I64;
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

/* A reduction's state: one accumulator, or a Welford (mean, m2, count). */
typedef fu_kval *rstate[FU_WELFORD_PARTS];

static uint32_t parts(const fu_op *op) { return fu_welford_op(op) ? FU_WELFORD_PARTS : 1; }

/* out = a combined with b (out may alias a). */
static void combine_state(rl *L, const fu_op *op, fu_kval *const *a, fu_kval *const *b, fu_kval **out) {
  for (uint32_t p = 0; p < parts(op); p++)
    if (!a[p] || !b[p]) {
      out[0] = NULL;
      return;
    }
  if (!fu_welford_op(op)) out[0] = combine(L, op, a[0], b[0]);
  else if (!fu_welford_combine(&L->b, a, b, out)) out[0] = chk(L, NULL);
}

/* Every part of every state of `acc` read into v. */
static void read_states(rl *L, rstate *acc, rstate *v) {
  for (uint32_t j = 0; j < L->ri.n_ops; j++)
    for (uint32_t p = 0; p < parts(L->ri.ops[j]); p++) v[j][p] = chk(L, fu_kb_read(&L->b, NULL, acc[j][p]));
}

/* One mutable state per reduction, named `prefix<j>` (Welford parts
 * mean<j>, m2_<j>, count<j>, after the prefix unless it is "acc"), set to
 * the reduction's identity. */
static void new_accumulators(rl *L, const char *prefix, rstate *acc) {
  static const char *const wn[FU_WELFORD_PARTS] = {"mean", "m2_", "count"};
  for (uint32_t j = 0; j < L->ri.n_ops && !L->failed; j++) {
    const fu_op *op = L->ri.ops[j];
    rstate id = {NULL};
    if (!fu_welford_op(op)) id[0] = identity(L, op);
    else if (!fu_welford_identity(&L->b, acc_dtype(op), id)) chk(L, NULL);
    for (uint32_t p = 0; p < parts(op) && !L->failed; p++) {
      char nm[32];
      if (fu_welford_op(op)) snprintf(nm, sizeof nm, "%s%s%u", strcmp(prefix, "acc") ? prefix : "", wn[p], j);
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

/* Stores every output whose coordinates do (full-size outputs, inside the
 * accumulation) or do not (reduced outputs, in the epilogue) depend on a
 * reduced axis. */
static void store_outputs(rl *L, bool reduced) {
  const fu_segment_info *si = &L->seg->u.segment;
  for (uint32_t i = 0; i < si->n_outputs && !L->failed; i++) {
    const fu_value *o = si->outputs[i];
    const fu_ix *const *c = fu_igraph_coords(L->g, o);
    const fu_ix *off = c ? fu_igraph_offset(L->g, o, c) : NULL;
    if (!fu_type_is_tensor(&o->type) || !off) {
      fail(L, L->seg->loc, "an output is not reached by the loop domain");
      return;
    }
    if (on_reduced(L, off) != reduced) continue;
    fu_kval *val = cast_to(L, eval(L, o, c), o->type.dtype), *at = emit_ix(L, off);
    if (val && at && !fu_kb_store(&L->b, L->tparam[o->id], at, &val, 1)) chk(L, NULL);
  }
}

/* One accumulation at the innermost point, under `cond` (none when NULL):
 * every reduction's operand combined into its accumulator, and the
 * full-size outputs stored. */
static void accumulate_point(rl *L, fu_kval *cond, rstate *acc) {
  fu_kbuilder saved = open_if(L, cond);
  for (uint32_t j = 0; j < L->ri.n_ops && !L->failed; j++) {
    const fu_op *op = L->ri.ops[j];
    const fu_value *x = op->operands[0];
    fu_kval *v = cast_to(L, eval(L, x, fu_igraph_coords(L->g, x)), acc_dtype(op));
    fu_kval *sh = L->shift[j] && v ? chk(L, fu_kb_read(&L->b, NULL, L->shift[j])) : NULL;
    if (sh) v = chk(L, fu_kb_binary(&L->b, NULL, FU_OP_SUB, v->dtype, v, sh));
    rstate a = {NULL}, n = {NULL};
    for (uint32_t p = 0; p < parts(op); p++) a[p] = chk(L, fu_kb_read(&L->b, NULL, acc[j][p]));
    if (!fu_welford_op(op)) n[0] = combine(L, op, a[0], v);
    else if (v && a[0] && a[1] && a[2] && !fu_welford_update(&L->b, a, v, n)) chk(L, NULL);
    for (uint32_t p = 0; p < parts(op); p++)
      if (n[p] && !fu_kb_assign(&L->b, acc[j][p], n[p])) chk(L, NULL);
  }
  store_outputs(L, true);
  L->b = saved;
}

/* The predicates, split by whether they depend on variable `lane`: the
 * conjunction of those that do not (*ind), and of those that do, taken at
 * lane `last` (*full).  False when a lane-dependent one is not affine,
 * increasing along the lane (then lane `last` in range does not put the
 * lanes before it in range). */
static bool lane_guards(rl *L, const fu_ix *lane, int64_t last, fu_kval **ind, fu_kval **full) {
  *ind = *full = NULL;
  bool ok = true;
  for (uint32_t i = 0; i < fu_igraph_num_predicates(L->g) && !L->failed; i++) {
    const fu_ix *idx, *ext;
    fu_igraph_predicate(L->g, i, &idx, &ext);
    bool dep = fu_ix_subst(L->ix, idx, lane, fu_ix_const(L->ix, 0)) != idx;
    fu_ix_lane a = dep ? fu_ix_lane_analyze(idx, lane, last + 1) : (fu_ix_lane){.ok = true};
    if (dep && (!a.ok || a.stride < 0)) ok = false;
    uint32_t mark = L->n_ixv;
    if (dep) ixv_set(L, lane, emit_ix(L, fu_ix_const(L->ix, last)));
    fu_kval *x = emit_ix(L, idx), *e = emit_ix(L, ext);
    fu_kval *p = x && e ? chk(L, fu_kb_binary(&L->b, "in_range", FU_OP_LT, FU_DT_BOOL, x, e)) : NULL;
    L->n_ixv = mark;
    fu_kval **to = dep ? full : ind;
    *to = *to && p ? chk(L, fu_kb_binary(&L->b, "in_range", FU_OP_LOGICAL_AND, FU_DT_BOOL, *to, p)) : p;
  }
  return ok;
}

/* The innermost vectorize loop of the reduced axes (loop `i`, lane
 * variable of constant width V), unrolled:
 *
 *   if (lane-independent guards) {
 *     if (lane V-1 in range) {
 *       vector loads of the inputs that allow them (docs/passes.md)
 *       for lane 0..V-1: accumulate (lanes in order: deterministic)
 *     } else {
 *       for lane 0..V-1: if (lane in range) accumulate
 *     }
 *   }
 */
static void accumulate_vector(rl *L, uint32_t i, rstate *acc) {
  const fu_ix *lane = fu_igraph_loop_var(L->g, i);
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
      uint32_t mark = L->n_ixv;
      ixv_set(L, lane, lanes[0]);
      fu_kval *at = emit_ix(L, x->offset);
      L->n_ixv = mark;
      if (at && !fu_kb_load(&L->b, vname(x->value), L->tparam[x->value->id], at, (uint32_t)V, x->value->type.dtype,
                            &vals[(size_t)a * MAX_LANES]))
        chk(L, NULL);
    }
    for (int64_t j = 0; j < V && !L->failed; j++) {
      uint32_t mark = L->n_ixv;
      ixv_set(L, lane, lanes[j]);
      L->n_memo = 0;
      for (uint32_t a = 0; a < n_acc; a++)
        if (vals[(size_t)a * MAX_LANES])
          memo_put(L, fu_igraph_access(L->g, a)->value, (const fu_ix *const *)fu_igraph_access(L->g, a)->coords,
                   vals[(size_t)a * MAX_LANES + (size_t)j]);
      accumulate_point(L, NULL, acc);
      L->n_ixv = mark;
    }
    fu_mem_free(&L->m->alloc, vals, ((size_t)n_acc * MAX_LANES + 1) * sizeof *vals);
    L->b = level;
  }
  if (!whole || br) {
    /* the partial last vector (or lanes that cannot be told apart): lane
     * by lane, each under its guards */
    if (br) L->b = fu_kbuilder_at(L->m, L->k, &br->u.branch.else_body);
    for (int64_t j = 0; j < V && !L->failed; j++) {
      uint32_t mark = L->n_ixv;
      ixv_set(L, lane, lanes[j]);
      L->n_memo = 0;
      accumulate_point(L, guards(L, true), acc);
      L->n_ixv = mark;
    }
  }
  L->b = outer;
}

/* The reduced serial loops from loop `i` inward, then one accumulation. */
static void accumulate(rl *L, uint32_t i, rstate *acc) {
  if (L->failed) return;
  const fu_schedule *s = L->s;
  while (i < s->n_loops && s->loops[i].ptype != FU_PT_SERIAL && s->loops[i].ptype != FU_PT_UNROLL &&
         s->loops[i].ptype != FU_PT_VECTORIZE)
    i++;
  uint32_t mark = L->n_ixv;
  fu_kbuilder saved = L->b;
  if (i + 1 == s->n_loops && s->loops[i].ptype == FU_PT_VECTORIZE) {
    accumulate_vector(L, i, acc);
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
    L->n_memo = 0;
    accumulate_point(L, guards(L, true), acc);
  }
  L->n_ixv = mark;
  L->b = saved;
}

/* Shared arrays `tag<j>` (Welford parts `tag<j>_<part>`) of n slots per
 * state of v, each state stored at slot `at` (none when at is NULL). */
static void new_slots(rl *L, const char *tag, int64_t n, fu_kval *at, rstate *v, rstate *arr) {
  for (uint32_t j = 0; j < L->ri.n_ops && !L->failed; j++)
    for (uint32_t q = 0; q < parts(L->ri.ops[j]) && !L->failed; q++) {
      char nm[32];
      if (q) snprintf(nm, sizeof nm, "%s%u_%u", tag, j, q);
      else snprintf(nm, sizeof nm, "%s%u", tag, j);
      arr[j][q] = chk(L, fu_kval_new_array(L->m, L->k, nm, acc_dtype(L->ri.ops[j]), FU_MEM_SHARED, n));
      if (arr[j][q] && at && !fu_kb_store(&L->b, arr[j][q], at, &v[j][q], 1)) chk(L, NULL);
    }
}

/* Reduction j's state at slot `at` of arrays arr, loaded and combined into
 * v (or copied to v when `first`). */
static void load_combine(rl *L, uint32_t j, fu_kval *const *arr, fu_kval *at, bool first, fu_kval **v) {
  rstate p = {NULL};
  for (uint32_t q = 0; q < parts(L->ri.ops[j]); q++)
    if (at && !fu_kb_load(&L->b, NULL, arr[q], at, 1, acc_dtype(L->ri.ops[j]), &p[q])) chk(L, NULL);
  if (first) memcpy(v, p, sizeof p);
  else combine_state(L, L->ri.ops[j], v, p, v);
}

/* The combine across threadIdx.y (the reduced thread axis `ty` of an
 * outer reduction, threadIdx.x keeping columns): every thread stores its
 * value to slot [ty][tx] of shared memory, sync, and every thread combines
 * its column's slots in threadIdx.y order. */
static void combine_rows(rl *L, rstate *v, const fu_ix *ty, bool in_loop, const char *tag) {
  uint32_t nx = L->k->block[0], ny = L->k->block[1];
  const fu_ix *kx = L->kx ? L->kx : fu_ix_const(L->ix, 0);
  fu_kval *at = emit_ix(L, fu_ix_add(L->ix, fu_ix_mul(L->ix, ty, fu_ix_const(L->ix, nx)), kx));
  rstate arr[FU_MAX_SEG_REDUCTIONS];
  new_slots(L, tag, (int64_t)(nx * ny), at, v, arr);
  if (!L->failed && !fu_kb_sync(&L->b)) chk(L, NULL);
  for (uint32_t j = 0; j < L->ri.n_ops && !L->failed; j++)
    for (uint32_t w = 0; w < ny && !L->failed; w++)
      load_combine(L, j, arr[j], emit_ix(L, fu_ix_add(L->ix, fu_ix_const(L->ix, (int64_t)w * nx), kx)), w == 0, v[j]);
  if (in_loop && !fu_kb_sync(&L->b)) chk(L, NULL);
}

/* The combine across threadIdx.x of the values v (one per reduction),
 * in place: the butterfly (reduce=warp|block|grid), then for block and
 * grid lane 0 of each warp stores to a shared slot, sync, and every thread
 * combines its row's slots in slot order.  `tag` names the slot arrays. */
static void combine_threads(rl *L, rstate *v, const fu_ix *tx, bool in_loop, const char *tag) {
  if (L->ty_red) {
    combine_rows(L, v, tx, in_loop, tag);
    return;
  }
  /* reduce=warp: the row's threads are a power of two (2..32) of one
   * warp, so masks below that count stay within the row */
  uint32_t top = L->s->reduce == FU_RM_WARP && L->k->block[0] < 32 ? L->k->block[0] / 2 : 16;
  for (uint32_t mask = top; mask >= 1 && !L->failed; mask /= 2)
    for (uint32_t j = 0; j < L->ri.n_ops; j++) {
      rstate o = {NULL};
      for (uint32_t p = 0; p < parts(L->ri.ops[j]); p++)
        o[p] = v[j][p] ? chk(L, fu_kb_shfl_xor(&L->b, NULL, v[j][p], mask)) : NULL;
      combine_state(L, L->ri.ops[j], v[j], o, v[j]);
    }
  if ((L->s->reduce == FU_RM_BLOCK || L->s->reduce == FU_RM_GRID) && !L->failed) {
    uint32_t warps = L->k->block[0] / 32, rows = L->k->block[1];
    const fu_ix *ty = NULL;
    for (uint32_t i = 0; i < L->s->n_loops; i++)
      if (L->s->loops[i].ptype == FU_PT_THREAD_Y) ty = fu_igraph_loop_var(L->g, i);
    const fu_ix *row = fu_ix_mul(L->ix, ty ? ty : fu_ix_const(L->ix, 0), fu_ix_const(L->ix, warps));
    const fu_ix *slot = fu_ix_add(L->ix, row, fu_ix_div(L->ix, tx, fu_ix_const(L->ix, 32)));
    fu_kval *lane = emit_ix(L, fu_ix_mod(L->ix, tx, fu_ix_const(L->ix, 32)));
    fu_kval *zero = emit_ix(L, fu_ix_const(L->ix, 0)), *at = emit_ix(L, slot);
    fu_kval *first = lane && zero ? chk(L, fu_kb_binary(&L->b, "lane0", FU_OP_EQ, FU_DT_BOOL, lane, zero)) : NULL;
    rstate arr[FU_MAX_SEG_REDUCTIONS];
    fu_kbuilder saved = open_if(L, first);
    new_slots(L, tag, (int64_t)(warps * rows), at, v, arr);
    L->b = saved;
    if (!fu_kb_sync(&L->b)) chk(L, NULL);
    for (uint32_t j = 0; j < L->ri.n_ops && !L->failed; j++)
      for (uint32_t w = 0; w < warps && !L->failed; w++)
        load_combine(L, j, arr[j], emit_ix(L, fu_ix_add(L->ix, row, fu_ix_const(L->ix, w))), w == 0, v[j]);
    /* the next iteration of a kept loop overwrites the slots */
    if (in_loop && !fu_kb_sync(&L->b)) chk(L, NULL);
  }
}

/* reduce=grid: the blocks of a row (blockIdx.y) combine through global
 * workspaces (docs/ir.md, "Reductions across blocks"):
 *
 *   thread 0: partials[row * gridDim.y + blockIdx.y] = v; fence gpu
 *   sync; thread 0: old = atom.add sem[row], 1; last = old == gridDim.y - 1
 *   (shared through a flag); sync
 *   if (last) {                        -- the builder is left in here
 *     fence gpu
 *     thread t combines partials t, t + blockDim.x, ... in order, then the
 *     block combine; thread 0 resets sem[row] to 0
 *   }
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
  for (uint32_t j = 0; j < L->ri.n_ops; j++)
    if (fu_welford_op(L->ri.ops[j])) {
      fail(L, L->s->loc, "reduce=grid of a var/var_mean (Welford states do not cross blocks yet)");
      return;
    }
  /* the kept positions of a block: its threadIdx.x columns (outer), or 1 */
  uint32_t nk = L->ty_red ? L->k->block[0] : 1, nr = L->k->block[L->ty_red ? 1 : 0];
  fu_lexpr *gx = L->k->grid[0] ? L->k->grid[0] : fu_lexpr_const(L->m, 1);
  fu_lexpr *gy = L->k->grid[1];
  fu_lexpr *gk = gx && nk > 1 ? fu_lexpr_binary(L->m, FU_LX_MUL, gx, fu_lexpr_const(L->m, nk)) : gx;
  fu_lexpr *size = gk && gy ? fu_lexpr_binary(L->m, FU_LX_MUL, gk, gy) : NULL;
  if (!size) {
    chk(L, NULL);
    return;
  }
  fu_kval *part[FU_MAX_SEG_REDUCTIONS];
  for (uint32_t j = 0; j < L->ri.n_ops && !L->failed; j++) {
    char nm[32];
    snprintf(nm, sizeof nm, "partials%u", j);
    part[j] = chk(L, fu_kernel_workspace_param(L->m, L->k, nm, acc_dtype(L->ri.ops[j]), size, false));
  }
  fu_kval *sem = chk(L, fu_kernel_workspace_param(L->m, L->k, "sem", FU_DT_I32, gx, true));
  fu_kval *flag = chk(L, fu_kval_new_array(L->m, L->k, "last_block", FU_DT_I32, FU_MEM_SHARED, 1));
  fu_kval *bx = chk(L, fu_kb_special(&L->b, NULL, FU_SP_CTAID_X, L->idx));
  fu_kval *by = chk(L, fu_kb_special(&L->b, NULL, FU_SP_CTAID_Y, L->idx));
  fu_kval *gdy = chk(L, fu_kb_special(&L->b, NULL, FU_SP_NCTAID_Y, L->idx));
  fu_kval *t = emit_ix(L, tx), *zero = emit_ix(L, fu_ix_const(L->ix, 0)), *one = emit_ix(L, fu_ix_const(L->ix, 1));
  if (L->failed || !t || !zero || !one) return;
  /* the output group of this thread: blockIdx.x * nk + its kept column */
  fu_kval *k0 = L->ty_red && L->kx ? emit_ix(L, L->kx) : zero, *nkv = emit_ix(L, fu_ix_const(L->ix, nk));
  fu_kval *slot = k0 && nkv ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_MUL, L->idx, bx, nkv)) : NULL;
  slot = slot ? chk(L, fu_kb_binary(&L->b, "group", FU_OP_ADD, L->idx, slot, k0)) : NULL;
  fu_kval *base = slot ? chk(L, fu_kb_binary(&L->b, "row_base", FU_OP_MUL, L->idx, slot, gdy)) : NULL;
  fu_kval *mine = base ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_ADD, L->idx, base, by)) : NULL;
  fu_kval *t0 = chk(L, fu_kb_binary(&L->b, "thread0", FU_OP_EQ, FU_DT_BOOL, t, zero));
  fu_kval *k00 = k0 ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_EQ, FU_DT_BOOL, k0, zero)) : NULL;
  fu_kval *first = t0 && k00 ? chk(L, fu_kb_binary(&L->b, "first", FU_OP_LOGICAL_AND, FU_DT_BOOL, t0, k00)) : NULL;
  if (!mine || !first) return;
  fu_kbuilder saved = open_if(L, t0);
  for (uint32_t j = 0; j < L->ri.n_ops && !L->failed; j++)
    if (!fu_kb_store(&L->b, part[j], mine, &v[j][0], 1)) chk(L, NULL);
  if (!fu_kb_fence(&L->b, FU_FENCE_GPU)) chk(L, NULL);
  L->b = saved;
  if (!fu_kb_sync(&L->b)) chk(L, NULL);
  saved = open_if(L, first);
  fu_kval *old = chk(L, fu_kb_atom_add(&L->b, "arrived", sem, bx, cast_to(L, one, FU_DT_I32)));
  fu_kval *lastm1 = chk(L, fu_kb_binary(&L->b, NULL, FU_OP_SUB, FU_DT_I32, cast_to(L, gdy, FU_DT_I32), cast_to(L, one, FU_DT_I32)));
  fu_kval *is_last = old && lastm1 ? chk(L, fu_kb_binary(&L->b, "is_last", FU_OP_EQ, FU_DT_BOOL, old, lastm1)) : NULL;
  fu_kval *f = cast_to(L, is_last, FU_DT_I32);
  fu_kval *z = emit_ix(L, fu_ix_const(L->ix, 0));
  if (f && z && !fu_kb_store(&L->b, flag, z, &f, 1)) chk(L, NULL);
  L->b = saved;
  if (!fu_kb_sync(&L->b)) chk(L, NULL);
  fu_kval *fl = NULL;
  if (!L->failed && !fu_kb_load(&L->b, NULL, flag, zero, 1, FU_DT_I32, &fl)) chk(L, NULL);
  fu_kval *zi = chk(L, fu_kb_const_i(&L->b, NULL, FU_DT_I32, 0));
  fu_kval *last = fl && zi ? chk(L, fu_kb_binary(&L->b, "last", FU_OP_NE, FU_DT_BOOL, fl, zi)) : NULL;
  if (!last) return;
  fu_kinst *br = fu_kb_if(&L->b, last);
  if (!br) {
    chk(L, NULL);
    return;
  }
  L->b = fu_kbuilder_at(L->m, L->k, &br->u.branch.then_body);
  if (!fu_kb_fence(&L->b, FU_FENCE_GPU)) chk(L, NULL);
  /* thread t: partials t, t + blockDim.x, ... of the row, in order */
  rstate acc[FU_MAX_SEG_REDUCTIONS];
  new_accumulators(L, "gacc", acc);
  fu_kval *step = emit_ix(L, fu_ix_const(L->ix, nr));
  fu_kinst *lp = step && !L->failed ? fu_kb_for(&L->b, "g", t, gdy, step, FU_LOOP_SERIAL) : NULL;
  if (!lp) {
    chk(L, NULL);
    return;
  }
  fu_kbuilder here = L->b;
  L->b = fu_kbuilder_at(L->m, L->k, &lp->u.loop.body);
  fu_kval *at = chk(L, fu_kb_binary(&L->b, NULL, FU_OP_ADD, L->idx, base, lp->results[0]));
  for (uint32_t j = 0; j < L->ri.n_ops && at && !L->failed; j++) {
    fu_kval *p = NULL, *a = NULL;
    if (!fu_kb_load(&L->b, NULL, part[j], at, 1, acc_dtype(L->ri.ops[j]), &p)) chk(L, NULL);
    a = p ? chk(L, fu_kb_read(&L->b, NULL, acc[j][0])) : NULL;
    fu_kval *n = combine(L, L->ri.ops[j], a, p);
    if (n && !fu_kb_assign(&L->b, acc[j][0], n)) chk(L, NULL);
  }
  L->b = here;
  read_states(L, acc, v);
  combine_threads(L, v, tx, false, "grid_partials");
  saved = open_if(L, first);
  fu_kval *zs = chk(L, fu_kb_const_i(&L->b, NULL, FU_DT_I32, 0));
  if (zs && !fu_kb_store(&L->b, sem, bx, &zs, 1)) chk(L, NULL);
  L->b = saved;
}

/* The combine across the threads (and blocks) of every reduction, then
 * the epilogue under the kept guards, on threadIdx.x == 0 when the
 * threads of a row share it. */
static void finish(rl *L, rstate *acc, const fu_ix *tx, bool in_loop) {
  rstate v[FU_MAX_SEG_REDUCTIONS];
  read_states(L, acc, v);
  if (L->s->reduce != FU_RM_SERIAL) combine_threads(L, v, tx, in_loop, "warp_partials");
  fu_kbuilder outer = L->b;
  if (L->s->reduce == FU_RM_GRID && !L->failed) {
    if (in_loop) fail(L, L->s->loc, "reduce=grid inside a kept serial loop");
    else combine_grid(L, v, tx);
  }
  if (L->failed) return;
  L->n_memo = 0;
  for (uint32_t j = 0; j < L->ri.n_ops && !L->failed; j++) {
    const fu_op *op = L->ri.ops[j];
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
  L->b = outer;
}

/* Welford ops accumulate x - shift, the shift being the first element of
 * the output's reduced slice (every thread of the slice loads it): the
 * running means then stay near 0 and keep their precision for inputs
 * with a large mean (x = 1e4 + randn), which plain f32 Welford loses.
 * The reduced loop variables are bound to 0 for that one load; an empty
 * or out-of-range slice keeps shift 0. */
static void welford_shifts(rl *L) {
  bool any = false;
  for (uint32_t j = 0; j < L->ri.n_ops; j++) {
    L->shift[j] = NULL;
    any |= fu_welford_op(L->ri.ops[j]);
  }
  if (!any || L->failed) return;
  uint32_t mark = L->n_ixv;
  fu_kval *zero = emit_ix(L, fu_ix_const(L->ix, 0));
  for (uint32_t i = 0; i < L->n_rvars && zero; i++) ixv_set(L, L->rvars[i], zero);
  for (uint32_t j = 0; j < L->ri.n_ops && !L->failed; j++) {
    const fu_op *op = L->ri.ops[j];
    char nm[16];
    snprintf(nm, sizeof nm, "shift%u", j);
    fu_kval *z = chk(L, fu_kb_const_f(&L->b, NULL, acc_dtype(op), 0.0));
    if (fu_welford_op(op) && (L->shift[j] = chk(L, fu_kval_new_mutable(L->m, L->k, nm, acc_dtype(op)))) && z &&
        !fu_kb_assign(&L->b, L->shift[j], z))
      chk(L, NULL);
  }
  L->n_memo = 0;
  /* the guards hold at reduced coordinate 0 unless a reduced extent is 0 */
  fu_kval *cond = guards(L, true);
  const fu_value *ref = L->s->reference;
  for (int32_t d = 0; d < ref->type.rank && !L->failed; d++) {
    if (!L->ri.reduced_dim[d]) continue;
    const fu_ix *e = fu_ix_extent(L->ix, ref->type.dims[d]);
    int64_t c = 0;
    if (fu_ix_is_const(e, &c)) {
      if (c > 0) continue;
      L->n_ixv = mark; /* an empty reduction: no element to load */
      return;
    }
    fu_kval *ek = emit_ix(L, e), *zk = emit_ix(L, fu_ix_const(L->ix, 0));
    fu_kval *p = ek && zk ? chk(L, fu_kb_binary(&L->b, "nonempty", FU_OP_LT, FU_DT_BOOL, zk, ek)) : NULL;
    cond = cond && p ? chk(L, fu_kb_binary(&L->b, "nonempty", FU_OP_LOGICAL_AND, FU_DT_BOOL, cond, p)) : p;
  }
  fu_kbuilder saved = open_if(L, cond);
  for (uint32_t j = 0; j < L->ri.n_ops && !L->failed; j++) {
    const fu_value *x = L->ri.ops[j]->operands[0];
    fu_kval *v = L->shift[j] ? cast_to(L, eval(L, x, fu_igraph_coords(L->g, x)), L->shift[j]->dtype) : NULL;
    /* an infinite or NaN first element would make every x - shift NaN: shift 0 */
    fu_kval *fin = v ? chk(L, fu_kb_math(&L->b, NULL, FU_OP_ISFINITE, FU_DT_BOOL, &v, 1)) : NULL;
    fu_kval *z = fin ? chk(L, fu_kb_const_f(&L->b, NULL, v->dtype, 0.0)) : NULL;
    fu_kval *args[3] = {fin, v, z};
    v = z ? chk(L, fu_kb_math(&L->b, NULL, FU_OP_WHERE, v->dtype, args, 3)) : NULL;
    if (v && !fu_kb_assign(&L->b, L->shift[j], v)) chk(L, NULL);
  }
  L->b = saved;
  L->n_memo = 0;
  L->n_ixv = mark;
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
    uint32_t mark = L->n_ixv;
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
    L->n_ixv = mark;
    L->b = saved;
    return;
  }
  rstate acc[FU_MAX_SEG_REDUCTIONS];
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
  int64_t width = 1;
  const fu_ix *lane = fu_igraph_lane_var(L->g, &width);
  bool last = L->s->n_loops && L->s->loops[L->s->n_loops - 1].ptype == FU_PT_VECTORIZE;
  for (uint32_t i = 0; lane && width > 1 && last && i < fu_igraph_num_accesses(L->g); i++) {
    const fu_iaccess *a = fu_igraph_access(L->g, i);
    if (a->value == v && !a->is_store && a->mode == FU_AM_VECTOR) return true;
  }
  return false;
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
  if (s->reduce != FU_RM_SERIAL && (L->k->block[0] * L->k->block[1]) % 32 != 0)
    return fail(L, s->loc, "a block that is not whole warps");
  return true;
}

fu_status fu_lower_reduction(fu_fusion *f, fu_op *seg, fu_diag_engine *diag, fu_kernel **out) {
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
  L->ri.reduced_axis = L->ra;
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
      L->b = fu_kbuilder_at(m, L->k, &L->k->body);
      if (make_params(L) && make_launch(L)) kept_from(L, 0, false);
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
  fu_igraph_free(L->g);
  fu_mem_free(&alloc, L, sizeof *L);
  return st;
}
