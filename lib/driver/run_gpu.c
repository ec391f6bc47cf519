/* fuser driver: fuser-run --device=gpu: compile (or read --ptx), load,
 * plan, run and check each fusion with the CUDA driver runtime
 * (lib/runtime), and time it with --bench.  Builds without the runtime
 * get a stub that says so. */
#include <errno.h>
#include <string.h>

#include "run_internal.h"

#ifdef FUSER_HAS_CUDA_DRIVER
#include "fuser/runtime.h"

/* Diagnostics of the GPU path: located ones as usual; unlocated ones (the
 * driver's) prefixed with the tool's name.  While `hold` is set the first
 * unlocated error is kept instead, so that opening the device can fail
 * with one clear line. */
typedef struct gpu_diag {
  FILE *err;
  bool hold;
  char held[1024];
} gpu_diag;

static void gpu_diag_handler(void *user, const fu_diagnostic *d) {
  gpu_diag *g = user;
  bool located = fu_loc_known(d->loc) || (d->loc.src && d->loc.src->name);
  if (g->hold && !located && d->severity == FU_SEV_ERROR && !g->held[0]) {
    snprintf(g->held, sizeof g->held, "%s", d->message);
    return;
  }
  if (located)
    fu_diag_print(g->err, d);
  else
    fprintf(g->err, RUN_TOOL ": %s: %s\n", fu_severity_name(d->severity), d->message);
}

/* How many elements of a and b (same dtype and shape) differ in their
 * bytes. */
static int64_t differing_elems(const fu_host_tensor *a, const fu_host_tensor *b) {
  size_t es = fu_dtype_size(a->dtype);
  int64_t numel = fu_host_tensor_numel(a), bad = 0;
  for (int64_t k = 0; k < numel; k++)
    bad += memcmp((const char *)a->data + k * (int64_t)es, (const char *)b->data + k * (int64_t)es, es) != 0;
  return bad;
}

/* Ints have no NaN: an element that no kernel writes looks like -1 after
 * the 0xFF poison, a valid value.  A second run poisoned with 0x00 tells:
 * elements that differ between the runs were never written. */
static fu_status recheck_ints(fu_rt_exec *e, const fu_arg *first, uint32_t n, run_check_line *lines) {
  bool any = false;
  for (uint32_t i = 0; i < n; i++)
    if (first[i].kind == FU_ARG_TENSOR && fu_dtype_is_int(first[i].tensor.dtype)) any = true;
  if (!any) return FU_OK;
  fu_allocator al = fu_default_allocator(); /* the tool's allocator is the default one */
  fu_arg *second = NULL;
  uint32_t n2 = 0;
  fu_status st = fu_rt_exec_poison(e, 0x00);
  if (st == FU_OK) st = fu_rt_exec_run(e);
  if (st == FU_OK) st = fu_rt_exec_outputs(e, al, &second, &n2);
  if (st != FU_OK) return st;
  for (uint32_t i = 0; i < n && i < n2; i++) {
    const fu_host_tensor *t = &first[i].tensor;
    if (first[i].kind != FU_ARG_TENSOR || !fu_dtype_is_int(t->dtype)) continue;
    lines[i].n_unwritten += differing_elems(t, &second[i].tensor);
    if (lines[i].n_unwritten) lines[i].pass = false;
  }
  fu_args_free(second, n2, al);
  return FU_OK;
}

/* After --bench's runs, which put independent kernels on a second stream
 * (lib/runtime/streams.c) where the checked run waited after each: the
 * outputs of the last of them must equal the checked run's bit for bit (the
 * kernels are deterministic), else the streams raced. */
static fu_status recheck_streams(fu_rt_exec *e, const fu_rt_plan *plan, const fu_arg *first, uint32_t n,
                                 fu_diag_engine *diag) {
  fu_allocator al = fu_default_allocator(); /* the tool's allocator is the default one */
  fu_arg *again = NULL;
  uint32_t n2 = 0;
  fu_status st = fu_rt_exec_outputs(e, al, &again, &n2);
  for (uint32_t i = 0; i < n && i < n2 && st == FU_OK; i++) {
    const fu_host_tensor *t = &first[i].tensor;
    if (first[i].kind != FU_ARG_TENSOR) continue;
    int64_t numel = fu_host_tensor_numel(t), bad = differing_elems(t, &again[i].tensor);
    if (bad) {
      const fu_value *o = plan->outputs[i];
      fu_error(diag, plan->fusion->loc,
               "output '%%%s' after --bench's runs on two streams differs from the checked run's in %lld of %lld "
               "elements",
               o->name ? o->name : "?", (long long)bad, (long long)numel);
      st = FU_ERR_RUNTIME;
    }
  }
  fu_args_free(again, n2, al);
  return st;
}

