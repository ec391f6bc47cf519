/* Unit tests for the view layout analysis (fuser/view_layout.h) and the
 * strip-bookend-views pass (fuser/bookend.h).
 *
 * The stride algebra is tested on IR built with the C API; fusions are
 * written as .fir text and parsed, so a test reads like the IR it checks. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuser/bookend.h"
#include "fuser/interp.h"
#include "fuser/parse.h"
#include "fuser/pass.h"
#include "fuser/print.h"
#include "fuser/strbuf.h"
#include "fuser/verify.h"
#include "fuser/view_layout.h"
#include "harness.h"

/* ---- helpers -------------------------------------------------------------- */

/* Extents from "8192, N, 1": integers are constants, names are symbols. */
static fu_extent *shape(fu_module *m, const char *spec, int32_t *rank) {
  fu_extent dims[FU_MAX_RANK];
  int32_t n = 0;
  const char *p = spec;
  while (*p) {
    while (*p == ' ' || *p == ',') p++;
    if (!*p) break;
    const char *s = p;
    while (*p && *p != ',' && *p != ' ') p++;
    if (*s >= '0' && *s <= '9') {
      dims[n].value = strtoll(s, NULL, 10);
      dims[n].sym = NULL;
    } else {
      dims[n].value = 0;
      dims[n].sym = fu_module_intern(m, s, (size_t)(p - s));
    }
    n++;
  }
  *rank = n;
  return n ? fu_dims_copy(m, dims, n) : NULL;
}

static void set_type(fu_module *m, fu_value *v, const char *spec) {
  v->type.dtype = FU_DT_F32;
  v->type.dims = shape(m, spec, &v->type.rank);
}

/* An input op (not linked into the fusion) with the given shape. */
static fu_op *mk_input(fu_fusion *f, const char *name, const char *spec) {
  fu_op *op = fu_op_new(f, FU_OP_INPUT, NULL, 0, 1, fu_loc_none());
  set_type(f->module, op->results[0], spec);
  fu_value_set_name(f->module, op->results[0], name);
  fu_block_append(&f->body, op);
  return op;
}

static fu_op *mk_view(fu_fusion *f, fu_op_kind k, fu_value *x, const char *name, const char *spec) {
  fu_op *op = fu_op_new(f, k, &x, 1, 1, fu_loc_none());
  set_type(f->module, op->results[0], spec);
  fu_value_set_name(f->module, op->results[0], name);
  fu_block_append(&f->body, op);
  return op;
}

static const char *layout_str(fu_strbuf *sb, const fu_view_layout *l) {
  fu_strbuf_clear(sb);
  fu_layout_print(sb, l);
  return sb->data ? sb->data : "";
}

typedef struct parsed {
  fu_source src;
  fu_diag_engine diag;
  fu_module *m;
} parsed;

static bool parse_text(parsed *p, const char *text) {
  p->src.name = "test.fir";
  p->src.text = text;
  p->src.len = strlen(text);
  p->src.first_line = 1;
  fu_diag_init(&p->diag, fu_default_allocator());
  p->m = NULL;
  fu_status st = fu_parse_module(&p->src, fu_default_allocator(), &p->diag, &p->m);
  CHECK_EQ_INT(st, FU_OK);
  if (st != FU_OK) return false;
  CHECK_EQ_INT(fu_verify_module(p->m, &p->diag), FU_OK);
  return true;
}

static fu_value *find_value(fu_module *m, const char *name) {
  for (fu_fusion *f = m->first; f; f = f->next)
    for (fu_op *op = fu_walk_first(&f->body); op; op = fu_walk_next(op))
      for (uint32_t i = 0; i < op->n_results; i++)
        if (op->results[i]->name && strcmp(op->results[i]->name, name) == 0) return op->results[i];
  return NULL;
}

static bool is_host(fu_module *m, const char *name) {
  fu_value *v = find_value(m, name);
  CHECK(v != NULL);
  return v && v->def && v->def->host;
}

/* Run the pass with --debug=strip-bookend-views; returns the debug text
 * (malloc'd) and the status in *st. */
static char *run_pass(fu_module *m, fu_status *st) {
  char *buf = NULL;
  size_t len = 0;
  FILE *dbg = open_memstream(&buf, &len);
  fu_diag_engine diag;
  fu_diag_init(&diag, fu_default_allocator());
  fu_pass_context ctx = {&diag, NULL, 0, dbg, "strip-bookend-views", &fu_pass_strip_bookend_views, NULL, NULL};
  *st = fu_pass_strip_bookend_views.run(m, &ctx);
  fclose(dbg);
  return buf;
}

static char *print_module(fu_module *m) {
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_print_module(&sb, m, NULL);
  char *s = strdup(sb.data ? sb.data : "");
  fu_strbuf_free(&sb);
  return s;
}

#define CHECK_CONTAINS(hay, needle)                                                               \
  do {                                                                                            \
    const char *h_ = (hay), *n_ = (needle);                                                       \
    fu_test_checks++;                                                                             \
    if (!h_ || !strstr(h_, n_))                                                                   \
      fu_test_fail(__FILE__, __LINE__, "expected to find:\n  %s\nin:\n%s", n_, h_ ? h_ : "(null)"); \
  } while (0)

/* The layout of value `name` after the pass, as text. */
static const char *value_layout(fu_module *m, const char *name, fu_strbuf *sb) {
  fu_value *v = find_value(m, name);
  fu_view_layout l;
  fu_strbuf_clear(sb);
  if (!v || fu_value_layout(v->def->parent->fusion, v, &l, sb) != FU_OK) return "(error)";
  return layout_str(sb, &l);
}

/* ---- stride algebra --------------------------------------------------------- */

static void test_stride_algebra(void) {
  fu_module *m = fu_module_new(fu_default_allocator());
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_stride a, b, c;
  fu_extent n = {0, fu_module_intern(m, "N", 1)}, k = {0, fu_module_intern(m, "K", 1)};
  fu_extent e64 = {64, NULL}, e0 = {0, NULL};
  fu_stride_const(&a, 1);
  CHECK(fu_stride_mul_extent(&a, n));
  CHECK(fu_stride_mul_extent(&a, e64));
  CHECK(fu_stride_mul_extent(&a, k));
  fu_stride_const(&b, 64);
  CHECK(fu_stride_mul_extent(&b, k));
  CHECK(fu_stride_mul_extent(&b, n));
  CHECK(fu_stride_equal(&a, &b)); /* commutative: sorted atoms */
  fu_stride_print(&sb, &a);
  CHECK_STR(sb.data, "64 * K * N");
  CHECK(fu_stride_mul(&a, &b, &c));
  fu_strbuf_clear(&sb);
  fu_stride_print(&sb, &c);
  CHECK_STR(sb.data, "4096 * K * K * N * N");
  /* a zero extent makes the stride 0 and drops the atoms */
  CHECK(fu_stride_mul_extent(&c, e0));
  CHECK_EQ_INT(c.coef, 0);
  CHECK_EQ_INT(c.n_atoms, 0);
  /* overflow is reported, not wrapped */
  fu_stride_const(&a, INT64_MAX / 2);
  fu_extent e4 = {4, NULL};
  CHECK(!fu_stride_mul_extent(&a, e4));
  /* too many atoms is reported */
  fu_stride_const(&a, 1);
  bool ok = true;
  for (int i = 0; i < FU_STRIDE_MAX_ATOMS && ok; i++) ok = fu_stride_mul_extent(&a, n);
  CHECK(ok);
  CHECK(!fu_stride_mul_extent(&a, n));
  fu_strbuf_free(&sb);
  fu_module_free(m);
}

