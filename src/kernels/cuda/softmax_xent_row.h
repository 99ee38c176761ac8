// One row of the categorical likelihood's loss and output gradient, for the CUDA kernel
// (softmax_xent_cuda.cu), on the host too so that tests/test_models.cpp checks it against the CPU path.
// For logits f [k], label y and scale s:
//   g_j = s·(softmax(f)_j − [j = y]),   returns −log softmax(f)_y = (m + log Σ_j e^{f_j − m}) − f_y,
// with m = max_j f_j (so every exponential is ≤ 1). Arithmetic in T (float32 on the GPU for float32
// logits, unlike the CPU path's float64 sums): the tolerance in the test is float32's.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/update/fused_elementwise.h"  // exp_hd, log_hd, SGMCMC_HD

namespace sgmcmc::kernels {

template <typename T>
SGMCMC_HD T softmax_xent_row(const T* f, int64_t y, int64_t k, T scale, T* g) {
  T m = f[0];
  for (int64_t j = 1; j < k; ++j) m = f[j] > m ? f[j] : m;
  T sum = 0;
  for (int64_t j = 0; j < k; ++j) {
    const T e = exp_hd(f[j] - m);
    g[j] = e;
    sum += e;
  }
  const T c = scale / sum;
  for (int64_t j = 0; j < k; ++j) g[j] *= c;
  g[y] -= scale;
  return (m + log_hd(sum)) - f[y];
}

}  // namespace sgmcmc::kernels
