/* fuser: exporting the Fusion IR as a runnable nvFuser repro script.
 *
 * The script uses nvFuser's current frontend syntax, so that it runs under
 * nvFuser itself and imports back into the same IR: inputs keep their
 * names, shapes print -1 for symbolic extents, literals become
 * define_scalar constants, and an extent that must be stated (a reshape to
 * a symbolic shape) is spelled with fd.ops.size of the input it comes
 * from.  Example data becomes the `inputs` list. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fuser/example_sizes.h"
#include "fuser/frontend.h"

typedef struct sym_origin {
  const fu_value *value;
  int32_t dim;
  const char *size_name; /* the Python name once fd.ops.size was emitted */
} sym_origin;

typedef struct exporter {
  fu_strbuf *out;
  const fu_module *m;
  fu_diag_engine *diag;
  const char *device;
  fu_arena *scratch;
  fu_allocator alloc;
  /* per fusion */
  const fu_fusion *f;
  const char **names; /* by value id */
  fu_py_map used;     /* Python names taken */
  fu_py_map origins;  /* symbol -> sym_origin */
  fu_example_sizes sizes; /* symbol sizes from the inputs' example shapes */
  bool with_inputs;       /* --with-inputs: every tensor input's sizes must be recorded */
  uint32_t n_fresh;
  bool uses_numpy;
} exporter;

static const char *const reserved_names[] = {
    "fd",    "torch", "nvfuser", "DataType", "FusionDefinition", "inputs", "placeholder_inputs", "numpy", "np",
    "range", "float", "out",     "fs",       "Fusion",           "_"};
static const char *const py_keywords[] = {"False",  "None",   "True",    "and",      "as",       "assert", "async",
                                          "await",  "break",  "class",   "continue", "def",      "del",    "elif",
                                          "else",   "except", "finally", "for",      "from",     "global", "if",
                                          "import", "in",     "is",      "lambda",   "nonlocal", "not",    "or",
                                          "pass",   "raise",  "return",  "try",      "while",    "with",   "yield"};

static bool is_identifier(const char *s) {
  if (!s || !*s || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_')) return false;
  for (const char *p = s; *p; p++)
    if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) return false;
  for (size_t i = 0; i < sizeof py_keywords / sizeof py_keywords[0]; i++)
    if (strcmp(s, py_keywords[i]) == 0) return false;
  return true;
}

static bool is_reserved(const char *s) {
  for (size_t i = 0; i < sizeof reserved_names / sizeof reserved_names[0]; i++)
    if (strcmp(s, reserved_names[i]) == 0) return true;
  return false;
}

static bool name_free(exporter *ex, const char *s) {
  return is_identifier(s) && !is_reserved(s) && !fu_py_map_get(&ex->used, s);
}

static fu_status nomem(exporter *ex) {
  fu_error(ex->diag, fu_loc_none(), "out of memory while exporting");
  return FU_ERR_NOMEM;
}

/* Claim `want` if it is a free identifier, else `<prefix><n>` for the first
 * free n. */
static const char *claim_name(exporter *ex, const char *want, const char *prefix) {
  char buf[128];
  if (want && name_free(ex, want)) {
    snprintf(buf, sizeof buf, "%s", want);
  } else {
    do snprintf(buf, sizeof buf, "%s%u", prefix, ex->n_fresh++);
    while (!name_free(ex, buf));
  }
  char *s = fu_arena_strdup(ex->scratch, buf);
  if (!s || !fu_py_map_set(&ex->used, s, s)) return NULL;
  return s;
}

/* A Python literal that reads back as the same value. */
static void put_py_float(fu_strbuf *sb, double v) {
  if (isnan(v))
    fu_strbuf_puts(sb, "float(\"nan\")");
  else if (isinf(v))
    fu_strbuf_puts(sb, v < 0 ? "float(\"-inf\")" : "float(\"inf\")");
  else
    fu_strbuf_put_double(sb, v);
}

static void put_scalar(fu_strbuf *sb, fu_dtype dt, fu_scalar_value v) {
  if (fu_dtype_is_float(dt))
    put_py_float(sb, v.f);
  else if (fu_dtype_is_int(dt))
    fu_strbuf_printf(sb, "%lld", (long long)v.i);
  else
    fu_strbuf_puts(sb, v.b ? "True" : "False");
}

static void put_int_list(fu_strbuf *sb, const int64_t *v, uint32_t n) {
  fu_strbuf_putc(sb, '[');
  for (uint32_t i = 0; i < n; i++) fu_strbuf_printf(sb, "%s%lld", i ? ", " : "", (long long)v[i]);
  fu_strbuf_putc(sb, ']');
}

