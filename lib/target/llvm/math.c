/* fuser backend: the pointwise ops of ops.def on scalars.
 *
 * Semantics follow PyTorch's CUDA kernels (the reference the interpreter
 * also follows): NaN propagates through maximum/minimum/clamp/relu, int div
 * and fmod truncate, remainder takes the divisor's sign, bool + is `or`.
 * Transcendentals call libdevice (__nv_expf ...), whose copies the
 * optimization pipeline inlines (always-inline); cheap exact operations use instructions or NVVM
 * intrinsics directly (llvm.exp2-style LLVM intrinsics do not lower on
 * NVPTX). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

typedef struct mctx {
  bk_module *m;
  LLVMBuilderRef B;
  fu_dtype C; /* the compute dtype */
  LLVMTypeRef T;
} mctx;

static LLVMValueRef fconst(const mctx *x, double v) { return LLVMConstReal(x->T, v); }
static LLVMValueRef iconst(const mctx *x, long long v) { return LLVMConstInt(x->T, (unsigned long long)v, 1); }

/* libdevice functions whose body, with __nvvm_reflect answered as the
 * backend answers it (no FTZ), is one NVVM intrinsic: llvm.nvvm.<op>.f for
 * f32, .d for f64.  Calling the intrinsic directly gives the same PTX and
 * spares a fusion that needs no other libdevice function (every layer,
 * RMS, group and batch norm: rsqrt) the libdevice load, a sixth of a small
 * fusion's compile. */
static const struct {
  const char *base, *nvvm;
} one_intrinsic[] = {
    {"rsqrt", "rsqrt.approx"}, {"rint", "round"}, {"trunc", "trunc"}, {"floor", "floor"}, {"ceil", "ceil"},
};

/* __nv_<base>f for f32, __nv_<base> for f64 (or the one intrinsic such a
 * function wraps). */
static LLVMValueRef libdevice_call(const mctx *x, const char *base, LLVMValueRef *args, unsigned n) {
  for (size_t i = 0; n == 1 && i < sizeof one_intrinsic / sizeof one_intrinsic[0]; i++) {
    if (strcmp(base, one_intrinsic[i].base) != 0) continue;
    char iname[64];
    snprintf(iname, sizeof iname, "llvm.nvvm.%s.%s", one_intrinsic[i].nvvm, x->C == FU_DT_F32 ? "f" : "d");
    return bk_call_intrinsic(x->m, iname, NULL, 0, args, 1);
  }
  char name[64];
  snprintf(name, sizeof name, "__nv_%s%s", base, x->C == FU_DT_F32 ? "f" : "");
  LLVMValueRef fn = bk_libdevice_function(x->m, name);
  if (!fn) return NULL;
  return LLVMBuildCall2(x->B, LLVMGlobalGetValueType(fn), fn, args, n, "");
}

static LLVMValueRef fabs_of(const mctx *x, LLVMValueRef v) {
  LLVMTypeRef t = x->T;
  return bk_call_intrinsic(x->m, "llvm.fabs", &t, 1, &v, 1);
}

static LLVMValueRef fsel(const mctx *x, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b, LLVMValueRef t,
                         LLVMValueRef f) {
  return LLVMBuildSelect(x->B, LLVMBuildFCmp(x->B, p, a, b, ""), t, f, "");
}

static LLVMValueRef isel(const mctx *x, LLVMIntPredicate p, LLVMValueRef a, LLVMValueRef b, LLVMValueRef t,
                         LLVMValueRef f) {
  return LLVMBuildSelect(x->B, LLVMBuildICmp(x->B, p, a, b, ""), t, f, "");
}

/* maxnum/minnum return the other operand for one NaN; PyTorch returns NaN.
 * In f32 on sm_80 and later, llvm.maximum/minimum: max.NaN.f32, one
 * instruction where the select takes three (a softmax's row max is one
 * such op per element), NaN propagated and -0 below +0 as the reference
 * orders them; the cuda target's fu_maximum the same. */
static LLVMValueRef fminmax(const mctx *x, bool is_max, LLVMValueRef a, LLVMValueRef b) {
  LLVMTypeRef t = x->T;
  LLVMValueRef args[2] = {a, b};
  if (x->C == FU_DT_F32 && x->m->sm >= 80)
    return bk_call_intrinsic(x->m, is_max ? "llvm.maximum" : "llvm.minimum", &t, 1, args, 2);
  LLVMValueRef r = bk_call_intrinsic(x->m, is_max ? "llvm.maxnum" : "llvm.minnum", &t, 1, args, 2);
  if (!r) return NULL;
  return fsel(x, LLVMRealUNO, a, b, LLVMBuildFAdd(x->B, a, b, ""), r);
}

