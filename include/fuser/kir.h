/* fuser: the kernel IR.
 *
 * `lower` turns each scheduled segment into one kernel: a parameter list, a
 * launch configuration, and a body of structured statements (for, if) over
 * SSA scalar instructions.  The backend maps each instruction to LLVM IR one
 * to one; the runtime reads the parameter list and the launch configuration.
 * Kernel IR prints and parses (docs/ir.md, "Kernel IR"), so every stage can
 * be checked with FileCheck and no GPU.
 *
 * Kernel IR objects live in the module arena, like the rest of the IR. */
#ifndef FUSER_KIR_H
#define FUSER_KIR_H

#include <stdbool.h>
#include <stdint.h>

#include "fuser/ir.h"
#include "fuser/strbuf.h"

/* ---- launch expressions: evaluated on the host from the bound extents ---- */

typedef enum fu_lexpr_kind {
  FU_LX_CONST,    /* value */
  FU_LX_SYM,      /* a symbolic extent of the fusion */
  FU_LX_MUL,      /* a * b */
  FU_LX_ADD,      /* a + b */
  FU_LX_CEIL_DIV, /* (a + b - 1) / b */
  FU_LX_MIN,
  FU_LX_MAX,
} fu_lexpr_kind;

typedef struct fu_lexpr {
  fu_lexpr_kind kind;
  int64_t value;   /* FU_LX_CONST */
  const char *sym; /* FU_LX_SYM: interned extent name */
  struct fu_lexpr *a, *b;
} fu_lexpr;

/* ---- kernel values -------------------------------------------------------- */

typedef enum fu_kval_kind {
  FU_KV_TENSOR_PARAM, /* a global-memory tensor argument (pointer to dtype) */
  FU_KV_SCALAR_PARAM, /* a scalar argument: a fusion scalar input, an extent, or a stride */
  FU_KV_LOCAL,        /* an SSA scalar defined by an instruction */
  FU_KV_MUTABLE,      /* a mutable scalar (accumulators); read with `read`, written with `assign` */
  FU_KV_ARRAY,        /* a local or shared array */
} fu_kval_kind;

typedef enum fu_mem_space { FU_MEM_GLOBAL, FU_MEM_SHARED, FU_MEM_LOCAL } fu_mem_space;

/* What a scalar parameter carries, so the runtime knows what to pass. */
typedef enum fu_kparam_role {
  FU_KP_NONE,
  FU_KP_SCALAR_INPUT, /* the value of fusion scalar input `value` */
  FU_KP_EXTENT,       /* the bound size of symbol `sym` */
  FU_KP_STRIDE,       /* the stride (elements) of dim `dim` of tensor param `tensor` */
} fu_kparam_role;

typedef struct fu_kval {
  fu_kval_kind kind;
  const char *name; /* printed as %name */
  fu_dtype dtype;   /* element dtype for tensors and arrays */
  uint32_t id;      /* dense per kernel */
  /* FU_KV_TENSOR_PARAM */
  fu_value *tensor;   /* the fusion value this parameter binds (NULL for a workspace) */
  bool readonly;      /* an input: loads may use the non-coherent path */
  /* `stream`: a read-only input the kernel reads once, in whole lines;
   * its loads ask L2 to evict those lines first (ld.global.cs), so that
   * they do not push out lines other kernels wrote (docs/ir.md) */
  bool stream;
  bool noalias;
  uint32_t align;     /* bytes guaranteed for the base pointer */
  /* an output written in place (`alias=%P`): its memory is tensor
   * parameter P's, an input the same kernel reads (neither readonly nor
   * noalias); the runtime passes P's buffer for both */
  struct fu_kval *alias_of;
  /* a workspace: global scratch the runtime allocates per launch, ws_size
   * elements (evaluated like the grid); ws_zeroed: all zero at launch, and
   * the kernel leaves it all zero again when it ends */
  struct fu_lexpr *ws_size; /* NULL: not a workspace */
  bool ws_zeroed;
  /* a zeroed one-element i32 workspace that is the kernel's error flag: a
   * non-zero value after the kernel is the id + 1 of the fusion op that met
   * an index out of range, which the runtime reports as an error */
  bool ws_error;
  /* FU_KV_SCALAR_PARAM */
  fu_kparam_role role;
  fu_value *scalar;   /* FU_KP_SCALAR_INPUT */
  const char *sym;    /* FU_KP_EXTENT */
  struct fu_kval *stride_of; /* FU_KP_STRIDE */
  int32_t dim;
  /* FU_KV_ARRAY */
  fu_mem_space space;
  int64_t length;
  /* a shared array in the kernel's dynamic shared memory (printed
   * `dynamic=OFFSET`): it starts at byte `offset` (a multiple of 16) of the
   * `smem_bytes` the launch gives.  The way past the 48 KiB that static
   * shared declarations may take; false: a static array */
  bool dynamic;
  uint32_t offset;
} fu_kval;

