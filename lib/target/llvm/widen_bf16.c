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
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The 32-bit words of the vectors widened so far, each built once, right
 * after its vector (so that it dominates every lane's use). */
typedef struct word_cache {
  LLVMValueRef vec[256];
  LLVMValueRef word[256][8];
  unsigned n;
} word_cache;

/* Word `k` of vector `vec` (<N x bfloat>) as an i32, from the cache or
 * built after vec; NULL where vec is a phi (no place after it for one
 * shared word) or has more than 16 lanes. */
static LLVMValueRef vector_word(bk_module *m, LLVMBuilderRef B, word_cache *c, LLVMValueRef vec, unsigned k) {
  unsigned n = LLVMGetVectorSize(LLVMTypeOf(vec));
  if (n > 16 || !LLVMIsAInstruction(vec) || LLVMIsAPHINode(vec)) return NULL;
  unsigned e = 0;
  while (e < c->n && c->vec[e] != vec) e++;
  if (e == c->n) {
    if (c->n == 256) c->n = 0; /* full: start over; later lanes of a dropped vector build its words again */
    e = c->n++;
    c->vec[e] = vec;
    memset(c->word[e], 0, sizeof c->word[e]);
  }
  if (!c->word[e][k]) {
    LLVMPositionBuilderBefore(B, LLVMGetNextInstruction(vec));
    LLVMValueRef words = LLVMBuildBitCast(B, vec, LLVMVectorType(m->t_i32, n / 2), "");
    for (unsigned j = 0; j < n / 2; j++)
      c->word[e][j] = LLVMBuildExtractElement(B, words, LLVMConstInt(m->t_i32, j, 0), "");
  }
  return c->word[e][k];
}

/* The 32-bit word holding bf16 value v and whether v is its upper half,
 * where v is a lane of a vector (`extractelement <N x bfloat> %vec, i`, N
 * even: a vector load, or a streaming load's words bitcast); NULL
 * otherwise.  The word is the i32 itself where vec is a bitcast of one.
 * The optimized IR reads keep= chunks (the pairs `opaque` packs into one
 * i32) as `bitcast (trunc (lshr %word, 16))`; those stay fpexts: widened
 * from their words too, layer norm over bf16 rows of 65536 spilled 4 bytes
 * in ptxas and ran 0.8% slower on the H100 (98.5 -> 99.3 us). */
static LLVMValueRef word_of_lane(bk_module *m, LLVMBuilderRef B, word_cache *c, LLVMValueRef v, bool *upper) {
  if (!LLVMIsAExtractElementInst(v)) return NULL;
  LLVMValueRef vec = LLVMGetOperand(v, 0), idx = LLVMGetOperand(v, 1);
  if (!LLVMIsAConstantInt(idx)) return NULL;
  unsigned n = LLVMGetVectorSize(LLVMTypeOf(vec));
  unsigned long long i = LLVMConstIntGetZExtValue(idx);
  if (n % 2 || i >= n) return NULL;
  *upper = i % 2;
  if (n == 2 && LLVMIsABitCastInst(vec) && LLVMTypeOf(LLVMGetOperand(vec, 0)) == m->t_i32)
    return LLVMGetOperand(vec, 0);
  return vector_word(m, B, c, vec, (unsigned)(i / 2));
}

/* Erases v if it is an instruction nothing uses (the lane's extract once
 * its fpext is gone), then its operands the same way; loads and calls
 * stay. */
static void erase_if_dead(LLVMValueRef v) {
  if (!LLVMIsAInstruction(v) || LLVMGetFirstUse(v) || LLVMIsACallInst(v) || LLVMIsALoadInst(v)) return;
  LLVMValueRef ops[2] = {NULL, NULL};
  int n = LLVMGetNumOperands(v);
  for (int i = 0; i < n && i < 2; i++) ops[i] = LLVMGetOperand(v, (unsigned)i);
  LLVMInstructionEraseFromParent(v);
  for (int i = 0; i < 2; i++)
    if (ops[i]) erase_if_dead(ops[i]);
}

fu_status bk_widen_bf16_pairs(bk_module *m) {
  LLVMBuilderRef B = LLVMCreateBuilderInContext(m->C);
  word_cache *c = calloc(1, sizeof *c);
  if (!B || !c) {
    if (B) LLVMDisposeBuilder(B);
    free(c);
    return FU_ERR_NOMEM;
  }
  LLVMValueRef shift16 = LLVMConstInt(m->t_i32, 16, 0);
  LLVMValueRef high_mask = LLVMConstInt(m->t_i32, 0xffff0000u, 0);
  for (LLVMValueRef f = LLVMGetFirstFunction(m->M); f; f = LLVMGetNextFunction(f))
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef in = LLVMGetFirstInstruction(bb), next; in; in = next) {
        next = LLVMGetNextInstruction(in);
        if (LLVMGetInstructionOpcode(in) != LLVMFPExt || LLVMTypeOf(in) != m->t_f32) continue;
        LLVMValueRef v = LLVMGetOperand(in, 0);
        if (LLVMTypeOf(v) != m->t_bf16) continue;
        bool upper = false;
        LLVMValueRef w = word_of_lane(m, B, c, v, &upper);
        if (!w) continue;
        LLVMPositionBuilderBefore(B, in);
        w = upper ? LLVMBuildAnd(B, w, high_mask, "") : LLVMBuildShl(B, w, shift16, "");
        LLVMReplaceAllUsesWith(in, LLVMBuildBitCast(B, w, m->t_f32, ""));
        LLVMInstructionEraseFromParent(in);
        erase_if_dead(v);
      }
  /* the words of lanes that never widened (a lane only stored) */
  for (unsigned e = 0; e < c->n; e++)
    for (unsigned k = 0; k < 8; k++)
      if (c->word[e][k]) erase_if_dead(c->word[e][k]);
  LLVMDisposeBuilder(B);
  free(c);
  return FU_OK;
}
