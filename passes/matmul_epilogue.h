/* fuser: the epilogue of a matmul or linear that cuBLASLt fuses
 * (passes/matmul_epilogue.c), shared by the segment pass (which ops join
 * the product's segment) and the matmul scheduler (the plan it writes). */
#ifndef FUSER_PASSES_MATMUL_EPILOGUE_H
#define FUSER_PASSES_MATMUL_EPILOGUE_H

#include <stdbool.h>

#include "fuser/gemm.h"
#include "fuser/ir.h"

enum { FU_MM_EPI_MAX = 48 };

typedef struct fu_mm_epilogue {
  fu_op *ops[FU_MM_EPI_MAX]; /* the epilogue's ops (not the product), producers first */
  uint32_t n_ops;
  fu_value *out;             /* the epilogue's last value (the product's result without one) */
  fu_value *bias;            /* the bias vector read, or NULL */
  double alpha;
  fu_gemm_act act;
} fu_mm_epilogue;

/* Whether op may join the product's segment (the caller's notion: a
 * top-level compute op, an op of the segment's body). */
typedef bool (*fu_mm_inside_fn)(void *user, const fu_op *op);

/* The longest epilogue of `mm` cuBLASLt computes, in this order: casts and
 * scalings by literals (alpha), one bias add (a vector along N, directly or
 * through a broadcast; linear's own bias counts), casts, relu or GELU's tanh
 * form (any graph of pointwise ops over one value that computes it, found by
 * evaluating the graph at sample points), casts.  Every value before the
 * last has its only use in the next op; ops that `inside` refuses end it.
 * The product alone is an empty epilogue. */
void fu_mm_match_epilogue(fu_op *mm, const fu_use_map *uses, fu_mm_inside_fn inside, void *user,
                          fu_mm_epilogue *out);

#endif
