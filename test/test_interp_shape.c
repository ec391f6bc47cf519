/* Unit tests for the interpreter's shape, data-movement and creation ops,
 * checked element by element on small arrays, plus segments and views. */
#include "test_interp_util.h"

/* 0, 1, 2, ... in a contiguous tensor of the given shape. */
static fu_arg iota_arg(fu_dtype dt, int32_t rank, const int64_t *shape) {
  fu_host_tensor t;
  fu_host_tensor_alloc(&t, fu_default_allocator(), dt, rank, shape);
  int64_t n = fu_host_tensor_numel(&t);
  for (int64_t i = 0; i < n; i++) fu_host_tensor_set_flat(&t, i, (double)i);
  return fu_arg_tensor(t);
}

static void test_permute_and_reshape(void) {
  ti_prog p;
  CHECK(ti_parse(&p, "fusion @pr {\n  %T0 = input f32[2, 3, 4]\n  %T1 = permute %T0 {dims=[2, 0, 1]}\n"
                     "  %T2 = reshape %T0 : f32[6, 4]\n  %T3 = reshape %T1 : f32[24]\n  %T4 = exp %T1\n"
                     "  output %T1, %T2, %T3, %T4\n}\n"));
  fu_arg a = iota_arg(FU_DT_F32, 3, TI_SHAPE(2, 3, 4));
  CHECK_EQ_INT(ti_run(&p, &a, 1), FU_OK);
  CHECK_SHAPE(&p.out[0], FU_DT_F32, 3, 4, 2, 3);
  int bad = 0;
  for (int64_t i = 0; i < 4; i++)
    for (int64_t j = 0; j < 2; j++)
      for (int64_t k = 0; k < 3; k++) {
        double want = (double)(j * 12 + k * 4 + i); /* out[i][j][k] = in[j][k][i] */
        int64_t flat = (i * 2 + j) * 3 + k;
        if (fu_host_tensor_get(&p.out[0].tensor, TI_SHAPE(i, j, k)) != want) bad++;
        if (fu_host_tensor_get_flat(&p.out[2].tensor, flat) != want) bad++; /* materialized row-major */
        if (fu_host_tensor_get_flat(&p.out[3].tensor, flat) != (double)expf((float)want)) bad++;
      }
  CHECK_EQ_INT(bad, 0);
  CHECK_SHAPE(&p.out[1], FU_DT_F32, 2, 6, 4);
  for (int64_t i = 0; i < 24; i++) bad += fu_host_tensor_get_flat(&p.out[1].tensor, i) != (double)i;
  CHECK_EQ_INT(bad, 0);
  /* outputs come back contiguous */
  CHECK_EQ_INT(p.out[0].tensor.strides[0], 6);
  CHECK_EQ_INT(p.out[0].tensor.strides[2], 1);
  fu_arg_free(&a);

  /* a column-major input reshaped reads in logical row-major order */
  ti_free(&p);
  CHECK(ti_parse(&p, "fusion @cm {\n  %T0 = input i64[2, 3]\n  %T1 = reshape %T0 : i64[3, 2]\n  output %T1\n}\n"));
  fu_host_tensor cm;
  fu_host_tensor_alloc_strided(&cm, fu_default_allocator(), FU_DT_I64, 2, TI_SHAPE(2, 3), TI_SHAPE(1, 2));
  for (int64_t i = 0; i < 6; i++) fu_host_tensor_set_flat(&cm, i, (double)(i * 10));
  fu_arg c = fu_arg_tensor(cm);
  CHECK_EQ_INT(ti_run(&p, &c, 1), FU_OK);
  CHECK_VALS(&p.out[0], 0, 0, 10, 20, 30, 40, 50);
  fu_arg_free(&c);
  ti_free(&p);
}

