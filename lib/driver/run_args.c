/* fuser driver: fuser-run's command line (its option table, read with
 * fu_cli_next as fuser-opt's is) and its --help. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run_internal.h"

typedef enum run_opt {
  R_DEVICE, R_FUSION, R_INPUT, R_RANDOM, R_DEFAULT_EXTENT, R_SEED, R_SAVE_OUTPUTS, R_SAVE_INPUTS, R_PRINT_VALUES,
  R_JSON, R_PASS, R_CHECK, R_RTOL, R_ATOL, R_PTX, R_BENCH, R_ITERS, R_WARMUP, R_NO_FLUSH, R_SETTLE, R_FLUSH_BYTES,
  R_FLUSH_WITH, R_DUMP, R_GPU,
  R_DEVICE_INFO, R_DEVICE_MEMORY, R_HELP, R_DATA_DIR, R_ALLOW_ANY_PATH, R_ERROR_LIMIT, R_BACKEND, R_EXPECT_DIST,
  R_SAVE_REPRO, R_NO_REPRO, R_DIFF_BACKENDS, R_DISABLE, R_ENABLE, R_INPUT_OFFSET,
} run_opt;

static const fu_cli_option options[] = {
    {"device", R_DEVICE, FU_CLI_REQUIRED, "gpu|cpu|kir",
     "where to run (default gpu; cpu: the reference interpreter; kir: the compiled kernels on the\n"
     "                               kernel-IR interpreter, on the CPU)"},
    {"fusion", R_FUSION, FU_CLI_REQUIRED, "@NAME", "run only this fusion (default: every fusion in the file)"},
    {"input", R_INPUT, FU_CLI_REQUIRED, "NAME=SRC", "data for input %NAME: random, zeros, ones, or a .npy file"},
    {"random", R_RANDOM, FU_CLI_NONE, NULL,
     "inputs without example data are random, and symbolic sizes nobody\n"
     "                               states default to --default-extent"},
    {"default-extent", R_DEFAULT_EXTENT, FU_CLI_REQUIRED, "N", "size for unbound symbols with --random (default 4)"},
    {"seed", R_SEED, FU_CLI_REQUIRED, "N", "seed for inputs made at random without their own (default 0)"},
    {"save-outputs", R_SAVE_OUTPUTS, FU_CLI_REQUIRED, "DIR",
     "write DIR/<output name>.npy (DIR/<fusion>/... for several fusions)"},
    {"save-inputs", R_SAVE_INPUTS, FU_CLI_REQUIRED, "DIR", "write the inputs used the same way"},
    {"save-repro", R_SAVE_REPRO, FU_CLI_REQUIRED, "DIR",
     "write a repro folder (fusion.fir with the inputs' data, inputs/*.npy,\n"
     "                               run.sh, fusion.py) into DIR (DIR/<fusion> for several fusions)"},
    {"no-repro", R_NO_REPRO, FU_CLI_NONE, NULL, "write no repro folder on a failure (docs/repro.md says where it goes)"},
    {"print-values", R_PRINT_VALUES, FU_CLI_REQUIRED, "N|all", "how many leading values to print per output (default 8)"},
    {"data-dir", R_DATA_DIR, FU_CLI_REQUIRED, "DIR",
     "npy=\"...\" in the file may also read files under DIR (by default only\n"
     "                               under the .fir file's own folder)"},
    {"allow-any-path", R_ALLOW_ANY_PATH, FU_CLI_NONE, NULL, "npy=\"...\" in the file may read any file"},
    {"error-limit", R_ERROR_LIMIT, FU_CLI_REQUIRED, "N", "stop after N errors (default 20; 0: no limit)"},
    {"json", R_JSON, FU_CLI_NONE, NULL, "print the summary as JSON"},
    {"expect-distribution", R_EXPECT_DIST, FU_CLI_REQUIRED, "NAME=uniform(LO,HI)|NAME=normal(MEAN,STD)",
     "fail unless output %NAME's mean, variance and Kolmogorov-Smirnov\n"
     "                               distance fit that distribution (repeatable; random-number tests)"},
    {"dump", R_DUMP, FU_CLI_REQUIRED, "NAME[,...]",
     "dumps to stderr or FUSER_DUMP_DIR, as FUSER_DUMP (--dump=help lists them);\n"
     "                               launch (launch_params,kernel_args) and jit (ptxas_verbose) are old names"},
    {"disable", R_DISABLE, FU_CLI_REQUIRED, "NAME[,...]", "turn features off for bisecting (as FUSER_DISABLE)"},
    {"enable", R_ENABLE, FU_CLI_REQUIRED, "NAME[,...]", "turn them back on (as FUSER_ENABLE)"},
    {"help", R_HELP, FU_CLI_NONE, NULL, "this help (also -h)"},
    {"h", R_HELP, FU_CLI_NONE, NULL, "the same as --help"},
    {NULL, 0, FU_CLI_NONE, NULL, "GPU and kir options:"},
    {"pass", R_PASS, FU_CLI_REQUIRED, "PIPELINE",
     "the passes that compile the fusion (default: all, scheduled for the GPU\n"
     "                               found; for kir, the passes' default device); on the GPU only in\n"
     "                               builds with the LLVM backend"},
    {"input-offset", R_INPUT_OFFSET, FU_CLI_REQUIRED, "N",
     "kir: each tensor input's data starts N elements past its buffer's (16-byte\n"
     "                               aligned) start, as a view into a larger buffer: a misaligned base"},
    {"check", R_CHECK, FU_CLI_NONE, NULL,
     "run the reference interpreter on the same inputs and compare every output\n"
     "                               (GPU outputs are poisoned with 0xFF bytes first)"},
    {"rtol", R_RTOL, FU_CLI_REQUIRED, "X", "tolerance for float outputs (default: by dtype)"},
    {"atol", R_ATOL, FU_CLI_REQUIRED, "X", "tolerance for float outputs (default: by dtype)"},
    {NULL, 0, FU_CLI_NONE, NULL, "GPU options:"},
    {"ptx", R_PTX, FU_CLI_REQUIRED, "FILE.ptx",
     "the kernels of an already-lowered FILE.fir (made elsewhere with\n"
     "                               fuser-opt --pass=all --emit=ptx); required in builds without LLVM"},
    {"backend", R_BACKEND, FU_CLI_REQUIRED, "llvm|nvrtc",
     "what compiles the kernels to PTX: llvm (the default where built) or\n"
     "                               nvrtc (their CUDA C through libnvrtc, loaded at run time)"},
    {"diff-backends", R_DIFF_BACKENDS, FU_CLI_NONE, NULL,
     "run again with the other backend (llvm, nvrtc) and compare each output:\n"
     "                               bit for bit, or within tolerance where math-library ops feed it"},
    {"bench", R_BENCH, FU_CLI_NONE, NULL,
     "time the kernels: CUDA events, L2 flushed and 1 ms of GPU spin before each run, median,\n"
     "                               GB/s and % of the measured copy bandwidth"},
    {"iters", R_ITERS, FU_CLI_REQUIRED, "N", "timed runs for --bench (default 100)"},
    {"warmup", R_WARMUP, FU_CLI_REQUIRED, "N", "warm-up runs for --bench (default 10)"},
    {"no-flush", R_NO_FLUSH, FU_CLI_NONE, NULL, "do not flush L2 between timed runs"},
    {"settle-us", R_SETTLE, FU_CLI_REQUIRED, "N", "microseconds of GPU spin after each flush (default 1000)"},
    {"flush-bytes", R_FLUSH_BYTES, FU_CLI_REQUIRED, "N", "bytes each flush writes (default twice the L2 size)"},
    {"flush-with", R_FLUSH_WITH, FU_CLI_REQUIRED, "memset|kernel",
     "how the flush writes: cuMemsetD32Async (default) or a store kernel, as PyTorch's fill_"},
    {"gpu", R_GPU, FU_CLI_REQUIRED, "N", "the CUDA device to use (default 0)"},
    {"device-info", R_DEVICE_INFO, FU_CLI_NONE, NULL, "print the GPU's description and exit"},
    {"device-memory", R_DEVICE_MEMORY, FU_CLI_NONE, NULL,
     "print the device's free memory after the context opened and at the end,\n"
     "                               and fail if the run left any of it allocated"},
};

static void usage(FILE *out, fu_allocator al) {
  fu_strbuf sb;
  fu_strbuf_init(&sb, al);
  fu_strbuf_puts(&sb, "usage: " RUN_TOOL " FILE.fir [options]\n"
                      "Run a fusion on the GPU (default), on the CPU reference interpreter, or its compiled\n"
                      "kernels on the kernel-IR interpreter, and print a summary of each output.\n\n");
  fu_cli_print_options(&sb, options, sizeof options / sizeof options[0]);
  fu_strbuf_puts(&sb, "\nexit status: 0 success, 1 an error in the input, while running, or a failed check,\n"
                      "2 a usage error or no usable device\n");
  fputs(sb.data ? sb.data : "", out);
  fu_strbuf_free(&sb);
}

/* Numbers of the command line; false (after saying so) when `s` is not one
 * at least `lo`. */
