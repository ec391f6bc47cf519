/* fuser: the nvFuser Python frontend.
 *
 * Imports nvFuser `FusionDefinition` repro scripts (as nvFuser, Thunder and
 * the seed issues print them) into the Fusion IR, and exports IR back to a
 * runnable nvFuser Python script.  No Python is involved: a small lexer and
 * parser read the subset of Python such scripts use (imports, `def
 * f(fd : FusionDefinition) -> None :` bodies of assignments and calls, an
 * `inputs = [...]` list, the `with FusionDefinition() as fd:` and
 * `fd.execute(inputs)` boilerplate).  Anything outside the subset is a
 * located error, never a crash.
 *
 * Layers, each usable on its own (the unit tests poke at every one):
 *   fu_py_tokenize  text -> tokens (NEWLINE / INDENT / DEDENT as Python)
 *   fu_py_parse     tokens -> a tiny AST of statements and expressions
 *   fu_py_import    AST -> fu_module (symbols unified, types inferred,
 *                   example data attached, module verified)
 *   fu_py_export    fu_module -> Python text */
#ifndef FUSER_FRONTEND_H
#define FUSER_FRONTEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fuser/alloc.h"
#include "fuser/diag.h"
#include "fuser/ir.h"
#include "fuser/status.h"
#include "fuser/strbuf.h"

/* ---- tokens ---------------------------------------------------------- */

typedef enum fu_py_tok_kind {
  FU_PY_TOK_EOF,
  FU_PY_TOK_NEWLINE, /* end of a logical line */
  FU_PY_TOK_INDENT,
  FU_PY_TOK_DEDENT,
  FU_PY_TOK_NAME,   /* identifiers and keywords */
  FU_PY_TOK_INT,    /* value.i */
  FU_PY_TOK_FLOAT,  /* value.f */
  FU_PY_TOK_STRING, /* text/len cover the prefix and quotes; the parser decodes */
  FU_PY_TOK_OP,     /* punctuation and operators: ( ) [ ] { } , : . ; = -> + - * / // % ** @ < > ... */
} fu_py_tok_kind;

typedef struct fu_py_token {
  fu_py_tok_kind kind;
  const char *text; /* into the source; empty for NEWLINE/INDENT/DEDENT/EOF */
  size_t len;
  fu_loc loc;
  union {
    int64_t i;
    double f;
  } value;
} fu_py_token;

typedef struct fu_py_tokens {
  fu_py_token *v;
  size_t n;
  size_t cap;
  fu_allocator alloc;
} fu_py_tokens;

/* Tokenize a whole buffer.  Comments and blank lines vanish, brackets join
 * lines, a backslash before a newline joins lines, and indentation becomes
 * INDENT/DEDENT tokens.  The stream always ends with NEWLINE (when the last
 * line has tokens), the pending DEDENTs and EOF.  Errors (a bad character,
 * an unterminated string, inconsistent dedent, an integer out of range) are
 * located; on error the token array is freed and FU_ERR_PARSE returned. */
fu_status fu_py_tokenize(const fu_source *src, fu_allocator alloc, fu_diag_engine *diag, fu_py_tokens *out);
void fu_py_tokens_free(fu_py_tokens *t);
/* True when `tok` is the NAME or OP whose text is `s`. */
bool fu_py_tok_is(const fu_py_token *tok, const char *s);

/* ---- syntax tree ----------------------------------------------------- */

typedef enum fu_py_expr_kind {
  FU_PY_E_NAME,
  FU_PY_E_INT,
  FU_PY_E_FLOAT,
  FU_PY_E_BOOL,
  FU_PY_E_NONE,
  FU_PY_E_STRING,
  FU_PY_E_ATTR, /* base.name */
  FU_PY_E_CALL,
  FU_PY_E_LIST,   /* [a, b] */
  FU_PY_E_TUPLE,  /* (a, b) or a bare a, b */
  FU_PY_E_UNARY,  /* -x, +x */
  FU_PY_E_BINARY, /* x op y for + - * / // % ** */
  FU_PY_E_SUBSCRIPT, /* base[index], one index and no slice */
} fu_py_expr_kind;

