#include "models/cnn.h"

#include <stdexcept>

#include "models/linear.h"
#include "models/mlp.h"
#include "models/relu_pool.h"

namespace sgmcmc {

Cnn::Cnn(const CnnOptions& o, at::Generator& gen) : options_(o) {
  int64_t h = ((o.height - 4) / 2 - 4) / 2, w = ((o.width - 4) / 2 - 4) / 2;
  if (h <= 0 || w <= 0)
    throw std::invalid_argument("model: cnn needs images of at least 16x16, got " + std::to_string(o.height) + "x" +
                                std::to_string(o.width));
  if (o.conv1 <= 0 || o.conv2 <= 0 || o.fc <= 0) throw std::invalid_argument("model: cnn widths must be > 0");
  flat_ = o.conv2 * h * w;
  conv1_ = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(o.channels, o.conv1, 5)));
  conv2_ = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(o.conv1, o.conv2, 5)));
  fc1_ = register_module("fc1", torch::nn::Linear(flat_, o.fc));
  fc2_ = register_module("fc2", torch::nn::Linear(o.fc, o.classes));
  init_fan_in_uniform(*this, gen);
}

torch::Tensor Cnn::forward(const torch::Tensor& x) {
  auto h = x.dim() == 3 ? x.unsqueeze(1) : x;
  h = relu_max_pool2x2(conv1_->forward(h));
  h = relu_max_pool2x2(conv2_->forward(h));
  h = linear(h.reshape({h.size(0), flat_}), fc1_->weight, fc1_->bias, kernels::Activation::kRelu);
  return linear(h, fc2_->weight, fc2_->bias);
}

torch::Tensor Cnn::nll(const Batch& batch) {
  return torch::nn::functional::cross_entropy(
      forward(batch.inputs), batch.targets, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
}

torch::Tensor Cnn::predict(const torch::Tensor& inputs) { return torch::softmax(forward(inputs), 1); }

}  // namespace sgmcmc
