#include "models/mlp.h"

#include <stdexcept>

#include "kernels/cpu/matmul.h"
#include "models/linear.h"

namespace sgmcmc {

namespace {
void init_own_params(torch::nn::Module& m, at::Generator& gen) {
  // Biases take the fan-in of the weight of the same module.
  int64_t fan_in = 0;
  for (auto& item : m.named_parameters(/*recurse=*/false)) {
    auto& p = item.value();
    if (item.key() == "weight" && p.dim() >= 2) fan_in = p.numel() / p.size(0);
  }
  for (auto& item : m.named_parameters(/*recurse=*/false)) {
    auto& p = item.value();
    int64_t f = fan_in > 0 ? fan_in : std::max<int64_t>(1, p.numel());
    double bound = 1.0 / std::sqrt(static_cast<double>(f));
    p.uniform_(-bound, bound, gen);
  }
}
}  // namespace

void init_fan_in_uniform(torch::nn::Module& module, at::Generator& gen) {
  torch::NoGradGuard no_grad;
  init_own_params(module, gen);
  for (auto& child : module.modules(/*include_self=*/false)) init_own_params(*child, gen);
}

Mlp::Mlp(const MlpOptions& o, at::Generator& gen) : options_(o) {
  if (o.inputs <= 0 || o.outputs <= 0) throw std::invalid_argument("model: mlp needs inputs > 0 and outputs > 0");
  int64_t in = o.inputs;
  std::vector<int64_t> widths = o.hidden;
  widths.push_back(o.outputs);
  for (size_t i = 0; i < widths.size(); ++i) {
    if (widths[i] <= 0) throw std::invalid_argument("model.hidden: layer widths must be > 0");
    layers_.push_back(register_module("fc" + std::to_string(i + 1), torch::nn::Linear(in, widths[i])));
    in = widths[i];
  }
  tau_ = register_buffer("tau", torch::tensor(o.noise_precision, torch::kFloat32));
  init_fan_in_uniform(*this, gen);
}

Task Mlp::task() const {
  return options_.likelihood == "gaussian" ? Task::kRegression : Task::kClassification;
}

torch::Tensor Mlp::forward(const torch::Tensor& inputs) {
  auto h = inputs.reshape({inputs.size(0), -1});
  const auto act = kernels::activation_from_name(options_.activation);
  for (size_t i = 0; i < layers_.size(); ++i)
    h = linear(h, layers_[i]->weight, layers_[i]->bias, i + 1 < layers_.size() ? act : kernels::Activation::kNone);
  return h;
}

torch::Tensor Mlp::nll(const Batch& batch) { return likelihood_nll(options_, forward(batch.inputs), batch, tau_); }

torch::Tensor Mlp::predict(const torch::Tensor& inputs) { return likelihood_predict(options_, forward(inputs)); }

void Mlp::gibbs_step_likelihood(const Batch& train, at::Generator& gen) {
  gibbs_step_noise(options_, [&](const torch::Tensor& x) { return predict(x); }, train, tau_, gen);
}

std::map<std::string, double> Mlp::likelihood_hyperparameters() const {
  if (task() != Task::kRegression) return {};
  return {{"tau", tau_.item<double>()}};
}

}  // namespace sgmcmc
