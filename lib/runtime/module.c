/* fuser runtime: PTX modules and kernel launches. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define JIT_LOG_BYTES 16384

static char *dup_str(fu_allocator *a, const char *s, size_t n) {
  char *d = fu_mem_alloc(a, n + 1);
  if (!d) return NULL;
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

/* cuModuleLoadDataEx with the JIT's error and info logs: a PTX that does
 * not assemble (a bad instruction, an unknown .target) is reported with the
 * assembler's own message, not just CUDA_ERROR_INVALID_PTX. */
fu_status fu_rt_module_load(fu_rt *rt, const char *ptx, size_t len, const char *name, fu_rt_module **out) {
  *out = NULL;
  fu_allocator *a = &rt->alloc;
  if (!name) name = "<ptx>";
  char *text = dup_str(a, ptx, len); /* the driver wants NUL-terminated PTX */
  char *err_log = fu_mem_calloc(a, 1, JIT_LOG_BYTES);
  char *info_log = fu_mem_calloc(a, 1, JIT_LOG_BYTES);
  fu_rt_module *mod = fu_mem_calloc(a, 1, sizeof *mod);
  char *name_copy = dup_str(a, name, strlen(name));
  if (!text || !err_log || !info_log || !mod || !name_copy) {
    fu_mem_free(a, text, len + 1);
    fu_mem_free(a, err_log, JIT_LOG_BYTES);
    fu_mem_free(a, info_log, JIT_LOG_BYTES);
    fu_mem_free(a, mod, sizeof *mod);
    if (name_copy) fu_mem_free(a, name_copy, strlen(name_copy) + 1);
    return FU_ERR_NOMEM;
  }
  CUjit_option opts[5] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER,
                          CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE};
  void *vals[5] = {err_log, (void *)(uintptr_t)(JIT_LOG_BYTES - 1), info_log, (void *)(uintptr_t)(JIT_LOG_BYTES - 1),
                   (void *)(uintptr_t)1};
  CUmodule m = NULL;
  CUresult r = rt->api.module_load_data_ex(&m, text, 5, opts, vals);
  fu_mem_free(a, text, len + 1);
  err_log[JIT_LOG_BYTES - 1] = '\0';
  info_log[JIT_LOG_BYTES - 1] = '\0';
  fu_status st = FU_OK;
  if (r != CUDA_SUCCESS) {
    char what[512];
    snprintf(what, sizeof what, "cuModuleLoadDataEx('%s')", name);
    st = fu_rt_check(rt, r, what);
    /* Trim the log's trailing newlines so the note ends cleanly. */
    size_t n = strlen(err_log);
    while (n > 0 && (err_log[n - 1] == '\n' || err_log[n - 1] == '\r')) err_log[--n] = '\0';
    fu_note(rt->diag, fu_loc_none(), "the JIT's error log for '%s': %s", name, n ? err_log : "(empty)");
  }
  fu_mem_free(a, err_log, JIT_LOG_BYTES);
  if (st != FU_OK) {
    fu_mem_free(a, info_log, JIT_LOG_BYTES);
    fu_mem_free(a, mod, sizeof *mod);
    fu_mem_free(a, name_copy, strlen(name_copy) + 1);
    return st;
  }
  /* Keep only what the log used. */
  size_t n = strlen(info_log);
  char *kept = dup_str(a, info_log, n);
  fu_mem_free(a, info_log, JIT_LOG_BYTES);
  if (!kept) {
    rt->api.module_unload(m);
    fu_mem_free(a, mod, sizeof *mod);
    fu_mem_free(a, name_copy, strlen(name_copy) + 1);
    return FU_ERR_NOMEM;
  }
  mod->rt = rt;
  mod->module = m;
  mod->name = name_copy;
  mod->info_log = kept;
  *out = mod;
  return FU_OK;
}

void fu_rt_module_unload(fu_rt_module *mod) {
  if (!mod) return;
  fu_rt *rt = mod->rt;
  char what[512];
  snprintf(what, sizeof what, "cuModuleUnload('%s')", mod->name);
  fu_rt_check(rt, rt->api.module_unload(mod->module), what);
  fu_mem_free(&rt->alloc, mod->name, strlen(mod->name) + 1);
  fu_mem_free(&rt->alloc, mod->info_log, strlen(mod->info_log) + 1);
  fu_mem_free(&rt->alloc, mod, sizeof *mod);
}

const char *fu_rt_module_info_log(const fu_rt_module *mod) { return mod->info_log ? mod->info_log : ""; }

