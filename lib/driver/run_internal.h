/* fuser driver: the parts of fuser-run's body (fu_run_main) that share
 * state: the parsed command line, the summary printer, the input maker and
 * the device paths (run_cpu.c for the reference interpreter and the
 * kernel-IR interpreter, run_gpu.c for the CUDA runtime). */
#ifndef FUSER_RUN_INTERNAL_H
#define FUSER_RUN_INTERNAL_H

#include <stdio.h>

#include "fuser/check.h"
#include "fuser/driver.h"
#include "fuser/dump.h"
#include "fuser/interp.h"

#define RUN_TOOL "fuser-run"

typedef enum run_device { RUN_DEVICE_GPU, RUN_DEVICE_CPU, RUN_DEVICE_KIR } run_device;

/* --expect-distribution=NAME=uniform(a,b) | NAME=normal(a,b) (run_dist.c) */
typedef struct run_dist {
  const char *name; /* the output's name, without '%', not terminated */
  size_t name_len;
  bool normal;
  double a, b;      /* (minval, maxval) or (mean, std) */
} run_dist;

typedef struct run_args {
  const char *file;
  run_device device;
  const char *fusion; /* without '@', or NULL for all */
  fu_input_override *overrides;
  uint32_t n_overrides;
  uint64_t seed;
  bool random;
  int64_t default_extent;
  int64_t input_offset; /* --input-offset: kir inputs this many elements into their buffers */
  const char *save_outputs;
  const char *save_inputs;
  const char *data_dir;  /* --data-dir: npy="..." may also read under DIR */
  bool allow_any_path;   /* --allow-any-path: npy="..." may read any file */
  unsigned error_limit;  /* --error-limit */
  int64_t print_values; /* -1: all */
  bool json;
  run_dist *dists;      /* --expect-distribution, in order */
  uint32_t n_dists;
  /* the compiled paths (gpu, kir) */
  const char *pipeline; /* --pass: the pipeline that compiles (default: all) */
  bool check;
  double rtol, atol;    /* < 0: the dtype's default */
  /* the GPU path */
  const char *ptx;      /* --ptx: PTX of a lowered fusion */
  const char *backend;  /* --backend: the target that makes PTX (NULL: the preferred) */
  bool bench, no_flush, device_info;
  bool device_memory; /* --device-memory: the driver's free memory before and after */
  bool dump_launch, dump_jit, dump_ptx; /* the GPU's dumps: launch_params or kernel_args, ptxas_verbose, ptx */
  fu_dumps *dumps;          /* FUSER_DUMP and --dump (fuser/dump.h); never NULL after parsing */
  fu_feature_set features;  /* FUSER_DISABLE/ENABLE and --disable/--enable */
  uint32_t iters, warmup;
  uint32_t settle_us;   /* --settle-us (0: the runtime's 1000) */
  size_t flush_bytes;   /* --flush-bytes (0: twice the L2) */
  bool flush_kernel;    /* --flush-with=kernel */
  int gpu;              /* device ordinal */
  /* repros (run_repro.c) and the backend comparison (run_diff.c) */
  const char *save_repro; /* --save-repro DIR */
  bool no_repro;          /* --no-repro: no folder on a failure */
  bool diff_backends;     /* --diff-backends */
  const fu_source *source; /* the file as read, for the repro's fusion as given */
  const fu_arg *given_in;  /* inputs to use instead of making them (a segment tried alone) */
  uint32_t n_given_in;
  uint32_t interp_threads; /* FUSER_INTERP_THREADS: threads of the reference interpreter */
  FILE *out, *err;      /* the streams fu_run_main was given */
  fu_allocator alloc;
} run_args;

/* Parses argv into `a` (free with run_args_free).  Returns -1 to go on, or
 * the exit code: 0 after --help, 2 after a usage error (printed to err). */
int run_parse_args(int argc, char *const *argv, run_args *a, FILE *out, FILE *err);
void run_args_free(run_args *a);

/* ---- inputs (run_inputs.c) ---- */

/* The fusion's inputs as the command line asks (--input, --random, --seed,
 * example data read relative to the file's folder). */
fu_status run_make_inputs(const run_args *a, fu_fusion *f, fu_diag_engine *diag, fu_arg **in, uint32_t *n_in);
/* Where an input's data came from: "random seed=0", "npy \"x.npy\"", ... */
void run_describe_source(fu_strbuf *sb, const run_args *a, const fu_op *op);

/* ---- checking against the reference interpreter (run_check.c) ---- */

typedef struct run_check_line {
  bool pass;
  fu_check_result r;
  fu_check_tolerance tol;
  int64_t n_unwritten; /* int outputs: elements that change with the poison byte */
} run_check_line;

/* Runs the reference interpreter on `in` and compares each output of
 * `res` with it (tolerances by dtype, or --rtol/--atol).  *lines gets one
 * line per output (free with fu_mem_free(alloc, *lines, n_res * sizeof)).
 * `where` names the device in errors ("on the GPU"). */
