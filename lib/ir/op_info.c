/* fuser: the op property table, generated from ops.def. */
#include <string.h>

#include "fuser/ir.h"

#define MATH_STRING(m) #m
#define MATH_NULL(m) NULL
static const fu_op_info op_table[FU_OP_COUNT] = {
#define FU_OP(id, name, cls, nops, flags, math)                                                                    \
  [FU_OP_##id] = {name, FU_OC_##cls, nops, flags, FU_MATH_SELECT(math, MATH_STRING, MATH_NULL)(math)},
#include "fuser/ops.def"
};
#undef MATH_STRING
#undef MATH_NULL

const fu_op_info *fu_op_info_of(fu_op_kind k) { return &op_table[(unsigned)k < FU_OP_COUNT ? k : 0]; }

fu_op_kind fu_op_kind_from_name(const char *name, size_t len) {
  for (int k = 0; k < FU_OP_COUNT; k++)
    if (strlen(op_table[k].name) == len && memcmp(op_table[k].name, name, len) == 0) return (fu_op_kind)k;
  return FU_OP_COUNT;
}

fu_bool_form fu_op_bool_form(fu_op_kind k) {
  switch (k) {
  case FU_OP_SET:
  case FU_OP_ABS:
  case FU_OP_NEG:
  case FU_OP_RELU:
  case FU_OP_SIGN:
  case FU_OP_FLOOR:
  case FU_OP_CEIL:
  case FU_OP_ROUND:
  case FU_OP_TRUNC:
  case FU_OP_BITWISE_LEFT_SHIFT: return FU_BOOL_IDENTITY;
  case FU_OP_BITWISE_NOT: return FU_BOOL_NOT;
  case FU_OP_FRAC: return FU_BOOL_FALSE;
  case FU_OP_BITWISE_RIGHT_SHIFT:
  case FU_OP_LOGICAL_RIGHT_SHIFT: return FU_BOOL_AND_NOT;
  case FU_OP_GCD:
  case FU_OP_ADD:
  case FU_OP_MAXIMUM:
  case FU_OP_BITWISE_OR: return FU_BOOL_OR;
  case FU_OP_MUL:
  case FU_OP_MINIMUM:
  case FU_OP_BITWISE_AND: return FU_BOOL_AND;
  case FU_OP_SUB:
  case FU_OP_BITWISE_XOR: return FU_BOOL_XOR;
  case FU_OP_CLAMP: return FU_BOOL_CLAMP;
  default: return FU_BOOL_NONE;
  }
}
