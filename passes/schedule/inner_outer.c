/* fuser: the inner-outer rewrite of the schedule pass.
 *
 * A norm backward has a persistent segment (dx: per-row reductions, then
 * the row again) and a reduction segment that sums full-size values over
 * the rows (dgamma = sum(dy * xhat, 0), dbeta = sum(dy, 0)) from the same
 * inputs.  As two kernels they read the inputs twice.  This step moves
 * the outer sums into the persistent segment as partial sums
 * (`partial_sum {dim=0, parts=P}`, docs/ir.md): its blocks loop over rows
 * ib, ib + P, ... and each thread accumulates its columns in registers
 * (passes/lower/persistent.c), so the rows are read once; the reduction
 * segment is left summing the P partial rows, a small outer reduction.
 *
 * It applies where the persistent scheduler would keep a row per block in
 * registers with the accumulators too (fu_schedule_inner_outer_parts), to
 * a reduction segment whose every reduction is a `sum` over dim 0 of a
 * tensor of the persistent reference's shape, computed from the
 * persistent segment's own inputs or outputs (an f32 layer norm's xhat,
 * which the persistent segment then stops writing when nothing else
 * reads it), and whose other ops use only the sums' results.  It runs before the segments are scheduled because the
 * parts follow the device's SMs. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

typedef struct io_ctx {
  fu_fusion *f;
  fu_op *pseg;            /* the persistent segment */
  const fu_value *ref;    /* its reference */
  bool *prologue;         /* by op id: an op of the reduction segment the sums read */
  fu_value **map;         /* by value id: the persistent segment's copy */
  uint32_t n_values, n_ops;
} io_ctx;

static const char *seg_name(const fu_op *seg) { return seg->u.segment.name ? seg->u.segment.name : "?"; }

/* Whether a top-level op from `from` up to `to` (exclusive; NULL: the
 * end) reads v. */
static bool read_between(const fu_op *from, const fu_op *to, const fu_value *v) {
  for (const fu_op *op = from; op && op != to; op = op->next)
    for (uint32_t i = 0; i < op->n_operands; i++)
      if (op->operands[i] == v) return true;
  return false;
}

/* Whether op sums its operand, of the reference's shape, over dim 0 alone
 * into a float result of the default dtype. */
static bool row_sum(const io_ctx *c, const fu_op *op) {
  if (op->kind != FU_OP_SUM || op->u.reduce.keepdim || op->u.reduce.axes.n != 1) return false;
  const fu_value *x = op->operands[0];
  int64_t a = op->u.reduce.axes.v[0];
  if (a < 0) a += x->type.rank;
  fu_dtype want = x->type.dtype == FU_DT_F64 ? FU_DT_F64 : FU_DT_F32;
  return a == 0 && fu_type_same_shape(&x->type, &c->ref->type) && fu_dtype_is_float(x->type.dtype) &&
         op->results[0]->type.dtype == want && (op->u.reduce.dtype == FU_DT_NONE || op->u.reduce.dtype == want);
}

/* Marks, in c->prologue, the ops of segment body b that value v reads. */
static void mark_prologue(io_ctx *c, const fu_block *b, const fu_value *v) {
  const fu_op *op = v->def;
  if (!op || op->parent != b || op->id >= c->n_ops || c->prologue[op->id]) return;
  c->prologue[op->id] = true;
  for (uint32_t i = 0; i < op->n_operands; i++) mark_prologue(c, b, op->operands[i]);
}

static const char *vname(const fu_value *v) { return v && v->name ? v->name : "?"; }

/* Whether reduction segment r is one to consider: unscheduled, with a
 * reduction of a tensor of the persistent reference's shape. */
static bool candidate(const io_ctx *c, const fu_op *r) {
  const fu_segment_info *si = &r->u.segment;
  if (r->kind != FU_OP_SEGMENT || si->kind != FU_SK_REDUCTION || si->schedule || !si->body) return false;
  for (const fu_op *op = si->body->first; op; op = op->next)
    if (fu_op_has(op->kind, FU_OF_REDUCTION) && fu_type_same_shape(&op->operands[0]->type, &c->ref->type))
      return true;
  return false;
}

/* Whether candidate r qualifies (the header's conditions), with its sums
 * counted in *n_sums and their prologue marked; else false with the
 * reason in why. */
