/* fuser: the Fusion IR.
 *
 * A module holds fusions; a fusion holds a block of ops; an op consumes
 * values and defines values.  Values are SSA: tensors (dtype + logical shape
 * whose extents are constants or named symbols) or scalars (rank -1).
 * Literal constants used as operands are scalar values with no defining op.
 *
 * All IR objects are allocated in the module's arena and freed with it.
 * Op properties live in ops.def; query them with fu_op_info(). */
#ifndef FUSER_IR_H
#define FUSER_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fuser/alloc.h"
#include "fuser/diag.h"
#include "fuser/status.h"

/* ---- dtypes ---------------------------------------------------------- */

#define FU_DTYPES(X)    \
  X(F64, "f64", 8)      \
  X(F32, "f32", 4)      \
  X(F16, "f16", 2)      \
  X(BF16, "bf16", 2)    \
  X(I64, "i64", 8)      \
  X(I32, "i32", 4)      \
  X(BOOL, "bool", 1)

typedef enum fu_dtype {
  FU_DT_NONE = 0,
#define X(id, name, size) FU_DT_##id,
  FU_DTYPES(X)
#undef X
  FU_DT_COUNT
} fu_dtype;

const char *fu_dtype_name(fu_dtype t);
/* FU_DT_NONE when `name` (of length len) is not a dtype. */
fu_dtype fu_dtype_from_name(const char *name, size_t len);
size_t fu_dtype_size(fu_dtype t);
bool fu_dtype_is_float(fu_dtype t);    /* f64 f32 f16 bf16 */
bool fu_dtype_is_int(fu_dtype t);      /* i64 i32 */
bool fu_dtype_is_bool(fu_dtype t);
/* Type promotion between two tensors (or two scalars), as PyTorch does it:
 * bool < int < float categories, wider wins within a category, and
 * f16 with bf16 gives f32. */
fu_dtype fu_dtype_promote(fu_dtype a, fu_dtype b);

typedef struct fu_value fu_value;
/* The dtype a pointwise op over `vals` computes in, with nvFuser's and
 * PyTorch's weak-scalar rule: tensors promote among themselves, scalars
 * (a float scalar counting as f32) only raise the category; scalar-only
 * operand lists promote plainly.  One rule for inference, the interpreter
 * and lowering (lib/ir/promote.c). */
fu_dtype fu_dtype_common(fu_value *const *vals, uint32_t n);

/* ---- shapes ---------------------------------------------------------- */

/* A logical extent: a constant (sym == NULL) or a named symbol bound at run
 * time from the inputs' shapes. */
typedef struct fu_extent {
  int64_t value; /* valid when sym == NULL */
  const char *sym;
} fu_extent;

static inline bool fu_extent_is_const(fu_extent e) { return e.sym == NULL; }
/* A constant extent of 1: broadcasts against any extent. */
static inline bool fu_extent_is_one(fu_extent e) { return e.sym == NULL && e.value == 1; }
bool fu_extent_equal(fu_extent a, fu_extent b);

#define FU_SCALAR_RANK (-1)
#define FU_MAX_RANK 16

typedef struct fu_type {
  fu_dtype dtype;
  int32_t rank; /* FU_SCALAR_RANK for scalars */
  fu_extent *dims;
} fu_type;

static inline bool fu_type_is_scalar(const fu_type *t) { return t->rank == FU_SCALAR_RANK; }
static inline bool fu_type_is_tensor(const fu_type *t) { return t->rank >= 0; }
bool fu_type_equal(const fu_type *a, const fu_type *b);
/* The same rank and extents, whatever the dtypes (symbols equal by name). */
bool fu_type_same_shape(const fu_type *a, const fu_type *b);
/* Number of elements when every extent is constant; -1 otherwise or on
 * overflow. */
int64_t fu_type_numel(const fu_type *t);

/* ---- values ---------------------------------------------------------- */

typedef struct fu_op fu_op;
typedef struct fu_block fu_block;
typedef struct fu_fusion fu_fusion;
typedef struct fu_module fu_module;

