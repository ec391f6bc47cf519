/* fuser: the `segment` pass (see include/fuser/segment.h and the "segment"
 * section of docs/passes.md).
 *
 * This file is the pass entry and the last stage: once merge.c has
 * partitioned the compute ops into groups, it writes the groups into the IR
 * as segment ops, in a topological order of the groups and of the ops left
 * outside (inputs, host ops, outputs, existing segments), named g0, g1, ...
 * in that order.  Everything that can fail (allocation) happens before the
 * fusion body is relinked, so an error leaves the fusion unchanged. */
#include <stdio.h>
#include <string.h>

#include "fuser/dot.h"
#include "fuser/print.h"
#include "internal.h"

static const fu_pass_option_def options[] = {
    {"dot", "write a Graphviz graph of the segments of every fusion to this file", NULL},
    {NULL, NULL, NULL},
};

const fu_pass_def fu_pass_segment = {
    "segment",
    "partition each fusion into segments that one scheduler kind compiles into one kernel each",
    options,
    fu_pass_run_segment,
};

typedef struct rewrite_state {
  uint32_t *unit_of;  /* node -> unit (group root, or the node itself) */
  uint32_t *indeg;
  uint32_t *out_start;
  uint32_t *out_dst;
  uint32_t *order; /* units in emission order */
  uint32_t n_order;
  fu_op **seg_op;       /* per group root */
  uint32_t *mem_start;  /* per group root: into members */
  uint32_t *members;    /* sorted members of every group, group after group */
  uint32_t n_members;
  uint32_t *v_stamp;
  size_t n_edges;
} rewrite_state;

static void rewrite_free(fu_seg_env *env, rewrite_state *rs) {
  const fu_allocator *a = &env->alloc;
  size_t n = env->n_nodes ? env->n_nodes : 1;
  fu_mem_free(a, rs->unit_of, n * sizeof *rs->unit_of);
  fu_mem_free(a, rs->indeg, n * sizeof *rs->indeg);
  fu_mem_free(a, rs->out_start, (n + 1) * sizeof *rs->out_start);
  fu_mem_free(a, rs->out_dst, (rs->n_edges ? rs->n_edges : 1) * sizeof *rs->out_dst);
  fu_mem_free(a, rs->order, n * sizeof *rs->order);
  fu_mem_free(a, rs->seg_op, n * sizeof *rs->seg_op);
  fu_mem_free(a, rs->mem_start, n * sizeof *rs->mem_start);
  fu_mem_free(a, rs->members, n * sizeof *rs->members);
  fu_mem_free(a, rs->v_stamp, (env->n_values ? env->n_values : 1) * sizeof *rs->v_stamp);
}

static bool is_group_unit(fu_seg_env *env, const rewrite_state *rs, uint32_t u) {
  return (env->nodes[u].flags & FU_SEG_NF_COMPUTE) && rs->unit_of[u] == u &&
         !env->host_group[fu_seg_graph_find(&env->g, u)];
}

/* The units in a topological order; among ready units the one holding the
 * earliest op goes first, so the original op order survives where it can. */
static fu_status order_units(fu_seg_env *env, rewrite_state *rs) {
  uint32_t n = env->n_nodes;
  for (uint32_t i = 0; i < n; i++) {
    bool grouped = (env->nodes[i].flags & FU_SEG_NF_COMPUTE) && !env->host_group[fu_seg_graph_find(&env->g, i)];
    rs->unit_of[i] = grouped ? fu_seg_graph_find(&env->g, i) : i;
  }
  for (int pass = 0; pass < 2; pass++) {
    for (uint32_t i = 0; i < n; i++) {
      const fu_op *op = env->nodes[i].op;
      for (uint32_t k = 0; k < op->n_operands; k++) {
        const fu_value *v = op->operands[k];
        if (v->is_literal || v->id >= env->n_values || env->v_def[v->id] == FU_SEG_NONE) continue;
        uint32_t ud = rs->unit_of[env->v_def[v->id]], ui = rs->unit_of[i];
        if (ud == ui) continue;
        if (pass == 0) {
          rs->out_start[ud + 1]++;
          rs->indeg[ui]++;
          rs->n_edges++;
        } else {
          rs->out_dst[rs->mem_start[ud]++] = ui; /* mem_start doubles as the fill cursor */
        }
      }
    }
    if (pass == 0) {
      for (uint32_t i = 0; i < n; i++) rs->out_start[i + 1] += rs->out_start[i];
      rs->out_dst = fu_mem_calloc(&env->alloc, rs->n_edges ? rs->n_edges : 1, sizeof *rs->out_dst);
      if (!rs->out_dst) return FU_ERR_NOMEM;
      for (uint32_t i = 0; i < n; i++) rs->mem_start[i] = rs->out_start[i];
    }
  }
  fu_seg_heap h;
  fu_seg_heap_init(&h, env->alloc);
  uint32_t n_units = 0;
  fu_status st = FU_OK;
  for (uint32_t u = 0; u < n && st == FU_OK; u++) {
    if (rs->unit_of[u] != u) continue;
    n_units++;
    uint32_t key = is_group_unit(env, rs, u) ? (uint32_t)env->sum[u].first_op : u;
    fu_seg_cand c = {0, key, u};
    if (rs->indeg[u] == 0 && !fu_seg_heap_push(&h, c)) st = FU_ERR_NOMEM;
  }
  fu_seg_cand c;
  while (st == FU_OK && fu_seg_heap_pop(&h, &c)) {
    uint32_t u = c.c;
    rs->order[rs->n_order++] = u;
    for (uint32_t e = rs->out_start[u]; e < rs->out_start[u + 1]; e++) {
      uint32_t w = rs->out_dst[e];
      if (--rs->indeg[w] == 0) {
        uint32_t key = is_group_unit(env, rs, w) ? (uint32_t)env->sum[w].first_op : w;
        fu_seg_cand cw = {0, key, w};
        if (!fu_seg_heap_push(&h, cw)) st = FU_ERR_NOMEM;
      }
    }
  }
  fu_seg_heap_free(&h);
  if (st == FU_OK && rs->n_order != n_units) {
    fu_error(env->diag, env->f->loc, "segment: internal error: the segments of fusion '@%s' form a cycle",
             env->f->name ? env->f->name : "");
    st = FU_ERR_UNSUPPORTED;
  }
  return st;
}

