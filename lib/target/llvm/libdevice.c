/* fuser backend: libdevice, read lazily, and copies of just the functions a
 * module calls.
 *
 * Parsing all of libdevice (LLVMParseBitcodeInContext2) costs 30-55 ms, and
 * linking all of it into every module even more, while a kernel calls a
 * handful of its 350 functions.  So libdevice is opened with lazy
 * materialization (LLVMGetBitcodeModuleInContext2 reads the module's types,
 * globals, declarations and symbol table, about 2 ms; function bodies stay
 * in the bitcode buffer), and a function's body is read the first time a
 * kernel calls it or a function it calls (0.1-0.3 ms each).  The lazy
 * module stays in the backend context, so later compiles in the same
 * process reuse what was read.  (The option libdevice_whole parses it all
 * up front, as before, for tests and measurements.)
 *
 * The functions a kernel needs are cloned into the kernel's module
 * instruction by instruction (same LLVMContext, so types, constants and
 * metadata are shared), together with the functions and globals they use.
 * `__nvvm_reflect` queries are answered while copying (no FTZ, precise
 * sqrt, __CUDA_ARCH of the target), so the copies carry no reflect calls.
 *
 * One limit of the C API: a function body is read through an empty legacy
 * FunctionPassManager, whose read errors are fatal to the process (LLVM's
 * report_fatal_error).  A file that is not bitcode, or is cut short, fails
 * when it is opened (its symbol table is at the end), with a diagnostic; only
 * a libdevice corrupted inside a function body that a kernel uses stops the
 * process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/BitReader.h>

#include "internal.h"

/* Opens libdevice: lazily (module-level records only), or all of it with
 * libdevice_whole. */
fu_status bk_libdevice_load(fu_backend *be) {
  if (be->libdevice) return FU_OK;
  double t0 = bk_now_ms(), c0 = bk_cpu_ms();
  FILE *f = fopen(be->libdevice_path, "rb");
  if (!f) {
    bk_error(be, "libdevice not found at '%s' (set FUSER_LIBDEVICE to libdevice.10.bc of the CUDA Toolkit)",
             be->libdevice_path);
    return FU_ERR_IO;
  }
  fclose(f);
  LLVMMemoryBufferRef buf = NULL;
  char *msg = NULL;
  if (LLVMCreateMemoryBufferWithContentsOfFile(be->libdevice_path, &buf, &msg)) {
    bk_error(be, "cannot read libdevice '%s': %s", be->libdevice_path, msg ? msg : "");
    LLVMDisposeMessage(msg);
    return FU_ERR_IO;
  }
  LLVMModuleRef mod = NULL;
  bool bad;
  if (be->libdevice_whole) {
    bad = LLVMParseBitcodeInContext2(be->ctx, buf, &mod) != 0;
    LLVMDisposeMemoryBuffer(buf);
  } else {
    /* On success the lazy module owns `buf` (its function bodies are read
     * from it on demand); on failure the caller still does. */
    bad = LLVMGetBitcodeModuleInContext2(be->ctx, buf, &mod) != 0;
    if (bad) LLVMDisposeMemoryBuffer(buf);
  }
  if (bad || !mod) {
    bk_error(be, "cannot parse libdevice '%s' as LLVM bitcode", be->libdevice_path);
    if (mod) LLVMDisposeModule(mod);
    return FU_ERR_IO;
  }
  if (!be->libdevice_whole) {
    /* An empty legacy function pass manager: running it on a function
     * reads the function's body (the C API's only way to materialize one
     * function). */
    be->libdevice_reader = LLVMCreateFunctionPassManagerForModule(mod);
    if (!be->libdevice_reader) {
      bk_error(be, "cannot read libdevice '%s': no function pass manager", be->libdevice_path);
      LLVMDisposeModule(mod);
      return FU_ERR_IO;
    }
  }
  be->libdevice = mod;
  be->timing.libdevice_load_ms += bk_now_ms() - t0;
  be->libdevice_cpu_ms += bk_cpu_ms() - c0;
  return FU_OK;
}

fu_status fu_backend_load_libdevice(fu_backend *be) { return bk_libdevice_load(be); }