/* For each output with an alias, the input's device memory after the run
 * and whether the kernel wrote it in place or the runtime copied it there;
 * *after stays NULL when the fusion has no alias. */
static fu_status read_aliases(fu_rt_exec *e, const fu_rt_plan *plan, fu_fusion *f, uint32_t n_res, fu_allocator al,
                              fu_arg **after, const char ***how) {
  *after = NULL;
  *how = NULL;
  bool any = false;
  for (uint32_t i = 0; i < n_res; i++) any |= run_output_alias(f, i) != NULL;
  if (!any) return FU_OK;
  *after = fu_mem_calloc(&al, n_res, sizeof **after);
  *how = fu_mem_calloc(&al, n_res, sizeof **how);
  if (!*after || !*how) return FU_ERR_NOMEM;
  for (uint32_t i = 0; i < n_res; i++) {
    const fu_value *in = run_output_alias(f, i), *o = plan->outputs[i];
    if (!in) continue;
    fu_host_tensor t;
    fu_status st = fu_rt_exec_input_after(e, in, al, &t);
    if (st != FU_OK) return st;
    (*after)[i] = fu_arg_tensor(t);
    bool in_place = plan->views[o->id].buffer == plan->views[in->id].buffer;
    (*how)[i] = in_place ? "written in place by its kernel" : "copied there after the kernels";
  }
  return FU_OK;
}

static void text_timing(fu_strbuf *sb, const char *what, const fu_rt_timing *t) {
  fu_strbuf_printf(sb, "    %s: median %.2f us (min %.2f, max %.2f), %llu bytes, %.1f GB/s, %.1f%% of copy\n", what,
                   t->median_us, t->min_us, t->max_us, (unsigned long long)t->bytes, t->gbs, t->pct_copy);
}

static void json_timing(fu_strbuf *sb, const fu_rt_timing *t) {
  fu_strbuf_puts(sb, "{\"name\": ");
  run_put_json_string(sb, t->name ? t->name : "");
  fu_strbuf_printf(sb, ", \"median_us\": %.4f, \"min_us\": %.4f, \"max_us\": %.4f, \"bytes\": %llu, \"gbs\": %.3f, "
                       "\"pct_copy\": %.3f}",
                   t->median_us, t->min_us, t->max_us, (unsigned long long)t->bytes, t->gbs, t->pct_copy);
}

typedef struct gpu_ctx {
  fu_rt *rt;
  fu_diag_engine *diag;
  const char *ptx_text; /* --ptx contents, or NULL */
  size_t ptx_len;
  fu_rt_module *ptx_mod; /* --ptx loaded once, shared by every fusion it holds */
  fu_compiler comp;     /* the build's target, when it has one */
  fu_compiler *active;  /* the one that compiles now (--diff-backends: either), NULL: comp */
  fu_module *m;
  const fu_source *src;
  bool fault_said; /* the fusions skipped after a fault are said once */
} gpu_ctx;

/* Whether the kernels come from the --ptx file (not a backend compiling
 * now, as --diff-backends' second one does). */
static bool from_ptx_file(const gpu_ctx *g) { return g->ptx_text && !g->active; }

/* The PTX for f: the --ptx file, or the backend's for f's kernels. */
static fu_status ptx_for(gpu_ctx *g, fu_fusion *f, const run_args *a, fu_strbuf *own, const char **ptx, size_t *len) {
  if (from_ptx_file(g)) {
    *ptx = g->ptx_text;
    *len = g->ptx_len;
    return FU_OK;
  }
  (void)a;
  fu_compiler *c = g->active ? g->active : &g->comp;
  if (!c->target) {
    fprintf(a->err, RUN_TOOL ": no PTX: this build has no code-generation backend; pass --ptx FILE.ptx\n");
    return FU_ERR_UNSUPPORTED;
  }
  char arch[16];
  fu_rt_device_arch(fu_rt_device(g->rt), arch, sizeof arch);
  const char *use = c->target->arch_supported(arch) ? arch : FU_DEFAULT_ARCH;
  fu_status st = fu_compile_module(c, g->m, f->name, FU_TARGET_PTX, use, g->src, own, g->diag);
  if (st != FU_OK) return st;
  *ptx = own->data ? own->data : "";
  *len = own->len;
  return FU_OK;
}

