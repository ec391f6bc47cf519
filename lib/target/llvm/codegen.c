/* fuser backend: one kernel of kernel IR -> one LLVM function.
 *
 * Instructions map one to one: SSA locals to LLVM values, FOR to a real
 * loop (or straight-line copies when it is an `unroll` loop with a constant
 * trip count), IF to branches, MUTABLE to an entry-block alloca that mem2reg
 * promotes, shared arrays to addrspace(3) globals, local arrays to allocas.
 * Tensor parameters are `ptr addrspace(1)` with noalias/readonly/align as
 * the kernel IR states, which is what lets NVPTX use ld.global.nc and the
 * 16-byte vector forms. */
#include <stdio.h>
#include <string.h>

#include <llvm-c/DebugInfo.h>

#include "internal.h"

static bool valid_ptx_name(const char *s) {
  if (!s || !*s) return false;
  if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_' || s[0] == '$')) return false;
  for (const char *p = s + 1; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '$'))
      return false;
  return true;
}

/* Scalar parameters travel in their memory form: bool as i8, f16/bf16 as
 * 16-bit integers (the runtime copies the raw bytes). */
static LLVMTypeRef param_type(bk_module *m, const fu_kval *p) {
  if (p->kind == FU_KV_TENSOR_PARAM) return m->t_ptr1;
  if (p->dtype == FU_DT_BOOL) return m->t_i8;
  if (p->dtype == FU_DT_F16 || p->dtype == FU_DT_BF16) return m->t_i16;
  return bk_reg_type(m, p->dtype);
}

/* Whether the target has thread-block clusters; if not, an error naming
 * the kernel, what needs them (`what`, e.g. "'sync cluster'") and the
 * target, and the module fails: PTX for an older target would not
 * assemble (or, for %cluster_ctarank, would not mean anything). */
static bool clusters_ok(bk_kernel *kc, const char *what) {
  bk_module *m = kc->mod;
  if (m->sm >= 90) return true;
  bk_error(m->be, "kernel '@%s': %s needs thread-block clusters, which %s does not have (sm_90 or later)", kc->k->name,
           what, m->arch);
  m->failed = true;
  return false;
}

/* A return range [0, extent) on a thread index read (--enable=tid_range).
 * fuser's runtime launches every kernel with exactly its block
 * (lib/runtime/plan.c), so tid.x < block.x; PTX from --emit=ptx must be
 * launched the same way.  `.maxntid` bounds only the product of the
 * dims, and so does LLVM 19's nvvm-intr-range: in a 64 x 4 block it
 * gives tid.x < 256, which leaves guards such as `tid.x + 64 < 168` (a
 * row's second whole vector) unproven; the layer norm of rows of 1344 at
 * 4 rows a block guarded every vector, in 11 branches, where one row a
 * block has 5.  A range attribute (not !range metadata, which the pass
 * would keep as it is, changing the PTX of one-dim blocks too) is
 * intersected with the pass's own. */
static void tid_range(bk_kernel *kc, LLVMValueRef call, uint32_t extent) {
  bk_module *m = kc->mod;
  if (extent == 0) return;
  uint64_t lo = 0, hi = extent;
  unsigned kind = LLVMGetEnumAttributeKindForName("range", 5);
  LLVMAddCallSiteAttribute(call, LLVMAttributeReturnIndex, LLVMCreateConstantRangeAttribute(m->C, kind, 32, &lo, &hi));
}

static LLVMValueRef sreg(bk_kernel *kc, fu_special sp) {
  static const char *const names[] = {
      "llvm.nvvm.read.ptx.sreg.tid.x",    "llvm.nvvm.read.ptx.sreg.tid.y",    "llvm.nvvm.read.ptx.sreg.tid.z",
      "llvm.nvvm.read.ptx.sreg.ctaid.x",  "llvm.nvvm.read.ptx.sreg.ctaid.y",  "llvm.nvvm.read.ptx.sreg.ctaid.z",
      "llvm.nvvm.read.ptx.sreg.ntid.x",   "llvm.nvvm.read.ptx.sreg.ntid.y",   "llvm.nvvm.read.ptx.sreg.ntid.z",
      "llvm.nvvm.read.ptx.sreg.nctaid.x", "llvm.nvvm.read.ptx.sreg.nctaid.y", "llvm.nvvm.read.ptx.sreg.nctaid.z",
      "llvm.nvvm.read.ptx.sreg.cluster.ctarank",
  };
  _Static_assert(sizeof names / sizeof names[0] == FU_SP_CLUSTER_RANK + 1, "one intrinsic per special register");
  if ((unsigned)sp >= sizeof names / sizeof names[0]) {
    bk_error(kc->mod->be, "kernel '@%s': special register %d is not supported by the llvm backend", kc->k->name,
             (int)sp);
    kc->mod->failed = true;
    return NULL;
  }
  /* 0 in a kernel launched without clusters, as the kernel IR says */
  if (sp == FU_SP_CLUSTER_RANK && !clusters_ok(kc, "'special cluster_rank'")) return NULL;
  LLVMValueRef v = bk_call_intrinsic(kc->mod, names[sp], NULL, 0, NULL, 0);
  if (v && kc->mod->be->tid_range && sp <= FU_SP_TID_Z) tid_range(kc, v, kc->k->block[sp - FU_SP_TID_X]);
  return v;
}

