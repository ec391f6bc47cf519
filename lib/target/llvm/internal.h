/* fuser backend: state shared by the backend's files (not a public header). */
#ifndef FUSER_BACKEND_INTERNAL_H
#define FUSER_BACKEND_INTERNAL_H

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "fuser/backend.h"

enum { BK_MAX_TMS = 16 };

struct fu_backend {
  fu_allocator alloc;
  fu_diag_engine *diag;
  LLVMContextRef ctx;
  /* libdevice, opened lazily on first need and kept for the context's life:
   * a function's body is read from the bitcode the first time a kernel
   * calls it (or a function it calls), and stays; read only otherwise. */
  LLVMModuleRef libdevice;
  LLVMPassManagerRef libdevice_reader; /* empty function pass manager: materializes */
  bool libdevice_whole;                /* parse it all at once instead (the old way) */
  char *libdevice_path;                /* the file `libdevice` is (being) read from */
  /* With the build's libdevice subset (the functions fuser's math lowering
   * calls, extracted at build time) in libdevice_path: the whole libdevice,
   * read instead if a kernel ever needs a function the subset lacks. */
  char *libdevice_full_path;
  char *pipeline;
  char *default_sm;
  char *features;
  bool llvm_before_opt;
  bool no_fast_paths; /* fu_backend_options.no_fast_paths */
  bool tid_range;     /* fu_backend_options.tid_range */
  uint32_t max_self_unroll;
  struct {
    char sm[16];
    LLVMTargetMachineRef tm;
  } tms[BK_MAX_TMS];
  unsigned n_tms;
  bool llvm_error; /* set by the LLVM diagnostic handler */
  fu_backend_timing timing;
  double libdevice_cpu_ms; /* CPU time of the last libdevice load */
};

/* The codegen state of one module. */
typedef struct bk_module {
  fu_backend *be;
  LLVMContextRef C;
  LLVMModuleRef M;
  LLVMBuilderRef B;
  int sm; /* e.g. 90 for sm_90 and sm_90a: the __CUDA_ARCH reflect value / 10 */
  const char *arch; /* the target's name, "sm_90a", for messages */
  bool failed;
  LLVMTypeRef t_i1, t_i8, t_i16, t_i32, t_i64, t_f16, t_bf16, t_f32, t_f64, t_void, t_ptr0, t_ptr1, t_ptr3;
} bk_module;

/* The codegen state of one kernel. */
typedef struct bk_kernel {
  bk_module *mod;
  const fu_kernel *k;
  LLVMValueRef fn;
  LLVMValueRef *vals; /* by kval id: scalar value, or the pointer of a tensor/array/mutable */
  uint32_t n_vals;
  LLVMMetadataRef invariant_md; /* empty node for !invariant.load */
  unsigned invariant_kind;
  unsigned loop_kind;
} bk_kernel;

/* ---- context.c ---- */
double bk_now_ms(void);
double bk_cpu_ms(void); /* thread CPU time */
void bk_error(fu_backend *be, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
LLVMTargetMachineRef bk_target_machine(fu_backend *be, const char *sm);
/* "sm_90a" -> 90; 0 when not an sm name. */
int bk_sm_number(const char *sm);

/* ---- libdevice.c ---- */
fu_status bk_libdevice_load(fu_backend *be);
/* The function `name` of libdevice in m->M, copied with everything it
 * calls on first use; NULL (error reported) when unavailable. */
LLVMValueRef bk_libdevice_function(bk_module *m, const char *name);
/* Instructions a kernel may grow to by always-inlining its calls; past it the
 * callees that add the most are kept as called device functions. */
#define BK_INLINE_BUDGET 20000u
/* Applies BK_INLINE_BUDGET to every kernel of the module (before optimizing). */
fu_status bk_limit_inlining(bk_module *m);

/* ---- nvptx_fixes.c: optimized IR that NVPTX would lower wrongly ---- */
/* Rewrites `sitofp i1` (true is -1.0; LLVM 19's NVPTX gives +1.0) as a
 * select; run after the optimization pipeline, before code generation. */
fu_status bk_fix_nvptx_lowering(bk_module *m);

/* ---- widen_bf16.c: bf16 lanes widened from their 32-bit words ---- */
/* Rewrites `fpext bfloat` of a lane of a packed pair as a shift or a mask
 * of the pair's word; run after the optimization pipeline. */
fu_status bk_widen_bf16_pairs(bk_module *m);

/* ---- types.c: dtypes in registers and in memory, conversions ---- */
LLVMTypeRef bk_reg_type(bk_module *m, fu_dtype t); /* bool: i1 */
LLVMTypeRef bk_mem_type(bk_module *m, fu_dtype t); /* bool: i8 */
/* f16/bf16 compute in f32; others in themselves. */
fu_dtype bk_compute_dtype(fu_dtype t);
LLVMValueRef bk_convert(bk_module *m, LLVMValueRef v, fu_dtype from, fu_dtype to);
LLVMValueRef bk_to_bool(bk_module *m, LLVMValueRef v, fu_dtype from);
/* Declares (once) and calls an intrinsic; overloaded ones take their types. */
/* The enum attribute `name` (value `val`) on fn's return (0), function
 * (LLVMAttributeFunctionIndex) or parameter i (i + 1). */
void bk_add_enum_attr(bk_module *m, LLVMValueRef fn, unsigned idx, const char *name, uint64_t val);
LLVMValueRef bk_call_intrinsic(bk_module *m, const char *name, LLVMTypeRef *overload, unsigned n_overload,
                               LLVMValueRef *args, unsigned n_args);

/* ---- math.c ---- */
/* results = op(args) for a MATH instruction; NULL (error reported) when
 * the op/dtype combination is not supported. */
LLVMValueRef bk_math(bk_module *m, fu_op_kind op, fu_dtype result, const fu_dtype *arg_types,
                     LLVMValueRef *args, uint32_t n_args);

/* ---- fast_math.c ---- */
/* The f32 fast paths (--disable=fast_paths turns them off): rcp.approx,
 * and an exp of ex2.approx and a correction. */
LLVMValueRef bk_fast_rcp_f32(bk_module *m, LLVMValueRef v);
LLVMValueRef bk_fast_exp_f32(bk_module *m, LLVMValueRef x);
/* 2^x: one ex2.approx.ftz (f32, fast paths). */
LLVMValueRef bk_fast_exp2_f32(bk_module *m, LLVMValueRef x);

/* ---- rng.c ---- */
/* uniform or normal of a `result` element from (a, b, seed, offset, index),
 * a and b in f32 (f64 for an f64 result), the rest i64. */
LLVMValueRef bk_rng(bk_module *m, fu_op_kind op, fu_dtype result, LLVMValueRef *args);

/* ---- codegen.c ---- */
/* Adds kernel `k` (verified) to m->M as a ptx_kernel function. */
fu_status bk_emit_kernel(bk_module *m, const fu_kernel *k);

#endif
