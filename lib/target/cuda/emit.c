/* fuser cuda target: kernels of kernel IR as CUDA C.
 *
 * One statement per instruction, in program order: an SSA local becomes a
 * `const` declaration with its kernel-IR name, a mutable a variable, an
 * array a `__shared__` or local array declared at the top of the kernel,
 * `for` and `if` the same statements in C (`#pragma unroll` for an unroll
 * loop).  Loads and stores of several elements go through fu_vec<T, N>, an
 * aligned array that NVVM reads and writes as one vector access; inputs are
 * `const T *__restrict__` when readonly and noalias, which is what lets NVVM
 * use ld.global.nc, as the LLVM path's !invariant.load does.  The switch
 * over instruction kinds has no default: a new kind of kernel IR does not
 * compile until this file says how to write it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuser/device.h"
#include "internal.h"

void cu_error(cu_module *m, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fu_diag_vreport(m->diag, FU_SEV_ERROR, fu_loc_none(), fmt, ap);
  va_end(ap);
  m->failed = true;
}

static void indent(cu_kernel *kc) {
  for (unsigned i = 0; i <= kc->depth; i++) fu_strbuf_puts(kc->out, "  ");
}

static bool used(const cu_kernel *kc, const fu_kval *v) { return v->id < kc->n_ids && kc->uses[v->id] > 0; }

/* `T name = ` for a result of dtype t; `(void)` when nothing uses it (a
 * shuffle or an atomic kept for its effect). */
static void declare(cu_kernel *kc, const fu_kval *v) {
  cu_use_dtype(kc->mod, v->dtype);
  indent(kc);
  if (used(kc, v))
    fu_strbuf_printf(kc->out, "const %s %s = ", cu_reg_type(v->dtype), cu_name(kc, v));
  else
    fu_strbuf_puts(kc->out, "(void)");
}

/* `&mem[index]` */
static void element(cu_kernel *kc, fu_strbuf *sb, const fu_kval *mem, const fu_kval *index) {
  fu_strbuf_printf(sb, "&%s[%s]", cu_name(kc, mem), cu_name(kc, index));
}

/* An element of `mem` read as `text` (its memory form) converted to `to`. */
static void from_memory(cu_kernel *kc, const char *text, bool atomic, const fu_kval *mem, fu_dtype to) {
  if (mem->dtype == FU_DT_BOOL) {
    /* one byte; any non-zero byte is true */
    fu_strbuf b;
    fu_strbuf_init(&b, kc->mod->alloc);
    fu_strbuf_printf(&b, "%s != 0", text);
    if (to == FU_DT_BOOL) {
      fu_strbuf_append(kc->out, b.data, b.len);
    } else {
      fu_strbuf p;
      fu_strbuf_init(&p, kc->mod->alloc);
      fu_strbuf_printf(&p, "(%s)", b.data ? b.data : "");
      cu_convert(kc->mod, kc->out, p.data ? p.data : "", true, FU_DT_BOOL, to);
      fu_strbuf_free(&p);
    }
    fu_strbuf_free(&b);
    return;
  }
  cu_convert(kc->mod, kc->out, text, atomic, mem->dtype, to);
}

/* A value of `v` converted to the element type of `mem`, as stored. */
static void to_memory(cu_kernel *kc, fu_strbuf *sb, const fu_kval *v, const fu_kval *mem) {
  if (mem->dtype != FU_DT_BOOL) {
    cu_convert(kc->mod, sb, cu_name(kc, v), true, v->dtype, mem->dtype);
    return;
  }
  fu_strbuf b;
  fu_strbuf_init(&b, kc->mod->alloc);
  bool safe = cu_convert(kc->mod, &b, cu_name(kc, v), true, v->dtype, FU_DT_BOOL);
  fu_strbuf_printf(sb, safe ? "(unsigned char)%s" : "(unsigned char)(%s)", b.data ? b.data : "");
  fu_strbuf_free(&b);
}

static const char *vec_type(cu_kernel *kc, fu_strbuf *sb, const fu_kval *mem, uint32_t w) {
  kc->mod->helpers |= CU_H_VEC;
  fu_strbuf_clear(sb);
  fu_strbuf_printf(sb, "fu_vec<%s, %u>", cu_mem_type(mem->dtype), w);
  return sb->data;
}

