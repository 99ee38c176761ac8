#include "samplers/sghmc.h"

#include <cmath>
#include <stdexcept>

#include "kernels/update/update_rules.h"

namespace sgmcmc {

const OptionTable<SghmcOptions>& sghmc_option_table() {
  using T = OptionTable<SghmcOptions>;
  static const T table("sghmc", {
      T::real("lr", SGMCMC_FIELD(lr), Range::positive(), "η = ε², the step on ∇Ũ"),
      T::real("alpha", SGMCMC_FIELD(alpha), Range::interval(0, 1, true, false), "momentum decay α = εC (the friction)"),
      T::choice("noise_estimate", SGMCMC_FIELD(noise_estimate), {"none", "constant", "fisher"},
          "β̂, the gradient noise subtracted from the injected: none | constant (beta_hat) | fisher (running variance)"),
      T::real("beta_hat", SGMCMC_FIELD(beta_hat), Range::nonnegative(), "β̂ for noise_estimate: constant"),
      T::real("fisher_decay", SGMCMC_FIELD(fisher_decay), Range::interval(0, 1, true, true),
          "EMA decay of the gradient variance for noise_estimate: fisher"),
      T::choice("integrator", SGMCMC_FIELD(integrator), {"euler", "ssi"}, "euler | ssi (symmetric splitting)"),
      T::real("temperature", SGMCMC_FIELD(temperature), Range::nonnegative(),
          "T: scales the injected noise's variance (1: the posterior; 0: no noise)"),
  });
  return table;
}

void SghmcOptions::validate() const {
  sghmc_option_table().check(*this);
}

Sghmc::Sghmc(std::vector<ParamGroup> groups, at::Generator generator, SghmcOptions options)
    : Sampler(std::move(groups), std::move(generator), (options.validate(), options.lr()),
              options.temperature()),
      options_(options), momentum_(make_state(0.0)) {
  if (options_.noise_estimate() == "fisher")
    for (const auto& p : parameters()) {
      grad_mean_.push_back(torch::zeros_like(p));
      grad_var_.push_back(torch::zeros_like(p));
    }
}

void Sghmc::step() {
  torch::NoGradGuard no_grad;
  const bool ssi = options_.integrator() == "ssi";
  const std::string& est = options_.noise_estimate();
  double bh_sum = 0, bh_n = 0;
  kernels::FusedScalars fs;
  fs.alpha = options_.alpha();
  fs.temperature = temperature_;
  fs.beta_hat = est == "constant" ? options_.beta_hat() : 0.0;
  // The fisher estimate (an elementwise β̂ from running gradient moments) takes the ATen path.
  std::optional<kernels::FusedRule> rule;
  if (est != "fisher") rule = ssi ? kernels::FusedRule::kSghmcSsi : kernels::FusedRule::kSghmcEuler;
  step_params(rule, fs, {&momentum_}, /*noise=*/true,
              [&](torch::Tensor& p, const torch::Tensor& g, const torch::Tensor& noise, double lr, size_t i) {
                torch::Tensor beta_hat;
                if (est == "constant") {
                  beta_hat = torch::full_like(p, options_.beta_hat());
                } else if (est == "fisher") {
                  rules::ema_variance_update(grad_mean_[i], grad_var_[i], g, options_.fisher_decay(),
                                             step_count_ == 0);
                  beta_hat = grad_var_[i] * (lr / 2);
                  bh_sum += beta_hat.sum().item<double>();
                  bh_n += static_cast<double>(beta_hat.numel());
                }
                auto& v = momentum_.param[i];
                if (ssi) {
                  rules::sghmc_ssi_update(p, v, g, noise, lr, options_.alpha(), temperature_, beta_hat);
                } else {
                  rules::sghmc_euler_update(p, v, g, noise, lr, options_.alpha(), temperature_, beta_hat);
                }
              });
  if (est == "constant") last_beta_hat_mean_ = options_.beta_hat();
  if (est == "fisher") last_beta_hat_mean_ = bh_n > 0 ? bh_sum / bh_n : 0.0;
  ++step_count_;
}

double Sghmc::noise_ratio(size_t group, const torch::Tensor& grad_variance) const {
  const double a = options_.alpha();
  const double budget = 2.0 * temperature_ * (options_.integrator() == "ssi" ? std::sinh(a) : a);
  return group_lr(group) * grad_variance.mean().item<double>() / budget;
}

std::map<std::string, double> Sghmc::diagnostics() const {
  return {{"beta_hat_mean", last_beta_hat_mean_}};
}

std::vector<std::pair<std::string, torch::Tensor*>> Sghmc::state_tensors() {
  std::vector<std::pair<std::string, torch::Tensor*>> out;
  for (size_t i = 0; i < momentum_.param.size(); ++i) {
    out.emplace_back(std::to_string(i) + ".momentum", &momentum_.param[i]);
    if (i < grad_mean_.size()) {
      out.emplace_back(std::to_string(i) + ".grad_mean", &grad_mean_[i]);
      out.emplace_back(std::to_string(i) + ".grad_var", &grad_var_[i]);
    }
  }
  return out;
}

}  // namespace sgmcmc
