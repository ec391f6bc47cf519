/* fuser cuda target: the pointwise ops of ops.def as CUDA C expressions.
 *
 * The semantics are the LLVM path's (lib/target/llvm/math.c), which follow
 * PyTorch's CUDA kernels: NaN propagates through maximum/minimum/clamp/relu,
 * int div and fmod truncate, remainder takes the divisor's sign, bool + is
 * `or`.  A float op of ops.def's MATH column calls CUDA's function of that
 * name (expf, tanhf, ...; exp, tanh, ... for f64), the same libdevice code
 * the LLVM path inlines; sqrt is __fsqrt_rn (IEEE rounding whatever the
 * flags).  Int add, sub, mul, neg and abs go through unsigned arithmetic:
 * they wrap as in the LLVM path, where signed overflow in C would be
 * undefined.  The module is compiled with --fmad=false, since the LLVM path
 * contracts no mul and add into an fma. */
#include <string.h>

#include "internal.h"

typedef struct mx {
  cu_kernel *kc;
  fu_strbuf *e;   /* the expression */
  fu_dtype C;     /* the compute dtype */
  const char *a[3];
  bool safe;      /* e needs no parentheses as an operand */
} mx;

/* Operand i of `in` converted to `to`, as an operand-safe text in kc->ops[i]. */
static const char *operand(cu_kernel *kc, uint32_t i, const fu_kval *v, fu_dtype to) {
  fu_strbuf *o = &kc->ops[i];
  fu_strbuf_clear(o);
  fu_strbuf tmp;
  fu_strbuf_init(&tmp, kc->mod->alloc);
  if (cu_convert(kc->mod, &tmp, cu_name(kc, v), true, v->dtype, to))
    fu_strbuf_append(o, tmp.data ? tmp.data : "", tmp.len);
  else
    fu_strbuf_printf(o, "(%s)", tmp.data ? tmp.data : "");
  fu_strbuf_free(&tmp);
  return o->data ? o->data : "";
}

static void lit(mx *x, double v) { cu_float_literal(x->e, x->C, v); }

static void put(mx *x, const char *s) { fu_strbuf_puts(x->e, s); }

/* `a CMP 0 ? t` (the caller writes the else part). */
static void test_then(mx *x, const char *a, const char *cmp, double t) {
  fu_strbuf_printf(x->e, "%s %s ", a, cmp);
  lit(x, 0.0);
  put(x, " ? ");
  lit(x, t);
}

/* f(a, ...) with the f32 name for f32 (expf) and the plain one for f64. */
static void math_call(mx *x, const char *base, uint32_t n) {
  fu_strbuf_printf(x->e, "%s%s(", base, x->C == FU_DT_F32 ? "f" : "");
  for (uint32_t i = 0; i < n; i++) fu_strbuf_printf(x->e, "%s%s", i ? ", " : "", x->a[i]);
  fu_strbuf_putc(x->e, ')');
  x->safe = true;
}

static void helper_call(mx *x, const char *fn, uint32_t n, unsigned helper) {
  x->kc->mod->helpers |= helper;
  fu_strbuf_printf(x->e, "%s(", fn);
  for (uint32_t i = 0; i < n; i++) fu_strbuf_printf(x->e, "%s%s", i ? ", " : "", x->a[i]);
  fu_strbuf_putc(x->e, ')');
  x->safe = true;
}

static void binop(mx *x, const char *op) { fu_strbuf_printf(x->e, "%s %s %s", x->a[0], op, x->a[1]); }

/* The f32 reciprocal and exp take the LLVM path's fast
 * sequences (lib/target/llvm/fast_math.c), unless the fast paths are off:
 * the two backends stay bit-identical. */
static bool fast_f32(const mx *x) { return x->C == FU_DT_F32 && !x->kc->mod->no_fast_paths; }

/* exp(sign a) as text (sign "" or "-"): fu_exp on the fast paths (f32),
 * CUDA's otherwise. */
static void exp_text(mx *x, const char *sign, const char *a) {
  const char *fn = fast_f32(x) ? "fu_exp" : x->C == FU_DT_F32 ? "expf" : "exp";
  if (fast_f32(x)) x->kc->mod->helpers |= CU_H_EXP;
  fu_strbuf_printf(x->e, "%s(%s%s)", fn, sign, a);
}

