/* fuser: the pointwise scheduler.
 *
 * Decisions, in order (docs/passes.md, "schedule"):
 *   1. reference: the largest output (elements at the example sizes when
 *      the extents are symbolic), first one on ties;
 *   2. shape: all reference dims merged into one axis (1-D), or two merged
 *      groups when an input is broadcast along a prefix or a suffix of the
 *      dims (a bias broadcast along rows, a per-row scale): the break point
 *      between them makes that input's index a plain axis index instead of
 *      a division (2-D: the outer group on blockIdx.y);
 *   3. vector width: 16 bytes over the widest dtype accessed, narrowed until
 *      every output can be written with whole vectors; inputs that cannot be
 *      read as vectors (non-contiguous along the vector, or crossing a dim
 *      boundary) are read element by element;
 *   4. block: 128 threads on threadIdx.x;
 *   5. unroll: enough bytes in flight (about 32 KB per SM at full
 *      occupancy), but not so much that the grid falls under one wave;
 *   6. grid: whatever covers the merged axis (lower adds a grid-stride loop
 *      where a block index may exceed the launch limit).
 * Splits are `tail=exact` where the factor provably divides the extent and
 * `tail=guard` otherwise, so the kernel is right for every size the fusion
 * allows.  Every candidate schedule is checked by building its index graph,
 * which is also what decides vector legality.
 *
 * Transpose segments (something permuted: a permute inside, an input read
 * in a permuted layout, an output written permuted for a host permute) get
 * this scheduler too, as a correctness fallback until the tiled
 * shared-memory transpose scheduler exists.  It is uncoalesced: the loop
 * follows the reference (the largest output, in its logical order), so the
 * tensors whose memory order disagrees with it are read or written element
 * by element with strided addresses.  Step 3 differs: the width is the one
 * that reads or writes the most tensors as whole vectors (outputs may be
 * written lane by lane), none meaning no vector at all. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fuser/example_sizes.h"
#include "fuser/index_graph.h"
#include "fuser/schedule.h"
#include "internal.h"

enum { BLOCK = 128, LARGE_BLOCK = 512, MAX_SAXES = 64 };
/* DRAM GB/s per SM above which large 1-D blocks are halved (step 4) */
#define FAST_MEMORY_GBS_PER_SM 30.0

/* Symbol values from the inputs' example shapes, for estimates only. */
typedef fu_example_sizes binding;

/* Extent at the example sizes; unbound symbols count as 4096. */
static double estimate_extent(const binding *b, fu_extent e) {
  if (!e.sym) return (double)e.value;
  return (double)fu_example_extent(b, e, 4096);
}

static double estimate_numel(const binding *b, const fu_type *t) {
  double n = 1;
  for (int32_t d = 0; d < t->rank; d++) n *= estimate_extent(b, t->dims[d]);
  return n;
}

/* ---- building schedules ---------------------------------------------------------- */

typedef struct sbuild {
  fu_saxis axes[MAX_SAXES];
  uint32_t n_axes;
  fu_sxform xf[MAX_SAXES];
  uint32_t n_xf;
  fu_sloop loops[MAX_SAXES]; /* a loop axis is an axis: at most as many */
  uint32_t n_loops;
  char names[MAX_SAXES][16];
} sbuild;

static uint32_t axis(sbuild *b, const char *name, int32_t ref_dim, int32_t def) {
  uint32_t a = b->n_axes++;
  snprintf(b->names[a], sizeof b->names[a], "%s", name);
  b->axes[a].name = b->names[a];
  b->axes[a].ref_dim = ref_dim;
  b->axes[a].def = def;
  b->axes[a].loc = fu_loc_none();
  return a;
}

static uint32_t merge(sbuild *b, uint32_t x, uint32_t y, const char *name) {
  fu_sxform *t = &b->xf[b->n_xf];
  memset(t, 0, sizeof *t);
  t->kind = FU_SX_MERGE;
  t->in[0] = x;
  t->in[1] = y;
  t->out[0] = axis(b, name, -1, (int32_t)b->n_xf);
  b->n_xf++;
  return t->out[0];
}

