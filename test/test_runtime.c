/* Unit tests of the CUDA runtime that need no GPU: plans (layouts of
 * inputs, host aliases and kernel-written tensors, kernel arguments,
 * grids), the executor and the benchmark over a fake driver that keeps
 * "device" memory on the host and runs C functions as kernels, the
 * no-driver and no-device paths, JIT error logs, and result checking. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* Exits 77 (skipped) in a build without the CUDA driver runtime. */
#ifndef FUSER_HAS_CUDA_DRIVER
int main(void) {
  printf("test_runtime: skipped: this build has no CUDA driver runtime (no cuda.h)\n");
  return 77;
}
#else

#include "../lib/runtime/internal.h"
#include "fuser/gemm.h"
#include "fuser/parse.h"
#include "fuser/runtime.h"
#include "fuser/verify.h"

/* ---- diagnostics into a buffer ------------------------------------------------ */

typedef struct captured {
  char text[8192];
  size_t len;
  int errors;
} captured;

static void capture(void *user, const fu_diagnostic *d) {
  captured *c = user;
  if (d->severity == FU_SEV_ERROR) c->errors++;
  int n = snprintf(c->text + c->len, sizeof c->text - c->len, "%s: %s\n", fu_severity_name(d->severity), d->message);
  if (n > 0 && c->len + (size_t)n < sizeof c->text) c->len += (size_t)n;
}

static fu_diag_engine capture_engine(captured *c) {
  memset(c, 0, sizeof *c);
  fu_diag_engine e;
  fu_diag_init(&e, fu_default_allocator());
  e.handler = capture;
  e.user = c;
  return e;
}

/* ---- the fake driver ------------------------------------------------------------ */

typedef void (*fake_kernel_fn)(const unsigned grid[3], const unsigned block[3], void **params);
typedef struct fake_kernel {
  const char *name;
  fake_kernel_fn fn;
} fake_kernel;

static int fake_live_allocs;
static int fake_launches;
static double fake_clock;
static CUresult fake_init_result;
static bool fake_no_mem_clock;

static CUresult fake_get_error_name(CUresult r, const char **s) {
  switch (r) {
  case CUDA_ERROR_NO_DEVICE: *s = "CUDA_ERROR_NO_DEVICE"; return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_PTX: *s = "CUDA_ERROR_INVALID_PTX"; return CUDA_SUCCESS;
  case CUDA_ERROR_NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; return CUDA_SUCCESS;
  case CUDA_ERROR_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
  default: *s = NULL; return CUDA_ERROR_INVALID_VALUE;
  }
}
static CUresult fake_get_error_string(CUresult r, const char **s) {
  *s = r == CUDA_ERROR_NO_DEVICE ? "no CUDA-capable device is detected" : "fake error";
  return CUDA_SUCCESS;
}
static CUresult fake_init(unsigned flags) { return fake_init_result; }
static CUresult fake_driver_version(int *v) {
  *v = 13000;
  return CUDA_SUCCESS;
}
static CUresult fake_device_count(int *n) {
  *n = 1;
  return CUDA_SUCCESS;
}
static CUresult fake_device_get(CUdevice *d, int ordinal) {
  *d = ordinal;
  return CUDA_SUCCESS;
}
static CUresult fake_device_name(char *name, int len, CUdevice d) {
  snprintf(name, (size_t)len, "Fake GPU %d", (int)d);
  return CUDA_SUCCESS;
}
static CUresult fake_device_attribute(int *v, CUdevice_attribute a, CUdevice d) {
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
  case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 1 << 20; break; /* small: the flush buffer stays small */
  case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *v = 1980000; break;
  case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *v = fake_no_mem_clock ? 0 : 2619000; break;
  case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *v = 5120; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 2147483647; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *v = 65535; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}
static CUresult fake_total_mem(size_t *b, CUdevice d) {
  *b = (size_t)80 << 30;
  return CUDA_SUCCESS;
}
static int fake_ctx_token, fake_stream_token;
static CUresult fake_ctx_retain(CUcontext *c, CUdevice d) {
  *c = (CUcontext)(void *)&fake_ctx_token;
  return CUDA_SUCCESS;
}
static CUresult fake_ctx_release(CUdevice d) { return CUDA_SUCCESS; }
static CUresult fake_ctx_set_current(CUcontext c) { return CUDA_SUCCESS; }
static CUresult fake_mem_get_info(size_t *f, size_t *t) {
  *f = (size_t)1 << 30;
  *t = (size_t)80 << 30;
  return CUDA_SUCCESS;
}
static CUresult fake_mem_alloc(CUdeviceptr *p, size_t n) {
  if (n > ((size_t)1 << 32)) return CUDA_ERROR_OUT_OF_MEMORY;
  void *m = malloc(n);
  if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
  fake_live_allocs++;
  *p = (CUdeviceptr)(uintptr_t)m;
  return CUDA_SUCCESS;
}
static CUresult fake_mem_free(CUdeviceptr p) {
  fake_live_allocs--;
  free((void *)(uintptr_t)p);
  return CUDA_SUCCESS;
}
static CUresult fake_htod(CUdeviceptr d, const void *s, size_t n) {
  memcpy((void *)(uintptr_t)d, s, n);
  return CUDA_SUCCESS;
}
static CUresult fake_dtoh(void *d, CUdeviceptr s, size_t n) {
  memcpy(d, (const void *)(uintptr_t)s, n);
  return CUDA_SUCCESS;
}
static CUresult fake_dtod_async(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) {
  memcpy((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
  fake_clock += (double)n / 1e6; /* 1 us per MB: 2 TB/s counting both ways */
  return CUDA_SUCCESS;
}
static CUresult fake_memset8(CUdeviceptr d, unsigned char v, size_t n) {
  memset((void *)(uintptr_t)d, v, n);
  return CUDA_SUCCESS;
}
static CUresult fake_memset32_async(CUdeviceptr d, unsigned v, size_t n, CUstream st) {
  unsigned *p = (unsigned *)(uintptr_t)d;
  for (size_t i = 0; i < n; i++) p[i] = v;
  return CUDA_SUCCESS;
}

static const fake_kernel *fake_table;

/* The benchmark's spin after each L2 flush (lib/runtime/bench.c): counted
 * apart from the fusion's launches, and taking no fake time. */
static void fake_settle_fn(const unsigned grid[3], const unsigned block[3], void **params) {
  (void)grid;
  (void)block;
  (void)params;
}
static const fake_kernel fake_settle = {"fuser_bench_settle", fake_settle_fn};
static int fake_settles;

/* The "PTX" of the fake driver: any text; "bad" fails to load with a log. */
static CUresult fake_module_load(CUmodule *m, const void *image, unsigned n, CUjit_option *opts, void **vals) {
  if (strstr((const char *)image, "bad")) {
    for (unsigned i = 0; i < n; i++)
      if (opts[i] == CU_JIT_ERROR_LOG_BUFFER) snprintf(vals[i], 64, "ptxas fatal: Unknown instruction 'bad'\n");
    return CUDA_ERROR_INVALID_PTX;
  }
  for (unsigned i = 0; i < n; i++)
    if (opts[i] == CU_JIT_INFO_LOG_BUFFER) snprintf(vals[i], 64, "ptxas info: 0 bytes spill");
  *m = (CUmodule)(void *)&fake_table;
  return CUDA_SUCCESS;
}
static CUresult fake_module_unload(CUmodule m) { return CUDA_SUCCESS; }
static CUresult fake_module_function(CUfunction *f, CUmodule m, const char *name) {
  if (strcmp(name, fake_settle.name) == 0) {
    *f = (CUfunction)(void *)&fake_settle;
    return CUDA_SUCCESS;
  }
  for (const fake_kernel *k = fake_table; k && k->name; k++)
    if (strcmp(k->name, name) == 0) {
      *f = (CUfunction)(void *)k;
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}
/* The last dynamic shared memory a kernel was allowed (0: none asked). */
static int fake_max_dynamic_smem;
static CUresult fake_func_set_attribute(CUfunction f, CUfunction_attribute a, int v) {
  if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) fake_max_dynamic_smem = v;
  return CUDA_SUCCESS;
}
static CUresult fake_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned smem, CUstream s, void **params, void **extra) {
  const fake_kernel *k = (const fake_kernel *)(void *)f;
  unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  if (k == &fake_settle) {
    fake_settles++;
    return CUDA_SUCCESS;
  }
  k->fn(grid, block, params);
  fake_launches++;
  fake_clock += 10; /* each kernel takes 10 us */
  return CUDA_SUCCESS;
}
/* cuLaunchKernelEx: what it was given (a copy of the config and of its
 * first attribute), and the kernel run as cuLaunchKernel runs it. */
static int fake_launches_ex;
static CUlaunchConfig fake_last_ex;
static CUlaunchAttribute fake_last_attr;
static CUresult fake_launch_ex(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
  fake_launches_ex++;
  fake_last_ex = *c;
  memset(&fake_last_attr, 0, sizeof fake_last_attr);
  if (c->numAttrs) fake_last_attr = c->attrs[0];
  fake_last_ex.attrs = NULL; /* the caller's array is gone after the call */
  return fake_launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
                     c->sharedMemBytes, c->hStream, params, extra);
}
static CUresult fake_stream_create(CUstream *s, unsigned flags) {
  *s = (CUstream)(void *)&fake_stream_token;
  return CUDA_SUCCESS;
}
static CUresult fake_stream_destroy(CUstream s) { return CUDA_SUCCESS; }
static CUresult fake_stream_sync(CUstream s) { return CUDA_SUCCESS; }
static CUresult fake_event_create(CUevent *e, unsigned flags) {
  double *t = malloc(sizeof *t);
  if (!t) return CUDA_ERROR_OUT_OF_MEMORY;
  *t = 0;
  *e = (CUevent)(void *)t;
  return CUDA_SUCCESS;
}
static CUresult fake_event_destroy(CUevent e) {
  free((void *)e);
  return CUDA_SUCCESS;
}
static CUresult fake_event_record(CUevent e, CUstream s) {
  *(double *)(void *)e = fake_clock;
  return CUDA_SUCCESS;
}
static CUresult fake_event_sync(CUevent e) { return CUDA_SUCCESS; }
static CUresult fake_event_elapsed(float *ms, CUevent a, CUevent b) {
  *ms = (float)((*(double *)(void *)b - *(double *)(void *)a) / 1e3);
  return CUDA_SUCCESS;
}

static fu_cuda_api fake_api(void) {
  fu_cuda_api a;
  memset(&a, 0, sizeof a);
  a.get_error_name = fake_get_error_name;
  a.get_error_string = fake_get_error_string;
  a.init = fake_init;
  a.driver_get_version = fake_driver_version;
  a.device_get_count = fake_device_count;
  a.device_get = fake_device_get;
  a.device_get_name = fake_device_name;
  a.device_get_attribute = fake_device_attribute;
  a.device_total_mem = fake_total_mem;
  a.primary_ctx_retain = fake_ctx_retain;
  a.primary_ctx_release = fake_ctx_release;
  a.ctx_set_current = fake_ctx_set_current;
  a.mem_get_info = fake_mem_get_info;
  a.mem_alloc = fake_mem_alloc;
  a.mem_free = fake_mem_free;
  a.memcpy_htod = fake_htod;
  a.memcpy_dtoh = fake_dtoh;
  a.memcpy_dtod_async = fake_dtod_async;
  a.memset_d8 = fake_memset8;
  a.memset_d32_async = fake_memset32_async;
  a.module_load_data_ex = fake_module_load;
  a.module_unload = fake_module_unload;
  a.module_get_function = fake_module_function;
  a.func_set_attribute = fake_func_set_attribute;
  a.launch_kernel = fake_launch;
  a.launch_kernel_ex = fake_launch_ex;
  a.stream_create = fake_stream_create;
  a.stream_destroy = fake_stream_destroy;
  a.stream_synchronize = fake_stream_sync;
  a.event_create = fake_event_create;
  a.event_destroy = fake_event_destroy;
  a.event_record = fake_event_record;
  a.event_synchronize = fake_event_sync;
  a.event_elapsed_time = fake_event_elapsed;
  return a;
}

static fu_rt *open_fake(fu_diag_engine *diag) {
  fu_cuda_api api = fake_api();
  fu_rt_options o;
  memset(&o, 0, sizeof o);
  o.api = &api;
  fake_init_result = CUDA_SUCCESS;
  fu_rt *rt = NULL;
  fu_status st = fu_rt_open(&o, fu_default_allocator(), diag, &rt);
  CHECK_EQ_INT(st, FU_OK);
  return rt;
}

/* ---- fake kernels -------------------------------------------------------------------- */

static int64_t arg_i64(void **params, int i) {
  int64_t v;
  memcpy(&v, params[i], 8);
  return v;
}
static void *arg_ptr(void **params, int i) {
  CUdeviceptr p;
  memcpy(&p, params[i], sizeof p);
  return (void *)(uintptr_t)p;
}

/* out[i,j,k] = in[i,j,k] * scale over a rank-3 view; params: in, out, N,
 * in strides 0..2, out strides 0..2, scale (f32); the flat thread index
 * covers N*2*3 elements (`skip_last`: a buggy kernel leaves the last one). */
static void scale3(const unsigned grid[3], const unsigned block[3], void **params, bool skip_last) {
  const float *in = arg_ptr(params, 0);
  float *out = arg_ptr(params, 1);
  int64_t n = arg_i64(params, 2);
  int64_t si[3] = {arg_i64(params, 3), arg_i64(params, 4), arg_i64(params, 5)};
  int64_t so[3] = {arg_i64(params, 6), arg_i64(params, 7), arg_i64(params, 8)};
  float scale;
  memcpy(&scale, params[9], 4);
  int64_t total = n * 6 - (skip_last ? 1 : 0);
  for (unsigned b = 0; b < grid[0]; b++)
    for (unsigned t = 0; t < block[0]; t++) {
      int64_t idx = (int64_t)b * block[0] + t;
      if (idx >= total) continue;
      int64_t i = idx / 6, j = (idx / 3) % 2, k = idx % 3;
      out[i * so[0] + j * so[1] + k * so[2]] = in[i * si[0] + j * si[1] + k * si[2]] * scale;
    }
}
static void k_scale(const unsigned g[3], const unsigned b[3], void **p) { scale3(g, b, p, false); }
static void k_scale_buggy(const unsigned g[3], const unsigned b[3], void **p) { scale3(g, b, p, true); }

