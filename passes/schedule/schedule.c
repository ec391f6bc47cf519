/* fuser: the `schedule` pass.
 *
 * The pass gives every segment that has no schedule one from its kind's
 * scheduler (the SCHEDULE column of fuser/kinds.def), tuned for the device named by
 * its `device` option (`fuser-opt --device=`).  Transpose segments get a
 * shared-memory tile, or the pointwise schedule where no tile pays
 * (passes/schedule/transpose.c); option `transpose=pointwise` forces the
 * latter, the uncoalesced fallback (the accesses that are not contiguous
 * along the reference's innermost dim go element by element, strided);
 * the schedule records the kind (`kind=transpose`).  A schedule already present (hand-written, or from an
 * earlier run) is kept: running the pass twice changes nothing.  Segments
 * of kinds without a scheduler yet are left alone.
 *
 * What a scheduler writes must pass the verifier
 * (lib/analysis/schedule_verify.c) that the parser runs. */
#include <string.h>

#include "fuser/index_graph.h"
#include "fuser/schedule.h"
#include "internal.h"

static const fu_pass_option_def options[] = {
    {"device",
     "the target: h100, h200, a100, sm_80, sm_90, or a device file (key = value lines); without it the tool's "
     "device (--device, or the GPU fuser-run found)",
     "h100"},
    {"transpose", "tile: transpose segments get a shared-memory tile where it pays; pointwise: always the pointwise "
     "scheduler's uncoalesced fallback",
     "tile"},
    {NULL, NULL, NULL},
};

static fu_status run_schedule(fu_module *m, fu_pass_context *ctx);

const fu_pass_def fu_pass_schedule = {
    "schedule",
    "pick each pointwise segment's schedule (vector width, block, unroll, grid) for --device",
    options,
    run_schedule,
};

static const char *seg_name(const fu_op *seg) { return seg->u.segment.name ? seg->u.segment.name : "?"; }

/* The SCHEDULE column of kinds.def. */
static const fu_schedule_entry_fn schedulers[FU_SK_COUNT] = {
    NULL, /* FU_SK_NONE */
#define FU_SCHED_KIND(id, name, accept, schedule, lower) schedule,
#include "fuser/kinds.def"
};

fu_schedule_entry_fn fu_schedule_entry(fu_sched_kind k) { return (unsigned)k < FU_SK_COUNT ? schedulers[k] : NULL; }

static void ignore_diag(void *user, const fu_diagnostic *d) {
  (void)user;
  (void)d;
}

/* Rewrites the parallel types of a schedule that has loop axes of type
 * `from` to `to` (from vectorize: a peeled split becomes a guarded one,
 * its lanes scalar loads); false (and nothing changed) when the result
 * does not verify, so that a schedule that needs the type (a persistent
 * row kept in registers needs its unrolled loops) keeps it. */
