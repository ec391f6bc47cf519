/* fuser runtime: the table of CUDA driver entry points.
 *
 * The runtime never calls the driver directly: it loads libcuda.so.1 with
 * dlopen and looks up each entry point by its versioned symbol name (the
 * name cuda.h's macros map the plain name to, e.g. cuMemAlloc ->
 * cuMemAlloc_v2).  So a binary linked against nothing but libdl starts on a
 * machine with no driver and says so, and tests can hand fu_rt_open a table
 * of their own (a fake device in host memory).
 *
 * Each member has the exact type of the cuda.h declaration (__typeof__ of
 * the function), so a mismatch is a compile error; the types they take
 * (CUlaunchConfig, CUlaunchAttribute, ...) are cuda.h's own, so their
 * layouts are the driver's ABI.
 *
 * Every entry point must be there, except the optional ones
 * (optional_entry in cuda_api.c: cuLaunchKernelEx): a driver without one
 * loads, the member is NULL, and only what needs it fails, saying so. */
#ifndef FUSER_RUNTIME_CUDA_API_H
#define FUSER_RUNTIME_CUDA_API_H

#include <cuda.h>

/* X(member, function as cuda.h declares it, symbol to look up) */
#define FU_CUDA_ENTRY_POINTS(X)                                              \
  X(get_error_name, cuGetErrorName, "cuGetErrorName")                        \
  X(get_error_string, cuGetErrorString, "cuGetErrorString")                  \
  X(init, cuInit, "cuInit")                                                  \
  X(driver_get_version, cuDriverGetVersion, "cuDriverGetVersion")            \
  X(device_get_count, cuDeviceGetCount, "cuDeviceGetCount")                  \
  X(device_get, cuDeviceGet, "cuDeviceGet")                                  \
  X(device_get_name, cuDeviceGetName, "cuDeviceGetName")                     \
  X(device_get_attribute, cuDeviceGetAttribute, "cuDeviceGetAttribute")      \
  X(device_total_mem, cuDeviceTotalMem, "cuDeviceTotalMem_v2")               \
  X(primary_ctx_retain, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") \
  X(primary_ctx_release, cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2") \
  X(ctx_set_current, cuCtxSetCurrent, "cuCtxSetCurrent")                     \
  X(mem_get_info, cuMemGetInfo, "cuMemGetInfo_v2")                           \
  X(mem_alloc, cuMemAlloc, "cuMemAlloc_v2")                                  \
  X(mem_free, cuMemFree, "cuMemFree_v2")                                     \
  X(memcpy_htod, cuMemcpyHtoD, "cuMemcpyHtoD_v2")                            \
  X(memcpy_dtoh, cuMemcpyDtoH, "cuMemcpyDtoH_v2")                            \
  X(memcpy_dtod_async, cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2")            \
  X(memset_d8, cuMemsetD8, "cuMemsetD8_v2")                                  \
  X(memset_d32_async, cuMemsetD32Async, "cuMemsetD32Async")                  \
  X(module_load_data_ex, cuModuleLoadDataEx, "cuModuleLoadDataEx")           \
  X(module_unload, cuModuleUnload, "cuModuleUnload")                         \
  X(module_get_function, cuModuleGetFunction, "cuModuleGetFunction")         \
  X(func_set_attribute, cuFuncSetAttribute, "cuFuncSetAttribute")           \
  X(launch_kernel, cuLaunchKernel, "cuLaunchKernel")                         \
  X(launch_kernel_ex, cuLaunchKernelEx, "cuLaunchKernelEx")                  \
  X(stream_create, cuStreamCreate, "cuStreamCreate")                         \
  X(stream_destroy, cuStreamDestroy, "cuStreamDestroy_v2")                   \
  X(stream_synchronize, cuStreamSynchronize, "cuStreamSynchronize")          \
  X(stream_wait_event, cuStreamWaitEvent, "cuStreamWaitEvent")               \
  X(event_create, cuEventCreate, "cuEventCreate")                            \
  X(event_destroy, cuEventDestroy, "cuEventDestroy_v2")                      \
  X(event_record, cuEventRecord, "cuEventRecord")                            \
  X(event_synchronize, cuEventSynchronize, "cuEventSynchronize")             \
  X(event_elapsed_time, cuEventElapsedTime, "cuEventElapsedTime_v2")

struct fu_cuda_api {
#define FU_CUDA_MEMBER(member, fn, sym) __typeof__(&fn) member;
  FU_CUDA_ENTRY_POINTS(FU_CUDA_MEMBER)
#undef FU_CUDA_MEMBER
};

#endif
