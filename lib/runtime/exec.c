/* fuser runtime: a plan on the device.
 *
 * Allocation, upload (re-laying out inputs whose strides differ from the
 * layout the kernels were compiled for), poisoning, launching in order and
 * downloading.  Host aliases cost nothing here: the plan already gave them
 * their operand's buffer with their own shape and strides. */
#include <stdio.h>
#include <string.h>

#include "exec_internal.h"

static fu_loc seg_loc(const fu_rt_launch_plan *lp) { return lp->segment ? lp->segment->loc : fu_loc_none(); }

/* Upload input `buf`: as it is when the data's strides are the plan's on
 * every dim that matters, else through a staging copy in the plan's
 * layout. */
static fu_status upload_input(fu_rt_exec *e, uint32_t bi) {
  const fu_rt_plan *p = e->plan;
  const fu_rt_buffer *buf = &p->buffers[bi];
  const fu_host_tensor *t = &e->inputs[buf->input_index].tensor;
  const fu_rt_view *v = &p->views[buf->root->id];
  size_t es = fu_dtype_size(v->dtype);
  int64_t span_plan, span_data;
  if (!fu_rt_span_elems(v->rank, v->shape, v->strides, &span_plan) ||
      !fu_rt_span_elems(t->rank, t->shape, t->strides, &span_data))
    return FU_ERR_INVALID_ARG;
  if (span_plan == 0) return FU_OK;
  bool same = true;
  for (int32_t d = 0; d < v->rank; d++)
    if (v->shape[d] > 1 && v->strides[d] != t->strides[d]) same = false;
  if (same && span_data == span_plan) return fu_rt_mem_upload(e->rt, e->ptrs[bi], t->data, (size_t)span_plan * es);
  size_t bytes = (size_t)span_plan * es;
  unsigned char *staging = fu_mem_calloc(&e->rt->alloc, bytes, 1);
  if (!staging) return FU_ERR_NOMEM;
  fu_rt_strided_copy(staging, v->strides, t->data, t->strides, v->rank, v->shape, es);
  fu_status st = fu_rt_mem_upload(e->rt, e->ptrs[bi], staging, bytes);
  fu_mem_free(&e->rt->alloc, staging, bytes);
  return st;
}

fu_rt_ptr fu_rt_exec_buffer_address(const fu_rt_exec *e, uint32_t buffer) {
  return e && buffer < e->plan->n_buffers ? e->ptrs[buffer] : 0;
}

void fu_rt_exec_free(fu_rt_exec *e) {
  if (!e) return;
  fu_allocator *a = &e->rt->alloc;
  const fu_rt_plan *p = e->plan;
  if (e->ptrs) {
    for (uint32_t i = 0; i < p->n_buffers; i++) fu_rt_mem_free(e->rt, e->ptrs[i]);
    fu_mem_free(a, e->ptrs, (p->n_buffers ? p->n_buffers : 1) * sizeof *e->ptrs);
  }
  if (e->launches) {
    for (uint32_t l = 0; l < p->n_launches; l++) {
      fu_rt_exec_launch *x = &e->launches[l];
      uint32_t n = p->launches[l].n_args ? p->launches[l].n_args : 1;
      if (x->params) fu_mem_free(a, x->params, n * sizeof *x->params);
      if (x->slots) fu_mem_free(a, x->slots, n * sizeof *x->slots);
    }
    fu_mem_free(a, e->launches, (p->n_launches ? p->n_launches : 1) * sizeof *e->launches);
  }
  fu_mem_free(a, e, sizeof *e);
}

/* Which value a failed allocation was for, its size, and what the device
 * had free then: an absurd size reads as such at once. */
static void alloc_note(fu_rt *rt, fu_diag_engine *diag, const fu_rt_buffer *buf, const char *name) {
  size_t free_b = 0, total_b = 0;
  const char *what = buf->kind == FU_RT_BUF_WORKSPACE ? "workspace" : "buffer";
  if (rt->api.mem_get_info && rt->api.mem_get_info(&free_b, &total_b) == CUDA_SUCCESS)
    fu_note(diag, fu_loc_none(), "while allocating the %s of '%%%s': %zu bytes, with %zu of %zu bytes free on the device",
            what, name ? name : "?", buf->bytes, free_b, total_b);
  else
    fu_note(diag, fu_loc_none(), "while allocating the %s of '%%%s': %zu bytes", what, name ? name : "?", buf->bytes);
}

