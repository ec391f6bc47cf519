/* Unit tests for the kernel IR: construction, launch expressions, the
 * verifier, and the text form (print, parse, parse inside another text). */
#include <stdint.h>
#include <string.h>

#include "fuser/kir.h"
#include "fuser/kir_text.h"
#include "harness.h"

/* ---- a diagnostics sink that keeps the text of every message ---- */

typedef struct captured {
  char text[4096];
  size_t len;
  unsigned n;
} captured;

static void capture(void *user, const fu_diagnostic *d) {
  captured *c = user;
  c->n++;
  int k = snprintf(c->text + c->len, sizeof c->text - c->len, "%u:%u: %s: %s\n", fu_loc_file_line(d->loc), d->loc.col,
                   fu_severity_name(d->severity), d->message);
  if (k > 0 && c->len + (size_t)k < sizeof c->text) c->len += (size_t)k;
}

static fu_diag_engine capture_engine(captured *c) {
  fu_diag_engine e;
  fu_diag_init(&e, fu_default_allocator());
  memset(c, 0, sizeof *c);
  e.handler = capture;
  e.user = c;
  return e;
}

static char *print_kernel(const fu_kernel *k, fu_strbuf *sb) {
  fu_strbuf_init(sb, fu_default_allocator());
  fu_kernel_print(sb, k);
  return sb->data;
}

/* ---- construction ------------------------------------------------------ */

