/* Tests of `lower`: every fusion below goes through strip-bookend-views,
 * segment, schedule and lower, is printed and parsed back, and its kernels
 * are run by the kernel IR interpreter on the inputs' example data; the
 * outputs must equal the fusion interpreter's bit for bit (both use the
 * same arithmetic), every output element must be written exactly once
 * (checked by the runner), and every access must be in bounds and aligned.
 * Sizes cover 1, 3, 1023, 65537, symbolic extents, broadcasts, casts,
 * f16/bf16, where, internal reshapes, non-contiguous and permuted inputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuser/bookend.h"
#include "fuser/index_graph.h"
#include "fuser/kir_interp.h"
#include "fuser/kir_text.h"
#include "fuser/lower.h"
#include "fuser/parse.h"
#include "fuser/print.h"
#include "fuser/schedule.h"
#include "fuser/segment.h"
#include "fuser/verify.h"
#include "diag_capture.h"
#include "harness.h"
#include "kernel_compare.h"

typedef struct run_result {
  bool ok;
  fu_kir_stats stats;
  char kernel_text[65536];
  uint32_t n_kernels;
} run_result;

static fu_module *parse_text(const char *name, const char *text, fu_diag_engine *diag, fu_source *src) {
  src->name = name;
  src->text = text;
  src->len = strlen(text);
  src->first_line = 1;
  fu_module *m = NULL;
  if (fu_parse_module(src, fu_default_allocator(), diag, &m) != FU_OK) return NULL;
  if (fu_verify_module(m, diag) != FU_OK) {
    fu_module_free(m);
    return NULL;
  }
  return m;
}

/* The whole pipeline to kernels, for `device`. */
static bool compile(fu_module *m, const char *device, fu_diag_engine *diag) {
  if (fu_strip_bookend_views(m, NULL) != FU_OK) return false;
  for (fu_fusion *f = m->first; f; f = f->next)
    if (fu_segment_fusion(f, diag, NULL, NULL) != FU_OK) return false;
  fu_device dev;
  if (!fu_device_preset(device, &dev)) return false;
  if (fu_schedule_module(m, &dev, diag, NULL) != FU_OK) return false;
  if (fu_lower_module(m, diag, NULL) != FU_OK) return false;
  return fu_verify_module(m, diag) == FU_OK;
}

/* Compiles `text`, prints and re-parses it, runs both interpreters on every
 * fusion and compares.  Fills r (kernel text of the last fusion, stats). */
static void run_case_tol(const char *name, const char *text, run_result *r, double rtol);

static void run_case(const char *name, const char *text, run_result *r) { run_case_tol(name, text, r, 0.0); }

static void run_case_tol(const char *name, const char *text, run_result *r, double rtol) {
  memset(r, 0, sizeof *r);
  capture cap;
  fu_diag_engine diag;
  diag_capture(&diag, &cap);
  fu_source src1, src2;
  fu_module *m = parse_text(name, text, &diag, &src1);
  if (!m || !compile(m, "h100", &diag)) {
    fu_test_fail(__FILE__, __LINE__, "%s: compile failed:\n%s", name, cap.text);
    if (m) fu_module_free(m);
    return;
  }
  /* the lowered module prints and parses back, and prints the same */
  fu_strbuf p1, p2;
  fu_strbuf_init(&p1, fu_default_allocator());
  fu_strbuf_init(&p2, fu_default_allocator());
  fu_print_module(&p1, m, NULL);
  fu_module *m2 = parse_text(name, p1.data, &diag, &src2);
  if (!m2) {
    fu_test_fail(__FILE__, __LINE__, "%s: the lowered module does not parse back:\n%s\n%s", name, cap.text, p1.data);
    fu_strbuf_free(&p1);
    fu_strbuf_free(&p2);
    fu_module_free(m);
    return;
  }
  fu_print_module(&p2, m2, NULL);
  CHECK_STR(p2.data, p1.data);
  snprintf(r->kernel_text, sizeof r->kernel_text, "%s", p1.data);
  bool all_ok = true;
  for (fu_fusion *f = m2->first; f; f = f->next) {
    fu_kernel *ks[16];
    r->n_kernels += fu_module_kernels(m2, ks, 16, NULL);
    fu_input_options io;
    memset(&io, 0, sizeof io);
    io.seed = 7;
    if (!compare_with_kernels(name, f, &io, rtol, &diag, cap.text, &r->stats)) all_ok = false;
  }
  r->ok = all_ok;
  if (!all_ok) fprintf(stderr, "---- %s ----\n%s\n", name, p1.data);
  fu_strbuf_free(&p1);
  fu_strbuf_free(&p2);
  fu_module_free(m);
  fu_module_free(m2);
}