/* Splits x by f; the tail is decided later from the extents. */
static void split(sbuild *b, uint32_t x, int64_t f, const char *outer, const char *inner, uint32_t *o, uint32_t *i) {
  fu_sxform *t = &b->xf[b->n_xf];
  memset(t, 0, sizeof *t);
  t->kind = FU_SX_SPLIT;
  t->in[0] = x;
  t->factor = f;
  t->tail = FU_TAIL_GUARD;
  t->out[0] = *o = axis(b, outer, -1, (int32_t)b->n_xf);
  t->out[1] = *i = axis(b, inner, -1, (int32_t)b->n_xf);
  b->n_xf++;
}

static void loop(sbuild *b, uint32_t a, fu_ptype p) {
  b->loops[b->n_loops].axis = a;
  b->loops[b->n_loops].ptype = p;
  b->loops[b->n_loops].loc = fu_loc_none();
  b->n_loops++;
}

/* Merges reference dims [lo, hi) into one axis (named `name` if merged). */
static uint32_t merge_range(sbuild *b, const uint32_t *dims, int32_t lo, int32_t hi, const char *name) {
  uint32_t cur = dims[lo];
  char nm[16];
  for (int32_t d = lo + 1; d < hi; d++) {
    if (d + 1 == hi)
      snprintf(nm, sizeof nm, "%s", name);
    else
      snprintf(nm, sizeof nm, "%s_%d", name, (int)d);
    cur = merge(b, cur, dims[d], nm);
  }
  return cur;
}

typedef struct plan {
  int32_t brk; /* 0: 1-D; else the first dim of the inner group */
  int64_t vec, unroll;
  int64_t block; /* threads per block */
} plan;

/* The inner group's loops: split by the vector width, the block, the
 * unroll factor; adds bx, u, tx, v in loop order. */
static void inner_loops(sbuild *b, uint32_t g, const plan *p, bool with_block_y, uint32_t outer) {
  uint32_t rest = g, v = 0, tx = 0, bx = 0, u = 0;
  bool has_v = p->vec > 1, has_u = p->unroll > 1;
  if (has_v) split(b, rest, p->vec, "s0", "v", &rest, &v);
  split(b, rest, p->block, has_u ? "s1" : "bx", "tx", &rest, &tx);
  if (has_u)
    split(b, rest, p->unroll, "bx", "u", &bx, &u);
  else
    bx = rest;
  if (with_block_y) loop(b, outer, FU_PT_BLOCK_Y);
  loop(b, bx, FU_PT_BLOCK_X);
  if (has_u) loop(b, u, FU_PT_UNROLL);
  loop(b, tx, FU_PT_THREAD_X);
  if (has_v) loop(b, v, FU_PT_VECTORIZE);
}

/* The schedule of plan p in m's arena (tails all `guard` for now). */
static fu_schedule *make_schedule(fu_module *m, const fu_value *ref, const plan *p) {
  sbuild *b = fu_mem_calloc(&m->alloc, 1, sizeof *b);
  if (!b) return NULL;
  int32_t r = ref->type.rank;
  uint32_t dims[FU_MAX_RANK];
  for (int32_t d = 0; d < r; d++) {
    char nm[16];
    snprintf(nm, sizeof nm, "d%d", (int)d);
    dims[d] = axis(b, nm, d, -1);
  }
  if (r > 0) {
    if (p->brk > 0) {
      uint32_t outer = merge_range(b, dims, 0, p->brk, "by");
      uint32_t inner = merge_range(b, dims, p->brk, r, "m");
      inner_loops(b, inner, p, true, outer);
    } else {
      uint32_t g = merge_range(b, dims, 0, r, "m");
      inner_loops(b, g, p, false, 0);
    }
  }
  fu_schedule *s = fu_schedule_assemble(m, ref, b->axes, b->n_axes, b->xf, b->n_xf, b->loops, b->n_loops);
  fu_mem_free(&m->alloc, b, sizeof *b);
  return s;
}

/* ---- analysis helpers ---------------------------------------------------------------- */


/* Which reference dims each input's offset depends on, from a probe
 * schedule with one serial loop per reference dim (so offsets are written
 * in the reference's own coordinates).  mask[i] for access i, or false
 * when the probe cannot be built. */
