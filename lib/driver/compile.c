/* fuser driver: compiling kernels for a target (fuser/target.h), the one
 * path every tool takes from lowered IR to LLVM IR or PTX. */
#include <string.h>

#include "fuser/gemm.h"
#include "fuser/driver.h"
#include "fuser/lower.h"
#include "fuser/schedule.h"

/* Target diagnostics go to the engine of the call at hand; those without a
 * line get the call's input file, so every error names what it is about. */
static void relay(void *user, const fu_diagnostic *d) {
  fu_compiler *c = user;
  fu_loc loc = d->loc;
  if (!loc.src) loc.src = c->src;
  if (c->to) fu_diag_report(c->to, d->severity, loc, "%s", d->message);
}

void fu_compiler_init(fu_compiler *c, const char *target, const fu_target_options *o, fu_allocator alloc) {
  memset(c, 0, sizeof *c);
  c->target = fu_target_lookup(target);
  if (o) c->options = *o;
  c->alloc = alloc;
  fu_diag_init(&c->relay, alloc);
  c->relay.handler = relay;
  c->relay.user = c;
}

void fu_compiler_free(fu_compiler *c) {
  if (c->state) c->target->close(c->state);
  c->state = NULL;
}

void fu_compiler_retarget(fu_compiler *c, const fu_target_def *t) {
  if (c->state) c->target->close(c->state);
  c->state = NULL;
  c->target = t;
}

static fu_loc file_loc(const fu_source *src) {
  fu_loc l = {src, 0, 0};
  return l;
}

fu_status fu_compile_kernels(fu_compiler *c, const fu_kernel *const *ks, uint32_t n, fu_target_output what,
                             const char *arch, const fu_source *src, fu_strbuf *out, fu_diag_engine *diag) {
  if (!c->target) {
    fu_error(diag, file_loc(src), "no code-generation backend is available in this build (see README.md)");
    return FU_ERR_UNSUPPORTED;
  }
  c->to = diag;
  c->src = src;
  fu_status st = FU_OK;
  if (!c->state) st = c->target->open(&c->options, c->alloc, &c->relay, &c->state);
  if (st == FU_OK) {
    st = c->target->emit(c->state, ks, n, what, arch ? arch : FU_DEFAULT_ARCH, out);
    fu_target_timing t;
    memset(&t, 0, sizeof t);
    if (c->target->last_timing) c->target->last_timing(c->state, &t);
    c->total.load_ms += t.load_ms;
    c->total.build_ms += t.build_ms;
    c->total.opt_ms += t.opt_ms;
    c->total.codegen_ms += t.codegen_ms;
    c->total.total_ms += t.total_ms;
    c->total.cpu_ms += t.cpu_ms;
    c->calls++;
  }
  c->to = NULL;
  c->src = NULL;
  return st;
}

static bool selected(const fu_fusion *f, const char *fusion) {
  return !fusion || (f->name && strcmp(f->name, fusion) == 0);
}

/* The segments' kernels in order (*n of them; ks may be NULL to count),
 * and the one architecture the schedules name.  A segment left without a
 * kernel is an error at it, naming its kind, so that no tool hands on a
 * partial result unasked; with `partial` it is a warning and is left out. */
static fu_status collect(const fu_module *m, const char *fusion, const fu_kernel **ks, uint32_t *n,
                         const char **arch, bool partial, fu_diag_engine *diag) {
  fu_status st = FU_OK;
  *n = 0;
  for (fu_fusion *f = m->first; f; f = f->next) {
    if (!selected(f, fusion)) continue;
    for (fu_op *op = fu_walk_first(&f->body); op; op = fu_walk_next(op)) {
      if (op->kind != FU_OP_SEGMENT) continue;
      const fu_segment_info *si = &op->u.segment;
      if (!si->kernel && fu_segment_runnable(op)) continue; /* a matmul segment: cuBLASLt, no PTX */
      if (!si->kernel) {
        if (ks || !diag) continue;
        if (partial) {
          fu_warning(diag, op->loc,
                     "segment '@%s' (%s) has no kernel: it is not in the output (%s)", si->name ? si->name : "?",
                     fu_sched_kind_name(si->kind), fu_segment_no_kernel_reason(op));
        } else {
          fu_error(diag, op->loc,
                   "segment '@%s' of fusion '@%s' (kind %s) has no kernel: %s (--allow-partial emits the other "
                   "segments)",
                   si->name ? si->name : "?", f->name ? f->name : "", fu_sched_kind_name(si->kind),
                   fu_segment_no_kernel_reason(op));
          if (st == FU_OK) st = FU_ERR_UNSUPPORTED;
        }
        continue;
      }
      if (ks) ks[*n] = si->kernel;
      (*n)++;
      if (ks || !diag || !si->schedule || !si->schedule->arch) continue;
      if (*arch && strcmp(*arch, si->schedule->arch) != 0 && st == FU_OK) {
        fu_error(diag, op->loc, "segment '@%s' was scheduled for %s, another for %s: one module has one target",
                 si->name ? si->name : "?", si->schedule->arch, *arch);
        st = FU_ERR_INVALID_ARG;
      }
      *arch = si->schedule->arch;
    }
  }
  return st;
}