/* The GPU's parts of the summary: its name, the launches, the benchmark. */
static void gpu_report_parts(const run_args *a, const gpu_ctx *g, const fu_rt_plan *plan, const fu_rt_bench_result *br,
                             bool have_bench, fu_strbuf *json_dev, fu_strbuf *json_launches, fu_strbuf *json_bench,
                             fu_strbuf *text_bench) {
  const fu_rt_device_info *dev = fu_rt_device(g->rt);
  fu_strbuf_puts(json_dev, ", \"gpu\": ");
  run_put_json_string(json_dev, dev->name);
  fu_strbuf_puts(json_launches, ",\n   \"launches\": [");
  for (uint32_t l = 0; l < plan->n_launches; l++) {
    const fu_rt_launch_plan *lp = &plan->launches[l];
    const fu_rt_launch_config *c = &lp->config;
    fu_strbuf_printf(json_launches, "%s{\"kernel\": ", l ? ", " : "");
    run_put_json_string(json_launches, fu_rt_launch_name(lp));
    fu_strbuf_printf(json_launches,
                     ", \"grid\": [%u, %u, %u], \"block\": [%u, %u, %u], \"smem\": %u, \"bytes_read\": %llu, "
                     "\"bytes_written\": %llu}",
                     c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1], c->block[2], c->smem_bytes,
                     (unsigned long long)lp->bytes_read, (unsigned long long)lp->bytes_written);
  }
  fu_strbuf_puts(json_launches, "]");
  if (!have_bench) return;
  fu_strbuf_printf(json_bench, ",\n   \"bench\": {\"iters\": %u, \"warmup\": %u, \"l2_flush_bytes\": %zu, \"copy_bytes\": %zu, "
                               "\"copy_gbs\": %.3f, \"settle_us\": %u, \"flush_with\": \"%s\", \"kernels\": [",
                   br->iters, br->warmup, br->flush_bytes, br->copy_bytes, br->copy_gbs, br->settle_us,
                   br->flush_kernel ? "kernel" : "memset");
  for (uint32_t k = 0; k < br->n_kernels; k++) {
    fu_strbuf_puts(json_bench, k ? ", " : "");
    json_timing(json_bench, &br->kernels[k]);
  }
  fu_strbuf_puts(json_bench, "], \"total\": ");
  json_timing(json_bench, &br->total);
  if (br->concurrent) {
    fu_strbuf_puts(json_bench, ", \"streams\": 2, \"one_after_another\": ");
    json_timing(json_bench, &br->sequential);
  }
  fu_strbuf_puts(json_bench, "}");
  fu_strbuf_printf(text_bench, "  bench: median of %u runs after %u warm-up", br->iters, br->warmup);
  if (br->flush_bytes)
    fu_strbuf_printf(text_bench, ", L2 flushed before each run (%.1f MiB written by %s, then %u us of GPU spin)",
                     (double)br->flush_bytes / (1 << 20), br->flush_kernel ? "a store kernel" : "cuMemsetD32Async",
                     br->settle_us);
  else
    fu_strbuf_puts(text_bench, ", L2 not flushed");
  fu_strbuf_printf(text_bench, "; copy bandwidth %.1f GB/s (%.0f MiB copied, read + write)\n", br->copy_gbs,
                   (double)br->copy_bytes / (1 << 20));
  for (uint32_t k = 0; k < br->n_kernels; k++) {
    char what[300];
    snprintf(what, sizeof what, "kernel @%s", br->kernels[k].name);
    text_timing(text_bench, what, &br->kernels[k]);
  }
  text_timing(text_bench, "total", &br->total);
  if (br->concurrent) text_timing(text_bench, "total, one stream (the side stream's kernels in line)", &br->sequential);
  (void)a;
}

/* eff_bandwidth: each kernel's time and bandwidth of this run (the
 * median of --bench's runs with --bench). */
static void dump_eff_bandwidth(const run_args *a, const fu_fusion *f, const fu_rt_bench_result *br) {
  fu_strbuf sb;
  fu_strbuf_init(&sb, a->alloc);
  for (uint32_t k = 0; k <= br->n_kernels; k++) {
    const fu_rt_timing *t = k < br->n_kernels ? &br->kernels[k] : &br->total;
    fu_strbuf_printf(&sb, "%s%s: %.2f us, %llu bytes, %.1f GB/s, %.1f%% of copy\n", k < br->n_kernels ? "kernel @" : "",
                     k < br->n_kernels ? t->name : "total", t->median_us, (unsigned long long)t->bytes, t->gbs,
                     t->pct_copy);
  }
  fu_dump_write(a->dumps, FU_DUMP_EFF_BANDWIDTH, f->name ? f->name : "",
                a->bench ? "median of the --bench runs" : "one run, L2 not flushed", sb.data, sb.len);
  fu_strbuf_free(&sb);
}

