/* interp_bench: time the reference interpreter on a .fir file, as
 * fuser-run --device=cpu (and with --bounded as fuser-run --check, which
 * also carries the error bounds) runs it, and print a checksum of the
 * outputs and bounds so two builds or thread counts can be compared bit
 * for bit (docs/performance.md, "The reference interpreter").
 *
 *   interp_bench FILE.fir [--bounded] [--threads=N]
 *
 * Per fusion: the seconds to make the example inputs and to run, and the
 * FNV-1a hash of every output's and bound's bytes (row-major). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fuser/driver.h"
#include "fuser/interp.h"
#include "fuser/parse.h"
#include "fuser/verify.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * UINT64_C(0x100000001b3);
  return h;
}

/* Hash of args: each tensor's bytes (fresh contiguous tensors), each
 * scalar's value, a marker for none. */
static uint64_t hash_args(const fu_arg *a, uint32_t n) {
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (uint32_t i = 0; a && i < n; i++) {
    h = fnv(h, &a[i].kind, sizeof a[i].kind);
    if (a[i].kind == FU_ARG_TENSOR)
      h = fnv(h, a[i].tensor.data, (size_t)fu_host_tensor_numel(&a[i].tensor) * fu_dtype_size(a[i].tensor.dtype));
    else if (a[i].kind == FU_ARG_SCALAR)
      h = fnv(h, &a[i].scalar, sizeof a[i].scalar);
  }
  return h;
}

int main(int argc, char **argv) {
  const char *path = NULL;
  bool bounded = false;
  uint32_t threads = 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--bounded") == 0)
      bounded = true;
    else if (strncmp(argv[i], "--threads=", 10) == 0)
      threads = (uint32_t)atoi(argv[i] + 10);
    else
      path = argv[i];
  }
  fu_allocator alloc = fu_default_allocator();
  fu_source src = {path, NULL, 0, 1};
  char *data = NULL;
  if (!path || fu_read_file(path, alloc, &data, &src.len) != FU_OK) {
    fprintf(stderr, path ? "interp_bench: cannot read %s\n" : "usage: interp_bench FILE.fir [--bounded] [--threads=N]\n",
            path);
    return 2;
  }
  src.text = data;
  fu_diag_engine diag;
  fu_diag_init(&diag, alloc);
  fu_module *m = NULL;
  int rc = 0;
  if (fu_parse_module(&src, alloc, &diag, &m) != FU_OK || fu_verify_module(m, &diag) != FU_OK) {
    rc = 1;
  } else {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else snprintf(dir, sizeof dir, ".");
    for (fu_fusion *f = m->first; f; f = f->next) {
      fu_input_options io = {.base_dir = dir, .threads = threads};
      fu_interp_options o = {.threads = threads};
      fu_arg *in = NULL, *out = NULL, *bound = NULL;
      uint32_t n_in = 0, n_out = 0;
      double t0 = now();
      fu_status st = fu_interp_make_inputs(f, &io, alloc, &diag, &in, &n_in);
      double t1 = now();
      if (st == FU_OK)
        st = fu_interp_run_bounded(f, in, n_in, &o, alloc, &diag, &out, bounded ? &bound : NULL, &n_out);
      double t2 = now();
      if (st != FU_OK) {
        rc = 1;
      } else {
        printf("@%s: inputs %.2f s, run %.2f s, outputs 0x%016llx", f->name ? f->name : "?", t1 - t0, t2 - t1,
               (unsigned long long)hash_args(out, n_out));
        if (bounded) printf(", bounds 0x%016llx", (unsigned long long)hash_args(bound, n_out));
        printf("\n");
      }
      fu_args_free(in, n_in, alloc);
      fu_args_free(out, n_out, alloc);
      fu_args_free(bound, n_out, alloc);
    }
  }
  if (m) fu_module_free(m);
  fu_mem_free(&alloc, data, src.len + 1);
  return rc;
}
