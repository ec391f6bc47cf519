/* fuser: importing a whole nvFuser repro script.
 *
 * The top level of a repro script is mostly boilerplate: imports, the
 * definitions, an inputs list, `with FusionDefinition() as fd:` and a loop
 * around fd.execute.  This file sorts the top-level statements into
 * definitions to import and inputs lists to attach, rejects everything else
 * with a located error, builds each fusion (py_build.c), attaches example
 * data and verifies the module. */
#include <stdio.h>
#include <string.h>

#include "fuser/frontend.h"
#include "fuser/verify.h"

/* One top-level unit: a def, or an inline `with` body. */
typedef struct unit_entry {
  fu_py_unit unit;
  const fu_py_stmt *stmt;
  size_t position;          /* index of its statement in the script */
  const fu_py_expr *inputs; /* the bound inputs list, or NULL */
  bool selected;
} unit_entry;

/* A `with FusionDefinition() as fd: f(fd)` block. */
typedef struct with_call {
  const char *callee; /* NULL for inline definitions */
  fu_loc loc;
  size_t position;
  int unit; /* index into units, -1 until resolved */
} with_call;

typedef struct inputs_list {
  const fu_py_expr *list;
  size_t position;
} inputs_list;

typedef struct script_plan {
  unit_entry *units;
  uint32_t n_units;
  with_call *withs;
  uint32_t n_withs;
  inputs_list *inputs;
  uint32_t n_inputs;
} script_plan;

static fu_loc file_loc(const fu_source *src) {
  fu_loc l = {src, 0, 0};
  return l;
}

static bool dotted(const fu_py_expr *e, char *buf, size_t cap) {
  if (e->kind == FU_PY_E_NAME) return (size_t)snprintf(buf, cap, "%s", e->u.name) < cap;
  if (e->kind != FU_PY_E_ATTR || !dotted(e->u.attr.base, buf, cap)) return false;
  size_t n = strlen(buf);
  return (size_t)snprintf(buf + n, cap - n, ".%s", e->u.attr.name) < cap - n;
}

/* `x.execute(...)`: running the fusion, which the importer ignores. */
static bool is_execute_call(const fu_py_expr *e) {
  return e->kind == FU_PY_E_CALL && e->u.call.callee->kind == FU_PY_E_ATTR &&
         strcmp(e->u.call.callee->u.attr.name, "execute") == 0;
}

static bool is_call_named(const fu_py_expr *e, const char *last) {
  char name[128];
  if (e->kind != FU_PY_E_CALL || !dotted(e->u.call.callee, name, sizeof name)) return false;
  const char *dot = strrchr(name, '.');
  return strcmp(dot ? dot + 1 : name, last) == 0;
}

static void *grow_array(fu_arena *a, void *old, uint32_t n, size_t size) {
  /* doubling in the arena: called when n is a power of two (or zero) */
  if (n != 0 && (n < 4 || (n & (n - 1)))) return old;
  void *p = fu_arena_alloc(a, (n ? n * 2 : 4) * size);
  if (p && n) memcpy(p, old, n * size);
  return p;
}

/* Record a definition to import (name NULL: an inline one, named later). */
static fu_status add_unit(fu_arena *a, script_plan *plan, const char *name, fu_loc loc, const char *fd,
                          const fu_py_block *body, const fu_py_stmt *stmt, size_t position) {
  unit_entry *u = grow_array(a, plan->units, plan->n_units, sizeof *u);
  if (!u) return FU_ERR_NOMEM;
  plan->units = u;
  u = &plan->units[plan->n_units++];
  memset(u, 0, sizeof *u);
  u->unit.name = name;
  u->unit.loc = loc;
  u->unit.fd = fd;
  u->unit.body = body;
  u->stmt = stmt;
  u->position = position;
  return FU_OK;
}

/* Sort the top-level statements; reject what a repro script would not
 * contain. */
