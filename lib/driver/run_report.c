/* fuser driver: fuser-run's summary: per input its dtype, shape, strides
 * and source; per output a few values, min/max/mean, a checksum (sum and
 * FNV-1a of the bytes); with --check a PASS/FAIL line per output; as text
 * or JSON.  The device paths add their own parts (launches, bench). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "run_internal.h"

/* Shortest decimal text that reads back as the same value of `dt`, always
 * with a '.', 'e', "inf" or "nan" for floats. */
void run_put_value(fu_strbuf *sb, fu_dtype dt, double v, int64_t iv, bool json) {
  if (!fu_dtype_is_float(dt)) {
    if (dt == FU_DT_BOOL)
      fu_strbuf_puts(sb, iv ? "true" : "false");
    else
      fu_strbuf_printf(sb, "%lld", (long long)iv);
    return;
  }
  if (isnan(v) || isinf(v)) {
    const char *s = isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
    if (json)
      fu_strbuf_printf(sb, "\"%s\"", s);
    else
      fu_strbuf_puts(sb, s);
    return;
  }
  char buf[40];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    double back = strtod(buf, NULL);
    bool same;
    switch (dt) {
    case FU_DT_F32: same = (float)back == (float)v; break;
    case FU_DT_F16: same = fu_f16_from_double(back) == fu_f16_from_double(v); break;
    case FU_DT_BF16: same = fu_bf16_from_double(back) == fu_bf16_from_double(v); break;
    default: same = back == v; break;
    }
    if (same) break;
  }
  /* The same digits without an exponent when that reads better (10.0, not
   * 1e+01): the exponent of the %e form gives the decimals needed. */
  char *e = strpbrk(buf, "eE");
  if (e) {
    int exp10 = atoi(e + 1);
    int prec = 0;
    for (const char *c = buf; c < e; c++) prec += *c >= '0' && *c <= '9';
    if (exp10 >= -5 && exp10 < 16) {
      int decimals = prec - 1 - exp10;
      snprintf(buf, sizeof buf, "%.*f", decimals > 0 ? decimals : 0, v);
    }
  }
  fu_strbuf_puts(sb, buf);
  if (!strpbrk(buf, ".eE")) fu_strbuf_puts(sb, ".0");
}

static void put_number(fu_strbuf *sb, double v, bool json) { run_put_value(sb, FU_DT_F64, v, 0, json); }

static void put_dims(fu_strbuf *sb, int32_t rank, const int64_t *v) {
  fu_strbuf_putc(sb, '[');
  for (int32_t d = 0; d < rank; d++) fu_strbuf_printf(sb, "%s%lld", d ? ", " : "", (long long)v[d]);
  fu_strbuf_putc(sb, ']');
}

void run_put_json_string(fu_strbuf *sb, const char *s) {
  fu_strbuf_putc(sb, '"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      fu_strbuf_printf(sb, "\\%c", *s);
    else if ((unsigned char)*s < 0x20)
      fu_strbuf_printf(sb, "\\u%04x", (unsigned)*s);
    else
      fu_strbuf_putc(sb, *s);
  }
  fu_strbuf_putc(sb, '"');
}

typedef struct tensor_stats {
  int64_t numel;
  double min, max, sum;
  int64_t n_nan, n_inf;
  uint64_t hash;
  int64_t imin, imax; /* integer and bool dtypes: exact, where a double rounds past 2^53 */
} tensor_stats;

/* min/max over non-NaN values (exact in i64 for integer dtypes), sum in
 * double, and FNV-1a over the element bytes (little-endian) in row-major
 * order: equal hashes mean bit-identical results whatever the strides. */
static tensor_stats stats_of(const fu_host_tensor *t) {
  tensor_stats s = {fu_host_tensor_numel(t), INFINITY, -INFINITY, 0, 0, 0, UINT64_C(0xcbf29ce484222325),
                    INT64_MAX, INT64_MIN};
  bool exact = !fu_dtype_is_float(t->dtype);
  size_t es = fu_dtype_size(t->dtype);
  for (int64_t i = 0; i < s.numel; i++) {
    int64_t off = 0, rem = i;
    for (int32_t d = t->rank - 1; d >= 0; d--) {
      off += (rem % t->shape[d]) * t->strides[d];
      rem /= t->shape[d];
    }
    const unsigned char *p = (const unsigned char *)t->data + (size_t)off * es;
    unsigned char le[8];
    memcpy(le, p, es);
    uint16_t probe = 1;
    if (*(unsigned char *)&probe == 0)
      for (size_t a = 0, b = es - 1; a < b; a++, b--) {
        unsigned char c = le[a];
        le[a] = le[b];
        le[b] = c;
      }
    for (size_t k = 0; k < es; k++) s.hash = (s.hash ^ le[k]) * UINT64_C(0x100000001b3);
    if (exact) {
      int64_t iv = fu_host_tensor_get_flat_i64(t, i);
      if (iv < s.imin) s.imin = iv;
      if (iv > s.imax) s.imax = iv;
    }
    double v = fu_host_tensor_get_flat(t, i);
    if (isnan(v)) {
      s.n_nan++;
      s.sum += v;
      continue;
    }
    if (isinf(v)) s.n_inf++;
    if (v < s.min) s.min = v;
    if (v > s.max) s.max = v;
    s.sum += v;
  }
  return s;
}