/* ---- memory ----------------------------------------------------------------- */

static LLVMValueRef element_ptr(bk_kernel *kc, const fu_kval *mem, const fu_kval *index) {
  bk_module *m = kc->mod;
  LLVMValueRef idx = kc->vals[index->id];
  return LLVMBuildInBoundsGEP2(m->B, bk_mem_type(m, mem->dtype), kc->vals[mem->id], &idx, 1, "");
}

static unsigned access_align(const fu_kval *mem, uint32_t width) {
  return (unsigned)(width * fu_dtype_size(mem->dtype));
}

/* A load of `ty` (bytes in all: 1, 2, 4, 8 or 16) from a `stream`
 * parameter: ld.global.cs.nc, which NVPTX has no intrinsic for, as inline
 * assembly, its 32-bit (or narrower) registers put back together as `ty`.
 * NULL for another size.  The assembly is marked as having side effects:
 * LLVM takes assembly without them for a pure function of its operands and
 * may hoist it out of the branch that guards it, so a row past the end was
 * read (compute-sanitizer's memcheck on an outer reduction's guarded tail,
 * lit/emit/stream.test). */
static LLVMValueRef stream_load(bk_kernel *kc, LLVMTypeRef ty, LLVMValueRef ptr, unsigned bytes) {
  bk_module *m = kc->mod;
  unsigned regs = bytes >= 4 ? bytes / 4 : 1;
  if (bytes > 16 || (bytes & (bytes - 1)) || !bytes) return NULL;
  LLVMTypeRef rt = bytes >= 4 ? m->t_i32 : m->t_i16;
  LLVMTypeRef parts[4] = {rt, rt, rt, rt};
  LLVMTypeRef res = regs == 1 ? rt : LLVMStructTypeInContext(m->C, parts, regs, 0);
  LLVMTypeRef i64 = m->t_i64;
  LLVMTypeRef fty = LLVMFunctionType(res, &i64, 1, 0);
  static const char *const text[] = {"ld.global.cs.nc.u8 $0, [$1];", "ld.global.cs.nc.u16 $0, [$1];",
                                     "ld.global.cs.nc.u32 $0, [$1];", "ld.global.cs.nc.v2.u32 {$0, $1}, [$2];",
                                     "ld.global.cs.nc.v4.u32 {$0, $1, $2, $3}, [$4];"};
  static const char *const cons[] = {"=h,l", "=h,l", "=r,l", "=r,=r,l", "=r,=r,=r,=r,l"};
  unsigned k = 0; /* log2(bytes) */
  while ((1u << k) < bytes) k++;
  LLVMValueRef fn = LLVMGetInlineAsm(fty, (char *)text[k], strlen(text[k]), (char *)cons[k], strlen(cons[k]), 1, 0,
                                     LLVMInlineAsmDialectATT, 0);
  LLVMValueRef addr = LLVMBuildPtrToInt(m->B, ptr, i64, "");
  LLVMValueRef r = LLVMBuildCall2(m->B, fty, fn, &addr, 1, "");
  if (bytes < 4) {
    LLVMValueRef narrow = bytes == 1 ? LLVMBuildTrunc(m->B, r, m->t_i8, "") : r;
    return LLVMBuildBitCast(m->B, narrow, ty, "");
  }
  LLVMValueRef v = r;
  if (regs > 1) {
    v = LLVMGetPoison(LLVMVectorType(m->t_i32, regs));
    for (unsigned i = 0; i < regs; i++)
      v = LLVMBuildInsertElement(m->B, v, LLVMBuildExtractValue(m->B, r, i, ""), LLVMConstInt(m->t_i32, i, 0), "");
  }
  return LLVMBuildBitCast(m->B, v, ty, "");
}

static void emit_load(bk_kernel *kc, const fu_kinst *in) {
  bk_module *m = kc->mod;
  const fu_kval *mem = in->args[0];
  uint32_t w = in->u.mem.width;
  LLVMTypeRef et = bk_mem_type(m, mem->dtype);
  LLVMTypeRef ty = w == 1 ? et : LLVMVectorType(et, w);
  LLVMValueRef ptr = element_ptr(kc, mem, in->args[1]), ld = NULL;
  if (mem->kind == FU_KV_TENSOR_PARAM && mem->stream) ld = stream_load(kc, ty, ptr, access_align(mem, w));
  if (!ld) {
    ld = LLVMBuildLoad2(m->B, ty, ptr, "");
    LLVMSetAlignment(ld, access_align(mem, w));
    if (mem->kind == FU_KV_TENSOR_PARAM && mem->readonly)
      LLVMSetMetadata(ld, kc->invariant_kind, LLVMMetadataAsValue(m->C, kc->invariant_md));
  }
  for (uint32_t i = 0; i < w; i++) {
    LLVMValueRef e = w == 1 ? ld : LLVMBuildExtractElement(m->B, ld, LLVMConstInt(m->t_i32, i, 0), "");
    if (mem->dtype == FU_DT_BOOL) e = LLVMBuildICmp(m->B, LLVMIntNE, e, LLVMConstNull(m->t_i8), "");
    kc->vals[in->results[i]->id] = bk_convert(m, e, mem->dtype, in->results[i]->dtype);
  }
}