static bool retype_loops(fu_fusion *f, fu_op *seg, fu_schedule *s, fu_ptype from, fu_ptype to, fu_allocator alloc) {
  bool any = false;
  for (uint32_t i = 0; i < s->n_loops; i++) any |= s->loops[i].ptype == from;
  if (!any) return true;
  fu_ptype *saved_p = fu_mem_alloc(&alloc, (s->n_loops + 1) * sizeof *saved_p);
  fu_access *saved_a = fu_mem_alloc(&alloc, (s->n_tensors + 1) * sizeof *saved_a);
  fu_tail *saved_t = fu_mem_alloc(&alloc, (s->n_xforms + 1) * sizeof *saved_t);
  bool ok = saved_p && saved_a && saved_t;
  if (ok) {
    for (uint32_t i = 0; i < s->n_xforms; i++) {
      saved_t[i] = s->xforms[i].tail;
      if (from == FU_PT_VECTORIZE && s->xforms[i].tail == FU_TAIL_PEEL) s->xforms[i].tail = FU_TAIL_GUARD;
    }
    for (uint32_t i = 0; i < s->n_loops; i++) {
      saved_p[i] = s->loops[i].ptype;
      if (s->loops[i].ptype == from) s->loops[i].ptype = to;
    }
    for (uint32_t i = 0; i < s->n_tensors; i++) {
      saved_a[i] = s->tensors[i].access;
      if (from == FU_PT_VECTORIZE && s->tensors[i].access == FU_ACCESS_VECTOR) s->tensors[i].access = FU_ACCESS_DEFAULT;
    }
    fu_diag_engine quiet;
    fu_diag_init(&quiet, alloc);
    quiet.handler = ignore_diag;
    ok = fu_schedule_verify(f, seg, s, &quiet) == FU_OK;
    if (!ok) {
      for (uint32_t i = 0; i < s->n_loops; i++) s->loops[i].ptype = saved_p[i];
      for (uint32_t i = 0; i < s->n_tensors; i++) s->tensors[i].access = saved_a[i];
      for (uint32_t i = 0; i < s->n_xforms; i++) s->xforms[i].tail = saved_t[i];
    }
  }
  if (saved_t) fu_mem_free(&alloc, saved_t, (s->n_xforms + 1) * sizeof *saved_t);
  if (saved_p) fu_mem_free(&alloc, saved_p, (s->n_loops + 1) * sizeof *saved_p);
  if (saved_a) fu_mem_free(&alloc, saved_a, (s->n_tensors + 1) * sizeof *saved_a);
  return ok;
}

/* --disable=vectorize, --disable=unroll and --disable=online_softmax act
 * on what every scheduler wrote, so that no scheduler needs to know of
 * them: vector accesses become unrolled scalar ones (the same elements per
 * thread, vector width 1), unrolled loops serial ones, online folds
 * passes of their own. */
static void apply_switches(fu_fusion *f, fu_op *seg, fu_schedule *s, const fu_schedule_options *opt, FILE *debug) {
  if (!opt) return;
  fu_allocator alloc = f->module->alloc;
  if (opt->no_vectorize && !retype_loops(f, seg, s, FU_PT_VECTORIZE, FU_PT_UNROLL, alloc) && debug)
    fprintf(debug, "schedule: @%s: segment '@%s' keeps its vectorize axis (--disable=vectorize): the schedule needs it\n",
            f->name ? f->name : "?", seg_name(seg));
  if (opt->no_unroll && !retype_loops(f, seg, s, FU_PT_UNROLL, FU_PT_SERIAL, alloc) && debug)
    fprintf(debug, "schedule: @%s: segment '@%s' keeps its unroll axes (--disable=unroll): the schedule needs them\n",
            f->name ? f->name : "?", seg_name(seg));
  if (opt->no_online && s->online) {
    s->online = false;
    if (debug)
      fprintf(debug, "schedule: @%s: segment '@%s': online=false (--disable=online_softmax): each sum of exp(x - "
                     "max(x)) takes a pass of its own\n",
              f->name ? f->name : "?", seg_name(seg));
  }
}

fu_status fu_schedule_module(fu_module *m, const fu_device *dev, fu_diag_engine *diag, FILE *debug) {
  return fu_schedule_module_with(m, dev, NULL, diag, debug);
}

