/* fuser driver: the dump names and their parsing (include/fuser/dump.h):
 * FUSER_DUMP and --dump, FUSER_DUMP_DIR, and the writing of one dump to
 * its stream or file.  Every tool reads them through here, so a name
 * means the same thing everywhere (lib/driver/switches.c does the same
 * for FUSER_DISABLE and FUSER_ENABLE). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuser/dump.h"

typedef struct dump_row {
  const char *name, *leader, *help;
} dump_row;

static const dump_row dump_rows[FU_DUMP_COUNT] = {
#define FU_DUMP_ROW(id, name, leader, help) {name, leader, help},
    FU_DUMP_KINDS(FU_DUMP_ROW)
#undef FU_DUMP_ROW
};

const char *fu_dump_name(fu_dump_kind k) { return (unsigned)k < FU_DUMP_COUNT ? dump_rows[k].name : "?"; }

void fu_dump_init(fu_dumps *d, const char *tool, FILE *err) {
  memset(d, 0, sizeof *d);
  d->stream = stderr;
  d->tool = tool;
  d->err = err ? err : stderr;
  d->alloc = fu_default_allocator();
  fu_strbuf_init(&d->written, d->alloc);
}

void fu_dump_free(fu_dumps *d) { fu_strbuf_free(&d->written); }

bool fu_dump_on(const fu_dumps *d, fu_dump_kind k) { return d && (d->on & (1u << k)) != 0; }

bool fu_dump_any(const fu_dumps *d) { return d && d->on != 0; }

void fu_dump_print_help(fu_strbuf *out) {
  fu_strbuf_puts(out, "FUSER_DUMP=a,b,... (or --dump=a,b,...) dumps, to stderr or FUSER_DUMP_DIR/<fusion>/<name>:\n");
  for (int k = 0; k < FU_DUMP_COUNT; k++) fu_strbuf_printf(out, "  %-18s %s\n", dump_rows[k].name, dump_rows[k].help);
  fu_strbuf_puts(out, "  all                every dump above but sass (which needs cuobjdump)\n");
}

static bool item_is(const char *p, size_t n, const char *name) { return strlen(name) == n && memcmp(p, name, n) == 0; }

static void list_dump_names(FILE *err) {
  for (int k = 0; k < FU_DUMP_COUNT; k++) fprintf(err, "%s%s", k ? ", " : "", dump_rows[k].name);
  fputs(", all, help", err);
}

bool fu_dump_parse(fu_dumps *d, const char *list, const char *origin, const char *const *aliases) {
  for (const char *p = list ? list : ""; *p;) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    const char *name = p;
    size_t len = n;
    bool found = n == 0;
    for (const char *const *a = aliases; a && a[0] && !found; a += 2)
      if (item_is(p, n, a[0])) {
        if (!fu_dump_parse(d, a[1], origin, NULL)) return false;
        found = true;
      }
    if (item_is(name, len, "help")) {
      d->help = found = true;
    } else if (item_is(name, len, "all")) {
      /* all but sass: it needs cuobjdump, which a CUDA Toolkit may lack */
      d->on |= ((1u << FU_DUMP_COUNT) - 1) & ~(1u << FU_DUMP_SASS);
      found = true;
    }
    for (int k = 0; k < FU_DUMP_COUNT && !found; k++)
      if (item_is(name, len, dump_rows[k].name)) {
        d->on |= 1u << k;
        found = true;
      }
    if (!found) {
      fprintf(d->err, "%s: error: unknown dump '%.*s' in %s; valid dumps: ", d->tool, (int)n, p, origin);
      list_dump_names(d->err);
      for (const char *const *a = aliases; a && a[0]; a += 2) fprintf(d->err, ", %s (%s)", a[0], a[1]);
      fputc('\n', d->err);
      return false;
    }
    if (!end) break;
    p = end + 1;
  }
  return true;
}

