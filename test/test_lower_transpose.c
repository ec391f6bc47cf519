/* Tests of transpose segments compiled with the pointwise scheduler's
 * fallback (passes/schedule/schedule.c, passes/schedule/pointwise.c): every fusion
 * below goes through strip-bookend-views, segment, schedule and lower, is
 * printed and parsed back, and its kernels run in the kernel IR interpreter
 * on the inputs' example data; the outputs must equal the fusion
 * interpreter's bit for bit, every output element must be written exactly
 * once and every access must be in bounds and aligned (both checked by the
 * runner).  Cases: permutes inside a segment, permuted and column-major
 * inputs, outputs written permuted for a host permute, the GPU suite's
 * transpose files, small variants of seed001_transpose_bookend imported
 * from Python, odd sizes, symbolic extents, f16, i32 and bool; plus the
 * lane analysis that lets a permuted layout with a contiguous innermost dim
 * keep its vectors, and the schedule's recorded kind. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuser/bookend.h"
#include "fuser/frontend.h"
#include "fuser/index_graph.h"
#include "fuser/kir_interp.h"
#include "fuser/lower.h"
#include "fuser/parse.h"
#include "fuser/print.h"
#include "fuser/schedule.h"
#include "fuser/segment.h"
#include "fuser/verify.h"
#include "diag_capture.h"
#include "harness.h"
#include "kernel_compare.h"

typedef struct result {
  bool ok;
  fu_kir_stats stats;
  uint32_t n_segments, n_transpose, n_kernels, n_kind_recorded;
  int64_t max_numel; /* of the segment outputs with constant shapes */
  char text[65536]; /* the lowered module */
} result;

static bool has(const result *r, const char *s) { return strstr(r->text, s) != NULL; }

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

/* The whole pipeline to kernels, for the H100, with the transpose
 * segments given the pointwise fallback (the tile: test_transpose_tile.c). */
static bool compile(fu_module *m, fu_diag_engine *diag) {
  if (fu_strip_bookend_views(m, NULL) != FU_OK) return false;
  for (fu_fusion *f = m->first; f; f = f->next)
    if (fu_segment_fusion(f, diag, NULL, NULL) != FU_OK) return false;
  fu_device dev;
  if (!fu_device_preset("h100", &dev)) return false;
  fu_schedule_options opt = {.transpose_pointwise = true};
  if (fu_schedule_module_with(m, &dev, &opt, diag, NULL) != FU_OK) return false;
  if (fu_lower_module(m, diag, NULL) != FU_OK) return false;
  return fu_verify_module(m, diag) == FU_OK;
}

static void count_segments(fu_module *m, result *r) {
  for (fu_fusion *f = m->first; f; f = f->next)
    for (fu_op *op = f->body.first; op; op = op->next) {
      if (op->kind != FU_OP_SEGMENT) continue;
      const fu_segment_info *si = &op->u.segment;
      r->n_segments++;
      if (si->kernel) r->n_kernels++;
      for (uint32_t i = 0; i < si->n_outputs; i++) {
        int64_t n = fu_type_numel(&si->outputs[i]->type);
        if (n > r->max_numel) r->max_numel = n;
      }
      if (si->kind == FU_SK_TRANSPOSE) {
        r->n_transpose++;
        if (si->schedule && si->schedule->kind == FU_SK_TRANSPOSE) r->n_kind_recorded++;
      }
    }
}

/* Both interpreters on every fusion of lowered module m; true when every
 * output agrees bit for bit. */
static bool run_and_compare(const char *name, fu_module *m, fu_diag_engine *diag, capture *cap, result *r) {
  bool all_ok = true;
  for (fu_fusion *f = m->first; f; f = f->next) {
    fu_input_options io;
    memset(&io, 0, sizeof io);
    io.seed = 11;
    io.random = true; /* inputs without example data (the lit files') */
    if (!compare_with_kernels(name, f, &io, 0.0, diag, cap->text, &r->stats)) all_ok = false;
  }
  return all_ok;
}

/* When check_module runs the kernels. */
enum { RUN_NEVER, RUN_ALWAYS, RUN_IF_ALL_LOWERED };
enum { SMALL_NUMEL = 1 << 17 };

/* Compiles module m (parsed or imported, verified; freed here), prints and
 * re-parses it (the text must print the same), then runs the re-parsed
 * module with both interpreters as `run` says (RUN_IF_ALL_LOWERED: only
 * for a transpose segment small enough for the kernel IR interpreter, when
 * every segment has a kernel: segments of kinds the pointwise scheduler
 * does not take have none yet). */