fu_status fu_rt_exec_new(fu_rt *rt, const fu_rt_plan *plan, fu_rt_module *mod, const fu_arg *inputs,
                         fu_diag_engine *diag, fu_rt_exec **out) {
  *out = NULL;
  fu_allocator *a = &rt->alloc;
  uint32_t n_kernels = 0;
  for (uint32_t l = 0; l < plan->n_launches; l++) n_kernels += plan->launches[l].kernel != NULL;
  if (n_kernels && !mod) {
    fu_error(diag, plan->fusion->loc, "fusion '@%s' has kernels but no module was loaded for them",
             plan->fusion->name ? plan->fusion->name : "");
    return FU_ERR_INVALID_ARG;
  }
  fu_rt_exec *e = fu_mem_calloc(a, 1, sizeof *e);
  if (!e) return FU_ERR_NOMEM;
  e->rt = rt;
  e->plan = plan;
  e->mod = mod;
  e->inputs = inputs;
  e->diag = diag;
  fu_diag_engine *saved = rt->diag;
  rt->diag = diag;
  fu_status st = FU_OK;
  e->ptrs = fu_mem_calloc(a, plan->n_buffers ? plan->n_buffers : 1, sizeof *e->ptrs);
  e->launches = fu_mem_calloc(a, plan->n_launches ? plan->n_launches : 1, sizeof *e->launches);
  if (!e->ptrs || !e->launches) {
    st = FU_ERR_NOMEM;
    goto done;
  }
  for (uint32_t i = 0; i < plan->n_buffers && st == FU_OK; i++) {
    st = fu_rt_mem_alloc(rt, plan->buffers[i].bytes, &e->ptrs[i]);
    const fu_rt_buffer *buf = &plan->buffers[i];
    const char *name = buf->root ? buf->root->name : buf->workspace ? buf->workspace->name : NULL;
    if (st != FU_OK) alloc_note(rt, diag, buf, name);
    /* Zeroed once: every kernel leaves its zeroed workspace zero again. */
    if (st == FU_OK && buf->kind == FU_RT_BUF_WORKSPACE && buf->workspace->ws_zeroed)
      st = fu_rt_mem_fill(rt, e->ptrs[i], 0, buf->bytes);
  }
  for (uint32_t i = 0; i < plan->n_buffers && st == FU_OK; i++)
    if (plan->buffers[i].kind == FU_RT_BUF_INPUT) st = upload_input(e, i);
  for (uint32_t l = 0; l < plan->n_launches && st == FU_OK; l++) {
    const fu_rt_launch_plan *lp = &plan->launches[l];
    fu_rt_exec_launch *x = &e->launches[l];
    uint32_t n = lp->n_args ? lp->n_args : 1;
    x->params = fu_mem_calloc(a, n, sizeof *x->params);
    x->slots = fu_mem_calloc(a, n, sizeof *x->slots);
    if (!x->params || !x->slots) {
      st = FU_ERR_NOMEM;
      break;
    }
    for (uint32_t i = 0; i < lp->n_args; i++) {
      const fu_rt_karg *ka = &lp->args[i];
      if (ka->buffer >= 0) {
        CUdeviceptr dp = (CUdeviceptr)e->ptrs[ka->buffer];
        memcpy(x->slots[i].bytes, &dp, sizeof dp);
      } else {
        memcpy(x->slots[i].bytes, ka->bytes, sizeof ka->bytes);
      }
      x->params[i] = x->slots[i].bytes;
    }
    if (lp->gemm) {
      st = fu_rt_lt_open(rt, seg_loc(lp), lp->segment->u.segment.name ? lp->segment->u.segment.name : "?");
      continue;
    }
    st = fu_rt_module_function(mod, lp->kernel->name, &x->fn);
    if (st != FU_OK) fu_note(diag, seg_loc(lp), "the kernel of this segment");
  }
done:
  rt->diag = saved;
  if (st != FU_OK) {
    fu_rt_exec_free(e);
    return st;
  }
  *out = e;
  return FU_OK;
}

fu_status fu_rt_exec_poison(fu_rt_exec *e, uint8_t byte) {
  fu_diag_engine *saved = e->rt->diag;
  e->rt->diag = e->diag;
  fu_status st = FU_OK;
  for (uint32_t i = 0; i < e->plan->n_buffers && st == FU_OK; i++) {
    const fu_rt_buffer *buf = &e->plan->buffers[i];
    bool scratch = buf->kind == FU_RT_BUF_WORKSPACE && !buf->workspace->ws_zeroed;
    if (buf->kind == FU_RT_BUF_KERNEL || scratch) st = fu_rt_mem_fill(e->rt, e->ptrs[i], byte, buf->bytes);
  }
  e->rt->diag = saved;
  return st;
}