/* (in: f32*, out: f32*, n: i64): out[i] = in[i] + 1 */
static void k_inc(const unsigned grid[3], const unsigned block[3], void **params) {
  const float *in = arg_ptr(params, 0);
  float *out = arg_ptr(params, 1);
  int64_t n = arg_i64(params, 2);
  for (int64_t i = 0; i < (int64_t)grid[0] * block[0]; i++)
    if (i < n) out[i] = in[i] + 1.0f;
}

/* f_g0 with two workspaces after its parameters: %ws (f32[ceil_div(N, 2)],
 * zeroed) and %scratch (i32[4], not zeroed).  It counts what it finds:
 * nonzero elements of %ws (the runtime must zero it once and the kernel
 * keeps it zero), and %scratch elements still holding the 0xFF poison;
 * it uses both, then leaves %ws zero as the contract says. */
static int64_t ws_nonzero, scratch_poisoned, ws_calls;
static void k_scale_ws(const unsigned g[3], const unsigned b[3], void **p) {
  scale3(g, b, p, false);
  float *ws = arg_ptr(p, 10);
  int32_t *scratch = arg_ptr(p, 11);
  int64_t n = (arg_i64(p, 2) + 1) / 2;
  for (int64_t i = 0; i < n; i++) {
    ws_nonzero += ws[i] != 0.0f;
    ws[i] += 1.0f; /* a semaphore's count, say */
  }
  for (int i = 0; i < 4; i++) {
    scratch_poisoned += scratch[i] == -1;
    scratch[i] = i;
  }
  for (int64_t i = 0; i < n; i++) ws[i] = 0.0f; /* the last block resets it */
  ws_calls++;
}

static const fake_kernel good_kernels[] = {{"f_g0", k_scale}, {"inc", k_inc}, {"f_g0_ws", k_scale_ws}, {NULL, NULL}};
static const fake_kernel buggy_kernels[] = {{"f_g0", k_scale_buggy}, {NULL, NULL}};

/* ---- the fusion under test ------------------------------------------------------------ */

/* T1 is a host reshape of the input, T3 a host permute of the kernel's
 * result, so the kernel must write T2 permuted ([3, 3N, 1]) for the output
 * to come out dense. */
static const char *k_fusion =
    "fusion @f {\n"
    "  %T0 = input f32[N, 6] {example=randn, seed=3, example_shape=[5, 6]}\n"
    "  %S0 = input f64 {example=1.5}\n"
    "  %T1 = reshape %T0 {host=true} : f32[N, 2, 3]\n"
    "  segment @g0 pointwise (%T1, %S0) -> (%T2) {\n"
    "    %T2 = mul %T1, %S0 : f32[N, 2, 3]\n"
    "  }\n"
    "  %T3 = permute %T2 {dims=[1, 0, 2], host=true} : f32[2, N, 3]\n"
    "  output %T3\n"
    "}\n";

typedef struct fixture {
  fu_source src;
  fu_module *m;
  fu_fusion *f;
  fu_op *seg;
  fu_value *T[4], *S0;
  fu_arg *inputs;
  uint32_t n_inputs;
} fixture;

static fu_value *value_named(fu_fusion *f, const char *name) {
  for (fu_op *op = fu_walk_first(&f->body); op; op = fu_walk_next(op))
    for (uint32_t i = 0; i < op->n_results; i++)
      if (op->results[i]->name && strcmp(op->results[i]->name, name) == 0) return op->results[i];
  return NULL;
}

/* Parses the fusion and attaches a hand-built kernel to its segment, as
 * `lower` would: tensors, the extent, strides of both tensors, the scalar. */
static bool fixture_init(fixture *fx, fu_diag_engine *diag, bool with_kernel) {
  memset(fx, 0, sizeof *fx);
  fx->src = (fu_source){"runtime.fir", k_fusion, strlen(k_fusion), 1};
  if (fu_parse_module(&fx->src, fu_default_allocator(), diag, &fx->m) != FU_OK) return false;
  if (fu_verify_module(fx->m, diag) != FU_OK) return false;
  fx->f = fx->m->first;
  for (fu_op *op = fx->f->body.first; op; op = op->next)
    if (op->kind == FU_OP_SEGMENT) fx->seg = op;
  char nm[8];
  for (int i = 0; i < 4; i++) {
    snprintf(nm, sizeof nm, "T%d", i);
    fx->T[i] = value_named(fx->f, nm);
  }
  fx->S0 = value_named(fx->f, "S0");
  if (with_kernel) {
    fu_module *m = fx->m;
    fu_kernel *k = fu_kernel_new(m, "f_g0");
    fu_kval *in = fu_kernel_tensor_param(m, k, "in", FU_DT_F32, fx->T[1], true, true, 16);
    fu_kval *out = fu_kernel_tensor_param(m, k, "out", FU_DT_F32, fx->T[2], false, true, 16);
    fu_kernel_extent_param(m, k, "N", FU_DT_I64, "N");
    for (int d = 0; d < 3; d++) fu_kernel_stride_param(m, k, NULL, FU_DT_I64, in, d);
    for (int d = 0; d < 3; d++) fu_kernel_stride_param(m, k, NULL, FU_DT_I64, out, d);
    fu_kernel_scalar_input_param(m, k, "s", FU_DT_F32, fx->S0);
    /* grid = ceil_div(N * 6, 4), block = 4 */
    k->grid[0] = fu_lexpr_binary(m, FU_LX_CEIL_DIV, fu_lexpr_binary(m, FU_LX_MUL, fu_lexpr_sym(m, "N"), fu_lexpr_const(m, 6)),
                                 fu_lexpr_const(m, 4));
    k->block[0] = 4;
    fx->seg->u.segment.kernel = k;
  }
  fu_input_options io;
  memset(&io, 0, sizeof io);
  return fu_interp_make_inputs(fx->f, &io, fu_default_allocator(), diag, &fx->inputs, &fx->n_inputs) == FU_OK;
}

static void fixture_free(fixture *fx) {
  fu_args_free(fx->inputs, fx->n_inputs, fu_default_allocator());
  if (fx->m) fu_module_free(fx->m);
}

/* ---- tests ------------------------------------------------------------------------------- */

static void test_plan_layouts(void) {
  captured c;
  fu_diag_engine diag = capture_engine(&c);
  fixture fx;
  CHECK(fixture_init(&fx, &diag, true));
  const fu_op *why = NULL;
  CHECK(fu_rt_fusion_is_lowered(fx.f, &why));
  fu_rt_plan p;
  fu_status st = fu_rt_plan_build(fx.f, fx.inputs, fx.n_inputs, fu_default_allocator(), &diag, &p);
  CHECK_EQ_INT(st, FU_OK);
  if (st != FU_OK) printf("%s", c.text);
  CHECK_EQ_INT(p.n_buffers, 2);
  CHECK_EQ_INT(p.n_launches, 1);
  /* Host aliases share their operand's buffer. */
  CHECK_EQ_INT(p.views[fx.T[0]->id].buffer, 0);
  CHECK_EQ_INT(p.views[fx.T[1]->id].buffer, 0);
  CHECK_EQ_INT(p.views[fx.T[2]->id].buffer, 1);
  CHECK_EQ_INT(p.views[fx.T[3]->id].buffer, 1);
  CHECK_EQ_INT(p.buffers[0].kind, FU_RT_BUF_INPUT);
  CHECK_EQ_INT(p.buffers[1].kind, FU_RT_BUF_KERNEL);
  CHECK(p.buffers[1].fusion_output);
  /* T1 = reshape of a dense [5, 6]: [6, 3, 1]. */
  const fu_rt_view *t1 = &p.views[fx.T[1]->id];
  CHECK_EQ_INT(t1->shape[0], 5);
  CHECK_EQ_INT(t1->strides[0], 6);
  CHECK_EQ_INT(t1->strides[1], 3);
  CHECK_EQ_INT(t1->strides[2], 1);
  /* T2 is written so that its permute T3 is dense: T2 strides [3, 15, 1]. */
  const fu_rt_view *t2 = &p.views[fx.T[2]->id];
  CHECK_EQ_INT(t2->strides[0], 3);
  CHECK_EQ_INT(t2->strides[1], 15);
  CHECK_EQ_INT(t2->strides[2], 1);
  const fu_rt_view *t3 = &p.views[fx.T[3]->id];
  CHECK_EQ_INT(t3->shape[0], 2);
  CHECK_EQ_INT(t3->strides[0], 15);
  CHECK_EQ_INT(t3->strides[1], 3);
  CHECK_EQ_INT(t3->strides[2], 1);
  /* Arguments: two buffers, N = 5, the six strides, the scalar as f32. */
  const fu_rt_launch_plan *lp = &p.launches[0];
  CHECK_EQ_INT(lp->n_args, 10);
  CHECK_EQ_INT(lp->args[0].buffer, 0);
  CHECK_EQ_INT(lp->args[1].buffer, 1);
  int64_t v;
  memcpy(&v, lp->args[2].bytes, 8);
  CHECK_EQ_INT(v, 5);
  memcpy(&v, lp->args[7].bytes, 8);
  CHECK_EQ_INT(v, 15);
  float s;
  CHECK_EQ_INT(lp->args[9].size, 4);
  memcpy(&s, lp->args[9].bytes, 4);
  CHECK(s == 1.5f);
  CHECK_EQ_INT(lp->config.grid[0], 8); /* ceil(30 / 4) */
  CHECK_EQ_INT(lp->config.block[0], 4);
  CHECK(!lp->empty);
  CHECK_EQ_INT(lp->bytes_read, 120);
  CHECK_EQ_INT(lp->bytes_written, 120);
  CHECK_EQ_INT(p.bytes_read, 120);
  CHECK_EQ_INT(p.bytes_written, 120);
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_rt_plan_print_launches(&sb, &p);
  CHECK(strstr(sb.data, "launch @f_g0: grid=[8, 1, 1] block=[4, 1, 1] smem=0") != NULL);
  CHECK(strstr(sb.data, "%out: f32[5, 2, 3] strides=[3, 15, 1] in buffer 1") != NULL);
  CHECK(strstr(sb.data, "%N: i64 = 5") != NULL);
  CHECK(strstr(sb.data, "%s: f32 = 1.5") != NULL);
  fu_strbuf_free(&sb);
  fu_rt_plan_free(&p);
  fixture_free(&fx);
}

static void test_plan_errors(void) {
  captured c;
  fu_diag_engine diag = capture_engine(&c);
  fixture fx;
  /* A segment with no kernel: located, says to compile first. */
  CHECK(fixture_init(&fx, &diag, false));
  const fu_op *why = NULL;
  CHECK(!fu_rt_fusion_is_lowered(fx.f, &why));
  CHECK(why == fx.seg);
  fu_rt_plan p;
  CHECK_EQ_INT(fu_rt_plan_build(fx.f, fx.inputs, fx.n_inputs, fu_default_allocator(), &diag, &p), FU_ERR_INVALID_ARG);
  CHECK(strstr(c.text, "segment '@g0' has no kernel: compile the fusion first") != NULL);
  fu_rt_plan_free(&p);
  fixture_free(&fx);

  /* A parameter with no role, and a grid beyond the device's range. */
  diag = capture_engine(&c);
  CHECK(fixture_init(&fx, &diag, true));
  fu_kernel *k = fx.seg->u.segment.kernel;
  fu_kernel_scalar_param(fx.m, k, "mystery", FU_DT_I32);
  CHECK_EQ_INT(fu_rt_plan_build(fx.f, fx.inputs, fx.n_inputs, fu_default_allocator(), &diag, &p), FU_ERR_UNSUPPORTED);
  CHECK(strstr(c.text, "parameter '%mystery' has no role") != NULL);
  fu_rt_plan_free(&p);
  k->n_params--;
  k->grid[1] = fu_lexpr_const(fx.m, 70000);
  diag = capture_engine(&c);
  CHECK_EQ_INT(fu_rt_plan_build(fx.f, fx.inputs, fx.n_inputs, fu_default_allocator(), &diag, &p), FU_ERR_RUNTIME);
  CHECK(strstr(c.text, "grid.y = 70000 is outside [0, 65535]") != NULL);
  fu_rt_plan_free(&p);
  /* An empty input: the launch is skipped, not sent with a zero grid. */
  k->grid[1] = fu_lexpr_const(fx.m, 1);
  fu_arg *in = fx.inputs;
  fu_host_tensor_free(&in[0].tensor);
  int64_t shape[2] = {0, 6};
  CHECK_EQ_INT(fu_host_tensor_alloc(&in[0].tensor, fu_default_allocator(), FU_DT_F32, 2, shape), FU_OK);
  diag = capture_engine(&c);
  CHECK_EQ_INT(fu_rt_plan_build(fx.f, fx.inputs, fx.n_inputs, fu_default_allocator(), &diag, &p), FU_OK);
  CHECK(p.n_launches == 1 && p.launches[0].empty);
  fu_rt_plan_free(&p);
  /* An empty axis beside one over the limit: still skipped, not refused
   * (a zero extent leaves the other dims unbounded). */
  k->grid[1] = fu_lexpr_const(fx.m, 70000);
  diag = capture_engine(&c);
  CHECK_EQ_INT(fu_rt_plan_build(fx.f, fx.inputs, fx.n_inputs, fu_default_allocator(), &diag, &p), FU_OK);
  CHECK(p.n_launches == 1 && p.launches[0].empty);
  CHECK(!strstr(c.text, "outside"));
  fu_rt_plan_free(&p);
  fixture_free(&fx);
}

/* The whole path over the fake driver: upload, poison, launch, download;
 * the result equals the interpreter's exactly (x * 1.5 in f32). */
