/* fuser: the sizes a fusion's inputs give its symbolic extents through
 * their example data (`example_shape=[...]`), and the one default for a
 * symbol no example binds.  Every user (the interpreter's example inputs,
 * the Python exporter, the segmenter's and the pointwise scheduler's size
 * estimates) binds through this file. */
#ifndef FUSER_EXAMPLE_SIZES_H
#define FUSER_EXAMPLE_SIZES_H

#include "fuser/ir.h"

/* The size of a symbol no example binds: small, so that made-up data
 * (fuser-run --random, fuser-translate's exported inputs) stays cheap.  A
 * caller that estimates cost rather than making data passes its own
 * (the segmenter 1024, the pointwise scheduler 4096). */
#define FU_DEFAULT_EXTENT 4

typedef struct fu_example_sizes {
  fu_allocator alloc;
  const char **sym; /* open addressing on the symbol's text; NULL: empty */
  int64_t *val;
  uint32_t cap, n;
} fu_example_sizes;

/* Binds the symbols of `f`'s top-level inputs that state example_shape;
 * the first input that binds a symbol wins (the verifier refuses two
 * sizes).  The table comes from `alloc`: free it with
 * fu_example_sizes_free (also after a failure, FU_ERR_NOMEM). */
fu_status fu_example_sizes_bind(fu_example_sizes *s, const fu_fusion *f, fu_allocator alloc);
void fu_example_sizes_free(fu_example_sizes *s);
/* The size bound to `sym`, if any. */
bool fu_example_sizes_get(const fu_example_sizes *s, const char *sym, int64_t *value);
/* `e` at the example sizes: its value when constant, its binding when
 * bound, else `unbound` (FU_DEFAULT_EXTENT unless the caller needs
 * another). */
int64_t fu_example_extent(const fu_example_sizes *s, fu_extent e, int64_t unbound);

#endif
