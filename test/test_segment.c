/* Unit tests for the segment pass: the group graph (cycle check, the
 * topological order it maintains, the candidate queue, the rejection
 * cache), the incremental group summaries against a direct scan, the
 * determinism and validity of the result on random fusions, and the
 * extract and dot entry points. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../passes/segment/internal.h"
#include "fuser/parse.h"
#include "fuser/print.h"
#include "fuser/segment.h"
#include "fuser/strbuf.h"
#include "fuser/verify.h"
#include "harness.h"

/* ---- helpers -------------------------------------------------------------- */

typedef struct parsed {
  fu_source src;
  fu_diag_engine diag;
  fu_module *m;
} parsed;

static void quiet(void *user, const fu_diagnostic *d) {
  (void)user;
  fprintf(stderr, "diagnostic: %s\n", d->message);
}

static bool parse(parsed *p, const char *text) {
  memset(p, 0, sizeof *p);
  p->src.name = "test.fir";
  p->src.text = text;
  p->src.len = strlen(text);
  p->src.first_line = 1;
  fu_diag_init(&p->diag, fu_default_allocator());
  p->diag.handler = quiet;
  fu_status st = fu_parse_module(&p->src, fu_default_allocator(), &p->diag, &p->m);
  CHECK_EQ_INT(st, FU_OK);
  return st == FU_OK;
}

static char *print_module(const fu_module *m) {
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_print_module(&sb, m, NULL);
  char *s = strdup(sb.data ? sb.data : "");
  fu_strbuf_free(&sb);
  return s;
}

static uint32_t rng_next(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}

/* ---- the graph ---------------------------------------------------------------- */

/* a -> b, a -> c -> b: merging a with b would close a cycle through c. */
static void test_cycle_check_basic(void) {
  fu_seg_graph g;
  CHECK_EQ_INT(fu_seg_graph_init(&g, 4, fu_default_allocator()), FU_OK);
  fu_seg_graph_add_edge(&g, 0, 1);
  fu_seg_graph_add_edge(&g, 0, 2);
  fu_seg_graph_add_edge(&g, 2, 1);
  fu_seg_graph_add_edge(&g, 1, 3);
  /* 1 and 2 are swapped in op order on purpose: ord must be topological */
  g.ord[0] = 0;
  g.ord[2] = 1;
  g.ord[1] = 2;
  g.ord[3] = 3;
  fu_seg_graph_reindex(&g);
  CHECK(fu_seg_graph_order_valid(&g));
  uint32_t via = 99;
  CHECK_EQ_INT(fu_seg_graph_check(&g, 0, 1, UINT32_MAX, &via), FU_SEG_PATH_CYCLE);
  CHECK_EQ_INT(via, 2);
  CHECK_EQ_INT(fu_seg_graph_check(&g, 0, 2, UINT32_MAX, NULL), FU_SEG_PATH_NONE);
  CHECK_EQ_INT(fu_seg_graph_merge(&g, 0, 2, 0), FU_OK);
  CHECK_EQ_INT(fu_seg_graph_find(&g, 2), 0);
  CHECK(fu_seg_graph_order_valid(&g));
  /* now the only path from {0,2} to 1 is direct */
  CHECK_EQ_INT(fu_seg_graph_check(&g, 0, 1, UINT32_MAX, NULL), FU_SEG_PATH_NONE);
  CHECK_EQ_INT(fu_seg_graph_merge(&g, 0, 1, 1), FU_OK);
  CHECK_EQ_INT(fu_seg_graph_find(&g, 0), 1);
  CHECK_EQ_INT(fu_seg_graph_find(&g, 2), 1);
  CHECK(fu_seg_graph_order_valid(&g));
  CHECK(g.ord[1] < g.ord[3]);
  fu_seg_vec succ = {0};
  CHECK_EQ_INT(fu_seg_graph_succs(&g, 1, &succ), FU_OK);
  CHECK_EQ_INT(succ.n, 1);
  CHECK_EQ_INT(succ.v[0], 3);
  fu_seg_vec_free(&succ, &g.alloc);
  /* a budget of zero groups gives up on any search that visits one */
  fu_seg_graph_free(&g);
  CHECK_EQ_INT(fu_seg_graph_init(&g, 3, fu_default_allocator()), FU_OK);
  fu_seg_graph_add_edge(&g, 0, 1);
  fu_seg_graph_add_edge(&g, 1, 2);
  CHECK_EQ_INT(fu_seg_graph_check(&g, 0, 2, 0, NULL), FU_SEG_PATH_BUDGET);
  CHECK_EQ_INT(fu_seg_graph_check(&g, 0, 2, 1, NULL), FU_SEG_PATH_CYCLE);
  fu_seg_graph_add_edge(&g, 0, 2);
  CHECK_EQ_INT(fu_seg_graph_check(&g, 0, 1, 0, NULL), FU_SEG_PATH_NONE);
  fu_seg_graph_free(&g);
}

