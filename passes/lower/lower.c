/* fuser: the `lower` pass (include/fuser/lower.h): every scheduled segment
 * to kernel IR, with its kind's lowering (the LOWER column of
 * fuser/kinds.def).  Transpose segments whose schedule has a shared-memory
 * tile get transpose.c's lowering; the others carry the pointwise
 * scheduler's schedule (where no tile pays, or as the uncoalesced fallback)
 * and get the pointwise lowering: the index graph maps permutes inside the
 * segment, and the layouts of fuser/view_layout.h give the offsets of
 * permuted inputs and of outputs written permuted for host permutes. */
#include <string.h>

#include "fuser/lower.h"
#include "fuser/schedule.h"
#include "lower_internal.h"

static fu_status run_lower(fu_module *m, fu_pass_context *ctx);

const fu_pass_def fu_pass_lower = {
    "lower",
    "turn each scheduled segment into kernel IR (loops, predicates, vector accesses, launch)",
    NULL,
    run_lower,
};

/* The LOWER column of kinds.def. */
static const fu_lower_entry_fn lowerings[FU_SK_COUNT] = {
    NULL, /* FU_SK_NONE */
#define FU_SCHED_KIND(id, name, accept, schedule, lower) lower,
#include "fuser/kinds.def"
};

fu_lower_entry_fn fu_lower_entry(fu_sched_kind k) { return (unsigned)k < FU_SK_COUNT ? lowerings[k] : NULL; }

/* The register file of an SM (32-bit registers) of the device schedule s
 * names, as the persistent lowering finds it (fu_persist_device: its
 * preset, or its arch's); that of every GPU since sm_50 when neither is
 * known. */
static uint32_t schedule_regs_per_sm(const fu_schedule *s) {
  fu_device dev;
  return s && fu_persist_device(s, &dev) && dev.regs_per_sm ? dev.regs_per_sm : 65536;
}

/* Whether schedule s keeps part of a staged row in registers (keep=). */
static bool keeps_registers(const fu_schedule *s) {
  for (uint32_t t = 0; s && t < s->n_tensors; t++)
    if (s->tensors[t].keep > 0) return true;
  return false;
}

/* What the kernel-IR steps after a lowering did, for --debug=lower. */
typedef struct step_counts {
  uint32_t relaxed;     /* exps relaxed to exp2 (relax_exp.c) */
  uint32_t speculated;  /* guarded loads moved ahead of their branch (speculate_loads.c) */
  uint32_t sparse;      /* guards that kept their loads: fewer than half of a block's threads take them */
} step_counts;

/* One segment's kernel, and its kernel-IR steps: (unless opt says not)
 * guarded loads speculated out of their branches, loads hoisted, then
 * (unless opt says not) the exps that only reach 16-bit values relaxed;
 * *counts says how many of each. */
static fu_status lower_one(fu_fusion *f, fu_op *seg, const fu_lower_options *opt, fu_diag_engine *diag,
                           fu_kernel **out, step_counts *counts) {
  *out = NULL;
  memset(counts, 0, sizeof *counts);
  fu_lower_entry_fn entry = fu_lower_entry(seg->u.segment.kind);
  if (!entry) {
    fu_error(diag, seg->loc, "segment '@%s' is a %s segment; its lowering comes later",
             seg->u.segment.name ? seg->u.segment.name : "?", fu_sched_kind_name(seg->u.segment.kind));
    return FU_ERR_UNSUPPORTED;
  }
  fu_status st = entry(f, seg, opt, diag, out);
  const fu_schedule *s = seg->u.segment.schedule;
  bool kept = keeps_registers(s), speculate = !(opt && opt->no_speculate_loads);
  uint32_t regs = schedule_regs_per_sm(s);
  if (st == FU_OK && *out && speculate)
    st = fu_lower_speculate_loads(f->module, *out, fu_lower_hoist_budget(*out, kept, regs), &counts->speculated,
                                  &counts->sparse);
  /* a kernel with nothing speculated keeps its branches as region ends */
  if (st == FU_OK && *out) st = fu_lower_hoist_loads(f->module, *out, kept, regs, counts->speculated > 0);
  if (st == FU_OK && *out && !(opt && opt->no_exp16)) st = fu_lower_relax_exp(f->module, *out, &counts->relaxed);
  if (st == FU_ERR_NOMEM)
    fu_error(diag, seg->loc, "out of memory while lowering '@%s'", seg->u.segment.name ? seg->u.segment.name : "?");
  return st;
}

