/* fuser: memory layouts of tensor values, and when a view op is a pure
 * reinterpretation of its operand's memory.
 *
 * A layout gives one stride per dim, in elements.  Strides are symbolic
 * monomials: a constant times a product of atoms, where an atom is an extent
 * symbol (`N`) or the unknown run-time stride of one dim of an input that
 * was declared non-contiguous (printed `stride(%T0, 1)`).  Equal monomials
 * are equal for every binding of the symbols, so "these two dims are
 * contiguous with each other" is decided exactly when it can be proved and
 * answered "no" (conservatively) otherwise.  A stride of 0 is a broadcast
 * or expanded dim.  Strides of dims whose extent is the constant 1 never
 * matter (their index is always 0): views give them the value PyTorch's
 * unsqueeze would (inner stride times inner extent), and comparisons ignore
 * them.
 *
 * Where layouts come from (fu_layout_analysis_value):
 *   - an input: its declared layout (`strides`, or `stride_order` plus
 *     `contiguity`, default contiguous row-major);
 *   - a host op (op->host, set by strip-bookend-views): its operand's layout
 *     pushed through the view (fu_layout_apply_view);
 *   - a value computed by a kernel: dense row-major, except when host ops
 *     read it and lead to fusion outputs: then the kernel writes it in the
 *     layout that makes those outputs dense row-major
 *     (fu_layout_analysis_choose_root), e.g. permuted when a host permute
 *     follows it.
 * The runtime uses these layouts to bind kernel arguments (a kernel reads a
 * host alias of an input with the alias's strides) and to allocate the
 * buffers that outputs alias.  It must check that the actual input tensors
 * match the declared layout on every dim of extent > 1. */
#ifndef FUSER_VIEW_LAYOUT_H
#define FUSER_VIEW_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "fuser/ir.h"
#include "fuser/strbuf.h"

/* One factor of a symbolic stride: the extent symbol `sym`, or (sym == NULL)
 * the run-time stride of dim `dim` of the input value `input`. */
typedef struct fu_stride_atom {
  const char *sym;
  const fu_value *input;
  int32_t dim;
} fu_stride_atom;

#define FU_STRIDE_MAX_ATOMS 20

/* coef * atoms[0] * ... * atoms[n_atoms-1]; atoms sorted (symbols by name,
 * then input strides by input id and dim).  coef == 0 means stride 0 and
 * then n_atoms == 0. */
typedef struct fu_stride {
  int64_t coef;
  uint32_t n_atoms;
  fu_stride_atom atoms[FU_STRIDE_MAX_ATOMS];
} fu_stride;

typedef struct fu_view_layout {
  int32_t rank; /* FU_SCALAR_RANK for a scalar: no strides */
  fu_stride strides[FU_MAX_RANK];
} fu_view_layout;

/* ---- stride algebra ---------------------------------------------------- */

void fu_stride_const(fu_stride *s, int64_t c);
bool fu_stride_equal(const fu_stride *a, const fu_stride *b);
/* s *= e.  False (s unspecified) on overflow or too many atoms. */
bool fu_stride_mul_extent(fu_stride *s, fu_extent e);
/* out = a * b.  False on overflow or too many atoms. */
bool fu_stride_mul(const fu_stride *a, const fu_stride *b, fu_stride *out);
/* "1", "3072", "128 * N", "stride(%T0, 1) * 64", "0". */
void fu_stride_print(fu_strbuf *sb, const fu_stride *s);

/* ---- layouts ----------------------------------------------------------- */

/* Dense row-major strides of type t.  False when a stride has too many
 * atoms or overflows. */
bool fu_layout_row_major(const fu_type *t, fu_view_layout *out);
/* The declared layout of an INPUT op's result.  False, with the reason
 * appended to `why` (may be NULL), when the layout attributes are
 * inconsistent (the verifier reports those as errors). */
bool fu_layout_of_input(const fu_op *input, fu_view_layout *out, fu_strbuf *why);
/* True when l equals t's row-major strides on every dim whose extent is not
 * the constant 1 (a tensor laid out like this is dense row-major). */
bool fu_layout_is_row_major(const fu_type *t, const fu_view_layout *l);
/* "[393216, 3072, 1]". */
void fu_layout_print(fu_strbuf *sb, const fu_view_layout *l);

/* ---- views ------------------------------------------------------------- */

/* A reshape from `from` to `to` of a tensor laid out as `in`.  Dims of
 * constant extent 1 are dropped or added freely; the others are matched in
 * groups of equal extent products (symbolically: equal monomials).  Each
 * group is a view iff its operand dims are contiguous with each other
 * (stride[i] == stride[i+1] * extent[i+1]); the group's result dims are then
 * laid out contiguously from the stride of its innermost operand dim.
 * Returns true with *out set and appends what the reshape does ("splits dim
 * 0 of <desc>") to `note`; or false, appending why it is not a view
 * ("merges dims 1 and 2 of <desc>, which are not contiguous (stride 1 != 64 *
 * 128)").  `desc` names the operand in the note ("%T0", "contiguous input
 * %T0"); `note` may be NULL. */
