/* gen_fusion: write a large, valid .fir fusion for benchmarks.
 *
 *   gen_fusion [--ops=N] [--shape=chain|wide|mixed] [--seed=S] [--name=NAME] [-o FILE]
 *
 * The fusion has exactly N ops (inputs and the output line included) over
 * tensors f32[B, 1024] (B symbolic), mixing unary and binary pointwise ops,
 * scalar operands, bias broadcasts (broadcast_in_dim), row reductions
 * broadcast back (sum + broadcast_in_dim + sub), and compare + where.
 *   chain: every op consumes the previous result (one long dependence chain)
 *   wide:  operands are drawn from all earlier results (a wide DAG)
 *   mixed: half and half (default)
 * Deterministic for a given seed.  Every op states its result type, as the
 * printer writes them. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COLS 1024

typedef enum shape { SHAPE_CHAIN, SHAPE_WIDE, SHAPE_MIXED } shape;

typedef struct gen {
  FILE *out;
  uint64_t rng;
  shape shape;
  long next;     /* next value number */
  long last;     /* the most recent f32[B, 1024] value */
  long *pool;    /* every f32[B, 1024] value so far */
  long n_pool, cap_pool;
  long emitted;  /* ops written */
} gen;

static uint64_t next_rand(gen *g) {
  /* xorshift64*: small, fast, good enough for picking operands */
  g->rng ^= g->rng >> 12;
  g->rng ^= g->rng << 25;
  g->rng ^= g->rng >> 27;
  return g->rng * 2685821657736338717ull;
}

static long pick(gen *g, long n) { return (long)(next_rand(g) % (uint64_t)n); }

static void add_pool(gen *g, long v) {
  if (g->n_pool == g->cap_pool) {
    g->cap_pool = g->cap_pool ? g->cap_pool * 2 : 1024;
    long *p = realloc(g->pool, (size_t)g->cap_pool * sizeof *p);
    if (!p) {
      fprintf(stderr, "gen_fusion: out of memory\n");
      exit(1);
    }
    g->pool = p;
  }
  g->pool[g->n_pool++] = v;
  g->last = v;
}

/* An operand for the next op: the chain's head, or any earlier value. */
static long operand(gen *g) {
  bool wide = g->shape == SHAPE_WIDE || (g->shape == SHAPE_MIXED && (next_rand(g) & 1));
  return wide ? g->pool[pick(g, g->n_pool)] : g->last;
}

static const char *const unary_ops[] = {"exp", "tanh", "neg", "abs", "sigmoid", "sqrt", "relu", "erf", "sin", "log1p"};
static const char *const binary_ops[] = {"add", "mul", "sub", "maximum", "minimum", "div"};

/* Emit one op defining a new f32[B, 1024] value from the pool. */
static void emit_unary(gen *g) {
  long a = operand(g), r = g->next++;
  fprintf(g->out, "  %%T%ld = %s %%T%ld : f32[B, %d]\n", r, unary_ops[pick(g, 10)], a, COLS);
  g->emitted++;
  add_pool(g, r);
}

static void emit_binary(gen *g) {
  long a = operand(g), b = operand(g), r = g->next++;
  fprintf(g->out, "  %%T%ld = %s %%T%ld, %%T%ld : f32[B, %d]\n", r, binary_ops[pick(g, 6)], a, b, COLS);
  g->emitted++;
  add_pool(g, r);
}

static void emit_scalar(gen *g) {
  long a = operand(g), r = g->next++;
  if (next_rand(g) & 1)
    fprintf(g->out, "  %%T%ld = mul %%T%ld, 0.5 : f32[B, %d]\n", r, a, COLS);
  else
    fprintf(g->out, "  %%T%ld = add %%T%ld, %%S0 : f32[B, %d]\n", r, a, COLS);
  g->emitted++;
  add_pool(g, r);
}

/* 2 ops: broadcast the bias row and add it. */
static void emit_bias(gen *g) {
  long a = operand(g), b = g->next++, r = g->next++;
  fprintf(g->out, "  %%T%ld = broadcast_in_dim %%T1 {broadcast_dims=[1]} : f32[B, %d]\n", b, COLS);
  fprintf(g->out, "  %%T%ld = add %%T%ld, %%T%ld : f32[B, %d]\n", r, a, b, COLS);
  g->emitted += 2;
  add_pool(g, r);
}