static void test_exec_fake(void) {
  captured c;
  fu_diag_engine diag = capture_engine(&c);
  fu_rt *rt = open_fake(&diag);
  if (!rt) return;
  const fu_rt_device_info *d = fu_rt_device(rt);
  CHECK_STR(d->name, "Fake GPU 0");
  CHECK_STR(d->desc.name, "gpu_0"); /* an identifier, for schedules' device= */
  CHECK_EQ_INT(d->desc.sm, 90);
  CHECK_EQ_INT(d->desc.n_sms, 132);
  CHECK_NEAR(d->desc.mem_bandwidth_gbs, 3352.32, 0.01);
  CHECK(d->desc.mem_bytes == d->total_mem_bytes && d->desc.mem_bytes > 0);
  CHECK(!d->bandwidth_from_preset);
  CHECK(fu_device_valid(&d->desc, NULL)); /* the schedulers can take it as it is */
  char arch[16];
  fu_rt_device_arch(d, arch, sizeof arch);
  CHECK_STR(arch, "sm_90");
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_rt_device_print(&sb, d);
  CHECK(strstr(sb.data, "theoretical 3352 GB/s") != NULL);
  fu_strbuf_free(&sb);

  fixture fx;
  CHECK(fixture_init(&fx, &diag, true));
  fu_rt_plan p;
  CHECK_EQ_INT(fu_rt_plan_build(fx.f, fx.inputs, fx.n_inputs, fu_default_allocator(), &diag, &p), FU_OK);
  fu_arg *want = NULL;
  uint32_t n_want = 0;
  CHECK_EQ_INT(fu_interp_run(fx.f, fx.inputs, fx.n_inputs, NULL, fu_default_allocator(), &diag, &want, &n_want), FU_OK);

  for (int buggy = 0; buggy < 2; buggy++) {
    fake_table = buggy ? buggy_kernels : good_kernels;
    fu_rt_module *mod = NULL;
    CHECK_EQ_INT(fu_rt_module_load(rt, "fake ptx", 8, "f.ptx", &mod), FU_OK);
    if (!mod) break;
    CHECK_STR(fu_rt_module_info_log(mod), "ptxas info: 0 bytes spill");
    fu_rt_exec *e = NULL;
    int before = fake_live_allocs;
    CHECK_EQ_INT(fu_rt_exec_new(rt, &p, mod, fx.inputs, &diag, &e), FU_OK);
    CHECK_EQ_INT(fake_live_allocs, before + 2);
    CHECK_EQ_INT(fu_rt_exec_poison(e, 0xFF), FU_OK);
    int launches = fake_launches;
    CHECK_EQ_INT(fu_rt_exec_run(e), FU_OK);
    CHECK_EQ_INT(fake_launches, launches + 1);
    fu_arg *got = NULL;
    uint32_t n_got = 0;
    CHECK_EQ_INT(fu_rt_exec_outputs(e, fu_default_allocator(), &got, &n_got), FU_OK);
    CHECK_EQ_INT(n_got, 1);
    if (n_got == 1 && n_want == 1) {
      CHECK_EQ_INT(got[0].tensor.shape[0], 2);
      CHECK_EQ_INT(got[0].tensor.shape[1], 5);
      CHECK(fu_host_tensor_is_contiguous(&got[0].tensor));
      fu_check_result r;
      CHECK_EQ_INT(fu_check_compare(&got[0].tensor, &want[0].tensor, fu_check_default_tolerance(FU_DT_F32), &r), FU_OK);
      CHECK_EQ_INT(r.n_elements, 30);
      if (!buggy) {
        CHECK_EQ_INT(r.n_mismatch, 0);
        CHECK(r.max_abs_err == 0);
      } else {
        /* The element the buggy kernel skipped is T2[4, 1, 2], i.e. T3[1, 4, 2]: flat 29. */
        CHECK_EQ_INT(r.n_mismatch, 1);
        CHECK_EQ_INT(r.n_poison, 1);
        CHECK_EQ_INT(r.first_mismatch, 29);
        CHECK(isnan(r.got_first));
      }
    }
    fu_args_free(got, n_got, fu_default_allocator());

    if (!buggy) {
      fu_rt_bench_options bo;
      memset(&bo, 0, sizeof bo);
      bo.iters = 7;
      bo.copy_bytes = 64u << 20;
      fu_rt_bench_result br;
      launches = fake_launches;
      int settles = fake_settles;
      CHECK_EQ_INT(fu_rt_exec_bench(e, &bo, &br), FU_OK);
      CHECK_EQ_INT(fake_launches, launches + 10 + 7); /* warm-up and timed runs */
      CHECK_EQ_INT(fake_settles, settles + 7);         /* one spin after each flush */
      CHECK_EQ_INT(br.settle_us, 1000);
      CHECK_EQ_INT(br.n_kernels, 1);
      CHECK_EQ_INT(br.iters, 7);
      CHECK_EQ_INT(br.flush_bytes, 2u << 20);
      CHECK_NEAR(br.kernels[0].median_us, 10.0, 1e-3);
      CHECK_NEAR(br.total.median_us, 10.0, 1e-3);
      CHECK_EQ_INT(br.kernels[0].bytes, 240);
      CHECK_NEAR(br.kernels[0].gbs, 240 / 10e-6 / 1e9, 1e-6);
      /* the fake copies 1 MB per us: 2 TB/s counting reads and writes */
      CHECK_NEAR(br.copy_gbs, 2000.0, 1.0);
      CHECK_NEAR(br.total.pct_copy, 100.0 * br.total.gbs / br.copy_gbs, 1e-9);
      fu_rt_bench_result_free(&br);
    }
    fu_rt_exec_free(e);
    CHECK_EQ_INT(fake_live_allocs, before);
    fu_rt_module_unload(mod);
  }
  fu_args_free(want, n_want, fu_default_allocator());
  fu_rt_plan_free(&p);
  fixture_free(&fx);
  fu_rt_close(rt);
  CHECK_EQ_INT(c.errors, 0);
  if (c.errors) printf("%s", c.text);
}

/* A kernel of thread-block clusters (`cluster=2`): the plan carries the
 * cluster and --dump=launch shows it; the launch goes through
 * cuLaunchKernelEx with one attribute, the cluster dimension {2, 1, 1},
 * on the runtime's stream, never through cuLaunchKernel; more than 48 KiB
 * of dynamic shared memory is still asked for first.  A grid.x that is
 * not a multiple of the cluster is an error at the segment in the plan,
 * and in fu_rt_launch (nothing launched); a driver without
 * cuLaunchKernelEx is an error that says so. */
