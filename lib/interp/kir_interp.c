/* fuser: the lowered-fusion runner (include/fuser/kir_interp.h): binds a
 * fusion's inputs, applies host ops as views, launches each segment's
 * kernel through fu_kir_run (kir_exec.c) on buffers in the layouts the
 * compiler assumed, and checks that each output element is written once. */
#include <stdio.h>
#include <string.h>

#include "fuser/gemm.h"
#include "fuser/kir_interp.h"
#include "fuser/view_layout.h"
#include "interp_internal.h"

/* ---- running a lowered fusion ------------------------------------------------------------ */

typedef struct frun {
  fu_fusion *f;
  fu_allocator alloc;
  fu_diag_engine *diag;
  fu_bindings b;
  fu_layout_analysis la;
  fu_host_tensor *val; /* by value id: views (data not owned) */
  bool *has;
  fu_host_tensor *owned; /* buffers made for segment outputs */
  uint32_t n_owned, cap_owned;
  const fu_arg *inputs;
  uint32_t n_inputs;
  fu_kir_stats *stats;
} frun;

/* A concrete stride from a symbolic one: symbols from the bindings, input
 * strides from the inputs' host tensors. */
static bool eval_stride(frun *r, const fu_stride *s, int64_t *out) {
  int64_t v = s->coef;
  for (uint32_t i = 0; i < s->n_atoms; i++) {
    const fu_stride_atom *a = &s->atoms[i];
    int64_t f;
    if (a->sym) {
      if (!fu_bindings_lookup(&r->b, a->sym, &f)) return false;
    } else {
      if (!a->input || a->input->id >= r->f->next_value_id || !r->has[a->input->id]) return false;
      const fu_host_tensor *t = &r->val[a->input->id];
      if (a->dim < 0 || a->dim >= t->rank) return false;
      f = t->strides[a->dim];
    }
    if (__builtin_mul_overflow(v, f, &v)) return false;
  }
  *out = v;
  return true;
}

/* The host tensor of value v viewed with its compiler layout over `data`. */
static fu_status layout_view(frun *r, const fu_value *v, void *data, fu_host_tensor *t) {
  memset(t, 0, sizeof *t);
  t->dtype = v->type.dtype;
  t->rank = v->type.rank;
  t->data = data;
  t->alloc = r->alloc;
  fu_status st = fu_interp_resolve_shape(&v->type, &r->b, t->shape, v->loc, v->name ? v->name : "?", r->diag);
  if (st != FU_OK) return st;
  fu_view_layout lay;
  fu_strbuf why;
  fu_strbuf_init(&why, r->alloc);
  st = fu_layout_analysis_value(&r->la, v, &lay, &why);
  if (st != FU_OK) {
    fu_error(r->diag, v->loc, "no layout for '%%%s': %s", v->name ? v->name : "?", why.data ? why.data : "");
    fu_strbuf_free(&why);
    return st;
  }
  fu_strbuf_free(&why);
  for (int32_t d = 0; d < t->rank; d++)
    if (!eval_stride(r, &lay.strides[d], &t->strides[d])) {
      if (t->shape[d] == 1) {
        t->strides[d] = 0;
        continue;
      }
      fu_error(r->diag, v->loc, "cannot evaluate the stride of dim %d of '%%%s'", (int)d, v->name ? v->name : "?");
      return FU_ERR_RUNTIME;
    }
  return FU_OK;
}

/* Elements a view spans from its data pointer (0 when it is empty). */
static int64_t span_of(const fu_host_tensor *t) {
  int64_t s = 1;
  for (int32_t d = 0; d < t->rank; d++) {
    if (t->shape[d] == 0) return 0;
    s += (t->shape[d] - 1) * t->strides[d];
  }
  return s;
}

static size_t ws_bytes(const fu_kval *v, const fu_kir_arg *a) {
  return (size_t)(a->n_elems > 0 ? a->n_elems : 1) * fu_dtype_size(v->dtype);
}

/* A workspace as the runtime makes it: its size evaluated from the bound
 * extents, all zero when `zeroed`, else filled with 0xff bytes so that a
 * kernel reading scratch it never wrote gives visibly wrong results. */
