// Synthetic targets with known densities, for testing samplers (vectorised over chains: θ has shape
// [chains] for 1-D targets or [chains, 2] for the 2-D Gaussian; energies are per chain).
//   gaussian2d:  U(θ) = ½ θᵀ Σ⁻¹ θ, Σ = [[1, ρ], [ρ, 1]], ρ = 0.9         (000 Fig. 3)
//   fig1:        U(θ) = −2θ² + θ⁴                                       (000 Fig. 1)
//   double_well: U(θ) = (θ+4)(θ+1)(θ−1)(θ−3)/14 + 0.5                   (002 Figs. 1–2; 001 Santa)
#pragma once

#include <torch/torch.h>

#include <functional>
#include <string>

namespace sgmcmc::sim {

struct Target {
  std::string name;
  std::function<torch::Tensor(const torch::Tensor&)> energy;  // per-chain U(θ)
  std::function<torch::Tensor(const torch::Tensor&)> grad;    // ∇U(θ), shaped like θ
  // For 1-D targets: the range histograms are taken over.
  double lo = 0, hi = 0;
};

Target gaussian2d(double rho = 0.9);
Target fig1_quartic();
Target double_well();

// Probability of each of `bins` equal bins on [lo, hi] under exp(−U) (normalised over [lo, hi]),
// by the midpoint rule on a fine grid.
torch::Tensor bin_probabilities(const Target& target, int64_t bins);
// Histogram of samples on [lo, hi] (samples outside are dropped), normalised to sum 1.
torch::Tensor histogram(const torch::Tensor& samples, double lo, double hi, int64_t bins);
// KL(p̂ ‖ p) = Σ p̂ log(p̂/p) over bins where p̂ > 0, and total variation ½ Σ |p̂ − p|.
double kl_divergence(const torch::Tensor& p_hat, const torch::Tensor& p);
double total_variation(const torch::Tensor& p_hat, const torch::Tensor& p);

// Integrated autocorrelation time of x [chains, steps], averaged over chains (initial positive
// sequence: the sum of autocorrelations stops at the first non-positive lag), at least 1.
double autocorrelation_time(const torch::Tensor& x, int64_t max_lag = 5000);

}  // namespace sgmcmc::sim
