/* fuser: segment pass, the group graph.
 *
 * Groups are union-find roots over a fusion's top-level ops.  Each root has
 * successor and predecessor lists (group ids that may be stale or repeated:
 * they are resolved with find() when read, and compacted when they have
 * doubled since the last compaction) and a position `ord` in a topological
 * order of the roots.
 *
 * Merging x and y (ord x < ord y) is legal when no path leads from x to y
 * through a third group.  Every such path only visits groups ordered
 * between x and y, so the check is a forward search from x pruned at ord y:
 * it touches only what lies between the two, never the whole graph.  After
 * a merge the order is repaired as in Pearce and Kelly's dynamic topological
 * sort: the groups reachable from x before y (F) and those reaching y after
 * x (B) are renumbered B, merged, F over the positions they held.  When F or
 * B is empty the merged group simply takes y's or x's position. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

fu_status fu_seg_graph_init(fu_seg_graph *g, uint32_t n, fu_allocator alloc) {
  memset(g, 0, sizeof *g);
  g->alloc = alloc;
  g->n = n;
  uint32_t m = n ? n : 1;
  g->parent = fu_mem_calloc(&alloc, m, sizeof *g->parent);
  g->ord = fu_mem_calloc(&alloc, m, sizeof *g->ord);
  g->pos = fu_mem_calloc(&alloc, m, sizeof *g->pos);
  g->version = fu_mem_calloc(&alloc, m, sizeof *g->version);
  g->succ = fu_mem_calloc(&alloc, m, sizeof *g->succ);
  g->pred = fu_mem_calloc(&alloc, m, sizeof *g->pred);
  g->visit = fu_mem_calloc(&alloc, m, sizeof *g->visit);
  g->dedup = fu_mem_calloc(&alloc, m, sizeof *g->dedup);
  if (!g->parent || !g->ord || !g->pos || !g->version || !g->succ || !g->pred || !g->visit || !g->dedup) {
    fu_seg_graph_free(g);
    return FU_ERR_NOMEM;
  }
  for (uint32_t i = 0; i < n; i++) g->parent[i] = g->ord[i] = g->pos[i] = i;
  return FU_OK;
}

void fu_seg_graph_free(fu_seg_graph *g) {
  const fu_allocator *a = &g->alloc;
  uint32_t m = g->n ? g->n : 1;
  if (g->succ)
    for (uint32_t i = 0; i < g->n; i++) fu_seg_vec_free(&g->succ[i], a);
  if (g->pred)
    for (uint32_t i = 0; i < g->n; i++) fu_seg_vec_free(&g->pred[i], a);
  fu_mem_free(a, g->parent, (size_t)m * sizeof *g->parent);
  fu_mem_free(a, g->ord, (size_t)m * sizeof *g->ord);
  fu_mem_free(a, g->pos, (size_t)m * sizeof *g->pos);
  fu_mem_free(a, g->version, (size_t)m * sizeof *g->version);
  fu_mem_free(a, g->succ, (size_t)m * sizeof *g->succ);
  fu_mem_free(a, g->pred, (size_t)m * sizeof *g->pred);
  fu_mem_free(a, g->visit, (size_t)m * sizeof *g->visit);
  fu_mem_free(a, g->dedup, (size_t)m * sizeof *g->dedup);
  fu_seg_vec_free(&g->stack, a);
  fu_seg_vec_free(&g->fwd, a);
  fu_seg_vec_free(&g->bwd, a);
  fu_seg_vec_free(&g->pool, a);
  memset(g, 0, sizeof *g);
}

fu_status fu_seg_graph_add_edge(fu_seg_graph *g, uint32_t from, uint32_t to) {
  if (from >= g->n || to >= g->n || from == to) return FU_OK;
  if (!fu_seg_vec_push(&g->succ[from], &g->alloc, to) || !fu_seg_vec_push(&g->pred[to], &g->alloc, from))
    return FU_ERR_NOMEM;
  g->succ[from].clean_n = g->succ[from].n;
  g->pred[to].clean_n = g->pred[to].n;
  return FU_OK;
}

uint32_t fu_seg_graph_find(fu_seg_graph *g, uint32_t x) {
  while (g->parent[x] != x) {
    g->parent[x] = g->parent[g->parent[x]]; /* path halving */
    x = g->parent[x];
  }
  return x;
}

