#include "train/posterior_predictive.h"

#include <cmath>
#include <stdexcept>

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
  if (s.complete) add_spread(s, per_chain, tau);
  return mean;
}

void PosteriorPredictive::add_spread(Sums& s, const torch::Tensor& per_chain, double tau) {
  auto accumulate = [](torch::Tensor& acc, const torch::Tensor& x) { acc = acc.defined() ? acc.add_(x) : x.clone(); };
  if (per_chain.dim() == 3) {  // class probabilities [C, n, K]
    accumulate(s.ent, entropy_of(per_chain).mean(0));
  } else {
    accumulate(s.sq, per_chain.to(torch::kFloat64).square().mean(0));
    s.noise += 1.0 / tau;
  }
}

PredictiveSummary PosteriorPredictive::summary(const std::string& split) const {
  PredictiveSummary p{mean(split), {}, {}};
  auto it = sums_.find(split);
  if (!p.mean.defined() || !it->second.complete) return p;
  const Sums& s = it->second;
  if (s.ent.defined()) p.expected_entropy = s.ent / count_;
  if (s.sq.defined()) p.variance = s.sq / count_ - p.mean.square() + s.noise / count_;
  return p;
}

PredictiveSummary PosteriorPredictive::summary(const std::string& split, const torch::Tensor& count) const {
  auto it = sums_.find(split);
  if (it == sums_.end() || count_ == 0) return {};
  const Sums& s = it->second;
  if (s.sq.defined()) throw std::logic_error("PosteriorPredictive::summary: a device count for regression sums");
  PredictiveSummary p{s.sum / count, {}, {}};
  if (s.complete && s.ent.defined()) p.expected_entropy = s.ent / count;
  return p;
}

PosteriorPredictive PosteriorPredictive::all_ranks(Communicator& comm) const {
  if (!comm.distributed()) return *this;
  const double w = comm.world_size();
  PosteriorPredictive out(mixture_density_);
  out.count_ = count_;
  for (const auto& [split, s] : sums_) {  // the same splits, in the same order, on every rank
    Sums& m = out.sums_[split];
    m.complete = s.complete;
    m.noise = s.noise;
    std::vector<torch::Tensor> parts = {s.sum.clone(), torch::tensor(s.noise, torch::kFloat64)};
    if (s.ent.defined()) parts.push_back(s.ent.clone());
    if (s.sq.defined()) parts.push_back(s.sq.clone());
    comm.all_reduce_sum(parts);
    m.sum = parts[0] / w;
    m.noise = parts[1].item<double>() / w;
    size_t i = 2;
    if (s.ent.defined()) m.ent = parts[i++] / w;
    if (s.sq.defined()) m.sq = parts[i++] / w;
    if (s.lse.defined()) m.lse = torch::logsumexp(torch::stack(comm.all_gather(s.lse)), 0) - std::log(w);
  }
  return out;
}

std::vector<torch::Tensor> PosteriorPredictive::buffers() const {
  std::vector<torch::Tensor> out;
  for (const auto& [split, s] : sums_)
    for (const auto& t : {s.sum, s.lse, s.ent, s.sq}) out.push_back(t);
  return out;
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
    if (!s.complete) continue;
    if (s.ent.defined()) ar.write("ent_" + split, s.ent, true);
    if (s.sq.defined()) ar.write("sq_" + split, s.sq, true);
    if (s.sq.defined()) ar.write("noise_" + split, torch::tensor(s.noise, torch::kFloat64), true);
  }
}

void PosteriorPredictive::load(torch::serialize::InputArchive& ar, const torch::Device& device, int64_t count,
                               const std::vector<std::string>& splits) {
  count_ = count;
  sums_.clear();
  for (const auto& split : splits) {
    torch::Tensor sum, lse, ent, sq, noise;
    if (!ar.try_read("avg_" + split, sum, true)) continue;
    Sums& s = sums_[split];
    s.sum = sum.to(device);
    if (ar.try_read("lse_" + split, lse, true)) s.lse = lse.to(device);
    if (ar.try_read("ent_" + split, ent, true)) s.ent = ent.to(device);
    if (ar.try_read("sq_" + split, sq, true) && ar.try_read("noise_" + split, noise, true)) {
      s.sq = sq.to(device);
      s.noise = noise.item<double>();
    }
    s.complete = s.ent.defined() || s.sq.defined();
  }
}

}  // namespace sgmcmc
