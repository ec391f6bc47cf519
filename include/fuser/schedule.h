/* fuser: schedules, and the `schedule` pass.
 *
 * A schedule is data attached to a segment (fu_segment_info.schedule) and
 * printed inside it, after its ops (docs/ir.md, "Schedules"):
 *
 *   schedule {device=h100, arch=sm_90, index=i32} {
 *     reference %T9 [d0, d1, d2]
 *     merge d0, d1 -> d3
 *     merge d3, d2 -> d4
 *     split d4, 4 -> d5, d6 {tail=exact}
 *     split d5, 128 -> d7, d8 {tail=guard}
 *     loop [d7: blockIdx.x, d8: threadIdx.x, d6: vectorize]
 *     tensor %T1 {memory=global, access=vector}
 *     tensor %T3 {memory=local, inline=3}
 *   }
 *
 * The axes of the reference tensor's logical domain are named, then
 * transformed (merge, split with a factor and a tail strategy) into the loop
 * domain; `loop` lists the loop axes outermost first (the order is the
 * reorder) with their parallel types.  Every other tensor of the segment
 * follows the reference through the index graph (include/fuser/index_graph.h).
 * `tensor` lines give the memory space, inline position and access mode of
 * individual tensors; tensors not listed take the defaults.
 *
 * Schedules live in the module arena.  fu_schedule_verify checks one
 * against its segment with located errors; the parser calls it for every
 * schedule it reads, and the `schedule` pass for every schedule it writes. */
#ifndef FUSER_SCHEDULE_H
#define FUSER_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

#include "fuser/device.h"
#include "fuser/ir.h"
#include "fuser/kir.h"
#include "fuser/pass.h"
#include "fuser/strbuf.h"

/* Parallel types of loop axes (nvFuser's names). */
typedef enum fu_ptype {
  FU_PT_SERIAL,
  FU_PT_BLOCK_X, /* blockIdx.x */
  FU_PT_BLOCK_Y, /* blockIdx.y */
  FU_PT_THREAD_X, /* threadIdx.x */
  FU_PT_THREAD_Y, /* threadIdx.y */
  FU_PT_VECTORIZE,
  FU_PT_UNROLL,
  /* the block's rank in a thread-block cluster (sm_90): a reduced axis of
   * a persistent schedule split over 2, 4 or 8 blocks that combine their
   * partial results through distributed shared memory */
  FU_PT_CLUSTER_X, /* cluster.x */
  FU_PT_COUNT
} fu_ptype;

const char *fu_ptype_name(fu_ptype p);

/* The most blocks a launch may have along a block axis (blockIdx.x:
 * 2^31 - 1, blockIdx.y: 65535, on every architecture fuser targets). */
static inline int64_t fu_block_axis_limit(fu_ptype p) { return p == FU_PT_BLOCK_X ? 2147483647 : 65535; }
/* FU_PT_COUNT when `name` (length len) is not a parallel type. */
fu_ptype fu_ptype_from_name(const char *name, size_t len);

/* How a split handles a partial last tile (Halide's tail strategies). */
typedef enum fu_tail {
  FU_TAIL_EXACT, /* the factor divides the extent (proved) */
  FU_TAIL_GUARD, /* iterations past the extent are predicated off */
  /* alignment peeling (docs/ir.md, "Peeled vector splits"): the inner
   * output is the vectorize axis, and each run of the split axis is shifted
   * at run time by p in [0, factor), so that the vectors of the one tensor
   * with access=vector start on 16-byte boundaries: index = outer * factor
   * + inner - p, guarded on both sides; the first p elements (the head)
   * and the partial last vector (the tail) go element by element */
  FU_TAIL_PEEL,
} fu_tail;
const char *fu_tail_name(fu_tail t);

typedef enum fu_sxform_kind { FU_SX_MERGE, FU_SX_SPLIT } fu_sxform_kind;

/* One transform.  Axes are indices into fu_schedule.axes. */
typedef struct fu_sxform {
  fu_sxform_kind kind;
  uint32_t in[2];  /* merge: outer, inner; split: in[0] */
  uint32_t out[2]; /* split: outer, inner; merge: out[0] */
  int64_t factor;  /* split: the inner extent, > 0 */
  fu_tail tail;    /* split */
  fu_loc loc;
} fu_sxform;

