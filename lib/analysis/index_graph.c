/* fuser: the index graph of a scheduled segment (include/fuser/index_graph.h).
 *
 * Built in five steps, each a function below:
 *   1. domains: one iteration domain per (tensor, dim) of the segment;
 *   2. exprs: what each op does to them (exact maps, broadcasts, new dims,
 *      the merges and splits a reshape implies), and exact groups by
 *      union-find over the maps (a cycle through resize exprs, later, only
 *      puts more domains in one group and never loops);
 *   3. loops: the schedule's axes on the reference, their extents, and the
 *      index of every axis in terms of the loop variables, walking the
 *      transforms backward; predicates where a guarded split may run past
 *      an extent;
 *   4. coordinates: a breadth-first walk over the ops from the reference,
 *      through each op's back map (consumer to operand) and forward map
 *      (operand to consumer), gives every tensor its coordinates;
 *   5. accesses: from each output, a walk back through the ops at the
 *      coordinates each op needs of its operands, keyed by (value,
 *      coordinates), lists every load of a segment input with its offset,
 *      so one input read at two different indices (a rotation and a
 *      residual) is two accesses.
 * Offsets use the tensors' layouts (fuser/view_layout.h): constant and
 * symbolic strides are folded in; a stride the compiler cannot know
 * becomes a variable that lower turns into a stride parameter. */
#include <stdlib.h>
#include <string.h>

#include "fuser/index_graph.h"
#include "fuser/print.h"
#include "fuser/view_layout.h"

struct fu_igraph {
  fu_allocator alloc;
  fu_arena *arena;
  fu_ix_ctx *ix;
  fu_fusion *f;
  fu_op *seg;
  const fu_schedule *s;
  fu_diag_engine *diag;
  fu_layout_analysis la;
  bool la_ok;
  /* values of the segment: inputs, then op results in order */
  uint32_t n_fvals;
  int32_t *slot; /* fusion value id -> local index, -1 */
  const fu_value **vals;
  uint32_t n_vals, cap_vals;
  uint32_t *id_base;      /* local -> first domain */
  const fu_ix ***coords;  /* local -> coordinates (rank entries) or NULL */
  const fu_ix ***strides; /* local -> strides (rank entries) or NULL */
  bool *is_input;         /* local: a segment input */
  /* domains and exprs */
  fu_id *ids;
  uint32_t n_ids, cap_ids;
  fu_iexpr *exprs;
  uint32_t n_exprs, cap_exprs;
  uint32_t *uf;
  /* schedule */
  const fu_ix **axis_ext, **axis_idx;
  uint32_t *axis_id;
  const fu_ix **loop_var;
  const fu_ix *lane;
  int64_t width;
  /* a peeled split (tail=peel): its run-time shift variable, and the tensor
   * whose vectors it aligns (the schedule's one access=vector tensor) */
  const fu_ix *peel;
  const fu_value *peel_value;
  uint32_t n_preds;
  const fu_ix **pred_idx, **pred_ext;
  /* accesses */
  fu_iaccess *acc;
  uint32_t n_acc, cap_acc;
  /* interned coordinate tuples, and (value, tuple) pairs already walked:
   * open addressing over entries */
  struct tuple_ent {
    const fu_ix **t;
    uint32_t rank;
  } *tuples;
  uint32_t n_tuples, cap_tuples; /* cap a power of two */
  struct visit_ent {
    uint32_t v;
    const fu_ix *const *c;
  } *visited;
  uint32_t n_visited, cap_visited;
  bool *implied; /* per axis: bounded by an ancestor's predicate */
  /* clamped coordinates of pad and cat operands (fu_igraph_resize_var) */
  struct resize_ent {
    const fu_ix *var, *src;
    int64_t shift, extent;
    bool lanewise; /* src varies along the vector lane: one variable per lane (fu_igraph_resize_at_lane) */
    const fu_op *gop;         /* an indexing op's gathered coordinate (fu_igraph_gather_var), else NULL */
    const fu_ix *const *gc;   /* its index operand's coordinates (interned) */
  } *rvars;
  uint32_t n_rvars, cap_rvars;
  bool rvars_lanewise; /* a clamped coordinate varies along the vector lane */
  fu_dtype index_dtype;
  bool nomem;
};

/* ---- small helpers -------------------------------------------------------------- */

static bool grow_array(fu_igraph *g, void **arr, uint32_t *cap, uint32_t need, size_t elem) {
  if (need <= *cap) return true;
  uint32_t nc = *cap ? *cap * 2 : 16;
  while (nc < need) nc *= 2;
  void *p = fu_mem_realloc(&g->alloc, *arr, (size_t)*cap * elem, (size_t)nc * elem);
  if (!p) {
    g->nomem = true;
    return false;
  }
  *arr = p;
  *cap = nc;
  return true;
}

static int32_t local_of(const fu_igraph *g, const fu_value *v) {
  if (!v || v->is_literal || v->id >= g->n_fvals) return -1;
  int32_t l = g->slot[v->id];
  return l >= 0 && g->vals[l] == v ? l : -1;
}

static const char *vname(const fu_value *v) { return v && v->name ? v->name : "?"; }

static fu_loc seg_loc(const fu_igraph *g) { return g->s && fu_loc_known(g->s->loc) ? g->s->loc : g->seg->loc; }

/* Whether the index arithmetic since the last check met a constant sum or
 * product beyond int64 (which a kernel would wrap); then a located error
 * naming `what`, the extent or index being computed. */
static bool overflowed(fu_igraph *g, fu_loc loc, const char *what, const char *name, bool is_value) {
  if (!fu_ix_take_overflow(g->ix)) return false;
  fu_error(g->diag, loc, "extent product overflows: %s '%s%s' exceeds 2^63 - 1", what, is_value ? "%" : "", name);
  return true;
}

static const fu_ix **new_tuple(fu_igraph *g, uint32_t rank) {
  const fu_ix **t = fu_arena_calloc(g->arena, rank ? rank : 1, sizeof *t);
  if (!t) g->nomem = true;
  return t;
}

static uint64_t tuple_hash(const fu_ix *const *c, uint32_t rank) {
  uint64_t h = 1469598103934665603ull ^ rank;
  for (uint32_t i = 0; i < rank; i++) h = (h ^ (c[i] ? c[i]->id + 1u : 0u)) * 1099511628211ull;
  return h;
}

/* The canonical copy of a coordinate tuple, so tuples compare by pointer. */
static const fu_ix *const *intern_tuple(fu_igraph *g, const fu_ix *const *c, uint32_t rank) {
  if ((g->n_tuples + 1) * 2 > g->cap_tuples) {
    uint32_t cap = g->cap_tuples ? g->cap_tuples * 2 : 64;
    struct tuple_ent *t = fu_mem_calloc(&g->alloc, cap, sizeof *t);
    if (!t) {
      g->nomem = true;
      return NULL;
    }
    for (uint32_t i = 0; i < g->cap_tuples; i++) {
      if (!g->tuples[i].t) continue;
      uint32_t j = (uint32_t)tuple_hash(g->tuples[i].t, g->tuples[i].rank) & (cap - 1);
      while (t[j].t) j = (j + 1) & (cap - 1);
      t[j] = g->tuples[i];
    }
    fu_mem_free(&g->alloc, g->tuples, g->cap_tuples * sizeof *g->tuples);
    g->tuples = t;
    g->cap_tuples = cap;
  }
  uint32_t j = (uint32_t)tuple_hash(c, rank) & (g->cap_tuples - 1);
  for (; g->tuples[j].t; j = (j + 1) & (g->cap_tuples - 1))
    if (g->tuples[j].rank == rank && (rank == 0 || memcmp(g->tuples[j].t, c, rank * sizeof *c) == 0))
      return g->tuples[j].t;
  const fu_ix **t = new_tuple(g, rank);
  if (!t) return NULL;
  if (rank) memcpy(t, c, rank * sizeof *c);
  g->tuples[j].t = t;
  g->tuples[j].rank = rank;
  g->n_tuples++;
  return t;
}

/* Marks (v, c) walked; false when it was already. */
static bool first_visit(fu_igraph *g, uint32_t v, const fu_ix *const *c) {
  if ((g->n_visited + 1) * 2 > g->cap_visited) {
    uint32_t cap = g->cap_visited ? g->cap_visited * 2 : 64;
    struct visit_ent *t = fu_mem_calloc(&g->alloc, cap, sizeof *t);
    if (!t) {
      g->nomem = true;
      return false;
    }
    for (uint32_t i = 0; i < g->cap_visited; i++) {
      if (!g->visited[i].c) continue;
      uint32_t j = (uint32_t)((g->visited[i].v * 2654435761u) ^ (uintptr_t)g->visited[i].c) & (cap - 1);
      while (t[j].c) j = (j + 1) & (cap - 1);
      t[j] = g->visited[i];
    }
    fu_mem_free(&g->alloc, g->visited, g->cap_visited * sizeof *g->visited);
    g->visited = t;
    g->cap_visited = cap;
  }
  uint32_t j = (uint32_t)((v * 2654435761u) ^ (uintptr_t)c) & (g->cap_visited - 1);
  for (; g->visited[j].c; j = (j + 1) & (g->cap_visited - 1))
    if (g->visited[j].v == v && g->visited[j].c == c) return false;
  g->visited[j].v = v;
  g->visited[j].c = c;
  g->n_visited++;
  return true;
}

/* ---- 1. domains ------------------------------------------------------------------ */

static uint32_t add_id(fu_igraph *g, fu_id_kind k, const fu_value *v, int32_t dim, const fu_ix *ext) {
  if (!grow_array(g, (void **)&g->ids, &g->cap_ids, g->n_ids + 1, sizeof *g->ids)) return UINT32_MAX;
  fu_id *d = &g->ids[g->n_ids];
  memset(d, 0, sizeof *d);
  d->kind = k;
  d->value = v;
  d->dim = dim;
  d->axis = -1;
  d->extent = ext;
  d->group = g->n_ids; /* its own group until build_groups merges it */
  return g->n_ids++;
}

static bool add_value(fu_igraph *g, const fu_value *v) {
  if (!v || v->is_literal || v->id >= g->n_fvals || local_of(g, v) >= 0) return true;
  if (!grow_array(g, (void **)&g->vals, &g->cap_vals, g->n_vals + 1, sizeof *g->vals)) return false;
  g->slot[v->id] = (int32_t)g->n_vals;
  g->vals[g->n_vals++] = v;
  return true;
}

static bool collect_values(fu_igraph *g) {
  fu_segment_info *si = &g->seg->u.segment;
  for (uint32_t i = 0; i < g->seg->n_operands; i++)
    if (!add_value(g, g->seg->operands[i])) return false;
  uint32_t n_inputs = g->n_vals;
  for (fu_op *op = si->body ? si->body->first : NULL; op; op = op->next)
    for (uint32_t r = 0; r < op->n_results; r++)
      if (!add_value(g, op->results[r])) return false;
  g->id_base = fu_arena_calloc(g->arena, g->n_vals + 1, sizeof *g->id_base);
  g->coords = fu_arena_calloc(g->arena, g->n_vals + 1, sizeof *g->coords);
  g->strides = fu_arena_calloc(g->arena, g->n_vals + 1, sizeof *g->strides);
  g->is_input = fu_arena_calloc(g->arena, g->n_vals + 1, sizeof *g->is_input);
  if (!g->id_base || !g->coords || !g->strides || !g->is_input) {
    g->nomem = true;
    return false;
  }
  for (uint32_t l = 0; l < g->n_vals; l++) {
    g->is_input[l] = l < n_inputs;
    g->id_base[l] = g->n_ids;
    const fu_value *v = g->vals[l];
    for (int32_t d = 0; d < v->type.rank; d++)
      if (add_id(g, FU_ID_TENSOR, v, d, fu_ix_extent(g->ix, v->type.dims[d])) == UINT32_MAX) return false;
  }
  return true;
}

uint32_t fu_igraph_tensor_id(const fu_igraph *g, const fu_value *v, int32_t dim) {
  int32_t l = local_of(g, v);
  if (l < 0 || dim < 0 || dim >= v->type.rank) return UINT32_MAX;
  return g->id_base[l] + (uint32_t)dim;
}

/* ---- 2. exprs ---------------------------------------------------------------------- */

