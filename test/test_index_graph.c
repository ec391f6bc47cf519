/* Tests of index expressions and of the index graph of scheduled segments. */
#include <stdio.h>
#include <string.h>

#include "fuser/index_graph.h"
#include "fuser/parse.h"
#include "fuser/schedule.h"
#include "fuser/verify.h"
#include "harness.h"

static char *ixs(const fu_ix *x, char *buf, size_t cap) {
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_ix_print(&sb, x);
  snprintf(buf, cap, "%s", sb.data ? sb.data : "");
  fu_strbuf_free(&sb);
  return buf;
}

/* Constant folding, canonical monomials and hash-consing. */
static void test_ix_basics(void) {
  fu_ix_ctx *c = fu_ix_ctx_new(fu_default_allocator());
  char b[256];
  const fu_ix *two = fu_ix_const(c, 2), *three = fu_ix_const(c, 3);
  CHECK(fu_ix_add(c, two, three) == fu_ix_const(c, 5));
  CHECK(fu_ix_mul(c, two, three) == fu_ix_const(c, 6));
  CHECK(fu_ix_div(c, fu_ix_const(c, 7), two) == three);
  CHECK(fu_ix_mod(c, fu_ix_const(c, 7), two) == fu_ix_const(c, 1));
  CHECK(fu_ix_ceildiv(c, fu_ix_const(c, 7), two) == fu_ix_const(c, 4));
  const fu_ix *n = fu_ix_sym(c, "N"), *m = fu_ix_sym(c, "M");
  CHECK(fu_ix_sym(c, "N") == n);
  /* N * M * 2 == 2 * (M * N): one canonical node */
  CHECK(fu_ix_mul(c, fu_ix_mul(c, n, m), two) == fu_ix_mul(c, two, fu_ix_mul(c, m, n)));
  CHECK(fu_ix_add(c, n, fu_ix_const(c, 0)) == n);
  CHECK(fu_ix_mul(c, n, fu_ix_const(c, 1)) == n);
  CHECK(fu_ix_mul(c, n, fu_ix_const(c, 0)) == fu_ix_const(c, 0));
  CHECK(fu_ix_div(c, n, fu_ix_const(c, 1)) == n);
  CHECK(fu_ix_mod(c, n, fu_ix_const(c, 1)) == fu_ix_const(c, 0));
  /* (x * 8 + y) / 4 = x * 2 + y / 4, and % 4 keeps only y */
  const fu_ix *x = fu_ix_var(c, "x", 1, NULL, 0, 0), *y = fu_ix_var(c, "y", 1, NULL, 0, 0);
  const fu_ix *e = fu_ix_add(c, fu_ix_mul(c, x, fu_ix_const(c, 8)), y);
  CHECK_STR(ixs(fu_ix_div(c, e, fu_ix_const(c, 4)), b, sizeof b), "x * 2 + y / 4");
  CHECK(fu_ix_mod(c, e, fu_ix_const(c, 4)) == fu_ix_mod(c, y, fu_ix_const(c, 4)));
  /* bounds: a variable below 4 divided by 4 is 0, modulo 4 itself */
  const fu_ix *v = fu_ix_var(c, "v", 1, NULL, 0, 4);
  CHECK(fu_ix_div(c, v, fu_ix_const(c, 4)) == fu_ix_const(c, 0));
  CHECK(fu_ix_mod(c, v, fu_ix_const(c, 4)) == v);
  CHECK_EQ_INT(fu_ix_upper(fu_ix_add(c, fu_ix_mul(c, v, fu_ix_const(c, 3)), fu_ix_const(c, 1))), 11);
  /* divisibility, also symbolic */
  CHECK(fu_ix_divides(fu_ix_const(c, 4), fu_ix_const(c, 3072)));
  CHECK(!fu_ix_divides(fu_ix_const(c, 4), fu_ix_const(c, 30)));
  CHECK(fu_ix_divides(n, fu_ix_mul(c, n, m)));
  CHECK(!fu_ix_divides(fu_ix_const(c, 4), n));
  CHECK(fu_ix_divides(fu_ix_const(c, 4), fu_ix_mul(c, n, fu_ix_const(c, 8))));
  /* substitution re-simplifies */
  CHECK(fu_ix_subst(c, fu_ix_add(c, v, fu_ix_const(c, 2)), v, fu_ix_const(c, 3)) == fu_ix_const(c, 5));
  CHECK(!fu_ix_failed(c));
  fu_ix_ctx_free(c);
}