/* Brute force: is there a path from group x to group y of length >= 2
 * (through another group), on the quotient graph? */
static bool brute_cycle(fu_seg_graph *g, const bool *edge, uint32_t n, uint32_t x, uint32_t y) {
  uint32_t *root = malloc(n * sizeof *root);
  bool *seen = calloc(n, 1);
  uint32_t *stack = malloc(n * sizeof *stack);
  for (uint32_t i = 0; i < n; i++) root[i] = fu_seg_graph_find(g, i);
  uint32_t sp = 0;
  /* start from x's successors other than y */
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t j = 0; j < n; j++)
      if (edge[i * n + j] && root[i] == x && root[j] != x && root[j] != y && !seen[root[j]]) {
        seen[root[j]] = true;
        stack[sp++] = root[j];
      }
  bool found = false;
  while (sp && !found) {
    uint32_t r = stack[--sp];
    for (uint32_t i = 0; i < n && !found; i++)
      for (uint32_t j = 0; j < n && !found; j++) {
        if (!edge[i * n + j] || root[i] != r || root[j] == r) continue;
        if (root[j] == y) found = true;
        else if (!seen[root[j]]) {
          seen[root[j]] = true;
          stack[sp++] = root[j];
        }
      }
  }
  free(root);
  free(seen);
  free(stack);
  return found;
}

/* Random DAGs, random merges: the cycle check agrees with brute force and
 * the order stays topological after every merge. */
static void test_cycle_check_random(void) {
  uint64_t seed = 12345;
  for (int trial = 0; trial < 60; trial++) {
    uint32_t n = 8 + rng_next(&seed) % 40;
    bool *edge = calloc((size_t)n * n, 1);
    fu_seg_graph g;
    CHECK_EQ_INT(fu_seg_graph_init(&g, n, fu_default_allocator()), FU_OK);
    for (uint32_t j = 1; j < n; j++)
      for (uint32_t k = 0; k < 3; k++) {
        uint32_t i = rng_next(&seed) % j;
        if (rng_next(&seed) % 3 == 0) continue;
        edge[i * n + j] = true;
        fu_seg_graph_add_edge(&g, i, j);
      }
    int merges = 0, mismatches = 0, invalid = 0;
    for (int step = 0; step < 200; step++) {
      uint32_t a = fu_seg_graph_find(&g, rng_next(&seed) % n), b = fu_seg_graph_find(&g, rng_next(&seed) % n);
      if (a == b) continue;
      if (g.ord[a] > g.ord[b]) {
        uint32_t t = a;
        a = b;
        b = t;
      }
      fu_seg_path p = fu_seg_graph_check(&g, a, b, UINT32_MAX, NULL);
      if ((p == FU_SEG_PATH_CYCLE) != brute_cycle(&g, edge, n, a, b)) mismatches++;
      if (p != FU_SEG_PATH_NONE) continue;
      if (fu_seg_graph_merge(&g, a, b, (rng_next(&seed) & 1) ? a : b) != FU_OK) invalid++;
      merges++;
      if (!fu_seg_graph_order_valid(&g)) invalid++;
    }
    CHECK_EQ_INT(mismatches, 0);
    CHECK_EQ_INT(invalid, 0);
    CHECK(merges > 0);
    fu_seg_graph_free(&g);
    free(edge);
  }
}

