/* fuser: the pass registry.
 *
 * Each pass defines itself once, in its own file:
 *
 *   const fu_pass_def fu_pass_<id> = {"name", "summary", options, run};
 *
 * and registering it is one line in FU_PASSES below.  Registry order is
 * pipeline order: `--pass=all` runs the passes in it. */
#include <string.h>

#include "fuser/pass.h"

/*  X(id), one line per pass, in pipeline order */
#define FU_PASSES(X)     \
  X(strip_bookend_views) \
  X(canonicalize)        \
  X(segment)             \
  X(schedule)            \
  X(index_graph)         \
  X(lower)

#define FU_DECLARE_PASS(id) extern const fu_pass_def fu_pass_##id;
FU_PASSES(FU_DECLARE_PASS)
#undef FU_DECLARE_PASS

static const fu_pass_def *const registry[] = {
#define FU_PASS_ENTRY(id) &fu_pass_##id,
    FU_PASSES(FU_PASS_ENTRY)
#undef FU_PASS_ENTRY
};

const fu_pass_def *const *fu_pass_all(size_t *n) {
  *n = sizeof registry / sizeof registry[0];
  return registry;
}

const fu_pass_def *fu_pass_lookup(const char *name, size_t len) {
  if (!name) return NULL;
  for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
    if (strlen(registry[i]->name) == len && memcmp(registry[i]->name, name, len) == 0) return registry[i];
  return NULL;
}

static const char *given(const fu_pass_context *ctx, const char *name) {
  if (ctx)
    for (uint32_t i = ctx->n_options; i-- > 0;)
      if (ctx->options[i].name && strcmp(ctx->options[i].name, name) == 0) return ctx->options[i].value;
  return NULL;
}

bool fu_pass_option_given(const fu_pass_context *ctx, const char *name) { return given(ctx, name) != NULL; }

/* The last occurrence wins, so `p{a=1,a=2}` means a=2 as on a command line. */
const char *fu_pass_option_value(const fu_pass_context *ctx, const char *name) {
  const char *v = given(ctx, name);
  if (v) return v;
  const fu_pass_def *pass = ctx ? ctx->pass : NULL;
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

bool fu_feature_set_on(const fu_feature_set *s, fu_feature f) {
  uint32_t bit = 1u << f;
  if (FU_FEATURES_OFF_BY_DEFAULT & bit) return s && (s->on & bit) && !(s->off & bit);
  return !s || !(s->off & bit);
}

bool fu_pass_feature_on(const fu_pass_context *ctx, fu_feature f) {
  return fu_feature_set_on(ctx ? ctx->features : NULL, f);
}

bool fu_pass_kind_on(const fu_pass_context *ctx, fu_sched_kind k) {
  return !ctx || !ctx->features || (unsigned)k >= 32 || !(ctx->features->kinds_off & (1u << k));
}
