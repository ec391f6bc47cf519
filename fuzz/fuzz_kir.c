/* fuser fuzzing: the kernel-IR parser and the kernel verifier.
 *
 * Properties: no crash, sanitizer report or leak; every error is located
 * (unless memory ran out); kernels that parse and verify print to text that
 * parses and verifies again, and that text prints to the same bytes. */
#include "fuser/kir_text.h"
#include "fuzz.h"

/* Parses every kernel of `src` into a fresh module (*m, freed by the
 * caller) and prints them to `out` when they all verify. */
static fu_status parse_print(const fu_source *src, fu_allocator alloc, fu_module **m, fu_strbuf *out) {
  fuzz_diag d;
  fuzz_diag_init(&d, alloc);
  *m = fu_module_new(alloc);
  if (!*m) return FU_ERR_NOMEM;
  fu_kernel **ks = NULL;
  uint32_t n = 0;
  fu_status st = fu_kernel_parse_list(src, *m, &d.engine, &ks, &n);
  fuzz_check_located(&d, st);
  if (st == FU_OK) {
    for (uint32_t i = 0; i < n; i++) {
      if (i) fu_strbuf_putc(out, '\n');
      fu_kernel_print(out, ks[i]);
    }
  }
  return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_input in;
  if (!fuzz_input_open(&in, data, size, "fuzz.kir")) return 0;
  fu_allocator alloc = in.alloc;
  fu_strbuf first, second;
  fu_strbuf_init(&first, alloc);
  fu_strbuf_init(&second, alloc);
  fu_module *m = NULL, *m2 = NULL;
  fu_status st = parse_print(in.src, alloc, &m, &first);
  if (st == FU_OK && !first.failed) {
    fu_source again = {"printed.kir", first.data ? first.data : "", first.len, 1};
    fu_status st2 = parse_print(&again, alloc, &m2, &second);
    if (st2 != FU_OK && st2 != FU_ERR_NOMEM)
      fuzz_fail("the printed kernels do not parse and verify (%s):\n%s", fu_status_name(st2), again.text);
    if (st2 == FU_OK && !second.failed && !fuzz_same_text(&first, &second))
      fuzz_fail("printing is not stable:\n--- first\n%s\n--- second\n%s", first.data, second.data);
  }
  fu_module_free(m2);
  fu_module_free(m);
  fu_strbuf_free(&first);
  fu_strbuf_free(&second);
  fuzz_input_close(&in);
  return 0;
}