/* Reads the body of libdevice function `src` if it is still in the bitcode
 * buffer; the time counts as libdevice loading. */
static void materialize(fu_backend *be, LLVMValueRef src) {
  if (!be->libdevice_reader || LLVMGetFirstBasicBlock(src) || LLVMIsDeclaration(src)) return;
  double t0 = bk_now_ms(), c0 = bk_cpu_ms();
  LLVMRunFunctionPassManager(be->libdevice_reader, src);
  be->timing.libdevice_load_ms += bk_now_ms() - t0;
  be->libdevice_cpu_ms += bk_cpu_ms() - c0;
}

/* ---- a pointer map for the clone ------------------------------------------- */

typedef struct vmap {
  LLVMValueRef *keys, *vals;
  size_t cap, n;
  fu_allocator alloc;
  bool failed;
} vmap;

static size_t vhash(LLVMValueRef p, size_t cap) {
  uint64_t h = (uint64_t)(uintptr_t)p;
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 32;
  return (size_t)h & (cap - 1);
}

static LLVMValueRef vmap_get(const vmap *m, LLVMValueRef k) {
  if (!m->cap) return NULL;
  for (size_t j = vhash(k, m->cap); m->keys[j]; j = (j + 1) & (m->cap - 1))
    if (m->keys[j] == k) return m->vals[j];
  return NULL;
}

