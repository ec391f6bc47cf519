/* Unit tests for the LLVM backend: PTX from kernels built through the API,
 * every pointwise op on every dtype, errors as diagnostics, reuse of one
 * context, loop unrolling, and the compile time after libdevice is loaded.
 * Exits 77 (skipped) in a build without LLVM. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuser/kir.h"
#include "fuser/kir_text.h"
#include "harness.h"

#ifndef FUSER_HAS_LLVM
int main(void) {
  printf("test_backend: skipped: this build has no LLVM backend\n");
  return 77;
}
#else
#include "fuser/backend.h"

typedef struct captured {
  char text[8192];
  size_t len;
  unsigned n;
} captured;

static void capture(void *user, const fu_diagnostic *d) {
  captured *c = user;
  c->n++;
  int k = snprintf(c->text + c->len, sizeof c->text - c->len, "%s: %s\n", fu_severity_name(d->severity), d->message);
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

/* Assembles `ptx` with ptxas for `arch` when the build found ptxas;
 * true when it assembled or there is no ptxas to ask. */
static bool ptxas_accepts(const char *ptx, size_t len, const char *arch) {
#ifdef FUSER_PTXAS_PATH
  char path[] = "/tmp/fuser_test_backend_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return false;
  bool ok = write(fd, ptx, len) == (ssize_t)len;
  close(fd);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "'%s' -arch=%s '%s' -o /dev/null", FUSER_PTXAS_PATH, arch, path);
  ok = ok && system(cmd) == 0;
  unlink(path);
  return ok;
#else
  (void)ptx;
  (void)len;
  (void)arch;
  return true;
#endif
}

/* out[i] = x[i] * 2 + 1 over 4-wide vectors, i = (block * 128 + thread) * 4 */
static fu_kernel *vector_kernel(fu_module *m, const char *name, fu_op_kind extra) {
  fu_kernel *k = fu_kernel_new(m, name);
  fu_kval *x = fu_kernel_tensor_param(m, k, "x", FU_DT_F32, NULL, true, true, 16);
  fu_kval *o = fu_kernel_tensor_param(m, k, "o", FU_DT_F32, NULL, false, true, 16);
  fu_kval *n = fu_kernel_extent_param(m, k, "n", FU_DT_I32, "N");
  k->block[0] = 128;
  k->grid[0] = fu_lexpr_binary(m, FU_LX_CEIL_DIV, fu_lexpr_sym(m, "N"), fu_lexpr_const(m, 512));
  fu_kbuilder b = fu_kbuilder_at(m, k, &k->body);
  fu_kval *tid = fu_kb_special(&b, "tid", FU_SP_TID_X, FU_DT_I32);
  fu_kval *bid = fu_kb_special(&b, "bid", FU_SP_CTAID_X, FU_DT_I32);
  fu_kval *c128 = fu_kb_const_i(&b, "c128", FU_DT_I32, 128);
  fu_kval *c4 = fu_kb_const_i(&b, "c4", FU_DT_I32, 4);
  fu_kval *two = fu_kb_const_f(&b, "two", FU_DT_F32, 2.0);
  fu_kval *one = fu_kb_const_f(&b, "one", FU_DT_F32, 1.0);
  fu_kval *t = fu_kb_binary(&b, "t", FU_OP_ADD, FU_DT_I32, fu_kb_binary(&b, "bb", FU_OP_MUL, FU_DT_I32, bid, c128), tid);
  fu_kval *i = fu_kb_binary(&b, "i", FU_OP_MUL, FU_DT_I32, t, c4);
  fu_kval *p = fu_kb_binary(&b, "p", FU_OP_LT, FU_DT_BOOL, i, n);
  fu_kinst *br = fu_kb_if(&b, p);
  fu_kbuilder tb = fu_kbuilder_at(m, k, &br->u.branch.then_body);
  fu_kval *xs[4], *ys[4];
  fu_kb_load(&tb, "x", x, i, 4, FU_DT_F32, xs);
  for (int l = 0; l < 4; l++) {
    fu_kval *y = fu_kb_binary(&tb, NULL, FU_OP_MUL, FU_DT_F32, xs[l], two);
    y = fu_kb_binary(&tb, NULL, FU_OP_ADD, FU_DT_F32, y, one);
    ys[l] = extra == FU_OP_COUNT ? y : fu_kb_unary(&tb, NULL, extra, FU_DT_F32, y);
  }
  fu_kb_store(&tb, o, i, ys, 4);
  return k;
}