typedef struct probe {
  uint32_t n;
  const fu_value **v;
  uint32_t *mask; /* bit d: reference dim d (ranks stay below 32) */
} probe;

static void probe_free(fu_module *m, probe *p, uint32_t cap) {
  fu_mem_free(&m->alloc, p->v, cap * sizeof *p->v);
  fu_mem_free(&m->alloc, p->mask, cap * sizeof *p->mask);
}

/* The probe's accesses; the caller frees them with probe_free and the
 * capacity *cap. */
static bool run_probe(fu_fusion *f, fu_op *seg, const fu_value *ref, fu_diag_engine *diag, probe *out, uint32_t *cap) {
  memset(out, 0, sizeof *out);
  *cap = 0;
  fu_module *m = f->module;
  int32_t r = ref->type.rank;
  if (r == 0) return true;
  sbuild *b = fu_mem_calloc(&m->alloc, 1, sizeof *b);
  if (!b) return false;
  for (int32_t d = 0; d < r; d++) {
    char nm[16];
    snprintf(nm, sizeof nm, "d%d", (int)d);
    loop(b, axis(b, nm, d, -1), FU_PT_SERIAL);
  }
  fu_schedule s;
  memset(&s, 0, sizeof s);
  s.reference = (fu_value *)ref;
  s.axes = b->axes;
  s.n_axes = b->n_axes;
  s.loops = b->loops;
  s.n_loops = b->n_loops;
  fu_igraph *g = NULL;
  bool ok = fu_igraph_build(f, seg, &s, m->alloc, diag, &g) == FU_OK;
  uint32_t n_acc = ok ? fu_igraph_num_accesses(g) : 0;
  if (n_acc) {
    out->v = fu_mem_calloc(&m->alloc, n_acc, sizeof *out->v);
    out->mask = fu_mem_calloc(&m->alloc, n_acc, sizeof *out->mask);
    *cap = n_acc;
    ok = out->v && out->mask;
  }
  for (uint32_t i = 0; ok && i < n_acc; i++) {
    const fu_iaccess *a = fu_igraph_access(g, i);
    if (a->is_store) continue;
    uint32_t mask = 0;
    fu_ix_ctx *ix = fu_igraph_ix(g);
    for (int32_t d = 0; d < r; d++) {
      /* offset depends on d iff substituting another value changes it */
      const fu_ix *var = fu_igraph_loop_var(g, (uint32_t)d);
      const fu_ix *o1 = fu_ix_subst(ix, a->offset, var, fu_ix_const(ix, 0));
      if (o1 != a->offset) mask |= 1u << d;
    }
    out->v[out->n] = a->value;
    out->mask[out->n++] = mask;
  }
  fu_igraph_free(g);
  fu_mem_free(&m->alloc, b, sizeof *b);
  return ok;
}

/* The break point for a 2-D schedule, or 0: an input whose offset depends
 * exactly on a proper suffix of the dims (a bias), or a proper prefix (a
 * per-row value), of a reference whose inner group is long enough to fill
 * a block with vectors. */
static int32_t choose_break(const fu_value *ref, const probe *pr, const binding *bind) {
  int32_t r = ref->type.rank;
  uint32_t all = r >= 32 ? 0xffffffffu : (1u << r) - 1;
  int32_t best = 0;
  uint32_t best_votes = 0;
  for (int32_t k = 1; k < r; k++) {
    uint32_t suffix = all & ~((1u << k) - 1), prefix = (1u << k) - 1;
    uint32_t votes = 0;
    for (uint32_t i = 0; i < pr->n; i++)
      if (pr->mask[i] == suffix || pr->mask[i] == prefix) votes++;
    double inner = 1;
    for (int32_t d = k; d < r; d++) inner *= estimate_extent(bind, ref->type.dims[d]);
    if (votes > best_votes && inner >= 32.0 * 4) {
      best = k;
      best_votes = votes;
    }
  }
  return best;
}

