/* fuser: reproducible example inputs for a fusion: a portable PRNG, and the
 * inputs described by each INPUT op's example attributes (or overrides). */
#define _XOPEN_SOURCE 700 /* realpath */

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuser/example_sizes.h"
#include "fuser/npy.h"
#include "interp_internal.h"

/* ---- PRNG: xoshiro256** seeded through splitmix64 --------------------------- */

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void fu_rng_seed(fu_rng *r, uint64_t seed) {
  uint64_t sm = seed;
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&sm);
  r->has_spare = false;
  r->spare = 0;
}

uint64_t fu_rng_next(fu_rng *r) {
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double fu_rng_uniform(fu_rng *r) { return (double)(fu_rng_next(r) >> 11) * 0x1.0p-53; }

double fu_rng_normal(fu_rng *r) {
  if (r->has_spare) {
    r->has_spare = false;
    return r->spare;
  }
  double u1 = 1.0 - fu_rng_uniform(r); /* (0, 1]: log is finite */
  double u2 = fu_rng_uniform(r);
  double rad = sqrt(-2.0 * log(u1));
  double th = 6.283185307179586 * u2;
  r->spare = rad * sin(th);
  r->has_spare = true;
  return rad * cos(th);
}

/* Uniform in [low, high) by rejection, so no value is favoured. */
int64_t fu_rng_int(fu_rng *r, int64_t low, int64_t high) {
  if (high <= low) return low;
  uint64_t range = (uint64_t)high - (uint64_t)low;
  uint64_t threshold = (0 - range) % range; /* 2^64 mod range */
  uint64_t x;
  do x = fu_rng_next(r);
  while (x < threshold);
  return (int64_t)((uint64_t)low + x % range);
}

/* The stream of input number `pos`: distinct inputs get distinct data even
 * with the same seed. */
static void seed_for_input(fu_rng *r, uint64_t seed, uint32_t pos) {
  fu_rng_seed(r, seed ^ ((uint64_t)(pos + 1) * UINT64_C(0x9E3779B97F4A7C15)));
}

/* ---- what each input is made from --------------------------------------------- */

typedef struct input_plan {
  fu_op *op;
  fu_init_kind init;     /* resolved kind (overrides applied; NONE becomes RANDN) */
  uint64_t seed;
  int64_t low, high;
  const char *npy_path;  /* resolved path */
  char *path_buf;        /* owned copy when joined with base_dir */
  size_t path_len;
  fu_host_tensor npy;    /* loaded .npy data */
  bool explicit_random;  /* random data asked for (override or --random) */
  bool nonzero;          /* the example's nonzero: a drawn 0 becomes 1 or the smallest normal */
} input_plan;

static fu_status input_error(fu_diag_engine *diag, const fu_op *op, fu_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static fu_status input_error(fu_diag_engine *diag, const fu_op *op, fu_status st, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fu_interp_vstr vs;
  fu_error(diag, op->loc, "input %s: %s", fu_interp_value_str(&vs, op->results[0]), msg);
  return st;
}

static bool name_matches(const char *want, const fu_value *v) {
  if (!v->name) return false;
  if (want[0] == '%') want++;
  return strcmp(want, v->name) == 0;
}

/* True when `dir` (resolved) holds `path` (resolved), at any depth. */
static bool path_inside(const char *path, const char *dir) {
  size_t n = strlen(dir);
  if (n == 1 && dir[0] == '/') return true;
  return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* A .fir file can name any path in npy="...": one mailed as a repro must
 * not read /etc or a device, so the file it names must lie, once symbolic
 * links and `..` are resolved, in the .fir file's folder (or under it), in
 * o->data_dir, or anywhere with o->allow_any_path.  A path that does not
 * resolve is left to the reader, which reports it. */
static fu_status check_confined(const fu_input_options *o, const fu_op *op, const char *path, fu_diag_engine *diag) {
  if (o->allow_any_path) return FU_OK;
  char real[PATH_MAX], root[PATH_MAX];
  if (!realpath(path, real)) return FU_OK;
  const char *base = o->base_dir && o->base_dir[0] ? o->base_dir : ".";
  if (realpath(base, root) && path_inside(real, root)) return FU_OK;
  if (o->data_dir && realpath(o->data_dir, root) && path_inside(real, root)) return FU_OK;
  return input_error(diag, op, FU_ERR_INVALID_ARG,
                     "npy=\"%s\" resolves to '%s', outside the folder of the .fir file ('%s')%s%s%s; allow it with "
                     "--data-dir=DIR or --allow-any-path",
                     op->u.input.example.npy_path, real, base, o->data_dir ? " and the data folder ('" : "",
                     o->data_dir ? o->data_dir : "", o->data_dir ? "')" : "");
}

/* Reads the .npy file of input `op`, checking its header against the
 * declared type before any data are read. */
static fu_status load_npy(const fu_op *op, const char *path, fu_allocator alloc, fu_diag_engine *diag,
                          fu_host_tensor *out) {
  const fu_type *t = &op->results[0]->type;
  int64_t extents[FU_MAX_RANK];
  fu_npy_expect e = {t->dtype, -1, NULL, -1, NULL};
  if (fu_type_is_scalar(t)) {
    e.numel = 1;
  } else if (t->rank <= FU_MAX_RANK) {
    e.rank = t->rank;
    e.extents = extents;
    for (int32_t d = 0; d < t->rank; d++) extents[d] = fu_extent_is_const(t->dims[d]) ? t->dims[d].value : -1;
  }
  fu_interp_vstr vs;
  e.what = fu_interp_value_str(&vs, op->results[0]);
  return fu_npy_read_expect(path, &e, alloc, diag, out);
}

/* Resolve overrides and the example attributes into a plan per input. */
static fu_status plan_inputs(fu_fusion *f, const fu_input_options *o, fu_allocator alloc, fu_diag_engine *diag,
                             input_plan *plans, fu_op **ops, uint32_t n) {
  for (uint32_t i = 0; i < o->n_overrides; i++) {
    bool found = false;
    for (uint32_t j = 0; j < n && !found; j++) found = name_matches(o->overrides[i].name, ops[j]->results[0]);
    if (!found) {
      const char *nm = o->overrides[i].name;
      fu_error(diag, f->loc, "fusion '@%s' has no input named '%%%s'", f->name ? f->name : "?",
               nm[0] == '%' ? nm + 1 : nm);
      return FU_ERR_INVALID_ARG;
    }
  }
  for (uint32_t j = 0; j < n; j++) {
    input_plan *p = &plans[j];
    fu_op *op = ops[j];
    const fu_example *ex = &op->u.input.example;
    p->op = op;
    p->init = ex->init;
    p->seed = ex->seed;
    p->low = ex->low;
    p->high = ex->high;
    p->nonzero = ex->nonzero;
    p->npy_path = ex->npy_path;
    bool overridden = false;
    for (uint32_t i = 0; i < o->n_overrides; i++) {
      const fu_input_override *ov = &o->overrides[i];
      if (!name_matches(ov->name, op->results[0])) continue;
      overridden = true;
      p->npy_path = NULL;
      switch (ov->source) {
      case FU_INPUT_DEFAULT: overridden = false; p->npy_path = ex->npy_path; break;
      case FU_INPUT_RANDOM:
        p->init = FU_INIT_RANDN;
        p->seed = o->seed;
        p->explicit_random = true;
        break;
      case FU_INPUT_ZEROS: p->init = FU_INIT_ZEROS; break;
      case FU_INPUT_ONES: p->init = FU_INIT_ONES; break;
      case FU_INPUT_NPY:
        p->init = FU_INIT_NPY;
        p->npy_path = ov->npy_path;
        break;
      }
    }
    if (p->init == FU_INIT_NONE) {
      p->init = FU_INIT_RANDN;
      p->seed = o->seed;
    }
    if (o->random) p->explicit_random = true;
    if (p->init == FU_INIT_NPY && !overridden) {
      if (!p->npy_path) return input_error(diag, op, FU_ERR_INVALID_ARG, "npy example without a path");
      /* Paths in the file are relative to the file. */
      if (p->npy_path[0] != '/' && o->base_dir && o->base_dir[0]) {
        size_t len = strlen(o->base_dir) + strlen(p->npy_path) + 2;
        p->path_buf = fu_mem_alloc(&alloc, len);
        if (!p->path_buf) return input_error(diag, op, FU_ERR_NOMEM, "out of memory");
        p->path_len = len;
        snprintf(p->path_buf, len, "%s/%s", o->base_dir, p->npy_path);
        p->npy_path = p->path_buf;
      }
      fu_status st = check_confined(o, op, p->npy_path, diag);
      if (st != FU_OK) return st;
    }
    if (p->init == FU_INIT_NPY) {
      if (!p->npy_path) return input_error(diag, op, FU_ERR_INVALID_ARG, "no .npy path given");
      fu_status st = load_npy(op, p->npy_path, alloc, diag, &p->npy);
      if (st != FU_OK) {
        fu_interp_vstr vs;
        fu_note(diag, op->loc, "while loading example data for input %s", fu_interp_value_str(&vs, op->results[0]));
        return st;
      }
    }
    if (p->init == FU_INIT_RANDINT && p->high <= p->low)
      return input_error(diag, op, FU_ERR_INVALID_ARG, "randint needs low < high, got [%lld, %lld)",
                         (long long)p->low, (long long)p->high);
  }
  return FU_OK;
}

/* Bind or check one concrete size against a declared extent. */
static fu_status bind_dim(fu_bindings *b, const fu_op *op, int32_t d, int64_t size, const char *from,
                          fu_diag_engine *diag) {
  fu_extent e = op->results[0]->type.dims[d];
  if (fu_extent_is_const(e)) {
    if (e.value != size)
      return input_error(diag, op, FU_ERR_INVALID_ARG, "%s has size %lld in dim %d, but the type says %lld", from,
                         (long long)size, d, (long long)e.value);
    return FU_OK;
  }
  const fu_sym_binding *s = fu_bindings_find(b, e.sym);
  if (!s) {
    if (fu_bindings_add(b, e.sym, size, op->results[0], d) != FU_OK)
      return input_error(diag, op, FU_ERR_NOMEM, "out of memory");
    return FU_OK;
  }
  if (s->value != size) {
    fu_interp_vstr vs;
    return input_error(diag, op, FU_ERR_INVALID_ARG,
                       "%s gives symbol '%s' size %lld in dim %d, but %s bound it to %lld", from, e.sym,
                       (long long)size, d, s->from ? fu_interp_value_str(&vs, s->from) : "an earlier input",
                       (long long)s->value);
  }
  return FU_OK;
}

/* First pass: sizes stated by example_shape or by a .npy file. */
static fu_status bind_stated_sizes(input_plan *p, fu_bindings *b, fu_diag_engine *diag) {
  const fu_op *op = p->op;
  const fu_type *t = &op->results[0]->type;
  const fu_example *ex = &op->u.input.example;
  if (t->rank < 0) return FU_OK;
  if (ex->rank >= 0 && ex->shape) {
    if (ex->rank != t->rank)
      return input_error(diag, op, FU_ERR_INVALID_ARG, "example_shape has %d sizes for a rank-%d tensor", ex->rank,
                         t->rank);
    for (int32_t d = 0; d < t->rank; d++) {
      if (ex->shape[d] < 0) return input_error(diag, op, FU_ERR_INVALID_ARG, "example_shape has a negative size");
      fu_status st = bind_dim(b, op, d, ex->shape[d], "example_shape", diag);
      if (st != FU_OK) return st;
    }
  }
  if (p->init == FU_INIT_NPY) {
    if (p->npy.rank != t->rank)
      return input_error(diag, op, FU_ERR_INVALID_ARG, "the .npy file '%s' has rank %d, the input has rank %d",
                         p->npy_path, p->npy.rank, t->rank);
    for (int32_t d = 0; d < t->rank; d++) {
      fu_status st = bind_dim(b, op, d, p->npy.shape[d], "the .npy file", diag);
      if (st != FU_OK) return st;
    }
  }
  return FU_OK;
}

/* Strides for the input: example_strides, else the layout, else row-major.
 * stride_order + contiguity pack dims from the innermost (lowest order)
 * outwards; a dim marked non-contiguous gets twice its packed stride, a
 * broadcast dim (contiguity none) stride 0. */
static fu_status input_strides(const input_plan *p, const int64_t *shape, int64_t *strides, fu_diag_engine *diag) {
  const fu_op *op = p->op;
  int32_t rank = op->results[0]->type.rank;
  const fu_example *ex = &op->u.input.example;
  const fu_layout *lay = &op->u.input.layout;
  if (ex->strides) {
    for (int32_t d = 0; d < rank; d++) {
      if (ex->strides[d] < 0) return input_error(diag, op, FU_ERR_INVALID_ARG, "example_strides has a negative stride");
      strides[d] = ex->strides[d];
    }
    return FU_OK;
  }
  if (lay->strides) {
    for (int32_t d = 0; d < rank; d++) {
      if (lay->strides[d] < 0) return input_error(diag, op, FU_ERR_INVALID_ARG, "strides has a negative stride");
      strides[d] = lay->strides[d];
    }
    return FU_OK;
  }
  int32_t order[FU_MAX_RANK]; /* order[k] = dim with the k-th smallest stride */
  if (lay->stride_order) {
    bool seen[FU_MAX_RANK] = {false};
    for (int32_t d = 0; d < rank; d++) {
      int32_t k = lay->stride_order[d];
      if (k < 0 || k >= rank || seen[k])
        return input_error(diag, op, FU_ERR_INVALID_ARG, "stride_order is not a permutation of 0..%d", rank - 1);
      seen[k] = true;
      order[k] = d;
    }
  } else {
    for (int32_t k = 0; k < rank; k++) order[k] = rank - 1 - k;
  }
  int64_t packed = 1;
  for (int32_t k = 0; k < rank; k++) {
    int32_t d = order[k];
    int8_t c = lay->contiguity ? lay->contiguity[d] : FU_CONTIG_TRUE;
    if (c == FU_CONTIG_NONE) {
      strides[d] = 0;
      continue;
    }
    int64_t s = c == FU_CONTIG_FALSE ? packed * 2 : packed;
    strides[d] = s;
    int64_t ext = shape[d] > 0 ? shape[d] : 1;
    if (s > INT64_MAX / ext) return input_error(diag, op, FU_ERR_INVALID_ARG, "the layout's strides overflow");
    packed = s * ext;
  }
  return FU_OK;
}

/* torch.finfo(dtype).tiny: what make_tensor(exclude_zero=True) puts in
 * place of a drawn zero. */
static double smallest_normal(fu_dtype dt) {
  switch (dt) {
  case FU_DT_F64: return 2.2250738585072014e-308;
  case FU_DT_F16: return 6.103515625e-05;
  default: return 1.1754943508222875e-38; /* f32 and bf16 */
  }
}

/* Is f zero once stored as dt?  At most half the smallest subnormal rounds
 * to zero (ties to even). */
static bool rounds_to_zero(fu_dtype dt, double f) {
  double half_min = dt == FU_DT_F64 ? 0.0 : dt == FU_DT_F16 ? 0x1p-25 : dt == FU_DT_BF16 ? 0x1p-134 : 0x1p-150;
  return fabs(f) <= half_min;
}

/* Fill a contiguous tensor in row-major order from the plan's kind. */
static void generate(const input_plan *p, uint32_t pos, fu_host_tensor *t) {
  fu_rng r;
  seed_for_input(&r, p->seed, pos);
  int64_t n = fu_host_tensor_numel(t);
  fu_dtype dt = t->dtype;
  bool fl = fu_dtype_is_float(dt), bo = fu_dtype_is_bool(dt);
  fu_chunk buf;
  size_t es = fu_dtype_size(dt);
  for (int64_t j = 0; j < n; j += FU_INTERP_CHUNK) {
    size_t m = (size_t)(n - j < FU_INTERP_CHUNK ? n - j : FU_INTERP_CHUNK);
    for (size_t k = 0; k < m; k++) {
      double f = 0;
      int64_t i = 0;
      switch (p->init) {
      case FU_INIT_ONES: f = 1, i = 1; break;
      case FU_INIT_RAND:
        if (fl) f = fu_rng_uniform(&r);
        else if (bo) i = (int64_t)(fu_rng_next(&r) >> 63);
        else i = fu_rng_int(&r, 0, 10);
        break;
      case FU_INIT_RANDINT:
        if (bo) i = (int64_t)(fu_rng_next(&r) >> 63);
        else i = fu_rng_int(&r, p->low, p->high), f = (double)i;
        break;
      case FU_INIT_VALUE: {
        const fu_scalar_value *v = &p->op->u.input.example.value;
        f = fl ? v->f : 0;
        i = bo ? v->b : fl ? 0 : v->i;
        break;
      }
      case FU_INIT_RANDN:
        if (fl) f = fu_rng_normal(&r);
        else if (bo) i = (int64_t)(fu_rng_next(&r) >> 63);
        else i = fu_rng_int(&r, -8, 9);
        break;
      default: break; /* zeros */
      }
      if (p->nonzero && (p->init == FU_INIT_RANDN || p->init == FU_INIT_RANDINT)) {
        if (fl && rounds_to_zero(dt, f)) f = smallest_normal(dt);
        if (!fl && !bo && i == 0) i = 1;
      }
      if (fl)
        buf.f64[k] = f;
      else
        buf.i64[k] = i;
    }
    fu_interp_store(dt, (char *)t->data + (size_t)j * es, 1, m, fl ? FU_CK_F64 : FU_CK_I64, &buf);
  }
}

/* randn of a float tensor on threads.  fu_rng_normal turns each pair of
 * draws into two values, the cosine one first: element 2i takes draws 2i
 * and 2i + 1 and its neighbour the sine of the same pair.  The draws are
 * made in order on the calling thread, a block at a time; the logs, roots
 * and trigonometry, which cost far more, run in parallel, each pair by
 * the very expressions fu_rng_normal uses. */
typedef struct randn_block {
  const input_plan *p;
  fu_host_tensor *t;
  const uint64_t *draws; /* 2 per pair of the block */
  int64_t first, n;      /* the block's first element, and the tensor's element count */
} randn_block;

static void randn_part(void *ctx, uint32_t part, int64_t lo, int64_t hi) {
  const randn_block *B = ctx;
  fu_dtype dt = B->t->dtype;
  size_t es = fu_dtype_size(dt);
  fu_chunk buf;
  for (int64_t q = lo; q < hi; q += FU_INTERP_CHUNK / 2) {
    int64_t pairs = hi - q < FU_INTERP_CHUNK / 2 ? hi - q : FU_INTERP_CHUNK / 2;
    int64_t e0 = B->first + 2 * q;
    size_t m = 0;
    for (int64_t k = q; k < q + pairs; k++) {
      double u1 = 1.0 - (double)(B->draws[2 * k] >> 11) * 0x1.0p-53;
      double u2 = (double)(B->draws[2 * k + 1] >> 11) * 0x1.0p-53;
      double rad = sqrt(-2.0 * log(u1));
      double th = 6.283185307179586 * u2;
      double s = rad * sin(th), c = rad * cos(th);
      buf.f64[m++] = c;
      if (e0 + (int64_t)m < B->n) buf.f64[m++] = s;
    }
    if (B->p->nonzero)
      for (size_t k = 0; k < m; k++)
        if (rounds_to_zero(dt, buf.f64[k])) buf.f64[k] = smallest_normal(dt);
    fu_interp_store(dt, (char *)B->t->data + (size_t)e0 * es, 1, m, FU_CK_F64, &buf);
  }
}

/* Pairs of draws made per block. */
#define RANDN_BLOCK_PAIRS (INT64_C(1) << 16)

/* generate() for randn floats when threads help; false (nothing done)
 * when they would not or the block buffer cannot be had. */
static bool generate_randn_par(const input_plan *p, uint32_t pos, fu_host_tensor *t, uint32_t threads,
                               fu_allocator alloc) {
  int64_t n = fu_host_tensor_numel(t);
  if (p->init != FU_INIT_RANDN || !fu_dtype_is_float(t->dtype) || fu_interp_par_parts(threads, n, FU_INTERP_GRAIN) < 2)
    return false;
  size_t bytes = (size_t)(2 * RANDN_BLOCK_PAIRS) * sizeof(uint64_t);
  uint64_t *draws = fu_mem_alloc(&alloc, bytes);
  if (!draws) return false;
  fu_rng r;
  seed_for_input(&r, p->seed, pos);
  randn_block B = {p, t, draws, 0, n};
  int64_t pairs_total = (n + 1) / 2;
  for (int64_t q0 = 0; q0 < pairs_total; q0 += RANDN_BLOCK_PAIRS) {
    int64_t pairs = pairs_total - q0 < RANDN_BLOCK_PAIRS ? pairs_total - q0 : RANDN_BLOCK_PAIRS;
    for (int64_t k = 0; k < 2 * pairs; k++) draws[k] = fu_rng_next(&r);
    B.first = 2 * q0;
    fu_interp_parallel(threads, pairs, FU_INTERP_GRAIN / 2, randn_part, &B);
  }
  fu_mem_free(&alloc, draws, bytes);
  return true;
}

static fu_status make_scalar(const input_plan *p, uint32_t pos, fu_arg *out, fu_allocator alloc,
                             fu_diag_engine *diag) {
  fu_dtype dt = p->op->results[0]->type.dtype;
  fu_host_tensor one;
  fu_status st;
  if (p->init == FU_INIT_NPY) {
    if (fu_host_tensor_numel(&p->npy) != 1)
      return input_error(diag, p->op, FU_ERR_INVALID_ARG, "the .npy file for a scalar must hold one element, not %lld",
                         (long long)fu_host_tensor_numel(&p->npy));
    one = p->npy;
  } else {
    st = fu_host_tensor_alloc(&one, alloc, dt, 0, NULL);
    if (st != FU_OK) return input_error(diag, p->op, st, "out of memory");
    generate(p, pos, &one);
  }
  if (fu_dtype_is_float(dt)) {
    *out = fu_arg_scalar_f(dt, fu_host_tensor_get_flat(&one, 0));
  } else {
    int64_t v = fu_host_tensor_get_flat_i64(&one, 0);
    *out = dt == FU_DT_BOOL ? fu_arg_scalar_b(v != 0) : fu_arg_scalar_i(dt, v);
  }
  if (p->init != FU_INIT_NPY) fu_host_tensor_free(&one);
  return FU_OK;
}

static fu_status make_tensor(const input_plan *p, uint32_t pos, fu_bindings *b, const fu_input_options *o,
                             fu_arg *out, fu_allocator alloc, fu_diag_engine *diag) {
  const fu_op *op = p->op;
  const fu_type *t = &op->results[0]->type;
  int64_t shape[FU_MAX_RANK], strides[FU_MAX_RANK];
  if (t->rank > FU_MAX_RANK || (t->rank > 0 && !t->dims))
    return input_error(diag, op, FU_ERR_INVALID_ARG, "malformed type");
  for (int32_t d = 0; d < t->rank; d++) {
    fu_extent e = t->dims[d];
    if (fu_extent_is_const(e)) {
      shape[d] = e.value;
      continue;
    }
    if (fu_bindings_lookup(b, e.sym, &shape[d])) continue;
    if (!p->explicit_random)
      return input_error(diag, op, FU_ERR_INVALID_ARG,
                         "symbol '%s' (dim %d) has no size: give the input example_shape=[...] or npy=\"...\", or "
                         "ask for random inputs (fuser-run --random) to use %lld",
                         e.sym, d, (long long)(o->default_extent > 0 ? o->default_extent : FU_DEFAULT_EXTENT));
    shape[d] = o->default_extent > 0 ? o->default_extent : FU_DEFAULT_EXTENT;
    if (fu_bindings_add(b, e.sym, shape[d], op->results[0], d) != FU_OK)
      return input_error(diag, op, FU_ERR_NOMEM, "out of memory");
  }
  fu_status st = input_strides(p, shape, strides, diag);
  if (st != FU_OK) return st;
  fu_host_tensor dense, target;
  st = fu_host_tensor_alloc(&dense, alloc, t->dtype, t->rank, shape);
  if (st != FU_OK)
    return input_error(diag, op, st, st == FU_ERR_NOMEM ? "out of memory (or size overflow)" : "bad shape");
  if (p->init == FU_INIT_NPY)
    st = fu_interp_copy_into(&dense, &p->npy, o->threads);
  else if (!generate_randn_par(p, pos, &dense, o->threads, alloc))
    generate(p, pos, &dense);
  if (st != FU_OK) {
    fu_host_tensor_free(&dense);
    return input_error(diag, op, st, "copy of the .npy data failed");
  }
  int64_t cstr[FU_MAX_RANK];
  fu_contiguous_strides(t->rank, shape, cstr);
  /* The same addresses as row-major (strides differ at most on extent-1
   * dims, and so address nothing): the dense data with the stated strides
   * (kept exactly: a stated 0 stride on an extent-1 dim stays 0). */
  bool same = true;
  for (int32_t d = 0; d < t->rank; d++)
    if (strides[d] != cstr[d] && shape[d] != 1) same = false;
  if (same) {
    for (int32_t d = 0; d < t->rank; d++) dense.strides[d] = strides[d];
    *out = fu_arg_tensor(dense);
    return FU_OK;
  }
  st = fu_host_tensor_alloc_strided(&target, alloc, t->dtype, t->rank, shape, strides);
  if (st != FU_OK) {
    fu_host_tensor_free(&dense);
    return input_error(diag, op, st, "out of memory (or size overflow) for strides");
  }
  /* Gaps between the elements hold NaN, so a kernel reading them shows
   * (a 0-element tensor has no room for one). */
  if (fu_dtype_is_float(t->dtype) && target.nbytes >= fu_dtype_size(t->dtype)) {
    size_t es = fu_dtype_size(t->dtype);
    double nan = NAN;
    fu_interp_store(t->dtype, target.data, 1, 1, FU_CK_F64, &nan);
    for (size_t k = 1; k < target.nbytes / es; k++)
      memcpy((char *)target.data + k * es, target.data, es);
  }
  st = fu_interp_copy_into(&target, &dense, o->threads);
  fu_host_tensor_free(&dense);
  if (st != FU_OK) {
    fu_host_tensor_free(&target);
    return input_error(diag, op, st, "copy into the strided layout failed");
  }
  *out = fu_arg_tensor(target);
  return FU_OK;
}

fu_status fu_interp_make_inputs(fu_fusion *f, const fu_input_options *opts, fu_allocator alloc,
                                fu_diag_engine *diag, fu_arg **inputs, uint32_t *n_inputs) {
  *inputs = NULL;
  *n_inputs = 0;
  fu_input_options defaults;
  memset(&defaults, 0, sizeof defaults);
  const fu_input_options *o = opts ? opts : &defaults;
  uint32_t n = fu_interp_inputs_of(f, NULL, 0);
  uint32_t cap = n ? n : 1;
  fu_op **ops = fu_mem_calloc(&alloc, cap, sizeof *ops);
  input_plan *plans = fu_mem_calloc(&alloc, cap, sizeof *plans);
  fu_arg *args = fu_mem_calloc(&alloc, cap, sizeof *args);
  fu_bindings b;
  fu_bindings_init(&b, alloc);
  fu_status st = FU_OK;
  if (!ops || !plans || !args) {
    fu_error(diag, f->loc, "out of memory making inputs");
    st = FU_ERR_NOMEM;
  }
  if (st == FU_OK) {
    fu_interp_inputs_of(f, ops, n);
    for (uint32_t j = 0; j < n && st == FU_OK; j++)
      if (ops[j]->n_results != 1) st = input_error(diag, ops[j], FU_ERR_INVALID_ARG, "an input needs one result");
  }
  if (st == FU_OK) st = plan_inputs(f, o, alloc, diag, plans, ops, n);
  for (uint32_t j = 0; j < n && st == FU_OK; j++) st = bind_stated_sizes(&plans[j], &b, diag);
  for (uint32_t j = 0; j < n && st == FU_OK; j++) {
    if (fu_type_is_scalar(&ops[j]->results[0]->type))
      st = make_scalar(&plans[j], j, &args[j], alloc, diag);
    else
      st = make_tensor(&plans[j], j, &b, o, &args[j], alloc, diag);
  }
  if (plans)
    for (uint32_t j = 0; j < n; j++) {
      fu_host_tensor_free(&plans[j].npy);
      if (plans[j].path_buf) fu_mem_free(&alloc, plans[j].path_buf, plans[j].path_len);
    }
  fu_mem_free(&alloc, plans, (size_t)cap * sizeof *plans);
  fu_mem_free(&alloc, ops, (size_t)cap * sizeof *ops);
  fu_bindings_free(&b);
  if (st != FU_OK) {
    fu_args_free(args, n, alloc);
    return st;
  }
  *inputs = args;
  *n_inputs = n;
  return FU_OK;
}
