/* fuser: passes and the pass registry.
 *
 * Every pass has the same signature (as in QBE): it takes a module and a
 * context, rewrites the module in place, and returns a status.  What a pass
 * decides is written into the IR, never kept on the side. */
#ifndef FUSER_PASS_H
#define FUSER_PASS_H

#include <stdio.h>

#include "fuser/device.h"
#include "fuser/diag.h"
#include "fuser/ir.h"

typedef struct fu_pass_def fu_pass_def;

typedef struct fu_pass_option {
  const char *name;
  const char *value;
} fu_pass_option;

/* Features a tool may turn off to bisect a problem (FUSER_DISABLE and
 * --disable=, docs/debugging.md): the passes that own each one read it
 * from their context.  All are on unless a tool says otherwise. */
typedef enum fu_feature {
  FU_FEATURE_VECTORIZE,  /* schedule: vectorize loop axes (off: unrolled scalar accesses) */
  FU_FEATURE_UNROLL,     /* schedule: unroll loop axes (off: serial loops where the schedule allows) */
  FU_FEATURE_BOOKEND,    /* strip-bookend-views: views at the fusion's ends become host aliases */
  FU_FEATURE_HORIZONTAL, /* segment: horizontal merges (groups sharing an input, independent groups) */
  FU_FEATURE_FAST_PATHS, /* backends: instructions in place of libdevice calls (sqrt, abs, reciprocal) */
  FU_FEATURE_RECOMPUTE,  /* segment: cheap prologues copied into the segments reading them */
  FU_FEATURE_INNER_OUTER, /* schedule: sums over a persistent segment's rows folded into it as partial sums */
  FU_FEATURE_CLUSTERS,    /* schedule: rows split over thread-block clusters (sm_90); off unless enabled */
  FU_FEATURE_ONLINE_SOFTMAX, /* schedule: a sum of exp(x - max(x)) folded in its max's pass (online=true) */
  FU_FEATURE_EXP16,          /* lower: f32 exps that only reach 16-bit values as exp2(x * log2 e) */
  FU_FEATURE_SMEM_KEEP,      /* schedule: keep= on staged 16-bit rows for two blocks an SM */
  FU_FEATURE_WELFORD_SUMS,   /* lower: a known-count thread's Welford loop as sums */
  FU_FEATURE_GRID_TREE,      /* lower: a grid's Welford combine in two levels; off unless enabled */
  FU_FEATURE_TID_RANGE,      /* llvm backend: thread indices bounded by the block's extents; off unless enabled */
  FU_FEATURE_SPECULATE_LOADS, /* lower: guarded loads of inputs issued ahead of their branch at a clamped index */
  FU_FEATURE_COUNT
} fu_feature;

/* Features that are off unless turned on (--enable, FUSER_ENABLE):
 * clusters, measured slower than the shared-memory tier on the H100
 * (docs/performance.md, "Thread-block clusters"); grid_tree, 1-2% faster
 * on the H100 but whose near-zero means were further from PyTorch's
 * (docs/performance.md, "Two levels for the grid's Welford combine");
 * tid_range, which changes the PTX of most kernels of several-dim blocks
 * (60 of the 183 GPU-suite cases) and, timed, made none of the default
 * kernels faster (docs/performance.md, "Guarded loads issued ahead;
 * `tid_range` timed"). */
#define FU_FEATURES_OFF_BY_DEFAULT \
  ((1u << FU_FEATURE_CLUSTERS) | (1u << FU_FEATURE_GRID_TREE) | (1u << FU_FEATURE_TID_RANGE))

typedef struct fu_feature_set {
  uint32_t off;       /* bit (1u << fu_feature) per feature turned off */
  uint32_t kinds_off; /* bit (1u << fu_sched_kind) per scheduler kind the segmenter must not choose */
  uint32_t on;        /* bit per feature turned on (what FU_FEATURES_OFF_BY_DEFAULT needs) */
} fu_feature_set;

typedef struct fu_pass_context {
  fu_diag_engine *diag;
  const fu_pass_option *options; /* from `pass{name=value,...}` */
  uint32_t n_options;
  FILE *debug_out;         /* where --debug=<pass> output goes (NULL: off) */
  const char *debug_flags; /* comma-separated pass names given to --debug, or "all" */
  const fu_pass_def *pass; /* the pass being run: its declared options give the defaults */
  const fu_device *device; /* the target the tool compiles for, or NULL (a pass's own default) */
  const fu_feature_set *features; /* switched-off features (NULL: everything on) */
} fu_pass_context;

typedef fu_status (*fu_pass_fn)(fu_module *m, fu_pass_context *ctx);

typedef struct fu_pass_option_def {
  const char *name;
  const char *summary;
  const char *default_value;
} fu_pass_option_def;

/* A pass, defined once, in its own file (`const fu_pass_def fu_pass_<id>`):
 * its name, summary and options are read from here by the pipeline parser,
 * --list-passes and fu_pass_option_value. */
struct fu_pass_def {
  const char *name;
  const char *summary;
  const fu_pass_option_def *options; /* NULL-name terminated, or NULL */
  fu_pass_fn run;
};

/* The registry: a list of the passes' definitions, in passes/registry.c. */
const fu_pass_def *fu_pass_lookup(const char *name, size_t len);
/* Every registered pass, in registry (= pipeline) order; *n receives the count. */
const fu_pass_def *const *fu_pass_all(size_t *n);

/* The value of option `name` given to the running pass (ctx->pass), or the
 * pass's declared default, or NULL. */
const char *fu_pass_option_value(const fu_pass_context *ctx, const char *name);
/* True when the pipeline text gave option `name` (not just its default). */
bool fu_pass_option_given(const fu_pass_context *ctx, const char *name);
/* Whether feature `f` is on in set `s` (NULL: the defaults): as
 * fu_pass_feature_on, for the tools that hand features to a backend. */
bool fu_feature_set_on(const fu_feature_set *s, fu_feature f);
/* Whether feature `f`, or scheduler kind `k`, is on for this run (the
 * context's feature set; everything is on without one). */
bool fu_pass_feature_on(const fu_pass_context *ctx, fu_feature f);
bool fu_pass_kind_on(const fu_pass_context *ctx, fu_sched_kind k);
/* True when --debug names this pass (or "all"); then ctx->debug_out is set. */
bool fu_pass_debug_enabled(const fu_pass_context *ctx, const char *pass_name);

#endif
