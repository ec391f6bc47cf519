/* fuser: vector widths the schedule verifier accepts.
 *
 * The reduction and persistent schedulers pick their vector width from the
 * row length and the dtypes only, not from every access: an input with
 * permuted or non-contiguous strides, a permuted or broadcast operand, or
 * an output wider than the inputs can make a vector access cross a dim
 * boundary.  The schedule verifier is what knows, so a schedule it refuses
 * is rebuilt with half the width, down to scalar loads, which always
 * verify. */
#include <stdio.h>

#include "internal.h"

static void quiet_handler(void *user, const fu_diagnostic *d) {
  (void)user;
  (void)d;
}

fu_status fu_schedule_narrowed(fu_fusion *f, fu_op *seg, const fu_device *dev, fu_diag_engine *diag, FILE *debug,
                               fu_schedule_width_fn build, fu_schedule **out) {
  int64_t cap = 8;
  for (;;) {
    int64_t vw = 1;
    fu_status st = build(f, seg, dev, diag, debug, cap, &vw, out);
    if (st != FU_OK || !*out || vw <= 1) return st;
    fu_diag_engine quiet;
    fu_diag_init(&quiet, f->module->alloc);
    quiet.handler = quiet_handler;
    if (fu_schedule_verify(f, seg, *out, &quiet) == FU_OK) return FU_OK;
    if (debug)
      fprintf(debug, "schedule: @%s: %lld-element vectors do not fit every access: narrowed to %lld\n",
              seg->u.segment.name ? seg->u.segment.name : "?", (long long)vw, (long long)(vw / 2));
    cap = vw / 2;
  }
}