fu_status fu_rt_module_function(fu_rt_module *mod, const char *entry, fu_rt_func *out) {
  memset(out, 0, sizeof *out);
  CUfunction fn = NULL;
  CUresult r = mod->rt->api.module_get_function(&fn, mod->module, entry);
  if (r == CUDA_ERROR_NOT_FOUND) {
    fu_error(mod->rt->diag, fu_loc_none(), "the PTX '%s' has no kernel '%s' (cuModuleGetFunction: CUDA_ERROR_NOT_FOUND)",
             mod->name, entry);
    return FU_ERR_INVALID_ARG;
  }
  char what[512];
  snprintf(what, sizeof what, "cuModuleGetFunction('%s')", entry);
  fu_status st = fu_rt_check(mod->rt, r, what);
  if (st != FU_OK) return st;
  out->handle = (void *)fn;
  out->entry = entry;
  return FU_OK;
}

/* A kernel of thread-block clusters: cuLaunchKernelEx with the cluster
 * dimension {c, 1, 1} as a launch attribute, the only way the driver API
 * has to give the shape (the LLVM backend's PTX has no .reqnctapercluster
 * to give it, lib/target/llvm/codegen.c says why; the CUDA C's
 * __cluster_dims__ does, and the driver takes the same shape again).  The
 * driver would refuse a grid.x that is not a multiple of c with
 * CUDA_ERROR_INVALID_CLUSTER_SIZE or the like; it is checked here first,
 * with a message that says what is wrong. */
static fu_status launch_clusters(fu_rt *rt, CUstream stream, const fu_rt_func *fn, const fu_rt_launch_config *cfg,
                                 void **params) {
  uint32_t c = cfg->cluster;
  if (cfg->grid[0] % c != 0) {
    fu_error(rt->diag, fu_loc_none(),
             "kernel '%s' runs in clusters of %u blocks along x, but its grid.x = %u is not a multiple of %u: not "
             "launched",
             fn->entry, c, cfg->grid[0], c);
    return FU_ERR_INVALID_ARG;
  }
  if (!rt->api.launch_kernel_ex) {
    fu_error(rt->diag, fu_loc_none(),
             "kernel '%s' runs in clusters of %u blocks, which needs cuLaunchKernelEx (a CUDA 11.8 or later driver); "
             "this driver library has none",
             fn->entry, c);
    return FU_ERR_UNSUPPORTED;
  }
  CUlaunchAttribute attr;
  memset(&attr, 0, sizeof attr);
  attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = c;
  attr.value.clusterDim.y = 1;
  attr.value.clusterDim.z = 1;
  CUlaunchConfig lc;
  memset(&lc, 0, sizeof lc);
  lc.gridDimX = cfg->grid[0];
  lc.gridDimY = cfg->grid[1];
  lc.gridDimZ = cfg->grid[2];
  lc.blockDimX = cfg->block[0];
  lc.blockDimY = cfg->block[1];
  lc.blockDimZ = cfg->block[2];
  lc.sharedMemBytes = cfg->smem_bytes;
  lc.hStream = stream;
  lc.attrs = &attr;
  lc.numAttrs = 1;
  char what[256];
  snprintf(what, sizeof what, "cuLaunchKernelEx('%s', grid=[%u, %u, %u], block=[%u, %u, %u], smem=%u, cluster=[%u, 1, 1])",
           fn->entry, cfg->grid[0], cfg->grid[1], cfg->grid[2], cfg->block[0], cfg->block[1], cfg->block[2],
           cfg->smem_bytes, c);
  return fu_rt_check(rt, rt->api.launch_kernel_ex(&lc, (CUfunction)fn->handle, params, NULL), what);
}

fu_status fu_rt_launch(fu_rt *rt, const fu_rt_func *fn, const fu_rt_launch_config *cfg, void **params) {
  return fu_rt_launch_on(rt, rt->stream, fn, cfg, params);
}

fu_status fu_rt_launch_on(fu_rt *rt, CUstream stream, const fu_rt_func *fn, const fu_rt_launch_config *cfg,
                          void **params) {
  char what[256];
  CUfunction f = (CUfunction)fn->handle;
  if (cfg->smem_bytes > 48 * 1024) {
    snprintf(what, sizeof what, "cuFuncSetAttribute('%s', MAX_DYNAMIC_SHARED_SIZE_BYTES=%u)", fn->entry,
             cfg->smem_bytes);
    fu_status st = fu_rt_check(
        rt, rt->api.func_set_attribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)cfg->smem_bytes), what);
    if (st != FU_OK) return st;
  }
  if (cfg->cluster > 1) return launch_clusters(rt, stream, fn, cfg, params);
  snprintf(what, sizeof what, "cuLaunchKernel('%s', grid=[%u, %u, %u], block=[%u, %u, %u], smem=%u)", fn->entry,
           cfg->grid[0], cfg->grid[1], cfg->grid[2], cfg->block[0], cfg->block[1], cfg->block[2], cfg->smem_bytes);
  return fu_rt_check(rt,
                     rt->api.launch_kernel(f, cfg->grid[0], cfg->grid[1], cfg->grid[2], cfg->block[0], cfg->block[1],
                                           cfg->block[2], cfg->smem_bytes, stream, params, NULL),
                     what);
}
