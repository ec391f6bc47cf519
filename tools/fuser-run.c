/* fuser-run: run a fusion and summarise its outputs.
 *
 *   fuser-run FILE.fir --device=cpu [--fusion=@name] [--input NAME=SRC]...
 *             [--random] [--default-extent N] [--seed N] [--save-outputs DIR]
 *             [--save-inputs DIR] [--print-values N|all] [--json]
 *
 * --device=cpu runs the reference interpreter (lib/interp).  The GPU path is
 * not built yet: without --device=cpu the tool says so and exits 2.  Exit
 * codes: 0 success, 1 an error in the input or while running, 2 a usage
 * error or an unavailable device. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuser/driver.h"
#include "fuser/interp.h"
#include "fuser/npy.h"
#include "fuser/parse.h"
#include "fuser/strbuf.h"
#include "fuser/verify.h"

#define TOOL "fuser-run"

typedef enum run_device { DEVICE_GPU, DEVICE_CPU } run_device;

typedef struct run_args {
  const char *file;
  run_device device;
  const char *fusion; /* without '@', or NULL for all */
  fu_input_override *overrides;
  uint32_t n_overrides;
  uint64_t seed;
  bool random;
  int64_t default_extent;
  const char *save_outputs;
  const char *save_inputs;
  int64_t print_values; /* -1: all */
  bool json;
} run_args;

static void usage(FILE *out) {
  fprintf(out,
          "usage: " TOOL " FILE.fir [options]\n"
          "Run a fusion and print a summary of each output.\n\n"
          "  --device=cpu             run on the CPU reference interpreter (the GPU runtime\n"
          "                           is not built in this binary yet)\n"
          "  --fusion=@NAME           run only this fusion (default: every fusion in the file)\n"
          "  --input NAME=SRC         data for input %%NAME: random, zeros, ones, or a .npy file\n"
          "  --random                 inputs without example data are random, and symbolic\n"
          "                           sizes nobody states default to --default-extent\n"
          "  --default-extent N       size for unbound symbols with --random (default 4)\n"
          "  --seed N                 seed for inputs made at random without their own (default 0)\n"
          "  --save-outputs DIR       write DIR/<output name>.npy (DIR/<fusion>/... for several fusions)\n"
          "  --save-inputs DIR        write the inputs used the same way\n"
          "  --print-values N|all     how many leading values to print per output (default 8)\n"
          "  --json                   print the summary as JSON\n"
          "  -h, --help               this help\n");
}

/* `--opt=value` or `--opt value`; advances *i past what it consumed. */
static const char *opt_value(int argc, char **argv, int *i, const char *name) {
  size_t n = strlen(name);
  const char *a = argv[*i];
  if (strncmp(a, name, n) != 0) return NULL;
  if (a[n] == '=') return a + n + 1;
  if (a[n] != '\0') return NULL;
  if (*i + 1 >= argc) {
    fprintf(stderr, TOOL ": option '%s' needs a value\n", name);
    exit(2);
  }
  return argv[++*i];
}

static int64_t parse_int(const char *s, const char *opt, int64_t lo) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < lo) {
    fprintf(stderr, TOOL ": invalid value '%s' for %s\n", s, opt);
    exit(2);
  }
  return v;
}

static bool ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

static void add_override(run_args *a, const char *spec) {
  const char *eq = strchr(spec, '=');
  if (!eq || eq == spec || !eq[1]) {
    fprintf(stderr, TOOL ": --input expects NAME=random|zeros|ones|FILE.npy, got '%s'\n", spec);
    exit(2);
  }
  fu_input_override o;
  memset(&o, 0, sizeof o);
  size_t nlen = (size_t)(eq - spec);
  char *name = malloc(nlen + 1);
  if (!name) exit(1);
  memcpy(name, spec, nlen);
  name[nlen] = '\0';
  o.name = name;
  const char *src = eq + 1;
  if (strcmp(src, "random") == 0) {
    o.source = FU_INPUT_RANDOM;
  } else if (strcmp(src, "zeros") == 0) {
    o.source = FU_INPUT_ZEROS;
  } else if (strcmp(src, "ones") == 0) {
    o.source = FU_INPUT_ONES;
  } else if (ends_with(src, ".npy")) {
    o.source = FU_INPUT_NPY;
    o.npy_path = src;
  } else {
    fprintf(stderr, TOOL ": unknown input source '%s' for '%s' (expected random, zeros, ones or a .npy file)\n",
            src, name);
    exit(2);
  }
  fu_input_override *grown = realloc(a->overrides, (a->n_overrides + 1) * sizeof *grown);
  if (!grown) exit(1);
  a->overrides = grown;
  a->overrides[a->n_overrides++] = o;
}

