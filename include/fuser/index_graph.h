/* fuser: index expressions, the index graph of a scheduled segment, and the
 * `index-graph` pass.
 *
 * Index expressions (fu_ix) are hash-consed integer expressions over
 * constants, extent symbols and variables (loop indices, vector lanes,
 * run-time strides), with + * / % and ceil_div.  All quantities are
 * non-negative, which the simplifier relies on ((x*q + y) / q = x + y / q).
 * Offsets are simplified as linear forms with the mixed-radix rule
 * q * (y / q) + (y % q) = y, so a row-major tensor indexed through merged
 * axes reads `G` rather than a chain of divisions.
 *
 * The index graph of a segment (fu_igraph) holds one iteration domain per
 * (tensor, dim), the exprs that relate them (exact maps of pointwise ops,
 * broadcasts, permutes, the merges and splits of reshapes, and the
 * schedule's transforms on the reference), the exact groups (union-find,
 * so cycles through resize exprs are harmless), the loop domain, and the
 * index of every tensor access in terms of the loop indices.  Indices are
 * keyed by (domain, expr): an access's index is found by walking the ops
 * from the consumer that reads the tensor back to the reference, never by
 * looking a domain up in its exact group, so one tensor read through two
 * exprs with different index math (a rotation and a residual add) gets the
 * right index on each path.  `lower` recomputes the graph from the IR (it
 * is a function of the ops and the schedule), so the pass itself writes
 * nothing: it checks that every segment is indexable and prints the graph
 * (--print-index-graph, --index-graph-dot=FILE). */
#ifndef FUSER_INDEX_GRAPH_H
#define FUSER_INDEX_GRAPH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "fuser/ir.h"
#include "fuser/kir.h"
#include "fuser/pass.h"
#include "fuser/schedule.h"
#include "fuser/strbuf.h"

/* ---- index expressions ------------------------------------------------------ */

typedef enum fu_ix_kind {
  FU_IX_CONST,
  FU_IX_SYM, /* an extent symbol */
  FU_IX_VAR, /* a variable: loop index, lane, run-time stride */
  FU_IX_ADD,
  FU_IX_MUL,
  FU_IX_DIV,     /* floor division (operands are non-negative) */
  FU_IX_MOD,
  FU_IX_CEILDIV,
} fu_ix_kind;

typedef struct fu_ix {
  fu_ix_kind kind;
  uint32_t id; /* dense per context, in creation order */
  int64_t value;          /* CONST */
  const char *sym;        /* SYM: the symbol; VAR: the variable's name */
  const struct fu_ix *a, *b;
  /* VAR: what the variable stands for, for its user */
  uint32_t tag;
  const void *payload;
  int32_t dim;
  int64_t bound; /* VAR: exclusive upper bound when > 0 */
} fu_ix;

typedef struct fu_ix_ctx fu_ix_ctx;

fu_ix_ctx *fu_ix_ctx_new(fu_allocator alloc);
void fu_ix_ctx_free(fu_ix_ctx *c);
/* True once an allocation failed: every constructor then returns NULL. */
bool fu_ix_failed(const fu_ix_ctx *c);
/* Whether constant folding met a sum or product of constants beyond int64
 * since the last call (the expression is then kept unfolded, and would
 * wrap in a kernel): the caller reports it where it knows what the
 * expression is.  Clears the flag. */
bool fu_ix_take_overflow(fu_ix_ctx *c);

const fu_ix *fu_ix_const(fu_ix_ctx *c, int64_t v);
/* `sym` is compared by its text. */
const fu_ix *fu_ix_sym(fu_ix_ctx *c, const char *sym);
/* A fresh variable (never merged with another).  `bound` > 0 is an
 * exclusive upper bound the simplifier may use. */