static void test_vector_kernel_ptx(void) {
  captured cap;
  fu_diag_engine diag = capture_engine(&cap);
  fu_backend *be = NULL;
  CHECK_EQ_INT(fu_backend_new(NULL, fu_default_allocator(), &diag, &be), FU_OK);
  fu_module *m = fu_module_new(fu_default_allocator());
  const fu_kernel *k = vector_kernel(m, "vadd", FU_OP_COUNT);
  fu_strbuf ptx;
  fu_strbuf_init(&ptx, fu_default_allocator());
  CHECK_EQ_INT(fu_backend_emit_ptx(be, &k, 1, "sm_80", &ptx), FU_OK);
  CHECK_STR(cap.text, "");
  CHECK(ptx.data && strstr(ptx.data, ".target sm_80") != NULL);
  CHECK(ptx.data && strstr(ptx.data, ".visible .entry vadd(") != NULL);
  CHECK(ptx.data && strstr(ptx.data, "ld.global.nc.v4.f32") != NULL);
  CHECK(ptx.data && strstr(ptx.data, "st.global.v4.f32") != NULL);
  CHECK(ptx.data && strstr(ptx.data, ".maxntid 128, 1, 1") != NULL);
  CHECK(ptxas_accepts(ptx.data, ptx.len, "sm_80"));

  /* the same context again, for another sm, then the first again: same bytes */
  fu_strbuf ptx90, again;
  fu_strbuf_init(&ptx90, fu_default_allocator());
  fu_strbuf_init(&again, fu_default_allocator());
  CHECK_EQ_INT(fu_backend_emit_ptx(be, &k, 1, "sm_90", &ptx90), FU_OK);
  CHECK(ptx90.data && strstr(ptx90.data, ".target sm_90") != NULL);
  CHECK(ptxas_accepts(ptx90.data, ptx90.len, "sm_90"));
  CHECK_EQ_INT(fu_backend_emit_ptx(be, &k, 1, "sm_80", &again), FU_OK);
  CHECK_STR(again.data, ptx.data);
  fu_strbuf_free(&ptx);
  fu_strbuf_free(&ptx90);
  fu_strbuf_free(&again);
  fu_module_free(m);
  fu_backend_free(be);
}

static void test_errors(void) {
  captured cap;
  fu_diag_engine diag = capture_engine(&cap);
  fu_backend *be = NULL;
  fu_backend_options bad_sm = {0};
  bad_sm.default_sm = "sm_100";
  CHECK_EQ_INT(fu_backend_new(&bad_sm, fu_default_allocator(), &diag, &be), FU_ERR_INVALID_ARG);
  CHECK(be == NULL);
  CHECK(strstr(cap.text, "unknown GPU architecture 'sm_100'") != NULL);
  CHECK(!fu_backend_sm_supported("sm_100"));
  CHECK(fu_backend_sm_supported("sm_90a"));

  cap = (captured){0};
  fu_backend_options opts = {0};
  opts.libdevice_path = "/nonexistent/libdevice.10.bc";
  CHECK_EQ_INT(fu_backend_new(&opts, fu_default_allocator(), &diag, &be), FU_OK);
  CHECK_STR(fu_backend_libdevice_path(be), "/nonexistent/libdevice.10.bc");
  fu_module *m = fu_module_new(fu_default_allocator());
  const fu_kernel *with_erf = vector_kernel(m, "witherf", FU_OP_ERF);
  const fu_kernel *plain = vector_kernel(m, "plain", FU_OP_COUNT);
  fu_strbuf out;
  fu_strbuf_init(&out, fu_default_allocator());
  CHECK(fu_backend_emit_ptx(be, &with_erf, 1, "sm_90", &out) != FU_OK);
  CHECK(strstr(cap.text, "libdevice not found at '/nonexistent/libdevice.10.bc'") != NULL);
  /* a kernel that needs no libdevice still compiles in the same context */
  fu_strbuf_clear(&out);
  CHECK_EQ_INT(fu_backend_emit_ptx(be, &plain, 1, "sm_90", &out), FU_OK);
  CHECK(out.data && strstr(out.data, ".entry plain(") != NULL);
  CHECK_EQ_INT(fu_backend_load_libdevice(be), FU_ERR_IO);

  /* an unknown sm for one call, and a kernel that does not verify */
  cap = (captured){0};
  fu_strbuf_clear(&out);
  CHECK_EQ_INT(fu_backend_emit_ptx(be, &plain, 1, "sm_75x", &out), FU_ERR_INVALID_ARG);
  CHECK(strstr(cap.text, "unknown GPU architecture 'sm_75x'") != NULL);
  fu_kernel *broken = vector_kernel(m, "broken", FU_OP_COUNT);
  broken->block[0] = 2048;
  cap = (captured){0};
  const fu_kernel *cb = broken;
  CHECK_EQ_INT(fu_backend_emit_llvm(be, &cb, 1, &out), FU_ERR_VERIFY);
  CHECK(strstr(cap.text, "has more than 1024 threads") != NULL);
  /* two kernels of one name */
  cap = (captured){0};
  const fu_kernel *two[2] = {plain, plain};
  CHECK_EQ_INT(fu_backend_emit_llvm(be, two, 2, &out), FU_ERR_INVALID_ARG);
  CHECK(strstr(cap.text, "two kernels are named '@plain'") != NULL);
  fu_strbuf_free(&out);
  fu_module_free(m);
  fu_backend_free(be);
}

/* With llvm_before_opt the copies are visible: only the libdevice function
 * the kernel calls is there; after the pipeline none is left. */
static void test_libdevice_copies(void) {
  captured cap;
  fu_diag_engine diag = capture_engine(&cap);
  fu_backend_options opts = {0};
  opts.llvm_before_opt = true;
  fu_backend *raw = NULL, *opt = NULL;
  CHECK_EQ_INT(fu_backend_new(&opts, fu_default_allocator(), &diag, &raw), FU_OK);
  CHECK_EQ_INT(fu_backend_new(NULL, fu_default_allocator(), &diag, &opt), FU_OK);
  fu_module *m = fu_module_new(fu_default_allocator());
  const fu_kernel *k = vector_kernel(m, "tanhk", FU_OP_TANH);
  fu_strbuf a, b;
  fu_strbuf_init(&a, fu_default_allocator());
  fu_strbuf_init(&b, fu_default_allocator());
  CHECK_EQ_INT(fu_backend_emit_llvm(raw, &k, 1, &a), FU_OK);
  CHECK_EQ_INT(fu_backend_emit_llvm(opt, &k, 1, &b), FU_OK);
  int defines = 0;
  for (const char *p = a.data; p && (p = strstr(p, "\ndefine ")); p++) defines++;
  CHECK_EQ_INT(defines, 2);
  CHECK(a.data && strstr(a.data, "define internal float @__nv_tanhf(") != NULL);
  CHECK(a.data && strstr(a.data, "__nvvm_reflect") == NULL);
  CHECK(b.data && strstr(b.data, "@__nv_") == NULL);
  CHECK(b.data && strstr(b.data, "define ptx_kernel void @tanhk(") != NULL);
  CHECK_STR(cap.text, "");
  fu_strbuf_free(&a);
  fu_strbuf_free(&b);
  fu_module_free(m);
  fu_backend_free(raw);
  fu_backend_free(opt);
}