/* A bound on the extent of schedule axis `a` as alpha * P + beta, where P
 * is the product of the extents of the reference dims the axis is made of
 * (each dim feeds one chain of transforms, so P is at most the reference's
 * element count when no extent is 0).  A reference dim is P itself; a merge
 * multiplies, and since P_x <= P_x * P_y when extents are at least 1,
 *   (a P_x + b)(c P_y + d) <= (ac + ad + bc) P_x P_y + bd;
 * a split's outer axis is ceil(x / F) <= (x + F - 1) / F, its inner axis
 * the constant F. */
static void axis_bound(const fu_schedule *s, uint32_t a, double *alpha, double *beta) {
  const fu_saxis *ax = &s->axes[a];
  if (ax->def < 0) {
    *alpha = 1;
    *beta = 0;
    return;
  }
  const fu_sxform *x = &s->xforms[ax->def];
  double a1, b1, a2, b2;
  if (x->kind == FU_SX_MERGE) {
    axis_bound(s, x->in[0], &a1, &b1);
    axis_bound(s, x->in[1], &a2, &b2);
    *alpha = a1 * a2 + a1 * b2 + b1 * a2;
    *beta = b1 * b2;
  } else if (a == x->out[1]) {
    *alpha = 0;
    *beta = (double)x->factor;
  } else {
    axis_bound(s, x->in[0], &a1, &b1);
    *alpha = a1 / (double)x->factor;
    *beta = (b1 + (double)(x->factor - 1)) / (double)x->factor;
  }
}

/* Block axes bind one block per iteration unless some size the fusion
 * allows could exceed the launch limit; then a grid-stride loop.  The
 * reference is an output, which the runtime allocates, so its element
 * count is at most the device memory over its element size; axis_bound
 * turns that into a bound per axis.  Symbolic sizes thus get a direct grid
 * when it stays under the limit (a 1-D grid of 512-element blocks does for
 * any tensor in memory): no loop around the kernel body, which also costs
 * the backend less to compile.  A zero extent makes some grid axis 0, and
 * the runtime skips such a launch whatever the other axes say. */
static void bind_block_axes(const fu_igraph *g, fu_schedule *s, const fu_device *dev) {
  size_t elem = fu_dtype_size(s->reference->type.dtype);
  double max_elements = floor((double)dev->mem_bytes / (double)(elem ? elem : 1));
  for (uint32_t i = 0; i < s->n_loops; i++) {
    fu_sloop *l = &s->loops[i];
    if (l->ptype != FU_PT_BLOCK_X && l->ptype != FU_PT_BLOCK_Y) continue;
    int64_t lim = fu_block_axis_limit(l->ptype);
    int64_t dev_lim = l->ptype == FU_PT_BLOCK_X ? dev->max_grid_x : dev->max_grid_yz;
    if (dev_lim > 0 && dev_lim < lim) lim = dev_lim;
    int64_t e = 0;
    double alpha = 0, beta = 0;
    if (fu_ix_is_const(fu_igraph_axis_extent(g, l->axis), &e)) {
      l->grid_stride = e > lim;
      continue;
    }
    axis_bound(s, l->axis, &alpha, &beta);
    /* the margin covers rounding, orders of magnitude over */
    l->grid_stride = !(alpha * max_elements * (1 + 1e-9) + beta + 1 <= (double)lim);
  }
}

/* Sets tails (exact where divisible) and tensor entries on candidate s, and
 * reports whether every output is written with whole vectors; *n_scalar
 * receives the number of inputs that must be read element by element, and
 * *n_vector the number of global tensors (inputs and outputs, not bool)
 * accessed with whole vectors at least once and never lane by lane.
 * small_in[i] (NULL: none): operand i is a small input (fewer than an
 * eighth of the reference's elements), whose element-by-element reads do
 * not count. */
