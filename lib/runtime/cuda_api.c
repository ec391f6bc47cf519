/* fuser runtime: loading the CUDA driver library and naming its errors. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* dlsym returns an object pointer; ISO C has no conversion from it to a
 * function pointer, so copy the bits (POSIX guarantees they are the same). */
static void set_entry(void *slot, void *sym, size_t size) { memcpy(slot, &sym, size); }

/* Entry points a driver may lack: cuLaunchKernelEx came with CUDA 11.8's
 * driver and only kernels of thread-block clusters (sm_90) need it, so an
 * older driver still runs every other kernel. */
static bool optional_entry(const char *sym) { return strcmp(sym, "cuLaunchKernelEx") == 0; }

/* Why dlopen, not linking libcuda: a binary linked to the toolkit's stub
 * (or to a real libcuda) would not even start where no driver is installed,
 * and a GPU-less machine must still run every tool and report "no CUDA
 * device" cleanly. */
bool fu_cuda_api_load(const char *path, fu_cuda_api *api, void **lib, fu_strbuf *why) {
  memset(api, 0, sizeof *api);
  *lib = NULL;
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *err = dlerror();
    fu_strbuf_printf(why, "cannot load the CUDA driver library: %s", err ? err : path);
    return false;
  }
#define FU_CUDA_LOAD(member, fn, sym)                                              \
  do {                                                                             \
    void *p = dlsym(h, sym);                                                       \
    if (!p && strcmp(sym, "cuEventElapsedTime_v2") == 0) p = dlsym(h, "cuEventElapsedTime"); \
    if (!p && !optional_entry(sym)) {                                              \
      fu_strbuf_printf(why, "the CUDA driver library '%s' has no entry point '%s' (driver too old?)", path, sym); \
      dlclose(h);                                                                  \
      memset(api, 0, sizeof *api);                                                 \
      return false;                                                                \
    }                                                                              \
    set_entry(&api->member, p, sizeof api->member);                                \
  } while (0);
  FU_CUDA_ENTRY_POINTS(FU_CUDA_LOAD)
#undef FU_CUDA_LOAD
  *lib = h;
  return true;
}

void fu_cuda_api_unload(void *lib) {
  if (lib) dlclose(lib);
}

/* The driver names its errors; the toolkit's stub library does not, and
 * cuInit's answers are what a machine without a GPU sees, so those are
 * named here too. */
const char *fu_rt_error_name(const fu_cuda_api *api, CUresult r) {
  const char *name = NULL;
  if (api->get_error_name && api->get_error_name(r, &name) == CUDA_SUCCESS && name) return name;
  switch (r) {
  case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
  case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
  case CUDA_ERROR_STUB_LIBRARY: return "CUDA_ERROR_STUB_LIBRARY";
  case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
  case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
  case CUDA_ERROR_DEVICE_UNAVAILABLE: return "CUDA_ERROR_DEVICE_UNAVAILABLE";
  default: return NULL;
  }
}

/* Errors a kernel leaves in the context: every later driver call returns
 * the same one, until the process ends. */
static bool sticky(CUresult r) {
  return r == CUDA_ERROR_ILLEGAL_ADDRESS || r == CUDA_ERROR_LAUNCH_TIMEOUT || r == CUDA_ERROR_HARDWARE_STACK_ERROR ||
         r == CUDA_ERROR_ILLEGAL_INSTRUCTION || r == CUDA_ERROR_MISALIGNED_ADDRESS ||
         r == CUDA_ERROR_INVALID_ADDRESS_SPACE || r == CUDA_ERROR_INVALID_PC || r == CUDA_ERROR_LAUNCH_FAILED;
}

bool fu_rt_faulted(const fu_rt *rt) { return rt->fault != CUDA_SUCCESS; }

/* After a kernel fault, the cleanup's frees and syncs fail with the same
 * error: it is reported once, where it surfaced (with the kernel's name),
 * not once per buffer freed. */
fu_status fu_rt_check_at(fu_rt *rt, CUresult r, fu_loc loc, const char *what) {
  if (r == CUDA_SUCCESS) return FU_OK;
  if (rt->fault != CUDA_SUCCESS && r == rt->fault) return FU_ERR_RUNTIME;
  if (sticky(r)) rt->fault = r;
  const char *name = fu_rt_error_name(&rt->api, r);
  const char *desc = NULL;
  if (!rt->api.get_error_string || rt->api.get_error_string(r, &desc) != CUDA_SUCCESS) desc = NULL;
  if (name)
    fu_error(rt->diag, loc, "%s failed: %s: %s", what, name, desc ? desc : "no description");
  else
    fu_error(rt->diag, loc, "%s failed: CUresult %d: %s", what, (int)r, desc ? desc : "unknown error");
  return FU_ERR_RUNTIME;
}
