/* fuser cuda target: C identifiers for kernel values.
 *
 * The CUDA C keeps the kernel IR's names (which are the fusion's: %T0,
 * %x0, %tid), so the text reads like the kernel IR.  A name becomes an
 * identifier by turning every character C does not allow into '_'; one
 * that is taken in the kernel, a C++ keyword, or a name the emitted code
 * calls (expf, atomicAdd, threadIdx, fu_*, __*) gets `_<id>` appended, so
 * no value can shadow a function the code needs. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* C++ keywords, CUDA's built-in variables, and the functions and macros
 * the CUDA C calls that do not start with "__" or "fu_". */
static const char *const reserved_words[] = {
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch",
    "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr",
    "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default", "delete",
    "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for",
    "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
    "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register", "reinterpret_cast",
    "requires", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct",
    "switch", "template", "this", "thread_local", "throw", "true", "try", "typedef", "typeid", "typename",
    "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq",
    "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "dim3", "uint2", "uint4", "float2", "float4",
    "atomicAdd", "min", "max", "abs", "labs", "llabs", "fabs", "fabsf", "fmax", "fmaxf", "fmin", "fminf",
    "rint", "rintf", "rsqrt", "rsqrtf", "isnan", "isinf", "isfinite", "signbit", "printf", "assert", "memcpy",
    "memset", "malloc", "free", "INFINITY", "NAN", "HUGE_VAL", "HUGE_VALF", "main", "std", "sqrt", "sqrtf",
    "round", "roundf",
};

static bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* A math function of ops.def's MATH column, with or without the f suffix. */
static bool is_math_function(const char *s) {
  size_t n = strlen(s);
  for (int k = 0; k < FU_OP_COUNT; k++) {
    const char *m = fu_op_info_of((fu_op_kind)k)->math;
    if (!m) continue;
    size_t mn = strlen(m);
    if (strncmp(s, m, mn) == 0 && (n == mn || (n == mn + 1 && s[mn] == 'f'))) return true;
  }
  return false;
}

/* A prefix that CUDA C (or fuser's helpers) keeps for itself: no suffix
 * frees a name that has one. */
static bool reserved_prefix(const char *s) {
  return strncmp(s, "__", 2) == 0 || strncmp(s, "fu_", 3) == 0 || strncmp(s, "CUDART_", 7) == 0 ||
         (s[0] == '_' && s[1] >= 'A' && s[1] <= 'Z');
}

static bool reserved(const char *s) {
  if (reserved_prefix(s)) return true;
  for (size_t i = 0; i < sizeof reserved_words / sizeof reserved_words[0]; i++)
    if (strcmp(s, reserved_words[i]) == 0) return true;
  return is_math_function(s);
}

bool cu_kernel_name_ok(const char *s, const char **why) {
  if (!s || !*s || (s[0] >= '0' && s[0] <= '9')) {
    *why = "is not a valid identifier";
    return false;
  }
  for (const char *p = s; *p; p++)
    if (!is_ident_char(*p)) {
      *why = "is not a valid identifier";
      return false;
    }
  if (reserved(s)) {
    *why = "is reserved in CUDA C (a keyword, a CUDA name, or a name starting with '__' or 'fu_')";
    return false;
  }
  return true;
}

/* ---- the set of identifiers taken in a kernel ------------------------------ */

