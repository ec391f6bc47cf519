/* fuser driver: fuser-run --save-inputs/--save-outputs: each value as
 * DIR/<name>.npy, or DIR/<fusion>/<name>.npy when several fusions run;
 * scalars as 0-d arrays. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuser/npy.h"
#include "run_internal.h"

/* A folder that exists already is fine: runs may write into the same one;
 * missing parents are made too (a file in the way is named by the caller). */
bool run_save_mkdir(const run_args *a, const char *dir) {
  struct stat sb;
  if (fu_make_dirs(dir) || (errno == ENOTDIR && stat(dir, &sb) == 0)) return true;
  fprintf(a->err, RUN_TOOL ": error: cannot create directory '%s': %s\n", dir, strerror(errno));
  return false;
}

/* Checked before the run, so that a typo in the folder costs no compile or
 * kernel time and no result is printed as if it had been saved.  Whether
 * the folder is writable is asked of the file system (access), which also
 * answers for read-only mounts; a file in the way is named as such. */
bool run_save_prepare(const run_args *a, const char *dir) {
  if (!run_save_mkdir(a, dir)) return false;
  struct stat sb;
  if (stat(dir, &sb) != 0) {
    fprintf(a->err, RUN_TOOL ": error: cannot use directory '%s': %s\n", dir, strerror(errno));
    return false;
  }
  if (!S_ISDIR(sb.st_mode)) {
    fprintf(a->err, RUN_TOOL ": error: '%s' is not a directory (it is where the .npy files would go)\n", dir);
    return false;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    fprintf(a->err, RUN_TOOL ": error: cannot write into directory '%s': %s\n", dir, strerror(errno));
    return false;
  }
  return true;
}

bool run_save_args(const run_args *a, const char *dir, const char *sub, const fu_value *const *vals, const fu_arg *args, uint32_t n,
                   fu_diag_engine *diag, fu_strbuf *log) {
  char path[4096];
  if (!run_save_mkdir(a, dir)) return false;
  if (sub) {
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    if (!run_save_mkdir(a, path)) return false;
  }
  for (uint32_t i = 0; i < n; i++) {
    fu_host_tensor scalar;
    const fu_host_tensor *t = &args[i].tensor;
    if (args[i].kind == FU_ARG_SCALAR) {
      if (fu_host_tensor_alloc(&scalar, a->alloc, args[i].scalar_dtype, 0, NULL) != FU_OK) return false;
      if (fu_dtype_is_float(args[i].scalar_dtype))
        fu_host_tensor_set_flat(&scalar, 0, args[i].scalar.f);
      else
        fu_host_tensor_set_i64(&scalar, NULL, fu_dtype_is_bool(args[i].scalar_dtype) ? args[i].scalar.b : args[i].scalar.i);
      t = &scalar;
    }
    if (sub)
      snprintf(path, sizeof path, "%s/%s/%s.npy", dir, sub, vals[i]->name ? vals[i]->name : "unnamed");
    else
      snprintf(path, sizeof path, "%s/%s.npy", dir, vals[i]->name ? vals[i]->name : "unnamed");
    fu_status st = fu_npy_write(path, t, diag);
    if (args[i].kind == FU_ARG_SCALAR) fu_host_tensor_free(&scalar);
    if (st != FU_OK) return false;
    if (log) fu_strbuf_printf(log, "  saved %s\n", path);
  }
  return true;
}

