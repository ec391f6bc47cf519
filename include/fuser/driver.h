/* fuser: the library side of the tools (MLIR's MlirOptMain, in C).
 *
 * The driver parses pass pipelines (`a,b{opt=v}`), runs them over a module
 * with optional IR printing, verification after every pass and per-pass
 * timing, splits inputs at `// -----`, checks `expected-error` comments
 * (--verify-diagnostics), and implements fuser-opt's command line.  The tool
 * main in tools/fuser-opt.c only wires streams and emitters into
 * fu_opt_main().  Library code never exits: every entry point returns a
 * status or an exit code, and prints only to the streams it was given. */
#ifndef FUSER_DRIVER_H
#define FUSER_DRIVER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "fuser/device.h"
#include "fuser/diag.h"
#include "fuser/ir.h"
#include "fuser/pass.h"
#include "fuser/strbuf.h"
#include "fuser/target.h"

#define FU_VERSION_STRING "0.1.0"

/* ---- pipelines --------------------------------------------------------- */

/* One pass of a pipeline with the options written after it in braces. */
typedef struct fu_pipeline_step {
  const fu_pass_def *pass;
  fu_pass_option *options; /* names and values live in the pipeline's arena */
  uint32_t n_options;
} fu_pipeline_step;

typedef struct fu_pipeline {
  fu_pipeline_step *steps;
  uint32_t n_steps;
  uint32_t cap;
  fu_allocator alloc;
  fu_arena *arena; /* option strings; created on first use */
} fu_pipeline;

void fu_pipeline_init(fu_pipeline *p, fu_allocator alloc);
void fu_pipeline_free(fu_pipeline *p);

/* Parse `text` (`pass,pass{opt=value,opt2=value},...`) and append its passes
 * to `p`.  The name `all` stands for every registered pass in registry order.
 * Unknown passes or options, and malformed text, are reported to `diag` with
 * a location in the text (named `src_name`, e.g. "--pass") and the list of
 * valid names; then FU_ERR_INVALID_ARG is returned and `p` is unchanged. */
fu_status fu_pipeline_parse(fu_pipeline *p, const char *text, const char *src_name,
                            fu_diag_engine *diag);

/* The textual form of `p`, which fu_pipeline_parse reads back. */
void fu_pipeline_print(fu_strbuf *out, const fu_pipeline *p);

/* ---- timing ------------------------------------------------------------ */

typedef enum fu_timing_mode { FU_TIMING_OFF, FU_TIMING_TEXT, FU_TIMING_JSON } fu_timing_mode;

typedef struct fu_timing_entry {
  const char *name; /* a pass name or a static phase name ("parse", ...) */
  double seconds;   /* summed over every time it ran */
  uint32_t count;
} fu_timing_entry;

/* Wall-clock time per phase, accumulated by name in first-seen order. */
typedef struct fu_timing {
  fu_timing_entry *entries;
  uint32_t n, cap;
  fu_allocator alloc;
} fu_timing;

void fu_timing_init(fu_timing *t, fu_allocator alloc);
void fu_timing_free(fu_timing *t);
/* Monotonic clock in seconds. */
double fu_timing_now(void);
/* Adds `seconds` to the entry `name` (kept by pointer: pass a string that
 * outlives `t`). */
void fu_timing_add(fu_timing *t, const char *name, double seconds);
/* Text table or JSON object, as --timing and --timing=json print them. */
void fu_timing_report(const fu_timing *t, fu_timing_mode mode, fu_strbuf *out);

/* ---- running a pipeline ------------------------------------------------ */

typedef struct fu_run_options {
  bool verify_each;          /* run the verifier after every pass */
  bool print_ir_before_all;
  bool print_ir_after_all;
  const char *print_ir_before; /* comma-separated pass names, or NULL */
  const char *print_ir_after;  /* comma-separated pass names, or NULL */
  const char *debug;           /* --debug list (pass names or "all"), or NULL */
  bool print_locs;             /* IR dumps carry `// line:col` comments */
  FILE *dump;                  /* where IR dumps and --debug output go */
  const fu_device *device;     /* the target the passes tune for (NULL: their default) */
  struct fu_dumps *dumps;      /* FUSER_DUMP's stage dumps around the passes (NULL: none; fuser/dump.h) */
  fu_feature_set features;     /* FUSER_DISABLE: what the passes leave out (zero: nothing) */
} fu_run_options;

