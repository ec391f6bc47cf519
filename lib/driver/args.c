/* fuser driver: fuser-opt's command line, its help text and pass list.
 *
 * Long options take `--name=value` or `--name value` (LLVM's single-dash
 * spelling `-name` works too, as MLIR users type it); options whose value is
 * optional (--timing, --debug) take only the `=` form. */
#include <stdarg.h>
#include <string.h>

#include "fuser/device.h" /* codegen: --device */
#include "fuser/driver.h"
#include "fuser/dump.h"

static const char *const emit_names[FU_EMIT_COUNT] = {"fir", "llvm", "ptx", "cuda"};

const char *fu_emit_kind_name(fu_emit_kind k) { return (unsigned)k < FU_EMIT_COUNT ? emit_names[k] : "?"; }

fu_emit_kind fu_emit_kind_from_name(const char *name) {
  for (int k = 0; k < FU_EMIT_COUNT; k++)
    if (name && strcmp(name, emit_names[k]) == 0) return (fu_emit_kind)k;
  return FU_EMIT_COUNT;
}

typedef enum opt_id {
  O_PASS, O_PIPELINE, O_OUTPUT, O_EMIT, O_BACKEND, O_SPLIT, O_VERIFY_DIAG, O_NO_VERIFY_EACH, O_VERIFY_EACH,
  O_PRINT_BEFORE_ALL, O_PRINT_AFTER_ALL, O_PRINT_BEFORE, O_PRINT_AFTER, O_TIMING, O_DEBUG, O_PRINT_LOCS,
  O_LIST_PASSES, O_HELP, O_VERSION, O_ERROR_LIMIT,
  O_DEVICE, O_PRINT_INDEX_GRAPH, O_INDEX_GRAPH_DOT, /* codegen */
  O_EXTRACT_SEGMENT, O_SEGMENT_DOT,                 /* segments */
  O_ALLOW_PARTIAL,
  O_DUMP, O_DISABLE, O_ENABLE, /* debugging switches */
} opt_id;

#define ARG_NONE FU_CLI_NONE
#define ARG_REQUIRED FU_CLI_REQUIRED
#define ARG_OPTIONAL FU_CLI_OPTIONAL