static void indent(exporter *ex) { fu_strbuf_puts(ex->out, "    "); }

/* The Python name of an operand; literals are defined first with
 * define_scalar, as nvFuser prints them. */
static fu_status operand_name(exporter *ex, const fu_value *v, const char **out) {
  if (!v->is_literal) {
    *out = v->id < ex->f->next_value_id ? ex->names[v->id] : NULL;
    if (!*out) {
      fu_error(ex->diag, v->loc, "value used before it is defined");
      return FU_ERR_VERIFY;
    }
    return FU_OK;
  }
  const char *name = claim_name(ex, NULL, "S");
  if (!name) return nomem(ex);
  indent(ex);
  fu_strbuf_printf(ex->out, "%s = fd.define_scalar(", name);
  put_scalar(ex->out, v->type.dtype, v->literal);
  fu_strbuf_printf(ex->out, ", dtype=DataType.%s)\n", fu_py_datatype_name(v->type.dtype));
  *out = name;
  return FU_OK;
}

/* One extent of a stated shape: a constant, or the fd.ops.size scalar of
 * the input the symbol comes from (emitted the first time it is needed). */
static fu_status put_extent(exporter *ex, fu_strbuf *sb, fu_extent e, const fu_op *op) {
  if (fu_extent_is_const(e)) {
    fu_strbuf_printf(sb, "%lld", (long long)e.value);
    return FU_OK;
  }
  sym_origin *o = fu_py_map_get(&ex->origins, e.sym);
  if (!o) {
    fu_error(ex->diag, op->loc, "cannot export '%s': its symbolic extent '%s' is not an extent of any input",
             fu_op_info_of(op->kind)->name, e.sym);
    return FU_ERR_UNSUPPORTED;
  }
  if (!o->size_name) {
    char want[96];
    snprintf(want, sizeof want, "size_%s", e.sym);
    if (!(o->size_name = claim_name(ex, want, "size"))) return nomem(ex);
    indent(ex);
    fu_strbuf_printf(ex->out, "%s = fd.ops.size(%s, dim=%d)\n", o->size_name, ex->names[o->value->id], o->dim);
  }
  fu_strbuf_puts(sb, o->size_name);
  return FU_OK;
}

static fu_status put_shape(exporter *ex, fu_strbuf *sb, const fu_type *t, const fu_op *op) {
  fu_strbuf_putc(sb, '[');
  for (int32_t i = 0; i < t->rank; i++) {
    if (i) fu_strbuf_puts(sb, ", ");
    fu_status st = put_extent(ex, sb, t->dims[i], op);
    if (st != FU_OK) return st;
  }
  fu_strbuf_putc(sb, ']');
  return FU_OK;
}

/* An INPUT op as define_tensor / define_scalar(None); explicit strides are
 * stated as nvFuser's contiguity and stride order. */