static bool has(const run_result *r, const char *s) { return strstr(r->kernel_text, s) != NULL; }

/* ---- cases ----------------------------------------------------------------------------- */

static void test_gelu_bookend(void) {
  run_result r;
  run_case("gelu", "fusion @gelu {\n"
                   "  %T0 = input f32[64, 96] {example=randn, seed=1}\n"
                   "  %T1 = reshape %T0 : f32[8, 8, 96]\n"
                   "  %T3 = mul %T1, 0.5 : f32[8, 8, 96]\n"
                   "  %T5 = mul %T1, 0.707107 : f32[8, 8, 96]\n"
                   "  %T6 = erf %T5 : f32[8, 8, 96]\n"
                   "  %T8 = add %T6, 1.0 : f32[8, 8, 96]\n"
                   "  %T9 = mul %T3, %T8 : f32[8, 8, 96]\n"
                   "  %T10 = reshape %T9 : f32[64, 96]\n"
                   "  output %T10\n"
                   "}\n",
           &r);
  CHECK(r.ok);
  CHECK(has(&r, "load.v4 %T1["));
  CHECK(has(&r, "store.v4 %T9["));
  CHECK(has(&r, "index=i32"));
  CHECK(r.stats.vector_loads > 0 && r.stats.vector_loads == r.stats.loads);
  CHECK(r.stats.vector_stores == r.stats.stores);
}

static void test_odd_sizes(void) {
  static const int64_t sizes[] = {1, 3, 1023, 65537};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    char text[1024];
    snprintf(text, sizeof text,
             "fusion @odd {\n"
             "  %%T0 = input f32[%lld] {example=randn, seed=2}\n"
             "  %%T1 = input f32[%lld] {example=randn, seed=3}\n"
             "  %%T2 = mul %%T0, %%T1 : f32[%lld]\n"
             "  %%T3 = tanh %%T2 : f32[%lld]\n"
             "  output %%T3\n"
             "}\n",
             (long long)sizes[i], (long long)sizes[i], (long long)sizes[i], (long long)sizes[i]);
    run_result r;
    run_case("odd", text, &r);
    CHECK(r.ok);
    if (sizes[i] % 4 != 0) CHECK(has(&r, "tail=guard"));
  }
}

static void test_symbolic(void) {
  run_result r;
  /* symbolic extents: the kernel must be right at the example sizes, which
   * are odd, whatever it was tuned for */
  run_case("symbolic",
           "fusion @sym {\n"
           "  %T0 = input f32[N, M] {example=randn, seed=4, example_shape=[37, 101]}\n"
           "  %T1 = input f32[N, M] {example=randn, seed=5, example_shape=[37, 101]}\n"
           "  %T2 = add %T0, %T1 : f32[N, M]\n"
           "  %T3 = mul %T2, %T0 : f32[N, M]\n"
           "  output %T3\n"
           "}\n",
           &r);
  CHECK(r.ok);
  CHECK(has(&r, "index=i64"));
  CHECK(has(&r, "extent=N"));
  CHECK(has(&r, "tail=guard"));
}

static void test_bias_broadcast(void) {
  run_result r;
  run_case("bias",
           "fusion @bias {\n"
           "  %T0 = input f32[33, 1000] {example=randn, seed=1}\n"
           "  %T1 = input f32[1000] {example=randn, seed=2}\n"
           "  %T2 = broadcast_in_dim %T1 {broadcast_dims=[1]} : f32[33, 1000]\n"
           "  %T3 = add %T0, %T2 : f32[33, 1000]\n"
           "  %T4 = relu %T3 : f32[33, 1000]\n"
           "  output %T4\n"
           "}\n",
           &r);
  CHECK(r.ok);
  CHECK(has(&r, "blockIdx.y")); /* the 2-D schedule: rows on blockIdx.y */
  /* a per-row scale [N, 1] and a symbolic bias */
  run_case("rowscale",
           "fusion @rows {\n"
           "  %T0 = input f32[N, H] {example=randn, seed=1, example_shape=[5, 300]}\n"
           "  %T1 = input f32[N, 1] {example=randn, seed=2, example_shape=[5, 1]}\n"
           "  %T2 = input f32[H] {example=randn, seed=3, example_shape=[300]}\n"
           "  %T3 = mul %T0, %T1 : f32[N, H]\n"
           "  %T4 = broadcast_in_dim %T2 {broadcast_dims=[1]} : f32[N, H]\n"
           "  %T5 = sub %T3, %T4 : f32[N, H]\n"
           "  output %T5\n"
           "}\n",
           &r);
  CHECK(r.ok);
}