/* Names of the segments already in the fusion (usually none). */
static fu_status existing_names(fu_seg_env *env, fu_seg_vec *out) {
  for (uint32_t i = 0; i < env->n_nodes; i++)
    if (env->nodes[i].op->kind == FU_OP_SEGMENT && env->nodes[i].op->u.segment.name &&
        !fu_seg_vec_push(out, &env->alloc, i))
      return FU_ERR_NOMEM;
  return FU_OK;
}

static bool name_taken(const fu_seg_env *env, const fu_seg_vec *existing, const char *name) {
  for (uint32_t i = 0; i < existing->n; i++)
    if (strcmp(env->nodes[existing->v[i]].op->u.segment.name, name) == 0) return true;
  return false;
}

/* A segment op for group u: inputs in order of first use, outputs in op
 * order, a fresh body; not yet linked anywhere. */
static fu_status make_segment(fu_seg_env *env, rewrite_state *rs, uint32_t u, uint32_t *next_name, uint32_t stamp,
                              const fu_seg_vec *existing) {
  fu_module *m = env->f->module;
  uint32_t start = rs->n_members;
  fu_seg_vec mem = {0};
  fu_status st = fu_seg_members_sorted(env, u, &mem);
  if (st != FU_OK) return st;
  for (uint32_t i = 0; i < mem.n; i++) rs->members[rs->n_members++] = mem.v[i];
  fu_seg_vec_free(&mem, &env->alloc);
  rs->mem_start[u] = start;
  uint32_t count = rs->n_members - start;

  uint32_t n_in = 0, n_out = 0;
  for (int pass = 0; pass < 2; pass++) {
    fu_value **ins = NULL, **outs = NULL;
    if (pass == 1) {
      ins = n_in ? fu_arena_calloc(m->arena, n_in, sizeof *ins) : NULL;
      outs = n_out ? fu_arena_calloc(m->arena, n_out, sizeof *outs) : NULL;
      if ((n_in && !ins) || (n_out && !outs)) return FU_ERR_NOMEM;
      n_in = n_out = 0;
    }
    for (uint32_t i = 0; i < count; i++) {
      const fu_op *op = env->nodes[rs->members[start + i]].op;
      for (uint32_t k = 0; k < op->n_operands; k++) {
        fu_value *v = op->operands[k];
        if (v->is_literal || v->id >= env->n_values || env->v_def[v->id] == FU_SEG_NONE) continue;
        if (rs->unit_of[env->v_def[v->id]] == u || rs->v_stamp[v->id] == stamp + (uint32_t)pass) continue;
        rs->v_stamp[v->id] = stamp + (uint32_t)pass;
        if (ins) ins[n_in] = v;
        n_in++;
      }
      for (uint32_t r = 0; r < op->n_results; r++) {
        fu_value *v = op->results[r];
        bool used_outside = false;
        for (uint32_t k = env->use_start[v->id]; k < env->use_start[v->id + 1] && !used_outside; k++)
          used_outside = rs->unit_of[env->use_node[k]] != u;
        if (!used_outside) continue;
        if (outs) outs[n_out] = v;
        n_out++;
      }
    }
    if (pass == 1) {
      const fu_op *first = env->nodes[rs->members[start]].op;
      fu_op *seg = fu_op_new(env->f, FU_OP_SEGMENT, ins, n_in, 0, first->loc);
      fu_block *body = fu_arena_calloc(m->arena, 1, sizeof *body);
      char name[32];
      do snprintf(name, sizeof name, "g%u", (*next_name)++);
      while (name_taken(env, existing, name));
      char *nm = fu_arena_strdup(m->arena, name);
      if (!seg || !body || !nm) return FU_ERR_NOMEM;
      body->parent_op = seg;
      body->fusion = env->f;
      seg->u.segment.name = nm;
      seg->u.segment.kind = (fu_sched_kind)env->kind[u];
      seg->u.segment.outputs = outs;
      seg->u.segment.n_outputs = n_out;
      seg->u.segment.body = body;
      rs->seg_op[u] = seg;
    }
  }
  return FU_OK;
}