/* A group with many successors absorbing the ops after it one at a time:
 * the searches walk the few positions between the two instead of the long
 * adjacency list, and still find the cycles. */
static void test_cycle_check_hub(void) {
  enum { N = 400 };
  fu_seg_graph g;
  CHECK_EQ_INT(fu_seg_graph_init(&g, N, fu_default_allocator()), FU_OK);
  for (uint32_t j = 1; j < N; j++) {
    fu_seg_graph_add_edge(&g, 0, j); /* the hub feeds everything */
    if (j > 1) fu_seg_graph_add_edge(&g, j - 1, j);
  }
  /* every third op also depends on an op two back */
  for (uint32_t j = 3; j < N; j += 3) fu_seg_graph_add_edge(&g, j - 2, j);
  uint32_t hub = 0;
  int cycles = 0, bad = 0;
  for (uint32_t j = 1; j < N; j++) {
    uint32_t x = fu_seg_graph_find(&g, hub), y = fu_seg_graph_find(&g, j);
    if (x == y) continue;
    if (g.ord[x] > g.ord[y]) {
      uint32_t t = x;
      x = y;
      y = t;
    }
    fu_seg_path p = fu_seg_graph_check(&g, x, y, UINT32_MAX, NULL);
    if (p == FU_SEG_PATH_CYCLE) {
      cycles++;
      continue;
    }
    if (fu_seg_graph_merge(&g, x, y, x) != FU_OK) bad++;
    if (!fu_seg_graph_order_valid(&g)) bad++;
  }
  /* merging in order, every op joins the hub: the chain edge is direct */
  CHECK_EQ_INT(cycles, 0);
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(fu_seg_graph_find(&g, N - 1), fu_seg_graph_find(&g, 0));
  fu_seg_graph_free(&g);

  /* skipping ahead: the hub and op 5 are joined through ops 1-4 */
  CHECK_EQ_INT(fu_seg_graph_init(&g, N, fu_default_allocator()), FU_OK);
  for (uint32_t j = 1; j < N; j++) {
    fu_seg_graph_add_edge(&g, 0, j);
    if (j > 1) fu_seg_graph_add_edge(&g, j - 1, j);
  }
  uint32_t via = 0;
  CHECK_EQ_INT(fu_seg_graph_check(&g, 0, 5, UINT32_MAX, &via), FU_SEG_PATH_CYCLE);
  CHECK(via >= 1 && via <= 4);
  CHECK_EQ_INT(fu_seg_graph_check(&g, 0, 1, UINT32_MAX, NULL), FU_SEG_PATH_NONE);
  CHECK_EQ_INT(fu_seg_graph_check(&g, 3, 4, UINT32_MAX, NULL), FU_SEG_PATH_NONE);
  CHECK_EQ_INT(fu_seg_graph_check(&g, 3, 5, UINT32_MAX, &via), FU_SEG_PATH_CYCLE);
  CHECK_EQ_INT(via, 4);
  fu_seg_graph_free(&g);
}

static void test_priority_order(void) {
  fu_seg_heap h;
  fu_seg_heap_init(&h, fu_default_allocator());
  fu_seg_cand in[] = {{100, 5, 6}, {300, 9, 10}, {100, 2, 9}, {0, 1, 2}, {300, 3, 4}, {100, 2, 3}, {7, 0, 1}};
  for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) CHECK(fu_seg_heap_push(&h, in[i]));
  fu_seg_cand want[] = {{300, 3, 4}, {300, 9, 10}, {100, 2, 3}, {100, 2, 9}, {100, 5, 6}, {7, 0, 1}, {0, 1, 2}};
  fu_seg_cand c;
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    CHECK(fu_seg_heap_pop(&h, &c));
    CHECK(c.bytes == want[i].bytes && c.p == want[i].p && c.c == want[i].c);
  }
  CHECK(!fu_seg_heap_pop(&h, &c));
  /* many random entries come out sorted */
  uint64_t seed = 7;
  for (int i = 0; i < 5000; i++) {
    fu_seg_cand r = {rng_next(&seed) % 50, rng_next(&seed) % 100, rng_next(&seed) % 100};
    CHECK(fu_seg_heap_push(&h, r));
  }
  fu_seg_cand prev;
  bool first = true, sorted = true;
  while (fu_seg_heap_pop(&h, &c)) {
    if (!first && fu_seg_cand_before(c, prev)) sorted = false;
    prev = c;
    first = false;
  }
  CHECK(sorted);
  fu_seg_heap_free(&h);
}

