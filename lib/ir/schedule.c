/* fuser: names of parallel types and lookups in a schedule
 * (include/fuser/schedule.h), shared by the text format, the analyses
 * and the passes. */
#include <string.h>

#include "fuser/schedule.h"

static const char *const ptype_names[FU_PT_COUNT] = {"serial",      "blockIdx.x", "blockIdx.y", "threadIdx.x",
                                                     "threadIdx.y", "vectorize",  "unroll",     "cluster.x"};

const char *fu_ptype_name(fu_ptype p) { return (unsigned)p < FU_PT_COUNT ? ptype_names[p] : "?"; }

static const char *const reduce_names[] = {"none", "serial", "warp", "block", "grid"};

const char *fu_reduce_mode_name(fu_reduce_mode r) { return (unsigned)r <= FU_RM_GRID ? reduce_names[r] : "?"; }

static const char *const tail_names[] = {"exact", "guard", "peel"};

const char *fu_tail_name(fu_tail t) { return (unsigned)t <= FU_TAIL_PEEL ? tail_names[t] : "?"; }

static const char *const persist_names[] = {"none", "registers", "smem", "reread"};

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


/* Schedulers build axes, transforms and loops in scratch arrays whose axis
 * names live in the scratch too; this copies all of it into the arena. */
fu_schedule *fu_schedule_assemble(fu_module *m, const fu_value *ref, const fu_saxis *axes, uint32_t n_axes,
                                  const fu_sxform *xforms, uint32_t n_xforms, const fu_sloop *loops, uint32_t n_loops) {
  fu_schedule *s = fu_arena_calloc(m->arena, 1, sizeof *s);
  if (!s) return NULL;
  s->reference = (fu_value *)ref;
  s->loc = fu_loc_none();
  s->axes = fu_arena_memdup(m->arena, axes, n_axes, sizeof *axes);
  s->xforms = fu_arena_memdup(m->arena, xforms, n_xforms, sizeof *xforms);
  s->loops = fu_arena_memdup(m->arena, loops, n_loops, sizeof *loops);
  s->n_axes = n_axes;
  s->n_xforms = n_xforms;
  s->n_loops = n_loops;
  for (uint32_t a = 0; s->axes && a < n_axes; a++)
    if (!(s->axes[a].name = fu_arena_strdup(m->arena, axes[a].name))) return NULL;
  if ((n_axes && !s->axes) || (n_xforms && !s->xforms) || (n_loops && !s->loops)) return NULL;
  return s;
}
