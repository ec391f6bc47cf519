/* fuser: the kernel IR verifier.
 *
 * The backend maps instructions to LLVM IR one to one and trusts their
 * shape; this verifier is what makes a malformed kernel (from `lower` or from
 * hand-written text) a located error instead of an LLVM assertion. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fuser/kir.h"

typedef struct kverifier {
  const fu_kernel *k;
  fu_diag_engine *diag;
  const fu_kir_locator *locator;
  fu_allocator alloc;
  uint32_t n_ids;
  const fu_kval **by_id; /* the kval owning each id */
  bool *visible;         /* LOCAL defined and in scope */
  bool *defined;         /* LOCAL defined anywhere so far */
  bool *is_param;        /* a parameter of this kernel */
  uint32_t *peeled;      /* tensor params: bytes of the widest `misalign` of it so far (its vectors peeled) */
  uint32_t *scope;       /* ids defined in the open blocks, innermost last */
  uint32_t n_scope, scope_cap;
  unsigned errors;
} kverifier;

static const char *vname(const fu_kval *v, char *buf, size_t n) {
  if (v && v->name) return v->name;
  snprintf(buf, n, "v%u", v ? v->id : 0u);
  return buf;
}

static const char *inst_name(const fu_kinst *in) {
  switch (in->kind) {
  case FU_KI_CONST: return "const";
  case FU_KI_MATH: return fu_op_info_of(in->u.math < FU_OP_COUNT ? in->u.math : FU_OP_INPUT)->name;
  case FU_KI_SPECIAL: return "special";
  case FU_KI_LOAD: return "load";
  case FU_KI_STORE: return "store";
  case FU_KI_READ: return "read";
  case FU_KI_ASSIGN: return "assign";
  case FU_KI_SHFL_XOR: return "shfl.xor";
  case FU_KI_SYNC: return "sync";
  case FU_KI_ATOM_ADD: return "atom.add";
  case FU_KI_FENCE: return "fence";
  case FU_KI_MISALIGN: return "misalign";
  case FU_KI_OPAQUE: return "opaque";
  case FU_KI_FOR: return "for";
  case FU_KI_IF: return "if";
  }
  return "?";
}

