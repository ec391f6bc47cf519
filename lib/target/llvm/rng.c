/* fuser backend: uniform and normal instructions (kernel IR's
 * `uniform %a, %b, %seed, %offset, %index`), the steps of lib/interp/rng.c
 * one IEEE operation each: Philox4x32-10 in an internal always-inline
 * function emitted once per module, the uniform maps with exact
 * multiplications, explicit fma where the definition has one, and log, sin,
 * cos and sqrt through the pointwise ops (libdevice). */
#include "fuser/rng.h"
#include "internal.h"

/* `<4 x i32> fuser.philox(i64 seed, i64 subsequence, i64 offset)`. */
static LLVMValueRef philox_function(bk_module *m) {
  LLVMValueRef fn = LLVMGetNamedFunction(m->M, "fuser.philox");
  if (fn) return fn;
  LLVMTypeRef v4 = LLVMVectorType(m->t_i32, 4);
  LLVMTypeRef params[3] = {m->t_i64, m->t_i64, m->t_i64};
  fn = LLVMAddFunction(m->M, "fuser.philox", LLVMFunctionType(v4, params, 3, 0));
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  bk_add_enum_attr(m, fn, LLVMAttributeFunctionIndex, "alwaysinline", 0);
  LLVMBuilderRef B = LLVMCreateBuilderInContext(m->C);
  LLVMPositionBuilderAtEnd(B, LLVMAppendBasicBlockInContext(m->C, fn, "entry"));
  LLVMValueRef seed = LLVMGetParam(fn, 0), sub = LLVMGetParam(fn, 1), off = LLVMGetParam(fn, 2);
  LLVMValueRef k32 = LLVMConstInt(m->t_i64, 32, 0);
#define LO(v) LLVMBuildTrunc(B, v, m->t_i32, "")
#define HI(v) LLVMBuildTrunc(B, LLVMBuildLShr(B, v, k32, ""), m->t_i32, "")
  LLVMValueRef c[4] = {LO(off), HI(off), LO(sub), HI(sub)};
  LLVMValueRef k[2] = {LO(seed), HI(seed)};
  LLVMValueRef m0 = LLVMConstInt(m->t_i32, FU_RNG_PHILOX_M0, 0), m1 = LLVMConstInt(m->t_i32, FU_RNG_PHILOX_M1, 0);
  LLVMTypeRef mulhi_t = LLVMFunctionType(m->t_i32, (LLVMTypeRef[]){m->t_i32, m->t_i32}, 2, 0);
  LLVMValueRef mulhi = LLVMGetNamedFunction(m->M, "llvm.nvvm.mulhi.ui");
  if (!mulhi) mulhi = LLVMAddFunction(m->M, "llvm.nvvm.mulhi.ui", mulhi_t);
  for (int r = 0; r < 10; r++) {
    if (r) {
      k[0] = LLVMBuildAdd(B, k[0], LLVMConstInt(m->t_i32, FU_RNG_PHILOX_W0, 0), "");
      k[1] = LLVMBuildAdd(B, k[1], LLVMConstInt(m->t_i32, FU_RNG_PHILOX_W1, 0), "");
    }
    /* 32 x 32 -> high and low words: mul.hi.u32 and mul.lo.u32 */
    LLVMValueRef a0[2] = {m0, c[0]}, a1[2] = {m1, c[2]};
    LLVMValueRef hi0 = LLVMBuildCall2(B, mulhi_t, mulhi, a0, 2, ""), hi1 = LLVMBuildCall2(B, mulhi_t, mulhi, a1, 2, "");
    LLVMValueRef n0 = LLVMBuildXor(B, LLVMBuildXor(B, hi1, c[1], ""), k[0], "");
    LLVMValueRef n2 = LLVMBuildXor(B, LLVMBuildXor(B, hi0, c[3], ""), k[1], "");
    c[1] = LLVMBuildMul(B, m1, c[2], "");
    c[3] = LLVMBuildMul(B, m0, c[0], "");
    c[0] = n0;
    c[2] = n2;
  }
#undef LO
#undef HI
  LLVMValueRef v = LLVMGetUndef(v4);
  for (unsigned i = 0; i < 4; i++) v = LLVMBuildInsertElement(B, v, c[i], LLVMConstInt(m->t_i32, i, 0), "");
  LLVMBuildRet(B, v);
  LLVMDisposeBuilder(B);
  return fn;
}

/* Word i (an i64 in [0, 4)) of r, by selects: a dynamic extractelement
 * would go through local memory. */
static LLVMValueRef word(bk_module *m, LLVMValueRef r, LLVMValueRef i) {
  LLVMBuilderRef B = m->B;
  LLVMValueRef w = LLVMBuildExtractElement(B, r, LLVMConstInt(m->t_i32, 3, 0), "");
  for (unsigned k = 3; k-- > 0;) {
    LLVMValueRef is_k = LLVMBuildICmp(B, LLVMIntEQ, i, LLVMConstInt(m->t_i64, k, 0), "");
    w = LLVMBuildSelect(B, is_k, LLVMBuildExtractElement(B, r, LLVMConstInt(m->t_i32, k, 0), ""), w, "");
  }
  return w;
}

static LLVMValueRef fma_of(bk_module *m, LLVMTypeRef t, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
  LLVMValueRef args[3] = {a, b, c};
  return bk_call_intrinsic(m, "llvm.fma", &t, 1, args, 3);
}