static fu_status plan_script(const fu_py_script *script, fu_arena *a, fu_diag_engine *diag, script_plan *plan) {
  for (size_t i = 0; i < script->body.n; i++) {
    const fu_py_stmt *s = script->body.v[i];
    fu_status st = FU_OK;
    switch (s->kind) {
      case FU_PY_S_IMPORT:
      case FU_PY_S_PASS: break;
      case FU_PY_S_DEF:
        for (uint32_t k = 0; k < plan->n_units; k++)
          if (plan->units[k].unit.name && strcmp(plan->units[k].unit.name, s->u.def.name) == 0) {
            fu_error(diag, s->loc, "duplicate definition of '%s'", s->u.def.name);
            fu_note(diag, plan->units[k].unit.loc, "first defined here");
            return FU_ERR_PARSE;
          }
        st = add_unit(a, plan, s->u.def.name, s->loc, s->u.def.param, &s->u.def.body, s, i);
        break;
      case FU_PY_S_ASSIGN: {
        const fu_py_expr *target = s->u.assign.targets[0];
        const fu_py_expr *value = s->u.assign.value;
        if (s->u.assign.n_targets == 1 && strcmp(target->u.name, "inputs") == 0) {
          if (value->kind != FU_PY_E_LIST && value->kind != FU_PY_E_TUPLE) {
            fu_error(diag, value->loc, "expected a list for 'inputs'");
            return FU_ERR_UNSUPPORTED;
          }
          inputs_list *l = grow_array(a, plan->inputs, plan->n_inputs, sizeof *l);
          if (!l) return FU_ERR_NOMEM;
          plan->inputs = l;
          plan->inputs[plan->n_inputs].list = value;
          plan->inputs[plan->n_inputs++].position = i;
          break;
        }
        if (s->u.assign.n_targets == 1 && strcmp(target->u.name, "placeholder_inputs") == 0) break;
        if (is_execute_call(value) || is_call_named(value, "Fusion")) break;
        fu_error(diag, s->loc, "unsupported top-level assignment to '%s'", target->u.name);
        return FU_ERR_UNSUPPORTED;
      }
      case FU_PY_S_EXPR:
        if (s->u.expr->kind == FU_PY_E_STRING || is_execute_call(s->u.expr)) break;
        fu_error(diag, s->loc, "unsupported top-level statement");
        return FU_ERR_UNSUPPORTED;
      case FU_PY_S_FOR: {
        const fu_py_expr *it = s->u.for_.iter;
        if (!(it->kind == FU_PY_E_CALL && it->u.call.callee->kind == FU_PY_E_NAME &&
              strcmp(it->u.call.callee->u.name, "range") == 0)) {
          fu_error(diag, it->loc, "unsupported 'for' loop (only 'for _ in range(n):' around fd.execute is accepted)");
          return FU_ERR_UNSUPPORTED;
        }
        for (uint32_t k = 0; k < s->u.for_.body.n; k++) {
          const fu_py_stmt *b = s->u.for_.body.v[k];
          bool ok = b->kind == FU_PY_S_PASS || (b->kind == FU_PY_S_EXPR && is_execute_call(b->u.expr)) ||
                    (b->kind == FU_PY_S_ASSIGN && is_execute_call(b->u.assign.value));
          if (!ok) {
            fu_error(diag, b->loc, "unsupported statement in a 'for' loop (only fd.execute(...) is accepted)");
            return FU_ERR_UNSUPPORTED;
          }
        }
        break;
      }
      case FU_PY_S_WITH: {
        const fu_py_expr *ctx = s->u.with.context;
        if (!is_call_named(ctx, "FusionDefinition")) {
          fu_error(diag, ctx->loc, "unsupported 'with' statement (only 'with FusionDefinition() as fd:' is accepted)");
          return FU_ERR_UNSUPPORTED;
        }
        if (!s->u.with.as_name) {
          fu_error(diag, s->loc, "'with FusionDefinition()' needs 'as fd'");
          return FU_ERR_UNSUPPORTED;
        }
        with_call *w = grow_array(a, plan->withs, plan->n_withs, sizeof *w);
        if (!w) return FU_ERR_NOMEM;
        plan->withs = w;
        w = &plan->withs[plan->n_withs++];
        w->loc = s->loc;
        w->position = i;
        w->unit = -1;
        w->callee = NULL;
        const fu_py_block *body = &s->u.with.body;
        if (body->n == 1 && body->v[0]->kind == FU_PY_S_EXPR && body->v[0]->u.expr->kind == FU_PY_E_CALL &&
            body->v[0]->u.expr->u.call.callee->kind == FU_PY_E_NAME) {
          const fu_py_expr *call = body->v[0]->u.expr;
          if (call->u.call.n_args != 1 || call->u.call.n_kwargs != 0 || call->u.call.args[0]->kind != FU_PY_E_NAME ||
              strcmp(call->u.call.args[0]->u.name, s->u.with.as_name) != 0) {
            fu_error(diag, call->loc, "expected '%s(%s)' in the 'with FusionDefinition()' block",
                     call->u.call.callee->u.name, s->u.with.as_name);
            return FU_ERR_UNSUPPORTED;
          }
          w->callee = call->u.call.callee->u.name;
          w->loc = call->loc;
        } else {
          /* an inline definition: the body is the fusion, named below */
          st = add_unit(a, plan, NULL, s->loc, s->u.with.as_name, body, s, i);
          w->unit = (int)plan->n_units - 1;
        }
        break;
      }
    }
    if (st != FU_OK) return st;
  }
  /* inline definitions are called fusion, fusion1, ... avoiding def names */
  uint32_t next = 0;
  for (uint32_t k = 0; k < plan->n_units; k++) {
    if (plan->units[k].unit.name) continue;
    char name[32];
    bool taken;
    do {
      snprintf(name, sizeof name, next ? "fusion%u" : "fusion", next);
      next++;
      taken = false;
      for (uint32_t j = 0; j < plan->n_units; j++)
        taken |= plan->units[j].unit.name && strcmp(plan->units[j].unit.name, name) == 0;
    } while (taken);
    if (!(plan->units[k].unit.name = fu_arena_strdup(a, name))) return FU_ERR_NOMEM;
  }
  return FU_OK;
}