fu_status fu_rt_exec_launch_one(fu_rt_exec *e, uint32_t l, CUstream stream) {
  const fu_rt_launch_plan *lp = &e->plan->launches[l];
  if (lp->gemm) return fu_rt_gemm_run(e->rt, stream, lp->gemm, e->ptrs, seg_loc(lp));
  return fu_rt_launch_on(e->rt, stream, &e->launches[l].fn, &lp->config, e->launches[l].params);
}

/* After a synchronized launch: an index error flag the kernel set
 * (passes/lower/gather.c) is reported, naming the op, and reset so the
 * next run starts clean. */
static fu_status check_index_flags(fu_rt_exec *e, const fu_rt_launch_plan *lp) {
  fu_status st = FU_OK;
  if (!lp->kernel) return st; /* a cuBLASLt call has no flag */
  for (uint32_t i = 0; i < lp->n_args && i < lp->kernel->n_params && st == FU_OK; i++) {
    const fu_kval *kv = lp->kernel->params[i];
    int32_t code = 0;
    if (kv->kind != FU_KV_TENSOR_PARAM || !kv->ws_error || lp->args[i].buffer < 0) continue;
    st = fu_rt_mem_download(e->rt, &code, e->ptrs[lp->args[i].buffer], sizeof code);
    if (st == FU_OK && code) {
      fu_rt_mem_fill(e->rt, e->ptrs[lp->args[i].buffer], 0, sizeof code);
      st = fu_index_error_report(e->diag, lp->segment, lp->kernel->name, code);
    }
  }
  return st;
}

/* Output view sv's elements into input view dv's memory through the host:
 * dv's span is read first, so bytes between its elements stay. */
static fu_status strided_alias_copy(fu_rt_exec *e, const fu_rt_view *sv, const fu_rt_view *dv) {
  size_t es = fu_dtype_size(sv->dtype);
  int64_t ss, ds;
  if (!fu_rt_span_elems(sv->rank, sv->shape, sv->strides, &ss) || !fu_rt_span_elems(dv->rank, dv->shape, dv->strides, &ds))
    return FU_ERR_INVALID_ARG;
  if (ss <= 0 || ds <= 0) return FU_OK;
  unsigned char *s = fu_mem_alloc(&e->rt->alloc, (size_t)ss * es), *d = fu_mem_alloc(&e->rt->alloc, (size_t)ds * es);
  fu_status st = s && d ? FU_OK : FU_ERR_NOMEM;
  if (st == FU_OK) st = fu_rt_mem_download(e->rt, s, e->ptrs[sv->buffer], (size_t)ss * es);
  if (st == FU_OK) st = fu_rt_mem_download(e->rt, d, e->ptrs[dv->buffer], (size_t)ds * es);
  if (st == FU_OK) fu_rt_strided_copy(d, dv->strides, s, sv->strides, sv->rank, sv->shape, es);
  if (st == FU_OK) st = fu_rt_mem_upload(e->rt, e->ptrs[dv->buffer], d, (size_t)ds * es);
  if (s) fu_mem_free(&e->rt->alloc, s, (size_t)ss * es);
  if (d) fu_mem_free(&e->rt->alloc, d, (size_t)ds * es);
  return st;
}

fu_status fu_rt_exec_launch_all(fu_rt_exec *e, bool sync_each) {
  fu_status st = FU_OK;
  /* unchecked (--bench's warm-up): independent kernels beside the others */
  bool streams = !sync_each && e->plan->concurrent;
  if (streams) st = fu_rt_exec_launch_streams(e);
  for (uint32_t l = 0; l < e->plan->n_launches && st == FU_OK && !streams; l++) {
    const fu_rt_launch_plan *lp = &e->plan->launches[l];
    if (lp->empty) continue;
    st = fu_rt_exec_launch_one(e, l, e->rt->stream);
    if (st == FU_OK && sync_each) st = fu_rt_synchronize(e->rt);
    if (st == FU_OK && sync_each) st = check_index_flags(e, lp);
    if (st != FU_OK)
      fu_note(e->diag, seg_loc(lp), "while running kernel '@%s' of segment '@%s'", fu_rt_launch_name(lp),
              lp->segment->u.segment.name ? lp->segment->u.segment.name : "?");
  }
  /* outputs with an alias that no kernel wrote in place, into their inputs */
  for (uint32_t i = 0; i < e->plan->n_alias_copies && st == FU_OK; i++) {
    const fu_rt_alias_copy *c = &e->plan->alias_copies[i];
    const fu_rt_view *sv = &e->plan->views[c->src->id], *dv = &e->plan->views[c->dst->id];
    if (c->dense) {
      st = fu_rt_check(e->rt,
                       e->rt->api.memcpy_dtod_async((CUdeviceptr)e->ptrs[dv->buffer], (CUdeviceptr)e->ptrs[sv->buffer],
                                                    c->bytes, e->rt->stream),
                       "cuMemcpyDtoDAsync (an output into its alias)");
      if (st == FU_OK && sync_each) st = fu_rt_synchronize(e->rt);
    } else {
      st = fu_rt_synchronize(e->rt);
      if (st == FU_OK) st = strided_alias_copy(e, sv, dv);
    }
  }
  return st;
}

