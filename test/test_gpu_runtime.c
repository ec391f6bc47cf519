/* GPU tests of the CUDA runtime (label gpu): hand-written PTX loaded and
 * run through the driver API, a kernel of thread-block clusters launched
 * through cuLaunchKernelEx, a lowered fusion with a hand-built kernel
 * executed and checked against the interpreter (also with a kernel that
 * leaves an element unwritten, which the 0xFF poison must expose), a bad
 * PTX whose JIT error log must reach the message, and the benchmark.
 * Without a GPU (no driver, or cuInit fails, or no device) it prints why
 * and exits 77, which ctest reports as skipped. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#ifndef FUSER_HAS_CUDA_DRIVER
int main(void) {
  printf("no GPU: skipped (this build has no CUDA driver runtime: cuda.h was not found)\n");
  return 77;
}
#else

#include "fuser/parse.h"
#include "fuser/runtime.h"
#include "fuser/verify.h"

/* c[i] = a[i] + b[i] for i < n (n: u32). */
static const char *k_vadd_ptx =
    ".version 7.0\n"
    ".target sm_70\n"
    ".address_size 64\n"
    ".visible .entry vadd(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u32 pn)\n"
    "{\n"
    "  .reg .pred %p<2>;\n"
    "  .reg .b32 %r<6>;\n"
    "  .reg .f32 %f<4>;\n"
    "  .reg .b64 %rd<11>;\n"
    "  ld.param.u64 %rd1, [pa];\n"
    "  ld.param.u64 %rd2, [pb];\n"
    "  ld.param.u64 %rd3, [pc];\n"
    "  ld.param.u32 %r2, [pn];\n"
    "  mov.u32 %r3, %ctaid.x;\n"
    "  mov.u32 %r4, %ntid.x;\n"
    "  mov.u32 %r5, %tid.x;\n"
    "  mad.lo.s32 %r1, %r3, %r4, %r5;\n"
    "  setp.ge.u32 %p1, %r1, %r2;\n"
    "  @%p1 bra DONE;\n"
    "  cvta.to.global.u64 %rd4, %rd1;\n"
    "  cvta.to.global.u64 %rd5, %rd2;\n"
    "  cvta.to.global.u64 %rd6, %rd3;\n"
    "  mul.wide.u32 %rd7, %r1, 4;\n"
    "  add.s64 %rd8, %rd4, %rd7;\n"
    "  add.s64 %rd9, %rd5, %rd7;\n"
    "  add.s64 %rd10, %rd6, %rd7;\n"
    "  ld.global.f32 %f1, [%rd8];\n"
    "  ld.global.f32 %f2, [%rd9];\n"
    "  add.f32 %f3, %f1, %f2;\n"
    "  st.global.f32 [%rd10], %f3;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n";

/* The kernel ABI of backend.h for (in: f32*, out: f32*, s: f32, n: i64):
 * out[i] = in[i] * s for i < n - skip, where `scale` has skip = 0 and
 * `scale_skip` leaves the last element unwritten. */
#define SCALE_PTX(NAME, SKIP)                                                         \
  ".visible .entry " NAME "(.param .u64 pin, .param .u64 pout, .param .f32 ps, .param .u64 pn)\n" \
  "{\n"                                                                               \
  "  .reg .pred %p<2>;\n"                                                             \
  "  .reg .b32 %r<5>;\n"                                                              \
  "  .reg .f32 %f<4>;\n"                                                              \
  "  .reg .b64 %rd<10>;\n"                                                            \
  "  ld.param.u64 %rd1, [pin];\n"                                                     \
  "  ld.param.u64 %rd2, [pout];\n"                                                    \
  "  ld.param.f32 %f1, [ps];\n"                                                       \
  "  ld.param.u64 %rd3, [pn];\n"                                                      \
  "  sub.s64 %rd3, %rd3, " SKIP ";\n"                                                 \
  "  mov.u32 %r2, %ctaid.x;\n"                                                        \
  "  mov.u32 %r3, %ntid.x;\n"                                                         \
  "  mov.u32 %r4, %tid.x;\n"                                                          \
  "  mad.lo.s32 %r1, %r2, %r3, %r4;\n"                                                \
  "  cvt.u64.u32 %rd4, %r1;\n"                                                        \
  "  setp.ge.s64 %p1, %rd4, %rd3;\n"                                                  \
  "  @%p1 bra DONE_" NAME ";\n"                                                       \
  "  cvta.to.global.u64 %rd5, %rd1;\n"                                                \
  "  cvta.to.global.u64 %rd6, %rd2;\n"                                                \
  "  shl.b64 %rd7, %rd4, 2;\n"                                                        \
  "  add.s64 %rd8, %rd5, %rd7;\n"                                                     \
  "  add.s64 %rd9, %rd6, %rd7;\n"                                                     \
  "  ld.global.f32 %f2, [%rd8];\n"                                                    \
  "  mul.rn.f32 %f3, %f2, %f1;\n"                                                     \
  "  st.global.f32 [%rd9], %f3;\n"                                                    \
  "DONE_" NAME ":\n"                                                                  \
  "  ret;\n"                                                                          \
  "}\n"

