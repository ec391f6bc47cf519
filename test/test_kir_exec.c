/* Unit tests for the kernel IR interpreter's lockstep execution: barriers,
 * warp shuffles and shared memory behave as on the GPU, and a divergent
 * barrier, a partial-warp shuffle and a shared-memory race are reported.
 * Thread-block clusters: a cluster's blocks run together, `sync cluster`
 * and reads of another block's shared memory work, and a race across
 * blocks, a read of a finished block, a bad rank and a grid that is not a
 * whole number of clusters are reported. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diag_capture.h"
#include "fuser/kir_interp.h"
#include "fuser/kir_text.h"
#include "harness.h"

/* Parses one kernel of `text` (verified); NULL on failure. */
static fu_kernel *parse(fu_module *m, const char *text) {
  fu_source src = {"t.kir", text, strlen(text), 1};
  capture cap;
  fu_diag_engine diag;
  diag_capture(&diag, &cap);
  fu_kernel *k = NULL;
  fu_status st = fu_kernel_parse(&src, m, &diag, &k);
  if (st != FU_OK) fprintf(stderr, "%s", cap.text);
  return st == FU_OK ? k : NULL;
}

/* Runs k on args over `grid` blocks; the diagnostics go to `cap`. */
static fu_status run(const fu_kernel *k, const fu_kir_arg *args, int64_t grid_x, capture *cap) {
  fu_diag_engine diag;
  diag_capture(&diag, cap);
  int64_t grid[3] = {grid_x, 1, 1};
  return fu_kir_run(k, args, grid, fu_default_allocator(), &diag, NULL);
}

/* The kernels of lit/backend/NAME (parsed into m), and the one named `kname`. */
static fu_kernel *load_kernel(fu_module *m, const char *file, const char *kname) {
  char path[512];
  snprintf(path, sizeof path, "%s/lit/backend/%s", FUSER_SOURCE_DIR, file);
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL);
  if (!f) return NULL;
  static char text[1 << 16];
  size_t len = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[len] = 0;
  fu_source src = {file, text, len, 1};
  capture cap;
  fu_diag_engine diag;
  diag_capture(&diag, &cap);
  fu_kernel **ks = NULL;
  uint32_t n = 0;
  if (fu_kernel_parse_list(&src, m, &diag, &ks, &n) != FU_OK) {
    fprintf(stderr, "%s", cap.text);
    return NULL;
  }
  for (uint32_t i = 0; i < n; i++)
    if (strcmp(ks[i]->name, kname) == 0) return ks[i];
  return NULL;
}

/* A buffer argument. */
static fu_kir_arg buf(void *data, int64_t n) {
  fu_kir_arg a;
  memset(&a, 0, sizeof a);
  a.data = data;
  a.n_elems = n;
  return a;
}

/* Small integers, so that every partial sum in f32 is exact. */
static float small_int(int64_t i) { return (float)((i * 7) % 13) - 6.0f; }

static void test_block_sum(void) {
  fu_module *m = fu_module_new(fu_default_allocator());
  /* a block sum per row: a strided serial loop, a butterfly of shuffles,
   * one partial per warp in shared memory, a barrier, thread 0 adds them */
  fu_kernel *k = load_kernel(m, "reduction.kir", "row_sum");
  CHECK(k != NULL);
  if (!k) return;
  static const int32_t sizes[] = {1, 3, 33, 127, 1023, 4097};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    int32_t n = sizes[s], rows = 3;
    float *in = malloc(sizeof(float) * (size_t)(n * rows));
    float out[3] = {0, 0, 0};
    for (int32_t i = 0; i < n * rows; i++) in[i] = small_int(i);
    fu_kir_arg args[3] = {buf(in, n * rows), buf(out, rows), buf(NULL, 0)};
    args[2].scalar.i = n;
    capture cap;
    CHECK_EQ_INT(run(k, args, rows, &cap), FU_OK);
    if (cap.n_errors) fprintf(stderr, "%s", cap.text);
    for (int32_t r = 0; r < rows; r++) {
      double want = 0;
      for (int32_t i = 0; i < n; i++) want += in[r * n + i];
      CHECK_NEAR(out[r], want, 1e-3); /* small integers: every partial sum is exact */
    }
    free(in);
  }
  fu_module_free(m);
}

/* Runs a one-block kernel over a 64-element f32 buffer and returns the
 * status; the diagnostics land in cap. */
static fu_status run_small(const char *text, capture *cap) {
  fu_module *m = fu_module_new(fu_default_allocator());
  fu_kernel *k = parse(m, text);
  CHECK(k != NULL);
  fu_status st = FU_ERR_VERIFY;
  if (k) {
    float data[64] = {0};
    fu_kir_arg args[1] = {buf(data, 64)};
    st = run(k, args, 2, cap);
  }
  fu_module_free(m);
  return st;
}

