/* Unit tests for input binding and example inputs: attributes, overrides,
 * layouts, .npy files, symbol sizes, and the errors for each. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuser/example_sizes.h"
#include "fuser/npy.h"
#include "test_interp_util.h"

static fu_status make(ti_prog *p, const fu_input_options *o, fu_arg **in, uint32_t *n) {
  return fu_interp_make_inputs(p->f, o, fu_default_allocator(), &p->diag, in, n);
}

static void test_binding_errors(void) {
  ti_prog p;
  CHECK(ti_parse(&p, "fusion @b {\n  %T0 = input f32[N, 3]\n  %T1 = input f32[N]\n  %S0 = input f64\n"
                     "  %T2 = mul %T1, %S0\n  output %T0, %T2\n}\n"));
  fu_arg ok[3] = {ti_tensor(FU_DT_F32, 2, TI_SHAPE(2, 3), TI_VALS(1, 2, 3, 4, 5, 6)),
                  ti_tensor(FU_DT_F32, 1, TI_SHAPE(2), TI_VALS(1, 2)), fu_arg_scalar_f(FU_DT_F64, 3)};
  fu_bindings b;
  fu_bindings_init(&b, fu_default_allocator());
  CHECK_EQ_INT(fu_interp_bind_inputs(p.f, ok, 3, &b, &p.diag), FU_OK);
  int64_t v = 0;
  CHECK(fu_bindings_lookup(&b, "N", &v));
  CHECK_EQ_INT(v, 2);
  CHECK(!fu_bindings_lookup(&b, "M", NULL));
  /* resolve a type under the bindings; an unbound symbol is named */
  fu_extent dims[3] = {{0, "N"}, {7, NULL}, {0, "M"}};
  fu_type ty = {FU_DT_F32, 2, dims};
  int64_t shape[3] = {0, 0, 0};
  CHECK_EQ_INT(fu_interp_resolve_shape(&ty, &b, shape, fu_loc_none(), "'%X'", &p.diag), FU_OK);
  CHECK_EQ_INT(shape[0], 2);
  CHECK_EQ_INT(shape[1], 7);
  ty.rank = 3;
  CHECK_EQ_INT(fu_interp_resolve_shape(&ty, &b, shape, fu_loc_none(), "'%X'", &p.diag), FU_ERR_RUNTIME);
  CHECK_HAS(p.cap.text, "symbol 'M' in dim 2 of '%X' is not bound by any input");
  CHECK_EQ_INT(fu_bindings_add(&b, "M", 9, NULL, 0), FU_OK);
  CHECK_EQ_INT(fu_interp_resolve_shape(&ty, &b, shape, fu_loc_none(), "'%X'", &p.diag), FU_OK);
  CHECK_EQ_INT(shape[2], 9);
  fu_bindings_free(&b);
  ti_diag_init(&p);
  CHECK_EQ_INT(ti_run(&p, ok, 3), FU_OK);
  CHECK_VALS(&p.out[1], 0, 3, 6);

  struct {
    int which;
    fu_arg arg;
    const char *msg;
  } cases[] = {
      {1, ti_tensor(FU_DT_F32, 1, TI_SHAPE(5), TI_VALS(1, 2, 3, 4, 5)),
       "symbol 'N' is bound inconsistently: 2 by dim 0 of '%T0', but 5 by dim 0 of input 1 ('%T1')"},
      {0, ti_tensor(FU_DT_F32, 2, TI_SHAPE(2, 4), TI_VALS(1, 2, 3, 4, 5, 6, 7, 8)),
       "input 0 ('%T0') has extent 3 in dim 1 but the argument has 4"},
      {1, ti_tensor(FU_DT_F64, 1, TI_SHAPE(2), TI_VALS(1, 2)), "input 1 ('%T1') is f32 but the argument is f64"},
      {1, ti_tensor(FU_DT_F32, 2, TI_SHAPE(2, 1), TI_VALS(1, 2)), "input 1 ('%T1') has rank 1 but the argument has rank 2"},
      {2, ti_tensor(FU_DT_F64, 0, NULL, TI_VALS(1)), "input 2 ('%S0') is a f64 scalar but the argument is a tensor"},
      {2, fu_arg_scalar_f(FU_DT_F32, 1), "input 2 ('%S0') is f64 but the argument is f32"},
      {0, fu_arg_scalar_f(FU_DT_F32, 1), "input 0 ('%T0') is a tensor but the argument is a scalar"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ti_diag_init(&p);
    fu_arg args[3] = {ok[0], ok[1], ok[2]};
    args[cases[i].which] = cases[i].arg;
    CHECK_EQ_INT(ti_run(&p, args, 3), FU_ERR_INVALID_ARG);
    CHECK_HAS(p.cap.text, cases[i].msg);
    CHECK(p.out == NULL);
    fu_arg_free(&cases[i].arg);
  }
  ti_diag_init(&p);
  CHECK_EQ_INT(ti_run(&p, ok, 2), FU_ERR_INVALID_ARG);
  CHECK_HAS(p.cap.text, "fusion '@b' has 3 inputs but 2 arguments were given");
  for (int i = 0; i < 3; i++) fu_arg_free(&ok[i]);
  ti_free(&p);
}

