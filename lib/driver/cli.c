/* fuser driver: walking a tool's command line over a table of options
 * (include/fuser/driver.h, fu_cli), shared by fuser-opt and fuser-run so
 * that both spell options, values and their errors the same way. */
#include <string.h>

#include "fuser/driver.h"

static const fu_cli_option *find(const fu_cli *c, const char *name, size_t len) {
  for (size_t i = 0; i < c->n_opts; i++)
    if (c->opts[i].name && strlen(c->opts[i].name) == len && memcmp(c->opts[i].name, name, len) == 0)
      return &c->opts[i];
  return NULL;
}

/* Messages carry the tool's prefix, so each tool keeps its own voice
 * ("fuser-opt: error: ...", "fuser-run: ..."). */
static int fail(fu_cli *c, const char *fmt, const char *arg) {
  fputs(c->prefix ? c->prefix : "", c->err);
  fprintf(c->err, fmt, arg);
  fputc('\n', c->err);
  return FU_CLI_ERROR;
}

int fu_cli_next(fu_cli *c, const char **value) {
  *value = NULL;
  if (c->i >= c->argc) return FU_CLI_END;
  const char *arg = c->argv[c->i++];
  if (c->only_files || arg[0] != '-' || arg[1] == '\0') {
    *value = arg;
    return FU_CLI_FILE;
  }
  if (strcmp(arg, "--") == 0) {
    c->only_files = true;
    return fu_cli_next(c, value);
  }
  const char *name = arg + (arg[1] == '-' ? 2 : 1);
  const char *eq = strchr(name, '=');
  size_t len = eq ? (size_t)(eq - name) : strlen(name);
  const fu_cli_option *o = find(c, name, len);
  if (!o) return fail(c, "unknown option '%s' (see --help)", arg);
  if (eq) *value = eq + 1;
  if (o->arg == FU_CLI_NONE && *value) return fail(c, "option '%s' takes no value", arg);
  if (o->arg == FU_CLI_REQUIRED && !*value) {
    if (c->i >= c->argc) return fail(c, "option '%s' needs a value", arg);
    *value = c->argv[c->i++];
  }
  return o->id;
}

void fu_cli_print_options(fu_strbuf *out, const fu_cli_option *opts, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const fu_cli_option *o = &opts[i];
    if (!o->name) {
      fu_strbuf_printf(out, "%s\n", o->help);
      continue;
    }
    if (!o->name[1]) continue; /* a short alias */
    char head[64];
    if (o->arg == FU_CLI_REQUIRED)
      snprintf(head, sizeof head, "--%s=%s", o->name, o->metavar);
    else if (o->arg == FU_CLI_OPTIONAL)
      snprintf(head, sizeof head, "--%s%s", o->name, o->metavar);
    else
      snprintf(head, sizeof head, "--%s", o->name);
    fu_strbuf_printf(out, "  %-28s %s\n", head, o->help);
  }
}