/* A named axis: a logical dim of the reference (ref_dim >= 0) or the
 * output of transform `def`. */
typedef struct fu_saxis {
  const char *name;
  int32_t ref_dim; /* -1 unless a logical dim of the reference */
  int32_t def;     /* index of the defining transform, -1 for reference dims */
  fu_loc loc;
} fu_saxis;

/* A block axis binds one block per iteration, and the runtime refuses a
 * launch whose grid exceeds the device's limit; with grid_stride (printed
 * `{grid=stride}`) it becomes a loop over the axis stepping by the grid
 * size, launched with at most the limit's blocks.  The scheduler strides
 * only where a tensor that fits in device memory could exceed the limit. */
typedef struct fu_sloop {
  uint32_t axis;
  fu_ptype ptype;
  bool grid_stride; /* block axes only */
  fu_loc loc;
} fu_sloop;

/* Access mode of a global tensor along the vectorized axis. */
typedef enum fu_access {
  FU_ACCESS_DEFAULT, /* vector when the loop has a vectorize axis */
  FU_ACCESS_VECTOR,  /* one vector load or store per vector of elements (checked legal) */
  FU_ACCESS_SCALAR,  /* element by element (or once, when it does not vary along the vector) */
  FU_ACCESS_TILE,    /* transpose schedules: the accesses contiguous along the tile's row dim go through
                        a shared-memory tile (fu_transpose_tile) */
} fu_access;

typedef struct fu_stensor {
  fu_value *value;
  fu_mem_space memory;
  int32_t inline_pos; /* -1: default (inlined into every loop axis) */
  fu_access access;
  fu_loc loc;
  /* persist=smem, a staged input: the first `keep` chunks of each
   * thread's part of the row (iterations of the row's unrolled loops, a
   * vector each) stay in registers and only the rest is staged, so that
   * two blocks fit an SM's shared memory (docs/ir.md, `keep=`); 0: all
   * staged */
  int32_t keep;
} fu_stensor;

/* How a reduction schedule combines the partial results of the threads
 * that share one output element (header attribute `reduce=`, docs/ir.md):
 * serial: no reduced axis is parallel, each thread owns its outputs;
 * warp: the reduced axis on threadIdx.x has a power-of-two extent of 2..32
 * (a row's threads in one warp), one butterfly of
 * shuffles; block: threadIdx.x (a multiple of 32) carries the reduced axis,
 * shuffles then shared memory across the warps of each threadIdx.y row (or
 * threadIdx.y carries it, threadIdx.x keeping columns: shared memory only);
 * grid: as block, and blockIdx.y carries a reduced axis too: each block's
 * partial goes to a workspace, the last block of a row (by a semaphore)
 * combines them in a fixed order. */
typedef enum fu_reduce_mode { FU_RM_NONE, FU_RM_SERIAL, FU_RM_WARP, FU_RM_BLOCK, FU_RM_GRID } fu_reduce_mode;
const char *fu_reduce_mode_name(fu_reduce_mode r);

/* Where a persistent schedule keeps a row between its passes (header
 * attribute `persist=`, docs/ir.md; persistent segments only, and required
 * there): registers: each thread loads its part of the row once into
 * registers (the reduced loops other than threadIdx.x are unroll and
 * vectorize of constant extent) and every later pass reads them there;
 * smem: the first pass that loads an input the schedule lists as
 * `tensor %X {memory=shared}` also stores it to shared memory, where the
 * later passes read it (a constant row, the staged rows within the
 * device's shared memory per block); reread: every pass reads the row from
 * global memory again (any row length, symbolic included). */
typedef enum fu_persist_mode { FU_PM_NONE, FU_PM_REGISTERS, FU_PM_SMEM, FU_PM_REREAD } fu_persist_mode;
const char *fu_persist_mode_name(fu_persist_mode p);

