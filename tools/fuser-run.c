/* fuser-run: run a fusion and summarise its outputs.
 *
 *   fuser-run FILE.fir [--device=gpu] [--ptx FILE.ptx] [--check] [--bench]
 *             [--iters N] [--warmup N] [--no-flush] [--rtol X] [--atol X]
 *             [--dump=launch,jit,ptx] [--gpu N] [--pass PIPELINE] [--device-info]
 *   fuser-run FILE.fir --device=cpu
 *   common:   [--fusion=@name] [--input NAME=SRC]... [--random]
 *             [--default-extent N] [--seed N] [--save-outputs DIR]
 *             [--save-inputs DIR] [--print-values N|all] [--json]
 *
 * --device=cpu runs the reference interpreter (lib/interp).  The default,
 * --device=gpu, runs the fusion's kernels with the CUDA driver API
 * (lib/runtime): a build with the LLVM backend compiles the fusion itself
 * (the pipeline `all`, scheduled for the GPU it finds); a build without it
 * needs an already-lowered .fir and its PTX (--ptx).  --check compares every
 * output with the interpreter, --bench times the kernels.  Exit codes: 0
 * success, 1 an error in the input, while running, or a failed check, 2 a
 * usage error or no usable device. */
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
#ifdef FUSER_HAS_CUDA_DRIVER
#include <stdint.h>
#include <unistd.h>

#include "fuser/pass.h"
#include "fuser/runtime.h"
#endif

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
  /* the GPU path */
  const char *ptx;       /* --ptx: PTX of a lowered fusion */
  const char *pipeline;  /* --pass: the pipeline that compiles (default: all) */
  bool check, bench, no_flush, device_info;
  bool dump_launch, dump_jit, dump_ptx;
  uint32_t iters, warmup;
  double rtol, atol;     /* < 0: the dtype's default */
  int gpu;               /* device ordinal */
} run_args;

static void usage(FILE *out) {
  fprintf(out,
          "usage: " TOOL " FILE.fir [options]\n"
          "Run a fusion on the GPU (default) or on the CPU reference interpreter, and print a\n"
          "summary of each output.\n\n"
          "  --device=gpu|cpu         where to run (default gpu; cpu: the reference interpreter)\n"
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
          "GPU options:\n"
          "  --ptx FILE.ptx           the kernels of an already-lowered FILE.fir (made elsewhere with\n"
          "                           fuser-opt --pass=all --emit=ptx); required in builds without LLVM\n"
          "  --pass PIPELINE          the passes that compile the fusion (default: all, scheduled for\n"
          "                           the GPU found); only in builds with the LLVM backend\n"
          "  --check                  run the interpreter on the same inputs and compare every output\n"
          "                           (outputs are poisoned with 0xFF bytes first)\n"
          "  --rtol X, --atol X       tolerances for float outputs (default: by dtype)\n"
          "  --bench                  time the kernels: CUDA events, L2 flushed before each run,\n"
          "                           median, GB/s and %% of the measured copy bandwidth\n"
          "  --iters N, --warmup N    timed and warm-up runs for --bench (default 100 and 10)\n"
          "  --no-flush               do not flush L2 between timed runs\n"
          "  --dump=launch,jit,ptx    print each kernel's grid, block, shared memory and arguments;\n"
          "                           the JIT's info log; the PTX\n"
          "  --gpu N                  the CUDA device to use (default 0)\n"
          "  --device-info            print the GPU's description and exit\n"
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

static double parse_double(const char *s, const char *opt) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= 0)) {
    fprintf(stderr, TOOL ": invalid value '%s' for %s\n", s, opt);
    exit(2);
  }
  return v;
}