static void put_values(fu_strbuf *sb, const fu_host_tensor *t, int64_t limit, bool json) {
  int64_t n = fu_host_tensor_numel(t);
  int64_t shown = limit < 0 || limit > n ? n : limit;
  fu_strbuf_putc(sb, '[');
  for (int64_t i = 0; i < shown; i++) {
    if (i) fu_strbuf_puts(sb, ", ");
    run_put_value(sb, t->dtype, fu_host_tensor_get_flat(t, i), fu_host_tensor_get_flat_i64(t, i), json);
  }
  if (!json && shown < n) fu_strbuf_printf(sb, "%s... (%lld more)", shown ? ", " : "", (long long)(n - shown));
  fu_strbuf_putc(sb, ']');
}

static void put_scalar(fu_strbuf *sb, const fu_arg *a, bool json) {
  double v = fu_arg_scalar_as_double(a);
  int64_t iv = fu_dtype_is_bool(a->scalar_dtype) ? a->scalar.b : a->scalar.i;
  run_put_value(sb, a->scalar_dtype, v, iv, json);
}

static void text_arg(fu_strbuf *sb, const char *kind, const fu_value *v, const fu_arg *a, const run_args *args) {
  fu_strbuf_printf(sb, "  %s %%%s: ", kind, v->name ? v->name : "?");
  if (a->kind == FU_ARG_SCALAR) {
    fu_strbuf_printf(sb, "%s = ", fu_dtype_name(a->scalar_dtype));
    put_scalar(sb, a, false);
    return;
  }
  const fu_host_tensor *t = &a->tensor;
  fu_strbuf_puts(sb, fu_dtype_name(t->dtype));
  put_dims(sb, t->rank, t->shape);
  fu_strbuf_puts(sb, " strides=");
  put_dims(sb, t->rank, t->strides);
  if ((strcmp(kind, "output") != 0 && strcmp(kind, "updated input") != 0) || args->print_values == 0) return;
  fu_strbuf_puts(sb, "\n    values: ");
  put_values(sb, t, args->print_values, false);
  tensor_stats s = stats_of(t);
  fu_strbuf_puts(sb, "\n    min=");
  if (s.numel - s.n_nan > 0) {
    bool exact = !fu_dtype_is_float(t->dtype);
    run_put_value(sb, t->dtype, s.min, exact ? s.imin : (int64_t)s.min, false);
    fu_strbuf_puts(sb, " max=");
    run_put_value(sb, t->dtype, s.max, exact ? s.imax : (int64_t)s.max, false);
  } else {
    fu_strbuf_puts(sb, "none max=none");
  }
  fu_strbuf_puts(sb, " mean=");
  put_number(sb, s.numel ? s.sum / (double)s.numel : NAN, false);
  fu_strbuf_printf(sb, " nan=%lld inf=%lld", (long long)s.n_nan, (long long)s.n_inf);
  fu_strbuf_puts(sb, "\n    checksum: sum=");
  put_number(sb, s.sum, false);
  fu_strbuf_printf(sb, " fnv1a=0x%016llx", (unsigned long long)s.hash);
}

const fu_value *run_output_alias(fu_fusion *f, uint32_t i) {
  uint32_t at = 0;
  for (const fu_op *op = f->body.first; op; op = op->next) {
    if (op->kind != FU_OP_OUTPUT) continue;
    if (i < at + op->n_operands) return op->u.output.alias;
    at += op->n_operands;
  }
  return NULL;
}

/* Each output with an alias: the input's memory after the run, as an
 * "updated input" line with its values, and which output it holds. */
