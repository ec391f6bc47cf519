/* fuser: the .fir printer (canonical form, docs/ir.md "Canonical form").
 *
 * One op per line, 2-space indentation per nesting level, attributes in a
 * fixed order per op class, every result type written out.  Values without a
 * usable name (none, not a valid name, or a duplicate of an earlier value's
 * name in the same fusion) get a generated `%v<id>` that is checked against
 * every other name in the fusion, so the output always parses back. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fuser/kir_text.h" /* codegen: kernels inside segments */
#include "fuser/print.h"
#include "fuser/schedule.h" /* codegen: schedules inside segments */
#include "fuser/gemm.h"     /* matmul segments: the gemm plan */
#include "lexer.h"

typedef struct pctx {
  fu_strbuf *out;
  const fu_print_options *opts;
  const char **names; /* by value id; NULL entries fall back to v->name */
  uint32_t n_names;
} pctx;

static bool valid_name(const char *s) {
  if (!s || !*s) return false;
  for (; *s; s++)
    if (!fu_txt_is_name_char(*s)) return false;
  return true;
}

static void put_int(fu_strbuf *sb, int64_t v) {
  char buf[24];
  int n = snprintf(buf, sizeof buf, "%" PRId64, v);
  fu_strbuf_append(sb, buf, (size_t)n);
}

static void put_indent(fu_strbuf *sb, int indent) {
  static const char spaces[] = "                                ";
  while (indent > 0) {
    int n = indent < 32 ? indent : 32;
    fu_strbuf_append(sb, spaces, (size_t)n);
    indent -= n;
  }
}

/* Literal text: bare when the literal is untyped and has its kind's
 * default dtype (f64, i64, bool), else `dtype(value)`. */
static void put_literal(fu_strbuf *sb, const fu_value *v) {
  fu_dtype dt = v->type.dtype;
  bool bare = !v->literal_typed && (dt == FU_DT_F64 || dt == FU_DT_I64 || dt == FU_DT_BOOL);
  if (!bare) {
    fu_strbuf_puts(sb, fu_dtype_name(dt));
    fu_strbuf_putc(sb, '(');
  }
  if (fu_dtype_is_float(dt))
    fu_strbuf_put_double(sb, v->literal.f);
  else if (fu_dtype_is_int(dt))
    put_int(sb, v->literal.i);
  else
    fu_strbuf_puts(sb, v->literal.b ? "true" : "false");
  if (!bare) fu_strbuf_putc(sb, ')');
}

static void put_value(const pctx *c, const fu_value *v) {
  if (v->is_literal) {
    put_literal(c->out, v);
    return;
  }
  fu_strbuf_putc(c->out, '%');
  const char *n = c->names && v->id < c->n_names ? c->names[v->id] : NULL;
  if (!n && valid_name(v->name)) n = v->name;
  if (n) {
    fu_strbuf_puts(c->out, n);
  } else {
    fu_strbuf_putc(c->out, 'v');
    put_int(c->out, v->id);
  }
}

/* ---- codegen: value references in schedules use the fusion's names ---- */
static void put_value_ref_cb(void *user, fu_strbuf *out, const fu_value *v) {
  pctx c = *(const pctx *)user;
  c.out = out;
  put_value(&c, v);
}
/* ---- end codegen ---- */

void fu_print_value_ref(fu_strbuf *out, const fu_value *v) {
  pctx c = {out, NULL, NULL, 0};
  put_value(&c, v);
}

void fu_print_type(fu_strbuf *out, const fu_type *t) {
  fu_strbuf_puts(out, fu_dtype_name(t->dtype));
  if (t->rank < 0) return;
  fu_strbuf_putc(out, '[');
  for (int32_t i = 0; i < t->rank; i++) {
    if (i) fu_strbuf_puts(out, ", ");
    if (!t->dims) fu_strbuf_putc(out, '?');
    else if (t->dims[i].sym) fu_strbuf_puts(out, t->dims[i].sym);
    else put_int(out, t->dims[i].value);
  }
  fu_strbuf_putc(out, ']');
}

