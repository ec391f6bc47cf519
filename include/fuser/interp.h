/* fuser: the CPU reference interpreter, host tensors and example data.
 *
 * The interpreter evaluates a fusion op by op on the CPU.  It is the oracle
 * every GPU test compares against, so it favours being obviously right over
 * being fast; what speed it has (typed row loops, the element loops split
 * over fu_interp_options.threads, a tiled matmul) never changes a bit: each
 * output element is computed by the same operations in the same order
 * whatever the thread count.  Semantics follow PyTorch (and nvFuser where the two differ):
 *
 *  - Compute dtype: each pointwise op computes in f64 (double math) when its
 *    compute dtype is f64, in f32 (float math, e.g. expf) for f32, f16 and
 *    bf16 (upcast, compute, round to the storage type on store, as PyTorch's
 *    "opmath" does), and in i64 for ints and bools.  The compute dtype is the
 *    op's result dtype, except for comparisons, where it is the promoted
 *    operand dtype (scalars weak, as in the IR's promotion rule).
 *  - Float reductions (sum, prod, max, min, var, var_mean) accumulate in
 *    double whatever the storage dtype, then round once to the result dtype;
 *    a GPU kernel accumulating in f32 differs by rounding only.  Int and bool
 *    reductions accumulate in i64 (wrapping).  max/min propagate NaN; max/min
 *    over zero elements are an error (as in PyTorch); var with
 *    N - correction <= 0 gives inf or NaN.
 *  - Ints: `div` truncates toward zero (nvFuser); `remainder` has the sign of
 *    the divisor (Python), `fmod` the sign of the dividend (C); integer
 *    division or remainder by zero is an error; overflow wraps.  int ^ int
 *    `pow` is an integer power (negative exponents give 0, or +-1 for bases
 *    +-1).
 *  - `round` is round-half-to-even; `sign(NaN)` is 0 (PyTorch); `relu`,
 *    `maximum`, `minimum` and `clamp` propagate NaN; `silu` is x / (1 + e^-x).
 *  - Casts: float to int truncates toward zero and saturates to the target's
 *    range, NaN giving 0 (what the GPU's cvt.rzi does); int to narrower int
 *    wraps; anything to bool is `!= 0` (NaN is true).  f16 and bf16 round to
 *    nearest even, NaN stays NaN.
 *  - Views (permute, broadcast, expand, squeeze, slice, set, reshape of a
 *    row-major tensor) share their operand's memory; fusion outputs are
 *    always returned as fresh contiguous row-major tensors.
 *
 * Library code never prints: every failure is a status plus a diagnostic
 * located at the op (or input) that caused it. */
#ifndef FUSER_INTERP_H
#define FUSER_INTERP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fuser/alloc.h"
#include "fuser/diag.h"
#include "fuser/ir.h"
#include "fuser/status.h"

/* ---- f16 and bf16 ------------------------------------------------------- */

/* IEEE binary16 and bfloat16 are stored as their uint16_t bit patterns.
 * Conversions from double round to nearest, ties to even (a float argument
 * converts to double exactly, so this is also the float conversion); the
 * conversions to double are exact.  NaN stays NaN (sign and top payload bits
 * kept, quiet bit set). */
uint16_t fu_f16_from_double(double x);
double fu_f16_to_double(uint16_t h);
uint16_t fu_bf16_from_double(double x);
double fu_bf16_to_double(uint16_t h);

/* ---- host tensors --------------------------------------------------------- */

/* A strided view of host memory.  Element (i0, ..., ik) lives at
 * data + (sum_d i_d * strides[d]) * elem_size.  Strides are in elements and
 * must be >= 0; 0 repeats an element (broadcast / expanded dims), and any
 * permutation of dims is allowed.  f16 and bf16 elements are uint16_t bit
 * patterns, bool elements uint8_t 0 or 1.
 *
 * `owned` is the allocation this tensor frees (NULL for a borrowed view whose
 * memory belongs to someone else), `nbytes` its size. */
typedef struct fu_host_tensor {
  fu_dtype dtype;
  int32_t rank; /* 0..FU_MAX_RANK */
  int64_t shape[FU_MAX_RANK];
  int64_t strides[FU_MAX_RANK];
  void *data;
  void *owned;
  size_t nbytes;
  fu_allocator alloc;
} fu_host_tensor;

/* A contiguous row-major tensor with zeroed memory.  FU_ERR_INVALID_ARG for
 * a bad dtype, rank or negative extent; FU_ERR_NOMEM when the size overflows
 * or the allocator fails.  On failure *t is zeroed. */
fu_status fu_host_tensor_alloc(fu_host_tensor *t, fu_allocator alloc, fu_dtype dtype, int32_t rank,
                               const int64_t *shape);
