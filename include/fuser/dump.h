/* fuser: the debugging switches every tool reads (docs/debugging.md).
 *
 *   FUSER_DUMP=a,b,...    or --dump=a,b,...     what to dump (FUSER_DUMP=help lists it)
 *   FUSER_DUMP_DIR=DIR                          dumps go to DIR/<fusion>/<name>, not stderr
 *   FUSER_DISABLE=a,...   or --disable=a,...    features to turn off for bisecting
 *   FUSER_ENABLE=a,...    or --enable=a,...     turn them back on (the last word wins)
 *
 * The table of dump names and of switches, the parsing of the environment
 * and of the flags, and the writing of one dump live in lib/driver/dump.c;
 * the stages that produce each dump (after which pass, from which printer)
 * in lib/driver/dump_stages.c.  Every dump starts with a header line, a
 * comment of its own language, that names the dump, the fusion and the
 * stage; the IR dumps parse back after it. */
#ifndef FUSER_DUMP_H
#define FUSER_DUMP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "fuser/ir.h"
#include "fuser/pass.h"
#include "fuser/status.h"
#include "fuser/strbuf.h"
#include "fuser/target.h"

/*  X(ID, "name", "comment leader", "what it shows") */
#define FU_DUMP_KINDS(X)                                                                                               \
  X(FUSION_IR, "fusion_ir", "//", "the fusion as parsed or imported, before any pass (.fir)")                          \
  X(FUSION_IR_PRESEG, "fusion_ir_preseg", "//",                                                                        \
    "the fusion after the boundary passes (strip-bookend-views, canonicalize), before segment (.fir)")                 \
  X(SEGMENTED_FUSION, "segmented_fusion", "//", "the fusion after segment: its segments and host ops (.fir)")          \
  X(SCHEDULER_PARAMS, "scheduler_params", "//",                                                                        \
    "each segment's scheduler parameters after schedule: kind, vector width, unroll, threads, the schedule")           \
  X(INDEX_GRAPH, "index_graph", "//", "each scheduled segment's index graph (the index-graph pass)")                   \
  X(KERNEL_IR, "kernel_ir", "//", "each kernel after lower (.kir, as fuser-kir reads it)")                             \
  X(CUDA_KERNEL, "cuda_kernel", "//", "the kernels as CUDA C (the nvrtc backend's text)")                              \
  X(LLVM_IR, "llvm_ir", ";", "the kernels as LLVM IR (the llvm backend's text, optimized)")                            \
  X(PTX, "ptx", "//", "the kernels' PTX (fuser-run: the PTX it loads)")                                                \
  X(LAUNCH_PARAMS, "launch_params", "//", "each kernel's grid, block and dynamic shared memory")                       \
  X(KERNEL_ARGS, "kernel_args", "//",                                                                                  \
    "each launch's arguments: tensors' dtypes, shapes, strides and buffers (addresses on the GPU), scalars")           \
  X(EFF_BANDWIDTH, "eff_bandwidth", "//",                                                                              \
    "each kernel's bytes moved, and on the GPU its time and effective bandwidth on every run")                         \
  X(PTXAS_VERBOSE, "ptxas_verbose", "//",                                                                              \
    "registers, spills and shared memory per kernel (ptxas -v; the JIT's info log on the GPU)")                        \
  X(SASS, "sass", "//", "the kernels' machine code (ptxas, then cuobjdump -sass, from the CUDA Toolkit)")               \
  X(SEGMENTER_LOGGING, "segmenter_logging", "//", "the segmenter's explanations (what --debug=segment prints)")        \
  X(PYTHON_DEFINITION, "python_definition", "#", "the fusion as an nvFuser Python script (fuser-translate --to)")      \
  X(HOST_IR, "host_ir", "//", "what the host does: host ops, allocations of intermediates, launches in order")

typedef enum fu_dump_kind {
#define FU_DUMP_ENUM(id, name, leader, help) FU_DUMP_##id,
  FU_DUMP_KINDS(FU_DUMP_ENUM)
#undef FU_DUMP_ENUM
  FU_DUMP_COUNT
} fu_dump_kind;

const char *fu_dump_name(fu_dump_kind k);

/* What a tool dumps and where.  Fill with fu_dump_init, then the
 * environment (fu_dump_from_env) and the command line (fu_dump_parse). */
typedef struct fu_dumps {
  uint32_t on;         /* bit (1u << fu_dump_kind) per dump asked for */
  bool help;           /* the list named `help`: print fu_dump_print_help and stop */
  const char *dir;     /* FUSER_DUMP_DIR, or NULL: `stream` */
  FILE *stream;        /* stderr unless a tool says otherwise */
  const char *tool;    /* "fuser-opt", for messages */
  FILE *err;           /* where problems with the switches and the files are reported */
  fu_allocator alloc;
  fu_strbuf written;   /* the files written so far, one per line: later dumps append */
} fu_dumps;

