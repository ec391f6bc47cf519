/* fuser runtime: timing kernels with CUDA events.
 *
 * What the performance targets need, measured the same way for every
 * fusion: the median of at least 100 timed runs after a warm-up, with L2
 * flushed before each run (a write of twice its size), per kernel and for
 * the whole fusion, next to the device-to-device copy bandwidth measured in
 * the same process, so "% of copy" compares like with like.
 *
 * After each flush the GPU spins for a millisecond before the timed run,
 * as PyTorch's and nvFuser's harnesses do (torch.cuda._sleep): the flush
 * leaves L2 full of dirty lines, and a kernel timed right behind it pays
 * for writing them back.  Measured on an H200, that cost 8-12 us on each
 * 2^26-element kernel (the RMS norm of [65536, 1024]: 63.5 us under ncu,
 * 76 us timed behind the flush, as torch.compile's kernel of the same
 * duration timed at 68 us by its harness). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec_internal.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median, min and max of v[0..n) (v is reordered). */
static void summarize(double *v, uint32_t n, double *median, double *min, double *max) {
  qsort(v, n, sizeof *v, cmp_double);
  *min = v[0];
  *max = v[n - 1];
  *median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct event_set {
  CUevent *ev;
  uint32_t n;
} event_set;

static fu_status events_create(fu_rt *rt, event_set *s, uint32_t n) {
  s->n = 0;
  s->ev = fu_mem_calloc(&rt->alloc, n, sizeof *s->ev);
  if (!s->ev) return FU_ERR_NOMEM;
  for (uint32_t i = 0; i < n; i++) {
    fu_status st = fu_rt_check(rt, rt->api.event_create(&s->ev[i], CU_EVENT_DEFAULT), "cuEventCreate");
    if (st != FU_OK) return st;
    s->n++;
  }
  return FU_OK;
}

static void events_destroy(fu_rt *rt, event_set *s, uint32_t cap) {
  if (!s->ev) return;
  for (uint32_t i = 0; i < s->n; i++) fu_rt_check(rt, rt->api.event_destroy(s->ev[i]), "cuEventDestroy");
  fu_mem_free(&rt->alloc, s->ev, cap * sizeof *s->ev);
  s->ev = NULL;
}

static fu_status elapsed_us(fu_rt *rt, CUevent a, CUevent b, double *us) {
  float ms = 0;
  fu_status st = fu_rt_check(rt, rt->api.event_elapsed_time(&ms, a, b), "cuEventElapsedTime");
  *us = (double)ms * 1e3;
  return st;
}

/* A kernel that spins until `ns` nanoseconds of the global timer have
 * passed (one thread), and one that stores `v` into n 16-byte words from
 * p (a grid-stride loop): the flush as PyTorch's harness writes it (its
 * fill_ is a kernel), where cuMemsetD32Async may take another path. */
static const char settle_ptx[] = ".version 7.0\n.target sm_70\n.address_size 64\n"
                                 ".visible .entry fuser_bench_fill(.param .u64 fuser_bench_fill_p, "
                                 ".param .u64 fuser_bench_fill_n, .param .u32 fuser_bench_fill_v)\n{\n"
                                 "  .reg .pred %p<2>;\n  .reg .b32 %r<6>;\n  .reg .b64 %rd<9>;\n"
                                 "  ld.param.u64 %rd1, [fuser_bench_fill_p];\n"
                                 "  ld.param.u64 %rd2, [fuser_bench_fill_n];\n"
                                 "  ld.param.u32 %r1, [fuser_bench_fill_v];\n"
                                 "  mov.u32 %r2, %ctaid.x;\n  mov.u32 %r3, %ntid.x;\n  mov.u32 %r4, %tid.x;\n"
                                 "  mov.u32 %r5, %nctaid.x;\n  mul.wide.u32 %rd3, %r2, %r3;\n  cvt.u64.u32 %rd4, %r4;\n"
                                 "  add.u64 %rd5, %rd3, %rd4;\n  mul.wide.u32 %rd6, %r5, %r3;\n"
                                 "$L_fill:\n  setp.ge.u64 %p1, %rd5, %rd2;\n  @%p1 bra $L_done;\n"
                                 "  shl.b64 %rd7, %rd5, 4;\n  add.u64 %rd8, %rd1, %rd7;\n"
                                 "  st.global.v4.u32 [%rd8], {%r1, %r1, %r1, %r1};\n"
                                 "  add.u64 %rd5, %rd5, %rd6;\n  bra $L_fill;\n$L_done:\n  ret;\n}\n"
                                 ".visible .entry fuser_bench_settle(.param .u64 fuser_bench_settle_ns)\n{\n"
                                 "  .reg .pred %p<2>;\n  .reg .b64 %rd<5>;\n"
                                 "  ld.param.u64 %rd1, [fuser_bench_settle_ns];\n"
                                 "  mov.u64 %rd2, %globaltimer;\n"
                                 "$L_spin:\n  mov.u64 %rd3, %globaltimer;\n  sub.s64 %rd4, %rd3, %rd2;\n"
                                 "  setp.lt.s64 %p1, %rd4, %rd1;\n  @%p1 bra $L_spin;\n  ret;\n}\n";

/* The largest copy that leaves room: 1 GiB each way when memory allows. */
static size_t copy_size(fu_rt *rt, size_t want) {
  size_t free_b = 0, total_b = 0;
  if (rt->api.mem_get_info(&free_b, &total_b) != CUDA_SUCCESS) return want;
  while (want > (64u << 20) && 2 * want + (256u << 20) > free_b) want /= 2;
  return want;
}

fu_status fu_rt_copy_bandwidth(fu_rt *rt, size_t bytes, uint32_t iters, double *gbs) {
  *gbs = 0;
  if (!iters) iters = 20;
  fu_rt_ptr src = 0, dst = 0;
  event_set ev = {0};
  double *t = fu_mem_calloc(&rt->alloc, iters, sizeof *t);
  if (!t) return FU_ERR_NOMEM;
  fu_status st = fu_rt_mem_alloc(rt, bytes, &src);
  if (st == FU_OK) st = fu_rt_mem_alloc(rt, bytes, &dst);
  if (st == FU_OK) st = fu_rt_mem_fill(rt, src, 0x3c, bytes);
  if (st == FU_OK) st = events_create(rt, &ev, 2);
  char what[64];
  snprintf(what, sizeof what, "cuMemcpyDtoDAsync(%zu bytes)", bytes);
  for (uint32_t i = 0; i < 2 && st == FU_OK; i++) /* warm-up */
    st = fu_rt_check(rt, rt->api.memcpy_dtod_async((CUdeviceptr)dst, (CUdeviceptr)src, bytes, rt->stream), what);
  if (st == FU_OK) st = fu_rt_synchronize(rt);
  for (uint32_t i = 0; i < iters && st == FU_OK; i++) {
    st = fu_rt_check(rt, rt->api.event_record(ev.ev[0], rt->stream), "cuEventRecord");
    if (st == FU_OK)
      st = fu_rt_check(rt, rt->api.memcpy_dtod_async((CUdeviceptr)dst, (CUdeviceptr)src, bytes, rt->stream), what);
    if (st == FU_OK) st = fu_rt_check(rt, rt->api.event_record(ev.ev[1], rt->stream), "cuEventRecord");
    if (st == FU_OK) st = fu_rt_check(rt, rt->api.event_synchronize(ev.ev[1]), "cuEventSynchronize");
    if (st == FU_OK) st = elapsed_us(rt, ev.ev[0], ev.ev[1], &t[i]);
  }
  if (st == FU_OK) {
    double med, mn, mx;
    summarize(t, iters, &med, &mn, &mx);
    *gbs = med > 0 ? 2.0 * (double)bytes / (med * 1e-6) / 1e9 : 0;
  }
  events_destroy(rt, &ev, 2);
  fu_rt_mem_free(rt, src);
  fu_rt_mem_free(rt, dst);
  fu_mem_free(&rt->alloc, t, iters * sizeof *t);
  return st;
}

/* What the flush before a timed run needs: the buffer it writes, how
 * (a store kernel or cuMemsetD32Async), and the spin after it. */
typedef struct bench_flush {
  fu_rt_ptr buf;
  size_t bytes;
  bool with_kernel;
  const fu_rt_func *fill, *spin;
  uint64_t settle_ns;
} bench_flush;

/* Writes the flush buffer (a value that changes with the iteration, so no
 * write is skipped), then spins the GPU for settle_ns. */
static fu_status flush_l2(fu_rt *rt, const bench_flush *f, uint32_t it) {
  fu_rt_ptr buf = f->buf;
  uint64_t settle_ns = f->settle_ns;
  uint32_t value = 0x01010101u * (it & 0xff);
  fu_rt_launch_config one = {{1, 1, 1}, {1, 1, 1}, 0, 0};
  fu_status st;
  if (f->with_kernel) {
    fu_rt_launch_config grid = {{1024, 1, 1}, {256, 1, 1}, 0, 0};
    uint64_t words = f->bytes / 16;
    void *fill_params[] = {&buf, &words, &value};
    st = fu_rt_launch(rt, f->fill, &grid, fill_params);
  } else {
    char what[64];
    snprintf(what, sizeof what, "cuMemsetD32Async(%zu bytes)", f->bytes);
    st = fu_rt_check(rt, rt->api.memset_d32_async((CUdeviceptr)buf, value, f->bytes / 4, rt->stream), what);
  }
  void *spin_params[] = {&settle_ns};
  if (st == FU_OK) st = fu_rt_launch(rt, f->spin, &one, spin_params);
  return st;
}

static void set_timing(fu_rt_timing *t, const char *name, double *samples, uint32_t n, uint64_t bytes,
                       double copy_gbs) {
  t->name = name;
  summarize(samples, n, &t->median_us, &t->min_us, &t->max_us);
  t->bytes = bytes;
  t->gbs = t->median_us > 0 ? (double)bytes / (t->median_us * 1e-6) / 1e9 : 0;
  t->pct_copy = copy_gbs > 0 ? 100.0 * t->gbs / copy_gbs : 0;
}

fu_status fu_rt_exec_bench(fu_rt_exec *e, const fu_rt_bench_options *opts, fu_rt_bench_result *out) {
  fu_rt *rt = e->rt;
  const fu_rt_plan *p = e->plan;
  memset(out, 0, sizeof *out);
  out->alloc = rt->alloc;
  fu_rt_bench_options o;
  memset(&o, 0, sizeof o);
  if (opts) o = *opts;
  out->iters = o.iters ? o.iters : 100;
  out->warmup = o.warmup ? o.warmup : 10;
  fu_diag_engine *saved = rt->diag;
  rt->diag = e->diag;

  uint32_t k = 0; /* launches that run */
  for (uint32_t l = 0; l < p->n_launches; l++) k += !p->launches[l].empty;
  uint32_t iters = out->iters;
  /* a plan with launches on two streams is timed twice an iteration: one
   * after another (each kernel bracketed), then beside each other */
  bool conc = p->concurrent;
  out->concurrent = conc;
  fu_rt_ptr flush = 0;
  fu_rt_module *settle = NULL;
  fu_rt_func spin = {NULL, NULL}, fill = {NULL, NULL};
  uint64_t settle_ns = 0;
  event_set ev = {0};
  double *samples = fu_mem_calloc(&rt->alloc, (size_t)(k + 2) * iters, sizeof *samples);
  out->kernels = fu_mem_calloc(&rt->alloc, k ? k : 1, sizeof *out->kernels);
  fu_status st = samples && out->kernels ? FU_OK : FU_ERR_NOMEM;
  if (out->kernels) out->n_kernels = k;

  /* The copy roofline first, so the fusion's timing runs on a settled
   * device. */
  out->copy_bytes = copy_size(rt, o.copy_bytes ? o.copy_bytes : (size_t)1 << 30);
  if (st == FU_OK) st = fu_rt_copy_bandwidth(rt, out->copy_bytes, 20, &out->copy_gbs);

  if (!o.no_flush && st == FU_OK) {
    size_t l2 = rt->info.desc.l2_bytes ? rt->info.desc.l2_bytes : (size_t)64 << 20;
    out->flush_bytes = ((o.flush_bytes ? o.flush_bytes : 2 * l2) + 15) & ~(size_t)15;
    out->flush_kernel = o.flush_kernel;
    st = fu_rt_mem_alloc(rt, out->flush_bytes, &flush);
    out->settle_us = o.settle_us ? o.settle_us : 1000;
    settle_ns = (uint64_t)out->settle_us * 1000;
    if (st == FU_OK) st = fu_rt_module_load(rt, settle_ptx, sizeof settle_ptx - 1, "fuser_bench_settle", &settle);
    if (st == FU_OK) st = fu_rt_module_function(settle, "fuser_bench_settle", &spin);
    if (st == FU_OK && o.flush_kernel) st = fu_rt_module_function(settle, "fuser_bench_fill", &fill);
  }
  if (st == FU_OK) st = events_create(rt, &ev, k + 3);
  for (uint32_t i = 0; i < out->warmup && st == FU_OK; i++) st = fu_rt_exec_launch_all(e, false);
  if (st == FU_OK) st = fu_rt_synchronize(rt);

  bench_flush fl = {flush, out->flush_bytes, o.flush_kernel, &fill, &spin, settle_ns};
  for (uint32_t it = 0; it < iters && st == FU_OK; it++) {
    if (flush) st = flush_l2(rt, &fl, it);
    uint32_t j = 0;
    if (st == FU_OK) st = fu_rt_check(rt, rt->api.event_record(ev.ev[0], rt->stream), "cuEventRecord");
    for (uint32_t l = 0; l < p->n_launches && st == FU_OK; l++) {
      const fu_rt_launch_plan *lp = &p->launches[l];
      if (lp->empty) continue;
      st = fu_rt_exec_launch_one(e, l, rt->stream);
      if (st == FU_OK) st = fu_rt_check(rt, rt->api.event_record(ev.ev[++j], rt->stream), "cuEventRecord");
    }
    if (st == FU_OK) st = fu_rt_check(rt, rt->api.event_synchronize(ev.ev[k]), "cuEventSynchronize");
    for (uint32_t i = 0; i < k && st == FU_OK; i++) st = elapsed_us(rt, ev.ev[i], ev.ev[i + 1], &samples[(size_t)i * iters + it]);
    if (st == FU_OK) st = elapsed_us(rt, ev.ev[0], ev.ev[k], &samples[(size_t)k * iters + it]);
    if (!conc || st != FU_OK) continue;
    /* beside each other: events k + 1 and k + 2 around the fork and join */
    if (flush) st = flush_l2(rt, &fl, it);
    if (st == FU_OK) st = fu_rt_check(rt, rt->api.event_record(ev.ev[k + 1], rt->stream), "cuEventRecord");
    if (st == FU_OK) st = fu_rt_exec_launch_streams(e);
    if (st == FU_OK) st = fu_rt_check(rt, rt->api.event_record(ev.ev[k + 2], rt->stream), "cuEventRecord");
    if (st == FU_OK) st = fu_rt_check(rt, rt->api.event_synchronize(ev.ev[k + 2]), "cuEventSynchronize");
    if (st == FU_OK) st = elapsed_us(rt, ev.ev[k + 1], ev.ev[k + 2], &samples[(size_t)(k + 1) * iters + it]);
  }

  if (st == FU_OK) {
    uint32_t i = 0;
    for (uint32_t l = 0; l < p->n_launches; l++) {
      const fu_rt_launch_plan *lp = &p->launches[l];
      if (lp->empty) continue;
      set_timing(&out->kernels[i], fu_rt_launch_name(lp), &samples[(size_t)i * iters], iters,
                 lp->bytes_read + lp->bytes_written, out->copy_gbs);
      i++;
    }
    uint64_t bytes = p->bytes_read + p->bytes_written;
    if (k && conc) {
      set_timing(&out->total, "total", &samples[(size_t)(k + 1) * iters], iters, bytes, out->copy_gbs);
      set_timing(&out->sequential, "one after another", &samples[(size_t)k * iters], iters, bytes, out->copy_gbs);
    } else if (k) {
      set_timing(&out->total, "total", &samples[(size_t)k * iters], iters, bytes, out->copy_gbs);
    } else {
      out->total.name = "total";
    }
  }
  events_destroy(rt, &ev, k + 3);
  if (settle) fu_rt_module_unload(settle);
  fu_rt_mem_free(rt, flush);
  if (samples) fu_mem_free(&rt->alloc, samples, (size_t)(k + 2) * iters * sizeof *samples);
  rt->diag = saved;
  if (st != FU_OK) fu_rt_bench_result_free(out);
  return st;
}

void fu_rt_bench_result_free(fu_rt_bench_result *r) {
  if (!r || !r->kernels) return;
  fu_mem_free(&r->alloc, r->kernels, (r->n_kernels ? r->n_kernels : 1) * sizeof *r->kernels);
  r->kernels = NULL;
  r->n_kernels = 0;
}
