/* fuser: the `lower` pass (include/fuser/lower.h): every scheduled segment
 * to kernel IR, with the pointwise lowering of pointwise.c.  That
 * includes transpose segments, which the schedule pass gives the pointwise
 * scheduler's schedule as an uncoalesced correctness fallback: the index
 * graph maps permutes inside the segment, and the layouts of
 * fuser/view_layout.h give the offsets of permuted inputs and of outputs
 * written permuted for host permutes, so the same lowering serves. */
#include <string.h>

#include "fuser/lower.h"

static fu_status run_lower(fu_module *m, fu_pass_context *ctx);

const fu_pass_def fu_pass_lower = {
    "lower",
    "turn each scheduled segment into kernel IR (loops, predicates, vector accesses, launch)",
    NULL,
    run_lower,
};

fu_status fu_lower_module(fu_module *m, fu_diag_engine *diag, FILE *debug) {
  for (fu_fusion *f = m->first; f; f = f->next) {
    for (fu_op *op = f->body.first; op; op = op->next) {
      if (op->kind != FU_OP_SEGMENT) continue;
      fu_segment_info *si = &op->u.segment;
      if (!si->schedule) {
        if (debug)
          fprintf(debug, "lower: @%s: segment '@%s' (%s) has no schedule: not lowered\n", f->name ? f->name : "?",
                  si->name ? si->name : "?", si->scheduler ? si->scheduler : "?");
        continue;
      }
      fu_kernel *k = NULL;
      fu_status st = fu_lower_segment(f, op, diag, &k);
      if (st != FU_OK) return st;
      si->kernel = k;
      if (debug)
        fprintf(debug, "lower: @%s: segment '@%s' -> kernel '@%s' (%u parameters, index %s)%s\n",
                f->name ? f->name : "?", si->name ? si->name : "?", k->name, k->n_params, fu_dtype_name(k->index_dtype),
                si->scheduler && strcmp(si->scheduler, "transpose") == 0 ? " (transpose: the uncoalesced pointwise fallback)"
                                                                         : "");
    }
  }
  return FU_OK;
}

static fu_status run_lower(fu_module *m, fu_pass_context *ctx) {
  FILE *debug = fu_pass_debug_enabled(ctx, "lower") ? ctx->debug_out : NULL;
  return fu_lower_module(m, ctx->diag, debug);
}

uint32_t fu_module_kernels(fu_module *m, fu_kernel **out, uint32_t cap, uint32_t *missing) {
  uint32_t n = 0, miss = 0;
  for (fu_fusion *f = m->first; f; f = f->next)
    for (fu_op *op = fu_walk_first(&f->body); op; op = fu_walk_next(op)) {
      if (op->kind != FU_OP_SEGMENT) continue;
      if (!op->u.segment.kernel) {
        miss++;
        continue;
      }
      if (n < cap) out[n] = op->u.segment.kernel;
      n++;
    }
  if (missing) *missing = miss;
  return n;
}