static void parse_args(int argc, char **argv, run_args *a) {
  memset(a, 0, sizeof *a);
  a->print_values = 8;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i], *v;
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
      usage(stdout);
      exit(0);
    } else if ((v = opt_value(argc, argv, &i, "--device"))) {
      if (strcmp(v, "cpu") == 0)
        a->device = DEVICE_CPU;
      else if (strcmp(v, "gpu") == 0 || strcmp(v, "cuda") == 0)
        a->device = DEVICE_GPU;
      else {
        fprintf(stderr, TOOL ": unknown device '%s' (expected cpu or gpu)\n", v);
        exit(2);
      }
    } else if ((v = opt_value(argc, argv, &i, "--fusion"))) {
      a->fusion = v[0] == '@' ? v + 1 : v;
    } else if ((v = opt_value(argc, argv, &i, "--input"))) {
      add_override(a, v);
    } else if ((v = opt_value(argc, argv, &i, "--seed"))) {
      a->seed = (uint64_t)parse_int(v, "--seed", 0);
    } else if ((v = opt_value(argc, argv, &i, "--default-extent"))) {
      a->default_extent = parse_int(v, "--default-extent", 0);
    } else if ((v = opt_value(argc, argv, &i, "--save-outputs"))) {
      a->save_outputs = v;
    } else if ((v = opt_value(argc, argv, &i, "--save-inputs"))) {
      a->save_inputs = v;
    } else if ((v = opt_value(argc, argv, &i, "--print-values"))) {
      a->print_values = strcmp(v, "all") == 0 ? -1 : parse_int(v, "--print-values", 0);
    } else if (strcmp(arg, "--random") == 0) {
      a->random = true;
    } else if (strcmp(arg, "--json") == 0) {
      a->json = true;
    } else if (arg[0] == '-' && arg[1] != '\0') {
      fprintf(stderr, TOOL ": unknown option '%s' (see --help)\n", arg);
      exit(2);
    } else if (a->file) {
      fprintf(stderr, TOOL ": more than one input file ('%s' and '%s')\n", a->file, arg);
      exit(2);
    } else {
      a->file = arg;
    }
  }
  if (!a->file) {
    fprintf(stderr, TOOL ": no input file (see --help)\n");
    exit(2);
  }
}

/* ---- printing values ------------------------------------------------------- */

/* Shortest decimal text that reads back as the same value of `dt`, always
 * with a '.', 'e', "inf" or "nan" for floats. */
static void put_value(fu_strbuf *sb, fu_dtype dt, double v, int64_t iv, bool json) {
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

static void put_number(fu_strbuf *sb, double v, bool json) { put_value(sb, FU_DT_F64, v, 0, json); }

static void put_dims(fu_strbuf *sb, int32_t rank, const int64_t *v) {
  fu_strbuf_putc(sb, '[');
  for (int32_t d = 0; d < rank; d++) fu_strbuf_printf(sb, "%s%lld", d ? ", " : "", (long long)v[d]);
  fu_strbuf_putc(sb, ']');
}

static void put_json_string(fu_strbuf *sb, const char *s) {
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
} tensor_stats;

/* min/max over non-NaN values, sum in double, and FNV-1a over the element
 * bytes (little-endian) in row-major order: equal hashes mean bit-identical
 * results whatever the strides. */
static tensor_stats stats_of(const fu_host_tensor *t) {
  tensor_stats s = {fu_host_tensor_numel(t), INFINITY, -INFINITY, 0, 0, 0, UINT64_C(0xcbf29ce484222325)};
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
    put_value(sb, t->dtype, fu_host_tensor_get_flat(t, i), fu_host_tensor_get_flat_i64(t, i), json);
  }
  if (!json && shown < n) fu_strbuf_printf(sb, "%s... (%lld more)", shown ? ", " : "", (long long)(n - shown));
  fu_strbuf_putc(sb, ']');
}

/* ---- describing inputs ------------------------------------------------------ */

static const fu_input_override *override_for(const run_args *a, const fu_value *v) {
  for (uint32_t i = 0; i < a->n_overrides; i++) {
    const char *n = a->overrides[i].name;
    if (n[0] == '%') n++;
    if (v->name && strcmp(n, v->name) == 0) return &a->overrides[i];
  }
  return NULL;
}

