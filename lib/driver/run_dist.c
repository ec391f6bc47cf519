/* fuser driver: fuser-run --expect-distribution=NAME=uniform(LO,HI) or
 * NAME=normal(MEAN,STD): after the run, output %NAME's sample mean,
 * variance and Kolmogorov-Smirnov distance against that distribution, each
 * within its bound, or the run fails.  Random numbers are a function of
 * (seed, offset, index), so a case that passes passes every time: the
 * bounds are wide enough for any sound generator (mean and variance within
 * 5 standard errors, KS under its 0.1% critical value 1.95 / sqrt(n)) and
 * catch a broken one.  16-bit dtypes widen the KS bound by the rounding
 * step's share of the distribution. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "run_internal.h"

bool run_dist_parse(run_args *a, const char *spec) {
  const char *eq = strchr(spec, '=');
  run_dist d = {0};
  if (!eq || eq == spec) goto bad;
  const char *kind = eq + 1, *open = strchr(kind, '(');
  if (!open) goto bad;
  if ((size_t)(open - kind) == 7 && strncmp(kind, "uniform", 7) == 0)
    d.normal = false;
  else if ((size_t)(open - kind) == 6 && strncmp(kind, "normal", 6) == 0)
    d.normal = true;
  else
    goto bad;
  char *end;
  d.a = strtod(open + 1, &end);
  if (end == open + 1 || *end != ',') goto bad;
  const char *second = end + 1;
  d.b = strtod(second, &end);
  if (end == second || strcmp(end, ")") != 0) goto bad;
  if (d.normal ? !(d.b > 0) : !(d.b > d.a)) goto bad;
  d.name = spec[0] == '%' ? spec + 1 : spec;
  d.name_len = (size_t)(eq - d.name);
  run_dist *grown = fu_mem_realloc(&a->alloc, a->dists, a->n_dists * sizeof *grown, (a->n_dists + 1) * sizeof *grown);
  if (!grown) {
    fprintf(a->err, RUN_TOOL ": out of memory\n");
    return false;
  }
  a->dists = grown;
  a->dists[a->n_dists++] = d;
  return true;
bad:
  fprintf(a->err,
          RUN_TOOL ": bad --expect-distribution '%s' (expected NAME=uniform(LO,HI) with LO < HI, or "
                   "NAME=normal(MEAN,STD) with STD > 0)\n",
          spec);
  return false;
}

static int cmp_double(const void *x, const void *y) {
  double p = *(const double *)x, q = *(const double *)y;
  return (p > q) - (p < q);
}

static double cdf(const run_dist *d, double x) {
  if (d->normal) return 0.5 * erfc(-(x - d->a) / (d->b * sqrt(2.0)));
  double u = (x - d->a) / (d->b - d->a);
  return u < 0 ? 0 : u > 1 ? 1 : u;
}

/* The spacing of dtype dt's values near magnitude x (0 for f32 and f64,
 * whose steps are far below what n samples resolve). */
static double step_near(fu_dtype dt, double x) {
  int bits = dt == FU_DT_F16 ? 10 : dt == FU_DT_BF16 ? 7 : -1;
  if (bits < 0 || x == 0) return 0;
  int e;
  frexp(fabs(x), &e);
  return ldexp(1.0, e - 1 - bits);
}

/* One expectation against tensor t, as a line in `out`; false when a bound fails. */
static bool check_one(const run_dist *d, const fu_host_tensor *t, fu_allocator al, fu_strbuf *out) {
  int64_t n = fu_host_tensor_numel(t);
  fu_strbuf_printf(out, "  distribution %%%.*s: %s(%g, %g): ", (int)d->name_len, d->name,
                   d->normal ? "normal" : "uniform", d->a, d->b);
  double *x = n > 1 ? fu_mem_alloc(&al, (size_t)n * sizeof *x) : NULL;
  if (!x) {
    fu_strbuf_puts(out, n > 1 ? "FAIL out of memory\n" : "FAIL fewer than 2 values\n");
    return false;
  }
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < n; i++) sum += x[i] = fu_host_tensor_get_flat(t, i);
  double mean = sum / (double)n;
  for (int64_t i = 0; i < n; i++) sq += (x[i] - mean) * (x[i] - mean);
  double var = sq / (double)(n - 1);
  qsort(x, (size_t)n, sizeof *x, cmp_double);
  double ks = 0;
  for (int64_t i = 0; i < n; i++) {
    double f = cdf(d, x[i]), lo = f - (double)i / (double)n, hi = (double)(i + 1) / (double)n - f;
    ks = lo > ks ? lo : ks;
    ks = hi > ks ? hi : ks;
  }
  fu_mem_free(&al, x, (size_t)n * sizeof *x);
  /* expected moments: var of the sample variance is (mu4 - sigma^4) / n */
  double w = d->b - d->a;
  double emean = d->normal ? d->a : (d->a + d->b) / 2, evar = d->normal ? d->b * d->b : w * w / 12;
  double mu4 = d->normal ? 3 * evar * evar : w * w * w * w / 80;
  double se_mean = sqrt(evar / (double)n), se_var = sqrt((mu4 - evar * evar) / (double)n);
  double far = d->normal ? fabs(d->a) + 6 * d->b : fmax(fabs(d->a), fabs(d->b));
  double density = d->normal ? 1 / (d->b * sqrt(2 * 3.14159265358979323846)) : 1 / w;
  double step = step_near(t->dtype, far);
  double crit = 1.95 / sqrt((double)n) + step * density;
  bool ok_mean = fabs(mean - emean) <= 5 * se_mean + step, ok_var = fabs(var - evar) <= 5 * se_var + step * far;
  bool ok_ks = ks < crit, ok = ok_mean && ok_var && ok_ks;
  fu_strbuf_printf(out, "%s n=%lld mean=%.6g (%s %.6g) var=%.6g (%s %.6g) ks=%.6g (%s %.6g)\n", ok ? "PASS" : "FAIL",
                   (long long)n, mean, ok_mean ? "expected" : "FAIL, expected", emean, var,
                   ok_var ? "expected" : "FAIL, expected", evar, ks, ok_ks ? "<" : "FAIL, not <", crit);
  return ok;
}

bool run_dist_check(const run_args *a, const fu_value *const *outs, const fu_arg *res, uint32_t n_res,
                    fu_strbuf *out) {
  bool all = true;
  for (uint32_t k = 0; k < a->n_dists; k++) {
    const run_dist *d = &a->dists[k];
    uint32_t i = 0;
    while (i < n_res && !(outs[i]->name && strlen(outs[i]->name) == d->name_len &&
                          strncmp(outs[i]->name, d->name, d->name_len) == 0))
      i++;
    if (i == n_res || res[i].kind != FU_ARG_TENSOR || !fu_dtype_is_float(res[i].tensor.dtype)) {
      fu_strbuf_printf(out, "  distribution %%%.*s: FAIL no float tensor output of that name\n", (int)d->name_len,
                       d->name);
      all = false;
      continue;
    }
    all &= check_one(d, &res[i].tensor, a->alloc, out);
  }
  return all;
}