typedef struct fu_schedule {
  const char *device; /* the device it was tuned for (name), or NULL */
  const char *arch;   /* "sm_90", or NULL (the backend's default) */
  fu_dtype index_dtype; /* FU_DT_I32 or FU_DT_I64; FU_DT_NONE: decided by lower */
  fu_value *reference;
  fu_loc loc;
  fu_saxis *axes;
  uint32_t n_axes;
  fu_sxform *xforms;
  uint32_t n_xforms;
  fu_sloop *loops;
  uint32_t n_loops;
  fu_stensor *tensors;
  uint32_t n_tensors;
  /* The kind of segment it was made for (e.g. FU_SK_TRANSPOSE for a
   * transpose segment given the pointwise scheduler's fallback), or
   * FU_SK_NONE: not recorded (a hand-written schedule).  Pointwise is the
   * default and is not printed. */
  fu_sched_kind kind;
  /* FU_RM_NONE except in reduction and persistent schedules, which must name one */
  fu_reduce_mode reduce;
  /* FU_PM_NONE except in persistent schedules, which must name one */
  fu_persist_mode persist;
  /* Persistent schedules: each sum of exp(x - max(x)) folds in the max's
   * pass (`online=true`, lib/analysis/online_softmax.c) */
  bool online;
} fu_schedule;

/* ---- text (lib/text/schedule_text.c) ------------------------------------- */

/* Writes a value reference (`%T3`): the IR printer passes its own, which
 * knows the names it gave to values without a usable one. */
typedef void (*fu_value_ref_fn)(void *user, fu_strbuf *out, const fu_value *v);

/* Prints `s` at `indent` spaces, in the canonical form of docs/ir.md.
 * `ref` may be NULL (values print as `%name`). */
void fu_schedule_print(fu_strbuf *out, const fu_schedule *s, int indent, fu_value_ref_fn ref, void *user);

/* ---- queries --------------------------------------------------------------- */

/* The schedule's entry for `v`, or NULL. */
const fu_stensor *fu_schedule_tensor(const fu_schedule *s, const fu_value *v);
/* The index of axis `name`, or -1. */
int32_t fu_schedule_axis(const fu_schedule *s, const char *name);
/* The loop axis with parallel type `p` (first), or -1. */
int32_t fu_schedule_loop_of(const fu_schedule *s, fu_ptype p);
/* A schedule in m's arena with copies of the given axes (names too),
 * transforms and loops; no tensors, defaults elsewhere.  NULL when the
 * arena fails. */
fu_schedule *fu_schedule_assemble(fu_module *m, const fu_value *ref, const fu_saxis *axes, uint32_t n_axes,
                                  const fu_sxform *xforms, uint32_t n_xforms, const fu_sloop *loops, uint32_t n_loops);

/* Checks `s` against segment `seg` (a SEGMENT op of fusion f): the
 * reference is a tensor of the segment, every axis is defined once and used
 * at most once, the loop axes are exactly the leaves, parallel types are
 * legal (thread axes of constant extent within the block limit, one axis
 * per block/thread index, vectorize innermost with a constant extent of
 * 1, 2, 4, 8 or 16 and at most 16 bytes per access), exact splits divide,
 * inline positions are in range, the tensors named belong to the segment,
 * and every vector access is legal (contiguous along the vector, aligned,
 * not crossing a dim boundary).  Errors are located at the schedule's
 * lines; FU_ERR_VERIFY if any. */
fu_status fu_schedule_verify(fu_fusion *f, fu_op *seg, const fu_schedule *s, fu_diag_engine *diag);

/* Every schedule of every segment of `f`. */
fu_status fu_schedule_verify_fusion(fu_fusion *f, fu_diag_engine *diag);

/* The reduction structure of a reduction schedule
 * (lib/analysis/reduction_axes.c): the segment's reductions (one or more
 * of the same axes over the same input domain, whose operand shape is the
 * reference's), and for every schedule axis whether it derives from a
 * reduced dim of the reference.  fu_schedule_reduction_check reports, at
 * the schedule, a reference that is not a reduction's operand, a transform
 * that mixes reduced and kept axes, a reduced axis on a block index, and a
 * `reduce=` that does not match the loop bindings; for persistent segments
 * also a missing `persist=` and the rules it adds (docs/ir.md). */