/* An internal always-inline helper `T name(T, T)` for integer math that
 * needs a loop, declared once per module: *fn is it, and the result is a
 * builder for its body when it is new, NULL when it already exists. */
static LLVMBuilderRef int_helper(const mctx *x, const char *name, LLVMValueRef *fn) {
  bk_module *m = x->m;
  *fn = LLVMGetNamedFunction(m->M, name);
  if (*fn) return NULL;
  LLVMTypeRef params[2] = {x->T, x->T};
  *fn = LLVMAddFunction(m->M, name, LLVMFunctionType(x->T, params, 2, 0));
  LLVMSetLinkage(*fn, LLVMInternalLinkage);
  /* inlined by the pipeline's always-inline, as libdevice's functions are */
  bk_add_enum_attr(m, *fn, LLVMAttributeFunctionIndex, "alwaysinline", 0);
  return LLVMCreateBuilderInContext(m->C);
}

/* Integer power by squaring, emitted once per module as an internal
 * always-inline function; a negative exponent gives 1/b^-e truncated (1, -1 or 0). */
static LLVMValueRef ipow_function(const mctx *x) {
  bk_module *m = x->m;
  LLVMValueRef fn;
  LLVMBuilderRef B = int_helper(x, x->C == FU_DT_I64 ? "fuser.ipow.i64" : "fuser.ipow.i32", &fn);
  if (!B) return fn;
  LLVMTypeRef T = x->T;
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(m->C, fn, "entry");
  LLVMBasicBlockRef neg = LLVMAppendBasicBlockInContext(m->C, fn, "neg");
  LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(m->C, fn, "loop");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(m->C, fn, "done");
  LLVMValueRef b = LLVMGetParam(fn, 0), e = LLVMGetParam(fn, 1);
  LLVMValueRef zero = LLVMConstInt(T, 0, 0), one = LLVMConstInt(T, 1, 0), mone = LLVMConstAllOnes(T);

  LLVMPositionBuilderAtEnd(B, entry);
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, e, zero, ""), neg, loop);

  LLVMPositionBuilderAtEnd(B, neg);
  LLVMValueRef odd = LLVMBuildICmp(B, LLVMIntNE, LLVMBuildAnd(B, e, one, ""), zero, "");
  LLVMValueRef m1 = LLVMBuildSelect(B, odd, mone, one, "");
  LLVMValueRef is_m1 = LLVMBuildICmp(B, LLVMIntEQ, b, mone, "");
  LLVMValueRef r_m1 = LLVMBuildSelect(B, is_m1, m1, zero, "");
  LLVMValueRef is_1 = LLVMBuildICmp(B, LLVMIntEQ, b, one, "");
  LLVMValueRef r_neg = LLVMBuildSelect(B, is_1, one, r_m1, "");
  LLVMBuildRet(B, r_neg);

  LLVMPositionBuilderAtEnd(B, loop);
  LLVMValueRef r = LLVMBuildPhi(B, T, "r"), base = LLVMBuildPhi(B, T, "b"), ex = LLVMBuildPhi(B, T, "e");
  LLVMValueRef bit = LLVMBuildICmp(B, LLVMIntNE, LLVMBuildAnd(B, ex, one, ""), zero, "");
  LLVMValueRef r2 = LLVMBuildSelect(B, bit, LLVMBuildMul(B, r, base, ""), r, "");
  LLVMValueRef b2 = LLVMBuildMul(B, base, base, "");
  LLVMValueRef e2 = LLVMBuildLShr(B, ex, one, "");
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntEQ, e2, zero, ""), done, loop);
  LLVMValueRef in_r[2] = {one, r2}, in_b[2] = {b, b2}, in_e[2] = {e, e2};
  LLVMBasicBlockRef from[2] = {entry, loop};
  LLVMAddIncoming(r, in_r, from, 2);
  LLVMAddIncoming(base, in_b, from, 2);
  LLVMAddIncoming(ex, in_e, from, 2);

  LLVMPositionBuilderAtEnd(B, done);
  LLVMValueRef res = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntEQ, e, zero, ""), one, r2, "");
  LLVMBuildRet(B, res);
  LLVMDisposeBuilder(B);
  return fn;
}

