/* fuser: matching the epilogue cuBLASLt fuses after a matmul or linear
 * (passes/matmul_epilogue.h).
 *
 * cuBLASLt computes D = act(alpha * A B + bias) in f32 and converts to D's
 * dtype once.  The IR spells the same thing as a chain of ops after the
 * product: casts (an upcast to f32 before the epilogue math, a downcast at
 * the end), a multiplication by a literal, an add of a broadcast vector,
 * and an activation written out of primitive ops in whatever form the
 * frontend chose (GELU's tanh form is 0.5 x (1 + tanh(sqrt(2/pi) (x +
 * 0.044715 x^3))), in several orders of operands).  The activation is
 * recognised by what it computes, not by its form: the pointwise ops that
 * read only the chain's value (and each other, and literals) and are read
 * only by each other are evaluated at sample points and compared with relu
 * and GELU.  Casts inside count as exact (f32 is what cuBLASLt computes
 * in). */
#include <math.h>
#include <string.h>

#include "fuser/interp.h"
#include "matmul_epilogue.h"

static const double samples[] = {-3.1, -1.7, -0.6, -0.05, 0.0, 0.2, 0.9, 1.6, 2.8};
enum { N_SAMPLES = sizeof samples / sizeof samples[0], MAX_REGION = 24, MAX_SCAN = 96 };

static double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
}

static bool only_use(const fu_use_map *uses, const fu_value *v, fu_op **user) {
  if (fu_use_count(uses, v) != 1) return false;
  *user = fu_uses_of(uses, v)[0].user;
  return true;
}

static bool is_float_literal_scalar(const fu_value *v) {
  return v->is_literal && fu_type_is_scalar(&v->type) && fu_dtype_is_float(v->type.dtype);
}

static double literal_num(const fu_value *v) {
  if (fu_dtype_is_float(v->type.dtype)) return v->literal.f;
  if (fu_dtype_is_bool(v->type.dtype)) return v->literal.b;
  return (double)v->literal.i;
}

static bool push(fu_mm_epilogue *e, fu_op *op) {
  if (e->n_ops == FU_MM_EPI_MAX) return false;
  e->ops[e->n_ops++] = op;
  return true;
}

/* The extent the product's result has along N (its last dim), or a rank-0
 * result's 1. */
static fu_extent n_extent(const fu_value *v) {
  return v->type.rank >= 1 ? v->type.dims[v->type.rank - 1] : (fu_extent){1, NULL};
}

/* o is a vector along N for a result of rank r: [1, ..., 1, N] itself, or a
 * broadcast of a rank-1 [N] (a compute broadcast joins the epilogue, through
 * *bop; a host one is read as it is). */
static fu_value *bias_of(fu_value *o, fu_extent n, int32_t r, const fu_use_map *uses, fu_mm_inside_fn inside,
                         void *user, fu_op **bop) {
  *bop = NULL;
  if (!fu_type_is_tensor(&o->type) || o->type.rank != r || r < 1 || !fu_extent_equal(o->type.dims[r - 1], n))
    return NULL;
  bool ones = true;
  for (int32_t d = 0; d + 1 < r; d++) ones &= fu_extent_is_one(o->type.dims[d]);
  if (ones) return o;
  fu_op *def = o->def;
  if (!def || def->n_operands != 1) return NULL;
  fu_value *x = def->operands[0];
  if (x->is_literal || x->type.rank != 1 || !fu_extent_equal(x->type.dims[0], n)) return NULL;
  bool last = false;
  if (def->kind == FU_OP_BROADCAST_IN_DIM)
    last = def->u.broadcast_in_dim.broadcast_dims.n == 1 && def->u.broadcast_in_dim.broadcast_dims.v[0] == r - 1;
  else if (def->kind == FU_OP_BROADCAST)
    last = def->u.broadcast.n == (uint32_t)r && !def->u.broadcast.is_broadcast[r - 1];
  if (!last) return NULL;
  if (def->host) return o;
  fu_op *u;
  if (!inside(user, def) || !only_use(uses, o, &u)) return NULL;
  *bop = def;
  return x;
}

/* Value slots of a region under evaluation: the chain's value is slot 0,
 * op i's result slot i + 1. */
typedef struct region {
  fu_op *ops[MAX_REGION];
  uint32_t n;
  const fu_value *x;
} region;

static int32_t slot_of(const region *R, const fu_value *v) {
  if (v == R->x) return 0;
  for (uint32_t i = 0; i < R->n; i++)
    if (R->ops[i]->n_results == 1 && R->ops[i]->results[0] == v) return (int32_t)i + 1;
  return -1;
}

/* Evaluates the ops of R selected by `in` at x; false when an op cannot be
 * evaluated. */
