/* fuser fuzzing: the .npy reader (and writer).
 *
 * Properties: no crash, sanitizer report or leak; a file that reads writes
 * back to bytes that read to the same dtype and shape.  The reader is
 * asked both for any dtype and for bf16 (the one destination that takes
 * '<u2'). */
#include <string.h>

#include "fuser/npy.h"
#include "fuzz.h"

/* Reads `data` wanting dtype `want`; a tensor that reads round-trips. */
static void read_one(const uint8_t *data, size_t size, fu_dtype want, fu_allocator alloc) {
  fuzz_diag d;
  fuzz_diag_init(&d, alloc);
  fu_host_tensor t;
  memset(&t, 0, sizeof t);
  if (fu_npy_read_buffer(data, size, "fuzz.npy", want, alloc, &d.engine, &t) != FU_OK) return;
  fu_strbuf out;
  fu_strbuf_init(&out, alloc);
  if (fu_npy_write_buffer(&t, &out) == FU_OK && !out.failed) {
    fu_host_tensor back;
    memset(&back, 0, sizeof back);
    fu_status st = fu_npy_read_buffer(out.data, out.len, "written.npy", t.dtype, alloc, &d.engine, &back);
    if (st != FU_OK && st != FU_ERR_NOMEM) fuzz_fail("a written .npy does not read back (%s)", fu_status_name(st));
    if (st == FU_OK &&
        (back.dtype != t.dtype || back.rank != t.rank || memcmp(back.shape, t.shape, sizeof(int64_t) * (size_t)t.rank)))
      fuzz_fail("a written .npy reads back with another dtype or shape");
    fu_host_tensor_free(&back);
  }
  fu_strbuf_free(&out);
  fu_host_tensor_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_MAX_INPUT) return 0;
  fuzz_heap heap;
  fu_allocator alloc = fuzz_allocator(&heap);
  read_one(data, size, FU_DT_NONE, alloc);
  read_one(data, size, FU_DT_BF16, alloc);
  return 0;
}
