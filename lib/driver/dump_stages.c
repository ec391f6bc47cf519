/* fuser driver: where each dump of FUSER_DUMP comes from
 * (include/fuser/dump.h).  The IR dumps are the IR printer's text at a
 * pipeline stage, the index graph and the segmenter's log are the passes'
 * own --debug output (captured by fu_pipeline_run), the code dumps go
 * through fu_compiler as --emit does, ptxas_verbose asks ptxas -v, and
 * sass ptxas and cuobjdump -sass.
 * Nothing here duplicates a printer: each dump is an existing one with a
 * header line in front. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuser/driver.h"
#include "fuser/dump.h"
#include "fuser/frontend.h"
#include "fuser/kir_text.h"
#include "fuser/print.h"
#include "fuser/schedule.h"

/* The folder name of fusion `f` (the printer's name for an unnamed one). */
static const char *fusion_label(const fu_fusion *f, uint32_t index, char *buf, size_t cap) {
  if (f->name && *f->name) return f->name;
  snprintf(buf, cap, "f%u", index);
  return buf;
}

/* The dump of a whole module goes under its fusion when it has one. */
static const char *module_label(const fu_module *m, char *buf, size_t cap) {
  if (!m || !m->first || m->first->next) return NULL;
  return fusion_label(m->first, 0, buf, cap);
}

/* Writes the text of one fusion (the `index`-th) for a dump. */
typedef void (*fusion_text_fn)(fu_strbuf *sb, const fu_fusion *f, uint32_t index);

/* Dump `k` of each fusion of `m`: `fn`'s text, when it wrote any. */
static fu_status dump_each_fusion(fu_dumps *d, fu_dump_kind k, const fu_module *m, const char *stage, fusion_text_fn fn) {
  if (!fu_dump_on(d, k) || !m) return FU_OK;
  fu_status st = FU_OK;
  uint32_t i = 0;
  for (const fu_fusion *f = m->first; f && st == FU_OK; f = f->next, i++) {
    fu_strbuf sb;
    fu_strbuf_init(&sb, d->alloc);
    fn(&sb, f, i);
    char buf[32];
    if (sb.failed) st = FU_ERR_NOMEM;
    else if (sb.len) st = fu_dump_write(d, k, fusion_label(f, i, buf, sizeof buf), stage, sb.data, sb.len);
    fu_strbuf_free(&sb);
  }
  return st;
}

static void put_fusion(fu_strbuf *sb, const fu_fusion *f, uint32_t index) { fu_print_fusion(sb, f, index, NULL); }

fu_status fu_dump_module(fu_dumps *d, fu_dump_kind k, const fu_module *m, const char *stage) {
  return dump_each_fusion(d, k, m, stage, put_fusion);
}

/* ---- scheduler_params ---------------------------------------------------- */

/* The extent a split gave loop axis `a` when it is a split's inner part
 * (the vector width, the unroll factor, the threads), else 0. */
static int64_t inner_factor(const fu_schedule *s, uint32_t a) {
  if (a >= s->n_axes || s->axes[a].def < 0) return 0;
  const fu_sxform *x = &s->xforms[s->axes[a].def];
  return x->kind == FU_SX_SPLIT && x->out[1] == a ? x->factor : 0;
}

/* Vector width, unroll and threads as the loops give them: 1 for a type
 * no loop has, 0 (printed `?`) for an extent that is not a split factor. */
static void put_params(fu_strbuf *sb, const fu_schedule *s) {
  int64_t vec = 1, unroll = 1, tx = 1, ty = 1;
  for (uint32_t i = 0; i < s->n_loops; i++) {
    int64_t f = inner_factor(s, s->loops[i].axis);
    switch (s->loops[i].ptype) {
    case FU_PT_VECTORIZE: vec = f; break;
    case FU_PT_UNROLL: unroll = unroll && f ? unroll * f : 0; break;
    case FU_PT_THREAD_X: tx = f; break;
    case FU_PT_THREAD_Y: ty = f; break;
    default: break;
    }
  }
  const int64_t v[4] = {vec, unroll, tx, ty};
  const char *names[4] = {"vector", "unroll", "threadIdx.x", "threadIdx.y"};
  for (int i = 0; i < 4; i++) {
    if (v[i]) fu_strbuf_printf(sb, "%s %s=%lld", i ? "," : "", names[i], (long long)v[i]);
    else fu_strbuf_printf(sb, "%s %s=?", i ? "," : "", names[i]);
  }
  if (s->reduce != FU_RM_NONE) fu_strbuf_printf(sb, ", reduce=%s", fu_reduce_mode_name(s->reduce));
  if (s->persist != FU_PM_NONE) fu_strbuf_printf(sb, ", persist=%s", fu_persist_mode_name(s->persist));
  if (s->online) fu_strbuf_puts(sb, ", online=true");
}

