/* fuser tests: diagnostics collected as text, "line:col: severity:
 * message" per line, so that tests can look for the messages they expect.
 * Header-only, like harness.h. */
#ifndef FUSER_TEST_DIAG_CAPTURE_H
#define FUSER_TEST_DIAG_CAPTURE_H

#include <stdio.h>
#include <string.h>

#include "fuser/diag.h"

typedef struct capture {
  char text[16384];
  size_t len;
  int n_errors;
} capture;

/* Appends one diagnostic (dropped once the text is full). */
static inline void capture_handler(void *user, const fu_diagnostic *d) {
  capture *c = user;
  if (d->severity == FU_SEV_ERROR) c->n_errors++;
  int n = snprintf(c->text + c->len, sizeof c->text - c->len, "%d:%d: %s: %s\n", (int)d->loc.line, (int)d->loc.col,
                   fu_severity_name(d->severity), d->message);
  if (n > 0 && c->len + (size_t)n < sizeof c->text) c->len += (size_t)n;
}

/* An engine that reports into `c`, emptied first. */
static inline void diag_capture(fu_diag_engine *e, capture *c) {
  memset(c, 0, sizeof *c);
  fu_diag_init(e, fu_default_allocator());
  e->handler = capture_handler;
  e->user = c;
}

#endif