static void test_example_kinds(void) {
  ti_prog p;
  CHECK(ti_parse(&p,
                 "fusion @e {\n"
                 "  %T0 = input f32[2, 3] {example=ones}\n"
                 "  %T1 = input i32[4] {example=zeros}\n"
                 "  %T2 = input f64[N] {example=randn, seed=5, example_shape=[1000]}\n"
                 "  %T3 = input i64[500] {example=randint, low=-2, high=3}\n"
                 "  %T4 = input f32[N] {example=rand}\n"
                 "  %S0 = input f64 {example=0.25}\n"
                 "  %S1 = input bool {example=true}\n"
                 "  %T5 = input bf16[3]\n"
                 "  %T6 = input f64[N] {example=randn, seed=5}\n"
                 "  %T7 = sub %T2, %T6\n"
                 "  output %T0, %T7\n}\n"));
  fu_arg *in = NULL;
  uint32_t n = 0;
  CHECK_EQ_INT(make(&p, NULL, &in, &n), FU_OK);
  CHECK_EQ_INT(n, 9);
  if (n == 9) {
    CHECK_VALS(&in[0], 0, 1, 1, 1, 1, 1, 1);
    CHECK_VALS(&in[1], 0, 0, 0, 0, 0);
    CHECK_SHAPE(&in[2], FU_DT_F64, 1, 1000);
    CHECK_SHAPE(&in[4], FU_DT_F32, 1, 1000); /* N bound by %T2's example_shape */
    int64_t lo = 100, hi = -100;
    for (int64_t i = 0; i < 500; i++) {
      int64_t x = fu_host_tensor_get_flat_i64(&in[3].tensor, i);
      if (x < lo) lo = x;
      if (x > hi) hi = x;
    }
    CHECK_EQ_INT(lo, -2);
    CHECK_EQ_INT(hi, 2);
    double umin = 1, umax = 0;
    for (int64_t i = 0; i < 1000; i++) {
      double u = fu_host_tensor_get_flat(&in[4].tensor, i);
      umin = fmin(umin, u);
      umax = fmax(umax, u);
    }
    CHECK(umin >= 0 && umax < 1 && umax - umin > 0.9);
    CHECK_EQ_INT(in[5].kind, FU_ARG_SCALAR);
    CHECK_NEAR(in[5].scalar.f, 0.25, 0);
    CHECK(in[6].scalar.b);
    CHECK_EQ_INT(in[7].kind, FU_ARG_TENSOR); /* no example: random */
    /* same seed, different positions: different data */
    fu_compare_result r;
    CHECK_EQ_INT(fu_host_tensor_compare(&in[2].tensor, &in[8].tensor, 0, 0, &r), FU_OK);
    CHECK(r.n_mismatch > 900);
    /* and the run sees them */
    CHECK_EQ_INT(ti_run(&p, in, n), FU_OK);
    CHECK_SHAPE(&p.out[1], FU_DT_F64, 1, 1000);
  }
  /* deterministic: a second call makes identical data */
  fu_arg *again = NULL;
  uint32_t n2 = 0;
  CHECK_EQ_INT(make(&p, NULL, &again, &n2), FU_OK);
  if (n == 9 && n2 == 9) {
    fu_compare_result r;
    for (int i = 0; i < 9; i++) {
      if (in[i].kind != FU_ARG_TENSOR) continue;
      CHECK_EQ_INT(fu_host_tensor_compare(&in[i].tensor, &again[i].tensor, 0, 0, &r), FU_OK);
      CHECK_EQ_INT(r.n_mismatch, 0);
    }
    /* the pinned first value of a seeded input: changes to the generator show */
    fu_rng rng;
    fu_rng_seed(&rng, 5 ^ (UINT64_C(3) * UINT64_C(0x9E3779B97F4A7C15)));
    CHECK_NEAR(fu_host_tensor_get_flat(&in[2].tensor, 0), fu_rng_normal(&rng), 0);
  }
  fu_args_free(in, n, fu_default_allocator());
  fu_args_free(again, n2, fu_default_allocator());
  ti_free(&p);
}