/* q * (y / q) + (y % q) = y, also nested and symbolic: a row-major tensor
 * indexed through the mixed-radix coordinates of a merged axis reads the
 * merged index itself. */
static void test_ix_linear(void) {
  fu_ix_ctx *c = fu_ix_ctx_new(fu_default_allocator());
  char b[256];
  const fu_ix *g = fu_ix_var(c, "g", 1, NULL, 0, 0);
  const fu_ix *c128 = fu_ix_const(c, 128), *c3072 = fu_ix_const(c, 3072);
  /* coordinates of g over [64, 128, 3072] */
  const fu_ix *y = fu_ix_div(c, g, c3072);
  const fu_ix *d2 = fu_ix_mod(c, g, c3072), *d1 = fu_ix_mod(c, y, c128), *d0 = fu_ix_div(c, y, c128);
  const fu_ix *off = fu_ix_add(c, fu_ix_add(c, fu_ix_mul(c, d0, fu_ix_const(c, 393216)), fu_ix_mul(c, d1, c3072)), d2);
  CHECK(fu_ix_simplify_linear(c, off) == g);
  /* symbolic: [N, M] row-major over g */
  const fu_ix *mm = fu_ix_sym(c, "M");
  const fu_ix *s_off = fu_ix_add(c, fu_ix_mul(c, fu_ix_div(c, g, mm), mm), fu_ix_mod(c, g, mm));
  CHECK(fu_ix_simplify_linear(c, s_off) == g);
  /* a column-major access does not fold */
  const fu_ix *t_off = fu_ix_add(c, fu_ix_div(c, g, mm), fu_ix_mul(c, fu_ix_mod(c, g, mm), fu_ix_sym(c, "N")));
  CHECK(fu_ix_simplify_linear(c, t_off) != g);
  CHECK_STR(ixs(fu_ix_simplify_linear(c, fu_ix_add(c, fu_ix_mul(c, g, fu_ix_const(c, 2)), fu_ix_mul(c, g, fu_ix_const(c, 3)))), b,
                sizeof b),
            "g * 5");
  /* NCHW read along a merged (N, H, W) axis: H and W are adjacent in
   * memory, so (g / 28 % 28) * 28 + g % 28 is g % 784, and the divisions
   * of a chain combine: g / 28 / 28 is g / 784 */
  const fu_ix *c28 = fu_ix_const(c, 28);
  CHECK(fu_ix_div(c, fu_ix_div(c, g, c28), c28) == fu_ix_div(c, g, fu_ix_const(c, 784)));
  const fu_ix *hw = fu_ix_add(c, fu_ix_mul(c, fu_ix_mod(c, fu_ix_div(c, g, c28), c28), c28), fu_ix_mod(c, g, c28));
  CHECK(fu_ix_simplify_linear(c, hw) == fu_ix_mod(c, g, fu_ix_const(c, 784)));
  /* scaled by a stride of 4 (a permuted layout): (g % 30) * 4 */
  const fu_ix *c6 = fu_ix_const(c, 6);
  const fu_ix *perm = fu_ix_add(c, fu_ix_mul(c, fu_ix_mod(c, fu_ix_div(c, g, c6), fu_ix_const(c, 5)), fu_ix_const(c, 24)),
                                fu_ix_mul(c, fu_ix_mod(c, g, c6), fu_ix_const(c, 4)));
  CHECK_STR(ixs(fu_ix_simplify_linear(c, perm), b, sizeof b), "g % 30 * 4");
  /* symbolic radices: (g / W % H) * W + g % W = g % (H * W) */
  const fu_ix *hh = fu_ix_sym(c, "H"), *ww = fu_ix_sym(c, "W");
  const fu_ix *shw = fu_ix_add(c, fu_ix_mul(c, fu_ix_mod(c, fu_ix_div(c, g, ww), hh), ww), fu_ix_mod(c, g, ww));
  CHECK(fu_ix_simplify_linear(c, shw) == fu_ix_mod(c, g, fu_ix_mul(c, hh, ww)));
  /* a digit with the wrong weight stays */
  const fu_ix *bad = fu_ix_add(c, fu_ix_mul(c, fu_ix_mod(c, fu_ix_div(c, g, c28), c28), fu_ix_const(c, 27)), fu_ix_mod(c, g, c28));
  CHECK(fu_ix_simplify_linear(c, bad) != fu_ix_mod(c, g, fu_ix_const(c, 784)));
  fu_ix_ctx_free(c);
}

