/* fuser driver: FUSER_DISABLE / FUSER_ENABLE and --disable / --enable
 * (include/fuser/dump.h): the names of the features a tool can turn off
 * for bisecting, parsed into the fu_feature_set that the pipeline hands to
 * every pass (fu_pass_context.features). */
#include <stdlib.h>
#include <string.h>

#include "fuser/dump.h"

static bool item_is(const char *p, size_t n, const char *name) { return strlen(name) == n && memcmp(p, name, n) == 0; }


typedef struct feature_row {
  const char *name, *help;
} feature_row;

static const feature_row feature_rows[FU_FEATURE_COUNT] = {
    [FU_FEATURE_VECTORIZE] = {"vectorize", "vector loads and stores (schedule: the vector axis is unrolled, width 1)"},
    [FU_FEATURE_UNROLL] = {"unroll", "unrolled loops (schedule: serial loops where the schedule allows)"},
    [FU_FEATURE_BOOKEND] = {"bookend", "views at the fusion's ends as host aliases (strip-bookend-views)"},
    [FU_FEATURE_HORIZONTAL] = {"horizontal",
                               "the segmenter's horizontal merges (groups sharing an input, independent groups)"},
    [FU_FEATURE_FAST_PATHS] = {"fast_paths",
                               "instructions in place of libdevice calls in the llvm backend (sqrt, abs), and "
                               "the f32 reciprocal, exp and exp2 through rcp.approx and ex2.approx.ftz (both "
                               "backends)"},
    [FU_FEATURE_RECOMPUTE] = {"recompute",
                              "the segmenter's copies of cheap prologues into the segments that read them, in "
                              "place of passing the values through global memory"},
    [FU_FEATURE_INNER_OUTER] = {"inner_outer",
                                "the schedule pass's inner-outer rewrite: sums over the rows a persistent segment "
                                "reads, as partial sums in its kernel (else a kernel of their own)"},
    [FU_FEATURE_CLUSTERS] = {"clusters",
                             "off unless enabled: thread-block clusters (sm_90), a normalization row too long "
                             "for one block's registers split over a cluster's blocks (else staged in shared "
                             "memory or reread)"},
    [FU_FEATURE_ONLINE_SOFTMAX] = {"online_softmax",
                                   "persistent schedules' online=true: a sum of exp(x - max(x)) folded in the same "
                                   "pass as its max (else a pass of its own after the max's)"},
    [FU_FEATURE_EXP16] = {"exp16", "f32 exps whose results only reach bf16/f16 values computed as exp2(x * log2 e) "
                                   "(lower; else the backends' exp within 3.5 ulps)"},
    [FU_FEATURE_SMEM_KEEP] = {"smem_keep",
                              "a 16-bit normalization row staged in shared memory with room for one block an SM "
                              "keeps its first chunks in registers (keep=), so that two blocks fit (else the whole "
                              "row is staged)"},
    [FU_FEATURE_WELFORD_SUMS] = {"welford_sums",
                                 "a reduction thread whose Welford count is known keeps the sum and the sum of squares "
                                 "of its shifted elements, made mean and m2 before the combines (else Welford's "
                                 "update an element)"},
    [FU_FEATURE_GRID_TREE] = {"grid_tree",
                              "off unless enabled: a grid reduction's Welford states combined in two levels where "
                              "the last block's threads would walk 8 partials or more (groups of blocks fold "
                              "theirs first; else one last block walks them all)"},
    [FU_FEATURE_TID_RANGE] = {"tid_range",
                              "off unless enabled: the llvm backend bounds each thread index by the block's extent "
                              "in its dim (else LLVM bounds each by the block's thread count, and guards such as a "
                              "row's whole vectors in a block of several rows stay)"},
    [FU_FEATURE_SPECULATE_LOADS] = {"speculate_loads",
                                    "loads of inputs in a guard (a row's last vector) issued ahead of the branch at "
                                    "an index clamped to 0 where it fails, beside the other loads (lower)"},
};

static const char *const kind_names[FU_SK_COUNT] = {
    NULL, /* FU_SK_NONE */
#define FU_SCHED_KIND(id, name, accept, schedule, lower) name,
#include "fuser/kinds.def"
};

void fu_features_print_help(fu_strbuf *out) {
  fu_strbuf_puts(out, "FUSER_DISABLE=a,b,... (or --disable=a,b,...) turns off, FUSER_ENABLE (--enable) on:\n");
  for (int f = 0; f < FU_FEATURE_COUNT; f++)
    fu_strbuf_printf(out, "  %-20s %s\n", feature_rows[f].name, feature_rows[f].help);
  for (int k = 1; k < FU_SK_COUNT; k++)
    fu_strbuf_printf(out, "  scheduler:%-10s the segmenter never chooses %s (the next kind that accepts does)\n",
                     kind_names[k], kind_names[k]);
}

static void list_feature_names(FILE *err) {
  for (int f = 0; f < FU_FEATURE_COUNT; f++) fprintf(err, "%s%s", f ? ", " : "", feature_rows[f].name);
  for (int k = 1; k < FU_SK_COUNT; k++) fprintf(err, ", scheduler:%s", kind_names[k]);
}

bool fu_features_parse(fu_feature_set *fs, const char *list, bool off, const char *origin, const char *tool, FILE *err) {
  for (const char *p = list ? list : ""; *p;) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    bool found = n == 0;
    for (int f = 0; f < FU_FEATURE_COUNT && !found; f++)
      if (item_is(p, n, feature_rows[f].name)) {
        fs->off = off ? fs->off | (1u << f) : fs->off & ~(1u << f);
        fs->on = off ? fs->on & ~(1u << f) : fs->on | (1u << f);
        found = true;
      }
    static const char prefix[] = "scheduler:";
    size_t pl = sizeof prefix - 1;
    if (!found && n > pl && memcmp(p, prefix, pl) == 0)
      for (int k = 1; k < FU_SK_COUNT && !found; k++)
        if (item_is(p + pl, n - pl, kind_names[k])) {
          fs->kinds_off = off ? fs->kinds_off | (1u << k) : fs->kinds_off & ~(1u << k);
          found = true;
        }
    if (!found) {
      fprintf(err, "%s: error: unknown switch '%.*s' in %s; valid: ", tool, (int)n, p, origin);
      list_feature_names(err);
      fputc('\n', err);
      return false;
    }
    if (!end) break;
    p = end + 1;
  }
  return true;
}

bool fu_features_from_env(fu_feature_set *fs, const char *tool, FILE *err) {
  const char *dis = getenv("FUSER_DISABLE"), *en = getenv("FUSER_ENABLE");
  return (!dis || fu_features_parse(fs, dis, true, "FUSER_DISABLE", tool, err)) &&
         (!en || fu_features_parse(fs, en, false, "FUSER_ENABLE", tool, err));
}

void fu_target_options_set_features(fu_target_options *to, const fu_feature_set *fs) {
  to->no_fast_paths = !fu_feature_set_on(fs, FU_FEATURE_FAST_PATHS);
  to->tid_range = fu_feature_set_on(fs, FU_FEATURE_TID_RANGE);
}