/* 3 ops: a row sum broadcast back and subtracted (a normalization step). */
static void emit_reduce(gen *g) {
  long a = operand(g), s = g->next++, b = g->next++, r = g->next++;
  fprintf(g->out, "  %%T%ld = sum %%T%ld {axes=[1]} : f32[B]\n", s, a);
  fprintf(g->out, "  %%T%ld = broadcast_in_dim %%T%ld {broadcast_dims=[0]} : f32[B, %d]\n", b, s, COLS);
  fprintf(g->out, "  %%T%ld = sub %%T%ld, %%T%ld : f32[B, %d]\n", r, a, b, COLS);
  g->emitted += 3;
  add_pool(g, r);
}

/* 2 ops: a comparison and a select. */
static void emit_where(gen *g) {
  long a = operand(g), b = operand(g), c = g->next++, r = g->next++;
  fprintf(g->out, "  %%T%ld = gt %%T%ld, 0.0 : bool[B, %d]\n", c, a, COLS);
  fprintf(g->out, "  %%T%ld = where %%T%ld, %%T%ld, %%T%ld : f32[B, %d]\n", r, c, a, b, COLS);
  g->emitted += 2;
  add_pool(g, r);
}

static int usage(void) {
  fputs("usage: gen_fusion [--ops=N] [--shape=chain|wide|mixed] [--seed=S] [--name=NAME] [-o FILE]\n", stderr);
  return 2;
}

int main(int argc, char **argv) {
  long n_ops = 100000;
  const char *shape_name = "mixed", *name = "bench", *path = NULL;
  uint64_t seed = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strncmp(a, "--ops=", 6) == 0)
      n_ops = strtol(a + 6, NULL, 10);
    else if (strncmp(a, "--shape=", 8) == 0)
      shape_name = a + 8;
    else if (strncmp(a, "--seed=", 7) == 0)
      seed = strtoull(a + 7, NULL, 10);
    else if (strncmp(a, "--name=", 7) == 0)
      name = a + 7;
    else if (strcmp(a, "-o") == 0 && i + 1 < argc)
      path = argv[++i];
    else
      return usage();
  }
  gen g;
  memset(&g, 0, sizeof g);
  if (strcmp(shape_name, "chain") == 0)
    g.shape = SHAPE_CHAIN;
  else if (strcmp(shape_name, "wide") == 0)
    g.shape = SHAPE_WIDE;
  else if (strcmp(shape_name, "mixed") == 0)
    g.shape = SHAPE_MIXED;
  else
    return usage();
  if (n_ops < 5) {
    fprintf(stderr, "gen_fusion: --ops must be at least 5\n");
    return 2;
  }
  g.rng = seed * 0x9e3779b97f4a7c15ull + 1;
  g.out = path ? fopen(path, "w") : stdout;
  if (!g.out) {
    perror(path);
    return 1;
  }
  fprintf(g.out, "// %ld ops, shape %s, seed %llu (bench/gen_fusion)\n", n_ops, shape_name,
          (unsigned long long)seed);
  fprintf(g.out, "fusion @%s {\n", name);
  fprintf(g.out, "  %%T0 = input f32[B, %d]\n  %%T1 = input f32[%d]\n  %%S0 = input f32\n", COLS, COLS);
  g.next = 2;
  g.emitted = 3;
  add_pool(&g, 0);
  /* Leave one op for the output line. */
  while (g.emitted < n_ops - 1) {
    long left = n_ops - 1 - g.emitted;
    unsigned k = (unsigned)pick(&g, 16);
    if (k < 5 || left < 3) {
      if (k & 1)
        emit_unary(&g);
      else
        emit_scalar(&g);
    } else if (k < 10)
      emit_binary(&g);
    else if (k < 12)
      emit_bias(&g);
    else if (k < 14)
      emit_where(&g);
    else
      emit_reduce(&g);
  }
  fprintf(g.out, "  output %%T%ld\n}\n", g.last);
  free(g.pool);
  if (path && fclose(g.out) != 0) {
    perror(path);
    return 1;
  }
  return 0;
}