/* ---- layouts of inputs ------------------------------------------------------- */

static void test_row_major_and_inputs(void) {
  fu_module *m = fu_module_new(fu_default_allocator());
  fu_fusion *f = fu_fusion_new(m, "f", fu_loc_none());
  fu_strbuf sb, why;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_strbuf_init(&why, fu_default_allocator());
  fu_view_layout l;

  fu_op *in = mk_input(f, "T0", "8192, 3072");
  CHECK(fu_layout_of_input(in, &l, &why));
  CHECK_STR(layout_str(&sb, &l), "[3072, 1]");
  CHECK(fu_layout_is_row_major(&in->results[0]->type, &l));

  fu_op *sym = mk_input(f, "T1", "A, B, 4");
  CHECK(fu_layout_of_input(sym, &l, &why));
  CHECK_STR(layout_str(&sb, &l), "[4 * B, 4, 1]");

  /* explicit strides */
  fu_op *st = mk_input(f, "T2", "768, 128, 64");
  int64_t strides[] = {64, 49152, 1};
  st->u.input.layout.strides = strides;
  CHECK(fu_layout_of_input(st, &l, &why));
  CHECK_STR(layout_str(&sb, &l), "[64, 49152, 1]");
  CHECK(!fu_layout_is_row_major(&st->results[0]->type, &l));

  /* stride_order [0, 1]: dim 1 outermost (column-major) */
  fu_op *cm = mk_input(f, "T3", "N, M");
  int32_t order[] = {0, 1};
  cm->u.input.layout.stride_order = order;
  CHECK(fu_layout_of_input(cm, &l, &why));
  CHECK_STR(layout_str(&sb, &l), "[1, N]");

  /* a non-contiguous dim gets an unknown run-time stride; the contiguous
   * dim outside it is that stride times its extent */
  fu_op *nc = mk_input(f, "T4", "N, 64, 32");
  int8_t contig[] = {FU_CONTIG_TRUE, FU_CONTIG_FALSE, FU_CONTIG_TRUE};
  nc->u.input.layout.contiguity = contig;
  CHECK(fu_layout_of_input(nc, &l, &why));
  CHECK_STR(layout_str(&sb, &l), "[64 * stride(%T4, 1), stride(%T4, 1), 1]");

  /* broadcast dims (contiguity none) have stride 0 and are skipped */
  fu_op *bc = mk_input(f, "T5", "1, 64, 32");
  int8_t contig2[] = {FU_CONTIG_NONE, FU_CONTIG_TRUE, FU_CONTIG_TRUE};
  bc->u.input.layout.contiguity = contig2;
  CHECK(fu_layout_of_input(bc, &l, &why));
  CHECK_STR(layout_str(&sb, &l), "[0, 32, 1]");
  CHECK(fu_layout_is_row_major(&bc->results[0]->type, &l)); /* size-1 dims do not count */

  /* stride_order with contiguity: dims innermost first 1, 2, 0 */
  fu_op *so = mk_input(f, "T6", "4, 8, 16");
  int32_t order3[] = {2, 0, 1};
  int8_t contig3[] = {FU_CONTIG_TRUE, FU_CONTIG_TRUE, FU_CONTIG_FALSE};
  so->u.input.layout.stride_order = order3;
  so->u.input.layout.contiguity = contig3;
  CHECK(fu_layout_of_input(so, &l, &why));
  CHECK_STR(layout_str(&sb, &l), "[16 * stride(%T6, 2), 1, stride(%T6, 2)]");

  /* a bad stride_order is refused with a reason */
  fu_op *bad = mk_input(f, "T7", "4, 8");
  int32_t order_bad[] = {1, 1};
  bad->u.input.layout.stride_order = order_bad;
  fu_strbuf_clear(&why);
  CHECK(!fu_layout_of_input(bad, &l, &why));
  CHECK_CONTAINS(why.data, "stride_order is not a permutation");

  fu_strbuf_free(&sb);
  fu_strbuf_free(&why);
  fu_module_free(m);
}

/* ---- reshape ------------------------------------------------------------------ */

static bool reshape_of(fu_module *m, const char *from_spec, const fu_view_layout *in, const char *to_spec,
                       fu_view_layout *out, fu_strbuf *note) {
  fu_type from = {FU_DT_F32, 0, NULL}, to = {FU_DT_F32, 0, NULL};
  from.dims = shape(m, from_spec, &from.rank);
  to.dims = shape(m, to_spec, &to.rank);
  fu_strbuf_clear(note);
  return fu_layout_reshape(&from, in, &to, out, "%X", note);
}

