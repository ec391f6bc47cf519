/* fuser: the interpreter's pointwise kernels and the strided loop that
 * feeds them row chunks. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "interp_internal.h"

/* ---- float kernels (pw_float.inc, once per float kind) ------------------- */

/* erfinv (libm has none): an initial rational estimate refined by two
 * Newton steps on erf, in double, as PyTorch's CPU kernel refines its own;
 * +-1 give +-inf, |x| > 1 and NaN give NaN.  erfcinv(x) is erfinv(1 - x):
 * 1 - x is exact in double for every f32 input. */
static double erfinv_f64(double x) {
  if (isnan(x) || x < -1.0 || x > 1.0) return NAN;
  if (x == 1.0 || x == -1.0) return x * INFINITY;
  double w = -log((1.0 - x) * (1.0 + x)), y;
  if (w < 5.0) {
    w -= 2.5;
    y = 2.81022636e-08;
    y = 3.43273939e-07 + y * w;
    y = -3.5233877e-06 + y * w;
    y = -4.39150654e-06 + y * w;
    y = 0.00021858087 + y * w;
    y = -0.00125372503 + y * w;
    y = -0.00417768164 + y * w;
    y = 0.246640727 + y * w;
    y = 1.50140941 + y * w;
  } else {
    w = sqrt(w) - 3.0;
    y = -0.000200214257;
    y = 0.000100950558 + y * w;
    y = 0.00134934322 + y * w;
    y = -0.00367342844 + y * w;
    y = 0.00573950773 + y * w;
    y = -0.0076224613 + y * w;
    y = 0.00943887047 + y * w;
    y = 1.00167406 + y * w;
    y = 2.83297682 + y * w;
  }
  y *= x;
  for (int i = 0; i < 2; i++) y -= (erf(y) - x) / (1.1283791670955126 * exp(-y * y));
  return y;
}


#define FT float
#define FM(fn) fn##f
#define FNAME(x) f32_##x
#include "pw_float.inc"
#undef FT
#undef FM
#undef FNAME

#define FT double
#define FM(fn) fn
#define FNAME(x) f64_##x
#include "pw_float.inc"
#undef FT
#undef FM
#undef FNAME

/* ---- int kernels ----------------------------------------------------------- */

/* Two's-complement wrapping arithmetic without signed-overflow UB. */
static int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t wrap_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
static int64_t wrap_neg(int64_t a) { return (int64_t)(0 - (uint64_t)a); }

/* Integer power by squaring (wrapping).  A negative exponent gives 0 except
 * for bases 1 and -1, as nvFuser's and PyTorch's integer pow do. */
static int64_t ipow(int64_t base, int64_t e) {
  if (e < 0) {
    if (base == 1) return 1;
    if (base == -1) return (e & 1) ? -1 : 1;
    return 0;
  }
  uint64_t r = 1, b = (uint64_t)base;
  uint64_t ue = (uint64_t)e;
  while (ue) {
    if (ue & 1) r *= b;
    b *= b;
    ue >>= 1;
  }
  return (int64_t)r;
}

/* torch.bitwise_left_shift / right_shift on the 64-bit compute kind: a
 * count outside [0, 64) gives 0, or the sign for a right shift.  Narrower
 * ints come out right once the result is cut to their width (a left shift
 * by 32..63 leaves no low bits, a right shift of the sign-extended value
 * fills with the sign), as PyTorch's per-width rule gives. */
static int64_t shift_left(int64_t x, int64_t y) { return y < 0 || y >= 64 ? 0 : (int64_t)((uint64_t)x << y); }
static int64_t shift_right(int64_t x, int64_t y) { return y < 0 || y >= 64 ? (x < 0 ? -1 : 0) : x >> y; }

/* logical_right_shift needs the result's real width, which the 64-bit
 * compute kind hides: the sign-extended value is cut to `bits` (1 for bool,
 * which stays 0 / 1), shifted with zeros in, and sign-extended back from
 * `bits` so that the store's cut to the width keeps the pattern (only a
 * count of 0 leaves the top bit set).  An i64 count of an i32 result wraps
 * to i32 first, as the kernels convert every operand to the result dtype. */
