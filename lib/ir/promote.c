/* fuser: the dtype a pointwise op computes in, with nvFuser's and PyTorch's
 * "weak scalar" rule. */
#include "verify_internal.h"

/* bool < int < float */
static int category(fu_dtype t) { return fu_dtype_is_float(t) ? 2 : fu_dtype_is_int(t) ? 1 : 0; }

/* PyTorch's combine_categories: the tensors' dtype wins unless the scalars
 * are of a higher category; then the two promote (an int tensor with a float
 * scalar gives the scalar's dtype, already mapped to f32; a bool tensor with
 * an int scalar gives the int). */
static fu_dtype combine(fu_dtype tensors, fu_dtype scalars) {
  if (tensors == FU_DT_NONE) return scalars;
  if (scalars == FU_DT_NONE) return tensors;
  if (category(scalars) > category(tensors)) return fu_dtype_promote(tensors, scalars);
  return tensors;
}

/* Tensors promote among themselves, scalars among themselves (a float scalar
 * counting as the default float f32, the way PyTorch treats a Python float),
 * and then the scalars may only raise the category.  Scalar-only operand
 * lists promote plainly: f64 + f64 is f64. */
fu_dtype fu_dtype_common(fu_value *const *vals, uint32_t n) {
  fu_dtype tensors = FU_DT_NONE, scalars = FU_DT_NONE, plain = FU_DT_NONE;
  for (uint32_t i = 0; i < n; i++) {
    const fu_type *t = &vals[i]->type;
    plain = fu_dtype_promote(plain, t->dtype);
    if (fu_type_is_tensor(t)) {
      tensors = fu_dtype_promote(tensors, t->dtype);
    } else {
      fu_dtype d = fu_dtype_is_float(t->dtype) ? FU_DT_F32 : t->dtype;
      scalars = fu_dtype_promote(scalars, d);
    }
  }
  if (tensors == FU_DT_NONE) return plain;
  return combine(tensors, scalars);
}
