/* fuser: internals of the segment pass, shared by the files of passes/segment/ and the
 * unit tests (test/test_segment.c).  Not a public API.
 *
 * Files:
 *   segment.c     the pass entry, options, writing segments into the IR
 *   vec.c         the growable id vector and its sort (used by all)
 *   analysis.c    per-op and per-value facts (iteration spaces, bytes,
 *                 layouts of inputs and host values)
 *   schedulers.c  group summaries and the table of scheduler checks
 *   graph.c       the group graph: union-find, topological order,
 *                 cycle check, priority queue, rejection cache
 *   merge.c       the algorithm (steps 1-4)
 *   debug.c       the --debug=segment explanation
 *   dot.c         Graphviz output
 *   extract.c     one segment as a standalone fusion
 *   recompute.c   cheap prologues copied into the groups that read them */
#ifndef FUSER_SEGMENT_INTERNAL_H
#define FUSER_SEGMENT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "fuser/example_sizes.h"
#include "fuser/ir.h"
#include "fuser/segment.h"
#include "fuser/strbuf.h"

#define FU_SEG_NONE UINT32_MAX

/* Symbols without an example binding count as this many elements when
 * estimating bytes (the estimate's own default for fu_example_extent;
 * made-up data uses FU_DEFAULT_EXTENT). */
#define FU_SEG_DEFAULT_EXTENT 1024
/* A persistent kernel keeps each reduced row on chip: at most this many
 * elements per reduction (64K f32 = 256 KiB over a cluster of SMs). */
#define FU_SEG_PERSISTENT_MAX_ELEMS 65536
/* The cycle check gives up (and the merge is not made) after visiting this
 * many groups: a hard bound on the work per merge, reached only on huge
 * graphs with long-range edges.  Horizontal merges are optional, so they
 * get the smaller budget. */
#define FU_SEG_PRODUCER_BUDGET 16384
#define FU_SEG_HORIZONTAL_BUDGET 4096

/* ---- growable vector of uint32 ----------------------------------------- */

typedef struct fu_seg_vec {
  uint32_t *v;
  uint32_t n, cap;
  uint32_t clean_n; /* length after the last compaction (adjacency lists) */
} fu_seg_vec;

/* vec.c */
bool fu_seg_vec_push(fu_seg_vec *v, const fu_allocator *a, uint32_t x);
void fu_seg_vec_free(fu_seg_vec *v, const fu_allocator *a);
/* Sorts the ids in v by key[id] (by the id itself when key is NULL), ties
 * by id. */
bool fu_seg_vec_sort(fu_seg_vec *v, const fu_allocator *a, const uint32_t *key);
/* qsort order of uint64_t. */
int fu_seg_cmp_u64(const void *a, const void *b);

/* ---- scheduler kinds ---------------------------------------------------- */

/* The kinds are fu_sched_kind (fuser/kinds.def); the table below holds
 * one row per kind, FU_SK_<ID> at row FU_SK_<ID> - 1. */
enum { FU_SEG_KIND_COUNT = FU_SK_COUNT - 1 };

/* ---- group summaries ------------------------------------------------------
 * Everything a scheduler check needs about a group, kept per group and
 * combined in O(1) when two groups merge, so that checking a candidate merge
 * does not rescan the groups.  Op references are node indices (op order). */

#define FU_SEG_MAX_SPACES 8