static void test_reshape_contiguous(void) {
  fu_module *m = fu_module_new(fu_default_allocator());
  fu_strbuf sb, note;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_strbuf_init(&note, fu_default_allocator());
  fu_type t = {FU_DT_F32, 0, NULL};
  fu_view_layout in, out;

  t.dims = shape(m, "8192, 3072", &t.rank);
  CHECK(fu_layout_row_major(&t, &in));
  CHECK(reshape_of(m, "8192, 3072", &in, "64, 128, 3072", &out, &note));
  CHECK_STR(layout_str(&sb, &out), "[393216, 3072, 1]");
  CHECK_STR(note.data, "splits dim 0 of %X");
  /* and back */
  CHECK(reshape_of(m, "64, 128, 3072", &out, "8192, 3072", &in, &note));
  CHECK_STR(layout_str(&sb, &in), "[3072, 1]");
  CHECK_STR(note.data, "merges dims 0 and 1 of %X");

  /* the seed's transpose: [64, 128, 12, 64] -> [64, 128, 768] -> [8192, 768] */
  t.dims = shape(m, "64, 128, 12, 64", &t.rank);
  CHECK(fu_layout_row_major(&t, &in));
  CHECK(reshape_of(m, "64, 128, 12, 64", &in, "64, 128, 768", &out, &note));
  CHECK_STR(layout_str(&sb, &out), "[98304, 768, 1]");
  CHECK_STR(note.data, "merges dims 2 and 3 of %X");

  /* regrouping [6, 4] -> [4, 6] of a contiguous tensor is a view */
  t.dims = shape(m, "6, 4", &t.rank);
  CHECK(fu_layout_row_major(&t, &in));
  CHECK(reshape_of(m, "6, 4", &in, "4, 6", &out, &note));
  CHECK_STR(layout_str(&sb, &out), "[6, 1]");
  CHECK_STR(note.data, "regroups dims 0 and 1 of %X");

  /* size-1 dims come and go freely */
  t.dims = shape(m, "1, 32, 1, 8", &t.rank);
  CHECK(fu_layout_row_major(&t, &in));
  CHECK(reshape_of(m, "1, 32, 1, 8", &in, "256, 1", &out, &note));
  CHECK_STR(layout_str(&sb, &out), "[1, 1]");
  CHECK_STR(note.data, "merges dims 1 and 3 and drops size-1 dims and adds size-1 dims of %X");

  /* identity */
  t.dims = shape(m, "N, 4", &t.rank);
  CHECK(fu_layout_row_major(&t, &in));
  CHECK(reshape_of(m, "N, 4", &in, "N, 4", &out, &note));
  CHECK_STR(note.data, "keeps the shape of %X");

  /* mismatched element counts are not a view */
  t.dims = shape(m, "6, 4", &t.rank);
  CHECK(fu_layout_row_major(&t, &in));
  CHECK(!reshape_of(m, "6, 4", &in, "5, 5", &out, &note));
  fu_strbuf_free(&sb);
  fu_strbuf_free(&note);
  fu_module_free(m);
}

static void test_reshape_strided(void) {
  fu_module *m = fu_module_new(fu_default_allocator());
  fu_strbuf sb, note;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_strbuf_init(&note, fu_default_allocator());
  fu_view_layout in, out;

  /* column-major [64, 128]: merging is not a view */
  in.rank = 2;
  fu_stride_const(&in.strides[0], 1);
  fu_stride_const(&in.strides[1], 64);
  CHECK(!reshape_of(m, "64, 128", &in, "8192", &out, &note));
  CHECK_STR(note.data, "merges dims 0 and 1 of %X, which are not contiguous (stride 1 != 64 * 128)");
  /* but splitting either dim is */
  CHECK(reshape_of(m, "64, 128", &in, "8, 8, 128", &out, &note));
  CHECK_STR(layout_str(&sb, &out), "[8, 1, 64]");

  /* a padded row (stride 4096 for a row of 3072): rows cannot merge, but a
   * row can split */
  fu_stride_const(&in.strides[0], 4096);
  fu_stride_const(&in.strides[1], 1);
  CHECK(!reshape_of(m, "8192, 3072", &in, "25165824", &out, &note));
  CHECK_CONTAINS(note.data, "(stride 4096 != 1 * 3072)");
  CHECK(reshape_of(m, "8192, 3072", &in, "8192, 3, 1024", &out, &note));
  CHECK_STR(layout_str(&sb, &out), "[4096, 1024, 1]");

  /* stride-0 (expanded) dims: two of them merge, one with a real dim not */
  fu_stride_const(&in.strides[0], 0);
  fu_stride_const(&in.strides[1], 0);
  CHECK(reshape_of(m, "4, 8", &in, "32", &out, &note));
  CHECK_STR(layout_str(&sb, &out), "[0]");
  fu_stride_const(&in.strides[1], 1);
  CHECK(!reshape_of(m, "4, 8", &in, "32", &out, &note));
  CHECK(reshape_of(m, "4, 8", &in, "2, 2, 8", &out, &note)); /* splitting a stride-0 dim */
  CHECK_STR(layout_str(&sb, &out), "[0, 0, 1]");
  fu_strbuf_free(&sb);
  fu_strbuf_free(&note);
  fu_module_free(m);
}

static void test_reshape_symbolic(void) {
  fu_module *m = fu_module_new(fu_default_allocator());
  fu_fusion *f = fu_fusion_new(m, "f", fu_loc_none());
  fu_strbuf sb, note;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_strbuf_init(&note, fu_default_allocator());
  fu_type t = {FU_DT_F32, 0, NULL};
  fu_view_layout in, out;

  /* symbolic outer dims ride along */
  t.dims = shape(m, "N, 4, 8", &t.rank);
  CHECK(fu_layout_row_major(&t, &in));
  CHECK(reshape_of(m, "N, 4, 8", &in, "N, 32", &out, &note));
  CHECK_STR(layout_str(&sb, &out), "[32, 1]");
  /* symbolic inner dims: [4, 8, N] strides [8 * N, N, 1]; merging 0 and 1
   * needs 8 * N == N * 8, which holds symbolically */
  t.dims = shape(m, "4, 8, N", &t.rank);
  CHECK(fu_layout_row_major(&t, &in));
  CHECK_STR(layout_str(&sb, &in), "[8 * N, N, 1]");
  CHECK(reshape_of(m, "4, 8, N", &in, "32, N", &out, &note));
  CHECK_STR(layout_str(&sb, &out), "[N, 1]");
  CHECK(reshape_of(m, "32, N", &out, "2, 16, N", &in, &note));
  CHECK_STR(layout_str(&sb, &in), "[16 * N, N, 1]");
  /* two different symbols cannot be matched: not provably a view */
  t.dims = shape(m, "N, M", &t.rank);
  CHECK(fu_layout_row_major(&t, &in));
  CHECK(!reshape_of(m, "N, M", &in, "M, N", &out, &note));
  CHECK_CONTAINS(note.data, "cannot match the extents of %X with the result's (N vs M)");
  /* a symbolic group: [N, 4] -> [N, 2, 2] */
  t.dims = shape(m, "N, 4", &t.rank);
  CHECK(fu_layout_row_major(&t, &in));
  CHECK(reshape_of(m, "N, 4", &in, "N, 2, 2", &out, &note));
  CHECK_STR(layout_str(&sb, &out), "[4, 2, 1]");

  /* a non-contiguous dim (unknown run-time stride): merging across it is
   * refused, merging the dims that are contiguous with each other works */
  fu_op *nc = mk_input(f, "T4", "2, 4, 8");
  int8_t contig[] = {FU_CONTIG_TRUE, FU_CONTIG_FALSE, FU_CONTIG_TRUE};
  nc->u.input.layout.contiguity = contig;
  fu_strbuf why;
  fu_strbuf_init(&why, fu_default_allocator());
  CHECK(fu_layout_of_input(nc, &in, &why));
  CHECK(!reshape_of(m, "2, 4, 8", &in, "2, 32", &out, &note));
  CHECK_STR(note.data, "merges dims 1 and 2 of %X, which are not contiguous (stride stride(%T4, 1) != 1 * 8)");
  CHECK(reshape_of(m, "2, 4, 8", &in, "8, 8", &out, &note));
  CHECK_STR(layout_str(&sb, &out), "[stride(%T4, 1), 1]");
  fu_strbuf_free(&why);
  fu_strbuf_free(&sb);
  fu_strbuf_free(&note);
  fu_module_free(m);
}

