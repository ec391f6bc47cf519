/* fuser: matmul segment plans (include/fuser/gemm.h): the names and the
 * check of a plan against its segment. */
#include <string.h>

#include "fuser/gemm.h"

const char *fu_gemm_act_name(fu_gemm_act a) {
  switch (a) {
  case FU_GEMM_ACT_NONE: return "none";
  case FU_GEMM_ACT_RELU: return "relu";
  case FU_GEMM_ACT_GELU: return "gelu";
  }
  return "?";
}

bool fu_segment_runnable(const fu_op *seg) {
  return seg->u.segment.kernel || (seg->u.segment.kind == FU_SK_MATMUL && seg->u.segment.gemm);
}

fu_op *fu_gemm_product(const fu_op *seg) {
  if (!seg || seg->kind != FU_OP_SEGMENT || !seg->u.segment.body) return NULL;
  for (fu_op *op = seg->u.segment.body->first; op; op = op->next)
    if (fu_op_has(op->kind, FU_OF_MATMUL)) return op;
  return NULL;
}

static bool defined_in(const fu_op *seg, const fu_value *v) {
  return v && v->def && v->def->parent == seg->u.segment.body;
}

fu_status fu_gemm_verify(const fu_op *seg, const fu_gemm *g, fu_diag_engine *diag) {
  const char *name = seg->u.segment.name ? seg->u.segment.name : "?";
  if (seg->u.segment.kind != FU_SK_MATMUL) {
    fu_error(diag, g->loc, "'gemm' in segment '@%s' of kind %s: only matmul segments have one", name,
             fu_sched_kind_name(seg->u.segment.kind));
    return FU_ERR_VERIFY;
  }
  const fu_op *mm = fu_gemm_product(seg);
  if (!mm) {
    fu_error(diag, g->loc, "'gemm': segment '@%s' has no matmul or linear", name);
    return FU_ERR_VERIFY;
  }
  if (mm->n_operands < 2 || g->a != mm->operands[0] || g->b != mm->operands[1]) {
    fu_error(diag, g->loc, "'gemm': the operands must be those of the '%s' of segment '@%s'",
             fu_op_info_of(mm->kind)->name, name);
    fu_note(diag, mm->loc, "the product is here");
    return FU_ERR_VERIFY;
  }
  bool out = false;
  for (uint32_t i = 0; i < seg->u.segment.n_outputs; i++) out |= seg->u.segment.outputs[i] == g->d;
  if (!out || !defined_in(seg, g->d)) {
    fu_error(diag, g->loc, "'gemm': the result must be an output of segment '@%s' defined in it", name);
    return FU_ERR_VERIFY;
  }
  if (g->bias && !fu_segment_has_input(seg, g->bias) && !defined_in(seg, g->bias)) {
    fu_error(diag, g->loc, "'gemm': the bias must be an input or a value of segment '@%s'", name);
    return FU_ERR_VERIFY;
  }
  return FU_OK;
}
