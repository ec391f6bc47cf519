/* fuser driver: pass pipelines, parsed from `a,b{opt=v,opt2=w}` text.
 *
 * Both --pass and --pass-pipeline use this grammar:
 *
 *   pipeline ::= step (',' step)*
 *   step     ::= NAME ('{' (option (',' option)*)? '}')?
 *   option   ::= NAME '=' VALUE          (VALUE: no ',', '}', '{' or blank)
 *
 * Blanks around tokens are allowed.  Errors point at the offending column of
 * the argument, as the parser does for .fir text. */
#include <ctype.h>
#include <string.h>

#include "fuser/driver.h"

void fu_pipeline_init(fu_pipeline *p, fu_allocator alloc) {
  memset(p, 0, sizeof *p);
  p->alloc = alloc;
}

void fu_pipeline_free(fu_pipeline *p) {
  fu_mem_free(&p->alloc, p->steps, p->cap * sizeof *p->steps);
  if (p->arena) fu_arena_free(p->arena);
  fu_allocator a = p->alloc;
  memset(p, 0, sizeof *p);
  p->alloc = a;
}

static bool push_step(fu_pipeline *p, const fu_pass_def *pass) {
  if (p->n_steps == p->cap) {
    uint32_t cap = p->cap ? p->cap * 2 : 8;
    fu_pipeline_step *s = fu_mem_realloc(&p->alloc, p->steps, p->cap * sizeof *s, cap * sizeof *s);
    if (!s) return false;
    p->steps = s;
    p->cap = cap;
  }
  fu_pipeline_step st = {pass, NULL, 0};
  p->steps[p->n_steps++] = st;
  return true;
}

typedef struct cursor {
  const char *text;
  size_t pos, len;
  fu_source src;
  fu_diag_engine *diag;
} cursor;

static void skip_blanks(cursor *c) {
  while (c->pos < c->len && isspace((unsigned char)c->text[c->pos])) c->pos++;
}

static fu_loc at(cursor *c, size_t pos) {
  fu_loc l = {&c->src, 1, (uint32_t)pos + 1};
  return l;
}

static bool name_char(char ch) { return isalnum((unsigned char)ch) || ch == '_' || ch == '-' || ch == '.'; }

static size_t scan_name(cursor *c) {
  size_t start = c->pos;
  while (c->pos < c->len && name_char(c->text[c->pos])) c->pos++;
  return c->pos - start;
}

static void list_passes(fu_strbuf *sb) {
  size_t n;
  const fu_pass_def *const *all = fu_pass_all(&n);
  fu_strbuf_puts(sb, "all");
  for (size_t i = 0; i < n; i++) fu_strbuf_printf(sb, ", %s", all[i]->name);
}

static void list_options(fu_strbuf *sb, const fu_pass_def *pass) {
  const fu_pass_option_def *o = pass->options;
  if (!o || !o->name) {
    fu_strbuf_puts(sb, "it takes no options");
    return;
  }
  fu_strbuf_puts(sb, "valid options: ");
  for (bool first = true; o->name; o++, first = false) fu_strbuf_printf(sb, "%s%s", first ? "" : ", ", o->name);
}

static const fu_pass_option_def *find_option(const fu_pass_def *pass, const char *name, size_t len) {
  if (!pass->options) return NULL;
  for (const fu_pass_option_def *o = pass->options; o->name; o++)
    if (strlen(o->name) == len && memcmp(o->name, name, len) == 0) return o;
  return NULL;
}

/* Parses the `{...}` after a pass name into the step just pushed. */
static fu_status parse_options(cursor *c, fu_pipeline *p, fu_pipeline_step *step, fu_strbuf *sb) {
  c->pos++; /* '{' */
  fu_pass_option opts[64];
  uint32_t n = 0;
  skip_blanks(c);
  if (c->pos < c->len && c->text[c->pos] == '}') {
    c->pos++;
    return FU_OK;
  }
  for (;;) {
    skip_blanks(c);
    size_t name_pos = c->pos, name_len = scan_name(c);
    if (name_len == 0) {
      fu_error(c->diag, at(c, c->pos), "expected an option name in the options of pass '%s'", step->pass->name);
      return FU_ERR_INVALID_ARG;
    }
    if (!find_option(step->pass, c->text + name_pos, name_len)) {
      fu_strbuf_clear(sb);
      list_options(sb, step->pass);
      fu_error(c->diag, at(c, name_pos), "unknown option '%.*s' for pass '%s'; %s", (int)name_len,
               c->text + name_pos, step->pass->name, sb->data ? sb->data : "");
      return FU_ERR_INVALID_ARG;
    }
    skip_blanks(c);
    if (c->pos >= c->len || c->text[c->pos] != '=') {
      fu_error(c->diag, at(c, c->pos), "expected '=' after option '%.*s'", (int)name_len, c->text + name_pos);
      return FU_ERR_INVALID_ARG;
    }
    c->pos++;
    skip_blanks(c);
    size_t val_pos = c->pos;
    while (c->pos < c->len && !strchr(",{}", c->text[c->pos]) && !isspace((unsigned char)c->text[c->pos])) c->pos++;
    if (c->pos == val_pos) {
      fu_error(c->diag, at(c, c->pos), "expected a value for option '%.*s'", (int)name_len, c->text + name_pos);
      return FU_ERR_INVALID_ARG;
    }
    if (n == sizeof opts / sizeof opts[0]) {
      fu_error(c->diag, at(c, name_pos), "too many options for pass '%s'", step->pass->name);
      return FU_ERR_INVALID_ARG;
    }
    opts[n].name = fu_arena_strndup(p->arena, c->text + name_pos, name_len);
    opts[n].value = fu_arena_strndup(p->arena, c->text + val_pos, c->pos - val_pos);
    if (!opts[n].name || !opts[n].value) return FU_ERR_NOMEM;
    n++;
    skip_blanks(c);
    if (c->pos < c->len && c->text[c->pos] == ',') {
      c->pos++;
      continue;
    }
    if (c->pos < c->len && c->text[c->pos] == '}') {
      c->pos++;
      break;
    }
    fu_error(c->diag, at(c, c->pos), "expected ',' or '}' in the options of pass '%s'", step->pass->name);
    return FU_ERR_INVALID_ARG;
  }
  step->options = fu_arena_memdup(p->arena, opts, n, sizeof *opts);
  if (!step->options) return FU_ERR_NOMEM;
  step->n_options = n;
  return FU_OK;
}