static fu_status define_input(exporter *ex, const fu_op *op) {
  const fu_value *v = op->results[0];
  const fu_type *t = &v->type;
  fu_strbuf *o = ex->out;
  indent(ex);
  if (fu_type_is_scalar(t)) {
    fu_strbuf_printf(o, "%s = fd.define_scalar(None, dtype=DataType.%s)\n", ex->names[v->id],
                     fu_py_datatype_name(t->dtype));
    return FU_OK;
  }
  fu_strbuf_printf(o, "%s = fd.define_tensor(shape=[", ex->names[v->id]);
  for (int32_t i = 0; i < t->rank; i++)
    fu_strbuf_printf(o, "%s%lld", i ? ", " : "", fu_extent_is_const(t->dims[i]) ? (long long)t->dims[i].value : -1LL);
  fu_strbuf_puts(o, "]");
  const fu_layout *l = &op->u.input.layout;
  int8_t contig[FU_MAX_RANK];
  int32_t order[FU_MAX_RANK];
  const int8_t *c = l->contiguity;
  const int32_t *so = l->stride_order;
  if (l->strides && t->rank <= FU_MAX_RANK) {
    /* explicit strides: nvFuser states them as contiguity and stride order */
    for (int32_t i = 0; i < t->rank; i++) {
      int32_t rank_of = 0;
      for (int32_t j = 0; j < t->rank; j++)
        rank_of += l->strides[j] < l->strides[i] || (l->strides[j] == l->strides[i] && j > i);
      order[i] = rank_of;
    }
    for (int32_t i = 0; i < t->rank; i++) {
      contig[i] = FU_CONTIG_NONE;
      if (fu_extent_is_one(t->dims[i])) continue;
      /* the next inner dim in stride order */
      int32_t inner = -1;
      for (int32_t j = 0; j < t->rank; j++)
        if (order[j] < order[i] && !fu_extent_is_one(t->dims[j]) && (inner < 0 || order[j] > order[inner])) inner = j;
      if (inner < 0)
        contig[i] = l->strides[i] == 1 ? FU_CONTIG_TRUE : FU_CONTIG_FALSE;
      else
        contig[i] = fu_extent_is_const(t->dims[inner]) && l->strides[i] == l->strides[inner] * t->dims[inner].value
                        ? FU_CONTIG_TRUE
                        : FU_CONTIG_FALSE;
    }
    c = contig;
    so = order;
  }
  if (c) {
    /* nvFuser reads contiguity in allocation order (outermost first) when
     * a stride order is given: dim d is entry rank - 1 - so[d] */
    fu_strbuf_puts(o, ", contiguity=[");
    for (int32_t k = 0; k < t->rank; k++) {
      int32_t i = k;
      for (int32_t d = 0; so && d < t->rank; d++)
        if (so[d] == t->rank - 1 - k) i = d;
      fu_strbuf_printf(o, "%s%s", k ? ", " : "",
                       c[i] == FU_CONTIG_TRUE    ? "True"
                       : c[i] == FU_CONTIG_FALSE ? "False"
                                                 : "None");
    }
    fu_strbuf_puts(o, "]");
  }
  fu_strbuf_printf(o, ", dtype=DataType.%s, is_cpu=False", fu_py_datatype_name(t->dtype));
  if (so) {
    fu_strbuf_puts(o, ", stride_order=[");
    for (int32_t i = 0; i < t->rank; i++) fu_strbuf_printf(o, "%s%d", i ? ", " : "", so[i]);
    fu_strbuf_puts(o, "]");
  }
  fu_strbuf_puts(o, ")\n");
  /* symbols first seen here can be named later through fd.ops.size */
  for (int32_t i = 0; i < t->rank; i++) {
    if (fu_extent_is_const(t->dims[i]) || fu_py_map_get(&ex->origins, t->dims[i].sym)) continue;
    sym_origin *so2 = fu_arena_alloc(ex->scratch, sizeof *so2);
    if (!so2 || !fu_py_map_set(&ex->origins, t->dims[i].sym, so2)) return nomem(ex);
    so2->value = v;
    so2->dim = i;
  }
  return FU_OK;
}

/* The argument text of one op, into `args`; literal operands and size
 * scalars are emitted to the output first. */