static int64_t shift_right_logical(int64_t x, int64_t y, int bits, bool is_bool) {
  if (bits == 32) {
    uint64_t low = (uint64_t)y & UINT32_MAX;
    y = low > INT32_MAX ? (int64_t)low - (INT64_C(1) << 32) : (int64_t)low;
  }
  if (y < 0 || y >= bits) return 0;
  uint64_t mask = bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
  uint64_t u = ((uint64_t)x & mask) >> y;
  if (!is_bool && bits < 64 && (u >> (bits - 1)) & 1) u |= ~mask;
  return (int64_t)u;
}

/* torch.gcd: of the magnitudes, gcd(0, 0) = 0; INT64_MIN's magnitude wraps
 * as PyTorch's does. */
static int64_t gcd_i64(int64_t x, int64_t y) {
  uint64_t a = x < 0 ? 0 - (uint64_t)x : (uint64_t)x, b = y < 0 ? 0 - (uint64_t)y : (uint64_t)y;
  while (a != 0) {
    uint64_t c = a;
    a = b % a;
    b = c;
  }
  return (int64_t)b;
}

#define IMAP1(expr)                  \
  for (size_t i = 0; i < n; i++) {   \
    int64_t x = a[i];                \
    r[i] = (expr);                   \
  }                                  \
  return FU_PW_OK
#define IMAP2(expr)                  \
  for (size_t i = 0; i < n; i++) {   \
    int64_t x = a[i], y = b[i];      \
    r[i] = (expr);                   \
  }                                  \
  return FU_PW_OK