static void emit_load(cu_kernel *kc, const fu_kinst *in) {
  const fu_kval *mem = in->args[0], *index = in->args[1];
  uint32_t w = in->u.mem.width;
  fu_strbuf src;
  fu_strbuf_init(&src, kc->mod->alloc);
  bool stream = mem->kind == FU_KV_TENSOR_PARAM && mem->stream;
  if (stream) kc->mod->helpers |= CU_H_LDCS;
  if (w == 1) {
    /* readonly without noalias: __restrict__ cannot say it, __ldg does */
    bool ldg = mem->kind == FU_KV_TENSOR_PARAM && mem->readonly && !mem->noalias;
    if (stream) {
      fu_strbuf_puts(&src, "fu_ldcs(");
      element(kc, &src, mem, index);
      fu_strbuf_putc(&src, ')');
    } else if (ldg) {
      fu_strbuf_puts(&src, "__ldg(");
      element(kc, &src, mem, index);
      fu_strbuf_putc(&src, ')');
    } else {
      fu_strbuf_printf(&src, "%s[%s]", cu_name(kc, mem), cu_name(kc, index));
    }
    declare(kc, in->results[0]);
    from_memory(kc, src.data ? src.data : "", true, mem, in->results[0]->dtype);
    fu_strbuf_puts(kc->out, ";\n");
    fu_strbuf_free(&src);
    return;
  }
  fu_strbuf vt;
  fu_strbuf_init(&vt, kc->mod->alloc);
  const char *ty = vec_type(kc, &vt, mem, w);
  char base[320];
  snprintf(base, sizeof base, "%.300s_v", cu_name(kc, in->results[0]));
  const char *tmp = cu_fresh_name(kc, base);
  indent(kc);
  fu_strbuf_printf(kc->out, "const %s %s = %sreinterpret_cast<const %s *>(", ty ? ty : "", tmp ? tmp : "v",
                   stream ? "fu_ldcs(" : "*", ty ? ty : "");
  element(kc, kc->out, mem, index);
  fu_strbuf_puts(kc->out, stream ? "));\n" : ");\n");
  for (uint32_t i = 0; i < w; i++) {
    if (!used(kc, in->results[i])) continue;
    fu_strbuf_clear(&src);
    fu_strbuf_printf(&src, "%s.e[%u]", tmp ? tmp : "v", i);
    declare(kc, in->results[i]);
    from_memory(kc, src.data ? src.data : "", true, mem, in->results[i]->dtype);
    fu_strbuf_puts(kc->out, ";\n");
  }
  fu_strbuf_free(&vt);
  fu_strbuf_free(&src);
  if (!tmp) kc->mod->failed = true;
}

/* Whether the target has thread-block clusters; if not, an error naming
 * the kernel, what needs them and the target (the CUDA C would not
 * compile for it: barrier.cluster, mapa and %cluster_ctarank are sm_90's). */
static bool clusters_ok(cu_kernel *kc, const char *what) {
  if (kc->mod->sm >= 90) return true;
  cu_error(kc->mod, "kernel '@%s': %s needs thread-block clusters, which %s does not have (sm_90 or later)", kc->k->name,
           what, kc->mod->arch ? kc->mod->arch : "the target");
  return false;
}

/* `load %arr[%i] cta %r`: fu_ld_cta, mapa on the element's generic address
 * and a generic load, as the LLVM path (width 1, a shared array). */
static void emit_load_cta(cu_kernel *kc, const fu_kinst *in) {
  const fu_kval *mem = in->args[0];
  if (!clusters_ok(kc, "a load from another block's shared memory ('load ... cta')")) return;
  kc->mod->helpers |= CU_H_CLUSTER;
  fu_strbuf src;
  fu_strbuf_init(&src, kc->mod->alloc);
  fu_strbuf_puts(&src, "fu_ld_cta(");
  element(kc, &src, mem, in->args[1]);
  fu_strbuf_printf(&src, ", %s)", cu_name(kc, in->args[2]));
  declare(kc, in->results[0]);
  from_memory(kc, src.data ? src.data : "", true, mem, in->results[0]->dtype);
  fu_strbuf_puts(kc->out, ";\n");
  fu_strbuf_free(&src);
}

