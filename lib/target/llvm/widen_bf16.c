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
 * code generation.
 *
 * The same walk keeps NVPTX from selecting ProxyReg copies, which LLVM 19
 * erases at a cost of their number times the kernel's length: a widened
 * load reads its words as integers (no bitcast of each bf16 pair to i32),
 * and a kept pair's lanes come from one bitcast of its word to <2 x
 * bfloat> (not an i16-to-bf16 bitcast a lane).  Layer norm over bf16 rows
 * of 65536: 226 -> 207 M host instructions from text to PTX, and ptxas
 * makes the same sm_90 code from either PTX. */
#include "internal.h"

enum { MAX_WORDS = 8, MAX_LANE_USES = 64 };

/* vec's words as <N/2 x i32>, made once: a load of vec's address where
 * vec is a load (vec's other uses then read those words bitcast back, see
 * retype_load), else vec bitcast right after vec. */
static LLVMValueRef vector_words(bk_module *m, LLVMBuilderRef B, LLVMValueRef vec) {
  LLVMTypeRef words_t = LLVMVectorType(m->t_i32, LLVMGetVectorSize(LLVMTypeOf(vec)) / 2);
  if (!LLVMIsALoadInst(vec)) {
    LLVMPositionBuilderBefore(B, LLVMGetNextInstruction(vec));
    return LLVMBuildBitCast(B, vec, words_t, "");
  }
  LLVMPositionBuilderBefore(B, vec);
  LLVMValueRef ld = LLVMBuildLoad2(B, words_t, LLVMGetOperand(vec, 0), "");
  LLVMSetAlignment(ld, LLVMGetAlignment(vec));
  LLVMSetVolatile(ld, LLVMGetVolatile(vec));
  size_t n_md = 0;
  LLVMValueMetadataEntry *md = LLVMInstructionGetAllMetadataOtherThanDebugLoc(vec, &n_md);
  for (size_t i = 0; i < n_md; i++)
    LLVMSetMetadata(ld, LLVMValueMetadataEntriesGetKind(md, (unsigned)i),
                    LLVMMetadataAsValue(m->C, LLVMValueMetadataEntriesGetMetadata(md, (unsigned)i)));
  if (md) LLVMDisposeValueMetadataEntries(md);
  return ld;
}

/* The 32-bit word of pair k of bf16 vector `vec`: the i32 itself where vec
 * is a bitcast of one (an opaque pair, or a streaming load's words), else
 * an extract (words[k]) from vec's words (*all), made once, right after
 * them, which dominate every use of vec's lanes. */
static LLVMValueRef pair_word(bk_module *m, LLVMBuilderRef B, LLVMValueRef vec, unsigned k, LLVMValueRef *all,
                              LLVMValueRef *words) {
  unsigned n = LLVMGetVectorSize(LLVMTypeOf(vec));
  if (n == 2 && LLVMIsABitCastInst(vec) && LLVMTypeOf(LLVMGetOperand(vec, 0)) == m->t_i32)
    return LLVMGetOperand(vec, 0);
  if (!words[k]) {
    if (!*all) *all = vector_words(m, B, vec);
    LLVMPositionBuilderBefore(B, LLVMGetNextInstruction(*all));
    words[k] = LLVMBuildExtractElement(B, *all, LLVMConstInt(m->t_i32, k, 0), "");
  }
  return words[k];
}

/* A bf16 vector load whose words were loaded as integers (vector_words)
 * is replaced by them: its remaining uses read the words bitcast back, and
 * the load itself goes (NVPTX selects the bitcast of each pair of the
 * bf16 load to i32 as a ProxyReg copy: layer norm over bf16 rows of 65536
 * spent 6% of its compile time erasing them).  Returns the instruction
 * the caller's walk goes on from. */
static LLVMValueRef retype_load(LLVMBuilderRef B, LLVMValueRef vec, LLVMValueRef all) {
  if (!all || !LLVMIsALoadInst(vec)) return vec;
  if (LLVMGetFirstUse(vec)) {
    LLVMPositionBuilderBefore(B, vec);
    LLVMReplaceAllUsesWith(vec, LLVMBuildBitCast(B, all, LLVMTypeOf(vec), ""));
  }
  LLVMValueRef prev = LLVMGetPreviousInstruction(vec);
  LLVMInstructionEraseFromParent(vec);
  return prev;
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
 * slower on the H100, 98.5 -> 99.3 us; unpack_pair_lanes runs after this
 * walk for that reason).  Returns the instruction the caller's walk goes
 * on from (retype_load may have erased vec). */
