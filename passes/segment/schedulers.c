/* fuser: segment pass, group summaries and the scheduler acceptance checks.
 *
 * A check never looks at the ops of a group: it reads the group's summary
 * (fu_seg_summary), which merging keeps up to date in O(1) plus the work
 * proportional to what crosses between the two groups.  The checks are the
 * ACCEPT column of fuser/kinds.def, expanded into fu_seg_schedulers below
 * in the table's (preference) order; a check returns FU_SEG_ACCEPT or the reason it refuses
 * (fu_seg_verdict) naming ops by node index, which debug.c turns into
 * text.  Later refinements of a scheduler's limits belong here. */
#include <string.h>

#include "internal.h"

/* ---- summaries ------------------------------------------------------------- */

void fu_seg_summary_add_space(fu_seg_summary *s, int32_t space, int32_t delta) {
  if (space < 0 || delta == 0) return;
  for (uint32_t i = 0; i < s->n_spaces; i++) {
    if (s->space[i] != space) continue;
    int64_t n = (int64_t)s->space_n[i] + delta;
    if (n > 0) {
      s->space_n[i] = (uint32_t)n;
    } else {
      /* keep the entries in insertion order */
      memmove(&s->space[i], &s->space[i + 1], (s->n_spaces - i - 1) * sizeof s->space[0]);
      memmove(&s->space_n[i], &s->space_n[i + 1], (s->n_spaces - i - 1) * sizeof s->space_n[0]);
      s->n_spaces--;
    }
    return;
  }
  if (delta < 0) return;
  if (s->n_spaces == FU_SEG_MAX_SPACES) {
    s->spaces_overflow = true;
    return;
  }
  s->space[s->n_spaces] = space;
  s->space_n[s->n_spaces] = (uint32_t)delta;
  s->n_spaces++;
}

static void summary_empty(fu_seg_summary *s) {
  memset(s, 0, sizeof *s);
  s->first_mm = s->first_plain = s->epi_owner = -1;
  s->first_op = s->first_red = s->first_resize = s->first_transp = s->first_index = s->red_mismatch = -1;
  s->first_shift_pad = s->first_clamp = s->first_out_before_clamp = -1;
  s->first_scan = -1;
  s->red_axes = 0;
  s->red_in = s->red_out = s->first_down_in = s->first_down_bad = s->first_down_skew = -1;
}

void fu_seg_summary_union(fu_seg_summary *out, const fu_seg_summary *a, const fu_seg_summary *b) {
  fu_seg_summary r;
  summary_empty(&r);
  r.n_ops = a->n_ops + b->n_ops;
  r.n_views = a->n_views + b->n_views;
  r.first_op = fu_seg_min_idx(a->first_op, b->first_op);
  r.first_resize = fu_seg_min_idx(a->first_resize, b->first_resize);
  r.first_transp = fu_seg_min_idx(a->first_transp, b->first_transp);
  r.first_mm = fu_seg_min_idx(a->first_mm, b->first_mm);
  r.n_mm = a->n_mm + b->n_mm;
  r.first_plain = fu_seg_min_idx(a->first_plain, b->first_plain);
  r.epi_owner = a->epi_owner == -1 ? b->epi_owner : b->epi_owner == -1 || b->epi_owner == a->epi_owner ? a->epi_owner : -2;
  r.first_index = fu_seg_min_idx(a->first_index, b->first_index);
  r.first_shift_pad = fu_seg_min_idx(a->first_shift_pad, b->first_shift_pad);
  r.first_clamp = fu_seg_min_idx(a->first_clamp, b->first_clamp);
  /* first_out_before_clamp depends on paths across both: merge.c recomputes it */
  r.first_scan = fu_seg_min_idx(a->first_scan, b->first_scan);
  if (a->first_red < 0 || b->first_red < 0) {
    const fu_seg_summary *s = a->first_red >= 0 ? a : b;
    r.first_red = s->first_red;
    r.red_in = s->red_in;
    r.red_out = s->red_out;
    r.red_axes = s->red_axes;
    r.red_mismatch = s->red_mismatch;
  } else {
    const fu_seg_summary *lo = a->first_red < b->first_red ? a : b, *hi = lo == a ? b : a;
    r.first_red = lo->first_red;
    r.red_in = lo->red_in;
    r.red_out = lo->red_out;
    r.red_axes = lo->red_axes;
    if (a->red_in == b->red_in && a->red_out == b->red_out && a->red_axes == b->red_axes)
      r.red_mismatch = fu_seg_min_idx(a->red_mismatch, b->red_mismatch);
    else
      r.red_mismatch = hi->first_red;
  }
  r.n_comp = a->n_comp + b->n_comp;
  r.n_comp_nored = a->n_comp_nored + b->n_comp_nored;
  r.n_down_in = a->n_down_in + b->n_down_in;
  r.n_down_bad = a->n_down_bad + b->n_down_bad;
  r.first_down_in = fu_seg_min_idx(a->first_down_in, b->first_down_in);
  r.first_down_bad = fu_seg_min_idx(a->first_down_bad, b->first_down_bad);
  r.n_down_skew = a->n_down_skew + b->n_down_skew;
  r.first_down_skew = fu_seg_min_idx(a->first_down_skew, b->first_down_skew);
  r.spaces_overflow = a->spaces_overflow || b->spaces_overflow;
  for (uint32_t i = 0; i < a->n_spaces; i++) fu_seg_summary_add_space(&r, a->space[i], (int32_t)a->space_n[i]);
  for (uint32_t i = 0; i < b->n_spaces; i++) fu_seg_summary_add_space(&r, b->space[i], (int32_t)b->space_n[i]);
  *out = r;
}

