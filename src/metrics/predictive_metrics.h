// Metrics of a predictive distribution on labelled points: the one place where a new metric goes
// (it then appears in metrics.csv, summary.json and `sgmcmc predict` alike).
//
//  classification, prediction = class probabilities [n, K]:
//    error = mean 1[argmax p ≠ y],   nll = −mean log p(y)
//  regression, prediction = predictive means [n] with Gaussian noise precision τ:
//    rmse = sqrt(mean (f − y)²),   nll = mean τ(f − y)²/2 − log(τ)/2 + log(2π)/2
// Densities for the mixture predictive of regression samplers: log N(y; f, 1/τ) per point, and
// log (1/C) Σ_c N(y; f_c, 1/τ) for per-chain predictions [C, n].
#pragma once

#include <map>
#include <string>

#include <torch/torch.h>

namespace sgmcmc {

// Classification {error, nll}; regression {rmse, nll} (predictions clipped to [lo, hi] when `clip`).
// Empty for an undefined or empty prediction.
std::map<std::string, double> predictive_metrics(const torch::Tensor& prediction, const torch::Tensor& targets,
                                                 bool classification, double tau = 1.0, bool clip = false,
                                                 double lo = 0, double hi = 0);

// log N(y; f, 1/τ) per point (float64).
torch::Tensor gaussian_log_density(const torch::Tensor& f, const torch::Tensor& y, double tau);

// log (1/C) Σ_c N(y; f_c, 1/τ) per point from predictions [C, n] (or log N(y; f, 1/τ) for [n]).
torch::Tensor mixture_log_density(const torch::Tensor& f, const torch::Tensor& y, double tau);

// Mean log-likelihood of each chain's prediction [C] from per-chain predictions [C, n, ...]:
// classification log p_c(y); regression log N(y; f_c, 1/τ).
torch::Tensor chain_log_likelihood(const torch::Tensor& per_chain, const torch::Tensor& targets, bool classification,
                                   double tau);

}  // namespace sgmcmc
