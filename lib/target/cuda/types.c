/* fuser cuda target: dtypes as C types, conversions and literals.
 *
 * Registers hold f16 as __half and bf16 as __nv_bfloat16, and arithmetic
 * on them happens in float, rounded back after every op, as the LLVM path
 * does.  Memory holds bool as one byte (unsigned char), read as `!= 0`.
 * Conversions follow the LLVM path (lib/target/llvm/types.c) exactly:
 * float to int truncates toward zero, saturating (CUDA's __float2int_rz
 * family, PTX cvt.rzi), NaN giving 0 (tested: the intrinsics gave INT_MIN
 * for it); a 16-bit float goes to and from
 * anything but f32 through f32; to bool is `!= 0` (NaN is true). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const char *cu_reg_type(fu_dtype t) {
  switch (t) {
  case FU_DT_F64: return "double";
  case FU_DT_F32: return "float";
  case FU_DT_F16: return "__half";
  case FU_DT_BF16: return "__nv_bfloat16";
  case FU_DT_I64: return "long long";
  case FU_DT_I32: return "int";
  case FU_DT_BOOL: return "bool";
  case FU_DT_NONE:
  case FU_DT_COUNT: break;
  }
  return "int";
}

const char *cu_mem_type(fu_dtype t) { return t == FU_DT_BOOL ? "unsigned char" : cu_reg_type(t); }

fu_dtype cu_compute_dtype(fu_dtype t) { return t == FU_DT_F16 || t == FU_DT_BF16 ? FU_DT_F32 : t; }

void cu_use_dtype(cu_module *m, fu_dtype t) {
  if (t == FU_DT_F16) m->helpers |= CU_H_FP16;
  if (t == FU_DT_BF16) m->helpers |= CU_H_BF16;
}

static bool is16(fu_dtype t) { return t == FU_DT_F16 || t == FU_DT_BF16; }

/* `(T)expr`, parenthesizing expr unless atomic. */
static void cast(fu_strbuf *sb, const char *type, const char *expr, bool atomic) {
  fu_strbuf_printf(sb, atomic ? "(%s)%s" : "(%s)(%s)", type, expr);
}

/* f(expr) */
static void call(fu_strbuf *sb, const char *fn, const char *expr) { fu_strbuf_printf(sb, "%s(%s)", fn, expr); }

/* f32 (an expression) to a 16-bit float, rounding to nearest even. */
static void from_f32_to16(fu_strbuf *sb, fu_dtype to, const char *expr) {
  call(sb, to == FU_DT_F16 ? "__float2half_rn" : "__float2bfloat16_rn", expr);
}

bool cu_convert(cu_module *m, fu_strbuf *sb, const char *expr, bool atomic, fu_dtype from, fu_dtype to) {
  cu_use_dtype(m, from);
  cu_use_dtype(m, to);
  if (from == to) {
    fu_strbuf_printf(sb, atomic ? "%s" : "(%s)", expr);
    return true;
  }
  fu_strbuf tmp;
  fu_strbuf_init(&tmp, m->alloc);
  if (is16(from)) {
    /* to f32 first, then on from there */
    call(&tmp, from == FU_DT_F16 ? "__half2float" : "__bfloat162float", expr);
    bool safe = true;
    if (to == FU_DT_F32)
      fu_strbuf_append(sb, tmp.data, tmp.len);
    else
      safe = cu_convert(m, sb, tmp.data ? tmp.data : "", true, FU_DT_F32, to);
    fu_strbuf_free(&tmp);
    return safe;
  }
  switch (to) {
  case FU_DT_BOOL:
    if (fu_dtype_is_float(from))
      fu_strbuf_printf(sb, atomic ? "%s != %s" : "(%s) != %s", expr, from == FU_DT_F64 ? "0.0" : "0.0f");
    else
      fu_strbuf_printf(sb, atomic ? "%s != 0" : "(%s) != 0", expr);
    fu_strbuf_free(&tmp);
    return false; /* a comparison: an operand needs parentheses */
  case FU_DT_F16:
  case FU_DT_BF16:
    /* ints, bool and f64 round to f32 first, as the LLVM path does */
    if (from == FU_DT_F32) {
      from_f32_to16(sb, to, expr);
    } else {
      cast(&tmp, "float", expr, atomic);
      from_f32_to16(sb, to, tmp.data ? tmp.data : "");
    }
    break;
  case FU_DT_I32:
  case FU_DT_I64:
    if (fu_dtype_is_float(from)) {
      /* toward zero, saturating (cvt.rzi), NaN to 0: tested here, as
       * __double2int_rz(NaN) gave INT_MIN through NVRTC on an H200 */
      const char *fn = from == FU_DT_F64 ? (to == FU_DT_I32 ? "__double2int_rz" : "__double2ll_rz")
                                         : (to == FU_DT_I32 ? "__float2int_rz" : "__float2ll_rz");
      fu_strbuf_printf(sb, atomic ? "(%s != %s ? %s : " : "((%s) != (%s) ? %s : ", expr, expr,
                       to == FU_DT_I32 ? "0" : "0LL");
      call(sb, fn, expr);
      fu_strbuf_puts(sb, ")");
    } else {
      cast(sb, cu_reg_type(to), expr, atomic);
    }
    break;
  case FU_DT_F32:
  case FU_DT_F64:
    /* bool is 0 or 1; ints round to nearest; f64 <-> f32 rounds or widens */
    cast(sb, cu_reg_type(to), expr, atomic);
    break;
  case FU_DT_NONE:
  case FU_DT_COUNT: fu_strbuf_puts(sb, expr); break;
  }
  fu_strbuf_free(&tmp);
  return true;
}