/* A product, an op of a product's epilogue, or neither ("plain"). */
static void add_product_facts(const fu_seg_node *nd, uint32_t n, fu_seg_summary *s) {
  if (nd->flags & FU_SEG_NF_MATMUL) {
    s->first_mm = fu_seg_min_idx(s->first_mm, (int32_t)n);
    s->n_mm++;
  } else if (nd->epi_of >= 0) {
    s->epi_owner = s->epi_owner == -1 || s->epi_owner == nd->epi_of ? nd->epi_of : -2;
  } else {
    s->first_plain = fu_seg_min_idx(s->first_plain, (int32_t)n);
  }
}

/* Node n's own facts: the summary of a group holding n alone. */
void fu_seg_summary_single(fu_seg_env *env, uint32_t n, fu_seg_summary *out) {
  const fu_seg_node *nd = &env->nodes[n];
  summary_empty(out);
  out->n_ops = 1;
  out->n_views = (nd->flags & FU_SEG_NF_VIEW) ? 1 : 0;
  out->first_op = (int32_t)n;
  out->n_comp = 1;
  if (nd->flags & FU_SEG_NF_REDUCTION) {
    out->first_red = (int32_t)n;
    out->red_in = nd->red_in;
    out->red_out = nd->red_out;
    out->red_axes = nd->red_axes;
  } else {
    out->n_comp_nored = 1;
  }
  if (nd->flags & FU_SEG_NF_RESIZE) out->first_resize = (int32_t)n;
  if (nd->flags & FU_SEG_NF_TRANSP) out->first_transp = (int32_t)n;
  add_product_facts(nd, n, out);
  if (nd->flags & FU_SEG_NF_INDEX) out->first_index = (int32_t)n;
  if (nd->flags & FU_SEG_NF_SHIFT_PAD) out->first_shift_pad = (int32_t)n;
  if (nd->flags & FU_SEG_NF_CLAMP) out->first_clamp = (int32_t)n;
  if (nd->flags & FU_SEG_NF_SCAN) out->first_scan = (int32_t)n;
  for (uint32_t r = 0; r < nd->op->n_results; r++) {
    const fu_value *v = nd->op->results[r];
    if (v->id < env->n_values && env->v_ext[v->id] > 0) fu_seg_summary_add_space(out, env->v_space[v->id], 1);
  }
}

static uint32_t uf_find(uint32_t *uf, uint32_t x) {
  while (uf[x] != x) {
    uf[x] = uf[uf[x]];
    x = uf[x];
  }
  return x;
}

uint32_t fu_seg_component(fu_seg_env *env, uint32_t n) { return uf_find(env->fmt_uf, n); }

void fu_seg_group_components(fu_seg_env *env, const uint32_t *nodes, uint32_t k, uint32_t stamp) {
  for (uint32_t i = 0; i < k; i++) env->fmt_uf[nodes[i]] = nodes[i];
  for (uint32_t i = 0; i < k; i++) {
    const fu_op *op = env->nodes[nodes[i]].op;
    for (uint32_t j = 0; j < op->n_operands; j++) {
      const fu_value *v = op->operands[j];
      if (v->is_literal || v->id >= env->n_values) continue;
      uint32_t d = env->v_def[v->id];
      if (d == FU_SEG_NONE || env->fmt_mark[d] != stamp) continue;
      uint32_t ra = uf_find(env->fmt_uf, d), rb = uf_find(env->fmt_uf, nodes[i]);
      if (ra != rb) env->fmt_uf[ra] = rb;
    }
  }
}

static bool is_one(fu_extent e) { return !e.sym && e.value == 1; }

/* Whether two types have the same extents in the same order, dims of
 * extent 1 aside (the kernel's coordinates reach those as 0). */