static void test_clusters(void) {
  captured c;
  fu_diag_engine diag = capture_engine(&c);
  fu_rt *rt = open_fake(&diag);
  if (!rt) return;
  fixture fx;
  CHECK(fixture_init(&fx, &diag, true));
  fu_kernel *k = fx.seg->u.segment.kernel;
  k->cluster = 2;
  k->smem_bytes = 64 * 1024;
  fu_rt_plan p;
  CHECK_EQ_INT(fu_rt_plan_build(fx.f, fx.inputs, fx.n_inputs, fu_default_allocator(), &diag, &p), FU_OK);
  const fu_rt_launch_plan *lp = &p.launches[0];
  CHECK_EQ_INT(lp->config.grid[0], 8);
  CHECK_EQ_INT(lp->config.cluster, 2);
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_rt_plan_print_launches(&sb, &p);
  CHECK(strstr(sb.data, "launch @f_g0: grid=[8, 1, 1] block=[4, 1, 1] smem=65536 cluster=2 (reads 120 bytes") != NULL);
  fu_strbuf_free(&sb);

  fake_table = good_kernels;
  fu_rt_module *mod = NULL;
  CHECK_EQ_INT(fu_rt_module_load(rt, "fake ptx", 8, "f.ptx", &mod), FU_OK);
  fu_rt_exec *e = NULL;
  if (mod) CHECK_EQ_INT(fu_rt_exec_new(rt, &p, mod, fx.inputs, &diag, &e), FU_OK);
  if (e) {
    int launches = fake_launches, ex = fake_launches_ex;
    fake_max_dynamic_smem = 0;
    CHECK_EQ_INT(fu_rt_exec_run(e), FU_OK);
    CHECK_EQ_INT(fake_launches_ex, ex + 1);
    CHECK_EQ_INT(fake_launches, launches + 1); /* the kernel ran once, through cuLaunchKernelEx */
    CHECK_EQ_INT(fake_max_dynamic_smem, 64 * 1024);
    CHECK_EQ_INT(fake_last_ex.gridDimX, 8);
    CHECK_EQ_INT(fake_last_ex.gridDimY, 1);
    CHECK_EQ_INT(fake_last_ex.gridDimZ, 1);
    CHECK_EQ_INT(fake_last_ex.blockDimX, 4);
    CHECK_EQ_INT(fake_last_ex.blockDimY, 1);
    CHECK_EQ_INT(fake_last_ex.sharedMemBytes, 64 * 1024);
    CHECK(fake_last_ex.hStream == (CUstream)(void *)&fake_stream_token);
    CHECK_EQ_INT(fake_last_ex.numAttrs, 1);
    CHECK_EQ_INT(fake_last_attr.id, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
    CHECK_EQ_INT(fake_last_attr.value.clusterDim.x, 2);
    CHECK_EQ_INT(fake_last_attr.value.clusterDim.y, 1);
    CHECK_EQ_INT(fake_last_attr.value.clusterDim.z, 1);
    /* the kernel computed through the Ex path: T3 = T1 * 1.5, dense */
    fu_arg *got = NULL;
    uint32_t n_got = 0;
    CHECK_EQ_INT(fu_rt_exec_outputs(e, fu_default_allocator(), &got, &n_got), FU_OK);
    if (n_got == 1) {
      const float *in = fx.inputs[0].tensor.data, *out = got[0].tensor.data;
      CHECK(out[1 * 15 + 4 * 3 + 2] == in[4 * 6 + 1 * 3 + 2] * 1.5f); /* T3[1, 4, 2] = T0[4, 5] * s */
    }
    fu_args_free(got, n_got, fu_default_allocator());
  }
  fu_rt_exec_free(e);
  fu_rt_plan_free(&p);

  /* A kernel without clusters still goes through cuLaunchKernel. */
  k->cluster = 0;
  CHECK_EQ_INT(fu_rt_plan_build(fx.f, fx.inputs, fx.n_inputs, fu_default_allocator(), &diag, &p), FU_OK);
  CHECK_EQ_INT(p.launches[0].config.cluster, 0);
  e = NULL;
  if (mod) CHECK_EQ_INT(fu_rt_exec_new(rt, &p, mod, fx.inputs, &diag, &e), FU_OK);
  if (e) {
    int launches = fake_launches, ex = fake_launches_ex;
    CHECK_EQ_INT(fu_rt_exec_run(e), FU_OK);
    CHECK_EQ_INT(fake_launches, launches + 1);
    CHECK_EQ_INT(fake_launches_ex, ex);
  }
  fu_rt_exec_free(e);
  fu_rt_plan_free(&p);
  CHECK_EQ_INT(c.errors, 0);
  if (c.errors) printf("%s", c.text);

  /* grid.x = 8 blocks in clusters of 4 is fine; 6 is not: an error at the
   * segment, naming the kernel and both numbers. */
  k->cluster = 4;
  k->grid[0] = fu_lexpr_const(fx.m, 6);
  diag = capture_engine(&c);
  CHECK_EQ_INT(fu_rt_plan_build(fx.f, fx.inputs, fx.n_inputs, fu_default_allocator(), &diag, &p), FU_ERR_INVALID_ARG);
  CHECK(strstr(c.text, "error: kernel '@f_g0': grid.x = 6 is not a multiple of its clusters of 4 blocks (cluster=4): "
                       "the last cluster would be partial\n") != NULL);
  fu_rt_plan_free(&p);

  /* The same check in fu_rt_launch itself, before the driver sees it. */
  fu_rt_func fn;
  memset(&fn, 0, sizeof fn);
  if (mod) CHECK_EQ_INT(fu_rt_module_function(mod, "f_g0", &fn), FU_OK);
  fu_rt_launch_config cfg = {{6, 1, 1}, {4, 1, 1}, 0, 4};
  int launches = fake_launches, ex = fake_launches_ex;
  diag = capture_engine(&c);
  CHECK_EQ_INT(fu_rt_launch(rt, &fn, &cfg, NULL), FU_ERR_INVALID_ARG);
  CHECK(strstr(c.text, "error: kernel 'f_g0' runs in clusters of 4 blocks along x, but its grid.x = 6 is not a "
                       "multiple of 4: not launched\n") != NULL);
  CHECK_EQ_INT(fake_launches, launches);
  CHECK_EQ_INT(fake_launches_ex, ex);
  /* A driver without cuLaunchKernelEx (before CUDA 11.8) runs the rest,
   * and says what a cluster kernel needs. */
  rt->api.launch_kernel_ex = NULL;
  cfg.grid[0] = 8;
  diag = capture_engine(&c);
  CHECK_EQ_INT(fu_rt_launch(rt, &fn, &cfg, NULL), FU_ERR_UNSUPPORTED);
  CHECK(strstr(c.text, "error: kernel 'f_g0' runs in clusters of 4 blocks, which needs cuLaunchKernelEx (a CUDA 11.8 "
                       "or later driver); this driver library has none\n") != NULL);
  CHECK_EQ_INT(fake_launches, launches);

  fu_rt_module_unload(mod);
  fixture_free(&fx);
  fu_rt_close(rt);
}

/* Workspaces: sized from the bindings, listed in --dump=launch, allocated
 * with the exec (a zeroed one zeroed once, the other poisoned with the
 * outputs), passed as pointers after the other arguments, freed at
 * teardown; a size that cannot be evaluated is a located error. */
static void test_workspaces(void) {
  captured c;
  fu_diag_engine diag = capture_engine(&c);
  fixture fx;
  CHECK(fixture_init(&fx, &diag, true));
  fu_module *m = fx.m;
  fu_kernel *k = fx.seg->u.segment.kernel;
  k->name = "f_g0_ws";
  fu_lexpr *half = fu_lexpr_binary(m, FU_LX_CEIL_DIV, fu_lexpr_sym(m, "N"), fu_lexpr_const(m, 2));
  fu_kernel_workspace_param(m, k, "ws", FU_DT_F32, half, true);
  fu_kernel_workspace_param(m, k, "scratch", FU_DT_I32, fu_lexpr_const(m, 4), false);
  fu_rt_plan p;
  CHECK_EQ_INT(fu_rt_plan_build(fx.f, fx.inputs, fx.n_inputs, fu_default_allocator(), &diag, &p), FU_OK);
  CHECK_EQ_INT(p.n_launches, 1);
  if (p.n_launches == 1) {
    const fu_rt_launch_plan *lp = &p.launches[0];
    CHECK_EQ_INT(lp->n_args, 12);
    const fu_rt_buffer *ws = &p.buffers[lp->args[10].buffer], *scratch = &p.buffers[lp->args[11].buffer];
    CHECK_EQ_INT(ws->kind, FU_RT_BUF_WORKSPACE);
    CHECK_EQ_INT(ws->ws_elems, 3); /* N = 5 */
    CHECK_EQ_INT(ws->bytes, 16);
    CHECK_EQ_INT(scratch->kind, FU_RT_BUF_WORKSPACE);
    CHECK_EQ_INT(scratch->ws_elems, 4);
    CHECK_EQ_INT(lp->bytes_read, 120); /* scratch counts as neither */
    CHECK_EQ_INT(lp->bytes_written, 120);
  }
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_rt_plan_print_launches(&sb, &p);
  CHECK(strstr(sb.data, "  %ws: workspace f32[3] zeroed in buffer 2 (16 bytes)\n") != NULL);
  CHECK(strstr(sb.data, "  %scratch: workspace i32[4] in buffer 3 (16 bytes)\n") != NULL);
  fu_strbuf_free(&sb);

  fu_rt *rt = open_fake(&diag);
  if (rt) {
    fake_table = good_kernels;
    fu_rt_module *mod = NULL;
    CHECK_EQ_INT(fu_rt_module_load(rt, "fake ptx", 8, "f.ptx", &mod), FU_OK);
    fu_rt_exec *e = NULL;
    int before = fake_live_allocs;
    CHECK_EQ_INT(fu_rt_exec_new(rt, &p, mod, fx.inputs, &diag, &e), FU_OK);
    CHECK_EQ_INT(fake_live_allocs, before + 4);
    ws_nonzero = scratch_poisoned = ws_calls = 0;
    for (int run = 0; run < 3 && e; run++) {
      CHECK_EQ_INT(fu_rt_exec_poison(e, 0xFF), FU_OK);
      CHECK_EQ_INT(fu_rt_exec_run(e), FU_OK);
    }
    CHECK_EQ_INT(ws_calls, 3);
    CHECK_EQ_INT(ws_nonzero, 0);        /* zeroed before the first launch, and kept zero */
    CHECK_EQ_INT(scratch_poisoned, 12); /* poisoned before each run like the outputs */
    fu_rt_exec_free(e);
    CHECK_EQ_INT(fake_live_allocs, before);
    fu_rt_module_unload(mod);
    fu_rt_close(rt);
  }
  fu_rt_plan_free(&p);
  CHECK_EQ_INT(c.errors, 0);

  /* A size over a symbol no input binds. */
  fu_kernel_workspace_param(m, k, "bad", FU_DT_F32, fu_lexpr_sym(m, "M"), false);
  CHECK_EQ_INT(fu_rt_plan_build(fx.f, fx.inputs, fx.n_inputs, fu_default_allocator(), &diag, &p), FU_ERR_INVALID_ARG);
  CHECK(strstr(c.text, "error: kernel '@f_g0_ws': the size of workspace '%bad' cannot be evaluated "
                       "(symbol 'M' is bound by no input)") != NULL);
  fu_rt_plan_free(&p);
  fixture_free(&fx);
}

/* An input whose data come in other strides than the fusion declares is
 * re-laid out on upload: the result is the same. */
static void test_exec_relayout(void) {
  captured c;
  fu_diag_engine diag = capture_engine(&c);
  fu_rt *rt = open_fake(&diag);
  if (!rt) return;
  fixture fx;
  CHECK(fixture_init(&fx, &diag, true));
  /* Replace input 0 with a column-major copy of the same values. */
  fu_host_tensor *t = &fx.inputs[0].tensor, cm;
  int64_t strides[2] = {1, 5};
  CHECK_EQ_INT(fu_host_tensor_alloc_strided(&cm, fu_default_allocator(), FU_DT_F32, 2, t->shape, strides), FU_OK);
  CHECK_EQ_INT(fu_host_tensor_copy_into(&cm, t), FU_OK);
  fu_arg *want = NULL;
  uint32_t n_want = 0;
  CHECK_EQ_INT(fu_interp_run(fx.f, fx.inputs, fx.n_inputs, NULL, fu_default_allocator(), &diag, &want, &n_want), FU_OK);
  fu_host_tensor_free(t);
  *t = cm;
  fu_rt_plan p;
  CHECK_EQ_INT(fu_rt_plan_build(fx.f, fx.inputs, fx.n_inputs, fu_default_allocator(), &diag, &p), FU_OK);
  CHECK_EQ_INT(p.views[fx.T[0]->id].strides[0], 6); /* the declared layout, not the data's */
  fake_table = good_kernels;
  fu_rt_module *mod = NULL;
  fu_rt_exec *e = NULL;
  CHECK_EQ_INT(fu_rt_module_load(rt, "x", 1, "x.ptx", &mod), FU_OK);
  CHECK_EQ_INT(fu_rt_exec_new(rt, &p, mod, fx.inputs, &diag, &e), FU_OK);
  CHECK_EQ_INT(fu_rt_exec_poison(e, 0xFF), FU_OK);
  CHECK_EQ_INT(fu_rt_exec_run(e), FU_OK);
  fu_arg *got = NULL;
  uint32_t n_got = 0;
  CHECK_EQ_INT(fu_rt_exec_outputs(e, fu_default_allocator(), &got, &n_got), FU_OK);
  if (n_got == 1 && n_want == 1) {
    fu_check_result r;
    CHECK_EQ_INT(fu_check_compare(&got[0].tensor, &want[0].tensor, fu_check_default_tolerance(FU_DT_F32), &r), FU_OK);
    CHECK_EQ_INT(r.n_mismatch, 0);
  }
  fu_args_free(got, n_got, fu_default_allocator());
  fu_args_free(want, n_want, fu_default_allocator());
  fu_rt_exec_free(e);
  fu_rt_module_unload(mod);
  fu_rt_plan_free(&p);
  fixture_free(&fx);
  fu_rt_close(rt);
}

/* An output written into an input of another layout (`output %T2
 * {alias=%T4}`, %T4 strided with gaps): no kernel can write it in place,
 * so the exec copies %T2 into %T4's memory after the kernel, element by
 * element through the host, keeping the bytes between %T4's elements. */
static void test_alias_strided_copy(void) {
  captured c;
  fu_diag_engine diag = capture_engine(&c);
  fu_rt *rt = open_fake(&diag);
  if (!rt) return;
  static const char *text = "fusion @f {\n"
                            "  %T0 = input f32[N, 6] {example=randn, seed=3, example_shape=[3, 6]}\n"
                            "  %S0 = input f64 {example=1.5}\n"
                            "  %T4 = input f32[N, 2, 3] {strides=[8, 4, 1], example=ones}\n"
                            "  %T1 = reshape %T0 {host=true} : f32[N, 2, 3]\n"
                            "  segment @g0 pointwise (%T1, %S0) -> (%T2) {\n"
                            "    %T2 = mul %T1, %S0 : f32[N, 2, 3]\n"
                            "  }\n"
                            "  output %T2 {alias=%T4}\n"
                            "}\n";
  fu_source src = {"alias.fir", text, strlen(text), 1};
  fu_module *m = NULL;
  CHECK_EQ_INT(fu_parse_module(&src, fu_default_allocator(), &diag, &m), FU_OK);
  if (!m || fu_verify_module(m, &diag) != FU_OK) {
    CHECK(false);
    if (m) fu_module_free(m);
    fu_rt_close(rt);
    return;
  }
  fu_fusion *f = m->first;
  fu_op *seg = NULL;
  for (fu_op *op = f->body.first; op; op = op->next)
    if (op->kind == FU_OP_SEGMENT) seg = op;
  fu_value *T1 = value_named(f, "T1"), *T2 = value_named(f, "T2"), *T4 = value_named(f, "T4");
  fu_kernel *k = fu_kernel_new(m, "f_g0");
  fu_kval *in = fu_kernel_tensor_param(m, k, "in", FU_DT_F32, T1, true, true, 16);
  fu_kval *out = fu_kernel_tensor_param(m, k, "out", FU_DT_F32, T2, false, true, 16);
  fu_kernel_extent_param(m, k, "N", FU_DT_I64, "N");
  for (int d = 0; d < 3; d++) fu_kernel_stride_param(m, k, NULL, FU_DT_I64, in, d);
  for (int d = 0; d < 3; d++) fu_kernel_stride_param(m, k, NULL, FU_DT_I64, out, d);
  fu_kernel_scalar_input_param(m, k, "s", FU_DT_F32, value_named(f, "S0"));
  k->grid[0] = fu_lexpr_const(m, 5);
  k->block[0] = 4;
  seg->u.segment.kernel = k;
  fu_input_options io;
  memset(&io, 0, sizeof io);
  fu_arg *inputs = NULL, *want = NULL, *got = NULL;
  uint32_t n_inputs = 0, n_want = 0, n_got = 0;
  CHECK_EQ_INT(fu_interp_make_inputs(f, &io, fu_default_allocator(), &diag, &inputs, &n_inputs), FU_OK);
  CHECK_EQ_INT(fu_interp_run(f, inputs, n_inputs, NULL, fu_default_allocator(), &diag, &want, &n_want), FU_OK);
  fu_rt_plan p;
  CHECK_EQ_INT(fu_rt_plan_build(f, inputs, n_inputs, fu_default_allocator(), &diag, &p), FU_OK);
  CHECK_EQ_INT(p.n_alias_copies, 1);
  if (p.n_alias_copies == 1) CHECK(!p.alias_copies[0].dense);
  fake_table = good_kernels;
  fu_rt_module *mod = NULL;
  fu_rt_exec *e = NULL;
  CHECK_EQ_INT(fu_rt_module_load(rt, "x", 1, "x.ptx", &mod), FU_OK);
  CHECK_EQ_INT(fu_rt_exec_new(rt, &p, mod, inputs, &diag, &e), FU_OK);
  CHECK_EQ_INT(fu_rt_exec_run(e), FU_OK);
  CHECK_EQ_INT(fu_rt_exec_outputs(e, fu_default_allocator(), &got, &n_got), FU_OK);
  fu_host_tensor after;
  CHECK_EQ_INT(fu_rt_exec_input_after(e, T4, fu_default_allocator(), &after), FU_OK);
  if (n_got == 1 && n_want == 1) {
    fu_check_result r;
    CHECK_EQ_INT(fu_check_compare(&got[0].tensor, &want[0].tensor, fu_check_default_tolerance(FU_DT_F32), &r), FU_OK);
    CHECK_EQ_INT(r.n_mismatch, 0);
    CHECK_EQ_INT(fu_check_compare(&after, &want[0].tensor, fu_check_default_tolerance(FU_DT_F32), &r), FU_OK);
    CHECK_EQ_INT(r.n_mismatch, 0);
    fu_host_tensor_free(&after);
  }
  fu_args_free(got, n_got, fu_default_allocator());
  fu_args_free(want, n_want, fu_default_allocator());
  fu_args_free(inputs, n_inputs, fu_default_allocator());
  fu_rt_exec_free(e);
  fu_rt_module_unload(mod);
  fu_rt_plan_free(&p);
  fu_module_free(m);
  fu_rt_close(rt);
  if (c.errors) fprintf(stderr, "%s", c.text);
}

/* Two kernels and the intermediate between them: its own buffer, poisoned
 * and written by the first kernel, read by the second; the fusion's bytes
 * count neither. */
static void test_two_segments(void) {
  captured c;
  fu_diag_engine diag = capture_engine(&c);
  static const char *text = "fusion @two {\n"
                            "  %T0 = input f32[N] {example=randn, seed=4, example_shape=[7]}\n"
                            "  segment @g0 pointwise (%T0) -> (%T1) {\n"
                            "    %T1 = add %T0, 1.0 : f32[N]\n"
                            "  }\n"
                            "  segment @g1 pointwise (%T1) -> (%T2) {\n"
                            "    %T2 = add %T1, 1.0 : f32[N]\n"
                            "  }\n"
                            "  output %T2\n"
                            "}\n";
  fu_source src = {"two.fir", text, strlen(text), 1};
  fu_module *m = NULL;
  CHECK_EQ_INT(fu_parse_module(&src, fu_default_allocator(), &diag, &m), FU_OK);
  if (!m) {
    printf("%s", c.text);
    return;
  }
  fu_fusion *f = m->first;
  for (fu_op *op = f->body.first; op; op = op->next) {
    if (op->kind != FU_OP_SEGMENT) continue;
    fu_kernel *k = fu_kernel_new(m, "inc");
    fu_kernel_tensor_param(m, k, "in", FU_DT_F32, op->operands[0], true, true, 4);
    fu_kernel_tensor_param(m, k, "out", FU_DT_F32, op->u.segment.outputs[0], false, true, 4);
    fu_kernel_extent_param(m, k, "N", FU_DT_I64, "N");
    k->block[0] = 32;
    op->u.segment.kernel = k;
  }
  fu_arg *in = NULL, *want = NULL, *got = NULL;
  uint32_t n_in = 0, n_want = 0, n_got = 0;
  fu_input_options io;
  memset(&io, 0, sizeof io);
  CHECK_EQ_INT(fu_interp_make_inputs(f, &io, fu_default_allocator(), &diag, &in, &n_in), FU_OK);
  CHECK_EQ_INT(fu_interp_run(f, in, n_in, NULL, fu_default_allocator(), &diag, &want, &n_want), FU_OK);
  fu_rt_plan p;
  CHECK_EQ_INT(fu_rt_plan_build(f, in, n_in, fu_default_allocator(), &diag, &p), FU_OK);
  CHECK_EQ_INT(p.n_launches, 2);
  if (p.n_launches != 2) {
    printf("%s", c.text);
    fu_rt_plan_free(&p);
    fu_args_free(want, n_want, fu_default_allocator());
    fu_args_free(in, n_in, fu_default_allocator());
    fu_module_free(m);
    return;
  }
  CHECK_EQ_INT(p.n_buffers, 3);
  if (p.n_buffers == 3) {
    CHECK_EQ_INT(p.buffers[1].kind, FU_RT_BUF_KERNEL);
    CHECK(!p.buffers[1].fusion_output);
    CHECK(p.buffers[2].fusion_output);
  }
  CHECK_EQ_INT(p.launches[1].args[0].buffer, 1); /* g1 reads what g0 wrote */
  CHECK_EQ_INT(p.launches[1].bytes_read, 28);
  CHECK_EQ_INT(p.bytes_read, 28);    /* the input only */
  CHECK_EQ_INT(p.bytes_written, 28); /* the output only */
  fu_rt *rt = open_fake(&diag);
  fake_table = good_kernels;
  fu_rt_module *mod = NULL;
  fu_rt_exec *e = NULL;
  CHECK_EQ_INT(fu_rt_module_load(rt, "x", 1, "two.ptx", &mod), FU_OK);
  CHECK_EQ_INT(fu_rt_exec_new(rt, &p, mod, in, &diag, &e), FU_OK);
  int launches = fake_launches;
  CHECK_EQ_INT(fu_rt_exec_poison(e, 0xFF), FU_OK);
  CHECK_EQ_INT(fu_rt_exec_run(e), FU_OK);
  CHECK_EQ_INT(fake_launches, launches + 2);
  CHECK_EQ_INT(fu_rt_exec_outputs(e, fu_default_allocator(), &got, &n_got), FU_OK);
  if (n_got == 1 && n_want == 1) {
    fu_check_result r;
    CHECK_EQ_INT(fu_check_compare(&got[0].tensor, &want[0].tensor, fu_check_default_tolerance(FU_DT_F32), &r), FU_OK);
    CHECK_EQ_INT(r.n_mismatch, 0);
  }
  fu_rt_bench_options bo;
  memset(&bo, 0, sizeof bo);
  bo.iters = 3;
  bo.copy_bytes = 1u << 20;
  fu_rt_bench_result br;
  CHECK_EQ_INT(fu_rt_exec_bench(e, &bo, &br), FU_OK);
  CHECK_EQ_INT(br.n_kernels, 2);
  CHECK_NEAR(br.total.median_us, 20.0, 1e-3); /* two kernels of 10 us */
  CHECK_EQ_INT(br.total.bytes, 56);
  fu_rt_bench_result_free(&br);
  fu_args_free(got, n_got, fu_default_allocator());
  fu_args_free(want, n_want, fu_default_allocator());
  fu_args_free(in, n_in, fu_default_allocator());
  fu_rt_exec_free(e);
  fu_rt_module_unload(mod);
  fu_rt_close(rt);
  fu_rt_plan_free(&p);
  fu_module_free(m);
}

static void test_no_device(void) {
  captured c;
  fu_diag_engine diag = capture_engine(&c);
  fu_rt_options o;
  memset(&o, 0, sizeof o);
  o.libcuda_path = "/nonexistent/libcuda.so.1";
  fu_rt *rt = (fu_rt *)&o; /* must be reset */
  CHECK_EQ_INT(fu_rt_open(&o, fu_default_allocator(), &diag, &rt), FU_ERR_UNSUPPORTED);
  CHECK(rt == NULL);
  CHECK(strstr(c.text, "error: no CUDA device found (cannot load the CUDA driver library: /nonexistent/libcuda.so.1") !=
        NULL);

  diag = capture_engine(&c);
  fu_cuda_api api = fake_api();
  o.api = &api;
  fake_init_result = CUDA_ERROR_NO_DEVICE;
  CHECK_EQ_INT(fu_rt_open(&o, fu_default_allocator(), &diag, &rt), FU_ERR_UNSUPPORTED);
  fake_init_result = CUDA_SUCCESS;
  CHECK_STR(c.text, "error: no CUDA device found (cuInit: CUDA_ERROR_NO_DEVICE)\n");

  diag = capture_engine(&c);
  o.device_ordinal = 3;
  CHECK_EQ_INT(fu_rt_open(&o, fu_default_allocator(), &diag, &rt), FU_ERR_INVALID_ARG);
  CHECK(strstr(c.text, "CUDA device 3 does not exist (1 device found)") != NULL);
}

/* A driver that reports no memory clock: the bandwidth comes from the
 * preset of the same architecture, and the description says so. */
static void test_bandwidth_fallback(void) {
  captured c;
  fu_diag_engine diag = capture_engine(&c);
  fake_no_mem_clock = true;
  fu_rt *rt = open_fake(&diag);
  fake_no_mem_clock = false;
  if (!rt) return;
  const fu_rt_device_info *d = fu_rt_device(rt);
  fu_device preset;
  CHECK(fu_device_preset("sm_90", &preset));
  CHECK(d->bandwidth_from_preset);
  CHECK_NEAR(d->desc.mem_bandwidth_gbs, preset.mem_bandwidth_gbs, 1e-9);
  CHECK(fu_device_valid(&d->desc, NULL));
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_rt_device_print(&sb, d);
  CHECK(strstr(sb.data, "(the driver reports no memory clock: the preset's figure)") != NULL);
  fu_strbuf_free(&sb);
  fu_rt_close(rt);
}

static void test_driver_errors(void) {
  captured c;
  fu_diag_engine diag = capture_engine(&c);
  fu_rt *rt = open_fake(&diag);
  if (!rt) return;
  fu_rt_module *mod = NULL;
  CHECK_EQ_INT(fu_rt_module_load(rt, "bad ptx", 7, "broken.ptx", &mod), FU_ERR_RUNTIME);
  CHECK(mod == NULL);
  CHECK(strstr(c.text, "error: cuModuleLoadDataEx('broken.ptx') failed: CUDA_ERROR_INVALID_PTX: fake error") != NULL);
  CHECK(strstr(c.text, "note: the JIT's error log for 'broken.ptx': ptxas fatal: Unknown instruction 'bad'\n") != NULL);

  diag = capture_engine(&c);
  fake_table = good_kernels;
  CHECK_EQ_INT(fu_rt_module_load(rt, "ok", 2, "ok.ptx", &mod), FU_OK);
  fu_rt_func fn;
  CHECK_EQ_INT(fu_rt_module_function(mod, "nope", &fn), FU_ERR_INVALID_ARG);
  CHECK(strstr(c.text, "the PTX 'ok.ptx' has no kernel 'nope'") != NULL);
  fu_rt_module_unload(mod);

  diag = capture_engine(&c);
  fu_rt_ptr ptr = 0;
  CHECK_EQ_INT(fu_rt_mem_alloc(rt, ((size_t)1 << 33), &ptr), FU_ERR_RUNTIME);
  CHECK(strstr(c.text, "cuMemAlloc(8589934592 bytes) failed: CUDA_ERROR_OUT_OF_MEMORY") != NULL);
  fu_rt_close(rt);
}

static void fill_f32(fu_host_tensor *t, const float *v, int n) { memcpy(t->data, v, (size_t)n * 4); }

static void test_compare(void) {
  fu_allocator al = fu_default_allocator();
  int64_t shape[1] = {4};
  fu_host_tensor g, w;
  CHECK_EQ_INT(fu_host_tensor_alloc(&g, al, FU_DT_F32, 1, shape), FU_OK);
  CHECK_EQ_INT(fu_host_tensor_alloc(&w, al, FU_DT_F32, 1, shape), FU_OK);
  float wv[4] = {1.0f, NAN, INFINITY, 0.0f};
  float gv[4] = {1.000001f, NAN, INFINITY, 1e-7f};
  fill_f32(&w, wv, 4);
  fill_f32(&g, gv, 4);
  fu_check_result r;
  fu_check_tolerance tol = fu_check_default_tolerance(FU_DT_F32);
  CHECK_EQ_INT(fu_check_compare(&g, &w, tol, &r), FU_OK);
  CHECK_EQ_INT(r.n_mismatch, 0);
  CHECK_NEAR(r.max_abs_err, 1e-6, 2e-7);
  /* A poisoned NaN never passes, even against a NaN. */
  memset((char *)g.data + 4, 0xFF, 4);
  CHECK_EQ_INT(fu_check_compare(&g, &w, tol, &r), FU_OK);
  CHECK_EQ_INT(r.n_mismatch, 1);
  CHECK_EQ_INT(r.n_poison, 1);
  CHECK_EQ_INT(r.first_mismatch, 1);
  /* NaN against a number, -inf against inf, and out of tolerance. */
  float bad[4] = {1.001f, 0.0f, -INFINITY, 0.0f};
  fill_f32(&g, bad, 4);
  CHECK_EQ_INT(fu_check_compare(&g, &w, tol, &r), FU_OK);
  CHECK_EQ_INT(r.n_mismatch, 3);
  CHECK_EQ_INT(r.first_mismatch, 0);
  CHECK_NEAR(r.got_first, 1.001, 1e-6);
  fu_host_tensor_free(&g);
  fu_host_tensor_free(&w);

  /* Bools: exact, and a byte other than 0/1 fails. */
  CHECK_EQ_INT(fu_host_tensor_alloc(&g, al, FU_DT_BOOL, 1, shape), FU_OK);
  CHECK_EQ_INT(fu_host_tensor_alloc(&w, al, FU_DT_BOOL, 1, shape), FU_OK);
  ((unsigned char *)w.data)[2] = 1;
  ((unsigned char *)g.data)[2] = 1;
  tol = fu_check_default_tolerance(FU_DT_BOOL);
  CHECK(tol.rtol == 0 && tol.atol == 0);
  CHECK_EQ_INT(fu_check_compare(&g, &w, tol, &r), FU_OK);
  CHECK_EQ_INT(r.n_mismatch, 0);
  ((unsigned char *)g.data)[3] = 0xFF;
  CHECK_EQ_INT(fu_check_compare(&g, &w, tol, &r), FU_OK);
  CHECK_EQ_INT(r.n_mismatch, 1);
  CHECK_EQ_INT(r.n_poison, 1);
  fu_host_tensor_free(&g);
  fu_host_tensor_free(&w);

  /* Ints exact; f16 within ~one rounding; shapes must agree. */
  CHECK_EQ_INT(fu_host_tensor_alloc(&g, al, FU_DT_I32, 1, shape), FU_OK);
  CHECK_EQ_INT(fu_host_tensor_alloc(&w, al, FU_DT_I32, 1, shape), FU_OK);
  ((int32_t *)g.data)[0] = 7;
  ((int32_t *)w.data)[0] = 8;
  CHECK_EQ_INT(fu_check_compare(&g, &w, fu_check_default_tolerance(FU_DT_I32), &r), FU_OK);
  CHECK_EQ_INT(r.n_mismatch, 1);
  CHECK(r.max_abs_err == 1);
  fu_host_tensor_free(&g);
  fu_host_tensor_free(&w);
  CHECK_EQ_INT(fu_host_tensor_alloc(&g, al, FU_DT_F16, 1, shape), FU_OK);
  CHECK_EQ_INT(fu_host_tensor_alloc(&w, al, FU_DT_F16, 1, shape), FU_OK);
  for (int i = 0; i < 4; i++) {
    ((uint16_t *)w.data)[i] = fu_f16_from_double(1000.0 + i);
    ((uint16_t *)g.data)[i] = (uint16_t)(fu_f16_from_double(1000.0 + i) + (i == 3)); /* one ulp off */
  }
  CHECK_EQ_INT(fu_check_compare(&g, &w, fu_check_default_tolerance(FU_DT_F16), &r), FU_OK);
  CHECK_EQ_INT(r.n_mismatch, 0);
  CHECK_NEAR(r.max_abs_err, 0.5, 1e-12);
  fu_host_tensor w2;
  int64_t shape2[1] = {3};
  CHECK_EQ_INT(fu_host_tensor_alloc(&w2, al, FU_DT_F16, 1, shape2), FU_OK);
  CHECK_EQ_INT(fu_check_compare(&g, &w2, fu_check_default_tolerance(FU_DT_F16), &r), FU_ERR_INVALID_ARG);
  fu_host_tensor_free(&w2);
  fu_host_tensor_free(&g);
  fu_host_tensor_free(&w);
}

static void test_strided_copy(void) {
  /* A 2x3 transposed view copied to row-major, and the span helper. */
  float src[6] = {0, 1, 2, 3, 4, 5}; /* column-major 2x3: element (i, j) at j*2 + i */
  float dst[6] = {0};
  int64_t shape[2] = {2, 3}, ss[2] = {1, 2}, ds[2] = {3, 1};
  fu_rt_strided_copy(dst, ds, src, ss, 2, shape, 4);
  float want[6] = {0, 2, 4, 1, 3, 5};
  CHECK(memcmp(dst, want, sizeof want) == 0);
  int64_t span;
  CHECK(fu_rt_span_elems(2, shape, ss, &span) && span == 6);
  int64_t bshape[2] = {4, 3}, bst[2] = {0, 1};
  CHECK(fu_rt_span_elems(2, bshape, bst, &span) && span == 3);
  int64_t eshape[2] = {0, 3};
  CHECK(fu_rt_span_elems(2, eshape, ds, &span) && span == 0);
  int64_t huge[2] = {INT64_MAX / 2, 4};
  CHECK(!fu_rt_span_elems(2, huge, ds, &span));
}

/* ---- fuser-run over the fake driver library ----------------------------------------
 *
 * `test_runtime --tool FUSER_RUN FAKE_LIB` runs the tool's GPU path with
 * test/fake_cuda.c loaded as the driver (FUSER_LIBCUDA): lowered fusions
 * with hand-written kernel IR whose entry names the fake implements. */

#include <sys/wait.h>
#include <unistd.h>

static const char *g_tool, *g_fake_lib;
static char g_dir[64];

/* One thread per element i < N, under `if %p` (the fixtures' kernel heads). */
#define K_ELEMENT_HEAD \
    "        grid=[ceil_div(N, 128), 1, 1] block=[128, 1, 1] smem=0 index=i64 {\n" \
    "      %%tid = special thread_idx.x : i64\n" \
    "      %%bid = special block_idx.x : i64\n" \
    "      %%c128 = const 128 : i64\n" \
    "      %%t0 = mul %%bid, %%c128 : i64\n" \
    "      %%i = add %%t0, %%tid : i64\n" \
    "      %%p = lt %%i, %%N : bool\n" \
    "      if %%p {\n"

static const char *k_lowered =
    "fusion @f {\n"
    "  %%T0 = input %s[N] {example=randn, seed=1, example_shape=[1000]}\n"
    "%s"
    "  segment @g0 pointwise (%%T0%s) -> (%%T1) {\n"
    "    %%T1 = %s : %s[N]\n"
    "    kernel @%s (%%in: global %s[N] readonly noalias bind=%%T0, %%out: global %s[N] noalias bind=%%T1%s, %%N: i64 "
    "extent=N)\n"
    K_ELEMENT_HEAD
    "        %%x = load %%in[%%i] : %s\n"
    "        %%one = const 1 : %s\n"
    "        %%y = %s : %s\n"
    "        store %%out[%%i], %%y\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "  output %%T1\n"
    "}\n";

/* A lowered f32 fusion T1 = T0 * S0 whose kernel is `kernel`, or the i32
 * fusion T1 = T0 + 1. */
static void write_lowered(const char *path, const char *kernel, bool i32) {
  FILE *f = fopen(path, "w");
  if (!f) {
    CHECK(false);
    return;
  }
  if (i32)
    fprintf(f, k_lowered, "i32", "", "", "add %T0, 1", "i32", kernel, "i32", "i32", "", "i32", "i32", "add %x, %one",
            "i32");
  else
    fprintf(f, k_lowered, "f32", "  %S0 = input f32 {example=2.5}\n", ", %S0", "mul %T0, %S0", "f32", kernel, "f32",
            "f32", ", %s: f32 input=%S0", "f32", "f32", "mul %x, %s", "f32");
  fclose(f);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) {
    CHECK(false);
    return;
  }
  fputs(text, f);
  fclose(f);
}