static void test_reject_cache(void) {
  fu_seg_reject_cache c;
  fu_seg_reject_init(&c, fu_default_allocator());
  CHECK(!fu_seg_reject_has(&c, 1, 2, 0, 0));
  for (uint32_t i = 0; i < 1000; i++) CHECK(fu_seg_reject_put(&c, i, i + 1, i, 2 * i));
  CHECK(fu_seg_reject_has(&c, 1, 2, 1, 2));
  CHECK(!fu_seg_reject_has(&c, 1, 2, 1, 3)); /* a group changed: try again */
  CHECK(!fu_seg_reject_has(&c, 2, 1, 1, 2));
  CHECK(fu_seg_reject_put(&c, 1, 2, 5, 5));
  CHECK(fu_seg_reject_has(&c, 1, 2, 5, 5));
  CHECK(fu_seg_reject_has(&c, 999, 1000, 999, 1998));
  fu_seg_reject_free(&c);
}

/* ---- random fusions ---------------------------------------------------------- */

/* A random fusion over f32[64, 32], row reductions to [64, 1], column
 * reductions to [1, 32], broadcasting binaries, views and
 * slices: every scheduler kind and every kind of merge shows up. */
static char *random_fusion(uint64_t *seed, int n_ops) {
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  enum { FULL, ROW, COL };
  int shape[512];
  int n = 0;
  fu_strbuf_puts(&sb, "fusion @r {\n");
  fu_strbuf_puts(&sb, "  %v0 = input f32[64, 32]\n");
  fu_strbuf_puts(&sb, "  %v1 = input f32[64, 32] {stride_order=[0, 1]}\n");
  fu_strbuf_puts(&sb, "  %v2 = input f32[1, 32]\n");
  shape[n++] = FULL;
  shape[n++] = FULL;
  shape[n++] = COL;
  static const char *shape_txt[] = {"f32[64, 32]", "f32[64, 1]", "f32[1, 32]"};
  for (int i = 0; i < n_ops && n < 500; i++) {
    int a = (int)(rng_next(seed) % (uint32_t)n);
    if (n > 6 && rng_next(seed) % 2) a = n - 1 - (int)(rng_next(seed) % 6); /* mostly local chains */
    int b = (int)(rng_next(seed) % (uint32_t)n);
    while (shape[a] < 0) a--; /* intermediates of permute and pad pairs are not reused */
    while (shape[b] < 0) b--;
    uint32_t k = rng_next(seed) % 12;
    if (k < 3) {
      static const char *un[] = {"exp", "neg", "tanh"};
      fu_strbuf_printf(&sb, "  %%v%d = %s %%v%d\n", n, un[k], a);
      shape[n] = shape[a];
    } else if (k < 6) {
      static const char *bin[] = {"add", "mul", "sub"};
      /* ROW with COL would make a new full space: fine too */
      int s = shape[a] == shape[b] ? shape[a] : FULL;
      fu_strbuf_printf(&sb, "  %%v%d = %s %%v%d, %%v%d\n", n, bin[k - 3], a, b);
      shape[n] = s;
    } else if (k < 8 && shape[a] == FULL) {
      fu_strbuf_printf(&sb, "  %%v%d = %s %%v%d {axes=[1], keepdim=true} : f32[64, 1]\n", n, k == 6 ? "sum" : "max", a);
      shape[n] = ROW;
    } else if (k == 8 && shape[a] == FULL) {
      fu_strbuf_printf(&sb, "  %%v%d = sum %%v%d {axes=[0], keepdim=true} : f32[1, 32]\n", n, a);
      shape[n] = COL;
    } else if (k == 9 && shape[a] == FULL) {
      fu_strbuf_printf(&sb, "  %%v%d = permute %%v%d {dims=[1, 0]} : f32[32, 64]\n", n, a);
      fu_strbuf_printf(&sb, "  %%v%d = permute %%v%d {dims=[1, 0]} : f32[64, 32]\n", n + 1, n);
      shape[n] = -1;
      shape[n + 1] = FULL;
      n++;
    } else if (k == 10 && shape[a] == FULL) {
      fu_strbuf_printf(&sb, "  %%v%d = slice %%v%d {starts=[0, 0], ends=[64, 16], steps=[1, 1]} : f32[64, 16]\n", n, a);
      fu_strbuf_printf(&sb, "  %%v%d = pad %%v%d, 0.0 {widths=[0, 16]} : f32[64, 32]\n", n + 1, n);
      shape[n] = -1;
      shape[n + 1] = FULL;
      n++;
    } else {
      fu_strbuf_printf(&sb, "  %%v%d = abs %%v%d\n", n, a);
      shape[n] = shape[a];
    }
    (void)shape_txt;
    n++;
  }
  /* the last values and a few random ones are outputs */
  fu_strbuf_printf(&sb, "  output %%v%d", n - 1);
  for (int i = 0; i < 3; i++) {
    int o = 3 + (int)(rng_next(seed) % (uint32_t)(n - 3));
    if (o != n - 1 && shape[o] >= 0) fu_strbuf_printf(&sb, ", %%v%d", o);
  }
  fu_strbuf_puts(&sb, "\n}\n");
  char *s = strdup(sb.data);
  fu_strbuf_free(&sb);
  return s;
}

