/* Tests of the reduction scheduler and lowering: each fusion goes through
 * segment, schedule and lower, prints and parses back unchanged, and its
 * kernels run in the kernel IR interpreter (blocks in lockstep: shuffles,
 * barriers, shared memory) against the reference interpreter, which
 * accumulates in f64.  Kernels accumulate in f32 (f64 for f64), so sums
 * are judged as fuser-run --check judges them: the dtype's tolerance plus
 * the interpreter's error bound, which grows with the reduced extent and
 * the magnitude of the terms (lib/interp/error_scale.c); max/min and ints
 * are exact.  Shapes: rows and columns of 1, 3, 33, 1023, 4097,
 * primes, more rows than blocks hold, symbolic sizes; f32/f16/bf16/f64,
 * integer and bool inputs; sum/prod/max/min; inner, outer, all dims,
 * several adjacent dims, keepdim; prologues and epilogues. */
#include <stdio.h>
#include <string.h>

#include "fuser/lower.h"
#include "fuser/parse.h"
#include "fuser/print.h"
#include "fuser/schedule.h"
#include "fuser/segment.h"
#include "fuser/verify.h"
#include "diag_capture.h"
#include "harness.h"
#include "kernel_compare.h"

/* Compiles `text` for the H100, checks the round trip, compares the
 * kernels with the interpreter; the printed module goes to `printed`. */
static bool run(const char *name, const char *text, bool exact, char *printed, size_t cap) {
  capture c;
  fu_diag_engine diag;
  diag_capture(&diag, &c);
  fu_source src = {.name = name, .text = text, .len = strlen(text), .first_line = 1};
  fu_module *m = NULL;
  fu_device dev;
  fu_device_preset("h100", &dev);
  bool ok = fu_parse_module(&src, fu_default_allocator(), &diag, &m) == FU_OK;
  for (fu_fusion *f = ok ? m->first : NULL; f && ok; f = f->next) ok = fu_segment_fusion(f, &diag, NULL, NULL) == FU_OK;
  ok = ok && fu_schedule_module(m, &dev, &diag, NULL) == FU_OK && fu_lower_module(m, &diag, NULL) == FU_OK &&
       fu_verify_module(m, &diag) == FU_OK;
  if (!ok) {
    fu_test_fail(__FILE__, __LINE__, "%s: compile failed:\n%s", name, c.text);
    if (m) fu_module_free(m);
    return false;
  }
  fu_strbuf p1, p2;
  fu_strbuf_init(&p1, fu_default_allocator());
  fu_strbuf_init(&p2, fu_default_allocator());
  fu_print_module(&p1, m, NULL);
  fu_source src2 = {.name = name, .text = p1.data, .len = p1.len, .first_line = 1};
  fu_module *m2 = NULL;
  ok = fu_parse_module(&src2, fu_default_allocator(), &diag, &m2) == FU_OK;
  CHECK(ok);
  if (ok) {
    fu_print_module(&p2, m2, NULL);
    CHECK_STR(p2.data, p1.data);
    fu_input_options io;
    memset(&io, 0, sizeof io);
    io.seed = 11;
    fu_kir_stats stats;
    memset(&stats, 0, sizeof stats);
    for (fu_fusion *f = m2->first; f; f = f->next)
      if (!compare_with_kernels_checked(name, f, &io, exact, &diag, c.text, &stats)) ok = false;
    if (!ok) fprintf(stderr, "---- %s ----\n%s\n", name, p1.data);
  }
  if (printed) snprintf(printed, cap, "%s", p1.data ? p1.data : "");
  fu_strbuf_free(&p1);
  fu_strbuf_free(&p2);
  if (m2) fu_module_free(m2);
  fu_module_free(m);
  return ok;
}

/* One reduction `op` of an input of `dtype` and `shape` over `axes`, with
 * the result in `rdtype`.  The
 * printed schedule must say reduce=`expect_reduce` and contain `want`
 * (a vectorize axis, an unrolled loop, a thread count) when given. */
