/* fuser: segment pass, the partitioning algorithm.
 *
 *   step 1  one group of every compute op, if a scheduler accepts it;
 *   step 2  else one group per op, then producer->consumer merges from a
 *           priority queue, most global-memory bytes removed first (ties:
 *           op order), each legal if a scheduler accepts the union and the
 *           group graph stays acyclic;
 *   step 3  the producer->consumer pairs still possible, in topological
 *           order, then horizontal merges: groups reading a common value,
 *           then independent groups of the same kind, then pointwise
 *           groups beside a reduction group;
 *   step 4  groups of views that only reinterpret memory become host ops.
 *
 * A merge attempt ("trial") gathers the uses crossing from one group to the
 * other, which give the bytes removed, the outputs that stop being outputs,
 * the components joined and the ops that newly follow a reduction; from
 * those and the two summaries it forms the union's summary without looking
 * at the other ops.  A rejected trial is undone; rejected pairs are cached
 * with the groups' versions so an unchanged pair is not retried. */
#include <stdlib.h>
#include <string.h>

#include "fuser/print.h"
#include "internal.h"

typedef enum merge_mode { MODE_PRODUCER, MODE_HORIZONTAL } merge_mode;

typedef struct trial {
  uint32_t x, y; /* roots, ord[x] < ord[y] */
  uint64_t bytes;
  fu_seg_summary sum;
  fu_sched_kind kind;
  fu_seg_verdict verdicts[FU_SEG_KIND_COUNT];
} trial;

static uint32_t find(fu_seg_env *env, uint32_t x) { return fu_seg_graph_find(&env->g, x); }

static bool is_compute(const fu_seg_env *env, uint32_t n) { return (env->nodes[n].flags & FU_SEG_NF_COMPUTE) != 0; }

