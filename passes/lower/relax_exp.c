/* fuser: exponentials whose results only reach 16-bit values, computed in
 * two instructions (a kernel-IR step after every lowering, before the
 * backends).
 *
 * An f32 `exp` is seven instructions in the backends' accurate form (within
 * 3.5 ulps, lib/target/llvm/fast_math.c).  Where the result only goes, through
 * ops that carry a relative error over unchanged, into a bf16 or f16 value,
 * that accuracy is lost in the final rounding: such an exp becomes
 * `exp2(x * log2 e)`, a product and one ex2.approx.  The product's rounding
 * moves the result by |x| u relatively (at most 88 u, 5.2e-6, while exp is
 * finite and not subnormal) and ex2.approx adds 2 ulps; a bf16 result's
 * rounding is 2^-9 relatively (f16's 2^-11), so the result moves by at most
 * one unit in its last place, as any difference in the f32 value may make
 * it.  A softmax over bf16 rows computes its outputs so (exp(x - max) times
 * the reciprocal of the sum, rounded to bf16).
 *
 * What carries a relative error over unchanged: `mul` and `div` (either
 * operand), `neg`, and casts to f32 or f64.  The walk from the exp's result
 * ends at casts to bf16 or f16 and at stores into bf16 or f16 memory; any
 * other use (a sum, an assign to a mutable, a comparison, a shuffle, an f32
 * store) keeps the accurate exp.  --disable=exp16 turns the step off. */
#include <string.h>

#include "lower_internal.h"

typedef struct use {
  const fu_kinst *in;
  uint32_t arg;
} use;

typedef struct relaxer {
  fu_allocator alloc;
  uint32_t n_ids;
  uint32_t *start; /* by kernel value id: its uses' offsets (n_ids + 1) */
  use *uses;
  uint32_t n_uses;
  uint8_t *state; /* by kernel value id: UNSEEN, VISITING, NARROW or WIDE */
} relaxer;

enum { UNSEEN, VISITING, NARROW, WIDE };

static bool narrow_dtype(fu_dtype t) { return t == FU_DT_BF16 || t == FU_DT_F16; }

/* Counts (fill false) or records (fill true) the uses of every value in
 * block blk and the blocks nested in it. */
static void walk_uses(relaxer *r, const fu_kblock *blk, bool fill) {
  for (const fu_kinst *in = blk->first; in; in = in->next) {
    for (uint32_t a = 0; a < in->n_args; a++) {
      const fu_kval *v = in->args[a];
      if (!v || v->id >= r->n_ids) continue;
      if (fill) r->uses[r->start[v->id]++] = (use){in, a};
      else r->start[v->id + 1]++;
    }
    if (in->kind == FU_KI_FOR) walk_uses(r, &in->u.loop.body, fill);
    if (in->kind == FU_KI_IF) {
      walk_uses(r, &in->u.branch.then_body, fill);
      walk_uses(r, &in->u.branch.else_body, fill);
    }
  }
}

/* Whether every use of value v ends in a 16-bit value through ops that
 * keep a relative error (the file comment). */
static bool ends_narrow(relaxer *r, const fu_kval *v) {
  if (v->id >= r->n_ids) return false;
  if (r->state[v->id] == NARROW || r->state[v->id] == WIDE) return r->state[v->id] == NARROW;
  if (r->state[v->id] == VISITING) return false;
  r->state[v->id] = VISITING;
  bool ok = r->start[v->id] < r->start[v->id + 1];
  for (uint32_t u = r->start[v->id]; ok && u < r->start[v->id + 1]; u++) {
    const fu_kinst *in = r->uses[u].in;
    if (in->kind == FU_KI_STORE) {
      ok = r->uses[u].arg >= 2 && narrow_dtype(in->args[0]->dtype);
      continue;
    }
    if (in->kind != FU_KI_MATH || in->n_results != 1) {
      ok = false;
      continue;
    }
    const fu_kval *res = in->results[0];
    switch (in->u.math) {
    case FU_OP_CAST:
      ok = narrow_dtype(res->dtype) || ((res->dtype == FU_DT_F32 || res->dtype == FU_DT_F64) && ends_narrow(r, res));
      break;
    case FU_OP_MUL:
    case FU_OP_DIV:
    case FU_OP_NEG: ok = fu_dtype_is_float(res->dtype) && ends_narrow(r, res); break;
    default: ok = false;
    }
  }
  r->state[v->id] = ok ? NARROW : WIDE;
  return ok;
}

