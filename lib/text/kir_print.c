/* fuser: the kernel IR printer (grammar in docs/ir.md, "Kernel IR"). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuser/kir_text.h"

/* ---- unique value names --------------------------------------------------
 *
 * `lower` may leave values unnamed or reuse a name; the text needs one name
 * per value, so the printer assigns them up front: parameters, then the
 * declared mutables and arrays (by id), then locals in program order.  A
 * parsed kernel already has unique names and prints them unchanged. */

typedef struct name_entry {
  const fu_kval *key;
  const char *name;
} name_entry;

typedef struct namer {
  fu_arena *arena;
  fu_allocator alloc;
  name_entry *map; /* pointer -> printed name */
  size_t map_cap, map_n;
  const char **set; /* names taken */
  size_t set_cap, set_n;
  const fu_kval **decls;
  size_t n_decls, decls_cap;
  bool failed;
} namer;

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static uint64_t hash_ptr(const void *p) {
  uint64_t h = (uint64_t)(uintptr_t)p;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

static bool set_has(const namer *n, const char *s) {
  if (!n->set_cap) return false;
  for (size_t j = hash_str(s) & (n->set_cap - 1); n->set[j]; j = (j + 1) & (n->set_cap - 1))
    if (strcmp(n->set[j], s) == 0) return true;
  return false;
}

static void set_insert_slot(const char **slots, size_t cap, const char *s) {
  size_t j = hash_str(s) & (cap - 1);
  while (slots[j]) j = (j + 1) & (cap - 1);
  slots[j] = s;
}

static bool set_add(namer *n, const char *s) {
  if ((n->set_n + 1) * 2 > n->set_cap) {
    size_t cap = n->set_cap ? n->set_cap * 2 : 64;
    const char **slots = fu_mem_calloc(&n->alloc, cap, sizeof *slots);
    if (!slots) return false;
    for (size_t i = 0; i < n->set_cap; i++)
      if (n->set[i]) set_insert_slot(slots, cap, n->set[i]);
    fu_mem_free(&n->alloc, n->set, n->set_cap * sizeof *n->set);
    n->set = slots;
    n->set_cap = cap;
  }
  set_insert_slot(n->set, n->set_cap, s);
  n->set_n++;
  return true;
}

static const char *map_get(const namer *n, const fu_kval *v) {
  if (!n->map_cap) return NULL;
  for (size_t j = hash_ptr(v) & (n->map_cap - 1); n->map[j].key; j = (j + 1) & (n->map_cap - 1))
    if (n->map[j].key == v) return n->map[j].name;
  return NULL;
}

static bool map_put(namer *n, const fu_kval *v, const char *name) {
  if ((n->map_n + 1) * 2 > n->map_cap) {
    size_t cap = n->map_cap ? n->map_cap * 2 : 64;
    name_entry *slots = fu_mem_calloc(&n->alloc, cap, sizeof *slots);
    if (!slots) return false;
    for (size_t i = 0; i < n->map_cap; i++) {
      if (!n->map[i].key) continue;
      size_t j = hash_ptr(n->map[i].key) & (cap - 1);
      while (slots[j].key) j = (j + 1) & (cap - 1);
      slots[j] = n->map[i];
    }
    fu_mem_free(&n->alloc, n->map, n->map_cap * sizeof *n->map);
    n->map = slots;
    n->map_cap = cap;
  }
  size_t j = hash_ptr(v) & (n->map_cap - 1);
  while (n->map[j].key) j = (j + 1) & (n->map_cap - 1);
  n->map[j].key = v;
  n->map[j].name = name;
  n->map_n++;
  return true;
}

static bool valid_name(const char *s) {
  if (!s || !*s) return false;
  for (; *s; s++) {
    char c = *s;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
          c == '$'))
      return false;
  }
  return true;
}

/* Gives `v` its printed name, the first free one of: its own name, `v<id>`
 * when it has none, then `<name>.<id>`, `<name>.<id>.<k>`. */
