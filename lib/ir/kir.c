/* fuser: kernel IR construction and launch-expression evaluation. */
#include "fuser/kir.h"
#include "fuser/device.h"

#include <stdio.h>
#include <string.h>

/* ---- kernels and values ---------------------------------------------------- */

fu_kernel *fu_kernel_new(fu_module *m, const char *name) {
  fu_kernel *k = fu_arena_alloc(m->arena, sizeof *k);
  if (!k) return NULL;
  if (name && !(k->name = fu_arena_strdup(m->arena, name))) return NULL;
  for (int i = 0; i < 3; i++) {
    k->grid[i] = fu_lexpr_const(m, 1);
    if (!k->grid[i]) return NULL;
    k->block[i] = 1;
  }
  k->index_dtype = FU_DT_I32;
  return k;
}

fu_kval *fu_kval_new(fu_module *m, fu_kernel *k, fu_kval_kind kind, const char *name, fu_dtype dtype) {
  fu_kval *v = fu_arena_alloc(m->arena, sizeof *v);
  if (!v) return NULL;
  if (name && !(v->name = fu_arena_strdup(m->arena, name))) return NULL;
  v->kind = kind;
  v->dtype = dtype;
  v->id = k->next_kval_id++;
  v->space = kind == FU_KV_TENSOR_PARAM ? FU_MEM_GLOBAL : FU_MEM_LOCAL;
  return v;
}

/* The parameter array lives in the arena, so growing abandons the old copy;
 * doubling keeps that waste linear.  A caller that set `params` by hand
 * (params_cap below n_params) is handled by copying. */
fu_status fu_kernel_add_param(fu_module *m, fu_kernel *k, fu_kval *p) {
  if (!p || (p->kind != FU_KV_TENSOR_PARAM && p->kind != FU_KV_SCALAR_PARAM)) return FU_ERR_INVALID_ARG;
  if (k->n_params >= k->params_cap) {
    uint32_t cap = k->n_params < 4 ? 8 : k->n_params * 2;
    fu_kval **np = fu_arena_calloc(m->arena, cap, sizeof *np);
    if (!np) return FU_ERR_NOMEM;
    if (k->n_params) memcpy(np, k->params, k->n_params * sizeof *np);
    k->params = np;
    k->params_cap = cap;
  }
  k->params[k->n_params++] = p;
  return FU_OK;
}

static fu_kval *add_new_param(fu_module *m, fu_kernel *k, fu_kval_kind kind, const char *name,
                              fu_dtype dtype) {
  fu_kval *v = fu_kval_new(m, k, kind, name, dtype);
  if (!v || fu_kernel_add_param(m, k, v) != FU_OK) return NULL;
  return v;
}

fu_kval *fu_kernel_tensor_param(fu_module *m, fu_kernel *k, const char *name, fu_dtype dtype,
                                fu_value *tensor, bool readonly, bool noalias, uint32_t align) {
  fu_kval *v = add_new_param(m, k, FU_KV_TENSOR_PARAM, name, dtype);
  if (!v) return NULL;
  v->tensor = tensor;
  v->readonly = readonly;
  v->noalias = noalias;
  v->align = align ? align : (uint32_t)fu_dtype_size(dtype);
  return v;
}

fu_kval *fu_kernel_extent_param(fu_module *m, fu_kernel *k, const char *name, fu_dtype dtype,
                                const char *sym) {
  const char *s = sym ? fu_module_intern(m, sym, strlen(sym)) : NULL;
  if (!s) return NULL;
  fu_kval *v = add_new_param(m, k, FU_KV_SCALAR_PARAM, name, dtype);
  if (!v) return NULL;
  v->role = FU_KP_EXTENT;
  v->sym = s;
  return v;
}

fu_kval *fu_kernel_stride_param(fu_module *m, fu_kernel *k, const char *name, fu_dtype dtype,
                                fu_kval *tensor, int32_t dim) {
  if (!tensor || tensor->kind != FU_KV_TENSOR_PARAM || dim < 0) return NULL;
  fu_kval *v = add_new_param(m, k, FU_KV_SCALAR_PARAM, name, dtype);
  if (!v) return NULL;
  v->role = FU_KP_STRIDE;
  v->stride_of = tensor;
  v->dim = dim;
  return v;
}

fu_kval *fu_kernel_scalar_input_param(fu_module *m, fu_kernel *k, const char *name, fu_dtype dtype,
                                      fu_value *scalar) {
  fu_kval *v = add_new_param(m, k, FU_KV_SCALAR_PARAM, name, dtype);
  if (!v) return NULL;
  v->role = FU_KP_SCALAR_INPUT;
  v->scalar = scalar;
  return v;
}