static const char *k_scale_ptx = ".version 7.0\n.target sm_70\n.address_size 64\n" SCALE_PTX("f_g0", "0")
    SCALE_PTX("f_g0_skip", "1");

/* Thread-block clusters (sm_90): out[b] = b ^ 1 as f32, i.e. each block
 * of a cluster of 2 writes what the other block staged in its shared
 * memory.  The LLVM backend's PTX (`fuser-kir --emit=ptx`) of
 *   kernel @cluster_swap (%out: global f32 noalias align=4)
 *       grid=[8, 1, 1] block=[32, 1, 1] smem=0 cluster=2 index=i32 {
 *     thread 0 stores f32(block_idx.x) to %slot[0]; sync cluster;
 *     %y = load %slot[0] cta (1 - cluster_rank); sync cluster;
 *     thread 0 stores %y to %out[block_idx.x] }
 * It has no .reqnctapercluster: only the launch gives its cluster shape. */
static const char *k_cluster_ptx =
    ".version 7.8\n"
    ".target sm_90\n"
    ".address_size 64\n"
    ".visible .entry cluster_swap(.param .u64 pout)\n"
    ".maxntid 32, 1, 1\n"
    "{\n"
    "  .reg .pred %p<3>;\n"
    "  .reg .b32 %r<6>;\n"
    "  .reg .f32 %f<3>;\n"
    "  .reg .b64 %rd<7>;\n"
    "  .shared .align 16 .b8 slot[4];\n"
    "  mov.u32 %r1, %cluster_ctarank;\n"
    "  mov.u32 %r2, %tid.x;\n"
    "  mov.u32 %r3, %ctaid.x;\n"
    "  setp.ne.s32 %p1, %r2, 0;\n"
    "  @%p1 bra STAGED;\n"
    "  cvt.rn.f32.u32 %f1, %r3;\n"
    "  st.shared.f32 [slot], %f1;\n"
    "STAGED:\n"
    "  barrier.cluster.arrive.aligned;\n"
    "  barrier.cluster.wait.aligned;\n"
    "  mov.b32 %r4, 1;\n"
    "  sub.s32 %r5, %r4, %r1;\n"
    "  mov.u64 %rd3, slot;\n"
    "  cvta.shared.u64 %rd4, %rd3;\n"
    "  mapa.u64 %rd5, %rd4, %r5;\n"
    "  ld.f32 %f2, [%rd5];\n"
    "  barrier.cluster.arrive.aligned;\n"
    "  barrier.cluster.wait.aligned;\n"
    "  @%p1 bra DONE;\n"
    "  ld.param.u64 %rd2, [pout];\n"
    "  mul.wide.u32 %rd6, %r3, 4;\n"
    "  add.s64 %rd1, %rd2, %rd6;\n"
    "  st.global.f32 [%rd1], %f2;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n";

static const char *k_bad_ptx =
    ".version 7.0\n"
    ".target sm_70\n"
    ".address_size 64\n"
    ".visible .entry broken()\n"
    "{\n"
    "  .reg .b32 %r<2>;\n"
    "  frobnicate.u32 %r1;\n"
    "  ret;\n"
    "}\n";

typedef struct captured {
  char text[16384];
  size_t len;
  bool echo; /* also print each diagnostic (once the device is open) */
} captured;

static void capture(void *user, const fu_diagnostic *d) {
  captured *c = user;
  int n = snprintf(c->text + c->len, sizeof c->text - c->len, "%s: %s\n", fu_severity_name(d->severity), d->message);
  if (n > 0 && c->len + (size_t)n < sizeof c->text) c->len += (size_t)n;
  if (c->echo) fprintf(stderr, "  [diag] %s: %s\n", fu_severity_name(d->severity), d->message);
}

static fu_rt *g_rt;
static captured g_cap;
static fu_diag_engine g_diag;

