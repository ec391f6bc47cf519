/* fuser: the `inputs = [...]` list of a repro script, as example data.
 *
 * Repro scripts build their inputs with a handful of torch factories and
 * view methods.  This file evaluates those expressions symbolically (sizes,
 * strides, dtype, how the data is made) without any tensor library, so the
 * imported .fir file is a complete repro. */
#include <math.h>
#include <string.h>

#include "fuser/frontend.h"

typedef struct evaluator {
  fu_arena *arena;
  fu_diag_engine *diag;
} evaluator;

/* "a.b.c" for a chain of names and attributes, into buf; false otherwise. */
static bool dotted(const fu_py_expr *e, char *buf, size_t cap) {
  if (e->kind == FU_PY_E_NAME) return (size_t)snprintf(buf, cap, "%s", e->u.name) < cap;
  if (e->kind != FU_PY_E_ATTR || !dotted(e->u.attr.base, buf, cap)) return false;
  size_t n = strlen(buf);
  return (size_t)snprintf(buf + n, cap - n, ".%s", e->u.attr.name) < cap - n;
}

static fu_status unsupported_at(evaluator *ev, fu_loc loc, const char *what) {
  fu_error(ev->diag, loc, "unsupported input expression '%s'", what);
  return FU_ERR_UNSUPPORTED;
}

/* A Python number, possibly negated; *is_float tells which. */
static bool eval_number(const fu_py_expr *e, double *f, int64_t *i, bool *is_float) {
  if (e->kind == FU_PY_E_INT) {
    *i = e->u.i;
    *f = (double)e->u.i;
    *is_float = false;
    return true;
  }
  if (e->kind == FU_PY_E_FLOAT) {
    *f = e->u.f;
    *is_float = true;
    return true;
  }
  if (e->kind == FU_PY_E_UNARY && eval_number(e->u.unary.operand, f, i, is_float)) {
    if (e->u.unary.op == '-') {
      *f = -*f;
      *i = -*i;
    }
    return true;
  }
  if (e->kind == FU_PY_E_CALL && e->u.call.callee->kind == FU_PY_E_NAME &&
      strcmp(e->u.call.callee->u.name, "float") == 0 && e->u.call.n_args == 1 && e->u.call.n_kwargs == 0 &&
      e->u.call.args[0]->kind == FU_PY_E_STRING) {
    const char *s = e->u.call.args[0]->u.str;
    *is_float = true;
    if (strcmp(s, "inf") == 0 || strcmp(s, "+inf") == 0)
      *f = INFINITY;
    else if (strcmp(s, "-inf") == 0)
      *f = -INFINITY;
    else if (strcmp(s, "nan") == 0)
      *f = NAN;
    else
      return false;
    return true;
  }
  return false;
}

/* An integer: a literal, or + - * // of integers (sizes written as 2 * 32),
 * without overflow. */
static bool eval_int(const fu_py_expr *e, int64_t *out) {
  if (e->kind == FU_PY_E_BINARY) {
    int64_t l, r;
    const char *op = e->u.binary.op;
    if (!eval_int(e->u.binary.lhs, &l) || !eval_int(e->u.binary.rhs, &r)) return false;
    if (strcmp(op, "+") == 0) return !__builtin_add_overflow(l, r, out);
    if (strcmp(op, "-") == 0) return !__builtin_sub_overflow(l, r, out);
    if (strcmp(op, "*") == 0) return !__builtin_mul_overflow(l, r, out);
    if (strcmp(op, "//") == 0 && r > 0 && l >= 0) return *out = l / r, true;
    return false;
  }
  double f;
  bool is_float;
  return eval_number(e, &f, out, &is_float) && !is_float;
}

