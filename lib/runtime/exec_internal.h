/* fuser runtime: the executor's state, shared with the benchmark. */
#ifndef FUSER_RUNTIME_EXEC_INTERNAL_H
#define FUSER_RUNTIME_EXEC_INTERNAL_H

#include "internal.h"

typedef struct fu_rt_exec_slot {
  unsigned char bytes[8]; /* a device address or an immediate */
} fu_rt_exec_slot;

typedef struct fu_rt_exec_launch {
  fu_rt_func fn;
  void **params;          /* params[i] = slots[i].bytes, as cuLaunchKernel takes them */
  fu_rt_exec_slot *slots;
} fu_rt_exec_launch;

struct fu_rt_exec {
  fu_rt *rt;
  const fu_rt_plan *plan;
  fu_rt_module *mod;
  const fu_arg *inputs;
  fu_diag_engine *diag;
  fu_rt_ptr *ptrs;              /* per plan buffer */
  fu_rt_exec_launch *launches;  /* per plan launch */
};

/* Queues every non-empty launch in order; with sync_each, waits after each
 * one so that a failure names its kernel.  Errors get a note at the
 * segment.  The caller has pointed rt->diag at e->diag. */
fu_status fu_rt_exec_launch_all(fu_rt_exec *e, bool sync_each);
/* Queues launch l on `stream`: its kernel, or its cuBLASLt call. */
fu_status fu_rt_exec_launch_one(fu_rt_exec *e, uint32_t l, CUstream stream);
/* Queues every non-empty launch on its stream (streams.c): the side
 * stream's launches start after what the runtime's stream holds so far,
 * and the runtime's stream goes on only after them. */
fu_status fu_rt_exec_launch_streams(fu_rt_exec *e);

#endif
