// The sweep of fast_exp_ulps.sh; fu_exp is prepended from fuser-kir's output.
#include <cmath>
#include <cstdio>
#include <cstring>

struct worst {
  unsigned long long key; // error in millionths of an ulp << 32 | input bits
  unsigned long long flushed;
};

// The error of y against the exact r, in ulps of the f32 result (r
// rounded to f32: 2^(e - 23) for its exponent e).
__device__ double ulps(float y, double r) {
  int e;
  frexp((double)(float)r, &e);
  return fabs((double)y - r) / ldexp(1.0, e - 1 - 23);
}

__device__ void note(worst *w, double err, unsigned bits) {
  unsigned long long k = ((unsigned long long)(err * 1e6) << 32) | bits;
  atomicMax(&w->key, k);
}

// Every f32 bit pattern from lo to hi (inclusive) of one sign.
__global__ void sweep(unsigned lo, unsigned hi, worst *fast, worst *libm) {
  for (unsigned long long b = lo + blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; b <= hi;
       b += (unsigned long long)gridDim.x * blockDim.x) {
    unsigned bits = (unsigned)b;
    float x;
    memcpy(&x, &bits, 4);
    double r = exp((double)x);
    if (r < 0x1p-126 || r > 0x1.fffffep127) continue; // not a normal f32 result
    float y = fu_exp(x);
    if (y == 0.0f) atomicAdd(&fast->flushed, 1ull);
    note(fast, ulps(y, r), bits);
    note(libm, ulps(expf(x), r), bits);
  }
}

// The special inputs: infinities, NaN, overflow and underflow.
__global__ void specials(float *out) {
  const float in[6] = {INFINITY, -INFINITY, NAN, 100.0f, -110.0f, 0.0f};
  for (int i = 0; i < 6; i++) out[i] = fu_exp(in[i]);
}

static void report(const char *name, const worst &w) {
  unsigned bits = (unsigned)(w.key & 0xffffffffu);
  float x;
  memcpy(&x, &bits, 4);
  printf("%-24s max error %.3f ulps, at x = %.9g (0x%08x)\n", name, (double)(w.key >> 32) / 1e6, x, bits);
}

int main() {
  worst *w;
  if (cudaMallocManaged(&w, 2 * sizeof *w) != cudaSuccess) return 1;
  memset(w, 0, 2 * sizeof *w);
  float lo = -104.0f, hi = 89.0f;
  unsigned neg, pos;
  memcpy(&neg, &lo, 4);
  memcpy(&pos, &hi, 4);
  sweep<<<4096, 256>>>(0u, pos, &w[0], &w[1]);          // +0 .. 89
  sweep<<<4096, 256>>>(0x80000000u, neg, &w[0], &w[1]); // -0 .. -104
  if (cudaDeviceSynchronize() != cudaSuccess) {
    printf("fast_exp_ulps: the sweep failed\n");
    return 1;
  }
  float *sp;
  if (cudaMallocManaged(&sp, 6 * sizeof *sp) != cudaSuccess) return 1;
  specials<<<1, 1>>>(sp);
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  bool ok = std::isinf(sp[0]) && sp[0] > 0 && sp[1] == 0.0f && std::isnan(sp[2]) && std::isinf(sp[3]) &&
            sp[4] == 0.0f && sp[5] == 1.0f;
  printf("specials: exp(inf) %g, exp(-inf) %g, exp(nan) %g, exp(100) %g, exp(-110) %g, exp(0) %g: %s\n", sp[0],
         sp[1], sp[2], sp[3], sp[4], sp[5], ok ? "as IEEE" : "WRONG");
  report("fu_exp (fast path)", w[0]);
  report("expf (libdevice)", w[1]);
  printf("inputs whose exact result is a normal f32 but fu_exp gave 0: %llu\n", w[0].flushed);
  return ok ? 0 : 1;
}