/* Sizes given as separate ints, or one list/tuple (torch accepts both). */
static fu_status eval_sizes(evaluator *ev, fu_py_expr *const *args, uint32_t n, fu_loc loc, int32_t *rank,
                            int64_t *shape) {
  if (n == 1 && (args[0]->kind == FU_PY_E_LIST || args[0]->kind == FU_PY_E_TUPLE)) {
    const fu_py_expr *list = args[0];
    args = list->u.list.items;
    n = list->u.list.n;
  }
  if (n > FU_MAX_RANK) {
    fu_error(ev->diag, loc, "too many dimensions (at most %d)", FU_MAX_RANK);
    return FU_ERR_UNSUPPORTED;
  }
  for (uint32_t i = 0; i < n; i++) {
    if (!eval_int(args[i], &shape[i]) || shape[i] < 0) {
      fu_error(ev->diag, args[i]->loc, "expected a non-negative integer size");
      return FU_ERR_UNSUPPORTED;
    }
  }
  *rank = (int32_t)n;
  return FU_OK;
}

static fu_status eval_size_list(evaluator *ev, const fu_py_expr *e, int32_t *rank, int64_t *shape) {
  if (e->kind == FU_PY_E_LIST || e->kind == FU_PY_E_TUPLE) {
    if (e->u.list.n > FU_MAX_RANK) {
      fu_error(ev->diag, e->loc, "too many dimensions (at most %d)", FU_MAX_RANK);
      return FU_ERR_UNSUPPORTED;
    }
    for (uint32_t i = 0; i < e->u.list.n; i++)
      if (!eval_int(e->u.list.items[i], &shape[i])) {
        fu_error(ev->diag, e->u.list.items[i]->loc, "expected an integer");
        return FU_ERR_UNSUPPORTED;
      }
    *rank = (int32_t)e->u.list.n;
    return FU_OK;
  }
  int64_t v;
  if (eval_int(e, &v)) { /* a single int is a 1-D size */
    shape[0] = v;
    *rank = 1;
    return FU_OK;
  }
  fu_error(ev->diag, e->loc, "expected a list or tuple of integers");
  return FU_ERR_UNSUPPORTED;
}

/* Row-major strides; a product past 2^63-1 saturates (the verifier
 * refuses such an example by its byte size, with a location). */
static void contiguous_strides(int32_t rank, const int64_t *shape, int64_t *strides) {
  int64_t s = 1;
  for (int32_t i = rank - 1; i >= 0; i--) {
    strides[i] = s;
    if (__builtin_mul_overflow(s, shape[i] > 0 ? shape[i] : 1, &s)) s = INT64_MAX;
  }
}

static fu_status eval_torch_dtype(evaluator *ev, const fu_py_expr *e, fu_dtype *out) {
  char name[128];
  if (!dotted(e, name, sizeof name) || strncmp(name, "torch.", 6) != 0) {
    fu_error(ev->diag, e->loc, "expected a torch dtype such as torch.float32");
    return FU_ERR_UNSUPPORTED;
  }
  bool known, supported;
  fu_dtype t = fu_py_torch_dtype_from_name(name + 6, &known, &supported);
  if (!known) {
    fu_error(ev->diag, e->loc, "unknown torch dtype '%s'", name);
    return FU_ERR_UNSUPPORTED;
  }
  if (!supported) {
    fu_error(ev->diag, e->loc, "unsupported dtype '%s'", name);
    return FU_ERR_UNSUPPORTED;
  }
  *out = t;
  return FU_OK;
}

static bool is_dtype_expr(const fu_py_expr *e) {
  char name[128];
  if (!dotted(e, name, sizeof name) || strncmp(name, "torch.", 6) != 0) return false;
  bool known;
  fu_py_torch_dtype_from_name(name + 6, &known, NULL);
  return known;
}

/* Keyword arguments that a factory or method may take and that do not
 * change the data: device placement, autograd, memory pinning. */
static bool harmless_kwarg(const char *name) {
  return strcmp(name, "device") == 0 || strcmp(name, "requires_grad") == 0 || strcmp(name, "pin_memory") == 0 ||
         strcmp(name, "layout") == 0 || strcmp(name, "non_blocking") == 0 || strcmp(name, "memory_format") == 0;
}

/* Apply dtype=/device=/... keyword arguments; `extra` lists the other
 * accepted names, whose values the caller reads itself. */