void fu_seg_graph_reindex(fu_seg_graph *g) {
  for (uint32_t i = 0; i < g->n; i++) g->pos[i] = FU_SEG_NONE;
  for (uint32_t i = 0; i < g->n; i++)
    if (g->parent[i] == i && g->ord[i] < g->n) g->pos[g->ord[i]] = i;
}

static uint32_t next_stamp(uint32_t *stamp, uint32_t *arr, uint32_t n) {
  if (++*stamp == 0) {
    memset(arr, 0, (size_t)n * sizeof *arr);
    *stamp = 1;
  }
  return *stamp;
}

/* Depth-first search from x over successors (forward) or from y over
 * predecessors (backward), staying strictly between the two in the order.
 * Reaching the other end from a group other than the start is a cycle.
 * The groups visited go to g->fwd or g->bwd. */
static fu_seg_path dfs_search(fu_seg_graph *g, uint32_t x, uint32_t y, bool forward, uint32_t budget, uint32_t *via) {
  uint32_t stamp = next_stamp(&g->visit_stamp, g->visit, g->n);
  uint32_t start = forward ? x : y, goal = forward ? y : x;
  fu_seg_vec *seen = forward ? &g->fwd : &g->bwd;
  seen->n = 0;
  g->stack.n = 0;
  if (!fu_seg_vec_push(&g->stack, &g->alloc, start)) {
    g->oom = true;
    return FU_SEG_PATH_BUDGET;
  }
  g->visit[start] = stamp;
  while (g->stack.n) {
    uint32_t n = g->stack.v[--g->stack.n];
    fu_seg_vec *adj = forward ? &g->succ[n] : &g->pred[n];
    for (uint32_t i = 0; i < adj->n; i++) {
      uint32_t t = fu_seg_graph_find(g, adj->v[i]);
      if (t == n) continue;
      if (t == goal) {
        if (n == start) continue; /* the direct edge is what the merge removes */
        if (via) *via = n;
        return FU_SEG_PATH_CYCLE;
      }
      if ((forward ? g->ord[t] > g->ord[y] : g->ord[t] < g->ord[x]) || g->visit[t] == stamp) continue;
      g->visit[t] = stamp;
      bool ok = fu_seg_vec_push(seen, &g->alloc, t) && fu_seg_vec_push(&g->stack, &g->alloc, t);
      if (!ok) g->oom = true;
      if (!ok || seen->n > budget) return FU_SEG_PATH_BUDGET;
    }
  }
  return FU_SEG_PATH_NONE;
}

/* The same sets found by walking the positions between x and y in order
 * (forward: a group is in F when one of its predecessors is x or in F;
 * backward: in B when one of its successors is y or in B).  Cheaper than
 * the depth-first search when the start group has far more edges than
 * there are groups between the two, as when a large group absorbs the ops
 * after it one at a time. */
