/* fuser: helpers shared by the interpreter's files (private to lib/interp). */
#ifndef FUSER_LIB_INTERP_INTERNAL_H
#define FUSER_LIB_INTERP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fuser/interp.h"

/* The kind of value a computation runs on: double math for f64, float math
 * for f32/f16/bf16, int64 for ints and bools (bools as 0 / 1). */
typedef enum fu_ck { FU_CK_F64, FU_CK_F32, FU_CK_I64 } fu_ck;

fu_ck fu_interp_ck(fu_dtype dt);

/* Elements processed per row chunk: buffers of this many 8-byte values. */
#define FU_INTERP_CHUNK 256

/* A chunk buffer of any compute kind (the union keeps accesses typed). */
typedef union fu_chunk {
  double f64[FU_INTERP_CHUNK];
  float f32[FU_INTERP_CHUNK];
  int64_t i64[FU_INTERP_CHUNK];
} fu_chunk;

/* Convert n elements of dtype `dt` at `p` (stride in elements) into `buf`
 * of kind k, and back.  Conversions are a cast's: float to int truncates
 * and saturates (NaN gives 0), to bool is != 0, to f16/bf16 rounds to
 * nearest even. */
void fu_interp_load(fu_dtype dt, const void *p, int64_t stride, size_t n, fu_ck k, void *buf);
void fu_interp_store(fu_dtype dt, void *p, int64_t stride, size_t n, fu_ck k, const void *buf);

/* A float's bit pattern and back. */
static inline uint32_t fu_interp_f32_bits(float f) { return ((union { float f; uint32_t u; }){.f = f}).u; }
static inline float fu_interp_f32_of_bits(uint32_t u) { return ((union { uint32_t u; float f; }){.u = u}).f; }

/* Saturating, truncating float-to-int conversions (NaN gives 0). */
int64_t fu_interp_f2i64(double d);
int32_t fu_interp_f2i32(double d);
/* Double to float with defined overflow (to an infinity) and NaN kept. */
float fu_interp_d2f(double d);

/* `case FU_OP_<id>:` for the kinds of every class that is not pointwise,
 * nothing for the pointwise ones: a kernel switch over op kinds lists them
 * with
 *   #define FU_OP(id, name, cls, nops, flags, math) FU_INTERP_CASE_IF_NOT_PW_##cls(id)
 *   #include "fuser/ops.def"
 * instead of a `default:`, so the compiler names the switch when a pointwise
 * op is added (-Wswitch) and when a class is added (no macro for it here). */
#define FU_INTERP_CASE_IF_NOT_PW_UNARY(id)
#define FU_INTERP_CASE_IF_NOT_PW_BINARY(id)
#define FU_INTERP_CASE_IF_NOT_PW_TERNARY(id)
#define FU_INTERP_CASE_IF_NOT_PW_CAST(id)
#define FU_INTERP_CASE_IF_NOT_PW_META(id) case FU_OP_##id:
#define FU_INTERP_CASE_IF_NOT_PW_REDUCE(id) case FU_OP_##id:
#define FU_INTERP_CASE_IF_NOT_PW_VARIANCE(id) case FU_OP_##id:
#define FU_INTERP_CASE_IF_NOT_PW_BROADCAST_IN_DIM(id) case FU_OP_##id:
#define FU_INTERP_CASE_IF_NOT_PW_BROADCAST(id) case FU_OP_##id:
#define FU_INTERP_CASE_IF_NOT_PW_EXPAND(id) case FU_OP_##id:
#define FU_INTERP_CASE_IF_NOT_PW_RESHAPE(id) case FU_OP_##id:
#define FU_INTERP_CASE_IF_NOT_PW_PERMUTE(id) case FU_OP_##id:
#define FU_INTERP_CASE_IF_NOT_PW_SQUEEZE(id) case FU_OP_##id:
#define FU_INTERP_CASE_IF_NOT_PW_SLICE(id) case FU_OP_##id:
#define FU_INTERP_CASE_IF_NOT_PW_CAT(id) case FU_OP_##id:
#define FU_INTERP_CASE_IF_NOT_PW_PAD(id) case FU_OP_##id:
#define FU_INTERP_CASE_IF_NOT_PW_FULL(id) case FU_OP_##id:
#define FU_INTERP_CASE_IF_NOT_PW_IOTA(id) case FU_OP_##id:
#define FU_INTERP_CASE_IF_NOT_PW_MATMUL(id) case FU_OP_##id:
#define FU_INTERP_CASE_IF_NOT_PW_INDEX(id) case FU_OP_##id:
#define FU_INTERP_CASE_IF_NOT_PW_STRIDE_ORDER(id) case FU_OP_##id:
#define FU_INTERP_CASE_IF_NOT_PW_RNG(id) case FU_OP_##id:
#define FU_INTERP_CASE_IF_NOT_PW_SCAN(id) case FU_OP_##id:
#define FU_INTERP_CASE_IF_NOT_PW_PARTIAL(id) case FU_OP_##id:

/* ---- threads (parallel.c) ------------------------------------------------ */

/* At most this many threads share one loop. */
#define FU_INTERP_MAX_THREADS 64

/* One part [lo, hi) of a split loop; `part` numbers it from 0. */
typedef void (*fu_interp_par_fn)(void *ctx, uint32_t part, int64_t lo, int64_t hi);

/* How many parts fu_interp_parallel cuts [0, n) into: at most `threads`
 * (capped at FU_INTERP_MAX_THREADS), each of `grain` or more elements, 1
 * when that leaves no room for two. */
uint32_t fu_interp_par_parts(uint32_t threads, int64_t n, int64_t grain);
/* Run fn over [0, n) cut into fu_interp_par_parts contiguous parts of
 * near-equal size, on that many threads, and wait for all of them. */
void fu_interp_parallel(uint32_t threads, int64_t n, int64_t grain, fu_interp_par_fn fn, void *ctx);

/* Elements below which a loop is not worth a thread. */
#define FU_INTERP_GRAIN 32768

/* Outcome of a row kernel. */
typedef enum fu_pw_err {
  FU_PW_OK = 0,
  FU_PW_DIV_ZERO,    /* integer division or remainder by zero */
  FU_PW_UNSUPPORTED, /* op not defined for this compute kind */
} fu_pw_err;

/* Apply pointwise op `k` to n elements.  in[i] are buffers of kind `kind`
 * (for `where`, in[0] is the condition as int64 0/1); out is of kind
 * `kind`, or int64 0/1 for ops with a bool result (FU_OF_BOOL_RESULT).
 * `rdt` is the result dtype, which int kernels need: a bool result makes
 * `bitwise_not` a logical not, and `logical_right_shift` shifts at the
 * result's width (FU_DT_NONE: of no concern to the op).  Cast and set are
 * the identity. */
fu_pw_err fu_interp_pw_apply(fu_op_kind k, fu_ck kind, fu_dtype rdt, void *const *in, void *out, size_t n);

/* A pointwise loop: out (any strides) = op(ins), where every input has
 * out's rank and shape (broadcast dims with stride 0).  Inputs load as
 * in_kinds[i]; the op runs in `kind`; results of kind out_kind store to out's
 * dtype.  Returns the first kernel error. */
typedef struct fu_pw_loop {
  fu_op_kind op;
  fu_ck kind;
  fu_ck out_kind;
  fu_dtype rdt; /* the result dtype, for fu_interp_pw_apply */
  uint32_t n_in;
  const fu_host_tensor *in[3];
  fu_ck in_kinds[3];
  fu_host_tensor *out;
  uint32_t threads; /* 0 or 1: the calling thread alone */
} fu_pw_loop;

fu_pw_err fu_interp_pw_run(const fu_pw_loop *l);

/* The kinds of a pointwise loop for op `k` on `operands` with result dtype
 * `rdt` (everything but in[] and out): the one rule for the compute kind,
 * shared by the tensor path and the scalar evaluation. */
void fu_interp_pw_loop_init(fu_pw_loop *l, fu_op_kind k, fu_value *const *operands, uint32_t n, fu_dtype rdt);

/* An int or bool literal's value as int64 (bools as 0 / 1). */
int64_t fu_interp_literal_i64(const fu_value *v);

