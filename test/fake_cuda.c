/* A fake CUDA driver library for tests on machines with no GPU.
 *
 * Built as a shared library (fuser_fake_cuda) that fuser-run loads in place
 * of libcuda.so.1 (FUSER_LIBCUDA=path), so the tool's whole GPU path --
 * device query, module load with JIT logs, allocation, upload, poison,
 * launch, download, events, the copy-bandwidth measurement -- runs on the
 * host.  "Device memory" is host memory; a "module" is any PTX text (one
 * containing "bad" fails to load with a JIT error log); kernels are the C
 * functions below, looked up by entry name, following the kernel ABI of
 * include/fuser/backend.h.  Including cuda.h makes each function here
 * export the versioned symbol cuda.h maps its name to (cuMemAlloc ->
 * cuMemAlloc_v2), with the declared signature.
 *
 * FAKE_CUDA_INIT=<n> makes cuInit return CUresult n (100: no device);
 * FAKE_CUDA_ANY_KERNEL=1 makes every unknown entry a kernel that writes
 * nothing (so --check must fail on every output it should have written).
 * Faults, for the tests of fuser-run's error paths:
 * FAKE_CUDA_MEM_LIMIT=<bytes> makes cuMemAlloc fail with
 * CUDA_ERROR_OUT_OF_MEMORY once that many bytes would be live;
 * FAKE_CUDA_LAUNCH_FAULT=1 makes a launched kernel "fault": the launch
 * succeeds and every later synchronization and cuMemFree returns
 * CUDA_ERROR_ILLEGAL_ADDRESS, as after an out-of-bounds access;
 * FAKE_CUDA_LEAKS=1 prints, at exit, the device allocations never freed;
 * FAKE_CUDA_NVRTC_SKEW=1 makes the f32 kernels of a module whose PTX NVRTC
 * wrote (its "NVVM" header) return every result one ulp away from zero, as
 * a math library that rounds differently would (fuser-run
 * --diff-backends must then say which outputs differ).
 *
 * Thread-block clusters: a kernel of the table with `cluster` set runs only
 * through cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
 * {cluster, 1, 1} and a grid.x that is a multiple of it; any other launch
 * of it, or a cluster attribute on another kernel, fails at once with
 * CUDA_ERROR_INVALID_CLUSTER_SIZE.  Stricter and earlier than a GPU (on an
 * H100 the LLVM backend's PTX, which cannot state its cluster shape, runs
 * when launched without clusters and faults at its mapa with
 * CUDA_ERROR_ILLEGAL_INSTRUCTION), so that a runtime that forgets the
 * attribute fails here too.  FAKE_CUDA_LAUNCHES=1 prints one line per
 * launch to stderr: the entry point, the call, its cluster shape and its
 * stream (numbered in the order streams are made), and one per
 * cuStreamWaitEvent. */
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

/* Live device allocations, for FAKE_CUDA_MEM_LIMIT and FAKE_CUDA_LEAKS. */
static size_t live_bytes, live_count;
static int pending_fault;
static int skew_results; /* FAKE_CUDA_NVRTC_SKEW and the last module came from NVRTC */

static size_t env_size(const char *name) {
  const char *e = getenv(name);
  return e && *e ? (size_t)strtoull(e, NULL, 10) : 0;
}

__attribute__((destructor)) static void report_leaks(void) {
  if (env_size("FAKE_CUDA_LEAKS") && live_count)
    fprintf(stderr, "fake-cuda: %zu device allocation(s) of %zu bytes never freed\n", live_count, live_bytes);
}

typedef void (*fake_fn)(const unsigned grid[3], const unsigned block[3], void **params);

static void *ptr_arg(void **params, int i) {
  CUdeviceptr p;
  memcpy(&p, params[i], sizeof p);
  return (void *)(uintptr_t)p;
}

static int64_t i64_arg(void **params, int i) {
  int64_t v;
  memcpy(&v, params[i], sizeof v);
  return v;
}

/* (in: f32*, out: f32*, s: f32, n: i64): out[i] = in[i] * s, for i below
 * n - skip, one element per thread. */
