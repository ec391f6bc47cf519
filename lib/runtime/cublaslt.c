/* fuser runtime: matmul segments through cuBLASLt.
 *
 * libcublasLt is loaded at the first matmul segment, with dlopen, as the
 * driver is (cublaslt_api.h declares what is used, so no cuBLAS header is
 * needed to build): a host without it runs every other fusion, and a
 * matmul segment fails with an error naming the library it looked for.
 * The runtime owns one cuBLASLt handle and one workspace (32 MiB, what
 * cuBLASLt's Hopper kernels ask for at most), and caches, per call
 * geometry (dtypes, transposes, sizes, leading dims, batch, epilogue), the
 * descriptors and the algorithm cuBLASLt's heuristic picked, so a
 * benchmark's timed runs pay for neither. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cublaslt_api.h"
#include "fuser/gemm.h"
#include "internal.h"

enum { LT_WORKSPACE_BYTES = 32 << 20, LT_CACHE_MAX = 64 };

/* What a cached entry depends on: the call without its buffers, name and
 * alpha. */
typedef struct lt_key {
  int ab, d, bias, act;
  int trans_a, trans_b;
  int64_t m, n, k, lda, ldb, ldd, batch, sa, sb, sd;
} lt_key;

typedef struct lt_entry {
  lt_key key;
  fu_lt_desc desc;
  fu_lt_layout la, lb, ld;
  fu_lt_algo algo;
} lt_entry;

struct fu_rt_lt {
  void *lib;
  fu_lt_api api;
  fu_lt_handle handle;
  fu_rt_ptr workspace;
  lt_entry cache[LT_CACHE_MAX];
  uint32_t n_cache;
};

static void set_entry(void *slot, void *sym, size_t size) { memcpy(slot, &sym, size); }

static int lt_type(fu_dtype t) { return t == FU_DT_BF16 ? FU_LT_R_16BF : t == FU_DT_F16 ? FU_LT_R_16F : FU_LT_R_32F; }

/* Loads the library and its entry points; false with the reason. */
static bool load(const char *path, fu_lt_api *api, void **lib, fu_strbuf *why) {
  static const char *const names[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"};
  void *h = NULL;
  if (path) {
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) fu_strbuf_printf(why, "cannot load '%s': %s", path, dlerror());
  } else {
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) fu_strbuf_puts(why, "cannot load libcublasLt (tried libcublasLt.so.13, .so.12 and .so; set FUSER_LIBCUBLASLT)");
  }
  if (!h) return false;
#define FU_LT_LOAD(member, ret, sym, params)                                                  \
  do {                                                                                        \
    void *p = dlsym(h, sym);                                                                  \
    if (!p) {                                                                                 \
      fu_strbuf_printf(why, "the cuBLASLt library has no entry point '%s' (too old?)", sym);  \
      dlclose(h);                                                                             \
      return false;                                                                           \
    }                                                                                         \
    set_entry(&api->member, p, sizeof api->member);                                           \
  } while (0);
  FU_LT_ENTRY_POINTS(FU_LT_LOAD)
#undef FU_LT_LOAD
  *lib = h;
  return true;
}

static fu_status lt_check(fu_rt *rt, fu_lt_status s, fu_loc loc, const char *what) {
  if (s == FU_LT_SUCCESS) return FU_OK;
  fu_error(rt->diag, loc, "%s failed: cublasStatus_t %d", what, (int)s);
  return FU_ERR_RUNTIME;
}

fu_status fu_rt_lt_open(fu_rt *rt, fu_loc loc, const char *segment) {
  if (rt->lt) return FU_OK;
  struct fu_rt_lt *lt = fu_mem_calloc(&rt->alloc, 1, sizeof *lt);
  if (!lt) return FU_ERR_NOMEM;
  fu_strbuf why;
  fu_strbuf_init(&why, rt->alloc);
  const char *path = rt->libcublaslt_path ? rt->libcublaslt_path : getenv("FUSER_LIBCUBLASLT");
  if (!load(path && *path ? path : NULL, &lt->api, &lt->lib, &why)) {
    fu_error(rt->diag, loc, "matmul segment '@%s' runs through cuBLASLt, which this host lacks: %s", segment,
             why.data ? why.data : "");
    fu_strbuf_free(&why);
    fu_mem_free(&rt->alloc, lt, sizeof *lt);
    return FU_ERR_UNSUPPORTED;
  }
  fu_strbuf_free(&why);
  fu_status st = lt_check(rt, lt->api.create(&lt->handle), loc, "cublasLtCreate");
  if (st == FU_OK) st = fu_rt_mem_alloc(rt, LT_WORKSPACE_BYTES, &lt->workspace);
  rt->lt = lt;
  if (st != FU_OK) fu_rt_lt_close(rt);
  return st;
}

