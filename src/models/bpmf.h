// Bayesian probabilistic matrix factorization (the simplified BPMF of 000 §4.3 / App. H.2):
//   Y_ij | U, V, a, b ~ N(U_iᵀV_j + a_i + b_j + μ, 1/τ)
//   U_ki ~ N(0, 1/λ_U), V_kj ~ N(0, 1/λ_V), a_i ~ N(0, 1/λ_a), b_j ~ N(0, 1/λ_b),
//   λ_U, λ_V, λ_a, λ_b ~ Gamma(1, 1) (Gibbs-resampled by the trainer's prior, one group each).
// μ is a fixed buffer (the training mean). τ is fixed, or, with sample_tau, Gamma(α, β)-distributed
// (shape α, rate β) and resampled in gibbs_step_likelihood from its conditional
//   τ | rest ~ Gamma(α + N/2, β + ½ Σ_train (y − ŷ)²).
// T. Chen, E. B. Fox and C. Guestrin, "Stochastic gradient Hamiltonian Monte Carlo", ICML 2014 (000);
// R. Salakhutdinov and A. Mnih, "Bayesian probabilistic matrix factorization using MCMC", ICML 2008.
//
// nll(batch) = Σ_batch [τ/2 (y − ŷ)² − ½ log τ + ½ log 2π]. Its gradient reaches U, V, a, b only in
// the rows of the users/items in the batch (index_select; the backward is one index_add into the
// dense gradient). The prior term and the sampler's noise are dense over every row.
#pragma once

#include <torch/arg.h>

#include <memory>

#include "core/option_map.h"
#include "core/option_table.h"
#include "data/dataset.h"
#include "models/model.h"

namespace sgmcmc {

struct BpmfOptions {
  BpmfOptions() = default;
  // Throws std::invalid_argument naming the offending option (model.<key>).
  void validate() const;
  TORCH_ARG(int64_t, dim) = 20;          // latent dimension d
  TORCH_ARG(double, init_std) = 0.1;     // U, V initialised N(0, init_std²); a, b zero
  TORCH_ARG(double, mean) = 0.0;         // μ, the training mean
  TORCH_ARG(double, tau) = 2.0;          // noise precision (initial value when sampled)
  TORCH_ARG(bool, sample_tau) = false;   // Gibbs-resample τ in gibbs_step_likelihood
  TORCH_ARG(double, tau_alpha) = 1.0;    // Gamma(shape α, rate β) hyperprior on τ
  TORCH_ARG(double, tau_beta) = 1.0;
};

class Bpmf : public Model {
 public:
  // Parameters are created on the CPU in float32 from `generator` (a CPU generator); move the
  // model with .to(device) afterwards.
  Bpmf(int64_t users, int64_t items, BpmfOptions options, at::Generator generator);

  Task task() const override { return Task::kRegression; }
  torch::Tensor nll(const Batch& batch) override;
  // The gradient by hand (bpmf_backward.cpp states the equations): one pass for the errors, one that
  // adds the rows into .grad, without autograd's gathers, products and sparse gradients. CPU float32.
  torch::Tensor nll_backward(const Batch& batch, double scale) override;
  // ŷ = U_iᵀV_j + a_i + b_j + μ for inputs [n, 2] int64 (user, item); unclipped.
  torch::Tensor predict(const torch::Tensor& inputs) override;
  // {U}, {V}, {a}, {b}: one prior precision each.
  std::vector<PriorGroup> prior_groups() override;
  void gibbs_step_likelihood(const Batch& train, at::Generator& generator) override;
  std::map<std::string, double> likelihood_hyperparameters() const override;

  const BpmfOptions& options() const { return options_; }
  double tau() const { return tau_.item<double>(); }
  void set_tau(double tau);
  double mean() const { return options_.mean(); }
  int64_t num_users() const { return U_.size(0); }
  int64_t num_items() const { return V_.size(0); }

  // Parameters: [users, d], [items, d], [users], [items].
  const torch::Tensor& U() const { return U_; }
  const torch::Tensor& V() const { return V_; }
  const torch::Tensor& a() const { return a_; }
  const torch::Tensor& b() const { return b_; }

 private:
  void check_inputs(const torch::Tensor& inputs) const;
  BpmfOptions options_;
  torch::Tensor U_, V_, a_, b_;
  torch::Tensor mu_, tau_;  // buffers: scalars (float32)
};

// The `model:` keys of bpmf: `dim`, `init_std`, `tau`, `sample_tau`, `tau_alpha`, `tau_beta` (marked
// read; unknown keys are the caller's), validated; `mean` is left at its default (make_bpmf sets it).
BpmfOptions parse_bpmf_options(const OptionMap& o);
// The keys parse_bpmf_options reads: types, defaults (BpmfOptions') and meanings, for --help-keys.
std::vector<OptionDoc> bpmf_option_docs();

// The model factory's entry: takes users/items from data.dims and μ = mean of data.train.targets.
std::shared_ptr<Bpmf> make_bpmf(const Dataset& data, BpmfOptions options, at::Generator generator);
// parse_bpmf_options(o), then the above.
std::shared_ptr<Bpmf> make_bpmf(const Dataset& data, const OptionMap& o, at::Generator generator);

}  // namespace sgmcmc