static fu_seg_path range_search(fu_seg_graph *g, uint32_t x, uint32_t y, bool forward, uint32_t budget,
                                uint32_t *via) {
  uint32_t stamp = next_stamp(&g->visit_stamp, g->visit, g->n);
  fu_seg_vec *seen = forward ? &g->fwd : &g->bwd;
  seen->n = 0;
  uint32_t lo = g->ord[x], hi = g->ord[y];
  g->visit[forward ? x : y] = stamp;
  for (uint32_t k = 1; lo + k < hi; k++) {
    uint32_t o = forward ? lo + k : hi - k;
    uint32_t t = g->pos[o];
    if (t == FU_SEG_NONE) continue;
    fu_seg_vec *adj = forward ? &g->pred[t] : &g->succ[t];
    bool member = false;
    for (uint32_t i = 0; i < adj->n && !member; i++) {
      uint32_t r = fu_seg_graph_find(g, adj->v[i]);
      member = r != t && g->visit[r] == stamp;
    }
    if (!member) continue;
    g->visit[t] = stamp;
    if (!fu_seg_vec_push(seen, &g->alloc, t)) {
      g->oom = true;
      return FU_SEG_PATH_BUDGET;
    }
    if (seen->n > budget) return FU_SEG_PATH_BUDGET;
  }
  /* a cycle: a member next to the other end */
  if (forward) {
    for (uint32_t i = 0; i < g->pred[y].n; i++) {
      uint32_t r = fu_seg_graph_find(g, g->pred[y].v[i]);
      if (r != x && r != y && g->visit[r] == stamp) {
        if (via) *via = r;
        return FU_SEG_PATH_CYCLE;
      }
    }
  } else {
    for (uint32_t j = 0; j < seen->n; j++) {
      fu_seg_vec *p = &g->pred[seen->v[j]];
      for (uint32_t i = 0; i < p->n; i++)
        if (fu_seg_graph_find(g, p->v[i]) == x) {
          if (via) *via = seen->v[j];
          return FU_SEG_PATH_CYCLE;
        }
    }
  }
  return FU_SEG_PATH_NONE;
}

static fu_seg_path search(fu_seg_graph *g, uint32_t x, uint32_t y, bool forward, uint32_t budget, uint32_t *via) {
  uint32_t edges = forward ? g->succ[x].n : g->pred[y].n;
  uint32_t between = g->ord[y] - g->ord[x] - 1;
  return between < edges ? range_search(g, x, y, forward, budget, via) : dfs_search(g, x, y, forward, budget, via);
}

fu_seg_path fu_seg_graph_check(fu_seg_graph *g, uint32_t x, uint32_t y, uint32_t budget, uint32_t *via) {
  g->fwd_from = g->fwd_to = g->bwd_from = g->bwd_to = FU_SEG_NONE;
  uint32_t between = g->ord[y] - g->ord[x] - 1;
  uint32_t fcost = g->succ[x].n < between ? g->succ[x].n : between;
  uint32_t bcost = g->pred[y].n < between ? g->pred[y].n : between;
  bool forward = fcost <= bcost;
  fu_seg_path p = search(g, x, y, forward, budget, via);
  if (p == FU_SEG_PATH_NONE) {
    if (forward) {
      g->fwd_from = x;
      g->fwd_to = y;
    } else {
      g->bwd_from = x;
      g->bwd_to = y;
    }
  }
  return p;
}

/* Appends src to dst (both adjacency lists of groups being merged), moving
 * the smaller into the larger so that each entry is copied O(log n) times. */
static bool adj_absorb(fu_seg_graph *g, fu_seg_vec *dst, fu_seg_vec *src) {
  if (src->n > dst->n) {
    fu_seg_vec tmp = *dst;
    *dst = *src;
    *src = tmp;
  }
  for (uint32_t i = 0; i < src->n; i++)
    if (!fu_seg_vec_push(dst, &g->alloc, src->v[i])) return false;
  fu_seg_vec_free(src, &g->alloc);
  return true;
}

/* Drops stale and repeated entries once a list has doubled since its last
 * compaction: amortized O(1) per entry. */
static void adj_compact(fu_seg_graph *g, uint32_t root, fu_seg_vec *v) {
  if (v->n <= 2 * v->clean_n + 16) return;
  uint32_t stamp = next_stamp(&g->dedup_stamp, g->dedup, g->n);
  uint32_t k = 0;
  for (uint32_t i = 0; i < v->n; i++) {
    uint32_t t = fu_seg_graph_find(g, v->v[i]);
    if (t == root || g->dedup[t] == stamp) continue;
    g->dedup[t] = stamp;
    v->v[k++] = t;
  }
  v->n = v->clean_n = k;
}

