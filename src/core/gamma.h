// Gamma draws with an explicit generator: the Gibbs step of a Gaussian prior's precision and the
// hyperparameter draws of BPMF and the likelihoods' noise precisions.
#pragma once

#include <torch/torch.h>

namespace sgmcmc {

// Gamma(shape, rate) draws, one per entry of `shape` (float64 tensor, any device), from `gen`
// (at::_standard_gamma with an explicit generator).
torch::Tensor sample_gamma(const torch::Tensor& shape, const torch::Tensor& rate, at::Generator& gen);

}  // namespace sgmcmc