/* ---- attributes --------------------------------------------------------- */

/* Writes " {" before the first attribute and ", " before the others. */
static void attr_name(fu_strbuf *sb, int *count, const char *name) {
  fu_strbuf_puts(sb, (*count)++ ? ", " : " {");
  fu_strbuf_puts(sb, name);
  fu_strbuf_putc(sb, '=');
}

static void attr_end(fu_strbuf *sb, int count) {
  if (count) fu_strbuf_putc(sb, '}');
}

static void put_i64s(fu_strbuf *sb, const int64_t *v, uint32_t n) {
  fu_strbuf_putc(sb, '[');
  for (uint32_t i = 0; i < n; i++) {
    if (i) fu_strbuf_puts(sb, ", ");
    put_int(sb, v[i]);
  }
  fu_strbuf_putc(sb, ']');
}

static void attr_list(fu_strbuf *sb, int *count, const char *name, fu_int_list l) {
  attr_name(sb, count, name);
  put_i64s(sb, l.v, l.v ? l.n : 0);
}

static void put_string(fu_strbuf *sb, const char *s) {
  fu_strbuf_putc(sb, '"');
  for (; s && *s; s++) {
    if (*s == '"' || *s == '\\') fu_strbuf_putc(sb, '\\');
    fu_strbuf_putc(sb, *s);
  }
  fu_strbuf_putc(sb, '"');
}

/* Canonical order: strides, stride_order, contiguity, example | npy, seed,
 * low, high, nonzero, example_shape, example_strides.  seed=0 and
 * nonzero=false are omitted. */
static void put_input_attrs(fu_strbuf *sb, const fu_op *op) {
  const fu_type *t = &op->results[0]->type;
  const fu_layout *lay = &op->u.input.layout;
  const fu_example *ex = &op->u.input.example;
  int32_t rank = t->rank > 0 ? t->rank : 0;
  int n = 0;
  if (lay->strides && rank) {
    attr_name(sb, &n, "strides");
    put_i64s(sb, lay->strides, (uint32_t)rank);
  }
  if (lay->stride_order && rank) {
    attr_name(sb, &n, "stride_order");
    fu_strbuf_putc(sb, '[');
    for (int32_t i = 0; i < rank; i++) {
      if (i) fu_strbuf_puts(sb, ", ");
      put_int(sb, lay->stride_order[i]);
    }
    fu_strbuf_putc(sb, ']');
  }
  if (lay->contiguity && rank) {
    attr_name(sb, &n, "contiguity");
    fu_strbuf_putc(sb, '[');
    for (int32_t i = 0; i < rank; i++) {
      if (i) fu_strbuf_puts(sb, ", ");
      int8_t cg = lay->contiguity[i];
      fu_strbuf_puts(sb, cg == FU_CONTIG_NONE ? "none" : cg == FU_CONTIG_FALSE ? "false" : "true");
    }
    fu_strbuf_putc(sb, ']');
  }
  static const char *const kinds[] = {
      [FU_INIT_RANDN] = "randn", [FU_INIT_RAND] = "rand",       [FU_INIT_ZEROS] = "zeros",
      [FU_INIT_ONES] = "ones",   [FU_INIT_RANDINT] = "randint",
  };
  switch (ex->init) {
  case FU_INIT_NONE: break;
  case FU_INIT_NPY:
    attr_name(sb, &n, "npy");
    put_string(sb, ex->npy_path);
    break;
  case FU_INIT_VALUE:
    attr_name(sb, &n, "example");
    if (fu_dtype_is_float(t->dtype)) fu_strbuf_put_double(sb, ex->value.f);
    else if (fu_dtype_is_int(t->dtype)) put_int(sb, ex->value.i);
    else fu_strbuf_puts(sb, ex->value.b ? "true" : "false");
    break;
  default:
    attr_name(sb, &n, "example");
    fu_strbuf_puts(sb, (unsigned)ex->init < sizeof kinds / sizeof kinds[0] && kinds[ex->init] ? kinds[ex->init] : "?");
    break;
  }
  bool random = ex->init == FU_INIT_RANDN || ex->init == FU_INIT_RAND || ex->init == FU_INIT_RANDINT;
  if (random && ex->seed) {
    attr_name(sb, &n, "seed");
    fu_strbuf_printf(sb, "%" PRIu64, ex->seed);
  }
  if (ex->init == FU_INIT_RANDINT) {
    attr_name(sb, &n, "low");
    put_int(sb, ex->low);
    attr_name(sb, &n, "high");
    put_int(sb, ex->high);
  }
  if (ex->nonzero && (ex->init == FU_INIT_RANDN || ex->init == FU_INIT_RANDINT)) {
    attr_name(sb, &n, "nonzero");
    fu_strbuf_puts(sb, "true");
  }
  if (ex->init != FU_INIT_NONE && ex->init != FU_INIT_VALUE) {
    if (ex->rank >= 0) {
      attr_name(sb, &n, "example_shape");
      put_i64s(sb, ex->shape, ex->shape ? (uint32_t)ex->rank : 0);
    }
    if (ex->strides && rank) {
      attr_name(sb, &n, "example_strides");
      put_i64s(sb, ex->strides, (uint32_t)rank);
    }
  }
  attr_end(sb, n);
}

