/* fuser: segment pass, one segment as a standalone fusion.
 *
 * fuser-opt --extract-segment=@g1 uses this to hand one kernel's ops to the
 * later passes, the interpreter or the runner on their own.  The new module
 * is a deep copy: its own arena, its own interned symbols; inputs of the
 * segment become INPUT ops that keep the original input's layout and
 * example data when there was one, and get a contiguous layout with
 * example=randn (shape bound from the original example shapes) otherwise. */
#include <string.h>

#include "fuser/segment.h"

typedef struct ex_ctx {
  fu_module *src_m, *dst_m;
  fu_fusion *src, *dst;
  fu_value **map; /* source value id -> copy */
  uint32_t n_values;
  fu_allocator alloc;
} ex_ctx;

static bool copy_type(ex_ctx *c, const fu_type *from, fu_type *to) {
  to->dtype = from->dtype;
  to->rank = from->rank;
  to->dims = NULL;
  if (from->rank <= 0 || !from->dims) return true;
  to->dims = fu_arena_calloc(c->dst_m->arena, (size_t)from->rank, sizeof *to->dims);
  if (!to->dims) return false;
  for (int32_t i = 0; i < from->rank; i++) {
    to->dims[i] = from->dims[i];
    if (from->dims[i].sym) {
      to->dims[i].sym = fu_module_intern(c->dst_m, from->dims[i].sym, strlen(from->dims[i].sym));
      if (!to->dims[i].sym) return false;
    }
  }
  return true;
}

static void *dup(ex_ctx *c, const void *p, size_t count, size_t size) {
  return p && count ? fu_arena_memdup(c->dst_m->arena, p, count, size) : NULL;
}

/* Deep copy of an input's layout and example data. */
static bool copy_input_attrs(ex_ctx *c, const fu_op *from, fu_op *to) {
  int32_t rank = from->results[0]->type.rank;
  size_t r = rank > 0 ? (size_t)rank : 0;
  const fu_layout *l = &from->u.input.layout;
  fu_layout *nl = &to->u.input.layout;
  nl->strides = dup(c, l->strides, r, sizeof *l->strides);
  nl->stride_order = dup(c, l->stride_order, r, sizeof *l->stride_order);
  nl->contiguity = dup(c, l->contiguity, r, sizeof *l->contiguity);
  if ((l->strides && r && !nl->strides) || (l->stride_order && r && !nl->stride_order) ||
      (l->contiguity && r && !nl->contiguity))
    return false;
  const fu_example *e = &from->u.input.example;
  fu_example *ne = &to->u.input.example;
  *ne = *e;
  size_t er = e->rank > 0 ? (size_t)e->rank : 0;
  ne->shape = dup(c, e->shape, er, sizeof *e->shape);
  ne->strides = dup(c, e->strides, er, sizeof *e->strides);
  ne->npy_path = e->npy_path ? fu_arena_strdup(c->dst_m->arena, e->npy_path) : NULL;
  if ((e->shape && er && !ne->shape) || (e->strides && er && !ne->strides) || (e->npy_path && !ne->npy_path))
    return false;
  return true;
}

/* The concrete size of symbol `sym` from the source fusion's example
 * shapes, or -1. */
static int64_t bound_extent(ex_ctx *c, const char *sym) {
  for (const fu_op *op = c->src->body.first; op; op = op->next) {
    if (op->kind != FU_OP_INPUT || op->n_results != 1) continue;
    const fu_type *t = &op->results[0]->type;
    const fu_example *e = &op->u.input.example;
    if (!e->shape || e->rank != t->rank || !t->dims) continue;
    for (int32_t i = 0; i < t->rank; i++)
      if (t->dims[i].sym && strcmp(t->dims[i].sym, sym) == 0) return e->shape[i];
  }
  return -1;
}

/* Example data for a segment input that was computed in the fusion: random
 * normal values, with the symbolic extents bound when the source knows them. */