static void put_ref(void *user, fu_strbuf *out, const fu_value *v) {
  (void)user;
  fu_print_value_ref(out, v);
}

/* scheduler_params: a summary line per segment, then its schedule. */
static void put_scheduler_params(fu_strbuf *sb, const fu_fusion *f, uint32_t index) {
  (void)index;
  for (const fu_op *op = f->body.first; op; op = op->next) {
    if (op->kind != FU_OP_SEGMENT) continue;
    const fu_segment_info *si = &op->u.segment;
    fu_strbuf_printf(sb, "// @%s %s:", si->name ? si->name : "?", fu_sched_kind_name(si->kind));
    if (!si->schedule) {
      fu_strbuf_puts(sb, " no schedule\n");
      continue;
    }
    const fu_schedule *s = si->schedule;
    if (s->kind != FU_SK_NONE && s->kind != si->kind) fu_strbuf_printf(sb, " (scheduled as %s)", fu_sched_kind_name(s->kind));
    put_params(sb, s);
    fu_strbuf_putc(sb, '\n');
    fu_schedule_print(sb, s, 0, put_ref, NULL);
  }
}

/* ---- kernel_ir, launch_params and host_ir from the lowered module ------- */

static void put_kernels(fu_strbuf *sb, const fu_fusion *f, uint32_t index) {
  (void)index;
  uint32_t n = 0;
  for (const fu_op *op = f->body.first; op; op = op->next)
    if (op->kind == FU_OP_SEGMENT && op->u.segment.kernel) {
      if (n++) fu_strbuf_putc(sb, '\n');
      fu_kernel_print(sb, op->u.segment.kernel);
    }
}

/* Without a runtime the grid is the kernel's expression of the sizes
 * (fuser-run prints the evaluated one). */
static void put_launch(fu_strbuf *sb, const fu_kernel *k) {
  fu_strbuf_printf(sb, "launch @%s: grid=[", k->name ? k->name : "?");
  for (int i = 0; i < 3; i++) {
    if (i) fu_strbuf_puts(sb, ", ");
    if (k->grid[i]) fu_lexpr_print(sb, k->grid[i]);
    else fu_strbuf_puts(sb, "1");
  }
  fu_strbuf_printf(sb, "] block=[%u, %u, %u] smem=%u", k->block[0], k->block[1], k->block[2], k->smem_bytes);
  if (k->cluster > 1) fu_strbuf_printf(sb, " cluster=%u", k->cluster);
  fu_strbuf_printf(sb, " index=%s\n", fu_dtype_name(k->index_dtype));
}

static void put_values(fu_strbuf *sb, fu_value *const *v, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    fu_strbuf_puts(sb, i ? ", " : "");
    fu_print_value_ref(sb, v[i]);
  }
}

/* What the host does with a buffer a kernel writes: a fusion output, a
 * host alias's operand (a view of it is, or leads to, an output), or only
 * kernels read it. */
static const char *buffer_role(const fu_fusion *f, const fu_value *v) {
  const char *role = "intermediate";
  for (const fu_op *op = f->body.first; op; op = op->next)
    for (uint32_t i = 0; i < op->n_operands; i++) {
      if (op->operands[i] != v) continue;
      if (op->kind == FU_OP_OUTPUT) return "output";
      if (op->kind != FU_OP_SEGMENT) role = "viewed by a host op";
    }
  return role;
}

/* host_ir: the host's part of a fusion in order: inputs, host aliases,
 * the buffers kernels write (outputs and intermediates), launches. */
static void put_host_ir(fu_strbuf *sb, const fu_fusion *f, uint32_t index) {
  (void)index;
  for (const fu_op *op = f->body.first; op; op = op->next) {
    if (op->kind == FU_OP_SEGMENT) {
      const fu_segment_info *si = &op->u.segment;
      for (uint32_t i = 0; i < si->n_outputs; i++) {
        fu_strbuf_puts(sb, "alloc ");
        fu_print_value_ref(sb, si->outputs[i]);
        fu_strbuf_puts(sb, " : ");
        fu_print_type(sb, &si->outputs[i]->type);
        fu_strbuf_printf(sb, " // %s\n", buffer_role(f, si->outputs[i]));
      }
      fu_strbuf_printf(sb, "launch @%s %s (", si->name ? si->name : "?", fu_sched_kind_name(si->kind));
      put_values(sb, op->operands, op->n_operands);
      fu_strbuf_puts(sb, ") -> (");
      put_values(sb, si->outputs, si->n_outputs);
      fu_strbuf_puts(sb, si->kernel ? ")\n" : ") // no kernel yet\n");
    } else {
      fu_print_op(sb, op, 0, NULL);
    }
  }
}