/* --dump=launch,jit,ptx */
static void parse_dump(run_args *a, const char *v) {
  const char *p = v;
  while (*p) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n == 6 && strncmp(p, "launch", 6) == 0)
      a->dump_launch = true;
    else if (n == 3 && strncmp(p, "jit", 3) == 0)
      a->dump_jit = true;
    else if (n == 3 && strncmp(p, "ptx", 3) == 0)
      a->dump_ptx = true;
    else {
      fprintf(stderr, TOOL ": unknown --dump item '%.*s' (expected launch, jit or ptx)\n", (int)n, p);
      exit(2);
    }
    if (!end) break;
    p = end + 1;
  }
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
  a->rtol = a->atol = -1;
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
      if (a->default_extent == 0) {
        fprintf(stderr, TOOL ": error: --default-extent must be at least 1 (it is the size of every unbound symbol)\n");
        exit(2);
      }
    } else if ((v = opt_value(argc, argv, &i, "--save-outputs"))) {
      a->save_outputs = v;
    } else if ((v = opt_value(argc, argv, &i, "--save-inputs"))) {
      a->save_inputs = v;
    } else if ((v = opt_value(argc, argv, &i, "--print-values"))) {
      a->print_values = strcmp(v, "all") == 0 ? -1 : parse_int(v, "--print-values", 0);
    } else if ((v = opt_value(argc, argv, &i, "--ptx"))) {
      a->ptx = v;
    } else if ((v = opt_value(argc, argv, &i, "--pass"))) {
      a->pipeline = v;
    } else if ((v = opt_value(argc, argv, &i, "--iters"))) {
      a->iters = (uint32_t)parse_int(v, "--iters", 1);
    } else if ((v = opt_value(argc, argv, &i, "--warmup"))) {
      a->warmup = (uint32_t)parse_int(v, "--warmup", 1);
    } else if ((v = opt_value(argc, argv, &i, "--rtol"))) {
      a->rtol = parse_double(v, "--rtol");
    } else if ((v = opt_value(argc, argv, &i, "--atol"))) {
      a->atol = parse_double(v, "--atol");
    } else if ((v = opt_value(argc, argv, &i, "--dump"))) {
      parse_dump(a, v);
    } else if ((v = opt_value(argc, argv, &i, "--gpu"))) {
      a->gpu = (int)parse_int(v, "--gpu", 0);
    } else if (strcmp(arg, "--check") == 0) {
      a->check = true;
    } else if (strcmp(arg, "--bench") == 0) {
      a->bench = true;
    } else if (strcmp(arg, "--no-flush") == 0) {
      a->no_flush = true;
    } else if (strcmp(arg, "--device-info") == 0) {
      a->device_info = true;
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
  if (a->iters > 1000000) a->iters = 1000000;
  if (a->device == DEVICE_CPU &&
      (a->ptx || a->pipeline || a->check || a->bench || a->device_info || a->dump_launch || a->dump_jit || a->dump_ptx)) {
    fprintf(stderr, TOOL ": --ptx, --pass, --check, --bench, --dump and --device-info need --device=gpu\n");
    exit(2);
  }
  if (!a->file && !a->device_info) {
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

/* The "inputs" list's entries, then the "outputs" key and its entries, as
 * both the CPU and the GPU paths print them with --json. */
static void json_inputs_outputs(fu_strbuf *out, const run_args *a, fu_allocator al, fu_op *const *in_ops,
                                const fu_arg *in, uint32_t n_in, fu_value *const *outs, const fu_arg *res,
                                uint32_t n_res) {
  for (uint32_t i = 0; i < n_in; i++) {
    fu_strbuf src;
    fu_strbuf_init(&src, al);
    describe_source(&src, a, in_ops[i]);
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
    json_inputs_outputs(out, a, al, in_ops, in, n_in, outs, res, n_res);
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

/* ---- the GPU path ----------------------------------------------------------------- */

#ifdef FUSER_HAS_CUDA_DRIVER

/* Diagnostics of the GPU path: located ones as usual; unlocated ones (the
 * driver's) prefixed with the tool's name.  While `hold` is set the first
 * unlocated error is kept instead, so that opening the device can fail
 * with one clear line. */
typedef struct gpu_diag {
  bool hold;
  char held[1024];
} gpu_diag;

static void gpu_diag_handler(void *user, const fu_diagnostic *d) {
  gpu_diag *g = user;
  bool located = fu_loc_known(d->loc) || (d->loc.src && d->loc.src->name);
  if (g->hold && !located && d->severity == FU_SEV_ERROR && !g->held[0]) {
    snprintf(g->held, sizeof g->held, "%s", d->message);
    return;
  }
  if (located)
    fu_diag_print(stderr, d);
  else
    fprintf(stderr, TOOL ": %s: %s\n", fu_severity_name(d->severity), d->message);
}

/* Runs the pipeline `all` (or --pass) over the module, with the passes
 * tuned for the GPU found (the run options' typed device). */
static fu_status compile_module(fu_module *m, const run_args *a, const fu_device *dev, const fu_source *src,
                                fu_diag_engine *diag) {
  fu_pipeline p;
  fu_pipeline_init(&p, fu_default_allocator());
  fu_status st = fu_pipeline_parse(&p, a->pipeline ? a->pipeline : "all", "--pass", diag);
  if (st == FU_OK) {
    fu_run_options ro = fu_run_options_default();
    ro.device = dev;
    st = fu_pipeline_run(&p, m, &ro, NULL, src, diag);
  }
  fu_pipeline_free(&p);
  return st;
}

static const char *output_name(const fu_value *v) { return v->name ? v->name : "?"; }

static void put_shape(fu_strbuf *sb, const fu_host_tensor *t) {
  fu_strbuf_puts(sb, fu_dtype_name(t->dtype));
  put_dims(sb, t->rank, t->shape);
}

typedef struct check_line {
  bool done;
  bool pass;
  fu_rt_check_result r;
  fu_rt_tolerance tol;
  int64_t n_unwritten; /* int outputs: elements that change with the poison byte */
} check_line;

/* Ints have no NaN: an element that no kernel writes looks like -1 after
 * the 0xFF poison, a valid value.  A second run poisoned with 0x00 tells:
 * elements that differ between the runs were never written. */
static fu_status recheck_ints(fu_rt_exec *e, const fu_arg *first, uint32_t n, check_line *lines) {
  bool any = false;
  for (uint32_t i = 0; i < n; i++)
    if (first[i].kind == FU_ARG_TENSOR && fu_dtype_is_int(first[i].tensor.dtype)) any = true;
  if (!any) return FU_OK;
  fu_allocator al = fu_default_allocator();
  fu_arg *second = NULL;
  uint32_t n2 = 0;
  fu_status st = fu_rt_exec_poison(e, 0x00);
  if (st == FU_OK) st = fu_rt_exec_run(e);
  if (st == FU_OK) st = fu_rt_exec_outputs(e, al, &second, &n2);
  if (st != FU_OK) return st;
  for (uint32_t i = 0; i < n && i < n2; i++) {
    const fu_host_tensor *t = &first[i].tensor;
    if (first[i].kind != FU_ARG_TENSOR || !fu_dtype_is_int(t->dtype)) continue;
    size_t es = fu_dtype_size(t->dtype);
    int64_t numel = fu_host_tensor_numel(t);
    for (int64_t k = 0; k < numel; k++)
      if (memcmp((const char *)t->data + k * (int64_t)es, (const char *)second[i].tensor.data + k * (int64_t)es, es))
        lines[i].n_unwritten++;
    if (lines[i].n_unwritten) lines[i].pass = false;
  }
  fu_args_free(second, n2, al);
  return FU_OK;
}

static void text_check(fu_strbuf *sb, const fu_value *v, const fu_host_tensor *t, const check_line *c) {
  fu_strbuf_printf(sb, "  check %%%s: %s ", output_name(v), c->pass ? "PASS" : "FAIL");
  put_shape(sb, t);
  const fu_rt_check_result *r = &c->r;
  if (r->n_mismatch) {
    fu_strbuf_printf(sb, ": %lld of %lld elements differ", (long long)r->n_mismatch, (long long)r->n_elements);
    if (r->n_poison) fu_strbuf_printf(sb, " (%lld still hold the 0xFF poison: never written)", (long long)r->n_poison);
    fu_strbuf_printf(sb, "; first at flat index %lld: got ", (long long)r->first_mismatch);
    put_value(sb, t->dtype, r->got_first, (int64_t)r->got_first, false);
    fu_strbuf_puts(sb, ", want ");
    put_value(sb, t->dtype, r->want_first, (int64_t)r->want_first, false);
  }
  if (c->n_unwritten)
    fu_strbuf_printf(sb, "%s%lld elements change with the poison byte (never written)", r->n_mismatch ? "; " : ": ",
                     (long long)c->n_unwritten);
  fu_strbuf_printf(sb, "; max abs err %.3g, max rel err %.3g", r->max_abs_err, r->max_rel_err);
  if (fu_dtype_is_float(t->dtype)) fu_strbuf_printf(sb, " (rtol %g, atol %g)", c->tol.rtol, c->tol.atol);
  else fu_strbuf_puts(sb, " (exact)");
  fu_strbuf_putc(sb, '\n');
}

static void json_check(fu_strbuf *sb, const fu_value *v, const fu_host_tensor *t, const check_line *c) {
  const fu_rt_check_result *r = &c->r;
  fu_strbuf_puts(sb, "{\"output\": ");
  put_json_string(sb, output_name(v));
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
  if (r->n_mismatch) {
    fu_strbuf_printf(sb, ", \"first_mismatch\": %lld, \"got\": ", (long long)r->first_mismatch);
    put_value(sb, t->dtype, r->got_first, (int64_t)r->got_first, true);
    fu_strbuf_puts(sb, ", \"want\": ");
    put_value(sb, t->dtype, r->want_first, (int64_t)r->want_first, true);
  }
  fu_strbuf_putc(sb, '}');
}

static void text_timing(fu_strbuf *sb, const char *what, const fu_rt_timing *t) {
  fu_strbuf_printf(sb, "    %s: median %.2f us (min %.2f, max %.2f), %llu bytes, %.1f GB/s, %.1f%% of copy\n", what,
                   t->median_us, t->min_us, t->max_us, (unsigned long long)t->bytes, t->gbs, t->pct_copy);
}

static void json_timing(fu_strbuf *sb, const fu_rt_timing *t) {
  fu_strbuf_puts(sb, "{\"name\": ");
  put_json_string(sb, t->name ? t->name : "");
  fu_strbuf_printf(sb, ", \"median_us\": %.4f, \"min_us\": %.4f, \"max_us\": %.4f, \"bytes\": %llu, \"gbs\": %.3f, "
                       "\"pct_copy\": %.3f}",
                   t->median_us, t->min_us, t->max_us, (unsigned long long)t->bytes, t->gbs, t->pct_copy);
}

typedef struct gpu_ctx {
  fu_rt *rt;
  fu_diag_engine *diag;
  const char *ptx_text; /* --ptx contents, or NULL */
  size_t ptx_len;
  fu_compiler comp;     /* the build's target, when it has one */
  fu_module *m;
  const fu_source *src;
} gpu_ctx;

/* The PTX for f: the --ptx file, or the backend's for f's kernels. */
static fu_status ptx_for(gpu_ctx *g, fu_fusion *f, const run_args *a, fu_strbuf *own, const char **ptx, size_t *len) {
  if (g->ptx_text) {
    *ptx = g->ptx_text;
    *len = g->ptx_len;
    return FU_OK;
  }
  (void)a;
  if (!g->comp.target) {
    fprintf(stderr, TOOL ": no PTX: this build has no code-generation backend; pass --ptx FILE.ptx\n");
    return FU_ERR_UNSUPPORTED;
  }
  char arch[16];
  fu_rt_device_arch(fu_rt_device(g->rt), arch, sizeof arch);
  const char *use = g->comp.target->arch_supported(arch) ? arch : FU_DEFAULT_ARCH;
  fu_status st = fu_compile_module(&g->comp, g->m, f->name, FU_TARGET_PTX, use, g->src, own, g->diag);
  if (st != FU_OK) return st;
  *ptx = own->data ? own->data : "";
  *len = own->len;
  return FU_OK;
}

/* One fusion on the GPU: PTX, module, inputs, plan, run, outputs; then the
 * check against the interpreter and the benchmark when asked.  Returns 0,
 * or 1 on an error or a failed check. */
static int run_gpu_fusion(gpu_ctx *g, fu_fusion *f, const run_args *a, bool several, fu_strbuf *out, bool first_json) {
  fu_allocator al = fu_default_allocator();
  fu_diag_engine *diag = g->diag;
  char *base = strcmp(a->file, "-") == 0 ? NULL : dir_of(a->file);
  fu_input_options io;
  memset(&io, 0, sizeof io);
  io.base_dir = base;
  io.overrides = a->overrides;
  io.n_overrides = a->n_overrides;
  io.seed = a->seed;
  io.random = a->random;
  io.default_extent = a->default_extent;
  fu_arg *in = NULL, *res = NULL, *ref = NULL;
  uint32_t n_in = 0, n_res = 0, n_ref = 0;
  fu_rt_plan plan;
  memset(&plan, 0, sizeof plan);
  fu_rt_module *mod = NULL;
  fu_rt_exec *e = NULL;
  fu_rt_bench_result br;
  memset(&br, 0, sizeof br);
  bool have_bench = false;
  check_line *lines = NULL;
  fu_value **outs = NULL;
  fu_op **in_ops = NULL;
  fu_value **in_vals = NULL;
  fu_strbuf ptx_buf, dumps, log;
  fu_strbuf_init(&ptx_buf, al);
  fu_strbuf_init(&dumps, al);
  fu_strbuf_init(&log, al);
  int rc = 1;
  uint32_t n_kernels = fu_compile_count_kernels(g->m, f->name);

  const char *ptx = NULL;
  size_t ptx_len = 0;
  fu_status st = FU_OK;
  if (n_kernels) {
    st = ptx_for(g, f, a, &ptx_buf, &ptx, &ptx_len);
    if (st == FU_OK && a->dump_ptx) fu_strbuf_append(&dumps, ptx, ptx_len);
    if (st == FU_OK) {
      char name[256];
      if (a->ptx)
        snprintf(name, sizeof name, "%s", a->ptx);
      else
        snprintf(name, sizeof name, "<compiled @%s>", f->name ? f->name : "");
      st = fu_rt_module_load(g->rt, ptx, ptx_len, name, &mod);
    }
    if (st == FU_OK && a->dump_jit) fu_strbuf_printf(&dumps, "JIT log of @%s:\n%s\n", f->name ? f->name : "", fu_rt_module_info_log(mod));
  }
  if (st == FU_OK) st = fu_interp_make_inputs(f, &io, al, diag, &in, &n_in);
  if (st == FU_OK) st = fu_rt_plan_build(f, in, n_in, al, diag, &plan);
  if (st == FU_OK && a->dump_launch) fu_rt_plan_print_launches(&dumps, &plan);
  if (st == FU_OK) st = fu_rt_exec_new(g->rt, &plan, mod, in, diag, &e);
  if (st == FU_OK) st = fu_rt_exec_poison(e, 0xFF);
  if (st == FU_OK) st = fu_rt_exec_run(e);
  if (st == FU_OK) st = fu_rt_exec_outputs(e, al, &res, &n_res);
  if (st != FU_OK) goto done;

  bool all_pass = true;
  if (a->check) {
    st = fu_interp_run(f, in, n_in, NULL, al, diag, &ref, &n_ref);
    if (st != FU_OK) {
      fu_note(diag, f->loc, "while computing the reference results of '@%s' for --check", f->name ? f->name : "");
      goto done;
    }
    lines = calloc(n_res ? n_res : 1, sizeof *lines);
    if (!lines || n_ref != n_res) {
      st = FU_ERR_NOMEM;
      goto done;
    }
    for (uint32_t i = 0; i < n_res; i++) {
      check_line *c = &lines[i];
      if (res[i].kind != FU_ARG_TENSOR) {
        c->done = true;
        c->pass = true;
        continue;
      }
      c->tol = fu_rt_default_tolerance(res[i].tensor.dtype);
      if (fu_dtype_is_float(res[i].tensor.dtype)) {
        if (a->rtol >= 0) c->tol.rtol = a->rtol;
        if (a->atol >= 0) c->tol.atol = a->atol;
      }
      st = fu_rt_compare(&res[i].tensor, &ref[i].tensor, c->tol, &c->r);
      if (st != FU_OK) {
        fu_error(diag, f->loc, "output %u of '@%s' has a different dtype or shape on the GPU than in the interpreter", i,
                 f->name ? f->name : "");
        goto done;
      }
      c->done = true;
      c->pass = c->r.n_mismatch == 0;
    }
    if ((st = recheck_ints(e, res, n_res, lines)) != FU_OK) goto done;
    for (uint32_t i = 0; i < n_res; i++) all_pass &= lines[i].pass;
  }
  if (a->bench) {
    fu_rt_bench_options bo;
    memset(&bo, 0, sizeof bo);
    bo.iters = a->iters;
    bo.warmup = a->warmup;
    bo.no_flush = a->no_flush;
    if ((st = fu_rt_exec_bench(e, &bo, &br)) != FU_OK) goto done;
    have_bench = true;
  }

  uint32_t n_out = fu_fusion_outputs(f, NULL, 0);
  outs = calloc(n_out ? n_out : 1, sizeof *outs);
  in_ops = calloc(n_in ? n_in : 1, sizeof *in_ops);
  in_vals = calloc(n_in ? n_in : 1, sizeof *in_vals);
  if (!outs || !in_ops || !in_vals) {
    st = FU_ERR_NOMEM;
    goto done;
  }
  fu_fusion_outputs(f, outs, n_out);
  fu_interp_inputs_of(f, in_ops, n_in);
  for (uint32_t i = 0; i < n_in; i++) in_vals[i] = in_ops[i]->results[0];
  bool saved = true;
  if (a->save_inputs)
    saved = save_args(a->save_inputs, several ? f->name : NULL, (const fu_value *const *)in_vals, in, n_in, diag,
                      a->json ? NULL : &log);
  if (saved && a->save_outputs)
    saved = save_args(a->save_outputs, several ? f->name : NULL, (const fu_value *const *)outs, res, n_res, diag,
                      a->json ? NULL : &log);

  const fu_rt_device_info *dev = fu_rt_device(g->rt);
  if (a->json) {
    if (dumps.len) fwrite(dumps.data, 1, dumps.len, stderr);
    if (!first_json) fu_strbuf_puts(out, ",\n");
    fu_strbuf_puts(out, "  {\"fusion\": ");
    put_json_string(out, f->name ? f->name : "");
    fu_strbuf_puts(out, ", \"device\": \"gpu\", \"gpu\": ");
    put_json_string(out, dev->name);
    fu_strbuf_puts(out, ", \"inputs\": [");
    json_inputs_outputs(out, a, al, in_ops, in, n_in, outs, res, n_res);
    fu_strbuf_puts(out, "],\n   \"launches\": [");
    for (uint32_t l = 0; l < plan.n_launches; l++) {
      const fu_rt_launch_plan *lp = &plan.launches[l];
      const fu_rt_launch_config *c = &lp->config;
      fu_strbuf_printf(out, "%s{\"kernel\": ", l ? ", " : "");
      put_json_string(out, lp->kernel->name);
      fu_strbuf_printf(out, ", \"grid\": [%u, %u, %u], \"block\": [%u, %u, %u], \"smem\": %u, \"bytes_read\": %llu, "
                            "\"bytes_written\": %llu}",
                       c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1], c->block[2], c->smem_bytes,
                       (unsigned long long)lp->bytes_read, (unsigned long long)lp->bytes_written);
    }
    fu_strbuf_puts(out, "]");
    if (a->check) {
      fu_strbuf_puts(out, ",\n   \"check\": [");
      bool firstc = true;
      for (uint32_t i = 0; i < n_res; i++) {
        if (res[i].kind != FU_ARG_TENSOR) continue;
        fu_strbuf_puts(out, firstc ? "" : ", ");
        firstc = false;
        json_check(out, outs[i], &res[i].tensor, &lines[i]);
      }
      fu_strbuf_printf(out, "], \"check_pass\": %s", all_pass ? "true" : "false");
    }
    if (have_bench) {
      fu_strbuf_printf(out, ",\n   \"bench\": {\"iters\": %u, \"warmup\": %u, \"l2_flush_bytes\": %zu, \"copy_bytes\": %zu, "
                            "\"copy_gbs\": %.3f, \"kernels\": [",
                       br.iters, br.warmup, br.flush_bytes, br.copy_bytes, br.copy_gbs);
      for (uint32_t k = 0; k < br.n_kernels; k++) {
        fu_strbuf_puts(out, k ? ", " : "");
        json_timing(out, &br.kernels[k]);
      }
      fu_strbuf_puts(out, "], \"total\": ");
      json_timing(out, &br.total);
      fu_strbuf_puts(out, "}");
    }
    fu_strbuf_puts(out, "}");
  } else {
    fu_strbuf_printf(out, "fusion @%s: %u input%s, %u output%s (gpu %d: %s, %u kernel%s)\n", f->name ? f->name : "",
                     n_in, n_in == 1 ? "" : "s", n_res, n_res == 1 ? "" : "s", dev->ordinal, dev->name, n_kernels,
                     n_kernels == 1 ? "" : "s");
    fu_strbuf_append(out, dumps.data ? dumps.data : "", dumps.len);
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
    if (a->check)
      for (uint32_t i = 0; i < n_res; i++)
        if (res[i].kind == FU_ARG_TENSOR) text_check(out, outs[i], &res[i].tensor, &lines[i]);
    if (have_bench) {
      fu_strbuf_printf(out, "  bench: median of %u runs after %u warm-up", br.iters, br.warmup);
      if (br.flush_bytes)
        fu_strbuf_printf(out, ", L2 flushed before each run (%.1f MiB written)", (double)br.flush_bytes / (1 << 20));
      else
        fu_strbuf_puts(out, ", L2 not flushed");
      fu_strbuf_printf(out, "; copy bandwidth %.1f GB/s (%.0f MiB copied, read + write)\n", br.copy_gbs,
                       (double)br.copy_bytes / (1 << 20));
      for (uint32_t k = 0; k < br.n_kernels; k++) {
        char what[300];
        snprintf(what, sizeof what, "kernel @%s", br.kernels[k].name);
        text_timing(out, what, &br.kernels[k]);
      }
      text_timing(out, "total", &br.total);
    }
    fu_strbuf_append(out, log.data ? log.data : "", log.len);
  }
  rc = saved && all_pass ? 0 : 1;
done:
  if (st != FU_OK) {
    rc = 1;
    /* What was dumped before the failure helps to find it. */
    if (dumps.len) fwrite(dumps.data, 1, dumps.len, stderr);
  }
  fu_rt_bench_result_free(&br);
  fu_rt_exec_free(e);
  fu_rt_module_unload(mod);
  fu_rt_plan_free(&plan);
  fu_args_free(in, n_in, al);
  fu_args_free(res, n_res, al);
  fu_args_free(ref, n_ref, al);
  free(lines);
  free(outs);
  free(in_ops);
  free(in_vals);
  fu_strbuf_free(&ptx_buf);
  fu_strbuf_free(&dumps);
  fu_strbuf_free(&log);
  free(base);
  return rc;
}

/* Everything the GPU path checks before it touches a device: a fusion it
 * cannot compile here, or PTX it cannot get, is a clear error at once. */
static int gpu_preflight(const run_args *a, fu_module *m, uint32_t n_selected) {
  if (a->ptx && n_selected > 1) {
    fprintf(stderr, TOOL ": --ptx gives the kernels of one fusion, but '%s' has %u; pick one with --fusion=@NAME\n",
            a->file, n_selected);
    return 2;
  }
  if (fu_target_lookup(NULL)) return 0;
  if (a->pipeline) {
    fprintf(stderr, TOOL ": --pass needs the LLVM backend, which this build does not have\n");
    return 2;
  }
  for (fu_fusion *f = m->first; f; f = f->next) {
    if (a->fusion && (!f->name || strcmp(f->name, a->fusion) != 0)) continue;
    const fu_op *why = NULL;
    if (!fu_rt_fusion_is_lowered(f, &why)) {
      fprintf(stderr,
              TOOL ": fusion '@%s' is not compiled (%s '%s' at line %u %s), and this build has no LLVM "
                   "backend to compile it.\n" TOOL ": compile it where LLVM is: fuser-opt --pass=all FILE.fir -o "
                   "FILE.lowered.fir and fuser-opt --pass=all --emit=ptx FILE.fir -o FILE.ptx, then run "
                   "fuser-run FILE.lowered.fir --ptx FILE.ptx\n",
              f->name ? f->name : "", why->kind == FU_OP_SEGMENT ? "segment" : "op",
              why->kind == FU_OP_SEGMENT ? (why->u.segment.name ? why->u.segment.name : "?")
                                         : fu_op_info_of(why->kind)->name,
              fu_loc_file_line(why->loc), why->kind == FU_OP_SEGMENT ? "has no kernel" : "is in no segment");
      return 1;
    }
    if (!a->ptx && fu_compile_count_kernels(m, f->name) > 0) {
      fprintf(stderr,
              TOOL ": fusion '@%s' needs PTX, and this build has no LLVM backend to make it: pass --ptx FILE.ptx (made "
                   "where LLVM is with fuser-opt --pass=all --emit=ptx FILE.fir -o FILE.ptx)\n",
              f->name ? f->name : "");
      return 2;
    }
  }
  return 0;
}

static int run_gpu(const run_args *a, fu_module *m, const fu_source *src, uint32_t n_selected) {
  fu_allocator al = fu_default_allocator();
  gpu_diag gd;
  memset(&gd, 0, sizeof gd);
  fu_diag_engine diag;
  fu_diag_init(&diag, al);
  diag.handler = gpu_diag_handler;
  diag.user = &gd;
  int rc = m ? gpu_preflight(a, m, n_selected) : 0;
  if (rc) return rc;

  gpu_ctx g;
  memset(&g, 0, sizeof g);
  g.diag = &diag;
  fu_rt_options ro;
  memset(&ro, 0, sizeof ro);
  ro.device_ordinal = a->gpu;
  gd.hold = true;
  fu_status st = fu_rt_open(&ro, al, &diag, &g.rt);
  gd.hold = false;
  if (st != FU_OK) {
    if (gd.held[0])
      fprintf(stderr, TOOL ": %s%s\n", gd.held,
              st == FU_ERR_UNSUPPORTED ? "; use --device=cpu for the reference interpreter" : "");
    return st == FU_ERR_UNSUPPORTED || st == FU_ERR_INVALID_ARG ? 2 : 1;
  }
  const fu_rt_device_info *dev = fu_rt_device(g.rt);
  if (a->device_info) {
    fu_strbuf sb;
    fu_strbuf_init(&sb, al);
    fu_rt_device_print(&sb, dev);
    fu_strbuf_puts(&sb, "  as a device file (fuser-opt --pass=schedule{device=FILE}):\n");
    fu_strbuf desc;
    fu_strbuf_init(&desc, al);
    fu_device_print(&desc, &dev->desc);
    for (const char *p = desc.data; p && *p;) {
      const char *nl = strchr(p, '\n');
      size_t n = nl ? (size_t)(nl - p) : strlen(p);
      fu_strbuf_printf(&sb, "    %.*s\n", (int)n, p);
      p += n + (nl ? 1 : 0);
    }
    fu_strbuf_free(&desc);
    fwrite(sb.data ? sb.data : "", 1, sb.len, stdout);
    fu_strbuf_free(&sb);
    fu_rt_close(g.rt);
    return 0;
  }

  char *ptx_text = NULL;
  size_t ptx_len = 0;
  if (a->ptx) {
    st = fu_read_file(a->ptx, al, &ptx_text, &ptx_len);
    if (st != FU_OK) {
      fprintf(stderr, TOOL ": cannot read '%s': %s\n", a->ptx, st == FU_ERR_NOMEM ? "out of memory" : strerror(errno));
      fu_rt_close(g.rt);
      return 1;
    }
    g.ptx_text = ptx_text;
    g.ptx_len = ptx_len;
  }
  fu_compiler_init(&g.comp, NULL, NULL, al);
  g.m = m;
  g.src = src;
  if (g.comp.target) {
    bool need_compile = a->pipeline != NULL;
    for (fu_fusion *f = m->first; f; f = f->next)
      if (!a->fusion || (f->name && strcmp(f->name, a->fusion) == 0)) need_compile |= !fu_rt_fusion_is_lowered(f, NULL);
    if (need_compile && (st = compile_module(m, a, &dev->desc, src, &diag)) != FU_OK) rc = 1;
  }
  fu_strbuf outbuf;
  fu_strbuf_init(&outbuf, al);
  bool opened = !rc && a->json;
  if (opened) fu_strbuf_puts(&outbuf, "{\"fusions\": [\n");
  bool first = true;
  for (fu_fusion *f = m->first; f && !rc; f = f->next) {
    if (a->fusion && (!f->name || strcmp(f->name, a->fusion) != 0)) continue;
    const fu_op *why = NULL;
    if (!fu_rt_fusion_is_lowered(f, &why)) {
      fu_error(&diag, why->loc, "%s '%s' of fusion '@%s' has no kernel after the pipeline: its kind cannot be compiled yet",
               why->kind == FU_OP_SEGMENT ? "segment" : "op",
               why->kind == FU_OP_SEGMENT ? (why->u.segment.name ? why->u.segment.name : "?")
                                          : fu_op_info_of(why->kind)->name,
               f->name ? f->name : "");
      rc = 1;
      continue;
    }
    size_t before = outbuf.len;
    if (run_gpu_fusion(&g, f, a, n_selected > 1, &outbuf, first) != 0) rc = 1;
    if (outbuf.len != before) first = false;
  }
  if (opened) fu_strbuf_puts(&outbuf, "\n]}\n");
  fwrite(outbuf.data ? outbuf.data : "", 1, outbuf.len, stdout);
  if (fflush(stdout) != 0) rc = 1;
  fu_strbuf_free(&outbuf);
  fu_compiler_free(&g.comp);
  if (ptx_text) fu_mem_free(&al, ptx_text, ptx_len + 1);
  fu_rt_close(g.rt);
  return rc;
}

#else /* !FUSER_HAS_CUDA_DRIVER */

static int run_gpu(const run_args *a, fu_module *m, const fu_source *src, uint32_t n_selected) {
  (void)a;
  (void)m;
  (void)src;
  (void)n_selected;
  fprintf(stderr, TOOL ": the GPU runtime is not built in this binary; use --device=cpu for the reference "
                  "interpreter\n");
  return 2;
}

#endif

int main(int argc, char **argv) {
  run_args a;
  parse_args(argc, argv, &a);
  if (!a.file) return run_gpu(&a, NULL, NULL, 0); /* --device-info alone */
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

  fu_loc file_loc = {&src, 0, 0}; /* the file, no line */
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
      fu_error(&diag, file_loc, "the input holds no fusion");
    fu_strbuf_free(&names);
    goto out;
  }

  if (a.device != DEVICE_CPU) {
    rc = run_gpu(&a, m, &src, n_selected);
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