/* Sorts the groups in v by their position in the order. */
static bool sort_by_ord(fu_seg_graph *g, fu_seg_vec *v) { return fu_seg_vec_sort(v, &g->alloc, g->ord); }

fu_status fu_seg_graph_merge(fu_seg_graph *g, uint32_t x, uint32_t y, uint32_t root) {
  uint32_t other = root == x ? y : x;
  uint32_t merged_ord;
  bool have_fwd = g->fwd_from == x && g->fwd_to == y, have_bwd = g->bwd_from == x && g->bwd_to == y;
  if (!have_fwd && !have_bwd) {
    /* no fresh search: do one (and insist there is no cycle) */
    if (fu_seg_graph_check(g, x, y, UINT32_MAX, NULL) != FU_SEG_PATH_NONE) return FU_ERR_INVALID_ARG;
    have_fwd = g->fwd_from == x;
    have_bwd = !have_fwd;
  }
  /* With F (reachable from x before y) empty the merged group can take y's
   * place; with B (reaching y after x) empty, x's.  Otherwise compute the
   * other set too: no cycle, so the search completes. */
  if (have_fwd && g->fwd.n == 0) {
    merged_ord = g->ord[y];
  } else if (have_bwd && g->bwd.n == 0) {
    merged_ord = g->ord[x];
  } else {
    if (search(g, x, y, !have_fwd, UINT32_MAX, NULL) != FU_SEG_PATH_NONE) return g->oom ? FU_ERR_NOMEM : FU_ERR_INVALID_ARG;
    if (g->bwd.n == 0) {
      merged_ord = g->ord[x];
    } else if (g->fwd.n == 0) {
      merged_ord = g->ord[y];
    } else {
      /* pool the positions of B, x, y and F; hand them out as B, merged, F */
      uint32_t np = g->bwd.n + g->fwd.n + 2;
      g->pool.n = 0;
      for (uint32_t i = 0; i < g->bwd.n; i++)
        if (!fu_seg_vec_push(&g->pool, &g->alloc, g->ord[g->bwd.v[i]])) return FU_ERR_NOMEM;
      for (uint32_t i = 0; i < g->fwd.n; i++)
        if (!fu_seg_vec_push(&g->pool, &g->alloc, g->ord[g->fwd.v[i]])) return FU_ERR_NOMEM;
      if (!fu_seg_vec_push(&g->pool, &g->alloc, g->ord[x]) || !fu_seg_vec_push(&g->pool, &g->alloc, g->ord[y]))
        return FU_ERR_NOMEM;
      uint64_t *slots = fu_mem_alloc(&g->alloc, (size_t)np * sizeof *slots);
      if (!slots) return FU_ERR_NOMEM;
      for (uint32_t i = 0; i < np; i++) slots[i] = g->pool.v[i];
      qsort(slots, np, sizeof *slots, fu_seg_cmp_u64);
      if (!sort_by_ord(g, &g->bwd) || !sort_by_ord(g, &g->fwd)) {
        fu_mem_free(&g->alloc, slots, (size_t)np * sizeof *slots);
        return FU_ERR_NOMEM;
      }
      for (uint32_t i = 0; i < np; i++) g->pos[slots[i]] = FU_SEG_NONE;
      uint32_t k = 0;
      for (uint32_t i = 0; i < g->bwd.n; i++) {
        g->ord[g->bwd.v[i]] = (uint32_t)slots[k++];
        g->pos[g->ord[g->bwd.v[i]]] = g->bwd.v[i];
      }
      merged_ord = (uint32_t)slots[k++];
      for (uint32_t i = 0; i < g->fwd.n; i++) {
        g->ord[g->fwd.v[i]] = (uint32_t)slots[k++];
        g->pos[g->ord[g->fwd.v[i]]] = g->fwd.v[i];
      }
      fu_mem_free(&g->alloc, slots, (size_t)np * sizeof *slots);
    }
  }
  g->fwd_from = g->fwd_to = g->bwd_from = g->bwd_to = FU_SEG_NONE;
  if (g->pos[g->ord[x]] == x) g->pos[g->ord[x]] = FU_SEG_NONE;
  if (g->pos[g->ord[y]] == y) g->pos[g->ord[y]] = FU_SEG_NONE;
  g->parent[other] = root;
  g->ord[root] = merged_ord;
  g->pos[merged_ord] = root;
  g->version[root]++;
  if (!adj_absorb(g, &g->succ[root], &g->succ[other]) || !adj_absorb(g, &g->pred[root], &g->pred[other]))
    return FU_ERR_NOMEM;
  adj_compact(g, root, &g->succ[root]);
  adj_compact(g, root, &g->pred[root]);
  return FU_OK;
}

