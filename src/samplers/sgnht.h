// Stochastic gradient Nosé–Hoover thermostat with ONE global scalar thermostat ξ.
// N. Ding, Y. Fang, R. Babbush, C. Chen, R. D. Skeel and H. Neven, "Bayesian sampling using
// stochastic gradient thermostats", NIPS 2014; 001 Algorithm 3. d = total number of scalar
// parameters over ALL tensors; h = lr; A = diffusion; T = temperature.
//
// Euler (parameters stored at θ_t, gradient at θ_t):
//   p ← p − h∇Ũ(θ) − ξ p h + sqrt(2AhT) N(0, I);   ξ ← ξ + (pᵀp/d − T) h;   θ ← θ + p h.
// (001 Alg. 3 moves θ first and evaluates the gradient at the new θ; with the gradient supplied by
//  the caller at the current θ the order above is the same chain shifted by half an update.)
// SSI (symmetric splitting ABOBA, as for mSGNHT in 002 §3 but with a scalar ξ; parameters and ξ
// stored at the half-step position where the gradient is evaluated, the two A half steps merged):
//   p ← e^{−ξh/2} p;  p ← p − h∇Ũ + sqrt(2AhT) N;  p ← e^{−ξh/2} p;  θ ← θ + p h;  ξ ← ξ + (pᵀp/d − T) h.
// Initial state: p = 0, ξ = xi_init (default A). diagnostics(): "thermostat_mean" (= ξ).
#pragma once

#include <torch/arg.h>

#include <optional>

#include "core/option_table.h"
#include "samplers/sampler.h"

namespace sgmcmc {

struct SgnhtOptions {
  SgnhtOptions() = default;
  explicit SgnhtOptions(double lr) : lr_(lr) {}
  void validate() const;
  TORCH_ARG(double, lr) = 1e-4;                  // h
  TORCH_ARG(double, diffusion) = 1.0;            // A >= 0
  TORCH_ARG(std::optional<double>, xi_init);     // default: A
  TORCH_ARG(std::string, integrator) = "euler";  // euler | ssi
  TORCH_ARG(double, temperature) = 1.0;
};

// The `sampler: {name: sgnht}` keys, with their ranges and meanings (defaults: the struct's).
const OptionTable<SgnhtOptions>& sgnht_option_table();

class Sgnht : public Sampler {
 public:
  Sgnht(std::vector<ParamGroup> groups, at::Generator generator, SgnhtOptions options);
  std::string name() const override { return "sgnht"; }
  void step() override;
  std::map<std::string, double> diagnostics() const override;

 protected:
  std::vector<std::pair<std::string, torch::Tensor*>> state_tensors() override;

 private:
  SgnhtOptions options_;
  std::vector<torch::Tensor> momentum_;
  torch::Tensor xi_;  // scalar, float64, on CPU
  double dim_ = 0;
};

}  // namespace sgmcmc