fu_kval *fu_kernel_scalar_param(fu_module *m, fu_kernel *k, const char *name, fu_dtype dtype) {
  return add_new_param(m, k, FU_KV_SCALAR_PARAM, name, dtype);
}

fu_kval *fu_kernel_workspace_param(fu_module *m, fu_kernel *k, const char *name, fu_dtype dtype, fu_lexpr *size,
                                   bool zeroed) {
  if (!size) return NULL;
  fu_kval *v = fu_kernel_tensor_param(m, k, name, dtype, NULL, false, true, 16);
  if (!v) return NULL;
  v->ws_size = size;
  v->ws_zeroed = zeroed;
  return v;
}

fu_kval *fu_kval_new_local(fu_module *m, fu_kernel *k, const char *name, fu_dtype dtype) {
  return fu_kval_new(m, k, FU_KV_LOCAL, name, dtype);
}

fu_kval *fu_kval_new_mutable(fu_module *m, fu_kernel *k, const char *name, fu_dtype dtype) {
  return fu_kval_new(m, k, FU_KV_MUTABLE, name, dtype);
}

fu_kval *fu_kval_new_array(fu_module *m, fu_kernel *k, const char *name, fu_dtype dtype,
                           fu_mem_space space, int64_t length) {
  if (length <= 0 || space == FU_MEM_GLOBAL) return NULL;
  fu_kval *v = fu_kval_new(m, k, FU_KV_ARRAY, name, dtype);
  if (!v) return NULL;
  v->space = space;
  v->length = length;
  return v;
}

fu_kval *fu_kernel_dynamic_array(fu_module *m, fu_kernel *k, const char *name, fu_dtype dtype, int64_t length) {
  uint64_t at = ((uint64_t)k->smem_bytes + 15u) / 16u * 16u;
  if (length <= 0 || (uint64_t)length > (UINT32_MAX - at) / fu_dtype_size(dtype)) return NULL;
  fu_kval *v = fu_kval_new_array(m, k, name, dtype, FU_MEM_SHARED, length);
  if (!v) return NULL;
  v->dynamic = true;
  v->offset = (uint32_t)at;
  k->smem_bytes = (uint32_t)(at + (uint64_t)length * fu_dtype_size(dtype));
  return v;
}

enum { MAX_STATIC_SEEN = 64 };

/* The bytes of the static shared arrays used in b, each counted once
 * (seen: those counted so far; past MAX_STATIC_SEEN arrays, repeats may
 * count again: an upper bound). */
static uint64_t static_smem(const fu_kblock *b, const fu_kval **seen, uint32_t *n_seen) {
  uint64_t bytes = 0;
  for (const fu_kinst *in = b->first; in; in = in->next) {
    for (uint32_t i = 0; i < in->n_args; i++) {
      const fu_kval *v = in->args[i];
      if (v->kind != FU_KV_ARRAY || v->space != FU_MEM_SHARED || v->dynamic) continue;
      bool known = false;
      for (uint32_t j = 0; j < *n_seen && !known; j++) known = seen[j] == v;
      if (known) continue;
      if (*n_seen < MAX_STATIC_SEEN) seen[(*n_seen)++] = v;
      bytes += ((uint64_t)v->length * fu_dtype_size(v->dtype) + 15) / 16 * 16;
    }
    if (in->kind == FU_KI_FOR) bytes += static_smem(&in->u.loop.body, seen, n_seen);
    if (in->kind == FU_KI_IF)
      bytes += static_smem(&in->u.branch.then_body, seen, n_seen) + static_smem(&in->u.branch.else_body, seen, n_seen);
  }
  return bytes;
}

uint32_t fu_kernel_smem_blocks_per_sm(const fu_kernel *k, uint32_t sm) {
  char name[16];
  snprintf(name, sizeof name, "sm_%u", sm);
  fu_device dev;
  uint64_t threads = (uint64_t)k->block[0] * k->block[1] * k->block[2];
  if (!k->smem_bytes || !threads || !fu_device_preset(name, &dev)) return 0;
  const fu_kval *seen[MAX_STATIC_SEEN];
  uint32_t n_seen = 0;
  uint64_t per_block = k->smem_bytes + static_smem(&k->body, seen, &n_seen) + FU_SMEM_RESERVED_PER_BLOCK;
  uint64_t by_smem = dev.smem_per_sm / per_block, by_threads = dev.max_threads_per_sm / threads;
  if (by_threads > dev.max_blocks_per_sm) by_threads = dev.max_blocks_per_sm;
  if (by_smem >= by_threads) return 0;
  return by_smem ? (uint32_t)by_smem : 1;
}

