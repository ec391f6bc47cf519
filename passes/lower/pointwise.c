/* fuser: lowering a scheduled pointwise segment to kernel IR.
 *
 * The kernel is built outside in:
 *   - parameters (inputs, outputs, scalars; extents and strides on demand);
 *   - the launch: block = the threadIdx axes, grid = the blockIdx axes'
 *     extents (capped at the launch limit, with a grid-stride loop when the
 *     extent may exceed it);
 *   - one loop or special register per loop axis, in loop order;
 *   - at the innermost point, the predicates of the guarded splits; with a
 *     vectorize axis of width V: `if (every lane is in range) { vector
 *     body } else { for each lane: if (in range) { scalar body } }`;
 *   - a body: every segment output evaluated at its coordinates, demand
 *     driven: a value at coordinates c is its op applied to the operands at
 *     the coordinates the op's back map gives (fuser/index_graph.h), memoized
 *     by (value, coordinates, lane), so shared subexpressions are computed
 *     once per lane and an input read at two different indices is two
 *     loads.  Inputs load as vectors, once for all lanes (uniform), or per
 *     lane, as the index graph's lane analysis allows and the schedule asks.
 * Math follows the CPU interpreter's dtype rules: f16/bf16 compute in f32
 * and round to their dtype after each op; integer ops compute in i64
 * (wrapping) and convert to the result; comparisons compute in the
 * promoted operand dtype.  Index math is in the kernel's index dtype. */
#include <stdio.h>
#include <string.h>

#include "fuser/index_graph.h"
#include "fuser/lower.h"
#include "fuser/schedule.h"
#include "lower_internal.h"

#include "pointwise_internal.h"

static bool oom(lw *L) {
  if (!L->failed) fu_error(L->diag, L->seg->loc, "out of memory while lowering '@%s'", L->seg->u.segment.name);
  L->failed = true;
  return false;
}

static fu_kval *chk(lw *L, fu_kval *v) {
  if (!v) oom(L);
  return v;
}

static const char *vname(const fu_value *v) { return v && v->name ? v->name : "?"; }

/* ---- scopes and index expressions (lower_internal.h) ------------------------------ */

static uint32_t scope_mark(const lw *L) { return fu_lix_mark(&L->lix); }

static void scope_pop(lw *L, uint32_t mark) { fu_lix_pop(&L->lix, mark); }

static void ixv_set(lw *L, const fu_ix *x, fu_kval *kv) {
  fu_lix_set(&L->lix, x, kv);
  L->failed |= L->lix.failed;
}

/* The kernel value of index expression x, emitted once per scope. */
static fu_kval *emit_ix(lw *L, const fu_ix *x) {
  if (L->failed) return NULL;
  fu_kval *kv = fu_lix_emit(&L->lix, x);
  L->failed |= L->lix.failed;
  return kv;
}

static fu_kval *const_idx(lw *L, int64_t v) { return emit_ix(L, fu_ix_const(L->ix, v)); }

/* x with the lane variable replaced by lane j's value. */
static const fu_ix *at_lane(lw *L, const fu_ix *x, uint32_t j) {
  if (!L->lane || !x) return x;
  return fu_igraph_resize_at_lane(L->g, fu_ix_subst(L->ix, x, L->lane, L->lane_val[j]), L->lane_val[j]);
}

/* ---- values ------------------------------------------------------------------------------ */

static uint64_t memo_hash(const fu_value *v, const fu_ix *const *c, uint32_t lane) {
  uint64_t h = (uint64_t)(uintptr_t)v * 0x9e3779b97f4a7c15ull;
  h ^= (uint64_t)(uintptr_t)c + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
  h ^= lane * 0xff51afd7ed558ccdull;
  return h ^ (h >> 29);
}

static fu_kval *memo_get(const lw *L, const fu_value *v, const fu_ix *const *c, uint32_t lane) {
  if (!L->memo_cap) return NULL;
  for (uint32_t j = (uint32_t)memo_hash(v, c, lane) & (L->memo_cap - 1); L->memo[j].v; j = (j + 1) & (L->memo_cap - 1))
    if (L->memo[j].v == v && L->memo[j].c == c && L->memo[j].lane == lane) return L->memo[j].kv;
  return NULL;
}

static void memo_put(lw *L, const fu_value *v, const fu_ix *const *c, uint32_t lane, fu_kval *kv) {
  if ((L->memo_n + 1) * 2 > L->memo_cap) {
    uint32_t cap = L->memo_cap ? L->memo_cap * 2 : 256;
    memo_ent *n = fu_mem_calloc(&L->alloc, cap, sizeof *n);
    if (!n) {
      oom(L);
      return;
    }
    for (uint32_t i = 0; i < L->memo_cap; i++) {
      if (!L->memo[i].v) continue;
      uint32_t j = (uint32_t)memo_hash(L->memo[i].v, L->memo[i].c, L->memo[i].lane) & (cap - 1);
      while (n[j].v) j = (j + 1) & (cap - 1);
      n[j] = L->memo[i];
    }
    fu_mem_free(&L->alloc, L->memo, L->memo_cap * sizeof *L->memo);
    L->memo = n;
    L->memo_cap = cap;
  }
  uint32_t j = (uint32_t)memo_hash(v, c, lane) & (L->memo_cap - 1);
  while (L->memo[j].v) j = (j + 1) & (L->memo_cap - 1);
  L->memo[j].v = v;
  L->memo[j].c = c;
  L->memo[j].lane = lane;
  L->memo[j].kv = kv;
  L->memo_n++;
}

static void memo_clear(lw *L) {
  if (L->memo_cap) memset(L->memo, 0, L->memo_cap * sizeof *L->memo);
  L->memo_n = 0;
  L->n_casts = 0;
}

static fu_kval *cast_to(lw *L, fu_kval *x, fu_dtype t) {
  if (!x || x->dtype == t) return x;
  return chk(L, fu_kb_unary(&L->b, NULL, FU_OP_CAST, t, x));
}

/* A scalar operand in dtype t, converted once per body: literals are
 * written in t directly where C's conversion is the cast's (float to
 * float, int to int or float), other conversions are cast instructions. */
static fu_kval *literal(lw *L, const fu_value *v);

static fu_kval *scalar_as(lw *L, const fu_value *v, fu_kval *x, fu_dtype t) {
  if (x && x->dtype == t) return x;
  if (!x && v->is_literal && v->type.dtype == t) return literal(L, v);
  const void *key = v->is_literal ? (const void *)v : (const void *)x;
  for (uint32_t i = 0; i < L->n_casts; i++)
    if (L->casts[i].src == key && L->casts[i].out->dtype == t) return L->casts[i].out;
  fu_kval *out = NULL;
  if (v->is_literal && fu_dtype_is_float(t) && fu_dtype_is_float(v->type.dtype))
    out = chk(L, fu_kb_const_f(&L->b, NULL, t, v->literal.f));
  else if (v->is_literal && fu_dtype_is_float(t) && fu_dtype_is_int(v->type.dtype))
    out = chk(L, fu_kb_const_f(&L->b, NULL, t, (double)v->literal.i));
  else if (v->is_literal && t == FU_DT_I64 && fu_dtype_is_int(v->type.dtype))
    out = chk(L, fu_kb_const_i(&L->b, NULL, t, v->literal.i));
  else
    out = cast_to(L, x ? x : literal(L, v), t);
  if (out && L->n_casts < 64) {
    L->casts[L->n_casts].src = key;
    L->casts[L->n_casts++].out = out;
  }
  return out;
}