static void test_half_types(void) {
  run_result r;
  run_case("f16",
           "fusion @half {\n"
           "  %T0 = input f16[3, 1027] {example=randn, seed=1}\n"
           "  %T1 = input bf16[3, 1027] {example=randn, seed=2}\n"
           "  %T2 = cast %T0 : f32[3, 1027]\n"
           "  %T3 = cast %T1 : f32[3, 1027]\n"
           "  %T4 = mul %T2, %T3 : f32[3, 1027]\n"
           "  %T5 = sigmoid %T4 : f32[3, 1027]\n"
           "  %T6 = cast %T5 : f16[3, 1027]\n"
           "  %T7 = add %T0, %T0 : f16[3, 1027]\n"
           "  %T8 = mul %T7, 0.1 : f16[3, 1027]\n"
           "  output %T6, %T8\n"
           "}\n",
           &r);
  CHECK(r.ok);
  CHECK(has(&r, "load.v8 %T0[")); /* 16 bytes of f16 */
  run_case("bf16",
           "fusion @bf {\n"
           "  %T0 = input bf16[4096] {example=randn, seed=3}\n"
           "  %T1 = exp %T0 : bf16[4096]\n"
           "  %T2 = cast %T1 : f32[4096]\n"
           "  output %T2\n"
           "}\n",
           &r);
  CHECK(r.ok);
}

static void test_where_and_ints(void) {
  run_result r;
  run_case("where",
           "fusion @w {\n"
           "  %T0 = input f32[2, 515] {example=randn, seed=1}\n"
           "  %T1 = input f32[2, 515] {example=randn, seed=2}\n"
           "  %T2 = gt %T0, %T1 : bool[2, 515]\n"
           "  %T3 = where %T2, %T0, 0.0 : f32[2, 515]\n"
           "  %T4 = logical_not %T2 : bool[2, 515]\n"
           "  output %T3, %T4\n"
           "}\n",
           &r);
  CHECK(r.ok);
  run_case("ints",
           "fusion @i {\n"
           "  %T0 = input i32[1031] {example=randint, low=-50, high=50, seed=1}\n"
           "  %T1 = input i32[1031] {example=randint, low=1, high=9, seed=2}\n"
           "  %T2 = div %T0, %T1 : i32[1031]\n"
           "  %T3 = remainder %T0, %T1 : i32[1031]\n"
           "  %T4 = mul %T2, 3 : i32[1031]\n"
           "  %T5 = add %T4, %T3 : i32[1031]\n"
           "  %T6 = cast %T5 : f32[1031]\n"
           "  %T7 = mul %T6, 0.5 : f32[1031]\n"
           "  output %T5, %T7\n"
           "}\n",
           &r);
  CHECK(r.ok);
}

static void test_internal_reshape(void) {
  run_result r;
  /* seed001_view_chain: a reshape between compute ops stays in the kernel */
  run_case("view_chain",
           "fusion @vc {\n"
           "  %T0 = input f32[96, 40] {example=randn, seed=1}\n"
           "  %T1 = reshape %T0 : f32[8, 12, 40]\n"
           "  %T2 = add %T1, %T1 : f32[8, 12, 40]\n"
           "  %T3 = reshape %T2 : f32[96, 40]\n"
           "  %T4 = mul %T3, %T3 : f32[96, 40]\n"
           "  %T5 = reshape %T4 : f32[8, 12, 40]\n"
           "  output %T5\n"
           "}\n",
           &r);
  CHECK(r.ok);
  CHECK(r.stats.vector_loads == r.stats.loads);
  /* a reshape that regroups dims ([6, 10] -> [4, 15]) inside a kernel */
  run_case("regroup",
           "fusion @rg {\n"
           "  %T0 = input f32[6, 10] {example=randn, seed=1}\n"
           "  %T1 = exp %T0 : f32[6, 10]\n"
           "  %T2 = reshape %T1 : f32[4, 15]\n"
           "  %T3 = input f32[4, 15] {example=randn, seed=2}\n"
           "  %T4 = add %T2, %T3 : f32[4, 15]\n"
           "  output %T4\n"
           "}\n",
           &r);
  CHECK(r.ok);
}

