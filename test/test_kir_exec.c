/* Unit tests for the kernel IR interpreter's lockstep execution: barriers,
 * warp shuffles and shared memory behave as on the GPU, and a divergent
 * barrier, a partial-warp shuffle and a shared-memory race are reported. */
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

FU_TEST_MAIN(FU_TEST(test_block_sum), FU_TEST(test_grid_sum), FU_TEST(test_welford), FU_TEST(test_divergent_barrier), FU_TEST(test_partial_warp_shuffle),
             FU_TEST(test_shared_races))
