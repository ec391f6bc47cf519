/* fuser: the .fir parser (grammar in docs/ir.md). */
#ifndef FUSER_PARSE_H
#define FUSER_PARSE_H

#include "fuser/diag.h"
#include "fuser/ir.h"

/* Parse a whole buffer into a new module.  Result types omitted in the text
 * are inferred; stated ones are kept as written (the verifier checks them).
 * On error, reports located diagnostics to `diag`, sets *out to NULL and
 * returns FU_ERR_PARSE (or FU_ERR_NOMEM).  The source must outlive the module
 * (locations point into it). */
fu_status fu_parse_module(const fu_source *src, fu_allocator alloc, fu_diag_engine *diag,
                          fu_module **out);

#endif