/* The incremental summaries of the final groups equal a scan of their
 * ops, and the group graph's order is topological. */
static void test_summaries_match_scan(void) {
  uint64_t seed = 99;
  int groups_checked = 0;
  for (int t = 0; t < 40; t++) {
    char *text = random_fusion(&seed, 20 + (int)(rng_next(&seed) % 60));
    parsed p;
    if (!parse(&p, text)) {
      fprintf(stderr, "%s\n", text);
      free(text);
      continue;
    }
    fu_fusion *f = p.m->first;
    fu_seg_env env;
    CHECK_EQ_INT(fu_seg_env_init(&env, f, &p.diag, NULL), FU_OK);
    CHECK_EQ_INT(fu_seg_partition(&env), FU_OK);
    CHECK(fu_seg_graph_order_valid(&env.g));
    fu_seg_vec mem = {0};
    int bad = 0;
    for (uint32_t r = 0; r < env.n_nodes; r++) {
      if (!(env.nodes[r].flags & FU_SEG_NF_COMPUTE) || fu_seg_graph_find(&env.g, r) != r) continue;
      CHECK_EQ_INT(fu_seg_members_sorted(&env, r, &mem), FU_OK);
      CHECK_EQ_INT(mem.n, env.mem_count[r]);
      fu_seg_summary s;
      CHECK_EQ_INT(fu_seg_summary_scan(&env, mem.v, mem.n, &s), FU_OK);
      if (!fu_seg_summary_equal(&s, &env.sum[r])) bad++;
      /* every group is accepted by the kind it carries */
      fu_sched_kind k = fu_seg_choose(&env, &s, NULL);
      if (k != (fu_sched_kind)env.kind[r] && !env.host_group[r]) bad++;
      groups_checked++;
    }
    CHECK_EQ_INT(bad, 0);
    if (bad) fprintf(stderr, "%s\n", text);
    fu_seg_vec_free(&mem, &env.alloc);
    fu_seg_env_free(&env);
    fu_module_free(p.m);
    free(text);
  }
  CHECK(groups_checked > 100);
}

