// Stochastic HMC with N_l minibatch leapfrog steps and partial momentum refreshment: SGHMC seen as
// the Lie–Trotter integrator of Hamiltonian dynamics with friction (G. Franzese, D. Milios,
// M. Filippone and P. Michiardi, "Revisiting the effects of stochasticity for Hamiltonian samplers",
// ICML 2022; 004). Unit mass, step η (the leapfrog step in (θ, r); η² is SGHMC's lr), friction C:
//   a trajectory: N_l leapfrog steps  r ← r − (η/2)∇Ũ(θ);  θ ← θ + ηr;  r ← r − (η/2)∇Ũ(θ),
//   each on its own minibatch, then    r ← α r + sqrt((1 − α²) T) ξ,   α = exp(−η N_l C),  ξ ~ N(0, I).
// With N_l = 1 this is 004's Lie–Trotter step of the SDE dθ = r dt, dr = −∇U dt − Cr dt + sqrt(2C) dW
// (with v = ηr: SGHMC's momentum 1 − α ≈ ηC); with C = ∞ (α = 0) it is HMC without the accept step.
//
// One step() is one gradient, so runs compare with SGHMC at equal gradient evaluations. The two
// half kicks between leapfrog steps share a gradient and merge into r ← r − η∇Ũ; at a trajectory
// boundary (every N_l steps, counting from 0) the refreshment sits between the half kicks:
//   boundary:  r ← r − (η/2)g;  r ← α r + sqrt((1 − α²)T) ξ;  r ← r − (η/2)g;  θ ← θ + ηr
//   otherwise: r ← r − ηg;  θ ← θ + ηr
// (rules::stochastic_hmc_update). Step 0 draws r fresh (α = 0). A parameter group's lr_scale scales η.
// The minibatch noise of ∇Ũ is not corrected (no β̂): its heat vanishes as η → 0 (004 §3).
#pragma once

#include <torch/arg.h>

#include "core/option_table.h"
#include "samplers/sampler.h"

namespace sgmcmc {

struct StochasticHmcOptions {
  StochasticHmcOptions() = default;
  explicit StochasticHmcOptions(double lr) : lr_(lr) {}
  // Throws std::invalid_argument naming the offending option.
  void validate() const;
  TORCH_ARG(double, lr) = 1e-3;             // η, the leapfrog step
  TORCH_ARG(int64_t, leapfrog_steps) = 1;   // N_l >= 1
  TORCH_ARG(double, friction) = 1.0;        // C >= 0 (α = exp(−η N_l C); 0: no refreshment after step 0)
  TORCH_ARG(double, temperature) = 1.0;
};

// The `sampler: {name: stochastic-hmc}` keys, with their ranges and meanings (defaults: the struct's).
const OptionTable<StochasticHmcOptions>& stochastic_hmc_option_table();

class StochasticHmc : public Sampler {
 public:
  StochasticHmc(std::vector<ParamGroup> groups, at::Generator generator, StochasticHmcOptions options);
  std::string name() const override { return "stochastic-hmc"; }
  void step() override;
  // α of the last boundary (the first group's η), for logging.
  std::map<std::string, double> diagnostics() const override { return {{"refresh_alpha", last_alpha_}}; }

 protected:
  std::vector<std::pair<std::string, torch::Tensor*>> state_tensors() override;

 private:
  StochasticHmcOptions options_;
  std::vector<torch::Tensor> momentum_;
  double last_alpha_ = 0;
};

}  // namespace sgmcmc