static bool qualifies(io_ctx *c, const fu_op *r, uint32_t *n_sums, char *why, size_t cap) {
  const fu_segment_info *si = &r->u.segment;
  const char *pn = seg_name(c->pseg);
  for (uint32_t i = 0; i < r->n_operands; i++)
    if (!fu_segment_has_input(c->pseg, r->operands[i]) && !fu_segment_has_output(c->pseg, r->operands[i])) {
      snprintf(why, cap, "it reads %%%s, which persistent segment '@%s' neither reads nor computes",
               vname(r->operands[i]), pn);
      return false;
    }
  for (uint32_t i = 0; i < si->n_outputs; i++)
    if (fu_segment_has_input(c->pseg, si->outputs[i])) {
      snprintf(why, cap, "persistent segment '@%s' reads its result %%%s", pn, vname(si->outputs[i]));
      return false;
    }
  *n_sums = 0;
  for (const fu_op *op = si->body->first; op; op = op->next) {
    if (!fu_op_has(op->kind, FU_OF_REDUCTION)) continue;
    if (!row_sum(c, op)) {
      snprintf(why, cap, "%%%s is not a sum over dim 0 (the rows) of a float tensor of the rows' shape, in f32 (f64)",
               vname(op->results[0]));
      return false;
    }
    ++*n_sums;
    mark_prologue(c, si->body, op->operands[0]);
  }
  for (const fu_op *op = si->body->first; op; op = op->next)
    if (op->id >= c->n_ops) {
      snprintf(why, cap, "it was folded already");
      return false;
    }
  /* the prologue feeds the sums only: none of it is an output or read by
   * the ops after the sums */
  for (uint32_t i = 0; i < si->n_outputs; i++)
    if (si->outputs[i]->def && si->outputs[i]->def->parent == si->body && c->prologue[si->outputs[i]->def->id]) {
      snprintf(why, cap, "its output %%%s is computed before the sums", vname(si->outputs[i]));
      return false;
    }
  for (const fu_op *op = si->body->first; op; op = op->next) {
    if (c->prologue[op->id] || fu_op_has(op->kind, FU_OF_REDUCTION)) continue;
    for (uint32_t i = 0; i < op->n_operands; i++) {
      const fu_op *d = op->operands[i]->def;
      if (d && d->parent == si->body && c->prologue[d->id]) {
        snprintf(why, cap, "%%%s, after the sums, reads %%%s, which the sums read", vname(op->results[0]),
                 vname(op->operands[i]));
        return false;
      }
    }
  }
  return true;
}

static fu_value *mapped(io_ctx *c, fu_value *v) {
  return !v->is_literal && v->id < c->n_values && c->map[v->id] ? c->map[v->id] : v;
}

/* An op of the persistent segment that computes what `op` (of the
 * reduction segment) does from the same operands, or NULL. */
static fu_op *same_op(io_ctx *c, const fu_op *op, fu_value *const *operands) {
  for (fu_op *p = c->pseg->u.segment.body->first; p; p = p->next) {
    if (p->kind != op->kind || p->n_operands != op->n_operands || p->n_results != op->n_results) continue;
    bool same = fu_op_attrs_equal(p, op);
    for (uint32_t i = 0; same && i < op->n_operands; i++) {
      const fu_value *a = p->operands[i], *b = operands[i];
      same = a == b || (a->is_literal && b->is_literal && fu_type_equal(&a->type, &b->type) &&
                        memcmp(&a->literal, &b->literal, sizeof a->literal) == 0);
    }
    for (uint32_t k = 0; same && k < op->n_results; k++) same = fu_type_equal(&p->results[k]->type, &op->results[k]->type);
    if (same) return p;
  }
  return NULL;
}

/* A copy of op's result types and names onto n (names suffixed "_io<id>"). */
static bool copy_results(io_ctx *c, const fu_op *op, fu_op *n) {
  fu_module *m = c->f->module;
  for (uint32_t k = 0; k < op->n_results; k++) {
    const fu_value *from = op->results[k];
    fu_value *to = n->results[k];
    to->type = from->type;
    if (from->type.rank > 0 && !(to->type.dims = fu_dims_copy(m, from->type.dims, from->type.rank))) return false;
    char nm[96];
    snprintf(nm, sizeof nm, "%s_io%u", from->name ? from->name : "v", n->id);
    fu_value_set_name(m, to, nm);
  }
  return true;
}

/* The prologue op `op` in the persistent segment: an op there that is the
 * same computation, or a copy appended to its body. */