uint32_t fu_kernel_min_blocks_per_sm(const fu_kernel *k, uint32_t sm) {
  uint32_t by_smem = fu_kernel_smem_blocks_per_sm(k, sm);
  if (!k->min_blocks) return by_smem;
  return by_smem && by_smem < k->min_blocks ? by_smem : k->min_blocks;
}

/* ---- instructions ---------------------------------------------------------- */

fu_kinst *fu_kinst_new(fu_module *m, fu_kinst_kind kind, fu_kval *const *args, uint32_t n_args,
                       fu_kval *const *results, uint32_t n_results) {
  fu_kinst *in = fu_arena_alloc(m->arena, sizeof *in);
  if (!in) return NULL;
  in->kind = kind;
  if (n_args) {
    if (!args || !(in->args = fu_arena_memdup(m->arena, args, n_args, sizeof *args))) return NULL;
    in->n_args = n_args;
  }
  if (n_results) {
    if (!results || !(in->results = fu_arena_memdup(m->arena, results, n_results, sizeof *results)))
      return NULL;
    in->n_results = n_results;
  }
  return in;
}

void fu_kblock_append(fu_kblock *b, fu_kinst *inst) {
  inst->next = NULL;
  if (b->last)
    b->last->next = inst;
  else
    b->first = inst;
  b->last = inst;
}

/* ---- the builder ------------------------------------------------------------ */

/* Makes one local result and appends `kind(args) -> result`. */
static fu_kinst *emit1(fu_kbuilder *b, fu_kinst_kind kind, const char *name, fu_dtype dtype,
                       fu_kval *const *args, uint32_t n_args, fu_kval **result) {
  for (uint32_t i = 0; i < n_args; i++)
    if (!args[i]) return NULL;
  fu_kval *r = fu_kval_new_local(b->m, b->k, name, dtype);
  if (!r) return NULL;
  fu_kinst *in = fu_kinst_new(b->m, kind, args, n_args, &r, 1);
  if (!in) return NULL;
  fu_kblock_append(b->block, in);
  *result = r;
  return in;
}

fu_kval *fu_kb_const_i(fu_kbuilder *b, const char *name, fu_dtype dtype, int64_t v) {
  fu_kval *r = NULL;
  fu_kinst *in = emit1(b, FU_KI_CONST, name, dtype, NULL, 0, &r);
  if (!in) return NULL;
  if (fu_dtype_is_float(dtype))
    in->u.constant.f = (double)v;
  else if (fu_dtype_is_bool(dtype))
    in->u.constant.b = v != 0;
  else
    in->u.constant.i = v;
  return r;
}

fu_kval *fu_kb_const_f(fu_kbuilder *b, const char *name, fu_dtype dtype, double v) {
  fu_kval *r = NULL;
  fu_kinst *in = emit1(b, FU_KI_CONST, name, dtype, NULL, 0, &r);
  if (!in) return NULL;
  if (fu_dtype_is_float(dtype))
    in->u.constant.f = v;
  else if (fu_dtype_is_bool(dtype))
    in->u.constant.b = v != 0;
  else
    in->u.constant.i = (int64_t)v;
  return r;
}

fu_kval *fu_kb_const_b(fu_kbuilder *b, const char *name, bool v) {
  fu_kval *r = NULL;
  fu_kinst *in = emit1(b, FU_KI_CONST, name, FU_DT_BOOL, NULL, 0, &r);
  if (!in) return NULL;
  in->u.constant.b = v;
  return r;
}

fu_kval *fu_kb_math(fu_kbuilder *b, const char *name, fu_op_kind op, fu_dtype dtype,
                    fu_kval *const *args, uint32_t n_args) {
  fu_kval *r = NULL;
  fu_kinst *in = emit1(b, FU_KI_MATH, name, dtype, args, n_args, &r);
  if (!in) return NULL;
  in->u.math = op;
  return r;
}

fu_kval *fu_kb_unary(fu_kbuilder *b, const char *name, fu_op_kind op, fu_dtype dtype, fu_kval *x) {
  return fu_kb_math(b, name, op, dtype, &x, 1);
}

