/* fuser: the walk that the kernel-IR steps moving loads share
 * (hoist_loads.c, speculate_loads.c): a block's instructions by position,
 * where each kernel value is defined among them, and the operand cone of
 * one instruction (the instructions of the block it needs, transitively),
 * marked to move when every one of them may. */
#include <string.h>

#include "fuser/kir.h"
#include "lower_internal.h"

fu_status fu_cone_walk_init(fu_cone_walk *w, const fu_allocator *alloc, uint32_t n_ids) {
  memset(w, 0, sizeof *w);
  w->alloc = *alloc;
  return fu_cone_walk_cover(w, n_ids) ? FU_OK : FU_ERR_NOMEM;
}

/* Grows the definition map to ids below n_ids (kernel steps that create
 * values make the kernel's ids grow), new entries -1. */
bool fu_cone_walk_cover(fu_cone_walk *w, uint32_t n_ids) {
  if (w->def && n_ids <= w->n_ids) return true;
  size_t old = w->def ? ((size_t)w->n_ids + 1) * sizeof *w->def : 0;
  int32_t *def = fu_mem_realloc(&w->alloc, w->def, old, ((size_t)n_ids + 1) * sizeof *def);
  if (!def) return false;
  for (uint32_t i = w->def ? w->n_ids + 1 : 0; i <= n_ids; i++) def[i] = -1;
  w->def = def;
  w->n_ids = n_ids;
  return true;
}

bool fu_cone_walk_reserve(fu_cone_walk *w, uint32_t n) {
  if (n <= w->cap) return true;
  uint32_t cap = w->cap ? w->cap : 64;
  while (cap < n) cap *= 2;
  fu_kinst **insts = fu_mem_realloc(&w->alloc, w->insts, (size_t)w->cap * sizeof *insts, (size_t)cap * sizeof *insts);
  if (insts) w->insts = insts;
  uint8_t *mark = fu_mem_realloc(&w->alloc, w->mark, w->cap, cap);
  if (mark) w->mark = mark;
  uint32_t *cone = fu_mem_realloc(&w->alloc, w->cone, (size_t)w->cap * sizeof *cone, (size_t)cap * sizeof *cone);
  if (cone) w->cone = cone;
  if (!insts || !mark || !cone) return false;
  w->cap = cap;
  return true;
}

void fu_cone_walk_define(fu_cone_walk *w, uint32_t lo, uint32_t hi, bool defined) {
  for (uint32_t i = lo; i < hi; i++)
    for (uint32_t r = 0; r < w->insts[i]->n_results; r++) {
      const fu_kval *v = w->insts[i]->results[r];
      if (v->id < w->n_ids) w->def[v->id] = defined ? (int32_t)i : -1;
    }
}

/* A breadth-first walk over operand definitions, each position visited
 * once; positions already marked to move are not walked again. */
bool fu_cone_walk_from(fu_cone_walk *w, uint32_t p, bool (*may_move)(const fu_kinst *in, bool first), bool apply) {
  uint32_t head = 0, tail = 0;
  bool ok = true;
  w->mark[p] = FU_CONE_IN;
  w->cone[tail++] = p;
  while (head < tail && ok) {
    const fu_kinst *in = w->insts[w->cone[head]];
    if (!may_move(in, head == 0)) {
      ok = false;
      break;
    }
    head++;
    for (uint32_t a = 0; a < in->n_args; a++) {
      const fu_kval *v = in->args[a];
      if (v->kind != FU_KV_LOCAL || v->id >= w->n_ids || w->def[v->id] < 0) continue;
      uint32_t q = (uint32_t)w->def[v->id];
      if (w->mark[q] != FU_CONE_STAYS) continue;
      w->mark[q] = FU_CONE_IN;
      w->cone[tail++] = q;
    }
  }
  for (uint32_t i = 0; i < tail; i++)
    if (w->mark[w->cone[i]] == FU_CONE_IN) w->mark[w->cone[i]] = ok && apply ? FU_CONE_MOVES : FU_CONE_STAYS;
  return ok;
}

void fu_cone_walk_free(fu_cone_walk *w) {
  if (w->def) fu_mem_free(&w->alloc, w->def, ((size_t)w->n_ids + 1) * sizeof *w->def);
  fu_mem_free(&w->alloc, w->insts, (size_t)w->cap * sizeof *w->insts);
  fu_mem_free(&w->alloc, w->mark, w->cap);
  fu_mem_free(&w->alloc, w->cone, (size_t)w->cap * sizeof *w->cone);
  memset(w, 0, sizeof *w);
}