bool fu_dump_from_env(fu_dumps *d, const char *const *aliases) {
  const char *dir = getenv("FUSER_DUMP_DIR");
  if (dir && *dir) d->dir = dir;
  const char *list = getenv("FUSER_DUMP");
  return !list || fu_dump_parse(d, list, "FUSER_DUMP", aliases);
}

bool fu_make_dirs(const char *path) {
  char buf[4096];
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof buf) {
    errno = n ? ENAMETOOLONG : ENOENT;
    return false;
  }
  memcpy(buf, path, n + 1);
  /* each prefix that ends before a '/', then the whole path */
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    char c = buf[i];
    buf[i] = '\0';
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return false;
    buf[i] = c;
  }
  struct stat st;
  if (stat(path, &st) != 0) return false;
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return false;
  }
  return true;
}

/* Whether `path` was written before in this process (then it is appended
 * to), remembering it if not. */
static bool seen_before(fu_dumps *d, const char *path) {
  size_t n = strlen(path);
  for (const char *p = d->written.data; p && *p;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    if (len == n && memcmp(p, path, n) == 0) return true;
    p += len + (nl ? 1 : 0);
  }
  fu_strbuf_printf(&d->written, "%s\n", path);
  return false;
}

/* A fusion name fit for a folder: no '/' and not "." or "..". */
static void put_folder_name(fu_strbuf *sb, const char *fusion) {
  if (!fusion || !*fusion || strcmp(fusion, ".") == 0 || strcmp(fusion, "..") == 0) {
    fu_strbuf_puts(sb, "_");
    return;
  }
  for (const char *c = fusion; *c; c++) fu_strbuf_putc(sb, *c == '/' ? '_' : *c);
}

fu_status fu_dump_write(fu_dumps *d, fu_dump_kind k, const char *fusion, const char *stage, const char *text,
                        size_t len) {
  fu_strbuf head;
  fu_strbuf_init(&head, d->alloc);
  fu_strbuf_printf(&head, "%s ----- %s", dump_rows[k].leader, dump_rows[k].name);
  if (fusion) fu_strbuf_printf(&head, " @%s", fusion);
  fu_strbuf_printf(&head, ": %s -----\n", stage ? stage : "");
  fu_status st = FU_OK;
  FILE *out = d->stream ? d->stream : stderr;
  fu_strbuf path;
  fu_strbuf_init(&path, d->alloc);
  if (d->dir) {
    fu_strbuf_puts(&path, d->dir);
    if (fusion) {
      fu_strbuf_putc(&path, '/');
      put_folder_name(&path, fusion);
    }
    bool made = !path.failed && fu_make_dirs(path.data);
    if (!made) {
      fprintf(d->err, "%s: error: cannot create dump folder '%s': %s\n", d->tool, path.data ? path.data : d->dir,
              strerror(errno));
      st = FU_ERR_IO;
    } else {
      fu_strbuf_printf(&path, "/%s", dump_rows[k].name);
      out = path.failed ? NULL : fopen(path.data, seen_before(d, path.data) ? "a" : "w");
      if (!out) {
        fprintf(d->err, "%s: error: cannot write dump '%s': %s\n", d->tool, path.data ? path.data : d->dir,
                strerror(errno));
        st = FU_ERR_IO;
      }
    }
  }
  if (st == FU_OK) {
    bool ok = fwrite(head.data, 1, head.len, out) == head.len;
    if (len) ok &= fwrite(text, 1, len, out) == len;
    if (len && text[len - 1] != '\n') ok &= fputc('\n', out) != EOF;
    ok &= (d->dir ? fclose(out) : fflush(out)) == 0;
    if (!ok) {
      fprintf(d->err, "%s: error: cannot write dump '%s'\n", d->tool, d->dir ? path.data : "<stderr>");
      st = FU_ERR_IO;
    }
  }
  fu_strbuf_free(&path);
  fu_strbuf_free(&head);
  return st;
}
