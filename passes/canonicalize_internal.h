/* fuser: the canonicalize pass's parts in other files. */
#ifndef FUSER_PASSES_CANONICALIZE_INTERNAL_H
#define FUSER_PASSES_CANONICALIZE_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "fuser/ir.h"

/* Option `reciprocal` (canonicalize_reciprocal.c): every float division of
 * blk (and of its unscheduled segments) by a broadcast of a computed value
 * becomes multiplications by a reciprocal computed once per broadcast
 * element; counts them in *n_rewritten, explains each on dbg when non-NULL. */
fu_status fu_canon_reciprocals(fu_fusion *f, fu_block *blk, FILE *dbg, uint32_t *n_rewritten);

#endif
