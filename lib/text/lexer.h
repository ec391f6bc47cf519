/* fuser: the .fir lexer and small helpers shared by the parser and the
 * printer (internal to lib/text; not a public header).
 *
 * The lexer streams tokens out of a fu_source buffer without allocating per
 * token: a token points into the source text.  Numbers are converted while
 * lexing (with overflow checks); strings keep their raw text and are decoded
 * by the parser where a string is actually used. */
#ifndef FUSER_TEXT_LEXER_H
#define FUSER_TEXT_LEXER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fuser/diag.h"

typedef enum fu_txt_tok {
  FU_TOK_EOF,
  FU_TOK_ERROR,    /* already reported by the lexer (unless quiet) */
  FU_TOK_IDENT,    /* [A-Za-z_][A-Za-z0-9_.]* (also inf, nan, true, ...) */
  FU_TOK_VALUE,    /* %name */
  FU_TOK_AT,       /* @name */
  FU_TOK_INT,      /* -?[0-9]+ */
  FU_TOK_FLOAT,    /* decimal float, or -inf */
  FU_TOK_STRING,   /* "..." (raw text including the quotes) */
  FU_TOK_EQ,       /* = */
  FU_TOK_COMMA,    /* , */
  FU_TOK_COLON,    /* : */
  FU_TOK_LPAREN,   /* ( */
  FU_TOK_RPAREN,   /* ) */
  FU_TOK_LBRACE,   /* { */
  FU_TOK_RBRACE,   /* } */
  FU_TOK_LBRACKET, /* [ */
  FU_TOK_RBRACKET, /* ] */
  FU_TOK_ARROW,    /* -> */
} fu_txt_tok;

typedef struct fu_token {
  fu_txt_tok kind;
  const char *p; /* the token's text in the source */
  uint32_t len;
  uint32_t line, col; /* 1-based, relative to the buffer */
  int64_t ival;       /* FU_TOK_INT */
  double fval;        /* FU_TOK_FLOAT */
} fu_token;

typedef struct fu_lexer {
  const fu_source *src;
  const char *p, *end, *line_start;
  uint32_t line;
  fu_diag_engine *diag;
  fu_allocator alloc; /* only for rare long float literals */
  bool quiet; /* suppress diagnostics (error recovery skips tokens) */
} fu_lexer;

void fu_txt_lex_init(fu_lexer *lx, const fu_source *src, fu_allocator alloc, fu_diag_engine *diag);
void fu_txt_lex_next(fu_lexer *lx, fu_token *out);

/* Does the token's text equal the NUL-terminated `s`? */
bool fu_txt_tok_is(const fu_token *t, const char *s);
/* A short description of a token for "expected X, got Y" messages, written
 * into buf: "end of input", "'%T1'", "identifier 'foo'", ... */
const char *fu_txt_tok_describe(const fu_token *t, char *buf, size_t cap);

/* Characters of %value and @symbol names: [A-Za-z0-9_.$]. */
bool fu_txt_is_name_char(char c);

/* ---- a hash table from (bytes, length) keys to pointers -------------- */

/* Open addressing with linear probing over small slots (hash + entry
 * index); the entries themselves are dense, in insertion order.  Most
 * lookups in a .fir file are of recently defined names, whose entries are
 * then in cache, and the slot array stays a quarter of the size of a table
 * of full entries.  Keys are not copied: they must outlive the entries
 * (source text or arena strings). */
typedef struct fu_txt_symtab_slot {
  uint32_t hash;
  uint32_t index; /* entry index + 1; 0 = empty */
} fu_txt_symtab_slot;

typedef struct fu_txt_symtab_entry {
  const char *key;
  size_t len;
  void *val;
} fu_txt_symtab_entry;

typedef struct fu_txt_symtab {
  fu_txt_symtab_slot *slots;
  size_t cap; /* power of two, or 0 */
  fu_txt_symtab_entry *entries;
  size_t count, entries_cap;
  fu_allocator alloc;
} fu_txt_symtab;

void fu_txt_symtab_init(fu_txt_symtab *t, fu_allocator alloc);
void fu_txt_symtab_free(fu_txt_symtab *t);
void fu_txt_symtab_clear(fu_txt_symtab *t);
/* NULL when absent. */
void *fu_txt_symtab_get(const fu_txt_symtab *t, const char *key, size_t len);
/* Insert or overwrite; false when memory runs out. */
bool fu_txt_symtab_put(fu_txt_symtab *t, const char *key, size_t len, void *val);
/* Insert unless present, in one probe: returns the existing value (table
 * unchanged), or NULL after inserting `val` (or on failure, *nomem set). */
void *fu_txt_symtab_insert(fu_txt_symtab *t, const char *key, size_t len, void *val, bool *nomem);

#endif