static void vmap_put(vmap *m, LLVMValueRef k, LLVMValueRef v) {
  if ((m->n + 1) * 2 > m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 256;
    LLVMValueRef *nk = fu_mem_calloc(&m->alloc, cap, sizeof *nk);
    LLVMValueRef *nv = fu_mem_calloc(&m->alloc, cap, sizeof *nv);
    if (!nk || !nv) {
      fu_mem_free(&m->alloc, nk, cap * sizeof *nk);
      fu_mem_free(&m->alloc, nv, cap * sizeof *nv);
      m->failed = true;
      return;
    }
    for (size_t i = 0; i < m->cap; i++) {
      if (!m->keys[i]) continue;
      size_t j = vhash(m->keys[i], cap);
      while (nk[j]) j = (j + 1) & (cap - 1);
      nk[j] = m->keys[i];
      nv[j] = m->vals[i];
    }
    fu_mem_free(&m->alloc, m->keys, m->cap * sizeof *m->keys);
    fu_mem_free(&m->alloc, m->vals, m->cap * sizeof *m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = cap;
  }
  size_t j = vhash(k, m->cap);
  while (m->keys[j] && m->keys[j] != k) j = (j + 1) & (m->cap - 1);
  if (!m->keys[j]) m->n++;
  m->keys[j] = k;
  m->vals[j] = v;
}

static void vmap_free(vmap *m) {
  fu_mem_free(&m->alloc, m->keys, m->cap * sizeof *m->keys);
  fu_mem_free(&m->alloc, m->vals, m->cap * sizeof *m->vals);
  memset(m, 0, sizeof *m);
}

/* ---- the copier ------------------------------------------------------------- */

typedef struct copier {
  bk_module *m;
  LLVMBuilderRef B;
  LLVMValueRef work[256]; /* source functions whose bodies are still to copy */
  unsigned n_work;
  bool failed;
} copier;

static void copy_attributes(LLVMValueRef src, LLVMValueRef dst) {
  unsigned n_params = LLVMCountParams(src);
  for (unsigned i = 0; i <= n_params + 1; i++) {
    LLVMAttributeIndex idx = i == n_params + 1 ? (LLVMAttributeIndex)LLVMAttributeFunctionIndex : i;
    LLVMAttributeRef attrs[64];
    unsigned n = LLVMGetAttributeCountAtIndex(src, idx);
    if (n == 0 || n > 64) continue;
    LLVMGetAttributesAtIndex(src, idx, attrs);
    for (unsigned j = 0; j < n; j++) LLVMAddAttributeAtIndex(dst, idx, attrs[j]);
  }
  LLVMSetFunctionCallConv(dst, LLVMGetFunctionCallConv(src));
}

/* The destination module's function of the same name, declared on first
 * sight; a libdevice definition is queued so its body follows. */
static LLVMValueRef map_function(copier *c, LLVMValueRef src) {
  size_t len = 0;
  const char *name = LLVMGetValueName2(src, &len);
  LLVMValueRef dst = LLVMGetNamedFunction(c->m->M, name);
  if (dst) return dst;
  dst = LLVMAddFunction(c->m->M, name, LLVMGlobalGetValueType(src));
  copy_attributes(src, dst);
  if (!LLVMIsDeclaration(src)) {
    if (c->n_work == sizeof c->work / sizeof c->work[0]) {
      bk_error(c->m->be, "libdevice: too many functions to copy");
      c->failed = true;
      return dst;
    }
    c->work[c->n_work++] = src;
  }
  return dst;
}

static LLVMValueRef map_global(copier *c, LLVMValueRef src) {
  size_t len = 0;
  const char *name = LLVMGetValueName2(src, &len);
  LLVMValueRef dst = LLVMGetNamedGlobal(c->m->M, name);
  if (dst) return dst;
  dst = LLVMAddGlobalInAddressSpace(c->m->M, LLVMGlobalGetValueType(src), name,
                                    LLVMGetPointerAddressSpace(LLVMTypeOf(src)));
  LLVMValueRef init = LLVMGetInitializer(src);
  if (init) LLVMSetInitializer(dst, init);
  LLVMSetGlobalConstant(dst, LLVMIsGlobalConstant(src));
  LLVMSetAlignment(dst, LLVMGetAlignment(src));
  LLVMSetUnnamedAddress(dst, LLVMGetUnnamedAddress(src));
  LLVMSetLinkage(dst, LLVMInternalLinkage);
  return dst;
}

/* Constants are shared by the context, except those that name a global of
 * the source module.  libdevice uses globals only as direct operands; a
 * constant expression over one is refused rather than miscopied. */
static bool constant_refers_to_global(LLVMValueRef v, unsigned depth) {
  if (LLVMIsAGlobalValue(v)) return true;
  if (depth > 16 || !LLVMIsAConstant(v) || LLVMIsAConstantDataSequential(v) || LLVMIsAConstantInt(v) ||
      LLVMIsAConstantFP(v))
    return false;
  int n = LLVMGetNumOperands(v);
  for (int i = 0; i < n; i++)
    if (constant_refers_to_global(LLVMGetOperand(v, (unsigned)i), depth + 1)) return true;
  return false;
}

static LLVMValueRef remap(copier *c, vmap *map, LLVMValueRef v) {
  LLVMValueRef mapped = vmap_get(map, v);
  if (mapped) return mapped;
  if (LLVMIsAFunction(v)) return map_function(c, v);
  if (LLVMIsAGlobalVariable(v)) return map_global(c, v);
  if (LLVMIsAConstant(v) && constant_refers_to_global(v, 0)) {
    bk_error(c->m->be, "libdevice: unsupported constant expression over a global");
    c->failed = true;
  }
  return v;
}

/* The answer to __nvvm_reflect("<name>") for this target. */
static LLVMValueRef reflect_value(copier *c, LLVMValueRef call) {
  LLVMValueRef arg = LLVMGetOperand(call, 0);
  for (int i = 0; i < 8 && arg && LLVMIsAConstantExpr(arg); i++) arg = LLVMGetOperand(arg, 0);
  const char *s = NULL;
  size_t len = 0;
  if (arg && LLVMIsAGlobalVariable(arg)) {
    LLVMValueRef init = LLVMGetInitializer(arg);
    if (init && LLVMIsAConstantDataSequential(init)) s = LLVMGetAsString(init, &len);
  }
  long long value = 0;
  if (s) {
    while (len && s[len - 1] == '\0') len--;
    if (len == 11 && memcmp(s, "__CUDA_ARCH", 11) == 0)
      value = c->m->sm * 10;
    else if (len == 16 && memcmp(s, "__CUDA_PREC_SQRT", 16) == 0)
      value = 1;
    /* __CUDA_FTZ and anything else: 0 */
  }
  return LLVMConstInt(c->m->t_i32, (unsigned long long)value, 0);
}

static bool is_reflect_call(LLVMValueRef inst) {
  if (!LLVMIsACallInst(inst)) return false;
  LLVMValueRef callee = LLVMGetCalledValue(inst);
  if (!callee || !LLVMIsAFunction(callee)) return false;
  size_t len = 0;
  const char *name = LLVMGetValueName2(callee, &len);
  return len == 14 && memcmp(name, "__nvvm_reflect", 14) == 0;
}

typedef struct inst_pair {
  LLVMValueRef src, dst;
} inst_pair;

/* Two passes: first every block and instruction is created (phis empty,
 * other instructions cloned with their old operands), then operands and
 * phi inputs are rewritten, which handles forward references. */
static void clone_body(copier *c, LLVMValueRef src) {
  bk_module *m = c->m;
  size_t nlen = 0;
  const char *name = LLVMGetValueName2(src, &nlen);
  LLVMValueRef dst = LLVMGetNamedFunction(m->M, name);
  if (!dst || !LLVMIsDeclaration(dst)) return;
  materialize(m->be, src);
  if (!LLVMGetFirstBasicBlock(src)) {
    bk_error(m->be, "libdevice '%s': cannot read the body of '%s'", m->be->libdevice_path, name);
    c->failed = true;
    return;
  }
  vmap map;
  memset(&map, 0, sizeof map);
  map.alloc = m->be->alloc;
  inst_pair *pairs = NULL;
  size_t n_pairs = 0, cap_pairs = 0;

  unsigned np = LLVMCountParams(src);
  for (unsigned i = 0; i < np; i++) vmap_put(&map, LLVMGetParam(src, i), LLVMGetParam(dst, i));
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(src); bb; bb = LLVMGetNextBasicBlock(bb)) {
    LLVMBasicBlockRef nb = LLVMAppendBasicBlockInContext(m->C, dst, "");
    vmap_put(&map, LLVMBasicBlockAsValue(bb), LLVMBasicBlockAsValue(nb));
  }
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(src); bb && !c->failed; bb = LLVMGetNextBasicBlock(bb)) {
    LLVMBasicBlockRef nb = LLVMValueAsBasicBlock(vmap_get(&map, LLVMBasicBlockAsValue(bb)));
    LLVMPositionBuilderAtEnd(c->B, nb);
    for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) {
      LLVMValueRef out;
      if (is_reflect_call(in)) {
        vmap_put(&map, in, reflect_value(c, in));
        continue;
      }
      if (LLVMIsAPHINode(in)) {
        out = LLVMBuildPhi(c->B, LLVMTypeOf(in), "");
      } else {
        out = LLVMInstructionClone(in);
        LLVMInsertIntoBuilderWithName(c->B, out, "");
      }
      vmap_put(&map, in, out);
      if (n_pairs == cap_pairs) {
        size_t nc = cap_pairs ? cap_pairs * 2 : 256;
        inst_pair *np2 = fu_mem_realloc(&map.alloc, pairs, cap_pairs * sizeof *pairs, nc * sizeof *pairs);
        if (!np2) {
          map.failed = true;
          break;
        }
        pairs = np2;
        cap_pairs = nc;
      }
      pairs[n_pairs].src = in;
      pairs[n_pairs].dst = out;
      n_pairs++;
    }
    if (map.failed) break;
  }
  for (size_t i = 0; i < n_pairs && !map.failed && !c->failed; i++) {
    LLVMValueRef s = pairs[i].src, d = pairs[i].dst;
    if (LLVMIsAPHINode(s)) {
      unsigned n = LLVMCountIncoming(s);
      for (unsigned j = 0; j < n; j++) {
        LLVMValueRef v = remap(c, &map, LLVMGetIncomingValue(s, j));
        LLVMValueRef bbv = vmap_get(&map, LLVMBasicBlockAsValue(LLVMGetIncomingBlock(s, j)));
        LLVMBasicBlockRef b = bbv ? LLVMValueAsBasicBlock(bbv) : NULL;
        if (!b) {
          c->failed = true;
          break;
        }
        LLVMAddIncoming(d, &v, &b, 1);
      }
      continue;
    }
    int n = LLVMGetNumOperands(d);
    for (int j = 0; j < n; j++) {
      LLVMValueRef op = LLVMGetOperand(d, (unsigned)j);
      if (!op) continue;
      LLVMValueRef r = remap(c, &map, op);
      if (r != op) LLVMSetOperand(d, (unsigned)j, r);
    }
  }
  if (map.failed) {
    bk_error(m->be, "out of memory copying libdevice function '%s'", name);
    c->failed = true;
  }
  LLVMSetLinkage(dst, LLVMInternalLinkage);
  fu_mem_free(&map.alloc, pairs, cap_pairs * sizeof *pairs);
  vmap_free(&map);
}