static fu_kval *eval(lw *L, const fu_value *v, const fu_ix *const *c, uint32_t lane);

static char *lane_name(const fu_value *v, uint32_t lane, uint32_t n_lanes, char *buf, size_t cap) {
  if (n_lanes > 1)
    snprintf(buf, cap, "%s_%u", vname(v), lane);
  else
    snprintf(buf, cap, "%s", vname(v));
  return buf;
}

/* A load of segment input v at coordinates c, in lane `lane`. */
static fu_kval *load(lw *L, const fu_value *v, const fu_ix *const *c, uint32_t lane) {
  fu_kval *p = L->tparam[v->id];
  const fu_ix *off = fu_igraph_offset(L->g, v, c);
  if (!p || !off) {
    if (!L->failed) fu_error(L->diag, L->seg->loc, "cannot index the load of '%%%s'", vname(v));
    L->failed = true;
    return NULL;
  }
  char nm[80];
  fu_amode mode = FU_AM_LANES;
  if (L->vector_ctx) {
    mode = fu_igraph_access_mode(L->g, v, off, NULL);
    const fu_stensor *t = fu_schedule_tensor(L->s, v);
    if (mode == FU_AM_VECTOR && t && t->access == FU_ACCESS_SCALAR) mode = FU_AM_LANES;
  }
  if (mode == FU_AM_VECTOR && L->n_lanes > 1) {
    fu_kval *out[MAX_LANES];
    fu_kval *at = emit_ix(L, at_lane(L, off, 0));
    snprintf(nm, sizeof nm, "%s_", vname(v));
    if (!at || !fu_kb_load(&L->b, nm, p, at, L->n_lanes, v->type.dtype, out)) return at ? chk(L, NULL) : NULL;
    for (uint32_t j = 0; j < L->n_lanes; j++) memo_put(L, v, c, j, out[j]);
    return out[lane];
  }
  if (mode == FU_AM_UNIFORM) {
    fu_kval *at = emit_ix(L, at_lane(L, off, 0)), *out = NULL;
    if (!at || !fu_kb_load(&L->b, vname(v), p, at, 1, v->type.dtype, &out)) return at ? chk(L, NULL) : NULL;
    for (uint32_t j = 0; j < L->n_lanes; j++) memo_put(L, v, c, j, out);
    return out;
  }
  fu_kval *at = emit_ix(L, at_lane(L, off, lane)), *out = NULL;
  if (!at || !fu_kb_load(&L->b, lane_name(v, lane, L->n_lanes, nm, sizeof nm), p, at, 1, v->type.dtype, &out))
    return at ? chk(L, NULL) : NULL;
  return out;
}

static fu_kval *literal(lw *L, const fu_value *v) {
  fu_dtype t = v->type.dtype;
  if (fu_dtype_is_float(t)) return chk(L, fu_kb_const_f(&L->b, NULL, t, v->literal.f));
  if (fu_dtype_is_bool(t)) return chk(L, fu_kb_const_b(&L->b, NULL, v->literal.b));
  return chk(L, fu_kb_const_i(&L->b, NULL, t, v->literal.i));
}

/* The coordinates op's operand i is needed at (NULL for a scalar), or
 * false after a located error. */
static bool operand_coords(lw *L, const fu_op *op, uint32_t i, const fu_ix *const *c, const fu_ix *const **out) {
  const fu_value *x = op->operands[i];
  *out = NULL;
  if (!fu_type_is_tensor(&x->type)) return true;
  const fu_ix **xc = fu_igraph_back_map(L->g, op, i, c);
  *out = xc ? fu_igraph_intern_coords(L->g, xc, (uint32_t)x->type.rank) : NULL;
  if (*out) return true;
  if (!L->failed)
    fu_error(L->diag, op->loc, "'%s' cannot be indexed from the loop domain", fu_op_info_of(op->kind)->name);
  L->failed = true;
  return false;
}

/* A pointwise op on kernel values, in the interpreter's compute dtype
 * (lower_internal.h); scalar operands converted once per body. */
static fu_kval *pointwise(lw *L, const fu_op *op, fu_kval **args, char *name) {
  fu_kval *a[3];
  for (uint32_t i = 0; i < op->n_operands && i < 3; i++) {
    fu_dtype want = fu_lower_operand_dtype(op, i);
    if (!fu_type_is_tensor(&op->operands[i]->type)) {
      if (!(a[i] = scalar_as(L, op->operands[i], args[i], want))) return NULL;
      continue;
    }
    if (!(a[i] = cast_to(L, args[i], want))) return NULL;
  }
  return chk(L, fu_lower_pointwise_math(&L->b, op, a, name));
}

/* How many of op's operands are evaluated before it (in operand order):
 * the tensor operands of pointwise ops (not the literals, which are
 * written in their compute dtype) and the operand of a view; ops with
 * scalar operands only (full, iota) evaluate them themselves. */
static uint32_t n_args(const fu_op *op) {
  if (fu_op_has(op->kind, FU_OF_POINTWISE)) return op->n_operands;
  switch (fu_op_info_of(op->kind)->cls) {
  case FU_OC_BROADCAST_IN_DIM:
  case FU_OC_BROADCAST:
  case FU_OC_EXPAND:
  case FU_OC_RESHAPE:
  case FU_OC_PERMUTE:
  case FU_OC_SQUEEZE:
  case FU_OC_SLICE:
  case FU_OC_PAD:
  case FU_OC_STRIDE_ORDER: return 1;
  case FU_OC_CAT: return op->n_operands <= FU_PWL_MAX_ARGS ? op->n_operands : 0;
  case FU_OC_META:
  case FU_OC_UNARY:
  case FU_OC_BINARY:
  case FU_OC_TERNARY:
  case FU_OC_CAST:
  case FU_OC_REDUCE:
  case FU_OC_VARIANCE:
  case FU_OC_FULL:
  case FU_OC_IOTA:
  case FU_OC_MATMUL: return 0;
  case FU_OC_INDEX: return 0; /* its lookup is evaluated at the gathered coordinates in compute */
  case FU_OC_RNG: return 0;
  case FU_OC_SCAN: return 0; /* scan segments have a lowering of their own */
  case FU_OC_PARTIAL: return 0; /* persistent segments only */
  }
  return 0; /* not reached: a class outside the enum */
}

static bool skips_arg(const fu_op *op, uint32_t i) {
  return fu_op_has(op->kind, FU_OF_POINTWISE) && op->operands[i]->is_literal && op->kind != FU_OP_CAST &&
         op->kind != FU_OP_SET;
}

/* uniform or normal at coordinates c: one instruction of the op's name
 * over (a, b, seed, offset, linear index), the index row-major over v's
 * logical shape, so the value does not depend on the schedule
 * (include/fuser/rng.h). */
static fu_kval *rng_at(lw *L, const fu_op *op, const fu_value *v, const fu_ix *const *c, uint32_t lane, char *name) {
  const fu_ix *lin = fu_lower_linear_index(L->ix, &v->type, c);
  if (!lin) return chk(L, NULL);
  fu_kval *args[5];
  for (uint32_t i = 0; i < 4; i++)
    if (!(args[i] = cast_to(L, eval(L, op->operands[i], NULL, 0), fu_lower_rng_operand_dtype(v->type.dtype, i))))
      return NULL;
  if (!(args[4] = cast_to(L, emit_ix(L, at_lane(L, lin, lane)), FU_DT_I64))) return NULL;
  return chk(L, fu_kb_math(&L->b, name, op->kind, v->type.dtype, args, 5));
}