/* ---- instructions ------------------------------------------------------- */

typedef enum fu_kinst_kind {
  FU_KI_CONST,   /* results[0] = literal (u.constant) */
  FU_KI_MATH,    /* results[0] = u.math(args...): any pointwise op of ops.def on scalars,
                    with the result dtype of results[0]; int div/fmod truncate */
  FU_KI_SPECIAL, /* results[0] = threadIdx/blockIdx/blockDim/gridDim .x/.y/.z (u.special) */
  FU_KI_LOAD,    /* results[0..width) = tensor-or-array args[0] at element index args[1]; with a third
                    operand (a shared array only): that array's copy in the block of rank args[2] of the
                    kernel's cluster (distributed shared memory, sm_90) */
  FU_KI_STORE,   /* tensor-or-array args[0] at element index args[1] = args[2..2+width) */
  FU_KI_READ,    /* results[0] = mutable args[0] */
  FU_KI_ASSIGN,  /* mutable args[0] = args[1] */
  FU_KI_SHFL_XOR,/* results[0] = warp shuffle butterfly of args[0] with lane mask u.shfl_mask */
  FU_KI_SYNC,    /* barrier: block-wide, or with u.cluster_sync cluster-wide (every thread of every block
                    of the cluster; what a block wrote to shared memory before it is visible to the
                    cluster's other blocks after it) */
  FU_KI_ATOM_ADD,/* results[0] = old value of global args[0] at index args[1]; that element += args[2] */
  FU_KI_FENCE,   /* memory fence at scope u.fence */
  FU_KI_MISALIGN,/* results[0] = (address of tensor param args[0]) / element size, mod u.misalign (a power of
                    two, 2..16): how many elements its base lies past a boundary of that many elements */
  FU_KI_OPAQUE,  /* results[0..n) = args[0..n), bit for bit, all of one dtype (1 <= n <= 16), through
                    an optimization barrier: the backend does not merge what is computed from the results
                    with what is computed from the args (a row kept in registers in its 16-bit form is
                    widened again in each pass, not kept widened from the first) */
  FU_KI_FOR,     /* for results[0] in [args[0], args[1]) step args[2] { u.loop.body } */
  FU_KI_IF,      /* if args[0] { u.branch.then_body } else { u.branch.else_body } */
} fu_kinst_kind;

typedef enum fu_special {
  FU_SP_TID_X, FU_SP_TID_Y, FU_SP_TID_Z,
  FU_SP_CTAID_X, FU_SP_CTAID_Y, FU_SP_CTAID_Z,
  FU_SP_NTID_X, FU_SP_NTID_Y, FU_SP_NTID_Z,
  FU_SP_NCTAID_X, FU_SP_NCTAID_Y, FU_SP_NCTAID_Z,
  FU_SP_CLUSTER_RANK, /* the block's rank in its cluster (%cluster_ctarank; 0 without clusters) */
} fu_special;

typedef enum fu_fence_scope {
  FU_FENCE_BLOCK, /* membar.cta */
  FU_FENCE_GPU,   /* membar.gl */
} fu_fence_scope;

typedef enum fu_loop_kind {
  FU_LOOP_SERIAL,
  FU_LOOP_UNROLL,      /* the backend fully unrolls (constant trip count) */
  FU_LOOP_ROLLED,      /* the backend keeps the loop: no unrolling at all */
} fu_loop_kind;

typedef struct fu_kblock {
  struct fu_kinst *first, *last;
} fu_kblock;

typedef struct fu_kinst {
  fu_kinst_kind kind;
  fu_kval **args;
  uint32_t n_args;
  fu_kval **results;
  uint32_t n_results;
  struct fu_kinst *next;
  union {
    fu_scalar_value constant;                       /* CONST; dtype from results[0] */
    fu_op_kind math;                                /* MATH */
    fu_special special;                             /* SPECIAL */
    struct { uint32_t width; fu_mem_space space; bool predicated_by_parent; } mem; /* LOAD/STORE */
    uint32_t shfl_mask;                             /* SHFL_XOR */
    bool cluster_sync;                              /* SYNC: cluster-wide */
    fu_fence_scope fence;                           /* FENCE */
    uint32_t misalign;                              /* MISALIGN: the modulus, in elements */
    struct { fu_loop_kind kind; fu_kblock body; } loop; /* FOR */
    struct { fu_kblock then_body, else_body; } branch;  /* IF */
  } u;
} fu_kinst;