static fu_status move_prologue_op(io_ctx *c, const fu_op *op) {
  fu_value *ops[8];
  if (op->n_operands > 8) return FU_ERR_UNSUPPORTED;
  for (uint32_t i = 0; i < op->n_operands; i++) ops[i] = mapped(c, op->operands[i]);
  fu_op *n = same_op(c, op, ops);
  if (!n) {
    n = fu_op_new(c->f, op->kind, ops, op->n_operands, op->n_results, op->loc);
    if (!n || !fu_op_attrs_copy(c->f->module, op, n) || !copy_results(c, op, n)) return FU_ERR_NOMEM;
    fu_block_append(c->pseg->u.segment.body, n);
  }
  for (uint32_t k = 0; k < op->n_results; k++)
    if (op->results[k]->id < c->n_values) c->map[op->results[k]->id] = n->results[k];
  return FU_OK;
}

/* The partial sum of `sum`'s operand in the persistent segment, whose
 * result becomes sum's operand. */
static fu_status add_partial(io_ctx *c, fu_op *sum, int64_t parts, fu_value **out) {
  fu_value *x = mapped(c, sum->operands[0]);
  fu_op *n = fu_op_new(c->f, FU_OP_PARTIAL_SUM, &x, 1, 1, sum->loc);
  if (!n) return FU_ERR_NOMEM;
  n->u.partial.dim = 0;
  n->u.partial.parts = parts;
  fu_value *v = n->results[0];
  v->type = x->type;
  if (!(v->type.dims = fu_dims_copy(c->f->module, x->type.dims, x->type.rank))) return FU_ERR_NOMEM;
  v->type.dims[0] = (fu_extent){.value = parts};
  v->type.dtype = sum->results[0]->type.dtype;
  char nm[96];
  snprintf(nm, sizeof nm, "%s_parts", sum->results[0]->name ? sum->results[0]->name : "sum");
  fu_value_set_name(c->f->module, v, nm);
  fu_block_append(c->pseg->u.segment.body, n);
  *out = v;
  return FU_OK;
}

/* Appends vals[0..n) to an arena array of *len values. */
static fu_value **grown(fu_module *m, fu_value **arr, uint32_t len, fu_value *const *vals, uint32_t n) {
  fu_value **a = fu_arena_calloc(m->arena, len + n, sizeof *a);
  if (!a) return NULL;
  if (len) memcpy(a, arr, len * sizeof *a);
  memcpy(a + len, vals, n * sizeof *a);
  return a;
}

/* Rewrites reduction segment r into the persistent segment: the prologue
 * moved (or found there), each sum's operand replaced by its partial sum,
 * which the persistent segment outputs and r reads; r after it. */
static fu_status fold(io_ctx *c, fu_op *r, int64_t parts) {
  fu_module *m = c->f->module;
  fu_segment_info *si = &r->u.segment;
  fu_value *partial[FU_MAX_SEG_REDUCTIONS];
  uint32_t n = 0;
  fu_status st = FU_OK;
  for (fu_op *op = si->body->first; op && st == FU_OK; op = op->next)
    if (c->prologue[op->id]) st = move_prologue_op(c, op);
  for (fu_op *op = si->body->first; op && st == FU_OK; op = op->next) {
    if (!fu_op_has(op->kind, FU_OF_REDUCTION) || n == FU_MAX_SEG_REDUCTIONS) continue;
    if ((st = add_partial(c, op, parts, &partial[n])) == FU_OK) op->operands[0] = partial[n++];
  }
  if (st != FU_OK) return st;
  fu_value **outs = grown(m, c->pseg->u.segment.outputs, c->pseg->u.segment.n_outputs, partial, n);
  fu_value **ins = grown(m, NULL, 0, partial, n);
  if (!outs || !ins) return FU_ERR_NOMEM;
  c->pseg->u.segment.outputs = outs;
  c->pseg->u.segment.n_outputs += n;
  r->operands = ins;
  r->n_operands = n;
  /* outputs of the persistent segment that only r read are no longer
   * written */
  fu_segment_info *ps = &c->pseg->u.segment;
  uint32_t kept = 0;
  for (uint32_t i = 0; i < ps->n_outputs; i++)
    if (read_between(c->f->body.first, NULL, ps->outputs[i])) ps->outputs[kept++] = ps->outputs[i];
  ps->n_outputs = kept;
  for (fu_op *op = si->body->first, *next; op; op = next) {
    next = op->next;
    if (c->prologue[op->id]) fu_block_remove(si->body, op);
  }
  /* r after the persistent segment */
  bool before = false;
  for (const fu_op *op = r->next; op; op = op->next) before |= op == c->pseg;
  if (before) {
    fu_block_remove(&c->f->body, r);
    if (c->pseg->next) fu_block_insert_before(c->pseg->next, r);
    else fu_block_append(&c->f->body, r);
  }
  return FU_OK;
}