#define HEADER(threads)                                                                          \
  "kernel @k (%T0: global f32 noalias) grid=[1, 1, 1] block=[" threads ", 1, 1] smem=0 index=i32 {\n" \
  "  %buf = array shared f32[64]\n"                                                              \
  "  %tid = special thread_idx.x : i32\n"                                                        \
  "  %c0 = const 0 : i32\n"                                                                      \
  "  %c1 = const 1 : i32\n"                                                                      \
  "  %c32 = const 32 : i32\n"                                                                    \
  "  %x = cast %tid : f32\n"

static void test_divergent_barrier(void) {
  capture cap;
  /* two different barriers */
  CHECK_EQ_INT(run_small(HEADER("64") "  %p = lt %tid, %c32 : bool\n"
                                      "  if %p {\n    sync\n  } else {\n    sync\n  }\n}\n",
                         &cap),
               FU_ERR_RUNTIME);
  CHECK(strstr(cap.text, "kernel '@k', block (0, 0, 0), thread (32, 0, 0): divergent barrier: thread (0, 0, 0) "
                         "waits at sync #1, this thread is at sync #2") != NULL);
  /* a barrier some threads never reach */
  CHECK_EQ_INT(run_small(HEADER("64") "  %p = lt %tid, %c32 : bool\n  if %p {\n    sync\n  }\n}\n", &cap),
               FU_ERR_RUNTIME);
  CHECK(strstr(cap.text, "thread (32, 0, 0): this thread finished while thread (0, 0, 0) waits at sync #1") != NULL);
  /* the same barrier in different iterations of a loop */
  CHECK_EQ_INT(run_small(HEADER("64") "  %e = add %c1, %c1 : i32\n"
                                      "  for %i = %c0 to %e step %c1 {\n"
                                      "    %a = lt %tid, %c32 : bool\n"
                                      "    %b = eq %i, %c0 : bool\n"
                                      "    %p = eq %a, %b : bool\n"
                                      "    if %p {\n      sync\n    }\n  }\n}\n",
                         &cap),
               FU_ERR_RUNTIME);
  CHECK(strstr(cap.text, "divergent barrier: thread (0, 0, 0) waits at sync #1, this thread is there in another "
                         "loop iteration") != NULL);
  /* a barrier in a loop that every thread runs the same number of times is fine */
  CHECK_EQ_INT(run_small(HEADER("64") "  %e = add %c1, %c1 : i32\n"
                                      "  for %i = %c0 to %e step %c1 {\n    sync\n  }\n}\n",
                         &cap),
               FU_OK);
}

static void test_partial_warp_shuffle(void) {
  capture cap;
  CHECK_EQ_INT(run_small(HEADER("32") "  %c16 = const 16 : i32\n"
                                      "  %p = lt %tid, %c16 : bool\n"
                                      "  if %p {\n    %y = shfl.xor %x, 1 : f32\n  }\n}\n",
                         &cap),
               FU_ERR_RUNTIME);
  CHECK(strstr(cap.text, "thread (16, 0, 0): 'shfl.xor' #1 is reached by only part of a warp: thread (0, 0, 0) is "
                         "there, this thread has finished") != NULL);
  CHECK_EQ_INT(run_small(HEADER("48") "  %y = shfl.xor %x, 1 : f32\n}\n", &cap), FU_ERR_RUNTIME);
  CHECK(strstr(cap.text, "in a partial warp of 16 threads") != NULL);
  /* shuffles in a uniform loop and a uniform branch: every lane gets its partner's value */
  CHECK_EQ_INT(run_small(HEADER("64") "  %acc = mutable f32\n"
                                      "  assign %acc, %x\n"
                                      "  %c3 = const 3 : i32\n"
                                      "  for %i = %c0 to %c3 step %c1 {\n"
                                      "    %a = read %acc : f32\n"
                                      "    %t = lt %c0, %c1 : bool\n"
                                      "    if %t {\n"
                                      "      %y = shfl.xor %a, 1 : f32\n"
                                      "      assign %acc, %y\n"
                                      "    }\n"
                                      "  }\n"
                                      "  %r = read %acc : f32\n"
                                      "  %want = cast %tid : f32\n"
                                      "  %xor1 = bitwise_xor %tid, %c1 : i32\n"
                                      "  %w1 = cast %xor1 : f32\n"
                                      "  %ok = eq %r, %w1 : bool\n"
                                      "  %bad = logical_not %ok : bool\n"
                                      "  if %bad {\n"
                                      "    %c999 = const 999 : i32\n"
                                      "    store %T0[%c999], %r\n"
                                      "  }\n"
                                      "}\n",
                         &cap),
               FU_OK);
}