static const fu_cli_option options[] = {
    {"pass", O_PASS, ARG_REQUIRED, "P[,Q...]", "append passes to the pipeline (repeatable); P{opt=v,...} sets options"},
    {"pass-pipeline", O_PIPELINE, ARG_REQUIRED, "'P,Q{opt=v}'", "append a whole pipeline (same syntax as --pass)"},
    {"output", O_OUTPUT, ARG_REQUIRED, "FILE", "write the output to FILE (also -o FILE); default stdout"},
    {"o", O_OUTPUT, ARG_REQUIRED, "FILE", "the same as --output"},
    {"emit", O_EMIT, ARG_REQUIRED, "fir|llvm|ptx|cuda", "what to write after the pipeline (default fir)"},
    {"allow-partial", O_ALLOW_PARTIAL, ARG_NONE, NULL,
     "--emit leaves out segments that have no kernel, with a warning (default: they are errors)"},
    {"backend", O_BACKEND, ARG_REQUIRED, "llvm|nvrtc",
     "the backend of --emit=ptx: llvm (default) or nvrtc (CUDA C through libnvrtc)"},
    {"split-input-file", O_SPLIT, ARG_NONE, NULL,
     "process each chunk between `// -----` lines as its own module; join outputs with `// -----`"},
    {"verify-diagnostics", O_VERIFY_DIAG, ARG_NONE, NULL,
     "check diagnostics against `expected-error@+N {{text}}` comments instead of printing them"},
    {"no-verify-each", O_NO_VERIFY_EACH, ARG_NONE, NULL, "do not run the verifier after every pass"},
    {"verify-each", O_VERIFY_EACH, ARG_NONE, NULL, "run the verifier after every pass (the default)"},
    {"print-ir-before-all", O_PRINT_BEFORE_ALL, ARG_NONE, NULL, "print the IR to stderr before every pass"},
    {"print-ir-after-all", O_PRINT_AFTER_ALL, ARG_NONE, NULL, "print the IR to stderr after every pass"},
    {"print-ir-before", O_PRINT_BEFORE, ARG_REQUIRED, "P[,Q...]", "print the IR to stderr before these passes"},
    {"print-ir-after", O_PRINT_AFTER, ARG_REQUIRED, "P[,Q...]", "print the IR to stderr after these passes"},
    {"timing", O_TIMING, ARG_OPTIONAL, "[=text|json]", "print the wall time of each pass and phase to stderr"},
    {"debug", O_DEBUG, ARG_OPTIONAL, "[=P[,Q...]]", "debug output of these passes (default: all) to stderr"},
    {"print-locs", O_PRINT_LOCS, ARG_NONE, NULL, "append `// line:col` comments to printed ops"},
    {"list-passes", O_LIST_PASSES, ARG_NONE, NULL, "list the passes with their options and defaults"},
    /* ---- codegen ---- */
    {"device", O_DEVICE, ARG_REQUIRED, "NAME|FILE",
     "target GPU for schedule and --emit: h100, h200, a100, sm_80, sm_90, or a key = value file"},
    {"print-index-graph", O_PRINT_INDEX_GRAPH, ARG_NONE, NULL, "print each segment's index graph to stderr"},
    {"index-graph-dot", O_INDEX_GRAPH_DOT, ARG_REQUIRED, "FILE", "write the index graphs as Graphviz to FILE"},
    /* ---- end codegen ---- */
    {"extract-segment", O_EXTRACT_SEGMENT, ARG_REQUIRED, "@NAME",
     "after the pipeline, output segment @NAME alone, as a standalone fusion that parses and runs"},
    {"segment-dot", O_SEGMENT_DOT, ARG_REQUIRED, "FILE",
     "after the pipeline, write every fusion's segments as Graphviz to FILE"},
    {"dump", O_DUMP, ARG_REQUIRED, "NAME[,...]",
     "dumps to stderr or FUSER_DUMP_DIR (as FUSER_DUMP; --dump=help lists them)"},
    {"disable", O_DISABLE, ARG_REQUIRED, "NAME[,...]",
     "turn features off for bisecting (as FUSER_DISABLE; --dump=help lists them)"},
    {"enable", O_ENABLE, ARG_REQUIRED, "NAME[,...]", "turn them back on (as FUSER_ENABLE)"},
    {"error-limit", O_ERROR_LIMIT, ARG_REQUIRED, "N", "stop after N errors per input chunk (default 20; 0: no limit)"},
    {"help", O_HELP, ARG_NONE, NULL, "show this help (also -h)"},
    {"h", O_HELP, ARG_NONE, NULL, "the same as --help"},
    {"version", O_VERSION, ARG_NONE, NULL, "show the version"},
};

/* PTX from any target; a text kind from the target whose text it is (the
 * tool's compiler is moved to it, fu_opt_select_target). */
bool fu_opt_target_output(const fu_opt_config *cfg, fu_emit_kind k, fu_target_output *what) {
  const fu_target_def *t = cfg && cfg->compiler ? cfg->compiler->target : NULL;
  if (!t || k == FU_EMIT_FIR || k >= FU_EMIT_COUNT) return false;
  *what = k == FU_EMIT_PTX ? FU_TARGET_PTX : FU_TARGET_TEXT;
  return k == FU_EMIT_PTX || fu_target_for_text(emit_names[k]) != NULL;
}

const fu_target_def *fu_opt_select_target(const fu_opt_config *cfg, const fu_opt_args *a) {
  const fu_target_def *t = cfg && cfg->compiler ? cfg->compiler->target : NULL;
  if (a->backend) return fu_target_lookup(a->backend);
  if (t && a->emit != FU_EMIT_FIR && a->emit != FU_EMIT_PTX && a->emit < FU_EMIT_COUNT &&
      strcmp(t->text_name, emit_names[a->emit]) != 0)
    return fu_target_for_text(emit_names[a->emit]);
  return t;
}

