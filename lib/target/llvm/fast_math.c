/* fuser llvm backend: the f32 fast paths of reciprocal and exp.
 *
 * A normalization spends most of its instructions on exp: libdevice's
 * expf is 11 PTX instructions with its range reduction and scaling.  The
 * bf16 softmax of [1024, 65536] keeps its rows in shared memory, one
 * block an SM, and its time is set by those instructions as much as by
 * memory: 128.7-128.8 us with libdevice's exp and the 3-instruction
 * maximum, 109.0-109.4 with this exp and max.NaN.f32 (H100, one call).  The exp here
 * stays within a few ulps of libdevice's (below); --disable=fast_paths
 * gives libdevice back.  The cuda target writes the same sequences
 * (lib/target/cuda/prelude.c: fu_rcp, fu_exp), so the two backends stay
 * bit-identical.  Division is not here: the canonicalize pass turns a
 * division by a row's value into a multiplication by its reciprocal over
 * the whole float range (passes/canonicalize_reciprocal.c); others stay
 * IEEE. */
#include <string.h>

#include "internal.h"

/* The f32 constants of exp: log2(e) rounded, what rounding it lost, ln 2. */
#define LOG2E_F32 0x1.715476p+0
#define LOG2E_LO_F32 0x1.4ae0cp-26
#define LN2_F32 0x1.62e43p-1

static LLVMValueRef f32c(bk_module *m, double v) { return LLVMConstReal(m->t_f32, v); }

static LLVMValueRef fma3(bk_module *m, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
  LLVMTypeRef t = m->t_f32;
  LLVMValueRef args[3] = {a, b, c};
  return bk_call_intrinsic(m, "llvm.fma", &t, 1, args, 3);
}

/* One PTX instruction of f32 operands as inline assembly, marked as
 * touching no memory so that common subexpression elimination merges the
 * calls of one operand (a value used by several divisions). */
static LLVMValueRef asm_f32(bk_module *m, const char *text, LLVMValueRef v) {
  LLVMTypeRef t = m->t_f32;
  LLVMTypeRef fty = LLVMFunctionType(t, &t, 1, 0);
  static const char cons[] = "=f,f";
  LLVMValueRef fn =
      LLVMGetInlineAsm(fty, (char *)text, strlen(text), (char *)cons, sizeof cons - 1, 0, 0, LLVMInlineAsmDialectATT, 0);
  LLVMValueRef call = LLVMBuildCall2(m->B, fty, fn, &v, 1, "");
  static const char *const attrs[] = {"nounwind", "willreturn"};
  for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
    unsigned kind = LLVMGetEnumAttributeKindForName(attrs[i], strlen(attrs[i]));
    LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(m->C, kind, 0));
  }
  unsigned mem = LLVMGetEnumAttributeKindForName("memory", 6);
  LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(m->C, mem, 0)); /* none */
  return call;
}

/* 1/v within 1 ulp over the whole range, subnormals kept: rcp.approx.f32
 * (inline PTX: NVPTX selects it for an fdiv only under global unsafe math,
 * and its ftz intrinsic would flush subnormals).  The IEEE reciprocal is a
 * subroutine whose registers halved a memory-bound kernel's occupancy
 * (bf16 SiLU-and-mul backward: 53 registers against 32, 47.1 -> 45.0 us
 * on an H200). */
LLVMValueRef bk_fast_rcp_f32(bk_module *m, LLVMValueRef v) {
  return asm_f32(m, "rcp.approx.f32 $0, $1;", v);
}

/* 2^x as one ex2.approx.ftz (2 ulps), where libdevice's exp2f is the
 * non-flushing ex2.approx.f32, which ptxas expands to keep subnormal
 * results: a result below 2^-126 flushes to 0, as the fast exp's does.
 * The exps that reach only 16-bit values and the online softmax's are
 * exp2 of a product (passes/lower/relax_exp.c, reduction_online.c): the
 * bf16 softmax of [1024, 65536] ran 104.1-104.5 us with the non-flushing
 * instruction, 99.5-99.6 with this one (H100, one call). */
LLVMValueRef bk_fast_exp2_f32(bk_module *m, LLVMValueRef x) {
  return bk_call_intrinsic(m, "llvm.nvvm.ex2.approx.ftz.f", NULL, 0, &x, 1);
}

/* e^x as 2^t * 2^e, t = x log2(e) rounded and e what that rounding and
 * log2(e)'s own lost (exact by fma): ex2.approx.ftz of t (one MUFU
 * instruction, 2^-22 relative) times 1 + e ln 2 (|e| <= 2^-17, so the
 * series' next term is below 2^-35).  At most 3.45 ulps over every input
 * whose exp is a normal f32, where libdevice's expf is within 1.93
 * (bench/accuracy/fast_exp_ulps.sh, on an H100); a result below 2^-126
 * flushes to 0 (f32 checks allow 1e-6 absolute).  Infinite x makes e NaN: max(c, 0.5) takes 0.5 then (max.f32
 * returns the other operand of a NaN), and 2^t is already 0 or inf; a NaN
 * x stays NaN through 2^t.  7 instructions against libdevice's 11. */
LLVMValueRef bk_fast_exp_f32(bk_module *m, LLVMValueRef x) {
  LLVMValueRef t = LLVMBuildFMul(m->B, x, f32c(m, LOG2E_F32), "");
  LLVMValueRef e = fma3(m, x, f32c(m, LOG2E_F32), LLVMBuildFNeg(m->B, t, ""));
  e = fma3(m, x, f32c(m, LOG2E_LO_F32), e);
  LLVMValueRef p = bk_call_intrinsic(m, "llvm.nvvm.ex2.approx.ftz.f", NULL, 0, &t, 1);
  LLVMValueRef c = fma3(m, e, f32c(m, LN2_F32), f32c(m, 1.0));
  LLVMTypeRef ft = m->t_f32;
  LLVMValueRef mx[2] = {c, f32c(m, 0.5)};
  c = bk_call_intrinsic(m, "llvm.maxnum", &ft, 1, mx, 2);
  return LLVMBuildFMul(m->B, p, c, "");
}
