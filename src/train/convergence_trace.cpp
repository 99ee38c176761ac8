#include "train/convergence_trace.h"

#include <algorithm>
#include <cmath>

#include "metrics/convergence.h"

namespace sgmcmc {

void ConvergenceTrace::record(const torch::Tensor& chain_loglik, const torch::Tensor& weights) {
  loglik_.push_back(chain_loglik.cpu());
  weights_.push_back(weights.to(torch::kCPU, torch::kFloat64));
}

std::map<std::string, double> ConvergenceTrace::diagnostics() const {
  std::map<std::string, double> v;
  if (loglik_.size() < 4) return v;
  auto ll = torch::stack(loglik_);  // [S, C]
  v["rhat_test_loglik"] = split_rhat(ll);
  v["ess_test_loglik"] = effective_sample_size(ll);
  auto w = torch::stack(weights_);  // [S, C, k]
  double rmax = 0, emin = INFINITY;
  for (int64_t j = 0; j < w.size(2); ++j) {
    rmax = std::max(rmax, split_rhat(w.select(2, j)));
    emin = std::min(emin, effective_sample_size(w.select(2, j)));
  }
  v["rhat_weights_max"] = rmax;
  v["ess_weights_min"] = emin;
  return v;
}

ConvergenceTrace ConvergenceTrace::all_ranks(Communicator& comm) const {
  if (!comm.distributed() || loglik_.empty()) return *this;  // every rank has the same number of samples
  auto side_by_side = [&](const std::vector<torch::Tensor>& per_sample) {
    return torch::cat(comm.all_gather(torch::stack(per_sample)), /*dim=*/1).unbind(0);
  };
  ConvergenceTrace out;
  out.loglik_ = side_by_side(loglik_);
  out.weights_ = side_by_side(weights_);
  return out;
}

void ConvergenceTrace::save(torch::serialize::OutputArchive& ar) const {
  if (!loglik_.empty()) ar.write("trace_ll", torch::stack(loglik_), true);
  if (!weights_.empty()) ar.write("trace_w", torch::stack(weights_), true);
}

void ConvergenceTrace::load(torch::serialize::InputArchive& ar) {
  loglik_.clear();
  weights_.clear();
  torch::Tensor x;
  if (ar.try_read("trace_ll", x, true))
    for (int64_t i = 0; i < x.size(0); ++i) loglik_.push_back(x[i].clone());
  torch::Tensor w;
  if (ar.try_read("trace_w", w, true))
    for (int64_t i = 0; i < w.size(0); ++i) weights_.push_back(w[i].clone());
}

}  // namespace sgmcmc