static void add_expr(fu_igraph *g, fu_iexpr_kind k, const fu_op *op, uint32_t in0, uint32_t in1, uint32_t out0,
                     uint32_t out1, const fu_ix *factor) {
  if (!grow_array(g, (void **)&g->exprs, &g->cap_exprs, g->n_exprs + 1, sizeof *g->exprs)) return;
  fu_iexpr *e = &g->exprs[g->n_exprs++];
  memset(e, 0, sizeof *e);
  e->kind = k;
  e->op = op;
  e->in[0] = in0;
  e->in[1] = in1;
  e->out[0] = out0;
  e->out[1] = out1;
  e->n_in = in1 != UINT32_MAX ? 2 : in0 != UINT32_MAX ? 1 : 0;
  e->n_out = out1 != UINT32_MAX ? 2 : out0 != UINT32_MAX ? 1 : 0;
  e->factor = factor;
}

static bool is_bcast_dim(const fu_value *operand, int32_t od, const fu_value *result, int32_t rd) {
  return fu_extent_is_one(operand->type.dims[od]) && !fu_extent_is_one(result->type.dims[rd]);
}

/* Maps operand dim od to result dim rd: an exact map, or a broadcast. */
static void map_dim(fu_igraph *g, const fu_op *op, const fu_value *x, int32_t od, const fu_value *r, int32_t rd) {
  uint32_t a = fu_igraph_tensor_id(g, x, od), b = fu_igraph_tensor_id(g, r, rd);
  if (a == UINT32_MAX || b == UINT32_MAX) return;
  add_expr(g, is_bcast_dim(x, od, r, rd) ? FU_IE_BROADCAST : FU_IE_MAP, op, a, UINT32_MAX, b, UINT32_MAX, NULL);
}

/* The groups of a reshape: operand dims [oa, ob) match result dims [ra, rb)
 * when their extent products are provably equal.  Dims of extent 1 are
 * left out of groups.  Writes up to FU_MAX_RANK groups; a product that
 * cannot be matched ends in one group of everything left. */
typedef struct rgroup {
  int32_t o[FU_MAX_RANK], r[FU_MAX_RANK];
  int32_t no, nr;
} rgroup;

static uint32_t reshape_groups(fu_igraph *g, const fu_type *from, const fu_type *to, rgroup *out) {
  int32_t od[FU_MAX_RANK], rd[FU_MAX_RANK], no = 0, nr = 0;
  for (int32_t i = 0; i < from->rank; i++)
    if (!fu_extent_is_one(from->dims[i])) od[no++] = i;
  for (int32_t i = 0; i < to->rank; i++)
    if (!fu_extent_is_one(to->dims[i])) rd[nr++] = i;
  uint32_t n = 0;
  int32_t i = 0, j = 0;
  while (i < no || j < nr) {
    rgroup *gr = &out[n];
    gr->no = gr->nr = 0;
    const fu_ix *po = fu_ix_const(g->ix, 1), *pr = fu_ix_const(g->ix, 1);
    bool matched = false;
    while (i < no || j < nr) {
      /* grow the side whose product is provably smaller (divides the other) */
      bool take_o;
      if (i >= no) take_o = false;
      else if (j >= nr) take_o = true;
      else if (gr->no == 0) take_o = true;
      else if (gr->nr == 0) take_o = false;
      else take_o = fu_ix_divides(po, pr) && po != pr;
      if (take_o) {
        gr->o[gr->no++] = od[i];
        po = fu_ix_mul(g->ix, po, fu_ix_extent(g->ix, from->dims[od[i++]]));
      } else {
        gr->r[gr->nr++] = rd[j];
        pr = fu_ix_mul(g->ix, pr, fu_ix_extent(g->ix, to->dims[rd[j++]]));
      }
      if (gr->no && gr->nr && po == pr) {
        matched = true;
        break;
      }
      /* neither divides the other: give up on finer groups */
      if (gr->no && gr->nr && !fu_ix_divides(po, pr) && !fu_ix_divides(pr, po)) {
        while (i < no) gr->o[gr->no++] = od[i++];
        while (j < nr) gr->r[gr->nr++] = rd[j++];
        break;
      }
    }
    (void)matched;
    n++;
  }
  return n;
}

/* A reshape's exprs: per group, merge the operand dims into one domain and
 * split it into the result dims. */
static void reshape_exprs(fu_igraph *g, const fu_op *op) {
  const fu_value *x = op->operands[0], *r = op->results[0];
  rgroup gr[2 * FU_MAX_RANK];
  uint32_t n = reshape_groups(g, &x->type, &r->type, gr);
  for (uint32_t k = 0; k < n; k++) {
    rgroup *q = &gr[k];
    if (q->no == 1 && q->nr == 1) {
      map_dim(g, op, x, q->o[0], r, q->r[0]);
      continue;
    }
    uint32_t cur = q->no ? fu_igraph_tensor_id(g, x, q->o[0]) : UINT32_MAX;
    const fu_ix *ext = q->no ? g->ids[cur].extent : fu_ix_const(g->ix, 1);
    for (int32_t a = 1; a < q->no; a++) {
      uint32_t nxt = fu_igraph_tensor_id(g, x, q->o[a]);
      ext = fu_ix_mul(g->ix, ext, g->ids[nxt].extent);
      uint32_t m = add_id(g, FU_ID_RESHAPE, r, -1, ext);
      if (m == UINT32_MAX) return;
      add_expr(g, FU_IE_MERGE, op, cur, nxt, m, UINT32_MAX, NULL);
      cur = m;
    }
    for (int32_t b = 0; b + 1 < q->nr; b++) {
      const fu_ix *inner = fu_ix_const(g->ix, 1);
      for (int32_t c = b + 1; c < q->nr; c++) inner = fu_ix_mul(g->ix, inner, fu_ix_extent(g->ix, r->type.dims[q->r[c]]));
      uint32_t outer = fu_igraph_tensor_id(g, r, q->r[b]);
      uint32_t rest = b + 2 == q->nr ? fu_igraph_tensor_id(g, r, q->r[b + 1]) : add_id(g, FU_ID_RESHAPE, r, -1, inner);
      if (rest == UINT32_MAX) return;
      add_expr(g, FU_IE_SPLIT, op, cur, UINT32_MAX, outer, rest, inner);
      cur = rest;
    }
    if (q->nr == 1 && cur != UINT32_MAX) {
      uint32_t only = fu_igraph_tensor_id(g, r, q->r[0]);
      add_expr(g, FU_IE_MAP, op, cur, UINT32_MAX, only, UINT32_MAX, NULL);
    }
  }
  for (int32_t d = 0; d < r->type.rank; d++)
    if (fu_extent_is_one(r->type.dims[d]))
      add_expr(g, FU_IE_NEW, op, UINT32_MAX, UINT32_MAX, fu_igraph_tensor_id(g, r, d), UINT32_MAX, NULL);
}

/* Whether squeeze op drops its operand's dim d. */
static bool squeezed(const fu_op *op, int32_t d) {
  for (uint32_t k = 0; k < op->u.squeeze.dims.n; k++)
    if (op->u.squeeze.dims.v[k] == d) return true;
  return false;
}

/* Whether an indexing op's operand and result ranks and its dim agree
 * (ir.h, "indexing ops"). */
static bool index_op_ok(const fu_op *op) {
  if (op->n_operands != 2 || op->n_results != 1) return false;
  const fu_value *x = op->operands[fu_index_lookup_operand(op)], *ix = op->operands[fu_index_index_operand(op)];
  const fu_value *r = op->results[0];
  if (!fu_type_is_tensor(&x->type) || !fu_type_is_tensor(&ix->type) || !fu_type_is_tensor(&r->type)) return false;
  int64_t d = fu_index_dim(op);
  int32_t xr = x->type.rank, ir = ix->type.rank, rr = r->type.rank;
  if (d < 0 || d >= xr) return false;
  switch (op->kind) {
  case FU_OP_INDEX_SELECT: return ir == 1 && rr == xr;
  case FU_OP_EMBEDDING_FWD: return xr == 2 && rr == ir + 1;
  default: return ir == xr && rr == xr;
  }
}

/* Whether the dims a data-movement op names are within its operand's and
 * result's ranks.  The op verifier checks this; the graph checks again
 * because it indexes arrays with them and may meet an unverified op (a
 * caller that skipped the verifier), where a wrong dim must be an error,
 * not a write out of bounds. */
static bool op_dims_in_range(const fu_op *op) {
  const fu_value *r = op->n_results ? op->results[0] : NULL;
  const fu_value *x = op->n_operands ? op->operands[0] : NULL;
  if (!r || !x || !fu_type_is_tensor(&x->type)) return op->n_operands > 0 || !r;
  int32_t rr = r->type.rank, xr = x->type.rank;
  switch (fu_op_info_of(op->kind)->cls) {
  case FU_OC_PERMUTE: {
    if (op->u.permute.dims.n != (uint32_t)rr || rr != xr) return false;
    for (int32_t d = 0; d < rr; d++)
      if (op->u.permute.dims.v[d] < 0 || op->u.permute.dims.v[d] >= xr) return false;
    return true;
  }
  case FU_OC_BROADCAST_IN_DIM:
    if (op->u.broadcast_in_dim.broadcast_dims.n > (uint32_t)xr) return false;
    for (uint32_t i = 0; i < op->u.broadcast_in_dim.broadcast_dims.n; i++)
      if (op->u.broadcast_in_dim.broadcast_dims.v[i] < 0 || op->u.broadcast_in_dim.broadcast_dims.v[i] >= rr)
        return false;
    return true;
  case FU_OC_BROADCAST: {
    int32_t kept = 0;
    for (int32_t d = 0; d < rr; d++)
      if (!(d < (int32_t)op->u.broadcast.n && op->u.broadcast.is_broadcast[d])) kept++;
    return kept == xr;
  }
  case FU_OC_EXPAND: return rr == xr;
  case FU_OC_SQUEEZE: {
    int32_t kept = 0;
    for (int32_t d = 0; d < xr; d++) {
      if (!squeezed(op, d)) kept++;
    }
    return kept == rr;
  }
  case FU_OC_META:
  case FU_OC_UNARY:
  case FU_OC_BINARY:
  case FU_OC_TERNARY:
  case FU_OC_CAST:
  case FU_OC_REDUCE:
  case FU_OC_VARIANCE:
  case FU_OC_RESHAPE:
  case FU_OC_SLICE:
  case FU_OC_CAT:
  case FU_OC_PAD:
  case FU_OC_FULL:
  case FU_OC_IOTA:
  case FU_OC_MATMUL: return true;
  case FU_OC_INDEX: return index_op_ok(op);
  case FU_OC_STRIDE_ORDER: return rr == xr;
  case FU_OC_RNG: return true;
  case FU_OC_SCAN: return rr == xr && op->u.scan.dim >= 0 && op->u.scan.dim < xr;
  case FU_OC_PARTIAL: return rr == xr && op->u.partial.dim >= 0 && op->u.partial.dim < xr && op->u.partial.parts > 0;
  }
  return true; /* not reached: a class outside the enum */
}

/* A reduction maps each kept dim of its operand to the result's dim (the
 * reduced dims end at the op; with keepdim they are new extent-1 dims). */
static bool reduced_axis(const fu_op *op, int32_t d) {
  int32_t rank = op->operands[0]->type.rank;
  for (uint32_t i = 0; i < op->u.reduce.axes.n; i++)
    if (op->u.reduce.axes.v[i] == d || op->u.reduce.axes.v[i] + rank == d) return true;
  return false;
}

/* sum/prod/max/min and the Welford ones (var, var_mean: both results,
 * variance and mean, have the reduced shape; the two attribute structs
 * start with the same axes and keepdim fields). */
static bool is_reduce_class(const fu_op *op) {
  fu_op_class c = fu_op_info_of(op->kind)->cls;
  return c == FU_OC_REDUCE || c == FU_OC_VARIANCE;
}

static void reduction_exprs(fu_igraph *g, const fu_op *op) {
  const fu_value *x = op->operands[0];
  for (uint32_t k = 0; k < op->n_results; k++) {
    const fu_value *r = op->results[k];
    int32_t rd = 0;
    for (int32_t d = 0; d < x->type.rank && rd < r->type.rank; d++) {
      if (!reduced_axis(op, d)) map_dim(g, op, x, d, r, rd++);
      else if (op->u.reduce.keepdim)
        add_expr(g, FU_IE_NEW, op, UINT32_MAX, UINT32_MAX, fu_igraph_tensor_id(g, r, rd++), UINT32_MAX, NULL);
    }
  }
}

