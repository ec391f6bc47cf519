/* fuser: the `index-graph` pass, over the index-graph analysis
 * (lib/analysis/index_graph.c). */
#include <stdio.h>

#include "fuser/index_graph.h"
#include "fuser/pass.h"
#include "fuser/strbuf.h"

static const fu_pass_option_def fu_pass_options_index_graph[] = {
    {"dot", "write a Graphviz graph of every scheduled segment's index graph to this file", NULL},
    {NULL, NULL, NULL},
};

static fu_status run_index_graph(fu_module *m, fu_pass_context *ctx);

const fu_pass_def fu_pass_index_graph = {
    "index-graph",
    "check that every scheduled segment is indexable; print its index graph (--print-index-graph)",
    fu_pass_options_index_graph,
    run_index_graph,
};

/* Builds the graph of every scheduled segment: an error here is an error
 * lower would meet.  With --debug=index-graph (or --print-index-graph) the
 * graphs are printed; with dot=FILE written as Graphviz.  The IR is not
 * changed: lower rebuilds the graph from it. */
static fu_status run_index_graph(fu_module *m, fu_pass_context *ctx) {
  FILE *debug = fu_pass_debug_enabled(ctx, "index-graph") ? ctx->debug_out : NULL;
  const char *dot_path = fu_pass_option_value(ctx, "dot");
  FILE *dot = NULL;
  if (dot_path && *dot_path) {
    dot = fopen(dot_path, "w");
    if (!dot) {
      fu_error(ctx->diag, fu_loc_none(), "cannot open '%s' for writing the index graph", dot_path);
      return FU_ERR_IO;
    }
    fprintf(dot, "digraph index_graph {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n");
  }
  fu_status st = FU_OK;
  fu_strbuf sb;
  fu_strbuf_init(&sb, m->alloc);
  for (fu_fusion *f = m->first; f && st == FU_OK; f = f->next)
    for (fu_op *op = f->body.first; op && st == FU_OK; op = op->next) {
      if (op->kind != FU_OP_SEGMENT || !op->u.segment.schedule) continue;
      fu_igraph *g = NULL;
      st = fu_igraph_build(f, op, op->u.segment.schedule, m->alloc, ctx->diag, &g);
      if (st != FU_OK) break;
      if (debug) {
        fu_strbuf_clear(&sb);
        fu_igraph_print(&sb, g);
        fputs(sb.data ? sb.data : "", debug);
      }
      if (dot && fu_igraph_write_dot(g, dot) != FU_OK) st = FU_ERR_IO;
      fu_igraph_free(g);
    }
  fu_strbuf_free(&sb);
  if (dot) {
    fprintf(dot, "}\n");
    if (fclose(dot) != 0 && st == FU_OK) st = FU_ERR_IO;
    if (st == FU_ERR_IO) fu_error(ctx->diag, fu_loc_none(), "cannot write the index graph to '%s'", dot_path);
  }
  return st;
}