static void test_shared_races(void) {
  capture cap;
  /* thread 0 writes an element that the others read without a barrier in between */
  CHECK_EQ_INT(run_small(HEADER("64") "  %p = eq %tid, %c0 : bool\n"
                                      "  if %p {\n    store %buf[%c0], %x\n  }\n"
                                      "  %y = load %buf[%c0] : f32\n"
                                      "  store %T0[%tid], %y\n}\n",
                         &cap),
               FU_ERR_RUNTIME);
  CHECK(strstr(cap.text, "thread (1, 0, 0): shared-memory race on '%buf' element 0: this thread reads it and thread "
                         "(0, 0, 0) wrote it since the last barrier") != NULL);
  /* two writers */
  CHECK_EQ_INT(run_small(HEADER("64") "  store %buf[%c0], %x\n}\n", &cap), FU_ERR_RUNTIME);
  CHECK(strstr(cap.text, "this thread writes it and thread (0, 0, 0) wrote it") != NULL);
  /* a read, then another thread's write of the same element */
  CHECK_EQ_INT(run_small(HEADER("64") "  %y = load %buf[%c1] : f32\n"
                                      "  %p = eq %tid, %c32 : bool\n"
                                      "  if %p {\n    store %buf[%c1], %x\n  }\n}\n",
                         &cap),
               FU_ERR_RUNTIME);
  CHECK(strstr(cap.text, "thread (32, 0, 0): shared-memory race on '%buf' element 1: this thread writes it and "
                         "another thread read it") != NULL);
  /* race-free: each thread writes its element, a barrier, each reads its neighbour's, a barrier, writes again */
  CHECK_EQ_INT(run_small(HEADER("64") "  store %buf[%tid], %x\n"
                                      "  sync\n"
                                      "  %n = bitwise_xor %tid, %c1 : i32\n"
                                      "  %y = load %buf[%n] : f32\n"
                                      "  sync\n"
                                      "  store %buf[%tid], %y\n"
                                      "  %z = load %buf[%tid] : f32\n"
                                      "  store %T0[%tid], %z\n}\n",
                         &cap),
               FU_OK);
  CHECK_EQ_INT(cap.n_errors, 0);
}

/* The two-level grid reduction of lit/backend/grid_reduction.kir: block
 * partials in a workspace, the last block by semaphore adds them in a fixed
 * order and resets the semaphore (checked: a zeroed workspace must be zero
 * again when the kernel ends). */
static void test_grid_sum(void) {
  fu_module *m = fu_module_new(fu_default_allocator());
  fu_kernel *k = load_kernel(m, "grid_reduction.kir", "grid_sum");
  CHECK(k != NULL);
  if (!k) return;
  static const int32_t sizes[] = {1, 3, 33, 512, 1023, 4097, 7919, 65537};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    int32_t n = sizes[s], blocks = (n + 511) / 512;
    float *in = malloc(sizeof(float) * (size_t)n), out = -1;
    float *partials = malloc(sizeof(float) * (size_t)blocks);
    int32_t sem = 0;
    double want = 0;
    for (int32_t i = 0; i < n; i++) want += in[i] = small_int(i);
    fu_kir_arg args[5] = {buf(in, n), buf(&out, 1), buf(NULL, 0), buf(partials, blocks), buf(&sem, 1)};
    args[2].scalar.i = n;
    capture cap;
    CHECK_EQ_INT(run(k, args, blocks, &cap), FU_OK);
    if (cap.n_errors) fprintf(stderr, "%s", cap.text);
    CHECK_NEAR(out, want, 0);
    CHECK_EQ_INT(sem, 0);
    /* a semaphore left set is reported */
    sem = 5;
    CHECK_EQ_INT(run(k, args, blocks, &cap), FU_ERR_RUNTIME);
    CHECK(strstr(cap.text, "kernel '@grid_sum' left zeroed workspace '%sem' non-zero at element 0") != NULL);
    free(in);
    free(partials);
  }
  fu_module_free(m);
}

/* lit/backend/welford.kir: a warp's Welford combine over rows with a large
 * mean matches an f64 two-pass reference to f32 accuracy. */
