/* fuser: the strip-bookend-views pass.
 *
 * Moves metadata-only ops (FU_OF_VIEW) at both ends of a fusion out of the
 * kernel region by marking them host ops (op->host, printed `host=true`):
 * views of inputs that are pure reinterpretations of the input's memory,
 * and views that lead only to fusion outputs from a value a kernel writes,
 * where the kernel can write that value so that the outputs come out dense
 * row-major.  The layouts this implies are given by fuser/view_layout.h.
 * docs/passes.md, section "strip-bookend-views", has the rules. */
#ifndef FUSER_BOOKEND_H
#define FUSER_BOOKEND_H

#include "fuser/pass.h"

extern const fu_pass_def fu_pass_strip_bookend_views;

/* The pass's body, for callers that hold no pass context (ctx may be NULL:
 * no debug output). */
fu_status fu_strip_bookend_views(fu_module *m, fu_pass_context *ctx);

#endif