/* Segmenting twice from scratch gives the same bytes; the result verifies;
 * segmenting the result again changes nothing. */
static void test_random_fusions_valid_and_deterministic(void) {
  uint64_t seed = 4242;
  int multi = 0;
  for (int t = 0; t < 60; t++) {
    char *text = random_fusion(&seed, 10 + (int)(rng_next(&seed) % 120));
    parsed a, b;
    if (!parse(&a, text) || !parse(&b, text)) {
      free(text);
      continue;
    }
    fu_segment_stats sa, sb;
    CHECK_EQ_INT(fu_segment_fusion(a.m->first, &a.diag, NULL, &sa), FU_OK);
    CHECK_EQ_INT(fu_segment_fusion(b.m->first, &b.diag, NULL, &sb), FU_OK);
    CHECK_EQ_INT(fu_verify_module(a.m, &a.diag), FU_OK);
    char *pa = print_module(a.m), *pb = print_module(b.m);
    CHECK_STR(pa, pb);
    CHECK_EQ_INT(sa.n_segments, sb.n_segments);
    if (sa.n_segments > 1) multi++;
    fu_segment_stats again;
    CHECK_EQ_INT(fu_segment_fusion(a.m->first, &a.diag, NULL, &again), FU_OK);
    CHECK(again.already_segmented);
    char *pa2 = print_module(a.m);
    CHECK_STR(pa2, pa);
    /* the printed result parses and verifies */
    parsed c;
    if (parse(&c, pa)) {
      CHECK_EQ_INT(fu_verify_module(c.m, &c.diag), FU_OK);
      fu_module_free(c.m);
    }
    free(pa);
    free(pb);
    free(pa2);
    fu_module_free(a.m);
    fu_module_free(b.m);
    free(text);
  }
  CHECK(multi > 10);
}

/* ---- bytes, spaces, the whole-fusion step ------------------------------------ */

static void test_spaces_and_bytes(void) {
  parsed p;
  if (!parse(&p, "fusion @f {\n"
                 "  %T0 = input f32[N, 3072] {example=randn, example_shape=[8192, 3072]}\n"
                 "  %T1 = input bf16[M, 4]\n"
                 "  %T2 = reshape %T0 : f32[3072, N]\n"
                 "  %T3 = broadcast %T2 {is_broadcast_dim=[false, true, false]} : f32[3072, 1, N]\n"
                 "  %T4 = exp %T1\n"
                 "  output %T3, %T4\n"
                 "}\n"))
    return;
  fu_seg_env env;
  CHECK_EQ_INT(fu_seg_env_init(&env, p.m->first, &p.diag, NULL), FU_OK);
  const fu_op *in0 = env.nodes[0].op, *r = env.nodes[2].op, *bc = env.nodes[3].op, *e = env.nodes[4].op;
  /* element counts up to broadcast: equal spaces */
  CHECK_EQ_INT(env.v_space[in0->results[0]->id], env.v_space[r->results[0]->id]);
  CHECK_EQ_INT(env.v_space[bc->results[0]->id], env.v_space[r->results[0]->id]);
  CHECK(env.v_space[e->results[0]->id] != env.v_space[r->results[0]->id]);
  /* N bound by the example shape; M counts as 1024 */
  CHECK(env.v_bytes[in0->results[0]->id] == 8192ull * 3072 * 4);
  CHECK(env.v_bytes[e->results[0]->id] == 1024ull * 4 * 2);
  fu_seg_env_free(&env);
  fu_module_free(p.m);
}

/* ---- dot and extract ------------------------------------------------------------- */

static const char *two_kernels =
    "fusion @f {\n"
    "  %T0 = input f32[N, 64] {stride_order=[1, 0], example=randn, seed=3, example_shape=[128, 64]}\n"
    "  %T1 = input f32[N, 64]\n"
    "  %T2 = exp %T0\n"
    "  %T3 = sum %T2 {axes=[0]}\n"
    "  %T4 = mul %T1, 2.0\n"
    "  %T5 = sum %T4 {axes=[1]}\n"
    "  %T6 = add %T5, 1.0\n"
    "  output %T3, %T6\n"
    "}\n";

