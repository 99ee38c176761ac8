// The order in which the pass's tiled launches (kernels/cuda_mlp/mlp_forward_head.h, kernels/cuda_mlp/weight_grad.h) sum one
// output over a reduction of length len, for their CPU references. Host code (std::fma: compile the caller
// with -ffp-contract=off).
#pragma once

#include <cmath>
#include <cstdint>

namespace sgmcmc::kernels {

// The reduction runs in chunks of kChunk; in every chunk warp w takes the kChunk / kWarps consecutive
// indices starting at w·(kChunk / kWarps), so warp w's partial sum is the fma chain p = fma(a_q, b_q, p)
// over its indices of every chunk in increasing order from 0, indices q ≥ len contributing fma(0, 0, p) (the
// kernels stage them as zeros); the warps' sums are then added in warp order: ((p_0 + p_1) + …) + p_{kWarps−1}.
// term(q) returns the pair (a_q, b_q) for q < len.
template <int kChunk, int kWarps, typename T, typename Term>
T warp_split_sum(int64_t len, Term term) {
  constexpr int kPerWarp = kChunk / kWarps;
  const int64_t chunks = (len + kChunk - 1) / kChunk;
  T z = 0;
  for (int w = 0; w < kWarps; ++w) {
    T p = 0;
    for (int64_t c = 0; c < chunks; ++c)
      for (int64_t q = c * kChunk + w * kPerWarp; q < c * kChunk + (w + 1) * kPerWarp; ++q) {
        if (q < len) {
          const auto [a, b] = term(q);
          p = std::fma(a, b, p);
        } else {
          p = std::fma(T(0), T(0), p);
        }
      }
    z = w == 0 ? p : z + p;
  }
  return z;
}

}  // namespace sgmcmc::kernels