static int find_unit(const script_plan *plan, const char *name) {
  for (uint32_t k = 0; k < plan->n_units; k++)
    if (strcmp(plan->units[k].unit.name, name) == 0) return (int)k;
  return -1;
}

/* Which definition an inputs list belongs to: the one run by the closest
 * `with` block before it, else by the first one after it, else the last
 * definition before it (scripts without any `with`). */
static int unit_for_inputs(const script_plan *plan, const inputs_list *l) {
  int before = -1, after = -1;
  for (uint32_t w = 0; w < plan->n_withs; w++) {
    if (plan->withs[w].position < l->position)
      before = plan->withs[w].unit;
    else if (after < 0)
      after = plan->withs[w].unit;
  }
  if (before >= 0) return before;
  if (after >= 0) return after;
  int last = -1;
  for (uint32_t k = 0; k < plan->n_units; k++)
    if (plan->units[k].position < l->position) last = (int)k;
  return last >= 0 ? last : (plan->n_units ? 0 : -1);
}

/* Convert a scalar example to the input's dtype, as nvFuser would accept
 * it. */
static bool scalar_example(const fu_py_example_spec *spec, fu_dtype dt, fu_scalar_value *out) {
  if (fu_dtype_is_float(dt)) {
    out->f = spec->dtype == FU_DT_F64   ? spec->value.f
             : spec->dtype == FU_DT_I64 ? (double)spec->value.i
                                        : spec->value.b;
    return true;
  }
  if (fu_dtype_is_int(dt)) {
    if (spec->dtype == FU_DT_F64) return false;
    out->i = spec->dtype == FU_DT_I64 ? spec->value.i : spec->value.b;
    return true;
  }
  if (spec->dtype == FU_DT_BOOL) {
    out->b = spec->value.b;
    return true;
  }
  if (spec->dtype == FU_DT_I64 && (spec->value.i == 0 || spec->value.i == 1)) {
    out->b = spec->value.i != 0;
    return true;
  }
  return false;
}

static void format_type(const fu_type *t, char *buf, size_t cap) {
  size_t n = (size_t)snprintf(buf, cap, "%s", fu_dtype_name(t->dtype));
  if (t->rank < 0 || n >= cap) return;
  n += (size_t)snprintf(buf + n, cap - n, "[");
  for (int32_t i = 0; i < t->rank && n < cap; i++) {
    if (t->dims[i].sym)
      n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", t->dims[i].sym);
    else
      n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)t->dims[i].value);
  }
  if (n < cap) snprintf(buf + n, cap - n, "]");
}

/* Attach the evaluated inputs list to the fusion's INPUT ops, checking
 * count, kind, dtype, rank, constant extents and that each symbol gets one
 * size. */
typedef struct bound_size {
  int64_t size;
  fu_loc loc; /* the inputs-list entry that bound it */
} bound_size;