/* Default options: verify after every pass, no dumps, dumps to stderr. */
fu_run_options fu_run_options_default(void);

/* Run every step of `p` over `m`, in order.  A pass that fails, or after
 * which the verifier finds invalid IR, stops the pipeline; the error names
 * the pass.  `loc_src` names the input in unlocated diagnostics (may be
 * NULL).  `timing` may be NULL. */
fu_status fu_pipeline_run(const fu_pipeline *p, fu_module *m, const fu_run_options *o,
                          fu_timing *timing, const fu_source *loc_src, fu_diag_engine *diag);

/* True when `name` is an item of the comma-separated `list` (or the list
 * is "all"). */
bool fu_name_in_list(const char *list, const char *name);

/* ---- input splitting --------------------------------------------------- */

/* Cut `whole` at lines that read exactly `// -----` (surrounding blanks
 * allowed).  Each chunk keeps the file's name and its first line number, so
 * diagnostics report the file's real lines.  *out is allocated with `alloc`
 * (free with fu_mem_free(alloc, *out, *n * sizeof **out)); chunks point into
 * whole->text. */
fu_status fu_split_input(const fu_source *whole, fu_allocator alloc, fu_source **out, uint32_t *n);
/* The same with another comment leader: "#" cuts Python at `# -----`. */
fu_status fu_split_input_at(const fu_source *whole, const char *leader, fu_allocator alloc, fu_source **out,
                            uint32_t *n);

/* ---- --verify-diagnostics ---------------------------------------------- */

/* Collects `expected-error {{...}}` comments from one source and the
 * diagnostics produced while processing it, then matches them. */
typedef struct fu_expect_checker fu_expect_checker;

/* Scans `src` for expectations.  Malformed ones (`expected-error` without
 * `{{...}}`) are reported to `report` and make fu_expect_finish fail. */
fu_status fu_expect_new(const fu_source *src, fu_allocator alloc, fu_diag_engine *report,
                        fu_expect_checker **out);
/* Diagnostic handler: install with engine.handler = fu_expect_handler,
 * engine.user = the checker. */
void fu_expect_handler(void *user, const fu_diagnostic *d);
/* Reports every unexpected diagnostic and every expectation that was not
 * met to `report`; returns true when everything matched. */
bool fu_expect_finish(fu_expect_checker *c, fu_diag_engine *report);
void fu_expect_free(fu_expect_checker *c);

/* ---- compiling kernels for a target ------------------------------------ */

/* One target's compiler, shared by every compile call of a tool: the
 * target instance is opened at the first call (so libdevice is read once
 * per process) and its diagnostics are relayed to the engine of the call
 * at hand, with the call's input file on those that have no location. */
typedef struct fu_compiler {
  const fu_target_def *target; /* NULL: the build has no backend */
  fu_target_options options;
  fu_allocator alloc;
  void *state;                 /* the target instance, once opened */
  fu_diag_engine relay;        /* what the target reports to */
  fu_diag_engine *to;          /* the current call's engine */
  const fu_source *src;        /* the current call's input */
  fu_target_timing total;      /* summed over the calls */
  unsigned calls;
  bool allow_partial;          /* a segment without a kernel is a warning, not an error */
} fu_compiler;

/* `target` NULL: the build's preferred target.  Never fails: a build
 * without that target leaves c->target NULL, and compiling then says so. */
void fu_compiler_init(fu_compiler *c, const char *target, const fu_target_options *o, fu_allocator alloc);
void fu_compiler_free(fu_compiler *c);
/* Makes `t` the compiler's target (closing the instance of the old one);
 * the options and the allocator stay. */
void fu_compiler_retarget(fu_compiler *c, const fu_target_def *t);

/* Compiles `n` kernels into `out`; `arch` NULL: FU_DEFAULT_ARCH.  Errors,
 * with `src` (may be NULL) on those without a location, go to `diag`. */
fu_status fu_compile_kernels(fu_compiler *c, const fu_kernel *const *ks, uint32_t n, fu_target_output what,
                             const char *arch, const fu_source *src, fu_strbuf *out, fu_diag_engine *diag);