/* The attributes in the class's table order (fu_op_attr_spec), which is
 * the canonical order of docs/ir.md. */
static void put_op_attrs(fu_strbuf *sb, const fu_op *op) {
  int n = 0;
  fu_attr_spec spec = fu_op_attr_spec(fu_op_info_of(op->kind)->cls);
  for (uint32_t i = 0; i < spec.n; i++) {
    const fu_attr_field *f = &spec.fields[i];
    const char *at = (const char *)&op->u + f->offset;
    switch (f->kind) {
    case FU_AK_INT: {
      int64_t v;
      memcpy(&v, at, sizeof v);
      if (v == f->absent && !f->print_always) break;
      attr_name(sb, &n, f->name);
      put_int(sb, v);
      break;
    }
    case FU_AK_BOOL: {
      bool v;
      memcpy(&v, at, sizeof v);
      if (!v && !f->print_always) break;
      attr_name(sb, &n, f->name);
      fu_strbuf_puts(sb, v ? "true" : "false");
      break;
    }
    case FU_AK_DTYPE: {
      fu_dtype v;
      memcpy(&v, at, sizeof v);
      if (v == FU_DT_NONE && !f->print_always) break;
      attr_name(sb, &n, f->name);
      fu_strbuf_puts(sb, fu_dtype_name(v));
      break;
    }
    case FU_AK_INT_LIST: {
      fu_int_list l;
      memcpy(&l, at, sizeof l);
      attr_list(sb, &n, f->name, l);
      break;
    }
    case FU_AK_BOOL_LIST: {
      bool *v;
      uint32_t cnt;
      memcpy(&v, at, sizeof v);
      memcpy(&cnt, (const char *)&op->u + f->count_offset, sizeof cnt);
      attr_name(sb, &n, f->name);
      fu_strbuf_putc(sb, '[');
      for (uint32_t j = 0; v && j < cnt; j++) {
        if (j) fu_strbuf_puts(sb, ", ");
        fu_strbuf_puts(sb, v[j] ? "true" : "false");
      }
      fu_strbuf_putc(sb, ']');
      break;
    }
    }
  }
  if (op->host) {
    attr_name(sb, &n, "host");
    fu_strbuf_puts(sb, "true");
  }
  attr_end(sb, n);
}

/* ---- ops ---------------------------------------------------------------- */