/* An unroll loop of 4 constant trips is copied out by default, and left a
 * loop with unroll metadata when max_self_unroll is below its trip count. */
static void test_unroll(void) {
  captured cap;
  fu_diag_engine diag = capture_engine(&cap);
  fu_module *m = fu_module_new(fu_default_allocator());
  fu_kernel *k = fu_kernel_new(m, "unrolled");
  fu_kval *o = fu_kernel_tensor_param(m, k, "o", FU_DT_I32, NULL, false, true, 4);
  fu_kbuilder b = fu_kbuilder_at(m, k, &k->body);
  fu_kval *c0 = fu_kb_const_i(&b, "c0", FU_DT_I32, 0);
  fu_kval *c1 = fu_kb_const_i(&b, "c1", FU_DT_I32, 1);
  fu_kval *c4 = fu_kb_const_i(&b, "c4", FU_DT_I32, 4);
  fu_kinst *loop = fu_kb_for(&b, "u", c0, c4, c1, FU_LOOP_UNROLL);
  fu_kbuilder lb = fu_kbuilder_at(m, k, &loop->u.loop.body);
  fu_kval *sq = fu_kb_binary(&lb, "sq", FU_OP_MUL, FU_DT_I32, loop->results[0], loop->results[0]);
  fu_kb_store(&lb, o, loop->results[0], &sq, 1);
  const fu_kernel *ck = k;

  fu_backend_options opts = {0};
  opts.llvm_before_opt = true;
  fu_backend *be = NULL;
  CHECK_EQ_INT(fu_backend_new(&opts, fu_default_allocator(), &diag, &be), FU_OK);
  fu_strbuf out;
  fu_strbuf_init(&out, fu_default_allocator());
  CHECK_EQ_INT(fu_backend_emit_llvm(be, &ck, 1, &out), FU_OK);
  CHECK(out.data && strstr(out.data, "phi") == NULL);
  CHECK(out.data && strstr(out.data, "store i32 9, ptr addrspace(1)") != NULL); /* 3 * 3, folded */
  fu_backend_free(be);

  opts.max_self_unroll = 2;
  CHECK_EQ_INT(fu_backend_new(&opts, fu_default_allocator(), &diag, &be), FU_OK);
  fu_strbuf_clear(&out);
  CHECK_EQ_INT(fu_backend_emit_llvm(be, &ck, 1, &out), FU_OK);
  CHECK(out.data && strstr(out.data, "%u = phi i32") != NULL);
  CHECK(out.data && strstr(out.data, "!\"llvm.loop.unroll.full\"") != NULL);
  fu_backend_free(be);
  /* and the optimizer then unrolls it */
  opts.llvm_before_opt = false;
  CHECK_EQ_INT(fu_backend_new(&opts, fu_default_allocator(), &diag, &be), FU_OK);
  fu_strbuf_clear(&out);
  CHECK_EQ_INT(fu_backend_emit_llvm(be, &ck, 1, &out), FU_OK);
  CHECK(out.data && strstr(out.data, "phi") == NULL);
  CHECK_STR(cap.text, "");
  fu_strbuf_free(&out);
  fu_backend_free(be);
  fu_module_free(m);
}

static const fu_dtype all_dtypes[] = {FU_DT_F64, FU_DT_F32, FU_DT_F16, FU_DT_BF16, FU_DT_I64, FU_DT_I32, FU_DT_BOOL};

/* One kernel per result dtype holding every pointwise op the verifier
 * accepts for it (operands of the same dtype; f32 operands for the bool
 * ops), stored to memory of that dtype; every one must compile and
 * assemble.  A separate kernel casts each dtype to each other. */
