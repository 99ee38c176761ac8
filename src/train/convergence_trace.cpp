#include "train/convergence_trace.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <tuple>

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

torch::Tensor ConvergenceTrace::prediction_points(int64_t n) {
  if (n <= 0) return torch::empty({0}, torch::kInt64);
  const int64_t m = std::min(n, kPredictions);
  return (torch::arange(m, torch::kFloat64) * (static_cast<double>(n) / static_cast<double>(m))).floor().to(torch::kInt64);
}

torch::Tensor ConvergenceTrace::traced_predictions(const torch::Tensor& per_chain, const torch::Tensor& targets) {
  const auto idx = prediction_points(per_chain.size(1)).to(per_chain.device());
  const auto at = per_chain.index_select(1, idx);
  if (per_chain.dim() == 2) return at;  // regression means [C, m]
  const auto labels = targets.index_select(0, idx).to(torch::kInt64).view({1, -1, 1}).expand({at.size(0), -1, 1});
  return at.gather(2, labels).squeeze(2);  // the true label's probability [C, m]
}

void ConvergenceTrace::record(const torch::Tensor& chain_loglik, const torch::Tensor& weights,
                              const torch::Tensor& predictions) {
  loglik_.push_back(copy64(chain_loglik));
  weights_.push_back(copy64(weights));
  if (predictions.defined()) predictions_.push_back(copy64(predictions));
}

namespace {

// Whether a series [S, C] moved between samples beyond float32's rounding of its values.
bool moves(const torch::Tensor& series) {
  const double spread = (series.amax(0) - series.amin(0)).max().item<double>();
  const double scale = series.abs().max().item<double>();
  return spread > 1e-6 * std::max(scale, 1e-12);
}

}  // namespace

std::map<std::string, double> ConvergenceTrace::diagnostics() const {
  std::map<std::string, double> v;
  if (loglik_.size() < 4) return v;
  auto ll = stacked_on_host(loglik_);  // [S, C]
  v["rhat_test_loglik"] = split_rhat(ll);
  v["ess_test_loglik"] = effective_sample_size(ll);
  bool moved = moves(ll);
  auto w = stacked_on_host(weights_);  // [S, C, k]
  double rmax = 0, emin = INFINITY;
  for (int64_t j = 0; j < w.size(2); ++j) {
    rmax = std::max(rmax, split_rhat(w.select(2, j)));
    emin = std::min(emin, effective_sample_size(w.select(2, j)));
    moved = moved || moves(w.select(2, j));
  }
  v["rhat_weights_max"] = rmax;
  v["ess_weights_min"] = emin;
  if (predictions_.size() == loglik_.size()) {
    auto p = stacked_on_host(predictions_);  // [S, C, m]
    double pr = 0, pe = INFINITY;
    for (int64_t j = 0; j < p.size(2); ++j) {
      const auto series = p.select(2, j);
      moved = moved || moves(series);
      // a point whose prediction is the same in every sample (a saturated probability) says nothing of mixing
      if (!moves(series)) continue;
      pr = std::max(pr, split_rhat(series));
      pe = std::min(pe, effective_sample_size(series));
    }
    if (std::isfinite(pe)) {
      v["rhat_predictions_max"] = pr;
      v["ess_predictions_min"] = pe;
    }
  }
  v["stalled"] = moved ? 0.0 : 1.0;
  return v;
}

const std::vector<std::tuple<const char*, const char*, const char*>>& ConvergenceTrace::traced() {
  static const std::vector<std::tuple<const char*, const char*, const char*>> t = {
      {"rhat_test_loglik", "ess_test_loglik", "test log-lik"},
      {"rhat_weights_max", "ess_weights_min", "weights"},
      {"rhat_predictions_max", "ess_predictions_min", "test predictions"}};
  return t;
}