static void check_module(const char *name, fu_module *m, fu_diag_engine *diag, capture *cap, int run, result *r) {
  if (!compile(m, diag)) {
    fu_test_fail(__FILE__, __LINE__, "%s: compile failed:\n%s", name, cap->text);
    fu_module_free(m);
    return;
  }
  count_segments(m, r);
  fu_strbuf p1, p2;
  fu_strbuf_init(&p1, fu_default_allocator());
  fu_strbuf_init(&p2, fu_default_allocator());
  fu_print_module(&p1, m, NULL);
  fu_source src2;
  fu_module *m2 = parse_text(name, p1.data, diag, &src2);
  if (!m2) {
    fu_test_fail(__FILE__, __LINE__, "%s: the lowered module does not parse back:\n%s\n%s", name, cap->text, p1.data);
  } else {
    fu_print_module(&p2, m2, NULL);
    CHECK_STR(p2.data, p1.data);
    snprintf(r->text, sizeof r->text, "%s", p1.data);
    /* scheduling again changes nothing (the schedules are kept) */
    fu_device dev;
    fu_device_preset("h100", &dev);
    CHECK(fu_schedule_module(m2, &dev, diag, NULL) == FU_OK);
    fu_strbuf_clear(&p2);
    fu_print_module(&p2, m2, NULL);
    CHECK_STR(p2.data, p1.data);
    if (run == RUN_IF_ALL_LOWERED)
      run = r->n_kernels == r->n_segments && r->n_transpose > 0 && r->max_numel <= SMALL_NUMEL ? RUN_ALWAYS : RUN_NEVER;
    r->ok = run == RUN_ALWAYS ? run_and_compare(name, m2, diag, cap, r) : true;
    if (!r->ok) fprintf(stderr, "---- %s ----\n%s\n", name, p1.data);
    fu_module_free(m2);
  }
  fu_strbuf_free(&p1);
  fu_strbuf_free(&p2);
  fu_module_free(m);
}

static void run_fir_mode(const char *name, const char *text, int run, result *r) {
  memset(r, 0, sizeof *r);
  capture cap;
  fu_diag_engine diag;
  diag_capture(&diag, &cap);
  fu_source src;
  fu_module *m = parse_text(name, text, &diag, &src);
  if (!m) {
    fu_test_fail(__FILE__, __LINE__, "%s: does not parse:\n%s", name, cap.text);
    return;
  }
  check_module(name, m, &diag, &cap, run, r);
}

static void run_fir(const char *name, const char *text, result *r) { run_fir_mode(name, text, RUN_ALWAYS, r); }

static char *read_file(const char *path) {
  FILE *fp = fopen(path, "rb");
  if (!fp) return NULL;
  char *buf = NULL;
  if (fseek(fp, 0, SEEK_END) == 0) {
    long n = ftell(fp);
    if (n >= 0 && fseek(fp, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1))) {
      size_t got = fread(buf, 1, (size_t)n, fp);
      buf[got] = '\0';
    }
  }
  fclose(fp);
  return buf;
}

/* An nvFuser script imported with the Python frontend, then as run_fir;
 * `run` false for sizes too large for the kernel IR interpreter. */
static void run_py(const char *name, const char *text, int run, result *r) {
  memset(r, 0, sizeof *r);
  capture cap;
  fu_diag_engine diag;
  diag_capture(&diag, &cap);
  fu_source src = {name, text, strlen(text), 1};
  fu_module *m = NULL;
  if (fu_py_import(&src, fu_default_allocator(), &diag, NULL, &m) != FU_OK || !m) {
    fu_test_fail(__FILE__, __LINE__, "%s: import failed:\n%s", name, cap.text);
    return;
  }
  check_module(name, m, &diag, &cap, run, r);
}

/* ---- the GPU suite's transpose files ----------------------------------------------- */