static void test_every_op_every_dtype(void) {
  captured cap;
  fu_diag_engine diag = capture_engine(&cap);
  fu_backend *be = NULL;
  CHECK_EQ_INT(fu_backend_new(NULL, fu_default_allocator(), &diag, &be), FU_OK);
  fu_module *m = fu_module_new(fu_default_allocator());
  unsigned accepted = 0, rejected = 0;
  for (size_t d = 0; d < sizeof all_dtypes / sizeof all_dtypes[0]; d++) {
    fu_dtype R = all_dtypes[d];
    char name[32];
    snprintf(name, sizeof name, "all_%s", fu_dtype_name(R));
    fu_kernel *k = fu_kernel_new(m, name);
    fu_kval *in = fu_kernel_tensor_param(m, k, "in", R, NULL, true, true, 16);
    fu_kval *inf = fu_kernel_tensor_param(m, k, "inf", FU_DT_F32, NULL, true, true, 16);
    fu_kval *out = fu_kernel_tensor_param(m, k, "out", R, NULL, false, true, 16);
    fu_kbuilder b = fu_kbuilder_at(m, k, &k->body);
    fu_kval *tid = fu_kb_special(&b, "tid", FU_SP_TID_X, FU_DT_I32);
    fu_kval *x, *f, *cond;
    fu_kb_load(&b, "x", in, tid, 1, R, &x);
    fu_kb_load(&b, "f", inf, tid, 1, FU_DT_F32, &f);
    cond = fu_kb_binary(&b, "cond", FU_OP_GT, FU_DT_BOOL, f, f);
    int slot = 0;
    for (int op = 0; op < FU_OP_COUNT; op++) {
      if (!fu_op_has((fu_op_kind)op, FU_OF_POINTWISE)) continue;
      int nops = fu_op_info_of((fu_op_kind)op)->num_operands;
      fu_kval *args[3];
      for (int a = 0; a < nops; a++) args[a] = fu_op_has((fu_op_kind)op, FU_OF_BOOL_RESULT) ? f : x;
      if (op == FU_OP_WHERE) args[0] = cond;
      /* try the op alone first: the verifier decides what is accepted */
      fu_kblock saved = k->body;
      fu_kinst *last = k->body.last;
      fu_kval *r = fu_kb_math(&b, NULL, (fu_op_kind)op, R, args, (uint32_t)nops);
      captured pc;
      fu_diag_engine pd = capture_engine(&pc);
      if (fu_kernel_verify(k, &pd, NULL) != FU_OK) {
        /* drop the rejected op again */
        k->body = saved;
        if (last) last->next = NULL;
        rejected++;
        bool expect_reject = fu_op_has((fu_op_kind)op, FU_OF_FLOAT_RESULT) || fu_op_has((fu_op_kind)op, FU_OF_INT_ONLY) ||
                             fu_op_has((fu_op_kind)op, FU_OF_BOOL_RESULT) || op == FU_OP_LERP ||
                             R == FU_DT_BOOL;
        if (!expect_reject) fprintf(stderr, "unexpected reject of %s on %s:\n%s", fu_op_info_of((fu_op_kind)op)->name,
                                    fu_dtype_name(R), pc.text);
        CHECK(expect_reject);
        continue;
      }
      accepted++;
      fu_kval *c = fu_kb_const_i(&b, NULL, FU_DT_I32, slot++);
      fu_kval *idx = fu_kb_binary(&b, NULL, FU_OP_ADD, FU_DT_I32, tid, c);
      fu_kb_store(&b, out, idx, &r, 1);
    }
    const fu_kernel *ck = k;
    fu_strbuf ptx;
    fu_strbuf_init(&ptx, fu_default_allocator());
    fu_status st = fu_backend_emit_ptx(be, &ck, 1, "sm_80", &ptx);
    CHECK_EQ_INT(st, FU_OK);
    if (st != FU_OK) fprintf(stderr, "%s: %s", name, cap.text);
    CHECK(ptxas_accepts(ptx.data, ptx.len, "sm_80"));
    fu_strbuf_clear(&ptx);
    CHECK_EQ_INT(fu_backend_emit_ptx(be, &ck, 1, "sm_90", &ptx), FU_OK);
    CHECK(ptxas_accepts(ptx.data, ptx.len, "sm_90"));
    fu_strbuf_free(&ptx);
  }
  CHECK(accepted > 250);
  CHECK(rejected > 50);

  /* every cast */
  fu_kernel *k = fu_kernel_new(m, "casts");
  fu_kval *ins[7], *outs[7];
  for (int i = 0; i < 7; i++) {
    char nm[16];
    snprintf(nm, sizeof nm, "in_%s", fu_dtype_name(all_dtypes[i]));
    ins[i] = fu_kernel_tensor_param(m, k, nm, all_dtypes[i], NULL, true, true, 8);
    snprintf(nm, sizeof nm, "out_%s", fu_dtype_name(all_dtypes[i]));
    outs[i] = fu_kernel_tensor_param(m, k, nm, all_dtypes[i], NULL, false, true, 8);
  }
  fu_kbuilder b = fu_kbuilder_at(m, k, &k->body);
  fu_kval *tid = fu_kb_special(&b, "tid", FU_SP_TID_X, FU_DT_I64);
  for (int i = 0; i < 7; i++) {
    fu_kval *x;
    fu_kb_load(&b, NULL, ins[i], tid, 1, all_dtypes[i], &x);
    for (int j = 0; j < 7; j++) {
      fu_kval *y = fu_kb_unary(&b, NULL, FU_OP_CAST, all_dtypes[j], x);
      fu_kval *c = fu_kb_const_i(&b, NULL, FU_DT_I64, i);
      fu_kval *idx = fu_kb_binary(&b, NULL, FU_OP_ADD, FU_DT_I64, tid, c);
      fu_kb_store(&b, outs[j], idx, &y, 1);
    }
  }
  const fu_kernel *ck = k;
  fu_strbuf ptx;
  fu_strbuf_init(&ptx, fu_default_allocator());
  CHECK_EQ_INT(fu_backend_emit_ptx(be, &ck, 1, "sm_80", &ptx), FU_OK);
  CHECK(ptxas_accepts(ptx.data, ptx.len, "sm_80"));
  fu_strbuf_free(&ptx);
  fu_module_free(m);
  fu_backend_free(be);
}