/* ---- kernels -------------------------------------------------------------- */

typedef struct fu_kernel {
  const char *name;      /* the segment's name: the PTX entry point */
  fu_kval **params;      /* in launch order */
  uint32_t n_params;
  fu_lexpr *grid[3];     /* grid dims, evaluated on the host */
  uint32_t block[3];     /* threads per block */
  uint32_t smem_bytes;   /* dynamic shared memory */
  uint32_t min_blocks;   /* blocks per SM the lowering plans on (`min_blocks=`), 0: no bound */
  /* blocks per thread-block cluster along x (`cluster=`, sm_90): 0 or 1,
   * no clusters; else 2, 4 or 8, and the grid's x extent a multiple of it.
   * Blocks x*c .. x*c+c-1 form one cluster and are resident together, and
   * each can read the others' shared arrays (a load with a rank operand) */
  uint32_t cluster;
  fu_dtype index_dtype;  /* i32 when every tensor fits, else i64 */
  fu_kblock body;
  uint32_t next_kval_id;
  uint32_t params_cap;   /* capacity of `params` (fu_kernel_add_param grows it) */
} fu_kernel;

/* ---- construction ----------------------------------------------------------
 *
 * Everything is allocated in the module's arena; names are copied.  Every
 * constructor returns NULL when the arena fails (or an argument is invalid),
 * so callers check one pointer.  A NULL name is allowed: the printer then
 * writes `%v<id>`. */

/* A kernel with no parameters, grid [1, 1, 1], block [1, 1, 1], no dynamic
 * shared memory, i32 indexing and an empty body.  `name` is without '@'. */
fu_kernel *fu_kernel_new(fu_module *m, const char *name);

/* A kernel value of `kind` with a fresh dense id (kernel-local).  Parameters
 * must also be appended with fu_kernel_add_param; the helpers below do both. */
fu_kval *fu_kval_new(fu_module *m, fu_kernel *k, fu_kval_kind kind, const char *name, fu_dtype dtype);
/* Appends `p` (a TENSOR_PARAM or SCALAR_PARAM) to k->params. */
fu_status fu_kernel_add_param(fu_module *m, fu_kernel *k, fu_kval *p);

/* A global tensor of element `dtype` bound to fusion value `tensor` (may be
 * NULL for hand-built kernels).  `align` in bytes (0: element size). */
fu_kval *fu_kernel_tensor_param(fu_module *m, fu_kernel *k, const char *name, fu_dtype dtype,
                                fu_value *tensor, bool readonly, bool noalias, uint32_t align);
/* Scalar parameters by role: the bound size of extent symbol `sym`, the
 * stride (in elements) of dim `dim` of tensor parameter `tensor`, the value
 * of fusion scalar input `scalar`, or a plain scalar (FU_KP_NONE). */
fu_kval *fu_kernel_extent_param(fu_module *m, fu_kernel *k, const char *name, fu_dtype dtype,
                                const char *sym);
fu_kval *fu_kernel_stride_param(fu_module *m, fu_kernel *k, const char *name, fu_dtype dtype,
                                fu_kval *tensor, int32_t dim);
fu_kval *fu_kernel_scalar_input_param(fu_module *m, fu_kernel *k, const char *name, fu_dtype dtype,
                                      fu_value *scalar);
fu_kval *fu_kernel_scalar_param(fu_module *m, fu_kernel *k, const char *name, fu_dtype dtype);
/* A workspace of `size` elements of `dtype` (noalias, 16-byte aligned). */
fu_kval *fu_kernel_workspace_param(fu_module *m, fu_kernel *k, const char *name, fu_dtype dtype, fu_lexpr *size,
                                   bool zeroed);

fu_kval *fu_kval_new_local(fu_module *m, fu_kernel *k, const char *name, fu_dtype dtype);
fu_kval *fu_kval_new_mutable(fu_module *m, fu_kernel *k, const char *name, fu_dtype dtype);
/* A fixed-size array in shared or local memory (`length` elements, > 0). */
fu_kval *fu_kval_new_array(fu_module *m, fu_kernel *k, const char *name, fu_dtype dtype,
                           fu_mem_space space, int64_t length);