/* Runs `env FUSER_LIBCUDA=fake [ENV] fuser-run ARGS 2>&1`; the exit code, the
 * output in out. */
static int run_tool(const char *env, const char *args, char *out, size_t cap) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "cd '%s' && FUSER_LIBCUDA='%s' %s '%s' %s 2>&1", g_dir, g_fake_lib, env, g_tool, args);
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  size_t n = fread(out, 1, cap - 1, p);
  out[n] = '\0';
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char g_out[65536];

static void test_tool_check_pass(void) {
  write_lowered("/dev/null", "fake_scale", false); /* exercises the writer on a sink */
  char path[128];
  snprintf(path, sizeof path, "%s/low.fir", g_dir);
  write_lowered(path, "fake_scale", false);
  snprintf(path, sizeof path, "%s/k.ptx", g_dir);
  write_text(path, "// fake PTX\n");
  int rc = run_tool("", "low.fir --ptx k.ptx --check --dump=launch,jit --print-values 2", g_out, sizeof g_out);
  CHECK_EQ_INT(rc, 0);
  CHECK(strstr(g_out, "fusion @f: 2 inputs, 1 output (gpu 0: Fake H100 (host memory), 1 kernel)\n") != NULL);
  CHECK(strstr(g_out, "launch @fake_scale: grid=[8, 1, 1] block=[128, 1, 1] smem=0 (reads 4000 bytes, writes 4000 bytes)") !=
        NULL);
  CHECK(strstr(g_out, "  %s: f32 = 2.5\n") != NULL);
  CHECK(strstr(g_out, "JIT log of @f:\nptxas info: fake JIT, 0 registers") != NULL);
  CHECK(strstr(g_out, "  check %T1: PASS f32[1000]; max abs err 0, max rel err 0 (rtol 1e-05, atol 1e-06)\n") != NULL);
  if (rc != 0 || !strstr(g_out, "PASS")) printf("%s", g_out);  /* the old names are aliases of FUSER_DUMP's launch_params, kernel_args and ptxas_verbose */
  CHECK(strstr(g_out, "// ----- launch_params @f: the launch plan, on the GPU -----\nlaunch @fake_scale: grid=[8, 1, 1]") != NULL);
  CHECK(strstr(g_out, "// ----- kernel_args @f: the launch plan and its buffers, on the GPU -----\n") != NULL);
  CHECK(strstr(g_out, "\nbuffer 0 at 0x") != NULL);
  CHECK(strstr(g_out, "// ----- ptxas_verbose @f: the JIT's info log -----\nJIT log of @f:\n") != NULL);
  rc = run_tool("FUSER_DUMP=eff_bandwidth,ptx", "low.fir --ptx k.ptx --print-values 0", g_out, sizeof g_out);
  CHECK_EQ_INT(rc, 0);
  CHECK(strstr(g_out, "// ----- eff_bandwidth @f: one run, L2 not flushed -----\nkernel @fake_scale: ") != NULL);
  CHECK(strstr(g_out, "\ntotal: ") != NULL);
  CHECK(strstr(g_out, "// ----- ptx @f: the PTX of --ptx, loaded -----\n// fake PTX\n") != NULL);
  if (rc != 0) printf("%s", g_out);
}

