/* fuser: recomputing cheap prologues in the segments that read them (step 5
 * of the segment pass, docs/passes.md "Recomputation").
 *
 * The partition gives every op to one group.  When a group computes a
 * full-size value from fusion-level values with a few cheap pointwise ops
 * (a cast of a bf16 input to f32, `dy * w`, `(x - mean) * rstd`) and
 * another group reads it, the value goes through global memory: written at
 * its own width by one kernel and read by the next, where reading the
 * chain's narrower leaves again would cost less.  This step copies such a
 * chain next to each reader in another group, so that after a second
 * partition the reader's segment computes the value itself; the original
 * ops that lose their last use are deleted.  The second partition, run on
 * the rewritten fusion, is the one the segment pass writes. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* A chain longer than this is not copied: the point is a short prologue,
 * not a second copy of a long computation. */
#define RECOMPUTE_MAX_OPS 12

typedef struct rc_state {
  fu_seg_env *env;
  fu_seg_vec chain;   /* nodes of the chain being checked, in node order after sorting */
  fu_seg_vec leaves;  /* value ids of its leaves */
  fu_seg_vec removed; /* nodes whose ops may have lost their last use */
  uint32_t *seen;     /* per node / value stamps (n_nodes + n_values) */
  uint32_t stamp;
  fu_value **clone_of; /* per value id: the copy made for clone_grp */
  uint32_t *clone_grp;
  uint32_t n_cloned_ops;
} rc_state;

/* An op whose copy is cheap and safe: pointwise without a math-library call
 * (those are not cheap, and two copies could round differently), a cast, or
 * a broadcast; never random numbers or indexing. */
static bool recomputable_op(const fu_seg_env *env, uint32_t n) {
  const fu_op *op = env->nodes[n].op;
  if (op->host || op->n_results != 1 || op->n_operands > 4 || (env->nodes[n].flags & (FU_SEG_NF_TRANSP | FU_SEG_NF_INDEX))) return false;
  if (op->kind == FU_OP_BROADCAST || op->kind == FU_OP_BROADCAST_IN_DIM) return true;
  return fu_op_has(op->kind, FU_OF_POINTWISE) && !fu_op_has(op->kind, FU_OF_APPROX | FU_OF_NO_CSE | FU_OF_VIEW) &&
         fu_op_info_of(op->kind)->cls != FU_OC_RNG;
}

/* Collects the chain computing v inside group g (every op of it
 * recomputable, at most RECOMPUTE_MAX_OPS) and its leaves (values from
 * outside g); false when v's computation does not qualify. */
static bool collect_chain(rc_state *s, const fu_value *v, uint32_t g) {
  fu_seg_env *env = s->env;
  if (v->is_literal || v->id >= env->n_values) return true;
  uint32_t slot = env->n_nodes + v->id;
  if (s->seen[slot] == s->stamp) return true;
  s->seen[slot] = s->stamp;
  uint32_t d = env->v_def[v->id];
  bool inside = d != FU_SEG_NONE && (env->nodes[d].flags & FU_SEG_NF_COMPUTE) && fu_seg_graph_find(&env->g, d) == g;
  if (!inside) return fu_seg_vec_push(&s->leaves, &env->alloc, v->id);
  if (!recomputable_op(env, d) || s->chain.n >= RECOMPUTE_MAX_OPS) return false;
  if (!fu_seg_vec_push(&s->chain, &env->alloc, d)) return false;
  const fu_op *op = env->nodes[d].op;
  for (uint32_t k = 0; k < op->n_operands; k++)
    if (!collect_chain(s, op->operands[k], g)) return false;
  return true;
}

/* The bytes of the collected chain's leaves: what the reader's kernel
 * reads again in place of the value. */
static uint64_t leaf_bytes(const rc_state *s) {
  uint64_t bytes = 0;
  for (uint32_t i = 0; i < s->leaves.n; i++) bytes += s->env->v_bytes[s->leaves.v[i]];
  return bytes;
}

/* A copy of v's chain for readers in group g, inserted before `at`; the
 * copies are memoized per group, so a value two readers need is copied
 * once.  NULL when memory runs out. */