static void test_vadd(void) {
  enum { N = 100003 }; /* not a multiple of the block */
  float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b), *c = malloc(N * sizeof *c);
  if (!a || !b || !c) {
    CHECK(false);
    free(a);
    free(b);
    free(c);
    return;
  }
  for (int i = 0; i < N; i++) {
    a[i] = (float)i * 0.5f;
    b[i] = 1.0f - (float)i;
  }
  fu_rt_module *mod = NULL;
  CHECK_EQ_INT(fu_rt_module_load(g_rt, k_vadd_ptx, strlen(k_vadd_ptx), "vadd.ptx", &mod), FU_OK);
  fu_rt_ptr da = 0, db = 0, dc = 0;
  CHECK_EQ_INT(fu_rt_mem_alloc(g_rt, N * 4, &da), FU_OK);
  CHECK_EQ_INT(fu_rt_mem_alloc(g_rt, N * 4, &db), FU_OK);
  CHECK_EQ_INT(fu_rt_mem_alloc(g_rt, N * 4, &dc), FU_OK);
  CHECK_EQ_INT(fu_rt_mem_upload(g_rt, da, a, N * 4), FU_OK);
  CHECK_EQ_INT(fu_rt_mem_upload(g_rt, db, b, N * 4), FU_OK);
  CHECK_EQ_INT(fu_rt_mem_fill(g_rt, dc, 0xFF, N * 4), FU_OK);
  fu_rt_func fn;
  if (mod && fu_rt_module_function(mod, "vadd", &fn) == FU_OK) {
    uint32_t n = N;
    void *params[4] = {&da, &db, &dc, &n};
    fu_rt_launch_config cfg = {{(N + 255) / 256, 1, 1}, {256, 1, 1}, 0, 0};
    CHECK_EQ_INT(fu_rt_launch(g_rt, &fn, &cfg, params), FU_OK);
    CHECK_EQ_INT(fu_rt_synchronize(g_rt), FU_OK);
    CHECK_EQ_INT(fu_rt_mem_download(g_rt, c, dc, N * 4), FU_OK);
    int bad = 0;
    for (int i = 0; i < N; i++)
      if (c[i] != a[i] + b[i]) bad++;
    CHECK_EQ_INT(bad, 0);
    /* A kernel the module does not have. */
    CHECK_EQ_INT(fu_rt_module_function(mod, "vsub", &fn), FU_ERR_INVALID_ARG);
    CHECK(strstr(g_cap.text, "has no kernel 'vsub'") != NULL);
  } else {
    CHECK(false); /* the module or its kernel 'vadd' did not load */
  }
  fu_rt_mem_free(g_rt, da);
  fu_rt_mem_free(g_rt, db);
  fu_rt_mem_free(g_rt, dc);
  fu_rt_module_unload(mod);
  free(a);
  free(b);
  free(c);
}

/* The cluster kernel above, in clusters of 2 (cuLaunchKernelEx with the
 * cluster dimension): every block reads the other block's shared memory.
 * A grid of 7 blocks is refused before the driver sees it. */
static void test_clusters(void) {
  if (fu_rt_device(g_rt)->cc_major < 9) {
    printf("  clusters: skipped (compute capability %d.%d has no thread-block clusters)\n", fu_rt_device(g_rt)->cc_major,
           fu_rt_device(g_rt)->cc_minor);
    return;
  }
  enum { NB = 64 };
  fu_rt_module *mod = NULL;
  CHECK_EQ_INT(fu_rt_module_load(g_rt, k_cluster_ptx, strlen(k_cluster_ptx), "cluster.ptx", &mod), FU_OK);
  fu_rt_func fn;
  if (!mod || fu_rt_module_function(mod, "cluster_swap", &fn) != FU_OK) {
    CHECK(false);
    fu_rt_module_unload(mod);
    return;
  }
  fu_rt_ptr dout = 0;
  CHECK_EQ_INT(fu_rt_mem_alloc(g_rt, NB * 4, &dout), FU_OK);
  CHECK_EQ_INT(fu_rt_mem_fill(g_rt, dout, 0xFF, NB * 4), FU_OK);
  void *params[1] = {&dout};
  fu_rt_launch_config cfg = {{NB, 1, 1}, {32, 1, 1}, 0, 2};
  CHECK_EQ_INT(fu_rt_launch(g_rt, &fn, &cfg, params), FU_OK);
  CHECK_EQ_INT(fu_rt_synchronize(g_rt), FU_OK);
  float out[NB];
  CHECK_EQ_INT(fu_rt_mem_download(g_rt, out, dout, sizeof out), FU_OK);
  int bad = 0;
  for (int b = 0; b < NB; b++)
    if (out[b] != (float)(b ^ 1)) bad++;
  CHECK_EQ_INT(bad, 0);
  g_cap.len = 0;
  g_cap.text[0] = '\0';
  cfg.grid[0] = 7;
  CHECK_EQ_INT(fu_rt_launch(g_rt, &fn, &cfg, params), FU_ERR_INVALID_ARG);
  CHECK(strstr(g_cap.text, "grid.x = 7 is not a multiple of 2: not launched") != NULL);
  fu_rt_mem_free(g_rt, dout);
  fu_rt_module_unload(mod);
}

