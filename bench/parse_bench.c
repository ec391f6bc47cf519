/* parse_bench: time parse + verify + print of a .fir file.
 *
 *   parse_bench FILE.fir [--runs=R] [--json]
 *
 * The file is read into memory once (file I/O is not timed).  Each run
 * parses the buffer, verifies the module and prints it into a memory
 * buffer; the module is freed outside the timed region.  Reports the median
 * of R runs (default 7) for each phase and for the whole, after checking
 * once that the printed text parses back and prints identically.  Exits
 * non-zero if the input does not parse or verify, or does not round-trip. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fuser/driver.h"
#include "fuser/parse.h"
#include "fuser/print.h"
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

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static long count_ops(fu_module *m) {
  long n = 0;
  for (fu_fusion *f = m->first; f; f = f->next)
    for (fu_op *op = fu_walk_first(&f->body); op; op = fu_walk_next(op)) n++;
  return n;
}

/* One timed run; fills the three phase times and the printed text. */
static int run_once(const fu_source *src, fu_diag_engine *diag, double t[3], fu_strbuf *out, long *n_ops) {
  fu_module *m = NULL;
  double t0 = now();
  fu_status st = fu_parse_module(src, fu_default_allocator(), diag, &m);
  double t1 = now();
  if (st == FU_OK) st = fu_verify_module(m, diag);
  double t2 = now();
  if (st == FU_OK) fu_print_module(out, m, NULL);
  double t3 = now();
  t[0] = t1 - t0;
  t[1] = t2 - t1;
  t[2] = t3 - t2;
  if (m && n_ops) *n_ops = count_ops(m);
  fu_module_free(m);
  return st == FU_OK && !out->failed ? 0 : 1;
}

int main(int argc, char **argv) {
  const char *path = NULL;
  int runs = 7;
  int json = 0;
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--runs=", 7) == 0)
      runs = atoi(argv[i] + 7);
    else if (strcmp(argv[i], "--json") == 0)
      json = 1;
    else if (!path && argv[i][0] != '-')
      path = argv[i];
    else {
      fprintf(stderr, "usage: parse_bench FILE.fir [--runs=R] [--json]\n");
      return 2;
    }
  }
  if (!path || runs < 1 || runs > 1000) {
    fprintf(stderr, "usage: parse_bench FILE.fir [--runs=R (1..1000)] [--json]\n");
    return 2;
  }
  fu_allocator alloc = fu_default_allocator();
  char *data = NULL;
  size_t len = 0;
  if (fu_read_file(path, alloc, &data, &len) != FU_OK) {
    perror(path);
    return 1;
  }
  fu_source src = {path, data, len, 1};
  fu_diag_engine diag;
  fu_diag_init(&diag, alloc);

  double *phase[4];
  for (int k = 0; k < 4; k++) phase[k] = calloc((size_t)runs, sizeof(double));
  fu_strbuf out;
  fu_strbuf_init(&out, alloc);
  long n_ops = 0;
  int rc = 0;
  for (int r = 0; r < runs && rc == 0; r++) {
    double t[3];
    fu_strbuf_clear(&out);
    rc = run_once(&src, &diag, t, &out, &n_ops);
    for (int k = 0; k < 3; k++) phase[k][r] = t[k];
    phase[3][r] = t[0] + t[1] + t[2];
  }
  if (rc != 0) {
    fprintf(stderr, "parse_bench: %s does not parse and verify\n", path);
  } else {
    /* Round trip: the printed text parses and prints to the same bytes. */
    fu_source again = {"<printed>", out.data, out.len, 1};
    fu_strbuf out2;
    fu_strbuf_init(&out2, alloc);
    double t[3];
    if (run_once(&again, &diag, t, &out2, NULL) != 0 || out2.len != out.len ||
        memcmp(out2.data, out.data, out.len) != 0) {
      fprintf(stderr, "parse_bench: printing %s does not round-trip\n", path);
      rc = 1;
    }
    fu_strbuf_free(&out2);
  }
  if (rc == 0) {
    double med[4];
    for (int k = 0; k < 4; k++) med[k] = median(phase[k], runs);
    if (json)
      printf("{\"file\": \"%s\", \"ops\": %ld, \"bytes\": %zu, \"runs\": %d, \"parse_ms\": %.3f, "
             "\"verify_ms\": %.3f, \"print_ms\": %.3f, \"total_ms\": %.3f}\n",
             path, n_ops, len, runs, med[0] * 1e3, med[1] * 1e3, med[2] * 1e3, med[3] * 1e3);
    else
      printf("%s: %ld ops, %zu bytes, median of %d runs\n"
             "  parse   %9.3f ms\n  verify  %9.3f ms\n  print   %9.3f ms\n  total   %9.3f ms  (%.3f us/op)\n",
             path, n_ops, len, runs, med[0] * 1e3, med[1] * 1e3, med[2] * 1e3, med[3] * 1e3,
             n_ops ? med[3] * 1e6 / (double)n_ops : 0.0);
  }
  for (int k = 0; k < 4; k++) free(phase[k]);
  fu_strbuf_free(&out);
  fu_mem_free(&alloc, data, len + 1);
  return rc;
}