static void test_broadcasts(void) {
  ti_prog p;
  CHECK(ti_parse(&p, "fusion @b {\n  %T0 = input f64[3]\n"
                     "  %T1 = broadcast_in_dim %T0 {broadcast_dims=[1]} : f64[2, 3]\n"
                     "  %T2 = broadcast_in_dim %T0 {broadcast_dims=[0]} : f64[3, 2]\n"
                     "  %T3 = broadcast %T0 {is_broadcast_dim=[true, false]}\n"
                     "  %T4 = expand %T3 : f64[4, 3]\n  %T5 = sum %T4 {axes=[0]}\n"
                     "  %T6 = input f64[1, 3, 1]\n  %T7 = squeeze %T6 {dims=[0, 2]}\n"
                     "  %T8 = broadcast_in_dim %T6 {broadcast_dims=[0, 1, 2]} : f64[2, 3, 2]\n"
                     "  output %T1, %T2, %T3, %T4, %T5, %T7, %T8\n}\n"));
  fu_arg in[2] = {ti_tensor(FU_DT_F64, 1, TI_SHAPE(3), TI_VALS(1, 2, 3)),
                  ti_tensor(FU_DT_F64, 3, TI_SHAPE(1, 3, 1), TI_VALS(7, 8, 9))};
  CHECK_EQ_INT(ti_run(&p, in, 2), FU_OK);
  CHECK_VALS(&p.out[0], 0, 1, 2, 3, 1, 2, 3);
  CHECK_VALS(&p.out[1], 0, 1, 1, 2, 2, 3, 3);
  CHECK_SHAPE(&p.out[2], FU_DT_F64, 2, 1, 3);
  CHECK_VALS(&p.out[3], 0, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3);
  CHECK_VALS(&p.out[4], 0, 4, 8, 12);
  CHECK_SHAPE(&p.out[5], FU_DT_F64, 1, 3);
  CHECK_VALS(&p.out[5], 0, 7, 8, 9);
  CHECK_VALS(&p.out[6], 0, 7, 7, 8, 8, 9, 9, 7, 7, 8, 8, 9, 9);
  fu_arg_free(&in[0]);
  fu_arg_free(&in[1]);
  ti_free(&p);
}

