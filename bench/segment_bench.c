/* segment_bench: time the segment pass on large generated fusions.
 *
 *   segment_bench [--sizes=1000,2000,5000,10000,20000] [--runs=R]
 *
 * Two shapes are built in memory with the IR's C API (not timed):
 *   chain  blocks of 6 pointwise ops, a row or column sum, a scale of the
 *          sum and a subtraction of it from the block's last value, each
 *          block reading the previous one.  The rows are too long for a
 *          persistent kernel (131072 elements), so every block splits and
 *          the pass has real merging to do.
 *   wide   independent branches of 9 ops reading one of two inputs: row
 *          reductions, column reductions, and pure pointwise chains, each
 *          branch an output.  Step 2 builds the branches, step 3 merges
 *          branches of one kind horizontally.
 * Each run segments a fresh copy; the median of R runs (default 3) is
 * reported with the number of ops and segments, and the result is
 * verified once per size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fuser/segment.h"
#include "fuser/verify.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct gen {
  fu_module *m;
  fu_fusion *f;
  uint32_t next_name;
  fu_extent full[2], row[2], col[2];
  bool failed;
} gen;

static void set_type(gen *g, fu_value *v, const fu_extent *dims) {
  v->type.dtype = FU_DT_F32;
  v->type.rank = 2;
  v->type.dims = fu_dims_copy(g->m, dims, 2);
  char name[24];
  snprintf(name, sizeof name, "T%u", g->next_name++);
  fu_value_set_name(g->m, v, name);
  if (!v->type.dims || !v->name) g->failed = true;
}

static fu_value *op1(gen *g, fu_op_kind k, fu_value *a, fu_value *b, const fu_extent *dims) {
  fu_value *ops[2] = {a, b};
  fu_op *op = fu_op_new(g->f, k, ops, b ? 2 : 1, 1, fu_loc_none());
  if (!op) {
    g->failed = true;
    return a;
  }
  set_type(g, op->results[0], dims);
  fu_block_append(&g->f->body, op);
  return op->results[0];
}

static fu_value *input(gen *g) {
  fu_op *op = fu_op_new(g->f, FU_OP_INPUT, NULL, 0, 1, fu_loc_none());
  if (!op) {
    g->failed = true;
    return NULL;
  }
  set_type(g, op->results[0], g->full);
  fu_block_append(&g->f->body, op);
  return op->results[0];
}

static fu_value *sum(gen *g, fu_value *x, int64_t axis) {
  fu_value *r = op1(g, FU_OP_SUM, x, NULL, axis == 1 ? g->row : g->col);
  if (r->def && r->def->kind == FU_OP_SUM) {
    r->def->u.reduce.axes = fu_int_list_copy(g->m, &axis, 1);
    r->def->u.reduce.keepdim = true;
  }
  return r;
}

static fu_value *lit(gen *g, double v) {
  fu_value *l = fu_literal_f(g->f, FU_DT_F64, v);
  if (!l) g->failed = true;
  return l;
}

static void start(gen *g) {
  memset(g, 0, sizeof *g);
  g->m = fu_module_new(fu_default_allocator());
  g->f = g->m ? fu_fusion_new(g->m, "bench", fu_loc_none()) : NULL;
  if (!g->f) g->failed = true;
  fu_extent n = {4096, NULL}, c = {131072, NULL}, one = {1, NULL};
  g->full[0] = n;
  g->full[1] = c;
  g->row[0] = n;
  g->row[1] = one;
  g->col[0] = one;
  g->col[1] = c;
}

static void finish(gen *g, fu_value **outs, uint32_t n_outs) {
  fu_op *o = fu_op_new(g->f, FU_OP_OUTPUT, outs, n_outs, 0, fu_loc_none());
  if (!o) g->failed = true;
  else fu_block_append(&g->f->body, o);
}

static const fu_op_kind pointwise[] = {FU_OP_EXP, FU_OP_TANH, FU_OP_NEG, FU_OP_ABS, FU_OP_SIN, FU_OP_SIGMOID};

static fu_module *make_chain(uint32_t n_ops) {
  gen g;
  start(&g);
  fu_value *cur = input(&g);
  uint32_t ops = 0, block = 0;
  while (!g.failed && ops + 10 <= n_ops) {
    for (int i = 0; i < 6; i++) cur = i == 2 ? op1(&g, FU_OP_MUL, cur, lit(&g, 0.5), g.full)
                                             : op1(&g, pointwise[(block + i) % 6], cur, NULL, g.full);
    fu_value *r = sum(&g, cur, block % 2 ? 0 : 1);
    fu_value *b = op1(&g, FU_OP_MUL, r, lit(&g, 0.25), block % 2 ? g.col : g.row);
    cur = op1(&g, FU_OP_SUB, cur, b, g.full);
    ops += 9;
    block++;
  }
  while (!g.failed && ops < n_ops) {
    cur = op1(&g, FU_OP_EXP, cur, NULL, g.full);
    ops++;
  }
  finish(&g, &cur, 1);
  if (g.failed) {
    fu_module_free(g.m);
    return NULL;
  }
  return g.m;
}

static fu_module *make_wide(uint32_t n_ops) {
  gen g;
  start(&g);
  fu_value *x = input(&g), *y = input(&g);
  uint32_t n_branches = n_ops / 9;
  fu_value **outs = calloc(n_branches + 1, sizeof *outs);
  if (!outs) g.failed = true;
  uint32_t n_outs = 0;
  for (uint32_t br = 0; br < n_branches && !g.failed; br++) {
    int kind = (int)(br % 3);
    fu_value *cur = kind == 1 ? y : x;
    cur = op1(&g, FU_OP_MUL, cur, lit(&g, 1.0 + br), g.full);
    for (int i = 0; i < 7; i++) cur = op1(&g, pointwise[(br + i) % 6], cur, NULL, g.full);
    if (kind == 0) cur = sum(&g, cur, 1);
    else if (kind == 1) cur = sum(&g, cur, 0);
    else cur = op1(&g, FU_OP_EXP, cur, NULL, g.full);
    outs[n_outs++] = cur;
  }
  if (!g.failed) finish(&g, outs, n_outs);
  free(outs);
  if (g.failed) {
    fu_module_free(g.m);
    return NULL;
  }
  return g.m;
}

static uint32_t count_ops(fu_module *m) {
  uint32_t n = 0;
  for (fu_op *op = fu_walk_first(&m->first->body); op; op = fu_walk_next(op))
    n += op->kind != FU_OP_INPUT && op->kind != FU_OP_OUTPUT && op->kind != FU_OP_SEGMENT;
  return n;
}

static int bench(const char *shape, fu_module *(*make)(uint32_t), uint32_t size, int runs) {
  double *t = calloc((size_t)runs, sizeof *t);
  fu_segment_stats st;
  memset(&st, 0, sizeof st);
  uint32_t n_ops = 0;
  int rc = 0;
  for (int r = 0; r < runs && t; r++) {
    fu_module *m = make(size);
    if (!m) {
      fprintf(stderr, "segment_bench: out of memory building the fusion\n");
      rc = 1;
      break;
    }
    fu_diag_engine diag;
    fu_diag_init(&diag, fu_default_allocator());
    n_ops = count_ops(m);
    double t0 = now();
    fu_status s = fu_segment_fusion(m->first, &diag, NULL, &st);
    t[r] = now() - t0;
    if (s != FU_OK || (r == 0 && fu_verify_module(m, &diag) != FU_OK)) {
      fprintf(stderr, "segment_bench: %s %u: segmentation failed or did not verify\n", shape, size);
      rc = 1;
    }
    fu_module_free(m);
    if (rc) break;
  }
  if (!rc && t) {
    qsort(t, (size_t)runs, sizeof *t, cmp_double);
    printf("%-5s %6u ops: %8.4f s  %5u segments  %6u merges tried  %6u accepted  %4u cycle rejects\n", shape, n_ops,
           t[runs / 2], st.n_segments, st.n_merges_tried, st.n_merges_done, st.n_cycle_rejects);
  }
  free(t);
  return rc;
}

int main(int argc, char **argv) {
  uint32_t sizes[16] = {1000, 2000, 5000, 10000, 20000};
  int n_sizes = 5, runs = 3;
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--sizes=", 8) == 0) {
      n_sizes = 0;
      for (char *p = argv[i] + 8; *p && n_sizes < 16;) {
        sizes[n_sizes++] = (uint32_t)strtoul(p, &p, 10);
        if (*p == ',') p++;
        else break;
      }
    } else if (strncmp(argv[i], "--runs=", 7) == 0) {
      runs = atoi(argv[i] + 7);
      if (runs < 1) runs = 1;
    } else {
      fprintf(stderr, "usage: segment_bench [--sizes=N,N,...] [--runs=R]\n");
      return 2;
    }
  }
  int rc = 0;
  for (int i = 0; i < n_sizes && !rc; i++) rc = bench("chain", make_chain, sizes[i], runs);
  for (int i = 0; i < n_sizes && !rc; i++) rc = bench("wide", make_wide, sizes[i], runs);
  return rc;
}