typedef union fu_scalar_value {
  double f;
  int64_t i;
  bool b;
} fu_scalar_value;

struct fu_value {
  const char *name; /* without the '%'; NULL for literals */
  fu_type type;
  fu_op *def;          /* defining op; NULL for literals */
  uint32_t result_index;
  uint32_t id;         /* dense per fusion, in creation order */
  bool is_literal;
  bool literal_typed;  /* printed as dtype(value), else bare */
  fu_scalar_value literal; /* f for float dtypes, i for ints, b for bool */
  fu_loc loc;
};

/* ---- ops ------------------------------------------------------------- */

typedef enum fu_op_kind {
#define FU_OP(id, name, cls, nops, flags, math) FU_OP_##id,
#include "fuser/ops.def"
  FU_OP_COUNT
} fu_op_kind;

typedef enum fu_op_class {
  FU_OC_META,
  FU_OC_UNARY,
  FU_OC_BINARY,
  FU_OC_TERNARY,
  FU_OC_CAST,
  FU_OC_REDUCE,
  FU_OC_VARIANCE,
  FU_OC_BROADCAST_IN_DIM,
  FU_OC_BROADCAST,
  FU_OC_EXPAND,
  FU_OC_RESHAPE,
  FU_OC_PERMUTE,
  FU_OC_SQUEEZE,
  FU_OC_SLICE,
  FU_OC_CAT,
  FU_OC_PAD,
  FU_OC_FULL,
  FU_OC_IOTA,
  FU_OC_MATMUL, /* matmul, linear: no attributes, result type inferred */
  FU_OC_INDEX,
  FU_OC_STRIDE_ORDER,
  FU_OC_RNG,
  FU_OC_SCAN, /* cumsum, cumprod, cummax, cummin: {dim} */
  FU_OC_PARTIAL, /* partial_sum: {dim, parts} */
} fu_op_class;

enum {
  FU_OF_POINTWISE = 1u << 0,    /* elementwise over broadcast operands */
  FU_OF_FLOAT_RESULT = 1u << 1, /* int/bool inputs promote to float */
  FU_OF_BOOL_RESULT = 1u << 2,  /* result is bool */
  FU_OF_INT_ONLY = 1u << 3,     /* operands must be int or bool */
  FU_OF_COMMUTATIVE = 1u << 4,
  FU_OF_VIEW = 1u << 5,         /* may be metadata-only (bookend candidate) */
  FU_OF_RESIZE = 1u << 6,       /* slice, cat, pad */
  FU_OF_REDUCTION = 1u << 7,
  FU_OF_NO_CSE = 1u << 8,       /* structural, never merged or folded */
  FU_OF_MATMUL = 1u << 9,       /* a matrix product: a matmul segment of its own (cuBLASLt) */
  FU_OF_SCAN = 1u << 10,        /* an inclusive scan along one dim: a scan segment of its own */
  FU_OF_APPROX = 1u << 11,      /* a float result within a few ulps, not correctly rounded: the
                                   kernels' math library (libdevice, CUDA's) and the interpreter's
                                   (libm) may differ in the last bits (fu_interp_bounds_op) */
};

typedef struct fu_op_info {
  const char *name;
  fu_op_class cls;
  int num_operands; /* -1: variadic */
  unsigned flags;
  const char *math; /* ops.def's MATH column as a string, NULL for `none` */
} fu_op_info;

/* A compile-time test on ops.def's MATH column, so an includer of ops.def
 * can emit code for the rows that name a function and nothing for the
 * others: FU_MATH_SELECT(m, A, B) is the macro name A when m is a function
 * name, B when m is `none` (then call it: FU_MATH_SELECT(m, A, B)(args)). */