static void describe_source(fu_strbuf *sb, const run_args *a, const fu_op *op) {
  const fu_input_override *o = override_for(a, op->results[0]);
  if (o) {
    static const char *names[] = {"example", "random", "zeros", "ones", "npy"};
    if (o->source == FU_INPUT_NPY)
      fu_strbuf_printf(sb, "npy \"%s\"", o->npy_path);
    else if (o->source == FU_INPUT_RANDOM)
      fu_strbuf_printf(sb, "random seed=%llu", (unsigned long long)a->seed);
    else
      fu_strbuf_puts(sb, names[o->source]);
    return;
  }
  const fu_example *ex = &op->u.input.example;
  switch (ex->init) {
  case FU_INIT_NONE: fu_strbuf_printf(sb, "random seed=%llu", (unsigned long long)a->seed); break;
  case FU_INIT_RANDN: fu_strbuf_printf(sb, "randn seed=%llu", (unsigned long long)ex->seed); break;
  case FU_INIT_RAND: fu_strbuf_printf(sb, "rand seed=%llu", (unsigned long long)ex->seed); break;
  case FU_INIT_RANDINT:
    fu_strbuf_printf(sb, "randint [%lld, %lld) seed=%llu", (long long)ex->low, (long long)ex->high,
                     (unsigned long long)ex->seed);
    break;
  case FU_INIT_ZEROS: fu_strbuf_puts(sb, "zeros"); break;
  case FU_INIT_ONES: fu_strbuf_puts(sb, "ones"); break;
  case FU_INIT_VALUE: fu_strbuf_puts(sb, "value"); break;
  case FU_INIT_NPY: fu_strbuf_printf(sb, "npy \"%s\"", ex->npy_path ? ex->npy_path : "?"); break;
  }
}

/* ---- the summary ---------------------------------------------------------------- */

static void put_scalar(fu_strbuf *sb, const fu_arg *a, bool json) {
  double v = fu_arg_scalar_as_double(a);
  int64_t iv = fu_dtype_is_bool(a->scalar_dtype) ? a->scalar.b : a->scalar.i;
  put_value(sb, a->scalar_dtype, v, iv, json);
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
  if (strcmp(kind, "output") != 0 || args->print_values == 0) return;
  fu_strbuf_puts(sb, "\n    values: ");
  put_values(sb, t, args->print_values, false);
  tensor_stats s = stats_of(t);
  fu_strbuf_puts(sb, "\n    min=");
  if (s.numel - s.n_nan > 0) {
    put_value(sb, t->dtype, s.min, (int64_t)s.min, false);
    fu_strbuf_puts(sb, " max=");
    put_value(sb, t->dtype, s.max, (int64_t)s.max, false);
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

static void json_arg(fu_strbuf *sb, const fu_value *v, const fu_arg *a, const char *source, const run_args *args) {
  fu_strbuf_puts(sb, "{\"name\": ");
  put_json_string(sb, v->name ? v->name : "");
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
        put_value(sb, t->dtype, s.min, (int64_t)s.min, true);
      else
        fu_strbuf_puts(sb, "null");
      fu_strbuf_puts(sb, ", \"max\": ");
      if (any)
        put_value(sb, t->dtype, s.max, (int64_t)s.max, true);
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
    put_json_string(sb, source);
  }
  fu_strbuf_putc(sb, '}');
}

/* ---- saving -------------------------------------------------------------------- */

static bool make_dir(const char *dir) {
  if (mkdir(dir, 0777) == 0 || errno == EEXIST) return true;
  fprintf(stderr, TOOL ": cannot create directory '%s': %s\n", dir, strerror(errno));
  return false;
}

/* DIR/<name>.npy, or DIR/<fusion>/<name>.npy when several fusions run. */
static bool save_args(const char *dir, const char *sub, const fu_value *const *vals, const fu_arg *args, uint32_t n,
                      fu_diag_engine *diag, fu_strbuf *log) {
  char path[4096];
  if (!make_dir(dir)) return false;
  if (sub) {
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    if (!make_dir(path)) return false;
  }
  for (uint32_t i = 0; i < n; i++) {
    fu_host_tensor scalar;
    const fu_host_tensor *t = &args[i].tensor;
    if (args[i].kind == FU_ARG_SCALAR) {
      if (fu_host_tensor_alloc(&scalar, fu_default_allocator(), args[i].scalar_dtype, 0, NULL) != FU_OK) return false;
      if (fu_dtype_is_float(args[i].scalar_dtype))
        fu_host_tensor_set_flat(&scalar, 0, args[i].scalar.f);
      else
        fu_host_tensor_set_i64(&scalar, NULL, fu_dtype_is_bool(args[i].scalar_dtype) ? args[i].scalar.b : args[i].scalar.i);
      t = &scalar;
    }
    if (sub)
      snprintf(path, sizeof path, "%s/%s/%s.npy", dir, sub, vals[i]->name ? vals[i]->name : "unnamed");
    else
      snprintf(path, sizeof path, "%s/%s.npy", dir, vals[i]->name ? vals[i]->name : "unnamed");
    fu_status st = fu_npy_write(path, t, diag);
    if (args[i].kind == FU_ARG_SCALAR) fu_host_tensor_free(&scalar);
    if (st != FU_OK) return false;
    if (log) fu_strbuf_printf(log, "  saved %s\n", path);
  }
  return true;
}

/* ---- running ----------------------------------------------------------------------- */

/* The file's directory, for paths in npy="..." attributes. */
static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  size_t n = slash ? (size_t)(slash - path) : 1;
  char *d = malloc(n + 1);
  if (!d) return NULL;
  if (slash)
    memcpy(d, path, n);
  else
    d[0] = '.';
  d[n] = '\0';
  if (slash == path) strcpy(d, "/");
  return d;
}