static void scale(const unsigned grid[3], const unsigned block[3], void **params, int64_t skip) {
  const float *in = ptr_arg(params, 0);
  float *out = ptr_arg(params, 1);
  float s;
  memcpy(&s, params[2], sizeof s);
  int64_t n = i64_arg(params, 3) - skip;
  for (uint64_t t = 0; t < (uint64_t)grid[0] * block[0]; t++)
    if ((int64_t)t < n) {
      out[t] = in[t] * s;
      if (skew_results && out[t] != 0) {
        uint32_t bits;
        memcpy(&bits, &out[t], sizeof bits);
        bits++;
        memcpy(&out[t], &bits, sizeof bits);
      }
    }
}
static void k_scale(const unsigned g[3], const unsigned b[3], void **p) { scale(g, b, p, 0); }
static void k_scale_skip(const unsigned g[3], const unsigned b[3], void **p) { scale(g, b, p, 1); }

/* (in: i32*, out: i32*, n: i64): out[i] = in[i] + 1 */
/* (a, b, c: f32*, n: u32): c[i] = a[i] + b[i] (test_gpu_runtime's vadd) */
static void k_vadd(const unsigned grid[3], const unsigned block[3], void **params) {
  const float *a = ptr_arg(params, 0), *b = ptr_arg(params, 1);
  float *c = ptr_arg(params, 2);
  uint32_t n;
  memcpy(&n, params[3], sizeof n);
  for (uint64_t t = 0; t < (uint64_t)grid[0] * block[0]; t++)
    if (t < n) c[t] = a[t] + b[t];
}

static void k_nothing(const unsigned grid[3], const unsigned block[3], void **params) {}

/* (out: f32*): out[b] = b ^ 1 (test_gpu_runtime's cluster_swap: each block
 * of a cluster of 2 writes what the other one staged in shared memory) */
static void k_cluster_swap(const unsigned grid[3], const unsigned block[3], void **params) {
  float *out = ptr_arg(params, 0);
  for (unsigned b = 0; b < grid[0]; b++) out[b] = (float)(b ^ 1u);
}

static void k_inc_i32(const unsigned grid[3], const unsigned block[3], void **params) {
  const int32_t *in = ptr_arg(params, 0);
  int32_t *out = ptr_arg(params, 1);
  int64_t n = i64_arg(params, 2);
  for (uint64_t t = 0; t < (uint64_t)grid[0] * block[0]; t++)
    if ((int64_t)t < n) out[t] = in[t] + 1;
}

typedef struct fake_kernel {
  const char *name;
  fake_fn fn;
  unsigned cluster; /* blocks per cluster along x its launch must give; 0: none */
} fake_kernel;

static const fake_kernel kernels[] = {
    {"fake_scale", k_scale, 0},
    {"fake_scale_skip", k_scale_skip, 0},
    {"fake_inc_i32", k_inc_i32, 0},
    /* fake_scale in clusters of 2 blocks (test_runtime's tool_clusters) */
    {"fake_scale_cluster2", k_scale, 2},
    /* the hand-written PTX kernels of test_gpu_runtime.c */
    {"vadd", k_vadd, 0},
    {"cluster_swap", k_cluster_swap, 2},
    {"f_g0", k_scale, 0},
    {"f_g0_skip", k_scale_skip, 0},
    /* the benchmark's spin after each L2 flush (lib/runtime/bench.c) */
    {"fuser_bench_settle", k_nothing, 0},
};
static const fake_kernel nothing = {"nothing", k_nothing, 0};

static double fake_clock_us; /* advanced by copies and launches; events read it */

