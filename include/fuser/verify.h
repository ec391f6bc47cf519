/* fuser: shape and dtype inference, and the IR verifier. */
#ifndef FUSER_VERIFY_H
#define FUSER_VERIFY_H

#include "fuser/diag.h"
#include "fuser/ir.h"

/* Compute the result types of `op` from its operands and payload, into
 * out[0..op->n_results).  Extents are allocated in the module's arena.  Ops
 * whose result shape or dtype is stated rather than derived (reshape,
 * expand, broadcast_in_dim, full, iota, cast, input) read it from
 * op->results[i]->type and check it against the operands.  Errors (bad
 * operand types, mismatched shapes, axes out of range, ...) are reported at
 * op->loc and return FU_ERR_VERIFY. */
fu_status fu_infer_types(fu_op *op, fu_type *out, fu_diag_engine *diag);

/* Check every invariant of the module: SSA (each value defined once, before
 * use, in scope), operand counts, operand and result types against
 * inference, axes, reshape element counts, slice/pad/cat bounds, input
 * layouts and example data, segment regions.  Reports every problem found
 * and returns FU_ERR_VERIFY if there was any. */
fu_status fu_verify_module(fu_module *m, fu_diag_engine *diag);
fu_status fu_verify_fusion(fu_fusion *f, fu_diag_engine *diag);

#endif