/* A shared array of `length` elements in k's dynamic shared memory, at the
 * first 16-byte boundary after what is there: k->smem_bytes grows to cover
 * it.  NULL when the arena fails, length <= 0, or the bytes pass 4 GiB. */
fu_kval *fu_kernel_dynamic_array(fu_module *m, fu_kernel *k, const char *name, fu_dtype dtype, int64_t length);

/* How many blocks of k fit on one SM of compute capability `sm` (90, 80:
 * the preset of sm_<sm>) by shared memory (the dynamic bytes, the static
 * shared arrays and the 1 KiB the driver keeps per block), when that is
 * fewer than its threads allow (at least 1); 0 when shared memory is not
 * the limit or sm has no preset.  The backends tell ptxas
 * (`.minnctapersm`), which otherwise may keep a 1024-thread kernel at 32
 * registers, for two blocks per SM that the shared memory rules out. */
uint32_t fu_kernel_smem_blocks_per_sm(const fu_kernel *k, uint32_t sm);
/* The blocks per SM the backends ask ptxas for: the kernel's min_blocks
 * (a lowering that plans on that many blocks resident, as a persistent
 * kernel's row loop does: without it ptxas may take more registers than
 * two 512-thread blocks leave), lowered to what shared memory allows;
 * else fu_kernel_smem_blocks_per_sm. */
uint32_t fu_kernel_min_blocks_per_sm(const fu_kernel *k, uint32_t sm);

/* An instruction with copies of `args` and `results`; not linked anywhere. */
fu_kinst *fu_kinst_new(fu_module *m, fu_kinst_kind kind, fu_kval *const *args, uint32_t n_args,
                       fu_kval *const *results, uint32_t n_results);
void fu_kblock_append(fu_kblock *b, fu_kinst *inst);

/* A builder appends instructions at the end of `block`, creating the result
 * values.  Each helper returns the result (or the instruction for the
 * structured ones), NULL on failure; results are named `name` (vector loads:
 * `name` followed by the lane number). */
typedef struct fu_kbuilder {
  fu_module *m;
  fu_kernel *k;
  fu_kblock *block;
} fu_kbuilder;

static inline fu_kbuilder fu_kbuilder_at(fu_module *m, fu_kernel *k, fu_kblock *block) {
  fu_kbuilder b = {m, k, block};
  return b;
}

fu_kval *fu_kb_const_i(fu_kbuilder *b, const char *name, fu_dtype dtype, int64_t v);
fu_kval *fu_kb_const_f(fu_kbuilder *b, const char *name, fu_dtype dtype, double v);
fu_kval *fu_kb_const_b(fu_kbuilder *b, const char *name, bool v);
/* results[0] = op(args...) with result dtype `dtype` (any pointwise op). */
fu_kval *fu_kb_math(fu_kbuilder *b, const char *name, fu_op_kind op, fu_dtype dtype,
                    fu_kval *const *args, uint32_t n_args);
fu_kval *fu_kb_unary(fu_kbuilder *b, const char *name, fu_op_kind op, fu_dtype dtype, fu_kval *x);
fu_kval *fu_kb_binary(fu_kbuilder *b, const char *name, fu_op_kind op, fu_dtype dtype, fu_kval *x,
                      fu_kval *y);
fu_kval *fu_kb_special(fu_kbuilder *b, const char *name, fu_special sp, fu_dtype dtype);
/* Loads `width` consecutive elements of `src` (tensor param or array)
 * starting at element `index`; the results have `dtype` (the element dtype,
 * or another dtype to convert to).  Writes the width results to `out`. */
fu_kinst *fu_kb_load(fu_kbuilder *b, const char *name, fu_kval *src, fu_kval *index, uint32_t width,
                     fu_dtype dtype, fu_kval **out);
fu_kinst *fu_kb_store(fu_kbuilder *b, fu_kval *dst, fu_kval *index, fu_kval *const *values,
                      uint32_t width);
fu_kval *fu_kb_read(fu_kbuilder *b, const char *name, fu_kval *mut);
fu_kinst *fu_kb_assign(fu_kbuilder *b, fu_kval *mut, fu_kval *value);
fu_kval *fu_kb_shfl_xor(fu_kbuilder *b, const char *name, fu_kval *x, uint32_t lane_mask);
fu_kinst *fu_kb_sync(fu_kbuilder *b);
/* A barrier over every thread of the kernel's cluster (`sync cluster`). */
fu_kinst *fu_kb_sync_cluster(fu_kbuilder *b);
/* One element of shared array `arr` at `index` in the copy of the block
 * of cluster rank `rank` (i32): `load %arr[%i] cta %rank`. */