static fu_status evaluate(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_schedule *s, const bool *small_in,
                          fu_diag_engine *diag, bool *outputs_ok, uint32_t *n_scalar, uint32_t *n_vector) {
  fu_module *m = f->module;
  fu_igraph *g = NULL;
  /* tails first: exact where the factor divides (a property of extents
   * only, so a graph of the all-guard schedule decides it) */
  fu_status st = fu_igraph_build(f, seg, s, m->alloc, diag, &g);
  if (st != FU_OK) return st;
  fu_schedule_exact_tails(g, s);
  bind_block_axes(g, s, dev);
  *outputs_ok = true;
  *n_scalar = 0;
  *n_vector = 0;
  /* one entry per global tensor and per intermediate */
  uint32_t n = 0, n_glob = seg->n_operands + seg->u.segment.n_outputs, cap = n_glob;
  for (fu_op *op = seg->u.segment.body->first; op; op = op->next) cap += op->n_results;
  fu_stensor *tens = fu_arena_calloc(m->arena, cap ? cap : 1, sizeof *tens);
  bool *whole = fu_mem_calloc(&m->alloc, cap ? cap : 1, sizeof *whole); /* some access of tens[k] is a whole vector */
  bool *small = fu_mem_calloc(&m->alloc, cap ? cap : 1, sizeof *small); /* a broadcast input read element by element */
  if (!tens || !whole || !small) {
    fu_mem_free(&m->alloc, whole, (cap ? cap : 1) * sizeof *whole);
    fu_mem_free(&m->alloc, small, (cap ? cap : 1) * sizeof *small);
    fu_igraph_free(g);
    return FU_ERR_NOMEM;
  }
  int64_t width = 1;
  fu_igraph_lane_var(g, &width);
  /* global tensors: inputs in the segment's operand order, then outputs */
  for (uint32_t gi = 0; gi < n_glob; gi++) {
    const fu_value *gv = gi < seg->n_operands ? seg->operands[gi] : seg->u.segment.outputs[gi - seg->n_operands];
    for (uint32_t i = 0; i < fu_igraph_num_accesses(g) && n < cap; i++) {
      const fu_iaccess *a = fu_igraph_access(g, i);
      if (a->value != gv || a->is_store != (gi >= seg->n_operands)) continue;
      bool seen = false;
      for (uint32_t k = 0; k < n; k++)
        if (tens[k].value == a->value) {
          seen = true;
          if (a->mode == FU_AM_LANES) tens[k].access = FU_ACCESS_SCALAR;
          if (a->mode == FU_AM_VECTOR) whole[k] = true;
        }
      if (seen) continue;
      fu_stensor t;
      memset(&t, 0, sizeof t);
      t.value = (fu_value *)a->value;
      t.memory = FU_MEM_GLOBAL;
      t.inline_pos = -1;
      t.loc = fu_loc_none();
      t.access = width > 1 ? (a->mode == FU_AM_LANES ? FU_ACCESS_SCALAR : FU_ACCESS_VECTOR) : FU_ACCESS_DEFAULT;
      whole[n] = a->mode == FU_AM_VECTOR;
      /* a small input read element by element (an f32 scale under bf16
       * outputs, whose vector would pass 16 bytes) reads few bytes, from
       * L1: it does not narrow the rest */
      small[n] = gi < seg->n_operands && small_in && small_in[gi];
      if (small[n] && t.access == FU_ACCESS_VECTOR && (size_t)width * fu_dtype_size(gv->type.dtype) > 16)
        t.access = FU_ACCESS_SCALAR;
      tens[n++] = t;
    }
  }
  for (uint32_t k = 0; k < n; k++) {
    if (tens[k].access == FU_ACCESS_VECTOR && whole[k] && tens[k].value->type.dtype != FU_DT_BOOL) (*n_vector)++;
    if (tens[k].access != FU_ACCESS_SCALAR) continue;
    /* bool tensors are never vector accesses, nor are wide broadcast
     * inputs: they do not narrow the rest */
    if (tens[k].value->type.dtype == FU_DT_BOOL || small[k]) continue;
    if (fu_segment_has_output(seg, tens[k].value)) *outputs_ok = false;
    else (*n_scalar)++;
  }
  /* intermediates: registers, inlined into every loop axis */
  for (fu_op *op = seg->u.segment.body->first; op && n < cap; op = op->next)
    for (uint32_t r = 0; r < op->n_results && n < cap; r++) {
      fu_value *v = op->results[r];
      if (!fu_type_is_tensor(&v->type) || fu_segment_has_output(seg, v) || fu_segment_has_input(seg, v)) continue;
      fu_stensor t;
      memset(&t, 0, sizeof t);
      t.value = v;
      t.memory = FU_MEM_LOCAL;
      t.inline_pos = (int32_t)s->n_loops;
      t.loc = fu_loc_none();
      tens[n++] = t;
    }
  fu_mem_free(&m->alloc, whole, (cap ? cap : 1) * sizeof *whole);
  fu_mem_free(&m->alloc, small, (cap ? cap : 1) * sizeof *small);
  s->tensors = tens;
  s->n_tensors = n;
  s->index_dtype = fu_igraph_index_dtype(g);
  fu_igraph_free(g);
  return FU_OK;
}

