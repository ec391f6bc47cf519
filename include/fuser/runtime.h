/* fuser: the CUDA driver-API runtime.
 *
 * The runtime loads PTX with the driver API, allocates device memory for a
 * lowered fusion, launches its kernels in order and copies the results
 * back; it also times kernels with CUDA events.  It uses the driver API
 * only (cuda.h), and loads the driver library (libcuda.so.1) itself at
 * fu_rt_open, so binaries built against the toolkit's stub still start, and
 * say clearly why, on machines with no driver or no GPU.
 *
 * Layers, each usable alone:
 *   fu_rt_*          the driver: device query, memory, modules, launches;
 *   fu_rt_plan_*     what a lowered fusion needs on the device, computed on
 *                    the host only (buffers, layouts, kernel arguments,
 *                    grids) from the fusion and its inputs: no GPU needed;
 *   fu_rt_exec_*     a plan on the device: upload, poison, run, download,
 *                    benchmark;
 * Results are checked against the CPU interpreter with fu_check_compare
 * (fuser/check.h).
 *
 * Every driver call is checked: a failure is reported to the diagnostics
 * engine naming the call and the error (cuGetErrorName: cuGetErrorString),
 * located at the segment when there is one, and returned as a status.
 * Nothing prints, nothing exits. */
#ifndef FUSER_RUNTIME_H
#define FUSER_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fuser/alloc.h"
#include "fuser/check.h"
#include "fuser/device.h"
#include "fuser/diag.h"
#include "fuser/interp.h"
#include "fuser/ir.h"
#include "fuser/kir.h"
#include "fuser/status.h"
#include "fuser/strbuf.h"

/* ---- the driver ------------------------------------------------------------ */

typedef struct fu_rt fu_rt;
/* The driver's entry points (lib/runtime/cuda_api.h); tests may substitute
 * their own table. */
typedef struct fu_cuda_api fu_cuda_api;

typedef struct fu_rt_options {
  int device_ordinal;         /* 0 unless told otherwise */
  const char *libcuda_path;   /* NULL: $FUSER_LIBCUDA, else "libcuda.so.1" */
  const char *libcublaslt_path; /* NULL: $FUSER_LIBCUBLASLT, else libcublasLt.so.13, .so.12, .so; loaded
                                   at the first matmul segment */
  const fu_cuda_api *api;     /* NULL: load the driver library */
} fu_rt_options;

typedef struct fu_rt_device_info {
  fu_device desc;             /* what the schedulers tune for, from the driver's attributes */
  char name[256];             /* "NVIDIA H100 80GB HBM3" */
  int ordinal;
  int cc_major, cc_minor;
  int driver_version;         /* 13000 for CUDA 13.0 */
  uint64_t total_mem_bytes;
  int sm_clock_khz;
  int mem_clock_khz;
  int bus_width_bits;
  bool bandwidth_from_preset; /* the driver reported no memory clock */
} fu_rt_device_info;

/* Loads the driver, cuInit, picks the device, retains its primary context
 * and creates a stream.  FU_ERR_UNSUPPORTED when there is no driver library
 * or no device (the message is "no CUDA device found (cuInit:
 * CUDA_ERROR_NO_DEVICE)" or says which library could not be loaded), other
 * statuses for other failures.  On failure *out is NULL. */
fu_status fu_rt_open(const fu_rt_options *opts, fu_allocator alloc, fu_diag_engine *diag, fu_rt **out);
void fu_rt_close(fu_rt *rt);
const fu_rt_device_info *fu_rt_device(const fu_rt *rt);
/* Whether a kernel left a sticky error in the context (an illegal address,
 * ...): every later driver call fails, so nothing more can run in it. */
bool fu_rt_faulted(const fu_rt *rt);
/* Human-readable lines: name, compute capability, SMs, memory, L2,
 * theoretical bandwidth, limits. */
