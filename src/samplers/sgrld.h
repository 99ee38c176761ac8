// Stochastic gradient Riemannian Langevin dynamics with a diagonal metric.
//   θ ← θ + h(−G(θ)∇Ũ(θ) + T·Γ(θ)) + N(0, 2hT·G(θ)),   Γᵢ(θ) = Σⱼ ∂Gᵢⱼ/∂θⱼ = ∂Gᵢᵢ/∂θᵢ
// S. Patterson and Y. W. Teh, "Stochastic gradient Riemannian Langevin dynamics on the probability
// simplex", NIPS 2013 (eq. 7, from Girolami & Calderhead's Riemann manifold Langevin); 001 ("SGRLD for
// LDA is a good example"). G is the inverse metric (the preconditioner). The Γ term is what keeps
// exp(−Ũ/T) stationary where G varies: without it the chain samples exp(−Ũ/T)/G. pSGLD (psgld.h) is the
// case of an adaptive G whose Γ is dropped.
//
// sampler.metric, the diagonal G and its Γ (c: sampler.metric_scale):
//   expanded_mean (the default): Gᵢ = |θᵢ|, Γᵢ = sign θᵢ, and θ ← |θ| after each step (the mirrored
//       boundary at 0). Patterson & Teh's expanded-mean parametrisation of a point on the simplex
//       (π = θ/Σθ with θ ≥ 0); for a Gamma-shaped Ũ = Σ θᵢ − (αᵢ − 1) log θᵢ the step is their
//       θ ← |θ + h(α − θ) + √(2hθ) ξ|. Needs non-negative parameters (checked at construction).
//   quadratic: Gᵢ = 1 + c·θᵢ², Γᵢ = 2c·θᵢ: steps shrink where |θ| is large, for any model.
//   identity: G = I, Γ = 0 (SGLD).
// Step-size parametrisation: lr = h on ∇Ũ = (N/n)Σ_batch∇ℓ_i + ∇(−log p(θ)) (total).
#pragma once

#include <torch/arg.h>

#include "core/option_table.h"
#include "samplers/sampler.h"

namespace sgmcmc {

namespace rules {
// One SGRLD step of θ in place with standard normal `noise` (the rule the sampler applies per parameter).
// `metric`: "expanded_mean" | "quadratic" | "identity"; `scale`: c of the quadratic metric.
void sgrld_update(torch::Tensor& theta, const torch::Tensor& grad, const torch::Tensor& noise, double lr,
                  double temperature, const std::string& metric, double scale);
}  // namespace rules

struct SgrldOptions {
  SgrldOptions() = default;
  explicit SgrldOptions(double lr) : lr_(lr) {}
  // Throws std::invalid_argument naming the offending option.
  void validate() const;
  TORCH_ARG(double, lr) = 1e-3;
  TORCH_ARG(double, temperature) = 1.0;
  TORCH_ARG(std::string, metric) = "expanded_mean";  // expanded_mean | quadratic | identity
  TORCH_ARG(double, metric_scale) = 1.0;             // c of the quadratic metric, > 0
};

// The `sampler: {name: sgrld}` keys, with their ranges and meanings (defaults: the struct's).
const OptionTable<SgrldOptions>& sgrld_option_table();

class Sgrld : public Sampler {
 public:
  Sgrld(std::vector<ParamGroup> groups, at::Generator generator, SgrldOptions options);
  std::string name() const override { return "sgrld"; }
  void step() override;

 private:
  SgrldOptions options_;
};

}  // namespace sgmcmc
