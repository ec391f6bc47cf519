/* fuser runtime: the plan of a lowered fusion on concrete inputs.
 *
 * Everything the device needs that can be decided on the host: which
 * values get memory and in which layout, which values are host aliases of
 * others (same buffer, other shape and strides), what each kernel
 * parameter receives, and each grid.  Keeping this apart from the driver
 * calls lets it be tested with no GPU, and makes the executor a thin loop. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "fuser/view_layout.h"
#include "fuser/gemm.h"
#include "internal.h"

/* ---- small helpers -------------------------------------------------------- */

static const char *vname(const fu_value *v) { return v && v->name ? v->name : "?"; }

static fu_loc op_loc(const fu_op *op) { return op ? op->loc : fu_loc_none(); }

/* Is `op` inside `block`, at any depth? */
static bool op_within(const fu_op *op, const fu_block *block) {
  for (const fu_block *b = op ? op->parent : NULL; b; b = b->parent_op ? b->parent_op->parent : NULL)
    if (b == block) return true;
  return false;
}

bool fu_rt_fusion_is_lowered(fu_fusion *f, const fu_op **why_op) {
  for (fu_op *op = f->body.first; op; op = op->next) {
    if (op->kind == FU_OP_INPUT || op->kind == FU_OP_OUTPUT || op->host) continue;
    if (op->kind == FU_OP_SEGMENT && fu_segment_runnable(op)) continue;
    if (why_op) *why_op = op;
    return false;
  }
  if (why_op) *why_op = NULL;
  return true;
}

/* Distinct elements a view addresses: dims of stride 0 repeat. */
static uint64_t distinct_elems(const fu_rt_view *v) {
  uint64_t n = 1;
  for (int32_t d = 0; d < v->rank; d++) {
    if (v->shape[d] == 0) return 0;
    if (v->strides[d] != 0) n *= (uint64_t)v->shape[d];
  }
  return n;
}

static uint64_t numel_of(const fu_rt_view *v) {
  uint64_t n = 1;
  for (int32_t d = 0; d < v->rank; d++) n *= (uint64_t)v->shape[d];
  return n;
}

/* A kernel writing through a layout whose elements overlap would race:
 * sorted by stride, each dim of extent > 1 must step past the whole of
 * the dims inside it. */
