/* fuser runtime: the few cuBLASLt types, values and entry points the
 * matmul segments use, declared here (values as cublasLt.h of CUDA 12 and
 * 13 defines them), so the runtime builds with no cuBLAS headers and loads
 * libcublasLt at run time, as it loads the driver. */
#ifndef FUSER_RUNTIME_CUBLASLT_API_H
#define FUSER_RUNTIME_CUBLASLT_API_H

#include <stddef.h>
#include <stdint.h>

typedef int fu_lt_status;            /* cublasStatus_t; 0 = CUBLAS_STATUS_SUCCESS */
typedef void *fu_lt_handle;          /* cublasLtHandle_t */
typedef void *fu_lt_desc;            /* cublasLtMatmulDesc_t */
typedef void *fu_lt_layout;          /* cublasLtMatrixLayout_t */
typedef void *fu_lt_pref;            /* cublasLtMatmulPreference_t */
typedef struct fu_lt_algo {          /* cublasLtMatmulAlgo_t */
  uint64_t data[8];
} fu_lt_algo;
typedef struct fu_lt_heuristic {     /* cublasLtMatmulHeuristicResult_t */
  fu_lt_algo algo;
  size_t workspace_size;
  fu_lt_status state;
  float waves_count;
  int reserved[4];
} fu_lt_heuristic;

enum {
  FU_LT_SUCCESS = 0,
  /* cudaDataType_t */
  FU_LT_R_32F = 0,
  FU_LT_R_16F = 2,
  FU_LT_R_16BF = 14,
  /* cublasComputeType_t */
  FU_LT_COMPUTE_32F = 68,
  /* cublasOperation_t */
  FU_LT_OP_N = 0,
  FU_LT_OP_T = 1,
  /* cublasLtMatmulDescAttributes_t */
  FU_LT_DESC_TRANSA = 3,
  FU_LT_DESC_TRANSB = 4,
  FU_LT_DESC_EPILOGUE = 7,
  FU_LT_DESC_BIAS_POINTER = 8,
  FU_LT_DESC_BIAS_DATA_TYPE = 26,
  /* cublasLtEpilogue_t */
  FU_LT_EPI_DEFAULT = 1,
  FU_LT_EPI_RELU = 2,
  FU_LT_EPI_BIAS = 4,
  FU_LT_EPI_GELU = 32,
  /* cublasLtMatrixLayoutAttribute_t */
  FU_LT_LAYOUT_BATCH_COUNT = 5,
  FU_LT_LAYOUT_STRIDED_BATCH_OFFSET = 6,
  /* cublasLtMatmulPreferenceAttributes_t */
  FU_LT_PREF_MAX_WORKSPACE_BYTES = 1,
};

/* X(member, return type, symbol, parameter list) */
#define FU_LT_ENTRY_POINTS(X)                                                                                     \
  X(create, fu_lt_status, "cublasLtCreate", (fu_lt_handle *))                                                     \
  X(destroy, fu_lt_status, "cublasLtDestroy", (fu_lt_handle))                                                     \
  X(get_version, size_t, "cublasLtGetVersion", (void))                                                            \
  X(desc_create, fu_lt_status, "cublasLtMatmulDescCreate", (fu_lt_desc *, int, int))                              \
  X(desc_destroy, fu_lt_status, "cublasLtMatmulDescDestroy", (fu_lt_desc))                                        \
  X(desc_set, fu_lt_status, "cublasLtMatmulDescSetAttribute", (fu_lt_desc, int, const void *, size_t))            \
  X(layout_create, fu_lt_status, "cublasLtMatrixLayoutCreate", (fu_lt_layout *, int, uint64_t, uint64_t, int64_t)) \
  X(layout_destroy, fu_lt_status, "cublasLtMatrixLayoutDestroy", (fu_lt_layout))                                  \
  X(layout_set, fu_lt_status, "cublasLtMatrixLayoutSetAttribute", (fu_lt_layout, int, const void *, size_t))      \
  X(pref_create, fu_lt_status, "cublasLtMatmulPreferenceCreate", (fu_lt_pref *))                                  \
  X(pref_destroy, fu_lt_status, "cublasLtMatmulPreferenceDestroy", (fu_lt_pref))                                  \
  X(pref_set, fu_lt_status, "cublasLtMatmulPreferenceSetAttribute", (fu_lt_pref, int, const void *, size_t))      \
  X(heuristic, fu_lt_status, "cublasLtMatmulAlgoGetHeuristic",                                                    \
    (fu_lt_handle, fu_lt_desc, fu_lt_layout, fu_lt_layout, fu_lt_layout, fu_lt_layout, fu_lt_pref, int,           \
     fu_lt_heuristic *, int *))                                                                                   \
  X(matmul, fu_lt_status, "cublasLtMatmul",                                                                       \
    (fu_lt_handle, fu_lt_desc, const void *, const void *, fu_lt_layout, const void *, fu_lt_layout, const void *, \
     const void *, fu_lt_layout, void *, fu_lt_layout, const fu_lt_algo *, void *, size_t, void *))

typedef struct fu_lt_api {
#define FU_LT_MEMBER(member, ret, sym, params) ret(*member) params;
  FU_LT_ENTRY_POINTS(FU_LT_MEMBER)
#undef FU_LT_MEMBER
} fu_lt_api;

#endif