static bool float_op(mx *x, fu_op_kind op, uint32_t n) {
  const char *m = fu_op_info_of(op)->math;
  if (op == FU_OP_EXP) {
    exp_text(x, "", x->a[0]);
    x->safe = true;
    return true;
  }
  if (op == FU_OP_EXP2 && fast_f32(x)) {
    helper_call(x, "fu_exp2", 1, CU_H_EXP2);
    return true;
  }
  if (m && n == (uint32_t)fu_op_info_of(op)->num_operands) {
    math_call(x, m, n);
    return true;
  }
  const char *a = x->a[0];
  switch (op) {
  case FU_OP_ROUND: math_call(x, "rint", 1); return true; /* half to even, as torch.round */
  case FU_OP_ERFINV: math_call(x, "erfinv", 1); return true;
  case FU_OP_ERFCINV: math_call(x, "erfcinv", 1); return true;
  case FU_OP_FRAC: /* torch.frac: x - trunc(x) */
    fu_strbuf_printf(x->e, "%s - ", a);
    math_call(x, "trunc", 1);
    x->safe = false;
    return true;
  case FU_OP_RSQRT: math_call(x, "rsqrt", 1); return true;
  case FU_OP_SQRT:
    fu_strbuf_printf(x->e, "%s(%s)", x->C == FU_DT_F32 ? "__fsqrt_rn" : "__dsqrt_rn", a);
    x->safe = true;
    return true;
  case FU_OP_SET: put(x, a); x->safe = true; return true;
  case FU_OP_ABS: math_call(x, "fabs", 1); return true;
  case FU_OP_NEG: fu_strbuf_printf(x->e, "-%s", a); return true;
  case FU_OP_RECIPROCAL:
    if (fast_f32(x)) {
      helper_call(x, "fu_rcp", 1, CU_H_RCP);
      return true;
    }
    lit(x, 1.0);
    fu_strbuf_printf(x->e, " / %s", a);
    return true;
  case FU_OP_SIGMOID:
  case FU_OP_SILU: {
    bool rcp = op == FU_OP_SIGMOID && fast_f32(x); /* fu_rcp(1 + exp(-x)) */
    if (rcp) {
      x->kc->mod->helpers |= CU_H_RCP;
      put(x, "fu_rcp(");
    } else {
      if (op == FU_OP_SILU) put(x, a);
      else lit(x, 1.0);
      put(x, " / (");
    }
    lit(x, 1.0);
    put(x, " + ");
    exp_text(x, "-", a);
    put(x, ")");
    x->safe = rcp;
    return true;
  }
  case FU_OP_RELU: /* NaN is not < 0: it stays */
    test_then(x, a, "<", 0.0);
    fu_strbuf_printf(x->e, " : %s", a);
    return true;
  case FU_OP_SIGN: /* (x > 0) - (x < 0), as PyTorch: NaN and -0.0 give +0.0 */
    test_then(x, a, ">", 1.0);
    put(x, " : ");
    test_then(x, a, "<", -1.0);
    put(x, " : ");
    lit(x, 0.0);
    return true;
  case FU_OP_ADD: binop(x, "+"); return true;
  case FU_OP_SUB: binop(x, "-"); return true;
  case FU_OP_MUL: binop(x, "*"); return true;
  case FU_OP_DIV:
    /* __fdiv_rn/__ddiv_rn are `/` as compiled here (div.rn), but a divisor
     * that folds to a constant 0 is no front-end error (#39) */
    fu_strbuf_printf(x->e, "%s(%s, %s)", x->C == FU_DT_F64 ? "__ddiv_rn" : "__fdiv_rn", x->a[0], x->a[1]);
    x->safe = true;
    return true;
  case FU_OP_REMAINDER: helper_call(x, "fu_remainder", 2, CU_H_REM_F); return true;
  case FU_OP_MAXIMUM: helper_call(x, "fu_maximum", 2, CU_H_MAXMIN); return true;
  case FU_OP_MINIMUM: helper_call(x, "fu_minimum", 2, CU_H_MAXMIN); return true;
  case FU_OP_CLAMP: helper_call(x, "fu_clamp", 3, CU_H_CLAMP); return true;
  case FU_OP_LERP: helper_call(x, "fu_lerp", 3, CU_H_LERP); return true;
  default: return false;
  }
}