void fu_rt_device_print(fu_strbuf *out, const fu_rt_device_info *d);
/* The NVPTX target for the device: "sm_90".  Devices newer than what the
 * backend knows get the newest it knows (PTX is forward compatible). */
void fu_rt_device_arch(const fu_rt_device_info *d, char *buf, size_t cap);

/* Device memory.  0 is never a valid allocation. */
typedef uint64_t fu_rt_ptr;
fu_status fu_rt_mem_alloc(fu_rt *rt, size_t bytes, fu_rt_ptr *out);
void fu_rt_mem_free(fu_rt *rt, fu_rt_ptr p);
fu_status fu_rt_mem_upload(fu_rt *rt, fu_rt_ptr dst, const void *src, size_t bytes);
fu_status fu_rt_mem_download(fu_rt *rt, void *dst, fu_rt_ptr src, size_t bytes);
fu_status fu_rt_mem_fill(fu_rt *rt, fu_rt_ptr dst, uint8_t byte, size_t bytes);
/* The driver's free and total device memory (cuMemGetInfo), for a caller
 * that checks nothing is left allocated across a run. */
fu_status fu_rt_mem_info(fu_rt *rt, size_t *free_bytes, size_t *total_bytes);
/* Waits for everything queued on the runtime's stream. */
fu_status fu_rt_synchronize(fu_rt *rt);

/* A loaded PTX module.  Load failures report the JIT's error log. */
typedef struct fu_rt_module fu_rt_module;
/* `ptx` need not be NUL-terminated; `name` (e.g. the .ptx file) is used in
 * messages. */
fu_status fu_rt_module_load(fu_rt *rt, const char *ptx, size_t len, const char *name, fu_rt_module **out);
void fu_rt_module_unload(fu_rt_module *mod);
/* The JIT's info log (registers, spills) of the load, "" when none. */
const char *fu_rt_module_info_log(const fu_rt_module *mod);

typedef struct fu_rt_func {
  void *handle;      /* CUfunction */
  const char *entry;
} fu_rt_func;

/* FU_ERR_INVALID_ARG with a message naming the entry when the module has no
 * such kernel. */
fu_status fu_rt_module_function(fu_rt_module *mod, const char *entry, fu_rt_func *out);

typedef struct fu_rt_launch_config {
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t smem_bytes;
  /* blocks per thread-block cluster along x (the kernel's `cluster=`,
   * sm_90); 0 or 1: no clusters */
  uint32_t cluster;
} fu_rt_launch_config;

/* Queues one launch on the runtime's stream; `params` as cuLaunchKernel
 * takes them (one pointer per kernel parameter, to its value).  Asks for
 * more than 48 KiB of dynamic shared memory when the config needs it.  A
 * config with clusters launches through cuLaunchKernelEx with the cluster
 * dimension {cluster, 1, 1}, after checking that grid.x is a multiple of
 * it (FU_ERR_INVALID_ARG, nothing launched, when not) and that the driver
 * has cuLaunchKernelEx (FU_ERR_UNSUPPORTED). */
fu_status fu_rt_launch(fu_rt *rt, const fu_rt_func *fn, const fu_rt_launch_config *cfg, void **params);

/* ---- plans: a lowered fusion on concrete inputs (host only) ------------------- */

/* A tensor value in device memory: which buffer, and its concrete shape
 * and strides (elements).  Host aliases share their operand's buffer. */
typedef struct fu_rt_view {
  int32_t buffer; /* index into fu_rt_plan.buffers; -1: the value has no memory */
  fu_dtype dtype;
  int32_t rank;
  int64_t shape[FU_MAX_RANK];
  int64_t strides[FU_MAX_RANK];
} fu_rt_view;

typedef enum fu_rt_buffer_kind {
  FU_RT_BUF_INPUT,     /* a fusion input, uploaded */
  FU_RT_BUF_KERNEL,    /* written by a kernel: an output or an intermediate */
  FU_RT_BUF_WORKSPACE, /* a kernel's scratch (a workspace parameter) */
} fu_rt_buffer_kind;