static bool eval_region(const region *R, const bool *in, double x, double *val) {
  val[0] = x;
  for (uint32_t i = 0; i < R->n; i++) {
    if (!in[i]) continue;
    fu_op *op = R->ops[i];
    fu_value tmp[3];
    fu_value *args[3];
    if (op->n_operands > 3) return false;
    for (uint32_t k = 0; k < op->n_operands; k++) {
      fu_value *v = op->operands[k];
      if (v->is_literal) {
        args[k] = v;
        continue;
      }
      int32_t s = slot_of(R, v);
      if (s < 0) return false;
      memset(&tmp[k], 0, sizeof tmp[k]);
      tmp[k].is_literal = true;
      tmp[k].type.rank = FU_SCALAR_RANK;
      bool is_bool = s > 0 && fu_dtype_is_bool(R->ops[s - 1]->results[0]->type.dtype);
      tmp[k].type.dtype = is_bool ? FU_DT_BOOL : FU_DT_F64;
      if (is_bool) tmp[k].literal.b = val[s] != 0;
      else tmp[k].literal.f = val[s];
      args[k] = &tmp[k];
    }
    if (op->kind == FU_OP_CAST || op->kind == FU_OP_SET) {
      val[i + 1] = args[0]->is_literal && args[0] != &tmp[0] ? literal_num(args[0]) : val[slot_of(R, op->operands[0])];
      continue;
    }
    fu_dtype rdt = fu_dtype_is_bool(op->results[0]->type.dtype) ? FU_DT_BOOL : FU_DT_F64;
    fu_scalar_value out;
    if (fu_interp_eval_scalar(op->kind, args, op->n_operands, rdt, &out) != FU_OK) return false;
    val[i + 1] = rdt == FU_DT_BOOL ? (out.b ? 1.0 : 0.0) : out.f;
  }
  return true;
}

/* Whether ops `in` of R (ending with op `end`) are closed: every value but
 * end's result is read only inside. */
static bool closed(const region *R, const bool *in, uint32_t end, const fu_use_map *uses) {
  for (uint32_t s = 0; s <= R->n; s++) {
    if (s > 0 && (!in[s - 1] || s - 1 == end)) continue;
    const fu_value *v = s == 0 ? R->x : R->ops[s - 1]->results[0];
    const fu_use *u = fu_uses_of(uses, v);
    for (uint32_t k = 0; k < fu_use_count(uses, v); k++) {
      int32_t j = -1;
      for (uint32_t i = 0; i < R->n && j < 0; i++)
        if (R->ops[i] == u[k].user) j = (int32_t)i;
      if (j < 0 || !in[j]) return false;
    }
  }
  return true;
}

/* An activation over x starting at its user `first`: the ops of the region
 * up to the first end that computes relu or GELU.  Appends them to e. */
static bool match_activation(fu_value *x, fu_op *first, const fu_use_map *uses, fu_mm_inside_fn inside, void *user,
                             fu_mm_epilogue *e, fu_value **out) {
  region R;
  R.n = 0;
  R.x = x;
  uint32_t scanned = 0;
  for (fu_op *w = first; w && scanned < MAX_SCAN && R.n < MAX_REGION; w = w->next, scanned++) {
    if (!fu_op_has(w->kind, FU_OF_POINTWISE) || !inside(user, w) || w->n_results != 1 ||
        !fu_type_is_tensor(&w->results[0]->type))
      continue;
    bool ok = true;
    for (uint32_t k = 0; k < w->n_operands && ok; k++) {
      const fu_value *v = w->operands[k];
      ok = v->is_literal ? fu_type_is_scalar(&v->type) : slot_of(&R, v) >= 0;
    }
    if (ok) R.ops[R.n++] = w;
  }
  for (uint32_t end = 0; end < R.n; end++) {
    bool in[MAX_REGION] = {false};
    in[end] = true;
    for (int32_t i = (int32_t)end; i >= 0; i--) {
      if (!in[i]) continue;
      for (uint32_t k = 0; k < R.ops[i]->n_operands; k++) {
        int32_t s = R.ops[i]->operands[k]->is_literal ? -1 : slot_of(&R, R.ops[i]->operands[k]);
        if (s > 0) in[s - 1] = true;
      }
    }
    if (!closed(&R, in, end, uses)) continue;
    bool relu = true, gelu = true;
    for (int i = 0; i < N_SAMPLES && (relu || gelu); i++) {
      double val[MAX_REGION + 1];
      if (!eval_region(&R, in, samples[i], val)) {
        relu = gelu = false;
        break;
      }
      double y = val[end + 1], xs = samples[i];
      relu &= fabs(y - (xs > 0 ? xs : 0)) <= 1e-6 * (1 + fabs(xs));
      gelu &= fabs(y - gelu_tanh(xs)) <= 1e-6 * (1 + fabs(xs));
    }
    if (!relu && !gelu) continue;
    uint32_t before = e->n_ops;
    for (uint32_t i = 0; i <= end; i++)
      if (in[i] && !push(e, R.ops[i])) {
        e->n_ops = before;
        return false;
      }
    e->act = relu ? FU_GEMM_ACT_RELU : FU_GEMM_ACT_GELU;
    *out = R.ops[end]->results[0];
    return true;
  }
  return false;
}

