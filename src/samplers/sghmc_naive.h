// Naive stochastic gradient HMC: Hamiltonian dynamics driven by the noisy gradient, with NO friction
// and NO Metropolis–Hastings correction (T. Chen, E. B. Fox and C. Guestrin, ICML 2014, 000 §3.1,
// eq. 5–7, in the SGD-with-momentum form of §3.3 with η = ε², v = εp):
//   every `resample_every` steps (at steps 0, k, 2k, …): v ~ N(0, ηT)       (0 = never: v₀ = 0)
//   v ← v − η∇Ũ(θ);   θ ← θ + v.
// Kept as a negative control: the gradient noise injects energy that nothing dissipates, so the
// chain's spread grows far beyond the target's (000 Fig. 1 and §3.1, Theorem 3.1).
#pragma once

#include <torch/arg.h>

#include "core/option_table.h"
#include "samplers/sampler.h"

namespace sgmcmc {

struct SghmcNaiveOptions {
  SghmcNaiveOptions() = default;
  explicit SghmcNaiveOptions(double lr) : lr_(lr) {}
  void validate() const;
  TORCH_ARG(double, lr) = 1e-4;              // η
  TORCH_ARG(int64_t, resample_every) = 50;   // >= 0
  TORCH_ARG(double, temperature) = 1.0;
};

// The `sampler: {name: sghmc-naive}` keys, with their ranges and meanings (defaults: the struct's).
const OptionTable<SghmcNaiveOptions>& sghmc_naive_option_table();

class SghmcNaive : public Sampler {
 public:
  SghmcNaive(std::vector<ParamGroup> groups, at::Generator generator, SghmcNaiveOptions options);
  std::string name() const override { return "sghmc-naive"; }
  void step() override;

 protected:
  std::vector<std::pair<std::string, torch::Tensor*>> state_tensors() override;

 private:
  SghmcNaiveOptions options_;
  std::vector<torch::Tensor> momentum_;
};

}  // namespace sgmcmc