static LLVMValueRef widen_lanes(bk_module *m, LLVMBuilderRef B, LLVMValueRef vec) {
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
  return retype_load(B, vec, all);
}

/* The word W and lane (0 low, 1 high) that `bitcast i16 X to bfloat`
 * reads, where X is `trunc W` or `trunc (lshr W, 16)` of an i32 W: how the
 * optimized IR reads the lanes of a keep= pair.  NULL where it is not. */
static LLVMValueRef lane_source(bk_module *m, LLVMValueRef cast, unsigned *lane) {
  LLVMValueRef x = LLVMGetOperand(cast, 0);
  if (LLVMTypeOf(x) != m->t_i16 || LLVMGetInstructionOpcode(x) != LLVMTrunc) return NULL;
  LLVMValueRef w = LLVMGetOperand(x, 0);
  if (LLVMTypeOf(w) != m->t_i32) return NULL;
  *lane = 0;
  if (LLVMIsAInstruction(w) && LLVMGetInstructionOpcode(w) == LLVMLShr) {
    LLVMValueRef sh = LLVMGetOperand(w, 1);
    if (!LLVMIsAConstantInt(sh) || LLVMConstIntGetZExtValue(sh) != 16) return NULL;
    w = LLVMGetOperand(w, 0);
    *lane = 1;
  }
  return LLVMIsAInstruction(w) && !LLVMIsAPHINode(w) ? w : NULL;
}

/* A keep= pair's lanes, `bitcast (trunc [lshr] W)` to bfloat, become lanes
 * of W bitcast to <2 x bfloat> (one bitcast a word, right after W): one
 * ProxyReg copy for both lanes instead of one a lane, and one `mov.b32
 * {lo, hi}` unpacks them where the truncations were two instructions. */
static void unpack_pair_lanes(bk_module *m, LLVMBuilderRef B, LLVMValueRef f) {
  LLVMTypeRef pair_t = LLVMVectorType(m->t_bf16, 2);
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef in = LLVMGetFirstInstruction(bb), next; in; in = next) {
      next = LLVMGetNextInstruction(in);
      unsigned lane;
      LLVMValueRef w;
      if (!LLVMIsABitCastInst(in) || LLVMTypeOf(in) != m->t_bf16 || !(w = lane_source(m, in, &lane))) continue;
      LLVMValueRef pair = NULL;
      for (LLVMUseRef u = LLVMGetFirstUse(w); u && !pair; u = LLVMGetNextUse(u))
        if (LLVMIsABitCastInst(LLVMGetUser(u)) && LLVMTypeOf(LLVMGetUser(u)) == pair_t)
          pair = LLVMGetUser(u);
      if (!pair) {
        LLVMPositionBuilderBefore(B, LLVMGetNextInstruction(w));
        pair = LLVMBuildBitCast(B, w, pair_t, "");
      }
      LLVMPositionBuilderBefore(B, in);
      LLVMReplaceAllUsesWith(in, LLVMBuildExtractElement(B, pair, LLVMConstInt(m->t_i32, lane, 0), ""));
      LLVMValueRef x = LLVMGetOperand(in, 0), shifted = LLVMGetOperand(x, 0);
      LLVMInstructionEraseFromParent(in);
      erase_if_dead(x);
      if (lane) erase_if_dead(shifted);
    }
}

fu_status bk_widen_bf16_pairs(bk_module *m) {
  LLVMBuilderRef B = LLVMCreateBuilderInContext(m->C);
  if (!B) return FU_ERR_NOMEM;
  for (LLVMValueRef f = LLVMGetFirstFunction(m->M); f; f = LLVMGetNextFunction(f)) {
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) {
        LLVMTypeRef t = LLVMTypeOf(in);
        /* a vector of bf16 pairs, not a phi (no place right after it for
         * the words) */
        if (LLVMGetTypeKind(t) != LLVMVectorTypeKind || LLVMGetElementType(t) != m->t_bf16 || LLVMIsAPHINode(in))
          continue;
        unsigned n = LLVMGetVectorSize(t);
        if (n % 2 == 0 && n <= 2 * MAX_WORDS) in = widen_lanes(m, B, in);
      }
    /* after the widening, which would widen the pairs it makes */
    unpack_pair_lanes(m, B, f);
  }
  LLVMDisposeBuilder(B);
  return FU_OK;
}
