/* fuser: the names of the scheduler kinds, from kinds.def.  Only the name
 * column is expanded here: the entry points belong to the passes. */
#include <string.h>

#include "fuser/ir.h"

static const char *const kind_names[FU_SK_COUNT] = {
    "none",
#define FU_SCHED_KIND(id, name, accept, schedule, lower) name,
#include "fuser/kinds.def"
};

/* Kept in step with the table by construction: every row, in order. */
static const char all_names[] =
#define FU_SCHED_KIND(id, name, accept, schedule, lower) name ", "
#include "fuser/kinds.def"
    "none";

const char *fu_sched_kind_name(fu_sched_kind k) { return (unsigned)k < FU_SK_COUNT ? kind_names[k] : "?"; }

bool fu_sched_kind_from_name(const char *name, size_t len, fu_sched_kind *out) {
  for (int k = 0; k < FU_SK_COUNT; k++)
    if (strlen(kind_names[k]) == len && memcmp(kind_names[k], name, len) == 0) {
      *out = (fu_sched_kind)k;
      return true;
    }
  return false;
}

const char *fu_sched_kind_names(void) { return all_names; }