static fu_status attach_examples(fu_module *m, fu_arena *scratch, fu_fusion *f, const fu_py_expr *list,
                                 const fu_py_example_spec *specs, fu_diag_engine *diag) {
  uint32_t n_inputs = 0;
  for (fu_op *op = f->body.first; op; op = op->next) n_inputs += op->kind == FU_OP_INPUT;
  if (n_inputs != list->u.list.n) {
    fu_error(diag, list->loc, "the inputs list has %u entr%s but '%s' defines %u input%s", list->u.list.n,
             list->u.list.n == 1 ? "y" : "ies", f->name, n_inputs, n_inputs == 1 ? "" : "s");
    return FU_ERR_VERIFY;
  }
  fu_py_map bound; /* symbol -> bound_size */
  fu_py_map_init(&bound, m->alloc);
  fu_status st = FU_OK;
  uint32_t i = 0;
  for (fu_op *op = f->body.first; op && st == FU_OK; op = op->next) {
    if (op->kind != FU_OP_INPUT) continue;
    const fu_py_example_spec *spec = &specs[i];
    fu_value *v = op->results[0];
    fu_example *ex = &op->u.input.example;
    char ty[256];
    format_type(&v->type, ty, sizeof ty);
    if (fu_type_is_scalar(&v->type) != spec->is_scalar) {
      fu_error(diag, spec->loc, "input %u ('%%%s' : %s) is a %s, but the inputs list gives a %s", i, v->name, ty,
               spec->is_scalar ? "tensor" : "scalar", spec->is_scalar ? "scalar" : "tensor");
      st = FU_ERR_VERIFY;
      break;
    }
    memset(ex, 0, sizeof *ex);
    ex->seed = i;
    ex->rank = -1;
    if (spec->is_scalar) {
      if (!scalar_example(spec, v->type.dtype, &ex->value)) {
        fu_error(diag, spec->loc, "input %u ('%%%s' : %s) cannot take this %s value", i, v->name, ty,
                 spec->dtype == FU_DT_F64   ? "float"
                 : spec->dtype == FU_DT_I64 ? "integer"
                                            : "bool");
        st = FU_ERR_VERIFY;
        break;
      }
      ex->init = FU_INIT_VALUE;
      i++;
      continue;
    }
    if (spec->dtype != v->type.dtype) {
      fu_error(diag, spec->loc, "input %u ('%%%s' : %s) gets %s data from the inputs list", i, v->name, ty,
               fu_py_torch_dtype_name(spec->dtype));
      if (!spec->dtype_given) fu_note(diag, spec->loc, "torch's default dtype is used when dtype= is not given");
      st = FU_ERR_VERIFY;
      break;
    }
    ex->init = spec->init;
    ex->low = spec->low;
    ex->high = spec->high;
    ex->nonzero = spec->nonzero;
    if (spec->npy_path && !(ex->npy_path = fu_arena_strdup(m->arena, spec->npy_path))) {
      st = FU_ERR_NOMEM;
      break;
    }
    if (spec->rank >= 0) {
      if (spec->rank != v->type.rank) {
        fu_error(diag, spec->loc, "input %u ('%%%s' : %s) has rank %d, but the inputs list gives rank %d", i, v->name,
                 ty, v->type.rank, spec->rank);
        st = FU_ERR_VERIFY;
        break;
      }
      for (int32_t d = 0; d < spec->rank && st == FU_OK; d++) {
        fu_extent e = v->type.dims[d];
        int64_t size = spec->shape[d];
        if (fu_extent_is_const(e)) {
          const int8_t *contig = op->u.input.layout.contiguity;
          if (e.value == 1 && ((spec->has_strides && spec->strides[d] == 0) || (contig && contig[d] == FU_CONTIG_NONE)))
            continue; /* a broadcast dim that the data expands: its example has one element there */
          if (e.value != size) {
            fu_error(diag, spec->loc,
                     "input %u ('%%%s' : %s) has extent %lld at dim %d, but the inputs list gives %lld", i, v->name, ty,
                     (long long)e.value, d, (long long)size);
            st = FU_ERR_VERIFY;
          }
          continue;
        }
        const bound_size *prev = fu_py_map_get(&bound, e.sym);
        if (!prev) {
          bound_size *rec = fu_arena_alloc(scratch, sizeof *rec);
          if (!rec || !fu_py_map_set(&bound, e.sym, rec)) {
            st = FU_ERR_NOMEM;
            break;
          }
          rec->size = size;
          rec->loc = spec->loc;
          continue;
        }
        if (prev->size != size) {
          fu_error(diag, spec->loc, "extent '%s' of input %u ('%%%s') is %lld, but an earlier input makes it %lld",
                   e.sym, i, v->name, (long long)size, (long long)prev->size);
          fu_note(diag, prev->loc, "bound here");
          st = FU_ERR_VERIFY;
        }
      }
      if (st != FU_OK) break;
      ex->rank = spec->rank;
      int64_t *shape = fu_arena_memdup(m->arena, spec->shape, (size_t)spec->rank, sizeof *spec->shape);
      if (spec->rank && !shape) {
        st = FU_ERR_NOMEM;
        break;
      }
      for (int32_t d = 0; d < spec->rank; d++) /* an expanded dim's data is its one element */
        if (fu_extent_is_const(v->type.dims[d]) && v->type.dims[d].value == 1) shape[d] = 1;
      ex->shape = shape;
      if (spec->has_strides) {
        ex->strides = fu_arena_memdup(m->arena, spec->strides, (size_t)spec->rank, sizeof *spec->strides);
        if (spec->rank && !ex->strides) {
          st = FU_ERR_NOMEM;
          break;
        }
      }
    }
    i++;
  }
  fu_py_map_free(&bound);
  if (st == FU_ERR_NOMEM) fu_error(diag, fu_loc_none(), "out of memory while importing");
  return st;
}