typedef struct fu_seg_summary {
  uint32_t n_ops;
  uint32_t n_views;        /* FU_OF_VIEW ops */
  int32_t first_op;        /* lowest node index */
  int32_t first_red;       /* lowest reduction, -1 */
  int32_t first_resize;    /* lowest slice/pad/cat, -1 */
  int32_t first_transp;    /* lowest permute or reader of a permuted layout, -1 */
  int32_t first_mm;        /* lowest matmul or linear, -1 */
  uint32_t n_mm;           /* matmuls and linears */
  int32_t first_plain;     /* lowest op that is neither a product nor in a product's epilogue, -1 */
  int32_t epi_owner;       /* the product whose epilogue ops the group holds: -1 none, -2 several */
  int32_t first_index;     /* lowest indexing op (index_select, gather, ...), -1 */
  int32_t first_shift_pad; /* lowest FU_SEG_NF_SHIFT_PAD op, -1 */
  int32_t first_clamp;     /* lowest FU_SEG_NF_CLAMP op, -1 */
  int32_t first_out_before_clamp; /* lowest op with an output that feeds a clamp op's operand, -1 */
  int32_t first_scan;      /* lowest scan (cumsum, ...), -1 */
  int32_t red_mismatch;    /* a reduction whose signature differs from first_red's, -1 */
  int32_t red_in, red_out; /* first_red's operand and result iteration spaces */
  uint32_t red_axes;       /* first_red's reduced axes (see fu_seg_node) */
  uint32_t n_comp;         /* weakly connected components inside the group */
  uint32_t n_comp_nored;   /* ... of which contain no reduction */
  uint32_t n_comp_off;     /* ... of those, with an output outside red_in (counted only when the group
                              has a reduction and n_comp_nored > 0; else 0) */
  uint32_t n_down_in;      /* ops after a reduction of the group in its input space */
  uint32_t n_down_bad;     /* ops after a reduction in neither its input nor output space */
  int32_t first_down_in, first_down_bad;
  uint32_t n_down_skew;    /* ops that broadcast a reduction's result into a shape other than its operand's */
  int32_t first_down_skew;
  /* Iteration spaces of the group's outputs (tensor values used outside). */
  uint32_t n_spaces;
  bool spaces_overflow;
  int32_t space[FU_SEG_MAX_SPACES];
  uint32_t space_n[FU_SEG_MAX_SPACES];
} fu_seg_summary;

static inline int32_t fu_seg_min_idx(int32_t a, int32_t b) {
  if (a < 0) return b;
  if (b < 0) return a;
  return a < b ? a : b;
}

void fu_seg_summary_add_space(fu_seg_summary *s, int32_t space, int32_t delta);
/* The counts, firsts and signature of a ∪ b before the merge-specific
 * adjustments (crossing values, component unions, new downstream ops). */
void fu_seg_summary_union(fu_seg_summary *out, const fu_seg_summary *a, const fu_seg_summary *b);

/* ---- scheduler verdicts --------------------------------------------------- */

typedef enum fu_seg_why {
  FU_SEG_ACCEPT = 0,
  FU_SEG_WHY_HAS_REDUCTION,
  FU_SEG_WHY_HAS_RESIZE,
  FU_SEG_WHY_HAS_TRANSPOSE,
  FU_SEG_WHY_NO_TRANSPOSE,
  FU_SEG_WHY_NO_REDUCTION,
  FU_SEG_WHY_RED_MISMATCH,
  FU_SEG_WHY_UNATTACHED,
  FU_SEG_WHY_SIDE_OFF_SPACE,
  FU_SEG_WHY_SIDE_OUTER,
  FU_SEG_WHY_DOWN_BAD,
  FU_SEG_WHY_DOWN_SKEW,
  FU_SEG_WHY_SHIFT_PAD_OUTPUTS,
  FU_SEG_WHY_OUT_BEFORE_CLAMP,
  FU_SEG_WHY_DOWN_IN,
  FU_SEG_WHY_NO_DOWN_IN,
  FU_SEG_WHY_TOO_LARGE,
  FU_SEG_WHY_OUTER_NORM,
  FU_SEG_WHY_OUT_SPACES,
  FU_SEG_WHY_OUT_NOT_RED,
  FU_SEG_WHY_NO_RESIZE,
  FU_SEG_WHY_EMPTY,
  FU_SEG_WHY_HAS_MATMUL,
  FU_SEG_WHY_NO_MATMUL,
  FU_SEG_WHY_TWO_MATMULS,
  FU_SEG_WHY_NOT_EPILOGUE,
  FU_SEG_WHY_OTHER_EPILOGUE,
  FU_SEG_WHY_HAS_INDEX,
  FU_SEG_WHY_HAS_SCAN,  /* a scan runs in a scan segment of its own */
  FU_SEG_WHY_NO_SCAN,
  FU_SEG_WHY_SCAN_NOT_ALONE,
  FU_SEG_WHY_DISABLED, /* the kind is turned off (--disable=scheduler:<kind>) */
} fu_seg_why;