static fu_status alloc_workspace(frun *r, const fu_op *seg, const fu_kernel *k, const fu_kval *v,
                                 const fu_lexpr_binding *bind, fu_kir_arg *arg, void **owned) {
  const char *bad = NULL;
  int64_t n = 0;
  if (fu_lexpr_eval(v->ws_size, bind, r->b.n, &n, &bad) != FU_OK || n < 0 || n > (INT64_C(1) << 40)) {
    fu_error(r->diag, seg->loc, "cannot evaluate the size of workspace '%%%s' of kernel '@%s'%s%s",
             v->name ? v->name : "?", k->name, bad ? ": unbound " : "", bad ? bad : "");
    return FU_ERR_RUNTIME;
  }
  arg->n_elems = n;
  *owned = fu_mem_alloc(&r->alloc, ws_bytes(v, arg));
  if (!*owned) return FU_ERR_NOMEM;
  memset(*owned, v->ws_zeroed ? 0 : 0xff, ws_bytes(v, arg));
  arg->data = *owned;
  return FU_OK;
}

/* A matmul segment: its plan on the CPU (gemm_exec.c). */
static fu_status run_gemm(frun *r, fu_op *seg) {
  const fu_gemm *g = seg->u.segment.gemm;
  const fu_value *in[3] = {g->a, g->b, g->bias};
  for (int i = 0; i < 3; i++)
    if (in[i] && !r->has[in[i]->id]) {
      fu_error(r->diag, seg->loc, "matmul segment '@%s' reads '%%%s', which was never computed",
               seg->u.segment.name ? seg->u.segment.name : "?", in[i]->name ? in[i]->name : "?");
      return FU_ERR_RUNTIME;
    }
  fu_status st = fu_interp_gemm_run(seg, &r->val[g->a->id], &r->val[g->b->id], g->bias ? &r->val[g->bias->id] : NULL,
                                    &r->val[g->d->id], r->alloc);
  if (st != FU_OK) fu_error(r->diag, seg->loc, "matmul segment '@%s' failed on the CPU", seg->u.segment.name ? seg->u.segment.name : "?");
  return st;
}

/* Is tensor parameter p the memory another parameter of k writes in place
 * (`alias=%p`)?  Its stores are counted on that parameter. */
static bool is_alias_target(const fu_kernel *k, const fu_kval *p) {
  for (uint32_t i = 0; i < k->n_params; i++)
    if (k->params[i]->alias_of == p) return true;
  return false;
}

/* Keeps host tensor t (data the run owns) for freeing at the end. */
static fu_status own(frun *r, const fu_host_tensor *t) {
  if (r->n_owned == r->cap_owned) {
    uint32_t cap = r->cap_owned ? r->cap_owned * 2 : 8;
    fu_host_tensor *n = fu_mem_realloc(&r->alloc, r->owned, r->cap_owned * sizeof *n, cap * sizeof *n);
    if (!n) return FU_ERR_NOMEM;
    r->owned = n;
    r->cap_owned = cap;
  }
  r->owned[r->n_owned++] = *t;
  return FU_OK;
}

