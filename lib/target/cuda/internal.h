/* fuser cuda target: state shared by the files of lib/target/cuda (not a
 * public header).
 *
 * The target writes CUDA C for kernel IR (the text a user reads, and what
 * NVRTC compiles), one instruction per statement, with the kernel IR's value
 * names.  The files: names.c (C identifiers), types.c (dtypes as C types,
 * conversions, literals), math.c (the pointwise ops), prelude.c (the helper
 * functions a module needs), emit.c (instructions, kernels, the module),
 * nvrtc.c (libnvrtc loaded at run time, CUDA C to PTX) and target.c (the
 * row of the target table). */
#ifndef FUSER_TARGET_CUDA_INTERNAL_H
#define FUSER_TARGET_CUDA_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "fuser/alloc.h"
#include "fuser/diag.h"
#include "fuser/kir.h"
#include "fuser/strbuf.h"
#include "fuser/target.h"

/* ---- prelude.c: the helpers a module's CUDA C may call ---------------------- */

/* One bit per helper; a module writes only those its kernels use. */
typedef enum cu_helper {
  CU_H_FP16 = 1u << 0,      /* #include <cuda_fp16.h> */
  CU_H_BF16 = 1u << 1,      /* #include <cuda_bf16.h> */
  CU_H_VEC = 1u << 2,       /* fu_vec<T, N>: vector loads and stores */
  CU_H_MAXMIN = 1u << 3,    /* fu_maximum/fu_minimum on floats: NaN propagates */
  CU_H_REM_F = 1u << 4,     /* fu_remainder on floats */
  CU_H_REM_I = 1u << 5,     /* fu_remainder on ints */
  CU_H_IPOW = 1u << 6,      /* fu_ipow */
  CU_H_LERP = 1u << 7,      /* fu_lerp */
  CU_H_CLAMP = 1u << 8,     /* fu_clamp */
  CU_H_INT_BITS = 1u << 9,  /* fu_gcd, fu_shl, fu_shr on ints */
  CU_H_RNG = 1u << 10,      /* fu_philox, fu_rng_f32, fu_rng_f64: uniform and normal (needs FP16 and BF16) */
  CU_H_RCP = 1u << 11,      /* fu_rcp: the f32 reciprocal's fast path */
  CU_H_LDCS = 1u << 12,     /* fu_ldcs: a load that L2 evicts first (a `stream` parameter) */
  CU_H_EXP = 1u << 13,      /* fu_exp: the f32 exp's fast path */
  CU_H_CLUSTER = 1u << 14,  /* fu_cluster_rank, fu_cluster_sync, fu_ld_cta: thread-block clusters (sm_90) */
  CU_H_EXP2 = 1u << 15,     /* fu_exp2: the f32 exp2's fast path */
} cu_helper;

/* Writes the includes and helper definitions of `used` (a cu_helper mask). */
void cu_prelude_write(fu_strbuf *out, unsigned used);

/* ---- the emit call: one module of CUDA C ------------------------------------ */

typedef struct cu_module {
  fu_allocator alloc;
  fu_diag_engine *diag;
  fu_arena *arena;  /* names, freed with the call */
  unsigned helpers; /* cu_helper bits the kernels used */
  bool no_fast_paths; /* fu_target_options.no_fast_paths: IEEE f32 reciprocal */
  uint32_t sm;        /* of the arch emitted for (90 for sm_90 and sm_90a), 0 if unknown */
  const char *arch;   /* that arch's name, for messages */
  bool failed;
} cu_module;

/* An error of this call (reported once per call; later ones are dropped
 * only when they repeat the first). */