/* "direct", or which block axes stride, for --debug=schedule. */
static const char *grid_binding(const fu_schedule *s) {
  bool x = false, y = false;
  for (uint32_t i = 0; i < s->n_loops; i++)
    if (s->loops[i].grid_stride) {
      if (s->loops[i].ptype == FU_PT_BLOCK_X) x = true;
      else y = true;
    }
  return x && y ? "grid-stride in x and y" : x ? "grid-stride in x" : y ? "grid-stride in y" : "direct";
}

void fu_schedule_exact_tails(fu_igraph *g, fu_schedule *s) {
  fu_ix_ctx *ix = fu_igraph_ix(g);
  for (uint32_t t = 0; t < s->n_xforms; t++) {
    fu_sxform *x = &s->xforms[t];
    if (x->kind == FU_SX_SPLIT && fu_ix_divides(fu_ix_const(ix, x->factor), fu_igraph_axis_extent(g, x->in[0])))
      x->tail = FU_TAIL_EXACT;
  }
}

uint32_t fu_schedule_ref_axes(const fu_value *ref, fu_saxis *axes, char (*names)[16]) {
  uint32_t n = 0;
  for (int32_t d = 0; d < ref->type.rank; d++, n++) {
    snprintf(names[n], 16, "d%d", (int)d);
    axes[n] = (fu_saxis){names[n], d, -1, fu_loc_none()};
  }
  return n;
}

const fu_value *fu_schedule_largest_output(const fu_op *seg, const fu_example_sizes *bind, double *numel) {
  const fu_value *ref = NULL;
  *numel = -1;
  for (uint32_t i = 0; i < seg->u.segment.n_outputs; i++) {
    const fu_value *o = seg->u.segment.outputs[i];
    if (!fu_type_is_tensor(&o->type)) continue;
    double n = estimate_numel(bind, &o->type);
    if (n > *numel) {
      ref = o;
      *numel = n;
    }
  }
  return ref;
}

