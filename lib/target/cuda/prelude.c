/* fuser cuda target: the helpers a module's CUDA C calls.
 *
 * What CUDA C has no single function for, with the LLVM path's semantics,
 * written once at the top of the module and only when a kernel uses it, so
 * the kernels read as one statement per kernel-IR instruction.  The 16-bit
 * float types come from CUDA's own headers (cuda_fp16.h, cuda_bf16.h). */
#include "internal.h"

static const char vec_text[] =
    "// N consecutive elements as one aligned access (ld/st .v2, .v4 or one wider scalar)\n"
    "template <typename T, int N> struct __align__(sizeof(T) * N) fu_vec { T e[N]; };\n";

static const char ldcs_text[] =
    "// a load of a parameter read once (`stream`): ld.global.cs, which L2 evicts first, of the\n"
    "// unsigned type __ldcs takes for the value's size, its bits copied into the value\n"
    "template <int N> struct fu_bits;\n"
    "template <> struct fu_bits<16> { typedef uint4 t; };\n"
    "template <> struct fu_bits<8> { typedef uint2 t; };\n"
    "template <> struct fu_bits<4> { typedef unsigned t; };\n"
    "template <> struct fu_bits<2> { typedef unsigned short t; };\n"
    "template <> struct fu_bits<1> { typedef unsigned char t; };\n"
    "template <typename T> __device__ __forceinline__ T fu_ldcs(const T *p) {\n"
    "  typedef typename fu_bits<sizeof(T)>::t U;\n"
    "  U u = __ldcs(reinterpret_cast<const U *>(p));\n"
    "  T r;\n"
    "  memcpy(&r, &u, sizeof(T));\n"
    "  return r;\n"
    "}\n";

static const char maxmin_text[] =
    "// maximum and minimum that propagate NaN (fmaxf and fminf return the other operand)\n"
    "// (on sm_80 and later max.NaN.f32, as the LLVM backend's llvm.maximum.f32)\n"
    "#if __CUDA_ARCH__ >= 800\n"
    "__device__ __forceinline__ float fu_maximum(float a, float b) {\n"
    "  float r;\n"
    "  asm(\"max.NaN.f32 %0, %1, %2;\" : \"=f\"(r) : \"f\"(a), \"f\"(b));\n"
    "  return r;\n"
    "}\n"
    "__device__ __forceinline__ float fu_minimum(float a, float b) {\n"
    "  float r;\n"
    "  asm(\"min.NaN.f32 %0, %1, %2;\" : \"=f\"(r) : \"f\"(a), \"f\"(b));\n"
    "  return r;\n"
    "}\n"
    "#else\n"
    "__device__ __forceinline__ float fu_maximum(float a, float b) { return isnan(a) || isnan(b) ? a + b : fmaxf(a, b); }\n"
    "__device__ __forceinline__ float fu_minimum(float a, float b) { return isnan(a) || isnan(b) ? a + b : fminf(a, b); }\n"
    "#endif\n"
    "__device__ __forceinline__ double fu_maximum(double a, double b) { return isnan(a) || isnan(b) ? a + b : fmax(a, b); }\n"
    "__device__ __forceinline__ double fu_minimum(double a, double b) { return isnan(a) || isnan(b) ? a + b : fmin(a, b); }\n";

static const char rem_f_text[] =
    "// remainder with the divisor's sign (Python's %)\n"
    "__device__ __forceinline__ float fu_remainder(float a, float b) {\n"
    "  float r = fmodf(a, b);\n"
    "  return (r < 0.0f || r > 0.0f) && (r < 0.0f) != (b < 0.0f) ? r + b : r;\n"
    "}\n"
    "__device__ __forceinline__ double fu_remainder(double a, double b) {\n"
    "  double r = fmod(a, b);\n"
    "  return (r < 0.0 || r > 0.0) && (r < 0.0) != (b < 0.0) ? r + b : r;\n"
    "}\n";

static const char rem_i_text[] =
    "// remainder with the divisor's sign (Python's %)\n"
    "__device__ __forceinline__ int fu_remainder(int a, int b) { int r = a % b; return r != 0 && (r ^ b) < 0 ? r + b : r; }\n"
    "__device__ __forceinline__ long long fu_remainder(long long a, long long b) {\n"
    "  long long r = a % b;\n"
    "  return r != 0 && (r ^ b) < 0 ? r + b : r;\n"
    "}\n";