static void test_noncontiguous_and_permuted(void) {
  run_result r;
  /* strided rows (a view with padding): not vectorizable across rows */
  run_case("strided",
           "fusion @st {\n"
           "  %T0 = input f32[7, 30] {strides=[33, 1], example=randn, seed=1}\n"
           "  %T1 = input f32[7, 30] {example=randn, seed=2}\n"
           "  %T2 = add %T0, %T1 : f32[7, 30]\n"
           "  output %T2\n"
           "}\n",
           &r);
  CHECK(r.ok);
  /* unknown run-time strides: a stride parameter */
  run_case("contig_false",
           "fusion @cf {\n"
           "  %T0 = input f32[N, M] {contiguity=[false, true], example=randn, seed=1, example_shape=[5, 9]}\n"
           "  %T1 = neg %T0 : f32[N, M]\n"
           "  output %T1\n"
           "}\n",
           &r);
  CHECK(r.ok);
  CHECK(has(&r, "stride=%T0 dim=0"));
  /* a permuted input and a permute inside a (hand-made) pointwise segment */
  run_case("permuted",
           "fusion @pm {\n"
           "  %T0 = input f32[5, 7] {stride_order=[0, 1], example=randn, seed=1}\n"
           "  %T1 = input f32[7, 5] {example=randn, seed=2}\n"
           "  segment @g0 pointwise (%T0, %T1) -> (%T4) {\n"
           "    %T2 = permute %T1 {dims=[1, 0]} : f32[5, 7]\n"
           "    %T3 = mul %T0, %T2 : f32[5, 7]\n"
           "    %T4 = sqrt %T3 : f32[5, 7]\n"
           "  }\n"
           "  output %T4\n"
           "}\n",
           &r);
  CHECK(r.ok);
}

static void test_multi_output_and_scalars(void) {
  run_result r;
  run_case("multi",
           "fusion @mo {\n"
           "  %S0 = input f64 {example=0.25}\n"
           "  %S1 = input i64 {example=3}\n"
           "  %T0 = input f32[17, 64] {example=randn, seed=1}\n"
           "  %T1 = mul %T0, %S0 : f32[17, 64]\n"
           "  %T2 = add %T1, %S1 : f32[17, 64]\n"
           "  %T3 = exp %T2 : f32[17, 64]\n"
           "  %T4 = reshape %T3 : f32[1088]\n"
           "  output %T1, %T3, %T4\n"
           "}\n",
           &r);
  CHECK(r.ok);
  CHECK(has(&r, "input=%S0"));
}

static void test_creation_and_expand(void) {
  run_result r;
  run_case("iota",
           "fusion @io {\n"
           "  %T0 = input f32[300] {example=randn, seed=1}\n"
           "  %T1 = iota 2, 3 : i64[300]\n"
           "  %T2 = cast %T1 : f32[300]\n"
           "  %T3 = full 1.5 : f32[300]\n"
           "  %T4 = add %T0, %T2 : f32[300]\n"
           "  %T5 = mul %T4, %T3 : f32[300]\n"
           "  output %T5\n"
           "}\n",
           &r);
  CHECK(r.ok);
  run_case("expand",
           "fusion @ex {\n"
           "  %T0 = input f32[1, 50] {example=randn, seed=1}\n"
           "  %T1 = input f32[9, 50] {example=randn, seed=2}\n"
           "  %T2 = expand %T0 : f32[9, 50]\n"
           "  %T3 = squeeze %T0 {dims=[0]} : f32[50]\n"
           "  %T4 = broadcast %T3 {is_broadcast_dim=[true, false]} : f32[1, 50]\n"
           "  %T5 = add %T2, %T1 : f32[9, 50]\n"
           "  %T6 = mul %T5, %T4 : f32[9, 50]\n"
           "  output %T6\n"
           "}\n",
           &r);
  CHECK(r.ok);
  run_case("rank0",
           "fusion @r0 {\n"
           "  %T0 = input f32[] {example=randn, seed=1}\n"
           "  %T1 = mul %T0, %T0 : f32[]\n"
           "  output %T1\n"
           "}\n",
           &r);
  CHECK(r.ok);
}

/* A hand-written schedule (scalar loads, unroll, a serial loop, 2-D) is
 * honoured: its kernel computes the same thing. */