fu_status fu_schedule_module_with(fu_module *m, const fu_device *dev, const fu_schedule_options *opt,
                                  fu_diag_engine *diag, FILE *debug) {
  fu_device def = fu_device_default();
  if (!dev) dev = &def;
  for (fu_fusion *f = m->first; f; f = f->next) {
    if (!opt || !opt->no_inner_outer) {
      fu_status st = fu_schedule_inner_outer(f, dev, debug);
      if (st != FU_OK) return st;
    }
    for (fu_op *op = f->body.first; op; op = op->next) {
      if (op->kind != FU_OP_SEGMENT) continue;
      fu_segment_info *si = &op->u.segment;
      if (si->schedule) continue;
      fu_schedule_entry_fn entry = fu_schedule_entry(si->kind);
      if (si->kind == FU_SK_TRANSPOSE && opt && opt->transpose_pointwise) entry = fu_schedule_pointwise;
      if (si->kind == FU_SK_PERSISTENT && !(opt && opt->no_smem_keep)) entry = fu_schedule_persistent_keep;
      if (!entry) {
        if (debug)
          fprintf(debug, "schedule: @%s: segment '@%s' is a %s segment; its scheduler comes later\n",
                  f->name ? f->name : "?", seg_name(op), fu_sched_kind_name(si->kind));
        continue;
      }
      fu_schedule *s = NULL;
      fu_status st = entry(f, op, dev, diag, debug, &s);
      if (st != FU_OK) return st;
      if (!s) continue; /* the scheduler declined (with a remark): the segment stays as it is */
      apply_switches(f, op, s, opt, debug);
      /* What the scheduler wrote must pass the verifier a parser would run. */
      st = fu_schedule_verify(f, op, s, diag);
      if (st != FU_OK) {
        fu_error(diag, op->loc, "internal error: the %s scheduler wrote an invalid schedule for '@%s'",
                 fu_sched_kind_name(si->kind), seg_name(op));
        return st;
      }
      si->schedule = s;
    }
  }
  return FU_OK;
}

/* The device: the `device` option when the pipeline gives it, else the
 * tool's typed device, else the option's default. */
static fu_status run_schedule(fu_module *m, fu_pass_context *ctx) {
  fu_device dev;
  if (ctx->device && !fu_pass_option_given(ctx, "device")) {
    dev = *ctx->device;
  } else {
    const char *spec = fu_pass_option_value(ctx, "device");
    fu_status st = fu_device_from_spec(spec ? spec : "h100", m->alloc, &dev, ctx->diag);
    if (st != FU_OK) return st;
  }
  if (!fu_pass_feature_on(ctx, FU_FEATURE_CLUSTERS)) dev.max_cluster = 1;
  FILE *debug = fu_pass_debug_enabled(ctx, "schedule") ? ctx->debug_out : NULL;
  const char *tr = fu_pass_option_value(ctx, "transpose");
  fu_schedule_options opt = {tr && strcmp(tr, "pointwise") == 0, !fu_pass_feature_on(ctx, FU_FEATURE_VECTORIZE),
                             !fu_pass_feature_on(ctx, FU_FEATURE_UNROLL),
                             !fu_pass_feature_on(ctx, FU_FEATURE_INNER_OUTER),
                             !fu_pass_feature_on(ctx, FU_FEATURE_ONLINE_SOFTMAX),
                             !fu_pass_feature_on(ctx, FU_FEATURE_SMEM_KEEP)};
  if (tr && !opt.transpose_pointwise && strcmp(tr, "tile") != 0) {
    fu_error(ctx->diag, fu_loc_none(), "schedule: option 'transpose' is '%s'; valid: tile, pointwise", tr);
    return FU_ERR_INVALID_ARG;
  }
  return fu_schedule_module_with(m, &dev, &opt, ctx->diag, debug);
}

fu_status fu_schedule_retarget(fu_module *m, const fu_device *dev) {
  char arch[16];
  fu_device_arch(dev, arch, sizeof arch);
  const char *a = fu_arena_strdup(m->arena, arch), *n = fu_arena_strdup(m->arena, dev->name);
  if (!a || !n) return FU_ERR_NOMEM;
  for (fu_fusion *f = m->first; f; f = f->next)
    for (fu_op *op = fu_walk_first(&f->body); op; op = fu_walk_next(op))
      if (op->kind == FU_OP_SEGMENT && op->u.segment.schedule) {
        op->u.segment.schedule->arch = a;
        op->u.segment.schedule->device = n;
      }
  return FU_OK;
}