fu_kval *fu_kb_binary(fu_kbuilder *b, const char *name, fu_op_kind op, fu_dtype dtype, fu_kval *x,
                      fu_kval *y) {
  fu_kval *args[2] = {x, y};
  return fu_kb_math(b, name, op, dtype, args, 2);
}

fu_kval *fu_kb_special(fu_kbuilder *b, const char *name, fu_special sp, fu_dtype dtype) {
  fu_kval *r = NULL;
  fu_kinst *in = emit1(b, FU_KI_SPECIAL, name, dtype, NULL, 0, &r);
  if (!in) return NULL;
  in->u.special = sp;
  return r;
}

fu_kinst *fu_kb_load(fu_kbuilder *b, const char *name, fu_kval *src, fu_kval *index, uint32_t width,
                     fu_dtype dtype, fu_kval **out) {
  if (!src || !index || width == 0 || width > 16 || !out) return NULL;
  fu_kval *res[16];
  for (uint32_t i = 0; i < width; i++) {
    char buf[96];
    const char *nm = name;
    if (name && width > 1) {
      snprintf(buf, sizeof buf, "%.80s%u", name, i);
      nm = buf;
    }
    if (!(res[i] = fu_kval_new_local(b->m, b->k, nm, dtype))) return NULL;
  }
  fu_kval *args[2] = {src, index};
  fu_kinst *in = fu_kinst_new(b->m, FU_KI_LOAD, args, 2, res, width);
  if (!in) return NULL;
  in->u.mem.width = width;
  in->u.mem.space = src->kind == FU_KV_ARRAY ? src->space : FU_MEM_GLOBAL;
  fu_kblock_append(b->block, in);
  memcpy(out, res, width * sizeof *res);
  return in;
}

fu_kinst *fu_kb_store(fu_kbuilder *b, fu_kval *dst, fu_kval *index, fu_kval *const *values,
                      uint32_t width) {
  if (!dst || !index || width == 0 || width > 16 || !values) return NULL;
  fu_kval *args[18] = {dst, index};
  for (uint32_t i = 0; i < width; i++) {
    if (!values[i]) return NULL;
    args[2 + i] = values[i];
  }
  fu_kinst *in = fu_kinst_new(b->m, FU_KI_STORE, args, 2 + width, NULL, 0);
  if (!in) return NULL;
  in->u.mem.width = width;
  in->u.mem.space = dst->kind == FU_KV_ARRAY ? dst->space : FU_MEM_GLOBAL;
  fu_kblock_append(b->block, in);
  return in;
}

fu_kval *fu_kb_read(fu_kbuilder *b, const char *name, fu_kval *mut) {
  fu_kval *r = NULL;
  if (!mut) return NULL;
  return emit1(b, FU_KI_READ, name, mut->dtype, &mut, 1, &r) ? r : NULL;
}

fu_kinst *fu_kb_assign(fu_kbuilder *b, fu_kval *mut, fu_kval *value) {
  if (!mut || !value) return NULL;
  fu_kval *args[2] = {mut, value};
  fu_kinst *in = fu_kinst_new(b->m, FU_KI_ASSIGN, args, 2, NULL, 0);
  if (in) fu_kblock_append(b->block, in);
  return in;
}

fu_kval *fu_kb_shfl_xor(fu_kbuilder *b, const char *name, fu_kval *x, uint32_t lane_mask) {
  fu_kval *r = NULL;
  if (!x) return NULL;
  fu_kinst *in = emit1(b, FU_KI_SHFL_XOR, name, x->dtype, &x, 1, &r);
  if (!in) return NULL;
  in->u.shfl_mask = lane_mask;
  return r;
}

fu_kinst *fu_kb_sync(fu_kbuilder *b) {
  fu_kinst *in = fu_kinst_new(b->m, FU_KI_SYNC, NULL, 0, NULL, 0);
  if (in) fu_kblock_append(b->block, in);
  return in;
}

fu_kinst *fu_kb_sync_cluster(fu_kbuilder *b) {
  fu_kinst *in = fu_kb_sync(b);
  if (in) in->u.cluster_sync = true;
  return in;
}

fu_kval *fu_kb_load_cta(fu_kbuilder *b, const char *name, fu_kval *arr, fu_kval *index, fu_kval *rank) {
  if (!arr || arr->kind != FU_KV_ARRAY || arr->space != FU_MEM_SHARED) return NULL;
  fu_kval *r = NULL;
  fu_kval *args[3] = {arr, index, rank};
  fu_kinst *in = emit1(b, FU_KI_LOAD, name, arr->dtype, args, 3, &r);
  if (!in) return NULL;
  in->u.mem.width = 1;
  in->u.mem.space = FU_MEM_SHARED;
  return r;
}

