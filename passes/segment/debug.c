/* fuser: segment pass, the --debug=segment explanation.
 *
 * Turns scheduler verdicts into sentences that name the ops (`%T19 = sum`)
 * and groups (`{%T8,%T10}`).  Only runs when debug output is on; details a
 * summary does not keep (which outputs disagree, which op is not connected
 * to a reduction) are found here by scanning the group in question. */
#include <inttypes.h>
#include <string.h>

#include "fuser/print.h"
#include "internal.h"

void fu_seg_debug_line(fu_seg_env *env) {
  if (!env->dbg) return;
  if (env->sb.data) fwrite(env->sb.data, 1, env->sb.len, env->dbg);
  fputc('\n', env->dbg);
}

static void put_name(fu_strbuf *sb, const fu_op *op) {
  if (op->kind == FU_OP_SEGMENT)
    fu_strbuf_printf(sb, "@%s", op->u.segment.name ? op->u.segment.name : "?");
  else if (op->n_results > 0)
    fu_print_value_ref(sb, op->results[0]);
  else
    fu_strbuf_puts(sb, fu_op_info_of(op->kind)->name);
}

void fu_seg_put_op(fu_strbuf *sb, const fu_op *op) {
  if (op->kind == FU_OP_SEGMENT) {
    fu_strbuf_puts(sb, "segment ");
    put_name(sb, op);
    return;
  }
  if (op->n_results == 0) {
    fu_strbuf_puts(sb, fu_op_info_of(op->kind)->name);
    return;
  }
  for (uint32_t i = 0; i < op->n_results; i++) {
    if (i) fu_strbuf_puts(sb, ", ");
    fu_print_value_ref(sb, op->results[i]);
  }
  fu_strbuf_printf(sb, " = %s", fu_op_info_of(op->kind)->name);
}

void fu_seg_put_bytes(fu_strbuf *sb, uint64_t b) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  uint64_t div = 1;
  while (u < 5 && b >= div * 1024) {
    div *= 1024;
    u++;
  }
  if (b % div == 0)
    fu_strbuf_printf(sb, "%" PRIu64 " %s", b / div, units[u]);
  else
    fu_strbuf_printf(sb, "%.1f %s", (double)b / (double)div, units[u]);
}

/* The nodes of the view (union of roots a and b, or all compute nodes),
 * sorted, into out; marks them with a fresh fmt stamp. */
static uint32_t view_members(fu_seg_env *env, uint32_t a, uint32_t b, bool whole, fu_seg_vec *out) {
  out->n = 0;
  uint32_t stamp = fu_seg_fmt_stamp(env);
  if (whole) {
    for (uint32_t n = 0; n < env->n_nodes; n++)
      if ((env->nodes[n].flags & FU_SEG_NF_COMPUTE) && fu_seg_vec_push(out, &env->alloc, n)) env->fmt_mark[n] = stamp;
    return stamp;
  }
  fu_seg_vec run[2] = {{0}, {0}};
  uint32_t roots[2] = {a, b};
  for (int i = 0; i < 2; i++)
    if (roots[i] != FU_SEG_NONE && fu_seg_members_sorted(env, roots[i], &run[i]) != FU_OK) run[i].n = 0;
  /* merge the two sorted runs */
  uint32_t i = 0, j = 0;
  while (i < run[0].n || j < run[1].n) {
    uint32_t n = j >= run[1].n || (i < run[0].n && run[0].v[i] < run[1].v[j]) ? run[0].v[i++] : run[1].v[j++];
    if (fu_seg_vec_push(out, &env->alloc, n)) env->fmt_mark[n] = stamp;
  }
  fu_seg_vec_free(&run[0], &env->alloc);
  fu_seg_vec_free(&run[1], &env->alloc);
  return stamp;
}

