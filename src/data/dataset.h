// A data set resident on the training device, already split.
#pragma once

#include <map>
#include <string>

#include "core/batch.h"

namespace sgmcmc {

struct Dataset {
  Batch train, val, test;          // val may be empty (size 0)
  Batch ood;                       // out-of-distribution inputs (data.ood; size 0 without; targets unused)
  Task task = Task::kClassification;
  int64_t num_classes = 0;         // classification
  // Shapes the model factory needs, e.g. {"features": 784} or {"users": 671, "items": 9066}.
  std::map<std::string, int64_t> dims;
  // Regression / ratings: predictions are clipped to [target_min, target_max] when `clip` is set.
  bool clip = false;
  double target_min = 0, target_max = 0;
  // Regression targets standardized by the loader (csv): original = target_mean + target_scale · y.
  // The trainer then reports rmse and nll in the original units, the nll of the predictive mixture
  // over samples, (1/S) Σ_s N(y; f_s, 1/τ_s), per point.
  bool standardized_targets = false;
  double target_mean = 0, target_scale = 1;
  // Features standardized by the loader (csv): the model saw (x − feature_mean) / feature_scale, float64 on
  // the CPU (undefined otherwise). `sgmcmc predict --data` applies them to raw rows.
  torch::Tensor feature_mean, feature_scale;
  // Files the trainer writes into the run directory (name -> contents), e.g. a ratings id map.
  std::map<std::string, std::string> run_files;
  std::string description;         // one line for logs, e.g. "fashion-mnist: 50000/10000/10000"

  Dataset to(const torch::Device& device) const;
};

}  // namespace sgmcmc
