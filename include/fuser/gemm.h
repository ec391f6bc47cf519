/* fuser: the plan of a matmul segment (one matmul or linear and the
 * epilogue cuBLASLt fuses), and its text.
 *
 * A matmul segment's ops are the product and its epilogue; the `schedule`
 * pass writes the plan the runtime executes into the segment, after its
 * ops (docs/ir.md, "Matmul segments"):
 *
 *   gemm %T0, %T1 -> %T9 {a=row, lda=4096, b=col, ldb=4096, epilogue=gelu, bias=%T2, alpha=1.0}
 *
 * The product is D = act(alpha * A B + bias), with A the [M, K] and B the
 * [K, N] matrix of the product as torch.matmul reads them (linear's weight
 * [N, K] is B read column-major), D the segment's output (the last value
 * of the epilogue, in its dtype).  `a` and `b` say how each matrix lies in
 * memory: row (the last dim has stride 1; the leading dim is the stride of
 * the second-last) or col (transposed: the second-last dim has stride 1),
 * as the operand's layout gives it (an input's strides, a host permute):
 * no copy is made.  lda / ldb are the leading dims as the layout analysis
 * states them (symbolic where the sizes are).  The runtime checks the
 * actual strides against the order and takes the leading dims from them.
 * The epilogue is none, relu or gelu (the tanh form); the bias is a
 * vector along N. */
#ifndef FUSER_GEMM_H
#define FUSER_GEMM_H

#include <stdbool.h>

#include "fuser/ir.h"
#include "fuser/strbuf.h"

typedef enum fu_gemm_order { FU_GEMM_ROW, FU_GEMM_COL } fu_gemm_order;
typedef enum fu_gemm_act { FU_GEMM_ACT_NONE, FU_GEMM_ACT_RELU, FU_GEMM_ACT_GELU } fu_gemm_act;

const char *fu_gemm_act_name(fu_gemm_act a);

typedef struct fu_gemm {
  fu_value *a, *b;          /* the product's first and second operand */
  fu_value *d;              /* the result after the epilogue */
  fu_gemm_order a_order, b_order;
  const char *lda, *ldb;    /* leading dims as text, or NULL */
  fu_value *bias;           /* a vector along N, or NULL */
  double alpha;
  fu_gemm_act act;
  fu_loc loc;
} fu_gemm;

/* Whether a segment can run: it has a kernel, or it is a matmul segment
 * with its plan. */
bool fu_segment_runnable(const fu_op *seg);

/* The matmul or linear op of a segment's body, or NULL. */
fu_op *fu_gemm_product(const fu_op *seg);

/* Prints the plan line at `indent` spaces; `ref` as fu_schedule_print's
 * (NULL: values print as %name). */
typedef void (*fu_gemm_ref_fn)(void *user, fu_strbuf *out, const fu_value *v);
void fu_gemm_print(fu_strbuf *out, const fu_gemm *g, int indent, fu_gemm_ref_fn ref, void *user);

/* Checks a plan against its segment: a matmul segment whose body holds one
 * matmul or linear reading a and b, d one of the segment's outputs, the
 * bias a segment input or a value of the body.  Located errors. */
fu_status fu_gemm_verify(const fu_op *seg, const fu_gemm *g, fu_diag_engine *diag);

#endif
