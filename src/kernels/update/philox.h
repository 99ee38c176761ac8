// Counter-based Gaussian noise shared by the CPU and CUDA fused updates.
//
// Philox4x32-10 (J. K. Salmon, M. A. Moraes, R. O. Dror, D. E. Shaw, "Parallel random numbers: as
// easy as 1, 2, 3", SC 2011): a bijection of a 128-bit counter under a 64-bit key. Element i of a
// buffer gets its standard normal from counter (i / 4, offset) — four normals per Philox call, by
// two Box–Muller transforms — so the noise of an element depends only on (key, offset, i): not on
// the device, the thread count or the launch shape. The CPU and CUDA kernels use the functions
// below unchanged, so the same key gives the same noise on both (to the last bits of the
// transcendental functions).
//
// Box–Muller: u1 = (x1 + ½)·2⁻³² ∈ (0, 1) never 0, so |z| ≤ sqrt(−2 ln 2⁻³³) ≈ 6.8; r = sqrt(−2 ln u1),
// φ = 2π·u2, (z1, z2) = (r cos φ, r sin φ). log, sin and cos are branch-free float polynomials (the
// Cephes single-precision forms), so the CPU loop vectorizes; tests/test_fused.cpp checks them
// against std:: on a grid (max error 2e-7 absolute for sin/cos, 3e-7 relative for log) and the
// noise's moments and tails.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define SGMCMC_HD __host__ __device__ __forceinline__
#else
#define SGMCMC_HD inline __attribute__((always_inline))
#endif

namespace sgmcmc::kernels {

SGMCMC_HD uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  __builtin_memcpy(&u, &f, sizeof u);
  return u;
#endif
}
SGMCMC_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  __builtin_memcpy(&f, &u, sizeof f);
  return f;
#endif
}
SGMCMC_HD float sqrtf_hd(float x) {
#if defined(__CUDA_ARCH__)
  return sqrtf(x);
#else
  return __builtin_sqrtf(x);
#endif
}

// c ? a : b on the bits (a mask select): compilers keep it branch-free, where a float `?:` next to
// arithmetic is often turned into control flow that stops a loop from vectorizing.
SGMCMC_HD float select_bits(bool c, float a, float b) {
  const uint32_t m = 0u - static_cast<uint32_t>(c);
  return bits_float((float_bits(a) & m) | (float_bits(b) & ~m));
}

struct Uint4 {
  uint32_t x, y, z, w;
};

SGMCMC_HD uint32_t mulhilo32(uint32_t a, uint32_t b, uint32_t* hi) {
  const uint64_t p = static_cast<uint64_t>(a) * static_cast<uint64_t>(b);
  *hi = static_cast<uint32_t>(p >> 32);
  return static_cast<uint32_t>(p);
}

// Philox4x32 with 10 rounds (Random123's philox4x32_10).
SGMCMC_HD Uint4 philox4x32_10(Uint4 c, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
#if defined(__CUDACC__)
#pragma unroll
#elif defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 10
#endif
  for (int r = 0; r < 10; ++r) {
    uint32_t hi0, hi1;
    const uint32_t lo0 = mulhilo32(kM0, c.x, &hi0);
    const uint32_t lo1 = mulhilo32(kM1, c.z, &hi1);
    c = Uint4{hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0};
    k0 += kW0;
    k1 += kW1;
  }
  return c;
}

// ln(x) for finite x > 0 (Cephes logf): x = m·2^e with m ∈ [√½, √2), polynomial in m − 1.
SGMCMC_HD float fast_logf(float x) {
  const uint32_t bits = float_bits(x);
  int e = static_cast<int>((bits >> 23) & 0xffu) - 126;  // x = m·2^e, m ∈ [0.5, 1)
  float m = bits_float((bits & 0x007fffffu) | 0x3f000000u);
  const bool small = m < 0.707106781186547524f;
  e -= small ? 1 : 0;
  // m ← 2m − 1 if small else m − 1 (both exact), the select done on the bits so that the loop has
  // no branches and vectorizes (the compiler will not if-convert float arithmetic that may trap).
  const float extra = bits_float(float_bits(m) & (0u - static_cast<uint32_t>(small)));
  m = (m - 1.0f) + extra;
  const float z = m * m;
  float y = 7.0376836292e-2f;
  y = y * m - 1.1514610310e-1f;
  y = y * m + 1.1676998740e-1f;
  y = y * m - 1.2420140846e-1f;
  y = y * m + 1.4249322787e-1f;
  y = y * m - 1.6668057665e-1f;
  y = y * m + 2.0000714765e-1f;
  y = y * m - 2.4999993993e-1f;
  y = y * m + 3.3333331174e-1f;
  y = y * m * z;
  const float fe = static_cast<float>(e);
  y += -2.12194440e-4f * fe;
  y += -0.5f * z;
  return m + y + 0.693359375f * fe;
}