static void test_gpu_files(void) {
  static const char *files[] = {"colmajor_input", "permute_views", "transpose_copy"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/test/gpu/%s.fir", FUSER_SOURCE_DIR, files[i]);
    char *text = read_file(path);
    CHECK(text != NULL);
    if (!text) continue;
    result *r = calloc(1, sizeof *r);
    run_fir(files[i], text, r);
    CHECK(r->ok);
    CHECK_EQ_INT(r->n_transpose, 1);
    CHECK_EQ_INT(r->n_kind_recorded, 1);
    CHECK_EQ_INT(r->n_kernels, r->n_segments);
    CHECK(has(r, "kind=transpose}"));
    if (i == 0) {
      /* the column-major input is read lane by lane, the rest as vectors */
      CHECK(has(r, "tensor %B {memory=global, access=scalar}"));
      CHECK(has(r, "tensor %A {memory=global, access=vector}"));
      CHECK(r->stats.vector_stores > 0);
    }
    if (i == 1) {
      /* rows of 33: no access can be a vector, and the output is written
       * in the layout that makes the host permute's result dense */
      CHECK(!has(r, "vectorize"));
      CHECK_EQ_INT(r->stats.vector_loads + r->stats.vector_stores, 0);
    }
    if (i == 2) {
      CHECK(has(r, "tensor %T1 {memory=global, access=scalar}"));
      CHECK(has(r, "store.v4 %T2["));
    }
    free(r);
    free(text);
  }
}

/* ---- seed001_transpose_bookend --------------------------------------------------------- */

/* The seed's fusion with [a*h, s, d] -> [a, h, s, d] -> permute [a, s, h, d]
 * -> set -> [a, s, h*d] -> [a*s, h*d]. */
static void seed_variant(char *buf, size_t cap, int a, int h, int s, int d) {
  snprintf(buf, cap,
           "import torch\n"
           "from torch._C._nvfuser import Fusion, FusionDefinition, DataType\n"
           "def nvfuser_fusion_id0(fd : FusionDefinition) -> None :\n"
           "    T0 = fd.define_tensor(symbolic_sizes=[-1, -1, -1], contiguous=[True, True, True], "
           "dtype=DataType.Float)\n"
           "    T1 = fd.ops.view(T0, original_shape=[%d, %d, %d], new_shape=[%d, %d, %d, %d])\n"
           "    T2 = fd.ops.permute(T1, dims=[0, 2, 1, 3])\n"
           "    T3 = fd.ops.set(T2)\n"
           "    T4 = fd.ops.view(T3, original_shape=[%d, %d, %d, %d], new_shape=[%d, %d, %d])\n"
           "    T5 = fd.ops.view(T4, original_shape=[%d, %d, %d], new_shape=[%d, %d])\n"
           "    fd.add_output(T5)\n"
           "fs = Fusion()\n"
           "with FusionDefinition(fs) as fd :\n"
           "    nvfuser_fusion_id0(fd)\n"
           "inputs = [\n"
           "    torch.randn(%d, %d, %d, device='cuda')\n"
           "]\n",
           a * h, s, d, a, h, s, d, a, s, h, d, a, s, h * d, a, s, h * d, a * s, h * d, a * h, s, d);
}

static void test_seed_transpose_bookend(void) {
  /* the seed itself (768 x 128 x 64): compiled, not run (too large for the
   * kernel IR interpreter); its rows of 64 stay contiguous through the
   * permute, so it reads and writes whole vectors */
  char path[1024];
  snprintf(path, sizeof path, "%s/test/fusions/seed001_transpose_bookend.py", FUSER_SOURCE_DIR);
  char *text = read_file(path);
  CHECK(text != NULL);
  result *r = calloc(1, sizeof *r);
  if (text) {
    run_py("seed001_transpose_bookend", text, RUN_NEVER, r);
    CHECK(r->ok);
    CHECK_EQ_INT(r->n_transpose, 1);
    CHECK_EQ_INT(r->n_kind_recorded, 1);
    CHECK(has(r, "load.v4 %T2["));
    CHECK(has(r, "store.v4 %T3["));
    CHECK(has(r, "segment @g0 transpose (%T2) -> (%T3)"));
    free(text);
  }
  /* small variants, run: vectors (d = 8), none (d = 7, 5), d = 1, single
   * heads and batches */
  static const int sizes[][4] = {{4, 3, 5, 8}, {2, 3, 5, 7}, {3, 2, 4, 5}, {2, 3, 4, 1}, {1, 5, 3, 4}, {3, 1, 2, 16}, {2, 12, 3, 64}};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    char py[2048], name[64];
    seed_variant(py, sizeof py, sizes[i][0], sizes[i][1], sizes[i][2], sizes[i][3]);
    snprintf(name, sizeof name, "seed001_small_%d_%d_%d_%d", sizes[i][0], sizes[i][1], sizes[i][2], sizes[i][3]);
    memset(r, 0, sizeof *r);
    run_py(name, py, RUN_ALWAYS, r);
    CHECK(r->ok);
    CHECK_EQ_INT(r->n_kernels, r->n_segments);
    CHECK_EQ_INT(r->n_kind_recorded, r->n_transpose);
    if (sizes[i][3] % 4 == 0 && sizes[i][1] > 1 && sizes[i][2] > 1) {
      CHECK_EQ_INT(r->n_transpose, 1);
      CHECK(r->stats.vector_loads > 0);
    }
  }
  free(r);
}

