/* fuser fuzzing: the .fir parser and the IR verifier.
 *
 * Properties: no crash, sanitizer report or leak; every error is located
 * (unless memory ran out); a module that parses and verifies prints to text
 * that parses and verifies again and prints the same bytes. */
#include "fuser/print.h"
#include "fuzz.h"

/* The printed form is the format's normal form: it must read back, and
 * print the same bytes again. */
static void check_print(fu_module *m, fu_allocator alloc) {
  fu_strbuf first, second;
  fu_strbuf_init(&first, alloc);
  fu_strbuf_init(&second, alloc);
  fu_print_module(&first, m, NULL);
  if (!first.failed) {
    fu_source again = {"printed.fir", first.data ? first.data : "", first.len, 1};
    fuzz_diag d;
    fuzz_diag_init(&d, alloc);
    fu_module *m2 = NULL;
    fu_status st = fuzz_parse_fir(&again, alloc, &d, &m2);
    if (st != FU_OK && st != FU_ERR_NOMEM)
      fuzz_fail("the printed module does not parse and verify (%s):\n%s", fu_status_name(st), again.text);
    if (st == FU_OK && m2) {
      fu_print_module(&second, m2, NULL);
      if (!second.failed && !fuzz_same_text(&first, &second))
        fuzz_fail("printing is not stable:\n--- first\n%s\n--- second\n%s", first.data, second.data);
    }
    fu_module_free(m2);
  }
  fu_strbuf_free(&first);
  fu_strbuf_free(&second);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_input in;
  if (!fuzz_input_open(&in, data, size, "fuzz.fir")) return 0;
  fu_module *m = NULL;
  if (fuzz_parse_fir(in.src, in.alloc, &in.diag, &m) == FU_OK && m) check_print(m, in.alloc);
  fu_module_free(m);
  fuzz_input_close(&in);
  return 0;
}
