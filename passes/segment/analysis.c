/* fuser: segment pass, the facts the partitioner needs about each op and
 * value of a fusion, computed once: which top-level node defines and uses
 * each value, iteration spaces (interned element counts), estimated bytes,
 * and the layout facts (permuted, dense) of inputs and host values. */
#include <stdlib.h>
#include <string.h>

#include "fuser/view_layout.h"
#include "internal.h"

/* ---- small helpers -------------------------------------------------------- */

static uint64_t sat_mul(uint64_t a, uint64_t b) {
  if (a == 0 || b == 0) return 0;
  if (a > UINT64_MAX / b) return UINT64_MAX;
  return a * b;
}

static uint64_t hash_str(const char *s, uint64_t h) {
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* ---- extents at the example sizes ------------------------------------------ */

uint64_t fu_seg_extent_est(const fu_seg_env *env, fu_extent e) {
  int64_t v = fu_example_extent(&env->sizes, e, FU_SEG_DEFAULT_EXTENT);
  return v > 0 ? (uint64_t)v : 0;
}

/* ---- iteration spaces ----------------------------------------------------- */

static uint64_t space_hash(const fu_seg_space *s) {
  uint64_t h = 1469598103934665603ull ^ s->cnst ^ ((uint64_t)s->overflow << 63);
  h *= 1099511628211ull;
  for (uint32_t i = 0; i < s->n_syms; i++) h = hash_str(s->syms[i], h * 31u);
  return h;
}

static bool space_eq(const fu_seg_space *a, const fu_seg_space *b) {
  if (a->cnst != b->cnst || a->overflow != b->overflow || a->n_syms != b->n_syms) return false;
  for (uint32_t i = 0; i < a->n_syms; i++)
    if (a->syms[i] != b->syms[i] && strcmp(a->syms[i], b->syms[i]) != 0) return false;
  return true;
}

static bool space_tab_grow(fu_seg_env *env) {
  uint32_t cap = env->space_tab_cap ? env->space_tab_cap * 2 : 64;
  int32_t *t = fu_mem_alloc(&env->alloc, (size_t)cap * sizeof *t);
  if (!t) return false;
  for (uint32_t i = 0; i < cap; i++) t[i] = -1;
  for (uint32_t i = 0; i < env->n_spaces; i++) {
    uint32_t j = (uint32_t)(space_hash(&env->spaces[i]) & (cap - 1));
    while (t[j] >= 0) j = (j + 1) & (cap - 1);
    t[j] = (int32_t)i;
  }
  fu_mem_free(&env->alloc, env->space_tab, (size_t)env->space_tab_cap * sizeof *env->space_tab);
  env->space_tab = t;
  env->space_tab_cap = cap;
  return true;
}

/* Interns the element count of t: identical counts (the same constant
 * product and the same multiset of symbols) get the same id, so comparing
 * iteration spaces "up to broadcast" is an integer comparison. */
int32_t fu_seg_space_of(fu_seg_env *env, const fu_type *t) {
  if (t->rank < 0) return -1;
  fu_seg_space k;
  memset(&k, 0, sizeof k);
  k.cnst = 1;
  k.est = 1;
  for (int32_t i = 0; i < t->rank && t->dims; i++) {
    fu_extent e = t->dims[i];
    k.est = sat_mul(k.est, fu_seg_extent_est(env, e));
    if (e.sym) {
      /* insertion by name keeps the multiset canonical */
      uint32_t j = k.n_syms++;
      while (j > 0 && strcmp(k.syms[j - 1], e.sym) > 0) {
        k.syms[j] = k.syms[j - 1];
        j--;
      }
      k.syms[j] = e.sym;
    } else {
      uint64_t c = e.value > 0 ? (uint64_t)e.value : 0;
      if (c && k.cnst > UINT64_MAX / c) k.overflow = true;
      k.cnst *= c;
    }
  }
  if ((env->n_spaces + 1) * 2 > env->space_tab_cap && !space_tab_grow(env)) return -1;
  uint32_t j = (uint32_t)(space_hash(&k) & (env->space_tab_cap - 1));
  while (env->space_tab[j] >= 0) {
    if (space_eq(&env->spaces[env->space_tab[j]], &k)) return env->space_tab[j];
    j = (j + 1) & (env->space_tab_cap - 1);
  }
  if (env->n_spaces == env->cap_spaces) {
    uint32_t cap = env->cap_spaces ? env->cap_spaces * 2 : 16;
    fu_seg_space *p = fu_mem_realloc(&env->alloc, env->spaces, (size_t)env->cap_spaces * sizeof *p,
                                     (size_t)cap * sizeof *p);
    if (!p) return -1;
    env->spaces = p;
    env->cap_spaces = cap;
  }
  env->spaces[env->n_spaces] = k;
  env->space_tab[j] = (int32_t)env->n_spaces;
  return (int32_t)env->n_spaces++;
}

/* ---- layouts ---------------------------------------------------------------- */

/* A permute whose non-unit dims keep their relative order moves no data. */
bool fu_seg_perm_is_trivial(const fu_op *op) {
  if (op->kind != FU_OP_PERMUTE || op->n_operands < 1) return true;
  const fu_type *t = &op->operands[0]->type;
  int64_t last = -1;
  for (uint32_t i = 0; i < op->u.permute.dims.n; i++) {
    int64_t d = op->u.permute.dims.v[i];
    if (d < 0 || d >= t->rank || !t->dims) return false;
    if (fu_extent_is_one(t->dims[d])) continue;
    if (d < last) return false;
    last = d;
  }
  return true;
}

/* Layout facts of an input from its declared strides, stride order and
 * contiguity.  Dims of constant extent 1 never matter. */
static uint8_t input_flags(const fu_op *in) {
  const fu_type *t = &in->results[0]->type;
  const fu_layout *l = &in->u.input.layout;
  if (t->rank <= 0 || !t->dims) return FU_SEG_VF_CONTIG;
  bool perm = false, contig = true;
  int32_t r = t->rank;
  if (l->strides) {
    int64_t prev = -1;
    for (int32_t i = 0; i < r; i++) {
      if (fu_extent_is_one(t->dims[i])) continue;
      if (prev >= 0 && l->strides[i] > prev) perm = true;
      prev = l->strides[i];
    }
    /* dense row-major: stride = product of the inner extents */
    int64_t expect = 1;
    bool known = true;
    for (int32_t i = r - 1; i >= 0; i--) {
      if (fu_extent_is_one(t->dims[i])) continue;
      if (!known || l->strides[i] != expect) contig = false;
      if (t->dims[i].sym) known = false;
      else if (t->dims[i].value > 0 && expect <= INT64_MAX / t->dims[i].value) expect *= t->dims[i].value;
      else known = false;
    }
  }
  if (l->stride_order) {
    int64_t prev = INT64_MAX;
    for (int32_t i = 0; i < r; i++) {
      if (fu_extent_is_one(t->dims[i])) continue;
      if (l->stride_order[i] >= prev) perm = true;
      prev = l->stride_order[i];
    }
  }
  if (l->contiguity)
    for (int32_t i = 0; i < r; i++)
      if (l->contiguity[i] == FU_CONTIG_FALSE && !fu_extent_is_one(t->dims[i])) contig = false;
  if (perm) contig = false;
  return (uint8_t)((perm ? FU_SEG_VF_PERM : 0) | (contig ? FU_SEG_VF_CONTIG : 0));
}

static bool same_elems(const fu_op *op) {
  if (op->n_operands < 1 || op->n_results < 1) return false;
  const fu_type *a = &op->operands[0]->type, *b = &op->results[0]->type;
  /* no dim grows: every result dim is 1 or matches the operand's extents in order */
  int32_t j = 0;
  for (int32_t i = 0; i < b->rank; i++) {
    if (fu_extent_is_one(b->dims[i])) continue;
    while (j < a->rank && fu_extent_is_one(a->dims[j])) j++;
    if (j >= a->rank || !fu_extent_equal(a->dims[j], b->dims[i])) return false;
    j++;
  }
  while (j < a->rank && fu_extent_is_one(a->dims[j])) j++;
  return j == a->rank;
}

/* What a host view does to its operand's layout facts: permutes reorder,
 * expanding broadcasts lose density, the rest keep both facts. */
uint8_t fu_seg_view_result_flags(const fu_op *op, uint8_t f) {
  switch (op->kind) {
  case FU_OP_PERMUTE:
    if (fu_seg_perm_is_trivial(op)) return f;
    return FU_SEG_VF_PERM;
  case FU_OP_BROADCAST_IN_DIM:
  case FU_OP_EXPAND:
    return same_elems(op) ? f : (uint8_t)(f & FU_SEG_VF_PERM);
  case FU_OP_RESHAPE:
  case FU_OP_SQUEEZE:
  case FU_OP_BROADCAST:
  case FU_OP_SET:
    return f;
  default:
    return FU_SEG_VF_CONTIG;
  }
}

/* ---- building the env ------------------------------------------------------ */

uint32_t fu_seg_node_of(const fu_seg_env *env, const fu_op *op) {
  if (!op || op->id >= env->n_op_ids) return FU_SEG_NONE;
  return env->node_of_op[op->id];
}

static fu_status alloc_arrays(fu_seg_env *env) {
  const fu_allocator *a = &env->alloc;
  uint32_t n = env->n_nodes ? env->n_nodes : 1, nv = env->n_values ? env->n_values : 1;
  env->nodes = fu_mem_calloc(a, n, sizeof *env->nodes);
  env->node_of_op = fu_mem_calloc(a, env->n_op_ids ? env->n_op_ids : 1, sizeof *env->node_of_op);
  env->v_def = fu_mem_calloc(a, nv, sizeof *env->v_def);
  env->v_space = fu_mem_calloc(a, nv, sizeof *env->v_space);
  env->v_bytes = fu_mem_calloc(a, nv, sizeof *env->v_bytes);
  env->v_ext = fu_mem_calloc(a, nv, sizeof *env->v_ext);
  env->v_flags = fu_mem_calloc(a, nv, sizeof *env->v_flags);
  env->v_cnt = fu_mem_calloc(a, nv, sizeof *env->v_cnt);
  env->use_start = fu_mem_calloc(a, (size_t)nv + 1, sizeof *env->use_start);
  env->mem_head = fu_mem_calloc(a, n, sizeof *env->mem_head);
  env->mem_next = fu_mem_calloc(a, n, sizeof *env->mem_next);
  env->mem_tail = fu_mem_calloc(a, n, sizeof *env->mem_tail);
  env->mem_count = fu_mem_calloc(a, n, sizeof *env->mem_count);
  env->kind = fu_mem_calloc(a, n, sizeof *env->kind);
  env->host_group = fu_mem_calloc(a, n, sizeof *env->host_group);
  env->sum = fu_mem_calloc(a, n, sizeof *env->sum);
  env->comp_parent = fu_mem_calloc(a, n, sizeof *env->comp_parent);
  env->comp_size = fu_mem_calloc(a, n, sizeof *env->comp_size);
  env->comp_red = fu_mem_calloc(a, n, sizeof *env->comp_red);
  env->down = fu_mem_calloc(a, n, sizeof *env->down);
  env->mark = fu_mem_calloc(a, n, sizeof *env->mark);
  env->fmt_mark = fu_mem_calloc(a, n, sizeof *env->fmt_mark);
  env->fmt_uf = fu_mem_calloc(a, n, sizeof *env->fmt_uf);
  if (!env->nodes || !env->node_of_op || !env->v_def || !env->v_space || !env->v_bytes || !env->v_ext ||
      !env->v_flags || !env->v_cnt || !env->use_start || !env->mem_head || !env->mem_next || !env->mem_tail || !env->mem_count ||
      !env->kind || !env->host_group || !env->sum || !env->comp_parent || !env->comp_size || !env->comp_red ||
      !env->down || !env->mark || !env->fmt_mark || !env->fmt_uf)
    return FU_ERR_NOMEM;
  return FU_OK;
}

static void set_node_of_subtree(fu_seg_env *env, fu_op *op, uint32_t node) {
  if (op->id < env->n_op_ids) env->node_of_op[op->id] = node;
  for (uint32_t i = 0; i < op->n_results; i++) env->v_def[op->results[i]->id] = node;
  if (op->kind == FU_OP_SEGMENT && op->u.segment.body)
    for (fu_op *in = op->u.segment.body->first; in; in = in->next) set_node_of_subtree(env, in, node);
}

/* Whether an op may join a segment: everything except the structure ops and
 * host aliases. */
static bool is_compute(const fu_op *op) {
  return op->kind != FU_OP_INPUT && op->kind != FU_OP_OUTPUT && op->kind != FU_OP_SEGMENT && !op->host;
}

/* The dim of v that is innermost in memory: from an input's declared
 * strides or stride order, else the last dim (kernels write row-major);
 * dims of extent 1 never count. */
static int32_t innermost_dim(const fu_value *v) {
  const fu_type *t = &v->type;
  int32_t inner = t->rank - 1;
  while (inner > 0 && t->dims && fu_extent_is_one(t->dims[inner])) inner--;
  const fu_op *d = v->def;
  if (!d || d->kind != FU_OP_INPUT || !t->dims) return inner;
  const fu_layout *l = &d->u.input.layout;
  if (!l->strides && !l->stride_order) return inner;
  int64_t best = INT64_MAX;
  for (int32_t i = 0; i < t->rank; i++) {
    if (fu_extent_is_one(t->dims[i])) continue;
    int64_t key = l->strides ? l->strides[i] : l->stride_order[i];
    if (key <= best) { /* ties: the later dim */
      best = key;
      inner = i;
    }
  }
  return inner;
}

/* 11 bits of the operand's extents in order, for the reduction signature:
 * a permuted alias shares its operand's space, but the scheduler and the
 * lowering take reductions of one operand shape only (a collision merely
 * lets the schedule verifier refuse the group, as before). */
static uint32_t shape_hash(const fu_type *t) {
  uint32_t h = 2166136261u;
  for (int32_t d = 0; d < t->rank && t->dims; d++) {
    fu_extent e = t->dims[d];
    if (e.sym) {
      for (const char *p = e.sym; *p; p++) h = (h ^ (uint8_t)*p) * 16777619u;
    } else {
      h = (h ^ (uint32_t)e.value ^ (uint32_t)((uint64_t)e.value >> 32)) * 16777619u;
    }
    h = (h ^ 0xffu) * 16777619u;
  }
  return (h ^ (h >> 11) ^ (h >> 22)) & 0x7ffu;
}

/* Whether a pad has a nonzero width (crop or pad) on some dim. */
static bool pad_moves(const fu_op *op) {
  for (uint32_t k = 0; k < op->u.pad.widths.n; k++)
    if (op->u.pad.widths.v[k] != 0) return true;
  return false;
}

/* Whether a pad adds elements on some dim (a crop alone reads its operand
 * at shifted coordinates, never clamped ones). */
static bool pad_widens(const fu_op *op) {
  for (uint32_t k = 0; k < op->u.pad.widths.n; k++)
    if (op->u.pad.widths.v[k] > 0) return true;
  return false;
}

static void reduction_facts(fu_seg_env *env, fu_seg_node *nd) {
  const fu_op *op = nd->op;
  if (op->n_operands < 1 || op->n_results < 1) return;
  const fu_type *t = &op->operands[0]->type;
  const fu_int_list *axes = fu_op_info_of(op->kind)->cls == FU_OC_VARIANCE ? &op->u.variance.axes : &op->u.reduce.axes;
  nd->red_in = env->v_space[op->operands[0]->id];
  nd->red_out = env->v_space[op->results[0]->id];
  nd->red_elems = 1;
  nd->red_axes = (uint32_t)(t->rank > 0 ? t->rank : 0) << 16 | shape_hash(t) << 21;
  int32_t inner = innermost_dim(op->operands[0]);
  for (uint32_t i = 0; i < axes->n; i++) {
    int64_t a = axes->v[i];
    if (a < 0 || a >= t->rank || !t->dims) continue;
    nd->red_elems = sat_mul(nd->red_elems, fu_seg_extent_est(env, t->dims[a]));
    if (a < 16) nd->red_axes |= 1u << a;
    if (a == inner) nd->red_inner = true;
    if (a == t->rank - 1) nd->red_last = true;
  }
}

/* Facts about the results of op w (the top-level op `top`, or an op in its
 * body when top is an existing segment). */
static fu_status value_facts(fu_seg_env *env, const fu_op *top, const fu_op *w) {
  for (uint32_t r = 0; r < w->n_results; r++) {
    fu_value *v = w->results[r];
    if (v->id >= env->n_values) continue;
    int32_t s = fu_seg_space_of(env, &v->type);
    if (s < 0 && v->type.rank >= 0) return FU_ERR_NOMEM;
    env->v_space[v->id] = s;
    uint64_t est = s >= 0 ? env->spaces[s].est : 1;
    size_t dsz = fu_dtype_size(v->type.dtype);
    env->v_bytes[v->id] = sat_mul(est, dsz ? dsz : 1);
    uint8_t vf = FU_SEG_VF_CONTIG; /* kernels write dense row-major */
    if (w->kind == FU_OP_INPUT)
      vf = input_flags(w);
    else if (w == top && w->host && w->n_operands >= 1 && !w->operands[0]->is_literal &&
             w->operands[0]->id < env->n_values)
      vf = fu_seg_view_result_flags(w, env->v_flags[w->operands[0]->id]);
    env->v_flags[v->id] = vf;
    env->v_ext[v->id] = env->use_start[v->id + 1] - env->use_start[v->id];
  }
  return FU_OK;
}

/* A kernel whose value feeds host views that permute it writes that value
 * in the permuted layout which makes the fusion outputs dense (the layout
 * rules of strip-bookend-views, fuser/view_layout.h), and a stride_order
 * op stores its result in its own order: such a kernel moves data between
 * layouts like a transpose. */
static fu_status mark_permuted_writes(fu_seg_env *env) {
  bool any = false;
  for (uint32_t i = 0; i < env->n_nodes && !any; i++)
    any = (env->nodes[i].op->host && env->nodes[i].op->kind == FU_OP_PERMUTE) ||
          env->nodes[i].op->kind == FU_OP_STRIDE_ORDER;
  if (!any) return FU_OK;
  fu_layout_analysis la;
  fu_status st = fu_layout_analysis_init(&la, env->f);
  if (st != FU_OK) return st;
  for (uint32_t i = 0; i < env->n_nodes && st == FU_OK; i++) {
    fu_seg_node *nd = &env->nodes[i];
    if (!(nd->flags & FU_SEG_NF_COMPUTE)) continue;
    for (uint32_t r = 0; r < nd->op->n_results && st == FU_OK; r++) {
      const fu_value *v = nd->op->results[r];
      bool host_reader = nd->op->kind == FU_OP_STRIDE_ORDER; /* stored in its own order */
      for (uint32_t u = env->use_start[v->id]; u < env->use_start[v->id + 1]; u++)
        host_reader |= env->nodes[env->use_node[u]].op->host;
      if (!host_reader || v->type.rank < 2) continue;
      fu_view_layout l;
      fu_status ls = fu_layout_analysis_value(&la, v, &l, NULL);
      if (ls == FU_ERR_NOMEM) st = ls;
      else if (ls == FU_OK && !fu_layout_is_row_major(&v->type, &l)) {
        nd->flags |= FU_SEG_NF_TRANSP;
        env->v_flags[v->id] = FU_SEG_VF_PERM;
      }
    }
  }
  fu_layout_analysis_free(&la);
  return st;
}

fu_status fu_seg_env_init(fu_seg_env *env, fu_fusion *f, fu_diag_engine *diag, FILE *dbg) {
  memset(env, 0, sizeof *env);
  env->f = f;
  env->alloc = f->module->alloc;
  env->diag = diag;
  env->dbg = dbg;
  fu_strbuf_init(&env->sb, env->alloc);
  fu_seg_reject_init(&env->rejects, env->alloc);
  for (fu_op *op = f->body.first; op; op = op->next) env->n_nodes++;
  env->n_op_ids = f->next_op_id;
  env->n_values = f->next_value_id;
  fu_status st = alloc_arrays(env);
  if (st != FU_OK) return st;
  if ((st = fu_example_sizes_bind(&env->sizes, f, env->alloc)) != FU_OK) return st;
  for (uint32_t v = 0; v < env->n_values; v++) env->v_def[v] = FU_SEG_NONE;
  for (uint32_t i = 0; i < env->n_op_ids; i++) env->node_of_op[i] = FU_SEG_NONE;

  uint32_t n = 0;
  for (fu_op *op = f->body.first; op; op = op->next, n++) {
    fu_seg_node *nd = &env->nodes[n];
    nd->op = op;
    nd->space = -1;
    nd->red_in = nd->red_out = -1;
    set_node_of_subtree(env, op, n);
  }

  /* uses: one entry per operand of a top-level op (segment ops list their
   * inputs as operands, so uses inside existing segments are covered) */
  size_t total = 0;
  for (uint32_t i = 0; i < env->n_nodes; i++) {
    const fu_op *op = env->nodes[i].op;
    for (uint32_t k = 0; k < op->n_operands; k++) {
      const fu_value *v = op->operands[k];
      if (v->is_literal || v->id >= env->n_values || env->v_def[v->id] == FU_SEG_NONE) continue;
      env->use_start[v->id + 1]++;
      total++;
    }
  }
  for (uint32_t v = 0; v < env->n_values; v++) env->use_start[v + 1] += env->use_start[v];
  env->n_uses = total ? total : 1;
  env->use_node = fu_mem_calloc(&env->alloc, env->n_uses, sizeof *env->use_node);
  if (!env->use_node) return FU_ERR_NOMEM;
  for (uint32_t i = 0; i < env->n_nodes; i++) {
    const fu_op *op = env->nodes[i].op;
    for (uint32_t k = 0; k < op->n_operands; k++) {
      const fu_value *v = op->operands[k];
      if (v->is_literal || v->id >= env->n_values || env->v_def[v->id] == FU_SEG_NONE) continue;
      env->use_node[env->use_start[v->id] + env->v_cnt[v->id]++] = i;
    }
  }
  for (uint32_t v = 0; v < env->n_values; v++) env->v_cnt[v] = 0;

  /* values: spaces, bytes, external uses, layout facts (in op order, so an
   * operand's facts are known before its users') */
  for (uint32_t i = 0; i < env->n_nodes; i++) {
    fu_seg_node *nd = &env->nodes[i];
    fu_op *op = nd->op;
    if (is_compute(op)) {
      nd->flags |= FU_SEG_NF_COMPUTE;
      env->n_compute++;
    }
    unsigned of = fu_op_info_of(op->kind)->flags;
    if (of & FU_OF_REDUCTION) nd->flags |= FU_SEG_NF_REDUCTION;
    if (of & FU_OF_RESIZE) nd->flags |= FU_SEG_NF_RESIZE;
    if (of & FU_OF_VIEW) nd->flags |= FU_SEG_NF_VIEW;
    if (fu_op_info_of(op->kind)->cls == FU_OC_INDEX) nd->flags |= FU_SEG_NF_INDEX;
    if (of & FU_OF_SCAN) nd->flags |= FU_SEG_NF_SCAN;
    if (op->kind == FU_OP_PERMUTE && !fu_seg_perm_is_trivial(op)) nd->flags |= FU_SEG_NF_TRANSP;
    for (uint32_t k = 0; k < op->n_operands; k++) {
      const fu_value *v = op->operands[k];
      if (v->is_literal || v->id >= env->n_values) continue;
      uint32_t d = env->v_def[v->id];
      /* (an indexing op reads wherever its indices say: no tile would help) */
      if (d != FU_SEG_NONE && !(env->nodes[d].flags & FU_SEG_NF_COMPUTE) && (env->v_flags[v->id] & FU_SEG_VF_PERM) &&
          !(nd->flags & FU_SEG_NF_INDEX))
        nd->flags |= FU_SEG_NF_TRANSP;
    }
    st = value_facts(env, op, op);
    if (st != FU_OK) return st;
    if (op->kind == FU_OP_SEGMENT && op->u.segment.body)
      for (fu_op *w = op->u.segment.body->first; w; w = w->next)
        if ((st = value_facts(env, op, w)) != FU_OK) return st;
    if (op->n_results > 0) {
      for (uint32_t r = 0; r < op->n_results && nd->space < 0; r++) nd->space = env->v_space[op->results[r]->id];
    }
    if (nd->flags & FU_SEG_NF_REDUCTION) reduction_facts(env, nd);
    if (op->kind == FU_OP_PAD && op->n_operands > 0 && op->n_results > 0 && !op->operands[0]->is_literal &&
        env->v_space[op->operands[0]->id] == env->v_space[op->results[0]->id] && pad_moves(op))
      nd->flags |= FU_SEG_NF_SHIFT_PAD;
    if (op->kind == FU_OP_CAT || (op->kind == FU_OP_PAD && pad_widens(op))) nd->flags |= FU_SEG_NF_CLAMP;
  }
  st = mark_permuted_writes(env);
  if (st == FU_OK) st = fu_seg_mark_matmuls(env);
  if (st != FU_OK) return st;
  return fu_seg_graph_init(&env->g, env->n_nodes, env->alloc);
}

void fu_seg_env_free(fu_seg_env *env) {
  const fu_allocator *a = &env->alloc;
  uint32_t n = env->n_nodes ? env->n_nodes : 1, nv = env->n_values ? env->n_values : 1;
#define FREE_N(p, cnt) fu_mem_free(a, (p), (size_t)(cnt) * sizeof *(p))
  FREE_N(env->nodes, n);
  FREE_N(env->node_of_op, env->n_op_ids ? env->n_op_ids : 1);
  FREE_N(env->v_def, nv);
  FREE_N(env->v_space, nv);
  FREE_N(env->v_bytes, nv);
  FREE_N(env->v_ext, nv);
  FREE_N(env->v_flags, nv);
  FREE_N(env->v_cnt, nv);
  FREE_N(env->use_start, (size_t)nv + 1);
  FREE_N(env->use_node, env->n_uses);
  FREE_N(env->mem_head, n);
  FREE_N(env->mem_next, n);
  FREE_N(env->mem_tail, n);
  FREE_N(env->mem_count, n);
  FREE_N(env->kind, n);
  FREE_N(env->host_group, n);
  FREE_N(env->sum, n);
  FREE_N(env->comp_parent, n);
  FREE_N(env->comp_size, n);
  FREE_N(env->comp_red, n);
  FREE_N(env->down, n);
  FREE_N(env->mark, n);
  FREE_N(env->fmt_mark, n);
  FREE_N(env->fmt_uf, n);
  FREE_N(env->spaces, env->cap_spaces);
  FREE_N(env->space_tab, env->space_tab_cap);
#undef FREE_N
  fu_example_sizes_free(&env->sizes);
  fu_seg_vec_free(&env->comp_log, a);
  fu_seg_vec_free(&env->cross_v, a);
  fu_seg_vec_free(&env->cross_u, a);
  fu_seg_vec_free(&env->newly_down, a);
  fu_seg_vec_free(&env->touched_v, a);
  fu_seg_vec_free(&env->scratch, a);
  fu_seg_reject_free(&env->rejects);
  fu_seg_graph_free(&env->g);
  fu_strbuf_free(&env->sb);
}

/* The members of group root r in node order: for debug.c and merge.c, so
 * it lives with the environment both use. */
uint32_t fu_seg_fmt_stamp(fu_seg_env *env) {
  if (++env->fmt_stamp == 0) {
    memset(env->fmt_mark, 0, (size_t)env->n_nodes * sizeof *env->fmt_mark);
    env->fmt_stamp = 1;
  }
  return env->fmt_stamp;
}

fu_status fu_seg_members_sorted(fu_seg_env *env, uint32_t r, fu_seg_vec *out) {
  out->n = 0;
  for (uint32_t n = env->mem_head[r]; n != FU_SEG_NONE; n = env->mem_next[n])
    if (!fu_seg_vec_push(out, &env->alloc, n)) return FU_ERR_NOMEM;
  return fu_seg_vec_sort(out, &env->alloc, NULL) ? FU_OK : FU_ERR_NOMEM;
}