#define FU_MATH_PROBE_none ~, 0
#define FU_MATH_SECOND_(a, b, ...) b
#define FU_MATH_SECOND(...) FU_MATH_SECOND_(__VA_ARGS__)
#define FU_MATH_HAS(m) FU_MATH_SECOND(FU_MATH_PROBE_##m, 1, ~)
#define FU_MATH_SELECT_0(a, b) b
#define FU_MATH_SELECT_1(a, b) a
#define FU_MATH_SELECT_(f, a, b) FU_MATH_SELECT_##f(a, b)
#define FU_MATH_SELECT__(f, a, b) FU_MATH_SELECT_(f, a, b)
#define FU_MATH_SELECT(m, a, b) FU_MATH_SELECT__(FU_MATH_HAS(m), a, b)
#define FU_MATH_NOTHING(...)

const fu_op_info *fu_op_info_of(fu_op_kind k);
/* FU_OP_COUNT when unknown. */
fu_op_kind fu_op_kind_from_name(const char *name, size_t len);
static inline bool fu_op_has(fu_op_kind k, unsigned flag) { return (fu_op_info_of(k)->flags & flag) != 0; }
/* May k be a kernel-IR math instruction?  The pointwise ops, and uniform
 * and normal with the element's linear index as a fifth operand. */
static inline bool fu_op_is_kir_math(fu_op_kind k) {
  return fu_op_has(k, FU_OF_POINTWISE) || fu_op_info_of(k)->cls == FU_OC_RNG;
}
/* Operands of k as a kernel-IR math instruction (-1: variadic). */
static inline int fu_op_kir_operands(fu_op_kind k) {
  return fu_op_info_of(k)->cls == FU_OC_RNG ? 5 : fu_op_info_of(k)->num_operands;
}

/* What a pointwise op computes with a bool result from bool operands, as
 * PyTorch defines it on bool tensors (one table for every backend): the
 * first operand (abs, relu, floor, ...), its negation (bitwise_not), or
 * (add, maximum, gcd), and (mul, minimum), xor (sub), clamp's
 * (x | lo) & hi, false (frac), or x & !y (a right shift of the 0/1 ints
 * the interpreter computes bools with; a left shift is the identity).
 * FU_BOOL_NONE: the op has no bool form. */
typedef enum fu_bool_form {
  FU_BOOL_NONE, FU_BOOL_IDENTITY, FU_BOOL_NOT, FU_BOOL_OR, FU_BOOL_AND, FU_BOOL_XOR, FU_BOOL_CLAMP,
  FU_BOOL_FALSE, FU_BOOL_AND_NOT,
} fu_bool_form;
fu_bool_form fu_op_bool_form(fu_op_kind k);

/* Layout of a tensor input.  Either explicit strides (constant), or a
 * stride order plus contiguity (nvFuser's define_tensor notions), or
 * nothing (contiguous row-major). */
typedef enum fu_contig { FU_CONTIG_NONE = -1, FU_CONTIG_FALSE = 0, FU_CONTIG_TRUE = 1 } fu_contig;

typedef struct fu_layout {
  int64_t *strides;      /* rank entries, or NULL */
  int32_t *stride_order; /* rank entries (nvFuser: rank-1 = outermost), or NULL */
  int8_t *contiguity;    /* rank entries of fu_contig, or NULL */
} fu_layout;

/* How an input's example data is made, so a .fir file is a complete repro. */
typedef enum fu_init_kind {
  FU_INIT_NONE = 0, /* no example data */
  FU_INIT_RANDN,    /* normal(0,1) floats / small ints, from `seed` */
  FU_INIT_RAND,     /* uniform [0,1) */
  FU_INIT_ZEROS,
  FU_INIT_ONES,
  FU_INIT_NPY,      /* from `npy_path` */
  FU_INIT_VALUE,    /* scalar inputs: `value` */
  FU_INIT_RANDINT,  /* uniform integers in [low, high) */
} fu_init_kind;

