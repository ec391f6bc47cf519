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