void cu_float_literal(fu_strbuf *sb, fu_dtype t, double v) {
  bool f32 = t != FU_DT_F64;
  if (f32) v = (double)(float)v; /* the constant's own rounding, as LLVMConstReal's */
  if (isnan(v) || isinf(v)) {
    /* CUDA C has no literal for them: the bits */
    if (f32) {
      float f = (float)v;
      uint32_t bits;
      memcpy(&bits, &f, sizeof bits);
      fu_strbuf_printf(sb, "__int_as_float(0x%08x)", bits);
    } else {
      uint64_t bits;
      memcpy(&bits, &v, sizeof bits);
      fu_strbuf_printf(sb, "__longlong_as_double(0x%016llxLL)", (unsigned long long)bits);
    }
    return;
  }
  char buf[64];
  /* the shortest text that reads back as the same float (or double) */
  if (f32) {
    for (int p = 6; p <= 9; p++) {
      snprintf(buf, sizeof buf, "%.*g", p, v);
      if ((float)strtod(buf, NULL) == (float)v) break;
    }
  } else {
    for (int p = 15; p <= 17; p++) {
      snprintf(buf, sizeof buf, "%.*g", p, v);
      if (strtod(buf, NULL) == v) break;
    }
  }
  if (!strpbrk(buf, ".e")) strcat(buf, ".0");
  fu_strbuf_printf(sb, "%s%s", buf, f32 ? "f" : "");
}

void cu_literal(cu_module *m, fu_strbuf *sb, fu_dtype t, fu_scalar_value v) {
  cu_use_dtype(m, t);
  switch (t) {
  case FU_DT_BOOL: fu_strbuf_puts(sb, v.b ? "true" : "false"); return;
  case FU_DT_I32:
    if (v.i == INT32_MIN)
      fu_strbuf_puts(sb, "(-2147483647 - 1)");
    else
      fu_strbuf_printf(sb, "%lld", (long long)v.i);
    return;
  case FU_DT_I64:
    if (v.i == INT64_MIN)
      fu_strbuf_puts(sb, "(-9223372036854775807LL - 1)");
    else
      fu_strbuf_printf(sb, "%lldLL", (long long)v.i);
    return;
  case FU_DT_F32:
  case FU_DT_F64: cu_float_literal(sb, t, v.f); return;
  case FU_DT_F16:
  case FU_DT_BF16:
    /* one rounding from the double, as the LLVM path's constant */
    fu_strbuf_puts(sb, t == FU_DT_F16 ? "__double2half(" : "__double2bfloat16(");
    cu_float_literal(sb, FU_DT_F64, v.f);
    fu_strbuf_putc(sb, ')');
    return;
  case FU_DT_NONE:
  case FU_DT_COUNT: break;
  }
  fu_strbuf_puts(sb, "0");
}