static bool parse_int(const run_args *a, const char *s, const char *opt, int64_t lo, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < lo) {
    fprintf(a->err, RUN_TOOL ": invalid value '%s' for %s\n", s, opt);
    return false;
  }
  *out = v;
  return true;
}

static bool parse_double(const run_args *a, const char *s, const char *opt, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= 0)) {
    fprintf(a->err, RUN_TOOL ": invalid value '%s' for %s\n", s, opt);
    return false;
  }
  *out = v;
  return true;
}

/* The names --dump took before FUSER_DUMP: launch (each kernel's grid,
 * block and arguments) and jit (the JIT's info log); ptx is a dump name. */
static const char *const dump_aliases[] = {"launch", "launch_params,kernel_args", "jit", "ptxas_verbose", NULL};

static bool ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* --input NAME=random|zeros|ones|FILE.npy */
static bool add_override(run_args *a, const char *spec) {
  const char *eq = strchr(spec, '=');
  if (!eq || eq == spec || !eq[1]) {
    fprintf(a->err, RUN_TOOL ": --input expects NAME=random|zeros|ones|FILE.npy, got '%s'\n", spec);
    return false;
  }
  fu_input_override o;
  memset(&o, 0, sizeof o);
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
    fprintf(a->err,
            RUN_TOOL ": unknown input source '%s' for '%.*s' (expected random, zeros, ones or a .npy file)\n", src,
            (int)(eq - spec), spec);
    return false;
  }
  size_t nlen = (size_t)(eq - spec);
  char *name = fu_mem_alloc(&a->alloc, nlen + 1);
  fu_input_override *grown =
      fu_mem_realloc(&a->alloc, a->overrides, a->n_overrides * sizeof *grown, (a->n_overrides + 1) * sizeof *grown);
  if (!name || !grown) {
    if (name) fu_mem_free(&a->alloc, name, nlen + 1);
    if (grown) a->overrides = grown;
    fprintf(a->err, RUN_TOOL ": out of memory\n");
    return false;
  }
  memcpy(name, spec, nlen);
  name[nlen] = '\0';
  o.name = name;
  a->overrides = grown;
  a->overrides[a->n_overrides++] = o;
  return true;
}