/* The build's libdevice subset lacks a function a kernel calls (the math
 * lowering calls one the subset's list in cmake/optional-deps.cmake does not
 * name): the subset is dropped and the whole libdevice read in its place.
 * Functions already copied into modules are copies, so nothing refers to
 * the dropped module. */
static fu_status switch_to_full_libdevice(fu_backend *be) {
  fu_warning(be->diag, fu_loc_none(),
             "libdevice subset '%s' lacks a function a kernel calls; reading all of '%s' (the subset's "
             "function list needs the name)",
             be->libdevice_path, be->libdevice_full_path);
  if (be->libdevice_reader) LLVMDisposePassManager(be->libdevice_reader);
  LLVMDisposeModule(be->libdevice);
  be->libdevice_reader = NULL;
  be->libdevice = NULL;
  fu_mem_free(&be->alloc, be->libdevice_path, strlen(be->libdevice_path) + 1);
  be->libdevice_path = be->libdevice_full_path;
  be->libdevice_full_path = NULL;
  return bk_libdevice_load(be);
}

LLVMValueRef bk_libdevice_function(bk_module *m, const char *name) {
  fu_backend *be = m->be;
  LLVMValueRef have = LLVMGetNamedFunction(m->M, name);
  if (have && !LLVMIsDeclaration(have)) return have;
  if (!be->libdevice && bk_libdevice_load(be) != FU_OK) {
    m->failed = true;
    return NULL;
  }
  LLVMValueRef src = LLVMGetNamedFunction(be->libdevice, name);
  if ((!src || LLVMIsDeclaration(src)) && be->libdevice_full_path) {
    if (switch_to_full_libdevice(be) != FU_OK) {
      m->failed = true;
      return NULL;
    }
    src = LLVMGetNamedFunction(be->libdevice, name);
  }
  if (!src || LLVMIsDeclaration(src)) {
    bk_error(be, "libdevice '%s' has no function '%s'", be->libdevice_path, name);
    m->failed = true;
    return NULL;
  }
  copier c;
  memset(&c, 0, sizeof c);
  c.m = m;
  c.B = LLVMCreateBuilderInContext(m->C);
  LLVMValueRef dst = map_function(&c, src);
  while (c.n_work && !c.failed) clone_body(&c, c.work[--c.n_work]);
  LLVMDisposeBuilder(c.B);
  if (c.failed) {
    m->failed = true;
    return NULL;
  }
  return dst;
}