/* Euclid's gcd of the magnitudes (torch.gcd), emitted once per module as
 * an internal always-inline function like ipow. */
static LLVMValueRef gcd_function(const mctx *x) {
  bk_module *m = x->m;
  LLVMValueRef fn;
  LLVMBuilderRef B = int_helper(x, x->C == FU_DT_I64 ? "fuser.gcd.i64" : "fuser.gcd.i32", &fn);
  if (!B) return fn;
  LLVMTypeRef T = x->T;
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(m->C, fn, "entry");
  LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(m->C, fn, "loop");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(m->C, fn, "done");
  LLVMValueRef zero = LLVMConstInt(T, 0, 0);
  LLVMPositionBuilderAtEnd(B, entry);
  LLVMValueRef p0 = LLVMGetParam(fn, 0), p1 = LLVMGetParam(fn, 1);
  LLVMValueRef a0 = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, p0, zero, ""), LLVMBuildNeg(B, p0, ""), p0, "");
  LLVMValueRef b0 = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, p1, zero, ""), LLVMBuildNeg(B, p1, ""), p1, "");
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntEQ, a0, zero, ""), done, loop);
  /* loop: (a, b) -> (b % a, a) while a != 0; magnitudes are unsigned */
  LLVMPositionBuilderAtEnd(B, loop);
  LLVMValueRef a = LLVMBuildPhi(B, T, "a"), b = LLVMBuildPhi(B, T, "b");
  LLVMValueRef a2 = LLVMBuildURem(B, b, a, "");
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntEQ, a2, zero, ""), done, loop);
  LLVMValueRef in_a[2] = {a0, a2}, in_b[2] = {b0, a};
  LLVMBasicBlockRef from[2] = {entry, loop};
  LLVMAddIncoming(a, in_a, from, 2);
  LLVMAddIncoming(b, in_b, from, 2);
  LLVMPositionBuilderAtEnd(B, done);
  LLVMValueRef res = LLVMBuildPhi(B, T, "g");
  LLVMValueRef in_r[2] = {b0, a};
  LLVMAddIncoming(res, in_r, from, 2);
  LLVMBuildRet(B, res);
  LLVMDisposeBuilder(B);
  return fn;
}

static LLVMValueRef compare(const mctx *x, fu_op_kind op, LLVMValueRef a, LLVMValueRef b) {
  if (fu_dtype_is_float(x->C)) {
    LLVMRealPredicate p = LLVMRealOEQ;
    switch (op) {
    case FU_OP_EQ: p = LLVMRealOEQ; break;
    case FU_OP_NE: p = LLVMRealUNE; break;
    case FU_OP_LT: p = LLVMRealOLT; break;
    case FU_OP_LE: p = LLVMRealOLE; break;
    case FU_OP_GT: p = LLVMRealOGT; break;
    default: p = LLVMRealOGE; break;
    }
    return LLVMBuildFCmp(x->B, p, a, b, "");
  }
  bool u = x->C == FU_DT_BOOL;
  LLVMIntPredicate p = LLVMIntEQ;
  switch (op) {
  case FU_OP_EQ: p = LLVMIntEQ; break;
  case FU_OP_NE: p = LLVMIntNE; break;
  case FU_OP_LT: p = u ? LLVMIntULT : LLVMIntSLT; break;
  case FU_OP_LE: p = u ? LLVMIntULE : LLVMIntSLE; break;
  case FU_OP_GT: p = u ? LLVMIntUGT : LLVMIntSGT; break;
  default: p = u ? LLVMIntUGE : LLVMIntSGE; break;
  }
  return LLVMBuildICmp(x->B, p, a, b, "");
}

/* Ops whose result is bool whatever the operands: computed on the
 * operands' promoted dtype. */