static void name_value(namer *n, const fu_kval *v) {
  if (!v || map_get(n, v)) return;
  char buf[160];
  const char *base = valid_name(v->name) ? v->name : NULL;
  if (base)
    snprintf(buf, sizeof buf, "%.120s", base);
  else
    snprintf(buf, sizeof buf, "v%u", v->id);
  for (unsigned k = 0; set_has(n, buf); k++) {
    if (k == 0)
      snprintf(buf, sizeof buf, "%.120s.%u", base ? base : "v", v->id);
    else
      snprintf(buf, sizeof buf, "%.120s.%u.%u", base ? base : "v", v->id, k);
  }
  char *s = fu_arena_strdup(n->arena, buf);
  if (!s || !set_add(n, s) || !map_put(n, v, s)) n->failed = true;
}

static void note_decl(namer *n, const fu_kval *v) {
  if (!v || (v->kind != FU_KV_MUTABLE && v->kind != FU_KV_ARRAY)) return;
  for (size_t i = 0; i < n->n_decls; i++)
    if (n->decls[i] == v) return;
  if (n->n_decls == n->decls_cap) {
    size_t cap = n->decls_cap ? n->decls_cap * 2 : 16;
    const fu_kval **d = fu_mem_realloc(&n->alloc, n->decls, n->decls_cap * sizeof *d, cap * sizeof *d);
    if (!d) {
      n->failed = true;
      return;
    }
    n->decls = d;
    n->decls_cap = cap;
  }
  n->decls[n->n_decls++] = v;
}

static void collect_decls(namer *n, const fu_kblock *b) {
  for (const fu_kinst *in = b->first; in; in = in->next) {
    for (uint32_t i = 0; i < in->n_args; i++) note_decl(n, in->args[i]);
    if (in->kind == FU_KI_FOR) collect_decls(n, &in->u.loop.body);
    if (in->kind == FU_KI_IF) {
      collect_decls(n, &in->u.branch.then_body);
      collect_decls(n, &in->u.branch.else_body);
    }
  }
}

static void name_locals(namer *n, const fu_kblock *b) {
  for (const fu_kinst *in = b->first; in; in = in->next) {
    for (uint32_t i = 0; i < in->n_results; i++) name_value(n, in->results[i]);
    if (in->kind == FU_KI_FOR) name_locals(n, &in->u.loop.body);
    if (in->kind == FU_KI_IF) {
      name_locals(n, &in->u.branch.then_body);
      name_locals(n, &in->u.branch.else_body);
    }
  }
}

static int cmp_decl(const void *a, const void *b) {
  const fu_kval *x = *(const fu_kval *const *)a, *y = *(const fu_kval *const *)b;
  return x->id < y->id ? -1 : x->id > y->id;
}

/* ---- printing ---------------------------------------------------------------- */

typedef struct kprinter {
  fu_strbuf *out;
  namer names;
} kprinter;

static void put_ref(kprinter *p, const fu_kval *v) {
  if (!v) {
    fu_strbuf_puts(p->out, "%<null>");
    return;
  }
  const char *s = map_get(&p->names, v);
  if (!s) {
    name_value(&p->names, v); /* a value used but never defined: still printable */
    s = map_get(&p->names, v);
  }
  fu_strbuf_putc(p->out, '%');
  fu_strbuf_puts(p->out, s ? s : "<oom>");
}

static void indent_to(fu_strbuf *out, int n) {
  for (int i = 0; i < n; i++) fu_strbuf_putc(out, ' ');
}

static const char *dtname(fu_dtype t) { return t > FU_DT_NONE && t < FU_DT_COUNT ? fu_dtype_name(t) : "none"; }

static void print_type_of_value(fu_strbuf *out, const fu_value *v) {
  fu_strbuf_puts(out, dtname(v->type.dtype));
  if (v->type.rank < 0) return;
  fu_strbuf_putc(out, '[');
  for (int32_t i = 0; i < v->type.rank; i++) {
    if (i) fu_strbuf_puts(out, ", ");
    if (!v->type.dims)
      fu_strbuf_putc(out, '?');
    else if (v->type.dims[i].sym)
      fu_strbuf_puts(out, v->type.dims[i].sym);
    else
      fu_strbuf_printf(out, "%lld", (long long)v->type.dims[i].value);
  }
  fu_strbuf_putc(out, ']');
}

