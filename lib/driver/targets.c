/* fuser driver: the target table.  A row per backend, each under the build
 * option its dependency needs; a new backend is its folder under
 * lib/target/ and one row here.  The first is the preferred one: llvm, then
 * nvrtc (CUDA C through NVRTC, lib/target/cuda). */
#include <string.h>

#include "fuser/target.h"

#ifdef FUSER_HAS_LLVM
extern const fu_target_def fu_target_llvm;
#endif
#ifdef FUSER_HAS_CUDA_C
extern const fu_target_def fu_target_nvrtc;
#endif

static const fu_target_def *const targets[] = {
#ifdef FUSER_HAS_LLVM
    &fu_target_llvm,
#endif
#ifdef FUSER_HAS_CUDA_C
    &fu_target_nvrtc,
#endif
    NULL, /* keeps the table non-empty in a build without backends */
};

const fu_target_def *const *fu_target_all(size_t *n) {
  *n = sizeof targets / sizeof targets[0] - 1;
  return targets;
}

const fu_target_def *fu_target_lookup(const char *name) {
  size_t n;
  const fu_target_def *const *all = fu_target_all(&n);
  for (size_t i = 0; i < n; i++)
    if (!name || strcmp(all[i]->name, name) == 0) return all[i];
  return NULL;
}

const fu_target_def *fu_target_for_text(const char *text_name) {
  size_t n;
  const fu_target_def *const *all = fu_target_all(&n);
  for (size_t i = 0; i < n; i++)
    if (text_name && strcmp(all[i]->text_name, text_name) == 0) return all[i];
  return NULL;
}
