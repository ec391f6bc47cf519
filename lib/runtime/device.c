/* fuser runtime: opening the driver, the device description, the context
 * and the stream. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The short name schedules record (`device=h100`): an identifier, so the
 * model number out of the driver's name ("NVIDIA H100 80GB HBM3" -> h100),
 * lower case, or "gpu" when the name has none. */
static void short_name(const char *full, char *out, size_t cap) {
  const char *p = full;
  while (*p) {
    while (*p == ' ') p++;
    const char *start = p;
    bool digit = false;
    while (*p && *p != ' ') digit |= (*p >= '0' && *p <= '9'), p++;
    if (!digit || p - start >= 24) continue;
    size_t n = 0;
    if (*start >= '0' && *start <= '9') n = (size_t)snprintf(out, cap, "gpu_");
    for (const char *c = start; c < p && n + 1 < cap; c++) {
      char ch = *c;
      if (ch >= 'A' && ch <= 'Z') ch = (char)(ch - 'A' + 'a');
      out[n++] = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ? ch : '_';
    }
    out[n] = '\0';
    return;
  }
  snprintf(out, cap, "gpu");
}

/* The attributes that fill fu_device (and the rest of fu_rt_device_info);
 * every query is checked, so a driver that lacks one is reported, not
 * silently zero. */
static fu_status query_device(fu_rt *rt) {
  fu_rt_device_info *d = &rt->info;
  fu_cuda_api *api = &rt->api;
  char what[96];
  fu_status st = fu_rt_check(rt, api->device_get_name(d->name, (int)sizeof d->name, rt->device), "cuDeviceGetName");
  if (st != FU_OK) return st;
  d->name[sizeof d->name - 1] = '\0';
  size_t total = 0;
  if ((st = fu_rt_check(rt, api->device_total_mem(&total, rt->device), "cuDeviceTotalMem")) != FU_OK) return st;
  d->total_mem_bytes = total;
  if ((st = fu_rt_check(rt, api->driver_get_version(&d->driver_version), "cuDriverGetVersion")) != FU_OK) return st;

  struct {
    CUdevice_attribute attr;
    const char *name;
    int *dst;
  } q[32];
  int n = 0;
  int warp = 0, tpb = 0, tpsm = 0, bpsm = 0, regs_sm = 0, smem_blk = 0, smem_sm = 0, l2 = 0, sms = 0;
  int gx = 0, gy = 0, gz = 0;
#define Q(a, v) q[n].attr = a, q[n].name = #a, q[n].dst = &(v), n++
  Q(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d->cc_major);
  Q(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d->cc_minor);
  Q(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, sms);
  Q(CU_DEVICE_ATTRIBUTE_WARP_SIZE, warp);
  Q(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, tpb);
  Q(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, tpsm);
  Q(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, bpsm);
  Q(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, regs_sm);
  Q(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, smem_blk);
  Q(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, smem_sm);
  Q(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, l2);
  Q(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, d->sm_clock_khz);
  Q(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, d->mem_clock_khz);
  Q(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, d->bus_width_bits);
  Q(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, gx);
  Q(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, gy);
  Q(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, gz);
#undef Q
  for (int i = 0; i < n; i++) {
    snprintf(what, sizeof what, "cuDeviceGetAttribute(%s)", q[i].name);
    if ((st = fu_rt_check(rt, api->device_get_attribute(q[i].dst, q[i].attr, rt->device), what)) != FU_OK)
      return st;
  }

  fu_device *f = &d->desc;
  memset(f, 0, sizeof *f);
  short_name(d->name, f->name, sizeof f->name);
  f->sm = (uint32_t)(d->cc_major * 10 + d->cc_minor);
  f->n_sms = (uint32_t)sms;
  f->warp_size = (uint32_t)warp;
  f->max_threads_per_block = (uint32_t)tpb;
  f->max_threads_per_sm = (uint32_t)tpsm;
  f->max_blocks_per_sm = (uint32_t)bpsm;
  f->regs_per_sm = (uint32_t)regs_sm;
  f->max_regs_per_thread = 255; /* every architecture since sm_35; no attribute */
  f->smem_per_block = (uint32_t)smem_blk;
  f->smem_per_sm = (uint32_t)smem_sm;
  f->l2_bytes = (uint64_t)l2;
  f->mem_bytes = d->total_mem_bytes;
  /* DDR: two transfers per memory clock over the whole bus. */
  f->mem_bandwidth_gbs = 2.0 * (double)d->mem_clock_khz * 1e3 * ((double)d->bus_width_bits / 8.0) / 1e9;
  f->max_grid_x = (uint32_t)gx;
  f->max_grid_yz = (uint32_t)(gy < gz ? gy : gz);
  /* Thread-block clusters of up to 8 blocks (the portable size) where the
   * device has them (sm_90 on, and CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH not
   * saying otherwise; a driver too old to know the attribute is too old
   * to have cuLaunchKernelEx) and the driver can launch them; else 1, so
   * no schedule splits a row over a cluster this runtime cannot launch. */
  int cluster_launch = 0;
  if (api->device_get_attribute(&cluster_launch, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, rt->device) != CUDA_SUCCESS)
    cluster_launch = api->launch_kernel_ex != NULL;
  f->max_cluster = f->sm >= 90 && cluster_launch && api->launch_kernel_ex ? 8 : 1;
  /* Drivers that stop reporting the memory clock (the attribute is on its
   * way out) leave the bandwidth unknown: take the preset's figure for the
   * same chip or architecture, and say so. */
  if (!(f->mem_bandwidth_gbs > 0)) {
    fu_device preset;
    char arch[16];
    snprintf(arch, sizeof arch, "sm_%u", f->sm);
    if (fu_device_preset(f->name, &preset) || fu_device_preset(arch, &preset)) {
      f->mem_bandwidth_gbs = preset.mem_bandwidth_gbs;
      d->bandwidth_from_preset = true;
    }
  }
  return FU_OK;
}

