/* fuser driver: wall-clock timing of the phases of a run (--timing). */
#include <string.h>
#include <time.h>

#include "fuser/driver.h"

void fu_timing_init(fu_timing *t, fu_allocator alloc) {
  memset(t, 0, sizeof *t);
  t->alloc = alloc;
}

void fu_timing_free(fu_timing *t) {
  fu_mem_free(&t->alloc, t->entries, t->cap * sizeof *t->entries);
  fu_allocator a = t->alloc;
  memset(t, 0, sizeof *t);
  t->alloc = a;
}

double fu_timing_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Entries are few (one per pass and phase), so a linear search is fine;
 * names are compared by content so the same pass in two chunks adds up.
 * When memory runs out the time is dropped rather than failing the run. */
void fu_timing_add(fu_timing *t, const char *name, double seconds) {
  for (uint32_t i = 0; i < t->n; i++)
    if (strcmp(t->entries[i].name, name) == 0) {
      t->entries[i].seconds += seconds;
      t->entries[i].count++;
      return;
    }
  if (t->n == t->cap) {
    uint32_t cap = t->cap ? t->cap * 2 : 16;
    fu_timing_entry *e = fu_mem_realloc(&t->alloc, t->entries, t->cap * sizeof *e, cap * sizeof *e);
    if (!e) return;
    t->entries = e;
    t->cap = cap;
  }
  fu_timing_entry e = {name, seconds, 1};
  t->entries[t->n++] = e;
}

static void json_string(fu_strbuf *out, const char *s) {
  fu_strbuf_putc(out, '"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      fu_strbuf_printf(out, "\\%c", *s);
    else if ((unsigned char)*s < 0x20)
      fu_strbuf_printf(out, "\\u%04x", (unsigned)(unsigned char)*s);
    else
      fu_strbuf_putc(out, *s);
  }
  fu_strbuf_putc(out, '"');
}

void fu_timing_report(const fu_timing *t, fu_timing_mode mode, fu_strbuf *out) {
  double total = 0;
  for (uint32_t i = 0; i < t->n; i++) total += t->entries[i].seconds;
  if (mode == FU_TIMING_JSON) {
    fu_strbuf_printf(out, "{\"unit\": \"ms\", \"total_ms\": %.6f, \"phases\": [", total * 1e3);
    for (uint32_t i = 0; i < t->n; i++) {
      fu_strbuf_puts(out, i ? ", {\"name\": " : "{\"name\": ");
      json_string(out, t->entries[i].name);
      fu_strbuf_printf(out, ", \"ms\": %.6f, \"count\": %u}", t->entries[i].seconds * 1e3, t->entries[i].count);
    }
    fu_strbuf_puts(out, "]}\n");
    return;
  }
  if (mode != FU_TIMING_TEXT) return;
  fu_strbuf_puts(out, "===------------------------------------------------------------===\n"
                      "  fuser timing report (wall clock)\n"
                      "===------------------------------------------------------------===\n");
  fu_strbuf_printf(out, "  total: %.3f ms\n\n", total * 1e3);
  fu_strbuf_puts(out, "   wall (ms)       %   runs  phase\n");
  for (uint32_t i = 0; i < t->n; i++)
    fu_strbuf_printf(out, "  %10.3f  %5.1f%%  %5u  %s\n", t->entries[i].seconds * 1e3,
                     total > 0 ? 100.0 * t->entries[i].seconds / total : 0.0, t->entries[i].count,
                     t->entries[i].name);
  fu_strbuf_printf(out, "  %10.3f  %5.1f%%         total\n", total * 1e3, total > 0 ? 100.0 : 0.0);
}