/* ---- permutes inside a segment --------------------------------------------------------- */

static void test_permute_inside(void) {
  result *r = calloc(1, sizeof *r);
  /* the permute's operand is computed in the kernel: it stays inside */
  run_fir("inner2d",
          "fusion @inner2d {\n"
          "  %T0 = input f32[33, 65] {example=randn, seed=1}\n"
          "  %T1 = input f32[65, 33] {example=randn, seed=2}\n"
          "  %T2 = exp %T0 : f32[33, 65]\n"
          "  %T3 = permute %T2 {dims=[1, 0]} : f32[65, 33]\n"
          "  %T4 = add %T3, %T1 : f32[65, 33]\n"
          "  output %T4\n"
          "}\n",
          r);
  CHECK(r->ok);
  CHECK_EQ_INT(r->n_transpose, 1);
  CHECK(has(r, "%T3 = permute %T2 {dims=[1, 0]} : f32[65, 33]"));
  CHECK(has(r, "tensor %T0 {memory=global, access=scalar}"));
  CHECK(has(r, "load.v4 %T1["));
  CHECK(has(r, "store.v4 %T4["));
  /* 3-D, a symbolic extent, f16 in and out */
  run_fir("inner3d",
          "fusion @inner3d {\n"
          "  %T0 = input f16[N, 6, 10] {example=randn, seed=3, example_shape=[7, 6, 10]}\n"
          "  %T1 = cast %T0 : f32[N, 6, 10]\n"
          "  %T2 = permute %T1 {dims=[2, 0, 1]} : f32[10, N, 6]\n"
          "  %T3 = input f32[10, N, 6] {example=randn, seed=4, example_shape=[10, 7, 6]}\n"
          "  %T4 = mul %T2, %T3 : f32[10, N, 6]\n"
          "  %T5 = cast %T4 : f16[10, N, 6]\n"
          "  output %T5\n"
          "}\n",
          r);
  CHECK(r->ok);
  CHECK_EQ_INT(r->n_transpose, 1);
  CHECK(has(r, "index=i64"));
  /* one input read through two permutes of different orders */
  run_fir("two_orders",
          "fusion @two_orders {\n"
          "  %T0 = input f32[5, 6, 7] {example=randn, seed=5}\n"
          "  %T1 = neg %T0 : f32[5, 6, 7]\n"
          "  %T2 = permute %T1 {dims=[2, 1, 0]} : f32[7, 6, 5]\n"
          "  %T3 = permute %T1 {dims=[2, 0, 1]} : f32[7, 5, 6]\n"
          "  %T4 = permute %T3 {dims=[0, 2, 1]} : f32[7, 6, 5]\n"
          "  %T5 = sub %T2, %T4 : f32[7, 6, 5]\n"
          "  %T6 = add %T5, %T2 : f32[7, 6, 5]\n"
          "  output %T6\n"
          "}\n",
          r);
  CHECK(r->ok);
  /* a permute of a broadcast, ints and a bool mask read permuted */
  run_fir("int_bool",
          "fusion @int_bool {\n"
          "  %T0 = input i32[9, 13] {example=randint, low=-20, high=20, seed=6}\n"
          "  %T1 = input f32[13] {example=randn, seed=7}\n"
          "  %T2 = broadcast_in_dim %T1 {broadcast_dims=[0]} : f32[13, 9]\n"
          "  %T3 = mul %T0, 3 : i32[9, 13]\n"
          "  %T4 = permute %T3 {dims=[1, 0]} : i32[13, 9]\n"
          "  %T5 = cast %T4 : f32[13, 9]\n"
          "  %T6 = gt %T5, %T2 : bool[13, 9]\n"
          "  %T7 = where %T6, %T5, %T2 : f32[13, 9]\n"
          "  output %T7, %T6\n"
          "}\n",
          r);
  CHECK(r->ok);
  free(r);
}

