/* fuser fuzzing: the nvFuser Python importer (tokenizer, parser, builder,
 * example inputs, verifier).
 *
 * Properties: no crash, sanitizer report or leak; every error is located
 * (unless memory ran out); an imported module that exports imports again.
 * The importer reads no files (a numpy.load path is only recorded). */
#include <string.h>

#include "fuser/frontend.h"
#include "fuser/strbuf.h"
#include "fuzz.h"

/* Imports `src`, checking that errors are located. */
static fu_status import(const fu_source *src, fu_allocator alloc, fu_module **m) {
  fuzz_diag d;
  fuzz_diag_init(&d, alloc);
  fu_status st = fu_py_import(src, alloc, &d.engine, NULL, m);
  fuzz_check_located(&d, st);
  return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_input in;
  if (!fuzz_input_open(&in, data, size, "fuzz.py")) return 0;
  fu_allocator alloc = in.alloc;
  fu_module *m = NULL;
  if (import(in.src, alloc, &m) == FU_OK && m) {
    /* Export may refuse what Python cannot express (a located error); what
     * it writes must import again. */
    fu_strbuf out;
    fu_strbuf_init(&out, alloc);
    if (fu_py_export(&out, m, NULL, &in.diag.engine) == FU_OK && !out.failed) {
      fu_source again = {"exported.py", out.data ? out.data : "", out.len, 1};
      fu_module *m2 = NULL;
      fu_status st2 = import(&again, alloc, &m2);
      if (st2 != FU_OK && st2 != FU_ERR_NOMEM)
        fuzz_fail("the exported script does not import (%s):\n%s", fu_status_name(st2), again.text);
      fu_module_free(m2);
    }
    fu_strbuf_free(&out);
  }
  fu_module_free(m);
  fuzz_input_close(&in);
  return 0;
}