fu_status fu_seg_graph_succs(fu_seg_graph *g, uint32_t x, fu_seg_vec *out) {
  uint32_t stamp = next_stamp(&g->dedup_stamp, g->dedup, g->n);
  uint32_t start = out->n;
  fu_seg_vec *s = &g->succ[x];
  for (uint32_t i = 0; i < s->n; i++) {
    uint32_t t = fu_seg_graph_find(g, s->v[i]);
    if (t == x || g->dedup[t] == stamp) continue;
    g->dedup[t] = stamp;
    if (!fu_seg_vec_push(out, &g->alloc, t)) return FU_ERR_NOMEM;
  }
  fu_seg_vec tail = {out->v + start, out->n - start, out->n - start, 0};
  return sort_by_ord(g, &tail) ? FU_OK : FU_ERR_NOMEM;
}

bool fu_seg_graph_order_valid(fu_seg_graph *g) {
  for (uint32_t r = 0; r < g->n; r++) {
    if (fu_seg_graph_find(g, r) != r) continue;
    for (uint32_t i = 0; i < g->succ[r].n; i++) {
      uint32_t t = fu_seg_graph_find(g, g->succ[r].v[i]);
      if (t != r && g->ord[t] <= g->ord[r]) return false;
    }
  }
  return true;
}

/* ---- the candidate queue ---------------------------------------------------- */

bool fu_seg_cand_before(fu_seg_cand a, fu_seg_cand b) {
  if (a.bytes != b.bytes) return a.bytes > b.bytes;
  if (a.p != b.p) return a.p < b.p;
  return a.c < b.c;
}

void fu_seg_heap_init(fu_seg_heap *h, fu_allocator alloc) {
  memset(h, 0, sizeof *h);
  h->alloc = alloc;
}

void fu_seg_heap_free(fu_seg_heap *h) {
  fu_mem_free(&h->alloc, h->v, (size_t)h->cap * sizeof *h->v);
  h->v = NULL;
  h->n = h->cap = 0;
}

bool fu_seg_heap_push(fu_seg_heap *h, fu_seg_cand c) {
  if (h->n == h->cap) {
    uint32_t cap = h->cap ? h->cap * 2 : 64;
    fu_seg_cand *p = fu_mem_realloc(&h->alloc, h->v, (size_t)h->cap * sizeof *p, (size_t)cap * sizeof *p);
    if (!p) return false;
    h->v = p;
    h->cap = cap;
  }
  uint32_t i = h->n++;
  while (i > 0) {
    uint32_t parent = (i - 1) / 2;
    if (!fu_seg_cand_before(c, h->v[parent])) break;
    h->v[i] = h->v[parent];
    i = parent;
  }
  h->v[i] = c;
  return true;
}