/* ---- permuted inputs and outputs written permuted ------------------------------------- */

static void test_permuted_layouts(void) {
  result *r = calloc(1, sizeof *r);
  /* the output feeds a host permute: the kernel writes it permuted (lane
   * by lane) and reads its input with vectors */
  run_fir("out_permuted",
          "fusion @out_permuted {\n"
          "  %T0 = input f32[37, 64] {example=randn, seed=1}\n"
          "  %T1 = tanh %T0 : f32[37, 64]\n"
          "  %T2 = permute %T1 {dims=[1, 0]} : f32[64, 37]\n"
          "  output %T2\n"
          "}\n",
          r);
  CHECK(r->ok);
  CHECK(has(r, "%T2 = permute %T1 {dims=[1, 0], host=true}"));
  CHECK(has(r, "tensor %T1 {memory=global, access=scalar}"));
  CHECK(has(r, "load.v4 %T0["));
  CHECK(r->stats.vector_loads > 0);
  CHECK_EQ_INT(r->stats.vector_stores, 0);
  /* a column-major input in, a permuted output out */
  run_fir("both",
          "fusion @both {\n"
          "  %T0 = input f32[24, 40] {stride_order=[0, 1], example=randn, seed=2}\n"
          "  %T1 = input f32[24, 40] {example=randn, seed=3}\n"
          "  %T2 = add %T0, %T1 : f32[24, 40]\n"
          "  %T3 = permute %T2 {dims=[1, 0]} : f32[40, 24]\n"
          "  output %T3\n"
          "}\n",
          r);
  CHECK(r->ok);
  CHECK_EQ_INT(r->n_transpose, 1);
  /* a kernel value that is an output and also permuted into another: the
   * permute stays in the kernel, which writes both */
  run_fir("out_and_permuted",
          "fusion @oap {\n"
          "  %T0 = input f32[20, 12] {example=randn, seed=4}\n"
          "  %T1 = exp %T0 : f32[20, 12]\n"
          "  %T2 = permute %T1 {dims=[1, 0]} : f32[12, 20]\n"
          "  %T3 = mul %T0, 2.0 : f32[20, 12]\n"
          "  output %T1, %T2, %T3\n"
          "}\n",
          r);
  CHECK(r->ok);
  CHECK_EQ_INT(r->n_kernels, r->n_segments);
  /* a permuted input through a host permute with a non-contiguous dim
   * (a run-time stride) */
  run_fir("strided_permuted",
          "fusion @sp {\n"
          "  %T0 = input f32[N, M] {contiguity=[false, true], example=randn, seed=5, example_shape=[9, 11]}\n"
          "  %T1 = permute %T0 {dims=[1, 0]} : f32[M, N]\n"
          "  %T2 = sqrt %T1 : f32[M, N]\n"
          "  %T3 = abs %T2 : f32[M, N]\n"
          "  output %T3\n"
          "}\n",
          r);
  CHECK(r->ok);
  CHECK(has(r, "stride=%T1 dim=1)")); /* the run-time stride of the permuted non-contiguous dim */
  /* 4-D with size-1 dims and a permuted output chain (permute, reshape) */
  run_fir("four_d",
          "fusion @four_d {\n"
          "  %T0 = input bf16[3, 1, 5, 8] {example=randn, seed=6}\n"
          "  %T1 = cast %T0 : f32[3, 1, 5, 8]\n"
          "  %T2 = mul %T1, %T1 : f32[3, 1, 5, 8]\n"
          "  %T3 = permute %T2 {dims=[3, 1, 0, 2]} : f32[8, 1, 3, 5]\n"
          "  %T4 = reshape %T3 : f32[8, 15]\n"
          "  output %T4\n"
          "}\n",
          r);
  CHECK(r->ok);
  free(r);
}

/* ---- odd sizes ---------------------------------------------------------------------------- */