static void test_welford(void) {
  fu_module *m = fu_module_new(fu_default_allocator());
  fu_kernel *k = load_kernel(m, "welford.kir", "welford_rows");
  CHECK(k != NULL);
  if (!k) return;
  static const int32_t sizes[] = {1, 3, 33, 1023, 4097};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    int32_t n = sizes[s], rows = 3;
    float *in = malloc(sizeof(float) * (size_t)(n * rows)), mean[3], var[3];
    for (int32_t i = 0; i < n * rows; i++) in[i] = 1e4f + 0.1f * small_int(i * 3 + 1);
    fu_kir_arg args[4] = {buf(in, n * rows), buf(mean, rows), buf(var, rows), buf(NULL, 0)};
    args[3].scalar.i = n;
    capture cap;
    CHECK_EQ_INT(run(k, args, rows, &cap), FU_OK);
    if (cap.n_errors) fprintf(stderr, "%s", cap.text);
    for (int32_t r = 0; r < rows; r++) {
      double mu = 0, v = 0;
      for (int32_t i = 0; i < n; i++) mu += in[r * n + i];
      mu /= n;
      for (int32_t i = 0; i < n; i++) v += (in[r * n + i] - mu) * (in[r * n + i] - mu);
      v /= n;
      CHECK_NEAR(mean[r], mu, 2.5e-3); /* an ulp of f32 at 1e4 is 9.8e-4 */
      CHECK_NEAR(var[r], v, 1e-3 + 1e-3 * v);
    }
    free(in);
  }
  fu_module_free(m);
}

/* ---- thread-block clusters ---------------------------------------------------------------------- */

/* Runs kernel `text` over grid_x blocks; stats (may be NULL) accumulate. */
static fu_status run_text(const char *text, fu_kir_arg *args, int64_t grid_x, capture *cap, fu_kir_stats *stats) {
  fu_module *m = fu_module_new(fu_default_allocator());
  fu_kernel *k = parse(m, text);
  CHECK(k != NULL);
  fu_status st = FU_ERR_VERIFY;
  if (k) {
    fu_diag_engine diag;
    diag_capture(&diag, cap);
    int64_t grid[3] = {grid_x, 1, 1};
    st = fu_kir_run(k, args, grid, fu_default_allocator(), &diag, stats);
  }
  fu_module_free(m);
  return st;
}

/* lit/kir/roundtrip.kir's @cluster_pairs: thread 0 of each block writes
 * its block index to its shared slot; after a cluster barrier each block
 * reads its partner's slot (rank 1 - rank) and stores it. */
static const char cluster_pairs[] =
    "kernel @cluster_pairs (%T0: global f32 noalias align=4)\n"
    "    grid=[8, 1, 1] block=[32, 1, 1] smem=0 cluster=2 index=i32 {\n"
    "  %slot = array shared f32[1]\n"
    "  %c0 = const 0 : i32\n"
    "  %c1 = const 1 : i32\n"
    "  %rank = special cluster_rank : i32\n"
    "  %tid = special thread_idx.x : i32\n"
    "  %bid = special block_idx.x : i32\n"
    "  %first = eq %tid, %c0 : bool\n"
    "  if %first {\n"
    "    %x = cast %bid : f32\n"
    "    store %slot[%c0], %x\n"
    "  }\n"
    "  sync cluster\n"
    "  %other = sub %c1, %rank : i32\n"
    "  %y = load %slot[%c0] cta %other : f32\n"
    "  sync cluster\n"
    "  if %first {\n"
    "    store %T0[%bid], %y\n"
    "  }\n"
    "}\n";

static void test_cluster_pairs(void) {
  float out[8];
  for (int i = 0; i < 8; i++) out[i] = -1;
  fu_kir_arg args[1] = {buf(out, 8)};
  capture cap;
  fu_kir_stats st = {0};
  CHECK_EQ_INT(run_text(cluster_pairs, args, 8, &cap, &st), FU_OK);
  if (cap.n_errors) fprintf(stderr, "%s", cap.text);
  for (int b = 0; b < 8; b++) CHECK_NEAR(out[b], b ^ 1, 0);
  /* per block: 32 remote loads; thread 0 stores the slot and the output */
  CHECK_EQ_INT(st.loads, 8 * 32);
  CHECK_EQ_INT(st.stores, 8 + 8);
  /* a grid that is not a whole number of clusters is refused */
  CHECK_EQ_INT(run_text(cluster_pairs, args, 7, &cap, NULL), FU_ERR_INVALID_ARG);
  CHECK(strstr(cap.text, "kernel '@cluster_pairs': grid x extent 7 is not a multiple of the cluster's 2 blocks "
                         "(cluster=2)") != NULL);
}

/* A cluster sum: each block of 64 threads (two warps) reduces its 64
 * inputs (shuffles, then shared memory and a block barrier) to a partial
 * in shared memory; after a cluster barrier every thread reads the C
 * partials in rank order, and thread 0 stores the total.  `tail` ends the
 * kernel (a correct one: a second cluster barrier). */