static LLVMValueRef bool_result_op(bk_module *m, fu_op_kind op, const fu_dtype *at, LLVMValueRef *av, uint32_t n) {
  mctx x = {m, m->B, FU_DT_NONE, NULL};
  switch (op) {
  case FU_OP_LOGICAL_NOT: return LLVMBuildNot(m->B, bk_to_bool(m, av[0], at[0]), "");
  case FU_OP_LOGICAL_AND:
  case FU_OP_LOGICAL_OR: {
    LLVMValueRef a = bk_to_bool(m, av[0], at[0]);
    LLVMValueRef b = bk_to_bool(m, av[1], at[1]);
    return op == FU_OP_LOGICAL_AND ? LLVMBuildAnd(m->B, a, b, "") : LLVMBuildOr(m->B, a, b, "");
  }
  case FU_OP_ISNAN:
  case FU_OP_ISINF:
  case FU_OP_ISFINITE: {
    if (!fu_dtype_is_float(at[0])) return LLVMConstInt(m->t_i1, op == FU_OP_ISFINITE, 0);
    x.C = bk_compute_dtype(at[0]);
    x.T = bk_reg_type(m, x.C);
    LLVMValueRef v = bk_convert(m, av[0], at[0], x.C);
    if (op == FU_OP_ISNAN) return LLVMBuildFCmp(m->B, LLVMRealUNO, v, v, "");
    LLVMValueRef a = fabs_of(&x, v);
    if (!a) return NULL;
    return LLVMBuildFCmp(m->B, op == FU_OP_ISINF ? LLVMRealOEQ : LLVMRealOLT, a, LLVMConstReal(x.T, (double)INFINITY), "");
  }
  case FU_OP_ISREAL: return LLVMConstInt(m->t_i1, 1, 0);
  case FU_OP_SIGNBIT:
  case FU_OP_ISNEGINF:
  case FU_OP_ISPOSINF: {
    x.C = bk_compute_dtype(at[0]);
    x.T = bk_reg_type(m, x.C);
    LLVMValueRef v = bk_convert(m, av[0], at[0], x.C);
    if (!fu_dtype_is_float(at[0]))
      return op == FU_OP_SIGNBIT && x.C != FU_DT_BOOL ? LLVMBuildICmp(m->B, LLVMIntSLT, v, iconst(&x, 0), "")
                                                       : LLVMConstInt(m->t_i1, 0, 0);
    if (op == FU_OP_SIGNBIT) { /* the sign bit itself: -0.0 and -NaN count */
      LLVMTypeRef it = LLVMIntTypeInContext(m->C, x.C == FU_DT_F32 ? 32 : 64);
      LLVMValueRef bits = LLVMBuildBitCast(m->B, v, it, "");
      return LLVMBuildICmp(m->B, LLVMIntSLT, bits, LLVMConstInt(it, 0, 0), "");
    }
    return LLVMBuildFCmp(m->B, LLVMRealOEQ, v, LLVMConstReal(x.T, op == FU_OP_ISNEGINF ? -(double)INFINITY : (double)INFINITY),
                         "");
  }
  default: break;
  }
  if (n != 2) return NULL;
  x.C = bk_compute_dtype(fu_dtype_promote(at[0], at[1]));
  x.T = bk_reg_type(m, x.C);
  LLVMValueRef a = bk_convert(m, av[0], at[0], x.C);
  LLVMValueRef b = bk_convert(m, av[1], at[1], x.C);
  return compare(&x, op, a, b);
}

/* 1/v: in f32 with the fast paths on, the hardware's approximation
 * (fast_math.c); ops.def marks reciprocal FU_OF_APPROX, so --check allows
 * its last bits; f64 stays IEEE, and --disable=fast_paths gives the IEEE
 * f32 division back. */
static LLVMValueRef reciprocal(const mctx *x, LLVMValueRef v) {
  if (x->C != FU_DT_F32 || x->m->be->no_fast_paths) return LLVMBuildFDiv(x->B, fconst(x, 1.0), v, "");
  return bk_fast_rcp_f32(x->m, v);
}

/* exp: fast_math.c's sequence in f32 with the fast paths on, libdevice's
 * otherwise. */
static LLVMValueRef exp_of(const mctx *x, LLVMValueRef *a) {
  bool fast = x->C == FU_DT_F32 && !x->m->be->no_fast_paths;
  return fast ? bk_fast_exp_f32(x->m, a[0]) : libdevice_call(x, "exp", a, 1);
}