/* v (defined by op) from its evaluated operands args. */
static fu_kval *compute(lw *L, const fu_op *op, const fu_value *v, const fu_ix *const *c, uint32_t lane,
                        fu_kval **args) {
  const fu_op_info *info = fu_op_info_of(op->kind);
  char nm[80];
  lane_name(v, lane, c ? L->n_lanes : 1, nm, sizeof nm);
  if (fu_op_has(op->kind, FU_OF_POINTWISE)) return pointwise(L, op, args, nm);
  switch (info->cls) {
  case FU_OC_BROADCAST_IN_DIM:
  case FU_OC_BROADCAST:
  case FU_OC_EXPAND:
  case FU_OC_RESHAPE:
  case FU_OC_PERMUTE:
  case FU_OC_SQUEEZE:
  case FU_OC_SLICE:
  case FU_OC_STRIDE_ORDER: return args[0];
  case FU_OC_PAD: return fu_pwl_resize_value(L, op, v, c, lane, args, eval(L, op->operands[1], NULL, 0), nm);
  case FU_OC_CAT:
    if (op->n_operands > FU_PWL_MAX_ARGS || !c) break;
    return fu_pwl_resize_value(L, op, v, c, lane, args, NULL, nm);
  case FU_OC_FULL: return cast_to(L, eval(L, op->operands[0], NULL, 0), v->type.dtype);
  case FU_OC_IOTA: {
    if (!c || v->type.rank != 1) break;
    fu_dtype ct = fu_dtype_is_float(v->type.dtype) ? FU_DT_F64 : FU_DT_I64;
    fu_kval *i = cast_to(L, emit_ix(L, at_lane(L, c[0], lane)), ct);
    fu_kval *start = cast_to(L, eval(L, op->operands[0], NULL, 0), ct);
    fu_kval *step = cast_to(L, eval(L, op->operands[1], NULL, 0), ct);
    if (!i || !start || !step) return NULL;
    fu_kval *p = chk(L, fu_kb_binary(&L->b, NULL, FU_OP_MUL, ct, i, step));
    fu_kval *s = p ? chk(L, fu_kb_binary(&L->b, NULL, FU_OP_ADD, ct, start, p)) : NULL;
    return cast_to(L, s, v->type.dtype);
  }
  case FU_OC_INDEX: {
    /* the lookup at coordinates whose gathered one is the index element
     * there (a variable of the graph that resolve_var loads and checks) */
    const fu_ix *const *xc = NULL;
    if (!c || !operand_coords(L, op, fu_index_lookup_operand(op), c, &xc)) break;
    return eval(L, op->operands[fu_index_lookup_operand(op)], xc, lane);
  }
  case FU_OC_RNG:
    if (!c) break;
    return rng_at(L, op, v, c, lane, nm);
  case FU_OC_SCAN: /* scan segments have a lowering of their own */
  case FU_OC_PARTIAL: /* persistent segments only */
  case FU_OC_META:
  case FU_OC_UNARY:
  case FU_OC_BINARY:
  case FU_OC_TERNARY:
  case FU_OC_CAST:
  case FU_OC_REDUCE:
  case FU_OC_VARIANCE:
  case FU_OC_MATMUL: break;
  }
  if (L->failed) return NULL;
  fu_error(L->diag, op->loc, "'%s' cannot be lowered in a pointwise segment", info->name);
  L->failed = true;
  return NULL;
}

/* A value that needs no operand: a literal, a segment input, or an error.
 * *leaf is false for a value computed in the segment (nothing done). */
static fu_kval *leaf(lw *L, const fu_value *v, const fu_ix *const *c, uint32_t lane, bool *is_leaf) {
  *is_leaf = true;
  if (v->is_literal) return literal(L, v);
  if (fu_segment_has_input(L->seg, v)) {
    if (fu_type_is_tensor(&v->type)) return load(L, v, c, lane);
    if (!L->sparam[v->id]) {
      fu_error(L->diag, L->seg->loc, "scalar '%%%s' has no kernel parameter", vname(v));
      L->failed = true;
    }
    return L->sparam[v->id];
  }
  if (v->def && v->def->parent == L->seg->u.segment.body) {
    if (fu_type_is_tensor(&v->type) && !c) {
      fu_error(L->diag, v->def->loc, "'%%%s' is not reached by the loop domain", vname(v));
      L->failed = true;
      return NULL;
    }
    if (v->def->n_operands > 3 && fu_op_has(v->def->kind, FU_OF_POINTWISE)) return NULL;
    *is_leaf = false;
    return NULL;
  }
  fu_error(L->diag, L->seg->loc, "'%%%s' is used in segment '@%s' but is not one of its inputs", vname(v),
           L->seg->u.segment.name);
  L->failed = true;
  return NULL;
}

/* Starts evaluating v at c in `lane`: *kv is its value when it is memoized
 * or a leaf (NULL after an error); otherwise a frame is pushed.  True when
 * a frame was pushed. */
static bool eval_start(lw *L, const fu_value *v, const fu_ix *const *c, uint32_t lane, fu_kval **kv) {
  if (!fu_type_is_tensor(&v->type)) {
    c = NULL;
    lane = 0;
  }
  *kv = memo_get(L, v, c, lane);
  if (*kv) return false;
  bool is_leaf;
  *kv = leaf(L, v, c, lane, &is_leaf);
  if (is_leaf) {
    if (*kv && !memo_get(L, v, c, lane)) memo_put(L, v, c, lane, *kv);
    return false;
  }
  if (L->stk_n == L->stk_cap) {
    uint32_t cap = L->stk_cap ? L->stk_cap * 2 : 64;
    eval_frame *n = fu_mem_realloc(&L->alloc, L->stk, L->stk_cap * sizeof *n, cap * sizeof *n);
    if (!n) return oom(L);
    L->stk = n;
    L->stk_cap = cap;
  }
  L->stk[L->stk_n++] = (eval_frame){v, c, lane, 0, {NULL}};
  return true;
}

/* Value v at coordinates c (NULL for scalars) in lane `lane`, demand
 * driven: operands first, in operand order, then the op.  The pending ops
 * are an explicit stack, so a chain of ops costs heap, not C stack.  (full
 * and iota evaluate their scalar operands by calling back in, one level.) */
static fu_kval *eval(lw *L, const fu_value *v, const fu_ix *const *c, uint32_t lane) {
  if (L->failed) return NULL;
  uint32_t base = L->stk_n;
  fu_kval *kv = NULL;
  if (!eval_start(L, v, c, lane, &kv)) return kv;
  while (L->stk_n > base) {
    eval_frame *f = &L->stk[L->stk_n - 1];
    const fu_op *op = f->v->def;
    if (f->next < n_args(op)) {
      uint32_t i = f->next;
      const fu_ix *const *xc = NULL;
      fu_kval *x = NULL;
      if (skips_arg(op, i)) {
        f->args[f->next++] = NULL;
        continue;
      }
      if (!operand_coords(L, op, i, f->c, &xc)) break;
      if (eval_start(L, op->operands[i], xc, f->lane, &x)) continue; /* f may have moved */
      if (!x) break;
      f = &L->stk[L->stk_n - 1]; /* a leaf's load may have evaluated an index (gather.c), moving the stack */
      f->args[f->next++] = x;
      continue;
    }
    fu_kval *args[FU_PWL_MAX_ARGS];
    memcpy(args, f->args, sizeof args);
    kv = compute(L, op, f->v, f->c, f->lane, args);
    f = &L->stk[L->stk_n - 1]; /* a nested eval may have moved the stack */
    if (!kv) break;
    if (!memo_get(L, f->v, f->c, f->lane)) memo_put(L, f->v, f->c, f->lane, kv);
    if (--L->stk_n > base) {
      eval_frame *p = &L->stk[L->stk_n - 1];
      p->args[p->next++] = kv;
    }
  }
  if (L->stk_n > base) {
    L->stk_n = base;
    return NULL;
  }
  return kv;
}

