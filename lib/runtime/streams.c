/* fuser runtime: launches that need no other launch run on a second
 * stream, beside the others.
 *
 * A fusion's segments run in op order on the runtime's stream.  A kernel
 * that reads no buffer another launch writes, and writes none another
 * launch touches, depends on nothing and nothing depends on it: seed000's
 * bias gradient (a reduction of T4) beside its GELU backward (of T5 and
 * T6).  On a second stream it runs beside them, and the two kernels' ramps,
 * tails and launch gaps overlap: on the H100 seed000 took 188.2 us so
 * against 192.0 one after another, its pow_sum 145.2 against 149.1, and
 * the same fusion at [1, 64, 4096] 7.0 against 10.5 (whichever stream's
 * kernel was queued first; docs/performance.md).  Only --bench's runs go
 * so: every other run waits after each kernel, to name a failing one. */
#include <string.h>

#include "exec_internal.h"

enum { MAX_GEMM_BUFFERS = 4 };

/* Whether argument i of kernel launch lp is written by it: a workspace, or
 * a tensor parameter not marked readonly (an output written in place into
 * an input's buffer included). */
static bool writes_arg(const fu_rt_plan *p, const fu_rt_launch_plan *lp, uint32_t i) {
  int32_t b = lp->args[i].buffer;
  if (b < 0) return false;
  return p->buffers[b].kind == FU_RT_BUF_WORKSPACE || !lp->kernel->params[i]->readonly;
}

/* The buffers launch lp touches, and whether it writes each (a buffer
 * may come twice).  Returns how many; cap is at least the launch's
 * argument count and MAX_GEMM_BUFFERS. */
static uint32_t launch_buffers(const fu_rt_plan *p, const fu_rt_launch_plan *lp, int32_t *buf, bool *wr) {
  uint32_t n = 0;
  if (lp->gemm) {
    const fu_rt_gemm *g = lp->gemm;
    int32_t b[MAX_GEMM_BUFFERS] = {g->buf_a, g->buf_b, g->buf_bias, g->buf_d};
    for (uint32_t i = 0; i < MAX_GEMM_BUFFERS; i++)
      if (b[i] >= 0) {
        buf[n] = b[i];
        wr[n++] = i == 3;
      }
    return n;
  }
  for (uint32_t i = 0; i < lp->n_args; i++)
    if (lp->args[i].buffer >= 0) {
      buf[n] = lp->args[i].buffer;
      wr[n++] = writes_arg(p, lp, i);
    }
  return n;
}

/* Gives each launch its stream: a kernel launch (not a cuBLASLt call, whose
 * workspace all such calls share) that conflicts with no other launch goes
 * to the side stream; when every launch could, the first stays.  Counts,
 * per buffer, the launches that touch it and those that write it. */
fu_status fu_rt_plan_assign_streams(fu_rt_plan *p) {
  p->concurrent = false;
  uint32_t k = 0, max_bufs = MAX_GEMM_BUFFERS;
  for (uint32_t l = 0; l < p->n_launches; l++) {
    p->launches[l].stream = 0;
    k += !p->launches[l].empty;
    if (p->launches[l].n_args > max_bufs) max_bufs = p->launches[l].n_args;
  }
  if (k < 2 || p->n_buffers == 0) return FU_OK;
  size_t nb = p->n_buffers;
  uint32_t *touch = fu_mem_calloc(&p->alloc, nb, sizeof *touch), *write = fu_mem_calloc(&p->alloc, nb, sizeof *write);
  uint32_t *seen_t = fu_mem_calloc(&p->alloc, nb, sizeof *seen_t), *seen_w = fu_mem_calloc(&p->alloc, nb, sizeof *seen_w);
  int32_t *buf = fu_mem_calloc(&p->alloc, max_bufs, sizeof *buf);
  bool *wr = fu_mem_calloc(&p->alloc, max_bufs, sizeof *wr), *mine = fu_mem_calloc(&p->alloc, nb, sizeof *mine);
  fu_status st = touch && write && seen_t && seen_w && buf && wr && mine ? FU_OK : FU_ERR_NOMEM;
  for (uint32_t l = 0; l < p->n_launches && st == FU_OK; l++) {
    if (p->launches[l].empty) continue;
    uint32_t n = launch_buffers(p, &p->launches[l], buf, wr);
    for (uint32_t i = 0; i < n; i++) {
      if (seen_t[buf[i]] != l + 1) touch[buf[i]]++;
      seen_t[buf[i]] = l + 1;
      if (wr[i] && seen_w[buf[i]] != l + 1) write[buf[i]]++;
      if (wr[i]) seen_w[buf[i]] = l + 1;
    }
  }
  uint32_t free_launches = 0, first_free = UINT32_MAX;
  for (uint32_t l = 0; l < p->n_launches && st == FU_OK; l++) {
    fu_rt_launch_plan *lp = &p->launches[l];
    if (lp->empty || lp->gemm) continue;
    uint32_t n = launch_buffers(p, lp, buf, wr);
    for (uint32_t i = 0; i < n; i++) mine[buf[i]] = false;
    for (uint32_t i = 0; i < n; i++) mine[buf[i]] |= wr[i];
    bool alone = true;
    for (uint32_t i = 0; i < n && alone; i++) {
      int32_t b = buf[i];
      alone = mine[b] ? touch[b] == 1 : write[b] == 0;
    }
    if (!alone) continue;
    lp->stream = 1;
    free_launches++;
    if (first_free == UINT32_MAX) first_free = l;
  }
  if (st == FU_OK && free_launches == k) {
    p->launches[first_free].stream = 0;
    free_launches--;
  }
  p->concurrent = st == FU_OK && free_launches > 0;
  fu_mem_free(&p->alloc, touch, nb * sizeof *touch);
  fu_mem_free(&p->alloc, write, nb * sizeof *write);
  fu_mem_free(&p->alloc, seen_t, nb * sizeof *seen_t);
  fu_mem_free(&p->alloc, seen_w, nb * sizeof *seen_w);
  fu_mem_free(&p->alloc, mine, nb * sizeof *mine);
  fu_mem_free(&p->alloc, buf, max_bufs * sizeof *buf);
  fu_mem_free(&p->alloc, wr, max_bufs * sizeof *wr);
  return st;
}

