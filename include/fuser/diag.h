/* fuser: source locations and diagnostics.
 *
 * Diagnostics are reported through an engine that forwards each one to a
 * handler.  The default handler prints, in the style of cproc and clang:
 *
 *   file.fir:3:14: error: message
 *     %T3 = mul %T1, %T9 : f32[4]
 *                    ^
 *
 * Notes follow the error they belong to.  Library code never prints or exits
 * on its own; it reports here and returns a status.
 *
 * An error limit keeps one bad input from printing without end: after
 * `error_limit` errors the engine reports one "too many errors emitted,
 * stopping now" error, drops every later diagnostic (still counting the
 * errors), and fu_diag_stopped() tells the parser and the passes to stop.
 * A source line longer than FU_DIAG_LINE_MAX columns is printed shortened
 * around the caret, with `...` on the cut sides. */
#ifndef FUSER_DIAG_H
#define FUSER_DIAG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fuser/alloc.h"

/* A buffer of source text.  `first_line` is the 1-based line number of the
 * buffer's first line within the file, so chunks cut by --split-input-file
 * report the file's own line numbers. */
typedef struct fu_source {
  const char *name;
  const char *text;
  size_t len;
  uint32_t first_line;
} fu_source;

/* line == 0 means "no location". `line` is relative to the buffer (1-based);
 * printing adds src->first_line - 1. */
typedef struct fu_loc {
  const fu_source *src;
  uint32_t line;
  uint32_t col;
} fu_loc;

static inline fu_loc fu_loc_none(void) {
  fu_loc l = {0, 0, 0};
  return l;
}
static inline bool fu_loc_known(fu_loc l) { return l.line != 0; }

typedef enum fu_severity {
  FU_SEV_ERROR,
  FU_SEV_WARNING,
  FU_SEV_NOTE,
  FU_SEV_REMARK,
} fu_severity;

const char *fu_severity_name(fu_severity s);

typedef struct fu_diagnostic {
  fu_severity severity;
  fu_loc loc;
  const char *message; /* valid only during the handler call */
} fu_diagnostic;

typedef void (*fu_diag_handler)(void *user, const fu_diagnostic *d);

typedef struct fu_diag_engine {
  fu_allocator alloc;
  fu_diag_handler handler; /* NULL: print to `stream` */
  void *user;
  FILE *stream; /* for the default handler; stderr when NULL */
  unsigned n_errors;
  unsigned n_warnings;
  unsigned error_limit; /* errors shown before stopping; 0: no limit */
  unsigned limit_base;  /* n_errors when the limit was last restarted */
  bool stopped;         /* the limit was reached: later diagnostics are dropped */
} fu_diag_engine;

/* The error limit of the tools (clang's default too); fu_diag_init sets
 * none, so library users and tests see every error unless they ask. */
#define FU_DIAG_DEFAULT_ERROR_LIMIT 20u
/* Source lines longer than this many bytes are shortened around the caret. */
#define FU_DIAG_LINE_MAX 200u

/* Engine that prints to stderr, with no error limit. */
void fu_diag_init(fu_diag_engine *e, fu_allocator alloc);

/* True once the error limit was reached: the caller should stop early (the
 * run has failed; n_errors is not 0). */
static inline bool fu_diag_stopped(const fu_diag_engine *e) { return e->stopped; }

/* Counts the limit afresh from here, for a new unit of input (a chunk of
 * --split-input-file). */
void fu_diag_restart_limit(fu_diag_engine *e);

void fu_diag_report(fu_diag_engine *e, fu_severity sev, fu_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void fu_diag_vreport(fu_diag_engine *e, fu_severity sev, fu_loc loc, const char *fmt, va_list ap);

#define fu_error(e, loc, ...) fu_diag_report((e), FU_SEV_ERROR, (loc), __VA_ARGS__)
#define fu_warning(e, loc, ...) fu_diag_report((e), FU_SEV_WARNING, (loc), __VA_ARGS__)
#define fu_note(e, loc, ...) fu_diag_report((e), FU_SEV_NOTE, (loc), __VA_ARGS__)
#define fu_remark(e, loc, ...) fu_diag_report((e), FU_SEV_REMARK, (loc), __VA_ARGS__)

/* Print one diagnostic with its source line and caret. */
void fu_diag_print(FILE *out, const fu_diagnostic *d);

/* The file line number that `loc` points to (first_line applied). */
uint32_t fu_loc_file_line(fu_loc loc);

/* Copy of the text of buffer line `line` (1-based, relative) without the
 * newline; sets *len.  Returns NULL if out of range. */
const char *fu_source_line(const fu_source *src, uint32_t line, size_t *len);

#endif