static void put_loc_comment(const pctx *c, fu_loc loc) {
  if (!c->opts || !c->opts->print_locs || !fu_loc_known(loc)) return;
  fu_strbuf_printf(c->out, "  // %u:%u", fu_loc_file_line(loc), loc.col);
}

static void put_values(const pctx *c, fu_value *const *v, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    if (i) fu_strbuf_puts(c->out, ", ");
    put_value(c, v[i]);
  }
}

static void print_op(const pctx *c, const fu_op *op, int indent) {
  fu_strbuf *sb = c->out;
  put_indent(sb, indent);
  switch (op->kind) {
  case FU_OP_OUTPUT:
    fu_strbuf_puts(sb, "output ");
    put_values(c, op->operands, op->n_operands);
    if (op->u.output.alias) {
      fu_strbuf_puts(sb, " {alias=");
      put_value(c, op->u.output.alias);
      fu_strbuf_putc(sb, '}');
    }
    put_loc_comment(c, op->loc);
    fu_strbuf_putc(sb, '\n');
    return;
  case FU_OP_SEGMENT: {
    const fu_segment_info *s = &op->u.segment;
    fu_strbuf_puts(sb, "segment @");
    if (valid_name(s->name)) {
      fu_strbuf_puts(sb, s->name);
    } else {
      fu_strbuf_putc(sb, 's');
      put_int(sb, op->id);
    }
    fu_strbuf_putc(sb, ' ');
    fu_strbuf_puts(sb, fu_sched_kind_name(s->kind));
    fu_strbuf_puts(sb, " (");
    put_values(c, op->operands, op->n_operands);
    fu_strbuf_puts(sb, ") -> (");
    put_values(c, s->outputs, s->outputs ? s->n_outputs : 0);
    fu_strbuf_puts(sb, ") {");
    put_loc_comment(c, op->loc);
    fu_strbuf_putc(sb, '\n');
    if (s->body)
      for (const fu_op *o = s->body->first; o; o = o->next) print_op(c, o, indent + 2);
    /* ---- codegen: the schedule and the lowered kernel follow the ops ---- */
    if (s->gemm) fu_gemm_print(sb, s->gemm, indent + 2, put_value_ref_cb, (void *)c);
    if (s->schedule) fu_schedule_print(sb, s->schedule, indent + 2, put_value_ref_cb, (void *)c);
    if (s->kernel) fu_kernel_print_indented(sb, s->kernel, indent + 2);
    /* ---- end codegen ---- */
    put_indent(sb, indent);
    fu_strbuf_puts(sb, "}\n");
    return;
  }
  default: break;
  }
  put_values(c, op->results, op->n_results);
  fu_strbuf_puts(sb, " = ");
  fu_strbuf_puts(sb, fu_op_info_of(op->kind)->name);
  if (op->kind == FU_OP_INPUT) {
    fu_strbuf_putc(sb, ' ');
    if (op->n_results) {
      fu_print_type(sb, &op->results[0]->type);
      put_input_attrs(sb, op);
    }
  } else {
    if (op->n_operands) fu_strbuf_putc(sb, ' ');
    put_values(c, op->operands, op->n_operands);
    put_op_attrs(sb, op);
    if (op->n_results) {
      fu_strbuf_puts(sb, " : ");
      for (uint32_t i = 0; i < op->n_results; i++) {
        if (i) fu_strbuf_puts(sb, ", ");
        fu_print_type(sb, &op->results[i]->type);
      }
    }
  }
  put_loc_comment(c, op->loc);
  fu_strbuf_putc(sb, '\n');
}

void fu_print_op(fu_strbuf *out, const fu_op *op, int indent, const fu_print_options *opts) {
  pctx c = {out, opts, NULL, 0};
  print_op(&c, op, indent);
}

/* ---- fusions ------------------------------------------------------------ */

/* Chooses the printed name of every result in the fusion: its own name when
 * valid and not taken by an earlier value, else a fresh `v<id>` (with a
 * `_<k>` suffix if even that is taken).  false when memory runs out. */
