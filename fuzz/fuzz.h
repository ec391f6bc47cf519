/* fuser fuzzing: what every harness shares (fuzz/common.c).
 *
 * Each fuzz/fuzz_<target>.c defines LLVMFuzzerTestOneInput.  Under
 * -DFUSER_FUZZ=ON (clang) it is linked with libFuzzer; in every build it is
 * also linked with fuzz/replay.c into fuzz_replay_<target>, which ctest runs
 * over fuzz/regressions/<target>/.  A harness returns 0 for every input the
 * library handles (an error is a fine answer); a property the library
 * breaks is reported with fuzz_fail, which aborts, so libFuzzer and the
 * replay driver both see a crash. */
#ifndef FUSER_FUZZ_H
#define FUSER_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fuser/alloc.h"
#include "fuser/diag.h"
#include "fuser/ir.h"
#include "fuser/strbuf.h"

/* Inputs larger than this are skipped: libFuzzer runs with -max_len equal
 * to it, and a larger regression file is a mistake. */
#define FUZZ_MAX_INPUT (64u * 1024u)
/* What one input may allocate at once, in all: past it the allocator fails
 * and the library must answer FU_ERR_NOMEM (an out-of-memory path is a fine
 * place for bugs too).  Well under the -rss_limit_mb fuzz.sh passes. */
#define FUZZ_MEMORY_CAP ((size_t)512 << 20)

/* One input's allocator: counts live bytes and refuses past the cap. */
typedef struct fuzz_heap {
  size_t live;
  size_t cap;
} fuzz_heap;

fu_allocator fuzz_allocator(fuzz_heap *h);

/* A diagnostics engine for one input: the tools' error limit, printing
 * only when the replay driver runs with -v (fuzz_verbose).  It records
 * whether any error named no source at all (an error about the whole input
 * names at least the file). */
typedef struct fuzz_diag {
  fu_diag_engine engine;
  unsigned unlocated_errors;
  char first_unlocated[160];
} fuzz_diag;

void fuzz_diag_init(fuzz_diag *d, fu_allocator alloc);

/* Set by the replay driver's -v: diagnostics are printed to stderr. */
extern bool fuzz_verbose;

/* Reports a broken property of the library and aborts. */
_Noreturn void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The input as a NUL-terminated source named `name` (the parsers read up
 * to `len` but some helpers want the NUL).  NULL when out of memory; free
 * with fuzz_source_free. */
fu_source *fuzz_source_new(const uint8_t *data, size_t len, const char *name);
void fuzz_source_free(fu_source *src);

/* One input: its allocator, its text as a NUL-terminated source, and a
 * diagnostics engine.  fuzz_input_open returns false when the input is to
 * be skipped (over FUZZ_MAX_INPUT, or no memory to copy it); otherwise
 * fuzz_input_close frees it. */
typedef struct fuzz_input {
  fuzz_heap heap;
  fu_allocator alloc;
  fu_source *src;
  fuzz_diag diag;
} fuzz_input;

bool fuzz_input_open(fuzz_input *in, const uint8_t *data, size_t size, const char *name);
void fuzz_input_close(fuzz_input *in);

/* Fails when status `st` is an error other than FU_ERR_NOMEM and some error
 * reported to `d` named no source: a parser's errors must be located. */
void fuzz_check_located(const fuzz_diag *d, fu_status st);

/* Parses a .fir source and verifies the module (as fuser-opt does), with
 * fuzz_check_located; the module, when there is one, is in *out. */
fu_status fuzz_parse_fir(const fu_source *src, fu_allocator alloc, fuzz_diag *d, fu_module **out);

/* True when both buffers hold the same bytes. */
bool fuzz_same_text(const fu_strbuf *a, const fu_strbuf *b);

#endif
