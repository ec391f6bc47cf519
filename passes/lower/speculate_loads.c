/* fuser: a kernel-IR step before the load hoisting (hoist_loads.c): loads of
 * read-only inputs inside a guard (`if %in_range { ... }`) move out of it,
 * ahead of the branch, at an index that the guard's condition clamps to 0
 * (`where %in_range, %index, 0`).
 *
 * Why: a persistent row whose threads do not divide its vectors guards the
 * last vector slot of each thread, and a lowering emits every slot as `if
 * slot in range { load; compute }`.  ptxas does not move a load above a
 * branch, so the thread loaded the guarded vector only after computing on
 * the others: two memory latencies in a row.  Layer norm over rows of 832
 * bf16 (64 threads, two vectors of 8 each, the second guarded) ran 5% below
 * the same rows at four vectors of 4, whose first three vectors share one
 * latency.  Out of its branch and hoisted with the others, the guarded load
 * shares their latency too; a thread past the row's end reads element 0
 * (one sector for the whole warp) and drops the value.
 *
 * What moves: a load of a read-only global tensor parameter whose extents
 * are all constant, with at least as many elements as the load's width
 * (element 0 is then in bounds), that has no stride parameters (its first
 * `width` elements are contiguous) and, for a vector load, a base aligned
 * to the vector, at the top level of a light branch's then-body (light:
 * nothing in either body is a barrier, shuffle, atomic, fence or loop),
 * with the pure index math it needs from that body.
 *
 * Where: a region of a block (between the barriers, shuffles, atomics,
 * fences, loops and heavy branches that delimit hoisting) speculates only
 *  - when it holds at least two sources of loads (loads of its own, or
 *    light branches with a load that may move): a kernel whose only guard
 *    holds all its loads (every pointwise kernel) gains nothing;
 *  - and one of them is a branch that only part of a block's threads take
 *    (guard_share.c): with none, LLVM folds the guards every thread takes
 *    and ptxas already issues their loads together.  A guard whose share
 *    is unknown (its condition reads a size parameter or a loaded value)
 *    does not count: such guards were not timed;
 *  - and then not from a branch that fewer than half of a block's threads
 *    take.  Such a guard costs little as a branch (whole warps skip it),
 *    while its loads issued ahead cost every thread registers: layer norm
 *    over rows of 544 bf16 (the last of three vectors of 4 held by 8 of 64
 *    threads) ran 5% slower with it speculated, 832 (the last of two
 *    vectors of 8 held by 40 of 64) 4.5% faster.
 * Loads move in order while their bytes, with the region's own loads, fit
 * the hoisting budget (fu_lower_hoist_budget); the rest stay in their
 * branch. */
#include <string.h>

#include "fuser/kir.h"
#include "lower_internal.h"

/* Whether block b holds (at any depth) an instruction that delimits
 * hoisting: a barrier, shuffle, atomic, fence or loop. */
static bool holds_boundary(const fu_kblock *b) {
  for (const fu_kinst *in = b->first; in; in = in->next) switch (in->kind) {
    case FU_KI_SYNC:
    case FU_KI_SHFL_XOR:
    case FU_KI_ATOM_ADD:
    case FU_KI_FENCE:
    case FU_KI_FOR: return true;
    case FU_KI_IF:
      if (holds_boundary(&in->u.branch.then_body) || holds_boundary(&in->u.branch.else_body)) return true;
      break;
    default: break;
    }
  return false;
}

bool fu_lower_if_is_light(const fu_kinst *in) {
  return in->kind == FU_KI_IF && !holds_boundary(&in->u.branch.then_body) &&
         !holds_boundary(&in->u.branch.else_body);
}

static bool pure_math(const fu_kinst *in) {
  return in->kind == FU_KI_CONST || in->kind == FU_KI_MATH || in->kind == FU_KI_SPECIAL;
}

static bool readonly_global_load(const fu_kinst *in) {
  return in->kind == FU_KI_LOAD && in->n_args == 2 && in->u.mem.space == FU_MEM_GLOBAL &&
         in->args[0]->kind == FU_KV_TENSOR_PARAM && in->args[0]->readonly;
}

/* Whether element 0 of the load's tensor, and the width elements after it,
 * are in bounds, contiguous and aligned whatever the launch: constant
 * extents, at least width elements, no stride parameters, a base aligned to
 * the vector. */
