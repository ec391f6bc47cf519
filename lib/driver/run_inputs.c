/* fuser driver: fuser-run's inputs: made as the command line asks
 * (--input, --random, --seed, example data), and described in the
 * summary by where their data came from. */
#include <string.h>

#include "run_internal.h"

/* The file's directory, for paths in npy="..." attributes. */
static char *dir_of(fu_allocator *al, const char *path, size_t *bytes) {
  const char *slash = strrchr(path, '/');
  size_t n = slash ? (size_t)(slash - path) : 1;
  *bytes = n + 2;
  char *d = fu_mem_alloc(al, *bytes);
  if (!d) return NULL;
  if (slash == path)
    strcpy(d, "/");
  else if (slash) {
    memcpy(d, path, n);
    d[n] = '\0';
  } else
    strcpy(d, ".");
  return d;
}

/* Copies of the given inputs (a segment tried alone gets the values the
 * interpreter computed for it): the caller frees what it gets. */
static fu_status copy_given(const run_args *a, fu_arg **in, uint32_t *n_in) {
  fu_allocator al = a->alloc;
  uint32_t n = a->n_given_in;
  fu_arg *c = fu_mem_calloc(&al, n ? n : 1, sizeof *c);
  if (!c) return FU_ERR_NOMEM;
  for (uint32_t i = 0; i < n; i++) {
    const fu_arg *g = &a->given_in[i];
    if (g->kind != FU_ARG_TENSOR) {
      c[i] = *g;
      continue;
    }
    fu_host_tensor t;
    memset(&t, 0, sizeof t);
    fu_status st = fu_host_tensor_alloc_strided(&t, al, g->tensor.dtype, g->tensor.rank, g->tensor.shape, g->tensor.strides);
    if (st == FU_OK) st = fu_host_tensor_copy_into(&t, &g->tensor);
    if (st != FU_OK) {
      fu_host_tensor_free(&t);
      for (uint32_t j = i; j < n; j++) c[j] = fu_arg_scalar_b(false); /* nothing owned there */
      fu_args_free(c, n, al);
      return st;
    }
    c[i] = fu_arg_tensor(t);
  }
  *in = c;
  *n_in = n;
  return FU_OK;
}

fu_status run_make_inputs(const run_args *a, fu_fusion *f, fu_diag_engine *diag, fu_arg **in, uint32_t *n_in) {
  if (a->given_in) return copy_given(a, in, n_in);
  fu_allocator al = a->alloc;
  size_t base_bytes = 0;
  char *base = strcmp(a->file, "-") == 0 ? NULL : dir_of(&al, a->file, &base_bytes);
  if (strcmp(a->file, "-") != 0 && !base) return FU_ERR_NOMEM;
  fu_input_options io;
  memset(&io, 0, sizeof io);
  io.base_dir = base;
  io.data_dir = a->data_dir;
  io.allow_any_path = a->allow_any_path;
  io.overrides = a->overrides;
  io.n_overrides = a->n_overrides;
  io.seed = a->seed;
  io.random = a->random;
  io.default_extent = a->default_extent;
  io.threads = a->interp_threads;
  fu_status st = fu_interp_make_inputs(f, &io, al, diag, in, n_in);
  if (base) fu_mem_free(&al, base, base_bytes);
  return st;
}

static const fu_input_override *override_for(const run_args *a, const fu_value *v) {
  for (uint32_t i = 0; i < a->n_overrides; i++) {
    const char *n = a->overrides[i].name;
    if (n[0] == '%') n++;
    if (v->name && strcmp(n, v->name) == 0) return &a->overrides[i];
  }
  return NULL;
}

void run_describe_source(fu_strbuf *sb, const run_args *a, const fu_op *op) {
  const fu_input_override *o = override_for(a, op->results[0]);
  if (o) {
    static const char *names[] = {"example", "random", "zeros", "ones", "npy"};
    if (o->source == FU_INPUT_NPY)
      fu_strbuf_printf(sb, "npy \"%s\"", o->npy_path);
    else if (o->source == FU_INPUT_RANDOM)
      fu_strbuf_printf(sb, "random seed=%llu", (unsigned long long)a->seed);
    else
      fu_strbuf_puts(sb, names[o->source]);
    return;
  }
  const fu_example *ex = &op->u.input.example;
  switch (ex->init) {
  case FU_INIT_NONE: fu_strbuf_printf(sb, "random seed=%llu", (unsigned long long)a->seed); break;
  case FU_INIT_RANDN: fu_strbuf_printf(sb, "randn seed=%llu", (unsigned long long)ex->seed); break;
  case FU_INIT_RAND: fu_strbuf_printf(sb, "rand seed=%llu", (unsigned long long)ex->seed); break;
  case FU_INIT_RANDINT:
    fu_strbuf_printf(sb, "randint [%lld, %lld) seed=%llu", (long long)ex->low, (long long)ex->high,
                     (unsigned long long)ex->seed);
    break;
  case FU_INIT_ZEROS: fu_strbuf_puts(sb, "zeros"); break;
  case FU_INIT_ONES: fu_strbuf_puts(sb, "ones"); break;
  case FU_INIT_VALUE: fu_strbuf_puts(sb, "value"); break;
  case FU_INIT_NPY: fu_strbuf_printf(sb, "npy \"%s\"", ex->npy_path ? ex->npy_path : "?"); break;
  }
}
