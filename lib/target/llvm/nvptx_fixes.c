/* fuser llvm backend: rewrites of optimized LLVM IR that LLVM 19's NVPTX
 * code generator would get wrong.
 *
 * `sitofp i1 %b` is -1.0 for true (i1 true is -1 as a signed integer),
 * but NVPTX lowers it as `selp.u32 1, 0` then `cvt.rn.f32.s32`: +1.0.
 * The kernels never write it; InstCombine does, folding `0 - zext(b)`
 * converted to float (e.g. `iota - logical_and(...)` cast to f32) into
 * `sitofp i1 %b`.  The GPU difftest found it (seed 200613: atan2 of such
 * a difference had the wrong sign).  Each one becomes the select it
 * means, which NVPTX lowers correctly. */
#include "internal.h"

/* -1.0 (or a vector of them) of the float type `t`. */
static LLVMValueRef minus_one(LLVMTypeRef t) {
  if (LLVMGetTypeKind(t) != LLVMVectorTypeKind) return LLVMConstReal(t, -1.0);
  unsigned n = LLVMGetVectorSize(t);
  LLVMValueRef e = LLVMConstReal(LLVMGetElementType(t), -1.0);
  LLVMValueRef lanes[64];
  if (n > sizeof lanes / sizeof lanes[0]) return NULL;
  for (unsigned i = 0; i < n; i++) lanes[i] = e;
  return LLVMConstVector(lanes, n);
}

/* The i1 (or vector of i1) integer type? */
static bool is_bool_type(LLVMTypeRef t) {
  if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) t = LLVMGetElementType(t);
  return LLVMGetTypeKind(t) == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(t) == 1;
}

fu_status bk_fix_nvptx_lowering(bk_module *m) {
  LLVMBuilderRef B = LLVMCreateBuilderInContext(m->C);
  if (!B) return FU_ERR_NOMEM;
  fu_status st = FU_OK;
  for (LLVMValueRef f = LLVMGetFirstFunction(m->M); f && st == FU_OK; f = LLVMGetNextFunction(f))
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb && st == FU_OK; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef in = LLVMGetFirstInstruction(bb), next; in && st == FU_OK; in = next) {
        next = LLVMGetNextInstruction(in);
        if (LLVMGetInstructionOpcode(in) != LLVMSIToFP) continue;
        LLVMValueRef b = LLVMGetOperand(in, 0);
        if (!is_bool_type(LLVMTypeOf(b))) continue;
        LLVMTypeRef t = LLVMTypeOf(in);
        LLVMValueRef neg = minus_one(t);
        if (!neg) {
          st = FU_ERR_UNSUPPORTED;
          break;
        }
        LLVMPositionBuilderBefore(B, in);
        LLVMValueRef sel = LLVMBuildSelect(B, b, neg, LLVMConstNull(t), "");
        LLVMReplaceAllUsesWith(in, sel);
        LLVMInstructionEraseFromParent(in);
      }
  LLVMDisposeBuilder(B);
  return st;
}