/* ---- other views --------------------------------------------------------------- */

static void test_other_views(void) {
  fu_module *m = fu_module_new(fu_default_allocator());
  fu_fusion *f = fu_fusion_new(m, "f", fu_loc_none());
  fu_strbuf sb, note;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_strbuf_init(&note, fu_default_allocator());
  fu_view_layout in, out, back;

  /* permute of a strided input: strides permute */
  fu_op *x = mk_input(f, "T0", "768, 128, 64");
  int64_t strides[] = {64, 49152, 1};
  x->u.input.layout.strides = strides;
  CHECK(fu_layout_of_input(x, &in, &note));
  fu_op *p = mk_view(f, FU_OP_PERMUTE, x->results[0], "T1", "128, 768, 64");
  int64_t perm[] = {1, 0, 2};
  p->u.permute.dims = fu_int_list_copy(m, perm, 3);
  CHECK(fu_layout_apply_view(p, &in, &out, "%T0", &note));
  CHECK_STR(layout_str(&sb, &out), "[49152, 64, 1]");
  CHECK(fu_layout_is_row_major(&p->results[0]->type, &out)); /* this permute undoes the strides */
  CHECK(fu_layout_unapply_view(p, &out, &back));
  CHECK_STR(layout_str(&sb, &back), "[64, 49152, 1]");

  /* squeeze drops size-1 dims; squeezing a dim of extent > 1 is refused */
  fu_op *y = mk_input(f, "T2", "1, 64, 1, 32");
  CHECK(fu_layout_of_input(y, &in, &note));
  fu_op *sq = mk_view(f, FU_OP_SQUEEZE, y->results[0], "T3", "64, 32");
  int64_t sqd[] = {0, 2};
  sq->u.squeeze.dims = fu_int_list_copy(m, sqd, 2);
  fu_strbuf_clear(&note);
  CHECK(fu_layout_apply_view(sq, &in, &out, "%T2", &note));
  CHECK_STR(layout_str(&sb, &out), "[32, 1]");
  CHECK_STR(note.data, "drops size-1 dims 0 and 2 of %T2");
  CHECK(fu_layout_unapply_view(sq, &out, &back));
  CHECK_STR(layout_str(&sb, &back), "[2048, 32, 32, 1]");
  int64_t sqbad[] = {1};
  sq->u.squeeze.dims = fu_int_list_copy(m, sqbad, 1);
  fu_strbuf_clear(&note);
  CHECK(!fu_layout_apply_view(sq, &in, &out, "%T2", &note));
  CHECK_CONTAINS(note.data, "whose extent is not the constant 1");

  /* broadcast adds size-1 dims */
  fu_op *z = mk_input(f, "T4", "N, 32");
  CHECK(fu_layout_of_input(z, &in, &note));
  fu_op *bc = mk_view(f, FU_OP_BROADCAST, z->results[0], "T5", "N, 1, 32");
  bool isb[] = {false, true, false};
  bc->u.broadcast.is_broadcast = isb;
  bc->u.broadcast.n = 3;
  fu_strbuf_clear(&note);
  CHECK(fu_layout_apply_view(bc, &in, &out, "%T4", &note));
  CHECK_STR(layout_str(&sb, &out), "[32, 32, 1]");
  CHECK_STR(note.data, "adds size-1 dim 1 to %T4");
  CHECK(fu_layout_is_row_major(&bc->results[0]->type, &out));

  /* broadcast_in_dim: a new dim of extent > 1 and an expanded dim get stride 0 */
  fu_op *w = mk_input(f, "T6", "1, 32");
  CHECK(fu_layout_of_input(w, &in, &note));
  fu_op *bid = mk_view(f, FU_OP_BROADCAST_IN_DIM, w->results[0], "T7", "4, 8, 32");
  int64_t bd[] = {1, 2};
  bid->u.broadcast_in_dim.broadcast_dims = fu_int_list_copy(m, bd, 2);
  fu_strbuf_clear(&note);
  CHECK(fu_layout_apply_view(bid, &in, &out, "%T6", &note));
  CHECK_STR(layout_str(&sb, &out), "[0, 0, 1]");
  CHECK_STR(note.data, "broadcasts along new dim 0 (stride 0) and expands dim 1 (stride 0) of %T6");
  CHECK(!fu_layout_is_row_major(&bid->results[0]->type, &out));
  /* broadcast_in_dim adding only a size-1 dim */
  fu_op *bid1 = mk_view(f, FU_OP_BROADCAST_IN_DIM, z->results[0], "T8", "1, N, 32");
  int64_t bd1[] = {1, 2};
  bid1->u.broadcast_in_dim.broadcast_dims = fu_int_list_copy(m, bd1, 2);
  CHECK(fu_layout_of_input(z, &in, &note));
  fu_strbuf_clear(&note);
  CHECK(fu_layout_apply_view(bid1, &in, &out, "%T4", &note));
  CHECK_STR(layout_str(&sb, &out), "[32 * N, 32, 1]");
  CHECK_STR(note.data, "adds size-1 dim 0 of %T4");

  /* expand: stride 0 on the expanded dims */
  fu_op *ex = mk_view(f, FU_OP_EXPAND, w->results[0], "T9", "K, 32");
  CHECK(fu_layout_of_input(w, &in, &note));
  fu_strbuf_clear(&note);
  CHECK(fu_layout_apply_view(ex, &in, &out, "%T6", &note));
  CHECK_STR(layout_str(&sb, &out), "[0, 1]");
  CHECK_STR(note.data, "expands dim 0 (stride 0) of %T6");

  /* set aliases in the algebra (the pass decides where that is allowed) */
  fu_op *s = mk_view(f, FU_OP_SET, w->results[0], "T10", "1, 32");
  fu_strbuf_clear(&note);
  CHECK(fu_layout_apply_view(s, &in, &out, "%T6", &note));
  CHECK_STR(note.data, "aliases %T6");

  /* a non-view op is refused */
  fu_value *ops2[2] = {w->results[0], w->results[0]};
  fu_op *add = fu_op_new(f, FU_OP_ADD, ops2, 2, 1, fu_loc_none());
  set_type(m, add->results[0], "1, 32");
  fu_strbuf_clear(&note);
  CHECK(!fu_layout_apply_view(add, &in, &out, "%T6", &note));
  CHECK_STR(note.data, "'add' is not a view op");
  fu_strbuf_free(&sb);
  fu_strbuf_free(&note);
  fu_module_free(m);
}

/* ---- chains through the analysis ------------------------------------------------ */