static fu_status op_args(exporter *ex, const fu_op *op, fu_strbuf *args) {
  const char *names[4] = {NULL, NULL, NULL, NULL};
  fu_status st;
  const fu_op_info *info = fu_op_info_of(op->kind);
  if (info->cls != FU_OC_CAT)
    for (uint32_t i = 0; i < op->n_operands && i < 4; i++)
      if ((st = operand_name(ex, op->operands[i], &names[i])) != FU_OK) return st;
  const fu_type *rt = op->n_results ? &op->results[0]->type : NULL;
  switch (info->cls) {
    case FU_OC_UNARY: fu_strbuf_printf(args, "%s", names[0]); break;
    case FU_OC_CAST: fu_strbuf_printf(args, "%s, dtype=DataType.%s", names[0], fu_py_datatype_name(rt->dtype)); break;
    case FU_OC_BINARY: fu_strbuf_printf(args, "%s, %s", names[0], names[1]); break;
    case FU_OC_TERNARY: fu_strbuf_printf(args, "%s, %s, %s", names[0], names[1], names[2]); break;
    case FU_OC_REDUCE:
      fu_strbuf_printf(args, "%s, dims=", names[0]);
      put_int_list(args, op->u.reduce.axes.v, op->u.reduce.axes.n);
      fu_strbuf_printf(args, ", keepdim=%s, dtype=DataType.%s", op->u.reduce.keepdim ? "True" : "False",
                       fu_py_datatype_name(op->u.reduce.dtype));
      break;
    case FU_OC_VARIANCE:
      fu_strbuf_printf(args, "%s, dims=", names[0]);
      put_int_list(args, op->u.variance.axes.v, op->u.variance.axes.n);
      fu_strbuf_printf(args, ", correction=%lld, keepdim=%s", (long long)op->u.variance.correction,
                       op->u.variance.keepdim ? "True" : "False");
      break;
    case FU_OC_BROADCAST_IN_DIM:
      fu_strbuf_printf(args, "%s, shape=", names[0]);
      if ((st = put_shape(ex, args, rt, op)) != FU_OK) return st;
      fu_strbuf_puts(args, ", broadcast_dims=");
      put_int_list(args, op->u.broadcast_in_dim.broadcast_dims.v, op->u.broadcast_in_dim.broadcast_dims.n);
      break;
    case FU_OC_BROADCAST:
      fu_strbuf_printf(args, "%s, is_broadcast_dim=[", names[0]);
      for (uint32_t i = 0; i < op->u.broadcast.n; i++)
        fu_strbuf_printf(args, "%s%s", i ? ", " : "", op->u.broadcast.is_broadcast[i] ? "True" : "False");
      fu_strbuf_puts(args, "]");
      break;
    case FU_OC_EXPAND:
    case FU_OC_RESHAPE:
      fu_strbuf_printf(args, "%s, %s=", names[0], info->cls == FU_OC_EXPAND ? "shape" : "new_shape");
      if ((st = put_shape(ex, args, rt, op)) != FU_OK) return st;
      break;
    case FU_OC_PERMUTE:
    case FU_OC_SQUEEZE: {
      const fu_int_list *l = info->cls == FU_OC_PERMUTE ? &op->u.permute.dims : &op->u.squeeze.dims;
      fu_strbuf_printf(args, "%s, dims=", names[0]);
      put_int_list(args, l->v, l->n);
      break;
    }
    case FU_OC_SLICE:
      fu_strbuf_printf(args, "%s, start_indices=", names[0]);
      put_int_list(args, op->u.slice.starts.v, op->u.slice.starts.n);
      fu_strbuf_puts(args, ", end_indices=");
      put_int_list(args, op->u.slice.ends.v, op->u.slice.ends.n);
      fu_strbuf_puts(args, ", strides=");
      put_int_list(args, op->u.slice.steps.v, op->u.slice.steps.n);
      break;
    case FU_OC_CAT:
      fu_strbuf_putc(args, '[');
      for (uint32_t i = 0; i < op->n_operands; i++) {
        const char *n;
        if ((st = operand_name(ex, op->operands[i], &n)) != FU_OK) return st;
        fu_strbuf_printf(args, "%s%s", i ? ", " : "", n);
      }
      fu_strbuf_printf(args, "], dim=%lld", (long long)op->u.cat.dim);
      break;
    case FU_OC_PAD:
      fu_strbuf_printf(args, "%s, pad_widths=", names[0]);
      put_int_list(args, op->u.pad.widths.v, op->u.pad.widths.n);
      fu_strbuf_printf(args, ", value=%s", names[1]);
      break;
    case FU_OC_FULL:
      fu_strbuf_puts(args, "shape=");
      if ((st = put_shape(ex, args, rt, op)) != FU_OK) return st;
      fu_strbuf_printf(args, ", fill_value=%s, dtype=DataType.%s", names[0], fu_py_datatype_name(rt->dtype));
      break;
    case FU_OC_IOTA: {
      fu_strbuf len;
      fu_strbuf_init(&len, ex->alloc);
      st = put_extent(ex, &len, rt->rank == 1 ? rt->dims[0] : (fu_extent){0, NULL}, op);
      if (st == FU_OK && fu_extent_is_const(rt->dims[0])) {
        /* nvFuser takes the length as a scalar */
        const char *n = claim_name(ex, NULL, "S");
        if (!n) st = nomem(ex);
        if (n) {
          indent(ex);
          fu_strbuf_printf(ex->out, "%s = fd.define_scalar(%s, dtype=DataType.Int)\n", n, len.data ? len.data : "0");
          fu_strbuf_clear(&len);
          fu_strbuf_puts(&len, n);
        }
      }
      if (st == FU_OK)
        fu_strbuf_printf(args, "%s, %s, %s, dtype=DataType.%s", len.data ? len.data : "", names[0], names[1],
                         fu_py_datatype_name(rt->dtype));
      fu_strbuf_free(&len);
      return st;
    }
    case FU_OC_MATMUL:
      fu_strbuf_printf(args, "%s, %s", names[0], names[1]);
      if (op->n_operands == 3) fu_strbuf_printf(args, ", %s", names[2]);
      break;
    case FU_OC_STRIDE_ORDER:
      fu_strbuf_printf(args, "%s, stride_order=", names[0]);
      put_int_list(args, op->u.stride_order.order.v, op->u.stride_order.order.n);
      break;
    case FU_OC_SCAN: fu_strbuf_printf(args, "%s, dim=%lld", names[0], (long long)op->u.scan.dim); break;
    case FU_OC_INDEX:
      if (op->kind == FU_OP_EMBEDDING_FWD)
        fu_strbuf_printf(args, "%s, %s, None, None, None, None, None", names[0], names[1]);
      else
        fu_strbuf_printf(args, "%s, %s, dim=%lld", names[0], names[1], (long long)op->u.index.dim);
      break;
    case FU_OC_RNG:
      /* fd.ops.uniform(minval, maxval, shape, rng_seed=, rng_offset=, dtype=) */
      fu_strbuf_printf(args, "%s, %s, shape=", names[0], names[1]);
      if ((st = put_shape(ex, args, rt, op)) != FU_OK) return st;
      fu_strbuf_printf(args, ", rng_seed=%s, rng_offset=%s, dtype=DataType.%s", names[2], names[3],
                       fu_py_datatype_name(rt->dtype));
      break;
    case FU_OC_PARTIAL:
      /* the schedule pass's own op: nvFuser has none (export the fusion
       * before `schedule`) */
      fu_error(ex->diag, op->loc, "cannot export 'partial_sum': nvFuser has no such op");
      return FU_ERR_UNSUPPORTED;
    case FU_OC_META: break;
  }
  return FU_OK;
}