static void text_aliases(fu_strbuf *sb, const run_fusion_result *r, fu_value *const *outs, const run_args *args) {
  for (uint32_t i = 0; i < r->n_res; i++) {
    const fu_value *in = run_output_alias(r->f, i);
    if (!in || r->res[i].kind != FU_ARG_TENSOR) continue;
    const fu_arg *after = r->alias_after && r->alias_after[i].kind == FU_ARG_TENSOR ? &r->alias_after[i] : &r->res[i];
    text_arg(sb, "updated input", in, after, args);
    fu_strbuf_printf(sb, "\n    holds output %%%s (%s)\n", outs[i]->name ? outs[i]->name : "?",
                     r->alias_how && r->alias_how[i] ? r->alias_how[i] : "the output's values");
  }
}

static void json_arg(fu_strbuf *sb, const fu_value *v, const fu_arg *a, const char *source, const run_args *args) {
  fu_strbuf_puts(sb, "{\"name\": ");
  run_put_json_string(sb, v->name ? v->name : "");
  if (a->kind == FU_ARG_SCALAR) {
    fu_strbuf_printf(sb, ", \"dtype\": \"%s\", \"scalar\": ", fu_dtype_name(a->scalar_dtype));
    put_scalar(sb, a, true);
  } else {
    const fu_host_tensor *t = &a->tensor;
    fu_strbuf_printf(sb, ", \"dtype\": \"%s\", \"shape\": ", fu_dtype_name(t->dtype));
    put_dims(sb, t->rank, t->shape);
    fu_strbuf_puts(sb, ", \"strides\": ");
    put_dims(sb, t->rank, t->strides);
    if (!source) {
      tensor_stats s = stats_of(t);
      fu_strbuf_puts(sb, ", \"values\": ");
      put_values(sb, t, args->print_values, true);
      bool any = s.numel - s.n_nan > 0;
      fu_strbuf_puts(sb, ", \"min\": ");
      if (any)
        run_put_value(sb, t->dtype, s.min, (int64_t)s.min, true);
      else
        fu_strbuf_puts(sb, "null");
      fu_strbuf_puts(sb, ", \"max\": ");
      if (any)
        run_put_value(sb, t->dtype, s.max, (int64_t)s.max, true);
      else
        fu_strbuf_puts(sb, "null");
      fu_strbuf_puts(sb, ", \"mean\": ");
      put_number(sb, s.numel ? s.sum / (double)s.numel : NAN, true);
      fu_strbuf_puts(sb, ", \"sum\": ");
      put_number(sb, s.sum, true);
      fu_strbuf_printf(sb, ", \"nan\": %lld, \"inf\": %lld, \"fnv1a\": \"0x%016llx\"", (long long)s.n_nan,
                       (long long)s.n_inf, (unsigned long long)s.hash);
    }
  }
  if (source) {
    fu_strbuf_puts(sb, ", \"source\": ");
    run_put_json_string(sb, source);
  }
  fu_strbuf_putc(sb, '}');
}

/* The "inputs" list's entries, then the "outputs" key and its entries, as
 * both the CPU and the GPU paths print them with --json. */
static void json_inputs_outputs(fu_strbuf *out, const run_args *a, fu_allocator al, fu_op *const *in_ops,
                                const fu_arg *in, uint32_t n_in, fu_value *const *outs, const fu_arg *res,
                                uint32_t n_res) {
  for (uint32_t i = 0; i < n_in; i++) {
    fu_strbuf src;
    fu_strbuf_init(&src, al);
    run_describe_source(&src, a, in_ops[i]);
    fu_strbuf_puts(out, i ? ", " : "");
    json_arg(out, in_ops[i]->results[0], &in[i], src.data ? src.data : "", a);
    fu_strbuf_free(&src);
  }
  fu_strbuf_puts(out, "],\n   \"outputs\": [");
  for (uint32_t i = 0; i < n_res; i++) {
    fu_strbuf_puts(out, i ? ",\n               " : "");
    json_arg(out, outs[i], &res[i], NULL, a);
  }
}

static const char *output_name(const fu_value *v) { return v->name ? v->name : "?"; }

static void put_shape(fu_strbuf *sb, const fu_host_tensor *t) {
  fu_strbuf_puts(sb, fu_dtype_name(t->dtype));
  put_dims(sb, t->rank, t->shape);
}

