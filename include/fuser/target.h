/* fuser: code-generation targets and the table of them.
 *
 * A target turns kernel IR into text: its own source form (LLVM IR for the
 * `llvm` target) and PTX.  Each target is one row, `const fu_target_def
 * fu_target_<name>`, defined beside its code under lib/target/<name>/ and
 * listed in lib/driver/targets.c under the build option its dependency
 * needs (FUSER_HAS_LLVM for `llvm`).  Tools never name a backend: they go
 * through fu_compiler (fuser/driver.h), which picks a row from the table. */
#ifndef FUSER_TARGET_H
#define FUSER_TARGET_H

#include <stdbool.h>
#include <stdint.h>

#include "fuser/alloc.h"
#include "fuser/diag.h"
#include "fuser/kir.h"
#include "fuser/status.h"
#include "fuser/strbuf.h"

/* The architecture kernels are compiled for when neither the schedules nor
 * the tool name one (the H100). */
#define FU_DEFAULT_ARCH "sm_90"

typedef enum fu_target_output {
  FU_TARGET_TEXT, /* the target's own source form (`text_name`) */
  FU_TARGET_PTX,
} fu_target_output;

/* Options a tool may give a target; zero means the target's defaults. */
typedef struct fu_target_options {
  const char *pipeline; /* optimization pipeline (llvm: new-pass-manager text) */
  bool before_opt;      /* text output before optimization */
  const char *arch;     /* the architecture of text output (NULL: FU_DEFAULT_ARCH) */
  bool no_fast_paths;   /* --disable=fast_paths: libdevice's functions where an instruction would do (llvm) */
  bool tid_range;       /* --enable=tid_range: thread indices bounded by the block's extent in each dim (llvm) */
} fu_target_options;

/* Where the last compile call's time went, in milliseconds. */
typedef struct fu_target_timing {
  double load_ms;    /* one-time loads in this call (libdevice) */
  double build_ms;   /* kernel IR to the target's IR */
  double opt_ms;
  double codegen_ms; /* to PTX */
  double total_ms;
  double cpu_ms;     /* CPU time of the call, loads excluded */
} fu_target_timing;

typedef struct fu_target_def {
  const char *name;      /* "llvm" */
  const char *text_name; /* what FU_TARGET_TEXT is, as an --emit kind: "llvm" */
  const char *summary;
  /* A compiler instance; errors go to `diag`, which must outlive it. */
  fu_status (*open)(const fu_target_options *o, fu_allocator alloc, fu_diag_engine *diag, void **state);
  void (*close)(void *state);
  /* The kernels of one call go into one output (one PTX module). */
  fu_status (*emit)(void *state, const fu_kernel *const *ks, uint32_t n, fu_target_output what, const char *arch,
                    fu_strbuf *out);
  bool (*arch_supported)(const char *arch);
  void (*last_timing)(void *state, fu_target_timing *out);
} fu_target_def;

/* The targets this build has, preferred first; *n receives the count. */
const fu_target_def *const *fu_target_all(size_t *n);
/* The target named `name`; NULL `name`: the preferred one.  NULL when the
 * build has none (or none of that name). */
const fu_target_def *fu_target_lookup(const char *name);
/* The preferred target whose text output is `text_name` ("llvm", "cuda");
 * NULL when none. */
const fu_target_def *fu_target_for_text(const char *text_name);

#endif