static LLVMValueRef float_op(const mctx *x, fu_op_kind op, LLVMValueRef *a, uint32_t n) {
  LLVMBuilderRef B = x->B;
  /* ops.def's MATH column: the libdevice function of the same name */
  const char *ld = fu_op_info_of(op)->math;
  if (op == FU_OP_EXP) return exp_of(x, a);
  if (op == FU_OP_EXP2 && x->C == FU_DT_F32 && !x->m->be->no_fast_paths) return bk_fast_exp2_f32(x->m, a[0]);
  if (ld && n == (uint32_t)fu_op_info_of(op)->num_operands) return libdevice_call(x, ld, a, n);
  switch (op) {
  case FU_OP_ROUND: return libdevice_call(x, "rint", a, 1); /* half to even, as torch.round */
  case FU_OP_RSQRT: return libdevice_call(x, "rsqrt", a, 1);
  case FU_OP_ERFINV: return libdevice_call(x, "erfinv", a, 1);
  case FU_OP_ERFCINV: return libdevice_call(x, "erfcinv", a, 1);
  case FU_OP_FRAC: { /* torch.frac: x - trunc(x) */
    LLVMValueRef t = libdevice_call(x, "trunc", a, 1);
    return t ? LLVMBuildFSub(B, a[0], t, "") : NULL;
  }
  case FU_OP_SET: return a[0];
  case FU_OP_ABS: return x->m->be->no_fast_paths ? libdevice_call(x, "fabs", a, 1) : fabs_of(x, a[0]);
  case FU_OP_NEG: return LLVMBuildFNeg(B, a[0], "");
  case FU_OP_SQRT:
    if (x->m->be->no_fast_paths) return libdevice_call(x, "sqrt", a, 1);
    return bk_call_intrinsic(x->m, x->C == FU_DT_F32 ? "llvm.nvvm.sqrt.rn.f" : "llvm.nvvm.sqrt.rn.d",
                                            NULL, 0, a, 1);
  case FU_OP_RECIPROCAL: return reciprocal(x, a[0]);
  case FU_OP_SIGMOID:
  case FU_OP_SILU: {
    LLVMValueRef neg = LLVMBuildFNeg(B, a[0], "");
    LLVMValueRef e = exp_of(x, &neg);
    if (!e) return NULL;
    LLVMValueRef den = LLVMBuildFAdd(B, fconst(x, 1.0), e, "");
    return op == FU_OP_SILU ? LLVMBuildFDiv(B, a[0], den, "") : reciprocal(x, den);
  }
  case FU_OP_RELU: return fsel(x, LLVMRealOLT, a[0], fconst(x, 0.0), fconst(x, 0.0), a[0]);
  case FU_OP_SIGN: { /* (x > 0) - (x < 0), as PyTorch: NaN and -0.0 give +0.0 */
    LLVMValueRef inner = fsel(x, LLVMRealOLT, a[0], fconst(x, 0.0), fconst(x, -1.0), fconst(x, 0.0));
    return fsel(x, LLVMRealOGT, a[0], fconst(x, 0.0), fconst(x, 1.0), inner);
  }
  case FU_OP_ADD: return LLVMBuildFAdd(B, a[0], a[1], "");
  case FU_OP_SUB: return LLVMBuildFSub(B, a[0], a[1], "");
  case FU_OP_MUL: return LLVMBuildFMul(B, a[0], a[1], "");
  case FU_OP_DIV: return LLVMBuildFDiv(B, a[0], a[1], "");
  case FU_OP_REMAINDER: {
    LLVMValueRef r = libdevice_call(x, "fmod", a, 2);
    if (!r) return NULL;
    LLVMValueRef zero = fconst(x, 0.0);
    LLVMValueRef nz = LLVMBuildFCmp(B, LLVMRealONE, r, zero, "");
    LLVMValueRef rneg = LLVMBuildFCmp(B, LLVMRealOLT, r, zero, "");
    LLVMValueRef bneg = LLVMBuildFCmp(B, LLVMRealOLT, a[1], zero, "");
    LLVMValueRef diff = LLVMBuildXor(B, rneg, bneg, "");
    LLVMValueRef fix = LLVMBuildAnd(B, nz, diff, "");
    return LLVMBuildSelect(B, fix, LLVMBuildFAdd(B, r, a[1], ""), r, "");
  }
  case FU_OP_MAXIMUM: return fminmax(x, true, a[0], a[1]);
  case FU_OP_MINIMUM: return fminmax(x, false, a[0], a[1]);
  case FU_OP_CLAMP: {
    LLVMValueRef lo = fsel(x, LLVMRealOLT, a[0], a[1], a[1], a[0]);
    return fsel(x, LLVMRealOGT, lo, a[2], a[2], lo);
  }
  case FU_OP_LERP: {
    /* PyTorch's form: exact at both ends and monotonic */
    LLVMValueRef d = LLVMBuildFSub(B, a[1], a[0], "");
    LLVMValueRef lo = LLVMBuildFAdd(B, a[0], LLVMBuildFMul(B, a[2], d, ""), "");
    LLVMValueRef hi =
        LLVMBuildFSub(B, a[1], LLVMBuildFMul(B, d, LLVMBuildFSub(B, fconst(x, 1.0), a[2], ""), ""), "");
    LLVMValueRef w = fabs_of(x, a[2]);
    if (!w) return NULL;
    return fsel(x, LLVMRealOLT, w, fconst(x, 0.5), lo, hi);
  }
  default: return NULL;
  }
}