/* The one way tools compile a module: the kernels of every lowered segment
 * (of fusion `fusion` only, when not NULL) into one output, for `arch`, or,
 * when NULL, the architecture the schedules were made for (one module has
 * one), or FU_DEFAULT_ARCH.  A segment without a kernel is an error at it
 * (a warning with c->allow_partial, and the output holds the others).  A
 * module with no kernel, segments scheduled
 * for different architectures, an architecture the target cannot compile
 * for, and a build without a backend are errors located at `src`. */
fu_status fu_compile_module(fu_compiler *c, fu_module *m, const char *fusion, fu_target_output what,
                            const char *arch, const fu_source *src, fu_strbuf *out, fu_diag_engine *diag);

/* Why segment `seg` has no kernel after a pipeline: its kind has no
 * lowering yet, or the pipeline ended before `lower` ran. */
const char *fu_segment_no_kernel_reason(const fu_op *seg);

/* How many kernels fu_compile_module would compile. */
uint32_t fu_compile_count_kernels(const fu_module *m, const char *fusion);

/* The text --timing prints after the emit phase: where the compile time
 * went, one-time loads apart.  Nothing when nothing was compiled. */
void fu_compiler_timing_report(const fu_compiler *c, fu_strbuf *out);

/* ---- command lines ------------------------------------------------------- */

/* One option of a tool's command line.  Long options take `--name=value`
 * or `--name value` (and LLVM's single-dash `-name`); an optional value
 * only the `=` form.  A one-letter name is a short alias (`-o FILE`, `-h`),
 * left out of --help; a row with a NULL name is a heading there. */
typedef enum fu_cli_arg_kind { FU_CLI_NONE, FU_CLI_REQUIRED, FU_CLI_OPTIONAL } fu_cli_arg_kind;

typedef struct fu_cli_option {
  const char *name; /* without the dashes */
  int id;
  fu_cli_arg_kind arg;
  const char *metavar; /* for --help */
  const char *help;
} fu_cli_option;

/* The state of a walk over argv; set every field up to `err`. */
typedef struct fu_cli {
  int argc;
  char *const *argv;
  const fu_cli_option *opts;
  size_t n_opts;
  const char *prefix; /* before every message, e.g. "fuser-opt: error: " */
  FILE *err;
  int i;              /* the next argument (start at 1) */
  bool only_files;    /* after `--` */
} fu_cli;

enum { FU_CLI_END = -1, FU_CLI_FILE = -2, FU_CLI_ERROR = -3 };

/* The next item of the command line: an option's id (its value in *value,
 * NULL when it has none), FU_CLI_FILE (the argument in *value), FU_CLI_END,
 * or FU_CLI_ERROR after printing why (an unknown option, a value missing
 * or given to an option that takes none). */
int fu_cli_next(fu_cli *c, const char **value);
/* The options as --help lists them, one line each, headings as they are. */
void fu_cli_print_options(fu_strbuf *out, const fu_cli_option *opts, size_t n);

/* ---- fuser-opt ----------------------------------------------------------- */

typedef enum fu_emit_kind {
  FU_EMIT_FIR,  /* the Fusion IR text (default) */
  FU_EMIT_LLVM, /* LLVM IR of the kernels */
  FU_EMIT_PTX,  /* PTX */
  FU_EMIT_CUDA, /* CUDA C of the kernels */
  FU_EMIT_COUNT
} fu_emit_kind;

const char *fu_emit_kind_name(fu_emit_kind k);
/* FU_EMIT_COUNT when `name` is not an emit kind. */
fu_emit_kind fu_emit_kind_from_name(const char *name);

/* Writes module `m` in form `kind` to `out`.  Supplied by the tool for the
 * kinds its build supports (the backends live outside fuser_core). */
typedef fu_status (*fu_emit_fn)(void *user, fu_module *m, fu_emit_kind kind, fu_strbuf *out,
                                fu_diag_engine *diag);

typedef struct fu_opt_config {
  const char *tool_name;               /* for messages and --version */
  fu_emit_fn emitters[FU_EMIT_COUNT];  /* NULL: the compiler's, if any (FIR is built in) */
  void *emit_user;
  fu_compiler *compiler;               /* --emit of a target's text and PTX (NULL: none) */
} fu_opt_config;

/* Whether this configuration can write `k`: an emitter of the tool, or the
 * compiler's target; fu_opt_target_output says which target output it is. */
bool fu_opt_can_emit(const fu_opt_config *cfg, fu_emit_kind k);
bool fu_opt_target_output(const fu_opt_config *cfg, fu_emit_kind k, fu_target_output *what);