static void test_chain_analysis(void) {
  fu_module *m = fu_module_new(fu_default_allocator());
  fu_fusion *f = fu_fusion_new(m, "f", fu_loc_none());
  fu_strbuf sb, why;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_strbuf_init(&why, fu_default_allocator());
  fu_op *x = mk_input(f, "T0", "768, 128, 64");
  fu_op *r = mk_view(f, FU_OP_RESHAPE, x->results[0], "T1", "64, 12, 128, 64");
  fu_op *p = mk_view(f, FU_OP_PERMUTE, r->results[0], "T2", "64, 128, 12, 64");
  int64_t perm[] = {0, 2, 1, 3};
  p->u.permute.dims = fu_int_list_copy(m, perm, 4);
  fu_op *r2 = mk_view(f, FU_OP_RESHAPE, p->results[0], "T3", "64, 128, 768");
  r->host = p->host = true;
  fu_view_layout l;
  CHECK_EQ_INT(fu_value_layout(f, p->results[0], &l, &why), FU_OK);
  CHECK_STR(layout_str(&sb, &l), "[98304, 64, 8192, 1]");
  /* the reshape after the permute merges dims 2 and 3, which are not
   * contiguous: marked host anyway, the analysis says why it is not a view */
  r2->host = true;
  fu_strbuf_clear(&why);
  CHECK_EQ_INT(fu_value_layout(f, r2->results[0], &l, &why), FU_ERR_UNSUPPORTED);
  CHECK_STR(why.data,
            "%T3 is marked host but is not a view: merges dims 2 and 3 of %T2, which are not contiguous "
            "(stride 8192 != 1 * 64)");
  /* kernel values are row-major */
  r2->host = false;
  CHECK_EQ_INT(fu_value_layout(f, r2->results[0], &l, &why), FU_OK);
  CHECK_STR(layout_str(&sb, &l), "[98304, 768, 1]");

  /* a long chain of host views does not recurse: 20000 alternating reshapes */
  fu_value *cur = x->results[0];
  for (int i = 0; i < 20000; i++) {
    fu_op *v = mk_view(f, FU_OP_RESHAPE, cur, NULL, i % 2 ? "768, 128, 64" : "98304, 64");
    v->host = true;
    cur = v->results[0];
  }
  CHECK_EQ_INT(fu_value_layout(f, cur, &l, &why), FU_OK);
  CHECK_STR(layout_str(&sb, &l), "[8192, 64, 1]");
  fu_strbuf_free(&sb);
  fu_strbuf_free(&why);
  fu_module_free(m);
}

/* ---- the pass on the seed fusions --------------------------------------------------- */

static const char *gelu_text =
    "fusion @gelu {\n"
    "  %T0 = input f32[8192, 3072]\n"
    "  %T1 = reshape %T0 : f32[64, 128, 3072]\n"
    "  %T3 = mul %T1, 0.5\n"
    "  %T5 = mul %T1, 0.707107\n"
    "  %T6 = erf %T5\n"
    "  %T8 = add %T6, 1.0\n"
    "  %T9 = mul %T3, %T8\n"
    "  %T10 = reshape %T9 : f32[8192, 3072]\n"
    "  output %T10\n"
    "}\n";

static void test_pass_gelu(void) {
  parsed p;
  if (!parse_text(&p, gelu_text)) return;
  fu_status st;
  char *dbg = run_pass(p.m, &st);
  CHECK_EQ_INT(st, FU_OK);
  CHECK(is_host(p.m, "T1"));
  CHECK(is_host(p.m, "T10"));
  CHECK(!is_host(p.m, "T9"));
  CHECK_CONTAINS(dbg, "%T1 = reshape %T0: moved to host (splits dim 0 of contiguous input %T0)");
  CHECK_CONTAINS(dbg,
                 "%T10 = reshape %T9: moved to host (merges dims 0 and 1 of %T9, which the kernel writes row-major)");
  CHECK_EQ_INT(fu_verify_module(p.m, &p.diag), FU_OK);
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  CHECK_STR(value_layout(p.m, "T1", &sb), "[393216, 3072, 1]");
  CHECK_STR(value_layout(p.m, "T9", &sb), "[393216, 3072, 1]");
  CHECK_STR(value_layout(p.m, "T10", &sb), "[3072, 1]");
  fu_strbuf_free(&sb);
  /* idempotent: a second run gives the same text */
  char *once = print_module(p.m);
  CHECK_CONTAINS(once, "%T1 = reshape %T0 {host=true}");
  free(dbg);
  dbg = run_pass(p.m, &st);
  char *twice = print_module(p.m);
  CHECK_STR(twice, once);
  free(once);
  free(twice);
  free(dbg);
  fu_module_free(p.m);
}

static void test_pass_gelu_two_outputs(void) {
  parsed p;
  if (!parse_text(&p,
                  "fusion @gelu2 {\n"
                  "  %T0 = input f32[8192, 3072]\n"
                  "  %T1 = reshape %T0 : f32[64, 128, 3072]\n"
                  "  %T3 = mul %T1, 0.5\n"
                  "  %T5 = mul %T1, 0.707107\n"
                  "  %T6 = erf %T5\n"
                  "  %T8 = add %T6, 1.0\n"
                  "  %T9 = mul %T3, %T8\n"
                  "  %T10 = reshape %T9 : f32[8192, 3072]\n"
                  "  output %T1, %T10\n"
                  "}\n"))
    return;
  fu_status st;
  char *dbg = run_pass(p.m, &st);
  CHECK_EQ_INT(st, FU_OK);
  /* T1 is an output and feeds the kernel: still a host alias of T0 */
  CHECK(is_host(p.m, "T1"));
  CHECK(is_host(p.m, "T10"));
  free(dbg);
  fu_module_free(p.m);
}

static void test_pass_transpose(void) {
  parsed p;
  if (!parse_text(&p,
                  "fusion @transpose {\n"
                  "  %T0 = input f32[768, 128, 64]\n"
                  "  %T1 = reshape %T0 : f32[64, 12, 128, 64]\n"
                  "  %T2 = permute %T1 {dims=[0, 2, 1, 3]}\n"
                  "  %T3 = set %T2\n"
                  "  %T4 = reshape %T3 : f32[64, 128, 768]\n"
                  "  %T5 = reshape %T4 : f32[8192, 768]\n"
                  "  output %T5\n"
                  "}\n"))
    return;
  fu_status st;
  char *dbg = run_pass(p.m, &st);
  CHECK_EQ_INT(st, FU_OK);
  CHECK(is_host(p.m, "T1"));
  CHECK(is_host(p.m, "T2"));
  CHECK(!is_host(p.m, "T3"));
  CHECK(is_host(p.m, "T4"));
  CHECK(is_host(p.m, "T5"));
  CHECK_CONTAINS(dbg, "%T2 = permute %T1: moved to host (permutes the dims of %T1 (strides permute))");
  CHECK_CONTAINS(dbg, "%T3 = set %T2 stays: set is a copy, not a view: reading %T2, it is the kernel's work");
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  /* the kernel (the set) reads T2 with the permuted strides and writes T3 row-major */
  CHECK_STR(value_layout(p.m, "T2", &sb), "[98304, 64, 8192, 1]");
  CHECK_STR(value_layout(p.m, "T3", &sb), "[98304, 768, 64, 1]");
  CHECK_STR(value_layout(p.m, "T5", &sb), "[768, 1]");
  fu_strbuf_free(&sb);
  CHECK_EQ_INT(fu_verify_module(p.m, &p.diag), FU_OK);
  free(dbg);
  fu_module_free(p.m);
}

