/* fuser driver: a test-only fault for fuser-run's failure paths.
 *
 * FUSER_TEST_CORRUPT_OUTPUT=NAME[,NAME...] changes the first element of
 * each named output after a compiled run (kir or GPU) and before --check:
 * floats and ints get 1 added, bools flip.  It makes a --check mismatch on
 * purpose where the compiler makes none, so that the tests can see what a
 * mismatch does (the repro folder, its narrowing to one segment, run.sh);
 * the repro's run.sh carries the variable, as it carries every FUSER_ one,
 * so the mismatch reproduces there too.  The reference interpreter is
 * never touched. */
#include <stdlib.h>
#include <string.h>

#include "run_internal.h"

static bool named(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; p && *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (*p == '%') {
      p++;
      len--;
    }
    if (len == n && strncmp(p, name, n) == 0) return true;
    p = end ? end + 1 : NULL;
  }
  return false;
}

fu_status run_test_corrupt_outputs(fu_fusion *f, fu_arg *res, uint32_t n_res) {
  const char *list = getenv("FUSER_TEST_CORRUPT_OUTPUT");
  if (!list || !*list) return FU_OK;
  uint32_t n_out = fu_fusion_outputs(f, NULL, 0);
  fu_value *outs[256];
  fu_fusion_outputs(f, outs, n_out < 256 ? n_out : 256);
  for (uint32_t i = 0; i < n_res && i < n_out && i < 256; i++) {
    if (!outs[i]->name || !named(list, outs[i]->name)) continue;
    fu_arg *r = &res[i];
    if (r->kind == FU_ARG_SCALAR) {
      if (fu_dtype_is_float(r->scalar_dtype))
        r->scalar.f += 1;
      else if (fu_dtype_is_bool(r->scalar_dtype))
        r->scalar.b = !r->scalar.b;
      else
        r->scalar.i += 1;
      continue;
    }
    fu_host_tensor *t = &r->tensor;
    if (fu_host_tensor_numel(t) <= 0) continue;
    const int64_t zero[FU_MAX_RANK] = {0};
    int64_t v = fu_host_tensor_get_flat_i64(t, 0);
    if (fu_dtype_is_float(t->dtype))
      fu_host_tensor_set_flat(t, 0, fu_host_tensor_get_flat(t, 0) + 1);
    else
      fu_host_tensor_set_i64(t, zero, fu_dtype_is_bool(t->dtype) ? !v : v + 1);
  }
  return FU_OK;
}