static void verr(kverifier *v, const fu_kinst *in, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Reports with the instruction's location when the locator knows it, and
 * always names the kernel so that messages from `lower` can be traced. */
static void verr(kverifier *v, const fu_kinst *in, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fu_loc loc = fu_loc_none();
  if (v->locator && in && v->locator->inst_loc) loc = v->locator->inst_loc(v->locator->user, in);
  if (!fu_loc_known(loc) && v->locator && v->locator->kernel_loc)
    loc = v->locator->kernel_loc(v->locator->user, v->k);
  if (in)
    fu_error(v->diag, loc, "kernel '@%s': '%s': %s", v->k->name ? v->k->name : "?", inst_name(in), msg);
  else
    fu_error(v->diag, loc, "kernel '@%s': %s", v->k->name ? v->k->name : "?", msg);
  v->errors++;
}

static bool valid_dtype(fu_dtype t) { return t > FU_DT_NONE && t < FU_DT_COUNT; }
static bool is_scalar_kind(const fu_kval *x) { return x->kind == FU_KV_LOCAL || x->kind == FU_KV_SCALAR_PARAM; }
static bool is_index_dtype(fu_dtype t) { return t == FU_DT_I32 || t == FU_DT_I64; }

/* Registers `x` under its id; false (with an error) when the id is out of
 * range or taken by another value. */
static bool check_id(kverifier *v, const fu_kinst *in, const fu_kval *x) {
  char b[32];
  if (x->id >= v->n_ids) {
    verr(v, in, "value '%%%s' has id %u, not below next_kval_id %u", vname(x, b, sizeof b), x->id, v->n_ids);
    return false;
  }
  if (v->by_id[x->id] && v->by_id[x->id] != x) {
    verr(v, in, "values '%%%s' and '%%%s' share id %u", vname(x, b, sizeof b), v->by_id[x->id]->name ? v->by_id[x->id]->name : "?",
         x->id);
    return false;
  }
  v->by_id[x->id] = x;
  if (!valid_dtype(x->dtype)) {
    verr(v, in, "value '%%%s' has no dtype", vname(x, b, sizeof b));
    return false;
  }
  return true;
}

/* An operand that must be a scalar SSA value in scope. */
static bool use_scalar(kverifier *v, const fu_kinst *in, const fu_kval *x, const char *what) {
  char b[32];
  if (!x) {
    verr(v, in, "%s is missing", what);
    return false;
  }
  if (!check_id(v, in, x)) return false;
  if (!is_scalar_kind(x)) {
    verr(v, in, "%s '%%%s' is not a scalar value", what, vname(x, b, sizeof b));
    return false;
  }
  if (x->kind == FU_KV_SCALAR_PARAM && !v->is_param[x->id]) {
    verr(v, in, "%s '%%%s' is not a parameter of this kernel", what, vname(x, b, sizeof b));
    return false;
  }
  if (x->kind == FU_KV_LOCAL && !v->visible[x->id]) {
    verr(v, in, "%s '%%%s' is used %s", what, vname(x, b, sizeof b),
         v->defined[x->id] ? "outside the block that defines it" : "before it is defined");
    return false;
  }
  return true;
}

static bool scope_push(kverifier *v, uint32_t id) {
  if (v->n_scope == v->scope_cap) {
    uint32_t cap = v->scope_cap ? v->scope_cap * 2 : 64;
    uint32_t *ns = fu_mem_realloc(&v->alloc, v->scope, v->scope_cap * sizeof *ns, cap * sizeof *ns);
    if (!ns) return false;
    v->scope = ns;
    v->scope_cap = cap;
  }
  v->scope[v->n_scope++] = id;
  return true;
}

static void define(kverifier *v, const fu_kinst *in, const fu_kval *x) {
  char b[32];
  if (!x) {
    verr(v, in, "result is missing");
    return;
  }
  if (!check_id(v, in, x)) return;
  if (x->kind != FU_KV_LOCAL) {
    verr(v, in, "result '%%%s' is not a local value", vname(x, b, sizeof b));
    return;
  }
  if (v->defined[x->id]) {
    verr(v, in, "value '%%%s' is defined twice", vname(x, b, sizeof b));
    return;
  }
  v->defined[x->id] = true;
  v->visible[x->id] = true;
  if (!scope_push(v, x->id)) verr(v, in, "out of memory");
}

static void verify_block(kverifier *v, const fu_kblock *b, unsigned depth);

/* A block hides the values it defines from the code after it. */
static void verify_nested(kverifier *v, const fu_kblock *b, unsigned depth) {
  uint32_t mark = v->n_scope;
  verify_block(v, b, depth + 1);
  while (v->n_scope > mark) v->visible[v->scope[--v->n_scope]] = false;
}

static void verify_math(kverifier *v, const fu_kinst *in) {
  char b[32];
  if ((unsigned)in->u.math >= FU_OP_COUNT || !fu_op_is_kir_math(in->u.math)) {
    verr(v, in, "not a pointwise op");
    return;
  }
  int nops = fu_op_kir_operands(in->u.math);
  if (nops >= 0 && in->n_args != (uint32_t)nops) {
    verr(v, in, "takes %d operands, got %u", nops, in->n_args);
    return;
  }
  if (in->n_results != 1) {
    verr(v, in, "must have one result");
    return;
  }
  bool ok = true;
  for (uint32_t i = 0; i < in->n_args; i++) ok &= use_scalar(v, in, in->args[i], "operand");
  define(v, in, in->results[0]);
  if (!ok || !in->results[0] || !valid_dtype(in->results[0]->dtype)) return;
  fu_dtype rt = in->results[0]->dtype;
  const char *rn = vname(in->results[0], b, sizeof b);
  if (fu_op_has(in->u.math, FU_OF_BOOL_RESULT) && rt != FU_DT_BOOL)
    verr(v, in, "result '%%%s' must be bool, not %s", rn, fu_dtype_name(rt));
  if (fu_op_has(in->u.math, FU_OF_FLOAT_RESULT) && !fu_dtype_is_float(rt))
    verr(v, in, "result '%%%s' must be a float, not %s", rn, fu_dtype_name(rt));
  if (fu_op_has(in->u.math, FU_OF_INT_ONLY)) {
    if (fu_dtype_is_float(rt)) verr(v, in, "result '%%%s' must be int or bool, not %s", rn, fu_dtype_name(rt));
    for (uint32_t i = 0; i < in->n_args; i++)
      if (fu_dtype_is_float(in->args[i]->dtype))
        verr(v, in, "operand '%%%s' must be int or bool, not %s", vname(in->args[i], b, sizeof b),
             fu_dtype_name(in->args[i]->dtype));
  }
  if (in->u.math == FU_OP_LERP && !fu_dtype_is_float(rt))
    verr(v, in, "result '%%%s' must be a float, not %s", rn, fu_dtype_name(rt));
  if (rt == FU_DT_BOOL && (in->u.math == FU_OP_DIV || in->u.math == FU_OP_POW || in->u.math == FU_OP_FMOD ||
                           in->u.math == FU_OP_REMAINDER))
    verr(v, in, "result '%%%s' cannot be bool", rn);
  if (fu_op_info_of(in->u.math)->cls == FU_OC_RNG) {
    /* (a, b, seed, offset, index): a and b in f64 for an f64 result, else f32 */
    fu_dtype pt = rt == FU_DT_F64 ? FU_DT_F64 : FU_DT_F32;
    for (uint32_t i = 0; i < 5; i++) {
      fu_dtype want = i < 2 ? pt : FU_DT_I64;
      if (in->args[i]->dtype != want)
        verr(v, in, "operand '%%%s' must be %s, not %s", vname(in->args[i], b, sizeof b), fu_dtype_name(want),
             fu_dtype_name(in->args[i]->dtype));
    }
  }
  if (in->u.math == FU_OP_WHERE && in->args[0]->dtype != FU_DT_BOOL)
    verr(v, in, "condition '%%%s' must be bool, not %s", vname(in->args[0], b, sizeof b),
         fu_dtype_name(in->args[0]->dtype));
}

/* A dynamic shared array lies inside the launch's dynamic shared memory,
 * 16-byte aligned (so any vector access of it is aligned). */
static bool dynamic_fits(kverifier *v, const fu_kinst *in, const fu_kval *mem) {
  char b[32];
  uint64_t end = mem->offset + (uint64_t)mem->length * fu_dtype_size(mem->dtype);
  if (mem->space != FU_MEM_SHARED) {
    verr(v, in, "dynamic array '%%%s' must be in shared memory", vname(mem, b, sizeof b));
    return false;
  }
  if (mem->offset % 16 != 0) {
    verr(v, in, "dynamic array '%%%s' starts at byte %u, not a multiple of 16", vname(mem, b, sizeof b), mem->offset);
    return false;
  }
  if (end > v->k->smem_bytes) {
    verr(v, in, "dynamic array '%%%s' ends at byte %llu, past the kernel's smem=%u", vname(mem, b, sizeof b),
         (unsigned long long)end, v->k->smem_bytes);
    return false;
  }
  return true;
}

/* LOAD and STORE share the memory operand rules. */
static bool verify_mem(kverifier *v, const fu_kinst *in, bool is_store) {
  char b[32];
  uint32_t w = in->u.mem.width;
  if (in->n_args < 2 || !in->args[0]) {
    verr(v, in, "needs a memory operand and an index");
    return false;
  }
  const fu_kval *mem = in->args[0];
  if (!check_id(v, in, mem)) return false;
  if (mem->kind != FU_KV_TENSOR_PARAM && mem->kind != FU_KV_ARRAY) {
    verr(v, in, "'%%%s' is not a tensor parameter or an array", vname(mem, b, sizeof b));
    return false;
  }
  if (mem->kind == FU_KV_TENSOR_PARAM && !v->is_param[mem->id]) {
    verr(v, in, "'%%%s' is not a parameter of this kernel", vname(mem, b, sizeof b));
    return false;
  }
  if (mem->kind == FU_KV_ARRAY && mem->space == FU_MEM_GLOBAL) {
    verr(v, in, "array '%%%s' must be in shared or local memory", vname(mem, b, sizeof b));
    return false;
  }
  if (w != 1 && w != 2 && w != 4 && w != 8 && w != 16) {
    verr(v, in, "vector width %u is not 1, 2, 4, 8 or 16", w);
    return false;
  }
  if (w * fu_dtype_size(mem->dtype) > 16) {
    verr(v, in, "%u x %s is wider than 16 bytes", w, fu_dtype_name(mem->dtype));
    return false;
  }
  uint32_t bytes = w * (uint32_t)fu_dtype_size(mem->dtype);
  /* a base aligned less than the vector: only where an earlier misalign
   * of it computes a peel (the lowering aligns the index; the kernel-IR
   * interpreter checks every vector address) */
  if (mem->kind == FU_KV_TENSOR_PARAM && w > 1 && mem->align < bytes && v->peeled[mem->id] < bytes) {
    verr(v, in, "a %u-byte vector access needs '%%%s' to have align >= %u, not %u (or a misalign of it before)",
         bytes, vname(mem, b, sizeof b), bytes, mem->align);
    return false;
  }
  if (!use_scalar(v, in, in->args[1], "index")) return false;
  if (!is_index_dtype(in->args[1]->dtype)) {
    verr(v, in, "index '%%%s' must be i32 or i64", vname(in->args[1], b, sizeof b));
    return false;
  }
  if (is_store && mem->kind == FU_KV_TENSOR_PARAM && mem->readonly) {
    verr(v, in, "stores to read-only tensor '%%%s'", vname(mem, b, sizeof b));
    return false;
  }
  if (mem->kind == FU_KV_ARRAY && mem->dynamic && !dynamic_fits(v, in, mem)) return false;
  if (mem->kind == FU_KV_ARRAY && mem->length % w != 0) {
    verr(v, in, "width %u does not divide the length %lld of '%%%s'", w, (long long)mem->length,
         vname(mem, b, sizeof b));
    return false;
  }
  return true;
}

/* atom.add: a global int element, its old value as the result. */
static void verify_atom(kverifier *v, const fu_kinst *in) {
  char b[32];
  if (in->n_args != 3 || in->n_results != 1 || in->u.mem.width != 1) {
    verr(v, in, "needs a memory operand, an index, a value and one result");
    return;
  }
  if (!verify_mem(v, in, true)) return;
  const fu_kval *mem = in->args[0];
  if (mem->kind != FU_KV_TENSOR_PARAM) {
    verr(v, in, "'%%%s' is not in global memory", vname(mem, b, sizeof b));
    return;
  }
  if (mem->dtype != FU_DT_I32 && mem->dtype != FU_DT_I64) {
    verr(v, in, "'%%%s' is %s: atomics take i32 or i64", vname(mem, b, sizeof b), fu_dtype_name(mem->dtype));
    return;
  }
  if (!use_scalar(v, in, in->args[2], "value")) return;
  if (in->args[2]->dtype != mem->dtype)
    verr(v, in, "value '%%%s' is %s but '%%%s' is %s", vname(in->args[2], b, sizeof b),
         fu_dtype_name(in->args[2]->dtype), mem->name ? mem->name : "?", fu_dtype_name(mem->dtype));
  define(v, in, in->results[0]);
  if (in->results[0] && in->results[0]->dtype != mem->dtype)
    verr(v, in, "result '%%%s' must be %s", in->results[0]->name ? in->results[0]->name : "?",
         fu_dtype_name(mem->dtype));
}

static void verify_inst(kverifier *v, const fu_kinst *in, unsigned depth) {
  char b[32];
  switch (in->kind) {
  case FU_KI_CONST:
    if (in->n_args != 0 || in->n_results != 1) {
      verr(v, in, "must have no operands and one result");
      return;
    }
    define(v, in, in->results[0]);
    return;
  case FU_KI_MATH: verify_math(v, in); return;
  case FU_KI_SPECIAL:
    if (in->n_args != 0 || in->n_results != 1 || (unsigned)in->u.special > FU_SP_CLUSTER_RANK) {
      verr(v, in, "must name a special register and have one result");
      return;
    }
    define(v, in, in->results[0]);
    if (in->results[0] && !is_index_dtype(in->results[0]->dtype))
      verr(v, in, "result '%%%s' must be i32 or i64", vname(in->results[0], b, sizeof b));
    return;
  case FU_KI_LOAD: {
    if (!verify_mem(v, in, false)) return;
    if (in->n_args == 3) {
      /* another block's copy of a shared array (distributed shared memory) */
      const fu_kval *arr = in->args[0];
      if (arr->kind != FU_KV_ARRAY || arr->space != FU_MEM_SHARED || in->u.mem.width != 1) {
        verr(v, in, "a block rank needs a shared array and width 1");
        return;
      }
      if (v->k->cluster < 2) {
        verr(v, in, "another block's shared memory needs a kernel with cluster= of 2 or more blocks");
        return;
      }
      if (!use_scalar(v, in, in->args[2], "rank")) return;
      if (in->args[2]->dtype != FU_DT_I32) {
        verr(v, in, "rank '%%%s' must be i32", vname(in->args[2], b, sizeof b));
        return;
      }
    } else if (in->n_args != 2) {
      verr(v, in, "of width %u must have %u results and 2 operands", in->u.mem.width, in->u.mem.width);
      return;
    }
    if (in->n_results != in->u.mem.width) {
      verr(v, in, "of width %u must have %u results and 2 operands", in->u.mem.width, in->u.mem.width);
      return;
    }
    for (uint32_t i = 0; i < in->n_results; i++) {
      define(v, in, in->results[i]);
      if (in->results[i] && in->results[i]->dtype != in->results[0]->dtype)
        verr(v, in, "results must have one dtype");
    }
    return;
  }
  case FU_KI_STORE:
    if (!verify_mem(v, in, true)) return;
    if (in->n_results != 0 || in->n_args != 2 + in->u.mem.width) {
      verr(v, in, "of width %u must have %u values", in->u.mem.width, in->u.mem.width);
      return;
    }
    for (uint32_t i = 2; i < in->n_args; i++) use_scalar(v, in, in->args[i], "value");
    return;
  case FU_KI_READ:
  case FU_KI_ASSIGN: {
    bool rd = in->kind == FU_KI_READ;
    if (in->n_args != (rd ? 1u : 2u) || in->n_results != (rd ? 1u : 0u) || !in->args[0]) {
      verr(v, in, "has the wrong number of operands or results");
      return;
    }
    const fu_kval *mut = in->args[0];
    if (!check_id(v, in, mut)) return;
    if (mut->kind != FU_KV_MUTABLE) {
      verr(v, in, "'%%%s' is not a mutable", vname(mut, b, sizeof b));
      return;
    }
    const fu_kval *other = rd ? in->results[0] : in->args[1];
    if (rd)
      define(v, in, other);
    else if (!use_scalar(v, in, other, "value"))
      return;
    if (other && other->dtype != mut->dtype)
      verr(v, in, "'%%%s' is %s but mutable '%%%s' is %s", other->name ? other->name : "?",
           fu_dtype_name(other->dtype), vname(mut, b, sizeof b), fu_dtype_name(mut->dtype));
    return;
  }
  case FU_KI_SHFL_XOR:
    if (in->n_args != 1 || in->n_results != 1) {
      verr(v, in, "must have one operand and one result");
      return;
    }
    if (in->u.shfl_mask == 0 || in->u.shfl_mask > 31) verr(v, in, "lane mask %u is not in [1, 31]", in->u.shfl_mask);
    if (!use_scalar(v, in, in->args[0], "operand")) return;
    define(v, in, in->results[0]);
    if (in->results[0] && in->results[0]->dtype != in->args[0]->dtype) verr(v, in, "result and operand dtypes differ");
    return;
  case FU_KI_SYNC:
    if (in->n_args || in->n_results) verr(v, in, "takes no operands");
    if (in->u.cluster_sync && v->k->cluster < 2)
      verr(v, in, "a cluster barrier needs a kernel with cluster= of 2 or more blocks");
    return;
  case FU_KI_FENCE:
    if (in->n_args || in->n_results) verr(v, in, "takes no operands");
    if (in->u.fence != FU_FENCE_BLOCK && in->u.fence != FU_FENCE_GPU) verr(v, in, "has an unknown scope");
    return;
  case FU_KI_ATOM_ADD: verify_atom(v, in); return;
  case FU_KI_OPAQUE:
    if (in->n_args == 0 || in->n_args > 16 || in->n_results != in->n_args) {
      verr(v, in, "needs 1 to 16 operands and as many results");
      return;
    }
    for (uint32_t i = 0; i < in->n_args; i++)
      if (!use_scalar(v, in, in->args[i], "operand")) return;
    for (uint32_t i = 0; i < in->n_args; i++) {
      define(v, in, in->results[i]);
      if (in->results[i] && in->results[i]->dtype != in->args[i]->dtype)
        verr(v, in, "result %u is %s but its operand is %s", i, fu_dtype_name(in->results[i]->dtype),
             fu_dtype_name(in->args[i]->dtype));
      else if (in->args[i]->dtype != in->args[0]->dtype)
        verr(v, in, "operands must have one dtype");
    }
    return;
  case FU_KI_MISALIGN: {
    uint32_t w = in->u.misalign;
    if (in->n_args != 1 || in->n_results != 1 || !in->args[0]) {
      verr(v, in, "needs a tensor parameter and one result");
      return;
    }
    if (!check_id(v, in, in->args[0])) return;
    const fu_kval *mem = in->args[0];
    bool tensor = mem->kind == FU_KV_TENSOR_PARAM;
    if (!tensor) verr(v, in, "'%%%s' is not a tensor parameter", vname(mem, b, sizeof b));
    uint32_t bytes = w * (uint32_t)fu_dtype_size(mem->dtype);
    if (w < 2 || w > 16 || (w & (w - 1)) != 0) verr(v, in, "modulus %u is not 2, 4, 8 or 16", w);
    else if (tensor && bytes > v->peeled[mem->id]) v->peeled[mem->id] = bytes;
    define(v, in, in->results[0]);
    if (in->results[0] && !is_index_dtype(in->results[0]->dtype)) verr(v, in, "the result must be i32 or i64");
    return;
  }
  case FU_KI_FOR: {
    if (in->n_args != 3 || in->n_results != 1) {
      verr(v, in, "needs start, end, step and an induction variable");
      return;
    }
    bool ok = use_scalar(v, in, in->args[0], "start") & use_scalar(v, in, in->args[1], "end") &
              use_scalar(v, in, in->args[2], "step");
    if (ok) {
      fu_dtype t = in->args[0]->dtype;
      if (!is_index_dtype(t) || in->args[1]->dtype != t || in->args[2]->dtype != t)
        verr(v, in, "start, end and step must all be i32 or all i64");
      else if (in->results[0] && in->results[0]->dtype != t)
        verr(v, in, "induction variable must have the bounds' dtype");
    }
    if ((unsigned)in->u.loop.kind > FU_LOOP_ROLLED) verr(v, in, "unknown loop kind");
    uint32_t mark = v->n_scope;
    define(v, in, in->results[0]);
    verify_block(v, &in->u.loop.body, depth + 1);
    while (v->n_scope > mark) v->visible[v->scope[--v->n_scope]] = false;
    return;
  }
  case FU_KI_IF:
    if (in->n_args != 1 || in->n_results != 0) {
      verr(v, in, "needs one condition");
      return;
    }
    if (use_scalar(v, in, in->args[0], "condition") && in->args[0]->dtype != FU_DT_BOOL)
      verr(v, in, "condition '%%%s' must be bool", vname(in->args[0], b, sizeof b));
    verify_nested(v, &in->u.branch.then_body, depth);
    verify_nested(v, &in->u.branch.else_body, depth);
    return;
  }
  verr(v, in, "unknown instruction kind %d", (int)in->kind);
}

static void verify_block(kverifier *v, const fu_kblock *b, unsigned depth) {
  if (depth > 1000) {
    verr(v, NULL, "blocks nest too deeply");
    return;
  }
  for (const fu_kinst *in = b->first; in; in = in->next) verify_inst(v, in, depth);
}

static void verify_params(kverifier *v) {
  const fu_kernel *k = v->k;
  char b[32];
  for (uint32_t i = 0; i < k->n_params; i++) {
    const fu_kval *p = k->params[i];
    if (!p) {
      verr(v, NULL, "parameter %u is missing", i);
      continue;
    }
    if (!check_id(v, NULL, p)) continue;
    v->is_param[p->id] = true;
    const char *pn = vname(p, b, sizeof b);
    if (p->kind == FU_KV_TENSOR_PARAM) {
      if (p->align && (p->align & (p->align - 1)))
        verr(v, NULL, "parameter '%%%s': align=%u is not a power of two", pn, p->align);
      if (p->tensor && fu_type_is_tensor(&p->tensor->type) && p->tensor->type.dtype != p->dtype)
        verr(v, NULL, "parameter '%%%s' is %s but binds a %s tensor", pn, fu_dtype_name(p->dtype),
             fu_dtype_name(p->tensor->type.dtype));
      if (p->ws_size && p->tensor) verr(v, NULL, "workspace '%%%s' binds a fusion value", pn);
      if (p->ws_size && p->readonly) verr(v, NULL, "workspace '%%%s' is read-only", pn);
      if (p->stream && !p->readonly) verr(v, NULL, "parameter '%%%s' is stream but not readonly", pn);
      if (!p->ws_size && p->ws_zeroed) verr(v, NULL, "parameter '%%%s' is zeroed but not a workspace", pn);
      if (p->ws_error && (!p->ws_size || !p->ws_zeroed || p->dtype != FU_DT_I32))
        verr(v, NULL, "error flag '%%%s' must be a zeroed i32 workspace", pn);
      if (p->alias_of) {
        const fu_kval *a = p->alias_of;
        char ab[32];
        bool earlier = false;
        for (uint32_t j = 0; j < i; j++) earlier |= k->params[j] == a;
        if (!earlier || a->kind != FU_KV_TENSOR_PARAM || a->ws_size || a->alias_of)
          verr(v, NULL, "parameter '%%%s': alias '%%%s' is not an earlier tensor parameter", pn, vname(a, ab, sizeof ab));
        else if (a->dtype != p->dtype)
          verr(v, NULL, "parameter '%%%s' is %s but its alias '%%%s' is %s", pn, fu_dtype_name(p->dtype),
               vname(a, ab, sizeof ab), fu_dtype_name(a->dtype));
        else if (p->readonly || p->noalias || a->readonly || a->noalias)
          verr(v, NULL, "parameter '%%%s' and its alias '%%%s' share memory: neither may be readonly or noalias", pn,
               vname(a, ab, sizeof ab));
      }
      continue;
    }
    if (p->kind != FU_KV_SCALAR_PARAM) {
      verr(v, NULL, "parameter '%%%s' is not a tensor or a scalar", pn);
      continue;
    }
    switch (p->role) {
    case FU_KP_NONE:
    case FU_KP_SCALAR_INPUT: break;
    case FU_KP_EXTENT:
      if (!p->sym) verr(v, NULL, "extent parameter '%%%s' names no symbol", pn);
      if (!fu_dtype_is_int(p->dtype)) verr(v, NULL, "extent parameter '%%%s' must be an int", pn);
      break;
    case FU_KP_STRIDE: {
      bool found = false;
      for (uint32_t j = 0; j < k->n_params; j++) found |= k->params[j] == p->stride_of;
      if (!found || !p->stride_of || p->stride_of->kind != FU_KV_TENSOR_PARAM)
        verr(v, NULL, "stride parameter '%%%s' must refer to a tensor parameter", pn);
      if (p->dim < 0) verr(v, NULL, "stride parameter '%%%s' has a negative dim", pn);
      if (!fu_dtype_is_int(p->dtype)) verr(v, NULL, "stride parameter '%%%s' must be an int", pn);
      break;
    }
    default: verr(v, NULL, "parameter '%%%s' has an unknown role", pn);
    }
  }
}

fu_status fu_kernel_verify(const fu_kernel *k, fu_diag_engine *diag, const fu_kir_locator *loc) {
  if (!k || !diag) return FU_ERR_INVALID_ARG;
  kverifier v;
  memset(&v, 0, sizeof v);
  v.k = k;
  v.diag = diag;
  v.locator = loc;
  v.alloc = diag->alloc.fn ? diag->alloc : fu_default_allocator();
  v.n_ids = k->next_kval_id;
  size_t n = v.n_ids ? v.n_ids : 1;
  v.by_id = fu_mem_calloc(&v.alloc, n, sizeof *v.by_id);
  v.visible = fu_mem_calloc(&v.alloc, n, sizeof *v.visible);
  v.defined = fu_mem_calloc(&v.alloc, n, sizeof *v.defined);
  v.is_param = fu_mem_calloc(&v.alloc, n, sizeof *v.is_param);
  v.peeled = fu_mem_calloc(&v.alloc, n, sizeof *v.peeled);
  fu_status st = FU_OK;
  if (!v.by_id || !v.visible || !v.defined || !v.is_param || !v.peeled) {
    st = FU_ERR_NOMEM;
    goto done;
  }
  if (!k->name || !*k->name) verr(&v, NULL, "has no name");
  for (int i = 0; i < 3; i++) {
    if (!k->grid[i]) verr(&v, NULL, "grid dimension %d is missing", i);
    if (k->block[i] == 0) verr(&v, NULL, "block dimension %d is zero", i);
  }
  if ((uint64_t)k->block[0] * k->block[1] * k->block[2] > 1024)
    verr(&v, NULL, "block [%u, %u, %u] has more than 1024 threads", k->block[0], k->block[1], k->block[2]);
  if (!is_index_dtype(k->index_dtype)) verr(&v, NULL, "index dtype must be i32 or i64");
  if (k->cluster > 1 && k->cluster != 2 && k->cluster != 4 && k->cluster != 8)
    verr(&v, NULL, "cluster=%u is not 2, 4 or 8 blocks", k->cluster);
  verify_params(&v);
  verify_block(&v, &k->body, 0);
  if (v.errors) st = FU_ERR_VERIFY;
done:
  fu_mem_free(&v.alloc, v.by_id, n * sizeof *v.by_id);
  fu_mem_free(&v.alloc, v.visible, n * sizeof *v.visible);
  fu_mem_free(&v.alloc, v.defined, n * sizeof *v.defined);
  fu_mem_free(&v.alloc, v.is_param, n * sizeof *v.is_param);
  fu_mem_free(&v.alloc, v.peeled, n * sizeof *v.peeled);
  fu_mem_free(&v.alloc, v.scope, v.scope_cap * sizeof *v.scope);
  return st;
}