static void test_pass_view_chain(void) {
  parsed p;
  if (!parse_text(&p,
                  "fusion @chain {\n"
                  "  %T0 = input f32[8192, 3072]\n"
                  "  %T1 = reshape %T0 : f32[64, 128, 3072]\n"
                  "  %T2 = add %T1, %T1\n"
                  "  %T3 = reshape %T2 : f32[8192, 3072]\n"
                  "  %T4 = mul %T3, %T3\n"
                  "  %T5 = reshape %T4 : f32[64, 128, 3072]\n"
                  "  output %T5\n"
                  "}\n"))
    return;
  fu_status st;
  char *dbg = run_pass(p.m, &st);
  CHECK_EQ_INT(st, FU_OK);
  CHECK(is_host(p.m, "T1"));
  CHECK(!is_host(p.m, "T3"));
  CHECK(is_host(p.m, "T5"));
  CHECK_CONTAINS(dbg, "%T3 = reshape %T2 stays: between kernel ops (%T2 is computed by 'add', %T3 is read by 'mul')");
  free(dbg);
  fu_module_free(p.m);
}

/* ---- the pass: cases that must stay, and output-end layouts ----------------------------- */

static void test_pass_strided_input(void) {
  parsed p;
  if (!parse_text(&p,
                  "fusion @strided {\n"
                  "  %T0 = input f32[64, 128] {stride_order=[0, 1]}\n"
                  "  %T1 = reshape %T0 : f32[8192]\n"
                  "  %T2 = permute %T0 {dims=[1, 0]}\n"
                  "  %T3 = reshape %T2 : f32[8192]\n"
                  "  %T4 = add %T1, %T3\n"
                  "  output %T4\n"
                  "}\n"))
    return;
  fu_status st;
  char *dbg = run_pass(p.m, &st);
  CHECK_EQ_INT(st, FU_OK);
  CHECK(!is_host(p.m, "T1"));
  CHECK(is_host(p.m, "T2"));
  CHECK(is_host(p.m, "T3")); /* the permute made it row-major again */
  CHECK_CONTAINS(dbg,
                 "%T1 = reshape %T0 stays: merges dims 0 and 1 of input %T0 with strides [1, 64], which are not "
                 "contiguous (stride 1 != 64 * 128)");
  CHECK_CONTAINS(dbg, "%T3 = reshape %T2: moved to host (merges dims 0 and 1 of %T2)");
  free(dbg);
  fu_module_free(p.m);
}

static void test_pass_output_permute(void) {
  /* The producer is seen by nobody else: the kernel writes it permuted and
   * the permute becomes a host alias with a dense output. */
  parsed p;
  if (!parse_text(&p,
                  "fusion @outperm {\n"
                  "  %T0 = input f32[N, 64]\n"
                  "  %T1 = exp %T0\n"
                  "  %T2 = permute %T1 {dims=[1, 0]}\n"
                  "  output %T2\n"
                  "}\n"))
    return;
  fu_status st;
  char *dbg = run_pass(p.m, &st);
  CHECK_EQ_INT(st, FU_OK);
  CHECK(is_host(p.m, "T2"));
  CHECK_CONTAINS(dbg, "%T2 = permute %T1: moved to host (permutes the dims of %T1, which the kernel writes with "
                      "strides [1, N] (strides permute))");
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  CHECK_STR(value_layout(p.m, "T1", &sb), "[1, N]");
  CHECK_STR(value_layout(p.m, "T2", &sb), "[N, 1]");
  fu_strbuf_free(&sb);
  free(dbg);
  fu_module_free(p.m);

  /* The producer is itself an output (written dense row-major): the
   * permute stays in the kernel; the reshape after it is then a host view
   * of the permute's row-major result. */
  if (!parse_text(&p,
                  "fusion @outperm2 {\n"
                  "  %T0 = input f32[32, 64]\n"
                  "  %T1 = exp %T0\n"
                  "  %T2 = permute %T1 {dims=[1, 0]}\n"
                  "  %T3 = reshape %T2 : f32[2048]\n"
                  "  output %T1, %T3\n"
                  "}\n"))
    return;
  dbg = run_pass(p.m, &st);
  CHECK_EQ_INT(st, FU_OK);
  CHECK(!is_host(p.m, "T2"));
  CHECK(is_host(p.m, "T3"));
  CHECK_CONTAINS(dbg,
                 "%T2 = permute %T1 stays: %T1 is a fusion output, so the kernel writes it dense row-major, and "
                 "%T3 = reshape %T2 would not be a view: merges dims 0 and 1 of %T2, which are not contiguous "
                 "(stride 1 != 64 * 32)");
  free(dbg);
  fu_module_free(p.m);

  /* Two trailing views needing different layouts of one free producer:
   * the reshape takes row-major, the permute stays. */
  if (!parse_text(&p,
                  "fusion @outperm3 {\n"
                  "  %T0 = input f32[32, 64]\n"
                  "  %T1 = exp %T0\n"
                  "  %T2 = permute %T1 {dims=[1, 0]}\n"
                  "  %T3 = reshape %T1 : f32[2048]\n"
                  "  output %T2, %T3\n"
                  "}\n"))
    return;
  dbg = run_pass(p.m, &st);
  CHECK(!is_host(p.m, "T2"));
  CHECK(is_host(p.m, "T3"));
  CHECK_CONTAINS(dbg, "%T2 = permute %T1 stays: %T1 has no layout that makes every output of its views dense");
  free(dbg);
  fu_module_free(p.m);
}