/* The same with given strides (in elements, >= 0): the allocation spans
 * 1 + sum (shape[d] - 1) * strides[d] elements, zeroed. */
fu_status fu_host_tensor_alloc_strided(fu_host_tensor *t, fu_allocator alloc, fu_dtype dtype, int32_t rank,
                                       const int64_t *shape, const int64_t *strides);
/* Frees `owned` (if any) and zeroes *t.  Safe on a zeroed tensor. */
void fu_host_tensor_free(fu_host_tensor *t);

/* Number of elements (1 for rank 0); -1 on overflow. */
int64_t fu_host_tensor_numel(const fu_host_tensor *t);
/* Row-major contiguous, ignoring the strides of extent-1 dims. */
bool fu_host_tensor_is_contiguous(const fu_host_tensor *t);
/* Row-major strides for `shape`; false on overflow. */
bool fu_contiguous_strides(int32_t rank, const int64_t *shape, int64_t *strides);

/* Element access by multi-index (idx has rank entries, each in range) or by
 * flat row-major logical index (0 <= i < numel).  The double accessors
 * convert like a cast (to int: truncate and saturate; NaN gives 0); use the
 * i64 ones for integers beyond 2^53. */
void *fu_host_tensor_ptr(const fu_host_tensor *t, const int64_t *idx);
double fu_host_tensor_get(const fu_host_tensor *t, const int64_t *idx);
void fu_host_tensor_set(fu_host_tensor *t, const int64_t *idx, double v);
int64_t fu_host_tensor_get_i64(const fu_host_tensor *t, const int64_t *idx);
void fu_host_tensor_set_i64(fu_host_tensor *t, const int64_t *idx, int64_t v);
double fu_host_tensor_get_flat(const fu_host_tensor *t, int64_t i);
void fu_host_tensor_set_flat(fu_host_tensor *t, int64_t i, double v);
int64_t fu_host_tensor_get_flat_i64(const fu_host_tensor *t, int64_t i);

/* A fresh contiguous row-major copy of `src` (same dtype) into *dst. */
fu_status fu_host_tensor_copy_contiguous(const fu_host_tensor *src, fu_allocator alloc, fu_host_tensor *dst);
/* Copy `src` element by element into `dst` (same shape; dtypes may differ,
 * converting like a cast).  FU_ERR_INVALID_ARG on a shape mismatch. */
fu_status fu_host_tensor_copy_into(fu_host_tensor *dst, const fu_host_tensor *src);

/* Compare `got` with `want` element by element: a mismatch is
 * |got - want| > atol + rtol * |want|, or NaN against non-NaN, or infinities
 * that differ.  Shapes must be equal (FU_ERR_INVALID_ARG otherwise); dtypes
 * may differ. */
typedef struct fu_compare_result {
  int64_t n_mismatch;
  int64_t first_mismatch; /* flat row-major index, -1 when none */
  double max_abs_err;     /* over elements where both are finite */
  double max_rel_err;
} fu_compare_result;

fu_status fu_host_tensor_compare(const fu_host_tensor *got, const fu_host_tensor *want, double rtol, double atol,
                                 fu_compare_result *out);

/* ---- scalars --------------------------------------------------------------- */

/* Pointwise op `k` on the literal values `operands` (n of them) with result
 * dtype `result`, computed exactly as the interpreter computes it on tensors:
 * the same compute kind, kernel and conversions.  The constant folder calls
 * this, so each op's semantics are written once.  FU_ERR_RUNTIME for an
 * integer division by zero; FU_ERR_UNSUPPORTED for a non-literal operand, an
 * op that is not pointwise, or one not defined on these dtypes. */
fu_status fu_interp_eval_scalar(fu_op_kind k, fu_value *const *operands, uint32_t n, fu_dtype result,
                                fu_scalar_value *out);

/* The same on `lanes` integer or bool elements at once (at most
 * FU_INTERP_MAX_LANES): operand i holds in[i][0..lanes) as int64 values of
 * dtype dts[i], and out[0..lanes) gets the results, of int or bool dtype
 * `result`, as int64 (bools 0 / 1).  FU_ERR_RUNTIME for an integer division
 * by zero; FU_ERR_UNSUPPORTED for a float dtype, an op that is not
 * pointwise, or too many lanes. */
#define FU_INTERP_MAX_LANES 1024
fu_status fu_interp_eval_int_lanes(fu_op_kind k, const fu_dtype *dts, const int64_t *const *in, uint32_t n,
                                   fu_dtype result, uint32_t lanes, int64_t *out);

/* ---- arguments ------------------------------------------------------------ */

typedef enum fu_arg_kind { FU_ARG_NONE = 0, FU_ARG_TENSOR, FU_ARG_SCALAR } fu_arg_kind;