static bool same_extents(const fu_type *a, const fu_type *b) {
  if (a->rank < 0 || b->rank < 0 || (a->rank > 0 && !a->dims) || (b->rank > 0 && !b->dims)) return false;
  int32_t i = 0, j = 0;
  for (;;) {
    while (i < a->rank && is_one(a->dims[i])) i++;
    while (j < b->rank && is_one(b->dims[j])) j++;
    if (i == a->rank || j == b->rank) return i == a->rank && j == b->rank;
    fu_extent x = a->dims[i++], y = b->dims[j++];
    if ((x.sym == NULL) != (y.sym == NULL) || (x.sym ? strcmp(x.sym, y.sym) != 0 : x.value != y.value)) return false;
  }
}

/* Whether down op nd, in the reduction's input space, makes coordinates
 * the kernel's loops do not reach.  Spaces are element counts, so
 * [2, 1, 8, 1] broadcast from a max over the [4, 2] of [2, 1, 4, 2], or
 * [N, 2] from a mean over the N of [2, N], share the input's space; but
 * the new dims are not the reduced ones.  An op is reached when it has
 * the shape of the reduction's operand (dims of extent 1 aside), or when
 * one of its operands in that space follows the reduction too (reached in
 * turn: group norm's view back to [N, C, H, W] and what uses it). */
static bool makes_skewed_coords(const fu_seg_env *env, const fu_seg_node *nd, const fu_seg_node *red,
                                const fu_seg_down_marks *dm) {
  if (red->red_in == red->red_out || red->op->n_operands < 1 || nd->op->n_results < 1) return false;
  const fu_op *op = nd->op;
  if (same_extents(&op->results[0]->type, &red->op->operands[0]->type)) return false;
  for (uint32_t i = 0; i < op->n_operands; i++) {
    const fu_value *v = op->operands[i];
    if (v->is_literal || v->id >= env->n_values || env->v_space[v->id] != red->red_in) continue;
    uint32_t d = env->v_def[v->id];
    if (d != FU_SEG_NONE && ((dm->flags[d] & 1) || (dm->mark && dm->mark[d] == dm->stamp))) return false;
  }
  return true;
}

/* Classifies an op that follows a reduction of its group, against the
 * signature of the group's reduction `red_node` (its input and output
 * spaces). */
void fu_seg_classify_down(const fu_seg_env *env, uint32_t n, int32_t red_node, const fu_seg_down_marks *dm,
                          fu_seg_summary *s) {
  const fu_seg_node *nd = &env->nodes[n], *red = &env->nodes[red_node];
  int32_t red_in = red->red_in, red_out = red->red_out;
  bool in_space;
  if (nd->flags & FU_SEG_NF_REDUCTION) {
    /* a second reduction over the same rows re-reads them after the first */
    in_space = nd->red_in == red_in;
  } else {
    in_space = nd->space >= 0 && nd->space == red_in;
    if (!in_space && nd->space >= 0 && nd->space != red_out) {
      s->n_down_bad++;
      s->first_down_bad = fu_seg_min_idx(s->first_down_bad, (int32_t)n);
      return;
    }
  }
  if (in_space) {
    s->n_down_in++;
    s->first_down_in = fu_seg_min_idx(s->first_down_in, (int32_t)n);
    if (!(nd->flags & FU_SEG_NF_REDUCTION) && makes_skewed_coords(env, nd, red, dm)) {
      s->n_down_skew++;
      s->first_down_skew = fu_seg_min_idx(s->first_down_skew, (int32_t)n);
    }
  }
}

/* The same summary a sequence of merges would produce, computed directly
 * from the ops (sorted by node index, hence topologically).  Step 1 uses it
 * for the whole fusion; the tests compare it with the incremental one. */