/* Loads the fusion's PTX (when it has kernels) into *mod, dumping the PTX
 * and the JIT's info log (ptxas_verbose) when asked.  The --ptx file is
 * loaded once: `fuser-opt --emit=ptx` of a file of many fusions writes one
 * module with all their kernels (named after their fusions), so a batch of
 * fusions pays one JIT and one module, not one per fusion. */
static fu_status gpu_load(gpu_ctx *g, fu_fusion *f, const run_args *a, fu_rt_module **mod) {
  if (g->ptx_mod && from_ptx_file(g)) {
    *mod = g->ptx_mod;
    return FU_OK;
  }
  fu_strbuf ptx_buf;
  fu_strbuf_init(&ptx_buf, a->alloc);
  const char *ptx = NULL;
  size_t ptx_len = 0;
  fu_status st = ptx_for(g, f, a, &ptx_buf, &ptx, &ptx_len);
  const char *fn = f->name ? f->name : "";
  if (st == FU_OK && a->dump_ptx)
    st = fu_dump_write(a->dumps, FU_DUMP_PTX, fn, a->ptx ? "the PTX of --ptx, loaded" : "the PTX loaded", ptx, ptx_len);
  if (st == FU_OK) {
    char name[256];
    if (a->ptx)
      snprintf(name, sizeof name, "%s", a->ptx);
    else
      snprintf(name, sizeof name, "<compiled @%s>", f->name ? f->name : "");
    st = fu_rt_module_load(g->rt, ptx, ptx_len, name, mod);
  }
  if (st == FU_OK && a->dump_jit) {
    fu_strbuf log;
    fu_strbuf_init(&log, a->alloc);
    fu_strbuf_printf(&log, "JIT log of @%s:\n%s\n", fn, fu_rt_module_info_log(*mod));
    st = fu_dump_write(a->dumps, FU_DUMP_PTXAS_VERBOSE, fn, "the JIT's info log", log.data, log.len);
    fu_strbuf_free(&log);
  }
  if (st == FU_OK && from_ptx_file(g)) g->ptx_mod = *mod;
  fu_strbuf_free(&ptx_buf);
  return st;
}

/* The backends' options of the run's --disable / --enable switches
 * (fast_paths, tid_range), the same for both backends of --diff-backends. */
static fu_target_options target_options(const run_args *a) {
  fu_target_options to;
  memset(&to, 0, sizeof to);
  fu_target_options_set_features(&to, &a->features);
  return to;
}

/* --diff-backends: the same plan and inputs run again with the other
 * backend's PTX, and the outputs compared with `res` (run_diff.c). */
static fu_status diff_second_backend(gpu_ctx *g, fu_fusion *f, const run_args *a, const fu_rt_plan *plan,
                                     const fu_arg *in, const fu_arg *res, uint32_t n_res, fu_strbuf *text,
                                     fu_strbuf *json, bool *same) {
  fu_allocator al = a->alloc;
  /* the PTX of --ptx is the LLVM backend's (fuser-opt --emit=ptx) */
  const char *first = g->ptx_text ? "llvm" : g->comp.target->name, *second = run_diff_other_backend(first);
  fu_compiler other;
  fu_target_options to = target_options(a);
  fu_compiler_init(&other, second, &to, al);
  fu_rt_module *mod = NULL;
  fu_rt_exec *e = NULL;
  fu_arg *res2 = NULL;
  uint32_t n2 = 0;
  g->active = &other;
  fu_status st = gpu_load(g, f, a, &mod);
  g->active = NULL;
  if (st == FU_OK) st = fu_rt_exec_new(g->rt, plan, mod, in, g->diag, &e);
  if (st == FU_OK) st = fu_rt_exec_poison(e, 0xFF);
  if (st == FU_OK) st = fu_rt_exec_run(e);
  if (st == FU_OK) st = fu_rt_exec_outputs(e, al, &res2, &n2);
  if (st == FU_OK && n2 != n_res) st = FU_ERR_INVALID_ARG;
  if (st == FU_OK) *same = run_diff_outputs(a, f, first, second, res, res2, n_res, text, json);
  if (st != FU_OK) fu_note(g->diag, f->loc, "while running '@%s' with the %s backend for --diff-backends",
                           f->name ? f->name : "", second);
  fu_args_free(res2, n2, al);
  fu_rt_exec_free(e);
  fu_rt_module_unload(mod);
  fu_compiler_free(&other);
  return st;
}