static void test_slice_cat_pad(void) {
  ti_prog p;
  CHECK(ti_parse(&p, "fusion @s {\n  %T0 = input i32[10]\n"
                     "  %T1 = slice %T0 {starts=[1], ends=[9], steps=[3]}\n"
                     "  %T2 = slice %T0 {starts=[4], ends=[4], steps=[1]}\n"
                     "  %T3 = input i32[4, 5]\n  %T4 = slice %T3 {starts=[1, 0], ends=[3, 5], steps=[1, 2]}\n"
                     "  %T5 = pad %T0, 9 {widths=[1, 2]}\n  %T6 = pad %T0, 0 {widths=[-3, -6]}\n"
                     "  %T7 = pad %T4, -1 {widths=[0, 0, 1, 1]}\n  %T8 = pad %T0, 0 {widths=[-4, -6]}\n"
                     "  %T9 = pad %T4, 5 {widths=[-1, 1, -1, 0]}\n"
                     "  output %T1, %T2, %T4, %T5, %T6, %T7, %T8, %T9\n}\n"));
  fu_arg in[2] = {iota_arg(FU_DT_I32, 1, TI_SHAPE(10)), iota_arg(FU_DT_I32, 2, TI_SHAPE(4, 5))};
  CHECK_EQ_INT(ti_run(&p, in, 2), FU_OK);
  CHECK_VALS(&p.out[0], 0, 1, 4, 7);
  CHECK_SHAPE(&p.out[1], FU_DT_I32, 1, 0);
  CHECK_SHAPE(&p.out[2], FU_DT_I32, 2, 2, 3);
  CHECK_VALS(&p.out[2], 0, 5, 7, 9, 10, 12, 14);
  CHECK_VALS(&p.out[3], 0, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9);
  CHECK_VALS(&p.out[4], 0, 3);
  CHECK_SHAPE(&p.out[5], FU_DT_I32, 2, 4, 3);
  CHECK_VALS(&p.out[5], 0, -1, -1, -1, 5, 7, 9, 10, 12, 14, -1, -1, -1);
  CHECK_SHAPE(&p.out[6], FU_DT_I32, 1, 0);
  /* crop the first column, add one after; crop the first row */
  CHECK_SHAPE(&p.out[7], FU_DT_I32, 2, 1, 3);
  CHECK_VALS(&p.out[7], 0, 12, 14, 5);
  fu_arg_free(&in[0]);
  fu_arg_free(&in[1]);
  ti_free(&p);

  CHECK(ti_parse(&p, "fusion @c {\n  %T0 = input f32[2, 2]\n  %T1 = input f32[2, 3]\n  %T2 = cat %T0, %T1 {dim=1}\n"
                     "  %T3 = input f32[1, 2]\n  %T4 = cat %T3, %T0, %T3 {dim=0}\n"
                     "  %T5 = permute %T1 {dims=[1, 0]}\n  %T6 = cat %T5, %T0 {dim=0}\n  output %T2, %T4, %T6\n}\n"));
  fu_arg c[3] = {ti_tensor(FU_DT_F32, 2, TI_SHAPE(2, 2), TI_VALS(1, 2, 3, 4)),
                 ti_tensor(FU_DT_F32, 2, TI_SHAPE(2, 3), TI_VALS(5, 6, 7, 8, 9, 10)),
                 ti_tensor(FU_DT_F32, 2, TI_SHAPE(1, 2), TI_VALS(-1, -2))};
  CHECK_EQ_INT(ti_run(&p, c, 3), FU_OK);
  CHECK_SHAPE(&p.out[0], FU_DT_F32, 2, 2, 5);
  CHECK_VALS(&p.out[0], 0, 1, 2, 5, 6, 7, 3, 4, 8, 9, 10);
  CHECK_SHAPE(&p.out[1], FU_DT_F32, 2, 4, 2);
  CHECK_VALS(&p.out[1], 0, -1, -2, 1, 2, 3, 4, -1, -2);
  CHECK_SHAPE(&p.out[2], FU_DT_F32, 2, 5, 2);
  CHECK_VALS(&p.out[2], 0, 5, 8, 6, 9, 7, 10, 1, 2, 3, 4);
  for (int i = 0; i < 3; i++) fu_arg_free(&c[i]);
  ti_free(&p);
}

/* Seed 004: rotate the two halves and add the residual. */
static void test_rotate_residual(void) {
  ti_prog p;
  CHECK(ti_parse(&p, "fusion @rot {\n  %T0 = input f32[8]\n  %T1 = slice %T0 {starts=[0], ends=[4], steps=[1]}\n"
                     "  %T2 = slice %T0 {starts=[4], ends=[8], steps=[1]}\n  %T3 = cat %T2, %T1 {dim=0}\n"
                     "  %T4 = add %T0, %T3\n  output %T4\n}\n"));
  fu_arg a = ti_tensor(FU_DT_F32, 1, TI_SHAPE(8), TI_VALS(1, 2, 4, 8, 16, 32, 64, 128));
  CHECK_EQ_INT(ti_run(&p, &a, 1), FU_OK);
  CHECK_VALS(&p.out[0], 0, 17, 34, 68, 136, 17, 34, 68, 136);
  fu_arg_free(&a);
  ti_free(&p);
}