static void test_symbols_and_overrides(void) {
  ti_prog p;
  CHECK(ti_parse(&p, "fusion @s {\n  %T0 = input f32[N, 2]\n  %T1 = input f32[M]\n  output %T0, %T1\n}\n"));
  fu_arg *in = NULL;
  uint32_t n = 0;
  CHECK_EQ_INT(make(&p, NULL, &in, &n), FU_ERR_INVALID_ARG);
  CHECK_HAS(p.cap.text, "input '%T0': symbol 'N' (dim 0) has no size");
  CHECK_HAS(p.cap.text, "--random");
  CHECK(in == NULL);

  fu_input_options o;
  memset(&o, 0, sizeof o);
  o.random = true;
  o.default_extent = 3;
  o.seed = 11;
  ti_diag_init(&p);
  CHECK_EQ_INT(make(&p, &o, &in, &n), FU_OK);
  CHECK_SHAPE(&in[0], FU_DT_F32, 2, 3, 2);
  CHECK_SHAPE(&in[1], FU_DT_F32, 1, 3);
  fu_args_free(in, n, fu_default_allocator());

  /* override one input by name (with or without '%') */
  fu_input_override ov[2] = {{"%T0", FU_INPUT_ONES, NULL}, {"T1", FU_INPUT_RANDOM, NULL}};
  o.overrides = ov;
  o.n_overrides = 2;
  o.random = false;
  ti_diag_init(&p);
  /* T1=random may take a default size; T0=ones may not */
  CHECK_EQ_INT(make(&p, &o, &in, &n), FU_ERR_INVALID_ARG);
  CHECK_HAS(p.cap.text, "input '%T0': symbol 'N' (dim 0) has no size");
  o.random = true;
  ti_diag_init(&p);
  CHECK_EQ_INT(make(&p, &o, &in, &n), FU_OK);
  CHECK_VALS(&in[0], 0, 1, 1, 1, 1, 1, 1);
  fu_args_free(in, n, fu_default_allocator());
  fu_input_override unknown = {"T9", FU_INPUT_ZEROS, NULL};
  o.overrides = &unknown;
  o.n_overrides = 1;
  ti_diag_init(&p);
  CHECK_EQ_INT(make(&p, &o, &in, &n), FU_ERR_INVALID_ARG);
  CHECK_HAS(p.cap.text, "fusion '@s' has no input named '%T9'");
  ti_free(&p);

  /* inconsistent example shapes name the symbol and both sizes (the
   * verifier rejects this in text; edit the IR after verification) */
  CHECK(ti_parse(&p, "fusion @x {\n  %T0 = input f32[N] {example=ones, example_shape=[4]}\n"
                     "  %T1 = input f32[N] {example=zeros, example_shape=[4]}\n  output %T0, %T1\n}\n"));
  fu_op *ops[2];
  CHECK_EQ_INT(fu_interp_inputs_of(p.f, ops, 2), 2);
  ops[1]->u.input.example.shape[0] = 5;
  CHECK_EQ_INT(make(&p, NULL, &in, &n), FU_ERR_INVALID_ARG);
  CHECK_HAS(p.cap.text, "example_shape gives symbol 'N' size 5 in dim 0, but '%T0' bound it to 4");
  ti_free(&p);
}

/* Layouts: stride_order, contiguity false (doubled stride, NaN gaps),
 * broadcast dims, explicit strides. */
