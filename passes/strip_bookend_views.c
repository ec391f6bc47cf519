/* fuser: the strip-bookend-views pass (rules in docs/passes.md).
 *
 * Input end: walking forward, a view op whose operand is an input or a host
 * op becomes a host op when, under the operand's layout, its result is a
 * pure view of the operand's memory.  `set` never does: at the input end it
 * is a copy, the kernel's work.
 *
 * Output end: the candidates are the remaining view ops whose results are
 * read only by fusion outputs and other candidates (a reverse walk finds
 * them).  Each candidate tree hangs off a value a kernel writes (its root);
 * the tree becomes host ops when the kernel can write the root in a layout
 * that makes every output in it dense row-major (row-major, or, when nobody
 * else sees the root, e.g. permuted for a trailing permute).  Otherwise the
 * root is written row-major and each branch is judged alone; a branch that
 * fails keeps its first op in the kernel, whose result is the next root.
 *
 * The pass recomputes every decision from scratch (it clears host flags
 * first), so running it twice gives the same IR. */
#include <string.h>

#include "fuser/bookend.h"
#include "fuser/strbuf.h"
#include "fuser/view_layout.h"

#define PASS_NAME "strip-bookend-views"

enum { MSG_NONE, MSG_HOST, MSG_STAYS };

typedef struct bookend {
  fu_fusion *f;
  fu_allocator alloc;
  fu_layout_analysis la;
  uint32_t n_ops;
  bool *in_c;      /* output-end candidate */
  bool *stays;     /* candidate kept in the kernel */
  bool *handled;   /* candidate decided */
  bool *out_end;   /* made host at the output end */
  uint8_t *msg_kind;
  size_t *msg_off; /* into msgs */
  fu_strbuf msgs;
  bool debug;
} bookend;

static void ref(fu_strbuf *sb, const fu_value *v) {
  if (v->name)
    fu_strbuf_printf(sb, "%%%s", v->name);
  else
    fu_strbuf_printf(sb, "%%%u", (unsigned)v->id);
}

