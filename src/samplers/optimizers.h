// Optimizer baselines (point estimates, no injected noise; is_sampler() = false), with PyTorch's
// update conventions. No weight decay here: the trainer adds the Gaussian prior's gradient to ∇Ũ.
//   sgd:           θ ← θ − η g
//   sgd-momentum:  b ← μ b + g (b ← g on the first step);  θ ← θ − η (nesterov ? g + μ b : b)
//   rmsprop:       V ← αV + (1−α) g⊙g;  θ ← θ − η g ⊘ (sqrt(V) + eps)     (T. Tieleman & G. Hinton 2012)
//   adam:          m ← β1 m + (1−β1) g;  s ← β2 s + (1−β2) g⊙g;
//                  θ ← θ − η m̂ ⊘ (sqrt(ŝ) + eps),  m̂ = m/(1−β1^t), ŝ = s/(1−β2^t)   (Kingma & Ba 2015)
// Option keys: the tables in optimizers.cpp (defaults: the structs below; `sgmcmc train --help-keys`).
// No `temperature` key (it is fixed at 0).
// g is ∇Ũ = (N/n)Σ_batch∇ℓ_i + ∇(−log p(θ)), so for sgd and sgd-momentum η = lr/N is PyTorch's
// learning rate on the mean loss; sampler.lr_scaling: per_datum does that division (the trainer).
#pragma once

#include <torch/arg.h>

#include "core/option_table.h"
#include "samplers/sampler.h"

namespace sgmcmc {

struct SgdOptions {
  SgdOptions() = default;
  explicit SgdOptions(double lr) : lr_(lr) {}
  void validate() const;
  TORCH_ARG(double, lr) = 1e-3;
};

// The `sampler: {name: sgd}` keys, with their ranges and meanings (defaults: the struct's).
const OptionTable<SgdOptions>& sgd_option_table();

struct SgdMomentumOptions {
  SgdMomentumOptions() = default;
  explicit SgdMomentumOptions(double lr) : lr_(lr) {}
  void validate() const;
  TORCH_ARG(double, lr) = 1e-3;
  TORCH_ARG(double, momentum) = 0.9;  // in [0, 1)
  TORCH_ARG(bool, nesterov) = false;
};

// The `sampler: {name: sgd-momentum}` keys, with their ranges and meanings (defaults: the struct's).
const OptionTable<SgdMomentumOptions>& sgd_momentum_option_table();

struct RmspropOptions {
  RmspropOptions() = default;
  explicit RmspropOptions(double lr) : lr_(lr) {}
  void validate() const;
  TORCH_ARG(double, lr) = 1e-3;
  TORCH_ARG(double, alpha) = 0.99;  // in (0, 1]
  TORCH_ARG(double, eps) = 1e-8;    // > 0
};

// The `sampler: {name: rmsprop}` keys, with their ranges and meanings (defaults: the struct's).
const OptionTable<RmspropOptions>& rmsprop_option_table();

struct AdamOptions {
  AdamOptions() = default;
  explicit AdamOptions(double lr) : lr_(lr) {}
  void validate() const;
  TORCH_ARG(double, lr) = 1e-3;
  TORCH_ARG(double, beta1) = 0.9;    // in [0, 1)
  TORCH_ARG(double, beta2) = 0.999;  // in [0, 1)
  TORCH_ARG(double, eps) = 1e-8;     // > 0
};

// The `sampler: {name: adam}` keys, with their ranges and meanings (defaults: the struct's).
const OptionTable<AdamOptions>& adam_option_table();

class Sgd : public Sampler {
 public:
  Sgd(std::vector<ParamGroup> groups, at::Generator generator, SgdOptions options);
  std::string name() const override { return "sgd"; }
  bool is_sampler() const override { return false; }
  void step() override;
};

class SgdMomentum : public Sampler {
 public:
  SgdMomentum(std::vector<ParamGroup> groups, at::Generator generator, SgdMomentumOptions options);
  std::string name() const override { return "sgd-momentum"; }
  bool is_sampler() const override { return false; }
  void step() override;

 protected:
  std::vector<std::pair<std::string, torch::Tensor*>> state_tensors() override;

 private:
  SgdMomentumOptions options_;
  std::vector<torch::Tensor> buf_;
};

class Rmsprop : public Sampler {
 public:
  Rmsprop(std::vector<ParamGroup> groups, at::Generator generator, RmspropOptions options);
  std::string name() const override { return "rmsprop"; }
  bool is_sampler() const override { return false; }
  void step() override;

 protected:
  std::vector<std::pair<std::string, torch::Tensor*>> state_tensors() override;

 private:
  RmspropOptions options_;
  std::vector<torch::Tensor> square_avg_;
};

class Adam : public Sampler {
 public:
  Adam(std::vector<ParamGroup> groups, at::Generator generator, AdamOptions options);
  std::string name() const override { return "adam"; }
  bool is_sampler() const override { return false; }
  void step() override;

 protected:
  std::vector<std::pair<std::string, torch::Tensor*>> state_tensors() override;

 private:
  struct State {
    torch::Tensor exp_avg, exp_avg_sq;
  };
  AdamOptions options_;
  std::vector<State> state_;
};

}  // namespace sgmcmc