fu_status fu_seg_summary_scan(fu_seg_env *env, const uint32_t *nodes, uint32_t k, fu_seg_summary *out) {
  summary_empty(out);
  if (k == 0) return FU_OK;
  uint32_t stamp = fu_seg_fmt_stamp(env);
  uint8_t *flags = fu_mem_calloc(&env->alloc, env->n_nodes, 1); /* 1 down, 2 comp has reduction */
  if (!flags) return FU_ERR_NOMEM;
  for (uint32_t i = 0; i < k; i++) {
    env->fmt_mark[nodes[i]] = stamp;
    env->fmt_uf[nodes[i]] = nodes[i];
  }
  for (uint32_t i = 0; i < k; i++) {
    uint32_t n = nodes[i];
    const fu_seg_node *nd = &env->nodes[n];
    const fu_op *op = nd->op;
    out->n_ops++;
    if (nd->flags & FU_SEG_NF_VIEW) out->n_views++;
    out->first_op = fu_seg_min_idx(out->first_op, (int32_t)n);
    if (nd->flags & FU_SEG_NF_RESIZE) out->first_resize = fu_seg_min_idx(out->first_resize, (int32_t)n);
    if (nd->flags & FU_SEG_NF_TRANSP) out->first_transp = fu_seg_min_idx(out->first_transp, (int32_t)n);
    add_product_facts(nd, n, out);
    if (nd->flags & FU_SEG_NF_INDEX) out->first_index = fu_seg_min_idx(out->first_index, (int32_t)n);
    if (nd->flags & FU_SEG_NF_SHIFT_PAD) out->first_shift_pad = fu_seg_min_idx(out->first_shift_pad, (int32_t)n);
    if (nd->flags & FU_SEG_NF_CLAMP) out->first_clamp = fu_seg_min_idx(out->first_clamp, (int32_t)n);
    if (nd->flags & FU_SEG_NF_SCAN) out->first_scan = fu_seg_min_idx(out->first_scan, (int32_t)n);
    if (nd->flags & FU_SEG_NF_REDUCTION) {
      if (out->first_red < 0) {
        out->first_red = (int32_t)n;
        out->red_in = nd->red_in;
        out->red_out = nd->red_out;
        out->red_axes = nd->red_axes;
      } else if ((nd->red_in != out->red_in || nd->red_out != out->red_out || nd->red_axes != out->red_axes) &&
                 out->red_mismatch < 0) {
        out->red_mismatch = (int32_t)n;
      }
    }
    bool down = false;
    for (uint32_t j = 0; j < op->n_operands; j++) {
      const fu_value *v = op->operands[j];
      if (v->is_literal || v->id >= env->n_values) continue;
      uint32_t d = env->v_def[v->id];
      if (d == FU_SEG_NONE || env->fmt_mark[d] != stamp || d == n) continue;
      if ((env->nodes[d].flags & FU_SEG_NF_REDUCTION) || (flags[d] & 1)) down = true;
      uint32_t ra = uf_find(env->fmt_uf, d), rb = uf_find(env->fmt_uf, n);
      if (ra != rb) env->fmt_uf[ra] = rb;
    }
    if (down) flags[n] |= 1;
    for (uint32_t r = 0; r < op->n_results; r++) {
      const fu_value *v = op->results[r];
      if (v->id >= env->n_values) continue;
      bool outside = false;
      for (uint32_t u = env->use_start[v->id]; u < env->use_start[v->id + 1] && !outside; u++)
        outside = env->fmt_mark[env->use_node[u]] != stamp;
      if (outside) fu_seg_summary_add_space(out, env->v_space[v->id], 1);
    }
  }
  /* components, and which of them hold a reduction */
  for (uint32_t i = 0; i < k; i++)
    if (env->nodes[nodes[i]].flags & FU_SEG_NF_REDUCTION) flags[uf_find(env->fmt_uf, nodes[i])] |= 2;
  for (uint32_t i = 0; i < k; i++) {
    uint32_t n = nodes[i];
    if (uf_find(env->fmt_uf, n) != n) continue;
    out->n_comp++;
    if (!(flags[n] & 2)) out->n_comp_nored++;
  }
  fu_seg_down_marks dm = {flags, NULL, 0};
  if (out->first_red >= 0)
    for (uint32_t i = 0; i < k; i++)
      if (flags[nodes[i]] & 1) fu_seg_classify_down(env, nodes[i], out->first_red, &dm, out);
  fu_mem_free(&env->alloc, flags, env->n_nodes);
  if (out->first_red >= 0 && out->n_comp_nored > 0) {
    fu_status st = fu_seg_count_comp_off(env, nodes, k, out->red_in, &out->n_comp_off);
    if (st != FU_OK) return st;
  }
  if (out->first_clamp >= 0) return fu_seg_out_before_clamp(env, nodes, k, &out->first_out_before_clamp);
  return FU_OK;
}

/* The components of a group (nodes, k of them) that hold no reduction and
 * cannot ride along beside it: those that give a value to an op outside
 * the group (or to the fusion's outputs) in a space other than red_in,
 * those of views alone, and those that permute.  A reduction kernel's
 * loops cover the space of the reduction's input; ops beside the
 * reduction, connected to it by nothing, are reached only when their
 * outputs lie in that space (an op over the reduced space would be stored
 * once for every element of a row).  Views alone may become host ops
 * (step 4), which a kernel would turn into a copy; a permute is the
 * transpose scheduler's, whose tiles keep both sides coalesced.  The scan
 * and the merge trials both count them here. */