static void test_layouts(void) {
  ti_prog p;
  CHECK(ti_parse(&p, "fusion @l {\n"
                     "  %T0 = input f32[2, 3] {stride_order=[0, 1], example=randn}\n"
                     "  %T1 = input f32[2, 3] {contiguity=[true, false], example=randn}\n"
                     "  %T2 = input f32[1, 3] {contiguity=[none, true], example=ones}\n"
                     "  %T3 = input f32[2, 3] {strides=[1, 4], example=zeros}\n"
                     "  %T4 = input f32[2, 3] {example=ones, example_strides=[0, 1]}\n"
                     "  %T5 = input f32[2, 3] {example=randn}\n"
                     "  %T6 = add %T0, %T1\n  output %T6\n}\n"));
  fu_arg *in = NULL;
  uint32_t n = 0;
  CHECK_EQ_INT(make(&p, NULL, &in, &n), FU_OK);
  CHECK_EQ_INT(n, 6);
  if (n == 6) {
    CHECK_EQ_INT(in[0].tensor.strides[0], 1); /* column-major */
    CHECK_EQ_INT(in[0].tensor.strides[1], 2);
    CHECK_EQ_INT(in[1].tensor.strides[1], 2); /* non-contiguous inner dim */
    CHECK_EQ_INT(in[1].tensor.strides[0], 6);
    CHECK(isnan(((float *)in[1].tensor.data)[1])); /* a gap */
    CHECK_EQ_INT(in[2].tensor.strides[0], 0);
    CHECK_EQ_INT(in[3].tensor.strides[1], 4);
    CHECK_EQ_INT(in[4].tensor.strides[0], 0);
    CHECK_EQ_INT(in[4].tensor.nbytes, 12);
    /* values do not depend on layout: %T0 (column-major) equals a
     * row-major input made from the same stream position */
    CHECK(!isnan(fu_host_tensor_get_flat(&in[1].tensor, 5)));
    CHECK_EQ_INT(ti_run(&p, in, n), FU_OK);
    for (int64_t i = 0; i < 6; i++)
      CHECK_NEAR(fu_host_tensor_get_flat(&p.out[0].tensor, i),
                 fu_host_tensor_get_flat(&in[0].tensor, i) + fu_host_tensor_get_flat(&in[1].tensor, i), 1e-6);
  }
  fu_args_free(in, n, fu_default_allocator());
  ti_free(&p);

  /* the same seed and position in two layouts give the same logical data */
  ti_prog a, b;
  CHECK(ti_parse(&a, "fusion @a {\n  %T0 = input f64[3, 5] {example=randn, seed=9}\n  output %T0\n}\n"));
  CHECK(ti_parse(&b, "fusion @b {\n  %T0 = input f64[3, 5] {stride_order=[0, 1], example=randn, seed=9}\n"
                     "  output %T0\n}\n"));
  fu_arg *ia, *ib;
  uint32_t na, nb;
  CHECK_EQ_INT(make(&a, NULL, &ia, &na), FU_OK);
  CHECK_EQ_INT(make(&b, NULL, &ib, &nb), FU_OK);
  fu_compare_result r;
  CHECK_EQ_INT(fu_host_tensor_compare(&ia[0].tensor, &ib[0].tensor, 0, 0, &r), FU_OK);
  CHECK_EQ_INT(r.n_mismatch, 0);
  CHECK(ia[0].tensor.strides[1] != ib[0].tensor.strides[1]);
  fu_args_free(ia, na, fu_default_allocator());
  fu_args_free(ib, nb, fu_default_allocator());
  ti_free(&a);
  ti_free(&b);
}

