#include "models/mlp_chains.h"

#include <cmath>
#include <stdexcept>

#include "models/linear.h"

namespace sgmcmc {

MlpChains::MlpChains(const MlpOptions& o, int64_t chains, at::Generator& gen)
    : options_(o), chains_(chains), tau_(o.noise_precision) {
  if (chains < 1) throw std::invalid_argument("chains: must be >= 1");
  if (o.inputs <= 0 || o.outputs <= 0) throw std::invalid_argument("model: mlp needs inputs > 0 and outputs > 0");
  if (o.sample_noise)
    throw std::invalid_argument("model.noise_prior: gamma is not available with parallel chains (use fixed)");
  torch::NoGradGuard no_grad;
  int64_t in = o.inputs;
  std::vector<int64_t> widths = o.hidden;
  widths.push_back(o.outputs);
  for (size_t i = 0; i < widths.size(); ++i) {
    if (widths[i] <= 0) throw std::invalid_argument("model.hidden: layer widths must be > 0");
    auto layer = register_module("fc" + std::to_string(i + 1), std::make_shared<torch::nn::Module>());
    auto w = layer->register_parameter("weight", torch::empty({chains, widths[i], in}));
    auto b = layer->register_parameter("bias", torch::empty({chains, widths[i]}));
    const double bound = 1.0 / std::sqrt(static_cast<double>(in));
    for (int64_t c = 0; c < chains; ++c) {  // chain c draws exactly what Mlp would
      w[c].uniform_(-bound, bound, gen);
      b[c].uniform_(-bound, bound, gen);
    }
    weights_.push_back(w);
    biases_.push_back(b);
    in = widths[i];
  }
}

Task MlpChains::task() const {
  return options_.likelihood == "gaussian" ? Task::kRegression : Task::kClassification;
}

torch::Tensor MlpChains::forward(const torch::Tensor& inputs) { return forward_impl(inputs, false); }

torch::Tensor MlpChains::forward_impl(const torch::Tensor& inputs, bool shared) {
  const auto act = kernels::activation_from_name(options_.activation);
  torch::Tensor h;
  for (size_t i = 0; i < weights_.size(); ++i) {
    const auto a = i + 1 < weights_.size() ? act : kernels::Activation::kNone;
    if (i == 0 && shared) {
      // Inputs [n, in] shared by every chain: one GEMM against all chains' first layers,
      // [n, in] x [in, C*out] -> [n, C, out] -> [C, n, out] (no C copies of the inputs).
      const int64_t n = inputs.size(0), out = weights_[0].size(1);
      h = linear(inputs.reshape({n, -1}), weights_[0].reshape({chains_ * out, -1}), biases_[0].reshape({-1}), a);
      h = h.view({n, chains_, out}).transpose(0, 1);
    } else {
      if (i == 0) h = inputs.reshape({chains_, inputs.size(1), -1});
      h = linear(h, weights_[i], biases_[i], a);  // per chain: act(h_c W_cᵀ + b_c), one batched product
    }
  }
  return h;
}

torch::Tensor MlpChains::nll(const Batch& batch) {
  const bool shared = minibatch_shared();
  const int64_t total = shared ? chains_ * batch.size() : batch.size();
  if (total % chains_ != 0)
    throw std::invalid_argument("MlpChains::nll: batch of " + std::to_string(total) + " is not chains x n");
  const int64_t n = total / chains_;
  // [C, n, out]; the targets chain-major (shared: each chain's are the batch's)
  auto f = shared ? forward_impl(batch.inputs, /*shared=*/true) : forward(batch.inputs.reshape({chains_, n, -1}));
  const auto y = shared ? batch.targets.repeat({chains_}) : batch.targets;
  if (task() == Task::kClassification)
    return torch::nn::functional::cross_entropy(
        f.reshape({total, -1}), y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
  auto r = f.reshape({total}) - y.to(f.dtype());
  return 0.5 * tau_ * r.pow(2).sum() + 0.5 * static_cast<double>(total) * (std::log(2 * M_PI) - std::log(tau_));
}

bool MlpChains::set_loss_sink(const torch::Tensor& sum, double weight) {
  fused_.loss_sum = sum;  // only the fused pass returns a defined nll here, and it adds into the sum
  fused_.loss_weight = weight;
  return true;
}

torch::Tensor MlpChains::nll_backward(const Batch& batch, double scale) {
#if defined(SGMCMC_WITH_CUDA)
  if (task() != Task::kClassification || !batch.inputs.is_cuda() || !kernels::mlp_fused_cuda_enabled()) return {};
  for (size_t i = 0; i < weights_.size(); ++i)
    if (!weights_[i].grad().defined() || !biases_[i].grad().defined()) return {};
  torch::NoGradGuard no_grad;
  std::vector<kernels::MlpLayerTensors> ls;
  for (size_t i = 0; i < weights_.size(); ++i)
    ls.push_back({weights_[i], biases_[i], weights_[i].mutable_grad(), biases_[i].mutable_grad(), {}, {}});
  const auto& x = batch.inputs;
  return kernels::mlp_backward_fused_cuda(x.dim() == 2 ? x : x.reshape({x.size(0), -1}), batch.targets, ls,
                                          kernels::activation_from_name(options_.activation), scale,
                                          /*overwrite=*/false, fused_, chains_, minibatch_shared());
#else
  (void)batch, (void)scale;
  return {};
#endif
}

torch::Tensor MlpChains::predict_chains(const torch::Tensor& inputs) {
  auto f = forward_impl(inputs, /*shared=*/true);
  if (task() == Task::kClassification) return torch::softmax(f, 2);
  return f.squeeze(2);
}

torch::Tensor MlpChains::predict(const torch::Tensor& inputs) { return predict_chains(inputs).mean(0); }

std::map<std::string, double> MlpChains::likelihood_hyperparameters() const {
  if (task() != Task::kRegression) return {};
  return {{"tau", tau_}};
}

}  // namespace sgmcmc