/* The user of v that comes first in its block (users outside v's block:
 * none). */
static fu_op *first_user(const fu_use_map *uses, const fu_value *v) {
  const fu_use *u = fu_uses_of(uses, v);
  uint32_t n = fu_use_count(uses, v);
  if (!n || !v->def) return NULL;
  for (fu_op *w = v->def->next; w; w = w->next)
    for (uint32_t k = 0; k < n; k++)
      if (u[k].user == w) return w;
  return NULL;
}

void fu_mm_match_epilogue(fu_op *mm, const fu_use_map *uses, fu_mm_inside_fn inside, void *user,
                          fu_mm_epilogue *e) {
  memset(e, 0, sizeof *e);
  e->alpha = 1.0;
  fu_value *cur = mm->results[0];
  e->out = cur;
  int stage = 0; /* 0: before the bias, 1: after it, 2: after the activation */
  if (mm->kind == FU_OP_LINEAR && mm->n_operands == 3) {
    e->bias = mm->operands[2];
    stage = 1;
  }
  fu_extent n = n_extent(cur);
  int32_t r = cur->type.rank;
  for (;;) {
    fu_op *u;
    if (!only_use(uses, cur, &u)) {
      /* several users: only an activation (reading the value several times) continues the chain */
      u = first_user(uses, cur);
      fu_value *next = NULL;
      if (!u || stage == 2 || !match_activation(cur, u, uses, inside, user, e, &next)) break;
      stage = 2;
      cur = next;
      e->out = cur;
      continue;
    }
    if (!inside(user, u) || u->n_results != 1) break;
    fu_value *next = u->results[0];
    bool took = false;
    if (u->kind == FU_OP_CAST) {
      took = fu_dtype_is_float(next->type.dtype) && next->type.dtype != FU_DT_F64 && push(e, u);
    } else if ((u->kind == FU_OP_MUL || u->kind == FU_OP_DIV) && stage == 0 && u->n_operands == 2) {
      int lit = is_float_literal_scalar(u->operands[1]) ? 1 : u->kind == FU_OP_MUL && is_float_literal_scalar(u->operands[0]) ? 0 : -1;
      if (lit >= 0 && u->operands[1 - lit] == cur && literal_num(u->operands[lit]) != 0 && push(e, u)) {
        double c = literal_num(u->operands[lit]);
        e->alpha = u->kind == FU_OP_MUL ? e->alpha * c : e->alpha / c;
        took = true;
      }
    } else if (u->kind == FU_OP_ADD && stage == 0 && u->n_operands == 2) {
      fu_value *o = u->operands[0] == cur ? u->operands[1] : u->operands[0];
      fu_op *bop = NULL;
      fu_value *b = o->is_literal ? NULL : bias_of(o, n, r, uses, inside, user, &bop);
      /* the bias in the operands' dtype: cuBLASLt refused an f32 bias for
       * a bf16 product on an H200 (its heuristic: invalid value).  An
       * upcast of such a bias joins the epilogue (cuBLASLt adds the bias in
       * f32, as the cast then the add do); a bias of another dtype is added
       * in fuser's own kernel. */
      fu_dtype abt = mm->operands[0]->type.dtype;
      fu_op *cop = NULL, *cu;
      if (b && b->type.dtype != abt && b->def && b->def->kind == FU_OP_CAST && !b->def->host &&
          b->def->operands[0]->type.dtype == abt && inside(user, b->def) && only_use(uses, b, &cu)) {
        cop = b->def;
        b = cop->operands[0];
      }
      if (b && b->type.dtype != abt) b = NULL;
      if (b && (!bop || push(e, bop)) && (!cop || push(e, cop)) && push(e, u)) {
        e->bias = b;
        stage = 1;
        took = true;
      }
    }
    if (!took && stage < 2 && !fu_op_has(u->kind, FU_OF_REDUCTION) &&
        match_activation(cur, u, uses, inside, user, e, &next)) {
      stage = 2;
      took = true;
    }
    if (!took) break;
    cur = next;
    e->out = cur;
  }
}