enum { FU_MAX_SEG_REDUCTIONS = 8 };
/* persist=registers keeps at most this many elements of a row per thread
 * and cached input (the product of its reduced unroll and vectorize
 * extents) */
enum { FU_PERSIST_MAX_CACHED = 128 };
/* The partial sums one persistent segment may hold (the inner-outer
 * rewrite adds no more; the lowering keeps an accumulator per sum, chunk
 * and lane). */
enum { FU_PERSIST_MAX_PARTIALS = 4 };
/* The partial_sum ops of segment seg, in body order: the first `cap` into
 * ops (NULL: none); returns how many there are (lib/analysis/reduction_axes.c). */
uint32_t fu_segment_partial_sums(const fu_op *seg, const fu_op **ops, uint32_t cap);
typedef struct fu_reduction_info {
  const fu_op *ops[FU_MAX_SEG_REDUCTIONS];
  uint32_t n_ops;
  bool reduced_dim[FU_MAX_RANK]; /* of the reference */
  bool *reduced_axis;            /* n_axes entries, allocated by the caller */
} fu_reduction_info;
bool fu_schedule_reduction(const fu_op *seg, const fu_schedule *s, fu_reduction_info *ri, fu_diag_engine *diag);
bool fu_schedule_reduction_check(const fu_op *seg, const fu_schedule *s, fu_diag_engine *diag);
/* Whether the block combine of a reduction over `rows` threadIdx.y rows
 * (a power of two, from 32 rows, or 8 with a Welford state) folds them in
 * a tree rather than walking them in row order: the lowering's choice,
 * which the schedule's explanation names (lib/analysis/reduction_axes.c). */
bool fu_reduction_rows_fold(uint32_t rows, bool welford);
/* red[d] (FU_MAX_RANK flags): whether reduction `op` (sum ... var_mean:
 * their payloads start with the same axes list) reduces dim d of its
 * operand, negative axes counted from the end. */
void fu_reduction_dims(const fu_op *op, bool *red);
/* The online-softmax pattern (lib/analysis/online_softmax.c): the max
 * that `sum` can fold with in one pass, i.e. `sum` reduces exp(a - b)
 * where b broadcasts max(a) back over the same axes (f32 or f64, all in
 * one block); NULL when it does not.  fu_online_softmax_pairs: how many
 * sums of segment `seg` have one. */
const fu_op *fu_online_softmax_max(const fu_op *sum);
uint32_t fu_online_softmax_pairs(const fu_op *seg);

/* The shared memory of a persist=smem block (lib/analysis/persist_smem.c):
 * each staged input is an array of `rows` rows (the block's rows) of
 * fu_persist_stage_stride(row) elements (the row rounded up to 16, so
 * every row starts on a vector boundary) in the input's dtype, from a
 * 16-byte boundary; the reductions' own shared slots take at most
 * fu_persist_slot_bytes.  Their sum must fit the device's smem_per_block.
 * fu_persist_device: the device a schedule names, the preset of its
 * `device=` or else of its `arch=` (false when neither is a preset), which
 * the verifier checks against; fu_persist_smem_limit: what a scheduler
 * for `dev` may use, dev's smem_per_block but no more than that preset's. */
int64_t fu_persist_stage_stride(int64_t row);
int64_t fu_persist_stage_bytes(fu_dtype dtype, int64_t rows, int64_t row);
int64_t fu_persist_slot_bytes(uint32_t n_reductions, int64_t threads);
bool fu_persist_device(const fu_schedule *s, fu_device *out);
uint32_t fu_persist_smem_limit(const fu_device *dev);
/* The chunks of a thread's part of a row (`keep=`): the threads along
 * the row (threadIdx.x), the chunks (the product of the row's unroll
 * loops' constant extents) and the elements of a chunk (the vectorize
 * loop's extent, 1 without one).  False when the row's loops are not
 * threadIdx.x, unroll and vectorize loops of constant extent, the shape
 * keep= needs.  `ra` marks the reduced axes (fu_schedule_reduction). */
