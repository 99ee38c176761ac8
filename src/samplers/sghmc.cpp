#include "samplers/sghmc.h"

#include <stdexcept>

#include "kernels/update_rules.h"
#include "samplers/validate.h"

namespace sgmcmc {

void SghmcOptions::validate() const {
  check_positive("sghmc", "lr", lr_);
  check_range("sghmc", "alpha", alpha_, 0, 1, /*lo_open=*/true);
  if (noise_estimate_ != "none" && noise_estimate_ != "constant" && noise_estimate_ != "fisher")
    throw std::invalid_argument("sghmc.noise_estimate: must be one of {none, constant, fisher}, got '" +
                                noise_estimate_ + "'");
  check_nonnegative("sghmc", "beta_hat", beta_hat_);
  check_range("sghmc", "fisher_decay", fisher_decay_, 0, 1, true, true);
  if (integrator_ != "euler" && integrator_ != "ssi")
    throw std::invalid_argument("sghmc.integrator: must be one of {euler, ssi}, got '" + integrator_ + "'");
  check_nonnegative("sghmc", "temperature", temperature_);
}

Sghmc::Sghmc(std::vector<ParamGroup> groups, at::Generator generator, SghmcOptions options)
    : Sampler(std::move(groups), std::move(generator), (options.validate(), options.lr()),
              options.temperature()),
      options_(options) {
  const bool fisher = options_.noise_estimate() == "fisher";
  for (const auto& p : parameters()) {
    State s{torch::zeros_like(p), {}, {}};
    if (fisher) {
      s.grad_mean = torch::zeros_like(p);
      s.grad_var = torch::zeros_like(p);
    }
    state_.push_back(std::move(s));
  }
}

void Sghmc::step() {
  torch::NoGradGuard no_grad;
  const bool ssi = options_.integrator() == "ssi";
  const std::string& est = options_.noise_estimate();
  double bh_sum = 0, bh_n = 0;
  for_each_param([&](torch::Tensor& p, const torch::Tensor& g, double lr, size_t i) {
    auto& s = state_[i];
    torch::Tensor beta_hat;
    if (est == "constant") {
      beta_hat = torch::full_like(p, options_.beta_hat());
    } else if (est == "fisher") {
      rules::ema_variance_update(s.grad_mean, s.grad_var, g, options_.fisher_decay(), step_count_ == 0);
      beta_hat = s.grad_var * (lr / 2);
      bh_sum += beta_hat.sum().item<double>();
      bh_n += static_cast<double>(beta_hat.numel());
    }
    auto noise = randn_like(p);
    if (ssi) {
      rules::sghmc_ssi_update(p, s.momentum, g, noise, lr, options_.alpha(), temperature_, beta_hat);
    } else {
      rules::sghmc_euler_update(p, s.momentum, g, noise, lr, options_.alpha(), temperature_, beta_hat);
    }
  });
  if (est == "constant") last_beta_hat_mean_ = options_.beta_hat();
  if (est == "fisher") last_beta_hat_mean_ = bh_n > 0 ? bh_sum / bh_n : 0.0;
  ++step_count_;
}

std::map<std::string, double> Sghmc::diagnostics() const {
  return {{"beta_hat_mean", last_beta_hat_mean_}};
}

std::vector<std::pair<std::string, torch::Tensor*>> Sghmc::state_tensors() {
  std::vector<std::pair<std::string, torch::Tensor*>> out;
  for (size_t i = 0; i < state_.size(); ++i) {
    out.emplace_back(std::to_string(i) + ".momentum", &state_[i].momentum);
    if (state_[i].grad_mean.defined()) {
      out.emplace_back(std::to_string(i) + ".grad_mean", &state_[i].grad_mean);
      out.emplace_back(std::to_string(i) + ".grad_var", &state_[i].grad_var);
    }
  }
  return out;
}

}  // namespace sgmcmc