/* The builder API makes the same kernel the text describes. */
static void test_build_and_print(void) {
  fu_module *m = fu_module_new(fu_default_allocator());
  fu_kernel *k = fu_kernel_new(m, "g0");
  CHECK(k != NULL);
  fu_kval *in = fu_kernel_tensor_param(m, k, "T0", FU_DT_F32, NULL, true, true, 16);
  fu_kval *out = fu_kernel_tensor_param(m, k, "T9", FU_DT_F32, NULL, false, true, 0);
  CHECK_EQ_INT(out->align, 4); /* 0: the element size */
  out->align = 16;
  fu_kval *n = fu_kernel_extent_param(m, k, "N", FU_DT_I64, "N");
  fu_kval *st = fu_kernel_stride_param(m, k, "s0", FU_DT_I64, in, 0);
  CHECK(in && out && n && st);
  k->grid[0] = fu_lexpr_binary(m, FU_LX_CEIL_DIV, fu_lexpr_binary(m, FU_LX_MUL, fu_lexpr_sym(m, "N"), fu_lexpr_const(m, 3072)),
                               fu_lexpr_const(m, 512));
  k->block[0] = 128;
  fu_kval *acc = fu_kval_new_mutable(m, k, "acc", FU_DT_F32);
  fu_kval *buf = fu_kval_new_array(m, k, "buf", FU_DT_F32, FU_MEM_SHARED, 128);
  CHECK(fu_kval_new_array(m, k, "bad", FU_DT_F32, FU_MEM_SHARED, 0) == NULL);

  fu_kbuilder b = fu_kbuilder_at(m, k, &k->body);
  fu_kval *tid = fu_kb_special(&b, "tid", FU_SP_TID_X, FU_DT_I32);
  fu_kval *c0 = fu_kb_const_i(&b, "c0", FU_DT_I32, 0);
  fu_kval *c1 = fu_kb_const_i(&b, "c1", FU_DT_I32, 1);
  fu_kval *c4 = fu_kb_const_i(&b, "c4", FU_DT_I32, 4);
  fu_kval *zero = fu_kb_const_f(&b, "zero", FU_DT_F32, 0.0);
  fu_kb_assign(&b, acc, zero);
  fu_kinst *loop = fu_kb_for(&b, "u", c0, c4, c1, FU_LOOP_UNROLL);
  CHECK(loop != NULL);
  fu_kbuilder lb = fu_kbuilder_at(m, k, &loop->u.loop.body);
  fu_kval *i = fu_kb_binary(&lb, "i", FU_OP_ADD, FU_DT_I32, tid, loop->results[0]);
  fu_kval *ni = fu_kb_unary(&lb, "n32", FU_OP_CAST, FU_DT_I32, n);
  fu_kval *p = fu_kb_binary(&lb, "p", FU_OP_LT, FU_DT_BOOL, i, ni);
  fu_kinst *br = fu_kb_if(&lb, p);
  fu_kbuilder tb = fu_kbuilder_at(m, k, &br->u.branch.then_body);
  fu_kval *x[4];
  CHECK(fu_kb_load(&tb, "x", in, i, 4, FU_DT_F32, x) != NULL);
  fu_kval *a = fu_kb_read(&tb, "a", acc);
  fu_kval *s = fu_kb_binary(&tb, "s", FU_OP_ADD, FU_DT_F32, a, x[0]);
  fu_kb_assign(&tb, acc, s);
  fu_kb_store(&tb, out, i, x, 4);
  fu_kbuilder eb = fu_kbuilder_at(m, k, &br->u.branch.else_body);
  fu_kb_store(&eb, buf, c0, &zero, 1);
  fu_kb_sync(&eb);
  fu_kval *r = fu_kb_read(&b, "r", acc);
  fu_kval *sh = fu_kb_shfl_xor(&b, "sh", r, 16);
  fu_kb_store(&b, out, tid, &sh, 1);

  fu_diag_engine diag;
  captured cap;
  diag = capture_engine(&cap);
  CHECK_EQ_INT(fu_kernel_verify(k, &diag, NULL), FU_OK);
  CHECK_STR(cap.text, "");

  fu_strbuf sb;
  const char *want =
      "kernel @g0 (%T0: global f32 readonly noalias align=16, %T9: global f32 noalias align=16, %N: i64 extent=N, "
      "%s0: i64 stride=%T0 dim=0)\n"
      "    grid=[ceil_div(mul(N, 3072), 512), 1, 1] block=[128, 1, 1] smem=0 index=i32 {\n"
      "  %acc = mutable f32\n"
      "  %buf = array shared f32[128]\n"
      "  %tid = special thread_idx.x : i32\n"
      "  %c0 = const 0 : i32\n"
      "  %c1 = const 1 : i32\n"
      "  %c4 = const 4 : i32\n"
      "  %zero = const 0.0 : f32\n"
      "  assign %acc, %zero\n"
      "  for %u = %c0 to %c4 step %c1 unroll {\n"
      "    %i = add %tid, %u : i32\n"
      "    %n32 = cast %N : i32\n"
      "    %p = lt %i, %n32 : bool\n"
      "    if %p {\n"
      "      %x0, %x1, %x2, %x3 = load.v4 %T0[%i] : f32\n"
      "      %a = read %acc : f32\n"
      "      %s = add %a, %x0 : f32\n"
      "      assign %acc, %s\n"
      "      store.v4 %T9[%i], %x0, %x1, %x2, %x3\n"
      "    } else {\n"
      "      store %buf[%c0], %zero\n"
      "      sync\n"
      "    }\n"
      "  }\n"
      "  %r = read %acc : f32\n"
      "  %sh = shfl.xor %r, 16 : f32\n"
      "  store %T9[%tid], %sh\n"
      "}\n";
  CHECK_STR(print_kernel(k, &sb), want);

  /* and the text parses back to a kernel that prints the same */
  fu_source src = {"built.kir", sb.data, sb.len, 1};
  fu_kernel *k2 = NULL;
  CHECK_EQ_INT(fu_kernel_parse(&src, m, &diag, &k2), FU_OK);
  CHECK(k2 != NULL);
  if (!k2) {
    fu_strbuf_free(&sb);
    fu_module_free(m);
    return;
  }
  fu_strbuf sb2;
  CHECK_STR(print_kernel(k2, &sb2), want);
  CHECK(fu_lexpr_equal(k->grid[0], k2->grid[0]));
  CHECK_EQ_INT(k2->n_params, 4);
  CHECK(k2->params[3]->stride_of == k2->params[0]);
  fu_strbuf_free(&sb);
  fu_strbuf_free(&sb2);
  fu_module_free(m);
}