std::optional<std::string> ConvergenceTrace::verdict_of_summary(const std::map<std::string, double>& values) {
  std::map<std::string, double> d;
  for (const auto& [k, x] : values)
    if (k.rfind("rhat_", 0) == 0 || k.rfind("ess_", 0) == 0 || k == "stalled") d[k] = x;
  if (d.empty()) return std::nullopt;
  auto get = [&](const char* k) {
    auto it = values.find(k);
    return it == values.end() ? NAN : it->second;
  };
  const double chains = std::isfinite(get("chains_all_ranks")) ? get("chains_all_ranks") : get("chains");
  return verdict(d, std::isfinite(chains) ? chains : 1.0, get("samples"));
}

std::string ConvergenceTrace::verdict(const std::map<std::string, double>& d, double chains, double samples) {
  auto get = [&](const char* k) {
    auto it = d.find(k);
    return it == d.end() ? NAN : it->second;
  };
  if (d.empty()) return "fewer than 4 samples: nothing to judge mixing by";
  if (get("stalled") == 1)
    return "the chain has stalled: no traced weight, prediction or log-likelihood changed between samples "
           "(sampler.lr is too small to move the parameters; give a larger one or sampler.lr: auto)";
  std::vector<std::string> failed;
  const double ess_min = kMinEssPerChain * std::max(chains, 1.0);
  std::ostringstream n;
  n << samples;
  if (samples < ess_min)  // an ESS of 100 per chain cannot come from fewer samples than that
    return "too few samples to judge mixing (" + n.str() + " in all; an ESS of 100 per chain needs at least " +
           std::to_string(static_cast<int64_t>(ess_min)) + "): the metrics above are the averaged predictive's; for a "
           "verdict run longer, thin less (train.thin) or add chains (chains: 4)";
  std::ostringstream w;
  w.precision(3);
  for (const auto& [rhat, ess, what] : traced()) {
    const double r = get(rhat), e = get(ess);
    std::ostringstream part;
    part.precision(3);
    if (std::isfinite(r) && !(r < kMaxRhat)) part << "R-hat " << r;
    if (std::isfinite(e) && !(e >= ess_min)) part << (part.tellp() > 0 ? ", " : "") << "ESS " << e;
    if (part.tellp() > 0) failed.push_back(std::string(what) + " " + part.str());
  }
  if (failed.empty()) return "";
  std::string line = "has not mixed (";
  for (size_t i = 0; i < failed.size(); ++i) line += (i ? "; " : "") + failed[i];
  w << samples;
  line += "; want R-hat < 1.01 and ESS >= 100 per chain over " + w.str() +
          " samples): run longer, add chains (chains: 4) or read the predictive's metrics as a single chain's";
  return line;
}

ConvergenceTrace ConvergenceTrace::all_ranks(Communicator& comm) const {
  if (!comm.distributed() || loglik_.empty()) return *this;  // every rank has the same number of samples
  auto side_by_side = [&](const std::vector<torch::Tensor>& per_sample) {
    return torch::cat(comm.all_gather(stacked_on_host(per_sample)), /*dim=*/1).unbind(0);
  };
  ConvergenceTrace out;
  out.loglik_ = side_by_side(loglik_);
  out.weights_ = side_by_side(weights_);
  if (predictions_.size() == loglik_.size()) out.predictions_ = side_by_side(predictions_);
  return out;
}

void ConvergenceTrace::save(torch::serialize::OutputArchive& ar) const {
  if (!loglik_.empty()) ar.write("trace_ll", stacked_on_host(loglik_), true);
  if (!weights_.empty()) ar.write("trace_w", stacked_on_host(weights_), true);
  if (!predictions_.empty()) ar.write("trace_p", stacked_on_host(predictions_), true);
}

void ConvergenceTrace::load(torch::serialize::InputArchive& ar, const torch::Device& device) {
  loglik_.clear();
  weights_.clear();
  predictions_.clear();
  torch::Tensor x;
  if (ar.try_read("trace_ll", x, true))
    for (const auto& row : x.to(device).unbind(0)) loglik_.push_back(row.clone());
  torch::Tensor w;
  if (ar.try_read("trace_w", w, true))
    for (const auto& row : w.to(device).unbind(0)) weights_.push_back(row.clone());
  torch::Tensor p;
  if (ar.try_read("trace_p", p, true))
    for (const auto& row : p.to(device).unbind(0)) predictions_.push_back(row.clone());
}

}  // namespace sgmcmc
