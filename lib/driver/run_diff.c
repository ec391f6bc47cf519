/* fuser driver: fuser-run --diff-backends: the same fusion, inputs and
 * launch plan run once with each backend's PTX (llvm and nvrtc), and each
 * output of the two runs compared.
 *
 * Both backends read the same kernel IR and follow the same semantics
 * (docs/backends.md), so an output that no math-library op feeds must be
 * bit-identical: anything else is a code-generation bug in one of them.
 * An output that a math-library op feeds (ops.def's MATH column: libdevice
 * on the LLVM path, CUDA's own functions through NVRTC) may differ in the
 * last bits; it passes within the --check tolerance of its dtype (or
 * --rtol/--atol), and the line says which ops allowed it. */
#include <math.h>
#include <string.h>

#include "run_internal.h"

const char *run_diff_other_backend(const char *first) { return strcmp(first, "llvm") == 0 ? "nvrtc" : "llvm"; }

typedef struct math_names {
  fu_strbuf *sb;
  uint32_t found;
  bool named[FU_OP_COUNT];
} math_names;

/* Ops whose kernels call a math-library function although ops.def's MATH
 * column names none for them (the column is for functions libm also has):
 * sigmoid and silu through expf, rsqrt, erfinv and erfcinv (docs/backends.md). */
static const char *const math_through_calls[] = {"sigmoid", "silu", "rsqrt", "erfinv", "erfcinv"};

static bool is_math_op(const fu_op_info *info) {
  if (info->math) return true;
  for (size_t i = 0; i < sizeof math_through_calls / sizeof math_through_calls[0]; i++)
    if (strcmp(info->name, math_through_calls[i]) == 0) return true;
  return false;
}

/* run_walk_upstream's step: the op that made `v`, when it computes through
 * a math-library function, once per op kind. */
static void note_math(void *ctx, const fu_value *v) {
  math_names *m = ctx;
  const fu_op_info *info = fu_op_info_of(v->def->kind);
  if (!is_math_op(info) || m->named[v->def->kind]) return;
  m->named[v->def->kind] = true;
  fu_strbuf_printf(m->sb, "%s%s", m->found++ ? ", " : "", info->name);
}

/* The math-library ops that `out` depends on, by name, once each, into sb;
 * their number. */
static uint32_t math_ops_upstream(fu_fusion *f, fu_value *out, fu_allocator al, fu_strbuf *sb) {
  math_names m;
  memset(&m, 0, sizeof m);
  m.sb = sb;
  run_walk_upstream(f, out, al, note_math, &m);
  return m.found;
}

/* Elements whose bytes differ between two tensors of one dtype and shape
 * (row-major walk, whatever the strides); two NaNs count as the same. */
static int64_t bits_differ(const fu_host_tensor *x, const fu_host_tensor *y) {
  int64_t numel = fu_host_tensor_numel(x), n = 0;
  size_t es = fu_dtype_size(x->dtype);
  for (int64_t i = 0; i < numel; i++) {
    int64_t ox = 0, oy = 0, rem = i;
    for (int32_t d = x->rank - 1; d >= 0; d--) {
      int64_t k = rem % x->shape[d];
      rem /= x->shape[d];
      ox += k * x->strides[d];
      oy += k * y->strides[d];
    }
    /* two NaNs count as the same bits: 0/0 gives one NaN through LLVM and
     * another through NVRTC, and no op tells them apart */
    n += memcmp((const char *)x->data + ox * (int64_t)es, (const char *)y->data + oy * (int64_t)es, es) != 0 &&
         !(isnan(fu_host_tensor_get_flat(x, i)) && isnan(fu_host_tensor_get_flat(y, i)));
  }
  return n;
}

