// Preconditioned SGLD with an RMSprop preconditioner.
//   V ← α V + (1−α) g⊙g,    G = 1 ⊘ (eps + sqrt(V)),
//   θ ← θ − η G⊙g + sqrt(2 η T G) ⊙ ξ,   ξ ~ N(0, I),   g = ∇Ũ(θ).
// C. Li, C. Chen, D. Carlson and L. Carin, "Preconditioned stochastic gradient Langevin dynamics
// for deep neural networks", AAAI 2016 (Alg. 1); 001 (pSGLD slides).
// As in the paper's practical version, the correction term Γ(θ) = Σ_j ∂G_ij/∂θ_j is DROPPED
// (it is O(1−α) small, costly, and the paper reports no visible effect); the chain is therefore
// slightly biased where G varies with θ.
// First step: V is initialised to g⊙g (instead of αV₀ + (1−α)g⊙g with V₀ = 0), so G does not
// start near 1/eps and the first move is not a blow-up of size η/eps.
#pragma once

#include <torch/arg.h>

#include "core/option_table.h"
#include "samplers/sampler.h"

namespace sgmcmc {

struct PsgldOptions {
  PsgldOptions() = default;
  explicit PsgldOptions(double lr) : lr_(lr) {}
  void validate() const;
  TORCH_ARG(double, lr) = 1e-4;
  TORCH_ARG(double, temperature) = 1.0;
  TORCH_ARG(double, alpha) = 0.99;  // RMS decay, in (0, 1]
  TORCH_ARG(double, eps) = 1e-5;    // > 0
};

// The `sampler: {name: psgld}` keys, with their ranges and meanings (defaults: the struct's).
const OptionTable<PsgldOptions>& psgld_option_table();

class Psgld : public Sampler {
 public:
  Psgld(std::vector<ParamGroup> groups, at::Generator generator, PsgldOptions options);
  std::string name() const override { return "psgld"; }
  bool has_fused_step() const override { return true; }
  void step() override;
  std::map<std::string, double> diagnostics() const override;
  bool checks_gradient_noise() const override { return true; }

 protected:
  // η_g·mean(G⊙V)/(2T): the gradient adds η²G²V to a step's variance, the sampler injects 2ηTG
  // (NaN before the first step: no preconditioner yet).
  double noise_ratio(size_t group, const torch::Tensor& grad_variance) const override;
  std::vector<std::pair<std::string, torch::Tensor*>> state_tensors() override;

 private:
  PsgldOptions options_;
  StateBuffer square_avg_;  // V
};

}  // namespace sgmcmc
