/* fuser: the text and Graphviz forms of an index graph
 * (--print-index-graph, --index-graph-dot=FILE). */
#include <stdio.h>
#include <string.h>

#include "fuser/dot.h"
#include "fuser/index_graph.h"

static const char *vname(const fu_value *v) { return v && v->name ? v->name : "?"; }

/* `%T1.0` for a tensor dim, the axis name for a schedule axis, `r<i>` for
 * a reshape intermediate. */
static void id_name(fu_strbuf *out, const fu_igraph *g, const fu_schedule *s, uint32_t i) {
  const fu_id *d = fu_igraph_id(g, i);
  if (!d) {
    fu_strbuf_puts(out, "?");
    return;
  }
  if (d->kind == FU_ID_TENSOR)
    fu_strbuf_printf(out, "%%%s.%d", vname(d->value), (int)d->dim);
  else if (d->kind == FU_ID_AXIS && s && d->axis >= 0 && (uint32_t)d->axis < s->n_axes)
    fu_strbuf_puts(out, s->axes[d->axis].name);
  else
    fu_strbuf_printf(out, "r%u", i);
}

static void op_desc(fu_strbuf *out, const fu_op *op) {
  if (!op) {
    fu_strbuf_puts(out, "schedule");
    return;
  }
  if (op->n_results) fu_strbuf_printf(out, "%%%s = ", vname(op->results[0]));
  fu_strbuf_puts(out, fu_op_info_of(op->kind)->name);
}

static const char *expr_kind(fu_iexpr_kind k) {
  switch (k) {
  case FU_IE_MAP: return "map";
  case FU_IE_BROADCAST: return "broadcast";
  case FU_IE_MERGE: return "merge";
  case FU_IE_SPLIT: return "split";
  case FU_IE_NEW: return "new";
  case FU_IE_RESIZE: return "resize";
  }
  return "?";
}

static const char *mode_name(fu_amode m) {
  return m == FU_AM_VECTOR ? "vector" : m == FU_AM_UNIFORM ? "uniform" : "per lane";
}

void fu_igraph_print(fu_strbuf *out, const fu_igraph *g) {
  const fu_schedule *s = fu_igraph_schedule(g);
  const fu_op *seg = fu_igraph_segment(g);
  const fu_fusion *f = fu_igraph_fusion(g);
  fu_strbuf_printf(out, "index-graph @%s/@%s (reference %%%s) {\n", f && f->name ? f->name : "?",
                   seg && seg->u.segment.name ? seg->u.segment.name : "?", vname(s ? s->reference : NULL));
  /* exact groups, in order of their first domain */
  uint32_t n = fu_igraph_num_ids(g);
  fu_strbuf_puts(out, "  exact groups:\n");
  uint32_t k = 0;
  for (uint32_t i = 0; i < n; i++) {
    const fu_id *d = fu_igraph_id(g, i);
    if (d->group != i || d->kind == FU_ID_AXIS) continue;
    fu_strbuf_printf(out, "    E%u {", k++);
    fu_ix_print(out, d->extent);
    fu_strbuf_puts(out, "}:");
    for (uint32_t j = i; j < n; j++) {
      const fu_id *e = fu_igraph_id(g, j);
      if (e->group != i) continue;
      fu_strbuf_putc(out, ' ');
      id_name(out, g, s, j);
    }
    fu_strbuf_putc(out, '\n');
  }
  fu_strbuf_puts(out, "  exprs:\n");
  for (uint32_t i = 0; i < fu_igraph_num_exprs(g); i++) {
    const fu_iexpr *e = fu_igraph_expr(g, i);
    fu_strbuf_printf(out, "    %s ", expr_kind(e->kind));
    for (uint32_t a = 0; a < e->n_in; a++) {
      if (a) fu_strbuf_puts(out, ", ");
      id_name(out, g, s, e->in[a]);
    }
    if (e->kind == FU_IE_SPLIT) {
      fu_strbuf_puts(out, " by ");
      fu_ix_print(out, e->factor);
    }
    fu_strbuf_puts(out, e->n_in ? " -> " : "-> ");
    for (uint32_t a = 0; a < e->n_out; a++) {
      if (a) fu_strbuf_puts(out, ", ");
      id_name(out, g, s, e->out[a]);
    }
    fu_strbuf_puts(out, " (");
    op_desc(out, e->op);
    fu_strbuf_puts(out, ")\n");
  }
  if (s) {
    fu_strbuf_puts(out, "  loop:\n");
    for (uint32_t i = 0; i < s->n_loops; i++) {
      fu_strbuf_printf(out, "    %s: %s {", s->axes[s->loops[i].axis].name, fu_ptype_name(s->loops[i].ptype));
      fu_ix_print(out, fu_igraph_axis_extent(g, s->loops[i].axis));
      fu_strbuf_puts(out, "}\n");
    }
    fu_strbuf_puts(out, "  axes:\n");
    for (uint32_t a = 0; a < s->n_axes; a++) {
      fu_strbuf_printf(out, "    %s = ", s->axes[a].name);
      fu_ix_print(out, fu_igraph_axis_index(g, a));
      fu_strbuf_puts(out, "  {");
      fu_ix_print(out, fu_igraph_axis_extent(g, a));
      fu_strbuf_puts(out, "}\n");
    }
  }
  fu_strbuf_puts(out, "  predicates:");
  if (fu_igraph_num_predicates(g) == 0) fu_strbuf_puts(out, " none");
  fu_strbuf_putc(out, '\n');
  for (uint32_t i = 0; i < fu_igraph_num_predicates(g); i++) {
    const fu_ix *idx, *ext;
    fu_igraph_predicate(g, i, &idx, &ext);
    fu_strbuf_puts(out, "    ");
    fu_ix_print(out, idx);
    fu_strbuf_puts(out, " < ");
    fu_ix_print(out, ext);
    fu_strbuf_putc(out, '\n');
  }
  fu_strbuf_puts(out, "  accesses:\n");
  for (uint32_t i = 0; i < fu_igraph_num_accesses(g); i++) {
    const fu_iaccess *a = fu_igraph_access(g, i);
    fu_strbuf_printf(out, "    %s %%%s", a->is_store ? "store" : "load", vname(a->value));
    if (a->user) {
      fu_strbuf_puts(out, " for ");
      op_desc(out, a->user);
    }
    fu_strbuf_puts(out, " [");
    for (int32_t d = 0; d < a->value->type.rank; d++) {
      if (d) fu_strbuf_puts(out, ", ");
      fu_ix_print(out, a->coords[d]);
    }
    fu_strbuf_puts(out, "] at ");
    fu_ix_print(out, a->offset);
    fu_strbuf_printf(out, ": %s\n", mode_name(a->mode));
  }
  fu_strbuf_printf(out, "  index: %s\n}\n", fu_dtype_name(fu_igraph_index_dtype(g)));
}

