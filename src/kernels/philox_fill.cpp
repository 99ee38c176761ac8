#include "kernels/philox_fill.h"

#include "kernels/philox.h"

#include <cstdlib>
#include <string>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define SGMCMC_PHILOX_AVX512 1
#include <immintrin.h>
// GCC 12's avx512fintrin.h builds some intrinsics' unused pass-through operand from an uninitialised
// local (_mm512_undefined_epi32) and then warns about it where the intrinsic is inlined.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace sgmcmc::kernels {
namespace detail {

// Normals 4·first_block … 4·(first_block + nblocks) − 1 of the stream into z. Compiled for the
// baseline ISA, AVX2+FMA and x86-64-v4, chosen at load time.
#if defined(SGMCMC_PHILOX_AVX512)
__attribute__((target_clones("default", "arch=haswell", "arch=x86-64-v4")))
#endif
void philox_fill_portable(float* z, int64_t nblocks, uint64_t first_block, uint64_t key, uint64_t offset) {
  for (int64_t j = 0; j < nblocks; ++j) {
    const Normal4 r = philox_normal4(key, offset, first_block + static_cast<uint64_t>(j));
    z[4 * j] = r.a;
    z[4 * j + 1] = r.b;
    z[4 * j + 2] = r.c;
    z[4 * j + 3] = r.d;
  }
}

#if defined(SGMCMC_PHILOX_AVX512)
namespace {

#define SGMCMC_V4 __attribute__((target("arch=x86-64-v4"), always_inline)) inline

// Sixteen 32×32-bit products: the low and the high words.
SGMCMC_V4 void mulhilo16(__m512i a, __m512i m, __m512i* lo, __m512i* hi) {
  const __m512i even = _mm512_mul_epu32(a, m);                         // lanes 0, 2, …: 64-bit products
  const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m);  // lanes 1, 3, …
  *hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
  *lo = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
}

// Philox4x32-10 of the sixteen counters (first + l, offset), l = 0 … 15, into q: the words x of the
// sixteen blocks, then y, z, w (philox4x32_10 in kernels/philox.h, lane by lane).
SGMCMC_V4 void philox16(uint64_t first, uint64_t key, uint64_t offset, uint32_t* q) {
  const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i base = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(first)));
  __m512i x = _mm512_add_epi32(base, iota);
  const __mmask16 carry = _mm512_cmplt_epu32_mask(x, base);  // the low word wrapped: high word + 1
  const __m512i high = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(first >> 32)));
  __m512i y = _mm512_mask_add_epi32(high, carry, high, _mm512_set1_epi32(1));
  __m512i z = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(offset)));
  __m512i w = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(offset >> 32)));
  const __m512i m0 = _mm512_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m512i m1 = _mm512_set1_epi32(static_cast<int>(0xCD9E8D57u));
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
#pragma GCC unroll 10
  for (int r = 0; r < 10; ++r) {
    __m512i lo0, hi0, lo1, hi1;
    mulhilo16(x, m0, &lo0, &hi0);
    mulhilo16(z, m1, &lo1, &hi1);
    // 0x96: a ^ b ^ c
    x = _mm512_ternarylogic_epi32(hi1, y, _mm512_set1_epi32(static_cast<int>(k0)), 0x96);
    y = lo1;
    z = _mm512_ternarylogic_epi32(hi0, w, _mm512_set1_epi32(static_cast<int>(k1)), 0x96);
    w = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  _mm512_storeu_si512(q, x);
  _mm512_storeu_si512(q + 16, y);
  _mm512_storeu_si512(q + 32, z);
  _mm512_storeu_si512(q + 48, w);
}

// Box–Muller of sixteen blocks' words (q as philox16 leaves it) into z[0 … 63], block by block in
// order: the arithmetic of philox_normal4, which the compiler vectorizes sixteen wide.
SGMCMC_V4 void box_muller16(const uint32_t* q, float* z) {
  for (int j = 0; j < 16; ++j) {
    const Normal4 r = box_muller4(q[j], q[16 + j], q[32 + j], q[48 + j]);
    z[4 * j] = r.a;
    z[4 * j + 1] = r.b;
    z[4 * j + 2] = r.c;
    z[4 * j + 3] = r.d;
  }
}

#undef SGMCMC_V4

__attribute__((target("arch=x86-64-v4"))) int64_t fill16(float* z, int64_t nblocks, uint64_t first_block,
                                                         uint64_t key, uint64_t offset) {
  alignas(64) uint32_t q[64];
  int64_t j = 0;
  for (; j + 16 <= nblocks; j += 16) {
    philox16(first_block + static_cast<uint64_t>(j), key, offset, q);
    box_muller16(q, z + 4 * j);
  }
  return j;
}

}  // namespace

bool philox_avx512_available() {
  static const bool on = [] {
    const char* env = std::getenv("SGMCMC_NOISE");  // "portable": the portable loop only (A/B timings)
    return __builtin_cpu_supports("x86-64-v4") && !(env && std::string(env) == "portable");
  }();
  return on;
}

int64_t philox_fill_avx512(float* z, int64_t nblocks, uint64_t first_block, uint64_t key, uint64_t offset) {
  return philox_avx512_available() ? fill16(z, nblocks, first_block, key, offset) : 0;
}
#else
bool philox_avx512_available() { return false; }
int64_t philox_fill_avx512(float*, int64_t, uint64_t, uint64_t, uint64_t) { return 0; }
#endif

}  // namespace detail

void philox_fill(float* z, int64_t nblocks, uint64_t first_block, uint64_t key, uint64_t offset) {
  const int64_t done = detail::philox_fill_avx512(z, nblocks, first_block, key, offset);
  if (done < nblocks)
    detail::philox_fill_portable(z + 4 * done, nblocks - done, first_block + static_cast<uint64_t>(done), key, offset);
}

}  // namespace sgmcmc::kernels