bool fu_layout_reshape(const fu_type *from, const fu_view_layout *in, const fu_type *to,
                       fu_view_layout *out, const char *desc, fu_strbuf *note);

/* The layout of op's result given its operand's layout `in`, for any
 * FU_OF_VIEW op: reshape (fu_layout_reshape), permute (strides permute),
 * squeeze (size-1 dims dropped), broadcast and broadcast_in_dim (new dims:
 * size 1, or stride 0 when their extent is not 1), expand (stride 0 on the
 * expanded dims), and set, which this function treats as an alias (same
 * layout): whether a set may alias rather than copy is the caller's
 * decision (strip-bookend-views: never at the input end).  True with *out
 * and a note saying what the view does; false with the reason (not a view,
 * malformed op, or strides too complex to reason about). */
bool fu_layout_apply_view(const fu_op *op, const fu_view_layout *in, fu_view_layout *out,
                          const char *desc, fu_strbuf *note);

/* The layout of op's operand given its result's layout `in`: the inverse
 * reinterpretation, used to derive the layout a kernel must write so that a
 * host view of it comes out dense.  Not checked for legality (apply the view
 * forward to check). */
bool fu_layout_unapply_view(const fu_op *op, const fu_view_layout *in, fu_view_layout *out);

/* ---- layouts of the values of one fusion -------------------------------- */

/* Per-fusion state: use lists, which values are fusion outputs, and
 * memoized layouts of inputs and host values.  Valid while the fusion's ops
 * and host flags do not change (strip-bookend-views keeps one across its
 * input-end walk because it only marks ops after their operands). */
typedef struct fu_layout_analysis {
  fu_fusion *fusion;
  fu_allocator alloc;
  fu_use_map uses;
  uint32_t n_values;
  bool *is_output;      /* per value id: an operand of an OUTPUT op */
  fu_stride **memo;     /* per value id: rank strides, or NULL */
  uint8_t *memo_state;  /* per value id: 0 unknown, 1 memo valid, 2 not a view */
} fu_layout_analysis;

fu_status fu_layout_analysis_init(fu_layout_analysis *a, fu_fusion *f);
void fu_layout_analysis_free(fu_layout_analysis *a);
/* Drop memoized layouts (after host flags changed). */
void fu_layout_analysis_forget(fu_layout_analysis *a);

static inline bool fu_layout_analysis_is_output(const fu_layout_analysis *a, const fu_value *v) {
  return v->id < a->n_values && a->is_output[v->id];
}

/* The layout of value v as kernels and the runtime see it (see the top of
 * this file).  FU_OK with *out; FU_ERR_UNSUPPORTED with the reason in `why`
 * (may be NULL) when v is the result of a host op that is not a pure view of
 * its operand, or of an input whose layout is inconsistent; FU_ERR_NOMEM. */
fu_status fu_layout_analysis_value(fu_layout_analysis *a, const fu_value *v, fu_view_layout *out,
                                   fu_strbuf *why);

/* Which ops belong to an output-end tree of host views (for the analysis:
 * op->host; strip-bookend-views passes its candidates). */
typedef bool (*fu_layout_member_fn)(const fu_op *op, void *user);

/* Under layout `in` for op's operand: is op, with every member op that
 * reads its result (transitively), a pure view, does every fusion output
 * among their results come out dense row-major, and does every set among
 * them alias a buffer nobody else sees?  `exclusive` says whether op's
 * operand is such a buffer (not an output, op its only use).  False with the
 * first problem in `why`; FU_ERR_NOMEM in *st (initialised FU_OK by the
 * caller) when scratch allocation failed. */
bool fu_layout_analysis_tree_ok(fu_layout_analysis *a, const fu_op *op, const fu_view_layout *in,
                                bool exclusive, fu_layout_member_fn member, void *user,
                                fu_strbuf *why, fu_status *st);

/* The layout a kernel should write value p in, when member ops read p and
 * lead to fusion outputs.  Tries dense row-major first; then, when p is not
 * a fusion output and only member ops read it (so nobody else sees p's
 * buffer), layouts derived backward from each output the tree reaches
 * (at most 8).  True with *out when one makes the whole tree valid
 * (fu_layout_analysis_tree_ok for every member op reading p); false with
 * *out dense row-major and the row-major problem in `why`. */
bool fu_layout_analysis_choose_root(fu_layout_analysis *a, const fu_value *p,
                                    fu_layout_member_fn member, void *user, fu_view_layout *out,
                                    fu_strbuf *why, fu_status *st);

/* Convenience: the layout of v in its fusion, with a throwaway analysis. */
fu_status fu_value_layout(fu_fusion *f, const fu_value *v, fu_view_layout *out, fu_strbuf *why);

#endif
