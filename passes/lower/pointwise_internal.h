/* fuser: the pointwise lowering's evaluator, for lowerings built on it
 * (passes/lower/pointwise.c defines it; passes/lower/transpose.c uses it).
 *
 * A lowering state `lw` holds the kernel being built, its parameters, the
 * index expressions emitted in the current scope chain (by ix id, popped
 * with the scope), and the memo of values evaluated in the current body
 * (by value, coordinates and lane).  A lowering that stages data through
 * shared memory puts the staged values in the memo before evaluating the
 * outputs (fu_pwl_memo_put), and binds a loop variable of its index graph
 * to a kernel value with fu_pwl_bind. */
#ifndef FUSER_PASSES_LOWER_POINTWISE_INTERNAL_H
#define FUSER_PASSES_LOWER_POINTWISE_INTERNAL_H

#include "fuser/index_graph.h"
#include "fuser/lower.h"
#include "fuser/schedule.h"
#include "lower_internal.h"

enum { MAX_LANES = 16, FU_PWL_MAX_ARGS = 8 /* operands evaluated before an op: a cat's inputs */ };

typedef struct memo_ent {
  const fu_value *v;
  const fu_ix *const *c;
  uint32_t lane;
  fu_kval *kv;
} memo_ent;

/* A value being evaluated: v at coordinates c in lane `lane`, waiting for
 * its op's operands (args[0 .. next) are done). */
typedef struct eval_frame {
  const fu_value *v;
  const fu_ix *const *c;
  uint32_t lane, next;
  fu_kval *args[FU_PWL_MAX_ARGS];
} eval_frame;

typedef struct lw {
  fu_module *m;
  fu_fusion *f;
  fu_op *seg;
  const fu_schedule *s;
  fu_igraph *g;
  fu_ix_ctx *ix;
  fu_diag_engine *diag;
  fu_kernel *k;
  fu_dtype idx;
  fu_allocator alloc;
  fu_kbuilder b;
  bool failed;
  /* an output is written in place over an input (mark_inplace): the body
   * computes every output before it stores any */
  bool inplace;
  /* parameters */
  fu_kval **tparam; /* by fusion value id */
  fu_kval **sparam;
  /* index expressions emitted in the current scope chain (extent and
   * stride parameters made on first use) */
  fu_lix lix;
  /* scalars converted to a compute dtype, in the current body */
  struct {
    const void *src; /* a literal's fu_value, or a kernel value */
    fu_kval *out;
  } casts[64];
  uint32_t n_casts;
  /* values of the current body */
  memo_ent *memo;
  uint32_t memo_cap, memo_n;
  /* the pending evaluations (eval's explicit stack) */
  eval_frame *stk;
  uint32_t stk_n, stk_cap;
  /* lanes */
  const fu_ix *lane;
  int64_t width;
  bool vector_ctx;
  const fu_ix *lane_val[MAX_LANES]; /* what the lane variable is in lane j */
  uint32_t n_lanes;
  /* fu_pwl_begin / fu_pwl_end */
  uint32_t nv;              /* entries of tparam and sparam */
  unsigned errors_before;   /* diagnostics before lowering began */
  fu_status status;         /* the graph's failure, reported as is */
  /* a lowering of its own inside the schedule's loops: fu_pwl_loops emits
   * loops [0, loop_end) (0: all) and then calls at_innermost (NULL: the
   * pointwise body) */
  uint32_t loop_end;
  void (*at_innermost)(struct lw *L);
  void *user;
  /* the kernel's index error flag (passes/lower/gather.c), made on first use */
  fu_kval *index_error;
} lw;


/* Sets up L for segment seg of f, with the index graph of schedule `s`
 * (the segment's own, or one a lowering derives from it): the graph, the
 * kernel, its tensor and scalar parameters.  False after an error (then
 * call fu_pwl_end all the same). */
bool fu_pwl_begin(lw *L, fu_fusion *f, fu_op *seg, const fu_schedule *s, fu_diag_engine *diag);
/* Verifies the kernel, frees L's scratch and the graph; *out is the kernel
 * when everything succeeded. */
fu_status fu_pwl_end(lw *L, fu_kernel **out);

bool fu_pwl_oom(lw *L);
uint32_t fu_pwl_scope_mark(const lw *L);
void fu_pwl_scope_pop(lw *L, uint32_t mark);
/* Index expression x stands for kernel value kv until the scope is popped
 * (a loop variable bound to the lowering's own loop or thread index). */
void fu_pwl_bind(lw *L, const fu_ix *x, fu_kval *kv);
fu_kval *fu_pwl_emit_ix(lw *L, const fu_ix *x);
fu_kval *fu_pwl_const_idx(lw *L, int64_t v);
/* v at coordinates c (lane 0), evaluated demand driven through the memo. */
fu_kval *fu_pwl_eval(lw *L, const fu_value *v, const fu_ix *const *c);
void fu_pwl_memo_put(lw *L, const fu_value *v, const fu_ix *const *c, fu_kval *kv);
void fu_pwl_memo_clear(lw *L);
fu_kval *fu_pwl_cast_to(lw *L, fu_kval *x, fu_dtype t);
/* The conjunction of the graph's predicates at the current bindings, NULL
 * when there is none (or after an error: check L->failed). */
fu_kval *fu_pwl_predicate(lw *L);
/* Opens `if (cond)` and continues building in its then-block. */
fu_kinst *fu_pwl_open_if(lw *L, fu_kval *cond);
/* x with the vector lane variable replaced by lane `lane`'s value. */
const fu_ix *fu_pwl_at_lane(lw *L, const fu_ix *x, uint32_t lane);
/* The launch from the schedule's loops: block from the threadIdx axes,
 * grid from the blockIdx axes (false after an error). */
bool fu_pwl_make_launch(lw *L);
/* Output o's coordinates and offset, or false after a located error. */
bool fu_pwl_output_at(lw *L, const fu_value *o, const fu_ix *const **c, const fu_ix **off);
/* The schedule's loops (to loop_end), then the innermost point. */
void fu_pwl_loops(lw *L);

/* passes/lower/resize.c: the clamped coordinate `var` (FU_IG_VAR_RESIZE)
 * of a pad's or cat's operand, and the element of a pad or cat result v at
 * coordinates c in vector lane `lane` from its operands' elements args
 * (pad_value: the pad's scalar), named `name`. */
fu_kval *fu_pwl_resize_index(lw *L, const fu_ix *var);
fu_kval *fu_pwl_resize_value(lw *L, const fu_op *op, const fu_value *v, const fu_ix *const *c, uint32_t lane,
                             fu_kval **args, fu_kval *pad_value, char *name);

/* passes/lower/gather.c: the gathered coordinate `var` (FU_IG_VAR_GATHER)
 * of an indexing op's lookup operand: the index element, checked against
 * the lookup's extent (an index outside it sets the kernel's error flag to
 * the op's id + 1) and clamped into it, so no load leaves the tensor. */
fu_kval *fu_pwl_gather_index(lw *L, const fu_ix *var);

#endif
