/* fuser-translate: convert between nvFuser Python definitions and .fir.
 *
 *   fuser-translate --from=nvfuser-py repro.py [-o f.fir] [--function=name]
 *   fuser-translate --to=nvfuser-py f.fir [-o repro.py] [--with-inputs]
 *   (both: [--split-input-file] [--error-limit=N])
 *
 * A thin main over lib/frontend: read the input, import or export, print.
 * Exit status: 0 success, 1 bad input, 2 bad command line. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fuser/driver.h"
#include "fuser/dump.h"
#include "fuser/frontend.h"
#include "fuser/parse.h"
#include "fuser/print.h"
#include "fuser/verify.h"

static const char usage[] =
    "usage: fuser-translate --from=nvfuser-py [--function=NAME] [FILE.py] [-o OUT.fir]\n"
    "       fuser-translate --to=nvfuser-py [--with-inputs] [FILE.fir] [-o OUT.py]\n"
    "\n"
    "  --from=nvfuser-py   import an nvFuser FusionDefinition script and print its Fusion IR\n"
    "  --to=nvfuser-py     export Fusion IR as a runnable nvFuser repro script\n"
    "  --function=NAME     import only the definition NAME (default: every definition)\n"
    "  --device=DEV        torch device of the exported inputs (default: cuda)\n"
    "  --with-inputs       the inputs list rebuilds the inputs the .fir records, exactly: its\n"
    "                      shapes, strides and dtypes, and the data of npy=\"...\" inputs\n"
    "                      (an input whose sizes are not recorded is an error)\n"
    "  --split-input-file  cut the input at lines '# -----' (Python) or '// -----' (.fir)\n"
    "                      and translate each chunk on its own\n"
    "  --error-limit=N     stop after N errors per chunk (default 20; 0: no limit)\n"
    "  --dump=NAME[,...]   fusion_ir (as imported or parsed), python_definition (as exported);\n"
    "                      FUSER_DUMP too, FUSER_DUMP_DIR for files (docs/debugging.md)\n"
    "  -o FILE             write the result to FILE (default: stdout)\n"
    "  FILE                the input; '-' or nothing reads stdin\n";

typedef struct options {
  int direction; /* +1 from python, -1 to python */
  const char *input;
  const char *output;
  const char *function;
  const char *device;
  bool split;
  bool with_inputs;
  unsigned error_limit; /* per chunk; 0: none */
  fu_dumps *dumps;      /* FUSER_DUMP and --dump */
} options;

static int parse_args(int argc, char **argv, options *o) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(usage, stdout);
      return 0;
    }
    if (strcmp(a, "--version") == 0) {
      printf("fuser-translate %s\n", FU_VERSION_STRING);
      return 0;
    }
    if (strncmp(a, "--from=", 7) == 0 || strncmp(a, "--to=", 5) == 0) {
      const char *fmt = strchr(a, '=') + 1;
      if (strcmp(fmt, "nvfuser-py") != 0) {
        fprintf(stderr, "fuser-translate: unknown format '%s' (the only one is 'nvfuser-py')\n", fmt);
        return 2;
      }
      int dir = a[2] == 'f' ? 1 : -1;
      if (o->direction && o->direction != dir) {
        fprintf(stderr, "fuser-translate: give one of --from= and --to=\n");
        return 2;
      }
      o->direction = dir;
    } else if (strncmp(a, "--dump=", 7) == 0) {
      if (!fu_dump_parse(o->dumps, a + 7, "--dump", NULL)) return 2;
    } else if (strncmp(a, "--function=", 11) == 0) {
      o->function = a + 11;
    } else if (strncmp(a, "--error-limit=", 14) == 0) {
      if (!fu_parse_error_limit(a + 14, &o->error_limit)) {
        fprintf(stderr, "fuser-translate: error: bad --error-limit '%s': expected a count (0: no limit)\n", a + 14);
        return 2;
      }
    } else if (strcmp(a, "--split-input-file") == 0) {
      o->split = true;
    } else if (strcmp(a, "--with-inputs") == 0) {
      o->with_inputs = true;
    } else if (strncmp(a, "--device=", 9) == 0) {
      o->device = a + 9;
    } else if (strcmp(a, "-o") == 0) {
      if (++i >= argc) {
        fprintf(stderr, "fuser-translate: -o needs a file name\n");
        return 2;
      }
      o->output = argv[i];
    } else if (strncmp(a, "-o", 2) == 0 && a[2]) {
      o->output = a + 2;
    } else if (a[0] == '-' && a[1] != '\0') {
      fprintf(stderr, "fuser-translate: unknown option '%s'\n%s", a, usage);
      return 2;
    } else if (o->input) {
      fprintf(stderr, "fuser-translate: more than one input file ('%s' and '%s')\n", o->input, a);
      return 2;
    } else {
      o->input = a;
    }
  }
  if (o->dumps->help) {
    fu_strbuf sb;
    fu_strbuf_init(&sb, fu_default_allocator());
    fu_dump_print_help(&sb);
    fputs(sb.data ? sb.data : "", stdout);
    fu_strbuf_free(&sb);
    return 0;
  }
  if (!o->direction) {
    fprintf(stderr, "fuser-translate: give --from=nvfuser-py or --to=nvfuser-py\n%s", usage);
    return 2;
  }
  if (o->with_inputs && o->direction > 0) {
    fprintf(stderr, "fuser-translate: --with-inputs applies to --to=nvfuser-py\n");
    return 2;
  }
  if (o->function && o->direction < 0) {
    fprintf(stderr, "fuser-translate: --function applies to --from=nvfuser-py\n");
    return 2;
  }
  return -1;
}