static void test_pass_output_set_and_expand(void) {
  parsed p;
  if (!parse_text(&p,
                  "fusion @outset {\n"
                  "  %T0 = input f32[32, 64]\n"
                  "  %T1 = exp %T0\n"
                  "  %T2 = set %T1\n"
                  "  %T3 = neg %T0\n"
                  "  %T4 = set %T3\n"
                  "  %T5 = sum %T0 {axes=[1], keepdim=true} : f32[32, 1]\n"
                  "  %T6 = expand %T5 : f32[32, 64]\n"
                  "  output %T2, %T3, %T4, %T6\n"
                  "}\n"))
    return;
  fu_status st;
  char *dbg = run_pass(p.m, &st);
  CHECK_EQ_INT(st, FU_OK);
  CHECK(is_host(p.m, "T2"));  /* nobody else sees T1: the kernel writes T2 directly */
  CHECK(!is_host(p.m, "T4")); /* T3 is an output too: set asks for a copy */
  CHECK(!is_host(p.m, "T6")); /* an expanded output would not be dense */
  CHECK_CONTAINS(dbg, "%T2 = set %T1: moved to host (aliases %T1, which the kernel writes row-major)");
  CHECK_CONTAINS(dbg, "%T4 = set %T3 stays: %T3 is a fusion output, so the kernel writes it dense row-major, "
                      "and %T4 = set %T3 would alias a buffer that is also a fusion output, and set asks for a "
                      "copy");
  CHECK_CONTAINS(dbg, "%T6 = expand %T5 stays:");
  CHECK_CONTAINS(dbg, "the output %T6 would have strides [1, 0], not dense row-major [64, 1]");
  free(dbg);
  fu_module_free(p.m);
}

static void test_pass_input_end_kinds(void) {
  parsed p;
  if (!parse_text(&p,
                  "fusion @kinds {\n"
                  "  %T0 = input f32[N, 1, 32] {contiguity=[true, none, true]}\n"
                  "  %T1 = squeeze %T0 {dims=[1]} : f32[N, 32]\n"
                  "  %T2 = broadcast_in_dim %T1 {broadcast_dims=[1, 2]} : f32[4, N, 32]\n"
                  "  %T3 = input f32[N, 32]\n"
                  "  %T4 = broadcast %T3 {is_broadcast_dim=[true, false, false]} : f32[1, N, 32]\n"
                  "  %T5 = expand %T4 : f32[4, N, 32]\n"
                  "  %T6 = add %T2, %T5\n"
                  "  %T7 = set %T3\n"
                  "  output %T6, %T7\n"
                  "}\n"))
    return;
  fu_status st;
  char *dbg = run_pass(p.m, &st);
  CHECK_EQ_INT(st, FU_OK);
  CHECK(is_host(p.m, "T1"));
  CHECK(is_host(p.m, "T2"));
  CHECK(is_host(p.m, "T4"));
  CHECK(is_host(p.m, "T5"));
  CHECK(!is_host(p.m, "T7"));
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  CHECK_STR(value_layout(p.m, "T2", &sb), "[0, 32, 1]");
  CHECK_STR(value_layout(p.m, "T5", &sb), "[0, 32, 1]");
  fu_strbuf_free(&sb);
  CHECK_CONTAINS(dbg, "%T1 = squeeze %T0: moved to host (drops size-1 dim 1 of contiguous input %T0)");
  CHECK_CONTAINS(dbg, "%T7 = set %T3 stays: set is a copy");
  free(dbg);
  fu_module_free(p.m);
}

/* A pure-view fusion is all host; a segmented fusion is left alone. */
static void test_pass_pure_view_and_segmented(void) {
  parsed p;
  if (!parse_text(&p,
                  "fusion @pure {\n"
                  "  %T0 = input f32[768, 128, 64]\n"
                  "  %T1 = permute %T0 {dims=[2, 0, 1]}\n"
                  "  output %T1\n"
                  "}\n"))
    return;
  fu_status st;
  char *dbg = run_pass(p.m, &st);
  CHECK_EQ_INT(st, FU_OK);
  CHECK(is_host(p.m, "T1"));
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  CHECK_STR(value_layout(p.m, "T1", &sb), "[1, 8192, 64]");
  fu_strbuf_free(&sb);
  free(dbg);
  fu_module_free(p.m);

  if (!parse_text(&p,
                  "fusion @seg {\n"
                  "  %T0 = input f32[8192, 3072]\n"
                  "  %T1 = reshape %T0 : f32[64, 128, 3072]\n"
                  "  segment @g0 pointwise (%T1) -> (%T2) {\n"
                  "    %T2 = exp %T1\n"
                  "  }\n"
                  "  output %T2\n"
                  "}\n"))
    return;
  dbg = run_pass(p.m, &st);
  CHECK_EQ_INT(st, FU_OK);
  CHECK(!is_host(p.m, "T1"));
  CHECK_CONTAINS(dbg, "fusion @seg is already segmented; left unchanged");
  free(dbg);
  fu_module_free(p.m);
}

/* Without a debug stream nothing is printed and the result is the same. */
static void test_pass_no_context(void) {
  parsed p;
  if (!parse_text(&p, gelu_text)) return;
  CHECK_EQ_INT(fu_strip_bookend_views(p.m, NULL), FU_OK);
  CHECK(is_host(p.m, "T1"));
  CHECK(is_host(p.m, "T10"));
  fu_module_free(p.m);
}

/* Allocation failures at every step give FU_ERR_NOMEM and no leak (run
 * under ASan to check the leak part). */
typedef struct failing {
  int left;
} failing;

static void *failing_alloc(void *user, void *ptr, size_t old_size, size_t new_size) {
  failing *fl = user;
  (void)old_size;
  if (new_size == 0) {
    free(ptr);
    return NULL;
  }
  if (fl->left-- <= 0) return NULL;
  return realloc(ptr, new_size);
}

static void test_pass_nomem(void) {
  parsed p;
  if (!parse_text(&p, gelu_text)) return;
  bool saw_nomem = false, saw_ok = false;
  for (int budget = 0; budget < 400 && !saw_ok; budget++) {
    failing fl = {budget};
    fu_allocator saved = p.m->alloc;
    p.m->alloc.fn = failing_alloc;
    p.m->alloc.user = &fl;
    fu_status st = fu_strip_bookend_views(p.m, NULL);
    p.m->alloc = saved;
    if (st == FU_ERR_NOMEM) saw_nomem = true;
    if (st == FU_OK) saw_ok = true;
    CHECK(st == FU_OK || st == FU_ERR_NOMEM);
  }
  CHECK(saw_nomem);
  CHECK(saw_ok);
  CHECK(is_host(p.m, "T1"));
  fu_module_free(p.m);
}


/* ---- layouts against real memory ------------------------------------------------------ */

/* A stride's value for concrete inputs: symbols from the bindings, unknown
 * input strides from the input tensors themselves. */
static bool eval_stride(const fu_stride *s, const fu_bindings *bind, fu_op **inputs, const fu_arg *args,
                        uint32_t n_inputs, int64_t *out) {
  int64_t v = s->coef;
  for (uint32_t i = 0; i < s->n_atoms; i++) {
    const fu_stride_atom *at = &s->atoms[i];
    int64_t x = -1;
    if (at->sym) {
      if (!fu_bindings_lookup(bind, at->sym, &x)) return false;
    } else {
      for (uint32_t k = 0; k < n_inputs; k++)
        if (inputs[k]->results[0] == at->input) x = args[k].tensor.strides[at->dim];
      if (x < 0) return false;
    }
    v *= x;
  }
  *out = v;
  return true;
}

