/* fuser runtime: device memory and host-side layout helpers. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

fu_status fu_rt_mem_alloc(fu_rt *rt, size_t bytes, fu_rt_ptr *out) {
  *out = 0;
  CUdeviceptr p = 0;
  char what[64];
  snprintf(what, sizeof what, "cuMemAlloc(%zu bytes)", bytes);
  fu_status st = fu_rt_check(rt, rt->api.mem_alloc(&p, bytes ? bytes : 1), what);
  if (st == FU_OK) *out = (fu_rt_ptr)p;
  return st;
}

void fu_rt_mem_free(fu_rt *rt, fu_rt_ptr p) {
  if (p) fu_rt_check(rt, rt->api.mem_free((CUdeviceptr)p), "cuMemFree");
}

fu_status fu_rt_mem_upload(fu_rt *rt, fu_rt_ptr dst, const void *src, size_t bytes) {
  if (!bytes) return FU_OK;
  char what[64];
  snprintf(what, sizeof what, "cuMemcpyHtoD(%zu bytes)", bytes);
  return fu_rt_check(rt, rt->api.memcpy_htod((CUdeviceptr)dst, src, bytes), what);
}

fu_status fu_rt_mem_download(fu_rt *rt, void *dst, fu_rt_ptr src, size_t bytes) {
  if (!bytes) return FU_OK;
  char what[64];
  snprintf(what, sizeof what, "cuMemcpyDtoH(%zu bytes)", bytes);
  return fu_rt_check(rt, rt->api.memcpy_dtoh(dst, (CUdeviceptr)src, bytes), what);
}

fu_status fu_rt_mem_info(fu_rt *rt, size_t *free_bytes, size_t *total_bytes) {
  *free_bytes = *total_bytes = 0;
  if (!rt->api.mem_get_info) return FU_ERR_UNSUPPORTED;
  return fu_rt_check(rt, rt->api.mem_get_info(free_bytes, total_bytes), "cuMemGetInfo");
}

fu_status fu_rt_mem_fill(fu_rt *rt, fu_rt_ptr dst, uint8_t byte, size_t bytes) {
  if (!bytes) return FU_OK;
  char what[64];
  snprintf(what, sizeof what, "cuMemsetD8(%zu bytes)", bytes);
  return fu_rt_check(rt, rt->api.memset_d8((CUdeviceptr)dst, byte, bytes), what);
}

fu_status fu_rt_synchronize(fu_rt *rt) {
  return fu_rt_check(rt, rt->api.stream_synchronize(rt->stream), "cuStreamSynchronize");
}

bool fu_rt_span_elems(int32_t rank, const int64_t *shape, const int64_t *strides, int64_t *out) {
  int64_t span = 1;
  for (int32_t d = 0; d < rank; d++) {
    if (shape[d] == 0) {
      *out = 0;
      return true;
    }
  }
  for (int32_t d = 0; d < rank; d++) {
    int64_t step;
    if (shape[d] < 0 || strides[d] < 0) return false;
    if (__builtin_mul_overflow(shape[d] - 1, strides[d], &step) || __builtin_add_overflow(span, step, &span))
      return false;
  }
  *out = span;
  return true;
}

/* An odometer over the multi-index, so that tensors of any rank and any
 * strides copy without recursion; the innermost dim runs as a tight loop. */
void fu_rt_strided_copy(void *dst, const int64_t *dst_strides, const void *src, const int64_t *src_strides,
                        int32_t rank, const int64_t *shape, size_t elem_size) {
  for (int32_t d = 0; d < rank; d++)
    if (shape[d] == 0) return;
  unsigned char *o = dst;
  const unsigned char *in = src;
  if (rank == 0) {
    memcpy(o, in, elem_size);
    return;
  }
  int64_t idx[FU_MAX_RANK] = {0};
  int32_t inner = rank - 1;
  int64_t n_inner = shape[inner];
  int64_t ds = dst_strides[inner] * (int64_t)elem_size, ss = src_strides[inner] * (int64_t)elem_size;
  for (;;) {
    int64_t doff = 0, soff = 0;
    for (int32_t d = 0; d < inner; d++) {
      doff += idx[d] * dst_strides[d];
      soff += idx[d] * src_strides[d];
    }
    unsigned char *op = o + doff * (int64_t)elem_size;
    const unsigned char *ip = in + soff * (int64_t)elem_size;
    if (ds == (int64_t)elem_size && ss == (int64_t)elem_size) {
      memcpy(op, ip, (size_t)n_inner * elem_size);
    } else {
      for (int64_t i = 0; i < n_inner; i++) memcpy(op + i * ds, ip + i * ss, elem_size);
    }
    int32_t d = inner - 1;
    while (d >= 0 && ++idx[d] == shape[d]) idx[d--] = 0;
    if (d < 0) break;
  }
}