void run_args_free(run_args *a) {
  if (a->dumps) {
    fu_dump_free(a->dumps);
    fu_mem_free(&a->alloc, a->dumps, sizeof *a->dumps);
    a->dumps = NULL;
  }
  for (uint32_t i = 0; i < a->n_overrides; i++) {
    const char *n = a->overrides[i].name;
    fu_mem_free(&a->alloc, (char *)n, strlen(n) + 1);
  }
  if (a->overrides) fu_mem_free(&a->alloc, a->overrides, a->n_overrides * sizeof *a->overrides);
  a->overrides = NULL;
  a->n_overrides = 0;
  if (a->dists) fu_mem_free(&a->alloc, a->dists, a->n_dists * sizeof *a->dists);
  a->dists = NULL;
  a->n_dists = 0;
}

/* One option's value into `a`; false after a usage error. */
static bool apply(run_args *a, run_opt id, const char *v) {
  int64_t n;
  switch (id) {
  case R_DEVICE:
    if (strcmp(v, "cpu") == 0) a->device = RUN_DEVICE_CPU;
    else if (strcmp(v, "gpu") == 0 || strcmp(v, "cuda") == 0) a->device = RUN_DEVICE_GPU;
    else if (strcmp(v, "kir") == 0) a->device = RUN_DEVICE_KIR;
    else {
      fprintf(a->err, RUN_TOOL ": unknown device '%s' (expected cpu, gpu or kir)\n", v);
      return false;
    }
    return true;
  case R_FUSION: a->fusion = v[0] == '@' ? v + 1 : v; return true;
  case R_INPUT_OFFSET: return parse_int(a, v, "--input-offset", 0, &a->input_offset);
  case R_INPUT: return add_override(a, v);
  case R_RANDOM: a->random = true; return true;
  case R_DEFAULT_EXTENT:
    if (!parse_int(a, v, "--default-extent", 0, &a->default_extent)) return false;
    if (a->default_extent == 0) {
      fprintf(a->err, RUN_TOOL ": error: --default-extent must be at least 1 (it is the size of every unbound symbol)\n");
      return false;
    }
    return true;
  case R_SEED:
    if (!parse_int(a, v, "--seed", 0, &n)) return false;
    a->seed = (uint64_t)n;
    return true;
  case R_SAVE_OUTPUTS: a->save_outputs = v; return true;
  case R_SAVE_INPUTS: a->save_inputs = v; return true;
  case R_SAVE_REPRO: a->save_repro = v; return true;
  case R_NO_REPRO: a->no_repro = true; return true;
  case R_DIFF_BACKENDS: a->diff_backends = true; return true;
  case R_PRINT_VALUES:
    if (strcmp(v, "all") == 0) {
      a->print_values = -1;
      return true;
    }
    return parse_int(a, v, "--print-values", 0, &a->print_values);
  case R_JSON: a->json = true; return true;
  case R_EXPECT_DIST: return run_dist_parse(a, v);
  case R_PASS: a->pipeline = v; return true;
  case R_CHECK: a->check = true; return true;
  case R_RTOL: return parse_double(a, v, "--rtol", &a->rtol);
  case R_ATOL: return parse_double(a, v, "--atol", &a->atol);
  case R_PTX: a->ptx = v; return true;
  case R_BACKEND:
    if (!fu_target_lookup(v)) {
      size_t nt;
      const fu_target_def *const *all = fu_target_all(&nt);
      fprintf(a->err, RUN_TOOL ": unknown --backend '%s'; this build has:", v);
      for (size_t i = 0; i < nt; i++) fprintf(a->err, "%s %s", i ? "," : "", all[i]->name);
      fprintf(a->err, "%s\n", nt ? "" : " none");
      return false;
    }
    a->backend = v;
    return true;
  case R_BENCH: a->bench = true; return true;
  case R_ITERS:
  case R_WARMUP:
    if (!parse_int(a, v, id == R_ITERS ? "--iters" : "--warmup", 1, &n)) return false;
    if (n > 1000000) n = 1000000;
    *(id == R_ITERS ? &a->iters : &a->warmup) = (uint32_t)n;
    return true;
  case R_NO_FLUSH: a->no_flush = true; return true;
  case R_SETTLE:
    if (!parse_int(a, v, "--settle-us", 1, &n)) return false;
    if (n > 1000000) n = 1000000;
    a->settle_us = (uint32_t)n;
    return true;
  case R_FLUSH_BYTES:
    if (!parse_int(a, v, "--flush-bytes", 16, &n)) return false;
    if (n > ((int64_t)1 << 34)) n = (int64_t)1 << 34;
    a->flush_bytes = (size_t)n;
    return true;
  case R_FLUSH_WITH:
    if (strcmp(v, "memset") && strcmp(v, "kernel")) {
      fprintf(a->err, RUN_TOOL ": --flush-with must be memset or kernel, not '%s'\n", v);
      return false;
    }
    a->flush_kernel = !strcmp(v, "kernel");
    return true;
  case R_DUMP: return fu_dump_parse(a->dumps, v, "--dump", dump_aliases);
  case R_DISABLE:
  case R_ENABLE:
    return fu_features_parse(&a->features, v, id == R_DISABLE, id == R_DISABLE ? "--disable" : "--enable", RUN_TOOL,
                             a->err);
  case R_GPU:
    if (!parse_int(a, v, "--gpu", 0, &n) || n > 1 << 20) return false;
    a->gpu = (int)n;
    return true;
  case R_DEVICE_INFO: a->device_info = true; return true;
  case R_DEVICE_MEMORY: a->device_memory = true; return true;
  case R_HELP: return true;
  case R_DATA_DIR: a->data_dir = v; return true;
  case R_ALLOW_ANY_PATH: a->allow_any_path = true; return true;
  case R_ERROR_LIMIT:
    if (fu_parse_error_limit(v, &a->error_limit)) return true;
    fprintf(a->err, RUN_TOOL ": error: bad --error-limit '%s': expected a count (0: no limit)\n", v);
    return false;
  }
  return true;
}