static fu_value *clone_value(rc_state *s, fu_value *v, uint32_t g, fu_op *at) {
  fu_seg_env *env = s->env;
  if (v->is_literal || v->id >= env->n_values) return v;
  uint32_t d = env->v_def[v->id];
  bool inside = d != FU_SEG_NONE && s->seen[d] == s->stamp; /* a chain node */
  if (!inside) return v;
  if (s->clone_grp[v->id] == g && s->clone_of[v->id]) return s->clone_of[v->id];
  const fu_op *op = env->nodes[d].op;
  fu_value *ops[4];
  for (uint32_t k = 0; k < op->n_operands; k++)
    if (!(ops[k] = clone_value(s, op->operands[k], g, at))) return NULL;
  fu_module *m = env->f->module;
  fu_op *n = fu_op_new(env->f, op->kind, ops, op->n_operands, 1, op->loc);
  if (!n || !fu_op_attrs_copy(m, op, n)) return NULL;
  fu_value *r = n->results[0];
  r->type.dtype = v->type.dtype;
  r->type.rank = v->type.rank;
  r->type.dims = v->type.rank > 0 ? fu_dims_copy(m, v->type.dims, v->type.rank) : NULL;
  if (v->type.rank > 0 && !r->type.dims) return NULL;
  if (v->name) {
    char name[256];
    snprintf(name, sizeof name, "%s_r%u", v->name, (unsigned)r->id); /* ids are unique: copies for two groups differ */
    fu_value_set_name(m, r, name);
  }
  fu_block_insert_before(at, n);
  s->clone_of[v->id] = r;
  s->clone_grp[v->id] = g;
  s->n_cloned_ops++;
  return r;
}

/* One line of --debug=segment for a copied value. */
static void explain(rc_state *s, const fu_value *v, const fu_op *reader) {
  fu_seg_env *env = s->env;
  if (!env->dbg) return;
  uint64_t leaves = leaf_bytes(s);
  fu_strbuf_clear(&env->sb);
  fu_strbuf_printf(&env->sb, "[segment] recompute %%%s (%u op%s) for ", v->name ? v->name : "?", s->chain.n,
                   s->chain.n == 1 ? "" : "s");
  fu_seg_put_op(&env->sb, reader);
  fu_strbuf_puts(&env->sb, " in its own segment: reads ");
  fu_seg_put_bytes(&env->sb, leaves);
  fu_strbuf_puts(&env->sb, " instead of passing ");
  fu_seg_put_bytes(&env->sb, env->v_bytes[v->id]);
  fu_strbuf_puts(&env->sb, " through global memory");
  fu_seg_debug_line(env);
}

/* Deletes the ops of `removed` whose results lost their last use, and then
 * their operands' defining ops in turn. */
static fu_status delete_dead(rc_state *s) {
  fu_seg_env *env = s->env;
  fu_use_map uses;
  fu_status st = fu_use_map_build(env->f, &uses);
  if (st != FU_OK) return st;
  uint32_t *alive_uses = fu_mem_calloc(&env->alloc, uses.n_values ? uses.n_values : 1, sizeof *alive_uses);
  if (!alive_uses) {
    fu_use_map_free(&uses);
    return FU_ERR_NOMEM;
  }
  for (uint32_t v = 0; v < uses.n_values; v++) alive_uses[v] = uses.start[v + 1] - uses.start[v];
  for (uint32_t i = 0; i < s->removed.n; i++) {
    fu_op *op = env->nodes[s->removed.v[i]].op;
    if (!op->parent || op->results[0]->id >= uses.n_values || alive_uses[op->results[0]->id]) continue;
    fu_block_remove(op->parent, op);
    for (uint32_t k = 0; k < op->n_operands; k++) {
      const fu_value *u = op->operands[k];
      if (u->is_literal || u->id >= uses.n_values || u->id >= env->n_values) continue;
      if (--alive_uses[u->id] == 0) {
        uint32_t d = env->v_def[u->id];
        if (d != FU_SEG_NONE && (env->nodes[d].flags & FU_SEG_NF_COMPUTE) && recomputable_op(env, d) &&
            !fu_seg_vec_push(&s->removed, &env->alloc, d))
          st = FU_ERR_NOMEM;
      }
    }
  }
  fu_mem_free(&env->alloc, alive_uses, (uses.n_values ? uses.n_values : 1) * sizeof *alive_uses);
  fu_use_map_free(&uses);
  return st;
}