/* Whether a pad moves dim d of its rank-`rank` operand (widths are given
 * last dim first): a crop at one end and a pad at the other keep the
 * extent but shift every coordinate. */
static bool pad_moves_dim(const fu_op *op, int32_t rank, int32_t d) {
  const fu_int_list *w = &op->u.pad.widths;
  uint32_t k = (uint32_t)(rank - 1 - d);
  return 2 * k + 1 < w->n && (w->v[2 * k] != 0 || w->v[2 * k + 1] != 0);
}

/* A slice, pad or cat relates each dim of each tensor operand to the
 * result's: an exact map where the op leaves the dim alone, a resize expr
 * where it moves or clips it (a pad of widths [-1, 1] keeps the extent,
 * not the coordinates). */
static void resize_exprs(fu_igraph *g, const fu_op *op) {
  const fu_value *r = op->results[0];
  for (uint32_t i = 0; i < op->n_operands; i++) {
    const fu_value *x = op->operands[i];
    if (!fu_type_is_tensor(&x->type) || x->type.rank != r->type.rank) continue;
    for (int32_t d = 0; d < r->type.rank; d++) {
      bool moved = op->kind == FU_OP_SLICE || (op->kind == FU_OP_PAD && pad_moves_dim(op, r->type.rank, d));
      if (fu_extent_equal(x->type.dims[d], r->type.dims[d]) && !moved) {
        map_dim(g, op, x, d, r, d);
        continue;
      }
      add_expr(g, FU_IE_RESIZE, op, fu_igraph_tensor_id(g, x, d), UINT32_MAX, fu_igraph_tensor_id(g, r, d), UINT32_MAX,
               NULL);
    }
  }
}

/* The index operand's dim j iterates result dim index_result_dim(op, j);
 * the lookup's dims other than the gathered one iterate result dim
 * lookup_result_dim(op, j). */
static int32_t index_result_dim(const fu_op *op, int32_t j) {
  return op->kind == FU_OP_INDEX_SELECT ? (int32_t)fu_index_dim(op) : j;
}
static int32_t lookup_result_dim(const fu_op *op, int32_t j) {
  return op->kind == FU_OP_EMBEDDING_FWD ? op->operands[0]->type.rank : j;
}

/* The index operand maps onto the result; the lookup's other dims too
 * where their extents agree (a gather's lookup may be larger: no exact
 * map there); the gathered dim is moved by data, a resize expr. */
static void index_exprs(fu_igraph *g, const fu_op *op) {
  const fu_value *x = op->operands[fu_index_lookup_operand(op)], *ix = op->operands[fu_index_index_operand(op)];
  const fu_value *r = op->results[0];
  int32_t d = (int32_t)fu_index_dim(op);
  for (int32_t j = 0; j < ix->type.rank; j++) map_dim(g, op, ix, j, r, index_result_dim(op, j));
  for (int32_t j = 0; j < x->type.rank; j++) {
    if (j == d) continue;
    int32_t rd = lookup_result_dim(op, j);
    if (fu_extent_equal(x->type.dims[j], r->type.dims[rd]) || fu_extent_is_one(x->type.dims[j]))
      map_dim(g, op, x, j, r, rd);
    else
      add_expr(g, FU_IE_RESIZE, op, fu_igraph_tensor_id(g, x, j), UINT32_MAX, fu_igraph_tensor_id(g, r, rd),
               UINT32_MAX, NULL);
  }
  if (op->kind != FU_OP_EMBEDDING_FWD)
    add_expr(g, FU_IE_RESIZE, op, fu_igraph_tensor_id(g, x, d), UINT32_MAX, fu_igraph_tensor_id(g, r, d), UINT32_MAX,
             NULL);
}

static bool build_exprs(fu_igraph *g) {
  for (fu_op *op = g->seg->u.segment.body ? g->seg->u.segment.body->first : NULL; op; op = op->next) {
    const fu_op_info *info = fu_op_info_of(op->kind);
    const fu_value *r = op->n_results ? op->results[0] : NULL;
    if (r && fu_type_is_tensor(&r->type) && is_reduce_class(op) && g->s->reduce != FU_RM_NONE) {
      reduction_exprs(g, op);
      continue;
    }
    if (!r || !fu_type_is_tensor(&r->type)) {
      if (op->kind == FU_OP_SEGMENT || fu_op_has(op->kind, FU_OF_REDUCTION) || fu_op_has(op->kind, FU_OF_RESIZE)) goto unsupported;
      continue;
    }
    if (fu_op_has(op->kind, FU_OF_POINTWISE)) {
      for (uint32_t i = 0; i < op->n_operands; i++) {
        const fu_value *x = op->operands[i];
        bool repeated = false; /* `add %T1, %T1` relates T1 and the result once */
        for (uint32_t j = 0; j < i; j++)
          if (op->operands[j] == x) repeated = true;
        if (!fu_type_is_tensor(&x->type) || repeated) continue;
        for (int32_t d = 0; d < r->type.rank && d < x->type.rank; d++) map_dim(g, op, x, d, r, d);
      }
      continue;
    }
    const fu_value *x = op->n_operands ? op->operands[0] : NULL;
    if (!op_dims_in_range(op)) {
      fu_error(g->diag, op->loc, "'%s': its dims do not fit the ranks of its operand and result", info->name);
      return false;
    }
    switch (info->cls) {
    case FU_OC_BROADCAST_IN_DIM: {
      bool used[FU_MAX_RANK] = {false};
      for (uint32_t i = 0; i < op->u.broadcast_in_dim.broadcast_dims.n; i++) {
        int32_t rd = (int32_t)op->u.broadcast_in_dim.broadcast_dims.v[i];
        if (rd >= 0 && rd < r->type.rank) {
          used[rd] = true;
          map_dim(g, op, x, (int32_t)i, r, rd);
        }
      }
      for (int32_t d = 0; d < r->type.rank; d++)
        if (!used[d]) add_expr(g, FU_IE_NEW, op, UINT32_MAX, UINT32_MAX, fu_igraph_tensor_id(g, r, d), UINT32_MAX, NULL);
      break;
    }
    case FU_OC_BROADCAST: {
      int32_t od = 0;
      for (int32_t d = 0; d < r->type.rank; d++) {
        if (d < (int32_t)op->u.broadcast.n && op->u.broadcast.is_broadcast[d])
          add_expr(g, FU_IE_NEW, op, UINT32_MAX, UINT32_MAX, fu_igraph_tensor_id(g, r, d), UINT32_MAX, NULL);
        else
          map_dim(g, op, x, od++, r, d);
      }
      break;
    }
    case FU_OC_EXPAND:
    case FU_OC_STRIDE_ORDER: /* same dims; only the stored layout differs */
    case FU_OC_SCAN:         /* same dims: element c reads the operand up to c along dim, in a loop */
      for (int32_t d = 0; d < r->type.rank; d++) map_dim(g, op, x, d, r, d);
      break;
    case FU_OC_SQUEEZE: {
      int32_t rd = 0;
      for (int32_t d = 0; d < x->type.rank; d++) {
        if (!squeezed(op, d)) map_dim(g, op, x, d, r, rd++);
      }
      break;
    }
    case FU_OC_PERMUTE:
      for (int32_t d = 0; d < r->type.rank; d++) map_dim(g, op, x, (int32_t)op->u.permute.dims.v[d], r, d);
      break;
    case FU_OC_RESHAPE:
      reshape_exprs(g, op);
      if (overflowed(g, op->loc, "an extent of the reshape to", vname(r), true)) return false;
      break;
    case FU_OC_FULL:
    case FU_OC_IOTA:
    case FU_OC_RNG:
      for (int32_t d = 0; d < r->type.rank; d++)
        add_expr(g, FU_IE_NEW, op, UINT32_MAX, UINT32_MAX, fu_igraph_tensor_id(g, r, d), UINT32_MAX, NULL);
      break;
    case FU_OC_SLICE:
    case FU_OC_CAT:
    case FU_OC_PAD: resize_exprs(g, op); break;
    case FU_OC_INDEX: index_exprs(g, op); break;
    case FU_OC_PARTIAL:
      /* the other dims as they are; the partitioned dim is the operand's
       * index modulo parts (forward_map), no dim of the loop domain */
      if (g->s->reduce == FU_RM_NONE) {
        fu_error(g->diag, op->loc,
                 "'partial_sum' has a kernel only in a persistent segment's row loop (the schedule pass's inner-outer "
                 "rewrite writes it there), not in a %s segment",
                 fu_sched_kind_name(g->seg->u.segment.kind));
        return false;
      }
      for (int32_t d = 0; d < r->type.rank; d++) {
        if (d != op->u.partial.dim) map_dim(g, op, x, d, r, d);
        else add_expr(g, FU_IE_NEW, op, UINT32_MAX, UINT32_MAX, fu_igraph_tensor_id(g, r, d), UINT32_MAX, NULL);
      }
      break;
    case FU_OC_META:
    case FU_OC_UNARY:
    case FU_OC_BINARY:
    case FU_OC_TERNARY:
    case FU_OC_CAST:
    case FU_OC_REDUCE:
    case FU_OC_VARIANCE:
    case FU_OC_MATMUL: goto unsupported;
    }
    continue;
  unsupported:
    fu_error(g->diag, op->loc, "'%s' cannot be indexed in a pointwise segment (its scheduler comes later)", info->name);
    return false;
  }
  return !g->nomem;
}

static uint32_t uf_find(uint32_t *uf, uint32_t x) {
  while (uf[x] != x) {
    uf[x] = uf[uf[x]];
    x = uf[x];
  }
  return x;
}

static bool build_groups(fu_igraph *g) {
  g->uf = fu_mem_alloc(&g->alloc, (g->n_ids ? g->n_ids : 1) * sizeof *g->uf);
  if (!g->uf) {
    g->nomem = true;
    return false;
  }
  for (uint32_t i = 0; i < g->n_ids; i++) g->uf[i] = i;
  for (uint32_t e = 0; e < g->n_exprs; e++) {
    const fu_iexpr *x = &g->exprs[e];
    if (x->kind != FU_IE_MAP) continue;
    uint32_t a = uf_find(g->uf, x->in[0]), b = uf_find(g->uf, x->out[0]);
    if (a != b) g->uf[a > b ? a : b] = a < b ? a : b;
  }
  for (uint32_t i = 0; i < g->n_ids; i++) g->ids[i].group = uf_find(g->uf, i);
  return true;
}

/* ---- 3. loops -------------------------------------------------------------------------- */

/* A split of a constant extent E by F iterates ceil(E / F) * F indices of
 * which the largest, (ceil(E / F) - 1) * F + F - 1, must fit in int64 (the
 * kernel computes it before the guard drops it). */
static bool split_domain_fits(fu_igraph *g, const fu_sxform *x) {
  int64_t e, outer, hi;
  if (x->kind != FU_SX_SPLIT || x->factor <= 0 || !fu_ix_is_const(g->axis_ext[x->in[0]], &e) ||
      !fu_ix_is_const(g->axis_ext[x->out[0]], &outer) || outer < 1)
    return true;
  if (!__builtin_mul_overflow(outer - 1, x->factor, &hi) && !__builtin_add_overflow(hi, x->factor - 1, &hi)) return true;
  fu_error(g->diag, x->loc,
           "extent product overflows: splitting axis '%s' of extent %lld by %lld iterates past 2^63 - 1",
           g->s->axes[x->in[0]].name, (long long)e, (long long)x->factor);
  return false;
}