/* Record the debug message of op (the last one recorded wins). */
static void msg(bookend *b, const fu_op *op, int kind, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void msg(bookend *b, const fu_op *op, int kind, const char *fmt, ...) {
  if (!b->debug || op->id >= b->n_ops) return;
  b->msg_kind[op->id] = (uint8_t)kind;
  b->msg_off[op->id] = b->msgs.len;
  va_list ap;
  va_start(ap, fmt);
  fu_strbuf_vprintf(&b->msgs, fmt, ap);
  va_end(ap);
  fu_strbuf_putc(&b->msgs, '\0');
}

static bool is_candidate(const fu_op *op) {
  return fu_op_has(op->kind, FU_OF_VIEW) && op->n_operands >= 1 && op->n_results == 1 &&
         op->operands[0]->type.rank >= 0 && op->results[0]->type.rank >= 0;
}

/* The value's memory comes from outside every kernel: an input, or a host
 * alias of one. */
static bool from_host(const fu_value *v) { return v->def && (v->def->kind == FU_OP_INPUT || v->def->host); }

static bool member(const fu_op *op, void *user) {
  const bookend *b = user;
  return op->id < b->n_ops && b->in_c[op->id] && !b->stays[op->id];
}

/* "contiguous input %T0", "input %T0 with strides [..]", "%T1", or for a
 * value a kernel writes "%T9, which the kernel writes row-major". */
static void describe(bookend *b, fu_strbuf *sb, const fu_value *x, const fu_view_layout *l) {
  fu_strbuf_clear(sb);
  if (x->def && x->def->kind == FU_OP_INPUT) {
    bool dense = fu_layout_is_row_major(&x->type, l);
    fu_strbuf_puts(sb, dense ? "contiguous input " : "input ");
    ref(sb, x);
    if (!dense) {
      fu_strbuf_puts(sb, " with strides ");
      fu_layout_print(sb, l);
    }
  } else if (x->def && x->def->host) {
    ref(sb, x);
  } else {
    ref(sb, x);
    if (fu_layout_is_row_major(&x->type, l)) {
      fu_strbuf_puts(sb, ", which the kernel writes row-major");
    } else {
      fu_strbuf_puts(sb, ", which the kernel writes with strides ");
      fu_layout_print(sb, l);
    }
  }
  (void)b;
}

/* ---- input end ------------------------------------------------------------ */

static fu_status input_end(bookend *b) {
  fu_strbuf why, desc, note;
  fu_strbuf_init(&why, b->alloc);
  fu_strbuf_init(&desc, b->alloc);
  fu_strbuf_init(&note, b->alloc);
  fu_status st = FU_OK;
  fu_view_layout *in = fu_mem_alloc(&b->alloc, 2 * sizeof *in);
  if (!in) st = FU_ERR_NOMEM;
  for (fu_op *op = b->f->body.first; op && st == FU_OK; op = op->next) {
    if (!is_candidate(op) || !from_host(op->operands[0])) continue;
    const fu_value *x = op->operands[0];
    fu_strbuf_clear(&desc);
    ref(&desc, x);
    if (op->kind == FU_OP_SET) {
      msg(b, op, MSG_STAYS, "set is a copy, not a view: reading %s, it is the kernel's work",
          desc.data ? desc.data : "");
      continue;
    }
    fu_strbuf_clear(&why);
    st = fu_layout_analysis_value(&b->la, x, &in[0], &why);
    if (st == FU_ERR_UNSUPPORTED) {
      st = FU_OK;
      msg(b, op, MSG_STAYS, "the layout of %s is unknown (%s)", desc.data ? desc.data : "",
          why.data ? why.data : "");
      continue;
    }
    if (st != FU_OK) break;
    describe(b, &desc, x, &in[0]);
    fu_strbuf_clear(&note);
    if (fu_layout_apply_view(op, &in[0], &in[1], desc.data ? desc.data : "", &note)) {
      op->host = true;
      msg(b, op, MSG_HOST, "%s", note.data ? note.data : "");
    } else {
      msg(b, op, MSG_STAYS, "%s", note.data ? note.data : "");
    }
  }
  fu_mem_free(&b->alloc, in, 2 * sizeof *in);
  fu_strbuf_free(&why);
  fu_strbuf_free(&desc);
  fu_strbuf_free(&note);
  return st;
}

/* ---- output end ----------------------------------------------------------- */

/* Candidates: view ops not yet host whose result is read by something, and
 * only by outputs and other candidates.  Users come after their operands'
 * definitions, so one reverse walk settles it. */
static void find_candidates(bookend *b) {
  const fu_use_map *um = &b->la.uses;
  for (fu_op *op = b->f->body.last; op; op = op->prev) {
    if (!is_candidate(op) || op->host) continue;
    const fu_value *r = op->results[0];
    if (r->id >= um->n_values || fu_use_count(um, r) == 0) continue;
    const fu_use *u = fu_uses_of(um, r);
    bool ok = true;
    for (uint32_t i = 0; i < fu_use_count(um, r) && ok; i++)
      ok = u[i].user->kind == FU_OP_OUTPUT || (u[i].user->id < b->n_ops && b->in_c[u[i].user->id]);
    b->in_c[op->id] = ok;
  }
}

/* Mark op and every member op reading its result (transitively) host. */
static fu_status mark_tree(bookend *b, fu_op *op) {
  size_t cap = 16, n = 0;
  fu_op **stack = fu_mem_alloc(&b->alloc, cap * sizeof *stack);
  if (!stack) return FU_ERR_NOMEM;
  const fu_use_map *um = &b->la.uses;
  stack[n++] = op;
  while (n > 0) {
    fu_op *o = stack[--n];
    o->host = true;
    b->handled[o->id] = true;
    b->out_end[o->id] = true;
    const fu_value *r = o->results[0];
    const fu_use *u = fu_uses_of(um, r);
    for (uint32_t i = 0; i < fu_use_count(um, r); i++) {
      if (!member(u[i].user, b) || u[i].user->host) continue;
      if (n == cap) {
        fu_op **g = fu_mem_realloc(&b->alloc, stack, cap * sizeof *g, 2 * cap * sizeof *g);
        if (!g) {
          fu_mem_free(&b->alloc, stack, cap * sizeof *stack);
          return FU_ERR_NOMEM;
        }
        stack = g;
        cap *= 2;
      }
      stack[n++] = u[i].user;
    }
  }
  fu_mem_free(&b->alloc, stack, cap * sizeof *stack);
  return FU_OK;
}

/* Why root p must be written row-major, for the message of a branch that
 * stays. */
static void pinned_reason(bookend *b, fu_strbuf *sb, const fu_value *p, const fu_op *self) {
  const fu_use_map *um = &b->la.uses;
  ref(sb, p);
  if (fu_layout_analysis_is_output(&b->la, p)) {
    fu_strbuf_puts(sb, " is a fusion output, so the kernel writes it dense row-major");
    return;
  }
  const fu_use *u = fu_uses_of(um, p);
  for (uint32_t i = 0; i < fu_use_count(um, p); i++) {
    const fu_op *o = u[i].user;
    if (o == self || o->kind == FU_OP_OUTPUT || member(o, b)) continue;
    fu_strbuf_printf(sb, " is also read by '%s', so the kernel writes it dense row-major",
                     fu_op_info_of(o->kind)->name);
    return;
  }
  fu_strbuf_puts(sb, " has no layout that makes every output of its views dense, so the kernel writes it "
                     "row-major");
}

/* Decide the trees hanging off root value p, and the roots below any
 * branch that stays (iteratively: a worklist of roots). */
static fu_status process_root(bookend *b, const fu_value *root) {
  fu_status st = FU_OK;
  size_t cap = 8, n = 0;
  const fu_value **work = fu_mem_alloc(&b->alloc, cap * sizeof *work);
  fu_view_layout *l = fu_mem_alloc(&b->alloc, sizeof *l);
  fu_strbuf why, pin;
  fu_strbuf_init(&why, b->alloc);
  fu_strbuf_init(&pin, b->alloc);
  if (!work || !l) {
    st = FU_ERR_NOMEM;
    goto done;
  }
  work[n++] = root;
  const fu_use_map *um = &b->la.uses;
  while (n > 0 && st == FU_OK) {
    const fu_value *p = work[--n];
    if (p->id >= um->n_values) continue;
    fu_strbuf_clear(&why);
    bool whole = fu_layout_analysis_choose_root(&b->la, p, member, b, l, NULL, &st);
    if (st != FU_OK) break;
    const fu_use *u = fu_uses_of(um, p);
    bool excl = !fu_layout_analysis_is_output(&b->la, p) && fu_use_count(um, p) == 1;
    for (uint32_t i = 0; i < fu_use_count(um, p) && st == FU_OK; i++) {
      fu_op *op = u[i].user;
      if (op->kind == FU_OP_OUTPUT || !member(op, b) || op->host) continue;
      fu_strbuf_clear(&why);
      if (whole || fu_layout_analysis_tree_ok(&b->la, op, l, excl, member, b, &why, &st)) {
        st = mark_tree(b, op);
        continue;
      }
      if (st != FU_OK) break;
      b->stays[op->id] = true;
      b->handled[op->id] = true;
      fu_strbuf_clear(&pin);
      pinned_reason(b, &pin, p, op);
      msg(b, op, MSG_STAYS, "%s, and %s", pin.data ? pin.data : "", why.data ? why.data : "");
      if (n == cap) {
        const fu_value **g = fu_mem_realloc(&b->alloc, work, cap * sizeof *g, 2 * cap * sizeof *g);
        if (!g) {
          st = FU_ERR_NOMEM;
          break;
        }
        work = g;
        cap *= 2;
      }
      work[n++] = op->results[0];
    }
  }
done:
  fu_mem_free(&b->alloc, work, cap * sizeof *work);
  fu_mem_free(&b->alloc, l, sizeof *l);
  fu_strbuf_free(&why);
  fu_strbuf_free(&pin);
  return st;
}

static fu_status output_end(bookend *b) {
  find_candidates(b);
  fu_status st = FU_OK;
  for (fu_op *op = b->f->body.first; op && st == FU_OK; op = op->next) {
    if (!b->in_c[op->id] || b->handled[op->id]) continue;
    const fu_value *x = op->operands[0];
    if (x->def && x->def->id < b->n_ops && b->in_c[x->def->id]) continue; /* in an earlier tree */
    if (!x->def || from_host(x)) {
      /* A copy out of host memory (a set, or a view the input end refused):
       * it is the kernel's work; the views after it hang off its result. */
      b->stays[op->id] = true;
      b->handled[op->id] = true;
      st = process_root(b, op->results[0]);
    } else {
      st = process_root(b, x);
    }
  }
  return st;
}

/* Messages for host ops made at the output end, from the final layouts
 * (which also checks that the analysis agrees with what was marked). */
static fu_status explain_output_end(bookend *b) {
  fu_layout_analysis_forget(&b->la);
  fu_strbuf desc, note, why;
  fu_strbuf_init(&desc, b->alloc);
  fu_strbuf_init(&note, b->alloc);
  fu_strbuf_init(&why, b->alloc);
  fu_status st = FU_OK;
  fu_view_layout *l = fu_mem_alloc(&b->alloc, 2 * sizeof *l);
  if (!l) st = FU_ERR_NOMEM;
  for (fu_op *op = b->f->body.first; op && st == FU_OK; op = op->next) {
    if (!b->out_end[op->id]) continue;
    const fu_value *x = op->operands[0];
    fu_strbuf_clear(&why);
    st = fu_layout_analysis_value(&b->la, x, &l[0], &why);
    if (st == FU_OK) {
      describe(b, &desc, x, &l[0]);
      fu_strbuf_clear(&note);
      if (fu_layout_apply_view(op, &l[0], &l[1], desc.data ? desc.data : "", &note))
        msg(b, op, MSG_HOST, "%s", note.data ? note.data : "");
      else
        st = FU_ERR_UNSUPPORTED;
    }
    if (st == FU_ERR_UNSUPPORTED) {
      /* Cannot happen when the tree walk and the analysis agree; stay safe. */
      op->host = false;
      fu_layout_analysis_forget(&b->la);
      msg(b, op, MSG_STAYS, "internal: its layout cannot be derived (%s%s)", why.data ? why.data : "",
          note.data ? note.data : "");
      st = FU_OK;
    }
  }
  fu_mem_free(&b->alloc, l, 2 * sizeof *l);
  fu_strbuf_free(&desc);
  fu_strbuf_free(&note);
  fu_strbuf_free(&why);
  return st;
}

/* ---- debug output --------------------------------------------------------- */

static void explain_inner(bookend *b, const fu_op *op) {
  const fu_value *x = op->operands[0], *r = op->results[0];
  const fu_use_map *um = &b->la.uses;
  const char *reader = NULL;
  if (r->id < um->n_values) {
    const fu_use *u = fu_uses_of(um, r);
    for (uint32_t i = 0; i < fu_use_count(um, r) && !reader; i++)
      if (u[i].user->kind != FU_OP_OUTPUT && !u[i].user->host) reader = fu_op_info_of(u[i].user->kind)->name;
  }
  fu_strbuf s;
  fu_strbuf_init(&s, b->alloc);
  fu_strbuf_puts(&s, "between kernel ops (");
  ref(&s, x);
  fu_strbuf_printf(&s, " is computed by '%s'", x->def ? fu_op_info_of(x->def->kind)->name : "?");
  if (reader) {
    fu_strbuf_puts(&s, ", ");
    ref(&s, r);
    fu_strbuf_printf(&s, " is read by '%s'", reader);
  }
  fu_strbuf_putc(&s, ')');
  msg(b, op, MSG_STAYS, "%s", s.data ? s.data : "");
  fu_strbuf_free(&s);
}

static void print_debug(bookend *b, FILE *out) {
  fu_strbuf line;
  fu_strbuf_init(&line, b->alloc);
  fprintf(out, PASS_NAME ": fusion @%s\n", b->f->name ? b->f->name : "");
  for (fu_op *op = b->f->body.first; op; op = op->next) {
    if (!is_candidate(op)) continue;
    if (b->msg_kind[op->id] == MSG_NONE) explain_inner(b, op);
    fu_strbuf_clear(&line);
    fu_strbuf_puts(&line, "  ");
    ref(&line, op->results[0]);
    fu_strbuf_printf(&line, " = %s ", fu_op_info_of(op->kind)->name);
    for (uint32_t i = 0; i < op->n_operands; i++) {
      if (i) fu_strbuf_puts(&line, ", ");
      ref(&line, op->operands[i]);
    }
    const char *text = b->msgs.data ? b->msgs.data + b->msg_off[op->id] : "";
    if (b->msg_kind[op->id] == MSG_HOST)
      fu_strbuf_printf(&line, ": moved to host (%s)\n", text);
    else
      fu_strbuf_printf(&line, " stays: %s\n", text);
    if (line.data) fputs(line.data, out);
  }
  fu_strbuf_free(&line);
}

/* ---- the pass ------------------------------------------------------------- */

static void bookend_free(bookend *b) {
  size_t n = b->n_ops ? b->n_ops : 1;
  fu_mem_free(&b->alloc, b->in_c, n * sizeof *b->in_c);
  fu_mem_free(&b->alloc, b->stays, n * sizeof *b->stays);
  fu_mem_free(&b->alloc, b->handled, n * sizeof *b->handled);
  fu_mem_free(&b->alloc, b->out_end, n * sizeof *b->out_end);
  fu_mem_free(&b->alloc, b->msg_kind, n * sizeof *b->msg_kind);
  fu_mem_free(&b->alloc, b->msg_off, n * sizeof *b->msg_off);
  fu_strbuf_free(&b->msgs);
  fu_layout_analysis_free(&b->la);
}

static fu_status run_fusion(fu_fusion *f, fu_pass_context *ctx, bool debug) {
  for (fu_op *op = f->body.first; op; op = op->next)
    if (op->kind == FU_OP_SEGMENT) {
      if (debug)
        fprintf(ctx->debug_out, PASS_NAME ": fusion @%s is already segmented; left unchanged\n",
                f->name ? f->name : "");
      return FU_OK;
    }
  for (fu_op *op = f->body.first; op; op = op->next) op->host = false;
  bookend b;
  memset(&b, 0, sizeof b);
  b.f = f;
  b.alloc = f->module->alloc;
  b.debug = debug;
  b.n_ops = f->next_op_id;
  fu_strbuf_init(&b.msgs, b.alloc);
  size_t n = b.n_ops ? b.n_ops : 1;
  fu_status st = fu_layout_analysis_init(&b.la, f);
  if (st != FU_OK) return st;
  b.in_c = fu_mem_calloc(&b.alloc, n, sizeof *b.in_c);
  b.stays = fu_mem_calloc(&b.alloc, n, sizeof *b.stays);
  b.handled = fu_mem_calloc(&b.alloc, n, sizeof *b.handled);
  b.out_end = fu_mem_calloc(&b.alloc, n, sizeof *b.out_end);
  b.msg_kind = fu_mem_calloc(&b.alloc, n, sizeof *b.msg_kind);
  b.msg_off = fu_mem_calloc(&b.alloc, n, sizeof *b.msg_off);
  if (!b.in_c || !b.stays || !b.handled || !b.out_end || !b.msg_kind || !b.msg_off) st = FU_ERR_NOMEM;
  if (st == FU_OK) st = input_end(&b);
  if (st == FU_OK) st = output_end(&b);
  if (st == FU_OK) st = explain_output_end(&b);
  if (st == FU_OK && debug) {
    if (b.msgs.failed)
      st = FU_ERR_NOMEM;
    else
      print_debug(&b, ctx->debug_out);
  }
  if (st != FU_OK)
    for (fu_op *op = f->body.first; op; op = op->next) op->host = false;
  bookend_free(&b);
  return st;
}

fu_status fu_strip_bookend_views(fu_module *m, fu_pass_context *ctx) {
  bool debug = ctx && ctx->debug_out && fu_pass_debug_enabled(ctx, PASS_NAME);
  if (!fu_pass_feature_on(ctx, FU_FEATURE_BOOKEND)) { /* --disable=bookend: the views stay in the kernels */
    if (debug) fprintf(ctx->debug_out, PASS_NAME ": turned off (--disable=bookend): every view stays where it is\n");
    return FU_OK;
  }
  for (fu_fusion *f = m->first; f; f = f->next) {
    fu_status st = run_fusion(f, ctx, debug);
    if (st != FU_OK) {
      if (ctx && ctx->diag)
        fu_error(ctx->diag, f->loc, PASS_NAME ": %s while processing fusion '@%s'", fu_status_name(st),
                 f->name ? f->name : "");
      return st;
    }
  }
  return FU_OK;
}

const fu_pass_def fu_pass_strip_bookend_views = {
    PASS_NAME,
    "move metadata-only views at the fusion's ends out of the kernels, as host aliases",
    NULL,
    fu_strip_bookend_views,
};
