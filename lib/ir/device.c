/* fuser: device descriptions (presets and key = value files). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuser/device.h"

/* Numbers from the vendors' data sheets (SXM parts).  The H200 shares the
 * H100's SMs; its L2 figure follows the project's design notes.  Memory
 * sizes are rounded up to whole GiB (the 141 GB H200 as 141 GiB): they
 * bound tensor sizes, where a bound too high is only less precise. */
static fu_device make(const char *name, uint32_t sm, uint32_t sms, uint32_t smem_block, uint32_t smem_sm,
                      uint64_t l2, double bw, uint64_t mem) {
  fu_device d;
  memset(&d, 0, sizeof d);
  snprintf(d.name, sizeof d.name, "%s", name);
  d.sm = sm;
  d.n_sms = sms;
  d.warp_size = 32;
  d.max_threads_per_block = 1024;
  d.max_threads_per_sm = 2048;
  d.max_blocks_per_sm = 32;
  d.regs_per_sm = 65536;
  d.max_regs_per_thread = 255;
  d.smem_per_block = smem_block;
  d.smem_per_sm = smem_sm;
  d.l2_bytes = l2;
  d.mem_bandwidth_gbs = bw;
  d.mem_bytes = mem;
  d.max_grid_x = 2147483647u;
  d.max_grid_yz = 65535;
  d.max_cluster = sm >= 90 ? 8 : 1;
  return d;
}

#define MB (1024ull * 1024ull)
#define GIB (1024ull * MB)

bool fu_device_preset(const char *name, fu_device *out) {
  if (!name) return false;
  if (strcmp(name, "h100") == 0 || strcmp(name, "h100-sxm") == 0 || strcmp(name, "sm_90") == 0) {
    *out = make(strcmp(name, "sm_90") == 0 ? "sm_90" : "h100", 90, 132, 232448, 233472, 50 * MB, 3350.0, 80 * GIB);
    return true;
  }
  if (strcmp(name, "h200") == 0) {
    *out = make("h200", 90, 132, 232448, 233472, 60 * MB, 4800.0, 141 * GIB);
    return true;
  }
  if (strcmp(name, "a100") == 0 || strcmp(name, "sm_80") == 0) {
    *out = make(strcmp(name, "sm_80") == 0 ? "sm_80" : "a100", 80, 108, 166912, 167936, 40 * MB, 2039.0, 80 * GIB);
    return true;
  }
  return false;
}

const char *fu_device_preset_names(void) { return "h100, h100-sxm, h200, a100, sm_80, sm_90"; }

fu_device fu_device_default(void) {
  fu_device d;
  fu_device_preset("h100", &d);
  return d;
}

void fu_device_arch(const fu_device *d, char *buf, size_t cap) { snprintf(buf, cap, "sm_%u", d->sm); }

bool fu_device_valid(const fu_device *d, fu_strbuf *why) {
  const char *bad = NULL;
  if (d->sm < 50 || d->sm > 200) bad = "sm must be between 50 and 200";
  else if (d->n_sms == 0) bad = "sms must be positive";
  else if (d->warp_size == 0) bad = "warp_size must be positive";
  else if (d->max_threads_per_block == 0 || d->max_threads_per_block % d->warp_size != 0)
    bad = "max_threads_per_block must be a positive multiple of warp_size";
  else if (d->max_threads_per_sm < d->max_threads_per_block)
    bad = "max_threads_per_sm must be at least max_threads_per_block";
  else if (d->max_blocks_per_sm == 0) bad = "max_blocks_per_sm must be positive";
  else if (d->regs_per_sm == 0 || d->max_regs_per_thread == 0) bad = "register counts must be positive";
  else if (d->mem_bandwidth_gbs <= 0) bad = "mem_bandwidth_gbs must be positive";
  else if (d->mem_bytes == 0) bad = "mem_bytes must be positive";
  else if (d->max_grid_x == 0 || d->max_grid_yz == 0) bad = "grid limits must be positive";
  else if (d->max_cluster == 0 || d->max_cluster > 16 || (d->max_cluster & (d->max_cluster - 1)))
    bad = "max_cluster must be 1, 2, 4, 8 or 16";
  else if (d->max_cluster > 1 && d->sm < 90) bad = "max_cluster above 1 needs sm 90 or later (clusters)";
  if (bad && why) fu_strbuf_puts(why, bad);
  return bad == NULL;
}