bool fu_opt_can_emit(const fu_opt_config *cfg, fu_emit_kind k) {
  fu_target_output what;
  return k == FU_EMIT_FIR || (cfg && cfg->emitters[k]) || fu_opt_target_output(cfg, k, &what);
}

static const char *tool(const fu_opt_config *cfg) {
  return cfg && cfg->tool_name ? cfg->tool_name : "fuser-opt";
}

void fu_opt_print_help(fu_strbuf *out, const fu_opt_config *cfg) {
  fu_strbuf_printf(out,
                   "usage: %s [options] [FILE.fir | -]\n\n"
                   "Parses a .fir file (stdin when FILE is '-' or missing), verifies it, runs the\n"
                   "passes given with --pass/--pass-pipeline, verifying after each, and prints the\n"
                   "result.\n\noptions:\n",
                   tool(cfg));
  fu_cli_print_options(out, options, sizeof options / sizeof options[0]);
  fu_strbuf_puts(out, "\npasses (see --list-passes): all");
  size_t n;
  const fu_pass_def *const *all = fu_pass_all(&n);
  for (size_t i = 0; i < n; i++) fu_strbuf_printf(out, ", %s", all[i]->name);
  fu_strbuf_puts(out, "\n--emit kinds in this build: fir");
  for (int k = 1; k < FU_EMIT_COUNT; k++)
    if (fu_opt_can_emit(cfg, (fu_emit_kind)k)) fu_strbuf_printf(out, ", %s", emit_names[k]);
  fu_strbuf_puts(out, "\n\nexit status: 0 success, 1 bad input or a failing pass (or unmet expectations with\n"
                      "--verify-diagnostics), 2 bad command line\n");
}

void fu_opt_print_pass_list(fu_strbuf *out) {
  size_t n;
  const fu_pass_def *const *all = fu_pass_all(&n);
  fu_strbuf_puts(out, "Passes, in pipeline order (--pass=all runs them in this order):\n");
  for (size_t i = 0; i < n; i++) {
    fu_strbuf_printf(out, "  %s\n      %s\n", all[i]->name, all[i]->summary);
    if (!all[i]->options || !all[i]->options->name) continue;
    fu_strbuf_puts(out, "    options:\n");
    for (const fu_pass_option_def *o = all[i]->options; o->name; o++)
      fu_strbuf_printf(out, "      %s (default: %s)\n          %s\n", o->name,
                       o->default_value ? o->default_value : "none", o->summary ? o->summary : "");
  }
}