/* (T)((U)a OP (U)b): two's complement wrapping, as LLVM's add/sub/mul. */
static void wrap(mx *x, const char *op, const char *a, const char *b) {
  const char *T = x->C == FU_DT_I64 ? "long long" : "int";
  const char *U = x->C == FU_DT_I64 ? "unsigned long long" : "unsigned";
  if (a)
    fu_strbuf_printf(x->e, "(%s)((%s)%s %s (%s)%s)", T, U, a, op, U, b);
  else
    fu_strbuf_printf(x->e, "(%s)(0%s - (%s)%s)", T, x->C == FU_DT_I64 ? "ULL" : "u", U, b);
  x->safe = true;
}

static bool int_op(mx *x, fu_op_kind op) {
  const char *a = x->a[0], *b = x->a[1];
  bool i64 = x->C == FU_DT_I64;
  switch (op) {
  case FU_OP_SET:
  case FU_OP_FLOOR:
  case FU_OP_CEIL:
  case FU_OP_ROUND:
  case FU_OP_TRUNC: put(x, a); x->safe = true; return true;
  case FU_OP_ABS:
    fu_strbuf_printf(x->e, "%s < 0 ? ", a);
    wrap(x, "-", NULL, a);
    fu_strbuf_printf(x->e, " : %s", a);
    x->safe = false;
    return true;
  case FU_OP_NEG: wrap(x, "-", NULL, a); return true;
  case FU_OP_RELU: fu_strbuf_printf(x->e, "%s < 0 ? 0 : %s", a, a); return true;
  case FU_OP_SIGN: fu_strbuf_printf(x->e, "%s(%s > 0) - (%s < 0)", i64 ? "(long long)" : "", a, a); return true;
  case FU_OP_BITWISE_NOT: fu_strbuf_printf(x->e, "~%s", a); return true;
  case FU_OP_ADD: wrap(x, "+", a, b); return true;
  case FU_OP_SUB: wrap(x, "-", a, b); return true;
  case FU_OP_MUL: wrap(x, "*", a, b); return true;
  case FU_OP_DIV: binop(x, "/"); return true;
  case FU_OP_FMOD: binop(x, "%"); return true;
  case FU_OP_REMAINDER: helper_call(x, "fu_remainder", 2, CU_H_REM_I); return true;
  case FU_OP_POW: helper_call(x, "fu_ipow", 2, CU_H_IPOW); return true;
  case FU_OP_MAXIMUM: fu_strbuf_printf(x->e, "%s > %s ? %s : %s", a, b, a, b); return true;
  case FU_OP_MINIMUM: fu_strbuf_printf(x->e, "%s < %s ? %s : %s", a, b, a, b); return true;
  case FU_OP_BITWISE_AND: binop(x, "&"); return true;
  case FU_OP_BITWISE_OR: binop(x, "|"); return true;
  case FU_OP_BITWISE_XOR: binop(x, "^"); return true;
  case FU_OP_CLAMP: helper_call(x, "fu_clamp", 3, CU_H_CLAMP); return true;
  case FU_OP_FRAC: fu_strbuf_printf(x->e, "%s - %s", a, a); return true; /* 0, the operand kept in use */
  case FU_OP_GCD: helper_call(x, "fu_gcd", 2, CU_H_INT_BITS); return true;
  case FU_OP_BITWISE_LEFT_SHIFT:
  case FU_OP_BITWISE_RIGHT_SHIFT:
  case FU_OP_LOGICAL_RIGHT_SHIFT:
    fu_strbuf_printf(x->e, "%s<%s, %s>",
                     op == FU_OP_BITWISE_LEFT_SHIFT    ? "fu_shl"
                     : op == FU_OP_BITWISE_RIGHT_SHIFT ? "fu_shr"
                                                       : "fu_lshr",
                     i64 ? "long long" : "int", i64 ? "unsigned long long" : "unsigned");
    x->kc->mod->helpers |= CU_H_INT_BITS;
    fu_strbuf_printf(x->e, "(%s, %s)", a, b);
    x->safe = true;
    return true;
  default: return false;
  }
}