static bool build_loops(fu_igraph *g) {
  const fu_schedule *s = g->s;
  uint32_t na = s->n_axes;
  g->axis_ext = fu_arena_calloc(g->arena, na + 1, sizeof *g->axis_ext);
  g->axis_idx = fu_arena_calloc(g->arena, na + 1, sizeof *g->axis_idx);
  g->axis_id = fu_arena_calloc(g->arena, na + 1, sizeof *g->axis_id);
  g->loop_var = fu_arena_calloc(g->arena, s->n_loops + 1, sizeof *g->loop_var);
  g->pred_idx = fu_arena_calloc(g->arena, na + 1, sizeof *g->pred_idx);
  g->pred_ext = fu_arena_calloc(g->arena, na + 1, sizeof *g->pred_ext);
  bool *pred = fu_arena_calloc(g->arena, na + 1, sizeof *pred);
  g->implied = fu_arena_calloc(g->arena, na + 1, sizeof *g->implied);
  if (!g->axis_ext || !g->axis_idx || !g->axis_id || !g->loop_var || !g->pred_idx || !g->pred_ext || !pred ||
      !g->implied) {
    g->nomem = true;
    return false;
  }
  const fu_value *ref = s->reference;
  int32_t lref = local_of(g, ref);
  if (lref < 0) {
    fu_error(g->diag, seg_loc(g), "the reference '%%%s' is not a tensor of segment '@%s'", vname(ref),
             g->seg->u.segment.name ? g->seg->u.segment.name : "?");
    return false;
  }
  /* extents, forward */
  for (uint32_t a = 0; a < na; a++) {
    const fu_saxis *ax = &s->axes[a];
    if (ax->ref_dim >= 0) {
      if (ax->ref_dim >= ref->type.rank) return false;
      g->axis_ext[a] = fu_ix_extent(g->ix, ref->type.dims[ax->ref_dim]);
      g->axis_id[a] = fu_igraph_tensor_id(g, ref, ax->ref_dim);
      g->ids[g->axis_id[a]].axis = (int32_t)a;
    }
  }
  for (uint32_t t = 0; t < s->n_xforms; t++) {
    const fu_sxform *x = &s->xforms[t];
    if (x->kind == FU_SX_MERGE) {
      g->axis_ext[x->out[0]] = fu_ix_mul(g->ix, g->axis_ext[x->in[0]], g->axis_ext[x->in[1]]);
    } else {
      const fu_ix *f = fu_ix_const(g->ix, x->factor);
      /* peeled: a shift of up to factor - 1 can start one more vector */
      const fu_ix *e = g->axis_ext[x->in[0]];
      if (x->tail == FU_TAIL_PEEL) e = fu_ix_add(g->ix, e, fu_ix_const(g->ix, x->factor - 1));
      g->axis_ext[x->out[0]] = fu_ix_ceildiv(g->ix, e, f);
      g->axis_ext[x->out[1]] = f;
    }
    if (overflowed(g, x->loc, "the extent of axis", s->axes[x->out[0]].name, false) || !split_domain_fits(g, x))
      return false;
    for (uint32_t k = 0; k < (x->kind == FU_SX_MERGE ? 1u : 2u); k++) {
      uint32_t o = x->out[k];
      g->axis_id[o] = add_id(g, FU_ID_AXIS, ref, -1, g->axis_ext[o]);
      if (g->axis_id[o] == UINT32_MAX) return false;
      g->ids[g->axis_id[o]].axis = (int32_t)o;
    }
    if (x->kind == FU_SX_MERGE)
      add_expr(g, FU_IE_MERGE, NULL, g->axis_id[x->in[0]], g->axis_id[x->in[1]], g->axis_id[x->out[0]], UINT32_MAX, NULL);
    else
      add_expr(g, FU_IE_SPLIT, NULL, g->axis_id[x->in[0]], UINT32_MAX, g->axis_id[x->out[0]], g->axis_id[x->out[1]],
               g->axis_ext[x->out[1]]);
  }
  /* loop variables */
  for (uint32_t i = 0; i < s->n_loops; i++) {
    uint32_t a = s->loops[i].axis;
    int64_t bound = 0;
    fu_ix_is_const(g->axis_ext[a], &bound);
    g->loop_var[i] = fu_ix_var(g->ix, s->axes[a].name, FU_IG_VAR_LOOP, &s->loops[i], (int32_t)i, bound);
    g->axis_idx[a] = g->loop_var[i];
    if (s->loops[i].ptype == FU_PT_VECTORIZE) {
      g->lane = g->loop_var[i];
      g->width = bound > 0 ? bound : 1;
    }
  }
  /* indices, backward; predicates where a guarded split may overrun */
  const fu_ix *peel_lo = NULL;
  for (uint32_t t = s->n_xforms; t-- > 0;) {
    const fu_sxform *x = &s->xforms[t];
    if (x->kind == FU_SX_SPLIT) {
      const fu_ix *o = g->axis_idx[x->out[0]], *in = g->axis_idx[x->out[1]];
      if (!o || !in) continue;
      /* in linear canonical form, the form offsets and reshapes produce,
       * so that equal indices reached two ways are one ix */
      const fu_ix *lin = fu_ix_add(g->ix, fu_ix_mul(g->ix, o, fu_ix_const(g->ix, x->factor)), in);
      bool peeled = x->tail == FU_TAIL_PEEL && !g->peel;
      if (peeled) {
        /* index = o * V + in - p, p in [0, V) set by the lowering; the
         * lower bound index >= 0 is the predicate p - (o * V + in) < 1 */
        g->peel = fu_ix_var(g->ix, "peel", FU_IG_VAR_PEEL, x, 0, x->factor);
        const fu_ix *minus1 = fu_ix_const(g->ix, -1);
        peel_lo = fu_ix_simplify_linear(g->ix, fu_ix_add(g->ix, g->peel, fu_ix_mul(g->ix, lin, minus1)));
        lin = fu_ix_add(g->ix, lin, fu_ix_mul(g->ix, g->peel, minus1));
      }
      g->axis_idx[x->in[0]] = fu_ix_simplify_linear(g->ix, lin);
      bool exact = !peeled && fu_ix_divides(fu_ix_const(g->ix, x->factor), g->axis_ext[x->in[0]]);
      if (!exact) pred[x->in[0]] = true;
    } else {
      const fu_ix *m = g->axis_idx[x->out[0]];
      if (!m) continue;
      g->axis_idx[x->in[0]] = fu_ix_div(g->ix, m, g->axis_ext[x->in[1]]);
      g->axis_idx[x->in[1]] = fu_ix_mod(g->ix, m, g->axis_ext[x->in[1]]);
    }
    if (overflowed(g, x->loc, "the index of axis", s->axes[x->in[0]].name, false)) return false;
  }
  /* a predicate on the outer output of a predicated split is implied:
   * idx(in) < ext(in) gives idx(outer) <= idx(in) / f < ceil(ext(in) / f) */
  for (uint32_t t = 0; t < s->n_xforms; t++) {
    const fu_sxform *x = &s->xforms[t];
    if (x->kind == FU_SX_SPLIT && (pred[x->in[0]] || g->implied[x->in[0]])) {
      pred[x->out[0]] = false;
      g->implied[x->out[0]] = true;
    }
  }
  for (uint32_t a = 0; a < na; a++) {
    if (!pred[a]) continue;
    g->pred_idx[g->n_preds] = g->axis_idx[a];
    g->pred_ext[g->n_preds] = g->axis_ext[a];
    g->n_preds++;
  }
  if (peel_lo) {
    /* at most one peeled split, so na + 1 entries suffice */
    g->pred_idx[g->n_preds] = peel_lo;
    g->pred_ext[g->n_preds] = fu_ix_const(g->ix, 1);
    g->n_preds++;
  }
  for (uint32_t i = 0; g->peel && i < s->n_tensors; i++)
    if (s->tensors[i].access == FU_ACCESS_VECTOR && !g->peel_value) g->peel_value = s->tensors[i].value;
  for (uint32_t a = 0; a < na; a++)
    if (!g->axis_idx[a] || !g->axis_ext[a]) {
      fu_error(g->diag, s->axes[a].loc, "axis '%s' is not reached from the loop axes", s->axes[a].name);
      return false;
    }
  /* the reference's coordinates */
  const fu_ix **rc = new_tuple(g, (uint32_t)ref->type.rank);
  if (!rc) return false;
  for (uint32_t a = 0; a < na; a++)
    if (s->axes[a].ref_dim >= 0) rc[s->axes[a].ref_dim] = g->axis_idx[a];
  for (int32_t d = 0; d < ref->type.rank; d++)
    if (!rc[d]) rc[d] = fu_ix_const(g->ix, 0);
  g->coords[lref] = (const fu_ix **)intern_tuple(g, rc, (uint32_t)ref->type.rank);
  return g->coords[lref] != NULL && !fu_ix_failed(g->ix);
}

/* ---- 4. coordinates ------------------------------------------------------------------ */

/* Linear index of coordinates c over the dims idx[0..n) of type t. */
static const fu_ix *linearize(fu_igraph *g, const fu_type *t, const int32_t *idx, int32_t n, const fu_ix *const *c) {
  const fu_ix *lin = fu_ix_const(g->ix, 0);
  for (int32_t k = 0; k < n; k++)
    lin = fu_ix_add(g->ix, fu_ix_mul(g->ix, lin, fu_ix_extent(g->ix, t->dims[idx[k]])), c[idx[k]]);
  return lin;
}

/* Coordinates of dims idx[0..n) of type t from linear index lin (mixed
 * radix, innermost last; the outermost takes the quotient). */
static void delinearize(fu_igraph *g, const fu_type *t, const int32_t *idx, int32_t n, const fu_ix *lin,
                        const fu_ix **out) {
  for (int32_t k = n - 1; k >= 0; k--) {
    const fu_ix *e = fu_ix_extent(g->ix, t->dims[idx[k]]);
    if (k == 0) {
      out[idx[k]] = lin;
    } else {
      out[idx[k]] = fu_ix_mod(g->ix, lin, e);
      lin = fu_ix_div(g->ix, lin, e);
    }
  }
}

/* Coordinates of `to` from those of `from` through a reshape between them
 * (either direction: reshape groups are symmetric). */
static const fu_ix **reshape_map(fu_igraph *g, const fu_type *from, const fu_ix *const *fc, const fu_type *to) {
  const fu_ix **out = new_tuple(g, (uint32_t)to->rank);
  if (!out) return NULL;
  for (int32_t d = 0; d < to->rank; d++) out[d] = fu_ix_const(g->ix, 0);
  rgroup gr[2 * FU_MAX_RANK];
  uint32_t n = reshape_groups(g, from, to, gr);
  for (uint32_t k = 0; k < n; k++) {
    /* folded, so that a split undone by a merge gives back the same index
     * (and the same coordinates: the demand-driven walk then meets) */
    const fu_ix *lin = fu_ix_simplify_linear(g->ix, linearize(g, from, gr[k].o, gr[k].no, fc));
    delinearize(g, to, gr[k].r, gr[k].nr, lin, out);
  }
  return out;
}

/* The variable for clamp(src - shift, 0, extent - 1), one per triple. */
static const fu_ix *resize_var(fu_igraph *g, const fu_ix *src, int64_t shift, int64_t extent) {
  for (uint32_t i = 0; i < g->n_rvars; i++)
    if (!g->rvars[i].gop && g->rvars[i].src == src && g->rvars[i].shift == shift && g->rvars[i].extent == extent)
      return g->rvars[i].var;
  if (!grow_array(g, (void **)&g->rvars, &g->cap_rvars, g->n_rvars + 1, sizeof *g->rvars)) return NULL;
  fu_strbuf sb;
  fu_strbuf_init(&sb, g->alloc);
  fu_strbuf_puts(&sb, "clamp(");
  fu_ix_print(&sb, src);
  if (shift) fu_strbuf_printf(&sb, " %s %lld", shift > 0 ? "-" : "+", (long long)(shift > 0 ? shift : -shift));
  fu_strbuf_printf(&sb, ", 0, %lld)", (long long)(extent - 1));
  const char *name = sb.data ? fu_arena_strdup(g->arena, sb.data) : NULL;
  fu_strbuf_free(&sb);
  const fu_ix *v = name ? fu_ix_var(g->ix, name, FU_IG_VAR_RESIZE, src, 0, extent) : NULL;
  if (!v) {
    g->nomem = true;
    return NULL;
  }
  g->rvars[g->n_rvars++] = (struct resize_ent){v, src, shift, extent, false, NULL, NULL};
  return v;
}