static fu_status take_kwargs(evaluator *ev, const fu_py_expr *call, const char *what, const char *const *extra,
                             fu_py_example_spec *spec) {
  for (uint32_t k = 0; k < call->u.call.n_kwargs; k++) {
    const fu_py_kwarg *kw = &call->u.call.kwargs[k];
    if (strcmp(kw->name, "dtype") == 0) {
      fu_status st = eval_torch_dtype(ev, kw->value, &spec->dtype);
      if (st != FU_OK) return st;
      spec->dtype_given = true;
      continue;
    }
    if (harmless_kwarg(kw->name)) continue;
    bool ok = false;
    for (const char *const *x = extra; x && *x; x++) ok |= strcmp(*x, kw->name) == 0;
    if (!ok) {
      fu_error(ev->diag, kw->loc, "unsupported keyword argument '%s' for '%s'", kw->name, what);
      return FU_ERR_UNSUPPORTED;
    }
  }
  return FU_OK;
}

static const fu_py_expr *kwarg(const fu_py_expr *call, const char *name) {
  for (uint32_t k = 0; k < call->u.call.n_kwargs; k++)
    if (strcmp(call->u.call.kwargs[k].name, name) == 0) return call->u.call.kwargs[k].value;
  return NULL;
}

static fu_status eval_tensor(evaluator *ev, const fu_py_expr *e, fu_py_example_spec *spec);

