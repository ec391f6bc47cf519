/* The reference interpreter on several threads, and its fast conversion
 * paths: results must be the same bits as one thread's and as the plain
 * definitions (a triple loop for matmul, half.c's double routes for the
 * 16-bit floats). */
#include <math.h>
#include <stdlib.h>

#include "../lib/interp/interp_internal.h"
#include "fuser/check.h"
#include "test_interp_util.h"

/* Outputs (and bounds) of one run, freed by the caller. */
typedef struct run_out {
  fu_arg *out, *bound;
  uint32_t n;
} run_out;

static run_out run_threads(ti_prog *p, const fu_arg *in, uint32_t n_in, uint32_t threads) {
  run_out r = {NULL, NULL, 0};
  fu_interp_options o = {.threads = threads};
  fu_status st = fu_interp_run_bounded(p->f, in, n_in, &o, fu_default_allocator(), &p->diag, &r.out, &r.bound, &r.n);
  CHECK_EQ_INT(st, FU_OK);
  return r;
}

static void free_run(run_out *r) {
  fu_args_free(r->out, r->n, fu_default_allocator());
  fu_args_free(r->bound, r->n, fu_default_allocator());
}

static bool same_arg(const fu_arg *a, const fu_arg *b) {
  if (a->kind != b->kind) return false;
  if (a->kind != FU_ARG_TENSOR) return memcmp(&a->scalar, &b->scalar, sizeof a->scalar) == 0;
  const fu_host_tensor *x = &a->tensor, *y = &b->tensor;
  if (x->dtype != y->dtype || x->rank != y->rank) return false;
  int64_t n = fu_host_tensor_numel(x);
  return n == fu_host_tensor_numel(y) && memcmp(x->data, y->data, (size_t)n * fu_dtype_size(x->dtype)) == 0;
}

/* Every op family the loops split, with sizes above the grain and tails;
 * the outputs and their error bounds agree bit for bit across counts. */
static void test_threads_same_bits(void) {
  ti_prog p;
  CHECK(ti_parse(&p, "fusion @t {\n"
                     "  %T0 = input bf16[3, 301, 257] {example=randn, example_shape=[3, 301, 257]}\n"
                     "  %T1 = input f32[130, 257] {example=randn, seed=1, example_shape=[130, 257]}\n"
                     "  %T2 = input i32[301, 257] {example=randint, low=-3, high=4, example_shape=[301, 257]}\n"
                     "  %T3 = cast %T0 : f32[3, 301, 257]\n"
                     "  %T4 = sum %T3 {axes=[2], keepdim=true} : f32[3, 301, 1]\n"
                     "  %T5 = broadcast_in_dim %T4 {broadcast_dims=[0, 1, 2]} : f32[3, 301, 257]\n"
                     "  %T6 = sub %T3, %T5 : f32[3, 301, 257]\n"
                     "  %T7 = linear %T6, %T1 : f32[3, 301, 130]\n"
                     "  %T8 = sum %T2 {axes=[0]} : i64[257]\n"
                     "  %T9, %T10 = var_mean %T6 {axes=[0, 2], correction=0} : f32[301], f32[301]\n"
                     "  %T11 = cast %T6 : bf16[3, 301, 257]\n"
                     "  output %T7, %T8, %T9, %T10, %T11, %T6\n}\n"));
  fu_input_options io = {.threads = 1};
  fu_arg *in1 = NULL, *in3 = NULL;
  uint32_t n1 = 0, n3 = 0;
  CHECK_EQ_INT(fu_interp_make_inputs(p.f, &io, fu_default_allocator(), &p.diag, &in1, &n1), FU_OK);
  io.threads = 3;
  CHECK_EQ_INT(fu_interp_make_inputs(p.f, &io, fu_default_allocator(), &p.diag, &in3, &n3), FU_OK);
  CHECK_EQ_INT(n1, 3);
  for (uint32_t i = 0; i < n1 && i < n3; i++) CHECK(same_arg(&in1[i], &in3[i]));
  run_out one = run_threads(&p, in1, n1, 1);
  uint32_t counts[] = {2, 3, 5, 64};
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
    run_out many = run_threads(&p, in1, n1, counts[c]);
    CHECK_EQ_INT(many.n, one.n);
    for (uint32_t i = 0; i < one.n && i < many.n; i++) {
      if (!same_arg(&one.out[i], &many.out[i])) fu_test_fail(__FILE__, __LINE__, "output %u differs with %u threads", i, counts[c]);
      if (!same_arg(&one.bound[i], &many.bound[i]))
        fu_test_fail(__FILE__, __LINE__, "bound %u differs with %u threads", i, counts[c]);
    }
    free_run(&many);
  }
  CHECK(one.n == 6 && one.bound[0].kind == FU_ARG_TENSOR); /* the linear after a sum carries a bound */
  free_run(&one);
  fu_args_free(in1, n1, fu_default_allocator());
  fu_args_free(in3, n3, fu_default_allocator());
  ti_free(&p);
}