static void test_odd_sizes(void) {
  static const int64_t sizes[][2] = {{1, 1}, {1, 7}, {3, 5}, {17, 129}, {255, 3}, {2, 1023}, {64, 64}};
  result *r = calloc(1, sizeof *r);
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    char text[1024];
    long long n = (long long)sizes[i][0], m = (long long)sizes[i][1];
    snprintf(text, sizeof text,
             "fusion @odd {\n"
             "  %%T0 = input f32[%lld, %lld] {example=randn, seed=8}\n"
             "  %%T1 = permute %%T0 {dims=[1, 0]} : f32[%lld, %lld]\n"
             "  %%T2 = add %%T1, 1.0 : f32[%lld, %lld]\n"
             "  %%T3 = exp %%T0 : f32[%lld, %lld]\n"
             "  %%T4 = permute %%T3 {dims=[1, 0]} : f32[%lld, %lld]\n"
             "  %%T5 = mul %%T2, %%T4 : f32[%lld, %lld]\n"
             "  output %%T5\n"
             "}\n",
             n, m, m, n, m, n, n, m, m, n, m, n);
    run_fir("odd", text, r);
    CHECK(r->ok);
    CHECK_EQ_INT(r->n_kernels, r->n_segments);
    /* symbolic sizes bound to the same odd values */
    snprintf(text, sizeof text,
             "fusion @odd_sym {\n"
             "  %%T0 = input f32[N, M] {example=randn, seed=9, example_shape=[%lld, %lld]}\n"
             "  %%T1 = permute %%T0 {dims=[1, 0]} : f32[M, N]\n"
             "  %%T2 = add %%T1, 1.0 : f32[M, N]\n"
             "  output %%T2\n"
             "}\n",
             n, m);
    run_fir("odd_sym", text, r);
    CHECK(r->ok);
    CHECK(has(r, "tail=guard"));
  }
  free(r);
}

/* ---- the transpose cases of the lit suite ------------------------------------------------- */

/* Every chunk of the segment and strip-bookend-views tests that have
 * transpose segments, compiled and run where every segment is lowered
 * (random inputs, unbound symbols 4). */
static void test_lit_files(void) {
  static const char *files[] = {"lit/segment/transpose.fir", "lit/segment/host.fir",
                                "lit/strip-bookend-views/moves.fir", "lit/strip-bookend-views/stays.fir"};
  result *r = calloc(1, sizeof *r);
  uint32_t n_transpose = 0;
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", FUSER_SOURCE_DIR, files[i]);
    char *text = read_file(path);
    CHECK(text != NULL);
    for (char *chunk = text; chunk && *chunk;) {
      char *sep = strstr(chunk, "\n// -----");
      if (sep) *sep = '\0';
      if (strstr(chunk, "fusion @")) {
        char name[1100];
        snprintf(name, sizeof name, "%s chunk at byte %ld", files[i], (long)(chunk - text));
        run_fir_mode(name, chunk, RUN_IF_ALL_LOWERED, r);
        CHECK(r->ok);
        CHECK_EQ_INT(r->n_kind_recorded, r->n_transpose);
        if (r->n_kernels == r->n_segments && r->max_numel <= SMALL_NUMEL) n_transpose += r->n_transpose;
      }
      chunk = sep ? sep + 10 : NULL;
    }
    free(text);
  }
  CHECK(n_transpose >= 6);
  free(r);
}

/* ---- the lane analysis and the schedule's kind ------------------------------------------- */

static void test_lane_analysis(void) {
  fu_ix_ctx *c = fu_ix_ctx_new(fu_default_allocator());
  const fu_ix *v = fu_ix_var(c, "v", FU_IG_VAR_LOOP, NULL, 0, 4);
  const fu_ix *tx = fu_ix_var(c, "tx", FU_IG_VAR_LOOP, NULL, 1, 128);
  const fu_ix *bx = fu_ix_var(c, "bx", FU_IG_VAR_LOOP, NULL, 2, 0);
  const fu_ix *lin = fu_ix_add(c, v, fu_ix_mul(c, tx, fu_ix_const(c, 4)));
  /* (v + tx*4) / 64: the same in every lane */
  const fu_ix *q = fu_ix_div(c, lin, fu_ix_const(c, 64));
  fu_ix_lane l = fu_ix_lane_analyze(q, v, 4);
  CHECK(l.ok);
  CHECK_EQ_INT(l.stride, 0);
  /* ((bx*8 + q) % 12) * 8192 + (v + tx*4) % 64: the seed's permuted input,
   * contiguous and aligned along the vector */
  const fu_ix *d2 = fu_ix_mod(c, fu_ix_add(c, fu_ix_mul(c, bx, fu_ix_const(c, 8)), q), fu_ix_const(c, 12));
  const fu_ix *off = fu_ix_add(c, fu_ix_mul(c, d2, fu_ix_const(c, 8192)), fu_ix_mod(c, lin, fu_ix_const(c, 64)));
  l = fu_ix_lane_analyze(off, v, 4);
  CHECK(l.ok);
  CHECK_EQ_INT(l.stride, 1);
  CHECK(l.align != 0 && l.align % 4 == 0);
  /* a lane-invariant dim times a symbolic stride stays lane-invariant */
  const fu_ix *sym = fu_ix_mul(c, fu_ix_mod(c, q, fu_ix_sym(c, "N")), fu_ix_sym(c, "M"));
  l = fu_ix_lane_analyze(sym, v, 4);
  CHECK(l.ok);
  CHECK_EQ_INT(l.stride, 0);
  /* but a varying index divided by a symbol or by 6 may cross a boundary */
  CHECK(!fu_ix_lane_analyze(fu_ix_div(c, lin, fu_ix_sym(c, "N")), v, 4).ok);
  CHECK(!fu_ix_lane_analyze(fu_ix_mod(c, lin, fu_ix_const(c, 6)), v, 4).ok);
  /* and a lane times a symbol is not affine with a known stride */
  CHECK(!fu_ix_lane_analyze(fu_ix_mul(c, lin, fu_ix_sym(c, "M")), v, 4).ok);
  CHECK(!fu_ix_failed(c));
  fu_ix_ctx_free(c);
}