/* An input or output of a fusion: a tensor, or a scalar with its dtype (its
 * value in `scalar.f` for float dtypes, `.i` for ints, `.b` for bool). */
typedef struct fu_arg {
  fu_arg_kind kind;
  fu_host_tensor tensor;
  fu_dtype scalar_dtype;
  fu_scalar_value scalar;
} fu_arg;

/* The error a kernel's index error flag (`workspace[1] zeroed error`)
 * reports: code is the id + 1 of the indexing op of segment `seg` that met
 * an index out of range; the error is located at that op.  Returns
 * FU_ERR_RUNTIME. */
fu_status fu_index_error_report(fu_diag_engine *diag, const fu_op *seg, const char *kernel, int32_t code);

fu_arg fu_arg_scalar_f(fu_dtype dtype, double v);
fu_arg fu_arg_scalar_i(fu_dtype dtype, int64_t v);
fu_arg fu_arg_scalar_b(bool v);
/* Takes over `t` (its ownership moves into the arg). */
fu_arg fu_arg_tensor(fu_host_tensor t);
/* A scalar arg's value as a double / an int64 (converting like a cast). */
double fu_arg_scalar_as_double(const fu_arg *a);
void fu_arg_free(fu_arg *a);
/* Frees each arg and the array itself (allocated with `alloc`, n entries). */
void fu_args_free(fu_arg *args, uint32_t n, fu_allocator alloc);

/* ---- symbol bindings ------------------------------------------------------- */

/* Concrete sizes of the symbolic extents of a fusion, bound from its inputs. */
typedef struct fu_sym_binding {
  const char *sym;
  int64_t value;
  const fu_value *from; /* the input that bound it (NULL when set directly) */
  int32_t dim;
} fu_sym_binding;

typedef struct fu_bindings {
  fu_sym_binding *v;
  uint32_t n, cap;
  fu_allocator alloc;
} fu_bindings;

void fu_bindings_init(fu_bindings *b, fu_allocator alloc);
void fu_bindings_free(fu_bindings *b);
/* Symbols compare by name (strcmp), so bindings work across modules. */
bool fu_bindings_lookup(const fu_bindings *b, const char *sym, int64_t *value);
const fu_sym_binding *fu_bindings_find(const fu_bindings *b, const char *sym);
/* Adds a binding (the caller checks it is new).  FU_ERR_NOMEM on failure. */
fu_status fu_bindings_add(fu_bindings *b, const char *sym, int64_t value, const fu_value *from, int32_t dim);

/* Match the fusion's INPUT ops, in order, with `inputs`: the count, tensor or
 * scalar, rank and dtype must agree, constant extents must equal the given
 * sizes, and each symbol must get one size everywhere (else an error naming
 * the symbol, both sizes and both inputs).  Adds the symbols to *b, which the
 * caller has initialised (it may hold earlier bindings, which are checked). */
fu_status fu_interp_bind_inputs(fu_fusion *f, const fu_arg *inputs, uint32_t n_inputs, fu_bindings *b,
                                fu_diag_engine *diag);

/* The concrete shape of tensor type `t` under `b` into shape[0..rank).
 * Reports at `loc`, naming `what` (e.g. "'%T3'"), an unbound symbol. */
fu_status fu_interp_resolve_shape(const fu_type *t, const fu_bindings *b, int64_t *shape, fu_loc loc,
                                  const char *what, fu_diag_engine *diag);

/* ---- running a fusion ------------------------------------------------------ */

typedef struct fu_interp_options {
  /* Refuse any single tensor larger than this many bytes (0: no limit other
   * than what the address space allows). */
  size_t max_tensor_bytes;
  /* Threads for the element loops (0 or 1: the calling thread alone).
   * Results are the same bit for bit for every count: each thread computes
   * whole output elements, a reduction's terms are folded in the same order
   * whoever folds them. */
  uint32_t threads;
} fu_interp_options;

/* Evaluate every op of `f` in order (descending into segment bodies; ops
 * outside segments run too) on `inputs` (bound as fu_interp_bind_inputs
 * does).  On success *outputs is an array of *n_outputs args, one per
 * operand of the fusion's OUTPUT ops in order, each a fresh contiguous
 * tensor or a scalar, allocated with `alloc`; free it with fu_args_free.  On
 * failure *outputs is NULL, *n_outputs 0, and a diagnostic says why.  `opts`
 * may be NULL. */
fu_status fu_interp_run(fu_fusion *f, const fu_arg *inputs, uint32_t n_inputs, const fu_interp_options *opts,
                        fu_allocator alloc, fu_diag_engine *diag, fu_arg **outputs, uint32_t *n_outputs);

