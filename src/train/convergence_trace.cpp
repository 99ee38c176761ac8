#include "train/convergence_trace.h"

#include <algorithm>
#include <cmath>

#include "metrics/convergence.h"

namespace sgmcmc {

namespace {

// A copy in float64 on the tensor's own device (a copy even when it is float64 already: the traced
// weights are views of parameters the next step changes).
torch::Tensor copy64(const torch::Tensor& t) {
  return t.detach().to(t.options().dtype(torch::kFloat64), /*non_blocking=*/false, /*copy=*/true);
}

// The per-sample entries stacked [S, ...], on the host (one copy).
torch::Tensor stacked_on_host(const std::vector<torch::Tensor>& per_sample) { return torch::stack(per_sample).cpu(); }

}  // namespace

void ConvergenceTrace::record(const torch::Tensor& chain_loglik, const torch::Tensor& weights) {
  loglik_.push_back(copy64(chain_loglik));
  weights_.push_back(copy64(weights));
}

std::map<std::string, double> ConvergenceTrace::diagnostics() const {
  std::map<std::string, double> v;
  if (loglik_.size() < 4) return v;
  auto ll = stacked_on_host(loglik_);  // [S, C]
  v["rhat_test_loglik"] = split_rhat(ll);
  v["ess_test_loglik"] = effective_sample_size(ll);
  auto w = stacked_on_host(weights_);  // [S, C, k]
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
    return torch::cat(comm.all_gather(stacked_on_host(per_sample)), /*dim=*/1).unbind(0);
  };
  ConvergenceTrace out;
  out.loglik_ = side_by_side(loglik_);
  out.weights_ = side_by_side(weights_);
  return out;
}

void ConvergenceTrace::save(torch::serialize::OutputArchive& ar) const {
  if (!loglik_.empty()) ar.write("trace_ll", stacked_on_host(loglik_), true);
  if (!weights_.empty()) ar.write("trace_w", stacked_on_host(weights_), true);
}

void ConvergenceTrace::load(torch::serialize::InputArchive& ar, const torch::Device& device) {
  loglik_.clear();
  weights_.clear();
  torch::Tensor x;
  if (ar.try_read("trace_ll", x, true))
    for (const auto& row : x.to(device).unbind(0)) loglik_.push_back(row.clone());
  torch::Tensor w;
  if (ar.try_read("trace_w", w, true))
    for (const auto& row : w.to(device).unbind(0)) weights_.push_back(row.clone());
}

}  // namespace sgmcmc