static void emit_store(bk_kernel *kc, const fu_kinst *in) {
  bk_module *m = kc->mod;
  const fu_kval *mem = in->args[0];
  uint32_t w = in->u.mem.width;
  LLVMTypeRef et = bk_mem_type(m, mem->dtype);
  LLVMValueRef v = w == 1 ? NULL : LLVMGetPoison(LLVMVectorType(et, w));
  for (uint32_t i = 0; i < w; i++) {
    const fu_kval *x = in->args[2 + i];
    LLVMValueRef e = bk_convert(m, kc->vals[x->id], x->dtype, mem->dtype);
    if (mem->dtype == FU_DT_BOOL) e = LLVMBuildZExt(m->B, e, m->t_i8, "");
    v = w == 1 ? e : LLVMBuildInsertElement(m->B, v, e, LLVMConstInt(m->t_i32, i, 0), "");
  }
  LLVMValueRef st = LLVMBuildStore(m->B, v, element_ptr(kc, mem, in->args[1]));
  LLVMSetAlignment(st, access_align(mem, w));
}

/* ---- optimization barriers ----------------------------------------------------- */

/* `asm sideeffect "", "=R,0"(v)`: v unchanged, as a value LLVM cannot see
 * through.  The side effect keeps two of them on one value apart (LLVM and
 * MachineCSE merge neither); the memory they touch is only the
 * inaccessible kind, so loads and stores still move across them. */
static LLVMValueRef opaque_word(bk_module *m, LLVMValueRef v, const char *cons) {
  LLVMTypeRef t = LLVMTypeOf(v);
  LLVMTypeRef fty = LLVMFunctionType(t, &t, 1, 0);
  LLVMValueRef fn = LLVMGetInlineAsm(fty, "", 0, (char *)cons, strlen(cons), 1, 0, LLVMInlineAsmDialectATT, 0);
  LLVMValueRef call = LLVMBuildCall2(m->B, fty, fn, &v, 1, "");
  unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);
  LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(m->C, nounwind, 0));
  /* memory(inaccessiblemem: readwrite): ModRef (3) at location 1 */
  unsigned mem = LLVMGetEnumAttributeKindForName("memory", 6);
  LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(m->C, mem, 3u << 2));
  return call;
}

/* `opaque`: each value through opaque_word, 16-bit floats two to a 32-bit
 * word (a kept bf16 vector stays 4 registers in ptxas, not 8), 32- and
 * 64-bit values as integers of their size; bool passes as it is. */
static void emit_opaque(bk_kernel *kc, const fu_kinst *in) {
  bk_module *m = kc->mod;
  LLVMBuilderRef B = m->B;
  fu_dtype dt = in->args[0]->dtype;
  size_t size = fu_dtype_size(dt);
  for (uint32_t i = 0; i < in->n_args; i++) {
    LLVMValueRef v = kc->vals[in->args[i]->id];
    LLVMTypeRef t = LLVMTypeOf(v);
    if (dt == FU_DT_BOOL) {
      kc->vals[in->results[i]->id] = v;
    } else if (size == 2 && i + 1 < in->n_args) {
      LLVMTypeRef pair = LLVMVectorType(t, 2);
      LLVMValueRef zero = LLVMConstInt(m->t_i32, 0, 0), one = LLVMConstInt(m->t_i32, 1, 0);
      LLVMValueRef p = LLVMBuildInsertElement(B, LLVMGetPoison(pair), v, zero, "");
      p = LLVMBuildInsertElement(B, p, kc->vals[in->args[i + 1]->id], one, "");
      p = LLVMBuildBitCast(B, opaque_word(m, LLVMBuildBitCast(B, p, m->t_i32, ""), "=r,0"), pair, "");
      kc->vals[in->results[i]->id] = LLVMBuildExtractElement(B, p, zero, "");
      kc->vals[in->results[i + 1]->id] = LLVMBuildExtractElement(B, p, one, "");
      i++;
    } else {
      LLVMTypeRef it = size == 2 ? m->t_i16 : size == 4 ? m->t_i32 : m->t_i64;
      const char *cons = size == 2 ? "=h,0" : size == 4 ? "=r,0" : "=l,0";
      kc->vals[in->results[i]->id] = LLVMBuildBitCast(B, opaque_word(m, LLVMBuildBitCast(B, v, it, ""), cons), t, "");
    }
  }
}