/* Along a vector lane: affine with stride 1 and aligned = a vector;
 * stride 0 = the same element; crossing a boundary = not affine. */
static void test_ix_lanes(void) {
  fu_ix_ctx *c = fu_ix_ctx_new(fu_default_allocator());
  const fu_ix *v = fu_ix_var(c, "v", 1, NULL, 0, 4), *t = fu_ix_var(c, "t", 1, NULL, 0, 128);
  const fu_ix *g = fu_ix_add(c, fu_ix_mul(c, t, fu_ix_const(c, 4)), v); /* t*4 + v */
  fu_ix_lane a = fu_ix_lane_analyze(g, v, 4);
  CHECK(a.ok && a.stride == 1 && a.align % 4 == 0);
  /* g % 1024: rows of 1024 hold whole vectors */
  a = fu_ix_lane_analyze(fu_ix_mod(c, g, fu_ix_const(c, 1024)), v, 4);
  CHECK(a.ok && a.stride == 1);
  /* g / 1024: the same row for every lane */
  a = fu_ix_lane_analyze(fu_ix_div(c, g, fu_ix_const(c, 1024)), v, 4);
  CHECK(a.ok && a.stride == 0);
  /* g % 30: a vector may cross the end of a row */
  a = fu_ix_lane_analyze(fu_ix_mod(c, g, fu_ix_const(c, 30)), v, 4);
  CHECK(!a.ok);
  /* g * 33: not contiguous */
  a = fu_ix_lane_analyze(fu_ix_mul(c, g, fu_ix_const(c, 33)), v, 4);
  CHECK(a.ok && a.stride == 33);
  /* 30 * row + g: contiguous but rows start unaligned */
  const fu_ix *r = fu_ix_var(c, "r", 1, NULL, 0, 0);
  a = fu_ix_lane_analyze(fu_ix_add(c, fu_ix_mul(c, r, fu_ix_const(c, 30)), g), v, 4);
  CHECK(a.ok && a.stride == 1 && a.align % 4 != 0);
  fu_ix_ctx_free(c);
}

typedef struct parsed {
  fu_source src;
  fu_module *m;
  fu_diag_engine diag;
} parsed;

static fu_op *first_segment(fu_module *m) {
  for (fu_op *op = m->first->body.first; op; op = op->next)
    if (op->kind == FU_OP_SEGMENT) return op;
  return NULL;
}

static bool parse(parsed *p, const char *text) {
  p->src.name = "t.fir";
  p->src.text = text;
  p->src.len = strlen(text);
  p->src.first_line = 1;
  fu_diag_init(&p->diag, fu_default_allocator());
  p->m = NULL;
  return fu_parse_module(&p->src, fu_default_allocator(), &p->diag, &p->m) == FU_OK &&
         fu_verify_module(p->m, &p->diag) == FU_OK;
}

/* The graph of a hand-scheduled segment: domains, exact groups, exprs of a
 * reshape and a broadcast, loop variables, predicates, coordinates and
 * the accesses with their modes. */