/* Unnamed values and reused names still print as text that parses. */
static void test_print_unique_names(void) {
  fu_module *m = fu_module_new(fu_default_allocator());
  fu_kernel *k = fu_kernel_new(m, "names");
  fu_kval *t = fu_kernel_tensor_param(m, k, "x", FU_DT_I32, NULL, false, false, 4);
  fu_kbuilder b = fu_kbuilder_at(m, k, &k->body);
  fu_kval *a = fu_kb_const_i(&b, NULL, FU_DT_I32, 1);
  fu_kval *c = fu_kb_const_i(&b, "x", FU_DT_I32, 2); /* clashes with the parameter */
  fu_kval *d = fu_kb_binary(&b, "x", FU_OP_ADD, FU_DT_I32, a, c);
  fu_kb_store(&b, t, a, &d, 1);
  fu_strbuf sb;
  const char *want =
      "kernel @names (%x: global i32 align=4)\n"
      "    grid=[1, 1, 1] block=[1, 1, 1] smem=0 index=i32 {\n"
      "  %v1 = const 1 : i32\n"
      "  %x.2 = const 2 : i32\n"
      "  %x.3 = add %v1, %x.2 : i32\n"
      "  store %x[%v1], %x.3\n"
      "}\n";
  CHECK_STR(print_kernel(k, &sb), want);
  captured cap;
  fu_diag_engine diag = capture_engine(&cap);
  fu_source src = {"names.kir", sb.data, sb.len, 1};
  fu_kernel *k2 = NULL;
  CHECK_EQ_INT(fu_kernel_parse(&src, m, &diag, &k2), FU_OK);
  fu_strbuf sb2;
  CHECK_STR(k2 ? print_kernel(k2, &sb2) : NULL, want);
  fu_strbuf_free(&sb);
  if (k2) fu_strbuf_free(&sb2);
  fu_module_free(m);
}

static void test_param_growth(void) {
  fu_module *m = fu_module_new(fu_default_allocator());
  fu_kernel *k = fu_kernel_new(m, "many");
  for (int i = 0; i < 100; i++) {
    char name[16];
    snprintf(name, sizeof name, "p%d", i);
    CHECK(fu_kernel_scalar_param(m, k, name, FU_DT_I64) != NULL);
  }
  CHECK_EQ_INT(k->n_params, 100);
  CHECK(k->params_cap >= 100);
  CHECK_STR(k->params[0]->name, "p0");
  CHECK_STR(k->params[99]->name, "p99");
  CHECK_EQ_INT(k->params[99]->id, 99);
  CHECK_EQ_INT(fu_kernel_add_param(m, k, fu_kval_new_local(m, k, "l", FU_DT_I32)), FU_ERR_INVALID_ARG);
  fu_module_free(m);
}

/* Dynamic shared arrays are laid out one after another from 16-byte
 * boundaries, and the kernel's dynamic shared memory grows to cover them. */
static void test_dynamic_arrays(void) {
  fu_module *m = fu_module_new(fu_default_allocator());
  fu_kernel *k = fu_kernel_new(m, "dyn");
  fu_kval *a = fu_kernel_dynamic_array(m, k, "a", FU_DT_BF16, 65536);
  fu_kval *b = fu_kernel_dynamic_array(m, k, "b", FU_DT_F32, 3);
  fu_kval *c = fu_kernel_dynamic_array(m, k, "c", FU_DT_F64, 1);
  CHECK(a && b && c);
  CHECK(a->dynamic && a->space == FU_MEM_SHARED && a->length == 65536);
  CHECK_EQ_INT(a->offset, 0);
  CHECK_EQ_INT(b->offset, 131072);
  CHECK_EQ_INT(c->offset, 131088); /* 131072 + 12, rounded up to 16 */
  CHECK_EQ_INT(k->smem_bytes, 131096);
  CHECK(fu_kernel_dynamic_array(m, k, "bad", FU_DT_F32, 0) == NULL);
  CHECK(fu_kernel_dynamic_array(m, k, "huge", FU_DT_F32, (int64_t)1 << 31) == NULL);
  CHECK_EQ_INT(k->smem_bytes, 131096);
  CHECK(!fu_kval_new_array(m, k, "s", FU_DT_F32, FU_MEM_SHARED, 4)->dynamic);
  /* blocks per SM by shared memory: 233472 / (131096 + 1024) on sm_90 is
   * 1, fewer than the threads allow; none for an unknown sm, none where
   * the threads are the limit */
  k->block[0] = 1024;
  CHECK_EQ_INT(fu_kernel_smem_blocks_per_sm(k, 90), 1);
  CHECK_EQ_INT(fu_kernel_smem_blocks_per_sm(k, 75), 0);
  fu_kernel *small = fu_kernel_new(m, "small");
  small->block[0] = 1024;
  CHECK(fu_kernel_dynamic_array(m, small, "r", FU_DT_F32, 1024) != NULL);
  CHECK_EQ_INT(fu_kernel_smem_blocks_per_sm(small, 90), 0);
  small->smem_bytes = 0;
  CHECK_EQ_INT(fu_kernel_smem_blocks_per_sm(small, 90), 0);
  fu_module_free(m);
}