static void usage_error(FILE *err, const fu_opt_config *cfg, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void usage_error(FILE *err, const fu_opt_config *cfg, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(err, "%s: error: ", tool(cfg));
  vfprintf(err, fmt, ap);
  fputc('\n', err);
  va_end(ap);
}

/* Checks every name of a --print-ir-before/after or --debug list against the
 * registry. */
static bool check_pass_list(const char *list, const char *flag, bool allow_all, const fu_opt_config *cfg,
                            FILE *err) {
  const char *p = list;
  for (;;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    bool is_all = len == 3 && memcmp(p, "all", 3) == 0;
    if (!fu_pass_lookup(p, len) && !(allow_all && is_all)) {
      size_t n;
      const fu_pass_def *const *all = fu_pass_all(&n);
      fprintf(err, "%s: error: unknown pass '%.*s' in --%s; valid passes: %s", tool(cfg), (int)len, p, flag,
              allow_all ? "all" : "");
      for (size_t i = 0; i < n; i++) fprintf(err, "%s%s", (allow_all || i) ? ", " : "", all[i]->name);
      fputc('\n', err);
      return false;
    }
    if (!end) return true;
    p = end + 1;
  }
}

bool fu_parse_error_limit(const char *text, unsigned *out) {
  unsigned long v = 0;
  if (!text || !*text) return false;
  for (const char *c = text; *c; c++) {
    if (*c < '0' || *c > '9') return false;
    v = v * 10 + (unsigned long)(*c - '0');
    if (v > 1000000000UL) return false;
  }
  *out = (unsigned)v;
  return true;
}

/* ---- codegen: --device, --print-index-graph, --index-graph-dot ----------
 * They set options of the passes in the pipeline that take them (`device`
 * of schedule, `dot` of index-graph) unless the pipeline text set them, and
 * --print-index-graph turns on index-graph's debug output. */
static bool has_option(const fu_pass_def *p, const char *name) {
  for (const fu_pass_option_def *o = p->options; o && o->name; o++)
    if (strcmp(o->name, name) == 0) return true;
  return false;
}

static bool step_sets(const fu_pipeline_step *s, const char *name) {
  for (uint32_t i = 0; i < s->n_options; i++)
    if (strcmp(s->options[i].name, name) == 0) return true;
  return false;
}

/* Appends name=value to the options of every step (of pass `only`, when
 * not NULL) whose pass declares `name` and does not set it; returns how
 * many steps take it, -1 when memory runs out. */
static int add_default_option(fu_opt_args *a, const char *only, const char *name, const char *value) {
  int n = 0;
  fu_pipeline *p = &a->pipeline;
  for (uint32_t i = 0; i < p->n_steps; i++) {
    fu_pipeline_step *s = &p->steps[i];
    if ((only && strcmp(s->pass->name, only) != 0) || !has_option(s->pass, name)) continue;
    n++;
    if (step_sets(s, name)) continue;
    if (!p->arena && !(p->arena = fu_arena_new(p->alloc))) return -1;
    fu_pass_option *o = fu_arena_alloc(p->arena, (s->n_options + 1) * sizeof *o);
    if (!o) return -1;
    if (s->n_options) memcpy(o, s->options, s->n_options * sizeof *o);
    o[s->n_options].name = name;
    o[s->n_options].value = value;
    s->options = o;
    s->n_options++;
  }
  return n;
}

static bool pipeline_has(const fu_opt_args *a, const char *pass) {
  for (uint32_t i = 0; i < a->pipeline.n_steps; i++)
    if (strcmp(a->pipeline.steps[i].pass->name, pass) == 0) return true;
  return false;
}

/* --backend names a target of this build, whose text --emit asks for, if
 * a text at all. */
static fu_status check_backend(const fu_opt_args *a, const fu_opt_config *cfg, FILE *err) {
  if (!a->backend) return FU_OK;
  const fu_target_def *t = fu_target_lookup(a->backend);
  if (!t) {
    size_t n;
    const fu_target_def *const *all = fu_target_all(&n);
    char names[256] = "";
    for (size_t i = 0; i < n; i++)
      snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", all[i]->name);
    usage_error(err, cfg, "unknown --backend '%s'; this build has: %s", a->backend, n ? names : "none");
    return FU_ERR_INVALID_ARG;
  }
  if (a->emit != FU_EMIT_FIR && a->emit != FU_EMIT_PTX && strcmp(t->text_name, emit_names[a->emit]) != 0) {
    usage_error(err, cfg, "--emit=%s is not what the %s backend writes (its text is --emit=%s)", emit_names[a->emit],
                t->name, t->text_name);
    return FU_ERR_INVALID_ARG;
  }
  return FU_OK;
}

static fu_status apply_codegen_args(fu_opt_args *a, const fu_opt_config *cfg, FILE *err) {
  if (check_backend(a, cfg, err) != FU_OK) return FU_ERR_INVALID_ARG;
  if (a->device) {
    fu_diag_engine diag;
    fu_diag_init(&diag, fu_default_allocator());
    diag.stream = err;
    if (fu_device_from_spec(a->device, fu_default_allocator(), &a->device_desc, &diag) != FU_OK) {
      usage_error(err, cfg, "bad --device '%s'", a->device);
      return FU_ERR_INVALID_ARG;
    }
    a->run.device = &a->device_desc;
  }
  if ((a->print_index_graph || a->index_graph_dot) && !pipeline_has(a, "index-graph")) {
    usage_error(err, cfg, "--%s needs the index-graph pass in the pipeline (--pass=...,index-graph or --pass=all)",
                a->print_index_graph ? "print-index-graph" : "index-graph-dot");
    return FU_ERR_INVALID_ARG;
  }
  if (a->index_graph_dot && add_default_option(a, "index-graph", "dot", a->index_graph_dot) < 0) return FU_ERR_NOMEM;
  if (a->print_index_graph) {
    if (!a->run.debug) {
      a->run.debug = "index-graph";
    } else if (!fu_name_in_list(a->run.debug, "index-graph")) {
      fu_pipeline *p = &a->pipeline;
      if (!p->arena && !(p->arena = fu_arena_new(p->alloc))) return FU_ERR_NOMEM;
      size_t n = strlen(a->run.debug);
      char *s = fu_arena_alloc(p->arena, n + sizeof ",index-graph");
      if (!s) return FU_ERR_NOMEM;
      memcpy(s, a->run.debug, n);
      memcpy(s + n, ",index-graph", sizeof ",index-graph");
      a->run.debug = s;
    }
  }
  return FU_OK;
}
/* ---- end codegen ---- */

fu_status fu_opt_parse_args(int argc, char *const *argv, const fu_opt_config *cfg, fu_opt_args *a, FILE *err) {
  memset(a, 0, sizeof *a);
  fu_pipeline_init(&a->pipeline, fu_default_allocator());
  a->run = fu_run_options_default();
  a->emit = FU_EMIT_FIR;
  a->error_limit = FU_DIAG_DEFAULT_ERROR_LIMIT;
  fu_diag_engine diag;
  fu_diag_init(&diag, fu_default_allocator());
  diag.stream = err;
  char prefix[64];
  snprintf(prefix, sizeof prefix, "%s: error: ", tool(cfg));
  fu_allocator al = fu_default_allocator();
  a->dumps = fu_mem_alloc(&al, sizeof *a->dumps);
  if (!a->dumps) return FU_ERR_NOMEM;
  fu_dump_init(a->dumps, tool(cfg), err);
  if (!fu_dump_from_env(a->dumps, NULL) || !fu_features_from_env(&a->run.features, tool(cfg), err))
    return FU_ERR_INVALID_ARG;
  fu_cli cli = {argc, argv, options, sizeof options / sizeof options[0], prefix, err, 1, false};
  const char *value;
  for (int id; (id = fu_cli_next(&cli, &value)) != FU_CLI_END;) {
    if (id == FU_CLI_ERROR) return FU_ERR_INVALID_ARG;
    if (id == FU_CLI_FILE) {
      if (a->input) {
        usage_error(err, cfg, "more than one input file ('%s' and '%s')", a->input, value);
        return FU_ERR_INVALID_ARG;
      }
      a->input = value;
      continue;
    }
    const fu_cli_option *o = &options[0];
    while (o->id != id) o++;
    switch ((opt_id)id) {
    case O_PASS:
    case O_PIPELINE:
      if (fu_pipeline_parse(&a->pipeline, value, o->id == O_PASS ? "--pass" : "--pass-pipeline", &diag) != FU_OK)
        return FU_ERR_INVALID_ARG;
      break;
    case O_OUTPUT: a->output = value; break;
    case O_EMIT: {
      fu_emit_kind k = fu_emit_kind_from_name(value);
      if (k == FU_EMIT_COUNT) {
        usage_error(err, cfg, "unknown --emit kind '%s'; valid kinds: fir, llvm, ptx, cuda", value);
        return FU_ERR_INVALID_ARG;
      }
      if (k != FU_EMIT_FIR && !fu_opt_can_emit(cfg, k)) {
        usage_error(err, cfg,
                    "--emit=%s is not available in this build (fuser was built without the %s backend; "
                    "see README.md)",
                    value, k == FU_EMIT_CUDA ? "CUDA C" : "LLVM");
        return FU_ERR_INVALID_ARG;
      }
      a->emit = k;
      break;
    }
    case O_BACKEND: a->backend = value; break;
    case O_SPLIT: a->split_input_file = true; break;
    case O_ALLOW_PARTIAL: a->allow_partial = true; break;
    case O_DUMP:
      if (!fu_dump_parse(a->dumps, value, "--dump", NULL)) return FU_ERR_INVALID_ARG;
      break;
    case O_DISABLE:
    case O_ENABLE:
      if (!fu_features_parse(&a->run.features, value, o->id == O_DISABLE, o->id == O_DISABLE ? "--disable" : "--enable",
                             tool(cfg), err))
        return FU_ERR_INVALID_ARG;
      break;
    case O_VERIFY_DIAG: a->verify_diagnostics = true; break;
    case O_NO_VERIFY_EACH: a->run.verify_each = false; break;
    case O_VERIFY_EACH: a->run.verify_each = true; break;
    case O_PRINT_BEFORE_ALL: a->run.print_ir_before_all = true; break;
    case O_PRINT_AFTER_ALL: a->run.print_ir_after_all = true; break;
    case O_PRINT_BEFORE:
    case O_PRINT_AFTER:
      if (!check_pass_list(value, o->name, false, cfg, err)) return FU_ERR_INVALID_ARG;
      if (o->id == O_PRINT_BEFORE)
        a->run.print_ir_before = value;
      else
        a->run.print_ir_after = value;
      break;
    case O_TIMING:
      if (!value || strcmp(value, "text") == 0)
        a->timing = FU_TIMING_TEXT;
      else if (strcmp(value, "json") == 0)
        a->timing = FU_TIMING_JSON;
      else {
        usage_error(err, cfg, "unknown --timing format '%s'; valid: text, json", value);
        return FU_ERR_INVALID_ARG;
      }
      break;
    case O_DEBUG:
      if (!value) value = "all";
      if (!check_pass_list(value, o->name, true, cfg, err)) return FU_ERR_INVALID_ARG;
      a->run.debug = value;
      break;
    case O_PRINT_LOCS: a->run.print_locs = true; break;
    case O_LIST_PASSES: a->list_passes = true; break;
    case O_HELP: a->help = true; break;
    case O_VERSION: a->version = true; break;
    case O_ERROR_LIMIT:
      if (!fu_parse_error_limit(value, &a->error_limit)) {
        usage_error(err, cfg, "bad --error-limit '%s': expected a count (0: no limit)", value);
        return FU_ERR_INVALID_ARG;
      }
      break;
    /* ---- codegen ---- */
    case O_DEVICE: a->device = value; break;
    case O_PRINT_INDEX_GRAPH: a->print_index_graph = true; break;
    case O_INDEX_GRAPH_DOT: a->index_graph_dot = value; break;
    /* ---- end codegen ---- */
    case O_EXTRACT_SEGMENT:
      if (!value[0] || (value[0] == '@' && !value[1])) {
        usage_error(err, cfg, "--extract-segment needs a segment name, such as @g0");
        return FU_ERR_INVALID_ARG;
      }
      a->extract_segment = value;
      break;
    case O_SEGMENT_DOT:
      if (!value[0]) {
        usage_error(err, cfg, "--segment-dot needs a file name");
        return FU_ERR_INVALID_ARG;
      }
      a->segment_dot = value;
      break;
    }
  }
  a->dump_help = a->dumps->help;
  if (fu_dump_any(a->dumps)) a->run.dumps = a->dumps;
  return apply_codegen_args(a, cfg, err);
}

void fu_opt_args_free(fu_opt_args *a) {
  fu_pipeline_free(&a->pipeline);
  if (a->dumps) {
    fu_allocator al = fu_default_allocator();
    fu_dump_free(a->dumps);
    fu_mem_free(&al, a->dumps, sizeof *a->dumps);
    a->dumps = NULL;
  }
}