static void test_graph(void) {
  parsed p;
  bool ok = parse(&p, "fusion @f {\n"
                      "  %T0 = input f32[6, 10]\n"
                      "  %T1 = input f32[10]\n"
                      "  segment @g0 pointwise (%T0, %T1) -> (%T4) {\n"
                      "    %T2 = broadcast_in_dim %T1 {broadcast_dims=[1]} : f32[6, 10]\n"
                      "    %T3 = add %T0, %T2 : f32[6, 10]\n"
                      "    %T4 = reshape %T3 : f32[60]\n"
                      "    schedule {\n"
                      "      reference %T4 [n]\n"
                      "      split n, 4 -> o, v {tail=guard}\n"
                      "      loop [o: threadIdx.x, v: vectorize]\n"
                      "      tensor %T1 {memory=global, access=scalar}\n"
                      "    }\n"
                      "  }\n"
                      "  output %T4\n"
                      "}\n");
  CHECK(ok);
  if (!ok) return;
  fu_fusion *f = p.m->first;
  fu_op *seg = first_segment(p.m);
  fu_igraph *g = NULL;
  CHECK_EQ_INT(fu_igraph_build(f, seg, seg->u.segment.schedule, fu_default_allocator(), &p.diag, &g), FU_OK);
  if (!g) return;
  /* domains: 2 + 1 + 2 + 2 + 1 tensor dims, plus the schedule's axes */
  uint32_t tensors = 0;
  for (uint32_t i = 0; i < fu_igraph_num_ids(g); i++)
    if (fu_igraph_id(g, i)->kind == FU_ID_TENSOR) tensors++;
  CHECK_EQ_INT(tensors, 8);
  /* T0.1, T2.1, T3.1 are one exact group; T1.0 maps into T2.1 */
  const fu_value *T0 = seg->operands[0], *T1 = seg->operands[1];
  const fu_value *T2 = seg->u.segment.body->first->results[0], *T3 = seg->u.segment.body->first->next->results[0];
  const fu_value *T4 = seg->u.segment.outputs[0];
  uint32_t a = fu_igraph_tensor_id(g, T0, 1), b2 = fu_igraph_tensor_id(g, T2, 1), b3 = fu_igraph_tensor_id(g, T3, 1);
  uint32_t c1 = fu_igraph_tensor_id(g, T1, 0);
  CHECK(fu_igraph_id(g, a)->group == fu_igraph_id(g, b2)->group);
  CHECK(fu_igraph_id(g, a)->group == fu_igraph_id(g, b3)->group);
  CHECK(fu_igraph_id(g, a)->group == fu_igraph_id(g, c1)->group);
  /* dim 0 of T2 is new (broadcast_in_dim): no producer, but the add maps
   * it to T0's dim 0 */
  bool fresh = false;
  for (uint32_t i = 0; i < fu_igraph_num_exprs(g); i++) {
    const fu_iexpr *e = fu_igraph_expr(g, i);
    if (e->kind == FU_IE_NEW && e->out[0] == fu_igraph_tensor_id(g, T2, 0)) fresh = true;
  }
  CHECK(fresh);
  CHECK(fu_igraph_id(g, fu_igraph_tensor_id(g, T2, 0))->group == fu_igraph_id(g, fu_igraph_tensor_id(g, T0, 0))->group);
  /* the reshape: T3's two dims merge into T4.0 */
  bool merge = false;
  for (uint32_t i = 0; i < fu_igraph_num_exprs(g); i++) {
    const fu_iexpr *e = fu_igraph_expr(g, i);
    if (e->kind == FU_IE_MERGE && e->op && e->op->kind == FU_OP_RESHAPE) merge = true;
  }
  CHECK(merge);
  /* 60 = 15 * 4: the split is exact after all, so no predicate */
  CHECK_EQ_INT(fu_igraph_num_predicates(g), 0);
  int64_t w = 0;
  CHECK(fu_igraph_lane_var(g, &w) != NULL);
  CHECK_EQ_INT(w, 4);
  /* coordinates of T3: (n / 10, n % 10) with n = o*4 + v */
  char buf[256];
  const fu_ix *const *c3 = fu_igraph_coords(g, T3);
  CHECK(c3 != NULL);
  if (c3) {
    CHECK_STR(ixs(c3[0], buf, sizeof buf), "(v + o * 4) / 10");
    CHECK_STR(ixs(c3[1], buf, sizeof buf), "(v + o * 4) % 10");
  }
  /* accesses: the store of T4 (a vector), T0 (row-major: the offset folds
   * back to n, a vector), T1 (the bias: n % 10, which a vector of 4 would
   * cross: per lane) */
  CHECK_EQ_INT(fu_igraph_num_accesses(g), 3);
  for (uint32_t i = 0; i < fu_igraph_num_accesses(g); i++) {
    const fu_iaccess *x = fu_igraph_access(g, i);
    if (x->value == T4) {
      CHECK(x->is_store);
      CHECK_EQ_INT(x->mode, FU_AM_VECTOR);
    } else if (x->value == T0) {
      CHECK_STR(ixs(x->offset, buf, sizeof buf), "v + o * 4");
      CHECK_EQ_INT(x->mode, FU_AM_VECTOR);
    } else {
      CHECK(x->value == T1);
      CHECK_EQ_INT(x->mode, FU_AM_LANES);
    }
  }
  CHECK_EQ_INT(fu_igraph_index_dtype(g), FU_DT_I32);
  /* the text form names all of it */
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_igraph_print(&sb, g);
  CHECK(strstr(sb.data, "index-graph @f/@g0 (reference %T4) {") != NULL);
  CHECK(strstr(sb.data, "merge %T3.0, %T3.1 -> %T4.0 (%T4 = reshape)") != NULL ||
        strstr(sb.data, "(%T4 = reshape)") != NULL);
  CHECK(strstr(sb.data, "load %T1 for %T2 = broadcast_in_dim") != NULL);
  fu_strbuf_free(&sb);
  fu_igraph_free(g);
  fu_module_free(p.m);
}

