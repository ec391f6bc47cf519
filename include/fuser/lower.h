/* fuser: the `lower` pass: scheduled segments to kernel IR.
 *
 * Each segment that has a schedule gets a kernel (fu_segment_info.kernel),
 * printed inside the segment after its schedule and parsed back with it.
 * The kernel's parameters are, in order: the segment's tensor inputs
 * (readonly, noalias, aligned to 16 bytes when read with vectors), its
 * tensor outputs (noalias), its scalar inputs, then the extents and
 * run-time strides its index math needs, as they are first used.  Host
 * ops (op->host) are not lowered: the runtime applies them to the buffers
 * (fuser/view_layout.h gives the layouts the kernel assumes).
 *
 * Lowering recomputes the segment's index graph (fuser/index_graph.h): the
 * graph is a function of the ops and the schedule, so nothing of it is
 * stored in the IR. */
#ifndef FUSER_LOWER_H
#define FUSER_LOWER_H

#include <stdio.h>

#include "fuser/ir.h"
#include "fuser/kir.h"
#include "fuser/pass.h"

extern const fu_pass_def fu_pass_lower;

/* Lowers segment `seg` of f (which must have a schedule) into *out, in the
 * module's arena, with the lowering its kind's row of kinds.def names
 * (FU_ERR_UNSUPPORTED, with an error, for a kind without one).  Errors are
 * located at the op or schedule line that cannot be lowered. */
fu_status fu_lower_segment(fu_fusion *f, fu_op *seg, fu_diag_engine *diag, fu_kernel **out);

/* What the lower pass's switches turn off (all false: the defaults). */
typedef struct fu_lower_options {
  bool no_exp16;        /* --disable=exp16: every f32 exp keeps the backends' accurate form (relax_exp.c) */
  bool no_speculate_loads; /* --disable=speculate_loads: guarded loads stay in their branch (speculate_loads.c) */
  bool no_welford_sums; /* --disable=welford_sums: a known-count thread keeps Welford's update (reduction.c) */
  bool grid_tree;       /* --enable=grid_tree: a grid's Welford combine in two levels (reduction.c) */
} fu_lower_options;

/* A lowering: the LOWER column of kinds.def (same contract as
 * fu_lower_segment; opt: the lower pass's switches, NULL for the
 * defaults). */
typedef fu_status (*fu_lower_entry_fn)(fu_fusion *f, fu_op *seg, const fu_lower_options *opt, fu_diag_engine *diag,
                                       fu_kernel **out);

/* The lowering of kind k, or NULL while the kind has none. */
fu_lower_entry_fn fu_lower_entry(fu_sched_kind k);

/* The pointwise lowering (passes/lower/pointwise.c), also the transpose
 * kind's fallback. */
fu_status fu_lower_pointwise(fu_fusion *f, fu_op *seg, const fu_lower_options *opt, fu_diag_engine *diag,
                             fu_kernel **out);
/* The scan lowering (passes/lower/scan.c): one thread per line. */
fu_status fu_lower_scan(fu_fusion *f, fu_op *seg, const fu_lower_options *opt, fu_diag_engine *diag, fu_kernel **out);

/* The transpose lowering (passes/lower/transpose.c): a schedule with a
 * shared-memory tile (fu_transpose_tile), else the pointwise lowering. */
fu_status fu_lower_transpose(fu_fusion *f, fu_op *seg, const fu_lower_options *opt, fu_diag_engine *diag,
                             fu_kernel **out);

/* The reduction lowering (passes/lower/reduction.c). */
fu_status fu_lower_reduction(fu_fusion *f, fu_op *seg, const fu_lower_options *opt, fu_diag_engine *diag,
                             fu_kernel **out);
/* The persistent lowering (passes/lower/persistent.c): normalizations,
 * the row kept in registers or reread by each pass. */
fu_status fu_lower_persistent(fu_fusion *f, fu_op *seg, const fu_lower_options *opt, fu_diag_engine *diag,
                              fu_kernel **out);

/* Lowers every scheduled segment of m (replacing a kernel already there:
 * lowering is deterministic, so running it twice changes nothing). */
fu_status fu_lower_module(fu_module *m, fu_diag_engine *diag, FILE *debug);
/* fu_lower_module with options (NULL: the defaults). */
fu_status fu_lower_module_with(fu_module *m, const fu_lower_options *opt, fu_diag_engine *diag, FILE *debug);

/* The kernels of every segment of m, in fusion and segment order, into
 * out[0..cap); returns how many there are.  Segments without a kernel are
 * counted in *missing (may be NULL). */
uint32_t fu_module_kernels(fu_module *m, fu_kernel **out, uint32_t cap, uint32_t *missing);

/* The entry-point name lower gives a segment's kernel: `<fusion>_<segment>`
 * with characters outside [A-Za-z0-9_] replaced by '_'. */
void fu_kernel_name_for(const fu_fusion *f, const fu_op *seg, char *buf, size_t cap);

#endif