/* One body: every output at its coordinates, stored. */
static void body(lw *L) {
  memo_clear(L);
  const fu_segment_info *si = &L->seg->u.segment;
  /* in place: every output's value first (memoized), so no load follows a store */
  for (uint32_t i = 0; L->inplace && i < si->n_outputs && !L->failed; i++) {
    const fu_value *o = si->outputs[i];
    const fu_ix *const *c = fu_type_is_tensor(&o->type) ? fu_igraph_coords(L->g, o) : NULL;
    for (uint32_t j = 0; c && j < L->n_lanes; j++)
      if (!eval(L, o, c, j)) return;
  }
  for (uint32_t i = 0; i < si->n_outputs && !L->failed; i++) {
    const fu_value *o = si->outputs[i];
    if (!fu_type_is_tensor(&o->type)) {
      fu_error(L->diag, L->seg->loc, "scalar output '%%%s' of a segment is not supported yet", vname(o));
      L->failed = true;
      return;
    }
    const fu_ix *const *c = fu_igraph_coords(L->g, o);
    const fu_ix *off = c ? fu_igraph_offset(L->g, o, c) : NULL;
    fu_kval *p = L->tparam[o->id];
    if (!c || !off || !p) {
      fu_error(L->diag, L->seg->loc, "output '%%%s' is not reached by the loop domain", vname(o));
      L->failed = true;
      return;
    }
    fu_kval *vals[MAX_LANES];
    for (uint32_t j = 0; j < L->n_lanes; j++)
      if (!(vals[j] = cast_to(L, eval(L, o, c, j), o->type.dtype))) return;
    fu_amode mode = FU_AM_LANES;
    if (L->vector_ctx) {
      mode = fu_igraph_access_mode(L->g, o, off, NULL);
      const fu_stensor *t = fu_schedule_tensor(L->s, o);
      if (t && t->access == FU_ACCESS_SCALAR) mode = FU_AM_LANES;
    }
    if (mode == FU_AM_VECTOR && L->n_lanes > 1) {
      fu_kval *at = emit_ix(L, at_lane(L, off, 0));
      if (!at || !fu_kb_store(&L->b, p, at, vals, L->n_lanes)) {
        if (at) oom(L);
        return;
      }
      continue;
    }
    for (uint32_t j = 0; j < L->n_lanes; j++) {
      fu_kval *at = emit_ix(L, at_lane(L, off, j));
      if (!at || !fu_kb_store(&L->b, p, at, &vals[j], 1)) {
        if (at) oom(L);
        return;
      }
    }
  }
}

/* ---- structure ----------------------------------------------------------------------------- */

static fu_special special_of(fu_ptype p, bool count) {
  switch (p) {
  case FU_PT_BLOCK_X: return count ? FU_SP_NCTAID_X : FU_SP_CTAID_X;
  case FU_PT_BLOCK_Y: return count ? FU_SP_NCTAID_Y : FU_SP_CTAID_Y;
  case FU_PT_THREAD_Y: return FU_SP_TID_Y;
  default: return FU_SP_TID_X;
  }
}

/* The conjunction of the predicates that do (`lane_dep`) or do not depend
 * on the lane, at lane j; NULL when there is none. */
static fu_kval *predicate_part(lw *L, bool lane_dep, uint32_t j) {
  fu_kval *all = NULL;
  for (uint32_t i = 0; i < fu_igraph_num_predicates(L->g); i++) {
    const fu_ix *idx, *ext;
    fu_igraph_predicate(L->g, i, &idx, &ext);
    bool dep = L->lane && fu_ix_subst(L->ix, idx, L->lane, fu_ix_const(L->ix, 0)) != idx;
    if (dep != lane_dep) continue;
    fu_kval *a = emit_ix(L, at_lane(L, idx, j)), *e = emit_ix(L, ext);
    if (!a || !e) return NULL;
    fu_kval *p = chk(L, fu_kb_binary(&L->b, "in_range", FU_OP_LT, FU_DT_BOOL, a, e));
    all = all ? chk(L, fu_kb_binary(&L->b, "in_range", FU_OP_LOGICAL_AND, FU_DT_BOOL, all, p)) : p;
  }
  return all;
}

/* Opens `if (cond)` and continues building in its then-block. */
static fu_kinst *open_if(lw *L, fu_kval *cond) {
  fu_kinst *br = cond ? fu_kb_if(&L->b, cond) : NULL;
  if (!br) {
    oom(L);
    return NULL;
  }
  L->b = fu_kbuilder_at(L->m, L->k, &br->u.branch.then_body);
  return br;
}

/* One scalar load of v's lane j (offset `off`). */
static fu_kval *load_lane(lw *L, const fu_value *v, const fu_ix *off, uint32_t j) {
  char nm[80];
  fu_kval *at = emit_ix(L, at_lane(L, off, j)), *out = NULL;
  if (!at || !fu_kb_load(&L->b, lane_name(v, j, L->n_lanes, nm, sizeof nm), L->tparam[v->id], at, 1, v->type.dtype, &out))
    return at ? chk(L, NULL) : NULL;
  return out;
}

/* Output o's coordinates and offset, or false after a located error. */
static bool output_at(lw *L, const fu_value *o, const fu_ix *const **c, const fu_ix **off) {
  *c = fu_igraph_coords(L->g, o);
  *off = *c ? fu_igraph_offset(L->g, o, *c) : NULL;
  if (fu_type_is_tensor(&o->type) && *off && L->tparam[o->id]) return true;
  fu_error(L->diag, L->seg->loc, "output '%%%s' is not reached by the loop domain", vname(o));
  L->failed = true;
  return false;
}

/* The vector body with a partial last vector, sharing one copy of the math:
 *
 *   if (lane 0 in range) {
 *     if (every lane in range) { vector loads } else { lane by lane, lanes out
 *       of range repeating lane 0 }        -- into mutables, one per lane
 *     math on every lane
 *     if (every lane in range) { vector stores } else { lane by lane, guarded }
 *   }
 *
 * Loads of elements shared by every lane (uniform) are made once, before. */
