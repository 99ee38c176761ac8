#include "models/relu_pool_avx512.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define SGMCMC_POOL_AVX512 1
#include <immintrin.h>
// the helpers below pass __m512 by value; they are always inlined into the x86-64-v4 functions, so
// GCC's note that this ABI differs without AVX-512 does not apply
#pragma GCC diagnostic ignored "-Wpsabi"
// GCC 12's avx512fintrin.h builds some intrinsics' unused pass-through operand from an uninitialised
// local and then warns about it where the intrinsic is inlined
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace sgmcmc::detail {

#if defined(SGMCMC_POOL_AVX512)
namespace {

#define SGMCMC_V4 __attribute__((target("arch=x86-64-v4"), always_inline)) inline

SGMCMC_V4 __mmask16 first_lanes(int n) { return static_cast<__mmask16>(n >= 16 ? 0xFFFF : (1u << n) - 1); }

// The first 2·len floats of p (len ≤ 16): even elements → e, odd → o.
SGMCMC_V4 void load_pairs(const float* p, int len, __m512* e, __m512* o) {
  const int n = 2 * len;
  const __m512 lo = _mm512_maskz_loadu_ps(first_lanes(n), p);
  const __m512 hi = _mm512_maskz_loadu_ps(first_lanes(n - 16 > 0 ? n - 16 : 0), p + 16);
  const __m512i ie = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i io = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  *e = _mm512_permutex2var_ps(lo, ie, hi);
  *o = _mm512_permutex2var_ps(lo, io, hi);
}

// Interleaved e[0], o[0], e[1], o[1], … (2·len floats) into p.
SGMCMC_V4 void store_pairs(float* p, int len, __m512 e, __m512 o) {
  const int n = 2 * len;
  const __m512i il = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i ih = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
  _mm512_mask_storeu_ps(p, first_lanes(n), _mm512_permutex2var_ps(e, il, o));
  _mm512_mask_storeu_ps(p + 16, first_lanes(n - 16 > 0 ? n - 16 : 0), _mm512_permutex2var_ps(e, ih, o));
}

// m, k ← v, kv where v > m or v is NaN (the scan's step; ATen's `val > maxval || isnan(val)`).
SGMCMC_V4 void scan(__m512 v, int kv, __m512* m, __m512i* k) {
  const __mmask16 t = _mm512_cmp_ps_mask(v, *m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  *m = _mm512_mask_blend_ps(t, *m, v);
  *k = _mm512_mask_blend_epi32(t, *k, _mm512_set1_epi32(kv));
}

SGMCMC_V4 void forward_row(const float* r0, const float* r1, float* y, uint8_t* arg, int64_t w) {
  for (int64_t j0 = 0; j0 < w; j0 += 16) {
    const int len = static_cast<int>(w - j0 < 16 ? w - j0 : 16);
    __m512 a, b, c, d;
    load_pairs(r0 + 2 * j0, len, &a, &b);
    load_pairs(r1 + 2 * j0, len, &c, &d);
    __m512 m = a;
    __m512i k = _mm512_setzero_si512();
    scan(b, 1, &m, &k);
    scan(c, 2, &m, &k);
    scan(d, 3, &m, &k);
    // relu: m > 0 or NaN passes (as torch::relu keeps NaN); position 4 where the output is 0
    const __mmask16 pass = _mm512_cmp_ps_mask(m, _mm512_setzero_ps(), _CMP_GT_OQ) | _mm512_cmp_ps_mask(m, m, _CMP_UNORD_Q);
    _mm512_mask_storeu_ps(y + j0, first_lanes(len), _mm512_maskz_mov_ps(pass, m));
    _mm512_mask_cvtepi32_storeu_epi8(arg + j0, first_lanes(len), _mm512_mask_blend_epi32(pass, _mm512_set1_epi32(4), k));
  }
}

// v where k = kv, else 0
SGMCMC_V4 __m512 where(__m512i k, int kv, __m512 v) {
  return _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(k, _mm512_set1_epi32(kv)), v);
}

SGMCMC_V4 void backward_row(const float* g, const uint8_t* arg, float* q0, float* q1, int64_t w) {
  for (int64_t j0 = 0; j0 < w; j0 += 16) {
    const int len = static_cast<int>(w - j0 < 16 ? w - j0 : 16);
    const __m512 v = _mm512_maskz_loadu_ps(first_lanes(len), g + j0);
    const __m512i k = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(first_lanes(len), arg + j0));
    store_pairs(q0 + 2 * j0, len, where(k, 0, v), where(k, 1, v));
    store_pairs(q1 + 2 * j0, len, where(k, 2, v), where(k, 3, v));
  }
}

#undef SGMCMC_V4

}  // namespace

bool relu_pool_avx512_available() {
  static const bool on = __builtin_cpu_supports("x86-64-v4");
  return on;
}

__attribute__((target("arch=x86-64-v4"))) void relu_pool_forward_avx512(const float* x, float* y, uint8_t* arg,
                                                                        int64_t p0, int64_t p1, int64_t H, int64_t W) {
  const int64_t h = H / 2, w = W / 2;
  for (int64_t p = p0; p < p1; ++p)
    for (int64_t i = 0; i < h; ++i) {
      const float* r0 = x + (p * H + 2 * i) * W;
      forward_row(r0, r0 + W, y + (p * h + i) * w, arg + (p * h + i) * w, w);
    }
}

__attribute__((target("arch=x86-64-v4"))) void relu_pool_backward_avx512(const float* gy, const uint8_t* arg, float* gx,
                                                                         int64_t p0, int64_t p1, int64_t H, int64_t W) {
  const int64_t h = H / 2, w = W / 2;
  for (int64_t p = p0; p < p1; ++p)
    for (int64_t i = 0; i < h; ++i) {
      float* q0 = gx + (p * H + 2 * i) * W;
      backward_row(gy + (p * h + i) * w, arg + (p * h + i) * w, q0, q0 + W, w);
    }
}
#else
bool relu_pool_avx512_available() { return false; }
void relu_pool_forward_avx512(const float*, float*, uint8_t*, int64_t, int64_t, int64_t, int64_t) {}
void relu_pool_backward_avx512(const float*, const uint8_t*, float*, int64_t, int64_t, int64_t, int64_t) {}
#endif

}  // namespace sgmcmc::detail
