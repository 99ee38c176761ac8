// LeNet-style convnet (001's CNN row; LeCun et al. 1998):
//   conv 5x5 (channels → c1) → ReLU → maxpool 2 → conv 5x5 (c1 → c2) → ReLU → maxpool 2
//   → fc (c2·h·w → fc) → ReLU → fc (→ classes),   categorical likelihood (softmax).
// Parameters conv1.*, conv2.*, fc1.*, fc2.*; initialised U(−1/√fan_in, 1/√fan_in) from the generator.
#pragma once

#include "models/model.h"

namespace sgmcmc {

struct CnnOptions {
  int64_t channels = 1, height = 28, width = 28, classes = 10;
  int64_t conv1 = 20, conv2 = 50, fc = 500;
};

class Cnn : public Model {
 public:
  Cnn(const CnnOptions& options, at::Generator& init_generator);
  Task task() const override { return Task::kClassification; }
  torch::Tensor nll(const Batch& batch) override;
  // The gradient by hand (cnn_backward.cpp states the equations): no autograd graph, the products
  // accumulating straight into .grad. CPU only; the same values as autograd to float rounding.
  torch::Tensor nll_backward(const Batch& batch, double scale) override;
  // The same pass writing over .grad (Model::nll_backward_overwrite).
  torch::Tensor nll_backward_overwrite(const Batch& batch, double scale) override;
  bool overwrites_grad() const override { return true; }
  torch::Tensor predict(const torch::Tensor& inputs) override;
  torch::Tensor forward(const torch::Tensor& inputs);

 private:
  torch::Tensor backward_pass(const Batch& batch, double scale, bool overwrite);

  CnnOptions options_;
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr};
  int64_t flat_ = 0;
};

}  // namespace sgmcmc