/* A workspace is allocated once per exec (fu_rt_exec_new), and a `zeroed`
 * one zeroed then (cuMemsetD8): a kernel must leave a zeroed workspace all
 * zero again when it ends (include/fuser/kir.h), so the same memory serves
 * every launch and every run, --bench included, with no memset between. */
typedef struct fu_rt_buffer {
  fu_rt_buffer_kind kind;
  const fu_value *root;  /* the input, or the value the kernel writes; NULL for a workspace */
  const fu_kval *workspace; /* FU_RT_BUF_WORKSPACE: its parameter */
  int64_t ws_elems;      /* FU_RT_BUF_WORKSPACE: its size in elements, evaluated */
  uint32_t input_index;  /* FU_RT_BUF_INPUT: position among the fusion's inputs */
  size_t bytes;          /* the span of the root's layout, rounded up to 16 */
  bool fusion_output;    /* some fusion output lives in it */
} fu_rt_buffer;

/* One kernel argument: a buffer's device address, or immediate bytes. */
typedef struct fu_rt_karg {
  int32_t buffer;          /* >= 0: pass the buffer's address */
  uint32_t size;           /* bytes of an immediate */
  unsigned char bytes[8];  /* the immediate, little-endian, as the kernel ABI wants */
} fu_rt_karg;

/* A matmul segment's cuBLASLt call (lib/runtime/gemm_plan.c), in
 * cuBLASLt's column-major terms: the row-major D[M, N] = A[M, K] B[K, N]
 * is D^T = B^T A^T, so cuBLASLt's A is the product's B, its B the
 * product's A, its m the product's N and its n the product's M.  Each
 * matrix is read where it lies (trans and ld from its strides), batches
 * are one strided batch (stride 0: broadcast). */
typedef struct fu_rt_gemm {
  char name[48];             /* "cublaslt_<segment>" */
  fu_dtype ab_dtype, d_dtype, bias_dtype;
  bool trans_a, trans_b;     /* cuBLASLt's op(A), op(B) */
  int64_t m, n, k;
  int64_t lda, ldb, ldd;
  int64_t batch;
  int64_t stride_a, stride_b, stride_d;
  int32_t buf_a, buf_b, buf_bias, buf_d; /* plan buffers (buf_bias -1: none) */
  int act;                   /* fu_gemm_act */
  float alpha;
} fu_rt_gemm;

/* The cuBLASLt call of a product of kind `k` (matmul or linear) of views
 * a and b, with an optional bias view, into the dense row-major d; false
 * with the reason in `why` when cuBLASLt cannot read the operands where
 * they lie (no dim of stride 1 among a matrix's last two, batch dims that
 * do not flatten into one stride, a bias that is not a contiguous vector
 * along N) or the dtypes are not a combination it computes. */
bool fu_rt_gemm_from_views(fu_op_kind k, const fu_rt_view *a, const fu_rt_view *b, const fu_rt_view *bias,
                           const fu_rt_view *d, fu_rt_gemm *out, fu_strbuf *why);

typedef struct fu_rt_launch_plan {
  const fu_op *segment;
  const fu_kernel *kernel;  /* NULL for a matmul segment */
  fu_rt_gemm *gemm;         /* a matmul segment's cuBLASLt call, else NULL */
  fu_rt_launch_config config;
  bool empty;             /* a grid dim is 0 (empty tensors): not launched */
  fu_rt_karg *args;       /* one per kernel parameter */
  uint32_t n_args;
  uint64_t bytes_read;    /* distinct bytes of the tensors it reads */
  uint64_t bytes_written; /* bytes of the tensors it writes */
  uint8_t stream;         /* 0: the runtime's stream, in op order; 1: the side stream, beside the others
                             (it shares no buffer another launch writes, nor writes one another touches) */
} fu_rt_launch_plan;