typedef struct fu_seg_verdict {
  fu_seg_why why;
  int32_t op, op2; /* node indices the reason names, -1 */
} fu_seg_verdict;

struct fu_seg_env;

typedef fu_seg_verdict (*fu_seg_accept_fn)(const struct fu_seg_env *env, const fu_seg_summary *s);

typedef struct fu_seg_scheduler {
  fu_sched_kind kind;
  fu_seg_accept_fn check; /* the ACCEPT column of kinds.def */
} fu_seg_scheduler;

/* The ACCEPT column's checks (schedulers.c). */
fu_seg_verdict fu_seg_accept_pointwise(const struct fu_seg_env *env, const fu_seg_summary *s);
fu_seg_verdict fu_seg_accept_transpose(const struct fu_seg_env *env, const fu_seg_summary *s);
fu_seg_verdict fu_seg_accept_reduction(const struct fu_seg_env *env, const fu_seg_summary *s);
fu_seg_verdict fu_seg_accept_persistent(const struct fu_seg_env *env, const fu_seg_summary *s);
fu_seg_verdict fu_seg_accept_resize(const struct fu_seg_env *env, const fu_seg_summary *s);
fu_seg_verdict fu_seg_accept_matmul(const struct fu_seg_env *env, const fu_seg_summary *s);
fu_seg_verdict fu_seg_accept_scan(const struct fu_seg_env *env, const fu_seg_summary *s);

/* The table, in preference order (first acceptance wins). */
extern const fu_seg_scheduler fu_seg_schedulers[FU_SEG_KIND_COUNT];
/* First kernel scheduler accepting s; FU_SK_NONE if none.  When
 * `verdicts` is not NULL it receives every kernel scheduler's verdict. */
fu_sched_kind fu_seg_choose(const struct fu_seg_env *env, const fu_seg_summary *s,
                          fu_seg_verdict verdicts[FU_SEG_KIND_COUNT]);

/* ---- the group graph -------------------------------------------------------
 * Nodes are a fusion's top-level ops; a group is a union-find root.  `ord`
 * is a topological order of the roots, kept valid across merges with the
 * Pearce-Kelly reordering, so a cycle check only searches the groups
 * between the two being merged. */

typedef struct fu_seg_graph {
  fu_allocator alloc;
  uint32_t n;
  uint32_t *parent;
  uint32_t *ord;
  uint32_t *pos;     /* ord -> root at that position, FU_SEG_NONE */
  uint32_t *version; /* bumped on every merge into a root */
  fu_seg_vec *succ, *pred;
  uint32_t *visit; /* DFS stamps */
  uint32_t visit_stamp;
  uint32_t *dedup; /* compaction stamps */
  uint32_t dedup_stamp;
  fu_seg_vec stack, fwd, bwd, pool;
  uint32_t fwd_from, fwd_to; /* the pair fwd was computed for (complete) */
  uint32_t bwd_from, bwd_to; /* the pair bwd was computed for (complete) */
  bool oom;                  /* a search ran out of memory (it answered BUDGET) */
} fu_seg_graph;

typedef enum fu_seg_path {
  FU_SEG_PATH_NONE,   /* merging is safe */
  FU_SEG_PATH_CYCLE,  /* another path joins them: merging forms a cycle */
  FU_SEG_PATH_BUDGET, /* gave up (horizontal merges only) */
} fu_seg_path;

fu_status fu_seg_graph_init(fu_seg_graph *g, uint32_t n, fu_allocator alloc);
void fu_seg_graph_free(fu_seg_graph *g);
/* An edge between two nodes (before any merge); duplicates are fine. */
fu_status fu_seg_graph_add_edge(fu_seg_graph *g, uint32_t from, uint32_t to);
uint32_t fu_seg_graph_find(fu_seg_graph *g, uint32_t x);
/* Rebuild the position index after ord was set by hand (tests). */
void fu_seg_graph_reindex(fu_seg_graph *g);
/* For roots x, y with ord[x] < ord[y]: is there a path from x to y through
 * a third group?  `via` receives a group on such a path.  Searches forward
 * from x (groups reachable from x that come before y) or backward from y
 * (groups reaching y that come after x), whichever side has the shorter
 * adjacency list, visiting at most `budget` groups. */