static void dot_text(FILE *out, const char *s) {
  if (s) fu_dot_put_escaped(out, s, strlen(s));
}

/* One cluster per segment, inside it one per tensor (its dims); schedule
 * axes apart, loop axes filled; an edge per expr input -> output (dashed
 * for broadcasts).  Written as a subgraph: the caller opens the digraph.
 * Node names carry the segment's title so several segments share a file. */
fu_status fu_igraph_write_dot(const fu_igraph *g, FILE *out) {
  const fu_schedule *s = fu_igraph_schedule(g);
  const fu_op *seg = fu_igraph_segment(g);
  const fu_fusion *f = fu_igraph_fusion(g);
  char title[160];
  snprintf(title, sizeof title, "%s/%s", f && f->name ? f->name : "f",
           seg && seg->u.segment.name ? seg->u.segment.name : "s");
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  fprintf(out, "  subgraph \"cluster_");
  dot_text(out, title);
  fprintf(out, "\" {\n    label=\"");
  dot_text(out, title);
  fprintf(out, "\";\n");
  uint32_t n = fu_igraph_num_ids(g);
  const fu_value *cur = NULL;
  bool open = false;
  for (uint32_t i = 0; i < n; i++) {
    const fu_id *d = fu_igraph_id(g, i);
    if (d->kind == FU_ID_TENSOR && d->value != cur) {
      if (open) fprintf(out, "    }\n");
      cur = d->value;
      fprintf(out, "    subgraph \"cluster_");
      dot_text(out, title);
      fprintf(out, "_%u\" {\n      label=\"%%", i);
      dot_text(out, vname(cur));
      fprintf(out, "\";\n");
      open = true;
    } else if (d->kind != FU_ID_TENSOR && open) {
      fprintf(out, "    }\n");
      open = false;
      cur = NULL;
    }
    const char *ptype = NULL;
    for (uint32_t l = 0; s && l < s->n_loops; l++)
      if (d->axis >= 0 && d->axis == (int32_t)s->loops[l].axis) ptype = fu_ptype_name(s->loops[l].ptype);
    fu_strbuf_clear(&sb);
    id_name(&sb, g, s, i);
    if (d->kind == FU_ID_TENSOR && d->axis >= 0 && s) {
      fu_strbuf_puts(&sb, " = ");
      fu_strbuf_puts(&sb, s->axes[d->axis].name);
    }
    fu_strbuf_puts(&sb, " {");
    fu_ix_print(&sb, d->extent);
    fu_strbuf_puts(&sb, "}");
    fprintf(out, "      \"");
    dot_text(out, title);
    fprintf(out, ".%u\" [label=\"", i);
    dot_text(out, sb.data);
    if (ptype) {
      fputs("\\n", out); /* a line break inside the label */
      dot_text(out, ptype);
    }
    fprintf(out, "\"%s];\n", ptype ? ", style=filled, fillcolor=lightblue" : "");
  }
  if (open) fprintf(out, "    }\n");
  for (uint32_t e = 0; e < fu_igraph_num_exprs(g); e++) {
    const fu_iexpr *x = fu_igraph_expr(g, e);
    for (uint32_t a = 0; a < x->n_in; a++)
      for (uint32_t b = 0; b < x->n_out; b++) {
        fprintf(out, "    \"");
        dot_text(out, title);
        fprintf(out, ".%u\" -> \"", x->in[a]);
        dot_text(out, title);
        fprintf(out, ".%u\" [label=\"%s\"%s];\n", x->out[b], expr_kind(x->kind),
                x->kind == FU_IE_BROADCAST ? ", style=dashed" : "");
      }
  }
  fprintf(out, "  }\n");
  fu_strbuf_free(&sb);
  return ferror(out) ? FU_ERR_IO : FU_OK;
}