/* Keeps the k smallest (or largest) node ids seen, sorted. */
static void keep_extreme(uint32_t *v, uint32_t *n, uint32_t k, uint32_t x, bool smallest) {
  uint32_t i = *n < k ? (*n)++ : k;
  if (i == k) {
    if (smallest ? x >= v[k - 1] : x <= v[k - 1]) return;
    i = k - 1;
  }
  while (i > 0 && (smallest ? v[i - 1] > x : v[i - 1] < x)) {
    v[i] = v[i - 1];
    i--;
  }
  v[i] = x;
}

/* One pass over the members: the first three and last two ops (by op
 * order) are all a long group's name shows. */
void fu_seg_put_group(fu_seg_env *env, fu_strbuf *sb, uint32_t a, uint32_t b) {
  if (a < env->n_nodes && !(env->nodes[a].flags & FU_SEG_NF_COMPUTE) && b == FU_SEG_NONE) {
    /* a host op, input or segment on a path */
    fu_strbuf_putc(sb, '{');
    put_name(sb, env->nodes[a].op);
    fu_strbuf_putc(sb, '}');
    return;
  }
  uint32_t lo[6], hi[2], n_lo = 0, n_hi = 0, count = 0;
  uint32_t roots[2] = {a, b};
  for (int r = 0; r < 2; r++) {
    if (roots[r] == FU_SEG_NONE) continue;
    for (uint32_t n = env->mem_head[roots[r]]; n != FU_SEG_NONE; n = env->mem_next[n]) {
      keep_extreme(lo, &n_lo, 6, n, true);
      keep_extreme(hi, &n_hi, 2, n, false);
      count++;
    }
  }
  fu_strbuf_putc(sb, '{');
  if (count <= 6) {
    for (uint32_t i = 0; i < n_lo; i++) {
      if (i) fu_strbuf_putc(sb, ',');
      put_name(sb, env->nodes[lo[i]].op);
    }
  } else {
    for (uint32_t i = 0; i < 3; i++) {
      put_name(sb, env->nodes[lo[i]].op);
      fu_strbuf_putc(sb, ',');
    }
    fu_strbuf_puts(sb, "...,");
    put_name(sb, env->nodes[hi[1]].op);
    fu_strbuf_putc(sb, ',');
    put_name(sb, env->nodes[hi[0]].op);
    fu_strbuf_printf(sb, " (%u ops)", count);
  }
  fu_strbuf_putc(sb, '}');
}

void fu_seg_put_kind(fu_seg_env *env, fu_strbuf *sb, fu_sched_kind k, const fu_seg_summary *s) {
  fu_strbuf_puts(sb, fu_sched_kind_name(k));
  if ((k == FU_SK_REDUCTION || k == FU_SK_PERSISTENT) && s->first_red >= 0)
    fu_strbuf_puts(sb, env->nodes[s->first_red].red_inner ? " (inner)" : " (outer)");
}

static const fu_int_list *red_axes(const fu_op *op) {
  return fu_op_info_of(op->kind)->cls == FU_OC_VARIANCE ? &op->u.variance.axes : &op->u.reduce.axes;
}

static void put_axes(fu_strbuf *sb, const fu_int_list *l) {
  fu_strbuf_putc(sb, '[');
  for (uint32_t i = 0; i < l->n; i++) fu_strbuf_printf(sb, "%s%" PRId64, i ? ", " : "", l->v[i]);
  fu_strbuf_putc(sb, ']');
}

/* "<op> mid <op2> tail": a refusal that names two ops. */
static void put_op_pair(fu_strbuf *sb, const fu_op *op, const char *mid, const fu_op *op2, const char *tail) {
  fu_seg_put_op(sb, op);
  fu_strbuf_puts(sb, mid);
  fu_seg_put_op(sb, op2);
  fu_strbuf_puts(sb, tail);
}

/* "%T19 reduces axes [0, 1] of %T4" */
static void put_reduces(fu_strbuf *sb, const fu_op *op) {
  put_name(sb, op);
  fu_strbuf_puts(sb, " reduces axes ");
  put_axes(sb, red_axes(op));
  if (op->n_operands > 0) {
    fu_strbuf_puts(sb, " of ");
    fu_print_value_ref(sb, op->operands[0]);
  }
}