/* matmul and linear keep a triple loop's order for every element: start
 * from the bias (or 0), add a[i][k] * b[k][j] in f64 for k = 0, 1, ...,
 * round once to f32: compared bit for bit, with sizes that leave partial
 * tiles in rows and columns, and a large K so that a different order
 * would show in the rounding. */
static void test_matmul_triple_loop_order(void) {
  enum { B = 2, M = 37, K = 301, N = 70 };
  ti_prog p;
  CHECK(ti_parse(&p, "fusion @mm {\n  %T0 = input f32[2, 37, 301]\n  %T1 = input f32[301, 70]\n"
                     "  %T2 = input f32[70, 301]\n  %T3 = input f32[70]\n"
                     "  %T4 = matmul %T0, %T1 : f32[2, 37, 70]\n"
                     "  %T5 = linear %T0, %T2, %T3 : f32[2, 37, 70]\n  output %T4, %T5\n}\n"));
  static double a[B * M * K], b[K * N], w[N * K], bias[N];
  uint64_t s = 7;
  for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) a[i] = (float)((double)((s = s * 6364136223846793005u + 1) >> 11) * 0x1p-50 - 2);
  for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) b[i] = (float)((double)((s = s * 6364136223846793005u + 1) >> 11) * 0x1p-52 - 1);
  for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) w[i] = (float)((double)((s = s * 6364136223846793005u + 1) >> 11) * 0x1p-49);
  for (size_t i = 0; i < N; i++) bias[i] = (float)((double)i * 0.1 - 3);
  /* +-2^60 at both ends of every sum: in order the small terms between
   * are lost against 2^60 and the ends cancel; any other grouping of the
   * terms keeps some of them */
  for (int r = 0; r < B * M; r++) {
    a[r * K] = 0x1p30;
    a[r * K + K - 1] = -0x1p30;
  }
  for (int j = 0; j < N; j++) b[j] = b[(K - 1) * N + j] = w[j * K] = w[j * K + K - 1] = 0x1p30;
  int64_t sa[] = {B, M, K}, sb[] = {K, N}, sw[] = {N, K}, sbias[] = {N};
  fu_arg in[4] = {ti_tensor(FU_DT_F32, 3, sa, a), ti_tensor(FU_DT_F32, 2, sb, b), ti_tensor(FU_DT_F32, 2, sw, w),
                  ti_tensor(FU_DT_F32, 1, sbias, bias)};
  for (uint32_t threads = 1; threads <= 3; threads += 2) {
    fu_arg *out = NULL;
    uint32_t n = 0;
    fu_interp_options o = {.threads = threads};
    CHECK_EQ_INT(fu_interp_run(p.f, in, 4, &o, fu_default_allocator(), &p.diag, &out, &n), FU_OK);
    CHECK_EQ_INT(n, 2);
    const float *mm = out[0].tensor.data, *lin = out[1].tensor.data;
    int bad = 0;
    for (int bi = 0; bi < B; bi++)
      for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
          double x = 0, y = bias[j];
          for (int k = 0; k < K; k++) {
            x += a[(bi * M + i) * K + k] * b[k * N + j];
            y += a[(bi * M + i) * K + k] * w[j * K + k];
          }
          bad += (float)x != mm[(bi * M + i) * N + j] || (float)y != lin[(bi * M + i) * N + j];
        }
    if (bad) fu_test_fail(__FILE__, __LINE__, "%d elements differ from the triple loop with %u threads", bad, threads);
    fu_args_free(out, n, fu_default_allocator());
  }
  for (int i = 0; i < 4; i++) fu_arg_free(&in[i]);
  ti_free(&p);
}

/* The f32 compute kind's 16-bit loads and stores work on the float's bits;
 * they must give what the double routes give: a store is half.c's rounding
 * of the float widened (exact), a load half.c's exact widening narrowed
 * with fu_interp_d2f (a NaN becomes the default NaN of its sign). */
static void test_half_conversions(void) {
  enum { N = 4096 };
  static float f[N];
  static uint16_t h[N];
  static float back[N];
  int bad = 0;
  for (uint64_t base = 0; base < (UINT64_C(1) << 32); base += (UINT64_C(1) << 32) / 1024) {
    for (int i = 0; i < N; i++) f[i] = fu_interp_f32_of_bits((uint32_t)(base + (uint64_t)i * 977 + (i & 1 ? 0x1000 : 0)));
    for (int fmt = 0; fmt < 2; fmt++) {
      fu_dtype dt = fmt ? FU_DT_F16 : FU_DT_BF16;
      fu_interp_store(dt, h, 1, N, FU_CK_F32, f);
      for (int i = 0; i < N; i++) {
        uint16_t want = fmt ? fu_f16_from_double(f[i]) : fu_bf16_from_double(f[i]);
        bad += h[i] != want;
      }
    }
  }
  CHECK_EQ_INT(bad, 0);
  for (int fmt = 0; fmt < 2; fmt++) {
    fu_dtype dt = fmt ? FU_DT_F16 : FU_DT_BF16;
    for (uint32_t base = 0; base < 65536; base += N) {
      for (int i = 0; i < N; i++) h[i] = (uint16_t)(base + (uint32_t)i);
      fu_interp_load(dt, h, 1, N, FU_CK_F32, back);
      for (int i = 0; i < N; i++) {
        double d = fmt ? fu_f16_to_double(h[i]) : fu_bf16_to_double(h[i]);
        uint32_t want = fu_interp_f32_bits(fu_interp_d2f(d)), got = fu_interp_f32_bits(back[i]);
        bad += want != got;
      }
    }
  }
  CHECK_EQ_INT(bad, 0);
}