static void print_param(kprinter *p, const fu_kval *v) {
  fu_strbuf *out = p->out;
  put_ref(p, v);
  if (!v) return;
  fu_strbuf_puts(out, ": ");
  if (v->kind == FU_KV_TENSOR_PARAM && v->ws_size) {
    fu_strbuf_printf(out, "workspace %s[", dtname(v->dtype));
    fu_lexpr_print(out, v->ws_size);
    fu_strbuf_putc(out, ']');
    if (v->ws_zeroed) fu_strbuf_puts(out, " zeroed");
    if (v->ws_error) fu_strbuf_puts(out, " error");
    if (v->noalias) fu_strbuf_puts(out, " noalias");
    fu_strbuf_printf(out, " align=%u", v->align);
    return;
  }
  if (v->kind == FU_KV_TENSOR_PARAM) {
    fu_strbuf_puts(out, "global ");
    if (v->tensor && fu_type_is_tensor(&v->tensor->type) && v->tensor->type.dtype == v->dtype)
      print_type_of_value(out, v->tensor);
    else
      fu_strbuf_puts(out, dtname(v->dtype));
    if (v->readonly) fu_strbuf_puts(out, " readonly");
    if (v->stream) fu_strbuf_puts(out, " stream");
    if (v->noalias) fu_strbuf_puts(out, " noalias");
    fu_strbuf_printf(out, " align=%u", v->align);
    if (v->alias_of) {
      fu_strbuf_puts(out, " alias=");
      put_ref(p, v->alias_of);
    }
    const char *pn = map_get(&p->names, v);
    if (v->tensor && v->tensor->name && (!pn || strcmp(v->tensor->name, pn) != 0))
      fu_strbuf_printf(out, " bind=%%%s", v->tensor->name);
    return;
  }
  fu_strbuf_puts(out, dtname(v->dtype));
  switch (v->role) {
  case FU_KP_NONE: break;
  case FU_KP_EXTENT: fu_strbuf_printf(out, " extent=%s", v->sym ? v->sym : "<null>"); break;
  case FU_KP_STRIDE:
    fu_strbuf_puts(out, " stride=");
    put_ref(p, v->stride_of);
    fu_strbuf_printf(out, " dim=%d", (int)v->dim);
    break;
  case FU_KP_SCALAR_INPUT:
    fu_strbuf_printf(out, " input=%%%s", v->scalar && v->scalar->name ? v->scalar->name : "<null>");
    break;
  }
}

static void print_results(kprinter *p, const fu_kinst *in) {
  for (uint32_t i = 0; i < in->n_results; i++) {
    if (i) fu_strbuf_puts(p->out, ", ");
    put_ref(p, in->results[i]);
  }
  fu_strbuf_puts(p->out, " = ");
}

static void print_args(kprinter *p, const fu_kinst *in, uint32_t from) {
  for (uint32_t i = from; i < in->n_args; i++) {
    if (i > from) fu_strbuf_puts(p->out, ", ");
    put_ref(p, in->args[i]);
  }
}

static void print_result_type(kprinter *p, const fu_kinst *in) {
  fu_strbuf_printf(p->out, " : %s", in->n_results && in->results[0] ? dtname(in->results[0]->dtype) : "none");
}

/* `%r = OP %x, N : dtype` (shfl.xor's lane mask, misalign's modulus). */
static void print_value_int(kprinter *p, const fu_kinst *in, const char *op, uint32_t n) {
  print_results(p, in);
  fu_strbuf_printf(p->out, "%s ", op);
  print_args(p, in, 0);
  fu_strbuf_printf(p->out, ", %u", n);
  print_result_type(p, in);
}

static void print_mem_op(kprinter *p, const char *op, const fu_kinst *in) {
  fu_strbuf_puts(p->out, op);
  if (in->u.mem.width != 1) fu_strbuf_printf(p->out, ".v%u", in->u.mem.width);
  fu_strbuf_putc(p->out, ' ');
  put_ref(p, in->n_args > 0 ? in->args[0] : NULL);
  fu_strbuf_putc(p->out, '[');
  put_ref(p, in->n_args > 1 ? in->args[1] : NULL);
  fu_strbuf_putc(p->out, ']');
  if (in->kind == FU_KI_LOAD && in->n_args == 3) {
    fu_strbuf_puts(p->out, " cta ");
    put_ref(p, in->args[2]);
  }
  if (in->u.mem.predicated_by_parent) fu_strbuf_puts(p->out, " predicated");
}