/* Compile time of a seed-sized kernel (the gelu of seed 001: one 16-byte
 * vector, four erf) once libdevice is loaded.  The target is well under 20
 * ms; the bound here is looser so a loaded test machine does not fail it. */
static void test_compile_time(void) {
  captured cap;
  fu_diag_engine diag = capture_engine(&cap);
  fu_backend *be = NULL;
  CHECK_EQ_INT(fu_backend_new(NULL, fu_default_allocator(), &diag, &be), FU_OK);
  CHECK_EQ_INT(fu_backend_load_libdevice(be), FU_OK);
  fu_module *m = fu_module_new(fu_default_allocator());
  const fu_kernel *k = vector_kernel(m, "gelu_like", FU_OP_ERF);
  fu_strbuf ptx;
  fu_strbuf_init(&ptx, fu_default_allocator());
  double best = 1e9;
  for (int r = 0; r < 5; r++) {
    fu_strbuf_clear(&ptx);
    CHECK_EQ_INT(fu_backend_emit_ptx(be, &k, 1, "sm_90", &ptx), FU_OK);
    fu_backend_timing t;
    fu_backend_last_timing(be, &t);
    /* the first compile reads __nv_erff's body; later ones read nothing */
    if (r > 0) CHECK(t.libdevice_load_ms == 0.0);
    if (t.cpu_ms < best) best = t.cpu_ms;
  }
  printf("compile time of a gelu kernel to PTX: best of 5 = %.2f ms CPU\n", best);
  CHECK(best < 60.0);
  fu_strbuf_free(&ptx);
  fu_module_free(m);
  fu_backend_free(be);
}

/* out[i] = erf(x) + tanh(x) + exp(x) + pow(x, y) for one element per
 * thread, in dtype `t` (f32: the __nv_*f functions, f64: __nv_*). */
static fu_kernel *transcendental_kernel(fu_module *m, const char *name, fu_dtype t) {
  fu_kernel *k = fu_kernel_new(m, name);
  fu_kval *x = fu_kernel_tensor_param(m, k, "x", t, NULL, true, true, 8);
  fu_kval *y = fu_kernel_tensor_param(m, k, "y", t, NULL, true, true, 8);
  fu_kval *o = fu_kernel_tensor_param(m, k, "o", t, NULL, false, true, 8);
  k->block[0] = 128;
  fu_kbuilder b = fu_kbuilder_at(m, k, &k->body);
  fu_kval *tid = fu_kb_special(&b, "tid", FU_SP_TID_X, FU_DT_I32);
  fu_kval *xv, *yv;
  fu_kb_load(&b, "xv", x, tid, 1, t, &xv);
  fu_kb_load(&b, "yv", y, tid, 1, t, &yv);
  fu_kval *r = fu_kb_unary(&b, "e", FU_OP_ERF, t, xv);
  r = fu_kb_binary(&b, NULL, FU_OP_ADD, t, r, fu_kb_unary(&b, "th", FU_OP_TANH, t, xv));
  r = fu_kb_binary(&b, NULL, FU_OP_ADD, t, r, fu_kb_unary(&b, "ex", FU_OP_EXP, t, xv));
  r = fu_kb_binary(&b, NULL, FU_OP_ADD, t, r, fu_kb_binary(&b, "pw", FU_OP_POW, t, xv, yv));
  fu_kb_store(&b, o, tid, &r, 1);
  return k;
}

/* PTX text without its `//` comments: NVPTX numbers call sequences in
 * comments with a counter that runs across every compile of the process. */
static bool same_ptx_code(const char *a, const char *b) {
  if (!a || !b) return false;
  for (;;) {
    if (a[0] == '/' && a[1] == '/')
      while (*a && *a != '\n') a++;
    if (b[0] == '/' && b[1] == '/')
      while (*b && *b != '\n') b++;
    if (*a != *b) return false;
    if (!*a) return true;
    a++;
    b++;
  }
}

/* Conditional branches in PTX: lines with a predicate guard and `bra`
 * (unconditional `bra.uni` jumps between blocks do not count). */
static int count_cond_branches(const char *ptx) {
  int n = 0;
  for (const char *line = ptx; line && *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    const char *at = memchr(line, '@', len);
    if (at) {
      for (const char *q = at; q + 3 <= line + len; q++)
        if (memcmp(q, "bra", 3) == 0 && (q + 3 == line + len || q[3] != '.')) {
          n++;
          break;
        }
    }
    line = end ? end + 1 : NULL;
  }
  return n;
}

static int count_defines(const char *ir) {
  int n = 0;
  for (const char *p = ir; p && (p = strstr(p, "\ndefine ")); p++) n++;
  return n;
}

/* libdevice read lazily (the default) gives the same LLVM IR (the libdevice
 * copies before optimization) and the same PTX as libdevice parsed whole,
 * for kernels calling erf, tanh, exp and pow in f32 and f64; and reading is
 * paid once: a second compile of the same kernels reads nothing, a kernel
 * calling a new function reads just that. */