EXPORT CUresult cuGetErrorName(CUresult r, const char **s) {
  switch (r) {
  case CUDA_ERROR_NO_DEVICE: *s = "CUDA_ERROR_NO_DEVICE"; return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_PTX: *s = "CUDA_ERROR_INVALID_PTX"; return CUDA_SUCCESS;
  case CUDA_ERROR_NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; return CUDA_SUCCESS;
  case CUDA_ERROR_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
  case CUDA_ERROR_ILLEGAL_ADDRESS: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_CLUSTER_SIZE: *s = "CUDA_ERROR_INVALID_CLUSTER_SIZE"; return CUDA_SUCCESS;
  default: *s = NULL; return CUDA_ERROR_INVALID_VALUE;
  }
}
EXPORT CUresult cuGetErrorString(CUresult r, const char **s) {
  *s = r == CUDA_ERROR_NO_DEVICE ? "no CUDA-capable device is detected" : "fake driver error";
  return CUDA_SUCCESS;
}
EXPORT CUresult cuInit(unsigned flags) {
  const char *e = getenv("FAKE_CUDA_INIT");
  return e && *e ? (CUresult)atoi(e) : CUDA_SUCCESS;
}
EXPORT CUresult cuDriverGetVersion(int *v) {
  *v = 13000;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetCount(int *n) {
  *n = 1;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *d = 0;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
  snprintf(name, (size_t)len, "Fake H100 (host memory)");
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
  switch (a) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *v = 32; break;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *v = 65536; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 232448; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *v = 233472; break;
  case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 1 << 20; break;
  case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *v = 1980000; break;
  case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *v = 2619000; break;
  case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *v = 5120; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 2147483647; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *v = 65535; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceTotalMem(size_t *b, CUdevice d) {
  *b = (size_t)80 << 30;
  return CUDA_SUCCESS;
}
static int ctx_token, module_token;
/* streams are numbered in the order they are made (the log names them) */
static int stream_tokens[8], n_streams;
static int stream_number(CUstream s) {
  for (int i = 0; i < n_streams; i++)
    if ((void *)s == (void *)&stream_tokens[i]) return i;
  return -1;
}
EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  *c = (CUcontext)(void *)&ctx_token;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice d) { return CUDA_SUCCESS; }
EXPORT CUresult cuCtxSetCurrent(CUcontext c) { return CUDA_SUCCESS; }
/* FAKE_CUDA_MEM_INFO_LIVE=1 counts the live allocations out of the free
 * bytes, and FAKE_CUDA_MEM_INFO_LOSS=N reports N bytes fewer from the
 * second call on (a leak the driver would see), for --device-memory. */
EXPORT CUresult cuMemGetInfo(size_t *f, size_t *t) {
  static unsigned calls;
  *f = (size_t)256 << 20; /* keeps the copy-bandwidth measurement at 64 MiB */
  if (env_size("FAKE_CUDA_MEM_INFO_LIVE")) *f -= live_bytes;
  if (calls++ > 0) *f -= env_size("FAKE_CUDA_MEM_INFO_LOSS");
  *t = (size_t)80 << 30;
  return CUDA_SUCCESS;
}
/* Each block carries its size in front, so cuMemFree can count it. */
EXPORT CUresult cuMemAlloc(CUdeviceptr *p, size_t n) {
  size_t limit = env_size("FAKE_CUDA_MEM_LIMIT");
  if (limit && (n > limit || live_bytes > limit - n)) return CUDA_ERROR_OUT_OF_MEMORY;
  size_t *m = malloc(sizeof(size_t) * 2 + (n ? n : 1));
  if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
  m[0] = n;
  live_bytes += n;
  live_count++;
  *p = (CUdeviceptr)(uintptr_t)(m + 2);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuMemFree(CUdeviceptr p) {
  if (!p) return CUDA_SUCCESS;
  size_t *m = (size_t *)(uintptr_t)p - 2;
  live_bytes -= m[0];
  live_count--;
  free(m);
  return pending_fault ? CUDA_ERROR_ILLEGAL_ADDRESS : CUDA_SUCCESS;
}
EXPORT CUresult cuMemcpyHtoD(CUdeviceptr d, const void *s, size_t n) {
  memcpy((void *)(uintptr_t)d, s, n);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuMemcpyDtoH(void *d, CUdeviceptr s, size_t n) {
  memcpy(d, (const void *)(uintptr_t)s, n);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) {
  memcpy((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
  fake_clock_us += (double)n / 1e6; /* 2 TB/s counting reads and writes */
  return CUDA_SUCCESS;
}
EXPORT CUresult cuMemsetD8(CUdeviceptr d, unsigned char v, size_t n) {
  memset((void *)(uintptr_t)d, v, n);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream st) {
  unsigned *p = (unsigned *)(uintptr_t)d;
  for (size_t i = 0; i < n; i++) p[i] = v;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned n, CUjit_option *opts, void **vals) {
  const char *text = image;
  int bad = strstr(text, "bad") != NULL || strstr(text, "frobnicate") != NULL;
  for (unsigned i = 0; i < n; i++) {
    if (bad && opts[i] == CU_JIT_ERROR_LOG_BUFFER)
      snprintf(vals[i], 80, "ptxas fatal: fake JIT rejects '%s'\n", strstr(text, "frobnicate") ? "frobnicate" : "bad");
    if (!bad && opts[i] == CU_JIT_INFO_LOG_BUFFER) snprintf(vals[i], 80, "ptxas info: fake JIT, 0 registers");
  }
  if (bad) return CUDA_ERROR_INVALID_PTX;
  skew_results = env_size("FAKE_CUDA_NVRTC_SKEW") && strstr(text, "NVVM") != NULL;
  *m = (CUmodule)(void *)&module_token;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuModuleUnload(CUmodule m) { return CUDA_SUCCESS; }
EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
  for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
    if (strcmp(kernels[i].name, name) == 0) {
      *f = (CUfunction)(void *)&kernels[i];
      return CUDA_SUCCESS;
    }
  const char *any = getenv("FAKE_CUDA_ANY_KERNEL");
  if (any && *any == '1') {
    *f = (CUfunction)(void *)&nothing;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_NOT_FOUND;
}
EXPORT CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) { return CUDA_SUCCESS; }
/* Runs kernel k (launched with `cluster` blocks per cluster along x, 0
 * for a launch without clusters), or refuses the launch as the driver
 * would refuse its cluster shape. */
static CUresult launch(const fake_kernel *k, const unsigned grid[3], const unsigned block[3], unsigned cluster,
                       const char *call, void **params, CUstream s) {
  if (env_size("FAKE_CUDA_LAUNCHES"))
    fprintf(stderr, "fake-cuda: %s('%s') cluster=%u stream=%d\n", call, k->name, cluster, stream_number(s));
  if (cluster == 1) cluster = 0; /* a cluster of one block is no cluster */
  /* FAKE_CUDA_ANY_KERNEL's stand-in takes any shape */
  bool refused = k != &nothing && cluster != k->cluster;
  if (refused || (cluster && grid[0] % cluster != 0)) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  if (env_size("FAKE_CUDA_LAUNCH_FAULT")) {
    pending_fault = 1; /* the fault surfaces at the next synchronization */
    return CUDA_SUCCESS;
  }
  k->fn(grid, block, params);
  fake_clock_us += 5.0;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned smem, CUstream s, void **params, void **extra) {
  const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  return launch((const fake_kernel *)(const void *)f, grid, block, 0, "cuLaunchKernel", params, s);
}
/* The cluster dimension is the only attribute the fake knows; one of
 * another shape than {x, 1, 1} is refused. */
EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
  const unsigned grid[3] = {c->gridDimX, c->gridDimY, c->gridDimZ}, block[3] = {c->blockDimX, c->blockDimY, c->blockDimZ};
  unsigned cluster = 0;
  for (unsigned i = 0; i < c->numAttrs; i++) {
    const CUlaunchAttribute *a = &c->attrs[i];
    if (a->id != CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) return CUDA_ERROR_INVALID_VALUE;
    if (a->value.clusterDim.y != 1 || a->value.clusterDim.z != 1) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    cluster = a->value.clusterDim.x;
  }
  return launch((const fake_kernel *)(const void *)f, grid, block, cluster, "cuLaunchKernelEx", params, c->hStream);
}
EXPORT CUresult cuStreamCreate(CUstream *s, unsigned flags) {
  if (n_streams == (int)(sizeof stream_tokens / sizeof stream_tokens[0])) return CUDA_ERROR_OUT_OF_MEMORY;
  *s = (CUstream)(void *)&stream_tokens[n_streams++];
  return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamDestroy(CUstream s) { return CUDA_SUCCESS; }
/* A fault is sticky, as on a real context: synchronizing and freeing
 * fail from then on (the memory is still released, as a context's is when
 * it is destroyed). */
EXPORT CUresult cuStreamSynchronize(CUstream s) { return pending_fault ? CUDA_ERROR_ILLEGAL_ADDRESS : CUDA_SUCCESS; }
/* Streams run in call order here, so a wait orders nothing: logged only. */
EXPORT CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags) {
  if (env_size("FAKE_CUDA_LAUNCHES")) fprintf(stderr, "fake-cuda: cuStreamWaitEvent(stream=%d)\n", stream_number(s));
  return CUDA_SUCCESS;
}
EXPORT CUresult cuEventCreate(CUevent *e, unsigned flags) {
  double *t = calloc(1, sizeof *t);
  if (!t) return CUDA_ERROR_OUT_OF_MEMORY;
  *e = (CUevent)(void *)t;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuEventDestroy(CUevent e) {
  free((void *)e);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuEventRecord(CUevent e, CUstream s) {
  *(double *)(void *)e = fake_clock_us;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuEventSynchronize(CUevent e) { return CUDA_SUCCESS; }
EXPORT CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
  *ms = (float)((*(double *)(void *)b - *(double *)(void *)a) / 1e3);
  return CUDA_SUCCESS;
}
