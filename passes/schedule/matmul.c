/* fuser: the matmul "scheduler": the plan of a matmul segment.
 *
 * cuBLASLt picks its own kernel; what fuser decides is how each matrix is
 * read (row- or column-major, and the leading dim, from the operand's
 * layout: an input's strides, a permute the boundary pass made a host
 * view, so a transposed operand costs no copy) and which epilogue runs
 * (passes/matmul_epilogue.c).  Both go into the segment as its `gemm` line
 * (fuser/gemm.h); the segment gets no schedule and no kernel.  The runtime
 * reads the plan, checks the actual strides against it, and lets
 * cuBLASLt's heuristic choose the algorithm. */
#include <stdio.h>

#include "fuser/gemm.h"
#include "fuser/schedule.h"
#include "fuser/view_layout.h"
#include "../matmul_epilogue.h"

static bool in_body(void *user, const fu_op *op) { return op->parent == (const fu_block *)user; }

static bool stride_is(const fu_stride *s, int64_t c) { return s->n_atoms == 0 && s->coef == c; }

static const char *stride_text(fu_module *m, const fu_stride *s) {
  fu_strbuf sb;
  fu_strbuf_init(&sb, m->alloc);
  fu_stride_print(&sb, s);
  const char *t = fu_arena_strdup(m->arena, sb.data ? sb.data : "");
  fu_strbuf_free(&sb);
  return t;
}

static const char *extent_text(fu_module *m, fu_extent e) {
  char buf[32];
  if (e.sym) return fu_arena_strdup(m->arena, e.sym);
  snprintf(buf, sizeof buf, "%lld", (long long)e.value);
  return fu_arena_strdup(m->arena, buf);
}

/* How the matrix of dims (r, c) of v lies: row (c has stride 1, the leading
 * dim is r's stride) or col (r has stride 1, leading dim c's).  A dim of
 * extent 1 may have any stride. */
static bool matrix_order(fu_module *m, const fu_value *v, const fu_view_layout *l, int32_t r, int32_t c,
                         fu_gemm_order *o, const char **ld) {
  const fu_extent *d = v->type.dims;
  if (stride_is(&l->strides[c], 1) || fu_extent_is_one(d[c])) {
    *o = FU_GEMM_ROW;
    *ld = fu_extent_is_one(d[r]) ? extent_text(m, d[c]) : stride_text(m, &l->strides[r]);
    return true;
  }
  if (stride_is(&l->strides[r], 1) || fu_extent_is_one(d[r])) {
    *o = FU_GEMM_COL;
    *ld = stride_text(m, &l->strides[c]);
    return true;
  }
  return false;
}

/* A and B of the product as [M, K] and [K, N] matrices in memory. */
static fu_status operand_orders(fu_fusion *f, const fu_op *mm, fu_gemm *g, fu_diag_engine *diag) {
  fu_layout_analysis la;
  fu_status st = fu_layout_analysis_init(&la, f);
  if (st != FU_OK) return st;
  fu_module *m = f->module;
  for (int i = 0; i < 2 && st == FU_OK; i++) {
    const fu_value *v = mm->operands[i];
    fu_view_layout l;
    st = fu_layout_analysis_value(&la, v, &l, NULL);
    if (st != FU_OK) {
      fu_error(diag, mm->loc, "'%s': the memory layout of operand '%%%s' is not known", fu_op_info_of(mm->kind)->name,
               v->name ? v->name : "?");
      break;
    }
    int32_t rk = v->type.rank;
    fu_gemm_order *o = i ? &g->b_order : &g->a_order;
    const char **ld = i ? &g->ldb : &g->lda;
    bool ok;
    if (rk == 1) {
      /* a vector: one row of A, one column of B; it lies as both */
      *o = i ? FU_GEMM_COL : FU_GEMM_ROW;
      *ld = extent_text(m, v->type.dims[0]);
      ok = stride_is(&l.strides[0], 1) || fu_extent_is_one(v->type.dims[0]);
    } else if (i == 1 && mm->kind == FU_OP_LINEAR) {
      /* the weight [N, K] is B transposed */
      ok = matrix_order(m, v, &l, 1, 0, o, ld);
    } else {
      ok = matrix_order(m, v, &l, rk - 2, rk - 1, o, ld);
    }
    if (!ok) {
      fu_strbuf sb;
      fu_strbuf_init(&sb, m->alloc);
      fu_layout_print(&sb, &l);
      fu_error(diag, mm->loc,
               "'%s': operand '%%%s' (strides %s) has no dim of stride 1 among its last two: cuBLASLt cannot read it "
               "without a copy",
               fu_op_info_of(mm->kind)->name, v->name ? v->name : "?", sb.data ? sb.data : "?");
      fu_strbuf_free(&sb);
      st = FU_ERR_UNSUPPORTED;
    }
  }
  fu_layout_analysis_free(&la);
  return st;
}

fu_status fu_schedule_matmul(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag, FILE *debug,
                             fu_schedule **out) {
  (void)dev;
  *out = NULL;
  fu_segment_info *si = &seg->u.segment;
  const char *name = si->name ? si->name : "?";
  if (si->gemm) return FU_OK;
  fu_op *mm = fu_gemm_product(seg);
  if (!mm) {
    fu_error(diag, seg->loc, "matmul segment '@%s' has no matmul or linear", name);
    return FU_ERR_VERIFY;
  }
  fu_use_map uses;
  fu_status st = fu_use_map_build(f, &uses);
  if (st != FU_OK) return st;
  fu_mm_epilogue e;
  fu_mm_match_epilogue(mm, &uses, in_body, si->body, &e);
  fu_use_map_free(&uses);
  /* every op of the segment is the product or in its epilogue */
  for (fu_op *op = si->body->first; op; op = op->next) {
    bool found = op == mm;
    for (uint32_t i = 0; i < e.n_ops && !found; i++) found = e.ops[i] == op;
    if (!found) {
      fu_error(diag, op->loc, "'%s' in matmul segment '@%s' is not in the epilogue cuBLASLt fuses into its '%s'",
               fu_op_info_of(op->kind)->name, name, fu_op_info_of(mm->kind)->name);
      return FU_ERR_UNSUPPORTED;
    }
  }
  fu_gemm *g = fu_arena_calloc(f->module->arena, 1, sizeof *g);
  if (!g) return FU_ERR_NOMEM;
  g->a = mm->operands[0];
  g->b = mm->operands[1];
  g->d = e.out;
  g->bias = e.bias;
  g->alpha = e.alpha;
  g->act = e.act;
  g->loc = seg->loc;
  st = operand_orders(f, mm, g, diag);
  if (st == FU_OK) st = fu_gemm_verify(seg, g, diag);
  if (st != FU_OK) return st;
  si->gemm = g;
  if (debug)
    fprintf(debug, "schedule: @%s: matmul segment '@%s': A %s, B %s, epilogue %s%s, alpha %g\n", f->name ? f->name : "?",
            name, g->a_order == FU_GEMM_ROW ? "row-major" : "column-major",
            g->b_order == FU_GEMM_ROW ? "row-major" : "column-major", fu_gemm_act_name(g->act),
            g->bias ? " with a bias" : "", g->alpha);
  return FU_OK;
}