static uint32_t next_mark(fu_seg_env *env) {
  if (++env->mark_stamp == 0) {
    memset(env->mark, 0, (size_t)env->n_nodes * sizeof *env->mark);
    env->mark_stamp = 1;
  }
  return env->mark_stamp;
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* Sorts node ids by a key per node (ord or index). */
static bool sort_nodes(fu_seg_env *env, fu_seg_vec *v, bool by_ord) {
  return fu_seg_vec_sort(v, &env->alloc, by_ord ? env->g.ord : NULL);
}

/* Compute roots (groups), sorted by their topological position. */
static fu_status roots_by_ord(fu_seg_env *env, fu_seg_vec *out) {
  out->n = 0;
  for (uint32_t n = 0; n < env->n_nodes; n++)
    if (is_compute(env, n) && find(env, n) == n && !fu_seg_vec_push(out, &env->alloc, n)) return FU_ERR_NOMEM;
  return sort_nodes(env, out, true) ? FU_OK : FU_ERR_NOMEM;
}

/* ---- components (union by size, undone when a trial is rejected) ---------- */

static uint32_t comp_find(const fu_seg_env *env, uint32_t x) {
  while (env->comp_parent[x] != x) x = env->comp_parent[x];
  return x;
}

static bool comp_union(fu_seg_env *env, uint32_t a, uint32_t b, fu_seg_summary *s) {
  a = comp_find(env, a);
  b = comp_find(env, b);
  if (a == b) return true;
  if (env->comp_size[a] < env->comp_size[b]) {
    uint32_t t = a;
    a = b;
    b = t;
  }
  if (!fu_seg_vec_push(&env->comp_log, &env->alloc, b) ||
      !fu_seg_vec_push(&env->comp_log, &env->alloc, env->comp_red[a]))
    return false;
  s->n_comp--;
  if (!(env->comp_red[a] && env->comp_red[b])) s->n_comp_nored--;
  env->comp_parent[b] = a;
  env->comp_size[a] += env->comp_size[b];
  env->comp_red[a] |= env->comp_red[b];
  return true;
}

static void comp_undo(fu_seg_env *env) {
  while (env->comp_log.n >= 2) {
    uint8_t old = (uint8_t)env->comp_log.v[--env->comp_log.n];
    uint32_t b = env->comp_log.v[--env->comp_log.n];
    uint32_t a = env->comp_parent[b];
    env->comp_red[a] = old;
    env->comp_size[a] -= env->comp_size[b];
    env->comp_parent[b] = b;
  }
  env->comp_log.n = 0;
}

/* ---- trials --------------------------------------------------------------- */

/* The uses of x's values by y's ops, scanning the smaller group. */
static fu_status collect_cross(fu_seg_env *env, uint32_t x, uint32_t y) {
  env->cross_v.n = env->cross_u.n = 0;
  const fu_allocator *a = &env->alloc;
  if (env->mem_count[x] <= env->mem_count[y]) {
    for (uint32_t n = env->mem_head[x]; n != FU_SEG_NONE; n = env->mem_next[n]) {
      const fu_op *op = env->nodes[n].op;
      for (uint32_t r = 0; r < op->n_results; r++) {
        uint32_t v = op->results[r]->id;
        for (uint32_t u = env->use_start[v]; u < env->use_start[v + 1]; u++)
          if (find(env, env->use_node[u]) == y &&
              (!fu_seg_vec_push(&env->cross_v, a, v) || !fu_seg_vec_push(&env->cross_u, a, env->use_node[u])))
            return FU_ERR_NOMEM;
      }
    }
  } else {
    for (uint32_t n = env->mem_head[y]; n != FU_SEG_NONE; n = env->mem_next[n]) {
      const fu_op *op = env->nodes[n].op;
      for (uint32_t k = 0; k < op->n_operands; k++) {
        const fu_value *v = op->operands[k];
        if (v->is_literal || v->id >= env->n_values) continue;
        uint32_t d = env->v_def[v->id];
        if (d != FU_SEG_NONE && find(env, d) == x &&
            (!fu_seg_vec_push(&env->cross_v, a, v->id) || !fu_seg_vec_push(&env->cross_u, a, n)))
          return FU_ERR_NOMEM;
      }
    }
  }
  return FU_OK;
}

/* Counts crossing uses per value; a value all of whose outside uses cross
 * stops being an output: its bytes are what the merge saves. */
static fu_status count_cross(fu_seg_env *env, trial *t) {
  env->touched_v.n = 0;
  t->bytes = 0;
  for (uint32_t i = 0; i < env->cross_v.n; i++) {
    uint32_t v = env->cross_v.v[i];
    if (env->v_cnt[v]++ == 0 && !fu_seg_vec_push(&env->touched_v, &env->alloc, v)) return FU_ERR_NOMEM;
  }
  for (uint32_t i = 0; i < env->touched_v.n; i++) {
    uint32_t v = env->touched_v.v[i];
    if (env->v_cnt[v] == env->v_ext[v]) t->bytes = sat_add(t->bytes, env->v_bytes[v]);
  }
  return FU_OK;
}

static void reset_counts(fu_seg_env *env) {
  for (uint32_t i = 0; i < env->touched_v.n; i++) env->v_cnt[env->touched_v.v[i]] = 0;
  env->touched_v.n = 0;
}

static fu_status trial_begin(fu_seg_env *env, uint32_t x, uint32_t y, trial *t) {
  memset(t, 0, sizeof *t);
  t->x = x;
  t->y = y;
  fu_status st = collect_cross(env, x, y);
  if (st == FU_OK) st = count_cross(env, t);
  if (st != FU_OK) reset_counts(env);
  return st;
}

/* The union's summary, and the scheduler that accepts it (if any). */
static fu_status trial_eval(fu_seg_env *env, trial *t) {
  uint32_t x = t->x, y = t->y;
  fu_seg_summary_union(&t->sum, &env->sum[x], &env->sum[y]);
  for (uint32_t i = 0; i < env->touched_v.n; i++) {
    uint32_t v = env->touched_v.v[i];
    if (env->v_cnt[v] == env->v_ext[v]) fu_seg_summary_add_space(&t->sum, env->v_space[v], -1);
  }
  env->comp_log.n = 0;
  for (uint32_t i = 0; i < env->cross_v.n; i++)
    if (!comp_union(env, env->v_def[env->cross_v.v[i]], env->cross_u.v[i], &t->sum)) return FU_ERR_NOMEM;
  env->newly_down.n = 0;
  if (env->sum[x].first_red >= 0 && env->cross_v.n > 0) {
    /* ops of y that now follow a reduction of x */
    uint32_t stamp = next_mark(env);
    fu_seg_vec *stack = &env->scratch;
    stack->n = 0;
    for (uint32_t i = 0; i < env->cross_v.n; i++) {
      uint32_t d = env->v_def[env->cross_v.v[i]], u = env->cross_u.v[i];
      if (!((env->nodes[d].flags & FU_SEG_NF_REDUCTION) || env->down[d]) || env->down[u] || env->mark[u] == stamp)
        continue;
      env->mark[u] = stamp;
      if (!fu_seg_vec_push(&env->newly_down, &env->alloc, u) || !fu_seg_vec_push(stack, &env->alloc, u))
        return FU_ERR_NOMEM;
    }
    while (stack->n) {
      const fu_op *op = env->nodes[stack->v[--stack->n]].op;
      for (uint32_t r = 0; r < op->n_results; r++) {
        uint32_t v = op->results[r]->id;
        for (uint32_t k = env->use_start[v]; k < env->use_start[v + 1]; k++) {
          uint32_t w = env->use_node[k];
          if (env->down[w] || env->mark[w] == stamp || find(env, w) != y) continue;
          env->mark[w] = stamp;
          if (!fu_seg_vec_push(&env->newly_down, &env->alloc, w) || !fu_seg_vec_push(stack, &env->alloc, w))
            return FU_ERR_NOMEM;
        }
      }
    }
    fu_seg_down_marks dm = {env->down, env->mark, stamp};
    for (uint32_t i = 0; i < env->newly_down.n; i++)
      fu_seg_classify_down(env, env->newly_down.v[i], env->sum[x].first_red, &dm, &t->sum);
  }
  /* facts that need a walk over the union's members, for the few groups
   * they concern: outputs upstream of a clamp (a cat or widening pad), and
   * ops beside a reduction that connect to nothing of it */
  bool clamp = t->sum.first_clamp >= 0, side = t->sum.first_red >= 0 && t->sum.n_comp_nored > 0;
  if (clamp || side) {
    fu_seg_vec *mem = &env->scratch;
    mem->n = 0;
    uint32_t roots[2] = {x, y};
    for (int i = 0; i < 2; i++)
      for (uint32_t n = env->mem_head[roots[i]]; n != FU_SEG_NONE; n = env->mem_next[n])
        if (!fu_seg_vec_push(mem, &env->alloc, n)) return FU_ERR_NOMEM;
    fu_status st = FU_OK;
    if (clamp) st = fu_seg_out_before_clamp(env, mem->v, mem->n, &t->sum.first_out_before_clamp);
    if (st == FU_OK && side) st = fu_seg_count_comp_off(env, mem->v, mem->n, t->sum.red_in, &t->sum.n_comp_off);
    if (st != FU_OK) return st;
  }
  t->kind = fu_seg_choose(env, &t->sum, env->dbg ? t->verdicts : NULL);
  return FU_OK;
}

static void trial_abort(fu_seg_env *env) {
  comp_undo(env);
  reset_counts(env);
  env->newly_down.n = 0;
}

static fu_status trial_commit(fu_seg_env *env, trial *t) {
  uint32_t x = t->x, y = t->y;
  uint32_t root = env->mem_count[x] >= env->mem_count[y] ? x : y;
  fu_status st = fu_seg_graph_merge(&env->g, x, y, root);
  if (st != FU_OK) {
    trial_abort(env);
    return st;
  }
  for (uint32_t i = 0; i < env->touched_v.n; i++) {
    uint32_t v = env->touched_v.v[i];
    env->v_ext[v] -= env->v_cnt[v];
    env->v_cnt[v] = 0;
  }
  env->touched_v.n = 0;
  for (uint32_t i = 0; i < env->newly_down.n; i++) env->down[env->newly_down.v[i]] = 1;
  env->newly_down.n = 0;
  env->comp_log.n = 0;
  /* members: x's then y's */
  uint32_t head = env->mem_head[x], tail = env->mem_tail[y];
  env->mem_next[env->mem_tail[x]] = env->mem_head[y];
  env->mem_count[root] = env->mem_count[x] + env->mem_count[y];
  env->mem_head[root] = head;
  env->mem_tail[root] = tail;
  env->sum[root] = t->sum;
  env->kind[root] = (int8_t)t->kind;
  env->stats.n_merges_done++;
  return FU_OK;
}

/* ---- logging -------------------------------------------------------------- */

static void log_prefix(fu_seg_env *env, fu_strbuf *sb, int step, merge_mode mode, uint32_t x, uint32_t y) {
  fu_strbuf_clear(sb);
  fu_strbuf_printf(sb, "[segment] step %d: %s ", step, mode == MODE_HORIZONTAL ? "horizontal" : "merge");
  fu_seg_put_group(env, sb, x, FU_SEG_NONE);
  fu_strbuf_puts(sb, " + ");
  fu_seg_put_group(env, sb, y, FU_SEG_NONE);
  fu_strbuf_puts(sb, ": ");
}

static void log_line(fu_seg_env *env, const fu_strbuf *prefix, const char *fmt_tail) {
  fu_strbuf_clear(&env->sb);
  if (prefix->data) fu_strbuf_append(&env->sb, prefix->data, prefix->len);
  if (fmt_tail) fu_strbuf_puts(&env->sb, fmt_tail);
}

/* A group without a product is no matmul segment, one without a scan no
 * scan segment: saying so on every rejection is noise. */
static bool silent_verdict(const fu_seg_verdict *v) {
  return v->why == FU_SEG_WHY_NO_MATMUL || v->why == FU_SEG_WHY_NO_SCAN;
}

static void log_rejections(fu_seg_env *env, const fu_strbuf *prefix, const trial *t) {
  for (int i = 0; i < FU_SEG_KIND_COUNT; i++) {
    const fu_seg_scheduler *sc = &fu_seg_schedulers[i];
    if (silent_verdict(&t->verdicts[i])) continue;
    log_line(env, prefix, "rejected by ");
    fu_strbuf_printf(&env->sb, "%s: ", fu_sched_kind_name(sc->kind));
    fu_seg_put_reason(env, &env->sb, &t->verdicts[i], t->x, t->y, false);
    fu_seg_debug_line(env);
  }
}

/* ---- one merge attempt ----------------------------------------------------- */

/* Evaluates the trial begun for (x, y) and commits or undoes it. */
static fu_status decide(fu_seg_env *env, trial *t, int step, merge_mode mode, const fu_value *shared, bool *merged) {
  *merged = false;
  fu_status st = trial_eval(env, t);
  if (st != FU_OK) {
    trial_abort(env);
    return st;
  }
  env->stats.n_merges_tried++;
  fu_strbuf prefix;
  fu_strbuf_init(&prefix, env->alloc);
  if (env->dbg) log_prefix(env, &prefix, step, mode, t->x, t->y);
  uint32_t vx = env->g.version[t->x], vy = env->g.version[t->y];
  uint32_t lo = t->x < t->y ? t->x : t->y, hi = t->x < t->y ? t->y : t->x;
  if (t->kind == FU_SK_NONE) {
    if (env->dbg) log_rejections(env, &prefix, t);
    trial_abort(env);
    fu_strbuf_free(&prefix);
    return fu_seg_reject_put(&env->rejects, lo, hi, lo == t->x ? vx : vy, lo == t->x ? vy : vx) ? FU_OK : FU_ERR_NOMEM;
  }
  uint32_t via = FU_SEG_NONE;
  uint32_t budget = mode == MODE_HORIZONTAL ? FU_SEG_HORIZONTAL_BUDGET : FU_SEG_PRODUCER_BUDGET;
  fu_seg_path path = fu_seg_graph_check(&env->g, t->x, t->y, budget, &via);
  if (env->g.oom) {
    trial_abort(env);
    fu_strbuf_free(&prefix);
    return FU_ERR_NOMEM;
  }
  if (path != FU_SEG_PATH_NONE) {
    if (env->dbg) {
      log_line(env, &prefix, "accepted by ");
      fu_seg_put_kind(env, &env->sb, t->kind, &t->sum);
      if (path == FU_SEG_PATH_CYCLE) {
        fu_strbuf_puts(&env->sb, " but rejected: would form a cycle through ");
        fu_seg_put_group(env, &env->sb, via, FU_SEG_NONE);
      } else {
        fu_strbuf_printf(&env->sb, " but rejected: the cycle check gave up after %u groups", budget);
      }
      fu_seg_debug_line(env);
    }
    if (path == FU_SEG_PATH_CYCLE) env->stats.n_cycle_rejects++;
    trial_abort(env);
    fu_strbuf_free(&prefix);
    return fu_seg_reject_put(&env->rejects, lo, hi, lo == t->x ? vx : vy, lo == t->x ? vy : vx) ? FU_OK : FU_ERR_NOMEM;
  }
  if (env->dbg) {
    log_line(env, &prefix, "accepted by ");
    fu_seg_put_kind(env, &env->sb, t->kind, &t->sum);
    if (mode == MODE_PRODUCER) {
      fu_strbuf_puts(&env->sb, " (removes ");
      fu_seg_put_bytes(&env->sb, t->bytes);
      fu_strbuf_putc(&env->sb, ')');
    } else if (shared) {
      fu_strbuf_puts(&env->sb, " (both read ");
      fu_print_value_ref(&env->sb, shared);
      fu_strbuf_putc(&env->sb, ')');
    } else {
      fu_strbuf_puts(&env->sb, " (independent)");
    }
  }
  fu_strbuf_free(&prefix);
  st = trial_commit(env, t);
  if (st == FU_OK && env->dbg) fu_seg_debug_line(env);
  if (st == FU_OK) *merged = true;
  return st;
}

/* Tries to merge the groups of nodes a and b. */
static fu_status try_merge(fu_seg_env *env, uint32_t a, uint32_t b, int step, merge_mode mode, const fu_value *shared,
                           bool *merged) {
  *merged = false;
  uint32_t x = find(env, a), y = find(env, b);
  if (x == y || !is_compute(env, x) || !is_compute(env, y)) return FU_OK;
  if (env->g.ord[x] > env->g.ord[y]) {
    uint32_t t = x;
    x = y;
    y = t;
  }
  uint32_t lo = x < y ? x : y, hi = x < y ? y : x;
  if (fu_seg_reject_has(&env->rejects, lo, hi, env->g.version[lo], env->g.version[hi])) return FU_OK;
  trial t;
  fu_status st = trial_begin(env, x, y, &t);
  if (st != FU_OK) return st;
  return decide(env, &t, step, mode, shared, merged);
}

/* ---- step 1 ----------------------------------------------------------------- */

static void log_whole(fu_seg_env *env, fu_sched_kind kind, const fu_seg_summary *s, const fu_seg_verdict *verdicts) {
  if (kind != FU_SK_NONE) {
    fu_strbuf_clear(&env->sb);
    fu_strbuf_printf(&env->sb, "[segment] step 1: whole fusion (%u op%s): accepted by ", s->n_ops, s->n_ops == 1 ? "" : "s");
    fu_seg_put_kind(env, &env->sb, kind, s);
    fu_seg_debug_line(env);
    return;
  }
  for (int i = 0; i < FU_SEG_KIND_COUNT; i++) {
    const fu_seg_scheduler *sc = &fu_seg_schedulers[i];
    if (silent_verdict(&verdicts[i])) continue;
    fu_strbuf_clear(&env->sb);
    fu_strbuf_printf(&env->sb, "[segment] step 1: whole fusion: rejected by %s: ", fu_sched_kind_name(sc->kind));
    fu_seg_put_reason(env, &env->sb, &verdicts[i], FU_SEG_NONE, FU_SEG_NONE, true);
    fu_seg_debug_line(env);
  }
}

/* One group of every compute op is only possible when no op left outside
 * (a host op, an existing segment) sits between two of them: returns such
 * an op, or FU_SEG_NONE.  One pass in op order marks what depends on a
 * compute op. */
static fu_status frozen_between(fu_seg_env *env, uint32_t *out) {
  *out = FU_SEG_NONE;
  uint8_t *after = fu_mem_calloc(&env->alloc, env->n_nodes ? env->n_nodes : 1, 1);
  if (!after) return FU_ERR_NOMEM;
  for (uint32_t n = 0; n < env->n_nodes && *out == FU_SEG_NONE; n++) {
    const fu_op *op = env->nodes[n].op;
    bool comp = is_compute(env, n);
    for (uint32_t k = 0; k < op->n_operands; k++) {
      const fu_value *v = op->operands[k];
      if (v->is_literal || v->id >= env->n_values) continue;
      uint32_t d = env->v_def[v->id];
      if (d == FU_SEG_NONE || d == n) continue;
      if (comp && !is_compute(env, d) && after[d]) *out = d;
      if (after[d] || is_compute(env, d)) after[n] = 1;
    }
  }
  fu_mem_free(&env->alloc, after, env->n_nodes ? env->n_nodes : 1);
  return FU_OK;
}

/* Every compute node in one group with root `root` (no graph merges: the
 * union-find parent is set directly). */
static void make_single_group(fu_seg_env *env, const fu_seg_vec *all, const fu_seg_summary *s, fu_sched_kind kind) {
  uint32_t root = all->v[0];
  for (uint32_t i = 0; i < all->n; i++) {
    uint32_t n = all->v[i];
    env->g.parent[n] = root;
    env->mem_next[n] = i + 1 < all->n ? all->v[i + 1] : FU_SEG_NONE;
  }
  env->mem_head[root] = root;
  env->mem_tail[root] = all->v[all->n - 1];
  env->mem_count[root] = all->n;
  env->sum[root] = *s;
  env->kind[root] = (int8_t)kind;
}

/* ---- step 2 ----------------------------------------------------------------- */

/* Step 2 begins with each product's epilogue (segment/matmul.c). */
static fu_status merge_epilogue_op(fu_seg_env *env, uint32_t mm, uint32_t op) {
  bool merged;
  return try_merge(env, mm, op, 2, MODE_PRODUCER, NULL, &merged);
}

/* One group per op (summary, kind of the op alone, its own component) and
 * the graph's edges from every use between top-level ops. */
static fu_status init_groups(fu_seg_env *env) {
  for (uint32_t n = 0; n < env->n_nodes; n++) {
    env->comp_parent[n] = n;
    env->comp_size[n] = 1;
    env->comp_red[n] = (env->nodes[n].flags & FU_SEG_NF_REDUCTION) ? 1 : 0;
    env->mem_head[n] = env->mem_tail[n] = n;
    env->mem_next[n] = FU_SEG_NONE;
    env->mem_count[n] = 1;
    env->kind[n] = FU_SK_NONE;
    if (!is_compute(env, n)) continue;
    fu_seg_summary_single(env, n, &env->sum[n]);
    fu_sched_kind k = fu_seg_choose(env, &env->sum[n], NULL);
    if (k == FU_SK_NONE && env->features && env->features->kinds_off) {
      /* an op that only a turned-off kind takes keeps that kind, alone */
      const fu_feature_set *fs = env->features;
      env->features = NULL;
      k = fu_seg_choose(env, &env->sum[n], NULL);
      env->features = fs;
      if (k != FU_SK_NONE && env->dbg) {
        fu_strbuf_clear(&env->sb);
        fu_strbuf_puts(&env->sb, "[segment] note: only the turned-off kind accepts ");
        fu_seg_put_op(&env->sb, env->nodes[n].op);
        fu_strbuf_printf(&env->sb, " alone; it stays %s, merged with nothing", fu_sched_kind_name(k));
        fu_seg_debug_line(env);
      }
    }
    if (k == FU_SK_NONE) {
      /* every single op has a scheduler; keep going if a new op kind lacks one */
      k = FU_SK_POINTWISE;
      if (env->dbg) {
        fu_strbuf_clear(&env->sb);
        fu_strbuf_puts(&env->sb, "[segment] note: no scheduler accepts ");
        fu_seg_put_op(&env->sb, env->nodes[n].op);
        fu_strbuf_puts(&env->sb, " alone; kept as pointwise");
        fu_seg_debug_line(env);
      }
    }
    env->kind[n] = (int8_t)k;
  }
  for (uint32_t n = 0; n < env->n_nodes; n++) {
    const fu_op *op = env->nodes[n].op;
    for (uint32_t k = 0; k < op->n_operands; k++) {
      const fu_value *v = op->operands[k];
      if (v->is_literal || v->id >= env->n_values) continue;
      uint32_t d = env->v_def[v->id];
      if (d == FU_SEG_NONE || d == n) continue;
      fu_status st = fu_seg_graph_add_edge(&env->g, d, n);
      if (st != FU_OK) return st;
    }
  }
  return FU_OK;
}

/* The greedy merges.  Keys are computed when a candidate is queued; a
 * popped candidate is re-evaluated on the current groups (bytes removed
 * never decrease as groups grow, so a lower value means it must wait: it is
 * queued again). */
static fu_status step2(fu_seg_env *env) {
  fu_seg_heap h;
  fu_seg_heap_init(&h, env->alloc);
  fu_status st = FU_OK;
  for (uint32_t c = 0; c < env->n_nodes && st == FU_OK; c++) {
    if (!is_compute(env, c)) continue;
    uint32_t stamp = next_mark(env);
    const fu_op *op = env->nodes[c].op;
    for (uint32_t k = 0; k < op->n_operands && st == FU_OK; k++) {
      const fu_value *v = op->operands[k];
      if (v->is_literal || v->id >= env->n_values) continue;
      uint32_t d = env->v_def[v->id];
      if (d == FU_SEG_NONE || d == c || !is_compute(env, d) || env->mark[d] == stamp) continue;
      env->mark[d] = stamp;
      trial t;
      st = trial_begin(env, d, c, &t);
      if (st != FU_OK) break;
      reset_counts(env);
      fu_seg_cand cand = {t.bytes, d, c};
      if (!fu_seg_heap_push(&h, cand)) st = FU_ERR_NOMEM;
    }
  }
  fu_seg_cand e;
  while (st == FU_OK && fu_seg_heap_pop(&h, &e)) {
    uint32_t x = find(env, e.p), y = find(env, e.c);
    if (x == y) continue;
    if (env->g.ord[x] > env->g.ord[y]) {
      uint32_t tmp = x;
      x = y;
      y = tmp;
    }
    uint32_t lo = x < y ? x : y, hi = x < y ? y : x;
    if (fu_seg_reject_has(&env->rejects, lo, hi, env->g.version[lo], env->g.version[hi])) continue;
    trial t;
    st = trial_begin(env, x, y, &t);
    if (st != FU_OK) break;
    if (t.bytes < e.bytes) {
      /* the groups changed since this candidate was queued: requeue it */
      reset_counts(env);
      fu_seg_cand again = {t.bytes, e.p, e.c};
      if (!fu_seg_heap_push(&h, again)) st = FU_ERR_NOMEM;
      continue;
    }
    bool merged;
    st = decide(env, &t, 2, MODE_PRODUCER, NULL, &merged);
  }
  fu_seg_heap_free(&h);
  return st;
}

/* ---- step 3 ----------------------------------------------------------------- */

/* Producer->consumer pairs that the queue left (refused at their turn, for
 * a cycle that later merges removed, or queued before their groups grew),
 * in topological order, until a pass merges nothing. */
static fu_status step3_vertical(fu_seg_env *env) {
  fu_seg_vec roots = {0}, succs = {0};
  fu_status st = FU_OK;
  for (int pass = 0; pass < 16 && st == FU_OK; pass++) {
    bool changed = false;
    if ((st = roots_by_ord(env, &roots)) != FU_OK) break;
    for (uint32_t i = 0; i < roots.n && st == FU_OK; i++) {
      uint32_t a = roots.v[i];
      if (find(env, a) != a) continue;
      succs.n = 0;
      if ((st = fu_seg_graph_succs(&env->g, a, &succs)) != FU_OK) break;
      for (uint32_t j = 0; j < succs.n && st == FU_OK; j++) {
        uint32_t b = find(env, succs.v[j]);
        a = find(env, a);
        if (a == b || !is_compute(env, b)) continue;
        bool merged;
        st = try_merge(env, a, b, 3, MODE_PRODUCER, NULL, &merged);
        changed |= merged;
      }
    }
    if (!changed) break;
  }
  fu_seg_vec_free(&roots, &env->alloc);
  fu_seg_vec_free(&succs, &env->alloc);
  return st;
}

enum { MAX_SHARED_ACCS = 4 };

/* Groups that read the same value: one kernel reads it once. */
static fu_status step3_shared(fu_seg_env *env) {
  fu_seg_vec groups = {0};
  fu_status st = FU_OK;
  for (uint32_t i = 0; i < env->n_nodes && st == FU_OK; i++) {
    const fu_op *op = env->nodes[i].op;
    for (uint32_t r = 0; r < op->n_results && st == FU_OK; r++) {
      const fu_value *val = op->results[r];
      uint32_t v = val->id;
      if (env->use_start[v + 1] - env->use_start[v] < 2) continue;
      uint32_t stamp = next_mark(env);
      groups.n = 0;
      for (uint32_t k = env->use_start[v]; k < env->use_start[v + 1]; k++) {
        uint32_t g = find(env, env->use_node[k]);
        if (!is_compute(env, g) || env->mark[g] == stamp || g == find(env, i)) continue;
        env->mark[g] = stamp;
        if (!fu_seg_vec_push(&groups, &env->alloc, g)) st = FU_ERR_NOMEM;
      }
      if (st != FU_OK || groups.n < 2) continue;
      if (!sort_nodes(env, &groups, true)) {
        st = FU_ERR_NOMEM;
        break;
      }
      uint32_t accs[MAX_SHARED_ACCS], n_accs = 0;
      for (uint32_t k = 0; k < groups.n && st == FU_OK; k++) {
        uint32_t g = find(env, groups.v[k]);
        bool merged = false;
        for (uint32_t j = 0; j < n_accs && !merged && st == FU_OK; j++) {
          uint32_t acc = find(env, accs[j]);
          if (acc == g) {
            merged = true;
            break;
          }
          st = try_merge(env, acc, g, 3, MODE_HORIZONTAL, val, &merged);
        }
        if (!merged && n_accs < MAX_SHARED_ACCS) accs[n_accs++] = g;
      }
    }
  }
  fu_seg_vec_free(&groups, &env->alloc);
  return st;
}

/* Independent groups of one kind, in topological order, into one kernel
 * while a scheduler accepts them together. */
static fu_status step3_independent(fu_seg_env *env) {
  fu_seg_vec roots = {0};
  fu_status st = roots_by_ord(env, &roots);
  uint32_t acc[FU_SK_COUNT];
  for (int k = 0; k < FU_SK_COUNT; k++) acc[k] = FU_SEG_NONE;
  for (uint32_t i = 0; i < roots.n && st == FU_OK; i++) {
    uint32_t r = roots.v[i];
    if (find(env, r) != r) continue;
    int k = env->kind[r];
    if (k <= FU_SK_NONE || k >= FU_SK_COUNT) continue;
    if (acc[k] == FU_SEG_NONE) {
      acc[k] = r;
      continue;
    }
    bool merged;
    st = try_merge(env, acc[k], r, 3, MODE_HORIZONTAL, NULL, &merged);
    acc[k] = merged ? find(env, r) : r;
  }
  fu_seg_vec_free(&roots, &env->alloc);
  return st;
}

enum { MAX_BESIDE_REDUCTIONS = 4 };

/* Pointwise groups beside a reduction group, into its kernel when the
 * reduction scheduler takes them (inner reductions whose input space they
 * cover: fu_seg_accept_reduction says why): one launch fewer.  The first
 * few inner reduction groups in topological order are offered each
 * pointwise group whose outputs lie in their input space. */
static fu_status step3_beside(fu_seg_env *env) {
  fu_seg_vec roots = {0};
  fu_status st = roots_by_ord(env, &roots);
  uint32_t reds[MAX_BESIDE_REDUCTIONS], n_reds = 0;
  for (uint32_t i = 0; i < roots.n && st == FU_OK && n_reds < MAX_BESIDE_REDUCTIONS; i++)
    if (env->kind[roots.v[i]] == FU_SK_REDUCTION && env->nodes[env->sum[roots.v[i]].first_red].red_inner)
      reds[n_reds++] = roots.v[i];
  for (uint32_t i = 0; i < roots.n && st == FU_OK && n_reds > 0; i++) {
    uint32_t p = roots.v[i];
    if (find(env, p) != p || env->kind[p] != FU_SK_POINTWISE || env->sum[p].n_views == env->sum[p].n_ops) continue;
    bool merged = false;
    const fu_seg_summary *ps = &env->sum[p];
    for (uint32_t j = 0; j < n_reds && !merged && st == FU_OK; j++) {
      uint32_t r = find(env, reds[j]);
      if (!ps->spaces_overflow && ps->n_spaces == 1 && ps->space[0] == env->sum[r].red_in)
        st = try_merge(env, r, p, 3, MODE_HORIZONTAL, NULL, &merged);
    }
  }
  fu_seg_vec_free(&roots, &env->alloc);
  return st;
}

/* ---- step 4 ----------------------------------------------------------------- */

/* A group of views becomes host ops when every op only reinterprets memory:
 * reshapes need a dense operand, fusion outputs must come out dense, and a
 * kernel must not read a permuted alias it was not chosen for.  `set` asks
 * for a copy and stays in a kernel. */
static fu_status step4_group(fu_seg_env *env, uint32_t r, fu_seg_vec *members) {
  fu_status st = fu_seg_members_sorted(env, r, members);
  if (st != FU_OK) return st;
  const fu_op *bad = NULL;
  const fu_value *bad_v = NULL;
  const char *why = NULL;
  uint32_t done = 0;
  for (; done < members->n; done++) {
    const fu_op *op = env->nodes[members->v[done]].op;
    bad = op;
    if (op->kind == FU_OP_SET) {
      why = "copies its operand";
      break;
    }
    if (op->n_operands < 1 || op->n_results < 1 || op->operands[0]->is_literal ||
        op->operands[0]->id >= env->n_values) {
      why = "has no tensor operand";
      break;
    }
    uint8_t f = env->v_flags[op->operands[0]->id];
    if (op->kind == FU_OP_RESHAPE && !(f & FU_SEG_VF_CONTIG)) {
      why = "reshapes a value that is not dense row-major";
      break;
    }
    env->v_flags[op->results[0]->id] = fu_seg_view_result_flags(op, f);
  }
  for (uint32_t i = 0; i < members->n && !why; i++) {
    const fu_op *op = env->nodes[members->v[i]].op;
    const fu_value *v = op->results[0];
    uint8_t f = env->v_flags[v->id];
    for (uint32_t k = env->use_start[v->id]; k < env->use_start[v->id + 1] && !why; k++) {
      uint32_t u = env->use_node[k];
      const fu_op *user = env->nodes[u].op;
      bool kernel = user->kind == FU_OP_SEGMENT ||
                    (is_compute(env, u) && find(env, u) != r && !env->host_group[find(env, u)]);
      /* cuBLASLt reads a permuted operand as a transpose */
      bool product = is_compute(env, u) && env->kind[find(env, u)] == FU_SK_MATMUL;
      bad = op;
      bad_v = v;
      if (user->kind == FU_OP_OUTPUT && !(f & FU_SEG_VF_CONTIG))
        why = "would make a fusion output that is not dense row-major:";
      else if (user->host && !(f & FU_SEG_VF_CONTIG)) /* strip-bookend-views made it a view of a dense value */
        why = "would hand a host view a value that is not dense row-major:";
      else if (kernel && !product && (f & FU_SEG_VF_PERM))
        why = "would hand a kernel a permuted alias:";
    }
  }
  if (why) {
    /* values computed by kernels are dense: restore that fact */
    for (uint32_t i = 0; i < done && i < members->n; i++) {
      const fu_op *op = env->nodes[members->v[i]].op;
      if (op->n_results >= 1) env->v_flags[op->results[0]->id] = FU_SEG_VF_CONTIG;
    }
  } else {
    env->host_group[r] = true;
    env->stats.n_host_ops += members->n;
  }
  if (env->dbg) {
    fu_strbuf_clear(&env->sb);
    fu_strbuf_puts(&env->sb, "[segment] step 4: ");
    fu_seg_put_group(env, &env->sb, r, FU_SEG_NONE);
    if (!why) {
      fu_strbuf_puts(&env->sb, ": only views that reinterpret memory: host ops, no kernel");
    } else {
      fu_strbuf_puts(&env->sb, ": stays a kernel: ");
      fu_seg_put_op(&env->sb, bad);
      fu_strbuf_printf(&env->sb, " %s", why);
      if (bad_v) {
        fu_strbuf_putc(&env->sb, ' ');
        fu_print_value_ref(&env->sb, bad_v);
      }
    }
    fu_seg_debug_line(env);
  }
  return FU_OK;
}

static fu_status step4(fu_seg_env *env) {
  fu_seg_vec roots = {0}, members = {0};
  fu_status st = roots_by_ord(env, &roots);
  for (uint32_t i = 0; i < roots.n && st == FU_OK; i++) {
    uint32_t r = roots.v[i];
    if (env->sum[r].n_views != env->sum[r].n_ops || env->sum[r].n_ops == 0) continue;
    st = step4_group(env, r, &members);
  }
  fu_seg_vec_free(&roots, &env->alloc);
  fu_seg_vec_free(&members, &env->alloc);
  return st;
}

/* ---- the whole algorithm ------------------------------------------------------ */

fu_status fu_seg_partition(fu_seg_env *env) {
  fu_seg_vec all = {0};
  fu_status st = FU_OK;
  for (uint32_t n = 0; n < env->n_nodes; n++)
    if (is_compute(env, n) && !fu_seg_vec_push(&all, &env->alloc, n)) st = FU_ERR_NOMEM;
  env->stats.n_compute_ops = all.n;
  if (st != FU_OK || all.n == 0) {
    fu_seg_vec_free(&all, &env->alloc);
    return st;
  }
  fu_seg_summary whole;
  fu_seg_verdict verdicts[FU_SEG_KIND_COUNT];
  st = fu_seg_summary_scan(env, all.v, all.n, &whole);
  if (st == FU_OK) st = init_groups(env);
  uint32_t between = FU_SEG_NONE;
  if (st == FU_OK) st = frozen_between(env, &between);
  if (st == FU_OK) {
    fu_sched_kind k = fu_seg_choose(env, &whole, env->dbg ? verdicts : NULL);
    if (k != FU_SK_NONE && between != FU_SEG_NONE) {
      if (env->dbg) {
        fu_strbuf_clear(&env->sb);
        fu_strbuf_printf(&env->sb, "[segment] step 1: whole fusion (%u op%s): accepted by ", whole.n_ops,
                         whole.n_ops == 1 ? "" : "s");
        fu_seg_put_kind(env, &env->sb, k, &whole);
        fu_strbuf_puts(&env->sb, " but rejected: ");
        fu_seg_put_op(&env->sb, env->nodes[between].op);
        fu_strbuf_puts(&env->sb, " stays outside and sits between its ops");
        fu_seg_debug_line(env);
      }
      k = FU_SK_NONE;
    } else if (env->dbg) {
      log_whole(env, k, &whole, verdicts);
    }
    if (k != FU_SK_NONE) {
      make_single_group(env, &all, &whole, k);
      env->stats.whole_fusion = true;
    } else {
      st = fu_seg_merge_epilogues(env, merge_epilogue_op);
      if (st == FU_OK) st = step2(env);
      if (st == FU_OK) st = step3_vertical(env);
      /* --disable=horizontal: only producer->consumer merges */
      bool horizontal = !env->features || !(env->features->off & (1u << FU_FEATURE_HORIZONTAL));
      if (st == FU_OK && horizontal) st = step3_shared(env);
      if (st == FU_OK && horizontal) st = step3_independent(env);
      if (st == FU_OK && horizontal) st = step3_beside(env);
    }
  }
  if (st == FU_OK) st = step4(env);
  fu_seg_vec_free(&all, &env->alloc);
  return st;
}