static void cluster_sum_text(char *text, size_t n, unsigned c, const char *tail) {
  snprintf(text, n,
           "kernel @csum (%%in: global f32 readonly noalias, %%out: global f32 noalias, %%ranks: global i32 noalias)\n"
           "    grid=[1, 1, 1] block=[64, 1, 1] smem=0 cluster=%u index=i32 {\n"
           "  %%wsum = array shared f32[2]\n"
           "  %%part = array shared f32[1]\n"
           "  %%acc = mutable f32\n"
           "  %%tid = special thread_idx.x : i32\n"
           "  %%bid = special block_idx.x : i32\n"
           "  %%rank = special cluster_rank : i32\n"
           "  %%c0 = const 0 : i32\n"
           "  %%c1 = const 1 : i32\n"
           "  %%c32 = const 32 : i32\n"
           "  %%c64 = const 64 : i32\n"
           "  %%cn = const %u : i32\n"
           "  %%b64 = mul %%bid, %%c64 : i32\n"
           "  %%i = add %%b64, %%tid : i32\n"
           "  %%x0 = load %%in[%%i] : f32\n"
           "  %%y1 = shfl.xor %%x0, 16 : f32\n"
           "  %%x1 = add %%x0, %%y1 : f32\n"
           "  %%y2 = shfl.xor %%x1, 8 : f32\n"
           "  %%x2 = add %%x1, %%y2 : f32\n"
           "  %%y3 = shfl.xor %%x2, 4 : f32\n"
           "  %%x3 = add %%x2, %%y3 : f32\n"
           "  %%y4 = shfl.xor %%x3, 2 : f32\n"
           "  %%x4 = add %%x3, %%y4 : f32\n"
           "  %%y5 = shfl.xor %%x4, 1 : f32\n"
           "  %%x5 = add %%x4, %%y5 : f32\n"
           "  %%warp = div %%tid, %%c32 : i32\n"
           "  %%lane = remainder %%tid, %%c32 : i32\n"
           "  %%lead = eq %%lane, %%c0 : bool\n"
           "  if %%lead {\n"
           "    store %%wsum[%%warp], %%x5\n"
           "  }\n"
           "  sync\n"
           "  %%first = eq %%tid, %%c0 : bool\n"
           "  if %%first {\n"
           "    %%a = load %%wsum[%%c0] : f32\n"
           "    %%b = load %%wsum[%%c1] : f32\n"
           "    %%p = add %%a, %%b : f32\n"
           "    store %%part[%%c0], %%p\n"
           "    store %%ranks[%%bid], %%rank\n"
           "  }\n"
           "  sync cluster\n"
           "  %%f0 = const 0.0 : f32\n"
           "  assign %%acc, %%f0\n"
           "  for %%r = %%c0 to %%cn step %%c1 {\n"
           "    %%v = load %%part[%%c0] cta %%r : f32\n"
           "    %%a0 = read %%acc : f32\n"
           "    %%a1 = add %%a0, %%v : f32\n"
           "    assign %%acc, %%a1\n"
           "  }\n"
           "%s"
           "  if %%first {\n"
           "    %%t = read %%acc : f32\n"
           "    store %%out[%%bid], %%t\n"
           "  }\n"
           "}\n",
           c, c, tail);
}

static void test_cluster_sum(void) {
  static const unsigned sizes[] = {2, 4, 8};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    unsigned c = sizes[s];
    int32_t blocks = 3 * (int32_t)c, n = 64 * blocks; /* three clusters */
    char text[4096];
    cluster_sum_text(text, sizeof text, c, "  sync cluster\n");
    float *in = malloc(sizeof(float) * (size_t)n), out[24];
    int32_t ranks[24];
    for (int32_t i = 0; i < n; i++) in[i] = small_int(i * 5 + 2);
    for (int32_t b = 0; b < blocks; b++) {
      out[b] = -1;
      ranks[b] = -1;
    }
    fu_kir_arg args[3] = {buf(in, n), buf(out, blocks), buf(ranks, blocks)};
    capture cap;
    fu_kir_stats st = {0};
    CHECK_EQ_INT(run_text(text, args, blocks, &cap, &st), FU_OK);
    if (cap.n_errors) fprintf(stderr, "%s", cap.text);
    for (int32_t b = 0; b < blocks; b++) {
      int32_t base = b / (int32_t)c * (int32_t)c;
      double want = 0;
      for (int32_t i = base * 64; i < (base + (int32_t)c) * 64; i++) want += in[i];
      CHECK_NEAR(out[b], want, 0); /* small integers: every partial sum is exact */
      CHECK_EQ_INT(ranks[b], b % (int32_t)c);
    }
    /* per block: 64 input loads, 2 shared loads, C remote loads per thread */
    CHECK_EQ_INT(st.loads, (uint64_t)blocks * (64 + 2 + 64 * c));
    /* without the second cluster barrier a block may exit while another
     * still reads its partial: the read of a finished block is reported */
    cluster_sum_text(text, sizeof text, c, "");
    CHECK_EQ_INT(run_text(text, args, blocks, &cap, NULL), FU_ERR_RUNTIME);
    CHECK(strstr(cap.text, "kernel '@csum', block (1, 0, 0), thread (0, 0, 0): load from '%part' of block (0, 0, 0) "
                           "(cluster rank 0), which has finished: a block must not exit while others read its "
                           "shared memory; put a `sync cluster` before the end") != NULL);
    free(in);
  }
}