fu_status fu_rt_open(const fu_rt_options *opts, fu_allocator alloc, fu_diag_engine *diag, fu_rt **out) {
  *out = NULL;
  fu_rt_options defaults;
  memset(&defaults, 0, sizeof defaults);
  if (!opts) opts = &defaults;
  fu_rt *rt = fu_mem_calloc(&alloc, 1, sizeof *rt);
  if (!rt) return FU_ERR_NOMEM;
  rt->alloc = alloc;
  rt->diag = diag;
  rt->libcublaslt_path = opts->libcublaslt_path;
  fu_status st = FU_OK;
  if (opts->api) {
    rt->api = *opts->api;
  } else {
    const char *path = opts->libcuda_path;
    if (!path) path = getenv("FUSER_LIBCUDA");
    if (!path || !*path) path = "libcuda.so.1";
    fu_strbuf why;
    fu_strbuf_init(&why, alloc);
    if (!fu_cuda_api_load(path, &rt->api, &rt->lib, &why)) {
      fu_error(diag, fu_loc_none(), "no CUDA device found (%s)", why.data ? why.data : path);
      fu_strbuf_free(&why);
      fu_mem_free(&alloc, rt, sizeof *rt);
      return FU_ERR_UNSUPPORTED;
    }
    fu_strbuf_free(&why);
  }
  CUresult r = rt->api.init(0);
  if (r != CUDA_SUCCESS) {
    const char *name = fu_rt_error_name(&rt->api, r);
    if (name)
      fu_error(diag, fu_loc_none(), "no CUDA device found (cuInit: %s)", name);
    else
      fu_error(diag, fu_loc_none(), "no CUDA device found (cuInit: CUresult %d)", (int)r);
    st = FU_ERR_UNSUPPORTED;
    goto fail;
  }
  int count = 0;
  if ((st = fu_rt_check(rt, rt->api.device_get_count(&count), "cuDeviceGetCount")) != FU_OK) goto fail;
  if (count <= 0) {
    fu_error(diag, fu_loc_none(), "no CUDA device found (cuDeviceGetCount: 0 devices)");
    st = FU_ERR_UNSUPPORTED;
    goto fail;
  }
  if (opts->device_ordinal < 0 || opts->device_ordinal >= count) {
    fu_error(diag, fu_loc_none(), "CUDA device %d does not exist (%d device%s found)", opts->device_ordinal, count,
             count == 1 ? "" : "s");
    st = FU_ERR_INVALID_ARG;
    goto fail;
  }
  rt->info.ordinal = opts->device_ordinal;
  if ((st = fu_rt_check(rt, rt->api.device_get(&rt->device, opts->device_ordinal), "cuDeviceGet")) != FU_OK) goto fail;
  if ((st = query_device(rt)) != FU_OK) goto fail;
  if ((st = fu_rt_check(rt, rt->api.primary_ctx_retain(&rt->ctx, rt->device), "cuDevicePrimaryCtxRetain")) != FU_OK)
    goto fail;
  rt->ctx_retained = true;
  if ((st = fu_rt_check(rt, rt->api.ctx_set_current(rt->ctx), "cuCtxSetCurrent")) != FU_OK) goto fail;
  /* A blocking stream: the synchronous copies and memsets (cuMemcpyHtoD,
   * cuMemsetD8: legacy default stream) are then ordered with the kernels
   * launched here.  A non-blocking stream let the output poisoning race
   * with the kernel that writes the output. */
  if ((st = fu_rt_check(rt, rt->api.stream_create(&rt->stream, CU_STREAM_DEFAULT), "cuStreamCreate")) != FU_OK)
    goto fail;
  *out = rt;
  return FU_OK;
fail:
  fu_rt_close(rt);
  return st;
}