/* torch.<factory>(...) */
static fu_status eval_factory(evaluator *ev, const fu_py_expr *call, const char *name, fu_py_example_spec *spec) {
  fu_py_expr *const *args = call->u.call.args;
  uint32_t n = call->u.call.n_args;
  fu_status st;
  spec->dtype = FU_DT_F32;
  if (strcmp(name, "torch.randn") == 0 || strcmp(name, "torch.rand") == 0 || strcmp(name, "torch.zeros") == 0 ||
      strcmp(name, "torch.ones") == 0 || strcmp(name, "torch.empty") == 0) {
    static const char *const extra[] = {"size", "generator", NULL};
    if ((st = take_kwargs(ev, call, name, extra, spec)) != FU_OK) return st;
    const fu_py_expr *size = kwarg(call, "size");
    if (size && n) {
      fu_error(ev->diag, size->loc, "'%s' got sizes twice", name);
      return FU_ERR_UNSUPPORTED;
    }
    st = size ? eval_size_list(ev, size, &spec->rank, spec->shape)
              : eval_sizes(ev, args, n, call->loc, &spec->rank, spec->shape);
    if (st != FU_OK) return st;
    spec->init = name[6] == 'r'                    ? (name[10] == 'n' ? FU_INIT_RANDN : FU_INIT_RAND)
                 : strcmp(name, "torch.ones") == 0 ? FU_INIT_ONES
                                                   : FU_INIT_ZEROS;
    if (spec->init == FU_INIT_RANDN || spec->init == FU_INIT_RAND) {
      if (spec->dtype_given && !fu_dtype_is_float(spec->dtype)) {
        fu_error(ev->diag, call->loc, "'%s' makes floating-point data, not %s", name,
                 fu_py_torch_dtype_name(spec->dtype));
        return FU_ERR_UNSUPPORTED;
      }
    }
    return FU_OK;
  }
  if (strcmp(name, "torch.randint") == 0) {
    static const char *const extra[] = {"low", "high", "size", "generator", NULL};
    if ((st = take_kwargs(ev, call, name, extra, spec)) != FU_OK) return st;
    if (!spec->dtype_given) spec->dtype = FU_DT_I64;
    const fu_py_expr *low = kwarg(call, "low"), *high = kwarg(call, "high"), *size = kwarg(call, "size");
    /* randint(high, size) or randint(low, high, size) */
    if (n == 3) {
      low = args[0];
      high = args[1];
      size = args[2];
    } else if (n == 2) {
      if (size) {
        low = args[0];
        high = args[1];
      } else {
        high = args[0];
        size = args[1];
      }
    } else if (n == 1) {
      if (size)
        high = args[0];
      else if (high)
        size = args[0];
    }
    if (!high || !size) {
      fu_error(ev->diag, call->loc, "'torch.randint' needs a high bound and a size");
      return FU_ERR_UNSUPPORTED;
    }
    spec->low = 0;
    if (low && !eval_int(low, &spec->low)) {
      fu_error(ev->diag, low->loc, "expected an integer");
      return FU_ERR_UNSUPPORTED;
    }
    if (!eval_int(high, &spec->high)) {
      fu_error(ev->diag, high->loc, "expected an integer");
      return FU_ERR_UNSUPPORTED;
    }
    if (spec->high <= spec->low) {
      fu_error(ev->diag, call->loc, "'torch.randint' needs low < high");
      return FU_ERR_UNSUPPORTED;
    }
    spec->init = FU_INIT_RANDINT;
    return eval_size_list(ev, size, &spec->rank, spec->shape);
  }
  if (strcmp(name, "torch.testing.make_tensor") == 0) {
    static const char *const extra[] = {"low", "high", "noncontiguous", "exclude_zero", NULL};
    if ((st = take_kwargs(ev, call, name, extra, spec)) != FU_OK) return st;
    if (!spec->dtype_given) {
      fu_error(ev->diag, call->loc, "'torch.testing.make_tensor' needs dtype=");
      return FU_ERR_UNSUPPORTED;
    }
    const fu_py_expr *nc = kwarg(call, "noncontiguous");
    if (nc && !(nc->kind == FU_PY_E_BOOL && !nc->u.b)) {
      fu_error(ev->diag, nc->loc, "unsupported keyword argument 'noncontiguous' for '%s'", name);
      return FU_ERR_UNSUPPORTED;
    }
    if ((st = eval_sizes(ev, args, n, call->loc, &spec->rank, spec->shape)) != FU_OK) return st;
    const fu_py_expr *low = kwarg(call, "low"), *high = kwarg(call, "high");
    if ((low || high) && !fu_dtype_is_float(spec->dtype) && !fu_dtype_is_bool(spec->dtype)) {
      spec->low = -9;
      spec->high = 10;
      if (low && !eval_int(low, &spec->low)) return unsupported_at(ev, low->loc, "low");
      if (high && !eval_int(high, &spec->high)) return unsupported_at(ev, high->loc, "high");
      spec->init = FU_INIT_RANDINT;
    } else {
      spec->init = FU_INIT_RANDN;
    }
    const fu_py_expr *ez = kwarg(call, "exclude_zero");
    if (ez && ez->kind != FU_PY_E_BOOL) return unsupported_at(ev, ez->loc, "exclude_zero");
    spec->nonzero = ez && ez->u.b;
    return FU_OK;
  }
  if (strcmp(name, "torch.empty_strided") == 0) {
    if ((st = take_kwargs(ev, call, name, NULL, spec)) != FU_OK) return st;
    if (n != 2) {
      fu_error(ev->diag, call->loc, "'torch.empty_strided' takes a size and a stride");
      return FU_ERR_UNSUPPORTED;
    }
    int32_t srank = 0;
    if ((st = eval_size_list(ev, args[0], &spec->rank, spec->shape)) != FU_OK) return st;
    if ((st = eval_size_list(ev, args[1], &srank, spec->strides)) != FU_OK) return st;
    if (srank != spec->rank) {
      fu_error(ev->diag, args[1]->loc, "stride has %d entries but size has %d", srank, spec->rank);
      return FU_ERR_UNSUPPORTED;
    }
    spec->has_strides = true;
    spec->init = FU_INIT_ZEROS;
    return FU_OK;
  }
  if (strcmp(name, "torch.full") == 0) {
    static const char *const extra[] = {"size", "fill_value", NULL};
    if ((st = take_kwargs(ev, call, name, extra, spec)) != FU_OK) return st;
    const fu_py_expr *size = n > 0 ? args[0] : kwarg(call, "size");
    const fu_py_expr *fill = n > 1 ? args[1] : kwarg(call, "fill_value");
    if (!size || !fill) {
      fu_error(ev->diag, call->loc, "'torch.full' needs a size and a fill value");
      return FU_ERR_UNSUPPORTED;
    }
    double f;
    int64_t i;
    bool is_float;
    if (!eval_number(fill, &f, &i, &is_float) || (f != 0.0 && f != 1.0)) {
      fu_error(ev->diag, fill->loc, "only torch.full with 0 or 1 is supported as example data");
      return FU_ERR_UNSUPPORTED;
    }
    spec->init = f == 0.0 ? FU_INIT_ZEROS : FU_INIT_ONES;
    return eval_size_list(ev, size, &spec->rank, spec->shape);
  }
  if (strcmp(name, "torch.from_numpy") == 0) {
    char inner[128];
    if (n != 1 || call->u.call.n_kwargs || args[0]->kind != FU_PY_E_CALL ||
        !dotted(args[0]->u.call.callee, inner, sizeof inner) ||
        (strcmp(inner, "numpy.load") != 0 && strcmp(inner, "np.load") != 0) || args[0]->u.call.n_args != 1 ||
        args[0]->u.call.args[0]->kind != FU_PY_E_STRING) {
      fu_error(ev->diag, call->loc, "only torch.from_numpy(numpy.load(\"file.npy\")) is supported");
      return FU_ERR_UNSUPPORTED;
    }
    spec->npy_path = args[0]->u.call.args[0]->u.str;
    spec->init = FU_INIT_NPY;
    spec->rank = -1;
    spec->dtype_given = false;
    return FU_OK;
  }
  return unsupported_at(ev, call->loc, name);
}

