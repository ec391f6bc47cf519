/* fuser: segment pass, Graphviz output of a fusion's segments.
 *
 * One node per top-level op: inputs and outputs as ellipses, segments as
 * boxes (name, kind, op count), host ops as notes, ops left outside any
 * segment as dashed boxes.  One edge per producer/consumer pair of nodes,
 * labelled with the values that cross it, in the order the consumer reads
 * them.  The node names are n<position>, stable for a given IR. */
#include <stdio.h>
#include <string.h>

#include "fuser/dot.h"
#include "fuser/print.h"
#include "fuser/segment.h"
#include "fuser/strbuf.h"

typedef struct dot_ctx {
  fu_fusion *f;
  fu_allocator alloc;
  uint32_t n_nodes, n_values;
  fu_op **nodes;
  uint32_t *node_of_value; /* value id -> node of its top-level op, UINT32_MAX */
  uint32_t *seen_node, *seen_value;
  uint32_t node_stamp, value_stamp;
  fu_strbuf sb;
} dot_ctx;

static uint32_t count_ops(const fu_block *b) {
  uint32_t n = 0;
  for (const fu_op *op = b->first; op; op = op->next) n++;
  return n;
}

static void put_label(dot_ctx *c, FILE *out) {
  fputs(" [label=\"", out);
  /* \n inside the label separates lines: written unescaped on purpose */
  const char *s = c->sb.data ? c->sb.data : "";
  const char *nl;
  while ((nl = strchr(s, '\n')) != NULL) {
    fu_dot_put_escaped(out, s, (size_t)(nl - s));
    fputs("\\n", out);
    s = nl + 1;
  }
  fu_dot_put_escaped(out, s, strlen(s));
  fputc('"', out);
}

static void put_node(dot_ctx *c, FILE *out, uint32_t i) {
  fu_op *op = c->nodes[i];
  fu_strbuf_clear(&c->sb);
  const char *shape = "box", *style = NULL;
  if (op->kind == FU_OP_INPUT && op->n_results == 1) {
    fu_print_value_ref(&c->sb, op->results[0]);
    fu_strbuf_puts(&c->sb, "\ninput ");
    fu_print_type(&c->sb, &op->results[0]->type);
    shape = "ellipse";
  } else if (op->kind == FU_OP_OUTPUT) {
    fu_strbuf_puts(&c->sb, "output");
    shape = "ellipse";
  } else if (op->kind == FU_OP_SEGMENT) {
    const fu_segment_info *s = &op->u.segment;
    uint32_t n = s->body ? count_ops(s->body) : 0;
    fu_strbuf_printf(&c->sb, "@%s\n%s\n%u op%s", s->name ? s->name : "?", fu_sched_kind_name(s->kind), n,
                     n == 1 ? "" : "s");
    style = "rounded,bold";
  } else {
    for (uint32_t r = 0; r < op->n_results; r++) {
      if (r) fu_strbuf_puts(&c->sb, ", ");
      fu_print_value_ref(&c->sb, op->results[r]);
    }
    fu_strbuf_printf(&c->sb, " = %s", fu_op_info_of(op->kind)->name);
    if (op->host) {
      fu_strbuf_puts(&c->sb, "\nhost");
      shape = "note";
    } else {
      style = "dashed";
    }
  }
  fprintf(out, "  n%u", i);
  put_label(c, out);
  fprintf(out, ", shape=%s", shape);
  if (style) fprintf(out, ", style=\"%s\"", style);
  fputs("];\n", out);
}

static uint32_t bump(uint32_t *stamp, uint32_t *arr, uint32_t n) {
  if (++*stamp == 0) {
    memset(arr, 0, (size_t)(n ? n : 1) * sizeof *arr);
    *stamp = 1;
  }
  return *stamp;
}