/* Unsupported ops and mismatched outputs are located errors. */
/* A schedule of n serial loops, one per dim of ref, in ax and lp. */
static void serial_schedule(fu_schedule *s, fu_value *ref, const char *const *names, fu_saxis *ax, fu_sloop *lp,
                            uint32_t n) {
  memset(s, 0, sizeof *s);
  for (uint32_t i = 0; i < n; i++) {
    ax[i] = (fu_saxis){names[i], (int32_t)i, -1, fu_loc_none()};
    lp[i] = (fu_sloop){.axis = i, .ptype = FU_PT_SERIAL, .loc = fu_loc_none()};
  }
  s->reference = ref;
  s->axes = ax;
  s->n_axes = n;
  s->loops = lp;
  s->n_loops = n;
}

/* The graph of seg under s is refused with an error and no graph. */
static void expect_refused(parsed *p, fu_op *seg, const fu_schedule *s) {
  fu_igraph *g = NULL;
  unsigned before = p->diag.n_errors;
  fu_diag_engine quiet = p->diag;
  quiet.stream = fopen("/dev/null", "w");
  CHECK_EQ_INT(fu_igraph_build(p->m->first, seg, s, fu_default_allocator(), &quiet, &g), FU_ERR_VERIFY);
  CHECK(quiet.n_errors > before);
  CHECK(g == NULL);
  if (quiet.stream) fclose(quiet.stream);
}

static void test_graph_errors(void) {
  parsed p;
  /* parsed without a schedule so the parser's verifier does not run first */
  bool ok = parse(&p, "fusion @f {\n"
                      "  %T0 = input f32[6, 10]\n"
                      "  segment @g0 pointwise (%T0) -> (%T1) {\n"
                      "    %T1 = sum %T0 {axes=[1]} : f32[6]\n"
                      "  }\n"
                      "  output %T1\n"
                      "}\n");
  CHECK(ok);
  if (!ok) return;
  fu_op *seg = first_segment(p.m);
  static const char *const names[] = {"r"};
  fu_saxis ax[1];
  fu_sloop lp[1];
  fu_schedule s;
  serial_schedule(&s, seg->u.segment.outputs[0], names, ax, lp, 1);
  expect_refused(&p, seg, &s);
  fu_module_free(p.m);
}

/* A permute whose dims escaped the op verifier (set after parsing) is an
 * error of the graph, not an index out of bounds; the same for the back
 * map lower uses. */
static void test_graph_bad_dims(void) {
  parsed p;
  bool ok = parse(&p, "fusion @f {\n"
                      "  %T0 = input f32[6, 10]\n"
                      "  segment @g0 transpose (%T0) -> (%T1) {\n"
                      "    %T1 = permute %T0 {dims=[1, 0]} : f32[10, 6]\n"
                      "  }\n"
                      "  output %T1\n"
                      "}\n");
  CHECK(ok);
  if (!ok) return;
  fu_op *seg = first_segment(p.m);
  fu_op *perm = seg->u.segment.body->first;
  perm->u.permute.dims.v[0] = 1000000;
  static const char *const names[] = {"a", "b"};
  fu_saxis ax[2];
  fu_sloop lp[2];
  fu_schedule s;
  serial_schedule(&s, seg->u.segment.outputs[0], names, ax, lp, 2);
  expect_refused(&p, seg, &s);
  perm->u.permute.dims.n = 0;
  expect_refused(&p, seg, &s);
  fu_module_free(p.m);
}

FU_TEST_MAIN(FU_TEST(test_ix_basics), FU_TEST(test_ix_linear), FU_TEST(test_ix_lanes), FU_TEST(test_graph),
             FU_TEST(test_graph_errors), FU_TEST(test_graph_bad_dims))