static void test_lazy_libdevice_same_ptx(void) {
  captured cap;
  fu_diag_engine diag = capture_engine(&cap);
  fu_module *m = fu_module_new(fu_default_allocator());
  const fu_kernel *ks[2] = {transcendental_kernel(m, "trans_f32", FU_DT_F32),
                            transcendental_kernel(m, "trans_f64", FU_DT_F64)};
  fu_backend_options whole_opts = {0}, lazy_raw_opts = {0}, whole_raw_opts = {0};
  whole_opts.libdevice_whole = true;
  lazy_raw_opts.llvm_before_opt = true;
  whole_raw_opts.llvm_before_opt = true;
  whole_raw_opts.libdevice_whole = true;
  fu_backend *lazy = NULL, *whole = NULL, *lazy_raw = NULL, *whole_raw = NULL;
  CHECK_EQ_INT(fu_backend_new(NULL, fu_default_allocator(), &diag, &lazy), FU_OK);
  CHECK_EQ_INT(fu_backend_new(&whole_opts, fu_default_allocator(), &diag, &whole), FU_OK);
  CHECK_EQ_INT(fu_backend_new(&lazy_raw_opts, fu_default_allocator(), &diag, &lazy_raw), FU_OK);
  CHECK_EQ_INT(fu_backend_new(&whole_raw_opts, fu_default_allocator(), &diag, &whole_raw), FU_OK);
  fu_strbuf a, b;
  fu_strbuf_init(&a, fu_default_allocator());
  fu_strbuf_init(&b, fu_default_allocator());

  /* the copies, before optimization: the same functions, instruction for instruction */
  CHECK_EQ_INT(fu_backend_emit_llvm(lazy_raw, ks, 2, &a), FU_OK);
  CHECK_EQ_INT(fu_backend_emit_llvm(whole_raw, ks, 2, &b), FU_OK);
  CHECK_STR(a.data, b.data);
  CHECK(a.data && strstr(a.data, "define internal float @__nv_erff(") != NULL);
  CHECK(a.data && strstr(a.data, "define internal float @__nv_tanhf(") != NULL);
  /* f32 exp takes the fast path (fast_math.c), f64 exp libdevice's */
  CHECK(a.data && strstr(a.data, "define internal float @__nv_expf(") == NULL);
  CHECK(a.data && strstr(a.data, "@llvm.nvvm.ex2.approx.ftz.f(") != NULL);
  CHECK(a.data && strstr(a.data, "define internal double @__nv_exp(") != NULL);
  CHECK(a.data && strstr(a.data, "define internal float @__nv_powf(") != NULL);
  CHECK(a.data && strstr(a.data, "define internal double @__nv_erf(") != NULL);
  CHECK(a.data && strstr(a.data, "define internal double @__nv_pow(") != NULL);
  /* the two kernels and what they call, not all of libdevice */
  int defines = count_defines(a.data);
  CHECK(defines >= 10 && defines < 40);

  /* the PTX, for two targets, twice from the same contexts */
  const char *sms[3] = {"sm_90", "sm_80", "sm_90"};
  for (int i = 0; i < 3; i++) {
    fu_strbuf_clear(&a);
    fu_strbuf_clear(&b);
    CHECK_EQ_INT(fu_backend_emit_ptx(lazy, ks, 2, sms[i], &a), FU_OK);
    fu_backend_timing t;
    fu_backend_last_timing(lazy, &t);
    if (i == 0) CHECK(t.libdevice_load_ms > 0.0); /* opened, bodies read */
    else CHECK(t.libdevice_load_ms == 0.0);       /* all read already */
    CHECK_EQ_INT(fu_backend_emit_ptx(whole, ks, 2, sms[i], &b), FU_OK);
    CHECK(same_ptx_code(a.data, b.data));
    CHECK(a.data && strstr(a.data, ".entry trans_f32(") != NULL);
    CHECK(a.data && strstr(a.data, ".entry trans_f64(") != NULL);
    /* the __nv_ entry points are inlined (f64 pow keeps a helper it calls) */
    CHECK(a.data && strstr(a.data, "__nv_") == NULL);
    CHECK(ptxas_accepts(a.data, a.len, sms[i]));
  }
  /* a kernel calling a function not read yet: only its body is read */
  const fu_kernel *sq = vector_kernel(m, "with_sinh", FU_OP_SINH);
  fu_strbuf_clear(&a);
  fu_strbuf_clear(&b);
  CHECK_EQ_INT(fu_backend_emit_ptx(lazy, &sq, 1, "sm_90", &a), FU_OK);
  fu_backend_timing t;
  fu_backend_last_timing(lazy, &t);
  CHECK(t.libdevice_load_ms > 0.0);
  CHECK_EQ_INT(fu_backend_emit_ptx(whole, &sq, 1, "sm_90", &b), FU_OK);
  CHECK(same_ptx_code(a.data, b.data));
  CHECK_STR(cap.text, "");
  fu_strbuf_free(&a);
  fu_strbuf_free(&b);
  fu_module_free(m);
  fu_backend_free(lazy);
  fu_backend_free(whole);
  fu_backend_free(lazy_raw);
  fu_backend_free(whole_raw);
}

/* The default pipeline (fuser's own, lib/target/llvm/context.c) against LLVM's
 * default<O3>, on libdevice calls, 16-byte vectors, loops (unrolled by the
 * backend, by LLVM, and a dynamic one) and every pointwise op on f32: both
 * assemble, the default leaves no calls, keeps the vectors, unrolls the
 * constant loop, and never has more branches than O3 (simplifycfg before
 * instcombine keeps tanh's two paths as selects). */