void fu_dump_init(fu_dumps *d, const char *tool, FILE *err);
void fu_dump_free(fu_dumps *d);
/* Adds the comma-separated names of `list` (from `origin`, "FUSER_DUMP" or
 * "--dump", for messages).  `aliases` NULL-terminated pairs of an old name
 * and the dump names it stands for that a tool still accepts (fuser-run:
 * launch, jit).  An unknown name
 * is reported on d->err with the valid ones; false then. */
bool fu_dump_parse(fu_dumps *d, const char *list, const char *origin, const char *const *aliases);
/* FUSER_DUMP and FUSER_DUMP_DIR. */
bool fu_dump_from_env(fu_dumps *d, const char *const *aliases);
bool fu_dump_on(const fu_dumps *d, fu_dump_kind k);
/* Any of the dumps asked for. */
bool fu_dump_any(const fu_dumps *d);
/* The names with one line each, as FUSER_DUMP=help prints them. */
void fu_dump_print_help(fu_strbuf *out);

/* Writes one dump: its header line (`// ----- fusion_ir @f: as parsed
 * -----`, in the dump's comment leader) and `len` bytes of `text`, to
 * d->stream, or to DIR/<fusion>/<name> (folders made as needed; a later
 * dump of the same fusion and name in the same process is appended).
 * `fusion` may be NULL (the whole input: DIR/<name>).  FU_ERR_IO after
 * reporting a file that cannot be written. */
fu_status fu_dump_write(fu_dumps *d, fu_dump_kind k, const char *fusion, const char *stage, const char *text,
                        size_t len);

/* ---- the stages (lib/driver/dump_stages.c) -------------------------------- */

/* Dump `k` (fusion_ir, fusion_ir_preseg, segmented_fusion) of every
 * fusion of `m`, as the printer writes it, when asked. */
fu_status fu_dump_module(fu_dumps *d, fu_dump_kind k, const fu_module *m, const char *stage);
/* fu_pipeline_run's hooks around each pass: fusion_ir_preseg before
 * segment, segmented_fusion after it, scheduler_params after schedule,
 * kernel_ir and host_ir after lower. */
fu_status fu_dump_before_pass(fu_dumps *d, const char *pass, const fu_module *m);
fu_status fu_dump_after_pass(fu_dumps *d, const char *pass, const fu_module *m);
/* The dump a pass's --debug output is (segmenter_logging: segment,
 * index_graph: index-graph), FU_DUMP_COUNT for other passes; and writing
 * that output, captured while the pass ran, when it is asked for. */
fu_dump_kind fu_dump_of_pass_debug(const char *pass);
fu_status fu_dump_pass_debug(fu_dumps *d, const char *pass, const fu_module *m, const char *text, size_t len);

typedef struct fu_dump_code_options {
  const char *fusion;     /* only this fusion (NULL: every one) */
  const char *arch;       /* NULL: the schedules' */
  const fu_source *src;   /* the input, for diagnostics without a line */
  uint32_t skip;          /* bits of dumps the tool writes itself (fuser-run on the GPU: the PTX it loads) */
  const fu_feature_set *features; /* the backends' switches (fast_paths, tid_range); NULL: the defaults */
} fu_dump_code_options;

/* The dumps of a lowered module's code, for each fusion with kernels:
 * cuda_kernel, llvm_ir, ptx, ptxas_verbose (ptxas -v over the PTX) and
 * launch_params (from the kernel IR).  Compile errors go to `diag`. */
fu_status fu_dump_code(fu_dumps *d, fu_module *m, const fu_dump_code_options *o, fu_diag_engine *diag);
/* The same for kernels `ks` (fuser-kir's input), under `label`, plus
 * kernel_ir: the kernels as read. */
fu_status fu_dump_kernels(fu_dumps *d, const fu_kernel *const *ks, uint32_t n, const char *label, const char *arch,
                          const fu_dump_code_options *o, fu_diag_engine *diag);
/* python_definition: the module as an nvFuser script (fu_py_export). */
fu_status fu_dump_python(fu_dumps *d, const fu_module *m, const char *src_name, fu_diag_engine *diag);

/* ---- switches: FUSER_DISABLE, FUSER_ENABLE ------------------------------ */

/* Applies the comma-separated names of `list` to `fs`, turning them off
 * (`off`) or on: vectorize, unroll, bookend, horizontal, fast_paths, and
 * scheduler:<kind> for each kind of kinds.def.  An unknown name is
 * reported on `err` (prefixed with `tool` and naming `origin`) with the
 * valid ones; false then. */
bool fu_features_parse(fu_feature_set *fs, const char *list, bool off, const char *origin, const char *tool, FILE *err);
/* FUSER_DISABLE, then FUSER_ENABLE. */
bool fu_features_from_env(fu_feature_set *fs, const char *tool, FILE *err);
/* The switch names with one line each. */
void fu_features_print_help(fu_strbuf *out);
/* Sets the backends' switches of *to from feature set fs (NULL: the
 * defaults): fast_paths, tid_range.  The rest of *to stays as it was. */
void fu_target_options_set_features(fu_target_options *to, const fu_feature_set *fs);

/* Makes `path` a folder, and its missing parents (mkdir -p); a folder
 * already there is fine.  On failure errno says why. */
bool fu_make_dirs(const char *path);

#endif
