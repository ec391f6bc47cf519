/* fuser: the `tensor` lines a scheduler adds once its loops are built.
 *
 * The reduction and persistent schedulers pick their vectors from the row
 * and the dtypes; the index graph then says which accesses cannot be
 * vectors (a strided input, or under a peeled split every tensor but the
 * one it aligns).  Those are marked access=scalar, so that the verifier,
 * which asks for every vector access to be legal or marked, accepts the
 * schedule and the lowering reads them element by element. */
#include "internal.h"

fu_status fu_schedule_mark_scalar(fu_module *m, fu_igraph *g, fu_schedule *s) {
  uint32_t n_acc = fu_igraph_num_accesses(g), have = s->n_tensors;
  if (!n_acc) return FU_OK;
  fu_stensor *t = fu_arena_calloc(m->arena, have + n_acc, sizeof *t);
  if (!t) return FU_ERR_NOMEM;
  for (uint32_t i = 0; i < have; i++) t[i] = s->tensors[i];
  s->tensors = t;
  for (uint32_t i = 0; i < n_acc; i++) {
    const fu_iaccess *a = fu_igraph_access(g, i);
    if (a->mode == FU_AM_VECTOR || !a->why_not_vector || fu_schedule_tensor(s, a->value)) continue;
    s->tensors[s->n_tensors++] = (fu_stensor){.value = (fu_value *)a->value, .memory = FU_MEM_GLOBAL,
                                              .inline_pos = -1, .access = FU_ACCESS_SCALAR, .loc = fu_loc_none()};
  }
  return FU_OK;
}
