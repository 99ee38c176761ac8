#include "train/evaluator.h"

#include <cmath>
#include <vector>

#include "metrics/predictive_metrics.h"

namespace sgmcmc {
namespace {

// `f` over a whole split in chunks, concatenated along `dim`.
template <typename F>
torch::Tensor predict_chunked(const Batch& split, int64_t chunk, int64_t dim, F&& f) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> parts;
  const int64_t n = split.size();
  for (int64_t i = 0; i < n; i += chunk) parts.push_back(f(split.inputs.slice(0, i, std::min(n, i + chunk))));
  if (parts.size() == 1) return parts[0];  // no copy for a split in one chunk
  return parts.empty() ? torch::Tensor() : torch::cat(parts, dim);
}

// Eval mode for the scope of a prediction (batch norm's running statistics, no dropout), then back.
class EvalMode {
 public:
  explicit EvalMode(Model& model) : model_(model), was_training_(model.is_training()) {
    if (was_training_) model_.eval();
  }
  ~EvalMode() {
    if (was_training_) model_.train(true);
  }

 private:
  Model& model_;
  bool was_training_;
};

}  // namespace

torch::Tensor Evaluator::predict(Model& model, const Batch& split) const {
  EvalMode eval(model);
  return predict_chunked(split, chunk_, 0, [&](const torch::Tensor& x) { return model.predict(x); });
}

torch::Tensor Evaluator::predict_chains(Model& model, const Batch& split) const {
  EvalMode eval(model);
  return predict_chunked(split, chunk_, 1, [&](const torch::Tensor& x) { return model.predict_chains(x); });
}

Metrics Evaluator::metrics(const PredictiveSummary& predictive, const Batch& split, double tau,
                           const torch::Tensor& log_density_sum, int64_t samples) const {
  MetricsBatch b = batch(tau);
  const size_t i = queue(b, predictive, split, tau, log_density_sum, samples);
  b.compute();
  return result(b, i);
}

size_t Evaluator::queue(MetricsBatch& batch, const PredictiveSummary& predictive, const Batch& split, double tau,
                        const torch::Tensor& log_density_sum, int64_t samples) const {
  const bool mixture = !classification() && log_density_sum.defined() && samples > 0 && predictive.mean.defined();
  return batch.add(predictive, split.targets,
                   mixture ? pointwise_nll(predictive, split, tau, log_density_sum, samples) : torch::Tensor());
}

Metrics Evaluator::result(const MetricsBatch& batch, size_t i) const {
  Metrics m = batch.metrics(i);
  if (topics() && m.count("nll")) m["perplexity"] = std::exp(m["nll"]);  // per held-out word
  if (!data_.standardized_targets || m.empty()) return m;
  for (const char* k : {"rmse", "width50", "width90"}) m[k] *= data_.target_scale;
  if (!batch.has_pointwise_nll(i)) m["nll"] += std::log(data_.target_scale);  // the mixture's is in the original units
  return m;
}

torch::Tensor Evaluator::pointwise_nll(const PredictiveSummary& predictive, const Batch& split, double tau,
                                       const torch::Tensor& log_density_sum, int64_t samples) const {
  const auto targets = split.targets;
  if (classification()) {
    auto p = predictive.mean.to(torch::kFloat64);
    return -p.gather(1, targets.unsqueeze(1)).squeeze(1).clamp_min(1e-300).log();
  }
  const double log_scale = data_.standardized_targets ? std::log(data_.target_scale) : 0.0;
  if (log_density_sum.defined() && samples > 0)
    return -(log_density_sum.to(torch::kFloat64) - std::log(static_cast<double>(samples))) + log_scale;
  auto f = predictive.mean.to(torch::kFloat64);
  if (data_.clip) f = f.clamp(data_.target_min, data_.target_max);
  const auto r2 = (f - targets.to(torch::kFloat64)).square();
  return 0.5 * tau * r2 + (-0.5 * std::log(tau) + 0.5 * std::log(2 * M_PI) + log_scale);
}

double tau_of(const Model& model) {
  auto h = model.likelihood_hyperparameters();
  auto it = h.find("tau");
  return it == h.end() ? 1.0 : it->second;
}

void add_prefixed(Metrics& row, const std::string& prefix, const Metrics& m) {
  for (const auto& [k, v] : m) row[prefix + k] = v;
}

}  // namespace sgmcmc