fu_status fu_seg_count_comp_off(fu_seg_env *env, const uint32_t *nodes, uint32_t k, int32_t red_in, uint32_t *n_off) {
  *n_off = 0;
  uint32_t stamp = fu_seg_fmt_stamp(env);
  /* on roots: 1 reduction, 2 output off red_in or a permute, 4 an op that is not a view */
  uint8_t *flags = fu_mem_calloc(&env->alloc, env->n_nodes, 1);
  if (!flags) return FU_ERR_NOMEM;
  for (uint32_t i = 0; i < k; i++) env->fmt_mark[nodes[i]] = stamp;
  fu_seg_group_components(env, nodes, k, stamp);
  for (uint32_t i = 0; i < k; i++) {
    uint32_t n = nodes[i], root = uf_find(env->fmt_uf, n);
    if (env->nodes[n].flags & FU_SEG_NF_REDUCTION) flags[root] |= 1;
    if (!(env->nodes[n].flags & FU_SEG_NF_VIEW)) flags[root] |= 4;
    if (env->nodes[n].flags & FU_SEG_NF_TRANSP) flags[root] |= 2;
    const fu_op *op = env->nodes[n].op;
    for (uint32_t r = 0; r < op->n_results; r++) {
      uint32_t v = op->results[r]->id;
      if (v >= env->n_values || env->v_space[v] == red_in) continue;
      for (uint32_t u = env->use_start[v]; u < env->use_start[v + 1]; u++)
        if (env->fmt_mark[env->use_node[u]] != stamp) flags[root] |= 2;
    }
  }
  for (uint32_t i = 0; i < k; i++)
    if (uf_find(env->fmt_uf, nodes[i]) == nodes[i] && !(flags[nodes[i]] & 1) && flags[nodes[i]] != 4) (*n_off)++;
  fu_mem_free(&env->alloc, flags, env->n_nodes);
  return FU_OK;
}

/* A cat's operands, and a widening pad's, are read at clamped coordinates
 * of the loop (the index graph's resize variables).  A value of the group
 * upstream of such an operand reaches the loops only through the clamp
 * when nothing else ties it to them, and is then stored at clamped
 * coordinates: some elements twice, others never (a RoPE backward fusion
 * whose rotated input was an output too).  So no value upstream of a
 * clamp may leave the group. */
fu_status fu_seg_out_before_clamp(fu_seg_env *env, const uint32_t *nodes, uint32_t k, int32_t *first) {
  *first = -1;
  uint32_t stamp = fu_seg_fmt_stamp(env);
  uint8_t *up = fu_mem_calloc(&env->alloc, env->n_nodes, 1);
  uint32_t *stack = fu_mem_calloc(&env->alloc, k ? k : 1, sizeof *stack);
  if (!up || !stack) {
    fu_mem_free(&env->alloc, up, env->n_nodes);
    fu_mem_free(&env->alloc, stack, (k ? k : 1) * sizeof *stack);
    return FU_ERR_NOMEM;
  }
  for (uint32_t i = 0; i < k; i++) env->fmt_mark[nodes[i]] = stamp;
  uint32_t sp = 0;
  for (uint32_t i = 0; i < k; i++)
    if (env->nodes[nodes[i]].flags & FU_SEG_NF_CLAMP) stack[sp++] = nodes[i];
  /* upstream of the clamps' operands, inside the group */
  while (sp) {
    const fu_op *op = env->nodes[stack[--sp]].op;
    for (uint32_t j = 0; j < op->n_operands; j++) {
      const fu_value *v = op->operands[j];
      if (v->is_literal || v->id >= env->n_values) continue;
      uint32_t d = env->v_def[v->id];
      if (d == FU_SEG_NONE || env->fmt_mark[d] != stamp || up[d]) continue;
      up[d] = 1;
      stack[sp++] = d;
    }
  }
  for (uint32_t i = 0; i < k; i++) {
    uint32_t n = nodes[i];
    if (!up[n]) continue;
    const fu_op *op = env->nodes[n].op;
    for (uint32_t r = 0; r < op->n_results; r++) {
      uint32_t v = op->results[r]->id;
      if (v >= env->n_values) continue;
      for (uint32_t u = env->use_start[v]; u < env->use_start[v + 1]; u++)
        if (env->fmt_mark[env->use_node[u]] != stamp) *first = fu_seg_min_idx(*first, (int32_t)n);
    }
  }
  fu_mem_free(&env->alloc, up, env->n_nodes);
  fu_mem_free(&env->alloc, stack, (k ? k : 1) * sizeof *stack);
  return FU_OK;
}