/* One op as one fd.ops call (outputs as fd.add_output). */
static fu_status export_op(exporter *ex, const fu_op *op) {
  if (op->kind == FU_OP_SEGMENT) return FU_OK; /* its body follows in the walk */
  if (op->kind == FU_OP_INPUT) return define_input(ex, op);
  if (op->kind == FU_OP_OUTPUT) {
    for (uint32_t i = 0; i < op->n_operands; i++) {
      const char *n;
      fu_status st = operand_name(ex, op->operands[i], &n);
      if (st != FU_OK) return st;
      const char *an = NULL;
      if (op->u.output.alias && (st = operand_name(ex, op->u.output.alias, &an)) != FU_OK) return st;
      indent(ex);
      if (an)
        fu_strbuf_printf(ex->out, "fd.add_output(%s, %s)\n", n, an);
      else
        fu_strbuf_printf(ex->out, "fd.add_output(%s)\n", n);
    }
    return FU_OK;
  }
  if (op->kind == FU_OP_IOTA && (op->results[0]->type.rank != 1)) {
    fu_error(ex->diag, op->loc, "cannot export 'iota' of rank %d", op->results[0]->type.rank);
    return FU_ERR_UNSUPPORTED;
  }
  fu_strbuf args;
  fu_strbuf_init(&args, ex->alloc);
  fu_status st = op_args(ex, op, &args);
  if (st == FU_OK && args.failed) st = nomem(ex);
  if (st == FU_OK) {
    indent(ex);
    for (uint32_t r = 0; r < op->n_results; r++)
      fu_strbuf_printf(ex->out, "%s%s", r ? ", " : "", ex->names[op->results[r]->id]);
    fu_strbuf_printf(ex->out, " = fd.ops.%s(%s)\n", fu_op_info_of(op->kind)->name, args.data ? args.data : "");
  }
  fu_strbuf_free(&args);
  return st;
}

/* Whether a layout maps two elements to one address (a stride-0 dim of
 * size > 1): torch cannot copy data into such a view. */
static bool overlapping(int32_t rank, const int64_t *shape, const int64_t *strides) {
  for (int32_t d = 0; d < rank; d++)
    if (strides && strides[d] == 0 && shape[d] > 1) return true;
  return false;
}

/* One inputs-list entry: torch code that makes the example data (or
 * made-up data of the right shape and dtype).  With --with-inputs a .npy
 * input becomes storage of its layout viewed with as_strided and filled
 * from the file (`.copy_(torch.from_numpy(...))`), so the script has the
 * run's shapes, strides, dtypes and values; a size the IR does not record
 * is an error at the input. */