fu_status fu_schedule_pointwise(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag, FILE *debug,
                                fu_schedule **out) {
  *out = NULL;
  fu_module *m = f->module;
  const fu_segment_info *si = &seg->u.segment;
  binding bind;
  if (fu_example_sizes_bind(&bind, f, m->alloc) != FU_OK) return FU_ERR_NOMEM;
  /* 1. reference */
  double ref_n = -1;
  const fu_value *ref = fu_schedule_largest_output(seg, &bind, &ref_n);
  if (!ref) {
    fu_error(diag, seg->loc, "%s segment '@%s' has no tensor output to schedule",
             si->kind == FU_SK_NONE ? "pointwise" : fu_sched_kind_name(si->kind), si->name ? si->name : "?");
    fu_example_sizes_free(&bind);
    return FU_ERR_UNSUPPORTED;
  }
  /* small inputs: fewer than an eighth of the reference's elements */
  bool *small = fu_arena_calloc(m->arena, seg->n_operands + 1, sizeof *small);
  if (!small) {
    fu_example_sizes_free(&bind);
    return FU_ERR_NOMEM;
  }
  for (uint32_t i = 0; i < seg->n_operands; i++)
    small[i] =
        fu_type_is_tensor(&seg->operands[i]->type) && estimate_numel(&bind, &seg->operands[i]->type) * 8 <= ref_n;
  /* 2. shape */
  probe pr;
  uint32_t pr_cap;
  bool probed = run_probe(f, seg, ref, diag, &pr, &pr_cap);
  plan p = {probed ? choose_break(ref, &pr, &bind) : 0, 1, 1, BLOCK};
  probe_free(m, &pr, pr_cap);
  fu_example_sizes_free(&bind);
  if (!probed) return FU_ERR_VERIFY;
  /* 3. vector width: 16 bytes over the widest dtype of the segment's global
   * tensors but the small inputs (bool tensors are accessed element by
   * element and do not count; with nothing but bools there is no vector;
   * a wider small input is read element by element, evaluate(): on the
   * H100 the normalizing kernel of a bf16 NHWC batch norm, [256, 56, 56,
   * 64], ran 72.2 us at 8-element vectors with its f32 statistics read so,
   * against 78.3 at 4) */
  size_t widest = 0;
  for (uint32_t i = 0; i < seg->n_operands + si->n_outputs; i++) {
    const fu_value *v = i < seg->n_operands ? seg->operands[i] : si->outputs[i - seg->n_operands];
    if (i < seg->n_operands && small[i]) continue;
    if (fu_type_is_tensor(&v->type) && v->type.dtype != FU_DT_BOOL && fu_dtype_size(v->type.dtype) > widest)
      widest = fu_dtype_size(v->type.dtype);
  }
  int64_t vmax = widest ? (int64_t)(16 / widest) : 1;
  if (widest == 0) widest = 1;
  if (ref->type.rank == 0 || fu_schedule_resize_scalar(seg)) vmax = 1;
  fu_schedule *best = NULL;
  bool transpose = si->kind != FU_SK_POINTWISE;
  /* The search, from the widest down.  Pointwise: the widest width that
   * writes every output with whole vectors (width 1 always does), or half
   * of it when that reads every input whole and the wider one does not.
   * The transpose fallback: the width that accesses the most tensors with
   * whole vectors (ties: the wider), stopping once all of them are; outputs
   * written permuted are stored lane by lane; none at any width: no vector
   * (width 1, not printed). */
  uint32_t best_vec = 0, n_eligible = 0, best_scalar = 0;
  for (uint32_t i = 0; i < seg->n_operands + si->n_outputs; i++) {
    const fu_value *gv = i < seg->n_operands ? seg->operands[i] : si->outputs[i - seg->n_operands];
    if (fu_type_is_tensor(&gv->type) && gv->type.dtype != FU_DT_BOOL) n_eligible++;
  }
  for (int64_t v = vmax; v >= 1; v /= 2) {
    if (transpose && (best_vec >= n_eligible || v == 1) && (best || v > 1)) {
      if (best) break;
      continue; /* nothing can improve: straight to width 1 */
    }
    plan q = p;
    q.vec = v;
    fu_schedule *s = make_schedule(m, ref, &q);
    if (!s) return FU_ERR_NOMEM;
    bool outputs_ok;
    uint32_t n_scalar, n_vec;
    fu_status st = evaluate(f, seg, dev, s, small, diag, &outputs_ok, &n_scalar, &n_vec);
    if (st != FU_OK) return st;
    if (debug && transpose && v > 1)
      fprintf(debug, "schedule: @%s: width %lld: %u tensor(s) as whole vectors, outputs %s (%s fallback)\n",
              si->name ? si->name : "?", (long long)v, n_vec, outputs_ok ? "vectorized" : "lane by lane",
              fu_sched_kind_name(si->kind));
    else if (debug && !transpose && !best)
      fprintf(debug, "schedule: @%s: width %lld: outputs %s, %u input(s) element by element\n",
              si->name ? si->name : "?", (long long)v, outputs_ok ? "vectorized" : "not vectorizable", n_scalar);
    if (transpose) {
      if (n_vec > best_vec || v == 1) {
        best = s;
        best_vec = n_vec;
        p.vec = v;
      }
      continue;
    }
    if (best) {
      /* the half-width try: kept only if it reads more inputs whole */
      if (outputs_ok && n_scalar < best_scalar && v > 1) {
        best = s;
        p = q;
      }
      break;
    }
    if (outputs_ok || v == 1) {
      best = s;
      p = q;
      best_scalar = n_scalar;
      if (n_scalar == 0 || v == 1) break;
    }
  }
  /* 4. block: 512 threads for a 1-D schedule whose grid of such blocks
   * still fills every SM at full occupancy; 128 otherwise.  Fewer, larger
   * blocks measured faster on the H100 for 1-D kernels (the GELU 0.8%, the
   * GELU backward 0.2%, a chain of five transcendentals the same); rows of
   * a 2-D schedule are often a few hundred vectors, which 512 threads would
   * overhang (the f16 bias-GELU ran 19% slower), and a small grid spreads
   * over more SMs in small blocks.  The transpose fallback keeps 128. */
  /* On the H200 (the same SMs as the H100 with 43% more DRAM bandwidth
   * each) 256 threads ran 2-3% faster than 512 on the same 1-D kernels
   * (the GELU, bf16 SiLU-and-mul forward and backward) and 128 about as
   * fast: the threshold sits between the two parts' bandwidth per SM (25
   * and 36 GB/s). */
  int64_t large = dev->mem_bandwidth_gbs / (double)dev->n_sms > FAST_MEMORY_GBS_PER_SM ? LARGE_BLOCK / 2 : LARGE_BLOCK;
  if (!p.brk && !transpose && ref->type.rank > 0 && large <= (int64_t)dev->max_threads_per_block) {
    double large_blocks = ref_n / (double)(large * p.vec);
    double full_wave = (double)dev->n_sms * (double)(dev->max_threads_per_sm / (uint32_t)large);
    if (large_blocks >= full_wave) p.block = large;
  }
  /* 5. unroll for bytes in flight, keeping at least one full wave */
  uint32_t n_loaded = 0;
  for (uint32_t i = 0; i < best->n_tensors; i++)
    if (best->tensors[i].memory == FU_MEM_GLOBAL && fu_segment_has_input(seg, best->tensors[i].value)) n_loaded++;
  double per_thread = (double)(p.vec * (int64_t)widest) * (n_loaded ? n_loaded : 1);
  uint32_t threads_per_sm = dev->max_threads_per_sm;
  if (dev->max_blocks_per_sm * p.block < threads_per_sm) threads_per_sm = dev->max_blocks_per_sm * (uint32_t)p.block;
  double want = 32768.0 / threads_per_sm;
  int64_t unroll = 1;
  while (unroll < 4 && per_thread * (double)unroll < want) unroll *= 2;
  double elems = ref_n;
  double wave = (double)dev->n_sms * (double)(threads_per_sm / p.block);
  while (unroll > 1 && elems / (double)(p.block * p.vec * unroll) < wave) unroll /= 2;
  if ((unroll > 1 || p.block != BLOCK) && ref->type.rank > 0) {
    plan q = p;
    q.unroll = unroll;
    fu_schedule *s = make_schedule(m, ref, &q);
    if (!s) return FU_ERR_NOMEM;
    bool ok;
    uint32_t ns, nv;
    fu_status st = evaluate(f, seg, dev, s, small, diag, &ok, &ns, &nv);
    if (st != FU_OK) return st;
    best = s;
    p = q;
  }
  if (debug)
    fprintf(debug,
            "schedule: @%s: reference %%%s (%.0f elements), %s, vector %lld, block %d%s, unroll %lld, %u input(s), "
            "index %s, grid %s%s\n",
            si->name ? si->name : "?", ref->name ? ref->name : "?", ref_n,
            p.brk ? "2-D (outer group on blockIdx.y)" : "1-D", (long long)p.vec, (int)p.block,
            p.block == large && large < LARGE_BLOCK ? " (not 512: more than 30 GB/s of DRAM bandwidth per SM)" : "",
            (long long)p.unroll,
            n_loaded, fu_dtype_name(best->index_dtype), grid_binding(best),
            si->kind == FU_SK_TRANSPOSE ? " (transpose segment: the pointwise scheduler's uncoalesced fallback)"
            : transpose                 ? " (resize segment)"
                                        : "");
  char arch[16];
  fu_device_arch(dev, arch, sizeof arch);
  best->device = fu_arena_strdup(m->arena, dev->name);
  best->arch = fu_arena_strdup(m->arena, arch);
  best->loc = seg->loc;
  if (!best->device || !best->arch) return FU_ERR_NOMEM;
  if (transpose) best->kind = si->kind;
  *out = best;
  return FU_OK;
}