bool fu_igraph_resize_var(const fu_igraph *g, const fu_ix *var, const fu_ix **src, int64_t *shift, int64_t *extent) {
  for (uint32_t i = 0; i < g->n_rvars; i++)
    if (g->rvars[i].var == var && !g->rvars[i].gop) {
      *src = g->rvars[i].src;
      *shift = g->rvars[i].shift;
      *extent = g->rvars[i].extent;
      return true;
    }
  return false;
}

/* The coordinate clamp(x - shift, 0, extent - 1) of a pad's or cat's
 * operand.  Along a vector lane: the same in every lane (x at lane 0), or
 * moving by 1 per lane within one aligned vector of the operand (x = x0 +
 * lane with x0, shift and extent multiples of the width): V * clamp(x0 /
 * V - shift / V, 0, extent / V - 1) + lane, a vector access.  Otherwise a
 * variable marked lanewise: its accesses go lane by lane, each lane with
 * its own instance (fu_igraph_resize_at_lane). */
/* Whether x names a clamped coordinate that varies within a vector. */
/* Whether x names a clamped coordinate (only lanewise ones: lanewise). */
static bool names_rvar(fu_igraph *g, const fu_ix *x, bool lanewise) {
  for (uint32_t i = 0; x && i < g->n_rvars; i++)
    if ((!lanewise || g->rvars[i].lanewise) && fu_ix_subst(g->ix, x, g->rvars[i].var, fu_ix_const(g->ix, 0)) != x)
      return true;
  return false;
}

static bool names_lanewise(fu_igraph *g, const fu_ix *x) { return names_rvar(g, x, true); }

static const fu_ix *clamped(fu_igraph *g, const fu_ix *x, int64_t shift, int64_t extent) {
  if (!g->lane || g->width <= 1) return resize_var(g, x, shift, extent);
  int64_t V = g->width;
  /* through another lanewise clamp (a pad of a cat): lanewise too */
  fu_ix_lane a = names_lanewise(g, x) ? (fu_ix_lane){false, 0, 0} : fu_ix_lane_analyze(x, g->lane, V);
  const fu_ix *x0 = fu_ix_subst(g->ix, x, g->lane, fu_ix_const(g->ix, 0));
  if (a.ok && a.stride == 0) return resize_var(g, x0, shift, extent);
  if (a.ok && a.stride == 1 && (a.align == 0 || a.align % V == 0) && shift % V == 0 && extent % V == 0) {
    const fu_ix *q = resize_var(g, fu_ix_div(g->ix, x0, fu_ix_const(g->ix, V)), shift / V, extent / V);
    return q ? fu_ix_add(g->ix, fu_ix_mul(g->ix, q, fu_ix_const(g->ix, V)), g->lane) : NULL;
  }
  const fu_ix *v = resize_var(g, x, shift, extent);
  for (uint32_t i = 0; v && i < g->n_rvars; i++)
    if (g->rvars[i].var == v) g->rvars[i].lanewise = true;
  g->rvars_lanewise = g->rvars_lanewise || v;
  return v;
}

bool fu_igraph_resize_lanewise(const fu_igraph *g) { return g->rvars_lanewise; }

bool fu_igraph_names_lanewise(fu_igraph *g, const fu_ix *x) { return g->rvars_lanewise && x && names_lanewise(g, x); }

bool fu_igraph_names_clamp(fu_igraph *g, const fu_ix *x) { return names_rvar(g, x, false); }

static const fu_ix *gather_at_lane(fu_igraph *g, const struct resize_ent *e, const fu_ix *lane_value);

const fu_ix *fu_igraph_resize_at_lane(fu_igraph *g, const fu_ix *x, const fu_ix *lane_value) {
  if (!g->rvars_lanewise || !x || !g->lane) return x;
  for (uint32_t i = 0; i < g->n_rvars && x; i++) {
    if (!g->rvars[i].lanewise || fu_ix_subst(g->ix, x, g->rvars[i].var, fu_ix_const(g->ix, 0)) == x) continue;
    struct resize_ent e = g->rvars[i]; /* resize_var may move the table */
    if (e.gop) {
      x = fu_ix_subst(g->ix, x, e.var, gather_at_lane(g, &e, lane_value));
      continue;
    }
    /* its source may name an earlier lanewise clamp: that lane's instance */
    const fu_ix *src = fu_igraph_resize_at_lane(g, fu_ix_subst(g->ix, e.src, g->lane, lane_value), lane_value);
    const fu_ix *inst = src ? resize_var(g, src, e.shift, e.extent) : NULL;
    x = inst ? fu_ix_subst(g->ix, x, e.var, inst) : NULL;
  }
  return x;
}

/* Operand coordinates c of a slice, pad or cat from the result's rc: a
 * slice reads start + step * i; a pad's operand (dims padded by lo before,
 * hi after) i - lo, a cat's operand k i - (the extents before it), clamped
 * into the operand where the result reaches past it (the lowering selects
 * the element: docs/passes.md, "Resize in the index graph"). */
static bool resize_back_map(fu_igraph *g, const fu_op *op, uint32_t operand, const fu_ix *const *rc, const fu_ix **c) {
  const fu_value *x = op->operands[operand];
  int32_t xr = x->type.rank;
  if (xr != op->results[0]->type.rank) return false;
  for (int32_t d = 0; d < xr; d++) c[d] = rc[d];
  if (op->kind == FU_OP_SLICE) {
    const fu_int_list *st = &op->u.slice.starts, *sp = &op->u.slice.steps;
    if (st->n != (uint32_t)xr || (sp->n && sp->n != (uint32_t)xr)) return false;
    for (int32_t d = 0; d < xr; d++) {
      int64_t step = sp->n ? sp->v[d] : 1;
      c[d] = fu_ix_add(g->ix, fu_ix_const(g->ix, st->v[d]), fu_ix_mul(g->ix, rc[d], fu_ix_const(g->ix, step)));
    }
  } else if (op->kind == FU_OP_PAD) {
    const fu_int_list *w = &op->u.pad.widths;
    for (uint32_t k = 0; k < w->n / 2 && (int32_t)k < xr; k++) {
      int32_t j = xr - 1 - (int32_t)k;
      int64_t lo = w->v[2 * k], hi = w->v[2 * k + 1];
      if (lo == 0 && hi == 0) continue;
      if (x->type.dims[j].sym) return false;
      if (lo <= 0 && hi <= 0) /* a crop: always inside */
        c[j] = fu_ix_add(g->ix, rc[j], fu_ix_const(g->ix, -lo));
      else if (!(c[j] = clamped(g, rc[j], lo, x->type.dims[j].value)))
        return false;
    }
  } else {
    int64_t dim = op->u.cat.dim, start = 0;
    if (dim < 0 || dim >= xr) return false;
    for (uint32_t k = 0; k < operand; k++) start += op->operands[k]->type.dims[dim].value;
    if (op->n_operands > 1 && (x->type.dims[dim].sym || !(c[dim] = clamped(g, rc[dim], start, x->type.dims[dim].value))))
      return false;
  }
  for (int32_t d = 0; d < xr; d++)
    if (fu_extent_is_one(x->type.dims[d])) c[d] = fu_ix_const(g->ix, 0);
  return !fu_ix_failed(g->ix);
}

/* ---- indexing ops ---- */

/* The variable for op's index element at ic (rank entries), one per pair;
 * lanewise when ic varies along the vector lane. */
static const fu_ix *gather_var(fu_igraph *g, const fu_op *op, const fu_ix *const *ic, uint32_t rank) {
  const fu_ix *const *t = intern_tuple(g, ic, rank);
  if (!t) return NULL;
  for (uint32_t i = 0; i < g->n_rvars; i++)
    if (g->rvars[i].gop == op && g->rvars[i].gc == t) return g->rvars[i].var;
  if (!grow_array(g, (void **)&g->rvars, &g->cap_rvars, g->n_rvars + 1, sizeof *g->rvars)) return NULL;
  const fu_value *ix = op->operands[fu_index_index_operand(op)];
  const fu_value *x = op->operands[fu_index_lookup_operand(op)];
  fu_extent e = x->type.dims[fu_index_dim(op)];
  bool lanewise = false;
  fu_strbuf sb;
  fu_strbuf_init(&sb, g->alloc);
  fu_strbuf_printf(&sb, "%%%s[", vname(ix));
  for (uint32_t j = 0; j < rank; j++) {
    if (j) fu_strbuf_puts(&sb, ", ");
    fu_ix_print(&sb, t[j]);
    if (g->lane && g->width > 1)
      lanewise = lanewise || names_lanewise(g, t[j]) || fu_ix_subst(g->ix, t[j], g->lane, fu_ix_const(g->ix, 0)) != t[j];
  }
  fu_strbuf_putc(&sb, ']');
  const char *name = sb.data ? fu_arena_strdup(g->arena, sb.data) : NULL;
  fu_strbuf_free(&sb);
  const fu_ix *v = name ? fu_ix_var(g->ix, name, FU_IG_VAR_GATHER, op, 0, e.sym ? 0 : e.value) : NULL;
  if (!v) {
    g->nomem = true;
    return NULL;
  }
  g->rvars[g->n_rvars++] = (struct resize_ent){v, NULL, 0, 0, lanewise, op, t};
  g->rvars_lanewise = g->rvars_lanewise || lanewise;
  return v;
}

/* A lanewise gather variable's instance in the lane whose lane variable
 * is lane_value: its coordinates with the lane replaced (and any lanewise
 * variable in them replaced by its own instance). */
static const fu_ix *gather_at_lane(fu_igraph *g, const struct resize_ent *e, const fu_ix *lane_value) {
  uint32_t rank = (uint32_t)e->gop->operands[fu_index_index_operand(e->gop)]->type.rank;
  const fu_ix *c[FU_MAX_RANK];
  for (uint32_t j = 0; j < rank; j++) {
    c[j] = fu_igraph_resize_at_lane(g, fu_ix_subst(g->ix, e->gc[j], g->lane, lane_value), lane_value);
    if (!c[j]) return NULL;
  }
  return gather_var(g, e->gop, c, rank);
}

bool fu_igraph_gather_var(const fu_igraph *g, const fu_ix *var, const fu_op **op, const fu_ix *const **icoords) {
  for (uint32_t i = 0; i < g->n_rvars; i++)
    if (g->rvars[i].var == var && g->rvars[i].gop) {
      *op = g->rvars[i].gop;
      *icoords = g->rvars[i].gc;
      return true;
    }
  return false;
}

/* Operand coordinates c of an indexing op from the result's rc: the index
 * operand's from the result dims it iterates; the lookup's are the
 * result's with the gathered dim replaced by the index element there. */
static bool index_back_map(fu_igraph *g, const fu_op *op, uint32_t operand, const fu_ix *const *rc, const fu_ix **c) {
  if (!index_op_ok(op)) return false;
  const fu_value *x = op->operands[fu_index_lookup_operand(op)], *ix = op->operands[fu_index_index_operand(op)];
  const fu_ix *zero = fu_ix_const(g->ix, 0);
  const fu_ix *ic[FU_MAX_RANK];
  for (int32_t j = 0; j < ix->type.rank; j++)
    ic[j] = fu_extent_is_one(ix->type.dims[j]) ? zero : rc[index_result_dim(op, j)];
  if (operand == fu_index_index_operand(op)) {
    for (int32_t j = 0; j < ix->type.rank; j++) c[j] = ic[j];
    return true;
  }
  int32_t d = (int32_t)fu_index_dim(op);
  for (int32_t j = 0; j < x->type.rank; j++)
    if (j != d) c[j] = fu_extent_is_one(x->type.dims[j]) ? zero : rc[lookup_result_dim(op, j)];
  c[d] = gather_var(g, op, ic, (uint32_t)ix->type.rank);
  return c[d] != NULL && !fu_ix_failed(g->ix);
}

/* A reshape's operand coordinates for result coordinates rc.  When the
 * operand already has coordinates of its own that the reshape maps
 * forward to exactly rc (group norm: [N, G, C/G, H, W] normalized, then
 * reshaped back to [N, C, H, W]), those, not rc split again: a reshape is
 * one-to-one on the points in range, and a split of a merged coordinate
 * ((g * C/G + c) / (C/G)) does not simplify back to g when the schedule's
 * guarded splits let the index expressions exceed the extents, so the
 * operand would be read, and a reduction's result looked up, at other
 * coordinates than the ones the rest of the kernel uses. */
