/* fuser: reading and writing NumPy .npy files.
 *
 * Supported: format versions 1.0, 2.0 and 3.0 (3.0 differs only in the
 * header's text encoding), C and Fortran order, and the dtypes
 *   '<f8' f64, '<f4' f32, '<f2' f16, '<i8' i64, '<i4' i32, '|b1' bool,
 * plus '<u2' as the raw bits of bf16 (NumPy has no bfloat16: a bf16 tensor
 * is written as '<u2', and '<u2' data is read only into a bf16 destination).
 * Big-endian ('>') and native ('=') byte orders are read too; files are
 * always written little-endian, C order.
 *
 * Errors (a missing file, a bad magic string, a malformed header dict, an
 * unsupported dtype, a shape that overflows, truncated data) are reported
 * as `file: error: ...` diagnostics with a status, never a crash. */
#ifndef FUSER_NPY_H
#define FUSER_NPY_H

#include <stddef.h>

#include "fuser/diag.h"
#include "fuser/interp.h"
#include "fuser/strbuf.h"

/* The largest header accepted: numpy writes at most a few hundred bytes. */
#define FU_NPY_HEADER_MAX (1u << 20)

/* What the reader checks in the header before it reads any data: the
 * tensor the file is declared for. */
typedef struct fu_npy_expect {
  fu_dtype dtype;         /* FU_DT_NONE: any */
  int32_t rank;           /* -1: any */
  const int64_t *extents; /* `rank` sizes, -1 where not known yet; NULL: any */
  int64_t numel;          /* -1: any (1 for a scalar input) */
  const char *what;       /* the declared tensor, for messages ("type f32[4, N]") */
} fu_npy_expect;

/* Read `path` into a fresh tensor owning its memory.  A Fortran-order file
 * gives column-major strides (no copy).  `want` is the dtype the caller
 * expects (FU_DT_NONE: whatever the file holds); a different dtype in the
 * file is an error naming both, except that '<u2' is accepted only when
 * `want` is FU_DT_BF16.  FU_ERR_IO when the file cannot be read,
 * FU_ERR_PARSE when it is malformed. */
fu_status fu_npy_read(const char *path, fu_dtype want, fu_allocator alloc, fu_diag_engine *diag,
                      fu_host_tensor *out);
/* The same, checking the header against `want` before any data are read.
 * Only a regular file is read (a device, pipe or directory is refused
 * before reading), and exactly the bytes its header promises: a file whose
 * size is not header + shape x dtype is refused as truncated or oversized,
 * naming both byte counts. */
fu_status fu_npy_read_expect(const char *path, const fu_npy_expect *want, fu_allocator alloc, fu_diag_engine *diag,
                             fu_host_tensor *out);
/* The same from a buffer; `name` is used in diagnostics. */
fu_status fu_npy_read_buffer(const void *buf, size_t len, const char *name, fu_dtype want, fu_allocator alloc,
                             fu_diag_engine *diag, fu_host_tensor *out);

/* Write `t` (any strides; elements written in row-major order) to `path`. */
fu_status fu_npy_write(const char *path, const fu_host_tensor *t, fu_diag_engine *diag);
/* Append the .npy bytes of `t` to `out`; FU_ERR_NOMEM if the buffer failed. */
fu_status fu_npy_write_buffer(const fu_host_tensor *t, fu_strbuf *out);

/* The .npy descr string of a dtype ("<f4"; "<u2" for bf16), NULL if none. */
const char *fu_npy_descr(fu_dtype dt);

#endif
