/* fuser: what the schedulers of passes/schedule/ share. */
#ifndef FUSER_PASSES_SCHEDULE_INTERNAL_H
#define FUSER_PASSES_SCHEDULE_INTERNAL_H

#include <stdio.h>

#include "fuser/example_sizes.h"
#include "fuser/index_graph.h"
#include "fuser/schedule.h"

/* The segment's largest tensor output at the example sizes (unbound
 * symbols count 4096), the first on ties, with its element count in
 * *numel; NULL when it has none (passes/schedule/pointwise.c). */
const fu_value *fu_schedule_largest_output(const fu_op *seg, const fu_example_sizes *bind, double *numel);

/* The reference's logical dims as the first axes of a schedule being
 * built: axes[d] named names[d] = "d<d>" for d < rank; returns the rank
 * (passes/schedule/pointwise.c). */
uint32_t fu_schedule_ref_axes(const fu_value *ref, fu_saxis *axes, char (*names)[16]);

/* Marks tail=exact every split of s whose factor provably divides its
 * input's extent in g, the index graph of s (a property of the extents
 * only, so a graph of the all-guard schedule decides it). */
void fu_schedule_exact_tails(fu_igraph *g, fu_schedule *s);

/* Whether a resize segment has a pad or a cat, whose clamped operand
 * coordinates the lane analysis cannot see through: then no vectors
 * (passes/schedule/resize.c). */
bool fu_schedule_resize_scalar(const fu_op *seg);

/* Appends to s a `tensor ... {access=scalar}` line for every access that
 * g, the index graph of s, cannot make a vector (passes/schedule/accesses.c). */
fu_status fu_schedule_mark_scalar(fu_module *m, fu_igraph *g, fu_schedule *s);

/* A scheduler whose vectors are at most `cap` elements wide; *vw_used: the
 * width it chose (1: scalar). */
typedef fu_status (*fu_schedule_width_fn)(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag,
                                          FILE *debug, int64_t cap, int64_t *vw_used, fu_schedule **out);

/* build's schedule, rebuilt with half the vector width while the schedule
 * verifier refuses it (passes/schedule/narrow.c). */
fu_status fu_schedule_narrowed(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag, FILE *debug,
                               fu_schedule_width_fn build, fu_schedule **out);

/* The inputs a persist=smem schedule stages (passes/schedule/persist_stage.c):
 * of the full-size inputs `full` (in operand order), those that more than
 * one pass reads, while their `rows` rows (per block) of `row` elements
 * and the slots of the reductions of a block of `threads` threads fit the
 * device's shared memory per block; the others that more than one pass
 * reads are `left` (reread from global memory). */
typedef struct fu_stage_plan {
  const fu_value *staged[FU_STAGE_MAX];
  uint32_t n_staged;
  const fu_value *left[FU_STAGE_MAX];
  int64_t left_bytes[FU_STAGE_MAX];
  uint32_t n_left;
  int64_t rows, row; /* rows per block, elements per row */
  int64_t bytes; /* of the staged rows */
  int64_t slots; /* at most, of the reductions' slots */
  int64_t limit; /* the shared memory a block may have (fu_persist_smem_limit) */
  /* whether the segment reads a tensor input not staged (a weight, read
   * through L1 by every block); the first such input that a reduction's
   * operand reads (a weight the first pass loads beside the row), or NULL */
  bool reads_unstaged;
  const fu_value *reduced_unstaged;
  /* keep= (fu_schedule_stage_keep): the chunks each thread keeps in
   * registers of every staged input (0: none), at `threads` threads a row
   * of `chunks` chunks a thread */
  int64_t keep, threads, chunks;
  bool keep_refused; /* keep= not tried: a reduction reads reduced_unstaged */
} fu_stage_plan;
fu_status fu_schedule_stage_plan(fu_fusion *f, const fu_op *seg, const fu_value *const *full, uint32_t n_full,
                                 int64_t rows, int64_t row, int64_t threads, const fu_device *dev, fu_stage_plan *out);
/* Whether plan sp (one row per block, of `vecs` vectors of vw elements)
 * takes keep=: its staged rows let one block an SM, and KEEP_THREADS
 * threads a row keeping their first chunks in registers (half of what two
 * blocks leave a thread) let two; then sp says how (keep, threads,
 * chunks, and the staged and slot bytes that remain). */
bool fu_schedule_stage_keep(const fu_op *seg, const fu_device *dev, int64_t vecs, int64_t vw, fu_stage_plan *sp);

/* The inner-outer rewrite (passes/schedule/inner_outer.c): the parts of
 * the partial sums persistent segment `seg` would take with `n_partials`
 * of them, 0 when its schedule could not hold them
 * (passes/schedule/persistent.c). */
int64_t fu_schedule_inner_outer_parts(fu_fusion *f, const fu_op *seg, uint32_t n_partials, const fu_device *dev);
/* Folds the outer sums of reduction segments into the persistent segments
 * of f that read the same rows, as partial sums (--debug=schedule says
 * which). */
fu_status fu_schedule_inner_outer(fu_fusion *f, const fu_device *dev, FILE *debug);

#endif