uint32_t fu_compile_count_kernels(const fu_module *m, const char *fusion) {
  uint32_t n = 0;
  const char *arch = NULL;
  collect(m, fusion, NULL, &n, &arch, true, NULL);
  return n;
}

/* Whether a selected fusion has a matmul segment with its plan. */
static bool has_matmul_segments(const fu_module *m, const char *fusion) {
  for (fu_fusion *f = m->first; f; f = f->next) {
    if (!selected(f, fusion)) continue;
    for (fu_op *op = f->body.first; op; op = op->next)
      if (op->kind == FU_OP_SEGMENT && !op->u.segment.kernel && fu_segment_runnable(op)) return true;
  }
  return false;
}

fu_status fu_compile_module(fu_compiler *c, fu_module *m, const char *fusion, fu_target_output what,
                            const char *arch, const fu_source *src, fu_strbuf *out, fu_diag_engine *diag) {
  uint32_t n = 0;
  const char *scheduled = NULL;
  fu_status st = collect(m, fusion, NULL, &n, &scheduled, c->allow_partial, diag);
  if (st != FU_OK) return st;
  if (n == 0 && has_matmul_segments(m, fusion)) {
    /* every segment runs through cuBLASLt: a module with no kernels */
    bool llvm = what == FU_TARGET_TEXT && c->target && strcmp(c->target->text_name, "llvm") == 0;
    fu_strbuf_puts(out, llvm ? "; " : "// ");
    fu_strbuf_puts(out, "fuser: no kernels: every segment is a matmul segment (cuBLASLt)\n");
    /* PTX that ptxas and the driver accept: the header of an empty module */
    if (what == FU_TARGET_PTX)
      fu_strbuf_printf(out, ".version 7.8\n.target %s\n.address_size 64\n", arch ? arch : scheduled ? scheduled : FU_DEFAULT_ARCH);
    return FU_OK;
  }
  if (n == 0) {
    fu_error(diag, file_loc(src),
             "nothing to emit: no segment has a kernel (run the pipeline to the lower pass, e.g. --pass=all)");
    return FU_ERR_INVALID_ARG;
  }
  if (!arch) arch = scheduled;
  if (c->target && arch && !c->target->arch_supported(arch)) {
    fu_error(diag, file_loc(src), "the %s backend cannot compile for '%s'", c->target->name, arch);
    return FU_ERR_UNSUPPORTED;
  }
  const fu_kernel **ks = fu_mem_alloc(&m->alloc, n * sizeof *ks);
  if (!ks) return FU_ERR_NOMEM;
  collect(m, fusion, ks, &n, &scheduled, true, diag);
  st = fu_compile_kernels(c, ks, n, what, arch, src, out, diag);
  fu_mem_free(&m->alloc, ks, n * sizeof *ks);
  return st;
}

void fu_compiler_timing_report(const fu_compiler *c, fu_strbuf *out) {
  if (!c->calls) return;
  const fu_target_timing *t = &c->total;
  if (c->target && strcmp(c->target->name, "llvm") != 0) {
    /* the nvrtc target: load is libnvrtc's, build the CUDA C, codegen NVRTC */
    fu_strbuf_printf(out,
                     "emit breakdown (%s): library load %.3f ms, kernel IR to %s %.3f ms, compile to PTX %.3f ms, "
                     "total without the load %.3f ms (cpu %.3f ms)\n",
                     c->target->name, t->load_ms, c->target->text_name, t->build_ms, t->codegen_ms,
                     t->total_ms - t->load_ms, t->cpu_ms);
    return;
  }
  /* a fusion whose math needs no libdevice function never opens it */
  if (t->load_ms > 0.0)
    fu_strbuf_printf(out, "emit breakdown: libdevice load %.3f ms (opening it and reading the bodies used), ",
                     t->load_ms);
  else
    fu_strbuf_printf(out, "emit breakdown: libdevice not read (no kernel calls it), ");
  fu_strbuf_printf(out,
                   "kernel IR to LLVM %.3f ms, optimization %.3f ms, code generation %.3f ms, total without "
                   "libdevice %.3f ms (cpu %.3f ms)\n",
                   t->build_ms, t->opt_ms, t->codegen_ms, t->total_ms - t->load_ms, t->cpu_ms);
}

const char *fu_segment_no_kernel_reason(const fu_op *seg) {
  if (seg->u.segment.kind == FU_SK_MATMUL)
    return "a matmul segment runs through cuBLASLt with the plan the 'schedule' pass writes, and it has none";
  if (!fu_lower_entry(seg->u.segment.kind)) return "its kind cannot be compiled yet";
  if (!seg->u.segment.schedule)
    return "it has no schedule (its scheduler does not take it yet, --debug=schedule says why, or no 'schedule' pass ran)";
  return "no 'lower' pass ran over it";
}
