#include "samplers/stochastic_hmc.h"

#include <cmath>
#include <stdexcept>

#include "kernels/update/update_rules.h"

namespace sgmcmc {

const OptionTable<StochasticHmcOptions>& stochastic_hmc_option_table() {
  using T = OptionTable<StochasticHmcOptions>;
  static const T table("stochastic-hmc", {
      T::real("lr", SGMCMC_FIELD(lr), Range::positive(), "η, the leapfrog step (η² is SGHMC's lr)"),
      T::integer("leapfrog_steps", SGMCMC_FIELD(leapfrog_steps), Range::at_least(1),
          "N_l minibatch leapfrog steps per trajectory"),
      T::real("friction", SGMCMC_FIELD(friction), Range::nonnegative(),
          "C: momentum kept α = exp(-η N_l C) at a refresh (0: none after step 0)"),
      T::real("temperature", SGMCMC_FIELD(temperature), Range::nonnegative(),
          "T: scales the injected noise's variance (1: the posterior; 0: no noise)"),
  });
  return table;
}

void StochasticHmcOptions::validate() const {
  stochastic_hmc_option_table().check(*this);
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