static void test_bad_ptx(void) {
  g_cap.len = 0;
  g_cap.text[0] = '\0';
  fu_rt_module *mod = NULL;
  CHECK_EQ_INT(fu_rt_module_load(g_rt, k_bad_ptx, strlen(k_bad_ptx), "broken.ptx", &mod), FU_ERR_RUNTIME);
  CHECK(mod == NULL);
  CHECK(strstr(g_cap.text, "error: cuModuleLoadDataEx('broken.ptx') failed: CUDA_ERROR_INVALID_PTX") != NULL);
  /* the JIT's own words, naming the bad instruction */
  CHECK(strstr(g_cap.text, "note: the JIT's error log for 'broken.ptx': ") != NULL);
  CHECK(strstr(g_cap.text, "frobnicate") != NULL);
}

static const char *k_fusion =
    "fusion @f {\n"
    "  %T0 = input f32[N] {example=randn, seed=7, example_shape=[65537]}\n"
    "  %S0 = input f32 {example=2.5}\n"
    "  segment @g0 pointwise (%T0, %S0) -> (%T1) {\n"
    "    %T1 = mul %T0, %S0 : f32[N]\n"
    "  }\n"
    "  output %T1\n"
    "}\n";

/* A lowered fusion with a hand-built kernel: plan, poison, run, download,
 * compare with the interpreter; the kernel that skips an element must
 * fail the comparison on exactly that element; then a short benchmark. */