typedef struct fu_py_expr fu_py_expr;

typedef struct fu_py_kwarg {
  const char *name;
  fu_loc loc; /* of the name */
  fu_py_expr *value;
} fu_py_kwarg;

struct fu_py_expr {
  fu_py_expr_kind kind;
  fu_loc loc;
  union {
    const char *name; /* NAME */
    int64_t i;        /* INT */
    double f;         /* FLOAT */
    bool b;           /* BOOL */
    const char *str;  /* STRING, decoded, NUL-terminated */
    struct {
      fu_py_expr *base;
      const char *name;
    } attr;
    struct {
      fu_py_expr *callee;
      fu_py_expr **args;
      uint32_t n_args;
      fu_py_kwarg *kwargs;
      uint32_t n_kwargs;
    } call;
    struct {
      fu_py_expr **items;
      uint32_t n;
    } list; /* LIST and TUPLE */
    struct {
      char op; /* '-' or '+' */
      fu_py_expr *operand;
    } unary;
    struct {
      const char *op; /* "+", "-", "*", "/", "//", "%", "**" */
      fu_py_expr *lhs, *rhs;
    } binary;
    struct {
      fu_py_expr *base, *index;
    } subscript;
  } u;
};

typedef enum fu_py_stmt_kind {
  FU_PY_S_EXPR,   /* an expression statement (usually a call) */
  FU_PY_S_ASSIGN, /* a = expr, or a, b = expr */
  FU_PY_S_DEF,
  FU_PY_S_WITH,
  FU_PY_S_FOR,
  FU_PY_S_IMPORT, /* import ... / from ... import ... (contents dropped) */
  FU_PY_S_PASS,
} fu_py_stmt_kind;

typedef struct fu_py_stmt fu_py_stmt;

typedef struct fu_py_block {
  fu_py_stmt **v;
  uint32_t n;
} fu_py_block;

struct fu_py_stmt {
  fu_py_stmt_kind kind;
  fu_loc loc;
  union {
    fu_py_expr *expr; /* EXPR */
    struct {
      fu_py_expr **targets; /* NAME expressions */
      uint32_t n_targets;
      fu_py_expr *value;
    } assign;
    struct {
      const char *name;
      const char *param; /* the single parameter (fd) */
      fu_loc param_loc;
      fu_py_block body;
    } def;
    struct {
      fu_py_expr *context;
      const char *as_name; /* NULL without `as` */
      fu_py_block body;
    } with;
    struct {
      const char *target;
      fu_py_expr *iter;
      fu_py_block body;
    } for_;
  } u;
};

/* A parsed script.  Everything lives in `arena`. */
typedef struct fu_py_script {
  fu_py_block body;
  fu_arena *arena;
  const fu_source *src;
} fu_py_script;

/* Parse a script of the supported subset.  Unsupported constructs (`while`,
 * `if`, `class`, `lambda`, subscripts, comparisons, ...) are reported as
 * `unsupported Python construct '...'` at their first token. */
fu_status fu_py_parse(const fu_source *src, fu_allocator alloc, fu_diag_engine *diag, fu_py_script **out);
void fu_py_script_free(fu_py_script *s);

/* ---- name maps ------------------------------------------------------- */

/* String-keyed hash map (keys borrowed, not copied) used for the
 * importer's and exporter's name bindings. */
typedef struct fu_py_map {
  const char **keys;
  void **vals;
  size_t cap, count;
  fu_allocator alloc;
} fu_py_map;

void fu_py_map_init(fu_py_map *m, fu_allocator alloc);
void fu_py_map_free(fu_py_map *m);
void *fu_py_map_get(const fu_py_map *m, const char *key);     /* NULL when absent */
bool fu_py_map_set(fu_py_map *m, const char *key, void *val); /* false when out of memory */

/* ---- symbolic extents ------------------------------------------------ */