static void emit_store(cu_kernel *kc, const fu_kinst *in) {
  const fu_kval *mem = in->args[0], *index = in->args[1];
  uint32_t w = in->u.mem.width;
  indent(kc);
  if (w == 1) {
    fu_strbuf_printf(kc->out, "%s[%s] = ", cu_name(kc, mem), cu_name(kc, index));
    to_memory(kc, kc->out, in->args[2], mem);
    fu_strbuf_puts(kc->out, ";\n");
    return;
  }
  fu_strbuf vt;
  fu_strbuf_init(&vt, kc->mod->alloc);
  const char *ty = vec_type(kc, &vt, mem, w);
  fu_strbuf_printf(kc->out, "*reinterpret_cast<%s *>(", ty ? ty : "");
  element(kc, kc->out, mem, index);
  fu_strbuf_printf(kc->out, ") = %s{{", ty ? ty : "");
  for (uint32_t i = 0; i < w; i++) {
    if (i) fu_strbuf_puts(kc->out, ", ");
    to_memory(kc, kc->out, in->args[2 + i], mem);
  }
  fu_strbuf_puts(kc->out, "}};\n");
  fu_strbuf_free(&vt);
}

/* A butterfly over all 32 lanes; CUDA's overloads shuffle 64-bit values as
 * two halves and 16-bit floats widened, as the LLVM path does; bool goes
 * as an int. */
static void emit_shfl(cu_kernel *kc, const fu_kinst *in) {
  const fu_kval *x = in->args[0];
  declare(kc, in->results[0]);
  if (x->dtype == FU_DT_BOOL)
    fu_strbuf_printf(kc->out, "(__shfl_xor_sync(0xffffffffu, (int)%s, %u) != 0);\n", cu_name(kc, x),
                     in->u.shfl_mask);
  else
    fu_strbuf_printf(kc->out, "__shfl_xor_sync(0xffffffffu, %s, %u);\n", cu_name(kc, x), in->u.shfl_mask);
}

/* `opaque`: each value copied, its bits through an empty volatile asm
 * that NVVM cannot see through (a 16-bit float as an unsigned short). */
static void emit_opaque(cu_kernel *kc, const fu_kinst *in) {
  for (uint32_t i = 0; i < in->n_results; i++) {
    const fu_kval *x = in->args[i], *r = in->results[i];
    if (!used(kc, r)) continue;
    cu_use_dtype(kc->mod, r->dtype);
    indent(kc);
    const char *ty = cu_reg_type(r->dtype), *name = cu_name(kc, r);
    fu_strbuf_printf(kc->out, "%s %s = %s;", ty, name, cu_name(kc, x));
    switch (r->dtype) {
    case FU_DT_F16:
    case FU_DT_BF16: fu_strbuf_printf(kc->out, " asm volatile(\"\" : \"+h\"(*(unsigned short *)&%s));\n", name); break;
    case FU_DT_F32: fu_strbuf_printf(kc->out, " asm volatile(\"\" : \"+f\"(%s));\n", name); break;
    case FU_DT_I32: fu_strbuf_printf(kc->out, " asm volatile(\"\" : \"+r\"(%s));\n", name); break;
    case FU_DT_F64: fu_strbuf_printf(kc->out, " asm volatile(\"\" : \"+d\"(%s));\n", name); break;
    case FU_DT_I64: fu_strbuf_printf(kc->out, " asm volatile(\"\" : \"+l\"(%s));\n", name); break;
    default: fu_strbuf_putc(kc->out, '\n'); break;
    }
  }
}

/* atomicAdd, relaxed, as atom.global.add; i64 through CUDA's unsigned
 * long long form (the same bits). */