/* An output with an alias (`output %o {alias=%in}`) that its kernel did not
 * write in place: after the kernels, o's elements into in's memory; one
 * device copy of `bytes` when both are laid out alike and dense, else
 * element by element through the host (in's layout kept). */
typedef struct fu_rt_alias_copy {
  const fu_value *src, *dst;
  bool dense;
  size_t bytes; /* dense */
} fu_rt_alias_copy;

typedef struct fu_rt_plan {
  fu_fusion *fusion;
  fu_allocator alloc;
  fu_bindings bindings;
  fu_rt_buffer *buffers;
  uint32_t n_buffers, buffers_cap;
  fu_rt_view *views;      /* per value id */
  uint32_t n_values;
  fu_rt_launch_plan *launches;
  uint32_t n_launches, launches_cap;
  const fu_value **outputs; /* the fusion's outputs in order */
  uint32_t n_outputs;
  uint64_t bytes_read;    /* distinct bytes of the fusion inputs the kernels read */
  uint64_t bytes_written; /* bytes of the fusion outputs the kernels write */
  fu_rt_alias_copy *alias_copies; /* run after the kernels, in order */
  uint32_t n_alias_copies;
  bool concurrent;        /* some launch runs on the side stream */
} fu_rt_plan;

/* A launch's name: its kernel's, or its cuBLASLt call's. */
const char *fu_rt_launch_name(const fu_rt_launch_plan *lp);

/* True when every op of `f` is an input, an output, a host alias or a
 * segment with a kernel (what `lower` produces) or a matmul segment with
 * its plan.  Otherwise false, with the
 * first op that is not in `*why_op` (may be NULL). */
bool fu_rt_fusion_is_lowered(fu_fusion *f, const fu_op **why_op);

/* Computes the plan of lowered fusion `f` on `inputs` (as
 * fu_interp_make_inputs makes them): binds the symbols, gives every input,
 * host alias and kernel-written tensor its layout (include/fuser/
 * view_layout.h, evaluated with the bindings and the inputs' own strides),
 * and each launch its grid and arguments.  Errors are located at the op
 * they concern: an op that is neither a host alias nor in a segment with a
 * kernel, a kernel parameter the runtime cannot supply, a grid out of the
 * device's range, a value too large to index, a workspace whose size
 * cannot be evaluated.  Free with fu_rt_plan_free
 * (also after a failure). */
fu_status fu_rt_plan_build(fu_fusion *f, const fu_arg *inputs, uint32_t n_inputs, fu_allocator alloc,
                           fu_diag_engine *diag, fu_rt_plan *out);
void fu_rt_plan_free(fu_rt_plan *p);

/* `--dump=launch`: per launch its kernel, grid, block, dynamic shared
 * memory and arguments, one line each (a workspace as its dtype, element
 * count and whether it is zeroed). */
void fu_rt_plan_print_launches(fu_strbuf *out, const fu_rt_plan *p);

/* ---- executing a plan ------------------------------------------------------------ */

typedef struct fu_rt_exec fu_rt_exec;

/* Allocates the plan's buffers, uploads the inputs (in the layout the plan
 * gives them: copied as they are when their strides match, else re-laid
 * out), and looks up each launch's kernel in `mod`.  `plan`, `mod` and
 * `inputs` must outlive the exec. */
fu_status fu_rt_exec_new(fu_rt *rt, const fu_rt_plan *plan, fu_rt_module *mod, const fu_arg *inputs,
                         fu_diag_engine *diag, fu_rt_exec **out);
void fu_rt_exec_free(fu_rt_exec *e);
/* The device address of plan buffer `buffer` (FUSER_DUMP=kernel_args). */
fu_rt_ptr fu_rt_exec_buffer_address(const fu_rt_exec *e, uint32_t buffer);
/* Fills every kernel-written buffer, and every workspace not marked
 * zeroed, with `byte` (0xFF before a checked run, so elements no kernel
 * writes come out as NaN or -1 and fail, and scratch read before it is
 * written gives wrong results). */