fu_kval *fu_kb_atom_add(fu_kbuilder *b, const char *name, fu_kval *mem, fu_kval *index, fu_kval *value) {
  fu_kval *r = NULL;
  if (!mem) return NULL;
  fu_kval *args[3] = {mem, index, value};
  fu_kinst *in = emit1(b, FU_KI_ATOM_ADD, name, mem->dtype, args, 3, &r);
  if (!in) return NULL;
  in->u.mem.width = 1;
  in->u.mem.space = FU_MEM_GLOBAL;
  return r;
}

fu_kval *fu_kb_misalign(fu_kbuilder *b, const char *name, fu_kval *mem, uint32_t modulus, fu_dtype dtype) {
  fu_kval *r = NULL;
  if (!mem) return NULL;
  fu_kinst *in = emit1(b, FU_KI_MISALIGN, name, dtype, &mem, 1, &r);
  if (!in) return NULL;
  in->u.misalign = modulus;
  return r;
}

fu_kinst *fu_kb_opaque(fu_kbuilder *b, fu_kval *const *values, uint32_t n, fu_kval **out) {
  if (n == 0 || n > 16 || !out) return NULL;
  fu_kval *res[16];
  for (uint32_t i = 0; i < n; i++) {
    if (!values[i] || values[i]->dtype != values[0]->dtype) return NULL;
    char nm[96];
    snprintf(nm, sizeof nm, "%.80s_o", values[i]->name ? values[i]->name : "opaque");
    if (!(res[i] = fu_kval_new_local(b->m, b->k, nm, values[0]->dtype))) return NULL;
  }
  fu_kinst *in = fu_kinst_new(b->m, FU_KI_OPAQUE, values, n, res, n);
  if (!in) return NULL;
  fu_kblock_append(b->block, in);
  memcpy(out, res, n * sizeof *res);
  return in;
}

fu_kinst *fu_kb_fence(fu_kbuilder *b, fu_fence_scope scope) {
  fu_kinst *in = fu_kinst_new(b->m, FU_KI_FENCE, NULL, 0, NULL, 0);
  if (!in) return NULL;
  in->u.fence = scope;
  fu_kblock_append(b->block, in);
  return in;
}

fu_kinst *fu_kb_for(fu_kbuilder *b, const char *name, fu_kval *start, fu_kval *end, fu_kval *step,
                    fu_loop_kind kind) {
  if (!start || !end || !step) return NULL;
  fu_kval *iv = fu_kval_new_local(b->m, b->k, name, start->dtype);
  fu_kval *args[3] = {start, end, step};
  fu_kinst *in = iv ? fu_kinst_new(b->m, FU_KI_FOR, args, 3, &iv, 1) : NULL;
  if (!in) return NULL;
  in->u.loop.kind = kind;
  fu_kblock_append(b->block, in);
  return in;
}

fu_kinst *fu_kb_if(fu_kbuilder *b, fu_kval *cond) {
  if (!cond) return NULL;
  fu_kinst *in = fu_kinst_new(b->m, FU_KI_IF, &cond, 1, NULL, 0);
  if (in) fu_kblock_append(b->block, in);
  return in;
}

/* ---- special registers ------------------------------------------------------- */

static const char *const special_names[] = {
    "thread_idx.x", "thread_idx.y", "thread_idx.z", "block_idx.x", "block_idx.y", "block_idx.z",
    "block_dim.x",  "block_dim.y",  "block_dim.z",  "grid_dim.x",  "grid_dim.y",  "grid_dim.z",
    "cluster_rank",
};

const char *fu_special_name(fu_special sp) {
  if ((unsigned)sp >= sizeof special_names / sizeof special_names[0]) return "?";
  return special_names[sp];
}

bool fu_special_from_name(const char *name, size_t len, fu_special *out) {
  for (unsigned i = 0; i < sizeof special_names / sizeof special_names[0]; i++) {
    if (strlen(special_names[i]) == len && memcmp(special_names[i], name, len) == 0) {
      *out = (fu_special)i;
      return true;
    }
  }
  return false;
}

/* ---- launch expressions ------------------------------------------------------ */

fu_lexpr *fu_lexpr_const(fu_module *m, int64_t value) {
  fu_lexpr *e = fu_arena_alloc(m->arena, sizeof *e);
  if (!e) return NULL;
  e->kind = FU_LX_CONST;
  e->value = value;
  return e;
}