static void emit_atom_add(cu_kernel *kc, const fu_kinst *in) {
  const fu_kval *mem = in->args[0], *index = in->args[1], *v = in->args[2];
  const fu_kval *r = in->results[0];
  declare(kc, r);
  fu_strbuf val;
  fu_strbuf_init(&val, kc->mod->alloc);
  cu_convert(kc->mod, &val, cu_name(kc, v), true, v->dtype, mem->dtype);
  fu_strbuf old;
  fu_strbuf_init(&old, kc->mod->alloc);
  if (mem->dtype == FU_DT_I64) {
    fu_strbuf_puts(&old, "(long long)atomicAdd((unsigned long long *)");
    element(kc, &old, mem, index);
    fu_strbuf_printf(&old, ", (unsigned long long)%s)", val.data ? val.data : "");
  } else {
    fu_strbuf_puts(&old, "atomicAdd(");
    element(kc, &old, mem, index);
    fu_strbuf_printf(&old, ", %s)", val.data ? val.data : "");
  }
  cu_convert(kc->mod, kc->out, old.data ? old.data : "", mem->dtype != FU_DT_I64, mem->dtype, r->dtype);
  fu_strbuf_puts(kc->out, ";\n");
  fu_strbuf_free(&val);
  fu_strbuf_free(&old);
}

static void emit_block(cu_kernel *kc, const fu_kblock *b);

static void emit_for(cu_kernel *kc, const fu_kinst *in) {
  const fu_kval *iv = in->results[0];
  const char *i = cu_name(kc, iv);
  if (in->u.loop.kind != FU_LOOP_SERIAL) {
    indent(kc);
    fu_strbuf_puts(kc->out, in->u.loop.kind == FU_LOOP_UNROLL ? "#pragma unroll\n" : "#pragma unroll 1\n");
  }
  indent(kc);
  fu_strbuf_printf(kc->out, "for (%s %s = %s; %s < %s; %s += %s) {\n", cu_reg_type(iv->dtype), i,
                   cu_name(kc, in->args[0]), i, cu_name(kc, in->args[1]), i, cu_name(kc, in->args[2]));
  kc->depth++;
  emit_block(kc, &in->u.loop.body);
  kc->depth--;
  indent(kc);
  fu_strbuf_puts(kc->out, "}\n");
}

static void emit_if(cu_kernel *kc, const fu_kinst *in) {
  indent(kc);
  fu_strbuf_printf(kc->out, "if (%s) {\n", cu_name(kc, in->args[0]));
  kc->depth++;
  emit_block(kc, &in->u.branch.then_body);
  kc->depth--;
  indent(kc);
  if (in->u.branch.else_body.first) {
    fu_strbuf_puts(kc->out, "} else {\n");
    kc->depth++;
    emit_block(kc, &in->u.branch.else_body);
    kc->depth--;
    indent(kc);
  }
  fu_strbuf_puts(kc->out, "}\n");
}

static const char *const special_text[] = {
    "threadIdx.x", "threadIdx.y", "threadIdx.z", "blockIdx.x", "blockIdx.y", "blockIdx.z",
    "blockDim.x",  "blockDim.y",  "blockDim.z",  "gridDim.x",  "gridDim.y",  "gridDim.z",
};

/* Instructions that only define a value write nothing when the value is
 * never used (the LLVM path's optimizer drops them too; C compilers warn). */
static bool dead(const cu_kernel *kc, const fu_kinst *in) {
  switch (in->kind) {
  case FU_KI_CONST:
  case FU_KI_MATH:
  case FU_KI_SPECIAL:
  case FU_KI_MISALIGN:
  case FU_KI_READ: return !used(kc, in->results[0]);
  case FU_KI_LOAD:
  case FU_KI_OPAQUE:
    for (uint32_t i = 0; i < in->n_results; i++)
      if (used(kc, in->results[i])) return false;
    return true;
  case FU_KI_STORE:
  case FU_KI_ASSIGN:
  case FU_KI_SHFL_XOR: /* a warp-wide exchange: kept as written */
  case FU_KI_SYNC:
  case FU_KI_ATOM_ADD:
  case FU_KI_FENCE:
  case FU_KI_FOR:
  case FU_KI_IF: return false;
  }
  return false;
}

/* Drops the uses that dead instructions make, in reverse program order
 * (every use follows its definition), so what only dead code uses is dead
 * too. */