static fu_status export_example(exporter *ex, const fu_fusion *f, const fu_op *op, fu_strbuf *unbound) {
  fu_strbuf *o = ex->out;
  const fu_value *v = op->results[0];
  const fu_type *t = &v->type;
  const fu_example *e = &op->u.input.example;
  if (fu_type_is_scalar(t)) {
    fu_scalar_value val = e->init == FU_INIT_VALUE ? e->value : (fu_scalar_value){0};
    if (e->init != FU_INIT_VALUE) {
      if (fu_dtype_is_float(t->dtype))
        val.f = 1.0;
      else if (fu_dtype_is_int(t->dtype))
        val.i = 1;
      else
        val.b = true;
    }
    put_scalar(o, t->dtype, val);
    return FU_OK;
  }
  int64_t shape[FU_MAX_RANK];
  int32_t rank = t->rank > FU_MAX_RANK ? FU_MAX_RANK : t->rank;
  for (int32_t d = 0; d < rank; d++) {
    if (e->rank == t->rank && e->shape) {
      shape[d] = e->shape[d];
    } else if (fu_extent_is_const(t->dims[d])) {
      shape[d] = t->dims[d].value;
    } else {
      bool found = fu_example_sizes_get(&ex->sizes, t->dims[d].sym, &shape[d]);
      if (!found && ex->with_inputs) {
        fu_error(ex->diag, op->loc,
                 "input '%%%s' records no size for '%s' (dim %d): --with-inputs needs example_shape=[...] or "
                 "constant extents",
                 v->name ? v->name : "?", t->dims[d].sym, d);
        return FU_ERR_INVALID_ARG;
      }
      if (!found) shape[d] = FU_DEFAULT_EXTENT;
      if (!found && !strstr(unbound->data ? unbound->data : "", t->dims[d].sym))
        fu_strbuf_printf(unbound, "%s%s = %d", unbound->len ? ", " : "", t->dims[d].sym, FU_DEFAULT_EXTENT);
    }
  }
  const int64_t *strides = e->strides ? e->strides : op->u.input.layout.strides;
  /* --with-inputs: the .npy data go into tensors of the recorded layout */
  bool fill_from_npy = ex->with_inputs && e->init == FU_INIT_NPY && !overlapping(rank, shape, strides);
  bool strided = false;
  if (strides) {
    int64_t s = 1;
    for (int32_t d = rank - 1; d >= 0; d--) {
      strided |= shape[d] != 1 && strides[d] != s;
      if (__builtin_mul_overflow(s, shape[d], &s)) s = INT64_MAX; /* then no stride matches */
    }
  }
  /* with strides: make the storage, then view it */
  int64_t storage = 1;
  if (strided)
    for (int32_t d = 0; d < rank; d++) {
      if (shape[d] == 0) {
        storage = 0;
        break;
      }
      int64_t span;
      if (__builtin_mul_overflow(shape[d] - 1, strides[d], &span) || __builtin_add_overflow(storage, span, &storage))
        storage = INT64_MAX; /* the verifier keeps examples far below this */
    }
  const char *dtype = fu_py_torch_dtype_name(t->dtype);
  bool is_float = fu_dtype_is_float(t->dtype);
  fu_strbuf sizes;
  fu_strbuf_init(&sizes, ex->alloc);
  if (strided) {
    fu_strbuf_printf(&sizes, "%lld", (long long)storage);
  } else {
    for (int32_t d = 0; d < rank; d++) fu_strbuf_printf(&sizes, "%s%lld", d ? ", " : "", (long long)shape[d]);
  }
  const char *sz = sizes.data ? sizes.data : "";
  bool empty = sizes.len == 0;
  if (e->nonzero && (e->init == FU_INIT_RANDN || e->init == FU_INIT_RANDINT)) {
    /* make_tensor draws no zero (its range for ints is randint's) */
    fu_strbuf_printf(o, "torch.testing.make_tensor(%s, dtype=torch.%s, device=\"%s\"", empty ? "()" : sz, dtype,
                     ex->device);
    if (e->init == FU_INIT_RANDINT)
      fu_strbuf_printf(o, ", low=%lld, high=%lld", (long long)e->low, (long long)e->high);
    fu_strbuf_puts(o, ", exclude_zero=True)");
  } else switch (e->init) {
    case FU_INIT_RANDINT:
      fu_strbuf_printf(o, "torch.randint(%lld, %lld, (%s%s), dtype=torch.%s, device=\"%s\")", (long long)e->low,
                       (long long)e->high, sz, strided || rank == 1 ? "," : "", dtype, ex->device);
      break;
    case FU_INIT_ZEROS:
    case FU_INIT_ONES:
      fu_strbuf_printf(o, "torch.%s(%s, dtype=torch.%s, device=\"%s\")", e->init == FU_INIT_ZEROS ? "zeros" : "ones",
                       empty ? "()" : sz, dtype, ex->device);
      break;
    case FU_INIT_NPY:
      ex->uses_numpy = true;
      if (fill_from_npy || ex->with_inputs) {
        /* storage of the recorded layout; its values come from the file below
         * (an overlapping layout keeps random values: say so) */
        if (!fill_from_npy)
          fu_strbuf_printf(o, "# '%s' has an expanded (stride 0) layout: random data here; the run's values are in %s\n    ",
                           v->name ? v->name : "?", e->npy_path ? e->npy_path : "?");
        if (is_float)
          fu_strbuf_printf(o, "torch.randn(%s, dtype=torch.%s, device=\"%s\")", empty ? "()" : sz, dtype, ex->device);
        else
          fu_strbuf_printf(o, "torch.testing.make_tensor(%s, dtype=torch.%s, device=\"%s\")", empty ? "()" : sz,
                           dtype, ex->device);
        break;
      }
      fu_strbuf_printf(o, "torch.from_numpy(numpy.load(\"%s\")).to(\"%s\")", e->npy_path ? e->npy_path : "",
                       ex->device);
      strided = false;
      break;
    case FU_INIT_RAND:
      if (is_float) {
        fu_strbuf_printf(o, "torch.rand(%s, dtype=torch.%s, device=\"%s\")", empty ? "()" : sz, dtype, ex->device);
        break;
      }
      /* fall through */
    default:
      if (is_float)
        fu_strbuf_printf(o, "torch.randn(%s, dtype=torch.%s, device=\"%s\")", empty ? "()" : sz, dtype, ex->device);
      else
        fu_strbuf_printf(o, "torch.testing.make_tensor(%s, dtype=torch.%s, device=\"%s\")", empty ? "()" : sz, dtype,
                         ex->device);
      break;
  }
  if (strided) {
    fu_strbuf_puts(o, ".as_strided((");
    for (int32_t d = 0; d < rank; d++) fu_strbuf_printf(o, "%s%lld", d ? ", " : "", (long long)shape[d]);
    fu_strbuf_puts(o, rank == 1 ? ",), (" : "), (");
    for (int32_t d = 0; d < rank; d++) fu_strbuf_printf(o, "%s%lld", d ? ", " : "", (long long)strides[d]);
    fu_strbuf_puts(o, rank == 1 ? ",))" : "))");
  }
  if (fill_from_npy)
    fu_strbuf_printf(o, ".copy_(torch.from_numpy(numpy.load(\"%s\"))%s)", e->npy_path ? e->npy_path : "",
                     t->dtype == FU_DT_BF16 ? ".view(torch.bfloat16)" : "");
  fu_strbuf_free(&sizes);
  return FU_OK;
}