typedef struct fu_example {
  fu_init_kind init;
  int32_t rank;     /* -1 when shape not given (use the declared type) */
  int64_t *shape;   /* concrete sizes binding the symbolic extents */
  int64_t *strides; /* concrete strides, or NULL for the layout's */
  uint64_t seed;
  const char *npy_path;
  fu_scalar_value value; /* FU_INIT_VALUE */
  int64_t low, high;     /* FU_INIT_RANDINT */
  /* randn and randint: a drawn 0 becomes 1 (floats: the dtype's smallest
   * normal), as torch.testing.make_tensor(exclude_zero=True) does, so a
   * divisor never divides by zero; printed `nonzero=true` */
  bool nonzero;
} fu_example;

/* ---- scheduler kinds (kinds.def) -------------------------------------- */

/* The kind of kernel a segment becomes, one per row of kinds.def.
 * FU_SK_NONE (printed "none") is a segment built without a kind. */
typedef enum fu_sched_kind {
  FU_SK_NONE = 0,
#define FU_SCHED_KIND(id, name, accept, schedule, lower) FU_SK_##id,
#include "fuser/kinds.def"
  FU_SK_COUNT
} fu_sched_kind;

/* The kind's name as written in the IR ("pointwise"; "none"; "?" when k is
 * out of range). */
const char *fu_sched_kind_name(fu_sched_kind k);
/* The kind named name[0..len) (FU_SK_NONE for "none"); false if no kind
 * has that name. */
bool fu_sched_kind_from_name(const char *name, size_t len, fu_sched_kind *out);
/* The valid names, comma separated, for error messages ("pointwise,
 * transpose, ..."). */
const char *fu_sched_kind_names(void);

/* One segment: a region of ops compiled into one kernel by one scheduler. */
typedef struct fu_segment_info {
  const char *name;   /* without '@' */
  fu_sched_kind kind; /* the scheduler kind that compiles it */
  fu_value **outputs;    /* values defined inside, used outside */
  uint32_t n_outputs;
  fu_block *body;
  struct fu_schedule *schedule; /* written by `schedule`, NULL before */
  struct fu_gemm *gemm;         /* matmul segments: the plan `schedule` writes (fuser/gemm.h) */
  struct fu_kernel *kernel;     /* written by `lower`, NULL before */
} fu_segment_info;

typedef struct fu_int_list {
  int64_t *v;
  uint32_t n;
} fu_int_list;

struct fu_op {
  fu_op_kind kind;
  fu_loc loc;
  uint32_t id; /* dense per fusion, in creation order */
  fu_value **operands;
  uint32_t n_operands;
  fu_value **results;
  uint32_t n_results;
  fu_op *prev, *next;
  fu_block *parent;
  /* A host-side alias: a metadata-only op (FU_OF_VIEW) that the runtime
   * executes as a shape/stride reinterpretation, with no kernel and no copy.
   * Set by strip-bookend-views; printed as the attribute `host=true`; such
   * ops always stay outside segments. */
  bool host;
  /* Per-class payload; which member is live follows fu_op_info_of(kind)->cls
   * (and kind for the META ops); the attribute table (fu_op_attr_spec)
   * describes the members of each class. */
  union fu_op_payload {
    struct { fu_layout layout; fu_example example; } input;          /* INPUT */
    fu_segment_info segment;                                          /* SEGMENT */
    /* OUTPUT: `output %T6 {alias=%T1}` (one operand): after the fusion runs,
     * input %T1's memory holds the output's values (nvFuser's
     * add_output(out, alias_input)); NULL for a plain output */
    struct { fu_value *alias; } output;
    struct { fu_int_list axes; bool keepdim; fu_dtype dtype; } reduce; /* REDUCE; dtype NONE = default */
    struct { fu_int_list axes; bool keepdim; int64_t correction; } variance;
    struct { fu_int_list broadcast_dims; } broadcast_in_dim; /* operand dim i -> result dim v[i] */
    struct { bool *is_broadcast; uint32_t n; } broadcast;     /* per result dim */
    struct { fu_int_list dims; } permute;                     /* result dim i = operand dim v[i] */
    struct { fu_int_list dims; } squeeze;                     /* operand dims removed (extent 1) */
    struct { fu_int_list starts, ends, steps; } slice;
    struct { int64_t dim; } cat;
    struct { fu_int_list widths; } pad; /* pairs (before, after), innermost dim first as in nvFuser */
    struct { int64_t dim; } index;      /* INDEX: the lookup operand's dim the index selects along */
    struct { int64_t dim; } scan;       /* SCAN: the dim scanned along (0 <= dim < rank) */
    struct { int64_t dim, parts; } partial; /* PARTIAL: dim's extent becomes parts */
    struct { fu_int_list order; } stride_order; /* entry i: the rank of dim i's stride (0 innermost), as
                                                    an input's stride_order */
  } u;
};