bool fu_seg_summary_equal(const fu_seg_summary *a, const fu_seg_summary *b) {
  if (a->n_ops != b->n_ops || a->n_views != b->n_views || a->first_op != b->first_op ||
      a->first_red != b->first_red || a->first_resize != b->first_resize || a->first_transp != b->first_transp ||
      a->first_mm != b->first_mm || a->n_mm != b->n_mm || a->first_plain != b->first_plain ||
      a->epi_owner != b->epi_owner ||
      a->first_index != b->first_index || a->first_shift_pad != b->first_shift_pad ||
      a->first_clamp != b->first_clamp || a->first_out_before_clamp != b->first_out_before_clamp || a->first_scan != b->first_scan ||
      (a->red_mismatch < 0) != (b->red_mismatch < 0) || a->n_comp != b->n_comp ||
      a->n_comp_nored != b->n_comp_nored || a->n_comp_off != b->n_comp_off ||
      a->spaces_overflow != b->spaces_overflow || a->n_spaces != b->n_spaces)
    return false;
  if (a->first_red >= 0 && (a->red_in != b->red_in || a->red_out != b->red_out || a->red_axes != b->red_axes))
    return false;
  /* downstream counts are relative to one signature: meaningless when mixed */
  if (a->red_mismatch < 0 && (a->n_down_in != b->n_down_in || a->n_down_bad != b->n_down_bad ||
                              a->first_down_in != b->first_down_in || a->first_down_bad != b->first_down_bad ||
                              a->n_down_skew != b->n_down_skew || a->first_down_skew != b->first_down_skew))
    return false;
  for (uint32_t i = 0; i < a->n_spaces; i++) {
    bool found = false;
    for (uint32_t j = 0; j < b->n_spaces; j++)
      if (a->space[i] == b->space[j]) found = a->space_n[i] == b->space_n[j];
    if (!found) return false;
  }
  return true;
}

/* ---- the checks ------------------------------------------------------------- */

static fu_seg_verdict accept(void) {
  fu_seg_verdict v = {FU_SEG_ACCEPT, -1, -1};
  return v;
}

static fu_seg_verdict refuse(fu_seg_why why, int32_t op, int32_t op2) {
  fu_seg_verdict v = {why, op, op2};
  return v;
}

static bool one_output_space(const fu_seg_summary *s) { return !s->spaces_overflow && s->n_spaces <= 1; }

static bool outputs_in_red_spaces(const fu_seg_summary *s) {
  if (s->spaces_overflow) return false;
  for (uint32_t i = 0; i < s->n_spaces; i++)
    if (s->space[i] != s->red_in && s->space[i] != s->red_out) return false;
  return true;
}

/* pointwise: elementwise ops and views over one iteration space, written in
 * the order it is read (no reduction, no resize, nothing permuted). */
fu_seg_verdict fu_seg_accept_pointwise(const fu_seg_env *env, const fu_seg_summary *s) {
  /* with the transpose kind turned off, pointwise takes permuted data the
   * way the transpose scheduler's fallback does: uncoalesced on one side */
  bool transpose_off = env->features && (env->features->kinds_off & (1u << FU_SK_TRANSPOSE));
  if (s->n_ops == 0) return refuse(FU_SEG_WHY_EMPTY, -1, -1);
  if (s->first_mm >= 0) return refuse(FU_SEG_WHY_HAS_MATMUL, s->first_mm, -1);
  if (s->first_scan >= 0) return refuse(FU_SEG_WHY_HAS_SCAN, s->first_scan, -1);
  if (s->first_red >= 0) return refuse(FU_SEG_WHY_HAS_REDUCTION, s->first_red, -1);
  if (s->first_resize >= 0) return refuse(FU_SEG_WHY_HAS_RESIZE, s->first_resize, -1);
  if (s->first_transp >= 0 && !transpose_off) return refuse(FU_SEG_WHY_HAS_TRANSPOSE, s->first_transp, -1);
  if (!one_output_space(s)) return refuse(FU_SEG_WHY_OUT_SPACES, -1, -1);
  return accept();
}

/* transpose: as pointwise, but data moves between a permuted and the
 * logical order (a permute inside, or an input read in a permuted layout). */
fu_seg_verdict fu_seg_accept_transpose(const fu_seg_env *env, const fu_seg_summary *s) {
  (void)env;
  if (s->n_ops == 0) return refuse(FU_SEG_WHY_EMPTY, -1, -1);
  if (s->first_mm >= 0) return refuse(FU_SEG_WHY_HAS_MATMUL, s->first_mm, -1);
  if (s->first_scan >= 0) return refuse(FU_SEG_WHY_HAS_SCAN, s->first_scan, -1);
  if (s->first_red >= 0) return refuse(FU_SEG_WHY_HAS_REDUCTION, s->first_red, -1);
  if (s->first_resize >= 0) return refuse(FU_SEG_WHY_HAS_RESIZE, s->first_resize, -1);
  if (s->first_transp < 0) return refuse(FU_SEG_WHY_NO_TRANSPOSE, -1, -1);
  if (s->first_index >= 0) return refuse(FU_SEG_WHY_HAS_INDEX, s->first_index, -1);
  if (!one_output_space(s)) return refuse(FU_SEG_WHY_OUT_SPACES, -1, -1);
  return accept();
}