static void vector_with_tail(lw *L) {
  uint32_t V = L->n_lanes;
  fu_kbuilder outer = L->b;
  uint32_t mark = scope_mark(L);
  if (!open_if(L, predicate_part(L, true, 0))) return;
  memo_clear(L);
  fu_kval *full = predicate_part(L, true, V - 1);
  if (!full) return;
  fu_kbuilder level = L->b;
  /* loads */
  for (uint32_t i = 0; i < fu_igraph_num_accesses(L->g) && !L->failed; i++) {
    const fu_iaccess *a = fu_igraph_access(L->g, i);
    if (a->is_store) continue;
    const fu_value *v = a->value;
    const fu_ix *const *c = (const fu_ix *const *)a->coords;
    if (memo_get(L, v, c, 0)) continue;
    fu_amode mode = fu_igraph_access_mode(L->g, v, a->offset, NULL);
    const fu_stensor *t = fu_schedule_tensor(L->s, v);
    if (mode == FU_AM_VECTOR && t && t->access == FU_ACCESS_SCALAR) mode = FU_AM_LANES;
    if (mode == FU_AM_UNIFORM) {
      fu_kval *x = load_lane(L, v, a->offset, 0);
      for (uint32_t j = 0; j < V && x; j++) memo_put(L, v, c, j, x);
      continue;
    }
    fu_kval *mut[MAX_LANES];
    char nm[96];
    for (uint32_t j = 0; j < V; j++) {
      snprintf(nm, sizeof nm, "%s.lane%u", vname(v), j);
      if (!(mut[j] = chk(L, fu_kval_new_mutable(L->m, L->k, nm, v->type.dtype)))) return;
    }
    /* lane 0's offset, shared by both branches */
    if (!emit_ix(L, at_lane(L, a->offset, 0))) return;
    fu_kinst *br = open_if(L, full);
    if (!br) return;
    uint32_t m1 = scope_mark(L);
    fu_kval *vals[MAX_LANES];
    if (mode == FU_AM_VECTOR) {
      fu_kval *at = emit_ix(L, at_lane(L, a->offset, 0));
      snprintf(nm, sizeof nm, "%s_", vname(v));
      if (!at || !fu_kb_load(&L->b, nm, L->tparam[v->id], at, V, v->type.dtype, vals)) {
        if (at) oom(L);
        return;
      }
    } else {
      for (uint32_t j = 0; j < V; j++)
        if (!(vals[j] = load_lane(L, v, a->offset, j))) return;
    }
    for (uint32_t j = 0; j < V; j++)
      if (!fu_kb_assign(&L->b, mut[j], vals[j])) {
        oom(L);
        return;
      }
    scope_pop(L, m1);
    /* The tail: lanes out of range hold 1 (harmless to any op, integer
     * division included).  Lane 0 is loaded last so that the two branches
     * do not begin with the same load, which LLVM would hoist above the
     * branch, splitting the vector load. */
    L->b = fu_kbuilder_at(L->m, L->k, &br->u.branch.else_body);
    fu_kval *one = v->type.dtype == FU_DT_BOOL ? chk(L, fu_kb_const_b(&L->b, NULL, true))
                   : fu_dtype_is_float(v->type.dtype) ? chk(L, fu_kb_const_f(&L->b, NULL, v->type.dtype, 1.0))
                                                      : chk(L, fu_kb_const_i(&L->b, NULL, v->type.dtype, 1));
    for (uint32_t j = 1; j < V && one; j++)
      if (!fu_kb_assign(&L->b, mut[j], one)) {
        oom(L);
        return;
      }
    for (uint32_t j = 1; j < V && one; j++) {
      fu_kbuilder here = L->b;
      uint32_t m2 = scope_mark(L);
      if (!open_if(L, predicate_part(L, true, j))) return;
      fu_kval *x = load_lane(L, v, a->offset, j);
      if (!x || !fu_kb_assign(&L->b, mut[j], x)) {
        if (x) oom(L);
        return;
      }
      scope_pop(L, m2);
      L->b = here;
    }
    fu_kval *v0 = one ? load_lane(L, v, a->offset, 0) : NULL;
    if (!v0 || !fu_kb_assign(&L->b, mut[0], v0)) {
      if (v0) oom(L);
      return;
    }
    scope_pop(L, m1);
    L->b = level;
    for (uint32_t j = 0; j < V; j++) {
      fu_kval *r = chk(L, fu_kb_read(&L->b, lane_name(v, j, V, nm, sizeof nm), mut[j]));
      if (!r) return;
      memo_put(L, v, c, j, r);
    }
  }
  /* math, then stores */
  const fu_segment_info *si = &L->seg->u.segment;
  for (uint32_t i = 0; i < si->n_outputs && !L->failed; i++) {
    const fu_value *o = si->outputs[i];
    const fu_ix *const *c;
    const fu_ix *off;
    if (!output_at(L, o, &c, &off)) return;
    fu_kval *vals[MAX_LANES];
    for (uint32_t j = 0; j < V; j++)
      if (!(vals[j] = cast_to(L, eval(L, o, c, j), o->type.dtype))) return;
    fu_amode mode = fu_igraph_access_mode(L->g, o, off, NULL);
    const fu_stensor *t = fu_schedule_tensor(L->s, o);
    if (t && t->access == FU_ACCESS_SCALAR) mode = FU_AM_LANES;
    if (!emit_ix(L, at_lane(L, off, 0))) return;
    fu_kinst *br = open_if(L, full);
    if (!br) return;
    uint32_t m1 = scope_mark(L);
    if (mode == FU_AM_VECTOR) {
      fu_kval *at = emit_ix(L, at_lane(L, off, 0));
      if (!at || !fu_kb_store(&L->b, L->tparam[o->id], at, vals, V)) {
        if (at) oom(L);
        return;
      }
    } else {
      for (uint32_t j = 0; j < V; j++) {
        fu_kval *at = emit_ix(L, at_lane(L, off, j));
        if (!at || !fu_kb_store(&L->b, L->tparam[o->id], at, &vals[j], 1)) {
          if (at) oom(L);
          return;
        }
      }
    }
    scope_pop(L, m1);
    L->b = fu_kbuilder_at(L->m, L->k, &br->u.branch.else_body);
    for (uint32_t j = 0; j < V; j++) {
      fu_kbuilder here = L->b;
      uint32_t m2 = scope_mark(L);
      if (j > 0 && !open_if(L, predicate_part(L, true, j))) return;
      fu_kval *at = emit_ix(L, at_lane(L, off, j));
      if (!at || !fu_kb_store(&L->b, L->tparam[o->id], at, &vals[j], 1)) {
        if (at) oom(L);
        return;
      }
      scope_pop(L, m2);
      L->b = here;
    }
    scope_pop(L, m1);
    L->b = level;
  }
  scope_pop(L, mark);
  L->b = outer;
}

/* The usual partial last vector: one predicate depends on the lane, as
 * idx(lane) < E with idx advancing by 1 per lane.  Then
 *
 *   if (idx(0) < E) {
 *     if (idx(V-1) < E) { vector body }
 *     else { for lane in [0, min(V, E - idx(0))) { scalar body } }
 *   }
 *
 * The tail loop's trip count is not a constant, so LLVM keeps it a loop
 * (one more copy of the math, not V), and the two bodies share no load,
 * so the vector loads stay whole.  False (nothing emitted) when the
 * predicates do not have that shape. */