static fu_pw_err i64_apply(fu_op_kind k, fu_dtype rdt, void *const *in, void *out, size_t n) {
  bool bool_result = rdt == FU_DT_BOOL;
  int bits = bool_result ? 1 : rdt == FU_DT_I32 ? 32 : 64;
  const int64_t *a = in[0];
  const int64_t *b = in[1];
  const int64_t *c = in[2];
  int64_t *r = out;
  switch (k) {
  case FU_OP_ABS: IMAP1(x < 0 ? wrap_neg(x) : x);
  case FU_OP_NEG: IMAP1(wrap_neg(x));
  case FU_OP_RELU: IMAP1(x > 0 ? x : 0);
  case FU_OP_FLOOR:
  case FU_OP_CEIL:
  case FU_OP_ROUND:
  case FU_OP_TRUNC:
  case FU_OP_CAST:
  case FU_OP_SET: IMAP1(x);
  case FU_OP_SIGN: IMAP1(x > 0 ? 1 : x < 0 ? -1 : 0);
  case FU_OP_BITWISE_NOT:
    if (bool_result) {
      IMAP1(x == 0);
    }
    IMAP1(~x);
  case FU_OP_LOGICAL_NOT: IMAP1(x == 0);
  case FU_OP_ISNAN:
  case FU_OP_ISINF:
  case FU_OP_ISFINITE:
  case FU_OP_ISNEGINF:
  case FU_OP_ISPOSINF:
  case FU_OP_ISREAL:
    for (size_t i = 0; i < n; i++) r[i] = k == FU_OP_ISFINITE || k == FU_OP_ISREAL;
    return FU_PW_OK;
  case FU_OP_SIGNBIT: IMAP1(x < 0);
  case FU_OP_FRAC: IMAP1(x - x);
  case FU_OP_BITWISE_LEFT_SHIFT: IMAP2(shift_left(x, y));
  case FU_OP_BITWISE_RIGHT_SHIFT: IMAP2(shift_right(x, y));
  case FU_OP_LOGICAL_RIGHT_SHIFT: IMAP2(shift_right_logical(x, y, bits, bool_result));
  case FU_OP_GCD: IMAP2(gcd_i64(x, y));
  case FU_OP_ADD: IMAP2(wrap_add(x, y));
  case FU_OP_SUB: IMAP2(wrap_sub(x, y));
  case FU_OP_MUL: IMAP2(wrap_mul(x, y));
  case FU_OP_DIV:
    /* Truncating, as nvFuser's integer div; INT64_MIN / -1 wraps. */
    for (size_t i = 0; i < n; i++) {
      if (b[i] == 0) return FU_PW_DIV_ZERO;
      r[i] = b[i] == -1 ? wrap_neg(a[i]) : a[i] / b[i];
    }
    return FU_PW_OK;
  case FU_OP_FMOD:
    for (size_t i = 0; i < n; i++) {
      if (b[i] == 0) return FU_PW_DIV_ZERO;
      r[i] = b[i] == -1 ? 0 : a[i] % b[i];
    }
    return FU_PW_OK;
  case FU_OP_REMAINDER:
    for (size_t i = 0; i < n; i++) {
      if (b[i] == 0) return FU_PW_DIV_ZERO;
      int64_t m = b[i] == -1 ? 0 : a[i] % b[i];
      if (m != 0 && ((m < 0) != (b[i] < 0))) m += b[i];
      r[i] = m;
    }
    return FU_PW_OK;
  case FU_OP_POW: IMAP2(ipow(x, y));
  case FU_OP_MAXIMUM: IMAP2(x > y ? x : y);
  case FU_OP_MINIMUM: IMAP2(x < y ? x : y);
  case FU_OP_EQ: IMAP2(x == y);
  case FU_OP_NE: IMAP2(x != y);
  case FU_OP_LT: IMAP2(x < y);
  case FU_OP_LE: IMAP2(x <= y);
  case FU_OP_GT: IMAP2(x > y);
  case FU_OP_GE: IMAP2(x >= y);
  case FU_OP_LOGICAL_AND: IMAP2(x != 0 && y != 0);
  case FU_OP_LOGICAL_OR: IMAP2(x != 0 || y != 0);
  case FU_OP_BITWISE_AND: IMAP2(x & y);
  case FU_OP_BITWISE_OR: IMAP2(x | y);
  case FU_OP_BITWISE_XOR: IMAP2(x ^ y);
  case FU_OP_WHERE:
    for (size_t i = 0; i < n; i++) r[i] = a[i] ? b[i] : c[i];
    return FU_PW_OK;
  case FU_OP_CLAMP:
    for (size_t i = 0; i < n; i++) {
      int64_t v = a[i] < b[i] ? b[i] : a[i];
      r[i] = v > c[i] ? c[i] : v;
    }
    return FU_PW_OK;
  /* float math only: FU_OF_FLOAT_RESULT gives these a float compute kind */
  case FU_OP_EXP:
  case FU_OP_EXP2:
  case FU_OP_EXPM1:
  case FU_OP_LOG:
  case FU_OP_LOG2:
  case FU_OP_LOG10:
  case FU_OP_LOG1P:
  case FU_OP_SQRT:
  case FU_OP_RSQRT:
  case FU_OP_RECIPROCAL:
  case FU_OP_SIN:
  case FU_OP_COS:
  case FU_OP_TAN:
  case FU_OP_TANH:
  case FU_OP_SINH:
  case FU_OP_COSH:
  case FU_OP_ASIN:
  case FU_OP_ACOS:
  case FU_OP_ATAN:
  case FU_OP_ERF:
  case FU_OP_ERFC:
  case FU_OP_SIGMOID:
  case FU_OP_SILU:
  case FU_OP_ATAN2:
  case FU_OP_LERP:
  case FU_OP_ACOSH:
  case FU_OP_ASINH:
  case FU_OP_ATANH:
  case FU_OP_LGAMMA:
  case FU_OP_ERFINV:
  case FU_OP_ERFCINV:
  case FU_OP_NEXTAFTER:
  case FU_OP_COUNT:
#define FU_OP(id, name, cls, nops, flags, math) FU_INTERP_CASE_IF_NOT_PW_##cls(id)
#include "fuser/ops.def"
    return FU_PW_UNSUPPORTED;
  }
  return FU_PW_UNSUPPORTED;
}