/* What reduction and persistent share: reductions of one signature,
 * epilogue ops in the input or output space only.  (Whether every op must
 * be connected to a reduction is each kind's own rule.) */
static fu_seg_verdict check_reduction_common(const fu_seg_summary *s) {
  if (s->n_ops == 0) return refuse(FU_SEG_WHY_EMPTY, -1, -1);
  if (s->first_mm >= 0) return refuse(FU_SEG_WHY_HAS_MATMUL, s->first_mm, -1);
  if (s->first_scan >= 0) return refuse(FU_SEG_WHY_HAS_SCAN, s->first_scan, -1);
  if (s->first_red < 0) return refuse(FU_SEG_WHY_NO_REDUCTION, -1, -1);
  if (s->red_mismatch >= 0) return refuse(FU_SEG_WHY_RED_MISMATCH, s->first_red, s->red_mismatch);
  if (s->first_resize >= 0) return refuse(FU_SEG_WHY_HAS_RESIZE, s->first_resize, -1);
  if (s->first_index >= 0) return refuse(FU_SEG_WHY_HAS_INDEX, s->first_index, -1);
  if (s->n_down_bad > 0) return refuse(FU_SEG_WHY_DOWN_BAD, s->first_down_bad, s->first_red);
  if (s->n_down_skew > 0) return refuse(FU_SEG_WHY_DOWN_SKEW, s->first_down_skew, s->first_red);
  return accept();
}

/* reduction: prologue -> reductions -> epilogue on the reduced space; the
 * reduction input is never needed again after it. */
fu_seg_verdict fu_seg_accept_reduction(const fu_seg_env *env, const fu_seg_summary *s) {
  fu_seg_verdict v = check_reduction_common(s);
  if (v.why != FU_SEG_ACCEPT) return v;
  /* pointwise ops beside the reduction, connected to it by nothing, ride
   * along in its loops when they cover the reduction's input space, and
   * save a launch.  An inner reduction's loops read that space as a
   * pointwise kernel does: one kernel was faster on every shape measured
   * on the H100 (ten, 4 us to 185 us).  An outer reduction's threads walk
   * down its columns, as few as it has: seed000's GELU backward beside
   * its bias gradient took 193.1 us in one kernel against 190.8 in two,
   * and 3 of 6 smaller shapes lost too (docs/passes.md). */
  if (s->n_comp_nored > 0) {
    /* --disable=horizontal: no kernel holds independent work */
    if (env->features && (env->features->off & (1u << FU_FEATURE_HORIZONTAL)))
      return refuse(FU_SEG_WHY_UNATTACHED, s->first_red, -1);
    if (s->n_comp_off > 0) return refuse(FU_SEG_WHY_SIDE_OFF_SPACE, s->first_red, -1);
    if (!env->nodes[s->first_red].red_inner) return refuse(FU_SEG_WHY_SIDE_OUTER, s->first_red, -1);
  }
  if (s->n_down_in > 0) return refuse(FU_SEG_WHY_DOWN_IN, s->first_down_in, s->first_red);
  if (!outputs_in_red_spaces(s)) return refuse(FU_SEG_WHY_OUT_NOT_RED, s->first_red, -1);
  return accept();
}

/* persistent: the reduced rows are used again after the reduction
 * (softmax, layernorm): they must fit on chip. */
fu_seg_verdict fu_seg_accept_persistent(const fu_seg_env *env, const fu_seg_summary *s) {
  fu_seg_verdict v = check_reduction_common(s);
  if (v.why != FU_SEG_ACCEPT) return v;
  if (s->n_comp_nored > 0) return refuse(FU_SEG_WHY_UNATTACHED, s->first_red, -1);
  if (s->n_down_in == 0) return refuse(FU_SEG_WHY_NO_DOWN_IN, s->first_red, -1);
  if (env->nodes[s->first_red].red_elems > FU_SEG_PERSISTENT_MAX_ELEMS)
    return refuse(FU_SEG_WHY_TOO_LARGE, s->first_red, -1);
  /* an outer normalization (batch norm over N, H, W of NHWC: the last dim
   * kept) is a reduction kernel and a pointwise kernel (docs/passes.md,
   * "Outer normalizations") */
  if (!env->nodes[s->first_red].red_last) return refuse(FU_SEG_WHY_OUTER_NORM, s->first_red, -1);
  if (!outputs_in_red_spaces(s)) return refuse(FU_SEG_WHY_OUT_NOT_RED, s->first_red, -1);
  return accept();
}