static void print_block(kprinter *p, const fu_kblock *b, int indent);

static void print_const(kprinter *p, const fu_kinst *in) {
  fu_dtype t = in->n_results && in->results[0] ? in->results[0]->dtype : FU_DT_NONE;
  fu_strbuf_puts(p->out, "const ");
  if (fu_dtype_is_float(t))
    fu_strbuf_put_double(p->out, in->u.constant.f);
  else if (fu_dtype_is_bool(t))
    fu_strbuf_puts(p->out, in->u.constant.b ? "true" : "false");
  else
    fu_strbuf_printf(p->out, "%lld", (long long)in->u.constant.i);
}

static void print_inst(kprinter *p, const fu_kinst *in, int indent) {
  fu_strbuf *out = p->out;
  indent_to(out, indent);
  switch (in->kind) {
  case FU_KI_CONST:
    print_results(p, in);
    print_const(p, in);
    print_result_type(p, in);
    break;
  case FU_KI_MATH:
    print_results(p, in);
    fu_strbuf_puts(out, (unsigned)in->u.math < FU_OP_COUNT ? fu_op_info_of(in->u.math)->name : "?");
    fu_strbuf_putc(out, ' ');
    print_args(p, in, 0);
    print_result_type(p, in);
    break;
  case FU_KI_SPECIAL:
    print_results(p, in);
    fu_strbuf_printf(out, "special %s", fu_special_name(in->u.special));
    print_result_type(p, in);
    break;
  case FU_KI_LOAD:
    print_results(p, in);
    print_mem_op(p, "load", in);
    print_result_type(p, in);
    break;
  case FU_KI_STORE:
    print_mem_op(p, "store", in);
    fu_strbuf_puts(out, ", ");
    print_args(p, in, 2);
    break;
  case FU_KI_READ:
  case FU_KI_OPAQUE:
    print_results(p, in);
    fu_strbuf_puts(out, in->kind == FU_KI_READ ? "read " : "opaque ");
    print_args(p, in, 0);
    print_result_type(p, in);
    break;
  case FU_KI_ASSIGN:
    fu_strbuf_puts(out, "assign ");
    print_args(p, in, 0);
    break;
  case FU_KI_SHFL_XOR: print_value_int(p, in, "shfl.xor", in->u.shfl_mask); break;
  case FU_KI_SYNC: fu_strbuf_puts(out, in->u.cluster_sync ? "sync cluster" : "sync"); break;
  case FU_KI_MISALIGN: print_value_int(p, in, "misalign", in->u.misalign); break;
  case FU_KI_FENCE: fu_strbuf_puts(out, in->u.fence == FU_FENCE_GPU ? "fence gpu" : "fence block"); break;
  case FU_KI_ATOM_ADD:
    print_results(p, in);
    print_mem_op(p, "atom.add", in);
    fu_strbuf_puts(out, ", ");
    put_ref(p, in->n_args > 2 ? in->args[2] : NULL);
    print_result_type(p, in);
    break;
  case FU_KI_FOR:
    fu_strbuf_puts(out, "for ");
    put_ref(p, in->n_results ? in->results[0] : NULL);
    fu_strbuf_puts(out, " = ");
    put_ref(p, in->n_args > 0 ? in->args[0] : NULL);
    fu_strbuf_puts(out, " to ");
    put_ref(p, in->n_args > 1 ? in->args[1] : NULL);
    fu_strbuf_puts(out, " step ");
    put_ref(p, in->n_args > 2 ? in->args[2] : NULL);
    if (in->u.loop.kind == FU_LOOP_UNROLL) fu_strbuf_puts(out, " unroll");
    if (in->u.loop.kind == FU_LOOP_ROLLED) fu_strbuf_puts(out, " rolled");
    fu_strbuf_puts(out, " {\n");
    print_block(p, &in->u.loop.body, indent + 2);
    indent_to(out, indent);
    fu_strbuf_putc(out, '}');
    break;
  case FU_KI_IF:
    fu_strbuf_puts(out, "if ");
    put_ref(p, in->n_args ? in->args[0] : NULL);
    fu_strbuf_puts(out, " {\n");
    print_block(p, &in->u.branch.then_body, indent + 2);
    indent_to(out, indent);
    fu_strbuf_putc(out, '}');
    if (in->u.branch.else_body.first) {
      fu_strbuf_puts(out, " else {\n");
      print_block(p, &in->u.branch.else_body, indent + 2);
      indent_to(out, indent);
      fu_strbuf_putc(out, '}');
    }
    break;
  }
  fu_strbuf_putc(out, '\n');
}