static fu_status parse_steps(cursor *c, fu_pipeline *p, fu_strbuf *sb) {
  skip_blanks(c);
  if (c->pos >= c->len) {
    fu_strbuf_clear(sb);
    list_passes(sb);
    fu_error(c->diag, at(c, c->pos), "empty pass pipeline; valid passes: %s", sb->data ? sb->data : "");
    return FU_ERR_INVALID_ARG;
  }
  for (;;) {
    skip_blanks(c);
    size_t name_pos = c->pos, name_len = scan_name(c);
    if (name_len == 0) {
      fu_error(c->diag, at(c, c->pos), "expected a pass name");
      return FU_ERR_INVALID_ARG;
    }
    const char *name = c->text + name_pos;
    if (name_len == 3 && memcmp(name, "all", 3) == 0) {
      size_t n;
      const fu_pass_def *const *all = fu_pass_all(&n);
      for (size_t i = 0; i < n; i++)
        if (!push_step(p, all[i])) return FU_ERR_NOMEM;
      skip_blanks(c);
      if (c->pos < c->len && c->text[c->pos] == '{') {
        fu_error(c->diag, at(c, c->pos), "'all' takes no options; give them to a single pass");
        return FU_ERR_INVALID_ARG;
      }
    } else {
      const fu_pass_def *pass = fu_pass_lookup(name, name_len);
      if (!pass) {
        fu_strbuf_clear(sb);
        list_passes(sb);
        fu_error(c->diag, at(c, name_pos), "unknown pass '%.*s'; valid passes: %s", (int)name_len, name,
                 sb->data ? sb->data : "");
        return FU_ERR_INVALID_ARG;
      }
      if (!push_step(p, pass)) return FU_ERR_NOMEM;
      skip_blanks(c);
      if (c->pos < c->len && c->text[c->pos] == '{') {
        fu_status st = parse_options(c, p, &p->steps[p->n_steps - 1], sb);
        if (st != FU_OK) return st;
      }
    }
    skip_blanks(c);
    if (c->pos >= c->len) return FU_OK;
    if (c->text[c->pos] != ',') {
      fu_error(c->diag, at(c, c->pos), "expected ',' between passes, found '%c'", c->text[c->pos]);
      return FU_ERR_INVALID_ARG;
    }
    c->pos++;
  }
}

fu_status fu_pipeline_parse(fu_pipeline *p, const char *text, const char *src_name, fu_diag_engine *diag) {
  if (!p->arena && !(p->arena = fu_arena_new(p->alloc))) return FU_ERR_NOMEM;
  cursor c;
  memset(&c, 0, sizeof c);
  c.text = text ? text : "";
  c.len = strlen(c.text);
  c.src.name = src_name ? src_name : "<pass-pipeline>";
  c.src.text = c.text;
  c.src.len = c.len;
  c.src.first_line = 1;
  c.diag = diag;
  fu_strbuf sb;
  fu_strbuf_init(&sb, p->alloc);
  uint32_t before = p->n_steps;
  fu_status st = parse_steps(&c, p, &sb);
  fu_strbuf_free(&sb);
  if (st == FU_ERR_NOMEM) fu_error(diag, fu_loc_none(), "out of memory parsing the pass pipeline");
  if (st != FU_OK) p->n_steps = before;
  return st;
}

void fu_pipeline_print(fu_strbuf *out, const fu_pipeline *p) {
  for (uint32_t i = 0; i < p->n_steps; i++) {
    const fu_pipeline_step *s = &p->steps[i];
    fu_strbuf_printf(out, "%s%s", i ? "," : "", s->pass->name);
    if (s->n_options == 0) continue;
    fu_strbuf_putc(out, '{');
    for (uint32_t k = 0; k < s->n_options; k++)
      fu_strbuf_printf(out, "%s%s=%s", k ? "," : "", s->options[k].name, s->options[k].value);
    fu_strbuf_putc(out, '}');
  }
}
