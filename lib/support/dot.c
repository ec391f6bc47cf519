/* fuser: the one way Graphviz files are opened, escaped and closed
 * (include/fuser/dot.h). */
#include <errno.h>
#include <string.h>

#include "fuser/dot.h"

fu_status fu_dot_open(const char *path, const char *what, fu_loc loc, fu_diag_engine *diag, FILE **out) {
  *out = fopen(path, "w");
  if (*out) return FU_OK;
  if (diag) fu_error(diag, loc, "cannot open the %s dot file '%s' for writing: %s", what, path, strerror(errno));
  return FU_ERR_IO;
}

/* A write error shows only at the end (buffered output), so the close
 * decides and reports once for the whole file. */
fu_status fu_dot_close(FILE *f, fu_status st, const char *path, const char *what, fu_loc loc, fu_diag_engine *diag) {
  if (!f) return st;
  bool bad = ferror(f) != 0;
  if (fclose(f) != 0) bad = true;
  if (bad || st == FU_ERR_IO) {
    if (diag) fu_error(diag, loc, "cannot write the %s dot file '%s'", what, path);
    return FU_ERR_IO;
  }
  return st;
}

void fu_dot_put_escaped(FILE *out, const char *s, size_t len) {
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '"' || s[i] == '\\') fputc('\\', out);
    fputc(s[i], out);
  }
}