/* Reductions: `in` reduced over the dims with reduce[d] true into `out`
 * (contiguous, with in's kept dims in order; keepdim dims of extent 1
 * allowed).  For FU_OP_VAR and FU_OP_VAR_MEAN `out` is the variance and
 * `out2` (VAR_MEAN only) the mean.  FU_ERR_NOMEM or FU_ERR_RUNTIME
 * (max/min over zero elements) with *why set to a message. */
fu_status fu_interp_reduce(fu_op_kind k, const fu_host_tensor *in, const bool *reduce, int64_t correction,
                           fu_host_tensor *out, fu_host_tensor *out2, fu_allocator alloc, uint32_t threads,
                           const char **why);

/* Sum |x| (or x^2 with `squares`) of `in` over the dims with reduce[d]
 * into the zeroed f64 tensor `out` (laid out as fu_interp_reduce's). */
void fu_interp_reduce_magnitude(bool squares, const fu_host_tensor *in, const bool *reduce, fu_host_tensor *out,
                                uint32_t threads);

/* fu_host_tensor_copy_into on `threads` threads. */
fu_status fu_interp_copy_into(fu_host_tensor *dst, const fu_host_tensor *src, uint32_t threads);

/* Offsets of logical row-major index `i` of a tensor, in elements. */
int64_t fu_interp_flat_offset(const fu_host_tensor *t, int64_t i);

/* Text of a value for messages: '%T3', or a literal's value. */
typedef struct fu_interp_vstr {
  char s[96];
} fu_interp_vstr;

const char *fu_interp_value_str(fu_interp_vstr *b, const fu_value *v);


/* ---- interpreter state (interp.c, eval_shape.c) ---------------------------- */

/* A reference-counted allocation shared by a value and the views of it. */
typedef struct fu_interp_storage {
  void *base;
  size_t bytes;
  uint32_t refs;
} fu_interp_storage;

/* What the interpreter knows about one SSA value.  A tensor is a view
 * (view.owned is always NULL) of a storage, or of caller memory (st NULL:
 * an input), or of a scalar's `raw` bytes with stride 0.  A scalar keeps its
 * value in `raw`, in its dtype's storage format. */
typedef struct fu_interp_slot {
  bool ready;
  bool scalar;
  fu_host_tensor view;
  fu_interp_storage *st;
  uint32_t uses; /* remaining uses before the slot is released */
  _Alignas(8) unsigned char raw[8];
} fu_interp_slot;

typedef struct fu_interp {
  fu_fusion *f;
  fu_allocator alloc;
  fu_diag_engine *diag;
  size_t max_bytes;
  uint32_t threads; /* fu_interp_options.threads */
  fu_bindings b;
  fu_interp_slot *slots;
  uint32_t n_slots;
  const fu_arg *inputs;
  uint32_t n_inputs, next_input;
  fu_arg *outs;
  uint32_t n_outs, next_out;
  /* Error bounds (error_scale.c), only when asked: a second interpreter
   * whose slot of each value holds that value's bound, and in it, values
   * whose bound is lost (an "unscaled" result). */
  struct fu_interp *shadow;
  bool *lost;
} fu_interp;

