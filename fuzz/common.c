/* fuser fuzzing: the allocator, diagnostics and failure reporting every
 * harness shares (see fuzz/fuzz.h). */
#include "fuzz.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuser/parse.h"
#include "fuser/verify.h"

bool fuzz_verbose = false;

/* realloc-style hook that keeps the live total under h->cap, so that an
 * input declaring a huge tensor gets FU_ERR_NOMEM instead of exhausting
 * the fuzzer's memory limit. */
static void *heap_fn(void *user, void *ptr, size_t old_size, size_t new_size) {
  fuzz_heap *h = user;
  if (new_size == 0) {
    free(ptr);
    h->live -= old_size <= h->live ? old_size : h->live;
    return NULL;
  }
  if (new_size > old_size && new_size - old_size > h->cap - h->live) return NULL;
  void *p = realloc(ptr, new_size);
  if (!p) return NULL;
  h->live = h->live - (old_size <= h->live ? old_size : h->live) + new_size;
  return p;
}

fu_allocator fuzz_allocator(fuzz_heap *h) {
  h->live = 0;
  h->cap = FUZZ_MEMORY_CAP;
  fu_allocator a = {heap_fn, h};
  return a;
}

/* Keeps the first error that names no source (the harnesses of the parsers
 * require every error to be located) and prints under -v. */
static void diag_handler(void *user, const fu_diagnostic *d) {
  fuzz_diag *fd = user;
  /* An error about the whole input (no line) must still name the file. */
  if (d->severity == FU_SEV_ERROR && !d->loc.src) {
    if (fd->unlocated_errors++ == 0) snprintf(fd->first_unlocated, sizeof fd->first_unlocated, "%s", d->message);
  }
  if (fuzz_verbose) fu_diag_print(stderr, d);
}

void fuzz_diag_init(fuzz_diag *d, fu_allocator alloc) {
  memset(d, 0, sizeof *d);
  fu_diag_init(&d->engine, alloc);
  d->engine.handler = diag_handler;
  d->engine.user = d;
  d->engine.error_limit = FU_DIAG_DEFAULT_ERROR_LIMIT;
}

_Noreturn void fuzz_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("fuzz: property broken: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  abort();
}

fu_source *fuzz_source_new(const uint8_t *data, size_t len, const char *name) {
  fu_source *src = malloc(sizeof *src);
  char *text = malloc(len + 1);
  if (!src || !text) {
    free(src);
    free(text);
    return NULL;
  }
  if (len) memcpy(text, data, len);
  text[len] = '\0';
  src->name = name;
  src->text = text;
  src->len = len;
  src->first_line = 1;
  return src;
}

void fuzz_source_free(fu_source *src) {
  if (!src) return;
  free((void *)src->text);
  free(src);
}

bool fuzz_same_text(const fu_strbuf *a, const fu_strbuf *b) {
  return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

bool fuzz_input_open(fuzz_input *in, const uint8_t *data, size_t size, const char *name) {
  if (size > FUZZ_MAX_INPUT) return false;
  in->alloc = fuzz_allocator(&in->heap);
  in->src = fuzz_source_new(data, size, name);
  if (!in->src) return false;
  fuzz_diag_init(&in->diag, in->alloc);
  return true;
}

void fuzz_input_close(fuzz_input *in) {
  fuzz_source_free(in->src);
  in->src = NULL;
}

void fuzz_check_located(const fuzz_diag *d, fu_status st) {
  if (st != FU_OK && st != FU_ERR_NOMEM && d->unlocated_errors)
    fuzz_fail("an error without a location: '%s'", d->first_unlocated);
}

fu_status fuzz_parse_fir(const fu_source *src, fu_allocator alloc, fuzz_diag *d, fu_module **out) {
  *out = NULL;
  fu_status st = fu_parse_module(src, alloc, &d->engine, out);
  if (st == FU_OK && *out) st = fu_verify_module(*out, &d->engine);
  fuzz_check_located(d, st);
  return st;
}
