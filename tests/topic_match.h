// Topic recovery in the topic models' tests: estimated topics against known ones, matched by the best
// permutation (exhaustive: the tests use 4 topics).
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>
#include <vector>

namespace sgmcmc::test_util {

// {mean, max} over topics of the total variation between estimated row perm[k] of `est` [K, W] (float64)
// and truth[k], at the permutation of least total.
inline std::pair<double, double> matched_topic_tv(const torch::Tensor& est, const std::vector<std::vector<double>>& truth) {
  const auto K = static_cast<int64_t>(truth.size()), W = static_cast<int64_t>(truth[0].size());
  const auto e = est.contiguous();
  const double* p = e.data_ptr<double>();
  std::vector<int64_t> perm(K);
  std::iota(perm.begin(), perm.end(), 0);
  double best_sum = 1e9, best_max = 1e9;
  do {
    double sum = 0, mx = 0;
    for (int64_t k = 0; k < K; ++k) {
      double tv = 0;
      for (int64_t w = 0; w < W; ++w) tv += 0.5 * std::fabs(p[perm[k] * W + w] - truth[k][w]);
      sum += tv;
      mx = std::max(mx, tv);
    }
    if (sum < best_sum) best_sum = sum, best_max = mx;
  } while (std::next_permutation(perm.begin(), perm.end()));
  return {best_sum / static_cast<double>(K), best_max};
}

}  // namespace sgmcmc::test_util