static int gpu_fusion(void *ctx, const run_args *a, fu_fusion *f, bool several, fu_strbuf *out, bool first);

/* run_try_fn for the GPU path: the standalone fusion compiled for this GPU
 * (with this run's backend) and run on it. */
static int gpu_try(void *ctx, const run_args *a, fu_module *m) {
  gpu_ctx *g = ctx;
  if (run_compile_pipeline(a, m, &fu_rt_device(g->rt)->desc, a->source, g->diag) != FU_OK) return 1;
  fu_module *saved = g->m;
  g->m = m;
  fu_strbuf out;
  fu_strbuf_init(&out, a->alloc);
  int rc = gpu_fusion(g, a, m->first, false, &out, true);
  fu_strbuf_free(&out);
  g->m = saved;
  return rc;
}

/* One fusion on the GPU: PTX, module, inputs, plan, run, outputs; then the
 * check against the interpreter and the benchmark when asked.  Returns 0,
 * or 1 on an error or a failed check. */
static int run_gpu_fusion(gpu_ctx *g, fu_fusion *f, const run_args *a, bool several, fu_strbuf *out, bool first_json) {
  fu_allocator al = a->alloc;
  fu_diag_engine *diag = g->diag;
  fu_arg *in = NULL, *res = NULL, *after = NULL;
  const char **how = NULL;
  uint32_t n_in = 0, n_res = 0;
  fu_rt_plan plan;
  memset(&plan, 0, sizeof plan);
  fu_rt_module *mod = NULL;
  fu_rt_exec *e = NULL;
  fu_rt_bench_result br;
  memset(&br, 0, sizeof br);
  bool have_bench = false;
  run_check_line *lines = NULL;
  fu_strbuf json_dev, json_launches, json_bench, text_bench;
  fu_strbuf_init(&json_dev, al);
  fu_strbuf_init(&json_launches, al);
  fu_strbuf_init(&json_bench, al);
  fu_strbuf_init(&text_bench, al);
  int rc = 1;
  uint32_t n_kernels = fu_compile_count_kernels(g->m, f->name);

  fu_status st = n_kernels ? gpu_load(g, f, a, &mod) : FU_OK;
  bool compile_failed = st != FU_OK;
  if (st == FU_OK) st = run_make_inputs(a, f, diag, &in, &n_in);
  if (st == FU_OK) st = fu_rt_plan_build(f, in, n_in, al, diag, &plan);
  if (st == FU_OK && a->dump_launch)
    run_dump_launches(a, f, &plan, NULL, 1u << FU_DUMP_LAUNCH_PARAMS, "the launch plan, on the GPU");
  if (st == FU_OK) st = fu_rt_exec_new(g->rt, &plan, mod, in, diag, &e);
  if (st == FU_OK && a->dump_launch)
    run_dump_launches(a, f, &plan, e, 1u << FU_DUMP_KERNEL_ARGS, "the launch plan and its buffers, on the GPU");
  if (st == FU_OK) st = fu_rt_exec_poison(e, 0xFF);
  if (st == FU_OK) st = fu_rt_exec_run(e);
  if (st == FU_OK) st = fu_rt_exec_outputs(e, al, &res, &n_res);
  if (st == FU_OK) st = read_aliases(e, &plan, f, n_res, al, &after, &how);
  if (st == FU_OK) st = run_test_corrupt_outputs(f, res, n_res);
  if (st == FU_OK && a->check) st = run_check(a, f, in, n_in, res, n_res, "on the GPU", diag, &lines);
  /* a second run would read inputs the first one updated: no int recheck then */
  if (st == FU_OK && a->check && !after) st = recheck_ints(e, res, n_res, lines);
  bool eff = fu_dump_on(a->dumps, FU_DUMP_EFF_BANDWIDTH);
  if (st == FU_OK && (a->bench || eff)) {
    /* eff_bandwidth without --bench: one more run, timed, L2 not flushed */
    fu_rt_bench_options bo;
    memset(&bo, 0, sizeof bo);
    bo.iters = a->bench ? a->iters : 1;
    bo.warmup = a->bench ? a->warmup : 0;
    bo.no_flush = a->bench ? a->no_flush : true;
    bo.settle_us = a->settle_us;
    bo.flush_bytes = a->flush_bytes;
    bo.flush_kernel = a->flush_kernel;
    st = fu_rt_exec_bench(e, &bo, &br);
    have_bench = st == FU_OK && a->bench;
    if (have_bench && br.concurrent && a->check && !after) st = recheck_streams(e, &plan, res, n_res, diag);
    if (st == FU_OK && eff) dump_eff_bandwidth(a, f, &br);
  }
  fu_strbuf diff_json;
  fu_strbuf_init(&diff_json, al);
  bool diff_same = true;
  if (st == FU_OK && a->diff_backends && n_kernels)
    st = diff_second_backend(g, f, a, &plan, in, res, n_res, &text_bench, &diff_json, &diff_same);
  if (diff_json.len) fu_strbuf_append(&json_bench, diff_json.data, diff_json.len);
  fu_strbuf_free(&diff_json);
  if (st == FU_OK) {
    const fu_rt_device_info *dev = fu_rt_device(g->rt);
    char what[512];
    snprintf(what, sizeof what, "gpu %d: %s, %u kernel%s", dev->ordinal, dev->name, n_kernels,
             n_kernels == 1 ? "" : "s");
    gpu_report_parts(a, g, &plan, &br, have_bench, &json_dev, &json_launches, &json_bench, &text_bench);
    run_fusion_result r = {.f = f, .in = in, .res = res, .n_in = n_in, .n_res = n_res, .lines = lines,
                           .device = "gpu", .what = what, .json_device = json_dev.data,
                           .json_outputs = json_launches.data, .json_tail = json_bench.data,
                           .text_tail = text_bench.data, .alias_after = after, .alias_how = how};
    rc = run_report_fusion(a, &r, several, first_json, diag, out);
    if (!diff_same) rc = 1;
  }
  if (compile_failed && !a->given_in && !a->no_repro) {
    /* the backend failed on this fusion's kernels: a repro with the inputs
     * the run would have used */
    fu_diag_engine quiet;
    fu_diag_init(&quiet, al);
    quiet.stream = a->err;
    if (run_make_inputs(a, f, &quiet, &in, &n_in) == FU_OK) {
      run_repro_request rr = {.f = f, .in = in, .n_in = n_in, .why = RUN_FAIL_COMPILE, .several = several,
                              .try_alone = gpu_try, .ctx = g};
      run_repro_write(a, &rr, diag);
    }
  } else if (!diff_same && rc && st == FU_OK) {
    run_repro_request rr = {.f = f, .in = in, .n_in = n_in, .why = RUN_FAIL_DIFF, .several = several,
                            .detail = "--diff-backends", .try_alone = gpu_try, .ctx = g};
    run_repro_write(a, &rr, diag);
  } else {
    run_repro_after(a, f, in, n_in, st, rc, lines, n_res, several, gpu_try, g, diag);
  }
  fu_rt_bench_result_free(&br);
  fu_rt_exec_free(e);
  if (mod != g->ptx_mod) fu_rt_module_unload(mod);
  fu_rt_plan_free(&plan);
  fu_args_free(in, n_in, al);
  if (after) fu_args_free(after, n_res, al);
  if (how) fu_mem_free(&al, (void *)how, (n_res ? n_res : 1) * sizeof *how);
  fu_args_free(res, n_res, al);
  if (lines) fu_mem_free(&al, lines, (n_res ? n_res : 1) * sizeof *lines);
  fu_strbuf_free(&json_dev);
  fu_strbuf_free(&json_launches);
  fu_strbuf_free(&json_bench);
  fu_strbuf_free(&text_bench);
  return rc;
}