fu_seg_path fu_seg_graph_check(fu_seg_graph *g, uint32_t x, uint32_t y, uint32_t budget, uint32_t *via);
/* Merge roots x and y (ord[x] < ord[y]; fu_seg_graph_check said NONE just
 * before) into `root`, which is x or y; fixes the topological order. */
fu_status fu_seg_graph_merge(fu_seg_graph *g, uint32_t x, uint32_t y, uint32_t root);
/* Resolved, deduplicated successors of root x (not x itself), sorted by
 * ord, appended to out. */
fu_status fu_seg_graph_succs(fu_seg_graph *g, uint32_t x, fu_seg_vec *out);
/* True when the order is topological for every edge between distinct
 * groups (tests). */
bool fu_seg_graph_order_valid(fu_seg_graph *g);

/* Max-priority queue of candidate merges: most bytes first, then lowest
 * producer op, then lowest consumer op. */
typedef struct fu_seg_cand {
  uint64_t bytes;
  uint32_t p, c;
} fu_seg_cand;

typedef struct fu_seg_heap {
  fu_seg_cand *v;
  uint32_t n, cap;
  fu_allocator alloc;
} fu_seg_heap;

void fu_seg_heap_init(fu_seg_heap *h, fu_allocator alloc);
void fu_seg_heap_free(fu_seg_heap *h);
bool fu_seg_heap_push(fu_seg_heap *h, fu_seg_cand c);
bool fu_seg_heap_pop(fu_seg_heap *h, fu_seg_cand *out);
bool fu_seg_cand_before(fu_seg_cand a, fu_seg_cand b);

/* Remembers rejected (x, y) merges with the versions of both groups, so an
 * unchanged pair is not checked twice. */
typedef struct fu_seg_reject_cache {
  uint64_t *keys; /* 0 = empty; key = ((x + 1) << 32) | (y + 1) */
  uint64_t *vers;
  uint32_t cap, count;
  fu_allocator alloc;
} fu_seg_reject_cache;

void fu_seg_reject_init(fu_seg_reject_cache *c, fu_allocator alloc);
void fu_seg_reject_free(fu_seg_reject_cache *c);
bool fu_seg_reject_put(fu_seg_reject_cache *c, uint32_t x, uint32_t y, uint32_t vx, uint32_t vy);
bool fu_seg_reject_has(const fu_seg_reject_cache *c, uint32_t x, uint32_t y, uint32_t vx, uint32_t vy);

/* ---- iteration spaces ------------------------------------------------------
 * The number of elements of a tensor as a constant times a multiset of
 * symbols; equal keys are equal for every binding.  Interned to small ints. */

typedef struct fu_seg_space {
  uint64_t cnst;
  bool overflow;
  uint8_t n_syms;
  const char *syms[FU_MAX_RANK]; /* sorted by name */
  uint64_t est;                  /* elements with symbols bound */
} fu_seg_space;

/* ---- per-fusion state ------------------------------------------------------ */

enum {
  FU_SEG_NF_REDUCTION = 1u << 0,
  FU_SEG_NF_RESIZE = 1u << 1,
  FU_SEG_NF_TRANSP = 1u << 2, /* a permute, or reads a permuted layout */
  FU_SEG_NF_VIEW = 1u << 3,
  FU_SEG_NF_COMPUTE = 1u << 4, /* can join a segment */
  FU_SEG_NF_MATMUL = 1u << 5,  /* a matmul or linear */
  FU_SEG_NF_INDEX = 1u << 6,   /* an indexing op: pointwise segments only */
  FU_SEG_NF_SCAN = 1u << 7,    /* cumsum and friends: a scan segment of its own */
  FU_SEG_NF_SHIFT_PAD = 1u << 8, /* a pad that moves coordinates but keeps the element count */
  FU_SEG_NF_CLAMP = 1u << 9,     /* a cat, or a pad that widens a dim: its operands are read at clamped coordinates */
};