static void test_creation(void) {
  ti_prog p;
  CHECK(ti_parse(&p, "fusion @cr {\n  %T0 = full 2.5 : f32[2, 3]\n  %T1 = iota 5, -2 : i32[4]\n"
                     "  %T2 = iota 1.0, 0.1 : f32[3]\n  %T3 = full true : bool[2]\n  %T4 = set %T1\n"
                     "  %T5 = full 7 : f64[]\n  output %T0, %T1, %T2, %T3, %T4, %T5\n}\n"));
  CHECK_EQ_INT(ti_run(&p, NULL, 0), FU_OK);
  CHECK_VALS(&p.out[0], 0, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5);
  CHECK_EQ_INT(p.out[0].tensor.strides[0], 3);
  CHECK_VALS(&p.out[1], 0, 5, 3, 1, -1);
  CHECK_VALS(&p.out[2], 0, 1, (double)1.1f, (double)1.2f);
  CHECK_VALS(&p.out[3], 0, 1, 1);
  CHECK_VALS(&p.out[4], 0, 5, 3, 1, -1);
  CHECK_SHAPE(&p.out[5], FU_DT_F64, 0, 0);
  CHECK_VALS(&p.out[5], 0, 7);
  ti_free(&p);
}

/* Ops inside segment bodies run; so do ops outside them. */
static void test_segments(void) {
  ti_prog p;
  const char *text =
      "fusion @seg {\n"
      "  %T0 = input f32[4]\n"
      "  %T1 = reshape %T0 : f32[2, 2]\n"
      "  segment @g0 pointwise (%T1) -> (%T3) {\n"
      "    %T2 = mul %T1, 2.0\n"
      "    %T3 = add %T2, 1.0\n"
      "  }\n"
      "  segment @g1 reduction (%T3) -> (%T4) {\n"
      "    %T4 = sum %T3 {axes=[1]}\n"
      "  }\n"
      "  output %T4, %T3\n"
      "}\n";
  if (!ti_parse(&p, text)) {
    fu_test_fail(__FILE__, __LINE__, "segment syntax did not parse");
    ti_free(&p);
    return;
  }
  fu_arg a = ti_tensor(FU_DT_F32, 1, TI_SHAPE(4), TI_VALS(1, 2, 3, 4));
  CHECK_EQ_INT(ti_run(&p, &a, 1), FU_OK);
  CHECK_VALS(&p.out[0], 0, 8, 16);
  CHECK_VALS(&p.out[1], 0, 3, 5, 7, 9);
  fu_arg_free(&a);
  ti_free(&p);
}

/* The same value output twice gives two independent copies; an input
 * output directly is copied too. */
static void test_outputs_are_copies(void) {
  ti_prog p;
  CHECK(ti_parse(&p, "fusion @o {\n  %T0 = input f32[2]\n  %T1 = permute %T0 {dims=[0]}\n  output %T1, %T1, %T0\n}\n"));
  fu_arg a = ti_tensor(FU_DT_F32, 1, TI_SHAPE(2), TI_VALS(1, 2));
  CHECK_EQ_INT(ti_run(&p, &a, 1), FU_OK);
  CHECK_EQ_INT(p.n_out, 3);
  CHECK(p.out[0].tensor.data != p.out[1].tensor.data);
  CHECK(p.out[2].tensor.data != a.tensor.data);
  CHECK(p.out[0].tensor.owned != NULL);
  fu_host_tensor_set_flat(&p.out[0].tensor, 0, 99);
  CHECK_VALS(&p.out[1], 0, 1, 2);
  CHECK_VALS(&a, 0, 1, 2);
  fu_arg_free(&a);
  ti_free(&p);
}

