/* fuser: the IR verifier.
 *
 * One linear walk per fusion: per-value arrays indexed by the dense value id
 * hold what is known about each value (defined yet, in which segment, first
 * use outside its segment), so verifying n ops costs O(n) however they are
 * wired.  Every problem is reported, not just the first. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fuser/verify.h"
#include "verify_internal.h"

/* ---- a string-keyed hash table (value names, symbols, fusion names) ---- */

typedef struct strslot {
  const char *key;
  void *ptr;
  int64_t num;
} strslot;

typedef struct strmap {
  strslot *slots;
  size_t cap; /* power of two, or 0 */
  const fu_allocator *alloc;
} strmap;

static bool strmap_init(strmap *m, const fu_allocator *a, size_t max_keys) {
  size_t cap = 16;
  while (cap < max_keys * 2 + 1) cap *= 2;
  m->alloc = a;
  m->cap = cap;
  m->slots = fu_mem_calloc(a, cap, sizeof *m->slots);
  return m->slots != NULL;
}

static void strmap_free(strmap *m) {
  if (m->slots) fu_mem_free(m->alloc, m->slots, m->cap * sizeof *m->slots);
  m->slots = NULL;
}

/* The slot for `key`: either holding it, or empty where it goes.  The table
 * is sized for every key up front, so it never fills. */