static bool vector_then_tail_loop(lw *L) {
  const fu_ix *idx = NULL, *ext = NULL;
  for (uint32_t i = 0; i < fu_igraph_num_predicates(L->g); i++) {
    const fu_ix *pi, *pe;
    fu_igraph_predicate(L->g, i, &pi, &pe);
    if (fu_ix_subst(L->ix, pi, L->lane, fu_ix_const(L->ix, 0)) == pi) continue;
    if (idx) return false; /* two lane-dependent predicates */
    idx = pi;
    ext = pe;
  }
  fu_ix_lane a = fu_ix_lane_analyze(idx, L->lane, L->width);
  if (!idx || !a.ok || a.stride != 1) return false;
  uint32_t V = L->n_lanes;
  fu_kbuilder outer = L->b;
  uint32_t mark = scope_mark(L);
  fu_kval *i0 = emit_ix(L, at_lane(L, idx, 0)), *e = emit_ix(L, ext);
  fu_kval *p0 = i0 && e ? chk(L, fu_kb_binary(&L->b, "in_range", FU_OP_LT, FU_DT_BOOL, i0, e)) : NULL;
  if (!open_if(L, p0)) return true;
  fu_kbuilder level = L->b;
  fu_kval *il = emit_ix(L, at_lane(L, idx, V - 1));
  fu_kval *full = il ? chk(L, fu_kb_binary(&L->b, "full", FU_OP_LT, FU_DT_BOOL, il, e)) : NULL;
  fu_kinst *br = open_if(L, full);
  if (!br) return true;
  uint32_t m1 = scope_mark(L);
  body(L);
  scope_pop(L, m1);
  L->b = fu_kbuilder_at(L->m, L->k, &br->u.branch.else_body);
  fu_kval *left = chk(L, fu_kb_binary(&L->b, "left", FU_OP_SUB, L->idx, e, i0));
  fu_kval *w = const_idx(L, (int64_t)V), *zero = const_idx(L, 0), *one = const_idx(L, 1);
  fu_kval *n = left && w ? chk(L, fu_kb_binary(&L->b, "left", FU_OP_MINIMUM, L->idx, left, w)) : NULL;
  fu_kinst *lp = n && zero && one ? fu_kb_for(&L->b, "lane", zero, n, one, FU_LOOP_SERIAL) : NULL;
  const fu_ix *tail = lp ? fu_ix_var(L->ix, "lane", FU_IG_VAR_TAIL, NULL, 0, L->width) : NULL;
  if (!tail) {
    oom(L);
    return true;
  }
  L->b = fu_kbuilder_at(L->m, L->k, &lp->u.loop.body);
  uint32_t m2 = scope_mark(L);
  ixv_set(L, tail, lp->results[0]);
  bool saved_ctx = L->vector_ctx;
  uint32_t saved_lanes = L->n_lanes;
  const fu_ix *saved_lane0 = L->lane_val[0];
  L->vector_ctx = false;
  L->n_lanes = 1;
  L->lane_val[0] = tail;
  body(L);
  L->vector_ctx = saved_ctx;
  L->n_lanes = saved_lanes;
  L->lane_val[0] = saved_lane0;
  scope_pop(L, m2);
  (void)level;
  scope_pop(L, mark);
  L->b = outer;
  return true;
}

/* The innermost point: the predicates that do not depend on the vector
 * lane guard everything; then the vector body (with a partial last vector
 * when a predicate depends on the lane), or one scalar body. */
static void innermost(lw *L) {
  fu_kbuilder saved = L->b;
  uint32_t mark = scope_mark(L);
  bool vec = L->lane && L->width > 1;
  L->vector_ctx = vec;
  L->n_lanes = vec ? (uint32_t)L->width : 1;
  for (uint32_t j = 0; j < L->n_lanes; j++) L->lane_val[j] = fu_ix_const(L->ix, j);
  fu_kval *ind = predicate_part(L, false, 0);
  if (L->failed) return;
  if (ind && !open_if(L, ind)) return;
  bool lane_dep = false;
  for (uint32_t i = 0; i < fu_igraph_num_predicates(L->g); i++) {
    const fu_ix *idx, *ext;
    fu_igraph_predicate(L->g, i, &idx, &ext);
    if (L->lane && fu_ix_subst(L->ix, idx, L->lane, fu_ix_const(L->ix, 0)) != idx) lane_dep = true;
  }
  if (!lane_dep) {
    body(L);
  } else if (vec && !vector_then_tail_loop(L)) {
    if (!L->failed) vector_with_tail(L);
  } else if (vec) {
    /* done */
  } else {
    /* a lane variable of width 1 */
    fu_kval *p = predicate_part(L, true, 0);
    if (open_if(L, p)) body(L);
  }
  scope_pop(L, mark);
  L->b = saved;
}

/* Loop axes from `i` inward, then the innermost point. */
static void loops_from(lw *L, uint32_t i) {
  if (L->failed) return;
  const fu_schedule *s = L->s;
  if (i == (L->loop_end ? L->loop_end : s->n_loops)) {
    if (L->at_innermost) L->at_innermost(L);
    else innermost(L);
    return;
  }
  const fu_sloop *l = &s->loops[i];
  const fu_ix *var = fu_igraph_loop_var(L->g, i);
  const fu_ix *ext = fu_igraph_axis_extent(L->g, l->axis);
  const char *an = s->axes[l->axis].name;
  fu_kbuilder saved = L->b;
  uint32_t mark = scope_mark(L);
  switch (l->ptype) {
  case FU_PT_BLOCK_X:
  case FU_PT_BLOCK_Y: {
    /* one block per iteration unless the schedule asks for a grid-stride
     * loop (the runtime refuses a grid over the limit) */
    bool direct = !l->grid_stride;
    fu_kval *bid = chk(L, fu_kb_special(&L->b, direct ? an : NULL, special_of(l->ptype, false), L->idx));
    if (!bid) return;
    if (direct) {
      ixv_set(L, var, bid);
      loops_from(L, i + 1);
      break;
    }
    /* the extent may exceed the launch limit: a grid-stride loop */
    fu_kval *end = emit_ix(L, ext);
    fu_kval *step = chk(L, fu_kb_special(&L->b, NULL, special_of(l->ptype, true), L->idx));
    fu_kinst *lp = end && step ? fu_kb_for(&L->b, an, bid, end, step, FU_LOOP_SERIAL) : NULL;
    if (!lp) {
      oom(L);
      return;
    }
    L->b = fu_kbuilder_at(L->m, L->k, &lp->u.loop.body);
    ixv_set(L, var, lp->results[0]);
    loops_from(L, i + 1);
    break;
  }
  case FU_PT_THREAD_X:
  case FU_PT_THREAD_Y: {
    fu_kval *tid = chk(L, fu_kb_special(&L->b, an, special_of(l->ptype, false), L->idx));
    if (!tid) return;
    ixv_set(L, var, tid);
    loops_from(L, i + 1);
    break;
  }
  case FU_PT_VECTORIZE: loops_from(L, i + 1); break;
  case FU_PT_CLUSTER_X:
    /* the schedule verifier admits cluster.x in persistent schedules only */
    if (!L->failed) fu_error(L->diag, l->loc, "cluster.x on axis '%s' outside a persistent schedule", an);
    L->failed = true;
    break;
  case FU_PT_SERIAL:
  case FU_PT_UNROLL:
  case FU_PT_COUNT: {
    fu_kval *zero = const_idx(L, 0), *one = const_idx(L, 1), *end = emit_ix(L, ext);
    fu_kinst *lp = zero && one && end
                       ? fu_kb_for(&L->b, an, zero, end, one, l->ptype == FU_PT_UNROLL ? FU_LOOP_UNROLL : FU_LOOP_SERIAL)
                       : NULL;
    if (!lp) {
      oom(L);
      return;
    }
    L->b = fu_kbuilder_at(L->m, L->k, &lp->u.loop.body);
    ixv_set(L, var, lp->results[0]);
    loops_from(L, i + 1);
    break;
  }
  }
  scope_pop(L, mark);
  L->b = saved;
}

