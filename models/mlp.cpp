#include "models/mlp.h"

#include <cmath>
#include <stdexcept>

#include "priors/gaussian_prior.h"

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
  for (size_t i = 0; i < layers_.size(); ++i) {
    h = layers_[i]->forward(h);
    if (i + 1 < layers_.size()) {
      if (options_.activation == "sigmoid") h = torch::sigmoid(h);
      else if (options_.activation == "relu") h = torch::relu(h);
      else h = torch::tanh(h);
    }
  }
  return h;
}

torch::Tensor Mlp::nll(const Batch& batch) {
  auto f = forward(batch.inputs);
  if (task() == Task::kClassification)
    return torch::nn::functional::cross_entropy(
        f, batch.targets, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
  auto r = f.squeeze(1) - batch.targets.to(f.dtype());
  const double n = static_cast<double>(batch.size());
  return 0.5 * tau_ * r.pow(2).sum() - 0.5 * n * torch::log(tau_) + 0.5 * n * std::log(2 * M_PI);
}

torch::Tensor Mlp::predict(const torch::Tensor& inputs) {
  auto f = forward(inputs);
  if (task() == Task::kClassification) return torch::softmax(f, 1);
  return f.squeeze(1);
}

void Mlp::gibbs_step_likelihood(const Batch& train, at::Generator& gen) {
  if (task() != Task::kRegression || !options_.sample_noise) return;
  torch::NoGradGuard no_grad;
  auto sse = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(train.targets.device()));
  const int64_t n = train.size(), chunk = 10000;
  for (int64_t i = 0; i < n; i += chunk) {
    auto f = predict(train.inputs.slice(0, i, std::min(n, i + chunk)));
    sse += (f - train.targets.slice(0, i, std::min(n, i + chunk)).to(f.dtype())).to(torch::kFloat64).pow(2).sum();
  }
  auto dev = gen.device();
  auto shape = torch::full({1}, options_.noise_alpha + 0.5 * static_cast<double>(n), torch::TensorOptions().dtype(torch::kFloat64).device(dev));
  auto rate = (sse * 0.5 + options_.noise_beta).reshape({1}).to(dev);
  tau_.copy_(sample_gamma(shape, rate, gen).reshape({}).to(tau_.device()));
}

std::map<std::string, double> Mlp::likelihood_hyperparameters() const {
  if (task() != Task::kRegression) return {};
  return {{"tau", tau_.item<double>()}};
}

}  // namespace sgmcmc