static bool clampable(const fu_kernel *k, const fu_kinst *ld) {
  const fu_kval *t = ld->args[0];
  if (!t->tensor || t->ws_size) return false;
  int64_t n = fu_type_numel(&t->tensor->type);
  if (n < 1 || n < (int64_t)ld->u.mem.width) return false;
  /* a vector load at element 0 needs the base aligned to the vector (a
   * peeled split's tensor may start anywhere) */
  if (ld->u.mem.width > 1 && t->align < ld->u.mem.width * fu_dtype_size(t->dtype)) return false;
  for (uint32_t i = 0; i < k->n_params; i++) {
    const fu_kval *p = k->params[i];
    if (p->kind == FU_KV_SCALAR_PARAM && p->role == FU_KP_STRIDE && p->stride_of == t) return false;
  }
  return true;
}

typedef struct speculator {
  fu_module *m;
  fu_kernel *k;
  fu_cone_walk w;   /* the then-body being examined */
  uint64_t budget;
  fu_guard_eval guards;
  uint32_t n_moved;  /* loads moved out of their branch, over the kernel */
  uint32_t n_sparse; /* branches that keep their loads: fewer than half of a block's threads take them */
} speculator;

/* Loads the body's positions [0, n) into the walk. */
static fu_status load_body(speculator *s, const fu_kblock *body, uint32_t *n_out) {
  fu_cone_walk *w = &s->w;
  uint32_t n = 0;
  for (const fu_kinst *in = body->first; in; in = in->next) n++;
  if (!fu_cone_walk_cover(w, s->k->next_kval_id) || !fu_cone_walk_reserve(w, n)) return FU_ERR_NOMEM;
  n = 0;
  for (fu_kinst *in = body->first; in; in = in->next) w->insts[n++] = in;
  if (n) memset(w->mark, FU_CONE_STAYS, n); /* an empty body has no scratch yet */
  fu_cone_walk_define(w, 0, n, true);
  *n_out = n;
  return FU_OK;
}

/* The load itself, then pure math only. */
static bool may_move(const fu_kinst *in, bool first) { return first || pure_math(in); }

static bool movable_load(speculator *s, uint32_t p) {
  const fu_kinst *in = s->w.insts[p];
  return readonly_global_load(in) && clampable(s->k, in) && fu_cone_walk_from(&s->w, p, may_move, false);
}

static uint64_t load_bytes(const fu_kinst *in) {
  return (uint64_t)in->u.mem.width * fu_dtype_size(in->args[0]->dtype);
}

/* Whether branch `br` holds, at the top level of its then-body, a load
 * that may move out of it. */
static fu_status has_movable_load(speculator *s, const fu_kinst *br, bool *out) {
  uint32_t n = 0;
  *out = false;
  fu_status st = load_body(s, &br->u.branch.then_body, &n);
  if (st != FU_OK) return st;
  for (uint32_t p = 0; p < n && !*out; p++) *out = movable_load(s, p);
  fu_cone_walk_define(&s->w, 0, n, false);
  return FU_OK;
}

/* Moves the movable loads of branch `br`'s then-body that fit in *bytes
 * against the budget (with their pure cones, in order) to just after
 * `prev` in the parent block `b` (its head when prev is NULL), each load's
 * index clamped to 0 where the branch's condition is false. */
static fu_status speculate_branch(speculator *s, fu_kblock *b, fu_kinst *prev, fu_kinst *br, uint64_t *bytes) {
  uint32_t n = 0;
  fu_status st = load_body(s, &br->u.branch.then_body, &n);
  if (st != FU_OK) return st;
  fu_cone_walk *w = &s->w;
  for (uint32_t p = 0; p < n; p++) {
    if (!readonly_global_load(w->insts[p]) || !clampable(s->k, w->insts[p])) continue;
    uint64_t need = load_bytes(w->insts[p]);
    if (*bytes + need > s->budget) break;
    if (fu_cone_walk_from(w, p, may_move, true)) *bytes += need;
  }
  fu_kblock moved = {NULL, NULL}, kept = {NULL, NULL};
  fu_kbuilder kb = fu_kbuilder_at(s->m, s->k, &moved);
  fu_kval *cond = br->args[0];
  fu_cone_walk_define(w, 0, n, false);
  for (uint32_t p = 0; p < n; p++) { /* every instruction relinked, even after a failure */
    fu_kinst *in = w->insts[p];
    in->next = NULL;
    if (w->mark[p] != FU_CONE_MOVES) {
      fu_kblock_append(&kept, in);
      continue;
    }
    if (in->kind == FU_KI_LOAD && st == FU_OK) {
      fu_kval *index = in->args[1];
      fu_kval *zero = fu_kb_const_i(&kb, "zero", index->dtype, 0);
      fu_kval *args[3] = {cond, index, zero};
      fu_kval *clamped = zero ? fu_kb_math(&kb, "clamped", FU_OP_WHERE, index->dtype, args, 3) : NULL;
      if (clamped) {
        in->args[1] = clamped;
        s->n_moved++;
      } else
        st = FU_ERR_NOMEM;
    }
    fu_kblock_append(&moved, in);
  }
  br->u.branch.then_body = kept;
  if (st != FU_OK || !moved.first) return st;
  fu_kinst *after = prev ? prev->next : b->first;
  if (prev)
    prev->next = moved.first;
  else
    b->first = moved.first;
  moved.last->next = after;
  return FU_OK;
}