/* ---- launch expressions --------------------------------------------------- */

static void test_lexpr_eval(void) {
  fu_module *m = fu_module_new(fu_default_allocator());
  fu_lexpr *n = fu_lexpr_sym(m, "N");
  fu_lexpr *e = fu_lexpr_binary(m, FU_LX_CEIL_DIV, fu_lexpr_binary(m, FU_LX_MUL, n, fu_lexpr_const(m, 3072)),
                                fu_lexpr_const(m, 512));
  fu_lexpr_binding bind[2] = {{"M", 7}, {"N", 8192}};
  int64_t v = 0;
  CHECK_EQ_INT(fu_lexpr_eval(e, bind, 2, &v, NULL), FU_OK);
  CHECK_EQ_INT(v, 49152);
  bind[1].value = 5;
  CHECK_EQ_INT(fu_lexpr_eval(e, bind, 2, &v, NULL), FU_OK);
  CHECK_EQ_INT(v, 30); /* ceil(15360 / 512) */
  bind[1].value = 1;
  fu_lexpr *e2 = fu_lexpr_binary(m, FU_LX_CEIL_DIV, fu_lexpr_binary(m, FU_LX_ADD, n, fu_lexpr_const(m, 1)),
                                 fu_lexpr_const(m, 3));
  CHECK_EQ_INT(fu_lexpr_eval(e2, bind, 2, &v, NULL), FU_OK);
  CHECK_EQ_INT(v, 1);
  fu_lexpr *mn = fu_lexpr_binary(m, FU_LX_MIN, n, fu_lexpr_const(m, 65535));
  fu_lexpr *mx = fu_lexpr_binary(m, FU_LX_MAX, n, fu_lexpr_const(m, 65535));
  CHECK_EQ_INT(fu_lexpr_eval(mn, bind, 2, &v, NULL), FU_OK);
  CHECK_EQ_INT(v, 1);
  CHECK_EQ_INT(fu_lexpr_eval(mx, bind, 2, &v, NULL), FU_OK);
  CHECK_EQ_INT(v, 65535);
  /* unbound symbol */
  const char *bad = NULL;
  CHECK_EQ_INT(fu_lexpr_eval(e, bind, 1, &v, &bad), FU_ERR_INVALID_ARG);
  CHECK_STR(bad, "N");
  /* overflow */
  bind[1].value = INT64_MAX / 1000;
  CHECK_EQ_INT(fu_lexpr_eval(e, bind, 2, &v, NULL), FU_ERR_RUNTIME);
  fu_lexpr *big = fu_lexpr_binary(m, FU_LX_ADD, fu_lexpr_const(m, INT64_MAX), fu_lexpr_const(m, 1));
  CHECK_EQ_INT(fu_lexpr_eval(big, NULL, 0, &v, NULL), FU_ERR_RUNTIME);
  /* ceil_div by zero or a negative */
  fu_lexpr *z = fu_lexpr_binary(m, FU_LX_CEIL_DIV, fu_lexpr_const(m, 4), fu_lexpr_const(m, 0));
  CHECK_EQ_INT(fu_lexpr_eval(z, NULL, 0, &v, NULL), FU_ERR_RUNTIME);
  CHECK(fu_lexpr_binary(m, FU_LX_ADD, NULL, n) == NULL);
  CHECK(fu_lexpr_equal(e, e));
  CHECK(!fu_lexpr_equal(e, e2));
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_lexpr_print(&sb, e);
  CHECK_STR(sb.data, "ceil_div(mul(N, 3072), 512)");
  fu_strbuf_free(&sb);
  fu_module_free(m);
}

/* ---- the verifier on kernels built through the API ------------------------------ */

