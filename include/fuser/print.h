/* fuser: the .fir printer.  print(parse(x)) parses to the same module, and
 * printing that again gives the same bytes. */
#ifndef FUSER_PRINT_H
#define FUSER_PRINT_H

#include <stdio.h>

#include "fuser/ir.h"
#include "fuser/strbuf.h"

typedef struct fu_print_options {
  bool print_locs; /* append `// line:col` comments to each op */
} fu_print_options;

/* opts may be NULL. */
void fu_print_module(fu_strbuf *out, const fu_module *m, const fu_print_options *opts);
/* One fusion as fu_print_module writes it; `index` names it (`@f<index>`)
 * when it has no valid name of its own. */
void fu_print_fusion(fu_strbuf *out, const fu_fusion *f, uint32_t index, const fu_print_options *opts);
void fu_print_op(fu_strbuf *out, const fu_op *op, int indent, const fu_print_options *opts);
void fu_print_type(fu_strbuf *out, const fu_type *t);
/* `%name`, or the literal's text. */
void fu_print_value_ref(fu_strbuf *out, const fu_value *v);
/* Convenience: print to a stdio stream. Returns FU_ERR_IO on write error. */
fu_status fu_print_module_file(FILE *out, const fu_module *m, const fu_print_options *opts);

#endif