void cu_error(cu_module *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The state of one kernel's emission. */
typedef struct cu_kernel {
  cu_module *mod;
  const fu_kernel *k;
  const char **names;   /* by kval id: the C identifier */
  const fu_kval **vals; /* by kval id: the value (for declarations) */
  uint32_t *uses;       /* by kval id: how many operands name it */
  uint32_t n_ids;
  /* the identifiers taken in this kernel: an open-addressing set */
  const char **taken;
  uint32_t taken_cap, n_taken;
  fu_strbuf *out;
  unsigned depth; /* indentation, in blocks */
  /* scratch for expressions, reused per instruction */
  fu_strbuf ops[3];
  fu_strbuf expr;
} cu_kernel;

/* ---- names.c ---------------------------------------------------------------- */

/* Gives every value of the kernel (parameters, body) a C identifier: its
 * kernel-IR name made a valid one, unique within the kernel, never a C++
 * keyword or a name the emitted code calls; counts the uses of each value.
 * FU_ERR_NOMEM on failure. */
fu_status cu_names_assign(cu_kernel *kc);
/* The identifier of `v` (assigned by cu_names_assign). */
const char *cu_name(const cu_kernel *kc, const fu_kval *v);
/* A new identifier `<base>` or `<base>_<n>` not taken in the kernel; NULL
 * when out of memory. */
const char *cu_fresh_name(cu_kernel *kc, const char *base);
/* Whether `name` may be a kernel's entry point in CUDA C: a valid PTX
 * identifier that CUDA C does not reserve.  *why says what is wrong. */
bool cu_kernel_name_ok(const char *name, const char **why);
void cu_names_free(cu_kernel *kc);

/* ---- types.c ---------------------------------------------------------------- */

/* The C type that holds a value of `t` in a register: bool, int,
 * long long, float, double, __half, __nv_bfloat16. */
const char *cu_reg_type(fu_dtype t);
/* The C type of an element of `t` in memory (bool: unsigned char). */
const char *cu_mem_type(fu_dtype t);
/* f16 and bf16 compute in f32; the rest in themselves. */
fu_dtype cu_compute_dtype(fu_dtype t);
/* Marks the headers a use of `t` needs. */
void cu_use_dtype(cu_module *m, fu_dtype t);
/* Appends `expr` (a value of `from`) converted to `to`, with the LLVM
 * path's semantics.  `atomic`: expr is an identifier or a call, so it
 * needs no parentheses as an operand.  Returns whether the text appended
 * needs none either (false: a comparison, to bool). */
bool cu_convert(cu_module *m, fu_strbuf *sb, const char *expr, bool atomic, fu_dtype from, fu_dtype to);
/* Appends the literal `v` of dtype `t` (an expression of cu_reg_type(t)). */
void cu_literal(cu_module *m, fu_strbuf *sb, fu_dtype t, fu_scalar_value v);
/* Appends a float literal of compute dtype `t` (f32 or f64), e.g. 1.0f. */
void cu_float_literal(fu_strbuf *sb, fu_dtype t, double v);

/* ---- math.c ----------------------------------------------------------------- */

/* Appends the expression of MATH instruction `in` (its result's dtype) to
 * kc->expr; false (error reported) when the op and dtype have no CUDA C
 * form here. */
bool cu_math(cu_kernel *kc, const fu_kinst *in);

/* ---- emit.c ----------------------------------------------------------------- */

/* The CUDA C of `n` kernels as one translation unit, for `arch` (named in
 * its header).  Verifies each kernel first. */
fu_status cu_emit_module(cu_module *m, const fu_kernel *const *ks, uint32_t n, const char *arch, fu_strbuf *out);

/* ---- nvrtc.c ---------------------------------------------------------------- */

typedef struct cu_nvrtc cu_nvrtc;

/* Loads libnvrtc (FUSER_LIBNVRTC, the toolkit's, or the loader's search
 * path); errors say what is missing. */
fu_status cu_nvrtc_open(fu_allocator alloc, fu_diag_engine *diag, cu_nvrtc **out);
void cu_nvrtc_close(cu_nvrtc *nv);
/* Compiles CUDA C `src` (named `name` in messages) to PTX for `arch`
 * (sm_NN or sm_NNa), appending it to `out`; NVRTC's log goes to `diag`
 * on failure.  `needs_headers`: the source includes cuda_fp16.h or
 * cuda_bf16.h, which NVRTC finds only with the toolkit's include folder. */
fu_status cu_nvrtc_compile(cu_nvrtc *nv, const char *src, const char *name, const char *arch, bool needs_headers,
                           fu_strbuf *out);
/* The NVRTC version as "13.0" (empty until opened). */
const char *cu_nvrtc_version(const cu_nvrtc *nv);

#endif