static const fu_ix **reshape_back_map(fu_igraph *g, const fu_value *x, const fu_value *r, const fu_ix *const *rc) {
  int32_t xl = local_of(g, x);
  const fu_ix **own = xl >= 0 && g->coords[xl] ? reshape_map(g, &x->type, g->coords[xl], &r->type) : NULL;
  bool same = own != NULL;
  for (int32_t d = 0; same && d < r->type.rank; d++) same = own[d] == rc[d];
  if (!same) return reshape_map(g, &r->type, rc, &x->type);
  const fu_ix **c = new_tuple(g, (uint32_t)x->type.rank);
  for (int32_t d = 0; c && d < x->type.rank; d++) c[d] = g->coords[xl][d];
  return c;
}

const fu_ix **fu_igraph_back_map(fu_igraph *g, const fu_op *op, uint32_t operand, const fu_ix *const *rc) {
  if (operand >= op->n_operands || op->n_results == 0) return NULL;
  const fu_value *x = op->operands[operand], *r = op->results[0];
  if (!fu_type_is_tensor(&x->type) || !rc || !op_dims_in_range(op)) return NULL;
  const fu_ix **c = NULL;
  const fu_ix *zero = fu_ix_const(g->ix, 0);
  int32_t xr = x->type.rank;
  if (fu_op_has(op->kind, FU_OF_POINTWISE)) {
    if (xr != r->type.rank) return NULL;
    if (!(c = new_tuple(g, (uint32_t)xr))) return NULL;
    for (int32_t d = 0; d < xr; d++) c[d] = fu_extent_is_one(x->type.dims[d]) ? zero : rc[d];
    return c;
  }
  if (!(c = new_tuple(g, (uint32_t)xr))) return NULL;
  for (int32_t d = 0; d < xr; d++) c[d] = zero;
  switch (fu_op_info_of(op->kind)->cls) {
  case FU_OC_BROADCAST_IN_DIM:
    for (uint32_t i = 0; i < op->u.broadcast_in_dim.broadcast_dims.n && (int32_t)i < xr; i++)
      if (!fu_extent_is_one(x->type.dims[i])) c[i] = rc[op->u.broadcast_in_dim.broadcast_dims.v[i]];
    return c;
  case FU_OC_BROADCAST: {
    int32_t od = 0;
    for (int32_t d = 0; d < r->type.rank && od < xr; d++)
      if (!(d < (int32_t)op->u.broadcast.n && op->u.broadcast.is_broadcast[d])) {
        if (!fu_extent_is_one(x->type.dims[od])) c[od] = rc[d];
        od++;
      }
    return c;
  }
  case FU_OC_EXPAND:
  case FU_OC_STRIDE_ORDER:
  case FU_OC_SCAN:
    for (int32_t d = 0; d < xr; d++)
      if (!fu_extent_is_one(x->type.dims[d])) c[d] = rc[d];
    return c;
  case FU_OC_SQUEEZE: {
    int32_t rd = 0;
    for (int32_t d = 0; d < xr; d++) {
      if (!squeezed(op, d)) c[d] = rc[rd++];
    }
    return c;
  }
  case FU_OC_PERMUTE:
    for (int32_t d = 0; d < r->type.rank; d++) c[op->u.permute.dims.v[d]] = rc[d];
    return c;
  case FU_OC_RESHAPE: return reshape_back_map(g, x, r, rc);
  case FU_OC_SLICE:
  case FU_OC_CAT:
  case FU_OC_PAD: return resize_back_map(g, op, operand, rc, c) ? c : NULL;
  case FU_OC_INDEX: return index_back_map(g, op, operand, rc, c) ? c : NULL;
  case FU_OC_PARTIAL: return NULL; /* a part is many operand indices */
  case FU_OC_META:
  case FU_OC_UNARY:
  case FU_OC_BINARY:
  case FU_OC_TERNARY:
  case FU_OC_CAST:
  case FU_OC_REDUCE:
  case FU_OC_VARIANCE:
  case FU_OC_FULL:
  case FU_OC_IOTA:
  case FU_OC_MATMUL: return NULL;
  case FU_OC_RNG: return NULL;
  }
  return NULL; /* not reached: a class outside the enum */
}

/* The result's coordinates from the (already known) coordinates of op's
 * tensor operands, operand local `from` (the value the walk came from)
 * first; NULL when some result dim is not determined. */
static const fu_ix **forward_map(fu_igraph *g, const fu_op *op, int32_t from) {
  if (op->n_results == 0 || !op_dims_in_range(op)) return NULL;
  const fu_value *r = op->results[0];
  int32_t rr = r->type.rank;
  const fu_ix **c = new_tuple(g, (uint32_t)rr);
  if (!c) return NULL;
  const fu_ix *zero = fu_ix_const(g->ix, 0);
  if (fu_op_has(op->kind, FU_OF_POINTWISE)) {
    /* an operand with no broadcast dim gives every coordinate: a broadcast
     * operand may have been reached in another frame (its one tuple
     * serves a permuted use too), and mixing its coordinates with a full
     * operand's would write one result element many times); the walk's
     * own operand first: another may have been reached through a resize's
     * back map, shifted (pad %x then gt %x, %pad reads %x at two places) */
    for (uint32_t k = 0; k <= op->n_operands; k++) {
      /* k = 0: the walk's own operand; then every operand in order */
      const fu_value *x = k ? op->operands[k - 1] : NULL;
      for (uint32_t i = 0; !k && i < op->n_operands && !x; i++)
        if (local_of(g, op->operands[i]) == from) x = op->operands[i];
      int32_t l = x ? local_of(g, x) : -1;
      if (l < 0 || !g->coords[l] || x->type.rank != rr) continue;
      bool full = true;
      for (int32_t d = 0; d < rr && full; d++)
        full = fu_extent_is_one(r->type.dims[d]) || !fu_extent_is_one(x->type.dims[d]);
      if (!full) continue;
      for (int32_t d = 0; d < rr; d++) c[d] = fu_extent_is_one(r->type.dims[d]) ? zero : g->coords[l][d];
      return c;
    }
    for (int32_t d = 0; d < rr; d++) {
      if (fu_extent_is_one(r->type.dims[d])) c[d] = zero;
      for (uint32_t i = 0; i < op->n_operands && !c[d]; i++) {
        const fu_value *x = op->operands[i];
        int32_t l = local_of(g, x);
        if (l < 0 || !g->coords[l] || x->type.rank != rr || fu_extent_is_one(x->type.dims[d])) continue;
        c[d] = g->coords[l][d];
      }
      if (!c[d]) return NULL;
    }
    return c;
  }
  const fu_value *x = op->n_operands ? op->operands[0] : NULL;
  int32_t l = local_of(g, x);
  if (l < 0 || !g->coords[l]) return NULL;
  const fu_ix *const *xc = g->coords[l];
  for (int32_t d = 0; d < rr; d++)
    if (fu_extent_is_one(r->type.dims[d])) c[d] = zero;
  switch (fu_op_info_of(op->kind)->cls) {
  case FU_OC_REDUCE:
  case FU_OC_VARIANCE: {
    int32_t rd = 0;
    /* a kept dim of extent 1 stays at 0, where back_map puts an extent-1
     * operand dim, so an epilogue finds the result at the coordinates the
     * reduction left it (not at the reference's loop variable) */
    for (int32_t d = 0; d < x->type.rank && rd < rr; d++) {
      if (!reduced_axis(op, d)) {
        if (!fu_extent_is_one(r->type.dims[rd])) c[rd] = xc[d];
        rd++;
      } else if (op->u.reduce.keepdim) {
        c[rd++] = zero;
      }
    }
    break;
  }
  case FU_OC_BROADCAST_IN_DIM:
    for (uint32_t i = 0; i < op->u.broadcast_in_dim.broadcast_dims.n; i++) {
      int32_t rd = (int32_t)op->u.broadcast_in_dim.broadcast_dims.v[i];
      if (!is_bcast_dim(x, (int32_t)i, r, rd)) c[rd] = xc[i];
    }
    break;
  case FU_OC_BROADCAST: {
    int32_t od = 0;
    for (int32_t d = 0; d < rr; d++)
      if (!(d < (int32_t)op->u.broadcast.n && op->u.broadcast.is_broadcast[d])) {
        if (!is_bcast_dim(x, od, r, d)) c[d] = xc[od];
        od++;
      }
    break;
  }
  case FU_OC_EXPAND:
  case FU_OC_STRIDE_ORDER:
  case FU_OC_SCAN:
    for (int32_t d = 0; d < rr; d++)
      if (!is_bcast_dim(x, d, r, d)) c[d] = xc[d];
    break;
  case FU_OC_SQUEEZE: {
    int32_t rd = 0;
    for (int32_t d = 0; d < x->type.rank; d++) {
      if (!squeezed(op, d)) c[rd++] = xc[d];
    }
    break;
  }
  case FU_OC_PERMUTE:
    for (int32_t d = 0; d < rr; d++) c[d] = xc[op->u.permute.dims.v[d]];
    break;
  case FU_OC_RESHAPE: return reshape_map(g, &x->type, xc, &r->type);
  case FU_OC_PARTIAL:
    for (int32_t d = 0; d < rr; d++) c[d] = xc[d];
    c[op->u.partial.dim] = fu_ix_mod(g->ix, xc[op->u.partial.dim], fu_ix_const(g->ix, op->u.partial.parts));
    break;
  case FU_OC_META:
  case FU_OC_UNARY:
  case FU_OC_BINARY:
  case FU_OC_TERNARY:
  case FU_OC_CAST:
  case FU_OC_SLICE:
  case FU_OC_CAT:
  case FU_OC_PAD:
  case FU_OC_FULL:
  case FU_OC_IOTA:
  case FU_OC_MATMUL: return NULL;
  case FU_OC_INDEX: return NULL;
  case FU_OC_RNG: return NULL;
  }
  for (int32_t d = 0; d < rr; d++)
    if (!c[d]) return NULL;
  return c;
}

static bool set_coords(fu_igraph *g, int32_t l, const fu_ix **c, uint32_t *queue, uint32_t *qn) {
  if (l < 0 || g->coords[l] || !c) return false;
  g->coords[l] = (const fu_ix **)intern_tuple(g, c, (uint32_t)g->vals[l]->type.rank);
  if (!g->coords[l]) return false;
  queue[(*qn)++] = (uint32_t)l;
  return true;
}

/* The ops of `body` that use each local value, in body order (CSR: the
 * users of l are ops[first[l] .. first[l + 1])), so the walk below visits
 * each use once instead of scanning every op per value, which made long
 * chains quadratic.  NULL when memory runs out. */
static const fu_op **users_index(fu_igraph *g, fu_block *body, uint32_t **first_out, size_t *n_uses) {
  uint32_t *first = fu_mem_alloc(&g->alloc, (g->n_vals + 2) * sizeof *first);
  if (!first) return NULL;
  memset(first, 0, (g->n_vals + 2) * sizeof *first);
  size_t n = 0;
  for (fu_op *op = body ? body->first : NULL; op; op = op->next)
    for (uint32_t i = 0; i < op->n_operands; i++) {
      int32_t l = local_of(g, op->operands[i]);
      if (l >= 0) first[l + 2]++, n++;
    }
  for (uint32_t l = 0; l < g->n_vals; l++) first[l + 2] += first[l + 1];
  const fu_op **ops = fu_mem_alloc(&g->alloc, (n + 1) * sizeof *ops);
  if (!ops) {
    fu_mem_free(&g->alloc, first, (g->n_vals + 2) * sizeof *first);
    return NULL;
  }
  for (fu_op *op = body ? body->first : NULL; op; op = op->next)
    for (uint32_t i = 0; i < op->n_operands; i++) {
      int32_t l = local_of(g, op->operands[i]);
      if (l >= 0) ops[first[l + 1]++] = op;
    }
  *first_out = first;
  *n_uses = n;
  return ops;
}

/* Breadth-first from the values queued in queue[*qh .. *qn) over back and
 * forward maps; linear in ops times uses through users_index. */
