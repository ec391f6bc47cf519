/* fuser llvm backend: bf16 lanes of packed pairs widened to f32 as integer
 * operations on their 32-bit word.
 *
 * bf16 to f32 is exact: the f32's bits are the bf16's bits over 16 zero
 * bits (NaN payloads included).  A 16-bit row is loaded, kept and staged
 * two lanes to a 32-bit word, and `fpext bfloat` on a lane of such a word
 * makes NVPTX unpack the pair into two 16-bit registers first (`mov.b32
 * {lo, hi}`), which ptxas assembles as a PRMT for the upper lane, then the
 * shift.  From the word itself the lower lane is one shift and the upper
 * one mask: one instruction a lane.  Layer norm over bf16 rows of 4096:
 * 298 -> 274 sm_90 instructions; 3-11% fewer on most bf16 benchmark
 * kernels (docs/performance.md).  Run on the optimized IR, where a
 * kernel-IR value's reads have become the loaded lanes themselves, before
 * code generation. */
#include "internal.h"

enum { MAX_WORDS = 8, MAX_LANE_USES = 64 };

/* The 32-bit word of pair k of bf16 vector `vec`: the i32 itself where vec
 * is a bitcast of one (an opaque pair, or a streaming load's words), else
 * an extract (words[k]) from vec viewed as <N/2 x i32> (*all), both made
 * once, right after vec, which dominates every use of its lanes. */
static LLVMValueRef pair_word(bk_module *m, LLVMBuilderRef B, LLVMValueRef vec, unsigned k, LLVMValueRef *all,
                              LLVMValueRef *words) {
  unsigned n = LLVMGetVectorSize(LLVMTypeOf(vec));
  if (n == 2 && LLVMIsABitCastInst(vec) && LLVMTypeOf(LLVMGetOperand(vec, 0)) == m->t_i32)
    return LLVMGetOperand(vec, 0);
  if (!words[k]) {
    LLVMPositionBuilderBefore(B, *all ? LLVMGetNextInstruction(*all) : LLVMGetNextInstruction(vec));
    if (!*all) *all = LLVMBuildBitCast(B, vec, LLVMVectorType(m->t_i32, n / 2), "");
    words[k] = LLVMBuildExtractElement(B, *all, LLVMConstInt(m->t_i32, k, 0), "");
  }
  return words[k];
}

/* Erases v if it is an instruction nothing uses (a lane's extract once its
 * fpexts are gone). */
static void erase_if_dead(LLVMValueRef v) {
  if (LLVMIsAInstruction(v) && !LLVMGetFirstUse(v)) LLVMInstructionEraseFromParent(v);
}

/* Every `fpext bfloat ... to float` of a lane of vec (`extractelement vec,
 * i` with a constant i) becomes a shift (even i) or a mask (odd i) of the
 * lane's word, bitcast to float.  The optimized IR reads keep= chunks (the
 * pairs `opaque` packs into one i32) as `bitcast (trunc (lshr %word,
 * 16))`, no vector: those stay fpexts (widened from their words too, layer
 * norm over bf16 rows of 65536 spilled 4 bytes in ptxas and ran 0.8%
 * slower on the H100, 98.5 -> 99.3 us). */
static void widen_lanes(bk_module *m, LLVMBuilderRef B, LLVMValueRef vec) {
  LLVMValueRef all = NULL, words[MAX_WORDS] = {NULL};
  LLVMValueRef lanes[MAX_LANE_USES];
  unsigned n_lanes = 0;
  for (LLVMUseRef u = LLVMGetFirstUse(vec); u && n_lanes < MAX_LANE_USES; u = LLVMGetNextUse(u)) {
    LLVMValueRef x = LLVMGetUser(u);
    if (LLVMIsAExtractElementInst(x) && LLVMIsAConstantInt(LLVMGetOperand(x, 1))) lanes[n_lanes++] = x;
  }
  for (unsigned l = 0; l < n_lanes; l++) {
    LLVMValueRef lane = lanes[l];
    unsigned long long i = LLVMConstIntGetZExtValue(LLVMGetOperand(lane, 1));
    if (i >= LLVMGetVectorSize(LLVMTypeOf(vec))) continue;
    LLVMValueRef ext[MAX_LANE_USES];
    unsigned n_ext = 0;
    for (LLVMUseRef u = LLVMGetFirstUse(lane); u && n_ext < MAX_LANE_USES; u = LLVMGetNextUse(u)) {
      LLVMValueRef x = LLVMGetUser(u);
      if (LLVMGetInstructionOpcode(x) == LLVMFPExt && LLVMTypeOf(x) == m->t_f32) ext[n_ext++] = x;
    }
    for (unsigned e = 0; e < n_ext; e++) {
      LLVMValueRef w = pair_word(m, B, vec, (unsigned)(i / 2), &all, words);
      LLVMPositionBuilderBefore(B, ext[e]);
      w = i % 2 ? LLVMBuildAnd(B, w, LLVMConstInt(m->t_i32, 0xffff0000u, 0), "")
                : LLVMBuildShl(B, w, LLVMConstInt(m->t_i32, 16, 0), "");
      LLVMReplaceAllUsesWith(ext[e], LLVMBuildBitCast(B, w, m->t_f32, ""));
      LLVMInstructionEraseFromParent(ext[e]);
    }
    if (n_ext) erase_if_dead(lane);
  }
}

fu_status bk_widen_bf16_pairs(bk_module *m) {
  LLVMBuilderRef B = LLVMCreateBuilderInContext(m->C);
  if (!B) return FU_ERR_NOMEM;
  for (LLVMValueRef f = LLVMGetFirstFunction(m->M); f; f = LLVMGetNextFunction(f))
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) {
        LLVMTypeRef t = LLVMTypeOf(in);
        /* a vector of bf16 pairs, not a phi (no place right after it for
         * the words) */
        if (LLVMGetTypeKind(t) != LLVMVectorTypeKind || LLVMGetElementType(t) != m->t_bf16 || LLVMIsAPHINode(in))
          continue;
        unsigned n = LLVMGetVectorSize(t);
        if (n % 2 == 0 && n <= 2 * MAX_WORDS) widen_lanes(m, B, in);
      }
  LLVMDisposeBuilder(B);
  return FU_OK;
}