static fu_status prune(cu_kernel *kc, const fu_kblock *b) {
  uint32_t n = 0;
  for (const fu_kinst *in = b->first; in; in = in->next) n++;
  if (!n) return FU_OK;
  const fu_kinst **list = fu_mem_alloc(&kc->mod->alloc, n * sizeof *list);
  if (!list) return FU_ERR_NOMEM;
  n = 0;
  for (const fu_kinst *in = b->first; in; in = in->next) list[n++] = in;
  fu_status st = FU_OK;
  for (uint32_t i = n; i-- > 0 && st == FU_OK;) {
    const fu_kinst *in = list[i];
    if (in->kind == FU_KI_FOR) st = prune(kc, &in->u.loop.body);
    if (in->kind == FU_KI_IF) {
      st = prune(kc, &in->u.branch.else_body);
      if (st == FU_OK) st = prune(kc, &in->u.branch.then_body);
    }
    if (in->kind == FU_KI_OPAQUE) {
      /* a copy per value: each unused result drops its own operand */
      for (uint32_t r = 0; r < in->n_results && r < in->n_args; r++)
        if (!used(kc, in->results[r]) && in->args[r]->id < kc->n_ids && kc->uses[in->args[r]->id])
          kc->uses[in->args[r]->id]--;
      continue;
    }
    if (!dead(kc, in)) continue;
    for (uint32_t a = 0; a < in->n_args; a++)
      if (in->args[a]->id < kc->n_ids && kc->uses[in->args[a]->id]) kc->uses[in->args[a]->id]--;
  }
  fu_mem_free(&kc->mod->alloc, list, n * sizeof *list);
  return st;
}

static void emit_inst(cu_kernel *kc, const fu_kinst *in) {
  if (dead(kc, in)) return;
  switch (in->kind) {
  case FU_KI_CONST:
    declare(kc, in->results[0]);
    cu_literal(kc->mod, kc->out, in->results[0]->dtype, in->u.constant);
    fu_strbuf_puts(kc->out, ";\n");
    return;
  case FU_KI_MATH:
    if (!cu_math(kc, in)) return;
    declare(kc, in->results[0]);
    fu_strbuf_append(kc->out, kc->expr.data ? kc->expr.data : "", kc->expr.len);
    fu_strbuf_puts(kc->out, ";\n");
    return;
  case FU_KI_SPECIAL: {
    /* unsigned registers, zero-extended to i64 */
    const char *text = (unsigned)in->u.special < sizeof special_text / sizeof special_text[0]
                           ? special_text[in->u.special]
                           : NULL;
    if (in->u.special == FU_SP_CLUSTER_RANK) {
      if (!clusters_ok(kc, "'special cluster_rank'")) return;
      kc->mod->helpers |= CU_H_CLUSTER;
      text = "fu_cluster_rank()";
    }
    if (!text) {
      cu_error(kc->mod, "kernel '@%s': special register %d is not supported by the cuda target", kc->k->name,
               (int)in->u.special);
      return;
    }
    declare(kc, in->results[0]);
    fu_strbuf_printf(kc->out, "(%s)%s;\n", cu_reg_type(in->results[0]->dtype), text);
    return;
  }
  case FU_KI_LOAD:
    if (in->n_args == 3)
      emit_load_cta(kc, in);
    else
      emit_load(kc, in);
    return;
  case FU_KI_STORE: emit_store(kc, in); return;
  case FU_KI_READ:
    declare(kc, in->results[0]);
    fu_strbuf_printf(kc->out, "%s;\n", cu_name(kc, in->args[0]));
    return;
  case FU_KI_ASSIGN:
    indent(kc);
    fu_strbuf_printf(kc->out, "%s = %s;\n", cu_name(kc, in->args[0]), cu_name(kc, in->args[1]));
    return;
  case FU_KI_SHFL_XOR: emit_shfl(kc, in); return;
  case FU_KI_SYNC:
    if (in->u.cluster_sync) {
      if (!clusters_ok(kc, "'sync cluster'")) return;
      kc->mod->helpers |= CU_H_CLUSTER;
    }
    indent(kc);
    fu_strbuf_puts(kc->out, in->u.cluster_sync ? "fu_cluster_sync();\n" : "__syncthreads();\n");
    return;
  case FU_KI_ATOM_ADD: emit_atom_add(kc, in); return;
  case FU_KI_MISALIGN:
    /* the base address in elements, modulo a power of two */
    declare(kc, in->results[0]);
    fu_strbuf_printf(kc->out, "(%s)(((unsigned long long)%s / %zu) & %uu);\n", cu_reg_type(in->results[0]->dtype),
                     cu_name(kc, in->args[0]), fu_dtype_size(in->args[0]->dtype), in->u.misalign - 1);
    return;
  case FU_KI_FENCE:
    indent(kc);
    fu_strbuf_puts(kc->out, in->u.fence == FU_FENCE_GPU ? "__threadfence();\n" : "__threadfence_block();\n");
    return;
  case FU_KI_OPAQUE: emit_opaque(kc, in); return;
  case FU_KI_FOR: emit_for(kc, in); return;
  case FU_KI_IF: emit_if(kc, in); return;
  }
  /* a kind this file does not know (a value outside the enum) */
  cu_error(kc->mod, "kernel '@%s': kernel-IR instruction kind %d is not supported by the cuda target", kc->k->name,
           (int)in->kind);
}