bool fu_persist_chunks(const fu_schedule *s, const bool *ra, int64_t *threads, int64_t *chunks, int64_t *lanes);
/* The blocks of `threads` threads a persistent kernel with a row loop
 * (partial sums) plans on per SM: up to 2 while each thread keeps 64
 * registers and the SM's threads allow, at least 1.  The scheduler makes
 * that many parts per SM; the lowering asks ptxas for them (`min_blocks`). */
uint32_t fu_persist_row_loop_blocks(const fu_device *dev, int64_t threads);
/* The blocks of `threads` threads a persist=registers kernel whose
 * threads each keep `cached_bytes` of row values plans on per SM: 2 for
 * blocks of half the SM's threads (1024 on sm_80 and sm_90) while those
 * values take at most half of the 32 registers that leaves (64 bytes: a
 * bf16 row of 16384 at 2 vectors a thread), else 1, the register file's
 * own limit.  The scheduler takes such blocks only then; the lowering asks
 * ptxas for them (`min_blocks`). */
uint32_t fu_persist_register_blocks(const fu_device *dev, int64_t threads, int64_t cached_bytes);
/* The registers a thread of `threads` has with two such blocks resident
 * on an SM (the register file split over both). */
int64_t fu_persist_two_block_regs(const fu_device *dev, int64_t threads);
/* The most full-size inputs a persistent schedule considers staging. */
enum { FU_STAGE_MAX = 16 };
/* The full-size tensors of persistent segment `seg` (inputs and outputs
 * with the elements of reference `ref`; with `views`, as many constant
 * elements, where a row has more than one): their widest dtype (*widest
 * bytes, 0 when bool is among them), the bytes per element of the inputs
 * among them in their compute dtype (f32 for 16-bit ones: the values a
 * persist=registers schedule caches; at least 4), and those inputs (the
 * first FU_STAGE_MAX, in operand order: what a shared-memory schedule may
 * stage).  The scheduler plans on it, the lowering asks min_blocks by it. */
void fu_persist_full_size(const fu_op *seg, const fu_value *ref, bool views, size_t *widest, size_t *cached,
                          const fu_value **inputs, uint32_t *n_inputs);

/* The tile of a transpose schedule (lib/analysis/transpose_tile.c): a
 * schedule with a tensor of access=tile has the form
 *
 *   split dI, T -> ti, il        split dJ, T -> tj, jl
 *   [split il, Y -> u, y {tail=exact}]
 *   loop [outer..., u: unroll|serial, y: threadIdx.y, jl: threadIdx.x]
 *
 * where dI and dJ are two dims of the reference (the other transforms
 * merge and split the rest, ti and tj into the outer loops, none of them
 * bound to a thread).  The block is T x Y threads, each covering T / Y
 * rows of a T x T tile: in the reference's order (il = u * Y + y, jl = tx)
 * and swapped (il = tx, jl = u * Y + y), so that tensors contiguous along
 * dJ and those contiguous along dI are both accessed by consecutive
 * threads. */
typedef struct fu_transpose_tile {
  int32_t dim_i, dim_j; /* reference dims */
  int64_t tile;         /* T: the tile's side, threadIdx.x's extent */
  int64_t rows;         /* Y: threadIdx.y's extent */
  uint32_t axis_il, axis_jl, axis_u, axis_y; /* axis_u: UINT32_MAX when il is on threadIdx.y itself */
  uint32_t xform_il;    /* the split of il, UINT32_MAX without one */
  uint32_t n_outer;     /* loops before the tile's loops */
} fu_transpose_tile;
/* Whether s has a tensor of access=tile. */
bool fu_schedule_has_tile(const fu_schedule *s);
/* The tile of s, with located errors at the schedule when it does not
 * have the form above. */
bool fu_schedule_transpose_tile(const fu_schedule *s, fu_transpose_tile *t, fu_diag_engine *diag);

/* ---- the pass (passes/schedule/schedule.c, passes/schedule/pointwise.c) ------------ */

extern const fu_pass_def fu_pass_schedule;

