// Rows [0, n) of a [n, k] block in parallel tasks of `grain` rows, each task with its own float64
// column sums, for the fused backward passes that also produce a bias gradient (softmax_xent.cpp,
// activation_backward.cpp). fn(r0, r1, colsum) handles rows [r0, r1), adds their columns into
// colsum (k entries; nullptr when `bias_grad` is undefined) and returns its share of a float64 total.
// Afterwards bias_grad[j] += Σ_tasks colsum[j]; the total is returned. One task runs on the calling
// thread (at::parallel_for does not open a region for a single iteration); an exception thrown by
// fn reaches the caller. The including file must be compiled with OpenMP (CMakeLists.txt's list).
#pragma once

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <vector>

namespace sgmcmc {

template <typename T, typename Fn>
double rows_with_column_sums(int64_t n, int64_t k, int64_t grain, const torch::Tensor& bias_grad, const Fn& fn) {
  const int64_t tasks = (n + grain - 1) / grain;
  std::vector<double> part(tasks, 0.0), colsum(bias_grad.defined() ? tasks * k : 0, 0.0);
  at::parallel_for(0, tasks, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t)
      part[t] = fn(t * grain, std::min(n, (t + 1) * grain), colsum.empty() ? nullptr : colsum.data() + t * k);
  });
  if (bias_grad.defined()) {
    T* b = bias_grad.data_ptr<T>();
    for (int64_t j = 0; j < k; ++j) {
      double s = 0;
      for (int64_t t = 0; t < tasks; ++t) s += colsum[t * k + j];
      b[j] += static_cast<T>(s);
    }
  }
  double total = 0;
  for (double p : part) total += p;
  return total;
}

}  // namespace sgmcmc