static void test_verify_errors(void) {
  fu_module *m = fu_module_new(fu_default_allocator());
  captured cap;
  fu_diag_engine diag = capture_engine(&cap);

  /* a local defined twice */
  fu_kernel *k = fu_kernel_new(m, "twice");
  fu_kbuilder b = fu_kbuilder_at(m, k, &k->body);
  fu_kval *c = fu_kb_const_i(&b, "c", FU_DT_I32, 1);
  fu_kblock_append(&k->body, fu_kinst_new(m, FU_KI_CONST, NULL, 0, &c, 1));
  CHECK_EQ_INT(fu_kernel_verify(k, &diag, NULL), FU_ERR_VERIFY);
  CHECK(strstr(cap.text, "value '%c' is defined twice") != NULL);

  /* a parameter of another kernel */
  cap = (captured){0};
  fu_kernel *other = fu_kernel_new(m, "other");
  fu_kval *foreign = fu_kernel_scalar_param(m, other, "f", FU_DT_I32);
  fu_kernel *k2 = fu_kernel_new(m, "user");
  fu_kval *own = fu_kernel_scalar_param(m, k2, "g", FU_DT_I32);
  (void)own;
  foreign->id = 0; /* even with an id in range */
  fu_kbuilder b2 = fu_kbuilder_at(m, k2, &k2->body);
  fu_kb_binary(&b2, "s", FU_OP_ADD, FU_DT_I32, foreign, foreign);
  CHECK_EQ_INT(fu_kernel_verify(k2, &diag, NULL), FU_ERR_VERIFY);
  CHECK(strstr(cap.text, "share id 0") != NULL || strstr(cap.text, "not a parameter of this kernel") != NULL);

  /* an id past next_kval_id */
  cap = (captured){0};
  fu_kernel *k3 = fu_kernel_new(m, "ids");
  fu_kbuilder b3 = fu_kbuilder_at(m, k3, &k3->body);
  fu_kval *x = fu_kb_const_i(&b3, "x", FU_DT_I32, 1);
  x->id = 77;
  CHECK_EQ_INT(fu_kernel_verify(k3, &diag, NULL), FU_ERR_VERIFY);
  CHECK(strstr(cap.text, "has id 77, not below next_kval_id 1") != NULL);

  /* SYNC with operands, FOR without a body variable, IF on a float */
  cap = (captured){0};
  fu_kernel *k4 = fu_kernel_new(m, "shapes");
  fu_kbuilder b4 = fu_kbuilder_at(m, k4, &k4->body);
  fu_kval *f = fu_kb_const_f(&b4, "f", FU_DT_F32, 1.0);
  fu_kblock_append(&k4->body, fu_kinst_new(m, FU_KI_SYNC, &f, 1, NULL, 0));
  fu_kb_if(&b4, f);
  fu_kblock_append(&k4->body, fu_kinst_new(m, FU_KI_FOR, &f, 1, NULL, 0));
  k4->block[0] = 0;
  CHECK_EQ_INT(fu_kernel_verify(k4, &diag, NULL), FU_ERR_VERIFY);
  CHECK(strstr(cap.text, "'sync': takes no operands") != NULL);
  CHECK(strstr(cap.text, "'if': condition '%f' must be bool") != NULL);
  CHECK(strstr(cap.text, "'for': needs start, end, step and an induction variable") != NULL);
  CHECK(strstr(cap.text, "block dimension 0 is zero") != NULL);

  /* a store of the wrong width, and a read of a non-mutable */
  cap = (captured){0};
  fu_kernel *k5 = fu_kernel_new(m, "mem");
  fu_kval *t = fu_kernel_tensor_param(m, k5, "t", FU_DT_F32, NULL, false, true, 16);
  fu_kbuilder b5 = fu_kbuilder_at(m, k5, &k5->body);
  fu_kval *i0 = fu_kb_const_i(&b5, "i0", FU_DT_I32, 0);
  fu_kval *v = fu_kb_const_f(&b5, "v", FU_DT_F32, 0.0);
  fu_kinst *stv = fu_kb_store(&b5, t, i0, &v, 1);
  stv->u.mem.width = 4;
  fu_kblock_append(&k5->body, fu_kinst_new(m, FU_KI_READ, &v, 1, &i0, 1));
  CHECK_EQ_INT(fu_kernel_verify(k5, &diag, NULL), FU_ERR_VERIFY);
  CHECK(strstr(cap.text, "'store': of width 4 must have 4 values") != NULL);
  CHECK(strstr(cap.text, "'read': '%v' is not a mutable") != NULL);
  fu_module_free(m);
}

