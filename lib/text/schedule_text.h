/* fuser: the parts of the .fir grammar that live inside a segment body after
 * its ops: the schedule (lib/text/schedule_text.c) and the lowered kernel
 * (parsed by the kernel IR parser).  Internal to lib/text: the parser calls
 * these when it meets `schedule` or `kernel` in a segment. */
#ifndef FUSER_TEXT_SCHEDULE_TEXT_H
#define FUSER_TEXT_SCHEDULE_TEXT_H

#include <stdbool.h>

#include "fuser/gemm.h"
#include "fuser/schedule.h"
#include "lexer.h"

/* Parses `schedule attrs? { ... }`.  `kw` is the `schedule` token; the
 * lexer stands just after it and is left just after the closing '}'.
 * `values` resolves %names (the parser's table).  Returns false on a
 * syntax error (the caller skips to the next fusion); semantic errors are
 * reported and parsing goes on, *out then being NULL.  *nomem is set when
 * memory ran out. */
bool fu_txt_parse_schedule(fu_lexer *lx, const fu_token *kw, fu_module *m, const fu_txt_symtab *values,
                           fu_diag_engine *diag, fu_schedule **out, bool *nomem);

/* Parses a matmul segment's `gemm %A, %B -> %D {...}` (fuser/gemm.h);
 * `kw` is the `gemm` token, the lexer is left just after the closing '}'.
 * False on a syntax error; semantic errors are reported with *out NULL. */
bool fu_txt_parse_gemm(fu_lexer *lx, const fu_token *kw, fu_module *m, const fu_txt_symtab *values,
                       fu_diag_engine *diag, fu_gemm **out, bool *nomem);

/* Parses the kernel starting at token `kw` (`kernel`) with the kernel IR
 * parser, binding its tensor parameters to the values of f, and moves the
 * lexer just past the kernel's closing '}'.  Returns false on any error
 * (reported). */
bool fu_txt_parse_segment_kernel(fu_lexer *lx, const fu_token *kw, fu_module *m, fu_fusion *f,
                                 fu_diag_engine *diag, struct fu_kernel **out, bool *nomem);

#endif
