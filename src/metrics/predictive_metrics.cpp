#include "metrics/predictive_metrics.h"

#include <cmath>

namespace sgmcmc {

std::map<std::string, double> predictive_metrics(const torch::Tensor& prediction, const torch::Tensor& targets,
                                                 bool classification, double tau, bool clip, double lo, double hi) {
  std::map<std::string, double> m;
  if (!prediction.defined() || prediction.size(0) == 0) return m;
  torch::NoGradGuard no_grad;
  if (classification) {
    auto p = prediction.to(torch::kFloat64);
    auto pred = p.argmax(1);
    m["error"] = pred.ne(targets).to(torch::kFloat64).mean().item<double>();
    auto py = p.gather(1, targets.unsqueeze(1)).squeeze(1).clamp_min(1e-300);
    m["nll"] = -py.log().mean().item<double>();
  } else {
    auto f = prediction.to(torch::kFloat64);
    if (clip) f = f.clamp(lo, hi);
    auto r2 = (f - targets.to(torch::kFloat64)).pow(2);
    m["rmse"] = std::sqrt(r2.mean().item<double>());
    m["nll"] = 0.5 * tau * r2.mean().item<double>() - 0.5 * std::log(tau) + 0.5 * std::log(2 * M_PI);
  }
  return m;
}

torch::Tensor gaussian_log_density(const torch::Tensor& f, const torch::Tensor& y, double tau) {
  auto r2 = (f.to(torch::kFloat64) - y.to(torch::kFloat64)).pow(2);
  return -0.5 * tau * r2 + 0.5 * std::log(tau) - 0.5 * std::log(2 * M_PI);
}

torch::Tensor mixture_log_density(const torch::Tensor& f, const torch::Tensor& y, double tau) {
  if (f.dim() == 1) return gaussian_log_density(f, y, tau);
  auto ld = gaussian_log_density(f, y.unsqueeze(0), tau);
  return torch::logsumexp(ld, 0) - std::log(static_cast<double>(f.size(0)));
}

torch::Tensor chain_log_likelihood(const torch::Tensor& per_chain, const torch::Tensor& targets, bool classification,
                                   double tau) {
  auto p = per_chain.to(torch::kFloat64);
  if (classification) {
    auto idx = targets.to(torch::kInt64).view({1, -1, 1}).expand({p.size(0), -1, 1});
    return p.gather(2, idx).squeeze(2).clamp_min(1e-300).log().mean(1);
  }
  auto r = p - targets.to(torch::kFloat64).unsqueeze(0);
  return (0.5 * std::log(tau / (2 * M_PI)) - 0.5 * tau * r.square()).mean(1);
}

}  // namespace sgmcmc