static void test_default_pipeline(void) {
  captured cap;
  fu_diag_engine diag = capture_engine(&cap);
  fu_backend_options o3_opts = {0};
  o3_opts.pipeline = "default<O3>";
  fu_backend *dflt = NULL, *o3 = NULL;
  CHECK_EQ_INT(fu_backend_new(NULL, fu_default_allocator(), &diag, &dflt), FU_OK);
  CHECK_EQ_INT(fu_backend_new(&o3_opts, fu_default_allocator(), &diag, &o3), FU_OK);
  fu_module *m = fu_module_new(fu_default_allocator());

  fu_kernel *ks[5];
  ks[0] = transcendental_kernel(m, "trans32", FU_DT_F32);
  ks[1] = vector_kernel(m, "gelu_like", FU_OP_ERF);
  ks[2] = vector_kernel(m, "tanh_like", FU_OP_TANH);
  /* a serial loop of constant trip count (LLVM unrolls it), and an unroll
   * loop of unknown trip count (LLVM unrolls it by a runtime factor) */
  for (int j = 0; j < 2; j++) {
    fu_kernel *k = fu_kernel_new(m, j ? "dyn_loop" : "const_loop");
    fu_kval *in = fu_kernel_tensor_param(m, k, "in", FU_DT_F64, NULL, true, true, 8);
    fu_kval *out = fu_kernel_tensor_param(m, k, "out", FU_DT_F64, NULL, false, true, 8);
    fu_kval *n = fu_kernel_extent_param(m, k, "n", FU_DT_I64, "N");
    fu_kbuilder b = fu_kbuilder_at(m, k, &k->body);
    fu_kval *c0 = fu_kb_const_i(&b, "c0", FU_DT_I64, 0);
    fu_kval *c1 = fu_kb_const_i(&b, "c1", FU_DT_I64, 1);
    fu_kval *end = j ? n : fu_kb_const_i(&b, "c6", FU_DT_I64, 6);
    fu_kinst *loop = fu_kb_for(&b, "u", c0, end, c1, j ? FU_LOOP_UNROLL : FU_LOOP_SERIAL);
    fu_kbuilder lb = fu_kbuilder_at(m, k, &loop->u.loop.body);
    fu_kval *x;
    fu_kb_load(&lb, "x", in, loop->results[0], 1, FU_DT_F64, &x);
    fu_kval *y = fu_kb_unary(&lb, "y", FU_OP_SQRT, FU_DT_F64, x);
    fu_kb_store(&lb, out, loop->results[0], &y, 1);
    ks[3 + j] = k;
  }
  fu_strbuf a, b;
  fu_strbuf_init(&a, fu_default_allocator());
  fu_strbuf_init(&b, fu_default_allocator());
  for (int i = 0; i < 5; i++) {
    const fu_kernel *k = ks[i];
    fu_strbuf_clear(&a);
    fu_strbuf_clear(&b);
    CHECK_EQ_INT(fu_backend_emit_ptx(dflt, &k, 1, "sm_90", &a), FU_OK);
    CHECK_EQ_INT(fu_backend_emit_ptx(o3, &k, 1, "sm_90", &b), FU_OK);
    CHECK(ptxas_accepts(a.data, a.len, "sm_90"));
    CHECK(ptxas_accepts(b.data, b.len, "sm_90"));
    CHECK(a.data && strstr(a.data, "call") == NULL);
    CHECK(count_cond_branches(a.data) <= count_cond_branches(b.data));
  }
  /* tanh: the bounds guard is the only branch left; the constant loop: unrolled */
  for (int i = 2; i <= 3; i++) {
    const fu_kernel *k = ks[i];
    fu_strbuf_clear(&a);
    CHECK_EQ_INT(fu_backend_emit_ptx(dflt, &k, 1, "sm_90", &a), FU_OK);
    CHECK_EQ_INT(count_cond_branches(a.data), i == 2 ? 1 : 0);
  }
  /* the gelu kernel keeps its 16-byte vector accesses */
  const fu_kernel *g = ks[1];
  fu_strbuf_clear(&a);
  CHECK_EQ_INT(fu_backend_emit_ptx(dflt, &g, 1, "sm_90", &a), FU_OK);
  CHECK(a.data && strstr(a.data, "ld.global.nc.v4.f32") != NULL);
  CHECK(a.data && strstr(a.data, "st.global.v4.f32") != NULL);
  CHECK_STR(cap.text, "");
  fu_strbuf_free(&a);
  fu_strbuf_free(&b);
  fu_module_free(m);
  fu_backend_free(dflt);
  fu_backend_free(o3);
}

/* Every float op of the op table, f32 and f64, compiles from the default
 * libdevice without a warning: with the build's libdevice subset, a
 * function missing from the subset's list in cmake/optional-deps.cmake
 * would make the backend warn and read the whole libdevice. */