/* Two clusters of two blocks of 32 threads, over a 64-element f32 buffer;
 * `body` follows the common definitions (%slot: a shared f32[4]). */
static fu_status run_cluster2(const char *body, capture *cap) {
  char text[4096];
  snprintf(text, sizeof text,
           "kernel @k (%%T0: global f32 noalias) grid=[4, 1, 1] block=[32, 1, 1] smem=0 cluster=2 index=i32 {\n"
           "  %%slot = array shared f32[4]\n"
           "  %%tid = special thread_idx.x : i32\n"
           "  %%bid = special block_idx.x : i32\n"
           "  %%rank = special cluster_rank : i32\n"
           "  %%c0 = const 0 : i32\n"
           "  %%c1 = const 1 : i32\n"
           "  %%first = eq %%tid, %%c0 : bool\n"
           "  %%other = sub %%c1, %%rank : i32\n"
           "  %%x = cast %%bid : f32\n"
           "%s}\n",
           body);
  float data[64] = {0};
  fu_kir_arg args[1] = {buf(data, 64)};
  return run_text(text, args, 4, cap, NULL);
}

static void test_cluster_races(void) {
  capture cap;
  /* a block barrier does not order another block's accesses: rank 1's
   * threads read rank 0's slot, which rank 0 wrote (and then passed its own
   * barrier) since the last cluster barrier */
  CHECK_EQ_INT(run_cluster2("  if %first {\n    store %slot[%c0], %x\n  }\n"
                            "  sync\n"
                            "  %y = load %slot[%c0] cta %c0 : f32\n"
                            "  sync cluster\n",
                            &cap),
               FU_ERR_RUNTIME);
  CHECK(strstr(cap.text, "kernel '@k', block (1, 0, 0), thread (0, 0, 0): shared-memory race on '%slot' element 0 of "
                         "block (0, 0, 0): this thread reads it and thread (0, 0, 0) of block (0, 0, 0) wrote it since "
                         "the last cluster barrier") != NULL);
  /* the other order: rank 0 reads rank 1's slot while rank 1 waits at a
   * barrier of its own, then rank 1 writes it */
  CHECK_EQ_INT(run_cluster2("  %p = eq %rank, %c1 : bool\n"
                            "  if %p {\n    sync\n  }\n"
                            "  %y = load %slot[%c0] cta %c1 : f32\n"
                            "  if %first {\n    store %slot[%c0], %x\n  }\n"
                            "  sync cluster\n",
                            &cap),
               FU_ERR_RUNTIME);
  CHECK(strstr(cap.text, "kernel '@k', block (1, 0, 0), thread (0, 0, 0): shared-memory race on '%slot' element 0: "
                         "this thread writes it and threads of other blocks read it since the last cluster barrier") !=
        NULL);
  /* one reader: its thread is named */
  CHECK_EQ_INT(run_cluster2("  %p = eq %rank, %c1 : bool\n"
                            "  if %p {\n    sync\n  }\n"
                            "  %q = logical_not %p : bool\n"
                            "  %r = logical_and %q, %first : bool\n"
                            "  if %r {\n    %y = load %slot[%c1] cta %c1 : f32\n  }\n"
                            "  if %first {\n    store %slot[%c1], %x\n  }\n"
                            "  sync cluster\n",
                            &cap),
               FU_ERR_RUNTIME);
  CHECK(strstr(cap.text, "kernel '@k', block (1, 0, 0), thread (0, 0, 0): shared-memory race on '%slot' element 1: "
                         "this thread writes it and thread (0, 0, 0) of block (0, 0, 0) read it since the last cluster "
                         "barrier") != NULL);
  /* a write after another block's read, with only a block barrier between */
  CHECK_EQ_INT(run_cluster2("  if %first {\n    store %slot[%c0], %x\n  }\n"
                            "  sync cluster\n"
                            "  %y = load %slot[%c0] cta %other : f32\n"
                            "  sync\n"
                            "  if %first {\n    store %slot[%c0], %y\n  }\n"
                            "  sync cluster\n",
                            &cap),
               FU_ERR_RUNTIME);
  CHECK(strstr(cap.text, "kernel '@k', block (0, 0, 0), thread (0, 0, 0): shared-memory race on '%slot' element 0: "
                         "this thread writes it and threads of other blocks read it since the last cluster barrier") !=
        NULL);
  /* the same with a cluster barrier between the read and the write: race-free */
  CHECK_EQ_INT(run_cluster2("  if %first {\n    store %slot[%c0], %x\n  }\n"
                            "  sync cluster\n"
                            "  %y = load %slot[%c0] cta %other : f32\n"
                            "  sync cluster\n"
                            "  if %first {\n    store %slot[%c0], %y\n  }\n"
                            "  sync cluster\n"
                            "  %z = load %slot[%c0] cta %other : f32\n"
                            "  store %T0[%bid], %z\n"
                            "  sync cluster\n",
                            &cap),
               FU_OK);
  CHECK_EQ_INT(cap.n_errors, 0);
}