static void one_with(const char *op, const char *dtype, const char *shape, const char *axes, const char *rshape,
                     const char *rdtype, const char *expect_reduce, const char *want) {
  char text[1024], name[160], printed[65536];
  snprintf(name, sizeof name, "%s %s%s axes %s%s%s", op, dtype, shape, axes, want ? " " : "", want ? want : "");
  snprintf(text, sizeof text,
           "fusion @r {\n  %%T0 = input %s%s\n  %%T1 = %s %%T0 {axes=%s} : %s%s\n  output %%T1\n}\n", dtype, shape, op,
           axes, rdtype, rshape);
  bool exact = strcmp(op, "max") == 0 || strcmp(op, "min") == 0 || rdtype[0] == 'i';
  if (run(name, text, exact, printed, sizeof printed) && expect_reduce) {
    char r[32];
    snprintf(r, sizeof r, "reduce=%s", expect_reduce);
    if (!strstr(printed, r) || (want && !strstr(printed, want)))
      fu_test_fail(__FILE__, __LINE__, "%s: expected %s%s%s in\n%s", name, r, want ? " and " : "", want ? want : "",
                   printed);
    fu_test_checks++;
  }
}

static void one(const char *op, const char *dtype, const char *shape, const char *axes, const char *rshape,
                const char *rdtype, const char *expect_reduce) {
  one_with(op, dtype, shape, axes, rshape, rdtype, expect_reduce, NULL);
}

/* The same with the result in the input's dtype. */
static void with(const char *op, const char *dtype, const char *shape, const char *axes, const char *rshape,
                 const char *expect_reduce, const char *want) {
  one_with(op, dtype, shape, axes, rshape, dtype, expect_reduce, want);
}

static void test_inner_sizes(void) {
  one("sum", "f32", "[1, 1]", "[1]", "[1]", "f32", "warp");
  one("sum", "f32", "[3, 3]", "[1]", "[3]", "f32", "warp");
  one("sum", "f32", "[33, 33]", "[1]", "[33]", "f32", "warp");
  one("sum", "f32", "[7, 1023]", "[1]", "[7]", "f32", "block");
  one("sum", "f32", "[3, 4097]", "[1]", "[3]", "f32", "block");
  one("sum", "f32", "[5, 131]", "[1]", "[5]", "f32", "warp");
  one("sum", "f32", "[1031, 3]", "[1]", "[1031]", "f32", "warp"); /* more rows than a wave of blocks */
  one("sum", "f32", "[2, 3, 257]", "[1, 2]", "[2]", "f32", "block");
}

/* Vector loads along the reduced axis: whole vectors, a partial last
 * vector (guarded lanes), several rows per warp, unrolled serial loops. */
static void test_inner_vectors(void) {
  with("sum", "f32", "[3, 4100]", "[1]", "[3]", "block", "rv: vectorize");   /* 1025 vectors: a partial tail */
  with("sum", "f32", "[2, 4096]", "[1]", "[2]", "block", "rsu: unroll");     /* exact: no guard */
  with("sum", "f32", "[5, 8200]", "[1]", "[5]", "block", "rsu: unroll");     /* guarded unroll */
  with("sum", "f32", "[37, 64]", "[1]", "[37]", "warp", "split ro, 8 -> rs, rx"); /* 8 threads a row */
  with("sum", "f32", "[1031, 8]", "[1]", "[1031]", "warp", "split ro, 2 -> rs, rx"); /* 2 threads a row, 128 rows a block */
  with("sum", "f32", "[9, 12]", "[1]", "[9]", "warp", "split ro, 2 -> rs, rx");   /* 3 vectors: a partial second */
  with("max", "bf16", "[3, 2056]", "[1]", "[3]", "block", "split d1, 8 -> ro, rv"); /* 8 x bf16 */
  with("sum", "f16", "[4, 40]", "[1]", "[4]", "warp", "split d1, 8 -> ro, rv");
  with("sum", "f64", "[3, 1030]", "[1]", "[3]", "block", "split d1, 2 -> ro, rv");
  with("min", "i32", "[6, 300]", "[1]", "[6]", "block", "split d1, 4 -> ro, rv");
  with("sum", "f32", "[8196]", "[0]", "[]", "block", "rv: vectorize");       /* every dim */
  /* an odd row of a constant length: scalar, unrolled by 4 (peeling it ran
   * slower on the H100); symbolic rows are peeled (lit/schedule/reduction-peel.fir) */
  with("sum", "f32", "[3, 1023]", "[1]", "[3]", "block", "rsu: unroll");
  with("max", "bf16", "[5, 4097]", "[1]", "[5]", "block", "rsu: unroll");
  with("sum", "f32", "[3, 3, 401]", "[0, 1, 2]", "[]", "block", "split r, 4 -> ro, rv {tail=peel}"); /* every dim */
  /* bool rows cannot be vectors: scalar, unrolled by 4 */
  one_with("sum", "bool", "[3, 1023]", "[1]", "[3]", "i64", "block", "rsu: unroll");
}