static void test_libdevice_subset_covers_math(void) {
  captured cap;
  fu_diag_engine diag = capture_engine(&cap);
  fu_backend *be = NULL;
  CHECK_EQ_INT(fu_backend_new(NULL, fu_default_allocator(), &diag, &be), FU_OK);
  if (!be) return;
  char first[512];
  snprintf(first, sizeof first, "%s", fu_backend_libdevice_path(be));
  fu_module *m = fu_module_new(fu_default_allocator());
  const fu_dtype ts[2] = {FU_DT_F32, FU_DT_F64};
  int n_ops = 0;
  for (int ti = 0; ti < 2; ti++) {
    fu_dtype t = ts[ti];
    fu_kernel *k = fu_kernel_new(m, ti ? "all_f64" : "all_f32");
    fu_kval *x = fu_kernel_tensor_param(m, k, "x", t, NULL, true, true, 8);
    fu_kval *o = fu_kernel_tensor_param(m, k, "o", t, NULL, false, true, 8);
    k->block[0] = 128;
    fu_kbuilder b = fu_kbuilder_at(m, k, &k->body);
    fu_kval *tid = fu_kb_special(&b, "tid", FU_SP_TID_X, FU_DT_I32);
    fu_kval *xv;
    fu_kb_load(&b, "xv", x, tid, 1, t, &xv);
    fu_kval *acc = xv;
    for (int op = 0; op < FU_OP_COUNT; op++) {
      const fu_op_info *info = fu_op_info_of((fu_op_kind)op);
      if (!(info->flags & FU_OF_POINTWISE)) continue;
      fu_kval *r = NULL;
      bool rounding = op == FU_OP_FLOOR || op == FU_OP_CEIL || op == FU_OP_ROUND || op == FU_OP_TRUNC;
      if (info->cls == FU_OC_UNARY && ((info->flags & FU_OF_FLOAT_RESULT) || rounding))
        r = fu_kb_unary(&b, NULL, (fu_op_kind)op, t, xv);
      else if (op == FU_OP_POW || op == FU_OP_FMOD || op == FU_OP_REMAINDER || op == FU_OP_ATAN2)
        r = fu_kb_binary(&b, NULL, (fu_op_kind)op, t, xv, acc);
      if (!r || r->dtype != t) continue;
      acc = fu_kb_binary(&b, NULL, FU_OP_ADD, t, acc, r);
      n_ops++;
    }
    fu_kb_store(&b, o, tid, &acc, 1);
    const fu_kernel *ck = k;
    fu_strbuf out;
    fu_strbuf_init(&out, fu_default_allocator());
    CHECK_EQ_INT(fu_backend_emit_ptx(be, &ck, 1, "sm_90", &out), FU_OK);
    CHECK(out.data && strstr(out.data, "__nv_") == NULL);
    fu_strbuf_free(&out);
  }
  CHECK(n_ops >= 2 * 25); /* exp ... trunc, pow, fmod, remainder, atan2 */
  CHECK_STR(fu_backend_libdevice_path(be), first);
  CHECK_STR(cap.text, "");
  fu_module_free(m);
  fu_backend_free(be);
}

/* A libdevice file that is not bitcode, or is cut short, is refused with a
 * diagnostic when it is opened (lazily, the symbol table at its end must be
 * read), and the context still compiles kernels that need no libdevice. */
static void test_bad_libdevice(void) {
  const char *real = NULL;
  {
    fu_diag_engine d0;
    captured c0;
    d0 = capture_engine(&c0);
    fu_backend *probe = NULL;
    CHECK_EQ_INT(fu_backend_new(NULL, fu_default_allocator(), &d0, &probe), FU_OK);
    static char path[512];
    snprintf(path, sizeof path, "%s", fu_backend_libdevice_path(probe));
    real = path;
    fu_backend_free(probe);
  }
  FILE *f = fopen(real, "rb");
  CHECK(f != NULL);
  if (!f) return;
  static char data[1 << 20];
  size_t n = fread(data, 1, sizeof data, f);
  fclose(f);
  CHECK(n > 10000); /* libdevice, or the build's subset of it */
  char cut[] = "/tmp/fuser_test_libdevice_XXXXXX";
  int fd = mkstemp(cut);
  CHECK(fd >= 0);
  if (fd < 0) return;
  bool ok = write(fd, data, n / 2) == (ssize_t)(n / 2);
  close(fd);
  CHECK(ok);
  char junk[] = "/tmp/fuser_test_libdevice_XXXXXX";
  fd = mkstemp(junk);
  CHECK(fd >= 0);
  if (fd < 0) {
    unlink(cut);
    return;
  }
  ok = write(fd, "not bitcode\n", 12) == 12;
  close(fd);
  CHECK(ok);
  const char *paths[2] = {cut, junk};
  fu_module *m = fu_module_new(fu_default_allocator());
  const fu_kernel *with_log = vector_kernel(m, "withlog", FU_OP_LOG);
  const fu_kernel *plain = vector_kernel(m, "plain", FU_OP_COUNT);
  for (int i = 0; i < 2; i++) {
    captured cap;
    fu_diag_engine diag = capture_engine(&cap);
    fu_backend_options opts = {0};
    opts.libdevice_path = paths[i];
    fu_backend *be = NULL;
    CHECK_EQ_INT(fu_backend_new(&opts, fu_default_allocator(), &diag, &be), FU_OK);
    fu_strbuf out;
    fu_strbuf_init(&out, fu_default_allocator());
    CHECK(fu_backend_emit_ptx(be, &with_log, 1, "sm_90", &out) != FU_OK);
    CHECK(strstr(cap.text, "cannot parse libdevice") != NULL);
    CHECK_EQ_INT(fu_backend_load_libdevice(be), FU_ERR_IO);
    fu_strbuf_clear(&out);
    CHECK_EQ_INT(fu_backend_emit_ptx(be, &plain, 1, "sm_90", &out), FU_OK);
    fu_strbuf_free(&out);
    fu_backend_free(be);
  }
  fu_module_free(m);
  unlink(cut);
  unlink(junk);
}

FU_TEST_MAIN(FU_TEST(test_vector_kernel_ptx), FU_TEST(test_errors), FU_TEST(test_libdevice_copies), FU_TEST(test_unroll),
             FU_TEST(test_every_op_every_dtype), FU_TEST(test_compile_time), FU_TEST(test_lazy_libdevice_same_ptx),
             FU_TEST(test_default_pipeline), FU_TEST(test_bad_libdevice),
             FU_TEST(test_libdevice_subset_covers_math))
#endif