static int write_output(const options *o, const fu_strbuf *sb) {
  if (sb->failed) {
    fprintf(stderr, "fuser-translate: out of memory\n");
    return 1;
  }
  FILE *f = stdout;
  if (o->output && strcmp(o->output, "-") != 0 && !(f = fopen(o->output, "wb"))) {
    fprintf(stderr, "fuser-translate: cannot write '%s': %s\n", o->output, strerror(errno));
    return 1;
  }
  bool ok = fwrite(sb->data ? sb->data : "", 1, sb->len, f) == sb->len;
  ok &= fflush(f) == 0;
  if (f != stdout) ok &= fclose(f) == 0;
  if (!ok) {
    fprintf(stderr, "fuser-translate: error writing '%s'\n", o->output ? o->output : "<stdout>");
    return 1;
  }
  return 0;
}

/* Translate one chunk; output goes to `out`, diagnostics to stderr. */
static fu_status translate(const options *o, const fu_source *src, fu_allocator alloc, fu_strbuf *out) {
  fu_diag_engine diag;
  fu_diag_init(&diag, alloc);
  diag.error_limit = o->error_limit;
  fu_module *m = NULL;
  fu_status st;
  if (o->direction > 0) {
    fu_py_import_options io = {o->function};
    st = fu_py_import(src, alloc, &diag, &io, &m);
    if (st == FU_OK) st = fu_dump_module(o->dumps, FU_DUMP_FUSION_IR, m, "as imported");
    if (st == FU_OK) st = fu_dump_python(o->dumps, m, src->name, &diag);
    if (st == FU_OK) fu_print_module(out, m, NULL);
  } else {
    st = fu_parse_module(src, alloc, &diag, &m);
    if (st == FU_OK) st = fu_verify_module(m, &diag);
    if (st == FU_OK) st = fu_dump_module(o->dumps, FU_DUMP_FUSION_IR, m, "as parsed");
    if (st == FU_OK) st = fu_dump_python(o->dumps, m, src->name, &diag);
    fu_py_export_options eo = {src->name, o->device, o->with_inputs};
    if (st == FU_OK) st = fu_py_export(out, m, &eo, &diag);
  }
  fu_module_free(m);
  return st;
}

int main(int argc, char **argv) {
  fu_dumps dumps;
  fu_dump_init(&dumps, "fuser-translate", stderr);
  options o = {0, NULL, NULL, NULL, NULL, false, false, FU_DIAG_DEFAULT_ERROR_LIMIT, &dumps};
  int rc = fu_dump_from_env(&dumps, NULL) ? parse_args(argc, argv, &o) : 2;
  if (rc >= 0) {
    fu_dump_free(&dumps);
    return rc;
  }
  fu_allocator alloc = fu_default_allocator();
  bool from_stdin = !o.input || strcmp(o.input, "-") == 0;
  char *text = NULL;
  size_t len = 0;
  fu_status st = from_stdin ? fu_read_stream(stdin, alloc, &text, &len) : fu_read_file(o.input, alloc, &text, &len);
  if (st != FU_OK) {
    fprintf(stderr, "fuser-translate: cannot read '%s': %s\n", from_stdin ? "<stdin>" : o.input,
            st == FU_ERR_NOMEM ? "out of memory" : strerror(errno));
    fu_dump_free(&dumps);
    return 1;
  }
  const char *name = from_stdin ? "<stdin>" : o.input;
  fu_strbuf out;
  fu_strbuf_init(&out, alloc);
  bool failed = false;
  /* chunks: the whole text, or the pieces between separator lines */
  fu_source whole = {name, text, len, 1}, *chunks = NULL;
  uint32_t n_chunks = 1;
  if (o.split && fu_split_input_at(&whole, o.direction > 0 ? "#" : "//", alloc, &chunks, &n_chunks) != FU_OK) {
    fprintf(stderr, "fuser-translate: out of memory\n");
    fu_mem_free(&alloc, text, len + 1);
    fu_dump_free(&dumps);
    return 1;
  }
  for (uint32_t i = 0; i < n_chunks; i++) {
    if (i) fu_strbuf_puts(&out, o.direction > 0 ? "// -----\n" : "# -----\n");
    failed |= translate(&o, chunks ? &chunks[i] : &whole, alloc, &out) != FU_OK;
  }
  if (chunks) fu_mem_free(&alloc, chunks, n_chunks * sizeof *chunks);
  rc = failed ? 1 : write_output(&o, &out);
  fu_strbuf_free(&out);
  fu_mem_free(&alloc, text, len + 1);
  fu_dump_free(&dumps);
  return rc;
}