fu_status fu_rt_exec_poison(fu_rt_exec *e, uint8_t byte);
/* Launches every kernel in order and waits for them; an error names the
 * kernel (and, for errors found at the wait, the kernels that ran). */
fu_status fu_rt_exec_run(fu_rt_exec *e);
/* The fusion's outputs after a run, as fu_interp_run returns them (fresh
 * contiguous tensors or scalars, in order); free with fu_args_free. */
fu_status fu_rt_exec_outputs(fu_rt_exec *e, fu_allocator alloc, fu_arg **outputs, uint32_t *n_outputs);
/* Input tensor `input`'s device memory after a run, as a fresh contiguous
 * tensor: what an output with that alias wrote into it. */
fu_status fu_rt_exec_input_after(fu_rt_exec *e, const fu_value *input, fu_allocator alloc, fu_host_tensor *out);

typedef struct fu_rt_bench_options {
  uint32_t warmup;     /* untimed runs first (0: 10) */
  uint32_t iters;      /* timed runs (0: 100) */
  bool no_flush;       /* do not flush L2 between timed runs */
  uint32_t settle_us;  /* after each flush, the GPU spins this long before the timed run (0: 1000) */
  size_t flush_bytes;  /* the bytes each flush writes (0: twice the L2 size) */
  bool flush_kernel;   /* flush with a store kernel (as torch's fill_) instead of cuMemsetD32Async */
  size_t copy_bytes;   /* size of the copy-bandwidth measurement (0: 1 GiB, less if memory is short) */
} fu_rt_bench_options;

typedef struct fu_rt_timing {
  const char *name;    /* the kernel's name, or "total" */
  double median_us, min_us, max_us;
  uint64_t bytes;      /* read once + written once */
  double gbs;          /* bytes / median, in 1e9 bytes per second */
  double pct_copy;     /* gbs as a percentage of the measured copy bandwidth */
} fu_rt_timing;

typedef struct fu_rt_bench_result {
  fu_rt_timing *kernels; /* one per launch that is not empty, in order */
  uint32_t n_kernels;
  fu_rt_timing total;    /* first launch start to last launch end, fusion bytes */
  bool concurrent;       /* the plan runs launches on two streams: `total` is timed so (kernels beside each
                            other), `kernels` and `sequential` in another run, one after another */
  fu_rt_timing sequential;
  double copy_gbs;       /* device-to-device copy, bytes read + written per second */
  size_t copy_bytes;
  size_t flush_bytes;    /* 0 when not flushed */
  bool flush_kernel;     /* the flush was a store kernel, not cuMemsetD32Async */
  uint32_t settle_us;    /* the spin after each flush; 0 when not flushed */
  uint32_t iters, warmup;
  fu_allocator alloc;
} fu_rt_bench_result;

/* Warm-up, then `iters` timed runs, each after writing 2x the L2 size
 * (or flush_bytes) with cuMemsetD32Async (or a store kernel) and a spin
 * of settle_us on the GPU (unless no_flush), as the peers' harnesses do it; every kernel is bracketed by
 * CUDA events.  Also measures the copy bandwidth (cuMemcpyDtoDAsync,
 * median of 20) in the same run.  Free with fu_rt_bench_result_free. */
fu_status fu_rt_exec_bench(fu_rt_exec *e, const fu_rt_bench_options *opts, fu_rt_bench_result *out);
void fu_rt_bench_result_free(fu_rt_bench_result *r);

/* Copy bandwidth alone: median over `iters` copies of `bytes` (bytes read
 * + written per second, 1e9). */
fu_status fu_rt_copy_bandwidth(fu_rt *rt, size_t bytes, uint32_t iters, double *gbs);

#endif