static void test_schedule_kind(void) {
  capture cap;
  fu_diag_engine diag;
  diag_capture(&diag, &cap);
  fu_source src;
  /* a schedule made for a transpose segment, in a pointwise segment */
  fu_module *m = parse_text("mismatch",
                            "fusion @f {\n"
                            "  %T0 = input f32[8, 4]\n"
                            "  segment @g0 pointwise (%T0) -> (%T1) {\n"
                            "    %T1 = neg %T0 : f32[8, 4]\n"
                            "    schedule {kind=transpose} {\n"
                            "      reference %T1 [a, b]\n"
                            "      merge a, b -> m\n"
                            "      loop [m: threadIdx.x]\n"
                            "    }\n"
                            "  }\n"
                            "  output %T1\n"
                            "}\n",
                            &diag, &src);
  CHECK(m == NULL);
  CHECK(strstr(cap.text, "the schedule was made for a transpose segment, but segment '@g0' is a pointwise segment") !=
        NULL);
  if (m) fu_module_free(m);
  /* the same schedule without a kind is a hand-written one: accepted in a
   * transpose segment, and lowered */
  diag_capture(&diag, &cap);
  result *r = calloc(1, sizeof *r);
  run_fir("hand",
          "fusion @hand {\n"
          "  %T0 = input f32[8, 4] {stride_order=[0, 1], example=randn, seed=1}\n"
          "  segment @g0 transpose (%T0) -> (%T1) {\n"
          "    %T1 = neg %T0 : f32[8, 4]\n"
          "    schedule {\n"
          "      reference %T1 [a, b]\n"
          "      merge a, b -> m\n"
          "      loop [m: threadIdx.x]\n"
          "    }\n"
          "  }\n"
          "  output %T1\n"
          "}\n",
          r);
  CHECK(r->ok);
  CHECK(has(r, "    schedule {\n"));
  CHECK_EQ_INT(r->n_kind_recorded, 0);
  /* an unknown header attribute still names every valid one */
  diag_capture(&diag, &cap);
  m = parse_text("bad",
                 "fusion @f {\n"
                 "  %T0 = input f32[8, 4]\n"
                 "  segment @g0 transpose (%T0) -> (%T1) {\n"
                 "    %T1 = neg %T0 : f32[8, 4]\n"
                 "    schedule {knd=transpose} {\n"
                 "      reference %T1 [a, b]\n"
                 "      merge a, b -> m\n"
                 "      loop [m: threadIdx.x]\n"
                 "    }\n"
                 "  }\n"
                 "  output %T1\n"
                 "}\n",
                 &diag, &src);
  CHECK(m == NULL);
  CHECK(strstr(cap.text, "valid: device, arch, index, kind") != NULL);
  if (m) fu_module_free(m);
  free(r);
}

FU_TEST_MAIN(FU_TEST(test_lane_analysis), FU_TEST(test_schedule_kind), FU_TEST(test_gpu_files),
             FU_TEST(test_seed_transpose_bookend), FU_TEST(test_permute_inside), FU_TEST(test_permuted_layouts),
             FU_TEST(test_odd_sizes), FU_TEST(test_lit_files))