static void test_extract(void) {
  parsed p;
  if (!parse(&p, two_kernels)) return;
  fu_segment_stats st;
  CHECK_EQ_INT(fu_segment_fusion(p.m->first, &p.diag, NULL, &st), FU_OK);
  CHECK_EQ_INT(st.n_segments, 2);
  fu_module *out = NULL;
  CHECK_EQ_INT(fu_segment_extract(p.m, "@g1", fu_default_allocator(), &p.diag, &out), FU_OK);
  if (out) {
    CHECK_EQ_INT(fu_verify_module(out, &p.diag), FU_OK);
    char *s = print_module(out);
    CHECK_STR(s, "fusion @f_g1 {\n"
                 "  %T1 = input f32[N, 64]\n"
                 "  %T4 = mul %T1, 2.0 : f32[N, 64]\n"
                 "  %T5 = sum %T4 {axes=[1]} : f32[N]\n"
                 "  %T6 = add %T5, 1.0 : f32[N]\n"
                 "  output %T6\n"
                 "}\n");
    free(s);
    fu_module_free(out);
  }
  /* a fusion input keeps its layout and example data */
  CHECK_EQ_INT(fu_segment_extract(p.m, "g0", fu_default_allocator(), &p.diag, &out), FU_OK);
  if (out) {
    char *s = print_module(out);
    CHECK(strstr(s, "%T0 = input f32[N, 64] {stride_order=[1, 0], example=randn, seed=3, example_shape=[128, 64]}"));
    CHECK(strstr(s, "output %T3"));
    free(s);
    fu_module_free(out);
  }
  /* unknown names are an error with a diagnostic, not a crash */
  unsigned errs = p.diag.n_errors;
  CHECK_EQ_INT(fu_segment_extract(p.m, "@g7", fu_default_allocator(), &p.diag, &out), FU_ERR_INVALID_ARG);
  CHECK(out == NULL);
  CHECK_EQ_INT(p.diag.n_errors, errs + 1);
  fu_module_free(p.m);
}

/* The extracted module owns its ops' attribute arrays: it stays valid (and
 * prints the same) after the source module is freed; under ASan a shared
 * array is a use after free here. */
static const char *attribute_ops =
    "fusion @f {\n"
    "  %T0 = input f32[8, 4]\n"
    "  %T1 = permute %T0 {dims=[1, 0]}\n"
    "  %T2 = slice %T1 {starts=[0, 2], ends=[4, 8], steps=[1, 1]}\n"
    "  %T3 = pad %T2, 0.0 {widths=[1, 1, 0, 0]}\n"
    "  %T4 = exp %T3\n"
    "  %T5 = sum %T4 {axes=[1]}\n"
    "  output %T5\n"
    "}\n";

static void test_extract_owns_attributes(void) {
  parsed p;
  if (!parse(&p, attribute_ops)) return;
  CHECK_EQ_INT(fu_segment_fusion(p.m->first, &p.diag, NULL, NULL), FU_OK);
  char *src = print_module(p.m);
  fu_module *out = NULL;
  CHECK_EQ_INT(fu_segment_extract(p.m, "@g0", fu_default_allocator(), &p.diag, &out), FU_OK);
  char *before = out ? print_module(out) : NULL;
  fu_module_free(p.m);
  if (out) {
    char *after = print_module(out);
    CHECK_STR(after, before);
    CHECK(after && strstr(after, "{dims=[1, 0]}") && strstr(after, "{starts=[0, 2], ends=[4, 8], steps=[1, 1]}") &&
          strstr(after, "{widths=[1, 1, 0, 0]}"));
    CHECK_EQ_INT(fu_verify_module(out, &p.diag), FU_OK);
    free(after);
    fu_module_free(out);
  }
  if (!out) fprintf(stderr, "%s\n", src ? src : "");
  free(before);
  free(src);
}