static void text_check(fu_strbuf *sb, const fu_value *v, const fu_host_tensor *t, const run_check_line *c) {
  fu_strbuf_printf(sb, "  check %%%s: %s ", output_name(v), c->pass ? "PASS" : "FAIL");
  put_shape(sb, t);
  const fu_check_result *r = &c->r;
  if (r->n_mismatch) {
    fu_strbuf_printf(sb, ": %lld of %lld elements differ", (long long)r->n_mismatch, (long long)r->n_elements);
    if (r->n_poison) fu_strbuf_printf(sb, " (%lld still hold the 0xFF poison: never written)", (long long)r->n_poison);
    fu_strbuf_printf(sb, "; first at flat index %lld: got ", (long long)r->first_mismatch);
    run_put_value(sb, t->dtype, r->got_first, (int64_t)r->got_first, false);
    fu_strbuf_puts(sb, ", want ");
    run_put_value(sb, t->dtype, r->want_first, (int64_t)r->want_first, false);
  }
  if (c->n_unwritten)
    fu_strbuf_printf(sb, "%s%lld elements change with the poison byte (never written)", r->n_mismatch ? "; " : ": ",
                     (long long)c->n_unwritten);
  fu_strbuf_printf(sb, "; max abs err %.3g, max rel err %.3g", r->max_abs_err, r->max_rel_err);
  if (fu_dtype_is_float(t->dtype)) fu_strbuf_printf(sb, " (rtol %g, atol %g)", c->tol.rtol, c->tol.atol);
  else fu_strbuf_puts(sb, " (exact)");
  /* the bound is added to rtol/atol's allowance: past 1, the element
   * passed on rtol/atol, which a PASS line says rather than leave a
   * "140 of the bound" to read as a failure */
  if (r->bounded && r->max_bound_ratio <= 1.0)
    fu_strbuf_printf(sb, "; max err %.2g of the error bound", r->max_bound_ratio);
  else if (r->bounded)
    fu_strbuf_printf(sb, "; max err %.2g times the error bound%s", r->max_bound_ratio,
                     c->pass ? ", within rtol and atol" : "");
  if (r->n_unscaled) fu_strbuf_printf(sb, " (%lld elements unscaled)", (long long)r->n_unscaled);
  fu_strbuf_putc(sb, '\n');
}

static void json_check(fu_strbuf *sb, const fu_value *v, const fu_host_tensor *t, const run_check_line *c) {
  const fu_check_result *r = &c->r;
  fu_strbuf_puts(sb, "{\"output\": ");
  run_put_json_string(sb, output_name(v));
  fu_strbuf_printf(sb, ", \"dtype\": \"%s\", \"pass\": %s, \"elements\": %lld, \"mismatches\": %lld, \"poisoned\": %lld, "
                       "\"unwritten\": %lld, \"max_abs_err\": ",
                   fu_dtype_name(t->dtype), c->pass ? "true" : "false", (long long)r->n_elements,
                   (long long)r->n_mismatch, (long long)r->n_poison, (long long)c->n_unwritten);
  put_number(sb, r->max_abs_err, true);
  fu_strbuf_puts(sb, ", \"max_rel_err\": ");
  put_number(sb, r->max_rel_err, true);
  fu_strbuf_puts(sb, ", \"rtol\": ");
  put_number(sb, c->tol.rtol, true);
  fu_strbuf_puts(sb, ", \"atol\": ");
  put_number(sb, c->tol.atol, true);
  if (r->bounded) {
    fu_strbuf_puts(sb, ", \"bound_ratio\": ");
    put_number(sb, r->max_bound_ratio, true);
    fu_strbuf_printf(sb, ", \"unscaled\": %lld", (long long)r->n_unscaled);
  }
  if (r->n_mismatch) {
    fu_strbuf_printf(sb, ", \"first_mismatch\": %lld, \"got\": ", (long long)r->first_mismatch);
    run_put_value(sb, t->dtype, r->got_first, (int64_t)r->got_first, true);
    fu_strbuf_puts(sb, ", \"want\": ");
    run_put_value(sb, t->dtype, r->want_first, (int64_t)r->want_first, true);
  }
  fu_strbuf_putc(sb, '}');
}