static void walk_coords(fu_igraph *g, fu_block *body, const fu_op **users, const uint32_t *first, uint32_t *queue,
                        uint32_t *qh, uint32_t *qn) {
  while (*qh < *qn && !g->nomem) {
    uint32_t l = queue[(*qh)++];
    const fu_value *v = g->vals[l];
    if (v->def && v->def->parent == body) {
      const fu_op *op = v->def;
      for (uint32_t i = 0; i < op->n_operands; i++) {
        int32_t xl = local_of(g, op->operands[i]);
        if (xl >= 0 && !g->coords[xl] && fu_type_is_tensor(&op->operands[i]->type))
          set_coords(g, xl, fu_igraph_back_map(g, op, i, g->coords[l]), queue, qn);
      }
    }
    for (uint32_t u = first[l]; u < first[l + 1]; u++) {
      const fu_op *op = users[u];
      if (u > first[l] && users[u - 1] == op) continue; /* an op using v twice */
      if (!op->n_results || !fu_type_is_tensor(&op->results[0]->type)) continue;
      int32_t rl = local_of(g, op->results[0]);
      if (rl >= 0 && !g->coords[rl]) set_coords(g, rl, forward_map(g, op, (int32_t)l), queue, qn);
      /* var_mean's mean sits where its variance does */
      for (uint32_t k = 1; k < op->n_results && rl >= 0 && g->coords[rl] && is_reduce_class(op); k++)
        set_coords(g, local_of(g, op->results[k]), (const fu_ix **)g->coords[rl], queue, qn);
    }
  }
}

/* Coordinates from the reference outwards.  A reduction segment may hold
 * sibling reductions of one signature whose operands share nothing with
 * the reference (sum %A and sum %B of the same shape): such an operand is
 * not reached, and it iterates the reference's own domain, so it takes
 * the reference's coordinates and the walk goes on from it. */
static bool build_coords(fu_igraph *g) {
  uint32_t *queue = fu_mem_alloc(&g->alloc, (g->n_vals + 1) * sizeof *queue);
  fu_block *body = g->seg->u.segment.body;
  uint32_t *first = NULL;
  size_t n_uses = 0;
  const fu_op **users = queue ? users_index(g, body, &first, &n_uses) : NULL;
  if (!users) {
    if (queue) fu_mem_free(&g->alloc, queue, (g->n_vals + 1) * sizeof *queue);
    g->nomem = true;
    return false;
  }
  uint32_t qh = 0, qn = 0;
  int32_t rl = local_of(g, g->s->reference);
  queue[qn++] = (uint32_t)rl;
  walk_coords(g, body, users, first, queue, &qh, &qn);
  for (const fu_op *op = body && rl >= 0 ? body->first : NULL; op && !g->nomem; op = op->next) {
    if (!is_reduce_class(op) || op->n_operands < 1) continue;
    int32_t xl = local_of(g, op->operands[0]);
    if (xl < 0 || g->coords[xl] || !fu_type_same_shape(&op->operands[0]->type, &g->s->reference->type))
      continue;
    set_coords(g, xl, (const fu_ix **)g->coords[rl], queue, &qn);
    walk_coords(g, body, users, first, queue, &qh, &qn);
  }
  fu_mem_free(&g->alloc, users, (n_uses + 1) * sizeof *users);
  fu_mem_free(&g->alloc, first, (g->n_vals + 2) * sizeof *first);
  fu_mem_free(&g->alloc, queue, (g->n_vals + 1) * sizeof *queue);
  return !g->nomem;
}

static bool is_one(fu_extent e) { return !e.sym && e.value == 1; }

/* Output o (local l) given the reference's coordinates when both shapes
 * are the same dims in order once their constant extent-1 dims are
 * dropped (0 on o's); false otherwise, or out of memory (g->nomem). */
static bool same_but_ones(fu_igraph *g, const fu_value *o, int32_t l) {
  const fu_value *ref = g->s->reference;
  const fu_ix *const *rc = g->coords[local_of(g, ref)];
  int32_t pair[FU_MAX_RANK], rd = 0;
  for (int32_t d = 0; d < o->type.rank; d++) {
    pair[d] = -1;
    if (is_one(o->type.dims[d])) continue;
    while (rd < ref->type.rank && is_one(ref->type.dims[rd])) rd++;
    if (rd == ref->type.rank || !fu_extent_equal(o->type.dims[d], ref->type.dims[rd])) return false;
    pair[d] = rd++;
  }
  while (rd < ref->type.rank && is_one(ref->type.dims[rd])) rd++;
  if (rd != ref->type.rank || !rc) return false;
  const fu_ix **c = new_tuple(g, (uint32_t)o->type.rank);
  if (!c) return false;
  for (int32_t d = 0; d < o->type.rank; d++) c[d] = pair[d] < 0 ? fu_ix_const(g->ix, 0) : rc[pair[d]];
  g->coords[l] = (const fu_ix **)intern_tuple(g, c, (uint32_t)o->type.rank);
  return g->coords[l] != NULL;
}

/* Every output of the segment gets coordinates: those of the walk, or, for
 * one with no path to the reference, the reference's linear index
 * re-read in the output's shape (same element count required). */
static bool output_coords(fu_igraph *g) {
  const fu_segment_info *si = &g->seg->u.segment;
  const fu_value *ref = g->s->reference;
  const fu_ix *ref_n = fu_ix_const(g->ix, 1);
  for (int32_t d = 0; d < ref->type.rank; d++) ref_n = fu_ix_mul(g->ix, ref_n, fu_ix_extent(g->ix, ref->type.dims[d]));
  if (overflowed(g, seg_loc(g), "the element count of", vname(ref), true)) return false;
  for (uint32_t i = 0; i < si->n_outputs; i++) {
    const fu_value *o = si->outputs[i];
    int32_t l = local_of(g, o);
    if (l < 0 || !fu_type_is_tensor(&o->type)) continue;
    if (g->coords[l] && g->s->reduce != FU_RM_NONE) continue; /* reached: a reduction's result or the reference's */
    const fu_ix *n = fu_ix_const(g->ix, 1);
    for (int32_t d = 0; d < o->type.rank; d++) n = fu_ix_mul(g->ix, n, fu_ix_extent(g->ix, o->type.dims[d]));
    if (overflowed(g, seg_loc(g), "the element count of", vname(o), true)) return false;
    if (n != ref_n) {
      fu_strbuf a, b;
      fu_strbuf_init(&a, g->alloc);
      fu_strbuf_init(&b, g->alloc);
      fu_ix_print(&a, n);
      fu_ix_print(&b, ref_n);
      fu_error(g->diag, seg_loc(g),
               "output '%%%s' has %s elements but the loop domain of reference '%%%s' covers %s: every output must "
               "be written exactly once",
               vname(o), a.data ? a.data : "?", vname(ref), b.data ? b.data : "?");
      fu_strbuf_free(&a);
      fu_strbuf_free(&b);
      return false;
    }
    if (g->coords[l]) continue;
    /* of the reference's shape up to extent-1 dims: its coordinates as
     * they are, 0 on the 1s (the linear index re-read is the same point,
     * but under a guarded split, rx + rs * 2 < 5 unproven, (i * 5 + r) / 5
     * does not simplify to i, and a persistent kernel's memoized reduction
     * results, kept at i, would not be found through a broadcast of them) */
    if (same_but_ones(g, o, l)) continue;
    int32_t all_r[FU_MAX_RANK], all_o[FU_MAX_RANK];
    for (int32_t d = 0; d < ref->type.rank; d++) all_r[d] = d;
    for (int32_t d = 0; d < o->type.rank; d++) all_o[d] = d;
    const fu_ix *lin = linearize(g, &ref->type, all_r, ref->type.rank, g->coords[local_of(g, ref)]);
    const fu_ix **c = new_tuple(g, (uint32_t)o->type.rank);
    if (!c) return false;
    delinearize(g, &o->type, all_o, o->type.rank, lin, c);
    g->coords[l] = (const fu_ix **)intern_tuple(g, c, (uint32_t)o->type.rank);
  }
  return !g->nomem;
}

const fu_ix *const *fu_igraph_coords(const fu_igraph *g, const fu_value *v) {
  int32_t l = local_of(g, v);
  return l >= 0 ? g->coords[l] : NULL;
}

/* ---- 5. layouts, offsets and accesses ------------------------------------------------ */

/* The strides of global tensor v as ix: constant and symbolic strides
 * folded, a stride holding a run-time input stride as a variable. */
static const fu_ix **strides_of(fu_igraph *g, const fu_value *v) {
  int32_t l = local_of(g, v);
  if (l < 0) return NULL;
  if (g->strides[l]) return g->strides[l];
  fu_view_layout lay;
  fu_strbuf why;
  fu_strbuf_init(&why, g->alloc);
  fu_status st = g->la_ok ? fu_layout_analysis_value(&g->la, v, &lay, &why) : FU_ERR_UNSUPPORTED;
  if (st != FU_OK) {
    if (st == FU_ERR_NOMEM) g->nomem = true;
    else
      fu_error(g->diag, seg_loc(g), "cannot index '%%%s': %s", vname(v), why.data ? why.data : "its layout is unknown");
    fu_strbuf_free(&why);
    return NULL;
  }
  fu_strbuf_free(&why);
  const fu_ix **s = new_tuple(g, (uint32_t)v->type.rank);
  if (!s) return NULL;
  for (int32_t d = 0; d < v->type.rank; d++) {
    const fu_stride *st_d = &lay.strides[d];
    bool runtime = false;
    for (uint32_t k = 0; k < st_d->n_atoms; k++)
      if (!st_d->atoms[k].sym) runtime = true;
    if (runtime) {
      char name[96];
      snprintf(name, sizeof name, "stride(%%%s, %d)", vname(v), (int)d);
      s[d] = fu_ix_var(g->ix, name, FU_IG_VAR_STRIDE, v, d, 0);
      continue;
    }
    const fu_ix *x = fu_ix_const(g->ix, st_d->coef);
    for (uint32_t k = 0; k < st_d->n_atoms; k++) x = fu_ix_mul(g->ix, x, fu_ix_sym(g->ix, st_d->atoms[k].sym));
    s[d] = x;
  }
  if (overflowed(g, seg_loc(g), "a stride of", vname(v), true)) return NULL;
  g->strides[l] = s;
  return s;
}

const fu_ix *fu_igraph_offset(fu_igraph *g, const fu_value *v, const fu_ix *const *coords) {
  const fu_ix **s = strides_of(g, v);
  if (!s || !coords) return NULL;
  const fu_ix *off = fu_ix_const(g->ix, 0);
  for (int32_t d = 0; d < v->type.rank; d++) {
    if (fu_extent_is_one(v->type.dims[d])) continue; /* index 0 */
    off = fu_ix_add(g->ix, off, fu_ix_mul(g->ix, coords[d], s[d]));
  }
  off = fu_ix_simplify_linear(g->ix, off);
  return overflowed(g, seg_loc(g), "the offset into", vname(v), true) ? NULL : off;
}

fu_amode fu_igraph_access_mode(fu_igraph *g, const fu_value *v, const fu_ix *offset, const char **why) {
  if (why) *why = NULL;
  if (!g->lane || g->width <= 1) return FU_AM_LANES;
  if (g->rvars_lanewise && names_lanewise(g, offset)) {
    if (why) *why = "its index goes through a pad's or cat's clamp that varies within the vector";
    return FU_AM_LANES;
  }
  fu_ix_lane a = fu_ix_lane_analyze(offset, g->lane, g->width);
  if (!a.ok) {
    if (why) *why = "its index is not affine along the vector (the vector would cross a dim boundary)";
    return FU_AM_LANES;
  }
  if (a.stride == 0) return FU_AM_UNIFORM;
  if (a.stride != 1) {
    if (why) *why = "it is not contiguous along the vector (stride along the vectorized axis is not 1)";
    return FU_AM_LANES;
  }
  bool peeled = g->peel && fu_ix_subst(g->ix, offset, g->peel, fu_ix_const(g->ix, 0)) != offset;
  if (peeled && v != g->peel_value) {
    if (why) *why = "the peeled split (tail=peel) aligns the vectors of its access=vector tensor only";
    return FU_AM_LANES;
  }
  /* the peeled tensor's vectors are aligned at run time by the peel */
  if (!peeled && a.align != 0 && a.align % g->width != 0) {
    if (why) *why = "its vectors are not aligned (the index of lane 0 is not a multiple of the vector width)";
    return FU_AM_LANES;
  }
  int64_t bytes;
  if (__builtin_mul_overflow(g->width, (int64_t)fu_dtype_size(v->type.dtype), &bytes) || bytes > 16 || (g->width & (g->width - 1)) != 0 || v->type.dtype == FU_DT_BOOL) {
    if (why) *why = "the vector would be wider than 16 bytes (or of bool)";
    return FU_AM_LANES;
  }
  return FU_AM_VECTOR;
}