/* npy="..." relative to the file's directory, and --input NAME=file.npy. */
static void test_npy_inputs(void) {
  char dir[] = "/tmp/fuser_inputs_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char path[256], path2[256];
  snprintf(path, sizeof path, "%s/x.npy", dir);
  snprintf(path2, sizeof path2, "%s/y.npy", dir);
  fu_diag_engine diag;
  fu_diag_init(&diag, fu_default_allocator());
  fu_arg x = ti_tensor(FU_DT_F32, 2, TI_SHAPE(2, 3), TI_VALS(1, 2, 3, 4, 5, 6));
  fu_arg y = ti_tensor(FU_DT_F32, 1, TI_SHAPE(3), TI_VALS(10, 20, 30));
  CHECK_EQ_INT(fu_npy_write(path, &x.tensor, &diag), FU_OK);
  CHECK_EQ_INT(fu_npy_write(path2, &y.tensor, &diag), FU_OK);

  ti_prog p;
  CHECK(ti_parse(&p, "fusion @n {\n  %T0 = input f32[N, K] {npy=\"x.npy\"}\n"
                     "  %T1 = input f32[K] {stride_order=[0]}\n"
                     "  %T2 = broadcast_in_dim %T1 {broadcast_dims=[1]} : f32[N, K]\n"
                     "  %T3 = add %T0, %T2\n  output %T3\n}\n"));
  fu_input_options o;
  memset(&o, 0, sizeof o);
  o.base_dir = dir;
  fu_input_override ov = {"T1", FU_INPUT_NPY, path2};
  o.overrides = &ov;
  o.n_overrides = 1;
  CHECK_EQ_INT(ti_run_examples(&p, &o), FU_OK);
  CHECK_VALS(&p.out[0], 0, 11, 22, 33, 14, 25, 36);
  /* without base_dir the relative path is not found: the error names it */
  ti_diag_init(&p);
  o.base_dir = "/nonexistent";
  CHECK_EQ_INT(ti_run_examples(&p, &o), FU_ERR_IO);
  CHECK_HAS(p.cap.text, "cannot open .npy file");
  CHECK_HAS(p.cap.text, "while loading example data for input '%T0'");
  ti_free(&p);

  /* a file of the wrong dtype or rank */
  CHECK(ti_parse(&p, "fusion @w {\n  %T0 = input f64[N]\n  output %T0\n}\n"));
  fu_input_override wrong = {"T0", FU_INPUT_NPY, path2};
  o.overrides = &wrong;
  ti_diag_init(&p);
  CHECK_EQ_INT(ti_run_examples(&p, &o), FU_ERR_PARSE);
  CHECK_HAS(p.cap.text, "holds f32 ('<f4') but f64 is wanted");
  ti_free(&p);
  CHECK(ti_parse(&p, "fusion @r {\n  %T0 = input f32[N, 3]\n  output %T0\n}\n"));
  ti_diag_init(&p);
  CHECK_EQ_INT(ti_run_examples(&p, &o), FU_ERR_INVALID_ARG);
  CHECK_HAS(p.cap.text, "has rank 1, the input has rank 2");
  ti_free(&p);

  fu_arg_free(&x);
  fu_arg_free(&y);
  unlink(path);
  unlink(path2);
  rmdir(dir);
}

/* The one binding of symbols to example sizes: the first input that binds
 * a symbol gives its size; constants are themselves; an unbound symbol
 * gets the caller's default. */
static void test_example_sizes(void) {
  ti_prog p;
  CHECK(ti_parse(&p, "fusion @e {\n  %T0 = input f32[N, 3] {example=randn, example_shape=[5, 3]}\n"
                     "  %T1 = input f32[M, N]\n  %T2 = input f32[K] {example=zeros, example_shape=[7]}\n"
                     "  output %T0, %T1, %T2\n}\n"));
  fu_example_sizes s;
  CHECK_EQ_INT(fu_example_sizes_bind(&s, p.f, fu_default_allocator()), FU_OK);
  CHECK_EQ_INT(s.n, 2);
  int64_t v = 0;
  CHECK(fu_example_sizes_get(&s, "N", &v) && v == 5);
  CHECK(fu_example_sizes_get(&s, "K", &v) && v == 7);
  CHECK(!fu_example_sizes_get(&s, "M", &v));
  CHECK_EQ_INT(fu_example_extent(&s, (fu_extent){0, "N"}, FU_DEFAULT_EXTENT), 5);
  CHECK_EQ_INT(fu_example_extent(&s, (fu_extent){0, "M"}, FU_DEFAULT_EXTENT), 4);
  CHECK_EQ_INT(fu_example_extent(&s, (fu_extent){0, "M"}, 4096), 4096);
  CHECK_EQ_INT(fu_example_extent(&s, (fu_extent){11, NULL}, 4096), 11);
  fu_example_sizes_free(&s);
  ti_free(&p);
}

FU_TEST_MAIN(FU_TEST(test_binding_errors), FU_TEST(test_example_sizes), FU_TEST(test_example_kinds), FU_TEST(test_symbols_and_overrides),
             FU_TEST(test_layouts), FU_TEST(test_npy_inputs))