/* A segment input computed inside the fusion becomes a random input with
 * its symbolic shape bound from the source's example shapes. */
static void test_extract_intermediate(void) {
  parsed p;
  if (!parse(&p, "fusion @f {\n"
                 "  %T0 = input f32[N, 1048576] {example=randn, example_shape=[4, 1048576]}\n"
                 "  %T1 = sum %T0 {axes=[1], keepdim=true} : f32[N, 1]\n"
                 "  %T2 = div %T0, %T1\n"
                 "  output %T2\n"
                 "}\n"))
    return;
  CHECK_EQ_INT(fu_segment_fusion(p.m->first, &p.diag, NULL, NULL), FU_OK);
  fu_module *out = NULL;
  CHECK_EQ_INT(fu_segment_extract(p.m, "@g1", fu_default_allocator(), &p.diag, &out), FU_OK);
  if (out) {
    char *s = print_module(out);
    CHECK(strstr(s, "%T1 = input f32[N, 1] {example=randn, example_shape=[4, 1]}") != NULL);
    CHECK(strstr(s, "%T2 = div %T0, %T1") != NULL);
    CHECK_EQ_INT(fu_verify_module(out, &p.diag), FU_OK);
    free(s);
    fu_module_free(out);
  }
  fu_module_free(p.m);
}

static void test_dot(void) {
  parsed p;
  if (!parse(&p, two_kernels)) return;
  CHECK_EQ_INT(fu_segment_fusion(p.m->first, &p.diag, NULL, NULL), FU_OK);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  CHECK_EQ_INT(fu_segment_write_dot(p.m->first, f), FU_OK);
  fclose(f);
  CHECK(strstr(buf, "digraph \"f\" {") == buf);
  CHECK(strstr(buf, "n2 [label=\"@g0\\nreduction\\n2 ops\", shape=box") != NULL);
  CHECK(strstr(buf, "n3 [label=\"@g1\\nreduction\\n3 ops\", shape=box") != NULL);
  CHECK(strstr(buf, "n0 -> n2 [label=\"%T0\"];") != NULL);
  CHECK(strstr(buf, "n2 -> n4 [label=\"%T3\"];") != NULL);
  CHECK(strstr(buf, "n3 -> n4 [label=\"%T6\"];") != NULL);
  free(buf);
  fu_module_free(p.m);
}

/* The debug stream gets the explanation; without one, nothing is printed. */
static void test_debug_stream(void) {
  parsed p;
  if (!parse(&p, two_kernels)) return;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  fu_segment_stats st;
  CHECK_EQ_INT(fu_segment_fusion(p.m->first, &p.diag, f, &st), FU_OK);
  fclose(f);
  CHECK(strstr(buf, "[segment] step 1: whole fusion: rejected by reduction: %T3 reduces axes [0] of %T2 but "
                    "%T5 reduces axes [1] of %T4, a different iteration space\n") != NULL);
  CHECK(strstr(buf, "[segment] result: @g0 reduction (outer) (2 ops): {%T2,%T3}\n") != NULL);
  CHECK(strstr(buf, "[segment] result: @g1 reduction (inner) (3 ops): {%T4,%T5,%T6}\n") != NULL);
  CHECK(st.n_merges_done >= 3);
  CHECK(!st.whole_fusion);
  free(buf);
  fu_module_free(p.m);
}

FU_TEST_MAIN(FU_TEST(test_cycle_check_basic), FU_TEST(test_cycle_check_random), FU_TEST(test_cycle_check_hub),
             FU_TEST(test_priority_order),
             FU_TEST(test_reject_cache), FU_TEST(test_summaries_match_scan),
             FU_TEST(test_random_fusions_valid_and_deterministic), FU_TEST(test_spaces_and_bytes),
             FU_TEST(test_extract), FU_TEST(test_extract_owns_attributes), FU_TEST(test_extract_intermediate), FU_TEST(test_dot),
             FU_TEST(test_debug_stream))