fu_lexpr *fu_lexpr_sym(fu_module *m, const char *sym) {
  if (!sym) return NULL;
  const char *s = fu_module_intern(m, sym, strlen(sym));
  fu_lexpr *e = s ? fu_arena_alloc(m->arena, sizeof *e) : NULL;
  if (!e) return NULL;
  e->kind = FU_LX_SYM;
  e->sym = s;
  return e;
}

fu_lexpr *fu_lexpr_binary(fu_module *m, fu_lexpr_kind kind, fu_lexpr *a, fu_lexpr *b) {
  if (!a || !b || kind == FU_LX_CONST || kind == FU_LX_SYM) return NULL;
  fu_lexpr *e = fu_arena_alloc(m->arena, sizeof *e);
  if (!e) return NULL;
  e->kind = kind;
  e->a = a;
  e->b = b;
  return e;
}

/* Recursion depth is bounded by the expression, which the parser bounds;
 * overflow is checked with the compiler builtins so a huge extent gives an
 * error instead of a wrong launch. */
fu_status fu_lexpr_eval(const fu_lexpr *e, const fu_lexpr_binding *bindings, size_t n_bindings,
                        int64_t *out, const char **bad_sym) {
  if (!e) return FU_ERR_INVALID_ARG;
  switch (e->kind) {
  case FU_LX_CONST: *out = e->value; return FU_OK;
  case FU_LX_SYM:
    for (size_t i = 0; i < n_bindings; i++) {
      if (bindings[i].sym && e->sym && strcmp(bindings[i].sym, e->sym) == 0) {
        *out = bindings[i].value;
        return FU_OK;
      }
    }
    if (bad_sym) *bad_sym = e->sym;
    return FU_ERR_INVALID_ARG;
  default: break;
  }
  int64_t a, b, r;
  fu_status st = fu_lexpr_eval(e->a, bindings, n_bindings, &a, bad_sym);
  if (st != FU_OK) return st;
  if ((st = fu_lexpr_eval(e->b, bindings, n_bindings, &b, bad_sym)) != FU_OK) return st;
  switch (e->kind) {
  case FU_LX_MUL:
    if (__builtin_mul_overflow(a, b, &r)) return FU_ERR_RUNTIME;
    break;
  case FU_LX_ADD:
    if (__builtin_add_overflow(a, b, &r)) return FU_ERR_RUNTIME;
    break;
  case FU_LX_CEIL_DIV:
    if (b <= 0) return FU_ERR_RUNTIME;
    /* floor division rounded up, also right for negative a */
    r = a / b + ((a % b) > 0 ? 1 : 0);
    break;
  case FU_LX_MIN: r = a < b ? a : b; break;
  case FU_LX_MAX: r = a > b ? a : b; break;
  default: return FU_ERR_INVALID_ARG;
  }
  *out = r;
  return FU_OK;
}

bool fu_lexpr_equal(const fu_lexpr *a, const fu_lexpr *b) {
  if (!a || !b) return a == b;
  if (a->kind != b->kind) return false;
  switch (a->kind) {
  case FU_LX_CONST: return a->value == b->value;
  case FU_LX_SYM: return a->sym == b->sym || (a->sym && b->sym && strcmp(a->sym, b->sym) == 0);
  default: return fu_lexpr_equal(a->a, b->a) && fu_lexpr_equal(a->b, b->b);
  }
}

void fu_lexpr_print(fu_strbuf *out, const fu_lexpr *e) {
  if (!e) {
    fu_strbuf_puts(out, "<null>");
    return;
  }
  const char *fn = NULL;
  switch (e->kind) {
  case FU_LX_CONST: fu_strbuf_printf(out, "%lld", (long long)e->value); return;
  case FU_LX_SYM: fu_strbuf_puts(out, e->sym ? e->sym : "<null>"); return;
  case FU_LX_MUL: fn = "mul"; break;
  case FU_LX_ADD: fn = "add"; break;
  case FU_LX_CEIL_DIV: fn = "ceil_div"; break;
  case FU_LX_MIN: fn = "min"; break;
  case FU_LX_MAX: fn = "max"; break;
  }
  fu_strbuf_puts(out, fn ? fn : "?");
  fu_strbuf_putc(out, '(');
  fu_lexpr_print(out, e->a);
  fu_strbuf_puts(out, ", ");
  fu_lexpr_print(out, e->b);
  fu_strbuf_putc(out, ')');
}