static const char ipow_text[] =
    "// integer power by squaring, wrapping; a negative exponent gives 1/b^-e truncated (1, -1 or 0)\n"
    "template <typename T, typename U> __device__ __forceinline__ T fu_ipow_wrap(T b, T e) {\n"
    "  if (e < 0) return b == 1 ? 1 : b == -1 ? ((e & 1) ? -1 : 1) : 0;\n"
    "  U r = 1, x = (U)b;\n"
    "  for (; e != 0; e >>= 1) {\n"
    "    if (e & 1) r *= x;\n"
    "    x *= x;\n"
    "  }\n"
    "  return (T)r;\n"
    "}\n"
    "__device__ __forceinline__ int fu_ipow(int b, int e) { return fu_ipow_wrap<int, unsigned>(b, e); }\n"
    "__device__ __forceinline__ long long fu_ipow(long long b, long long e) {\n"
    "  return fu_ipow_wrap<long long, unsigned long long>(b, e);\n"
    "}\n";

static const char int_bits_text[] =
    "// gcd of magnitudes (gcd(0, 0) = 0), and shifts by PyTorch's rule: a count\n"
    "// outside [0, bits) gives 0 (left, logical right) or the sign (right); the\n"
    "// logical shift moves the bits of a at its own width, zeros in\n"
    "template <typename T, typename U> __device__ __forceinline__ T fu_gcd_of(T a, T b) {\n"
    "  U x = a < 0 ? (U)0 - (U)a : (U)a, y = b < 0 ? (U)0 - (U)b : (U)b;\n"
    "  while (y != 0) {\n"
    "    U t = x % y;\n"
    "    x = y;\n"
    "    y = t;\n"
    "  }\n"
    "  return (T)x;\n"
    "}\n"
    "__device__ __forceinline__ int fu_gcd(int a, int b) { return fu_gcd_of<int, unsigned>(a, b); }\n"
    "__device__ __forceinline__ long long fu_gcd(long long a, long long b) {\n"
    "  return fu_gcd_of<long long, unsigned long long>(a, b);\n"
    "}\n"
    "template <typename T, typename U> __device__ __forceinline__ T fu_shl(T a, T n) {\n"
    "  return (U)n >= 8 * sizeof(T) ? (T)0 : (T)((U)a << n);\n"
    "}\n"
    "template <typename T, typename U> __device__ __forceinline__ T fu_shr(T a, T n) {\n"
    "  return (U)n >= 8 * sizeof(T) ? (a < 0 ? (T)-1 : (T)0) : (T)(a >> n);\n"
    "}\n"
    "template <typename T, typename U> __device__ __forceinline__ T fu_lshr(T a, T n) {\n"
    "  return (U)n >= 8 * sizeof(T) ? (T)0 : (T)((U)a >> n);\n"
    "}\n";

static const char lerp_text[] =
    "// PyTorch's lerp: exact at both ends and monotonic\n"
    "__device__ __forceinline__ float fu_lerp(float a, float b, float w) {\n"
    "  float d = b - a;\n"
    "  return fabsf(w) < 0.5f ? a + w * d : b - d * (1.0f - w);\n"
    "}\n"
    "__device__ __forceinline__ double fu_lerp(double a, double b, double w) {\n"
    "  double d = b - a;\n"
    "  return fabs(w) < 0.5 ? a + w * d : b - d * (1.0 - w);\n"
    "}\n";

static const char clamp_text[] =
    "// clamp that propagates NaN in x (a NaN bound is ignored, as in PyTorch's kernels)\n"
    "template <typename T> __device__ __forceinline__ T fu_clamp(T x, T lo, T hi) {\n"
    "  T y = x < lo ? lo : x;\n"
    "  return y > hi ? hi : y;\n"
    "}\n";