/* Plan the script, bind inputs lists, then build, attach and check each
 * selected definition. */
static fu_status import_script(const fu_py_script *script, fu_module *m, fu_arena *a, fu_diag_engine *diag,
                               const fu_py_import_options *opts) {
  const fu_source *src = script->src;
  script_plan plan;
  memset(&plan, 0, sizeof plan);
  fu_status st = plan_script(script, a, diag, &plan);
  if (st == FU_ERR_NOMEM) fu_error(diag, fu_loc_none(), "out of memory while importing");
  if (st != FU_OK) return st;
  for (uint32_t w = 0; w < plan.n_withs; w++) {
    if (plan.withs[w].unit >= 0) continue;
    int u = find_unit(&plan, plan.withs[w].callee);
    if (u < 0) {
      fu_error(diag, plan.withs[w].loc, "call to undefined function '%s'", plan.withs[w].callee);
      return FU_ERR_PARSE;
    }
    plan.withs[w].unit = u;
  }
  if (plan.n_units == 0) {
    fu_error(diag, file_loc(src), "no fusion definition found (expected 'def name(fd : FusionDefinition)')");
    return FU_ERR_PARSE;
  }
  for (uint32_t k = 0; k < plan.n_inputs; k++) {
    int u = unit_for_inputs(&plan, &plan.inputs[k]);
    if (u >= 0) plan.units[u].inputs = plan.inputs[k].list;
  }
  const char *only = opts ? opts->function : NULL;
  bool any = false;
  for (uint32_t k = 0; k < plan.n_units; k++) {
    plan.units[k].selected = !only || strcmp(only, plan.units[k].unit.name) == 0;
    any |= plan.units[k].selected;
  }
  if (!any) {
    fu_error(diag, file_loc(src), "no definition named '%s' in the script", only);
    return FU_ERR_INVALID_ARG;
  }
  for (uint32_t k = 0; k < plan.n_units; k++) {
    unit_entry *u = &plan.units[k];
    if (!u->selected) continue;
    fu_py_example_spec *specs = NULL;
    if (u->inputs) {
      uint32_t n = u->inputs->u.list.n;
      specs = fu_arena_alloc(a, (n ? n : 1) * sizeof *specs);
      if (!specs) {
        fu_error(diag, fu_loc_none(), "out of memory while importing");
        return FU_ERR_NOMEM;
      }
      for (uint32_t i = 0; i < n; i++)
        if ((st = fu_py_eval_example(u->inputs->u.list.items[i], script->arena, diag, &specs[i])) != FU_OK) return st;
      u->unit.examples = specs;
      u->unit.n_examples = n;
    }
    fu_fusion *f;
    if ((st = fu_py_build_fusion(m, &u->unit, diag, &f)) != FU_OK) return st;
    if (u->inputs && (st = attach_examples(m, a, f, u->inputs, specs, diag)) != FU_OK) return st;
  }
  return FU_OK;
}

fu_status fu_py_import(const fu_source *src, fu_allocator alloc, fu_diag_engine *diag, const fu_py_import_options *opts,
                       fu_module **out) {
  *out = NULL;
  fu_py_script *script = NULL;
  fu_status st = fu_py_parse(src, alloc, diag, &script);
  if (st != FU_OK) return st;
  fu_module *m = fu_module_new(alloc);
  fu_arena *scratch = fu_arena_new(alloc);
  if (!m || !scratch) {
    fu_error(diag, fu_loc_none(), "out of memory while importing");
    st = FU_ERR_NOMEM;
  } else {
    m->source = src;
    st = import_script(script, m, scratch, diag, opts);
  }
  if (st == FU_OK) st = fu_verify_module(m, diag);
  fu_arena_free(scratch);
  fu_py_script_free(script);
  if (st != FU_OK) {
    fu_module_free(m);
    return st;
  }
  *out = m;
  return FU_OK;
}