/* Few long rows: the row split over the grid (chunks on blockIdx.x and
 * the rows on blockIdx.y for several rows of a static count, blockIdx.y
 * for one row), partials through a workspace, the last block (semaphore)
 * combining them in order. */
static void test_grid(void) {
  with("sum", "f32", "[2, 70000]", "[1]", "[2]", "grid", "d0: blockIdx.y, ry: blockIdx.x"); /* vectors */
  with("sum", "f32", "[1, 33001]", "[1]", "[1]", "grid", "ry: blockIdx.y"); /* scalars, a partial chunk */
  with("sum", "f32", "[100003]", "[0]", "[]", "grid", "rv: vectorize");    /* every dim, a prime */
  with("max", "i32", "[3, 40000]", "[1]", "[3]", "grid", "ry: blockIdx.x");
  with("min", "bf16", "[5, 65536]", "[1]", "[5]", "grid", "split d1, 8 -> ro, rv");
  with("sum", "f16", "[2, 3, 20000]", "[1, 2]", "[2]", "grid", "ry: blockIdx.x");
  /* two reductions and an epilogue in one grid kernel */
  char printed[65536];
  run("grid two", "fusion @g {\n  %T0 = input f32[3, 50000]\n  %T1 = sum %T0 {axes=[1]} : f32[3]\n"
      "  %T2 = max %T0 {axes=[1]} : f32[3]\n  %T3 = div %T1, %T2 : f32[3]\n  output %T3\n}\n",
      false, printed, sizeof printed);
  CHECK(strstr(printed, "reduce=grid") != NULL);
  CHECK(strstr(printed, "workspace") != NULL);
}

/* Deep outer reductions: 32 columns a block on threadIdx.x, the rows over
 * 16 warps on threadIdx.y (shared-memory combine), and over blockIdx.y
 * when the column blocks cannot fill the device. */
static void test_outer_split(void) {
  with("sum", "f32", "[64, 33]", "[0]", "[33]", "block", "rt: threadIdx.y");
  with("sum", "f32", "[200, 1025]", "[0]", "[1025]", "block", "rt: threadIdx.y"); /* 33 column blocks */
  with("sum", "f32", "[1031, 70]", "[0]", "[70]", "grid", "ry: blockIdx.y");
  with("sum", "f32", "[5003, 3]", "[0]", "[3]", "grid", "rsu: unroll");
  with("max", "f16", "[999, 40]", "[0]", "[40]", "grid", "ry: blockIdx.y");
  /* one column: a 1 x 512 block (fewer columns than a warp), so 700
   * rows are one block and 9001 a grid with a tree over threadIdx.y */
  with("sum", "f64", "[700, 1]", "[0]", "[1]", "block", "rt: threadIdx.y");
  with("sum", "f64", "[9001, 1]", "[0]", "[1]", "grid", "ry: blockIdx.y");
  with("sum", "f32", "[3, 300, 17]", "[0, 1]", "[17]", "grid", "rt: threadIdx.y");
}

static void test_outer_sizes(void) {
  one("sum", "f32", "[1, 1]", "[0]", "[1]", "f32", "serial");
  one("sum", "f32", "[1]", "[0]", "[]", "f32", "block"); /* all dims reduced: inner, one block */
  one("sum", "f32", "[3, 5]", "[0]", "[5]", "f32", "serial");
  one("sum", "f32", "[1023, 33]", "[0]", "[33]", "f32", "grid"); /* deep: rows over threadIdx.y and blocks */
  one("sum", "f32", "[33, 1031]", "[0]", "[1031]", "f32", "serial");
  one("sum", "f32", "[3, 7, 129]", "[0, 1]", "[129]", "f32", "serial");
}