/* One fusion on the CPU reference interpreter: make inputs, run, print the
 * summary (text or one JSON object), save .npy files.  Returns 0 or 1. */
static int run_cpu(fu_fusion *f, const run_args *a, bool several, fu_diag_engine *diag, fu_strbuf *out,
                   bool first_json) {
  fu_allocator al = fu_default_allocator();
  char *base = strcmp(a->file, "-") == 0 ? NULL : dir_of(a->file);
  fu_input_options io;
  memset(&io, 0, sizeof io);
  io.base_dir = base;
  io.overrides = a->overrides;
  io.n_overrides = a->n_overrides;
  io.seed = a->seed;
  io.random = a->random;
  io.default_extent = a->default_extent;
  fu_arg *in = NULL, *res = NULL;
  uint32_t n_in = 0, n_res = 0;
  int rc = 1;
  fu_status st = fu_interp_make_inputs(f, &io, al, diag, &in, &n_in);
  if (st == FU_OK) st = fu_interp_run(f, in, n_in, NULL, al, diag, &res, &n_res);
  if (st != FU_OK) goto done;

  uint32_t n_out = fu_fusion_outputs(f, NULL, 0);
  fu_value **outs = calloc(n_out ? n_out : 1, sizeof *outs);
  fu_op **in_ops = calloc(n_in ? n_in : 1, sizeof *in_ops);
  fu_value **in_vals = calloc(n_in ? n_in : 1, sizeof *in_vals);
  if (!outs || !in_ops || !in_vals) {
    free(outs);
    free(in_ops);
    free(in_vals);
    fprintf(stderr, TOOL ": out of memory\n");
    goto done;
  }
  fu_fusion_outputs(f, outs, n_out);
  fu_interp_inputs_of(f, in_ops, n_in);
  for (uint32_t i = 0; i < n_in; i++) in_vals[i] = in_ops[i]->results[0];

  fu_strbuf log;
  fu_strbuf_init(&log, al);
  bool saved = true;
  if (a->save_inputs) saved = save_args(a->save_inputs, several ? f->name : NULL, (const fu_value *const *)in_vals, in, n_in, diag, a->json ? NULL : &log);
  if (saved && a->save_outputs)
    saved = save_args(a->save_outputs, several ? f->name : NULL, (const fu_value *const *)outs, res, n_res, diag,
                      a->json ? NULL : &log);

  if (a->json) {
    if (!first_json) fu_strbuf_puts(out, ",\n");
    fu_strbuf_puts(out, "  {\"fusion\": ");
    put_json_string(out, f->name ? f->name : "");
    fu_strbuf_puts(out, ", \"device\": \"cpu\", \"inputs\": [");
    for (uint32_t i = 0; i < n_in; i++) {
      fu_strbuf src;
      fu_strbuf_init(&src, al);
      describe_source(&src, a, in_ops[i]);
      fu_strbuf_puts(out, i ? ", " : "");
      json_arg(out, in_vals[i], &in[i], src.data ? src.data : "", a);
      fu_strbuf_free(&src);
    }
    fu_strbuf_puts(out, "],\n   \"outputs\": [");
    for (uint32_t i = 0; i < n_res; i++) {
      fu_strbuf_puts(out, i ? ",\n               " : "");
      json_arg(out, outs[i], &res[i], NULL, a);
    }
    fu_strbuf_puts(out, "]}");
  } else {
    fu_strbuf_printf(out, "fusion @%s: %u input%s, %u output%s (cpu reference interpreter)\n", f->name ? f->name : "",
                     n_in, n_in == 1 ? "" : "s", n_res, n_res == 1 ? "" : "s");
    for (uint32_t i = 0; i < n_in; i++) {
      text_arg(out, "input", in_vals[i], &in[i], a);
      fu_strbuf_puts(out, " from ");
      describe_source(out, a, in_ops[i]);
      fu_strbuf_putc(out, '\n');
    }
    for (uint32_t i = 0; i < n_res; i++) {
      text_arg(out, "output", outs[i], &res[i], a);
      fu_strbuf_putc(out, '\n');
    }
    fu_strbuf_append(out, log.data ? log.data : "", log.len);
  }
  fu_strbuf_free(&log);
  free(outs);
  free(in_ops);
  free(in_vals);
  rc = saved ? 0 : 1;
done:
  fu_args_free(in, n_in, al);
  fu_args_free(res, n_res, al);
  free(base);
  return rc;
}