static void emit_block(cu_kernel *kc, const fu_kblock *b) {
  for (const fu_kinst *in = b->first; in && !kc->mod->failed; in = in->next) emit_inst(kc, in);
}

/* ---- the kernel ------------------------------------------------------------ */

static void param_comment(cu_kernel *kc, const fu_kval *p) {
  fu_strbuf *o = kc->out;
  if (p->kind == FU_KV_TENSOR_PARAM) {
    if (p->ws_size) {
      fu_strbuf_printf(o, "workspace %s[", fu_dtype_name(p->dtype));
      fu_lexpr_print(o, p->ws_size);
      fu_strbuf_puts(o, "]");
      if (p->ws_zeroed) fu_strbuf_puts(o, " zeroed");
      if (p->ws_error) fu_strbuf_puts(o, " error flag");
    } else {
      fu_strbuf_printf(o, "%s tensor", fu_dtype_name(p->dtype));
      if (p->tensor && p->tensor->name) fu_strbuf_printf(o, " %%%s", p->tensor->name);
      if (p->readonly) fu_strbuf_puts(o, " readonly");
    }
    if (p->noalias) fu_strbuf_puts(o, " noalias");
    fu_strbuf_printf(o, " align=%u", p->align ? p->align : (unsigned)fu_dtype_size(p->dtype));
    return;
  }
  switch (p->role) {
  case FU_KP_EXTENT: fu_strbuf_printf(o, "extent %s", p->sym ? p->sym : "?"); return;
  case FU_KP_STRIDE:
    fu_strbuf_printf(o, "stride of %%%s dim %d", p->stride_of && p->stride_of->name ? p->stride_of->name : "?", p->dim);
    return;
  case FU_KP_SCALAR_INPUT:
    fu_strbuf_printf(o, "scalar input %%%s", p->scalar && p->scalar->name ? p->scalar->name : "?");
    return;
  case FU_KP_NONE: fu_strbuf_printf(o, "%s scalar", fu_dtype_name(p->dtype)); return;
  }
}