/* Rewrites the qualifying exps of block blk (and nested blocks) in place:
 * t = x * log2 e before each, then exp2(t).  Counts them in *n. */
static bool rewrite(relaxer *r, fu_module *m, fu_kernel *k, fu_kblock *blk, uint32_t *n) {
  fu_kinst *prev = NULL;
  for (fu_kinst *in = blk->first; in; prev = in, in = in->next) {
    if (in->kind == FU_KI_FOR && !rewrite(r, m, k, &in->u.loop.body, n)) return false;
    if (in->kind == FU_KI_IF &&
        (!rewrite(r, m, k, &in->u.branch.then_body, n) || !rewrite(r, m, k, &in->u.branch.else_body, n)))
      return false;
    if (in->kind != FU_KI_MATH || in->u.math != FU_OP_EXP || in->n_args != 1 || in->n_results != 1) continue;
    fu_kval *x = in->args[0];
    if (x->dtype != FU_DT_F32 || in->results[0]->dtype != FU_DT_F32 || !ends_narrow(r, in->results[0])) continue;
    /* the product in a block of its own, spliced in before the exp */
    fu_kblock tmp = {NULL, NULL};
    fu_kbuilder b = fu_kbuilder_at(m, k, &tmp);
    fu_kval *t = fu_lower_exp2_arg(&b, x);
    if (!t) return false;
    tmp.last->next = in;
    if (prev) prev->next = tmp.first;
    else blk->first = tmp.first;
    prev = tmp.last;
    in->u.math = FU_OP_EXP2;
    in->args[0] = t;
    (*n)++;
  }
  return true;
}

fu_status fu_lower_relax_exp(fu_module *m, fu_kernel *k, uint32_t *n_relaxed) {
  *n_relaxed = 0;
  relaxer r = {.alloc = m->alloc, .n_ids = k->next_kval_id};
  r.start = fu_mem_calloc(&r.alloc, (size_t)r.n_ids + 2, sizeof *r.start);
  r.state = fu_mem_calloc(&r.alloc, (size_t)r.n_ids + 1, sizeof *r.state);
  fu_status st = FU_ERR_NOMEM;
  if (r.start && r.state) {
    walk_uses(&r, &k->body, false);
    for (uint32_t i = 0; i < r.n_ids; i++) r.start[i + 1] += r.start[i];
    r.n_uses = r.start[r.n_ids];
    r.uses = fu_mem_calloc(&r.alloc, (size_t)r.n_uses + 1, sizeof *r.uses);
    if (r.uses) {
      /* filling advances each start to the next value's; shift back after */
      walk_uses(&r, &k->body, true);
      memmove(r.start + 1, r.start, (size_t)r.n_ids * sizeof *r.start);
      r.start[0] = 0;
      st = rewrite(&r, m, k, &k->body, n_relaxed) ? FU_OK : FU_ERR_NOMEM;
    }
  }
  if (r.uses) fu_mem_free(&r.alloc, r.uses, ((size_t)r.n_uses + 1) * sizeof *r.uses);
  if (r.start) fu_mem_free(&r.alloc, r.start, ((size_t)r.n_ids + 2) * sizeof *r.start);
  if (r.state) fu_mem_free(&r.alloc, r.state, ((size_t)r.n_ids + 1) * sizeof *r.state);
  return st;
}