static void put_value_typed(fu_strbuf *sb, const fu_value *v) {
  fu_print_value_ref(sb, v);
  fu_strbuf_puts(sb, " (");
  fu_print_type(sb, &v->type);
  fu_strbuf_putc(sb, ')');
}

static bool is_output(const fu_seg_env *env, uint32_t v, uint32_t stamp) {
  for (uint32_t u = env->use_start[v]; u < env->use_start[v + 1]; u++)
    if (env->fmt_mark[env->use_node[u]] != stamp) return true;
  return false;
}

/* An op of the view connected to no reduction: preferably one whose value
 * leaves the view (what the user sees), else the first. */
static const fu_op *unattached_op(fu_seg_env *env, const fu_seg_vec *m, uint32_t stamp) {
  fu_seg_group_components(env, m->v, m->n, stamp);
  /* roots of the components holding a reduction (usually few) */
  fu_seg_vec red_roots = {0};
  for (uint32_t i = 0; i < m->n; i++)
    if (env->nodes[m->v[i]].flags & FU_SEG_NF_REDUCTION)
      (void)fu_seg_vec_push(&red_roots, &env->alloc, fu_seg_component(env, m->v[i]));
  const fu_op *first = NULL, *out = NULL;
  for (uint32_t i = 0; i < m->n && !out; i++) {
    uint32_t root = fu_seg_component(env, m->v[i]);
    bool has_red = false;
    for (uint32_t j = 0; j < red_roots.n && !has_red; j++) has_red = red_roots.v[j] == root;
    if (has_red) continue;
    const fu_op *op = env->nodes[m->v[i]].op;
    if (!first) first = op;
    for (uint32_t r = 0; r < op->n_results && !out; r++)
      if (is_output(env, op->results[r]->id, stamp)) out = op;
  }
  fu_seg_vec_free(&red_roots, &env->alloc);
  return out ? out : first;
}

