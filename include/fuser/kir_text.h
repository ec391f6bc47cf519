/* fuser: the textual kernel IR (grammar in docs/ir.md, "Kernel IR").
 *
 * fu_kernel_print writes a kernel; fu_kernel_parse reads it back.  Printing
 * a parsed kernel gives the same bytes as the text it was parsed from, when
 * that text was itself printed. */
#ifndef FUSER_KIR_TEXT_H
#define FUSER_KIR_TEXT_H

#include <stddef.h>

#include "fuser/diag.h"
#include "fuser/kir.h"
#include "fuser/strbuf.h"

/* Prints `k` with every line indented by `indent` spaces (fu_kernel_print:
 * 0).  Values without a name, or whose name another value already took,
 * are printed as `%v<id>` / `%name.<id>` so the text always parses. */
void fu_kernel_print(fu_strbuf *out, const fu_kernel *k);
void fu_kernel_print_indented(fu_strbuf *out, const fu_kernel *k, int indent);

typedef struct fu_kir_parse_options {
  /* When set, tensor and scalar-input parameters bind the values of this
   * fusion with the same name (or the `bind=` / `input=` name), and a
   * stated shape must match.  When NULL they bind placeholder values that
   * belong to no fusion (carrying the name and the stated type). */
  fu_fusion *scope;
  /* Run fu_kernel_verify on each kernel, with locations. */
  bool verify;
} fu_kir_parse_options;

/* Parses exactly one kernel from the whole buffer into arena `m` (which
 * owns the result; its interned symbols are used for extents) and
 * verifies it.  On error, reports located diagnostics, sets *out to NULL
 * and returns FU_ERR_PARSE, FU_ERR_VERIFY or FU_ERR_NOMEM. */
fu_status fu_kernel_parse(const fu_source *src, fu_module *m, fu_diag_engine *diag, fu_kernel **out);

/* Parses every kernel of the buffer (zero or more), verified.  *out is an
 * arena array of *n_out kernels. */
fu_status fu_kernel_parse_list(const fu_source *src, fu_module *m, fu_diag_engine *diag,
                               fu_kernel ***out, uint32_t *n_out);

/* For parsers that embed kernel IR in another text: parses one kernel that
 * starts at byte `offset` of `src` (after whitespace and comments) and sets
 * *end_offset just past its closing '}'.  opts may be NULL (no scope, verify). */
fu_status fu_kernel_parse_at(const fu_source *src, size_t offset, const fu_kir_parse_options *opts,
                             fu_module *m, fu_diag_engine *diag, fu_kernel **out, size_t *end_offset);

#endif
