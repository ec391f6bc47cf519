/* fuser: the pass registry.
 *
 * One constant table.  Registering a pass is one line in FU_PASSES below plus
 * its file passes/<name>.c, which defines
 *
 *   const fu_pass_option_def fu_pass_options_<id>[];   (NULL-name terminated)
 *   fu_status fu_pass_run_<id>(fu_module *m, fu_pass_context *ctx);
 *
 * Registry order is pipeline order: `--pass=all` runs the passes in it. */
#include <string.h>

#include "fuser/pass.h"

/*  X(id, "name", "summary"), one line per pass, in pipeline order */
#define FU_PASSES(X)                                                                                        \
  X(strip_bookend_views, "strip-bookend-views",                                                             \
    "move metadata-only views at the fusion's ends out of the kernels, as host aliases")                    \
  X(canonicalize, "canonicalize", "fold scalar constants, apply exact algebraic identities, CSE, and remove dead ops") \
  X(segment, "segment", "partition each fusion into segments that one scheduler kind compiles into one kernel each") \
  X(schedule, "schedule", "pick each pointwise segment's schedule (vector width, block, unroll, grid) for --device") \
  X(index_graph, "index-graph", "check that every scheduled segment is indexable; print its index graph (--print-index-graph)") \
  X(lower, "lower", "turn each scheduled segment into kernel IR (loops, predicates, vector accesses, launch)")

#define FU_DECLARE_PASS(id, name, summary)                   \
  extern const fu_pass_option_def fu_pass_options_##id[];    \
  fu_status fu_pass_run_##id(fu_module *m, fu_pass_context *ctx);
FU_PASSES(FU_DECLARE_PASS)
#undef FU_DECLARE_PASS

static const fu_pass_def registry[] = {
#define FU_PASS_ENTRY(id, name, summary) {name, summary, fu_pass_options_##id, fu_pass_run_##id},
    FU_PASSES(FU_PASS_ENTRY)
#undef FU_PASS_ENTRY
};

const fu_pass_def *fu_pass_all(size_t *n) {
  *n = sizeof registry / sizeof registry[0];
  return registry;
}

const fu_pass_def *fu_pass_lookup(const char *name, size_t len) {
  if (!name) return NULL;
  for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
    if (strlen(registry[i].name) == len && memcmp(registry[i].name, name, len) == 0) return &registry[i];
  return NULL;
}

/* The last occurrence wins, so `p{a=1,a=2}` means a=2 as on a command line. */
const char *fu_pass_option_value(const fu_pass_context *ctx, const fu_pass_def *pass, const char *name) {
  if (ctx)
    for (uint32_t i = ctx->n_options; i-- > 0;)
      if (ctx->options[i].name && strcmp(ctx->options[i].name, name) == 0) return ctx->options[i].value;
  if (pass && pass->options)
    for (const fu_pass_option_def *o = pass->options; o->name; o++)
      if (strcmp(o->name, name) == 0) return o->default_value;
  return NULL;
}

/* `debug_flags` is a comma-separated list of pass names, or "all". */
bool fu_pass_debug_enabled(const fu_pass_context *ctx, const char *pass_name) {
  if (!ctx || !ctx->debug_out || !ctx->debug_flags || !pass_name) return false;
  size_t want = strlen(pass_name);
  const char *p = ctx->debug_flags;
  while (*p) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if ((len == want && memcmp(p, pass_name, len) == 0) || (len == 3 && memcmp(p, "all", 3) == 0))
      return true;
    if (!end) break;
    p = end + 1;
  }
  return false;
}
