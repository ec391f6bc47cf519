/* fuser fuzzing: the whole pipeline on inputs that parse and verify: every
 * registered pass in pipeline order (with the verifier after each), then,
 * when the build has a backend, emission of the kernels to the target's
 * text (LLVM IR) and to PTX through the tools' compile path.
 *
 * Properties: no crash, sanitizer report, leak or timeout; a pass that
 * succeeds leaves IR that verifies (otherwise the pass has a bug).
 *
 * Work limits, so that a slow input is a finding and not a fuzzer timeout:
 * fusions over FUZZ_PASS_MAX_OPS ops are not run through the passes, and
 * modules over FUZZ_EMIT_MAX_OPS ops (or FUZZ_EMIT_MAX_KERNELS kernels) are
 * not compiled.  Both are far above what a pass should need a second for. */
#include <string.h>

#include "fuser/driver.h"
#include "fuser/ir.h"
#include "fuser/pass.h"
#include "fuser/verify.h"
#include "fuzz.h"

#define FUZZ_PASS_MAX_OPS 400u
#define FUZZ_EMIT_MAX_OPS 64u
#define FUZZ_EMIT_MAX_KERNELS 8u

/* The compiler lives as long as the process, as in the tools: its target
 * reads libdevice once. */
static fu_compiler *compiler(void) {
  static fu_compiler c;
  static bool ready;
  if (!ready) {
    fu_compiler_init(&c, NULL, NULL, fu_default_allocator());
    ready = true;
  }
  return &c;
}

/* Ops of the module, segment bodies included. */
static uint32_t count_ops(fu_module *m) {
  uint32_t n = 0;
  for (fu_fusion *f = m->first; f; f = f->next)
    for (fu_op *op = fu_walk_first(&f->body); op; op = fu_walk_next(op)) n++;
  return n;
}

/* Runs each registered pass as a one-step pipeline and verifies after it.
 * Returns whether every pass succeeded. */
static bool run_passes(fu_module *m, const fu_source *src, fu_allocator alloc, fuzz_diag *d) {
  size_t n = 0;
  const fu_pass_def *const *all = fu_pass_all(&n);
  fu_run_options o = fu_run_options_default();
  o.verify_each = false;
  for (size_t i = 0; i < n; i++) {
    fu_pipeline_step step = {all[i], NULL, 0};
    fu_pipeline p = {&step, 1, 1, alloc, NULL};
    fu_status st = fu_pipeline_run(&p, m, &o, NULL, src, &d->engine);
    if (st != FU_OK) return false;
    st = fu_verify_module(m, &d->engine);
    if (st != FU_OK && st != FU_ERR_NOMEM) fuzz_fail("the IR does not verify after pass '%s'", all[i]->name);
    if (st != FU_OK) return false;
  }
  return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_input in;
  if (!fuzz_input_open(&in, data, size, "fuzz.fir")) return 0;
  fu_module *m = NULL;
  fu_status st = fuzz_parse_fir(in.src, in.alloc, &in.diag, &m);
  uint32_t ops = st == FU_OK && m ? count_ops(m) : 0;
  if (st == FU_OK && m && ops <= FUZZ_PASS_MAX_OPS && run_passes(m, in.src, in.alloc, &in.diag)) {
    fu_compiler *c = compiler();
    uint32_t kernels = fu_compile_count_kernels(m, NULL);
    if (c->target && kernels > 0 && kernels <= FUZZ_EMIT_MAX_KERNELS && count_ops(m) <= FUZZ_EMIT_MAX_OPS) {
      static const fu_target_output outputs[] = {FU_TARGET_TEXT, FU_TARGET_PTX};
      for (size_t i = 0; i < sizeof outputs / sizeof *outputs; i++) {
        fu_strbuf out;
        fu_strbuf_init(&out, in.alloc);
        st = fu_compile_module(c, m, NULL, outputs[i], NULL, in.src, &out, &in.diag.engine);
        fu_strbuf_free(&out);
        if (st != FU_OK) break;
      }
    }
  }
  fu_module_free(m);
  fuzz_input_close(&in);
  return 0;
}