fu_status run_check(const run_args *a, fu_fusion *f, const fu_arg *in, uint32_t n_in, const fu_arg *res,
                    uint32_t n_res, const char *where, fu_diag_engine *diag, run_check_line **lines);

/* ---- distribution checks (run_dist.c) ---- */

/* Adds one --expect-distribution SPEC to a->dists; false after a usage
 * error (printed to a->err). */
bool run_dist_parse(run_args *a, const char *spec);
/* A line per expectation into `out` (text); false when any fails. */
bool run_dist_check(const run_args *a, const fu_value *const *outs, const fu_arg *res, uint32_t n_res,
                    fu_strbuf *out);

/* Calls `visit` on each value that `out` is computed from (itself
 * included), fusion inputs left out, each once. */
void run_walk_upstream(fu_fusion *f, fu_value *out, fu_allocator al, void (*visit)(void *ctx, const fu_value *v),
                       void *ctx);

/* ---- the summary (run_report.c) ---- */

/* One fusion's run as the summary prints it.  The device paths add their
 * own parts as ready text: JSON members after "device" and after
 * "outputs", and JSON and text at the end. */
typedef struct run_fusion_result {
  fu_fusion *f;
  const fu_arg *in, *res;
  uint32_t n_in, n_res;
  const run_check_line *lines; /* one per output with --check, else NULL */
  const char *device;          /* the JSON "device": cpu, gpu or kir */
  const char *what;            /* text: in the header's parentheses */
  const char *json_device;     /* JSON members after "device", or NULL */
  const char *json_outputs;    /* JSON members after "outputs", or NULL */
  const char *json_tail;       /* JSON members after "check", or NULL */
  const char *text_head;       /* text after the header line (dumps), or NULL */
  const char *text_tail;       /* text after the check lines (bench), or NULL */
  /* outputs with an alias (`output %o {alias=%in}`), per output index: the
   * input's memory after the run (the GPU's, downloaded; NULL or an entry
   * that is no tensor: the output's values, which it holds by definition)
   * and how it got there (NULL: "the output's values") */
  const fu_arg *alias_after;
  const char *const *alias_how;
} run_fusion_result;

/* The input that output `i` of f (in output order) is written into, or NULL. */
const fu_value *run_output_alias(fu_fusion *f, uint32_t i);

/* Saves the inputs and outputs as asked and appends the summary (text, or
 * one JSON object after a ",\n" unless `first`) to `out`.  Returns 0, or 1
 * when saving failed or a check line failed. */
int run_report_fusion(const run_args *a, const run_fusion_result *r, bool several, bool first, fu_diag_engine *diag,
                      fu_strbuf *out);

/* Values as the summary writes them: the shortest decimal text that reads
 * back as the same value of `dt` (JSON strings for non-finite values). */
void run_put_value(fu_strbuf *sb, fu_dtype dt, double v, int64_t iv, bool json);
void run_put_json_string(fu_strbuf *sb, const char *s);

/* Writes each of `n` values as DIR/<name>.npy (DIR/<sub>/<name>.npy when
 * `sub`), logging "  saved PATH" lines to `log` (may be NULL); false after
 * an error (reported). */
/* Before anything runs: the --save-inputs/--save-outputs folder exists (it
 * is made when its parent does) and is a folder this process may write
 * into; otherwise an error on a->err naming it, and false. */
bool run_save_prepare(const run_args *a, const char *dir);
bool run_save_args(const run_args *a, const char *dir, const char *sub, const fu_value *const *vals,
                   const fu_arg *args, uint32_t n, fu_diag_engine *diag, fu_strbuf *log);

/* The directory `dir` exists, made with its missing parents (mkdir -p);
 * false after an error on a->err. */
bool run_save_mkdir(const run_args *a, const char *dir);

/* ---- repro folders (run_repro.c) ---- */

typedef enum run_failure { RUN_FAIL_NONE, RUN_FAIL_CHECK, RUN_FAIL_COMPILE, RUN_FAIL_RUN, RUN_FAIL_DIFF } run_failure;
const char *run_failure_name(run_failure why);

/* A device path's way to compile and run a standalone fusion (the module's
 * one fusion, with a->given_in as its inputs and a->check on); non-zero
 * when it fails (an error, or a failed check). */
typedef int (*run_try_fn)(void *ctx, const run_args *a, fu_module *m);

typedef struct run_repro_request {
  fu_fusion *f;            /* the fusion as it ran (compiled), or NULL */
  const char *fusion_name; /* when f is NULL */
  const fu_arg *in;        /* the run's inputs (NULL: no repro) */
  uint32_t n_in;
  run_failure why;         /* RUN_FAIL_NONE: --save-repro on a run that passed */
  const char *detail;      /* e.g. the failing outputs, or NULL */
  bool several;            /* several fusions selected: DIR/<fusion> for --save-repro */
  bool whole;              /* set by run_repro_write: the whole fusion is the repro */
  run_try_fn try_alone;    /* NULL: no narrowing down to one segment */
  void *ctx;
} run_repro_request;