/* Edges into node i, one per producer, labelled with the values it reads. */
static void put_edges(dot_ctx *c, FILE *out, uint32_t i) {
  fu_op *op = c->nodes[i];
  uint32_t ps = bump(&c->node_stamp, c->seen_node, c->n_nodes);
  for (uint32_t k = 0; k < op->n_operands; k++) {
    const fu_value *v = op->operands[k];
    if (v->is_literal || v->id >= c->n_values) continue;
    uint32_t d = c->node_of_value[v->id];
    if (d == UINT32_MAX || d == i || c->seen_node[d] == ps) continue;
    c->seen_node[d] = ps;
    uint32_t vs = bump(&c->value_stamp, c->seen_value, c->n_values);
    fu_strbuf_clear(&c->sb);
    uint32_t n = 0;
    for (uint32_t j = k; j < op->n_operands; j++) {
      const fu_value *w = op->operands[j];
      if (w->is_literal || w->id >= c->n_values || c->node_of_value[w->id] != d || c->seen_value[w->id] == vs)
        continue;
      c->seen_value[w->id] = vs;
      if (n++) fu_strbuf_puts(&c->sb, ", ");
      fu_print_value_ref(&c->sb, w);
    }
    fprintf(out, "  n%u -> n%u", d, i);
    put_label(c, out);
    fputs("];\n", out);
  }
}

static void mark_values(dot_ctx *c, const fu_op *op, uint32_t node) {
  for (uint32_t r = 0; r < op->n_results; r++)
    if (op->results[r]->id < c->n_values) c->node_of_value[op->results[r]->id] = node;
  if (op->kind == FU_OP_SEGMENT && op->u.segment.body)
    for (const fu_op *in = op->u.segment.body->first; in; in = in->next) mark_values(c, in, node);
}

fu_status fu_segment_write_dot(fu_fusion *f, FILE *out) {
  dot_ctx c;
  memset(&c, 0, sizeof c);
  c.f = f;
  c.alloc = f->module->alloc;
  c.n_nodes = count_ops(&f->body);
  c.n_values = f->next_value_id;
  size_t nn = c.n_nodes ? c.n_nodes : 1, nv = c.n_values ? c.n_values : 1;
  c.nodes = fu_mem_calloc(&c.alloc, nn, sizeof *c.nodes);
  c.node_of_value = fu_mem_calloc(&c.alloc, nv, sizeof *c.node_of_value);
  c.seen_node = fu_mem_calloc(&c.alloc, nn, sizeof *c.seen_node);
  c.seen_value = fu_mem_calloc(&c.alloc, nv, sizeof *c.seen_value);
  fu_strbuf_init(&c.sb, c.alloc);
  fu_status st = FU_OK;
  if (!c.nodes || !c.node_of_value || !c.seen_node || !c.seen_value) st = FU_ERR_NOMEM;
  if (st == FU_OK) {
    for (uint32_t v = 0; v < c.n_values; v++) c.node_of_value[v] = UINT32_MAX;
    uint32_t i = 0;
    for (fu_op *op = f->body.first; op; op = op->next, i++) {
      c.nodes[i] = op;
      mark_values(&c, op, i);
    }
    fputs("digraph \"", out);
    const char *name = f->name ? f->name : "fusion";
    fu_dot_put_escaped(out, name, strlen(name));
    fputs("\" {\n  rankdir=TB;\n  node [fontname=\"monospace\"];\n  edge [fontname=\"monospace\"];\n", out);
    for (i = 0; i < c.n_nodes; i++) put_node(&c, out, i);
    for (i = 0; i < c.n_nodes; i++) put_edges(&c, out, i);
    fputs("}\n", out);
    if (ferror(out)) st = FU_ERR_IO;
  }
  fu_strbuf_free(&c.sb);
  fu_mem_free(&c.alloc, c.nodes, nn * sizeof *c.nodes);
  fu_mem_free(&c.alloc, c.node_of_value, nv * sizeof *c.node_of_value);
  fu_mem_free(&c.alloc, c.seen_node, nn * sizeof *c.seen_node);
  fu_mem_free(&c.alloc, c.seen_value, nv * sizeof *c.seen_value);
  return st;
}
