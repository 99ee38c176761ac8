// Predictions of a model on whole splits and the metrics of a predictive on a split, in the data
// set's units: what `train` reports at every evaluation and what `sgmcmc predict` reports.
// Writes nothing; the metric definitions themselves are in metrics/predictive_metrics.h.
#pragma once

#include <map>
#include <string>

#include <torch/torch.h>

#include "data/dataset.h"
#include "metrics/predictive_metrics.h"
#include "models/model.h"

namespace sgmcmc {

using Metrics = std::map<std::string, double>;

class Evaluator {
 public:
  // `chunk`: examples per forward pass (train.eval_batch_size).
  Evaluator(const Dataset& data, int64_t chunk) : data_(data), chunk_(chunk) {}

  // The model's predictive outputs on a whole split [n, ...] (chains: their mean), no gradients.
  torch::Tensor predict(Model& model, const Batch& split) const;
  // Per-chain outputs [C, n, ...].
  torch::Tensor predict_chains(Model& model, const Batch& split) const;

  // Metrics of a predictive on `split` (metrics/predictive_metrics.h), with noise precision `tau`.
  // Standardized regression targets: rmse and interval widths in the original units, and the nll of the mixture
  // (1/S) Σ_s N(y; f_s, 1/τ_s) when `log_density_sum` = log Σ_s over `samples` > 0 terms (else of
  // N(y; f, 1/τ)), both in the original units.
  Metrics metrics(const PredictiveSummary& predictive, const Batch& split, double tau,
                  const torch::Tensor& log_density_sum = {}, int64_t samples = 0) const;
  // The same for several predictives at once (one device pass, one host read; MetricsBatch): a
  // batch() for noise precision `tau`, queue() each predictive, compute() the batch, then result().
  MetricsBatch batch(double tau) const {
    return MetricsBatch(classification(), tau, data_.clip, data_.target_min, data_.target_max);
  }
  size_t queue(MetricsBatch& batch, const PredictiveSummary& predictive, const Batch& split, double tau,
               const torch::Tensor& log_density_sum = {}, int64_t samples = 0) const;
  Metrics result(const MetricsBatch& batch, size_t i) const;
  // The same nll per point [n] (float64, on the predictive's device): its mean is metrics()'s "nll".
  // What a paired comparison of two predictives on one split needs (the step-size pilot's).
  torch::Tensor pointwise_nll(const PredictiveSummary& predictive, const Batch& split, double tau,
                              const torch::Tensor& log_density_sum = {}, int64_t samples = 0) const;
  // A point prediction (one member).
  Metrics metrics(const torch::Tensor& prediction, const Batch& split, double tau) const {
    return metrics(PredictiveSummary{prediction, {}, {}}, split, tau);
  }

  bool classification() const { return data_.task == Task::kClassification; }
  // A bag-of-words data set (data/bow.h): its points are held-out words, its headline the perplexity.
  bool topics() const { return data_.dims.count("words") > 0; }
  // The headline metric's name: "perplexity" (topics), "error" (classification) or "rmse".
  std::string headline() const { return topics() ? "perplexity" : classification() ? "error" : "rmse"; }
  const Dataset& data() const { return data_; }

 private:
  const Dataset& data_;
  int64_t chunk_;
};

// The model's Gaussian noise precision τ (1 when it has none).
double tau_of(const Model& model);

// Prefixes every key of `m` with `prefix` into `row`.
void add_prefixed(Metrics& row, const std::string& prefix, const Metrics& m);

}  // namespace sgmcmc