static fu_status run_segment(frun *r, fu_op *seg) {
  fu_segment_info *si = &seg->u.segment;
  fu_kernel *k = si->kernel;
  if (!k && !si->gemm) {
    fu_error(r->diag, seg->loc, "segment '@%s' has no kernel (run the lower pass first)", si->name ? si->name : "?");
    return FU_ERR_UNSUPPORTED;
  }
  /* outputs: fresh buffers in the compiler's layout, or the input's memory
   * (a private copy, made when the input was bound) for one written in place */
  for (uint32_t i = 0; i < si->n_outputs; i++) {
    const fu_value *v = si->outputs[i];
    if (!fu_type_is_tensor(&v->type)) continue;
    const fu_kval *alias = NULL;
    for (uint32_t p = 0; k && p < k->n_params; p++) /* a matmul segment (no kernel) writes fresh buffers */
      if (k->params[p]->kind == FU_KV_TENSOR_PARAM && k->params[p]->tensor == v && k->params[p]->alias_of)
        alias = k->params[p]->alias_of;
    if (alias && alias->tensor && r->has[alias->tensor->id]) {
      r->val[v->id] = r->val[alias->tensor->id];
      r->has[v->id] = true;
      continue;
    }
    fu_host_tensor t;
    fu_status st = layout_view(r, v, NULL, &t);
    if (st != FU_OK) return st;
    int64_t span = span_of(&t);
    int64_t shape1[1] = {span > 0 ? span : 1};
    fu_host_tensor buf;
    st = fu_host_tensor_alloc(&buf, r->alloc, v->type.dtype, 1, shape1);
    if (st == FU_OK && (st = own(r, &buf)) != FU_OK) fu_host_tensor_free(&buf);
    if (st != FU_OK) return st;
    t.data = buf.data;
    r->val[v->id] = t;
    r->has[v->id] = true;
  }
  if (!k) return run_gemm(r, seg);
  fu_kir_arg *args = fu_mem_calloc(&r->alloc, k->n_params ? k->n_params : 1, sizeof *args);
  uint32_t **writes = fu_mem_calloc(&r->alloc, k->n_params ? k->n_params : 1, sizeof *writes);
  void **ws = fu_mem_calloc(&r->alloc, k->n_params ? k->n_params : 1, sizeof *ws);
  fu_lexpr_binding *bind = fu_mem_calloc(&r->alloc, r->b.n ? r->b.n : 1, sizeof *bind);
  fu_status st = args && writes && ws && bind ? FU_OK : FU_ERR_NOMEM;
  for (uint32_t i = 0; bind && i < r->b.n; i++) {
    bind[i].sym = r->b.v[i].sym;
    bind[i].value = r->b.v[i].value;
  }
  for (uint32_t p = 0; p < k->n_params && st == FU_OK; p++) {
    const fu_kval *v = k->params[p];
    switch (v->kind == FU_KV_TENSOR_PARAM ? FU_KP_NONE : v->role) {
    case FU_KP_NONE:
      if (v->kind == FU_KV_TENSOR_PARAM && v->ws_size) {
        st = alloc_workspace(r, seg, k, v, bind, &args[p], &ws[p]);
      } else if (v->kind == FU_KV_TENSOR_PARAM) {
        if (!v->tensor || v->tensor->id >= r->f->next_value_id || !r->has[v->tensor->id]) {
          fu_error(r->diag, seg->loc, "kernel parameter '%%%s' is bound to no value", v->name ? v->name : "?");
          st = FU_ERR_RUNTIME;
          break;
        }
        const fu_host_tensor *t = &r->val[v->tensor->id];
        args[p].data = t->data;
        args[p].n_elems = span_of(t);
        if (!v->readonly && !is_alias_target(k, v)) {
          writes[p] = fu_mem_calloc(&r->alloc, (size_t)(args[p].n_elems ? args[p].n_elems : 1), sizeof **writes);
          if (!writes[p]) st = FU_ERR_NOMEM;
          args[p].writes = writes[p];
        }
      } else {
        fu_error(r->diag, seg->loc, "kernel parameter '%%%s' has no role", v->name ? v->name : "?");
        st = FU_ERR_RUNTIME;
      }
      break;
    case FU_KP_SCALAR_INPUT: {
      const fu_value *s = v->scalar;
      if (!s || !r->has[s->id]) {
        fu_error(r->diag, seg->loc, "scalar parameter '%%%s' is bound to no value", v->name ? v->name : "?");
        st = FU_ERR_RUNTIME;
        break;
      }
      /* scalars are kept as rank-0 host tensors */
      const fu_host_tensor *t = &r->val[s->id];
      if (fu_dtype_is_float(t->dtype)) args[p].scalar.f = fu_host_tensor_get(t, NULL);
      else if (fu_dtype_is_bool(t->dtype)) args[p].scalar.b = fu_host_tensor_get_i64(t, NULL) != 0;
      else args[p].scalar.i = fu_host_tensor_get_i64(t, NULL);
      break;
    }
    case FU_KP_EXTENT:
      if (!fu_bindings_lookup(&r->b, v->sym, &args[p].scalar.i)) {
        fu_error(r->diag, seg->loc, "extent '%s' is not bound", v->sym ? v->sym : "?");
        st = FU_ERR_RUNTIME;
      }
      break;
    case FU_KP_STRIDE: {
      const fu_kval *tp = v->stride_of;
      if (!tp || !tp->tensor || !r->has[tp->tensor->id] || v->dim < 0 || v->dim >= r->val[tp->tensor->id].rank) {
        fu_error(r->diag, seg->loc, "stride parameter '%%%s' names no tensor dim", v->name ? v->name : "?");
        st = FU_ERR_RUNTIME;
        break;
      }
      args[p].scalar.i = r->val[tp->tensor->id].strides[v->dim];
      break;
    }
    }
  }
  int64_t grid[3] = {1, 1, 1};
  if (st == FU_OK) {
    for (int d = 0; d < 3 && st == FU_OK; d++) {
      const char *bad = NULL;
      if (fu_lexpr_eval(k->grid[d], bind, r->b.n, &grid[d], &bad) != FU_OK) {
        fu_error(r->diag, seg->loc, "cannot evaluate the grid of kernel '@%s'%s%s", k->name, bad ? ": unbound " : "",
                 bad ? bad : "");
        st = FU_ERR_RUNTIME;
      }
    }
  }
  if (st == FU_OK) st = fu_kir_run(k, args, grid, r->alloc, r->diag, r->stats);
  /* an index out of range, flagged by the kernel (passes/lower/gather.c) */
  for (uint32_t p = 0; p < k->n_params && st == FU_OK; p++) {
    const fu_kval *v = k->params[p];
    int32_t code;
    if (v->kind != FU_KV_TENSOR_PARAM || !v->ws_error || !args[p].data) continue;
    memcpy(&code, args[p].data, sizeof code);
    if (code) st = fu_index_error_report(r->diag, seg, k->name, code);
  }
  /* every element of every output written exactly once */
  for (uint32_t p = 0; p < k->n_params && st == FU_OK; p++) {
    if (!writes || !writes[p]) continue;
    const fu_kval *v = k->params[p];
    const fu_host_tensor *t = &r->val[v->tensor->id];
    int64_t n = fu_host_tensor_numel(t);
    int64_t idx[FU_MAX_RANK] = {0};
    for (int64_t e = 0; e < n; e++) {
      int64_t off = 0;
      for (int32_t d = 0; d < t->rank; d++) off += idx[d] * t->strides[d];
      if (writes[p][off] != 1) {
        fu_error(r->diag, seg->loc, "kernel '@%s' wrote element %lld of '%%%s' %u times", k->name, (long long)e,
                 v->name ? v->name : "?", writes[p][off]);
        st = FU_ERR_RUNTIME;
        break;
      }
      for (int32_t d = t->rank - 1; d >= 0; d--) {
        if (++idx[d] < t->shape[d]) break;
        idx[d] = 0;
      }
    }
  }
  for (uint32_t p = 0; writes && p < k->n_params; p++)
    if (writes[p]) fu_mem_free(&r->alloc, writes[p], (size_t)(args[p].n_elems ? args[p].n_elems : 1) * sizeof **writes);
  for (uint32_t p = 0; ws && p < k->n_params; p++)
    if (ws[p]) fu_mem_free(&r->alloc, ws[p], ws_bytes(k->params[p], &args[p]));
  if (ws) fu_mem_free(&r->alloc, ws, (k->n_params ? k->n_params : 1) * sizeof *ws);
  if (bind) fu_mem_free(&r->alloc, bind, (r->b.n ? r->b.n : 1) * sizeof *bind);
  if (writes) fu_mem_free(&r->alloc, writes, (k->n_params ? k->n_params : 1) * sizeof *writes);
  if (args) fu_mem_free(&r->alloc, args, (k->n_params ? k->n_params : 1) * sizeof *args);
  return st;
}