static void emit_signature(cu_kernel *kc) {
  const fu_kernel *k = kc->k;
  fu_strbuf *o = kc->out;
  fu_strbuf_printf(o, "// kernel @%s: grid [", k->name);
  for (int d = 0; d < 3; d++) {
    if (d) fu_strbuf_puts(o, ", ");
    fu_lexpr_print(o, k->grid[d]);
  }
  fu_strbuf_printf(o, "], block [%u, %u, %u], %u bytes of dynamic shared memory, %s indexing", k->block[0],
                   k->block[1], k->block[2], k->smem_bytes, fu_dtype_name(k->index_dtype));
  if (k->cluster > 1) fu_strbuf_printf(o, ", clusters of %u blocks", k->cluster);
  fu_strbuf_putc(o, '\n');
  /* a second bound where shared memory limits the blocks per SM, or the
   * kernel plans on several */
  uint32_t min_blocks = fu_kernel_min_blocks_per_sm(k, kc->mod->sm);
  fu_strbuf_puts(o, "extern \"C\" __global__ void ");
  /* The cluster's shape in the PTX too (.reqnctapercluster C, 1, 1 and
   * .explicitcluster): the runtime gives the same shape as a launch
   * attribute (lib/runtime/module.c), which the driver takes where it
   * matches; a launch without it still runs in clusters of C, and one of
   * another shape is refused (CUDA_ERROR_INVALID_CLUSTER_SIZE, on an
   * H100), where the LLVM path's PTX, which cannot say its shape, would
   * run mapa outside its cluster and fault. */
  if (k->cluster > 1) fu_strbuf_printf(o, "__cluster_dims__(%u, 1, 1) ", k->cluster);
  fu_strbuf_printf(o, "__launch_bounds__(%u", k->block[0] * k->block[1] * k->block[2]);
  if (min_blocks) fu_strbuf_printf(o, ", %u", min_blocks);
  fu_strbuf_printf(o, ") %s(", k->name);
  if (!k->n_params) fu_strbuf_puts(o, ") {\n");
  for (uint32_t i = 0; i < k->n_params; i++) {
    const fu_kval *p = k->params[i];
    cu_use_dtype(kc->mod, p->dtype);
    fu_strbuf_puts(o, "\n    ");
    if (p->kind == FU_KV_TENSOR_PARAM)
      fu_strbuf_printf(o, "%s%s *%s%s", p->readonly ? "const " : "", cu_mem_type(p->dtype),
                       p->noalias ? "__restrict__ " : "", cu_name(kc, p));
    else
      fu_strbuf_printf(o, "%s %s", cu_reg_type(p->dtype), cu_name(kc, p));
    fu_strbuf_puts(o, i + 1 < k->n_params ? ",  // " : ") {  // ");
    param_comment(kc, p);
  }
  if (k->n_params) fu_strbuf_putc(o, '\n');
}

/* Mutables and arrays, declared at the top of the kernel in id order (the
 * kernel IR's printer's order). */
static void collect_storage(cu_kernel *kc, const fu_kblock *b, bool *seen) {
  for (const fu_kinst *in = b->first; in; in = in->next) {
    for (uint32_t i = 0; i < in->n_args; i++) {
      const fu_kval *v = in->args[i];
      if ((v->kind == FU_KV_MUTABLE || v->kind == FU_KV_ARRAY) && v->id < kc->n_ids) seen[v->id] = true;
    }
    if (in->kind == FU_KI_FOR) collect_storage(kc, &in->u.loop.body, seen);
    if (in->kind == FU_KI_IF) {
      collect_storage(kc, &in->u.branch.then_body, seen);
      collect_storage(kc, &in->u.branch.else_body, seen);
    }
  }
}

static fu_status emit_storage(cu_kernel *kc) {
  bool *seen = fu_mem_calloc(&kc->mod->alloc, kc->n_ids, sizeof *seen);
  if (!seen) return FU_ERR_NOMEM;
  collect_storage(kc, &kc->k->body, seen);
  bool dyn = false;
  for (uint32_t id = 0; id < kc->n_ids; id++) {
    const fu_kval *v = kc->vals[id];
    if (!seen[id] || !v) continue;
    cu_use_dtype(kc->mod, v->dtype);
    if (v->kind == FU_KV_ARRAY && v->dynamic && !dyn) {
      /* the launch's dynamic shared memory, which the dynamic arrays index */
      indent(kc);
      fu_strbuf_puts(kc->out, "extern __shared__ __align__(16) unsigned char fu_dynamic_smem[];\n");
      dyn = true;
    }
    indent(kc);
    if (v->kind == FU_KV_ARRAY && v->dynamic)
      fu_strbuf_printf(kc->out, "%s *const %s = (%s *)(fu_dynamic_smem + %u);\n", cu_mem_type(v->dtype),
                       cu_name(kc, v), cu_mem_type(v->dtype), v->offset);
    else if (v->kind == FU_KV_MUTABLE)
      fu_strbuf_printf(kc->out, "%s %s;\n", cu_reg_type(v->dtype), cu_name(kc, v));
    else
      fu_strbuf_printf(kc->out, "%s__align__(16) %s %s[%lld];\n", v->space == FU_MEM_SHARED ? "__shared__ " : "",
                       cu_mem_type(v->dtype), cu_name(kc, v), (long long)v->length);
  }
  fu_mem_free(&kc->mod->alloc, seen, kc->n_ids * sizeof *seen);
  return FU_OK;
}