/* ---- parameters and launch ------------------------------------------------------------------ */

static const char *param_name(lw *L, const fu_value *v, char *buf, size_t cap, uint32_t k) {
  bool ok = v->name && *v->name;
  for (const char *p = v->name; ok && *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '.'))
      ok = false;
  if (ok) return v->name;
  snprintf(buf, cap, "p%u", k);
  (void)L;
  return buf;
}

static bool read_with_vectors(const lw *L, const fu_value *v) {
  const fu_stensor *t = fu_schedule_tensor(L->s, v);
  if (t && t->access == FU_ACCESS_SCALAR) return false;
  for (uint32_t i = 0; i < fu_igraph_num_accesses(L->g); i++) {
    const fu_iaccess *a = fu_igraph_access(L->g, i);
    if (a->value == v && a->mode == FU_AM_VECTOR) return true;
  }
  return false;
}

/* Is input `in`'s layout the row-major one a kernel writes its outputs
 * in (no explicit strides, no reordering, contiguous)? */
static bool row_major_input(const fu_value *in) {
  const fu_layout *l = &in->def->u.input.layout;
  int32_t r = in->type.rank;
  if (l->strides) return false;
  for (int32_t d = 0; l->stride_order && d < r; d++)
    if (l->stride_order[d] != r - 1 - d) return false;
  for (int32_t d = 0; l->contiguity && d < r; d++)
    if (l->contiguity[d] != FU_CONTIG_TRUE && !(fu_extent_is_const(in->type.dims[d]) && in->type.dims[d].value == 1))
      return false;
  return true;
}

/* May output o (`output %o {alias=%in}`) be written straight into input
 * in's memory by this kernel?  Only when no element of `in` is read after
 * another thread (or lane) wrote it: the segment is pointwise, every read
 * of `in` anywhere in the fusion is a pointwise op of this segment, and
 * every access to `in` in the kernel is at o's own coordinates, so the one
 * thread and lane that writes o's element (once) is the only one that read
 * it.  Both keep the row-major layout.  Otherwise the runtime copies o into
 * `in` after the fusion's kernels (always correct). */
static bool inplace_ok(lw *L, const fu_value *o, const fu_value *in) {
  if (L->seg->u.segment.kind != FU_SK_POINTWISE || !row_major_input(in)) return false;
  const fu_block *body = L->seg->u.segment.body;
  for (const fu_op *op = L->f->body.first; op; op = op->next) {
    const fu_op *list = op->kind == FU_OP_SEGMENT ? op->u.segment.body->first : op;
    for (const fu_op *u = list; u; u = op->kind == FU_OP_SEGMENT ? u->next : NULL) {
      if (u->kind == FU_OP_SEGMENT) continue;
      for (uint32_t i = 0; i < u->n_operands; i++)
        if (u->operands[i] == in && (u->parent != body || !fu_op_has(u->kind, FU_OF_POINTWISE))) return false;
    }
  }
  const fu_ix *const *oc = fu_igraph_coords(L->g, o);
  if (!oc) return false;
  for (uint32_t i = 0; i < fu_igraph_num_accesses(L->g); i++) {
    const fu_iaccess *a = fu_igraph_access(L->g, i);
    if (a->value != in) continue;
    for (int32_t d = 0; d < in->type.rank; d++)
      if (!a->coords || a->coords[d] != oc[d]) return false;
  }
  return true;
}

/* The fusion's `output %o {alias=%in}` with o written by this segment and
 * in one of its operands, written in place where inplace_ok: o's parameter
 * names in's (`alias=`), and neither is readonly or noalias.  The body
 * then reads every input before it stores any output (L->inplace). */
static void mark_inplace(lw *L) {
  const fu_segment_info *si = &L->seg->u.segment;
  for (const fu_op *op = L->f->body.first; op; op = op->next) {
    if (op->kind != FU_OP_OUTPUT || !op->u.output.alias || op->n_operands != 1) continue;
    const fu_value *o = op->operands[0], *in = op->u.output.alias;
    bool mine = false, reads = false;
    for (uint32_t i = 0; i < si->n_outputs; i++) mine |= si->outputs[i] == o;
    for (uint32_t i = 0; i < L->seg->n_operands; i++) reads |= L->seg->operands[i] == in;
    fu_kval *po = mine ? L->tparam[o->id] : NULL, *pi = reads ? L->tparam[in->id] : NULL;
    if (!po || !pi || po->alias_of || !inplace_ok(L, o, in)) continue;
    po->alias_of = pi;
    po->noalias = pi->noalias = pi->readonly = false;
    L->inplace = true;
  }
}

static bool make_params(lw *L) {
  const fu_segment_info *si = &L->seg->u.segment;
  char buf[32];
  uint32_t k = 0;
  for (uint32_t i = 0; i < L->seg->n_operands; i++) {
    const fu_value *v = L->seg->operands[i];
    if (!fu_type_is_tensor(&v->type) || L->tparam[v->id]) continue;
    uint32_t align = read_with_vectors(L, v) ? 16 : (uint32_t)fu_dtype_size(v->type.dtype);
    L->tparam[v->id] = fu_kernel_tensor_param(L->m, L->k, param_name(L, v, buf, sizeof buf, k++), v->type.dtype,
                                              (fu_value *)v, true, true, align);
    if (!L->tparam[v->id]) return oom(L);
  }
  for (uint32_t i = 0; i < si->n_outputs; i++) {
    const fu_value *v = si->outputs[i];
    if (!fu_type_is_tensor(&v->type) || L->tparam[v->id]) continue;
    uint32_t align = read_with_vectors(L, v) ? 16 : (uint32_t)fu_dtype_size(v->type.dtype);
    L->tparam[v->id] = fu_kernel_tensor_param(L->m, L->k, param_name(L, v, buf, sizeof buf, k++), v->type.dtype,
                                              (fu_value *)v, false, true, align);
    if (!L->tparam[v->id]) return oom(L);
  }
  for (uint32_t i = 0; i < L->seg->n_operands; i++) {
    const fu_value *v = L->seg->operands[i];
    if (fu_type_is_tensor(&v->type) || v->is_literal || L->sparam[v->id]) continue;
    L->sparam[v->id] = fu_kernel_scalar_input_param(L->m, L->k, param_name(L, v, buf, sizeof buf, k++), v->type.dtype,
                                                    (fu_value *)v);
    if (!L->sparam[v->id]) return oom(L);
  }
  mark_inplace(L);
  return true;
}

static bool make_launch(lw *L) {
  const fu_schedule *s = L->s;
  for (uint32_t i = 0; i < s->n_loops; i++) {
    const fu_sloop *l = &s->loops[i];
    const fu_ix *ext = fu_igraph_axis_extent(L->g, l->axis);
    int64_t e = 0;
    switch (l->ptype) {
    case FU_PT_THREAD_X:
    case FU_PT_THREAD_Y:
      if (!fu_ix_is_const(ext, &e) || e < 1 || e > 1024) return false;
      L->k->block[l->ptype == FU_PT_THREAD_X ? 0 : 1] = (uint32_t)e;
      break;
    case FU_PT_BLOCK_X:
    case FU_PT_BLOCK_Y: {
      int64_t lim = fu_block_axis_limit(l->ptype);
      fu_lexpr *g = fu_ix_to_lexpr(L->m, ext);
      if (!g) {
        fu_error(L->diag, l->loc, "the extent of axis '%s' cannot be evaluated on the host", s->axes[l->axis].name);
        return false;
      }
      if (l->grid_stride && !(fu_ix_is_const(ext, &e) && e <= lim))
        g = fu_lexpr_binary(L->m, FU_LX_MIN, g, fu_lexpr_const(L->m, lim));
      if (!g) return oom(L);
      L->k->grid[l->ptype == FU_PT_BLOCK_X ? 0 : 1] = g;
      break;
    }
    default: break;
    }
  }
  return true;
}

