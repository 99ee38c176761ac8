// The vocabulary data, models and the trainer share: what a model is asked to do, and a batch.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace sgmcmc {

enum class Task { kClassification, kRegression };

// A minibatch (or a whole split): inputs and targets, on the training device.
//  classification: inputs [n, ...] float, targets [n] int64 class labels
//  regression:     inputs [n, d] float,   targets [n] float
//  ratings (BPMF): inputs [n, 2] int64 (user, item), targets [n] float ratings
struct Batch {
  torch::Tensor inputs;
  torch::Tensor targets;
  int64_t size() const { return targets.defined() ? targets.size(0) : 0; }
};

}  // namespace sgmcmc
