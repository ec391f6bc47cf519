/* fuser: segment pass, matmul segments.
 *
 * A matmul or linear runs in cuBLASLt with the epilogue cuBLASLt fuses
 * (passes/matmul_epilogue.c).  Before the greedy merges, every product is
 * marked (FU_SEG_NF_MATMUL) and the ops of its epilogue are tagged with it
 * (epi_of); the matmul check (schedulers.c) accepts a group holding one
 * product and only ops of its own epilogue, and every other check refuses
 * a group with a product.  Step 2 then first merges each product with its
 * epilogue, op by op in chain order, through the usual trial (so
 * --debug=segment shows those merges), and the greedy merges that follow
 * can join nothing else to it: each refusal names the op that is not in
 * the epilogue. */
#include <string.h>

#include "../matmul_epilogue.h"
#include "internal.h"

typedef struct mark_ctx {
  fu_seg_env *env;
} mark_ctx;

/* A top-level op that can join a segment. */
static bool inside(void *user, const fu_op *op) {
  mark_ctx *c = user;
  uint32_t n = fu_seg_node_of(c->env, op);
  return n != FU_SEG_NONE && c->env->nodes[n].op == op && (c->env->nodes[n].flags & FU_SEG_NF_COMPUTE);
}

/* Runs the epilogue matcher once per product. */
static fu_status for_each_epilogue(fu_seg_env *env, fu_status (*fn)(fu_seg_env *, uint32_t, const fu_mm_epilogue *, void *),
                                   void *arg) {
  bool any = false;
  for (uint32_t n = 0; n < env->n_nodes && !any; n++) any = (env->nodes[n].flags & FU_SEG_NF_MATMUL) != 0;
  if (!any) return FU_OK;
  fu_use_map uses;
  fu_status st = fu_use_map_build(env->f, &uses);
  if (st != FU_OK) return st;
  mark_ctx c = {env};
  for (uint32_t n = 0; n < env->n_nodes && st == FU_OK; n++) {
    if (!(env->nodes[n].flags & FU_SEG_NF_MATMUL)) continue;
    fu_mm_epilogue e;
    fu_mm_match_epilogue(env->nodes[n].op, &uses, inside, &c, &e);
    st = fn(env, n, &e, arg);
  }
  fu_use_map_free(&uses);
  return st;
}

static fu_status tag(fu_seg_env *env, uint32_t n, const fu_mm_epilogue *e, void *arg) {
  (void)arg;
  for (uint32_t i = 0; i < e->n_ops; i++) {
    uint32_t k = fu_seg_node_of(env, e->ops[i]);
    if (k != FU_SEG_NONE && env->nodes[k].epi_of < 0) env->nodes[k].epi_of = (int32_t)n;
  }
  return FU_OK;
}

fu_status fu_seg_mark_matmuls(fu_seg_env *env) {
  for (uint32_t n = 0; n < env->n_nodes; n++) {
    env->nodes[n].epi_of = -1;
    if ((env->nodes[n].flags & FU_SEG_NF_COMPUTE) && fu_op_has(env->nodes[n].op->kind, FU_OF_MATMUL))
      env->nodes[n].flags |= FU_SEG_NF_MATMUL;
  }
  return for_each_epilogue(env, tag, NULL);
}

static fu_status merge_chain(fu_seg_env *env, uint32_t n, const fu_mm_epilogue *e, void *arg) {
  fu_seg_merge_fn merge = *(fu_seg_merge_fn *)arg;
  fu_status st = FU_OK;
  for (uint32_t i = 0; i < e->n_ops && st == FU_OK; i++) {
    uint32_t k = fu_seg_node_of(env, e->ops[i]);
    if (k != FU_SEG_NONE && env->nodes[k].epi_of == (int32_t)n) st = merge(env, n, k);
  }
  return st;
}

fu_status fu_seg_merge_epilogues(fu_seg_env *env, fu_seg_merge_fn merge) {
  return for_each_epilogue(env, merge_chain, &merge);
}