/* ---- thread-block clusters (sm_90) ------------------------------------------- */

/* `sync cluster`: barrier.cluster.arrive then barrier.cluster.wait, whose
 * default semantics are .release and .acquire (PTX ISA, barrier.cluster):
 * what a block stored to shared memory before the barrier is visible to
 * every block of the cluster after it.  The .aligned forms: every thread
 * reaches a `sync` uniformly (docs/ir.md).  Both intrinsics may read and
 * write any memory, so LLVM moves no load or store across them. */
static void emit_cluster_sync(bk_kernel *kc) {
  if (!clusters_ok(kc, "'sync cluster'")) return;
  bk_call_intrinsic(kc->mod, "llvm.nvvm.barrier.cluster.arrive.aligned", NULL, 0, NULL, 0);
  bk_call_intrinsic(kc->mod, "llvm.nvvm.barrier.cluster.wait.aligned", NULL, 0, NULL, 0);
}

/* `load %arr[%i] cta %r`: element i of shared array arr in the block of
 * cluster rank r.  The shared address is made generic, mapped into block
 * r's window with mapa, and read with a generic load.  Not the
 * shared::cluster form: LLVM 19 has llvm.nvvm.mapa.shared.cluster, but its
 * result is a `ptr addrspace(3)`, which NVPTX would read with ld.shared
 * (the own block's window, .shared::cta), not ld.shared::cluster. */
static void emit_load_cta(bk_kernel *kc, const fu_kinst *in) {
  bk_module *m = kc->mod;
  const fu_kval *mem = in->args[0];
  if (!clusters_ok(kc, "a load from another block's shared memory ('load ... cta')")) return;
  LLVMValueRef gen = LLVMBuildAddrSpaceCast(m->B, element_ptr(kc, mem, in->args[1]), m->t_ptr0, "");
  LLVMValueRef args[2] = {gen, kc->vals[in->args[2]->id]};
  LLVMValueRef remote = bk_call_intrinsic(m, "llvm.nvvm.mapa", NULL, 0, args, 2);
  if (!remote) return;
  LLVMValueRef e = LLVMBuildLoad2(m->B, bk_mem_type(m, mem->dtype), remote, "");
  LLVMSetAlignment(e, access_align(mem, 1));
  if (mem->dtype == FU_DT_BOOL) e = LLVMBuildICmp(m->B, LLVMIntNE, e, LLVMConstNull(m->t_i8), "");
  kc->vals[in->results[0]->id] = bk_convert(m, e, mem->dtype, in->results[0]->dtype);
}

/* shfl.sync.bfly over all 32 lanes; 64-bit values go as two halves and
 * narrow ones widened to 32 bits. */
static LLVMValueRef shfl32(bk_kernel *kc, LLVMValueRef v, uint32_t lane_mask, bool is_float) {
  bk_module *m = kc->mod;
  LLVMValueRef args[4] = {LLVMConstInt(m->t_i32, 0xffffffffu, 0), v, LLVMConstInt(m->t_i32, lane_mask, 0),
                          LLVMConstInt(m->t_i32, 0x1f, 0)};
  return bk_call_intrinsic(m, is_float ? "llvm.nvvm.shfl.sync.bfly.f32" : "llvm.nvvm.shfl.sync.bfly.i32", NULL, 0,
                           args, 4);
}

static LLVMValueRef emit_shfl(bk_kernel *kc, const fu_kval *x, uint32_t mask) {
  bk_module *m = kc->mod;
  LLVMBuilderRef B = m->B;
  LLVMValueRef v = kc->vals[x->id];
  switch (x->dtype) {
  case FU_DT_F32: return shfl32(kc, v, mask, true);
  case FU_DT_I32: return shfl32(kc, v, mask, false);
  case FU_DT_F64:
  case FU_DT_I64: {
    LLVMValueRef bits = x->dtype == FU_DT_F64 ? LLVMBuildBitCast(B, v, m->t_i64, "") : v;
    LLVMValueRef lo = LLVMBuildTrunc(B, bits, m->t_i32, "");
    LLVMValueRef hi = LLVMBuildTrunc(B, LLVMBuildLShr(B, bits, LLVMConstInt(m->t_i64, 32, 0), ""), m->t_i32, "");
    LLVMValueRef slo = shfl32(kc, lo, mask, false);
    LLVMValueRef shi = shfl32(kc, hi, mask, false);
    if (!slo || !shi) return NULL;
    LLVMValueRef wlo = LLVMBuildZExt(B, slo, m->t_i64, "");
    LLVMValueRef whi = LLVMBuildShl(B, LLVMBuildZExt(B, shi, m->t_i64, ""), LLVMConstInt(m->t_i64, 32, 0), "");
    LLVMValueRef r = LLVMBuildOr(B, wlo, whi, "");
    return x->dtype == FU_DT_F64 ? LLVMBuildBitCast(B, r, m->t_f64, "") : r;
  }
  case FU_DT_F16:
  case FU_DT_BF16: {
    LLVMValueRef w = LLVMBuildZExt(B, LLVMBuildBitCast(B, v, m->t_i16, ""), m->t_i32, "");
    LLVMValueRef s = shfl32(kc, w, mask, false);
    if (!s) return NULL;
    return LLVMBuildBitCast(B, LLVMBuildTrunc(B, s, m->t_i16, ""), bk_reg_type(m, x->dtype), "");
  }
  case FU_DT_BOOL: {
    LLVMValueRef s = shfl32(kc, LLVMBuildZExt(B, v, m->t_i32, ""), mask, false);
    return s ? LLVMBuildTrunc(B, s, m->t_i1, "") : NULL;
  }
  default: return NULL;
  }
}