/* The inputs list and the execute call; inputs without any example data
 * go into `placeholder_inputs`, which the importer skips, so that the IR
 * imports back without example data it never had. */
static fu_status export_inputs(exporter *ex, const fu_fusion *f) {
  fu_strbuf *o = ex->out;
  uint32_t n = 0, with_data = 0;
  for (const fu_op *op = f->body.first; op; op = op->next)
    if (op->kind == FU_OP_INPUT) {
      n++;
      with_data += op->u.input.example.init != FU_INIT_NONE;
    }
  bool placeholder = n > 0 && with_data == 0;
  if (placeholder && ex->with_inputs) {
    fu_error(ex->diag, f->loc,
             "fusion '@%s' records no input data (example=... or npy=\"...\" on its inputs), which --with-inputs writes",
             f->name ? f->name : "");
    return FU_ERR_INVALID_ARG;
  }
  const char *list = placeholder ? "placeholder_inputs" : "inputs";
  size_t comment_at = o->len;
  if (placeholder)
    fu_strbuf_puts(o, "# The IR has no example data: these inputs are made up (fuser-translate ignores this list).\n");
  fu_strbuf unbound;
  fu_strbuf_init(&unbound, ex->alloc);
  fu_strbuf_printf(o, "%s = [\n", list);
  fu_status st = FU_OK;
  for (const fu_op *op = f->body.first; op && st == FU_OK; op = op->next) {
    if (op->kind != FU_OP_INPUT) continue;
    fu_strbuf_puts(o, "    ");
    st = export_example(ex, f, op, &unbound);
    fu_strbuf_puts(o, ",\n");
  }
  fu_strbuf_puts(o, "]\n");
  if (unbound.len) {
    /* say which sizes were made up, above the list */
    fu_strbuf note;
    fu_strbuf_init(&note, ex->alloc);
    fu_strbuf_printf(&note, "# Unbound symbolic extents get size %d: %s.\n", FU_DEFAULT_EXTENT, unbound.data);
    fu_strbuf tail;
    fu_strbuf_init(&tail, ex->alloc);
    fu_strbuf_append(&tail, o->data + comment_at, o->len - comment_at);
    o->len = comment_at;
    if (o->data) o->data[o->len] = '\0';
    fu_strbuf_append(o, note.data, note.len);
    fu_strbuf_append(o, tail.data, tail.len);
    fu_strbuf_free(&note);
    fu_strbuf_free(&tail);
  }
  fu_strbuf_free(&unbound);
  fu_strbuf_printf(o, "fd.execute(%s)\n", list);
  return st;
}