static void log_results(fu_seg_env *env, rewrite_state *rs) {
  uint32_t n_host = 0;
  for (uint32_t i = 0; i < env->n_nodes; i++)
    if (env->nodes[i].op->host) n_host++;
  for (uint32_t k = 0; k < rs->n_order; k++) {
    uint32_t u = rs->order[k];
    if (!rs->seg_op[u]) continue;
    fu_strbuf_clear(&env->sb);
    fu_strbuf_printf(&env->sb, "[segment] result: @%s ", rs->seg_op[u]->u.segment.name);
    fu_seg_put_kind(env, &env->sb, (fu_sched_kind)env->kind[u], &env->sum[u]);
    fu_strbuf_printf(&env->sb, " (%u op%s): ", env->mem_count[u], env->mem_count[u] == 1 ? "" : "s");
    fu_seg_put_group(env, &env->sb, u, FU_SEG_NONE);
    fu_seg_debug_line(env);
  }
  fu_strbuf_clear(&env->sb);
  fu_strbuf_printf(&env->sb, "[segment] result: fusion @%s: %u kernel segment%s, %u host op%s",
                   env->f->name ? env->f->name : "", env->stats.n_segments, env->stats.n_segments == 1 ? "" : "s",
                   n_host, n_host == 1 ? "" : "s");
  fu_seg_debug_line(env);
}

static fu_status rewrite(fu_seg_env *env) {
  rewrite_state rs;
  memset(&rs, 0, sizeof rs);
  const fu_allocator *a = &env->alloc;
  size_t n = env->n_nodes ? env->n_nodes : 1;
  rs.unit_of = fu_mem_calloc(a, n, sizeof *rs.unit_of);
  rs.indeg = fu_mem_calloc(a, n, sizeof *rs.indeg);
  rs.out_start = fu_mem_calloc(a, n + 1, sizeof *rs.out_start);
  rs.order = fu_mem_calloc(a, n, sizeof *rs.order);
  rs.seg_op = fu_mem_calloc(a, n, sizeof *rs.seg_op);
  rs.mem_start = fu_mem_calloc(a, n, sizeof *rs.mem_start);
  rs.members = fu_mem_calloc(a, n, sizeof *rs.members);
  rs.v_stamp = fu_mem_calloc(a, env->n_values ? env->n_values : 1, sizeof *rs.v_stamp);
  fu_status st = FU_OK;
  if (!rs.unit_of || !rs.indeg || !rs.out_start || !rs.order || !rs.seg_op || !rs.mem_start || !rs.members ||
      !rs.v_stamp)
    st = FU_ERR_NOMEM;
  if (st == FU_OK) st = order_units(env, &rs);
  /* phase A: allocate every segment op */
  uint32_t next_name = 0, stamp = 1;
  fu_seg_vec existing = {0};
  if (st == FU_OK) st = existing_names(env, &existing);
  for (uint32_t k = 0; k < rs.n_order && st == FU_OK; k++) {
    uint32_t u = rs.order[k];
    if (!is_group_unit(env, &rs, u)) continue;
    st = make_segment(env, &rs, u, &next_name, stamp, &existing);
    stamp += 2;
    env->stats.n_segments++;
  }
  if (st == FU_OK) {
    /* phase B: relink the body in the new order; nothing can fail now */
    fu_block *body = &env->f->body;
    body->first = body->last = NULL;
    for (uint32_t k = 0; k < rs.n_order; k++) {
      uint32_t u = rs.order[k];
      fu_op *seg = rs.seg_op[u];
      if (!seg) {
        fu_op *op = env->nodes[u].op;
        if ((env->nodes[u].flags & FU_SEG_NF_COMPUTE) && env->host_group[fu_seg_graph_find(&env->g, u)])
          op->host = true;
        fu_block_append(body, op);
        continue;
      }
      fu_block_append(body, seg);
      uint32_t count = env->mem_count[u];
      for (uint32_t i = 0; i < count; i++) fu_block_append(seg->u.segment.body, env->nodes[rs.members[rs.mem_start[u] + i]].op);
    }
    if (env->dbg) log_results(env, &rs);
  }
  fu_seg_vec_free(&existing, &env->alloc);
  rewrite_free(env, &rs);
  return st;
}