void fu_kernel_name_for(const fu_fusion *f, const fu_op *seg, char *buf, size_t cap) {
  snprintf(buf, cap, "%s_%s", f->name ? f->name : "f", seg->u.segment.name ? seg->u.segment.name : "s");
  for (char *p = buf; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_')) *p = '_';
  if (buf[0] >= '0' && buf[0] <= '9') buf[0] = '_';
}

/* Sets up L (graph, kernel, parameters); see pointwise_internal.h. */
/* The index variables the shared index emission leaves to this lowering:
 * a pad's or cat's clamped coordinate (passes/lower/resize.c), an indexing
 * op's gathered coordinate (passes/lower/gather.c). */
static fu_kval *resolve_var(void *ctx, const fu_ix *x) {
  if (x->tag == FU_IG_VAR_GATHER) return fu_pwl_gather_index(ctx, x);
  return x->tag == FU_IG_VAR_RESIZE ? fu_pwl_resize_index(ctx, x) : NULL;
}

bool fu_pwl_begin(lw *L, fu_fusion *f, fu_op *seg, const fu_schedule *s, fu_diag_engine *diag) {
  fu_module *m = f->module;
  memset(L, 0, sizeof *L);
  L->m = m;
  L->f = f;
  L->seg = seg;
  L->s = s;
  L->diag = diag;
  L->alloc = m->alloc;
  L->errors_before = diag->n_errors;
  L->nv = f->next_value_id ? f->next_value_id : 1;
  fu_status st = fu_igraph_build(f, seg, s, m->alloc, diag, &L->g);
  if (st != FU_OK) {
    L->status = st;
    L->failed = true;
    return false;
  }
  L->ix = fu_igraph_ix(L->g);
  L->idx = s->index_dtype == FU_DT_I32 || s->index_dtype == FU_DT_I64 ? s->index_dtype : fu_igraph_index_dtype(L->g);
  L->lane = fu_igraph_lane_var(L->g, &L->width);
  if (L->width > MAX_LANES) L->width = MAX_LANES;
  char name[256];
  fu_kernel_name_for(f, seg, name, sizeof name);
  L->k = fu_kernel_new(m, name);
  L->tparam = fu_mem_calloc(&L->alloc, L->nv, sizeof *L->tparam);
  L->sparam = fu_mem_calloc(&L->alloc, L->nv, sizeof *L->sparam);
  if (!L->k || !L->tparam || !L->sparam) return oom(L);
  L->k->index_dtype = L->idx;
  L->b = fu_kbuilder_at(m, L->k, &L->k->body);
  L->lix = (fu_lix){.m = m, .k = L->k, .b = &L->b, .ix = L->ix, .idx = L->idx, .alloc = L->alloc, .diag = diag,
                    .seg = seg, .tparam = L->tparam, .resolve_var = resolve_var, .resolve_ctx = L};
  if (!make_params(L)) L->failed = true;
  return !L->failed;
}

fu_status fu_pwl_end(lw *L, fu_kernel **out) {
  *out = NULL;
  if (L->status != FU_OK) return L->status; /* the graph failed: nothing else was made */
  fu_status st = L->failed ? FU_ERR_VERIFY : FU_OK;
  const fu_op *seg = L->seg;
  if (st == FU_OK && fu_kernel_verify(L->k, L->diag, NULL) != FU_OK) {
    fu_error(L->diag, seg->loc, "internal error: the kernel lowered from '@%s' does not verify",
             seg->u.segment.name ? seg->u.segment.name : "?");
    st = FU_ERR_VERIFY;
  }
  if (L->failed && L->diag->n_errors == L->errors_before)
    fu_error(L->diag, seg->loc, "cannot lower segment '@%s'", seg->u.segment.name);
  fu_mem_free(&L->alloc, L->tparam, L->nv * sizeof *L->tparam);
  fu_mem_free(&L->alloc, L->sparam, L->nv * sizeof *L->sparam);
  fu_lix_free(&L->lix);
  fu_mem_free(&L->alloc, L->memo, L->memo_cap * sizeof *L->memo);
  fu_mem_free(&L->alloc, L->stk, L->stk_cap * sizeof *L->stk);
  fu_igraph_free(L->g);
  if (st == FU_OK) *out = L->k;
  return st;
}

fu_status fu_lower_pointwise(fu_fusion *f, fu_op *seg, const fu_lower_options *opt, fu_diag_engine *diag,
                             fu_kernel **out) {
  *out = NULL;
  const fu_schedule *s = seg->u.segment.schedule;
  if (!s) return FU_ERR_INVALID_ARG;
  lw L;
  if (fu_pwl_begin(&L, f, seg, s, diag)) {
    if (make_launch(&L)) loops_from(&L, 0);
    else L.failed = true;
  }
  return fu_pwl_end(&L, out);
}

/* ---- for the lowerings built on this one (pointwise_internal.h) ------------------------------ */

bool fu_pwl_oom(lw *L) { return oom(L); }
uint32_t fu_pwl_scope_mark(const lw *L) { return scope_mark(L); }
void fu_pwl_scope_pop(lw *L, uint32_t mark) { scope_pop(L, mark); }
void fu_pwl_bind(lw *L, const fu_ix *x, fu_kval *kv) { ixv_set(L, x, kv); }
fu_kval *fu_pwl_emit_ix(lw *L, const fu_ix *x) { return emit_ix(L, x); }
fu_kval *fu_pwl_const_idx(lw *L, int64_t v) { return const_idx(L, v); }
fu_kval *fu_pwl_eval(lw *L, const fu_value *v, const fu_ix *const *c) { return eval(L, v, c, 0); }
void fu_pwl_memo_put(lw *L, const fu_value *v, const fu_ix *const *c, fu_kval *kv) { memo_put(L, v, c, 0, kv); }
void fu_pwl_memo_clear(lw *L) { memo_clear(L); }
fu_kval *fu_pwl_cast_to(lw *L, fu_kval *x, fu_dtype t) { return cast_to(L, x, t); }
fu_kval *fu_pwl_predicate(lw *L) {
  L->n_lanes = 1;
  L->lane_val[0] = fu_ix_const(L->ix, 0);
  return predicate_part(L, false, 0);
}
fu_kinst *fu_pwl_open_if(lw *L, fu_kval *cond) { return open_if(L, cond); }
const fu_ix *fu_pwl_at_lane(lw *L, const fu_ix *x, uint32_t lane) { return at_lane(L, x, lane); }
bool fu_pwl_make_launch(lw *L) { return make_launch(L); }
bool fu_pwl_output_at(lw *L, const fu_value *o, const fu_ix *const **c, const fu_ix **off) {
  return output_at(L, o, c, off);
}
void fu_pwl_loops(lw *L) { loops_from(L, 0); }