/* bool arithmetic as PyTorch defines it on bool tensors (fu_op_bool_form) */
static bool bool_op(mx *x, fu_op_kind op) {
  const char *a = x->a[0];
  switch (fu_op_bool_form(op)) {
  case FU_BOOL_IDENTITY: put(x, a); x->safe = true; return true;
  case FU_BOOL_NOT: fu_strbuf_printf(x->e, "!%s", a); return true;
  case FU_BOOL_OR: binop(x, "|"); return true;
  case FU_BOOL_AND: binop(x, "&"); return true;
  case FU_BOOL_XOR: binop(x, "^"); return true;
  case FU_BOOL_CLAMP: fu_strbuf_printf(x->e, "(%s | %s) & %s", a, x->a[1], x->a[2]); return true;
  case FU_BOOL_FALSE: put(x, "false"); x->safe = true; return true;
  case FU_BOOL_AND_NOT: fu_strbuf_printf(x->e, "%s & !%s", a, x->a[1]); return true;
  case FU_BOOL_NONE: return false;
  }
  return false;
}

/* Ops whose result is bool whatever the operands: computed on the
 * operands' promoted dtype. */
static bool bool_result_op(mx *x, const fu_kinst *in) {
  cu_kernel *kc = x->kc;
  fu_op_kind op = in->u.math;
  const fu_kval *const *v = (const fu_kval *const *)in->args;
  switch (op) {
  case FU_OP_LOGICAL_NOT: fu_strbuf_printf(x->e, "!%s", operand(kc, 0, v[0], FU_DT_BOOL)); return true;
  case FU_OP_LOGICAL_AND:
  case FU_OP_LOGICAL_OR:
    if (in->n_args != 2) return false;
    fu_strbuf_printf(x->e, "%s %s ", operand(kc, 0, v[0], FU_DT_BOOL), op == FU_OP_LOGICAL_AND ? "&&" : "||");
    put(x, operand(kc, 1, v[1], FU_DT_BOOL));
    return true;
  case FU_OP_ISREAL: /* every real dtype: true, the operand kept in use */
    fu_strbuf_printf(x->e, "((void)%s, true)", cu_name(kc, v[0]));
    x->safe = true;
    return true;
  case FU_OP_SIGNBIT:
  case FU_OP_ISNEGINF:
  case FU_OP_ISPOSINF: {
    fu_dtype t = v[0]->dtype;
    if (!fu_dtype_is_float(t)) {
      /* an int's sign; a bool has none, and no int is infinite */
      if (op == FU_OP_SIGNBIT && t != FU_DT_BOOL)
        fu_strbuf_printf(x->e, "%s < 0", cu_name(kc, v[0]));
      else
        fu_strbuf_printf(x->e, "((void)%s, false)", cu_name(kc, v[0]));
      return true;
    }
    const char *c = operand(kc, 0, v[0], cu_compute_dtype(t));
    if (op == FU_OP_SIGNBIT) { /* the sign bit itself: -0.0 and -NaN count */
      fu_strbuf_printf(x->e, "signbit(%s)", c);
      x->safe = true;
    } else {
      fu_strbuf_printf(x->e, "%s == %sINFINITY", c, op == FU_OP_ISNEGINF ? "-" : "");
    }
    return true;
  }
  case FU_OP_ISNAN:
  case FU_OP_ISINF:
  case FU_OP_ISFINITE: {
    const char *fn = op == FU_OP_ISNAN ? "isnan" : op == FU_OP_ISINF ? "isinf" : "isfinite";
    if (!fu_dtype_is_float(v[0]->dtype)) {
      /* an int or bool is finite: false, false and true, written with the
       * operand so that it stays used */
      const char *a = cu_name(kc, v[0]);
      fu_strbuf_printf(x->e, "%s %s %s", a, op == FU_OP_ISFINITE ? "==" : "!=", a);
      return true;
    } else {
      fu_strbuf_printf(x->e, "%s(%s)", fn, operand(kc, 0, v[0], cu_compute_dtype(v[0]->dtype)));
    }
    x->safe = true;
    return true;
  }
  default: break;
  }
  if (in->n_args != 2) return false;
  const char *cmp = NULL;
  switch (op) {
  case FU_OP_EQ: cmp = "=="; break;
  case FU_OP_NE: cmp = "!="; break; /* unordered: NaN != x */
  case FU_OP_LT: cmp = "<"; break;
  case FU_OP_LE: cmp = "<="; break;
  case FU_OP_GT: cmp = ">"; break;
  case FU_OP_GE: cmp = ">="; break;
  default: return false;
  }
  fu_dtype C = cu_compute_dtype(fu_dtype_promote(v[0]->dtype, v[1]->dtype));
  fu_strbuf_printf(x->e, "%s %s ", operand(kc, 0, v[0], C), cmp);
  put(x, operand(kc, 1, v[1], C));
  return true;
}

