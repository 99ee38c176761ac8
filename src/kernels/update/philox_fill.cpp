#include "kernels/update/philox_fill.h"

#include "core/kernel_settings.h"

#include "kernels/update/philox.h"

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

// Philox4x32-10 of the 16·U counters (first + l, offset), l = 0 … 16U − 1, into q: per unit of
// sixteen blocks, the words x of its blocks, then y, z, w (philox4x32_10 in kernels/update/philox.h, lane by
// lane). Each 32-bit word lives in the low half of a 64-bit lane, eight blocks to a register:
// vpmuludq multiplies the low halves into the full 64-bit product, so a round is two products, two
// shifts (the high words down) and two three-input xors, with no shuffles; what the xors leave in the
// high halves is never read (vpmuludq ignores it) and the low words are packed at the end. 2U
// independent chains of eight blocks run side by side: one chain alone waits on the multiplier's
// latency every round.
template <int U>
SGMCMC_V4 void philox_units(uint64_t first, uint64_t key, uint64_t offset, uint32_t* q) {
  constexpr int S = 2 * U;  // chains of eight blocks
  const __m512i iota = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i z0 = _mm512_set1_epi64(static_cast<long long>(offset & 0xffffffffu));
  const __m512i w0 = _mm512_set1_epi64(static_cast<long long>(offset >> 32));
  __m512i x[S], y[S], z[S], w[S];
  for (int s = 0; s < S; ++s) {  // the 64-bit block number: its low word in x, its high word in y
    const __m512i b = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(first + 8 * s)), iota);
    x[s] = b;
    y[s] = _mm512_srli_epi64(b, 32);
    z[s] = z0;
    w[s] = w0;
  }
  const __m512i m0 = _mm512_set1_epi64(0xD2511F53ll);
  const __m512i m1 = _mm512_set1_epi64(0xCD9E8D57ll);
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
#pragma GCC unroll 10
  for (int r = 0; r < 10; ++r) {
    const __m512i kx = _mm512_set1_epi32(static_cast<int>(k0)), kz = _mm512_set1_epi32(static_cast<int>(k1));
#pragma GCC unroll 8
    for (int s = 0; s < S; ++s) {
      const __m512i p0 = _mm512_mul_epu32(x[s], m0);  // lo0 in the low half, hi0 in the high half
      const __m512i p1 = _mm512_mul_epu32(z[s], m1);
      // 0x96: a ^ b ^ c
      x[s] = _mm512_ternarylogic_epi32(_mm512_srli_epi64(p1, 32), y[s], kx, 0x96);
      y[s] = p1;
      z[s] = _mm512_ternarylogic_epi32(_mm512_srli_epi64(p0, 32), w[s], kz, 0x96);
      w[s] = p0;
    }
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  // the low words of two chains side by side: a unit's sixteen blocks in one register per word
  const __m512i lows = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  for (int u = 0; u < U; ++u) {
    _mm512_storeu_si512(q + 64 * u, _mm512_permutex2var_epi32(x[2 * u], lows, x[2 * u + 1]));
    _mm512_storeu_si512(q + 64 * u + 16, _mm512_permutex2var_epi32(y[2 * u], lows, y[2 * u + 1]));
    _mm512_storeu_si512(q + 64 * u + 32, _mm512_permutex2var_epi32(z[2 * u], lows, z[2 * u + 1]));
    _mm512_storeu_si512(q + 64 * u + 48, _mm512_permutex2var_epi32(w[2 * u], lows, w[2 * u + 1]));
  }
}

// Box–Muller of sixteen blocks' words (q as philox_units leaves it) into z[0 … 63], block by block in
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

// U units of sixteen blocks: Philox, then Box–Muller unit by unit.
template <int U>
SGMCMC_V4 void fill_units(float* z, uint64_t first_block, uint64_t key, uint64_t offset) {
  alignas(64) uint32_t q[64 * U];
  philox_units<U>(first_block, key, offset, q);
  for (int u = 0; u < U; ++u) box_muller16(q + 64 * u, z + 64 * u);
}

// Two units at a time (four chains: their sixteen state registers and the constants fit the 32 zmm
// registers; eight chains spill ~250 vectors to the stack per 64 blocks, and one chain waits on the
// multiplier), then single units. One Zen 4 core, 1.28M normals: 1.17 ms with four units at a time,
// 1.05 ms with two, 1.16 with one (docs/performance.md).
__attribute__((target("arch=x86-64-v4"))) int64_t fill16(float* z, int64_t nblocks, uint64_t first_block,
                                                         uint64_t key, uint64_t offset) {
  int64_t j = 0;
  for (; j + 32 <= nblocks; j += 32) fill_units<2>(z + 4 * j, first_block + static_cast<uint64_t>(j), key, offset);
  for (; j + 16 <= nblocks; j += 16) fill_units<1>(z + 4 * j, first_block + static_cast<uint64_t>(j), key, offset);
  return j;
}

#undef SGMCMC_V4

}  // namespace

bool philox_avx512_available() {
  static const bool on = __builtin_cpu_supports("x86-64-v4");
  return on;
}

int64_t philox_fill_avx512(float* z, int64_t nblocks, uint64_t first_block, uint64_t key, uint64_t offset) {
  // kernels.noise: portable runs the portable loop alone (the same bits, for A/B timings)
  return philox_avx512_available() && !kernel_settings().noise_portable ? fill16(z, nblocks, first_block, key, offset) : 0;
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