void fu_rt_lt_close(fu_rt *rt) {
  struct fu_rt_lt *lt = rt->lt;
  if (!lt) return;
  for (uint32_t i = 0; i < lt->n_cache; i++) {
    lt_entry *e = &lt->cache[i];
    lt->api.layout_destroy(e->la);
    lt->api.layout_destroy(e->lb);
    lt->api.layout_destroy(e->ld);
    lt->api.desc_destroy(e->desc);
  }
  if (lt->workspace) fu_rt_mem_free(rt, lt->workspace);
  if (lt->handle) lt->api.destroy(lt->handle);
  if (lt->lib) dlclose(lt->lib);
  fu_mem_free(&rt->alloc, lt, sizeof *lt);
  rt->lt = NULL;
}

static lt_key key_of(const fu_rt_gemm *g) {
  lt_key k;
  memset(&k, 0, sizeof k);
  k.ab = g->ab_dtype;
  k.d = g->d_dtype;
  k.bias = g->buf_bias >= 0 ? (int)g->bias_dtype : -1;
  k.act = g->act;
  k.trans_a = g->trans_a;
  k.trans_b = g->trans_b;
  k.m = g->m;
  k.n = g->n;
  k.k = g->k;
  k.lda = g->lda;
  k.ldb = g->ldb;
  k.ldd = g->ldd;
  k.batch = g->batch;
  k.sa = g->stride_a;
  k.sb = g->stride_b;
  k.sd = g->stride_d;
  return k;
}