/* Step 5 (recompute.c): where copying cheap prologues into their readers'
 * groups changed the fusion, the partition is made again on the new ops;
 * the second one is final. */
static fu_status partition_again_after_copies(fu_seg_env *env) {
  uint32_t n_copied = 0;
  fu_status st = fu_seg_recompute(env, &n_copied);
  if (st != FU_OK || n_copied == 0) return st;
  fu_fusion *f = env->f;
  fu_diag_engine *diag = env->diag;
  FILE *dbg = env->dbg;
  const fu_feature_set *features = env->features;
  fu_seg_env_free(env);
  st = fu_seg_env_init(env, f, diag, dbg);
  env->features = features;
  if (st == FU_OK && dbg) {
    fu_strbuf_clear(&env->sb);
    fu_strbuf_printf(&env->sb, "[segment] partition again: %u op%s copied, %u compute ops", n_copied,
                     n_copied == 1 ? "" : "s", env->n_compute);
    fu_seg_debug_line(env);
  }
  return st == FU_OK ? fu_seg_partition(env) : st;
}

fu_status fu_segment_fusion(fu_fusion *f, fu_diag_engine *diag, FILE *debug, fu_segment_stats *stats) {
  return fu_segment_fusion_with(f, diag, debug, NULL, stats);
}

fu_status fu_segment_fusion_with(fu_fusion *f, fu_diag_engine *diag, FILE *debug, const fu_feature_set *features,
                                 fu_segment_stats *stats) {
  fu_seg_env env;
  fu_status st = fu_seg_env_init(&env, f, diag, debug);
  env.features = features;
  if (st == FU_OK && debug) {
    uint32_t n_host = 0, n_seg = 0;
    for (uint32_t i = 0; i < env.n_nodes; i++) {
      n_host += env.nodes[i].op->host;
      n_seg += env.nodes[i].op->kind == FU_OP_SEGMENT;
    }
    fu_strbuf_clear(&env.sb);
    fu_strbuf_printf(&env.sb, "[segment] fusion @%s: %u compute ops, %u host ops, %u existing segments",
                     f->name ? f->name : "", env.n_compute, n_host, n_seg);
    fu_seg_debug_line(&env);
  }
  if (st == FU_OK && env.n_compute == 0) {
    for (uint32_t i = 0; i < env.n_nodes; i++)
      if (env.nodes[i].op->kind == FU_OP_SEGMENT) env.stats.already_segmented = true;
    if (debug) {
      fu_strbuf_clear(&env.sb);
      fu_strbuf_puts(&env.sb, env.stats.already_segmented ? "[segment] already segmented: nothing to do"
                                                          : "[segment] no compute ops: nothing to do");
      fu_seg_debug_line(&env);
    }
  } else if (st == FU_OK) {
    st = fu_seg_partition(&env);
    if (st == FU_OK && !(features && (features->off & (1u << FU_FEATURE_RECOMPUTE)))) st = partition_again_after_copies(&env);
    if (st == FU_OK) st = rewrite(&env);
  }
  if (st == FU_ERR_NOMEM && diag) fu_error(diag, f->loc, "segment: out of memory while segmenting '@%s'", f->name ? f->name : "");
  if (stats) *stats = env.stats;
  fu_seg_env_free(&env);
  return st;
}

fu_status fu_pass_run_segment(fu_module *m, fu_pass_context *ctx) {
  FILE *dbg = fu_pass_debug_enabled(ctx, "segment") ? ctx->debug_out : NULL;
  fu_diag_engine *diag = ctx ? ctx->diag : NULL;
  fu_status st = FU_OK;
  for (fu_fusion *f = m->first; f && st == FU_OK; f = f->next) st = fu_segment_fusion_with(f, diag, dbg, ctx ? ctx->features : NULL, NULL);
  const char *dot = fu_pass_option_value(ctx, "dot");
  if (st != FU_OK || !dot || !*dot) return st;
  FILE *fp = NULL;
  if ((st = fu_dot_open(dot, "segment", fu_loc_none(), diag, &fp)) != FU_OK) return st;
  for (fu_fusion *f = m->first; f && st == FU_OK; f = f->next) st = fu_segment_write_dot(f, fp);
  return fu_dot_close(fp, st, dot, "segment", fu_loc_none(), diag);
}