static uint32_t hash(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

static bool taken(const cu_kernel *kc, const char *s) {
  if (!kc->taken_cap) return false;
  for (uint32_t i = hash(s) & (kc->taken_cap - 1);; i = (i + 1) & (kc->taken_cap - 1)) {
    if (!kc->taken[i]) return false;
    if (strcmp(kc->taken[i], s) == 0) return true;
  }
}

static bool take(cu_kernel *kc, const char *s) {
  if (2 * (kc->n_taken + 1) > kc->taken_cap) {
    uint32_t cap = kc->taken_cap ? 2 * kc->taken_cap : 64;
    const char **t = fu_mem_calloc(&kc->mod->alloc, cap, sizeof *t);
    if (!t) return false;
    for (uint32_t i = 0; i < kc->taken_cap; i++) {
      if (!kc->taken[i]) continue;
      uint32_t j = hash(kc->taken[i]) & (cap - 1);
      while (t[j]) j = (j + 1) & (cap - 1);
      t[j] = kc->taken[i];
    }
    fu_mem_free(&kc->mod->alloc, kc->taken, kc->taken_cap * sizeof *kc->taken);
    kc->taken = t;
    kc->taken_cap = cap;
  }
  uint32_t j = hash(s) & (kc->taken_cap - 1);
  while (kc->taken[j]) j = (j + 1) & (kc->taken_cap - 1);
  kc->taken[j] = s;
  kc->n_taken++;
  return true;
}

/* `base` as is when free, else `base_<n>` from n = `first` up. */
static const char *unique(cu_kernel *kc, const char *base, uint32_t first) {
  char buf[320];
  const char *cand = base;
  for (uint32_t n = first; reserved(cand) || taken(kc, cand); n++) {
    snprintf(buf, sizeof buf, "%.290s_%u", base, n);
    cand = buf;
  }
  char *s = fu_arena_strdup(kc->mod->arena, cand);
  if (!s || !take(kc, s)) return NULL;
  return s;
}

const char *cu_fresh_name(cu_kernel *kc, const char *base) { return unique(kc, base, 1); }

static fu_status name_value(cu_kernel *kc, const fu_kval *v) {
  if (v->id >= kc->n_ids) return FU_ERR_INVALID_ARG;
  if (kc->names[v->id]) return FU_OK;
  char base[300];
  if (!v->name || !*v->name) {
    snprintf(base, sizeof base, "v%u", v->id);
  } else {
    size_t n = 1; /* base[0]: a 'v' before what cannot start a name */
    for (const char *p = v->name; *p && n + 1 < 280; p++) base[n++] = is_ident_char(*p) ? *p : '_';
    base[n] = '\0';
    bool prefix = (base[1] >= '0' && base[1] <= '9') || reserved_prefix(base + 1);
    if (prefix)
      base[0] = 'v';
    else
      memmove(base, base + 1, n);
  }
  const char *s = unique(kc, base, v->id);
  if (!s) return FU_ERR_NOMEM;
  kc->names[v->id] = s;
  kc->vals[v->id] = v;
  return FU_OK;
}

static fu_status name_block(cu_kernel *kc, const fu_kblock *b) {
  fu_status st = FU_OK;
  for (const fu_kinst *in = b->first; in && st == FU_OK; in = in->next) {
    for (uint32_t i = 0; i < in->n_args && st == FU_OK; i++) {
      st = name_value(kc, in->args[i]);
      if (in->args[i]->id < kc->n_ids) kc->uses[in->args[i]->id]++;
    }
    for (uint32_t i = 0; i < in->n_results && st == FU_OK; i++) st = name_value(kc, in->results[i]);
    if (st == FU_OK && in->kind == FU_KI_FOR) st = name_block(kc, &in->u.loop.body);
    if (st == FU_OK && in->kind == FU_KI_IF) {
      st = name_block(kc, &in->u.branch.then_body);
      if (st == FU_OK) st = name_block(kc, &in->u.branch.else_body);
    }
  }
  return st;
}

fu_status cu_names_assign(cu_kernel *kc) {
  const fu_kernel *k = kc->k;
  kc->n_ids = k->next_kval_id ? k->next_kval_id : 1;
  kc->names = fu_mem_calloc(&kc->mod->alloc, kc->n_ids, sizeof *kc->names);
  kc->vals = fu_mem_calloc(&kc->mod->alloc, kc->n_ids, sizeof *kc->vals);
  kc->uses = fu_mem_calloc(&kc->mod->alloc, kc->n_ids, sizeof *kc->uses);
  if (!kc->names || !kc->vals || !kc->uses) return FU_ERR_NOMEM;
  /* the kernel's own name is taken too: a value must not hide it */
  if (k->name && !take(kc, k->name)) return FU_ERR_NOMEM;
  fu_status st = FU_OK;
  for (uint32_t i = 0; i < k->n_params && st == FU_OK; i++) st = name_value(kc, k->params[i]);
  if (st == FU_OK) st = name_block(kc, &k->body);
  return st;
}

const char *cu_name(const cu_kernel *kc, const fu_kval *v) {
  return v->id < kc->n_ids && kc->names[v->id] ? kc->names[v->id] : "?";
}

void cu_names_free(cu_kernel *kc) {
  fu_mem_free(&kc->mod->alloc, kc->names, kc->n_ids * sizeof *kc->names);
  fu_mem_free(&kc->mod->alloc, kc->vals, kc->n_ids * sizeof *kc->vals);
  fu_mem_free(&kc->mod->alloc, kc->uses, kc->n_ids * sizeof *kc->uses);
  fu_mem_free(&kc->mod->alloc, kc->taken, kc->taken_cap * sizeof *kc->taken);
  kc->names = NULL;
  kc->vals = NULL;
  kc->uses = NULL;
  kc->taken = NULL;
  kc->taken_cap = kc->n_taken = 0;
}