static void test_all_dims(void) {
  one("sum", "f32", "[4097]", "[0]", "[]", "f32", "block");
  one("sum", "f32", "[3, 33]", "[0, 1]", "[]", "f32", "block");
  one("max", "f32", "[37, 41]", "[0, 1]", "[]", "f32", "block");
}

static void test_ops_and_dtypes(void) {
  static const char *ops[] = {"sum", "max", "min"};
  static const char *dts[] = {"f32", "f16", "bf16", "f64"};
  for (int o = 0; o < 3; o++)
    for (int d = 0; d < 4; d++) {
      one(ops[o], dts[d], "[9, 1023]", "[1]", "[9]", dts[d], "block");
      one(ops[o], dts[d], "[33, 17]", "[0]", "[17]", dts[d], "serial");
      one(ops[o], dts[d], "[6, 40]", "[1]", "[6]", dts[d], "warp");
    }
  one("prod", "f32", "[5, 23]", "[1]", "[5]", "f32", "warp");
  one("prod", "f64", "[23, 5]", "[0]", "[5]", "f64", "serial");
  one("sum", "i32", "[7, 300]", "[1]", "[7]", "i64", "block");
  one("max", "i32", "[7, 300]", "[1]", "[7]", "i32", "block");
  one("min", "i64", "[300, 7]", "[0]", "[7]", "i64", "block"); /* 8 x 64 threads: one block */
  one("min", "i64", "[1100, 7]", "[0]", "[7]", "i64", "grid");
  one("sum", "bool", "[7, 70]", "[1]", "[7]", "i64", "warp");
}

/* Prologue (cast, pow, a broadcast of a smaller input), keepdim and an
 * epilogue (a division and a cast) in one kernel; symbolic sizes. */
static void test_fused_and_symbolic(void) {
  char printed[65536];
  run("fused",
      "fusion @f {\n"
      "  %T0 = input f16[N, 999] {example=randn, example_shape=[13, 999]}\n"
      "  %T1 = input f32[999]\n"
      "  %T2 = cast %T0 : f32[N, 999]\n"
      "  %T3 = broadcast_in_dim %T1 {broadcast_dims=[1]} : f32[N, 999]\n"
      "  %T4 = mul %T2, %T3 : f32[N, 999]\n"
      "  %T5 = pow %T4, 2.0 : f32[N, 999]\n"
      "  %T6 = sum %T5 {axes=[1], keepdim=true} : f32[N, 1]\n"
      "  %T7 = div %T6, 999.0 : f32[N, 1]\n"
      "  %T8 = cast %T7 : bf16[N, 1]\n"
      "  output %T8\n"
      "}\n",
      false, printed, sizeof printed);
  CHECK(strstr(printed, "reduce=block") != NULL);
  /* symbolic sizes: example sizes for the heuristics, guards for any size */
  static const struct {
    const char *name, *text, *expect;
    bool exact;
  } sym[] = {
      {"symbolic outer", "fusion @s {\n  %T0 = input f32[R, C] {example=randn, example_shape=[67, 45]}\n"
                         "  %T1 = sum %T0 {axes=[0]} : f32[C]\n  output %T1\n}\n", "reduce=block", false},
      {"symbolic inner", "fusion @s {\n  %T0 = input f32[R, C] {example=randn, example_shape=[5, 3001]}\n"
                         "  %T1 = max %T0 {axes=[1]} : f32[R]\n  output %T1\n}\n", "tail=guard", true},
  };
  for (size_t i = 0; i < sizeof sym / sizeof sym[0]; i++) {
    run(sym[i].name, sym[i].text, sym[i].exact, printed, sizeof printed);
    CHECK(strstr(printed, sym[i].expect) != NULL);
  }
}

FU_TEST_MAIN(FU_TEST(test_inner_sizes), FU_TEST(test_inner_vectors), FU_TEST(test_grid), FU_TEST(test_outer_split), FU_TEST(test_outer_sizes), FU_TEST(test_all_dims), FU_TEST(test_ops_and_dtypes),
             FU_TEST(test_fused_and_symbolic))