/* Union-find over the symbolic extents of one fusion being imported.  Each
 * -1 in a define_tensor shape gets a fresh symbol (temporarily named after
 * its tensor and dim, e.g. `T4.0`, which is what error messages show); ops
 * then unify extents that must be equal (pointwise operands, cat's other
 * dims, a view's original_shape), and a symbol unified with a constant
 * becomes that constant.  fu_py_symtab_finalize rewrites every type of the
 * fusion to the surviving symbols and names them i0, i1, ... in order of
 * first appearance. */
typedef struct fu_py_sym {
  uint32_t parent;
  bool bound; /* valid at roots: the symbol equals `value` */
  int64_t value;
  const char *name;     /* interned */
  int32_t origin_input; /* which input (in definition order) it came from, or -1 */
  int32_t origin_dim;
} fu_py_sym;

typedef struct fu_py_symtab {
  fu_module *m;
  fu_py_sym *v;
  uint32_t n, cap;
  /* interned name -> index into v: open addressing on the pointer */
  const char **slot_names;
  uint32_t *slot_index;
  uint32_t n_slots;
} fu_py_symtab;

void fu_py_symtab_init(fu_py_symtab *s, fu_module *m);
void fu_py_symtab_free(fu_py_symtab *s);
/* A fresh symbol; .sym is NULL on allocation failure. */
fu_extent fu_py_symtab_fresh(fu_py_symtab *s, const char *name, int32_t origin_input, int32_t origin_dim);
/* The representative of `e`: a constant, or the root symbol. */
fu_extent fu_py_symtab_canon(fu_py_symtab *s, fu_extent e);
/* The symtab entry of a (non-constant) extent, or NULL for symbols it does
 * not own. */
const fu_py_sym *fu_py_symtab_lookup(fu_py_symtab *s, fu_extent e);
/* Record that a and b are equal.  False (and no change) when they are two
 * different constants, or a symbol already bound to another constant. */
bool fu_py_symtab_unify(fu_py_symtab *s, fu_extent a, fu_extent b);
/* Rewrite every extent of `t` to its representative, in place. */
void fu_py_symtab_canon_type(fu_py_symtab *s, fu_type *t);
/* Rewrite all types of `f` and give the surviving symbols their final names
 * (prefix followed by a counter: "i" gives i0, i1, ...). */
fu_status fu_py_symtab_finalize(fu_py_symtab *s, fu_fusion *f, const char *prefix);

/* ---- example data ------------------------------------------------------ */

/* One entry of an `inputs = [...]` list, evaluated: a Python scalar or a
 * tensor made by torch.randn/rand/zeros/ones/empty/randint/empty_strided,
 * torch.testing.make_tensor or torch.from_numpy(numpy.load(...)), then
 * optionally .as_strided/.t/.transpose/.permute/.contiguous/.to/.normal_
 * and friends. */
typedef struct fu_py_example_spec {
  fu_loc loc;
  bool is_scalar;
  fu_dtype dtype;   /* scalar: f64, i64 or bool from the literal; tensor: torch dtype */
  bool dtype_given; /* tensor: dtype= was written (else torch's default) */
  fu_scalar_value value;
  fu_init_kind init; /* tensors */
  int32_t rank;      /* -1 for .npy data (shape from the file) */
  int64_t shape[FU_MAX_RANK];
  int64_t strides[FU_MAX_RANK];
  bool has_strides;     /* strides differ from row-major */
  int64_t low, high;    /* randint */
  bool nonzero;         /* make_tensor(exclude_zero=True): fu_example.nonzero */
  const char *npy_path; /* in the script's arena */
} fu_py_example_spec;

/* Evaluate one inputs-list entry.  Unsupported forms are located errors
 * (FU_ERR_UNSUPPORTED); `arena` holds strings the spec points to. */
fu_status fu_py_eval_example(const fu_py_expr *e, fu_arena *arena, fu_diag_engine *diag, fu_py_example_spec *out);

/* ---- building one fusion ------------------------------------------------ */