/* The parsed command line of fuser-opt. */
typedef struct fu_opt_args {
  const char *input;  /* NULL or "-": stdin */
  const char *output; /* NULL or "-": stdout */
  fu_pipeline pipeline;
  fu_run_options run;
  fu_timing_mode timing;
  fu_emit_kind emit;
  const char *backend; /* --backend=NAME: the target of --emit=ptx (NULL: the text kind's, or the preferred) */
  bool split_input_file;
  bool verify_diagnostics;
  unsigned error_limit; /* --error-limit=N: errors shown per chunk, 0 no limit (default 20) */
  bool list_passes;
  bool help;
  bool version;
  /* ---- codegen: the target and the index graph's outputs ---- */
  const char *device;          /* --device=NAME|FILE, or NULL (the passes' default) */
  fu_device device_desc;       /* what --device names; run.device points here when given */
  bool print_index_graph;      /* --print-index-graph: the index-graph pass prints to stderr */
  const char *index_graph_dot; /* --index-graph-dot=FILE */
  /* ---- end codegen ---- */
  /* ---- segments: what fuser-opt does with them after the pipeline ---- */
  const char *extract_segment; /* --extract-segment=@NAME: the output is that segment alone (fu_segment_extract) */
  const char *segment_dot;     /* --segment-dot=FILE: fu_segment_write_dot of every fusion, to FILE */
  bool allow_partial;          /* --allow-partial: --emit leaves out segments without a kernel, with a warning */
  /* ---- debugging switches (fuser/dump.h): FUSER_DUMP, FUSER_DISABLE/ENABLE, and the flags ---- */
  struct fu_dumps *dumps;      /* what to dump and where (allocated; run.dumps points here when any) */
  bool dump_help;              /* FUSER_DUMP=help or --dump=help: list the names and stop */
} fu_opt_args;

/* Parses argv[1..argc) into `a` (initialise nothing first; free with
 * fu_opt_args_free even on failure).  Usage errors are printed to `err`
 * prefixed with the tool name; returns FU_ERR_INVALID_ARG then. */
fu_status fu_opt_parse_args(int argc, char *const *argv, const fu_opt_config *cfg, fu_opt_args *a,
                            FILE *err);
void fu_opt_args_free(fu_opt_args *a);
/* The target the arguments ask of the tool's compiler: --backend's, else
 * the one whose text --emit names (cuda: nvrtc), else the compiler's. */
const fu_target_def *fu_opt_select_target(const fu_opt_config *cfg, const fu_opt_args *a);

/* Reads the N of --error-limit=N (every tool takes it): a decimal count,
 * 0 meaning no limit.  False on anything else. */
bool fu_parse_error_limit(const char *text, unsigned *out);

/* The whole tool: parse arguments, read the input (`in` when no file or
 * "-"), process each chunk, write the output to `out` or -o.  Returns the
 * process exit code: 0 success, 1 input or pipeline error (or unmet
 * expectations with --verify-diagnostics), 2 usage error. */
int fu_opt_main(int argc, char *const *argv, const fu_opt_config *cfg, FILE *in, FILE *out,
                FILE *err);

/* Help text and the pass list, as --help and --list-passes print them. */
void fu_opt_print_help(fu_strbuf *out, const fu_opt_config *cfg);
void fu_opt_print_pass_list(fu_strbuf *out);

/* ---- fuser-run ----------------------------------------------------------- */

/* The whole of fuser-run (see its --help): run each fusion of the input on
 * the GPU, on the CPU reference interpreter, or its compiled kernels on the
 * kernel-IR interpreter, and print a summary to `out` (diagnostics to
 * `err`; `in` is read for the file "-").  Returns the exit code: 0
 * success, 1 an error in the input, while running, or a failed check, 2 a
 * usage error or no usable device. */
int fu_run_main(int argc, char *const *argv, FILE *in, FILE *out, FILE *err);

/* Read a whole stream or file into a NUL-terminated buffer allocated with
 * `alloc` (free with fu_mem_free(alloc, *data, *len + 1)).  On failure
 * returns FU_ERR_IO (errno tells why) or FU_ERR_NOMEM. */
fu_status fu_read_stream(FILE *f, fu_allocator alloc, char **data, size_t *len);
fu_status fu_read_file(const char *path, fu_allocator alloc, char **data, size_t *len);

#endif
