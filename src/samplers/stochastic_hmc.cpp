#include "samplers/stochastic_hmc.h"

#include <cmath>
#include <stdexcept>

#include "kernels/update/update_rules.h"
#include "samplers/validate.h"

namespace sgmcmc {

void StochasticHmcOptions::validate() const {
  check_positive("stochastic-hmc", "lr", lr_);
  if (leapfrog_steps_ < 1)
    throw std::invalid_argument("stochastic-hmc.leapfrog_steps: must be >= 1, got " + std::to_string(leapfrog_steps_));
  check_nonnegative("stochastic-hmc", "friction", friction_);
  check_nonnegative("stochastic-hmc", "temperature", temperature_);
}

StochasticHmc::StochasticHmc(std::vector<ParamGroup> groups, at::Generator generator, StochasticHmcOptions options)
    : Sampler(std::move(groups), std::move(generator), (options.validate(), options.lr()), options.temperature()),
      options_(options) {
  for (const auto& p : parameters()) momentum_.push_back(torch::zeros_like(p));
}

void StochasticHmc::step() {
  torch::NoGradGuard no_grad;
  const double nl = static_cast<double>(options_.leapfrog_steps());
  const bool boundary = step_count_ % options_.leapfrog_steps() == 0;
  // α = exp(−η N_l C) for a group's η; 0 at step 0 (a fresh momentum).
  auto alpha_of = [&](double eta) { return step_count_ == 0 ? 0.0 : std::exp(-eta * nl * options_.friction()); };
  if (boundary) last_alpha_ = alpha_of(lr_);
  for_each_param([&](torch::Tensor& p, const torch::Tensor& g, double lr, size_t i) {
    torch::Tensor noise = boundary ? randn_like(p) : torch::Tensor();
    rules::stochastic_hmc_update(p, momentum_[i], g, noise, lr, alpha_of(lr), temperature_, boundary);
  });
  ++step_count_;
}

std::vector<std::pair<std::string, torch::Tensor*>> StochasticHmc::state_tensors() {
  std::vector<std::pair<std::string, torch::Tensor*>> out;
  for (size_t i = 0; i < momentum_.size(); ++i) out.emplace_back(std::to_string(i) + ".momentum", &momentum_[i]);
  return out;
}

}  // namespace sgmcmc