static void test_cluster_errors(void) {
  capture cap;
  /* rank 0 reads rank 1's slot and exits; rank 1 then exits with that read unordered */
  CHECK_EQ_INT(run_cluster2("  if %first {\n    store %slot[%c0], %x\n  }\n"
                            "  sync cluster\n"
                            "  %p = eq %rank, %c0 : bool\n"
                            "  if %p {\n    %y = load %slot[%c0] cta %c1 : f32\n  }\n",
                            &cap),
               FU_ERR_RUNTIME);
  CHECK(strstr(cap.text, "kernel '@k', block (1, 0, 0), thread (31, 0, 0): this thread's block finished, but thread "
                         "(31, 0, 0) of block (0, 0, 0) read its '%slot' since the last cluster barrier: a block must "
                         "not exit while others read its shared memory; put a `sync cluster` before the end") != NULL);
  /* ranks out of range, and an index out of range in another block's copy */
  CHECK_EQ_INT(run_cluster2("  %c2 = const 2 : i32\n  %y = load %slot[%c0] cta %c2 : f32\n", &cap), FU_ERR_RUNTIME);
  CHECK(strstr(cap.text, "kernel '@k', block (0, 0, 0), thread (0, 0, 0): load from '%slot' of cluster rank 2: the "
                         "rank is out of range (the cluster has 2 blocks)") != NULL);
  CHECK_EQ_INT(run_cluster2("  %m1 = const -1 : i32\n  %y = load %slot[%c0] cta %m1 : f32\n", &cap), FU_ERR_RUNTIME);
  CHECK(strstr(cap.text, "load from '%slot' of cluster rank -1: the rank is out of range") != NULL);
  CHECK_EQ_INT(run_cluster2("  %c4 = const 4 : i32\n  %y = load %slot[%c4] cta %other : f32\n", &cap),
               FU_ERR_RUNTIME);
  CHECK(strstr(cap.text, "load of 1 element of '%slot' of block (1, 0, 0) at index 4 is out of bounds (4 elements)") !=
        NULL);
  /* blocks at different cluster barriers */
  CHECK_EQ_INT(run_cluster2("  %p = eq %rank, %c0 : bool\n"
                            "  if %p {\n    sync cluster\n  } else {\n    sync cluster\n  }\n",
                            &cap),
               FU_ERR_RUNTIME);
  CHECK(strstr(cap.text, "kernel '@k', block (1, 0, 0), thread (0, 0, 0): divergent barrier: thread (0, 0, 0) of block "
                         "(0, 0, 0) waits at sync cluster #1, this thread is at sync cluster #2") != NULL);
  /* a block that finishes while the other waits at a cluster barrier */
  CHECK_EQ_INT(run_cluster2("  %p = eq %rank, %c1 : bool\n  if %p {\n    sync cluster\n  }\n", &cap),
               FU_ERR_RUNTIME);
  CHECK(strstr(cap.text, "kernel '@k', block (0, 0, 0), thread (0, 0, 0): this thread finished while thread (0, 0, 0) "
                         "of block (1, 0, 0) waits at sync cluster #1") != NULL);
  /* within one block: half the threads at a cluster barrier, half at a block barrier */
  CHECK_EQ_INT(run_cluster2("  %c16 = const 16 : i32\n  %p = lt %tid, %c16 : bool\n"
                            "  if %p {\n    sync cluster\n  } else {\n    sync\n  }\n",
                            &cap),
               FU_ERR_RUNTIME);
  CHECK(strstr(cap.text, "kernel '@k', block (0, 0, 0), thread (16, 0, 0): divergent barrier: thread (0, 0, 0) waits "
                         "at sync cluster #1, this thread is at sync #1") != NULL);
  /* within one block: some threads at a cluster barrier, the others finished */
  CHECK_EQ_INT(run_cluster2("  if %first {\n    sync cluster\n  }\n", &cap), FU_ERR_RUNTIME);
  CHECK(strstr(cap.text, "kernel '@k', block (0, 0, 0), thread (1, 0, 0): this thread finished while thread (0, 0, 0) "
                         "waits at sync cluster #1") != NULL);
}