static void test_tool_json_bench(void) {
  int rc = run_tool("", "low.fir --ptx k.ptx --check --bench --iters 5 --warmup 2 --json --print-values 1", g_out,
                    sizeof g_out);
  CHECK_EQ_INT(rc, 0);
  CHECK(strstr(g_out, "{\"fusions\": [\n  {\"fusion\": \"f\", \"device\": \"gpu\", \"gpu\": \"Fake H100 (host memory)\"") !=
        NULL);
  CHECK(strstr(g_out, "\"launches\": [{\"kernel\": \"fake_scale\", \"grid\": [8, 1, 1], \"block\": [128, 1, 1], \"smem\": 0, "
                      "\"bytes_read\": 4000, \"bytes_written\": 4000}]") != NULL);
  CHECK(strstr(g_out, "\"check_pass\": true") != NULL);
  CHECK(strstr(g_out, "\"bench\": {\"iters\": 5, \"warmup\": 2, \"l2_flush_bytes\": 2097152, \"copy_bytes\": 67108864, "
                      "\"copy_gbs\": 2000.000") != NULL);
  CHECK(strstr(g_out, "\"kernels\": [{\"name\": \"fake_scale\", \"median_us\": 5.0000") != NULL);
  CHECK(strstr(g_out, "\"total\": {\"name\": \"total\", \"median_us\": 5.0000, \"min_us\": 5.0000, \"max_us\": 5.0000, "
                      "\"bytes\": 8000, \"gbs\": 1.600, \"pct_copy\": 0.080}") != NULL);
  CHECK(strstr(g_out, "]}\n") != NULL);
  if (rc != 0) printf("%s", g_out);
  /* The text form of the same. */
  rc = run_tool("", "low.fir --ptx k.ptx --bench --iters 3 --no-flush --print-values 0", g_out, sizeof g_out);
  CHECK_EQ_INT(rc, 0);
  CHECK(strstr(g_out, "  bench: median of 3 runs after 10 warm-up, L2 not flushed; copy bandwidth 2000.0 GB/s (64 MiB "
                      "copied, read + write)\n    kernel @fake_scale: median 5.00 us") != NULL);
}

static void test_tool_check_fail(void) {
  char path[128];
  snprintf(path, sizeof path, "%s/skip.fir", g_dir);
  write_lowered(path, "fake_scale_skip", false);
  int rc = run_tool("", "skip.fir --ptx k.ptx --check --print-values 0", g_out, sizeof g_out);
  CHECK_EQ_INT(rc, 1);
  CHECK(strstr(g_out, "  check %T1: FAIL f32[1000]: 1 of 1000 elements differ (1 still hold the 0xFF poison: never "
                      "written); first at flat index 999: got nan, want ") != NULL);
  /* An int output: the second run poisoned with 0x00 passes too. */
  snprintf(path, sizeof path, "%s/int.fir", g_dir);
  write_lowered(path, "fake_inc_i32", true);
  rc = run_tool("", "int.fir --ptx k.ptx --check --print-values 0", g_out, sizeof g_out);
  CHECK_EQ_INT(rc, 0);
  CHECK(strstr(g_out, "  check %T1: PASS i32[1000]; max abs err 0, max rel err 0 (exact)\n") != NULL);
  if (rc != 0) printf("%s", g_out);
}

/* `cluster=C` through fuser-run and the fake driver library: the launch
 * plan shows the cluster, the kernel (which the fake runs only in
 * clusters of 2) goes through cuLaunchKernelEx and passes its check; a
 * grid.x that clusters of 4 do not divide stops the run before any
 * launch, with an error at the segment. */
static void test_tool_clusters(void) {
  static const char *const cases[] = {"cluster=2", "cluster=4"};
  for (int i = 0; i < 2; i++) {
    char path[128], text[8192];
    snprintf(path, sizeof path, "%s/cl.fir", g_dir);
    write_lowered(path, "fake_scale_cluster2", false);
    /* the fixture's kernel head, with the cluster and 1200 elements (10 blocks) for the second case */
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[n] = '\0';
    char *head = strstr(text, "smem=0 index=i64"), *shape = strstr(text, "example_shape=[1000]");
    CHECK(head && shape);
    if (!head || !shape) return;
    char out[8192];
    snprintf(out, sizeof out, "%.*s%s%.*ssmem=0 %s index=i64%s", (int)(shape - text), text,
             i ? "example_shape=[1200]" : "example_shape=[1000]", (int)(head - shape - 20), shape + 20, cases[i],
             head + 16);
    write_text(path, out);
    snprintf(path, sizeof path, "%s/k.ptx", g_dir);
    write_text(path, "// fake PTX\n");
    int rc = run_tool("FAKE_CUDA_LAUNCHES=1", "cl.fir --ptx k.ptx --check --dump=launch --print-values 0", g_out,
                      sizeof g_out);
    if (i == 0) {
      CHECK_EQ_INT(rc, 0);
      CHECK(strstr(g_out, "launch @fake_scale_cluster2: grid=[8, 1, 1] block=[128, 1, 1] smem=0 cluster=2 (reads 4000 "
                          "bytes, writes 4000 bytes)\n") != NULL);
      CHECK(strstr(g_out, "fake-cuda: cuLaunchKernelEx('fake_scale_cluster2') cluster=2 stream=0\n") != NULL);
      CHECK(strstr(g_out, "fake-cuda: cuLaunchKernel(") == NULL);
      CHECK(strstr(g_out, "  check %T1: PASS f32[1000]") != NULL);
    } else {
      CHECK(rc != 0);
      CHECK(strstr(g_out, "cl.fir:4:3: error: kernel '@fake_scale_cluster2': grid.x = 10 is not a multiple of its "
                          "clusters of 4 blocks (cluster=4): the last cluster would be partial\n") != NULL);
      CHECK(strstr(g_out, "fake-cuda: ") == NULL); /* nothing launched */
    }
    if (fu_test_failures) fprintf(stderr, "%s\n", g_out);
  }
}