static fu_status layout(struct fu_rt_lt *lt, fu_rt *rt, fu_loc loc, fu_lt_layout *out, fu_dtype t, int64_t rows,
                        int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
  fu_status st = lt_check(rt, lt->api.layout_create(out, lt_type(t), (uint64_t)rows, (uint64_t)cols, ld), loc,
                          "cublasLtMatrixLayoutCreate");
  if (st != FU_OK || batch <= 1) return st;
  int32_t count = (int32_t)batch;
  st = lt_check(rt, lt->api.layout_set(*out, FU_LT_LAYOUT_BATCH_COUNT, &count, sizeof count), loc,
                "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
  if (st == FU_OK)
    st = lt_check(rt, lt->api.layout_set(*out, FU_LT_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride), loc,
                  "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
  return st;
}

/* The descriptors and algorithm of a call geometry, made on first use. */
static fu_status entry_for(fu_rt *rt, const fu_rt_gemm *g, fu_loc loc, lt_entry **out) {
  struct fu_rt_lt *lt = rt->lt;
  lt_key k = key_of(g);
  for (uint32_t i = 0; i < lt->n_cache; i++)
    if (memcmp(&lt->cache[i].key, &k, sizeof k) == 0) {
      *out = &lt->cache[i];
      return FU_OK;
    }
  if (lt->n_cache == LT_CACHE_MAX) {
    fu_error(rt->diag, loc, "more than %d matmul shapes in one run", LT_CACHE_MAX);
    return FU_ERR_UNSUPPORTED;
  }
  lt_entry *e = &lt->cache[lt->n_cache];
  memset(e, 0, sizeof *e);
  e->key = k;
  fu_status st = lt_check(rt, lt->api.desc_create(&e->desc, FU_LT_COMPUTE_32F, FU_LT_R_32F), loc,
                          "cublasLtMatmulDescCreate");
  int32_t ta = g->trans_a ? FU_LT_OP_T : FU_LT_OP_N, tb = g->trans_b ? FU_LT_OP_T : FU_LT_OP_N;
  uint32_t epi = g->act == FU_GEMM_ACT_RELU ? FU_LT_EPI_RELU : g->act == FU_GEMM_ACT_GELU ? FU_LT_EPI_GELU : 0;
  if (g->buf_bias >= 0) epi |= FU_LT_EPI_BIAS;
  if (!epi) epi = FU_LT_EPI_DEFAULT;
  if (st == FU_OK) st = lt_check(rt, lt->api.desc_set(e->desc, FU_LT_DESC_TRANSA, &ta, sizeof ta), loc, "TRANSA");
  if (st == FU_OK) st = lt_check(rt, lt->api.desc_set(e->desc, FU_LT_DESC_TRANSB, &tb, sizeof tb), loc, "TRANSB");
  if (st == FU_OK) st = lt_check(rt, lt->api.desc_set(e->desc, FU_LT_DESC_EPILOGUE, &epi, sizeof epi), loc, "EPILOGUE");
  if (st == FU_OK && g->buf_bias >= 0) {
    int32_t bt = lt_type(g->bias_dtype);
    st = lt_check(rt, lt->api.desc_set(e->desc, FU_LT_DESC_BIAS_DATA_TYPE, &bt, sizeof bt), loc, "BIAS_DATA_TYPE");
  }
  /* stored shapes: op(A) is m x k, op(B) k x n */
  if (st == FU_OK)
    st = layout(lt, rt, loc, &e->la, g->ab_dtype, g->trans_a ? g->k : g->m, g->trans_a ? g->m : g->k, g->lda, g->batch,
                g->stride_a);
  if (st == FU_OK)
    st = layout(lt, rt, loc, &e->lb, g->ab_dtype, g->trans_b ? g->n : g->k, g->trans_b ? g->k : g->n, g->ldb, g->batch,
                g->stride_b);
  if (st == FU_OK) st = layout(lt, rt, loc, &e->ld, g->d_dtype, g->m, g->n, g->ldd, g->batch, g->stride_d);
  fu_lt_pref pref = NULL;
  if (st == FU_OK) st = lt_check(rt, lt->api.pref_create(&pref), loc, "cublasLtMatmulPreferenceCreate");
  uint64_t ws = LT_WORKSPACE_BYTES;
  if (st == FU_OK)
    st = lt_check(rt, lt->api.pref_set(pref, FU_LT_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws), loc,
                  "cublasLtMatmulPreferenceSetAttribute");
  fu_lt_heuristic h;
  int found = 0;
  if (st == FU_OK)
    st = lt_check(rt, lt->api.heuristic(lt->handle, e->desc, e->la, e->lb, e->ld, e->ld, pref, 1, &h, &found), loc,
                  "cublasLtMatmulAlgoGetHeuristic");
  if (pref) lt->api.pref_destroy(pref);
  if (st == FU_OK && found < 1) {
    fu_error(rt->diag, loc, "cuBLASLt has no algorithm for this matmul (m=%lld n=%lld k=%lld, %s -> %s, epilogue %s)",
             (long long)g->m, (long long)g->n, (long long)g->k, fu_dtype_name(g->ab_dtype), fu_dtype_name(g->d_dtype),
             fu_gemm_act_name((fu_gemm_act)g->act));
    st = FU_ERR_UNSUPPORTED;
  }
  if (st != FU_OK) {
    if (e->la) lt->api.layout_destroy(e->la);
    if (e->lb) lt->api.layout_destroy(e->lb);
    if (e->ld) lt->api.layout_destroy(e->ld);
    if (e->desc) lt->api.desc_destroy(e->desc);
    return st;
  }
  e->algo = h.algo;
  lt->n_cache++;
  *out = e;
  return FU_OK;
}

fu_status fu_rt_gemm_run(fu_rt *rt, CUstream stream, const fu_rt_gemm *g, const fu_rt_ptr *ptrs, fu_loc loc) {
  struct fu_rt_lt *lt = rt->lt;
  if (!lt) {
    fu_error(rt->diag, loc, "cuBLASLt is not loaded");
    return FU_ERR_INVALID_ARG;
  }
  lt_entry *e;
  fu_status st = entry_for(rt, g, loc, &e);
  if (st != FU_OK) return st;
  if (g->buf_bias >= 0) {
    void *bias = (void *)(uintptr_t)ptrs[g->buf_bias];
    st = lt_check(rt, lt->api.desc_set(e->desc, FU_LT_DESC_BIAS_POINTER, &bias, sizeof bias), loc, "BIAS_POINTER");
    if (st != FU_OK) return st;
  }
  float alpha = g->alpha, beta = 0.0f;
  /* cuBLASLt's A is the product's B (gemm_plan.c) */
  const void *a = (const void *)(uintptr_t)ptrs[g->buf_b], *b = (const void *)(uintptr_t)ptrs[g->buf_a];
  void *d = (void *)(uintptr_t)ptrs[g->buf_d];
  return lt_check(rt, lt->api.matmul(lt->handle, e->desc, &alpha, a, e->la, b, e->lb, &beta, d, e->ld, d, e->ld, &e->algo,
                                     (void *)(uintptr_t)lt->workspace, LT_WORKSPACE_BYTES, (void *)stream),
                  loc, "cublasLtMatmul");
}
