/* Helpers shared by the interpreter's unit tests (test_interp*.c): parse a
 * fusion from text, make tensor arguments, run, and check values element by
 * element with the failing index in the message. */
#ifndef FUSER_TEST_INTERP_UTIL_H
#define FUSER_TEST_INTERP_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuser/interp.h"
#include "fuser/parse.h"
#include "fuser/verify.h"
#include "diag_capture.h"
#include "harness.h"

typedef struct ti_prog {
  fu_module *m;
  fu_fusion *f;
  fu_source src;
  capture cap; /* diagnostics as text, for asserts */
  fu_diag_engine diag;
  fu_arg *out;
  uint32_t n_out;
} ti_prog;

static inline void ti_diag_init(ti_prog *p) { diag_capture(&p->diag, &p->cap); }

/* Parse and verify `text`; the fusion is the first one.  Prints the
 * diagnostics and returns false on failure. */
static inline bool ti_parse(ti_prog *p, const char *text) {
  memset(p, 0, sizeof *p);
  ti_diag_init(p);
  p->src.name = "test.fir";
  p->src.text = text;
  p->src.len = strlen(text);
  p->src.first_line = 1;
  if (fu_parse_module(&p->src, fu_default_allocator(), &p->diag, &p->m) != FU_OK ||
      fu_verify_module(p->m, &p->diag) != FU_OK) {
    fprintf(stderr, "parse/verify failed:\n%s", p->cap.text);
    return false;
  }
  p->f = p->m->first;
  return p->f != NULL;
}

static inline void ti_free_outputs(ti_prog *p) {
  fu_args_free(p->out, p->n_out, fu_default_allocator());
  p->out = NULL;
  p->n_out = 0;
}

static inline void ti_free(ti_prog *p) {
  ti_free_outputs(p);
  if (p->m) fu_module_free(p->m);
  p->m = NULL;
}

static inline fu_status ti_run(ti_prog *p, fu_arg *in, uint32_t n_in) {
  ti_free_outputs(p);
  return fu_interp_run(p->f, in, n_in, NULL, fu_default_allocator(), &p->diag, &p->out, &p->n_out);
}

/* Run with inputs made from the file's example attributes. */
static inline fu_status ti_run_examples(ti_prog *p, const fu_input_options *o) {
  fu_arg *in = NULL;
  uint32_t n = 0;
  fu_status st = fu_interp_make_inputs(p->f, o, fu_default_allocator(), &p->diag, &in, &n);
  if (st != FU_OK) return st;
  st = ti_run(p, in, n);
  fu_args_free(in, n, fu_default_allocator());
  return st;
}

/* A contiguous tensor arg with the given values (row-major). */
static inline fu_arg ti_tensor(fu_dtype dt, int32_t rank, const int64_t *shape, const double *v) {
  fu_host_tensor t;
  if (fu_host_tensor_alloc(&t, fu_default_allocator(), dt, rank, shape) != FU_OK) {
    fu_arg none;
    memset(&none, 0, sizeof none);
    return none;
  }
  int64_t n = fu_host_tensor_numel(&t);
  for (int64_t i = 0; i < n; i++) fu_host_tensor_set_flat(&t, i, v[i]);
  return fu_arg_tensor(t);
}

#define TI_SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define TI_VALS(...) ((const double[]){__VA_ARGS__})
#define TI_NVALS(...) (sizeof((const double[]){__VA_ARGS__}) / sizeof(double))

/* Compare an output tensor with expected values (NaN equals NaN; tol is
 * absolute, 0 for exact). */
static inline void ti_check_vals(const char *file, int line, const fu_arg *a, double tol, const double *want, size_t n) {
  fu_test_checks++;
  if (!a || a->kind != FU_ARG_TENSOR) {
    fu_test_fail(file, line, "output is not a tensor");
    return;
  }
  int64_t numel = fu_host_tensor_numel(&a->tensor);
  if (numel != (int64_t)n) {
    fu_test_fail(file, line, "output has %lld elements, expected %zu", (long long)numel, n);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    double g = fu_host_tensor_get_flat(&a->tensor, (int64_t)i);
    bool ok = isnan(want[i]) ? isnan(g) : (isinf(want[i]) ? g == want[i] : fabs(g - want[i]) <= tol);
    if (ok && want[i] == 0 && g == 0 && tol == 0 && signbit(want[i]) != signbit(g)) ok = false;
    if (!ok) {
      fu_test_fail(file, line, "element %zu: got %.17g, expected %.17g", i, g, want[i]);
      return;
    }
  }
}

#define CHECK_VALS(arg, tol, ...) ti_check_vals(__FILE__, __LINE__, (arg), (tol), TI_VALS(__VA_ARGS__), TI_NVALS(__VA_ARGS__))

static inline void ti_check_shape(const char *file, int line, const fu_arg *a, fu_dtype dt, int32_t rank,
                           const int64_t *shape) {
  fu_test_checks++;
  if (!a || a->kind != FU_ARG_TENSOR) {
    fu_test_fail(file, line, "output is not a tensor");
    return;
  }
  if (a->tensor.dtype != dt || a->tensor.rank != rank) {
    fu_test_fail(file, line, "got %s rank %d, expected %s rank %d", fu_dtype_name(a->tensor.dtype), a->tensor.rank,
                 fu_dtype_name(dt), rank);
    return;
  }
  for (int32_t d = 0; d < rank; d++)
    if (a->tensor.shape[d] != shape[d]) {
      fu_test_fail(file, line, "dim %d: got %lld, expected %lld", d, (long long)a->tensor.shape[d],
                   (long long)shape[d]);
      return;
    }
}

#define CHECK_SHAPE(arg, dt, rank, ...) ti_check_shape(__FILE__, __LINE__, (arg), (dt), (rank), TI_SHAPE(__VA_ARGS__))
#define CHECK_HAS(hay, needle)                                                                    \
  do {                                                                                            \
    fu_test_checks++;                                                                             \
    if (!strstr((hay), (needle))) fu_test_fail(__FILE__, __LINE__, "missing '%s' in:\n%s", (needle), (hay)); \
  } while (0)

#endif
