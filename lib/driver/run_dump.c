/* fuser driver: fuser-run's dumps of a fusion on concrete inputs
 * (FUSER_DUMP, include/fuser/dump.h): launch_params, kernel_args and
 * eff_bandwidth come from the runtime's launch plan, the same plan the
 * GPU path launches; --device=kir builds it too (it needs no GPU), so the
 * dumps of both paths read alike.  The stage dumps (IR, code) are the
 * pipeline's and fu_dump_code's. */
#include <string.h>

#include "run_internal.h"

#ifdef FUSER_HAS_CUDA_DRIVER
#include "fuser/runtime.h"

static const char *fname(const fu_fusion *f) { return f->name ? f->name : ""; }

/* fu_rt_plan_print_launches writes a `launch @k: grid=...` line per launch
 * and an indented line per argument: launch_params gets the first kind,
 * kernel_args both (an argument list says which launch it belongs to),
 * and, given the exec `e`, every buffer's device address. */
void run_dump_launches(const run_args *a, const fu_fusion *f, const fu_rt_plan *plan, const fu_rt_exec *e,
                       uint32_t which, const char *stage) {
  bool want_launch = (which & (1u << FU_DUMP_LAUNCH_PARAMS)) && fu_dump_on(a->dumps, FU_DUMP_LAUNCH_PARAMS);
  bool want_args = (which & (1u << FU_DUMP_KERNEL_ARGS)) && fu_dump_on(a->dumps, FU_DUMP_KERNEL_ARGS);
  if (!want_launch && !want_args) return;
  fu_strbuf all, launches;
  fu_strbuf_init(&all, a->alloc);
  fu_strbuf_init(&launches, a->alloc);
  fu_rt_plan_print_launches(&all, plan);
  for (const char *p = all.data; p && *p;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p + 1) : strlen(p);
    if (p[0] != ' ') fu_strbuf_append(&launches, p, n);
    p += n;
  }
  for (uint32_t b = 0; e && b < plan->n_buffers; b++)
    fu_strbuf_printf(&all, "buffer %u at 0x%llx, %zu bytes\n", b, (unsigned long long)fu_rt_exec_buffer_address(e, b),
                     plan->buffers[b].bytes);
  if (want_launch) fu_dump_write(a->dumps, FU_DUMP_LAUNCH_PARAMS, fname(f), stage, launches.data, launches.len);
  if (want_args) fu_dump_write(a->dumps, FU_DUMP_KERNEL_ARGS, fname(f), stage, all.data, all.len);
  fu_strbuf_free(&all);
  fu_strbuf_free(&launches);
}

/* eff_bandwidth without a GPU: each launch's bytes, no time. */
static void dump_bytes(const run_args *a, const fu_fusion *f, const fu_rt_plan *plan) {
  fu_strbuf sb;
  fu_strbuf_init(&sb, a->alloc);
  for (uint32_t l = 0; l < plan->n_launches; l++) {
    const fu_rt_launch_plan *lp = &plan->launches[l];
    fu_strbuf_printf(&sb, "kernel @%s: %llu bytes (reads %llu, writes %llu); no time on the kernel-IR interpreter\n",
                     lp->kernel->name, (unsigned long long)(lp->bytes_read + lp->bytes_written),
                     (unsigned long long)lp->bytes_read, (unsigned long long)lp->bytes_written);
  }
  fu_dump_write(a->dumps, FU_DUMP_EFF_BANDWIDTH, fname(f), "kernel-IR interpreter", sb.data, sb.len);
  fu_strbuf_free(&sb);
}

void run_dump_kir(const run_args *a, fu_fusion *f, const fu_arg *in, uint32_t n_in, fu_diag_engine *diag) {
  if (!fu_dump_on(a->dumps, FU_DUMP_LAUNCH_PARAMS) && !fu_dump_on(a->dumps, FU_DUMP_KERNEL_ARGS) &&
      !fu_dump_on(a->dumps, FU_DUMP_EFF_BANDWIDTH))
    return;
  fu_rt_plan plan;
  memset(&plan, 0, sizeof plan);
  if (fu_rt_plan_build(f, in, n_in, a->alloc, diag, &plan) == FU_OK) {
    run_dump_launches(a, f, &plan, NULL, ~0u, "the launch plan, on the kernel-IR interpreter (buffers, no addresses)");
    if (fu_dump_on(a->dumps, FU_DUMP_EFF_BANDWIDTH)) dump_bytes(a, f, &plan);
  }
  fu_rt_plan_free(&plan);
}

uint32_t run_dump_plan_kinds(void) {
  return (1u << FU_DUMP_LAUNCH_PARAMS) | (1u << FU_DUMP_KERNEL_ARGS) | (1u << FU_DUMP_EFF_BANDWIDTH);
}

#else /* !FUSER_HAS_CUDA_DRIVER: launch_params from the kernel IR (fu_dump_code) */

void run_dump_kir(const run_args *a, fu_fusion *f, const fu_arg *in, uint32_t n_in, fu_diag_engine *diag) {
  (void)f;
  (void)in;
  (void)n_in;
  (void)diag;
  if (fu_dump_on(a->dumps, FU_DUMP_KERNEL_ARGS) || fu_dump_on(a->dumps, FU_DUMP_EFF_BANDWIDTH))
    fprintf(a->err, RUN_TOOL ": warning: kernel_args and eff_bandwidth need the runtime's launch plan, which this "
                    "build does not have\n");
}

uint32_t run_dump_plan_kinds(void) { return 0; }

#endif