bool run_diff_outputs(const run_args *a, fu_fusion *f, const char *first, const char *second, const fu_arg *r1,
                      const fu_arg *r2, uint32_t n, fu_strbuf *text, fu_strbuf *json) {
  fu_allocator al = a->alloc;
  uint32_t n_out = fu_fusion_outputs(f, NULL, 0);
  fu_value **outs = n_out ? fu_mem_calloc(&al, n_out, sizeof *outs) : NULL;
  if (outs) fu_fusion_outputs(f, outs, n_out);
  bool all_ok = true;
  fu_strbuf_printf(json, ",\n   \"diff_backends\": {\"first\": \"%s\", \"second\": \"%s\", \"outputs\": [", first, second);
  for (uint32_t i = 0; i < n; i++) {
    const char *name = outs && i < n_out && outs[i]->name ? outs[i]->name : "?";
    fu_strbuf math;
    fu_strbuf_init(&math, al);
    uint32_t n_math = outs && i < n_out ? math_ops_upstream(f, outs[i], al, &math) : 0;
    const char *verdict, *expect = n_math ? "tolerance" : "bitwise";
    bool ok = true;
    int64_t n_diff = 0;
    fu_check_result cr;
    memset(&cr, 0, sizeof cr);
    fu_check_tolerance tol = {0, 0};
    if (r1[i].kind != FU_ARG_TENSOR || r2[i].kind != FU_ARG_TENSOR) {
      bool same = r1[i].kind == r2[i].kind && memcmp(&r1[i].scalar, &r2[i].scalar, sizeof r1[i].scalar) == 0;
      verdict = same ? "bit-identical" : "DIFFERENT";
      ok = same;
    } else if (r1[i].tensor.dtype != r2[i].tensor.dtype || r1[i].tensor.rank != r2[i].tensor.rank ||
               memcmp(r1[i].tensor.shape, r2[i].tensor.shape, (size_t)r1[i].tensor.rank * sizeof(int64_t)) != 0) {
      verdict = "DIFFERENT (dtype or shape)";
      ok = false;
    } else if ((n_diff = bits_differ(&r1[i].tensor, &r2[i].tensor)) == 0) {
      verdict = "bit-identical";
    } else {
      tol = fu_check_default_tolerance(r1[i].tensor.dtype);
      if (a->rtol >= 0) tol.rtol = a->rtol;
      if (a->atol >= 0) tol.atol = a->atol;
      bool within = fu_check_compare(&r2[i].tensor, &r1[i].tensor, tol, &cr) == FU_OK && cr.n_mismatch == 0;
      ok = within && n_math > 0;
      verdict = !within ? "DIFFERENT beyond tolerance" : n_math ? "within tolerance" : "DIFFERENT (expected bit-identical)";
    }
    all_ok &= ok;
    fu_strbuf_printf(text, "  diff %%%s (%s vs %s): %s", name, first, second, verdict);
    if (n_diff)
      fu_strbuf_printf(text, "; %lld of %lld elements differ in their bits, max abs err %g (rtol %g, atol %g)",
                       (long long)n_diff, (long long)fu_host_tensor_numel(&r1[i].tensor), cr.max_abs_err, tol.rtol,
                       tol.atol);
    if (n_math)
      fu_strbuf_printf(text, "; math library ops upstream: %s", math.data);
    else if (ok)
      fu_strbuf_puts(text, "; no math library op upstream, so bit-identical is required");
    fu_strbuf_putc(text, '\n');
    fu_strbuf_printf(json, "%s{\"name\": ", i ? ", " : "");
    run_put_json_string(json, name);
    fu_strbuf_printf(json, ", \"expect\": \"%s\", \"pass\": %s, \"bits_differ\": %lld, \"max_abs_err\": ", expect,
                     ok ? "true" : "false", (long long)n_diff);
    run_put_value(json, FU_DT_F64, cr.max_abs_err, 0, true);
    fu_strbuf_puts(json, ", \"verdict\": ");
    run_put_json_string(json, verdict);
    fu_strbuf_puts(json, "}");
    fu_strbuf_free(&math);
  }
  fu_strbuf_printf(json, "], \"pass\": %s}", all_ok ? "true" : "false");
  if (outs) fu_mem_free(&al, outs, n_out * sizeof *outs);
  return all_ok;
}