/* ---- the inline budget ----------------------------------------------------
 * libdevice's functions are always-inline, which is right for the few math
 * calls of a normal kernel, but a chain of 1,000 `sin` ops then grows by
 * 1,000 copies of __nv_sinf: megabytes of PTX and tens of seconds in LLVM's
 * code generation.  So each kernel's size after inlining is estimated
 * (its own instructions plus, per call, the callee's instructions with the
 * callees it inlines in turn); past BK_INLINE_BUDGET the callees that add
 * the most are called instead, largest first, until the estimate fits.
 * Normal kernels stay far below the budget (docs/performance.md), so their
 * code does not change.
 *
 * The kernel does not call the callee itself but a device function made
 * for it (out_wrapper): `void __fuser_out<name>(arguments, ptr out)`, with
 * external linkage, which inlines the callee and stores its result to
 * `out`, a stack slot of the kernel read back after the call.  Both choices
 * keep LLVM 19's NVPTX code generation linear in the number of calls:
 *   - every call that returns a value leaves a proxy register whose
 *     erasure scans the whole calling function (calls x instructions:
 *     1.2 s of 1.5 s for 4,000 calls, 5 s for 8,000);
 *   - every call of an internal function checks whether the callee's
 *     address is taken by walking all its uses (calls x calls: 80% of the
 *     instruction selection time for 8,000 calls). */