fu_status fu_rt_side_stream_ready(fu_rt *rt) {
  fu_status st = FU_OK;
  if (!rt->side_stream)
    st = fu_rt_check(rt, rt->api.stream_create(&rt->side_stream, CU_STREAM_DEFAULT), "cuStreamCreate (the side stream)");
  /* timing off: these events only order the streams */
  if (st == FU_OK && !rt->fork_ev)
    st = fu_rt_check(rt, rt->api.event_create(&rt->fork_ev, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  if (st == FU_OK && !rt->join_ev)
    st = fu_rt_check(rt, rt->api.event_create(&rt->join_ev, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  return st;
}

void fu_rt_side_stream_close(fu_rt *rt) {
  if (rt->fork_ev) fu_rt_check(rt, rt->api.event_destroy(rt->fork_ev), "cuEventDestroy");
  if (rt->join_ev) fu_rt_check(rt, rt->api.event_destroy(rt->join_ev), "cuEventDestroy");
  if (rt->side_stream) fu_rt_check(rt, rt->api.stream_destroy(rt->side_stream), "cuStreamDestroy");
  rt->fork_ev = rt->join_ev = NULL;
  rt->side_stream = NULL;
}

/* The side stream waits for what the runtime's stream holds (the inputs'
 * uploads, a flush), its launches are queued there, and the runtime's
 * stream waits for them before anything queued after. */
fu_status fu_rt_exec_launch_streams(fu_rt_exec *e) {
  fu_rt *rt = e->rt;
  const fu_rt_plan *p = e->plan;
  fu_status st = fu_rt_side_stream_ready(rt);
  if (st == FU_OK) st = fu_rt_check(rt, rt->api.event_record(rt->fork_ev, rt->stream), "cuEventRecord");
  if (st == FU_OK) st = fu_rt_check(rt, rt->api.stream_wait_event(rt->side_stream, rt->fork_ev, 0), "cuStreamWaitEvent");
  for (uint32_t l = 0; l < p->n_launches && st == FU_OK; l++) {
    const fu_rt_launch_plan *lp = &p->launches[l];
    if (lp->empty) continue;
    st = fu_rt_exec_launch_one(e, l, lp->stream ? rt->side_stream : rt->stream);
    if (st != FU_OK)
      fu_note(e->diag, lp->segment ? lp->segment->loc : fu_loc_none(), "while running kernel '@%s' on the %s stream",
              fu_rt_launch_name(lp), lp->stream ? "side" : "runtime's");
  }
  if (st == FU_OK) st = fu_rt_check(rt, rt->api.event_record(rt->join_ev, rt->side_stream), "cuEventRecord");
  if (st == FU_OK) st = fu_rt_check(rt, rt->api.stream_wait_event(rt->stream, rt->join_ev, 0), "cuStreamWaitEvent");
  return st;
}