/* One fusion: its definition, the with block and its inputs. */
static fu_status export_fusion(exporter *ex, const fu_fusion *f, const char *py_name) {
  ex->f = f;
  ex->n_fresh = 0;
  fu_py_map_init(&ex->used, ex->alloc);
  fu_py_map_init(&ex->origins, ex->alloc);
  fu_status st = FU_OK;
  ex->names = fu_arena_calloc(ex->scratch, f->next_value_id ? f->next_value_id : 1, sizeof *ex->names);
  if (!ex->names) st = nomem(ex);
  /* names first, in definition order, so generated ones never steal a
   * name the IR uses later */
  for (fu_op *op = fu_walk_first((fu_block *)&f->body); op && st == FU_OK; op = fu_walk_next(op))
    for (uint32_t r = 0; r < op->n_results; r++) {
      const fu_value *v = op->results[r];
      if (v->name && name_free(ex, v->name) && !(ex->names[v->id] = claim_name(ex, v->name, "T"))) st = nomem(ex);
    }
  for (fu_op *op = fu_walk_first((fu_block *)&f->body); op && st == FU_OK; op = fu_walk_next(op))
    for (uint32_t r = 0; r < op->n_results; r++) {
      const fu_value *v = op->results[r];
      if (!ex->names[v->id] && !(ex->names[v->id] = claim_name(ex, NULL, fu_type_is_scalar(&v->type) ? "S" : "T")))
        st = nomem(ex);
    }
  if (st == FU_OK) {
    fu_strbuf_printf(ex->out, "\ndef %s(fd : FusionDefinition) -> None :\n", py_name);
    size_t body_start = ex->out->len;
    for (fu_op *op = fu_walk_first((fu_block *)&f->body); op && st == FU_OK; op = fu_walk_next(op))
      st = export_op(ex, op);
    if (st == FU_OK && ex->out->len == body_start) fu_strbuf_puts(ex->out, "    pass\n");
  }
  if (st == FU_OK) {
    fu_strbuf_printf(ex->out, "\nwith FusionDefinition() as fd:\n    %s(fd)\n\n", py_name);
    if (fu_example_sizes_bind(&ex->sizes, f, ex->alloc) != FU_OK) st = nomem(ex);
    if (st == FU_OK) st = export_inputs(ex, f);
    fu_example_sizes_free(&ex->sizes);
  }
  fu_py_map_free(&ex->used);
  fu_py_map_free(&ex->origins);
  return st;
}

fu_status fu_py_export(fu_strbuf *out, const fu_module *m, const fu_py_export_options *opts, fu_diag_engine *diag) {
  exporter ex;
  memset(&ex, 0, sizeof ex);
  ex.m = m;
  ex.diag = diag;
  ex.alloc = m->alloc;
  ex.device = opts && opts->device ? opts->device : "cuda";
  ex.with_inputs = opts && opts->with_inputs;
  ex.scratch = fu_arena_new(m->alloc);
  if (!ex.scratch) return nomem(&ex);
  fu_strbuf body;
  fu_strbuf_init(&body, m->alloc);
  ex.out = &body;
  fu_status st = FU_OK;
  fu_py_map fn_names;
  fu_py_map_init(&fn_names, m->alloc);
  for (const fu_fusion *f = m->first; f && st == FU_OK; f = f->next) {
    /* a valid, unique Python function name */
    char buf[128];
    const char *src = f->name ? f->name : "fusion";
    size_t n = 0;
    if (!((*src >= 'A' && *src <= 'Z') || (*src >= 'a' && *src <= 'z') || *src == '_')) buf[n++] = '_';
    for (const char *p = src; *p && n < sizeof buf - 16; p++)
      buf[n++] = ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')) ? *p : '_';
    buf[n] = '\0';
    for (uint32_t k = 1; !is_identifier(buf) || is_reserved(buf) || fu_py_map_get(&fn_names, buf); k++)
      snprintf(buf + n, sizeof buf - n, "_%u", k);
    char *name = fu_arena_strdup(ex.scratch, buf);
    if (!name || !fu_py_map_set(&fn_names, name, name)) {
      st = nomem(&ex);
      break;
    }
    st = export_fusion(&ex, f, name);
  }
  fu_py_map_free(&fn_names);
  if (st == FU_OK && body.failed) st = nomem(&ex);
  if (st == FU_OK) {
    if (opts && opts->source_name)
      fu_strbuf_printf(out, "# Generated by fuser-translate from %s.\n", opts->source_name);
    fu_strbuf_puts(out, "import torch\n");
    if (ex.uses_numpy) fu_strbuf_puts(out, "import numpy\n");
    fu_strbuf_puts(out, "from nvfuser import FusionDefinition, DataType\n");
    fu_strbuf_append(out, body.data ? body.data : "", body.len);
    if (out->failed) st = nomem(&ex);
  }
  fu_strbuf_free(&body);
  fu_arena_free(ex.scratch);
  return st;
}