#undef IMAP1
#undef IMAP2

fu_pw_err fu_interp_pw_apply(fu_op_kind k, fu_ck kind, fu_dtype rdt, void *const *in, void *out, size_t n) {
  switch (kind) {
  case FU_CK_F64: return f64_apply(k, in, out, n);
  case FU_CK_F32: return f32_apply(k, in, out, n);
  case FU_CK_I64: return i64_apply(k, rdt, in, out, n);
  }
  return FU_PW_UNSUPPORTED;
}

/* ---- the strided loop ------------------------------------------------------ */

#define PW_MAX_ARRAYS 4 /* out + 3 inputs */

/* Collapse the iteration space: drop extent-1 dims and merge neighbours
 * that are contiguous with each other in every array, so a contiguous
 * pointwise op becomes one long row.  Returns the new rank. */
static int coalesce(int rank, int64_t *shape, int n_arr, int64_t strides[][FU_MAX_RANK]) {
  int r = 0;
  for (int d = 0; d < rank; d++) {
    if (shape[d] == 1) continue;
    shape[r] = shape[d];
    for (int a = 0; a < n_arr; a++) strides[a][r] = strides[a][d];
    r++;
  }
  if (r == 0) return 0;
  int w = 0;
  for (int d = 1; d < r; d++) {
    bool merge = true;
    for (int a = 0; a < n_arr; a++)
      if (strides[a][w] != strides[a][d] * shape[d]) merge = false;
    if (merge) {
      shape[w] *= shape[d];
      for (int a = 0; a < n_arr; a++) strides[a][w] = strides[a][d];
    } else {
      w++;
      shape[w] = shape[d];
      for (int a = 0; a < n_arr; a++) strides[a][w] = strides[a][d];
    }
  }
  return w + 1;
}

/* A pointwise loop once coalesced: what every part of it shares. */
typedef struct pw_plan {
  const fu_pw_loop *l;
  int n_arr, rank;
  int64_t shape[FU_MAX_RANK];
  int64_t strides[PW_MAX_ARRAYS][FU_MAX_RANK];
  char *base[PW_MAX_ARRAYS];
  size_t esize[PW_MAX_ARRAYS];
  fu_dtype dts[PW_MAX_ARRAYS];
  fu_pw_err err[FU_INTERP_MAX_THREADS];
} pw_plan;

/* Elements [lo, hi) of the coalesced iteration space in row-major order:
 * rows (the innermost dim) go through in chunks, with an odometer over the
 * outer dims; per chunk, load every input into a buffer of its kind, run
 * the kernel, store the result with conversion. */