const fu_ix *fu_ix_var(fu_ix_ctx *c, const char *name, uint32_t tag, const void *payload, int32_t dim, int64_t bound);
const fu_ix *fu_ix_add(fu_ix_ctx *c, const fu_ix *a, const fu_ix *b);
const fu_ix *fu_ix_mul(fu_ix_ctx *c, const fu_ix *a, const fu_ix *b);
const fu_ix *fu_ix_div(fu_ix_ctx *c, const fu_ix *a, const fu_ix *b);
const fu_ix *fu_ix_mod(fu_ix_ctx *c, const fu_ix *a, const fu_ix *b);
const fu_ix *fu_ix_ceildiv(fu_ix_ctx *c, const fu_ix *a, const fu_ix *b);
/* The ix of an extent (constant or symbol). */
const fu_ix *fu_ix_extent(fu_ix_ctx *c, fu_extent e);

bool fu_ix_is_const(const fu_ix *x, int64_t *v);
/* Provably d divides x (for every binding of the symbols and variables). */
bool fu_ix_divides(const fu_ix *d, const fu_ix *x);
/* An exclusive constant upper bound of x, or -1 when none is known. */
int64_t fu_ix_upper(const fu_ix *x);
/* x with variable `var` replaced by `value`, simplified again. */
const fu_ix *fu_ix_subst(fu_ix_ctx *c, const fu_ix *x, const fu_ix *var, const fu_ix *value);
/* x as a linear form with the mixed-radix pairs folded
 * (q*(y/q) + (y%q) -> y), rebuilt canonically. */
const fu_ix *fu_ix_simplify_linear(fu_ix_ctx *c, const fu_ix *x);

/* How x varies along variable `lane` over [0, width): x = x0 + stride*lane
 * with x0 a multiple of `align` (0: x0 is 0), or not affine (ok false). */
typedef struct fu_ix_lane {
  bool ok;
  int64_t stride;
  int64_t align;
} fu_ix_lane;

fu_ix_lane fu_ix_lane_analyze(const fu_ix *x, const fu_ix *lane, int64_t width);

/* `((blockIdx.x * 128) + threadIdx.x) * 4`, with the variables' names. */
void fu_ix_print(fu_strbuf *out, const fu_ix *x);
/* The launch expression of an extent made of constants, symbols, * and
 * ceil_div (NULL if x holds anything else). */
fu_lexpr *fu_ix_to_lexpr(fu_module *m, const fu_ix *x);

/* ---- the index graph ---------------------------------------------------------- */

/* What an iteration domain is. */
typedef enum fu_id_kind {
  FU_ID_TENSOR, /* dim `dim` of tensor `value` */
  FU_ID_RESHAPE, /* an intermediate of a reshape's merge/split (belongs to `value`, the result) */
  FU_ID_AXIS,   /* a schedule axis (`axis`) */
} fu_id_kind;

typedef struct fu_id {
  fu_id_kind kind;
  const fu_value *value;
  int32_t dim;  /* TENSOR */
  int32_t axis; /* AXIS: index into the schedule's axes; TENSOR: the reference's axis, or -1 */
  const fu_ix *extent;
  uint32_t group; /* exact group (union-find root after fu_igraph_build) */
} fu_id;

typedef enum fu_iexpr_kind {
  FU_IE_MAP,       /* in[0] (producer dim) == out[0] (consumer dim), through `op` */
  FU_IE_BROADCAST, /* in[0] (extent 1) broadcast to out[0] through `op` */
  FU_IE_MERGE,     /* in[0] * in[1] -> out[0] (reshape or schedule) */
  FU_IE_SPLIT,     /* in[0] -> out[0], out[1] by factor (reshape or schedule) */
  FU_IE_NEW,       /* out[0] is a new dim of op's result (no producer) */
  FU_IE_RESIZE,    /* in[0] -> out[0] through a slice, pad or cat that moves or clips it */
} fu_iexpr_kind;

typedef struct fu_iexpr {
  fu_iexpr_kind kind;
  const fu_op *op; /* NULL for schedule transforms */
  uint32_t in[2], out[2];
  uint32_t n_in, n_out;
  const fu_ix *factor; /* SPLIT: the inner extent */
} fu_iexpr;

/* How a global tensor is accessed along the vector axis. */
typedef enum fu_amode {
  FU_AM_VECTOR,  /* one vector access per vector */
  FU_AM_UNIFORM, /* the same element for every lane: one scalar load */
  FU_AM_LANES,   /* one scalar access per lane */
} fu_amode;

