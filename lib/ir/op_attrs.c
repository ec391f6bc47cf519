/* fuser: the per-class op attribute table and the operations over it
 * (equality, hashing, copying).  A new class with attributes adds its
 * fields here; fu_op_attr_spec's switch has no default, so the compiler
 * names it. */
#include <stddef.h>
#include <string.h>

#include "fuser/ir.h"

#define U(member) offsetof(union fu_op_payload, member)

/* {name, kind, offset, count_offset, print_always, required, absent}; a
 * slice's missing steps are all 1 (the parser fills them). */

static const fu_attr_field reduce_fields[] = {
    {"axes", FU_AK_INT_LIST, U(reduce.axes), 0, true, true, 0},
    {"keepdim", FU_AK_BOOL, U(reduce.keepdim), 0, false, false, 0},
    {"dtype", FU_AK_DTYPE, U(reduce.dtype), 0, false, false, 0},
};
static const fu_attr_field variance_fields[] = {
    {"axes", FU_AK_INT_LIST, U(variance.axes), 0, true, true, 0},
    {"correction", FU_AK_INT, U(variance.correction), 0, true, false, 1},
    {"keepdim", FU_AK_BOOL, U(variance.keepdim), 0, false, false, 0},
};
static const fu_attr_field broadcast_in_dim_fields[] = {
    {"broadcast_dims", FU_AK_INT_LIST, U(broadcast_in_dim.broadcast_dims), 0, true, true, 0},
};
static const fu_attr_field broadcast_fields[] = {
    {"is_broadcast_dim", FU_AK_BOOL_LIST, U(broadcast.is_broadcast), U(broadcast.n), true, true, 0},
};
static const fu_attr_field permute_fields[] = {{"dims", FU_AK_INT_LIST, U(permute.dims), 0, true, true, 0}};
static const fu_attr_field squeeze_fields[] = {{"dims", FU_AK_INT_LIST, U(squeeze.dims), 0, true, true, 0}};
static const fu_attr_field slice_fields[] = {
    {"starts", FU_AK_INT_LIST, U(slice.starts), 0, true, true, 0},
    {"ends", FU_AK_INT_LIST, U(slice.ends), 0, true, true, 0},
    {"steps", FU_AK_INT_LIST, U(slice.steps), 0, true, false, 0},
};
static const fu_attr_field cat_fields[] = {{"dim", FU_AK_INT, U(cat.dim), 0, true, true, 0}};
static const fu_attr_field pad_fields[] = {{"widths", FU_AK_INT_LIST, U(pad.widths), 0, true, true, 0}};
static const fu_attr_field index_fields[] = {{"dim", FU_AK_INT, U(index.dim), 0, false, false, 0}};
static const fu_attr_field scan_fields[] = {{"dim", FU_AK_INT, U(scan.dim), 0, true, true, 0}};
static const fu_attr_field partial_fields[] = {
    {"dim", FU_AK_INT, U(partial.dim), 0, true, true, 0},
    {"parts", FU_AK_INT, U(partial.parts), 0, true, true, 0},
};
static const fu_attr_field stride_order_fields[] = {
    {"order", FU_AK_INT_LIST, U(stride_order.order), 0, true, true, 0}};

#undef U

#define SPEC(a) ((fu_attr_spec){a, (uint32_t)(sizeof(a) / sizeof((a)[0]))})

fu_attr_spec fu_op_attr_spec(fu_op_class cls) {
  switch (cls) {
  case FU_OC_REDUCE: return SPEC(reduce_fields);
  case FU_OC_VARIANCE: return SPEC(variance_fields);
  case FU_OC_BROADCAST_IN_DIM: return SPEC(broadcast_in_dim_fields);
  case FU_OC_BROADCAST: return SPEC(broadcast_fields);
  case FU_OC_PERMUTE: return SPEC(permute_fields);
  case FU_OC_SQUEEZE: return SPEC(squeeze_fields);
  case FU_OC_SLICE: return SPEC(slice_fields);
  case FU_OC_CAT: return SPEC(cat_fields);
  case FU_OC_PAD: return SPEC(pad_fields);
  case FU_OC_INDEX: return SPEC(index_fields);
  case FU_OC_STRIDE_ORDER: return SPEC(stride_order_fields);
  case FU_OC_SCAN: return SPEC(scan_fields);
  case FU_OC_PARTIAL: return SPEC(partial_fields);
  /* no attributes: the result type states the shape or dtype */
  case FU_OC_META:
  case FU_OC_UNARY:
  case FU_OC_BINARY:
  case FU_OC_TERNARY:
  case FU_OC_CAST:
  case FU_OC_EXPAND:
  case FU_OC_RESHAPE:
  case FU_OC_FULL:
  case FU_OC_IOTA:
  case FU_OC_MATMUL: break;
  case FU_OC_RNG: break;
  }
  return (fu_attr_spec){NULL, 0};
}