void fu_rt_close(fu_rt *rt) {
  if (!rt) return;
  /* Teardown failures cannot be acted on; they are reported, not hidden. */
  fu_rt_lt_close(rt);
  fu_rt_side_stream_close(rt);
  if (rt->stream) fu_rt_check(rt, rt->api.stream_destroy(rt->stream), "cuStreamDestroy");
  if (rt->ctx_retained) fu_rt_check(rt, rt->api.primary_ctx_release(rt->device), "cuDevicePrimaryCtxRelease");
  fu_cuda_api_unload(rt->lib);
  fu_allocator alloc = rt->alloc;
  fu_mem_free(&alloc, rt, sizeof *rt);
}

const fu_rt_device_info *fu_rt_device(const fu_rt *rt) { return &rt->info; }

void fu_rt_device_arch(const fu_rt_device_info *d, char *buf, size_t cap) {
  /* The NVPTX targets LLVM 19 knows, oldest first. */
  static const int known[] = {50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90};
  int sm = d->cc_major * 10 + d->cc_minor, pick = known[0];
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (known[i] <= sm) pick = known[i];
  snprintf(buf, cap, "sm_%d", pick);
}

void fu_rt_device_print(fu_strbuf *out, const fu_rt_device_info *d) {
  const fu_device *f = &d->desc;
  fu_strbuf_printf(out, "device %d: %s (compute capability %d.%d, driver %d.%d)\n", d->ordinal, d->name, d->cc_major,
                   d->cc_minor, d->driver_version / 1000, (d->driver_version % 1000) / 10);
  fu_strbuf_printf(out, "  SMs: %u, clock %.0f MHz, memory %.1f GiB\n", f->n_sms, d->sm_clock_khz / 1e3,
                   (double)d->total_mem_bytes / (1024.0 * 1024.0 * 1024.0));
  fu_strbuf_printf(out, "  threads: %u per block, %u per SM; blocks per SM: %u; warp %u\n", f->max_threads_per_block,
                   f->max_threads_per_sm, f->max_blocks_per_sm, f->warp_size);
  fu_strbuf_printf(out, "  registers: %u per SM; shared memory: %u bytes per block (opt-in), %u per SM\n",
                   f->regs_per_sm, f->smem_per_block, f->smem_per_sm);
  fu_strbuf_printf(out, "  L2: %.1f MiB; memory clock %.0f MHz, bus %d bits: theoretical %.0f GB/s%s\n",
                   (double)f->l2_bytes / (1024.0 * 1024.0), d->mem_clock_khz / 1e3, d->bus_width_bits,
                   f->mem_bandwidth_gbs,
                   d->bandwidth_from_preset ? " (the driver reports no memory clock: the preset's figure)" : "");
  fu_strbuf_printf(out, "  max grid: [%u, %u, %u]\n", f->max_grid_x, f->max_grid_yz, f->max_grid_yz);
}