/* Schedules every segment of `m` that has no schedule yet for device `dev`
 * (NULL: the default), with the scheduler its kind's row of kinds.def
 * names: the pointwise scheduler for pointwise segments, the transpose
 * scheduler (a shared-memory tile, or the pointwise schedule) for transpose
 * segments.  Segments of kinds without a scheduler are left
 * as they are, with a remark when `debug` is set. */
fu_status fu_schedule_module(fu_module *m, const fu_device *dev, fu_diag_engine *diag, FILE *debug);

/* Choices of the `schedule` pass beyond the device (its options). */
typedef struct fu_schedule_options {
  bool transpose_pointwise; /* transpose segments: the pointwise fallback, never a tile */
  bool no_vectorize;        /* --disable=vectorize: vectorize loop axes become unroll, accesses scalar */
  bool no_unroll;           /* --disable=unroll: unroll loop axes become serial where the schedule allows */
  bool no_inner_outer;      /* --disable=inner_outer: no partial sums in persistent segments */
  bool no_online;           /* --disable=online_softmax: persistent schedules say online=false */
  bool no_smem_keep;        /* --disable=smem_keep: persistent segments through fu_schedule_persistent, not
                               fu_schedule_persistent_keep */
} fu_schedule_options;
/* fu_schedule_module with options (NULL: the defaults). */
fu_status fu_schedule_module_with(fu_module *m, const fu_device *dev, const fu_schedule_options *opt,
                                  fu_diag_engine *diag, FILE *debug);

/* A scheduler: the SCHEDULE column of kinds.def.  Builds *out for segment
 * `seg` of f in the module's arena, recording seg's kind in (*out)->kind
 * where it is not the scheduler's own.  FU_OK with *out NULL declines the
 * segment (it stays unscheduled; say why on `debug`). */
typedef fu_status (*fu_schedule_entry_fn)(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag,
                                          FILE *debug, fu_schedule **out);

/* The scheduler of kind k, or NULL while the kind has none. */
fu_schedule_entry_fn fu_schedule_entry(fu_sched_kind k);

/* The reduction scheduler (passes/schedule/reduction.c). */
fu_status fu_schedule_reduction_kind(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag, FILE *debug,
                                     fu_schedule **out);
/* The persistent (normalization) scheduler (passes/schedule/persistent.c). */
/* fu_schedule_persistent, where a 16-bit row staged in shared memory with
 * room for one block an SM may keep its first chunks in registers instead
 * (keep=) so that two fit: the schedule pass's default (--disable=smem_keep:
 * fu_schedule_persistent). */
fu_status fu_schedule_persistent_keep(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag,
                                      FILE *debug, fu_schedule **out);
fu_status fu_schedule_persistent(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag, FILE *debug,
                                 fu_schedule **out);
/* The transpose scheduler (passes/schedule/transpose.c): a shared-memory
 * tile where tensors disagree on their innermost dim, else the pointwise
 * scheduler's schedule. */
fu_status fu_schedule_transpose(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag, FILE *debug,
                                fu_schedule **out);
/* The resize scheduler (passes/schedule/resize.c): the pointwise
 * schedule, without vectors when a pad or cat is in the segment. */
fu_status fu_schedule_resize(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag, FILE *debug,
                             fu_schedule **out);
/* The matmul scheduler (passes/schedule/matmul.c): writes the segment's
 * gemm plan (fuser/gemm.h) and no schedule (*out stays NULL). */
fu_status fu_schedule_matmul(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag, FILE *debug,
                             fu_schedule **out);
/* The scan scheduler (passes/schedule/scan.c): one thread per line along
 * the scanned dim, folding it serially. */
fu_status fu_schedule_scan(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag, FILE *debug,
                           fu_schedule **out);
/* The pointwise scheduler (passes/schedule/pointwise.c). */
fu_status fu_schedule_pointwise(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag, FILE *debug,
                                fu_schedule **out);

/* Sets arch and device of every schedule of `m` to `dev`'s (what
 * `fuser-opt --device=` does to a module it only emits). */
fu_status fu_schedule_retarget(fu_module *m, const fu_device *dev);

#endif