static void pw_part(void *ctx, uint32_t part, int64_t lo, int64_t hi) {
  pw_plan *P = ctx;
  const fu_pw_loop *l = P->l;
  int rank = P->rank;
  int64_t row = rank ? P->shape[rank - 1] : 1;
  int outer = rank ? rank - 1 : 0;
  int64_t idx[FU_MAX_RANK] = {0};
  int64_t r = lo / row, j0 = lo % row;
  for (int d = outer - 1; d >= 0; d--) {
    idx[d] = r % P->shape[d];
    r /= P->shape[d];
  }
  fu_chunk bufs[PW_MAX_ARRAYS];
  void *in_bufs[3] = {NULL, NULL, NULL};
  for (uint32_t i = 0; i < l->n_in; i++) in_bufs[i] = &bufs[1 + i];
  int64_t left = hi - lo;
  while (left > 0) {
    int64_t off[PW_MAX_ARRAYS];
    for (int a = 0; a < P->n_arr; a++) {
      off[a] = 0;
      for (int d = 0; d < outer; d++) off[a] += idx[d] * P->strides[a][d];
    }
    int64_t end = row - j0 < left ? row : j0 + left;
    for (int64_t j = j0; j < end; j += FU_INTERP_CHUNK) {
      size_t n = (size_t)(end - j < FU_INTERP_CHUNK ? end - j : FU_INTERP_CHUNK);
      for (uint32_t i = 0; i < l->n_in; i++) {
        int64_t s = rank ? P->strides[1 + i][rank - 1] : 0;
        const char *p = P->base[1 + i] + (size_t)(off[1 + i] + j * s) * P->esize[1 + i];
        fu_interp_load(P->dts[1 + i], p, s, n, l->in_kinds[i], &bufs[1 + i]);
      }
      fu_pw_err e = fu_interp_pw_apply(l->op, l->kind, l->rdt, in_bufs, &bufs[0], n);
      if (e != FU_PW_OK) {
        P->err[part] = e;
        return;
      }
      int64_t s = rank ? P->strides[0][rank - 1] : 0;
      fu_interp_store(P->dts[0], P->base[0] + (size_t)(off[0] + j * s) * P->esize[0], s, n, l->out_kind, &bufs[0]);
    }
    left -= end - j0;
    j0 = 0;
    int d = outer - 1;
    while (d >= 0 && ++idx[d] == P->shape[d]) idx[d--] = 0;
  }
}

/* Coalesce, then run the parts (on l->threads threads); the first part's
 * error wins, as one thread walking the same order would meet it first. */
fu_pw_err fu_interp_pw_run(const fu_pw_loop *l) {
  fu_host_tensor *out = l->out;
  pw_plan P;
  P.l = l;
  P.n_arr = 1 + (int)l->n_in;
  int rank = out->rank;
  for (int d = 0; d < rank; d++) {
    if (out->shape[d] == 0) return FU_PW_OK;
    P.shape[d] = out->shape[d];
    P.strides[0][d] = out->strides[d];
    for (uint32_t i = 0; i < l->n_in; i++) P.strides[1 + i][d] = l->in[i]->strides[d];
  }
  P.base[0] = out->data;
  P.dts[0] = out->dtype;
  for (uint32_t i = 0; i < l->n_in; i++) {
    P.base[1 + i] = l->in[i]->data;
    P.dts[1 + i] = l->in[i]->dtype;
  }
  for (int a = 0; a < P.n_arr; a++) P.esize[a] = fu_dtype_size(P.dts[a]);
  P.rank = coalesce(rank, P.shape, P.n_arr, P.strides);
  int64_t total = 1;
  for (int d = 0; d < P.rank; d++) total *= P.shape[d];
  for (uint32_t p = 0; p < FU_INTERP_MAX_THREADS; p++) P.err[p] = FU_PW_OK;
  fu_interp_parallel(l->threads, total, FU_INTERP_GRAIN, pw_part, &P);
  for (uint32_t p = 0; p < FU_INTERP_MAX_THREADS; p++)
    if (P.err[p] != FU_PW_OK) return P.err[p];
  return FU_PW_OK;
}

/* ---- helpers for messages and promotion -------------------------------- */

const char *fu_interp_value_str(fu_interp_vstr *b, const fu_value *v) {
  if (!v) {
    snprintf(b->s, sizeof b->s, "?");
  } else if (!v->is_literal) {
    snprintf(b->s, sizeof b->s, "'%%%s'", v->name ? v->name : "?");
  } else if (fu_dtype_is_float(v->type.dtype)) {
    snprintf(b->s, sizeof b->s, "%s(%g)", fu_dtype_name(v->type.dtype), v->literal.f);
  } else if (fu_dtype_is_bool(v->type.dtype)) {
    snprintf(b->s, sizeof b->s, "%s", v->literal.b ? "true" : "false");
  } else {
    snprintf(b->s, sizeof b->s, "%s(%lld)", fu_dtype_name(v->type.dtype), (long long)v->literal.i);
  }
  return b->s;
}


