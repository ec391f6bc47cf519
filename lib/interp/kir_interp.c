/* fuser: the kernel IR interpreter and the lowered-fusion runner
 * (include/fuser/kir_interp.h).
 *
 * Registers hold each value in its dtype's storage format (8 bytes: f32 as
 * float bits, f16/bf16 as their uint16 patterns, bool as one byte), so
 * loads and stores are copies and every conversion goes through the CPU
 * interpreter's own load/store conversions: the arithmetic is exactly the
 * fusion interpreter's, op for op.  The compute dtype of a math
 * instruction is the backend's: the result dtype (f16/bf16 widened to
 * f32), or for ops with a bool result the operands' promoted dtype. */
#include <stdio.h>
#include <string.h>

#include "fuser/kir_interp.h"
#include "fuser/view_layout.h"
#include "interp_internal.h"

typedef struct kexec {
  const fu_kernel *k;
  const fu_kir_arg *args;
  fu_diag_engine *diag;
  fu_allocator alloc;
  uint64_t *reg; /* by kval id */
  int32_t *param_of; /* kval id -> parameter index, -1 */
  int64_t grid[3];
  int64_t bid[3], tid[3];
  fu_kir_stats st;
  bool failed;
  /* arrays: storage per array kval id, and the arrays themselves */
  unsigned char **arrays;
  const fu_kval **array_kv;
} kexec;

