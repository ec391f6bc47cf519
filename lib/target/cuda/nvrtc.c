/* fuser cuda target: CUDA C to PTX through NVRTC, loaded at run time.
 *
 * Why dlopen, as the runtime does with libcuda: a build needs no toolkit to
 * have this backend, a binary starts where libnvrtc is absent (and says what
 * is missing only when asked to compile), and a GPU host that has libnvrtc
 * but no LLVM compiles its kernels itself.  The library is found, in order,
 * at $FUSER_LIBNVRTC, in the toolkit found at configure time, then by the
 * loader's search path.  NVRTC needs the toolkit's include folder only for
 * cuda_fp16.h and cuda_bf16.h: $FUSER_CUDA_INCLUDE, the include folder
 * beside the loaded library, or the configure-time toolkit's. */
#define _GNU_SOURCE /* dladdr: the folder the library was loaded from; RTLD_NODELETE */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuser/device.h"
#include "internal.h"

/* NVRTC's C API, as declared in nvrtc.h (not included: the build needs no
 * toolkit). */
typedef int nv_result; /* nvrtcResult; 0 is NVRTC_SUCCESS */
typedef struct nv_program *nv_program;

struct cu_nvrtc {
  fu_allocator alloc;
  fu_diag_engine *diag;
  void *lib;
  char lib_dir[512];
  char version[32];
  const char *(*get_error_string)(nv_result);
  nv_result (*version_fn)(int *, int *);
  nv_result (*create)(nv_program *, const char *, const char *, int, const char *const *, const char *const *);
  nv_result (*destroy)(nv_program *);
  nv_result (*compile)(nv_program, int, const char *const *);
  nv_result (*ptx_size)(nv_program, size_t *);
  nv_result (*ptx)(nv_program, char *);
  nv_result (*log_size)(nv_program, size_t *);
  nv_result (*log)(nv_program, char *);
  char include_dir[600]; /* found on first need; "" until then */
};

/* dlsym gives an object pointer; copy its bits into the function pointer
 * (POSIX guarantees they are the same). */
static bool entry(void *h, const char *sym, void *slot, size_t size) {
  void *p = dlsym(h, sym);
  if (p) memcpy(slot, &p, size);
  return p != NULL;
}

/* RTLD_NODELETE: libnvrtc's own C++ runtime allocates at load time and
 * frees nothing at unload; kept mapped, that memory stays reachable (and
 * a second open in the process costs nothing). */
static void *try_open(const char *path, fu_strbuf *tried) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!h) {
    const char *err = dlerror();
    fu_strbuf_printf(tried, "\n  %s: %s", path, err ? err : "not loadable");
  }
  return h;
}