/* One access of a global tensor (a load of a segment input, or a store of
 * a segment output), at the coordinates `coords` (one ix per dim, in terms
 * of loop indices), with `offset` the element offset. */
typedef struct fu_iaccess {
  const fu_value *value;
  bool is_store;
  const fu_op *user; /* the op that reads it (NULL for a store) */
  const fu_ix **coords;
  const fu_ix *offset;
  fu_amode mode;
  const char *why_not_vector; /* when mode != VECTOR and a vector was asked for */
} fu_iaccess;

typedef struct fu_igraph fu_igraph;

/* Builds the index graph of segment `seg` of f under its schedule `s`.
 * Problems (a tensor the loop domain does not reach, an output reached
 * more than once, a layout that cannot be indexed) are reported to `diag`
 * at the segment or schedule and give FU_ERR_VERIFY; unsupported ops give
 * FU_ERR_UNSUPPORTED.  The graph keeps pointers into f. */
fu_status fu_igraph_build(fu_fusion *f, fu_op *seg, const fu_schedule *s, fu_allocator alloc, fu_diag_engine *diag,
                          fu_igraph **out);
void fu_igraph_free(fu_igraph *g);

fu_ix_ctx *fu_igraph_ix(fu_igraph *g);
const fu_schedule *fu_igraph_schedule(const fu_igraph *g);
const fu_op *fu_igraph_segment(const fu_igraph *g);
const fu_fusion *fu_igraph_fusion(const fu_igraph *g);
uint32_t fu_igraph_num_ids(const fu_igraph *g);
const fu_id *fu_igraph_id(const fu_igraph *g, uint32_t i);
uint32_t fu_igraph_num_exprs(const fu_igraph *g);
const fu_iexpr *fu_igraph_expr(const fu_igraph *g, uint32_t i);
/* The domain of dim `dim` of tensor v, or UINT32_MAX. */
uint32_t fu_igraph_tensor_id(const fu_igraph *g, const fu_value *v, int32_t dim);

/* The loop domain: extent and index variable of every loop axis, in loop
 * order, and the index (in terms of the loop variables) of every schedule
 * axis. */
const fu_ix *fu_igraph_loop_var(const fu_igraph *g, uint32_t loop);
const fu_ix *fu_igraph_axis_extent(const fu_igraph *g, uint32_t axis);
const fu_ix *fu_igraph_axis_index(const fu_igraph *g, uint32_t axis);
/* The vectorize loop's variable and width (NULL and 1 without one). */
const fu_ix *fu_igraph_lane_var(const fu_igraph *g, int64_t *width);

/* Predicates: iteration is valid iff pred_index[i] < pred_extent[i] for
 * every i (one per guarded merged axis of the reference, and with a
 * peeled split one more for its lower bound, p - (outer * V + inner) < 1,
 * which decreases along the lane). */
uint32_t fu_igraph_num_predicates(const fu_igraph *g);
void fu_igraph_predicate(const fu_igraph *g, uint32_t i, const fu_ix **index, const fu_ix **extent);
/* A peeled split's (tail=peel) shift variable p, in [0, V), which the
 * lowering binds per run so that the vectors of *value (the schedule's
 * access=vector tensor, or NULL when it names none) start on 16-byte
 * boundaries; NULL without a peeled split. */
const fu_ix *fu_igraph_peel_var(const fu_igraph *g, const fu_value **value);

/* The coordinates of every tensor value of the segment (one ix per dim),
 * as first reached from the reference; NULL for values not reached. */
const fu_ix *const *fu_igraph_coords(const fu_igraph *g, const fu_value *v);
/* The operand coordinates of op's operand i given the result coordinates
 * (the index graph's back map through op).  NULL when op cannot be indexed
 * that way. */
const fu_ix **fu_igraph_back_map(fu_igraph *g, const fu_op *op, uint32_t operand, const fu_ix *const *result_coords);

/* The canonical copy of coordinate tuple c (rank entries), so equal tuples
 * are the same pointer. */
const fu_ix *const *fu_igraph_intern_coords(fu_igraph *g, const fu_ix *const *c, uint32_t rank);

