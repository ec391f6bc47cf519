/* fuser: the share of a block's threads that take a branch, from the
 * branch condition's integer math over the thread and block indices,
 * evaluated for every thread of block 0 (declared in lower_internal.h).
 *
 * Why: speculate_loads.c keeps the loads of a guard that few threads pass
 * in their branch, and leaves a region whose guards every thread passes as
 * it is.
 *
 * The condition is evaluated exactly, not estimated, each of its values
 * once for all the block's threads (a lane each), through the
 * interpreter's own pointwise kernels (fu_interp_eval_int_lanes): the
 * integer and boolean math a lowering builds guards from, over constants,
 * thread indices, block indices (0) and block dims.  Anything else (a
 * loaded value, a mutable, a float, a grid dim, a scalar parameter) makes
 * the share unknown. */
#include <string.h>

#include "fuser/interp.h"
#include "fuser/kir.h"
#include "lower_internal.h"

/* Values one condition may take (a guard is a handful of ops; the bound
 * keeps a pathological condition from costing much). */
#define EVAL_VALUES 256
#define EVAL_DEPTH 64

static void map_defs(fu_guard_eval *ev, const fu_kblock *b) {
  for (const fu_kinst *in = b->first; in; in = in->next) {
    for (uint32_t r = 0; r < in->n_results; r++)
      if (in->results[r]->id < ev->n_ids) ev->defs[in->results[r]->id] = in;
    if (in->kind == FU_KI_FOR) map_defs(ev, &in->u.loop.body);
    if (in->kind == FU_KI_IF) {
      map_defs(ev, &in->u.branch.then_body);
      map_defs(ev, &in->u.branch.else_body);
    }
  }
}

static uint32_t block_threads(const fu_kernel *k) {
  uint64_t n = (uint64_t)k->block[0] * k->block[1] * k->block[2];
  return n > FU_INTERP_MAX_LANES ? 0 : (uint32_t)n;
}

fu_status fu_guard_eval_init(fu_guard_eval *ev, const fu_allocator *alloc, const fu_kernel *k) {
  memset(ev, 0, sizeof *ev);
  ev->alloc = *alloc;
  ev->k = k;
  ev->n_ids = k->next_kval_id;
  ev->lanes = block_threads(k);
  ev->defs = fu_mem_calloc(&ev->alloc, (size_t)ev->n_ids + 1, sizeof *ev->defs);
  ev->slot = fu_mem_calloc(&ev->alloc, (size_t)ev->n_ids + 1, sizeof *ev->slot);
  ev->values = fu_mem_calloc(&ev->alloc, (size_t)EVAL_VALUES * (ev->lanes ? ev->lanes : 1), sizeof *ev->values);
  if (!ev->defs || !ev->slot || !ev->values) {
    fu_guard_eval_free(ev);
    return FU_ERR_NOMEM;
  }
  for (uint32_t i = 0; i <= ev->n_ids; i++) ev->slot[i] = -1;
  map_defs(ev, &k->body);
  return FU_OK;
}

void fu_guard_eval_free(fu_guard_eval *ev) {
  size_t n = (size_t)ev->n_ids + 1;
  if (ev->defs) fu_mem_free(&ev->alloc, ev->defs, n * sizeof *ev->defs);
  if (ev->slot) fu_mem_free(&ev->alloc, ev->slot, n * sizeof *ev->slot);
  if (ev->values)
    fu_mem_free(&ev->alloc, ev->values, (size_t)EVAL_VALUES * (ev->lanes ? ev->lanes : 1) * sizeof *ev->values);
  ev->defs = NULL;
  ev->slot = NULL;
  ev->values = NULL;
}

/* v's value at every lane (thread) of block 0, each value computed once
 * per condition; NULL when it is not known. */
static const int64_t *eval(fu_guard_eval *ev, const fu_kval *v, uint32_t depth) {
  if (v->kind != FU_KV_LOCAL || v->id >= ev->n_ids || !ev->defs[v->id]) return NULL;
  if (ev->slot[v->id] >= 0) return ev->values + (size_t)ev->slot[v->id] * ev->lanes;
  if (depth > EVAL_DEPTH || ev->n_values == EVAL_VALUES || fu_dtype_is_float(v->dtype)) return NULL;
  const fu_kinst *in = ev->defs[v->id];
  const int64_t *args[3] = {NULL, NULL, NULL};
  fu_dtype dts[3] = {FU_DT_NONE, FU_DT_NONE, FU_DT_NONE};
  if (in->kind == FU_KI_MATH) {
    if (in->n_args < 1 || in->n_args > 3) return NULL;
    for (uint32_t i = 0; i < in->n_args; i++) {
      if (!(args[i] = eval(ev, in->args[i], depth + 1))) return NULL;
      dts[i] = in->args[i]->dtype;
    }
    if (ev->n_values == EVAL_VALUES) return NULL;
  }
  const fu_kernel *k = ev->k;
  int64_t *out = ev->values + (size_t)ev->n_values * ev->lanes;
  switch (in->kind) {
  case FU_KI_CONST: {
    int64_t c = fu_dtype_is_bool(v->dtype) ? (int64_t)in->u.constant.b : in->u.constant.i;
    for (uint32_t l = 0; l < ev->lanes; l++) out[l] = c;
    break;
  }
  case FU_KI_SPECIAL: {
    fu_special sp = in->u.special;
    for (uint32_t l = 0; l < ev->lanes; l++) {
      uint32_t tid[3] = {l % k->block[0], l / k->block[0] % k->block[1], l / (k->block[0] * k->block[1])};
      if (sp <= FU_SP_TID_Z) out[l] = tid[sp - FU_SP_TID_X];
      else if (sp >= FU_SP_NTID_X && sp <= FU_SP_NTID_Z) out[l] = k->block[sp - FU_SP_NTID_X];
      else if ((sp >= FU_SP_CTAID_X && sp <= FU_SP_CTAID_Z) || sp == FU_SP_CLUSTER_RANK) out[l] = 0;
      else return NULL;
    }
    break;
  }
  case FU_KI_MATH:
    if (fu_interp_eval_int_lanes(in->u.math, dts, args, in->n_args, v->dtype, ev->lanes, out) != FU_OK) return NULL;
    break;
  default: return NULL;
  }
  ev->slot[v->id] = (int32_t)ev->n_values;
  ev->touched[ev->n_values++] = v->id;
  return out;
}

double fu_guard_share(fu_guard_eval *ev, const fu_kval *cond) {
  if (!ev->lanes) return -1;
  const int64_t *c = eval(ev, cond, 0);
  uint32_t taken = 0;
  for (uint32_t l = 0; c && l < ev->lanes; l++) taken += c[l] != 0;
  for (uint32_t i = 0; i < ev->n_values; i++) ev->slot[ev->touched[i]] = -1;
  ev->n_values = 0;
  return c ? (double)taken / (double)ev->lanes : -1;
}
