/* fuser runtime: state shared by the files of lib/runtime. */
#ifndef FUSER_RUNTIME_INTERNAL_H
#define FUSER_RUNTIME_INTERNAL_H

#include "cuda_api.h"
#include "fuser/runtime.h"

struct fu_rt {
  fu_allocator alloc;
  fu_diag_engine *diag;
  fu_cuda_api api;
  void *lib;            /* dlopen handle; NULL when the caller gave the table */
  CUdevice device;
  CUcontext ctx;        /* the primary context, retained */
  bool ctx_retained;
  CUstream stream;
  CUstream side_stream; /* launches beside the others (streams.c), created at the first such plan */
  CUevent fork_ev, join_ev;
  fu_rt_device_info info;
  CUresult fault;       /* a sticky error a kernel left (CUDA_SUCCESS: none) */
  const char *libcublaslt_path; /* fu_rt_options' */
  struct fu_rt_lt *lt;  /* cuBLASLt, loaded at the first matmul segment (cublaslt.c) */
};

/* cuBLASLt (cublaslt.c): loaded once per runtime, at the first matmul
 * segment `segment` (at `loc`); an error naming the library when it is
 * missing.  fu_rt_gemm_run queues one call on `stream` with the
 * buffers' addresses `ptrs`. */
fu_status fu_rt_lt_open(fu_rt *rt, fu_loc loc, const char *segment);
void fu_rt_lt_close(fu_rt *rt);
fu_status fu_rt_gemm_run(fu_rt *rt, CUstream stream, const fu_rt_gemm *g, const fu_rt_ptr *ptrs, fu_loc loc);

/* fu_rt_launch on `stream` (the runtime's own, or the side stream). */
fu_status fu_rt_launch_on(fu_rt *rt, CUstream stream, const fu_rt_func *fn, const fu_rt_launch_config *cfg,
                          void **params);

/* The side stream and its events (streams.c): made at the first use,
 * released by fu_rt_close. */
fu_status fu_rt_side_stream_ready(fu_rt *rt);
void fu_rt_side_stream_close(fu_rt *rt);
/* Each launch's stream and the plan's `concurrent` (streams.c), once the
 * plan's launches and buffers are made. */
fu_status fu_rt_plan_assign_streams(fu_rt_plan *p);

struct fu_rt_module {
  fu_rt *rt;
  CUmodule module;
  char *name;
  char *info_log;
};

/* Reports a failed driver call `what` ("cuMemAlloc(1024 bytes)") at `loc`
 * as "<what> failed: CUDA_ERROR_X: <description>" and returns
 * FU_ERR_RUNTIME; returns FU_OK for CUDA_SUCCESS. */
fu_status fu_rt_check_at(fu_rt *rt, CUresult r, fu_loc loc, const char *what);
static inline fu_status fu_rt_check(fu_rt *rt, CUresult r, const char *what) {
  return fu_rt_check_at(rt, r, fu_loc_none(), what);
}
/* "CUDA_ERROR_NO_DEVICE" (or "CUresult 999" when the driver has no name). */
const char *fu_rt_error_name(const fu_cuda_api *api, CUresult r);

/* Loads the driver's entry points from `path` into `api`.  False with the
 * reason in `why` (dlerror's text, or the missing symbol). */
bool fu_cuda_api_load(const char *path, fu_cuda_api *api, void **lib, fu_strbuf *why);
void fu_cuda_api_unload(void *lib);

/* Strided element copy between two host layouts of the same shape: element
 * by element, bytes as they are (no conversion, NaN payloads kept). */
void fu_rt_strided_copy(void *dst, const int64_t *dst_strides, const void *src, const int64_t *src_strides,
                        int32_t rank, const int64_t *shape, size_t elem_size);
/* Elements spanned by a layout: 1 + sum (shape-1)*stride, 0 when empty;
 * false on overflow. */
bool fu_rt_span_elems(int32_t rank, const int64_t *shape, const int64_t *strides, int64_t *out);

#endif
