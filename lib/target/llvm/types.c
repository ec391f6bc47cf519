/* fuser backend: dtypes as LLVM types, conversions, intrinsic calls.
 *
 * Registers hold bool as i1, f16 as half and bf16 as bfloat; memory holds
 * bool as one byte.  Arithmetic on f16/bf16 happens in f32 (as PyTorch's
 * CUDA kernels do), and conversions between a 16-bit float and anything but
 * f32 go through f32, which is both what c10::Half/BFloat16 do and what
 * every sm from sm_70 can select. */
#include <string.h>

#include "internal.h"

LLVMTypeRef bk_reg_type(bk_module *m, fu_dtype t) {
  switch (t) {
  case FU_DT_F64: return m->t_f64;
  case FU_DT_F32: return m->t_f32;
  case FU_DT_F16: return m->t_f16;
  case FU_DT_BF16: return m->t_bf16;
  case FU_DT_I64: return m->t_i64;
  case FU_DT_I32: return m->t_i32;
  case FU_DT_BOOL: return m->t_i1;
  default: return m->t_i32;
  }
}

LLVMTypeRef bk_mem_type(bk_module *m, fu_dtype t) { return t == FU_DT_BOOL ? m->t_i8 : bk_reg_type(m, t); }

fu_dtype bk_compute_dtype(fu_dtype t) { return t == FU_DT_F16 || t == FU_DT_BF16 ? FU_DT_F32 : t; }

static bool is16(fu_dtype t) { return t == FU_DT_F16 || t == FU_DT_BF16; }

LLVMValueRef bk_to_bool(bk_module *m, LLVMValueRef v, fu_dtype from) {
  if (from == FU_DT_BOOL) return v;
  if (fu_dtype_is_float(from)) {
    if (is16(from)) v = LLVMBuildFPExt(m->B, v, m->t_f32, "");
    /* une: NaN is true, as in C++ and PyTorch */
    return LLVMBuildFCmp(m->B, LLVMRealUNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
  }
  return LLVMBuildICmp(m->B, LLVMIntNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
}

LLVMValueRef bk_convert(bk_module *m, LLVMValueRef v, fu_dtype from, fu_dtype to) {
  if (from == to) return v;
  if (to == FU_DT_BOOL) return bk_to_bool(m, v, from);
  LLVMTypeRef tt = bk_reg_type(m, to);
  if (from == FU_DT_BOOL) {
    if (fu_dtype_is_int(to)) return LLVMBuildZExt(m->B, v, tt, "");
    if (is16(to)) return LLVMBuildFPTrunc(m->B, LLVMBuildUIToFP(m->B, v, m->t_f32, ""), tt, "");
    return LLVMBuildUIToFP(m->B, v, tt, "");
  }
  if (fu_dtype_is_int(from)) {
    if (fu_dtype_is_int(to)) return LLVMBuildIntCast2(m->B, v, tt, 1, "");
    if (is16(to)) return LLVMBuildFPTrunc(m->B, LLVMBuildSIToFP(m->B, v, m->t_f32, ""), tt, "");
    return LLVMBuildSIToFP(m->B, v, tt, "");
  }
  /* from a float */
  if (is16(from)) {
    v = LLVMBuildFPExt(m->B, v, m->t_f32, "");
    from = FU_DT_F32;
    if (to == FU_DT_F32) return v;
  }
  /* toward zero, saturating, NaN to 0: defined, as the interpreter (convert.c) */
  if (fu_dtype_is_int(to)) return bk_call_intrinsic(m, "llvm.fptosi.sat", (LLVMTypeRef[]){tt, LLVMTypeOf(v)}, 2, &v, 1);
  if (is16(to)) {
    if (from == FU_DT_F64) v = LLVMBuildFPTrunc(m->B, v, m->t_f32, "");
    return LLVMBuildFPTrunc(m->B, v, tt, "");
  }
  if (from == FU_DT_F32 && to == FU_DT_F64) return LLVMBuildFPExt(m->B, v, tt, "");
  if (from == FU_DT_F64 && to == FU_DT_F32) return LLVMBuildFPTrunc(m->B, v, tt, "");
  return v;
}

LLVMValueRef bk_call_intrinsic(bk_module *m, const char *name, LLVMTypeRef *overload, unsigned n_overload,
                               LLVMValueRef *args, unsigned n_args) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  if (id == 0) {
    bk_error(m->be, "LLVM 19 has no intrinsic '%s'", name);
    m->failed = true;
    return NULL;
  }
  LLVMValueRef decl = LLVMGetIntrinsicDeclaration(m->M, id, overload, n_overload);
  LLVMTypeRef fty = LLVMIntrinsicGetType(m->C, id, overload, n_overload);
  return LLVMBuildCall2(m->B, fty, decl, args, n_args, "");
}

void bk_add_enum_attr(bk_module *m, LLVMValueRef fn, unsigned idx, const char *name, uint64_t val) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  if (kind) LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(m->C, kind, val));
}