/* One pointwise op of dtype t through bk_math (libdevice for log, sin, cos). */
static LLVMValueRef op1(bk_module *m, fu_op_kind op, fu_dtype t, LLVMValueRef x) {
  return bk_math(m, op, t, &t, &x, 1);
}

/* The raw uniform in (0, 1] of one word (f32) or two (f64), and with
 * `map_one` 1 taken to 0. */
static LLVMValueRef uniform01(bk_module *m, fu_dtype t, LLVMValueRef x, LLVMValueRef y, bool map_one) {
  LLVMBuilderRef B = m->B;
  LLVMTypeRef T = bk_reg_type(m, t);
  LLVMValueRef z = x;
  if (t == FU_DT_F64) {
    LLVMValueRef hi = LLVMBuildShl(B, LLVMBuildZExt(B, y, m->t_i64, ""), LLVMConstInt(m->t_i64, 21, 0), "");
    z = LLVMBuildXor(B, LLVMBuildZExt(B, x, m->t_i64, ""), hi, "");
  }
  double scale = t == FU_DT_F64 ? 0x1p-53 : 0x1p-32;
  LLVMValueRef u = LLVMBuildFAdd(B, LLVMBuildFMul(B, LLVMBuildUIToFP(B, z, T, ""), LLVMConstReal(T, scale), ""),
                                 LLVMConstReal(T, 0.5 * scale), "");
  if (!map_one) return u;
  LLVMValueRef one = LLVMBuildFCmp(B, LLVMRealOEQ, u, LLVMConstReal(T, 1.0), "");
  return LLVMBuildSelect(B, one, LLVMConstReal(T, 0.0), u, "");
}

LLVMValueRef bk_rng(bk_module *m, fu_op_kind op, fu_dtype result, LLVMValueRef *av) {
  LLVMBuilderRef B = m->B;
  bool f64 = result == FU_DT_F64;
  fu_dtype ct = f64 ? FU_DT_F64 : FU_DT_F32;
  LLVMTypeRef T = bk_reg_type(m, ct);
  LLVMValueRef a = av[0], b = av[1], idx = av[4];
  LLVMValueRef per_log2 = LLVMConstInt(m->t_i64, f64 ? 1 : 2, 0);
  LLVMValueRef comp = LLVMBuildAnd(B, idx, LLVMConstInt(m->t_i64, f64 ? 1 : 3, 0), "");
  LLVMValueRef fn = philox_function(m);
  LLVMValueRef pargs[3] = {av[2], LLVMBuildLShr(B, idx, per_log2, ""), av[3]};
  LLVMValueRef r = LLVMBuildCall2(B, LLVMGlobalGetValueType(fn), fn, pargs, 3, "");
  LLVMValueRef one64 = LLVMConstInt(m->t_i64, 1, 0);
  if (op == FU_OP_UNIFORM) {
    LLVMValueRef range = LLVMBuildFSub(B, b, a, "");
    if (f64) {
      LLVMValueRef w = LLVMBuildShl(B, comp, one64, "");
      LLVMValueRef u = uniform01(m, ct, word(m, r, w), word(m, r, LLVMBuildAdd(B, w, one64, "")), true);
      return fma_of(m, T, range, u, a);
    }
    bool narrow = result != FU_DT_F32;
    LLVMValueRef v = fma_of(m, T, range, uniform01(m, ct, word(m, r, comp), NULL, !narrow), a);
    if (!narrow) return v;
    /* 16-bit: the rounded value equal to maxval is minval */
    LLVMValueRef h = bk_convert(m, v, ct, result), hb = bk_convert(m, b, ct, result);
    LLVMValueRef eq = LLVMBuildFCmp(B, LLVMRealOEQ, h, hb, "");
    return LLVMBuildSelect(B, eq, bk_convert(m, a, ct, result), h, "");
  }
  LLVMValueRef u, v;
  if (f64) {
    u = uniform01(m, ct, word(m, r, LLVMConstInt(m->t_i64, 0, 0)), word(m, r, one64), true);
    v = uniform01(m, ct, word(m, r, LLVMConstInt(m->t_i64, 2, 0)), word(m, r, LLVMConstInt(m->t_i64, 3, 0)), true);
    v = LLVMBuildFMul(B, v, LLVMConstReal(T, 6.2831853071795860), "");
  } else {
    LLVMValueRef pair = LLVMBuildAnd(B, comp, LLVMConstInt(m->t_i64, 2, 0), "");
    u = uniform01(m, ct, word(m, r, pair), NULL, true);
    v = uniform01(m, ct, word(m, r, LLVMBuildOr(B, pair, one64, "")), NULL, true);
    v = LLVMBuildFMul(B, v, LLVMConstReal(T, 6.2831855f), "");
  }
  LLVMValueRef lg = op1(m, FU_OP_LOG, ct, u);
  LLVMValueRef rad = lg ? op1(m, FU_OP_SQRT, ct, LLVMBuildFMul(B, LLVMConstReal(T, -2.0), lg, "")) : NULL;
  LLVMValueRef s = op1(m, FU_OP_SIN, ct, v), c = op1(m, FU_OP_COS, ct, v);
  if (!rad || !s || !c) return NULL;
  LLVMValueRef odd = LLVMBuildICmp(B, LLVMIntNE, LLVMBuildAnd(B, comp, one64, ""), LLVMConstInt(m->t_i64, 0, 0), "");
  LLVMValueRef n = LLVMBuildFMul(B, rad, LLVMBuildSelect(B, odd, c, s, ""), "");
  return bk_convert(m, fma_of(m, T, n, b, a), ct, result);
}
