#include "simulate/targets.h"

#include <cmath>

namespace sgmcmc::sim {

Target gaussian2d(double rho) {
  Target t;
  t.name = "gaussian2d";
  double det = 1 - rho * rho;
  // Σ⁻¹ = 1/(1−ρ²) [[1, −ρ], [−ρ, 1]]
  auto precision = [=](const torch::Tensor& th) {
    auto x = th.select(-1, 0), y = th.select(-1, 1);
    return torch::stack({(x - rho * y) / det, (y - rho * x) / det}, -1);
  };
  t.grad = precision;
  t.energy = [=](const torch::Tensor& th) { return 0.5 * (th * precision(th)).sum(-1); };
  return t;
}

Target fig1_quartic() {
  Target t;
  t.name = "fig1";
  t.energy = [](const torch::Tensor& th) { return -2 * th.pow(2) + th.pow(4); };
  t.grad = [](const torch::Tensor& th) { return -4 * th + 4 * th.pow(3); };
  t.lo = -2.5;
  t.hi = 2.5;
  return t;
}

Target double_well() {
  Target t;
  t.name = "double_well";
  // (θ+4)(θ+1)(θ−1)(θ−3) = θ⁴ + θ³ − 13θ² − θ + 12
  t.energy = [](const torch::Tensor& th) {
    return (th.pow(4) + th.pow(3) - 13 * th.pow(2) - th + 12) / 14 + 0.5;
  };
  t.grad = [](const torch::Tensor& th) { return (4 * th.pow(3) + 3 * th.pow(2) - 26 * th - 1) / 14; };
  t.lo = -6;
  t.hi = 6;
  return t;
}

torch::Tensor bin_probabilities(const Target& target, int64_t bins) {
  const int64_t fine = 1000;
  auto opts = torch::dtype(torch::kFloat64);
  double width = (target.hi - target.lo) / static_cast<double>(bins * fine);
  auto x = target.lo + (torch::arange(bins * fine, opts) + 0.5) * width;
  auto u = target.energy(x);
  auto w = torch::exp(-(u - u.min()));
  auto p = w.view({bins, fine}).sum(1);
  return p / p.sum();
}

torch::Tensor histogram(const torch::Tensor& samples, double lo, double hi, int64_t bins) {
  auto s = samples.reshape({-1}).to(torch::kFloat64);
  auto idx = ((s - lo) / (hi - lo) * bins).floor();
  auto keep = (idx >= 0) & (idx < bins);
  auto counts = torch::zeros({bins}, torch::kFloat64);
  auto kept = idx.masked_select(keep).to(torch::kLong);
  counts.index_add_(0, kept, torch::ones({kept.size(0)}, torch::kFloat64));
  double total = counts.sum().item<double>();
  return total > 0 ? counts / total : counts;
}

double kl_divergence(const torch::Tensor& p_hat, const torch::Tensor& p) {
  auto mask = p_hat > 0;
  auto ph = p_hat.masked_select(mask), pp = p.masked_select(mask);
  return (ph * (ph / pp).log()).sum().item<double>();
}

double total_variation(const torch::Tensor& p_hat, const torch::Tensor& p) {
  return 0.5 * (p_hat - p).abs().sum().item<double>();
}

double autocorrelation_time(const torch::Tensor& x_in, int64_t max_lag) {
  auto x = x_in.to(torch::kFloat64);
  x = x - x.mean(1, true);
  auto var = (x * x).mean(1);  // [chains]
  int64_t n = x.size(1);
  max_lag = std::min<int64_t>(max_lag, n / 4);
  double tau = 1.0;
  for (int64_t k = 1; k < max_lag; ++k) {
    auto c = (x.narrow(1, 0, n - k) * x.narrow(1, k, n - k)).mean(1) / var;
    double rho = c.mean().item<double>();
    if (rho <= 0) break;
    tau += 2 * rho;
  }
  return tau;
}

}  // namespace sgmcmc::sim