int main(int argc, char **argv) {
  run_args a;
  parse_args(argc, argv, &a);
  fu_allocator al = fu_default_allocator();
  fu_diag_engine diag;
  fu_diag_init(&diag, al);

  char *text = NULL;
  size_t len = 0;
  fu_status st = strcmp(a.file, "-") == 0 ? fu_read_stream(stdin, al, &text, &len) : fu_read_file(a.file, al, &text, &len);
  if (st != FU_OK) {
    fprintf(stderr, TOOL ": cannot read '%s': %s\n", a.file, st == FU_ERR_NOMEM ? "out of memory" : strerror(errno));
    return 1;
  }
  fu_source src = {strcmp(a.file, "-") == 0 ? "<stdin>" : a.file, text, len, 1};
  fu_module *m = NULL;
  int rc = 1;
  st = fu_parse_module(&src, al, &diag, &m);
  if (st == FU_OK) st = fu_verify_module(m, &diag);
  if (st != FU_OK) goto out;

  uint32_t n_selected = 0;
  for (fu_fusion *f = m->first; f; f = f->next)
    if (!a.fusion || (f->name && strcmp(f->name, a.fusion) == 0)) n_selected++;
  if (n_selected == 0) {
    fu_strbuf names;
    fu_strbuf_init(&names, al);
    for (fu_fusion *f = m->first; f; f = f->next) fu_strbuf_printf(&names, " @%s", f->name ? f->name : "");
    if (a.fusion)
      fprintf(stderr, TOOL ": no fusion named '@%s' in '%s' (it has:%s)\n", a.fusion, src.name,
              names.len ? names.data : " none");
    else
      fprintf(stderr, TOOL ": '%s' holds no fusion\n", src.name);
    fu_strbuf_free(&names);
    goto out;
  }

  if (a.device != DEVICE_CPU) {
    /* The GPU path (compile, load with the driver API, run, check) comes
     * with the runtime; until then say so rather than guess. */
    fprintf(stderr, TOOL ": the GPU runtime is not built in this binary; use --device=cpu for the reference "
                    "interpreter\n");
    rc = 2;
    goto out;
  }

  fu_strbuf outbuf;
  fu_strbuf_init(&outbuf, al);
  if (a.json) fu_strbuf_puts(&outbuf, "{\"fusions\": [\n");
  rc = 0;
  bool first = true;
  for (fu_fusion *f = m->first; f; f = f->next) {
    if (a.fusion && (!f->name || strcmp(f->name, a.fusion) != 0)) continue;
    size_t before = outbuf.len;
    if (run_cpu(f, &a, n_selected > 1, &diag, &outbuf, first) != 0) rc = 1;
    if (outbuf.len != before) first = false;
  }
  if (a.json) fu_strbuf_puts(&outbuf, "\n]}\n");
  fwrite(outbuf.data ? outbuf.data : "", 1, outbuf.len, stdout);
  if (fflush(stdout) != 0) rc = 1;
  fu_strbuf_free(&outbuf);
out:
  if (m) fu_module_free(m);
  fu_mem_free(&al, text, len + 1);
  for (uint32_t i = 0; i < a.n_overrides; i++) free((char *)a.overrides[i].name);
  free(a.overrides);
  return rc;
}
