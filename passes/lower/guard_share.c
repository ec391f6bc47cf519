/* fuser: the share of a block's threads that take a branch, from the
 * branch condition's integer math over the thread and block indices,
 * evaluated for every thread of block 0 (declared in lower_internal.h).
 *
 * Why: speculate_loads.c keeps the loads of a guard that few threads pass
 * in their branch, and leaves a region whose guards every thread passes as
 * it is.
 *
 * The condition is evaluated exactly, not estimated: constants, thread
 * indices (each thread of the block), block indices (0), block dims, and
 * the integer and boolean ops a lowering builds guards from.  Anything else
 * (a loaded value, a mutable, a float, a grid dim, a scalar parameter)
 * makes the share unknown. */
#include <string.h>

#include "fuser/kir.h"
#include "lower_internal.h"

/* Evaluations a thread may spend on one condition (a guard is a handful of
 * ops; the bound keeps a condition shared as a deep DAG from exploding). */
#define EVAL_BUDGET 4096
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

fu_status fu_guard_eval_init(fu_guard_eval *ev, const fu_allocator *alloc, const fu_kernel *k) {
  memset(ev, 0, sizeof *ev);
  ev->alloc = *alloc;
  ev->k = k;
  ev->n_ids = k->next_kval_id;
  ev->defs = fu_mem_calloc(&ev->alloc, (size_t)ev->n_ids + 1, sizeof *ev->defs);
  if (!ev->defs) return FU_ERR_NOMEM;
  map_defs(ev, &k->body);
  return FU_OK;
}

void fu_guard_eval_free(fu_guard_eval *ev) {
  if (ev->defs) fu_mem_free(&ev->alloc, ev->defs, ((size_t)ev->n_ids + 1) * sizeof *ev->defs);
  ev->defs = NULL;
}

typedef struct thread_point {
  int64_t tid[3];
  uint32_t spent;
} thread_point;

static bool eval(const fu_guard_eval *ev, const fu_kval *v, thread_point *t, uint32_t depth, int64_t *out);

static bool eval_math(const fu_guard_eval *ev, const fu_kinst *in, thread_point *t, uint32_t depth,
                      int64_t *out) {
  int64_t a[3] = {0, 0, 0};
  if (in->n_args > 3) return false;
  for (uint32_t i = 0; i < in->n_args; i++)
    if (!eval(ev, in->args[i], t, depth + 1, &a[i])) return false;
  switch (in->u.math) {
  case FU_OP_CAST: *out = fu_dtype_is_bool(in->results[0]->dtype) ? a[0] != 0 : a[0]; return true;
  case FU_OP_NEG: *out = (int64_t)(0 - (uint64_t)a[0]); return true;
  case FU_OP_LOGICAL_NOT: *out = !a[0]; return true;
  /* wrapping, as the GPU's integers do (and no undefined overflow here) */
  case FU_OP_ADD: *out = (int64_t)((uint64_t)a[0] + (uint64_t)a[1]); return true;
  case FU_OP_SUB: *out = (int64_t)((uint64_t)a[0] - (uint64_t)a[1]); return true;
  case FU_OP_MUL: *out = (int64_t)((uint64_t)a[0] * (uint64_t)a[1]); return true;
  case FU_OP_DIV:
  case FU_OP_FMOD:
    if (a[1] == 0 || a[1] == -1) return false;
    *out = in->u.math == FU_OP_DIV ? a[0] / a[1] : a[0] % a[1];
    return true;
  case FU_OP_MAXIMUM: *out = a[0] > a[1] ? a[0] : a[1]; return true;
  case FU_OP_MINIMUM: *out = a[0] < a[1] ? a[0] : a[1]; return true;
  case FU_OP_EQ: *out = a[0] == a[1]; return true;
  case FU_OP_NE: *out = a[0] != a[1]; return true;
  case FU_OP_LT: *out = a[0] < a[1]; return true;
  case FU_OP_LE: *out = a[0] <= a[1]; return true;
  case FU_OP_GT: *out = a[0] > a[1]; return true;
  case FU_OP_GE: *out = a[0] >= a[1]; return true;
  case FU_OP_LOGICAL_AND: *out = a[0] && a[1]; return true;
  case FU_OP_LOGICAL_OR: *out = a[0] || a[1]; return true;
  case FU_OP_WHERE: *out = a[0] ? a[1] : a[2]; return true;
  default: return false;
  }
}

/* v's value at thread point t (block 0); false when it is not known. */
static bool eval(const fu_guard_eval *ev, const fu_kval *v, thread_point *t, uint32_t depth, int64_t *out) {
  if (depth > EVAL_DEPTH || ++t->spent > EVAL_BUDGET) return false;
  if (v->kind != FU_KV_LOCAL || v->id >= ev->n_ids || !ev->defs[v->id]) return false;
  if (fu_dtype_is_float(v->dtype)) return false;
  const fu_kinst *in = ev->defs[v->id];
  switch (in->kind) {
  case FU_KI_CONST:
    *out = fu_dtype_is_bool(v->dtype) ? (int64_t)in->u.constant.b : in->u.constant.i;
    return true;
  case FU_KI_SPECIAL:
    switch (in->u.special) {
    case FU_SP_TID_X: *out = t->tid[0]; return true;
    case FU_SP_TID_Y: *out = t->tid[1]; return true;
    case FU_SP_TID_Z: *out = t->tid[2]; return true;
    case FU_SP_CTAID_X:
    case FU_SP_CTAID_Y:
    case FU_SP_CTAID_Z:
    case FU_SP_CLUSTER_RANK: *out = 0; return true;
    case FU_SP_NTID_X: *out = ev->k->block[0]; return true;
    case FU_SP_NTID_Y: *out = ev->k->block[1]; return true;
    case FU_SP_NTID_Z: *out = ev->k->block[2]; return true;
    default: return false;
    }
  case FU_KI_MATH: return eval_math(ev, in, t, depth, out);
  default: return false;
  }
}

double fu_guard_share(const fu_guard_eval *ev, const fu_kval *cond) {
  const fu_kernel *k = ev->k;
  uint64_t threads = (uint64_t)k->block[0] * k->block[1] * k->block[2], taken = 0;
  if (threads == 0 || threads > 1024) return -1;
  thread_point t;
  for (t.tid[2] = 0; t.tid[2] < k->block[2]; t.tid[2]++)
    for (t.tid[1] = 0; t.tid[1] < k->block[1]; t.tid[1]++)
      for (t.tid[0] = 0; t.tid[0] < k->block[0]; t.tid[0]++) {
        int64_t c = 0;
        t.spent = 0;
        if (!eval(ev, cond, &t, 0, &c)) return -1;
        taken += c != 0;
      }
  return (double)taken / (double)threads;
}