/* ---- parsing ---------------------------------------------------------------- */

static void test_parse_list_and_errors(void) {
  fu_module *m = fu_module_new(fu_default_allocator());
  captured cap;
  fu_diag_engine diag = capture_engine(&cap);
  const char *text =
      "// two kernels\n"
      "kernel @a () grid=[1, 1, 1] block=[1, 1, 1] smem=0 index=i32 {\n"
      "}\n"
      "kernel @b (%n: i32 extent=N) block=[32, 1, 1] {\n"
      "  %x = add %n, %n : i32\n"
      "}\n";
  fu_source src = {"list.kir", text, strlen(text), 1};
  fu_kernel **ks = NULL;
  uint32_t n = 0;
  CHECK_EQ_INT(fu_kernel_parse_list(&src, m, &diag, &ks, &n), FU_OK);
  CHECK_EQ_INT(n, 2);
  CHECK_STR(ks[1]->name, "b");
  CHECK_EQ_INT(ks[1]->block[0], 32);
  CHECK_EQ_INT(ks[1]->grid[0]->kind, FU_LX_CONST); /* defaults */
  CHECK_EQ_INT(ks[1]->index_dtype, FU_DT_I32);
  /* fu_kernel_parse wants exactly one */
  fu_kernel *k = NULL;
  CHECK_EQ_INT(fu_kernel_parse(&src, m, &diag, &k), FU_ERR_PARSE);
  CHECK(k == NULL);
  CHECK(strstr(cap.text, "4:1: error: expected end of input after the kernel, got 'kernel'") != NULL);

  /* the empty buffer: no kernels for the list, an error for one kernel */
  fu_source empty = {"empty.kir", "  // nothing\n", 13, 1};
  CHECK_EQ_INT(fu_kernel_parse_list(&empty, m, &diag, &ks, &n), FU_OK);
  CHECK_EQ_INT(n, 0);
  CHECK_EQ_INT(fu_kernel_parse(&empty, m, &diag, &k), FU_ERR_PARSE);

  /* locations honor first_line (chunks of a split file) */
  cap = (captured){0};
  const char *bad = "kernel @c () {\n  %y = exp %z : f32\n}\n";
  fu_source chunk = {"split.kir", bad, strlen(bad), 40};
  CHECK_EQ_INT(fu_kernel_parse(&chunk, m, &diag, &k), FU_ERR_PARSE);
  CHECK_STR(cap.text, "41:12: error: use of undefined value '%z'\n");

  /* deep nesting is an error, not a stack overflow */
  cap = (captured){0};
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_strbuf_puts(&sb, "kernel @deep () {\n  %t = const true : bool\n");
  for (int i = 0; i < 300; i++) fu_strbuf_puts(&sb, "if %t {\n");
  for (int i = 0; i < 300; i++) fu_strbuf_puts(&sb, "}\n");
  fu_strbuf_puts(&sb, "}\n");
  fu_source deep = {"deep.kir", sb.data, sb.len, 1};
  CHECK_EQ_INT(fu_kernel_parse(&deep, m, &diag, &k), FU_ERR_PARSE);
  CHECK(strstr(cap.text, "blocks nest more than 200 deep") != NULL);
  fu_strbuf_free(&sb);

  /* a truncated file at every length: an error or a kernel, never a crash */
  const char *full =
      "kernel @t (%T0: global f32[N] readonly align=16, %n: i64 extent=N) grid=[ceil_div(N, 4), 1, 1] {\n"
      "  %c = const 0 : i64\n  %x0, %x1 = load.v2 %T0[%c] : f32\n  %y = add %x0, %x1 : f32\n}\n";
  size_t flen = strlen(full);
  int ok = 0;
  for (size_t cut = 0; cut <= flen; cut++) {
    cap = (captured){0};
    fu_source part = {"cut.kir", full, cut, 1};
    fu_status st = fu_kernel_parse(&part, m, &diag, &k);
    if (st == FU_OK) ok++;
    else CHECK(cap.n > 0);
  }
  CHECK(ok >= 1);
  fu_module_free(m);
}