static void add_access(fu_igraph *g, const fu_value *v, bool store, const fu_op *user, const fu_ix *const *c) {
  for (uint32_t i = 0; i < g->n_acc; i++)
    if (g->acc[i].value == v && g->acc[i].coords == c && g->acc[i].is_store == store) return;
  if (!grow_array(g, (void **)&g->acc, &g->cap_acc, g->n_acc + 1, sizeof *g->acc)) return;
  fu_iaccess *a = &g->acc[g->n_acc++];
  memset(a, 0, sizeof *a);
  a->value = v;
  a->is_store = store;
  a->user = user;
  a->coords = (const fu_ix **)c;
  a->offset = fu_igraph_offset(g, v, c);
  a->mode = a->offset ? fu_igraph_access_mode(g, v, a->offset, &a->why_not_vector) : FU_AM_LANES;
}

/* A pending visit of the walk below: value l at coordinates c, reached
 * from `user`; `next` is its op's next operand to follow. */
typedef struct walk_frame {
  uint32_t l, next;
  const fu_ix *const *c;
} walk_frame;

/* Visits value l at coordinates c: an input records its access; a value
 * computed in the segment is pushed to have its operands followed. */
static void walk_visit(fu_igraph *g, uint32_t l, const fu_ix *const *c, const fu_op *user, walk_frame **stk,
                       uint32_t *n, uint32_t *cap) {
  if (g->nomem || !first_visit(g, l, c)) return;
  const fu_value *v = g->vals[l];
  if (g->is_input[l]) {
    if (fu_type_is_tensor(&v->type)) add_access(g, v, false, user, c);
    return;
  }
  if (!v->def || !grow_array(g, (void **)stk, cap, *n + 1, sizeof **stk)) return;
  (*stk)[(*n)++] = (walk_frame){l, 0, c};
}

/* Walks back from value l at coordinates c, depth first in operand order;
 * each (value, c) once.  The path is kept on the heap: a long chain of ops
 * is as deep as it is long. */
static void walk_back(fu_igraph *g, uint32_t l, const fu_ix *const *c) {
  walk_frame *stk = NULL;
  uint32_t n = 0, cap = 0;
  walk_visit(g, l, c, NULL, &stk, &n, &cap);
  while (n && !g->nomem) {
    walk_frame *f = &stk[n - 1];
    const fu_op *op = g->vals[f->l]->def;
    if (f->next >= op->n_operands) {
      n--;
      continue;
    }
    uint32_t i = f->next++;
    int32_t xl = local_of(g, op->operands[i]);
    if (xl < 0 || !fu_type_is_tensor(&op->operands[i]->type)) continue;
    const fu_ix **xc = is_reduce_class(op) ? g->coords[xl] : fu_igraph_back_map(g, op, i, f->c);
    if (!xc) continue;
    const fu_ix *const *t = intern_tuple(g, xc, (uint32_t)op->operands[i]->type.rank);
    if (t) walk_visit(g, (uint32_t)xl, t, op, &stk, &n, &cap);
  }
  fu_mem_free(&g->alloc, stk, (size_t)cap * sizeof *stk);
}

static bool build_accesses(fu_igraph *g) {
  const fu_segment_info *si = &g->seg->u.segment;
  for (uint32_t i = 0; i < si->n_outputs; i++) {
    const fu_value *o = si->outputs[i];
    int32_t l = local_of(g, o);
    if (l < 0 || !fu_type_is_tensor(&o->type) || !g->coords[l]) continue;
    add_access(g, o, true, NULL, g->coords[l]);
  }
  for (uint32_t i = 0; i < si->n_outputs; i++) {
    const fu_value *o = si->outputs[i];
    int32_t l = local_of(g, o);
    if (l < 0 || !fu_type_is_tensor(&o->type) || !g->coords[l]) continue;
    walk_back(g, (uint32_t)l, g->coords[l]);
  }
  for (uint32_t i = 0; i < g->n_acc; i++)
    if (!g->acc[i].offset) return false;
  return !g->nomem;
}

/* i32 when every access's largest offset, every axis index and every
 * extent provably stays below 2^31.  A peel shift enters offsets only
 * subtracted (through sums, products with strides and divisions, all
 * non-decreasing), so the offset at shift 0 bounds it. */
static fu_dtype choose_index(fu_igraph *g) {
  const int64_t lim = (int64_t)1 << 31;
  for (uint32_t a = 0; g->s && a < g->s->n_axes; a++) {
    int64_t e = 0;
    if (!fu_ix_is_const(g->axis_ext[a], &e) || e >= lim) return FU_DT_I64;
  }
  for (uint32_t i = 0; i < g->s->n_loops; i++) {
    int64_t u = fu_ix_upper(g->loop_var[i]);
    if (u < 0 || u >= lim) return FU_DT_I64;
  }
  for (uint32_t i = 0; i < g->n_vals; i++) {
    const fu_value *v = g->vals[i];
    if (!fu_type_is_tensor(&v->type)) continue;
    int64_t n = fu_type_numel(&v->type);
    if (n < 0 || n >= lim) return FU_DT_I64;
  }
  for (uint32_t i = 0; i < g->n_acc; i++) {
    const fu_ix *off = g->acc[i].offset;
    int64_t u = fu_ix_upper(g->peel ? fu_ix_subst(g->ix, off, g->peel, fu_ix_const(g->ix, 0)) : off);
    if (u < 0 || u >= lim) return FU_DT_I64;
  }
  return FU_DT_I32;
}

/* ---- building ------------------------------------------------------------------------------ */

fu_status fu_igraph_build(fu_fusion *f, fu_op *seg, const fu_schedule *s, fu_allocator alloc, fu_diag_engine *diag,
                          fu_igraph **out) {
  *out = NULL;
  if (!f || !seg || seg->kind != FU_OP_SEGMENT || !s || !s->reference) return FU_ERR_INVALID_ARG;
  fu_igraph *g = fu_mem_calloc(&alloc, 1, sizeof *g);
  if (!g) return FU_ERR_NOMEM;
  g->alloc = alloc;
  g->f = f;
  g->seg = seg;
  g->s = s;
  g->diag = diag;
  g->width = 1;
  g->n_fvals = f->next_value_id;
  g->arena = fu_arena_new(alloc);
  g->ix = fu_ix_ctx_new(alloc);
  g->slot = fu_mem_alloc(&alloc, (g->n_fvals ? g->n_fvals : 1) * sizeof *g->slot);
  fu_status st = FU_OK;
  if (!g->arena || !g->ix || !g->slot) {
    st = FU_ERR_NOMEM;
    goto done;
  }
  for (uint32_t i = 0; i < g->n_fvals; i++) g->slot[i] = -1;
  fu_status la = fu_layout_analysis_init(&g->la, f);
  if (la == FU_ERR_NOMEM) {
    st = la;
    goto done;
  }
  g->la_ok = la == FU_OK;
  unsigned errors = diag->n_errors;
  if (!collect_values(g) || !build_exprs(g) || !build_groups(g) || !build_loops(g) || !build_coords(g) ||
      !output_coords(g) || !build_accesses(g)) {
    st = g->nomem || fu_ix_failed(g->ix) ? FU_ERR_NOMEM : FU_ERR_VERIFY;
    if (st == FU_ERR_VERIFY && diag->n_errors == errors)
      fu_error(diag, seg_loc(g), "segment '@%s' cannot be indexed under its schedule",
               seg->u.segment.name ? seg->u.segment.name : "?");
    goto done;
  }
  if (fu_ix_failed(g->ix) || g->nomem) {
    st = FU_ERR_NOMEM;
    goto done;
  }
  if (overflowed(g, seg_loc(g), "an index of segment", g->seg->u.segment.name ? g->seg->u.segment.name : "?", false)) {
    st = FU_ERR_VERIFY;
    goto done;
  }
  g->index_dtype = choose_index(g);
done:
  if (st != FU_OK) {
    fu_igraph_free(g);
    return st;
  }
  *out = g;
  return FU_OK;
}

void fu_igraph_free(fu_igraph *g) {
  if (!g) return;
  fu_allocator a = g->alloc;
  if (g->la_ok) fu_layout_analysis_free(&g->la);
  fu_mem_free(&a, g->slot, (g->n_fvals ? g->n_fvals : 1) * sizeof *g->slot);
  fu_mem_free(&a, g->vals, g->cap_vals * sizeof *g->vals);
  fu_mem_free(&a, g->ids, g->cap_ids * sizeof *g->ids);
  fu_mem_free(&a, g->exprs, g->cap_exprs * sizeof *g->exprs);
  if (g->uf) fu_mem_free(&a, g->uf, (g->n_ids ? g->n_ids : 1) * sizeof *g->uf);
  fu_mem_free(&a, g->acc, g->cap_acc * sizeof *g->acc);
  fu_mem_free(&a, g->rvars, g->cap_rvars * sizeof *g->rvars);
  fu_mem_free(&a, g->visited, g->cap_visited * sizeof *g->visited);
  fu_mem_free(&a, g->tuples, g->cap_tuples * sizeof *g->tuples);
  fu_ix_ctx_free(g->ix);
  if (g->arena) fu_arena_free(g->arena);
  fu_mem_free(&a, g, sizeof *g);
}

/* ---- queries ------------------------------------------------------------------------------ */

fu_ix_ctx *fu_igraph_ix(fu_igraph *g) { return g->ix; }
const fu_schedule *fu_igraph_schedule(const fu_igraph *g) { return g->s; }
const fu_op *fu_igraph_segment(const fu_igraph *g) { return g->seg; }
const fu_fusion *fu_igraph_fusion(const fu_igraph *g) { return g->f; }
uint32_t fu_igraph_num_ids(const fu_igraph *g) { return g->n_ids; }
const fu_id *fu_igraph_id(const fu_igraph *g, uint32_t i) { return i < g->n_ids ? &g->ids[i] : NULL; }
uint32_t fu_igraph_num_exprs(const fu_igraph *g) { return g->n_exprs; }
const fu_iexpr *fu_igraph_expr(const fu_igraph *g, uint32_t i) { return i < g->n_exprs ? &g->exprs[i] : NULL; }
const fu_ix *fu_igraph_loop_var(const fu_igraph *g, uint32_t loop) {
  return loop < g->s->n_loops ? g->loop_var[loop] : NULL;
}
const fu_ix *fu_igraph_axis_extent(const fu_igraph *g, uint32_t axis) {
  return axis < g->s->n_axes ? g->axis_ext[axis] : NULL;
}
const fu_ix *fu_igraph_axis_index(const fu_igraph *g, uint32_t axis) {
  return axis < g->s->n_axes ? g->axis_idx[axis] : NULL;
}
const fu_ix *fu_igraph_lane_var(const fu_igraph *g, int64_t *width) {
  if (width) *width = g->lane ? g->width : 1;
  return g->lane;
}
uint32_t fu_igraph_num_predicates(const fu_igraph *g) { return g->n_preds; }
const fu_ix *fu_igraph_peel_var(const fu_igraph *g, const fu_value **value) {
  if (value) *value = g->peel_value;
  return g->peel;
}
void fu_igraph_predicate(const fu_igraph *g, uint32_t i, const fu_ix **index, const fu_ix **extent) {
  *index = i < g->n_preds ? g->pred_idx[i] : NULL;
  *extent = i < g->n_preds ? g->pred_ext[i] : NULL;
}
uint32_t fu_igraph_num_accesses(const fu_igraph *g) { return g->n_acc; }
const fu_iaccess *fu_igraph_access(const fu_igraph *g, uint32_t i) { return i < g->n_acc ? &g->acc[i] : NULL; }
fu_dtype fu_igraph_index_dtype(const fu_igraph *g) { return g->index_dtype; }
const fu_ix *const *fu_igraph_intern_coords(fu_igraph *g, const fu_ix *const *c, uint32_t rank) {
  return c ? intern_tuple(g, c, rank) : NULL;
}