enum {
  FU_SEG_VF_PERM = 1u << 0,   /* memory order is not the logical order */
  FU_SEG_VF_CONTIG = 1u << 1, /* dense row-major */
};

typedef struct fu_seg_node {
  fu_op *op;
  uint16_t flags;
  int32_t space;   /* first tensor result's iteration space, -1 */
  int32_t red_in;  /* reductions: operand space */
  int32_t red_out; /* reductions: result space */
  uint32_t red_axes; /* reductions: operand rank << 16 | bit mask of reduced axes */
  bool red_inner;    /* reduces the operand's innermost dim */
  bool red_last;     /* reduces the operand's last logical dim */
  uint64_t red_elems;
  int32_t epi_of;    /* the product whose cuBLASLt epilogue the op is in (matmul.c), -1 */
} fu_seg_node;

typedef struct fu_seg_env {
  fu_fusion *f;
  fu_allocator alloc;
  fu_diag_engine *diag;
  FILE *dbg;
  const fu_feature_set *features; /* switched-off kinds and merges (NULL: none) */
  fu_strbuf sb; /* debug line */
  fu_segment_stats stats;

  uint32_t n_nodes, n_compute;
  fu_seg_node *nodes;
  uint32_t n_op_ids;
  uint32_t *node_of_op; /* op id -> node of its top-level op */

  uint32_t n_values;
  uint32_t *v_def;    /* value id -> defining node, FU_SEG_NONE for literals */
  int32_t *v_space;   /* -1 for scalars */
  uint64_t *v_bytes;
  uint32_t *v_ext;    /* uses by nodes outside the defining group */
  uint8_t *v_flags;
  uint32_t *use_start; /* CSR: users (nodes) of each value, one per use */
  uint32_t *use_node;
  size_t n_uses;

  fu_seg_space *spaces;
  uint32_t n_spaces, cap_spaces;
  int32_t *space_tab; /* open addressing, -1 empty */
  uint32_t space_tab_cap;
  fu_example_sizes sizes; /* symbol sizes from the inputs' example shapes */

  /* groups */
  fu_seg_graph g;
  uint32_t *mem_head, *mem_next, *mem_tail, *mem_count; /* member lists of roots */
  int8_t *kind;
  bool *host_group;
  fu_seg_summary *sum;
  /* components (union by size with an undo log, no path compression) */
  uint32_t *comp_parent, *comp_size;
  uint8_t *comp_red;
  fu_seg_vec comp_log; /* child roots linked during the current trial */
  /* ops after a reduction of their group */
  uint8_t *down;
  uint32_t *mark; /* per node trial stamps */
  uint32_t mark_stamp;
  uint32_t *v_cnt; /* per value scratch counts (zero between trials) */
  fu_seg_vec cross_v, cross_u, newly_down, touched_v, scratch;
  fu_seg_reject_cache rejects;
  /* debug formatting scratch */
  uint32_t *fmt_mark;
  uint32_t fmt_stamp;
  uint32_t *fmt_uf;
} fu_seg_env;

/* analysis.c */
fu_status fu_seg_env_init(fu_seg_env *env, fu_fusion *f, fu_diag_engine *diag, FILE *dbg);
void fu_seg_env_free(fu_seg_env *env);
uint32_t fu_seg_node_of(const fu_seg_env *env, const fu_op *op);
/* The iteration space id of a tensor type (interned), -1 for scalars or
 * on allocation failure. */
int32_t fu_seg_space_of(fu_seg_env *env, const fu_type *t);
uint64_t fu_seg_extent_est(const fu_seg_env *env, fu_extent e);
bool fu_seg_perm_is_trivial(const fu_op *permute);
/* Layout facts (FU_SEG_VF_*) of a host view's result from its operand's. */
uint8_t fu_seg_view_result_flags(const fu_op *op, uint8_t operand_flags);

/* schedulers.c */
/* Summary of one node alone (its own group). */
void fu_seg_summary_single(fu_seg_env *env, uint32_t n, fu_seg_summary *out);
/* Summary of a set of compute nodes (sorted by index), computed by scanning
 * the ops: step 1 uses it for the whole fusion, the tests to check the
 * incremental summaries. */