/* The reference interpreter's threads (input data, --device=cpu, --check):
 * FUSER_INTERP_THREADS, else the online CPUs up to 16.  Any count gives
 * the same bits. */
static bool interp_threads_from_env(run_args *a, FILE *err) {
  const char *v = getenv("FUSER_INTERP_THREADS");
  if (v && *v) {
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n < 1 || n > 64) {
      fprintf(err, RUN_TOOL ": FUSER_INTERP_THREADS must be a count from 1 to 64, not '%s'\n", v);
      return false;
    }
    a->interp_threads = (uint32_t)n;
    return true;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  a->interp_threads = n < 1 ? 1 : n > 16 ? 16 : (uint32_t)n;
  return true;
}

int run_parse_args(int argc, char *const *argv, run_args *a, FILE *out, FILE *err) {
  memset(a, 0, sizeof *a);
  a->print_values = 8;
  a->error_limit = FU_DIAG_DEFAULT_ERROR_LIMIT;
  a->rtol = a->atol = -1;
  a->out = out;
  a->err = err;
  a->alloc = fu_default_allocator();
  a->dumps = fu_mem_alloc(&a->alloc, sizeof *a->dumps);
  if (!a->dumps) return 2;
  fu_dump_init(a->dumps, RUN_TOOL, err);
  if (!fu_dump_from_env(a->dumps, dump_aliases) || !fu_features_from_env(&a->features, RUN_TOOL, err)) return 2;
  if (!interp_threads_from_env(a, err)) return 2;
  fu_cli cli = {argc, argv, options, sizeof options / sizeof options[0], RUN_TOOL ": ", err, 1, false};
  const char *v;
  bool help = false;
  for (int id; (id = fu_cli_next(&cli, &v)) != FU_CLI_END;) {
    if (id == FU_CLI_ERROR) return 2;
    if (id == FU_CLI_FILE) {
      if (a->file) {
        fprintf(err, RUN_TOOL ": more than one input file ('%s' and '%s')\n", a->file, v);
        return 2;
      }
      a->file = v;
      continue;
    }
    help |= id == R_HELP;
    if (!apply(a, (run_opt)id, v)) return 2;
  }
  if (help || a->dumps->help) {
    if (help) usage(out, a->alloc);
    fu_strbuf sb;
    fu_strbuf_init(&sb, a->alloc);
    if (a->dumps->help) fu_dump_print_help(&sb);
    if (a->dumps->help) fu_features_print_help(&sb);
    fputs(sb.data ? sb.data : "", out);
    fu_strbuf_free(&sb);
    return 0;
  }
  a->dump_launch = fu_dump_on(a->dumps, FU_DUMP_LAUNCH_PARAMS) || fu_dump_on(a->dumps, FU_DUMP_KERNEL_ARGS);
  a->dump_jit = fu_dump_on(a->dumps, FU_DUMP_PTXAS_VERBOSE);
  a->dump_ptx = fu_dump_on(a->dumps, FU_DUMP_PTX);
  /* --backend and --diff-backends choose what compiles the kernels for
   * the GPU: they need it.  --backend takes no --ptx; --diff-backends
   * with --ptx compares that PTX (the LLVM backend's, made where LLVM
   * is) with NVRTC's, for a GPU host without LLVM. */
  const char *compiles = a->backend ? "--backend" : a->diff_backends ? "--diff-backends" : NULL;
  if (a->backend && a->ptx) {
    fprintf(err, RUN_TOOL ": --ptx gives the kernels' PTX, so there is nothing for --backend to compile\n");
    return 2;
  }
  if (compiles && a->device != RUN_DEVICE_GPU) {
    fprintf(err, RUN_TOOL ": %s chooses what compiles the kernels for the GPU: it needs --device=gpu\n", compiles);
    return 2;
  }
  bool gpu_only = a->ptx || a->bench || a->device_info || a->diff_backends || a->device_memory;
  if (a->device == RUN_DEVICE_CPU && (gpu_only || a->pipeline || a->check)) {
    fprintf(err, RUN_TOOL ": --ptx, --pass, --check, --bench, --device-info and --device-memory need --device=gpu "
                 "(--pass and --check: or --device=kir)\n");
    return 2;
  }
  if (a->device == RUN_DEVICE_KIR && gpu_only) {
    fprintf(err, RUN_TOOL ": --ptx, --bench, --device-info and --device-memory need --device=gpu\n");
    return 2;
  }
  if (!a->file && !a->device_info) {
    fprintf(err, RUN_TOOL ": no input file (see --help)\n");
    return 2;
  }
  return -1;
}