/* Blocks pass different numbers of their own barriers between two cluster
 * barriers: rank r runs r + 1 rounds of a pairwise exchange through shared
 * memory (two block barriers each), so each block waits at the cluster
 * barrier while the later ranks go on; then each reads its partner's
 * (rank ^ 1) result.  Thread 0 starts at 1 and thread 1 at 2: after n
 * rounds thread 0 holds 3 * 2^(n-1). */
static void test_cluster_interleave(void) {
  static const unsigned sizes[] = {2, 4, 8};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    unsigned c = sizes[s];
    char text[4096];
    snprintf(text, sizeof text,
             "kernel @k (%%T0: global f32 noalias) grid=[1, 1, 1] block=[64, 1, 1] smem=0 cluster=%u index=i32 {\n"
             "  %%buf = array shared f32[64]\n"
             "  %%res = array shared f32[1]\n"
             "  %%acc = mutable f32\n"
             "  %%tid = special thread_idx.x : i32\n"
             "  %%bid = special block_idx.x : i32\n"
             "  %%rank = special cluster_rank : i32\n"
             "  %%c0 = const 0 : i32\n"
             "  %%c1 = const 1 : i32\n"
             "  %%t1 = add %%tid, %%c1 : i32\n"
             "  %%x = cast %%t1 : f32\n"
             "  assign %%acc, %%x\n"
             "  %%nit = add %%rank, %%c1 : i32\n"
             "  for %%it = %%c0 to %%nit step %%c1 {\n"
             "    %%a = read %%acc : f32\n"
             "    store %%buf[%%tid], %%a\n"
             "    sync\n"
             "    %%n = bitwise_xor %%tid, %%c1 : i32\n"
             "    %%b = load %%buf[%%n] : f32\n"
             "    sync\n"
             "    %%ab = add %%a, %%b : f32\n"
             "    assign %%acc, %%ab\n"
             "  }\n"
             "  %%first = eq %%tid, %%c0 : bool\n"
             "  if %%first {\n"
             "    %%v = read %%acc : f32\n"
             "    store %%res[%%c0], %%v\n"
             "  }\n"
             "  sync cluster\n"
             "  %%partner = bitwise_xor %%rank, %%c1 : i32\n"
             "  %%y = load %%res[%%c0] cta %%partner : f32\n"
             "  sync cluster\n"
             "  if %%first {\n"
             "    store %%T0[%%bid], %%y\n"
             "  }\n"
             "}\n",
             c);
    int32_t blocks = 2 * (int32_t)c;
    float out[16];
    for (int32_t b = 0; b < blocks; b++) out[b] = -1;
    fu_kir_arg args[1] = {buf(out, blocks)};
    capture cap;
    fu_kir_stats st = {0};
    CHECK_EQ_INT(run_text(text, args, blocks, &cap, &st), FU_OK);
    if (cap.n_errors) fprintf(stderr, "%s", cap.text);
    for (int32_t b = 0; b < blocks; b++) {
      int32_t partner = (b % (int32_t)c) ^ 1;
      CHECK_NEAR(out[b], 3.0 * (double)(1u << partner), 0);
    }
    /* each round: 64 stores and loads in shared memory, per block rank r + 1 rounds */
    uint64_t rounds = 2 * (uint64_t)c * (c + 1) / 2;
    CHECK_EQ_INT(st.stores, rounds * 64 + (uint64_t)blocks * 2);
    CHECK_EQ_INT(st.loads, rounds * 64 + (uint64_t)blocks * 64);
  }
}

FU_TEST_MAIN(FU_TEST(test_block_sum), FU_TEST(test_grid_sum), FU_TEST(test_welford), FU_TEST(test_divergent_barrier), FU_TEST(test_partial_warp_shuffle),
             FU_TEST(test_shared_races), FU_TEST(test_cluster_pairs), FU_TEST(test_cluster_sum),
             FU_TEST(test_cluster_races), FU_TEST(test_cluster_errors), FU_TEST(test_cluster_interleave))
