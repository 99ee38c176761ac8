// Convergence diagnostics for several chains: split-R̂ and effective sample size.
//
// Input: draws [S, C] (S draws of a scalar in each of C chains, in order).
// split_rhat: each chain is split in half (2C chains of S/2 draws; an odd draw in the middle is dropped),
//   W = mean within-chain variance, B/n = variance of the chain means, var⁺ = (n−1)/n W + B/n,
//   R̂ = sqrt(var⁺ / W)  (Gelman et al., BDA3 §11.4). R̂ → 1 as the chains agree; > 1.01 is a warning sign.
// ess: multi-chain ESS (BDA3 §11.5, as in Stan): ρ̂_t = 1 − (W − mean_c γ̂_{c,t}) / var⁺ with γ̂_{c,t} the
//   autocovariance of chain c at lag t; Geyer's initial positive sequence (sums of adjacent pairs,
//   truncated at the first negative pair, made monotone); ESS = C·S / (−1 + 2 Σ_pairs).
// Both return NaN for fewer than 4 draws per chain, and R̂ = 1, ESS = C·S when every draw is equal.
#pragma once

#include <torch/torch.h>

namespace sgmcmc {

double split_rhat(const torch::Tensor& draws);
double effective_sample_size(const torch::Tensor& draws);

}  // namespace sgmcmc