int run_report_fusion(const run_args *a, const run_fusion_result *r, bool several, bool first, fu_diag_engine *diag,
                      fu_strbuf *out) {
  fu_allocator al = a->alloc;
  fu_fusion *f = r->f;
  uint32_t n_in = r->n_in, n_res = r->n_res;
  uint32_t n_out = fu_fusion_outputs(f, NULL, 0);
  fu_value **outs = fu_mem_calloc(&al, n_out ? n_out : 1, sizeof *outs);
  fu_op **in_ops = fu_mem_calloc(&al, n_in ? n_in : 1, sizeof *in_ops);
  fu_value **in_vals = fu_mem_calloc(&al, n_in ? n_in : 1, sizeof *in_vals);
  int rc = 1;
  if (!outs || !in_ops || !in_vals || n_out < n_res) {
    fu_error(diag, f->loc, "out of memory while reporting on '@%s'", f->name ? f->name : "");
    goto done;
  }
  fu_fusion_outputs(f, outs, n_out);
  fu_interp_inputs_of(f, in_ops, n_in);
  for (uint32_t i = 0; i < n_in; i++) in_vals[i] = in_ops[i]->results[0];

  fu_strbuf log;
  fu_strbuf_init(&log, al);
  const char *sub = several ? f->name : NULL;
  bool ok = true;
  if (a->save_inputs)
    ok = run_save_args(a, a->save_inputs, sub, (const fu_value *const *)in_vals, r->in, n_in, diag,
                       a->json ? NULL : &log);
  if (ok && a->save_outputs)
    ok = run_save_args(a, a->save_outputs, sub, (const fu_value *const *)outs, r->res, n_res, diag,
                       a->json ? NULL : &log);
  bool all_pass = true;
  for (uint32_t i = 0; r->lines && i < n_res; i++) all_pass &= r->lines[i].pass;
  fu_strbuf dist;
  fu_strbuf_init(&dist, al);
  all_pass &= run_dist_check(a, (const fu_value *const *)outs, r->res, n_res, &dist);

  if (a->json) {
    if (!first) fu_strbuf_puts(out, ",\n");
    fu_strbuf_puts(out, "  {\"fusion\": ");
    run_put_json_string(out, f->name ? f->name : "");
    fu_strbuf_printf(out, ", \"device\": \"%s\"%s, \"inputs\": [", r->device, r->json_device ? r->json_device : "");
    json_inputs_outputs(out, a, al, in_ops, r->in, n_in, outs, r->res, n_res);
    fu_strbuf_printf(out, "]%s", r->json_outputs ? r->json_outputs : "");
    if (r->lines) {
      fu_strbuf_puts(out, ",\n   \"check\": [");
      bool firstc = true;
      for (uint32_t i = 0; i < n_res; i++) {
        if (r->res[i].kind != FU_ARG_TENSOR) continue;
        fu_strbuf_puts(out, firstc ? "" : ", ");
        firstc = false;
        json_check(out, outs[i], &r->res[i].tensor, &r->lines[i]);
      }
      fu_strbuf_printf(out, "], \"check_pass\": %s", all_pass ? "true" : "false");
    }
    if (a->n_dists) {
      fu_strbuf_puts(out, ", \"distribution\": ");
      run_put_json_string(out, dist.data ? dist.data : "");
    }
    fu_strbuf_printf(out, "%s}", r->json_tail ? r->json_tail : "");
  } else {
    fu_strbuf_printf(out, "fusion @%s: %u input%s, %u output%s (%s)\n", f->name ? f->name : "", n_in,
                     n_in == 1 ? "" : "s", n_res, n_res == 1 ? "" : "s", r->what);
    fu_strbuf_puts(out, r->text_head ? r->text_head : "");
    for (uint32_t i = 0; i < n_in; i++) {
      text_arg(out, "input", in_vals[i], &r->in[i], a);
      fu_strbuf_puts(out, " from ");
      run_describe_source(out, a, in_ops[i]);
      fu_strbuf_putc(out, '\n');
    }
    for (uint32_t i = 0; i < n_res; i++) {
      text_arg(out, "output", outs[i], &r->res[i], a);
      fu_strbuf_putc(out, '\n');
    }
    text_aliases(out, r, outs, a);
    for (uint32_t i = 0; r->lines && i < n_res; i++)
      if (r->res[i].kind == FU_ARG_TENSOR) text_check(out, outs[i], &r->res[i].tensor, &r->lines[i]);
    fu_strbuf_append(out, dist.data ? dist.data : "", dist.len);
    fu_strbuf_puts(out, r->text_tail ? r->text_tail : "");
    fu_strbuf_append(out, log.data ? log.data : "", log.len);
  }
  fu_strbuf_free(&log);
  fu_strbuf_free(&dist);
  rc = ok && all_pass ? 0 : 1;
done:
  if (outs) fu_mem_free(&al, outs, (n_out ? n_out : 1) * sizeof *outs);
  if (in_ops) fu_mem_free(&al, in_ops, (n_in ? n_in : 1) * sizeof *in_ops);
  if (in_vals) fu_mem_free(&al, in_vals, (n_in ? n_in : 1) * sizeof *in_vals);
  return rc;
}
