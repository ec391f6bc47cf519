/* fuser cuda target: the `nvrtc` row of the target table
 * (include/fuser/target.h).  Its text output is CUDA C (`--emit=cuda`),
 * and its PTX is that CUDA C compiled by NVRTC, loaded at run time the
 * first time PTX is asked for: CUDA C needs nothing outside this folder. */
#include <string.h>
#include <time.h>

#include "fuser/device.h"
#include "internal.h"

typedef struct cu_target {
  fu_allocator alloc;
  fu_diag_engine *diag;
  cu_nvrtc *nvrtc; /* loaded on the first PTX call */
  bool nvrtc_failed;
  bool no_fast_paths;
  fu_target_timing timing;
} cu_target;

static double now_ms(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static fu_status cuda_open(const fu_target_options *o, fu_allocator alloc, fu_diag_engine *diag, void **state) {
  /* no pipeline to choose; the architecture comes with each call */
  cu_target *t = fu_mem_calloc(&alloc, 1, sizeof *t);
  *state = t;
  if (!t) return FU_ERR_NOMEM;
  t->alloc = alloc;
  t->diag = diag;
  t->no_fast_paths = o && o->no_fast_paths;
  return FU_OK;
}

static void cuda_close(void *state) {
  cu_target *t = state;
  if (!t) return;
  cu_nvrtc_close(t->nvrtc);
  fu_allocator a = t->alloc;
  fu_mem_free(&a, t, sizeof *t);
}

/* Text: the CUDA C.  PTX: the same text through NVRTC, timed apart (the
 * library's load is `load_ms`, the CUDA C `build_ms`, NVRTC `codegen_ms`). */
static fu_status cuda_emit(void *state, const fu_kernel *const *ks, uint32_t n, fu_target_output what,
                           const char *arch, fu_strbuf *out) {
  cu_target *t = state;
  memset(&t->timing, 0, sizeof t->timing);
  double t0 = now_ms(CLOCK_MONOTONIC), c0 = now_ms(CLOCK_THREAD_CPUTIME_ID), load_cpu = 0;
  cu_module m;
  memset(&m, 0, sizeof m);
  m.alloc = t->alloc;
  m.diag = t->diag;
  m.no_fast_paths = t->no_fast_paths;
  m.arena = fu_arena_new(t->alloc);
  if (!m.arena) return FU_ERR_NOMEM;
  fu_strbuf src;
  fu_strbuf_init(&src, t->alloc);
  fu_status st = cu_emit_module(&m, ks, n, arch, what == FU_TARGET_TEXT ? out : &src);
  double t1 = now_ms(CLOCK_MONOTONIC);
  t->timing.build_ms = t1 - t0;
  if (st == FU_OK && what == FU_TARGET_PTX) {
    if (!t->nvrtc) {
      double c1 = now_ms(CLOCK_THREAD_CPUTIME_ID);
      st = cu_nvrtc_open(t->alloc, t->diag, &t->nvrtc);
      load_cpu = now_ms(CLOCK_THREAD_CPUTIME_ID) - c1;
      t->timing.load_ms = now_ms(CLOCK_MONOTONIC) - t1;
    }
    double t2 = now_ms(CLOCK_MONOTONIC);
    if (st == FU_OK) {
      char name[300];
      snprintf(name, sizeof name, "%.280s.cu", n && ks[0]->name ? ks[0]->name : "fuser");
      st = cu_nvrtc_compile(t->nvrtc, src.data ? src.data : "", name, arch, (m.helpers & (CU_H_FP16 | CU_H_BF16)) != 0,
                            out);
    }
    t->timing.codegen_ms = now_ms(CLOCK_MONOTONIC) - t2;
  }
  t->timing.total_ms = now_ms(CLOCK_MONOTONIC) - t0;
  t->timing.cpu_ms = now_ms(CLOCK_THREAD_CPUTIME_ID) - c0 - load_cpu;
  fu_strbuf_free(&src);
  fu_arena_free(m.arena);
  return st;
}

/* Any sm_NN (sm_NNa): the CUDA C is the same for all; NVRTC says which it
 * cannot compile for. */
static bool cuda_arch_supported(const char *arch) { return fu_arch_sm(arch) != 0; }

static void cuda_timing(void *state, fu_target_timing *out) { *out = ((cu_target *)state)->timing; }

const fu_target_def fu_target_nvrtc = {
    "nvrtc", "cuda", "kernel IR to CUDA C, and to PTX through NVRTC (libnvrtc, loaded at run time)",
    cuda_open, cuda_close, cuda_emit, cuda_arch_supported, cuda_timing,
};