/* ---- structured control flow ----------------------------------------------------- */

static void emit_block(bk_kernel *kc, const fu_kblock *b);

static LLVMMetadataRef loop_metadata(bk_kernel *kc, const char *hint) {
  LLVMContextRef C = kc->mod->C;
  LLVMMetadataRef temp = LLVMTemporaryMDNode(C, NULL, 0);
  LLVMMetadataRef str = LLVMMDStringInContext2(C, hint, strlen(hint));
  LLVMMetadataRef opt = LLVMMDNodeInContext2(C, &str, 1);
  LLVMMetadataRef ops[2] = {temp, opt};
  LLVMMetadataRef loop = LLVMMDNodeInContext2(C, ops, 2);
  LLVMMetadataReplaceAllUsesWith(temp, loop); /* the loop id refers to itself */
  return loop;
}

/* `unroll` loops with constant bounds are copied out here, so the result
 * does not depend on LLVM's unroll heuristics; other loops are real loops
 * (header with the induction phi, body, latch). */
static void emit_for(bk_kernel *kc, const fu_kinst *in) {
  bk_module *m = kc->mod;
  LLVMBuilderRef B = m->B;
  const fu_kval *ivk = in->results[0];
  LLVMValueRef start = kc->vals[in->args[0]->id], end = kc->vals[in->args[1]->id], step = kc->vals[in->args[2]->id];
  LLVMTypeRef T = bk_reg_type(m, ivk->dtype);
  if (in->u.loop.kind == FU_LOOP_UNROLL && LLVMIsAConstantInt(start) && LLVMIsAConstantInt(end) &&
      LLVMIsAConstantInt(step)) {
    long long s = LLVMConstIntGetSExtValue(start), e = LLVMConstIntGetSExtValue(end),
              st = LLVMConstIntGetSExtValue(step);
    if (st > 0) {
      long long trips = e > s ? (e - s + st - 1) / st : 0;
      if (trips <= (long long)m->be->max_self_unroll) {
        for (long long t = 0; t < trips && !m->failed; t++) {
          kc->vals[ivk->id] = LLVMConstInt(T, (unsigned long long)(s + t * st), 1);
          emit_block(kc, &in->u.loop.body);
        }
        return;
      }
    }
  }
  /* Blocks are attached as they are filled, so the function reads top-down. */
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(B);
  LLVMBasicBlockRef header = LLVMAppendBasicBlockInContext(m->C, kc->fn, "loop");
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(m->C, kc->fn, "body");
  LLVMBasicBlockRef latch = LLVMCreateBasicBlockInContext(m->C, "latch");
  LLVMBasicBlockRef exit = LLVMCreateBasicBlockInContext(m->C, "exit");
  LLVMBuildBr(B, header);
  LLVMPositionBuilderAtEnd(B, header);
  LLVMValueRef iv = LLVMBuildPhi(B, T, ivk->name ? ivk->name : "");
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, iv, end, ""), body, exit);
  LLVMPositionBuilderAtEnd(B, body);
  kc->vals[ivk->id] = iv;
  emit_block(kc, &in->u.loop.body);
  LLVMBuildBr(B, latch);
  LLVMAppendExistingBasicBlock(kc->fn, latch);
  LLVMPositionBuilderAtEnd(B, latch);
  /* nsw: `iv + step` never passes the int range (end + step fits) */
  LLVMValueRef next = LLVMBuildNSWAdd(B, iv, step, "");
  LLVMValueRef back = LLVMBuildBr(B, header);
  if (in->u.loop.kind == FU_LOOP_UNROLL)
    LLVMSetMetadata(back, kc->loop_kind,
                    LLVMMetadataAsValue(m->C, loop_metadata(kc, LLVMIsAConstantInt(end) && LLVMIsAConstantInt(start)
                                                                    ? "llvm.loop.unroll.full"
                                                                    : "llvm.loop.unroll.enable")));
  else if (in->u.loop.kind == FU_LOOP_ROLLED)
    LLVMSetMetadata(back, kc->loop_kind, LLVMMetadataAsValue(m->C, loop_metadata(kc, "llvm.loop.unroll.disable")));
  LLVMValueRef inv[2] = {start, next};
  LLVMBasicBlockRef inb[2] = {pre, latch};
  LLVMAddIncoming(iv, inv, inb, 2);
  LLVMAppendExistingBasicBlock(kc->fn, exit);
  LLVMPositionBuilderAtEnd(B, exit);
}