/* fu_bf16_from_double's fast path (a double in bf16's normal range rounds
 * on its own bits) against rounding by comparison: the two bf16 neighbours
 * of x, the nearer one, the even one on a tie. */
static void test_bf16_from_double(void) {
  uint64_t s = 99;
  int bad = 0;
  for (int i = 0; i < 200000; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    int e = (int)(s % 250) - 124; /* 2^-124 .. 2^125 */
    double x = ldexp(1.0 + (double)(s >> 12) * 0x1p-52, e);
    if (i % 3 == 1) x = ldexp(1.0 + (double)((s >> 12) & ~((UINT64_C(1) << 45) - 1)) * 0x1p-52 + 0x1p-8, e); /* ties */
    if (i & 1) x = -x;
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    uint64_t lo_bits = b & ~((UINT64_C(1) << 45) - 1);
    double lo, hi;
    memcpy(&lo, &lo_bits, sizeof lo);
    hi = lo + copysign(ldexp(1.0, ilogb(lo) - 7), x);
    double dl = fabs(x - lo), dh = fabs(hi - x);
    double pick = dl < dh ? lo : dh < dl ? hi : (((lo_bits >> 45) & 1) ? hi : lo);
    uint16_t want = fu_bf16_from_double(pick), got = fu_bf16_from_double(x); /* pick is exact in bf16 */
    double wv = fu_bf16_to_double(want);
    bad += got != want || wv != pick;
  }
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(fu_bf16_from_double(3.4e38), 0x7f80); /* past the largest finite after rounding */
  CHECK_EQ_INT(fu_bf16_from_double(-1.0), 0xbf80);
  CHECK_EQ_INT(fu_bf16_from_double(0x1p-130), 0x0008); /* subnormal: the general path */
}

/* The check's comparison on threads adds up to one thread's: counts,
 * maxima, and the first mismatch in row-major order (here past the
 * middle, so not in the first part). */
static void test_compare_threads(void) {
  enum { R = 300, C = 257 };
  int64_t shape[] = {R, C};
  fu_host_tensor got, want, bound;
  CHECK_EQ_INT(fu_host_tensor_alloc(&got, fu_default_allocator(), FU_DT_F32, 2, shape), FU_OK);
  CHECK_EQ_INT(fu_host_tensor_alloc(&want, fu_default_allocator(), FU_DT_F32, 2, shape), FU_OK);
  CHECK_EQ_INT(fu_host_tensor_alloc(&bound, fu_default_allocator(), FU_DT_F64, 2, shape), FU_OK);
  float *g = got.data, *w = want.data;
  double *b = bound.data;
  for (int i = 0; i < R * C; i++) {
    w[i] = (float)(i % 97) - 40.0f;
    g[i] = w[i] + (i > R * C / 2 && i % 13 == 0 ? 1e-3f * (float)(i % 7) : 0.0f);
    b[i] = i < R * C / 3 ? NAN : (i % 5 == 0 ? 1e-2 : 1e-4);
  }
  g[R * C / 2 + 3] = fu_interp_f32_of_bits(UINT32_MAX); /* the poison */
  fu_check_tolerance tol = {1e-6, 1e-7};
  fu_check_result one, many;
  CHECK_EQ_INT(fu_check_compare_bounded(&got, &want, &bound, tol, &one), FU_OK);
  CHECK(one.n_mismatch > 0 && one.n_poison == 1 && one.n_unscaled > 0 && one.first_mismatch == R * C / 2 + 3);
  for (uint32_t t = 2; t <= 7; t += 5) {
    CHECK_EQ_INT(fu_check_compare_threads(&got, &want, &bound, tol, t, &many), FU_OK);
    CHECK_EQ_INT(many.n_elements, one.n_elements);
    CHECK_EQ_INT(many.n_mismatch, one.n_mismatch);
    CHECK_EQ_INT(many.n_poison, one.n_poison);
    CHECK_EQ_INT(many.n_unscaled, one.n_unscaled);
    CHECK_EQ_INT(many.first_mismatch, one.first_mismatch);
    CHECK(memcmp(&many.got_first, &one.got_first, sizeof one.got_first) == 0 && many.want_first == one.want_first);
    CHECK(many.max_abs_err == one.max_abs_err && many.max_rel_err == one.max_rel_err);
    CHECK(many.max_bound_ratio == one.max_bound_ratio && many.bounded == one.bounded);
  }
  fu_host_tensor_free(&got);
  fu_host_tensor_free(&want);
  fu_host_tensor_free(&bound);
}

FU_TEST_MAIN(FU_TEST(test_threads_same_bits), FU_TEST(test_compare_threads), FU_TEST(test_matmul_triple_loop_order), FU_TEST(test_half_conversions),
             FU_TEST(test_bf16_from_double))