static LLVMValueRef int_op(const mctx *x, fu_op_kind op, LLVMValueRef *a, uint32_t n) {
  LLVMBuilderRef B = x->B;
  LLVMValueRef zero = iconst(x, 0);
  (void)n;
  switch (op) {
  case FU_OP_SET:
  case FU_OP_FLOOR:
  case FU_OP_CEIL:
  case FU_OP_ROUND:
  case FU_OP_TRUNC: return a[0];
  case FU_OP_ABS: return isel(x, LLVMIntSLT, a[0], zero, LLVMBuildNeg(B, a[0], ""), a[0]);
  case FU_OP_NEG: return LLVMBuildNeg(B, a[0], "");
  case FU_OP_RELU: return isel(x, LLVMIntSLT, a[0], zero, zero, a[0]);
  case FU_OP_SIGN: {
    LLVMValueRef pos = LLVMBuildZExt(B, LLVMBuildICmp(B, LLVMIntSGT, a[0], zero, ""), x->T, "");
    LLVMValueRef neg = LLVMBuildZExt(B, LLVMBuildICmp(B, LLVMIntSLT, a[0], zero, ""), x->T, "");
    return LLVMBuildSub(B, pos, neg, "");
  }
  case FU_OP_BITWISE_NOT: return LLVMBuildNot(B, a[0], "");
  case FU_OP_ADD: return LLVMBuildAdd(B, a[0], a[1], "");
  case FU_OP_SUB: return LLVMBuildSub(B, a[0], a[1], "");
  case FU_OP_MUL: return LLVMBuildMul(B, a[0], a[1], "");
  case FU_OP_DIV: return LLVMBuildSDiv(B, a[0], a[1], "");
  case FU_OP_FMOD: return LLVMBuildSRem(B, a[0], a[1], "");
  case FU_OP_REMAINDER: {
    LLVMValueRef r = LLVMBuildSRem(B, a[0], a[1], "");
    LLVMValueRef nz = LLVMBuildICmp(B, LLVMIntNE, r, zero, "");
    LLVMValueRef diff = LLVMBuildICmp(B, LLVMIntSLT, LLVMBuildXor(B, r, a[1], ""), zero, "");
    LLVMValueRef fix = LLVMBuildAnd(B, nz, diff, "");
    return LLVMBuildSelect(B, fix, LLVMBuildAdd(B, r, a[1], ""), r, "");
  }
  case FU_OP_POW: {
    LLVMValueRef fn = ipow_function(x);
    return LLVMBuildCall2(B, LLVMGlobalGetValueType(fn), fn, a, 2, "");
  }
  case FU_OP_MAXIMUM: return isel(x, LLVMIntSGT, a[0], a[1], a[0], a[1]);
  case FU_OP_MINIMUM: return isel(x, LLVMIntSLT, a[0], a[1], a[0], a[1]);
  case FU_OP_BITWISE_AND: return LLVMBuildAnd(B, a[0], a[1], "");
  case FU_OP_BITWISE_OR: return LLVMBuildOr(B, a[0], a[1], "");
  case FU_OP_BITWISE_XOR: return LLVMBuildXor(B, a[0], a[1], "");
  case FU_OP_FRAC: return zero;
  case FU_OP_BITWISE_LEFT_SHIFT:
  case FU_OP_BITWISE_RIGHT_SHIFT:
  case FU_OP_LOGICAL_RIGHT_SHIFT: {
    /* PyTorch's rule: a count outside [0, bits) gives 0 (left, logical
     * right) or the sign (right); LLVM's shifts would be poison there.  The
     * register is the result's own width, so lshr fills in zeros at it. */
    unsigned bits = LLVMGetIntTypeWidth(x->T);
    LLVMValueRef w = iconst(x, bits);
    LLVMValueRef out = LLVMBuildICmp(B, LLVMIntUGE, a[1], w, ""); /* negative counts are huge unsigned */
    LLVMValueRef safe = LLVMBuildSelect(B, out, zero, a[1], "");
    if (op == FU_OP_BITWISE_LEFT_SHIFT) return LLVMBuildSelect(B, out, zero, LLVMBuildShl(B, a[0], safe, ""), "");
    if (op == FU_OP_LOGICAL_RIGHT_SHIFT) return LLVMBuildSelect(B, out, zero, LLVMBuildLShr(B, a[0], safe, ""), "");
    LLVMValueRef sign = LLVMBuildAShr(B, a[0], iconst(x, bits - 1), "");
    return LLVMBuildSelect(B, out, sign, LLVMBuildAShr(B, a[0], safe, ""), "");
  }
  case FU_OP_GCD: {
    LLVMValueRef fn = gcd_function(x);
    return LLVMBuildCall2(B, LLVMGlobalGetValueType(fn), fn, a, 2, "");
  }
  case FU_OP_CLAMP: {
    LLVMValueRef lo = isel(x, LLVMIntSLT, a[0], a[1], a[1], a[0]);
    return isel(x, LLVMIntSGT, lo, a[2], a[2], lo);
  }
  default: return NULL;
  }
}