/* fu_interp_run, and with `bounds` non-NULL also each output's error bound
 * (lib/interp/error_scale.c): *bounds gets one arg per output, FU_ARG_NONE
 * where no reduction is upstream (the result is compared by dtype
 * tolerance alone), else an f64 tensor of the output's shape: per element,
 * how far a correct kernel, which accumulates in its own order and
 * precision, may be from this result because of the reductions upstream
 * (NaN where no bound could be carried: "unscaled").  Free it with
 * fu_args_free (n_outputs entries). */
fu_status fu_interp_run_bounded(fu_fusion *f, const fu_arg *inputs, uint32_t n_inputs, const fu_interp_options *opts,
                                fu_allocator alloc, fu_diag_engine *diag, fu_arg **outputs, fu_arg **bounds,
                                uint32_t *n_outputs);

/* ---- reproducible random numbers ---------------------------------------- */

/* xoshiro256** seeded through splitmix64, so every platform draws the same
 * stream from the same seed.  Uniform doubles take the top 53 bits
 * (x >> 11) * 2^-53; normals use Box-Muller on pairs
 * (u1 = 1 - uniform, u2 = uniform: r = sqrt(-2 ln u1), r cos(2 pi u2) then
 * r sin(2 pi u2)). */
typedef struct fu_rng {
  uint64_t s[4];
  bool has_spare;
  double spare;
} fu_rng;

void fu_rng_seed(fu_rng *r, uint64_t seed);
uint64_t fu_rng_next(fu_rng *r);
double fu_rng_uniform(fu_rng *r);                   /* [0, 1) */
double fu_rng_normal(fu_rng *r);                    /* N(0, 1) */
int64_t fu_rng_int(fu_rng *r, int64_t low, int64_t high); /* [low, high), high > low */

/* ---- example inputs ---------------------------------------------------------- */

typedef enum fu_input_source {
  FU_INPUT_DEFAULT = 0, /* the input's example attributes, else random */
  FU_INPUT_RANDOM,
  FU_INPUT_ZEROS,
  FU_INPUT_ONES,
  FU_INPUT_NPY,
} fu_input_source;

/* `--input NAME=...`: NAME is the input value's name, with or without '%'. */
typedef struct fu_input_override {
  const char *name;
  fu_input_source source;
  const char *npy_path; /* FU_INPUT_NPY; relative to the working directory */
} fu_input_override;

typedef struct fu_input_options {
  const char *base_dir; /* the .fir file's directory, for `npy="..."` (NULL: ".") */
  const char *data_dir; /* another folder `npy="..."` may read from (NULL: none) */
  bool allow_any_path;  /* `npy="..."` may name any file (else: base_dir or data_dir and below) */
  const fu_input_override *overrides;
  uint32_t n_overrides;
  uint64_t seed;          /* for inputs made at random without their own seed */
  bool random;            /* the user asked for random inputs: unbound symbols get default_extent */
  int64_t default_extent; /* 0: FU_DEFAULT_EXTENT (fuser/example_sizes.h) */
  uint32_t threads;       /* for making random data (0 or 1: one); the data do not depend on it */
} fu_input_options;

/* Make one arg per INPUT op of `f`, in order, from (by priority) an
 * override, the input's example attributes (example=randn|rand|zeros|ones|
 * randint|value|npy, seed, example_shape, example_strides, low, high), or
 * random data.  Sizes come from example_shape or a .npy file's shape; the
 * remaining symbols take the sizes bound by other inputs, and otherwise
 * `default_extent` when opts->random is set, else an error naming the
 * symbol.  Strides come from example_strides, else the input's layout
 * (strides, or stride_order and contiguity, where a non-contiguous dim gets
 * twice its packed stride and a broadcast dim stride 0), else row-major;
 * unused gaps of float tensors hold NaN.
 *
 * Data are made in logical row-major order, so layout does not change
 * values.  Input number `pos` (0-based) draws from the stream
 * fu_rng_seed(seed ^ ((pos + 1) * 0x9E3779B97F4A7C15)), so inputs with the
 * same seed still differ.  randn is N(0,1) for floats and uniform in [-8, 8]
 * for ints; rand is uniform [0,1) for floats and [0, 10) for ints; randint
 * is uniform in [low, high) (low < high, else an error) as floats or ints;
 * bools are true with probability 1/2.  An input with no example attribute
 * and no override is randn with opts->seed.  On success free *inputs with
 * fu_args_free. */
fu_status fu_interp_make_inputs(fu_fusion *f, const fu_input_options *opts, fu_allocator alloc,
                                fu_diag_engine *diag, fu_arg **inputs, uint32_t *n_inputs);

/* The INPUT ops of `f` in order, into out[0..cap); returns their count. */
uint32_t fu_interp_inputs_of(fu_fusion *f, fu_op **out, uint32_t cap);

#endif
