/* Unit tests for the IR core: arena, dtypes, op table, construction, uses. */
#include <stdint.h>

#include "fuser/ir.h"
#include "fuser/strbuf.h"
#include "harness.h"

static void test_arena_alignment_and_zeroing(void) {
  fu_arena *a = fu_arena_new(fu_default_allocator());
  for (int i = 1; i < 2000; i += 37) {
    unsigned char *p = fu_arena_alloc(a, (size_t)i);
    CHECK(p != NULL);
    CHECK(((uintptr_t)p & 15) == 0);
    int zero = 1;
    for (int j = 0; j < i; j++) zero &= p[j] == 0;
    CHECK(zero);
  }
  void *big = fu_arena_alloc(a, 1 << 20);
  CHECK(big != NULL);
  CHECK(fu_arena_calloc(a, SIZE_MAX / 2, 4) == NULL);
  fu_arena_free(a);
}

static void test_dtype_promotion(void) {
  CHECK_EQ_INT(fu_dtype_promote(FU_DT_F32, FU_DT_F64), FU_DT_F64);
  CHECK_EQ_INT(fu_dtype_promote(FU_DT_I64, FU_DT_F16), FU_DT_F16);
  CHECK_EQ_INT(fu_dtype_promote(FU_DT_F16, FU_DT_BF16), FU_DT_F32);
  CHECK_EQ_INT(fu_dtype_promote(FU_DT_BOOL, FU_DT_I32), FU_DT_I32);
  CHECK_EQ_INT(fu_dtype_promote(FU_DT_I32, FU_DT_I64), FU_DT_I64);
  CHECK_EQ_INT(fu_dtype_from_name("bf16", 4), FU_DT_BF16);
  CHECK_EQ_INT(fu_dtype_from_name("f8", 2), FU_DT_NONE);
  CHECK_EQ_INT(fu_dtype_size(FU_DT_BF16), 2);
}

static void test_op_table(void) {
  CHECK_EQ_INT(fu_op_kind_from_name("var_mean", 8), FU_OP_VAR_MEAN);
  CHECK_EQ_INT(fu_op_kind_from_name("nope", 4), FU_OP_COUNT);
  CHECK(fu_op_has(FU_OP_ERF, FU_OF_FLOAT_RESULT));
  CHECK(fu_op_has(FU_OP_RESHAPE, FU_OF_VIEW));
  CHECK(!fu_op_has(FU_OP_ADD, FU_OF_VIEW));
  CHECK_EQ_INT(fu_op_info_of(FU_OP_WHERE)->num_operands, 3);
  CHECK_STR(fu_op_info_of(FU_OP_BROADCAST_IN_DIM)->name, "broadcast_in_dim");
}

static void test_build_and_uses(void) {
  fu_module *m = fu_module_new(fu_default_allocator());
  fu_fusion *f = fu_fusion_new(m, "f", fu_loc_none());
  fu_op *in = fu_op_new(f, FU_OP_INPUT, NULL, 0, 1, fu_loc_none());
  fu_block_append(&f->body, in);
  fu_value *x = in->results[0];
  fu_value *ops[2] = {x, x};
  fu_op *add = fu_op_new(f, FU_OP_ADD, ops, 2, 1, fu_loc_none());
  fu_block_append(&f->body, add);
  fu_op *out = fu_op_new(f, FU_OP_OUTPUT, &add->results[0], 1, 0, fu_loc_none());
  fu_block_append(&f->body, out);
  fu_use_map um;
  CHECK_EQ_INT(fu_use_map_build(f, &um), FU_OK);
  CHECK_EQ_INT(fu_use_count(&um, x), 2);
  CHECK_EQ_INT(fu_use_count(&um, add->results[0]), 1);
  CHECK(fu_uses_of(&um, add->results[0])[0].user == out);
  fu_use_map_free(&um);
  fu_value *outs[4];
  CHECK_EQ_INT(fu_fusion_outputs(f, outs, 4), 1);
  CHECK(outs[0] == add->results[0]);
  fu_block_remove(&f->body, add);
  CHECK(f->body.first == in && in->next == out && out->prev == in);
  CHECK(fu_module_intern(m, "N", 1) == fu_module_intern(m, "Nx", 1));
  fu_module_free(m);
}

static void test_strbuf_doubles(void) {
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  double vals[] = {0.5, 0.707107, 1.0, 1e-30, 3.0, -2.25, 0.1};
  const char *want[] = {"0.5", "0.707107", "1.0", "1e-30", "3.0", "-2.25", "0.1"};
  for (int i = 0; i < 7; i++) {
    fu_strbuf_clear(&sb);
    fu_strbuf_put_double(&sb, vals[i]);
    CHECK_STR(sb.data, want[i]);
  }
  fu_strbuf_free(&sb);
}

FU_TEST_MAIN(FU_TEST(test_arena_alignment_and_zeroing), FU_TEST(test_dtype_promotion), FU_TEST(test_op_table),
             FU_TEST(test_build_and_uses), FU_TEST(test_strbuf_doubles))