static void print_block(kprinter *p, const fu_kblock *b, int indent) {
  for (const fu_kinst *in = b->first; in; in = in->next) print_inst(p, in, indent);
}

static void print_decl(kprinter *p, const fu_kval *v, int indent) {
  indent_to(p->out, indent);
  put_ref(p, v);
  if (v->kind == FU_KV_MUTABLE) {
    fu_strbuf_printf(p->out, " = mutable %s\n", dtname(v->dtype));
    return;
  }
  fu_strbuf_printf(p->out, " = array %s %s[%lld]", v->space == FU_MEM_SHARED ? "shared" : "local", dtname(v->dtype),
                   (long long)v->length);
  if (v->dynamic) fu_strbuf_printf(p->out, " dynamic=%u", v->offset);
  fu_strbuf_putc(p->out, '\n');
}

void fu_kernel_print_indented(fu_strbuf *out, const fu_kernel *k, int indent) {
  if (!k) {
    fu_strbuf_puts(out, "<null kernel>\n");
    return;
  }
  kprinter p;
  memset(&p, 0, sizeof p);
  p.out = out;
  p.names.alloc = out->alloc;
  p.names.arena = fu_arena_new(out->alloc);
  if (!p.names.arena) {
    out->failed = true;
    return;
  }
  namer *n = &p.names;
  for (uint32_t i = 0; i < k->n_params; i++) name_value(n, k->params[i]);
  collect_decls(n, &k->body);
  if (n->n_decls > 1) qsort(n->decls, n->n_decls, sizeof *n->decls, cmp_decl);
  for (size_t i = 0; i < n->n_decls; i++) name_value(n, n->decls[i]);
  name_locals(n, &k->body);

  indent_to(out, indent);
  fu_strbuf_printf(out, "kernel @%s (", k->name ? k->name : "<null>");
  for (uint32_t i = 0; i < k->n_params; i++) {
    if (i) fu_strbuf_puts(out, ", ");
    print_param(&p, k->params[i]);
  }
  fu_strbuf_puts(out, ")\n");
  indent_to(out, indent + 4);
  fu_strbuf_puts(out, "grid=[");
  for (int i = 0; i < 3; i++) {
    if (i) fu_strbuf_puts(out, ", ");
    fu_lexpr_print(out, k->grid[i]);
  }
  fu_strbuf_printf(out, "] block=[%u, %u, %u] smem=%u ", k->block[0], k->block[1], k->block[2], k->smem_bytes);
  if (k->min_blocks) fu_strbuf_printf(out, "min_blocks=%u ", k->min_blocks);
  if (k->cluster > 1) fu_strbuf_printf(out, "cluster=%u ", k->cluster);
  fu_strbuf_printf(out, "index=%s {\n", dtname(k->index_dtype));
  for (size_t i = 0; i < n->n_decls; i++) print_decl(&p, n->decls[i], indent + 2);
  print_block(&p, &k->body, indent + 2);
  indent_to(out, indent);
  fu_strbuf_puts(out, "}\n");
  if (n->failed) out->failed = true;

  fu_mem_free(&n->alloc, n->map, n->map_cap * sizeof *n->map);
  fu_mem_free(&n->alloc, n->set, n->set_cap * sizeof *n->set);
  fu_mem_free(&n->alloc, n->decls, n->decls_cap * sizeof *n->decls);
  fu_arena_free(n->arena);
}

void fu_kernel_print(fu_strbuf *out, const fu_kernel *k) { fu_kernel_print_indented(out, k, 0); }
