// SGNUTS: stochastic-gradient HMC whose trajectory lengths come from the no-U-turn criterion.
//
// 003 names "SGNUTS, a novel extension to SGHMC that uses ideas from the popular No U-Turn Sampler" and
// gives no algorithm. NUTS (M. D. Hoffman and A. Gelman, JMLR 2014) needs exact energies for its
// multinomial (or slice) choice of a state along a doubled trajectory: with minibatch gradients and
// energies that choice is biased, and a trajectory stopped where it turns back ends, on average, at
// the turning points, away from the mode. So the criterion here picks lengths only, as in empirical
// HMC (C. Wu, J. Stoehr and C. P. Robert, "Faster Hamiltonian Monte Carlo by learning leapfrog scale",
// 2018), and the dynamics are stochastic HMC's (004; samplers/stochastic_hmc.h), one minibatch
// gradient a step:
//   a trajectory: r ← ξ ~ N(0, T·I) (a full refresh), then L leapfrog steps of size η
//     r ← r − (η/2)∇Ũ(θ);  θ ← θ + ηr;  r ← r − (η/2)∇Ũ(θ)    (each ∇Ũ on its own minibatch)
//   (rules::stochastic_hmc_update with α = 0 at the trajectory's first step).
// Its length L:
//   adaptation (the first sampler.adapt_trajectories trajectories): run until the trajectory turns
//     back, the first step k ≥ 2 with (θ_k − θ_0)·r_k < 0 or (θ_k − θ_0)·r_0 < 0 (NUTS's criterion,
//     eq. 9, on the forward trajectory, checked at every step rather than at doublings), or
//     sampler.max_leapfrog steps; each such k is recorded;
//   then: L drawn uniformly from the recorded lengths at each trajectory's start.
// What holds: after adaptation a trajectory's length does not depend on the trajectory, so each
// trajectory is a stochastic-HMC transition with a random length, and the chain keeps stochastic HMC's
// stationary distribution: exp(−U/T) up to the leapfrog's O(η²) error (there is no accept step) and the
// minibatch noise's heat, which grows with η and vanishes as η → 0 (004 §3). What does not: the
// adaptation's steps follow the stopping rule and are biased; they belong in the burn-in
// (adapt_trajectories × the typical length is the number of steps to discard). Unit mass: a badly
// scaled posterior turns back along its narrow directions first, as NUTS with a unit metric does.
// Step-size parametrisation: η on ∇Ũ = (N/n)Σ∇ℓ + ∇(−log p) (total); η² is SGHMC's lr.
#pragma once

#include <torch/arg.h>

#include "core/option_table.h"
#include "samplers/sampler.h"

namespace sgmcmc {

struct SgnutsOptions {
  SgnutsOptions() = default;
  explicit SgnutsOptions(double lr) : lr_(lr) {}
  void validate() const;
  TORCH_ARG(double, lr) = 1e-2;                  // η, the leapfrog step
  TORCH_ARG(int64_t, adapt_trajectories) = 50;   // trajectories whose U-turn lengths are recorded
  TORCH_ARG(int64_t, max_leapfrog) = 256;        // the longest trajectory
  TORCH_ARG(double, temperature) = 1.0;
};

// The `sampler: {name: sgnuts}` keys, with their ranges and meanings (defaults: the struct's).
const OptionTable<SgnutsOptions>& sgnuts_option_table();

class Sgnuts : public Sampler {
 public:
  Sgnuts(std::vector<ParamGroup> groups, at::Generator generator, SgnutsOptions options);
  std::string name() const override { return "sgnuts"; }
  void step() override;
  // The recorded lengths' mean and the current trajectory's length (0 while adapting), for logging.
  std::map<std::string, double> diagnostics() const override;
  // The U-turn lengths recorded so far.
  std::vector<int64_t> lengths() const;

 protected:
  std::vector<std::pair<std::string, torch::Tensor*>> state_tensors() override;

 private:
  bool turned_back() const;

  SgnutsOptions options_;
  std::vector<torch::Tensor> momentum_, theta0_, r0_;
  // int64 on the CPU: [0] steps into the current trajectory, [1] its length (0: ends at its U-turn),
  // [2] lengths recorded; lengths_ [adapt_trajectories] the recorded lengths.
  torch::Tensor counters_, lengths_;
};

}  // namespace sgmcmc