/* Runtime shape errors with symbolic extents the verifier cannot see. */
static void test_runtime_shape_errors(void) {
  ti_prog p;
  CHECK(ti_parse(&p, "fusion @e {\n  %T0 = input f32[N]\n  %T1 = slice %T0 {starts=[0], ends=[8], steps=[1]}\n"
                     "  output %T1\n}\n"));
  fu_arg a = ti_tensor(FU_DT_F32, 1, TI_SHAPE(4), TI_VALS(1, 2, 3, 4));
  CHECK_EQ_INT(ti_run(&p, &a, 1), FU_ERR_RUNTIME);
  CHECK_HAS(p.cap.text, "slice [0:8] of dim 0 is out of bounds for extent 4");
  CHECK_HAS(p.cap.text, "'slice' defining '%T1'");
  fu_arg_free(&a);
  ti_free(&p);

  CHECK(ti_parse(&p, "fusion @u {\n  %T0 = input f32[N]\n  %T1 = full 0.0 : f32[K]\n  output %T1\n}\n"));
  fu_arg b = ti_tensor(FU_DT_F32, 1, TI_SHAPE(4), TI_VALS(1, 2, 3, 4));
  CHECK_EQ_INT(ti_run(&p, &b, 1), FU_ERR_RUNTIME);
  CHECK_HAS(p.cap.text, "symbol 'K' in dim 0 of the result is not bound by any input");
  fu_arg_free(&b);
  ti_free(&p);
}

/* Reshape into an unbound symbol solves it from the element count (built
 * with the C API: the verifier would want the same symbols). */
static void test_reshape_solves_symbol(void) {
  fu_module *m = fu_module_new(fu_default_allocator());
  fu_fusion *f = fu_fusion_new(m, "rs", fu_loc_none());
  fu_extent in_dims[2] = {{0, fu_module_intern(m, "N", 1)}, {4, NULL}};
  fu_extent out_dims[2] = {{0, fu_module_intern(m, "M", 1)}, {2, NULL}};
  fu_op *in = fu_op_new(f, FU_OP_INPUT, NULL, 0, 1, fu_loc_none());
  in->results[0]->type = (fu_type){FU_DT_F32, 2, fu_dims_copy(m, in_dims, 2)};
  fu_value_set_name(m, in->results[0], "T0");
  fu_block_append(&f->body, in);
  fu_op *rs = fu_op_new(f, FU_OP_RESHAPE, in->results, 1, 1, fu_loc_none());
  rs->results[0]->type = (fu_type){FU_DT_F32, 2, fu_dims_copy(m, out_dims, 2)};
  fu_value_set_name(m, rs->results[0], "T1");
  fu_block_append(&f->body, rs);
  fu_op *ex = fu_op_new(f, FU_OP_EXPAND, rs->results, 1, 1, fu_loc_none());
  ex->results[0]->type = rs->results[0]->type; /* uses M, now bound */
  fu_value_set_name(m, ex->results[0], "T2");
  fu_block_append(&f->body, ex);
  fu_block_append(&f->body, fu_op_new(f, FU_OP_OUTPUT, ex->results, 1, 0, fu_loc_none()));
  ti_prog p;
  memset(&p, 0, sizeof p);
  ti_diag_init(&p);
  p.f = f;
  fu_arg a = ti_tensor(FU_DT_F32, 2, TI_SHAPE(3, 4), TI_VALS(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11));
  CHECK_EQ_INT(ti_run(&p, &a, 1), FU_OK);
  CHECK_SHAPE(&p.out[0], FU_DT_F32, 2, 6, 2);
  CHECK_VALS(&p.out[0], 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
  fu_arg_free(&a);
  a = ti_tensor(FU_DT_F32, 2, TI_SHAPE(1, 4), TI_VALS(0, 1, 2, 3));
  CHECK_EQ_INT(ti_run(&p, &a, 1), FU_OK);
  CHECK_SHAPE(&p.out[0], FU_DT_F32, 2, 2, 2);
  fu_arg_free(&a);
  ti_free_outputs(&p);
  fu_module_free(m);
}

FU_TEST_MAIN(FU_TEST(test_permute_and_reshape), FU_TEST(test_broadcasts), FU_TEST(test_slice_cat_pad),
             FU_TEST(test_rotate_residual), FU_TEST(test_creation), FU_TEST(test_segments),
             FU_TEST(test_outputs_are_copies), FU_TEST(test_runtime_shape_errors),
             FU_TEST(test_reshape_solves_symbol))