/* resize: slice, pad and cat with pointwise ops around them. */
fu_seg_verdict fu_seg_accept_resize(const fu_seg_env *env, const fu_seg_summary *s) {
  (void)env;
  if (s->n_ops == 0) return refuse(FU_SEG_WHY_EMPTY, -1, -1);
  if (s->first_mm >= 0) return refuse(FU_SEG_WHY_HAS_MATMUL, s->first_mm, -1);
  if (s->first_scan >= 0) return refuse(FU_SEG_WHY_HAS_SCAN, s->first_scan, -1);
  if (s->first_resize < 0) return refuse(FU_SEG_WHY_NO_RESIZE, -1, -1);
  if (s->first_red >= 0) return refuse(FU_SEG_WHY_HAS_REDUCTION, s->first_red, -1);
  if (s->first_index >= 0) return refuse(FU_SEG_WHY_HAS_INDEX, s->first_index, -1);
  if (!one_output_space(s)) return refuse(FU_SEG_WHY_OUT_SPACES, -1, -1);
  /* a pad that shifts coordinates but keeps the element count (widths
   * [-1, 1]) puts its operand and result in one space: an output read
   * before it would be stored at the shifted coordinates */
  if (s->first_shift_pad >= 0 && (s->n_spaces != 1 || s->space_n[0] > 1))
    return refuse(FU_SEG_WHY_SHIFT_PAD_OUTPUTS, s->first_shift_pad, -1);
  if (s->first_out_before_clamp >= 0) return refuse(FU_SEG_WHY_OUT_BEFORE_CLAMP, s->first_out_before_clamp, s->first_clamp);
  return accept();
}

/* matmul: one matmul or linear and ops of its own cuBLASLt epilogue
 * (passes/matmul_epilogue.c); the rest of the fusion stays in fuser's
 * kernels. */
fu_seg_verdict fu_seg_accept_matmul(const fu_seg_env *env, const fu_seg_summary *s) {
  (void)env;
  if (s->n_ops == 0) return refuse(FU_SEG_WHY_EMPTY, -1, -1);
  if (s->first_mm < 0) return refuse(FU_SEG_WHY_NO_MATMUL, -1, -1);
  if (s->n_mm > 1) return refuse(FU_SEG_WHY_TWO_MATMULS, s->first_mm, -1);
  if (s->first_plain >= 0) return refuse(FU_SEG_WHY_NOT_EPILOGUE, s->first_plain, s->first_mm);
  if (s->epi_owner == -2 || (s->epi_owner >= 0 && s->epi_owner != s->first_mm))
    return refuse(FU_SEG_WHY_OTHER_EPILOGUE, s->first_mm, -1);
  return accept();
}

/* scan: one cumsum, cumprod, cummax or cummin alone (its operand and
 * result are in global memory; passes/schedule/scan.c). */
fu_seg_verdict fu_seg_accept_scan(const fu_seg_env *env, const fu_seg_summary *s) {
  (void)env;
  if (s->n_ops == 0) return refuse(FU_SEG_WHY_EMPTY, -1, -1);
  if (s->first_scan < 0) return refuse(FU_SEG_WHY_NO_SCAN, -1, -1);
  if (s->n_ops > 1) return refuse(FU_SEG_WHY_SCAN_NOT_ALONE, s->first_scan, -1);
  return accept();
}

/* The ACCEPT column of kinds.def, in its (preference) order. */
const fu_seg_scheduler fu_seg_schedulers[FU_SEG_KIND_COUNT] = {
#define FU_SCHED_KIND(id, name, accept, schedule, lower) {FU_SK_##id, accept},
#include "fuser/kinds.def"
};

fu_sched_kind fu_seg_choose(const fu_seg_env *env, const fu_seg_summary *s, fu_seg_verdict verdicts[FU_SEG_KIND_COUNT]) {
  fu_sched_kind chosen = FU_SK_NONE;
  for (int i = 0; i < FU_SEG_KIND_COUNT; i++) {
    const fu_seg_scheduler *sc = &fu_seg_schedulers[i];
    if (!sc->check) continue;
    if (chosen != FU_SK_NONE && !verdicts) break;
    bool off = env->features && (unsigned)sc->kind < 32 && (env->features->kinds_off & (1u << sc->kind));
    fu_seg_verdict v = off ? refuse(FU_SEG_WHY_DISABLED, -1, -1) : sc->check(env, s);
    if (verdicts) verdicts[i] = v;
    if (v.why == FU_SEG_ACCEPT && chosen == FU_SK_NONE) chosen = sc->kind;
  }
  return chosen;
}
