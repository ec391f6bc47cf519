/* fuser: the last step of every lowering: in each straight-line block of a
 * kernel, the loads of read-only tensors (the fusion's inputs) move ahead of
 * the block's other instructions, with the pure index math that addresses
 * them.
 *
 * Why: the lowerings emit each load where its value is first needed, so a
 * kernel reading two inputs loads the second only after computing on the
 * first.  ptxas does not move a load above an instruction whose expansion
 * branches (an IEEE reciprocal or division has a slow path), so such a
 * thread waited for two memory latencies in a row: the bf16 SiLU-and-mul
 * kernel kept one load of its two in flight.  With every load of a block
 * issued first, the latencies overlap.
 *
 * What may move: constants, special registers, pure math, and loads of
 * read-only global tensors (nothing in the kernel writes them, so their order
 * against stores, barriers and other loads does not matter).  A load moves
 * only when everything it depends on in the block may move too; reads of
 * mutables, shared- and local-memory accesses, stores, shuffles, barriers,
 * atomics and nested loops or branches stay in place, and a load never moves
 * above a barrier, a shuffle, an atomic, a fence, a loop or a branch: it
 * moves to the start of its region.  The moved instructions keep their
 * relative order, and so do the others, so every instruction still follows
 * the definitions of its operands.  A region moves loads in order up to a
 * budget of bytes set by the registers a thread may hold (hoist_budget);
 * the rest stay where they were. */
#include <string.h>

#include "fuser/kir.h"
#include "lower_internal.h"

static bool pure(const fu_kinst *in) {
  switch (in->kind) {
  case FU_KI_CONST:
  case FU_KI_MATH:
  case FU_KI_SPECIAL: return true;
  case FU_KI_LOAD: {
    const fu_kval *t = in->args[0];
    return t->kind == FU_KV_TENSOR_PARAM && t->readonly && in->u.mem.space == FU_MEM_GLOBAL;
  }
  default: return false;
  }
}

static bool may_move(const fu_kinst *in, bool first) {
  (void)first;
  return pure(in);
}

typedef struct hoister {
  fu_cone_walk w;        /* the block being reordered */
  uint64_t budget;       /* bytes of loads a region moves at most */
  bool across_light_ifs; /* a light branch does not end a region (speculate_loads.c) */
} hoister;

/* Instructions a load never moves above: they end one region of a block
 * and begin the next.  Barriers and shuffles separate the phases of a
 * reduction or a normalization (a load the last phase needs stays in the
 * last phase, instead of holding registers through the reductions); loops
 * and branches are whole statements, but for a light branch (nothing in it
 * delimits a region) when the guarded loads were speculated out of such
 * branches (speculate_loads.c): the loads after it then move above it. */
bool fu_lower_region_boundary(const fu_kinst *in, bool across_light_ifs) {
  switch (in->kind) {
  case FU_KI_SYNC:
  case FU_KI_SHFL_XOR:
  case FU_KI_ATOM_ADD:
  case FU_KI_FENCE:
  case FU_KI_FOR: return true;
  case FU_KI_IF: return !(across_light_ifs && fu_lower_if_is_light(in));
  default: return false;
  }
}

/* Reorders positions [lo, hi) of the block (one region): its movable loads
 * and their cones first, then the rest, each group in its old order, written
 * to out[] from *n_out. */
static void hoist_region(hoister *h, uint32_t lo, uint32_t hi, fu_kinst **out, uint32_t *n_out) {
  fu_cone_walk *w = &h->w;
  fu_cone_walk_define(w, lo, hi, true);
  uint64_t bytes = 0;
  for (uint32_t i = lo; i < hi; i++)
    if (w->insts[i]->kind == FU_KI_LOAD && w->mark[i] == FU_CONE_STAYS && pure(w->insts[i])) {
      uint64_t b = (uint64_t)w->insts[i]->u.mem.width * fu_dtype_size(w->insts[i]->args[0]->dtype);
      if (bytes + b > h->budget) break;
      if (fu_cone_walk_from(w, i, may_move, true)) bytes += b;
    }
  for (int group = 0; group < 2; group++)
    for (uint32_t i = lo; i < hi; i++)
      if ((w->mark[i] == FU_CONE_MOVES) == (group == 0)) out[(*n_out)++] = w->insts[i];
  fu_cone_walk_define(w, lo, hi, false);
}

