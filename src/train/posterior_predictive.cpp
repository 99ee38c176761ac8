#include "train/posterior_predictive.h"

#include "metrics/predictive_metrics.h"

namespace sgmcmc {

torch::Tensor PosteriorPredictive::add(const std::string& split, const torch::Tensor& per_chain,
                                       const torch::Tensor& targets, double tau) {
  torch::NoGradGuard no_grad;
  auto mean = (per_chain.size(0) == 1 ? per_chain[0] : per_chain.mean(0)).to(torch::kFloat64);
  Sums& s = sums_[split];
  s.sum = s.sum.defined() ? s.sum.add_(mean) : mean.clone();
  if (mixture_density_) {
    auto ld = mixture_log_density(per_chain.size(0) == 1 ? mean : per_chain, targets, tau);
    s.lse = s.lse.defined() ? torch::logaddexp(s.lse, ld) : ld.clone();
  }
  return mean;
}

torch::Tensor PosteriorPredictive::mean(const std::string& split) const {
  auto it = sums_.find(split);
  if (it == sums_.end() || count_ == 0) return {};
  return it->second.sum / count_;
}

torch::Tensor PosteriorPredictive::log_density_sum(const std::string& split) const {
  auto it = sums_.find(split);
  return it == sums_.end() ? torch::Tensor() : it->second.lse;
}

void PosteriorPredictive::save(torch::serialize::OutputArchive& ar) const {
  for (const auto& [split, s] : sums_) {
    if (s.sum.defined()) ar.write("avg_" + split, s.sum, true);
    if (s.lse.defined()) ar.write("lse_" + split, s.lse, true);
  }
}

void PosteriorPredictive::load(torch::serialize::InputArchive& ar, const torch::Device& device, int64_t count,
                               const std::vector<std::string>& splits) {
  count_ = count;
  sums_.clear();
  for (const auto& split : splits) {
    torch::Tensor sum, lse;
    if (ar.try_read("avg_" + split, sum, true)) sums_[split].sum = sum.to(device);
    if (ar.try_read("lse_" + split, lse, true)) sums_[split].lse = lse.to(device);
  }
}

}  // namespace sgmcmc