#undef SPEC

static const void *field_at(const fu_op *op, size_t offset) { return (const char *)&op->u + offset; }

static uint32_t bool_list_n(const fu_op *op, const fu_attr_field *f) {
  uint32_t n;
  memcpy(&n, field_at(op, f->count_offset), sizeof n);
  return n;
}

static bool field_equal(const fu_op *a, const fu_op *b, const fu_attr_field *f) {
  const void *x = field_at(a, f->offset), *y = field_at(b, f->offset);
  switch (f->kind) {
  case FU_AK_INT: return *(const int64_t *)x == *(const int64_t *)y;
  case FU_AK_BOOL: return *(const bool *)x == *(const bool *)y;
  case FU_AK_DTYPE: return *(const fu_dtype *)x == *(const fu_dtype *)y;
  case FU_AK_INT_LIST: {
    const fu_int_list *l = x, *m = y;
    return l->n == m->n && (l->n == 0 || memcmp(l->v, m->v, l->n * sizeof *l->v) == 0);
  }
  case FU_AK_BOOL_LIST: {
    uint32_t n = bool_list_n(a, f);
    bool *const *l = x, *const *m = y;
    return n == bool_list_n(b, f) && (n == 0 || memcmp(*l, *m, n * sizeof **l) == 0);
  }
  }
  return false;
}

bool fu_op_attrs_equal(const fu_op *a, const fu_op *b) {
  if (a->kind != b->kind) return false;
  fu_op_class cls = fu_op_info_of(a->kind)->cls;
  if (cls == FU_OC_META) return a == b;
  fu_attr_spec s = fu_op_attr_spec(cls);
  for (uint32_t i = 0; i < s.n; i++)
    if (!field_equal(a, b, &s.fields[i])) return false;
  return true;
}

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

uint64_t fu_op_attrs_hash(const fu_op *op, uint64_t h) {
  fu_attr_spec s = fu_op_attr_spec(fu_op_info_of(op->kind)->cls);
  for (uint32_t i = 0; i < s.n; i++) {
    const fu_attr_field *f = &s.fields[i];
    const void *x = field_at(op, f->offset);
    switch (f->kind) {
    case FU_AK_INT: h = mix(h, (uint64_t)*(const int64_t *)x); break;
    case FU_AK_BOOL: h = mix(h, *(const bool *)x); break;
    case FU_AK_DTYPE: h = mix(h, (uint64_t)*(const fu_dtype *)x); break;
    case FU_AK_INT_LIST: {
      const fu_int_list *l = x;
      h = mix(h, l->n);
      for (uint32_t j = 0; j < l->n; j++) h = mix(h, (uint64_t)l->v[j]);
      break;
    }
    case FU_AK_BOOL_LIST: {
      uint32_t n = bool_list_n(op, f);
      bool *const *l = x;
      h = mix(h, n);
      for (uint32_t j = 0; j < n; j++) h = mix(h, (*l)[j]);
      break;
    }
    }
  }
  return h;
}

bool fu_op_attrs_copy(fu_module *m, const fu_op *from, fu_op *to) {
  fu_op_class cls = fu_op_info_of(from->kind)->cls;
  memset(&to->u, 0, sizeof to->u);
  if (cls == FU_OC_META) return true;
  to->u = from->u;
  fu_attr_spec s = fu_op_attr_spec(cls);
  for (uint32_t i = 0; i < s.n; i++) {
    const fu_attr_field *f = &s.fields[i];
    void *y = (char *)&to->u + f->offset;
    switch (f->kind) {
    case FU_AK_INT:
    case FU_AK_BOOL:
    case FU_AK_DTYPE: break; /* copied with the union */
    case FU_AK_INT_LIST: {
      fu_int_list *l = y;
      *l = fu_int_list_copy(m, l->v, l->n);
      if (!l->v && ((const fu_int_list *)field_at(from, f->offset))->n) return false;
      break;
    }
    case FU_AK_BOOL_LIST: {
      uint32_t n = bool_list_n(from, f);
      bool **l = y;
      *l = n ? fu_arena_memdup(m->arena, *l, n, sizeof **l) : NULL;
      if (n && !*l) return false;
      break;
    }
    }
  }
  return true;
}