/* Nested blocks first, then this one, region by region. */
static fu_status hoist_block(hoister *h, fu_kblock *b) {
  uint32_t n = 0;
  for (fu_kinst *in = b->first; in; in = in->next) {
    fu_status st = FU_OK;
    if (in->kind == FU_KI_FOR)
      st = hoist_block(h, &in->u.loop.body);
    else if (in->kind == FU_KI_IF) {
      st = hoist_block(h, &in->u.branch.then_body);
      if (st == FU_OK) st = hoist_block(h, &in->u.branch.else_body);
    }
    if (st != FU_OK) return st;
    n++;
  }
  if (n < 2) return FU_OK;
  fu_cone_walk *w = &h->w;
  if (!fu_cone_walk_reserve(w, 2 * n)) return FU_ERR_NOMEM;
  fu_kinst **order = w->insts + n; /* the new order, in the second half */
  uint32_t i = 0, n_out = 0, lo = 0;
  for (fu_kinst *in = b->first; in; in = in->next) w->insts[i++] = in;
  memset(w->mark, FU_CONE_STAYS, n);
  for (i = 0; i <= n; i++) {
    if (i < n && !fu_lower_region_boundary(w->insts[i], h->across_light_ifs)) continue;
    hoist_region(h, lo, i, order, &n_out);
    if (i < n) order[n_out++] = w->insts[i];
    lo = i + 1;
  }
  for (i = 0; i < n; i++) order[i]->next = i + 1 < n ? order[i + 1] : NULL;
  b->first = order[0];
  b->last = order[n - 1];
  return FU_OK;
}

/* The bytes of loads a region moves ahead at most, against the registers
 * a thread may hold (the SM's regs_per_sm over the launch's threads and
 * the blocks an SM is planned to hold), a byte per register: moved loads
 * hold their registers from the region's start to their use.  A row part
 * of which stays in registers through every pass (`kept`, keep=) leaves
 * less: an eighth of them.
 * Layer norm over rows of 61440 (512 threads, two blocks an SM: 64
 * registers, 6 chunks kept) spilled 18 bytes with 64 bytes of weights and
 * biases moved ahead of its last pass, none with 32; a row of 61440 at 256
 * threads with 8 chunks kept (in f32) spilled 3 KB moving all 60 of them.
 * At least 64 bytes (four vectors) otherwise.  Loads past the budget stay
 * where their values are first needed. */
uint64_t fu_lower_hoist_budget(const fu_kernel *k, bool kept, uint32_t regs_per_sm) {
  uint64_t threads = (uint64_t)k->block[0] * k->block[1] * k->block[2];
  uint64_t blocks = k->min_blocks ? k->min_blocks : 1;
  uint64_t regs = regs_per_sm / (threads * blocks);
  if (regs > 255) regs = 255;
  if (kept) return regs / 2;
  return regs < 64 ? 64 : regs;
}

fu_status fu_lower_hoist_loads(fu_module *m, fu_kernel *k, bool kept, uint32_t regs_per_sm, bool across_light_ifs) {
  hoister h;
  memset(&h, 0, sizeof h);
  h.budget = fu_lower_hoist_budget(k, kept, regs_per_sm);
  h.across_light_ifs = across_light_ifs;
  fu_status st = fu_cone_walk_init(&h.w, &m->alloc, k->next_kval_id);
  if (st == FU_OK) st = hoist_block(&h, &k->body);
  fu_cone_walk_free(&h.w);
  return st;
}