/* ---- indexing ops (class INDEX) ----------------------------------------------
 *
 * With X the lookup operand, I the index operand and d the dim, result
 * element c is X at c with coordinate d replaced by an element of I:
 *   index_select X, I dim=d   I rank 1: out[c] = X[c | d := I[c[d]]]
 *   gather X, I dim=d         I of X's rank, no larger: out[c] = X[c | d := I[c]]
 *   take_along_axis X, I dim=d  as gather, X and I broadcast against each
 *                             other in the other dims
 *   embedding_fwd I, X        X rank 2: out[c, j] = X[I[c], j]
 * An index outside [0, X's extent d) is an error (docs/ir.md). */
static inline uint32_t fu_index_lookup_operand(const fu_op *op) { return op->kind == FU_OP_EMBEDDING_FWD ? 1 : 0; }
static inline uint32_t fu_index_index_operand(const fu_op *op) { return op->kind == FU_OP_EMBEDDING_FWD ? 0 : 1; }
static inline int64_t fu_index_dim(const fu_op *op) { return op->kind == FU_OP_EMBEDDING_FWD ? 0 : op->u.index.dim; }

/* ---- op attributes: one table per class --------------------------------- */

/* The attributes of an op are its class's payload (fu_op.u): each class
 * describes its members once, and printing, equality (CSE), hashing and
 * copying (segment extraction) all go through that description.  META ops
 * (input, output, segment) carry structure, not attributes: they are never
 * equal to another op and their owners copy them. */
typedef enum fu_attr_kind {
  FU_AK_INT,       /* int64_t */
  FU_AK_BOOL,      /* bool */
  FU_AK_DTYPE,     /* fu_dtype */
  FU_AK_INT_LIST,  /* fu_int_list */
  FU_AK_BOOL_LIST, /* bool * at `offset`, its uint32_t count at `count_offset` */
} fu_attr_kind;

typedef struct fu_attr_field {
  const char *name; /* the .fir attribute name */
  fu_attr_kind kind;
  size_t offset;       /* of the member in fu_op.u */
  size_t count_offset; /* FU_AK_BOOL_LIST only */
  bool print_always;   /* else printed only when not false / FU_DT_NONE */
  bool required;       /* the parser refuses an op without it */
  int64_t absent;      /* FU_AK_INT: the value when not written (others: 0, false, FU_DT_NONE, empty) */
} fu_attr_field;

typedef struct fu_attr_spec {
  const fu_attr_field *fields; /* in canonical (printing) order */
  uint32_t n;
} fu_attr_spec;

fu_attr_spec fu_op_attr_spec(fu_op_class cls);
/* Equal kinds with equal attributes (false for META ops other than a == b). */
bool fu_op_attrs_equal(const fu_op *a, const fu_op *b);
/* `h` mixed with op's attributes. */
uint64_t fu_op_attrs_hash(const fu_op *op, uint64_t h);
/* to's payload := a deep copy of from's in m's arena (to is of from's kind);
 * META payloads are zeroed.  False on allocation failure. */
bool fu_op_attrs_copy(fu_module *m, const fu_op *from, fu_op *to);

struct fu_block {
  fu_op *first, *last;
  fu_op *parent_op; /* the SEGMENT op owning this block, NULL for a fusion body */
  fu_fusion *fusion;
};