/* A kernel embedded in another text, bound to the values of a fusion. */
static void test_parse_at_with_scope(void) {
  fu_module *m = fu_module_new(fu_default_allocator());
  fu_fusion *f = fu_fusion_new(m, "f", fu_loc_none());
  fu_op *in = fu_op_new(f, FU_OP_INPUT, NULL, 0, 1, fu_loc_none());
  fu_extent dims[2] = {{0, fu_module_intern(m, "N", 1)}, {4, NULL}};
  in->results[0]->type.dtype = FU_DT_F32;
  in->results[0]->type.rank = 2;
  in->results[0]->type.dims = fu_dims_copy(m, dims, 2);
  fu_value_set_name(m, in->results[0], "T0");
  fu_block_append(&f->body, in);
  fu_op *sc = fu_op_new(f, FU_OP_INPUT, NULL, 0, 1, fu_loc_none());
  sc->results[0]->type.dtype = FU_DT_F64;
  sc->results[0]->type.rank = FU_SCALAR_RANK;
  fu_value_set_name(m, sc->results[0], "S0");
  fu_block_append(&f->body, sc);

  const char *text =
      "segment stuff before { }\n"
      "  kernel @g (%T0: global f32[N, 4] readonly noalias align=16, %x: global f32 bind=%T0, %s: f64 input=%S0)\n"
      "      grid=[N, 1, 1] block=[4, 1, 1] smem=0 index=i32 {\n"
      "  } -> and more";
  fu_source src = {"embed.fir", text, strlen(text), 1};
  captured cap;
  fu_diag_engine diag = capture_engine(&cap);
  fu_kir_parse_options opts = {f, true};
  fu_kernel *k = NULL;
  size_t start = strchr(text, '\n') - text + 1, end = 0;
  CHECK_EQ_INT(fu_kernel_parse_at(&src, start, &opts, m, &diag, &k, &end), FU_OK);
  CHECK(k != NULL);
  if (k) {
    CHECK(k->params[0]->tensor == in->results[0]);
    CHECK(k->params[1]->tensor == in->results[0]);
    CHECK(k->params[2]->scalar == sc->results[0]);
    CHECK_EQ_INT(k->params[2]->role, FU_KP_SCALAR_INPUT);
  }
  CHECK_STR(text + end, " -> and more");

  /* printing with an indent, and the bind= of a renamed parameter */
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  if (k) fu_kernel_print_indented(&sb, k, 2);
  CHECK_STR(sb.data,
            "  kernel @g (%T0: global f32[N, 4] readonly noalias align=16, %x: global f32[N, 4] align=4 bind=%T0, "
            "%s: f64 input=%S0)\n"
            "      grid=[N, 1, 1] block=[4, 1, 1] smem=0 index=i32 {\n"
            "  }\n");
  fu_strbuf_free(&sb);

  /* a shape that does not match the fusion's, and a missing value */
  const char *bad1 = "kernel @g (%T0: global f32[N, 5]) {}";
  fu_source s1 = {"bad1", bad1, strlen(bad1), 1};
  CHECK_EQ_INT(fu_kernel_parse_at(&s1, 0, &opts, m, &diag, &k, NULL), FU_ERR_PARSE);
  CHECK(strstr(cap.text, "1:27: error: shape does not match tensor '%T0'") != NULL);
  const char *bad2 = "kernel @g (%T7: global f32) {}";
  fu_source s2 = {"bad2", bad2, strlen(bad2), 1};
  CHECK_EQ_INT(fu_kernel_parse_at(&s2, 0, &opts, m, &diag, &k, NULL), FU_ERR_PARSE);
  CHECK(strstr(cap.text, "1:12: error: no tensor '%T7' in fusion '@f'") != NULL);
  const char *bad3 = "kernel @g (%T0: global f16) {}";
  fu_source s3 = {"bad3", bad3, strlen(bad3), 1};
  CHECK_EQ_INT(fu_kernel_parse_at(&s3, 0, &opts, m, &diag, &k, NULL), FU_ERR_PARSE);
  CHECK(strstr(cap.text, "parameter is f16 but tensor '%T0' is f32") != NULL);
  fu_module_free(m);
}

FU_TEST_MAIN(FU_TEST(test_build_and_print), FU_TEST(test_print_unique_names), FU_TEST(test_param_growth),
             FU_TEST(test_dynamic_arrays),
             FU_TEST(test_lexpr_eval), FU_TEST(test_verify_errors), FU_TEST(test_parse_list_and_errors),
             FU_TEST(test_parse_at_with_scope))
