/* fuser: writing Graphviz files (--segment-dot, the segment pass's and the
 * index-graph pass's dot= option).  One way to open, escape and close, so
 * every such file fails with the same located errors. */
#ifndef FUSER_DOT_H
#define FUSER_DOT_H

#include <stddef.h>
#include <stdio.h>

#include "fuser/diag.h"
#include "fuser/status.h"

/* Opens `path` for writing.  When it cannot: "cannot open the <what> dot
 * file 'PATH' for writing: <reason>" at `loc` (diag may be NULL) and
 * FU_ERR_IO. */
fu_status fu_dot_open(const char *path, const char *what, fu_loc loc, fu_diag_engine *diag, FILE **out);

/* Closes `f` (may be NULL) after writing with status `st`.  A failed write
 * (st FU_ERR_IO, an error flag on the stream, or fclose failing) is
 * reported as "cannot write the <what> dot file 'PATH'" and gives
 * FU_ERR_IO; otherwise `st` is returned. */
fu_status fu_dot_close(FILE *f, fu_status st, const char *path, const char *what, fu_loc loc, fu_diag_engine *diag);

/* The contents of a Graphviz string literal: quotes and backslashes
 * escaped. */
void fu_dot_put_escaped(FILE *out, const char *s, size_t len);

#endif