/* run_each_fusion's step: a fusion the pipeline could not lower is an
 * error at the op that stayed; any other runs. */
static int gpu_fusion(void *ctx, const run_args *a, fu_fusion *f, bool several, fu_strbuf *out, bool first) {
  gpu_ctx *g = ctx;
  if (fu_rt_faulted(g->rt)) {
    /* a fusion that failed its check leaves the context usable, and the
     * rest run on; a kernel fault does not */
    if (!g->fault_said)
      fprintf(a->err, RUN_TOOL ": error: the GPU context is unusable after the fault above; fusion '@%s' and the "
                      "ones after it do not run\n",
              f->name ? f->name : "");
    g->fault_said = true;
    return 1;
  }
  const fu_op *why = NULL;
  if (!fu_rt_fusion_is_lowered(f, &why)) {
    if (why->kind == FU_OP_SEGMENT)
      fu_error(g->diag, why->loc,
               "segment '%s' of fusion '@%s' (kind %s) has no kernel after the pipeline: %s",
               why->u.segment.name ? why->u.segment.name : "?", f->name ? f->name : "",
               fu_sched_kind_name(why->u.segment.kind), fu_segment_no_kernel_reason(why));
    else
      fu_error(g->diag, why->loc, "op '%s' of fusion '@%s' is in no segment after the pipeline",
               fu_op_info_of(why->kind)->name, f->name ? f->name : "");
    run_repro_compile_failure(a, f->name, g->diag);
    return 1;
  }
  return run_gpu_fusion(g, f, a, several, out, first);
}

