// Each sampler's update as a plain function over tensors: no state of its own, no loops over
// parameters, no bookkeeping. The sampler classes call these; tests call them with fixed noise
// for golden values; fused kernels (CUDA) are tested against them.
//
// Conventions: `theta`, and the state tensors passed by non-const reference, are updated in place.
// `noise` is a standard normal tensor shaped like `theta`. `grad` is ∇Ũ.
#pragma once

#include <torch/torch.h>

namespace sgmcmc::rules {

// SGLD (Welling & Teh 2011), in the step-size form of Chen's tutorial (001, Alg. 1):
//   θ ← θ − η ∇Ũ(θ) + sqrt(2 η T) ξ,   ξ ~ N(0, I).
// (Welling & Teh's ε corresponds to η = ε/2.)
void sgld_update(torch::Tensor& theta, const torch::Tensor& grad, const torch::Tensor& noise,
                 double lr, double temperature);

}  // namespace sgmcmc::rules
