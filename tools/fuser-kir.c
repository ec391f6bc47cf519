/* fuser-kir: read kernel IR, print it back, or compile it to LLVM IR,
 * CUDA C or PTX.
 *
 *   fuser-kir FILE.kir [--emit=kir|llvm|cuda|ptx] [--backend=llvm|nvrtc] [--sm=sm_90] [-o OUT]
 *             [--timing] [--repeat=N] [--split-input-file] [--pipeline=P] [--no-opt] [--error-limit=N]
 *
 * --emit=cuda writes the CUDA C of the nvrtc backend; --emit=ptx uses the
 * llvm backend unless --backend=nvrtc (CUDA C through libnvrtc).
 * FILE may be `-` for stdin and may hold several kernels.  --timing prints
 * where the compile time went to stderr (libdevice loading apart); with
 * --repeat=N the backend compiles N times and the median and minimum are
 * reported.  With --split-input-file the input is cut at lines starting
 * with `// -----` and each chunk is handled on its own (diagnostics keep the
 * file's line numbers); the outputs are joined with the same separator and
 * the exit status is 1 if any chunk failed.  --error-limit=N stops after N
 * errors (default 20, counted afresh per chunk; 0: no limit).  --dump=NAME
 * (and FUSER_DUMP) writes kernel_ir, cuda_kernel, llvm_ir, ptx,
 * ptxas_verbose, sass and launch_params of the kernels read; --disable=fast_paths
 * (and FUSER_DISABLE) is the llvm backend's switch (docs/debugging.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fuser/driver.h"
#include "fuser/dump.h"
#include "fuser/kir_text.h"

typedef struct tool_opts {
  const char *emit, *sm, *pipeline, *backend;
  bool timing, no_opt;
  long repeat;
  fu_dumps *dumps;
  fu_feature_set features;
} tool_opts;

static void usage(FILE *out) {
  fputs("usage: fuser-kir FILE.kir [--emit=kir|llvm|cuda|ptx] [--backend=llvm|nvrtc] [--sm=sm_90] [-o OUT]\n"
        "                 [--timing] [--repeat=N] [--split-input-file] [--pipeline=P] [--no-opt] [--error-limit=N]\n"
        "  --emit=kir    print the kernels back (default)\n"
        "  --emit=llvm   LLVM IR after the optimization pipeline (--no-opt: before it)\n"
        "  --emit=cuda   CUDA C (the nvrtc backend's text)\n"
        "  --emit=ptx    PTX for --sm (default sm_90)\n"
        "  --backend=B   the backend of --emit=ptx: llvm (default) or nvrtc\n"
        "  --timing      print compile times to stderr\n"
        "  --repeat=N    compile N times (with --timing: median and minimum)\n"
        "  --pipeline=P  LLVM pass pipeline (default: fuser's own, see lib/target/llvm/context.c; 'default<O3>': LLVM's)\n"
        "  --split-input-file  handle each `// -----` chunk on its own\n"
        "  --error-limit=N     stop after N errors per chunk (default 20; 0: no limit)\n"
        "  --dump=NAME[,...]   kernel_ir, cuda_kernel, llvm_ir, ptx, ptxas_verbose, sass, launch_params to stderr\n"
        "                      (also FUSER_DUMP; FUSER_DUMP_DIR for files; --dump=help lists them)\n"
        "  --disable=NAME      fast_paths: libdevice's sqrt and fabs in the llvm backend (also FUSER_DISABLE)\n"
        "  --enable=NAME       turn it back on (also FUSER_ENABLE)\n",
        out);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Compiles the kernels `repeat` times through the build's target (the
 * output of the last run is kept) and reports the times when asked. */