/* Report an error at `op` (naming it and its first result); returns st. */
fu_status fu_interp_op_error(fu_interp *I, const fu_op *op, fu_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The slot of operand i, which must be ready; reports and returns NULL
 * otherwise. */
fu_interp_slot *fu_interp_operand(fu_interp *I, fu_op *op, uint32_t i);
/* Operand i as a tensor view (an error for a scalar). */
fu_status fu_interp_operand_tensor(fu_interp *I, fu_op *op, uint32_t i, fu_host_tensor *out);
/* A scalar operand's value as double / int64 (an error for a tensor). */
fu_status fu_interp_operand_scalar(fu_interp *I, fu_op *op, uint32_t i, double *f, int64_t *iv);
/* Resolve a result's stated shape; with `infer_numel` >= 0, one unbound
 * symbol is solved from the element count (reshape) and bound. */
fu_status fu_interp_result_shape(fu_interp *I, fu_op *op, uint32_t r, int64_t *shape, int64_t infer_numel);
/* Check a computed result shape against the stated type, binding symbols
 * that are still unbound. */
fu_status fu_interp_check_shape(fu_interp *I, fu_op *op, uint32_t r, int32_t rank, const int64_t *shape);
/* Give result r fresh contiguous storage of `shape` (or the slot's raw
 * bytes for a scalar result); *view receives the writable view. */
fu_status fu_interp_alloc_result(fu_interp *I, fu_op *op, uint32_t r, const int64_t *shape,
                                 fu_host_tensor **view);
/* The same without zeroing the memory (page-touching a large tensor twice
 * costs as much as a cheap op), for ops that write every element; with
 * `store` (NULL: shape), sizes are checked for `shape` but the tensor
 * gets `store` (fu_interp_shared_dims). */
fu_status fu_interp_alloc_result_dense(fu_interp *I, fu_op *op, uint32_t r, const int64_t *shape,
                                       fu_host_tensor **view, const int64_t *store);
/* The result shape of a pointwise op on operands a[0..n) (and, where
 * b[i].data is set, b[i]; b may be NULL) seen with `shape`: 1 in each dim
 * of extent > 1 that every one of them repeats (stride 0), shape[d]
 * elsewhere.  fu_interp_widen_shared_dims then turns a result computed
 * with that shape into a view of `shape`, stride 0 along those dims. */
void fu_interp_shared_dims(int32_t rank, const int64_t *shape, const fu_host_tensor *a, const fu_host_tensor *b,
                           uint32_t n, int64_t *cshape);
void fu_interp_widen_shared_dims(fu_host_tensor *t, const int64_t *shape);
/* Release result r's value again (a result that turned out to have none). */
void fu_interp_drop_result(fu_interp *I, fu_op *op, uint32_t r);
/* Make result r a view sharing operand `from`'s memory. */
void fu_interp_alias_result(fu_interp *I, fu_op *op, uint32_t r, const fu_interp_slot *from,
                            const fu_host_tensor *view);

/* Error bounds (error_scale.c): set up I->shadow; after op `op` ran in I,
 * its results' bounds; at the end, each output's bound into J's outs (an
 * f64 tensor, NaN where unscaled; FU_ARG_NONE when exact) and the shadow's
 * memory freed.  Slots of the shadow are released by interp.c's walk. */
fu_status fu_interp_bounds_start(fu_interp *I, fu_interp *J);
fu_status fu_interp_bounds_op(fu_interp *I, fu_op *op);
void fu_interp_bounds_finish(fu_interp *J);

/* The indexing ops (index.c): op on lookup x and index ix, errors reported
 * through I, the result allocated in R (I itself, or the error bounds'
 * shadow, which gathers the lookup's bounds by I's indices). */
fu_status fu_interp_index_into(fu_interp *I, fu_interp *R, fu_op *op, const fu_host_tensor *x,
                               const fu_host_tensor *ix);
fu_status fu_interp_eval_index(fu_interp *I, fu_op *op);

/* The shape and data-movement ops (eval_shape.c). */
fu_status fu_interp_eval_shape_op(fu_interp *I, fu_op *op);
/* matmul and linear (matmul.c).  fu_interp_matmul_compute writes op's
 * product of a and b (plus bias along N) into `out`, contiguous of the
 * result's shape, accumulating in f64; with `magnitude` it computes
 * |a| |b| instead (no bias), for the error bounds. */
fu_status fu_interp_eval_matmul(fu_interp *I, fu_op *op);
fu_status fu_interp_matmul_compute(const fu_op *op, const fu_host_tensor *a, const fu_host_tensor *b,
                                   const fu_host_tensor *bias, bool magnitude, fu_host_tensor *out,
                                   fu_allocator alloc, uint32_t threads);
/* uniform and normal (eval_rng.c). */
fu_status fu_interp_eval_rng(fu_interp *I, fu_op *op);
/* cumsum, cumprod, cummax, cummin (scan.c). */
fu_status fu_interp_eval_scan(fu_interp *I, fu_op *op);
fu_status fu_interp_eval_partial(fu_interp *I, fu_op *op);

#endif