bool cu_math(cu_kernel *kc, const fu_kinst *in) {
  cu_module *m = kc->mod;
  fu_op_kind op = in->u.math;
  const fu_kval *res = in->results[0];
  fu_dtype result = res->dtype;
  fu_strbuf_clear(&kc->expr);
  if (op == FU_OP_CAST || (op == FU_OP_SET && in->n_args == 1)) {
    cu_convert(m, &kc->expr, cu_name(kc, in->args[0]), true, in->args[0]->dtype, result);
    return true;
  }
  fu_strbuf body;
  fu_strbuf_init(&body, m->alloc);
  mx x = {kc, &body, FU_DT_BOOL, {NULL, NULL, NULL}, false};
  bool ok;
  if (fu_op_info_of(op)->cls == FU_OC_RNG && in->n_args == 5) {
    /* fu_rng_f32/f64 of the prelude; a 16-bit result comes back exact in f32 */
    m->helpers |= CU_H_RNG | CU_H_FP16 | CU_H_BF16;
    x.C = cu_compute_dtype(result);
    int narrow = result == FU_DT_F16 ? 1 : result == FU_DT_BF16 ? 2 : 0;
    if (x.C == FU_DT_F64)
      fu_strbuf_printf(&body, "fu_rng_f64(%d", op == FU_OP_NORMAL);
    else
      fu_strbuf_printf(&body, "fu_rng_f32(%d, %d", op == FU_OP_NORMAL, narrow);
    for (uint32_t i = 0; i < 5; i++)
      fu_strbuf_printf(&body, ", %s", operand(kc, i < 3 ? i : 0, in->args[i], i < 2 ? x.C : FU_DT_I64));
    fu_strbuf_putc(&body, ')');
    x.safe = true;
    ok = true;
  } else if (fu_op_has(op, FU_OF_BOOL_RESULT)) {
    ok = bool_result_op(&x, in);
  } else if (op == FU_OP_WHERE && in->n_args == 3) {
    x.C = cu_compute_dtype(result);
    fu_strbuf_printf(&body, "%s ? ", operand(kc, 0, in->args[0], FU_DT_BOOL));
    fu_strbuf_printf(&body, "%s : ", operand(kc, 1, in->args[1], x.C));
    fu_strbuf_puts(&body, operand(kc, 2, in->args[2], x.C));
    ok = true;
  } else {
    x.C = cu_compute_dtype(result);
    uint32_t n = in->n_args > 3 ? 3 : in->n_args;
    for (uint32_t i = 0; i < n; i++) x.a[i] = operand(kc, i, in->args[i], x.C);
    if (fu_dtype_is_float(x.C))
      ok = float_op(&x, op, n);
    else if (fu_dtype_is_int(x.C))
      ok = int_op(&x, op);
    else
      ok = bool_op(&x, op);
  }
  if (ok && x.C == result)
    fu_strbuf_append(&kc->expr, body.data ? body.data : "", body.len);
  else if (ok)
    cu_convert(m, &kc->expr, body.data ? body.data : "", x.safe, x.C, result);
  fu_strbuf_free(&body);
  if (!ok)
    cu_error(m, "kernel '@%s': '%s' with a %s result ('%%%s') is not supported by the cuda target", kc->k->name,
             fu_op_info_of(op)->name, fu_dtype_name(result), res->name ? res->name : "?");
  return ok;
}