static void kerr(kexec *x, const fu_kinst *in, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void kerr(kexec *x, const fu_kinst *in, const char *fmt, ...) {
  if (x->failed) return;
  x->failed = true;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  (void)in;
  fu_error(x->diag, fu_loc_none(), "kernel '@%s', block (%lld, %lld, %lld), thread (%lld, %lld, %lld): %s",
           x->k->name ? x->k->name : "?", (long long)x->bid[0], (long long)x->bid[1], (long long)x->bid[2],
           (long long)x->tid[0], (long long)x->tid[1], (long long)x->tid[2], msg);
}

static int64_t as_int(const kexec *x, const fu_kval *v) {
  int64_t r = 0;
  fu_interp_load(v->dtype, &x->reg[v->id], 1, 1, FU_CK_I64, &r);
  return r;
}

static bool as_bool(const kexec *x, const fu_kval *v) {
  int64_t r = 0;
  fu_interp_load(v->dtype, &x->reg[v->id], 1, 1, FU_CK_I64, &r);
  if (fu_dtype_is_float(v->dtype)) {
    double d;
    fu_interp_load(v->dtype, &x->reg[v->id], 1, 1, FU_CK_F64, &d);
    return d != 0; /* NaN is true */
  }
  return r != 0;
}

static void set_int(kexec *x, const fu_kval *v, int64_t i) {
  x->reg[v->id] = 0;
  fu_interp_store(v->dtype, &x->reg[v->id], 1, 1, FU_CK_I64, &i);
}

/* ---- memory ------------------------------------------------------------------------------- */

/* The element address of `width` elements at index i of memory operand m,
 * checked; NULL after reporting. */
static unsigned char *address(kexec *x, const fu_kinst *in, const fu_kval *m, int64_t i, uint32_t width, bool store) {
  size_t es = fu_dtype_size(m->dtype);
  unsigned char *base;
  int64_t n;
  if (m->kind == FU_KV_TENSOR_PARAM) {
    int32_t p = m->id < x->k->next_kval_id ? x->param_of[m->id] : -1;
    if (p < 0) {
      kerr(x, in, "'%%%s' is not a parameter", m->name ? m->name : "?");
      return NULL;
    }
    base = x->args[p].data;
    n = x->args[p].n_elems;
  } else {
    base = x->arrays[m->id];
    n = m->length;
  }
  if (!base || i < 0 || i > n - (int64_t)width) {
    kerr(x, in, "%s of %u element%s of '%%%s' at index %lld is out of bounds (%lld elements)", store ? "store" : "load",
         width, width == 1 ? "" : "s", m->name ? m->name : "?", (long long)i, (long long)n);
    return NULL;
  }
  unsigned char *a = base + (size_t)i * es;
  if (width > 1 && ((uintptr_t)a % (width * es)) != 0) {
    kerr(x, in, "vector %s of %u elements of '%%%s' at index %lld is not aligned to %zu bytes", store ? "store" : "load",
         width, m->name ? m->name : "?", (long long)i, width * es);
    return NULL;
  }
  if (store && m->kind == FU_KV_TENSOR_PARAM) {
    uint32_t *w = x->args[x->param_of[m->id]].writes;
    if (w)
      for (uint32_t j = 0; j < width; j++) w[i + j]++;
  }
  return a;
}

/* Copies a value of dtype `from` (storage at src) to dtype `to` at dst,
 * converting like a cast. */
static void convert(fu_dtype from, const void *src, fu_dtype to, void *dst) {
  if (from == to) {
    memcpy(dst, src, fu_dtype_size(to));
    return;
  }
  fu_ck k = fu_interp_ck(from);
  union {
    double f64;
    float f32;
    int64_t i64;
  } tmp;
  fu_interp_load(from, src, 1, 1, k, &tmp);
  fu_interp_store(to, dst, 1, 1, k, &tmp);
}

/* ---- math ------------------------------------------------------------------------------- */

static void math(kexec *x, const fu_kinst *in) {
  const fu_kval *r = in->results[0];
  fu_op_kind op = in->u.math;
  x->reg[r->id] = 0;
  if (op == FU_OP_CAST || op == FU_OP_SET) {
    convert(in->args[0]->dtype, &x->reg[in->args[0]->id], r->dtype, &x->reg[r->id]);
    return;
  }
  bool bool_res = fu_op_has(op, FU_OF_BOOL_RESULT);
  fu_dtype c;
  if (bool_res)
    c = in->n_args == 1 ? in->args[0]->dtype : fu_dtype_promote(in->args[0]->dtype, in->args[1]->dtype);
  else
    c = r->dtype;
  fu_ck k = fu_interp_ck(c);
  union cell {
    double f64;
    float f32;
    int64_t i64;
  } buf[3], out;
  void *ins[3] = {&buf[0], &buf[1], &buf[2]};
  for (uint32_t i = 0; i < in->n_args && i < 3; i++) {
    fu_ck ak = (op == FU_OP_WHERE && i == 0) ? FU_CK_I64 : k;
    if (op == FU_OP_WHERE && i == 0) {
      buf[0].i64 = as_bool(x, in->args[0]) ? 1 : 0;
      continue;
    }
    fu_interp_load(in->args[i]->dtype, &x->reg[in->args[i]->id], 1, 1, ak, &buf[i]);
  }
  fu_pw_err e = fu_interp_pw_apply(op, k, r->dtype == FU_DT_BOOL, ins, &out, 1);
  if (e == FU_PW_DIV_ZERO) {
    kerr(x, in, "integer division by zero in '%s'", fu_op_info_of(op)->name);
    return;
  }
  if (e != FU_PW_OK) {
    kerr(x, in, "'%s' is not defined for %s", fu_op_info_of(op)->name, fu_dtype_name(c));
    return;
  }
  fu_interp_store(r->dtype, &x->reg[r->id], 1, 1, bool_res ? FU_CK_I64 : k, &out);
}

static void constant(kexec *x, const fu_kinst *in) {
  const fu_kval *r = in->results[0];
  x->reg[r->id] = 0;
  if (fu_dtype_is_float(r->dtype))
    fu_interp_store(r->dtype, &x->reg[r->id], 1, 1, FU_CK_F64, &in->u.constant.f);
  else if (fu_dtype_is_bool(r->dtype)) {
    int64_t b = in->u.constant.b ? 1 : 0;
    fu_interp_store(r->dtype, &x->reg[r->id], 1, 1, FU_CK_I64, &b);
  } else {
    fu_interp_store(r->dtype, &x->reg[r->id], 1, 1, FU_CK_I64, &in->u.constant.i);
  }
}

static int64_t special(const kexec *x, fu_special sp) {
  switch (sp) {
  case FU_SP_TID_X: return x->tid[0];
  case FU_SP_TID_Y: return x->tid[1];
  case FU_SP_TID_Z: return x->tid[2];
  case FU_SP_CTAID_X: return x->bid[0];
  case FU_SP_CTAID_Y: return x->bid[1];
  case FU_SP_CTAID_Z: return x->bid[2];
  case FU_SP_NTID_X: return x->k->block[0];
  case FU_SP_NTID_Y: return x->k->block[1];
  case FU_SP_NTID_Z: return x->k->block[2];
  case FU_SP_NCTAID_X: return x->grid[0];
  case FU_SP_NCTAID_Y: return x->grid[1];
  case FU_SP_NCTAID_Z: return x->grid[2];
  }
  return 0;
}

static void exec_block(kexec *x, const fu_kblock *b);

static void exec(kexec *x, const fu_kinst *in) {
  x->st.instructions++;
  switch (in->kind) {
  case FU_KI_CONST: constant(x, in); return;
  case FU_KI_MATH: math(x, in); return;
  case FU_KI_SPECIAL: set_int(x, in->results[0], special(x, in->u.special)); return;
  case FU_KI_LOAD: {
    const fu_kval *m = in->args[0];
    uint32_t w = in->u.mem.width;
    unsigned char *a = address(x, in, m, as_int(x, in->args[1]), w, false);
    if (!a) return;
    size_t es = fu_dtype_size(m->dtype);
    for (uint32_t j = 0; j < w; j++) {
      x->reg[in->results[j]->id] = 0;
      convert(m->dtype, a + j * es, in->results[j]->dtype, &x->reg[in->results[j]->id]);
    }
    x->st.loads++;
    if (w > 1) x->st.vector_loads++;
    return;
  }
  case FU_KI_STORE: {
    const fu_kval *m = in->args[0];
    uint32_t w = in->u.mem.width;
    unsigned char *a = address(x, in, m, as_int(x, in->args[1]), w, true);
    if (!a) return;
    size_t es = fu_dtype_size(m->dtype);
    for (uint32_t j = 0; j < w; j++) convert(in->args[2 + j]->dtype, &x->reg[in->args[2 + j]->id], m->dtype, a + j * es);
    x->st.stores++;
    if (w > 1) x->st.vector_stores++;
    return;
  }
  case FU_KI_READ: x->reg[in->results[0]->id] = x->reg[in->args[0]->id]; return;
  case FU_KI_ASSIGN:
    x->reg[in->args[0]->id] = 0;
    convert(in->args[1]->dtype, &x->reg[in->args[1]->id], in->args[0]->dtype, &x->reg[in->args[0]->id]);
    return;
  case FU_KI_SHFL_XOR:
  case FU_KI_SYNC:
    kerr(x, in, "'%s' needs threads in lockstep, which the kernel interpreter does not model",
         in->kind == FU_KI_SYNC ? "sync" : "shfl.xor");
    return;
  case FU_KI_FOR: {
    int64_t start = as_int(x, in->args[0]), end = as_int(x, in->args[1]), step = as_int(x, in->args[2]);
    if (step <= 0) {
      kerr(x, in, "loop step %lld is not positive", (long long)step);
      return;
    }
    for (int64_t i = start; i < end && !x->failed; i += step) {
      set_int(x, in->results[0], i);
      exec_block(x, &in->u.loop.body);
    }
    return;
  }
  case FU_KI_IF:
    exec_block(x, as_bool(x, in->args[0]) ? &in->u.branch.then_body : &in->u.branch.else_body);
    return;
  }
}

static void exec_block(kexec *x, const fu_kblock *b) {
  for (const fu_kinst *in = b->first; in && !x->failed; in = in->next) exec(x, in);
}

/* Arrays declared anywhere in the kernel, found through their uses. */
static bool alloc_arrays(kexec *x, const fu_kblock *b) {
  for (const fu_kinst *in = b->first; in; in = in->next) {
    for (uint32_t i = 0; i < in->n_args; i++) {
      const fu_kval *v = in->args[i];
      if (v->kind != FU_KV_ARRAY || x->arrays[v->id]) continue;
      x->arrays[v->id] = fu_mem_calloc(&x->alloc, (size_t)(v->length > 0 ? v->length : 1), fu_dtype_size(v->dtype));
      if (!x->arrays[v->id]) return false;
      x->array_kv[v->id] = v;
    }
    if (in->kind == FU_KI_FOR && !alloc_arrays(x, &in->u.loop.body)) return false;
    if (in->kind == FU_KI_IF && (!alloc_arrays(x, &in->u.branch.then_body) || !alloc_arrays(x, &in->u.branch.else_body)))
      return false;
  }
  return true;
}

fu_status fu_kir_run(const fu_kernel *k, const fu_kir_arg *args, const int64_t grid[3], fu_allocator alloc,
                     fu_diag_engine *diag, fu_kir_stats *stats) {
  if (fu_kernel_verify(k, diag, NULL) != FU_OK) return FU_ERR_VERIFY;
  kexec x;
  memset(&x, 0, sizeof x);
  x.k = k;
  x.args = args;
  x.diag = diag;
  x.alloc = alloc;
  uint32_t n = k->next_kval_id ? k->next_kval_id : 1;
  x.reg = fu_mem_calloc(&alloc, n, sizeof *x.reg);
  x.param_of = fu_mem_alloc(&alloc, n * sizeof *x.param_of);
  x.arrays = fu_mem_calloc(&alloc, n, sizeof *x.arrays);
  x.array_kv = fu_mem_calloc(&alloc, n, sizeof *x.array_kv);
  fu_status st = FU_OK;
  if (!x.reg || !x.param_of || !x.arrays || !x.array_kv || !alloc_arrays(&x, &k->body)) {
    fu_error(diag, fu_loc_none(), "out of memory running kernel '@%s'", k->name ? k->name : "?");
    st = FU_ERR_NOMEM;
    goto done;
  }
  for (uint32_t i = 0; i < n; i++) x.param_of[i] = -1;
  for (uint32_t p = 0; p < k->n_params; p++) {
    const fu_kval *v = k->params[p];
    x.param_of[v->id] = (int32_t)p;
    if (v->kind == FU_KV_SCALAR_PARAM) {
      x.reg[v->id] = 0;
      if (fu_dtype_is_float(v->dtype))
        fu_interp_store(v->dtype, &x.reg[v->id], 1, 1, FU_CK_F64, &args[p].scalar.f);
      else {
        int64_t i = fu_dtype_is_bool(v->dtype) ? (args[p].scalar.b ? 1 : 0) : args[p].scalar.i;
        fu_interp_store(v->dtype, &x.reg[v->id], 1, 1, FU_CK_I64, &i);
      }
    }
  }
  for (int d = 0; d < 3; d++) x.grid[d] = grid[d];
  for (x.bid[2] = 0; x.bid[2] < grid[2] && !x.failed; x.bid[2]++)
    for (x.bid[1] = 0; x.bid[1] < grid[1] && !x.failed; x.bid[1]++)
      for (x.bid[0] = 0; x.bid[0] < grid[0] && !x.failed; x.bid[0]++)
        for (x.tid[2] = 0; x.tid[2] < k->block[2] && !x.failed; x.tid[2]++)
          for (x.tid[1] = 0; x.tid[1] < k->block[1] && !x.failed; x.tid[1]++)
            for (x.tid[0] = 0; x.tid[0] < k->block[0] && !x.failed; x.tid[0]++) exec_block(&x, &k->body);
  if (x.failed) st = FU_ERR_RUNTIME;
  if (stats) {
    stats->instructions += x.st.instructions;
    stats->loads += x.st.loads;
    stats->stores += x.st.stores;
    stats->vector_loads += x.st.vector_loads;
    stats->vector_stores += x.st.vector_stores;
  }
done:
  if (x.arrays && x.array_kv)
    for (uint32_t i = 0; i < n; i++)
      if (x.arrays[i]) {
        const fu_kval *a = x.array_kv[i];
        fu_mem_free(&alloc, x.arrays[i], (size_t)(a->length > 0 ? a->length : 1) * fu_dtype_size(a->dtype));
      }
  fu_mem_free(&alloc, x.arrays, n * sizeof *x.arrays);
  fu_mem_free(&alloc, x.array_kv, n * sizeof *x.array_kv);
  fu_mem_free(&alloc, x.reg, n * sizeof *x.reg);
  fu_mem_free(&alloc, x.param_of, n * sizeof *x.param_of);
  return st;
}

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

static fu_status run_segment(frun *r, fu_op *seg) {
  fu_segment_info *si = &seg->u.segment;
  fu_kernel *k = si->kernel;
  if (!k) {
    fu_error(r->diag, seg->loc, "segment '@%s' has no kernel (run the lower pass first)", si->name ? si->name : "?");
    return FU_ERR_UNSUPPORTED;
  }
  /* outputs: fresh buffers in the compiler's layout */
  for (uint32_t i = 0; i < si->n_outputs; i++) {
    const fu_value *v = si->outputs[i];
    if (!fu_type_is_tensor(&v->type)) continue;
    fu_host_tensor t;
    fu_status st = layout_view(r, v, NULL, &t);
    if (st != FU_OK) return st;
    int64_t span = span_of(&t);
    if (r->n_owned == r->cap_owned) {
      uint32_t cap = r->cap_owned ? r->cap_owned * 2 : 8;
      fu_host_tensor *n = fu_mem_realloc(&r->alloc, r->owned, r->cap_owned * sizeof *n, cap * sizeof *n);
      if (!n) return FU_ERR_NOMEM;
      r->owned = n;
      r->cap_owned = cap;
    }
    int64_t shape1[1] = {span > 0 ? span : 1};
    st = fu_host_tensor_alloc(&r->owned[r->n_owned], r->alloc, v->type.dtype, 1, shape1);
    if (st != FU_OK) return st;
    t.data = r->owned[r->n_owned].data;
    r->n_owned++;
    r->val[v->id] = t;
    r->has[v->id] = true;
  }
  fu_kir_arg *args = fu_mem_calloc(&r->alloc, k->n_params ? k->n_params : 1, sizeof *args);
  uint32_t **writes = fu_mem_calloc(&r->alloc, k->n_params ? k->n_params : 1, sizeof *writes);
  fu_status st = args && writes ? FU_OK : FU_ERR_NOMEM;
  for (uint32_t p = 0; p < k->n_params && st == FU_OK; p++) {
    const fu_kval *v = k->params[p];
    switch (v->kind == FU_KV_TENSOR_PARAM ? FU_KP_NONE : v->role) {
    case FU_KP_NONE:
      if (v->kind == FU_KV_TENSOR_PARAM) {
        if (!v->tensor || v->tensor->id >= r->f->next_value_id || !r->has[v->tensor->id]) {
          fu_error(r->diag, seg->loc, "kernel parameter '%%%s' is bound to no value", v->name ? v->name : "?");
          st = FU_ERR_RUNTIME;
          break;
        }
        const fu_host_tensor *t = &r->val[v->tensor->id];
        args[p].data = t->data;
        args[p].n_elems = span_of(t);
        if (!v->readonly) {
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
  fu_lexpr_binding *bind = NULL;
  if (st == FU_OK) {
    bind = fu_mem_calloc(&r->alloc, r->b.n ? r->b.n : 1, sizeof *bind);
    if (!bind) st = FU_ERR_NOMEM;
    for (uint32_t i = 0; bind && i < r->b.n; i++) {
      bind[i].sym = r->b.v[i].sym;
      bind[i].value = r->b.v[i].value;
    }
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
      if (a->kind == FU_ARG_TENSOR) {
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