/* The readers' kinds that absorb a copied prologue: kernels built from
 * pointwise ops around their main op (a matmul or a scan segment takes only
 * its own ops' epilogue shapes). */
static bool absorbing_kind(int kind) {
  return kind == FU_SK_POINTWISE || kind == FU_SK_REDUCTION || kind == FU_SK_PERSISTENT;
}

/* A value is fed through this step when the group reading it differs from
 * the one computing it, both are kernel groups of absorbing kinds, and the
 * chain computing it is short, cheap and narrower at its leaves. */
static fu_status recompute_reads(rc_state *s) {
  fu_seg_env *env = s->env;
  fu_status st = FU_OK;
  for (uint32_t i = 0; i < env->n_nodes && st == FU_OK; i++) {
    if (!(env->nodes[i].flags & FU_SEG_NF_COMPUTE)) continue;
    uint32_t gi = fu_seg_graph_find(&env->g, i);
    if (env->host_group[gi] || !absorbing_kind(env->kind[gi])) continue;
    fu_op *reader = env->nodes[i].op;
    for (uint32_t k = 0; k < reader->n_operands && st == FU_OK; k++) {
      fu_value *v = reader->operands[k];
      if (v->is_literal || v->id >= env->n_values || env->v_space[v->id] < 0) continue;
      uint32_t d = env->v_def[v->id];
      if (d == FU_SEG_NONE || !(env->nodes[d].flags & FU_SEG_NF_COMPUTE)) continue;
      uint32_t gd = fu_seg_graph_find(&env->g, d);
      if (gd == gi || env->host_group[gd] || !absorbing_kind(env->kind[gd])) continue;
      s->stamp++;
      s->chain.n = s->leaves.n = 0;
      /* a copy pays when the leaves take fewer bytes than the value, which
       * one kernel writes and the other reads */
      if (!collect_chain(s, v, gd) || leaf_bytes(s) >= env->v_bytes[v->id]) continue;
      for (uint32_t c = 0; c < s->chain.n; c++) s->seen[s->chain.v[c]] = s->stamp;
      uint32_t before = s->n_cloned_ops;
      fu_value *copy = clone_value(s, v, gi, reader);
      if (!copy) {
        st = FU_ERR_NOMEM;
        break;
      }
      if (s->n_cloned_ops > before) explain(s, v, reader);
      reader->operands[k] = copy;
      for (uint32_t c = 0; c < s->chain.n && st == FU_OK; c++)
        if (!fu_seg_vec_push(&s->removed, &env->alloc, s->chain.v[c])) st = FU_ERR_NOMEM;
    }
  }
  if (st == FU_OK && s->n_cloned_ops) st = delete_dead(s);
  return st;
}

fu_status fu_seg_recompute(fu_seg_env *env, uint32_t *n_cloned_ops) {
  *n_cloned_ops = 0;
  rc_state s = {.env = env};
  size_t n_seen = (size_t)env->n_nodes + env->n_values + 1;
  s.seen = fu_mem_calloc(&env->alloc, n_seen, sizeof *s.seen);
  s.clone_of = fu_mem_calloc(&env->alloc, env->n_values + 1, sizeof *s.clone_of);
  s.clone_grp = fu_mem_calloc(&env->alloc, env->n_values + 1, sizeof *s.clone_grp);
  fu_status st = s.seen && s.clone_of && s.clone_grp ? FU_OK : FU_ERR_NOMEM;
  if (st == FU_OK) {
    for (uint32_t v = 0; v <= env->n_values; v++) s.clone_grp[v] = FU_SEG_NONE;
    st = recompute_reads(&s);
  }
  *n_cloned_ops = s.n_cloned_ops;
  fu_mem_free(&env->alloc, s.seen, n_seen * sizeof *s.seen);
  fu_mem_free(&env->alloc, s.clone_of, (env->n_values + 1) * sizeof *s.clone_of);
  fu_mem_free(&env->alloc, s.clone_grp, (env->n_values + 1) * sizeof *s.clone_grp);
  fu_seg_vec_free(&s.chain, &env->alloc);
  fu_seg_vec_free(&s.leaves, &env->alloc);
  fu_seg_vec_free(&s.removed, &env->alloc);
  return st;
}