/* The element offset of an access to global tensor v at `coords`, with
 * v's layout (strides, run-time stride variables for unknown ones). */
const fu_ix *fu_igraph_offset(fu_igraph *g, const fu_value *v, const fu_ix *const *coords);
/* How an access at `offset` varies along the vector lane (with the reason
 * it is not a vector access in *why). */
fu_amode fu_igraph_access_mode(fu_igraph *g, const fu_value *v, const fu_ix *offset, const char **why);

/* Every global access of the segment, stores first (outputs in order),
 * then loads in the order lower reaches them. */
uint32_t fu_igraph_num_accesses(const fu_igraph *g);
const fu_iaccess *fu_igraph_access(const fu_igraph *g, uint32_t i);

/* The index type: i32 when every tensor provably spans fewer than 2^31
 * elements (and the loop indices stay below it), else i64. */
fu_dtype fu_igraph_index_dtype(const fu_igraph *g);

/* The run-time stride variables an offset may use: tensor `value` dim `dim`
 * (tag FU_IG_VAR_STRIDE).  Variable tags: */
enum { FU_IG_VAR_LOOP = 1, FU_IG_VAR_STRIDE = 2, FU_IG_VAR_TAIL = 3, FU_IG_VAR_RESIZE = 4, FU_IG_VAR_GATHER = 5,
       FU_IG_VAR_PEEL = 6 };

/* A pad's or a cat's operand is read at a clamped coordinate: a variable
 * (tag FU_IG_VAR_RESIZE, named by its formula, bound below `extent`)
 * standing for clamp(src - shift, 0, extent - 1), with src an expression
 * of the result's coordinate.  False when `var` is not one of g's. */
bool fu_igraph_resize_var(const fu_igraph *g, const fu_ix *var, const fu_ix **src, int64_t *shift, int64_t *extent);
/* An indexing op's lookup operand (ir.h, "indexing ops") is read at a
 * coordinate that is data: a variable (tag FU_IG_VAR_GATHER, bound below
 * the lookup's extent when it is a constant) standing for the element of
 * op's index operand at coordinates `icoords`, which the lowering loads,
 * checks against the extent and clamps into it.  One variable per (op,
 * icoords); where icoords vary along the vector lane the variable is
 * lanewise, as a resize clamp can be (below).  False when `var` is not one
 * of g's. */
bool fu_igraph_gather_var(const fu_igraph *g, const fu_ix *var, const fu_op **op, const fu_ix *const **icoords);

/* Under a vectorize axis, a pad's or cat's operand coordinate is the same
 * in every lane, or moves by 1 per lane within aligned vectors (the
 * variable then stands for the vector's index, times the width, plus the
 * lane), or else is lanewise: true when some coordinate is.  A lanewise
 * variable's accesses go lane by lane (fu_igraph_access_mode), and x at
 * lane `lane_value` (the lane variable already replaced in x) must have
 * each lanewise variable replaced by that lane's instance:
 * fu_igraph_resize_at_lane. */
bool fu_igraph_resize_lanewise(const fu_igraph *g);
const fu_ix *fu_igraph_resize_at_lane(fu_igraph *g, const fu_ix *x, const fu_ix *lane_value);
/* Whether x names a lanewise clamped coordinate: an access at such an
 * offset goes lane by lane whatever its tensor's access mode, so the
 * schedule need not mark the tensor access=scalar for it. */
bool fu_igraph_names_lanewise(fu_igraph *g, const fu_ix *x);
/* Whether x names any clamped coordinate of a pad's or cat's operand.  A
 * store never may: that tensor's elements would not be reached one to one
 * from the loops. */
bool fu_igraph_names_clamp(fu_igraph *g, const fu_ix *x);

/* Text form (--print-index-graph), and Graphviz form: a subgraph cluster
 * per segment, to be written inside `digraph { ... }`. */
void fu_igraph_print(fu_strbuf *out, const fu_igraph *g);
fu_status fu_igraph_write_dot(const fu_igraph *g, FILE *out);

/* ---- the pass ----------------------------------------------------------------- */

extern const fu_pass_def fu_pass_index_graph;

#endif