typedef struct inline_stat {
  LLVMValueRef fn;
  uint64_t size;  /* instructions once inlined, nested callees included */
  uint64_t calls; /* call sites in the kernel */
  LLVMValueRef wrapper, slot; /* once called through its wrapper */
} inline_stat;

static bool inlined_callee(LLVMValueRef inst, unsigned always_kind, LLVMValueRef *out) {
  if (!LLVMIsACallInst(inst)) return false;
  LLVMValueRef f = LLVMGetCalledValue(inst);
  if (!f || !LLVMIsAFunction(f) || LLVMIsDeclaration(f)) return false;
  if (!LLVMGetEnumAttributeAtIndex(f, LLVMAttributeFunctionIndex, always_kind)) return false;
  *out = f;
  return true;
}

/* Instructions of `f` once its always-inline callees are inlined; the
 * libdevice call graph is a few levels deep, `depth` only guards cycles. */
static uint64_t inlined_size(LLVMValueRef f, unsigned always_kind, int depth) {
  uint64_t n = 0;
  for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(f); b; b = LLVMGetNextBasicBlock(b))
    for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i)) {
      LLVMValueRef g;
      n++;
      if (depth < 8 && inlined_callee(i, always_kind, &g) && g != f) n += inlined_size(g, always_kind, depth + 1);
    }
  return n;
}

static int by_growth(const void *a, const void *b) {
  const inline_stat *x = a, *y = b;
  uint64_t gx = x->size * (x->calls - 1), gy = y->size * (y->calls - 1);
  return gx < gy ? 1 : gx > gy ? -1 : 0;
}

enum { BK_WRAP_MAX_PARAMS = 8 };

/* The device function that calls `g` (inlined) for a kernel past the
 * budget, made once per module: see the comment above the section. */
static LLVMValueRef out_wrapper(bk_module *m, LLVMValueRef g) {
  size_t len = 0;
  const char *gname = LLVMGetValueName2(g, &len);
  char name[256];
  snprintf(name, sizeof name, "__fuser_out%.*s", (int)len, gname);
  LLVMValueRef w = LLVMGetNamedFunction(m->M, name);
  if (w) return w;
  LLVMTypeRef gt = LLVMGlobalGetValueType(g), rt = LLVMGetReturnType(gt);
  unsigned np = LLVMCountParamTypes(gt);
  bool has_out = LLVMGetTypeKind(rt) != LLVMVoidTypeKind;
  LLVMTypeRef params[BK_WRAP_MAX_PARAMS + 1];
  LLVMGetParamTypes(gt, params);
  if (has_out) params[np] = m->t_ptr0;
  LLVMTypeRef wt = LLVMFunctionType(m->t_void, params, np + has_out, 0);
  w = LLVMAddFunction(m->M, name, wt);
  bk_add_enum_attr(m, w, LLVMAttributeFunctionIndex, "noinline", 0);
  bk_add_enum_attr(m, w, LLVMAttributeFunctionIndex, "nounwind", 0);
  LLVMBuilderRef B = m->B;
  LLVMPositionBuilderAtEnd(B, LLVMAppendBasicBlockInContext(m->C, w, "entry"));
  LLVMValueRef args[BK_WRAP_MAX_PARAMS];
  for (unsigned i = 0; i < np; i++) args[i] = LLVMGetParam(w, i);
  LLVMValueRef r = LLVMBuildCall2(B, gt, g, args, np, "");
  LLVMSetInstructionCallConv(r, LLVMGetFunctionCallConv(g));
  if (has_out) LLVMBuildStore(B, r, LLVMGetParam(w, np));
  LLVMBuildRetVoid(B);
  return w;
}

/* Replaces the call `call` of st->fn in kernel `k` by a call of its
 * wrapper and a load of the result from the kernel's slot for it. */