static void test_tool_errors(void) {
  /* No device: one line, exit 2. */
  int rc = run_tool("FAKE_CUDA_INIT=100", "low.fir --ptx k.ptx", g_out, sizeof g_out);
  CHECK_EQ_INT(rc, 2);
  CHECK_STR(g_out, "fuser-run: no CUDA device found (cuInit: CUDA_ERROR_NO_DEVICE); use --device=cpu for the reference "
                   "interpreter\n");
  rc = run_tool("FAKE_CUDA_INIT=100", "--device-info", g_out, sizeof g_out);
  CHECK_EQ_INT(rc, 2);
  /* The CPU path does not touch the driver. */
  rc = run_tool("FAKE_CUDA_INIT=100", "low.fir --device=cpu --print-values 0", g_out, sizeof g_out);
  CHECK_EQ_INT(rc, 0);
  CHECK(strstr(g_out, "(cpu reference interpreter)") != NULL);
  /* A PTX the JIT rejects: the call, the error and the JIT's log. */
  char path[128];
  snprintf(path, sizeof path, "%s/bad.ptx", g_dir);
  write_text(path, "bad\n");
  rc = run_tool("", "low.fir --ptx bad.ptx", g_out, sizeof g_out);
  CHECK_EQ_INT(rc, 1);
  CHECK(strstr(g_out, "fuser-run: error: cuModuleLoadDataEx('bad.ptx') failed: CUDA_ERROR_INVALID_PTX: fake driver error\n"
                      "fuser-run: note: the JIT's error log for 'bad.ptx': ptxas fatal: fake JIT rejects 'bad'\n") != NULL);
  /* A kernel the PTX lacks: located at the segment. */
  snprintf(path, sizeof path, "%s/nope.fir", g_dir);
  write_lowered(path, "nope", false);
  rc = run_tool("", "nope.fir --ptx k.ptx", g_out, sizeof g_out);
  CHECK_EQ_INT(rc, 1);
  CHECK(strstr(g_out, "fuser-run: error: the PTX 'k.ptx' has no kernel 'nope' (cuModuleGetFunction: CUDA_ERROR_NOT_FOUND)\n"
                      "nope.fir:4:3: note: the kernel of this segment\n") != NULL);
  /* The device, described. */
  rc = run_tool("", "--device-info", g_out, sizeof g_out);
  CHECK_EQ_INT(rc, 0);
  CHECK(strstr(g_out, "device 0: Fake H100 (host memory) (compute capability 9.0, driver 13.0)\n") != NULL);
  CHECK(strstr(g_out, "theoretical 3352 GB/s") != NULL);
  CHECK(strstr(g_out, "    name = h100\n") != NULL);
  /* --ptx holds the kernels of every fusion of the file (fuser-opt
   * --emit=ptx of a file of many fusions writes one module): it is loaded
   * once, and each fusion runs from it. */
  snprintf(path, sizeof path, "%s/two.fir", g_dir);
  write_text(path, "fusion @a {\n  %T0 = input f32[2]\n  output %T0\n}\nfusion @b {\n  %T0 = input f32[2]\n  output %T0\n}\n");
  snprintf(path, sizeof path, "%s/low2.fir", g_dir);
  write_lowered(path, "fake_scale", false);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "sed 's/^fusion @f /fusion @h /' '%s/low2.fir' >> '%s/low2.fir.more' && cat '%s/low2.fir.more' >> '%s'",
           g_dir, g_dir, g_dir, path);
  CHECK_EQ_INT(system(cmd), 0);
  rc = run_tool("", "low2.fir --ptx k.ptx --check --dump=jit --print-values 0", g_out, sizeof g_out);
  CHECK_EQ_INT(rc, 0);
  CHECK(strstr(g_out, "fusion @f: 2 inputs, 1 output (gpu 0: Fake H100 (host memory), 1 kernel)") != NULL);
  CHECK(strstr(g_out, "fusion @h: 2 inputs, 1 output (gpu 0: Fake H100 (host memory), 1 kernel)") != NULL);
  const char *jit = strstr(g_out, "JIT log of @");
  CHECK(jit != NULL && strstr(jit + 1, "JIT log of @") == NULL);
  /* --device-memory: the driver's free memory is back where it started
   * after the two fusions; memory the driver still counts is an error. */
  rc = run_tool("FAKE_CUDA_MEM_INFO_LIVE=1", "low2.fir --ptx k.ptx --check --device-memory --print-values 0", g_out,
                sizeof g_out);
  CHECK_EQ_INT(rc, 0);
  CHECK(strstr(g_out, "device memory: 268435456 bytes free after the context opened, 268435456 at the end: 0 bytes "
                      "still allocated\n") != NULL);
  rc = run_tool("FAKE_CUDA_MEM_INFO_LIVE=1 FAKE_CUDA_MEM_INFO_LOSS=4096",
                "low2.fir --ptx k.ptx --device-memory --print-values 0", g_out, sizeof g_out);
  CHECK_EQ_INT(rc, 1);
  CHECK(strstr(g_out, "fuser-run: error: the run left 4096 bytes of device memory allocated") != NULL);
  rc = run_tool("", "low2.fir --device=kir --device-memory", g_out, sizeof g_out);
  CHECK_EQ_INT(rc, 2);
  /* A fusion that fails its check leaves the context usable: the next
   * one runs; after a kernel fault none does, and that is said once. */
  rc = run_tool("FUSER_TEST_CORRUPT_OUTPUT=T1", "low2.fir --ptx k.ptx --check --no-repro --print-values 0", g_out,
                sizeof g_out);
  CHECK_EQ_INT(rc, 1);
  CHECK(strstr(g_out, "fusion @f:") != NULL && strstr(g_out, "fusion @h:") != NULL);
  rc = run_tool("FAKE_CUDA_LAUNCH_FAULT=1", "low2.fir --ptx k.ptx --check --no-repro --print-values 0", g_out,
                sizeof g_out);
  CHECK_EQ_INT(rc, 1);
  CHECK(strstr(g_out, "fuser-run: error: the GPU context is unusable after the fault above; fusion '@h' and the ones "
                      "after it do not run") != NULL);
  CHECK(strstr(g_out, "fusion @h:") == NULL);
  /* A fusion with no kernel at all (an output that is the input) runs. */
  rc = run_tool("", "two.fir --fusion=@a --check --print-values 2", g_out, sizeof g_out);
  CHECK_EQ_INT(rc, 0);
  CHECK(strstr(g_out, "fusion @a: 1 input, 1 output (gpu 0: Fake H100 (host memory), 0 kernels)") != NULL);
  CHECK(strstr(g_out, "check %T0: PASS") != NULL);
}

/* Writes a .npy file of f32[1000] with `data_bytes` bytes of data after
 * its header (4000 make it whole) and `descr` as its dtype. */
static void write_npy(const char *name, const char *descr, size_t data_bytes) {
  char path[128], hdr[128];
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  int n = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (1000,), }", descr);
  while (n < 117) hdr[n++] = ' ';
  hdr[n++] = '\n';
  FILE *f = fopen(path, "wb");
  if (!f) {
    CHECK(false);
    return;
  }
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)n, 0};
  fwrite(pre, 1, sizeof pre, f);
  fwrite(hdr, 1, (size_t)n, f);
  for (size_t i = 0; i < data_bytes; i++) fputc(0, f);
  fclose(f);
}

/* Faults while running (issue 17): device out of memory, a kernel that
 * faults, bad .npy inputs and an output folder that cannot be written.
 * Each is one clear error and exit 1, no result reported as if computed,
 * and (FAKE_CUDA_LEAKS) every device allocation freed; under ASan the
 * tool's own leak check guards host memory (a leak exits 23). */
static void test_tool_faults(void) {
  const char *leaks = "FAKE_CUDA_LEAKS=1";
  /* Out of device memory at the second buffer (the output): the first is freed. */
  int rc = run_tool("FAKE_CUDA_LEAKS=1 FAKE_CUDA_MEM_LIMIT=6000", "low.fir --ptx k.ptx --check", g_out, sizeof g_out);
  CHECK_EQ_INT(rc, 1);
  CHECK(strstr(g_out, "fuser-run: error: cuMemAlloc(4000 bytes) failed: CUDA_ERROR_OUT_OF_MEMORY") != NULL);
  CHECK(strstr(g_out, "fuser-run: note: while allocating the buffer of '%T1': 4000 bytes, with 268435456 of "
                      "85899345920 bytes free on the device\n") != NULL);
  CHECK(strstr(g_out, "output %T1") == NULL && strstr(g_out, "check %T1") == NULL);
  CHECK(strstr(g_out, "fake-cuda:") == NULL);
  if (rc != 1) printf("%s", g_out);
  /* Out of memory at the first buffer. */
  rc = run_tool("FAKE_CUDA_LEAKS=1 FAKE_CUDA_MEM_LIMIT=100", "low.fir --ptx k.ptx", g_out, sizeof g_out);
  CHECK_EQ_INT(rc, 1);
  CHECK(strstr(g_out, "cuMemAlloc(4000 bytes) failed: CUDA_ERROR_OUT_OF_MEMORY") != NULL);
  CHECK(strstr(g_out, "note: while allocating the buffer of '%T") != NULL);
  CHECK(strstr(g_out, "fake-cuda:") == NULL);
  /* A kernel that faults: reported once, with the kernel and its segment;
   * the cleanup's frees, which fail the same way, say nothing more. */
  rc = run_tool("FAKE_CUDA_LEAKS=1 FAKE_CUDA_LAUNCH_FAULT=1", "low.fir --ptx k.ptx --check", g_out, sizeof g_out);
  CHECK_EQ_INT(rc, 1);
  CHECK(strstr(g_out, "fuser-run: error: cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS: fake driver error\n"
                      "low.fir:4:3: note: while running kernel '@fake_scale' of segment '@g0'\n") != NULL);
  const char *first = strstr(g_out, "error:");
  CHECK(first && !strstr(first + 1, "error:"));
  CHECK(strstr(g_out, "check %T1") == NULL && strstr(g_out, "fake-cuda:") == NULL);
  if (rc != 1) printf("%s", g_out);
  /* .npy inputs: truncated, of another dtype, not a .npy file, missing. */
  write_npy("trunc.npy", "<f4", 100);
  write_npy("wrong.npy", "<i8", 8000);
  char path[128];
  snprintf(path, sizeof path, "%s/junk.npy", g_dir);
  write_text(path, "not an array");
  static const struct {
    const char *file, *want;
  } npy[] = {
      {"trunc.npy", "trunc.npy: error: truncated .npy file: its header promises 4000 data bytes (shape (1000,) of "
                    "'<f4'), the file holds 100\nlow.fir:2:3: note: while loading example data for input '%T0'"},
      {"wrong.npy", "wrong.npy: error: the .npy file holds i64 ('<i8') but f32 is wanted"},
      {"junk.npy", "junk.npy: error: not a .npy file (bad magic string)"},
      {"missing.npy", "missing.npy: error: cannot open .npy file: No such file or directory"},
  };
  for (size_t i = 0; i < sizeof npy / sizeof npy[0]; i++) {
    char args[256];
    snprintf(args, sizeof args, "low.fir --ptx k.ptx --check --input T0=%s", npy[i].file);
    rc = run_tool(leaks, args, g_out, sizeof g_out);
    CHECK_EQ_INT(rc, 1);
    CHECK(strstr(g_out, npy[i].want) != NULL);
    CHECK(strstr(g_out, "output %T1") == NULL && strstr(g_out, "fake-cuda:") == NULL);
    if (rc != 1 || !strstr(g_out, npy[i].want)) printf("%s", g_out);
  }
  /* The output folder: checked before anything runs. */
  rc = run_tool(leaks, "low.fir --ptx k.ptx --save-outputs junk.npy/dir", g_out, sizeof g_out);
  CHECK_EQ_INT(rc, 1);
  CHECK_STR(g_out, "fuser-run: error: cannot create directory 'junk.npy/dir': Not a directory\n");
  /* missing parent folders are made */
  rc = run_tool(leaks, "low.fir --ptx k.ptx --save-outputs no/such/dir --print-values 0", g_out, sizeof g_out);
  CHECK_EQ_INT(rc, 0);
  CHECK(strstr(g_out, "  saved no/such/dir/T1.npy\n") != NULL);
  rc = run_tool(leaks, "low.fir --ptx k.ptx --save-inputs junk.npy", g_out, sizeof g_out);
  CHECK_EQ_INT(rc, 1);
  CHECK_STR(g_out, "fuser-run: error: 'junk.npy' is not a directory (it is where the .npy files would go)\n");
  /* and a folder that is there takes the files */
  rc = run_tool(leaks, "low.fir --ptx k.ptx --save-outputs out --print-values 0", g_out, sizeof g_out);
  CHECK_EQ_INT(rc, 0);
  CHECK(strstr(g_out, "  saved out/T1.npy\n") != NULL);
}

/* The nvrtc backend through the driver path: fuser-run compiles the lowered
 * kernel's CUDA C with libnvrtc (real, no GPU needed) and loads the PTX
 * into the fake driver, whose fake_scale runs it.  Without libnvrtc the run
 * says what is missing. */
static void test_tool_nvrtc(void) {
#ifndef FUSER_HAS_CUDA_C
  printf("  (a build without the CUDA C target: no --backend=nvrtc)\n");
  return;
#endif
  char path[128];
  snprintf(path, sizeof path, "%s/low.fir", g_dir);
  write_lowered(path, "fake_scale", false);
  /* detect_leaks=0: in a sanitizer build, libnvrtc's dynamic TLS crashes
   * LeakSanitizer's scan at exit */
  int rc = run_tool("ASAN_OPTIONS=detect_leaks=0", "low.fir --backend=nvrtc --check --dump=ptx --print-values 0", g_out,
                    sizeof g_out);
  if (strstr(g_out, "libnvrtc") && strstr(g_out, "could not be loaded")) {
    printf("  (no libnvrtc on this machine: the nvrtc path is not exercised)\n");
  } else {
    CHECK_EQ_INT(rc, 0);
    CHECK(strstr(g_out, "Generated by NVIDIA NVVM Compiler") != NULL);
    CHECK(strstr(g_out, ".visible .entry fake_scale(") != NULL);
    CHECK(strstr(g_out, "  check %T1: PASS f32[1000]") != NULL);
    if (rc != 0) printf("%s", g_out);
  }
  rc = run_tool("FUSER_LIBNVRTC=/nonexistent/libnvrtc.so", "low.fir --backend=nvrtc --check", g_out, sizeof g_out);
  CHECK_EQ_INT(rc, 1);
  CHECK(strstr(g_out, "the nvrtc backend needs libnvrtc (the CUDA Toolkit's runtime compiler), which could not be "
                      "loaded; set FUSER_LIBNVRTC=/path/to/libnvrtc.so, or use --backend=llvm") != NULL);
  CHECK(strstr(g_out, "/nonexistent/libnvrtc.so") != NULL);
  /* --ptx and --backend do not go together */
  rc = run_tool("", "low.fir --backend=nvrtc --ptx k.ptx", g_out, sizeof g_out);
  CHECK_EQ_INT(rc, 2);
  CHECK(strstr(g_out, "--ptx gives the kernels' PTX, so there is nothing for --backend to compile") != NULL);
}

/* ---- matmul segments: the cuBLASLt call from the views ------------------------------- */

static fu_rt_view mk_view(fu_dtype dt, int32_t rank, const int64_t *shape, const int64_t *strides, int32_t buf) {
  fu_rt_view v;
  memset(&v, 0, sizeof v);
  v.buffer = buf;
  v.dtype = dt;
  v.rank = rank;
  for (int32_t i = 0; i < rank; i++) {
    v.shape[i] = shape[i];
    v.strides[i] = strides[i];
  }
  return v;
}

/* Row-major D = A B is D^T = B^T A^T for column-major cuBLASLt: its A is
 * our B, m is N, n is M; a row-major operand is not transposed, a
 * column-major one (a weight [N, K], a permuted view) is. */
