/* fuser: the kernel IR interpreter (fu_kir_run, include/fuser/kir_interp.h).
 *
 * Registers hold each value in its dtype's storage format (8 bytes: f32 as
 * float bits, f16/bf16 as their uint16 patterns, bool as one byte), so
 * loads and stores are copies and every conversion goes through the CPU
 * interpreter's own load/store conversions: the arithmetic is exactly the
 * fusion interpreter's, op for op.  The compute dtype of a math
 * instruction is the backend's: the result dtype (f16/bf16 widened to
 * f32), or for ops with a bool result the operands' promoted dtype.
 *
 * Lockstep.  The structured body is flattened once into linear code with
 * jumps, so a thread's whole control state is a program counter plus one
 * iteration counter per enclosing loop; every thread has its own register
 * file.  A block runs warp by warp: each lane runs until it reaches a
 * `shfl.xor`, a `sync` or the end.  When lanes of a warp stop at a
 * shuffle, every lane must be at that same shuffle in the same loop
 * iterations (else it is an error), and the shuffle is done for all 32 at
 * once.  When every warp has stopped at a barrier or finished, all threads
 * must be at the same `sync` in the same iterations (else: a divergent
 * barrier, or a thread that finished while others wait); then the barrier
 * opens.  Shared arrays are per block, filled with 0xff bytes when a block
 * starts; every shared element remembers which thread last wrote and read
 * it in the current barrier interval, so a write and another thread's
 * access between the same two barriers is reported as a race.
 *
 * Clusters.  The unit of execution is a group of blocks that run together:
 * one block, or with k->cluster = C > 1 the C blocks of one cluster (block
 * x indices base .. base+C-1, base a multiple of C).  The group's threads
 * are numbered block-major (thread t is local thread t % nthreads of the
 * block of rank t / nthreads), each has its own registers, and each block
 * its own copy of every shared array.  The scheduler runs each block's
 * warps until they all stop, then looks at that block: a `sync` reached by
 * all its threads opens at once (a block barrier involves no other block),
 * so a block may pass many of its own barriers while another waits at a
 * `sync cluster`.  When no block can go on by itself, every block must
 * wait at the same `sync cluster` (or all have finished); then it opens
 * for the whole cluster.  Race detection follows what each barrier orders:
 * block b's accesses are stamped with its interval iv[b], which its own
 * barriers advance; a cluster barrier starts a new interval for every
 * block, at cbase.  Intervals are drawn from one increasing counter, so a
 * write stamped at or after cbase happened since the last cluster barrier,
 * and another block's read of it (`load %arr[%i] cta %r`) is a race;
 * likewise a write to an element that another block read since then.  A
 * block's shared memory goes away when its last thread finishes, so a
 * remote read of a finished block, or a block finishing while a read of
 * its memory since the last cluster barrier stands unordered, is an error
 * (the kernel needs a `sync cluster` before the end).  Without clusters
 * the group is one block and this is exactly the lockstep above. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fuser/rng.h"
#include "fuser/kir_interp.h"
#include "interp_internal.h"

enum { OP_INST, OP_IF, OP_JUMP, OP_FOR_INIT, OP_FOR_TEST, OP_FOR_NEXT, OP_SHFL, OP_SYNC, OP_END };
enum { TS_RUN, TS_SHFL, TS_SYNC, TS_DONE };

/* One op of the flat code.  `depth` is the number of loops around it (a
 * FOR's own ops sit at the depth outside the loop, and its counter is
 * iters[depth]).  `target`: IF to the else part (or past the then part),
 * JUMP and FOR_NEXT to their destination, FOR_TEST to the loop exit. */
typedef struct kop {
  uint8_t code;
  uint8_t depth;
  uint32_t target;
  uint32_t ordinal; /* SHFL, SYNC: 1-based number among its kind (shuffles, block syncs, cluster syncs) */
  const fu_kinst *in;
} kop;

/* The accesses to one element of one block's copy of a shared array.  Only
 * the owner block's threads write it; other blocks of a cluster read it. */
typedef struct shadow {
  uint32_t wep, wt; /* interval (the owner's) and thread of the last write */
  uint32_t rep, rt; /* interval and thread of the owner's reads (MANY_READERS: several) */
  uint32_t xep, xt; /* cluster interval and thread of other blocks' reads (MANY_READERS: several) */
} shadow;
#define MANY_READERS UINT32_MAX
#define MAX_DEPTH 255u

typedef struct kexec {
  const fu_kernel *k;
  const fu_kir_arg *args;
  fu_diag_engine *diag;
  fu_allocator alloc;
  /* flat code */
  kop *code;
  uint32_t n_code, cap_code, depth_slots, n_shfl, n_sync, n_csync;
  /* the group of blocks run together (a cluster, else one block) */
  uint32_t nthreads; /* per block */
  uint32_t nblocks;  /* k->cluster, or 1 */
  uint32_t total;    /* nthreads * nblocks */
  uint32_t nreg;
  /* per thread of the group */
  uint64_t *regs;  /* total x nreg */
  uint32_t *iters; /* total x depth_slots */
  uint32_t *pcs;
  uint8_t *state;
  /* the current thread and its block's rank in the group */
  uint64_t *reg;
  uint32_t *iter;
  uint32_t cur, cur_block;
  int64_t grid[3], base[3], bid[3], tid[3]; /* base: the block index of rank 0 */
  int32_t *param_of; /* kval id -> parameter index, -1 */
  /* arrays by kval id: shared ones once per block of the group, local ones once per thread */
  unsigned char **arrays;
  const fu_kval **array_kv;
  shadow **shadows;
  /* barrier intervals, numbers drawn from `epoch` (counted over the whole
   * run): iv[b] is block b's current one, cbase the one the last cluster
   * barrier (or the group's start) gave every block */
  uint32_t epoch, cbase;
  uint32_t *iv;
  /* per block: threads finished, and the last read of its shared memory by
   * another block (cluster interval, thread, array) */
  uint32_t *ndone;
  struct remote_read {
    uint32_t ep, t;
    const fu_kval *arr;
  } *rread;
  fu_kir_stats st;
  bool failed;
} kexec;