/* For every output that is a host alias of an input: reading the input's
 * memory with the strides the analysis gives must produce exactly what the
 * interpreter computes for that output.  Returns how many outputs were
 * checked. */
static int check_aliases_against_memory(const char *text) {
  parsed p;
  if (!parse_text(&p, text)) return 0;
  fu_status st;
  char *dbg = run_pass(p.m, &st);
  free(dbg);
  CHECK_EQ_INT(st, FU_OK);
  fu_fusion *f = p.m->first;
  fu_allocator al = fu_default_allocator();
  fu_input_options io = {0};
  io.random = true;
  io.default_extent = 6;
  io.seed = 7;
  fu_arg *args = NULL, *outs = NULL;
  uint32_t n_args = 0, n_outs = 0;
  int checked = 0;
  CHECK_EQ_INT(fu_interp_make_inputs(f, &io, al, &p.diag, &args, &n_args), FU_OK);
  CHECK_EQ_INT(fu_interp_run(f, args, n_args, NULL, al, &p.diag, &outs, &n_outs), FU_OK);
  fu_bindings bind;
  fu_bindings_init(&bind, al);
  CHECK_EQ_INT(fu_interp_bind_inputs(f, args, n_args, &bind, &p.diag), FU_OK);
  fu_op *inputs[16];
  uint32_t n_inputs = fu_interp_inputs_of(f, inputs, 16);
  fu_value *ov[16];
  uint32_t n_ov = fu_fusion_outputs(f, ov, 16);
  CHECK_EQ_INT(n_ov, n_outs);
  for (uint32_t i = 0; i < n_ov && i < n_outs; i++) {
    const fu_value *root = ov[i];
    while (root->def && root->def->host) root = root->def->operands[0];
    if (root == ov[i] || !root->def || root->def->kind != FU_OP_INPUT) continue;
    uint32_t k = 0;
    while (k < n_inputs && inputs[k]->results[0] != root) k++;
    CHECK(k < n_inputs);
    if (k == n_inputs) continue;
    fu_view_layout l;
    fu_strbuf why;
    fu_strbuf_init(&why, al);
    CHECK_EQ_INT(fu_value_layout(f, ov[i], &l, &why), FU_OK);
    fu_strbuf_free(&why);
    fu_host_tensor view = outs[i].tensor; /* shape and dtype */
    view.data = args[k].tensor.data;
    view.owned = NULL;
    bool ok = true;
    for (int32_t d = 0; d < l.rank && ok; d++)
      ok = eval_stride(&l.strides[d], &bind, inputs, args, n_inputs, &view.strides[d]);
    CHECK(ok);
    if (!ok) continue;
    fu_compare_result cmp;
    CHECK_EQ_INT(fu_host_tensor_compare(&view, &outs[i].tensor, 0, 0, &cmp), FU_OK);
    CHECK_EQ_INT(cmp.n_mismatch, 0);
    checked++;
  }
  fu_bindings_free(&bind);
  fu_args_free(args, n_args, al);
  fu_args_free(outs, n_outs, al);
  fu_module_free(p.m);
  return checked;
}

static void test_layouts_match_memory(void) {
  /* the seed's transpose, with every view returned */
  CHECK_EQ_INT(check_aliases_against_memory("fusion @t {\n"
                                            "  %T0 = input f32[768, 128, 64]\n"
                                            "  %T1 = reshape %T0 : f32[64, 12, 128, 64]\n"
                                            "  %T2 = permute %T1 {dims=[0, 2, 1, 3]}\n"
                                            "  %T3 = squeeze %T0 {dims=[]} : f32[768, 128, 64]\n"
                                            "  output %T1, %T2, %T3\n"
                                            "}\n"),
               3);
  /* a non-contiguous symbolic input: the unknown strides are real strides */
  CHECK_EQ_INT(check_aliases_against_memory("fusion @s {\n"
                                            "  %T0 = input f32[N, 4, 8] {contiguity=[true, false, true]}\n"
                                            "  %T1 = reshape %T0 : f32[N, 4, 2, 4]\n"
                                            "  %T2 = permute %T1 {dims=[3, 1, 0, 2]}\n"
                                            "  %T3 = broadcast %T2 {is_broadcast_dim=[false, true, false, false, false]}"
                                            " : f32[4, 1, 4, N, 2]\n"
                                            "  %T4 = input f32[M, 2, 3] {stride_order=[0, 2, 1]}\n"
                                            "  %T5 = reshape %T4 : f32[M, 6]\n"
                                            "  %T6 = permute %T4 {dims=[0, 2, 1]}\n"
                                            "  %T7 = reshape %T6 : f32[M, 6]\n"
                                            "  output %T1, %T2, %T3, %T5, %T7\n"
                                            "}\n"),
               4); /* T7 merges dims of the permuted T6 that are not contiguous: it stays */
  /* column-major input, merge after a permute, expand and broadcast_in_dim */
  CHECK_EQ_INT(check_aliases_against_memory("fusion @c {\n"
                                            "  %T0 = input f32[16, 12] {stride_order=[0, 1]}\n"
                                            "  %T1 = permute %T0 {dims=[1, 0]}\n"
                                            "  %T2 = reshape %T1 : f32[3, 4, 2, 8]\n"
                                            "  %T3 = input f32[12, 1]\n"
                                            "  %T4 = expand %T3 : f32[12, 5]\n"
                                            "  %T5 = broadcast_in_dim %T3 {broadcast_dims=[0, 2]} : f32[12, 3, 7]\n"
                                            "  %T6 = squeeze %T3 {dims=[1]} : f32[12]\n"
                                            "  output %T1, %T2, %T4, %T5, %T6\n"
                                            "}\n"),
               5);
}

FU_TEST_MAIN(FU_TEST(test_stride_algebra), FU_TEST(test_row_major_and_inputs), FU_TEST(test_reshape_contiguous),
             FU_TEST(test_reshape_strided), FU_TEST(test_reshape_symbolic), FU_TEST(test_other_views),
             FU_TEST(test_chain_analysis), FU_TEST(test_pass_gelu), FU_TEST(test_pass_gelu_two_outputs),
             FU_TEST(test_pass_transpose), FU_TEST(test_pass_view_chain), FU_TEST(test_pass_strided_input),
             FU_TEST(test_pass_output_permute), FU_TEST(test_pass_output_set_and_expand),
             FU_TEST(test_pass_input_end_kinds), FU_TEST(test_pass_pure_view_and_segmented),
             FU_TEST(test_pass_no_context), FU_TEST(test_pass_nomem),
             FU_TEST(test_layouts_match_memory))