uint32_t fu_arch_sm(const char *arch) {
  if (!arch || strncmp(arch, "sm_", 3) != 0) return 0;
  const char *p = arch + 3;
  uint32_t sm = 0, digits = 0;
  for (; *p >= '0' && *p <= '9'; p++, digits++) sm = sm * 10 + (uint32_t)(*p - '0');
  if (digits < 2 || digits > 3 || (*p && !((*p == 'a' || *p == 'f') && !p[1]))) return 0;
  return sm;
}

void fu_device_print(fu_strbuf *out, const fu_device *d) {
  fu_strbuf_printf(out, "name = %s\nsm = %u\nsms = %u\nwarp_size = %u\n", d->name, d->sm, d->n_sms, d->warp_size);
  fu_strbuf_printf(out, "max_threads_per_block = %u\nmax_threads_per_sm = %u\nmax_blocks_per_sm = %u\n",
                   d->max_threads_per_block, d->max_threads_per_sm, d->max_blocks_per_sm);
  fu_strbuf_printf(out, "regs_per_sm = %u\nmax_regs_per_thread = %u\nsmem_per_block = %u\nsmem_per_sm = %u\n",
                   d->regs_per_sm, d->max_regs_per_thread, d->smem_per_block, d->smem_per_sm);
  fu_strbuf_printf(out, "l2_bytes = %" PRIu64 "\nmem_bandwidth_gbs = %g\nmem_bytes = %" PRIu64 "\n", d->l2_bytes,
                   d->mem_bandwidth_gbs, d->mem_bytes);
  fu_strbuf_printf(out, "max_grid_x = %u\nmax_grid_yz = %u\nmax_cluster = %u\n", d->max_grid_x, d->max_grid_yz,
                   d->max_cluster);
}

/* ---- device files ------------------------------------------------------- */

typedef enum key_kind { K_NAME, K_BASE, K_SM, K_U32, K_U64, K_BW_GB, K_BW_TB, K_L2_MB, K_MEM_GIB } key_kind;

typedef struct key_def {
  const char *name;
  key_kind kind;
  size_t offset;
} key_def;

static const key_def keys[] = {
    {"base", K_BASE, 0},
    {"name", K_NAME, 0},
    {"sm", K_SM, offsetof(fu_device, sm)},
    {"sms", K_U32, offsetof(fu_device, n_sms)},
    {"warp_size", K_U32, offsetof(fu_device, warp_size)},
    {"max_threads_per_block", K_U32, offsetof(fu_device, max_threads_per_block)},
    {"max_threads_per_sm", K_U32, offsetof(fu_device, max_threads_per_sm)},
    {"max_blocks_per_sm", K_U32, offsetof(fu_device, max_blocks_per_sm)},
    {"regs_per_sm", K_U32, offsetof(fu_device, regs_per_sm)},
    {"max_regs_per_thread", K_U32, offsetof(fu_device, max_regs_per_thread)},
    {"smem_per_block", K_U32, offsetof(fu_device, smem_per_block)},
    {"smem_per_sm", K_U32, offsetof(fu_device, smem_per_sm)},
    {"l2_bytes", K_U64, offsetof(fu_device, l2_bytes)},
    {"l2_mb", K_L2_MB, 0},
    {"mem_bandwidth_gbs", K_BW_GB, 0},
    {"mem_bandwidth_tbs", K_BW_TB, 0},
    {"mem_bytes", K_U64, offsetof(fu_device, mem_bytes)},
    {"mem_gib", K_MEM_GIB, 0},
    {"max_grid_x", K_U32, offsetof(fu_device, max_grid_x)},
    {"max_grid_yz", K_U32, offsetof(fu_device, max_grid_yz)},
    {"max_cluster", K_U32, offsetof(fu_device, max_cluster)},
};

#define N_KEYS (sizeof keys / sizeof keys[0])

static fu_loc at(const fu_source *src, uint32_t line, uint32_t col) {
  fu_loc l = {src, line, col};
  return l;
}

