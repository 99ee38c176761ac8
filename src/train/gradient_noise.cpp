#include "train/gradient_noise.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <mutex>

namespace sgmcmc {

GradientNoiseProbe::GradientNoiseProbe(uint64_t seed, double grad_scale, int64_t batch_size)
    : seed_(seed ^ 0x9e3779b97f4a7c15ULL),
      gen_(at::make_generator<at::CPUGeneratorImpl>(seed_)),
      grad_scale_(grad_scale),
      batch_size_(batch_size) {}

std::vector<torch::Tensor> GradientNoiseProbe::group_gradients(Model& model, const Sampler& sampler,
                                                               const Batch& train) {
  // chains()·n examples, chain-major, each chain's n drawn without replacement (as the run's own)
  const int64_t n = std::min<int64_t>(batch_size_, train.size());
  std::vector<torch::Tensor> idx;
  for (int64_t c = 0; c < model.chains(); ++c)
    idx.push_back(torch::randperm(train.size(), gen_, torch::TensorOptions().dtype(torch::kInt64)).slice(0, 0, n));
  const auto rows = torch::cat(idx).to(train.inputs.device());
  const Batch batch{train.inputs.index_select(0, rows), train.targets.index_select(0, rows)};

  for (const auto& p : sampler.parameters())
    if (p.grad().defined()) p.grad().zero_();
  auto nll = model.nll(batch);
  nll.backward(torch::full({}, grad_scale_, nll.options()));

  std::vector<torch::Tensor> out;
  for (const auto& group : sampler.param_groups()) {
    std::vector<torch::Tensor> parts;
    for (const auto& p : group.params)
      parts.push_back(p.grad().defined() ? p.grad().reshape(-1).to(torch::kFloat64) : torch::zeros({p.numel()}, torch::kFloat64).to(p.device()));
    out.push_back(parts.empty() ? torch::Tensor() : torch::cat(parts));
  }
  return out;
}

std::vector<torch::Tensor> GradientNoiseProbe::variances(Model& model, const Sampler& sampler, const Batch& train) {
  // What the chain's next step reads stays as it is: .grad, the mode, the model's buffers.
  std::vector<torch::Tensor> saved;
  for (const auto& p : sampler.parameters()) saved.push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
  const bool was_training = model.is_training();
  model.train(false);
  std::vector<torch::Tensor> out;
  try {
    const auto g1 = group_gradients(model, sampler, train);
    const auto g2 = group_gradients(model, sampler, train);
    for (size_t k = 0; k < g1.size(); ++k)
      out.push_back(g1[k].defined() ? (g1[k] - g2[k]).square_().mul_(0.5) : torch::Tensor());
  } catch (...) {
    model.train(was_training);
    throw;
  }
  model.train(was_training);
  const auto params = sampler.parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    auto p = params[i];
    if (saved[i].defined()) p.grad().copy_(saved[i]);
    else if (p.grad().defined()) p.mutable_grad() = torch::Tensor();
  }
  return out;
}

std::vector<double> GradientNoiseProbe::ratios(Model& model, const Sampler& sampler, const Batch& train,
                                               int64_t step) {
  {
    std::lock_guard<std::mutex> lock(gen_.mutex());
    gen_.set_current_seed(seed_ + static_cast<uint64_t>(step) * 0xbf58476d1ce4e5b9ULL);
  }
  torch::NoGradGuard no_grad_outside;  // the ratios' arithmetic; the backward passes enable their own
  std::vector<double> out;
  std::vector<torch::Tensor> v;
  {
    at::AutoGradMode grad_on(true);
    v = variances(model, sampler, train);
  }
  for (size_t g = 0; g < v.size(); ++g) out.push_back(v[g].defined() ? sampler.gradient_noise_ratio(g, v[g]) : NAN);
  return out;
}

}  // namespace sgmcmc