fu_kval *fu_kb_load_cta(fu_kbuilder *b, const char *name, fu_kval *arr, fu_kval *index, fu_kval *rank);
/* Atomically adds `value` to element `index` of global tensor `mem` (an
 * int dtype); the result is the element's old value. */
fu_kval *fu_kb_atom_add(fu_kbuilder *b, const char *name, fu_kval *mem, fu_kval *index, fu_kval *value);
fu_kinst *fu_kb_fence(fu_kbuilder *b, fu_fence_scope scope);
/* (the address of tensor parameter `mem`, in elements) mod `modulus`, as
 * an integer of `dtype`: a peeled split's shift is computed from it
 * (docs/ir.md, "Peeled vector splits"). */
fu_kval *fu_kb_misalign(fu_kbuilder *b, const char *name, fu_kval *mem, uint32_t modulus, fu_dtype dtype);
/* `%r0, ... = opaque %x0, ...`: n (1..16) values of one dtype through an
 * optimization barrier (FU_KI_OPAQUE); writes the n results to `out`. */
fu_kinst *fu_kb_opaque(fu_kbuilder *b, fu_kval *const *values, uint32_t n, fu_kval **out);
/* `for %name = start to end step step`; the induction variable has start's
 * dtype.  Continue building inside with fu_kbuilder_at(m, k, &inst->u.loop.body). */
fu_kinst *fu_kb_for(fu_kbuilder *b, const char *name, fu_kval *start, fu_kval *end, fu_kval *step,
                    fu_loop_kind kind);
fu_kinst *fu_kb_if(fu_kbuilder *b, fu_kval *cond);

/* Names of the special registers: "thread_idx.x", "block_dim.z", ... */
const char *fu_special_name(fu_special sp);
/* false when `name` (length len) is not a special register. */
bool fu_special_from_name(const char *name, size_t len, fu_special *out);

/* ---- launch expressions ---------------------------------------------------- */

fu_lexpr *fu_lexpr_const(fu_module *m, int64_t value);
/* `sym` is interned in the module. */
fu_lexpr *fu_lexpr_sym(fu_module *m, const char *sym);
/* kind is MUL, ADD, CEIL_DIV, MIN or MAX; NULL when a or b is NULL. */
fu_lexpr *fu_lexpr_binary(fu_module *m, fu_lexpr_kind kind, fu_lexpr *a, fu_lexpr *b);

/* A binding of an extent symbol to its size (names compared as strings). */
typedef struct fu_lexpr_binding {
  const char *sym;
  int64_t value;
} fu_lexpr_binding;

/* Evaluates `e`.  FU_ERR_INVALID_ARG when a symbol is unbound (*bad_sym
 * names it when bad_sym is not NULL), FU_ERR_RUNTIME on int64 overflow or a
 * ceil_div by a non-positive value. */
fu_status fu_lexpr_eval(const fu_lexpr *e, const fu_lexpr_binding *bindings, size_t n_bindings,
                        int64_t *out, const char **bad_sym);
/* Structural equality. */
bool fu_lexpr_equal(const fu_lexpr *a, const fu_lexpr *b);
/* `ceil_div(mul(N, 3072), 512)`, as kernel IR's text writes it. */
void fu_lexpr_print(fu_strbuf *out, const fu_lexpr *e);

/* ---- verification ------------------------------------------------------------ */

/* Where an instruction or parameter came from, for diagnostics (the parser
 * supplies one; NULL gives no locations). */
typedef struct fu_kir_locator {
  fu_loc (*inst_loc)(void *user, const fu_kinst *inst);
  fu_loc (*kernel_loc)(void *user, const fu_kernel *k);
  void *user;
} fu_kir_locator;

/* Checks what the backend relies on: value kinds per operand, dtypes, vector
 * widths, every use dominated by its definition (a value defined inside a
 * for/if body is not visible after it), each local defined once, ids below
 * next_kval_id.  Reports every problem found; FU_ERR_VERIFY if any. */
fu_status fu_kernel_verify(const fu_kernel *k, fu_diag_engine *diag, const fu_kir_locator *loc);

#endif