static void call_through_wrapper(bk_module *m, LLVMValueRef k, inline_stat *st, LLVMValueRef call) {
  LLVMBuilderRef B = m->B;
  LLVMTypeRef gt = LLVMGlobalGetValueType(st->fn), rt = LLVMGetReturnType(gt);
  bool has_out = LLVMGetTypeKind(rt) != LLVMVoidTypeKind;
  if (has_out && !st->slot) {
    LLVMPositionBuilderBefore(B, LLVMGetFirstInstruction(LLVMGetEntryBasicBlock(k)));
    st->slot = LLVMBuildAlloca(B, rt, "");
  }
  unsigned na = (unsigned)LLVMGetNumArgOperands(call);
  LLVMValueRef args[BK_WRAP_MAX_PARAMS + 1];
  for (unsigned i = 0; i < na; i++) args[i] = LLVMGetOperand(call, i);
  if (has_out) args[na] = st->slot;
  LLVMPositionBuilderBefore(B, call);
  LLVMBuildCall2(B, LLVMGlobalGetValueType(st->wrapper), st->wrapper, args, na + has_out, "");
  if (has_out) LLVMReplaceAllUsesWith(call, LLVMBuildLoad2(B, rt, st->slot, ""));
  LLVMInstructionEraseFromParent(call);
}

/* Applies the budget to one kernel; false when memory runs out. */
static bool limit_kernel(bk_module *m, LLVMValueRef k, unsigned always_kind) {
  fu_allocator al = m->be->alloc;
  inline_stat *st = NULL;
  size_t n = 0, cap = 0;
  uint64_t total = 0;
  for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(k); b; b = LLVMGetNextBasicBlock(b))
    for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i)) {
      LLVMValueRef g;
      total++;
      if (!inlined_callee(i, always_kind, &g)) continue;
      size_t j = 0;
      while (j < n && st[j].fn != g) j++;
      if (j == n) {
        if (n == cap) {
          size_t nc = cap ? cap * 2 : 16;
          inline_stat *ns = fu_mem_realloc(&al, st, cap * sizeof *st, nc * sizeof *st);
          if (!ns) {
            fu_mem_free(&al, st, cap * sizeof *st);
            return false;
          }
          st = ns;
          cap = nc;
        }
        st[n++] = (inline_stat){g, inlined_size(g, always_kind, 0), 0, NULL, NULL};
      }
      st[j].calls++;
      total += st[j].size;
    }
  if (total > BK_INLINE_BUDGET) {
    qsort(st, n, sizeof *st, by_growth);
    size_t n_called = 0;
    for (size_t j = 0; j < n && total > BK_INLINE_BUDGET && st[j].calls > 1; j++) {
      if (LLVMCountParams(st[j].fn) > BK_WRAP_MAX_PARAMS) continue;
      st[j].wrapper = out_wrapper(m, st[j].fn);
      total -= st[j].size * (st[j].calls - 1);
      n_called = j + 1;
    }
    for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(k); b && n_called; b = LLVMGetNextBasicBlock(b))
      for (LLVMValueRef i = LLVMGetFirstInstruction(b), next; i; i = next) {
        next = LLVMGetNextInstruction(i);
        LLVMValueRef g;
        if (!inlined_callee(i, always_kind, &g)) continue;
        for (size_t j = 0; j < n_called; j++)
          if (st[j].fn == g && st[j].wrapper) {
            call_through_wrapper(m, k, &st[j], i);
            break;
          }
      }
  }
  fu_mem_free(&al, st, cap * sizeof *st);
  return true;
}

fu_status bk_limit_inlining(bk_module *m) {
  unsigned always_kind = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
  for (LLVMValueRef f = LLVMGetFirstFunction(m->M); f; f = LLVMGetNextFunction(f))
    if (LLVMGetFunctionCallConv(f) == LLVMPTXKernelCallConv && !LLVMIsDeclaration(f) &&
        !limit_kernel(m, f, always_kind)) {
      bk_error(m->be, "out of memory estimating the inlined size of a kernel");
      return FU_ERR_NOMEM;
    }
  return FU_OK;
}
