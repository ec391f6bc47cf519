/* fuser: dtype names, sizes and promotion. */
#include <string.h>

#include "fuser/ir.h"

static const struct {
  const char *name;
  size_t size;
} dtype_table[FU_DT_COUNT] = {
    [FU_DT_NONE] = {"none", 0},
#define X(id, name, size) [FU_DT_##id] = {name, size},
    FU_DTYPES(X)
#undef X
};

const char *fu_dtype_name(fu_dtype t) { return (unsigned)t < FU_DT_COUNT ? dtype_table[t].name : "?"; }

fu_dtype fu_dtype_from_name(const char *name, size_t len) {
  for (int t = 1; t < FU_DT_COUNT; t++)
    if (strlen(dtype_table[t].name) == len && memcmp(dtype_table[t].name, name, len) == 0) return (fu_dtype)t;
  return FU_DT_NONE;
}

size_t fu_dtype_size(fu_dtype t) { return (unsigned)t < FU_DT_COUNT ? dtype_table[t].size : 0; }

bool fu_dtype_is_float(fu_dtype t) { return t == FU_DT_F64 || t == FU_DT_F32 || t == FU_DT_F16 || t == FU_DT_BF16; }
bool fu_dtype_is_int(fu_dtype t) { return t == FU_DT_I64 || t == FU_DT_I32; }
bool fu_dtype_is_bool(fu_dtype t) { return t == FU_DT_BOOL; }

/* Rank within a category: a wider type of the same category wins. */
static int category(fu_dtype t) { return fu_dtype_is_float(t) ? 2 : fu_dtype_is_int(t) ? 1 : 0; }

fu_dtype fu_dtype_promote(fu_dtype a, fu_dtype b) {
  if (a == b) return a;
  if (a == FU_DT_NONE) return b;
  if (b == FU_DT_NONE) return a;
  int ca = category(a), cb = category(b);
  if (ca != cb) return ca > cb ? a : b;
  if ((a == FU_DT_F16 && b == FU_DT_BF16) || (a == FU_DT_BF16 && b == FU_DT_F16)) return FU_DT_F32;
  return fu_dtype_size(a) >= fu_dtype_size(b) ? a : b;
}