/* thread_idx of group thread t. */
static void thread_coords(const kexec *x, uint32_t t, int64_t out[3]) {
  t %= x->nthreads;
  out[0] = t % x->k->block[0];
  out[1] = (t / x->k->block[0]) % x->k->block[1];
  out[2] = t / (x->k->block[0] * x->k->block[1]);
}

static void set_thread(kexec *x, uint32_t t) {
  x->cur = t;
  x->cur_block = t / x->nthreads;
  x->bid[0] = x->base[0] + x->cur_block;
  x->reg = x->regs + (size_t)t * x->nreg;
  x->iter = x->iters + (size_t)t * x->depth_slots;
  thread_coords(x, t, x->tid);
}

static void kerr(kexec *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void kerr(kexec *x, const char *fmt, ...) {
  if (x->failed) return;
  x->failed = true;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fu_error(x->diag, fu_loc_none(), "kernel '@%s', block (%lld, %lld, %lld), thread (%lld, %lld, %lld): %s",
           x->k->name ? x->k->name : "?", (long long)x->bid[0], (long long)x->bid[1], (long long)x->bid[2],
           (long long)x->tid[0], (long long)x->tid[1], (long long)x->tid[2], msg);
}

static const char *kname(const fu_kval *v) { return v->name ? v->name : "?"; }

/* Names group thread t for a message about the current thread: "thread
 * (x, y, z)", with " of block (x, y, z)" when it is in another block of
 * the cluster. */
static void who(const kexec *x, uint32_t t, char *buf, size_t n) {
  int64_t c[3];
  thread_coords(x, t, c);
  int k = snprintf(buf, n, "thread (%lld, %lld, %lld)", (long long)c[0], (long long)c[1], (long long)c[2]);
  uint32_t b = t / x->nthreads;
  if (b != x->cur_block && k > 0 && (size_t)k < n)
    snprintf(buf + k, n - (size_t)k, " of block (%lld, %lld, %lld)", (long long)(x->base[0] + b),
             (long long)x->base[1], (long long)x->base[2]);
}

static int64_t as_int(const kexec *x, const fu_kval *v) {
  int64_t r = 0;
  fu_interp_load(v->dtype, &x->reg[v->id], 1, 1, FU_CK_I64, &r);
  return r;
}

static bool as_bool(const kexec *x, const fu_kval *v) {
  if (fu_dtype_is_float(v->dtype)) {
    double d;
    fu_interp_load(v->dtype, &x->reg[v->id], 1, 1, FU_CK_F64, &d);
    return d != 0; /* NaN is true */
  }
  return as_int(x, v) != 0;
}

static void set_int(kexec *x, const fu_kval *v, int64_t i) {
  x->reg[v->id] = 0;
  fu_interp_store(v->dtype, &x->reg[v->id], 1, 1, FU_CK_I64, &i);
}

/* ---- memory ------------------------------------------------------------------------------- */

/* Records an access of the current thread to element `e` of block
 * `owner`'s copy of shared array m, and reports a race: a write and
 * another thread's access of the element with no barrier between them
 * that orders both.  The owner's own accesses are ordered by its barriers
 * (interval iv[owner]); another block's reads only by cluster barriers: a
 * write stamped at or after cbase happened since the last one. */
static void track_shared(kexec *x, const fu_kval *m, uint32_t owner, int64_t e, bool store) {
  shadow *s = &x->shadows[m->id][(size_t)owner * (size_t)m->length + (size_t)e];
  uint32_t t = x->cur, ep = x->iv[owner];
  bool remote = owner != x->cur_block; /* a read of another block's copy */
  uint32_t other = UINT32_MAX;
  const char *what = NULL;
  bool across = remote; /* the two accesses are in different blocks */
  if (remote) {
    if (s->wep >= x->cbase) {
      other = s->wt;
      what = "wrote";
    }
  } else if (s->wep == ep && s->wt != t) {
    other = s->wt;
    what = "wrote";
  } else if (store && s->rep == ep && s->rt != t) {
    other = s->rt;
    what = "read";
  } else if (store && s->xep == x->cbase) {
    other = s->xt;
    what = "read";
    across = true;
  }
  if (what) {
    char whom[128] = "another thread", whose[64] = "";
    if (other != MANY_READERS)
      who(x, other, whom, sizeof whom);
    else if (across)
      snprintf(whom, sizeof whom, "threads of other blocks");
    if (remote)
      snprintf(whose, sizeof whose, " of block (%lld, %lld, %lld)", (long long)(x->base[0] + owner),
               (long long)x->base[1], (long long)x->base[2]);
    kerr(x, "shared-memory race on '%%%s' element %lld%s: this thread %s it and %s %s it since the last %sbarrier",
         kname(m), (long long)e, whose, store ? "writes" : "reads", whom, what, across ? "cluster " : "");
    return;
  }
  if (store) {
    s->wep = ep;
    s->wt = t;
  } else if (remote) {
    if (s->xep != x->cbase) {
      s->xep = x->cbase;
      s->xt = t;
    } else if (s->xt != t) {
      s->xt = MANY_READERS;
    }
    x->rread[owner].ep = x->cbase;
    x->rread[owner].t = t;
    x->rread[owner].arr = m;
  } else if (s->rep != ep) {
    s->rep = ep;
    s->rt = t;
  } else if (s->rt != t) {
    s->rt = MANY_READERS;
  }
}

/* The element address of `width` elements at index i of memory operand m
 * (for a shared array, in block `owner`'s copy), checked; NULL after
 * reporting. */
static unsigned char *address(kexec *x, const fu_kval *m, int64_t i, uint32_t width, bool store, uint32_t owner) {
  size_t es = fu_dtype_size(m->dtype);
  unsigned char *base;
  int64_t n;
  if (m->kind == FU_KV_TENSOR_PARAM) {
    int32_t p = m->id < x->k->next_kval_id ? x->param_of[m->id] : -1;
    if (p < 0) {
      kerr(x, "'%%%s' is not a parameter", kname(m));
      return NULL;
    }
    base = x->args[p].data;
    n = x->args[p].n_elems;
  } else {
    base = x->arrays[m->id];
    size_t copy = (size_t)m->length * es;
    if (base) base += (m->space == FU_MEM_LOCAL ? (size_t)x->cur : (size_t)owner) * copy;
    n = m->length;
  }
  if (!base || i < 0 || i > n - (int64_t)width) {
    char whose[64] = "";
    if (owner != x->cur_block)
      snprintf(whose, sizeof whose, " of block (%lld, %lld, %lld)", (long long)(x->base[0] + owner),
               (long long)x->base[1], (long long)x->base[2]);
    kerr(x, "%s of %u element%s of '%%%s'%s at index %lld is out of bounds (%lld elements)", store ? "store" : "load",
         width, width == 1 ? "" : "s", kname(m), whose, (long long)i, (long long)n);
    return NULL;
  }
  unsigned char *a = base + (size_t)i * es;
  if (width > 1 && ((uintptr_t)a % (width * es)) != 0) {
    kerr(x, "vector %s of %u elements of '%%%s' at index %lld is not aligned to %zu bytes", store ? "store" : "load",
         width, kname(m), (long long)i, width * es);
    return NULL;
  }
  if (m->kind == FU_KV_ARRAY && m->space == FU_MEM_SHARED)
    for (uint32_t j = 0; j < width && !x->failed; j++) track_shared(x, m, owner, i + j, store);
  if (x->failed) return NULL;
  if (store && m->kind == FU_KV_TENSOR_PARAM) {
    uint32_t *w = x->args[x->param_of[m->id]].writes;
    if (w)
      for (uint32_t j = 0; j < width; j++) w[i + j]++;
  }
  return a;
}

/* The block whose copy of a shared array `load %arr[%i] cta %r` reads:
 * rank %r of the cluster, which must exist and not have finished (its
 * shared memory is gone then); the thread's own rank makes it an ordinary
 * load.  false after reporting. */
static bool cluster_owner(kexec *x, const fu_kinst *in, uint32_t *owner) {
  int64_t r = as_int(x, in->args[2]);
  if (r < 0 || r >= (int64_t)x->nblocks) {
    kerr(x, "load from '%%%s' of cluster rank %lld: the rank is out of range (the cluster has %u blocks)",
         kname(in->args[0]), (long long)r, x->nblocks);
    return false;
  }
  *owner = (uint32_t)r;
  if (*owner != x->cur_block && x->ndone[r] == x->nthreads) {
    kerr(x,
         "load from '%%%s' of block (%lld, %lld, %lld) (cluster rank %lld), which has finished: a block must not exit "
         "while others read its shared memory; put a `sync cluster` before the end",
         kname(in->args[0]), (long long)(x->base[0] + r), (long long)x->base[1], (long long)x->base[2], (long long)r);
    return false;
  }
  return true;
}

/* Copies a value of dtype `from` (storage at src) to dtype `to` at dst,
 * converting like a cast. */
static void convert(fu_dtype from, const void *src, fu_dtype to, void *dst) {
  if (from == to) {
    memcpy(dst, src, fu_dtype_size(to));
    return;
  }
  fu_ck k = fu_interp_ck(from);
  union {
    double f64;
    float f32;
    int64_t i64;
  } tmp;
  fu_interp_load(from, src, 1, 1, k, &tmp);
  fu_interp_store(to, dst, 1, 1, k, &tmp);
}

/* ---- math ------------------------------------------------------------------------------- */

static void math(kexec *x, const fu_kinst *in) {
  const fu_kval *r = in->results[0];
  fu_op_kind op = in->u.math;
  x->reg[r->id] = 0;
  if (op == FU_OP_CAST || op == FU_OP_SET) {
    convert(in->args[0]->dtype, &x->reg[in->args[0]->id], r->dtype, &x->reg[r->id]);
    return;
  }
  if (fu_op_info_of(op)->cls == FU_OC_RNG) {
    double p[2];
    int64_t w[3];
    for (int i = 0; i < 2; i++) fu_interp_load(in->args[i]->dtype, &x->reg[in->args[i]->id], 1, 1, FU_CK_F64, &p[i]);
    for (int i = 0; i < 3; i++)
      fu_interp_load(in->args[2 + i]->dtype, &x->reg[in->args[2 + i]->id], 1, 1, FU_CK_I64, &w[i]);
    double val = fu_rng_value(op, r->dtype, p[0], p[1], (uint64_t)w[0], (uint64_t)w[1], (uint64_t)w[2]);
    fu_interp_store(r->dtype, &x->reg[r->id], 1, 1, FU_CK_F64, &val);
    return;
  }
  bool bool_res = fu_op_has(op, FU_OF_BOOL_RESULT);
  fu_dtype c;
  if (bool_res)
    c = in->n_args == 1 ? in->args[0]->dtype : fu_dtype_promote(in->args[0]->dtype, in->args[1]->dtype);
  else
    c = r->dtype;
  fu_ck k = fu_interp_ck(c);
  union cell {
    double f64;
    float f32;
    int64_t i64;
  } buf[3], out;
  void *ins[3] = {&buf[0], &buf[1], &buf[2]};
  for (uint32_t i = 0; i < in->n_args && i < 3; i++) {
    if (op == FU_OP_WHERE && i == 0) {
      buf[0].i64 = as_bool(x, in->args[0]) ? 1 : 0;
      continue;
    }
    fu_interp_load(in->args[i]->dtype, &x->reg[in->args[i]->id], 1, 1, k, &buf[i]);
  }
  fu_pw_err e = fu_interp_pw_apply(op, k, r->dtype, ins, &out, 1);
  if (e == FU_PW_DIV_ZERO) {
    kerr(x, "integer division by zero in '%s'", fu_op_info_of(op)->name);
    return;
  }
  if (e != FU_PW_OK) {
    kerr(x, "'%s' is not defined for %s", fu_op_info_of(op)->name, fu_dtype_name(c));
    return;
  }
  fu_interp_store(r->dtype, &x->reg[r->id], 1, 1, bool_res ? FU_CK_I64 : k, &out);
}

static void constant(kexec *x, const fu_kinst *in) {
  const fu_kval *r = in->results[0];
  x->reg[r->id] = 0;
  if (fu_dtype_is_float(r->dtype))
    fu_interp_store(r->dtype, &x->reg[r->id], 1, 1, FU_CK_F64, &in->u.constant.f);
  else if (fu_dtype_is_bool(r->dtype)) {
    int64_t b = in->u.constant.b ? 1 : 0;
    fu_interp_store(r->dtype, &x->reg[r->id], 1, 1, FU_CK_I64, &b);
  } else {
    fu_interp_store(r->dtype, &x->reg[r->id], 1, 1, FU_CK_I64, &in->u.constant.i);
  }
}

static int64_t special(const kexec *x, fu_special sp) {
  switch (sp) {
  case FU_SP_TID_X: return x->tid[0];
  case FU_SP_TID_Y: return x->tid[1];
  case FU_SP_TID_Z: return x->tid[2];
  case FU_SP_CTAID_X: return x->bid[0];
  case FU_SP_CTAID_Y: return x->bid[1];
  case FU_SP_CTAID_Z: return x->bid[2];
  case FU_SP_NTID_X: return x->k->block[0];
  case FU_SP_NTID_Y: return x->k->block[1];
  case FU_SP_NTID_Z: return x->k->block[2];
  case FU_SP_NCTAID_X: return x->grid[0];
  case FU_SP_NCTAID_Y: return x->grid[1];
  case FU_SP_NCTAID_Z: return x->grid[2];
  case FU_SP_CLUSTER_RANK: return x->cur_block; /* = block_idx.x mod cluster; 0 without clusters */
  }
  return 0;
}

/* Straight-line instructions: everything but control flow and the
 * collective ones (shuffles and barriers), which the scheduler runs. */
static void exec(kexec *x, const fu_kinst *in) {
  switch (in->kind) {
  case FU_KI_CONST: constant(x, in); return;
  case FU_KI_MATH: math(x, in); return;
  case FU_KI_SPECIAL: set_int(x, in->results[0], special(x, in->u.special)); return;
  case FU_KI_LOAD: {
    const fu_kval *m = in->args[0];
    uint32_t w = in->u.mem.width, owner = x->cur_block;
    if (in->n_args == 3 && !cluster_owner(x, in, &owner)) return;
    unsigned char *a = address(x, m, as_int(x, in->args[1]), w, false, owner);
    if (!a) return;
    size_t es = fu_dtype_size(m->dtype);
    for (uint32_t j = 0; j < w; j++) {
      x->reg[in->results[j]->id] = 0;
      convert(m->dtype, a + j * es, in->results[j]->dtype, &x->reg[in->results[j]->id]);
    }
    x->st.loads++;
    if (w > 1) x->st.vector_loads++;
    return;
  }
  case FU_KI_STORE: {
    const fu_kval *m = in->args[0];
    uint32_t w = in->u.mem.width;
    unsigned char *a = address(x, m, as_int(x, in->args[1]), w, true, x->cur_block);
    if (!a) return;
    size_t es = fu_dtype_size(m->dtype);
    for (uint32_t j = 0; j < w; j++) convert(in->args[2 + j]->dtype, &x->reg[in->args[2 + j]->id], m->dtype, a + j * es);
    x->st.stores++;
    if (w > 1) x->st.vector_stores++;
    return;
  }
  case FU_KI_READ: x->reg[in->results[0]->id] = x->reg[in->args[0]->id]; return;
  case FU_KI_OPAQUE: /* the barrier is the backend's; the values pass unchanged */
    for (uint32_t i = 0; i < in->n_results; i++) x->reg[in->results[i]->id] = x->reg[in->args[i]->id];
    return;
  case FU_KI_ASSIGN:
    x->reg[in->args[0]->id] = 0;
    convert(in->args[1]->dtype, &x->reg[in->args[1]->id], in->args[0]->dtype, &x->reg[in->args[0]->id]);
    return;
  case FU_KI_ATOM_ADD: {
    /* one thread runs at a time, so the add is atomic by construction */
    const fu_kval *m = in->args[0];
    unsigned char *a = address(x, m, as_int(x, in->args[1]), 1, true, x->cur_block);
    if (!a) return;
    int64_t old = 0, add = as_int(x, in->args[2]);
    fu_interp_load(m->dtype, a, 1, 1, FU_CK_I64, &old);
    int64_t sum = (int64_t)((uint64_t)old + (uint64_t)add); /* wraps, as the hardware does */
    fu_interp_store(m->dtype, a, 1, 1, FU_CK_I64, &sum);
    set_int(x, in->results[0], old);
    x->st.loads++;
    x->st.stores++;
    return;
  }
  case FU_KI_FENCE: return; /* one thread runs at a time: every write is already visible */
  case FU_KI_MISALIGN: {
    /* the host address of the bound memory, as the GPU sees its own */
    const fu_kval *m = in->args[0];
    int32_t p = m->id < x->k->next_kval_id ? x->param_of[m->id] : -1;
    if (p < 0) {
      kerr(x, "'%%%s' is not a parameter", kname(m));
      return;
    }
    uintptr_t a = (uintptr_t)x->args[p].data / fu_dtype_size(m->dtype);
    set_int(x, in->results[0], (int64_t)(a & (in->u.misalign - 1)));
    return;
  }
  default: kerr(x, "unexpected instruction in straight-line code"); return;
  }
}

/* ---- flat code ------------------------------------------------------------------------------ */

static bool push(kexec *x, uint8_t code, uint32_t depth, const fu_kinst *in, uint32_t *at) {
  if (x->n_code == x->cap_code) {
    uint32_t cap = x->cap_code ? x->cap_code * 2 : 64;
    kop *n = fu_mem_realloc(&x->alloc, x->code, x->cap_code * sizeof *n, cap * sizeof *n);
    if (!n) return false;
    x->code = n;
    x->cap_code = cap;
  }
  kop *o = &x->code[x->n_code];
  memset(o, 0, sizeof *o);
  o->code = code;
  o->depth = (uint8_t)depth;
  o->in = in;
  if (code == OP_SHFL) o->ordinal = ++x->n_shfl;
  if (code == OP_SYNC) o->ordinal = in->u.cluster_sync ? ++x->n_csync : ++x->n_sync;
  if (at) *at = x->n_code;
  x->n_code++;
  return true;
}

/* Structured statements to linear code: a loop is INIT, TEST (exit when
 * done), body, NEXT (back to TEST); an `if` is IF (to the else part when
 * false), then part, JUMP past the else part, else part. */
static bool flatten(kexec *x, const fu_kblock *b, uint32_t depth) {
  for (const fu_kinst *in = b->first; in; in = in->next) {
    uint32_t a, t;
    switch (in->kind) {
    case FU_KI_FOR:
      if (depth + 1 > MAX_DEPTH) return false;
      if (depth + 1 > x->depth_slots) x->depth_slots = depth + 1;
      if (!push(x, OP_FOR_INIT, depth, in, NULL) || !push(x, OP_FOR_TEST, depth, in, &t) ||
          !flatten(x, &in->u.loop.body, depth + 1) || !push(x, OP_FOR_NEXT, depth, in, &a))
        return false;
      x->code[a].target = t;
      x->code[t].target = x->n_code;
      break;
    case FU_KI_IF:
      if (!push(x, OP_IF, depth, in, &a) || !flatten(x, &in->u.branch.then_body, depth)) return false;
      if (in->u.branch.else_body.first) {
        if (!push(x, OP_JUMP, depth, in, &t)) return false;
        x->code[a].target = x->n_code;
        if (!flatten(x, &in->u.branch.else_body, depth)) return false;
        x->code[t].target = x->n_code;
      } else {
        x->code[a].target = x->n_code;
      }
      break;
    case FU_KI_SHFL_XOR:
      if (!push(x, OP_SHFL, depth, in, NULL)) return false;
      break;
    case FU_KI_SYNC:
      if (!push(x, OP_SYNC, depth, in, NULL)) return false;
      break;
    default:
      if (!push(x, OP_INST, depth, in, NULL)) return false;
    }
  }
  return true;
}

/* Runs the current thread until it reaches a shuffle, a barrier or the
 * end (or fails); returns the thread's new state, its pc at that op. */
static uint8_t run_thread(kexec *x) {
  uint32_t pc = x->pcs[x->cur];
  for (;;) {
    if (x->failed) return TS_DONE;
    const kop *o = &x->code[pc];
    const fu_kinst *in = o->in;
    switch (o->code) {
    case OP_INST:
      x->st.instructions++;
      exec(x, in);
      pc++;
      break;
    case OP_IF:
      x->st.instructions++;
      pc = as_bool(x, in->args[0]) ? pc + 1 : o->target;
      break;
    case OP_JUMP: pc = o->target; break;
    case OP_FOR_INIT: {
      x->st.instructions++;
      int64_t step = as_int(x, in->args[2]);
      if (step <= 0) {
        kerr(x, "loop step %lld is not positive", (long long)step);
        return TS_DONE;
      }
      set_int(x, in->results[0], as_int(x, in->args[0]));
      x->iter[o->depth] = 0;
      pc++;
      break;
    }
    case OP_FOR_TEST: pc = as_int(x, in->results[0]) < as_int(x, in->args[1]) ? pc + 1 : o->target; break;
    case OP_FOR_NEXT:
      set_int(x, in->results[0], as_int(x, in->results[0]) + as_int(x, in->args[2]));
      x->iter[o->depth]++;
      pc = o->target;
      break;
    case OP_SHFL: x->pcs[x->cur] = pc; return TS_SHFL;
    case OP_SYNC: x->pcs[x->cur] = pc; return TS_SYNC;
    default: x->pcs[x->cur] = pc; return TS_DONE;
    }
  }
}

/* Whether threads a and b stand at the same dynamic instance of an op:
 * the same pc in the same iterations of every enclosing loop. */
static bool same_point(const kexec *x, uint32_t a, uint32_t b) {
  if (x->pcs[a] != x->pcs[b]) return false;
  uint32_t d = x->code[x->pcs[a]].depth;
  return memcmp(x->iters + (size_t)a * x->depth_slots, x->iters + (size_t)b * x->depth_slots, d * sizeof(uint32_t)) == 0;
}

/* How a collective op is named in messages: "sync #2", "sync cluster #1",
 * "shfl.xor #1" (each kind numbered in program order). */
static const char *op_name(const kop *o) {
  if (o->code != OP_SYNC) return "shfl.xor";
  return o->in->u.cluster_sync ? "sync cluster" : "sync";
}

/* Where thread t stands, for messages. */
static void describe(const kexec *x, uint32_t t, uint32_t ref, char *buf, size_t n) {
  const kop *o = &x->code[x->pcs[t]];
  if (x->state[t] == TS_DONE)
    snprintf(buf, n, "has finished");
  else if (x->pcs[t] == x->pcs[ref])
    snprintf(buf, n, "is there in another loop iteration");
  else
    snprintf(buf, n, "is at %s #%u", op_name(o), o->ordinal);
}

/* Lanes [w0, w1) have all stopped and lane `first` is at a shuffle: every
 * lane must be at the same one; then every lane gets its partner's value. */
static void warp_shuffle(kexec *x, uint32_t w0, uint32_t w1, uint32_t first) {
  const kop *o = &x->code[x->pcs[first]];
  int64_t fc[3];
  thread_coords(x, first, fc);
  for (uint32_t t = w0; t < w1; t++) {
    if (x->state[t] == TS_SHFL && same_point(x, t, first)) continue;
    char where[64];
    describe(x, t, first, where, sizeof where);
    set_thread(x, t);
    kerr(x, "'shfl.xor' #%u is reached by only part of a warp: thread (%lld, %lld, %lld) is there, this thread %s",
         o->ordinal, (long long)fc[0], (long long)fc[1], (long long)fc[2], where);
    return;
  }
  if (w1 - w0 != 32) {
    set_thread(x, first);
    kerr(x, "'shfl.xor' #%u in a partial warp of %u threads (the block's thread count is not a multiple of 32)",
         o->ordinal, w1 - w0);
    return;
  }
  uint32_t src = o->in->args[0]->id, dst = o->in->results[0]->id, mask = o->in->u.shfl_mask;
  uint64_t v[32];
  for (uint32_t l = 0; l < 32; l++) v[l] = x->regs[(size_t)(w0 + l) * x->nreg + src];
  for (uint32_t l = 0; l < 32; l++) {
    x->regs[(size_t)(w0 + l) * x->nreg + dst] = v[l ^ mask];
    x->pcs[w0 + l]++;
    x->state[w0 + l] = TS_RUN;
  }
  x->st.instructions += 32;
}

/* Threads [t0, t1) (a block, or one thread per block of the cluster) have
 * all stopped at a barrier or finished, and `first` waits at a barrier:
 * every one must wait at that same barrier in the same loop iterations.
 * false after reporting the first that does not. */
static bool all_at(kexec *x, uint32_t t0, uint32_t t1, uint32_t step, uint32_t first) {
  const kop *o = &x->code[x->pcs[first]];
  char whom[128], where[64];
  for (uint32_t t = t0; t < t1; t += step) {
    if (x->state[t] == TS_DONE) {
      set_thread(x, t);
      who(x, first, whom, sizeof whom);
      kerr(x, "this thread finished while %s waits at %s #%u", whom, op_name(o), o->ordinal);
      return false;
    }
  }
  for (uint32_t t = t0; t < t1; t += step) {
    if (same_point(x, t, first)) continue;
    describe(x, t, first, where, sizeof where);
    set_thread(x, t);
    who(x, first, whom, sizeof whom);
    kerr(x, "divergent barrier: %s waits at %s #%u, this thread %s", whom, op_name(o), o->ordinal, where);
    return false;
  }
  return true;
}

/* Block b's last thread has just finished, and its shared memory goes
 * away: a read of it by another block since the last cluster barrier is
 * ordered before nothing, so on the GPU it may come after the exit. */
static void block_exit(kexec *x, uint32_t b) {
  const struct remote_read *r = &x->rread[b];
  if (r->ep != x->cbase || !r->arr) return;
  char whom[128];
  who(x, r->t, whom, sizeof whom);
  kerr(x,
       "this thread's block finished, but %s read its '%%%s' since the last cluster barrier: a block must not exit "
       "while others read its shared memory; put a `sync cluster` before the end",
       whom, kname(r->arr));
}

/* Runs the warps of block b (rank in the group) until each of its threads
 * has stopped at a barrier or finished, doing the shuffles on the way. */
static void run_warps(kexec *x, uint32_t b) {
  uint32_t t0 = b * x->nthreads, t1 = t0 + x->nthreads;
  for (uint32_t w0 = t0; w0 < t1; w0 += 32) {
    uint32_t w1 = w0 + 32 < t1 ? w0 + 32 : t1;
    for (;;) {
      uint32_t first = UINT32_MAX;
      for (uint32_t t = w0; t < w1; t++) {
        if (x->state[t] == TS_RUN) {
          set_thread(x, t);
          x->state[t] = run_thread(x);
          if (!x->failed && x->state[t] == TS_DONE && ++x->ndone[b] == x->nthreads && x->nblocks > 1)
            block_exit(x, b);
          if (x->failed) return;
        }
        if (x->state[t] == TS_SHFL && first == UINT32_MAX) first = t;
      }
      if (first == UINT32_MAX) break;
      warp_shuffle(x, w0, w1, first);
      if (x->failed) return;
    }
  }
}

enum { BLK_DONE, BLK_OPENED, BLK_CLUSTER, BLK_FAILED };

/* Every thread of block b has stopped: the block is done, or all its
 * threads wait at one barrier.  A `sync` opens at once (it orders only
 * this block: a new interval for its shared memory); at a `sync cluster`
 * the block waits for the others. */
static int block_barrier(kexec *x, uint32_t b) {
  uint32_t t0 = b * x->nthreads, t1 = t0 + x->nthreads, first = UINT32_MAX;
  for (uint32_t t = t0; t < t1 && first == UINT32_MAX; t++)
    if (x->state[t] == TS_SYNC) first = t;
  if (first == UINT32_MAX) return BLK_DONE;
  if (!all_at(x, t0, t1, 1, first)) return BLK_FAILED;
  if (x->code[x->pcs[first]].in->u.cluster_sync) return BLK_CLUSTER;
  x->iv[b] = ++x->epoch;
  for (uint32_t t = t0; t < t1; t++) {
    x->pcs[t]++;
    x->state[t] = TS_RUN;
  }
  x->st.instructions += x->nthreads;
  return BLK_OPENED;
}

/* No block can go on by itself: each has finished or waits at a `sync
 * cluster`.  Either all have finished (false), or all must wait at the
 * same one, which opens: every block's shared-memory writes before it are
 * visible to the others after it, so every block starts a new interval. */
static bool cluster_barrier(kexec *x) {
  uint32_t n = x->nthreads, first = UINT32_MAX;
  for (uint32_t t = 0; t < x->total && first == UINT32_MAX; t += n)
    if (x->state[t] == TS_SYNC) first = t;
  if (first == UINT32_MAX || !all_at(x, 0, x->total, n, first)) return false;
  x->cbase = ++x->epoch;
  for (uint32_t b = 0; b < x->nblocks; b++) x->iv[b] = x->cbase;
  for (uint32_t t = 0; t < x->total; t++) {
    x->pcs[t]++;
    x->state[t] = TS_RUN;
  }
  x->st.instructions += x->total;
  return true;
}

/* Runs the group of blocks whose rank 0 is x->base: each block until it
 * stops, opening its own barriers, as long as any block can go on; then
 * a cluster barrier. */
static void run_group(kexec *x) {
  memset(x->pcs, 0, x->total * sizeof *x->pcs);
  memset(x->state, TS_RUN, x->total);
  memset(x->ndone, 0, x->nblocks * sizeof *x->ndone);
  for (uint32_t i = 0; i < x->k->next_kval_id; i++) {
    const fu_kval *a = x->array_kv[i];
    if (a && a->space == FU_MEM_SHARED)
      memset(x->arrays[i], 0xff, (size_t)a->length * fu_dtype_size(a->dtype) * x->nblocks);
  }
  memcpy(x->bid, x->base, sizeof x->bid);
  x->cbase = ++x->epoch;
  for (uint32_t b = 0; b < x->nblocks; b++) x->iv[b] = x->cbase;
  for (;;) {
    bool opened = false;
    for (uint32_t b = 0; b < x->nblocks; b++) {
      run_warps(x, b);
      int r = x->failed ? BLK_FAILED : block_barrier(x, b);
      if (r == BLK_FAILED) return;
      if (r == BLK_OPENED) opened = true;
    }
    if (!opened && !cluster_barrier(x)) return;
  }
}

/* ---- set-up ---------------------------------------------------------------------------------- */

/* Elements of one copy of an array (at least one, for the allocator). */
static size_t array_len(const fu_kval *a) { return (size_t)(a->length > 0 ? a->length : 1); }

/* All copies of an array: one per thread of the group (local) or per block (shared). */
static size_t array_bytes(const kexec *x, const fu_kval *a) {
  return array_len(a) * fu_dtype_size(a->dtype) * (a->space == FU_MEM_LOCAL ? x->total : x->nblocks);
}

/* Arrays declared anywhere in the kernel, found through their uses. */
static bool alloc_arrays(kexec *x, const fu_kblock *b) {
  for (const fu_kinst *in = b->first; in; in = in->next) {
    for (uint32_t i = 0; i < in->n_args; i++) {
      const fu_kval *v = in->args[i];
      if (v->kind != FU_KV_ARRAY || x->arrays[v->id]) continue;
      x->array_kv[v->id] = v;
      x->arrays[v->id] = fu_mem_calloc(&x->alloc, array_bytes(x, v), 1);
      if (!x->arrays[v->id]) return false;
      if (v->space == FU_MEM_SHARED) {
        x->shadows[v->id] = fu_mem_calloc(&x->alloc, array_len(v) * x->nblocks, sizeof(shadow));
        if (!x->shadows[v->id]) return false;
      }
    }
    if (in->kind == FU_KI_FOR && !alloc_arrays(x, &in->u.loop.body)) return false;
    if (in->kind == FU_KI_IF && (!alloc_arrays(x, &in->u.branch.then_body) || !alloc_arrays(x, &in->u.branch.else_body)))
      return false;
  }
  return true;
}

static void free_exec(kexec *x, uint32_t n) {
  for (uint32_t i = 0; x->arrays && x->array_kv && i < n; i++) {
    const fu_kval *a = x->array_kv[i];
    if (!a) continue;
    fu_mem_free(&x->alloc, x->arrays[i], array_bytes(x, a));
    if (x->shadows[i]) fu_mem_free(&x->alloc, x->shadows[i], array_len(a) * x->nblocks * sizeof(shadow));
  }
  fu_mem_free(&x->alloc, x->arrays, n * sizeof *x->arrays);
  fu_mem_free(&x->alloc, x->array_kv, n * sizeof *x->array_kv);
  fu_mem_free(&x->alloc, x->shadows, n * sizeof *x->shadows);
  fu_mem_free(&x->alloc, x->param_of, n * sizeof *x->param_of);
  fu_mem_free(&x->alloc, x->code, x->cap_code * sizeof *x->code);
  fu_mem_free(&x->alloc, x->regs, (size_t)x->total * x->nreg * sizeof *x->regs);
  fu_mem_free(&x->alloc, x->iters, (size_t)x->total * x->depth_slots * sizeof *x->iters);
  fu_mem_free(&x->alloc, x->pcs, x->total * sizeof *x->pcs);
  fu_mem_free(&x->alloc, x->state, x->total);
  fu_mem_free(&x->alloc, x->iv, x->nblocks * sizeof *x->iv);
  fu_mem_free(&x->alloc, x->ndone, x->nblocks * sizeof *x->ndone);
  fu_mem_free(&x->alloc, x->rread, x->nblocks * sizeof *x->rread);
}

/* Scalar parameters into every thread's registers (they never change). */
static void bind_scalars(kexec *x) {
  const fu_kernel *k = x->k;
  for (uint32_t p = 0; p < k->n_params; p++) {
    const fu_kval *v = k->params[p];
    x->param_of[v->id] = (int32_t)p;
    if (v->kind != FU_KV_SCALAR_PARAM) continue;
    uint64_t cell = 0;
    if (fu_dtype_is_float(v->dtype)) {
      fu_interp_store(v->dtype, &cell, 1, 1, FU_CK_F64, &x->args[p].scalar.f);
    } else {
      int64_t i = fu_dtype_is_bool(v->dtype) ? (x->args[p].scalar.b ? 1 : 0) : x->args[p].scalar.i;
      fu_interp_store(v->dtype, &cell, 1, 1, FU_CK_I64, &i);
    }
    for (uint32_t t = 0; t < x->total; t++) x->regs[(size_t)t * x->nreg + v->id] = cell;
  }
}

/* A `zeroed` workspace is zero at launch and must be zero again at the end
 * (the runtime keeps one zeroed buffer across launches): a semaphore the
 * kernel forgot to reset is an error. */
static void check_zeroed(kexec *x) {
  for (uint32_t p = 0; p < x->k->n_params && !x->failed; p++) {
    const fu_kval *v = x->k->params[p];
    /* an error flag is read and reported by the kernel's caller */
    if (v->kind != FU_KV_TENSOR_PARAM || !v->ws_zeroed || v->ws_error || !x->args[p].data) continue;
    const unsigned char *d = x->args[p].data;
    size_t bytes = (size_t)x->args[p].n_elems * fu_dtype_size(v->dtype);
    for (size_t i = 0; i < bytes; i++)
      if (d[i]) {
        fu_error(x->diag, fu_loc_none(),
                 "kernel '@%s' left zeroed workspace '%%%s' non-zero at element %zu (reset it before the kernel ends)",
                 x->k->name ? x->k->name : "?", kname(v), i / fu_dtype_size(v->dtype));
        x->failed = true;
        break;
      }
  }
}

fu_status fu_kir_run(const fu_kernel *k, const fu_kir_arg *args, const int64_t grid[3], fu_allocator alloc,
                     fu_diag_engine *diag, fu_kir_stats *stats) {
  if (fu_kernel_verify(k, diag, NULL) != FU_OK) return FU_ERR_VERIFY;
  uint32_t c = k->cluster > 1 ? k->cluster : 1;
  if (grid[0] % c != 0) {
    fu_error(diag, fu_loc_none(),
             "kernel '@%s': grid x extent %lld is not a multiple of the cluster's %u blocks (cluster=%u)",
             k->name ? k->name : "?", (long long)grid[0], c, c);
    return FU_ERR_INVALID_ARG;
  }
  kexec x;
  memset(&x, 0, sizeof x);
  x.k = k;
  x.args = args;
  x.diag = diag;
  x.alloc = alloc;
  uint32_t n = k->next_kval_id ? k->next_kval_id : 1;
  x.nreg = n;
  x.nthreads = k->block[0] * k->block[1] * k->block[2];
  x.nblocks = c;
  x.total = x.nthreads * c;
  x.param_of = fu_mem_alloc(&alloc, n * sizeof *x.param_of);
  x.arrays = fu_mem_calloc(&alloc, n, sizeof *x.arrays);
  x.array_kv = fu_mem_calloc(&alloc, n, sizeof *x.array_kv);
  x.shadows = fu_mem_calloc(&alloc, n, sizeof *x.shadows);
  bool ok = x.param_of && x.arrays && x.array_kv && x.shadows && flatten(&x, &k->body, 0) &&
            push(&x, OP_END, 0, NULL, NULL);
  if (x.depth_slots == 0) x.depth_slots = 1;
  fu_status st = FU_OK;
  if (ok) {
    x.regs = fu_mem_calloc(&alloc, (size_t)x.total * x.nreg, sizeof *x.regs);
    x.iters = fu_mem_calloc(&alloc, (size_t)x.total * x.depth_slots, sizeof *x.iters);
    x.pcs = fu_mem_calloc(&alloc, x.total, sizeof *x.pcs);
    x.state = fu_mem_calloc(&alloc, x.total, 1);
    x.iv = fu_mem_calloc(&alloc, c, sizeof *x.iv);
    x.ndone = fu_mem_calloc(&alloc, c, sizeof *x.ndone);
    x.rread = fu_mem_calloc(&alloc, c, sizeof *x.rread);
    ok = x.regs && x.iters && x.pcs && x.state && x.iv && x.ndone && x.rread && alloc_arrays(&x, &k->body);
  }
  if (!ok) {
    fu_error(diag, fu_loc_none(), "out of memory running kernel '@%s'", k->name ? k->name : "?");
    st = FU_ERR_NOMEM;
    goto done;
  }
  for (uint32_t i = 0; i < n; i++) x.param_of[i] = -1;
  bind_scalars(&x);
  for (int d = 0; d < 3; d++) x.grid[d] = grid[d];
  for (x.base[2] = 0; x.base[2] < grid[2] && !x.failed; x.base[2]++)
    for (x.base[1] = 0; x.base[1] < grid[1] && !x.failed; x.base[1]++)
      for (x.base[0] = 0; x.base[0] < grid[0] && !x.failed; x.base[0] += c) run_group(&x);
  if (!x.failed) check_zeroed(&x);
  if (x.failed) st = FU_ERR_RUNTIME;
  if (stats) {
    stats->instructions += x.st.instructions;
    stats->loads += x.st.loads;
    stats->stores += x.st.stores;
    stats->vector_loads += x.st.vector_loads;
    stats->vector_stores += x.st.vector_stores;
  }
done:
  free_exec(&x, n);
  return st;
}