static bool assign_names(const fu_fusion *f, fu_arena *arena, fu_txt_symtab *taken, const char **names) {
  fu_block *body = (fu_block *)&f->body;
  uint32_t nv = f->next_value_id;
  for (fu_op *op = fu_walk_first(body); op; op = fu_walk_next(op))
    for (uint32_t i = 0; i < op->n_results; i++) {
      fu_value *v = op->results[i];
      if (v->id >= nv || !valid_name(v->name)) continue;
      bool nomem;
      if (fu_txt_symtab_insert(taken, v->name, strlen(v->name), v, &nomem)) continue; /* a duplicate */
      if (nomem) return false;
      names[v->id] = v->name;
    }
  char buf[48];
  for (fu_op *op = fu_walk_first(body); op; op = fu_walk_next(op))
    for (uint32_t i = 0; i < op->n_results; i++) {
      fu_value *v = op->results[i];
      if (v->id >= nv || names[v->id]) continue;
      int len = snprintf(buf, sizeof buf, "v%" PRIu32, v->id);
      for (uint32_t k = 1; fu_txt_symtab_get(taken, buf, (size_t)len); k++)
        len = snprintf(buf, sizeof buf, "v%" PRIu32 "_%" PRIu32, v->id, k);
      char *s = fu_arena_strndup(arena, buf, (size_t)len);
      if (!s || !fu_txt_symtab_put(taken, s, (size_t)len, v)) return false;
      names[v->id] = s;
    }
  return true;
}

static void print_fusion_at(fu_strbuf *out, const fu_fusion *f, const fu_print_options *opts, uint32_t index) {
  fu_allocator alloc = f->module ? f->module->alloc : fu_default_allocator();
  fu_arena *arena = fu_arena_new(alloc);
  fu_txt_symtab taken;
  fu_txt_symtab_init(&taken, alloc);
  const char **names = arena ? fu_arena_calloc(arena, f->next_value_id ? f->next_value_id : 1, sizeof *names) : NULL;
  pctx c = {out, opts, NULL, 0};
  if (names && assign_names(f, arena, &taken, names)) {
    c.names = names;
    c.n_names = f->next_value_id;
  }
  fu_strbuf_puts(out, "fusion @");
  if (valid_name(f->name)) {
    fu_strbuf_puts(out, f->name);
  } else {
    fu_strbuf_putc(out, 'f');
    put_int(out, index);
  }
  fu_strbuf_puts(out, " {");
  put_loc_comment(&c, f->loc);
  fu_strbuf_putc(out, '\n');
  for (const fu_op *op = f->body.first; op; op = op->next) print_op(&c, op, 2);
  fu_strbuf_puts(out, "}\n");
  fu_txt_symtab_free(&taken);
  fu_arena_free(arena);
}

void fu_print_fusion(fu_strbuf *out, const fu_fusion *f, uint32_t index, const fu_print_options *opts) {
  print_fusion_at(out, f, opts, index);
}

void fu_print_module(fu_strbuf *out, const fu_module *m, const fu_print_options *opts) {
  uint32_t i = 0;
  for (const fu_fusion *f = m->first; f; f = f->next, i++) {
    if (i) fu_strbuf_putc(out, '\n');
    print_fusion_at(out, f, opts, i);
  }
}

fu_status fu_print_module_file(FILE *out, const fu_module *m, const fu_print_options *opts) {
  fu_strbuf sb;
  fu_strbuf_init(&sb, m->alloc);
  fu_print_module(&sb, m, opts);
  fu_status st = FU_OK;
  if (sb.failed) st = FU_ERR_NOMEM;
  else if (sb.len && fwrite(sb.data, 1, sb.len, out) != sb.len) st = FU_ERR_IO;
  if (st == FU_OK && fflush(out) != 0) st = FU_ERR_IO;
  fu_strbuf_free(&sb);
  return st;
}