/* One definition to import: a `def name(fd)` body or an inline
 * `with FusionDefinition() as fd:` body. */
typedef struct fu_py_unit {
  const char *name; /* the fusion's name */
  fu_loc loc;
  const char *fd; /* the FusionDefinition parameter's name */
  const fu_py_block *body;
  /* The inputs list bound to this definition, evaluated, or NULL: a reshape
   * whose symbolic extents cannot be worked out from the script takes them
   * from here. */
  const fu_py_example_spec *examples;
  uint32_t n_examples;
} fu_py_unit;

/* Build the fusion for `unit` into `m`: ops in statement order, symbols
 * unified and named, result types from fu_infer_types.  Example data is not
 * attached here.  Errors are located and stop the build. */
fu_status fu_py_build_fusion(fu_module *m, const fu_py_unit *unit, fu_diag_engine *diag, fu_fusion **out);

/* ---- import ---------------------------------------------------------- */

typedef struct fu_py_import_options {
  /* Import only the definition with this name (NULL: every definition, in
   * the order they appear). */
  const char *function;
} fu_py_import_options;

/* Import an nvFuser Python script: each `def name(fd)` (or inline
 * `with FusionDefinition() as fd:` body) becomes a fusion @name.  Value names
 * are kept (%T0, %S7); every -1 extent gets a symbol, symbols are unified
 * through the ops and named i0, i1, ... in order of first appearance; the
 * `inputs` list becomes example data of the inputs.  Types come from
 * fu_infer_types and the module is verified before it is returned.  On error
 * *out is NULL and the status is non-zero; diagnostics are located.
 * `opts` may be NULL.  The source must outlive the module. */
fu_status fu_py_import(const fu_source *src, fu_allocator alloc, fu_diag_engine *diag, const fu_py_import_options *opts,
                       fu_module **out);

/* ---- export ---------------------------------------------------------- */

typedef struct fu_py_export_options {
  const char *source_name; /* named in the header comment; may be NULL */
  const char *device;      /* torch device of the inputs; "cuda" when NULL */
  /* The script rebuilds the recorded inputs exactly: every tensor input's
   * sizes must be recorded (constant extents, example_shape or a symbol
   * another input binds), else an error at the input; .npy inputs are
   * rebuilt in their strides (example_strides or the layout) and filled
   * from the file. */
  bool with_inputs;
} fu_py_export_options;

/* Write a runnable nvFuser repro script in the current frontend syntax:
 * imports, one definition per fusion, and per fusion the
 * `with FusionDefinition() as fd:` block, an `inputs` list made from the
 * example data and `fd.execute(inputs)`.  Inputs without example data get
 * made-up sizes (4 for unbound symbols) in a `placeholder_inputs` list, which
 * the importer ignores, so that importing the script again gives the same
 * IR.  Constructs the Python frontend cannot express (a symbolic extent
 * that appears from nowhere, a reshape between symbolic shapes) are
 * reported at the op and give FU_ERR_UNSUPPORTED.  `opts` may be NULL. */
fu_status fu_py_export(fu_strbuf *out, const fu_module *m, const fu_py_export_options *opts, fu_diag_engine *diag);

/* ---- names shared by import and export ------------------------------- */

/* nvFuser's DataType name for a dtype ("Float", "BFloat16", ...). */
const char *fu_py_datatype_name(fu_dtype t);
/* torch's name for a dtype ("float32", "bfloat16", ...). */
const char *fu_py_torch_dtype_name(fu_dtype t);
/* The dtype of `DataType.<name>`: FU_DT_NONE for Null; sets *known false
 * when the name is not a DataType, *supported false for DataTypes fuser
 * cannot represent (ComplexFloat, ComplexDouble, Float8 ...). */
fu_dtype fu_py_datatype_from_name(const char *name, bool *known, bool *supported);
/* The dtype of `torch.<name>` (float32, float, half, long, ...); same flags. */
fu_dtype fu_py_torch_dtype_from_name(const char *name, bool *known, bool *supported);

#endif