/* `<tensor>.copy_(torch.from_numpy(numpy.load("file.npy")))`, optionally
 * with `.view(torch.bfloat16)` after from_numpy (numpy has no bf16, so its
 * data travel as <u2 bit patterns): the receiver gives the shape and the
 * strides, the file the values.  This is how a repro script that fuser-run
 * wrote rebuilds a strided input with the run's own data. */
static fu_status eval_copy_source(evaluator *ev, const fu_py_expr *call, fu_py_example_spec *spec) {
  if (call->u.call.n_args != 1 || call->u.call.n_kwargs) return unsupported_at(ev, call->loc, "copy_");
  const fu_py_expr *src = call->u.call.args[0];
  char name[128];
  if (src->kind == FU_PY_E_CALL && src->u.call.callee->kind == FU_PY_E_ATTR &&
      strcmp(src->u.call.callee->u.attr.name, "view") == 0 && src->u.call.n_args == 1 && !src->u.call.n_kwargs &&
      is_dtype_expr(src->u.call.args[0])) {
    fu_dtype dt;
    fu_status st = eval_torch_dtype(ev, src->u.call.args[0], &dt);
    if (st != FU_OK) return st;
    if (dt != FU_DT_BF16) {
      fu_error(ev->diag, src->loc, "only '.view(torch.bfloat16)' is supported on data loaded from a .npy file");
      return FU_ERR_UNSUPPORTED;
    }
    src = src->u.call.callee->u.attr.base;
  }
  if (src->kind != FU_PY_E_CALL || !dotted(src->u.call.callee, name, sizeof name) ||
      strcmp(name, "torch.from_numpy") != 0) {
    fu_error(ev->diag, src->loc, "'.copy_' takes torch.from_numpy(numpy.load(\"file.npy\")) in example data");
    return FU_ERR_UNSUPPORTED;
  }
  fu_py_example_spec data;
  memset(&data, 0, sizeof data);
  fu_status st = eval_factory(ev, src, name, &data);
  if (st != FU_OK) return st;
  spec->init = FU_INIT_NPY;
  spec->npy_path = data.npy_path;
  return FU_OK;
}

static bool normalize_dim(int64_t *d, int32_t rank) {
  if (*d < 0) *d += rank;
  return *d >= 0 && *d < rank;
}

