/* fuser: the interpreter's element loops split over threads.
 *
 * A loop over [0, n) is cut into contiguous parts that depend only on n,
 * the thread count and the grain, never on timing; each part writes its
 * own output elements, so a result is the same bit for bit whatever the
 * thread count.  The calling thread runs the first part itself. */
#include <pthread.h>

#include "interp_internal.h"

typedef struct par_job {
  fu_interp_par_fn fn;
  void *ctx;
  uint32_t part;
  int64_t lo, hi;
} par_job;

static void *par_main(void *arg) {
  par_job *j = arg;
  j->fn(j->ctx, j->part, j->lo, j->hi);
  return NULL;
}

uint32_t fu_interp_par_parts(uint32_t threads, int64_t n, int64_t grain) {
  if (threads > FU_INTERP_MAX_THREADS) threads = FU_INTERP_MAX_THREADS;
  if (threads < 2 || n <= 0) return 1;
  if (grain < 1) grain = 1;
  int64_t by_grain = n / grain;
  if (by_grain < 2) return 1;
  return by_grain < (int64_t)threads ? (uint32_t)by_grain : threads;
}

void fu_interp_parallel(uint32_t threads, int64_t n, int64_t grain, fu_interp_par_fn fn, void *ctx) {
  uint32_t parts = fu_interp_par_parts(threads, n, grain);
  if (parts <= 1) {
    fn(ctx, 0, 0, n > 0 ? n : 0);
    return;
  }
  par_job jobs[FU_INTERP_MAX_THREADS];
  pthread_t tids[FU_INTERP_MAX_THREADS];
  bool started[FU_INTERP_MAX_THREADS];
  for (uint32_t p = 0; p < parts; p++) {
    jobs[p] = (par_job){fn, ctx, p, n / parts * p + (n % parts < p ? n % parts : p), 0};
    jobs[p].hi = jobs[p].lo + n / parts + (p < n % parts);
  }
  /* A thread that cannot start leaves its part to the calling thread. */
  for (uint32_t p = 1; p < parts; p++) started[p] = pthread_create(&tids[p], NULL, par_main, &jobs[p]) == 0;
  par_main(&jobs[0]);
  for (uint32_t p = 1; p < parts; p++) {
    if (started[p])
      pthread_join(tids[p], NULL);
    else
      par_main(&jobs[p]);
  }
}