static fu_status emit_kernel(cu_module *m, const fu_kernel *k, fu_strbuf *out) {
  if (k->cluster > 1 && m->sm < 90) {
    /* one error for the kernel, not one per cluster instruction in it */
    cu_error(m, "kernel '@%s': cluster=%u needs thread-block clusters, which %s does not have (sm_90 or later)", k->name,
             k->cluster, m->arch ? m->arch : "the target");
    return FU_ERR_UNSUPPORTED;
  }
  cu_kernel kc;
  memset(&kc, 0, sizeof kc);
  kc.mod = m;
  kc.k = k;
  kc.out = out;
  for (int i = 0; i < 3; i++) fu_strbuf_init(&kc.ops[i], m->alloc);
  fu_strbuf_init(&kc.expr, m->alloc);
  fu_status st = cu_names_assign(&kc);
  if (st == FU_OK) st = prune(&kc, &k->body);
  if (st == FU_OK) {
    emit_signature(&kc);
    st = emit_storage(&kc);
  }
  if (st == FU_OK) {
    emit_block(&kc, &k->body);
    fu_strbuf_puts(out, "}\n");
  }
  for (int i = 0; i < 3; i++) fu_strbuf_free(&kc.ops[i]);
  fu_strbuf_free(&kc.expr);
  cu_names_free(&kc);
  if (st == FU_OK && m->failed) st = FU_ERR_UNSUPPORTED;
  return st;
}

fu_status cu_emit_module(cu_module *m, const fu_kernel *const *ks, uint32_t n, const char *arch, fu_strbuf *out) {
  if (!ks && n) return FU_ERR_INVALID_ARG;
  fu_status st = FU_OK;
  for (uint32_t i = 0; i < n; i++) {
    if (!ks[i]) return FU_ERR_INVALID_ARG;
    fu_status vs = fu_kernel_verify(ks[i], m->diag, NULL);
    if (vs != FU_OK) st = vs;
  }
  if (st != FU_OK) return st;
  for (uint32_t i = 0; i < n; i++) {
    const char *why = NULL;
    if (!cu_kernel_name_ok(ks[i]->name, &why)) {
      cu_error(m, "kernel name '@%s' %s", ks[i]->name ? ks[i]->name : "", why);
      st = FU_ERR_UNSUPPORTED;
    }
    for (uint32_t j = 0; j < i; j++)
      if (ks[i]->name && ks[j]->name && strcmp(ks[i]->name, ks[j]->name) == 0) {
        cu_error(m, "two kernels are named '@%s'", ks[i]->name);
        st = FU_ERR_INVALID_ARG;
      }
  }
  if (st != FU_OK) return st;
  const char *a = arch ? arch : FU_DEFAULT_ARCH;
  m->sm = fu_arch_sm(a);
  m->arch = a;
  fu_strbuf body;
  fu_strbuf_init(&body, m->alloc);
  for (uint32_t i = 0; i < n && st == FU_OK; i++) {
    if (i) fu_strbuf_putc(&body, '\n');
    st = emit_kernel(m, ks[i], &body);
  }
  if (st == FU_OK) {
    fu_strbuf_printf(out,
                     "// CUDA C of %u kernel%s, written by fuser from kernel IR for %s.  Compiled with\n"
                     "// --fmad=false (as fuser's NVRTC backend does), it computes what the LLVM path's PTX does.\n",
                     n, n == 1 ? "" : "s", arch ? arch : FU_DEFAULT_ARCH);
    fu_strbuf_putc(out, '\n');
    cu_prelude_write(out, m->helpers);
    fu_strbuf_append(out, body.data ? body.data : "", body.len);
    if (body.failed || out->failed) st = FU_ERR_NOMEM;
  }
  fu_strbuf_free(&body);
  return st;
}