static strslot *strmap_slot(strmap *m, const char *key) {
  uint64_t h = 1469598103934665603ull;
  for (const char *p = key; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
  h ^= h >> 29; /* FNV's low bits only see the input's low bits: fold the high ones in */
  size_t j = (size_t)h & (m->cap - 1);
  while (m->slots[j].key && strcmp(m->slots[j].key, key) != 0) j = (j + 1) & (m->cap - 1);
  return &m->slots[j];
}

/* ---- verifier state ------------------------------------------------------ */

enum { V_DEFINED = 1, V_LISTED_OUT = 2 };

typedef struct vctx {
  fu_fusion *f;
  fu_diag_engine *diag;
  fu_allocator alloc;
  uint32_t nv;
  fu_value **vals;       /* per id: the value defined with it */
  uint8_t *state;        /* per id: V_* bits */
  uint32_t *def_seg;     /* per id: 1-based segment defining it, 0 outside */
  uint32_t *opnd_stamp;  /* per id: last segment listing it as an operand */
  uint32_t *use_stamp;   /* per id: last segment whose body used it */
  fu_op **outside_use;   /* per id: first use outside its segment, or by an output */
  fu_op **segs;          /* top-level segment ops, in order */
  uint32_t n_segs, cap_segs;
  uint32_t n_input_dims;
  uint32_t n_outputs;
  strmap names, syms;
  fu_extent scratch[FU_IR_MAX_RESULTS * FU_MAX_RANK];
} vctx;

static const char *op_name(const fu_op *op) { return fu_op_info_of(op->kind)->name; }
static const char *seg_name(const fu_op *op) { return op->u.segment.name ? op->u.segment.name : "<unnamed>"; }

static void note_defined_here(vctx *c, const fu_value *v) {
  if (!v || v->is_literal || !v->def || !fu_loc_known(v->def->loc)) return;
  fu_ir_valstr vs;
  fu_note(c->diag, v->def->loc, "%s is defined here", fu_ir_value_str(&vs, v));
}

/* True when `v` is a non-literal value created by this fusion's ops. */
static bool in_fusion(const vctx *c, const fu_value *v) {
  return v && !v->is_literal && v->id < c->nv && c->vals[v->id] == v;
}

/* ---- pre-pass: which values exist ---------------------------------------- */

/* Records every value the fusion's ops define (so a later use before the
 * definition reads differently from a foreign value), checks each result's
 * back links, counts segments and input dims for table sizes. */
static void prepass_op(vctx *c, fu_op *op) {
  for (uint32_t i = 0; i < op->n_results; i++) {
    fu_value *v = op->results[i];
    if (!v) continue; /* reported by inference */
    fu_ir_valstr vs;
    if (v->id >= c->nv || (c->vals[v->id] && c->vals[v->id] != v)) {
      fu_error(c->diag, op->loc, "'%s': result %" PRIu32 " %s belongs to another fusion", op_name(op), i,
               fu_ir_value_str(&vs, v));
      continue;
    }
    if (c->vals[v->id] == v) {
      fu_error(c->diag, op->loc, "'%s': result %" PRIu32 " %s is defined more than once", op_name(op), i,
               fu_ir_value_str(&vs, v));
      if (v->def && v->def != op && fu_loc_known(v->def->loc)) fu_note(c->diag, v->def->loc, "also defined here");
      continue;
    }
    if (v->def != op || v->result_index != i || v->is_literal)
      fu_error(c->diag, op->loc, "'%s': result %" PRIu32 " %s does not record this op as its definition",
               op_name(op), i, fu_ir_value_str(&vs, v));
    c->vals[v->id] = v;
  }
  if (op->kind == FU_OP_INPUT && op->n_results == 1 && op->results[0] && op->results[0]->type.rank > 0)
    c->n_input_dims += (uint32_t)op->results[0]->type.rank;
}

/* Ops of segments nested inside a segment (an error) count as the outer
 * segment's, so their values still read as defined there. */
static void prepass_body(vctx *c, fu_block *b, unsigned depth) {
  for (fu_op *op = b->first; op; op = op->next) {
    prepass_op(c, op);
    if (op->kind != FU_OP_SEGMENT) continue;
    if (depth == 0) c->cap_segs++;
    if (op->u.segment.body && depth < 64) prepass_body(c, op->u.segment.body, depth + 1);
  }
}

static void prepass(vctx *c) { prepass_body(c, &c->f->body, 0); }

/* ---- operands and results ------------------------------------------------ */

/* SSA and scope of each operand; returns false if any operand is unusable
 * (then inference is skipped: its message would only repeat this one). */
static bool check_operands(vctx *c, fu_op *op, uint32_t seg) {
  bool ok = true;
  for (uint32_t i = 0; i < op->n_operands; i++) {
    fu_value *v = op->operands[i];
    fu_ir_valstr vs;
    if (!v) continue; /* reported by inference */
    if (v->is_literal) {
      if (v->def || !fu_type_is_scalar(&v->type)) {
        fu_error(c->diag, op->loc, "'%s': operand %" PRIu32 " is a malformed literal", op_name(op), i);
        ok = false;
      } else if (op->kind == FU_OP_OUTPUT) {
        fu_error(c->diag, op->loc, "'output': operand %" PRIu32 " %s is a literal; only values can be fusion outputs",
                 i, fu_ir_value_str(&vs, v));
      }
      continue;
    }
    if (!in_fusion(c, v)) {
      fu_error(c->diag, op->loc, "'%s': operand %" PRIu32 " %s is not defined in this fusion", op_name(op), i,
               fu_ir_value_str(&vs, v));
      ok = false;
      continue;
    }
    if (!(c->state[v->id] & V_DEFINED)) {
      fu_error(c->diag, op->loc, "'%s': operand %" PRIu32 " %s is used before its definition", op_name(op), i,
               fu_ir_value_str(&vs, v));
      note_defined_here(c, v);
      ok = false;
      continue;
    }
    uint32_t ds = c->def_seg[v->id];
    if (seg && ds != seg) {
      if (c->opnd_stamp[v->id] != seg) {
        fu_op *s = c->segs[seg - 1];
        fu_error(c->diag, op->loc, "'%s': operand %" PRIu32 " %s is defined outside segment '@%s' but is not among its operands",
                 op_name(op), i, fu_ir_value_str(&vs, v), seg_name(s));
        if (fu_loc_known(s->loc)) fu_note(c->diag, s->loc, "segment '@%s' begins here", seg_name(s));
      }
      c->use_stamp[v->id] = seg;
    }
    if (ds && (ds != seg || op->kind == FU_OP_OUTPUT) && !c->outside_use[v->id]) c->outside_use[v->id] = op;
  }
  return ok;
}

/* Compare stated result types with inference. */
static void check_results(vctx *c, fu_op *op, const fu_type *inferred) {
  for (uint32_t i = 0; i < op->n_results; i++) {
    fu_value *v = op->results[i];
    fu_ir_valstr vs;
    if (!fu_ir_type_ok(&v->type)) {
      /* format the name only on the error path: this loop is hot */
      char what[160];
      snprintf(what, sizeof what, "'%s': result %s", op_name(op), fu_ir_value_str(&vs, v));
      fu_ir_check_type(&v->type, op->loc, what, c->diag);
      continue;
    }
    if (fu_type_equal(&v->type, &inferred[i])) continue;
    fu_ir_value_str(&vs, v);
    fu_ir_tystr a, b;
    if (op->n_results == 1)
      fu_error(c->diag, op->loc, "'%s': result type %s does not match inferred type %s", op_name(op),
               fu_ir_type_str(&a, &v->type), fu_ir_type_str(&b, &inferred[i]));
    else
      fu_error(c->diag, op->loc, "'%s': result type %s does not match inferred type %s for result %" PRIu32 " %s",
               op_name(op), fu_ir_type_str(&a, &v->type), fu_ir_type_str(&b, &inferred[i]), i, vs.s);
  }
}

/* Mark results defined and their names taken. */
static void define_results(vctx *c, fu_op *op, uint32_t seg) {
  for (uint32_t i = 0; i < op->n_results; i++) {
    fu_value *v = op->results[i];
    if (!in_fusion(c, v) || v->def != op) continue;
    c->state[v->id] |= V_DEFINED;
    c->def_seg[v->id] = seg;
    if (!v->name) continue;
    strslot *s = strmap_slot(&c->names, v->name);
    if (!s->key) {
      s->key = v->name;
      s->ptr = v;
      continue;
    }
    fu_ir_valstr vs;
    fu_error(c->diag, op->loc, "%s is already defined", fu_ir_value_str(&vs, v));
    const fu_value *prev = s->ptr;
    if (prev->def && fu_loc_known(prev->def->loc)) fu_note(c->diag, prev->def->loc, "previous definition is here");
  }
}

/* ---- inputs: layout and example data ------------------------------------- */

#define FU_MAX_EXAMPLE_BYTES (((uint64_t)1) << 40)

static void check_layout(vctx *c, fu_op *op, const fu_value *v) {
  const fu_layout *l = &op->u.input.layout;
  const fu_type *t = &v->type;
  fu_ir_valstr vs;
  fu_ir_tystr ts;
  if (t->rank < 0) {
    if (l->strides || l->stride_order || l->contiguity)
      fu_error(c->diag, op->loc, "'input': scalar input %s cannot have a layout (strides, stride_order or contiguity)",
               fu_ir_value_str(&vs, v));
    return;
  }
  for (int32_t i = 0; l->strides && i < t->rank; i++)
    if (l->strides[i] < 0)
      fu_error(c->diag, op->loc, "'input': stride %" PRId64 " of dim %" PRId32 " of %s must be >= 0", l->strides[i], i,
               fu_ir_value_str(&vs, v));
  if (l->stride_order) {
    bool seen[FU_MAX_RANK] = {false}, perm = true;
    for (int32_t i = 0; i < t->rank; i++) {
      int32_t s = l->stride_order[i];
      if (s < 0 || s >= t->rank || seen[s]) perm = false;
      else seen[s] = true;
    }
    if (!perm) {
      int64_t tmp[FU_MAX_RANK];
      for (int32_t i = 0; i < t->rank; i++) tmp[i] = l->stride_order[i];
      fu_ir_liststr ls;
      fu_error(c->diag, op->loc, "'input': stride_order %s of %s is not a permutation of 0..%" PRId32,
               fu_ir_list_str(&ls, tmp, (uint32_t)t->rank), fu_ir_value_str(&vs, v), t->rank - 1);
    }
  }
  for (int32_t i = 0; l->contiguity && i < t->rank; i++) {
    int8_t k = l->contiguity[i];
    if (k != FU_CONTIG_NONE && k != FU_CONTIG_FALSE && k != FU_CONTIG_TRUE)
      fu_error(c->diag, op->loc, "'input': contiguity of dim %" PRId32 " of %s has the invalid value %d", i,
               fu_ir_value_str(&vs, v), (int)k);
    else if (k == FU_CONTIG_NONE && !fu_extent_is_one(t->dims[i]))
      fu_error(c->diag, op->loc,
               "'input': contiguity of dim %" PRId32 " of %s of type %s is none, but only broadcast dims (extent 1) may be none",
               i, fu_ir_value_str(&vs, v), fu_ir_type_str(&ts, t));
  }
}

/* Binds a symbol to a size from example data; the same symbol may not be
 * bound to two sizes anywhere in the fusion. */
static void bind_symbol(vctx *c, fu_op *op, const fu_value *v, const char *sym, int64_t size) {
  strslot *s = strmap_slot(&c->syms, sym);
  if (!s->key) {
    s->key = sym;
    s->ptr = op;
    s->num = size;
    return;
  }
  if (s->num == size) return;
  fu_ir_valstr vs;
  fu_error(c->diag, op->loc, "'input': example_shape of %s binds symbol '%s' to %" PRId64 ", but it is already bound to %" PRId64,
           fu_ir_value_str(&vs, v), sym, size, s->num);
  const fu_op *prev = s->ptr;
  if (prev != op && fu_loc_known(prev->loc)) fu_note(c->diag, prev->loc, "'%s' is bound to %" PRId64 " here", sym, s->num);
}

/* numel * element size, saturating above the 2^40-byte limit. */
static uint64_t byte_size(const int64_t *sizes, int32_t rank, fu_dtype dt) {
  uint64_t n = fu_dtype_size(dt);
  for (int32_t i = 0; i < rank; i++) {
    if (sizes[i] == 0) return 0;
    if (__builtin_mul_overflow(n, (uint64_t)sizes[i], &n) || n > FU_MAX_EXAMPLE_BYTES) n = FU_MAX_EXAMPLE_BYTES + 1;
  }
  return n;
}

static void check_example(vctx *c, fu_op *op, const fu_value *v) {
  const fu_example *ex = &op->u.input.example;
  const fu_type *t = &v->type;
  fu_ir_valstr vs;
  fu_ir_tystr ts;
  int64_t sizes[FU_MAX_RANK];
  bool known = t->rank >= 0;
  for (int32_t i = 0; i < t->rank; i++) {
    sizes[i] = t->dims[i].value;
    if (t->dims[i].sym) known = false;
  }
  /* rank 0 reads as "not given": a zeroed payload (an input built through
   * the C API) must not claim an empty example_shape */
  if (ex->rank > 0) {
    if (t->rank < 0) {
      fu_error(c->diag, op->loc, "'input': example_shape given for scalar input %s", fu_ir_value_str(&vs, v));
      return;
    }
    if (ex->rank != t->rank || (ex->rank > 0 && !ex->shape)) {
      fu_error(c->diag, op->loc, "'input': example_shape has %" PRId32 " entries, but %s of type %s has rank %" PRId32,
               ex->rank, fu_ir_value_str(&vs, v), fu_ir_type_str(&ts, t), t->rank);
      return;
    }
    known = true;
    for (int32_t i = 0; i < t->rank; i++) {
      int64_t s = ex->shape[i];
      if (s < 0) {
        fu_error(c->diag, op->loc, "'input': example_shape entry %" PRId64 " of %s (dim %" PRId32 ") must be >= 0", s,
                 fu_ir_value_str(&vs, v), i);
        known = false;
        continue;
      }
      sizes[i] = s;
      if (t->dims[i].sym) {
        bind_symbol(c, op, v, t->dims[i].sym, s);
      } else if (t->dims[i].value != s) {
        fu_ir_liststr ls;
        fu_error(c->diag, op->loc, "'input': example_shape %s of %s does not match its type %s in dim %" PRId32,
                 fu_ir_list_str(&ls, ex->shape, (uint32_t)ex->rank), fu_ir_value_str(&vs, v), fu_ir_type_str(&ts, t), i);
        known = false;
      }
    }
  }
  if (known && t->rank >= 0 && byte_size(sizes, t->rank, t->dtype) > FU_MAX_EXAMPLE_BYTES)
    fu_error(c->diag, op->loc, "'input': %s of type %s would take more than 2^40 bytes", fu_ir_value_str(&vs, v),
             fu_ir_type_str(&ts, t));
  switch (ex->init) {
  case FU_INIT_RANDINT:
    if (ex->low >= ex->high)
      fu_error(c->diag, op->loc, "'input': randint example of %s needs low < high, got low=%" PRId64 ", high=%" PRId64,
               fu_ir_value_str(&vs, v), ex->low, ex->high);
    break;
  case FU_INIT_NPY:
    if (!ex->npy_path || !*ex->npy_path)
      fu_error(c->diag, op->loc, "'input': npy example of %s has no file path", fu_ir_value_str(&vs, v));
    break;
  case FU_INIT_VALUE:
    if (t->rank >= 0)
      fu_error(c->diag, op->loc, "'input': example=<number> is only for scalar inputs, but %s has type %s",
               fu_ir_value_str(&vs, v), fu_ir_type_str(&ts, t));
    break;
  default: break;
  }
}

/* An output's alias (`output %T6 {alias=%T1}`): one operand, a tensor
 * input of the fusion of the output's type, which no earlier output
 * aliases; otherwise located errors. */
static void check_output_alias(vctx *c, fu_op *op) {
  fu_value *a = op->u.output.alias;
  if (!a) return;
  fu_ir_valstr vs, as;
  fu_ir_tystr ts, ats;
  if (op->n_operands != 1 || !op->operands[0]) {
    fu_error(c->diag, op->loc, "'output': an output with an alias names one value, not %" PRIu32, op->n_operands);
    return;
  }
  const fu_value *v = op->operands[0];
  if (!in_fusion(c, a) || !a->def || a->def->kind != FU_OP_INPUT) {
    fu_error(c->diag, op->loc, "'output': alias %s of %s is not an input of the fusion", fu_ir_value_str(&as, a),
             fu_ir_value_str(&vs, v));
    return;
  }
  if (!fu_type_is_tensor(&a->type) || !fu_type_equal(&a->type, &v->type)) {
    fu_error(c->diag, op->loc, "'output': %s of type %s cannot be written into alias %s of type %s",
             fu_ir_value_str(&vs, v), fu_ir_type_str(&ts, &v->type), fu_ir_value_str(&as, a),
             fu_ir_type_str(&ats, &a->type));
    note_defined_here(c, a);
    return;
  }
  for (const fu_op *o = c->f->body.first; o && o != op; o = o->next)
    if (o->kind == FU_OP_OUTPUT && o->u.output.alias == a) {
      fu_error(c->diag, op->loc, "'output': input %s is already the alias of another output", fu_ir_value_str(&as, a));
      if (fu_loc_known(o->loc)) fu_note(c->diag, o->loc, "the other output is here");
      return;
    }
}

/* ---- the walk ------------------------------------------------------------ */

static void visit(vctx *c, fu_op *op, fu_block *b, uint32_t seg) {
  const char *name = op_name(op);
  if (op->parent != b) fu_error(c->diag, op->loc, "'%s': op's parent link does not match the block holding it", name);
  if (op->host && !fu_op_has(op->kind, FU_OF_VIEW))
    fu_error(c->diag, op->loc, "'%s': host=true is only for view ops", name);
  if (op->host && seg) fu_error(c->diag, op->loc, "'%s': host ops must stay outside segments", name);
  if (op->kind == FU_OP_INPUT && seg) fu_error(c->diag, op->loc, "'input' must be outside every segment");
  if (op->kind == FU_OP_OUTPUT) c->n_outputs += op->n_operands;
  if (op->kind == FU_OP_OUTPUT) check_output_alias(c, op);

  bool operands_ok = check_operands(c, op, seg);
  fu_type inferred[FU_IR_MAX_RESULTS];
  if (operands_ok && fu_ir_infer(op, inferred, c->scratch, c->diag) == FU_OK) {
    check_results(c, op, inferred);
    if (op->kind == FU_OP_INPUT) {
      check_layout(c, op, op->results[0]);
      check_example(c, op, op->results[0]);
    }
  }
  define_results(c, op, seg);
}

/* A segment body; a segment nested in it is an error, and its ops are
 * checked as the enclosing segment's own. */
static void visit_body(vctx *c, fu_block *body, uint32_t seg, const char *sn, unsigned depth) {
  for (fu_op *in = body->first; in; in = in->next) {
    if (in->kind != FU_OP_SEGMENT) {
      visit(c, in, body, seg);
      continue;
    }
    fu_error(c->diag, in->loc, "segment '@%s' is nested in segment '@%s'; segments do not nest", seg_name(in), sn);
    if (in->u.segment.body && depth < 64) visit_body(c, in->u.segment.body, seg, sn, depth + 1);
  }
}

static void visit_segment(vctx *c, fu_op *op) {
  uint32_t seg = ++c->n_segs;
  c->segs[seg - 1] = op;
  fu_ir_valstr vs;
  const char *sn = seg_name(op);
  for (uint32_t i = 0; i < op->n_operands; i++) {
    fu_value *v = op->operands[i];
    if (v && v->is_literal) {
      fu_error(c->diag, op->loc, "segment '@%s': operand %" PRIu32 " is a literal", sn, i);
    } else if (in_fusion(c, v)) {
      if (c->opnd_stamp[v->id] == seg)
        fu_error(c->diag, op->loc, "segment '@%s' lists operand %s twice", sn, fu_ir_value_str(&vs, v));
      c->opnd_stamp[v->id] = seg;
    }
  }
  fu_block *body = op->u.segment.body;
  if (!body) {
    fu_error(c->diag, op->loc, "segment '@%s' has no body", sn);
    return;
  }
  if (body->parent_op != op) fu_error(c->diag, op->loc, "segment '@%s': its body does not point back to it", sn);
  if (!body->first) fu_error(c->diag, op->loc, "segment '@%s' is empty", sn);
  visit_body(c, body, seg, sn, 0);
  for (uint32_t i = 0; i < op->n_operands; i++) {
    fu_value *v = op->operands[i];
    if (in_fusion(c, v) && c->use_stamp[v->id] != seg)
      fu_error(c->diag, op->loc, "segment '@%s': operand %s is not used inside it", sn, fu_ir_value_str(&vs, v));
  }
}

/* Segment outputs are checked once every use is known: each listed output
 * is defined inside and used after, and each value used after is listed. */
static void check_segment_outputs(vctx *c) {
  for (uint32_t s = 0; s < c->n_segs; s++) {
    fu_op *op = c->segs[s];
    const fu_segment_info *si = &op->u.segment;
    fu_ir_valstr vs;
    for (uint32_t i = 0; i < si->n_outputs; i++) {
      fu_value *v = si->outputs ? si->outputs[i] : NULL;
      if (!v) {
        fu_error(c->diag, op->loc, "segment '@%s': output %" PRIu32 " is missing", seg_name(op), i);
        continue;
      }
      if (!in_fusion(c, v) || c->def_seg[v->id] != s + 1) {
        fu_error(c->diag, op->loc, "segment '@%s': output %s is not defined inside it", seg_name(op),
                 fu_ir_value_str(&vs, v));
        continue;
      }
      if (c->state[v->id] & V_LISTED_OUT) {
        fu_error(c->diag, op->loc, "segment '@%s' lists output %s twice", seg_name(op), fu_ir_value_str(&vs, v));
        continue;
      }
      c->state[v->id] |= V_LISTED_OUT;
      if (!c->outside_use[v->id])
        fu_error(c->diag, op->loc, "segment '@%s': output %s is not used after it", seg_name(op),
                 fu_ir_value_str(&vs, v));
    }
  }
  for (uint32_t id = 0; id < c->nv; id++) {
    if (!c->def_seg[id] || !c->outside_use[id] || (c->state[id] & V_LISTED_OUT)) continue;
    fu_op *op = c->segs[c->def_seg[id] - 1];
    fu_ir_valstr vs;
    fu_error(c->diag, op->loc, "segment '@%s' does not list %s among its outputs, but it is used outside it",
             seg_name(op), fu_ir_value_str(&vs, c->vals[id]));
    const fu_op *use = c->outside_use[id];
    if (fu_loc_known(use->loc)) fu_note(c->diag, use->loc, "used here by '%s'", op_name(use));
  }
}

/* Per-value arrays are sized by the fusion's value ids; all scratch is freed
 * on every path. */
static fu_status ctx_alloc(vctx *c) {
  size_t n = c->nv ? c->nv : 1;
  c->vals = fu_mem_calloc(&c->alloc, n, sizeof *c->vals);
  c->state = fu_mem_calloc(&c->alloc, n, sizeof *c->state);
  c->def_seg = fu_mem_calloc(&c->alloc, n, sizeof *c->def_seg);
  c->opnd_stamp = fu_mem_calloc(&c->alloc, n, sizeof *c->opnd_stamp);
  c->use_stamp = fu_mem_calloc(&c->alloc, n, sizeof *c->use_stamp);
  c->outside_use = fu_mem_calloc(&c->alloc, n, sizeof *c->outside_use);
  if (!c->vals || !c->state || !c->def_seg || !c->opnd_stamp || !c->use_stamp || !c->outside_use) return FU_ERR_NOMEM;
  return FU_OK;
}

static void ctx_free(vctx *c) {
  size_t n = c->nv ? c->nv : 1;
  if (c->vals) fu_mem_free(&c->alloc, c->vals, n * sizeof *c->vals);
  if (c->state) fu_mem_free(&c->alloc, c->state, n * sizeof *c->state);
  if (c->def_seg) fu_mem_free(&c->alloc, c->def_seg, n * sizeof *c->def_seg);
  if (c->opnd_stamp) fu_mem_free(&c->alloc, c->opnd_stamp, n * sizeof *c->opnd_stamp);
  if (c->use_stamp) fu_mem_free(&c->alloc, c->use_stamp, n * sizeof *c->use_stamp);
  if (c->outside_use) fu_mem_free(&c->alloc, c->outside_use, n * sizeof *c->outside_use);
  if (c->segs) fu_mem_free(&c->alloc, c->segs, (c->cap_segs ? c->cap_segs : 1) * sizeof *c->segs);
  strmap_free(&c->names);
  strmap_free(&c->syms);
}

fu_status fu_verify_fusion(fu_fusion *f, fu_diag_engine *diag) {
  if (!f || !diag) return FU_ERR_INVALID_ARG;
  unsigned errors_before = diag->n_errors;
  vctx c;
  memset(&c, 0, sizeof c);
  c.f = f;
  c.diag = diag;
  c.alloc = f->module ? f->module->alloc : fu_default_allocator();
  c.nv = f->next_value_id;
  fu_status st = ctx_alloc(&c);
  if (st == FU_OK) {
    prepass(&c);
    c.segs = fu_mem_calloc(&c.alloc, c.cap_segs ? c.cap_segs : 1, sizeof *c.segs);
    if (!c.segs || !strmap_init(&c.names, &c.alloc, c.nv) || !strmap_init(&c.syms, &c.alloc, c.n_input_dims))
      st = FU_ERR_NOMEM;
  }
  if (st != FU_OK) {
    fu_error(diag, f->loc, "out of memory verifying fusion '@%s'", f->name ? f->name : "");
    ctx_free(&c);
    return st;
  }
  for (fu_op *op = f->body.first; op; op = op->next) {
    visit(&c, op, &f->body, 0);
    if (op->kind == FU_OP_SEGMENT) visit_segment(&c, op);
  }
  check_segment_outputs(&c);
  if (c.n_outputs == 0) fu_error(diag, f->loc, "fusion '@%s' has no outputs", f->name ? f->name : "");
  ctx_free(&c);
  return diag->n_errors != errors_before ? FU_ERR_VERIFY : FU_OK;
}

fu_status fu_verify_module(fu_module *m, fu_diag_engine *diag) {
  if (!m || !diag) return FU_ERR_INVALID_ARG;
  fu_status result = FU_OK;
  strmap names = {0};
  bool have_names = strmap_init(&names, &m->alloc, fu_module_num_fusions(m));
  for (fu_fusion *f = m->first; f; f = f->next) {
    if (have_names && f->name) {
      strslot *s = strmap_slot(&names, f->name);
      if (s->key) {
        fu_error(diag, f->loc, "fusion '@%s' is defined more than once", f->name);
        const fu_fusion *prev = s->ptr;
        if (fu_loc_known(prev->loc)) fu_note(diag, prev->loc, "previous definition is here");
        result = FU_ERR_VERIFY;
      } else {
        s->key = f->name;
        s->ptr = f;
      }
    }
    fu_status s = fu_verify_fusion(f, diag);
    if (s == FU_ERR_NOMEM || (s != FU_OK && result == FU_OK)) result = s;
  }
  strmap_free(&names);
  if (!have_names && result == FU_OK) result = FU_ERR_NOMEM;
  return result;
}