static bool default_example(ex_ctx *c, const fu_type *t, fu_example *e) {
  memset(e, 0, sizeof *e);
  e->init = FU_INIT_RANDN;
  e->rank = -1;
  if (t->rank <= 0 || !t->dims) return true;
  bool symbolic = false;
  for (int32_t i = 0; i < t->rank; i++) symbolic |= t->dims[i].sym != NULL;
  if (!symbolic) return true;
  int64_t *shape = fu_arena_calloc(c->dst_m->arena, (size_t)t->rank, sizeof *shape);
  if (!shape) return false;
  for (int32_t i = 0; i < t->rank; i++) {
    shape[i] = t->dims[i].sym ? bound_extent(c, t->dims[i].sym) : t->dims[i].value;
    if (shape[i] < 0) return true; /* unknown: leave the shape to the runner */
  }
  e->shape = shape;
  e->rank = t->rank;
  return true;
}

static fu_value *map_operand(ex_ctx *c, fu_value *v) {
  if (!v->is_literal) return v->id < c->n_values ? c->map[v->id] : NULL;
  fu_value *l;
  if (fu_dtype_is_float(v->type.dtype))
    l = fu_literal_f(c->dst, v->type.dtype, v->literal.f);
  else if (fu_dtype_is_bool(v->type.dtype))
    l = fu_literal_b(c->dst, v->literal.b);
  else
    l = fu_literal_i(c->dst, v->type.dtype, v->literal.i);
  if (l) {
    l->literal_typed = v->literal_typed;
    l->loc = v->loc;
  }
  return l;
}

static fu_status copy_op(ex_ctx *c, const fu_op *op) {
  fu_value *ops[64];
  fu_value **operands = op->n_operands <= 64 ? ops : fu_mem_calloc(&c->alloc, op->n_operands, sizeof *operands);
  if (!operands) return FU_ERR_NOMEM;
  fu_status st = FU_OK;
  for (uint32_t i = 0; i < op->n_operands && st == FU_OK; i++) {
    operands[i] = map_operand(c, op->operands[i]);
    if (!operands[i]) st = op->operands[i]->is_literal ? FU_ERR_NOMEM : FU_ERR_INVALID_ARG;
  }
  fu_op *n = NULL;
  if (st == FU_OK) {
    n = fu_op_new(c->dst, op->kind, operands, op->n_operands, op->n_results, op->loc);
    if (!n || !fu_op_attrs_copy(c->dst_m, op, n)) st = FU_ERR_NOMEM;
  }
  for (uint32_t r = 0; n && st == FU_OK && r < op->n_results; r++) {
    const fu_value *from = op->results[r];
    fu_value *to = n->results[r];
    if (!copy_type(c, &from->type, &to->type)) st = FU_ERR_NOMEM;
    if (from->name) fu_value_set_name(c->dst_m, to, from->name);
    if (from->id < c->n_values) c->map[from->id] = to;
  }
  if (n && st == FU_OK) {
    n->host = op->host;
    fu_block_append(&c->dst->body, n);
  }
  if (operands != ops) fu_mem_free(&c->alloc, operands, op->n_operands * sizeof *operands);
  return st;
}

static fu_op *find_segment(fu_module *m, const char *name, fu_fusion **in) {
  for (fu_fusion *f = m->first; f; f = f->next)
    for (fu_op *op = f->body.first; op; op = op->next)
      if (op->kind == FU_OP_SEGMENT && op->u.segment.name && strcmp(op->u.segment.name, name) == 0) {
        *in = f;
        return op;
      }
  return NULL;
}