/* Everything the GPU path checks before it touches a device: a fusion it
 * cannot compile here, or PTX it cannot get, is a clear error at once. */
static int gpu_preflight(const run_args *a, fu_module *m) {
  if (a->diff_backends && a->ptx && !fu_target_lookup("nvrtc")) {
    fprintf(a->err, RUN_TOOL ": --diff-backends with --ptx compares that PTX with the nvrtc backend's, and this "
                    "build lacks the nvrtc backend\n");
    return 2;
  }
  if (a->diff_backends && !a->ptx && (!fu_target_lookup("llvm") || !fu_target_lookup("nvrtc"))) {
    fprintf(a->err, RUN_TOOL ": --diff-backends needs both the llvm and the nvrtc backend, and this build lacks %s "
                    "(or give the LLVM backend's PTX with --ptx)\n",
            fu_target_lookup("llvm") ? "nvrtc" : "llvm");
    return 2;
  }
  if (fu_target_lookup(a->backend)) return 0;
  if (a->pipeline) {
    fprintf(a->err, RUN_TOOL ": --pass needs the LLVM backend, which this build does not have\n");
    return 2;
  }
  for (fu_fusion *f = m->first; f; f = f->next) {
    if (a->fusion && (!f->name || strcmp(f->name, a->fusion) != 0)) continue;
    const fu_op *why = NULL;
    if (!fu_rt_fusion_is_lowered(f, &why)) {
      fprintf(a->err,
              RUN_TOOL ": fusion '@%s' is not compiled (%s '%s' at line %u %s), and this build has no LLVM "
                   "backend to compile it.\n" RUN_TOOL ": compile it where LLVM is: fuser-opt --pass=all FILE.fir -o "
                   "FILE.lowered.fir and fuser-opt --pass=all --emit=ptx FILE.fir -o FILE.ptx, then run "
                   "fuser-run FILE.lowered.fir --ptx FILE.ptx\n",
              f->name ? f->name : "", why->kind == FU_OP_SEGMENT ? "segment" : "op",
              why->kind == FU_OP_SEGMENT ? (why->u.segment.name ? why->u.segment.name : "?")
                                         : fu_op_info_of(why->kind)->name,
              fu_loc_file_line(why->loc), why->kind == FU_OP_SEGMENT ? "has no kernel" : "is in no segment");
      return 1;
    }
    if (!a->ptx && fu_compile_count_kernels(m, f->name) > 0) {
      fprintf(a->err,
              RUN_TOOL ": fusion '@%s' needs PTX, and this build has no LLVM backend to make it: pass --ptx FILE.ptx (made "
                   "where LLVM is with fuser-opt --pass=all --emit=ptx FILE.fir -o FILE.ptx)\n",
              f->name ? f->name : "");
      return 2;
    }
  }
  return 0;
}

/* --device-memory: the driver's free memory now against right after the
 * context opened.  Every buffer, workspace and module of the run is freed
 * by now, so any difference is memory the run leaked on the device (the
 * stress check of many fusions in one process). */
static int report_device_memory(const run_args *a, gpu_ctx *g, size_t free_start, int rc) {
  size_t free_end = 0, total = 0;
  if (fu_rt_mem_info(g->rt, &free_end, &total) != FU_OK) return 1;
  long long kept = (long long)free_start - (long long)free_end;
  fprintf(a->out, "device memory: %zu bytes free after the context opened, %zu at the end: %lld bytes %s\n", free_start,
          free_end, kept < 0 ? -kept : kept, kept < 0 ? "more free" : "still allocated");
  if (kept > 0) {
    fprintf(a->err, RUN_TOOL ": error: the run left %lld bytes of device memory allocated\n", kept);
    return 1;
  }
  return rc;
}

