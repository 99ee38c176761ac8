// The minibatch gradient's noise against the noise the sampler injects (the health check's "noise").
//
// An SG-MCMC chain samples the posterior only while the noise it injects dominates the noise of its
// stochastic gradient: Welling & Teh (ICML 2011, §4) need η·V ≪ 2T for SGLD, Chen et al. (000,
// §3.3) β̂ = ηV/2 ≤ α for SGHMC. Past that point the chain's spread is set by the minibatches, not by
// the posterior, whatever the number of steps. The probe measures V where the chain is: ∇Ũ at the
// current θ on two independent minibatches of the run's size, ĝ₁ and ĝ₂; the prior's term cancels
// in ĝ₁ − ĝ₂, and (ĝ₁ − ĝ₂)²/2 estimates the variance of ∇Ũ's minibatch noise per coordinate
// (unbiased). The sampler turns it into its ratio (Sampler::gradient_noise_ratio), averaged over a
// parameter group: the estimate from one pair is noisy per coordinate, not in the mean over a group.
//
// It leaves the chain as it was: the model runs in eval mode (no dropout draws, no batch-norm
// statistics updated), the gradients come from torch::autograd::grad (no .grad is touched), and the
// minibatches come from the probe's own generator. Cost: two forward and backward passes per probe; probes run at the 1st, 2nd, 4th, 8th, …
// evaluation (due()), ~10 in an 800-epoch run.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "core/batch.h"
#include "models/model.h"
#include "samplers/sampler.h"

namespace sgmcmc {

class GradientNoiseProbe {
 public:
  // `grad_scale`: N/n of ∇Ũ; `batch_size`: n per chain.
  GradientNoiseProbe(uint64_t seed, double grad_scale, int64_t batch_size);

  // Per sampler group, the per-coordinate variance estimate of ∇Ũ's minibatch noise (flat, in the
  // group's parameter order; undefined for a group without gradients).
  std::vector<torch::Tensor> variances(Model& model, const Sampler& sampler, const Batch& train);
  // Per sampler group, Sampler::gradient_noise_ratio of variances() (NaN where it does not apply).
  // The minibatches are drawn from the seed and `step` alone, so a resumed run probes as the
  // uninterrupted one.
  std::vector<double> ratios(Model& model, const Sampler& sampler, const Batch& train, int64_t step);

  // Whether the k-th evaluation (1-based) probes: k a power of two.
  static bool due(int64_t evaluation) { return evaluation > 0 && (evaluation & (evaluation - 1)) == 0; }

 private:
  // (N/n)·∇nll on a fresh minibatch per chain, flat per sampler group (undefined where no gradient).
  std::vector<torch::Tensor> group_gradients(Model& model, const Sampler& sampler, const Batch& train);

  uint64_t seed_;
  at::Generator gen_;
  double grad_scale_;
  int64_t batch_size_;
};

}  // namespace sgmcmc