struct fu_fusion {
  const char *name; /* without '@' */
  fu_loc loc;
  fu_block body;
  fu_module *module;
  fu_fusion *next;
  uint32_t next_value_id;
  uint32_t next_op_id;
};

struct fu_module {
  fu_arena *arena;
  fu_allocator alloc;
  fu_fusion *first, *last;
  const fu_source *source; /* may be NULL */
  struct fu_intern_table *interned; /* symbol names, see fu_module_intern */
};

/* ---- construction ---------------------------------------------------- */

fu_module *fu_module_new(fu_allocator alloc);
void fu_module_free(fu_module *m);
fu_fusion *fu_fusion_new(fu_module *m, const char *name, fu_loc loc);
uint32_t fu_module_num_fusions(const fu_module *m);

/* An op with room for its operands and results; results are fresh values
 * with type {FU_DT_NONE, rank 0} for the caller to fill in.  Not linked into
 * any block.  NULL on allocation failure. */
fu_op *fu_op_new(fu_fusion *f, fu_op_kind kind, fu_value *const *operands, uint32_t n_operands,
                 uint32_t n_results, fu_loc loc);
void fu_block_append(fu_block *b, fu_op *op);
/* Links op into the block holding `at`, just before it. */
void fu_block_insert_before(fu_op *at, fu_op *op);
void fu_block_remove(fu_block *b, fu_op *op);

/* A literal constant operand. */
fu_value *fu_literal_f(fu_fusion *f, fu_dtype dt, double v);
fu_value *fu_literal_i(fu_fusion *f, fu_dtype dt, int64_t v);
fu_value *fu_literal_b(fu_fusion *f, bool v);

/* Arena copies for payloads. NULL on failure (or when n == 0). */
fu_extent *fu_dims_copy(fu_module *m, const fu_extent *dims, int32_t rank);
fu_int_list fu_int_list_copy(fu_module *m, const int64_t *v, uint32_t n);
/* Interned symbol name: equal names give equal pointers within a module. */
const char *fu_module_intern(fu_module *m, const char *s, size_t len);

/* Give `v` a name (copied). */
void fu_value_set_name(fu_module *m, fu_value *v, const char *name);

/* ---- traversal helpers ----------------------------------------------- */

/* Iterate all ops of a block, descending into segment bodies (pre-order). */
fu_op *fu_walk_first(fu_block *b);
fu_op *fu_walk_next(fu_op *op);

/* Whether v is one of segment seg's operands (inputs), or one of its
 * outputs. */
bool fu_segment_has_input(const fu_op *seg, const fu_value *v);
bool fu_segment_has_output(const fu_op *seg, const fu_value *v);

/* The fusion's OUTPUT ops' operands, in order, into `out` (capacity cap);
 * returns the total number of outputs. */
uint32_t fu_fusion_outputs(fu_fusion *f, fu_value **out, uint32_t cap);
/* The value an `output %o {alias=%in}` writes into input `in`, or NULL.  A
 * fusion output that names such an input is its memory after the run: o's
 * values (as nvFuser returns it). */
fu_value *fu_fusion_alias_writer(fu_fusion *f, const fu_value *in);

/* Use lists, built on demand (they are not maintained by the IR). */
typedef struct fu_use {
  fu_op *user;
  uint32_t operand_index;
} fu_use;

typedef struct fu_use_map {
  uint32_t n_values;
  uint32_t *start; /* n_values + 1 offsets into uses */
  fu_use *uses;
  fu_allocator alloc;
} fu_use_map;

fu_status fu_use_map_build(fu_fusion *f, fu_use_map *out);
void fu_use_map_free(fu_use_map *m);
static inline uint32_t fu_use_count(const fu_use_map *m, const fu_value *v) {
  return v->id < m->n_values ? m->start[v->id + 1] - m->start[v->id] : 0;
}
static inline const fu_use *fu_uses_of(const fu_use_map *m, const fu_value *v) {
  return &m->uses[m->start[v->id]];
}

#endif