static const char rng_text[] =
    "// uniform and normal: Philox4x32-10 keyed by the element's linear index, one IEEE\n"
    "// operation per step of the interpreter's definition (fma where it has one)\n"
    "__device__ __forceinline__ uint4 fu_philox(unsigned long long seed, unsigned long long sub,\n"
    "                                           unsigned long long off) {\n"
    "  unsigned c0 = (unsigned)off, c1 = (unsigned)(off >> 32), c2 = (unsigned)sub, c3 = (unsigned)(sub >> 32);\n"
    "  unsigned k0 = (unsigned)seed, k1 = (unsigned)(seed >> 32);\n"
    "  for (int r = 0; r < 10; r++) {\n"
    "    if (r) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }\n"
    "    unsigned long long p0 = 0xD2511F53ull * c0, p1 = 0xCD9E8D57ull * c2;\n"
    "    unsigned n0 = (unsigned)(p1 >> 32) ^ c1 ^ k0, n2 = (unsigned)(p0 >> 32) ^ c3 ^ k1;\n"
    "    c1 = (unsigned)p1;\n"
    "    c3 = (unsigned)p0;\n"
    "    c0 = n0;\n"
    "    c2 = n2;\n"
    "  }\n"
    "  return make_uint4(c0, c1, c2, c3);\n"
    "}\n"
    "__device__ __forceinline__ unsigned fu_word(uint4 r, long long i) { return i == 0 ? r.x : i == 1 ? r.y : i == 2 ? r.z : r.w; }\n"
    "__device__ __forceinline__ float fu_raw01f(unsigned x) { return (float)x * (1.0f / 4294967296.0f) + (0.5f / 4294967296.0f); }\n"
    "__device__ __forceinline__ float fu_u01f(unsigned x) { float u = fu_raw01f(x); return u == 1.0f ? 0.0f : u; }\n"
    "__device__ __forceinline__ double fu_u01(unsigned x, unsigned y) {\n"
    "  unsigned long long z = (unsigned long long)x ^ ((unsigned long long)y << 21);\n"
    "  double u = (double)z * (1.0 / 9007199254740992.0) + (0.5 / 9007199254740992.0);\n"
    "  return u == 1.0 ? 0.0 : u;\n"
    "}\n"
    "// narrow: 0 f32, 1 f16, 2 bf16 (the value rounded to it, widened back)\n"
    "__device__ __forceinline__ float fu_narrow(int narrow, float x) {\n"
    "  return narrow == 1 ? __half2float(__float2half_rn(x)) : narrow == 2 ? __bfloat162float(__float2bfloat16_rn(x)) : x;\n"
    "}\n"
    "__device__ __forceinline__ float fu_rng_f32(int normal, int narrow, float a, float b, long long seed, long long off,\n"
    "                                            long long i) {\n"
    "  uint4 r = fu_philox(seed, (unsigned long long)i >> 2, off);\n"
    "  long long c = i & 3;\n"
    "  if (!normal) {\n"
    "    if (!narrow) return __fmaf_rn(b - a, fu_u01f(fu_word(r, c)), a);\n"
    "    float v = fu_narrow(narrow, __fmaf_rn(b - a, fu_raw01f(fu_word(r, c)), a));\n"
    "    return v == fu_narrow(narrow, b) ? fu_narrow(narrow, a) : v;\n"
    "  }\n"
    "  long long p = c & 2;\n"
    "  float u = fu_u01f(fu_word(r, p)), v = fu_u01f(fu_word(r, p | 1)) * 6.2831855f;\n"
    "  float n = __fsqrt_rn(-2.0f * logf(u)) * ((c & 1) ? cosf(v) : sinf(v));\n"
    "  return fu_narrow(narrow, __fmaf_rn(n, b, a));\n"
    "}\n"
    "__device__ __forceinline__ double fu_rng_f64(int normal, double a, double b, long long seed, long long off,\n"
    "                                             long long i) {\n"
    "  uint4 r = fu_philox(seed, (unsigned long long)i >> 1, off);\n"
    "  long long c = i & 1;\n"
    "  if (!normal) return __fma_rn(b - a, c ? fu_u01(r.z, r.w) : fu_u01(r.x, r.y), a);\n"
    "  double u = fu_u01(r.x, r.y), v = fu_u01(r.z, r.w) * 6.2831853071795860;\n"
    "  double n = __dsqrt_rn(-2.0 * log(u)) * (c ? cos(v) : sin(v));\n"
    "  return __fma_rn(n, b, a);\n"
    "}\n";

static const char rcp_text[] =
    "// 1/x within 1 ulp, subnormals kept (rcp.approx.f32), as the LLVM backend's\n"
    "__device__ __forceinline__ float fu_rcp(float x) {\n"
    "  float r;\n"
    "  asm(\"rcp.approx.f32 %0, %1;\" : \"=f\"(r) : \"f\"(x));\n"
    "  return r;\n"
    "}\n";

