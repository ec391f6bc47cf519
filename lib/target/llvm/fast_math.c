/* fuser llvm backend: the f32 fast paths of reciprocal, exp and division.
 *
 * A normalization spends most of its instructions on exp and division:
 * libdevice's expf is about 11 PTX instructions, and an IEEE division
 * (div.rn.f32) is a test, a subroutine call and a slow path per element.
 * Softmax of bf16 [1024, 65536] ran 139.3 us with them and 115.9 us with
 * one-instruction forms (H100), whose time is set by the instructions
 * while its row is in shared memory.  The forms here keep the accuracy
 * close to the IEEE ones (a few ulps) at a fraction of the instructions;
 * --disable=fast_paths gives libdevice and IEEE back.  The cuda target
 * writes the same sequences (lib/target/cuda/prelude.c: fu_rcp, fu_exp,
 * fu_div), so the two backends stay bit-identical. */
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
 * calls of one operand (a row's divisor is shared by all its elements). */
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

/* e^x as 2^t * 2^e, t = x log2(e) rounded and e what that rounding and
 * log2(e)'s own lost (exact by fma): ex2.approx.ftz of t (one MUFU
 * instruction, 2^-22 relative) times 1 + e ln 2 (|e| <= 2^-17, so the
 * series' next term is below 2^-35).  About 3 ulps where libdevice's expf
 * is within 2; a result below 2^-126 flushes to 0 (f32 checks allow 1e-6
 * absolute).  Infinite x makes e NaN: max(c, 0.5) takes 0.5 then (max.f32
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

/* a/b as q = a r with r = rcp.approx(b), corrected once by the exact
 * residual a - q b (Markstein): within 1 ulp, and correctly rounded but
 * for rare ties of the approximate reciprocal.  The reciprocal depends on
 * b only, so a row's divisor (softmax's sum) costs one per thread, and
 * each element 3 instructions where div.rn.f32 takes a test, a call and
 * a slow path.  Where the correction is NaN (b zero or infinite, a
 * infinite) q is the quotient already: +-inf, 0 or NaN as IEEE gives.
 * Not exact: |b| below 2^-128 (r overflows: a tiny a over a tiny b gives
 * inf) and quotients within an ulp of overflow. */
LLVMValueRef bk_fast_div_f32(bk_module *m, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef r = bk_fast_rcp_f32(m, b);
  LLVMValueRef q = LLVMBuildFMul(m->B, a, r, "");
  LLVMValueRef res = fma3(m, LLVMBuildFNeg(m->B, q, ""), b, a);
  LLVMValueRef q1 = fma3(m, res, r, q);
  LLVMValueRef nan = LLVMBuildFCmp(m->B, LLVMRealUNO, q1, q1, "");
  return LLVMBuildSelect(m->B, nan, q, q1, "");
}
