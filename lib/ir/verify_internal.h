/* fuser: helpers shared by shape/dtype inference and the verifier (private
 * to lib/ir). */
#ifndef FUSER_LIB_IR_VERIFY_INTERNAL_H
#define FUSER_LIB_IR_VERIFY_INTERNAL_H

#include <stdbool.h>

#include "fuser/diag.h"
#include "fuser/ir.h"

/* A type printed as in the text format (`f32[N, 3]`, `f64`), in a fixed
 * buffer so diagnostics need no allocation; very long types end in "...". */
typedef struct fu_ir_tystr {
  char s[256];
} fu_ir_tystr;

const char *fu_ir_type_str(fu_ir_tystr *buf, const fu_type *t);

/* A value for messages: `'%T3'`, or the literal's text in quotes. */
typedef struct fu_ir_valstr {
  char s[96];
} fu_ir_valstr;

const char *fu_ir_value_str(fu_ir_valstr *buf, const fu_value *v);

/* An integer list as `[1, 0]` (long lists end in "..."). */
typedef struct fu_ir_liststr {
  char s[160];
} fu_ir_liststr;

const char *fu_ir_list_str(fu_ir_liststr *buf, const int64_t *v, uint32_t n);


/* The inference proper.  Result extents go into `scratch` (FU_MAX_RANK
 * extents per result, at most 2 results) instead of the arena, so the
 * verifier can infer every op without growing the module. */
#define FU_IR_MAX_RESULTS 2
fu_status fu_ir_infer(fu_op *op, fu_type *out, fu_extent *scratch, fu_diag_engine *diag);

/* Number of results an op of this kind must have (-1: any, for unknown). */
int fu_ir_expected_results(fu_op_kind k);

/* Check a type stated in the IR: a valid dtype, rank -1..FU_MAX_RANK, dims
 * present, constant extents >= 0.  Reports at `loc` naming `what` (an op or
 * value) and returns false when it is bad. */
bool fu_ir_type_ok(const fu_type *t); /* the same checks, silently */
bool fu_ir_check_type(const fu_type *t, fu_loc loc, const char *what, fu_diag_engine *diag);

#endif
