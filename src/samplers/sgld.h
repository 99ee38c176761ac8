// Stochastic gradient Langevin dynamics.
//   θ ← θ − η ∇Ũ(θ) + sqrt(2 η T) ξ,   ξ ~ N(0, I)
// M. Welling and Y. W. Teh, "Bayesian learning via stochastic gradient Langevin dynamics",
// ICML 2011; step-size form as in C. Chen, "Large-scale Bayesian learning with SG-MCMC" (001),
// Algorithm 1. Welling & Teh's step ε equals 2η here.
// Step-size parametrisation (the trainer's sampler.lr_scaling; this class always receives η):
// total (the default): lr = η on ∇Ũ = (N/n)Σ_batch∇ℓ_i + ∇(−log p(θ)); per_datum: lr = η·N, a step
// of lr on the mean per-datum loss (as SGD's learning rate), with noise variance 2·lr·T/N.
#pragma once

#include <torch/arg.h>

#include "core/option_table.h"
#include "samplers/sampler.h"

namespace sgmcmc {

struct SgldOptions {
  SgldOptions() = default;
  explicit SgldOptions(double lr) : lr_(lr) {}
  // Throws std::invalid_argument naming the offending option.
  void validate() const;
  TORCH_ARG(double, lr) = 1e-4;
  TORCH_ARG(double, temperature) = 1.0;
};

// The `sampler: {name: sgld}` keys, with their ranges and meanings (defaults: the struct's).
const OptionTable<SgldOptions>& sgld_option_table();

class Sgld : public Sampler {
 public:
  Sgld(std::vector<ParamGroup> groups, at::Generator generator, SgldOptions options);
  std::string name() const override { return "sgld"; }
  bool has_fused_step() const override { return true; }
  void step() override;
  bool checks_gradient_noise() const override { return true; }

 protected:
  // η_g·mean(V)/(2T): the gradient adds η²V to a step's variance, the sampler injects 2ηT.
  double noise_ratio(size_t group, const torch::Tensor& grad_variance) const override;
};

}  // namespace sgmcmc