fu_status fu_lower_segment(fu_fusion *f, fu_op *seg, fu_diag_engine *diag, fu_kernel **out) {
  step_counts counts;
  return lower_one(f, seg, NULL, diag, out, &counts);
}

fu_status fu_lower_module(fu_module *m, fu_diag_engine *diag, FILE *debug) {
  return fu_lower_module_with(m, NULL, diag, debug);
}

fu_status fu_lower_module_with(fu_module *m, const fu_lower_options *opt, fu_diag_engine *diag, FILE *debug) {
  for (fu_fusion *f = m->first; f; f = f->next) {
    for (fu_op *op = f->body.first; op; op = op->next) {
      if (op->kind != FU_OP_SEGMENT) continue;
      fu_segment_info *si = &op->u.segment;
      if (!si->schedule) {
        if (debug)
          fprintf(debug, "lower: @%s: segment '@%s' (%s) has no schedule: not lowered\n", f->name ? f->name : "?",
                  si->name ? si->name : "?", fu_sched_kind_name(si->kind));
        continue;
      }
      if (!fu_lower_entry(si->kind)) {
        if (debug)
          fprintf(debug, "lower: @%s: segment '@%s' is a %s segment; its lowering comes later\n",
                  f->name ? f->name : "?", si->name ? si->name : "?", fu_sched_kind_name(si->kind));
        continue;
      }
      fu_kernel *k = NULL;
      step_counts counts;
      fu_status st = lower_one(f, op, opt, diag, &k, &counts);
      if (st != FU_OK) return st;
      si->kernel = k;
      if (debug)
        fprintf(debug, "lower: @%s: segment '@%s' -> kernel '@%s' (%u parameters, index %s)%s\n",
                f->name ? f->name : "?", si->name ? si->name : "?", k->name, k->n_params, fu_dtype_name(k->index_dtype),
                si->kind != FU_SK_TRANSPOSE           ? ""
                : fu_schedule_has_tile(si->schedule) ? " (transpose: a shared-memory tile)"
                                                      : " (transpose: the uncoalesced pointwise fallback)");
      if (debug && counts.speculated)
        fprintf(debug,
                "lower: @%s: kernel '@%s': %u guarded load(s) of inputs issued ahead of their guard, at index 0 "
                "where it fails, to share the other loads' latency\n",
                f->name ? f->name : "?", k->name, counts.speculated);
      if (debug && counts.sparse)
        fprintf(debug,
                "lower: @%s: kernel '@%s': %u guard(s) that fewer than half of a block's threads take keep their "
                "loads (issued ahead, they would cost every thread registers)\n",
                f->name ? f->name : "?", k->name, counts.sparse);
      if (debug && counts.relaxed)
        fprintf(debug,
                "lower: @%s: kernel '@%s': %u f32 exp(s) only reach bf16/f16 values (through mul, div, neg, casts): "
                "exp2(x * log2 e), two instructions\n",
                f->name ? f->name : "?", k->name, counts.relaxed);
    }
  }
  return FU_OK;
}

static fu_status run_lower(fu_module *m, fu_pass_context *ctx) {
  FILE *debug = fu_pass_debug_enabled(ctx, "lower") ? ctx->debug_out : NULL;
  fu_lower_options opt = {.no_exp16 = !fu_pass_feature_on(ctx, FU_FEATURE_EXP16),
                          .no_speculate_loads = !fu_pass_feature_on(ctx, FU_FEATURE_SPECULATE_LOADS),
                          .no_welford_sums = !fu_pass_feature_on(ctx, FU_FEATURE_WELFORD_SUMS),
                          .grid_tree = fu_pass_feature_on(ctx, FU_FEATURE_GRID_TREE)};
  return fu_lower_module_with(m, &opt, ctx->diag, debug);
}

uint32_t fu_module_kernels(fu_module *m, fu_kernel **out, uint32_t cap, uint32_t *missing) {
  uint32_t n = 0, miss = 0;
  for (fu_fusion *f = m->first; f; f = f->next)
    for (fu_op *op = fu_walk_first(&f->body); op; op = fu_walk_next(op)) {
      if (op->kind != FU_OP_SEGMENT) continue;
      if (!op->u.segment.kernel) {
        miss++;
        continue;
      }
      if (n < cap) out[n] = op->u.segment.kernel;
      n++;
    }
  if (missing) *missing = miss;
  return n;
}