static void test_fusion(void) {
  fu_allocator al = fu_default_allocator();
  fu_source src = {"gpu.fir", k_fusion, strlen(k_fusion), 1};
  fu_module *m = NULL;
  CHECK_EQ_INT(fu_parse_module(&src, al, &g_diag, &m), FU_OK);
  if (!m) return;
  CHECK_EQ_INT(fu_verify_module(m, &g_diag), FU_OK);
  fu_fusion *f = m->first;
  fu_op *seg = NULL;
  for (fu_op *op = f->body.first; op; op = op->next)
    if (op->kind == FU_OP_SEGMENT) seg = op;
  fu_value *t0 = f->body.first->results[0], *s0 = f->body.first->next->results[0];
  fu_value *t1 = seg->u.segment.outputs[0];
  fu_arg *in = NULL, *want = NULL;
  uint32_t n_in = 0, n_want = 0;
  fu_input_options io;
  memset(&io, 0, sizeof io);
  CHECK_EQ_INT(fu_interp_make_inputs(f, &io, al, &g_diag, &in, &n_in), FU_OK);
  CHECK_EQ_INT(fu_interp_run(f, in, n_in, NULL, al, &g_diag, &want, &n_want), FU_OK);
  fu_rt_module *mod = NULL;
  CHECK_EQ_INT(fu_rt_module_load(g_rt, k_scale_ptx, strlen(k_scale_ptx), "scale.ptx", &mod), FU_OK);

  for (int skip = 0; skip < 2 && mod && n_want == 1; skip++) {
    fu_kernel *k = fu_kernel_new(m, skip ? "f_g0_skip" : "f_g0");
    fu_kernel_tensor_param(m, k, "in", FU_DT_F32, t0, true, true, 4);
    fu_kernel_tensor_param(m, k, "out", FU_DT_F32, t1, false, true, 4);
    fu_kernel_scalar_input_param(m, k, "s", FU_DT_F32, s0);
    fu_kernel_extent_param(m, k, "N", FU_DT_I64, "N");
    k->grid[0] = fu_lexpr_binary(m, FU_LX_CEIL_DIV, fu_lexpr_sym(m, "N"), fu_lexpr_const(m, 128));
    k->block[0] = 128;
    seg->u.segment.kernel = k;
    fu_rt_plan p;
    CHECK_EQ_INT(fu_rt_plan_build(f, in, n_in, al, &g_diag, &p), FU_OK);
    CHECK_EQ_INT(p.launches[0].config.grid[0], 513);
    fu_rt_exec *e = NULL;
    CHECK_EQ_INT(fu_rt_exec_new(g_rt, &p, mod, in, &g_diag, &e), FU_OK);
    if (e) {
      CHECK_EQ_INT(fu_rt_exec_poison(e, 0xFF), FU_OK);
      CHECK_EQ_INT(fu_rt_exec_run(e), FU_OK);
      fu_arg *got = NULL;
      uint32_t n_got = 0;
      CHECK_EQ_INT(fu_rt_exec_outputs(e, al, &got, &n_got), FU_OK);
      if (n_got == 1) {
        fu_check_result r;
        CHECK_EQ_INT(fu_check_compare(&got[0].tensor, &want[0].tensor, fu_check_default_tolerance(FU_DT_F32), &r), FU_OK);
        CHECK_EQ_INT(r.n_elements, 65537);
        CHECK_EQ_INT(r.n_mismatch, skip ? 1 : 0);
        CHECK_EQ_INT(r.n_poison, skip ? 1 : 0);
        if (skip) CHECK_EQ_INT(r.first_mismatch, 65536);
        if (!skip) CHECK(r.max_abs_err == 0); /* one f32 multiply, correctly rounded on both */
      }
      fu_args_free(got, n_got, al);
      if (!skip) {
        fu_rt_bench_options bo;
        memset(&bo, 0, sizeof bo);
        bo.iters = 20;
        bo.copy_bytes = 64u << 20;
        fu_rt_bench_result br;
        CHECK_EQ_INT(fu_rt_exec_bench(e, &bo, &br), FU_OK);
        CHECK_EQ_INT(br.n_kernels, 1);
        CHECK(br.copy_gbs > 100.0);
        CHECK(br.kernels[0].median_us > 0 && br.kernels[0].min_us <= br.kernels[0].median_us);
        CHECK_EQ_INT(br.kernels[0].bytes, 2 * 65537 * 4);
        CHECK(br.flush_bytes >= 2 * fu_rt_device(g_rt)->desc.l2_bytes);
        printf("  bench: kernel %.2f us, copy %.0f GB/s\n", br.kernels[0].median_us, br.copy_gbs);
        fu_rt_bench_result_free(&br);
      }
    }
    fu_rt_exec_free(e);
    fu_rt_plan_free(&p);
  }
  fu_rt_module_unload(mod);
  fu_args_free(in, n_in, al);
  fu_args_free(want, n_want, al);
  fu_module_free(m);
}

static void test_device(void) {
  const fu_rt_device_info *d = fu_rt_device(g_rt);
  fu_strbuf why;
  fu_strbuf_init(&why, fu_default_allocator());
  bool ok = fu_device_valid(&d->desc, &why);
  if (!ok) printf("  device description: %s\n", why.data ? why.data : "");
  CHECK(ok);
  fu_strbuf_free(&why);
  CHECK(d->desc.n_sms > 0 && d->desc.l2_bytes > 0 && d->desc.mem_bandwidth_gbs > 100);
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_rt_device_print(&sb, d);
  printf("%s", sb.data ? sb.data : "");
  fu_strbuf_free(&sb);
}

int main(void) {
  fu_diag_init(&g_diag, fu_default_allocator());
  g_diag.handler = capture;
  g_diag.user = &g_cap;
  fu_status st = fu_rt_open(NULL, fu_default_allocator(), &g_diag, &g_rt);
  if (st == FU_ERR_UNSUPPORTED) {
    const char *why = strncmp(g_cap.text, "error: ", 7) == 0 ? g_cap.text + 7 : g_cap.text;
    printf("no GPU: skipped (%.*s)\n", (int)strcspn(why, "\n"), why);
    return 77;
  }
  if (st != FU_OK) {
    printf("FAIL: opening the GPU: %s", g_cap.text);
    return 1;
  }
  g_cap.echo = true;
  static const fu_test_case cases[] = {
      {"device", test_device},   {"vadd", test_vadd},     {"clusters", test_clusters},
      {"bad_ptx", test_bad_ptx}, {"fusion", test_fusion}};
  int rc = fu_test_main(cases, (int)(sizeof cases / sizeof cases[0]));
  fu_rt_close(g_rt);
  return rc;
}

#endif