/* An unsigned integer that fills the whole value text. */
static bool parse_u64(const char *s, size_t n, uint64_t *out) {
  if (n == 0 || n > 20) return false;
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isdigit((unsigned char)s[i])) return false;
    uint64_t d = (uint64_t)(s[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

static bool parse_double(const char *s, size_t n, double *out) {
  char buf[64];
  if (n == 0 || n >= sizeof buf) return false;
  memcpy(buf, s, n);
  buf[n] = '\0';
  char *end = NULL;
  errno = 0;
  double v = strtod(buf, &end);
  if (errno != 0 || end != buf + n || !(v > 0) || v > 1e12) return false;
  *out = v;
  return true;
}

/* Applies one `key = value`; reports at the value's column on a bad value. */
static bool apply(const fu_source *src, uint32_t line, uint32_t vcol, const key_def *k, const char *v, size_t n,
                  fu_device *d, fu_diag_engine *diag) {
  uint64_t u = 0;
  double x = 0;
  switch (k->kind) {
  case K_BASE: {
    char name[FU_DEVICE_NAME_MAX];
    if (n >= sizeof name) n = sizeof name - 1;
    memcpy(name, v, n);
    name[n] = '\0';
    if (!fu_device_preset(name, d)) {
      fu_error(diag, at(src, line, vcol), "unknown device preset '%s'; known presets: %s", name,
               fu_device_preset_names());
      return false;
    }
    return true;
  }
  case K_NAME:
    if (n == 0 || n >= FU_DEVICE_NAME_MAX) {
      fu_error(diag, at(src, line, vcol), "device name must have 1 to %d characters", FU_DEVICE_NAME_MAX - 1);
      return false;
    }
    for (size_t i = 0; i < n; i++)
      if (!(isalnum((unsigned char)v[i]) || v[i] == '_' || v[i] == '-' || v[i] == '.')) {
        fu_error(diag, at(src, line, vcol + (uint32_t)i), "device name may hold letters, digits, '_', '-' and '.' only");
        return false;
      }
    memcpy(d->name, v, n);
    d->name[n] = '\0';
    return true;
  case K_SM:
    if (n > 3 && memcmp(v, "sm_", 3) == 0) {
      v += 3;
      n -= 3;
    }
    if (!parse_u64(v, n, &u) || u < 50 || u > 200) {
      fu_error(diag, at(src, line, vcol), "'sm' must be a compute capability such as 80, 90 or sm_90");
      return false;
    }
    d->sm = (uint32_t)u;
    if (d->sm < 90) d->max_cluster = 1; /* a later max_cluster line is checked against it */
    return true;
  case K_U32:
    if (!parse_u64(v, n, &u) || u == 0 || u > UINT32_MAX) {
      fu_error(diag, at(src, line, vcol), "'%s' must be a positive integer below 2^32", k->name);
      return false;
    }
    *(uint32_t *)((char *)d + k->offset) = (uint32_t)u;
    return true;
  case K_U64:
    if (!parse_u64(v, n, &u) || u == 0) {
      fu_error(diag, at(src, line, vcol), "'%s' must be a positive integer", k->name);
      return false;
    }
    *(uint64_t *)((char *)d + k->offset) = u;
    return true;
  case K_L2_MB:
    if (!parse_double(v, n, &x) || x > 1e6) {
      fu_error(diag, at(src, line, vcol), "'l2_mb' must be a positive number");
      return false;
    }
    d->l2_bytes = (uint64_t)(x * (double)MB);
    return true;
  case K_MEM_GIB:
    if (!parse_double(v, n, &x) || x > 1e6) {
      fu_error(diag, at(src, line, vcol), "'mem_gib' must be a positive number of GiB (at most 1e6)");
      return false;
    }
    d->mem_bytes = (uint64_t)(x * (double)GIB);
    return true;
  case K_BW_GB:
  case K_BW_TB:
    if (!parse_double(v, n, &x)) {
      fu_error(diag, at(src, line, vcol), "'%s' must be a positive number", k->name);
      return false;
    }
    d->mem_bandwidth_gbs = k->kind == K_BW_TB ? x * 1000.0 : x;
    return true;
  }
  return false;
}

/* Line by line; each problem is reported, and the first one decides the
 * status.  `base` must come before every other key so that it cannot
 * silently undo them. */
fu_status fu_device_parse(const fu_source *src, fu_device *out, fu_diag_engine *diag) {
  fu_device d = fu_device_default();
  bool seen[N_KEYS];
  memset(seen, 0, sizeof seen);
  bool any_key = false, ok = true;
  const char *p = src->text, *end = src->text + src->len;
  uint32_t line = 1;
  while (p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol) eol = end;
    const char *s = p, *e = eol;
    const char *hash = memchr(s, '#', (size_t)(e - s));
    if (hash) e = hash;
    while (s < e && isspace((unsigned char)*s)) s++;
    while (e > s && isspace((unsigned char)e[-1])) e--;
    if (s < e) {
      const char *eq = memchr(s, '=', (size_t)(e - s));
      uint32_t col = (uint32_t)(s - p) + 1;
      if (!eq) {
        fu_error(diag, at(src, line, col), "expected 'key = value'");
        ok = false;
      } else {
        const char *ke = eq;
        while (ke > s && isspace((unsigned char)ke[-1])) ke--;
        const char *v = eq + 1;
        while (v < e && isspace((unsigned char)*v)) v++;
        size_t klen = (size_t)(ke - s), vlen = (size_t)(e - v);
        uint32_t vcol = (uint32_t)(v - p) + 1;
        const key_def *k = NULL;
        size_t ki = 0;
        for (; ki < N_KEYS; ki++)
          if (strlen(keys[ki].name) == klen && memcmp(keys[ki].name, s, klen) == 0) {
            k = &keys[ki];
            break;
          }
        if (!k) {
          fu_error(diag, at(src, line, col), "unknown device key '%.*s'", (int)klen, s);
          ok = false;
        } else if (seen[ki]) {
          fu_error(diag, at(src, line, col), "duplicate device key '%s'", k->name);
          ok = false;
        } else if (k->kind == K_BASE && any_key) {
          fu_error(diag, at(src, line, col), "'base' must come before every other key");
          ok = false;
        } else if (vlen == 0) {
          fu_error(diag, at(src, line, vcol), "missing value for '%s'", k->name);
          ok = false;
        } else {
          seen[ki] = true;
          any_key = true;
          if (!apply(src, line, vcol, k, v, vlen, &d, diag)) ok = false;
        }
      }
    }
    p = eol < end ? eol + 1 : end;
    line++;
  }
  if (ok) {
    fu_strbuf why;
    fu_strbuf_init(&why, diag->alloc);
    if (!fu_device_valid(&d, &why)) {
      fu_error(diag, at(src, 0, 0), "invalid device description: %s", why.data ? why.data : "");
      ok = false;
    }
    fu_strbuf_free(&why);
  }
  if (!ok) return FU_ERR_PARSE;
  *out = d;
  return FU_OK;
}

/* Reads a small file whole through the allocator. */
static fu_status read_small_file(const char *path, fu_allocator alloc, char **data, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return FU_ERR_IO;
  size_t cap = 4096, n = 0;
  char *buf = fu_mem_alloc(&alloc, cap);
  fu_status st = buf ? FU_OK : FU_ERR_NOMEM;
  while (st == FU_OK) {
    if (n + 1 >= cap) {
      if (cap >= (1u << 20)) {
        st = FU_ERR_IO; /* not a device file */
        break;
      }
      char *nb = fu_mem_realloc(&alloc, buf, cap, cap * 2);
      if (!nb) {
        st = FU_ERR_NOMEM;
        break;
      }
      buf = nb;
      cap *= 2;
    }
    size_t got = fread(buf + n, 1, cap - 1 - n, f);
    n += got;
    if (got == 0) {
      if (ferror(f)) st = FU_ERR_IO;
      break;
    }
  }
  fclose(f);
  if (st != FU_OK) {
    if (buf) fu_mem_free(&alloc, buf, cap);
    return st;
  }
  buf[n] = '\0';
  *data = buf;
  *len = cap; /* the allocation size, for freeing */
  (void)n;
  return FU_OK;
}

fu_status fu_device_from_spec(const char *spec, fu_allocator alloc, fu_device *out, fu_diag_engine *diag) {
  if (!spec || !*spec) {
    fu_error(diag, fu_loc_none(), "empty device name; known presets: %s, or a device file", fu_device_preset_names());
    return FU_ERR_INVALID_ARG;
  }
  if (fu_device_preset(spec, out)) return FU_OK;
  char *data = NULL;
  size_t cap = 0;
  fu_status st = read_small_file(spec, alloc, &data, &cap);
  if (st == FU_ERR_NOMEM) {
    fu_error(diag, fu_loc_none(), "out of memory reading device file '%s'", spec);
    return st;
  }
  if (st != FU_OK) {
    fu_error(diag, fu_loc_none(), "unknown device '%s': not a preset (%s) and not a readable device file", spec,
             fu_device_preset_names());
    return FU_ERR_INVALID_ARG;
  }
  fu_source src = {spec, data, strlen(data), 1};
  st = fu_device_parse(&src, out, diag);
  fu_mem_free(&alloc, data, cap);
  return st;
}
