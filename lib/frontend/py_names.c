/* fuser: dtype names in nvFuser's DataType and in torch, both ways. */
#include <string.h>

#include "fuser/frontend.h"

typedef struct dtype_name {
  const char *name;
  fu_dtype dtype; /* FU_DT_NONE with supported=false: known but not representable */
  bool supported;
} dtype_name;

/* The first entry for each dtype is the name the exporter writes. */
static const dtype_name datatype_names[] = {
    {"Double", FU_DT_F64, true},
    {"Float", FU_DT_F32, true},
    {"Half", FU_DT_F16, true},
    {"BFloat16", FU_DT_BF16, true},
    {"Int", FU_DT_I64, true},
    {"Int32", FU_DT_I32, true},
    {"Bool", FU_DT_BOOL, true},
    {"Null", FU_DT_NONE, true},
    {"ComplexFloat", FU_DT_NONE, false},
    {"ComplexDouble", FU_DT_NONE, false},
    {"Float8_e4m3fn", FU_DT_NONE, false},
    {"Float8_e5m2", FU_DT_NONE, false},
    {"Float8_e8m0fnu", FU_DT_NONE, false},
    {"Float4_e2m1fn", FU_DT_NONE, false},
    {"Index", FU_DT_NONE, false},
    {"UInt64", FU_DT_NONE, false},
    {"UInt32", FU_DT_NONE, false},
    {"UInt16", FU_DT_NONE, false},
    {"UInt8", FU_DT_NONE, false},
    {"Int16", FU_DT_NONE, false},
    {"Int8", FU_DT_NONE, false},
    {"Byte", FU_DT_NONE, false},
    {"Char", FU_DT_NONE, false},
    {"Short", FU_DT_NONE, false},
};

static const dtype_name torch_names[] = {
    {"float64", FU_DT_F64, true},
    {"float32", FU_DT_F32, true},
    {"float16", FU_DT_F16, true},
    {"bfloat16", FU_DT_BF16, true},
    {"int64", FU_DT_I64, true},
    {"int32", FU_DT_I32, true},
    {"bool", FU_DT_BOOL, true},
    {"double", FU_DT_F64, true},
    {"float", FU_DT_F32, true},
    {"half", FU_DT_F16, true},
    {"long", FU_DT_I64, true},
    {"int", FU_DT_I32, true},
    {"complex32", FU_DT_NONE, false},
    {"complex64", FU_DT_NONE, false},
    {"complex128", FU_DT_NONE, false},
    {"cfloat", FU_DT_NONE, false},
    {"cdouble", FU_DT_NONE, false},
    {"chalf", FU_DT_NONE, false},
    {"uint8", FU_DT_NONE, false},
    {"int8", FU_DT_NONE, false},
    {"int16", FU_DT_NONE, false},
    {"short", FU_DT_NONE, false},
    {"uint16", FU_DT_NONE, false},
    {"uint32", FU_DT_NONE, false},
    {"uint64", FU_DT_NONE, false},
    {"float8_e4m3fn", FU_DT_NONE, false},
    {"float8_e5m2", FU_DT_NONE, false},
    {"float8_e4m3fnuz", FU_DT_NONE, false},
    {"float8_e5m2fnuz", FU_DT_NONE, false},
};

static fu_dtype lookup(const dtype_name *table, size_t n, const char *name, bool *known, bool *supported) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(table[i].name, name) == 0) {
      if (known) *known = true;
      if (supported) *supported = table[i].supported;
      return table[i].dtype;
    }
  if (known) *known = false;
  if (supported) *supported = false;
  return FU_DT_NONE;
}

static const char *reverse(const dtype_name *table, size_t n, fu_dtype t) {
  for (size_t i = 0; i < n; i++)
    if (table[i].supported && table[i].dtype == t) return table[i].name;
  return "?";
}

fu_dtype fu_py_datatype_from_name(const char *name, bool *known, bool *supported) {
  return lookup(datatype_names, sizeof datatype_names / sizeof datatype_names[0], name, known, supported);
}

fu_dtype fu_py_torch_dtype_from_name(const char *name, bool *known, bool *supported) {
  return lookup(torch_names, sizeof torch_names / sizeof torch_names[0], name, known, supported);
}

const char *fu_py_datatype_name(fu_dtype t) {
  return reverse(datatype_names, sizeof datatype_names / sizeof datatype_names[0], t);
}

const char *fu_py_torch_dtype_name(fu_dtype t) {
  if (t == FU_DT_NONE) return "?";
  return reverse(torch_names, sizeof torch_names / sizeof torch_names[0], t);
}