/* The rewrite for persistent segment p: every qualifying reduction
 * segment, while the partial sums fit. */
static fu_status rewrite_segment(io_ctx *c, const fu_device *dev, FILE *debug) {
  fu_op *p = c->pseg;
  const fu_op *red = NULL;
  for (const fu_op *op = p->u.segment.body ? p->u.segment.body->first : NULL; op && !red; op = op->next)
    if (fu_op_has(op->kind, FU_OF_REDUCTION)) red = op;
  if (!red) return FU_OK;
  c->ref = red->operands[0];
  uint32_t total = 0;
  for (fu_op *r = c->f->body.first, *next; r; r = next) {
    next = r->next;
    if (r == p || !candidate(c, r)) continue;
    memset(c->prologue, 0, c->n_ops * sizeof *c->prologue);
    uint32_t n_sums = 0;
    char why[256] = "";
    bool ok = qualifies(c, r, &n_sums, why, sizeof why);
    if (ok && total + n_sums > FU_PERSIST_MAX_PARTIALS) {
      snprintf(why, sizeof why, "persistent segment '@%s' would hold more than %d partial sums", seg_name(p),
               FU_PERSIST_MAX_PARTIALS);
      ok = false;
    }
    int64_t parts = ok ? fu_schedule_inner_outer_parts(c->f, p, total + n_sums, dev) : 0;
    if (ok && !parts) {
      snprintf(why, sizeof why,
               "persistent segment '@%s' cannot keep %u partial sum(s) of its rows in registers (or has too few rows)",
               seg_name(p), total + n_sums);
      ok = false;
    }
    /* r before p: its results must not be read before p runs (r moves after p) */
    bool before = false, read_early = false;
    for (const fu_op *op = r->next; ok && op && !before; op = op->next) before = op == p;
    for (uint32_t k = 0; before && k < r->u.segment.n_outputs; k++)
      read_early |= read_between(r->next, p->next, r->u.segment.outputs[k]);
    if (read_early) {
      snprintf(why, sizeof why, "its results are read before persistent segment '@%s' runs", seg_name(p));
      ok = false;
    }
    if (!ok) {
      if (debug)
        fprintf(debug, "schedule: @%s: the sums over rows of '@%s' stay a kernel of their own: %s\n",
                c->f->name ? c->f->name : "?", seg_name(r), why);
      continue;
    }
    fu_status st = fold(c, r, parts);
    if (st != FU_OK) return st;
    total += n_sums;
    if (debug)
      fprintf(debug,
              "schedule: @%s: inner-outer: the %u sum(s) over rows of '@%s' become partial sums of %lld parts in "
              "persistent segment '@%s' (its rows read once); '@%s' sums the parts\n",
              c->f->name ? c->f->name : "?", n_sums, seg_name(r), (long long)parts, seg_name(p), seg_name(r));
    next = c->f->body.first; /* r moved: rescan (a folded segment no longer qualifies) */
  }
  return FU_OK;
}

fu_status fu_schedule_inner_outer(fu_fusion *f, const fu_device *dev, FILE *debug) {
  io_ctx c = {.f = f};
  fu_allocator alloc = f->module->alloc;
  for (fu_op *p = f->body.first; p; p = p->next) {
    if (p->kind != FU_OP_SEGMENT || p->u.segment.kind != FU_SK_PERSISTENT || p->u.segment.schedule) continue;
    /* sized now: the rewrite adds values and ops */
    c.n_values = f->next_value_id;
    c.n_ops = f->next_op_id;
    c.pseg = p;
    c.prologue = fu_mem_calloc(&alloc, c.n_ops ? c.n_ops : 1, sizeof *c.prologue);
    c.map = fu_mem_calloc(&alloc, c.n_values ? c.n_values : 1, sizeof *c.map);
    fu_status st = c.prologue && c.map ? rewrite_segment(&c, dev, debug) : FU_ERR_NOMEM;
    fu_mem_free(&alloc, c.prologue, (c.n_ops ? c.n_ops : 1) * sizeof *c.prologue);
    fu_mem_free(&alloc, c.map, (c.n_values ? c.n_values : 1) * sizeof *c.map);
    if (st != FU_OK) return st;
  }
  return FU_OK;
}