static bool layout_is_injective(const fu_rt_view *v) {
  int32_t order[FU_MAX_RANK], n = 0;
  for (int32_t d = 0; d < v->rank; d++) {
    if (v->shape[d] == 0) return true; /* no elements at all */
    if (v->shape[d] > 1) order[n++] = d;
  }
  for (int32_t i = 1; i < n; i++)
    for (int32_t j = i; j > 0 && v->strides[order[j]] < v->strides[order[j - 1]]; j--) {
      int32_t t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  int64_t need = 1;
  for (int32_t i = 0; i < n; i++) {
    int64_t s = v->strides[order[i]];
    if (s < need) return false;
    if (__builtin_mul_overflow(s, v->shape[order[i]], &need)) return false;
  }
  return true;
}

/* ---- building --------------------------------------------------------------- */

typedef struct builder {
  fu_rt_plan *p;
  fu_diag_engine *diag;
  const fu_arg *inputs;
  int32_t *input_pos; /* per value id: position among the inputs, or -1 */
  fu_layout_analysis la;
  bool la_ready;
} builder;

static fu_status add_buffer(builder *b, fu_rt_buffer_kind kind, const fu_value *root, fu_dtype dt, uint32_t input_index,
                            int64_t span_elems, int32_t *index) {
  fu_rt_plan *p = b->p;
  if (p->n_buffers == p->buffers_cap) {
    uint32_t cap = p->buffers_cap ? 2 * p->buffers_cap : 8;
    fu_rt_buffer *grown = fu_mem_realloc(&p->alloc, p->buffers, p->buffers_cap * sizeof *grown, cap * sizeof *grown);
    if (!grown) return FU_ERR_NOMEM;
    p->buffers = grown;
    p->buffers_cap = cap;
  }
  size_t es = fu_dtype_size(dt);
  uint64_t bytes = (uint64_t)span_elems * es;
  if (span_elems > 0 && bytes / es != (uint64_t)span_elems) return FU_ERR_NOMEM;
  bytes = (bytes + 15) & ~(uint64_t)15;
  if (bytes == 0) bytes = 16;
  fu_rt_buffer *buf = &p->buffers[p->n_buffers];
  memset(buf, 0, sizeof *buf);
  buf->kind = kind;
  buf->root = root;
  buf->input_index = input_index;
  buf->bytes = (size_t)bytes;
  *index = (int32_t)p->n_buffers++;
  return FU_OK;
}

/* coef * atoms, with symbols from the bindings and input strides from the
 * input tensors themselves. */
static fu_status eval_stride(builder *b, const fu_stride *s, const fu_value *v, int32_t dim, const fu_op *at,
                             int64_t *out) {
  int64_t r = s->coef;
  for (uint32_t i = 0; i < s->n_atoms; i++) {
    const fu_stride_atom *a = &s->atoms[i];
    int64_t f;
    if (a->sym) {
      if (!fu_bindings_lookup(&b->p->bindings, a->sym, &f)) {
        fu_error(b->diag, op_loc(at), "the stride of dim %d of '%%%s' needs symbol '%s', which no input binds", dim,
                 vname(v), a->sym);
        return FU_ERR_RUNTIME;
      }
    } else {
      int32_t pos = a->input && a->input->id < b->p->n_values ? b->input_pos[a->input->id] : -1;
      if (pos < 0 || b->inputs[pos].kind != FU_ARG_TENSOR || a->dim < 0 || a->dim >= b->inputs[pos].tensor.rank) {
        fu_error(b->diag, op_loc(at), "the stride of dim %d of '%%%s' refers to a stride of '%%%s' that is unknown",
                 dim, vname(v), vname(a->input));
        return FU_ERR_RUNTIME;
      }
      f = b->inputs[pos].tensor.strides[a->dim];
    }
    if (__builtin_mul_overflow(r, f, &r)) {
      fu_error(b->diag, op_loc(at), "the stride of dim %d of '%%%s' overflows int64", dim, vname(v));
      return FU_ERR_RUNTIME;
    }
  }
  *out = r;
  return FU_OK;
}

/* The concrete view of tensor value v (shape from the bindings, strides
 * from the layout analysis), in buffer `buffer`. */
static fu_status make_view(builder *b, const fu_value *v, int32_t buffer, const fu_op *at) {
  fu_rt_view *view = &b->p->views[v->id];
  memset(view, 0, sizeof *view);
  view->buffer = -1;
  view->dtype = v->type.dtype;
  view->rank = v->type.rank;
  char what[160];
  snprintf(what, sizeof what, "'%%%s'", vname(v));
  fu_status st = fu_interp_resolve_shape(&v->type, &b->p->bindings, view->shape, op_loc(at), what, b->diag);
  if (st != FU_OK) return st;
  fu_view_layout lay;
  fu_strbuf why;
  fu_strbuf_init(&why, b->p->alloc);
  st = fu_layout_analysis_value(&b->la, v, &lay, &why);
  if (st == FU_ERR_UNSUPPORTED)
    fu_error(b->diag, op_loc(at), "no memory layout for '%%%s': %s", vname(v), why.data ? why.data : "unknown reason");
  fu_strbuf_free(&why);
  if (st != FU_OK) return st;
  if (lay.rank != v->type.rank) {
    fu_error(b->diag, op_loc(at), "the layout of '%%%s' has rank %d, its type rank %d", vname(v), (int)lay.rank,
             (int)v->type.rank);
    return FU_ERR_RUNTIME;
  }
  for (int32_t d = 0; d < view->rank; d++) {
    if ((st = eval_stride(b, &lay.strides[d], v, d, at, &view->strides[d])) != FU_OK) return st;
    if (view->strides[d] < 0) {
      fu_error(b->diag, op_loc(at), "dim %d of '%%%s' has a negative stride %lld", d, vname(v),
               (long long)view->strides[d]);
      return FU_ERR_RUNTIME;
    }
  }
  view->buffer = buffer;
  return FU_OK;
}

/* A value a kernel writes gets a buffer of its own, laid out as the layout
 * analysis says (dense, or what makes host views of it dense). */
static fu_status kernel_buffer(builder *b, const fu_value *v, const fu_op *seg) {
  fu_status st = make_view(b, v, -1, seg);
  if (st != FU_OK) return st;
  fu_rt_view *view = &b->p->views[v->id];
  int64_t span;
  if (!fu_rt_span_elems(view->rank, view->shape, view->strides, &span)) {
    fu_error(b->diag, op_loc(seg), "'%%%s' is too large to allocate", vname(v));
    return FU_ERR_RUNTIME;
  }
  if (!layout_is_injective(view)) {
    fu_error(b->diag, op_loc(seg), "the layout of '%%%s' maps several elements to one address; a kernel cannot write it",
             vname(v));
    return FU_ERR_UNSUPPORTED;
  }
  int32_t idx;
  if ((st = add_buffer(b, FU_RT_BUF_KERNEL, v, v->type.dtype, 0, span, &idx)) != FU_OK) return st;
  view->buffer = idx;
  return FU_OK;
}

static bool same_layout(const fu_rt_view *a, const fu_rt_view *b) {
  if (a->rank != b->rank || a->dtype != b->dtype) return false;
  for (int32_t d = 0; d < a->rank; d++)
    if (a->shape[d] != b->shape[d] || (a->shape[d] > 1 && a->strides[d] != b->strides[d])) return false;
  return true;
}

/* An output its kernel writes in place (`alias=%P` on its parameter): its
 * view is the input's memory, which must be laid out as the kernel writes
 * the output. */
static fu_status inplace_view(builder *b, const fu_value *v, const fu_kval *alias, const fu_op *seg) {
  const fu_value *in = alias->tensor;
  const fu_rt_view *iv = in && in->id < b->p->n_values ? &b->p->views[in->id] : NULL;
  if (!iv || iv->buffer < 0) {
    fu_error(b->diag, op_loc(seg), "'%%%s' is written in place over '%%%s', which has no memory", vname(v), vname(in));
    return FU_ERR_INVALID_ARG;
  }
  fu_status st = make_view(b, v, -1, seg);
  if (st != FU_OK) return st;
  fu_rt_view *view = &b->p->views[v->id];
  if (!same_layout(view, iv)) {
    fu_error(b->diag, op_loc(seg), "'%%%s' is written in place over '%%%s', whose data came in another layout",
             vname(v), vname(in));
    return FU_ERR_UNSUPPORTED;
  }
  view->buffer = iv->buffer;
  return FU_OK;
}

/* Each `output %o {alias=%in}` that no kernel wrote in place: a copy from
 * o's memory into in's after the kernels (fu_rt_alias_copy). */
static fu_status plan_alias_copies(builder *b) {
  fu_rt_plan *p = b->p;
  for (const fu_op *op = p->fusion->body.first; op; op = op->next) {
    if (op->kind != FU_OP_OUTPUT || !op->u.output.alias || op->n_operands != 1) continue;
    const fu_value *o = op->operands[0], *in = op->u.output.alias;
    const fu_rt_view *ov = &p->views[o->id], *iv = &p->views[in->id];
    if (ov->buffer >= 0 && ov->buffer == iv->buffer) continue; /* in place */
    int64_t span;
    if (ov->buffer < 0 || iv->buffer < 0 || !fu_rt_span_elems(ov->rank, ov->shape, ov->strides, &span)) {
      fu_error(b->diag, op->loc, "output '%%%s' cannot be copied into its alias '%%%s': one has no memory", vname(o),
               vname(in));
      return FU_ERR_INVALID_ARG;
    }
    if (!layout_is_injective(iv)) {
      fu_error(b->diag, op->loc, "output '%%%s' cannot be written into its alias '%%%s', whose layout repeats elements",
               vname(o), vname(in));
      return FU_ERR_UNSUPPORTED;
    }
    bool dense = same_layout(ov, iv) && (uint64_t)span == numel_of(ov);
    fu_rt_alias_copy *grown = fu_mem_realloc(&p->alloc, p->alias_copies, p->n_alias_copies * sizeof *grown,
                                             (p->n_alias_copies + 1) * sizeof *grown);
    if (!grown) return FU_ERR_NOMEM;
    p->alias_copies = grown;
    p->alias_copies[p->n_alias_copies++] = (fu_rt_alias_copy){o, in, dense, (size_t)span * fu_dtype_size(ov->dtype)};
  }
  return FU_OK;
}

/* The bytes of `x` as a kernel parameter of dtype `dt`. */
static bool encode_int(fu_rt_karg *arg, fu_dtype dt, int64_t x) {
  memset(arg, 0, sizeof *arg);
  arg->buffer = -1;
  switch (dt) {
  case FU_DT_I64: arg->size = 8; memcpy(arg->bytes, &x, 8); return true;
  case FU_DT_I32: {
    if (x < INT32_MIN || x > INT32_MAX) return false;
    int32_t v = (int32_t)x;
    arg->size = 4;
    memcpy(arg->bytes, &v, 4);
    return true;
  }
  case FU_DT_BOOL: arg->size = 1; arg->bytes[0] = x != 0; return true;
  default: return false;
  }
}

static void encode_float(fu_rt_karg *arg, fu_dtype dt, double x) {
  memset(arg, 0, sizeof *arg);
  arg->buffer = -1;
  switch (dt) {
  case FU_DT_F64: arg->size = 8; memcpy(arg->bytes, &x, 8); break;
  case FU_DT_F32: {
    float f = (float)x;
    arg->size = 4;
    memcpy(arg->bytes, &f, 4);
    break;
  }
  case FU_DT_F16: {
    uint16_t h = fu_f16_from_double(x);
    arg->size = 2;
    memcpy(arg->bytes, &h, 2);
    break;
  }
  case FU_DT_BF16: {
    uint16_t h = fu_bf16_from_double(x);
    arg->size = 2;
    memcpy(arg->bytes, &h, 2);
    break;
  }
  default: break;
  }
}

/* A scalar input's value converted to the parameter's dtype as a cast
 * would. */
static bool encode_scalar_arg(fu_rt_karg *out, fu_dtype dt, const fu_arg *a) {
  if (fu_dtype_is_float(dt)) {
    encode_float(out, dt, fu_arg_scalar_as_double(a));
    return true;
  }
  int64_t v;
  if (fu_dtype_is_float(a->scalar_dtype)) {
    double d = a->scalar.f;
    if (d != d) d = 0;
    if (dt == FU_DT_BOOL) return encode_int(out, dt, a->scalar.f != 0);
    if (d >= 9.2233720368547758e18 || d < -9.2233720368547758e18) return false;
    v = (int64_t)d;
  } else if (fu_dtype_is_bool(a->scalar_dtype)) {
    v = a->scalar.b;
  } else {
    v = a->scalar.i;
  }
  if (dt == FU_DT_I32) v = (int32_t)(uint32_t)(uint64_t)v; /* a narrowing cast wraps */
  return encode_int(out, dt, v);
}

/* The bindings as fu_lexpr_eval takes them (free with free_lexpr_bindings). */
static fu_lexpr_binding *lexpr_bindings(fu_rt_plan *p) {
  fu_lexpr_binding *lb = fu_mem_calloc(&p->alloc, p->bindings.n ? p->bindings.n : 1, sizeof *lb);
  for (uint32_t i = 0; lb && i < p->bindings.n; i++) {
    lb[i].sym = p->bindings.v[i].sym;
    lb[i].value = p->bindings.v[i].value;
  }
  return lb;
}

static void free_lexpr_bindings(fu_rt_plan *p, fu_lexpr_binding *lb) {
  fu_mem_free(&p->alloc, lb, (p->bindings.n ? p->bindings.n : 1) * sizeof *lb);
}

/* A workspace parameter: its own buffer of ws_size elements, evaluated
 * with the launch's bindings as the grid is.  Scratch is no fusion data,
 * so it counts in neither bytes_read nor bytes_written. */
static fu_status plan_workspace(builder *b, const fu_op *seg, const fu_kernel *k, const fu_kval *kv, fu_rt_karg *arg) {
  fu_rt_plan *p = b->p;
  fu_lexpr_binding *lb = lexpr_bindings(p);
  if (!lb) return FU_ERR_NOMEM;
  const char *bad = NULL;
  int64_t n = 0;
  fu_status st = fu_lexpr_eval(kv->ws_size, lb, p->bindings.n, &n, &bad);
  free_lexpr_bindings(p, lb);
  if (st != FU_OK || n < 0) {
    fu_error(b->diag, op_loc(seg), "kernel '@%s': the size of workspace '%%%s' cannot be evaluated%s%s%s",
             k->name ? k->name : "?", kv->name ? kv->name : "?", bad ? " (symbol '" : "", bad ? bad : "",
             bad ? "' is bound by no input)" : st == FU_OK ? " (it is negative)" : " (overflow or a division by zero)");
    return bad ? FU_ERR_INVALID_ARG : FU_ERR_RUNTIME;
  }
  int32_t idx;
  st = add_buffer(b, FU_RT_BUF_WORKSPACE, NULL, kv->dtype, 0, n, &idx);
  if (st == FU_ERR_NOMEM)
    fu_error(b->diag, op_loc(seg), "kernel '@%s': workspace '%%%s' of %lld elements is too large",
             k->name ? k->name : "?", kv->name ? kv->name : "?", (long long)n);
  if (st != FU_OK) return st;
  p->buffers[idx].workspace = kv;
  p->buffers[idx].ws_elems = n;
  arg->buffer = idx;
  arg->size = 8;
  return FU_OK;
}

static fu_status plan_param(builder *b, const fu_op *seg, const fu_kernel *k, const fu_kval *kv, fu_rt_launch_plan *lp,
                            fu_rt_karg *arg) {
  fu_rt_plan *p = b->p;
  const char *kn = k->name ? k->name : "?";
  memset(arg, 0, sizeof *arg);
  arg->buffer = -1;
  if (kv->kind == FU_KV_TENSOR_PARAM && kv->ws_size) return plan_workspace(b, seg, k, kv, arg);
  if (kv->kind == FU_KV_TENSOR_PARAM) {
    const fu_value *v = kv->tensor;
    if (!v || v->id >= p->n_values || v->type.rank < 0) {
      fu_error(b->diag, op_loc(seg), "kernel '@%s': tensor parameter '%%%s' is bound to no tensor of the fusion", kn,
               kv->name ? kv->name : "?");
      return FU_ERR_INVALID_ARG;
    }
    if (kv->dtype != v->type.dtype) {
      fu_error(b->diag, op_loc(seg), "kernel '@%s': parameter '%%%s' is %s but '%%%s' is %s", kn,
               kv->name ? kv->name : "?", fu_dtype_name(kv->dtype), vname(v), fu_dtype_name(v->type.dtype));
      return FU_ERR_INVALID_ARG;
    }
    fu_rt_view *view = &p->views[v->id];
    if (view->buffer < 0 && kv->alias_of) {
      fu_status st = inplace_view(b, v, kv->alias_of, seg);
      if (st != FU_OK) return st;
    }
    if (view->buffer < 0) {
      if (!v->def || !op_within(v->def, seg->u.segment.body)) {
        fu_error(b->diag, op_loc(seg),
                 "kernel '@%s': parameter '%%%s' needs '%%%s', which no input, host alias or earlier kernel provides",
                 kn, kv->name ? kv->name : "?", vname(v));
        return FU_ERR_INVALID_ARG;
      }
      fu_status st = kernel_buffer(b, v, seg);
      if (st != FU_OK) return st;
    }
    arg->buffer = view->buffer;
    arg->size = 8;
    size_t es = fu_dtype_size(view->dtype);
    if (kv->readonly)
      lp->bytes_read += distinct_elems(view) * es;
    else
      lp->bytes_written += numel_of(view) * es;
    return FU_OK;
  }
  if (kv->kind != FU_KV_SCALAR_PARAM) {
    fu_error(b->diag, op_loc(seg), "kernel '@%s': parameter '%%%s' is neither a tensor nor a scalar", kn,
             kv->name ? kv->name : "?");
    return FU_ERR_INVALID_ARG;
  }
  switch (kv->role) {
  case FU_KP_EXTENT: {
    int64_t x;
    if (!kv->sym || !fu_bindings_lookup(&p->bindings, kv->sym, &x)) {
      fu_error(b->diag, op_loc(seg), "kernel '@%s': parameter '%%%s' is the extent '%s', which no input binds", kn,
               kv->name ? kv->name : "?", kv->sym ? kv->sym : "?");
      return FU_ERR_INVALID_ARG;
    }
    if (!encode_int(arg, kv->dtype, x)) {
      fu_error(b->diag, op_loc(seg), "kernel '@%s': extent %s = %lld does not fit parameter '%%%s' (%s)", kn, kv->sym,
               (long long)x, kv->name ? kv->name : "?", fu_dtype_name(kv->dtype));
      return FU_ERR_RUNTIME;
    }
    return FU_OK;
  }
  case FU_KP_STRIDE: {
    const fu_kval *t = kv->stride_of;
    const fu_value *v = t && t->kind == FU_KV_TENSOR_PARAM ? t->tensor : NULL;
    const fu_rt_view *view = v && v->id < p->n_values ? &p->views[v->id] : NULL;
    if (!view || view->buffer < 0 || kv->dim < 0 || kv->dim >= view->rank) {
      fu_error(b->diag, op_loc(seg), "kernel '@%s': parameter '%%%s' is a stride of dim %d of '%%%s', which is unknown",
               kn, kv->name ? kv->name : "?", (int)kv->dim, t && t->name ? t->name : "?");
      return FU_ERR_INVALID_ARG;
    }
    if (!encode_int(arg, kv->dtype, view->strides[kv->dim])) {
      fu_error(b->diag, op_loc(seg), "kernel '@%s': stride %lld does not fit parameter '%%%s' (%s)", kn,
               (long long)view->strides[kv->dim], kv->name ? kv->name : "?", fu_dtype_name(kv->dtype));
      return FU_ERR_RUNTIME;
    }
    return FU_OK;
  }
  case FU_KP_SCALAR_INPUT: {
    const fu_value *v = kv->scalar;
    int32_t pos = v && v->id < p->n_values ? b->input_pos[v->id] : -1;
    if (pos < 0 || b->inputs[pos].kind != FU_ARG_SCALAR) {
      fu_error(b->diag, op_loc(seg), "kernel '@%s': parameter '%%%s' is bound to '%%%s', which is not a scalar input",
               kn, kv->name ? kv->name : "?", vname(v));
      return FU_ERR_INVALID_ARG;
    }
    if (!encode_scalar_arg(arg, kv->dtype, &b->inputs[pos])) {
      fu_error(b->diag, op_loc(seg), "kernel '@%s': the value of '%%%s' does not fit parameter '%%%s' (%s)", kn,
               vname(v), kv->name ? kv->name : "?", fu_dtype_name(kv->dtype));
      return FU_ERR_RUNTIME;
    }
    return FU_OK;
  }
  default:
    fu_error(b->diag, op_loc(seg),
             "kernel '@%s': parameter '%%%s' has no role (extent, stride or input): the runtime does not know what to pass",
             kn, kv->name ? kv->name : "?");
    return FU_ERR_UNSUPPORTED;
  }
}

static fu_status plan_grid(builder *b, const fu_op *seg, const fu_kernel *k, fu_rt_launch_plan *lp) {
  fu_rt_plan *p = b->p;
  const char *kn = k->name ? k->name : "?";
  fu_lexpr_binding *lb = lexpr_bindings(p);
  if (!lb) return FU_ERR_NOMEM;
  static const int64_t limit[3] = {2147483647, 65535, 65535};
  static const char axis[3] = {'x', 'y', 'z'};
  fu_status st = FU_OK;
  int64_t g[3] = {1, 1, 1};
  for (int i = 0; i < 3 && st == FU_OK; i++) {
    const char *bad = NULL;
    if (k->grid[i]) st = fu_lexpr_eval(k->grid[i], lb, p->bindings.n, &g[i], &bad);
    if (st == FU_ERR_INVALID_ARG) {
      fu_error(b->diag, op_loc(seg), "kernel '@%s': grid.%c uses symbol '%s', which no input binds", kn, axis[i],
               bad ? bad : "?");
    } else if (st != FU_OK) {
      fu_error(b->diag, op_loc(seg), "kernel '@%s': grid.%c cannot be evaluated (overflow or a division by zero)", kn,
               axis[i]);
    } else if (g[i] == 0) {
      lp->empty = true;
    }
  }
  /* An empty axis means no block runs, whatever the others say (a zero
   * extent with a huge one beside it): the launch is skipped, not refused.
   * Otherwise a grid over the limit is refused: a kernel bound one block
   * per iteration would leave the rest undone. */
  for (int i = 0; i < 3 && st == FU_OK; i++) {
    if (g[i] < 0 || (!lp->empty && g[i] > limit[i])) {
      fu_error(b->diag, op_loc(seg), "kernel '@%s': grid.%c = %lld is outside [0, %lld]", kn, axis[i], (long long)g[i],
               (long long)limit[i]);
      st = FU_ERR_RUNTIME;
    } else {
      lp->config.grid[i] = (uint32_t)(g[i] > limit[i] ? limit[i] : g[i]);
    }
  }
  free_lexpr_bindings(p, lb);
  if (st != FU_OK) return st;
  uint64_t threads = 1;
  for (int i = 0; i < 3; i++) {
    if (k->block[i] == 0) {
      fu_error(b->diag, op_loc(seg), "kernel '@%s': block.%c is 0", kn, axis[i]);
      return FU_ERR_INVALID_ARG;
    }
    lp->config.block[i] = k->block[i];
    threads *= k->block[i];
  }
  if (threads > 1024) {
    fu_error(b->diag, op_loc(seg), "kernel '@%s': a block of %llu threads is more than 1024", kn,
             (unsigned long long)threads);
    return FU_ERR_INVALID_ARG;
  }
  lp->config.smem_bytes = k->smem_bytes;
  /* Blocks x*c .. x*c+c-1 form a cluster: the grid must hold whole ones
   * (fu_rt_launch checks again; here the error is at the segment). */
  if (k->cluster > 1) {
    lp->config.cluster = k->cluster;
    if (!lp->empty && lp->config.grid[0] % k->cluster != 0) {
      fu_error(b->diag, op_loc(seg),
               "kernel '@%s': grid.x = %u is not a multiple of its clusters of %u blocks (cluster=%u): the last "
               "cluster would be partial",
               kn, lp->config.grid[0], k->cluster, k->cluster);
      return FU_ERR_INVALID_ARG;
    }
  }
  return FU_OK;
}

const char *fu_rt_launch_name(const fu_rt_launch_plan *lp) {
  return lp->kernel ? lp->kernel->name : lp->gemm ? lp->gemm->name : "?";
}

/* A matmul segment: its operands' views (inputs, host aliases, earlier
 * segments' results), a buffer for its result, and the cuBLASLt call
 * (gemm_plan.c); the launch's arguments are the buffers it reads and
 * writes, so byte counts and the rest treat it as a kernel. */
static fu_status plan_gemm(builder *b, const fu_op *seg, fu_rt_launch_plan *lp) {
  fu_rt_plan *p = b->p;
  const fu_gemm *g = seg->u.segment.gemm;
  const char *sn = seg->u.segment.name ? seg->u.segment.name : "?";
  const fu_op *mm = fu_gemm_product(seg);
  lp->segment = seg;
  if (!mm || seg->u.segment.n_outputs != 1 || seg->u.segment.outputs[0] != g->d) {
    fu_error(b->diag, op_loc(seg), "matmul segment '@%s' must have one output, the result of its gemm plan", sn);
    return FU_ERR_INVALID_ARG;
  }
  const fu_value *in[3] = {g->a, g->b, g->bias};
  for (int i = 0; i < 3; i++)
    if (in[i] && p->views[in[i]->id].buffer < 0) {
      fu_error(b->diag, op_loc(seg), "matmul segment '@%s' reads '%%%s', which no input, host alias or earlier segment provides",
               sn, vname(in[i]));
      return FU_ERR_INVALID_ARG;
    }
  fu_status st = kernel_buffer(b, g->d, seg);
  if (st != FU_OK) return st;
  lp->gemm = fu_mem_calloc(&p->alloc, 1, sizeof *lp->gemm);
  lp->n_args = g->bias ? 4 : 3;
  lp->args = fu_mem_calloc(&p->alloc, lp->n_args, sizeof *lp->args);
  if (!lp->gemm || !lp->args) return FU_ERR_NOMEM;
  fu_strbuf why;
  fu_strbuf_init(&why, p->alloc);
  const fu_rt_view *vb = g->bias ? &p->views[g->bias->id] : NULL;
  bool ok = fu_rt_gemm_from_views(mm->kind, &p->views[g->a->id], &p->views[g->b->id], vb, &p->views[g->d->id], lp->gemm,
                                  &why);
  if (!ok)
    fu_error(b->diag, op_loc(seg), "matmul segment '@%s': cuBLASLt cannot run it: %s", sn, why.data ? why.data : "");
  fu_strbuf_free(&why);
  if (!ok) return FU_ERR_UNSUPPORTED;
  snprintf(lp->gemm->name, sizeof lp->gemm->name, "cublaslt_%s", sn);
  lp->gemm->act = (int)g->act;
  lp->gemm->alpha = (float)g->alpha;
  const fu_value *args[4] = {g->a, g->b, g->d, g->bias};
  for (uint32_t i = 0; i < lp->n_args; i++) {
    const fu_rt_view *v = &p->views[args[i]->id];
    lp->args[i].buffer = v->buffer;
    lp->args[i].size = 8;
    size_t es = fu_dtype_size(v->dtype);
    if (i == 2) lp->bytes_written += numel_of(v) * es;
    else lp->bytes_read += distinct_elems(v) * es;
  }
  lp->empty = lp->gemm->m == 0 || lp->gemm->n == 0 || lp->gemm->batch == 0;
  return FU_OK;
}

static fu_status plan_segment(builder *b, const fu_op *seg, fu_rt_launch_plan *lp) {
  fu_rt_plan *p = b->p;
  const fu_kernel *k = seg->u.segment.kernel;
  const char *sn = seg->u.segment.name ? seg->u.segment.name : "?";
  if (!k->name) {
    fu_error(b->diag, op_loc(seg), "segment '@%s': its kernel has no name", sn);
    return FU_ERR_INVALID_ARG;
  }
  lp->segment = seg;
  lp->kernel = k;
  lp->n_args = k->n_params;
  if (k->n_params) {
    lp->args = fu_mem_calloc(&p->alloc, k->n_params, sizeof *lp->args);
    if (!lp->args) return FU_ERR_NOMEM;
  }
  /* Tensors first: stride parameters read the views they create. */
  for (int pass = 0; pass < 2; pass++) {
    for (uint32_t i = 0; i < k->n_params; i++) {
      const fu_kval *kv = k->params[i];
      if ((kv->kind == FU_KV_TENSOR_PARAM) != (pass == 0)) continue;
      fu_status st = plan_param(b, seg, k, kv, lp, &lp->args[i]);
      if (st != FU_OK) return st;
    }
  }
  /* Every tensor the segment hands on must be written by its kernel. */
  for (uint32_t o = 0; o < seg->u.segment.n_outputs; o++) {
    const fu_value *v = seg->u.segment.outputs[o];
    if (v->type.rank < 0) {
      fu_error(b->diag, op_loc(seg), "segment '@%s' outputs the scalar '%%%s'; the runtime passes only tensors between kernels",
               sn, vname(v));
      return FU_ERR_UNSUPPORTED;
    }
    bool written = false;
    for (uint32_t i = 0; i < k->n_params; i++)
      if (k->params[i]->kind == FU_KV_TENSOR_PARAM && k->params[i]->tensor == v && !k->params[i]->readonly)
        written = true;
    if (!written) {
      fu_error(b->diag, op_loc(seg), "segment '@%s' outputs '%%%s', but its kernel '@%s' has no writable parameter for it",
               sn, vname(v), k->name);
      return FU_ERR_INVALID_ARG;
    }
  }
  return plan_grid(b, seg, k, lp);
}

/* Inputs keep the layout the fusion declares (the analysis's, with the
 * input's own strides where the declaration leaves them open), which is
 * what the kernels were compiled for; the executor re-lays out data that
 * came in other strides. */
static fu_status plan_input(builder *b, const fu_op *op, uint32_t pos) {
  const fu_value *v = op->results[0];
  const fu_arg *a = &b->inputs[pos];
  if (a->kind != FU_ARG_TENSOR) return FU_OK;
  fu_status st = make_view(b, v, -1, op);
  if (st != FU_OK) return st;
  fu_rt_view *view = &b->p->views[v->id];
  /* An empty tensor's contiguous strides can be 0 (the product of the
   * extents after a 0): no element is read, so no stride can disagree. */
  bool empty = false;
  for (int32_t d = 0; d < view->rank; d++) empty |= view->shape[d] == 0;
  for (int32_t d = 0; d < view->rank; d++) {
    if (view->shape[d] != a->tensor.shape[d]) {
      fu_error(b->diag, op->loc, "input '%%%s': dim %d is %lld, but its data has %lld", vname(v), d,
               (long long)view->shape[d], (long long)a->tensor.shape[d]);
      return FU_ERR_INVALID_ARG;
    }
    if (!empty && view->shape[d] > 1 && view->strides[d] == 0 && a->tensor.strides[d] != 0) {
      fu_error(b->diag, op->loc,
               "input '%%%s': dim %d is a broadcast (stride 0) in the fusion's layout, but its data has stride %lld",
               vname(v), d, (long long)a->tensor.strides[d]);
      return FU_ERR_INVALID_ARG;
    }
  }
  int64_t span;
  if (!fu_rt_span_elems(view->rank, view->shape, view->strides, &span)) {
    fu_error(b->diag, op->loc, "input '%%%s' is too large to allocate", vname(v));
    return FU_ERR_RUNTIME;
  }
  int32_t idx;
  if ((st = add_buffer(b, FU_RT_BUF_INPUT, v, v->type.dtype, pos, span, &idx)) != FU_OK) return st;
  view->buffer = idx;
  return FU_OK;
}

static fu_status plan_host_op(builder *b, const fu_op *op) {
  const fu_value *src = op->n_operands ? op->operands[0] : NULL;
  if (!src || op->n_results != 1 || src->type.rank < 0 || b->p->views[src->id].buffer < 0) {
    fu_error(b->diag, op->loc, "host alias '%s' has no tensor in memory to alias",
             fu_op_info_of(op->kind)->name);
    return FU_ERR_INVALID_ARG;
  }
  return make_view(b, op->results[0], b->p->views[src->id].buffer, op);
}

static fu_status build(builder *b) {
  fu_rt_plan *p = b->p;
  fu_fusion *f = p->fusion;
  fu_status st;
  if ((st = fu_layout_analysis_init(&b->la, f)) != FU_OK) return st;
  b->la_ready = true;

  uint32_t n_segments = 0;
  for (fu_op *op = f->body.first; op; op = op->next)
    if (op->kind == FU_OP_SEGMENT) n_segments++;
  if (n_segments) {
    p->launches = fu_mem_calloc(&p->alloc, n_segments, sizeof *p->launches);
    if (!p->launches) return FU_ERR_NOMEM;
    p->launches_cap = n_segments;
  }

  uint32_t pos = 0;
  for (fu_op *op = f->body.first; op; op = op->next) {
    if (op->kind == FU_OP_INPUT) {
      if ((st = plan_input(b, op, pos++)) != FU_OK) return st;
    } else if (op->kind == FU_OP_OUTPUT) {
      continue;
    } else if (op->host) {
      if ((st = plan_host_op(b, op)) != FU_OK) return st;
    } else if (op->kind == FU_OP_SEGMENT) {
      if (!op->u.segment.kernel && fu_segment_runnable(op)) {
        if ((st = plan_gemm(b, op, &p->launches[p->n_launches++])) != FU_OK) return st;
        continue;
      }
      if (!op->u.segment.kernel) {
        fu_error(b->diag, op->loc,
                 "segment '@%s' has no kernel: compile the fusion first (fuser-opt --pass=all), or run it with a build "
                 "that has the LLVM backend",
                 op->u.segment.name ? op->u.segment.name : "?");
        return FU_ERR_INVALID_ARG;
      }
      for (fu_op *in = op->u.segment.body->first; in; in = in->next)
        if (in->kind == FU_OP_SEGMENT) {
          fu_error(b->diag, in->loc, "nested segments are not supported by the runtime");
          return FU_ERR_UNSUPPORTED;
        }
      if ((st = plan_segment(b, op, &p->launches[p->n_launches++])) != FU_OK) return st;
    } else {
      fu_error(b->diag, op->loc,
               "'%s' runs neither on the host (as a view) nor in a kernel: compile the fusion first (fuser-opt "
               "--pass=all)",
               fu_op_info_of(op->kind)->name);
      return FU_ERR_INVALID_ARG;
    }
  }

  /* Outputs, and the bytes the fusion as a whole reads and writes. */
  uint32_t n_out = fu_fusion_outputs(f, NULL, 0);
  if (n_out) {
    p->outputs = fu_mem_calloc(&p->alloc, n_out, sizeof *p->outputs);
    if (!p->outputs) return FU_ERR_NOMEM;
    fu_fusion_outputs(f, (fu_value **)p->outputs, n_out);
  }
  p->n_outputs = n_out;
  for (uint32_t i = 0; i < n_out; i++) {
    const fu_value *v = p->outputs[i];
    if (v->type.rank < 0) {
      if (v->id < p->n_values && b->input_pos[v->id] >= 0) continue;
      fu_error(b->diag, f->loc, "output '%%%s' is a computed scalar; the runtime returns only tensors and scalar inputs",
               vname(v));
      return FU_ERR_UNSUPPORTED;
    }
    if (p->views[v->id].buffer < 0) {
      fu_error(b->diag, f->loc, "output '%%%s' is not computed by any kernel", vname(v));
      return FU_ERR_INVALID_ARG;
    }
    p->buffers[p->views[v->id].buffer].fusion_output = true;
  }
  for (uint32_t bi = 0; bi < p->n_buffers; bi++) {
    const fu_rt_buffer *buf = &p->buffers[bi];
    if (buf->kind == FU_RT_BUF_WORKSPACE) continue;
    const fu_rt_view *rv = &p->views[buf->root->id];
    size_t es = fu_dtype_size(rv->dtype);
    if (buf->kind == FU_RT_BUF_KERNEL && buf->fusion_output) p->bytes_written += numel_of(rv) * es;
    if (buf->kind != FU_RT_BUF_INPUT) continue;
    bool used = false;
    for (uint32_t l = 0; l < p->n_launches && !used; l++)
      for (uint32_t a = 0; a < p->launches[l].n_args; a++)
        if (p->launches[l].args[a].buffer == (int32_t)bi) used = true;
    if (used) p->bytes_read += distinct_elems(rv) * es;
  }
  return plan_alias_copies(b);
}

fu_status fu_rt_plan_build(fu_fusion *f, const fu_arg *inputs, uint32_t n_inputs, fu_allocator alloc,
                           fu_diag_engine *diag, fu_rt_plan *out) {
  memset(out, 0, sizeof *out);
  out->fusion = f;
  out->alloc = alloc;
  fu_bindings_init(&out->bindings, alloc);
  out->n_values = f->next_value_id;
  builder b;
  memset(&b, 0, sizeof b);
  b.p = out;
  b.diag = diag;
  b.inputs = inputs;
  uint32_t nv = out->n_values ? out->n_values : 1;
  out->views = fu_mem_calloc(&alloc, nv, sizeof *out->views);
  b.input_pos = fu_mem_alloc(&alloc, nv * sizeof *b.input_pos);
  if (!out->views || !b.input_pos) {
    fu_mem_free(&alloc, b.input_pos, nv * sizeof *b.input_pos);
    return FU_ERR_NOMEM;
  }
  for (uint32_t i = 0; i < out->n_values; i++) {
    out->views[i].buffer = -1;
    b.input_pos[i] = -1;
  }
  fu_status st = fu_interp_bind_inputs(f, inputs, n_inputs, &out->bindings, diag);
  if (st == FU_OK) {
    uint32_t pos = 0;
    for (fu_op *op = fu_walk_first(&f->body); op; op = fu_walk_next(op))
      if (op->kind == FU_OP_INPUT && op->n_results == 1 && op->results[0]->id < out->n_values)
        b.input_pos[op->results[0]->id] = (int32_t)pos++;
    st = build(&b);
  }
  if (st == FU_OK) st = fu_rt_plan_assign_streams(out);
  if (b.la_ready) fu_layout_analysis_free(&b.la);
  fu_mem_free(&alloc, b.input_pos, nv * sizeof *b.input_pos);
  return st;
}

void fu_rt_plan_free(fu_rt_plan *p) {
  if (!p || !p->fusion) return;
  fu_allocator *a = &p->alloc;
  /* A failed build may leave args on the launch after the last counted one. */
  for (uint32_t i = 0; i < p->launches_cap; i++)
  {
    if (p->launches[i].args) fu_mem_free(a, p->launches[i].args, p->launches[i].n_args * sizeof *p->launches[i].args);
    if (p->launches[i].gemm) fu_mem_free(a, p->launches[i].gemm, sizeof *p->launches[i].gemm);
  }
  if (p->launches) fu_mem_free(a, p->launches, p->launches_cap * sizeof *p->launches);
  if (p->buffers) fu_mem_free(a, p->buffers, p->buffers_cap * sizeof *p->buffers);
  if (p->views) fu_mem_free(a, p->views, (p->n_values ? p->n_values : 1) * sizeof *p->views);
  if (p->outputs) fu_mem_free(a, (void *)p->outputs, p->n_outputs * sizeof *p->outputs);
  if (p->alias_copies) fu_mem_free(a, p->alias_copies, p->n_alias_copies * sizeof *p->alias_copies);
  fu_bindings_free(&p->bindings);
  memset(p, 0, sizeof *p);
}

/* ---- printing ------------------------------------------------------------------ */

static void put_dims(fu_strbuf *sb, int32_t rank, const int64_t *v) {
  fu_strbuf_putc(sb, '[');
  for (int32_t d = 0; d < rank; d++) fu_strbuf_printf(sb, "%s%lld", d ? ", " : "", (long long)v[d]);
  fu_strbuf_putc(sb, ']');
}

static void put_immediate(fu_strbuf *sb, fu_dtype dt, const fu_rt_karg *a) {
  switch (dt) {
  case FU_DT_I64: {
    int64_t v;
    memcpy(&v, a->bytes, 8);
    fu_strbuf_printf(sb, "%lld", (long long)v);
    break;
  }
  case FU_DT_I32: {
    int32_t v;
    memcpy(&v, a->bytes, 4);
    fu_strbuf_printf(sb, "%d", (int)v);
    break;
  }
  case FU_DT_BOOL: fu_strbuf_puts(sb, a->bytes[0] ? "true" : "false"); break;
  case FU_DT_F64: {
    double v;
    memcpy(&v, a->bytes, 8);
    fu_strbuf_put_double(sb, v);
    break;
  }
  case FU_DT_F32: {
    float v;
    memcpy(&v, a->bytes, 4);
    fu_strbuf_put_double(sb, v);
    break;
  }
  case FU_DT_F16:
  case FU_DT_BF16: {
    uint16_t h;
    memcpy(&h, a->bytes, 2);
    fu_strbuf_put_double(sb, dt == FU_DT_F16 ? fu_f16_to_double(h) : fu_bf16_to_double(h));
    break;
  }
  default: fu_strbuf_puts(sb, "?"); break;
  }
}

void fu_rt_plan_print_launches(fu_strbuf *out, const fu_rt_plan *p) {
  for (uint32_t l = 0; l < p->n_launches; l++) {
    const fu_rt_launch_plan *lp = &p->launches[l];
    const fu_rt_launch_config *c = &lp->config;
    if (lp->gemm) {
      const fu_rt_gemm *g = lp->gemm;
      fu_strbuf_printf(out,
                       "launch @%s: cuBLASLt m=%lld n=%lld k=%lld batch=%lld %s x %s -> %s, transa=%s lda=%lld, transb=%s "
                       "ldb=%lld, ldd=%lld, strides a=%lld b=%lld d=%lld, epilogue=%s%s, alpha=%g%s (reads %llu bytes, "
                       "writes %llu bytes)\n",
                       g->name, (long long)g->m, (long long)g->n, (long long)g->k, (long long)g->batch,
                       fu_dtype_name(g->ab_dtype), fu_dtype_name(g->ab_dtype), fu_dtype_name(g->d_dtype),
                       g->trans_a ? "T" : "N", (long long)g->lda, g->trans_b ? "T" : "N", (long long)g->ldb,
                       (long long)g->ldd, (long long)g->stride_a, (long long)g->stride_b, (long long)g->stride_d,
                       fu_gemm_act_name((fu_gemm_act)g->act), g->buf_bias >= 0 ? "+bias" : "", (double)g->alpha,
                       lp->empty ? " skipped: empty" : "", (unsigned long long)lp->bytes_read,
                       (unsigned long long)lp->bytes_written);
      continue;
    }
    fu_strbuf_printf(out, "launch @%s: grid=[%u, %u, %u] block=[%u, %u, %u] smem=%u", lp->kernel->name, c->grid[0],
                     c->grid[1], c->grid[2], c->block[0], c->block[1], c->block[2], c->smem_bytes);
    if (c->cluster > 1) fu_strbuf_printf(out, " cluster=%u", c->cluster);
    if (lp->stream) fu_strbuf_puts(out, " stream=side");
    fu_strbuf_printf(out, "%s (reads %llu bytes, writes %llu bytes)\n", lp->empty ? " skipped: empty grid" : "",
                     (unsigned long long)lp->bytes_read, (unsigned long long)lp->bytes_written);
    for (uint32_t i = 0; i < lp->n_args; i++) {
      const fu_kval *kv = lp->kernel->params[i];
      const fu_rt_karg *a = &lp->args[i];
      fu_strbuf_printf(out, "  %%%s: ", kv->name ? kv->name : "?");
      if (a->buffer >= 0 && p->buffers[a->buffer].kind == FU_RT_BUF_WORKSPACE) {
        const fu_rt_buffer *buf = &p->buffers[a->buffer];
        fu_strbuf_printf(out, "workspace %s[%lld]%s in buffer %d (%zu bytes)\n", fu_dtype_name(kv->dtype),
                         (long long)buf->ws_elems, kv->ws_zeroed ? " zeroed" : "", a->buffer, buf->bytes);
      } else if (a->buffer >= 0) {
        const fu_rt_view *v = &p->views[kv->tensor->id];
        const fu_rt_buffer *buf = &p->buffers[a->buffer];
        fu_strbuf_printf(out, "%s", fu_dtype_name(v->dtype));
        put_dims(out, v->rank, v->shape);
        fu_strbuf_puts(out, " strides=");
        put_dims(out, v->rank, v->strides);
        fu_strbuf_printf(out, " in buffer %d (%s %%%s, %zu bytes)\n", a->buffer,
                         buf->kind == FU_RT_BUF_INPUT ? "input" : "written by a kernel:", vname(buf->root),
                         buf->bytes);
      } else {
        fu_strbuf_printf(out, "%s = ", fu_dtype_name(kv->dtype));
        put_immediate(out, kv->dtype, a);
        fu_strbuf_putc(out, '\n');
      }
    }
  }
}
