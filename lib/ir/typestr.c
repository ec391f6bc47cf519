/* fuser: types and values as diagnostics print them (the text format's
 * spelling, into fixed buffers). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuser/strbuf.h"
#include "verify_internal.h"

/* Appends to a fixed buffer; once full, the text ends in "..." so a
 * truncated type is never mistaken for a complete one. */
typedef struct sink {
  char *s;
  size_t cap, len;
  bool full;
} sink;

static void put(sink *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sink *k, const char *fmt, ...) {
  if (k->full) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(k->s + k->len, k->cap - k->len, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= k->cap - k->len) {
    k->full = true;
    k->len = k->cap - 1;
    memcpy(k->s + k->cap - 4, "...", 4);
    return;
  }
  k->len += (size_t)n;
}

const char *fu_ir_type_str(fu_ir_tystr *buf, const fu_type *t) {
  sink k = {buf->s, sizeof buf->s, 0, false};
  buf->s[0] = '\0';
  if (t->dtype == FU_DT_NONE || (unsigned)t->dtype >= FU_DT_COUNT) {
    put(&k, "<no type>");
    return buf->s;
  }
  put(&k, "%s", fu_dtype_name(t->dtype));
  if (t->rank < 0) return buf->s;
  put(&k, "[");
  for (int32_t i = 0; i < t->rank && t->dims; i++) {
    if (i) put(&k, ", ");
    if (t->dims[i].sym)
      put(&k, "%s", t->dims[i].sym);
    else
      put(&k, "%" PRId64, t->dims[i].value);
  }
  put(&k, "]");
  return buf->s;
}

/* The printer's spelling of a double (it reads back as the same value). */
static void put_double(sink *k, double v) {
  char tmp[FU_DOUBLE_TEXT_MAX];
  fu_format_double(tmp, v);
  put(k, "%s", tmp);
}

const char *fu_ir_value_str(fu_ir_valstr *buf, const fu_value *v) {
  sink k = {buf->s, sizeof buf->s, 0, false};
  buf->s[0] = '\0';
  if (!v) {
    put(&k, "<null>");
    return buf->s;
  }
  put(&k, "'");
  if (!v->is_literal) {
    if (v->name)
      put(&k, "%%%s", v->name);
    else
      put(&k, "%%<unnamed #%" PRIu32 ">", v->id);
  } else {
    fu_dtype dt = v->type.dtype;
    if (v->literal_typed) put(&k, "%s(", fu_dtype_name(dt));
    if (fu_dtype_is_float(dt))
      put_double(&k, v->literal.f);
    else if (fu_dtype_is_int(dt))
      put(&k, "%" PRId64, v->literal.i);
    else if (fu_dtype_is_bool(dt))
      put(&k, "%s", v->literal.b ? "true" : "false");
    else
      put(&k, "<literal>");
    if (v->literal_typed) put(&k, ")");
  }
  put(&k, "'");
  if (k.full) {
    /* keep the closing quote visible after truncation */
    memcpy(buf->s + sizeof buf->s - 5, "...'", 5);
  }
  return buf->s;
}

const char *fu_ir_list_str(fu_ir_liststr *buf, const int64_t *v, uint32_t n) {
  size_t len = 0, cap = sizeof buf->s;
  buf->s[len++] = '[';
  for (uint32_t i = 0; i < n; i++) {
    char tmp[32];
    int m = snprintf(tmp, sizeof tmp, "%s%" PRId64, i ? ", " : "", v[i]);
    /* keep room for ", ...]" and the NUL */
    if (m < 0 || len + (size_t)m + 7 > cap) {
      memcpy(buf->s + len, ", ...", 5);
      len += 5;
      break;
    }
    memcpy(buf->s + len, tmp, (size_t)m);
    len += (size_t)m;
  }
  buf->s[len++] = ']';
  buf->s[len] = '\0';
  return buf->s;
}