fu_status fu_seg_summary_scan(fu_seg_env *env, const uint32_t *nodes, uint32_t n_nodes, fu_seg_summary *out);
/* The weakly connected components of the group nodes[0..k) (each marked
 * `stamp` in fmt_mark), in fmt_uf: an op joins the ops of the group whose
 * values it reads.  fu_seg_component gives a node's component root. */
void fu_seg_group_components(fu_seg_env *env, const uint32_t *nodes, uint32_t k, uint32_t stamp);
uint32_t fu_seg_component(fu_seg_env *env, uint32_t n);
fu_status fu_seg_count_comp_off(fu_seg_env *env, const uint32_t *nodes, uint32_t k, int32_t red_in, uint32_t *n_off);
bool fu_seg_summary_equal(const fu_seg_summary *a, const fu_seg_summary *b);
/* Counts node n, which follows a reduction of its group, as an op in the
 * reduction's input space (needs a persistent kernel), or in neither the
 * input nor the output space, into s. */
/* Which nodes follow a reduction of the group being classified: bit 1 of
 * flags[node], or (a merge trial's newly downstream ops) mark[node] ==
 * stamp when mark is not NULL. */
typedef struct fu_seg_down_marks {
  const uint8_t *flags;
  const uint32_t *mark;
  uint32_t stamp;
} fu_seg_down_marks;

void fu_seg_classify_down(const fu_seg_env *env, uint32_t n, int32_t red_node, const fu_seg_down_marks *dm,
                          fu_seg_summary *s);

/* first_out_before_clamp of the group `nodes` (k of them, any order): a walk
 * up from the operands of its cats and widening pads (merge.c calls it for
 * a trial whose union holds one; summary_scan for its group). */
fu_status fu_seg_out_before_clamp(fu_seg_env *env, const uint32_t *nodes, uint32_t k, int32_t *first);

/* matmul.c: marks products and their epilogues' ops (epi_of) */
fu_status fu_seg_mark_matmuls(fu_seg_env *env);
/* matmul.c: step 2's first part, each product merged with its epilogue */
typedef fu_status (*fu_seg_merge_fn)(fu_seg_env *env, uint32_t a, uint32_t b);
fu_status fu_seg_merge_epilogues(fu_seg_env *env, fu_seg_merge_fn merge);

/* merge.c */
fu_status fu_seg_partition(fu_seg_env *env);
/* recompute.c: after a partition, copies each short, cheap chain that one
 * group computes and another reads (where its leaves are narrower than the
 * value) next to the reader, and deletes the originals left unused;
 * *n_cloned_ops says how many ops were copied (0: the fusion is unchanged).
 * The env describes the fusion before the copies: partition again. */
fu_status fu_seg_recompute(fu_seg_env *env, uint32_t *n_cloned_ops);
/* analysis.c: members of root r, sorted by node index, into out (cleared
 * first). */
fu_status fu_seg_members_sorted(fu_seg_env *env, uint32_t r, fu_seg_vec *out);
/* analysis.c: a fresh stamp for fmt_mark (the marks cleared when it wraps). */
uint32_t fu_seg_fmt_stamp(fu_seg_env *env);

/* debug.c */
void fu_seg_put_op(fu_strbuf *sb, const fu_op *op);   /* "%T19 = sum" */
void fu_seg_put_bytes(fu_strbuf *sb, uint64_t bytes); /* "128 MiB" */
/* "{%T8,%T10}" for the union of roots a and b (b may be FU_SEG_NONE). */
void fu_seg_put_group(fu_seg_env *env, fu_strbuf *sb, uint32_t a, uint32_t b);
/* The reason text of a rejection.  The view is the union of roots a and b,
 * or every compute node when whole is true. */
void fu_seg_put_reason(fu_seg_env *env, fu_strbuf *sb, const fu_seg_verdict *v, uint32_t a, uint32_t b, bool whole);
/* "reduction (inner)" style description of a group's kind. */
void fu_seg_put_kind(fu_seg_env *env, fu_strbuf *sb, fu_sched_kind k, const fu_seg_summary *s);
void fu_seg_debug_line(fu_seg_env *env); /* writes env->sb as one line */

#endif