fu_status cu_nvrtc_open(fu_allocator alloc, fu_diag_engine *diag, cu_nvrtc **out) {
  *out = NULL;
  fu_strbuf tried;
  fu_strbuf_init(&tried, alloc);
  void *h = NULL;
  const char *env = getenv("FUSER_LIBNVRTC");
  if (env && *env) {
    h = try_open(env, &tried);
  } else {
#ifdef FUSER_CUDA_ROOT
    h = try_open(FUSER_CUDA_ROOT "/lib64/libnvrtc.so", &tried);
#endif
    static const char *const names[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"};
    for (size_t i = 0; !h && i < sizeof names / sizeof names[0]; i++) h = try_open(names[i], &tried);
  }
  if (!h) {
    fu_diag_report(diag, FU_SEV_ERROR, fu_loc_none(),
                   "the nvrtc backend needs libnvrtc (the CUDA Toolkit's runtime compiler), which could not be "
                   "loaded; set FUSER_LIBNVRTC=/path/to/libnvrtc.so, or use --backend=llvm; tried:%s",
                   tried.data ? tried.data : "");
    fu_strbuf_free(&tried);
    return FU_ERR_UNSUPPORTED;
  }
  fu_strbuf_free(&tried);
  cu_nvrtc *nv = fu_mem_calloc(&alloc, 1, sizeof *nv);
  if (!nv) {
    dlclose(h);
    return FU_ERR_NOMEM;
  }
  nv->alloc = alloc;
  nv->diag = diag;
  nv->lib = h;
  const char *missing = NULL;
#define NV_ENTRY(member, sym) \
  if (!missing && !entry(h, sym, &nv->member, sizeof nv->member)) missing = sym;
  NV_ENTRY(get_error_string, "nvrtcGetErrorString")
  NV_ENTRY(version_fn, "nvrtcVersion")
  NV_ENTRY(create, "nvrtcCreateProgram")
  NV_ENTRY(destroy, "nvrtcDestroyProgram")
  NV_ENTRY(compile, "nvrtcCompileProgram")
  NV_ENTRY(ptx_size, "nvrtcGetPTXSize")
  NV_ENTRY(ptx, "nvrtcGetPTX")
  NV_ENTRY(log_size, "nvrtcGetProgramLogSize")
  NV_ENTRY(log, "nvrtcGetProgramLog")
#undef NV_ENTRY
  if (missing) {
    fu_diag_report(diag, FU_SEV_ERROR, fu_loc_none(), "libnvrtc has no entry point '%s' (an NVRTC older than 11.0?)",
                   missing);
    cu_nvrtc_close(nv);
    return FU_ERR_UNSUPPORTED;
  }
  int major = 0, minor = 0;
  if (nv->version_fn(&major, &minor) == 0) snprintf(nv->version, sizeof nv->version, "%d.%d", major, minor);
  Dl_info info;
  void *sym = dlsym(h, "nvrtcCompileProgram");
  if (sym && dladdr(sym, &info) && info.dli_fname) {
    snprintf(nv->lib_dir, sizeof nv->lib_dir, "%.500s", info.dli_fname);
    char *slash = strrchr(nv->lib_dir, '/');
    if (slash) *slash = '\0';
    else nv->lib_dir[0] = '\0';
  }
  *out = nv;
  return FU_OK;
}

void cu_nvrtc_close(cu_nvrtc *nv) {
  if (!nv) return;
  if (nv->lib) dlclose(nv->lib);
  fu_allocator a = nv->alloc;
  fu_mem_free(&a, nv, sizeof *nv);
}

const char *cu_nvrtc_version(const cu_nvrtc *nv) { return nv ? nv->version : ""; }

static bool has_fp16_header(const char *dir) {
  char path[700];
  snprintf(path, sizeof path, "%.600s/cuda_fp16.h", dir);
  return access(path, R_OK) == 0;
}

/* The folder with cuda_fp16.h and cuda_bf16.h, or NULL (error reported). */
static const char *include_dir(cu_nvrtc *nv) {
  if (nv->include_dir[0]) return nv->include_dir;
  char cand[4][600];
  int n = 0;
  const char *env = getenv("FUSER_CUDA_INCLUDE");
  if (env && *env) snprintf(cand[n++], sizeof cand[0], "%.590s", env);
  if (nv->lib_dir[0]) {
    snprintf(cand[n++], sizeof cand[0], "%s/../include", nv->lib_dir);
    snprintf(cand[n++], sizeof cand[0], "%s/../../include", nv->lib_dir);
  }
#ifdef FUSER_CUDA_ROOT
  snprintf(cand[n++], sizeof cand[0], "%s", FUSER_CUDA_ROOT "/include");
#endif
  for (int i = 0; i < n; i++)
    if (has_fp16_header(cand[i])) {
      snprintf(nv->include_dir, sizeof nv->include_dir, "%.590s", cand[i]);
      return nv->include_dir;
    }
  fu_diag_report(nv->diag, FU_SEV_ERROR, fu_loc_none(),
                 "the CUDA C uses f16 or bf16, and NVRTC needs the CUDA Toolkit's cuda_fp16.h and cuda_bf16.h for "
                 "them, which were not found beside libnvrtc (%s/../include) or in the configured toolkit; set "
                 "FUSER_CUDA_INCLUDE to the folder that has them",
                 nv->lib_dir[0] ? nv->lib_dir : "?");
  return NULL;
}

/* "sm_90a" -> "--gpu-architecture=compute_90a" (PTX for that architecture). */
static bool arch_option(const char *arch, char *buf, size_t size) {
  if (!fu_arch_sm(arch)) return false;
  snprintf(buf, size, "--gpu-architecture=compute_%s", arch + 3);
  return true;
}

fu_status cu_nvrtc_compile(cu_nvrtc *nv, const char *src, const char *name, const char *arch, bool needs_headers,
                           fu_strbuf *out) {
  char archopt[64], incopt[700];
  if (!arch_option(arch, archopt, sizeof archopt)) {
    fu_diag_report(nv->diag, FU_SEV_ERROR, fu_loc_none(), "unknown GPU architecture '%s' (expected sm_NN or sm_NNa)",
                   arch ? arch : "(null)");
    return FU_ERR_INVALID_ARG;
  }
  /* no contraction into fma: the LLVM path's arithmetic rounds every op */
  const char *opts[3] = {archopt, "--fmad=false", NULL};
  int n_opts = 2;
  if (needs_headers) {
    const char *dir = include_dir(nv);
    if (!dir) return FU_ERR_UNSUPPORTED;
    snprintf(incopt, sizeof incopt, "--include-path=%.600s", dir);
    opts[n_opts++] = incopt;
  }
  nv_program prog = NULL;
  nv_result r = nv->create(&prog, src, name, 0, NULL, NULL);
  if (r != 0) {
    fu_diag_report(nv->diag, FU_SEV_ERROR, fu_loc_none(), "nvrtcCreateProgram failed: %s", nv->get_error_string(r));
    return FU_ERR_RUNTIME;
  }
  fu_status st = FU_OK;
  r = nv->compile(prog, n_opts, opts);
  if (r != 0) {
    size_t n = 0;
    char *log = NULL;
    if (nv->log_size(prog, &n) == 0 && n) log = fu_mem_alloc(&nv->alloc, n + 1);
    if (log && nv->log(prog, log) != 0) log[0] = '\0';
    if (log) log[n] = '\0';
    fu_diag_report(nv->diag, FU_SEV_ERROR, fu_loc_none(), "NVRTC %s could not compile the CUDA C for %s (%s):\n%s",
                   nv->version, arch, nv->get_error_string(r), log ? log : "(no log)");
    if (log) fu_mem_free(&nv->alloc, log, n + 1);
    st = FU_ERR_UNSUPPORTED;
  } else {
    size_t n = 0;
    char *ptx = NULL;
    if (nv->ptx_size(prog, &n) == 0 && n) ptx = fu_mem_alloc(&nv->alloc, n);
    if (!ptx || nv->ptx(prog, ptx) != 0) {
      fu_diag_report(nv->diag, FU_SEV_ERROR, fu_loc_none(), "NVRTC gave no PTX");
      st = ptx ? FU_ERR_RUNTIME : FU_ERR_NOMEM;
    } else {
      fu_strbuf_append(out, ptx, strnlen(ptx, n));
      if (out->failed) st = FU_ERR_NOMEM;
    }
    if (ptx) fu_mem_free(&nv->alloc, ptx, n);
  }
  nv->destroy(&prog);
  return st;
}