/* <tensor>.<method>(...) */
static fu_status eval_method(evaluator *ev, const fu_py_expr *call, fu_py_example_spec *spec) {
  const fu_py_expr *callee = call->u.call.callee;
  const char *m = callee->u.attr.name;
  fu_py_expr *const *args = call->u.call.args;
  uint32_t n = call->u.call.n_args;
  fu_status st = eval_tensor(ev, callee->u.attr.base, spec);
  if (st != FU_OK) return st;
  if (!spec->has_strides && spec->rank >= 0) contiguous_strides(spec->rank, spec->shape, spec->strides);
  if (spec->rank < 0 && strcmp(m, "cuda") != 0 && strcmp(m, "to") != 0) {
    fu_error(ev->diag, callee->loc, "'.%s' on data loaded from a .npy file is not supported", m);
    return FU_ERR_UNSUPPORTED;
  }
  if (strcmp(m, "as_strided") == 0) {
    if (n < 2 || n > 3 || call->u.call.n_kwargs) return unsupported_at(ev, call->loc, "as_strided");
    int32_t r1 = 0, r2 = 0;
    int64_t shape[FU_MAX_RANK], strides[FU_MAX_RANK];
    if ((st = eval_size_list(ev, args[0], &r1, shape)) != FU_OK) return st;
    if ((st = eval_size_list(ev, args[1], &r2, strides)) != FU_OK) return st;
    int64_t offset = 0;
    if (n == 3 && (!eval_int(args[2], &offset) || offset != 0)) {
      fu_error(ev->diag, args[2]->loc, "a storage offset is not supported in example data");
      return FU_ERR_UNSUPPORTED;
    }
    if (r1 != r2) {
      fu_error(ev->diag, args[1]->loc, "stride has %d entries but size has %d", r2, r1);
      return FU_ERR_UNSUPPORTED;
    }
    /* the view must fit in the storage it is taken from */
    int64_t storage = 1, need = 1;
    bool big = false; /* checked: sizes come from the script; past 2^63-1 saturates */
    for (int32_t i = 0; i < spec->rank; i++) big |= __builtin_mul_overflow(storage, spec->shape[i], &storage);
    if (big) storage = INT64_MAX;
    for (int32_t i = 0; i < r1; i++) {
      if (strides[i] < 0) {
        fu_error(ev->diag, args[1]->loc, "negative strides are not supported");
        return FU_ERR_UNSUPPORTED;
      }
      if (shape[i] == 0) need = 0;
    }
    if (need) {
      bool over = false;
      for (int32_t i = 0; i < r1; i++) {
        int64_t span;
        over |= __builtin_mul_overflow(shape[i] - 1, strides[i], &span) || __builtin_add_overflow(need, span, &need);
      }
      if (over) {
        fu_error(ev->diag, call->loc, "as_strided view needs more than 2^63-1 elements");
        return FU_ERR_UNSUPPORTED;
      }
      if (need > storage) {
        fu_error(ev->diag, call->loc, "as_strided view needs %lld elements but the tensor has %lld", (long long)need,
                 (long long)storage);
        return FU_ERR_UNSUPPORTED;
      }
    }
    spec->rank = r1;
    memcpy(spec->shape, shape, sizeof shape);
    memcpy(spec->strides, strides, sizeof strides);
    spec->has_strides = true;
  } else if (strcmp(m, "t") == 0 || strcmp(m, "transpose") == 0 || strcmp(m, "swapaxes") == 0) {
    int64_t a = 0, b = 1;
    if (m[0] == 't' && m[1] == '\0') {
      if (n || spec->rank > 2) return unsupported_at(ev, call->loc, "t");
      if (spec->rank < 2) return FU_OK;
    } else if (n != 2 || !eval_int(args[0], &a) || !eval_int(args[1], &b) || !normalize_dim(&a, spec->rank) ||
               !normalize_dim(&b, spec->rank)) {
      fu_error(ev->diag, call->loc, "'.%s' needs two dims in range", m);
      return FU_ERR_UNSUPPORTED;
    }
    int64_t t = spec->shape[a];
    spec->shape[a] = spec->shape[b];
    spec->shape[b] = t;
    t = spec->strides[a];
    spec->strides[a] = spec->strides[b];
    spec->strides[b] = t;
    spec->has_strides = true;
  } else if (strcmp(m, "permute") == 0) {
    fu_py_expr *const *items = args;
    uint32_t k = n;
    if (n == 1 && (args[0]->kind == FU_PY_E_LIST || args[0]->kind == FU_PY_E_TUPLE)) {
      items = args[0]->u.list.items;
      k = args[0]->u.list.n;
    }
    if ((int32_t)k != spec->rank) {
      fu_error(ev->diag, call->loc, "'.permute' needs %d dims", spec->rank);
      return FU_ERR_UNSUPPORTED;
    }
    int64_t shape[FU_MAX_RANK], strides[FU_MAX_RANK];
    bool seen[FU_MAX_RANK] = {false};
    for (uint32_t i = 0; i < k; i++) {
      int64_t d;
      if (!eval_int(items[i], &d) || !normalize_dim(&d, spec->rank) || seen[d]) {
        fu_error(ev->diag, items[i]->loc, "'.permute' needs a permutation of the dims");
        return FU_ERR_UNSUPPORTED;
      }
      seen[d] = true;
      shape[i] = spec->shape[d];
      strides[i] = spec->strides[d];
    }
    memcpy(spec->shape, shape, sizeof shape);
    memcpy(spec->strides, strides, sizeof strides);
    spec->has_strides = true;
  } else if (strcmp(m, "expand") == 0) {
    /* torch's expand: new leading dims and size-1 dims become stride-0
     * dims of the given size; -1 keeps a size */
    fu_py_expr *const *items = args;
    uint32_t k = n;
    if (n == 1 && (args[0]->kind == FU_PY_E_LIST || args[0]->kind == FU_PY_E_TUPLE)) {
      items = args[0]->u.list.items;
      k = args[0]->u.list.n;
    }
    if ((int32_t)k < spec->rank || k > FU_MAX_RANK || call->u.call.n_kwargs) return unsupported_at(ev, call->loc, m);
    int64_t shape[FU_MAX_RANK], strides[FU_MAX_RANK];
    uint32_t lead = k - (uint32_t)spec->rank;
    for (uint32_t i = 0; i < k; i++) {
      int64_t want;
      bool old = i >= lead;
      int64_t have = old ? spec->shape[i - lead] : 1, stride = old ? spec->strides[i - lead] : 0;
      if (!eval_int(items[i], &want) || want < -1 || (want == -1 && !old) || (have != 1 && want != -1 && want != have)) {
        fu_error(ev->diag, items[i]->loc, "'.expand' cannot make size %s from size %lld",
                 items[i]->kind == FU_PY_E_INT ? "this" : "a non-integer", (long long)have);
        return FU_ERR_UNSUPPORTED;
      }
      shape[i] = want == -1 ? have : want;
      strides[i] = have == 1 && shape[i] != 1 ? 0 : stride;
    }
    spec->rank = (int32_t)k;
    memcpy(spec->shape, shape, sizeof shape);
    memcpy(spec->strides, strides, sizeof strides);
    spec->has_strides = true;
  } else if (strcmp(m, "copy_") == 0) {
    if ((st = eval_copy_source(ev, call, spec)) != FU_OK) return st;
  } else if (strcmp(m, "contiguous") == 0) {
    spec->has_strides = false;
  } else if (strcmp(m, "cuda") == 0 || strcmp(m, "detach") == 0 || strcmp(m, "requires_grad_") == 0) {
    /* placement and autograd do not change the data */
  } else if (strcmp(m, "to") == 0) {
    for (uint32_t i = 0; i < n; i++) {
      if (is_dtype_expr(args[i])) {
        if ((st = eval_torch_dtype(ev, args[i], &spec->dtype)) != FU_OK) return st;
        spec->dtype_given = true;
      } else if (args[i]->kind != FU_PY_E_STRING) {
        return unsupported_at(ev, args[i]->loc, "to");
      }
    }
    if ((st = take_kwargs(ev, call, "to", NULL, spec)) != FU_OK) return st;
  } else if (strcmp(m, "float") == 0 || strcmp(m, "double") == 0 || strcmp(m, "half") == 0 ||
             strcmp(m, "bfloat16") == 0 || strcmp(m, "int") == 0 || strcmp(m, "long") == 0 || strcmp(m, "bool") == 0) {
    spec->dtype = fu_py_torch_dtype_from_name(m, NULL, NULL);
    spec->dtype_given = true;
  } else if (strcmp(m, "normal_") == 0 || strcmp(m, "uniform_") == 0 || strcmp(m, "zero_") == 0) {
    if (n || call->u.call.n_kwargs) return unsupported_at(ev, call->loc, m);
    spec->init = m[0] == 'n' ? FU_INIT_RANDN : m[0] == 'u' ? FU_INIT_RAND : FU_INIT_ZEROS;
  } else if (strcmp(m, "fill_") == 0) {
    int64_t v;
    if (n != 1 || !eval_int(args[0], &v) || (v != 0 && v != 1)) {
      fu_error(ev->diag, call->loc, "only .fill_(0) and .fill_(1) are supported in example data");
      return FU_ERR_UNSUPPORTED;
    }
    spec->init = v ? FU_INIT_ONES : FU_INIT_ZEROS;
  } else if (strcmp(m, "random_") == 0) {
    if (n != 2 || !eval_int(args[0], &spec->low) || !eval_int(args[1], &spec->high) || spec->high <= spec->low) {
      fu_error(ev->diag, call->loc, "'.random_' needs integer bounds low < high");
      return FU_ERR_UNSUPPORTED;
    }
    spec->init = FU_INIT_RANDINT;
  } else {
    return unsupported_at(ev, callee->loc, m);
  }
  return FU_OK;
}