void fu_seg_put_reason(fu_seg_env *env, fu_strbuf *sb, const fu_seg_verdict *vd, uint32_t a, uint32_t b, bool whole) {
  const fu_op *op = vd->op >= 0 ? env->nodes[vd->op].op : NULL;
  const fu_op *op2 = vd->op2 >= 0 ? env->nodes[vd->op2].op : NULL;
  switch (vd->why) {
  case FU_SEG_ACCEPT: fu_strbuf_puts(sb, "accepted"); return;
  case FU_SEG_WHY_EMPTY: fu_strbuf_puts(sb, "no ops"); return;
  case FU_SEG_WHY_DISABLED: fu_strbuf_puts(sb, "turned off (--disable=scheduler:<kind>)"); return;
  case FU_SEG_WHY_HAS_REDUCTION:
    fu_seg_put_op(sb, op);
    fu_strbuf_puts(sb, " is a reduction");
    return;
  case FU_SEG_WHY_HAS_RESIZE:
    fu_seg_put_op(sb, op);
    fu_strbuf_puts(sb, " is a resize op");
    return;
  case FU_SEG_WHY_HAS_TRANSPOSE:
    fu_seg_put_op(sb, op);
    if (op->kind == FU_OP_PERMUTE) {
      fu_strbuf_puts(sb, " reorders dims ");
      put_axes(sb, &op->u.permute.dims);
      return;
    }
    for (uint32_t k = 0; k < op->n_operands; k++) {
      const fu_value *v = op->operands[k];
      if (!v->is_literal && v->id < env->n_values && (env->v_flags[v->id] & FU_SEG_VF_PERM)) {
        fu_strbuf_puts(sb, " reads ");
        fu_print_value_ref(sb, v);
        fu_strbuf_puts(sb, ", whose memory layout is permuted");
        return;
      }
    }
    for (uint32_t r = 0; r < op->n_results; r++) {
      const fu_value *v = op->results[r];
      if (v->id < env->n_values && (env->v_flags[v->id] & FU_SEG_VF_PERM)) {
        fu_strbuf_puts(sb, " writes ");
        fu_print_value_ref(sb, v);
        fu_strbuf_puts(sb, " in a permuted layout (a host permute of it is a fusion output)");
        return;
      }
    }
    fu_strbuf_puts(sb, " moves data between permuted layouts");
    return;
  case FU_SEG_WHY_NO_TRANSPOSE:
    fu_strbuf_puts(sb, "nothing is permuted (no permute, no input in a permuted layout)");
    return;
  case FU_SEG_WHY_NO_REDUCTION: fu_strbuf_puts(sb, "no reduction"); return;
  case FU_SEG_WHY_NO_RESIZE: fu_strbuf_puts(sb, "no slice, pad or cat"); return;
  case FU_SEG_WHY_HAS_INDEX:
    fu_seg_put_op(sb, op);
    fu_strbuf_puts(sb, " is an indexing op (pointwise kernels only)");
    return;
  case FU_SEG_WHY_RED_MISMATCH:
    put_reduces(sb, op);
    fu_strbuf_puts(sb, " but ");
    put_reduces(sb, op2);
    fu_strbuf_puts(sb, ", a different iteration space");
    return;
  case FU_SEG_WHY_DOWN_BAD:
    put_op_pair(sb, op, " follows ", op2, " in neither the reduction's input nor its output iteration space");
    return;
  case FU_SEG_WHY_DOWN_SKEW:
    put_op_pair(sb, op, " broadcasts the result of ", op2,
                " into a shape other than its operand's, which the kernel's loops do not reach");
    return;
  case FU_SEG_WHY_SHIFT_PAD_OUTPUTS:
    fu_seg_put_op(sb, op);
    fu_strbuf_puts(sb, " shifts coordinates but keeps the element count: a segment with it has one output");
    return;
  case FU_SEG_WHY_OUT_BEFORE_CLAMP:
    put_op_pair(sb, op, " leaves the segment but feeds ", op2,
                ", which reads it at clamped coordinates: it would be stored there");
    return;
  case FU_SEG_WHY_DOWN_IN:
    put_op_pair(sb, op, " follows ", op2, " in the reduction's input iteration space (a persistent kernel's pattern)");
    return;
  case FU_SEG_WHY_NO_DOWN_IN:
    fu_strbuf_puts(sb, "nothing after ");
    fu_seg_put_op(sb, op);
    fu_strbuf_puts(sb, " uses its input iteration space again");
    return;
  case FU_SEG_WHY_TOO_LARGE:
    fu_seg_put_op(sb, op);
    fu_strbuf_printf(sb, " reduces %" PRIu64 " elements per row, more than the %d a persistent kernel keeps on chip",
                     env->nodes[vd->op].red_elems, FU_SEG_PERSISTENT_MAX_ELEMS);
    return;
  case FU_SEG_WHY_HAS_MATMUL:
    fu_seg_put_op(sb, op);
    fu_strbuf_puts(sb, " is a matrix product (cuBLASLt runs it in a matmul segment)");
    return;
  case FU_SEG_WHY_NO_MATMUL: fu_strbuf_puts(sb, "no matmul or linear"); return;
  case FU_SEG_WHY_TWO_MATMULS:
    fu_strbuf_puts(sb, "more than one matmul or linear (");
    fu_seg_put_op(sb, op);
    fu_strbuf_puts(sb, " and another)");
    return;
  case FU_SEG_WHY_NOT_EPILOGUE:
    put_op_pair(sb, op, " is not in the epilogue cuBLASLt fuses into ", op2,
                " (bias, relu, gelu, scaling by a literal, output cast)");
    return;
  case FU_SEG_WHY_OTHER_EPILOGUE:
    fu_strbuf_puts(sb, "it holds ops of another product's epilogue than ");
    fu_seg_put_op(sb, op);
    return;
  case FU_SEG_WHY_HAS_SCAN:
    fu_seg_put_op(sb, op);
    fu_strbuf_puts(sb, " is a scan (a scan segment of its own)");
    return;
  case FU_SEG_WHY_NO_SCAN: fu_strbuf_puts(sb, "no cumsum, cumprod, cummax or cummin"); return;
  case FU_SEG_WHY_SCAN_NOT_ALONE:
    fu_seg_put_op(sb, op);
    fu_strbuf_puts(sb, " is a scan, which is a segment alone");
    return;
  case FU_SEG_WHY_OUTER_NORM:
    fu_seg_put_op(sb, op);
    fu_strbuf_puts(sb, " keeps the last dim (an outer normalization): a reduction kernel and a pointwise kernel");
    return;
  default: break;
  }
  /* the rest need the members of the view */
  fu_seg_vec m = {0};
  uint32_t stamp = view_members(env, a, b, whole, &m);
  if (vd->why == FU_SEG_WHY_UNATTACHED || vd->why == FU_SEG_WHY_SIDE_OFF_SPACE || vd->why == FU_SEG_WHY_SIDE_OUTER) {
    const fu_op *lone = unattached_op(env, &m, stamp);
    put_reduces(sb, op);
    fu_strbuf_puts(sb, " but ");
    if (lone) put_name(sb, lone);
    else fu_strbuf_puts(sb, "an op");
    fu_strbuf_puts(sb, " is not a producer or consumer of a reduction");
    if (vd->why == FU_SEG_WHY_SIDE_OFF_SPACE)
      fu_strbuf_puts(sb, ", and ops beside it give a value outside the reduction input's iteration space, permute "
                         "(the transpose scheduler's), or are views alone (host ops, not a copy in a kernel)");
    else if (vd->why == FU_SEG_WHY_SIDE_OUTER)
      fu_strbuf_puts(sb, ", and an outer reduction's threads walk down its columns: ops beside it would run on "
                         "as few threads (slower than two kernels on the H100)");
  } else if (vd->why == FU_SEG_WHY_OUT_SPACES || vd->why == FU_SEG_WHY_OUT_NOT_RED) {
    const fu_value *first = NULL, *other = NULL;
    int32_t red_in = op ? env->nodes[vd->op].red_in : -1, red_out = op ? env->nodes[vd->op].red_out : -1;
    for (uint32_t i = 0; i < m.n && !other; i++) {
      const fu_op *o = env->nodes[m.v[i]].op;
      for (uint32_t r = 0; r < o->n_results && !other; r++) {
        const fu_value *v = o->results[r];
        if (env->v_space[v->id] < 0 || !is_output(env, v->id, stamp)) continue;
        if (vd->why == FU_SEG_WHY_OUT_NOT_RED) {
          if (env->v_space[v->id] != red_in && env->v_space[v->id] != red_out) other = v;
        } else if (!first) {
          first = v;
        } else if (env->v_space[v->id] != env->v_space[first->id]) {
          other = v;
        }
      }
    }
    if (vd->why == FU_SEG_WHY_OUT_NOT_RED && other) {
      fu_strbuf_puts(sb, "output ");
      put_value_typed(sb, other);
      fu_strbuf_puts(sb, " is in neither the input nor the output iteration space of ");
      fu_seg_put_op(sb, op);
    } else if (first && other) {
      fu_strbuf_puts(sb, "outputs ");
      put_value_typed(sb, first);
      fu_strbuf_puts(sb, " and ");
      put_value_typed(sb, other);
      fu_strbuf_puts(sb, " have different iteration spaces");
    } else {
      fu_strbuf_printf(sb, "the outputs have more than %d iteration spaces", FU_SEG_MAX_SPACES);
    }
  }
  fu_seg_vec_free(&m, &env->alloc);
}