fu_status fu_segment_extract(fu_module *m, const char *segment_name, fu_allocator alloc, fu_diag_engine *diag,
                             fu_module **out) {
  *out = NULL;
  if (!m || !segment_name) return FU_ERR_INVALID_ARG;
  const char *name = segment_name[0] == '@' ? segment_name + 1 : segment_name;
  fu_fusion *src = NULL;
  fu_op *seg = find_segment(m, name, &src);
  if (!seg || !seg->u.segment.body) {
    if (diag) fu_error(diag, fu_loc_none(), "no segment '@%s' in the module (run the segment pass first?)", name);
    return FU_ERR_INVALID_ARG;
  }
  ex_ctx c;
  memset(&c, 0, sizeof c);
  c.alloc = alloc;
  c.src_m = m;
  c.src = src;
  c.n_values = src->next_value_id;
  c.dst_m = fu_module_new(alloc);
  c.map = fu_mem_calloc(&alloc, c.n_values ? c.n_values : 1, sizeof *c.map);
  fu_status st = c.dst_m && c.map ? FU_OK : FU_ERR_NOMEM;
  if (st == FU_OK) {
    size_t fl = strlen(src->name ? src->name : "fusion"), sl = strlen(name);
    char *fname = fu_arena_alloc(c.dst_m->arena, fl + sl + 2);
    if (fname) {
      memcpy(fname, src->name ? src->name : "fusion", fl);
      fname[fl] = '_';
      memcpy(fname + fl + 1, name, sl + 1);
    }
    c.dst = fname ? fu_fusion_new(c.dst_m, fname, src->loc) : NULL;
    if (!c.dst) st = FU_ERR_NOMEM;
  }
  /* the segment's inputs */
  for (uint32_t i = 0; i < seg->n_operands && st == FU_OK; i++) {
    fu_value *v = seg->operands[i];
    if (v->is_literal || v->id >= c.n_values) continue;
    fu_op *in = fu_op_new(c.dst, FU_OP_INPUT, NULL, 0, 1, v->def ? v->def->loc : v->loc);
    if (!in || !copy_type(&c, &v->type, &in->results[0]->type)) {
      st = FU_ERR_NOMEM;
      break;
    }
    if (v->name) fu_value_set_name(c.dst_m, in->results[0], v->name);
    bool ok = v->def && v->def->kind == FU_OP_INPUT ? copy_input_attrs(&c, v->def, in)
                                                    : default_example(&c, &v->type, &in->u.input.example);
    if (!ok) {
      st = FU_ERR_NOMEM;
      break;
    }
    c.map[v->id] = in->results[0];
    fu_block_append(&c.dst->body, in);
  }
  for (const fu_op *op = seg->u.segment.body->first; op && st == FU_OK; op = op->next) {
    st = copy_op(&c, op);
    if (st == FU_ERR_INVALID_ARG && diag)
      fu_error(diag, op->loc, "segment '@%s': '%s' reads a value that is neither defined in the segment nor one of its inputs",
               name, fu_op_info_of(op->kind)->name);
  }
  if (st == FU_OK && seg->u.segment.n_outputs > 0) {
    fu_value **outs = fu_mem_calloc(&alloc, seg->u.segment.n_outputs, sizeof *outs);
    if (!outs) st = FU_ERR_NOMEM;
    for (uint32_t i = 0; st == FU_OK && i < seg->u.segment.n_outputs; i++) {
      const fu_value *v = seg->u.segment.outputs[i];
      outs[i] = v && v->id < c.n_values ? c.map[v->id] : NULL;
      if (!outs[i]) {
        if (diag) fu_error(diag, seg->loc, "segment '@%s': output %u is not defined inside it", name, i);
        st = FU_ERR_INVALID_ARG;
      }
    }
    if (st == FU_OK) {
      fu_op *o = fu_op_new(c.dst, FU_OP_OUTPUT, outs, seg->u.segment.n_outputs, 0, seg->loc);
      if (o) fu_block_append(&c.dst->body, o);
      else st = FU_ERR_NOMEM;
    }
    if (outs) fu_mem_free(&alloc, outs, seg->u.segment.n_outputs * sizeof *outs);
  }
  if (st == FU_ERR_NOMEM && diag) fu_error(diag, fu_loc_none(), "out of memory while extracting segment '@%s'", name);
  fu_mem_free(&alloc, c.map, (c.n_values ? c.n_values : 1) * sizeof *c.map);
  if (st != FU_OK) {
    fu_module_free(c.dst_m);
    return st;
  }
  *out = c.dst_m;
  return FU_OK;
}