/* ---- the pipeline's hooks ------------------------------------------------- */

fu_status fu_dump_before_pass(fu_dumps *d, const char *pass, const fu_module *m) {
  if (d && strcmp(pass, "segment") == 0) return fu_dump_module(d, FU_DUMP_FUSION_IR_PRESEG, m, "before segment");
  return FU_OK;
}

fu_status fu_dump_after_pass(fu_dumps *d, const char *pass, const fu_module *m) {
  if (!d) return FU_OK;
  if (strcmp(pass, "segment") == 0) return fu_dump_module(d, FU_DUMP_SEGMENTED_FUSION, m, "after segment");
  if (strcmp(pass, "schedule") == 0)
    return dump_each_fusion(d, FU_DUMP_SCHEDULER_PARAMS, m, "after schedule", put_scheduler_params);
  if (strcmp(pass, "lower") != 0) return FU_OK;
  fu_status st = dump_each_fusion(d, FU_DUMP_KERNEL_IR, m, "after lower", put_kernels);
  if (st == FU_OK) st = dump_each_fusion(d, FU_DUMP_HOST_IR, m, "after lower", put_host_ir);
  return st;
}

fu_dump_kind fu_dump_of_pass_debug(const char *pass) {
  if (strcmp(pass, "segment") == 0) return FU_DUMP_SEGMENTER_LOGGING;
  if (strcmp(pass, "index-graph") == 0) return FU_DUMP_INDEX_GRAPH;
  return FU_DUMP_COUNT;
}

fu_status fu_dump_pass_debug(fu_dumps *d, const char *pass, const fu_module *m, const char *text, size_t len) {
  fu_dump_kind k = fu_dump_of_pass_debug(pass);
  if (k == FU_DUMP_COUNT || !fu_dump_on(d, k)) return FU_OK;
  char buf[32], stage[64];
  snprintf(stage, sizeof stage, "%s", k == FU_DUMP_INDEX_GRAPH ? "after index-graph" : "the segment pass");
  return fu_dump_write(d, k, module_label(m, buf, sizeof buf), stage, text, len);
}

/* ---- code: cuda_kernel, llvm_ir, ptx, ptxas_verbose, sass ------------------ */

#ifdef FUSER_PTXAS_PATH
#define PTXAS FUSER_PTXAS_PATH
#else
#define PTXAS "ptxas"
#endif

/* The cuobjdump of the sass dump: FUSER_CUOBJDUMP, else the one beside the
 * ptxas this build found, else cuobjdump on PATH. */
static const char *cuobjdump_path(char *buf, size_t cap) {
  const char *env = getenv("FUSER_CUOBJDUMP");
  if (env && *env) return env;
  const char *slash = strrchr(PTXAS, '/');
  if (slash) {
    snprintf(buf, cap, "%.*s/cuobjdump", (int)(slash - PTXAS), PTXAS);
    if (access(buf, X_OK) == 0) return buf;
  }
  return "cuobjdump";
}

/* Runs `cmd`, its output (stdout and stderr) appended to `out`; false when
 * it cannot start or exits non-zero. */
static bool run_into(const char *cmd, fu_strbuf *out) {
  FILE *p = popen(cmd, "r");
  if (!p) return false;
  char line[1024];
  while (fgets(line, sizeof line, p)) fu_strbuf_puts(out, line);
  return pclose(p) == 0;
}

/* Over `ptx` (written to a temporary file): ptxas -v, its report in `out`;
 * or with `sass`, ptxas to a temporary cubin and cuobjdump -sass over it,
 * the machine code in `out`. */