static void test_gemm_from_views(void) {
  fu_strbuf why;
  fu_strbuf_init(&why, fu_default_allocator());
  fu_rt_gemm g;
  /* linear: x[33, 64] row-major, weight [96, 64] row-major (B column-major), bias [96] */
  fu_rt_view x = mk_view(FU_DT_BF16, 2, (int64_t[]){33, 64}, (int64_t[]){64, 1}, 0);
  fu_rt_view w = mk_view(FU_DT_BF16, 2, (int64_t[]){96, 64}, (int64_t[]){64, 1}, 1);
  fu_rt_view b = mk_view(FU_DT_BF16, 1, (int64_t[]){96}, (int64_t[]){1}, 2);
  fu_rt_view d = mk_view(FU_DT_BF16, 2, (int64_t[]){33, 96}, (int64_t[]){96, 1}, 3);
  CHECK(fu_rt_gemm_from_views(FU_OP_LINEAR, &x, &w, &b, &d, &g, &why));
  CHECK_EQ_INT(g.m, 96);
  CHECK_EQ_INT(g.n, 33);
  CHECK_EQ_INT(g.k, 64);
  CHECK(g.trans_a && !g.trans_b);
  CHECK_EQ_INT(g.lda, 64);
  CHECK_EQ_INT(g.ldb, 64);
  CHECK_EQ_INT(g.ldd, 96);
  CHECK_EQ_INT(g.batch, 1);
  CHECK_EQ_INT(g.buf_a, 0);
  CHECK_EQ_INT(g.buf_b, 1);
  CHECK_EQ_INT(g.buf_bias, 2);
  CHECK_EQ_INT(g.buf_d, 3);
  /* linear over [2, 5, 64]: ten rows */
  fu_rt_view x3 = mk_view(FU_DT_BF16, 3, (int64_t[]){2, 5, 64}, (int64_t[]){320, 64, 1}, 0);
  fu_rt_view d3 = mk_view(FU_DT_F32, 3, (int64_t[]){2, 5, 96}, (int64_t[]){480, 96, 1}, 3);
  CHECK(fu_rt_gemm_from_views(FU_OP_LINEAR, &x3, &w, NULL, &d3, &g, &why));
  CHECK_EQ_INT(g.n, 10);
  CHECK_EQ_INT(g.buf_bias, -1);
  CHECK_EQ_INT(g.d_dtype, FU_DT_F32);
  /* matmul: A[7, 1000] x B[1000, 5] given as a permuted [5, 1000] (column-major) */
  fu_rt_view a = mk_view(FU_DT_F32, 2, (int64_t[]){7, 1000}, (int64_t[]){1000, 1}, 0);
  fu_rt_view bt = mk_view(FU_DT_F32, 2, (int64_t[]){1000, 5}, (int64_t[]){1, 1000}, 1);
  fu_rt_view d2 = mk_view(FU_DT_F32, 2, (int64_t[]){7, 5}, (int64_t[]){5, 1}, 2);
  CHECK(fu_rt_gemm_from_views(FU_OP_MATMUL, &a, &bt, NULL, &d2, &g, &why));
  CHECK(g.trans_a && !g.trans_b);
  CHECK_EQ_INT(g.lda, 1000);
  /* and row-major B */
  fu_rt_view br = mk_view(FU_DT_F32, 2, (int64_t[]){1000, 5}, (int64_t[]){5, 1}, 1);
  CHECK(fu_rt_gemm_from_views(FU_OP_MATMUL, &a, &br, NULL, &d2, &g, &why));
  CHECK(!g.trans_a && !g.trans_b);
  CHECK_EQ_INT(g.lda, 5);
  CHECK_EQ_INT(g.ldb, 1000);
  /* batched A[4, 7, 1000] x B[1000, 5]: four batches, B broadcast (stride 0) */
  fu_rt_view ab = mk_view(FU_DT_F32, 3, (int64_t[]){4, 7, 1000}, (int64_t[]){7000, 1000, 1}, 0);
  fu_rt_view db = mk_view(FU_DT_F32, 3, (int64_t[]){4, 7, 5}, (int64_t[]){35, 5, 1}, 2);
  CHECK(fu_rt_gemm_from_views(FU_OP_MATMUL, &ab, &br, NULL, &db, &g, &why));
  CHECK_EQ_INT(g.batch, 4);
  CHECK_EQ_INT(g.stride_a, 0);
  CHECK_EQ_INT(g.stride_b, 7000);
  CHECK_EQ_INT(g.stride_d, 35);
  /* batches broadcast both ways ([2, 1] against [1, 3]) are not one strided batch */
  fu_rt_view a4 = mk_view(FU_DT_F32, 4, (int64_t[]){2, 1, 7, 1000}, (int64_t[]){7000, 7000, 1000, 1}, 0);
  fu_rt_view b4 = mk_view(FU_DT_F32, 3, (int64_t[]){3, 1000, 5}, (int64_t[]){5000, 5, 1}, 1);
  fu_rt_view d4 = mk_view(FU_DT_F32, 4, (int64_t[]){2, 3, 7, 5}, (int64_t[]){105, 35, 5, 1}, 2);
  fu_strbuf_clear(&why);
  CHECK(!fu_rt_gemm_from_views(FU_OP_MATMUL, &a4, &b4, NULL, &d4, &g, &why));
  CHECK(why.data && strstr(why.data, "batch dims do not flatten"));
  /* no dim of stride 1 */
  fu_rt_view bad = mk_view(FU_DT_F32, 2, (int64_t[]){7, 1000}, (int64_t[]){2000, 2}, 0);
  fu_strbuf_clear(&why);
  CHECK(!fu_rt_gemm_from_views(FU_OP_MATMUL, &bad, &br, NULL, &d2, &g, &why));
  CHECK(why.data && strstr(why.data, "no dim of stride 1"));
  /* an f32 product into bf16 */
  fu_rt_view dbf = mk_view(FU_DT_BF16, 2, (int64_t[]){7, 5}, (int64_t[]){5, 1}, 2);
  fu_strbuf_clear(&why);
  CHECK(!fu_rt_gemm_from_views(FU_OP_MATMUL, &a, &br, NULL, &dbf, &g, &why));
  CHECK(why.data && strstr(why.data, "cuBLASLt does not compute f32 x f32 -> bf16"));
  /* a strided bias */
  fu_rt_view bs = mk_view(FU_DT_BF16, 1, (int64_t[]){96}, (int64_t[]){2}, 2);
  fu_strbuf_clear(&why);
  CHECK(!fu_rt_gemm_from_views(FU_OP_LINEAR, &x, &w, &bs, &d, &g, &why));
  CHECK(why.data && strstr(why.data, "the bias is not a contiguous vector of the 96 outputs"));
  fu_strbuf_free(&why);
}

static const char *const k_gemm_fusion =
    "fusion @lin {\n"
    "  %x = input bf16[N, 64] {example=randn, seed=1, example_shape=[33, 64]}\n"
    "  %w = input bf16[96, 64] {example=randn, seed=2}\n"
    "  %b = input bf16[96] {example=randn, seed=3}\n"
    "  segment @g0 matmul (%x, %w, %b) -> (%r) {\n"
    "    %y = linear %x, %w, %b : bf16[N, 96]\n"
    "    %r = relu %y : bf16[N, 96]\n"
    "    gemm %x, %w -> %r {a=row, lda=64, b=col, ldb=64, epilogue=relu, bias=%b, alpha=1.0}\n"
    "  }\n"
    "  output %r\n"
    "}\n";

/* A matmul segment's plan: its launch is the cuBLASLt call; a host
 * without cuBLASLt fails it with an error naming the library. */
static void test_gemm_plan_exec(void) {
  captured c;
  fu_diag_engine diag = capture_engine(&c);
  fu_source src = {"gemm.fir", k_gemm_fusion, strlen(k_gemm_fusion), 1};
  fu_module *m = NULL;
  CHECK_EQ_INT(fu_parse_module(&src, fu_default_allocator(), &diag, &m), FU_OK);
  if (!m) {
    printf("%s", c.text);
    return;
  }
  CHECK_EQ_INT(fu_verify_module(m, &diag), FU_OK);
  fu_fusion *f = m->first;
  CHECK(fu_rt_fusion_is_lowered(f, NULL));
  fu_input_options io;
  memset(&io, 0, sizeof io);
  fu_arg *in = NULL;
  uint32_t n_in = 0;
  CHECK_EQ_INT(fu_interp_make_inputs(f, &io, fu_default_allocator(), &diag, &in, &n_in), FU_OK);
  fu_rt_plan p;
  CHECK_EQ_INT(fu_rt_plan_build(f, in, n_in, fu_default_allocator(), &diag, &p), FU_OK);
  CHECK_EQ_INT(p.n_launches, 1);
  const fu_rt_launch_plan *lp = &p.launches[0];
  CHECK(lp->kernel == NULL && lp->gemm != NULL);
  if (lp->gemm) {
    CHECK_STR(fu_rt_launch_name(lp), "cublaslt_g0");
    CHECK_EQ_INT(lp->gemm->m, 96);
    CHECK_EQ_INT(lp->gemm->n, 33);
    CHECK_EQ_INT(lp->gemm->act, FU_GEMM_ACT_RELU);
    CHECK(lp->gemm->buf_bias >= 0);
  }
  CHECK_EQ_INT(lp->bytes_written, 33 * 96 * 2);
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_rt_plan_print_launches(&sb, &p);
  CHECK(sb.data && strstr(sb.data, "launch @cublaslt_g0: cuBLASLt m=96 n=33 k=64 batch=1 bf16 x bf16 -> bf16, transa=T "
                                   "lda=64, transb=N ldb=64, ldd=96"));
  CHECK(sb.data && strstr(sb.data, "epilogue=relu+bias"));
  fu_strbuf_free(&sb);
  fu_rt *rt = open_fake(&diag);
  if (rt) {
    rt->libcublaslt_path = "/nonexistent/libcublasLt.so";
    fu_rt_exec *e = NULL;
    c.len = 0;
    c.text[0] = 0;
    CHECK_EQ_INT(fu_rt_exec_new(rt, &p, NULL, in, &diag, &e), FU_ERR_UNSUPPORTED);
    CHECK(strstr(c.text, "matmul segment '@g0' runs through cuBLASLt, which this host lacks: cannot load "
                         "'/nonexistent/libcublasLt.so'"));
    fu_rt_close(rt);
  }
  fu_rt_plan_free(&p);
  fu_args_free(in, n_in, fu_default_allocator());
  fu_module_free(m);
}

/* T1 = T0 * 2.5 written into T0 (`output %T1 {alias=%T0}`) by the fake's
 * fake_scale: in place when the kernel's output parameter names the input
 * (`alias=%in`), else copied after the kernel; either way fuser-run shows
 * the input updated, and --check passes.  `out_attrs` and `in_attrs` are
 * the parameters' attributes. */
static const char *k_alias =
    "fusion @f {\n"
    "  %%T0 = input f32[N] {example=randn, seed=1, example_shape=[1000]}\n"
    "  %%S0 = input f32 {example=2.5}\n"
    "  segment @g0 pointwise (%%T0, %%S0) -> (%%T1) {\n"
    "    %%T1 = mul %%T0, %%S0 : f32[N]\n"
    "    kernel @fake_scale (%%in: global f32[N]%s bind=%%T0, %%out: global f32[N]%s bind=%%T1, %%s: f32 input=%%S0, "
    "%%N: i64 extent=N)\n"
    K_ELEMENT_HEAD
    "        %%x = load %%in[%%i] : f32\n"
    "        %%y = mul %%x, %%s : f32\n"
    "        store %%out[%%i], %%y\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "  output %%T1 {alias=%%T0}\n"
    "  output %%T0\n"
    "}\n";

static void test_tool_alias(void) {
  static const struct {
    const char *in_attrs, *out_attrs, *how;
  } cases[] = {{"", " alias=%in", "holds output %T1 (written in place by its kernel)"},
               {" readonly noalias", " noalias", "holds output %T1 (copied there after the kernels)"}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    char path[128];
    snprintf(path, sizeof path, "%s/alias.fir", g_dir);
    FILE *f = fopen(path, "w");
    if (!f) {
      CHECK(false);
      return;
    }
    fprintf(f, k_alias, cases[c].in_attrs, cases[c].out_attrs);
    fclose(f);
    snprintf(path, sizeof path, "%s/k.ptx", g_dir);
    write_text(path, "// fake PTX\n");
    int rc = run_tool("", "alias.fir --ptx k.ptx --check --print-values 2", g_out, sizeof g_out);
    CHECK_EQ_INT(rc, 0);
    CHECK(strstr(g_out, cases[c].how) != NULL);
    /* the input's memory after the run is the output, and so is the output %T0 */
    const char *up = strstr(g_out, "  updated input %T0: f32[1000] strides=[1]\n    values: [");
    const char *o1 = strstr(g_out, "  output %T1: f32[1000] strides=[1]\n    values: [");
    const char *o0 = strstr(g_out, "  output %T0: f32[1000] strides=[1]\n    values: [");
    CHECK(up && o1 && o0);
    if (up && o1 && o0) {
      CHECK(strncmp(up + 52, o1 + 45, 30) == 0);
      CHECK(strncmp(o0 + 45, o1 + 45, 30) == 0);
    }
    CHECK(strstr(g_out, "check %T1: PASS") != NULL);
    CHECK(strstr(g_out, "check %T0: PASS") != NULL);
    if (fu_test_failures) fprintf(stderr, "%s\n", g_out);
  }
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "--tool") == 0) {
    g_tool = argv[2];
    g_fake_lib = argv[3];
    snprintf(g_dir, sizeof g_dir, "/tmp/fuser-fake-gpu-XXXXXX");
    if (!mkdtemp(g_dir)) {
      perror("mkdtemp");
      return 1;
    }
    static const fu_test_case tool_cases[] = {{"tool_check_pass", test_tool_check_pass},
                                              {"tool_json_bench", test_tool_json_bench},
                                              {"tool_check_fail", test_tool_check_fail},
                                              {"tool_errors", test_tool_errors},
                                              {"tool_faults", test_tool_faults},
                                              {"tool_nvrtc", test_tool_nvrtc},
                                              {"tool_alias", test_tool_alias},
                                              {"tool_clusters", test_tool_clusters}};
    int rc = fu_test_main(tool_cases, (int)(sizeof tool_cases / sizeof tool_cases[0]));
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "test_runtime: could not remove %s\n", g_dir);
    return rc;
  }
  static const fu_test_case cases[] = {
      {"plan_layouts", test_plan_layouts}, {"plan_errors", test_plan_errors},   {"exec_fake", test_exec_fake},
      {"exec_relayout", test_exec_relayout}, {"no_device", test_no_device},     {"driver_errors", test_driver_errors},
      {"compare", test_compare},             {"strided_copy", test_strided_copy},
      {"bandwidth_fallback", test_bandwidth_fallback}, {"two_segments", test_two_segments},
      {"workspaces", test_workspaces}, {"gemm_from_views", test_gemm_from_views},
      {"gemm_plan_exec", test_gemm_plan_exec}, {"alias_strided_copy", test_alias_strided_copy},
      {"clusters", test_clusters}};
  return fu_test_main(cases, (int)(sizeof cases / sizeof cases[0]));
}

#endif