/* bool arithmetic as PyTorch defines it on bool tensors (fu_op_bool_form) */
static LLVMValueRef bool_op(const mctx *x, fu_op_kind op, LLVMValueRef *a, uint32_t n) {
  LLVMBuilderRef B = x->B;
  (void)n;
  switch (fu_op_bool_form(op)) {
  case FU_BOOL_IDENTITY: return a[0];
  case FU_BOOL_NOT: return LLVMBuildNot(B, a[0], "");
  case FU_BOOL_OR: return LLVMBuildOr(B, a[0], a[1], "");
  case FU_BOOL_AND: return LLVMBuildAnd(B, a[0], a[1], "");
  case FU_BOOL_XOR: return LLVMBuildXor(B, a[0], a[1], "");
  case FU_BOOL_CLAMP: return LLVMBuildAnd(B, LLVMBuildOr(B, a[0], a[1], ""), a[2], "");
  case FU_BOOL_FALSE: return LLVMConstNull(x->T);
  case FU_BOOL_AND_NOT: return LLVMBuildAnd(B, a[0], LLVMBuildNot(B, a[1], ""), "");
  case FU_BOOL_NONE: return NULL;
  }
  return NULL;
}

LLVMValueRef bk_math(bk_module *m, fu_op_kind op, fu_dtype result, const fu_dtype *at, LLVMValueRef *av,
                     uint32_t n_args) {
  const char *opname = fu_op_info_of(op)->name;
  LLVMValueRef r = NULL;
  if (op == FU_OP_CAST || (op == FU_OP_SET && n_args == 1)) return bk_convert(m, av[0], at[0], result);
  if (fu_op_info_of(op)->cls == FU_OC_RNG && n_args == 5) return bk_rng(m, op, result, av);
  if (fu_op_has(op, FU_OF_BOOL_RESULT)) {
    r = bool_result_op(m, op, at, av, n_args);
    if (r) return bk_convert(m, r, FU_DT_BOOL, result);
  } else {
    mctx x = {m, m->B, bk_compute_dtype(result), NULL};
    x.T = bk_reg_type(m, x.C);
    LLVMValueRef args[3];
    uint32_t first = 0;
    if (op == FU_OP_WHERE) {
      LLVMValueRef c = bk_to_bool(m, av[0], at[0]);
      LLVMValueRef a = bk_convert(m, av[1], at[1], x.C);
      LLVMValueRef b = bk_convert(m, av[2], at[2], x.C);
      r = LLVMBuildSelect(m->B, c, a, b, "");
      return bk_convert(m, r, x.C, result);
    }
    if (n_args > 3) n_args = 3;
    for (uint32_t i = first; i < n_args; i++) args[i] = bk_convert(m, av[i], at[i], x.C);
    if (fu_dtype_is_float(x.C))
      r = float_op(&x, op, args, n_args);
    else if (fu_dtype_is_int(x.C))
      r = int_op(&x, op, args, n_args);
    else
      r = bool_op(&x, op, args, n_args);
    if (r) return bk_convert(m, r, x.C, result);
  }
  if (!m->failed)
    bk_error(m->be, "'%s' with a %s result is not supported by the backend", opname, fu_dtype_name(result));
  m->failed = true;
  return NULL;
}
