/* fuser: names of parallel types and lookups in a schedule
 * (include/fuser/schedule.h), shared by the text format, the analyses
 * and the passes. */
#include <string.h>

#include "fuser/schedule.h"

static const char *const ptype_names[FU_PT_COUNT] = {"serial",      "blockIdx.x", "blockIdx.y", "threadIdx.x",
                                                     "threadIdx.y", "vectorize",  "unroll"};

const char *fu_ptype_name(fu_ptype p) { return (unsigned)p < FU_PT_COUNT ? ptype_names[p] : "?"; }

static const char *const reduce_names[] = {"none", "serial", "warp", "block", "grid"};

const char *fu_reduce_mode_name(fu_reduce_mode r) { return (unsigned)r <= FU_RM_GRID ? reduce_names[r] : "?"; }

static const char *const persist_names[] = {"none", "registers", "reread"};

const char *fu_persist_mode_name(fu_persist_mode p) { return (unsigned)p <= FU_PM_REREAD ? persist_names[p] : "?"; }

fu_ptype fu_ptype_from_name(const char *name, size_t len) {
  for (int i = 0; i < FU_PT_COUNT; i++)
    if (strlen(ptype_names[i]) == len && memcmp(ptype_names[i], name, len) == 0) return (fu_ptype)i;
  return FU_PT_COUNT;
}

const fu_stensor *fu_schedule_tensor(const fu_schedule *s, const fu_value *v) {
  for (uint32_t i = 0; s && i < s->n_tensors; i++)
    if (s->tensors[i].value == v) return &s->tensors[i];
  return NULL;
}

int32_t fu_schedule_axis(const fu_schedule *s, const char *name) {
  for (uint32_t i = 0; s && name && i < s->n_axes; i++)
    if (s->axes[i].name && strcmp(s->axes[i].name, name) == 0) return (int32_t)i;
  return -1;
}

int32_t fu_schedule_loop_of(const fu_schedule *s, fu_ptype p) {
  for (uint32_t i = 0; s && i < s->n_loops; i++)
    if (s->loops[i].ptype == p) return (int32_t)i;
  return -1;
}