static fu_status compile(const tool_opts *o, fu_compiler *c, fu_kernel **ks, uint32_t n, const fu_source *src,
                         fu_diag_engine *diag, fu_strbuf *out, double t_parse) {
  fu_target_output what = strcmp(o->emit, "ptx") == 0 ? FU_TARGET_PTX : FU_TARGET_TEXT;
  double *walls = calloc((size_t)o->repeat, sizeof *walls);
  double *cpus = calloc((size_t)o->repeat, sizeof *cpus);
  fu_status st = walls && cpus ? FU_OK : FU_ERR_NOMEM;
  fu_target_timing first, t;
  memset(&first, 0, sizeof first);
  memset(&t, 0, sizeof t);
  size_t mark = out->len;
  for (long r = 0; r < o->repeat && st == FU_OK; r++) {
    out->len = mark;
    if (out->data) out->data[mark] = '\0';
    st = fu_compile_kernels(c, (const fu_kernel *const *)ks, n, what, o->sm, src, out, diag);
    if (c->state && c->target->last_timing) c->target->last_timing(c->state, &t);
    if (r == 0) first = t;
    walls[r] = t.total_ms - t.load_ms;
    cpus[r] = t.cpu_ms;
  }
  if (st == FU_OK && o->timing) {
    fprintf(stderr,
            "fuser-kir timing: parse %.3f ms, libdevice load %.3f ms; first compile: build %.3f ms, opt %.3f ms, "
            "codegen %.3f ms, total %.3f ms, cpu %.3f ms (without libdevice load)\n",
            t_parse, first.load_ms, first.build_ms, first.opt_ms, first.codegen_ms, first.total_ms - first.load_ms,
            first.cpu_ms);
    if (o->repeat > 1) {
      qsort(walls, (size_t)o->repeat, sizeof *walls, cmp_double);
      qsort(cpus, (size_t)o->repeat, sizeof *cpus, cmp_double);
      fprintf(stderr,
              "fuser-kir timing: %ld compiles: wall median %.3f ms (min %.3f, max %.3f); "
              "cpu median %.3f ms (min %.3f)\n",
              o->repeat, walls[o->repeat / 2], walls[0], walls[o->repeat - 1], cpus[o->repeat / 2], cpus[0]);
    }
  }
  free(walls);
  free(cpus);
  return st;
}

/* Parses one buffer and appends what --emit asks for to `out`. */
static fu_status process(const tool_opts *o, fu_compiler *c, const fu_source *src, fu_diag_engine *diag,
                         fu_strbuf *out) {
  fu_module *m = fu_module_new(diag->alloc);
  if (!m) return FU_ERR_NOMEM;
  fu_kernel **ks = NULL;
  uint32_t n = 0;
  double t0 = now_ms();
  fu_status st = fu_kernel_parse_list(src, m, diag, &ks, &n);
  double t_parse = now_ms() - t0;
  if (st == FU_OK) {
    fu_dump_code_options dco = {.src = src, .features = &o->features};
    st = fu_dump_kernels(o->dumps, (const fu_kernel *const *)ks, n, NULL, o->sm, &dco, diag);
  }
  if (st == FU_OK && strcmp(o->emit, "kir") == 0) {
    for (uint32_t i = 0; i < n; i++) {
      if (i) fu_strbuf_putc(out, '\n');
      fu_kernel_print(out, ks[i]);
    }
    if (o->timing) fprintf(stderr, "fuser-kir timing: parse %.3f ms\n", t_parse);
  } else if (st == FU_OK && n == 0) {
    fu_loc file = {src, 0, 0}; /* the input, no line */
    fu_error(diag, file, "nothing to emit: the input holds no kernel");
    st = FU_ERR_INVALID_ARG;
  } else if (st == FU_OK) {
    st = compile(o, c, ks, n, src, diag, out, t_parse);
  }
  fu_module_free(m);
  return st;
}