static fu_status run_ptxas(fu_dumps *d, const char *ptx, size_t len, const char *arch, bool sass, fu_strbuf *out) {
  const char *what = sass ? "sass" : "ptxas_verbose";
  const char *tmp = getenv("TMPDIR");
  char path[512], cubin[600];
  snprintf(path, sizeof path, "%s/fuser-ptxas-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  int fd = mkstemp(path);
  if (fd < 0) {
    fprintf(d->err, "%s: error: %s: cannot make a temporary file: %s\n", d->tool, what, strerror(errno));
    return FU_ERR_IO;
  }
  bool ok = write(fd, ptx, len) == (ssize_t)len;
  ok &= close(fd) == 0;
  snprintf(cubin, sizeof cubin, "%s.cubin", path);
  char cmd[2048];
  if (sass) snprintf(cmd, sizeof cmd, "'%s' -arch=%s -o '%s' '%s' 2>&1", PTXAS, arch, cubin, path);
  else snprintf(cmd, sizeof cmd, "'%s' -arch=%s -v -o /dev/null '%s' 2>&1", PTXAS, arch, path);
  fu_strbuf log; /* what ptxas says: the -v report, or why it failed */
  fu_strbuf_init(&log, d->alloc);
  fu_status st = FU_OK;
  if (!ok || !run_into(cmd, &log)) {
    fprintf(d->err, "%s: error: %s: '%s -arch=%s' failed (is ptxas, from the CUDA Toolkit, on PATH?)\n%.*s", d->tool,
            what, PTXAS, arch, (int)log.len, log.data ? log.data : "");
    st = FU_ERR_IO;
  } else if (!sass) {
    fu_strbuf_append(out, log.data ? log.data : "", log.len);
  } else {
    char tool[600];
    const char *cuobjdump = cuobjdump_path(tool, sizeof tool);
    snprintf(cmd, sizeof cmd, "'%s' -sass '%s' 2>&1", cuobjdump, cubin);
    if (!run_into(cmd, out)) {
      fprintf(d->err,
              "%s: error: sass: '%s -sass' failed (is cuobjdump, from the CUDA Toolkit, on PATH, or named by "
              "FUSER_CUOBJDUMP?)\n",
              d->tool, cuobjdump);
      st = FU_ERR_IO;
    }
  }
  fu_strbuf_free(&log);
  unlink(path);
  if (sass) unlink(cubin);
  return st;
}

/* The architecture the kernels' fusion was scheduled for (one module has one). */
static const char *module_arch(const fu_module *m) {
  for (const fu_fusion *f = m ? m->first : NULL; f; f = f->next)
    for (const fu_op *op = f->body.first; op; op = op->next)
      if (op->kind == FU_OP_SEGMENT && op->u.segment.schedule && op->u.segment.schedule->arch)
        return op->u.segment.schedule->arch;
  return FU_DEFAULT_ARCH;
}

/* One code dump of kernels `ks` through target `t`. */
static fu_status dump_code(fu_dumps *d, fu_dump_kind k, const fu_target_def *t, const fu_kernel *const *ks, uint32_t n,
                           const char *label, const char *arch, const fu_dump_code_options *o, fu_diag_engine *diag) {
  if (!t) {
    fprintf(d->err, "%s: warning: %s: this build has no backend for it\n", d->tool, fu_dump_name(k));
    return FU_OK;
  }
  fu_target_options to;
  memset(&to, 0, sizeof to);
  fu_target_options_set_features(&to, o ? o->features : NULL);
  to.arch = arch;
  fu_compiler c;
  fu_compiler_init(&c, t->name, &to, d->alloc);
  fu_strbuf code;
  fu_strbuf_init(&code, d->alloc);
  bool via_ptxas = k == FU_DUMP_PTXAS_VERBOSE || k == FU_DUMP_SASS;
  fu_target_output what = k == FU_DUMP_PTX || via_ptxas ? FU_TARGET_PTX : FU_TARGET_TEXT;
  fu_status st = fu_compile_kernels(&c, ks, n, what, arch, o ? o->src : NULL, &code, diag);
  char stage[96];
  snprintf(stage, sizeof stage, "%s backend, %s", t->name, arch);
  if (st == FU_OK && via_ptxas) {
    bool sass = k == FU_DUMP_SASS;
    fu_strbuf rep;
    fu_strbuf_init(&rep, d->alloc);
    st = run_ptxas(d, code.data ? code.data : "", code.len, arch, sass, &rep);
    if (st == FU_OK) st = fu_dump_write(d, k, label, sass ? "ptxas, cuobjdump -sass" : "ptxas -v", rep.data, rep.len);
    fu_strbuf_free(&rep);
  } else if (st == FU_OK) {
    st = fu_dump_write(d, k, label, stage, code.data, code.len);
  }
  fu_strbuf_free(&code);
  fu_compiler_free(&c);
  return st;
}

fu_status fu_dump_kernels(fu_dumps *d, const fu_kernel *const *ks, uint32_t n, const char *label, const char *arch,
                          const fu_dump_code_options *o, fu_diag_engine *diag) {
  if (!fu_dump_any(d) || n == 0) return FU_OK;
  uint32_t skip = o ? o->skip : 0;
  bool want[FU_DUMP_COUNT];
  for (int k = 0; k < FU_DUMP_COUNT; k++) want[k] = fu_dump_on(d, (fu_dump_kind)k) && !(skip & (1u << k));
  if (!arch) arch = FU_DEFAULT_ARCH;
  fu_status st = FU_OK;
  if (want[FU_DUMP_KERNEL_IR]) {
    fu_strbuf sb;
    fu_strbuf_init(&sb, d->alloc);
    for (uint32_t i = 0; i < n; i++) {
      if (i) fu_strbuf_putc(&sb, '\n');
      fu_kernel_print(&sb, ks[i]);
    }
    st = sb.failed ? FU_ERR_NOMEM : fu_dump_write(d, FU_DUMP_KERNEL_IR, label, "as read", sb.data, sb.len);
    fu_strbuf_free(&sb);
  }
  if (st == FU_OK && want[FU_DUMP_CUDA_KERNEL])
    st = dump_code(d, FU_DUMP_CUDA_KERNEL, fu_target_for_text("cuda"), ks, n, label, arch, o, diag);
  if (st == FU_OK && want[FU_DUMP_LLVM_IR])
    st = dump_code(d, FU_DUMP_LLVM_IR, fu_target_for_text("llvm"), ks, n, label, arch, o, diag);
  if (st == FU_OK && want[FU_DUMP_PTX]) st = dump_code(d, FU_DUMP_PTX, fu_target_lookup(NULL), ks, n, label, arch, o, diag);
  if (st == FU_OK && want[FU_DUMP_PTXAS_VERBOSE])
    st = dump_code(d, FU_DUMP_PTXAS_VERBOSE, fu_target_lookup(NULL), ks, n, label, arch, o, diag);
  if (st == FU_OK && want[FU_DUMP_SASS])
    st = dump_code(d, FU_DUMP_SASS, fu_target_lookup(NULL), ks, n, label, arch, o, diag);
  if (st == FU_OK && want[FU_DUMP_LAUNCH_PARAMS]) {
    fu_strbuf sb;
    fu_strbuf_init(&sb, d->alloc);
    for (uint32_t i = 0; i < n; i++) put_launch(&sb, ks[i]);
    st = fu_dump_write(d, FU_DUMP_LAUNCH_PARAMS, label, "from the kernel IR (grid in the sizes' symbols)", sb.data,
                       sb.len);
    fu_strbuf_free(&sb);
  }
  return st;
}

fu_status fu_dump_code(fu_dumps *d, fu_module *m, const fu_dump_code_options *o, fu_diag_engine *diag) {
  if (!fu_dump_any(d) || !m) return FU_OK;
  fu_dump_code_options opt;
  memset(&opt, 0, sizeof opt);
  if (o) opt = *o;
  opt.skip |= 1u << FU_DUMP_KERNEL_IR; /* the pipeline's hook wrote it after lower */
  const char *arch = opt.arch ? opt.arch : module_arch(m);
  fu_status st = FU_OK;
  uint32_t i = 0;
  for (const fu_fusion *f = m->first; f && st == FU_OK; f = f->next, i++) {
    if (opt.fusion && (!f->name || strcmp(f->name, opt.fusion) != 0)) continue;
    uint32_t n = 0;
    for (const fu_op *op = f->body.first; op; op = op->next) n += op->kind == FU_OP_SEGMENT && op->u.segment.kernel;
    if (n == 0) continue;
    const fu_kernel **ks = fu_mem_alloc(&d->alloc, n * sizeof *ks);
    if (!ks) return FU_ERR_NOMEM;
    n = 0;
    for (const fu_op *op = f->body.first; op; op = op->next)
      if (op->kind == FU_OP_SEGMENT && op->u.segment.kernel) ks[n++] = op->u.segment.kernel;
    char buf[32];
    st = fu_dump_kernels(d, ks, n, fusion_label(f, i, buf, sizeof buf), arch, &opt, diag);
    fu_mem_free(&d->alloc, ks, n * sizeof *ks);
  }
  return st;
}

fu_status fu_dump_python(fu_dumps *d, const fu_module *m, const char *src_name, fu_diag_engine *diag) {
  if (!fu_dump_on(d, FU_DUMP_PYTHON_DEFINITION) || !m) return FU_OK;
  fu_strbuf sb;
  fu_strbuf_init(&sb, d->alloc);
  fu_py_export_options eo;
  memset(&eo, 0, sizeof eo);
  eo.source_name = src_name;
  fu_status st = fu_py_export(&sb, m, &eo, diag);
  char buf[32];
  if (st == FU_OK) st = fu_dump_write(d, FU_DUMP_PYTHON_DEFINITION, module_label(m, buf, sizeof buf), "nvFuser FusionDefinition", sb.data, sb.len);
  fu_strbuf_free(&sb);
  return st;
}