/* Synchronizing after every kernel costs little for a checked run and
 * makes an asynchronous failure (an illegal address) name its kernel. */
fu_status fu_rt_exec_run(fu_rt_exec *e) {
  fu_diag_engine *saved = e->rt->diag;
  e->rt->diag = e->diag;
  fu_status st = fu_rt_exec_launch_all(e, true);
  e->rt->diag = saved;
  return st;
}

/* A fresh contiguous host tensor of `view`'s elements in device memory. */
static fu_status download_view(fu_rt_exec *e, fu_allocator alloc, const fu_rt_view *view, fu_host_tensor *t) {
  size_t es = fu_dtype_size(view->dtype);
  fu_status st = fu_host_tensor_alloc(t, alloc, view->dtype, view->rank, view->shape);
  if (st != FU_OK) return st;
  int64_t span;
  if (!fu_rt_span_elems(view->rank, view->shape, view->strides, &span)) st = FU_ERR_INVALID_ARG;
  if (st == FU_OK && span > 0) {
    size_t bytes = (size_t)span * es;
    unsigned char *staging = fu_mem_alloc(&e->rt->alloc, bytes);
    if (!staging) st = FU_ERR_NOMEM;
    if (st == FU_OK) st = fu_rt_mem_download(e->rt, staging, e->ptrs[view->buffer], bytes);
    if (st == FU_OK) fu_rt_strided_copy(t->data, t->strides, staging, view->strides, view->rank, view->shape, es);
    if (staging) fu_mem_free(&e->rt->alloc, staging, bytes);
  }
  if (st != FU_OK) fu_host_tensor_free(t);
  return st;
}

fu_status fu_rt_exec_input_after(fu_rt_exec *e, const fu_value *input, fu_allocator alloc, fu_host_tensor *out) {
  const fu_rt_plan *p = e->plan;
  if (!input || input->id >= p->n_values || p->views[input->id].buffer < 0) return FU_ERR_INVALID_ARG;
  fu_diag_engine *saved = e->rt->diag;
  e->rt->diag = e->diag;
  fu_status st = download_view(e, alloc, &p->views[input->id], out);
  e->rt->diag = saved;
  return st;
}

fu_status fu_rt_exec_outputs(fu_rt_exec *e, fu_allocator alloc, fu_arg **outputs, uint32_t *n_outputs) {
  *outputs = NULL;
  *n_outputs = 0;
  const fu_rt_plan *p = e->plan;
  fu_diag_engine *saved = e->rt->diag;
  e->rt->diag = e->diag;
  fu_status st = FU_OK;
  uint32_t n = p->n_outputs;
  fu_arg *res = fu_mem_calloc(&alloc, n ? n : 1, sizeof *res);
  if (!res) {
    e->rt->diag = saved;
    return FU_ERR_NOMEM;
  }
  for (uint32_t i = 0; i < n && st == FU_OK; i++) {
    const fu_value *v = p->outputs[i];
    if (v->type.rank < 0) {
      /* A scalar input passed through. */
      uint32_t pos = 0;
      for (fu_op *op = p->fusion->body.first; op; op = op->next) {
        if (op->kind != FU_OP_INPUT) continue;
        if (op->results[0] == v) res[i] = e->inputs[pos];
        pos++;
      }
      continue;
    }
    fu_host_tensor t;
    if ((st = download_view(e, alloc, &p->views[v->id], &t)) != FU_OK) break;
    res[i] = fu_arg_tensor(t);
  }
  e->rt->diag = saved;
  if (st != FU_OK) {
    /* Scalars copied from the inputs own nothing; tensors made here do. */
    for (uint32_t i = 0; i < n; i++)
      if (res[i].kind == FU_ARG_TENSOR) fu_arg_free(&res[i]);
    fu_mem_free(&alloc, res, (n ? n : 1) * sizeof *res);
    return st;
  }
  if (n == 0) {
    fu_mem_free(&alloc, res, sizeof *res);
    return FU_OK;
  }
  *outputs = res;
  *n_outputs = n;
  return FU_OK;
}
