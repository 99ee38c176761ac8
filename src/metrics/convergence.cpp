#include "metrics/convergence.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

namespace sgmcmc {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

torch::Tensor as_matrix(const torch::Tensor& draws) {
  if (draws.dim() != 2) throw std::invalid_argument("convergence: draws must be [draws, chains]");
  return draws.detach().to(torch::kCPU, torch::kFloat64).contiguous();
}

// var⁺ and W of chains given as columns of x [n, m].
std::pair<double, double> varplus_w(const torch::Tensor& x) {
  const double n = static_cast<double>(x.size(0));
  const double w = x.var(0, /*unbiased=*/true).mean().item<double>();
  const double b_over_n = x.size(1) > 1 ? x.mean(0).var(0, true).item<double>() : 0.0;
  return {(n - 1) / n * w + b_over_n, w};
}

}  // namespace

double split_rhat(const torch::Tensor& draws) {
  auto x = as_matrix(draws);
  const int64_t S = x.size(0), C = x.size(1), h = S / 2;
  if (h < 2 || C < 1) return kNaN;
  auto split = torch::cat({x.narrow(0, 0, h), x.narrow(0, S - h, h)}, 1);  // [h, 2C]
  auto [vp, w] = varplus_w(split);
  if (w <= 0) return vp <= 0 ? 1.0 : std::numeric_limits<double>::infinity();
  return std::sqrt(vp / w);
}

double effective_sample_size(const torch::Tensor& draws) {
  auto x = as_matrix(draws);
  const int64_t S = x.size(0), C = x.size(1);
  if (S < 4 || C < 1) return kNaN;
  auto [vp, w] = varplus_w(x);
  if (vp <= 0) return static_cast<double>(S * C);
  // Autocovariances of every chain at every lag by FFT-free direct sums (S is the number of thinned
  // samples: hundreds to a few thousand), biased estimator (divide by S) as in Stan.
  auto centred = x - x.mean(0, true);
  std::vector<double> rho(S, 0.0);
  const double* p = centred.data_ptr<double>();
  for (int64_t t = 0; t < S; ++t) {
    double acov_mean = 0;
    for (int64_t c = 0; c < C; ++c) {
      double s = 0;
      for (int64_t i = 0; i + t < S; ++i) s += p[i * C + c] * p[(i + t) * C + c];
      acov_mean += s / static_cast<double>(S);
    }
    acov_mean /= static_cast<double>(C);
    rho[t] = 1.0 - (w - acov_mean) / vp;
    if (t >= 2 && t % 2 == 1 && rho[t - 1] + rho[t] < 0) break;  // early exit once a pair goes negative
  }
  rho[0] = 1.0;
  // Geyer's initial positive sequence over pairs P_k = ρ_{2k} + ρ_{2k+1}, monotone.
  double sum_pairs = 0, prev = std::numeric_limits<double>::infinity();
  for (int64_t k = 0; 2 * k + 1 < S; ++k) {
    double pk = rho[2 * k] + rho[2 * k + 1];
    if (pk < 0) break;
    pk = std::min(pk, prev);
    prev = pk;
    sum_pairs += pk;
  }
  const double tau = std::max(-1.0 + 2.0 * sum_pairs, 1.0 / std::log10(static_cast<double>(S * C) + 10));
  return static_cast<double>(S * C) / tau;
}

}  // namespace sgmcmc
