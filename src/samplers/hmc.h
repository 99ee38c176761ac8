// Exact Hamiltonian Monte Carlo with leapfrog and a Metropolis–Hastings test, on FULL gradients
// (for synthetic targets and as a reference; 000 Alg. 1; R. M. Neal, "MCMC using Hamiltonian
// dynamics", 2011). Target ∝ exp(−U(θ)/T), mass M = I, H(θ, r) = U(θ) + rᵀr/2.
// One `step(closure)`:
//   r ~ N(0, T I);  (U₀, ∇U) from the closure at θ₀;
//   r ← r − ε/2 ∇U;  repeat L times { θ ← θ + ε r;  ∇U ← closure;  r ← r − ε ∇U (ε/2 on the last) };
//   accept with probability min(1, exp(−(H₁ − H₀)/T)) (uniform from the sampler's generator);
//   on reject restore θ₀ and its gradient.
// `lr` is the leapfrog step ε (NOT ε²). `step()` without a closure throws std::logic_error.
// diagnostics(): "acceptance_rate" (accepted / proposed over all steps, saved in checkpoints).
#pragma once

#include <torch/arg.h>

#include "core/option_table.h"
#include "samplers/sampler.h"

namespace sgmcmc {

struct HmcOptions {
  HmcOptions() = default;
  explicit HmcOptions(double lr) : lr_(lr) {}
  void validate() const;
  TORCH_ARG(double, lr) = 0.1;               // leapfrog step size ε
  TORCH_ARG(int64_t, leapfrog_steps) = 50;   // L >= 1
  TORCH_ARG(double, temperature) = 1.0;      // > 0
};

// The `sampler: {name: hmc}` keys, with their ranges and meanings (defaults: the struct's).
const OptionTable<HmcOptions>& hmc_option_table();

class Hmc : public Sampler {
 public:
  Hmc(std::vector<ParamGroup> groups, at::Generator generator, HmcOptions options);
  std::string name() const override { return "hmc"; }
  bool runs_at_zero_temperature() const override { return false; }  // the MH ratio divides by T
  void step() override;
  torch::Tensor step(const Closure& closure) override;
  bool reads_closure_value() const override { return true; }
  bool calls_closure_once() const override { return false; }
  std::map<std::string, double> diagnostics() const override;
  double acceptance_rate() const;

 protected:
  std::vector<std::pair<std::string, torch::Tensor*>> state_tensors() override;

 private:
  torch::Tensor eval(const Closure& closure);
  HmcOptions options_;
  torch::Tensor counts_;  // [accepted, proposed], float64
};

}  // namespace sgmcmc