bool fu_seg_heap_pop(fu_seg_heap *h, fu_seg_cand *out) {
  if (h->n == 0) return false;
  *out = h->v[0];
  fu_seg_cand last = h->v[--h->n];
  uint32_t i = 0;
  for (;;) {
    uint32_t l = 2 * i + 1, r = l + 1, best = i;
    fu_seg_cand bc = last;
    if (l < h->n && fu_seg_cand_before(h->v[l], bc)) {
      best = l;
      bc = h->v[l];
    }
    if (r < h->n && fu_seg_cand_before(h->v[r], bc)) best = r;
    if (best == i) break;
    h->v[i] = h->v[best];
    i = best;
  }
  if (h->n) h->v[i] = last;
  return true;
}

/* ---- rejected pairs ---------------------------------------------------------- */

void fu_seg_reject_init(fu_seg_reject_cache *c, fu_allocator alloc) {
  memset(c, 0, sizeof *c);
  c->alloc = alloc;
}

void fu_seg_reject_free(fu_seg_reject_cache *c) {
  fu_mem_free(&c->alloc, c->keys, (size_t)c->cap * sizeof *c->keys);
  fu_mem_free(&c->alloc, c->vers, (size_t)c->cap * sizeof *c->vers);
  c->keys = c->vers = NULL;
  c->cap = c->count = 0;
}

static uint32_t slot_of(uint64_t key, uint32_t cap) {
  uint64_t h = key * 0x9e3779b97f4a7c15ull;
  return (uint32_t)(h >> 32) & (cap - 1);
}

static bool reject_grow(fu_seg_reject_cache *c) {
  uint32_t cap = c->cap ? c->cap * 2 : 64;
  uint64_t *k = fu_mem_calloc(&c->alloc, cap, sizeof *k);
  uint64_t *v = fu_mem_calloc(&c->alloc, cap, sizeof *v);
  if (!k || !v) {
    fu_mem_free(&c->alloc, k, (size_t)cap * sizeof *k);
    fu_mem_free(&c->alloc, v, (size_t)cap * sizeof *v);
    return false;
  }
  for (uint32_t i = 0; i < c->cap; i++) {
    if (!c->keys[i]) continue;
    uint32_t j = slot_of(c->keys[i], cap);
    while (k[j]) j = (j + 1) & (cap - 1);
    k[j] = c->keys[i];
    v[j] = c->vers[i];
  }
  fu_mem_free(&c->alloc, c->keys, (size_t)c->cap * sizeof *c->keys);
  fu_mem_free(&c->alloc, c->vers, (size_t)c->cap * sizeof *c->vers);
  c->keys = k;
  c->vers = v;
  c->cap = cap;
  return true;
}

bool fu_seg_reject_put(fu_seg_reject_cache *c, uint32_t x, uint32_t y, uint32_t vx, uint32_t vy) {
  if ((c->count + 1) * 2 > c->cap && !reject_grow(c)) return false;
  uint64_t key = ((uint64_t)(x + 1u) << 32) | (uint64_t)(y + 1u);
  uint64_t ver = ((uint64_t)vx << 32) | vy;
  uint32_t j = slot_of(key, c->cap);
  while (c->keys[j] && c->keys[j] != key) j = (j + 1) & (c->cap - 1);
  if (!c->keys[j]) c->count++;
  c->keys[j] = key;
  c->vers[j] = ver;
  return true;
}

bool fu_seg_reject_has(const fu_seg_reject_cache *c, uint32_t x, uint32_t y, uint32_t vx, uint32_t vy) {
  if (!c->cap) return false;
  uint64_t key = ((uint64_t)(x + 1u) << 32) | (uint64_t)(y + 1u);
  uint32_t j = slot_of(key, c->cap);
  while (c->keys[j]) {
    if (c->keys[j] == key) return c->vers[j] == (((uint64_t)vx << 32) | vy);
    j = (j + 1) & (c->cap - 1);
  }
  return false;
}