static void test_hand_schedule(void) {
  run_result r;
  run_case("hand",
           "fusion @h {\n"
           "  %T0 = input f32[10, 70] {example=randn, seed=1}\n"
           "  segment @g0 pointwise (%T0) -> (%T2) {\n"
           "    %T1 = mul %T0, %T0 : f32[10, 70]\n"
           "    %T2 = add %T1, 1.0 : f32[10, 70]\n"
           "    schedule {index=i64} {\n"
           "      reference %T2 [r, c]\n"
           "      split c, 2 -> c1, v {tail=exact}\n"
           "      split c1, 8 -> c2, t {tail=guard}\n"
           "      split r, 3 -> ro, u {tail=guard}\n"
           "      loop [ro: blockIdx.x, c2: serial, u: unroll, t: threadIdx.x, v: vectorize]\n"
           "      tensor %T0 {memory=global, access=scalar}\n"
           "    }\n"
           "  }\n"
           "  output %T2\n"
           "}\n",
           &r);
  CHECK(r.ok);
  CHECK(has(&r, "unroll {"));
  CHECK(has(&r, "store.v2"));
  CHECK(!has(&r, "load.v2"));
  /* two guarded splits around the vector lanes (rows of 30 in tiles of 12
   * in vectors of 8): two lane-dependent predicates, so the lanes go
   * through mutables and the math is written once */
  run_case("two_guards",
           "fusion @tg {\n"
           "  %T0 = input f32[5, 30] {example=randn, seed=1}\n"
           "  %T3 = input i32[5, 30] {example=randint, low=1, high=5, seed=2}\n"
           "  segment @g0 pointwise (%T0, %T3) -> (%T2) {\n"
           "    %T1 = mul %T0, %T0 : f32[5, 30]\n"
           "    %T4 = div 100, %T3 : i32[5, 30]\n"
           "    %T5 = cast %T4 : f32[5, 30]\n"
           "    %T2 = add %T1, %T5 : f32[5, 30]\n"
           "    schedule {\n"
           "      reference %T2 [r, c]\n"
           "      split c, 12 -> a, b {tail=guard}\n"
           "      split b, 8 -> b1, v {tail=guard}\n"
           "      loop [r: blockIdx.x, a: threadIdx.y, b1: threadIdx.x, v: vectorize]\n"
           "      tensor %T0 {memory=global, access=scalar}\n"
           "      tensor %T3 {memory=global, access=scalar}\n"
           "      tensor %T2 {memory=global, access=scalar}\n"
           "    }\n"
           "  }\n"
           "  output %T2\n"
           "}\n",
           &r);
  CHECK(r.ok);
  CHECK(has(&r, "= mutable f32"));
  CHECK(has(&r, "block=[2, 3, 1]"));
}

/* A cycle in the exact graph (a split undone by a merge, added to its own
 * source), several fusions in one module, f64, and pow by small integers. */
static void test_cycle_and_more(void) {
  run_result r;
  run_case("cycle",
           "fusion @cy {\n"
           "  %T0 = input f32[4096] {example=randn, seed=1}\n"
           "  %T1 = neg %T0 : f32[4096]\n"
           "  %T2 = reshape %T1 : f32[64, 64]\n"
           "  %T3 = mul %T2, 2.0 : f32[64, 64]\n"
           "  %T4 = reshape %T3 : f32[4096]\n"
           "  %T5 = add %T1, %T4 : f32[4096]\n"
           "  output %T5\n"
           "}\n",
           &r);
  CHECK(r.ok);
  /* x^2 = x*x and x^-1 = 1/x are correctly rounded; libm's pow is within
   * an ulp of them */
  run_case_tol("second",
           "fusion @first {\n"
           "  %T0 = input f32[100] {example=randn, seed=2}\n"
           "  %T1 = exp %T0 : f32[100]\n"
           "  output %T1\n"
           "}\n"
           "fusion @second {\n"
           "  %T0 = input f64[N] {example=randn, seed=2, example_shape=[333]}\n"
           "  %T1 = pow %T0, 2.0 : f64[N]\n"
           "  %T2 = pow %T0, -1 : f64[N]\n"
           "  %T3 = add %T1, %T2 : f64[N]\n"
           "  output %T3\n"
           "}\n",
           &r, 1e-15);
  CHECK(r.ok);
  CHECK_EQ_INT(r.n_kernels, 4); /* two fusions, each counted for both */
  CHECK(r.stats.vector_loads > 0);
  /* x^3 as x*x*x may differ from powf by an ulp */
  run_case_tol("cube",
               "fusion @cube {\n"
               "  %T0 = input f32[2049] {example=randn, seed=3}\n"
               "  %T1 = pow %T0, 3.0 : f32[2049]\n"
               "  output %T1\n"
               "}\n",
               &r, 1e-6);
  CHECK(r.ok);
  CHECK(has(&r, "mul %T0_0, %T0_0"));
  /* a 2-D schedule whose rows do not fill whole vectors, symbolic rows */
  run_case("rows_tail",
           "fusion @rt {\n"
           "  %T0 = input f32[N, 1030] {example=randn, seed=1, example_shape=[3, 1030]}\n"
           "  %T1 = input f32[1030] {example=randn, seed=2}\n"
           "  %T2 = broadcast_in_dim %T1 {broadcast_dims=[1]} : f32[N, 1030]\n"
           "  %T3 = mul %T0, %T2 : f32[N, 1030]\n"
           "  output %T3\n"
           "}\n",
           &r);
  CHECK(r.ok);
  CHECK(has(&r, "blockIdx.y"));
}