/* How many of a block's threads take branch `br`, from its condition
 * (guard_share.c): every one (or not known: then it does not make a
 * region speculate), fewer than half, or some share between. */
typedef enum taken { TAKEN_ALL, TAKEN_FEW, TAKEN_PART } taken;

static taken taken_by(speculator *s, const fu_kinst *br) {
  double share = fu_guard_share(&s->guards, br->args[0]);
  if (share >= 1 || share < 0) return TAKEN_ALL;
  return share < 0.5 ? TAKEN_FEW : TAKEN_PART;
}

/* The region of block b that starts at `first` (after `prev`): counts its
 * sources of loads, and when there are two or more, speculates its light
 * branches' loads in order against the budget.  Returns the region's
 * boundary instruction (NULL at the block's end) in *end. */
static fu_status speculate_region(speculator *s, fu_kblock *b, fu_kinst *prev, fu_kinst **end) {
  uint32_t sources = 0, partial = 0, few = 0;
  fu_kinst *in = prev ? prev->next : b->first;
  for (fu_kinst *p = in; p && !fu_lower_region_boundary(p, true); p = p->next) {
    bool movable = false;
    if (readonly_global_load(p)) {
      sources++;
      continue;
    }
    if (p->kind != FU_KI_IF) continue;
    fu_status st = has_movable_load(s, p, &movable);
    if (st != FU_OK) return st;
    if (!movable) continue;
    taken t = taken_by(s, p);
    few += t == TAKEN_FEW;
    sources += t != TAKEN_FEW;
    partial += t == TAKEN_PART;
  }
  /* a guard few threads take is counted where it would have joined others */
  if (sources + few >= 2) s->n_sparse += few;
  bool go = sources >= 2 && partial > 0;
  uint64_t bytes = 0;
  fu_kinst *before = prev, *p = in;
  for (; p && !fu_lower_region_boundary(p, true); p = p->next) {
    if (go && p->kind == FU_KI_IF && taken_by(s, p) != TAKEN_FEW) {
      fu_status st = speculate_branch(s, b, before, p, &bytes);
      if (st != FU_OK) return st;
    } else if (readonly_global_load(p))
      bytes += load_bytes(p);
    before = p;
  }
  *end = p;
  return FU_OK;
}

/* Nested blocks first, then this one, region by region. */
static fu_status speculate_block(speculator *s, fu_kblock *b) {
  for (fu_kinst *in = b->first; in; in = in->next) {
    fu_status st = FU_OK;
    if (in->kind == FU_KI_FOR)
      st = speculate_block(s, &in->u.loop.body);
    else if (in->kind == FU_KI_IF) {
      st = speculate_block(s, &in->u.branch.then_body);
      if (st == FU_OK) st = speculate_block(s, &in->u.branch.else_body);
    }
    if (st != FU_OK) return st;
  }
  fu_kinst *prev = NULL;
  for (;;) {
    fu_kinst *end = NULL;
    fu_status st = speculate_region(s, b, prev, &end);
    if (st != FU_OK || !end) return st;
    prev = end; /* the boundary: the next region starts after it */
  }
}

fu_status fu_lower_speculate_loads(fu_module *m, fu_kernel *k, uint64_t budget, uint32_t *n_moved,
                                   uint32_t *n_sparse) {
  speculator s;
  memset(&s, 0, sizeof s);
  s.m = m;
  s.k = k;
  s.budget = budget;
  fu_status st = fu_cone_walk_init(&s.w, &m->alloc, k->next_kval_id);
  if (st == FU_OK) st = fu_guard_eval_init(&s.guards, &m->alloc, k);
  if (st == FU_OK) st = speculate_block(&s, &k->body);
  fu_guard_eval_free(&s.guards);
  fu_cone_walk_free(&s.w);
  *n_moved = s.n_moved;
  *n_sparse = s.n_sparse;
  return st;
}