int run_gpu(const run_args *a, fu_module *m, const fu_source *src, uint32_t n_selected) {
  fu_allocator al = a->alloc;
  gpu_diag gd;
  memset(&gd, 0, sizeof gd);
  gd.err = a->err;
  fu_diag_engine diag;
  fu_diag_init(&diag, al);
  diag.handler = gpu_diag_handler;
  diag.error_limit = a->error_limit;
  diag.user = &gd;
  int rc = m ? gpu_preflight(a, m) : 0;
  if (rc) return rc;

  gpu_ctx g;
  memset(&g, 0, sizeof g);
  g.diag = &diag;
  fu_rt_options ro;
  memset(&ro, 0, sizeof ro);
  ro.device_ordinal = a->gpu;
  gd.hold = true;
  fu_status st = fu_rt_open(&ro, al, &diag, &g.rt);
  gd.hold = false;
  if (st != FU_OK) {
    if (gd.held[0])
      fprintf(a->err, RUN_TOOL ": %s%s\n", gd.held,
              st == FU_ERR_UNSUPPORTED ? "; use --device=cpu for the reference interpreter" : "");
    return st == FU_ERR_UNSUPPORTED || st == FU_ERR_INVALID_ARG ? 2 : 1;
  }
  const fu_rt_device_info *dev = fu_rt_device(g.rt);
  if (a->device_info) {
    fu_strbuf sb;
    fu_strbuf_init(&sb, al);
    fu_rt_device_print(&sb, dev);
    fu_strbuf_puts(&sb, "  as a device file (fuser-opt --pass=schedule{device=FILE}):\n");
    fu_strbuf desc;
    fu_strbuf_init(&desc, al);
    fu_device_print(&desc, &dev->desc);
    for (const char *p = desc.data; p && *p;) {
      const char *nl = strchr(p, '\n');
      size_t n = nl ? (size_t)(nl - p) : strlen(p);
      fu_strbuf_printf(&sb, "    %.*s\n", (int)n, p);
      p += n + (nl ? 1 : 0);
    }
    fu_strbuf_free(&desc);
    fwrite(sb.data ? sb.data : "", 1, sb.len, a->out);
    fu_strbuf_free(&sb);
    fu_rt_close(g.rt);
    return 0;
  }

  size_t free_start = 0, total = 0;
  if (a->device_memory && fu_rt_mem_info(g.rt, &free_start, &total) != FU_OK) {
    fu_rt_close(g.rt);
    return 1;
  }
  char *ptx_text = NULL;
  size_t ptx_len = 0;
  if (a->ptx) {
    st = fu_read_file(a->ptx, al, &ptx_text, &ptx_len);
    if (st != FU_OK) {
      fprintf(a->err, RUN_TOOL ": cannot read '%s': %s\n", a->ptx, st == FU_ERR_NOMEM ? "out of memory" : strerror(errno));
      fu_rt_close(g.rt);
      return 1;
    }
    g.ptx_text = ptx_text;
    g.ptx_len = ptx_len;
  }
  fu_target_options to = target_options(a);
  fu_compiler_init(&g.comp, a->backend, &to, al);
  g.m = m;
  g.src = src;
  if (g.comp.target) {
    bool need_compile = a->pipeline != NULL;
    for (fu_fusion *f = m->first; f; f = f->next)
      if (!a->fusion || (f->name && strcmp(f->name, a->fusion) == 0)) need_compile |= !fu_rt_fusion_is_lowered(f, NULL);
    if (need_compile && (st = run_compile_pipeline(a, m, &dev->desc, src, &diag)) != FU_OK) {
      rc = 1;
      run_repro_compile_failure(a, a->fusion, &diag);
    }
  }
  /* the GPU path dumps the PTX it loads, the JIT's log and the plan itself */
  uint32_t own = (1u << FU_DUMP_PTX) | (1u << FU_DUMP_PTXAS_VERBOSE) | (1u << FU_DUMP_LAUNCH_PARAMS) |
                 (1u << FU_DUMP_KERNEL_ARGS) | (1u << FU_DUMP_EFF_BANDWIDTH);
  if (!rc) rc = run_dump_compiled(a, m, src, own, &diag);
  if (!rc) rc = run_each_fusion(a, m, n_selected, false, gpu_fusion, &g);
  fu_compiler_free(&g.comp);
  fu_rt_module_unload(g.ptx_mod);
  if (ptx_text) fu_mem_free(&al, ptx_text, ptx_len + 1);
  if (a->device_memory) rc = report_device_memory(a, &g, free_start, rc);
  fu_rt_close(g.rt);
  return rc;
}

#else /* !FUSER_HAS_CUDA_DRIVER */

int run_gpu(const run_args *a, fu_module *m, const fu_source *src, uint32_t n_selected) {
  (void)a;
  (void)m;
  (void)src;
  (void)n_selected;
  fprintf(a->err, RUN_TOOL ": the GPU runtime is not built in this binary; use --device=cpu for the reference "
                  "interpreter\n");
  return 2;
}

#endif
