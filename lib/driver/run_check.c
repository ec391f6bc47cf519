/* fuser driver: fuser-run --check: the reference interpreter on the same
 * inputs, and each output compared with its result, with the error bound
 * of the reductions upstream of it (fu_check_compare_bounded), whichever
 * device computed it. */
#include <string.h>

#include "run_internal.h"

void run_walk_upstream(fu_fusion *f, fu_value *out, fu_allocator al, void (*visit)(void *ctx, const fu_value *v),
                       void *ctx) {
  uint32_t n = f->next_value_id;
  bool *seen = fu_mem_calloc(&al, n ? n : 1, sizeof *seen);
  fu_value **stack = fu_mem_calloc(&al, n ? n : 1, sizeof *stack);
  uint32_t top = 0;
  if (seen && stack && out->id < n) {
    seen[out->id] = true;
    stack[top++] = out;
  }
  while (top > 0) {
    fu_value *v = stack[--top];
    fu_op *op = v->def;
    if (!op || op->kind == FU_OP_INPUT) continue;
    visit(ctx, v);
    for (uint32_t i = 0; i < op->n_operands; i++) {
      fu_value *x = op->operands[i];
      if (x->id < n && !seen[x->id]) {
        seen[x->id] = true;
        stack[top++] = x;
      }
    }
  }
  if (seen) fu_mem_free(&al, seen, (n ? n : 1) * sizeof *seen);
  if (stack) fu_mem_free(&al, stack, (n ? n : 1) * sizeof *stack);
}

/* run_walk_upstream's step for path_tolerance: the loosest float dtype. */
static void loosen(void *ctx, const fu_value *v) {
  fu_check_tolerance *t = ctx;
  if (!fu_dtype_is_float(v->type.dtype)) return;
  fu_check_tolerance d = fu_check_default_tolerance(v->type.dtype);
  if (d.rtol > t->rtol) t->rtol = d.rtol;
  if (d.atol > t->atol) t->atol = d.atol;
}

/* The default tolerance of an output, loosened to that of the least precise
 * float dtype its value was computed through: an f32 result cast to f64
 * carries f32 rounding (a kernel's powf or libdevice call may differ from
 * libm's by an ulp), so the f64 tolerance would fail a right kernel.
 * Inputs count only through the ops that read them. */
static fu_check_tolerance path_tolerance(fu_fusion *f, fu_value *out, fu_allocator al) {
  fu_check_tolerance t = fu_check_default_tolerance(out->type.dtype);
  run_walk_upstream(f, out, al, loosen, &t);
  return t;
}

fu_status run_check(const run_args *a, fu_fusion *f, const fu_arg *in, uint32_t n_in, const fu_arg *res,
                    uint32_t n_res, const char *where, fu_diag_engine *diag, run_check_line **out) {
  fu_allocator al = a->alloc;
  fu_arg *ref = NULL, *bound = NULL;
  uint32_t n_ref = 0;
  *out = NULL;
  fu_interp_options o = {.threads = a->interp_threads};
  fu_status st = fu_interp_run_bounded(f, in, n_in, &o, al, diag, &ref, &bound, &n_ref);
  if (st != FU_OK) {
    fu_note(diag, f->loc, "while computing the reference results of '@%s' for --check", f->name ? f->name : "");
    return st;
  }
  run_check_line *lines = fu_mem_calloc(&al, n_res ? n_res : 1, sizeof *lines);
  if (!lines || n_ref != n_res) {
    fu_args_free(ref, n_ref, al);
    fu_args_free(bound, n_ref, al);
    if (lines) fu_mem_free(&al, lines, (n_res ? n_res : 1) * sizeof *lines);
    return FU_ERR_NOMEM;
  }
  uint32_t n_out = fu_fusion_outputs(f, NULL, 0);
  fu_value **outs = n_out ? fu_mem_calloc(&al, n_out, sizeof *outs) : NULL;
  if (outs) fu_fusion_outputs(f, outs, n_out);
  for (uint32_t i = 0; i < n_res && st == FU_OK; i++) {
    run_check_line *c = &lines[i];
    if (res[i].kind != FU_ARG_TENSOR) {
      c->pass = true;
      continue;
    }
    c->tol = outs && i < n_out && outs[i]->type.dtype == res[i].tensor.dtype ? path_tolerance(f, outs[i], al)
                                                                             : fu_check_default_tolerance(res[i].tensor.dtype);
    if (fu_dtype_is_float(res[i].tensor.dtype)) {
      if (a->rtol >= 0) c->tol.rtol = a->rtol;
      if (a->atol >= 0) c->tol.atol = a->atol;
    }
    const fu_host_tensor *b = bound[i].kind == FU_ARG_TENSOR ? &bound[i].tensor : NULL;
    st = fu_check_compare_threads(&res[i].tensor, &ref[i].tensor, b, c->tol, a->interp_threads, &c->r);
    if (st != FU_OK)
      fu_error(diag, f->loc, "output %u of '@%s' has a different dtype or shape %s than in the interpreter", i,
               f->name ? f->name : "", where);
    c->pass = c->r.n_mismatch == 0;
  }
  if (outs) fu_mem_free(&al, outs, n_out * sizeof *outs);
  fu_args_free(ref, n_ref, al);
  fu_args_free(bound, n_ref, al);
  if (st != FU_OK) {
    fu_mem_free(&al, lines, (n_res ? n_res : 1) * sizeof *lines);
    return st;
  }
  *out = lines;
  return FU_OK;
}
