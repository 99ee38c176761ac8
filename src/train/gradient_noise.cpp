#include "train/gradient_noise.h"

#include <ATen/record_function.h>

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
  // minibatch_chains()·n examples, chain-major, each chain's n drawn without replacement (as the run's own)
  const int64_t n = std::min<int64_t>(batch_size_, train.size());
  std::vector<torch::Tensor> idx;
  for (int64_t c = 0; c < model.minibatch_chains(); ++c)
    idx.push_back(torch::randperm(train.size(), gen_, torch::TensorOptions().dtype(torch::kInt64)).slice(0, 0, n));
  const auto rows = torch::cat(idx).to(train.inputs.device());
  const Batch batch{train.inputs.index_select(0, rows), train.targets.index_select(0, rows)};

  // torch::autograd::grad, not backward(): the chain's .grad stay as the next step reads them. (An
  // embedding's gradient comes back sparse: BPMF.)
  at::AutoGradMode grad_on(true);
  const auto params = sampler.parameters();
  const auto nll = model.nll(batch);
  const auto grads = torch::autograd::grad({nll}, params, {torch::full({}, grad_scale_, nll.options())},
                                           /*retain_graph=*/false, /*create_graph=*/false, /*allow_unused=*/true);
  std::vector<torch::Tensor> out;
  size_t i = 0;
  for (const auto& group : sampler.param_groups()) {
    std::vector<torch::Tensor> parts;
    for (size_t k = 0; k < group.params.size(); ++k, ++i)
      parts.push_back(grads[i].defined() ? (grads[i].is_sparse() ? grads[i].to_dense() : grads[i]).reshape(-1).to(torch::kFloat64)
                                         : torch::zeros({params[i].numel()}, params[i].options().dtype(torch::kFloat64)));
    out.push_back(parts.empty() ? torch::Tensor() : torch::cat(parts));
  }
  return out;
}

std::vector<torch::Tensor> GradientNoiseProbe::variances(Model& model, const Sampler& sampler, const Batch& train) {
  // eval mode: no dropout draws, no batch-norm statistics updated
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
  return out;
}

std::vector<double> GradientNoiseProbe::ratios(Model& model, const Sampler& sampler, const Batch& train,
                                               int64_t step) {
  RECORD_USER_SCOPE("sgmcmc::part.noise_probe");  // a rare part of an evaluation: bench/bench_epoch.cpp counts it apart
  {
    std::lock_guard<std::mutex> lock(gen_.mutex());
    gen_.set_current_seed(seed_ + static_cast<uint64_t>(step) * 0xbf58476d1ce4e5b9ULL);
  }
  const auto v = variances(model, sampler, train);
  std::vector<double> out;
  for (size_t g = 0; g < v.size(); ++g) out.push_back(sampler.gradient_noise_ratio(g, v[g]));
  return out;
}

}  // namespace sgmcmc