static void emit_if(bk_kernel *kc, const fu_kinst *in) {
  bk_module *m = kc->mod;
  LLVMBuilderRef B = m->B;
  bool has_else = in->u.branch.else_body.first != NULL;
  LLVMBasicBlockRef then_bb = LLVMAppendBasicBlockInContext(m->C, kc->fn, "then");
  LLVMBasicBlockRef else_bb = has_else ? LLVMCreateBasicBlockInContext(m->C, "else") : NULL;
  LLVMBasicBlockRef merge = LLVMCreateBasicBlockInContext(m->C, "endif");
  LLVMBuildCondBr(B, kc->vals[in->args[0]->id], then_bb, has_else ? else_bb : merge);
  LLVMPositionBuilderAtEnd(B, then_bb);
  emit_block(kc, &in->u.branch.then_body);
  LLVMBuildBr(B, merge);
  if (has_else) {
    LLVMAppendExistingBasicBlock(kc->fn, else_bb);
    LLVMPositionBuilderAtEnd(B, else_bb);
    emit_block(kc, &in->u.branch.else_body);
    LLVMBuildBr(B, merge);
  }
  LLVMAppendExistingBasicBlock(kc->fn, merge);
  LLVMPositionBuilderAtEnd(B, merge);
}

static void emit_inst(bk_kernel *kc, const fu_kinst *in) {
  bk_module *m = kc->mod;
  LLVMBuilderRef B = m->B;
  switch (in->kind) {
  case FU_KI_CONST: {
    const fu_kval *r = in->results[0];
    LLVMTypeRef t = bk_reg_type(m, r->dtype);
    if (fu_dtype_is_float(r->dtype))
      kc->vals[r->id] = LLVMConstReal(t, in->u.constant.f);
    else if (r->dtype == FU_DT_BOOL)
      kc->vals[r->id] = LLVMConstInt(t, in->u.constant.b ? 1 : 0, 0);
    else
      kc->vals[r->id] = LLVMConstInt(t, (unsigned long long)in->u.constant.i, 1);
    return;
  }
  case FU_KI_MATH: {
    fu_dtype at[8];
    LLVMValueRef av[8];
    uint32_t n = in->n_args < 8 ? in->n_args : 8;
    for (uint32_t i = 0; i < n; i++) {
      at[i] = in->args[i]->dtype;
      av[i] = kc->vals[in->args[i]->id];
    }
    kc->vals[in->results[0]->id] = bk_math(m, in->u.math, in->results[0]->dtype, at, av, n);
    return;
  }
  case FU_KI_SPECIAL: {
    LLVMValueRef v = sreg(kc, in->u.special);
    if (v && in->results[0]->dtype == FU_DT_I64) v = LLVMBuildZExt(B, v, m->t_i64, "");
    kc->vals[in->results[0]->id] = v;
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
    kc->vals[in->results[0]->id] =
        LLVMBuildLoad2(B, bk_reg_type(m, in->args[0]->dtype), kc->vals[in->args[0]->id], "");
    return;
  case FU_KI_ASSIGN: LLVMBuildStore(B, kc->vals[in->args[1]->id], kc->vals[in->args[0]->id]); return;
  case FU_KI_SHFL_XOR: kc->vals[in->results[0]->id] = emit_shfl(kc, in->args[0], in->u.shfl_mask); return;
  case FU_KI_SYNC:
    if (in->u.cluster_sync)
      emit_cluster_sync(kc);
    else
      bk_call_intrinsic(m, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
    return;
  case FU_KI_FENCE:
    bk_call_intrinsic(m, in->u.fence == FU_FENCE_GPU ? "llvm.nvvm.membar.gl" : "llvm.nvvm.membar.cta", NULL, 0, NULL,
                      0);
    return;
  case FU_KI_MISALIGN: {
    /* (address / element size) & (modulus - 1): the parameter's align
     * attribute must not claim more than the element, or this folds */
    unsigned es = (unsigned)fu_dtype_size(in->args[0]->dtype), sh = 0;
    while ((1u << sh) < es) sh++;
    LLVMValueRef a = LLVMBuildPtrToInt(B, kc->vals[in->args[0]->id], m->t_i64, "");
    if (sh) a = LLVMBuildLShr(B, a, LLVMConstInt(m->t_i64, sh, 0), "");
    a = LLVMBuildAnd(B, a, LLVMConstInt(m->t_i64, in->u.misalign - 1, 0), "");
    if (in->results[0]->dtype != FU_DT_I64) a = LLVMBuildTrunc(B, a, m->t_i32, "");
    kc->vals[in->results[0]->id] = a;
    return;
  }
  case FU_KI_ATOM_ADD:
    /* relaxed at system scope: NVPTX emits atom.global.add; ordering comes from `fence` */
    kc->vals[in->results[0]->id] = LLVMBuildAtomicRMW(B, LLVMAtomicRMWBinOpAdd, element_ptr(kc, in->args[0], in->args[1]),
                                                      kc->vals[in->args[2]->id], LLVMAtomicOrderingMonotonic, 0);
    return;
  case FU_KI_OPAQUE: emit_opaque(kc, in); return;
  case FU_KI_FOR: emit_for(kc, in); return;
  case FU_KI_IF: emit_if(kc, in); return;
  }
}

static void emit_block(bk_kernel *kc, const fu_kblock *b) {
  for (const fu_kinst *in = b->first; in && !kc->mod->failed; in = in->next) emit_inst(kc, in);
}

/* ---- storage of mutables and arrays ---------------------------------------------- */

/* Byte `offset` of the launch's dynamic shared memory: one external
 * zero-length shared array per module (`.extern .shared .b8 []` in PTX),
 * which every kernel's dynamic arrays index; the launch gives its size. */
static LLVMValueRef dynamic_smem(bk_module *m, uint32_t offset) {
  static const char name[] = "__fu_dynamic_smem"; /* kernels may not start with "__" */
  LLVMValueRef g = LLVMGetNamedGlobal(m->M, name);
  if (!g) {
    g = LLVMAddGlobalInAddressSpace(m->M, LLVMArrayType2(m->t_i8, 0), name, 3);
    LLVMSetLinkage(g, LLVMExternalLinkage);
    LLVMSetAlignment(g, 16);
  }
  LLVMValueRef off = LLVMConstInt(m->t_i64, offset, 0);
  return LLVMConstInBoundsGEP2(m->t_i8, g, &off, 1);
}

static void alloc_storage(bk_kernel *kc, const fu_kblock *b) {
  bk_module *m = kc->mod;
  for (const fu_kinst *in = b->first; in; in = in->next) {
    for (uint32_t i = 0; i < in->n_args; i++) {
      const fu_kval *v = in->args[i];
      if (kc->vals[v->id] || (v->kind != FU_KV_MUTABLE && v->kind != FU_KV_ARRAY)) continue;
      if (v->kind == FU_KV_MUTABLE) {
        kc->vals[v->id] = LLVMBuildAlloca(m->B, bk_reg_type(m, v->dtype), v->name ? v->name : "");
        continue;
      }
      LLVMTypeRef at = LLVMArrayType2(bk_mem_type(m, v->dtype), (uint64_t)v->length);
      if (v->dynamic) {
        kc->vals[v->id] = dynamic_smem(m, v->offset);
      } else if (v->space == FU_MEM_SHARED) {
        char name[160];
        snprintf(name, sizeof name, "%.70s.%.70s", kc->k->name, v->name ? v->name : "smem");
        LLVMValueRef g = LLVMAddGlobalInAddressSpace(m->M, at, name, 3);
        LLVMSetInitializer(g, LLVMGetUndef(at));
        LLVMSetLinkage(g, LLVMInternalLinkage);
        LLVMSetAlignment(g, 16);
        kc->vals[v->id] = g;
      } else {
        LLVMValueRef a = LLVMBuildAlloca(m->B, at, v->name ? v->name : "");
        LLVMSetAlignment(a, 16);
        kc->vals[v->id] = a;
      }
    }
    if (in->kind == FU_KI_FOR) alloc_storage(kc, &in->u.loop.body);
    if (in->kind == FU_KI_IF) {
      alloc_storage(kc, &in->u.branch.then_body);
      alloc_storage(kc, &in->u.branch.else_body);
    }
  }
}

static void annotate(bk_module *m, LLVMValueRef fn, const char *key, unsigned value) {
  LLVMValueRef ops[3] = {fn, LLVMMDStringInContext(m->C, key, (unsigned)strlen(key)),
                         LLVMConstInt(m->t_i32, value, 0)};
  LLVMAddNamedMetadataOperand(m->M, "nvvm.annotations", LLVMMDNodeInContext(m->C, ops, 3));
}

fu_status bk_emit_kernel(bk_module *m, const fu_kernel *k) {
  if (!valid_ptx_name(k->name)) {
    bk_error(m->be, "kernel name '@%s' is not a valid PTX identifier", k->name ? k->name : "");
    return FU_ERR_UNSUPPORTED;
  }
  if (k->name[0] == '_' && k->name[1] == '_') {
    /* libdevice's functions and globals live there */
    bk_error(m->be, "kernel name '@%s' is reserved (names starting with '__')", k->name);
    return FU_ERR_UNSUPPORTED;
  }
  if (LLVMGetNamedFunction(m->M, k->name)) {
    bk_error(m->be, "two kernels are named '@%s'", k->name);
    return FU_ERR_INVALID_ARG;
  }
  if (k->cluster > 1 && m->sm < 90) {
    /* one error for the kernel, not one per cluster instruction in it */
    bk_error(m->be, "kernel '@%s': cluster=%u needs thread-block clusters, which %s does not have (sm_90 or later)",
             k->name, k->cluster, m->arch);
    return FU_ERR_UNSUPPORTED;
  }
  bk_kernel kc;
  memset(&kc, 0, sizeof kc);
  kc.mod = m;
  kc.k = k;
  kc.n_vals = k->next_kval_id ? k->next_kval_id : 1;
  kc.vals = fu_mem_calloc(&m->be->alloc, kc.n_vals, sizeof *kc.vals);
  LLVMTypeRef *pts = fu_mem_calloc(&m->be->alloc, k->n_params ? k->n_params : 1, sizeof *pts);
  if (!kc.vals || !pts) {
    fu_mem_free(&m->be->alloc, kc.vals, kc.n_vals * sizeof *kc.vals);
    fu_mem_free(&m->be->alloc, pts, (k->n_params ? k->n_params : 1) * sizeof *pts);
    return FU_ERR_NOMEM;
  }
  kc.invariant_kind = LLVMGetMDKindIDInContext(m->C, "invariant.load", 14);
  kc.loop_kind = LLVMGetMDKindIDInContext(m->C, "llvm.loop", 9);
  kc.invariant_md = LLVMMDNodeInContext2(m->C, NULL, 0);

  for (uint32_t i = 0; i < k->n_params; i++) pts[i] = param_type(m, k->params[i]);
  LLVMValueRef fn = LLVMAddFunction(m->M, k->name, LLVMFunctionType(m->t_void, pts, k->n_params, 0));
  kc.fn = fn;
  LLVMSetFunctionCallConv(fn, LLVMPTXKernelCallConv);
  bk_add_enum_attr(m, fn, LLVMAttributeFunctionIndex, "nounwind", 0);
  annotate(m, fn, "kernel", 1);
  annotate(m, fn, "maxntidx", k->block[0]);
  annotate(m, fn, "maxntidy", k->block[1]);
  annotate(m, fn, "maxntidz", k->block[2]);
  uint32_t min_blocks = fu_kernel_min_blocks_per_sm(k, (uint32_t)m->sm);
  if (min_blocks) annotate(m, fn, "minctasm", min_blocks);
  /* A kernel of clusters (cluster=C) gets no .reqnctapercluster or
   * .explicitcluster: LLVM 19's NVPTX has no annotation for them (the
   * cluster_dim_{x,y,z} annotations came with LLVM 20).  The cluster's
   * shape comes from the launch alone: the runtime launches such a kernel
   * with cuLaunchKernelEx and CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION {C, 1,
   * 1} (lib/runtime/module.c), the only launch its mapa is valid under. */

  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(m->C, fn, "entry");
  LLVMPositionBuilderAtEnd(m->B, entry);
  for (uint32_t i = 0; i < k->n_params; i++) {
    const fu_kval *p = k->params[i];
    LLVMValueRef a = LLVMGetParam(fn, i);
    if (p->name) LLVMSetValueName2(a, p->name, strlen(p->name));
    unsigned idx = i + 1;
    if (p->kind == FU_KV_TENSOR_PARAM) {
      if (p->noalias) bk_add_enum_attr(m, fn, idx, "noalias", 0);
      /* kernel IR has no pointer values: no kernel stores or returns one */
      bk_add_enum_attr(m, fn, idx, "nocapture", 0);
      if (p->readonly) bk_add_enum_attr(m, fn, idx, "readonly", 0);
      bk_add_enum_attr(m, fn, idx, "align", p->align ? p->align : fu_dtype_size(p->dtype));
      kc.vals[p->id] = a;
    } else if (p->dtype == FU_DT_BOOL) {
      kc.vals[p->id] = LLVMBuildICmp(m->B, LLVMIntNE, a, LLVMConstNull(m->t_i8), "");
    } else if (p->dtype == FU_DT_F16 || p->dtype == FU_DT_BF16) {
      kc.vals[p->id] = LLVMBuildBitCast(m->B, a, bk_reg_type(m, p->dtype), "");
    } else {
      kc.vals[p->id] = a;
    }
  }
  alloc_storage(&kc, &k->body);
  emit_block(&kc, &k->body);
  if (!m->failed) LLVMBuildRetVoid(m->B);
  fu_mem_free(&m->be->alloc, kc.vals, kc.n_vals * sizeof *kc.vals);
  fu_mem_free(&m->be->alloc, pts, (k->n_params ? k->n_params : 1) * sizeof *pts);
  return m->failed ? FU_ERR_UNSUPPORTED : FU_OK;
}
