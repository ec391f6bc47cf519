/* fuser: NumPy .npy reading and writing.
 *
 * Format (numpy.lib.format): the magic "\x93NUMPY", a major and a minor
 * version byte, the header length (uint16 LE for 1.x, uint32 LE for 2.x
 * and 3.x), then a Python dict literal such as
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and a final '\n', then the raw data. */
#include "fuser/npy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "interp_internal.h"

static const char NPY_MAGIC[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

static bool host_little_endian(void) {
  uint16_t x = 1;
  unsigned char b[2];
  memcpy(b, &x, 2);
  return b[0] == 1;
}

const char *fu_npy_descr(fu_dtype dt) {
  switch (dt) {
  case FU_DT_F64: return "<f8";
  case FU_DT_F32: return "<f4";
  case FU_DT_F16: return "<f2";
  case FU_DT_BF16: return "<u2";
  case FU_DT_I64: return "<i8";
  case FU_DT_I32: return "<i4";
  case FU_DT_BOOL: return "|b1";
  default: return NULL;
  }
}

/* Errors name the file; there is no line to point at in binary data. */
static fu_status npy_error(fu_diag_engine *diag, const char *name, fu_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static fu_status npy_error(fu_diag_engine *diag, const char *name, fu_status st, const char *fmt, ...) {
  fu_source src = {name ? name : "<npy>", NULL, 0, 1};
  fu_loc loc = {&src, 0, 0};
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fu_error(diag, loc, "%s", msg);
  return st;
}

/* ---- the header dict -------------------------------------------------------- */

typedef struct hdr_parser {
  const char *p, *end;
} hdr_parser;

static void skip_ws(hdr_parser *h) {
  while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r')) h->p++;
}

static bool eat(hdr_parser *h, char c) {
  skip_ws(h);
  if (h->p < h->end && *h->p == c) {
    h->p++;
    return true;
  }
  return false;
}

/* A quoted string (no escapes: numpy writes none in these keys). */
static bool parse_str(hdr_parser *h, char *out, size_t cap) {
  skip_ws(h);
  if (h->p >= h->end || (*h->p != '\'' && *h->p != '"')) return false;
  char q = *h->p++;
  size_t n = 0;
  while (h->p < h->end && *h->p != q) {
    if (n + 1 >= cap) return false;
    out[n++] = *h->p++;
  }
  if (h->p >= h->end) return false;
  h->p++;
  out[n] = '\0';
  return true;
}

static bool parse_word(hdr_parser *h, const char *w) {
  skip_ws(h);
  size_t n = strlen(w);
  if ((size_t)(h->end - h->p) < n || memcmp(h->p, w, n) != 0) return false;
  h->p += n;
  return true;
}

/* (d0, d1, ...) with an optional trailing comma; Python 2 'L' suffixes ok. */
static bool parse_shape(hdr_parser *h, int32_t *rank, int64_t *shape, bool *too_big) {
  *rank = 0;
  if (!eat(h, '(')) return false;
  for (;;) {
    if (eat(h, ')')) return true;
    skip_ws(h);
    if (h->p >= h->end || *h->p < '0' || *h->p > '9') return false;
    int64_t v = 0;
    while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
      if (v > (INT64_MAX - 9) / 10) {
        *too_big = true;
        return false;
      }
      v = v * 10 + (*h->p++ - '0');
    }
    if (h->p < h->end && *h->p == 'L') h->p++;
    if (*rank >= FU_MAX_RANK) {
      *too_big = true;
      return false;
    }
    shape[(*rank)++] = v;
    if (!eat(h, ',')) return eat(h, ')');
  }
}

typedef struct npy_header {
  char descr[32];
  bool fortran;
  int32_t rank;
  int64_t shape[FU_MAX_RANK];
} npy_header;

static fu_status parse_header(const char *text, size_t len, const char *name, fu_diag_engine *diag, npy_header *out) {
  hdr_parser h = {text, text + len};
  bool have_descr = false, have_order = false, have_shape = false;
  if (!eat(&h, '{')) return npy_error(diag, name, FU_ERR_PARSE, "malformed .npy header: expected '{'");
  for (;;) {
    if (eat(&h, '}')) break;
    char key[32];
    if (!parse_str(&h, key, sizeof key))
      return npy_error(diag, name, FU_ERR_PARSE, "malformed .npy header: expected a quoted key");
    if (!eat(&h, ':')) return npy_error(diag, name, FU_ERR_PARSE, "malformed .npy header: expected ':' after '%s'", key);
    if (strcmp(key, "descr") == 0) {
      if (!parse_str(&h, out->descr, sizeof out->descr))
        return npy_error(diag, name, FU_ERR_PARSE, "malformed .npy header: 'descr' must be a string");
      have_descr = true;
    } else if (strcmp(key, "fortran_order") == 0) {
      if (parse_word(&h, "True"))
        out->fortran = true;
      else if (parse_word(&h, "False"))
        out->fortran = false;
      else
        return npy_error(diag, name, FU_ERR_PARSE, "malformed .npy header: 'fortran_order' must be True or False");
      have_order = true;
    } else if (strcmp(key, "shape") == 0) {
      bool too_big = false;
      if (!parse_shape(&h, &out->rank, out->shape, &too_big)) {
        if (too_big)
          return npy_error(diag, name, FU_ERR_PARSE,
                           "the .npy shape has too many dims (max %d) or too large an extent", FU_MAX_RANK);
        return npy_error(diag, name, FU_ERR_PARSE, "malformed .npy header: 'shape' must be a tuple of integers");
      }
      have_shape = true;
    } else {
      return npy_error(diag, name, FU_ERR_PARSE, "malformed .npy header: unknown key '%s'", key);
    }
    if (!eat(&h, ',')) {
      if (!eat(&h, '}')) return npy_error(diag, name, FU_ERR_PARSE, "malformed .npy header: expected ',' or '}'");
      break;
    }
  }
  if (!have_descr || !have_order || !have_shape)
    return npy_error(diag, name, FU_ERR_PARSE, "malformed .npy header: missing '%s'",
                     !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
  return FU_OK;
}

/* descr -> dtype and byte order.  '<u2' maps to bf16 only when wanted. */
static fu_status parse_descr(const char *descr, fu_dtype want, const char *name, fu_diag_engine *diag, fu_dtype *dt,
                             bool *swap) {
  size_t n = strlen(descr);
  if (n < 3) return npy_error(diag, name, FU_ERR_PARSE, "unsupported .npy dtype '%s'", descr);
  char order = descr[0];
  const char *t = descr + 1;
  struct {
    const char *code;
    fu_dtype dt;
  } table[] = {{"f8", FU_DT_F64}, {"f4", FU_DT_F32}, {"f2", FU_DT_F16}, {"i8", FU_DT_I64},
               {"i4", FU_DT_I32}, {"b1", FU_DT_BOOL}, {"u2", FU_DT_BF16}};
  *dt = FU_DT_NONE;
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcmp(t, table[i].code) == 0) *dt = table[i].dt;
  if (*dt == FU_DT_NONE || (order != '<' && order != '>' && order != '=' && order != '|'))
    return npy_error(diag, name, FU_ERR_PARSE,
                     "unsupported .npy dtype '%s' (supported: <f8 <f4 <f2 <i8 <i4 |b1, and <u2 for bf16)", descr);
  if (*dt == FU_DT_BF16 && want != FU_DT_BF16)
    return npy_error(diag, name, FU_ERR_PARSE,
                     "'%s' data can only be read as bf16 bit patterns (numpy has no bfloat16), but %s is wanted",
                     descr, want == FU_DT_NONE ? "any dtype" : fu_dtype_name(want));
  if (order == '|' && fu_dtype_size(*dt) != 1)
    return npy_error(diag, name, FU_ERR_PARSE, "unsupported .npy dtype '%s': '|' needs a 1-byte type", descr);
  bool little = order == '<' || (order == '=' && host_little_endian());
  *swap = fu_dtype_size(*dt) > 1 && order != '|' && little != host_little_endian();
  if (want != FU_DT_NONE && want != *dt)
    return npy_error(diag, name, FU_ERR_PARSE, "the .npy file holds %s ('%s') but %s is wanted", fu_dtype_name(*dt),
                     descr, fu_dtype_name(want));
  return FU_OK;
}

static void byteswap(unsigned char *p, size_t n, size_t es) {
  for (size_t i = 0; i < n; i++, p += es)
    for (size_t a = 0, b = es - 1; a < b; a++, b--) {
      unsigned char t = p[a];
      p[a] = p[b];
      p[b] = t;
    }
}

/* What a .npy header says: where the data start, how many bytes they take,
 * and how to turn them into a tensor. */
typedef struct npy_layout {
  npy_header h;
  fu_dtype dt;
  bool swap;
  int64_t numel;
  size_t data_off, bytes;
} npy_layout;

/* Reads the magic string, version, header length and header dict from the
 * first `len` bytes of a .npy image (the data need not be there). */
static fu_status read_layout(const unsigned char *b, size_t len, const char *name, fu_dtype want,
                             fu_diag_engine *diag, npy_layout *L) {
  memset(L, 0, sizeof *L);
  if (len < 10 || memcmp(b, NPY_MAGIC, 6) != 0)
    return npy_error(diag, name, FU_ERR_PARSE, "not a .npy file (bad magic string)");
  unsigned major = b[6];
  size_t hlen, hstart;
  if (major == 1) {
    hlen = (size_t)b[8] | (size_t)b[9] << 8;
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (len < 12) return npy_error(diag, name, FU_ERR_PARSE, "truncated .npy header");
    hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
    hstart = 12;
  } else {
    return npy_error(diag, name, FU_ERR_PARSE, "unsupported .npy format version %u.%u", major, b[7]);
  }
  if (hlen > FU_NPY_HEADER_MAX)
    return npy_error(diag, name, FU_ERR_PARSE, "the .npy header announces %zu bytes, more than the %u accepted", hlen,
                     FU_NPY_HEADER_MAX);
  if (hlen > len - hstart)
    return npy_error(diag, name, FU_ERR_PARSE, "truncated .npy header (%zu bytes announced, %zu present)", hlen,
                     len - hstart);
  fu_status st = parse_header((const char *)b + hstart, hlen, name, diag, &L->h);
  if (st != FU_OK) return st;
  st = parse_descr(L->h.descr, want, name, diag, &L->dt, &L->swap);
  if (st != FU_OK) return st;
  size_t es = fu_dtype_size(L->dt);
  L->numel = 1;
  for (int32_t d = 0; d < L->h.rank; d++) {
    if (L->h.shape[d] != 0 && L->numel > INT64_MAX / L->h.shape[d])
      return npy_error(diag, name, FU_ERR_PARSE, "the .npy shape's element count overflows");
    L->numel *= L->h.shape[d];
  }
  L->data_off = hstart + hlen;
  if ((uint64_t)L->numel > SIZE_MAX / es)
    return npy_error(diag, name, FU_ERR_PARSE, "the .npy shape's byte size overflows");
  L->bytes = (size_t)L->numel * es;
  return FU_OK;
}

static void shape_str(char *buf, size_t cap, int32_t rank, const int64_t *shape) {
  size_t n = (size_t)snprintf(buf, cap, "(");
  for (int32_t d = 0; d < rank && n < cap; d++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%lld", d ? ", " : "", (long long)shape[d]);
  if (n < cap) snprintf(buf + n, cap - n, rank == 1 ? ",)" : ")");
}

/* The header against the tensor the caller declared, before any data are
 * read: a 4-element input never reads a file that claims 10^9 elements. */
static fu_status check_expect(const npy_layout *L, const fu_npy_expect *e, const char *name, fu_diag_engine *diag) {
  if (!e) return FU_OK;
  const char *what = e->what ? e->what : "tensor";
  if (e->numel >= 0 && L->numel != e->numel)
    return npy_error(diag, name, FU_ERR_INVALID_ARG, "the .npy file must hold %lld element%s for %s, not %lld",
                     (long long)e->numel, e->numel == 1 ? "" : "s", what, (long long)L->numel);
  if (e->rank >= 0 && L->h.rank != e->rank) {
    char got[256];
    shape_str(got, sizeof got, L->h.rank, L->h.shape);
    return npy_error(diag, name, FU_ERR_INVALID_ARG, "the .npy file has rank %d, the input has rank %d (shape %s for %s)",
                     L->h.rank, e->rank, got, what);
  }
  for (int32_t d = 0; e->rank >= 0 && e->extents && d < e->rank; d++)
    if (e->extents[d] >= 0 && e->extents[d] != L->h.shape[d])
      return npy_error(diag, name, FU_ERR_INVALID_ARG, "the .npy file has size %lld in dim %d, but %s says %lld",
                       (long long)L->h.shape[d], d, what, (long long)e->extents[d]);
  return FU_OK;
}

static fu_status alloc_tensor(const npy_layout *L, const char *name, fu_allocator alloc, fu_diag_engine *diag,
                              fu_host_tensor *out) {
  /* Strides of the file's order, innermost dim first.  The element count
   * was checked, so a product that overflows needs a zero extent: such a
   * tensor has no element to address, and its strides stay 0 from there. */
  int64_t strides[FU_MAX_RANK] = {0};
  int64_t s = 1;
  for (int32_t i = 0; i < L->h.rank; i++) {
    int32_t d = L->h.fortran ? i : L->h.rank - 1 - i;
    int64_t ext = L->h.shape[d];
    strides[d] = s;
    if (ext > 1 && s > INT64_MAX / ext)
      s = 0;
    else if (ext > 0)
      s *= ext;
  }
  fu_status st = fu_host_tensor_alloc_strided(out, alloc, L->dt, L->h.rank, L->h.shape, strides);
  if (st != FU_OK) return npy_error(diag, name, st, "out of memory reading %zu bytes of .npy data", L->bytes);
  return FU_OK;
}

/* Byte order and bools, once the raw data are in place. */
static void finish_tensor(const npy_layout *L, fu_host_tensor *out) {
  if (L->swap) byteswap(out->data, (size_t)L->numel, fu_dtype_size(L->dt));
  if (L->dt == FU_DT_BOOL) {
    unsigned char *p = out->data;
    for (int64_t i = 0; i < L->numel; i++) p[i] = p[i] != 0;
  }
}

fu_status fu_npy_read_buffer(const void *buf, size_t len, const char *name, fu_dtype want, fu_allocator alloc,
                             fu_diag_engine *diag, fu_host_tensor *out) {
  memset(out, 0, sizeof *out);
  const unsigned char *b = buf;
  npy_layout L;
  fu_status st = read_layout(b, len, name, want, diag, &L);
  if (st != FU_OK) return st;
  if (L.bytes > len - L.data_off)
    return npy_error(diag, name, FU_ERR_PARSE, "truncated .npy data: %zu bytes expected, %zu present", L.bytes,
                     len - L.data_off);
  st = alloc_tensor(&L, name, alloc, diag, out);
  if (st != FU_OK) return st;
  memcpy(out->data, b + L.data_off, L.bytes);
  finish_tensor(&L, out);
  return FU_OK;
}

static const char *file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a pipe";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

/* Reads up to `n` bytes; returns how many came (fewer only at the end). */
static size_t read_up_to(FILE *fp, void *dst, size_t n) { return n ? fread(dst, 1, n, fp) : 0; }

/* Reads the header first, checks it against the declared tensor and the
 * file's size, then reads exactly the data bytes the header promises.  A
 * FIFO, device or directory is refused before a byte is read (opened
 * non-blocking so that a FIFO without a writer cannot hang us), so
 * `npy="/dev/zero"` is an error, not an endless read. */
static fu_status read_file(FILE *fp, off_t size, const char *path, const fu_npy_expect *want, fu_allocator alloc,
                           fu_diag_engine *diag, fu_host_tensor *out) {
  unsigned char *head = fu_mem_alloc(&alloc, 12 + FU_NPY_HEADER_MAX);
  if (!head) return npy_error(diag, path, FU_ERR_NOMEM, "out of memory reading .npy file");
  size_t got = read_up_to(fp, head, 12), need = 12;
  if (got == 12 && head[6] == 1) need = 10 + ((size_t)head[8] | (size_t)head[9] << 8);
  else if (got == 12) need = 12 + ((size_t)head[8] | (size_t)head[9] << 8 | (size_t)head[10] << 16 | (size_t)head[11] << 24);
  if (need > 12 + FU_NPY_HEADER_MAX) need = 12 + FU_NPY_HEADER_MAX; /* read_layout reports it */
  if (need > got) got += read_up_to(fp, head + got, need - got);
  npy_layout L;
  fu_status st = read_layout(head, got, path, want ? want->dtype : FU_DT_NONE, diag, &L);
  fu_mem_free(&alloc, head, 12 + FU_NPY_HEADER_MAX);
  if (st == FU_OK) st = check_expect(&L, want, path, diag);
  if (st != FU_OK) return st;
  uint64_t have = (uint64_t)size > L.data_off ? (uint64_t)size - L.data_off : 0;
  if (have != L.bytes) {
    char shape[256];
    shape_str(shape, sizeof shape, L.h.rank, L.h.shape);
    return npy_error(diag, path, FU_ERR_PARSE,
                     "%s .npy file: its header promises %zu data bytes (shape %s of '%s'), the file holds %llu",
                     have < L.bytes ? "truncated" : "oversized", L.bytes, shape, L.h.descr, (unsigned long long)have);
  }
  if (fseek(fp, (long)L.data_off, SEEK_SET) != 0) return npy_error(diag, path, FU_ERR_IO, "error reading .npy file");
  st = alloc_tensor(&L, path, alloc, diag, out);
  if (st != FU_OK) return st;
  got = read_up_to(fp, out->data, L.bytes);
  if (got != L.bytes) {
    fu_host_tensor_free(out);
    return npy_error(diag, path, ferror(fp) ? FU_ERR_IO : FU_ERR_PARSE,
                     "truncated .npy file: %zu data bytes expected, %zu read", L.bytes, got);
  }
  finish_tensor(&L, out);
  return FU_OK;
}

fu_status fu_npy_read_expect(const char *path, const fu_npy_expect *want, fu_allocator alloc, fu_diag_engine *diag,
                             fu_host_tensor *out) {
  memset(out, 0, sizeof *out);
  int fd = open(path, O_RDONLY | O_NONBLOCK);
  if (fd < 0) return npy_error(diag, path, FU_ERR_IO, "cannot open .npy file: %s", strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    int saved = errno;
    bool stat_failed = fstat(fd, &sb) != 0;
    close(fd);
    if (stat_failed) return npy_error(diag, path, FU_ERR_IO, "cannot stat .npy file: %s", strerror(saved));
    return npy_error(diag, path, FU_ERR_IO, "refusing to read a .npy input from %s: it must be a regular file",
                     file_kind(sb.st_mode));
  }
  FILE *fp = fdopen(fd, "rb");
  if (!fp) {
    close(fd);
    return npy_error(diag, path, FU_ERR_IO, "cannot open .npy file: %s", strerror(errno));
  }
  fu_status st = read_file(fp, sb.st_size, path, want, alloc, diag, out);
  fclose(fp);
  return st;
}

fu_status fu_npy_read(const char *path, fu_dtype want, fu_allocator alloc, fu_diag_engine *diag,
                      fu_host_tensor *out) {
  fu_npy_expect e = {want, -1, NULL, -1, NULL};
  return fu_npy_read_expect(path, &e, alloc, diag, out);
}

/* ---- writing -------------------------------------------------------------------- */

fu_status fu_npy_write_buffer(const fu_host_tensor *t, fu_strbuf *out) {
  const char *descr = fu_npy_descr(t->dtype);
  if (!descr || t->rank < 0 || t->rank > FU_MAX_RANK) return FU_ERR_INVALID_ARG;
  char dict[64 + 24 * FU_MAX_RANK];
  size_t n = (size_t)snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int32_t d = 0; d < t->rank; d++)
    n += (size_t)snprintf(dict + n, sizeof dict - n, "%lld%s", (long long)t->shape[d],
                          t->rank == 1 ? "," : d + 1 < t->rank ? ", " : "");
  n += (size_t)snprintf(dict + n, sizeof dict - n, "), }");
  /* Pad with spaces so that magic + length + header is a multiple of 64,
   * ending in '\n' (version 1.0: the header fits in 16 bits here). */
  size_t total = 10 + n + 1;
  size_t pad = (64 - total % 64) % 64;
  size_t hlen = n + pad + 1;
  unsigned char pre[10];
  memcpy(pre, NPY_MAGIC, 6);
  pre[6] = 1;
  pre[7] = 0;
  pre[8] = (unsigned char)(hlen & 0xff);
  pre[9] = (unsigned char)(hlen >> 8);
  fu_strbuf_append(out, (const char *)pre, 10);
  fu_strbuf_append(out, dict, n);
  for (size_t i = 0; i < pad; i++) fu_strbuf_putc(out, ' ');
  fu_strbuf_putc(out, '\n');
  /* Data in row-major logical order, little-endian. */
  int64_t numel = fu_host_tensor_numel(t);
  if (numel < 0) return FU_ERR_INVALID_ARG;
  size_t es = fu_dtype_size(t->dtype);
  bool swap = es > 1 && !host_little_endian();
  unsigned char elem[8];
  for (int64_t i = 0; i < numel; i++) {
    int64_t off = fu_interp_flat_offset(t, i);
    memcpy(elem, (const char *)t->data + (size_t)off * es, es);
    if (t->dtype == FU_DT_BOOL) elem[0] = elem[0] != 0;
    if (swap) byteswap(elem, 1, es);
    fu_strbuf_append(out, (const char *)elem, es);
    if (out->failed) break;
  }
  return out->failed ? FU_ERR_NOMEM : FU_OK;
}

fu_status fu_npy_write(const char *path, const fu_host_tensor *t, fu_diag_engine *diag) {
  fu_strbuf sb;
  fu_strbuf_init(&sb, diag->alloc);
  fu_status st = fu_npy_write_buffer(t, &sb);
  if (st != FU_OK) {
    fu_strbuf_free(&sb);
    if (st == FU_ERR_NOMEM) return npy_error(diag, path, st, "out of memory writing .npy data");
    return npy_error(diag, path, st, "cannot write a %s tensor as .npy", fu_dtype_name(t->dtype));
  }
  FILE *fp = fopen(path, "wb");
  if (!fp) {
    fu_strbuf_free(&sb);
    return npy_error(diag, path, FU_ERR_IO, "cannot create .npy file: %s", strerror(errno));
  }
  size_t w = fwrite(sb.data ? sb.data : "", 1, sb.len, fp);
  bool bad = w != sb.len;
  if (fclose(fp) != 0) bad = true;
  fu_strbuf_free(&sb);
  if (bad) return npy_error(diag, path, FU_ERR_IO, "error writing .npy file");
  return FU_OK;
}