// e^x for float x (Cephes expf): x = n ln2 + r, |r| ≤ ln2/2, polynomial in r, times 2^n built in the
// exponent bits. x is clamped to [−87.3, 88.7] (results below 1.2e-38 become 1.2e-38; above, +inf is
// not produced). Branch-free, so loops over it vectorize; tests/test_fused.cpp bounds its error.
SGMCMC_HD float fast_expf(float x) {
  x = select_bits(x < -87.3365447505531f, -87.3365447505531f, x);
  x = select_bits(x > 88.7228391116729f, 88.7228391116729f, x);
  const float t = x * 1.44269504088896341f + 0.5f;
  int n = static_cast<int>(t);
  n -= (t < static_cast<float>(n)) ? 1 : 0;  // floor
  const float fn = static_cast<float>(n);
  float r = x - fn * 0.693359375f;
  r = r - fn * -2.12194440e-4f;
  const float z = r * r;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * z + r + 1.0f;
  return y * bits_float(static_cast<uint32_t>(n + 127) << 23);
}

// sin(2πt) and cos(2πt) for t ∈ [0, 1): octant reduction (exact in t), then Cephes' sinf/cosf
// polynomials on [−π/4, π/4].
SGMCMC_HD void sincos_2pi(float t, float* s, float* c) {
  const float q = t * 4.0f;                         // quadrant coordinate in [0, 4)
  const int k = static_cast<int>(q + 0.5f);         // nearest quadrant centre 0..4
  const float x = (q - static_cast<float>(k)) * 1.57079632679489662f;  // in [−π/4, π/4]
  const float z = x * x;
  float sp = -1.9515295891e-4f;
  sp = sp * z + 8.3321608736e-3f;
  sp = sp * z - 1.6666654611e-1f;
  const float sx = sp * z * x + x;
  float cp = 2.443315711809948e-5f;
  cp = cp * z - 1.388731625493765e-3f;
  cp = cp * z + 4.166664568298827e-2f;
  const float cx = cp * z * z - 0.5f * z + 1.0f;
  // rotate by k quadrants: (sin, cos)(x + kπ/2) = (±, ±)(sx or cx, cx or sx), done on the bits
  // (a mask select and a sign-bit xor), so the loop has no branches and vectorizes
  const uint32_t swap = 0u - static_cast<uint32_t>(k & 1);  // all ones if k is odd
  const uint32_t bs = float_bits(sx), bc = float_bits(cx);
  const uint32_t s_sign = static_cast<uint32_t>((k >> 1) & 1) << 31;
  const uint32_t c_sign = static_cast<uint32_t>(((k + 1) >> 1) & 1) << 31;
  *s = bits_float(((bs & ~swap) | (bc & swap)) ^ s_sign);
  *c = bits_float(((bc & ~swap) | (bs & swap)) ^ c_sign);
}

// Four standard normals from one Philox block's four words (x, y, z, w): two Box–Muller transforms.
struct Normal4 {
  float a, b, c, d;
};
SGMCMC_HD Normal4 box_muller4(uint32_t x, uint32_t y, uint32_t z, uint32_t w) {
  constexpr float k2m32 = 2.3283064365386963e-10f;  // 2^-32
  const float u1 = (static_cast<float>(x) + 0.5f) * k2m32;
  const float u2 = static_cast<float>(y) * k2m32;
  const float u3 = (static_cast<float>(z) + 0.5f) * k2m32;
  const float u4 = static_cast<float>(w) * k2m32;
  // u1, u3 may round up to 1.0f (ln = 0, r = 0); u2, u4 too: sincos_2pi(1) = sincos_2pi(0) by the
  // quadrant wrap (k & 3).
  const float l1 = fast_logf(u1), l3 = fast_logf(u3);
  const float r1 = sqrtf_hd(-2.0f * bits_float(float_bits(l1) & (0u - static_cast<uint32_t>(l1 < 0.0f))));
  const float r2 = sqrtf_hd(-2.0f * bits_float(float_bits(l3) & (0u - static_cast<uint32_t>(l3 < 0.0f))));
  float s1, c1, s2, c2;
  sincos_2pi(u2, &s1, &c1);
  sincos_2pi(u4, &s2, &c2);
  return Normal4{r1 * c1, r1 * s1, r2 * c2, r2 * s2};
}

// Four standard normals from one Philox block: counter (block, offset), key (key).
SGMCMC_HD Normal4 philox_normal4(uint64_t key, uint64_t offset, uint64_t block) {
  const Uint4 ctr{static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                  static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32)};
  const Uint4 r = philox4x32_10(ctr, static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32));
  return box_muller4(r.x, r.y, r.z, r.w);
}

}  // namespace sgmcmc::kernels