/* Writes the repro folder when one is due: on a failure unless --no-repro
 * (in --save-repro DIR, else a fresh folder under $FUSER_REPRO_DIR or
 * $TMPDIR), and with --save-repro on success; prints its path on a->err.
 * False when writing failed (reported). */
bool run_repro_write(const run_args *a, const run_repro_request *r, fu_diag_engine *diag);
/* Before anything runs: the --save-repro folder exists (made with its
 * missing parents), else an error on a->err and false. */
bool run_repro_prepare(const run_args *a);
/* After a pipeline that failed: a repro of each selected fusion (`only`:
 * --fusion, or NULL) as the file gives it, with the inputs the run makes. */
void run_repro_compile_failure(const run_args *a, const char *only, fu_diag_engine *diag);
/* The names of the outputs whose check failed ("%T3, %T5"), into sb. */
void run_repro_failed_outputs(fu_strbuf *sb, fu_fusion *f, const run_check_line *lines, uint32_t n);

/* The common ending of a device path's fusion: given how it went (`st`,
 * the summary's `rc`, the check lines), writes the repro that is due
 * (run_repro_write), narrowing with `try_alone`. */
void run_repro_after(const run_args *a, fu_fusion *f, const fu_arg *in, uint32_t n_in, fu_status st, int rc,
                     const run_check_line *lines, uint32_t n_lines, bool several, run_try_fn try_alone, void *ctx,
                     fu_diag_engine *diag);

/* FUSER_TEST_CORRUPT_OUTPUT (run_fault.c): the test-only mismatch. */
fu_status run_test_corrupt_outputs(fu_fusion *f, fu_arg *res, uint32_t n_res);

/* ---- --diff-backends (run_diff.c) ---- */

/* The backend a --diff-backends run compares `first` with. */
const char *run_diff_other_backend(const char *first);
/* Compares each of the n outputs of the `first` backend's run (r1) with the
 * `second`'s (r2): bit for bit, or within tolerance where a math-library op
 * feeds the output.  One text line per output, and a JSON member; true
 * when every output passes. */
bool run_diff_outputs(const run_args *a, fu_fusion *f, const char *first, const char *second, const fu_arg *r1,
                      const fu_arg *r2, uint32_t n, fu_strbuf *text, fu_strbuf *json);
/* ---- dumps of a fusion on concrete inputs (run_dump.c) ---- */

/* --device=kir: launch_params, kernel_args and eff_bandwidth (bytes) from
 * the runtime's launch plan, when the build has the runtime. */
void run_dump_kir(const run_args *a, fu_fusion *f, const fu_arg *in, uint32_t n_in, fu_diag_engine *diag);
/* The dumps run_dump_kir writes (bits of fu_dump_kind): fu_dump_code
 * leaves them out. */
uint32_t run_dump_plan_kinds(void);
/* launch_params and kernel_args of a plan, `stage` naming where it ran. */
struct fu_rt_plan;
struct fu_rt_exec;
/* `which`: bits of the two dumps to write; `e` (may be NULL) adds the
 * buffers' device addresses to kernel_args. */
void run_dump_launches(const run_args *a, const fu_fusion *f, const struct fu_rt_plan *plan, const struct fu_rt_exec *e,
                       uint32_t which, const char *stage);
/* After the pipeline: fusion-level code dumps (fu_dump_code) but those in
 * `skip`; the exit status's part (0 or 1). */
int run_dump_compiled(const run_args *a, fu_module *m, const fu_source *src, uint32_t skip, fu_diag_engine *diag);

/* ---- the paths ---- */

/* Runs the pipeline (--pass, default `all`) over `m`, tuned for `dev`
 * (NULL: the passes' default). */
fu_status run_compile_pipeline(const run_args *a, fu_module *m, const fu_device *dev, const fu_source *src,
                               fu_diag_engine *diag);
/* One fusion on the reference interpreter (cpu) or its lowered kernels on
 * the kernel-IR interpreter (kir).  0, or 1 on an error or a failed check. */
int run_cpu_fusion(const run_args *a, fu_fusion *f, bool several, fu_diag_engine *diag, fu_strbuf *out, bool first);
/* Whether --device=kir must run the pipeline first: --pass, or a selected
 * fusion with a segment that has no kernel yet (or no segment at all). */
bool run_kir_needs_compile(const run_args *a, fu_module *m);
int run_kir_fusion(const run_args *a, fu_fusion *f, bool several, fu_diag_engine *diag, fu_strbuf *out, bool first);
/* Runs `fn` on each selected fusion (--fusion), collecting the summary
 * (wrapped in {"fusions": [...]} with --json) and writing it to a->out at
 * the end; stops at the first failure when `stop`.  The exit code. */
typedef int (*run_fusion_fn)(void *ctx, const run_args *a, fu_fusion *f, bool several, fu_strbuf *out, bool first);
int run_each_fusion(const run_args *a, fu_module *m, uint32_t n_selected, bool stop, run_fusion_fn fn, void *ctx);
/* The whole GPU path over the selected fusions (m NULL: --device-info
 * alone); the exit code. */
int run_gpu(const run_args *a, fu_module *m, const fu_source *src, uint32_t n_selected);

#endif