/* Pointwise fusions of every rank up to the IR's limit (issue 17 item 2:
 * rank 9 and above overflowed the scheduler's loop array), with a bias
 * broadcast along the inner dims and a per-row scale along the outer ones,
 * so that the 2-D schedule and the probe see every dim. */
static void test_high_rank(void) {
  static const int32_t ranks[] = {9, 12, FU_MAX_RANK};
  static const int64_t ext[FU_MAX_RANK] = {2, 1, 3, 2, 1, 2, 1, 1, 2, 3, 1, 2, 1, 1, 2, 5};
  for (size_t k = 0; k < sizeof ranks / sizeof ranks[0]; k++) {
    int32_t r = ranks[k];
    char full[256] = "", inner[256] = "", outer[256] = "", dims[64] = "", text[2048];
    size_t nf = 0, ni = 0, no = 0, nd = 0;
    for (int32_t d = 0; d < r; d++) {
      const char *sep = d ? ", " : "";
      nf += (size_t)snprintf(full + nf, sizeof full - nf, "%s%lld", sep, (long long)ext[d]);
      no += (size_t)snprintf(outer + no, sizeof outer - no, "%s%lld", sep, d < r / 2 ? (long long)ext[d] : 1LL);
      if (d >= r / 2) {
        ni += (size_t)snprintf(inner + ni, sizeof inner - ni, "%s%lld", d > r / 2 ? ", " : "", (long long)ext[d]);
        nd += (size_t)snprintf(dims + nd, sizeof dims - nd, "%s%d", d > r / 2 ? ", " : "", (int)d);
      }
    }
    snprintf(text, sizeof text,
             "fusion @rank%d {\n"
             "  %%T0 = input f32[%s] {example=randn, seed=1}\n"
             "  %%T1 = input f32[%s] {example=randn, seed=2}\n"
             "  %%T2 = input f32[%s] {example=randn, seed=3}\n"
             "  %%T3 = broadcast_in_dim %%T1 {broadcast_dims=[%s]} : f32[%s]\n"
             "  %%T4 = add %%T0, %%T3 : f32[%s]\n"
             "  %%T5 = mul %%T4, %%T2 : f32[%s]\n"
             "  %%T6 = tanh %%T5 : f32[%s]\n"
             "  output %%T6\n"
             "}\n",
             (int)r, full, inner, outer, dims, full, full, full, full);
    char name[32];
    snprintf(name, sizeof name, "rank%d", (int)r);
    run_result res;
    run_case(name, text, &res);
    CHECK(res.ok);
    CHECK(res.n_kernels == 1);
  }
}

FU_TEST_MAIN(FU_TEST(test_cycle_and_more), FU_TEST(test_gelu_bookend), FU_TEST(test_odd_sizes), FU_TEST(test_symbolic), FU_TEST(test_bias_broadcast),
             FU_TEST(test_half_types), FU_TEST(test_where_and_ints), FU_TEST(test_internal_reshape),
             FU_TEST(test_noncontiguous_and_permuted), FU_TEST(test_multi_output_and_scalars),
             FU_TEST(test_creation_and_expand), FU_TEST(test_hand_schedule), FU_TEST(test_high_rank))
