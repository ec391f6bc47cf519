/* fuser: the softmax pattern whose max and sum of exponentials fold in one
 * pass over the row ("online softmax").  A sum of exp(a - max(a)) needs the
 * max before its first term, so a kernel that folds the two one after the
 * other makes two passes over the row and two combines across threads.
 * Folded together, each thread keeps (m, s): the largest element so far
 * and the sum of exp(x - m) of its elements, rescaling s by exp(m - m')
 * when m grows to m'; two such states combine the same way.  The schedule
 * says where this applies (`online=true`, docs/ir.md); the persistent
 * lowering folds the pairs this file finds. */
#include <string.h>

#include "fuser/schedule.h"

/* Whether broadcast op b puts back exactly the dims `red` of a rank-`rank`
 * value that a reduction removed (keepdim=false). */
static bool restores(const fu_op *b, const bool *red, int32_t rank) {
  if (b->results[0]->type.rank != rank) return false;
  if (b->kind == FU_OP_BROADCAST) {
    if (b->u.broadcast.n != (uint32_t)rank) return false;
    for (int32_t d = 0; d < rank; d++)
      if (b->u.broadcast.is_broadcast[d] != red[d]) return false;
    return true;
  }
  if (b->kind != FU_OP_BROADCAST_IN_DIM) return false;
  uint32_t k = 0;
  for (int32_t d = 0; d < rank; d++) {
    if (red[d]) continue;
    if (k >= b->u.broadcast_in_dim.broadcast_dims.n || b->u.broadcast_in_dim.broadcast_dims.v[k] != d) return false;
    k++;
  }
  return k == b->u.broadcast_in_dim.broadcast_dims.n;
}

/* The op defining v in block `in`, or NULL. */
static const fu_op *def_in(const fu_value *v, const fu_block *in) {
  return v && !v->is_literal && v->def && v->def->parent == in ? v->def : NULL;
}

const fu_op *fu_online_softmax_max(const fu_op *sum) {
  if (sum->kind != FU_OP_SUM || sum->n_results != 1) return NULL;
  fu_dtype t = sum->results[0]->type.dtype;
  if (t != FU_DT_F32 && t != FU_DT_F64) return NULL;
  const fu_block *in = sum->parent;
  const fu_op *e = def_in(sum->operands[0], in);
  if (!e || e->kind != FU_OP_EXP || e->results[0]->type.dtype != t) return NULL;
  const fu_op *d = def_in(e->operands[0], in);
  if (!d || d->kind != FU_OP_SUB || d->results[0]->type.dtype != t) return NULL;
  const fu_value *a = d->operands[0];
  /* the max broadcast back: by a broadcast op, or kept dims of size 1 */
  const fu_op *b = def_in(d->operands[1], in);
  if (!b) return NULL;
  const fu_op *mx = b->kind == FU_OP_MAX ? b : b->n_operands == 1 ? def_in(b->operands[0], in) : NULL;
  if (!mx || mx->kind != FU_OP_MAX || mx->n_results != 1 || mx->operands[0] != a) return NULL;
  if (mx->u.reduce.keepdim != (b == mx)) return NULL;
  if (mx->results[0]->type.dtype != t || a->type.dtype != t) return NULL;
  if (!fu_type_same_shape(&a->type, &sum->operands[0]->type)) return NULL;
  bool red_max[FU_MAX_RANK], red_sum[FU_MAX_RANK];
  fu_reduction_dims(mx, red_max);
  fu_reduction_dims(sum, red_sum);
  if (memcmp(red_max, red_sum, sizeof red_max) != 0) return NULL;
  return b == mx || restores(b, red_max, a->type.rank) ? mx : NULL;
}

uint32_t fu_online_softmax_pairs(const fu_op *seg) {
  const fu_block *body = seg->u.segment.body;
  uint32_t n = 0;
  for (const fu_op *op = body ? body->first : NULL; op; op = op->next)
    if (fu_online_softmax_max(op)) n++;
  return n;
}