fu_status fu_kir_run_fusion(fu_fusion *f, const fu_arg *inputs, uint32_t n_inputs, fu_allocator alloc,
                            fu_diag_engine *diag, fu_arg **outputs, uint32_t *n_outputs, fu_kir_stats *stats) {
  *outputs = NULL;
  *n_outputs = 0;
  frun r;
  memset(&r, 0, sizeof r);
  r.f = f;
  r.alloc = alloc;
  r.diag = diag;
  r.inputs = inputs;
  r.n_inputs = n_inputs;
  r.stats = stats;
  fu_bindings_init(&r.b, alloc);
  uint32_t nv = f->next_value_id ? f->next_value_id : 1;
  r.val = fu_mem_calloc(&alloc, nv, sizeof *r.val);
  r.has = fu_mem_calloc(&alloc, nv, sizeof *r.has);
  fu_status st = r.val && r.has ? FU_OK : FU_ERR_NOMEM;
  bool la = false;
  if (st == FU_OK) st = fu_interp_bind_inputs(f, inputs, n_inputs, &r.b, diag);
  if (st == FU_OK) {
    st = fu_layout_analysis_init(&r.la, f);
    la = st == FU_OK;
  }
  uint32_t n_out = fu_fusion_outputs(f, NULL, 0);
  fu_arg *outs = NULL;
  uint32_t next_in = 0, next_out = 0;
  if (st == FU_OK) {
    outs = fu_mem_calloc(&alloc, n_out ? n_out : 1, sizeof *outs);
    if (!outs) st = FU_ERR_NOMEM;
  }
  /* scalars (inputs) are kept as rank-0 tensors over their arg's value */
  fu_host_tensor *scal = fu_mem_calloc(&alloc, n_inputs ? n_inputs : 1, sizeof *scal);
  if (!scal) st = FU_ERR_NOMEM;
  for (fu_op *op = f->body.first; op && st == FU_OK; op = op->next) {
    switch (op->kind) {
    case FU_OP_INPUT: {
      const fu_arg *a = &inputs[next_in];
      const fu_value *v = op->results[0];
      bool aliased = false;
      for (const fu_op *o = f->body.first; o; o = o->next) aliased |= o->kind == FU_OP_OUTPUT && o->u.output.alias == v;
      if (a->kind == FU_ARG_TENSOR && aliased) {
        /* an output may be written into it in place: the run's own copy, as
         * the device has its own, so the caller's inputs stay as they were;
         * in the input's own strides, which the kernels were compiled for */
        fu_host_tensor c;
        st = fu_host_tensor_alloc_strided(&c, alloc, a->tensor.dtype, a->tensor.rank, a->tensor.shape, a->tensor.strides);
        if (st == FU_OK && (st = fu_host_tensor_copy_into(&c, &a->tensor)) != FU_OK) fu_host_tensor_free(&c);
        if (st == FU_OK) st = own(&r, &c);
        if (st == FU_OK) {
          r.val[v->id] = c;
          r.val[v->id].owned = NULL;
        }
      } else if (a->kind == FU_ARG_TENSOR) {
        r.val[v->id] = a->tensor;
        r.val[v->id].owned = NULL;
      } else {
        st = fu_host_tensor_alloc(&scal[next_in], alloc, a->scalar_dtype, 0, NULL);
        if (st == FU_OK) {
          if (fu_dtype_is_float(a->scalar_dtype)) fu_host_tensor_set(&scal[next_in], NULL, a->scalar.f);
          else fu_host_tensor_set_i64(&scal[next_in], NULL, fu_dtype_is_bool(a->scalar_dtype) ? a->scalar.b : a->scalar.i);
          r.val[v->id] = scal[next_in];
          r.val[v->id].owned = NULL;
        }
      }
      r.has[v->id] = true;
      next_in++;
      break;
    }
    case FU_OP_SEGMENT: st = run_segment(&r, op); break;
    case FU_OP_OUTPUT:
      for (uint32_t i = 0; i < op->n_operands && st == FU_OK; i++) {
        const fu_value *v = op->operands[i];
        /* an input that an output is written into: its memory after the run */
        const fu_value *w = v->def && v->def->kind == FU_OP_INPUT ? fu_fusion_alias_writer(f, v) : NULL;
        if (w) v = w;
        if (!r.has[v->id]) {
          fu_error(diag, op->loc, "output '%%%s' was never computed", v->name ? v->name : "?");
          st = FU_ERR_RUNTIME;
          break;
        }
        fu_host_tensor c;
        st = fu_host_tensor_copy_contiguous(&r.val[v->id], alloc, &c);
        if (st == FU_OK) outs[next_out++] = fu_arg_tensor(c);
      }
      break;
    default:
      if (op->host && op->n_results == 1) {
        const fu_value *x = op->operands[0], *v = op->results[0];
        if (!r.has[x->id]) {
          fu_error(diag, op->loc, "host op reads '%%%s', which was never computed", x->name ? x->name : "?");
          st = FU_ERR_RUNTIME;
          break;
        }
        st = layout_view(&r, v, r.val[x->id].data, &r.val[v->id]);
        r.has[v->id] = st == FU_OK;
        break;
      }
      fu_error(diag, op->loc, "'%s' is outside every segment and not a host op: segment the fusion first",
               fu_op_info_of(op->kind)->name);
      st = FU_ERR_UNSUPPORTED;
    }
  }
  if (st == FU_OK && next_out == n_out) {
    *outputs = outs;
    *n_outputs = n_out;
    outs = NULL;
  } else if (st == FU_OK) {
    st = FU_ERR_RUNTIME;
  }
  if (outs) {
    for (uint32_t i = 0; i < next_out; i++) fu_arg_free(&outs[i]);
    fu_mem_free(&alloc, outs, (n_out ? n_out : 1) * sizeof *outs);
  }
  for (uint32_t i = 0; scal && i < n_inputs; i++) fu_host_tensor_free(&scal[i]);
  if (scal) fu_mem_free(&alloc, scal, (n_inputs ? n_inputs : 1) * sizeof *scal);
  for (uint32_t i = 0; i < r.n_owned; i++) fu_host_tensor_free(&r.owned[i]);
  fu_mem_free(&alloc, r.owned, r.cap_owned * sizeof *r.owned);
  if (la) fu_layout_analysis_free(&r.la);
  fu_bindings_free(&r.b);
  fu_mem_free(&alloc, r.val, nv * sizeof *r.val);
  fu_mem_free(&alloc, r.has, nv * sizeof *r.has);
  return st;
}