int main(int argc, char **argv) {
  fu_dumps dumps;
  fu_dump_init(&dumps, "fuser-kir", stderr);
  tool_opts o = {"kir", FU_DEFAULT_ARCH, NULL, NULL, false, false, 1, &dumps, {0, 0, 0}};
  if (!fu_dump_from_env(&dumps, NULL) || !fu_features_from_env(&o.features, "fuser-kir", stderr)) return 2;
  const char *input = NULL, *output = NULL;
  bool split = false;
  unsigned error_limit = FU_DIAG_DEFAULT_ERROR_LIMIT;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strncmp(a, "--emit=", 7) == 0) {
      o.emit = a + 7;
    } else if (strncmp(a, "--dump=", 7) == 0) {
      if (!fu_dump_parse(&dumps, a + 7, "--dump", NULL)) return 2;
    } else if (strncmp(a, "--disable=", 10) == 0 || strncmp(a, "--enable=", 9) == 0) {
      bool off = a[2] == 'd';
      if (!fu_features_parse(&o.features, strchr(a, '=') + 1, off, off ? "--disable" : "--enable", "fuser-kir", stderr))
        return 2;
    } else if (strncmp(a, "--backend=", 10) == 0) {
      o.backend = a + 10;
    } else if (strncmp(a, "--sm=", 5) == 0) {
      o.sm = a + 5;
    } else if (strcmp(a, "-o") == 0 && i + 1 < argc) {
      output = argv[++i];
    } else if (strcmp(a, "--timing") == 0) {
      o.timing = true;
    } else if (strncmp(a, "--pipeline=", 11) == 0) {
      o.pipeline = a + 11;
    } else if (strcmp(a, "--split-input-file") == 0) {
      split = true;
    } else if (strncmp(a, "--error-limit=", 14) == 0) {
      if (!fu_parse_error_limit(a + 14, &error_limit)) {
        fprintf(stderr, "fuser-kir: error: bad --error-limit '%s': expected a count (0: no limit)\n", a + 14);
        return 2;
      }
    } else if (strcmp(a, "--no-opt") == 0) {
      o.no_opt = true;
    } else if (strncmp(a, "--repeat=", 9) == 0) {
      o.repeat = strtol(a + 9, NULL, 10);
      if (o.repeat < 1 || o.repeat > 100000) {
        fprintf(stderr, "fuser-kir: bad --repeat value '%s'\n", a + 9);
        return 2;
      }
    } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    } else if (a[0] == '-' && a[1] != '\0') {
      fprintf(stderr, "fuser-kir: unknown option '%s'\n", a);
      usage(stderr);
      return 2;
    } else if (!input) {
      input = a;
    } else {
      fprintf(stderr, "fuser-kir: more than one input file\n");
      return 2;
    }
  }
  if (dumps.help) {
    fu_strbuf sb;
    fu_strbuf_init(&sb, fu_default_allocator());
    fu_dump_print_help(&sb);
    fu_features_print_help(&sb);
    fputs(sb.data ? sb.data : "", stdout);
    fu_strbuf_free(&sb);
    return 0;
  }
  if (!input) {
    usage(stderr);
    return 2;
  }
  if (strcmp(o.emit, "kir") != 0 && strcmp(o.emit, "llvm") != 0 && strcmp(o.emit, "ptx") != 0 &&
      strcmp(o.emit, "cuda") != 0) {
    fprintf(stderr, "fuser-kir: unknown --emit=%s (expected kir, llvm, cuda or ptx)\n", o.emit);
    return 2;
  }
  /* the backend: --backend's, else the one whose text --emit names, else llvm */
  const char *backend = o.backend ? o.backend : strcmp(o.emit, "cuda") == 0 ? "nvrtc" : "llvm";
  const fu_target_def *target = fu_target_lookup(backend);
  if (strcmp(o.emit, "kir") != 0 && !target) {
    fprintf(stderr, "fuser-kir: --emit=%s: this build has no %s backend\n", o.emit, backend);
    return 1;
  }
  if (target && strcmp(o.emit, "ptx") != 0 && strcmp(o.emit, "kir") != 0 && strcmp(target->text_name, o.emit) != 0) {
    fprintf(stderr, "fuser-kir: --emit=%s is not what the %s backend writes (its text is --emit=%s)\n", o.emit,
            target->name, target->text_name);
    return 2;
  }

  fu_allocator alloc = fu_default_allocator();
  bool from_stdin = strcmp(input, "-") == 0;
  size_t len = 0;
  char *text = NULL;
  if ((from_stdin ? fu_read_stream(stdin, alloc, &text, &len) : fu_read_file(input, alloc, &text, &len)) != FU_OK) {
    fprintf(stderr, "fuser-kir: cannot read '%s'\n", input);
    return 1;
  }
  fu_diag_engine diag;
  fu_diag_init(&diag, alloc);
  diag.error_limit = error_limit;
  fu_strbuf out;
  fu_strbuf_init(&out, alloc);
  fu_source whole = {from_stdin ? "<stdin>" : input, text, len, 1}, *chunks = NULL;
  uint32_t n_chunks = 1;
  bool failed = split && fu_split_input(&whole, alloc, &chunks, &n_chunks) != FU_OK;
  if (failed) n_chunks = 0;
  fu_target_options to = {o.pipeline, o.no_opt, o.sm, false, false};
  fu_target_options_set_features(&to, &o.features);
  fu_compiler compiler;
  fu_compiler_init(&compiler, backend, &to, alloc);
  for (uint32_t i = 0; i < n_chunks; i++) {
    if (i) fu_strbuf_puts(&out, "// -----\n");
    fu_diag_restart_limit(&diag);
    if (process(&o, &compiler, chunks ? &chunks[i] : &whole, &diag, &out) != FU_OK) failed = true;
  }
  fu_compiler_free(&compiler);
  if (chunks) fu_mem_free(&alloc, chunks, n_chunks * sizeof *chunks);

  int rc = failed ? 1 : 0;
  if (out.failed) {
    fprintf(stderr, "fuser-kir: out of memory\n");
    rc = 1;
  } else if (!failed || split) {
    FILE *f = output && strcmp(output, "-") != 0 ? fopen(output, "wb") : stdout;
    if (!f) {
      fprintf(stderr, "fuser-kir: cannot write '%s'\n", output);
      rc = 1;
    } else {
      bool ok = fwrite(out.data ? out.data : "", 1, out.len, f) == out.len;
      ok &= f != stdout ? fclose(f) == 0 : fflush(f) == 0;
      if (!ok) {
        fprintf(stderr, "fuser-kir: error writing '%s'\n", output ? output : "<stdout>");
        rc = 1;
      }
    }
  }
  fu_strbuf_free(&out);
  fu_mem_free(&alloc, text, len + 1);
  fu_dump_free(&dumps);
  return rc;
}