/* The LLVM backend's f32 exp (lib/target/llvm/fast_math.c says why and
 * how accurate), operation for operation. */
static const char fast_exp_text[] =
    "// e^x: 2^t of t = x log2(e) rounded, times 1 + e ln 2 for what the rounding lost\n"
    "__device__ __forceinline__ float fu_exp(float x) {\n"
    "  float t = __fmul_rn(x, 0x1.715476p+0f);\n"
    "  float e = __fmaf_rn(x, 0x1.4ae0cp-26f, __fmaf_rn(x, 0x1.715476p+0f, -t));\n"
    "  float p;\n"
    "  asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(p) : \"f\"(t));\n"
    "  return __fmul_rn(p, fmaxf(__fmaf_rn(e, 0x1.62e43p-1f, 1.0f), 0.5f));\n"
    "}\n";

/* The LLVM backend's f32 exp2 (fast_math.c): one ex2.approx.ftz. */
static const char fast_exp2_text[] =
    "// 2^x within 2 ulps, results below 2^-126 flushed to 0 (ex2.approx.ftz.f32)\n"
    "__device__ __forceinline__ float fu_exp2(float x) {\n"
    "  float p;\n"
    "  asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(p) : \"f\"(x));\n"
    "  return p;\n"
    "}\n";

/* Thread-block clusters, as inline PTX with the LLVM backend's
 * instructions (lib/target/llvm/codegen.c): the rank register, the
 * cluster barrier, and a load from another block's shared memory through
 * the generic address that mapa gives.  The barrier clobbers memory, so
 * NVVM moves no access across it; the mapped address is a plain pointer,
 * read with a generic ld. */
static const char cluster_text[] =
    "// thread-block clusters (sm_90): the block's rank in its cluster; a barrier over the\n"
    "// cluster (what its blocks stored to shared memory before it, all of them see after it);\n"
    "// element *p of the shared array's copy in the block of rank `rank` (mapa on the generic\n"
    "// address, then a generic load), as the LLVM backend's\n"
    "__device__ __forceinline__ unsigned fu_cluster_rank() {\n"
    "  unsigned r;\n"
    "  asm(\"mov.u32 %0, %%cluster_ctarank;\" : \"=r\"(r));\n"
    "  return r;\n"
    "}\n"
    "__device__ __forceinline__ void fu_cluster_sync() {\n"
    "  asm volatile(\"barrier.cluster.arrive.release.aligned;\\n\\tbarrier.cluster.wait.acquire.aligned;\" ::: \"memory\");\n"
    "}\n"
    "template <typename T> __device__ __forceinline__ T fu_ld_cta(const T *p, int rank) {\n"
    "  unsigned long long a;\n"
    "  asm(\"mapa.u64 %0, %1, %2;\" : \"=l\"(a) : \"l\"((unsigned long long)p), \"r\"(rank));\n"
    "  return *reinterpret_cast<const T *>(a);\n"
    "}\n";

void cu_prelude_write(fu_strbuf *out, unsigned used) {
  if (used & CU_H_FP16) fu_strbuf_puts(out, "#include <cuda_fp16.h>\n");
  if (used & CU_H_BF16) fu_strbuf_puts(out, "#include <cuda_bf16.h>\n");
  if (used & (CU_H_FP16 | CU_H_BF16)) fu_strbuf_putc(out, '\n');
  static const struct {
    unsigned bit;
    const char *text;
  } parts[] = {
      {CU_H_VEC, vec_text},   {CU_H_MAXMIN, maxmin_text}, {CU_H_REM_F, rem_f_text}, {CU_H_REM_I, rem_i_text},
      {CU_H_IPOW, ipow_text}, {CU_H_LERP, lerp_text},     {CU_H_CLAMP, clamp_text}, {CU_H_INT_BITS, int_bits_text},
      {CU_H_RNG, rng_text},   {CU_H_RCP, rcp_text},       {CU_H_LDCS, ldcs_text},
      {CU_H_EXP, fast_exp_text}, {CU_H_CLUSTER, cluster_text}, {CU_H_EXP2, fast_exp2_text},
  };
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
    if (used & parts[i].bit) {
      fu_strbuf_puts(out, parts[i].text);
      fu_strbuf_putc(out, '\n');
    }
}