static fu_status eval_tensor(evaluator *ev, const fu_py_expr *e, fu_py_example_spec *spec) {
  if (e->kind != FU_PY_E_CALL) return unsupported_at(ev, e->loc, e->kind == FU_PY_E_NAME ? e->u.name : "expression");
  const fu_py_expr *callee = e->u.call.callee;
  char name[128];
  if (dotted(callee, name, sizeof name)) {
    if (strncmp(name, "torch.", 6) == 0) return eval_factory(ev, e, name, spec);
    return unsupported_at(ev, callee->loc, name);
  }
  if (callee->kind == FU_PY_E_ATTR) return eval_method(ev, e, spec);
  return unsupported_at(ev, e->loc, "expression");
}

fu_status fu_py_eval_example(const fu_py_expr *e, fu_arena *arena, fu_diag_engine *diag, fu_py_example_spec *out) {
  memset(out, 0, sizeof *out);
  out->loc = e->loc;
  evaluator ev = {arena, diag};
  double f;
  int64_t i;
  bool is_float;
  if (e->kind == FU_PY_E_BOOL) {
    out->is_scalar = true;
    out->dtype = FU_DT_BOOL;
    out->value.b = e->u.b;
    out->init = FU_INIT_VALUE;
    return FU_OK;
  }
  if (eval_number(e, &f, &i, &is_float)) {
    out->is_scalar = true;
    out->init = FU_INIT_VALUE;
    out->dtype = is_float ? FU_DT_F64 : FU_DT_I64;
    if (is_float)
      out->value.f = f;
    else
      out->value.i = i;
    return FU_OK;
  }
  fu_status st = eval_tensor(&ev, e, out);
  if (st != FU_OK) return st;
  if (out->has_strides && out->rank >= 0) {
    int64_t c[FU_MAX_RANK];
    contiguous_strides(out->rank, out->shape, c);
    bool same = true;
    for (int32_t d = 0; d < out->rank; d++) same &= out->shape[d] == 1 || c[d] == out->strides[d];
    if (same) out->has_strides = false;
  }
  return FU_OK;
}
